/* bench/tiles: tile transport and iteration, each against a baseline measured
   in the same run.
   1. Duplicate + merge (overwrite) of every tile of a 64 MiB array through a
      fast space, against memcpy of the same bytes: each tile's rows copied
      into a contiguous buffer and back. Target: >= 0.8x for rows >= 4 KiB.
   2. Iterator overhead per tile, for each schedule, against a plain loop over
      the grid doing the same work. Target: < 50 ns per tile.
   3. The tiled transpose of examples/tiled_transpose.c against OpenBLAS's
      cblas_somatcopy (the best known out-of-place transpose here), with the
      example's naive and cache-blocked ones beside it, at a power-of-two
      side and at others: rounds interleaved, medians and worst rounds.
      Target (issue 15): <= 1.2x somatcopy.
   Usage: bench-tiles [repetitions] */
#define TILED_TRANSPOSE_NO_MAIN
#include "../examples/tiled_transpose.c"

#include <cblas.h>

enum { ROWS = 4096, COLS = 4096 };   /* floats: 64 MiB */

typedef struct tile_case {
  size_t rows, cols;
} tile_case;

static int reps = 5;

static double mmb_dup_merge(mmbArray *a, mmbMemSpace *fast) {
  mmbTileIterator *it;
  CHECK(mmb_tile_iterator_create(a, NULL, &it));
  double t0 = now();
  mmbError walk = MMB_OK;
  for (mmbArrayTile *t; walk == MMB_OK && (t = mmb_tile_iterator_tile(it));
       walk = mmb_tile_iterator_next(it)) {
    mmbArrayTile *d;
    CHECK(mmb_tile_duplicate(t, fast, MMB_READ_WRITE, NULL, &d));
    CHECK(mmb_tile_merge(d, MMB_MERGE_OVERWRITE));
  }
  CHECK(walk);
  double t = now() - t0;
  CHECK(mmb_tile_iterator_destroy(it));
  return t;
}

static double memcpy_dup_merge(float *base, const tile_case *c, float *buf) {
  double t0 = now();
  for (size_t i0 = 0; i0 < ROWS; i0 += c->rows)
    for (size_t j0 = 0; j0 < COLS; j0 += c->cols) {
      size_t w = c->cols * sizeof(float);
      for (size_t r = 0; r < c->rows; r++) memcpy(buf + r * c->cols, base + (i0 + r) * COLS + j0, w);
      for (size_t r = 0; r < c->rows; r++) memcpy(base + (i0 + r) * COLS + j0, buf + r * c->cols, w);
    }
  return now() - t0;
}

static void bench_dup_merge(mmbMemInterface *home, mmbMemSpace *fast, mmbLayout *layout) {
  const tile_case cases[] = {{16, 1024}, {64, 1024}, {256, 2048}, {32, 4096}, {64, 256}};
  printf("1. duplicate + merge of every tile of a %d x %d float array (2 x 64 MiB moved)\n",
         ROWS, COLS);
  printf("%-18s %10s %12s %14s %8s %8s\n", "tile (rows x cols)", "row bytes", "mmb GB/s",
         "memcpy GB/s", "ratio", "target");
  mmbArray *a;
  CHECK(mmb_array_create(&(mmbDimensions){2, {ROWS, COLS}}, layout, home, MMB_READ_WRITE, &a));
  float *base = mmb_array_ptr(a);
  for (size_t i = 0; i < (size_t)ROWS * COLS; i++) base[i] = (float)i;
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    const tile_case *c = &cases[k];
    CHECK(mmb_array_tile(a, &(mmbDimensions){2, {c->rows, c->cols}}));
    float *buf = malloc(c->rows * c->cols * sizeof *buf);
    double best_mmb = 1e30, best_memcpy = 1e30;
    for (int r = 0; r < reps; r++) {
      double t = memcpy_dup_merge(base, c, buf);
      if (t < best_memcpy) best_memcpy = t;
      t = mmb_dup_merge(a, fast);
      if (t < best_mmb) best_mmb = t;
    }
    free(buf);
    double bytes = 2.0 * ROWS * COLS * sizeof(float);
    size_t row = c->cols * sizeof(float);
    char name[32];
    snprintf(name, sizeof name, "%zu x %zu", c->rows, c->cols);
    printf("%-18s %10zu %12.2f %14.2f %7.2fx %8s\n", name, row, bytes / best_mmb / 1e9,
           bytes / best_memcpy / 1e9, best_memcpy / best_mmb, row >= 4096 ? ">= 0.8" : "-");
  }
  for (size_t i = 0; i < (size_t)ROWS * COLS; i++)
    if (base[i] != (float)i) {
      printf("WRONG: element %zu changed\n", i);
      exit(1);
    }
  CHECK(mmb_array_destroy(a));
}

static double iterate(mmbArray *a, mmbTileSchedule s, size_t *sum) {
  mmbTileIterator *it;
  CHECK(mmb_tile_iterator_create(a, &(mmbTileIteratorOptions){.schedule = s}, &it));
  double t0 = now();
  mmbError walk = MMB_OK;
  for (mmbArrayTile *t; walk == MMB_OK && (t = mmb_tile_iterator_tile(it));
       walk = mmb_tile_iterator_next(it))
    *sum += t->lower[0] + t->lower[1] + *(unsigned char *)t->ptr;
  CHECK(walk);
  double t = now() - t0;
  CHECK(mmb_tile_iterator_destroy(it));
  return t;
}

