/* Threads against MMB_INTERFACE_THREAD_SAFE interfaces (basic and pool) and
   one shared space, with a reference model per thread (fixed seeds): each
   thread also bumps through its own region on the shared pool, hands blocks
   to its neighbour to free, while another thread reads stats and a trace
   records everything; then, with the trace stopped (so the lock-free paths
   run), each thread works with bare blocks (mmb_ptr_allocate) on the pool and
   frees its neighbour's. Last, in a space of 8 MiB, one thread makes,
   fills and destroys thread-safe pools while another allocates past what
   their cached segments leave, so that its out-of-memory chain trims
   pools being destroyed. A plain program, not a Criterion test: Criterion
   cannot run under ThreadSanitizer, and this is what `make test
   SANITIZE=thread` runs. Exit 0 = every byte and every counter as expected. */
#include <mmb/mmb.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 4, SLOTS = 64, STEPS = 20000 };

enum { HANDOFF = 256 };

typedef struct worker {
  mmbMemInterface *shared, *pool, *own;
  uint64_t seed;
  int failed;
  mmbAllocation *handoff[HANDOFF];   /* allocated here, freed by the next worker */
  unsigned char *bare_handoff[HANDOFF];   /* the same, mmb_ptr_allocate's */
  struct worker *next_worker;
} worker;

static pthread_barrier_t handoff_ready;
static _Atomic int stop_reader;

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  return z ^ (z >> 27);
}

static void use_region(worker *w) {
  mmbRegion *r;
  if (mmb_region_create(w->pool, &(mmbRegionOptions){.block_size = 64 << 10}, &r) != MMB_OK) {
    w->failed = 1;
    return;
  }
  for (int round = 0; round < 20; round++) {
    unsigned char *p[64];
    for (int i = 0; i < 64; i++) {
      if (mmb_region_alloc(r, 200 + 40 * (size_t)i, 16, (void **)&p[i]) != MMB_OK) {
        w->failed = 1;
        return;
      }
      memset(p[i], i, 200);
    }
    for (int i = 0; i < 64; i++)
      if (p[i][0] != i || p[i][199] != i) w->failed = 1;
    if (mmb_region_reset(r) != MMB_OK) w->failed = 1;
  }
  if (mmb_region_destroy(r) != MMB_OK) w->failed = 1;
}

static void *read_stats(void *p) {
  mmbMemInterface **ifaces = p;
  mmbStats st;
  mmbMemSpace *dram;
  bool bad = mmb_interface_get_space(ifaces[0], &dram) != MMB_OK;
  while (!bad && !atomic_load(&stop_reader)) {
    bad |= mmb_interface_get_stats(ifaces[0], &st) != MMB_OK;
    bad |= mmb_interface_get_stats(ifaces[1], &st) != MMB_OK;
    bad |= mmb_space_get_stats(dram, &st) != MMB_OK;
  }
  if (bad) abort();   /* stats reads never fail on live handles */
  return NULL;
}

