/* Copies: every out-of-bounds shape is refused; copy_nd matches a reference
   loop on random shapes. */
#include "common.h"
#include "alloc/move/move.h"

#include <stdatomic.h>
#include <unistd.h>

static mmbAllocation *alloc_pattern(mmbMemInterface *iface, size_t n, uint64_t seed) {
  mmbAllocation *a;
  OK(mmb_allocate(n, iface, &a));
  fill_pattern(mmb_allocation_ptr(a), n, seed);
  return a;
}

MMB_TEST(copy, whole_and_1d) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbAllocation *src = alloc_pattern(iface, 1000, 1), *dst = alloc_pattern(iface, 1200, 2);
  mmbAllocation *small = alloc_pattern(iface, 999, 3);
  OK(mmb_copy(dst, src));
  cr_assert_eq(memcmp(mmb_allocation_ptr(dst), mmb_allocation_ptr(src), 1000), 0);
  FAILS(mmb_copy(small, src), MMB_INVALID_ARG);
  FAILS(mmb_copy(NULL, src), MMB_INVALID_ARG);
  FAILS(mmb_copy(dst, NULL), MMB_INVALID_ARG);

  OK(mmb_copy_1d(small, 10, src, 500, 300));
  cr_assert_eq(memcmp((char *)mmb_allocation_ptr(small) + 10, (char *)mmb_allocation_ptr(src) + 500, 300), 0);
  FAILS(mmb_copy_1d(small, 0, src, 0, 0), MMB_INVALID_ARG);            /* zero width */
  FAILS(mmb_copy_1d(small, 700, src, 0, 300), MMB_INVALID_ARG);        /* dst end 1000 > 999 */
  FAILS(mmb_copy_1d(small, 0, src, 701, 300), MMB_INVALID_ARG);        /* src end 1001 > 1000 */
  OK(mmb_copy_1d(small, 699, src, 700, 300));                          /* both exactly at the end */
  FAILS(mmb_copy_1d(small, SIZE_MAX, src, 0, 2), MMB_OVERFLOW);
  FAILS(mmb_copy_1d(small, 0, src, SIZE_MAX - 1, 4), MMB_OVERFLOW);
  OK(mmb_free(src));
  FAILS(mmb_copy_1d(small, 0, src, 0, 1), MMB_INVALID_ARG);            /* freed source */
  OK(mmb_free(dst));
  OK(mmb_free(small));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(copy, overlapping_1d_is_a_memmove) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbAllocation *a = alloc_pattern(iface, 256, 5);
  unsigned char ref[256];
  memcpy(ref, mmb_allocation_ptr(a), 256);
  memmove(ref + 10, ref, 200);
  OK(mmb_copy_1d(a, 10, a, 0, 200));
  cr_assert_eq(memcmp(ref, mmb_allocation_ptr(a), 256), 0);
  /* overlapping 2-D blocks of one allocation that share bytes are refused */
  FAILS(mmb_copy_2d(a, 0, 0, 16, a, 4, 0, 16, 8, 4), MMB_INVALID_ARG);
  cr_assert_eq(memcmp(ref, mmb_allocation_ptr(a), 256), 0, "a refused copy changes nothing");
  /* disjoint ones are fine */
  OK(mmb_copy_2d(a, 0, 8, 16, a, 0, 0, 16, 16, 4));
  OK(mmb_free(a));
  OK(mmb_interface_destroy(iface));
}

/* A halo exchange: interleaved blocks of one allocation that share no byte
   (the right half of each row into the left half) copy like any others. */
