/* The _async transports, hazards between them and synchronous calls, and
   queue-aware reuse (free_async, record_queue, region_reset_async). A gate
   (queue work that blocks until the test opens it) holds a queue back, so
   that "not yet" is observable and ordering mistakes show up as wrong data
   rather than as luck. */
#include "arrays.h"
#include "gate.h"
#include "tile/internal.h"

static mmbQueue *thread_queue(void) {
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  return q;
}

static mmbMemInterface *pool_interface(unsigned flags) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface;
  OK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.strategy = MMB_STRATEGY_POOL,
                                                          .flags = flags}, &iface));
  return iface;
}

static mmbArray *filled(mmbMemInterface *iface, size_t r, size_t c, double salt) {
  mmbDimensions d = dims2(r, c);
  mmbArray *a = test_array(iface, &d, MMB_ROWMAJOR, 0);
  fill_array(a, salt);
  return a;
}

static void assert_tile_filled(const mmbArrayTile *t, double salt) {
  size_t idx[MMB_MAX_DIMS], lo[MMB_MAX_DIMS];
  for (size_t k = 0; k < t->rank; k++) idx[k] = lo[k] = t->lower[k];
  do cr_assert_eq(*(double *)tile_elem(t, idx), value_at(idx, t->rank, salt), "at %zu,%zu",
                  idx[0], idx[1]);
  while (index_next(idx, lo, t->upper, t->rank));
}

MMB_TEST(async, bad_input_is_refused_at_submission) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 8, 8, 1), *b = filled(iface, 8, 4, 2), *d = NULL;
  mmbQueue *q = thread_queue();
  mmbRequest busy = {.impl = &busy}, req = {0};
  mmbArrayTile *t, *out = NULL;
  OK(mmb_tile_at(a, &(mmbIndex){2, {0, 0}}, &t));
  FAILS(mmb_array_copy_async(a, a, NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_array_copy_async(a, b, q, &req), MMB_INVALID_ARG);   /* shapes differ */
  FAILS(mmb_array_copy_async(a, NULL, q, NULL), MMB_INVALID_ARG);
  FAILS(mmb_array_copy_async(a, a, q, &busy), MMB_INVALID_ARG);
  FAILS(mmb_array_duplicate_async(a, NULL, MMB_READ, q, NULL, &d), MMB_INVALID_ARG);
  FAILS(mmb_array_duplicate_async(a, iface, (mmbAccessType)9, q, NULL, &d), MMB_INVALID_ARG);
  FAILS(mmb_array_merge_async(a, MMB_MERGE_SUM, q, NULL), MMB_INVALID_STATE);   /* not a dup */
  FAILS(mmb_array_merge_with_async(a, NULL, NULL, q, NULL), MMB_INVALID_ARG);
  FAILS(mmb_array_migrate_async(a, iface, MMB_READ, NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_copy_async(t, NULL, q, NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_duplicate_async(t, NULL, MMB_READ, NULL, q, NULL, &out), MMB_INVALID_ARG);
  mmbMemSpace *home;
  OK(mmb_interface_get_space(iface, &home));
  FAILS(mmb_tile_duplicate_async(t, home, MMB_READ, NULL, NULL, NULL, &out), MMB_INVALID_ARG);
  FAILS(mmb_tile_merge_async(t, MMB_MERGE_OVERWRITE, q, NULL), MMB_INVALID_STATE);
  FAILS(mmb_tile_merge_with_async(t, NULL, NULL, q, NULL), MMB_INVALID_ARG);
  FAILS(mmb_tile_migrate_async(NULL, NULL, MMB_READ, NULL, q, NULL), MMB_INVALID_ARG);
  cr_assert_null(d);
  cr_assert_null(out);
  cr_assert_null(req.impl, "a refused submission leaves the request zero");
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
}

/* Every array transport on a queue, checked after the wait. */
MMB_TEST(async, array_transports_move_the_data) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemInterface *other = test_interface(MMB_PROVIDER_SYSTEM, MMB_INTERFACE_THREAD_SAFE);
  mmbArray *a = filled(iface, 40, 30, 1), *b = filled(iface, 40, 30, 2), *d;
  mmbQueue *q = thread_queue();
  mmbRequest r[4] = {{0}};
  OK(mmb_array_copy_async(b, a, q, &r[0]));
  OK(mmb_array_duplicate_async(b, other, MMB_READ_WRITE, q, &r[1], &d));
  cr_assert_not_null(d, "the duplicate exists at once");
  OK(mmb_array_migrate_async(a, other, MMB_READ, q, &r[2]));
  OK(mmb_wait_all(3, r, NULL));
  assert_array_filled(b, 1);
  assert_array_filled(d, 1);
  assert_array_filled(a, 1);
  mmbMemInterface *where;
  OK(mmb_array_get_interface(a, &where));
  cr_assert_eq(where, other);
  fill_array(d, 5);
  OK(mmb_array_merge_async(d, MMB_MERGE_OVERWRITE, q, &r[3]));
  OK(mmb_wait(&r[3]));
  assert_array_filled(b, 5);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
}

static void add_one(void *dst, const void *src, size_t count, size_t esize, void *user) {
  double *x = dst;
  const double *y = src;
  for (size_t i = 0; i < count; i++) x[i] = y[i] + 1.0;
  atomic_fetch_add((atomic_size_t *)user, count);
}

/* Tile transports, including a user merge that runs on the worker. */
MMB_TEST(async, tile_transports_move_the_data) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 64, 48, 1), *b = filled(iface, 64, 48, 2);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {16, 16}}));
  OK(mmb_array_tile(b, &(mmbDimensions){2, {16, 16}}));
  mmbMemSpace *fast = limited_space(1 << 20);
  mmbQueue *q = thread_queue();
  mmbArrayTile *ta, *tb, *dup;
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 2}}, &ta));
  OK(mmb_tile_at(b, &(mmbIndex){2, {1, 2}}, &tb));
  mmbRequest r = {0};
  OK(mmb_tile_duplicate_async(ta, fast, MMB_READ_WRITE, NULL, q, &r, &dup));
  cr_assert_eq(dup->space, fast);
  OK(mmb_wait(&r));
  assert_tile_filled(dup, 1);
  static atomic_size_t merged;
  OK(mmb_tile_merge_with_async(dup, add_one, &merged, q, &r));
  OK(mmb_wait(&r));
  cr_assert_eq(atomic_load(&merged), 16u * 16u);
  size_t idx[2] = {16, 32};
  cr_assert_eq(*array_at(a, idx), value_at(idx, 2, 1) + 1.0);
  OK(mmb_tile_migrate_async(tb, fast, MMB_READ, NULL, q, NULL));
  cr_assert_eq(tb->space, fast, "the tile's fields describe the new storage at once");
  OK(mmb_tile_copy_async(tb, ta, q, NULL));   /* FIFO: after the migration */
  mmbMemSpace *home;
  OK(mmb_interface_get_space(iface, &home));
  OK(mmb_tile_migrate_async(tb, home, MMB_READ, NULL, q, &r));
  cr_assert_eq(tb->space, home);
  OK(mmb_wait(&r));
  cr_assert_eq(*array_at(b, idx), value_at(idx, 2, 1) + 1.0, "b got a's merged tile");
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
  OK(mmb_space_release(fast));
}

