/* Tiles: the grid and edge tiles, bad input, and tile copy, duplicate, merge
   and migrate with their coherence rules and out-of-memory behaviour. */
#include "arrays.h"
#include "fake_device.h"
#include "tile/internal.h"   /* a space's default provider, set for a test device */

#include <stdio.h>
#include <unistd.h>

typedef struct fixture {
  mmbMemInterface *sys;
  mmbMemSpace *home, *fast;
  mmbArray *a;
} fixture;

/* A 10 x 7 array of doubles tiled 4 x 3, in a 1 MiB fast space's reach. */
static fixture setup(size_t fast_limit) {
  fixture f;
  f.sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  OK(mmb_interface_get_space(f.sys, &f.home));
  f.fast = limited_space(fast_limit);
  f.a = test_array(f.sys, &(mmbDimensions){2, {10, 7}}, MMB_ROWMAJOR, 0);
  fill_array(f.a, 1);
  OK(mmb_array_tile(f.a, &(mmbDimensions){2, {4, 3}}));
  return f;
}

static void teardown(fixture *f) {
  OK(mmb_array_destroy(f->a));
  OK(mmb_interface_destroy(f->sys));
  OK(mmb_space_release(f->fast));
}

static mmbArrayTile *tile(mmbArray *a, size_t i, size_t j) {
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){2, {i, j}}, &t));
  return t;
}

/* Every element of a host tile against the array's fill. */
static void assert_tile_filled(const mmbArrayTile *t, double salt) {
  size_t idx[MMB_MAX_DIMS];
  for (size_t k = 0; k < t->rank; k++) idx[k] = t->lower[k];
  do cr_assert_eq(*(double *)tile_elem(t, idx), value_at(idx, t->rank, salt), "at %zu,%zu: %g vs %g (salt %g, lower %zu,%zu stride %zu,%zu)", idx[0], idx[1], *(double *)tile_elem(t, idx), value_at(idx, t->rank, salt), salt, t->lower[0], t->lower[1], t->stride[0], t->stride[1]);
  while (index_next(idx, t->lower, t->upper, t->rank));
}

static void fill_tile(const mmbArrayTile *t, double salt) {
  size_t idx[MMB_MAX_DIMS];
  for (size_t k = 0; k < t->rank; k++) idx[k] = t->lower[k];
  do *(double *)tile_elem(t, idx) = value_at(idx, t->rank, salt);
  while (index_next(idx, t->lower, t->upper, t->rank));
}

MMB_TEST(tile, the_grid_and_its_edge_tiles) {
  fixture f = setup(1 << 20);
  mmbDimensions g;
  OK(mmb_array_tile_grid(f.a, &g));
  cr_assert_eq(g.size, 2);
  cr_assert_eq(g.d[0], 3);
  cr_assert_eq(g.d[1], 3);
  mmbArrayTile *t = tile(f.a, 2, 2);   /* rows 8..9, columns 6..6 */
  cr_assert_eq(t->lower[0], 8);
  cr_assert_eq(t->upper[0], 10);
  cr_assert_eq(t->dim[0], 2);
  cr_assert_eq(t->lower[1], 6);
  cr_assert_eq(t->dim[1], 1);
  cr_assert_eq(t->stride[0], 7);
  cr_assert_eq(t->stride[1], 1);
  cr_assert_eq(t->space, f.home);
  cr_assert_eq(t->element_size, 8);
  cr_assert_eq(MMB_TILE_AT_2D(t, double, 9, 6), value_at((size_t[]){9, 6}, 2, 1));
  cr_assert_eq(t->ptr, array_at(f.a, (size_t[]){8, 6}));
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 3; j++) assert_tile_filled(tile(f.a, i, j), 1);
  /* a chunk bigger than the array is one tile */
  OK(mmb_array_tile(f.a, &(mmbDimensions){2, {100, 100}}));
  OK(mmb_array_tile_grid(f.a, &g));
  cr_assert_eq(g.d[0] * g.d[1], 1);
  cr_assert_eq(tile(f.a, 0, 0)->dim[0], 10);
  teardown(&f);
}

MMB_TEST(tile, an_untiled_array_is_one_tile) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = test_array(sys, &(mmbDimensions){3, {3, 4, 5}}, MMB_COLMAJOR, 0);
  mmbDimensions g;
  OK(mmb_array_tile_grid(a, &g));
  cr_assert_eq(g.d[0] + g.d[1] + g.d[2], 3);
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){3, {0, 0, 0}}, &t));
  cr_assert_eq(t->dim[2], 5);
  cr_assert_eq(t->stride[0], 1);
  cr_assert_eq(t->stride[2], 12);
  fill_array(a, 3);
  cr_assert_eq(MMB_TILE_AT_3D(t, double, 2, 3, 4), value_at((size_t[]){2, 3, 4}, 3, 3));
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(sys));
}

