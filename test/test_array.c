/* Arrays: bad input, homes (owned, wrapped, in a region), and whole-array
   copy, duplicate, merge and migrate with their coherence rules. */
#include "arrays.h"

MMB_TEST(array, bad_input_is_refused) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l2 = test_layout(8, 2, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbDimensions d = dims2(4, 4);
  mmbArray *a = NULL;
  FAILS(mmb_array_create(NULL, l2, iface, MMB_READ, &a), MMB_INVALID_ARG);
  FAILS(mmb_array_create(&d, NULL, iface, MMB_READ, &a), MMB_INVALID_ARG);
  FAILS(mmb_array_create(&d, l2, NULL, MMB_READ, &a), MMB_INVALID_ARG);
  FAILS(mmb_array_create(&d, l2, iface, MMB_READ, NULL), MMB_INVALID_ARG);
  FAILS(mmb_array_create(&d, l2, iface, (mmbAccessType)0, &a), MMB_INVALID_ARG);
  FAILS(mmb_array_create(&d, l2, iface, (mmbAccessType)4, &a), MMB_INVALID_ARG);
  FAILS(mmb_array_create(&(mmbDimensions){3, {4, 4, 4}}, l2, iface, MMB_READ, &a),
        MMB_INVALID_ARG);   /* rank is not the layout's */
  FAILS(mmb_array_create(&(mmbDimensions){0, {0}}, l2, iface, MMB_READ, &a), MMB_INVALID_ARG);
  FAILS(mmb_array_create(&(mmbDimensions){MMB_MAX_DIMS + 1, {1}}, l2, iface, MMB_READ, &a),
        MMB_INVALID_ARG);
  FAILS(mmb_array_create(&(mmbDimensions){2, {4, 0}}, l2, iface, MMB_READ, &a), MMB_INVALID_ARG);
  FAILS(mmb_array_create_opts(&d, l2, iface, MMB_READ, &(mmbArrayOptions){.alignment = 48}, &a),
        MMB_INVALID_ARG);
  FAILS(mmb_array_create_opts(&d, l2, iface, MMB_READ, &(mmbArrayOptions){.flags = 0x80}, &a),
        MMB_INVALID_ARG);
  FAILS(mmb_array_create_wrapped(NULL, &d, l2, iface, MMB_READ, &a), MMB_INVALID_ARG);
  cr_assert_null(a);
  FAILS(mmb_array_destroy(NULL), MMB_INVALID_ARG);
  cr_assert_null(mmb_array_ptr(NULL));
  FAILS(mmb_array_get_dims(NULL, &d), MMB_INVALID_ARG);
  FAILS(mmb_array_copy(NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_array_migrate(NULL, iface, MMB_READ), MMB_INVALID_ARG);
  FAILS(mmb_array_duplicate(NULL, iface, MMB_READ, &a), MMB_INVALID_ARG);
  FAILS(mmb_array_merge(NULL, MMB_MERGE_OVERWRITE), MMB_INVALID_ARG);
  OK(mmb_layout_destroy(l2));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(array, a_home_too_big_for_its_space_is_out_of_memory) {
  mmbMemSpace *small = limited_space(1 << 20);
  mmbMemInterface *iface;
  OK(mmb_request_interface(small, NULL, &iface));
  mmbLayout *l = test_layout(8, 2, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbArray *a = NULL;
  FAILS(mmb_array_create(&(mmbDimensions){2, {1024, 1024}}, l, iface, MMB_READ, &a),
        MMB_OUT_OF_MEMORY);
  cr_assert_null(a);
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 0);
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
  OK(mmb_space_release(small));
}

MMB_TEST(array, a_wrapped_buffer_is_used_in_place_and_never_freed) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  double buf[6] = {0, 1, 2, 3, 4, 5};   /* on the stack: freeing it would crash */
  mmbLayout *l = test_layout(8, 2, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbArray *a;
  OK(mmb_array_create_wrapped(buf, &(mmbDimensions){2, {2, 3}}, l, iface, MMB_READ_WRITE, &a));
  cr_assert_eq(mmb_array_ptr(a), buf);
  cr_assert_eq(*array_at(a, (size_t[]){1, 2}), 5.0);
  /* the array names its interface: destroying that first would leave it dangling */
  FAILS(mmb_interface_destroy(iface), MMB_BUSY);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {1, 3}}));
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 0}}, &t));
  cr_assert_eq(MMB_TILE_AT_2D(t, double, 1, 2), 5.0);
  OK(mmb_array_destroy(a));
  cr_assert_eq(buf[5], 5.0);
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(array, a_home_in_a_region_goes_with_the_region) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0), *other =
      test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *r;
  OK(mmb_region_create(iface, NULL, &r));
  mmbLayout *l = test_layout(8, 2, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbDimensions d = dims2(16, 16);
  mmbArrayOptions o = {.region = r, .flags = MMB_ALLOC_ZERO, .alignment = 256};
  mmbArray *a, *b = NULL;
  FAILS(mmb_array_create_opts(&d, l, other, MMB_READ_WRITE, &o, &b), MMB_INVALID_ARG);
  OK(mmb_array_create_opts(&d, l, NULL, MMB_READ_WRITE, &o, &a));
  OK(mmb_array_create_opts(&d, l, iface, MMB_READ_WRITE, &o, &b));
  cr_assert_eq((uintptr_t)mmb_array_ptr(a) % 256, 0);
  cr_assert_eq(*array_at(a, (size_t[]){15, 15}), 0.0);
  fill_array(a, 1);
  OK(mmb_array_copy(b, a));
  assert_array_filled(b, 1);
  mmbMemInterface *got;
  OK(mmb_array_get_interface(a, &got));
  cr_assert_eq(got, iface);
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  unsigned long long allocs = st.n_allocs;
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.n_allocs, allocs, "the arrays' homes are region memory, not allocations");
  OK(mmb_region_destroy(r));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
  OK(mmb_interface_destroy(other));
}

