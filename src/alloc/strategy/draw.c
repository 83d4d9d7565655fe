/* A draw on the provider: the one place where the allocator calls a
   provider's alloc and free, with fault injection, the space's limits, the
   counters and the trace; and zeroing an interface's memory. */
#include "alloc/strategy/strategy.h"

#include <string.h>

mmbError mmb__provider_alloc(mmbMemInterface *iface, size_t size, size_t alignment,
                             unsigned flags, void **out) {
  mmbMemSpace *space = iface->space;
  if (mmb__fault_hit()) return MMB_OUT_OF_MEMORY;
  if (!mmb__space_reserve(space, size)) {
    mmb__log(MMB_LOG_DEBUG, "%zu more bytes would pass the limit of %s (%zu bytes)", size,
             space->info.name, mmb__space_limit(space));
    return MMB_OUT_OF_MEMORY;
  }
  mmbError err = iface->provider.ops->alloc(iface->provider.state, size, alignment,
                                            flags & MMB_ALLOC_ZERO, out);
  if (err != MMB_OK) {
    mmb__space_unreserve(space, size);
    return err;
  }
  mmb__space_count_trip(space, true);
  size_t reserved = MMB__GET(iface->reserved) + size;
  MMB__SET(iface->reserved, reserved);
  if (reserved > MMB__GET(iface->reserved_high)) MMB__SET(iface->reserved_high, reserved);
  MMB__ADD(iface->n_provider_allocs, 1);
  mmb__space_sample_used(space);
  mmb__trace_reserve(iface, size, true);
  return MMB_OK;
}

void mmb__provider_free(mmbMemInterface *iface, void *ptr, size_t size, size_t alignment) {
  iface->provider.ops->free(iface->provider.state, ptr, size, alignment);
  mmb__space_unreserve(iface->space, size);
  mmb__space_count_trip(iface->space, false);
  MMB__SET(iface->reserved, MMB__GET(iface->reserved) - size);
  MMB__ADD(iface->n_provider_frees, 1);
  mmb__trace_reserve(iface, size, false);
}

mmbError mmb__provider_zero(mmbMemInterface *iface, void *ptr, size_t n) {
  if (mmb__iface_host_accessible(iface)) {
    memset(ptr, 0, n);
    return MMB_OK;
  }
  const mmbProviderOps *ops = iface->provider.ops;
  if (!ops->memset) return MMB_UNSUPPORTED;
  return ops->memset(iface->provider.state, ptr, 0, n);
}

void mmb__count_failure(mmbMemInterface *iface) {
  atomic_fetch_add_explicit(&iface->n_failed, 1, memory_order_relaxed);
  mmb__space_count_failure(iface->space);
}
