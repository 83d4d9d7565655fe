/* Tile transport: copy, duplicate, merge, migrate and space-local handles,
   with the coherence record that decides what moves (see tile.h). */
#include "tile.h"

#include <string.h>

static mmbError tile_arg(const char *func, mmbArrayTile *t, mmb__tile **out) {
  MMB__ARG(!t, func, "tile is NULL");
  mmb__tile *x = mmb__tile_of(t);
  MMB__ARG(!x, func, "%p is not a live tile made by mmb", (void *)t);
  *out = x;
  return MMB_OK;
}

static mmbArray *root_array(const mmb__tile *t) {
  while (!t->array) t = t->origin;
  return t->array;
}

bool mmb__tile_stale(const mmb__tile *t) {
  if (!t->origin || (t->access & MMB_WRITE)) return false;
  const mmb__tile *o = t->origin;
  return o->version != t->seen_version || (o->array && o->array->whole_version != t->seen_whole);
}

static mmbError check_readable(const char *func, const mmb__tile *t, const char *which) {
  if (mmb__tile_stale(t))
    return mmb__fail(MMB_INVALID_STATE, func, "%s is a read-only duplicate whose origin has "
                     "been written since it was copied", which);
  return MMB_OK;
}

static mmbError check_writable(const char *func, const mmb__tile *t, const char *which) {
  if (t->origin ? !(t->access & MMB_WRITE) : !(t->array->access & MMB_WRITE))
    return mmb__fail(MMB_INVALID_STATE, func, "%s is read-only (a read-only duplicate, or a "
                     "tile of an array made without MMB_WRITE)", which);
  return MMB_OK;
}

/* Something mmb did changed the tile's data. */
static void wrote(mmb__tile *t) {
  t->version++;
  if (t->array) t->array->version++;
}

mmbError mmb_tile_copy(mmbArrayTile *dst_tile, mmbArrayTile *src_tile) {
  MMB__REQUIRE_INIT();
  mmb__tile *d, *s;
  mmbError err = tile_arg(__func__, dst_tile, &d);
  if (err == MMB_OK) err = tile_arg(__func__, src_tile, &s);
  if (err != MMB_OK) return err;
  MMB__ARG(d->pub.rank != s->pub.rank || d->pub.element_size != s->pub.element_size ||
           memcmp(d->pub.dim, s->pub.dim, d->pub.rank * sizeof *d->pub.dim), __func__,
           "the tiles differ in rank, extents or element size");
  if (d == s) return MMB_OK;
  if ((err = check_writable(__func__, d, "the destination")) != MMB_OK ||
      (err = check_readable(__func__, s, "the source")) != MMB_OK)
    return err;
  mmb__view dv = mmb__tile_view(d), sv = mmb__tile_view(s);
  uint64_t start = mmb__tile_trace_start();
  if ((err = mmb__view_copy(__func__, &dv, &sv)) != MMB_OK) return err;
  mmb__tile_trace_end("tile copy", start, &dv, s->pub.space, d->pub.space);
  wrote(d);
  return MMB_OK;
}

static mmbError check_target(const char *func, const mmb__tile *t, mmbMemSpace *space,
                             mmbAccessType access, const mmbLayout *layout) {
  MMB__ARG(!space, func, "space is NULL");
  MMB__ARG(!mmb__access_valid(access), func, "unknown access %d", (int)access);
  return layout ? mmb__layout_fits(func, layout, t->pub.rank, t->pub.element_size) : MMB_OK;
}

mmbError mmb_tile_duplicate(mmbArrayTile *in_tile, mmbMemSpace *in_space, mmbAccessType in_access,
                            mmbLayout *in_layout, mmbArrayTile **out_tile) {
  MMB__REQUIRE_INIT();
  mmb__tile *t;
  mmbError err = tile_arg(__func__, in_tile, &t);
  if (err != MMB_OK) return err;
  MMB__ARG(!out_tile, __func__, "out_tile is NULL");
  if ((err = check_target(__func__, t, in_space, in_access, in_layout)) != MMB_OK ||
      (err = check_readable(__func__, t, "the tile")) != MMB_OK ||
      ((in_access & MMB_WRITE) && (err = check_writable(__func__, t, "the tile")) != MMB_OK))
    return err;   /* (a writable duplicate could never be merged into it) */
  mmb__tile *d = mmb__calloc(1, sizeof *d);
  if (!d) return MMB_OUT_OF_MEMORY;
  d->pub = t->pub;
  mmb__view v = mmb__tile_view(t), src = v;
  mmbAllocation *storage;
  err = mmb__storage_new(__func__, in_space, in_layout, root_array(t)->layout.order, &v,
                         &storage);
  uint64_t start = mmb__tile_trace_start();
  if (err == MMB_OK && (in_access & MMB_READ) &&
      (err = mmb__view_copy(__func__, &v, &src)) != MMB_OK)
    mmb_free(storage);
  if (err != MMB_OK) {
    mmb__free(d);
    return err;
  }
  mmb__tile_trace_end("duplicate", start, &v, t->pub.space, in_space);
  mmb__tile_set_storage(d, &v, storage);
  d->magic = MMB__TILE_LIVE;
  d->origin = t;
  d->access = in_access;
  d->seen_version = t->version;
  d->seen_whole = t->array ? t->array->whole_version : 0;
  t->n_dups++;
  if (t->array) t->array->n_tile_dups++;
  *out_tile = &d->pub;
  return MMB_OK;
}

