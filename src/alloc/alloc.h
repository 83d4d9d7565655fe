/* Internal: the memory model's objects and the contracts between the files of
   src/alloc and the providers. Lock order: interface lock -> registry lock;
   the space list lock is never held while calling a provider. */
#ifndef MMB_ALLOC_INTERNAL_H
#define MMB_ALLOC_INTERNAL_H

#include "../core/core.h"

#include <pthread.h>
#include <stdatomic.h>

/* ---- spaces (space.c) --------------------------------------------------- */

/* Space counters are atomics: interfaces of one space may live on different
   threads. A charge walks the chain space -> parent -> ... -> layer root. */
typedef struct mmb__space_counters {
  _Atomic size_t used, used_high, reserved, reserved_high;
  _Atomic unsigned long long n_allocs, n_frees, n_provider_allocs, n_provider_frees, n_failed;
} mmb__space_counters;

struct mmbMemSpace {
  mmbSpaceInfo info;        /* info.limit is recomputed by mmb__space_limit */
  size_t own_limit;         /* SIZE_MAX: none of its own */
  mmbMemSpace *parent;      /* the budget it draws on; NULL for a layer root */
  mmb__space_counters c;
  _Atomic size_t n_users;   /* interfaces and requested spaces drawing on it */
  mmbMemSpace *next;        /* discovered list, or the requested list */
};

/* Adds a discovered space (topology.c calls it at init). */
mmbError mmb__space_add(const mmbSpaceInfo *info, mmbMemSpace *parent, mmbMemSpace **out);
mmbMemSpace *mmb__layer_root(mmbMemLayer layer);
mmbError mmb__spaces_init(void);     /* reads MMB_LIMIT_* */
void mmb__spaces_finalize(void);
size_t mmb__space_limit(const mmbMemSpace *space);
/* Reserve/unreserve provider bytes along the chain; false = a limit refused. */
bool mmb__space_reserve(mmbMemSpace *space, size_t n);
void mmb__space_unreserve(mmbMemSpace *space, size_t n);
/* Counts a completed trip to the provider (and the reserved high watermark). */
void mmb__space_count_trip(mmbMemSpace *space, bool alloc);
void mmb__space_count_use(mmbMemSpace *space, size_t n, bool alloc);
void mmb__space_count_failure(mmbMemSpace *space);
/* Number of CUDA devices found at init (0 without CUDA or without a driver). */
int mmb__cuda_device_count(void);

/* ---- topology (topology.c) ---------------------------------------------- */
#include <hwloc.h>
hwloc_topology_t mmb__topology(void);
int mmb__numa_node_count(void);
mmbError mmb__topology_discover(void);   /* fills the discovered spaces */
void mmb__topology_finalize(void);

/* ---- CUDA runtime, reached without CUDA headers ------------------------- */
/* Provided by providers/cuda when built with CUDA; NULL otherwise. */
typedef struct mmb__cuda_runtime {
  int (*device_count)(void);                    /* 0 without device or driver */
  mmbError (*mem_info)(int device, size_t *free_bytes, size_t *total_bytes);
  mmbError (*host_alloc)(size_t size, void **out);     /* cudaHostAlloc, portable */
  void (*host_free)(void *ptr);
  mmbError (*host_register)(void *ptr, size_t size);   /* cudaHostRegister, portable */
  void (*host_unregister)(void *ptr);
} mmb__cuda_runtime;
extern const mmb__cuda_runtime *const mmb__cuda;

/* ---- providers (provider.c) --------------------------------------------- */
typedef struct mmb__provider {
  const mmbProviderOps *ops;
  void *state;
  mmbProviderType type;
} mmb__provider;

extern const mmbProviderOps mmb__system_provider;
extern const mmbProviderOps mmb__pinned_provider;
extern const mmbProviderOps mmb__cuda_provider;
const mmbProviderOps *mmb__provider_lookup(mmbProviderType type);
bool mmb__provider_serves(const mmbProviderOps *ops, mmbProviderType type, const mmbMemSpace *space);
void mmb__providers_finalize(void);

