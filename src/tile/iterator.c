/* Tile iterators. The schedule is worked out once, at creation, into the
   order of the tiles' row-major grid positions (none for row-major itself),
   so that next and tile are an increment and a lookup. Morton order sorts
   the tiles by the interleaved bits of their grid coordinates; bits that
   are zero for every tile of a dimension are left out, so grids of any
   shape and rank fit a 128-bit key (at most log2(tiles) + rank bits). */
#include "tile.h"

#include <stdlib.h>

struct mmbTileIterator {
  mmbArray *array;
  struct mmb__tiling *g;
  size_t *order;      /* NULL: row-major */
  size_t pos;
};

typedef struct keyed {
  unsigned __int128 key;
  size_t linear;
} keyed;

static int keyed_cmp(const void *x, const void *y) {
  const keyed *a = x, *b = y;
  return a->key < b->key ? -1 : a->key > b->key;
}

static unsigned bits_for(size_t n) {   /* bits to number 0..n-1 */
  unsigned b = 0;
  while (b < 64 && ((size_t)1 << b) < n) b++;
  return b;
}

static unsigned __int128 morton_key(const size_t *coord, const unsigned *bits, size_t rank,
                                    unsigned max_bits) {
  unsigned __int128 key = 0;
  for (unsigned b = max_bits; b-- > 0;)
    for (size_t k = 0; k < rank; k++)
      if (b < bits[k]) key = key << 1 | ((coord[k] >> b) & 1u);
  return key;
}

static void coords_of(const struct mmb__tiling *g, size_t rank, size_t linear, size_t *coord) {
  for (size_t k = rank; k-- > 0;) {
    coord[k] = linear % g->grid[k];
    linear /= g->grid[k];
  }
}

static mmbError morton_order(const struct mmb__tiling *g, size_t rank, size_t *order) {
  keyed *v = mmb__malloc(g->n_tiles * sizeof *v);   /* fits: the tiles' own array is bigger */
  if (!v) return MMB_OUT_OF_MEMORY;
  unsigned bits[MMB_MAX_DIMS], max_bits = 0;
  for (size_t k = 0; k < rank; k++) {
    bits[k] = bits_for(g->grid[k]);
    if (bits[k] > max_bits) max_bits = bits[k];
  }
  size_t coord[MMB_MAX_DIMS];
  for (size_t i = 0; i < g->n_tiles; i++) {
    coords_of(g, rank, i, coord);
    v[i] = (keyed){morton_key(coord, bits, rank, max_bits), i};
  }
  qsort(v, g->n_tiles, sizeof *v, keyed_cmp);
  for (size_t i = 0; i < g->n_tiles; i++) order[i] = v[i].linear;
  mmb__free(v);
  return MMB_OK;
}

static void colmajor_order(const struct mmb__tiling *g, size_t rank, size_t *order) {
  for (size_t i = 0; i < g->n_tiles; i++) {
    size_t rest = i, linear = 0, coord[MMB_MAX_DIMS];
    for (size_t k = 0; k < rank; k++) {   /* dim 0 fastest */
      coord[k] = rest % g->grid[k];
      rest /= g->grid[k];
    }
    for (size_t k = 0; k < rank; k++) linear = linear * g->grid[k] + coord[k];
    order[i] = linear;
  }
}

mmbError mmb_tile_iterator_create(mmbArray *in_array, const mmbTileIteratorOptions *opts,
                                  mmbTileIterator **out_it) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!in_array || !out_it, __func__, "NULL argument");
  mmbTileSchedule s = opts ? opts->schedule : MMB_SCHEDULE_ROWMAJOR;
  MMB__ARG((unsigned)s > MMB_SCHEDULE_MORTON, __func__, "unknown schedule %d", (int)s);
  struct mmb__tiling *g;
  mmbError err = mmb__array_tiling(__func__, in_array, &g);
  if (err != MMB_OK) return err;
  mmbTileIterator *it = mmb__calloc(1, sizeof *it);
  if (!it) return MMB_OUT_OF_MEMORY;
  *it = (mmbTileIterator){.array = in_array, .g = g};
  if (s != MMB_SCHEDULE_ROWMAJOR && g->n_tiles > 1) {
    it->order = mmb__malloc(g->n_tiles * sizeof *it->order);
    if (!it->order) err = MMB_OUT_OF_MEMORY;
    else if (s == MMB_SCHEDULE_COLMAJOR) colmajor_order(g, in_array->rank, it->order);
    else err = morton_order(g, in_array->rank, it->order);
  }
  if (err != MMB_OK) {
    mmb__free(it->order);
    mmb__free(it);
    return mmb__fail(err, __func__, "no memory for the schedule of %zu tiles", g->n_tiles);
  }
  in_array->n_iterators++;
  *out_it = it;
  return MMB_OK;
}

mmbError mmb_tile_iterator_first(mmbTileIterator *it) {
  MMB__ARG(!it, __func__, "iterator is NULL");
  it->pos = 0;
  return MMB_OK;
}

mmbError mmb_tile_iterator_next(mmbTileIterator *it) {
  MMB__ARG(!it, __func__, "iterator is NULL");
  if (it->pos >= it->g->n_tiles)
    return mmb__fail(MMB_INVALID_STATE, __func__, "the iterator is past the last tile");
  it->pos++;
  return MMB_OK;
}

mmbError mmb_tile_iterator_count(mmbTileIterator *it, size_t *count) {
  MMB__ARG(!it || !count, __func__, "NULL argument");
  *count = it->g->n_tiles;
  return MMB_OK;
}

static size_t current(const mmbTileIterator *it) {
  return it->order ? it->order[it->pos] : it->pos;
}

mmbArrayTile *mmb_tile_iterator_tile(const mmbTileIterator *it) {
  if (!it || it->pos >= it->g->n_tiles) return NULL;
  return &it->g->tiles[current(it)].pub;
}

mmbError mmb_tile_iterator_index(const mmbTileIterator *it, mmbIndex *out_index) {
  MMB__ARG(!it || !out_index, __func__, "NULL argument");
  if (it->pos >= it->g->n_tiles)
    return mmb__fail(MMB_INVALID_STATE, __func__, "the iterator is past the last tile");
  *out_index = (mmbIndex){.size = it->array->rank};
  coords_of(it->g, it->array->rank, current(it), out_index->d);
  return MMB_OK;
}

mmbError mmb_tile_iterator_destroy(mmbTileIterator *it) {
  MMB__ARG(!it, __func__, "iterator is NULL");
  it->array->n_iterators--;
  mmb__free(it->order);
  mmb__free(it);
  return MMB_OK;
}
