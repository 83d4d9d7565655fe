/* Whole-array transport, on the same views, transfers and merges as tiles:
   an array is the tile that covers all of it. */
#include "tile/internal.h"

#include <string.h>

/* The home of `a` is about to be read: no tile may live elsewhere. */
static mmbError check_home_valid(const char *func, const mmbArray *a, const char *which) {
  if (a->n_migrated)
    return mmb__fail(MMB_INVALID_STATE, func, "%zu tiles of %s are migrated away: its home is "
                     "stale until they come back", a->n_migrated, which);
  if (mmb__array_stale(a))
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
  return x->rank == y->rank &&
         mmb__elements_match(x->layout.rec, x->layout.element_size, y->layout.rec,
                             y->layout.element_size) &&
         !memcmp(x->dims, y->dims, x->rank * sizeof *x->dims);
}

/* A whole-array job on `a` (and `b`): it waits for them and their tiles. */
static void own_arrays(mmb__job *j, mmbArray *a, mmbArray *b) {
  j->own[0] = &a->pending;
  j->whole[0] = a;
  if (b) {
    j->own[1] = &b->pending;
    j->whole[1] = b;
  }
}

static mmbError array_copy(const char *func, mmbArray *dst, mmbArray *src, mmbQueue *q,
                           mmbRequest *req) {
  MMB__HANDLE(dst, MMB__KIND_ARRAY, func, "dst");
  MMB__HANDLE(src, MMB__KIND_ARRAY, func, "src");
  MMB__ARG(!same_shape(dst, src), func, "the arrays differ in rank, extents or elements (size, "
           "or records)");
  if (dst == src) return MMB_OK;
  mmbError err;
  if ((err = check_writable(func, dst, "the destination")) != MMB_OK) return err;
  if ((err = check_home_valid(func, src, "the source")) != MMB_OK ||
      (err = check_home_valid(func, dst, "the destination")) != MMB_OK ||
      (err = mmb__home_current(func, dst, NULL)) != MMB_OK ||
      (err = mmb__home_current(func, src, NULL)) != MMB_OK)
    return err;
  mmb__job j = {.func = func, .name = "array copy", .kind = MMB__JOB_COPY,
                .dst = mmb__array_view(dst), .src = mmb__array_view(src),
                .from = src->iface->space, .to = dst->iface->space};
  own_arrays(&j, dst, src);
  if ((err = mmb__job_start(&j, q, req)) != MMB_OK) return err;
  wrote_whole(dst);
  return MMB_OK;
}

mmbError mmb_array_copy(mmbArray *dst, mmbArray *src) {
  MMB__REQUIRE_INIT();
  return array_copy(__func__, dst, src, NULL, NULL);
}

mmbError mmb_array_copy_async(mmbArray *dst, mmbArray *src, mmbQueue *q, mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  return err != MMB_OK ? err : array_copy(__func__, dst, src, q, req);
}

/* A layout asked for data of array `a` (NULL: a's own). */
static mmbError check_layout(const char *func, const mmbArray *a, const mmbLayout **l) {
  if (!*l) {
    *l = &a->layout;
    return MMB_OK;
  }
  MMB__HANDLE(*l, MMB__KIND_LAYOUT, func, "layout");
  return mmb__layout_fits(func, *l, a->rank, a->layout.rec, a->layout.element_size);
}

static mmbError array_duplicate(const char *func, mmbArray *in_array,
                                mmbMemInterface *in_interface, mmbAccessType in_access,
                                const mmbLayout *layout, mmbQueue *q, mmbRequest *req,
                                mmbArray **out_array) {
  MMB__HANDLE(in_array, MMB__KIND_ARRAY, func, "array");
  MMB__HANDLE(in_interface, MMB__KIND_INTERFACE, func, "interface");
  MMB__ARG(!out_array, func, "out_array is NULL");
  mmbError err = check_layout(func, in_array, &layout);
  if (err == MMB_OK) err = check_home_valid(func, in_array, "the array");
  if (err == MMB_OK && (in_access & MMB_READ)) err = mmb__home_current(func, in_array, NULL);
  if (err != MMB_OK) return err;
  mmbArray *d;
  err = mmb__array_new(func, in_array->dims, in_array->rank, layout, in_interface, in_access, &d);
  if (err != MMB_OK) return err;
  if (in_array->alignment > d->alignment) d->alignment = in_array->alignment;
  mmb__job j = {.func = func, .name = "duplicate",
                .kind = in_access & MMB_READ ? MMB__JOB_COPY : MMB__JOB_NONE,
                .src = mmb__array_view(in_array), .from = in_array->iface->space,
                .to = in_interface->space};
  own_arrays(&j, in_array, d);
  mmbMemInterface *landed;
  if ((err = mmb__array_alloc_home(func, d->bytes, d->alignment, in_interface, 0, &j.made,
                                   &landed)) == MMB_OK) {
    mmb__array_take_home(d, j.made, in_interface, landed);
    j.to = landed->space;
    j.dst = mmb__array_view(d);
    err = mmb__job_start(&j, q, req);
  }
  if (err != MMB_OK) {
    mmb__object_free(d);
    return err;
  }
  d->origin = in_array;
  d->origin_seen = in_array->version;
  in_array->n_array_dups++;
  *out_array = d;
  return MMB_OK;
}

