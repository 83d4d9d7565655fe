/* Queues and requests (thread backend): FIFO order, requests waited twice or
   never, errors through requests and through synchronize, wait_all with
   mixed errors, dependencies across queues, destroying a queue with work
   pending, no leaked threads, and the async copies. Runs under TSan too. */
#include "common.h"
#include "queue/internal.h"

#include <dirent.h>
#include <stdatomic.h>
#include <unistd.h>

static mmbQueue *thread_queue(void) {
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  return q;
}

static mmbError return_error(void *arg);

MMB_TEST(queue, bad_input_is_refused) {
  mmbQueue *q = NULL;
  FAILS(mmb_queue_create(NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_queue_create(&(mmbQueueOptions){.backend = (mmbQueueBackend)9}, &q), MMB_INVALID_ARG);
  if (mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_CUDA_STREAM}, &q) != MMB_OK)
    cr_assert_null(q);
  else
    OK(mmb_queue_destroy(NULL, &q));
  FAILS(mmb_queue_destroy(NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_queue_destroy(NULL, &q), MMB_INVALID_ARG);
  FAILS(mmb_queue_synchronize(NULL), MMB_INVALID_ARG);
  FAILS(mmb_queue_submit(NULL, (void (*)(void *))abort, NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_queue_wait_request(NULL, &(mmbRequest){0}), MMB_INVALID_ARG);
  FAILS(mmb_wait(NULL), MMB_INVALID_ARG);
  FAILS(mmb_wait_all(2, NULL, NULL), MMB_INVALID_ARG);
  OK(mmb_wait_all(0, NULL, NULL));
  bool done;
  FAILS(mmb_request_is_complete(NULL, &done), MMB_INVALID_ARG);
  q = thread_queue();
  FAILS(mmb_queue_submit(q, NULL, NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_queue_submit_task(q, NULL, NULL, NULL), MMB_INVALID_ARG);
  FAILS(mmb_queue_submit_task(NULL, return_error, NULL, NULL), MMB_INVALID_ARG);
  mmbRequest in_use = {.impl = (void *)&in_use};   /* not zeroed: refused, not trusted */
  FAILS(mmb_queue_submit(q, (void (*)(void *))abort, NULL, &in_use), MMB_INVALID_ARG);
  OK(mmb_queue_destroy(NULL, &q));
  cr_assert_null(q);
}

typedef struct order_log {
  int seen[1000];
  int n;
} order_log;
typedef struct order_item {
  order_log *log;
  int id;
} order_item;
static void record(void *arg) {
  order_item *it = arg;
  it->log->seen[it->log->n++] = it->id;
}

MMB_TEST(queue, work_runs_in_submission_order) {
  mmbQueue *q = thread_queue();
  static order_log log;
  static order_item items[1000];
  for (int i = 0; i < 1000; i++) {
    items[i] = (order_item){&log, i};
    OK(mmb_queue_submit(q, record, &items[i], NULL));
  }
  OK(mmb_queue_synchronize(q));
  cr_assert_eq(log.n, 1000);
  for (int i = 0; i < 1000; i++) cr_assert_eq(log.seen[i], i);
  OK(mmb_queue_destroy(NULL, &q));
}

static void nothing(void *arg) { (void)arg; }

MMB_TEST(queue, a_request_can_be_waited_twice_or_never) {
  mmbQueue *q = thread_queue();
  mmbRequest r = {0}, never = {0}, zero = {0};
  OK(mmb_queue_submit(q, nothing, NULL, &r));
  OK(mmb_queue_submit(q, nothing, NULL, &never));
  OK(mmb_wait(&r));
  cr_assert_null(r.impl);
  OK(mmb_wait(&r));    /* again: a zero request */
  OK(mmb_wait(&zero));
  bool done = false;
  OK(mmb_request_is_complete(&zero, &done));
  cr_assert(done);
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_request_is_complete(&never, &done));   /* the request outlives its queue */
  cr_assert(done);
  OK(mmb_wait(&never));
}

/* A task that fails with a given error (mmb_queue_submit_task). */
static mmbError return_error(void *arg) { return (mmbError)(intptr_t)arg; }
static void submit_failing(mmbQueue *q, mmbError err, mmbRequest *req) {
  OK(mmb_queue_submit_task(q, return_error, (void *)(intptr_t)err, req));
}

MMB_TEST(queue, errors_come_back_through_requests_and_synchronize) {
  mmbQueue *q = thread_queue();
  mmbRequest reqs[4] = {{0}};
  mmbError errs[4];
  submit_failing(q, MMB_OK, &reqs[0]);
  submit_failing(q, MMB_OUT_OF_MEMORY, &reqs[1]);
  submit_failing(q, MMB_OK, &reqs[2]);
  submit_failing(q, MMB_IO, &reqs[3]);
  FAILS(mmb_wait_all(4, reqs, errs), MMB_OUT_OF_MEMORY);
  cr_assert_eq(errs[0], MMB_OK);
  cr_assert_eq(errs[1], MMB_OUT_OF_MEMORY);
  cr_assert_eq(errs[2], MMB_OK);
  cr_assert_eq(errs[3], MMB_IO);
  for (int i = 0; i < 4; i++) cr_assert_null(reqs[i].impl);
  /* fire-and-forget: kept for the next synchronize, then cleared */
  submit_failing(q, MMB_UNSUPPORTED, NULL);
  submit_failing(q, MMB_IO, NULL);
  FAILS(mmb_queue_synchronize(q), MMB_UNSUPPORTED);
  OK(mmb_queue_synchronize(q));
  submit_failing(q, MMB_IO, NULL);
  FAILS(mmb_queue_destroy(NULL, &q), MMB_IO);
  cr_assert_null(q);
}

/* A task that sleeps past the waiter's spin (MMB__SPIN_NS, 200 us), then
   fails with the error it was given. */
static mmbError slow_error(void *arg) {
  usleep(5000);
  return (mmbError)(intptr_t)arg;
}

/* A waiter that went to sleep is woken, and gets the work's error; work
   that finishes while nobody waits completes on the worker's fast path
   (done and its reference dropped at once), with its error kept. */
MMB_TEST(queue, sleeping_waiters_are_woken_with_the_works_error) {
  mmbQueue *q = thread_queue();
  for (int i = 0; i < 4; i++) {
    mmbError want = i % 2 ? MMB_IO : MMB_OK;
    mmbRequest r = {0};
    OK(mmb_queue_submit_task(q, slow_error, (void *)(intptr_t)want, &r));
    cr_assert_eq(mmb_wait(&r), want, "round %d: the error after a sleep", i);
    cr_assert_null(r.impl);
  }
  mmbRequest fast = {0}, failed = {0}, user = {0};
  OK(mmb_queue_submit_task(q, return_error, (void *)(intptr_t)MMB_OK, &fast));
  OK(mmb_queue_submit_task(q, return_error, (void *)(intptr_t)MMB_UNSUPPORTED, &failed));
  OK(mmb_queue_submit(q, nothing, NULL, &user));
  OK(mmb_queue_synchronize(q));   /* both done before anyone waits */
  bool done = false;
  OK(mmb_request_is_complete(&fast, &done));
  cr_assert(done);
  OK(mmb_wait(&fast));
  FAILS(mmb_wait(&failed), MMB_UNSUPPORTED);
  OK(mmb_wait(&user));
  OK(mmb_queue_destroy(NULL, &q));
}

static _Atomic int gate, stage;
static void wait_for_gate(void *arg) {
  (void)arg;
  while (!atomic_load(&gate)) usleep(100);
  atomic_store(&stage, 1);
}
static void after_gate(void *arg) {
  *(int *)arg = atomic_load(&stage);
}

MMB_TEST(queue, a_queue_can_wait_for_another_queues_request) {
  mmbQueue *q1 = thread_queue(), *q2 = thread_queue();
  mmbRequest r1 = {0}, r2 = {0};
  int seen = -1;
  OK(mmb_queue_submit(q1, wait_for_gate, NULL, &r1));
  OK(mmb_queue_wait_request(q2, &r1));
  OK(mmb_queue_submit(q2, after_gate, &seen, &r2));
  OK(mmb_queue_wait_request(q2, &(mmbRequest){0}));   /* nothing to wait for */
  usleep(20000);
  bool done;
  OK(mmb_request_is_complete(&r2, &done));
  cr_assert(!done, "q2 ran ahead of q1's request");
  atomic_store(&gate, 1);
  OK(mmb_wait(&r2));
  cr_assert_eq(seen, 1);
  OK(mmb_wait(&r1));
  OK(mmb_queue_destroy(NULL, &q1));
  OK(mmb_queue_destroy(NULL, &q2));
}

/* A marker completes once the work submitted before it has run; another
   queue can wait for it without the caller blocking. */
MMB_TEST(queue, a_marker_completes_after_the_work_before_it) {
  mmbQueue *q1 = thread_queue(), *q2 = thread_queue();
  mmbRequest m = {0}, r2 = {0};
  int seen = -1;
  atomic_store(&gate, 0);
  OK(mmb_queue_submit(q1, wait_for_gate, NULL, NULL));
  OK(mmb_queue_marker(q1, &m));
  OK(mmb_queue_wait_request(q2, &m));
  OK(mmb_queue_submit(q2, after_gate, &seen, &r2));
  usleep(20000);
  bool done;
  OK(mmb_request_is_complete(&m, &done));
  cr_assert(!done, "the marker passed work queued before it");
  OK(mmb_request_is_complete(&r2, &done));
  cr_assert(!done, "q2 ran ahead of q1's marker");
  atomic_store(&gate, 1);
  OK(mmb_wait(&r2));
  cr_assert_eq(seen, 1);
  OK(mmb_wait(&m));
  OK(mmb_queue_marker(q1, &m));   /* an idle queue: done as soon as it is seen */
  OK(mmb_wait(&m));
  FAILS(mmb_queue_marker(NULL, &m), MMB_INVALID_ARG);
  FAILS(mmb_queue_marker(q1, NULL), MMB_INVALID_ARG);
  OK(mmb_queue_marker(q1, &m));
  FAILS(mmb_queue_marker(q1, &m), MMB_INVALID_ARG);   /* in use until waited on */
  OK(mmb_wait(&m));
  OK(mmb_queue_destroy(NULL, &q1));
  OK(mmb_queue_destroy(NULL, &q2));
}

/* A thread queue has no native queue, and cannot be given one. */
MMB_TEST(queue, thread_queues_have_no_native_queue) {
  mmbQueue *q = thread_queue(), *other = NULL;
  int sentinel;
  void *native = &sentinel;
  FAILS(mmb_queue_get_native(q, &native), MMB_UNSUPPORTED);
  cr_assert_eq(native, &sentinel, "out-parameter written on failure");
  FAILS(mmb_queue_get_native(NULL, &native), MMB_INVALID_ARG);
  FAILS(mmb_queue_get_native(q, NULL), MMB_INVALID_ARG);
  FAILS(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD, .native = &sentinel},
                         &other),
        MMB_INVALID_ARG);
  cr_assert_null(other);
  OK(mmb_queue_destroy(NULL, &q));
}

