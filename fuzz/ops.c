/* Fuzz target: random sequences of operations over the whole API, misuse
   included (double destroys, merges and waits, use after destroy, merge or
   reset, releases of tiles not acquired), checked against a reference
   model byte for byte: after every operation each live array's home equals
   the model's copy (unless tiles written in the tile cache have not been
   flushed: then at the next flush), every tile acquired for reading holds
   the model's data, and each call returns what the model says
   (MMB_INVALID_ARG for a handle that is gone, MMB_BUSY for an array with
   live duplicates, acquired tiles (at home too, where they are the home
   itself) or, to re-tile, cached copies, and for a
   read or write of a home whose copy is acquired for writing, MMB_OK
   otherwise). */
#include "input.h"

#include <stdbool.h>

#define N_LAYOUTS 3
#define N_ARRAYS 3
#define N_DUPS 4
#define N_REGIONS 2
#define MAX_EXTENT 12

typedef struct layout_slot {
  mmbLayout *h;
  bool live;
} layout_slot;

typedef struct array_slot {
  mmbArray *h;
  bool live;
  size_t n[2], chunk[2];   /* chunk 0: untiled (one tile) */
  float *model;            /* row-major n[0] x n[1] */
  int dups;                /* live tile duplicates */
  int pins;                /* tiles acquired in the cache, not released */
  bool cached;             /* copies may be in the cache (until an evict of all) */
  bool home_behind;        /* written in the cache since the last flush */
} array_slot;

typedef struct dup_slot {
  mmbArrayTile *h;
  bool live;
  int array;
  size_t lo[2], hi[2];
  float *model;            /* row-major over the tile */
} dup_slot;

typedef struct region_slot {
  mmbRegion *h;
  bool live;
} region_slot;

#define N_BARE 6
typedef struct bare_slot {   /* a block of mmb_ptr_allocate on the pool */
  unsigned char *p;          /* kept after a free: freeing it again is misuse */
  size_t n;
  unsigned char fill;
  bool live;
} bare_slot;

#define N_LOCALS 4
typedef struct local_slot {   /* a tile acquired in `small`, `small2` or at home (slot
                                 k in space k % 3): one tile may be cached in both */
  mmbArrayTile *h;            /* kept after the release: releasing again is misuse */
  bool live, write;
  int array;
  size_t lo[2], hi[2];
} local_slot;

static mmbMemSpace *dram, *small, *small2;
static mmbMemInterface *iface, *pool;
static mmbQueue *queue;

static layout_slot layouts[N_LAYOUTS];
static array_slot arrays[N_ARRAYS];
static dup_slot dups[N_DUPS];
static region_slot regions[N_REGIONS];
static bare_slot bare[N_BARE];
static local_slot locals[N_LOCALS];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  CHECK(mmb_init(&(mmbOptions){.log_level = MMB_LOG_OFF}) == MMB_OK, "init");
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram) == MMB_OK, "space");
  mmbMemSpaceConfig cfg = {.size_limit = 4u << 20, .name = "fuzz, small"};
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, &cfg, &small) == MMB_OK, "space");
  cfg.name = "fuzz, small 2";
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, &cfg, &small2) == MMB_OK, "space");
  CHECK(mmb_request_interface(dram, NULL, &iface) == MMB_OK, "interface");
  CHECK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL},
                              &pool) == MMB_OK, "pool");
  CHECK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &queue) == MMB_OK, "q");
  return 0;
}

#define EXPECT(call, want)                                                               \
  do {                                                                                   \
    mmbError got_ = (call);                                                              \
    CHECK(got_ == (want), "%s: %s, the model says %s", #call, mmb_error_name(got_),      \
          mmb_error_name(want));                                                         \
  } while (0)

static float *at(array_slot *a, size_t i, size_t j) { return &a->model[i * a->n[1] + j]; }

/* The home of every live array equals its model (tiles never migrate here). */
static void check_arrays(void) {
  for (int k = 0; k < N_ARRAYS; k++) {
    array_slot *a = &arrays[k];
    if (!a->live || a->home_behind) continue;
    const float *home = mmb_array_ptr(a->h);
    CHECK(home, "a live array has a home");
    for (size_t i = 0; i < a->n[0]; i++)
      for (size_t j = 0; j < a->n[1]; j++)
        CHECK(home[i * a->n[1] + j] == *at(a, i, j), "array %d (%zu,%zu): %g, model %g", k, i, j,
              home[i * a->n[1] + j], *at(a, i, j));
  }
}

