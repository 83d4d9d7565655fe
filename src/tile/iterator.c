/* Tile iterators. The schedule is worked out once, at creation, into the
   order of the tiles' row-major grid positions (none for row-major itself),
   so that next and tile are an increment and a lookup. Morton order sorts
   the tiles by the interleaved bits of their grid coordinates; bits that
   are zero for every tile of a dimension are left out, so grids of any
   shape and rank fit a 128-bit key (at most log2(tiles) + rank bits).

   A custom schedule is checked there too: every position a tile of the
   grid, none twice.

   A prefetching iterator keeps a ring of depth + 2 slots: the current
   tile's duplicate, `depth` duplicates on their way, and the one merged
   last step, whose storage the next duplicate reuses once that merge has
   run. Everything moves on the queue; the caller waits only for the
   duplicate it is about to be handed (and, if the queue falls behind, for
   the merge whose slot it needs). An iterator through a space's tile
   cache holds the current tile acquired, and advises the next depth of
   the schedule WILLNEED as it moves on. */
#include "tile/internal.h"

#include <stdlib.h>

typedef struct slot {
  mmbArrayTile *dup;      /* the duplicate of a tile in the ring; NULL when free */
  mmbRequest ready;       /* its bytes */
  mmbRequest merged;      /* its merge, once issued */
} slot;

struct mmbTileIterator {
  mmbArray *array;
  struct mmb__tiling *g;
  size_t *order;      /* NULL: row-major */
  size_t n;           /* positions of the walk: the tiles, or a custom schedule's */
  size_t pos;
  /* through a space's tile cache (space set, no queue) */
  bool cached;
  mmbArrayTile *local;   /* the current tile's cached copy, acquired */
  /* prefetching (q set) */
  mmbQueue *q;
  mmbMemSpace *space;
  mmbAccessType access;
  mmbMergeType merge;
  size_t depth, n_slots, issued;   /* issued: positions pos..issued-1 are in the ring */
  slot *slots;
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

static mmbError arrive(mmbTileIterator *it);
static mmbError stop_prefetch(mmbTileIterator *it, bool fold);
static void iterator_free(mmbTileIterator *it);

static mmbError check_prefetch(const char *func, const mmbArray *a, mmbTileIteratorOptions *o) {
  if (!o->queue && !o->space) return MMB_OK;
  MMB__ARG(!o->space, func, "prefetching needs a space as well as a queue");
  if (o->queue) MMB__HANDLE(o->queue, MMB__KIND_QUEUE, func, "opts->queue");
  MMB__HANDLE(o->space, MMB__KIND_SPACE, func, "opts->space");
  if (!o->access) o->access = MMB_READ;
  if (!o->depth) o->depth = 1;
  MMB__ARG(!mmb__access_valid(o->access), func, "unknown access %d", (int)o->access);
  mmb__merge_op op = {.type = o->merge, .etype = a->layout.type};
  mmbError err = mmb__merge_op_check(func, &op);
  if (err != MMB_OK) return err;
  if ((o->access & MMB_WRITE) && !(a->access & MMB_WRITE))
    return mmb__fail(MMB_INVALID_STATE, func, "writable duplicates of a read-only array");
  return MMB_OK;
}

/* MMB_SCHEDULE_CUSTOM: the caller's list, or its function's answers,
   checked (each a tile of the grid, none twice, at least one) into
   it->order and it->n. */
static mmbError custom_order(const char *func, mmbTileIterator *it, size_t rank,
                             const mmbTileIteratorOptions *o) {
  const struct mmb__tiling *g = it->g;
  size_t n = g->n_tiles;
  MMB__ARG(!o->order == !o->order_fn, func, "MMB_SCHEDULE_CUSTOM takes opts->order or "
           "opts->order_fn: one of them");
  MMB__ARG(o->order && (o->order_length == 0 || o->order_length > n), func,
           "order_length %zu for a grid of %zu tiles", o->order_length, n);
  size_t *order = mmb__malloc(n * sizeof *order);
  unsigned char *seen = mmb__calloc(n, 1);
  mmbError err = !order || !seen ? mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for a schedule "
                                             "of %zu tiles", n) : MMB_OK;
  mmbDimensions grid = {.size = rank};
  for (size_t k = 0; k < rank; k++) grid.d[k] = g->grid[k];
  size_t len = 0;
  while (err == MMB_OK) {
    size_t linear = 0;
    if (o->order) {
      if (len == o->order_length) break;
      if ((linear = o->order[len]) >= n) {
        err = mmb__fail(MMB_INVALID_ARG, func, "order[%zu] = %zu: the grid has %zu tiles", len,
                        linear, n);
        break;
      }
    } else {
      mmbIndex idx = {0};
      if (!o->order_fn(o->order_arg, &grid, len, &idx)) break;
      bool inside = idx.size == rank;
      for (size_t k = 0; inside && k < rank; k++) {
        inside = idx.d[k] < grid.d[k];
        linear = linear * grid.d[k] + idx.d[k];
      }
      if (!inside) {
        err = mmb__fail(MMB_INVALID_ARG, func, "order_fn's tile at position %zu is not in the "
                        "grid", len);
        break;
      }
    }
    if (seen[linear]) {
      err = mmb__fail(MMB_INVALID_ARG, func, "the schedule visits tile %zu twice (position %zu)",
                      linear, len);
      break;
    }
    seen[linear] = 1;
    order[len++] = linear;
  }
  if (err == MMB_OK && len == 0)
    err = mmb__fail(MMB_INVALID_ARG, func, "the schedule visits no tile");
  mmb__free(seen);
  if (err != MMB_OK) {
    mmb__free(order);
    return err;
  }
  it->order = order;
  it->n = len;
  return MMB_OK;
}

