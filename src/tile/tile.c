/* Tile transport: copy, duplicate, merge, migrate and space-local handles,
   with the coherence record that decides what moves (see tile/internal.h). */
#include "tile/internal.h"

#include <string.h>

static mmbError tile_arg(const char *func, mmbArrayTile *t, mmb__tile **out) {
  MMB__HANDLE(t, MMB__KIND_TILE, func, "tile");
  MMB__ARG(((mmb__tile *)t)->merging, func, "the duplicate is being merged (a call from its "
           "merge function?)");
  *out = (mmb__tile *)t;
  return MMB_OK;
}

static mmbArray *root_array(const mmb__tile *t) {
  while (!t->array) t = t->origin;
  return t->array;
}

/* True for a read-only duplicate whose origin has been written since, and
   for a tile of a stale read-only duplicate array. */
static bool tile_stale(const mmb__tile *t) {
  if (!t->origin) return mmb__array_stale(t->array);
  if (t->access & MMB_WRITE) return false;
  const mmb__tile *o = t->origin;
  return o->version != t->seen_version || (o->array && o->array->whole_version != t->seen_whole);
}

static mmbError check_readable(const char *func, const mmb__tile *t, const char *which) {
  if (tile_stale(t))
    return mmb__fail(MMB_INVALID_STATE, func, "%s is a read-only duplicate (or a tile of one) "
                     "whose origin has been written since it was copied", which);
  return MMB_OK;
}

static bool writable(const mmb__tile *t) {
  return t->origin ? (t->access & MMB_WRITE) : (t->array->access & MMB_WRITE);
}

static mmbError check_writable(const char *func, const mmb__tile *t, const char *which) {
  if (!writable(t))
    return mmb__fail(MMB_INVALID_STATE, func, "%s is read-only (a read-only duplicate, or a "
                     "tile of an array made without MMB_WRITE)", which);
  return MMB_OK;
}

mmbError (*mmb__home_current_hook)(const char *func, mmbArray *a, mmb__tile *t);

/* Something mmb did changed the tile's data. */
void mmb__tile_wrote(mmb__tile *t) {
  t->version++;
  if (t->array) t->array->version++;
}

/* A view of v's elements with its dimensions in reverse order: element
   (i0, ..., ik) of the result is element (ik, ..., i0) of v. */
static mmb__view reversed(mmb__view v) {
  mmb__view r = v;
  for (size_t k = 0; k < v.rank; k++) {
    r.dim[k] = v.dim[v.rank - 1 - k];
    r.stride[k] = v.stride[v.rank - 1 - k];
  }
  return r;
}

/* Copies src (or its transpose) into dst. */
static mmbError tile_copy(const char *func, mmbArrayTile *dst_tile, mmbArrayTile *src_tile,
                          bool transposed, mmbQueue *q, mmbRequest *req) {
  mmb__tile *d, *s;
  mmbError err = tile_arg(func, dst_tile, &d);
  if (err == MMB_OK) err = tile_arg(func, src_tile, &s);
  if (err != MMB_OK) return err;
  mmb__view sv = mmb__tile_view(s);
  if (transposed) sv = reversed(sv);
  MMB__ARG(d->pub.rank != s->pub.rank ||
           !mmb__elements_match(d->rec, d->pub.element_size, s->rec, s->pub.element_size) ||
           memcmp(d->pub.dim, sv.dim, d->pub.rank * sizeof *d->pub.dim), func,
           transposed ? "the destination's extents are not the source's reversed, or the "
                        "elements differ"
                      : "the tiles differ in rank, extents or elements (size, or records)");
  if (d == s && !transposed) return MMB_OK;
  MMB__ARG(d == s && mmb__view_bytes(&sv) > sv.esize, func,
           "a tile cannot be transposed onto itself");
  if ((err = check_writable(func, d, "the destination")) != MMB_OK ||
      (err = check_readable(func, s, "the source")) != MMB_OK)
    return err;
  if (d == s) return MMB_OK;   /* one element: its own transpose */
  if ((err = mmb__home_current(func, NULL, d)) != MMB_OK ||
      (err = mmb__home_current(func, NULL, s)) != MMB_OK)
    return err;
  mmb__job j = {.func = func, .name = transposed ? "tile transpose" : "tile copy",
                .kind = MMB__JOB_COPY, .dst = mmb__tile_view(d), .src = sv,
                .from = s->pub.space, .to = d->pub.space};
  mmb__job_own_tile(&j, 0, d);
  mmb__job_own_tile(&j, 1, s);
  if ((err = mmb__job_start(&j, q, req)) != MMB_OK) return err;
  mmb__tile_wrote(d);
  return MMB_OK;
}

