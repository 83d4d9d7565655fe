/* bench/cache_threads: tile-cache misses from one and from two threads.
   Each thread walks the 64 tiles (256 x 256 doubles, 512 KiB) of an array
   of its own, acquiring each MMB_READ in a fast space whose cache holds
   four tiles per thread, so that every acquire misses and evicts: the
   cache's whole cost per miss (the lock, the bookkeeping, the copy into a
   pooled block). Baseline, timed in the same run, round by round in turn:
   the same threads copying the same tiles by hand, row by row with memcpy,
   into four buffers of their own in rotation (the data movement alone, no
   allocation). Prints the medians and worst rounds in GB/s of tiles
   copied, and mmb's ratio to the baseline; with two threads, a lock held
   while the data moves would halve it.
   Usage: bench-cache-threads [rounds] */
#include <mmb/mmb.h>

#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { N = 2048, T = 256, TILES = (N / T) * (N / T), WALKS = 40, KEEP = 4 };
#define TILE_BYTES ((size_t)T * T * sizeof(double))

static mmbMemSpace *fast;

typedef struct walker {
  mmbArray *a;
  double *home;                /* the array's data */
  double *buf[KEEP];           /* the baseline's targets */
  bool by_hand;
  double sum;                  /* read from each copy, so that none is skipped */
} walker;

static void *walk(void *arg) {
  walker *w = arg;
  for (int r = 0; r < WALKS; r++)
    for (size_t k = 0; k < TILES; k++) {
      size_t ti = k / (N / T), tj = k % (N / T);
      if (w->by_hand) {
        double *dst = w->buf[k % KEEP];
        const double *src = w->home + ti * T * N + tj * T;
        for (size_t i = 0; i < T; i++) memcpy(dst + i * T, src + i * N, T * sizeof(double));
        w->sum += dst[T * T - 1];
        continue;
      }
      mmbArrayTile *t, *l;
      CHECK(mmb_tile_at(w->a, &(mmbIndex){2, {ti, tj}}, &t));
      CHECK(mmb_tile_acquire(t, fast, MMB_READ, &l));
      w->sum += MMB_TILE_AT_2D(l, double, l->upper[0] - 1, l->upper[1] - 1);
      CHECK(mmb_tile_release(l));
    }
  return NULL;
}

/* One round: GB/s of tiles copied by `threads` walkers at once. */
static double round_of(walker *w, int threads, bool by_hand) {
  pthread_t th[2];
  double t0 = now();
  for (int k = 0; k < threads; k++) {
    w[k].by_hand = by_hand;
    pthread_create(&th[k], NULL, walk, &w[k]);
  }
  for (int k = 0; k < threads; k++) pthread_join(th[k], NULL);
  return (double)threads * WALKS * TILES * TILE_BYTES / (now() - t0) / 1e9;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 9;
  if (rounds < 1 || rounds > 1000) {
    fprintf(stderr, "usage: bench-cache-threads [rounds, 1 to 1000]\n");
    return 2;
  }
  CHECK(mmb_init(NULL));
  mmbMemSpace *dram;
  mmbMemInterface *iface;
  mmbLayout *l;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  CHECK(mmb_request_interface(dram, NULL, &iface));
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU,
                          &(mmbMemSpaceConfig){.size_limit = 1 << 30, .name = "fast"}, &fast));
  CHECK(mmb_layout_create_regular_nd(sizeof(double), 2, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &l));
  walker w[2] = {{0}};
  for (int k = 0; k < 2; k++) {
    CHECK(mmb_array_create(&(mmbDimensions){2, {N, N}}, l, iface, MMB_READ_WRITE, &w[k].a));
    w[k].home = mmb_array_ptr(w[k].a);
    for (size_t i = 0; i < (size_t)N * N; i++) w[k].home[i] = (double)i;
    CHECK(mmb_array_tile(w[k].a, &(mmbDimensions){2, {T, T}}));
    for (int b = 0; b < KEEP; b++)
      if (!(w[k].buf[b] = aligned_alloc(64, TILE_BYTES))) return 1;
  }
  CHECK(mmb_layout_destroy(l));
  printf("tile-cache misses: %d walks of %d tiles of %zu KiB per thread, a cache of %d tiles "
         "per thread; %d rounds, each mmb then by hand; GB/s of tiles copied\n",
         WALKS, TILES, TILE_BYTES >> 10, KEEP, rounds);
  printf("%-8s %22s %22s %12s\n", "threads", "mmb median (worst)", "by hand median (worst)",
         "mmb/by hand");
  for (int threads = 1; threads <= 2; threads++) {
    CHECK(mmb_space_set_cache(fast, &(mmbCacheConfig){.budget_bytes = threads * KEEP * TILE_BYTES,
                                                      .clean_share = 0.5}));
    (void)round_of(w, threads, false);   /* warm: the pool's blocks, the pages */
    (void)round_of(w, threads, true);
    double mmb[1000], hand[1000], ratio[1000];
    for (int r = 0; r < rounds; r++) {
      mmb[r] = round_of(w, threads, false);
      hand[r] = round_of(w, threads, true);
      ratio[r] = mmb[r] / hand[r];
    }
    qsort(mmb, rounds, sizeof *mmb, cmp_double);
    qsort(hand, rounds, sizeof *hand, cmp_double);
    qsort(ratio, rounds, sizeof *ratio, cmp_double);
    printf("%-8d %12.2f (%6.2f) %14.2f (%6.2f) %9.2fx (worst %.2fx)\n", threads,
           mmb[rounds / 2], mmb[0], hand[rounds / 2], hand[0], ratio[rounds / 2], ratio[0]);
    for (int k = 0; k < 2; k++) CHECK(mmb_array_evict(w[k].a, fast));
  }
  for (int k = 0; k < 2; k++) {
    if (w[k].sum == 0) return 1;
    CHECK(mmb_array_destroy(w[k].a));
    for (int b = 0; b < KEEP; b++) free(w[k].buf[b]);
  }
  CHECK(mmb_interface_destroy(iface));
  CHECK(mmb_space_release(fast));
  CHECK(mmb_finalize());
  return 0;
}