static mmbError acquire_current(mmbTileIterator *it);

mmbError mmb_tile_iterator_create(mmbArray *in_array, const mmbTileIteratorOptions *opts,
                                  mmbTileIterator **out_it) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(in_array, MMB__KIND_ARRAY, __func__, "array");
  MMB__ARG(!out_it, __func__, "out_it is NULL");
  mmbTileIteratorOptions o = opts ? *opts : (mmbTileIteratorOptions){0};
  mmbTileSchedule s = o.schedule;
  MMB__ARG((unsigned)s > MMB_SCHEDULE_CUSTOM, __func__, "unknown schedule %d", (int)s);
  MMB__ARG(s != MMB_SCHEDULE_CUSTOM && (o.order || o.order_fn), __func__,
           "opts->order and opts->order_fn are for MMB_SCHEDULE_CUSTOM");
  mmbError err = check_prefetch(__func__, in_array, &o);
  if (err != MMB_OK) return err;
  struct mmb__tiling *g;
  if ((err = mmb__array_tiling(__func__, in_array, &g)) != MMB_OK) return err;
  mmbTileIterator *it = mmb__object_new(MMB__KIND_ITERATOR, sizeof *it);
  if (!it) return MMB_OUT_OF_MEMORY;
  *it = (mmbTileIterator){.array = in_array, .g = g, .n = g->n_tiles, .q = o.queue,
                          .space = o.space, .cached = o.space && !o.queue, .access = o.access,
                          .merge = o.merge};
  if (s == MMB_SCHEDULE_CUSTOM) {
    /* order_fn is the caller's code, and may call mmb: the array counts the
       iterator meanwhile, so that it is neither destroyed nor re-tiled */
    in_array->n_iterators++;
    err = custom_order(__func__, it, in_array->rank, &o);
    in_array->n_iterators--;
    if (err != MMB_OK) {
      mmb__object_free(it);
      return err;
    }
  } else if (s != MMB_SCHEDULE_ROWMAJOR && g->n_tiles > 1) {
    it->order = mmb__malloc(g->n_tiles * sizeof *it->order);
    if (!it->order) err = MMB_OUT_OF_MEMORY;
    else if (s == MMB_SCHEDULE_COLMAJOR) colmajor_order(g, in_array->rank, it->order);
    else err = morton_order(g, in_array->rank, it->order);
  }
  it->depth = mmb__min(o.depth, it->n);
  if (err == MMB_OK && it->q) {
    it->n_slots = it->depth + 2;
    if (!(it->slots = mmb__calloc(it->n_slots, sizeof *it->slots))) err = MMB_OUT_OF_MEMORY;
  }
  if (err != MMB_OK) {
    mmb__free(it->slots);
    mmb__free(it->order);
    mmb__object_free(it);
    return mmb__fail(err, __func__, "no memory for the schedule of %zu tiles", g->n_tiles);
  }
  in_array->n_iterators++;
  if (it->q && (err = arrive(it)) != MMB_OK) {   /* the walk starts here */
    stop_prefetch(it, false);   /* nothing is written back: the caller got no iterator */
    iterator_free(it);
    return err;
  }
  if (it->cached && (err = acquire_current(it)) != MMB_OK) {
    iterator_free(it);
    return err;
  }
  *out_it = it;
  return MMB_OK;
}

