/* What every benchmark program needs: a check that stops at the first
   error of mmb, a monotonic clock, the comparison qsort orders timings
   with (for medians and worst rounds), and work dealt to threads in
   chunks (the 2-thread baselines). */
#ifndef MMB_BENCH_H
#define MMB_BENCH_H

#include <mmb/mmb.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    mmbError e_ = (call);                                                                  \
    if (e_ != MMB_OK) {                                                                    \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, mmb_error_string(e_)); \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* An index 0..n-1 dealt to threads in chunks, each thread taking the next
   when it is done with its last, as mmb's copy engine deals a split copy's:
   a thread that runs slower (on a CPU woken for it) takes fewer. */
typedef struct bench_deal {
  _Atomic size_t next;
  size_t n, chunk;
} bench_deal;

static inline void bench_deal_start(bench_deal *d, size_t n, size_t chunk) {
  d->n = n, d->chunk = chunk ? chunk : 1;
  atomic_store(&d->next, 0);
}

static inline bool bench_deal_next(bench_deal *d, size_t *lo, size_t *hi) {
  size_t at = atomic_fetch_add(&d->next, d->chunk);
  if (at >= d->n) return false;
  *lo = at, *hi = d->n - at > d->chunk ? at + d->chunk : d->n;
  return true;
}

#endif /* MMB_BENCH_H */
