/* Stream queues. The first part runs everywhere: a fake stream
   (fake_stream.h) under a queue drives the same execution path as a CUDA
   stream: what is issued, what runs on the host after the stream drains,
   requests backed by events, cross-stream waits on events, errors at issue
   and errors the device reports later. The second part is the CUDA-stream
   backend on a real device; it skips where there is none. */
#include "arrays.h"
#include "fake_stream.h"
#include "gate.h"

static mmbMemInterface *fake_device(void) {
  mmbMemInterface *dev = fake_device_interface(0);
  cr_assert_not_null(dev);
  return dev;
}

static mmbQueue *fake_queue(void) {
  mmbQueue *q;
  OK(fake_queue_create(&q));
  return q;
}
static fake_stream *fake_of(mmbQueue *q) { return (fake_stream *)q->stream; }

/* Gives the workers time to issue what they can; the gate stays closed. */
static void settle(void) { usleep(20000); }

/* Waits (up to 5 s, for a loaded machine) until the fake streams have
   issued `want` of what `count` counts, then settles: the caller then
   checks that no more than that was issued. */
static void await_count(atomic_int *count, int want) {
  for (int i = 0; i < 5000 && atomic_load(count) < want; i++) usleep(1000);
  settle();
}

static bool complete(mmbRequest *r) {
  bool done;
  OK(mmb_request_is_complete(r, &done));
  return done;
}

static mmbAllocation *patterned(mmbMemInterface *iface, size_t n, uint64_t seed) {
  mmbAllocation *a;
  OK(mmb_allocate(n, iface, &a));
  fill_pattern(mmb_allocation_ptr(a), n, seed);
  return a;
}

static void assert_same(mmbAllocation *a, mmbAllocation *b, size_t n) {
  cr_assert_eq(memcmp(mmb_allocation_ptr(a), mmb_allocation_ptr(b), n), 0);
}

MMB_TEST(stream_queue, reports_its_backend) {
  mmbQueue *q = fake_queue(), *t;
  mmbQueueBackend b;
  OK(mmb_queue_get_backend(q, &b));
  cr_assert_eq(b, MMB_QUEUE_CUDA_STREAM);
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &t));
  OK(mmb_queue_get_backend(t, &b));
  cr_assert_eq(b, MMB_QUEUE_THREAD);
  FAILS(mmb_queue_get_backend(NULL, &b), MMB_INVALID_ARG);
  FAILS(mmb_queue_get_backend(t, NULL), MMB_INVALID_ARG);
  void *native = NULL;
  OK(mmb_queue_get_native(q, &native));   /* the stream's own handle */
  cr_assert_eq(native, (void *)q->stream);
  OK(mmb_queue_destroy(NULL, &t));
  OK(mmb_queue_destroy(NULL, &q));
}

/* A copy with a device side is issued (the worker does not wait for the
   stream) and its request completes only when the stream has run it. */
MMB_TEST(stream_queue, device_copies_are_issued_and_done_on_their_event) {
  enum { N = 4096 };
  mmbMemInterface *dev = fake_device(), *host = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbAllocation *h = patterned(host, N, 1), *d = patterned(dev, N, 2),
                *back = patterned(host, N, 3);
  mmbQueue *q = fake_queue();
  mmbRequest r1 = {0}, r2 = {0};
  close_gate(q);
  OK(mmb_copy_async(d, h, q, &r1));
  OK(mmb_copy_1d_async(back, 0, d, 0, N, q, &r2));
  await_count(&copies_issued, 2);
  cr_assert_eq(atomic_load(&copies_issued), 2, "both copies are issued behind the gate");
  cr_assert(!complete(&r1) && !complete(&r2));
  cr_assert_neq(memcmp(mmb_allocation_ptr(back), mmb_allocation_ptr(h), N), 0);
  atomic_store(&gate, 1);
  OK(mmb_wait(&r2));
  cr_assert(complete(&r1), "FIFO: the first copy is done before the second");
  OK(mmb_wait(&r1));
  OK(mmb_wait(&r1));   /* twice: nothing to wait for */
  assert_same(back, h, N);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_free(h));
  OK(mmb_free(d));
  OK(mmb_free(back));
}

/* Host work (a host-to-host copy) waits for the device work before it, and
   device work after it waits for it: FIFO across both kinds. */