static size_t grid(const array_slot *a, size_t d) {
  size_t c = a->chunk[d] ? a->chunk[d] : a->n[d];
  return (a->n[d] + c - 1) / c;
}

static mmbArrayTile *tile_of(input *in, array_slot *a, size_t *lo, size_t *hi) {
  mmbIndex idx = {.size = 2, .d = {in_u8(in) % grid(a, 0), in_u8(in) % grid(a, 1)}};
  mmbArrayTile *t;
  EXPECT(mmb_tile_at(a->h, &idx, &t), MMB_OK);
  for (size_t d = 0; d < 2; d++) {
    size_t c = a->chunk[d] ? a->chunk[d] : a->n[d];
    lo[d] = idx.d[d] * c;
    hi[d] = lo[d] + c < a->n[d] ? lo[d] + c : a->n[d];
    CHECK(t->lower[d] == lo[d] && t->upper[d] == hi[d], "tile bounds");
  }
  return t;
}

static void op_layout(input *in, bool create) {
  layout_slot *l = &layouts[in_u8(in) % N_LAYOUTS];
  if (create) {
    if (l->live) return;
    mmbLayout *h;
    EXPECT(mmb_layout_create_regular_nd(sizeof(float), 2, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &h),
           MMB_OK);
    EXPECT(mmb_layout_set_element_type(h, MMB_TYPE_FLOAT), MMB_OK);
    *l = (layout_slot){h, true};
  } else if (l->h) {
    EXPECT(mmb_layout_destroy(l->h), l->live ? MMB_OK : MMB_INVALID_ARG);
    l->live = false;
  }
}

static void op_array_create(input *in) {
  array_slot *a = &arrays[in_u8(in) % N_ARRAYS];
  layout_slot *l = &layouts[in_u8(in) % N_LAYOUTS];
  if (a->live || !l->h) return;
  size_t n0 = 1 + in_u8(in) % MAX_EXTENT, n1 = 1 + in_u8(in) % MAX_EXTENT;
  mmbArray *h = NULL;
  EXPECT(mmb_array_create(&(mmbDimensions){2, {n0, n1}}, l->h, iface, MMB_READ_WRITE, &h),
         l->live ? MMB_OK : MMB_INVALID_ARG);
  if (!h) return;
  free(a->model);
  *a = (array_slot){.h = h, .live = true, .n = {n0, n1}, .model = malloc(n0 * n1 * sizeof(float))};
  CHECK(a->model, "malloc");
  float *home = mmb_array_ptr(h);
  for (size_t i = 0; i < n0 * n1; i++) home[i] = a->model[i] = (float)(in_u8(in) % 16);
}

static void op_array_destroy(input *in) {
  array_slot *a = &arrays[in_u8(in) % N_ARRAYS];
  if (!a->h) return;
  bool busy = a->dups || a->pins;
  EXPECT(mmb_array_destroy(a->h), !a->live ? MMB_INVALID_ARG : busy ? MMB_BUSY : MMB_OK);
  if (a->live && !busy) a->live = false;
}

static void op_array_tile(input *in) {
  int ai = in_u8(in) % N_ARRAYS;
  array_slot *a = &arrays[ai];
  if (!a->h) return;
  size_t c0 = 1 + in_u8(in) % 8, c1 = 1 + in_u8(in) % 8;
  bool busy = a->dups;   /* or a tile of it acquired at home */
  for (int k = 2; k < N_LOCALS; k += 3) busy = busy || (locals[k].live && locals[k].array == ai);
  mmbError err = mmb_array_tile(a->h, &(mmbDimensions){2, {c0, c1}});
  if (a->live && !busy && a->cached && (err == MMB_OK || err == MMB_BUSY)) {
    /* busy while copies are cached: the budget or the out-of-memory chain
       may have dropped them all, which the model does not follow */
    if (err == MMB_BUSY) return;
    a->cached = false;
  } else {
    EXPECT(err, !a->live ? MMB_INVALID_ARG : busy ? MMB_BUSY : MMB_OK);
  }
  if (a->live && !busy) {
    a->chunk[0] = c0 < a->n[0] ? c0 : a->n[0];
    a->chunk[1] = c1 < a->n[1] ? c1 : a->n[1];
  }
}