/* A synchronous transport waits for the asynchronous ones on its tiles: the
   sync copy must see the async copy's data, though the queue is held back. */
MMB_TEST(async, sync_calls_wait_for_pending_async_work) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 32, 32, 1), *b = filled(iface, 32, 32, 2),
           *c = filled(iface, 32, 32, 3);
  mmbQueue *q = thread_queue();
  close_gate(q);
  mmbRequest r = {0};
  OK(mmb_array_copy_async(b, a, q, &r));
  bool done;
  OK(mmb_request_is_complete(&r, &done));
  cr_assert(!done, "the queue is held back");
  pthread_t opener = open_gate_soon();
  OK(mmb_array_copy(c, b));   /* waits for the copy into b */
  pthread_join(opener, NULL);
  OK(mmb_request_is_complete(&r, &done));
  cr_assert(done);
  OK(mmb_wait(&r));
  assert_array_filled(c, 1);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
  OK(mmb_array_destroy(c));
}

/* Work on another queue is ordered after the pending work on its tiles. */
MMB_TEST(async, other_queues_are_ordered_after_pending_work) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 32, 32, 1), *b = filled(iface, 32, 32, 2),
           *c = filled(iface, 32, 32, 3);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {8, 8}}));
  OK(mmb_array_tile(b, &(mmbDimensions){2, {8, 8}}));
  OK(mmb_array_tile(c, &(mmbDimensions){2, {8, 8}}));
  mmbQueue *q1 = thread_queue(), *q2 = thread_queue();
  close_gate(q1);
  mmbRequest r[2] = {{0}};
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < 4; j++) {
      mmbArrayTile *ta, *tb, *tc;
      mmbIndex at = {2, {i, j}};
      OK(mmb_tile_at(a, &at, &ta));
      OK(mmb_tile_at(b, &at, &tb));
      OK(mmb_tile_at(c, &at, &tc));
      OK(mmb_tile_copy_async(tb, ta, q1, NULL));
      OK(mmb_tile_copy_async(tc, tb, q2, NULL));   /* must see a's data */
    }
  OK(mmb_queue_submit(q2, wait_gate, NULL, &r[1]));
  usleep(20000);
  bool done;
  OK(mmb_request_is_complete(&r[1], &done));
  cr_assert(!done, "q2 waits for q1, which is held back");
  atomic_store(&gate, 1);
  OK(mmb_queue_synchronize(q1));
  OK(mmb_wait(&r[1]));
  assert_array_filled(c, 1);
  OK(mmb_queue_destroy(NULL, &q1));
  OK(mmb_queue_destroy(NULL, &q2));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
  OK(mmb_array_destroy(c));
}

/* Destroying an array with work pending on it waits for the work. */
MMB_TEST(async, destroy_waits_for_pending_work) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 64, 64, 1), *b = filled(iface, 64, 64, 2);
  mmbQueue *q = thread_queue();
  close_gate(q);
  OK(mmb_array_copy_async(b, a, q, NULL));
  pthread_t opener = open_gate_soon();
  OK(mmb_array_destroy(a));   /* blocks until the copy has read it */
  pthread_join(opener, NULL);
  OK(mmb_queue_synchronize(q));
  assert_array_filled(b, 1);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(b));
}

/* ---- queue-aware reuse ----------------------------------------------------- */