MMB_TEST(tile, bad_input_is_refused) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 0, 0), *out = NULL;
  FAILS(mmb_array_tile(NULL, &(mmbDimensions){2, {1, 1}}), MMB_INVALID_ARG);
  FAILS(mmb_array_tile(f.a, NULL), MMB_INVALID_ARG);
  FAILS(mmb_array_tile(f.a, &(mmbDimensions){3, {1, 1, 1}}), MMB_INVALID_ARG);
  FAILS(mmb_array_tile(f.a, &(mmbDimensions){2, {4, 0}}), MMB_INVALID_ARG);
  FAILS(mmb_array_tile_grid(NULL, &(mmbDimensions){0}), MMB_INVALID_ARG);
  FAILS(mmb_tile_at(f.a, &(mmbIndex){2, {3, 0}}, &out), MMB_INVALID_ARG);
  FAILS(mmb_tile_at(f.a, &(mmbIndex){2, {0, 3}}, &out), MMB_INVALID_ARG);
  FAILS(mmb_tile_at(f.a, &(mmbIndex){1, {0}}, &out), MMB_INVALID_ARG);
  FAILS(mmb_tile_at(f.a, NULL, &out), MMB_INVALID_ARG);
  FAILS(mmb_tile_at(NULL, &(mmbIndex){2, {0, 0}}, &out), MMB_INVALID_ARG);
  FAILS(mmb_tile_copy(NULL, t), MMB_INVALID_ARG);
  FAILS(mmb_tile_duplicate(t, NULL, MMB_READ, NULL, &out), MMB_INVALID_ARG);
  FAILS(mmb_tile_duplicate(t, f.fast, (mmbAccessType)0, NULL, &out), MMB_INVALID_ARG);
  FAILS(mmb_tile_duplicate(t, f.fast, MMB_READ, NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_duplicate(NULL, f.fast, MMB_READ, NULL, &out), MMB_INVALID_ARG);
  FAILS(mmb_tile_migrate(NULL, f.fast, MMB_READ, NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_migrate(t, NULL, MMB_READ, NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_merge(NULL, MMB_MERGE_OVERWRITE), MMB_INVALID_ARG);
  FAILS(mmb_tile_get_space_local_handle(NULL, &out), MMB_INVALID_ARG);
  FAILS(mmb_tile_get_space_local_handle(t, NULL), MMB_INVALID_ARG);
  /* an mmbArrayTile mmb did not make */
  struct { mmbArrayTile pub; char rest[256]; } fake = {0};
  fake.pub = *t;
  FAILS(mmb_tile_merge(&fake.pub, MMB_MERGE_OVERWRITE), MMB_INVALID_ARG);
  FAILS(mmb_tile_copy(t, &fake.pub), MMB_INVALID_ARG);
  cr_assert_null(out);
  teardown(&f);
}

MMB_TEST(tile, copy_between_tiles_of_one_shape_in_any_layout) {
  fixture f = setup(1 << 20);
  mmbArray *b = test_array(f.sys, &(mmbDimensions){2, {10, 7}}, MMB_COLMAJOR, 64);
  OK(mmb_array_tile(b, &(mmbDimensions){2, {4, 3}}));
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 3; j++) OK(mmb_tile_copy(tile(b, i, j), tile(f.a, i, j)));
  assert_array_filled(b, 1);
  FAILS(mmb_tile_copy(tile(b, 0, 0), tile(f.a, 2, 2)), MMB_INVALID_ARG);   /* shapes differ */
  OK(mmb_tile_copy(tile(b, 0, 0), tile(b, 0, 0)));
  /* same extents at other indices: fine, the data moves by position */
  OK(mmb_tile_copy(tile(b, 1, 1), tile(f.a, 0, 0)));
  cr_assert_eq(MMB_TILE_AT_2D(tile(b, 1, 1), double, 4, 3), value_at((size_t[]){0, 0}, 2, 1));
  /* the tiles of a read-only array are read-only */
  mmbLayout *l = test_layout(8, 2, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbArray *ro;
  OK(mmb_array_create(&(mmbDimensions){2, {10, 7}}, l, f.sys, MMB_READ, &ro));
  OK(mmb_array_tile(ro, &(mmbDimensions){2, {4, 3}}));
  mmbArrayTile *d;
  FAILS(mmb_tile_copy(tile(ro, 0, 0), tile(f.a, 0, 0)), MMB_INVALID_STATE);
  FAILS(mmb_tile_duplicate(tile(ro, 0, 0), f.fast, MMB_WRITE, NULL, &d), MMB_INVALID_STATE);
  OK(mmb_tile_copy(tile(f.a, 0, 0), tile(ro, 0, 0)));
  OK(mmb_array_destroy(ro));
  OK(mmb_layout_destroy(l));
  OK(mmb_array_destroy(b));
  teardown(&f);
}

/* Every element of dst is src's at the reversed index: dst = src^T. */
static void assert_transpose_of(const mmbArrayTile *dst, const mmbArrayTile *src) {
  size_t idx[MMB_MAX_DIMS], rev[MMB_MAX_DIMS], r = dst->rank;
  for (size_t k = 0; k < r; k++) idx[k] = dst->lower[k];
  do {
    for (size_t k = 0; k < r; k++) rev[k] = src->lower[k] + idx[r - 1 - k] - dst->lower[r - 1 - k];
    cr_assert_eq(*(double *)tile_elem(dst, idx), *(double *)tile_elem(src, rev));
  } while (index_next(idx, dst->lower, dst->upper, r));
}

/* A transposed copy between tiles of reversed extents, in any layout (the
   blocked kernel for full blocks, its edges, a padded column-major side),
   on a queue, of rank 3, and into memory the host cannot reach. */
MMB_TEST(tile, transposed_copies_in_any_layout) {
  fixture f = setup(1 << 20);
  enum { R = 70, C = 45 };
  mmbArray *a = test_array(f.sys, &(mmbDimensions){2, {R, C}}, MMB_ROWMAJOR, 64);
  mmbArray *b = test_array(f.sys, &(mmbDimensions){2, {C, R}}, MMB_COLMAJOR, 128);
  fill_array(a, 3);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {32, 20}}));
  OK(mmb_array_tile(b, &(mmbDimensions){2, {20, 32}}));
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 3; j++) OK(mmb_tile_copy_transposed(tile(b, j, i), tile(a, i, j)));
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 3; j++) assert_transpose_of(tile(b, j, i), tile(a, i, j));
  mmbTileState st;
  OK(mmb_tile_get_state(tile(b, 1, 1), &st));
  cr_assert_eq(st.version, 1, "a write mmb made");
  /* on a queue, and back: B^T is A again */
  mmbQueue *q;
  mmbRequest r = {0};
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  fill_array(a, 9);
  OK(mmb_tile_copy_transposed_async(tile(a, 1, 2), tile(b, 2, 1), q, &r));
  OK(mmb_wait(&r));
  assert_transpose_of(tile(a, 1, 2), tile(b, 2, 1));
  OK(mmb_queue_destroy(NULL, &q));
  /* refused: extents not reversed, a tile onto itself, a read-only destination */
  FAILS(mmb_tile_copy_transposed(tile(b, 0, 0), tile(b, 0, 0)), MMB_INVALID_ARG);
  FAILS(mmb_tile_copy_transposed(tile(b, 0, 0), tile(a, 2, 2)), MMB_INVALID_ARG);   /* 20x32, 6x5 */
  FAILS(mmb_tile_copy_transposed(tile(a, 0, 0), tile(a, 0, 0)), MMB_INVALID_ARG);
  FAILS(mmb_tile_copy_transposed(NULL, tile(a, 0, 0)), MMB_INVALID_ARG);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {1, 1}}));
  OK(mmb_tile_copy_transposed(tile(a, 0, 0), tile(a, 0, 0)));   /* one element is its transpose */
  /* rank 3 */
  mmbArray *c = test_array(f.sys, &(mmbDimensions){3, {3, 5, 7}}, MMB_ROWMAJOR, 0);
  mmbArray *d = test_array(f.sys, &(mmbDimensions){3, {7, 5, 3}}, MMB_COLMAJOR, 0);
  fill_array(c, 4);
  mmbArrayTile *tc, *td, *dev_t, *back;
  OK(mmb_tile_at(c, &(mmbIndex){3, {0, 0, 0}}, &tc));
  OK(mmb_tile_at(d, &(mmbIndex){3, {0, 0, 0}}, &td));
  OK(mmb_tile_copy_transposed(td, tc));
  assert_transpose_of(td, tc);
  /* into a duplicate the host cannot reach, and back out through a copy */
  mmbMemInterface *dev = fake_device_interface(0);
  mmbMemSpace *dev_space;
  OK(mmb_interface_get_space(dev, &dev_space));
  OK(mmb_tile_duplicate(td, dev_space, MMB_WRITE, NULL, &dev_t));
  OK(mmb_tile_copy_transposed(dev_t, tc));
  OK(mmb_tile_duplicate(dev_t, f.home, MMB_READ, NULL, &back));
  assert_transpose_of(back, tc);
  OK(mmb_tile_discard(back));
  OK(mmb_tile_discard(dev_t));
  OK(mmb_interface_destroy(dev));
  OK(mmb_array_destroy(c));
  OK(mmb_array_destroy(d));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
  teardown(&f);
}

