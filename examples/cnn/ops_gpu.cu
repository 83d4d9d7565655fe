/* The device kernels: cuBLAS for every matrix product and small CUDA kernels
   for the rest, all on one stream (the native stream of an mmb CUDA-stream
   queue), so they run in the order the layers ask for them and after the
   queue's own work on that stream. Row-major products go to column-major
   cuBLAS as their transposes: C^T = op(B)^T op(A)^T. Built with nvcc only
   when CUDA is found. */
#include "ops.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

namespace {

struct gpu_ctx {
  cudaStream_t stream;
  cublasHandle_t blas;
  cnn_ops ops;
};

constexpr int THREADS = 256;

unsigned blocks_for(size_t n) {
  size_t b = (n + THREADS - 1) / THREADS;
  return (unsigned)(b < 65535 ? (b ? b : 1) : 65535);
}

gpu_ctx *ctx_of(void *ctx) { return static_cast<gpu_ctx *>(ctx); }

/* The example stops at the first CUDA error, with its message. */
void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    fprintf(stderr, "cnn: %s: %s\n", what, cudaGetErrorString(e));
    exit(1);
  }
}

void check_blas(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cnn: %s: cuBLAS status %d\n", what, (int)s);
    exit(1);
  }
}

#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); \
                               i += (size_t)gridDim.x * blockDim.x)

__global__ void k_bytes_to_float(const uint8_t *src, size_t n, float scale, float *dst) {
  GRID_STRIDE(i, n) dst[i] = (float)src[i] * scale;
}

/* col[b][(c, ky, kx)][(oy, ox)] */
__global__ void k_im2col(const float *x, cnn_window w, float *col) {
  size_t plane = w.oh * w.ow, taps = w.c * w.k * w.k, n = w.batch * taps * plane;
  GRID_STRIDE(i, n) {
    size_t at = i % plane, tap = (i / plane) % taps, b = i / (plane * taps);
    size_t ox = at % w.ow, oy = at / w.ow;
    size_t kx = tap % w.k, ky = (tap / w.k) % w.k, c = tap / (w.k * w.k);
    col[i] = x[((b * w.c + c) * w.h + oy * w.stride + ky) * w.w + ox * w.stride + kx];
  }
}

/* Gathers, for each input element, the taps of every window that holds it. */
__global__ void k_col2im(const float *dcol, cnn_window w, float *dx) {
  size_t n = w.batch * w.c * w.h * w.w, plane = w.oh * w.ow, taps = w.c * w.k * w.k;
  GRID_STRIDE(i, n) {
    size_t x = i % w.w, y = (i / w.w) % w.h, c = (i / (w.w * w.h)) % w.c, b = i / (w.w * w.h * w.c);
    float sum = 0;
    for (size_t ky = 0; ky < w.k && ky <= y; ky++) {
      if ((y - ky) % w.stride) continue;
      size_t oy = (y - ky) / w.stride;
      if (oy >= w.oh) continue;
      for (size_t kx = 0; kx < w.k && kx <= x; kx++) {
        if ((x - kx) % w.stride) continue;
        size_t ox = (x - kx) / w.stride;
        if (ox >= w.ow) continue;
        sum += dcol[(b * taps + (c * w.k + ky) * w.k + kx) * plane + oy * w.ow + ox];
      }
    }
    dx[i] = sum;
  }
}

__global__ void k_add_bias(float *y, size_t batch, size_t channels, size_t plane, const float *b) {
  GRID_STRIDE(i, batch * channels * plane) y[i] += b[(i / plane) % channels];
}

/* One block per channel. */
__global__ void k_sum_bias(const float *dy, size_t batch, size_t channels, size_t plane,
                           bool accumulate, float *db) {
  __shared__ float part[THREADS];
  size_t c = blockIdx.x, per = batch * plane;
  float s = 0;
  for (size_t j = threadIdx.x; j < per; j += blockDim.x)
    s += dy[((j / plane) * channels + c) * plane + j % plane];
  part[threadIdx.x] = s;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[c] = accumulate ? db[c] + part[0] : part[0];
}