mmbError mmb_tile_copy(mmbArrayTile *dst_tile, mmbArrayTile *src_tile) {
  MMB__REQUIRE_INIT();
  return tile_copy(__func__, dst_tile, src_tile, false, NULL, NULL);
}

mmbError mmb_tile_copy_async(mmbArrayTile *dst_tile, mmbArrayTile *src_tile, mmbQueue *q,
                             mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  return err != MMB_OK ? err : tile_copy(__func__, dst_tile, src_tile, false, q, req);
}

mmbError mmb_tile_copy_transposed(mmbArrayTile *dst_tile, mmbArrayTile *src_tile) {
  MMB__REQUIRE_INIT();
  return tile_copy(__func__, dst_tile, src_tile, true, NULL, NULL);
}

mmbError mmb_tile_copy_transposed_async(mmbArrayTile *dst_tile, mmbArrayTile *src_tile,
                                        mmbQueue *q, mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  return err != MMB_OK ? err : tile_copy(__func__, dst_tile, src_tile, true, q, req);
}

static mmbError check_target(const char *func, const mmb__tile *t, mmbMemSpace *space,
                             mmbAccessType access, const mmbLayout *layout) {
  MMB__HANDLE(space, MMB__KIND_SPACE, func, "space");
  MMB__ARG(!mmb__access_valid(access), func, "unknown access %d", (int)access);
  return layout ? mmb__layout_fits(func, layout, t->pub.rank, t->rec, t->pub.element_size)
                : MMB_OK;
}

/* The copy runs now (q NULL), on q, or, with `later`, when the caller runs
   the job it is given there (mmb__job_run_deferred). */
static mmbError tile_duplicate(const char *func, mmbArrayTile *in_tile, mmbMemSpace *in_space,
                               mmbAccessType in_access, mmbLayout *in_layout, mmbQueue *q,
                               mmbRequest *req, mmb__deferred **later, mmbArrayTile **out_tile) {
  mmb__tile *t;
  mmbError err = tile_arg(func, in_tile, &t);
  if (err != MMB_OK) return err;
  MMB__ARG(!out_tile, func, "out_tile is NULL");
  if ((err = check_target(func, t, in_space, in_access, in_layout)) != MMB_OK ||
      (err = check_readable(func, t, "the tile")) != MMB_OK ||
      ((in_access & MMB_WRITE) && (err = check_writable(func, t, "the tile")) != MMB_OK) ||
      ((in_access & MMB_READ) && (err = mmb__home_current(func, NULL, t)) != MMB_OK))
    return err;   /* (a writable duplicate could never be merged into it) */
  mmb__tile *d = mmb__object_new(MMB__KIND_TILE, sizeof *d);
  if (!d) return MMB_OUT_OF_MEMORY;
  d->pub = t->pub;
  mmb__job j = {.func = func, .name = "duplicate", .src = mmb__tile_view(t),
                .kind = in_access & MMB_READ ? MMB__JOB_COPY : MMB__JOB_NONE,
                .from = t->pub.space, .to = in_space};
  j.dst = j.src;
  mmb__job_own_tile(&j, 0, t);
  j.own[1] = &d->pending;
  if ((err = mmb__storage_new(func, in_space, in_layout, root_array(t)->layout.order, &j.dst,
                              &j.made)) != MMB_OK ||
      (err = later ? mmb__job_defer(&j, later) : mmb__job_start(&j, q, req)) != MMB_OK) {
    mmb__object_free(d);
    return err;
  }
  mmb__tile_set_storage(d, &j.dst, j.made);
  d->origin = t;
  d->access = in_access;
  d->seen_version = t->version;
  d->seen_whole = t->array ? t->array->whole_version : 0;
  t->n_dups++;
  if (t->array) t->array->n_tile_dups++;
  *out_tile = &d->pub;
  return MMB_OK;
}

mmbError mmb_tile_duplicate(mmbArrayTile *in_tile, mmbMemSpace *in_space, mmbAccessType in_access,
                            mmbLayout *in_layout, mmbArrayTile **out_tile) {
  MMB__REQUIRE_INIT();
  return tile_duplicate(__func__, in_tile, in_space, in_access, in_layout, NULL, NULL, NULL,
                        out_tile);
}