MMB_TEST(tile, duplicate_read_copies_in_and_merge_overwrites) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 1, 1), *d;
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ_WRITE, NULL, &d));
  cr_assert_eq(d->space, f.fast);
  cr_assert_neq(d->ptr, t->ptr);
  cr_assert_eq(d->lower[0], 4);
  cr_assert_eq(d->stride[0], 3, "contiguous by default");
  cr_assert_eq(d->stride[1], 1);
  assert_tile_filled(d, 1);
  fill_tile(d, 9);
  assert_tile_filled(t, 1);   /* the original stays as it was until the merge */
  FAILS(mmb_tile_merge(t, MMB_MERGE_OVERWRITE), MMB_INVALID_STATE);   /* not a duplicate */
  FAILS(mmb_array_tile(f.a, &(mmbDimensions){2, {5, 5}}), MMB_BUSY);
  FAILS(mmb_array_destroy(f.a), MMB_BUSY);
  mmbStats st;
  OK(mmb_space_get_stats(f.fast, &st));
  cr_assert_eq(st.used_current, 4 * 3 * sizeof(double), "the duplicate lives in the fast space");
  OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  assert_tile_filled(t, 9);
  assert_tile_filled(tile(f.a, 1, 0), 1);
  OK(mmb_space_get_stats(f.fast, &st));
  cr_assert_eq(st.used_current, 0);
  OK(mmb_array_tile(f.a, &(mmbDimensions){2, {5, 5}}));
  teardown(&f);
}