static void op_tile_write(input *in) {
  array_slot *a = &arrays[in_u8(in) % N_ARRAYS];
  if (!a->live || a->cached) return;   /* (a write past mmb behind a copy: the caller's to order) */
  size_t lo[2], hi[2];
  mmbArrayTile *t = tile_of(in, a, lo, hi);
  size_t i = lo[0] + in_u8(in) % (hi[0] - lo[0]), j = lo[1] + in_u8(in) % (hi[1] - lo[1]);
  float v = (float)(in_u8(in) % 16);
  MMB_TILE_AT_2D(t, float, i, j) = v;
  *at(a, i, j) = v;
}

/* A copy of a tile of array ai (its first element lo) acquired for
   writing in a cache; of any tile of it when lo is NULL. (A tile acquired
   at home is the home itself: mmb's reads and writes of it go on.) */
static bool write_pinned(int ai, const size_t *lo) {
  for (int k = 0; k < N_LOCALS; k++) {
    const local_slot *l = &locals[k];
    if (l->live && l->write && l->array == ai && k % 3 != 2 &&
        (!lo || (l->lo[0] == lo[0] && l->lo[1] == lo[1])))
      return true;
  }
  return false;
}

static void op_dup(input *in, bool async) {
  int ai = in_u8(in) % N_ARRAYS;
  array_slot *a = &arrays[ai];
  dup_slot *d = &dups[in_u8(in) % N_DUPS];
  if (!a->live || d->live) return;
  size_t lo[2], hi[2];
  mmbArrayTile *t = tile_of(in, a, lo, hi), *h = NULL;
  mmbError want = write_pinned(ai, lo) ? MMB_BUSY : MMB_OK;   /* its copy may still change */
  if (async) {
    mmbRequest req = {0};
    EXPECT(mmb_tile_duplicate_async(t, dram, MMB_READ_WRITE, NULL, queue, &req, &h), want);
    EXPECT(mmb_wait(&req), MMB_OK);
  } else {
    EXPECT(mmb_tile_duplicate(t, dram, MMB_READ_WRITE, NULL, &h), want);
  }
  if (want != MMB_OK) return;
  free(d->model);
  size_t w = hi[1] - lo[1];
  *d = (dup_slot){.h = h, .live = true, .array = ai, .lo = {lo[0], lo[1]}, .hi = {hi[0], hi[1]},
                  .model = malloc((hi[0] - lo[0]) * w * sizeof(float))};
  CHECK(d->model, "malloc");
  for (size_t i = lo[0]; i < hi[0]; i++)
    for (size_t j = lo[1]; j < hi[1]; j++) {
      d->model[(i - lo[0]) * w + j - lo[1]] = *at(a, i, j);
      CHECK(MMB_TILE_AT_2D(h, float, i, j) == *at(a, i, j), "a duplicate holds its tile's data");
    }
  a->dups++;
}

static void op_dup_write(input *in) {
  dup_slot *d = &dups[in_u8(in) % N_DUPS];
  if (!d->live) return;
  size_t i = d->lo[0] + in_u8(in) % (d->hi[0] - d->lo[0]);
  size_t j = d->lo[1] + in_u8(in) % (d->hi[1] - d->lo[1]);
  float v = (float)(in_u8(in) % 16);
  MMB_TILE_AT_2D(d->h, float, i, j) = v;
  d->model[(i - d->lo[0]) * (d->hi[1] - d->lo[1]) + j - d->lo[1]] = v;
}

