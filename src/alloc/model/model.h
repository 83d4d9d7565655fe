/* Internal, the allocation layer's first sub-floor: the memory model.
   Spaces and their limits (space.c), the providers' table (provider.c),
   discovery (discovery.c), allocations' records and handles (registry.c),
   and the interface: its fields, its counters, and the table of operations
   its strategy fills (strategy/). Nothing here calls a floor above it.
   Lock order: interface lock -> interface list lock -> registry lock; the
   space list lock is never held while calling a provider. */
#ifndef MMB_ALLOC_MODEL_H
#define MMB_ALLOC_MODEL_H

#include "os/internal.h"

#include <pthread.h>
#include <stdatomic.h>

struct mmb__fence;   /* strategy/strategy.h: queue work an allocation must outlast */
struct pool_cache;   /* strategy/pool.h */

/* ---- spaces (space.c) --------------------------------------------------- */

/* Space counters that change only on slow paths (provider trips, failures)
   are atomics charged along the chain space -> parent -> ... -> layer root;
   used bytes and call counts are merged from the interfaces when read. */
typedef struct mmb__space_counters {
  _Atomic size_t reserved, reserved_high, used_high;   /* used_high: sampled */
  _Atomic unsigned long long n_provider_allocs, n_provider_frees, n_failed;
  /* what interfaces that drew on it left behind when they were destroyed */
  _Atomic unsigned long long retired_allocs, retired_frees;
} mmb__space_counters;

struct mmbMemSpace {
  mmbSpaceInfo info;        /* info.limit is recomputed by mmb__space_limit */
  int served_as;            /* the layer whose providers serve it (mmb__layer_served_as) */
  size_t own_limit;         /* SIZE_MAX: none of its own */
  mmbMemSpace *parent;      /* the budget it draws on; NULL for a layer root */
  mmb__space_counters c;
  _Atomic size_t n_users;   /* interfaces and requested spaces drawing on it */
  size_t throttle;          /* MMB_EMULATE's bw=: bytes/s copies to or from it may take; 0 none */
  _Atomic uint64_t link_free_ns;   /* throttled: when its link has carried what it was given */
  mmbMemSpace *next;        /* discovered list, or the requested list */
  /* mmb_register_memory: the space is the library's (release does nothing),
     made from reg_cfg (reg_cfg.name points at reg_name), and interfaces asked
     for with no config on it get interface_cfg. */
  bool registered;
  mmbMemSpaceConfig reg_cfg;
  char reg_name[48];
  mmbMemInterfaceConfig interface_cfg;
  /* the out-of-memory chain (mmb/cache.h): its handlers (guarded by the
     handlers' lock in space.c) and its counters */
  struct { mmbOomHandler fn; void *arg; } oom[8];
  unsigned n_oom;
  _Atomic uint64_t oom_rounds, handler_calls, fallback_bytes;
  /* its entry in the running trace (guarded by the trace's lock): valid
     while trace_epoch is the trace's; a new space starts at 0, none */
  unsigned trace_slot;
  uint64_t trace_epoch;
};

/* The one hook a higher floor may set, called twice by mmb_space_release
   (and by mmb_register_memory for the space it replaces): before it checks
   that the space is unused, with gone false (the tile layer lets go of the
   idle interface its duplicates draw on; an error refuses the release, and
   nothing changes), and once the space is unlinked, before its object is
   freed, with gone true (its tile cache goes; what it returns then is not
   looked at). Set by the lifecycle. */
void mmb__space_set_release_hook(mmbError (*hook)(mmbMemSpace *space, bool gone));
/* The out-of-memory chain: the floor above's part (the tile cache: step 0
   drops clean copies cached in or under `space`, step 1 writes dirty ones
   home and drops them; true when something went), set by the lifecycle;
   and the space's handlers, called once each for one round (true when one
   said MMB_OOM_RETRY). */