MMB_TEST(array, zeroed_homes_read_zero) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l = test_layout(8, 1, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbArray *a;
  OK(mmb_array_create_opts(&(mmbDimensions){1, {1000}}, l, iface, MMB_READ_WRITE,
                           &(mmbArrayOptions){.flags = MMB_ALLOC_ZERO}, &a));
  for (size_t i = 0; i < 1000; i++) cr_assert_eq(((double *)mmb_array_ptr(a))[i], 0.0);
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(array, copy_between_orders_paddings_and_interfaces) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemInterface *pinned = test_interface(MMB_PROVIDER_PINNED, 0);
  mmbDimensions d = {3, {5, 7, 3}};
  mmbArray *a = test_array(sys, &d, MMB_ROWMAJOR, 0);
  mmbArray *b = test_array(pinned, &d, MMB_COLMAJOR, 64);
  mmbArray *c = test_array(sys, &d, MMB_ROWMAJOR, 128);
  fill_array(a, 3);
  OK(mmb_array_copy(b, a));
  assert_array_filled(b, 3);
  OK(mmb_array_copy(c, b));
  assert_array_filled(c, 3);
  OK(mmb_array_copy(c, c));
  mmbArray *e = test_array(sys, &(mmbDimensions){3, {5, 7, 4}}, MMB_ROWMAJOR, 0);
  FAILS(mmb_array_copy(e, a), MMB_INVALID_ARG);
  mmbArray *f = test_array(sys, &(mmbDimensions){2, {35, 3}}, MMB_ROWMAJOR, 0);
  FAILS(mmb_array_copy(f, a), MMB_INVALID_ARG);   /* same elements, another rank */
  mmbLayout *l = test_layout(8, 3, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbArray *ro;
  OK(mmb_array_create(&d, l, sys, MMB_READ, &ro));
  FAILS(mmb_array_copy(ro, a), MMB_INVALID_STATE);
  mmbArray *w;   /* nor can a duplicate be merged into it */
  OK(mmb_array_duplicate(ro, sys, MMB_READ_WRITE, &w));
  FAILS(mmb_array_merge(w, MMB_MERGE_OVERWRITE), MMB_INVALID_STATE);
  OK(mmb_array_destroy(w));
  OK(mmb_array_copy(a, ro));   /* a read-only array can be a source */
  mmbArray *all[] = {a, b, c, e, f, ro};
  for (size_t i = 0; i < 6; i++) OK(mmb_array_destroy(all[i]));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(sys));
  OK(mmb_interface_destroy(pinned));
}