MMB_TEST(reuse, bad_input_is_refused) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbQueue *q = thread_queue();
  mmbAllocation *a;
  OK(mmb_allocate(64, iface, &a));
  FAILS(mmb_free_async(a, NULL), MMB_INVALID_ARG);
  FAILS(mmb_free_async(NULL, q), MMB_INVALID_ARG);
  FAILS(mmb_allocation_record_queue(NULL, q), MMB_INVALID_ARG);
  FAILS(mmb_allocation_record_queue(a, NULL), MMB_INVALID_ARG);
  OK(mmb_free_async(a, q));
  FAILS(mmb_free_async(a, q), MMB_INVALID_ARG);   /* freed twice */
  mmbRegion *region;
  OK(mmb_region_create(iface, NULL, &region));
  OK(mmb_allocate_opts(64, iface, &(mmbAllocateOptions){.region = region}, &a));
  FAILS(mmb_free_async(a, q), MMB_INVALID_ARG);   /* region memory: reset_async */
  FAILS(mmb_region_reset_async(NULL, q), MMB_INVALID_ARG);
  FAILS(mmb_region_reset_async(region, NULL), MMB_INVALID_ARG);
  mmbRegion *child;
  OK(mmb_region_push(region, &child));
  FAILS(mmb_region_reset_async(region, q), MMB_BUSY);
  OK(mmb_region_destroy(child));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_region_destroy(region));
}

/* While the queue is held back, a block freed with free_async is never
   handed out again; once the queue has passed, it is. */
MMB_TEST(reuse, free_async_holds_the_block_until_the_queue_passes) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbQueue *q = thread_queue();
  mmbAllocation *a, *b[64];
  OK(mmb_allocate(4096, iface, &a));
  void *held = mmb_allocation_ptr(a);
  close_gate(q);
  OK(mmb_free_async(a, q));
  cr_assert_null(mmb_allocation_ptr(a), "the handle is gone at once");
  for (int i = 0; i < 64; i++) {
    OK(mmb_allocate(4096, iface, &b[i]));
    cr_assert_neq(mmb_allocation_ptr(b[i]), held, "reused while the queue may use it");
  }
  for (int i = 0; i < 64; i++) OK(mmb_free(b[i]));
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 4096, "the deferred block still counts as used");
  atomic_store(&gate, 1);
  OK(mmb_queue_synchronize(q));
  OK(mmb_interface_trim(iface, SIZE_MAX));   /* sweeps the deferred list */
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 0);
  OK(mmb_queue_destroy(NULL, &q));
}

/* mmb_ptr_deallocate_async refuses what mmb_ptr_deallocate refuses, and a NULL queue;
   a refused block is still the caller's. */
static void ptr_free_async_refuses(mmbMemInterface *iface, mmbMemInterface *other) {
  mmbQueue *q = thread_queue();
  void *p, *big, *theirs;
  char local[64];
  OK(mmb_ptr_allocate(200, iface, &p));
  OK(mmb_ptr_allocate(10000, iface, &big));
  OK(mmb_ptr_allocate(200, other, &theirs));
  FAILS(mmb_ptr_deallocate_async(p, iface, NULL), MMB_INVALID_ARG);
  FAILS(mmb_ptr_deallocate_async(p, NULL, q), MMB_INVALID_ARG);
  FAILS(mmb_ptr_deallocate_async(NULL, iface, q), MMB_INVALID_ARG);
  FAILS(mmb_ptr_deallocate_async(local, iface, q), MMB_INVALID_ARG);
  FAILS(mmb_ptr_deallocate_async(theirs, iface, q), MMB_INVALID_ARG);   /* another interface's */
  FAILS(mmb_ptr_deallocate_async((char *)p + 64, iface, q), MMB_INVALID_ARG);   /* inside a block */
  FAILS(mmb_ptr_deallocate_async((char *)big + 64, iface, q), MMB_INVALID_ARG);
  OK(mmb_ptr_deallocate_async(p, iface, q));
  OK(mmb_ptr_deallocate_async(big, iface, q));
  FAILS(mmb_ptr_deallocate_async(p, iface, q), MMB_INVALID_ARG);   /* freed twice */
  FAILS(mmb_ptr_deallocate_async(big, iface, q), MMB_INVALID_ARG);
  FAILS(mmb_ptr_deallocate(p, iface), MMB_INVALID_ARG);
  OK(mmb_ptr_deallocate(theirs, other));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_interface_destroy(iface));   /* nothing left live */
}

MMB_TEST(reuse, ptr_free_async_refuses_bad_input) {
  mmbMemInterface *other = test_interface(MMB_PROVIDER_SYSTEM, 0);
  ptr_free_async_refuses(pool_interface(0), other);
  ptr_free_async_refuses(pool_interface(MMB_INTERFACE_THREAD_SAFE), other);
  ptr_free_async_refuses(test_interface(MMB_PROVIDER_SYSTEM, 0), other);
}

/* A bare block freed with mmb_ptr_deallocate_async (and one with a
   handle, a slab block) is not handed out again while the queue is held back, counts as
   used until then, and comes back once the queue has passed. */