static void op_merge(input *in) {
  dup_slot *d = &dups[in_u8(in) % N_DUPS];
  if (!d->h) return;
  mmbMergeType m = in_u8(in) % 2 ? MMB_MERGE_SUM : MMB_MERGE_OVERWRITE;
  bool async = in_u8(in) % 2;
  mmbRequest req = {0};
  mmbError want = !d->live ? MMB_INVALID_ARG : write_pinned(d->array, d->lo) ? MMB_BUSY : MMB_OK;
  EXPECT(async ? mmb_tile_merge_async(d->h, m, queue, &req) : mmb_tile_merge(d->h, m), want);
  EXPECT(mmb_wait(&req), MMB_OK);
  if (want != MMB_OK) return;
  array_slot *a = &arrays[d->array];
  size_t w = d->hi[1] - d->lo[1];
  for (size_t i = d->lo[0]; i < d->hi[0]; i++)
    for (size_t j = d->lo[1]; j < d->hi[1]; j++) {
      float v = d->model[(i - d->lo[0]) * w + j - d->lo[1]];
      *at(a, i, j) = m == MMB_MERGE_SUM ? *at(a, i, j) + v : v;
    }
  a->dups--;
  d->live = false;
}

static void op_array_copy(input *in) {
  array_slot *x = &arrays[in_u8(in) % N_ARRAYS], *y = &arrays[in_u8(in) % N_ARRAYS];
  if (!x->h || !y->h || x == y) return;
  if (x->live && y->live && (x->dups || y->dups)) return;   /* (coherence rules: not modelled) */
  bool shaped = x->n[0] == y->n[0] && x->n[1] == y->n[1];
  bool busy = x->live && y->live && (write_pinned((int)(x - arrays), NULL) ||
                                     write_pinned((int)(y - arrays), NULL));
  mmbError want = !x->live || !y->live || !shaped ? MMB_INVALID_ARG : busy ? MMB_BUSY : MMB_OK;
  EXPECT(mmb_array_copy(x->h, y->h), want);
  if (want != MMB_OK) return;
  memcpy(x->model, y->model, x->n[0] * x->n[1] * sizeof(float));
  x->home_behind = y->home_behind = false;   /* their written copies went home first */
}

static void op_region(input *in) {
  region_slot *r = &regions[in_u8(in) % N_REGIONS];
  switch (in_u8(in) % 4) {
    case 0:
      if (r->live) return;
      EXPECT(mmb_region_create(iface, NULL, &r->h), MMB_OK);
      r->live = true;
      return;
    case 1: {
      if (!r->h) return;
      size_t n = 1 + in_u8(in) * 97;
      void *p = NULL;
      EXPECT(mmb_region_alloc(r->h, n, 0, &p), r->live ? MMB_OK : MMB_INVALID_ARG);
      if (p) memset(p, 0x5a, n);
      return;
    }
    case 2:
      if (r->h) EXPECT(mmb_region_reset(r->h), r->live ? MMB_OK : MMB_INVALID_ARG);
      return;
    default:
      if (r->h) EXPECT(mmb_region_destroy(r->h), r->live ? MMB_OK : MMB_INVALID_ARG);
      r->live = false;
  }
}

/* Freeing q, with mmb_ptr_deallocate or (async) mmb_ptr_deallocate_async after the
   queue's work so far: it is the block of the live slot that has that
   address (a stale pointer of a freed slot may name a block handed out
   again, as with malloc), else it is refused. */
static void bare_free(unsigned char *q, bool async) {
  bare_slot *owner = NULL;
  for (int k = 0; k < N_BARE; k++)
    if (bare[k].live && bare[k].p == q) owner = &bare[k];
  if (owner)
    for (size_t i = 0; i < owner->n; i++) CHECK(q[i] == owner->fill, "a bare block lost byte %zu", i);
  EXPECT(async ? mmb_ptr_deallocate_async(q, pool, queue) : mmb_ptr_deallocate(q, pool),
         owner ? MMB_OK : MMB_INVALID_ARG);
  if (owner) owner->live = false;
}

/* Bare blocks: allocate (small and large), free (now or after queue work),
   free twice, free inside a block or on the other interface; a live block
   keeps its bytes. */
static void op_bare(input *in) {
  bare_slot *b = &bare[in_u8(in) % N_BARE];
  switch (in_u8(in) % 4) {
    case 0:
      if (b->live) return;
      b->n = 1 + (size_t)in_u8(in) * (in_u8(in) % 2 ? 9 : 301);
      b->fill = in_u8(in);
      EXPECT(mmb_ptr_allocate(b->n, pool, (void **)&b->p), MMB_OK);
      memset(b->p, b->fill, b->n);
      b->live = true;
      return;
    case 1:
      if (b->p) bare_free(b->p, in_u8(in) % 2);
      return;
    case 2:
      if (b->p && b->n > 64) bare_free(b->p + 64, in_u8(in) % 2);
      return;
    default:
      if (b->p) EXPECT(mmb_ptr_deallocate(b->p, iface), MMB_INVALID_ARG);
  }
}