MMB_TEST(tile, duplicate_in_a_given_layout) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 0, 1), *d;
  mmbLayout *col = test_layout(8, 2, MMB_COLMAJOR, 64, MMB_TYPE_DOUBLE);
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ_WRITE, col, &d));
  cr_assert_eq(d->stride[0], 1);
  cr_assert_eq(d->stride[1], 8, "columns of 4 doubles padded to 64 bytes");
  cr_assert_eq((uintptr_t)d->ptr % 64, 0);
  assert_tile_filled(d, 1);
  fill_tile(d, 6);
  OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  assert_tile_filled(t, 6);
  mmbLayout *bad_rank = test_layout(8, 3, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbLayout *bad_size = test_layout(4, 2, MMB_ROWMAJOR, 0, MMB_TYPE_FLOAT);
  FAILS(mmb_tile_duplicate(t, f.fast, MMB_READ, bad_rank, &d), MMB_INVALID_ARG);
  FAILS(mmb_tile_duplicate(t, f.fast, MMB_READ, bad_size, &d), MMB_INVALID_ARG);
  FAILS(mmb_tile_migrate(t, f.fast, MMB_READ, bad_size), MMB_INVALID_ARG);
  OK(mmb_layout_destroy(col));
  OK(mmb_layout_destroy(bad_rank));
  OK(mmb_layout_destroy(bad_size));
  teardown(&f);
}

MMB_TEST(tile, merging_a_read_only_duplicate_moves_no_bytes) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 2, 0), *d, *x;
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ, NULL, &d));
  assert_tile_filled(d, 1);
  FAILS(mmb_tile_copy(d, t), MMB_INVALID_STATE);   /* read-only */
  fill_tile(d, 8);   /* behind mmb's back: a merge that moved bytes would show it */
  OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  assert_tile_filled(t, 1);
  /* a read-only duplicate has only read-only duplicates */
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ, NULL, &d));
  x = NULL;
  FAILS(mmb_tile_duplicate(d, f.fast, MMB_READ_WRITE, NULL, &x), MMB_INVALID_STATE);
  FAILS(mmb_tile_duplicate(d, f.fast, MMB_WRITE, NULL, &x), MMB_INVALID_STATE);
  cr_assert_null(x);
  OK(mmb_tile_duplicate(d, f.fast, MMB_READ, NULL, &x));
  OK(mmb_tile_merge(x, MMB_MERGE_OVERWRITE));
  OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  /* SUM of a read-only duplicate moves nothing either */
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ, NULL, &x));
  OK(mmb_tile_merge(x, MMB_MERGE_SUM));
  assert_tile_filled(t, 1);
  teardown(&f);
}

MMB_TEST(tile, a_read_only_duplicate_goes_stale_when_its_origin_is_written) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 0, 0), *r, *w, *rr, *h;
  mmbArrayTile *other = tile(f.a, 1, 0);   /* same extents */
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ, NULL, &r));
  OK(mmb_tile_copy(other, r));   /* fresh */
  OK(mmb_tile_duplicate(t, f.fast, MMB_WRITE, NULL, &w));
  fill_tile(w, 5);
  OK(mmb_tile_merge(w, MMB_MERGE_OVERWRITE));
  FAILS(mmb_tile_copy(other, r), MMB_INVALID_STATE);
  FAILS(mmb_tile_duplicate(r, f.fast, MMB_READ, NULL, &rr), MMB_INVALID_STATE);
  FAILS(mmb_tile_get_space_local_handle(r, &h), MMB_INVALID_STATE);
  OK(mmb_tile_merge(r, MMB_MERGE_OVERWRITE));
  assert_tile_filled(t, 5);
  /* a whole-array write makes tile duplicates stale too */
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ, NULL, &r));
  mmbArray *b = test_array(f.sys, &(mmbDimensions){2, {10, 7}}, MMB_ROWMAJOR, 0);
  fill_array(b, 2);
  OK(mmb_array_copy(f.a, b));
  FAILS(mmb_tile_copy(other, r), MMB_INVALID_STATE);
  OK(mmb_tile_merge(r, MMB_MERGE_OVERWRITE));
  OK(mmb_array_destroy(b));
  teardown(&f);
}

/* A tile's state says what code moving its bytes itself must know, and a
   write made outside mmb, once marked, makes read-only duplicates stale
   exactly as mmb's own writes do. */