static void ptr_free_async_holds(mmbMemInterface *iface, size_t n) {
  mmbQueue *q = thread_queue();
  void *held, *b[64];
  OK(mmb_ptr_allocate(n, iface, &held));
  close_gate(q);
  OK(mmb_ptr_deallocate_async(held, iface, q));
  for (int i = 0; i < 64; i++) {
    OK(mmb_ptr_allocate(n, iface, &b[i]));
    cr_assert_neq(b[i], held, "%zu B: reused while the queue may use it", n);
  }
  for (int i = 0; i < 64; i++) OK(mmb_ptr_deallocate(b[i], iface));
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, n, "the held block still counts as used");
  cr_assert_eq(st.n_allocs - st.n_frees, 1);
  atomic_store(&gate, 1);
  OK(mmb_queue_synchronize(q));
  OK(mmb_interface_trim(iface, SIZE_MAX));   /* sweeps what has passed */
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 0, "%zu B: %zu bytes still counted", n, st.used_current);
  bool back = false;   /* a slab block is on its bins again (a larger one may coalesce) */
  for (int i = 0; i < 64; i++) {
    OK(mmb_ptr_allocate(n, iface, &b[i]));
    back |= b[i] == held;
  }
  cr_assert(back || n > 2048, "%zu B: the block never came back", n);
  for (int i = 0; i < 64; i++) OK(mmb_ptr_deallocate(b[i], iface));
  OK(mmb_interface_trim(iface, 0));
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.reserved_current, 0, "%zu B: %zu bytes still held", n, st.reserved_current);
  OK(mmb_queue_destroy(NULL, &q));
}

MMB_TEST(reuse, ptr_free_async_holds_the_block_until_the_queue_passes) {
  unsigned flags[] = {0, MMB_INTERFACE_THREAD_SAFE};
  for (int f = 0; f < 2; f++) {
    mmbMemInterface *iface = pool_interface(flags[f]);
    ptr_free_async_holds(iface, 256);     /* a slab block */
    ptr_free_async_holds(iface, 10000);   /* a block with a handle */
    OK(mmb_interface_destroy(iface));
  }
}

/* mmb_ptr_deallocate_async, on a thread-safe pool, of a block another thread
   allocated (that thread has exited): held while the queue is, refused a
   second time (by either free), and back in the pool once the queue has
   passed. */
MMB_TEST(reuse, ptr_free_async_of_another_threads_block) {
  mmbMemInterface *iface = pool_interface(MMB_INTERFACE_THREAD_SAFE);
  void *theirs = test_ptr_alloc_elsewhere(iface, 256);
  cr_assert_not_null(theirs);
  mmbQueue *q = thread_queue();
  close_gate(q);
  OK(mmb_ptr_deallocate_async(theirs, iface, q));
  FAILS(mmb_ptr_deallocate(theirs, iface), MMB_INVALID_ARG);
  FAILS(mmb_ptr_deallocate_async(theirs, iface, q), MMB_INVALID_ARG);
  void *b[64];
  for (int i = 0; i < 64; i++) {
    OK(mmb_ptr_allocate(256, iface, &b[i]));
    cr_assert_neq(b[i], theirs, "reused while the queue may use it");
  }
  for (int i = 0; i < 64; i++) OK(mmb_ptr_deallocate(b[i], iface));
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 256, "the held block still counts as used");
  atomic_store(&gate, 1);
  OK(mmb_queue_synchronize(q));
  OK(mmb_interface_trim(iface, 0));   /* sweeps it */
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 0);
  cr_assert_eq(st.n_frees, st.n_allocs);
  cr_assert_eq(st.reserved_current, 0, "%zu bytes still held", st.reserved_current);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_interface_destroy(iface));
}

/* A bare allocation sweeps what has passed, as mmb_allocate does; destroying
   the interface waits for what has not. */
MMB_TEST(reuse, ptr_calls_sweep_and_destroy_waits) {
  mmbMemInterface *iface = pool_interface(0);
  mmbQueue *q = thread_queue();
  void *p, *keep;
  OK(mmb_ptr_allocate(100, iface, &p));
  OK(mmb_ptr_allocate(3000, iface, &keep));
  close_gate(q);
  OK(mmb_ptr_deallocate_async(p, iface, q));
  atomic_store(&gate, 1);
  OK(mmb_queue_synchronize(q));
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 100 + 3000, "nothing has swept yet");
  OK(mmb_ptr_deallocate(keep, iface));   /* a block with a handle: the general path sweeps */
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 0, "mmb_ptr_deallocate left %zu bytes counted", st.used_current);
  OK(mmb_ptr_allocate(100, iface, &p));
  close_gate(q);
  OK(mmb_ptr_deallocate_async(p, iface, q));
  pthread_t opener = open_gate_soon();
  OK(mmb_interface_destroy(iface));   /* waits for the queue, then frees the block */
  pthread_join(opener, NULL);
  OK(mmb_queue_destroy(NULL, &q));
}

/* The interface's own calls hand deferred bytes back once their fences
   have passed: mmb_free as well as allocate and trim. */
MMB_TEST(reuse, a_plain_free_hands_back_what_has_passed) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbQueue *q = thread_queue();
  mmbAllocation *a, *b;
  OK(mmb_allocate(4096, iface, &a));
  OK(mmb_allocate(512, iface, &b));
  close_gate(q);             /* the fence cannot pass before free_async has deferred */
  OK(mmb_free_async(a, q));
  atomic_store(&gate, 1);
  OK(mmb_queue_synchronize(q));
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 4096 + 512, "nothing has swept yet");
  OK(mmb_free(b));
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 0, "mmb_free left %zu bytes counted", st.used_current);
  OK(mmb_queue_destroy(NULL, &q));
}

