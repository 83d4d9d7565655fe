/* The host kernels: OpenBLAS's cblas_sgemm for every matrix product, plain
   loops for the rest, written so that the compiler vectorizes them (restrict
   pointers, the common shapes as constants). */
#include "ops.h"

#include <cblas.h>
#ifdef __AVX512BW__
#include <immintrin.h>
#endif
#include <float.h>
#include <math.h>
#include <string.h>

/* OpenBLAS's own entry points (the reference BLAS has none: linking fails
   rather than silently running it). */
void openblas_set_num_threads(int num_threads);
char *openblas_get_config(void);

const char *cnn_blas_config(void) { return openblas_get_config(); }

static void gemm(void *ctx, bool ta, bool tb, size_t m, size_t n, size_t k, float alpha,
                 const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
                 size_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta,
              c, (int)ldc);
}

static void bytes_to_float(void *ctx, const uint8_t *restrict src, size_t n, float scale,
                           float *restrict dst) {
  for (size_t i = 0; i < n; i++) dst[i] = (float)src[i] * scale;
}

/* Row (c, ky, kx) of a sample's col holds, for each output row oy, a run of
   ow input pixels: a copy at stride 1. */
static void im2col(void *ctx, const float *restrict x, const cnn_window *w, float *restrict col) {
  size_t s = w->stride, ow = w->ow;
  for (size_t b = 0; b < w->batch; b++)
    for (size_t c = 0; c < w->c; c++) {
      const float *plane = x + (b * w->c + c) * w->h * w->w;
      for (size_t ky = 0; ky < w->k; ky++)
        for (size_t kx = 0; kx < w->k; kx++)
          for (size_t oy = 0; oy < w->oh; oy++, col += ow) {
            const float *src = plane + (oy * s + ky) * w->w + kx;
            if (s == 1) memcpy(col, src, ow * sizeof *col);
            else for (size_t ox = 0; ox < ow; ox++) col[ox] = src[ox * s];
          }
    }
}

static void col2im(void *ctx, const float *restrict dcol, const cnn_window *w, float *restrict dx) {
  size_t s = w->stride, ow = w->ow;
  memset(dx, 0, w->batch * w->c * w->h * w->w * sizeof *dx);
  for (size_t b = 0; b < w->batch; b++)
    for (size_t c = 0; c < w->c; c++) {
      float *plane = dx + (b * w->c + c) * w->h * w->w;
      for (size_t ky = 0; ky < w->k; ky++)
        for (size_t kx = 0; kx < w->k; kx++)
          for (size_t oy = 0; oy < w->oh; oy++, dcol += ow) {
            float *dst = plane + (oy * s + ky) * w->w + kx;
            for (size_t ox = 0; ox < ow; ox++) dst[ox * s] += dcol[ox];
          }
    }
}

static void add_bias(void *ctx, float *restrict y, size_t batch, size_t channels, size_t plane,
                     const float *restrict b) {
  for (size_t n = 0; n < batch; n++)
    for (size_t c = 0; c < channels; c++, y += plane) {
      float v = b[c];
      for (size_t p = 0; p < plane; p++) y[p] += v;
    }
}

/* Sums of planes with 16 partial sums, so the compiler can vectorize
   (a single float accumulator is a chain it may not reorder). */
static float plane_sum(const float *restrict x, size_t n) {
  enum { LANES = 16 };
  float part[LANES] = {0};
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (size_t j = 0; j < LANES; j++) part[j] += x[i + j];
  float sum = 0;
  for (; i < n; i++) sum += x[i];
  for (size_t j = 0; j < LANES; j++) sum += part[j];
  return sum;
}

static void sum_bias(void *ctx, const float *restrict dy, size_t batch, size_t channels,
                     size_t plane, bool accumulate, float *restrict db) {
  if (!accumulate) memset(db, 0, channels * sizeof *db);
  if (plane == 1) {   /* a dense layer: column sums */
    for (size_t n = 0; n < batch; n++, dy += channels)
      for (size_t c = 0; c < channels; c++) db[c] += dy[c];
    return;
  }
  for (size_t n = 0; n < batch; n++)
    for (size_t c = 0; c < channels; c++, dy += plane) db[c] += plane_sum(dy, plane);
}