mmbError mmb_array_duplicate(mmbArray *in_array, mmbMemInterface *in_interface,
                             mmbAccessType in_access, mmbArray **out_array) {
  MMB__REQUIRE_INIT();
  return array_duplicate(__func__, in_array, in_interface, in_access, NULL, NULL, NULL,
                         out_array);
}

mmbError mmb_array_duplicate_layout(mmbArray *in_array, mmbMemInterface *in_interface,
                                    mmbAccessType in_access, const mmbLayout *in_layout,
                                    mmbArray **out_array) {
  MMB__REQUIRE_INIT();
  return array_duplicate(__func__, in_array, in_interface, in_access, in_layout, NULL, NULL,
                         out_array);
}

mmbError mmb_array_duplicate_layout_async(mmbArray *in_array, mmbMemInterface *in_interface,
                                          mmbAccessType in_access, const mmbLayout *in_layout,
                                          mmbQueue *q, mmbRequest *req, mmbArray **out_array) {
  mmbError err = mmb__queue_check(__func__, q, req);
  return err != MMB_OK ? err
                       : array_duplicate(__func__, in_array, in_interface, in_access, in_layout,
                                         q, req, out_array);
}

mmbError mmb_array_duplicate_async(mmbArray *in_array, mmbMemInterface *in_interface,
                                   mmbAccessType in_access, mmbQueue *q, mmbRequest *req,
                                   mmbArray **out_array) {
  mmbError err = mmb__queue_check(__func__, q, req);
  return err != MMB_OK ? err
                       : array_duplicate(__func__, in_array, in_interface, in_access, NULL, q,
                                         req, out_array);
}

static mmbError array_merge(const char *func, mmbArray *d, mmb__merge_op *op, mmbQueue *q,
                            mmbRequest *req) {
  MMB__HANDLE(d, MMB__KIND_ARRAY, func, "array");
  op->etype = d->layout.type;
  mmbError err = mmb__merge_op_check(func, op);
  if (err != MMB_OK) return err;
  if (!d->origin) return mmb__fail(MMB_INVALID_STATE, func, "the array is not a duplicate");
  if (d->n_array_dups || d->n_tile_dups || d->n_iterators)
    return mmb__fail(MMB_BUSY, func, "the duplicate has live duplicates or iterators");
  mmbArray *o = d->origin;
  bool writes = d->access & MMB_WRITE;   /* (a read-only one is released, stale or not) */
  if (writes && ((err = check_home_valid(func, d, "the duplicate")) != MMB_OK ||
                 (err = check_home_valid(func, o, "the origin")) != MMB_OK ||
                 (err = check_writable(func, o, "the origin")) != MMB_OK ||
                 (err = mmb__home_current(func, o, NULL)) != MMB_OK))
    return err;
  mmb__job j = {.func = func, .name = "merge", .kind = writes ? MMB__JOB_MERGE : MMB__JOB_NONE,
                .dst = mmb__array_view(o), .src = mmb__array_view(d), .op = *op,
                .from = d->iface->space, .to = o->iface->space};
  own_arrays(&j, o, d);
  j.retired[0] = d->home;
  if ((err = mmb__job_start(&j, q, req)) != MMB_OK) return err;
  if (writes) wrote_whole(o);
  d->home = NULL;   /* the job has it */
  if (d->pending) mmb__request_unref(d->pending);
  d->pending = NULL;
  return mmb_array_destroy(d);
}

mmbError mmb_array_merge(mmbArray *in_array, mmbMergeType in_merge) {
  MMB__REQUIRE_INIT();
  mmb__merge_op op = {.type = in_merge};
  return array_merge(__func__, in_array, &op, NULL, NULL);
}

mmbError mmb_array_merge_with(mmbArray *in_array, mmbMergeFunction fn, void *user_data) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!fn, __func__, "merge function is NULL");
  mmb__merge_op op = {.fn = fn, .user = user_data};
  return array_merge(__func__, in_array, &op, NULL, NULL);
}

mmbError mmb_array_merge_async(mmbArray *in_array, mmbMergeType in_merge, mmbQueue *q,
                               mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  mmb__merge_op op = {.type = in_merge};
  return err != MMB_OK ? err : array_merge(__func__, in_array, &op, q, req);
}