MMB_TEST(stream_queue, host_work_runs_after_the_stream_drains) {
  enum { N = 2048 };
  mmbMemInterface *dev = fake_device(), *host = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbAllocation *h = patterned(host, N, 1), *d = patterned(dev, N, 2),
                *mid = patterned(host, N, 3), *mid2 = patterned(host, N, 4),
                *d2 = patterned(dev, N, 5), *back = patterned(host, N, 6);
  mmbQueue *q = fake_queue();
  mmbRequest r = {0};
  close_gate(q);
  OK(mmb_copy_async(d, h, q, NULL));      /* issued */
  OK(mmb_copy_async(mid, d, q, NULL));    /* issued */
  OK(mmb_copy_async(mid2, mid, q, NULL)); /* host pair: on the worker, after a drain */
  OK(mmb_copy_async(d2, mid2, q, NULL));  /* issued once the host copy has run */
  OK(mmb_copy_async(back, d2, q, &r));
  await_count(&copies_issued, 2);
  cr_assert_eq(atomic_load(&copies_issued), 2, "nothing after the host copy is issued yet");
  atomic_store(&gate, 1);
  OK(mmb_wait(&r));
  cr_assert_eq(atomic_load(&copies_issued), 4);
  assert_same(back, h, N);
  assert_same(mid2, h, N);
  OK(mmb_queue_destroy(NULL, &q));
  mmbAllocation *all[] = {h, d, mid, mid2, d2, back};
  for (size_t i = 0; i < 6; i++) OK(mmb_free(all[i]));
}

/* A task runs on the host once the stream's earlier work is done (it sees
   the copy's bytes), and its result is its request's. */
typedef struct task_check {
  mmbAllocation *seen, *want;
  size_t n;
} task_check;
static mmbError check_copied(void *arg) {
  task_check *c = arg;
  return memcmp(mmb_allocation_ptr(c->seen), mmb_allocation_ptr(c->want), c->n) ? MMB_ERROR
                                                                                : MMB_IO;
}

/* Work on a stream runs on the stream's own thread, not the worker's:
   calling back into its queue from there is refused all the same. */
Test(stream_queue, work_on_the_stream_cannot_destroy_or_wait_for_its_queue) {
  mmb_test_setup();
  assert_own_work_is_refused(fake_queue());
  mmb_test_teardown();
}

MMB_TEST(stream_queue, tasks_run_on_the_host_after_the_stream) {
  enum { N = 4096 };
  mmbMemInterface *dev = fake_device(), *host = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbAllocation *h = patterned(host, N, 1), *d = patterned(dev, N, 2), *back = patterned(host, N, 3);
  mmbQueue *q = fake_queue();
  mmbRequest r = {0};
  task_check c = {.seen = back, .want = h, .n = N};
  close_gate(q);
  OK(mmb_copy_async(d, h, q, NULL));
  OK(mmb_copy_async(back, d, q, NULL));
  OK(mmb_queue_submit_task(q, check_copied, &c, &r));
  settle();
  cr_assert(!complete(&r), "the task waits for the stream");
  atomic_store(&gate, 1);
  FAILS(mmb_wait(&r), MMB_IO);   /* check_copied's "seen it" */
  OK(mmb_queue_destroy(NULL, &q));
  mmbAllocation *all[] = {h, d, back};
  for (size_t i = 0; i < 3; i++) OK(mmb_free(all[i]));
}

/* A wait on another stream's request is a wait on its event, on the
   device; the waiting queue's worker goes on issuing. */
MMB_TEST(stream_queue, cross_stream_dependencies_wait_on_events) {
  enum { N = 1024 };
  mmbMemInterface *dev = fake_device(), *host = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbAllocation *h = patterned(host, N, 1), *d = patterned(dev, N, 2),
                *back = patterned(host, N, 3);
  mmbQueue *a = fake_queue(), *b = fake_queue();
  mmbRequest ra = {0}, rb = {0};
  close_gate(a);
  OK(mmb_copy_async(d, h, a, &ra));
  OK(mmb_queue_wait_request(b, &ra));
  OK(mmb_copy_async(back, d, b, &rb));
  await_count(&copies_issued, 2);
  cr_assert_eq(atomic_load(&device_waits), 1, "the dependency is an event wait on b's stream");
  cr_assert_eq(atomic_load(&copies_issued), 2, "b's copy is issued behind the event wait");
  cr_assert(!complete(&rb));
  atomic_store(&gate, 1);
  OK(mmb_wait(&rb));
  assert_same(back, h, N);
  OK(mmb_wait(&ra));
  OK(mmb_queue_destroy(NULL, &b));
  OK(mmb_queue_destroy(NULL, &a));
  OK(mmb_free(h));
  OK(mmb_free(d));
  OK(mmb_free(back));
}

