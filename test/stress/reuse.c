/* The queue-aware reuse stress driver (run plainly by `make test` and under
   ThreadSanitizer by `make test SANITIZE=thread`). Threads share one pooled,
   thread-safe interface; each round a thread takes a block, scribbles on it
   at once (as any new owner would), and hands it to work on its queue that
   fills it with a tag, dawdles, and checks the tag is intact. The block is
   then given back with mmb_free_async, or recorded with
   mmb_allocation_record_queue and freed, and region memory is handed back
   with mmb_region_reset_async. A block or region handed out again before the
   queue is done with it shows up as a broken tag. Fixed seeds. */
#include <mmb/mmb.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 3, ROUNDS = 400 };
static const size_t sizes[] = {256, 1024, 4096, 1000};

static _Atomic long corrupt, checked;

typedef struct use {
  unsigned char *p;
  size_t n;
  unsigned char tag;
  unsigned dawdle;
} use;

static void use_block(void *arg) {
  use *u = arg;
  memset(u->p, u->tag, u->n);
  for (unsigned i = 0; i < u->dawdle; i++)
    if (i % 64 == 0) sched_yield();
  for (size_t i = 0; i < u->n; i++)
    if (u->p[i] != u->tag) {
      atomic_fetch_add(&corrupt, 1);
      break;
    }
  atomic_fetch_add(&checked, 1);
  free(u);
}

static uint64_t next(uint64_t *s) {   /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

typedef struct worker {
  mmbMemInterface *iface;
  int id, failed;
} worker;

static int submit_use(mmbQueue *q, void *p, size_t n, unsigned char tag, uint64_t *seed) {
  memset(p, 0xEE, n);   /* what a new owner does first */
  use *u = malloc(sizeof *u);
  if (!u) return 1;
  *u = (use){.p = p, .n = n, .tag = tag, .dawdle = (unsigned)(next(seed) % 2000)};
  return mmb_queue_submit(q, use_block, u, NULL) != MMB_OK;
}

static void *run(void *arg) {
  worker *w = arg;
  uint64_t seed = 0x5eed0000u + (uint64_t)w->id;
  mmbQueue *q;
  mmbRegion *regions[2];
  if (mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q) != MMB_OK ||
      mmb_region_create(w->iface, &(mmbRegionOptions){.block_size = 16384}, &regions[0]) !=
          MMB_OK ||
      mmb_region_create(w->iface, &(mmbRegionOptions){.block_size = 16384}, &regions[1]) !=
          MMB_OK) {
    w->failed = 1;
    return NULL;
  }
  for (int r = 0; r < ROUNDS && !w->failed; r++) {
    unsigned char tag = (unsigned char)(w->id * 64 + r % 64 + 1);
    size_t n = sizes[next(&seed) % 4];
    mmbAllocation *a;
    if (mmb_allocate(n, w->iface, &a) != MMB_OK) {
      w->failed = 1;
      break;
    }
    w->failed |= submit_use(q, mmb_allocation_ptr(a), n, tag, &seed);
    if (r % 2) {
      w->failed |= mmb_free_async(a, q) != MMB_OK;
    } else {
      w->failed |= mmb_allocation_record_queue(a, q) != MMB_OK;
      w->failed |= mmb_free(a) != MMB_OK;
    }
    /* double-buffered region memory */
    mmbRegion *reg = regions[r % 2];
    void *p;
    w->failed |= mmb_region_alloc(reg, n, 0, &p) != MMB_OK;
    if (!w->failed) w->failed |= submit_use(q, p, n, (unsigned char)~tag, &seed);
    w->failed |= mmb_region_reset_async(reg, q) != MMB_OK;
  }
  w->failed |= mmb_queue_destroy(NULL, &q) != MMB_OK;
  w->failed |= mmb_region_destroy(regions[0]) != MMB_OK;
  w->failed |= mmb_region_destroy(regions[1]) != MMB_OK;
  return NULL;
}

int main(void) {
  if (mmb_init(NULL) != MMB_OK) return 1;
  mmbMemSpace *space;
  mmbMemInterface *iface;
  mmbMemInterfaceConfig cfg = {.strategy = MMB_STRATEGY_POOL,
                               .flags = MMB_INTERFACE_THREAD_SAFE};
  if (mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &space) != MMB_OK ||
      mmb_request_interface(space, &cfg, &iface) != MMB_OK)
    return 1;
  pthread_t t[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){.iface = iface, .id = i};
    pthread_create(&t[i], NULL, run, &w[i]);
  }
  int failed = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    failed |= w[i].failed;
  }
  failed |= mmb_interface_destroy(iface) != MMB_OK;   /* waits for what is deferred */
  long expect = (long)THREADS * ROUNDS * 2;
  printf("stress-reuse: %ld uses checked, %ld broken tags, %s\n", atomic_load(&checked),
         atomic_load(&corrupt), failed ? "a call failed" : "every call succeeded");
  failed |= atomic_load(&checked) != expect || atomic_load(&corrupt) != 0;
  failed |= mmb_finalize() != MMB_OK;
  return failed;
}