static void *run(void *p) {
  worker *w = p;
  mmbAllocation *slot[SLOTS] = {0};
  unsigned char tag[SLOTS];
  for (int k = 0; k < HANDOFF; k++) {
    if (mmb_allocate(16 + (size_t)k * 8, w->pool, &w->handoff[k]) != MMB_OK) w->failed = 1;
    else memset(mmb_allocation_ptr(w->handoff[k]), k, 16);
  }
  pthread_barrier_wait(&handoff_ready);
  for (int k = 0; k < HANDOFF; k++) {
    mmbAllocation *a = w->next_worker->handoff[k];
    if (!a) continue;
    if (*(unsigned char *)mmb_allocation_ptr(a) != (unsigned char)k) w->failed = 1;
    if (mmb_free(a) != MMB_OK) w->failed = 1;
  }
  use_region(w);
  for (int i = 0; i < STEPS && !w->failed; i++) {
    int k = (int)(next(&w->seed) % SLOTS);
    if (slot[k]) {
      unsigned char *b = mmb_allocation_ptr(slot[k]);
      size_t n = mmb_allocation_size(slot[k]);
      if (b[0] != tag[k] || b[n - 1] != tag[k]) w->failed = 1;
      if (mmb_free(slot[k]) != MMB_OK) w->failed = 1;
      slot[k] = NULL;
    } else {
      mmbMemInterface *iface = k % 3 == 0 ? w->shared : k % 3 == 1 ? w->pool : w->own;
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

/* Bare blocks on the thread-safe pool: a model of its own, blocks of every
   slab class and larger, and the neighbour's handoff freed here. */
static void *run_bare(void *p) {
  worker *w = p;
  unsigned char *slot[SLOTS] = {0};
  size_t len[SLOTS];
  for (int k = 0; k < HANDOFF; k++) {
    if (mmb_ptr_allocate(16 + (size_t)k * 24, w->pool, (void **)&w->bare_handoff[k]) != MMB_OK)
      w->failed = 1;
    else w->bare_handoff[k][0] = (unsigned char)k;
  }
  pthread_barrier_wait(&handoff_ready);
  for (int k = 0; k < HANDOFF; k++) {
    unsigned char *b = w->next_worker->bare_handoff[k];
    if (!b) continue;
    if (b[0] != (unsigned char)k || mmb_ptr_deallocate(b, w->pool) != MMB_OK) w->failed = 1;
  }
  for (int i = 0; i < STEPS && !w->failed; i++) {
    int k = (int)(next(&w->seed) % SLOTS);
    if (slot[k]) {
      if (slot[k][0] != (unsigned char)k || slot[k][len[k] - 1] != (unsigned char)k ||
          mmb_ptr_deallocate(slot[k], w->pool) != MMB_OK)
        w->failed = 1;
      slot[k] = NULL;
    } else {
      len[k] = 1 + next(&w->seed) % (i % 16 ? 2048 : 9000);
      if (mmb_ptr_allocate(len[k], w->pool, (void **)&slot[k]) != MMB_OK) {
        w->failed = 1;
        break;
      }
      memset(slot[k], k, len[k]);
    }
  }
  for (int k = 0; k < SLOTS; k++)
    if (slot[k] && mmb_ptr_deallocate(slot[k], w->pool) != MMB_OK) w->failed = 1;
  return NULL;
}

/* The out-of-memory chain trims other threads' thread-safe pools while
   they come and go. */
enum { POOL_ROUNDS = 300 };
static _Atomic int churning;

static void *churn_pools(void *p) {
  mmbMemSpace *space = p;
  mmbMemInterfaceConfig ts_pool = {.flags = MMB_INTERFACE_THREAD_SAFE, .strategy = MMB_STRATEGY_POOL};
  int failed = 0;
  for (int r = 0; r < POOL_ROUNDS && !failed; r++) {
    mmbMemInterface *pool;
    mmbAllocation *a;
    failed |= mmb_request_interface(space, &ts_pool, &pool) != MMB_OK;
    if (failed) break;
    if (mmb_allocate(3 << 20, pool, &a) == MMB_OK) failed |= mmb_free(a) != MMB_OK;   /* cached */
    failed |= mmb_interface_destroy(pool) != MMB_OK;
  }
  atomic_store(&churning, 0);
  return (void *)(intptr_t)failed;
}

static int trims_while_pools_come_and_go(void) {
  mmbMemSpace *space;
  mmbMemInterface *big;
  if (mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 8 << 20}, &space) !=
          MMB_OK ||
      mmb_request_interface(space, &(mmbMemInterfaceConfig){.flags = MMB_INTERFACE_THREAD_SAFE},
                            &big) != MMB_OK)
    return 1;
  atomic_store(&churning, 1);
  pthread_t churner;
  pthread_create(&churner, NULL, churn_pools, space);
  unsigned long served = 0;
  int failed = 0;
  while (atomic_load(&churning)) {
    mmbAllocation *a;
    mmbError e = mmb_allocate(6 << 20, big, &a);   /* past the limit beside a cached segment */
    if (e == MMB_OK) served++, failed |= mmb_free(a) != MMB_OK;
    else failed |= e != MMB_OUT_OF_MEMORY;
  }
  void *churn_failed;
  pthread_join(churner, &churn_failed);
  failed |= churn_failed != NULL || served == 0;
  failed |= mmb_interface_destroy(big) != MMB_OK || mmb_space_release(space) != MMB_OK;
  if (failed) fprintf(stderr, "stress-threads: the chain's trims: %lu served\n", served);
  return failed;
}

int main(void) {
  mmbOptions opts = {.log_level = MMB_LOG_ERROR};
  if (mmb_init(&opts) != MMB_OK) return 1;
  mmbMemSpace *dram;
  if (mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram) != MMB_OK) return 1;
  mmbMemInterface *shared, *pool;
  mmbMemInterfaceConfig ts = {.flags = MMB_INTERFACE_THREAD_SAFE};
  mmbMemInterfaceConfig ts_pool = {.flags = MMB_INTERFACE_THREAD_SAFE, .strategy = MMB_STRATEGY_POOL};
  if (mmb_request_interface(dram, &ts, &shared) != MMB_OK) return 1;
  if (mmb_request_interface(dram, &ts_pool, &pool) != MMB_OK) return 1;
  if (mmb_trace_set_capacity(4096) != MMB_OK || mmb_trace_start() != MMB_OK) return 1;
  static worker w[THREADS];
  pthread_t t[THREADS], reader;
  mmbMemInterface *watched[2] = {shared, pool};
  pthread_barrier_init(&handoff_ready, NULL, THREADS);
  pthread_create(&reader, NULL, read_stats, watched);
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){.shared = shared, .pool = pool, .seed = 1000 + (uint64_t)i,
                    .next_worker = &w[(i + 1) % THREADS]};
    if (mmb_request_interface(dram, NULL, &w[i].own) != MMB_OK) return 1;
  }
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, run, &w[i]);
  int failed = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    failed |= w[i].failed;
    failed |= mmb_interface_destroy(w[i].own) != MMB_OK;
  }
  atomic_store(&stop_reader, 1);
  pthread_join(reader, NULL);
  failed |= mmb_trace_stop() != MMB_OK || mmb_trace_dump("/dev/null") != MMB_OK;
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, run_bare, &w[i]);
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    failed |= w[i].failed;
  }
  mmbStats st;
  failed |= mmb_interface_get_stats(shared, &st) != MMB_OK;
  failed |= st.n_allocs != st.n_frees || st.used_current || st.reserved_current;
  failed |= mmb_interface_get_stats(pool, &st) != MMB_OK;
  failed |= st.n_allocs != st.n_frees || st.used_current != 0;
  failed |= mmb_interface_trim(pool, 0) != MMB_OK;
  failed |= mmb_interface_get_stats(pool, &st) != MMB_OK;
  failed |= st.reserved_current != 0;
  failed |= mmb_interface_destroy(pool) != MMB_OK;
  failed |= mmb_space_get_stats(dram, &st) != MMB_OK;
  failed |= st.used_current != 0 || st.reserved_current != 0 || st.n_allocs != st.n_frees;
  failed |= mmb_interface_destroy(shared) != MMB_OK;
  failed |= trims_while_pools_come_and_go();
  failed |= mmb_finalize() != MMB_OK;
  printf("stress-threads: %d threads x %d steps: %s\n", THREADS, STEPS, failed ? "FAILED" : "ok");
  return failed;
}