mmbError mmb_tile_duplicate_async(mmbArrayTile *in_tile, mmbMemSpace *in_space,
                                  mmbAccessType in_access, mmbLayout *in_layout, mmbQueue *q,
                                  mmbRequest *req, mmbArrayTile **out_tile) {
  mmbError err = mmb__queue_check(__func__, q, req);
  return err != MMB_OK ? err
                       : tile_duplicate(__func__, in_tile, in_space, in_access, in_layout, q,
                                        req, NULL, out_tile);
}

/* Hands a tile's storage and space-local handle to a job, which frees them
   once its data has moved. */
static void retire_storage(mmb__job *j, mmb__tile *t) {
  j->retired[0] = t->storage;
  j->retired[1] = t->local;
}

static void forget_storage(mmb__tile *t) {
  t->storage = NULL;
  t->local = NULL;
}

/* Folds a duplicate into its origin and releases it; `discard` releases it
   without writing anything back. */
static mmbError merge(const char *func, mmbArrayTile *in_tile, mmb__merge_op *op, mmbQueue *q,
                      mmbRequest *req, bool discard) {
  mmb__tile *d = NULL;
  mmbError err = tile_arg(func, in_tile, &d);
  if (err != MMB_OK) return err;
  op->etype = root_array(d)->layout.type;
  if ((err = mmb__merge_op_check(func, op)) != MMB_OK) return err;
  if (!d->origin) return mmb__fail(MMB_INVALID_STATE, func, "the tile is not a duplicate");
  if (d->n_dups)
    return mmb__fail(MMB_BUSY, func, "%zu duplicates of this duplicate are live", d->n_dups);
  mmb__tile *o = d->origin;
  bool writes = !discard && (d->access & MMB_WRITE);
  if (writes && ((err = check_writable(func, o, "the origin")) != MMB_OK ||
                 (err = mmb__home_current(func, NULL, o)) != MMB_OK))
    return err;
  mmb__job j = {.func = func, .name = "merge", .kind = writes ? MMB__JOB_MERGE : MMB__JOB_NONE,
                .dst = mmb__tile_view(o), .src = mmb__tile_view(d), .op = *op,
                .from = d->pub.space, .to = o->pub.space};
  mmb__job_own_tile(&j, 0, o);
  j.own[1] = &d->pending;
  retire_storage(&j, d);
  d->merging = true;   /* (a merge function runs in the job, now when q is NULL) */
  err = mmb__job_start(&j, q, req);
  d->merging = false;
  if (err != MMB_OK) return err;
  if (writes) mmb__tile_wrote(o);
  /* The duplicate goes now; its bytes live on in the job. */
  forget_storage(d);
  if (d->pending) mmb__request_unref(d->pending);
  o->n_dups--;
  if (o->array) o->array->n_tile_dups--;
  mmb__object_free(d);
  return MMB_OK;
}

mmbError mmb_tile_merge(mmbArrayTile *in_tile, mmbMergeType in_merge) {
  MMB__REQUIRE_INIT();
  mmb__merge_op op = {.type = in_merge};
  return merge(__func__, in_tile, &op, NULL, NULL, false);
}

mmbError mmb_tile_merge_with(mmbArrayTile *in_tile, mmbMergeFunction fn, void *user_data) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!fn, __func__, "merge function is NULL");
  mmb__merge_op op = {.fn = fn, .user = user_data};
  return merge(__func__, in_tile, &op, NULL, NULL, false);
}

mmbError mmb_tile_merge_async(mmbArrayTile *in_tile, mmbMergeType in_merge, mmbQueue *q,
                              mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  mmb__merge_op op = {.type = in_merge};
  return err != MMB_OK ? err : merge(__func__, in_tile, &op, q, req, false);
}

mmbError mmb_tile_merge_with_async(mmbArrayTile *in_tile, mmbMergeFunction fn, void *user_data,
                                   mmbQueue *q, mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  if (err != MMB_OK) return err;
  MMB__ARG(!fn, __func__, "merge function is NULL");
  mmb__merge_op op = {.fn = fn, .user = user_data};
  return merge(__func__, in_tile, &op, q, req, false);
}

/* ---- for the tile cache ---------------------------------------------------- */

mmbError mmb__tile_duplicate_in(const char *func, mmb__tile *t, mmbMemSpace *space,
                                mmbAccessType access, mmbQueue *q, mmbRequest *req,
                                mmb__deferred **later, mmb__tile **out) {
  mmbArrayTile *d;
  mmbError err = tile_duplicate(func, &t->pub, space, access, NULL, q, req, later, &d);
  if (err == MMB_OK) *out = (mmb__tile *)d;
  return err;
}

