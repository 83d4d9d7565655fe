/* Giving a claimed allocation's bytes back (to its region or its
   strategy), and deferred reuse of allocations freed while queue work may
   still touch them (mmb_free_async, mmb_allocation_record_queue,
   mmb_ptr_deallocate_async, the storage an asynchronous transport leaves
   behind): their fences, and the sweep that releases them once the fences
   have passed. */
#include "alloc/strategy/strategy.h"

void mmb__interface_give_back(mmbMemInterface *iface, size_t keep) {
  mmb__deferred_sweep(iface, false);
  mmb__region_cache_trim(iface);
  if (iface->strategy->trim) iface->strategy->trim(iface, keep);
}

void mmb__allocation_release(mmbAllocation *a) {
  mmbMemInterface *iface = a->interface;
  if (a->flags & MMB__IN_REGION) {
    mmb__region_release(a);
    return;
  }
  /* an MMB__BARE handle is traced as its block goes back to its slab */
  if (!(a->flags & MMB__BARE) && mmb__trace_active())
    mmb__trace_record(MMB__TRACE_FREE, iface, a->ptr, a->size);
  iface->strategy->release(iface, a, 0);
}

static void fences_drop(mmbAllocation *a) {
  for (mmb__fence *f = a->fences, *next; f; f = next) {
    next = f->next;
    mmb__request_unref(f->req);
    mmb__record_free(f, sizeof *f);
  }
  a->fences = NULL;
  a->flags &= (uint16_t)~MMB__FENCED;
}

static bool fences_passed(const mmbAllocation *a, bool wait) {
  for (mmb__fence *f = a->fences; f; f = f->next) {
    if (wait) (void)mmb__request_wait(f->req);   /* its error is its own caller's */
    else if (!mmb__request_done(f->req)) return false;
  }
  return true;
}

mmbError mmb__allocation_fence(const char *func, mmbAllocation *h, mmb__request *r) {
  mmbAllocation *a = mmb__record(h);
  MMB__ARG(a->flags & MMB__IN_REGION, func, "a region allocation is reused when its region is "
           "reset: use mmb_region_reset_async");
  for (mmb__fence *f = a->fences; f; f = f->next)
    if (f->req->q == r->q) {   /* later on the same queue */
      mmb__request_unref(f->req);
      f->req = r;
      return MMB_OK;
    }
  mmb__fence *f = mmb__record_alloc(sizeof *f);
  if (!f) return mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for a fence");
  *f = (mmb__fence){.req = r, .next = a->fences};
  a->fences = f;
  a->flags |= MMB__FENCED;
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
  /* the threads' notes say no frees wait here: from now on, not so */
  if (atomic_fetch_add_explicit(&iface->n_deferred, 1, memory_order_relaxed) == 0)
    mmb__notes_stale();
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
