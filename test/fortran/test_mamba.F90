! Tests of module mamba: every procedure, and each misuse a Fortran code makes
! (handles never created, destroyed twice or used after, layouts that do not
! match the data, iterators never advanced or destroyed). Each check names
! what it expects; the program stops with status 1 after the first test that
! failed a check. Run by `make test` (fortran-check).
module checks
  use mamba
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: failures = 0
  character(len=64) :: current = ''
  integer, parameter :: dp = c_double, sp = c_float
  ! what the callbacks saw
  integer :: log_messages = 0, submitted = 0, merged_elements = 0
  integer(c_size_t) :: provider_live = 0
  integer :: oom_calls = 0
contains
  integer(c_int) function give_up(space, bytes, attempt, arg) bind(C)
    type(c_ptr), value :: space, arg
    integer(c_size_t), value :: bytes
    integer(c_int), value :: attempt
    oom_calls = oom_calls + 1
    give_up = MMB_OOM_GIVE_UP
  end function
  subroutine begin(name)
    character(len=*), intent(in) :: name
    current = name
  end subroutine

  subroutine expect(got, want, what)
    integer, intent(in) :: got, want
    character(len=*), intent(in) :: what
    if (got /= want) then
      failures = failures + 1
      print '(a, a, a, a, a, a, a, a)', trim(current), ': ', what, ': got ', mmb_error_name(got), &
            ', expected ', mmb_error_name(want), ''
    end if
  end subroutine

  subroutine ensure(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      failures = failures + 1
      print '(a, a, a)', trim(current), ': ', what
    end if
  end subroutine

  subroutine init_quiet()
    integer :: err
    call mmb_init(err, mmbOptions(MMB_LOG_OFF))
    call expect(err, MMB_OK, 'mmb_init')
  end subroutine

  subroutine finalize_checked()
    integer :: err
    call mmb_finalize(err)
    call expect(err, MMB_OK, 'mmb_finalize')
  end subroutine

  subroutine on_log(level, message, user_data) bind(C)
    integer(c_int), value :: level
    type(c_ptr), value :: message, user_data
    log_messages = log_messages + 1
  end subroutine

  ! A task that fails once the counter reaches 2.
  integer(c_int) function task_on_queue(arg) bind(C)
    type(c_ptr), value :: arg
    integer(c_int), pointer :: counter
    call c_f_pointer(arg, counter)
    counter = counter + 1
    task_on_queue = MMB_OK
    if (counter >= 2) task_on_queue = MMB_IO
  end function

  subroutine on_queue(arg) bind(C)
    type(c_ptr), value :: arg
    integer(c_int), pointer :: counter
    call c_f_pointer(arg, counter)
    counter = counter + 1
    submitted = submitted + 1
  end subroutine

  ! A merge that adds, over doubles.
  subroutine add_doubles(dst, src, count, element_size, user_data) bind(C)
    type(c_ptr), value :: dst, src, user_data
    integer(c_size_t), value :: count, element_size
    real(c_double), pointer :: d(:), s(:)
    call c_f_pointer(dst, d, [count])
    call c_f_pointer(src, s, [count])
    d = d + s
    merged_elements = merged_elements + int(count)
  end subroutine

  ! A provider written in Fortran, over mmb_host_map.
  integer(c_int) function fprov_alloc(state, size, alignment, flags, out) bind(C)
    type(c_ptr), value :: state
    integer(c_size_t), value :: size, alignment
    integer(c_int), value :: flags
    type(c_ptr), intent(out) :: out
    integer :: err
    call mmb_host_map(size, max(alignment, mmb_host_page_size()), -1, out, err)
    if (err == MMB_OK) provider_live = provider_live + size
    fprov_alloc = err
  end function

  subroutine fprov_free(state, ptr, size, alignment) bind(C)
    type(c_ptr), value :: state, ptr
    integer(c_size_t), value :: size, alignment
    integer :: err
    call mmb_host_unmap(ptr, size, err)
    if (err == MMB_OK) provider_live = provider_live - size
  end subroutine
end module checks

program test_mamba
  use checks
  implicit none

  call test_kinds_and_constants()
  call test_before_init()
  call test_lifecycle_and_logging()
  call test_never_created_handles()
  call test_mamba_user_sequence()
  call test_spaces()
  call test_interfaces_and_allocations()
  call test_copies()
  call test_regions()
  call test_bare_pointers()
  call test_trace()
  call test_layouts()
  call test_wrapped_arrays()
  call test_wrapped_misuse()
  call test_owned_arrays()
  call test_records()
  call test_user_layers()
  call test_tiles()
  call test_tile_cache()
  call test_tile_pointer_misuse()
  call test_iterators()
  call test_forgotten_iterators()
  call test_prefetching_iterator()
  call test_queues()
  call test_async_twins()
  call test_providers_and_host_memory()

  if (failures > 0) then
    print '(i0, a)', failures, ' Fortran checks failed'
    error stop 1
  end if
  print '(a)', 'fortran-tests: every check passed'

contains

  subroutine test_kinds_and_constants()
    integer :: major, minor, patch, e
    character(len=:), allocatable :: v
    call begin('kinds_and_constants')
    call ensure(mmbErrorKind == c_int .and. kind(e) == mmbErrorKind, 'a default integer err is an mmbErrorKind')
    call ensure(mmbSizeKind == c_size_t .and. mmbIndexKind == c_size_t, 'size and index kinds are size_t')
    ! the constants are the C values: the C library names each error itself
    call ensure(mmb_error_name(MMB_OK) == 'MMB_OK', 'MMB_OK')
    call ensure(mmb_error_name(MMB_INVALID_ARG) == 'MMB_INVALID_ARG', 'MMB_INVALID_ARG')
    call ensure(mmb_error_name(MMB_BUSY) == 'MMB_BUSY', 'MMB_BUSY')
    call ensure(mmb_error_name(MMB_IO) == 'MMB_IO', 'MMB_IO')
    call ensure(mmb_error_name(MMB_TIMEOUT) == 'MMB_TIMEOUT', 'MMB_TIMEOUT')
    call ensure(index(mmb_error_string(MMB_OUT_OF_MEMORY), 'out of memory') == 1, 'error strings')
    call ensure(mmb_layer_name(MMB_HBM) == 'HBM' .and. mmb_layer_name(MMB_GDRAM) == 'GDRAM', 'layer names')
    call ensure(mmb_layer_name(MMB_STORAGE) == 'STORAGE', 'the storage layer')
    call ensure(MMB_USER_LAYERS_MAX == 8 .and. MMB_LAYER_NAME_MAX == 16, 'user layer limits')
    call ensure(mmb_context_name(MMB_GPU_CUDA) == 'GPU_CUDA', 'context names')
    call ensure(mmb_provider_name(MMB_PROVIDER_PINNED) == 'pinned', 'provider names')
    v = mmb_version(major, minor, patch)
    call ensure(major == MMB_VERSION_MAJOR .and. minor == MMB_VERSION_MINOR .and. &
                patch == MMB_VERSION_PATCH, 'version numbers')
    call ensure(len(v) >= 5 .and. index(v, '.') > 0, 'version string')
    call ensure(MMB_MAX_DIMS == 8 .and. MMB_DEFAULT_ALIGNMENT == 64, 'sizes')
    call ensure(MMB_MEMINTERFACE_CONFIG_DEFAULT%provider == MMB_PROVIDER_DEFAULT .and. &
                MMB_MEMINTERFACE_CONFIG_DEFAULT%strategy == MMB_STRATEGY_DEFAULT, 'the default interface config')
  end subroutine

  subroutine test_before_init()
    type(mmbMemSpace) :: space
    type(mmbLayout) :: layout
    type(mmbArray) :: arr
    integer :: err
    call begin('before_init')
    call ensure(.not. mmb_is_initialized(), 'not initialised yet')
    call mmb_request_space(MMB_DRAM, MMB_CPU, new_space=space, err=err)
    call expect(err, MMB_NOT_INITIALIZED, 'a space before init')
    call ensure(.not. c_associated(space%ptr), 'no space handle')
    call mmb_layout_create_regular_nd(8_mmbSizeKind, 2_mmbSizeKind, MMB_COLMAJOR, &
                                      mmb_layout_padding_create_zero(), layout, err)
    call expect(err, MMB_NOT_INITIALIZED, 'a layout before init')
    call mmb_array_destroy(arr)                      ! as codes do, before anything: nothing
    call mmb_array_destroy(arr, err)
    call expect(err, MMB_OK, 'destroying a never-created array before init')
    call mmb_finalize(err)
    call expect(err, MMB_NOT_INITIALIZED, 'finalize before init')
  end subroutine

  subroutine test_lifecycle_and_logging()
    integer :: err, level
    call begin('lifecycle_and_logging')
    call mmb_init(err=err)
    call expect(err, MMB_OK, 'mmb_init(err=err)')
    call init_quiet()                                ! a second init is counted
    call ensure(mmb_is_initialized(), 'initialised')
    call mmb_logging_set_level(MMB_LOG_DEBUG, err)
    call expect(err, MMB_OK, 'set the level')
    call mmb_logging_get_level(level, err)
    call expect(err, MMB_OK, 'get the level')
    call ensure(level == MMB_LOG_DEBUG, 'the level set is the level read')
    call mmb_logging_set_callback(c_funloc(on_log), c_null_ptr, err)
    call expect(err, MMB_OK, 'a Fortran log callback')
    call mmb_logging_set_level(99, err)
    call expect(err, MMB_INVALID_ARG, 'an unknown level')
    log_messages = 0
    call mmb_logging_set_level(MMB_LOG_DEBUG)        ! err absent: allowed
    call mmb_logging_set_level(-5, err)              ! refused, logged at debug
    call ensure(log_messages > 0, 'the callback received the refusal''s reason')
    log_messages = 0
    call mmb_log(MMB_LOG_INFO, 'a layer''s own message')
    call ensure(log_messages == 1, 'mmb_log reached the callback')
    call mmb_logging_set_level(MMB_LOG_WARN, err)
    call mmb_log(MMB_LOG_INFO, 'below the level')
    call ensure(log_messages == 1, 'mmb_log keeps to the level')
    call mmb_logging_set_callback(c_null_funptr, c_null_ptr, err)
    call expect(err, MMB_OK, 'back to stderr')
    call mmb_logging_set_level(MMB_LOG_OFF, err)
    call finalize_checked()
    call ensure(mmb_is_initialized(), 'still initialised after one of two finalizes')
    call finalize_checked()
    call ensure(.not. mmb_is_initialized(), 'finalised')
  end subroutine

  subroutine test_never_created_handles()
    type(mmbMemSpace) :: space
    type(mmbMemInterface) :: iface
    type(mmbAllocation) :: alloc
    type(mmbRegion) :: region
    type(mmbLayout) :: layout, copy
    type(mmbArray) :: arr
    type(mmbTileIterator) :: it
    type(mmbQueue) :: queue
    integer :: err
    integer(mmbSizeKind) :: bytes
    call begin('never_created_handles')
    call init_quiet()
    ! destroying what was never created does nothing, and succeeds
    call mmb_space_release(space, err);       call expect(err, MMB_OK, 'space')
    call mmb_interface_destroy(iface, err);   call expect(err, MMB_OK, 'interface')
    call mmb_free(alloc, err);                call expect(err, MMB_OK, 'allocation')
    call mmb_region_destroy(region, err);     call expect(err, MMB_OK, 'region')
    call mmb_layout_destroy(layout, err);     call expect(err, MMB_OK, 'layout')
    call mmb_array_destroy(arr, err);         call expect(err, MMB_OK, 'array')
    call mmb_tile_iterator_destroy(it, err);  call expect(err, MMB_OK, 'iterator')
    call mmb_queue_destroy(queue, err);       call expect(err, MMB_OK, 'queue')
    ! using one is an error, not a crash
    call mmb_array_get_bytes(arr, bytes, err);    call expect(err, MMB_INVALID_ARG, 'a null array used')
    call mmb_tile_iterator_next(it, err);     call expect(err, MMB_INVALID_ARG, 'a null iterator used')
    ! destroy resets the handle; a copy kept from before is stale, and refused
    call mmb_layout_create_regular_1d(4_mmbSizeKind, mmb_layout_padding_create_zero(), layout, err)
    call expect(err, MMB_OK, 'a layout')
    copy = layout
    call mmb_layout_destroy(layout, err)
    call expect(err, MMB_OK, 'destroyed')
    call ensure(.not. c_associated(layout%ptr), 'destroy reset the handle')
    call mmb_layout_destroy(copy, err)
    call expect(err, MMB_INVALID_ARG, 'a stale copy destroyed again')
    call ensure(c_associated(copy%ptr), 'a failed destroy leaves the handle as it was')
    call finalize_checked()
  end subroutine

  ! Written as a spectral-element code wraps its fields (docs/fortran.md).
  subroutine test_mamba_user_sequence()
    integer(mmbErrorKind) :: err
    type(mmbMemSpace) :: dram_space, again
    type(mmbMemSpaceConfig) :: dram_config
    type(mmbMemInterface) :: dram_interface
    type(mmbArray) :: arr, arr2
    type(mmbLayout) :: layout
    type(mmbTileIterator) :: it
    integer(mmbIndexKind), dimension(4) :: dims
    real(dp), allocatable, target :: x(:,:,:,:), y(:,:,:,:)
    integer(mmbSizeKind) :: cap
    integer :: provider
    call begin('mamba_user_sequence')
    allocate(x(5, 5, 5, 12), y(5, 5, 5, 12))
    call mmb_init(err=err)
    call mmb_logging_set_level(MMB_LOG_OFF, err)
    dram_config = mmbMemSpaceConfig(mmbSizeConfig(MMB_SIZE_SET, .false., 8000), &
                                    MMB_MEMINTERFACE_CONFIG_DEFAULT)
    call mmb_register_memory(MMB_DRAM, MMB_EXECUTION_CONTEXT_DEFAULT, dram_config, err=err)
    call expect(err, MMB_OK, 'register')
    call mmb_register_memory(MMB_DRAM, MMB_EXECUTION_CONTEXT_DEFAULT, dram_config, err=err)
    call expect(err, MMB_OK, 'register again, as every field does')
    call mmb_request_space(MMB_DRAM, MMB_EXECUTION_CONTEXT_DEFAULT, new_space=dram_space, err=err)
    call expect(err, MMB_OK, 'the registered space')
    call mmb_request_space(MMB_DRAM, MMB_CPU, new_space=again, err=err)
    call ensure(c_associated(dram_space%ptr, again%ptr), 'one registered space')
    call mmb_space_capacity(dram_space, cap, err)
    call ensure(cap == 8000, 'its size is the registered one')
    call mmb_request_interface(dram_space, new_interface=dram_interface, err=err)
    call expect(err, MMB_OK, 'interface')
    call mmb_interface_get_provider(dram_interface, provider, err)
    call ensure(provider == MMB_PROVIDER_SYSTEM, 'the default provider')
    dims = [5, 5, 5, 12]
    ! storage_size(1.0)/8 (4 bytes) for real(dp) data, as the code writes it:
    ! the array covers the data's first bytes, as in Mamba
    call mmb_layout_create_regular_nd(int(storage_size(1.0)/8, mmbSizeKind), 4_mmbSizeKind, &
                                      MMB_COLMAJOR, mmb_layout_padding_create_zero(), layout, err)
    call expect(err, MMB_OK, 'layout')
    call mmb_array_create_wrapped(x, dims, layout, dram_interface, MMB_READ_WRITE, arr, err)
    call expect(err, MMB_OK, 'wrapped: no bytes of the 8000-byte space are taken')
    call mmb_array_create_wrapped(y, dims, layout, dram_interface, MMB_READ_WRITE, arr2, err)
    call expect(err, MMB_OK, 'a second field shares the layout')
    call mmb_array_tile(arr, dims, err)
    call expect(err, MMB_OK, 'tile')
    call mmb_tile_iterator_create(arr, it, err)
    call expect(err, MMB_OK, 'an iterator, never advanced nor destroyed')
    call mmb_array_destroy(arr)
    call ensure(.not. c_associated(arr%ptr), 'the array went, with its forgotten iterator')
    call mmb_array_destroy(arr2, err)
    call expect(err, MMB_OK, 'the second field')
    call mmb_interface_destroy(dram_interface, err)
    call expect(err, MMB_OK, 'the interface')
    ! the 4-byte layout over more elements than the data's bytes hold: refused
    call mmb_request_interface(dram_space, new_interface=dram_interface, err=err)
    call mmb_array_create_wrapped(x, [5_mmbIndexKind, 5_mmbIndexKind, 5_mmbIndexKind, 25_mmbIndexKind], &
                                  layout, dram_interface, MMB_READ_WRITE, arr, err)
    call expect(err, MMB_INVALID_ARG, '4-byte elements past the data''s bytes')
    call ensure(.not. c_associated(arr%ptr), 'no array made')
    call mmb_array_destroy(arr, err)
    call expect(err, MMB_OK, 'destroying the array that was not made')
    ! elements larger than the data's would reach past it: refused
    call mmb_layout_destroy(layout, err)
    call mmb_layout_create_regular_nd(16_mmbSizeKind, 4_mmbSizeKind, &
                                      MMB_COLMAJOR, mmb_layout_padding_create_zero(), layout, err)
    call mmb_array_create_wrapped(x, dims, layout, dram_interface, MMB_READ_WRITE, arr, err)
    call expect(err, MMB_INVALID_ARG, 'a 16-byte layout over real(dp) data')
    call ensure(.not. c_associated(arr%ptr), 'no array made')
    call mmb_interface_destroy(dram_interface, err)
    call mmb_layout_destroy(layout, err)
    call finalize_checked()
  end subroutine

  subroutine test_spaces()
    type(mmbMemSpace) :: dram, first, named, gpu
    type(mmbMemSpaceConfig) :: config
    type(mmbSpaceInfo) :: info
    type(mmbStats) :: stats
    integer(mmbSizeKind) :: n, cap
    integer :: err, layer, distance, devices
    character(len=:), allocatable :: reason
    call begin('spaces')
    call init_quiet()
    call mmb_space_count(n, err)
    call expect(err, MMB_OK, 'count')
    call ensure(n >= 1, 'at least one space')
    call mmb_space_at(0_mmbSizeKind, first, err)
    call expect(err, MMB_OK, 'the first space')
    call mmb_space_at(n, dram, err)
    call expect(err, MMB_INVALID_ARG, 'past the last space')
    call mmb_request_space(MMB_DRAM, MMB_EXECUTION_CONTEXT_DEFAULT, new_space=dram, err=err)
    call ensure(c_associated(dram%ptr, first%ptr), 'nothing registered: the discovered space')
    call mmb_space_layer(dram, layer, err)
    call ensure(layer == MMB_DRAM, 'its layer')
    call mmb_space_get_info(dram, info, err)
    call expect(err, MMB_OK, 'info')
    call ensure(info%discovered .and. info%capacity > 0, 'discovered, with a capacity')
    call ensure(index(mmb_space_info_name(info), 'DRAM') == 1, 'its name')
    call mmb_space_get_stats(dram, stats, err)
    call expect(err, MMB_OK, 'stats')
    call mmb_space_distance(dram, dram, distance, err)
    call ensure(err == MMB_OK .or. err == MMB_UNAVAILABLE, 'distance (unavailable without a table)')
    if (err == MMB_OK) call ensure(distance == 10, 'a node is at distance 10 of itself')
    call mmb_space_distance(dram, gpu, distance, err)
    call expect(err, MMB_INVALID_ARG, 'the distance to a space never requested')
    call mmb_cuda_status(devices, reason, err)
    call expect(err, MMB_OK, 'cuda status')
    if (devices == 0) then
      call expect(err, MMB_OK, 'status')
      call ensure(len(reason) > 0, 'no GPU: a reason')
      call mmb_request_space(MMB_GDRAM, MMB_EXECUTION_CONTEXT_DEFAULT, new_space=gpu, err=err)
      call expect(err, MMB_UNAVAILABLE, 'no GPU space')
    end if
    ! Mamba's configs: a named, limited space; SET needs a size; unknown actions
    config = mmbMemSpaceConfig(mmbSizeConfig(MMB_SIZE_SET, .false., 4096), &
                               MMB_MEMINTERFACE_CONFIG_DEFAULT, name='halo buffers')
    call mmb_request_space(MMB_DRAM, MMB_CPU, config, named, err)
    call expect(err, MMB_OK, 'a named space')
    call mmb_space_get_info(named, info, err)
    call ensure(mmb_space_info_name(info) == 'halo buffers', 'the name given')
    call mmb_space_capacity(named, cap, err)
    call ensure(cap == 4096, 'the size given')
    call mmb_space_release(named, err)
    call expect(err, MMB_OK, 'released')
    call ensure(.not. c_associated(named%ptr), 'release reset the handle')
    config = mmbMemSpaceConfig(mmbSizeConfig(MMB_SIZE_SET, .false., 0), MMB_MEMINTERFACE_CONFIG_DEFAULT)
    call mmb_request_space(MMB_DRAM, MMB_CPU, config, named, err)
    call expect(err, MMB_INVALID_ARG, 'MMB_SIZE_SET with no size')
    config = mmbMemSpaceConfig(mmbSizeConfig(7, .false., 10), MMB_MEMINTERFACE_CONFIG_DEFAULT)
    call mmb_register_memory(MMB_DRAM, MMB_CPU, config, err)
    call expect(err, MMB_INVALID_ARG, 'an unknown size action')
    config = mmbMemSpaceConfig(mmbSizeConfig(MMB_SIZE_ANY, .true., 0), MMB_MEMINTERFACE_CONFIG_DEFAULT)
    call mmb_request_space(MMB_DRAM, MMB_CPU, config, named, err)
    call expect(err, MMB_OK, 'MMB_SIZE_ANY: the whole tier')
    call mmb_space_capacity(named, cap, err)
    call mmb_space_capacity(dram, n, err)
    call ensure(cap == n, 'as much as the tier')
    call mmb_space_release(named, err)
    call mmb_register_memory(99, MMB_CPU, config, err)
    call expect(err, MMB_INVALID_ARG, 'an unknown layer')
    call finalize_checked()
  end subroutine

  subroutine test_interfaces_and_allocations()
    type(mmbMemSpace) :: dram, back
    type(mmbMemInterface) :: pool, plain, owner
    type(mmbAllocation) :: a, b, z
    type(mmbStats) :: stats
    type(mmbAllocateOptions) :: opts
    integer(c_int8_t), pointer :: bytes(:)
    integer :: err
    call begin('interfaces_and_allocations')
    call init_quiet()
    call mmb_register_memory(MMB_DRAM, MMB_CPU, mmbMemSpaceConfig(mmbSizeConfig(MMB_SIZE_SET, .false., &
                             1048576), mmbMemInterfaceConfig(strategy=MMB_STRATEGY_POOL)), err)
    call expect(err, MMB_OK, 'registered with a pool')
    call mmb_request_space(MMB_DRAM, MMB_CPU, new_space=dram, err=err)
    call mmb_request_interface(dram, new_interface=pool, err=err)
    call expect(err, MMB_OK, 'the registered interface config')
    call mmb_request_interface(dram, mmbMemInterfaceConfig(), plain, err)
    call expect(err, MMB_OK, 'an explicit config')
    call mmb_allocate(1000_mmbSizeKind, pool, a, err)
    call expect(err, MMB_OK, 'allocate')
    call mmb_free(a, err)
    call mmb_interface_get_stats(pool, stats, err)
    call ensure(stats%n_allocs == 1 .and. stats%n_frees == 1, 'counted')
    call ensure(stats%reserved_current > 0, 'a pool keeps what it took: the registered config is used')
    call mmb_interface_get_stats(plain, stats, err)
    call ensure(stats%n_allocs == 0, 'the other interface is untouched')
    call mmb_allocate(2000000_mmbSizeKind, pool, a, err)
    call expect(err, MMB_OUT_OF_MEMORY, 'past the registered size')
    call ensure(.not. c_associated(a%ptr), 'no handle on failure')
    call mmb_allocate(0_mmbSizeKind, plain, a, err)
    call expect(err, MMB_INVALID_ARG, 'zero bytes')
    ! data through c_f_pointer; options; the allocation's interface
    call mmb_allocate(256_mmbSizeKind, plain, a, err)
    call ensure(mmb_allocation_size(a) == 256, 'its size')
    call c_f_pointer(mmb_allocation_ptr(a), bytes, [256])
    bytes = 7
    opts%flags = MMB_ALLOC_ZERO
    opts%alignment = 4096
    call mmb_allocate(100_mmbSizeKind, plain, z, err, opts)
    call expect(err, MMB_OK, 'zeroed and aligned')
    call c_f_pointer(mmb_allocation_ptr(z), bytes, [100])
    call ensure(all(bytes == 0), 'zeroed')
    call ensure(mod(transfer(mmb_allocation_ptr(z), 0_c_intptr_t), 4096_c_intptr_t) == 0, 'aligned')
    call mmb_allocate_opts(64_mmbSizeKind, plain, mmbAllocateOptions(flags=MMB_ALLOC_ZERO), b, err)
    call expect(err, MMB_OK, 'mmb_allocate_opts')
    call mmb_allocation_get_interface(b, owner, err)
    call ensure(c_associated(owner%ptr, plain%ptr), 'its interface')
    call mmb_interface_get_space(plain, back, err)
    call ensure(c_associated(back%ptr, dram%ptr), 'the interface''s space')
    call mmb_interface_reset_high(plain, err)
    call expect(err, MMB_OK, 'reset_high')
    call mmb_free(a, err); call mmb_free(b, err); call mmb_free(z, err)
    call expect(err, MMB_OK, 'frees')
    call mmb_free(z, err)
    call expect(err, MMB_OK, 'a freed handle is null: freeing it again does nothing')
    call mmb_interface_trim(pool, 0_mmbSizeKind, err)
    call expect(err, MMB_OK, 'trim')
    call mmb_interface_get_stats(pool, stats, err)
    call ensure(stats%reserved_current == 0, 'trimmed')
    call mmb_interface_destroy(pool, err)
    call mmb_interface_destroy(plain, err)
    call expect(err, MMB_OK, 'destroy')
    call finalize_checked()
  end subroutine

  subroutine test_copies()
    type(mmbMemSpace) :: dram
    type(mmbMemInterface) :: iface
    type(mmbAllocation) :: a, b
    real(dp), pointer :: x(:), y(:), m(:,:), n(:,:)
    integer(mmbSizeKind), parameter :: e = 8
    integer :: err, i
    call begin('copies')
    call init_quiet()
    call mmb_request_space(MMB_DRAM, MMB_CPU, new_space=dram, err=err)
    call mmb_request_interface(dram, new_interface=iface, err=err)
    call mmb_allocate(100 * e, iface, a, err)
    call mmb_allocate(100 * e, iface, b, err)
    call c_f_pointer(mmb_allocation_ptr(a), x, [100])
    call c_f_pointer(mmb_allocation_ptr(b), y, [100])
    x = [(real(i, dp), i = 1, 100)]
    y = 0
    call mmb_copy(b, a, err)
    call expect(err, MMB_OK, 'copy')
    call ensure(all(y == x), 'copied')
    y = 0
    call mmb_copy_1d(b, 10 * e, a, 0_mmbSizeKind, 5 * e, err)
    call ensure(all(y(11:15) == x(1:5)) .and. y(10) == 0 .and. y(16) == 0, 'copy_1d')
    call mmb_copy_1d(b, 99 * e, a, 0_mmbSizeKind, 5 * e, err)
    call expect(err, MMB_INVALID_ARG, 'copy_1d past the end')
    ! a 10x10 column-major block: copy rows 3..6 of columns 2..4
    call c_f_pointer(mmb_allocation_ptr(a), m, [10, 10])
    call c_f_pointer(mmb_allocation_ptr(b), n, [10, 10])
    n = 0
    call mmb_copy_2d(b, 2 * e, 1_mmbSizeKind, 10 * e, a, 2 * e, 1_mmbSizeKind, 10 * e, 4 * e, 3_mmbSizeKind, err)
    call expect(err, MMB_OK, 'copy_2d')
    call ensure(all(n(3:6, 2:4) == m(3:6, 2:4)) .and. sum(n) == sum(m(3:6, 2:4)), 'copy_2d moved the block')
    n = 0
    call mmb_copy_nd(b, [2 * e, 1_mmbSizeKind], [10 * e, 10_mmbSizeKind], a, [2 * e, 1_mmbSizeKind], &
                     [10 * e, 10_mmbSizeKind], [4 * e, 3_mmbSizeKind], err)
    call expect(err, MMB_OK, 'copy_nd')
    call ensure(all(n(3:6, 2:4) == m(3:6, 2:4)) .and. sum(n) == sum(m(3:6, 2:4)), 'copy_nd moved the block')
    call mmb_copy_nd(b, [0_mmbSizeKind], [10 * e, 10_mmbSizeKind], a, [0_mmbSizeKind, 0_mmbSizeKind], &
                     [10 * e, 10_mmbSizeKind], [4 * e, 3_mmbSizeKind], err)
    call expect(err, MMB_INVALID_ARG, 'copy_nd with offsets of another rank')
    call mmb_free(a, err); call mmb_free(b, err)
    call mmb_copy(a, b, err)
    call expect(err, MMB_INVALID_ARG, 'copy between freed (null) allocations')
    call mmb_interface_destroy(iface, err)
    call finalize_checked()
  end subroutine

  subroutine test_bare_pointers()
    type(mmbMemSpace) :: dram
    type(mmbMemInterface) :: pool
    type(c_ptr) :: p, big, kept
    real(c_double), pointer :: x(:)
    type(mmbStats) :: stats
    integer :: err
    call begin('bare pointers')
    call init_quiet()
    call mmb_request_space(MMB_DRAM, MMB_CPU, new_space=dram, err=err)
    call mmb_request_interface(dram, mmbMemInterfaceConfig(strategy=MMB_STRATEGY_POOL), pool, err)
    call expect(err, MMB_OK, 'a pool')
    call mmb_ptr_allocate(800_mmbSizeKind, pool, p, err)
    call expect(err, MMB_OK, 'a small block')
    call ensure(c_associated(p) .and. mod(transfer(p, 0_c_intptr_t), 64_c_intptr_t) == 0, 'aligned')
    call c_f_pointer(p, x, [100])
    x = 2.5_c_double
    call mmb_ptr_allocate(100000_mmbSizeKind, pool, big, err)
    call expect(err, MMB_OK, 'a large block')
    call mmb_interface_get_stats(pool, stats, err)
    call ensure(stats%used_current == 100800, 'both counted')
    call ensure(sum(x) == 250.0_c_double, 'the bytes kept')
    kept = p
    call mmb_ptr_deallocate(p, pool, err)
    call expect(err, MMB_OK, 'free')
    call ensure(.not. c_associated(p), 'freed: null')
    call mmb_ptr_deallocate(p, pool, err)
    call expect(err, MMB_OK, 'null: nothing to do')
    call mmb_ptr_deallocate(kept, pool, err)
    call expect(err, MMB_INVALID_ARG, 'freed twice')
    call mmb_ptr_allocate(0_mmbSizeKind, pool, p, err)
    call expect(err, MMB_INVALID_ARG, 'zero bytes')
    call mmb_ptr_allocate(1000_mmbSizeKind, pool, p, err, mmbAllocateOptions(alignment=4096))
    call expect(err, MMB_OK, 'page aligned')
    call ensure(mod(transfer(p, 0_c_intptr_t), 4096_c_intptr_t) == 0, 'on a page')
    call mmb_ptr_deallocate(p, pool, err)
    call expect(err, MMB_OK, 'free the aligned block')
    call mmb_ptr_allocate_opts(64_mmbSizeKind, pool, mmbAllocateOptions(alignment=48), p, err)
    call expect(err, MMB_INVALID_ARG, 'an alignment that is not a power of two')
    ! the former names, kept for one release, in their own order
    call mmb_ptr_alloc_opts(pool, 64_mmbSizeKind, mmbAllocateOptions(alignment=48), p, err)
    call expect(err, MMB_INVALID_ARG, 'deprecated mmb_ptr_alloc_opts')
    call mmb_ptr_alloc(pool, 96_mmbSizeKind, p, err)
    call expect(err, MMB_OK, 'deprecated mmb_ptr_alloc')
    kept = p
    call mmb_ptr_free(pool, p, err)
    call expect(err, MMB_OK, 'deprecated mmb_ptr_free')
    call mmb_ptr_free(pool, kept, err)
    call expect(err, MMB_INVALID_ARG, 'deprecated mmb_ptr_free: freed twice')
    call mmb_interface_destroy(pool, err)
    call expect(err, MMB_BUSY, 'a block still live')
    call mmb_ptr_deallocate(big, pool, err)
    call expect(err, MMB_OK, 'free the large block')
    call mmb_interface_destroy(pool, err)
    call expect(err, MMB_OK, 'destroy')
    call finalize_checked()
  end subroutine

  subroutine test_regions()
    type(mmbMemSpace) :: dram
    type(mmbMemInterface) :: iface
    type(mmbRegion) :: region, child
    type(mmbAllocation) :: inside
    type(c_ptr) :: p, q
    integer :: err
    call begin('regions')
    call init_quiet()
    call mmb_request_space(MMB_DRAM, MMB_CPU, new_space=dram, err=err)
    call mmb_request_interface(dram, new_interface=iface, err=err)
    call mmb_region_create(iface, region, err, mmbRegionOptions(65536))
    call expect(err, MMB_OK, 'create')
    call mmb_region_alloc(region, 100_mmbSizeKind, 64_mmbSizeKind, p, err)
    call expect(err, MMB_OK, 'alloc')
    call ensure(c_associated(p) .and. mod(transfer(p, 0_c_intptr_t), 64_c_intptr_t) == 0, 'aligned')
    call mmb_region_alloc(region, 100_mmbSizeKind, 3_mmbSizeKind, q, err)
    call expect(err, MMB_INVALID_ARG, 'an alignment that is not a power of two')
    call mmb_region_push(region, child, err)
    call expect(err, MMB_OK, 'push')
    call mmb_region_alloc(child, 10_mmbSizeKind, 0_mmbSizeKind, q, err)
    call expect(err, MMB_OK, 'alloc in the child')
    call mmb_region_destroy(child, err)
    call expect(err, MMB_OK, 'destroy the child')
    call mmb_allocate(512_mmbSizeKind, iface, inside, err, mmbAllocateOptions(region=region))
    call expect(err, MMB_OK, 'an allocation placed in the region')
    call mmb_region_reset(region, err)
    call expect(err, MMB_OK, 'reset')
    call mmb_region_destroy(region, err)
    call expect(err, MMB_OK, 'destroy')
    call mmb_region_destroy(region, err)
    call expect(err, MMB_OK, 'destroyed: null, nothing to do')
    call mmb_region_alloc(region, 10_mmbSizeKind, 0_mmbSizeKind, q, err)
    call expect(err, MMB_INVALID_ARG, 'alloc from a null region')
    call mmb_interface_destroy(iface, err)
    call finalize_checked()
  end subroutine

  subroutine test_trace()
    type(mmbMemSpace) :: dram
    type(mmbMemInterface) :: iface
    type(mmbAllocation) :: a
    integer :: err, unit, ios
    logical :: there
    character(len=256) :: path
    call begin('trace')
    call init_quiet()
    call mmb_trace_set_capacity(1024_mmbSizeKind, err)
    call expect(err, MMB_OK, 'capacity')
    call mmb_trace_start(err)
    call expect(err, MMB_OK, 'start')
    call mmb_request_space(MMB_DRAM, MMB_CPU, new_space=dram, err=err)
    call mmb_request_interface(dram, new_interface=iface, err=err)
    call mmb_allocate(4096_mmbSizeKind, iface, a, err)
    call mmb_free(a, err)
    call mmb_trace_stop(err)
    call expect(err, MMB_OK, 'stop')
    write (path, '(a, i0, a)') '/tmp/mamba-trace-', getpid_portable(), '.json'
    call mmb_trace_dump(trim(path), err)
    call expect(err, MMB_OK, 'dump')
    inquire (file=trim(path), exist=there)
    call ensure(there, 'the trace file')
    open (newunit=unit, file=trim(path), iostat=ios)
    if (ios == 0) close (unit, status='delete')
    call mmb_trace_dump('/nonexistent-dir/trace.json', err)
    call expect(err, MMB_IO, 'a path that cannot be written')
    call mmb_interface_destroy(iface, err)
    call finalize_checked()
  end subroutine

  integer function getpid_portable()
    interface
      integer(c_int) function c_getpid() bind(C, name='getpid')
        import :: c_int
      end function
    end interface
    getpid_portable = c_getpid()
  end function

  subroutine test_layouts()
    type(mmbLayout) :: l1, l3
    type(mmbLayoutInfo) :: info
    integer(mmbSizeKind) :: bytes
    integer :: err
    call begin('layouts')
    call init_quiet()
    call mmb_layout_create_regular_1d(8_mmbSizeKind, mmb_layout_padding_create_zero(), l1, err)
    call expect(err, MMB_OK, '1-d')
    call mmb_layout_create_regular_nd(8_mmbSizeKind, 3_mmbSizeKind, MMB_COLMAJOR, mmbLayoutPadding(64), l3, err)
    call expect(err, MMB_OK, '3-d, padded')
    call mmb_layout_get_info(l3, info, err)
    call ensure(info%element_size == 8 .and. info%rank == 3 .and. info%order == MMB_COLMAJOR .and. &
                info%row_alignment == 64 .and. info%type == MMB_TYPE_BYTES, 'what it was made with')
    call mmb_layout_set_element_type(l3, MMB_TYPE_DOUBLE, err)
    call expect(err, MMB_OK, 'element type')
    call mmb_layout_get_info(l3, info, err)
    call ensure(info%type == MMB_TYPE_DOUBLE, 'the type set')
    call mmb_layout_set_element_type(l3, MMB_TYPE_FLOAT, err)
    call expect(err, MMB_INVALID_ARG, 'a 4-byte type on 8-byte elements')
    call mmb_element_type_size(MMB_TYPE_INT32, bytes, err)
    call ensure(bytes == 4, 'int32 is 4 bytes')
    call mmb_layout_create_regular_nd(8_mmbSizeKind, 9_mmbSizeKind, MMB_COLMAJOR, &
                                      mmb_layout_padding_create_zero(), l1, err)
    call expect(err, MMB_INVALID_ARG, 'rank 9')
    call ensure(c_associated(l1%ptr), 'a failed create leaves the handle as it was')
    call mmb_layout_create_regular_nd(0_mmbSizeKind, 2_mmbSizeKind, MMB_COLMAJOR, &
                                      mmb_layout_padding_create_zero(), l3, err)
    call expect(err, MMB_INVALID_ARG, 'zero-byte elements')
    call mmb_layout_destroy(l1, err)
    call mmb_layout_destroy(l3, err)
    call expect(err, MMB_OK, 'destroy')
    call finalize_checked()
  end subroutine

  ! A layout and an interface for the array tests.
  subroutine setup(esize, rank, layout, iface)
    integer, intent(in) :: esize, rank
    type(mmbLayout), intent(inout) :: layout
    type(mmbMemInterface), intent(inout) :: iface
    type(mmbMemSpace) :: dram
    integer :: err
    call init_quiet()
    call mmb_request_space(MMB_DRAM, MMB_CPU, new_space=dram, err=err)
    call mmb_request_interface(dram, new_interface=iface, err=err)
    call mmb_layout_create_regular_nd(int(esize, mmbSizeKind), int(rank, mmbSizeKind), MMB_COLMAJOR, &
                                      mmb_layout_padding_create_zero(), layout, err)
    call expect(err, MMB_OK, 'setup')
  end subroutine

  subroutine teardown(layout, iface)
    type(mmbLayout), intent(inout) :: layout
    type(mmbMemInterface), intent(inout) :: iface
    integer :: err
    call mmb_layout_destroy(layout, err)
    call mmb_interface_destroy(iface, err)
    call expect(err, MMB_OK, 'teardown: the interface (no array left on it)')
    call finalize_checked()
  end subroutine

  subroutine test_wrapped_arrays()
    type(mmbLayout) :: layout, l4, li
    type(mmbMemInterface) :: iface
    type(mmbArray) :: arr, a4, ai
    real(dp), allocatable, target :: x(:,:)
    real(dp), target :: w(3, 4, 5, 6)
    integer(c_int32_t), allocatable, target :: k(:,:)
    integer(mmbIndexKind), allocatable :: dims(:), strides(:)
    integer(mmbSizeKind) :: bytes
    type(mmbMemInterface) :: back
    real(dp), pointer :: view(:,:)
    integer :: err
    call begin('wrapped_arrays')
    call setup(8, 2, layout, iface)
    allocate(x(6, 9))
    x = 1
    call mmb_array_create_wrapped(x, [6_mmbIndexKind, 9_mmbIndexKind], layout, iface, MMB_READ_WRITE, arr, err)
    call expect(err, MMB_OK, 'rank 2')
    call ensure(c_associated(mmb_array_ptr(arr), c_loc(x)), 'no copy: the array is the data')
    call mmb_array_get_dims(arr, dims, err)
    call ensure(size(dims) == 2 .and. all(dims == [6, 9]), 'dims as given')
    call mmb_array_get_strides(arr, strides, err)
    call ensure(all(strides == [1, 6]), 'column-major: the first dimension is contiguous')
    call mmb_array_get_bytes(arr, bytes, err)
    call ensure(bytes == 6 * 9 * 8, 'bytes')
    call mmb_array_get_interface(arr, back, err)
    call ensure(c_associated(back%ptr, iface%ptr), 'its interface')
    dims = 0
    call mmb_array_dims(arr, dims, err)
    call ensure(err == MMB_OK .and. all(dims == [6, 9]), 'deprecated mmb_array_dims')
    call c_f_pointer(mmb_array_ptr(arr), view, [6, 9])
    call ensure(all(view == 1), 'the data')
    call mmb_array_destroy(arr, err)
    call expect(err, MMB_OK, 'destroy')
    ! rank 4 from an explicit-shape array, integers
    call mmb_layout_create_regular_nd(8_mmbSizeKind, 4_mmbSizeKind, MMB_COLMAJOR, &
                                      mmb_layout_padding_create_zero(), l4, err)
    call mmb_array_create_wrapped(w, [3_mmbIndexKind, 4_mmbIndexKind, 5_mmbIndexKind, 6_mmbIndexKind], &
                                  l4, iface, MMB_READ, a4, err)
    call expect(err, MMB_OK, 'rank 4')
    allocate(k(10, 10))
    call mmb_layout_create_regular_nd(4_mmbSizeKind, 2_mmbSizeKind, MMB_COLMAJOR, &
                                      mmb_layout_padding_create_zero(), li, err)
    call mmb_array_create_wrapped(k, [10_mmbIndexKind, 10_mmbIndexKind], li, iface, MMB_READ_WRITE, ai, err)
    call expect(err, MMB_OK, 'integers')
    ! a row-major view of the same bytes, dims reversed: within the data, allowed
    call mmb_array_destroy(ai, err)
    call mmb_array_destroy(a4, err)
    call expect(err, MMB_OK, 'destroy')
    call mmb_layout_destroy(l4, err); call mmb_layout_destroy(li, err)
    call teardown(layout, iface)
  end subroutine

  subroutine test_wrapped_misuse()
    type(mmbLayout) :: layout
    type(mmbMemInterface) :: iface
    type(mmbArray) :: arr
    real(dp), allocatable, target :: x(:,:), v(:)
    real(sp), allocatable, target :: s(:,:)
    integer :: err
    call begin('wrapped_misuse')
    call setup(8, 2, layout, iface)
    allocate(x(6, 9), v(54), s(6, 9))
    call mmb_array_create_wrapped(v, [6_mmbIndexKind, 9_mmbIndexKind], layout, iface, MMB_READ_WRITE, arr, err)
    call expect(err, MMB_INVALID_ARG, 'rank-1 data for a rank-2 layout')
    call mmb_array_create_wrapped(s, [6_mmbIndexKind, 9_mmbIndexKind], layout, iface, MMB_READ_WRITE, arr, err)
    call expect(err, MMB_INVALID_ARG, 'real(4) data for an 8-byte layout')
    call mmb_array_create_wrapped(x, [6_mmbIndexKind, 9_mmbIndexKind, 1_mmbIndexKind], layout, iface, &
                                  MMB_READ_WRITE, arr, err)
    call expect(err, MMB_INVALID_ARG, 'three dims for rank 2')
    call mmb_array_create_wrapped(x, [6_mmbIndexKind, 10_mmbIndexKind], layout, iface, MMB_READ_WRITE, arr, err)
    call expect(err, MMB_INVALID_ARG, 'dims past the data')
    call mmb_array_create_wrapped(x(1:6:2, :), [3_mmbIndexKind, 9_mmbIndexKind], layout, iface, &
                                  MMB_READ_WRITE, arr, err)
    call expect(err, MMB_INVALID_ARG, 'a strided section')
    call mmb_array_create_wrapped(x, [0_mmbIndexKind, 9_mmbIndexKind], layout, iface, MMB_READ_WRITE, arr, err)
    call expect(err, MMB_INVALID_ARG, 'a zero extent')
    call ensure(.not. c_associated(arr%ptr), 'nothing made')
    call mmb_array_tile(arr, [2_mmbIndexKind, 2_mmbIndexKind], err)
    call expect(err, MMB_INVALID_ARG, 'tiling an array never made')
    call mmb_array_create_wrapped(x, [6_mmbIndexKind, 9_mmbIndexKind], layout, iface, MMB_READ_WRITE, arr, err)
    call mmb_array_tile(arr, [2_mmbIndexKind], err)
    call expect(err, MMB_INVALID_ARG, 'tile dims of another rank')
    call mmb_array_tile(arr, [2_mmbIndexKind, 0_mmbIndexKind], err)
    call expect(err, MMB_INVALID_ARG, 'a zero tile extent')
    call mmb_interface_destroy(iface, err)
    call expect(err, MMB_BUSY, 'an interface an array still uses')
    call mmb_array_destroy(arr, err)
    call teardown(layout, iface)
  end subroutine

  ! Records of two 4-byte integers, AoS and SoA: a duplicate converts, a
  ! migration converts back, on a queue too; the fields are read in place.
  subroutine test_records()
    type(mmbLayout) :: aos, soa, plain
    type(mmbMemInterface) :: iface
    type(mmbArray) :: a, s
    type(mmbArrayTile) :: t
    type(mmbQueue) :: queue
    type(mmbRequest) :: r
    type(mmbRecordInfo) :: info
    type(mmbField) :: f
    integer(c_int32_t), pointer :: raw(:,:), plane(:)
    character(len=:), allocatable :: name
    integer(mmbSizeKind) :: size, offset, index
    integer :: err, i
    call begin('records')
    call setup(4, 1, plain, iface)
    call mmb_layout_create_record([4_mmbSizeKind, 4_mmbSizeKind], [0_mmbSizeKind, 4_mmbSizeKind], &
      0_mmbSizeKind, MMB_RECORD_AOS, 1_mmbSizeKind, MMB_ROWMAJOR, mmb_layout_padding_create_zero(), &
      aos, err, names=['id   ', 'count'])
    call expect(err, MMB_OK, 'an AoS layout')
    call mmb_layout_create_record([4_mmbSizeKind, 4_mmbSizeKind], [0_mmbSizeKind, 4_mmbSizeKind], &
      0_mmbSizeKind, MMB_RECORD_SOA, 1_mmbSizeKind, MMB_ROWMAJOR, mmb_layout_padding_create_zero(), &
      soa, err)
    call expect(err, MMB_OK, 'an SoA layout, unnamed')
    call mmb_layout_get_record(aos, info, err)
    call ensure(info%n_fields == 2 .and. info%kind == MMB_RECORD_AOS .and. info%record_size == 8, &
                'its records')
    call mmb_layout_get_field(aos, 1_mmbSizeKind, name, size, offset, err)
    call ensure(err == MMB_OK .and. name == 'count' .and. size == 4 .and. offset == 4, 'field 1')
    call mmb_layout_find_field(aos, 'count', index, err)
    call ensure(err == MMB_OK .and. index == 1, 'found by name')
    call mmb_layout_find_field(soa, 'count', index, err)
    call expect(err, MMB_INVALID_ARG, 'no such name')
    call mmb_array_create([10_mmbIndexKind], aos, iface, MMB_READ_WRITE, a, err)
    call mmb_array_get_field(a, 0_mmbSizeKind, f, err)
    call ensure(err == MMB_OK .and. f%byte_stride(1) == 8, 'AoS: records of 8 bytes')
    call c_f_pointer(f%ptr, raw, [2, 10])
    raw(1, :) = [(i, i = 1, 10)]
    raw(2, :) = [(100 + i, i = 1, 10)]
    call mmb_array_duplicate_layout(a, iface, MMB_READ_WRITE, soa, s, err)
    call expect(err, MMB_OK, 'an SoA duplicate')
    call mmb_array_get_field(s, 1_mmbSizeKind, f, err)
    call ensure(f%byte_stride(1) == 4, 'SoA: a plane per field')
    call c_f_pointer(f%ptr, plane, [10])
    call ensure(all(plane == [(100 + i, i = 1, 10)]), 'converted')
    plane = -plane
    call mmb_array_merge(s, MMB_MERGE_OVERWRITE, err)
    call ensure(err == MMB_OK .and. all(raw(2, :) == [(-100 - i, i = 1, 10)]), 'converted back')
    call mmb_array_migrate_layout(a, iface, MMB_READ_WRITE, soa, err)
    call expect(err, MMB_OK, 'migrated to SoA')
    call mmb_tile_at(a, [0_mmbIndexKind], t, err)
    call mmb_tile_get_field(t, 0_mmbSizeKind, f, err)
    call c_f_pointer(f%ptr, plane, [10])
    call ensure(all(plane == [(i, i = 1, 10)]), 'the tile reads field 0 in its plane')
    call mmb_array_get_field(a, 2_mmbSizeKind, f, err)
    call expect(err, MMB_INVALID_ARG, 'field 2 of 2')
    call mmb_queue_create(queue, err)
    call mmb_array_duplicate_layout_async(a, iface, MMB_READ_WRITE, aos, queue, r, s, err)
    call expect(err, MMB_OK, 'an AoS duplicate on a queue')
    call mmb_wait(r, err)
    call mmb_array_merge(s, MMB_MERGE_OVERWRITE, err)
    call mmb_array_migrate_layout_async(a, iface, MMB_READ_WRITE, aos, queue, r, err)
    call expect(err, MMB_OK, 'back to AoS on a queue')
    call mmb_wait(r, err)
    call mmb_array_get_field(a, 0_mmbSizeKind, f, err)
    call c_f_pointer(f%ptr, raw, [2, 10])
    call ensure(all(raw(1, :) == [(i, i = 1, 10)]) .and. all(raw(2, :) == [(-100 - i, i = 1, 10)]), &
                'the same records')
    call mmb_array_migrate_layout(a, iface, MMB_READ, plain, err)
    call expect(err, MMB_INVALID_ARG, 'records are not 4-byte elements')
    call mmb_queue_destroy(queue, err)
    call mmb_array_destroy(a, err)
    call mmb_layout_destroy(aos, err)
    call mmb_layout_destroy(soa, err)
    call teardown(plain, iface)
  end subroutine

  ! A layer of the user's over DRAM: its space, an allocation there, by name.
  subroutine test_user_layers()
    type(mmbMemSpace) :: space
    type(mmbMemInterface) :: iface
    type(mmbAllocation) :: a
    type(mmbSpaceInfo) :: info
    integer :: err, layer, found
    call begin('user_layers')
    call init_quiet()
    call mmb_layer_register('CXL', mmbLayerProperties(capacity=1048576_c_size_t), layer, err)
    call ensure(err == MMB_OK .and. layer == MMB_MEMLAYER_MAX, 'registered, numbered after the built-ins')
    call ensure(mmb_layer_name(layer) == 'CXL', 'its name')
    call mmb_layer_find('cxl', found, err)
    call ensure(err == MMB_OK .and. found == layer, 'found by name')
    call mmb_layer_register('CXL', mmbLayerProperties(), found, err)
    call expect(err, MMB_INVALID_ARG, 'a name taken')
    call mmb_layer_find('nope', found, err)
    call expect(err, MMB_INVALID_ARG, 'no such layer')
    call mmb_request_space(layer, MMB_CPU, new_space=space, err=err)
    call expect(err, MMB_OK, 'its space')
    call mmb_space_get_info(space, info, err)
    call ensure(info%capacity == 1048576 .and. info%layer == layer, 'its capacity')
    call mmb_request_interface(space, new_interface=iface, err=err)
    call mmb_allocate(4096_mmbSizeKind, iface, a, err)
    call expect(err, MMB_OK, 'an allocation in it')
    call mmb_allocate(2097152_mmbSizeKind, iface, a, err)
    call expect(err, MMB_OUT_OF_MEMORY, 'past its capacity')
    call mmb_free(a, err)
    call expect(err, MMB_OK, 'the first one freed')
    call mmb_interface_destroy(iface, err)
    call finalize_checked()
  end subroutine

  subroutine test_owned_arrays()
    type(mmbLayout) :: layout
    type(mmbMemInterface) :: iface
    type(mmbArray) :: a, b, dup
    real(dp), allocatable, target :: x(:,:)
    real(dp), pointer :: p(:,:)
    type(mmbArrayTile) :: whole
    integer :: err
    call begin('owned_arrays')
    call setup(8, 2, layout, iface)
    call mmb_layout_set_element_type(layout, MMB_TYPE_DOUBLE, err)
    allocate(x(8, 8))
    x = 3
    call mmb_array_create(shape(x, mmbIndexKind), layout, iface, MMB_READ_WRITE, a, err, &
                          mmbArrayOptions(flags=MMB_ALLOC_ZERO))
    call expect(err, MMB_OK, 'an owned array, zeroed')
    call mmb_array_create_opts(shape(x, mmbIndexKind), layout, iface, MMB_READ_WRITE, mmbArrayOptions(), b, err)
    call expect(err, MMB_OK, 'mmb_array_create_opts')
    call mmb_array_destroy(b, err)
    call mmb_array_create_wrapped(x, shape(x, mmbIndexKind), layout, iface, MMB_READ_WRITE, b, err)
    call mmb_array_copy(a, b, err)
    call expect(err, MMB_OK, 'copy wrapped -> owned')
    call mmb_array_tile(a, shape(x, mmbIndexKind), err)
    call mmb_tile_at(a, [0_mmbIndexKind, 0_mmbIndexKind], whole, err)
    call mmb_tile_get_pointer(whole, p, err)
    call expect(err, MMB_OK, 'the owned array as one tile')
    call ensure(all(p == 3), 'copied')
    ! a duplicate, changed, folded back with SUM
    call mmb_array_duplicate(b, iface, MMB_READ_WRITE, dup, err)
    call expect(err, MMB_OK, 'duplicate')
    call mmb_array_merge(dup, MMB_MERGE_SUM, err)
    call expect(err, MMB_OK, 'merge')
    call ensure(.not. c_associated(dup%ptr), 'a merged duplicate is gone')
    call ensure(all(x == 6), 'x + x')
    call mmb_array_duplicate(b, iface, MMB_READ_WRITE, dup, err)
    merged_elements = 0
    call mmb_array_merge_with(dup, c_funloc(add_doubles), c_null_ptr, err)
    call expect(err, MMB_OK, 'merge with a Fortran function')
    call ensure(merged_elements == 64 .and. all(x == 12), 'the Fortran merge ran')
    call mmb_array_migrate(a, iface, MMB_READ_WRITE, err)
    call expect(err, MMB_OK, 'migrate')
    call mmb_array_merge(a, MMB_MERGE_SUM, err)
    call expect(err, MMB_INVALID_STATE, 'merging an array that is not a duplicate')
    call mmb_array_destroy(a, err); call mmb_array_destroy(b, err)
    call expect(err, MMB_OK, 'destroy')
    call teardown(layout, iface)
  end subroutine

  subroutine test_tile_cache()
    type(mmbLayout) :: layout
    type(mmbMemInterface) :: iface
    type(mmbMemSpace) :: fast
    type(mmbArray) :: arr
    type(mmbArrayTile) :: t, local, again
    type(mmbCacheConfig) :: config
    type(mmbCacheStats) :: stats
    type(mmbQueue) :: queue
    type(mmbRequest) :: r
    type(mmbMemSpace) :: small, dram, where
    type(mmbMemInterface) :: strict
    type(mmbAllocation) :: far
    real(dp), allocatable, target :: x(:,:)
    real(dp), pointer :: p(:,:)
    integer :: err, i
    call begin('tile cache')
    call setup(8, 2, layout, iface)
    call mmb_layout_set_element_type(layout, MMB_TYPE_DOUBLE, err)
    call mmb_request_space(MMB_DRAM, MMB_CPU, mmbMemSpaceConfig(mmbSizeConfig(MMB_SIZE_SET, .false., &
      8_mmbSizeKind * 1024 * 1024), MMB_MEMINTERFACE_CONFIG_DEFAULT), fast, err)
    call expect(err, MMB_OK, 'a fast space')
    call mmb_space_set_cache(fast, mmbCacheConfig(budget_bytes=2*4*4*8, clean_share=0.0_c_double), err)
    call expect(err, MMB_OK, 'a budget of two tiles')
    call mmb_space_get_cache(fast, config, err)
    call ensure(config%budget_bytes == 256 .and. config%clean_share == 0, 'the budget read back')
    allocate(x(8, 8))
    x = reshape([(real(i, dp), i = 1, 64)], [8, 8])
    call mmb_array_create_wrapped(x, shape(x, mmbIndexKind), layout, iface, MMB_READ_WRITE, arr, err)
    call mmb_array_tile(arr, [4_mmbIndexKind, 4_mmbIndexKind], err)
    call mmb_tile_at(arr, [1_mmbIndexKind, 0_mmbIndexKind], t, err)
    call mmb_tile_acquire(t, fast, MMB_READ_WRITE, local, err)
    call expect(err, MMB_OK, 'acquire: a miss')
    call mmb_tile_get_pointer(local, p, err)
    call ensure(all(p == x(5:8, 1:4)), 'the copy holds the tile')
    p(5, 1) = -5
    call ensure(x(5, 1) == 5, 'home untouched while cached')
    call mmb_tile_release(local, err)
    call expect(err, MMB_OK, 'release')
    call mmb_tile_release(local, err)
    call expect(err, MMB_INVALID_ARG, 'release twice')
    call mmb_tile_acquire(t, fast, MMB_READ, again, err)
    call ensure(c_associated(again%ptr, local%ptr), 'a hit: the same copy')
    call mmb_tile_release(again, err)
    call mmb_queue_create(queue, err)
    call mmb_tile_acquire_async(t, fast, MMB_READ, queue, r, again, err)
    call expect(err, MMB_OK, 'acquire_async')
    call mmb_wait(r, err)
    call ensure(c_associated(again%ptr, local%ptr), 'async: a hit')
    call mmb_tile_release(again, err)
    call mmb_queue_destroy(queue, err)
    call mmb_tile_advise(t, fast, MMB_ADVICE_KEEP, err)
    call expect(err, MMB_OK, 'advise')
    call mmb_tile_flush(t, err)
    call expect(err, MMB_OK, 'tile flush')
    call ensure(x(5, 1) == -5, 'written home by the tile flush')
    call mmb_array_flush(arr, err)
    call expect(err, MMB_OK, 'flush: nothing left dirty')
    call mmb_space_get_cache_stats(fast, stats, err)
    call ensure(stats%hits == 2 .and. stats%misses == 1 .and. stats%writebacks == 1 .and. &
                stats%used_bytes == 128, 'the counters')
    call mmb_array_evict(arr, err, fast)
    call expect(err, MMB_OK, 'evict')
    call mmb_space_get_cache_stats(fast, stats, err)
    call ensure(stats%used_bytes == 0, 'nothing cached')
    call mmb_array_evict(arr, err)
    call expect(err, MMB_OK, 'evict from every space')
    call mmb_array_destroy(arr, err)
    call expect(err, MMB_OK, 'destroy')
    ! the out-of-memory chain: a handler, then the fallback
    call mmb_request_space(MMB_DRAM, MMB_CPU, mmbMemSpaceConfig(mmbSizeConfig(MMB_SIZE_SET, .false., &
      1024_mmbSizeKind * 1024), MMB_MEMINTERFACE_CONFIG_DEFAULT), small, err)
    call mmb_interface_get_space(iface, dram, err)
    call mmb_space_add_oom_handler(small, c_funloc(give_up), c_null_ptr, err)
    call expect(err, MMB_OK, 'a handler')
    call mmb_request_interface(small, mmbMemInterfaceConfig(fallback=dram%ptr), strict, err)
    call mmb_allocate(4_mmbSizeKind * 1024 * 1024, strict, far, err)
    call expect(err, MMB_OK, 'served by the fallback')
    call ensure(oom_calls == 1, 'the handler was asked first')
    call mmb_allocation_space(far, where, err)
    call ensure(c_associated(where%ptr, dram%ptr), 'it landed in the fallback')
    call mmb_free(far, err)
    call mmb_interface_destroy(strict, err)
    call expect(err, MMB_OK, 'the interface and its fallback')
    call mmb_space_remove_oom_handler(small, c_funloc(give_up), c_null_ptr, err)
    call expect(err, MMB_OK, 'handler removed')
    call teardown(layout, iface)
  end subroutine

  subroutine test_tiles()
    type(mmbLayout) :: layout
    type(mmbMemInterface) :: iface
    type(mmbMemSpace) :: dram
    type(mmbArray) :: arr
    type(mmbArrayTile) :: t, u, dup, local
    type(mmbTileInfo) :: info
    type(mmbTileState) :: state
    type(mmbArray) :: arr2
    type(mmbArrayTile) :: t2, u2
    type(mmbQueue) :: queue
    type(mmbRequest) :: r
    real(dp), allocatable, target :: x(:,:), y(:,:)
    real(dp), pointer :: p(:,:), q(:,:)
    integer(mmbIndexKind), allocatable :: grid(:)
    integer :: err, i, j
    call begin('tiles')
    call setup(8, 2, layout, iface)
    call mmb_layout_set_element_type(layout, MMB_TYPE_DOUBLE, err)
    call mmb_interface_get_space(iface, dram, err)
    allocate(x(10, 7))
    x = reshape([(real(i, dp), i = 1, 70)], [10, 7])
    call mmb_array_create_wrapped(x, shape(x, mmbIndexKind), layout, iface, MMB_READ_WRITE, arr, err)
    call mmb_array_tile(arr, [4_mmbIndexKind, 3_mmbIndexKind], err)
    call expect(err, MMB_OK, 'tile 4x3')
    call mmb_array_tile_grid(arr, grid, err)
    call ensure(all(grid == [3, 3]), 'a 3x3 grid (edge tiles smaller)')
    call mmb_tile_at(arr, [1_mmbIndexKind, 2_mmbIndexKind], t, err)
    call expect(err, MMB_OK, 'tile (1, 2)')
    call mmb_tile_get_info(t, info, err)
    call ensure(info%rank == 2 .and. all(info%lower(1:2) == [4, 6]) .and. all(info%upper(1:2) == [8, 7]) &
                .and. all(info%dim(1:2) == [4, 1]), 'its bounds, 0-based')
    call mmb_tile_get_pointer(t, p, err)
    call expect(err, MMB_OK, 'the tile as a pointer')
    call ensure(all(lbound(p) == [5, 7]) .and. all(ubound(p) == [8, 7]), 'with x''s bounds')
    call ensure(all(p == x(5:8, 7:7)), 'p(i, j) is x(i, j)')
    p(6, 7) = -1
    call ensure(x(6, 7) == -1, 'writes reach the array')
    call mmb_tile_at(arr, [3_mmbIndexKind, 0_mmbIndexKind], u, err)
    call expect(err, MMB_INVALID_ARG, 'a tile past the grid')
    call mmb_tile_at(arr, [0_mmbIndexKind], u, err)
    call expect(err, MMB_INVALID_ARG, 'an index of another rank')
    ! duplicate into the space, change it, fold it back
    call mmb_tile_at(arr, [0_mmbIndexKind, 0_mmbIndexKind], t, err)
    call mmb_tile_duplicate(t, dram, MMB_READ_WRITE, dup, err)
    call expect(err, MMB_OK, 'duplicate')
    call mmb_tile_get_pointer(dup, q, err)
    call ensure(all(lbound(q) == [1, 1]) .and. all(q == x(1:4, 1:3)), 'the duplicate''s data, same bounds')
    q = 100
    call mmb_tile_get_state(dup, state, err)
    call expect(err, MMB_OK, 'tile state')
    call ensure(state%type == MMB_TYPE_DOUBLE .and. logical(state%duplicate) .and. &
                logical(state%writable .and. state%host_accessible .and. state%contiguous) .and. &
                .not. logical(state%stale), &
                'a writable, contiguous host duplicate of doubles')
    call mmb_tile_mark_written(dup, err)
    call expect(err, MMB_OK, 'mark written')
    call mmb_tile_get_state(dup, state, err)
    call ensure(state%version == 1, 'the write is recorded')
    call mmb_tile_get_state(t, state, err)
    call ensure(.not. logical(state%duplicate .or. state%contiguous), 'a grid tile: a view, strided')
    call mmb_tile_discard(dup, err)
    call expect(err, MMB_OK, 'discard')
    call ensure(all(x(1:4, 1:3) /= 100), 'nothing written back')
    call ensure(.not. c_associated(dup%ptr), 'a discarded duplicate is null')
    call mmb_tile_discard(t, err)
    call expect(err, MMB_INVALID_STATE, 'a grid tile is not a duplicate')
    call mmb_tile_duplicate(t, dram, MMB_READ_WRITE, dup, err)
    call mmb_tile_get_pointer(dup, q, err)
    q = 100
    call mmb_tile_get_space_local_handle(dup, local, err)
    call expect(err, MMB_OK, 'the space-local handle')
    call ensure(c_associated(local%ptr, dup%ptr), 'host memory: the tile itself')
    call mmb_tile_merge(dup, MMB_MERGE_OVERWRITE, err)
    call expect(err, MMB_OK, 'merge')
    call ensure(all(x(1:4, 1:3) == 100) .and. x(5, 1) == 5, 'only the tile changed')
    call mmb_tile_get_pointer(dup, q, err)
    call expect(err, MMB_INVALID_ARG, 'a merged duplicate is null')
    call mmb_tile_duplicate(t, dram, MMB_READ_WRITE, dup, err)
    merged_elements = 0
    call mmb_tile_merge_with(dup, c_funloc(add_doubles), c_null_ptr, err)
    call expect(err, MMB_OK, 'merge_with')
    call ensure(all(x(1:4, 1:3) == 200) .and. merged_elements == 12, 'x + x over the tile')
    ! copy tile to tile; migrate
    call mmb_tile_at(arr, [1_mmbIndexKind, 0_mmbIndexKind], u, err)
    call mmb_tile_copy(u, t, err)
    call expect(err, MMB_OK, 'tile copy')
    call ensure(all(x(5:8, 1:3) == 200), 'copied')
    ! a tile's transpose into another, and on a queue
    allocate(y(6, 6))
    y = reshape([(real(i, dp), i = 1, 36)], [6, 6])
    call mmb_array_create_wrapped(y, shape(y, mmbIndexKind), layout, iface, MMB_READ_WRITE, arr2, err)
    call mmb_array_tile(arr2, [3_mmbIndexKind, 3_mmbIndexKind], err)
    call mmb_tile_at(arr2, [0_mmbIndexKind, 1_mmbIndexKind], t2, err)
    call mmb_tile_at(arr2, [1_mmbIndexKind, 0_mmbIndexKind], u2, err)
    call mmb_tile_copy_transposed(u2, t2, err)
    call expect(err, MMB_OK, 'transposed copy')
    call ensure(all(y(4:6, 1:3) == transpose(y(1:3, 4:6))), 'a tile''s transpose')
    call mmb_tile_copy_transposed(t2, t2, err)
    call expect(err, MMB_INVALID_ARG, 'a tile onto itself')
    call mmb_tile_copy_transposed(t, t2, err)
    call expect(err, MMB_INVALID_ARG, 'extents that are not reversed')
    call mmb_tile_at(arr2, [1_mmbIndexKind, 1_mmbIndexKind], u2, err)
    call mmb_queue_create(queue, err)
    call mmb_tile_copy_transposed_async(u2, t2, queue, r, err)
    call expect(err, MMB_OK, 'transposed copy on a queue')
    call mmb_wait(r, err)
    call ensure(all(y(4:6, 4:6) == transpose(y(1:3, 4:6))), 'its transpose')
    call mmb_queue_destroy(queue, err)
    call mmb_array_destroy(arr2, err)
    call expect(err, MMB_OK, 'destroy')
    call mmb_tile_migrate(u, dram, MMB_READ_WRITE, err)
    call expect(err, MMB_OK, 'migrate')
    call mmb_tile_get_pointer(u, q, err)
    call ensure(all(q == 200), 'the migrated tile''s data')
    do j = 1, 7
      do i = 1, 10
        if (i <= 8 .and. j <= 3) cycle
        if (x(i, j) /= real(i + 10 * (j - 1), dp) .and. .not. (i == 6 .and. j == 7)) then
          call ensure(.false., 'tiles outside the ones changed are unchanged')
          return
        end if
      end do
    end do
    call mmb_array_destroy(arr, err)
    call expect(err, MMB_OK, 'destroy')
    call teardown(layout, iface)
  end subroutine

  subroutine test_tile_pointer_misuse()
    type(mmbLayout) :: layout
    type(mmbMemInterface) :: iface
    type(mmbArray) :: arr
    type(mmbArrayTile) :: t, none
    real(dp), allocatable, target :: x(:,:)
    real(dp), pointer :: p1(:), p2(:,:)
    real(sp), pointer :: s2(:,:)
    integer(c_int64_t), pointer :: k2(:,:)
    integer :: err
    call begin('tile_pointer_misuse')
    call setup(8, 2, layout, iface)
    allocate(x(4, 4))
    call mmb_array_create_wrapped(x, shape(x, mmbIndexKind), layout, iface, MMB_READ_WRITE, arr, err)
    call mmb_array_tile(arr, [2_mmbIndexKind, 2_mmbIndexKind], err)
    call mmb_tile_at(arr, [0_mmbIndexKind, 0_mmbIndexKind], t, err)
    call mmb_tile_get_pointer(t, p1, err)
    call expect(err, MMB_INVALID_ARG, 'a rank-1 pointer to a rank-2 tile')
    call mmb_tile_get_pointer(t, s2, err)
    call expect(err, MMB_INVALID_ARG, 'a real(4) pointer to 8-byte elements')
    call mmb_tile_get_pointer(t, k2, err)
    call expect(err, MMB_OK, 'an 8-byte integer pointer: the size is what is checked')
    call mmb_tile_get_pointer(none, p2, err)
    call expect(err, MMB_INVALID_ARG, 'a null tile')
    call mmb_array_destroy(arr, err)
    call mmb_tile_get_pointer(t, p2, err)
    call expect(err, MMB_INVALID_ARG, 'a tile of a destroyed array')
    call teardown(layout, iface)
  end subroutine

  subroutine test_iterators()
    type(mmbLayout) :: layout
    type(mmbMemInterface) :: iface
    type(mmbArray) :: arr
    type(mmbTileIterator) :: it, copy
    type(mmbArrayTile) :: t
    real(dp), allocatable, target :: x(:,:)
    real(dp), pointer :: p(:,:)
    integer(mmbIndexKind), allocatable :: idx(:)
    integer(mmbSizeKind) :: n
    integer(c_size_t), target :: diagonal(3) = [8_c_size_t, 4_c_size_t, 0_c_size_t]
    type(mmbBlockCyclic) :: bc, got
    type(mmbMemSpace) :: space
    integer :: err, seen
    call begin('iterators')
    call setup(8, 2, layout, iface)
    allocate(x(9, 6))
    x = 1
    call mmb_array_create_wrapped(x, shape(x, mmbIndexKind), layout, iface, MMB_READ_WRITE, arr, err)
    call mmb_array_tile(arr, [3_mmbIndexKind, 2_mmbIndexKind], err)
    call mmb_tile_iterator_create(arr, it, err, mmbTileIteratorOptions(schedule=MMB_SCHEDULE_COLMAJOR))
    call expect(err, MMB_OK, 'create')
    call mmb_tile_iterator_count(it, n, err)
    call ensure(n == 9, '9 tiles')
    call mmb_tile_iterator_first(it, err)
    call expect(err, MMB_OK, 'first')
    call mmb_tile_iterator_get_index(it, idx, err)
    call ensure(all(idx == [0, 0]), 'starts at (0, 0)')
    call mmb_tile_iterator_next(it, err)
    call mmb_tile_iterator_get_index(it, idx, err)
    call ensure(all(idx == [1, 0]), 'column-major schedule: the first grid dimension fastest')
    call mmb_tile_iterator_first(it, err)
    seen = 0
    call mmb_tile_iterator_tile(it, t, err)
    do while (err == MMB_OK)
      call mmb_tile_get_pointer(t, p, err)
      p = p + 1
      seen = seen + 1
      call mmb_tile_iterator_next(it, err)
      call mmb_tile_iterator_tile(it, t, err)
    end do
    call expect(err, MMB_INVALID_STATE, 'past the end')
    call ensure(.not. c_associated(t%ptr), 'no tile past the end')
    call ensure(seen == 9 .and. all(x == 2), 'every tile once')
    call mmb_tile_iterator_create(arr, copy, err, mmbTileIteratorOptions( &
      schedule=MMB_SCHEDULE_CUSTOM, order=c_loc(diagonal), order_length=3_c_size_t))
    call expect(err, MMB_OK, 'a custom schedule')
    call mmb_tile_iterator_count(copy, n, err)
    call mmb_tile_iterator_get_index(copy, idx, err)
    call ensure(n == 3 .and. all(idx == [2, 2]), 'the diagonal backwards, from (2, 2)')
    call mmb_tile_iterator_destroy(copy, err)
    diagonal(2) = 8
    call mmb_tile_iterator_create(arr, copy, err, mmbTileIteratorOptions( &
      schedule=MMB_SCHEDULE_CUSTOM, order=c_loc(diagonal), order_length=3_c_size_t))
    call expect(err, MMB_INVALID_ARG, 'a schedule that visits a tile twice')
    call mmb_tile_iterator_next(it, err)
    call expect(err, MMB_INVALID_STATE, 'next past the end')
    call mmb_array_tile_irregular(arr, [2_mmbIndexKind, 3_mmbIndexKind], &
      [0_mmbIndexKind, 4_mmbIndexKind, 9_mmbIndexKind, 0_mmbIndexKind, 1_mmbIndexKind, &
       5_mmbIndexKind, 6_mmbIndexKind], err)
    call expect(err, MMB_BUSY, 'an irregular tiling while an iterator lives')
    call mmb_tile_iterator_get_index(it, idx, err)
    call expect(err, MMB_INVALID_STATE, 'no index past the end')
    copy = it
    call mmb_tile_iterator_destroy(it, err)
    call expect(err, MMB_OK, 'destroy')
    call ensure(.not. c_associated(it%ptr), 'reset')
    call mmb_tile_iterator_destroy(copy, err)
    call expect(err, MMB_INVALID_ARG, 'a stale copy')
    call mmb_tile_iterator_tile(copy, t, err)
    call expect(err, MMB_INVALID_ARG, 'the tile of a stale iterator')
    call mmb_array_tile_irregular(arr, [2_mmbIndexKind, 3_mmbIndexKind], &
      [0_mmbIndexKind, 4_mmbIndexKind, 9_mmbIndexKind, 0_mmbIndexKind, 1_mmbIndexKind, &
       5_mmbIndexKind, 6_mmbIndexKind], err)
    call expect(err, MMB_OK, 'an irregular tiling')
    call mmb_array_tile_grid(arr, idx, err)
    call ensure(all(idx == [2, 3]), 'a 2 x 3 grid')
    call mmb_tile_at(arr, [1_mmbIndexKind, 1_mmbIndexKind], t, err)
    call mmb_tile_get_pointer(t, p, err)
    call ensure(all(shape(p) == [5, 4]), 'tile (1, 1): rows 4 to 8, columns 1 to 4')
    call mmb_array_tile_irregular(arr, [2_mmbIndexKind, 3_mmbIndexKind], &
      [0_mmbIndexKind, 4_mmbIndexKind, 9_mmbIndexKind], err)
    call expect(err, MMB_INVALID_ARG, 'boundaries short of the tile counts')
    ! the 9 x 6 array as owner (1, 0)'s part of 18 x 6 in blocks of 3 x 2 over 2 x 3 owners
    bc%rank = 2
    bc%global(1:2) = [18, 6]
    bc%block(1:2) = [3, 2]
    bc%grid(1:2) = [2, 3]
    bc%owner(1:2) = [1, 0]
    call mmb_array_tile_block_cyclic(arr, bc, err)
    call expect(err, MMB_INVALID_ARG, 'owner (1, 0) holds 9 x 2, not 9 x 6')
    bc%grid(2) = 1
    call mmb_array_tile_block_cyclic(arr, bc, err)
    call expect(err, MMB_OK, 'owner (1, 0) of 2 x 1 holds 9 x 6')
    call mmb_array_get_block_cyclic(arr, got, err)
    call ensure(err == MMB_OK .and. got%global(1) == 18 .and. got%owner(1) == 1, 'its distribution')
    call mmb_array_tile_grid(arr, idx, err)
    call ensure(all(idx == [3, 3]), 'tiled by its blocks: 3 x 3')
    bc%global(1) = 9
    bc%grid(1:2) = [1, 1]
    call mmb_interface_get_space(iface, space, err)
    call mmb_array_distribute(arr, bc, [space, space], err)
    call expect(err, MMB_INVALID_ARG, 'two spaces for one owner')
    call mmb_array_distribute(arr, bc, [space], err)
    call expect(err, MMB_OK, 'dealt over one space, its own')
    call mmb_array_destroy(arr, err)
    call expect(err, MMB_OK, 'the array')
    call teardown(layout, iface)
  end subroutine

  ! Codes that never advance or destroy their iterators: destroying the
  ! array takes them with it, where C would say MMB_BUSY and keep the array.
  subroutine test_forgotten_iterators()
    type(mmbLayout) :: layout
    type(mmbMemInterface) :: iface
    type(mmbArray) :: arr, other
    type(mmbTileIterator) :: a, b, c, kept
    real(dp), allocatable, target :: x(:,:), y(:,:)
    integer :: err, round
    call begin('forgotten_iterators')
    call setup(8, 2, layout, iface)
    allocate(x(8, 8), y(8, 8))
    do round = 1, 50   ! a field re-made every step: nothing accumulates
      call mmb_array_create_wrapped(x, shape(x, mmbIndexKind), layout, iface, MMB_READ_WRITE, arr, err)
      call mmb_array_tile(arr, [4_mmbIndexKind, 4_mmbIndexKind], err)
      call mmb_tile_iterator_create(arr, a, err)
      call mmb_tile_iterator_create(arr, b, err)
      call mmb_tile_iterator_next(b, err)
      call mmb_tile_iterator_create(arr, c, err)
      call mmb_tile_iterator_destroy(c, err)   ! one destroyed by the caller
      call mmb_array_destroy(arr, err)
      call expect(err, MMB_OK, 'the array and the iterators left on it')
      if (err /= MMB_OK) exit
    end do
    call mmb_tile_iterator_next(a, err)
    call expect(err, MMB_INVALID_ARG, 'the caller''s handle of a forgotten iterator is stale')
    ! another array's iterator is not touched
    call mmb_array_create_wrapped(x, shape(x, mmbIndexKind), layout, iface, MMB_READ_WRITE, arr, err)
    call mmb_array_create_wrapped(y, shape(y, mmbIndexKind), layout, iface, MMB_READ_WRITE, other, err)
    call mmb_array_tile(other, [4_mmbIndexKind, 4_mmbIndexKind], err)
    call mmb_tile_iterator_create(other, kept, err)
    call mmb_array_destroy(arr, err)
    call mmb_tile_iterator_next(kept, err)
    call expect(err, MMB_OK, 'an iterator over another array lives on')
    call mmb_tile_iterator_destroy(kept, err)
    call mmb_array_destroy(other, err)
    call expect(err, MMB_OK, 'the other array')
    call teardown(layout, iface)
  end subroutine

  subroutine test_prefetching_iterator()
    type(mmbLayout) :: layout
    type(mmbMemInterface) :: iface
    type(mmbMemSpace) :: fast
    type(mmbArray) :: arr
    type(mmbQueue) :: queue
    type(mmbTileIteratorOptions) :: opts
    type(mmbTileIterator) :: it
    type(mmbArrayTile) :: t
    type(mmbTileInfo) :: info
    real(dp), allocatable, target :: x(:,:,:)
    real(dp), pointer :: p(:,:,:)
    integer(mmbSizeKind) :: footprint
    integer :: err, seen
    call begin('prefetching_iterator')
    call setup(8, 3, layout, iface)
    allocate(x(16, 16, 40))
    x = 1
    call mmb_array_create_wrapped(x, shape(x, mmbIndexKind), layout, iface, MMB_READ_WRITE, arr, err)
    call mmb_array_tile(arr, [16_mmbIndexKind, 16_mmbIndexKind, 4_mmbIndexKind], err)
    call mmb_queue_create(queue, err)
    opts%queue = queue
    opts%depth = 2
    opts%access = MMB_READ_WRITE
    call mmb_tile_iterator_footprint(arr, footprint, err, opts)
    call expect(err, MMB_OK, 'footprint')
    call mmb_request_space(MMB_DRAM, MMB_CPU, mmbMemSpaceConfig(mmbSizeConfig(MMB_SIZE_SET, .false., &
                           footprint), MMB_MEMINTERFACE_CONFIG_DEFAULT), fast, err)
    opts%space = fast
    call mmb_tile_iterator_create(arr, it, err, opts)
    call expect(err, MMB_OK, 'a prefetching iterator')
    seen = 0
    call mmb_tile_iterator_tile(it, t, err)
    do while (err == MMB_OK)
      call mmb_tile_get_info(t, info, err)
      if (.not. c_associated(info%space%ptr, fast%ptr)) call ensure(.false., 'the tile is in the fast space')
      call mmb_tile_get_pointer(t, p, err)
      p = p * 3
      seen = seen + 1
      call mmb_tile_iterator_next(it, err)
      call expect(err, MMB_OK, 'next')
      call mmb_tile_iterator_tile(it, t, err)
    end do
    call mmb_tile_iterator_destroy(it, err)
    call expect(err, MMB_OK, 'destroy: the last merge')
    call ensure(seen == 10 .and. all(x == 3), 'every element through the fast space, merged back')
    call mmb_array_destroy(arr, err)
    call mmb_queue_destroy(queue, err)
    call expect(err, MMB_OK, 'the queue')
    call mmb_space_release(fast, err)
    call expect(err, MMB_OK, 'the fast space')
    call teardown(layout, iface)
  end subroutine

  subroutine test_queues()
    type(mmbQueue) :: queue
    type(mmbQueueOptions) :: qopts
    type(mmbRequest) :: r, rs(4), none
    type(c_ptr) :: native
    integer(c_int), target :: counter
    integer :: err, backend, errs(4)
    logical :: done
    call begin('queues')
    call init_quiet()
    qopts%backend = MMB_QUEUE_THREAD
    call mmb_queue_create(queue, err, qopts)
    call expect(err, MMB_OK, 'a thread queue')
    call mmb_queue_get_backend(queue, backend, err)
    call ensure(backend == MMB_QUEUE_THREAD, 'its backend')
    call mmb_queue_get_native(queue, native, err)
    call expect(err, MMB_UNSUPPORTED, 'a thread queue has no native queue')
    counter = 0
    call mmb_queue_submit(queue, c_funloc(on_queue), c_loc(counter), r, err)
    call expect(err, MMB_OK, 'submit a Fortran subroutine')
    call mmb_wait(r, err)
    call expect(err, MMB_OK, 'wait')
    call ensure(counter == 1, 'it ran')
    call mmb_queue_submit(queue, c_funloc(on_queue), c_loc(counter), err=err)
    call expect(err, MMB_OK, 'fire and forget')
    call mmb_queue_marker(queue, r, err)
    call expect(err, MMB_OK, 'marker')
    call mmb_wait(r, err)
    call ensure(counter == 2, 'the marker completes after the work before it')
    call mmb_queue_marker(queue, r, err)
    call mmb_queue_wait_request(queue, r, err)    ! the queue waits for it (no host wait)
    call expect(err, MMB_OK, 'wait_request')
    call mmb_wait(r, err)
    call mmb_queue_submit(queue, c_funloc(on_queue), c_loc(counter), r, err)
    call mmb_queue_synchronize(queue, err)
    call mmb_request_is_complete(r, done, err)
    call expect(err, MMB_OK, 'is_complete')
    call ensure(done, 'complete after synchronize')
    call mmb_wait(r, err)
    do backend = 1, 4
      call mmb_queue_submit(queue, c_funloc(on_queue), c_loc(counter), rs(backend), err)
    end do
    call mmb_wait_all(rs, err, errs)
    call expect(err, MMB_OK, 'wait_all')
    call ensure(all(errs == MMB_OK) .and. counter == 7, 'each request''s error')
    call mmb_wait(none, err)
    call expect(err, MMB_OK, 'waiting on no request')
    call mmb_queue_submit(queue, c_funloc(on_queue), c_loc(counter), r, err)
    none = r                                  ! a copy kept past the wait
    call mmb_wait(r, err)
    call ensure(.not. c_associated(r%ptr), 'a waited request is empty')
    call mmb_wait(none, err)
    call expect(err, MMB_INVALID_ARG, 'a copy of a request already waited on')
    call mmb_queue_submit(queue, c_null_funptr, c_null_ptr, r, err)
    call expect(err, MMB_INVALID_ARG, 'no function')
    counter = 0
    call mmb_queue_submit_task(queue, c_funloc(task_on_queue), c_loc(counter), r, err)
    call expect(err, MMB_OK, 'submit a task')
    call mmb_wait(r, err)
    call expect(err, MMB_OK, 'the task''s result')
    call mmb_queue_submit_task(queue, c_funloc(task_on_queue), c_loc(counter), r, err)
    call mmb_wait(r, err)
    call expect(err, MMB_IO, 'a failed task''s error is its request''s')
    call ensure(counter == 2, 'both ran')
    call mmb_queue_submit_task(queue, c_null_funptr, c_null_ptr, r, err)
    call expect(err, MMB_INVALID_ARG, 'no task')
    call mmb_queue_destroy(queue, err, qopts)
    call expect(err, MMB_OK, 'destroy')
    call mmb_queue_synchronize(queue, err)
    call expect(err, MMB_INVALID_ARG, 'a destroyed (null) queue')
    call finalize_checked()
  end subroutine

  subroutine test_async_twins()
    type(mmbLayout) :: layout
    type(mmbMemInterface) :: iface
    type(mmbMemSpace) :: dram
    type(mmbQueue) :: queue
    type(mmbRequest) :: r(8)
    type(mmbArray) :: a, b, dup
    type(mmbArrayTile) :: t, tdup, u
    type(mmbAllocation) :: s, d
    type(mmbRegion) :: region
    type(c_ptr) :: bare, held
    real(dp), allocatable, target :: x(:,:), y(:,:)
    real(dp), pointer :: v(:), w(:)
    integer(mmbSizeKind), parameter :: e = 8
    integer :: err, i, errs(8)
    call begin('async_twins')
    call setup(8, 2, layout, iface)
    call mmb_layout_set_element_type(layout, MMB_TYPE_DOUBLE, err)
    call mmb_interface_get_space(iface, dram, err)
    call mmb_queue_create(queue, err)
    allocate(x(6, 6), y(6, 6))
    x = 2
    y = 0
    call mmb_array_create_wrapped(x, shape(x, mmbIndexKind), layout, iface, MMB_READ_WRITE, a, err)
    call mmb_array_create_wrapped(y, shape(y, mmbIndexKind), layout, iface, MMB_READ_WRITE, b, err)
    call mmb_array_copy_async(b, a, queue, r(1), err)
    call expect(err, MMB_OK, 'array copy_async')
    call mmb_wait(r(1), err)
    call ensure(all(y == 2), 'copied')
    call mmb_array_duplicate_async(a, iface, MMB_READ_WRITE, queue, r(1), dup, err)
    call expect(err, MMB_OK, 'array duplicate_async')
    call mmb_array_merge_async(dup, MMB_MERGE_SUM, queue, r(2), err)
    call expect(err, MMB_OK, 'array merge_async')
    call mmb_wait_all(r(1:2), err)
    call ensure(all(x == 4), 'x + x')
    call mmb_array_duplicate_async(a, iface, MMB_READ_WRITE, queue, r(1), dup, err)
    call mmb_array_merge_with_async(dup, c_funloc(add_doubles), c_null_ptr, queue, r(2), err)
    call expect(err, MMB_OK, 'array merge_with_async')
    call mmb_wait_all(r(1:2), err)
    call ensure(all(x == 8), 'x + x again')
    call mmb_array_migrate_async(b, iface, MMB_READ_WRITE, queue, r(1), err)
    call expect(err, MMB_OK, 'array migrate_async')
    call mmb_wait(r(1), err)
    ! tiles
    call mmb_array_tile(a, [3_mmbIndexKind, 3_mmbIndexKind], err)
    call mmb_tile_at(a, [0_mmbIndexKind, 0_mmbIndexKind], t, err)
    call mmb_tile_at(a, [1_mmbIndexKind, 1_mmbIndexKind], u, err)
    call mmb_tile_duplicate_async(t, dram, MMB_READ_WRITE, queue, r(1), tdup, err)
    call expect(err, MMB_OK, 'tile duplicate_async')
    call mmb_tile_merge_async(tdup, MMB_MERGE_SUM, queue, r(2), err)
    call expect(err, MMB_OK, 'tile merge_async')
    call mmb_tile_duplicate_async(t, dram, MMB_READ_WRITE, queue, r(3), tdup, err)
    call mmb_tile_merge_with_async(tdup, c_funloc(add_doubles), c_null_ptr, queue, r(4), err)
    call expect(err, MMB_OK, 'tile merge_with_async')
    call mmb_tile_copy_async(u, t, queue, r(5), err)
    call expect(err, MMB_OK, 'tile copy_async')
    call mmb_tile_migrate_async(u, dram, MMB_READ_WRITE, queue, r(6), err)
    call expect(err, MMB_OK, 'tile migrate_async')
    call mmb_wait_all(r(1:6), err, errs)
    call expect(err, MMB_OK, 'wait_all')
    call ensure(all(x(1:3, 1:3) == 32), 'the tile doubled twice')
    call mmb_array_destroy(a, err); call mmb_array_destroy(b, err)
    call expect(err, MMB_OK, 'arrays')
    ! allocations
    call mmb_allocate(64 * e, iface, s, err)
    call mmb_allocate(64 * e, iface, d, err)
    call c_f_pointer(mmb_allocation_ptr(s), v, [64])
    call c_f_pointer(mmb_allocation_ptr(d), w, [64])
    v = [(real(i, dp), i = 1, 64)]
    w = 0
    call mmb_copy_async(d, s, queue, r(1), err)
    call mmb_wait(r(1), err)
    call ensure(all(w == v), 'copy_async')
    w = 0
    call mmb_copy_1d_async(d, 8 * e, s, 0_mmbSizeKind, 8 * e, queue, r(1), err)
    call mmb_copy_2d_async(d, 0_mmbSizeKind, 4_mmbSizeKind, 8 * e, s, 0_mmbSizeKind, 4_mmbSizeKind, 8 * e, &
                           4 * e, 2_mmbSizeKind, queue, r(2), err)
    call mmb_copy_nd_async(d, [0_mmbSizeKind, 6_mmbSizeKind], [8 * e, 8_mmbSizeKind], s, &
                           [0_mmbSizeKind, 6_mmbSizeKind], [8 * e, 8_mmbSizeKind], [8 * e, 2_mmbSizeKind], &
                           queue, r(3), err)
    call mmb_wait_all(r(1:3), err)
    call expect(err, MMB_OK, 'copy 1d/2d/nd async')
    call ensure(all(w(9:16) == v(1:8)) .and. all(w(33:36) == v(33:36)) .and. all(w(41:44) == v(41:44)) &
                .and. all(w(49:64) == v(49:64)) .and. w(37) == 0, 'each copy where it belongs')
    call mmb_allocation_record_queue(s, queue, err)
    call expect(err, MMB_OK, 'record_queue')
    call mmb_free_async(s, queue, err)
    call expect(err, MMB_OK, 'free_async')
    call ensure(.not. c_associated(s%ptr), 'free_async resets the handle')
    call mmb_ptr_allocate(64 * e, iface, bare, err)
    call expect(err, MMB_OK, 'a bare block')
    held = bare
    call mmb_ptr_deallocate_async(bare, iface, queue, err)
    call expect(err, MMB_OK, 'ptr_free_async')
    call ensure(.not. c_associated(bare), 'ptr_free_async resets the pointer')
    call mmb_ptr_deallocate_async(held, iface, queue, err)
    call expect(err, MMB_INVALID_ARG, 'ptr_free_async twice')
    call mmb_ptr_free_async(iface, held, queue, err)
    call expect(err, MMB_INVALID_ARG, 'deprecated mmb_ptr_free_async, in its own order')
    call mmb_free(d, err)
    call mmb_region_create(iface, region, err)
    call mmb_region_reset_async(region, queue, err)
    call expect(err, MMB_OK, 'region reset_async')
    call mmb_queue_synchronize(queue, err)
    call mmb_region_destroy(region, err)
    call mmb_queue_destroy(queue, err)
    call teardown(layout, iface)
  end subroutine

  subroutine test_providers_and_host_memory()
    type(mmbProviderOps), save, target :: ops
    character(kind=c_char, len=9), save, target :: name = 'fortran' // c_null_char
    type(mmbProviderOps) :: got
    type(mmbMemSpace) :: dram
    type(mmbMemInterface) :: iface
    type(mmbAllocation) :: a
    type(c_ptr) :: p
    integer(mmbSizeKind) :: page
    integer :: err, ptype, provider
    character(kind=c_char), pointer :: chars(:)
    call begin('providers_and_host_memory')
    call init_quiet()
    call mmb_provider_get_ops(MMB_PROVIDER_SYSTEM, got, err)
    call expect(err, MMB_OK, 'the system provider''s table')
    call c_f_pointer(got%name, chars, [6])
    call ensure(all(chars == ['s', 'y', 's', 't', 'e', 'm']), 'named system')
    ops%name = c_loc(name)
    ops%caps = MMB_PROVIDER_HOST_ACCESSIBLE
    ops%alloc = c_funloc(fprov_alloc)
    ops%free = c_funloc(fprov_free)
    call mmb_provider_register(ops, ptype, err)
    call expect(err, MMB_OK, 'a provider written in Fortran')
    call ensure(ptype >= MMB_PROVIDER_USER, 'a user provider type')
    call ensure(mmb_provider_name(ptype) == 'fortran', 'its name')
    call mmb_request_space(MMB_DRAM, MMB_CPU, new_space=dram, err=err)
    call mmb_request_interface(dram, mmbMemInterfaceConfig(provider=ptype), iface, err)
    call expect(err, MMB_OK, 'an interface on it')
    call mmb_interface_get_provider(iface, provider, err)
    call ensure(provider == ptype, 'its provider')
    call mmb_allocate(10000_mmbSizeKind, iface, a, err)
    call expect(err, MMB_OK, 'allocated through Fortran')
    call ensure(provider_live >= 10000, 'the Fortran alloc ran')
    call mmb_free(a, err)
    call ensure(provider_live == 0, 'the Fortran free ran')
    call mmb_interface_destroy(iface, err)
    page = mmb_host_page_size()
    call ensure(page >= 4096, 'a page')
    call mmb_host_map(2 * page, page, -1, p, err)
    call expect(err, MMB_OK, 'host_map')
    call mmb_host_bind(p, 2 * page, 0, err)
    call ensure(err == MMB_OK .or. err == MMB_UNSUPPORTED, 'host_bind')
    call mmb_host_unmap(p, 2 * page, err)
    call expect(err, MMB_OK, 'host_unmap')
    call mmb_host_map(0_mmbSizeKind, page, -1, p, err)
    call expect(err, MMB_INVALID_ARG, 'a zero-byte map')
    call finalize_checked()
  end subroutine
end program test_mamba
