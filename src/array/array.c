/* Arrays: a shape, a layout and a home (owned, in a region, or wrapped).
   Tiling and transport are src/tile's; destroy only asks it to let go. */
#include "array/internal.h"
#include "queue/internal.h"

#include <string.h>

mmbError mmb__array_new(const char *func, const size_t *dims, size_t rank, const mmbLayout *l,
                        mmbMemInterface *iface, mmbAccessType access, mmbArray **out) {
  MMB__ARG(!mmb__access_valid(access), func, "unknown access %d", (int)access);
  MMB__ARG(rank != l->rank, func, "%zu dims for a layout of rank %zu", rank, l->rank);
  for (size_t k = 0; k < rank; k++) MMB__ARG(dims[k] == 0, func, "extent %zu is 0", k);
  size_t stride[MMB_MAX_DIMS], bytes = 0;   /* (set when err is MMB_OK; LTO cannot tell) */
  mmbError err = mmb__layout_strides(func, l, rank, dims, stride, &bytes);
  if (err != MMB_OK) return err;
  mmbArray *a = mmb__object_new(MMB__KIND_ARRAY, sizeof *a);
  if (!a) return MMB_OUT_OF_MEMORY;
  a->layout = *l;
  a->rank = rank;
  memcpy(a->dims, dims, rank * sizeof *dims);
  memcpy(a->stride, stride, rank * sizeof *stride);
  a->bytes = bytes;
  a->iface = iface;
  a->access = access;
  a->alignment = l->row_alignment > MMB_DEFAULT_ALIGNMENT ? l->row_alignment
                                                          : MMB_DEFAULT_ALIGNMENT;
  *out = a;
  return MMB_OK;
}

mmbError mmb__array_alloc_home(const char *func, size_t bytes, size_t alignment,
                               mmbMemInterface *iface, unsigned flags, mmbAllocation **out,
                               mmbMemInterface **out_iface) {
  mmbAllocateOptions o = {.alignment = alignment, .flags = flags};
  mmbError err = mmb_allocate_opts(bytes, iface, &o, out);
  if (err != MMB_OK)
    return mmb__fail(err, func, "no home of %zu bytes in %s: %s", bytes,
                     iface->space->info.name, mmb_error_string(err));
  return mmb_allocation_get_interface(*out, out_iface);   /* iface, or its fallback's */
}

void mmb__array_take_home(mmbArray *a, mmbAllocation *home, mmbMemInterface *asked,
                          mmbMemInterface *landed) {
  a->home = home;
  a->data = mmb_allocation_ptr(home);
  a->iface = landed;
  a->preferred = landed != asked ? asked->space : NULL;
}

/* Frees the array's owned home, if any. */
static void array_free_home(mmbArray *a) {
  if (a->home) MMB__MUST(mmb_free(a->home));
  a->home = NULL;
}

static mmbError check_create(const char *func, const mmbDimensions *dims, const mmbLayout *layout,
                             mmbArray **out) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(layout, MMB__KIND_LAYOUT, func, "layout");
  MMB__ARG(!dims || !out, func, "NULL argument");
  MMB__ARG(dims->size < 1 || dims->size > MMB_MAX_DIMS, func, "rank %zu, not 1..%d",
           dims->size, MMB_MAX_DIMS);
  return MMB_OK;
}

static mmbError place_in_region(const char *func, mmbArray *a, const mmbArrayOptions *o) {
  mmbMemInterface *ri = mmb__region_interface(o->region);
  MMB__ARG(a->iface && a->iface != ri, func, "the region draws on another interface");
  a->iface = ri;
  void *p;
  mmbError err = mmb_region_alloc(o->region, a->bytes, a->alignment, &p);
  if (err != MMB_OK) return err;
  if (o->flags & MMB_ALLOC_ZERO) err = mmb__provider_zero(ri, p, a->bytes);
  a->region = o->region;
  a->data = p;
  return err;
}

mmbError mmb_array_create_opts(const mmbDimensions *dims, const mmbLayout *layout,
                               mmbMemInterface *interface, mmbAccessType access,
                               const mmbArrayOptions *opts, mmbArray **out_array) {
  mmbError err = check_create(__func__, dims, layout, out_array);
  if (err != MMB_OK) return err;
  mmbArrayOptions o = opts ? *opts : (mmbArrayOptions){0};
  MMB__ARG(!interface && !o.region, __func__, "interface is NULL");
  if (interface) MMB__HANDLE(interface, MMB__KIND_INTERFACE, __func__, "interface");
  if (o.region) MMB__HANDLE(o.region, MMB__KIND_REGION, __func__, "opts->region");
  MMB__ARG(o.flags & ~MMB_ALLOC_ZERO, __func__, "unknown flags 0x%x", o.flags);
  MMB__ARG(o.alignment && (!mmb__is_pow2(o.alignment) || o.alignment > MMB_MAX_ALIGNMENT),
           __func__, "alignment %zu is not a power of two up to %zu", o.alignment,
           (size_t)MMB_MAX_ALIGNMENT);
  mmbArray *a = NULL;   /* (set when err is MMB_OK; LTO cannot tell) */
  err = mmb__array_new(__func__, dims->d, dims->size, layout, interface, access, &a);
  if (err != MMB_OK) return err;
  if (o.alignment > a->alignment) a->alignment = o.alignment;
  if (o.region) {
    err = place_in_region(__func__, a, &o);
  } else {
    mmbAllocation *home = NULL;   /* (both set when err is MMB_OK) */
    mmbMemInterface *landed = NULL;
    if ((err = mmb__array_alloc_home(__func__, a->bytes, a->alignment, interface, o.flags,
                                     &home, &landed)) == MMB_OK)
      mmb__array_take_home(a, home, interface, landed);
  }
  if (err != MMB_OK) {
    mmb__object_free(a);
    return err;
  }
  *out_array = a;
  return MMB_OK;
}

