/* bench/alloc: mmb's strategies against glibc malloc and mimalloc, measured
   in the same run, best of several repetitions. Each line prints ns per
   operation and the ratio against its baseline.

   1. region allocation, mixed 64-320 B, against malloc+free of the same
      sizes (target: at least 15x faster);
   2. pool allocate+free pairs on the same sizes (a sliding window of 64 live
      blocks) against mimalloc on one thread (target: no slower), and with
      MMB_INTERFACE_THREAD_SAFE on two threads against mimalloc on two threads
      (target: within 2x), with thread caches and with the lock alone;
   3. a random workload in the style of RMM's random_allocations benchmark
      (1 B - 4 MiB, log-uniform, random free order, up to 512 MiB live):
      provider trips per 1000 operations once warm, and time against malloc.

   Usage: bench-alloc [scale]   (scale 1 = default; 0.1 for a quick look) */
#include <mmb/mmb.h>

#include <math.h>
#include <mimalloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    mmbError e_ = (call);                                                             \
    if (e_ != MMB_OK) {                                                               \
      fprintf(stderr, "bench-alloc: %s: %s\n", #call, mmb_error_string(e_));          \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

enum { SIZES = 4096, WINDOW = 64, REPS = 7 };

static double scale = 1.0;
static size_t sizes[SIZES];   /* 64..320 B, fixed seed */
static mmbMemSpace *dram;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static size_t ops(size_t base) {
  size_t n = (size_t)(base * scale);
  return n < SIZES ? SIZES : n - n % SIZES;
}

/* Best of REPS runs of fn, in ns per operation. */
static double best_ns(double (*fn)(void *), void *arg) {
  double best = 1e30;
  for (int r = 0; r < REPS; r++) {
    double t = fn(arg);
    if (t < best) best = t;
  }
  return best;
}

static void *volatile sink;

/* ---- 1. regions ----------------------------------------------------------- */

static double run_malloc_free(void *arg) {
  (void)arg;
  size_t n = ops(4000000);
  static void *p[SIZES];
  double t = now();
  for (size_t done = 0; done < n; done += SIZES) {
    for (int i = 0; i < SIZES; i++) p[i] = malloc(sizes[i]);
    sink = p[SIZES - 1];
    for (int i = 0; i < SIZES; i++) free(p[i]);
  }
  return (now() - t) * 1e9 / n;
}

static double run_region(void *arg) {
  mmbRegion *r = arg;
  size_t n = ops(4000000);
  void *p = NULL;
  double t = now();
  for (size_t done = 0; done < n; done += SIZES) {
    for (int i = 0; i < SIZES; i++) {
      if (mmb_region_alloc(r, sizes[i], 16, &p) != MMB_OK) abort();
    }
    sink = p;
    if (mmb_region_reset(r) != MMB_OK) abort();
  }
  return (now() - t) * 1e9 / n;
}

/* ---- 2. pool pairs -------------------------------------------------------- */

typedef struct pair_arg {
  mmbMemInterface *iface;   /* NULL: mimalloc */
  size_t n;
  double ns;
} pair_arg;

static void *pairs_thread(void *v) {
  pair_arg *a = v;
  double t = now();
  if (a->iface) {
    mmbAllocation *slot[WINDOW] = {0};
    for (size_t i = 0; i < a->n; i++) {
      size_t k = i % WINDOW;
      if (slot[k] && mmb_free(slot[k]) != MMB_OK) abort();
      if (mmb_allocate(sizes[i % SIZES], a->iface, &slot[k]) != MMB_OK) abort();
    }
    for (int k = 0; k < WINDOW; k++) CHECK(mmb_free(slot[k]));
  } else {
    void *slot[WINDOW] = {0};
    for (size_t i = 0; i < a->n; i++) {
      size_t k = i % WINDOW;
      mi_free(slot[k]);
      slot[k] = mi_malloc(sizes[i % SIZES]);
    }
    for (int k = 0; k < WINDOW; k++) mi_free(slot[k]);
    sink = slot[0];
  }
  a->ns = (now() - t) * 1e9 / a->n;
  return NULL;
}

typedef struct pairs_case {
  mmbMemInterface *iface;
  int threads;
} pairs_case;

static double run_pairs(void *v) {
  pairs_case *c = v;
  pair_arg a[2];
  pthread_t t[2];
  for (int i = 0; i < c->threads; i++) {
    a[i] = (pair_arg){.iface = c->iface, .n = ops(4000000)};
    pthread_create(&t[i], NULL, pairs_thread, &a[i]);
  }
  double worst = 0;
  for (int i = 0; i < c->threads; i++) {
    pthread_join(t[i], NULL);
    if (a[i].ns > worst) worst = a[i].ns;
  }
  return worst;
}

static mmbMemInterface *pool_interface(unsigned flags) {
  mmbMemInterface *iface;
  mmbMemInterfaceConfig cfg = {.strategy = MMB_STRATEGY_POOL, .flags = flags};
  CHECK(mmb_request_interface(dram, &cfg, &iface));
  return iface;
}

/* ---- 3. random workload --------------------------------------------------- */

#define RANDOM_SLOTS 4096
#define RANDOM_BUDGET ((size_t)512 << 20)

typedef struct random_case {
  mmbMemInterface *iface;   /* NULL: malloc */
  size_t n_ops;
  unsigned long long trips_steady;
  size_t steady_ops;
} random_case;

static size_t random_size(uint64_t *s) {   /* log-uniform over 1 B .. 4 MiB */
  double u = (double)(rng_next(s) >> 11) / 9007199254740992.0;
  return (size_t)exp(u * log(4.0 * 1048576.0)) + 1;
}

static double run_random(void *v) {
  random_case *c = v;
  static void *ptr[RANDOM_SLOTS];
  static mmbAllocation *alloc[RANDOM_SLOTS];
  static size_t len[RANDOM_SLOTS];
  size_t live = 0, live_bytes = 0;
  uint64_t s = 42;
  unsigned long long trips_at_warm = 0;
  mmbStats st;
  double t = now();
  for (size_t i = 0; i < c->n_ops; i++) {
    if (i == c->n_ops / 2 && c->iface) {   /* second half: steady state */
      CHECK(mmb_interface_get_stats(c->iface, &st));
      trips_at_warm = st.n_provider_allocs;
    }
    size_t k = rng_next(&s) % RANDOM_SLOTS;
    bool taken = c->iface ? alloc[k] != NULL : ptr[k] != NULL;
    if (taken) {   /* free a random live block */
      if (c->iface) {
        CHECK(mmb_free(alloc[k]));
        alloc[k] = NULL;
      } else {
        free(ptr[k]);
        ptr[k] = NULL;
      }
      live--;
      live_bytes -= len[k];
      continue;
    }
    size_t n = random_size(&s);
    if (live_bytes + n > RANDOM_BUDGET) continue;
    if (c->iface) {
      CHECK(mmb_allocate(n, c->iface, &alloc[k]));
      ((char *)mmb_allocation_ptr(alloc[k]))[0] = 1;
    } else {
      ptr[k] = malloc(n);
      ((char *)ptr[k])[0] = 1;
    }
    len[k] = n;
    live++;
    live_bytes += n;
  }
  double elapsed = now() - t;
  for (size_t k = 0; k < RANDOM_SLOTS; k++) {
    if (c->iface && alloc[k]) CHECK(mmb_free(alloc[k]));
    if (c->iface) alloc[k] = NULL;
    if (!c->iface && ptr[k]) free(ptr[k]), ptr[k] = NULL;
  }
  if (c->iface) {
    CHECK(mmb_interface_get_stats(c->iface, &st));
    c->trips_steady = st.n_provider_allocs - trips_at_warm;
    c->steady_ops = c->n_ops - c->n_ops / 2;
  }
  (void)live;
  return elapsed * 1e9 / c->n_ops;
}

int main(int argc, char **argv) {
  if (argc > 1) scale = atof(argv[1]);
  if (!(scale > 0)) scale = 1.0;
  uint64_t s = 7;
  for (int i = 0; i < SIZES; i++) sizes[i] = 64 + rng_next(&s) % 257;
  CHECK(mmb_init(NULL));
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));

  printf("bench-alloc: best of %d, ns per operation (lower is better)\n\n", REPS);
  printf("%-52s %9s %9s %8s %8s\n", "case", "mmb", "baseline", "ratio", "target");

  mmbMemInterface *basic;
  CHECK(mmb_request_interface(dram, NULL, &basic));
  mmbRegion *region;
  CHECK(mmb_region_create(basic, NULL, &region));
  double region_ns = best_ns(run_region, region), malloc_ns = best_ns(run_malloc_free, NULL);
  printf("%-52s %9.2f %9.2f %7.1fx %8s\n", "region alloc, 64-320 B (vs glibc malloc+free)",
         region_ns, malloc_ns, malloc_ns / region_ns, ">=15x");
  CHECK(mmb_region_destroy(region));

  mmbMemInterface *pool = pool_interface(0);
  pairs_case one_pool = {pool, 1}, one_mi = {NULL, 1};
  double pool_ns = best_ns(run_pairs, &one_pool), mi_ns = best_ns(run_pairs, &one_mi);
  printf("%-52s %9.2f %9.2f %7.2fx %8s\n", "pool alloc+free, 1 thread (vs mimalloc)", pool_ns,
         mi_ns, pool_ns / mi_ns, "<=1.0x");

  mmbMemInterface *shared = pool_interface(MMB_INTERFACE_THREAD_SAFE);
  pairs_case two_pool = {shared, 2}, two_mi = {NULL, 2};
  double ts_ns = best_ns(run_pairs, &two_pool), mi2_ns = best_ns(run_pairs, &two_mi);
  printf("%-52s %9.2f %9.2f %7.2fx %8s\n", "pool THREAD_SAFE, 2 threads, thread caches (vs mimalloc)",
         ts_ns, mi2_ns, ts_ns / mi2_ns, "<=2.0x");
  setenv("MMB_POOL_THREAD_CACHES", "0", 1);
  mmbMemInterface *locked = pool_interface(MMB_INTERFACE_THREAD_SAFE);
  unsetenv("MMB_POOL_THREAD_CACHES");
  pairs_case two_locked = {locked, 2};
  double lock_ns = best_ns(run_pairs, &two_locked);
  printf("%-52s %9.2f %9.2f %7.2fx %8s\n", "pool THREAD_SAFE, 2 threads, one lock (vs mimalloc)",
         lock_ns, mi2_ns, lock_ns / mi2_ns, "(design)");

  random_case rp = {.iface = pool, .n_ops = ops(400000)}, rm = {.n_ops = ops(400000)};
  random_case rb = {.iface = basic, .n_ops = ops(400000)};
  double rp_ns = best_ns(run_random, &rp), rm_ns = best_ns(run_random, &rm);
  double rb_ns = best_ns(run_random, &rb);
  printf("%-52s %9.1f %9.1f %7.2fx %8s\n", "random 1 B-4 MiB, pool (vs glibc malloc)", rp_ns, rm_ns,
         rp_ns / rm_ns, "");
  printf("%-52s %9.1f %9.1f %7.2fx %8s\n", "random 1 B-4 MiB, basic (vs glibc malloc)", rb_ns,
         rm_ns, rb_ns / rm_ns, "");
  printf("\nprovider trips per 1000 operations once warm (second half of the run):\n"
         "  pool %.3f   basic %.1f\n", 1000.0 * rp.trips_steady / rp.steady_ops,
         1000.0 * rb.trips_steady / rb.steady_ops);
  mmbStats st;
  CHECK(mmb_interface_get_stats(pool, &st));
  printf("  pool after everything: %llu allocations served by %llu provider trips, "
         "%.1f MiB reserved at peak\n", st.n_allocs, st.n_provider_allocs,
         st.reserved_high / 1048576.0);

  CHECK(mmb_interface_destroy(pool));
  CHECK(mmb_interface_destroy(shared));
  CHECK(mmb_interface_destroy(locked));
  CHECK(mmb_interface_destroy(basic));
  CHECK(mmb_finalize());
  return 0;
}