/* ---- allocations and the registry (registry.c) -------------------------- */
enum { MMB__HANDLE_FREE = 0x0fee, MMB__HANDLE_LIVE = 0x11fe, MMB__HANDLE_FREEING = 0xdead };

struct mmbAllocation {
  _Atomic uint32_t state;
  uint32_t flags;
  mmbMemInterface *interface;
  void *ptr;
  size_t size;              /* bytes asked for */
  size_t alignment;
  size_t reserved;          /* bytes held for it from the provider */
  void *block;              /* the strategy's own record */
  mmbAllocation *next;      /* free-handle list */
};

typedef struct mmb__handle_cache {
  mmbAllocation *head;
  size_t count;
} mmb__handle_cache;

/* A handle costs no malloc: handles come from slabs that are never unmapped
   while the library is initialised, so checking a freed handle is safe. */
mmbAllocation *mmb__handle_take(mmb__handle_cache *cache);
void mmb__handle_give(mmb__handle_cache *cache, mmbAllocation *a);
void mmb__handle_cache_flush(mmb__handle_cache *cache);
/* True and the handle is now FREEING if `a` is a live handle of ours. */
bool mmb__handle_claim(mmbAllocation *a);
bool mmb__handle_is_live(const mmbAllocation *a);
void mmb__registry_finalize(void);
/* Calls fn on every live handle (finalize uses it to release leaks). */
void mmb__registry_for_each_live(void (*fn)(mmbAllocation *a));

/* ---- interfaces and strategies (interface.c, basic.c) ------------------- */
typedef struct mmb__strategy_ops {
  const char *name;
  mmbError (*init)(mmbMemInterface *iface);                  /* optional */
  void (*finalize)(mmbMemInterface *iface);                  /* optional */
  /* a->size and a->alignment are set; fills a->ptr, a->reserved, a->block. */
  mmbError (*alloc)(mmbMemInterface *iface, mmbAllocation *a, unsigned flags);
  void (*free)(mmbMemInterface *iface, mmbAllocation *a);
  void (*trim)(mmbMemInterface *iface, size_t keep);         /* optional */
} mmb__strategy_ops;

extern const mmb__strategy_ops mmb__basic_strategy;

struct mmbMemInterface {
  mmbMemSpace *space;
  mmb__provider provider;
  const mmb__strategy_ops *strategy;
  void *strategy_state;
  unsigned flags;
  size_t release_threshold;
  pthread_mutex_t lock;        /* taken only with MMB_INTERFACE_THREAD_SAFE */
  mmbStats stats;              /* exact, guarded like the strategy */
  mmb__handle_cache handles;
  mmbMemInterface *next, *prev;
};

static inline void mmb__iface_lock(mmbMemInterface *i) {
  if (i->flags & MMB_INTERFACE_THREAD_SAFE) pthread_mutex_lock(&i->lock);
}
static inline void mmb__iface_unlock(mmbMemInterface *i) {
  if (i->flags & MMB_INTERFACE_THREAD_SAFE) pthread_mutex_unlock(&i->lock);
}
static inline bool mmb__iface_host_accessible(const mmbMemInterface *i) {
  return i->provider.ops->caps & MMB_PROVIDER_HOST_ACCESSIBLE;
}

/* A trip to the provider: fault injection, the space's limits, stats. */
mmbError mmb__provider_alloc(mmbMemInterface *iface, size_t size, size_t alignment,
                             unsigned flags, void **out);
void mmb__provider_free(mmbMemInterface *iface, void *ptr, size_t size, size_t alignment);
void mmb__interfaces_finalize(void);
/* Releases a live allocation through its strategy and retires the handle;
   the caller holds the interface lock and has claimed the handle. */
void mmb__allocation_release(mmbAllocation *a);

/* ---- the copy engine (engine.c) ----------------------------------------- */
/* Host-to-host strided copies. ndims >= 1, dims[0] in bytes; stride[k] is the
   byte distance between consecutive indices of dim k (stride[0] unused). */
void mmb__engine_copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                         size_t width, size_t height);
void mmb__engine_copy_nd(char *dst, const size_t *dstride, const char *src,
                         const size_t *sstride, size_t ndims, const size_t *dims);

#endif /* MMB_ALLOC_INTERNAL_H */
