! Module mamba_c: the C level of module mamba (fortran/mamba.F90), which
! re-exports the kinds, constants and types below and keeps the rest (the C
! functions' interfaces, the C structs it converts to) to itself. Use mamba.
module mamba_c
  use, intrinsic :: iso_c_binding
  implicit none

  ! ---- kinds ------------------------------------------------------------------
  integer, parameter :: mmbErrorKind = c_int     !< a default integer err works too
  integer, parameter :: mmbSizeKind = c_size_t   !< byte counts
  integer, parameter :: mmbIndexKind = c_size_t  !< extents and indices

  ! ---- the C API's enum values and constants (from the C headers) -------------
#include "mamba_constants.inc"

  ! Mamba's size actions (mmbSizeConfig%action): no limit, the given size, or
  ! the tier's whole capacity.
  integer(c_int), parameter :: MMB_SIZE_NONE = 0, MMB_SIZE_SET = 1, MMB_SIZE_ANY = 2

  ! ---- handles: a C pointer each, null until made --------------------------------
  type, bind(C) :: mmbMemSpace
    type(c_ptr) :: ptr = c_null_ptr
  end type
  type, bind(C) :: mmbMemInterface
    type(c_ptr) :: ptr = c_null_ptr
  end type
  type, bind(C) :: mmbAllocation
    type(c_ptr) :: ptr = c_null_ptr
  end type
  type, bind(C) :: mmbRegion
    type(c_ptr) :: ptr = c_null_ptr
  end type
  type, bind(C) :: mmbLayout
    type(c_ptr) :: ptr = c_null_ptr
  end type
  type, bind(C) :: mmbArray
    type(c_ptr) :: ptr = c_null_ptr
  end type
  type, bind(C) :: mmbArrayTile
    type(c_ptr) :: ptr = c_null_ptr
  end type
  type, bind(C) :: mmbTileIterator
    type(c_ptr) :: ptr = c_null_ptr
  end type
  type, bind(C) :: mmbQueue
    type(c_ptr) :: ptr = c_null_ptr
  end type
  type, bind(C) :: mmbRequest       ! the C struct mmbRequest itself: arrays of them go to mmb_wait_all
    type(c_ptr) :: ptr = c_null_ptr
  end type

  ! ---- Mamba's configs ------------------------------------------------------------
  type :: mmbSizeConfig
    integer(c_int) :: action = MMB_SIZE_NONE
    logical :: is_logical = .false.          ! accepted as Mamba's; mmb counts bytes held
    integer(mmbSizeKind) :: size = 0         ! bytes, for MMB_SIZE_SET
  end type
  type, bind(C) :: mmbMemInterfaceConfig     ! C's mmbMemInterfaceConfig
    integer(c_int) :: provider = MMB_PROVIDER_DEFAULT
    integer(c_int) :: strategy = MMB_STRATEGY_DEFAULT
    integer(c_int) :: flags = 0              ! MMB_INTERFACE_THREAD_SAFE
    integer(c_size_t) :: release_threshold = 0
    integer(c_int) :: copy_threads = 0       ! host copies from 4 MiB split over this many threads
    type(c_ptr) :: fallback = c_null_ptr     ! a space (its %ptr) serving what this one cannot
    type(c_ptr) :: provider_options = c_null_ptr   ! the provider's own, read by its init
  end type
  type(mmbMemInterfaceConfig), parameter :: MMB_MEMINTERFACE_CONFIG_DEFAULT = &
    mmbMemInterfaceConfig(MMB_PROVIDER_DEFAULT, MMB_STRATEGY_DEFAULT, 0, 0_c_size_t, 0)
  type :: mmbMemSpaceConfig
    type(mmbSizeConfig) :: size_config = mmbSizeConfig()
    type(mmbMemInterfaceConfig) :: interface_config = MMB_MEMINTERFACE_CONFIG_DEFAULT
    integer :: numa_node = 0                 ! host layers: the n-th space of the layer
    integer :: device = 0                    ! GDRAM: the CUDA device
    character(len=47) :: name = ''           ! '' : a name made by mmb
  end type

  ! ---- the C API's option and information structs ------------------------------
  type, bind(C) :: mmbOptions
    integer(c_int) :: log_level = MMB_LOG_DEFAULT
  end type
  type, bind(C) :: mmbLayoutPadding
    integer(c_size_t) :: row_alignment = 0
  end type
  type, bind(C) :: mmbLayoutInfo
    integer(c_size_t) :: element_size = 0, rank = 0
    integer(c_int) :: order = MMB_ROWMAJOR
    integer(c_size_t) :: row_alignment = 0
    integer(c_int) :: type = MMB_TYPE_BYTES
  end type
  type, bind(C) :: mmbAllocateOptions
    integer(c_size_t) :: alignment = 0
    integer(c_int) :: flags = 0
    type(mmbRegion) :: region
  end type
  type, bind(C) :: mmbArrayOptions
    integer(c_size_t) :: alignment = 0
    integer(c_int) :: flags = 0
    type(mmbRegion) :: region
  end type
  type, bind(C) :: mmbRegionOptions
    integer(c_size_t) :: block_size = 0
  end type
  type, bind(C) :: mmbQueueOptions
    integer(c_int) :: backend = MMB_QUEUE_AUTO
    integer(c_int) :: device = 0
    type(mmbMemSpace) :: near
    type(c_ptr) :: native = c_null_ptr
  end type
  type, bind(C) :: mmbTileIteratorOptions
    integer(c_int) :: schedule = MMB_SCHEDULE_ROWMAJOR
    type(mmbQueue) :: queue
    type(mmbMemSpace) :: space
    integer(c_size_t) :: depth = 0
    integer(c_int) :: access = 0
    integer(c_int) :: merge = MMB_MERGE_OVERWRITE
    type(c_ptr) :: order = c_null_ptr            ! MMB_SCHEDULE_CUSTOM: c_loc of integer(c_size_t) positions
    integer(c_size_t) :: order_length = 0
    type(c_funptr) :: order_fn = c_null_funptr
    type(c_ptr) :: order_arg = c_null_ptr
  end type
  type, bind(C) :: mmbStats
    integer(c_size_t) :: used_current = 0, used_high = 0, reserved_current = 0, reserved_high = 0
    integer(c_long_long) :: n_allocs = 0, n_frees = 0, n_provider_allocs = 0, n_provider_frees = 0, &
                            n_failed = 0
  end type
  type, bind(C) :: mmbBlockCyclic
    integer(c_size_t) :: rank = 0
    integer(c_size_t) :: global(MMB_MAX_DIMS) = 0, block(MMB_MAX_DIMS) = 0, grid(MMB_MAX_DIMS) = 1, &
                         source(MMB_MAX_DIMS) = 0, owner(MMB_MAX_DIMS) = 0
  end type
  ! A record's fields (C's mmbRecordField, mmbRecordInfo) and where one
  ! field of a tile's or an array's elements lies (mmbField).
  type, bind(C) :: c_record_field
    type(c_ptr) :: name = c_null_ptr
    integer(c_size_t) :: size = 0, offset = 0
  end type
  type, bind(C) :: mmbRecordInfo
    integer(c_size_t) :: n_fields = 0
    integer(c_int) :: kind = 0
    integer(c_size_t) :: record_size = 0, payload = 0
  end type
  type, bind(C) :: mmbField
    type(c_ptr) :: ptr = c_null_ptr
    integer(c_size_t) :: size = 0
    integer(c_size_t) :: byte_stride(MMB_MAX_DIMS) = 0
  end type
  ! A layer of the user's (C's mmbLayerProperties, mmb_layer_register).
  type, bind(C) :: mmbLayerProperties
    integer(c_int) :: backing = MMB_DRAM, numa_node = 0
    integer(c_size_t) :: capacity = 0
    integer(c_long_long) :: bandwidth = 0, latency = 0
    logical(c_bool) :: device_only = .false.
  end type
  type, bind(C) :: mmbCacheConfig
    integer(c_size_t) :: budget_bytes = 0
    real(c_double) :: clean_share = 0.5_c_double
  end type
  type, bind(C) :: mmbCacheStats
    integer(c_int64_t) :: hits = 0, misses = 0, fetched_bytes = 0, clean_drops = 0, &
                          writebacks = 0, writeback_bytes = 0, refetches = 0, oom_rounds = 0, &
                          handler_calls = 0, fallback_bytes = 0, used_bytes = 0, &
                          dirty_bytes = 0, pinned_bytes = 0, budget_bytes = 0
  end type
  type, bind(C) :: mmbSpaceInfo
    integer(c_int) :: layer = 0, context = 0, numa_node = 0, device = 0, index = 0
    integer(c_size_t) :: capacity = 0, limit = 0
    integer(c_int) :: default_provider = 0, providers = 0
    logical(c_bool) :: discovered = .false., emulated = .false.
    character(kind=c_char) :: name(48) = c_null_char   ! mmb_space_info_name(info) as a string
    integer(c_long_long) :: bandwidth = 0, latency = 0
  end type
  ! A tile's public fields (C's mmbArrayTile): indices are mmb's, 0-based;
  ! upper is exclusive; strides are in elements.
  type, bind(C) :: mmbTileInfo
    integer(c_size_t) :: rank = 0, element_size = 0
    integer(c_size_t) :: lower(MMB_MAX_DIMS) = 0, upper(MMB_MAX_DIMS) = 0, dim(MMB_MAX_DIMS) = 0, &
                         stride(MMB_MAX_DIMS) = 0
    type(c_ptr) :: ptr = c_null_ptr
    type(mmbMemSpace) :: space
  end type
  ! What a tile is beyond its fields (C's mmbTileState, mmb_tile_get_state).
  type, bind(C) :: mmbTileState
    integer(c_int) :: type = MMB_TYPE_BYTES
    logical(c_bool) :: duplicate = .false., writable = .false., stale = .false., &
                       host_accessible = .false., contiguous = .false.
    integer(c_long_long) :: version = 0
    logical(c_bool) :: soa = .false.
  end type
  type, bind(C) :: mmbProviderTarget
    integer(c_int) :: layer = 0, context = 0, numa_node = -1, device = -1
    type(c_ptr) :: options = c_null_ptr      ! the interface config's provider_options
  end type
  ! A provider's table; it and the string `name` points at must outlive the
  ! registration (save them, with the target attribute).
  type, bind(C) :: mmbProviderOps
    integer(c_int) :: abi_version = MMB_PROVIDER_ABI_VERSION
    type(c_ptr) :: name = c_null_ptr
    integer(c_size_t) :: state_size = 0
    integer(c_int) :: caps = 0, layers = 0
    type(c_funptr) :: init = c_null_funptr, finalize = c_null_funptr, alloc = c_null_funptr, &
                      free = c_null_funptr, memset = c_null_funptr, copy_2d = c_null_funptr, &
                      copy_3d = c_null_funptr
  end type
  ! The C struct mmbDimensions, inside the module.
  type, bind(C) :: c_dims
    integer(c_size_t) :: size = 0
    integer(c_size_t) :: d(MMB_MAX_DIMS) = 0
  end type
  type, bind(C) :: c_space_config
    integer(c_size_t) :: size_limit = 0
    integer(c_int) :: numa_node = 0, device = 0
    type(c_ptr) :: name = c_null_ptr
  end type

  ! The C functions module mamba calls: the C API under c_<name>, and the C
  ! half of the module (fortran/shim.c) under mmbf_<name>.
  ! Handles pass by value; an output handle is a type(c_ptr) the C side sets;
  ! an absent optional struct is a NULL pointer.
  interface
    integer(c_size_t) function c_strlen(s) bind(C, name='strlen')
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function

    ! core.h
    type(c_ptr) function c_mmb_version(major, minor, patch) bind(C, name='mmb_version')
      import :: c_ptr, c_int
      integer(c_int), intent(out) :: major, minor, patch
    end function
    integer(c_int) function c_mmb_init(opts) bind(C, name='mmb_init')
      import :: c_int, mmbOptions
      type(mmbOptions), intent(in), optional :: opts
    end function
    integer(c_int) function c_mmb_finalize() bind(C, name='mmb_finalize')
      import :: c_int
    end function
    logical(c_bool) function c_mmb_is_initialized() bind(C, name='mmb_is_initialized')
      import :: c_bool
    end function
    type(c_ptr) function c_mmb_error_string(err) bind(C, name='mmb_error_string')
      import :: c_ptr, c_int
      integer(c_int), value :: err
    end function
    type(c_ptr) function c_mmb_error_name(err) bind(C, name='mmb_error_name')
      import :: c_ptr, c_int
      integer(c_int), value :: err
    end function
    integer(c_int) function c_mmb_logging_set_level(level) bind(C, name='mmb_logging_set_level')
      import :: c_int
      integer(c_int), value :: level
    end function
    integer(c_int) function c_mmb_logging_get_level(level) bind(C, name='mmb_logging_get_level')
      import :: c_int
      integer(c_int), intent(out) :: level
    end function
    integer(c_int) function c_mmb_logging_set_callback(fn, user_data) &
        bind(C, name='mmb_logging_set_callback')
      import :: c_int, c_funptr, c_ptr
      type(c_funptr), value :: fn
      type(c_ptr), value :: user_data
    end function

    ! memory.h
    integer(c_int) function c_mmb_register_memory(layer, ctx, cfg, icfg) bind(C, name='mmb_register_memory')
      import :: c_int, c_space_config, mmbMemInterfaceConfig
      integer(c_int), value :: layer, ctx
      type(c_space_config), intent(in) :: cfg
      type(mmbMemInterfaceConfig), intent(in) :: icfg
    end function
    integer(c_int) function c_mmb_request_space(layer, ctx, cfg, out) bind(C, name='mmb_request_space')
      import :: c_int, c_space_config, c_ptr
      integer(c_int), value :: layer, ctx
      type(c_space_config), intent(in), optional :: cfg
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_space_release(space) bind(C, name='mmb_space_release')
      import :: c_int, c_ptr
      type(c_ptr), value :: space
    end function
    integer(c_int) function c_mmb_space_count(count) bind(C, name='mmb_space_count')
      import :: c_int, c_size_t
      integer(c_size_t), intent(out) :: count
    end function
    integer(c_int) function c_mmb_space_at(i, out) bind(C, name='mmb_space_at')
      import :: c_int, c_size_t, c_ptr
      integer(c_size_t), value :: i
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_space_layer(space, layer) bind(C, name='mmb_space_layer')
      import :: c_int, c_ptr
      type(c_ptr), value :: space
      integer(c_int), intent(out) :: layer
    end function
    integer(c_int) function c_mmb_space_capacity(space, bytes) bind(C, name='mmb_space_capacity')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: space
      integer(c_size_t), intent(out) :: bytes
    end function
    integer(c_int) function c_mmb_space_get_info(space, info) bind(C, name='mmb_space_get_info')
      import :: c_int, c_ptr, mmbSpaceInfo
      type(c_ptr), value :: space
      type(mmbSpaceInfo), intent(out) :: info
    end function
    integer(c_int) function c_mmb_space_get_stats(space, stats) bind(C, name='mmb_space_get_stats')
      import :: c_int, c_ptr, mmbStats
      type(c_ptr), value :: space
      type(mmbStats), intent(out) :: stats
    end function
    integer(c_int) function c_mmb_space_distance(from, to, d) bind(C, name='mmb_space_distance')
      import :: c_int, c_ptr
      type(c_ptr), value :: from, to
      integer(c_int), intent(out) :: d
    end function
    integer(c_int) function c_mmb_cuda_status(devices, reason) bind(C, name='mmb_cuda_status')
      import :: c_int, c_ptr
      integer(c_int), intent(out) :: devices
      type(c_ptr), intent(out) :: reason
    end function
    integer(c_int) function c_mmb_request_interface(space, cfg, out) bind(C, name='mmb_request_interface')
      import :: c_int, c_ptr, mmbMemInterfaceConfig
      type(c_ptr), value :: space
      type(mmbMemInterfaceConfig), intent(in), optional :: cfg
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_interface_destroy(iface) bind(C, name='mmb_interface_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: iface
    end function
    integer(c_int) function c_mmb_interface_space(iface, out) bind(C, name='mmb_interface_get_space')
      import :: c_int, c_ptr
      type(c_ptr), value :: iface
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_interface_provider(iface, p) bind(C, name='mmb_interface_get_provider')
      import :: c_int, c_ptr
      type(c_ptr), value :: iface
      integer(c_int), intent(out) :: p
    end function
    integer(c_int) function c_mmb_interface_get_stats(iface, stats) bind(C, name='mmb_interface_get_stats')
      import :: c_int, c_ptr, mmbStats
      type(c_ptr), value :: iface
      type(mmbStats), intent(out) :: stats
    end function
    integer(c_int) function c_mmb_interface_reset_high(iface) bind(C, name='mmb_interface_reset_high')
      import :: c_int, c_ptr
      type(c_ptr), value :: iface
    end function
    integer(c_int) function c_mmb_interface_trim(iface, keep) bind(C, name='mmb_interface_trim')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: iface
      integer(c_size_t), value :: keep
    end function
    type(c_ptr) function c_mmb_layer_name(layer) bind(C, name='mmb_layer_name')
      import :: c_ptr, c_int
      integer(c_int), value :: layer
    end function
    integer(c_int) function c_mmb_layer_register(name, props, out) bind(C, name='mmb_layer_register')
      import :: c_int, c_char, mmbLayerProperties
      character(kind=c_char), intent(in) :: name(*)
      type(mmbLayerProperties), intent(in) :: props
      integer(c_int), intent(out) :: out
    end function
    integer(c_int) function c_mmb_layer_find(name, out) bind(C, name='mmb_layer_find')
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), intent(out) :: out
    end function
    type(c_ptr) function c_mmb_context_name(ctx) bind(C, name='mmb_context_name')
      import :: c_ptr, c_int
      integer(c_int), value :: ctx
    end function
    type(c_ptr) function c_mmb_provider_name(p) bind(C, name='mmb_provider_name')
      import :: c_ptr, c_int
      integer(c_int), value :: p
    end function

    ! allocation.h
    integer(c_int) function c_mmb_allocate_opts(n, iface, opts, out) bind(C, name='mmb_allocate_opts')
      import :: c_int, c_size_t, c_ptr, mmbAllocateOptions
      integer(c_size_t), value :: n
      type(c_ptr), value :: iface
      type(mmbAllocateOptions), intent(in), optional :: opts
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_free(a) bind(C, name='mmb_free')
      import :: c_int, c_ptr
      type(c_ptr), value :: a
    end function
    type(c_ptr) function c_mmb_allocation_ptr(a) bind(C, name='mmb_allocation_ptr')
      import :: c_ptr
      type(c_ptr), value :: a
    end function
    integer(c_size_t) function c_mmb_allocation_size(a) bind(C, name='mmb_allocation_size')
      import :: c_size_t, c_ptr
      type(c_ptr), value :: a
    end function
    integer(c_int) function c_mmb_allocation_interface(a, out) bind(C, name='mmb_allocation_get_interface')
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_copy(dst, src) bind(C, name='mmb_copy')
      import :: c_int, c_ptr
      type(c_ptr), value :: dst, src
    end function
    integer(c_int) function c_mmb_copy_1d(dst, doff, src, soff, width) bind(C, name='mmb_copy_1d')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: dst, src
      integer(c_size_t), value :: doff, soff, width
    end function
    integer(c_int) function c_mmb_copy_2d(dst, dx, dy, dpitch, src, sx, sy, spitch, width, height) &
        bind(C, name='mmb_copy_2d')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: dst, src
      integer(c_size_t), value :: dx, dy, dpitch, sx, sy, spitch, width, height
    end function
    integer(c_int) function c_mmb_copy_nd(dst, doff, dpitch, src, soff, spitch, n, dims) &
        bind(C, name='mmb_copy_nd')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: dst, src
      integer(c_size_t), intent(in) :: doff(*), dpitch(*), soff(*), spitch(*), dims(*)
      integer(c_size_t), value :: n
    end function

    ! region.h
    integer(c_int) function c_mmb_region_create(iface, opts, out) bind(C, name='mmb_region_create')
      import :: c_int, c_ptr, mmbRegionOptions
      type(c_ptr), value :: iface
      type(mmbRegionOptions), intent(in), optional :: opts
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_region_push(parent, out) bind(C, name='mmb_region_push')
      import :: c_int, c_ptr
      type(c_ptr), value :: parent
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_ptr_allocate(n, iface, out) bind(C, name='mmb_ptr_allocate')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: iface
      integer(c_size_t), value :: n
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_ptr_allocate_opts(n, iface, opts, out) bind(C, name='mmb_ptr_allocate_opts')
      import :: c_int, c_ptr, c_size_t, mmbAllocateOptions
      type(c_ptr), value :: iface
      integer(c_size_t), value :: n
      type(mmbAllocateOptions), intent(in), optional :: opts
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_ptr_deallocate(p, iface) bind(C, name='mmb_ptr_deallocate')
      import :: c_int, c_ptr
      type(c_ptr), value :: iface, p
    end function
    integer(c_int) function c_mmb_region_alloc(region, n, alignment, out) bind(C, name='mmb_region_alloc')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: region
      integer(c_size_t), value :: n, alignment
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_region_reset(region) bind(C, name='mmb_region_reset')
      import :: c_int, c_ptr
      type(c_ptr), value :: region
    end function
    integer(c_int) function c_mmb_region_destroy(region) bind(C, name='mmb_region_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: region
    end function

    ! trace.h
    integer(c_int) function c_mmb_trace_start() bind(C, name='mmb_trace_start')
      import :: c_int
    end function
    integer(c_int) function c_mmb_trace_stop() bind(C, name='mmb_trace_stop')
      import :: c_int
    end function
    integer(c_int) function c_mmb_trace_dump(path) bind(C, name='mmb_trace_dump')
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: path(*)
    end function
    integer(c_int) function c_mmb_trace_set_capacity(events) bind(C, name='mmb_trace_set_capacity')
      import :: c_int, c_size_t
      integer(c_size_t), value :: events
    end function

    ! layout.h
    integer(c_int) function c_mmb_layout_create_regular_1d(esize, padding, out) &
        bind(C, name='mmb_layout_create_regular_1d')
      import :: c_int, c_size_t, c_ptr, mmbLayoutPadding
      integer(c_size_t), value :: esize
      type(mmbLayoutPadding), value :: padding
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_layout_create_regular_nd(esize, n, order, padding, out) &
        bind(C, name='mmb_layout_create_regular_nd')
      import :: c_int, c_size_t, c_ptr, mmbLayoutPadding
      integer(c_size_t), value :: esize, n
      integer(c_int), value :: order
      type(mmbLayoutPadding), value :: padding
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_layout_set_element_type(layout, t) bind(C, name='mmb_layout_set_element_type')
      import :: c_int, c_ptr
      type(c_ptr), value :: layout
      integer(c_int), value :: t
    end function
    integer(c_int) function c_mmb_layout_get_info(layout, info) bind(C, name='mmb_layout_get_info')
      import :: c_int, c_ptr, mmbLayoutInfo
      type(c_ptr), value :: layout
      type(mmbLayoutInfo), intent(out) :: info
    end function
    integer(c_int) function c_mmb_layout_destroy(layout) bind(C, name='mmb_layout_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: layout
    end function
    integer(c_int) function c_mmb_element_type_size(t, bytes) bind(C, name='mmb_element_type_size')
      import :: c_int, c_size_t
      integer(c_int), value :: t
      integer(c_size_t), intent(out) :: bytes
    end function

    ! array.h
    integer(c_int) function c_mmb_array_create_opts(dims, layout, iface, access, opts, out) &
        bind(C, name='mmb_array_create_opts')
      import :: c_int, c_ptr, c_dims, mmbArrayOptions
      type(c_dims), intent(in) :: dims
      type(c_ptr), value :: layout, iface
      integer(c_int), value :: access
      type(mmbArrayOptions), intent(in), optional :: opts
      type(c_ptr), intent(out) :: out
    end function
    type(c_ptr) function c_mmb_array_ptr(a) bind(C, name='mmb_array_ptr')
      import :: c_ptr
      type(c_ptr), value :: a
    end function
    integer(c_int) function c_mmb_array_dims(a, out) bind(C, name='mmb_array_get_dims')
      import :: c_int, c_ptr, c_dims
      type(c_ptr), value :: a
      type(c_dims), intent(out) :: out
    end function
    integer(c_int) function c_mmb_array_strides(a, out) bind(C, name='mmb_array_get_strides')
      import :: c_int, c_ptr, c_dims
      type(c_ptr), value :: a
      type(c_dims), intent(out) :: out
    end function
    integer(c_int) function c_mmb_array_bytes(a, bytes) bind(C, name='mmb_array_get_bytes')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: a
      integer(c_size_t), intent(out) :: bytes
    end function
    integer(c_int) function c_mmb_array_interface(a, out) bind(C, name='mmb_array_get_interface')
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_array_copy(dst, src) bind(C, name='mmb_array_copy')
      import :: c_int, c_ptr
      type(c_ptr), value :: dst, src
    end function
    integer(c_int) function c_mmb_array_migrate(a, iface, access) bind(C, name='mmb_array_migrate')
      import :: c_int, c_ptr
      type(c_ptr), value :: a, iface
      integer(c_int), value :: access
    end function
    integer(c_int) function c_mmb_array_duplicate(a, iface, access, out) bind(C, name='mmb_array_duplicate')
      import :: c_int, c_ptr
      type(c_ptr), value :: a, iface
      integer(c_int), value :: access
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_array_merge(a, merge) bind(C, name='mmb_array_merge')
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      integer(c_int), value :: merge
    end function
    integer(c_int) function c_mmb_array_merge_with(a, fn, user_data) bind(C, name='mmb_array_merge_with')
      import :: c_int, c_ptr, c_funptr
      type(c_ptr), value :: a, user_data
      type(c_funptr), value :: fn
    end function
    integer(c_int) function c_mmb_array_copy_async(dst, src, q, req) bind(C, name='mmb_array_copy_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: dst, src, q
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_array_migrate_async(a, iface, access, q, req) &
        bind(C, name='mmb_array_migrate_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: a, iface, q
      integer(c_int), value :: access
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_layout_create_record(fields, n, record_size, kind, n_dims, &
        order, padding, out) bind(C, name='mmb_layout_create_record')
      import :: c_int, c_ptr, c_size_t, c_record_field, mmbLayoutPadding
      type(c_record_field), intent(in) :: fields(*)
      integer(c_size_t), value :: n, record_size, n_dims
      integer(c_int), value :: kind, order
      type(mmbLayoutPadding), value :: padding
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_layout_get_record(l, info) bind(C, name='mmb_layout_get_record')
      import :: c_int, c_ptr, mmbRecordInfo
      type(c_ptr), value :: l
      type(mmbRecordInfo), intent(out) :: info
    end function
    integer(c_int) function c_mmb_layout_get_field(l, i, f) bind(C, name='mmb_layout_get_field')
      import :: c_int, c_ptr, c_size_t, c_record_field
      type(c_ptr), value :: l
      integer(c_size_t), value :: i
      type(c_record_field), intent(out) :: f
    end function
    integer(c_int) function c_mmb_layout_find_field(l, name, i) bind(C, name='mmb_layout_find_field')
      import :: c_int, c_ptr, c_size_t, c_char
      type(c_ptr), value :: l
      character(kind=c_char), intent(in) :: name(*)
      integer(c_size_t), intent(out) :: i
    end function
    integer(c_int) function c_mmb_array_get_field(a, i, f) bind(C, name='mmb_array_get_field')
      import :: c_int, c_ptr, c_size_t, mmbField
      type(c_ptr), value :: a
      integer(c_size_t), value :: i
      type(mmbField), intent(out) :: f
    end function
    integer(c_int) function c_mmb_tile_get_field(t, i, f) bind(C, name='mmb_tile_get_field')
      import :: c_int, c_ptr, c_size_t, mmbField
      type(c_ptr), value :: t
      integer(c_size_t), value :: i
      type(mmbField), intent(out) :: f
    end function
    integer(c_int) function c_mmb_array_duplicate_layout(a, iface, access, l, out) &
        bind(C, name='mmb_array_duplicate_layout')
      import :: c_int, c_ptr
      type(c_ptr), value :: a, iface, l
      integer(c_int), value :: access
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_array_duplicate_layout_async(a, iface, access, l, q, req, out) &
        bind(C, name='mmb_array_duplicate_layout_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: a, iface, l, q
      integer(c_int), value :: access
      type(mmbRequest), intent(inout), optional :: req
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_array_migrate_layout(a, iface, access, l) &
        bind(C, name='mmb_array_migrate_layout')
      import :: c_int, c_ptr
      type(c_ptr), value :: a, iface, l
      integer(c_int), value :: access
    end function
    integer(c_int) function c_mmb_array_migrate_layout_async(a, iface, access, l, q, req) &
        bind(C, name='mmb_array_migrate_layout_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: a, iface, l, q
      integer(c_int), value :: access
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_array_duplicate_async(a, iface, access, q, req, out) &
        bind(C, name='mmb_array_duplicate_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: a, iface, q
      integer(c_int), value :: access
      type(mmbRequest), intent(inout), optional :: req
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_array_merge_async(a, merge, q, req) bind(C, name='mmb_array_merge_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: a, q
      integer(c_int), value :: merge
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_array_merge_with_async(a, fn, user_data, q, req) &
        bind(C, name='mmb_array_merge_with_async')
      import :: c_int, c_ptr, c_funptr, mmbRequest
      type(c_ptr), value :: a, user_data, q
      type(c_funptr), value :: fn
      type(mmbRequest), intent(inout), optional :: req
    end function

    ! tile.h
    integer(c_int) function c_mmb_array_tile(a, chunk) bind(C, name='mmb_array_tile')
      import :: c_int, c_ptr, c_dims
      type(c_ptr), value :: a
      type(c_dims), intent(in) :: chunk
    end function
    integer(c_int) function c_mmb_array_tile_irregular(a, tiles, bounds) &
        bind(C, name='mmb_array_tile_irregular')
      import :: c_int, c_ptr, c_dims, c_size_t
      type(c_ptr), value :: a
      type(c_dims), intent(in) :: tiles
      integer(c_size_t), intent(in) :: bounds(*)
    end function
    integer(c_int) function c_mmb_array_tile_block_cyclic(a, bc) &
        bind(C, name='mmb_array_tile_block_cyclic')
      import :: c_int, c_ptr, mmbBlockCyclic
      type(c_ptr), value :: a
      type(mmbBlockCyclic), intent(in) :: bc
    end function
    integer(c_int) function c_mmb_array_distribute(a, bc, spaces) bind(C, name='mmb_array_distribute')
      import :: c_int, c_ptr, mmbBlockCyclic, mmbMemSpace
      type(c_ptr), value :: a
      type(mmbBlockCyclic), intent(in) :: bc
      type(mmbMemSpace), intent(in) :: spaces(*)
    end function
    integer(c_int) function c_mmb_array_get_block_cyclic(a, bc) &
        bind(C, name='mmb_array_get_block_cyclic')
      import :: c_int, c_ptr, mmbBlockCyclic
      type(c_ptr), value :: a
      type(mmbBlockCyclic), intent(out) :: bc
    end function
    integer(c_int) function c_mmb_array_tile_grid(a, grid) bind(C, name='mmb_array_tile_grid')
      import :: c_int, c_ptr, c_dims
      type(c_ptr), value :: a
      type(c_dims), intent(out) :: grid
    end function
    integer(c_int) function c_mmb_tile_at(a, index, out) bind(C, name='mmb_tile_at')
      import :: c_int, c_ptr, c_dims
      type(c_ptr), value :: a
      type(c_dims), intent(in) :: index
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_tile_copy(dst, src) bind(C, name='mmb_tile_copy')
      import :: c_int, c_ptr
      type(c_ptr), value :: dst, src
    end function
    integer(c_int) function c_mmb_tile_copy_transposed(dst, src) bind(C, name='mmb_tile_copy_transposed')
      import :: c_int, c_ptr
      type(c_ptr), value :: dst, src
    end function
    integer(c_int) function c_mmb_tile_duplicate(t, space, access, layout, out) bind(C, name='mmb_tile_duplicate')
      import :: c_int, c_ptr
      type(c_ptr), value :: t, space, layout
      integer(c_int), value :: access
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_tile_migrate(t, space, access, layout) bind(C, name='mmb_tile_migrate')
      import :: c_int, c_ptr
      type(c_ptr), value :: t, space, layout
      integer(c_int), value :: access
    end function
    integer(c_int) function c_mmb_tile_merge(t, merge) bind(C, name='mmb_tile_merge')
      import :: c_int, c_ptr
      type(c_ptr), value :: t
      integer(c_int), value :: merge
    end function
    integer(c_int) function c_mmb_tile_merge_with(t, fn, user_data) bind(C, name='mmb_tile_merge_with')
      import :: c_int, c_ptr, c_funptr
      type(c_ptr), value :: t, user_data
      type(c_funptr), value :: fn
    end function
    integer(c_int) function c_mmb_tile_copy_async(dst, src, q, req) bind(C, name='mmb_tile_copy_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: dst, src, q
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_tile_copy_transposed_async(dst, src, q, req) &
        bind(C, name='mmb_tile_copy_transposed_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: dst, src, q
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_tile_duplicate_async(t, space, access, layout, q, req, out) &
        bind(C, name='mmb_tile_duplicate_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: t, space, layout, q
      integer(c_int), value :: access
      type(mmbRequest), intent(inout), optional :: req
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_tile_migrate_async(t, space, access, layout, q, req) &
        bind(C, name='mmb_tile_migrate_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: t, space, layout, q
      integer(c_int), value :: access
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_tile_merge_async(t, merge, q, req) bind(C, name='mmb_tile_merge_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: t, q
      integer(c_int), value :: merge
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_tile_merge_with_async(t, fn, user_data, q, req) &
        bind(C, name='mmb_tile_merge_with_async')
      import :: c_int, c_ptr, c_funptr, mmbRequest
      type(c_ptr), value :: t, user_data, q
      type(c_funptr), value :: fn
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_tile_get_space_local_handle(t, out) &
        bind(C, name='mmb_tile_get_space_local_handle')
      import :: c_int, c_ptr
      type(c_ptr), value :: t
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_tile_get_state(t, state) bind(C, name='mmb_tile_get_state')
      import :: c_int, c_ptr, mmbTileState
      type(c_ptr), value :: t
      type(mmbTileState), intent(out) :: state
    end function
    integer(c_int) function c_mmb_tile_acquire(t, space, access, out) bind(C, name='mmb_tile_acquire')
      import :: c_int, c_ptr
      type(c_ptr), value :: t, space
      integer(c_int), value :: access
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_tile_acquire_async(t, space, access, q, req, out) &
        bind(C, name='mmb_tile_acquire_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: t, space, q
      integer(c_int), value :: access
      type(mmbRequest), intent(inout), optional :: req
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_space_add_oom_handler(space, fn, arg) &
        bind(C, name='mmb_space_add_oom_handler')
      import :: c_int, c_ptr, c_funptr
      type(c_ptr), value :: space, arg
      type(c_funptr), value :: fn
    end function
    integer(c_int) function c_mmb_space_remove_oom_handler(space, fn, arg) &
        bind(C, name='mmb_space_remove_oom_handler')
      import :: c_int, c_ptr, c_funptr
      type(c_ptr), value :: space, arg
      type(c_funptr), value :: fn
    end function
    integer(c_int) function c_mmb_allocation_space(a, out) bind(C, name='mmb_allocation_space')
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_tile_release(t) bind(C, name='mmb_tile_release')
      import :: c_int, c_ptr
      type(c_ptr), value :: t
    end function
    integer(c_int) function c_mmb_tile_advise(t, space, advice) bind(C, name='mmb_tile_advise')
      import :: c_int, c_ptr
      type(c_ptr), value :: t, space
      integer(c_int), value :: advice
    end function
    integer(c_int) function c_mmb_tile_flush(t) bind(C, name='mmb_tile_flush')
      import :: c_int, c_ptr
      type(c_ptr), value :: t
    end function
    integer(c_int) function c_mmb_array_flush(a) bind(C, name='mmb_array_flush')
      import :: c_int, c_ptr
      type(c_ptr), value :: a
    end function
    integer(c_int) function c_mmb_array_evict(a, space) bind(C, name='mmb_array_evict')
      import :: c_int, c_ptr
      type(c_ptr), value :: a, space
    end function
    integer(c_int) function c_mmb_space_set_cache(space, config) bind(C, name='mmb_space_set_cache')
      import :: c_int, c_ptr, mmbCacheConfig
      type(c_ptr), value :: space
      type(mmbCacheConfig), intent(in) :: config
    end function
    integer(c_int) function c_mmb_space_get_cache(space, config) bind(C, name='mmb_space_get_cache')
      import :: c_int, c_ptr, mmbCacheConfig
      type(c_ptr), value :: space
      type(mmbCacheConfig), intent(out) :: config
    end function
    integer(c_int) function c_mmb_space_get_cache_stats(space, st) &
        bind(C, name='mmb_space_get_cache_stats')
      import :: c_int, c_ptr, mmbCacheStats
      type(c_ptr), value :: space
      type(mmbCacheStats), intent(out) :: st
    end function
    integer(c_int) function c_mmb_tile_discard(t) bind(C, name='mmb_tile_discard')
      import :: c_int, c_ptr
      type(c_ptr), value :: t
    end function
    integer(c_int) function c_mmb_tile_mark_written(t) bind(C, name='mmb_tile_mark_written')
      import :: c_int, c_ptr
      type(c_ptr), value :: t
    end function
    integer(c_int) function c_mmb_tile_iterator_footprint(a, opts, bytes) &
        bind(C, name='mmb_tile_iterator_footprint')
      import :: c_int, c_ptr, c_size_t, mmbTileIteratorOptions
      type(c_ptr), value :: a
      type(mmbTileIteratorOptions), intent(in), optional :: opts
      integer(c_size_t), intent(out) :: bytes
    end function
    integer(c_int) function c_mmb_tile_iterator_first(it) bind(C, name='mmb_tile_iterator_first')
      import :: c_int, c_ptr
      type(c_ptr), value :: it
    end function
    integer(c_int) function c_mmb_tile_iterator_next(it) bind(C, name='mmb_tile_iterator_next')
      import :: c_int, c_ptr
      type(c_ptr), value :: it
    end function
    integer(c_int) function c_mmb_tile_iterator_count(it, n) bind(C, name='mmb_tile_iterator_count')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: it
      integer(c_size_t), intent(out) :: n
    end function
    type(c_ptr) function c_mmb_tile_iterator_tile(it) bind(C, name='mmb_tile_iterator_tile')
      import :: c_ptr
      type(c_ptr), value :: it
    end function
    integer(c_int) function c_mmb_tile_iterator_index(it, out) bind(C, name='mmb_tile_iterator_get_index')
      import :: c_int, c_ptr, c_dims
      type(c_ptr), value :: it
      type(c_dims), intent(out) :: out
    end function

    ! queue.h
    integer(c_int) function c_mmb_queue_create(opts, out) bind(C, name='mmb_queue_create')
      import :: c_int, c_ptr, mmbQueueOptions
      type(mmbQueueOptions), intent(inout), optional :: opts
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_queue_destroy(opts, q) bind(C, name='mmb_queue_destroy')
      import :: c_int, c_ptr, mmbQueueOptions
      type(mmbQueueOptions), intent(inout), optional :: opts
      type(c_ptr), intent(inout) :: q
    end function
    integer(c_int) function c_mmb_queue_get_native(q, out) bind(C, name='mmb_queue_get_native')
      import :: c_int, c_ptr
      type(c_ptr), value :: q
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_queue_get_backend(q, b) bind(C, name='mmb_queue_get_backend')
      import :: c_int, c_ptr
      type(c_ptr), value :: q
      integer(c_int), intent(out) :: b
    end function
    integer(c_int) function c_mmb_queue_marker(q, req) bind(C, name='mmb_queue_marker')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: q
      type(mmbRequest), intent(inout) :: req
    end function
    integer(c_int) function c_mmb_queue_synchronize(q) bind(C, name='mmb_queue_synchronize')
      import :: c_int, c_ptr
      type(c_ptr), value :: q
    end function
    integer(c_int) function c_mmb_queue_submit(q, fn, arg, req) bind(C, name='mmb_queue_submit')
      import :: c_int, c_ptr, c_funptr, mmbRequest
      type(c_ptr), value :: q, arg
      type(c_funptr), value :: fn
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_queue_submit_task(q, fn, arg, req) bind(C, name='mmb_queue_submit_task')
      import :: c_int, c_ptr, c_funptr, mmbRequest
      type(c_ptr), value :: q, arg
      type(c_funptr), value :: fn
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_queue_wait_request(q, req) bind(C, name='mmb_queue_wait_request')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: q
      type(mmbRequest), intent(inout) :: req
    end function
    integer(c_int) function c_mmb_request_is_complete(req, complete) bind(C, name='mmb_request_is_complete')
      import :: c_int, c_bool, mmbRequest
      type(mmbRequest), intent(inout) :: req
      logical(c_bool), intent(out) :: complete
    end function
    integer(c_int) function c_mmb_wait(req) bind(C, name='mmb_wait')
      import :: c_int, mmbRequest
      type(mmbRequest), intent(inout) :: req
    end function
    integer(c_int) function c_mmb_wait_all(n, reqs, errors) bind(C, name='mmb_wait_all')
      import :: c_int, c_size_t, mmbRequest
      integer(c_size_t), value :: n
      type(mmbRequest), intent(inout) :: reqs(*)
      integer(c_int), intent(out) :: errors(*)
    end function
    integer(c_int) function c_mmb_copy_async(dst, src, q, req) bind(C, name='mmb_copy_async')
      import :: c_int, c_ptr, mmbRequest
      type(c_ptr), value :: dst, src, q
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_copy_1d_async(dst, doff, src, soff, width, q, req) &
        bind(C, name='mmb_copy_1d_async')
      import :: c_int, c_ptr, c_size_t, mmbRequest
      type(c_ptr), value :: dst, src, q
      integer(c_size_t), value :: doff, soff, width
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_copy_2d_async(dst, dx, dy, dpitch, src, sx, sy, spitch, width, height, &
                                                q, req) bind(C, name='mmb_copy_2d_async')
      import :: c_int, c_ptr, c_size_t, mmbRequest
      type(c_ptr), value :: dst, src, q
      integer(c_size_t), value :: dx, dy, dpitch, sx, sy, spitch, width, height
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_copy_nd_async(dst, doff, dpitch, src, soff, spitch, n, dims, q, req) &
        bind(C, name='mmb_copy_nd_async')
      import :: c_int, c_ptr, c_size_t, mmbRequest
      type(c_ptr), value :: dst, src, q
      integer(c_size_t), intent(in) :: doff(*), dpitch(*), soff(*), spitch(*), dims(*)
      integer(c_size_t), value :: n
      type(mmbRequest), intent(inout), optional :: req
    end function
    integer(c_int) function c_mmb_free_async(a, q) bind(C, name='mmb_free_async')
      import :: c_int, c_ptr
      type(c_ptr), value :: a, q
    end function
    integer(c_int) function c_mmb_ptr_deallocate_async(p, iface, q) bind(C, name='mmb_ptr_deallocate_async')
      import :: c_int, c_ptr
      type(c_ptr), value :: iface, p, q
    end function
    integer(c_int) function c_mmb_allocation_record_queue(a, q) bind(C, name='mmb_allocation_record_queue')
      import :: c_int, c_ptr
      type(c_ptr), value :: a, q
    end function
    integer(c_int) function c_mmb_region_reset_async(r, q) bind(C, name='mmb_region_reset_async')
      import :: c_int, c_ptr
      type(c_ptr), value :: r, q
    end function

    ! provider.h
    integer(c_int) function c_mmb_provider_register(ops, out) bind(C, name='mmb_provider_register')
      import :: c_int, c_ptr
      type(c_ptr), value :: ops
      integer(c_int), intent(out) :: out
    end function
    integer(c_int) function c_mmb_provider_get_ops(t, out) bind(C, name='mmb_provider_get_ops')
      import :: c_int, c_ptr
      integer(c_int), value :: t
      type(c_ptr), intent(out) :: out
    end function
    integer(c_size_t) function c_mmb_host_page_size() bind(C, name='mmb_host_page_size')
      import :: c_size_t
    end function
    integer(c_int) function c_mmb_host_map(size, alignment, numa, out) bind(C, name='mmb_host_map')
      import :: c_int, c_size_t, c_ptr
      integer(c_size_t), value :: size, alignment
      integer(c_int), value :: numa
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_mmb_host_unmap(ptr, size) bind(C, name='mmb_host_unmap')
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: size
    end function
    integer(c_int) function c_mmb_host_bind(ptr, size, numa) bind(C, name='mmb_host_bind')
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: size
      integer(c_int), value :: numa
    end function

    ! shim.c
    integer(c_int) function mmbf_array_create_wrapped(x, dims, n, layout, iface, access, out) &
        bind(C, name='mmbf_array_create_wrapped')
      import :: c_int, c_size_t, c_ptr
      type(*), dimension(..), intent(in) :: x
      integer(c_size_t), intent(in) :: dims(*)
      integer(c_size_t), value :: n
      type(c_ptr), value :: layout, iface
      integer(c_int), value :: access
      type(c_ptr), intent(out) :: out
    end function
    subroutine mmbf_log(level, text) bind(C, name='mmbf_log')
      import :: c_int, c_char
      integer(c_int), value :: level
      character(kind=c_char), dimension(*), intent(in) :: text
    end subroutine
    integer(c_int) function mmbf_array_destroy(a) bind(C, name='mmbf_array_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: a
    end function
    integer(c_int) function mmbf_iterator_create(a, opts, out) bind(C, name='mmbf_iterator_create')
      import :: c_int, c_ptr, mmbTileIteratorOptions
      type(c_ptr), value :: a
      type(mmbTileIteratorOptions), intent(in), optional :: opts
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function mmbf_iterator_destroy(it) bind(C, name='mmbf_iterator_destroy')
      import :: c_int, c_ptr
      type(c_ptr), value :: it
    end function
    subroutine mmbf_forget_iterators() bind(C, name='mmbf_forget_iterators')
    end subroutine
    integer(c_int) function mmbf_tile_info(t, info) bind(C, name='mmbf_tile_info')
      import :: c_int, c_ptr, mmbTileInfo
      type(c_ptr), value :: t
      type(mmbTileInfo), intent(out) :: info
    end function
    ! one C function for every kind of pointer (its descriptor says which)
    integer(c_int) function mmbf_tile_pointer_r4(t, p) bind(C, name='mmbf_tile_pointer')
      import :: c_int, c_ptr, c_float
      type(c_ptr), value :: t
      real(c_float), pointer, intent(inout) :: p(..)
    end function
    integer(c_int) function mmbf_tile_pointer_r8(t, p) bind(C, name='mmbf_tile_pointer')
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: t
      real(c_double), pointer, intent(inout) :: p(..)
    end function
    integer(c_int) function mmbf_tile_pointer_c4(t, p) bind(C, name='mmbf_tile_pointer')
      import :: c_int, c_ptr, c_float_complex
      type(c_ptr), value :: t
      complex(c_float_complex), pointer, intent(inout) :: p(..)
    end function
    integer(c_int) function mmbf_tile_pointer_c8(t, p) bind(C, name='mmbf_tile_pointer')
      import :: c_int, c_ptr, c_double_complex
      type(c_ptr), value :: t
      complex(c_double_complex), pointer, intent(inout) :: p(..)
    end function
    integer(c_int) function mmbf_tile_pointer_i4(t, p) bind(C, name='mmbf_tile_pointer')
      import :: c_int, c_ptr, c_int32_t
      type(c_ptr), value :: t
      integer(c_int32_t), pointer, intent(inout) :: p(..)
    end function
    integer(c_int) function mmbf_tile_pointer_i8(t, p) bind(C, name='mmbf_tile_pointer')
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: t
      integer(c_int64_t), pointer, intent(inout) :: p(..)
    end function
  end interface
end module mamba_c
