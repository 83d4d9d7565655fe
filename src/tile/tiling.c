/* Tiling: the grid of tiles over an array, made eagerly so that mmb_tile_at
   and the iterators are a lookup. An untiled array is one tile. */
#include "tile/internal.h"

#include <string.h>

mmb__view mmb__tile_home_view(const mmb__tile *t) {
  mmb__view v = mmb__tile_view(t);
  mmbArray *a = t->array;
  size_t off = 0;
  for (size_t k = 0; k < a->rank; k++) {
    v.stride[k] = a->stride[k];
    off += t->pub.lower[k] * a->stride[k];   /* inside the home: no overflow */
  }
  v.iface = a->iface;
  v.esize = a->layout.element_size;
  v.rec = a->layout.rec;
  v.first = off;
  v.cap = a->bytes / v.esize;
  v.ptr = a->data + off * (mmb__record_soa(v.rec) ? v.rec->size[0] : v.esize);
  return v;
}

void mmb__tile_set_storage(mmb__tile *t, const mmb__view *v, mmbAllocation *storage) {
  t->iface = v->iface;
  t->storage = storage;
  t->pub.ptr = v->ptr;
  t->pub.space = v->iface->space;
  t->pub.element_size = v->esize;
  t->rec = v->rec;
  t->first = v->first;
  t->cap = v->cap;
  for (size_t k = 0; k < v->rank; k++) t->pub.stride[k] = v->stride[k];
}

void mmb__tile_set_home(mmb__tile *t) {
  mmb__view v = mmb__tile_home_view(t);
  mmb__tile_set_storage(t, &v, NULL);
}

void mmb__tile_drop_storage(mmb__tile *t) {
  if (t->local) MMB__MUST(mmb_free(t->local));
  t->local = NULL;
  if (t->storage) MMB__MUST(mmb_free(t->storage));
  t->storage = NULL;
}

mmbError mmb__tiling_may_wait(const char *func, const mmbArray *a) {
  const struct mmb__tiling *g = a->tiling;
  for (size_t i = 0; g && i < g->n_tiles; i++) {
    mmbError err = mmb__request_may_wait(func, g->slots[i].tile.pending);
    if (err != MMB_OK) return err;
  }
  return MMB_OK;
}

static void tiling_release(mmbArray *a) {
  struct mmb__tiling *g = a->tiling;
  if (!g) return;
  for (size_t i = 0; i < g->n_tiles; i++) {
    mmb__pending_wait(&g->slots[i].tile.pending);
    mmb__tile_drop_storage(&g->slots[i].tile);
    mmb__object_retire(&g->slots[i].tile);
  }
  mmb__object_free(g);
  a->tiling = NULL;
  a->n_migrated = a->n_placed = 0;
}

static void tile_init(mmbArray *a, struct mmb__tiling *g, size_t linear) {
  mmb__tile *t = &g->slots[linear].tile;
  memset(t, 0, sizeof *t);
  mmb__object_embed(t, MMB__KIND_TILE);
  t->array = a;
  t->pub.rank = a->rank;
  t->pub.element_size = a->layout.element_size;
  for (size_t k = a->rank; k-- > 0;) {   /* linear index: row-major over the grid */
    size_t i = linear % g->grid[k];
    linear /= g->grid[k];
    t->pub.lower[k] = g->cut[k][i];
    t->pub.upper[k] = g->cut[k][i + 1];
    t->pub.dim[k] = t->pub.upper[k] - t->pub.lower[k];
  }
  mmb__tile_set_home(t);
}

/* A grid of grid[k] tiles along each k; its boundaries are written by the
   caller into g->cut (room for grid[k] + 1 each, after the slots). */
static mmbError tiling_alloc(const char *func, const mmbArray *a, const size_t *grid,
                             struct mmb__tiling **out) {
  size_t n = 1, cuts = 0, bytes, more;
  for (size_t k = 0; k < a->rank; k++) {
    if (mmb__mul_overflows(n, grid[k], &n) || mmb__add_overflows(cuts, grid[k] + 1, &cuts))
      return mmb__fail(MMB_OVERFLOW, func, "the tile count overflows size_t");
  }
  if (mmb__mul_overflows(n, sizeof(struct mmb__tile_slot), &bytes) ||
      mmb__add_overflows(bytes, sizeof(struct mmb__tiling), &bytes) ||
      mmb__mul_overflows(cuts, sizeof(size_t), &more) || mmb__add_overflows(bytes, more, &bytes))
    return mmb__fail(MMB_OVERFLOW, func, "%zu tiles do not fit in memory", n);
  struct mmb__tiling *g = mmb__object_new(MMB__KIND_TILING, bytes);
  if (!g) return mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for %zu tiles", n);
  g->n_tiles = n;
  size_t *cut = (size_t *)&g->slots[n];
  for (size_t k = 0; k < a->rank; k++) {
    g->grid[k] = grid[k];
    g->cut[k] = cut;
    cut += grid[k] + 1;
  }
  *out = g;
  return MMB_OK;
}

