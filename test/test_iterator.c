/* Tile iterators: bad input, each schedule's exact order on small grids, and
   every schedule visiting every tile exactly once on grids of any rank. */
#include "arrays.h"

static mmbArray *tiled(mmbMemInterface *iface, mmbDimensions dims, mmbDimensions chunk) {
  mmbLayout *l = test_layout(1, dims.size, MMB_ROWMAJOR, 0, MMB_TYPE_BYTES);
  mmbArray *a;
  OK(mmb_array_create(&dims, l, iface, MMB_READ_WRITE, &a));
  OK(mmb_layout_destroy(l));
  OK(mmb_array_tile(a, &chunk));
  return a;
}

MMB_TEST(iterator, bad_input_is_refused) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = tiled(iface, dims2(4, 4), dims2(2, 2));
  mmbTileIterator *it = NULL;
  size_t n;
  FAILS(mmb_tile_iterator_create(NULL, NULL, &it), MMB_INVALID_ARG);
  FAILS(mmb_tile_iterator_create(a, NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_iterator_create(a, &(mmbTileIteratorOptions){.schedule = (mmbTileSchedule)5}, &it),
        MMB_INVALID_ARG);
  cr_assert_null(it);
  FAILS(mmb_tile_iterator_first(NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_iterator_next(NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_iterator_count(NULL, &n), MMB_INVALID_ARG);
  FAILS(mmb_tile_iterator_destroy(NULL), MMB_INVALID_ARG);
  cr_assert_null(mmb_tile_iterator_tile(NULL));
  OK(mmb_tile_iterator_create(a, NULL, &it));
  FAILS(mmb_tile_iterator_count(it, NULL), MMB_INVALID_ARG);
  FAILS(mmb_array_tile(a, &(mmbDimensions){2, {1, 1}}), MMB_BUSY);
  FAILS(mmb_array_destroy(a), MMB_BUSY);
  OK(mmb_tile_iterator_count(it, &n));
  cr_assert_eq(n, 4);
  for (size_t i = 0; i < 4; i++) {
    cr_assert_not_null(mmb_tile_iterator_tile(it));
    OK(mmb_tile_iterator_next(it));
  }
  cr_assert_null(mmb_tile_iterator_tile(it));
  mmbIndex idx;
  FAILS(mmb_tile_iterator_get_index(it, &idx), MMB_INVALID_STATE);
  FAILS(mmb_tile_iterator_next(it), MMB_INVALID_STATE);   /* already past the end */
  OK(mmb_tile_iterator_first(it));
  cr_assert_not_null(mmb_tile_iterator_tile(it));
  OK(mmb_tile_iterator_destroy(it));
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(iface));
}

/* The grid indices an iterator with options o visits, in order; each tile
   is the grid's, and the iterator counts what it visits. */
static size_t visit_with(mmbArray *a, const mmbTileIteratorOptions *o, size_t (*out)[2],
                         size_t max) {
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(a, o, &it));
  size_t n = 0, count;
  OK(mmb_tile_iterator_count(it, &count));
  mmbError walk = MMB_OK;
  for (mmbArrayTile *t; walk == MMB_OK && (t = mmb_tile_iterator_tile(it));
       walk = mmb_tile_iterator_next(it)) {
    cr_assert_lt(n, max);
    mmbIndex idx;
    OK(mmb_tile_iterator_get_index(it, &idx));
    mmbArrayTile *at;
    OK(mmb_tile_at(a, &idx, &at));
    cr_assert_eq(at, t, "the iterator's tile is the grid's");
    out[n][0] = idx.d[0];
    out[n][1] = idx.d[1];
    n++;
  }
  OK(walk);
  cr_assert_eq(count, n, "count %zu, visited %zu", count, n);
  OK(mmb_tile_iterator_destroy(it));
  return n;
}