MMB_TEST(array, duplicate_then_merge_overwrites_the_origin) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemInterface *pinned = test_interface(MMB_PROVIDER_PINNED, 0);
  mmbArray *a = test_array(sys, &(mmbDimensions){2, {9, 11}}, MMB_ROWMAJOR, 32), *d;
  fill_array(a, 1);
  OK(mmb_array_duplicate(a, pinned, MMB_READ_WRITE, &d));
  assert_array_filled(d, 1);
  mmbDimensions st_a, st_d;
  OK(mmb_array_get_strides(a, &st_a));
  OK(mmb_array_get_strides(d, &st_d));
  cr_assert_eq(st_d.d[0], st_a.d[0], "the duplicate keeps the layout, padding included");
  fill_array(d, 2);
  FAILS(mmb_array_destroy(a), MMB_BUSY);
  FAILS(mmb_array_tile(a, &(mmbDimensions){2, {3, 3}}), MMB_BUSY);   /* while d lives */
  FAILS(mmb_array_merge(a, MMB_MERGE_OVERWRITE), MMB_INVALID_STATE);   /* not a duplicate */
  FAILS(mmb_array_merge(d, (mmbMergeType)9), MMB_INVALID_ARG);
  OK(mmb_array_merge(d, MMB_MERGE_OVERWRITE));
  assert_array_filled(a, 2);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {3, 3}}));   /* d is gone */
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(sys));
  OK(mmb_interface_destroy(pinned));
}

MMB_TEST(array, merging_a_read_only_duplicate_moves_no_bytes) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = test_array(sys, &(mmbDimensions){2, {8, 8}}, MMB_ROWMAJOR, 0), *d;
  fill_array(a, 1);
  OK(mmb_array_duplicate(a, sys, MMB_READ, &d));
  fill_array(d, 5);   /* breaks the promise: a merge that moved bytes would show it */
  OK(mmb_array_merge(d, MMB_MERGE_OVERWRITE));
  assert_array_filled(a, 1);
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(sys));
}

MMB_TEST(array, a_read_only_duplicate_goes_stale_when_its_origin_is_written) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbDimensions dd = dims2(6, 6);
  mmbArray *a = test_array(sys, &dd, MMB_ROWMAJOR, 0), *x = test_array(sys, &dd, MMB_ROWMAJOR, 0);
  mmbArray *r, *w, *rr;
  fill_array(a, 1);
  OK(mmb_array_duplicate(a, sys, MMB_READ, &r));
  OK(mmb_array_copy(x, r));   /* fresh: fine */
  OK(mmb_array_duplicate(a, sys, MMB_WRITE, &w));
  fill_array(w, 2);
  OK(mmb_array_merge(w, MMB_MERGE_OVERWRITE));
  FAILS(mmb_array_copy(x, r), MMB_INVALID_STATE);
  FAILS(mmb_array_duplicate(r, sys, MMB_READ, &rr), MMB_INVALID_STATE);
  /* its tiles are as stale as it is: read through them, refused too */
  mmbArrayTile *rt, *xt, *d;
  OK(mmb_array_tile(r, &(mmbDimensions){2, {3, 3}}));
  OK(mmb_array_tile(x, &(mmbDimensions){2, {3, 3}}));
  OK(mmb_tile_at(r, &(mmbIndex){2, {1, 1}}, &rt));
  OK(mmb_tile_at(x, &(mmbIndex){2, {1, 1}}, &xt));
  FAILS(mmb_tile_copy(xt, rt), MMB_INVALID_STATE);
  mmbMemSpace *space;
  OK(mmb_interface_get_space(sys, &space));
  FAILS(mmb_tile_duplicate(rt, space, MMB_READ, NULL, &d), MMB_INVALID_STATE);
  OK(mmb_array_merge(r, MMB_MERGE_OVERWRITE));   /* releasing it is fine */
  assert_array_filled(a, 2);
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(x));
  OK(mmb_interface_destroy(sys));
}

MMB_TEST(array, destroying_a_duplicate_discards_it) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = test_array(sys, &(mmbDimensions){1, {100}}, MMB_ROWMAJOR, 0), *d;
  fill_array(a, 1);
  OK(mmb_array_duplicate(a, sys, MMB_READ_WRITE, &d));
  fill_array(d, 7);
  OK(mmb_array_destroy(d));
  assert_array_filled(a, 1);
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(sys));
}

typedef struct merge_case {
  mmbElementType type;
  mmbMergeType merge;
} merge_case;

static void set_elem(void *p, mmbElementType t, size_t i, long v) {
  switch (t) {
    case MMB_TYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case MMB_TYPE_DOUBLE: ((double *)p)[i] = (double)v; break;
    case MMB_TYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    default: ((int64_t *)p)[i] = v; break;
  }
}
static long get_elem(const void *p, mmbElementType t, size_t i) {
  switch (t) {
    case MMB_TYPE_FLOAT: return (long)((const float *)p)[i];
    case MMB_TYPE_DOUBLE: return (long)((const double *)p)[i];
    case MMB_TYPE_INT32: return ((const int32_t *)p)[i];
    default: return (long)((const int64_t *)p)[i];
  }
}

