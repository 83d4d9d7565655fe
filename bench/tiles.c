/* bench/tiles: tile transport and iteration, each against a baseline measured
   in the same run.
   1. Duplicate + merge (overwrite) of every tile of a 64 MiB array through a
      fast space, against two ways of copying the same bytes by hand, each
      tile's rows into a contiguous buffer and back: glibc's memcpy per row,
      and an inline vector loop (AVX-512, else AVX2: no call per row); the
      ratio is against the faster of the two in each case. Target: >= 0.8x
      for rows >= 4 KiB.
   2. Iterator overhead per tile, for each schedule, against a plain loop over
      the grid doing the same work. Target: < 50 ns per tile.
   3. The tiled transposes of examples/tiled_transpose.c (direct, and staged
      through a fast space) against OpenBLAS's cblas_somatcopy (the best
      known out-of-place transpose here) and a blocked AVX2 transpose written
      here (8 x 8 register blocks in 64 x 64 cache blocks), at a power-of-two
      side and at others. Target: <= 1.2x somatcopy.
   Every section alternates its contenders round by round and prints medians
   and worst rounds. */
/* Usage: bench-tiles [repetitions] */
#define TILED_TRANSPOSE_NO_MAIN
#include "../examples/tiled_transpose.c"

#include <cblas.h>
#include <immintrin.h>

#include "../examples/cnn/blas.h"   /* the best OpenBLAS kernel, checked (examples/cnn/blas.c) */

enum { ROWS = 4096, COLS = 4096 };   /* floats: 64 MiB */

typedef struct tile_case {
  size_t rows, cols;
} tile_case;

static int reps = 5;

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

/* One row with vector loads and stores, inline. */
static inline void vec_row(char *restrict d, const char *restrict s, size_t n) {
#ifdef __AVX512F__
  for (; n >= 64; n -= 64, d += 64, s += 64) _mm512_storeu_si512((void *)d, _mm512_loadu_si512(s));
#else
  for (; n >= 32; n -= 32, d += 32, s += 32)
    _mm256_storeu_si256((void *)d, _mm256_loadu_si256((const void *)s));
#endif
  if (n) memcpy(d, s, n);
}

/* Each tile's rows into buf and back, by hand: with glibc's memcpy per row,
   or with vec_row (inlined: `vector` is a constant at each call). */
static inline __attribute__((always_inline)) double dup_merge_by_hand(float *base,
                                                                      const tile_case *c,
                                                                      float *buf, bool vector) {
  double t0 = now();
  size_t w = c->cols * sizeof(float);
  for (size_t i0 = 0; i0 < ROWS; i0 += c->rows)
    for (size_t j0 = 0; j0 < COLS; j0 += c->cols)
      for (int back = 0; back < 2; back++)
        for (size_t r = 0; r < c->rows; r++) {
          float *tile_row = base + (i0 + r) * COLS + j0, *buf_row = buf + r * c->cols;
          char *d = (char *)(back ? tile_row : buf_row);
          const char *from = (const char *)(back ? buf_row : tile_row);
          if (vector) vec_row(d, from, w);
          else memcpy(d, from, w);
        }
  return now() - t0;
}

static double memcpy_dup_merge(float *base, const tile_case *c, float *buf) {
  return dup_merge_by_hand(base, c, buf, false);
}

static double vec_dup_merge(float *base, const tile_case *c, float *buf) {
  return dup_merge_by_hand(base, c, buf, true);
}