MMB_TEST(tile, state_and_writes_made_outside_mmb) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 0, 0), *row, *r, *rr, *w;
  mmbTileState st;
  OK(mmb_tile_get_state(t, &st));
  cr_assert(st.type == MMB_TYPE_DOUBLE && !st.duplicate && st.writable && !st.stale);
  cr_assert(st.host_accessible && !st.contiguous, "4 x 3 of 10 x 7: strided");
  cr_assert_eq(st.version, 0);
  OK(mmb_array_tile(f.a, &(mmbDimensions){2, {2, 7}}));   /* whole rows */
  t = tile(f.a, 0, 0);
  row = tile(f.a, 4, 0);
  OK(mmb_tile_get_state(row, &st));
  cr_assert(st.contiguous, "whole rows are one run");
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ, NULL, &r));
  OK(mmb_tile_get_state(r, &st));
  cr_assert(st.duplicate && !st.writable && !st.stale && st.contiguous);
  FAILS(mmb_tile_mark_written(r), MMB_INVALID_STATE);   /* read-only */
  MMB_TILE_AT_2D(t, double, 1, 1) = -1;   /* a write mmb does not see... */
  OK(mmb_tile_mark_written(t));          /* ...until it is told */
  OK(mmb_tile_get_state(t, &st));
  cr_assert_eq(st.version, 1);
  OK(mmb_tile_get_state(r, &st));
  cr_assert(st.stale);
  FAILS(mmb_tile_copy(row, r), MMB_INVALID_STATE);
  OK(mmb_tile_merge(r, MMB_MERGE_OVERWRITE));   /* moves no bytes: the write stays */
  cr_assert_eq(MMB_TILE_AT_2D(t, double, 1, 1), -1);
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ_WRITE, NULL, &w));
  OK(mmb_tile_mark_written(w));
  OK(mmb_tile_get_state(w, &st));
  cr_assert(st.writable && st.version == 1);
  OK(mmb_tile_merge(w, MMB_MERGE_OVERWRITE));
  /* a discarded duplicate writes nothing back */
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ_WRITE, NULL, &w));
  MMB_TILE_AT_2D(w, double, 1, 1) = 42;
  OK(mmb_tile_discard(w));
  cr_assert_eq(MMB_TILE_AT_2D(t, double, 1, 1), -1);
  FAILS(mmb_tile_discard(t), MMB_INVALID_STATE);
  FAILS(mmb_tile_discard(NULL), MMB_INVALID_ARG);
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ, NULL, &r));
  OK(mmb_tile_duplicate(r, f.fast, MMB_READ, NULL, &rr));
  FAILS(mmb_tile_discard(r), MMB_BUSY);
  OK(mmb_tile_discard(rr));
  OK(mmb_tile_discard(r));
  /* bad handles; a released duplicate; the tile of a read-only array */
  FAILS(mmb_tile_get_state(NULL, &st), MMB_INVALID_ARG);
  FAILS(mmb_tile_get_state(t, NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_get_state(w, &st), MMB_INVALID_ARG);
  FAILS(mmb_tile_mark_written(NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_mark_written(w), MMB_INVALID_ARG);
  mmbArrayTile fake = *t;
  FAILS(mmb_tile_mark_written(&fake), MMB_INVALID_ARG);
  double data[6] = {0};
  mmbLayout *l = test_layout(8, 1, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbArray *ro;
  mmbArrayTile *rt;
  OK(mmb_array_create_wrapped(data, &(mmbDimensions){1, {6}}, l, f.sys, MMB_READ, &ro));
  OK(mmb_tile_at(ro, &(mmbIndex){1, {0}}, &rt));
  OK(mmb_tile_get_state(rt, &st));
  cr_assert(!st.writable && st.contiguous);
  FAILS(mmb_tile_mark_written(rt), MMB_INVALID_STATE);
  OK(mmb_array_destroy(ro));
  OK(mmb_layout_destroy(l));
  teardown(&f);
}

MMB_TEST(tile, duplicates_of_duplicates_merge_in_order) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 1, 2), *d, *dd;
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ_WRITE, NULL, &d));
  OK(mmb_tile_duplicate(d, f.home, MMB_READ_WRITE, NULL, &dd));
  assert_tile_filled(dd, 1);
  fill_tile(dd, 4);
  FAILS(mmb_tile_merge(d, MMB_MERGE_OVERWRITE), MMB_BUSY);
  FAILS(mmb_tile_migrate(d, f.home, MMB_READ, NULL), MMB_INVALID_STATE);
  OK(mmb_tile_merge(dd, MMB_MERGE_OVERWRITE));
  assert_tile_filled(d, 4);
  assert_tile_filled(t, 1);
  OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  assert_tile_filled(t, 4);
  teardown(&f);
}

MMB_TEST(tile, every_merge_type_on_a_tile) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemSpace *home;
  OK(mmb_interface_get_space(sys, &home));
  mmbLayout *l = test_layout(4, 2, MMB_ROWMAJOR, 32, MMB_TYPE_INT32);
  mmbLayout *col = test_layout(4, 2, MMB_COLMAJOR, 0, MMB_TYPE_INT32);
  mmbArray *a;
  OK(mmb_array_create(&(mmbDimensions){2, {6, 5}}, l, sys, MMB_READ_WRITE, &a));
  OK(mmb_array_tile(a, &(mmbDimensions){2, {4, 4}}));
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){2, {0, 0}}, &t));
  mmbMergeType types[] = {MMB_MERGE_SUM, MMB_MERGE_MIN, MMB_MERGE_MAX, MMB_MERGE_OVERWRITE};
  for (size_t m = 0; m < 4; m++) {
    for (size_t i = 0; i < 4; i++)
      for (size_t j = 0; j < 4; j++) MMB_TILE_AT_2D(t, int32_t, i, j) = (int32_t)(i * 4 + j);
    mmbArrayTile *d;   /* in the other order: the merge reorders */
    OK(mmb_tile_duplicate(t, home, MMB_READ_WRITE, col, &d));
    for (size_t i = 0; i < 4; i++)
      for (size_t j = 0; j < 4; j++) MMB_TILE_AT_2D(d, int32_t, i, j) = (int32_t)(15 - i * 4 - j);
    OK(mmb_tile_merge(d, types[m]));
    for (size_t i = 0; i < 4; i++)
      for (size_t j = 0; j < 4; j++) {
        int32_t o = (int32_t)(i * 4 + j), x = 15 - o;
        int32_t want = m == 0 ? o + x : m == 1 ? (x < o ? x : o) : m == 2 ? (x > o ? x : o) : x;
        cr_assert_eq(MMB_TILE_AT_2D(t, int32_t, i, j), want, "merge %zu at %zu,%zu", m, i, j);
      }
  }
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(l));
  OK(mmb_layout_destroy(col));
  OK(mmb_interface_destroy(sys));
}

