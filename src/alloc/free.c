/* Freeing, all of it: mmb_free (the handle LIVE -> FREEING, the pool's
   quick bins inline), giving the bytes back to the strategy or the region,
   and deferred reuse of allocations freed while queue work may still touch
   them (mmb_free_async, mmb_allocation_record_queue, the storage an
   asynchronous transport leaves behind): their fences, and the sweep that
   releases them once the fences have passed. */
#include "alloc/internal.h"
#include "alloc/pool.h"

static void fences_drop(mmbAllocation *a) {
  for (mmb__fence *f = a->fences, *next; f; f = next) {
    next = f->next;
    f->ops->release(f->fence);
    mmb__record_free(f, sizeof *f);
  }
  a->fences = NULL;
}

static bool fences_passed(const mmbAllocation *a, bool wait) {
  for (mmb__fence *f = a->fences; f; f = f->next) {
    if (wait) f->ops->wait(f->fence);
    else if (!f->ops->passed(f->fence)) return false;
  }
  return true;
}

mmbError mmb__allocation_fence(const char *func, mmbAllocation *h, void *fence,
                               const mmb__fence_ops *ops) {
  mmbAllocation *a = mmb__record(h);
  MMB__ARG(a->flags & MMB__IN_REGION, func, "a region allocation is reused when its region is "
           "reset: use mmb_region_reset_async");
  const void *owner = ops->owner(fence);
  for (mmb__fence *f = a->fences; f; f = f->next)
    if (f->ops == ops && ops->owner(f->fence) == owner) {   /* later on the same queue */
      ops->release(f->fence);
      f->fence = fence;
      return MMB_OK;
    }
  mmb__fence *f = mmb__record_alloc(sizeof *f);
  if (!f) return mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for a fence");
  *f = (mmb__fence){.fence = fence, .ops = ops, .next = a->fences};
  a->fences = f;
  return MMB_OK;
}

void mmb__allocation_defer(mmbAllocation *a) {
  if (fences_passed(a, false)) {
    fences_drop(a);
    mmb__allocation_release(a);
    return;
  }
  mmbMemInterface *iface = a->interface;
  mmb__iface_lock(iface);
  a->next = iface->deferred;
  iface->deferred = a;
  atomic_fetch_add_explicit(&iface->n_deferred, 1, memory_order_relaxed);
  mmb__iface_unlock(iface);
}

void mmb__deferred_sweep(mmbMemInterface *iface, bool wait) {
  mmb__iface_lock(iface);
  mmbAllocation *list = iface->deferred;
  iface->deferred = NULL;
  mmb__iface_unlock(iface);
  mmbAllocation *keep = NULL, *keep_tail = NULL;
  size_t released = 0;
  for (mmbAllocation *a = list, *next; a; a = next) {
    next = a->next;
    if (fences_passed(a, wait)) {
      fences_drop(a);
      mmb__allocation_release(a);
      released++;
    } else {
      a->next = keep;
      keep = a;
      if (!keep_tail) keep_tail = a;
    }
  }
  mmb__iface_lock(iface);
  if (keep) {
    keep_tail->next = iface->deferred;
    iface->deferred = keep;
  }
  atomic_fetch_sub_explicit(&iface->n_deferred, released, memory_order_relaxed);
  mmb__iface_unlock(iface);
}

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

void mmb__allocation_release(mmbAllocation *a) {
  mmbMemInterface *iface = a->interface;
  if (a->flags & MMB__IN_REGION) {
    mmb__region_release(a);
    return;
  }
  if (a->flags & MMB__BARE) {   /* traced as it goes back to its slab */
    mmb__ptr_release(a);
    return;
  }
  if (mmb__trace_active()) mmb__trace_record(MMB__TRACE_FREE, iface, a->ptr, a->size);
  iface->strategy->release(iface, a, 0);
}

static mmbError free_general(mmbAllocation *allocation) __attribute__((noinline));

/* An allocation parked on a quick bin the calling thread owns (a pool that
   is not thread-safe, or this thread's cache of one that is), straight from
   here with nothing that needs a call; everything else takes the general
   path, which also reports what is not a live allocation. */
mmbError mmb_free(mmbAllocation *allocation) {
  mmbAllocation *a = mmb__record(allocation);
  uint32_t live = mmb__live_state(allocation);
  if (MMB__LIKELY(mmb__initialized() && allocation && mmb__handle_is_ours(a) &&
                  atomic_load_explicit(&a->state, memory_order_relaxed) == live)) {
    mmbMemInterface *iface = a->interface;
    bool shared;
    pool_cache *cache = mmb__pool_free_cache(iface, &shared);
    size_t bin = quick_bin_of(a);
    if (MMB__LIKELY(cache && (a->flags & ~MMB__SLAB) == MMB__QUICK && !a->fences &&
                    !atomic_load_explicit(&iface->n_deferred, memory_order_relaxed) &&
                    pool_under_threshold(iface) && cache->count[bin] < cache->cap[bin])) {
      /* LIVE -> FREE; on a thread-safe interface, only by the one thread
         whose exchange finds it LIVE (a concurrent double free loses) */
      if (shared && !atomic_compare_exchange_strong(&a->state, &live,
                                                    mmb__state_as(live, MMB__HANDLE_FREEING)))
        return free_general(allocation);
      mmb__pool_park(iface, cache, a);
      return MMB_OK;
    }
  }
  return free_general(allocation);
}

static mmbError free_general(mmbAllocation *handle) {
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
