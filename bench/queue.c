/* bench/queue: the thread backend against baselines measured in the same run.
   1. Empty request round trip (submit a no-op with a request, wait on it):
      median over many trips, against a plain pthread condition-variable
      handoff to a worker and back. Target: median < 5 us.
   2. 1000 small (256 B) async copies then one wait, against the same copies
      done synchronously.
   3. The prefetching iterator's overlap: streaming an array through a
      limited space while computing on it (examples/stream_sum's own code),
      against max(the copies alone, the compute alone). Target: <= 1.15x.
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
#include <time.h>

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

/* The baseline: hand a token to a worker through a condition variable and
   wait for it to come back the same way. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t to_worker = PTHREAD_COND_INITIALIZER, to_main = PTHREAD_COND_INITIALIZER;
static int token, quit;

static void *cv_worker(void *arg) {
  (void)arg;
  pthread_mutex_lock(&lock);
  for (;;) {
    while (token != 1 && !quit) pthread_cond_wait(&to_worker, &lock);
    if (quit) break;
    token = 2;
    pthread_cond_signal(&to_main);
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

static double cv_trip(void) {
  double t0 = now();
  pthread_mutex_lock(&lock);
  token = 1;
  pthread_cond_signal(&to_worker);
  while (token != 2) pthread_cond_wait(&to_main, &lock);
  token = 0;
  pthread_mutex_unlock(&lock);
  return now() - t0;
}

static void nothing(void *arg) { (void)arg; }

/* Median time to submit a no-op with a request and wait on it. */
static double round_trip(mmbQueue *q, int trips, double *v) {
  for (int i = 0; i < trips; i++) {
    mmbRequest r = {0};
    double t0 = now();
    CHECK(mmb_queue_submit(q, nothing, NULL, &r));
    CHECK(mmb_wait(&r));
    v[i] = now() - t0;
  }
  return median(v, trips);
}

static void stream_section(int trips, double *v) {
  mmbQueue *up, *down;
  if (mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_CUDA_STREAM}, &up) != MMB_OK) {
    printf("4. CUDA-stream backend: no CUDA device here, skipped\n");
    return;
  }
  CHECK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_CUDA_STREAM}, &down));
  printf("4. CUDA-stream backend\n   empty request round trip (host function + event), median "
         "of %d: %.2f us\n", trips, round_trip(up, trips, v) * 1e6);
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
  double *v = malloc(trips * sizeof *v);
  pthread_t th;
  pthread_create(&th, NULL, cv_worker, NULL);
  for (int i = 0; i < trips; i++) v[i] = cv_trip();
  double cv = median(v, trips);
  pthread_mutex_lock(&lock);
  quit = 1;
  pthread_cond_signal(&to_worker);
  pthread_mutex_unlock(&lock);
  pthread_join(th, NULL);
  double rt = round_trip(q, trips, v);
  printf("1. empty request round trip, median of %d\n", trips);
  printf("   mmb thread queue %.2f us, pthread cond-var handoff %.2f us, ratio %.2fx (target: < 5 us)\n",
         rt * 1e6, cv * 1e6, rt / cv);

  mmbMemSpace *dram;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface;
  CHECK(mmb_request_interface(dram, NULL, &iface));
  mmbAllocation *src, *dst;
  CHECK(mmb_allocate(1000 * 256, iface, &src));
  CHECK(mmb_allocate(1000 * 256, iface, &dst));
  double best_sync = 1e30, best_async = 1e30;
  for (int rep = 0; rep < 20; rep++) {
    double t0 = now();
    for (size_t i = 0; i < 1000; i++) CHECK(mmb_copy_1d(dst, i * 256, src, i * 256, 256));
    double t = now() - t0;
    if (t < best_sync) best_sync = t;
    mmbRequest r = {0};
    t0 = now();
    for (size_t i = 0; i < 999; i++) CHECK(mmb_copy_1d_async(dst, i * 256, src, i * 256, 256, q, NULL));
    CHECK(mmb_copy_1d_async(dst, 999 * 256, src, 999 * 256, 256, q, &r));
    CHECK(mmb_wait(&r));
    t = now() - t0;
    if (t < best_async) best_async = t;
  }
  printf("2. 1000 async copies of 256 B then a wait: %.1f us; the same copies synchronously: %.1f us "
         "(%.2fx the synchronous time; best of 20)\n", best_async * 1e6, best_sync * 1e6,
         best_async / best_sync);
  CHECK(mmb_free(src));
  CHECK(mmb_free(dst));
  CHECK(mmb_interface_destroy(iface));
  CHECK(mmb_queue_destroy(NULL, &q));
  printf("3. prefetching iterator: 512 MiB of doubles in 8 MiB tiles through a 40 MiB space, "
         "2 tiles ahead (best of 3)\n");
  for (int work = 0; work <= 8; work += 4) {
    stream_result r = run_stream(512, 8, 2, work, 3);
    double bound = r.copies > r.compute ? r.copies : r.compute;
    printf("   kernel work %d: copies %.1f ms, compute %.1f ms, streamed %.1f ms = %.2fx "
           "max(copies, compute) (target: <= 1.15x)%s\n", work, r.copies * 1e3,
           r.compute * 1e3, r.streamed * 1e3, r.streamed / bound,
           r.sum == r.reference || (r.sum - r.reference) * (r.sum - r.reference) <
                                       1e-18 * r.reference * r.reference ? "" : "  WRONG SUM");
  }
  stream_section(trips, v);
  free(v);
  CHECK(mmb_finalize());
  return 0;
}