void mmb__space_set_oom_hook(bool (*hook)(mmbMemSpace *space, int step));
bool mmb__space_oom_hook(mmbMemSpace *space, int step);
bool mmb__space_oom_handlers(mmbMemSpace *space, size_t need, unsigned attempt);
/* Layers: built-in or registered (mmb_layer_register) ones; the layer
   whose providers serve a layer's memory (-1: only providers serving every
   layer); a layer by name (case aside); registering one (its name and
   root; discovery.c adds its space) and taking the last back. */
#define MMB__LAYERS (MMB_MEMLAYER_MAX + MMB_USER_LAYERS_MAX)
bool mmb__layer_known(mmbMemLayer layer);
int mmb__layer_served_as(mmbMemLayer layer);
bool mmb__layer_lookup(const char *name, mmbMemLayer *out);
mmbError mmb__layer_add(const char *func, const char *name, const mmbLayerProperties *props,
                        mmbMemLayer *out);
void mmb__layer_remove_last(void);
/* The index-th discovered space of a layer and context, or NULL. */
mmbMemSpace *mmb__space_find_discovered(mmbMemLayer layer, mmbExecutionContext ctx, int index);
/* Adds a discovered space (discovery.c calls it at init). */
mmbError mmb__space_add(const mmbSpaceInfo *info, mmbMemSpace *parent, mmbMemSpace **out);
mmbError mmb__spaces_init(void);     /* reads MMB_LIMIT_* */
void mmb__spaces_finalize(void);
size_t mmb__space_limit(const mmbMemSpace *space);
/* Reserve/unreserve provider bytes along the chain; false = a limit refused. */
bool mmb__space_reserve(mmbMemSpace *space, size_t n);
void mmb__space_unreserve(mmbMemSpace *space, size_t n);
/* Bytes the limits along the chain still leave: the least of each level's
   limit (or capacity) less what it has reserved. A hint, since other
   threads reserve too. */
size_t mmb__space_room(const mmbMemSpace *space);
/* Counts a completed trip to the provider (and the reserved high watermark). */
void mmb__space_count_trip(mmbMemSpace *space, bool alloc);
void mmb__space_count_failure(mmbMemSpace *space);
/* Raises a high watermark to value (a CAS loop; any thread). */
void mmb__raise_high(_Atomic size_t *high, size_t value);
/* True if `ancestor` is space or one of the spaces it draws on. */
bool mmb__space_draws_on(const mmbMemSpace *space, const mmbMemSpace *ancestor);
/* The epoch of the threads' notes (pool.h: mmb__note): it moves whenever
   what a note may name goes (an interface's pool, a thread's cache) or a
   trace starts, and every note taken before is stale. Kept here, under
   the pool and the trace, so that both move it and neither calls the
   other. */
extern _Atomic uint64_t mmb__note_epoch __attribute__((visibility("hidden")));
static inline void mmb__notes_stale(void) { atomic_fetch_add(&mmb__note_epoch, 1); }
/* ---- providers (provider.c) --------------------------------------------- */
typedef struct mmb__provider {
  const mmbProviderOps *ops;
  void *state;
  mmbProviderType type;
} mmb__provider;

/* Puts a built-in provider in the table (the lifecycle, at init). */
void mmb__provider_install(mmbProviderType type, const mmbProviderOps *ops);
const mmbProviderOps *mmb__provider_lookup(mmbProviderType type);
bool mmb__provider_serves(const mmbProviderOps *ops, mmbProviderType type, const mmbMemSpace *space);
/* A space's default provider: its own, or for a device-only layer's (none
   of its own) the first provider of the user's that serves it;
   MMB_PROVIDER_DEFAULT while there is none. */
mmbProviderType mmb__provider_default(const mmbMemSpace *space);
/* Forgets every provider, built-in and registered (finalize). */
void mmb__providers_finalize(void);
/* Makes the discovered spaces: hwloc's NUMA nodes, CUDA's devices (discovery.c). */
mmbError mmb__spaces_discover(void);

