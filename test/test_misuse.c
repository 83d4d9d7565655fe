/* What a careless caller does with handles and queues: a handle kept after
   its free while its record serves another allocation, handles kept across
   mmb_finalize (and a later mmb_init), things that are not regions given to
   the region's inline path, a queue destroyed or synchronised from its own
   work, mmb_finalize from queue work, an absurd trace capacity. Each is an
   error code, never a crash, a hang or someone else's data freed (under
   ASan+UBSan: no report). */
#include "common.h"
#include "alloc/internal.h"   /* mmb__record: which record serves a handle */

#include <unistd.h>

static mmbMemInterface *interface_with(mmbStrategyType strategy, unsigned flags) {
  mmbMemSpace *s;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &s));
  mmbMemInterface *iface;
  OK(mmb_request_interface(s, &(mmbMemInterfaceConfig){.strategy = strategy, .flags = flags},
                           &iface));
  return iface;
}

/* a freed, then b served by a's record: a stays refused everywhere, and b
   keeps its bytes and is freed once. */
static void stale_handle_never_reaches_the_next_allocation(mmbMemInterface *iface, size_t n) {
  mmbAllocation *a, *b, *c;
  OK(mmb_allocate(n, iface, &a));
  OK(mmb_free(a));
  OK(mmb_allocate(n, iface, &b));
  cr_assert_eq(mmb__record(a), mmb__record(b), "the freed record serves the next allocation");
  cr_assert_neq(a, b, "but under another handle");
  memset(mmb_allocation_ptr(b), 0x5a, n);
  FAILS(mmb_free(a), MMB_INVALID_ARG);
  cr_assert_null(mmb_allocation_ptr(a));
  cr_assert_eq(mmb_allocation_size(a), 0);
  mmbMemInterface *owner;
  FAILS(mmb_allocation_get_interface(a, &owner), MMB_INVALID_ARG);
  FAILS(mmb_copy(a, b), MMB_INVALID_ARG);
  FAILS(mmb_copy_1d(b, 0, a, 0, 1), MMB_INVALID_ARG);
  /* b is untouched and still the caller's */
  const unsigned char *p = mmb_allocation_ptr(b);
  cr_assert_not_null(p);
  for (size_t i = 0; i < n; i++) cr_assert_eq(p[i], 0x5a, "byte %zu of b changed", i);
  OK(mmb_free(b));
  FAILS(mmb_free(b), MMB_INVALID_ARG);
  /* many turns of one record: every earlier handle stays refused */
  mmbAllocation *old[100];
  for (int i = 0; i < 100; i++) {
    OK(mmb_allocate(n, iface, &old[i]));
    OK(mmb_free(old[i]));
  }
  OK(mmb_allocate(n, iface, &c));
  for (int i = 0; i < 100; i++) FAILS(mmb_free(old[i]), MMB_INVALID_ARG);
  cr_assert_not_null(mmb_allocation_ptr(c));
  OK(mmb_free(c));
}

MMB_TEST(misuse, a_stale_allocation_handle_never_frees_the_next_allocation) {
  mmbMemInterface *pool = interface_with(MMB_STRATEGY_POOL, 0);
  mmbMemInterface *shared = interface_with(MMB_STRATEGY_POOL, MMB_INTERFACE_THREAD_SAFE);
  mmbMemInterface *basic = interface_with(MMB_STRATEGY_BASIC, 0);
  stale_handle_never_reaches_the_next_allocation(pool, 64);         /* the quick bins */
  stale_handle_never_reaches_the_next_allocation(pool, 3 << 20);    /* the pool's slow path */
  stale_handle_never_reaches_the_next_allocation(shared, 64);
  stale_handle_never_reaches_the_next_allocation(basic, 1000);
  /* a region's allocation, after its region was reset */
  mmbRegion *r;
  OK(mmb_region_create(basic, NULL, &r));
  mmbAllocation *a, *b;
  OK(mmb_allocate_opts(64, basic, &(mmbAllocateOptions){.region = r}, &a));
  OK(mmb_region_reset(r));
  OK(mmb_allocate_opts(64, basic, &(mmbAllocateOptions){.region = r}, &b));
  FAILS(mmb_free(a), MMB_INVALID_ARG);
  cr_assert_not_null(mmb_allocation_ptr(b));
  OK(mmb_free(b));
  OK(mmb_region_destroy(r));
  OK(mmb_interface_destroy(pool));
  OK(mmb_interface_destroy(shared));
  OK(mmb_interface_destroy(basic));
}

