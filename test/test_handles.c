/* Handles used after they are gone, twice, of the wrong kind or never made
   by mmb: MMB_INVALID_ARG every time, never a crash or a write to memory
   that is no longer the caller's (under ASan: no report). */
#include "common.h"
#include "core/internal.h"   /* mmb__objects_set_capacity */

static mmbMemSpace *dram(void) {
  mmbMemSpace *s;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &s));
  return s;
}

static mmbLayout *floats_2d(void) {
  mmbLayout *l;
  OK(mmb_layout_create_regular_nd(sizeof(float), 2, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &l));
  OK(mmb_layout_set_element_type(l, MMB_TYPE_FLOAT));
  return l;
}

static mmbArray *array_2d(mmbMemInterface *iface, mmbLayout *l, size_t n, size_t chunk) {
  mmbArray *a;
  OK(mmb_array_create(&(mmbDimensions){2, {n, n}}, l, iface, MMB_READ_WRITE, &a));
  if (chunk) OK(mmb_array_tile(a, &(mmbDimensions){2, {chunk, chunk}}));
  return a;
}

/* A pool destroyed after this thread's quick path noted it: the note is
   stale, and the interface is checked (and refused) again. */
static void refused_after_noted(unsigned flags) {
  mmbMemInterface *pooled;
  OK(mmb_request_interface(dram(), &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL,
                                                            .flags = flags},
                           &pooled));
  mmbAllocation *two[2], *a = NULL;
  for (int k = 0; k < 2; k++) OK(mmb_allocate(64, pooled, &two[k]));
  for (int k = 0; k < 2; k++) OK(mmb_free(two[k]));
  OK(mmb_interface_destroy(pooled));
  FAILS(mmb_interface_destroy(pooled), MMB_INVALID_ARG);
  FAILS(mmb_allocate(64, pooled, &a), MMB_INVALID_ARG);   /* the pool's inline path */
  cr_assert_null(a);
}

MMB_TEST(handles, an_interface_destroyed_is_refused_everywhere) {
  refused_after_noted(MMB_INTERFACE_THREAD_SAFE);
  refused_after_noted(0);
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemInterface *pooled;
  OK(mmb_request_interface(dram(), &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL},
                           &pooled));
  OK(mmb_interface_destroy(iface));
  OK(mmb_interface_destroy(pooled));
  FAILS(mmb_interface_destroy(iface), MMB_INVALID_ARG);
  FAILS(mmb_interface_destroy(pooled), MMB_INVALID_ARG);
  mmbAllocation *a = NULL;
  FAILS(mmb_allocate(64, pooled, &a), MMB_INVALID_ARG);
  FAILS(mmb_allocate(64, iface, &a), MMB_INVALID_ARG);
  cr_assert_null(a);
  mmbStats st;
  FAILS(mmb_interface_get_stats(iface, &st), MMB_INVALID_ARG);
  FAILS(mmb_interface_trim(pooled, 0), MMB_INVALID_ARG);
  mmbRegion *r;
  FAILS(mmb_region_create(iface, NULL, &r), MMB_INVALID_ARG);
  mmbMemSpace *s;
  FAILS(mmb_interface_get_space(iface, &s), MMB_INVALID_ARG);
}

MMB_TEST(handles, a_space_released_is_refused) {
  mmbMemSpace *s;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 1 << 20}, &s));
  OK(mmb_space_release(s));
  FAILS(mmb_space_release(s), MMB_INVALID_ARG);
  mmbMemInterface *iface;
  FAILS(mmb_request_interface(s, NULL, &iface), MMB_INVALID_ARG);
  size_t cap;
  FAILS(mmb_space_capacity(s, &cap), MMB_INVALID_ARG);
  /* a discovered space is never released: releasing it is a no-op */
  OK(mmb_space_release(dram()));
  OK(mmb_space_capacity(dram(), &cap));
}