static void bench_iterators(mmbMemInterface *home) {
  enum { SIDE = 512 };   /* 512 x 512 tiles of 4 x 4 bytes */
  mmbLayout *l;
  CHECK(mmb_layout_create_regular_nd(1, 2, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &l));
  mmbArray *a;
  CHECK(mmb_array_create(&(mmbDimensions){2, {SIDE * 4, SIDE * 4}}, l, home, MMB_READ_WRITE, &a));
  CHECK(mmb_array_tile(a, &(mmbDimensions){2, {4, 4}}));
  memset(mmb_array_ptr(a), 1, SIDE * 4 * SIDE * 4);
  const unsigned char *p = mmb_array_ptr(a);
  size_t n = (size_t)SIDE * SIDE, sum = 0;
  double base = 1e30;
  for (int r = 0; r < reps; r++) {   /* the hand-written loop over the same grid */
    double t0 = now();
    for (size_t i = 0; i < SIDE; i++)
      for (size_t j = 0; j < SIDE; j++) sum += i * 4 + j * 4 + p[i * 4 * SIDE * 4 + j * 4];
    double t = now() - t0;
    if (t < base) base = t;
  }
  printf("\n2. iterating %zu tiles (a %d x %d grid)\n", n, SIDE, SIDE);
  printf("%-12s %12s %18s %16s %8s\n", "schedule", "ns / tile", "plain loop ns/tile",
         "overhead ns/tile", "target");
  const char *names[] = {"row-major", "col-major", "morton"};
  for (int s = 0; s < 3; s++) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
      double t = iterate(a, (mmbTileSchedule)s, &sum);
      if (t < best) best = t;
    }
    printf("%-12s %12.2f %18.2f %16.2f %8s\n", names[s], best / n * 1e9, base / n * 1e9,
           (best - base) / n * 1e9, "< 50");
  }
  if (sum == 42) puts("");   /* keeps the loops */
  CHECK(mmb_array_destroy(a));
  CHECK(mmb_layout_destroy(l));
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median and worst of v[0..n), in ms. */
static void stats_ms(double *v, int n, double *median, double *worst) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  *median = v[n / 2] * 1e3;
  *worst = v[n - 1] * 1e3;
}

/* OpenBLAS's out-of-place transpose of an n x n float matrix, timed. */
static double somatcopy_once(float *dst, const float *src, size_t n) {
  double t0 = now();
  cblas_somatcopy(CblasRowMajor, CblasTrans, (blasint)n, (blasint)n, 1.0f, src, (blasint)n, dst,
                  (blasint)n);
  return now() - t0;
}

static void bench_transpose(void) {
  const size_t cases[][2] = {{4096, 256}, {4000, 250}, {8192, 256}};
  printf("\n3. out-of-place transpose, floats, through a fast space of 4 tiles: %d interleaved "
         "rounds, ms: median (worst)\n", reps);
  printf("%-14s %16s %16s %16s %16s %12s\n", "side / tile", "OpenBLAS", "naive", "blocked",
         "mmb", "mmb/OpenBLAS");
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    size_t n = cases[k][0], tile = cases[k][1];
    double *t = malloc(4 * (size_t)reps * sizeof *t);
    float *src = malloc(n * n * sizeof *src), *dst = malloc(n * n * sizeof *dst);
    if (!t || !src || !dst) exit(1);
    for (size_t i = 0; i < n * n; i++) src[i] = (float)(i % 1000003);
    size_t errors = 0;
    for (int r = 0; r < reps; r++) {   /* OpenBLAS, then the example's three, each round */
      memset(dst, 0, n * n * sizeof *dst);
      t[r] = somatcopy_once(dst, src, n);
      errors += check_transposed(dst, src, n);
      transpose_result one = run_transposes(n, tile, 4 * tile * tile * sizeof(float), 1);
      t[reps + r] = one.naive;
      t[2 * reps + r] = one.blocked;
      t[3 * reps + r] = one.tiled;
      errors += one.errors;
    }
    double med[4], worst[4];
    for (int w = 0; w < 4; w++) stats_ms(t + w * reps, reps, &med[w], &worst[w]);
    char name[32];
    snprintf(name, sizeof name, "%zu / %zu", n, tile);
    printf("%-14s", name);
    for (int w = 0; w < 4; w++) printf(" %8.1f (%5.1f)", med[w], worst[w]);
    printf(" %11.2fx%s\n", med[3] / med[0], errors ? "  WRONG" : "");
    free(t);
    free(src);
    free(dst);
  }
}

int main(int argc, char **argv) {
  if (argc > 1) reps = atoi(argv[1]) > 0 ? atoi(argv[1]) : 1;
  CHECK(mmb_init(NULL));
  mmbMemSpace *dram, *fast;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 64 << 20},
                          &fast));
  mmbMemInterface *home;
  CHECK(mmb_request_interface(dram, NULL, &home));
  mmbLayout *layout;
  CHECK(mmb_layout_create_regular_nd(sizeof(float), 2, MMB_ROWMAJOR, (mmbLayoutPadding){0},
                                     &layout));
  bench_dup_merge(home, fast, layout);
  bench_iterators(home);
  bench_transpose();
  CHECK(mmb_layout_destroy(layout));
  CHECK(mmb_interface_destroy(home));
  CHECK(mmb_space_release(fast));
  CHECK(mmb_finalize());
  return 0;
}
