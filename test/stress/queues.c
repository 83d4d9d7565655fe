/* The queue stress driver, run under ThreadSanitizer by `make test
   SANITIZE=thread` (and plainly by `make test`): threads submitting async
   copies and user work to their own queue and to a shared one, with
   dependencies across queues, requests polled and waited, and queues
   destroyed with work pending. Checks every copied byte and every count. */
#include <mmb/mmb.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

enum { THREADS = 3, ROUNDS = 300, BYTES = 4096, SHORT_LIVED = 200 };

static mmbQueue *shared_q;
static _Atomic long user_runs;

typedef struct worker {
  mmbMemInterface *iface;
  int id, failed;
} worker;

static void count(void *arg) { atomic_fetch_add((_Atomic long *)arg, 1); }

static void *run(void *p) {
  worker *w = p;
  mmbQueue *own;
  if (mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &own) != MMB_OK) {
    w->failed = 1;
    return NULL;
  }
  mmbAllocation *src, *mid, *dst;
  w->failed |= mmb_allocate(BYTES, w->iface, &src) != MMB_OK;
  w->failed |= mmb_allocate(BYTES, w->iface, &mid) != MMB_OK;
  w->failed |= mmb_allocate(BYTES, w->iface, &dst) != MMB_OK;
  if (w->failed) return NULL;
  unsigned char *s = mmb_allocation_ptr(src), *d = mmb_allocation_ptr(dst);
  for (int r = 0; r < ROUNDS && !w->failed; r++) {
    memset(s, (w->id * 31 + r) & 0xff, BYTES);
    mmbRequest first = {0}, second = {0};
    /* src -> mid on the own queue, then mid -> dst on the shared queue,
       which waits for the first copy */
    w->failed |= mmb_copy_async(mid, src, own, &first) != MMB_OK;
    w->failed |= mmb_queue_submit(own, count, &user_runs, NULL) != MMB_OK;
    w->failed |= mmb_queue_wait_request(shared_q, &first) != MMB_OK;
    w->failed |= mmb_copy_async(dst, mid, shared_q, &second) != MMB_OK;
    w->failed |= mmb_queue_submit(shared_q, count, &user_runs, NULL) != MMB_OK;
    bool done = false;
    while (!done) w->failed |= mmb_request_is_complete(&second, &done) != MMB_OK;
    w->failed |= mmb_wait(&second) != MMB_OK || mmb_wait(&first) != MMB_OK;
    for (int i = 0; i < BYTES; i++) w->failed |= d[i] != ((w->id * 31 + r) & 0xff);
  }
  w->failed |= mmb_queue_synchronize(own) != MMB_OK;
  for (int i = 0; i < 20; i++) w->failed |= mmb_queue_submit(own, count, &user_runs, NULL);
  w->failed |= mmb_queue_destroy(NULL, &own) != MMB_OK;   /* with work pending */
  w->failed |= mmb_free(src) != MMB_OK || mmb_free(mid) != MMB_OK || mmb_free(dst) != MMB_OK;
  /* queues destroyed right after their submissions: the worker may be
     between its look at the stack and its look at the stop flag */
  for (int i = 0; i < SHORT_LIVED && !w->failed; i++) {
    mmbQueue *brief;
    w->failed |= mmb_queue_create(NULL, &brief) != MMB_OK;
    for (int k = 0; k <= i % 2 && !w->failed; k++)   /* one or two */
      w->failed |= mmb_queue_submit(brief, count, &user_runs, NULL) != MMB_OK;
    w->failed |= mmb_queue_destroy(NULL, &brief) != MMB_OK;
  }
  return NULL;
}

int main(void) {
  if (mmb_init(&(mmbOptions){.log_level = MMB_LOG_ERROR}) != MMB_OK) return 1;
  mmbMemSpace *dram;
  if (mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram) != MMB_OK) return 1;
  mmbMemInterface *pool;
  mmbMemInterfaceConfig cfg = {.flags = MMB_INTERFACE_THREAD_SAFE, .strategy = MMB_STRATEGY_POOL};
  if (mmb_request_interface(dram, &cfg, &pool) != MMB_OK) return 1;
  if (mmb_queue_create(NULL, &shared_q) != MMB_OK) return 1;
  static worker w[THREADS];
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){.iface = pool, .id = i};
    pthread_create(&t[i], NULL, run, &w[i]);
  }
  int failed = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    failed |= w[i].failed;
  }
  failed |= mmb_queue_destroy(NULL, &shared_q) != MMB_OK;
  long want = (long)THREADS * (2 * ROUNDS + 20 + SHORT_LIVED / 2 * 3);
  failed |= atomic_load(&user_runs) != want;
  failed |= mmb_interface_destroy(pool) != MMB_OK;
  failed |= mmb_finalize() != MMB_OK;
  printf("stress-queues: %d threads x %d rounds, %ld user works: %s\n", THREADS, ROUNDS,
         atomic_load(&user_runs), failed ? "FAILED" : "ok");
  return failed;
}