MMB_TEST(tile, sum_without_an_element_type_is_refused) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemSpace *home;
  OK(mmb_interface_get_space(sys, &home));
  mmbLayout *l = test_layout(8, 1, MMB_ROWMAJOR, 0, MMB_TYPE_BYTES);
  mmbArray *a;
  OK(mmb_array_create(&(mmbDimensions){1, {16}}, l, sys, MMB_READ_WRITE, &a));
  mmbArrayTile *t, *d;
  OK(mmb_tile_at(a, &(mmbIndex){1, {0}}, &t));
  OK(mmb_tile_duplicate(t, home, MMB_READ_WRITE, NULL, &d));
  FAILS(mmb_tile_merge(d, MMB_MERGE_SUM), MMB_INVALID_ARG);
  FAILS(mmb_tile_merge(d, MMB_MERGE_MIN), MMB_INVALID_ARG);
  FAILS(mmb_tile_merge(d, (mmbMergeType)-1), MMB_INVALID_ARG);
  FAILS(mmb_tile_merge_with(d, NULL, NULL), MMB_INVALID_ARG);
  OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(sys));
}

static void max_abs(void *dst, const void *src, size_t n, size_t esize, void *user) {
  double *d = dst;
  const double *s = src;
  for (size_t i = 0; i < n; i++)
    if (s[i] * s[i] > d[i] * d[i]) d[i] = s[i];
  (*(size_t *)user)++;
}

MMB_TEST(tile, a_user_merge_runs_over_contiguous_runs) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 0, 0), *d;
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ_WRITE, NULL, &d));
  fill_tile(d, -2);   /* larger magnitudes, negative */
  size_t calls = 0;
  OK(mmb_tile_merge_with(d, max_abs, &calls));
  cr_assert_eq(calls, 4, "one call per row of the 4 x 3 tile");
  assert_tile_filled(t, -2);
  teardown(&f);
}

/* A merge function that calls back into mmb on the duplicate being merged
   and on its array: the duplicate's handle is refused meanwhile, so the
   array keeps counting it (before, a second merge went through from the
   function, the array could then be destroyed, and the fold read freed
   memory). */
typedef struct meddling_merge {
  mmbArrayTile *dup;
  mmbArray *a;
  mmbError merged, destroyed, retiled;
  size_t calls;
} meddling_merge;

static void meddles(void *dst, const void *src, size_t n, size_t esize, void *user) {
  meddling_merge *m = user;
  if (!m->calls++) {
    m->merged = mmb_tile_merge(m->dup, MMB_MERGE_OVERWRITE);
    m->destroyed = mmb_array_destroy(m->a);
    m->retiled = mmb_array_tile(m->a, &(mmbDimensions){2, {1, 1}});
  }
  memcpy(dst, src, n * esize);
}

MMB_TEST(tile, a_merge_function_cannot_merge_again_or_free_the_array) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 0, 0);
  meddling_merge m = {.a = f.a};
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ_WRITE, NULL, &m.dup));
  fill_tile(m.dup, 5);
  OK(mmb_tile_merge_with(m.dup, meddles, &m));
  FAILS(m.merged, MMB_INVALID_ARG);
  FAILS(m.destroyed, MMB_BUSY);
  FAILS(m.retiled, MMB_BUSY);
  cr_assert_eq(m.calls, 4);
  assert_tile_filled(t, 5);
  FAILS(mmb_tile_merge(m.dup, MMB_MERGE_OVERWRITE), MMB_INVALID_ARG);   /* gone after its merge */
  teardown(&f);
}

MMB_TEST(tile, migrate_moves_the_data_and_back) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 1, 1), *d;
  void *home_ptr = t->ptr;
  OK(mmb_tile_migrate(t, f.fast, MMB_READ_WRITE, NULL));
  cr_assert_eq(t->space, f.fast);
  cr_assert_neq(t->ptr, home_ptr);
  cr_assert_eq(t->stride[0], 3);
  assert_tile_filled(t, 1);
  fill_tile(t, 7);
  cr_assert_eq(*(double *)home_ptr, value_at((size_t[]){4, 3}, 2, 1), "home untouched");
  /* a duplicate of a migrated tile comes from where it lives */
  OK(mmb_tile_duplicate(t, f.home, MMB_READ, NULL, &d));
  assert_tile_filled(d, 7);
  FAILS(mmb_tile_migrate(t, f.home, MMB_READ, NULL), MMB_BUSY);
  OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  FAILS(mmb_array_tile(f.a, &(mmbDimensions){2, {2, 2}}), MMB_BUSY);
  /* fast -> a packed copy in the home space (not home: a layout is given) */
  mmbLayout *row = test_layout(8, 2, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  OK(mmb_tile_migrate(t, f.home, MMB_READ_WRITE, row));
  cr_assert_eq(t->space, f.home);
  cr_assert_neq(t->ptr, home_ptr);
  assert_tile_filled(t, 7);
  OK(mmb_tile_migrate(t, f.home, MMB_READ_WRITE, NULL));   /* home */
  cr_assert_eq(t->ptr, home_ptr);
  assert_tile_filled(t, 7);
  assert_tile_filled(tile(f.a, 1, 0), 1);
  OK(mmb_tile_migrate(t, f.home, MMB_READ_WRITE, NULL));   /* already home: nothing */
  OK(mmb_array_tile(f.a, &(mmbDimensions){2, {2, 2}}));
  OK(mmb_layout_destroy(row));
  teardown(&f);
}