mmbError mmb_array_merge_with_async(mmbArray *in_array, mmbMergeFunction fn, void *user_data,
                                    mmbQueue *q, mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  if (err != MMB_OK) return err;
  MMB__ARG(!fn, __func__, "merge function is NULL");
  mmb__merge_op op = {.fn = fn, .user = user_data};
  return array_merge(__func__, in_array, &op, q, req);
}

static mmbError array_migrate(const char *func, mmbArray *in_array, mmbMemInterface *in_interface,
                              mmbAccessType in_access, const mmbLayout *layout, mmbQueue *q,
                              mmbRequest *req) {
  MMB__HANDLE(in_array, MMB__KIND_ARRAY, func, "array");
  MMB__HANDLE(in_interface, MMB__KIND_INTERFACE, func, "interface");
  MMB__ARG(!mmb__access_valid(in_access), func, "unknown access %d", (int)in_access);
  mmbArray *a = in_array;
  bool relayout = layout != NULL;
  mmbError err = check_layout(func, a, &layout);
  if (err != MMB_OK) return err;
  if (a->n_array_dups || a->n_tile_dups)
    return mmb__fail(MMB_BUSY, func, "%zu duplicate arrays and %zu tile duplicates are live",
                     a->n_array_dups, a->n_tile_dups);
  if (a->n_migrated)
    return mmb__fail(MMB_INVALID_STATE, func, "%zu tiles are migrated away", a->n_migrated);
  if (in_interface == a->iface && a->home && !relayout) return MMB_OK;
  /* the new home's geometry (the layout's, or the same) */
  size_t stride[MMB_MAX_DIMS], bytes;
  if ((err = mmb__layout_strides(func, layout, a->rank, a->dims, stride, &bytes)) != MMB_OK)
    return err;
  mmb__job j = {.func = func, .name = "migrate",
                .kind = in_access & MMB_READ ? MMB__JOB_COPY : MMB__JOB_NONE,
                .src = mmb__array_view(a), .from = a->iface->space, .to = in_interface->space};
  size_t alignment = mmb__max(a->alignment, layout->row_alignment);
  own_arrays(&j, a, NULL);
  j.retired[0] = a->home;
  mmbMemInterface *landed;
  err = mmb__array_alloc_home(func, bytes, alignment, in_interface, 0, &j.made, &landed);
  if (err == MMB_OK) {
    j.to = landed->space;
    j.dst = j.src;
    j.dst.iface = landed;
    j.dst.ptr = mmb_allocation_ptr(j.made);
    j.dst.esize = layout->element_size;
    j.dst.rec = layout->rec;
    j.dst.cap = bytes / layout->element_size;
    memcpy(j.dst.stride, stride, a->rank * sizeof *stride);
    err = mmb__job_start(&j, q, req);
  }
  if (err != MMB_OK) return err;
  /* the old home in a region is read until the job is done */
  if (a->region && a->pending) mmb__region_read_by(a->region, a->pending);
  mmb__array_take_home(a, j.made, in_interface, landed);
  a->region = NULL;
  a->layout = *layout;
  a->bytes = bytes;
  a->alignment = alignment;
  memcpy(a->stride, stride, a->rank * sizeof *stride);
  if (!(in_access & MMB_READ)) wrote_whole(a);
  for (size_t i = 0; a->tiling && i < a->tiling->n_tiles; i++) {
    mmb__tile_drop_storage(&a->tiling->slots[i].tile);   /* its space-local handle */
    mmb__tile_set_home(&a->tiling->slots[i].tile);
  }
  return MMB_OK;
}

mmbError mmb_array_migrate(mmbArray *in_array, mmbMemInterface *in_interface,
                           mmbAccessType in_access) {
  MMB__REQUIRE_INIT();
  return array_migrate(__func__, in_array, in_interface, in_access, NULL, NULL, NULL);
}

mmbError mmb_array_migrate_async(mmbArray *in_array, mmbMemInterface *in_interface,
                                 mmbAccessType in_access, mmbQueue *q, mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  return err != MMB_OK ? err
                       : array_migrate(__func__, in_array, in_interface, in_access, NULL, q, req);
}

mmbError mmb_array_migrate_layout(mmbArray *in_array, mmbMemInterface *in_interface,
                                  mmbAccessType in_access, const mmbLayout *in_layout) {
  MMB__REQUIRE_INIT();
  return array_migrate(__func__, in_array, in_interface, in_access, in_layout, NULL, NULL);
}

mmbError mmb_array_migrate_layout_async(mmbArray *in_array, mmbMemInterface *in_interface,
                                        mmbAccessType in_access, const mmbLayout *in_layout,
                                        mmbQueue *q, mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  return err != MMB_OK ? err
                       : array_migrate(__func__, in_array, in_interface, in_access, in_layout, q,
                                       req);
}