bool mmb__tile_dup_behind(const mmb__tile *d) {
  const mmb__tile *o = d->origin;
  return o->version != d->seen_version || (o->array && o->array->whole_version != d->seen_whole);
}

static bool settled(mmb__request *r) { return !r || mmb__request_done(r); }

bool mmb__tile_dup_idle(const mmb__tile *d) {
  const mmb__tile *o = d->origin;
  return settled(d->pending) && settled(o->pending) && (!o->array || settled(o->array->pending));
}

/* Marks a duplicate as holding its origin's current data. */
static void caught_up(mmb__tile *d) {
  d->seen_version = d->origin->version;
  d->seen_whole = d->origin->array ? d->origin->array->whole_version : 0;
}

mmbError mmb__tile_write_back(const char *func, mmb__tile *d, mmbQueue *q) {
  mmb__tile *o = d->origin;
  mmbError err = check_writable(func, o, "the origin");
  if (err != MMB_OK) return err;
  mmb__job j = {.func = func, .name = "write-back", .kind = MMB__JOB_COPY,
                .dst = mmb__tile_view(o), .src = mmb__tile_view(d), .from = d->pub.space,
                .to = o->pub.space};
  mmb__job_own_tile(&j, 0, o);
  j.own[1] = &d->pending;
  if ((err = mmb__job_start(&j, q, NULL)) != MMB_OK) return err;
  mmb__tile_wrote(o);
  caught_up(d);
  return MMB_OK;
}

mmbError mmb__tile_refresh(const char *func, mmb__tile *d, mmbQueue *q, mmbRequest *req,
                           mmb__deferred **later) {
  mmb__tile *o = d->origin;
  mmb__job j = {.func = func, .name = "refresh", .kind = MMB__JOB_COPY,
                .dst = mmb__tile_view(d), .src = mmb__tile_view(o), .from = o->pub.space,
                .to = d->pub.space};
  mmb__job_own_tile(&j, 0, o);
  j.own[1] = &d->pending;
  mmbError err = later ? mmb__job_defer(&j, later) : mmb__job_start(&j, q, req);
  if (err == MMB_OK) caught_up(d);
  return err;
}

mmbError mmb__tile_release_dup(const char *func, mmb__tile *d, bool write_back, mmbQueue *q) {
  mmb__merge_op op = {.type = MMB_MERGE_OVERWRITE};
  return merge(func, &d->pub, &op, q, NULL, !write_back);
}

mmbError mmb__tile_discard_async(mmbArrayTile *dup, mmbQueue *q) {
  mmb__merge_op op = {.type = MMB_MERGE_OVERWRITE};
  return merge("mmb_tile_iterator", dup, &op, q, NULL, true);
}

mmbError mmb_tile_discard(mmbArrayTile *in_tile) {
  MMB__REQUIRE_INIT();
  mmb__merge_op op = {.type = MMB_MERGE_OVERWRITE};
  return merge(__func__, in_tile, &op, NULL, NULL, true);
}

static mmbError tile_migrate(const char *func, mmbArrayTile *in_tile, mmbMemSpace *in_space,
                             mmbAccessType in_access, mmbLayout *in_layout, mmbQueue *q,
                             mmbRequest *req) {
  mmb__tile *t;
  mmbError err = tile_arg(func, in_tile, &t);
  if (err != MMB_OK) return err;
  if ((err = check_target(func, t, in_space, in_access, in_layout)) != MMB_OK) return err;
  if (t->origin)
    return mmb__fail(MMB_INVALID_STATE, func, "a duplicate cannot migrate: duplicate it");
  if (t->n_dups)
    return mmb__fail(MMB_BUSY, func, "%zu duplicates of the tile are live", t->n_dups);
  mmbArray *a = t->array;
  bool home = in_space == a->iface->space && !in_layout;
  if (home && !t->storage) return MMB_OK;
  mmb__job j = {.func = func, .name = "migrate", .src = mmb__tile_view(t),
                .kind = in_access & MMB_READ ? MMB__JOB_COPY : MMB__JOB_NONE,
                .from = t->pub.space, .to = in_space};
  j.dst = home ? mmb__tile_home_view(t) : j.src;
  mmb__job_own_tile(&j, 0, t);
  retire_storage(&j, t);
  if ((!home && (err = mmb__storage_new(func, in_space, in_layout, a->layout.order, &j.dst,
                                        &j.made)) != MMB_OK) ||
      (err = mmb__job_start(&j, q, req)) != MMB_OK)
    return err;
  if (home) a->n_migrated--;
  else if (!t->storage) a->n_migrated++;
  if (t->placed) {   /* the caller moves it now: no longer tiling's to bring home */
    t->placed = false;
    a->n_placed--;
  }
  forget_storage(t);
  mmb__tile_set_storage(t, &j.dst, j.made);
  mmb__tile_wrote(t);
  return MMB_OK;
}