static void release_duplicate(mmb__tile *d) {
  mmb__tile *o = d->origin;
  o->n_dups--;
  if (o->array) o->array->n_tile_dups--;
  mmb__tile_drop_storage(d);
  d->magic = MMB__TILE_DEAD;
  mmb__free(d);
}

static mmbError merge(const char *func, mmbArrayTile *in_tile, mmb__merge_op *op) {
  MMB__REQUIRE_INIT();
  mmb__tile *d;
  mmbError err = tile_arg(func, in_tile, &d);
  if (err != MMB_OK) return err;
  op->etype = root_array(d)->layout.type;
  if ((err = mmb__merge_op_check(func, op)) != MMB_OK) return err;
  if (!d->origin) return mmb__fail(MMB_INVALID_STATE, func, "the tile is not a duplicate");
  if (d->n_dups)
    return mmb__fail(MMB_BUSY, func, "%zu duplicates of this duplicate are live", d->n_dups);
  if (d->access & MMB_WRITE) {
    mmb__tile *o = d->origin;
    if ((err = check_writable(func, o, "the origin")) != MMB_OK) return err;
    mmb__view ov = mmb__tile_view(o), dv = mmb__tile_view(d);
    uint64_t start = mmb__tile_trace_start();
    if ((err = mmb__view_merge(func, &ov, &dv, op)) != MMB_OK) return err;
    mmb__tile_trace_end("merge", start, &dv, d->pub.space, o->pub.space);
    wrote(o);
  }
  release_duplicate(d);
  return MMB_OK;
}

mmbError mmb_tile_merge(mmbArrayTile *in_tile, mmbMergeType in_merge) {
  mmb__merge_op op = {.type = in_merge};
  return merge(__func__, in_tile, &op);
}

mmbError mmb_tile_merge_with(mmbArrayTile *in_tile, mmbMergeFunction fn, void *user_data) {
  if (mmb_is_initialized()) MMB__ARG(!fn, __func__, "merge function is NULL");
  mmb__merge_op op = {.fn = fn, .user = user_data};
  return merge(__func__, in_tile, &op);
}

static mmbError migrate_home(const char *func, mmb__tile *t, mmbAccessType access) {
  if (!t->storage) return MMB_OK;
  mmb__view hv = mmb__tile_home_view(t), cv = mmb__tile_view(t);
  uint64_t start = mmb__tile_trace_start();
  if (access & MMB_READ) {
    mmbError err = mmb__view_copy(func, &hv, &cv);
    if (err != MMB_OK) return err;
  }
  mmb__tile_trace_end("migrate", start, &hv, t->pub.space, t->array->iface->space);
  mmb__tile_drop_storage(t);
  mmb__tile_set_home(t);
  t->array->n_migrated--;
  wrote(t);
  return MMB_OK;
}

mmbError mmb_tile_migrate(mmbArrayTile *in_tile, mmbMemSpace *in_space, mmbAccessType in_access,
                          mmbLayout *in_layout) {
  MMB__REQUIRE_INIT();
  mmb__tile *t;
  mmbError err = tile_arg(__func__, in_tile, &t);
  if (err != MMB_OK) return err;
  if ((err = check_target(__func__, t, in_space, in_access, in_layout)) != MMB_OK) return err;
  if (t->origin)
    return mmb__fail(MMB_INVALID_STATE, __func__, "a duplicate cannot migrate: duplicate it");
  if (t->n_dups)
    return mmb__fail(MMB_BUSY, __func__, "%zu duplicates of the tile are live", t->n_dups);
  mmbArray *a = t->array;
  if (in_space == a->iface->space && !in_layout) return migrate_home(__func__, t, in_access);
  mmb__view v = mmb__tile_view(t), cur = v;
  mmbAllocation *storage;
  if ((err = mmb__storage_new(__func__, in_space, in_layout, a->layout.order, &v, &storage)) !=
      MMB_OK)
    return err;
  uint64_t start = mmb__tile_trace_start();
  if ((in_access & MMB_READ) && (err = mmb__view_copy(__func__, &v, &cur)) != MMB_OK) {
    mmb_free(storage);
    return err;
  }
  mmb__tile_trace_end("migrate", start, &v, t->pub.space, in_space);
  if (t->storage) mmb__tile_drop_storage(t);
  else a->n_migrated++;
  mmb__tile_set_storage(t, &v, storage);
  wrote(t);
  return MMB_OK;
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
    if ((err = mmb__space_interface(t->pub.space, &iface)) != MMB_OK ||
        (err = mmb_allocate(sizeof t->pub, iface, &t->local)) != MMB_OK)
      return mmb__fail(err, __func__, "no room for a tile handle in %s", t->pub.space->info.name);
  }
  size_t n = sizeof t->pub;
  mmbAllocation *l = t->local;
  err = mmb__copy_strided(__func__, l->interface, l->ptr, NULL, NULL, (const char *)&t->pub,
                          NULL, 1, &n);
  if (err != MMB_OK) return err;
  *out_tile = l->ptr;
  return MMB_OK;
}