static void bench_dup_merge(mmbMemInterface *home, mmbMemSpace *fast, mmbLayout *layout) {
  const tile_case cases[] = {{16, 1024}, {64, 1024}, {256, 2048}, {32, 4096}, {64, 256}};
  printf("1. duplicate + merge of every tile of a %d x %d float array (2 x 64 MiB moved), "
         "GB/s: median (worst round)\n", ROWS, COLS);
  printf("%-18s %10s %14s %15s %15s %8s %8s\n", "tile (rows x cols)", "row bytes", "mmb",
         "memcpy rows", "vector rows", "ratio", "target");
  mmbArray *a;
  CHECK(mmb_array_create(&(mmbDimensions){2, {ROWS, COLS}}, layout, home, MMB_READ_WRITE, &a));
  float *base = mmb_array_ptr(a);
  for (size_t i = 0; i < (size_t)ROWS * COLS; i++) base[i] = (float)i;
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    const tile_case *c = &cases[k];
    CHECK(mmb_array_tile(a, &(mmbDimensions){2, {c->rows, c->cols}}));
    float *buf = malloc(c->rows * c->cols * sizeof *buf);
    double *t_memcpy = malloc(3 * (size_t)reps * sizeof *t_memcpy), *t_mmb = t_memcpy + reps,
           *t_vec = t_mmb + reps;
    for (int r = 0; r < reps; r++) {
      t_memcpy[r] = memcpy_dup_merge(base, c, buf);
      t_mmb[r] = mmb_dup_merge(a, fast);
      t_vec[r] = vec_dup_merge(base, c, buf);
    }
    double mmb_med, mmb_worst, memcpy_med, memcpy_worst, vec_med, vec_worst;
    stats_ms(t_mmb, reps, &mmb_med, &mmb_worst);
    stats_ms(t_memcpy, reps, &memcpy_med, &memcpy_worst);
    stats_ms(t_vec, reps, &vec_med, &vec_worst);
    free(buf);
    free(t_memcpy);
    double mb = 2.0 * ROWS * COLS * sizeof(float) / 1e6;   /* per ms: GB/s */
    double best = memcpy_med < vec_med ? memcpy_med : vec_med;
    size_t row = c->cols * sizeof(float);
    char name[32];
    snprintf(name, sizeof name, "%zu x %zu", c->rows, c->cols);
    printf("%-18s %10zu %6.2f (%5.2f) %7.2f (%5.2f) %7.2f (%5.2f) %7.2fx %8s\n", name, row,
           mb / mmb_med, mb / mmb_worst, mb / memcpy_med, mb / memcpy_worst, mb / vec_med,
           mb / vec_worst, best / mmb_med, row >= 4096 ? ">= 0.8" : "-");
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
  printf("\n2. iterating %zu tiles (a %d x %d grid), ns per tile: median (worst round)\n", n,
         SIDE, SIDE);
  printf("%-12s %16s %18s %16s %8s\n", "schedule", "iterator", "plain loop", "overhead",
         "target");
  const char *names[] = {"row-major", "col-major", "morton"};
  double *t_loop = malloc(2 * (size_t)reps * sizeof *t_loop), *t_it = t_loop + reps;
  for (int s = 0; s < 3; s++) {
    for (int r = 0; r < reps; r++) {   /* the hand-written loop over the same grid, then mmb's */
      double t0 = now();
      for (size_t i = 0; i < SIDE; i++)
        for (size_t j = 0; j < SIDE; j++) sum += i * 4 + j * 4 + p[i * 4 * SIDE * 4 + j * 4];
      t_loop[r] = now() - t0;
      t_it[r] = iterate(a, (mmbTileSchedule)s, &sum);
    }
    double it_med, it_worst, loop_med, loop_worst, per = 1e6 / n;   /* ms to ns per tile */
    stats_ms(t_it, reps, &it_med, &it_worst);
    stats_ms(t_loop, reps, &loop_med, &loop_worst);
    printf("%-12s %7.2f (%6.2f) %8.2f (%6.2f) %16.2f %8s\n", names[s], it_med * per,
           it_worst * per, loop_med * per, loop_worst * per, (it_med - loop_med) * per, "< 50");
  }
  free(t_loop);
  if (sum == 42) puts("");   /* keeps the loops */
  CHECK(mmb_array_destroy(a));
  CHECK(mmb_layout_destroy(l));
}

/* The SIMD baseline: dst = src^T (n x n floats) in 8 x 8 AVX2 register
   blocks within 64 x 64 cache blocks (n a multiple of 8 here, else the
   edges go element by element). */
