/* The basic strategy: every allocation is one trip to the provider. */
#include "alloc.h"

static mmbError basic_alloc(mmbMemInterface *iface, mmbAllocation *a, unsigned flags) {
  mmbError err = mmb__provider_alloc(iface, a->size, a->alignment, flags, &a->ptr);
  if (err == MMB_OK) a->reserved = a->size;
  return err;
}

static void basic_free(mmbMemInterface *iface, mmbAllocation *a) {
  mmb__provider_free(iface, a->ptr, a->reserved, a->alignment);
}

const mmb__strategy_ops mmb__basic_strategy = {
    .name = "basic",
    .alloc = basic_alloc,
    .free = basic_free,
};
