! A 3-D field streamed through a small fast space, from Fortran.
!
! The field u(nx, ny, nz) is an ordinary allocatable array. mmb wraps it
! (no copy), cuts it into slabs of nz_tile planes, and a prefetching iterator
! walks the slabs: while the program updates one slab in a space that holds
! only a few of them, the next one is already being copied in on a queue,
! and each finished slab is copied back behind it. Build it with
!   gfortran field.f90 $(pkg-config --cflags --libs mamba)
! Run: fortran_field [nx ny nz nz_tile]   (default 64 64 256 16)
program field
  use mamba
  use, intrinsic :: iso_c_binding, only: c_double
  implicit none
  integer, parameter :: dp = c_double
  real(dp), allocatable, target :: u(:,:,:)
  integer(mmbIndexKind) :: dims(3), slab(3)
  integer :: n(4), i, nargs, err, slabs
  character(len=32) :: arg
  type(mmbMemSpace) :: dram, fast
  type(mmbMemSpaceConfig) :: fast_config
  type(mmbMemInterface) :: dram_interface
  type(mmbLayout) :: layout
  type(mmbArray) :: arr
  type(mmbQueue) :: queue
  type(mmbTileIteratorOptions) :: opts
  type(mmbTileIterator) :: it
  type(mmbArrayTile) :: tile
  real(dp), pointer :: s(:,:,:)
  integer(mmbSizeKind) :: footprint
  real(dp) :: expected

  n = [64, 64, 256, 16]
  nargs = command_argument_count()
  do i = 1, min(nargs, 4)
    call get_command_argument(i, arg)
    read (arg, *) n(i)
  end do
  dims = int(n(1:3), mmbIndexKind)
  slab = [dims(1), dims(2), int(n(4), mmbIndexKind)]
  allocate(u(n(1), n(2), n(3)))
  call random_number(u)
  expected = 2 * sum(u) + size(u)

  call mmb_init(err=err)
  call check(err, 'mmb_init')
  call mmb_request_space(MMB_DRAM, MMB_EXECUTION_CONTEXT_DEFAULT, new_space=dram, err=err)
  call mmb_request_interface(dram, new_interface=dram_interface, err=err)
  call check(err, 'the DRAM interface')
  call mmb_layout_create_regular_nd(int(storage_size(u) / 8, mmbSizeKind), 3_mmbSizeKind, &
                                    MMB_COLMAJOR, mmb_layout_padding_create_zero(), layout, err)
  call check(err, 'the layout')
  call mmb_array_create_wrapped(u, dims, layout, dram_interface, MMB_READ_WRITE, arr, err)
  call check(err, 'wrapping u')
  call mmb_array_tile(arr, slab, err)
  call check(err, 'tiling u into slabs')

  ! A queue, and a fast space with room for exactly what the walk needs.
  call mmb_queue_create(queue, err)
  call check(err, 'the queue')
  opts%queue = queue
  opts%depth = 1
  opts%access = MMB_READ_WRITE
  call mmb_tile_iterator_footprint(arr, footprint, err, opts)
  call check(err, 'the footprint')
  fast_config = mmbMemSpaceConfig(mmbSizeConfig(MMB_SIZE_SET, .false., footprint), &
                                  MMB_MEMINTERFACE_CONFIG_DEFAULT, name='fast slabs')
  call mmb_request_space(MMB_DRAM, MMB_EXECUTION_CONTEXT_DEFAULT, fast_config, fast, err)
  call check(err, 'the fast space')
  opts%space = fast

  call mmb_tile_iterator_create(arr, it, err, opts)
  call check(err, 'the iterator')
  slabs = 0
  call mmb_tile_iterator_tile(it, tile, err)
  do while (err == MMB_OK)
    call mmb_tile_get_pointer(tile, s, err)     ! the slab, with u's bounds
    call check(err, 'the slab pointer')
    s = 2 * s + 1
    slabs = slabs + 1
    call mmb_tile_iterator_next(it, err)
    call check(err, 'the next slab')
    call mmb_tile_iterator_tile(it, tile, err)
  end do
  call mmb_tile_iterator_destroy(it, err)       ! merges the last slab back
  call check(err, 'the last merge')

  print '(a, i0, a, i0, a, i0, a, i0, a, i0, a)', 'field ', n(1), 'x', n(2), 'x', n(3), ': ', slabs, &
        ' slabs through a space of ', footprint / 1024, ' KiB'
  if (abs(sum(u) - expected) > 1e-9_dp * expected) then
    print *, 'wrong result: ', sum(u), ' expected ', expected
    error stop 1
  end if
  print '(a)', 'every element updated once: ok'

  call mmb_array_destroy(arr, err)
  call mmb_layout_destroy(layout, err)
  call mmb_queue_destroy(queue, err)
  call mmb_interface_destroy(dram_interface, err)
  call mmb_space_release(fast, err)
  call mmb_finalize(err)
  call check(err, 'mmb_finalize')
  deallocate(u)
contains
  subroutine check(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what
    if (code /= MMB_OK) then
      print '(a, a, a, a)', what, ': ', mmb_error_string(code)
      error stop 1
    end if
  end subroutine
end program