MMB_TEST(copy, interleaved_disjoint_blocks_of_one_allocation_copy) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbAllocation *a = alloc_pattern(iface, 128 * 4, 9);
  unsigned char ref[512];
  memcpy(ref, mmb_allocation_ptr(a), 512);
  for (int y = 0; y < 4; y++) memcpy(ref + 128 * y + 64, ref + 128 * y, 64);
  OK(mmb_copy_2d(a, 64, 0, 128, a, 0, 0, 128, 64, 4));
  cr_assert_eq(memcmp(ref, mmb_allocation_ptr(a), 512), 0);
  /* the very same block, and a whole allocation onto itself: nothing moves */
  OK(mmb_copy_2d(a, 8, 1, 128, a, 8, 1, 128, 32, 3));
  OK(mmb_copy(a, a));
  OK(mmb_copy_1d(a, 5, a, 5, 100));
  cr_assert_eq(memcmp(ref, mmb_allocation_ptr(a), 512), 0);
  /* asynchronously: the same decisions, made at submission */
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  mmbRequest req = {0};
  for (int y = 0; y < 4; y++) memcpy(ref + 128 * y, ref + 128 * y + 64, 64);
  OK(mmb_copy_2d_async(a, 0, 0, 128, a, 64, 0, 128, 64, 4, q, &req));
  OK(mmb_wait(&req));
  cr_assert_eq(memcmp(ref, mmb_allocation_ptr(a), 512), 0);
  FAILS(mmb_copy_2d_async(a, 0, 0, 128, a, 32, 0, 128, 64, 4, q, &req), MMB_INVALID_ARG);
  cr_assert_null(req.impl, "a refused submission hands out no request");
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_free(a));
  OK(mmb_interface_destroy(iface));
}

/* Random 2-D copies inside one allocation against a byte-set model: blocks
   that share no byte copy; the same block stays; overlapping contiguous runs
   move as by memmove; other overlaps are refused and change nothing. */