/* Every kind of handle kept across mmb_finalize: refused after it
   (MMB_NOT_INITIALIZED, or NULL and 0 from the getters), and refused after
   a later mmb_init (MMB_INVALID_ARG), never read from unmapped memory nor
   taken for a live object. */
Test(misuse, handles_from_before_finalize_are_refused_after_it_and_after_a_new_init) {
  mmb_test_setup();
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, 0);
  mmbAllocation *a;
  OK(mmb_allocate(64, iface, &a));
  mmbLayout *l;
  OK(mmb_layout_create_regular_1d(sizeof(double), (mmbLayoutPadding){0}, &l));
  mmbArray *arr;
  OK(mmb_array_create(&(mmbDimensions){1, {100}}, l, iface, MMB_READ_WRITE, &arr));
  mmbRegion *r;
  OK(mmb_region_create(iface, NULL, &r));
  void *p;
  OK(mmb_region_alloc(r, 32, 0, &p));   /* the inline path is open */
  mmbQueue *q;
  OK(mmb_queue_create(NULL, &q));
  OK(mmb_finalize());   /* every handle above left live */

  FAILS(mmb_free(a), MMB_NOT_INITIALIZED);
  cr_assert_null(mmb_allocation_ptr(a));
  cr_assert_eq(mmb_allocation_size(a), 0);
  FAILS(mmb_region_alloc(r, 32, 0, &p), MMB_NOT_INITIALIZED);   /* inline path: closed */
  FAILS(mmb_layout_destroy(l), MMB_NOT_INITIALIZED);
  FAILS(mmb_array_destroy(arr), MMB_NOT_INITIALIZED);
  FAILS(mmb_queue_synchronize(q), MMB_NOT_INITIALIZED);
  FAILS(mmb_interface_destroy(iface), MMB_NOT_INITIALIZED);

  mmb_test_setup();
  mmbMemInterface *fresh = interface_with(MMB_STRATEGY_POOL, 0);
  mmbAllocation *b;
  OK(mmb_allocate(64, fresh, &b));   /* may take a's record: under another generation */
  FAILS(mmb_free(a), MMB_INVALID_ARG);
  cr_assert_null(mmb_allocation_ptr(a));
  FAILS(mmb_region_alloc(r, 32, 0, &p), MMB_INVALID_ARG);
  FAILS(mmb_layout_destroy(l), MMB_INVALID_ARG);
  FAILS(mmb_array_destroy(arr), MMB_INVALID_ARG);
  FAILS(mmb_queue_synchronize(q), MMB_INVALID_ARG);
  FAILS(mmb_queue_destroy(NULL, &q), MMB_INVALID_ARG);
  FAILS(mmb_interface_destroy(iface), MMB_INVALID_ARG);
  cr_assert_not_null(mmb_allocation_ptr(b));
  OK(mmb_free(b));
  OK(mmb_interface_destroy(fresh));
  mmb_test_teardown();
}

/* The region's inline path reads nothing but the first word of what it is
   given before it knows a region: a heap block, a stack array, a pool
   block, a destroyed region. */
MMB_TEST(misuse, things_that_are_not_regions_are_refused_by_the_inline_path) {
  mmbMemInterface *iface = interface_with(MMB_STRATEGY_POOL, 0);
  void *p = NULL;
  uint64_t *heap = malloc(3 * sizeof *heap);
  cr_assert_not_null(heap);
  heap[0] = heap[1] = 0;
  heap[2] = UINTPTR_MAX;   /* a "limit" the bump would take */
  FAILS(mmb_region_alloc((mmbRegion *)(void *)heap, 16, 0, &p), MMB_INVALID_ARG);
  free(heap);
  uintptr_t stack[3] = {0, 0, UINTPTR_MAX};
  FAILS(mmb_region_alloc((mmbRegion *)(void *)stack, 16, 0, &p), MMB_INVALID_ARG);
  mmbAllocation *a;
  OK(mmb_allocate(64, iface, &a));
  memset(mmb_allocation_ptr(a), 0xff, 64);
  FAILS(mmb_region_alloc((mmbRegion *)mmb_allocation_ptr(a), 16, 0, &p), MMB_INVALID_ARG);
  OK(mmb_free(a));
  mmbRegion *r;
  OK(mmb_region_create(iface, NULL, &r));
  OK(mmb_region_alloc(r, 16, 0, &p));
  OK(mmb_region_destroy(r));
  FAILS(mmb_region_alloc(r, 16, 0, &p), MMB_INVALID_ARG);
  cr_assert_not_null(p);
  OK(mmb_interface_destroy(iface));
}

