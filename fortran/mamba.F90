! Module mamba: mmb's C API in Fortran, source-compatible with Mamba's module.
!
! Every C procedure has a twin of the same name whose mmbError becomes an
! optional `err` argument, last (then any optional C options). Handles are
! derived types holding a C pointer that starts null: a handle never created
! is null, and destroying one does nothing; destroy resets it to null only
! when it succeeds. Wrapped data of any type and rank is checked against its
! layout (rank, element size, contiguity, extent) through its descriptor, and
! mmb_tile_get_pointer hands a tile's elements to Fortran as a pointer array
! with the tile's bounds. Procedure arguments (type(c_funptr)) are taken by
! value: gfortran makes c_funloc(f), written in a call, a constant in .rodata
! when the dummy is a reference, and a PIE program then links with text
! relocations. See docs/fortran.md.
module mamba
  use, intrinsic :: iso_c_binding
  use mamba_c
  implicit none
  private
  ! the C API's enum values and constants (written from the C headers)
#include "mamba_public.inc"
  ! kinds, Mamba's size actions, the handle, config and information types
  public :: mmbErrorKind, mmbSizeKind, mmbIndexKind, MMB_SIZE_NONE, MMB_SIZE_SET, MMB_SIZE_ANY, &
    MMB_MEMINTERFACE_CONFIG_DEFAULT
  public :: mmbMemSpace, mmbMemInterface, mmbAllocation, mmbRegion, mmbLayout, mmbArray, &
    mmbArrayTile, mmbTileIterator, mmbQueue, mmbRequest, mmbSizeConfig, mmbMemInterfaceConfig, &
    mmbMemSpaceConfig, mmbOptions, mmbLayoutPadding, mmbLayoutInfo, mmbAllocateOptions, &
    mmbArrayOptions, mmbRegionOptions, mmbQueueOptions, mmbTileIteratorOptions, mmbStats, &
    mmbSpaceInfo, mmbTileInfo, mmbTileState, mmbProviderTarget, mmbProviderOps, &
    mmbCacheConfig, mmbCacheStats, mmbBlockCyclic, mmbRecordInfo, mmbField, mmbLayerProperties
  ! every procedure of the C API (and Mamba's), and the tile pointer
  public :: mmb_allocate, mmb_allocate_opts, mmb_allocation_get_interface, mmb_allocation_ptr, &
    mmb_allocation_record_queue, mmb_allocation_size, mmb_array_get_bytes, mmb_array_copy, &
    mmb_array_copy_async, mmb_array_create, mmb_array_create_opts, mmb_array_create_wrapped, &
    mmb_array_destroy, mmb_array_get_dims, mmb_array_duplicate, mmb_array_duplicate_async, &
    mmb_array_get_interface, mmb_array_merge, mmb_array_merge_async, mmb_array_merge_with, &
    mmb_array_merge_with_async, mmb_array_migrate, mmb_array_migrate_async, mmb_array_ptr, &
    mmb_array_get_strides, mmb_array_tile, mmb_array_tile_grid, mmb_array_tile_irregular, &
    mmb_array_tile_block_cyclic, mmb_array_distribute, mmb_array_get_block_cyclic, &
    mmb_layout_create_record, mmb_layout_get_record, mmb_layout_get_field, &
    mmb_layout_find_field, mmb_array_get_field, mmb_tile_get_field, &
    mmb_array_duplicate_layout, mmb_array_duplicate_layout_async, mmb_array_migrate_layout, &
    mmb_array_migrate_layout_async, mmb_layer_register, mmb_layer_find, &
    mmb_context_name, mmb_copy, &
    mmb_copy_1d, mmb_copy_1d_async, mmb_copy_2d, mmb_copy_2d_async, mmb_copy_async, &
    mmb_copy_nd, mmb_copy_nd_async, mmb_cuda_status, mmb_element_type_size, mmb_error_name, &
    mmb_error_string, mmb_finalize, mmb_free, mmb_free_async, mmb_host_bind, mmb_host_map, &
    mmb_host_page_size, mmb_host_unmap, mmb_init, mmb_interface_destroy, &
    mmb_interface_get_stats, mmb_interface_get_provider, mmb_interface_reset_high, &
    mmb_interface_get_space, mmb_interface_trim, mmb_is_initialized, mmb_layer_name, &
    mmb_layout_create_regular_1d, mmb_layout_create_regular_nd, mmb_layout_destroy, &
    mmb_layout_get_info, mmb_layout_padding_create_zero, mmb_layout_set_element_type, &
    mmb_log, mmb_logging_get_level, mmb_logging_set_callback, mmb_logging_set_level, &
    mmb_provider_get_ops, mmb_provider_name, mmb_provider_register, mmb_queue_create, &
    mmb_queue_destroy, mmb_queue_get_backend, mmb_queue_get_native, mmb_queue_marker, &
    mmb_queue_submit, mmb_queue_submit_task, mmb_queue_synchronize, mmb_queue_wait_request, &
    mmb_ptr_allocate, mmb_ptr_allocate_opts, mmb_ptr_deallocate, mmb_ptr_deallocate_async, &
    mmb_region_alloc, &
    mmb_region_create, mmb_region_destroy, mmb_region_push, mmb_region_reset, &
    mmb_region_reset_async, mmb_register_memory, mmb_request_interface, &
    mmb_request_is_complete, mmb_request_space, mmb_space_at, mmb_space_capacity, &
    mmb_space_count, mmb_space_distance, mmb_space_get_info, mmb_space_get_stats, &
    mmb_space_info_name, mmb_space_layer, mmb_space_release, mmb_tile_at, mmb_tile_copy, &
    mmb_tile_copy_async, mmb_tile_duplicate, mmb_tile_duplicate_async, mmb_tile_get_info, &
    mmb_tile_get_state, mmb_tile_mark_written, mmb_tile_discard, mmb_tile_copy_transposed, &
    mmb_tile_copy_transposed_async, &
    mmb_tile_get_space_local_handle, mmb_tile_iterator_count, mmb_tile_iterator_create, &
    mmb_tile_iterator_destroy, mmb_tile_iterator_first, mmb_tile_iterator_footprint, &
    mmb_tile_iterator_get_index, mmb_tile_iterator_next, mmb_tile_iterator_tile, mmb_tile_merge, &
    mmb_tile_merge_async, mmb_tile_merge_with, mmb_tile_merge_with_async, mmb_tile_migrate, &
    mmb_tile_migrate_async, mmb_trace_dump, mmb_trace_set_capacity, mmb_trace_start, &
    mmb_trace_stop, mmb_version, mmb_wait, mmb_wait_all, mmb_tile_get_pointer, &
    mmb_tile_acquire, mmb_tile_acquire_async, mmb_tile_release, mmb_tile_advise, mmb_tile_flush, &
    mmb_array_flush, mmb_array_evict, &
    mmb_space_set_cache, mmb_space_get_cache, mmb_space_get_cache_stats, &
    mmb_space_add_oom_handler, mmb_space_remove_oom_handler, mmb_allocation_space

  ! ---- a tile's elements as a Fortran pointer -------------------------------------
  interface mmb_tile_get_pointer
    module procedure tile_pointer_r4, tile_pointer_r8, tile_pointer_c4, tile_pointer_c8, &
                     tile_pointer_i4, tile_pointer_i8
  end interface


  ! ---- deprecated names, kept for one release --------------------------------
  ! The former names of procedures renamed to one convention (mmb_X_get_Y for
  ! what is read into an argument; the bare-pointer calls in mmb_allocate's
  ! order): the same procedures under their old names.
  interface mmb_allocation_interface
    module procedure mmb_allocation_get_interface
  end interface
  interface mmb_interface_space
    module procedure mmb_interface_get_space
  end interface
  interface mmb_interface_provider
    module procedure mmb_interface_get_provider
  end interface
  interface mmb_array_bytes
    module procedure mmb_array_get_bytes
  end interface
  interface mmb_array_dims
    module procedure mmb_array_get_dims
  end interface
  interface mmb_array_strides
    module procedure mmb_array_get_strides
  end interface
  interface mmb_array_interface
    module procedure mmb_array_get_interface
  end interface
  interface mmb_tile_iterator_index
    module procedure mmb_tile_iterator_get_index
  end interface
  public :: mmb_allocation_interface, mmb_interface_space, mmb_interface_provider, &
    mmb_array_bytes, mmb_array_dims, mmb_array_strides, &
    mmb_array_interface, mmb_tile_iterator_index, &
    mmb_ptr_alloc, mmb_ptr_alloc_opts, mmb_ptr_free, mmb_ptr_free_async

contains

  ! ---- helpers -------------------------------------------------------------------
  subroutine set_err(err, rc)
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int), intent(in) :: rc
    if (present(err)) err = rc
  end subroutine

  ! Stores a handle made by a C call only when the call succeeded.
  subroutine handle_out(rc, made, ptr)
    integer(c_int), intent(in) :: rc
    type(c_ptr), intent(in) :: made
    type(c_ptr), intent(inout) :: ptr
    if (rc == MMB_OK) ptr = made
  end subroutine

  function f_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer(c_size_t) :: n
    integer :: i
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    n = c_strlen(p)
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, int(n)
      s(i:i) = chars(i)
    end do
  end function

  ! A NUL-terminated copy of a Fortran string, trailing blanks dropped.
  function c_name(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=:), allocatable :: c
    c = trim(s) // c_null_char
  end function

  ! ---- lifecycle, errors, logging ----------------------------------------------------
  subroutine mmb_init(err, options)
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbOptions), intent(in), optional :: options
    call set_err(err, c_mmb_init(options))
  end subroutine

  ! After the last finalize every handle is gone: the module forgets the
  ! iterators it tracked.
  subroutine mmb_finalize(err)
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = c_mmb_finalize()
    if (rc == MMB_OK) call mmbf_forget_iterators()
    call set_err(err, rc)
  end subroutine

  logical function mmb_is_initialized()
    mmb_is_initialized = c_mmb_is_initialized()
  end function

  function mmb_version(major, minor, patch) result(s)
    integer, intent(out), optional :: major, minor, patch
    character(len=:), allocatable :: s
    integer(c_int) :: v(3)
    s = f_string(c_mmb_version(v(1), v(2), v(3)))
    if (present(major)) major = v(1)
    if (present(minor)) minor = v(2)
    if (present(patch)) patch = v(3)
  end function

  function mmb_error_string(code) result(s)
    integer, intent(in) :: code
    character(len=:), allocatable :: s
    s = f_string(c_mmb_error_string(int(code, c_int)))
  end function

  function mmb_error_name(code) result(s)
    integer, intent(in) :: code
    character(len=:), allocatable :: s
    s = f_string(c_mmb_error_name(int(code, c_int)))
  end function

  subroutine mmb_logging_set_level(level, err)
    integer, intent(in) :: level
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_logging_set_level(int(level, c_int)))
  end subroutine

  subroutine mmb_logging_get_level(level, err)
    integer, intent(out) :: level
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: l
    integer(c_int) :: rc
    rc = c_mmb_logging_get_level(l)
    if (rc == MMB_OK) level = l
    call set_err(err, rc)
  end subroutine

  ! A message through mmb's logger, as mmb's own are written (its level, the
  ! callback, else stderr): for layers built on mmb.
  subroutine mmb_log(level, message)
    integer, intent(in) :: level
    character(len=*), intent(in) :: message
    call mmbf_log(int(level, c_int), c_name(message))
  end subroutine

  ! fn: a bind(C) subroutine (integer(c_int), value :: level; type(c_ptr), value
  ! :: message, user_data); c_null_funptr goes back to stderr.
  subroutine mmb_logging_set_callback(fn, user_data, err)
    type(c_funptr), value :: fn
    type(c_ptr), intent(in) :: user_data
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_logging_set_callback(fn, user_data))
  end subroutine

  ! ---- spaces and interfaces ----------------------------------------------------------
  ! Mamba's config in the C API's terms.
  subroutine to_c_space_config(config, c, name, rc)
    type(mmbMemSpaceConfig), intent(in) :: config
    type(c_space_config), intent(out) :: c
    character(kind=c_char, len=:), allocatable, target, intent(out) :: name
    integer(c_int), intent(out) :: rc
    rc = MMB_OK
    select case (config%size_config%action)
    case (MMB_SIZE_NONE, MMB_SIZE_ANY)
      c%size_limit = 0
    case (MMB_SIZE_SET)
      if (config%size_config%size <= 0) rc = MMB_INVALID_ARG
      c%size_limit = config%size_config%size
    case default
      rc = MMB_INVALID_ARG
    end select
    c%numa_node = config%numa_node
    c%device = config%device
    name = c_name(config%name)
    if (len_trim(config%name) > 0) c%name = c_loc(name)
  end subroutine

  subroutine mmb_register_memory(layer, context, config, err)
    integer, intent(in) :: layer, context
    type(mmbMemSpaceConfig), intent(in) :: config
    integer(mmbErrorKind), intent(out), optional :: err
    type(c_space_config) :: c
    character(kind=c_char, len=:), allocatable, target :: name
    integer(c_int) :: rc
    call to_c_space_config(config, c, name, rc)
    if (rc == MMB_OK) rc = c_mmb_register_memory(int(layer, c_int), int(context, c_int), c, &
                                                 config%interface_config)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_request_space(layer, context, config, new_space, err)
    integer, intent(in) :: layer, context
    type(mmbMemSpaceConfig), intent(in), optional :: config
    type(mmbMemSpace), intent(inout) :: new_space
    integer(mmbErrorKind), intent(out), optional :: err
    type(c_space_config) :: c
    character(kind=c_char, len=:), allocatable, target :: name
    integer(c_int) :: rc
    type(c_ptr) :: made
    if (present(config)) then
      call to_c_space_config(config, c, name, rc)
      if (rc == MMB_OK) rc = c_mmb_request_space(int(layer, c_int), int(context, c_int), c, made)
    else
      rc = c_mmb_request_space(int(layer, c_int), int(context, c_int), out=made)
    end if
    call handle_out(rc, made, new_space%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_space_release(space, err)
    type(mmbMemSpace), intent(inout) :: space
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = MMB_OK
    if (c_associated(space%ptr)) rc = c_mmb_space_release(space%ptr)
    if (rc == MMB_OK) space%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_space_count(count, err)
    integer(mmbSizeKind), intent(out) :: count
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_space_count(count))
  end subroutine

  ! i: 0-based, as mmb-info lists the spaces.
  subroutine mmb_space_at(i, space, err)
    integer(mmbSizeKind), intent(in) :: i
    type(mmbMemSpace), intent(inout) :: space
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_space_at(i, made)
    call handle_out(rc, made, space%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_space_layer(space, layer, err)
    type(mmbMemSpace), intent(in) :: space
    integer, intent(out) :: layer
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: l, rc
    rc = c_mmb_space_layer(space%ptr, l)
    if (rc == MMB_OK) layer = l
    call set_err(err, rc)
  end subroutine

  subroutine mmb_space_capacity(space, bytes, err)
    type(mmbMemSpace), intent(in) :: space
    integer(mmbSizeKind), intent(out) :: bytes
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_space_capacity(space%ptr, bytes))
  end subroutine

  subroutine mmb_space_get_info(space, info, err)
    type(mmbMemSpace), intent(in) :: space
    type(mmbSpaceInfo), intent(out) :: info
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_space_get_info(space%ptr, info))
  end subroutine

  function mmb_space_info_name(info) result(s)
    type(mmbSpaceInfo), intent(in) :: info
    character(len=:), allocatable :: s
    integer :: n
    n = 0
    do while (n < size(info%name))
      if (info%name(n + 1) == c_null_char) exit
      n = n + 1
    end do
    allocate(character(len=n) :: s)
    s = transfer(info%name(1:n), s)
  end function

  subroutine mmb_space_get_stats(space, stats, err)
    type(mmbMemSpace), intent(in) :: space
    type(mmbStats), intent(out) :: stats
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_space_get_stats(space%ptr, stats))
  end subroutine

  subroutine mmb_space_distance(from, to, distance, err)
    type(mmbMemSpace), intent(in) :: from, to
    integer, intent(out) :: distance
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: d, rc
    rc = c_mmb_space_distance(from%ptr, to%ptr, d)
    if (rc == MMB_OK) distance = d
    call set_err(err, rc)
  end subroutine

  subroutine mmb_cuda_status(devices, reason, err)
    integer, intent(out) :: devices
    character(len=:), allocatable, intent(out), optional :: reason
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: n, rc
    type(c_ptr) :: why
    rc = c_mmb_cuda_status(n, why)
    if (rc == MMB_OK) then
      devices = n
      if (present(reason)) reason = f_string(why)
    end if
    call set_err(err, rc)
  end subroutine

  ! No config: the space's registered one (mmb_register_memory), else the defaults.
  subroutine mmb_request_interface(space, config, new_interface, err)
    type(mmbMemSpace), intent(in) :: space
    type(mmbMemInterfaceConfig), intent(in), optional :: config
    type(mmbMemInterface), intent(inout) :: new_interface
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_request_interface(space%ptr, config, made)
    call handle_out(rc, made, new_interface%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_interface_destroy(interface, err)
    type(mmbMemInterface), intent(inout) :: interface
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = MMB_OK
    if (c_associated(interface%ptr)) rc = c_mmb_interface_destroy(interface%ptr)
    if (rc == MMB_OK) interface%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_interface_get_space(interface, space, err)
    type(mmbMemInterface), intent(in) :: interface
    type(mmbMemSpace), intent(inout) :: space
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_interface_space(interface%ptr, made)
    call handle_out(rc, made, space%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_interface_get_provider(interface, provider, err)
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(out) :: provider
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: p, rc
    rc = c_mmb_interface_provider(interface%ptr, p)
    if (rc == MMB_OK) provider = p
    call set_err(err, rc)
  end subroutine

  subroutine mmb_interface_get_stats(interface, stats, err)
    type(mmbMemInterface), intent(in) :: interface
    type(mmbStats), intent(out) :: stats
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_interface_get_stats(interface%ptr, stats))
  end subroutine

  subroutine mmb_interface_reset_high(interface, err)
    type(mmbMemInterface), intent(in) :: interface
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_interface_reset_high(interface%ptr))
  end subroutine

  subroutine mmb_interface_trim(interface, min_bytes_to_keep, err)
    type(mmbMemInterface), intent(in) :: interface
    integer(mmbSizeKind), intent(in) :: min_bytes_to_keep
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_interface_trim(interface%ptr, min_bytes_to_keep))
  end subroutine

  function mmb_layer_name(layer) result(s)
    integer, intent(in) :: layer
    character(len=:), allocatable :: s
    s = f_string(c_mmb_layer_name(int(layer, c_int)))
  end function

  ! A layer of the user's: its number in layer (C's mmb_layer_register).
  subroutine mmb_layer_register(name, properties, layer, err)
    character(len=*), intent(in) :: name
    type(mmbLayerProperties), intent(in) :: properties
    integer, intent(out) :: layer
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: l, rc
    l = -1
    rc = c_mmb_layer_register(c_name(name), properties, l)
    layer = int(l)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_layer_find(name, layer, err)
    character(len=*), intent(in) :: name
    integer, intent(out) :: layer
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: l, rc
    l = -1
    rc = c_mmb_layer_find(c_name(name), l)
    layer = int(l)
    call set_err(err, rc)
  end subroutine

  function mmb_context_name(context) result(s)
    integer, intent(in) :: context
    character(len=:), allocatable :: s
    s = f_string(c_mmb_context_name(int(context, c_int)))
  end function

  function mmb_provider_name(provider) result(s)
    integer, intent(in) :: provider
    character(len=:), allocatable :: s
    s = f_string(c_mmb_provider_name(int(provider, c_int)))
  end function

  ! ---- allocations and copies -------------------------------------------------------------
  subroutine mmb_allocate(n_bytes, interface, allocation, err, options)
    integer(mmbSizeKind), intent(in) :: n_bytes
    type(mmbMemInterface), intent(in) :: interface
    type(mmbAllocation), intent(inout) :: allocation
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbAllocateOptions), intent(in), optional :: options
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_allocate_opts(n_bytes, interface%ptr, options, made)
    call handle_out(rc, made, allocation%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_allocate_opts(n_bytes, interface, options, allocation, err)
    integer(mmbSizeKind), intent(in) :: n_bytes
    type(mmbMemInterface), intent(in) :: interface
    type(mmbAllocateOptions), intent(in) :: options
    type(mmbAllocation), intent(inout) :: allocation
    integer(mmbErrorKind), intent(out), optional :: err
    call mmb_allocate(n_bytes, interface, allocation, err, options)
  end subroutine

  subroutine mmb_free(allocation, err)
    type(mmbAllocation), intent(inout) :: allocation
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = MMB_OK
    if (c_associated(allocation%ptr)) rc = c_mmb_free(allocation%ptr)
    if (rc == MMB_OK) allocation%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  ! The bytes (c_f_pointer them to a Fortran array); c_null_ptr for a bad handle.
  function mmb_allocation_ptr(allocation) result(p)
    type(mmbAllocation), intent(in) :: allocation
    type(c_ptr) :: p
    p = c_mmb_allocation_ptr(allocation%ptr)
  end function

  function mmb_allocation_size(allocation) result(n)
    type(mmbAllocation), intent(in) :: allocation
    integer(mmbSizeKind) :: n
    n = c_mmb_allocation_size(allocation%ptr)
  end function

  subroutine mmb_allocation_get_interface(allocation, interface, err)
    type(mmbAllocation), intent(in) :: allocation
    type(mmbMemInterface), intent(inout) :: interface
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_allocation_interface(allocation%ptr, made)
    call handle_out(rc, made, interface%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_copy(dst, src, err)
    type(mmbAllocation), intent(in) :: dst, src
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_copy(dst%ptr, src%ptr))
  end subroutine

  ! Offsets and widths in bytes, from 0.
  subroutine mmb_copy_1d(dst, doffset, src, soffset, width, err)
    type(mmbAllocation), intent(in) :: dst, src
    integer(mmbSizeKind), intent(in) :: doffset, soffset, width
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_copy_1d(dst%ptr, doffset, src%ptr, soffset, width))
  end subroutine

  subroutine mmb_copy_2d(dst, dxoffset, dyoffset, dxpitch, src, sxoffset, syoffset, spitch, &
                         width, height, err)
    type(mmbAllocation), intent(in) :: dst, src
    integer(mmbSizeKind), intent(in) :: dxoffset, dyoffset, dxpitch, sxoffset, syoffset, spitch, &
                                        width, height
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_copy_2d(dst%ptr, dxoffset, dyoffset, dxpitch, src%ptr, sxoffset, &
                                    syoffset, spitch, width, height))
  end subroutine

  ! As the C call, with the arrays' common size as ndims.
  subroutine mmb_copy_nd(dst, doffset, dpitch, src, soffset, spitch, dims, err)
    type(mmbAllocation), intent(in) :: dst, src
    integer(mmbSizeKind), intent(in) :: doffset(:), dpitch(:), soffset(:), spitch(:), dims(:)
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_size_t) :: n
    n = size(dims, kind=c_size_t)
    if (size(doffset) /= n .or. size(dpitch) /= n .or. size(soffset) /= n .or. size(spitch) /= n) then
      call set_err(err, MMB_INVALID_ARG)
      return
    end if
    call set_err(err, c_mmb_copy_nd(dst%ptr, doffset, dpitch, src%ptr, soffset, spitch, n, dims))
  end subroutine

  ! ---- regions ---------------------------------------------------------------------------
  subroutine mmb_region_create(interface, region, err, options)
    type(mmbMemInterface), intent(in) :: interface
    type(mmbRegion), intent(inout) :: region
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbRegionOptions), intent(in), optional :: options
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_region_create(interface%ptr, options, made)
    call handle_out(rc, made, region%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_region_push(parent, child, err)
    type(mmbRegion), intent(in) :: parent
    type(mmbRegion), intent(inout) :: child
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_region_push(parent%ptr, made)
    call handle_out(rc, made, child%ptr)
    call set_err(err, rc)
  end subroutine

  ! alignment 0: MMB_REGION_DEFAULT_ALIGNMENT.
  ! malloc-style: bare bytes from the interface, no handle (c_f_pointer them);
  ! given back with mmb_ptr_deallocate on the same interface.
  subroutine mmb_ptr_allocate(n_bytes, interface, ptr, err, options)
    type(mmbMemInterface), intent(in) :: interface
    integer(mmbSizeKind), intent(in) :: n_bytes
    type(c_ptr), intent(out) :: ptr
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbAllocateOptions), intent(in), optional :: options
    ptr = c_null_ptr
    if (present(options)) then
      call set_err(err, c_mmb_ptr_allocate_opts(n_bytes, interface%ptr, options, ptr))
    else
      call set_err(err, c_mmb_ptr_allocate(n_bytes, interface%ptr, ptr))
    end if
  end subroutine

  subroutine mmb_ptr_allocate_opts(n_bytes, interface, options, ptr, err)
    type(mmbMemInterface), intent(in) :: interface
    integer(mmbSizeKind), intent(in) :: n_bytes
    type(mmbAllocateOptions), intent(in) :: options
    type(c_ptr), intent(out) :: ptr
    integer(mmbErrorKind), intent(out), optional :: err
    call mmb_ptr_allocate(n_bytes, interface, ptr, err, options)
  end subroutine

  ! Frees what mmb_ptr_allocate gave; ptr becomes c_null_ptr when it was freed
  ! (freeing c_null_ptr does nothing, as mmb_free of a null handle).
  subroutine mmb_ptr_deallocate(ptr, interface, err)
    type(mmbMemInterface), intent(in) :: interface
    type(c_ptr), intent(inout) :: ptr
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = MMB_OK
    if (c_associated(ptr)) rc = c_mmb_ptr_deallocate(ptr, interface%ptr)
    if (rc == MMB_OK) ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_region_alloc(region, n_bytes, alignment, ptr, err)
    type(mmbRegion), intent(in) :: region
    integer(mmbSizeKind), intent(in) :: n_bytes, alignment
    type(c_ptr), intent(out) :: ptr
    integer(mmbErrorKind), intent(out), optional :: err
    ptr = c_null_ptr
    call set_err(err, c_mmb_region_alloc(region%ptr, n_bytes, alignment, ptr))
  end subroutine

  subroutine mmb_region_reset(region, err)
    type(mmbRegion), intent(in) :: region
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_region_reset(region%ptr))
  end subroutine

  subroutine mmb_region_destroy(region, err)
    type(mmbRegion), intent(inout) :: region
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = MMB_OK
    if (c_associated(region%ptr)) rc = c_mmb_region_destroy(region%ptr)
    if (rc == MMB_OK) region%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  ! ---- statistics and traces ---------------------------------------------------------------
  subroutine mmb_trace_start(err)
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_trace_start())
  end subroutine

  subroutine mmb_trace_stop(err)
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_trace_stop())
  end subroutine

  subroutine mmb_trace_dump(path, err)
    character(len=*), intent(in) :: path
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_trace_dump(c_name(path)))
  end subroutine

  subroutine mmb_trace_set_capacity(events, err)
    integer(mmbSizeKind), intent(in) :: events
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_trace_set_capacity(events))
  end subroutine

  ! ---- layouts --------------------------------------------------------------------------------
  function mmb_layout_padding_create_zero() result(padding)
    type(mmbLayoutPadding) :: padding
    padding%row_alignment = 0
  end function

  subroutine mmb_layout_create_regular_1d(element_size, padding, layout, err)
    integer(mmbSizeKind), intent(in) :: element_size
    type(mmbLayoutPadding), intent(in) :: padding
    type(mmbLayout), intent(inout) :: layout
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_layout_create_regular_1d(element_size, padding, made)
    call handle_out(rc, made, layout%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_layout_create_regular_nd(element_size, n_dims, order, padding, layout, err)
    integer(mmbSizeKind), intent(in) :: element_size, n_dims
    integer, intent(in) :: order
    type(mmbLayoutPadding), intent(in) :: padding
    type(mmbLayout), intent(inout) :: layout
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_layout_create_regular_nd(element_size, n_dims, int(order, c_int), padding, made)
    call handle_out(rc, made, layout%ptr)
    call set_err(err, rc)
  end subroutine

  ! A layout of records (C's mmb_layout_create_record): field f has
  ! sizes(f) bytes at offsets(f) in an AoS record, and names(f) when given.
  subroutine mmb_layout_create_record(sizes, offsets, record_size, kind, n_dims, order, &
                                      padding, layout, err, names)
    integer(mmbSizeKind), intent(in) :: sizes(:), offsets(:)
    integer(mmbSizeKind), intent(in) :: record_size, n_dims
    integer, intent(in) :: kind, order
    type(mmbLayoutPadding), intent(in) :: padding
    type(mmbLayout), intent(inout) :: layout
    integer(mmbErrorKind), intent(out), optional :: err
    character(len=*), intent(in), optional :: names(:)
    type(c_record_field) :: fields(MMB_MAX_FIELDS)
    character(kind=c_char, len=MMB_FIELD_NAME_MAX + 1), target :: cnames(MMB_MAX_FIELDS)
    integer :: f, n
    integer(c_int) :: rc
    type(c_ptr) :: made
    n = size(sizes)
    if (n < 1 .or. n > MMB_MAX_FIELDS .or. size(offsets) /= n) then
      call set_err(err, MMB_INVALID_ARG)
      return
    end if
    if (present(names)) then
      if (size(names) /= n) then
        call set_err(err, MMB_INVALID_ARG)
        return
      end if
    end if
    do f = 1, n
      fields(f)%size = sizes(f)
      fields(f)%offset = offsets(f)
      if (present(names)) then
        if (len_trim(names(f)) >= MMB_FIELD_NAME_MAX) then
          call set_err(err, MMB_INVALID_ARG)
          return
        end if
        cnames(f) = trim(names(f)) // c_null_char
        fields(f)%name = c_loc(cnames(f))
      end if
    end do
    rc = c_mmb_layout_create_record(fields, int(n, c_size_t), record_size, int(kind, c_int), &
                                    n_dims, int(order, c_int), padding, made)
    call handle_out(rc, made, layout%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_layout_get_record(layout, info, err)
    type(mmbLayout), intent(in) :: layout
    type(mmbRecordInfo), intent(out) :: info
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_layout_get_record(layout%ptr, info))
  end subroutine

  ! Field index (0-based) of a record layout: its name, size and offset.
  subroutine mmb_layout_get_field(layout, index, name, size, offset, err)
    type(mmbLayout), intent(in) :: layout
    integer(mmbSizeKind), intent(in) :: index
    character(len=:), allocatable, intent(out) :: name
    integer(mmbSizeKind), intent(out) :: size, offset
    integer(mmbErrorKind), intent(out), optional :: err
    type(c_record_field) :: f
    integer(c_int) :: rc
    rc = c_mmb_layout_get_field(layout%ptr, index, f)
    name = f_string(f%name)
    size = f%size
    offset = f%offset
    call set_err(err, rc)
  end subroutine

  ! The 0-based index of the field named name.
  subroutine mmb_layout_find_field(layout, name, index, err)
    type(mmbLayout), intent(in) :: layout
    character(len=*), intent(in) :: name
    integer(mmbSizeKind), intent(out) :: index
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_layout_find_field(layout%ptr, c_name(name), index))
  end subroutine

  subroutine mmb_array_get_field(array, index, field, err)
    type(mmbArray), intent(in) :: array
    integer(mmbSizeKind), intent(in) :: index
    type(mmbField), intent(out) :: field
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_array_get_field(array%ptr, index, field))
  end subroutine

  subroutine mmb_tile_get_field(tile, index, field, err)
    type(mmbArrayTile), intent(in) :: tile
    integer(mmbSizeKind), intent(in) :: index
    type(mmbField), intent(out) :: field
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_get_field(tile%ptr, index, field))
  end subroutine

  subroutine mmb_array_duplicate_layout(array, interface, access, layout, duplicate, err)
    type(mmbArray), intent(in) :: array
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(in) :: access
    type(mmbLayout), intent(in) :: layout
    type(mmbArray), intent(inout) :: duplicate
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_array_duplicate_layout(array%ptr, interface%ptr, int(access, c_int), layout%ptr, &
                                      made)
    call handle_out(rc, made, duplicate%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_array_duplicate_layout_async(array, interface, access, layout, queue, request, &
                                              duplicate, err)
    type(mmbArray), intent(in) :: array
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(in) :: access
    type(mmbLayout), intent(in) :: layout
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    type(mmbArray), intent(inout) :: duplicate
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_array_duplicate_layout_async(array%ptr, interface%ptr, int(access, c_int), &
                                            layout%ptr, queue%ptr, request, made)
    call handle_out(rc, made, duplicate%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_array_migrate_layout(array, interface, access, layout, err)
    type(mmbArray), intent(in) :: array
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(in) :: access
    type(mmbLayout), intent(in) :: layout
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_array_migrate_layout(array%ptr, interface%ptr, int(access, c_int), &
                                                 layout%ptr))
  end subroutine

  subroutine mmb_array_migrate_layout_async(array, interface, access, layout, queue, request, err)
    type(mmbArray), intent(in) :: array
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(in) :: access
    type(mmbLayout), intent(in) :: layout
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_array_migrate_layout_async(array%ptr, interface%ptr, &
                                                       int(access, c_int), layout%ptr, &
                                                       queue%ptr, request))
  end subroutine

  subroutine mmb_layout_set_element_type(layout, element_type, err)
    type(mmbLayout), intent(in) :: layout
    integer, intent(in) :: element_type
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_layout_set_element_type(layout%ptr, int(element_type, c_int)))
  end subroutine

  subroutine mmb_layout_get_info(layout, info, err)
    type(mmbLayout), intent(in) :: layout
    type(mmbLayoutInfo), intent(out) :: info
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_layout_get_info(layout%ptr, info))
  end subroutine

  subroutine mmb_layout_destroy(layout, err)
    type(mmbLayout), intent(inout) :: layout
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = MMB_OK
    if (c_associated(layout%ptr)) rc = c_mmb_layout_destroy(layout%ptr)
    if (rc == MMB_OK) layout%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_element_type_size(element_type, bytes, err)
    integer, intent(in) :: element_type
    integer(mmbSizeKind), intent(out) :: bytes
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_element_type_size(int(element_type, c_int), bytes))
  end subroutine

  ! ---- arrays ------------------------------------------------------------------------------------
  ! dims into the C struct; MMB_INVALID_ARG for a rank outside 1..MMB_MAX_DIMS.
  subroutine to_c_dims(dims, c, rc)
    integer(mmbIndexKind), intent(in) :: dims(:)
    type(c_dims), intent(out) :: c
    integer(c_int), intent(out) :: rc
    rc = MMB_INVALID_ARG
    if (size(dims) < 1 .or. size(dims) > MMB_MAX_DIMS) return
    c%size = size(dims)
    c%d(1:size(dims)) = dims
    rc = MMB_OK
  end subroutine

  subroutine mmb_array_create(dims, layout, interface, access, array, err, options)
    integer(mmbIndexKind), intent(in) :: dims(:)
    type(mmbLayout), intent(in) :: layout
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(in) :: access
    type(mmbArray), intent(inout) :: array
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbArrayOptions), intent(in), optional :: options
    type(c_dims) :: c
    integer(c_int) :: rc
    type(c_ptr) :: made
    call to_c_dims(dims, c, rc)
    if (rc == MMB_OK) rc = c_mmb_array_create_opts(c, layout%ptr, interface%ptr, int(access, c_int), &
                                                   options, made)
    call handle_out(rc, made, array%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_array_create_opts(dims, layout, interface, access, options, array, err)
    integer(mmbIndexKind), intent(in) :: dims(:)
    type(mmbLayout), intent(in) :: layout
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(in) :: access
    type(mmbArrayOptions), intent(in) :: options
    type(mmbArray), intent(inout) :: array
    integer(mmbErrorKind), intent(out), optional :: err
    call mmb_array_create(dims, layout, interface, access, array, err, options)
  end subroutine

  ! Wraps the caller's array x (any type and rank, contiguous, with the target
  ! attribute: it must outlive the mmb array). Its rank and element size must
  ! be the layout's, and its storage must hold dims as the layout lays them out.
  subroutine mmb_array_create_wrapped(x, dims, layout, interface, access, array, err)
    type(*), dimension(..), target :: x
    integer(mmbIndexKind), intent(in) :: dims(:)
    type(mmbLayout), intent(in) :: layout
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(in) :: access
    type(mmbArray), intent(inout) :: array
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = mmbf_array_create_wrapped(x, dims, size(dims, kind=c_size_t), layout%ptr, interface%ptr, &
                                   int(access, c_int), made)
    call handle_out(rc, made, array%ptr)
    call set_err(err, rc)
  end subroutine

  ! Destroys the iterators over the array the caller did not destroy, then
  ! the array; a handle never made is left alone.
  subroutine mmb_array_destroy(array, err)
    type(mmbArray), intent(inout) :: array
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = MMB_OK
    if (c_associated(array%ptr)) rc = mmbf_array_destroy(array%ptr)
    if (rc == MMB_OK) array%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  function mmb_array_ptr(array) result(p)
    type(mmbArray), intent(in) :: array
    type(c_ptr) :: p
    p = c_mmb_array_ptr(array%ptr)
  end function

  ! The C struct's extents (or strides, grid, index) as an array of the rank's size.
  subroutine from_c_dims(c, dims)
    type(c_dims), intent(in) :: c
    integer(mmbIndexKind), allocatable, intent(out) :: dims(:)
    allocate(dims(min(c%size, int(MMB_MAX_DIMS, c_size_t))))
    dims = c%d(1:size(dims))
  end subroutine

  subroutine mmb_array_get_dims(array, dims, err)
    type(mmbArray), intent(in) :: array
    integer(mmbIndexKind), allocatable, intent(out) :: dims(:)
    integer(mmbErrorKind), intent(out), optional :: err
    type(c_dims) :: c
    integer(c_int) :: rc
    rc = c_mmb_array_dims(array%ptr, c)
    call from_c_dims(c, dims)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_array_get_strides(array, strides, err)
    type(mmbArray), intent(in) :: array
    integer(mmbIndexKind), allocatable, intent(out) :: strides(:)
    integer(mmbErrorKind), intent(out), optional :: err
    type(c_dims) :: c
    integer(c_int) :: rc
    rc = c_mmb_array_strides(array%ptr, c)
    call from_c_dims(c, strides)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_array_get_bytes(array, bytes, err)
    type(mmbArray), intent(in) :: array
    integer(mmbSizeKind), intent(out) :: bytes
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_array_bytes(array%ptr, bytes))
  end subroutine

  subroutine mmb_array_get_interface(array, interface, err)
    type(mmbArray), intent(in) :: array
    type(mmbMemInterface), intent(inout) :: interface
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_array_interface(array%ptr, made)
    call handle_out(rc, made, interface%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_array_copy(dst, src, err)
    type(mmbArray), intent(in) :: dst, src
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_array_copy(dst%ptr, src%ptr))
  end subroutine

  subroutine mmb_array_migrate(array, interface, access, err)
    type(mmbArray), intent(in) :: array
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(in) :: access
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_array_migrate(array%ptr, interface%ptr, int(access, c_int)))
  end subroutine

  subroutine mmb_array_duplicate(array, interface, access, duplicate, err)
    type(mmbArray), intent(in) :: array
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(in) :: access
    type(mmbArray), intent(inout) :: duplicate
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_array_duplicate(array%ptr, interface%ptr, int(access, c_int), made)
    call handle_out(rc, made, duplicate%ptr)
    call set_err(err, rc)
  end subroutine

  ! Folds a duplicate back into its origin; the duplicate is destroyed with it.
  subroutine mmb_array_merge(array, merge, err)
    type(mmbArray), intent(inout) :: array
    integer, intent(in) :: merge
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = c_mmb_array_merge(array%ptr, int(merge, c_int))
    if (rc == MMB_OK) array%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  ! fn: a bind(C) subroutine (dst, src: type(c_ptr), value; count,
  ! element_size: integer(c_size_t), value; user_data: type(c_ptr), value).
  subroutine mmb_array_merge_with(array, fn, user_data, err)
    type(mmbArray), intent(inout) :: array
    type(c_funptr), value :: fn
    type(c_ptr), intent(in) :: user_data
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = c_mmb_array_merge_with(array%ptr, fn, user_data)
    if (rc == MMB_OK) array%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_array_copy_async(dst, src, queue, request, err)
    type(mmbArray), intent(in) :: dst, src
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_array_copy_async(dst%ptr, src%ptr, queue%ptr, request))
  end subroutine

  subroutine mmb_array_migrate_async(array, interface, access, queue, request, err)
    type(mmbArray), intent(in) :: array
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(in) :: access
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_array_migrate_async(array%ptr, interface%ptr, int(access, c_int), &
                                                queue%ptr, request))
  end subroutine

  subroutine mmb_array_duplicate_async(array, interface, access, queue, request, duplicate, err)
    type(mmbArray), intent(in) :: array
    type(mmbMemInterface), intent(in) :: interface
    integer, intent(in) :: access
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    type(mmbArray), intent(inout) :: duplicate
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_array_duplicate_async(array%ptr, interface%ptr, int(access, c_int), queue%ptr, &
                                     request, made)
    call handle_out(rc, made, duplicate%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_array_merge_async(array, merge, queue, request, err)
    type(mmbArray), intent(inout) :: array
    integer, intent(in) :: merge
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = c_mmb_array_merge_async(array%ptr, int(merge, c_int), queue%ptr, request)
    if (rc == MMB_OK) array%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_array_merge_with_async(array, fn, user_data, queue, request, err)
    type(mmbArray), intent(inout) :: array
    type(c_funptr), value :: fn
    type(c_ptr), intent(in) :: user_data
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = c_mmb_array_merge_with_async(array%ptr, fn, user_data, queue%ptr, request)
    if (rc == MMB_OK) array%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  ! ---- tiles -------------------------------------------------------------------------------------
  subroutine mmb_array_tile(array, chunk_dims, err)
    type(mmbArray), intent(in) :: array
    integer(mmbIndexKind), intent(in) :: chunk_dims(:)
    integer(mmbErrorKind), intent(out), optional :: err
    type(c_dims) :: c
    integer(c_int) :: rc
    call to_c_dims(chunk_dims, c, rc)
    if (rc == MMB_OK) rc = c_mmb_array_tile(array%ptr, c)
    call set_err(err, rc)
  end subroutine

  ! tiles(k) tiles along dimension k, between boundaries given dimension
  ! after dimension in bounds: tiles(k) + 1 of them each, mmb's 0-based
  ! indices from 0 to the extent (mmb_array_tile_irregular).
  subroutine mmb_array_tile_irregular(array, tiles, bounds, err)
    type(mmbArray), intent(in) :: array
    integer(mmbIndexKind), intent(in) :: tiles(:), bounds(:)
    integer(mmbErrorKind), intent(out), optional :: err
    type(c_dims) :: c
    integer(c_int) :: rc
    call to_c_dims(tiles, c, rc)
    if (rc == MMB_OK .and. size(bounds, kind=mmbIndexKind) /= sum(tiles) + size(tiles)) &
      rc = MMB_INVALID_ARG   ! (the C call could not tell where the list ends)
    if (rc == MMB_OK) rc = c_mmb_array_tile_irregular(array%ptr, c, bounds)
    call set_err(err, rc)
  end subroutine

  ! Block-cyclic distributions (mmb/cyclic.h): bc's extents in mmb's order,
  ! its owners and source 0-based. ScaLAPACK's own NUMROC and INDX* map.
  subroutine mmb_array_tile_block_cyclic(array, bc, err)
    type(mmbArray), intent(in) :: array
    type(mmbBlockCyclic), intent(in) :: bc
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_array_tile_block_cyclic(array%ptr, bc))
  end subroutine

  ! spaces: one per owner of bc%grid, row-major (the last grid dimension fastest).
  subroutine mmb_array_distribute(array, bc, spaces, err)
    type(mmbArray), intent(in) :: array
    type(mmbBlockCyclic), intent(in) :: bc
    type(mmbMemSpace), intent(in) :: spaces(:)
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = MMB_INVALID_ARG   ! (the C call reads one space per owner: there must be as many)
    if (bc%rank >= 1 .and. bc%rank <= MMB_MAX_DIMS) then
      if (size(spaces, kind=c_size_t) == product(bc%grid(1:bc%rank))) &
        rc = c_mmb_array_distribute(array%ptr, bc, spaces)
    end if
    call set_err(err, rc)
  end subroutine

  subroutine mmb_array_get_block_cyclic(array, bc, err)
    type(mmbArray), intent(in) :: array
    type(mmbBlockCyclic), intent(out) :: bc
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_array_get_block_cyclic(array%ptr, bc))
  end subroutine

  subroutine mmb_array_tile_grid(array, grid, err)
    type(mmbArray), intent(in) :: array
    integer(mmbIndexKind), allocatable, intent(out) :: grid(:)
    integer(mmbErrorKind), intent(out), optional :: err
    type(c_dims) :: c
    integer(c_int) :: rc
    rc = c_mmb_array_tile_grid(array%ptr, c)
    call from_c_dims(c, grid)
    call set_err(err, rc)
  end subroutine

  ! index: the tile's place in the grid, mmb's 0-based indices.
  subroutine mmb_tile_at(array, index, tile, err)
    type(mmbArray), intent(in) :: array
    integer(mmbIndexKind), intent(in) :: index(:)
    type(mmbArrayTile), intent(inout) :: tile
    integer(mmbErrorKind), intent(out), optional :: err
    type(c_dims) :: c
    integer(c_int) :: rc
    type(c_ptr) :: made
    call to_c_dims(index, c, rc)
    if (rc == MMB_OK) rc = c_mmb_tile_at(array%ptr, c, made)
    call handle_out(rc, made, tile%ptr)
    call set_err(err, rc)
  end subroutine

  ! The tile's public fields (mmbTileInfo); MMB_INVALID_ARG for a bad handle.
  subroutine mmb_tile_get_info(tile, info, err)
    type(mmbArrayTile), intent(in) :: tile
    type(mmbTileInfo), intent(out) :: info
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, mmbf_tile_info(tile%ptr, info))
  end subroutine

  ! What the tile is beyond its fields (mmbTileState: element type, duplicate,
  ! writable, stale, host accessible, contiguous, version).
  subroutine mmb_tile_get_state(tile, state, err)
    type(mmbArrayTile), intent(in) :: tile
    type(mmbTileState), intent(out) :: state
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_get_state(tile%ptr, state))
  end subroutine

  ! Releases a duplicate without writing it back; the handle is then null.
  subroutine mmb_tile_discard(tile, err)
    type(mmbArrayTile), intent(inout) :: tile
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = c_mmb_tile_discard(tile%ptr)
    if (rc == MMB_OK) tile%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  ! Records a write made through a tile pointer (read-only duplicates made
  ! before it go stale).
  subroutine mmb_tile_mark_written(tile, err)
    type(mmbArrayTile), intent(in) :: tile
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_mark_written(tile%ptr))
  end subroutine

  subroutine mmb_tile_copy(dst, src, err)
    type(mmbArrayTile), intent(in) :: dst, src
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_copy(dst%ptr, src%ptr))
  end subroutine

  ! dst = the transpose of src (extents reversed: dst(i, j) = src(j, i)).
  subroutine mmb_tile_copy_transposed(dst, src, err)
    type(mmbArrayTile), intent(in) :: dst, src
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_copy_transposed(dst%ptr, src%ptr))
  end subroutine

  ! layout (after err): the duplicate's; absent: the array's.
  subroutine mmb_tile_duplicate(tile, space, access, duplicate, err, layout)
    type(mmbArrayTile), intent(in) :: tile
    type(mmbMemSpace), intent(in) :: space
    integer, intent(in) :: access
    type(mmbArrayTile), intent(inout) :: duplicate
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbLayout), intent(in), optional :: layout
    integer(c_int) :: rc
    type(c_ptr) :: made
    type(mmbLayout) :: l
    if (present(layout)) l = layout
    rc = c_mmb_tile_duplicate(tile%ptr, space%ptr, int(access, c_int), l%ptr, made)
    call handle_out(rc, made, duplicate%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_tile_migrate(tile, space, access, err, layout)
    type(mmbArrayTile), intent(in) :: tile
    type(mmbMemSpace), intent(in) :: space
    integer, intent(in) :: access
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbLayout), intent(in), optional :: layout
    type(mmbLayout) :: l
    if (present(layout)) l = layout
    call set_err(err, c_mmb_tile_migrate(tile%ptr, space%ptr, int(access, c_int), l%ptr))
  end subroutine

  ! Folds a duplicate back; the duplicate handle is then null.
  subroutine mmb_tile_merge(tile, merge, err)
    type(mmbArrayTile), intent(inout) :: tile
    integer, intent(in) :: merge
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = c_mmb_tile_merge(tile%ptr, int(merge, c_int))
    if (rc == MMB_OK) tile%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_tile_merge_with(tile, fn, user_data, err)
    type(mmbArrayTile), intent(inout) :: tile
    type(c_funptr), value :: fn
    type(c_ptr), intent(in) :: user_data
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = c_mmb_tile_merge_with(tile%ptr, fn, user_data)
    if (rc == MMB_OK) tile%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_tile_copy_async(dst, src, queue, request, err)
    type(mmbArrayTile), intent(in) :: dst, src
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_copy_async(dst%ptr, src%ptr, queue%ptr, request))
  end subroutine

  subroutine mmb_tile_copy_transposed_async(dst, src, queue, request, err)
    type(mmbArrayTile), intent(in) :: dst, src
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_copy_transposed_async(dst%ptr, src%ptr, queue%ptr, request))
  end subroutine

  subroutine mmb_tile_duplicate_async(tile, space, access, queue, request, duplicate, err, layout)
    type(mmbArrayTile), intent(in) :: tile
    type(mmbMemSpace), intent(in) :: space
    integer, intent(in) :: access
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    type(mmbArrayTile), intent(inout) :: duplicate
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbLayout), intent(in), optional :: layout
    integer(c_int) :: rc
    type(c_ptr) :: made
    type(mmbLayout) :: l
    if (present(layout)) l = layout
    rc = c_mmb_tile_duplicate_async(tile%ptr, space%ptr, int(access, c_int), l%ptr, queue%ptr, &
                                    request, made)
    call handle_out(rc, made, duplicate%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_tile_migrate_async(tile, space, access, queue, request, err, layout)
    type(mmbArrayTile), intent(in) :: tile
    type(mmbMemSpace), intent(in) :: space
    integer, intent(in) :: access
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbLayout), intent(in), optional :: layout
    type(mmbLayout) :: l
    if (present(layout)) l = layout
    call set_err(err, c_mmb_tile_migrate_async(tile%ptr, space%ptr, int(access, c_int), l%ptr, &
                                               queue%ptr, request))
  end subroutine

  subroutine mmb_tile_merge_async(tile, merge, queue, request, err)
    type(mmbArrayTile), intent(inout) :: tile
    integer, intent(in) :: merge
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = c_mmb_tile_merge_async(tile%ptr, int(merge, c_int), queue%ptr, request)
    if (rc == MMB_OK) tile%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_tile_merge_with_async(tile, fn, user_data, queue, request, err)
    type(mmbArrayTile), intent(inout) :: tile
    type(c_funptr), value :: fn
    type(c_ptr), intent(in) :: user_data
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = c_mmb_tile_merge_with_async(tile%ptr, fn, user_data, queue%ptr, request)
    if (rc == MMB_OK) tile%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_tile_get_space_local_handle(tile, local, err)
    type(mmbArrayTile), intent(in) :: tile
    type(mmbArrayTile), intent(inout) :: local
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_tile_get_space_local_handle(tile%ptr, made)
    call handle_out(rc, made, local%ptr)
    call set_err(err, rc)
  end subroutine

  ! ---- a tile's elements as a Fortran pointer: the tile's rank, extents and
  ! strides, with the array's Fortran bounds (p(i, j) is the element the
  ! wrapped array calls x(i, j)). The pointer's rank and kind must be the
  ! tile's; a tile in device memory is MMB_INVALID_STATE.
  subroutine tile_pointer_r4(tile, p, err)
    type(mmbArrayTile), intent(in) :: tile
    real(c_float), pointer, intent(inout) :: p(..)
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, mmbf_tile_pointer_r4(tile%ptr, p))
  end subroutine

  subroutine tile_pointer_r8(tile, p, err)
    type(mmbArrayTile), intent(in) :: tile
    real(c_double), pointer, intent(inout) :: p(..)
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, mmbf_tile_pointer_r8(tile%ptr, p))
  end subroutine

  subroutine tile_pointer_c4(tile, p, err)
    type(mmbArrayTile), intent(in) :: tile
    complex(c_float_complex), pointer, intent(inout) :: p(..)
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, mmbf_tile_pointer_c4(tile%ptr, p))
  end subroutine

  subroutine tile_pointer_c8(tile, p, err)
    type(mmbArrayTile), intent(in) :: tile
    complex(c_double_complex), pointer, intent(inout) :: p(..)
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, mmbf_tile_pointer_c8(tile%ptr, p))
  end subroutine

  subroutine tile_pointer_i4(tile, p, err)
    type(mmbArrayTile), intent(in) :: tile
    integer(c_int32_t), pointer, intent(inout) :: p(..)
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, mmbf_tile_pointer_i4(tile%ptr, p))
  end subroutine

  subroutine tile_pointer_i8(tile, p, err)
    type(mmbArrayTile), intent(in) :: tile
    integer(c_int64_t), pointer, intent(inout) :: p(..)
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, mmbf_tile_pointer_i8(tile%ptr, p))
  end subroutine

  ! ---- iterators -------------------------------------------------------------------------------
  ! The module remembers the iterator: mmb_array_destroy destroys it if the
  ! caller does not.
  subroutine mmb_tile_iterator_create(array, iterator, err, options)
    type(mmbArray), intent(in) :: array
    type(mmbTileIterator), intent(inout) :: iterator
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbTileIteratorOptions), intent(in), optional :: options
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = mmbf_iterator_create(array%ptr, options, made)
    call handle_out(rc, made, iterator%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_tile_iterator_footprint(array, bytes, err, options)
    type(mmbArray), intent(in) :: array
    integer(mmbSizeKind), intent(out) :: bytes
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbTileIteratorOptions), intent(in), optional :: options
    call set_err(err, c_mmb_tile_iterator_footprint(array%ptr, options, bytes))
  end subroutine

  subroutine mmb_tile_iterator_first(iterator, err)
    type(mmbTileIterator), intent(in) :: iterator
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_iterator_first(iterator%ptr))
  end subroutine

  subroutine mmb_tile_iterator_next(iterator, err)
    type(mmbTileIterator), intent(in) :: iterator
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_iterator_next(iterator%ptr))
  end subroutine

  subroutine mmb_tile_iterator_count(iterator, count, err)
    type(mmbTileIterator), intent(in) :: iterator
    integer(mmbSizeKind), intent(out) :: count
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_iterator_count(iterator%ptr, count))
  end subroutine

  ! The current tile; a null tile and MMB_INVALID_STATE past the end (or
  ! when its prefetch failed), MMB_INVALID_ARG for a bad iterator.
  subroutine mmb_tile_iterator_tile(iterator, tile, err)
    type(mmbTileIterator), intent(in) :: iterator
    type(mmbArrayTile), intent(inout) :: tile
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_size_t) :: n
    integer(c_int) :: rc
    tile%ptr = c_mmb_tile_iterator_tile(iterator%ptr)
    rc = MMB_OK
    if (.not. c_associated(tile%ptr)) then
      rc = c_mmb_tile_iterator_count(iterator%ptr, n)   ! a bad handle says why
      if (rc == MMB_OK) rc = MMB_INVALID_STATE
    end if
    call set_err(err, rc)
  end subroutine

  subroutine mmb_tile_iterator_get_index(iterator, index, err)
    type(mmbTileIterator), intent(in) :: iterator
    integer(mmbIndexKind), allocatable, intent(out) :: index(:)
    integer(mmbErrorKind), intent(out), optional :: err
    type(c_dims) :: c
    integer(c_int) :: rc
    rc = c_mmb_tile_iterator_index(iterator%ptr, c)
    call from_c_dims(c, index)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_tile_iterator_destroy(iterator, err)
    type(mmbTileIterator), intent(inout) :: iterator
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = MMB_OK
    if (c_associated(iterator%ptr)) rc = mmbf_iterator_destroy(iterator%ptr)
    if (rc /= MMB_INVALID_ARG .and. rc /= MMB_NOT_INITIALIZED) iterator%ptr = c_null_ptr  ! gone either way
    call set_err(err, rc)
  end subroutine

  ! ---- queues and requests ------------------------------------------------------------------------
  subroutine mmb_queue_create(queue, err, options)
    type(mmbQueue), intent(inout) :: queue
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbQueueOptions), intent(inout), optional :: options
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_queue_create(options, made)
    call handle_out(rc, made, queue%ptr)
    call set_err(err, rc)
  end subroutine

  subroutine mmb_queue_destroy(queue, err, options)
    type(mmbQueue), intent(inout) :: queue
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbQueueOptions), intent(inout), optional :: options
    integer(c_int) :: rc
    rc = MMB_OK
    if (c_associated(queue%ptr)) rc = c_mmb_queue_destroy(options, queue%ptr)
    if (rc == MMB_OK) queue%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_queue_get_native(queue, native, err)
    type(mmbQueue), intent(in) :: queue
    type(c_ptr), intent(out) :: native
    integer(mmbErrorKind), intent(out), optional :: err
    native = c_null_ptr
    call set_err(err, c_mmb_queue_get_native(queue%ptr, native))
  end subroutine

  subroutine mmb_queue_get_backend(queue, backend, err)
    type(mmbQueue), intent(in) :: queue
    integer, intent(out) :: backend
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: b, rc
    rc = c_mmb_queue_get_backend(queue%ptr, b)
    if (rc == MMB_OK) backend = b
    call set_err(err, rc)
  end subroutine

  subroutine mmb_queue_marker(queue, request, err)
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout) :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_queue_marker(queue%ptr, request))
  end subroutine

  subroutine mmb_queue_synchronize(queue, err)
    type(mmbQueue), intent(in) :: queue
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_queue_synchronize(queue%ptr))
  end subroutine

  ! fn: a bind(C) subroutine taking arg (type(c_ptr), value); request absent:
  ! fire and forget.
  subroutine mmb_queue_submit(queue, fn, arg, request, err)
    type(mmbQueue), intent(in) :: queue
    type(c_funptr), value :: fn
    type(c_ptr), intent(in) :: arg
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_queue_submit(queue%ptr, fn, arg, request))
  end subroutine

  ! fn: c_funloc of an integer(c_int) function(arg) bind(C); what it returns
  ! is the request's error.
  subroutine mmb_queue_submit_task(queue, fn, arg, request, err)
    type(mmbQueue), intent(in) :: queue
    type(c_funptr), value :: fn
    type(c_ptr), intent(in) :: arg
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_queue_submit_task(queue%ptr, fn, arg, request))
  end subroutine

  subroutine mmb_queue_wait_request(queue, request, err)
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout) :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_queue_wait_request(queue%ptr, request))
  end subroutine

  subroutine mmb_request_is_complete(request, complete, err)
    type(mmbRequest), intent(inout) :: request
    logical, intent(out) :: complete
    integer(mmbErrorKind), intent(out), optional :: err
    logical(c_bool) :: c
    integer(c_int) :: rc
    c = .false.
    rc = c_mmb_request_is_complete(request, c)
    complete = c
    call set_err(err, rc)
  end subroutine

  subroutine mmb_wait(request, err)
    type(mmbRequest), intent(inout) :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_wait(request))
  end subroutine

  ! errors (after err): each request's error, size(requests) of them.
  subroutine mmb_wait_all(requests, err, errors)
    type(mmbRequest), intent(inout), target :: requests(:)
    integer(mmbErrorKind), intent(out), optional :: err
    integer(mmbErrorKind), intent(out), optional, target :: errors(:)
    type(mmbRequest), allocatable, target :: packed(:)
    integer(c_int), allocatable, target :: each(:)
    integer(c_int) :: rc
    if (present(errors)) then
      if (size(errors) < size(requests)) then
        call set_err(err, MMB_INVALID_ARG)
        return
      end if
    end if
    allocate(packed(size(requests)), each(max(1, size(requests))))
    packed(:) = requests                       ! contiguous, whatever the caller passed
    rc = c_mmb_wait_all(size(packed, kind=c_size_t), packed, each)
    requests = packed
    if (present(errors)) errors(1:size(requests)) = each(1:size(requests))
    call set_err(err, rc)
  end subroutine

  subroutine mmb_copy_async(dst, src, queue, request, err)
    type(mmbAllocation), intent(in) :: dst, src
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_copy_async(dst%ptr, src%ptr, queue%ptr, request))
  end subroutine

  subroutine mmb_copy_1d_async(dst, doffset, src, soffset, width, queue, request, err)
    type(mmbAllocation), intent(in) :: dst, src
    integer(mmbSizeKind), intent(in) :: doffset, soffset, width
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_copy_1d_async(dst%ptr, doffset, src%ptr, soffset, width, queue%ptr, &
                                          request))
  end subroutine

  subroutine mmb_copy_2d_async(dst, dxoffset, dyoffset, dxpitch, src, sxoffset, syoffset, spitch, &
                               width, height, queue, request, err)
    type(mmbAllocation), intent(in) :: dst, src
    integer(mmbSizeKind), intent(in) :: dxoffset, dyoffset, dxpitch, sxoffset, syoffset, spitch, &
                                        width, height
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_copy_2d_async(dst%ptr, dxoffset, dyoffset, dxpitch, src%ptr, sxoffset, &
                                          syoffset, spitch, width, height, queue%ptr, request))
  end subroutine

  subroutine mmb_copy_nd_async(dst, doffset, dpitch, src, soffset, spitch, dims, queue, request, err)
    type(mmbAllocation), intent(in) :: dst, src
    integer(mmbSizeKind), intent(in) :: doffset(:), dpitch(:), soffset(:), spitch(:), dims(:)
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_size_t) :: n
    n = size(dims, kind=c_size_t)
    if (size(doffset) /= n .or. size(dpitch) /= n .or. size(soffset) /= n .or. size(spitch) /= n) then
      call set_err(err, MMB_INVALID_ARG)
      return
    end if
    call set_err(err, c_mmb_copy_nd_async(dst%ptr, doffset, dpitch, src%ptr, soffset, spitch, n, &
                                          dims, queue%ptr, request))
  end subroutine

  subroutine mmb_free_async(allocation, queue, err)
    type(mmbAllocation), intent(inout) :: allocation
    type(mmbQueue), intent(in) :: queue
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = MMB_OK
    if (c_associated(allocation%ptr)) rc = c_mmb_free_async(allocation%ptr, queue%ptr)
    if (rc == MMB_OK) allocation%ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  ! mmb_ptr_deallocate after queue work: ptr is c_null_ptr on return; its bytes are
  ! reused once the work submitted to queue before the call has run.
  subroutine mmb_ptr_deallocate_async(ptr, interface, queue, err)
    type(mmbMemInterface), intent(in) :: interface
    type(c_ptr), intent(inout) :: ptr
    type(mmbQueue), intent(in) :: queue
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    rc = MMB_OK
    if (c_associated(ptr)) rc = c_mmb_ptr_deallocate_async(ptr, interface%ptr, queue%ptr)
    if (rc == MMB_OK) ptr = c_null_ptr
    call set_err(err, rc)
  end subroutine

  subroutine mmb_allocation_record_queue(allocation, queue, err)
    type(mmbAllocation), intent(in) :: allocation
    type(mmbQueue), intent(in) :: queue
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_allocation_record_queue(allocation%ptr, queue%ptr))
  end subroutine

  subroutine mmb_region_reset_async(region, queue, err)
    type(mmbRegion), intent(in) :: region
    type(mmbQueue), intent(in) :: queue
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_region_reset_async(region%ptr, queue%ptr))
  end subroutine

  ! ---- providers and host memory --------------------------------------------------------------------
  ! ops must outlive the registration (a saved variable with the target attribute).
  subroutine mmb_provider_register(ops, provider, err)
    type(mmbProviderOps), intent(in), target :: ops
    integer, intent(out) :: provider
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: p, rc
    rc = c_mmb_provider_register(c_loc(ops), p)
    if (rc == MMB_OK) provider = p
    call set_err(err, rc)
  end subroutine

  subroutine mmb_provider_get_ops(provider, ops, err)
    integer, intent(in) :: provider
    type(mmbProviderOps), intent(out) :: ops
    integer(mmbErrorKind), intent(out), optional :: err
    type(c_ptr) :: p
    type(mmbProviderOps), pointer :: found
    integer(c_int) :: rc
    rc = c_mmb_provider_get_ops(int(provider, c_int), p)
    if (rc == MMB_OK) then
      call c_f_pointer(p, found)
      ops = found
    end if
    call set_err(err, rc)
  end subroutine

  function mmb_host_page_size() result(n)
    integer(mmbSizeKind) :: n
    n = c_mmb_host_page_size()
  end function

  subroutine mmb_host_map(size, alignment, numa_node, ptr, err)
    integer(mmbSizeKind), intent(in) :: size, alignment
    integer, intent(in) :: numa_node
    type(c_ptr), intent(out) :: ptr
    integer(mmbErrorKind), intent(out), optional :: err
    ptr = c_null_ptr
    call set_err(err, c_mmb_host_map(size, alignment, int(numa_node, c_int), ptr))
  end subroutine

  subroutine mmb_host_unmap(ptr, size, err)
    type(c_ptr), intent(in) :: ptr
    integer(mmbSizeKind), intent(in) :: size
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_host_unmap(ptr, size))
  end subroutine

  subroutine mmb_host_bind(ptr, size, numa_node, err)
    type(c_ptr), intent(in) :: ptr
    integer(mmbSizeKind), intent(in) :: size
    integer, intent(in) :: numa_node
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_host_bind(ptr, size, int(numa_node, c_int)))
  end subroutine
  ! ---- the tile cache (mmb/cache.h) ---------------------------------------------
  ! local: the tile itself when it is at home in space, else its cached copy.
  subroutine mmb_tile_acquire(tile, space, access, local, err)
    type(mmbArrayTile), intent(in) :: tile
    type(mmbMemSpace), intent(in) :: space
    integer, intent(in) :: access
    type(mmbArrayTile), intent(inout) :: local
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_tile_acquire(tile%ptr, space%ptr, int(access, c_int), made)
    call handle_out(rc, made, local%ptr)
    call set_err(err, rc)
  end subroutine

  ! On queue: a miss's copy arrives there; request completes once it has.
  subroutine mmb_tile_acquire_async(tile, space, access, queue, request, local, err)
    type(mmbArrayTile), intent(in) :: tile
    type(mmbMemSpace), intent(in) :: space
    integer, intent(in) :: access
    type(mmbQueue), intent(in) :: queue
    type(mmbRequest), intent(inout), optional :: request
    type(mmbArrayTile), intent(inout) :: local
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_tile_acquire_async(tile%ptr, space%ptr, int(access, c_int), queue%ptr, request, made)
    call handle_out(rc, made, local%ptr)
    call set_err(err, rc)
  end subroutine

  ! The local tile stays cached; the handle stays valid while it is.
  subroutine mmb_tile_release(local, err)
    type(mmbArrayTile), intent(in) :: local
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_release(local%ptr))
  end subroutine

  subroutine mmb_tile_advise(tile, space, advice, err)
    type(mmbArrayTile), intent(in) :: tile
    type(mmbMemSpace), intent(in) :: space
    integer, intent(in) :: advice
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_advise(tile%ptr, space%ptr, int(advice, c_int)))
  end subroutine

  subroutine mmb_tile_flush(tile, err)
    type(mmbArrayTile), intent(in) :: tile
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_tile_flush(tile%ptr))
  end subroutine

  subroutine mmb_array_flush(array, err)
    type(mmbArray), intent(in) :: array
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_array_flush(array%ptr))
  end subroutine

  ! space absent: from every space.
  subroutine mmb_array_evict(array, err, space)
    type(mmbArray), intent(in) :: array
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbMemSpace), intent(in), optional :: space
    type(c_ptr) :: s
    s = c_null_ptr
    if (present(space)) s = space%ptr
    call set_err(err, c_mmb_array_evict(array%ptr, s))
  end subroutine

  subroutine mmb_space_set_cache(space, config, err)
    type(mmbMemSpace), intent(in) :: space
    type(mmbCacheConfig), intent(in) :: config
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_space_set_cache(space%ptr, config))
  end subroutine

  subroutine mmb_space_get_cache(space, config, err)
    type(mmbMemSpace), intent(in) :: space
    type(mmbCacheConfig), intent(out) :: config
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_space_get_cache(space%ptr, config))
  end subroutine

  subroutine mmb_space_get_cache_stats(space, stats, err)
    type(mmbMemSpace), intent(in) :: space
    type(mmbCacheStats), intent(out) :: stats
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_space_get_cache_stats(space%ptr, stats))
  end subroutine

  ! ---- the out-of-memory chain ---------------------------------------------------
  ! fn: a bind(C) function returning integer(c_int) (MMB_OOM_RETRY or
  ! MMB_OOM_GIVE_UP), with value arguments space (type(c_ptr)), bytes_needed
  ! (integer(c_size_t)), attempt (integer(c_int)) and arg (type(c_ptr)).
  subroutine mmb_space_add_oom_handler(space, fn, arg, err)
    type(mmbMemSpace), intent(in) :: space
    type(c_funptr), value :: fn
    type(c_ptr), intent(in) :: arg
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_space_add_oom_handler(space%ptr, fn, arg))
  end subroutine

  subroutine mmb_space_remove_oom_handler(space, fn, arg, err)
    type(mmbMemSpace), intent(in) :: space
    type(c_funptr), value :: fn
    type(c_ptr), intent(in) :: arg
    integer(mmbErrorKind), intent(out), optional :: err
    call set_err(err, c_mmb_space_remove_oom_handler(space%ptr, fn, arg))
  end subroutine

  ! Where the allocation's bytes are: its interface's space, or the fallback.
  subroutine mmb_allocation_space(allocation, space, err)
    type(mmbAllocation), intent(in) :: allocation
    type(mmbMemSpace), intent(inout) :: space
    integer(mmbErrorKind), intent(out), optional :: err
    integer(c_int) :: rc
    type(c_ptr) :: made
    rc = c_mmb_allocation_space(allocation%ptr, made)
    call handle_out(rc, made, space%ptr)
    call set_err(err, rc)
  end subroutine

  ! ---- deprecated: the bare-pointer calls with the interface first ----------
  subroutine mmb_ptr_alloc(interface, n_bytes, ptr, err, options)
    type(mmbMemInterface), intent(in) :: interface
    integer(mmbSizeKind), intent(in) :: n_bytes
    type(c_ptr), intent(out) :: ptr
    integer(mmbErrorKind), intent(out), optional :: err
    type(mmbAllocateOptions), intent(in), optional :: options
    call mmb_ptr_allocate(n_bytes, interface, ptr, err, options)
  end subroutine

  subroutine mmb_ptr_alloc_opts(interface, n_bytes, options, ptr, err)
    type(mmbMemInterface), intent(in) :: interface
    integer(mmbSizeKind), intent(in) :: n_bytes
    type(mmbAllocateOptions), intent(in) :: options
    type(c_ptr), intent(out) :: ptr
    integer(mmbErrorKind), intent(out), optional :: err
    call mmb_ptr_allocate(n_bytes, interface, ptr, err, options)
  end subroutine

  subroutine mmb_ptr_free(interface, ptr, err)
    type(mmbMemInterface), intent(in) :: interface
    type(c_ptr), intent(inout) :: ptr
    integer(mmbErrorKind), intent(out), optional :: err
    call mmb_ptr_deallocate(ptr, interface, err)
  end subroutine

  subroutine mmb_ptr_free_async(interface, ptr, queue, err)
    type(mmbMemInterface), intent(in) :: interface
    type(c_ptr), intent(inout) :: ptr
    type(mmbQueue), intent(in) :: queue
    integer(mmbErrorKind), intent(out), optional :: err
    call mmb_ptr_deallocate_async(ptr, interface, queue, err)
  end subroutine

end module mamba