static size_t visit(mmbArray *a, mmbTileSchedule s, size_t (*out)[2], size_t max) {
  return visit_with(a, &(mmbTileIteratorOptions){.schedule = s}, out, max);
}

static void expect_order(mmbArray *a, mmbTileSchedule s, const size_t (*want)[2], size_t n) {
  size_t got[64][2];
  cr_assert_eq(visit(a, s, got, 64), n);
  for (size_t i = 0; i < n; i++)
    cr_assert(got[i][0] == want[i][0] && got[i][1] == want[i][1],
              "schedule %d step %zu: (%zu,%zu), expected (%zu,%zu)", (int)s, i, got[i][0],
              got[i][1], want[i][0], want[i][1]);
}

MMB_TEST(iterator, row_major_and_column_major_orders) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = tiled(iface, dims2(5, 6), dims2(2, 3));   /* a 3 x 2 grid */
  const size_t row[][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}};
  const size_t col[][2] = {{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1}, {2, 1}};
  expect_order(a, MMB_SCHEDULE_ROWMAJOR, row, 6);
  expect_order(a, MMB_SCHEDULE_COLMAJOR, col, 6);
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(iterator, morton_order_is_z_order) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = tiled(iface, dims2(4, 4), dims2(1, 1));
  const size_t z[][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3},
                         {2, 0}, {2, 1}, {3, 0}, {3, 1}, {2, 2}, {2, 3}, {3, 2}, {3, 3}};
  expect_order(a, MMB_SCHEDULE_MORTON, z, 16);
  OK(mmb_array_destroy(a));
  /* a 3 x 5 grid: the Z curve of the 4 x 8 box, without the tiles outside */
  a = tiled(iface, dims2(3, 5), dims2(1, 1));
  const size_t zr[][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3},
                          {2, 0}, {2, 1}, {2, 2}, {2, 3}, {0, 4}, {1, 4}, {2, 4}};
  expect_order(a, MMB_SCHEDULE_MORTON, zr, 15);
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(iface));
}

/* Every schedule, on grids of rank 1 to 5, visits every tile exactly once. */
MMB_TEST(iterator, every_schedule_visits_each_tile_once) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  uint64_t seed = 42;
  for (int round = 0; round < 40; round++) {
    size_t rank = 1 + test_rand(&seed) % 5;
    mmbDimensions d = {rank, {0}}, c = {rank, {0}};
    size_t expect = 1;
    for (size_t k = 0; k < rank; k++) {
      d.d[k] = 1 + test_rand(&seed) % 9;
      c.d[k] = 1 + test_rand(&seed) % 4;
      expect *= (d.d[k] + c.d[k] - 1) / c.d[k];
    }
    mmbArray *a = tiled(iface, d, c);
    for (int s = MMB_SCHEDULE_ROWMAJOR; s <= MMB_SCHEDULE_MORTON; s++) {
      mmbTileIterator *it;
      OK(mmb_tile_iterator_create(a, &(mmbTileIteratorOptions){.schedule = (mmbTileSchedule)s}, &it));
      size_t count;
      OK(mmb_tile_iterator_count(it, &count));
      cr_assert_eq(count, expect);
      unsigned char *seen = calloc(count, 1);
      size_t n = 0, covered = 0;
      mmbError walk = MMB_OK;
      for (mmbArrayTile *t; walk == MMB_OK && (t = mmb_tile_iterator_tile(it));
           walk = mmb_tile_iterator_next(it)) {
        mmbIndex idx;
        OK(mmb_tile_iterator_get_index(it, &idx));
        mmbDimensions grid;
        OK(mmb_array_tile_grid(a, &grid));
        size_t lin = 0, cells = 1;
        for (size_t k = 0; k < rank; k++) {
          lin = lin * grid.d[k] + idx.d[k];
          cells *= t->dim[k];
        }
        cr_assert_lt(lin, count);
        cr_assert_eq(seen[lin], 0, "tile %zu visited twice (schedule %d)", lin, s);
        seen[lin] = 1;
        covered += cells;
        n++;
      }
      OK(walk);
      size_t elems = 1;
      for (size_t k = 0; k < rank; k++) elems *= d.d[k];
      cr_assert_eq(n, count);
      cr_assert_eq(covered, elems, "the tiles cover the array exactly");
      free(seen);
      OK(mmb_tile_iterator_destroy(it));
    }
    OK(mmb_array_destroy(a));
  }
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(iterator, an_untiled_array_is_visited_as_one_tile) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l = test_layout(8, 2, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbArray *a;
  OK(mmb_array_create(&(mmbDimensions){2, {3, 3}}, l, iface, MMB_READ_WRITE, &a));
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(a, &(mmbTileIteratorOptions){.schedule = MMB_SCHEDULE_MORTON}, &it));
  size_t n;
  OK(mmb_tile_iterator_count(it, &n));
  cr_assert_eq(n, 1);
  cr_assert_eq(mmb_tile_iterator_tile(it)->dim[1], 3);
  OK(mmb_tile_iterator_destroy(it));
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
}

