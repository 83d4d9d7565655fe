! A program written as the issue's spectral-element code writes its calls
! (Mamba's module, unchanged), built by fortran-check against the staged
! install with `gfortran mamba_user.f90 $(pkg-config --cflags --libs mamba)`.
! Like such codes it builds its layout with storage_size(1.0)/8 (4 bytes)
! for real(dp) data, shares one layout, never advances nor destroys its
! iterators, destroys handles never made, and never calls mmb_finalize.
module field_setup
  use mamba
  implicit none
  integer, parameter :: dp = kind(1d0)
  type(mmbMemSpace) :: dram_space                 ! module variables, never explicitly initialised
  type(mmbMemSpaceConfig) :: dram_config
  type(mmbMemInterface) :: dram_interface
contains
  subroutine field_init(x, arr, layout, it, err)
    real(dp), allocatable, target, intent(inout) :: x(:,:,:,:)
    type(mmbArray), intent(inout) :: arr
    type(mmbLayout), intent(inout) :: layout
    type(mmbTileIterator), intent(inout) :: it
    integer(mmbErrorKind), intent(out) :: err
    integer(mmbIndexKind), dimension(4) :: dims

    call mmb_array_destroy(arr)                   ! one argument; also called before any create
    call mmb_logging_set_level(MMB_LOG_WARN, err)
    dram_config = mmbMemSpaceConfig(mmbSizeConfig(MMB_SIZE_SET, .false., 8000), &
                                    MMB_MEMINTERFACE_CONFIG_DEFAULT)
    call mmb_register_memory(MMB_DRAM, MMB_EXECUTION_CONTEXT_DEFAULT, dram_config, err=err)
    if (err .ne. MMB_OK) return
    call mmb_request_space(MMB_DRAM, MMB_EXECUTION_CONTEXT_DEFAULT, new_space=dram_space, err=err)
    if (err .ne. MMB_OK) return
    call mmb_request_interface(dram_space, new_interface=dram_interface, err=err)
    if (err .ne. MMB_OK) return
    dims = shape(x)
    if (.not. c_associated_layout(layout)) then
      ! storage_size(1.0)/8: 4 bytes, over real(dp) data (a slip the code has)
      call mmb_layout_create_regular_nd(int(storage_size(1.0)/8, mmbSizeKind), 4_mmbSizeKind, &
                                        MMB_COLMAJOR, mmb_layout_padding_create_zero(), layout, err)
      if (err .ne. MMB_OK) return
    end if
    call mmb_array_create_wrapped(x, dims, layout, dram_interface, MMB_READ_WRITE, arr, err)
    if (err .ne. MMB_OK) return
    call mmb_array_tile(arr, dims, err)
    if (err .ne. MMB_OK) return
    call mmb_tile_iterator_create(arr, it, err)
  end subroutine

  logical function c_associated_layout(layout)
    use, intrinsic :: iso_c_binding, only: c_associated
    type(mmbLayout), intent(in) :: layout
    c_associated_layout = c_associated(layout%ptr)
  end function
end module field_setup

program mamba_user
  use field_setup
  implicit none
  integer :: err                                  ! a plain default integer err
  real(dp), allocatable, target :: u(:,:,:,:), v(:,:,:,:), w(:,:)
  type(mmbArray) :: ua, va, wa
  type(mmbLayout) :: layout                       ! shared by every field
  type(mmbLayout) :: small
  type(mmbTileIterator) :: ui, vi
  integer :: step

  call mmb_init(err=err)
  if (err .ne. MMB_OK) error stop 'mmb_init'
  allocate(u(6, 6, 6, 40), v(6, 6, 6, 40), w(6, 240))
  u = 1
  v = 2
  do step = 1, 20                                 ! fields re-made every step
    call field_init(u, ua, layout, ui, err)
    if (err .ne. MMB_OK) error stop 'u'
    call field_init(v, va, layout, vi, err)
    if (err .ne. MMB_OK) error stop 'v'
  end do
  ! a layout of another rank than the data: an error code, no crash
  call mmb_array_create_wrapped(w, [6_mmbIndexKind, 240_mmbIndexKind], layout, dram_interface, &
                                MMB_READ_WRITE, wa, err)
  if (err .ne. MMB_INVALID_ARG) error stop 'rank mismatch not refused'
  ! a layout whose elements are larger than the data's would reach past
  ! it: an error code, no crash
  call mmb_layout_create_regular_nd(16_mmbSizeKind, 4_mmbSizeKind, &
                                    MMB_COLMAJOR, mmb_layout_padding_create_zero(), small, err)
  call mmb_array_create_wrapped(u, int(shape(u), mmbIndexKind), small, dram_interface, MMB_READ_WRITE, &
                                wa, err)
  if (err .ne. MMB_INVALID_ARG) error stop 'elements larger than the data''s not refused'
  call mmb_array_destroy(wa)                      ! never made: nothing
  call mmb_array_destroy(ua)
  call mmb_array_destroy(va, err)
  if (err .ne. MMB_OK) error stop 'destroy with forgotten iterators'
  if (any(u /= 1) .or. any(v /= 2)) error stop 'the fields changed'
  print '(a)', 'mamba_user: ok'
  deallocate(u, v, w)
end program                                       ! no mmb_finalize, as such codes do