MMB_TEST(array, sum_min_max_merges_for_every_element_type) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbElementType types[] = {MMB_TYPE_FLOAT, MMB_TYPE_DOUBLE, MMB_TYPE_INT32, MMB_TYPE_INT64};
  size_t sizes[] = {4, 8, 4, 8};
  mmbMergeType merges[] = {MMB_MERGE_SUM, MMB_MERGE_MIN, MMB_MERGE_MAX};
  const size_t n = 37;
  for (size_t t = 0; t < 4; t++) {
    for (size_t m = 0; m < 3; m++) {
      mmbLayout *l = test_layout(sizes[t], 1, MMB_ROWMAJOR, 0, types[t]);
      mmbArray *a, *d;
      OK(mmb_array_create(&(mmbDimensions){1, {n}}, l, sys, MMB_READ_WRITE, &a));
      for (size_t i = 0; i < n; i++) set_elem(mmb_array_ptr(a), types[t], i, (long)i - 10);
      OK(mmb_array_duplicate(a, sys, MMB_READ_WRITE, &d));
      for (size_t i = 0; i < n; i++) set_elem(mmb_array_ptr(d), types[t], i, 20 - 2 * (long)i);
      OK(mmb_array_merge(d, merges[m]));
      for (size_t i = 0; i < n; i++) {
        long o = (long)i - 10, x = 20 - 2 * (long)i;
        long want = merges[m] == MMB_MERGE_SUM ? o + x : merges[m] == MMB_MERGE_MIN
                                                             ? (x < o ? x : o) : (x > o ? x : o);
        cr_assert_eq(get_elem(mmb_array_ptr(a), types[t], i), want, "type %zu merge %zu i %zu",
                     t, m, i);
      }
      OK(mmb_array_destroy(a));
      OK(mmb_layout_destroy(l));
    }
  }
  OK(mmb_interface_destroy(sys));
}

MMB_TEST(array, sum_without_an_element_type_is_refused) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l = test_layout(8, 1, MMB_ROWMAJOR, 0, MMB_TYPE_BYTES);
  mmbArray *a, *d;
  OK(mmb_array_create(&(mmbDimensions){1, {8}}, l, sys, MMB_READ_WRITE, &a));
  OK(mmb_array_duplicate(a, sys, MMB_READ_WRITE, &d));
  FAILS(mmb_array_merge(d, MMB_MERGE_SUM), MMB_INVALID_ARG);
  FAILS(mmb_array_merge(d, MMB_MERGE_MAX), MMB_INVALID_ARG);
  FAILS(mmb_array_merge_with(d, NULL, NULL), MMB_INVALID_ARG);
  OK(mmb_array_merge(d, MMB_MERGE_OVERWRITE));
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(sys));
}

static void average(void *dst, const void *src, size_t count, size_t esize, void *user) {
  double *d = dst;
  const double *s = src;
  for (size_t i = 0; i < count; i++) d[i] = (d[i] + s[i]) / 2;
  *(size_t *)user += count;
  cr_assert_eq(esize, sizeof(double));
}

MMB_TEST(array, a_user_merge_sees_every_element_once) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = test_array(sys, &(mmbDimensions){2, {5, 6}}, MMB_ROWMAJOR, 64), *d;
  fill_array(a, 2);
  OK(mmb_array_duplicate(a, sys, MMB_READ_WRITE, &d));
  size_t idx[2] = {0, 0}, lo[2] = {0, 0}, hi[2] = {5, 6};
  do *array_at(d, idx) = 3 * value_at(idx, 2, 2);
  while (index_next(idx, lo, hi, 2));
  size_t seen = 0;
  OK(mmb_array_merge_with(d, average, &seen));
  cr_assert_eq(seen, 30, "padding is not merged");
  do cr_assert_eq(*array_at(a, idx), 2 * value_at(idx, 2, 2));
  while (index_next(idx, lo, hi, 2));
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(sys));
}