/* The same on a pool, whose quick paths a thread takes once it has taken
   the general path on the interface (its note, pool.h): a free deferred
   behind a fence sends the next quick free, handle or bare pointer, to
   the sweep, on an interface of one thread and on a thread-safe one. */
MMB_TEST(reuse, a_deferral_sends_the_quick_paths_of_a_pool_to_the_sweep) {
  const unsigned kinds[] = {0, MMB_INTERFACE_THREAD_SAFE};
  for (size_t k = 0; k < 2; k++) {
    mmbMemInterface *iface = pool_interface(kinds[k]);
    mmbQueue *q = thread_queue();
    mmbAllocation *a, *b;
    void *p;
    for (int warm = 0; warm < 3; warm++) {   /* the note is taken, and the quick paths run */
      OK(mmb_allocate(512, iface, &b));
      OK(mmb_free(b));
      OK(mmb_ptr_allocate(64, iface, &p));
      OK(mmb_ptr_deallocate(p, iface));
    }
    OK(mmb_allocate(4096, iface, &a));
    OK(mmb_allocate(512, iface, &b));
    OK(mmb_ptr_allocate(64, iface, &p));
    close_gate(q);   /* the fence cannot pass before free_async has deferred */
    OK(mmb_free_async(a, q));
    atomic_store(&gate, 1);
    OK(mmb_queue_synchronize(q));
    mmbStats st;
    OK(mmb_interface_get_stats(iface, &st));
    cr_assert_eq(st.used_current, 4096 + 512 + 64, "nothing has swept yet");
    OK(mmb_free(b));
    OK(mmb_interface_get_stats(iface, &st));
    cr_assert_eq(st.used_current, 64, "mmb_free did not sweep (kind %zu): %zu bytes counted", k,
                 st.used_current);
    /* again, with mmb_ptr_deallocate the first call after the deferral */
    OK(mmb_allocate(4096, iface, &a));
    close_gate(q);
    OK(mmb_free_async(a, q));
    atomic_store(&gate, 1);
    OK(mmb_queue_synchronize(q));
    OK(mmb_ptr_deallocate(p, iface));
    OK(mmb_interface_get_stats(iface, &st));
    cr_assert_eq(st.used_current, 0, "mmb_ptr_deallocate did not sweep (kind %zu): %zu bytes counted",
                 k, st.used_current);
    OK(mmb_queue_destroy(NULL, &q));
    OK(mmb_interface_destroy(iface));
  }
}

/* record_queue on two queues: the block waits for both. */
MMB_TEST(reuse, record_queue_waits_for_every_recorded_queue) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, MMB_INTERFACE_THREAD_SAFE);
  mmbQueue *q1 = thread_queue(), *q2 = thread_queue();
  mmbAllocation *a, *b;
  OK(mmb_allocate(1024, iface, &a));
  void *held = mmb_allocation_ptr(a);
  OK(mmb_allocation_record_queue(a, q1));   /* q1 has nothing pending: passes at once */
  close_gate(q2);
  OK(mmb_allocation_record_queue(a, q2));
  OK(mmb_allocation_record_queue(a, q2));   /* again: the fence moves, not doubles */
  OK(mmb_free(a));
  OK(mmb_allocate(1024, iface, &b));
  cr_assert_neq(mmb_allocation_ptr(b), held);
  OK(mmb_free(b));
  atomic_store(&gate, 1);
  OK(mmb_queue_destroy(NULL, &q2));
  OK(mmb_queue_destroy(NULL, &q1));
  OK(mmb_interface_destroy(iface));   /* nothing left behind */
}

static void write_pattern(void *arg) {
  unsigned char *p = arg;
  for (int i = 0; i < 256; i++) p[i] = (unsigned char)i;
}

/* reset_async returns at once; the region's next use waits for the queue,
   so the work submitted before the reset sees its memory intact. */
MMB_TEST(reuse, region_reset_async_orders_after_the_queue) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *region;
  OK(mmb_region_create(iface, NULL, &region));
  mmbQueue *q = thread_queue();
  void *p, *again;
  OK(mmb_region_alloc(region, 256, 0, &p));
  close_gate(q);
  OK(mmb_queue_submit(q, write_pattern, p, NULL));
  mmbRequest checked = {0};
  OK(mmb_queue_submit(q, wait_gate, NULL, &checked));
  OK(mmb_region_reset_async(region, q));   /* does not wait for the gate */
  bool done;
  OK(mmb_request_is_complete(&checked, &done));
  cr_assert(!done);
  pthread_t opener = open_gate_soon();
  OK(mmb_region_alloc(region, 256, 0, &again));   /* waits, then reuses */
  pthread_join(opener, NULL);
  OK(mmb_request_is_complete(&checked, &done));
  cr_assert(done, "the next use came after the queue's work");
  cr_assert_eq(again, p, "the reset happened: the memory is reused");
  for (int i = 0; i < 256; i++) cr_assert_eq(((unsigned char *)again)[i], (unsigned char)i);
  OK(mmb_wait(&checked));
  /* A reset whose queue has passed happens at once. */
  OK(mmb_queue_synchronize(q));
  OK(mmb_region_reset_async(region, q));
  OK(mmb_region_alloc(region, 256, 0, &again));
  cr_assert_eq(again, p);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_region_destroy(region));
}