MMB_TEST(tile, write_only_migration_and_duplication_copy_nothing) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 0, 0), *d;
  OK(mmb_tile_duplicate(t, f.fast, MMB_WRITE, NULL, &d));
  fill_tile(d, 3);
  OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  assert_tile_filled(t, 3);
  OK(mmb_tile_migrate(t, f.fast, MMB_READ, NULL));
  fill_tile(t, 4);
  OK(mmb_tile_migrate(t, f.home, MMB_WRITE, NULL));   /* home, without the data */
  assert_tile_filled(t, 3);
  teardown(&f);
}

MMB_TEST(tile, a_space_without_room_leaves_the_tile_as_it_was) {
  fixture f = setup(4096);   /* a tile of 4 x 3 doubles fits; the array does not */
  mmbArray *big = test_array(f.sys, &(mmbDimensions){2, {64, 64}}, MMB_ROWMAJOR, 0);
  fill_array(big, 2);
  OK(mmb_array_tile(big, &(mmbDimensions){2, {32, 32}}));   /* 8 KiB tiles */
  mmbArrayTile *t = tile(big, 0, 1), *d = NULL;
  mmbArrayTile before = *t;
  FAILS(mmb_tile_duplicate(t, f.fast, MMB_READ, NULL, &d), MMB_OUT_OF_MEMORY);
  cr_assert_null(d);
  FAILS(mmb_tile_migrate(t, f.fast, MMB_READ_WRITE, NULL), MMB_OUT_OF_MEMORY);
  cr_assert_eq(memcmp(&before, t, sizeof before), 0);
  assert_tile_filled(t, 2);
  OK(mmb_array_tile(big, &(mmbDimensions){2, {8, 8}}));   /* no duplicate, nothing migrated */
  mmbStats st;
  OK(mmb_space_get_stats(f.fast, &st));
  cr_assert_eq(st.used_current, 0);
  cr_assert_geq(st.n_failed, 2);
  /* a small tile still fits */
  OK(mmb_tile_duplicate(tile(f.a, 0, 0), f.fast, MMB_READ, NULL, &d));
  OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  OK(mmb_array_destroy(big));
  teardown(&f);
}

MMB_TEST(tile, a_requested_space_is_released_once_its_duplicates_are_gone) {
  fixture f = setup(1 << 20);
  mmbArrayTile *d;
  OK(mmb_tile_duplicate(tile(f.a, 0, 0), f.fast, MMB_READ, NULL, &d));
  FAILS(mmb_space_release(f.fast), MMB_BUSY);
  OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  teardown(&f);   /* releases f.fast */
}

MMB_TEST(tile, a_host_tile_is_its_own_space_local_handle) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 0, 0), *h;
  OK(mmb_tile_get_space_local_handle(t, &h));
  cr_assert_eq(h, t);
  OK(mmb_tile_migrate(t, f.fast, MMB_READ_WRITE, NULL));
  OK(mmb_tile_get_space_local_handle(t, &h));
  cr_assert_eq(h, t);
  cr_assert_eq(MMB_TILE_AT_2D(h, double, 3, 2), value_at((size_t[]){3, 2}, 2, 1));
  teardown(&f);   /* the migrated storage goes with the array */
}

MMB_TEST(tile, migrations_and_duplicates_are_traced) {
  fixture f = setup(1 << 20);
  char path[] = "/tmp/mmb-tile-trace-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  OK(mmb_trace_start());
  mmbArrayTile *t = tile(f.a, 0, 0), *d;
  OK(mmb_tile_duplicate(t, f.fast, MMB_READ_WRITE, NULL, &d));
  OK(mmb_tile_merge(d, MMB_MERGE_SUM));
  OK(mmb_tile_migrate(t, f.fast, MMB_READ_WRITE, NULL));
  OK(mmb_trace_stop());
  OK(mmb_trace_dump(path));
  FILE *fp = fdopen(fd, "r");
  char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, fp);
  buf[n] = 0;
  fclose(fp);
  unlink(path);
  cr_assert_not_null(strstr(buf, "\"name\":\"duplicate\""), "%s", buf);
  cr_assert_not_null(strstr(buf, "\"name\":\"merge\""));
  cr_assert_not_null(strstr(buf, "\"name\":\"migrate\""));
  teardown(&f);
}

/* A tile duplicated to a device in another order, a handle made there,
   merged with a sum, migrated there and back. */
static void device_round_trip(mmbMemSpace *gpu) {
  fixture f = setup(1 << 20);
  mmbArrayTile *t = tile(f.a, 1, 1), *d, *h;
  mmbLayout *col = test_layout(8, 2, MMB_COLMAJOR, 256, MMB_TYPE_DOUBLE);
  OK(mmb_tile_duplicate(t, gpu, MMB_READ_WRITE, col, &d));   /* reordered on the way */
  cr_assert_eq(d->space, gpu);
  mmbTileState st;
  OK(mmb_tile_get_state(d, &st));
  cr_assert(!st.host_accessible && st.duplicate && st.writable);
  OK(mmb_tile_get_space_local_handle(d, &h));
  cr_assert_neq(h, d, "a device copy of the handle");
  OK(mmb_tile_merge(d, MMB_MERGE_SUM));   /* staged through the host */
  cr_assert_eq(MMB_TILE_AT_2D(t, double, 5, 4), 2 * value_at((size_t[]){5, 4}, 2, 1));
  OK(mmb_tile_migrate(t, gpu, MMB_READ_WRITE, NULL));
  OK(mmb_tile_migrate(t, f.home, MMB_READ_WRITE, NULL));
  cr_assert_eq(MMB_TILE_AT_2D(t, double, 5, 4), 2 * value_at((size_t[]){5, 4}, 2, 1));
  OK(mmb_layout_destroy(col));
  teardown(&f);
}