/* ---- allocations and the registry (registry.c) -------------------------- */
enum {
  MMB__HANDLE_FREE = 0x0fee,
  MMB__HANDLE_LIVE = 0x11fe,      /* handed to a caller */
  MMB__HANDLE_FREEING = 0xdead,   /* claimed by mmb_free */
  MMB__HANDLE_INTERNAL = 0x1b10,  /* a region's block: never a caller's */
};

/* One cache line, aligned (the registry's range is page aligned): freeing a
   block touches one line of its handle, not two. */
struct mmbAllocation {
  _Atomic uint32_t state;
  uint16_t flags;
  uint8_t align_log2;       /* log2 of the alignment asked for */
  uint8_t bin;              /* MMB__QUICK: the pool's quick bin of its block */
  mmbMemInterface *interface;
  void *ptr;
  size_t size;              /* bytes asked for */
  size_t reserved;          /* bytes held for it (a pool block's size) */
  void *block;              /* the strategy's record; a region for region allocations */
  mmbAllocation *next;      /* free-handle list; a region's list of live handles;
                               the interface's deferred list */
  union {
    struct mmb__fence *fences;   /* queue work it must outlast (deferred.c); a region's
                                    allocations have none */
    mmbAllocation *prev;         /* MMB__IN_REGION: the region's list of live handles */
  };
};
_Static_assert(sizeof(mmbAllocation) == 64, "a handle is one cache line");

static inline size_t mmb__handle_alignment(const mmbAllocation *a) {
  return (size_t)1 << a->align_log2;
}
static inline uint8_t mmb__log2(size_t pow2) { return (uint8_t)__builtin_ctzll(pow2); }

typedef struct mmb__handle_cache {
  mmbAllocation *head;
  size_t count;
} mmb__handle_cache;

/* A handle costs no malloc: handles live in a range that is never unmapped
   while the library is initialised, so checking a freed handle is safe. */
mmbAllocation *mmb__handle_take(mmb__handle_cache *cache);
void mmb__handle_give(mmb__handle_cache *cache, mmbAllocation *a);
void mmb__handle_cache_flush(mmb__handle_cache *cache);
/* Whether a (a caller's handle, or a record) names a record of the
   registry's range; nothing is read. */
bool mmb__handle_is_ours(const mmbAllocation *a);

/* Generations. A caller's handle is its record's address with the record's
   generation in the top 16 bits (addresses mmap gives are below 2^47 on
   every 64-bit Linux), and the record's state word carries the generation
   above its code. Each hand-out moves to the next generation, so a handle
   kept after its free stops matching as soon as the record serves another
   allocation, however soon (after 65536 hand-outs of one record a stale
   handle could match again). Inside mmb, records are used: mmb__record of
   either gives the record. */
#define MMB__GEN_SHIFT 48
#define MMB__STATE(gen, code) ((uint32_t)(gen) << 16 | (uint32_t)(code))
_Static_assert(sizeof(void *) == 8, "a handle's generation needs 64-bit addresses");
static inline mmbAllocation *mmb__record(const mmbAllocation *h) {
  return (mmbAllocation *)((uintptr_t)h & (((uintptr_t)1 << MMB__GEN_SHIFT) - 1));
}
/* The state a live record of the handle h has. */
static inline uint32_t mmb__live_state(const mmbAllocation *h) {
  return MMB__STATE((uintptr_t)h >> MMB__GEN_SHIFT, MMB__HANDLE_LIVE);
}
/* Makes the record a LIVE under its next generation: the caller's handle. */
static inline mmbAllocation *mmb__handle_live(mmbAllocation *a) {
  uint32_t gen = ((atomic_load_explicit(&a->state, memory_order_relaxed) >> 16) + 1) & 0xffffu;
  atomic_store_explicit(&a->state, MMB__STATE(gen, MMB__HANDLE_LIVE), memory_order_release);
  return (mmbAllocation *)((uintptr_t)a | (uintptr_t)gen << MMB__GEN_SHIFT);
}
/* A state word with its code replaced, its generation kept. */
static inline uint32_t mmb__state_as(uint32_t state, uint32_t code) {
  return (state & 0xffff0000u) | code;
}
/* The record's state code, its generation kept (by whoever owns it now). */
static inline void mmb__handle_set(mmbAllocation *a, uint32_t code) {
  uint32_t s = atomic_load_explicit(&a->state, memory_order_relaxed);
  atomic_store_explicit(&a->state, mmb__state_as(s, code), memory_order_release);
}
static inline uint32_t mmb__handle_code(const mmbAllocation *a) {
  return atomic_load_explicit(&a->state, memory_order_acquire) & 0xffffu;
}
static inline void mmb__handle_fill(mmbAllocation *a, mmbMemInterface *iface, size_t size,
                                    size_t alignment, size_t reserved, void *block) {
  a->interface = iface;
  a->flags = 0;
  a->size = size;
  a->align_log2 = mmb__log2(alignment ? alignment : 1);
  a->reserved = reserved;
  a->block = block;
}
/* The record of h when h is a live handle of the current generation; else
   NULL (NULL, not mmb's, freed, or freed and handed out again). */