/* A stream waits for a thread queue's request on its worker; a thread queue
   waits for a stream's request on its event. */
MMB_TEST(stream_queue, mixed_dependencies_with_thread_queues) {
  enum { N = 1024 };
  mmbMemInterface *dev = fake_device(), *host = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbAllocation *h = patterned(host, N, 1), *h2 = patterned(host, N, 2),
                *d = patterned(dev, N, 3), *back = patterned(host, N, 4);
  mmbQueue *s = fake_queue(), *t;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &t));
  mmbRequest rt = {0}, rs = {0}, rt2 = {0};
  close_gate(t);
  OK(mmb_copy_async(h2, h, t, &rt));     /* thread queue, behind the gate */
  OK(mmb_queue_wait_request(s, &rt));
  OK(mmb_copy_async(d, h2, s, &rs));     /* stream: after the thread copy */
  OK(mmb_queue_wait_request(t, &rs));
  OK(mmb_copy_async(back, d, t, &rt2));  /* thread queue: after the stream copy */
  settle();
  cr_assert_eq(atomic_load(&device_waits), 0, "a thread request is waited for by the worker");
  cr_assert_eq(atomic_load(&copies_issued), 0);
  cr_assert(!complete(&rs));
  atomic_store(&gate, 1);
  OK(mmb_wait(&rt2));
  cr_assert(complete(&rs));
  assert_same(back, h, N);
  mmbRequest all[] = {rt, rs};
  OK(mmb_wait_all(2, all, NULL));
  OK(mmb_queue_destroy(NULL, &t));
  OK(mmb_queue_destroy(NULL, &s));
  mmbAllocation *allocs[] = {h, h2, d, back};
  for (size_t i = 0; i < 4; i++) OK(mmb_free(allocs[i]));
}

/* An error at issue comes back through the request, or from synchronize
   for fire-and-forget work; an error the device reports later comes back
   from the event. */
MMB_TEST(stream_queue, errors_at_issue_and_on_the_device) {
  enum { N = 512 };
  mmbMemInterface *dev = fake_device(), *host = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbAllocation *h = patterned(host, N, 1), *d = patterned(dev, N, 2);
  mmbQueue *q = fake_queue();
  fake_stream *f = fake_of(q);
  mmbRequest r = {0}, ok = {0};
  atomic_store(&f->fail_next_issue, 1);
  OK(mmb_copy_async(d, h, q, &r));
  FAILS(mmb_wait(&r), MMB_INVALID_ARG);
  atomic_store(&f->fail_next_issue, 1);
  OK(mmb_copy_async(d, h, q, NULL));
  FAILS(mmb_queue_synchronize(q), MMB_INVALID_ARG);
  OK(mmb_queue_synchronize(q));   /* reported once */
  OK(mmb_copy_async(d, h, q, &ok));
  OK(mmb_wait(&ok));
  atomic_store(&f->fail_next_on_device, 1);
  OK(mmb_copy_async(d, h, q, &r));
  FAILS(mmb_wait(&r), MMB_ERROR);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_free(h));
  OK(mmb_free(d));
}

/* Array and tile copies between host and device memory are issued on the
   stream; merges that compute run on the host, in order. */
