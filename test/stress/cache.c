/* The tile cache stress driver (run plainly by `make test` and under
   ThreadSanitizer by `make test SANITIZE=thread`). Threads share one fast
   space whose cache holds a few tiles. Each thread adds 1 to random tiles
   of an array of its own (acquired MMB_READ_WRITE, sometimes on a queue),
   reads random tiles of an array all threads share and checks them, and
   now and then advises, flushes or evicts its array; every thread keeps
   the count of its adds per tile. At the end every array is flushed and
   its home must hold exactly those counts, and the shared one its first
   values: a lost write-back, a stale copy or a torn copy shows up there.
   No acquire may fail: the pinned tiles never exceed the budget. Fixed
   seeds. */
#include <mmb/mmb.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { THREADS = 3, ROUNDS = 600, N = 64, T = 16, TILES = (N / T) * (N / T) };
#define TILE_BYTES (T * T * sizeof(double))

static mmbMemSpace *fast;
static mmbArray *shared;

typedef struct worker {
  mmbMemInterface *home;
  mmbArray *own;
  unsigned seed;
  unsigned adds[TILES];
  int id, failed;
  char why[160];
} worker;

static unsigned next(unsigned *s) {   /* xorshift32 */
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static mmbArrayTile *tile_of(mmbArray *a, unsigned i) {
  mmbArrayTile *t = NULL;
  if (mmb_tile_at(a, &(mmbIndex){2, {i / (N / T), i % (N / T)}}, &t) != MMB_OK) return NULL;
  return t;
}

static mmbArray *make_array(mmbMemInterface *home, double base) {
  mmbLayout *l;
  mmbArray *a = NULL;
  if (mmb_layout_create_regular_nd(sizeof(double), 2, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &l) !=
      MMB_OK)
    return NULL;
  if (mmb_array_create(&(mmbDimensions){2, {N, N}}, l, home, MMB_READ_WRITE, &a) != MMB_OK ||
      mmb_array_tile(a, &(mmbDimensions){2, {T, T}}) != MMB_OK)
    a = NULL;
  if (mmb_layout_destroy(l) != MMB_OK) a = NULL;
  if (a)
    for (size_t i = 0; i < N * N; i++) ((double *)mmb_array_ptr(a))[i] = base + (double)i;
  return a;
}

#define FAIL(w, ...)                                          \
  do {                                                        \
    (w)->failed = 1;                                          \
    snprintf((w)->why, sizeof (w)->why, __VA_ARGS__);         \
    return;                                                   \
  } while (0)

static void add_one(worker *w, mmbQueue *q, unsigned i) {
  mmbArrayTile *t = tile_of(w->own, i), *l;
  mmbRequest req = {0};
  mmbError e = q ? mmb_tile_acquire_async(t, fast, MMB_READ_WRITE, q, &req, &l)
                 : mmb_tile_acquire(t, fast, MMB_READ_WRITE, &l);
  if (e == MMB_OK && q) e = mmb_wait(&req);
  if (e != MMB_OK) FAIL(w, "acquire of own tile %u: %s", i, mmb_error_string(e));
  for (size_t r = l->lower[0]; r < l->upper[0]; r++)
    for (size_t c = l->lower[1]; c < l->upper[1]; c++) MMB_TILE_AT_2D(l, double, r, c) += 1.0;
  w->adds[i]++;
  if ((e = mmb_tile_release(l)) != MMB_OK) FAIL(w, "release: %s", mmb_error_string(e));
}

static void read_shared(worker *w, unsigned i) {
  mmbArrayTile *l;
  mmbError e = mmb_tile_acquire(tile_of(shared, i), fast, MMB_READ, &l);
  if (e != MMB_OK) FAIL(w, "acquire of shared tile %u: %s", i, mmb_error_string(e));
  for (size_t r = l->lower[0]; r < l->upper[0]; r++)
    for (size_t c = l->lower[1]; c < l->upper[1]; c++)
      if (MMB_TILE_AT_2D(l, double, r, c) != 1e6 + (double)(r * N + c)) {
        e = mmb_tile_release(l);
        FAIL(w, "shared tile %u: a wrong value at (%zu, %zu) (release: %s)", i, r, c,
             mmb_error_string(e));
      }
  if ((e = mmb_tile_release(l)) != MMB_OK) FAIL(w, "release: %s", mmb_error_string(e));
}

static void round_of(worker *w, mmbQueue *q) {
  unsigned op = next(&w->seed) % 16, i = next(&w->seed) % TILES;
  mmbError e = MMB_OK;
  if (op < 7) add_one(w, op == 0 ? q : NULL, i);
  else if (op < 12) read_shared(w, i);
  else if (op == 12) e = mmb_tile_advise(tile_of(w->own, i), fast, MMB_ADVICE_WILLNEED);
  else if (op == 13) e = mmb_tile_advise(tile_of(shared, i), fast, MMB_ADVICE_WONTNEED);
  else if (op == 14) e = mmb_array_flush(w->own);
  else e = mmb_array_evict(w->own, fast);
  if (e != MMB_OK && !w->failed) FAIL(w, "op %u: %s", op, mmb_error_string(e));
}

static void *run(void *p) {
  worker *w = p;
  mmbQueue *q;
  if (mmb_queue_create(NULL, &q) != MMB_OK) {
    w->failed = 1;
    return NULL;
  }
  for (int r = 0; r < ROUNDS && !w->failed; r++) round_of(w, q);
  if (mmb_queue_destroy(NULL, &q) != MMB_OK) w->failed = 1;
  return NULL;
}

static int check_home(worker *w) {
  if (mmb_array_flush(w->own) != MMB_OK) return 1;
  const double *p = mmb_array_ptr(w->own);
  for (size_t r = 0; r < N; r++)
    for (size_t c = 0; c < N; c++) {
      unsigned i = (unsigned)((r / T) * (N / T) + c / T);
      if (p[r * N + c] != (double)w->id * 1e4 + (double)(r * N + c) + w->adds[i]) {
        fprintf(stderr, "stress-cache: thread %d, (%zu, %zu): %g, expected %g\n", w->id, r, c,
                p[r * N + c], (double)w->id * 1e4 + (double)(r * N + c) + w->adds[i]);
        return 1;
      }
    }
  return 0;
}

int main(void) {
  if (mmb_init(&(mmbOptions){.log_level = MMB_LOG_ERROR}) != MMB_OK) return 1;
  mmbMemSpace *dram;
  mmbMemInterface *home;
  if (mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram) != MMB_OK ||
      mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 4 << 20,
                                                                  .name = "stress fast"}, &fast) != MMB_OK ||
      mmb_request_interface(dram, &(mmbMemInterfaceConfig){.flags = MMB_INTERFACE_THREAD_SAFE},
                            &home) != MMB_OK)
    return 1;
  /* room for 6 tiles: 3 threads pin at most one each */
  if (mmb_space_set_cache(fast, &(mmbCacheConfig){.budget_bytes = 6 * TILE_BYTES,
                                                  .clean_share = 0.5}) != MMB_OK)
    return 1;
  if (!(shared = make_array(home, 1e6))) return 1;
  static worker w[THREADS];
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){.home = home, .id = i, .seed = 2463534242u + (unsigned)i};
    if (!(w[i].own = make_array(home, (double)i * 1e4))) return 1;
  }
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, run, &w[i]);
  int failed = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    if (w[i].failed) fprintf(stderr, "stress-cache: thread %d: %s\n", i, w[i].why);
    failed |= w[i].failed;
  }
  mmbCacheStats st = {0};
  failed |= mmb_space_get_cache_stats(fast, &st) != MMB_OK;
  failed |= st.used_bytes > 6 * TILE_BYTES || st.pinned_bytes != 0;
  unsigned long long adds = 0;
  for (int i = 0; i < THREADS; i++) {
    failed |= check_home(&w[i]);
    for (int k = 0; k < TILES; k++) adds += w[i].adds[k];
    failed |= mmb_array_destroy(w[i].own) != MMB_OK;
  }
  failed |= mmb_array_destroy(shared) != MMB_OK;
  failed |= mmb_interface_destroy(home) != MMB_OK;
  failed |= mmb_space_release(fast) != MMB_OK || mmb_space_release(dram) != MMB_OK;
  failed |= mmb_finalize() != MMB_OK;
  printf("stress-cache: %d threads x %d rounds, %llu tile adds, %llu hits, %llu misses, "
         "%llu write-backs: %s\n", THREADS, ROUNDS, adds, (unsigned long long)st.hits,
         (unsigned long long)st.misses, (unsigned long long)st.writebacks,
         failed ? "FAILED" : "ok");
  return failed;
}