mmbAllocation *mmb__handle_open(const mmbAllocation *h);
void mmb__registry_finalize(void);
/* Calls fn on every live handle (finalize uses it to release leaks). */
void mmb__registry_for_each_live(void (*fn)(mmbAllocation *a));

/* ---- counters (read and merged by observe/stats.c) ---------------------- */
/* Hot-path counters: written only by their owner (one thread, or whoever
   holds the interface lock) with relaxed loads and stores, which compile to
   plain increments; read by anyone, and merged when read. */
typedef struct mmb__counters {
  _Atomic size_t used, used_high;
  _Atomic unsigned long long n_allocs, n_frees;
} mmb__counters;

#define MMB__GET(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define MMB__SET(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)
#define MMB__ADD(x, d) MMB__SET(x, MMB__GET(x) + (d))

static inline void mmb__count_alloc(mmb__counters *c, size_t n) {
  size_t used = MMB__GET(c->used) + n;
  MMB__SET(c->used, used);
  if (used > MMB__GET(c->used_high)) MMB__SET(c->used_high, used);
  MMB__ADD(c->n_allocs, 1);
}
static inline void mmb__count_free(mmb__counters *c, size_t n) {
  MMB__SET(c->used, MMB__GET(c->used) - n);
  MMB__ADD(c->n_frees, 1);
}

/* Counters of several owners summed. A high watermark cannot be summed: it
   is exact when one owner did all the work, else sampled (see stats.c). */
typedef struct mmb__merged {
  size_t used, high_single;
  unsigned long long n_allocs, n_frees;
  unsigned owners;
} mmb__merged;

/* ---- interfaces ------------------------------------------------------------ */

typedef struct mmb__strategy_ops {
  const char *name;
  mmbError (*init)(mmbMemInterface *iface);                  /* optional */
  void (*finalize)(mmbMemInterface *iface);                  /* optional */
  /* Returns a handle with interface, ptr, size, alignment, reserved and block
     set, counted in the stats unless MMB__ALLOC_UNCOUNTED; its state is left
     to the caller. n and alignment are checked; alignment is a power of two. */
  mmbError (*allocate)(mmbMemInterface *iface, size_t n, size_t alignment, unsigned flags,
                       mmbAllocation **out);
  /* Takes back a handle `allocate` gave (the caller has claimed it). */
  void (*release)(mmbMemInterface *iface, mmbAllocation *a, unsigned flags);
  void (*trim)(mmbMemInterface *iface, size_t keep);         /* optional */
  /* Adds counters kept outside iface->c (thread caches). Optional. */
  void (*merge)(const mmbMemInterface *iface, mmb__merged *acc);
  void (*reset_high)(mmbMemInterface *iface);                /* optional, likewise */
} mmb__strategy_ops;

typedef struct mmb__region_cache mmb__region_cache;   /* region.c */

