/* What every benchmark program needs: a check that stops at the first
   error of mmb, a monotonic clock, and the comparison qsort orders
   timings with (for medians and worst rounds). */
#ifndef MMB_BENCH_H
#define MMB_BENCH_H

#include <mmb/mmb.h>

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

#endif /* MMB_BENCH_H */