static void slow_count(void *arg) {
  usleep(200);
  atomic_fetch_add((_Atomic int *)arg, 1);
}

MMB_TEST(queue, destroy_runs_pending_work_first) {
  mmbQueue *q = thread_queue();
  static _Atomic int count;
  mmbRequest last = {0};
  for (int i = 0; i < 49; i++) OK(mmb_queue_submit(q, slow_count, &count, NULL));
  OK(mmb_queue_submit(q, slow_count, &count, &last));
  OK(mmb_queue_destroy(NULL, &q));
  cr_assert_eq(atomic_load(&count), 50);
  OK(mmb_wait(&last));
}

static int thread_count(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

MMB_TEST(queue, no_thread_outlives_its_queue) {
  int before = thread_count();
  mmbQueue *qs[8];
  for (int i = 0; i < 8; i++) qs[i] = thread_queue();
  cr_assert_eq(thread_count(), before + 8);
  for (int i = 0; i < 8; i++) OK(mmb_queue_destroy(NULL, &qs[i]));
  cr_assert_eq(thread_count(), before);
}

MMB_TEST(queue, a_worker_can_be_bound_near_a_space) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD, .near = dram}, &q));
  mmbRequest r = {0};
  OK(mmb_queue_submit(q, nothing, NULL, &r));
  OK(mmb_wait(&r));
  OK(mmb_queue_destroy(NULL, &q));
}

