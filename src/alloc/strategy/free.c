/* mmb_free: the handle LIVE -> FREEING (the pool's quick bins inline),
   then its bytes back through deferred.c, at once or once the queue work
   that may still touch them has passed. */
#include "alloc/strategy/strategy.h"
#include "alloc/strategy/pool.h"

/* ---- mmb_free -------------------------------------------------------------- */

/* LIVE -> FREEING, for the handle h of the record a: its generation must be
   the record's. An interface without MMB_INTERFACE_THREAD_SAFE belongs to
   one thread, so its handles need no atomic exchange. */
static bool claim(mmbAllocation *a, const mmbAllocation *h) {
  uint32_t live = mmb__live_state(h);
  if (atomic_load_explicit(&a->state, memory_order_acquire) != live) return false;
  if (!mmb__iface_ts(a->interface)) {
    mmb__handle_set(a, MMB__HANDLE_FREEING);
    return true;
  }
  return atomic_compare_exchange_strong(&a->state, &live, mmb__state_as(live, MMB__HANDLE_FREEING));
}

/* An allocation parked on a quick bin the calling thread owns (a pool that
   is not thread-safe, or this thread's cache of one that is), straight from
   here with nothing that needs a call; everything else takes the general
   path, which also reports what is not a live allocation, and notes the
   interface for the next free. */
mmbError mmb_free(mmbAllocation *allocation) {
  mmbAllocation *a = mmb__record(allocation);
  uint32_t live = mmb__live_state(allocation);
  if (MMB__LIKELY(mmb__initialized() && allocation && mmb__handle_is_ours(a) &&
                  atomic_load_explicit(&a->state, memory_order_relaxed) == live)) {
    mmbMemInterface *iface = a->interface;
    size_t bin = quick_bin_of(a);
    /* the note's state (pool.h: mmb__note), then the block's: a quick block
       with no fences (MMB__FENCED), room in its bin */
    if (MMB__LIKELY(mmb__noted(iface) && (a->flags & ~MMB__SLAB) == MMB__QUICK &&
                    pool_under_threshold(iface))) {
      pool_cache *cache = mmb__tl_note.cache;
      if (MMB__LIKELY(cache->count[bin] < cache->cap[bin])) {
        /* LIVE -> FREE; on a thread-safe interface, only by the one thread
           whose exchange finds it LIVE (a concurrent double free loses) */
        if (mmb__iface_ts(iface) &&
            !atomic_compare_exchange_strong(&a->state, &live,
                                            mmb__state_as(live, MMB__HANDLE_FREEING)))
          return mmb__free_handle(allocation);
        mmb__pool_park(iface, cache, a);
        return MMB_OK;
      }
    }
  }
  return mmb__free_handle(allocation);
}

mmbError mmb__free_handle(mmbAllocation *handle) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!handle, "mmb_free", "allocation is NULL");
  mmbAllocation *allocation = mmb__record(handle);
  if (MMB__UNLIKELY(!mmb__handle_is_ours(allocation) || !claim(allocation, handle))) {
    mmb__log(MMB_LOG_ERROR, "mmb_free: %p is not a live allocation (freed twice, or not "
             "from mmb); nothing was freed", (void *)handle);
    return MMB_INVALID_ARG;
  }
  mmbMemInterface *iface = allocation->interface;
  mmb__deferred_poll(iface);   /* what earlier frees left behind fences that have passed */
  mmb__note_take(iface);   /* the next one is quick */
  if (MMB__UNLIKELY(!(allocation->flags & MMB__IN_REGION) && allocation->fences != NULL)) {
    /* queue work may still use it */
    mmb__allocation_defer(allocation);
    return MMB_OK;
  }
  if (MMB__LIKELY((allocation->flags & ~MMB__SLAB) == MMB__QUICK && !mmb__trace_active() &&
                  mmb__pool_free_quick(iface, allocation)))
    return MMB_OK;
  mmb__allocation_release(allocation);
  return MMB_OK;
}