MMB_TEST(handles, a_region_destroyed_is_refused_also_by_the_inline_path) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *r, *c;
  OK(mmb_region_create(iface, NULL, &r));
  void *p = NULL;
  OK(mmb_region_alloc(r, 100, 0, &p));   /* the cursor now allows the inline bump */
  OK(mmb_region_push(r, &c));
  OK(mmb_region_destroy(c));
  FAILS(mmb_region_destroy(c), MMB_INVALID_ARG);
  FAILS(mmb_region_alloc(c, 8, 0, &p), MMB_INVALID_ARG);
  OK(mmb_region_destroy(r));
  p = NULL;
  FAILS(mmb_region_alloc(r, 8, 0, &p), MMB_INVALID_ARG);
  cr_assert_null(p);
  FAILS((mmb_region_alloc)(r, 8, 0, &p), MMB_INVALID_ARG);
  FAILS(mmb_region_reset(r), MMB_INVALID_ARG);
  FAILS(mmb_region_push(r, &c), MMB_INVALID_ARG);
  FAILS(mmb_region_destroy(r), MMB_INVALID_ARG);
  mmbAllocation *a;
  FAILS(mmb_allocate_opts(8, iface, &(mmbAllocateOptions){.region = r}, &a), MMB_INVALID_ARG);
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(handles, layouts_and_arrays_destroyed_twice_are_refused) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l = floats_2d();
  mmbArray *a = array_2d(iface, l, 8, 4);
  OK(mmb_layout_destroy(l));
  FAILS(mmb_layout_destroy(l), MMB_INVALID_ARG);
  FAILS(mmb_layout_set_element_type(l, MMB_TYPE_FLOAT), MMB_INVALID_ARG);
  mmbArray *b;
  FAILS(mmb_array_create(&(mmbDimensions){2, {8, 8}}, l, iface, MMB_READ_WRITE, &b),
        MMB_INVALID_ARG);
  OK(mmb_array_destroy(a));
  FAILS(mmb_array_destroy(a), MMB_INVALID_ARG);
  mmbDimensions d;
  FAILS(mmb_array_get_dims(a, &d), MMB_INVALID_ARG);
  FAILS(mmb_array_tile(a, &(mmbDimensions){2, {2, 2}}), MMB_INVALID_ARG);
  cr_assert_null(mmb_array_ptr(a));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(handles, a_tile_merged_or_retiled_is_refused) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l = floats_2d();
  mmbArray *a = array_2d(iface, l, 8, 4);
  mmbArrayTile *t, *d, *local;
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 1}}, &t));
  OK(mmb_tile_duplicate(t, dram(), MMB_READ_WRITE, NULL, &d));
  MMB_TILE_AT_2D(d, float, 4, 4) = 7.0f;
  OK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  FAILS(mmb_tile_merge(d, MMB_MERGE_OVERWRITE), MMB_INVALID_ARG);
  FAILS(mmb_tile_merge(d, MMB_MERGE_SUM), MMB_INVALID_ARG);
  FAILS(mmb_tile_get_space_local_handle(d, &local), MMB_INVALID_ARG);
  FAILS(mmb_tile_copy(t, d), MMB_INVALID_ARG);
  cr_assert_eq(MMB_TILE_AT_2D(t, float, 4, 4), 7.0f, "the merge happened once");
  /* re-tiling retires the old grid tiles */
  OK(mmb_array_tile(a, &(mmbDimensions){2, {2, 2}}));
  FAILS(mmb_tile_duplicate(t, dram(), MMB_READ, NULL, &d), MMB_INVALID_ARG);
  OK(mmb_tile_at(a, &(mmbIndex){2, {0, 0}}, &t));
  OK(mmb_array_destroy(a));
  FAILS(mmb_tile_migrate(t, dram(), MMB_READ_WRITE, NULL), MMB_INVALID_ARG);
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(handles, iterators_and_queues_destroyed_twice_are_refused) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l = floats_2d();
  mmbArray *a = array_2d(iface, l, 8, 4);
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(a, NULL, &it));
  OK(mmb_tile_iterator_destroy(it));
  FAILS(mmb_tile_iterator_destroy(it), MMB_INVALID_ARG);
  FAILS(mmb_tile_iterator_next(it), MMB_INVALID_ARG);
  cr_assert_null(mmb_tile_iterator_tile(it));
  OK(mmb_array_destroy(a));   /* the iterator no longer holds it */

  mmbQueue *q, *copy;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  copy = q;
  OK(mmb_queue_destroy(NULL, &q));
  cr_assert_null(q);
  FAILS(mmb_queue_destroy(NULL, &copy), MMB_INVALID_ARG);
  mmbRequest req = {0};
  FAILS(mmb_queue_marker(copy, &req), MMB_INVALID_ARG);
  cr_assert_null(req.impl);
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(handles, a_request_waited_through_one_copy_is_refused_through_another) {
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  mmbRequest req = {0};
  OK(mmb_queue_marker(q, &req));
  mmbRequest copy = req;
  OK(mmb_wait(&req));
  cr_assert_null(req.impl);
  OK(mmb_wait(&req));   /* an empty request: nothing to wait for */
  bool done;
  FAILS(mmb_request_is_complete(&copy, &done), MMB_INVALID_ARG);
  FAILS(mmb_wait(&copy), MMB_INVALID_ARG);
  FAILS(mmb_queue_wait_request(q, &copy), MMB_INVALID_ARG);
  mmbRequest never = {.impl = &done};
  FAILS(mmb_wait(&never), MMB_INVALID_ARG);
  OK(mmb_queue_destroy(NULL, &q));
}