/* Work that destroys or synchronises its own queue, or finalizes mmb, would
   wait for itself (or free the queue it runs on): refused, and the queue
   goes on. A nested mmb_init's finalize from work is allowed (it only
   counts down). Here on the default queue (threads, or a stream where
   there is a device); the stream tests do it where work runs on the
   stream's own thread. */
Test(misuse, a_queue_is_not_destroyed_synchronised_or_finalized_from_its_own_work) {
  mmb_test_setup();
  mmbQueue *q;
  OK(mmb_queue_create(NULL, &q));
  assert_own_work_is_refused(q);
  mmb_test_teardown();
}

/* The queue tests' array: 64 doubles (element i holds i) in two tiles of
   32, and its layout (*l), on iface. */
static mmbArray *two_tiles(mmbMemInterface *iface, mmbLayout **l) {
  mmbArray *a;
  OK(mmb_layout_create_regular_1d(sizeof(double), (mmbLayoutPadding){0}, l));
  OK(mmb_array_create(&(mmbDimensions){1, {64}}, *l, iface, MMB_READ_WRITE, &a));
  OK(mmb_array_tile(a, &(mmbDimensions){1, {32}}));
  double *p = mmb_array_ptr(a);
  for (int i = 0; i < 64; i++) p[i] = i;
  return a;
}

/* Queue work that makes a synchronous copy of tiles with work queued behind
   it on the same queue would wait for that work, which waits for it: the
   copy is refused. Tiles whose work has run are copied as usual. */
typedef struct copier {
  mmbArrayTile *dst, *src;
  atomic_int go;
  mmbError behind, clear;
} copier;

static mmbError copy_from_work(void *arg) {
  copier *c = arg;
  while (!atomic_load(&c->go)) sched_yield();
  c->behind = mmb_tile_copy(c->dst, c->src);
  return MMB_OK;
}

static mmbError copy_again_from_work(void *arg) {
  copier *c = arg;
  c->clear = mmb_tile_copy(c->dst, c->src);
  return MMB_OK;
}

Test(misuse, queue_work_cannot_wait_for_work_queued_behind_it) {
  mmb_test_setup();
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l;
  mmbArray *a = two_tiles(iface, &l);
  double *p = mmb_array_ptr(a);
  copier c = {.behind = MMB_OK, .clear = MMB_ERROR};
  OK(mmb_tile_at(a, &(mmbIndex){1, {0}}, &c.dst));
  OK(mmb_tile_at(a, &(mmbIndex){1, {1}}, &c.src));
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  OK(mmb_queue_submit_task(q, copy_from_work, &c, NULL));
  OK(mmb_tile_copy_async(c.dst, c.src, q, NULL));   /* behind the work */
  atomic_store(&c.go, 1);
  OK(mmb_queue_synchronize(q));
  FAILS(c.behind, MMB_INVALID_STATE);
  cr_assert_eq(p[0], 32.0, "the queued copy ran after the work");
  OK(mmb_queue_submit_task(q, copy_again_from_work, &c, NULL));   /* nothing behind now */
  OK(mmb_queue_synchronize(q));
  OK(c.clear);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
  mmb_test_teardown();
}

/* Queue work that destroys, re-tiles, flushes or evicts an array with work
   queued behind it on the same queue (on a tile, or on the whole array)
   would wait for that work: each is refused, nothing changes, and the
   array works on once the queue has drained. */
typedef struct array_caller {
  mmbArray *a;
  bool only_destroy;
  atomic_int go;
  mmbError destroy, tile, flush, evict;
} array_caller;

static mmbError array_calls_from_work(void *arg) {
  array_caller *c = arg;
  while (!atomic_load(&c->go)) sched_yield();
  c->destroy = mmb_array_destroy(c->a);
  if (c->only_destroy) return MMB_OK;
  c->tile = mmb_array_tile(c->a, &(mmbDimensions){1, {16}});
  c->flush = mmb_array_flush(c->a);
  c->evict = mmb_array_evict(c->a, NULL);
  return MMB_OK;
}

