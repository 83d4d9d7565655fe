/**
 * \file mmb/types.h
 * The types of the mmb public API: error codes, enums, dimensions, the option
 * and config structs, statistics and the opaque handles.
 *
 * Config and option structs follow one rule: a zero-initialised struct means
 * "defaults", and a NULL pointer where one is accepted means the same.
 */
#ifndef MMB_TYPES_H
#define MMB_TYPES_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The error codes, in order from 0, with what mmb_error_string says of each
 * (as libuv's UV_ERRNO_MAP): the enum below and the strings are made from
 * this one list. X(name, text) is applied to each.
 *  - MMB_OK: success
 *  - MMB_ERROR: an unexpected failure below mmb (OS, driver)
 *  - MMB_INVALID_ARG: a NULL, zero or out-of-range argument
 *  - MMB_OUT_OF_MEMORY: the provider, the space's limit or the OS refused memory
 *  - MMB_OVERFLOW: a size computation would overflow size_t
 *  - MMB_UNSUPPORTED: the operation is not offered by this provider or strategy
 *  - MMB_UNAVAILABLE: the requested space or device does not exist on this node
 *  - MMB_NOT_INITIALIZED: called before mmb_init (or after the last mmb_finalize)
 *  - MMB_BUSY: the object is still in use and was left unchanged
 *  - MMB_INVALID_STATE: the object is not in a state that allows this operation
 *  - MMB_IO: reading or writing a file failed
 *  - MMB_TIMEOUT: a peer did not answer in time (mmb/mpi.h); nothing was
 *    changed on this side, but the peer may be left waiting
 */
#define MMB_ERROR_MAP(X)                                                                  \
  X(MMB_OK, "success")                                                                   \
  X(MMB_ERROR, "unexpected failure below mmb")                                           \
  X(MMB_INVALID_ARG, "invalid argument")                                                 \
  X(MMB_OUT_OF_MEMORY, "out of memory, or a space's limit reached")                      \
  X(MMB_OVERFLOW, "size computation overflows")                                          \
  X(MMB_UNSUPPORTED, "operation not supported by this provider or strategy")             \
  X(MMB_UNAVAILABLE, "no such space or device on this node")                             \
  X(MMB_NOT_INITIALIZED, "mmb is not initialised (call mmb_init first)")                 \
  X(MMB_BUSY, "object still in use")                                                     \
  X(MMB_INVALID_STATE, "object not in a state that allows this operation")               \
  X(MMB_IO, "input/output error")                                                        \
  X(MMB_TIMEOUT, "a peer did not answer in time")

/** Every fallible mmb function returns one of these (MMB_ERROR_MAP). */
typedef enum mmbError {
/** \cond INTERNAL */
#define MMB__ERROR_ENUM(name, text) name,
/** \endcond */
  MMB_ERROR_MAP(MMB__ERROR_ENUM)
#undef MMB__ERROR_ENUM
} mmbError;

/** The largest rank of an array or an N-dimensional copy. */
#define MMB_MAX_DIMS 8

/** Extents of an N-dimensional object: size is the rank, d[0..size-1] the extents. */
typedef struct mmbDimensions {
  size_t size;              /**< the rank: 1..MMB_MAX_DIMS */
  size_t d[MMB_MAX_DIMS];   /**< the extents (or indices, as mmbIndex) */
} mmbDimensions;

/** An N-dimensional index: size is the rank, d the coordinates. */
typedef mmbDimensions mmbIndex;

/** A kind of physical memory. */
typedef enum mmbMemLayer {
  MMB_DRAM,          /**< ordinary host memory */
  MMB_HBM,           /**< high-bandwidth memory attached to the host (MCDRAM, HBM NUMA nodes) */
  MMB_NVDIMM,        /**< persistent/non-volatile memory exposed as a NUMA node */
  MMB_GDRAM,         /**< memory of a GPU */
  MMB_STORAGE,       /**< files on a disk, mapped: a tier past memory (providers/file) */
  MMB_MEMLAYER_MAX
} mmbMemLayer;

/** Who accesses the memory. */
typedef enum mmbExecutionContext {
  MMB_EXECUTION_CONTEXT_DEFAULT,  /**< CPU for host layers, GPU_CUDA for GDRAM */
  MMB_CPU,
  MMB_GPU_CUDA
} mmbExecutionContext;

/** How bytes are obtained. User providers get values >= MMB_PROVIDER_USER. */
typedef enum mmbProviderType {
  MMB_PROVIDER_DEFAULT,  /**< the space's natural provider */
  MMB_PROVIDER_SYSTEM,   /**< host memory, bound to the space's NUMA node with hwloc */
  MMB_PROVIDER_PINNED,   /**< page-locked host memory (cudaHostAlloc, or mmap + mlock) */
  MMB_PROVIDER_CUDA,     /**< CUDA device memory (cudaMalloc) */
  MMB_PROVIDER_FILE,     /**< files under MMB_STORAGE_DIR, mapped (the MMB_STORAGE layer) */
  MMB_PROVIDER_USER = 16 /**< first value handed out by mmb_provider_register */
} mmbProviderType;

/** How obtained bytes are managed. */
typedef enum mmbStrategyType {
  MMB_STRATEGY_DEFAULT,  /**< basic */
  MMB_STRATEGY_BASIC,    /**< every allocation is one trip to the provider */
  MMB_STRATEGY_POOL      /**< a caching, size-binned pool */
} mmbStrategyType;

/** How data will be accessed: READ copies data in when a duplicate or a
    migration is made, WRITE alone does not (the new copy starts undefined). */
typedef enum mmbAccessType { MMB_READ = 1, MMB_WRITE = 2, MMB_READ_WRITE = 3 } mmbAccessType;
/** Which dimension is contiguous: the last (row-major, C) or the first
    (column-major, Fortran). */
typedef enum mmbLayoutOrder { MMB_ROWMAJOR, MMB_COLMAJOR } mmbLayoutOrder;
/** What an element is; SUM, MIN and MAX merges need one other than BYTES. */
typedef enum mmbElementType {
  MMB_TYPE_BYTES, MMB_TYPE_FLOAT, MMB_TYPE_DOUBLE, MMB_TYPE_INT32, MMB_TYPE_INT64
} mmbElementType;
/** How a duplicate is folded back into its origin. */
typedef enum mmbMergeType {
  MMB_MERGE_OVERWRITE,  /**< origin = duplicate */
  MMB_MERGE_SUM,        /**< origin += duplicate */
  MMB_MERGE_MIN,        /**< origin = duplicate < origin ? duplicate : origin */
  MMB_MERGE_MAX         /**< origin = duplicate > origin ? duplicate : origin */
} mmbMergeType;
/** The order in which a tile iterator visits the tile grid. */
typedef enum mmbTileSchedule {
  MMB_SCHEDULE_ROWMAJOR,  /**< the last grid dimension fastest */
  MMB_SCHEDULE_COLMAJOR,  /**< the first grid dimension fastest */
  MMB_SCHEDULE_MORTON,    /**< Z-order: tiles close in the grid are close in time */
  MMB_SCHEDULE_CUSTOM     /**< the caller's: mmbTileIteratorOptions.order or .order_fn */
} mmbTileSchedule;
/** What runs a queue's work. */
typedef enum mmbQueueBackend {
  MMB_QUEUE_AUTO,         /**< a CUDA stream when a device exists, else a thread */
  MMB_QUEUE_THREAD,       /**< a worker thread of mmb's */
  MMB_QUEUE_CUDA_STREAM   /**< a CUDA stream (host work runs as host functions on it) */
} mmbQueueBackend;

/** Log levels; MMB_LOG_DEFAULT means "MMB_LOG_LEVEL from the environment, else warn". */
typedef enum mmbLogLevel {
  MMB_LOG_DEFAULT, MMB_LOG_OFF, MMB_LOG_ERROR, MMB_LOG_WARN, MMB_LOG_INFO, MMB_LOG_DEBUG
} mmbLogLevel;

/** Options of mmb_init. */
typedef struct mmbOptions {
  mmbLogLevel log_level;   /**< overrides MMB_LOG_LEVEL unless MMB_LOG_DEFAULT */
} mmbOptions;

/** Config of mmb_request_space. NULL or all-zero: the first space of the layer, full capacity. */
typedef struct mmbMemSpaceConfig {
  size_t size_limit;  /**< bytes this space may hold at once; 0 = the parent's capacity */
  int numa_node;      /**< host layers: the n-th space of that layer (0-based, as mmb-info lists them) */
  int device;         /**< GDRAM: the CUDA device ordinal (0-based) */
  const char *name;   /**< its name in statistics and traces (copied; at most 47 bytes; one
                           counter track per name, so keep names distinct); NULL: the
                           parent's name, ", limited" and a number, unique in the process */
} mmbMemSpaceConfig;

/** Config of mmb_request_interface. NULL or all-zero: default provider, basic strategy. */
typedef struct mmbMemInterfaceConfig {
  mmbProviderType provider;    /**< what allocates: DEFAULT = the space's own */
  mmbStrategyType strategy;    /**< how: DEFAULT = BASIC (every call to the provider) */
  unsigned flags;              /**< MMB_INTERFACE_THREAD_SAFE */
  size_t release_threshold;    /**< pool: once it holds more than this many bytes
                                    from the provider, wholly free segments go back;
                                    0 = keep them until mmb_interface_trim */
  unsigned copy_threads;       /**< host copies (and record conversions) of 4 MiB
                                    or more to or from this interface's memory are
                                    split over this many threads (1..64; the larger
                                    of both sides' asks); 0 = MMB_COPY_THREADS, else 1 */
  struct mmbMemSpace *fallback; /**< a preferred tier: when the space's out-of-memory
                                    chain (mmb/cache.h) cannot make room, an allocation
                                    is served from this space instead
                                    (mmb_allocation_space says where it landed; an
                                    array served there has its tiles placed back in
                                    this interface's space while they fit, by
                                    mmb_array_tile); NULL = strict */
  const void *provider_options; /**< the provider's own options, opaque to mmb: its init
                                    reads them (mmbProviderTarget.options); NULL = none */
} mmbMemInterfaceConfig;

/** The interface may be used from several threads at once. Without it, an
    interface belongs to one thread at a time. */
#define MMB_INTERFACE_THREAD_SAFE 0x1u

/** An arena: many allocations with one lifetime (mmb_region_create). */
typedef struct mmbRegion mmbRegion;

/** Options of mmb_allocate_opts. */
typedef struct mmbAllocateOptions {
  size_t alignment;   /**< a power of two; 0 = MMB_DEFAULT_ALIGNMENT */
  unsigned flags;     /**< MMB_ALLOC_ZERO */
  mmbRegion *region;  /**< place the allocation in this region (of the same
                           interface): its bytes go when the region is reset or
                           destroyed, and so does the handle; NULL = none */
} mmbAllocateOptions;

/** Zero the allocation's bytes before returning it. */
#define MMB_ALLOC_ZERO 0x1u
/** The alignment of an allocation when none is asked for (a cache line). */
#define MMB_DEFAULT_ALIGNMENT 64u
/** The largest alignment an allocation may ask for (1 GiB, a huge page). */
#define MMB_MAX_ALIGNMENT ((size_t)1 << 30)

/** Options of mmb_region_create. */
typedef struct mmbRegionOptions {
  size_t block_size;  /**< bytes per block, rounded up to 4 KiB; 0 = 1 MiB */
} mmbRegionOptions;
/** Padding of a layout: every row (the run along the contiguous dimension)
    starts at a multiple of row_alignment bytes from the array's start. */
typedef struct mmbLayoutPadding {
  size_t row_alignment;  /**< bytes: 0 = none, else a power of two and a multiple of the element size */
} mmbLayoutPadding;
/** A memory space: a tier of the node, or a caller's budget in one (mmb_request_space). */
typedef struct mmbMemSpace mmbMemSpace;

/** Options of mmb_queue_create; zero for defaults. */
typedef struct mmbQueueOptions {
  mmbQueueBackend backend;  /**< AUTO: a CUDA stream when a device exists, else a thread */
  int device;               /**< CUDA device of a stream queue */
  mmbMemSpace *near;        /**< thread queues: bind the worker near this space's memory
                                 (its NUMA node, with hwloc); NULL = unbound */
  void *native;             /**< stream queues: an existing native queue (a cudaStream_t on
                                 `device`) for mmb to run on instead of a stream of its own;
                                 mmb never destroys it. NULL = mmb makes one. With AUTO it
                                 asks for a stream queue. */
} mmbQueueOptions;
/** A request: the caller's; {0} (or {NULL}) means "no request". */
typedef struct mmbRequest {
  void *impl;   /**< mmb's: a handle with a generation; never dereference it */
} mmbRequest;

/** Statistics of an interface or a space (names follow cudaMemPool's attributes). */
typedef struct mmbStats {
  size_t used_current;                  /**< bytes handed out to callers, now */
  size_t used_high;                     /**< ... at most, so far */
  size_t reserved_current;              /**< bytes held from the provider, now */
  size_t reserved_high;                 /**< ... at most, so far */
  unsigned long long n_allocs;          /**< allocations served */
  unsigned long long n_frees;           /**< frees served */
  unsigned long long n_provider_allocs; /**< trips to the provider: allocations */
  unsigned long long n_provider_frees;  /**< trips to the provider: frees */
  unsigned long long n_failed;          /**< allocations refused (OOM, limit) */
} mmbStats;

/* Opaque handles (and mmbMemSpace, above). */
/** An allocator on a space: a provider and a strategy (mmb_request_interface). */
typedef struct mmbMemInterface mmbMemInterface;
/** Bytes allocated by an interface (mmb_allocate). */
typedef struct mmbAllocation mmbAllocation;
/** How an array's elements lie in memory (mmb_layout_create_regular_nd). */
typedef struct mmbLayout mmbLayout;
/** An N-dimensional array with a layout and a home (mmb_array_create). */
typedef struct mmbArray mmbArray;
/** A walk over an array's tiles (mmb_tile_iterator_create). */
typedef struct mmbTileIterator mmbTileIterator;
/** Where asynchronous work runs in order: a thread or a CUDA stream (mmb_queue_create). */
typedef struct mmbQueue mmbQueue;

/** A custom schedule (MMB_SCHEDULE_CUSTOM) as a function: for `position`
    0, 1, 2, ... of the walk over a grid of `grid` tiles, writes the grid
    index of the tile to visit there into *out_tile and returns true, or
    returns false after the last one. mmb calls it at creation only, for
    each position in turn, at most tiles + 1 times; meanwhile the array
    counts the iterator as live (destroying or re-tiling it is MMB_BUSY). */
typedef bool (*mmbTileOrderFn)(void *arg, const mmbDimensions *grid, size_t position,
                               mmbIndex *out_tile);

/** Options of mmb_tile_iterator_create; zero for a plain row-major walk.
    With `queue` and `space` set the iterator prefetches: it duplicates the
    next `depth` tiles into `space` on `queue` while the caller works on the
    current one, hands out the duplicates, and merges (or, read-only,
    releases) each behind the caller. With `space` alone it walks through
    the space's tile cache (mmb/cache.h): it acquires each tile there with
    `access`, advises the next `depth` of the schedule MMB_ADVICE_WILLNEED,
    hands out the cached copies, and releases each behind the caller. */
typedef struct mmbTileIteratorOptions {
  mmbTileSchedule schedule; /**< the order of the tiles */
  mmbQueue *queue;          /**< prefetch on this queue (NULL: no prefetch) */
  mmbMemSpace *space;       /**< into this space (with a queue it must hold depth + 2 tiles;
                                 without one, through its tile cache) */
  size_t depth;             /**< tiles ahead of the current one; 0 = 1 */
  mmbAccessType access;     /**< of the duplicates; 0 = MMB_READ (released, not merged) */
  mmbMergeType merge;       /**< how written duplicates fold back (0 = overwrite) */
  const size_t *order;      /**< MMB_SCHEDULE_CUSTOM: the tiles to visit, in order, by
                                 row-major grid position (0 .. tiles - 1), each once */
  size_t order_length;      /**< entries of `order`: 1 .. tiles */
  mmbTileOrderFn order_fn;  /**< MMB_SCHEDULE_CUSTOM without `order`: the tiles by position */
  void *order_arg;          /**< order_fn's first argument */
} mmbTileIteratorOptions;

/**
 * A tile: a rectangular block of an array, or a duplicate of one. Its fields
 * are public and read-only; they describe where its data is now (its home
 * storage, a migrated copy or a duplicate's storage) and change when the tile
 * migrates. Index it with the MMB_TILE_AT_* macros, in absolute array indices.
 */
typedef struct mmbArrayTile {
  size_t rank;                  /**< the array's rank */
  size_t element_size;          /**< bytes per element */
  size_t lower[MMB_MAX_DIMS];   /**< first absolute index, inclusive  */
  size_t upper[MMB_MAX_DIMS];   /**< last absolute index, exclusive   */
  size_t dim[MMB_MAX_DIMS];     /**< upper - lower                    */
  size_t stride[MMB_MAX_DIMS];  /**< in elements, in current storage  */
  void *ptr;                    /**< element at lower[], current storage */
  mmbMemSpace *space;           /**< where ptr lives                  */
  /* private fields follow: a tile is only ever made by mmb */
} mmbArrayTile;

/** The most fields a record may have (mmb_layout_create_record). */
#define MMB_MAX_FIELDS 16

/** Where one field of a tile's or an array's elements lives: the field of
    the first element at ptr, the next along dimension k byte_stride[k]
    bytes further (any storage: AoS, SoA or a regular layout, whose one
    field is the element). */
typedef struct mmbField {
  void *ptr;                          /**< the field of the first element */
  size_t size;                        /**< bytes of the field */
  size_t byte_stride[MMB_MAX_DIMS];   /**< bytes to the next element's field, per dimension */
} mmbField;

/** Element (i) of a 1-D tile, of type T, by absolute index. */
#define MMB_TILE_AT_1D(t, T, i)       (((T *)(t)->ptr)[((i)-(t)->lower[0])*(t)->stride[0]])
/** Element (i, j) of a 2-D tile, of type T, by absolute indices. */
#define MMB_TILE_AT_2D(t, T, i, j)    (((T *)(t)->ptr)[((i)-(t)->lower[0])*(t)->stride[0] + ((j)-(t)->lower[1])*(t)->stride[1]])
/** Element (i, j, k) of a 3-D tile, of type T, by absolute indices. */
#define MMB_TILE_AT_3D(t, T, i, j, k) (((T *)(t)->ptr)[((i)-(t)->lower[0])*(t)->stride[0] + ((j)-(t)->lower[1])*(t)->stride[1] + ((k)-(t)->lower[2])*(t)->stride[2]])

#ifdef __cplusplus
}
#endif

#endif /* MMB_TYPES_H */