/* Its tiles made over the boundaries, the largest extents noted; the
   array's old tiling released. */
static void tiling_install(mmbArray *a, struct mmb__tiling *g) {
  for (size_t k = 0; k < a->rank; k++) {
    g->chunk[k] = 0;
    for (size_t i = 0; i < g->grid[k]; i++)
      g->chunk[k] = mmb__max(g->chunk[k], g->cut[k][i + 1] - g->cut[k][i]);
  }
  for (size_t i = 0; i < g->n_tiles; i++) tile_init(a, g, i);
  tiling_release(a);
  a->tiling = g;
  a->tiling_release = tiling_release;
  a->tiling_may_wait = mmb__tiling_may_wait;
}

mmbError mmb__tiling_new(const char *func, mmbArray *a, const size_t *chunk) {
  size_t grid[MMB_MAX_DIMS], c[MMB_MAX_DIMS];
  for (size_t k = 0; k < a->rank; k++) {
    c[k] = mmb__min(chunk[k], a->dims[k]);
    grid[k] = a->dims[k] / c[k] + (a->dims[k] % c[k] != 0);
  }
  struct mmb__tiling *g = NULL;   /* (set when err is MMB_OK; LTO cannot tell) */
  mmbError err = tiling_alloc(func, a, grid, &g);
  if (err != MMB_OK) return err;
  for (size_t k = 0; k < a->rank; k++) {
    size_t *cut = (size_t *)g->cut[k];
    for (size_t i = 0; i < grid[k]; i++) cut[i] = i * c[k];
    cut[grid[k]] = a->dims[k];
  }
  tiling_install(a, g);
  return MMB_OK;
}

mmbError mmb__tiling_new_irregular(const char *func, mmbArray *a, const size_t *grid,
                                   const size_t *bounds) {
  struct mmb__tiling *g;
  mmbError err = tiling_alloc(func, a, grid, &g);
  if (err != MMB_OK) return err;
  const size_t *b = bounds;
  for (size_t k = 0; k < a->rank; b += grid[k] + 1, k++)
    memcpy((size_t *)g->cut[k], b, (grid[k] + 1) * sizeof *b);
  tiling_install(a, g);
  return MMB_OK;
}

mmbError mmb__array_tiling(const char *func, mmbArray *a, struct mmb__tiling **out) {
  if (!a->tiling) {
    mmbError err = mmb__tiling_new(func, a, a->dims);
    if (err != MMB_OK) return err;
  }
  *out = a->tiling;
  return MMB_OK;
}

mmbError mmb_array_tile_grid(const mmbArray *array, mmbDimensions *out_grid) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(array, MMB__KIND_ARRAY, __func__, "array");
  MMB__ARG(!out_grid, __func__, "out_grid is NULL");
  *out_grid = (mmbDimensions){.size = array->rank};
  for (size_t k = 0; k < array->rank; k++)
    out_grid->d[k] = array->tiling ? array->tiling->grid[k] : 1;
  return MMB_OK;
}

mmbError mmb_tile_at(mmbArray *array, const mmbIndex *tile_index, mmbArrayTile **out_tile) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(array, MMB__KIND_ARRAY, __func__, "array");
  MMB__ARG(!tile_index || !out_tile, __func__, "NULL argument");
  MMB__ARG(tile_index->size != array->rank, __func__, "index of rank %zu for an array of "
           "rank %zu", tile_index->size, array->rank);
  struct mmb__tiling *g;
  mmbError err = mmb__array_tiling(__func__, array, &g);
  if (err != MMB_OK) return err;
  size_t linear = 0;
  for (size_t k = 0; k < array->rank; k++) {
    MMB__ARG(tile_index->d[k] >= g->grid[k], __func__, "index %zu of dim %zu is outside the "
             "grid of %zu", tile_index->d[k], k, g->grid[k]);
    linear = linear * g->grid[k] + tile_index->d[k];
  }
  *out_tile = &g->slots[linear].tile.pub;
  return MMB_OK;
}