static void op_requests(input *in) {
  mmbRequest req = {0};
  EXPECT(mmb_queue_marker(queue, &req), MMB_OK);
  mmbRequest copy = req;
  bool done;
  EXPECT(mmb_request_is_complete(&copy, &done), MMB_OK);
  EXPECT(mmb_wait(in_u8(in) % 2 ? &req : &copy), MMB_OK);
  EXPECT(mmb_wait(&copy), copy.impl ? MMB_INVALID_ARG : MMB_OK);
  EXPECT(mmb_wait(&req), req.impl ? MMB_INVALID_ARG : MMB_OK);
}

/* A walk over every tile: plain (each tile equals the model), or
   prefetching into a small space with +1 written to every element (then a
   failed creation must leave the array as it was). */
static void op_iterate(input *in) {
  array_slot *a = &arrays[in_u8(in) % N_ARRAYS];
  if (!a->h || a->cached) return;   /* (a plain walk reads homes a copy may be ahead of) */
  bool prefetch = in_u8(in) % 2;
  mmbTileIteratorOptions o = {.schedule = (mmbTileSchedule)(in_u8(in) % 3)};
  if (prefetch) {
    o.queue = queue;
    o.space = small;
    o.depth = 1 + in_u8(in) % 4;
    o.access = MMB_READ_WRITE;
  }
  mmbTileIterator *it = NULL;
  mmbError err = mmb_tile_iterator_create(a->h, &o, &it);
  if (!a->live) {
    EXPECT(err, MMB_INVALID_ARG);
    return;
  }
  CHECK(err == MMB_OK || (prefetch && err == MMB_OUT_OF_MEMORY), "iterator: %s",
        mmb_error_name(err));
  if (!it) return;
  size_t count = 0, n;
  EXPECT(mmb_tile_iterator_count(it, &n), MMB_OK);
  CHECK(n == grid(a, 0) * grid(a, 1), "tile count");
  for (mmbArrayTile *t; (t = mmb_tile_iterator_tile(it)); count++) {
    size_t lo[2] = {t->lower[0], t->lower[1]}, hi[2] = {t->upper[0], t->upper[1]};
    for (size_t i = lo[0]; i < hi[0]; i++)
      for (size_t j = lo[1]; j < hi[1]; j++) {
        CHECK(MMB_TILE_AT_2D(t, float, i, j) == *at(a, i, j), "a walked tile differs");
        if (prefetch) MMB_TILE_AT_2D(t, float, i, j) += 1.0f;
      }
    err = mmb_tile_iterator_next(it);   /* (t is gone now: a merged duplicate) */
    if (prefetch)   /* the tile just left was merged back, before the next prefetch */
      for (size_t i = lo[0]; i < hi[0]; i++)
        for (size_t j = lo[1]; j < hi[1]; j++) *at(a, i, j) += 1.0f;
    if (err != MMB_OK) {
      CHECK(prefetch && err == MMB_OUT_OF_MEMORY, "next: %s", mmb_error_name(err));
      break;
    }
  }
  if (err == MMB_OK) CHECK(count == n, "walked %zu of %zu tiles", count, n);
  EXPECT(mmb_tile_iterator_destroy(it), MMB_OK);
  EXPECT(mmb_tile_iterator_destroy(it), MMB_INVALID_ARG);
  CHECK(mmb_tile_iterator_tile(it) == NULL, "a destroyed iterator has no tile");
}

/* The tile caches of `small` and `small2`: acquire a tile (now or on the
   queue; for reading, writing or both; a tile written whole when acquired
   for writing alone; in either space or at home, so that a tile written in
   one place is read in another), write a tile acquired for writing, release (a tile
   not acquired any more is refused: a stale handle, unless another live
   tile has the same address), flush (the array, or one tile), evict, or
   change the budget. A budget may refuse an acquire or a smaller budget
   (pinned copies): both are allowed. */