/* mmb_ptr_allocate's blocks that have a handle (ptr.c): pointer -> handle, open
   addressing; guarded like mmbMemInterface.c. */
typedef struct mmb__ptr_slot {
  void *key;   /* NULL: empty */
  mmbAllocation *val;
} mmb__ptr_slot;
typedef struct mmb__ptr_table {
  mmb__ptr_slot *slot;
  size_t cap, n;   /* cap: 0 or a power of two */
} mmb__ptr_table;
struct mmbMemInterface {
  mmbMemSpace *space;
  mmb__provider provider;
  const mmb__strategy_ops *strategy;
  void *strategy_state;
  /* The pool's quick bins when one thread owns them (an interface that is
     not thread-safe): the fast paths go straight to them. NULL otherwise. */
  struct pool_cache *quick;
  bool quick_threads;   /* a pool with a cache per thread (pool.h: mmb__pool_bins) */
  unsigned flags;
  size_t release_threshold;
  /* With MMB_INTERFACE_THREAD_SAFE: guards the strategy's shared state, c,
     the reserved counters and the region block cache. Lock order: interface
     lock -> interface list lock -> registry lock. */
  pthread_mutex_t lock;
  mmb__counters c;
  _Atomic size_t used_high_sampled;          /* see stats.c */
  _Atomic size_t reserved, reserved_high;    /* written under the lock */
  _Atomic unsigned long long n_provider_allocs, n_provider_frees, n_failed;
  _Atomic size_t n_regions;
  _Atomic size_t n_wrapped;                  /* live wrapped arrays made on it */
  unsigned copy_threads;                     /* mmbMemInterfaceConfig.copy_threads */
  mmb__region_cache *region_cache;           /* NULL until a region uses it */
  mmb__handle_cache handles;                 /* guarded like c */
  mmb__ptr_table ptrs;                       /* mmb_ptr_allocate's blocks with handles */
  mmbAllocation *deferred;                   /* freed, waiting on fences: guarded like c */
  _Atomic size_t n_deferred;
  mmbMemInterface *fallback;                 /* mmbMemInterfaceConfig.fallback's interface */
  _Atomic unsigned holds;                    /* mmb__interfaces_hold: teardown waits for 0 */
  mmbMemInterface *next, *prev;
};

static inline bool mmb__iface_ts(const mmbMemInterface *i) {
  return i->flags & MMB_INTERFACE_THREAD_SAFE;
}
static inline void mmb__iface_lock(mmbMemInterface *i) {
  if (mmb__iface_ts(i)) pthread_mutex_lock(&i->lock);
}
static inline void mmb__iface_unlock(mmbMemInterface *i) {
  if (mmb__iface_ts(i)) pthread_mutex_unlock(&i->lock);
}
static inline bool mmb__iface_host_accessible(const mmbMemInterface *i) {
  return i->provider.ops->caps & MMB_PROVIDER_HOST_ACCESSIBLE;
}

/* The live interfaces (space.c): linked at creation, unlinked at destroy,
   popped one by one at finalize; fn runs under the list lock. */
void mmb__interfaces_link(mmbMemInterface *iface);
void mmb__interfaces_unlink(mmbMemInterface *iface);
mmbMemInterface *mmb__interfaces_pop(void);
void mmb__interfaces_for_each(void (*fn)(mmbMemInterface *iface, void *arg), void *arg);
/* Up to `max` live interfaces that pick accepts, each held, for work on
   them with the list lock let go (their locks come before it): an
   interface unlinked meanwhile is torn down only once every hold is
   dropped (mmb__interface_unheld waits for that). */
size_t mmb__interfaces_hold(bool (*pick)(const mmbMemInterface *iface, const void *arg),
                            const void *arg, mmbMemInterface **out, size_t max);
void mmb__interface_drop(mmbMemInterface *iface);
void mmb__interface_unheld(mmbMemInterface *iface);
#endif /* MMB_ALLOC_MODEL_H */
