/* The stream stress driver, run under ThreadSanitizer by `make test
   SANITIZE=thread` (and plainly by `make test`): threads push host -> device
   -> host chains through fake streams (test/fake_stream.h, the execution
   path of the CUDA-stream backend) of their own and a shared one, with a
   shared thread queue waiting on stream requests and streams waiting on
   thread requests, while other threads poll the same requests; device
   blocks are freed with free_async behind the streams. Checks every copied
   byte. */
#include "../fake_stream.h"

#include <stdio.h>

enum { THREADS = 3, ROUNDS = 200, BYTES = 2048 };

static mmbQueue *shared_stream, *shared_thread;
static mmbMemInterface *host, *dev;

typedef struct worker {
  int id, failed;
} worker;

static void *run(void *p) {
  worker *w = p;
  mmbQueue *own;
  if (fake_queue_create(&own) != MMB_OK) {
    w->failed = 1;
    return NULL;
  }
  mmbAllocation *src, *back, *last;
  w->failed |= mmb_allocate(BYTES, host, &src) != MMB_OK;
  w->failed |= mmb_allocate(BYTES, host, &back) != MMB_OK;
  w->failed |= mmb_allocate(BYTES, host, &last) != MMB_OK;
  if (w->failed) return NULL;
  unsigned char *s = mmb_allocation_ptr(src), *l = mmb_allocation_ptr(last);
  for (int r = 0; r < ROUNDS && !w->failed; r++) {
    unsigned char tag = (unsigned char)(w->id * 37 + r);
    memset(s, tag, BYTES);
    mmbAllocation *d;
    if (mmb_allocate(BYTES, dev, &d) != MMB_OK) {
      w->failed = 1;
      break;
    }
    mmbRequest up = {0}, down = {0}, out = {0};
    /* src -> d on the own stream; d -> back on the shared stream, after an
       event wait; back -> last on the shared thread queue, after a host wait */
    w->failed |= mmb_copy_async(d, src, own, &up) != MMB_OK;
    w->failed |= mmb_queue_wait_request(shared_stream, &up) != MMB_OK;
    w->failed |= mmb_copy_async(back, d, shared_stream, &down) != MMB_OK;
    w->failed |= mmb_free_async(d, shared_stream) != MMB_OK;
    w->failed |= mmb_queue_wait_request(shared_thread, &down) != MMB_OK;
    w->failed |= mmb_copy_async(last, back, shared_thread, &out) != MMB_OK;
    bool done = false;
    while (!done) w->failed |= mmb_request_is_complete(&out, &done) != MMB_OK;
    mmbRequest all[] = {up, down, out};
    w->failed |= mmb_wait_all(3, all, NULL) != MMB_OK;
    for (int i = 0; i < BYTES; i++) w->failed |= l[i] != tag;
  }
  w->failed |= mmb_queue_destroy(NULL, &own) != MMB_OK;
  w->failed |= mmb_free(src) != MMB_OK || mmb_free(back) != MMB_OK || mmb_free(last) != MMB_OK;
  return NULL;
}

int main(void) {
  if (mmb_init(&(mmbOptions){.log_level = MMB_LOG_ERROR}) != MMB_OK) return 1;
  mmbMemSpace *dram;
  if (mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram) != MMB_OK ||
      mmb_request_interface(dram, &(mmbMemInterfaceConfig){.flags = MMB_INTERFACE_THREAD_SAFE,
                                                             .strategy = MMB_STRATEGY_POOL},
                            &host) != MMB_OK ||
      !(dev = fake_device_interface(MMB_INTERFACE_THREAD_SAFE)) ||
      fake_queue_create(&shared_stream) != MMB_OK ||
      mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &shared_thread) != MMB_OK)
    return 1;
  static worker w[THREADS];
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){.id = i};
    pthread_create(&t[i], NULL, run, &w[i]);
  }
  int failed = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    failed |= w[i].failed;
  }
  failed |= mmb_queue_destroy(NULL, &shared_thread) != MMB_OK;
  failed |= mmb_queue_destroy(NULL, &shared_stream) != MMB_OK;
  failed |= mmb_interface_destroy(dev) != MMB_OK;
  mmbStats st;
  failed |= mmb_interface_get_stats(host, &st) != MMB_OK || st.used_current != 0;
  failed |= mmb_finalize() != MMB_OK;
  printf("stress-streams: %d threads x %d host->device->host chains through fake streams: %s\n",
         THREADS, ROUNDS, failed ? "FAILED" : "ok");
  return failed;
}