static void op_cache(input *in) {
  local_slot *l = &locals[in_u8(in) % N_LOCALS];
  int ai = in_u8(in) % N_ARRAYS;
  array_slot *a = &arrays[ai];
  switch (in_u8(in) % 6) {
    case 0: {   /* acquire */
      if (!a->live || l->live) return;
      size_t lo[2], hi[2];
      mmbArrayTile *t = tile_of(in, a, lo, hi), *h = NULL;
      for (int k = 0; k < N_LOCALS; k++)   /* one acquire per tile (pins are modelled as 0 or 1) */
        if (locals[k].live && locals[k].array == ai && locals[k].lo[0] == lo[0] &&
            locals[k].lo[1] == lo[1])
          return;
      mmbAccessType acc = (mmbAccessType)(1 + in_u8(in) % 3);
      mmbMemSpace *spaces[3] = {small, small2, dram}, *space = spaces[(l - locals) % 3];
      mmbError err;
      if (in_u8(in) % 2) {
        mmbRequest req = {0};
        err = mmb_tile_acquire_async(t, space, acc, queue, &req, &h);
        if (err == MMB_OK) EXPECT(mmb_wait(&req), MMB_OK);
      } else {
        err = mmb_tile_acquire(t, space, acc, &h);
      }
      CHECK(err == MMB_OK || err == MMB_OUT_OF_MEMORY, "acquire: %s", mmb_error_name(err));
      if (err != MMB_OK) return;
      *l = (local_slot){.h = h, .live = true, .write = acc & MMB_WRITE, .array = ai,
                        .lo = {lo[0], lo[1]}, .hi = {hi[0], hi[1]}};
      a->pins++;
      a->cached = true;
      for (size_t i = lo[0]; i < hi[0]; i++)
        for (size_t j = lo[1]; j < hi[1]; j++) {
          if (acc & MMB_READ)
            CHECK(MMB_TILE_AT_2D(h, float, i, j) == *at(a, i, j), "acquired (%zu,%zu): %g, model %g",
                  i, j, MMB_TILE_AT_2D(h, float, i, j), *at(a, i, j));
          else   /* written whole */
            MMB_TILE_AT_2D(h, float, i, j) = *at(a, i, j) = (float)(in_u8(in) % 16);
        }
      if (acc == MMB_WRITE) a->home_behind = true;
      return;
    }
    case 1: {   /* a write to an acquired tile */
      if (!l->live || !l->write) return;
      array_slot *o = &arrays[l->array];
      size_t i = l->lo[0] + in_u8(in) % (l->hi[0] - l->lo[0]);
      size_t j = l->lo[1] + in_u8(in) % (l->hi[1] - l->lo[1]);
      MMB_TILE_AT_2D(l->h, float, i, j) = *at(o, i, j) = (float)(in_u8(in) % 16);
      o->home_behind = true;
      return;
    }
    case 2: {   /* release */
      if (!l->h) return;
      local_slot *owner = l->live ? l : NULL;
      for (int k = 0; k < N_LOCALS && !owner; k++)
        if (locals[k].live && locals[k].h == l->h) owner = &locals[k];
      EXPECT(mmb_tile_release(l->h), owner ? MMB_OK : MMB_INVALID_ARG);
      if (owner) {
        owner->live = false;
        arrays[owner->array].pins--;
      }
      return;
    }
    case 3:   /* flush: the array, or (odd slots) one live tile of it */
      if (!a->h) return;
      if ((l - locals) % 2 && a->live) {
        size_t lo[2], hi[2];
        EXPECT(mmb_tile_flush(tile_of(in, a, lo, hi)), MMB_OK);   /* (the others may stay behind) */
        return;
      }
      EXPECT(mmb_array_flush(a->h), a->live ? MMB_OK : MMB_INVALID_ARG);
      if (a->live) a->home_behind = false;
      return;
    case 4: {   /* evict, from one cache's space or from every space */
      if (!a->h) return;
      int which = in_u8(in) % 3, pinned = 0;   /* copies of a's tiles acquired where it evicts */
      for (int k = 0; k < N_LOCALS; k++)
        pinned += locals[k].live && locals[k].array == ai && k % 3 != 2 &&
                  (which == 2 || k % 3 == which);
      EXPECT(mmb_array_evict(a->h, which == 0 ? small : which == 1 ? small2 : NULL),
             !a->live ? MMB_INVALID_ARG : pinned ? MMB_BUSY : MMB_OK);
      if (a->live && !a->pins && which == 2) a->cached = a->home_behind = false;
      return;
    }
    default: {   /* budget */
      size_t budget = in_u8(in) % 4 ? (size_t)(1 + in_u8(in) % 16) * 256 : 0;   /* 0: the limit */
      mmbError err = mmb_space_set_cache((l - locals) % 2 ? small2 : small,
                                         &(mmbCacheConfig){.budget_bytes = budget,
                                                           .clean_share = 0.5});
      CHECK(err == MMB_OK || (budget && err == MMB_BUSY), "budget %zu: %s", budget,
            mmb_error_name(err));
    }
  }
}

