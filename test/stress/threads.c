/* Threads against one MMB_INTERFACE_THREAD_SAFE interface and one shared
   space, with a reference model per thread (fixed seeds). A plain program,
   not a Criterion test: Criterion cannot run under ThreadSanitizer, and this
   is what `make test SANITIZE=thread` runs. Exit 0 = every byte and every
   counter as expected. */
#include <mmb/mmb.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { THREADS = 4, SLOTS = 64, STEPS = 20000 };

typedef struct worker {
  mmbMemInterface *shared, *own;
  uint64_t seed;
  int failed;
} worker;

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  return z ^ (z >> 27);
}

static void *run(void *p) {
  worker *w = p;
  mmbAllocation *slot[SLOTS] = {0};
  unsigned char tag[SLOTS];
  for (int i = 0; i < STEPS && !w->failed; i++) {
    int k = (int)(next(&w->seed) % SLOTS);
    if (slot[k]) {
      unsigned char *b = mmb_allocation_ptr(slot[k]);
      size_t n = mmb_allocation_size(slot[k]);
      if (b[0] != tag[k] || b[n - 1] != tag[k]) w->failed = 1;
      if (mmb_free(slot[k]) != MMB_OK) w->failed = 1;
      slot[k] = NULL;
    } else {
      mmbMemInterface *iface = k % 2 ? w->shared : w->own;
      size_t n = 1 + next(&w->seed) % 5000;
      if (mmb_allocate(n, iface, &slot[k]) != MMB_OK) {
        w->failed = 1;
        break;
      }
      tag[k] = (unsigned char)next(&w->seed);
      memset(mmb_allocation_ptr(slot[k]), tag[k], n);
    }
  }
  for (int k = 0; k < SLOTS; k++)
    if (slot[k] && mmb_free(slot[k]) != MMB_OK) w->failed = 1;
  return NULL;
}

int main(void) {
  mmbOptions opts = {.log_level = MMB_LOG_ERROR};
  if (mmb_init(&opts) != MMB_OK) return 1;
  mmbMemSpace *dram;
  mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram);
  mmbMemInterface *shared;
  mmbMemInterfaceConfig ts = {.flags = MMB_INTERFACE_THREAD_SAFE};
  if (mmb_request_interface(dram, &ts, &shared) != MMB_OK) return 1;
  worker w[THREADS];
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){.shared = shared, .seed = 1000 + (uint64_t)i};
    if (mmb_request_interface(dram, NULL, &w[i].own) != MMB_OK) return 1;
    pthread_create(&t[i], NULL, run, &w[i]);
  }
  int failed = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    failed |= w[i].failed;
    failed |= mmb_interface_destroy(w[i].own) != MMB_OK;
  }
  mmbStats st;
  mmb_interface_get_stats(shared, &st);
  failed |= st.n_allocs != st.n_frees || st.used_current || st.reserved_current;
  mmb_space_get_stats(dram, &st);
  failed |= st.used_current != 0 || st.reserved_current != 0 || st.n_allocs != st.n_frees;
  failed |= mmb_interface_destroy(shared) != MMB_OK;
  failed |= mmb_finalize() != MMB_OK;
  printf("stress-threads: %d threads x %d steps: %s\n", THREADS, STEPS, failed ? "FAILED" : "ok");
  return failed;
}