mmbError mmb_tile_iterator_footprint(mmbArray *in_array, const mmbTileIteratorOptions *opts,
                                     size_t *out_bytes) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(in_array, MMB__KIND_ARRAY, __func__, "array");
  MMB__ARG(!opts || !out_bytes, __func__, "NULL argument");
  struct mmb__tiling *g;
  mmbError err = mmb__array_tiling(__func__, in_array, &g);
  if (err != MMB_OK) return err;
  size_t tile = in_array->layout.element_size;   /* the largest tile: the first, packed */
  for (size_t k = 0; k < in_array->rank; k++) tile *= g->chunk[k];   /* <= the array's bytes */
  size_t depth = mmb__min(opts->depth ? opts->depth : 1, g->n_tiles);
  *out_bytes = mmb__pool_footprint(tile, mmb__min(depth + 2, g->n_tiles));
  return MMB_OK;
}

static size_t position(const mmbTileIterator *it, size_t pos) {
  return it->order ? it->order[pos] : pos;
}

/* The grid's tile at walk position pos. */
static mmbArrayTile *tile_at(const mmbTileIterator *it, size_t pos) {
  return &it->g->slots[position(it, pos)].tile.pub;
}

static slot *slot_of(const mmbTileIterator *it, size_t pos) {
  return &it->slots[pos % it->n_slots];
}

/* Once the tile at `pos` has merged, nothing is pending on it: its record
   of the last operation is let go, so a walk over many tiles keeps no
   request per tile. */
static void settle(mmbTileIterator *it, size_t pos) {
  mmb__pending_release_done(&it->g->slots[position(it, pos)].tile.pending);
}

/* Asks for the duplicates of the tiles up to depth ahead of pos. */
static mmbError prefetch(mmbTileIterator *it) {
  size_t n = it->n;
  while (it->issued < n && it->issued <= it->pos + it->depth) {
    slot *s = slot_of(it, it->issued);
    mmbError err = mmb_wait(&s->merged);   /* its storage is about to be reused */
    if (it->issued >= it->n_slots) settle(it, it->issued - it->n_slots);
    if (err == MMB_OK)
      err = mmb_tile_duplicate_async(tile_at(it, it->issued), it->space,
                                     it->access, NULL, it->q, &s->ready, &s->dup);
    if (err != MMB_OK) return err;
    it->issued++;
  }
  return MMB_OK;
}

/* Hands the current duplicate back: merged, or released if read-only. */
static mmbError fold_current(mmbTileIterator *it) {
  slot *s = slot_of(it, it->pos);
  if (!s->dup) return MMB_OK;
  mmbMergeType m = it->access & MMB_WRITE ? it->merge : MMB_MERGE_OVERWRITE;
  mmbError err = mmb_tile_merge_async(s->dup, m, it->q, &s->merged);
  s->dup = NULL;
  return err;
}

/* Ends a walk: the current duplicate is folded back (unless `fold` is
   false: a creation that failed changes nothing), those not yet handed out
   are released unwritten. Returns the first error met. */
static mmbError stop_prefetch(mmbTileIterator *it, bool fold) {
  mmbError first = MMB_OK, err;
  size_t from = it->pos;
  if (fold && it->pos < it->issued) {
    if ((err = fold_current(it)) != MMB_OK) first = err;
    from++;
  }
  for (size_t p = from; p < it->issued; p++) {
    slot *s = slot_of(it, p);
    if ((err = mmb__tile_discard_async(s->dup, it->q)) != MMB_OK && first == MMB_OK) first = err;
    s->dup = NULL;
  }
  for (size_t i = 0; i < it->n_slots; i++) {
    if ((err = mmb_wait(&it->slots[i].ready)) != MMB_OK && first == MMB_OK) first = err;
    if ((err = mmb_wait(&it->slots[i].merged)) != MMB_OK && first == MMB_OK) first = err;
  }
  for (size_t p = it->issued > it->n_slots ? it->issued - it->n_slots : 0; p < it->issued; p++)
    settle(it, p);
  it->issued = it->pos;
  return first;
}