__attribute__((target("avx2"))) static void transpose8(float *dst, size_t dp, const float *src,
                                                       size_t sp) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * sp);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; i++) {
    _mm256_storeu_ps(dst + i * dp, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dp, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

static double avx2_once(float *dst, const float *src, size_t n) {
  enum { B = 64 };
  double t0 = now();
  for (size_t i0 = 0; i0 < n; i0 += B)
    for (size_t j0 = 0; j0 < n; j0 += B) {
      size_t i1 = i0 + B < n ? i0 + B : n, j1 = j0 + B < n ? j0 + B : n, i = i0;
      for (; i + 8 <= i1; i += 8) {
        size_t j = j0;
        for (; j + 8 <= j1; j += 8) transpose8(dst + j * n + i, n, src + i * n + j, n);
        for (; j < j1; j++)
          for (size_t k = i; k < i + 8; k++) dst[j * n + k] = src[k * n + j];
      }
      for (; i < i1; i++)
        for (size_t j = j0; j < j1; j++) dst[j * n + i] = src[i * n + j];
    }
  return now() - t0;
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
  enum { W = 6 };   /* OpenBLAS, AVX2, naive, blocked, mmb direct, mmb staged */
  printf("\n3. out-of-place transpose, floats (staged: through a fast space of 4 tiles): %d "
         "interleaved rounds, ms: median (worst)\n", reps);
  printf("%-12s %15s %15s %15s %15s %15s %15s %14s\n", "side / tile", "OpenBLAS", "AVX2 blocked",
         "naive", "blocked", "mmb direct", "mmb staged", "best mmb/BLAS");
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    size_t n = cases[k][0], tile = cases[k][1];
    double *t = malloc(W * (size_t)reps * sizeof *t);
    float *src = malloc(n * n * sizeof *src), *dst = malloc(n * n * sizeof *dst);
    if (!t || !src || !dst) exit(1);
    for (size_t i = 0; i < n * n; i++) src[i] = (float)(i % 1000003);
    size_t errors = 0;
    for (int r = 0; r < reps; r++) {   /* the baselines, then the example's four, each round */
      memset(dst, 0, n * n * sizeof *dst);
      t[r] = somatcopy_once(dst, src, n);
      errors += check_transposed(dst, src, n);
      memset(dst, 0, n * n * sizeof *dst);
      t[reps + r] = avx2_once(dst, src, n);
      errors += check_transposed(dst, src, n);
      transpose_result one = run_transposes(n, tile, 4 * tile * tile * sizeof(float), 1);
      t[2 * reps + r] = one.naive;
      t[3 * reps + r] = one.blocked;
      t[4 * reps + r] = one.direct;
      t[5 * reps + r] = one.tiled;
      errors += one.errors;
    }
    double med[W], worst[W];
    for (int w = 0; w < W; w++) stats_ms(t + w * reps, reps, &med[w], &worst[w]);
    char name[32];
    snprintf(name, sizeof name, "%zu / %zu", n, tile);
    printf("%-12s", name);
    for (int w = 0; w < W; w++) printf(" %7.1f (%5.1f)", med[w], worst[w]);
    double best = med[4] < med[5] ? med[4] : med[5];
    printf(" %13.2fx%s\n", best / med[0], errors ? "  WRONG" : "");
    free(t);
    free(src);
    free(dst);
  }
}

int main(int argc, char **argv) {
  cnn_blas_start(argc, argv);   /* may start again with a better OpenBLAS kernel */
  if (argc > 1) reps = atoi(argv[1]) > 0 ? atoi(argv[1]) : 1;
  cnn_blas blas;
  if (!cnn_blas_measure(&blas)) {
    fprintf(stderr, "bench-tiles: %s\n", blas.note);
    return 1;
  }
  printf("OpenBLAS kernel %s (sgemm %.1f GFLOP/s): %s\n\n", blas.kernel, blas.sgemm_gflops,
         blas.note);
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
