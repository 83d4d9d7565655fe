/* Streaming an array through a small fast tier: a prefetching tile iterator
   duplicates the next tiles into a size-limited space on a queue while the
   caller reduces the current one, and releases each tile behind it. The
   array is several times larger than the fast space, so it could never be
   duplicated there whole.

   The run also times the two halves alone, the copies (the same iterator
   with no work on the tiles) and the compute (the same kernel on each tile
   just duplicated into the fast space, as warm in cache as the streamed
   kernel finds it; only the kernel timed), and reports the streamed time
   against the larger of the two: 1.0 is perfect overlap, 2.0 none. Rounds
   interleave the three; medians, and the worst rounds.

     build/bin/stream_sum                  # 256 MiB of doubles through a 32 MiB space
     build/bin/stream_sum 1024 8 2         # MiB of data, MiB per tile, tiles ahead
     MMB_TRACE=s.json build/bin/stream_sum 64   # then: tools/mmb-plot s.json s.svg */
#include <mmb/mmb.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                               \
  do {                                                                            \
    mmbError e_ = (call);                                                         \
    if (e_ != MMB_OK) {                                                           \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, mmb_error_string(e_)); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

enum { COLS = 8192 };   /* 64 KiB rows */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The kernel: a degree-`work` polynomial per element, summed. More work
   makes it compute-bound, less memory-bound. */
static double reduce(const double *x, size_t rows, size_t pitch, int work) {
  double s = 0;
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < COLS; j++) {
      double v = x[i * pitch + j], p = 1.0;
      for (int k = 0; k < work; k++) p = p * v * 0.5 + 1.0;
      s += p;
    }
  return s;
}

typedef struct stream_result {
  double streamed, copies, compute;   /* median seconds */
  double streamed_worst, copies_worst, compute_worst;
  double sum, warm_sum, reference;   /* streamed, compute alone, straight from the home */
  mmbStats fast;                      /* the fast space after the runs */
} stream_result;

/* Streams tiles of `a` through `fast` with the iterator; work < 0: no kernel. */
static double stream(mmbArray *a, mmbMemSpace *fast, mmbQueue *q, size_t depth, int work,
                     double *sum) {
  mmbTileIteratorOptions o = {.queue = q, .space = fast, .depth = depth, .access = MMB_READ};
  mmbTileIterator *it;
  double t0 = now(), s = 0;
  CHECK(mmb_tile_iterator_create(a, &o, &it));   /* starts the walk */
  for (mmbArrayTile *t; (t = mmb_tile_iterator_tile(it));) {
    if (work >= 0) s += reduce(t->ptr, t->dim[0], t->stride[0], work);
    CHECK(mmb_tile_iterator_next(it));
  }
  CHECK(mmb_tile_iterator_destroy(it));
  *sum = s;
  return now() - t0;
}

/* The compute alone, on data in the state the streamed kernel finds it:
   each tile duplicated into the fast space (not timed) just before the
   kernel runs on it (timed). */
static double compute_warm(mmbArray *a, mmbMemSpace *fast, int work, double *sum) {
  mmbTileIterator *it;
  double t = 0, s = 0;
  CHECK(mmb_tile_iterator_create(a, NULL, &it));
  for (mmbArrayTile *tile; (tile = mmb_tile_iterator_tile(it));) {
    mmbArrayTile *d;
    CHECK(mmb_tile_duplicate(tile, fast, MMB_READ, NULL, &d));
    double t0 = now();
    s += reduce(d->ptr, d->dim[0], d->stride[0], work);
    t += now() - t0;
    CHECK(mmb_tile_discard(d));
    CHECK(mmb_tile_iterator_next(it));
  }
  CHECK(mmb_tile_iterator_destroy(it));
  *sum = s;
  return t;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median and the worst of v[0..n). */
static void median_worst(double *v, int n, double *median, double *worst) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  *median = v[n / 2];
  *worst = v[n - 1];
}

/* Streams `mib` MiB of doubles in tiles of `tile_mib` through a space of
   (depth + 3) tiles, `reps` rounds of the three; medians and worst rounds. */
