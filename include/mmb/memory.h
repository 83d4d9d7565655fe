/**
 * \file mmb/memory.h
 * The memory model: spaces (an addressable, size-limited instance of a memory
 * layer for an execution context), interfaces (a space + provider + strategy)
 * and their statistics.
 *
 * Spaces discovered at mmb_init live until the last mmb_finalize. A space
 * returned by mmb_request_space with a config is the caller's: it draws on
 * the discovered space (both count the bytes it holds) and is released with
 * mmb_space_release or at finalize.
 *
 * Thread safety: spaces may be shared freely. An interface belongs to one
 * thread at a time unless it was created with MMB_INTERFACE_THREAD_SAFE.
 */
#ifndef MMB_MEMORY_H
#define MMB_MEMORY_H

#include <mmb/export.h>
#include <mmb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What a space is, as mmb-info shows it. */
typedef struct mmbSpaceInfo {
  mmbMemLayer layer;              /**< DRAM, HBM, NVDIMM, GDRAM, STORAGE or a registered layer */
  mmbExecutionContext context;    /**< who uses it: CPU, or GPU_CUDA (GDRAM, pinned DRAM) */
  int numa_node;          /**< OS index of the NUMA node behind it, -1 for none */
  int device;             /**< CUDA device ordinal, -1 for none */
  int index;              /**< n-th space of its layer and context (mmbMemSpaceConfig.numa_node) */
  size_t capacity;        /**< bytes of physical memory behind it */
  size_t limit;           /**< bytes it may hold at once: the least of its capacity,
                               its size_limit and every cap above it (MMB_LIMIT_*) */
  mmbProviderType default_provider;   /**< what an interface uses when it names none */
  unsigned providers;     /**< bit (1u << type) for each built-in provider usable here */
  bool discovered;        /**< found at init, rather than made by mmb_request_space */
  bool emulated;          /**< a tier MMB_EMULATE made over DRAM (see mmb_init) */
  char name[48];          /**< e.g. "DRAM (NUMA 0)", "GDRAM (GPU 1)" */
  unsigned long long bandwidth;  /**< MiB/s, hwloc's best for its NUMA node, or the rate
                                      MMB_EMULATE's bw= holds its copies to; 0 unknown */
  unsigned long long latency;    /**< ns, hwloc's best for its NUMA node; 0 unknown */
} mmbSpaceInfo;

/**
 * The relative distance between the NUMA nodes behind two host spaces, from
 * the firmware's table as hwloc reads it (10 = the same node; the ACPI SLIT
 * scale).
 * \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_UNAVAILABLE when a space
 *         has no NUMA node (GDRAM) or the machine gives no distances;
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_distance(const mmbMemSpace *from, const mmbMemSpace *to,
                                                     unsigned *out_distance);

/**
 * The CUDA devices mmb found at init, and when there are none, why: "mmb
 * was built without CUDA", or the CUDA runtime's own error (no driver, no
 * device). \p out_reason may be NULL; it is set to NULL when there are
 * devices, else to a string valid until mmb_finalize.
 * \return MMB_OK; MMB_INVALID_ARG for a NULL \p out_devices; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_cuda_status(int *out_devices, const char **out_reason);

/**
 * Finds a space of \p layer for \p ctx.
 * \param layer  the memory layer.
 * \param ctx    MMB_EXECUTION_CONTEXT_DEFAULT: CPU for host layers, GPU_CUDA
 *               for GDRAM. (MMB_DRAM, MMB_GPU_CUDA) is pinned host memory.
 * \param cfg    NULL: the space registered for \p layer and \p ctx
 *               (mmb_register_memory), else the first such space, shared.
 *               Non-NULL: a new space of
 *               the caller's, drawing on the \p cfg->numa_node -th (host) or
 *               \p cfg->device -th (GDRAM) space, holding at most
 *               \p cfg->size_limit bytes (0 = no limit of its own).
 * \param out_space  receives the space.
 * \return MMB_OK; MMB_INVALID_ARG for NULL \p out_space, an unknown layer or
 *         context, a negative index; MMB_UNAVAILABLE if the node has no such
 *         space (no GPU, no HBM); MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_request_space(mmbMemLayer layer, mmbExecutionContext ctx,
                                      const mmbMemSpaceConfig *cfg, mmbMemSpace **out_space);

/**
 * Registers the space that mmb_request_space(\p layer, \p ctx, NULL, ...)
 * returns from now on (Mamba's mmb_register_memory): a space made as
 * mmb_request_space makes one from \p space_cfg, held by the library until
 * finalize, on which mmb_request_interface with no config uses
 * \p interface_cfg. Registering again with equal configs changes nothing
 * and returns MMB_OK, so every part of a code may register what it needs;
 * different configs replace the registration once nothing draws on the
 * registered space.
 * \param space_cfg      NULL or all-zero: the tier's first space, no limit
 *                       of its own.
 * \param interface_cfg  NULL: the defaults (system provider, basic strategy).
 * \return MMB_OK; MMB_INVALID_ARG for an unknown layer, context or flags, a
 *         negative index, a bad name; MMB_UNAVAILABLE if the node has no such
 *         space; MMB_BUSY while an interface draws on the space registered
 *         with other configs, or, when one is registered, from an
 *         out-of-memory handler a cache's fetch reached (mmbOomHandler);
 *         MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_register_memory(mmbMemLayer layer, mmbExecutionContext ctx,
                                        const mmbMemSpaceConfig *space_cfg,
                                        const mmbMemInterfaceConfig *interface_cfg);

/**
 * Releases a space made by mmb_request_space with a config. Discovered
 * and registered spaces are the library's: releasing one does nothing and
 * returns MMB_OK. The space's tile cache (mmb/cache.h) goes with it.
 * \return MMB_OK; MMB_INVALID_ARG for NULL; MMB_BUSY while an interface or a
 *         space requested on it lives, or copies of tiles are cached in it,
 *         or from an out-of-memory handler a cache's fetch reached
 *         (mmbOomHandler); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_release(mmbMemSpace *space);

/** Number of discovered spaces. \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_count(size_t *count);

/** The \p i -th discovered space. \return MMB_OK; MMB_INVALID_ARG if NULL or
    \p i >= count; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_at(size_t i, mmbMemSpace **out_space);

/** The layer of \p space. \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED.
    (A name fixed before the mmb_X_get_Y convention, kept as programs use it.) */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_layer(const mmbMemSpace *space, mmbMemLayer *out_layer);

