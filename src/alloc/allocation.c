/* Allocations: argument checks, the handle, the strategy, stats. */
#include "alloc.h"

#include <stdint.h>

mmbError mmb_allocate(size_t n_bytes, mmbMemInterface *interface, mmbAllocation **out_allocation) {
  return mmb_allocate_opts(n_bytes, interface, NULL, out_allocation);
}

static mmbError check_request(size_t n_bytes, const mmbAllocateOptions *opts, size_t *alignment) {
  size_t align = opts && opts->alignment ? opts->alignment : MMB_DEFAULT_ALIGNMENT;
  unsigned flags = opts ? opts->flags : 0;
  MMB__ARG(n_bytes == 0, "mmb_allocate", "zero bytes requested");
  MMB__ARG(!mmb__is_pow2(align) || align > MMB_MAX_ALIGNMENT, "mmb_allocate",
           "alignment %zu is not a power of two up to %zu", align, MMB_MAX_ALIGNMENT);
  MMB__ARG(flags & ~MMB_ALLOC_ZERO, "mmb_allocate", "unknown flags 0x%x", flags);
  if (align < sizeof(void *)) align = sizeof(void *);
  size_t rounded;
  if (n_bytes > PTRDIFF_MAX || mmb__add_overflows(n_bytes, align - 1, &rounded))
    return mmb__fail(MMB_OVERFLOW, "mmb_allocate", "%zu bytes cannot be addressed", n_bytes);
  *alignment = align;
  return MMB_OK;
}

mmbError mmb_allocate_opts(size_t n_bytes, mmbMemInterface *iface, const mmbAllocateOptions *opts,
                           mmbAllocation **out_allocation) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!iface || !out_allocation, __func__, "NULL argument");
  size_t alignment = 0;
  mmbError err = check_request(n_bytes, opts, &alignment);
  if (err != MMB_OK) return err;

  mmb__iface_lock(iface);
  mmbAllocation *a = mmb__handle_take(&iface->handles);
  if (!a) {
    err = MMB_OUT_OF_MEMORY;
  } else {
    a->interface = iface;
    a->size = n_bytes;
    a->alignment = alignment;
    a->flags = 0;
    a->block = NULL;
    err = iface->strategy->alloc(iface, a, opts ? opts->flags : 0);
  }
  if (err == MMB_OK) {
    mmbStats *st = &iface->stats;
    st->used_current += n_bytes;
    if (st->used_current > st->used_high) st->used_high = st->used_current;
    st->n_allocs++;
    atomic_store_explicit(&a->state, MMB__HANDLE_LIVE, memory_order_release);
  } else {
    if (a) mmb__handle_give(&iface->handles, a);
    iface->stats.n_failed++;
  }
  mmb__iface_unlock(iface);

  if (err != MMB_OK) {
    mmb__space_count_failure(iface->space);
    return mmb__fail(err, __func__, "%zu bytes from %s: %s", n_bytes, iface->space->info.name,
                     mmb_error_string(err));
  }
  mmb__space_count_use(iface->space, n_bytes, true);
  *out_allocation = a;
  return MMB_OK;
}

void mmb__allocation_release(mmbAllocation *a) {
  mmbMemInterface *iface = a->interface;
  size_t size = a->size;
  iface->strategy->free(iface, a);
  iface->stats.used_current -= size;
  iface->stats.n_frees++;
  mmb__handle_give(&iface->handles, a);
  mmb__space_count_use(iface->space, size, false);
}

mmbError mmb_free(mmbAllocation *allocation) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!allocation, __func__, "allocation is NULL");
  if (!mmb__handle_claim(allocation)) {
    mmb__log(MMB_LOG_ERROR, "mmb_free: %p is not a live allocation (freed twice, or not "
             "from mmb); nothing was freed", (void *)allocation);
    return MMB_INVALID_ARG;
  }
  mmbMemInterface *iface = allocation->interface;
  mmb__iface_lock(iface);
  mmb__allocation_release(allocation);
  mmb__iface_unlock(iface);
  return MMB_OK;
}

void *mmb_allocation_ptr(const mmbAllocation *allocation) {
  return mmb__handle_is_live(allocation) ? allocation->ptr : NULL;
}

size_t mmb_allocation_size(const mmbAllocation *allocation) {
  return mmb__handle_is_live(allocation) ? allocation->size : 0;
}

mmbError mmb_allocation_interface(const mmbAllocation *allocation, mmbMemInterface **out_interface) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out_interface, __func__, "out_interface is NULL");
  MMB__ARG(!mmb__handle_is_live(allocation), __func__, "%p is not a live allocation",
           (const void *)allocation);
  *out_interface = allocation->interface;
  return MMB_OK;
}