MMB_TEST(queue, async_copies_match_synchronous_ones) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbQueue *q = thread_queue();
  mmbAllocation *src, *dst, *small;
  OK(mmb_allocate(1 << 16, iface, &src));
  OK(mmb_allocate(1 << 16, iface, &dst));
  OK(mmb_allocate(16, iface, &small));
  fill_pattern(mmb_allocation_ptr(src), 1 << 16, 7);
  memset(mmb_allocation_ptr(dst), 0, 1 << 16);
  mmbRequest r = {0};
  FAILS(mmb_copy_async(small, src, q, &r), MMB_INVALID_ARG);   /* argument errors at once */
  cr_assert_null(r.impl);
  FAILS(mmb_copy_async(dst, src, NULL, &r), MMB_INVALID_ARG);
  FAILS(mmb_copy_1d_async(dst, 1 << 16, src, 0, 1, q, &r), MMB_INVALID_ARG);
  /* 1000 small copies, fire-and-forget but the last */
  for (size_t i = 0; i < 999; i++) OK(mmb_copy_1d_async(dst, i * 64, src, i * 64, 64, q, NULL));
  OK(mmb_copy_1d_async(dst, 999 * 64, src, 999 * 64, 1024, q, &r));
  OK(mmb_wait(&r));
  cr_assert_eq(memcmp(mmb_allocation_ptr(dst), mmb_allocation_ptr(src), 1000 * 64 + 960), 0);
  memset(mmb_allocation_ptr(dst), 0, 1 << 16);
  OK(mmb_copy_2d_async(dst, 0, 0, 256, src, 0, 0, 256, 128, 256, q, NULL));
  const size_t off[2] = {0, 0}, pitch[2] = {256, 0}, dims[2] = {128, 256};
  OK(mmb_copy_nd_async(dst, off, pitch, src, off, pitch, 2, dims, q, &r));
  OK(mmb_copy_async(small, small, q, NULL));
  OK(mmb_queue_synchronize(q));
  OK(mmb_wait(&r));
  const unsigned char *s = mmb_allocation_ptr(src), *d = mmb_allocation_ptr(dst);
  for (size_t row = 0; row < 256; row++) {
    cr_assert_eq(memcmp(d + row * 256, s + row * 256, 128), 0);
    cr_assert_eq(d[row * 256 + 128], 0);
  }
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_free(src));
  OK(mmb_free(dst));
  OK(mmb_free(small));
  OK(mmb_interface_destroy(iface));
}

Test(queue, needs_init) {
  mmbQueue *q;
  cr_assert_eq(mmb_queue_create(NULL, &q), MMB_NOT_INITIALIZED);
  cr_assert_eq(mmb_queue_submit_task(NULL, return_error, NULL, NULL), MMB_NOT_INITIALIZED);
}
