/* The queue-aware reuse stress driver (run plainly by `make test` and under
   ThreadSanitizer by `make test SANITIZE=thread`). Threads share one pooled,
   thread-safe interface; each round a thread takes a block, scribbles on it
   at once (as any new owner would), and hands it to work on its queue that
   fills it with a tag, dawdles, and checks the tag is intact. The block is
   then given back with mmb_free_async, or recorded with
   mmb_allocation_record_queue and freed, or (a bare block of mmb_ptr_allocate)
   given back with mmb_ptr_deallocate_async, and region memory is handed back
   with mmb_region_reset_async. A block or region handed out again before the
   queue is done with it shows up as a broken tag. Then each thread streams
   an array of its own through one shared fast space with a prefetching
   iterator on its queue, adding 1 to every element per pass, and copies it
   asynchronously on a queue shared by all. Fixed seeds. */
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
  mmbMemSpace *fast;
  mmbQueue *shared;
  int id, failed;
} worker;

enum { SIDE = 64, TILE = 16, PASSES = 20 };

/* PASSES prefetched read-modify-write passes over an array of this thread,
   then an async copy on the shared queue; checks every element. */
static int stream_passes(worker *w, mmbQueue *q) {
  mmbLayout *l;
  mmbArray *a, *b;
  int bad = mmb_layout_create_regular_nd(sizeof(double), 2, MMB_ROWMAJOR, (mmbLayoutPadding){0},
                                         &l) != MMB_OK;
  if (bad) return 1;
  mmbDimensions d = {2, {SIDE, SIDE}};
  bad |= mmb_array_create(&d, l, w->iface, MMB_READ_WRITE, &a) != MMB_OK;
  bad |= mmb_array_create(&d, l, w->iface, MMB_READ_WRITE, &b) != MMB_OK;
  bad |= mmb_layout_destroy(l) != MMB_OK;
  if (bad) return 1;
  bad |= mmb_array_tile(a, &(mmbDimensions){2, {TILE, TILE}}) != MMB_OK;
  double *x = mmb_array_ptr(a);
  for (size_t i = 0; i < SIDE * SIDE; i++) x[i] = (double)i;
  mmbTileIteratorOptions o = {.queue = q, .space = w->fast, .depth = 2,
                              .access = MMB_READ_WRITE};
  for (int pass = 0; pass < PASSES && !bad; pass++) {
    mmbTileIterator *it;
    if (mmb_tile_iterator_create(a, &o, &it) != MMB_OK) return 1;
    for (mmbArrayTile *t; (t = mmb_tile_iterator_tile(it));) {
      for (size_t i = 0; i < t->dim[0]; i++)
        for (size_t j = 0; j < t->dim[1]; j++) ((double *)t->ptr)[i * t->stride[0] + j] += 1;
      bad |= mmb_tile_iterator_next(it) != MMB_OK;
    }
    bad |= mmb_tile_iterator_destroy(it) != MMB_OK;
  }
  mmbRequest r = {0};
  bad |= mmb_array_copy_async(b, a, w->shared, &r) != MMB_OK;
  bad |= mmb_wait(&r) != MMB_OK;
  const double *y = mmb_array_ptr(b);
  for (size_t i = 0; i < SIDE * SIDE && !bad; i++) bad |= y[i] != (double)i + PASSES;
  bad |= mmb_array_destroy(a) != MMB_OK;
  bad |= mmb_array_destroy(b) != MMB_OK;
  return bad;
}

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
    if (r % 3 == 2) {   /* a bare block */
      void *p;
      if (mmb_ptr_allocate(n, w->iface, &p) != MMB_OK) {
        w->failed = 1;
        break;
      }
      w->failed |= submit_use(q, p, n, tag, &seed);
      w->failed |= mmb_ptr_deallocate_async(p, w->iface, q) != MMB_OK;
    } else {
      mmbAllocation *a;
      if (mmb_allocate(n, w->iface, &a) != MMB_OK) {
        w->failed = 1;
        break;
      }
      w->failed |= submit_use(q, mmb_allocation_ptr(a), n, tag, &seed);
      if (r % 3 == 1) {
        w->failed |= mmb_free_async(a, q) != MMB_OK;
      } else {
        w->failed |= mmb_allocation_record_queue(a, q) != MMB_OK;
        w->failed |= mmb_free(a) != MMB_OK;
      }
    }
    /* double-buffered region memory */
    mmbRegion *reg = regions[r % 2];
    void *p;
    w->failed |= mmb_region_alloc(reg, n, 0, &p) != MMB_OK;
    if (!w->failed) w->failed |= submit_use(q, p, n, (unsigned char)~tag, &seed);
    w->failed |= mmb_region_reset_async(reg, q) != MMB_OK;
  }
  if (!w->failed) w->failed |= stream_passes(w, q);
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
  mmbMemSpace *fast;
  mmbQueue *shared;
  if (mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 1 << 20},
                        &fast) != MMB_OK ||
      mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &shared) != MMB_OK)
    return 1;
  pthread_t t[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){.iface = iface, .fast = fast, .shared = shared, .id = i};
    pthread_create(&t[i], NULL, run, &w[i]);
  }
  int failed = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    failed |= w[i].failed;
  }
  failed |= mmb_queue_destroy(NULL, &shared) != MMB_OK;
  failed |= mmb_space_release(fast) != MMB_OK;
  failed |= mmb_interface_destroy(iface) != MMB_OK;   /* waits for what is deferred */
  long expect = (long)THREADS * ROUNDS * 2;
  printf("stress-reuse: %ld uses checked, %ld broken tags, %d x %d prefetched passes, %s\n",
         atomic_load(&checked), atomic_load(&corrupt), THREADS, PASSES,
         failed ? "a call failed or an array came out wrong" : "every call succeeded");
  failed |= atomic_load(&checked) != expect || atomic_load(&corrupt) != 0;
  failed |= mmb_finalize() != MMB_OK;
  return failed;
}
