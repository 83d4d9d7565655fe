/* bench/queue: the thread backend against baselines measured in the same run.
   1. Empty request round trip (submit a no-op with a request, wait on it),
      p50 and p99, against a token handed to a spinning worker thread and
      back (the fastest a two-thread round trip can be), in alternating
      blocks. Targets: median <= 2x the handoff's, p99 <= 10 us.
   2. 1000 small (256 B) async copies then one wait, against the same copies
      done synchronously, alternating: medians and worst rounds.
   3. The prefetching iterator's overlap: streaming an array through a
      limited space while computing on it (examples/stream_sum's own code),
      against max(the copies alone, the compute alone, on tiles as warm as
      the streamed kernel finds them). Target: <= 1.15x.
   4. Where a CUDA device exists, the CUDA-stream backend: the empty request
      round trip (a host function and its event), and 64 MiB each way
      between pinned host memory and the device: an upload on one stream
      while a download runs on another, against the same two copies done
      one after the other with mmb_copy.
   Usage: bench-queue [round trips] */
#include <mmb/mmb.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#define STREAM_SUM_NO_MAIN
#include "../examples/stream_sum.c"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, n, sizeof *v, cmp);
  return v[n / 2];
}

/* The baseline: a token handed to a worker that spins for it, and back. The
   worker sleeps between blocks (on a condition variable), so that it does
   not spin against mmb's worker on a machine with few cores. */
static _Atomic int token;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int block_on, quit;   /* under lock */

static void *spin_worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&lock);
    while (!block_on && !quit) pthread_cond_wait(&wake, &lock);
    bool stop = quit;
    pthread_mutex_unlock(&lock);
    if (stop) return NULL;
    for (int t; (t = atomic_load_explicit(&token, memory_order_acquire)) != 3;) {
      if (t == 1) atomic_store_explicit(&token, 2, memory_order_release);
      else __builtin_ia32_pause();
    }
    atomic_store_explicit(&token, 0, memory_order_relaxed);
  }
}

static void spin_block(bool on) {
  pthread_mutex_lock(&lock);
  block_on = on;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&lock);
  if (!on) atomic_store_explicit(&token, 3, memory_order_release);   /* the block ends */
}

static double spin_trip(void) {
  double t0 = now();
  atomic_store_explicit(&token, 1, memory_order_release);
  while (atomic_load_explicit(&token, memory_order_acquire) != 2) __builtin_ia32_pause();
  return now() - t0;
}

static void nothing(void *arg) { (void)arg; }

/* Time to submit a no-op with a request and wait on it, `trips` times. */
static void round_trips(mmbQueue *q, int trips, double *v) {
  for (int i = 0; i < trips; i++) {
    mmbRequest r = {0};
    double t0 = now();
    CHECK(mmb_queue_submit(q, nothing, NULL, &r));
    CHECK(mmb_wait(&r));
    v[i] = now() - t0;
  }
}

static double median_of(double *v, int n) { return median(v, n); }
static double p99_of(double *v, int n) { return v[n - 1 - n / 100]; }   /* sorted by median() */

static void stream_section(int trips, double *v) {
  mmbQueue *up, *down;
  if (mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_CUDA_STREAM}, &up) != MMB_OK) {
    printf("4. CUDA-stream backend: no CUDA device here, skipped\n");
    return;
  }
  CHECK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_CUDA_STREAM}, &down));
  printf("4. CUDA-stream backend\n   empty request round trip (host function + event), median "
         "of %d: %.2f us\n", trips, (round_trips(up, trips, v), median(v, trips)) * 1e6);
  mmbMemSpace *dram, *gpu;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  CHECK(mmb_request_space(MMB_GDRAM, MMB_GPU_CUDA, NULL, &gpu));
  mmbMemInterface *pinned, *dev;
  CHECK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.provider = MMB_PROVIDER_PINNED},
                              &pinned));
  CHECK(mmb_request_interface(gpu, NULL, &dev));
  const size_t n = 64u << 20;
  mmbAllocation *h_up, *h_down, *d_up, *d_down;
  CHECK(mmb_allocate(n, pinned, &h_up));
  CHECK(mmb_allocate(n, pinned, &h_down));
  CHECK(mmb_allocate(n, dev, &d_up));
  CHECK(mmb_allocate(n, dev, &d_down));
  double best_seq = 1e30, best_both = 1e30;
  for (int rep = 0; rep < 10; rep++) {
    double t0 = now();
    CHECK(mmb_copy(d_up, h_up));
    CHECK(mmb_copy(h_down, d_down));
    double t = now() - t0;
    if (t < best_seq) best_seq = t;
    mmbRequest r[2] = {{0}};
    t0 = now();
    CHECK(mmb_copy_async(d_up, h_up, up, &r[0]));
    CHECK(mmb_copy_async(h_down, d_down, down, &r[1]));
    CHECK(mmb_wait_all(2, r, NULL));
    t = now() - t0;
    if (t < best_both) best_both = t;
  }
  printf("   64 MiB up and 64 MiB down: on two streams %.2f ms (%.1f GB/s), one after the other "
         "with mmb_copy %.2f ms (%.1f GB/s): %.2fx the sequential time (best of 10)\n",
         best_both * 1e3, 2 * n / best_both / 1e9, best_seq * 1e3, 2 * n / best_seq / 1e9,
         best_both / best_seq);
  mmbAllocation *all[] = {h_up, h_down, d_up, d_down};
  for (int i = 0; i < 4; i++) CHECK(mmb_free(all[i]));
  CHECK(mmb_interface_destroy(pinned));
  CHECK(mmb_interface_destroy(dev));
  CHECK(mmb_queue_destroy(NULL, &down));
  CHECK(mmb_queue_destroy(NULL, &up));
}