MMB_TEST(stream_queue, array_and_tile_transports) {
  mmbMemInterface *dev = fake_device(), *host = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbDimensions dims = dims2(64, 48);
  mmbArray *a = test_array(host, &dims, MMB_ROWMAJOR, 0),
           *d = test_array(dev, &dims, MMB_ROWMAJOR, 0),
           *b = test_array(host, &dims, MMB_ROWMAJOR, 0);
  fill_array(a, 1);
  fill_array(b, 2);
  mmbQueue *q = fake_queue();
  mmbRequest r = {0};
  close_gate(q);
  OK(mmb_array_copy_async(d, a, q, NULL));
  OK(mmb_array_copy_async(b, d, q, &r));
  await_count(&copies_issued, 2);
  cr_assert_eq(atomic_load(&copies_issued), 2);
  cr_assert(!complete(&r));
  atomic_store(&gate, 1);
  OK(mmb_wait(&r));
  assert_array_filled(b, 1);
  /* tiles: the device array's tiles, copied from a tiled host array */
  fill_array(a, 3);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {16, 16}}));
  OK(mmb_array_tile(d, &(mmbDimensions){2, {16, 16}}));
  mmbArrayTile *ta, *td;
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 2}}, &ta));
  OK(mmb_tile_at(d, &(mmbIndex){2, {1, 2}}, &td));
  OK(mmb_tile_copy_async(td, ta, q, NULL));
  OK(mmb_array_copy_async(b, d, q, &r));
  OK(mmb_wait(&r));
  cr_assert_eq(atomic_load(&copies_issued), 4, "the tile and the array copies were issued");
  for (size_t i = 16; i < 32; i++)
    for (size_t j = 32; j < 48; j++) {
      size_t idx[2] = {i, j};
      cr_assert_eq(*array_at(b, idx), value_at(idx, 2, 3));
    }
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(d));
  OK(mmb_array_destroy(b));
}

/* free_async on a stream: the fence is an event, and the block is not
   handed out again before it has passed. */
MMB_TEST(stream_queue, free_async_waits_for_the_event) {
  mmbMemInterface *dev = fake_device();
  mmbQueue *q = fake_queue();
  mmbAllocation *a, *b[16];
  OK(mmb_allocate(4096, dev, &a));
  void *held = mmb_allocation_ptr(a);
  close_gate(q);
  OK(mmb_free_async(a, q));
  for (int i = 0; i < 16; i++) {
    OK(mmb_allocate(4096, dev, &b[i]));
    cr_assert_neq(mmb_allocation_ptr(b[i]), held, "reused while the stream may use it");
  }
  for (int i = 0; i < 16; i++) OK(mmb_free(b[i]));
  mmbStats st;
  OK(mmb_interface_get_stats(dev, &st));
  cr_assert_eq(st.used_current, 4096);
  atomic_store(&gate, 1);
  OK(mmb_queue_synchronize(q));
  OK(mmb_interface_trim(dev, SIZE_MAX));
  OK(mmb_interface_get_stats(dev, &st));
  cr_assert_eq(st.used_current, 0);
  OK(mmb_queue_destroy(NULL, &q));
}

/* ---- the CUDA-stream backend on a device --------------------------------- */
static mmbQueue *cuda_queue(void) {
  mmbQueue *q;
  mmbError err = mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_CUDA_STREAM}, &q);
  if (err == MMB_UNAVAILABLE) cr_skip_test("no CUDA device on this node");
  OK(err);
  return q;
}

MMB_TEST(stream_queue, without_a_device_streams_are_unavailable_and_auto_is_threads) {
  mmbMemSpace *gpu;
  if (mmb_request_space(MMB_GDRAM, MMB_GPU_CUDA, NULL, &gpu) == MMB_OK)
    cr_skip_test("this node has a CUDA device");
  mmbQueue *q = NULL;
  int not_a_stream;
  FAILS(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_CUDA_STREAM}, &q),
        MMB_UNAVAILABLE);
  FAILS(mmb_queue_create(&(mmbQueueOptions){.native = &not_a_stream}, &q), MMB_UNAVAILABLE);
  cr_assert_null(q);
  OK(mmb_queue_create(NULL, &q));
  mmbQueueBackend b;
  OK(mmb_queue_get_backend(q, &b));
  cr_assert_eq(b, MMB_QUEUE_THREAD);
  OK(mmb_queue_destroy(NULL, &q));
}

MMB_TEST(cuda_stream, auto_picks_a_stream_where_a_device_exists) {
  mmbQueue *q = cuda_queue(), *a;
  OK(mmb_queue_create(NULL, &a));
  mmbQueueBackend b;
  OK(mmb_queue_get_backend(a, &b));
  cr_assert_eq(b, MMB_QUEUE_CUDA_STREAM);
  FAILS(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_CUDA_STREAM, .device = 1 << 20},
                         &(mmbQueue *){NULL}),
        MMB_INVALID_ARG);
  OK(mmb_queue_destroy(NULL, &a));
  OK(mmb_queue_destroy(NULL, &q));
}