MMB_TEST(copy, random_copies_within_one_allocation_match_a_model) {
  enum { N = 2048 };
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbAllocation *a = alloc_pattern(iface, N, 11);
  unsigned char *mem = mmb_allocation_ptr(a), ref[N], tmp[N];
  unsigned seed = 12345;
  size_t outcomes[4] = {0};
  for (int round = 0; round < 4000; round++) {
    size_t w = 1 + rand_r(&seed) % 24, h = 1 + rand_r(&seed) % 6;
    size_t dp = w + rand_r(&seed) % 40, sp = rand_r(&seed) % 3 ? dp : w + rand_r(&seed) % 40;
    size_t dx = rand_r(&seed) % (dp - w + 1), sx = rand_r(&seed) % (sp - w + 1);
    size_t dy = rand_r(&seed) % 8, sy = rand_r(&seed) % 8;
    if (rand_r(&seed) % 4 == 0) {   /* pitch = width: contiguous runs */
      dp = sp = w;
      dx = sx = 0;
    }
    if ((dy + h) * dp > N || (sy + h) * sp > N) continue;
    static unsigned char in_d[N];
    memset(in_d, 0, sizeof in_d);
    bool share = false, same = dx + dy * dp == sx + sy * sp && (h == 1 || dp == sp);
    for (size_t y = 0; y < h; y++) memset(in_d + (dy + y) * dp + dx, 1, w);
    for (size_t y = 0; y < h; y++)
      for (size_t x = 0; x < w; x++) share |= in_d[(sy + y) * sp + sx + x];
    bool contiguous = h == 1 || (dp == w && sp == w);   /* one run each */
    memcpy(ref, mem, N);
    mmbError expect = MMB_OK;
    if (!share || contiguous) {
      memcpy(tmp, ref, N);   /* read everything first: a memmove */
      for (size_t y = 0; y < h; y++) memcpy(ref + (dy + y) * dp + dx, tmp + (sy + y) * sp + sx, w);
    } else if (!same) {
      expect = MMB_INVALID_ARG;
    }
    outcomes[!share ? 0 : same ? 1 : contiguous ? 2 : 3]++;
    FAILS(mmb_copy_2d(a, dx, dy, dp, a, sx, sy, sp, w, h), expect);
    cr_assert_eq(memcmp(ref, mem, N), 0, "round %d: %zux%zu from (%zu,%zu)/%zu to (%zu,%zu)/%zu",
                 round, w, h, sx, sy, sp, dx, dy, dp);
  }
  for (int k = 0; k < 4; k++) cr_assert_gt(outcomes[k], 20, "outcome %d seen %zu times", k, outcomes[k]);
  OK(mmb_free(a));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(copy, out_of_bounds_2d) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  mmbAllocation *s = alloc_pattern(iface, 64 * 10, 1), *d = alloc_pattern(iface, 64 * 10, 2);
  OK(mmb_copy_2d(d, 0, 0, 64, s, 0, 0, 64, 64, 10));                /* all of it */
  OK(mmb_copy_2d(d, 32, 9, 64, s, 0, 0, 64, 32, 1));                /* the last half row */
  FAILS(mmb_copy_2d(d, 33, 9, 64, s, 0, 0, 64, 32, 1), MMB_INVALID_ARG);  /* x past pitch */
  FAILS(mmb_copy_2d(d, 0, 1, 64, s, 0, 0, 64, 64, 10), MMB_INVALID_ARG);  /* y past the end */
  FAILS(mmb_copy_2d(d, 0, 0, 64, s, 0, 1, 64, 64, 10), MMB_INVALID_ARG);
  FAILS(mmb_copy_2d(d, 0, 0, 32, s, 0, 0, 64, 64, 2), MMB_INVALID_ARG);   /* width > pitch */
  FAILS(mmb_copy_2d(d, 0, 0, 0, s, 0, 0, 64, 8, 2), MMB_INVALID_ARG);     /* zero pitch */
  FAILS(mmb_copy_2d(d, 0, 0, 64, s, 0, 0, 64, 0, 2), MMB_INVALID_ARG);    /* zero width */
  FAILS(mmb_copy_2d(d, 0, 0, 64, s, 0, 0, 64, 8, 0), MMB_INVALID_ARG);    /* zero height */
  FAILS(mmb_copy_2d(d, 0, SIZE_MAX / 2, 64, s, 0, 0, 64, 8, 2), MMB_OVERFLOW);
  FAILS(mmb_copy_2d(d, 0, 0, SIZE_MAX, s, 0, 0, 64, 8, 3), MMB_OVERFLOW);
  FAILS(mmb_copy_2d(NULL, 0, 0, 64, s, 0, 0, 64, 8, 2), MMB_INVALID_ARG);
  OK(mmb_free(s));
  OK(mmb_free(d));
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(copy, out_of_bounds_nd) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  /* a 4 x 5 x 16-byte box in an 8 x 6 x 32-byte array */
  const size_t pitch[3] = {32, 32 * 6, 0};
  mmbAllocation *s = alloc_pattern(iface, 32 * 6 * 8, 1), *d = alloc_pattern(iface, 32 * 6 * 8, 2);
  size_t off[3] = {16, 1, 4}, zero[3] = {0, 0, 0}, dims[3] = {16, 5, 4};
  OK(mmb_copy_nd(d, off, pitch, s, zero, pitch, 3, dims));
  size_t x_out[3] = {17, 1, 4}, y_out[3] = {16, 2, 4}, z_out[3] = {16, 1, 5};
  FAILS(mmb_copy_nd(d, x_out, pitch, s, zero, pitch, 3, dims), MMB_INVALID_ARG);
  FAILS(mmb_copy_nd(d, y_out, pitch, s, zero, pitch, 3, dims), MMB_INVALID_ARG);
  FAILS(mmb_copy_nd(d, z_out, pitch, s, zero, pitch, 3, dims), MMB_INVALID_ARG);
  FAILS(mmb_copy_nd(d, off, pitch, s, zero, pitch, 0, dims), MMB_INVALID_ARG);
  FAILS(mmb_copy_nd(d, off, pitch, s, zero, pitch, MMB_MAX_DIMS + 1, dims), MMB_INVALID_ARG);
  FAILS(mmb_copy_nd(d, NULL, pitch, s, zero, pitch, 3, dims), MMB_INVALID_ARG);
  FAILS(mmb_copy_nd(d, off, NULL, s, zero, pitch, 3, dims), MMB_INVALID_ARG);
  FAILS(mmb_copy_nd(d, off, pitch, s, zero, pitch, 3, NULL), MMB_INVALID_ARG);
  size_t zero_dim[3] = {16, 0, 4};
  FAILS(mmb_copy_nd(d, zero, pitch, s, zero, pitch, 3, zero_dim), MMB_INVALID_ARG);
  size_t bad_pitch[3] = {32, 32 * 4, 0};   /* 6 rows do not fit in a 4-row slice */
  size_t six_rows[3] = {16, 6, 2};
  FAILS(mmb_copy_nd(d, zero, bad_pitch, s, zero, pitch, 3, six_rows), MMB_INVALID_ARG);
  size_t huge_off[3] = {0, 0, SIZE_MAX / 64};
  FAILS(mmb_copy_nd(d, huge_off, pitch, s, zero, pitch, 3, dims), MMB_OVERFLOW);
  /* 1-D needs no pitch */
  size_t w = 100;
  OK(mmb_copy_nd(d, zero, NULL, s, zero, NULL, 1, &w));
  OK(mmb_free(s));
  OK(mmb_free(d));
  OK(mmb_interface_destroy(iface));
}

