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
  v.ptr = a->data + off * a->layout.element_size;
  return v;
}

void mmb__tile_set_storage(mmb__tile *t, const mmb__view *v, mmbAllocation *storage) {
  t->iface = v->iface;
  t->storage = storage;
  t->pub.ptr = v->ptr;
  t->pub.space = v->iface->space;
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
    t->pub.lower[k] = i * g->chunk[k];
    t->pub.upper[k] = mmb__min(t->pub.lower[k] + g->chunk[k], a->dims[k]);
    t->pub.dim[k] = t->pub.upper[k] - t->pub.lower[k];
  }
  mmb__tile_set_home(t);
}

mmbError mmb__tiling_new(const char *func, mmbArray *a, const size_t *chunk) {
  size_t grid[MMB_MAX_DIMS], n = 1, bytes;
  for (size_t k = 0; k < a->rank; k++) {
    size_t c = mmb__min(chunk[k], a->dims[k]);
    grid[k] = a->dims[k] / c + (a->dims[k] % c != 0);
    if (mmb__mul_overflows(n, grid[k], &n))
      return mmb__fail(MMB_OVERFLOW, func, "the tile count overflows size_t");
  }
  if (mmb__mul_overflows(n, sizeof(struct mmb__tile_slot), &bytes) ||
      mmb__add_overflows(bytes, sizeof(struct mmb__tiling), &bytes))
    return mmb__fail(MMB_OVERFLOW, func, "%zu tiles do not fit in memory", n);
  struct mmb__tiling *g = mmb__object_new(MMB__KIND_TILING, bytes);
  if (!g) return mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for %zu tiles", n);
  g->n_tiles = n;
  for (size_t k = 0; k < a->rank; k++) {
    g->grid[k] = grid[k];
    g->chunk[k] = mmb__min(chunk[k], a->dims[k]);
  }
  for (size_t i = 0; i < n; i++) tile_init(a, g, i);
  tiling_release(a);
  a->tiling = g;
  a->tiling_release = tiling_release;
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