Test(misuse, queue_work_cannot_destroy_or_retile_an_array_with_work_behind_it) {
  mmb_test_setup();
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *l;
  mmbArray *a = two_tiles(iface, &l), *b;
  OK(mmb_array_create(&(mmbDimensions){1, {64}}, l, iface, MMB_READ_WRITE, &b));
  double *p = mmb_array_ptr(a), *pb = mmb_array_ptr(b);
  for (int i = 0; i < 64; i++) pb[i] = 100 + i;
  mmbArrayTile *dst, *src;
  OK(mmb_tile_at(a, &(mmbIndex){1, {0}}, &dst));
  OK(mmb_tile_at(a, &(mmbIndex){1, {1}}, &src));
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  for (int behind = 0; behind < 2; behind++) {   /* a tile's work, then the whole array's */
    array_caller c = {.a = a, .only_destroy = behind == 1};
    OK(mmb_queue_submit_task(q, array_calls_from_work, &c, NULL));
    if (behind == 0)
      OK(mmb_tile_copy_async(dst, src, q, NULL));
    else
      OK(mmb_array_copy_async(a, b, q, NULL));
    atomic_store(&c.go, 1);
    OK(mmb_queue_synchronize(q));
    cr_assert_eq(c.destroy, MMB_INVALID_STATE, "destroy: %s", mmb_error_string(c.destroy));
    if (behind == 0) {
      cr_assert_eq(c.tile, MMB_INVALID_STATE, "tile: %s", mmb_error_string(c.tile));
      cr_assert_eq(c.flush, MMB_INVALID_STATE, "flush: %s", mmb_error_string(c.flush));
      cr_assert_eq(c.evict, MMB_INVALID_STATE, "evict: %s", mmb_error_string(c.evict));
    }
    cr_assert_eq(p[0], behind ? 100.0 : 32.0, "the queued copy ran after the work");
  }
  OK(mmb_tile_copy(src, dst));   /* the tiling is still the old one */
  cr_assert_eq(p[32], 100.0);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
  mmb_test_teardown();
}

/* An asynchronous merge's function runs in the merge, on the queue's
   worker: destroying or re-tiling its array there would wait for the merge
   it runs in, and is refused; the merge completes. */
typedef struct merge_caller {
  mmbArray *a;
  mmbError destroy, tile;
} merge_caller;

static void destroy_in_merge(void *dst, const void *src, size_t count, size_t esize,
                             void *user) {
  merge_caller *c = user;
  memcpy(dst, src, count * esize);
  c->destroy = mmb_array_destroy(c->a);
  c->tile = mmb_array_tile(c->a, &(mmbDimensions){1, {16}});
}

Test(misuse, an_async_merge_function_cannot_destroy_or_retile_its_array) {
  mmb_test_setup();
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemSpace *home;
  OK(mmb_interface_get_space(iface, &home));
  mmbLayout *l;
  mmbArray *a = two_tiles(iface, &l);
  double *p = mmb_array_ptr(a);
  mmbArrayTile *t, *dup;
  OK(mmb_tile_at(a, &(mmbIndex){1, {1}}, &t));
  OK(mmb_tile_duplicate(t, home, MMB_READ_WRITE, NULL, &dup));
  double *d = dup->ptr;
  for (int i = 0; i < 32; i++) d[i] = -i;
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  merge_caller c = {.a = a, .destroy = MMB_OK, .tile = MMB_OK};
  mmbRequest r = {0};
  OK(mmb_tile_merge_with_async(dup, destroy_in_merge, &c, q, &r));
  OK(mmb_wait(&r));
  cr_assert_eq(c.destroy, MMB_INVALID_STATE, "destroy: %s", mmb_error_string(c.destroy));
  cr_assert_eq(c.tile, MMB_INVALID_STATE, "tile: %s", mmb_error_string(c.tile));
  cr_assert_eq(p[33], -1.0, "the merge completed");
  cr_assert_eq(p[0], 0.0);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
  mmb_test_teardown();
}

/* MMB_TRACE_CAPACITY whose ring's bytes would wrap size_t. */
Test(misuse, a_trace_capacity_past_addressable_memory_fails_init) {
  char path[] = "/tmp/mmb-misuse-trace-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  setenv("MMB_TRACE", path, 1);   /* the ring is made at init */
  setenv("MMB_TRACE_CAPACITY", "1000000000000000000", 1);   /* 1e18 events */
  mmbOptions quiet = {.log_level = MMB_LOG_OFF};
  FAILS(mmb_init(&quiet), MMB_OVERFLOW);
  cr_assert_not(mmb_is_initialized());
  unsetenv("MMB_TRACE_CAPACITY");
  unsetenv("MMB_TRACE");
  unlink(path);
  mmb_test_setup();
  OK(mmb_trace_start());
  OK(mmb_trace_stop());
  mmb_test_teardown();
}