/* The reference: element by element, straight from the documented units. */
static void reference_copy(unsigned char *d, const size_t *doff, const size_t *dpitch,
                           const unsigned char *s, const size_t *soff, const size_t *spitch,
                           size_t ndims, const size_t *dims) {
  size_t idx[MMB_MAX_DIMS] = {0};
  for (;;) {
    size_t da = doff[0] + idx[0], sa = soff[0] + idx[0];
    for (size_t k = 1; k < ndims; k++) {
      da += (doff[k] + idx[k]) * dpitch[k - 1];
      sa += (soff[k] + idx[k]) * spitch[k - 1];
    }
    d[da] = s[sa];
    size_t k = 0;
    while (k < ndims && ++idx[k] == dims[k]) idx[k++] = 0;
    if (k == ndims) return;
  }
}

/* Random shapes: an array of extents ext[k] (+ padding) on each side, a box
   inside both. Contiguous cases are made often, to exercise the folding. */
static void random_side(uint64_t *rng, size_t ndims, const size_t *dims, size_t *off,
                        size_t *pitch, size_t *bytes) {
  size_t unit = 1;
  for (size_t k = 0; k < ndims; k++) {
    bool tight = test_rand(rng) % 3 == 0;
    off[k] = tight ? 0 : test_rand(rng) % 3;
    size_t extent = off[k] + dims[k] + (tight ? 0 : test_rand(rng) % 3);
    unit *= extent;
    pitch[k] = unit;   /* pitch[k] is the stride of dim k+1 */
  }
  *bytes = unit;
}

MMB_TEST(copy, nd_matches_the_reference_on_random_shapes) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_DEFAULT, 0);
  uint64_t rng = 20261122;
  for (int iter = 0; iter < 400; iter++) {
    size_t ndims = 1 + test_rand(&rng) % 5, dims[MMB_MAX_DIMS];
    for (size_t k = 0; k < ndims; k++) dims[k] = 1 + test_rand(&rng) % (k == 0 ? 40 : 5);
    size_t doff[MMB_MAX_DIMS], dpitch[MMB_MAX_DIMS], soff[MMB_MAX_DIMS], spitch[MMB_MAX_DIMS];
    size_t dbytes, sbytes;
    random_side(&rng, ndims, dims, doff, dpitch, &dbytes);
    random_side(&rng, ndims, dims, soff, spitch, &sbytes);
    mmbAllocation *s = alloc_pattern(iface, sbytes, iter), *d = alloc_pattern(iface, dbytes, ~iter);
    unsigned char *expect = malloc(dbytes);
    memcpy(expect, mmb_allocation_ptr(d), dbytes);
    reference_copy(expect, doff, dpitch, mmb_allocation_ptr(s), soff, spitch, ndims, dims);
    OK(mmb_copy_nd(d, doff, dpitch, s, soff, spitch, ndims, dims));
    cr_assert_eq(memcmp(expect, mmb_allocation_ptr(d), dbytes), 0, "iteration %d, %zu dims", iter,
                 ndims);
    if (ndims == 2) {   /* copy_2d is the same copy */
      memcpy(mmb_allocation_ptr(d), expect, dbytes);
      OK(mmb_copy_2d(d, doff[0], doff[1], dpitch[0], s, soff[0], soff[1], spitch[0], dims[0], dims[1]));
      cr_assert_eq(memcmp(expect, mmb_allocation_ptr(d), dbytes), 0);
    }
    free(expect);
    OK(mmb_free(s));
    OK(mmb_free(d));
  }
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(copy, between_providers_and_spaces) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemInterface *pin = test_interface(MMB_PROVIDER_PINNED, 0);
  mmbMemSpace *lim;
  mmbMemSpaceConfig cfg = {.size_limit = 1 << 20};
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &cfg, &lim));
  mmbMemInterface *small;
  OK(mmb_request_interface(lim, NULL, &small));
  mmbAllocation *a = alloc_pattern(sys, 64 * 64, 1), *b = alloc_pattern(pin, 64 * 64, 2);
  mmbAllocation *c = alloc_pattern(small, 64 * 64, 3);
  OK(mmb_copy(b, a));
  OK(mmb_copy(c, b));
  cr_assert_eq(memcmp(mmb_allocation_ptr(a), mmb_allocation_ptr(c), 64 * 64), 0);
  OK(mmb_free(a));
  OK(mmb_free(b));
  OK(mmb_free(c));
  OK(mmb_interface_destroy(sys));
  OK(mmb_interface_destroy(pin));
  OK(mmb_interface_destroy(small));
}

