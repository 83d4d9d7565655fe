/* The tiled transpose the Mamba paper benchmarked: B = A^T, out of place, of a
   large matrix, tile by tile, two ways:
   - direct: each tile of B takes the transpose of its tile of A
     (mmb_tile_copy_transposed: a blocked SIMD kernel, one pass);
   - staged, as the paper did: each tile of A is duplicated (read) into a
     fast, size-limited space standing in for HBM, in column-major order, so
     mmb transposes it on the way in and the duplicate's bytes are B's tile;
     B's tile then takes them (mmb_tile_copy_transposed of the duplicate,
     which is a plain copy of rows), and A's duplicate is released, which
     moves no bytes.
   Tiles are visited in Morton order. The same run times a naive transpose
   and a cache-blocked one on the same matrices.

     build/bin/tiled_transpose                 # 4096 x 4096 floats, 256 x 256 tiles
     build/bin/tiled_transpose 8192 512        # side, tile side
     MMB_TRACE=t.json build/bin/tiled_transpose 2048   # then: tools/mmb-plot t.json t.svg */
#include <mmb/mmb.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                               \
  do {                                                                            \
    mmbError e_ = (call);                                                         \
    if (e_ != MMB_OK) {                                                           \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, mmb_error_string(e_)); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

enum { BLOCK = 32 };   /* the cache block of the kernels (32 x 32 floats = 4 KiB) */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* dst (cols x rows, pitch dp) = src (rows x cols, pitch sp)^T, in cache blocks. */
static void transpose_blocked(float *dst, size_t dp, const float *src, size_t sp, size_t rows,
                              size_t cols) {
  for (size_t i0 = 0; i0 < rows; i0 += BLOCK)
    for (size_t j0 = 0; j0 < cols; j0 += BLOCK) {
      size_t i1 = i0 + BLOCK < rows ? i0 + BLOCK : rows, j1 = j0 + BLOCK < cols ? j0 + BLOCK : cols;
      for (size_t i = i0; i < i1; i++)
        for (size_t j = j0; j < j1; j++) dst[j * dp + i] = src[i * sp + j];
    }
}

static void transpose_naive(float *dst, const float *src, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) dst[j * n + i] = src[i * n + j];
}

/* The mmb versions: B = A^T tile by tile, directly (fast == NULL) or staged
   through the fast space; returns the seconds it took. */
static double transpose_tiled(mmbArray *a, mmbArray *b, mmbMemSpace *fast) {
  mmbLayout *col;   /* A's tiles in column-major order are B's tiles in row-major order */
  CHECK(mmb_layout_create_regular_nd(sizeof(float), 2, MMB_COLMAJOR, (mmbLayoutPadding){0}, &col));
  CHECK(mmb_layout_set_element_type(col, MMB_TYPE_FLOAT));
  mmbTileIterator *it;
  CHECK(mmb_tile_iterator_create(a, &(mmbTileIteratorOptions){.schedule = MMB_SCHEDULE_MORTON}, &it));
  double t0 = now();
  mmbError walk = MMB_OK;
  for (mmbArrayTile *ta; walk == MMB_OK && (ta = mmb_tile_iterator_tile(it));
       walk = mmb_tile_iterator_next(it)) {
    mmbIndex ij;
    CHECK(mmb_tile_iterator_get_index(it, &ij));
    mmbArrayTile *tb, *fa;
    CHECK(mmb_tile_at(b, &(mmbIndex){2, {ij.d[1], ij.d[0]}}, &tb));
    if (!fast) {
      CHECK(mmb_tile_copy_transposed(tb, ta));
      continue;
    }
    CHECK(mmb_tile_duplicate(ta, fast, MMB_READ, col, &fa));   /* transposed on the way in */
    CHECK(mmb_tile_copy_transposed(tb, fa));   /* fa reversed is tb's order: rows */
    CHECK(mmb_tile_discard(fa));               /* read-only: nothing to write back */
  }
  CHECK(walk);
  double t = now() - t0;
  CHECK(mmb_tile_iterator_destroy(it));
  CHECK(mmb_layout_destroy(col));
  return t;
}

static size_t check_transposed(const float *b, const float *a, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) bad += b[j * n + i] != a[i * n + j];
  return bad;
}

typedef struct transpose_result {
  double naive, blocked, direct, tiled;   /* best seconds (tiled: staged through the fast space) */
  size_t errors;
  mmbStats fast;                  /* the fast space after the runs */
} transpose_result;

/* Runs the four transposes `reps` times each on an n x n matrix with tiles
   of tile x tile, the fast space limited to `fast_limit` bytes. */
