/* The basic strategy: every allocation is one trip to the provider. */
#include "alloc/strategy/strategy.h"

static mmbError basic_allocate(mmbMemInterface *iface, size_t n, size_t alignment,
                               unsigned flags, mmbAllocation **out) {
  mmb__iface_lock(iface);
  mmbAllocation *a = mmb__handle_take(&iface->handles);
  mmbError err = a ? mmb__provider_alloc(iface, n, alignment, flags, &a->ptr) : MMB_OUT_OF_MEMORY;
  if (err != MMB_OK) {
    if (a) mmb__handle_give(&iface->handles, a);
    mmb__iface_unlock(iface);
    return err;
  }
  mmb__handle_fill(a, iface, n, alignment, n, NULL);
  if (!(flags & MMB__ALLOC_UNCOUNTED)) mmb__count_alloc(&iface->c, n);
  mmb__iface_unlock(iface);
  *out = a;
  return MMB_OK;
}

static void basic_release(mmbMemInterface *iface, mmbAllocation *a, unsigned flags) {
  mmb__iface_lock(iface);
  mmb__provider_free(iface, a->ptr, a->reserved, mmb__handle_alignment(a));
  if (!(flags & MMB__ALLOC_UNCOUNTED)) mmb__count_free(&iface->c, a->size);
  mmb__handle_give(&iface->handles, a);
  mmb__iface_unlock(iface);
}

const mmb__strategy_ops mmb__basic_strategy = {
    .name = "basic",
    .allocate = basic_allocate,
    .release = basic_release,
};