mmbError mmb_tile_migrate(mmbArrayTile *in_tile, mmbMemSpace *in_space, mmbAccessType in_access,
                          mmbLayout *in_layout) {
  MMB__REQUIRE_INIT();
  return tile_migrate(__func__, in_tile, in_space, in_access, in_layout, NULL, NULL);
}

mmbError mmb_tile_migrate_async(mmbArrayTile *in_tile, mmbMemSpace *in_space,
                                mmbAccessType in_access, mmbLayout *in_layout, mmbQueue *q,
                                mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  return err != MMB_OK ? err
                       : tile_migrate(__func__, in_tile, in_space, in_access, in_layout, q, req);
}

mmbError mmb_tile_get_space_local_handle(mmbArrayTile *in_tile, mmbArrayTile **out_tile) {
  MMB__REQUIRE_INIT();
  mmb__tile *t;
  mmbError err = tile_arg(__func__, in_tile, &t);
  if (err != MMB_OK) return err;
  MMB__ARG(!out_tile, __func__, "out_tile is NULL");
  if ((err = check_readable(__func__, t, "the tile")) != MMB_OK) return err;
  if (mmb__iface_host_accessible(t->iface)) {
    *out_tile = &t->pub;
    return MMB_OK;
  }
  mmbMemInterface *iface;
  if (!t->local) {
    if ((err = mmb__dup_interface(t->pub.space, &iface)) != MMB_OK ||
        (err = mmb_allocate(sizeof t->pub, iface, &t->local)) != MMB_OK)
      return mmb__fail(err, __func__, "no room for a tile handle in %s", t->pub.space->info.name);
  }
  size_t n = sizeof t->pub;
  void *at = mmb_allocation_ptr(t->local);   /* (a handle: its record is the registry's) */
  if ((err = mmb_allocation_get_interface(t->local, &iface)) == MMB_OK)
    err = mmb__copy_strided(__func__, NULL, iface, at, NULL, NULL, (const char *)&t->pub, NULL,
                            1, &n);
  if (err != MMB_OK) return err;
  *out_tile = at;
  return MMB_OK;
}

/* Whether a view's elements fill one run of bytes: its extents, sorted by
   stride, stack up (extents of 1 do not count). */
static bool view_contiguous(const mmb__view *v) {
  mmb__plan p;
  mmb__plan_make(v, v, &p);
  size_t run = 1;
  for (size_t k = 0; k < p.n; k++) {
    if (p.ds[k] != run) return false;
    run *= p.dim[k];
  }
  return true;
}

mmbError mmb_tile_get_state(mmbArrayTile *tile, mmbTileState *out_state) {
  MMB__REQUIRE_INIT();
  mmb__tile *t;
  mmbError err = tile_arg(__func__, tile, &t);
  if (err != MMB_OK) return err;
  MMB__ARG(!out_state, __func__, "out_state is NULL");
  mmb__view v = mmb__tile_view(t);
  *out_state = (mmbTileState){
      .type = root_array(t)->layout.type,
      .duplicate = t->origin != NULL,
      .writable = writable(t),
      .stale = tile_stale(t),
      .host_accessible = mmb__view_host(&v),
      .contiguous = view_contiguous(&v) && !(mmb__record_soa(t->rec) && t->rec->n > 1),
      .version = t->version,
      .soa = mmb__record_soa(t->rec)};
  return MMB_OK;
}

mmbError mmb_tile_get_field(const mmbArrayTile *tile, size_t index, mmbField *out_field) {
  MMB__REQUIRE_INIT();
  mmb__tile *t;
  mmbError err = tile_arg(__func__, (mmbArrayTile *)tile, &t);
  if (err != MMB_OK) return err;
  return mmb__field_get(__func__, t->rec, t->pub.element_size, t->pub.ptr, t->first, t->cap,
                        t->pub.rank, t->pub.stride, index, out_field);
}

mmbError mmb_tile_mark_written(mmbArrayTile *tile) {
  MMB__REQUIRE_INIT();
  mmb__tile *t;
  mmbError err = tile_arg(__func__, tile, &t);
  if (err == MMB_OK) err = check_writable(__func__, t, "the tile");
  if (err == MMB_OK) mmb__tile_wrote(t);
  return err;
}
