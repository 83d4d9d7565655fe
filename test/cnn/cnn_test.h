/* Shared by the CNN's tests: mmb around each test, a host memory plan, and
   data sets made in memory (no network, no files but the test's own). */
#ifndef CNN_TEST_H
#define CNN_TEST_H

#include "../common.h"
#include "train.h"

#include <stdio.h>

/* A plan on the host with `fast_limit` bytes for parameters. */
/* A plan on the host: the hand plan (resident if everything fits, else
   streamed), or another mode. */
static inline cnn_plan test_plan_mode(size_t fast_limit, cnn_plan_mode mode) {
  cnn_plan plan;
  char err[256] = "";
  mmbError e = cnn_plan_create(
      &(cnn_plan_options){.mode = mode, .fast_limit = fast_limit, .threads = 1}, &plan, err,
      sizeof err);
  cr_assert_eq(e, MMB_OK, "cnn_plan_create: %s", err);
  return plan;
}
static inline cnn_plan test_plan(size_t fast_limit) {
  return test_plan_mode(fast_limit, CNN_PLAN_STREAMED);
}

static inline void be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* IDX bytes of n images of h x w (from pixels) and of their labels. */
typedef struct idx_bytes {
  unsigned char *images, *labels;
  size_t images_len, labels_len;
} idx_bytes;

static inline idx_bytes idx_make(size_t n, size_t h, size_t w, const unsigned char *pixels,
                                 const unsigned char *labels) {
  idx_bytes b = {.images_len = 16 + n * h * w, .labels_len = 8 + n};
  b.images = malloc(b.images_len);
  b.labels = malloc(b.labels_len);
  cr_assert(b.images && b.labels);
  be32(b.images, 0x803);
  be32(b.images + 4, (uint32_t)n);
  be32(b.images + 8, (uint32_t)h);
  be32(b.images + 12, (uint32_t)w);
  memcpy(b.images + 16, pixels, n * h * w);
  be32(b.labels, 0x801);
  be32(b.labels + 4, (uint32_t)n);
  memcpy(b.labels + 8, labels, n);
  return b;
}

static inline void idx_free(idx_bytes *b) {
  free(b->images);
  free(b->labels);
}

/* A separable set: class c is a bright 2x2 block at its own place in an
   8x8 image, over faint noise (fixed seed). */
static inline cnn_dataset separable_set(size_t n, uint64_t seed, mmbMemInterface *home) {
  enum { H = 8, W = 8 };
  unsigned char *px = malloc(n * H * W), *lab = malloc(n);
  cr_assert(px && lab);
  for (size_t i = 0; i < n; i++) {
    unsigned c = (unsigned)(test_rand(&seed) % 10);
    lab[i] = (unsigned char)c;
    unsigned char *img = px + i * H * W;
    for (size_t j = 0; j < H * W; j++) img[j] = (unsigned char)(test_rand(&seed) % 48);
    size_t r0 = 2 * (c / 4), c0 = 2 * (c % 4);
    for (size_t dy = 0; dy < 2; dy++)
      for (size_t dx = 0; dx < 2; dx++) img[(r0 + dy) * W + c0 + dx] = 220;
  }
  idx_bytes b = idx_make(n, H, W, px, lab);
  cnn_dataset ds;
  char err[256] = "";
  mmbError e = cnn_dataset_from_memory(b.images, b.images_len, b.labels, b.labels_len, 10, home,
                                       &ds, err, sizeof err);
  cr_assert_eq(e, MMB_OK, "%s", err);
  idx_free(&b);
  free(px);
  free(lab);
  return ds;
}

#endif /* CNN_TEST_H */