static void cleanup(void) {
  for (int k = 0; k < N_LOCALS; k++)
    if (locals[k].live) EXPECT(mmb_tile_release(locals[k].h), MMB_OK);
  memset(locals, 0, sizeof locals);
  for (int k = 0; k < N_ARRAYS; k++) {
    arrays[k].pins = 0;
    if (arrays[k].live && arrays[k].home_behind) {
      EXPECT(mmb_array_flush(arrays[k].h), MMB_OK);
      arrays[k].home_behind = false;
    }
  }
  check_arrays();
  EXPECT(mmb_space_set_cache(small, NULL), MMB_OK);
  EXPECT(mmb_space_set_cache(small2, NULL), MMB_OK);
  for (int k = 0; k < N_DUPS; k++) {
    if (dups[k].live) EXPECT(mmb_tile_merge(dups[k].h, MMB_MERGE_OVERWRITE), MMB_OK);
    free(dups[k].model);
  }
  for (int k = 0; k < N_ARRAYS; k++) {
    if (arrays[k].live) EXPECT(mmb_array_destroy(arrays[k].h), MMB_OK);
    free(arrays[k].model);
  }
  for (int k = 0; k < N_LAYOUTS; k++)
    if (layouts[k].live) EXPECT(mmb_layout_destroy(layouts[k].h), MMB_OK);
  for (int k = 0; k < N_REGIONS; k++)
    if (regions[k].live) EXPECT(mmb_region_destroy(regions[k].h), MMB_OK);
  for (int k = 0; k < N_BARE; k++)
    if (bare[k].live) EXPECT(mmb_ptr_deallocate(bare[k].p, pool), MMB_OK);
  memset(bare, 0, sizeof bare);
  EXPECT(mmb_queue_synchronize(queue), MMB_OK);
  EXPECT(mmb_interface_trim(pool, SIZE_MAX), MMB_OK);   /* what mmb_ptr_deallocate_async held back */
  memset(dups, 0, sizeof dups);
  memset(arrays, 0, sizeof arrays);
  memset(layouts, 0, sizeof layouts);
  memset(regions, 0, sizeof regions);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size};
  while (in.n) {
    switch (in_u8(&in) % 17) {
      case 0: op_layout(&in, true); break;
      case 1: op_layout(&in, false); break;
      case 2: op_array_create(&in); break;
      case 3: op_array_destroy(&in); break;
      case 4: op_array_tile(&in); break;
      case 5: op_tile_write(&in); break;
      case 6: op_dup(&in, false); break;
      case 7: op_dup(&in, true); break;
      case 8: op_dup_write(&in); break;
      case 9: op_merge(&in); break;
      case 10: op_array_copy(&in); break;
      case 11: op_region(&in); break;
      case 12: op_requests(&in); break;
      case 13: op_bare(&in); break;
      case 14: op_cache(&in); break;
      default: op_iterate(&in); break;
    }
    check_arrays();
  }
  cleanup();
  mmbStats st;
  CHECK(mmb_interface_get_stats(iface, &st) == MMB_OK && st.used_current == 0,
        "%zu bytes left allocated", st.used_current);
  CHECK(mmb_interface_get_stats(pool, &st) == MMB_OK && st.used_current == 0,
        "%zu bytes left on the pool", st.used_current);
  return 0;
}