__global__ void k_relu(const float *x, size_t n, float *y) {
  GRID_STRIDE(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void k_relu_backward(const float *y, const float *dy, size_t n, float *dx) {
  GRID_STRIDE(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void k_maxpool(const float *x, cnn_window w, float *y, uint8_t *arg) {
  GRID_STRIDE(i, w.batch * w.c * w.oh * w.ow) {
    size_t ox = i % w.ow, oy = (i / w.ow) % w.oh, plane = i / (w.ow * w.oh);
    const float *src = x + (plane * w.h + oy * w.stride) * w.w + ox * w.stride;
    float best = -FLT_MAX;
    uint8_t at = 0;
    for (size_t ky = 0; ky < w.k; ky++)
      for (size_t kx = 0; kx < w.k; kx++)
        if (src[ky * w.w + kx] > best) {
          best = src[ky * w.w + kx];
          at = (uint8_t)(ky * w.k + kx);
        }
    y[i] = best;
    arg[i] = at;
  }
}

/* Windows do not overlap (stride = k): a plain store per output. */
__global__ void k_maxpool_backward(const float *dy, const uint8_t *arg, cnn_window w, float *dx) {
  GRID_STRIDE(i, w.batch * w.c * w.oh * w.ow) {
    size_t ox = i % w.ow, oy = (i / w.ow) % w.oh, plane = i / (w.ow * w.oh);
    size_t ky = arg[i] / w.k, kx = arg[i] % w.k;
    dx[(plane * w.h + oy * w.stride + ky) * w.w + ox * w.stride + kx] = dy[i];
  }
}

__device__ size_t row_argmax(const float *z, size_t classes) {
  size_t best = 0;
  for (size_t j = 1; j < classes; j++)
    if (z[j] > z[best]) best = j;
  return best;
}

/* One thread per row. */
__global__ void k_softmax_xent(const float *logits, const uint8_t *labels, size_t rows,
                               size_t classes, size_t norm, float *dlogits, float *out) {
  GRID_STRIDE(r, rows) {
    const float *z = logits + r * classes;
    float *d = dlogits + r * classes;
    size_t top = row_argmax(z, classes);
    float zmax = z[top], sum = 0;
    for (size_t j = 0; j < classes; j++) sum += d[j] = expf(z[j] - zmax);
    float inv = 1.0f / sum, inv_rows = 1.0f / (float)norm;
    for (size_t j = 0; j < classes; j++) d[j] *= inv;
    atomicAdd(&out[0], -logf(fmaxf(d[labels[r]], 1e-30f)));
    d[labels[r]] -= 1.0f;
    for (size_t j = 0; j < classes; j++) d[j] *= inv_rows;
    if (top == labels[r]) atomicAdd(&out[1], 1.0f);
  }
}

__global__ void k_count_correct(const float *logits, const uint8_t *labels, size_t rows,
                                size_t classes, float *out) {
  GRID_STRIDE(r, rows) if (row_argmax(logits + r * classes, classes) == labels[r])
      atomicAdd(&out[1], 1.0f);
}

__global__ void k_sgd(float *w, const float *g, float *v, size_t rows, size_t cols, size_t ld,
                      float lr, float momentum) {
  GRID_STRIDE(i, rows * cols) {
    size_t at = (i / cols) * ld + i % cols;
    if (v) {
      v[at] = momentum * v[at] + g[at];
      w[at] -= lr * v[at];
    } else {
      w[at] -= lr * g[at];
    }
  }
}

void gemm(void *ctx, bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a,
          size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc) {
  check_blas(cublasSgemm(ctx_of(ctx)->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                         ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b,
                         (int)ldb, a, (int)lda, &beta, c, (int)ldc),
             "cublasSgemm");
}

/* A launch's own errors (a bad configuration) show at once; the kernel's at
   the next synchronizing call. */
#define LAUNCH(kernel, n, ...)                                              \
  do {                                                                      \
    kernel<<<blocks_for(n), THREADS, 0, ctx_of(ctx)->stream>>>(__VA_ARGS__); \
    check(cudaPeekAtLastError(), #kernel);                                  \
  } while (0)

void bytes_to_float(void *ctx, const uint8_t *src, size_t n, float scale, float *dst) {
  LAUNCH(k_bytes_to_float, n, src, n, scale, dst);
}
void im2col(void *ctx, const float *x, const cnn_window *w, float *col) {
  LAUNCH(k_im2col, w->batch * w->oh * w->ow * w->k * w->k * w->c, x, *w, col);
}
void col2im(void *ctx, const float *dcol, const cnn_window *w, float *dx) {
  LAUNCH(k_col2im, w->batch * w->h * w->w * w->c, dcol, *w, dx);
}
void add_bias(void *ctx, float *y, size_t batch, size_t channels, size_t plane, const float *b) {
  LAUNCH(k_add_bias, batch * channels * plane, y, batch, channels, plane, b);
}
void sum_bias(void *ctx, const float *dy, size_t batch, size_t channels, size_t plane,
              bool accumulate, float *db) {
  k_sum_bias<<<(unsigned)channels, THREADS, 0, ctx_of(ctx)->stream>>>(dy, batch, channels, plane,
                                                                     accumulate, db);
  check(cudaPeekAtLastError(), "k_sum_bias");
}
void relu(void *ctx, const float *x, size_t n, float *y) { LAUNCH(k_relu, n, x, n, y); }
void relu_backward(void *ctx, const float *y, const float *dy, size_t n, float *dx) {
  LAUNCH(k_relu_backward, n, y, dy, n, dx);
}
void maxpool(void *ctx, const float *x, const cnn_window *w, float *y, uint8_t *arg) {
  LAUNCH(k_maxpool, w->batch * w->oh * w->ow * w->c, x, *w, y, arg);
}
void maxpool_backward(void *ctx, const float *dy, const uint8_t *arg, const cnn_window *w,
                      float *dx) {
  check(cudaMemsetAsync(dx, 0, w->batch * w->h * w->w * w->c * sizeof *dx, ctx_of(ctx)->stream),
        "cudaMemsetAsync");
  LAUNCH(k_maxpool_backward, w->batch * w->oh * w->ow * w->c, dy, arg, *w, dx);
}
void softmax_xent(void *ctx, const float *logits, const uint8_t *labels, size_t rows,
                  size_t classes, size_t norm, float *dlogits, float *out) {
  LAUNCH(k_softmax_xent, rows, logits, labels, rows, classes, norm, dlogits, out);
}
void count_correct(void *ctx, const float *logits, const uint8_t *labels, size_t rows,
                   size_t classes, float *out) {
  LAUNCH(k_count_correct, rows, logits, labels, rows, classes, out);
}
void sgd(void *ctx, float *w, const float *g, float *v, size_t rows, size_t cols, size_t ld,
         float lr, float momentum) {
  LAUNCH(k_sgd, rows * cols, w, g, v, rows, cols, ld, lr, momentum);
}
void zero(void *ctx, float *x, size_t n) {
  check(cudaMemsetAsync(x, 0, n * sizeof *x, ctx_of(ctx)->stream), "cudaMemsetAsync");
}
void read_back(void *ctx, const float *src, size_t n, float *host) {
  cudaStream_t s = ctx_of(ctx)->stream;
  check(cudaMemcpyAsync(host, src, n * sizeof *host, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(s), "a kernel of the CNN");
}
void sync(void *ctx) { check(cudaStreamSynchronize(ctx_of(ctx)->stream), "a kernel of the CNN"); }

}  // namespace

extern "C" const cnn_ops *cnn_ops_gpu(void *stream, char *why, size_t why_len) {
  gpu_ctx *g = static_cast<gpu_ctx *>(calloc(1, sizeof *g));
  if (!g) {
    snprintf(why, why_len, "out of memory");
    return nullptr;
  }
  g->stream = static_cast<cudaStream_t>(stream);
  cublasStatus_t s = cublasCreate(&g->blas);
  if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetStream(g->blas, g->stream);
  if (s != CUBLAS_STATUS_SUCCESS) {
    snprintf(why, why_len, "cuBLAS did not start (status %d)", (int)s);
    if (g->blas) cublasDestroy(g->blas);
    free(g);
    return nullptr;
  }
  int version = 0;
  cublasGetVersion(g->blas, &version);
  static char name[64];
  snprintf(name, sizeof name, "gpu (cuBLAS %d)", version);
  g->ops = cnn_ops{name,           g,        gemm,           bytes_to_float, im2col,
                   col2im,         add_bias, sum_bias,       relu,           relu_backward,
                   maxpool,        maxpool_backward, softmax_xent, count_correct, sgd,
                   zero,           read_back, sync};
  return &g->ops;
}

extern "C" void cnn_ops_gpu_destroy(const cnn_ops *ops) {
  if (!ops) return;
  gpu_ctx *g = ctx_of(ops->ctx);
  cudaStreamSynchronize(g->stream);
  cublasDestroy(g->blas);
  free(g);
}