/* Makes the tile at pos current: its duplicate asked for, and arrived. */
static mmbError arrive(mmbTileIterator *it) {
  if (it->pos >= it->n) return MMB_OK;
  mmbError err = prefetch(it);
  return err != MMB_OK ? err : mmb_wait(&slot_of(it, it->pos)->ready);
}

/* Through the cache: the tile at pos acquired, the next depth advised. */
static mmbError acquire_current(mmbTileIterator *it) {
  if (it->pos >= it->n) return MMB_OK;
  mmbError err = mmb_tile_acquire(tile_at(it, it->pos), it->space, it->access, &it->local);
  for (size_t k = 1; err == MMB_OK && k <= it->depth && it->pos + k < it->n; k++)
    err = mmb_tile_advise(tile_at(it, it->pos + k), it->space, MMB_ADVICE_WILLNEED);
  return err;
}

static mmbError release_current(mmbTileIterator *it) {
  mmbError err = it->local ? mmb_tile_release(it->local) : MMB_OK;
  it->local = NULL;
  return err;
}

mmbError mmb_tile_iterator_first(mmbTileIterator *it) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(it, MMB__KIND_ITERATOR, __func__, "iterator");
  if (it->cached) {
    if (it->pos == 0 && it->local) return MMB_OK;   /* already there */
    mmbError err = release_current(it);
    it->pos = 0;
    return err != MMB_OK ? err : acquire_current(it);
  }
  if (it->q && it->pos == 0 && it->issued > 0) return MMB_OK;   /* already there */
  mmbError err = it->q ? stop_prefetch(it, true) : MMB_OK;
  it->pos = it->issued = 0;
  if (err == MMB_OK && it->q) err = arrive(it);
  return err;
}

mmbError mmb_tile_iterator_next(mmbTileIterator *it) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(it, MMB__KIND_ITERATOR, __func__, "iterator");
  if (it->pos >= it->n)
    return mmb__fail(MMB_INVALID_STATE, __func__, "the iterator is past the last tile");
  if (it->cached) {
    mmbError err = release_current(it);
    it->pos++;
    return err != MMB_OK ? err : acquire_current(it);
  }
  if (!it->q) {
    it->pos++;
    return MMB_OK;
  }
  mmbError err = fold_current(it);
  it->pos++;
  return err != MMB_OK ? err : arrive(it);
}

mmbError mmb_tile_iterator_count(mmbTileIterator *it, size_t *count) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(it, MMB__KIND_ITERATOR, __func__, "iterator");
  MMB__ARG(!count, __func__, "count is NULL");
  *count = it->n;
  return MMB_OK;
}

static size_t current(const mmbTileIterator *it) { return position(it, it->pos); }

mmbArrayTile *mmb_tile_iterator_tile(const mmbTileIterator *it) {
  if (!mmb__initialized() || !mmb__object_is(it, MMB__KIND_ITERATOR) || it->pos >= it->n)
    return NULL;
  if (it->cached) return it->local;              /* NULL if its acquire failed */
  if (it->q) return slot_of(it, it->pos)->dup;   /* NULL if its prefetch failed */
  return tile_at(it, it->pos);
}

mmbError mmb_tile_iterator_get_index(const mmbTileIterator *it, mmbIndex *out_index) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(it, MMB__KIND_ITERATOR, __func__, "iterator");
  MMB__ARG(!out_index, __func__, "out_index is NULL");
  if (it->pos >= it->n)
    return mmb__fail(MMB_INVALID_STATE, __func__, "the iterator is past the last tile");
  *out_index = (mmbIndex){.size = it->array->rank};
  coords_of(it->g, it->array->rank, current(it), out_index->d);
  return MMB_OK;
}

/* Deprecated: the former name (its header says which replaces it). */
mmbError mmb_tile_iterator_index(const mmbTileIterator *it, mmbIndex *out_index) {
  return mmb_tile_iterator_get_index(it, out_index);
}

static void iterator_free(mmbTileIterator *it) {
  it->array->n_iterators--;
  mmb__free(it->slots);
  mmb__free(it->order);
  mmb__object_free(it);
}

mmbError mmb_tile_iterator_destroy(mmbTileIterator *it) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(it, MMB__KIND_ITERATOR, __func__, "iterator");
  mmbError err = it->q ? stop_prefetch(it, true) : release_current(it);
  iterator_free(it);
  return err;
}
