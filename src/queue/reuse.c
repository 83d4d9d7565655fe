/* Queue-aware reuse: requests as fences for src/alloc's deferred frees and
   asynchronous region resets. A fence is a request on the queue (a no-op
   pushed there, or the request of the work that used the memory): passing
   it means everything the queue ran before it has completed. */
#include "queue/internal.h"

mmbError mmb__allocation_after(const char *func, mmbAllocation *a, mmb__request *r) {
  mmb__request_ref(r);
  mmbError err = mmb__allocation_fence(func, a, r);
  if (err != MMB_OK) mmb__request_unref(r);
  return err;
}

void mmb__region_read_by(mmbRegion *region, mmb__request *r) {
  mmb__request_ref(r);
  mmb__region_read_after(region, r);
}

static mmbError check_allocation(const char *func, mmbQueue *q, mmbAllocation *h) {
  mmbError err = mmb__queue_check(func, q, NULL);
  if (err != MMB_OK) return err;
  const mmbAllocation *a = mmb__handle_open(h);
  MMB__ARG(!a, func, "%p is not a live allocation", (void *)h);
  MMB__ARG(a->flags & MMB__IN_REGION, func, "a region allocation is reused when its region is "
           "reset: use mmb_region_reset_async");
  return MMB_OK;
}

mmbError mmb_allocation_record_queue(mmbAllocation *allocation, mmbQueue *q) {
  mmbError err = check_allocation(__func__, q, allocation);
  mmb__request *r;
  if (err != MMB_OK || (err = mmb__queue_fence(__func__, q, &r)) != MMB_OK) return err;
  err = mmb__allocation_after(__func__, allocation, r);
  mmb__request_unref(r);
  return err;
}

mmbError mmb_free_async(mmbAllocation *allocation, mmbQueue *q) {
  mmbError err = mmb_allocation_record_queue(allocation, q);
  return err != MMB_OK ? err : mmb_free(allocation);
}

mmbError mmb_ptr_deallocate_async(void *ptr, mmbMemInterface *iface, mmbQueue *q) {
  mmbError err = mmb__queue_check(__func__, q, NULL);
  mmb__request *r;
  if (err != MMB_OK || (err = mmb__queue_fence(__func__, q, &r)) != MMB_OK) return err;
  mmb__request_ref(r);
  err = mmb__ptr_free_after(__func__, iface, ptr, r);
  if (err != MMB_OK) mmb__request_unref(r);
  mmb__request_unref(r);
  return err;
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_ptr_free_async(mmbMemInterface *iface, void *ptr, mmbQueue *q) {
  return mmb_ptr_deallocate_async(ptr, iface, q);
}

mmbError mmb_region_reset_async(mmbRegion *region, mmbQueue *q) {
  mmbError err = mmb__queue_check(__func__, q, NULL);
  if (err != MMB_OK) return err;
  MMB__HANDLE(region, MMB__KIND_REGION, __func__, "region");
  mmb__request *r;
  if ((err = mmb__queue_fence(__func__, q, &r)) != MMB_OK) return err;
  return mmb__region_reset_after(__func__, region, r);
}