/** Bytes \p space may hold at once (mmbSpaceInfo.limit).
    \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED. (A name fixed before the
    mmb_X_get_Y convention, kept as programs use it.) */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_capacity(const mmbMemSpace *space, size_t *out_bytes);

/** Everything about \p space. \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_get_info(const mmbMemSpace *space, mmbSpaceInfo *out_info);

/**
 * Statistics of every byte drawn from \p space, through any interface, and
 * through the spaces requested on it. Everything is exact except used_high
 * when several interfaces draw on the space at once: it is then the largest
 * of each interface's used_high and of the total seen at every provider trip
 * and every read.
 * \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_get_stats(const mmbMemSpace *space, mmbStats *out);

/**
 * Makes an interface: allocations from \p space through a provider and a
 * strategy.
 *
 * MMB_STRATEGY_POOL caches what is freed (on any provider: a pooled device
 * interface stops calling cudaMalloc/cudaFree once warm). Blocks up to 2 KiB
 * (alignment up to 64) come from 64 KiB slabs of one size class (64 B apart
 * up to 512 B, then no more than 25% apart); larger sizes round up to
 * 512 B; requests up to 1 MiB share 2 MiB segments, larger ones 20 MiB
 * segments, and from 10 MiB each has a segment of its own; the best fitting
 * free block is split, and freed neighbours coalesce. Wholly free segments go
 * back to the provider once the interface holds more than release_threshold
 * bytes (0: never, until mmb_interface_trim).
 *
 * Without MMB_INTERFACE_THREAD_SAFE an interface belongs to one thread at a
 * time. With it, any thread may allocate and free; a pool then gives every
 * thread a small cache of freed blocks up to 32 KiB (at most 64 KiB per size,
 * 256 KiB per small size class, kept when the thread exits for the next
 * thread to adopt).
 * \param cfg  NULL or zeroed: the space's default provider (system for CPU
 *             host spaces, pinned for (DRAM, GPU_CUDA), cuda for GDRAM), basic
 *             strategy, one thread at a time.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, unknown flags or an unknown
 *         provider or strategy; MMB_UNSUPPORTED if the provider cannot serve
 *         this space or the strategy is not available; MMB_OUT_OF_MEMORY;
 *         the provider's own init error; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_request_interface(mmbMemSpace *space, const mmbMemInterfaceConfig *cfg,
                                          mmbMemInterface **out_interface);

/**
 * Destroys an interface that holds no live allocation, region or wrapped array.
 * \return MMB_OK; MMB_INVALID_ARG for NULL; MMB_BUSY while allocations
 *         (arrays' homes among them), regions or arrays wrapped on it live,
 *         or from an out-of-memory handler run for an allocation from it
 *         (nothing changes); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_interface_destroy(mmbMemInterface *interface);

/** The space of \p interface. \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_interface_get_space(const mmbMemInterface *interface, mmbMemSpace **out_space);
/** Deprecated: the former name of mmb_interface_get_space, kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_interface_get_space")
mmbError mmb_interface_space(const mmbMemInterface *interface, mmbMemSpace **out_space);

/** The provider type serving \p interface. \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_interface_get_provider(const mmbMemInterface *interface, mmbProviderType *out_type);
/** Deprecated: the former name of mmb_interface_get_provider, kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_interface_get_provider")
mmbError mmb_interface_provider(const mmbMemInterface *interface, mmbProviderType *out_type);

/**
 * Statistics of \p interface. Bytes that regions hold count as used. All
 * exact, but for used_high of a thread-safe interface used by several threads:
 * the largest total seen when a thread cache met the shared pool, at a read,
 * or one thread's own peak.
 * \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_interface_get_stats(const mmbMemInterface *interface, mmbStats *out);

/** Resets used_high and reserved_high of \p interface to their current values.
    \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_interface_reset_high(mmbMemInterface *interface);

/**
 * Gives cached memory back to the provider until the interface holds at most
 * \p min_bytes_to_keep bytes from it, or nothing cached is left (like
 * cudaMemPoolTrimTo): the free blocks of regions, the calling thread's cache
 * and those of exited threads, then wholly free pool segments. Blocks in use
 * are never touched. The basic strategy caches only region blocks.
 * \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_interface_trim(mmbMemInterface *interface, size_t min_bytes_to_keep);

/** "DRAM", "HBM", "NVDIMM", "GDRAM", "STORAGE", a registered layer's name
    (mmb_layer_register); "unknown" otherwise. */