MMB_TEST(handles, handles_of_another_kind_or_not_from_mmb_are_refused) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l = floats_2d();
  mmbArray *a = array_2d(iface, l, 8, 0);
  mmbDimensions d;
  FAILS(mmb_array_get_dims((mmbArray *)l, &d), MMB_INVALID_ARG);
  FAILS(mmb_layout_destroy((mmbLayout *)a), MMB_INVALID_ARG);
  FAILS(mmb_interface_destroy((mmbMemInterface *)a), MMB_INVALID_ARG);
  FAILS(mmb_tile_merge((mmbArrayTile *)a, MMB_MERGE_OVERWRITE), MMB_INVALID_ARG);
  /* never made by mmb: on the stack, from malloc */
  char stack[256] = {0};
  FAILS(mmb_array_destroy((mmbArray *)(stack + 64)), MMB_INVALID_ARG);
  FAILS(mmb_region_alloc((mmbRegion *)(stack + 64), 8, 0, &(void *){NULL}), MMB_INVALID_ARG);
  void *heap = calloc(1, 256);
  FAILS(mmb_layout_destroy((mmbLayout *)((char *)heap + 64)), MMB_INVALID_ARG);
  FAILS(mmb_tile_merge((mmbArrayTile *)((char *)heap + 64), MMB_MERGE_OVERWRITE),
        MMB_INVALID_ARG);
  free(heap);
  /* a pointer inside an object is not its handle */
  FAILS(mmb_array_destroy((mmbArray *)((char *)a + 16)), MMB_INVALID_ARG);
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
}

/* A stale handle never reaches a new object: new objects get new addresses,
   so after many arrays come and go, the first one's handle still fails. */
MMB_TEST(handles, a_stale_handle_never_reaches_a_new_object) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l = floats_2d();
  mmbArray *first = array_2d(iface, l, 4, 0);
  OK(mmb_array_destroy(first));
  for (int i = 0; i < 20000; i++) {
    mmbArray *a = array_2d(iface, l, 4, 2);
    cr_assert_neq(a, first);
    mmbArrayTile *t, *dup;
    OK(mmb_tile_at(a, &(mmbIndex){2, {1, 0}}, &t));
    OK(mmb_tile_duplicate(t, dram(), MMB_READ, NULL, &dup));
    OK(mmb_tile_merge(dup, MMB_MERGE_OVERWRITE));
    OK(mmb_array_destroy(a));
  }
  FAILS(mmb_array_destroy(first), MMB_INVALID_ARG);
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
}

/* A prefetching iterator whose creation fails (room for the first
   duplicates, not for all it asks for) writes nothing back: with SUM, a
   merged tile 0 would come back doubled. */
