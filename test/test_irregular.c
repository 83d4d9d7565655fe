/* Irregular tilings (mmb_array_tile_irregular): tiles of different sizes
   where the caller puts the boundaries, checked; and everything that
   takes tiles taking them: copies between two arrays tiled alike,
   duplicate and merge, migrate and back, their asynchronous forms, the
   tile cache, and the three kinds of iterator (plain, prefetching, through
   the cache), each against the values fill_array wrote. */
#include "arrays.h"

#define ROWS 23
#define COLS 17
/* 4 x 3 tiles of different heights and widths */
static const size_t bounds[] = {0, 1, 9, 10, 23, /* rows */ 0, 7, 8, 17 /* columns */};
static const mmbDimensions tiles = {2, {4, 3}};

static mmbArray *irregular(mmbMemInterface *iface, double salt) {
  mmbDimensions d = dims2(ROWS, COLS);
  mmbArray *a = test_array(iface, &d, MMB_ROWMAJOR, 0);
  fill_array(a, salt);
  OK(mmb_array_tile_irregular(a, &tiles, bounds));
  return a;
}

static mmbArrayTile *tile_of(mmbArray *a, size_t i, size_t j) {
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){2, {i, j}}, &t));
  return t;
}

/* Every element of t holds fill_array's value with `salt`, times `times`. */
static void assert_tile_holds(const mmbArrayTile *t, double salt, double times) {
  size_t idx[2] = {t->lower[0], t->lower[1]}, lo[2] = {t->lower[0], t->lower[1]};
  do cr_assert_eq(*(double *)tile_elem(t, idx), times * value_at(idx, 2, salt), "(%zu, %zu)",
                  idx[0], idx[1]);
  while (index_next(idx, lo, t->upper, 2));
}

static void scale_tile(mmbArrayTile *t, double by) {
  size_t idx[2] = {t->lower[0], t->lower[1]}, lo[2] = {t->lower[0], t->lower[1]};
  do *(double *)tile_elem(t, idx) *= by;
  while (index_next(idx, lo, t->upper, 2));
}

MMB_TEST(irregular, tiles_span_the_boundaries_given) {
  mmbArray *a = irregular(test_interface(MMB_PROVIDER_SYSTEM, 0), 1);
  mmbDimensions grid;
  OK(mmb_array_tile_grid(a, &grid));
  cr_assert(grid.size == 2 && grid.d[0] == 4 && grid.d[1] == 3);
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < 3; j++) {
      mmbArrayTile *t = tile_of(a, i, j);
      cr_assert(t->lower[0] == bounds[i] && t->upper[0] == bounds[i + 1], "row %zu", i);
      cr_assert(t->lower[1] == bounds[5 + j] && t->upper[1] == bounds[5 + j + 1], "col %zu", j);
      cr_assert(t->dim[0] == t->upper[0] - t->lower[0] && t->dim[1] == t->upper[1] - t->lower[1]);
      assert_tile_holds(t, 1, 1);
    }
  OK(mmb_array_tile(a, &(mmbDimensions){2, {8, 8}}));   /* back to a regular grid */
  OK(mmb_array_tile_grid(a, &grid));
  cr_assert(grid.d[0] == 3 && grid.d[1] == 3);
  OK(mmb_array_destroy(a));
}

MMB_TEST(irregular, bad_boundaries_are_refused) {
  mmbArray *a = irregular(test_interface(MMB_PROVIDER_SYSTEM, 0), 1);
  const size_t not_from_zero[] = {1, 23, 0, 17}, short_of_the_end[] = {0, 22, 0, 17},
               flat[] = {0, 5, 5, 23, 0, 17}, backwards[] = {0, 9, 4, 23, 0, 17};
  const mmbDimensions one = {2, {1, 1}}, two_one = {2, {3, 1}};
  FAILS(mmb_array_tile_irregular(NULL, &one, not_from_zero), MMB_INVALID_ARG);
  FAILS(mmb_array_tile_irregular(a, NULL, not_from_zero), MMB_INVALID_ARG);
  FAILS(mmb_array_tile_irregular(a, &one, NULL), MMB_INVALID_ARG);
  FAILS(mmb_array_tile_irregular(a, &(mmbDimensions){1, {1}}, not_from_zero), MMB_INVALID_ARG);
  FAILS(mmb_array_tile_irregular(a, &(mmbDimensions){2, {0, 1}}, not_from_zero), MMB_INVALID_ARG);
  FAILS(mmb_array_tile_irregular(a, &(mmbDimensions){2, {24, 1}}, not_from_zero),
        MMB_INVALID_ARG);
  FAILS(mmb_array_tile_irregular(a, &one, not_from_zero), MMB_INVALID_ARG);
  FAILS(mmb_array_tile_irregular(a, &one, short_of_the_end), MMB_INVALID_ARG);
  FAILS(mmb_array_tile_irregular(a, &two_one, flat), MMB_INVALID_ARG);
  FAILS(mmb_array_tile_irregular(a, &two_one, backwards), MMB_INVALID_ARG);
  mmbDimensions grid;   /* refused: the tiling is as it was */
  OK(mmb_array_tile_grid(a, &grid));
  cr_assert(grid.d[0] == 4 && grid.d[1] == 3);
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(a, NULL, &it));
  FAILS(mmb_array_tile_irregular(a, &tiles, bounds), MMB_BUSY);
  OK(mmb_tile_iterator_destroy(it));
  OK(mmb_array_destroy(a));
}

