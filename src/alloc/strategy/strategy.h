/* Internal, the allocation layer's third sub-floor: the strategies and the
   calls that use them. From the bottom: a draw on the provider (draw.c),
   the basic strategy (basic.c), regions (region.c), giving bytes back and
   deferred reuse (deferred.c), the pool (pool.c, slab.c, pool_cache.c;
   pool.h), then the public calls: mmb_allocate (allocation.c), mmb_free
   (free.c), bare pointers (ptr.c) and interfaces (interface.c). */
#ifndef MMB_ALLOC_STRATEGY_H
#define MMB_ALLOC_STRATEGY_H

#include "alloc/observe/observe.h"

/* ---- strategies, draws, allocate and free --------------------------------- */
/* Internal allocation flags, above the public MMB_ALLOC_* ones. */
#define MMB__ALLOC_UNCOUNTED 0x100u   /* a region block: the region counts it */

extern const mmb__strategy_ops mmb__basic_strategy;
extern const mmb__strategy_ops mmb__pool_strategy;

/* Frees the table (teardown: its handles were released with the rest). */
void mmb__ptr_table_free(mmb__ptr_table *t);
/* Frees the slab map's leaves (finalize, after every interface is gone). */
void mmb__slab_map_finalize(void);

/* A trip to the provider: fault injection, the space's limits, stats. The
   caller holds the interface lock (or owns a non-thread-safe interface). */
mmbError mmb__provider_alloc(mmbMemInterface *iface, size_t size, size_t alignment,
                             unsigned flags, void **out);
void mmb__provider_free(mmbMemInterface *iface, void *ptr, size_t size, size_t alignment);
/* Zeroes bytes of the interface's memory, host or device. */
mmbError mmb__provider_zero(mmbMemInterface *iface, void *ptr, size_t n);
void mmb__interfaces_finalize(void);
/* Bytes a fresh pool reserves at most to hold `count` blocks of `bytes`
   each at once (pool.c): segment rounding included. SIZE_MAX on overflow. */
size_t mmb__pool_footprint(size_t bytes, size_t count);
/* Counts a refused allocation on the interface and its spaces. */
void mmb__count_failure(mmbMemInterface *iface);
/* True while this thread runs a chain for an allocation refused to iface
   (NULL: to any interface): the chain goes on with it after its handlers,
   so a handler may not destroy it, nor finalize mmb. */
bool mmb__oom_chain_runs_for(const mmbMemInterface *iface);

/* What an interface caches back to its provider, down to `keep` bytes:
   frees whose fences have passed, a region's cached blocks, the strategy's
   cache (mmb_interface_trim, the out-of-memory chain; deferred.c). */
void mmb__interface_give_back(mmbMemInterface *iface, size_t keep);
/* Gives a claimed handle's bytes back (strategy or region) and retires it
   (deferred.c). */
void mmb__allocation_release(mmbAllocation *a);
/* mmb_allocate_opts past its checks of the interface and out (allocation.c;
   ptr.c's blocks with handles). */
mmbError mmb__allocate(mmbMemInterface *iface, size_t n_bytes, const mmbAllocateOptions *opts,
                       mmbAllocation **out_allocation);
/* mmb_free's general path, every check included (free.c; ptr.c). */
mmbError mmb__free_handle(mmbAllocation *handle) __attribute__((noinline));
#define MMB__IN_REGION 0x1u   /* mmbAllocation.flags: placed in a region */
#define MMB__QUICK 0x2u       /* a pool block that fits a quick bin as it is */
#define MMB__SLAB 0x4u        /* with MMB__QUICK: a block of a slab (a->block is the slab) */
#define MMB__FENCED 0x10u     /* a->fences is not empty: keeps it off the quick paths */
#define MMB__BARE 0x8u        /* carries a freed mmb_ptr_allocate slab block while it waits on
                                 queue work (ptr.c); never a caller's */

/* ---- regions (region.c) -------------------------------------------------- */
/* Places an allocation in a region: the handle is retired when the region is
   reset or destroyed. */
mmbError mmb__region_allocate(mmbRegion *region, mmbMemInterface *iface, size_t n,
                              size_t alignment, unsigned flags, mmbAllocation **out);
void mmb__region_release(mmbAllocation *a);
/* n bytes in r, its arguments checked (for func): a bump, or a new block
   from the interface's strategy (MMB_OUT_OF_MEMORY when there is none;
   mmb_region_alloc, in allocation.c, then runs the space's chain). */
mmbError mmb__region_bump(const char *func, mmbRegion *r, size_t n, size_t align, void **out);
/* The interface a region draws on. */
mmbMemInterface *mmb__region_interface(const mmbRegion *region);
/* Destroys an interface's leftover regions and cached blocks (teardown). */
void mmb__regions_teardown(mmbMemInterface *iface);
/* Returns cached region blocks to the strategy (trim). */
void mmb__region_cache_trim(mmbMemInterface *iface);

/* ---- deferred reuse (deferred.c) -------------------------------------
   A fence is a request (core/request.h) of some queue's work, one
   reference the fence holds: src/queue makes them, and src/alloc waits on
   them knowing no queue. A freed allocation with fences that have not all
   passed goes on its interface's deferred list: its bytes stay used, and go
   back to the strategy once every fence has passed, swept by the
   interface's own calls in the caller's thread (so an interface without
   MMB_INTERFACE_THREAD_SAFE stays single-threaded). */
typedef struct mmb__fence {
  mmb__request *req;
  struct mmb__fence *next;
} mmb__fence;

/* Takes the reference r (on success): `a` is not reused until r has
   completed; a newer request of the same queue replaces an older one.
   MMB_INVALID_ARG for a region allocation; MMB_OUT_OF_MEMORY. */
mmbError mmb__allocation_fence(const char *func, mmbAllocation *a, mmb__request *r);
/* mmb_ptr_deallocate with a fence (its reference taken on success): ptr's
   bytes are reused once r has completed. MMB_INVALID_ARG for what is not a
   live block of iface's. */
mmbError mmb__ptr_free_after(const char *func, mmbMemInterface *iface, void *ptr,
                             mmb__request *r);
/* mmb_free's path for an allocation with fences (claimed, FREEING). */
void mmb__allocation_defer(mmbAllocation *a);
/* Releases what on the deferred list is ready (every fence, with `wait`). */
void mmb__deferred_sweep(mmbMemInterface *iface, bool wait);
static inline void mmb__deferred_poll(mmbMemInterface *iface) {
  if (MMB__UNLIKELY(atomic_load_explicit(&iface->n_deferred, memory_order_relaxed)))
    mmb__deferred_sweep(iface, false);
}
/* A region reset once the request `fence` has completed (region.c; the
   reference is the region's). */
mmbError mmb__region_reset_after(const char *func, mmbRegion *r, mmb__request *fence);
/* Queued work reads bytes of the region until `fence` completes: resetting
   or destroying it waits for that (the reference is the region's). */
void mmb__region_read_after(mmbRegion *r, mmb__request *fence);

#endif /* MMB_ALLOC_STRATEGY_H */