MMB_TEST(array, migrate_moves_the_home_and_the_tiles_follow) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemSpace *fast = limited_space(1 << 20);
  mmbMemInterface *fi;
  OK(mmb_request_interface(fast, NULL, &fi));
  mmbArray *a = test_array(sys, &(mmbDimensions){2, {20, 30}}, MMB_ROWMAJOR, 0);
  fill_array(a, 4);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {8, 8}}));
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 2}}, &t));
  OK(mmb_array_migrate(a, fi, MMB_READ_WRITE));
  assert_array_filled(a, 4);
  cr_assert_eq(t->space, fast);
  cr_assert_eq(MMB_TILE_AT_2D(t, double, 9, 17), value_at((size_t[]){9, 17}, 2, 4));
  OK(mmb_array_migrate(a, fi, MMB_READ));   /* already there */
  /* a home too big for the space: the array stays as it was */
  mmbArray *big = test_array(sys, &(mmbDimensions){2, {512, 512}}, MMB_ROWMAJOR, 0);
  fill_array(big, 5);
  void *before = mmb_array_ptr(big);
  FAILS(mmb_array_migrate(big, fi, MMB_READ_WRITE), MMB_OUT_OF_MEMORY);
  cr_assert_eq(mmb_array_ptr(big), before);
  assert_array_filled(big, 5);
  OK(mmb_array_migrate(a, sys, MMB_READ));
  assert_array_filled(a, 4);
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(big));
  OK(mmb_interface_destroy(fi));
  OK(mmb_interface_destroy(sys));
  OK(mmb_space_release(fast));
}

MMB_TEST(array, a_wrapped_array_migrates_off_the_callers_buffer) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  double buf[12];
  for (int i = 0; i < 12; i++) buf[i] = i;
  mmbLayout *l = test_layout(8, 1, MMB_ROWMAJOR, 0, MMB_TYPE_DOUBLE);
  mmbArray *a;
  OK(mmb_array_create_wrapped(buf, &(mmbDimensions){1, {12}}, l, sys, MMB_READ_WRITE, &a));
  OK(mmb_array_migrate(a, sys, MMB_READ));
  cr_assert_neq(mmb_array_ptr(a), buf);
  cr_assert_eq(((double *)mmb_array_ptr(a))[11], 11.0);
  OK(mmb_array_destroy(a));   /* frees its own home, not buf */
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(sys));
}

MMB_TEST(array, migrate_and_merge_refuse_while_duplicates_live) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = test_array(sys, &(mmbDimensions){1, {64}}, MMB_ROWMAJOR, 0), *d, *dd;
  OK(mmb_array_duplicate(a, sys, MMB_READ_WRITE, &d));
  FAILS(mmb_array_migrate(a, sys, MMB_READ), MMB_BUSY);
  FAILS(mmb_array_migrate(a, sys, (mmbAccessType)0), MMB_INVALID_ARG);
  OK(mmb_array_duplicate(d, sys, MMB_READ_WRITE, &dd));
  FAILS(mmb_array_merge(d, MMB_MERGE_OVERWRITE), MMB_BUSY);
  OK(mmb_array_merge(dd, MMB_MERGE_OVERWRITE));
  OK(mmb_array_merge(d, MMB_MERGE_OVERWRITE));
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(sys));
}

MMB_TEST(array, array_transport_reads_no_stale_home) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemSpace *fast = limited_space(1 << 20);
  mmbDimensions dd = dims2(8, 8);
  mmbArray *a = test_array(sys, &dd, MMB_ROWMAJOR, 0), *b = test_array(sys, &dd, MMB_ROWMAJOR, 0);
  mmbArray *d;
  OK(mmb_array_tile(a, &(mmbDimensions){2, {4, 4}}));
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){2, {0, 1}}, &t));
  OK(mmb_tile_migrate(t, fast, MMB_READ_WRITE, NULL));
  FAILS(mmb_array_copy(b, a), MMB_INVALID_STATE);
  FAILS(mmb_array_copy(a, b), MMB_INVALID_STATE);
  FAILS(mmb_array_duplicate(a, sys, MMB_READ, &d), MMB_INVALID_STATE);
  FAILS(mmb_array_migrate(a, sys, MMB_READ), MMB_INVALID_STATE);
  mmbMemSpace *home;
  OK(mmb_interface_get_space(sys, &home));
  OK(mmb_tile_migrate(t, home, MMB_READ_WRITE, NULL));
  OK(mmb_array_copy(b, a));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
  OK(mmb_interface_destroy(sys));
  OK(mmb_space_release(fast));
}

Test(array, needs_init) {
  mmbArray *a;
  cr_assert_eq(mmb_array_create(&(mmbDimensions){1, {1}}, NULL, NULL, MMB_READ, &a),
               MMB_NOT_INITIALIZED);
  cr_assert_eq(mmb_array_copy(NULL, NULL), MMB_NOT_INITIALIZED);
}