/* ---- the host engine: streaming stores and split copies -------------------- */

/* Streams from the first byte (MMB_COPY_NT_BYTES=1) and splits from 4 MiB
   over 3 threads: every shape, offset and width lands exactly as memmove
   would put it, and nothing outside the destination changes. */
Test(copy_engine, streamed_and_split_copies_land_exactly) {
  setenv("MMB_COPY_NT_BYTES", "1", 1);
  setenv("MMB_COPY_THREADS", "3", 1);
  mmbOptions quiet = {.log_level = MMB_LOG_OFF};
  cr_assert_eq(mmb_init(&quiet), MMB_OK);
  mmbMemSpace *dram;
  mmbMemInterface *iface;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  OK(mmb_request_interface(dram, NULL, &iface));
  size_t span = (size_t)12 << 20;
  mmbAllocation *a, *b;
  OK(mmb_allocate(span, iface, &a));
  OK(mmb_allocate(span, iface, &b));
  unsigned char *s = mmb_allocation_ptr(a), *d = mmb_allocation_ptr(b);
  unsigned char *want = malloc(span);
  cr_assert_not_null(want);
  for (size_t i = 0; i < span; i++) s[i] = (unsigned char)(i * 131 + 7);
  /* (width, pitch, rows, dst offset, src offset): rows narrower and wider than
     the streaming minimum, misaligned both sides, and past 4 MiB to split */
  const size_t shapes[][5] = {
      {1, 1, 1, 0, 0},           {255, 300, 7, 3, 1},      {256, 320, 1000, 5, 9},
      {4097, 5000, 33, 17, 63},  {64 << 10, 80 << 10, 70, 1, 2},
      {(5 << 20) + 3, 0, 1, 13, 29},   {1000, 1024, 6000, 24, 0},
  };
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    size_t w = shapes[k][0], p = shapes[k][1] ? shapes[k][1] : w, rows = shapes[k][2];
    size_t doff = shapes[k][3], soff = shapes[k][4];
    memset(d, 0xEE, span);
    memset(want, 0xEE, span);
    for (size_t r = 0; r < rows; r++) memcpy(want + doff + r * p, s + soff + r * p, w);
    if (rows == 1) OK(mmb_copy_1d(b, doff, a, soff, w));
    else OK(mmb_copy_2d(b, doff, 0, p, a, soff, 0, p, w, rows));
    cr_assert(memcmp(d, want, span) == 0, "shape %zu (%zu x %zu, pitch %zu)", k, w, rows, p);
  }
  free(want);
  OK(mmb_free(a));
  OK(mmb_free(b));
  OK(mmb_interface_destroy(iface));
  cr_assert_eq(mmb_finalize(), MMB_OK);
  ASSERT_NO_LEAKS();
}

/* An interface's copy_threads: checked, and used for its copies: one run
   and rows, neither a whole number of the chunks the threads are dealt,
   land where they belong (random bytes: a chunk copied to the wrong
   place, or twice, or not at all, shows). */
MMB_TEST(copy, copy_threads_of_an_interface) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface;
  FAILS(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.copy_threads = 65}, &iface),
        MMB_INVALID_ARG);
  OK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.copy_threads = 2}, &iface));
  size_t n = ((size_t)9 << 20) + 100;
  mmbAllocation *a, *b;
  OK(mmb_allocate(n, iface, &a));
  OK(mmb_allocate(n, iface, &b));
  char *pa = mmb_allocation_ptr(a), *pb = mmb_allocation_ptr(b);
  fill_pattern(pa, n, 11);
  memset(pb, 0, n);
  OK(mmb_copy(b, a));
  cr_assert(memcmp(pa, pb, n) == 0);
  /* rows of 3000 bytes, 4100 apart: the gaps stay as they were */
  size_t width = 3000, pitch = 4100, rows = n / pitch;
  memset(pb, 0, n);
  OK(mmb_copy_2d(b, 0, 0, pitch, a, 0, 0, pitch, width, rows));
  for (size_t r = 0; r < rows; r++) {
    cr_assert(memcmp(pb + r * pitch, pa + r * pitch, width) == 0, "row %zu", r);
    for (size_t k = width; k < pitch; k++) cr_assert_eq(pb[r * pitch + k], 0, "row %zu gap", r);
  }
  OK(mmb_free(a));
  OK(mmb_free(b));
  OK(mmb_interface_destroy(iface));
}