/* A queue over a stream it was given uses that stream and leaves it alive:
   the queue that owns the stream still copies on it afterwards. */
MMB_TEST(cuda_stream, a_borrowed_native_stream_is_used_and_left_alive) {
  mmbQueue *owner = cuda_queue(), *borrower;
  void *stream = NULL, *seen = NULL;
  OK(mmb_queue_get_native(owner, &stream));
  cr_assert_not_null(stream);
  OK(mmb_queue_create(&(mmbQueueOptions){.native = stream}, &borrower));   /* AUTO: a stream */
  OK(mmb_queue_get_native(borrower, &seen));
  cr_assert_eq(seen, stream);
  mmbMemInterface *gpu = test_cuda_interface(), *host = test_interface(MMB_PROVIDER_DEFAULT, 0);
  enum { N = 1 << 16 };
  mmbAllocation *h = patterned(host, N, 11), *d, *back;
  OK(mmb_allocate(N, gpu, &d));
  OK(mmb_allocate(N, host, &back));
  mmbRequest r = {0};
  OK(mmb_copy_async(d, h, borrower, NULL));
  OK(mmb_queue_destroy(NULL, &borrower));   /* the stream lives on */
  OK(mmb_copy_async(back, d, owner, &r));
  OK(mmb_wait(&r));
  assert_same(h, back, N);
  OK(mmb_free(h));
  OK(mmb_free(d));
  OK(mmb_free(back));
  OK(mmb_interface_destroy(gpu));
  OK(mmb_interface_destroy(host));
  OK(mmb_queue_destroy(NULL, &owner));
}

/* Host -> device -> host in 1-D, 2-D and 3-D boxes (cudaMemcpyAsync,
   cudaMemcpy2DAsync, cudaMemcpy3DAsync), submitted back to back with no wait
   in between: stream order alone keeps them right. */
MMB_TEST(cuda_stream, copies_in_1d_2d_3d_in_stream_order) {
  mmbQueue *q = cuda_queue();
  mmbMemInterface *gpu = test_cuda_interface(), *host = test_interface(MMB_PROVIDER_DEFAULT, 0);
  enum { X = 96, Y = 20, Z = 6, N = X * Y * Z };
  mmbAllocation *h = patterned(host, N, 5), *d, *back = patterned(host, N, 6),
                *box2 = patterned(host, N, 7), *box3 = patterned(host, N, 8);
  OK(mmb_allocate(N, gpu, &d));
  unsigned char *want2 = malloc(N), *want3 = malloc(N);
  memcpy(want2, mmb_allocation_ptr(box2), N);
  memcpy(want3, mmb_allocation_ptr(box3), N);
  const unsigned char *src = mmb_allocation_ptr(h);
  for (size_t y = 0; y < 10; y++)   /* 40 x 10 from (16, 3) to (8, 2), pitch X */
    memcpy(want2 + (2 + y) * X + 8, src + (3 + y) * X + 16, 40);
  for (size_t z = 0; z < 4; z++)    /* 40 x 10 x 4 from (16, 3, 1) to (8, 2, 0) */
    for (size_t y = 0; y < 10; y++)
      memcpy(want3 + z * X * Y + (2 + y) * X + 8, src + (1 + z) * X * Y + (3 + y) * X + 16, 40);
  mmbRequest r[4] = {{0}};
  OK(mmb_copy_async(d, h, q, &r[0]));
  OK(mmb_copy_async(back, d, q, &r[1]));
  OK(mmb_copy_2d_async(box2, 8, 2, X, d, 16, 3, X, 40, 10, q, &r[2]));
  const size_t doff[3] = {8, 2, 0}, soff[3] = {16, 3, 1}, pitch[2] = {X, X * Y},
               box[3] = {40, 10, 4};
  OK(mmb_copy_nd_async(box3, doff, pitch, d, soff, pitch, 3, box, q, &r[3]));
  mmbError errs[4];
  OK(mmb_wait_all(4, r, errs));
  for (int i = 0; i < 4; i++) cr_assert_eq(errs[i], MMB_OK);
  assert_same(back, h, N);
  cr_assert_eq(memcmp(mmb_allocation_ptr(box2), want2, N), 0, "2-D box");
  cr_assert_eq(memcmp(mmb_allocation_ptr(box3), want3, N), 0, "3-D box");
  free(want2);
  free(want3);
  OK(mmb_queue_destroy(NULL, &q));
  mmbAllocation *all[] = {h, d, back, box2, box3};
  for (size_t i = 0; i < 5; i++) OK(mmb_free(all[i]));
  OK(mmb_interface_destroy(gpu));
}