/* ---- custom schedules ------------------------------------------------------ */

/* The lower triangle of the grid, row by row: a subset, by function. */
static bool lower_triangle(void *arg, const mmbDimensions *grid, size_t position, mmbIndex *out) {
  size_t *calls = arg, row = 0;
  ++*calls;
  while (position > row && row < grid->d[0]) position -= ++row;
  if (row >= grid->d[0] || position > row) return false;
  *out = (mmbIndex){2, {row, position}};
  return true;
}

MMB_TEST(iterator, a_custom_schedule_visits_the_tiles_it_is_given) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = tiled(iface, dims2(5, 6), dims2(2, 3));   /* a 3 x 2 grid */
  const size_t list[] = {5, 3, 4, 1, 0, 2};               /* row-major positions */
  size_t got[16][2];
  mmbTileIteratorOptions o = {.schedule = MMB_SCHEDULE_CUSTOM, .order = list, .order_length = 6};
  cr_assert_eq(visit_with(a, &o, got, 16), 6);
  for (size_t i = 0; i < 6; i++)
    cr_assert(got[i][0] == list[i] / 2 && got[i][1] == list[i] % 2, "step %zu", i);
  o.order_length = 2;   /* a prefix: a subset of the grid */
  cr_assert_eq(visit_with(a, &o, got, 16), 2);
  OK(mmb_array_destroy(a));
  a = tiled(iface, dims2(4, 4), dims2(1, 1));   /* 4 x 4: its lower triangle is 10 tiles */
  size_t calls = 0;
  o = (mmbTileIteratorOptions){.schedule = MMB_SCHEDULE_CUSTOM, .order_fn = lower_triangle,
                               .order_arg = &calls};
  cr_assert_eq(visit_with(a, &o, got, 16), 10);
  cr_assert_eq(calls, 11, "asked once per tile and once more for the end");
  for (size_t i = 0, k = 0; i < 4; i++)
    for (size_t j = 0; j <= i; j++, k++) cr_assert(got[k][0] == i && got[k][1] == j);
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(iface));
}

static bool out_of_grid(void *arg, const mmbDimensions *grid, size_t position, mmbIndex *out) {
  *out = (mmbIndex){2, {position, grid->d[1]}};   /* column one past the grid */
  return true;
}
static bool wrong_rank(void *arg, const mmbDimensions *grid, size_t position, mmbIndex *out) {
  *out = (mmbIndex){1, {0}};
  return true;
}
static bool always_the_first(void *arg, const mmbDimensions *grid, size_t position,
                             mmbIndex *out) {
  *out = (mmbIndex){2, {0, 0}};
  return true;
}
static bool endless(void *arg, const mmbDimensions *grid, size_t position, mmbIndex *out) {
  *out = (mmbIndex){2, {position / grid->d[1] % grid->d[0], position % grid->d[1]}};
  return true;   /* past the last tile: the first again */
}
static bool nothing(void *arg, const mmbDimensions *grid, size_t position, mmbIndex *out) {
  return false;
}