static void relu(void *ctx, const float *x, size_t n, float *y) {
  for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static void relu_backward(void *ctx, const float *y, const float *dy, size_t n, float *dx) {
  for (size_t i = 0; i < n; i++) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/* The common 2x2 window: two input rows give one output row. The maximum
   of each pair, then of the two pairs, with strict comparisons: of equal
   values the first wins, as in the general loop. With AVX-512, 16 outputs
   at a time (the pairs split into even and odd lanes by permutes); else
   branch-free scalar code. */
#ifdef __AVX512BW__
static void pool_row_2x2(const float *r0, const float *r1, size_t ow, float *y, uint8_t *arg) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (size_t ox = 0; ox < ow; ox += 16) {
    size_t n = ow - ox < 16 ? ow - ox : 16, in = 2 * n;
    __mmask16 lo = in >= 16 ? 0xffff : (__mmask16)((1u << in) - 1);
    __mmask16 hi = in > 16 ? (__mmask16)((1u << (in - 16)) - 1) : 0, out = (__mmask16)((1u << n) - 1);
    __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ox), a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ox + 16);
    __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ox), b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ox + 16);
    __m512 a = _mm512_permutex2var_ps(a0, even, a1), b = _mm512_permutex2var_ps(a0, odd, a1);
    __m512 c = _mm512_permutex2var_ps(b0, even, b1), d = _mm512_permutex2var_ps(b0, odd, b1);
    __mmask16 ab = _mm512_cmp_ps_mask(b, a, _CMP_GT_OQ), cd = _mm512_cmp_ps_mask(d, c, _CMP_GT_OQ);
    __m512 top = _mm512_mask_blend_ps(ab, a, b), bottom = _mm512_mask_blend_ps(cd, c, d);
    __mmask16 lower = _mm512_cmp_ps_mask(bottom, top, _CMP_GT_OQ);
    __m512i at_top = _mm512_maskz_set1_epi32(ab, 1);
    __m512i at_bottom = _mm512_mask_blend_epi32(cd, _mm512_set1_epi32(2), _mm512_set1_epi32(3));
    _mm512_mask_storeu_ps(y + ox, out, _mm512_mask_blend_ps(lower, top, bottom));
    _mm_mask_storeu_epi8(arg + ox, out,
                         _mm512_cvtepi32_epi8(_mm512_mask_blend_epi32(lower, at_top, at_bottom)));
  }
}

static void unpool_row_2x2(const float *dy, const uint8_t *arg, size_t ow, float *r0, float *r1) {
  const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8));
  for (size_t ox = 0; ox < ow; ox += 16) {
    size_t n = ow - ox < 16 ? ow - ox : 16, in = 2 * n;
    __mmask16 out = (__mmask16)((1u << n) - 1);
    __mmask16 lo = in >= 16 ? 0xffff : (__mmask16)((1u << in) - 1);
    __mmask16 hi = in > 16 ? (__mmask16)((1u << (in - 16)) - 1) : 0;
    __m512 g = _mm512_maskz_loadu_ps(out, dy + ox);
    __m512i at = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(out, arg + ox));
    float *rows[2] = {r0, r1};
    for (int r = 0; r < 2; r++) {
      __m512 e = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(at, _mm512_set1_epi32(2 * r)), g);
      __m512 o = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(at, _mm512_set1_epi32(2 * r + 1)), g);
      _mm512_mask_storeu_ps(rows[r] + 2 * ox, lo, _mm512_permutex2var_ps(e, first, o));
      _mm512_mask_storeu_ps(rows[r] + 2 * ox + 16, hi, _mm512_permutex2var_ps(e, second, o));
    }
  }
}
#else
static void pool_row_2x2(const float *r0, const float *r1, size_t ow, float *y, uint8_t *arg) {
  for (size_t ox = 0; ox < ow; ox++) {
    float a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
    int ab = b > a, cd = d > c;
    float top = ab ? b : a, bottom = cd ? d : c;
    int lower = bottom > top;
    y[ox] = lower ? bottom : top;
    arg[ox] = (uint8_t)(lower * (2 + cd) + (1 - lower) * ab);
  }
}

static void unpool_row_2x2(const float *dy, const uint8_t *arg, size_t ow, float *r0, float *r1) {
  for (size_t ox = 0; ox < ow; ox++) {
    float g = dy[ox];
    unsigned at = arg[ox];
    r0[2 * ox] = at == 0 ? g : 0.0f;
    r0[2 * ox + 1] = at == 1 ? g : 0.0f;
    r1[2 * ox] = at == 2 ? g : 0.0f;
    r1[2 * ox + 1] = at == 3 ? g : 0.0f;
  }
}
#endif

static void maxpool_2x2(const float *restrict x, const cnn_window *w, float *restrict y,
                        uint8_t *restrict arg) {
  for (size_t plane = 0; plane < w->batch * w->c; plane++) {
    const float *in = x + plane * w->h * w->w;
    for (size_t oy = 0; oy < w->oh; oy++, y += w->ow, arg += w->ow)
      pool_row_2x2(in + 2 * oy * w->w, in + (2 * oy + 1) * w->w, w->ow, y, arg);
  }
}

static void maxpool(void *ctx, const float *restrict x, const cnn_window *w, float *restrict y,
                    uint8_t *restrict arg) {
  if (w->k == 2 && w->stride == 2) {
    maxpool_2x2(x, w, y, arg);
    return;
  }
  for (size_t plane = 0; plane < w->batch * w->c; plane++) {
    const float *in = x + plane * w->h * w->w;
    for (size_t oy = 0; oy < w->oh; oy++)
      for (size_t ox = 0; ox < w->ow; ox++) {
        const float *src = in + oy * w->stride * w->w + ox * w->stride;
        float best = -FLT_MAX;
        uint8_t at = 0;
        for (size_t ky = 0; ky < w->k; ky++)
          for (size_t kx = 0; kx < w->k; kx++)
            if (src[ky * w->w + kx] > best) {
              best = src[ky * w->w + kx];
              at = (uint8_t)(ky * w->k + kx);
            }
        *y++ = best;
        *arg++ = at;
      }
  }
}