int main(int argc, char **argv) {
  int trips = argc > 1 ? atoi(argv[1]) : 20000;
  if (trips < 11) trips = 11;
  CHECK(mmb_init(NULL));
  mmbQueue *q;
  CHECK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  double *v = malloc(trips * sizeof *v), *h = malloc(trips * sizeof *h);
  pthread_t th;
  pthread_create(&th, NULL, spin_worker, NULL);
  enum { BLOCKS = 10 };   /* alternating blocks; each side's worker idle during the other's */
  int per = trips / BLOCKS;
  for (int b = 0; b < BLOCKS; b++) {
    round_trips(q, per, v + b * per);
    usleep(2000);   /* mmb's worker stops spinning and sleeps */
    spin_block(true);
    for (int i = 0; i < per; i++) h[b * per + i] = spin_trip();
    spin_block(false);
    usleep(2000);
  }
  pthread_mutex_lock(&lock);
  quit = 1;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&lock);
  pthread_join(th, NULL);
  int n = per * BLOCKS;
  double rt = median_of(v, n), rt99 = p99_of(v, n), hs = median_of(h, n), hs99 = p99_of(h, n);
  printf("1. empty request round trip, %d trips each in %d alternating blocks: p50 (p99)\n", n, BLOCKS);
  printf("   mmb thread queue %.2f us (%.2f), spinning two-thread handoff %.2f us (%.2f): "
         "p50 ratio %.2fx (target: <= 2x), p99 %.2f us (target: <= 10 us)\n",
         rt * 1e6, rt99 * 1e6, hs * 1e6, hs99 * 1e6, rt / hs, rt99 * 1e6);

  mmbMemSpace *dram;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface;
  CHECK(mmb_request_interface(dram, NULL, &iface));
  mmbAllocation *src, *dst;
  CHECK(mmb_allocate(1000 * 256, iface, &src));
  CHECK(mmb_allocate(1000 * 256, iface, &dst));
  enum { ROUNDS = 21 };
  double sync[ROUNDS], async[ROUNDS];
  for (int rep = 0; rep < ROUNDS; rep++) {
    double t0 = now();
    for (size_t i = 0; i < 1000; i++) CHECK(mmb_copy_1d(dst, i * 256, src, i * 256, 256));
    sync[rep] = now() - t0;
    mmbRequest r = {0};
    t0 = now();
    for (size_t i = 0; i < 999; i++) CHECK(mmb_copy_1d_async(dst, i * 256, src, i * 256, 256, q, NULL));
    CHECK(mmb_copy_1d_async(dst, 999 * 256, src, 999 * 256, 256, q, &r));
    CHECK(mmb_wait(&r));
    async[rep] = now() - t0;
  }
  double s50 = median(sync, ROUNDS), a50 = median(async, ROUNDS);
  printf("2. 1000 async copies of 256 B then a wait: %.1f us (worst %.1f); the same copies "
         "synchronously: %.1f us (worst %.1f): %.2fx the synchronous time (%d rounds)\n",
         a50 * 1e6, async[ROUNDS - 1] * 1e6, s50 * 1e6, sync[ROUNDS - 1] * 1e6, a50 / s50, ROUNDS);
  CHECK(mmb_free(src));
  CHECK(mmb_free(dst));
  CHECK(mmb_interface_destroy(iface));
  CHECK(mmb_queue_destroy(NULL, &q));
  printf("3. prefetching iterator: 512 MiB of doubles in 8 MiB tiles through a 40 MiB space, "
         "2 tiles ahead, 5 rounds, ms: median (worst)\n");
  for (int work = 0; work <= 8; work += 4) {
    stream_result r = run_stream(512, 8, 2, work, 5);
    double bound = r.copies > r.compute ? r.copies : r.compute;
    printf("   kernel work %d: copies %.1f (%.1f), compute on warm tiles %.1f (%.1f), streamed "
           "%.1f (%.1f) = %.2fx max(copies, compute) (target: <= 1.15x)%s\n", work,
           r.copies * 1e3, r.copies_worst * 1e3, r.compute * 1e3, r.compute_worst * 1e3,
           r.streamed * 1e3, r.streamed_worst * 1e3, r.streamed / bound,
           fabs(r.sum - r.reference) <= 1e-9 * fabs(r.reference) &&
                   fabs(r.warm_sum - r.reference) <= 1e-9 * fabs(r.reference)
               ? ""
               : "  WRONG SUM");
  }
  stream_section(trips, v);
  free(v);
  CHECK(mmb_finalize());
  return 0;
}