static stream_result run_stream(size_t mib, size_t tile_mib, size_t depth, int work, int reps) {
  stream_result r = {0};
  size_t row_bytes = COLS * sizeof(double);
  size_t rows = mib * (1u << 20) / row_bytes, tile_rows = tile_mib * (1u << 20) / row_bytes;
  if (tile_rows < 1) tile_rows = 1;
  if (rows < tile_rows) rows = tile_rows;
  mmbMemSpace *dram, *fast;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  /* room for depth + 2 tiles, and a tile's worth for the pool's rounding
     (blocks of 1 to 10 MiB are carved from 20 MiB segments) */
  size_t limit = (depth + 3) * tile_rows * row_bytes;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = limit}, &fast));
  mmbMemInterface *home;
  CHECK(mmb_request_interface(dram, NULL, &home));
  mmbLayout *layout;
  CHECK(mmb_layout_create_regular_nd(sizeof(double), 2, MMB_ROWMAJOR, (mmbLayoutPadding){0},
                                     &layout));
  CHECK(mmb_layout_set_element_type(layout, MMB_TYPE_DOUBLE));
  mmbArray *a;
  CHECK(mmb_array_create(&(mmbDimensions){2, {rows, COLS}}, layout, home, MMB_READ_WRITE, &a));
  CHECK(mmb_array_tile(a, &(mmbDimensions){2, {tile_rows, COLS}}));
  double *x = mmb_array_ptr(a);
  for (size_t i = 0; i < rows * COLS; i++) x[i] = (double)(i % 1000) / 1000.0;
  mmbQueue *q;
  CHECK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD, .near = fast}, &q));
  r.reference = reduce(x, rows, COLS, work);   /* the sum, straight from the home */
  double *t = malloc(3 * (size_t)reps * sizeof *t), ignored;
  if (!t) exit(1);
  for (int rep = 0; rep < reps; rep++) {
    t[rep] = compute_warm(a, fast, work, &r.warm_sum);
    t[reps + rep] = stream(a, fast, q, depth, -1, &ignored);
    t[2 * reps + rep] = stream(a, fast, q, depth, work, &r.sum);
  }
  median_worst(t, reps, &r.compute, &r.compute_worst);
  median_worst(t + reps, reps, &r.copies, &r.copies_worst);
  median_worst(t + 2 * reps, reps, &r.streamed, &r.streamed_worst);
  free(t);
  CHECK(mmb_space_get_stats(fast, &r.fast));
  CHECK(mmb_queue_destroy(NULL, &q));
  CHECK(mmb_array_destroy(a));
  CHECK(mmb_layout_destroy(layout));
  CHECK(mmb_interface_destroy(home));
  CHECK(mmb_space_release(fast));
  return r;
}

#ifndef STREAM_SUM_NO_MAIN
int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 256;
  size_t tile_mib = argc > 2 ? strtoul(argv[2], NULL, 0) : 8;
  size_t depth = argc > 3 ? strtoul(argv[3], NULL, 0) : 1;
  int work = argc > 4 ? atoi(argv[4]) : 4;
  if (mib < 1 || tile_mib < 1 || depth < 1 || work < 0) {
    fprintf(stderr, "usage: %s [MiB of data] [MiB per tile] [tiles ahead] [kernel work]\n",
            argv[0]);
    return 2;
  }
  CHECK(mmb_init(NULL));
  stream_result r = run_stream(mib, tile_mib, depth, work, 5);
  double bound = r.copies > r.compute ? r.copies : r.compute;
  printf("streamed %zu MiB in %zu MiB tiles through a %zu MiB space (%zu tiles ahead), 5 rounds: "
         "median (worst)\n", mib, tile_mib, (depth + 3) * tile_mib, depth);
  printf("  copies alone  %8.2f ms (%.2f)\n  compute alone %8.2f ms (%.2f)\n"
         "  streamed      %8.2f ms (%.2f)  = %.2fx max(copies, compute)\n",
         r.copies * 1e3, r.copies_worst * 1e3, r.compute * 1e3, r.compute_worst * 1e3,
         r.streamed * 1e3, r.streamed_worst * 1e3, r.streamed / bound);
  printf("  fast space high watermark %.1f MiB of its limit; sum %.6g (reference %.6g)\n",
         r.fast.used_high / 1048576.0, r.sum, r.reference);
  CHECK(mmb_finalize());
  return fabs(r.sum - r.reference) > 1e-9 * fabs(r.reference) ||
         fabs(r.warm_sum - r.reference) > 1e-9 * fabs(r.reference);
}
#endif