/* 2x2 windows that cover the input: every input element is written once. */
static void maxpool_backward_2x2(const float *restrict dy, const uint8_t *restrict arg,
                                 const cnn_window *w, float *restrict dx) {
  for (size_t plane = 0; plane < w->batch * w->c; plane++) {
    float *out = dx + plane * w->h * w->w;
    for (size_t oy = 0; oy < w->oh; oy++, dy += w->ow, arg += w->ow)
      unpool_row_2x2(dy, arg, w->ow, out + 2 * oy * w->w, out + (2 * oy + 1) * w->w);
  }
}

/* Windows do not overlap (stride = k): each input gets at most one value. */
static void maxpool_backward(void *ctx, const float *restrict dy, const uint8_t *restrict arg,
                             const cnn_window *w, float *restrict dx) {
  if (w->k == 2 && w->stride == 2 && w->h == 2 * w->oh && w->w == 2 * w->ow) {
    maxpool_backward_2x2(dy, arg, w, dx);
    return;
  }
  memset(dx, 0, w->batch * w->c * w->h * w->w * sizeof *dx);
  for (size_t plane = 0; plane < w->batch * w->c; plane++) {
    float *out = dx + plane * w->h * w->w;
    for (size_t oy = 0; oy < w->oh; oy++)
      for (size_t ox = 0; ox < w->ow; ox++, arg++, dy++) {
        size_t ky = *arg / w->k, kx = *arg % w->k;
        out[(oy * w->stride + ky) * w->w + ox * w->stride + kx] = *dy;
      }
  }
}

static size_t row_argmax(const float *z, size_t classes) {
  size_t best = 0;
  for (size_t j = 1; j < classes; j++)
    if (z[j] > z[best]) best = j;
  return best;
}

static void softmax_xent(void *ctx, const float *logits, const uint8_t *labels, size_t rows,
                         size_t classes, size_t norm, float *dlogits, float *out) {
  double loss = 0;
  size_t correct = 0;
  float inv_rows = 1.0f / (float)norm;
  for (size_t r = 0; r < rows; r++) {
    const float *z = logits + r * classes;
    float *d = dlogits + r * classes;
    size_t top = row_argmax(z, classes);
    float zmax = z[top], sum = 0;
    for (size_t j = 0; j < classes; j++) sum += d[j] = expf(z[j] - zmax);
    float inv = 1.0f / sum;
    for (size_t j = 0; j < classes; j++) d[j] *= inv;
    loss -= log((double)d[labels[r]] > 1e-30 ? (double)d[labels[r]] : 1e-30);
    d[labels[r]] -= 1.0f;
    for (size_t j = 0; j < classes; j++) d[j] *= inv_rows;
    correct += top == labels[r];
  }
  out[0] += (float)loss;
  out[1] += (float)correct;
}

static void count_correct(void *ctx, const float *logits, const uint8_t *labels, size_t rows,
                          size_t classes, float *out) {
  size_t correct = 0;
  for (size_t r = 0; r < rows; r++) correct += row_argmax(logits + r * classes, classes) == labels[r];
  out[1] += (float)correct;
}

static void sgd(void *ctx, float *restrict w, const float *restrict g, float *restrict v,
                size_t rows, size_t cols, size_t ld, float lr, float momentum) {
  for (size_t r = 0; r < rows; r++, w += ld, g += ld) {
    if (v) {
      for (size_t j = 0; j < cols; j++) {
        v[j] = momentum * v[j] + g[j];
        w[j] -= lr * v[j];
      }
      v += ld;
    } else {
      for (size_t j = 0; j < cols; j++) w[j] -= lr * g[j];
    }
  }
}

static void zero(void *ctx, float *x, size_t n) { memset(x, 0, n * sizeof *x); }
static void read_host(void *ctx, const float *src, size_t n, float *host) {
  memcpy(host, src, n * sizeof *host);
}
static void sync_nothing(void *ctx) {}

static const cnn_ops cpu_ops = {
  .name = "cpu",
  .gemm = gemm,
  .bytes_to_float = bytes_to_float,
  .im2col = im2col,
  .col2im = col2im,
  .add_bias = add_bias,
  .sum_bias = sum_bias,
  .relu = relu,
  .relu_backward = relu_backward,
  .maxpool = maxpool,
  .maxpool_backward = maxpool_backward,
  .softmax_xent = softmax_xent,
  .count_correct = count_correct,
  .sgd = sgd,
  .zero = zero,
  .read = read_host,
  .sync = sync_nothing,
};

const cnn_ops *cnn_ops_cpu(int threads) {
  if (threads > 0) openblas_set_num_threads(threads);
  return &cpu_ops;
}