MMB_TEST(tile, device_tiles_round_trip) {
  mmbMemSpace *gpu;
  if (mmb_request_space(MMB_GDRAM, MMB_GPU_CUDA, NULL, &gpu) != MMB_OK)
    cr_skip_test("no CUDA device on this node");
  device_round_trip(gpu);
}

/* The same on a "device" whose memory the host cannot touch: whatever mmb
   does with device tiles, it never dereferences their bytes itself. */
MMB_TEST(tile, device_tiles_are_never_read_by_the_host) {
  mmbProviderType type;
  mmbMemLayer layer;
  mmbMemSpace *dev;
  OK(mmb_provider_register(&guarded_ops, &type));
  OK(mmb_layer_register("GUARDED", &(mmbLayerProperties){.device_only = true}, &layer));
  OK(mmb_request_space(layer, MMB_CPU, NULL, &dev));
  dev->info.default_provider = type;
  device_round_trip(dev);
}

Test(tile, needs_init) {
  cr_assert_eq(mmb_array_tile(NULL, NULL), MMB_NOT_INITIALIZED);
  cr_assert_eq(mmb_tile_merge(NULL, MMB_MERGE_SUM), MMB_NOT_INITIALIZED);
  cr_assert_eq(mmb_tile_get_state(NULL, NULL), MMB_NOT_INITIALIZED);
  cr_assert_eq(mmb_tile_mark_written(NULL), MMB_NOT_INITIALIZED);
  cr_assert_eq(mmb_tile_discard(NULL), MMB_NOT_INITIALIZED);
  cr_assert_eq(mmb_tile_copy_transposed(NULL, NULL), MMB_NOT_INITIALIZED);
}

/* A change of order between 4- or 8-byte elements is a blocked (SIMD)
   transpose: every element of tiles with full blocks and ragged edges,
   padded or not, lands where the other order puts it, both ways. */
static void reorder_round_trip(size_t es) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemSpace *home;
  OK(mmb_interface_get_space(sys, &home));
  enum { R = 70, C = 45 };
  mmbElementType type = es == 4 ? MMB_TYPE_INT32 : MMB_TYPE_INT64;
  mmbLayout *row = test_layout(es, 2, MMB_ROWMAJOR, 64, type);
  mmbLayout *cols[2] = {test_layout(es, 2, MMB_COLMAJOR, 0, type),
                        test_layout(es, 2, MMB_COLMAJOR, 128, type)};
  mmbArray *a;
  OK(mmb_array_create(&(mmbDimensions){2, {R, C}}, row, sys, MMB_READ_WRITE, &a));
  mmbArrayTile *whole;
  OK(mmb_array_tile(a, &(mmbDimensions){2, {R, C}}));
  OK(mmb_tile_at(a, &(mmbIndex){2, {0, 0}}, &whole));
#define AT(t, i, j) (es == 4 ? (int64_t)MMB_TILE_AT_2D(t, int32_t, i, j) : MMB_TILE_AT_2D(t, int64_t, i, j))
#define SET(t, i, j, v)                                        \
  do {                                                         \
    if (es == 4) MMB_TILE_AT_2D(t, int32_t, i, j) = (int32_t)(v); \
    else MMB_TILE_AT_2D(t, int64_t, i, j) = (v);                \
  } while (0)
  for (size_t i = 0; i < R; i++)
    for (size_t j = 0; j < C; j++) SET(whole, i, j, (int64_t)(i * 1000 + j));
  OK(mmb_array_tile(a, &(mmbDimensions){2, {33, 20}}));
  for (size_t c = 0; c < 2; c++)
    for (size_t ti = 0; ti < 3; ti++)
      for (size_t tj = 0; tj < 3; tj++) {
        mmbArrayTile *t, *d;
        OK(mmb_tile_at(a, &(mmbIndex){2, {ti, tj}}, &t));
        OK(mmb_tile_duplicate(t, home, MMB_READ_WRITE, cols[c], &d));
        for (size_t i = t->lower[0]; i < t->upper[0]; i++)   /* pass 0 negates, pass 1 restores */
          for (size_t j = t->lower[1]; j < t->upper[1]; j++) {
            int64_t v = (int64_t)(i * 1000 + j), had = c ? -v - 1 : v;
            cr_assert_eq(AT(d, i, j), had, "%zu-byte, layout %zu, tile %zu,%zu, element %zu,%zu",
                         es, c, ti, tj, i, j);
            SET(d, i, j, c ? v : -v - 1);
          }
        OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));   /* and back: the other transpose */
        for (size_t i = t->lower[0]; i < t->upper[0]; i++)
          for (size_t j = t->lower[1]; j < t->upper[1]; j++) {
            int64_t v = (int64_t)(i * 1000 + j);
            cr_assert_eq(AT(t, i, j), c ? v : -v - 1, "%zu-byte, merged back: layout %zu, %zu,%zu",
                         es, c, i, j);
          }
      }
#undef AT
#undef SET
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(row));
  OK(mmb_layout_destroy(cols[0]));
  OK(mmb_layout_destroy(cols[1]));
}

MMB_TEST(tile, reordering_duplicates_transpose_every_element) {
  reorder_round_trip(4);
  reorder_round_trip(8);
}