/* A host function gates the stream; a second stream waits on the first's
   event; a thread queue waits on the second's; data arrives intact. */
MMB_TEST(cuda_stream, gates_and_dependencies_across_streams_and_threads) {
  mmbQueue *a = cuda_queue(), *b = cuda_queue(), *t;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &t));
  mmbMemInterface *gpu = test_cuda_interface(), *host = test_interface(MMB_PROVIDER_DEFAULT, 0);
  enum { N = 1 << 20 };
  mmbAllocation *h = patterned(host, N, 9), *d, *back = patterned(host, N, 10),
                *last = patterned(host, N, 11);
  OK(mmb_allocate(N, gpu, &d));
  mmbRequest ra = {0}, rb = {0}, rt = {0};
  close_gate(a);
  OK(mmb_copy_async(d, h, a, &ra));
  OK(mmb_queue_wait_request(b, &ra));
  OK(mmb_copy_async(back, d, b, &rb));
  OK(mmb_queue_wait_request(t, &rb));
  OK(mmb_copy_async(last, back, t, &rt));
  settle();
  cr_assert(!complete(&ra) && !complete(&rb) && !complete(&rt));
  atomic_store(&gate, 1);
  OK(mmb_wait(&rt));
  assert_same(last, h, N);
  mmbRequest rest[] = {ra, rb};
  OK(mmb_wait_all(2, rest, NULL));
  OK(mmb_queue_destroy(NULL, &t));
  OK(mmb_queue_destroy(NULL, &b));
  OK(mmb_queue_destroy(NULL, &a));
  mmbAllocation *all[] = {h, d, back, last};
  for (size_t i = 0; i < 4; i++) OK(mmb_free(all[i]));
  OK(mmb_interface_destroy(gpu));
}

/* Arrays to the device and back, and a merge that computes (on the host,
   after the stream): MMB_MERGE_SUM of a device duplicate into its home. */
MMB_TEST(cuda_stream, array_transports_and_merges) {
  mmbQueue *q = cuda_queue();
  mmbMemInterface *gpu = test_cuda_interface(), *host = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbDimensions dims = dims2(128, 96);
  mmbArray *a = test_array(host, &dims, MMB_ROWMAJOR, 0),
           *back = test_array(host, &dims, MMB_ROWMAJOR, 0), *dup = NULL;
  fill_array(a, 4);
  fill_array(back, 5);
  mmbRequest r = {0};
  OK(mmb_array_duplicate_async(a, gpu, MMB_READ_WRITE, q, NULL, &dup));
  OK(mmb_array_copy_async(back, dup, q, &r));
  OK(mmb_wait(&r));
  assert_array_filled(back, 4);
  OK(mmb_array_merge_async(dup, MMB_MERGE_SUM, q, &r));   /* a += dup: twice the values */
  OK(mmb_wait(&r));
  size_t idx[2] = {7, 9};
  cr_assert_eq(*array_at(a, idx), 2 * value_at(idx, 2, 4));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(back));
  OK(mmb_interface_destroy(gpu));
}

/* Device blocks freed behind a gated stream are not reused before its
   event passes. */
MMB_TEST(cuda_stream, free_async_on_device_memory) {
  mmbQueue *q = cuda_queue();
  mmbMemInterface *gpu = test_cuda_interface();
  mmbAllocation *a, *b[8];
  OK(mmb_allocate(1 << 16, gpu, &a));
  void *held = mmb_allocation_ptr(a);
  close_gate(q);
  OK(mmb_free_async(a, q));
  for (int i = 0; i < 8; i++) {
    OK(mmb_allocate(1 << 16, gpu, &b[i]));
    cr_assert_neq(mmb_allocation_ptr(b[i]), held);
  }
  for (int i = 0; i < 8; i++) OK(mmb_free(b[i]));
  atomic_store(&gate, 1);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_interface_destroy(gpu));
}