/* An order_fn that pulls the array out from under the iterator being made:
   destroying or re-tiling it is MMB_BUSY meanwhile (before, the destroy
   went through and the creation read the freed array; the re-tiling left
   the iterator on the old grid's tiles). */
typedef struct meddler {
  mmbArray *a;
  mmbError destroyed, retiled;
} meddler;

static bool meddling(void *arg, const mmbDimensions *grid, size_t position, mmbIndex *out) {
  meddler *m = arg;
  if (position == 1) {
    m->destroyed = mmb_array_destroy(m->a);
    m->retiled = mmb_array_tile(m->a, &(mmbDimensions){2, {1, 1}});
  }
  if (position == grid->d[0] * grid->d[1]) return false;
  *out = (mmbIndex){2, {position / grid->d[1], position % grid->d[1]}};
  return true;
}

MMB_TEST(iterator, an_order_fn_cannot_destroy_or_retile_the_array) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = tiled(iface, dims2(4, 4), dims2(2, 2));   /* 2 x 2 */
  meddler m = {.a = a};
  size_t got[16][2];
  mmbTileIteratorOptions o = {.schedule = MMB_SCHEDULE_CUSTOM, .order_fn = meddling,
                              .order_arg = &m};
  cr_assert_eq(visit_with(a, &o, got, 16), 4);
  FAILS(m.destroyed, MMB_BUSY);
  FAILS(m.retiled, MMB_BUSY);
  for (size_t i = 0; i < 4; i++) cr_assert(got[i][0] == i / 2 && got[i][1] == i % 2, "step %zu", i);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {1, 1}}));   /* the count went back down */
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(iterator, a_bad_custom_schedule_is_refused) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = tiled(iface, dims2(4, 4), dims2(2, 2));   /* 2 x 2 */
  mmbTileIterator *it = NULL;
  const size_t repeat[] = {0, 1, 1}, outside[] = {0, 4}, fine[] = {3, 0};
  mmbTileIteratorOptions bad[] = {
      {.schedule = MMB_SCHEDULE_CUSTOM},                                     /* neither */
      {.schedule = MMB_SCHEDULE_CUSTOM, .order = fine, .order_length = 2,
       .order_fn = nothing},                                                 /* both */
      {.schedule = MMB_SCHEDULE_CUSTOM, .order = fine, .order_length = 0},  /* empty */
      {.schedule = MMB_SCHEDULE_CUSTOM, .order = fine, .order_length = 5},  /* over the grid */
      {.schedule = MMB_SCHEDULE_CUSTOM, .order = repeat, .order_length = 3},
      {.schedule = MMB_SCHEDULE_CUSTOM, .order = outside, .order_length = 2},
      {.schedule = MMB_SCHEDULE_CUSTOM, .order_fn = out_of_grid},
      {.schedule = MMB_SCHEDULE_CUSTOM, .order_fn = wrong_rank},
      {.schedule = MMB_SCHEDULE_CUSTOM, .order_fn = always_the_first},
      {.schedule = MMB_SCHEDULE_CUSTOM, .order_fn = endless},
      {.schedule = MMB_SCHEDULE_CUSTOM, .order_fn = nothing},
      {.schedule = MMB_SCHEDULE_ROWMAJOR, .order = fine, .order_length = 2},
      {.schedule = MMB_SCHEDULE_MORTON, .order_fn = endless},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    mmbError e = mmb_tile_iterator_create(a, &bad[i], &it);
    cr_assert_eq(e, MMB_INVALID_ARG, "case %zu: %s", i, mmb_error_string(e));
    cr_assert_null(it);
  }
  OK(mmb_array_tile(a, &(mmbDimensions){2, {1, 1}}));   /* no iterator was left behind */
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(iface));
}