MMB_TEST(handles, a_failed_prefetching_iterator_changes_nothing) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l;
  OK(mmb_layout_create_regular_1d(sizeof(float), (mmbLayoutPadding){0}, &l));
  OK(mmb_layout_set_element_type(l, MMB_TYPE_FLOAT));
  size_t tile = (4u << 20) / sizeof(float), n = 8 * tile;   /* 8 tiles of 4 MiB */
  mmbArray *a;
  OK(mmb_array_create(&(mmbDimensions){1, {n}}, l, iface, MMB_READ_WRITE, &a));
  OK(mmb_array_tile(a, &(mmbDimensions){1, {tile}}));
  float *x = mmb_array_ptr(a);
  for (size_t i = 0; i < n; i++) x[i] = 1.0f;
  mmbMemSpace *small;   /* one 20 MiB pool segment: five tiles */
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 20u << 20}, &small));
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  mmbTileIteratorOptions o = {.queue = q, .space = small, .depth = 6,
                              .access = MMB_READ_WRITE, .merge = MMB_MERGE_SUM};
  mmbTileIterator *it = NULL;
  FAILS(mmb_tile_iterator_create(a, &o, &it), MMB_OUT_OF_MEMORY);
  cr_assert_null(it);
  for (size_t i = 0; i < n; i++) cr_assert_eq(x[i], 1.0f, "element %zu is %g", i, x[i]);
  OK(mmb_array_destroy(a));   /* no iterator or duplicate holds it */
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_space_release(small));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
}

/* The arena wraps once it is spent: with 2 MiB of it, a loop that makes
   and destroys layouts goes round it many times, placing objects around the
   ones that stay live, which keep working. */
Test(handles, the_arena_wraps_around_live_objects) {
  cr_assert(mmb__objects_set_capacity(2u << 20));
  mmb_test_setup();
  mmbLayout *keep[64];
  uintptr_t highest = 0;
  bool wrapped = false;
  size_t k = 0;
  for (int i = 0; i < 200000; i++) {
    mmbLayout *l;
    OK(mmb_layout_create_regular_1d(1 + i % 8, (mmbLayoutPadding){0}, &l));
    wrapped |= (uintptr_t)l < highest;
    if ((uintptr_t)l > highest) highest = (uintptr_t)l;
    if (i % 3000 == 0 && k < 64) keep[k++] = l;   /* live across laps */
    else OK(mmb_layout_destroy(l));
  }
  cr_assert(wrapped, "200000 layouts in 2 MiB: the arena must have wrapped");
  for (size_t i = 0; i < k; i++) {
    OK(mmb_layout_set_element_type(keep[i], MMB_TYPE_BYTES));
    OK(mmb_layout_destroy(keep[i]));
    FAILS(mmb_layout_destroy(keep[i]), MMB_INVALID_ARG);
  }
  mmb_test_teardown();
}

/* A full arena refuses (MMB_OUT_OF_MEMORY), and takes objects again once a
   whole page of it is free: pages with a live object are never reused. */
Test(handles, a_full_arena_refuses_then_recovers) {
  cr_assert(mmb__objects_set_capacity(1u << 20));
  mmb_test_setup();
  enum { MAX = 20000 };
  static mmbLayout *l[MAX];
  size_t n = 0;
  mmbError err = MMB_OK;
  while (n < MAX && (err = mmb_layout_create_regular_1d(4, (mmbLayoutPadding){0}, &l[n])) == MMB_OK)
    n++;
  cr_assert_eq(err, MMB_OUT_OF_MEMORY, "%zu layouts in 1 MiB, then %s", n, mmb_error_name(err));
  mmbLayout *more;
  OK(mmb_layout_destroy(l[n / 2]));   /* one object of a full page: the page stays */
  FAILS(mmb_layout_create_regular_1d(4, (mmbLayoutPadding){0}, &more), MMB_OUT_OF_MEMORY);
  for (size_t i = 0; i < n; i++)
    if (i != n / 2) OK(mmb_layout_destroy(l[i]));
  for (size_t i = 0; i < 1000; i++) {
    OK(mmb_layout_create_regular_1d(4, (mmbLayoutPadding){0}, &more));
    OK(mmb_layout_destroy(more));
  }
  mmb_test_teardown();
}
