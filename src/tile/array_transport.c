/* Whole-array transport, on the same views, transfers and merges as tiles:
   an array is the tile that covers all of it. */
#include "tile.h"

#include <string.h>

static bool array_stale(const mmbArray *a) {
  return a->origin && !(a->access & MMB_WRITE) && a->origin->version != a->origin_seen;
}

/* The home of `a` is about to be read: no tile may live elsewhere. */
static mmbError check_home_valid(const char *func, const mmbArray *a, const char *which) {
  if (a->n_migrated)
    return mmb__fail(MMB_INVALID_STATE, func, "%zu tiles of %s are migrated away: its home is "
                     "stale until they come back", a->n_migrated, which);
  if (array_stale(a))
    return mmb__fail(MMB_INVALID_STATE, func, "%s is a read-only duplicate whose origin has "
                     "been written since", which);
  return MMB_OK;
}

static mmbError check_writable(const char *func, const mmbArray *a, const char *which) {
  if (!(a->access & MMB_WRITE))
    return mmb__fail(MMB_INVALID_STATE, func, "%s is read-only (made, or duplicated, without "
                     "MMB_WRITE)", which);
  return MMB_OK;
}

static void wrote_whole(mmbArray *a) {
  a->version++;
  a->whole_version++;
}

static bool same_shape(const mmbArray *x, const mmbArray *y) {
  return x->rank == y->rank && x->layout.element_size == y->layout.element_size &&
         !memcmp(x->dims, y->dims, x->rank * sizeof *x->dims);
}

mmbError mmb_array_copy(mmbArray *dst, mmbArray *src) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!dst || !src, __func__, "NULL array");
  MMB__ARG(!same_shape(dst, src), __func__, "the arrays differ in rank, extents or element size");
  if (dst == src) return MMB_OK;
  mmbError err;
  if ((err = check_writable(__func__, dst, "the destination")) != MMB_OK) return err;
  if ((err = check_home_valid(__func__, src, "the source")) != MMB_OK ||
      (err = check_home_valid(__func__, dst, "the destination")) != MMB_OK)
    return err;
  mmb__view dv = mmb__array_view(dst), sv = mmb__array_view(src);
  uint64_t start = mmb__tile_trace_start();
  if ((err = mmb__view_copy(__func__, &dv, &sv)) != MMB_OK) return err;
  mmb__tile_trace_end("array copy", start, &dv, src->iface->space, dst->iface->space);
  wrote_whole(dst);
  return MMB_OK;
}

mmbError mmb_array_duplicate(mmbArray *in_array, mmbMemInterface *in_interface,
                             mmbAccessType in_access, mmbArray **out_array) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!in_array || !in_interface || !out_array, __func__, "NULL argument");
  mmbError err = check_home_valid(__func__, in_array, "the array");
  if (err != MMB_OK) return err;
  mmbArray *d;
  err = mmb__array_new(__func__, in_array->dims, in_array->rank, &in_array->layout,
                       in_interface, in_access, &d);
  if (err != MMB_OK) return err;
  d->alignment = in_array->alignment;
  if ((err = mmb__array_alloc_home(__func__, d, in_interface, 0, &d->home)) !=
      MMB_OK) {
    mmb__free(d);
    return err;
  }
  d->data = mmb_allocation_ptr(d->home);
  mmb__view dv = mmb__array_view(d), sv = mmb__array_view(in_array);
  uint64_t start = mmb__tile_trace_start();
  if ((in_access & MMB_READ) && (err = mmb__view_copy(__func__, &dv, &sv)) != MMB_OK) {
    mmb__array_free_home(d);
    mmb__free(d);
    return err;
  }
  mmb__tile_trace_end("duplicate", start, &dv, in_array->iface->space, in_interface->space);
  d->origin = in_array;
  d->origin_seen = in_array->version;
  in_array->n_array_dups++;
  *out_array = d;
  return MMB_OK;
}

static mmbError array_merge(const char *func, mmbArray *d, mmb__merge_op *op) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!d, func, "array is NULL");
  op->etype = d->layout.type;
  mmbError err = mmb__merge_op_check(func, op);
  if (err != MMB_OK) return err;
  if (!d->origin) return mmb__fail(MMB_INVALID_STATE, func, "the array is not a duplicate");
  if (d->n_array_dups || d->n_tile_dups || d->n_iterators)
    return mmb__fail(MMB_BUSY, func, "the duplicate has live duplicates or iterators");
  mmbArray *o = d->origin;
  if (d->access & MMB_WRITE) {   /* (a read-only one is released, stale or not) */
    if ((err = check_home_valid(func, d, "the duplicate")) != MMB_OK ||
        (err = check_home_valid(func, o, "the origin")) != MMB_OK ||
        (err = check_writable(func, o, "the origin")) != MMB_OK)
      return err;
    mmb__view ov = mmb__array_view(o), dv = mmb__array_view(d);
    uint64_t start = mmb__tile_trace_start();
    if ((err = mmb__view_merge(func, &ov, &dv, op)) != MMB_OK) return err;
    mmb__tile_trace_end("merge", start, &dv, d->iface->space, o->iface->space);
    wrote_whole(o);
  }
  return mmb_array_destroy(d);
}

mmbError mmb_array_merge(mmbArray *in_array, mmbMergeType in_merge) {
  mmb__merge_op op = {.type = in_merge};
  return array_merge(__func__, in_array, &op);
}

mmbError mmb_array_merge_with(mmbArray *in_array, mmbMergeFunction fn, void *user_data) {
  if (mmb_is_initialized()) MMB__ARG(!fn, __func__, "merge function is NULL");
  mmb__merge_op op = {.fn = fn, .user = user_data};
  return array_merge(__func__, in_array, &op);
}

mmbError mmb_array_migrate(mmbArray *in_array, mmbMemInterface *in_interface,
                           mmbAccessType in_access) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!in_array || !in_interface, __func__, "NULL argument");
  MMB__ARG(!mmb__access_valid(in_access), __func__, "unknown access %d", (int)in_access);
  mmbArray *a = in_array;
  if (a->n_array_dups || a->n_tile_dups)
    return mmb__fail(MMB_BUSY, __func__, "%zu duplicate arrays and %zu tile duplicates are live",
                     a->n_array_dups, a->n_tile_dups);
  if (a->n_migrated)
    return mmb__fail(MMB_INVALID_STATE, __func__, "%zu tiles are migrated away", a->n_migrated);
  if (in_interface == a->iface && a->home) return MMB_OK;
  mmbAllocation *home;
  mmbError err = mmb__array_alloc_home(__func__, a, in_interface, 0, &home);
  if (err != MMB_OK) return err;
  mmb__view old = mmb__array_view(a), nv = old;
  nv.iface = in_interface;
  nv.ptr = mmb_allocation_ptr(home);
  uint64_t start = mmb__tile_trace_start();
  if ((in_access & MMB_READ) && (err = mmb__view_copy(__func__, &nv, &old)) != MMB_OK) {
    mmb_free(home);
    return err;
  }
  mmb__tile_trace_end("migrate", start, &nv, a->iface->space, in_interface->space);
  mmb__array_free_home(a);
  a->home = home;
  a->iface = in_interface;
  a->data = nv.ptr;
  a->region = NULL;
  if (!(in_access & MMB_READ)) wrote_whole(a);
  for (size_t i = 0; a->tiling && i < a->tiling->n_tiles; i++) {
    mmb__tile_drop_storage(&a->tiling->tiles[i]);   /* its space-local handle */
    mmb__tile_set_home(&a->tiling->tiles[i]);
  }
  return MMB_OK;
}