/* The engine deals an index in order, in whole units of about
   MMB__DEAL_BYTES, each once; a part alone takes all that is left. */
MMB_TEST(copy, engine_deals_each_chunk_once) {
  mmb__engine_deal d;
  size_t n = 1000003, lo, hi, at = 0, chunks = 0;
  mmb__engine_deal_init(&d, n, 64, 24);   /* 24 bytes an index */
  cr_assert_eq(d.chunk % 64, 0);
  cr_assert(d.chunk * 24 <= MMB__DEAL_BYTES && (d.chunk + 64) * 24 > MMB__DEAL_BYTES,
            "chunk %zu", d.chunk);
  while (mmb__engine_deal_next(&d, 2, &lo, &hi)) {
    cr_assert_eq(lo, at);
    cr_assert_eq(hi, mmb__min(lo + d.chunk, n));
    at = hi, chunks++;
  }
  cr_assert_eq(at, n);
  cr_assert_eq(chunks, (n + d.chunk - 1) / d.chunk);
  cr_assert(!mmb__engine_deal_next(&d, 2, &lo, &hi));
  mmb__engine_deal_init(&d, n, 64, 24);
  cr_assert(mmb__engine_deal_next(&d, 2, &lo, &hi) && lo == 0 && hi == d.chunk);
  cr_assert(mmb__engine_deal_next(&d, 1, &lo, &hi) && lo == d.chunk && hi == n);
  cr_assert(!mmb__engine_deal_next(&d, 1, &lo, &hi));
  mmb__engine_deal_init(&d, 10, 1, (size_t)4 << 20);   /* an index wider than a chunk: one each */
  cr_assert_eq(d.chunk, 1);
  mmb__engine_deal_init(&d, 0, 64, 1);
  cr_assert(!mmb__engine_deal_next(&d, 2, &lo, &hi));
}

/* Work split over the engine's helpers is dealt as each part asks: a
   part that runs slower takes fewer chunks, and every chunk is taken
   once. (Halves fixed in advance would give each part 16.) */
typedef struct slow_split {
  mmb__engine_deal deal;
  atomic_uint taken[2], parts;
  unsigned char seen[32];
} slow_split;

static void slow_first_part(void *arg, unsigned i, unsigned parts) {
  slow_split *s = arg;
  size_t lo, hi;
  atomic_store(&s->parts, parts);
  while (mmb__engine_deal_next(&s->deal, parts, &lo, &hi)) {
    for (size_t k = lo; k < hi; k++) s->seen[k]++;   /* (chunks are disjoint) */
    atomic_fetch_add(&s->taken[i], 1);
    if (i == 0) usleep(20000);
  }
}

MMB_TEST(copy, split_work_goes_to_the_faster_part) {
  slow_split s = {0};
  mmb__engine_deal_init(&s.deal, 32, 1, MMB__DEAL_BYTES);   /* 32 chunks of one index */
  mmb__engine_split(slow_first_part, &s, 2, -1);
  cr_assert_eq(atomic_load(&s.parts), 2, "the split had a helper");
  for (size_t k = 0; k < 32; k++) cr_assert_eq(s.seen[k], 1, "index %zu", k);
  unsigned slow = atomic_load(&s.taken[0]), fast = atomic_load(&s.taken[1]);
  cr_assert_eq(slow + fast, 32);
  cr_assert_gt(fast, slow, "the slow part took %u of 32", slow);
}

Test(copy_engine, malformed_environment_fails_init) {
  const char *bad[][2] = {{"MMB_COPY_NT_BYTES", "lots"}, {"MMB_COPY_THREADS", "0"},
                          {"MMB_COPY_THREADS", "65"}, {"MMB_COPY_THREADS", "two"}};
  mmbOptions quiet = {.log_level = MMB_LOG_OFF};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv(bad[i][0], bad[i][1], 1);
    cr_assert_eq(mmb_init(&quiet), MMB_INVALID_ARG, "%s=%s", bad[i][0], bad[i][1]);
    unsetenv(bad[i][0]);
  }
  setenv("MMB_COPY_NT_BYTES", "0", 1);   /* never stream: allowed */
  cr_assert_eq(mmb_init(&quiet), MMB_OK);
  cr_assert_eq(mmb_finalize(), MMB_OK);
}