MMB_EXPORT const char *mmb_layer_name(mmbMemLayer layer);

/** The most layers a program may register (mmb_layer_register). */
#define MMB_USER_LAYERS_MAX 8
/** Room for a registered layer's name, its NUL included. */
#define MMB_LAYER_NAME_MAX 16

/** What a layer of the user's is (mmb_layer_register); zero for defaults. */
typedef struct mmbLayerProperties {
  mmbMemLayer backing;          /**< the built-in host layer whose memory it uses:
                                     MMB_DRAM (0), MMB_HBM or MMB_NVDIMM */
  int numa_node;                /**< which space of that layer, 0-based (as
                                     mmbMemSpaceConfig.numa_node) */
  size_t capacity;              /**< bytes it may hold; 0: the backing space's */
  unsigned long long bandwidth; /**< MiB/s, a hint placement and mmb-info show; 0: the
                                     backing space's */
  unsigned long long latency;   /**< ns, likewise */
  bool device_only;             /**< not host accessible: only providers of the user's
                                     (mmb_provider_register, serving every layer) serve it;
                                     the first registered is its default provider */
} mmbLayerProperties;

/**
 * Registers a memory layer of the user's (CXL-attached memory, a remote
 * pool, a budget carved out of DRAM): it gets the next layer number, a
 * space of its own (info.layer that number, named "<name> (NUMA n)") that
 * mmb_request_space, mmb_register_memory, interfaces, arrays, the tile
 * cache, statistics, traces and mmb_layer_name treat as a built-in one's,
 * and a limit MMB_LIMIT_<name> read now. Host layers are served by the
 * providers of their backing layer (the system provider, by default);
 * device_only ones by user providers (those whose mmbProviderOps.layers is
 * 0). Register layers at startup, before other threads use mmb (the list of
 * spaces grows); they last until mmb_finalize. MMB_LAYERS registers layers
 * at init ("NAME:BACKING[:INDEX[:SIZE]]", comma-separated), so tools such
 * as mmb-info show them.
 * \param name  1 to MMB_LAYER_NAME_MAX - 1 letters, digits or '_', not a
 *              layer's name already (case aside).
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, a bad or taken name, a backing
 *         layer that is not a host one, a negative index, a bad
 *         MMB_LIMIT_<name>; MMB_UNAVAILABLE when the backing space does not
 *         exist; MMB_OUT_OF_MEMORY past MMB_USER_LAYERS_MAX layers;
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_layer_register(const char *name, const mmbLayerProperties *properties,
                                       mmbMemLayer *out_layer);

/** The layer named \p name (built-in or registered; case aside).
    \return MMB_OK; MMB_INVALID_ARG for NULLs or no such layer; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_layer_find(const char *name, mmbMemLayer *out_layer);
/** "default", "CPU", "GPU_CUDA"; "unknown" otherwise. */
MMB_EXPORT const char *mmb_context_name(mmbExecutionContext ctx);
/** "system", "pinned", "cuda", a registered provider's name; "unknown" otherwise. */
MMB_EXPORT const char *mmb_provider_name(mmbProviderType type);

#ifdef __cplusplus
}
#endif

#endif /* MMB_MEMORY_H */