/* The storage an async merge leaves behind is reused only after the merge
   has read it: hold the queue, merge, allocate in the space, check. */
MMB_TEST(reuse, async_merge_storage_outlives_the_merge) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 32, 32, 1);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {16, 16}}));
  mmbMemSpace *fast = limited_space(1 << 20);
  mmbQueue *q = thread_queue();
  mmbArrayTile *t, *dup;
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 1}}, &t));
  OK(mmb_tile_duplicate(t, fast, MMB_READ_WRITE, NULL, &dup));
  for (size_t i = 0; i < 16; i++)
    for (size_t j = 0; j < 16; j++) ((double *)dup->ptr)[i * 16 + j] = -1.0;
  void *dup_bytes = dup->ptr;
  close_gate(q);
  OK(mmb_tile_merge_async(dup, MMB_MERGE_OVERWRITE, q, NULL));
  mmbArrayTile *other, *dup2;   /* another tile: its duplicate does not wait */
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 0}}, &other));
  OK(mmb_tile_duplicate(other, fast, MMB_READ_WRITE, NULL, &dup2));
  cr_assert_neq(dup2->ptr, dup_bytes, "the merged duplicate's storage was reused early");
  memset(dup2->ptr, 0x55, 16 * 16 * sizeof(double));
  atomic_store(&gate, 1);
  OK(mmb_queue_synchronize(q));
  size_t idx[2] = {20, 20};
  cr_assert_eq(*array_at(a, idx), -1.0, "the merge read the duplicate's bytes intact");
  OK(mmb_tile_merge(dup2, MMB_MERGE_OVERWRITE));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(fast));
}

static atomic_int ran;
static void note_ran(void *arg) { atomic_fetch_add(&ran, 1); }

/* mmb_finalize drains and destroys the queues the caller left. */
Test(reuse, finalize_drains_leaked_queues) {
  mmb_test_setup();
  mmbQueue *q = thread_queue();
  atomic_store(&ran, 0);
  for (int i = 0; i < 100; i++) OK(mmb_queue_submit(q, note_ran, NULL, NULL));
  mmb_test_teardown();
  cr_assert_eq(atomic_load(&ran), 100);
}

/* mmb_finalize waits for bare blocks held back on queue work, and releases
   them (the leak check would find a handle or record left behind). */
Test(reuse, finalize_releases_held_back_bare_blocks) {
  mmb_test_setup();
  mmbMemInterface *iface = pool_interface(MMB_INTERFACE_THREAD_SAFE);
  mmbQueue *q = thread_queue();
  void *p[2];
  OK(mmb_ptr_allocate(300, iface, &p[0]));
  OK(mmb_ptr_allocate(30000, iface, &p[1]));
  close_gate(q);
  for (int i = 0; i < 2; i++) OK(mmb_ptr_deallocate_async(p[i], iface, q));
  pthread_t opener = open_gate_soon();
  mmb_test_teardown();
  pthread_join(opener, NULL);
}

/* ---- the prefetching iterator ------------------------------------------------ */

static mmbTileIteratorOptions prefetching(mmbQueue *q, mmbMemSpace *s, size_t depth,
                                          mmbAccessType access) {
  return (mmbTileIteratorOptions){.queue = q, .space = s, .depth = depth, .access = access};
}

MMB_TEST(prefetch, bad_options_are_refused) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 16, 16, 1);
  mmbQueue *q = thread_queue();
  mmbMemSpace *fast = limited_space(1 << 20);
  mmbTileIterator *it = NULL;
  FAILS(mmb_tile_iterator_create(a, &(mmbTileIteratorOptions){.queue = q}, &it), MMB_INVALID_ARG);
  OK(mmb_tile_iterator_create(a, &(mmbTileIteratorOptions){.space = fast}, &it));   /* cached */
  OK(mmb_tile_iterator_destroy(it));
  it = NULL;
  mmbTileIteratorOptions o = prefetching(q, fast, 1, (mmbAccessType)8);
  FAILS(mmb_tile_iterator_create(a, &o, &it), MMB_INVALID_ARG);
  o = prefetching(q, fast, 1, MMB_READ_WRITE);
  o.merge = (mmbMergeType)7;
  FAILS(mmb_tile_iterator_create(a, &o, &it), MMB_INVALID_ARG);
  mmbLayout *bytes = test_layout(8, 2, MMB_ROWMAJOR, 0, MMB_TYPE_BYTES);
  mmbArray *untyped, *ro;
  OK(mmb_array_create(&(mmbDimensions){2, {4, 4}}, bytes, iface, MMB_READ_WRITE, &untyped));
  OK(mmb_array_create(&(mmbDimensions){2, {4, 4}}, bytes, iface, MMB_READ, &ro));
  o.merge = MMB_MERGE_SUM;
  FAILS(mmb_tile_iterator_create(untyped, &o, &it), MMB_INVALID_ARG);
  o.merge = MMB_MERGE_OVERWRITE;
  FAILS(mmb_tile_iterator_create(ro, &o, &it), MMB_INVALID_STATE);
  cr_assert_null(it);
  OK(mmb_array_destroy(untyped));
  OK(mmb_array_destroy(ro));
  OK(mmb_layout_destroy(bytes));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(fast));
}

/* Every tile is handed out once, as a duplicate in the fast space, in the
   schedule's order; written duplicates are merged back; the ring never
   holds more than depth + 2 tiles in the space. */