static transpose_result run_transposes(size_t n, size_t tile, size_t fast_limit, int reps) {
  transpose_result r = {1e30, 1e30, 1e30, 1e30, 0, {0}};
  mmbMemSpace *dram, *fast;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = fast_limit},
                          &fast));
  mmbMemInterface *home;
  CHECK(mmb_request_interface(dram, NULL, &home));
  mmbLayout *layout;
  CHECK(mmb_layout_create_regular_nd(sizeof(float), 2, MMB_ROWMAJOR, (mmbLayoutPadding){0},
                                     &layout));
  CHECK(mmb_layout_set_element_type(layout, MMB_TYPE_FLOAT));
  mmbArray *a, *b;
  mmbDimensions dims = {2, {n, n}};
  CHECK(mmb_array_create(&dims, layout, home, MMB_READ_WRITE, &a));
  CHECK(mmb_array_create(&dims, layout, home, MMB_READ_WRITE, &b));
  CHECK(mmb_array_tile(a, &(mmbDimensions){2, {tile, tile}}));
  CHECK(mmb_array_tile(b, &(mmbDimensions){2, {tile, tile}}));
  float *pa = mmb_array_ptr(a), *pb = mmb_array_ptr(b);
  for (size_t i = 0; i < n * n; i++) pa[i] = (float)(i % 1000003);
  for (int rep = 0; rep < reps; rep++) {
    memset(pb, 0, n * n * sizeof *pb);
    double t0 = now();
    transpose_naive(pb, pa, n);
    double t = now() - t0;
    if (t < r.naive) r.naive = t;
    r.errors += check_transposed(pb, pa, n);
    memset(pb, 0, n * n * sizeof *pb);
    t0 = now();
    transpose_blocked(pb, n, pa, n, n, n);
    t = now() - t0;
    if (t < r.blocked) r.blocked = t;
    r.errors += check_transposed(pb, pa, n);
    memset(pb, 0, n * n * sizeof *pb);
    t = transpose_tiled(a, b, NULL);
    if (t < r.direct) r.direct = t;
    r.errors += check_transposed(pb, pa, n);
    memset(pb, 0, n * n * sizeof *pb);
    t = transpose_tiled(a, b, fast);
    if (t < r.tiled) r.tiled = t;
    r.errors += check_transposed(pb, pa, n);
  }
  CHECK(mmb_space_get_stats(fast, &r.fast));
  CHECK(mmb_array_destroy(a));
  CHECK(mmb_array_destroy(b));
  CHECK(mmb_layout_destroy(layout));
  CHECK(mmb_interface_destroy(home));
  CHECK(mmb_space_release(fast));
  return r;
}

#ifndef TILED_TRANSPOSE_NO_MAIN
int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 4096;
  size_t tile = argc > 2 ? strtoul(argv[2], NULL, 0) : 256;
  if (n < 1 || tile < 1) {
    fprintf(stderr, "usage: %s [side] [tile side]\n", argv[0]);
    return 2;
  }
  size_t tile_bytes = tile * tile * sizeof(float);
  size_t limit = 4 * tile_bytes;   /* room for two tiles' duplicates, and a spare pair */
  CHECK(mmb_init(NULL));
  printf("transpose of %zu x %zu floats (%.0f MiB), tiles %zu x %zu, fast space %.1f MiB\n", n, n,
         n * n * 4.0 / (1 << 20), tile, tile, limit / 1048576.0);
  transpose_result r = run_transposes(n, tile, limit, 3);
  double bytes = 2.0 * n * n * sizeof(float);
  printf("%-28s %10s %10s %12s\n", "version (best of 3)", "ms", "GB/s", "vs blocked");
  printf("%-28s %10.1f %10.2f %11.2fx\n", "naive", r.naive * 1e3, bytes / r.naive / 1e9,
         r.blocked / r.naive);
  printf("%-28s %10.1f %10.2f %11.2fx\n", "cache-blocked", r.blocked * 1e3,
         bytes / r.blocked / 1e9, 1.0);
  printf("%-28s %10.1f %10.2f %11.2fx\n", "mmb tiles, direct", r.direct * 1e3,
         bytes / r.direct / 1e9, r.blocked / r.direct);
  printf("%-28s %10.1f %10.2f %11.2fx\n", "mmb tiles via fast space", r.tiled * 1e3,
         bytes / r.tiled / 1e9, r.blocked / r.tiled);
  printf("fast space: high watermark %.1f MiB of %.1f MiB, %llu provider trips, %llu refused\n",
         r.fast.used_high / 1048576.0, limit / 1048576.0, r.fast.n_provider_allocs,
         r.fast.n_failed);
  printf("result: %s\n", r.errors ? "WRONG" : "all four transposes agree");
  CHECK(mmb_finalize());
  return r.errors ? 1 : 0;
}
#endif