mmbError mmb_array_create(const mmbDimensions *dims, const mmbLayout *layout,
                          mmbMemInterface *interface, mmbAccessType access,
                          mmbArray **out_array) {
  return mmb_array_create_opts(dims, layout, interface, access, NULL, out_array);
}

mmbError mmb_array_create_wrapped(void *data, const mmbDimensions *dims, const mmbLayout *layout,
                                  mmbMemInterface *interface, mmbAccessType access,
                                  mmbArray **out_array) {
  mmbError err = check_create(__func__, dims, layout, out_array);
  if (err != MMB_OK) return err;
  MMB__ARG(!data, __func__, "data is NULL");
  MMB__HANDLE(interface, MMB__KIND_INTERFACE, __func__, "interface");
  mmbArray *a;
  err = mmb__array_new(__func__, dims->d, dims->size, layout, interface, access, &a);
  if (err != MMB_OK) return err;
  a->data = data;
  a->wrapped_on = interface;
  atomic_fetch_add(&interface->n_wrapped, 1);
  *out_array = a;
  return MMB_OK;
}

mmbError mmb_array_destroy(mmbArray *array) {
  MMB__REQUIRE_INIT();
  MMB__ARRAY_ARG(array, __func__);
  /* refused before anything goes: the cached copies of its tiles (tile
     duplicates too) go with it, unless one is pinned */
  size_t tile_dups = array->n_tile_dups - array->n_cached;
  if (array->n_array_dups || tile_dups || array->n_iterators || array->n_home_pins)
    return mmb__fail(MMB_BUSY, __func__, "%zu duplicate arrays, %zu tile duplicates, %zu "
                     "iterators and %zu tiles acquired at home are live", array->n_array_dups,
                     tile_dups, array->n_iterators, array->n_home_pins);
  /* from queue work, work queued behind it on the array is refused: the
     waits below would wait for themselves */
  mmbError err = mmb__request_may_wait(__func__, array->pending);
  if (err == MMB_OK && array->tiling_may_wait) err = array->tiling_may_wait(__func__, array);
  if (err == MMB_OK && array->n_cached) err = array->cache_drop(array);
  if (err != MMB_OK) return err;
  mmb__pending_wait(&array->pending);
  if (array->tiling_release) array->tiling_release(array);
  if (array->origin) array->origin->n_array_dups--;
  array_free_home(array);
  if (array->wrapped_on) atomic_fetch_sub(&array->wrapped_on->n_wrapped, 1);
  mmb__object_free(array);
  return MMB_OK;
}

void *mmb_array_ptr(const mmbArray *array) {
  if (!mmb__initialized() || !mmb__object_is(array, MMB__KIND_ARRAY) ||
      !mmb__iface_host_accessible(array->iface))
    return NULL;
  return array->data;
}

mmbError mmb_array_get_field(const mmbArray *array, size_t index, mmbField *out_field) {
  MMB__REQUIRE_INIT();
  MMB__ARRAY_ARG(array, __func__);
  const mmbArray *a = array;
  char *home = mmb__iface_host_accessible(a->iface) ? a->data : NULL;
  return mmb__field_get(__func__, a->layout.rec, a->layout.element_size, home, 0,
                        a->bytes / a->layout.element_size, a->rank, a->stride, index, out_field);
}

mmbError mmb_array_get_dims(const mmbArray *array, mmbDimensions *out_dims) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(array, MMB__KIND_ARRAY, __func__, "array");
  MMB__ARG(!out_dims, __func__, "out_dims is NULL");
  *out_dims = (mmbDimensions){.size = array->rank};
  memcpy(out_dims->d, array->dims, array->rank * sizeof *array->dims);
  return MMB_OK;
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_array_dims(const mmbArray *array, mmbDimensions *out_dims) {
  return mmb_array_get_dims(array, out_dims);
}

mmbError mmb_array_get_strides(const mmbArray *array, mmbDimensions *out_strides) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(array, MMB__KIND_ARRAY, __func__, "array");
  MMB__ARG(!out_strides, __func__, "out_strides is NULL");
  *out_strides = (mmbDimensions){.size = array->rank};
  memcpy(out_strides->d, array->stride, array->rank * sizeof *array->stride);
  return MMB_OK;
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_array_strides(const mmbArray *array, mmbDimensions *out_strides) {
  return mmb_array_get_strides(array, out_strides);
}

mmbError mmb_array_get_bytes(const mmbArray *array, size_t *out_bytes) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(array, MMB__KIND_ARRAY, __func__, "array");
  MMB__ARG(!out_bytes, __func__, "out_bytes is NULL");
  *out_bytes = array->bytes;
  return MMB_OK;
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_array_bytes(const mmbArray *array, size_t *out_bytes) {
  return mmb_array_get_bytes(array, out_bytes);
}

mmbError mmb_array_get_interface(const mmbArray *array, mmbMemInterface **out_interface) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(array, MMB__KIND_ARRAY, __func__, "array");
  MMB__ARG(!out_interface, __func__, "out_interface is NULL");
  *out_interface = array->iface;
  return MMB_OK;
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_array_interface(const mmbArray *array, mmbMemInterface **out_interface) {
  return mmb_array_get_interface(array, out_interface);
}