MMB_TEST(prefetch, streams_every_tile_through_the_space) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 64, 48, 1);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {16, 16}}));   /* 4 x 3 tiles of 2 KiB */
  mmbMemSpace *fast = limited_space(1 << 20);
  mmbQueue *q = thread_queue();
  mmbTileIterator *plain, *it;
  mmbTileIteratorOptions o = prefetching(q, fast, 2, MMB_READ_WRITE);
  o.schedule = MMB_SCHEDULE_MORTON;
  OK(mmb_tile_iterator_create(a, &(mmbTileIteratorOptions){.schedule = MMB_SCHEDULE_MORTON},
                              &plain));
  OK(mmb_tile_iterator_create(a, &o, &it));
  size_t visited = 0;   /* (no first(): creating it started the walk) */
  for (mmbArrayTile *t; (t = mmb_tile_iterator_tile(it)); visited++) {
    mmbArrayTile *home = mmb_tile_iterator_tile(plain);
    cr_assert_not_null(home);
    cr_assert_eq(t->space, fast);
    cr_assert_neq(t->ptr, home->ptr, "a duplicate, not the home tile");
    cr_assert_arr_eq(t->lower, home->lower, 2 * sizeof(size_t), "the schedule's order");
    assert_tile_filled(t, 1);   /* its bytes have arrived */
    for (size_t i = 0; i < t->dim[0]; i++)
      for (size_t j = 0; j < t->dim[1]; j++) ((double *)t->ptr)[i * t->stride[0] + j] *= 2;
    OK(mmb_tile_iterator_next(it));
    OK(mmb_tile_iterator_next(plain));
  }
  cr_assert_eq(visited, 12);
  FAILS(mmb_tile_iterator_next(it), MMB_INVALID_STATE);
  OK(mmb_tile_iterator_destroy(it));
  OK(mmb_tile_iterator_destroy(plain));
  size_t idx[2] = {0, 0}, lo[2] = {0, 0}, hi[2] = {64, 48};
  do cr_assert_eq(*array_at(a, idx), 2 * value_at(idx, 2, 1));
  while (index_next(idx, lo, hi, 2));
  mmbStats st;
  OK(mmb_space_get_stats(fast, &st));
  cr_assert_leq(st.used_high, 4 * 16 * 16 * sizeof(double), "more than depth + 2 tiles held");
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(fast));
}

/* A custom schedule: the prefetches follow it; tiles it leaves out are not
   touched. */
MMB_TEST(prefetch, follows_a_custom_schedule) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 64, 48, 1);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {16, 16}}));   /* 4 x 3 tiles */
  mmbMemSpace *fast = limited_space(1 << 20);
  mmbQueue *q = thread_queue();
  const size_t order[] = {11, 9, 7, 5, 3, 1};             /* every other tile, backwards */
  mmbTileIteratorOptions o = prefetching(q, fast, 2, MMB_READ_WRITE);
  o.schedule = MMB_SCHEDULE_CUSTOM;
  o.order = order;
  o.order_length = 6;
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(a, &o, &it));
  size_t visited = 0;
  for (mmbArrayTile *t; (t = mmb_tile_iterator_tile(it)); visited++) {
    cr_assert_eq(t->lower[0], order[visited] / 3 * 16);
    cr_assert_eq(t->lower[1], order[visited] % 3 * 16);
    assert_tile_filled(t, 1);
    for (size_t i = 0; i < t->dim[0]; i++)
      for (size_t j = 0; j < t->dim[1]; j++) ((double *)t->ptr)[i * t->stride[0] + j] *= 2;
    OK(mmb_tile_iterator_next(it));
  }
  cr_assert_eq(visited, 6);
  OK(mmb_tile_iterator_destroy(it));
  size_t idx[2] = {0, 0}, lo[2] = {0, 0}, hi[2] = {64, 48};
  do {
    bool odd = (idx[0] / 16 * 3 + idx[1] / 16) % 2;
    cr_assert_eq(*array_at(a, idx), (odd ? 2 : 1) * value_at(idx, 2, 1));
  } while (index_next(idx, lo, hi, 2));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(fast));
}

/* Leaving early: the current duplicate is merged, the ones not yet handed
   out are released without writing anything back. A restart with first()
   walks again from the first tile. */
MMB_TEST(prefetch, leaving_early_and_restarting) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 64, 16, 1);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {8, 16}}));   /* 8 tiles of rows */
  mmbMemSpace *fast = limited_space(1 << 20);
  mmbQueue *q = thread_queue();
  mmbTileIteratorOptions o = prefetching(q, fast, 3, MMB_WRITE);   /* no bytes read in */
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(a, &o, &it));
  OK(mmb_tile_iterator_first(it));
  for (int k = 0; k < 3; k++) {
    mmbArrayTile *t = mmb_tile_iterator_tile(it);
    for (size_t i = 0; i < 8 * 16; i++) ((double *)t->ptr)[i] = -1.0;
    if (k < 2) OK(mmb_tile_iterator_next(it));
  }
  OK(mmb_tile_iterator_first(it));   /* tile 2 merged, tiles 3..5 released */
  OK(mmb_tile_iterator_destroy(it)); /* tile 0 (unwritten this time) is merged back */
  size_t idx[2] = {0, 0}, lo[2] = {0, 0}, hi[2] = {64, 16};
  do {
    if (idx[0] >= 8 && idx[0] < 24) cr_assert_eq(*array_at(a, idx), -1.0, "row %zu", idx[0]);
    else if (idx[0] >= 24) cr_assert_eq(*array_at(a, idx), value_at(idx, 2, 1), "row %zu", idx[0]);
  } while (index_next(idx, lo, hi, 2));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(fast));
}