MMB_TEST(irregular, copies_duplicates_merges_and_migrations) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = irregular(iface, 1), *b = irregular(iface, 2);
  mmbMemSpace *fast = limited_space(1 << 20), *home;
  OK(mmb_interface_get_space(iface, &home));
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < 3; j++) {
      mmbArrayTile *t = tile_of(a, i, j), *d;
      switch ((i * 3 + j) % 4) {
        case 0:   /* a copy from the same tile of an array tiled alike */
          OK(mmb_tile_copy(t, tile_of(b, i, j)));
          assert_tile_holds(t, 2, 1);
          break;
        case 1:   /* a duplicate written and merged */
          OK(mmb_tile_duplicate(t, fast, MMB_READ_WRITE, NULL, &d));
          cr_assert(d->dim[0] == t->dim[0] && d->dim[1] == t->dim[1]);
          assert_tile_holds(d, 1, 1);
          scale_tile(d, 3);
          OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
          break;
        case 2: {   /* the same on a queue */
          mmbRequest r1 = {0}, r2 = {0};
          OK(mmb_tile_duplicate_async(t, fast, MMB_READ_WRITE, NULL, q, &r1, &d));
          OK(mmb_wait(&r1));
          scale_tile(d, 3);
          OK(mmb_tile_merge_async(d, MMB_MERGE_OVERWRITE, q, &r2));
          OK(mmb_wait(&r2));
          break;
        }
        case 3:   /* migrated away and back */
          OK(mmb_tile_migrate(t, fast, MMB_READ, NULL));
          cr_assert_eq(t->space, fast);
          scale_tile(t, 3);
          OK(mmb_tile_migrate(t, home, MMB_READ, NULL));
          cr_assert_eq(t->space, home);
          break;
      }
    }
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < 3; j++) {
      size_t k = (i * 3 + j) % 4;
      assert_tile_holds(tile_of(a, i, j), k == 0 ? 2 : 1, k == 0 ? 1 : 3);
    }
  mmbStats st;
  OK(mmb_space_get_stats(fast, &st));
  cr_assert_eq(st.used_current, 0);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
  OK(mmb_space_release(fast));
}

/* The plain, prefetching and cached iterators visit each tile of its size
   once; the cache holds the tiles as they are. */
MMB_TEST(irregular, iterators_and_the_tile_cache) {
  mmbArray *a = irregular(test_interface(MMB_PROVIDER_SYSTEM, 0), 1);
  mmbMemSpace *fast = limited_space(1 << 20);
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  const mmbTileIteratorOptions kinds[] = {
      {.schedule = MMB_SCHEDULE_MORTON},
      {.schedule = MMB_SCHEDULE_COLMAJOR, .queue = q, .space = fast, .depth = 2,
       .access = MMB_READ_WRITE},
      {.schedule = MMB_SCHEDULE_ROWMAJOR, .space = fast, .depth = 2, .access = MMB_READ_WRITE},
  };
  for (size_t k = 0; k < 3; k++) {
    mmbTileIterator *it;
    OK(mmb_tile_iterator_create(a, &kinds[k], &it));
    size_t n = 0, elements = 0;
    for (mmbArrayTile *t; (t = mmb_tile_iterator_tile(it)); n++) {
      mmbIndex idx;
      OK(mmb_tile_iterator_get_index(it, &idx));
      mmbArrayTile *home = tile_of(a, idx.d[0], idx.d[1]);
      cr_assert(t->lower[0] == home->lower[0] && t->upper[1] == home->upper[1]);
      assert_tile_holds(t, 1, (double)(1 << k));
      scale_tile(t, 2);
      elements += t->dim[0] * t->dim[1];
      OK(mmb_tile_iterator_next(it));
    }
    OK(mmb_tile_iterator_destroy(it));
    OK(mmb_array_flush(a));   /* the cached walk's copies go home */
    cr_assert(n == 12 && elements == ROWS * COLS, "kind %zu: %zu tiles, %zu elements", k, n,
              elements);
  }
  mmbArrayTile *l;   /* acquire and release, as any tile */
  OK(mmb_tile_acquire(tile_of(a, 3, 2), fast, MMB_READ, &l));
  cr_assert(l->dim[0] == 13 && l->dim[1] == 9);
  assert_tile_holds(l, 1, 8);
  OK(mmb_tile_release(l));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(fast));
}