/* The footprint is what the pool carves for depth + 2 duplicates; a space
   of exactly that size streams the whole array. */
MMB_TEST(prefetch, a_space_of_the_footprint_is_enough) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 256, 1000, 1);                 /* rows of 8000 bytes */
  OK(mmb_array_tile(a, &(mmbDimensions){2, {16, 1000}}));    /* 16 tiles of 128000 bytes */
  mmbQueue *q = thread_queue();
  size_t bytes = 0;
  mmbTileIteratorOptions o = prefetching(q, NULL, 2, MMB_READ_WRITE);
  FAILS(mmb_tile_iterator_footprint(NULL, &o, &bytes), MMB_INVALID_ARG);
  FAILS(mmb_tile_iterator_footprint(a, NULL, &bytes), MMB_INVALID_ARG);
  FAILS(mmb_tile_iterator_footprint(a, &o, NULL), MMB_INVALID_ARG);
  OK(mmb_tile_iterator_footprint(a, &o, &bytes));
  cr_assert_eq(bytes, (size_t)2 << 20, "4 blocks of 128000 bytes share one 2 MiB segment");
  o.depth = 30;   /* 32 blocks at most, but one per tile: 16, in 1 segment */
  OK(mmb_tile_iterator_footprint(a, &o, &bytes));
  cr_assert_eq(bytes, (size_t)2 << 20);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {160, 1000}}));   /* 1280000 bytes: 20 MiB segments */
  o.depth = 0;                                                /* 1 ahead: 2 tiles here */
  OK(mmb_tile_iterator_footprint(a, &o, &bytes));
  cr_assert_eq(bytes, (size_t)20 << 20);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {16, 1000}}));
  o.depth = 2;
  OK(mmb_tile_iterator_footprint(a, &o, &bytes));
  mmbMemSpace *fast = limited_space(bytes);
  o.space = fast;
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(a, &o, &it));
  size_t visited = 0;
  for (mmbArrayTile *t; (t = mmb_tile_iterator_tile(it)); visited++) {
    assert_tile_filled(t, 1);
    OK(mmb_tile_iterator_next(it));
  }
  cr_assert_eq(visited, 16);
  OK(mmb_tile_iterator_destroy(it));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(fast));
}

/* A walk lets go of each tile's record of its last operation once that
   operation is done: walking many tiles keeps no request per tile. */
MMB_TEST(prefetch, a_walk_keeps_no_request_per_tile) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = filled(iface, 64, 16, 1);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {1, 16}}));   /* 64 tiles */
  mmbMemSpace *fast = limited_space(1 << 20);
  mmbQueue *q = thread_queue();
  mmbTileIteratorOptions o = prefetching(q, fast, 2, MMB_READ_WRITE);
  mmbTileIterator *it;
  OK(mmb_tile_iterator_create(a, &o, &it));
  while (mmb_tile_iterator_tile(it)) OK(mmb_tile_iterator_next(it));
  OK(mmb_tile_iterator_first(it));   /* waits for the last merges */
  for (size_t i = 3; i < 64; i++) {  /* tiles 0 to 2 are on their way again */
    mmbArrayTile *t;
    OK(mmb_tile_at(a, &(mmbIndex){2, {i, 0}}, &t));
    cr_assert_null(((mmb__tile *)t)->pending, "tile %zu still holds its last request", i);
  }
  OK(mmb_tile_iterator_destroy(it));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(fast));
}

/* An array whose home is in a region, migrated on a queue: the region's
   bytes are read until the copy is done, so resetting the region waits for
   it, and what is allocated there next cannot reach the migrated array. */
MMB_TEST(async, a_region_home_migrated_asynchronously_outlives_a_reset) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemInterface *away = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbRegion *r;
  OK(mmb_region_create(iface, NULL, &r));
  mmbLayout *l;
  OK(mmb_layout_create_regular_1d(sizeof(float), (mmbLayoutPadding){0}, &l));
  mmbArray *a;
  OK(mmb_array_create_opts(&(mmbDimensions){1, {1024}}, l, NULL, MMB_READ_WRITE,
                           &(mmbArrayOptions){.region = r}, &a));
  float *x = mmb_array_ptr(a);
  for (int i = 0; i < 1024; i++) x[i] = (float)i;
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  close_gate(q);
  mmbRequest req = {0};
  OK(mmb_array_migrate_async(a, away, MMB_READ_WRITE, q, &req));
  pthread_t t = open_gate_soon();
  OK(mmb_region_reset(r));   /* waits for the copy */
  void *p;
  OK(mmb_region_alloc(r, 4096, 0, &p));
  memset(p, 0xff, 4096);
  OK(mmb_wait(&req));
  pthread_join(t, NULL);
  x = mmb_array_ptr(a);
  for (int i = 0; i < 1024; i++) cr_assert_eq(x[i], (float)i, "element %d", i);
  OK(mmb_array_destroy(a));
  OK(mmb_region_destroy(r));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_layout_destroy(l));
  OK(mmb_interface_destroy(iface));
  OK(mmb_interface_destroy(away));
}
