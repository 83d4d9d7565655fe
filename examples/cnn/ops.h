/* The kernels the CNN runs, behind one table with two implementations:
   ops_cpu.c (OpenBLAS cblas_sgemm and plain loops, on host tiers) and
   ops_gpu.cu (cuBLAS and small CUDA kernels, on the stream of an mmb
   CUDA-stream queue). Layers call only these, so a layer is written once for
   both. Pointers are in the memory the table computes on (host or device).

   Conventions: matrices are row-major with a leading dimension (ld) in
   elements; activations are NCHW ([batch, channels, height, width], as in
   PyTorch), so that a flattened sample is one contiguous row and each
   channel of a sample one contiguous plane. */
#ifndef CNN_OPS_H
#define CNN_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A 2-D convolution or pooling window over NCHW input: `k` x `k`, stride
   `stride`, no padding. */
typedef struct cnn_window {
  size_t batch, c, h, w;   /* input */
  size_t k, stride;
  size_t oh, ow;           /* output rows and columns */
} cnn_window;

typedef struct cnn_ops {
  const char *name;   /* "cpu (OpenBLAS ...)" or "gpu (cuBLAS ...)" */
  void *ctx;
  /* C[MxN] = alpha op(A) op(B) + beta C, row-major; op transposes when t*. */
  void (*gemm)(void *ctx, bool ta, bool tb, size_t m, size_t n, size_t k, float alpha,
               const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
               size_t ldc);
  /* dst[i] = src[i] * scale */
  void (*bytes_to_float)(void *ctx, const uint8_t *src, size_t n, float scale, float *dst);
  /* col[b][(c, ky, kx)][(oy, ox)] = x[b][c][oy*s + ky][ox*s + kx]: per sample
     a (c k k) x (oh ow) matrix, whose rows are runs of input pixels. */
  void (*im2col)(void *ctx, const float *x, const cnn_window *w, float *col);
  /* dx = the adjoint of im2col applied to dcol (dx is overwritten) */
  void (*col2im)(void *ctx, const float *dcol, const cnn_window *w, float *dx);
  /* y[n][c][p] += b[c] for n < batch, c < channels, p < plane (a dense
     layer's bias: plane 1) */
  void (*add_bias)(void *ctx, float *y, size_t batch, size_t channels, size_t plane,
                   const float *b);
  /* db[c] = sum over n and p of dy[n][c][p]; with accumulate, db[c] += it
     (a batch's later chunk of samples, summed in the same order) */
  void (*sum_bias)(void *ctx, const float *dy, size_t batch, size_t channels, size_t plane,
                   bool accumulate, float *db);
  /* y = max(x, 0) (y may be x) */
  void (*relu)(void *ctx, const float *x, size_t n, float *y);
  /* dx = y > 0 ? dy : 0 (dx may be dy) */
  void (*relu_backward)(void *ctx, const float *y, const float *dy, size_t n, float *dx);
  /* y = max over each window (stride = k); arg = its position ky * k + kx */
  void (*maxpool)(void *ctx, const float *x, const cnn_window *w, float *y, uint8_t *arg);
  /* dx = dy routed to the positions arg recorded, zero elsewhere */
  void (*maxpool_backward)(void *ctx, const float *dy, const uint8_t *arg, const cnn_window *w,
                           float *dx);
  /* Softmax cross-entropy of `rows` rows of `classes` logits: dlogits =
     (softmax - onehot(label)) / norm (norm: the batch's rows, over every rank
     when the batch is split across ranks); out[0] += summed loss, out[1] +=
     correct predictions (out is in the table's memory; read it with read). */
  void (*softmax_xent)(void *ctx, const float *logits, const uint8_t *labels, size_t rows,
                       size_t classes, size_t norm, float *dlogits, float *out);
  /* argmax per row only (evaluation): out[1] += correct predictions */
  void (*count_correct)(void *ctx, const float *logits, const uint8_t *labels, size_t rows,
                        size_t classes, float *out);
  /* SGD on a rows x cols block (ld in elements, shared by w, g and v):
     v = momentum v + g (when v); w -= lr (v or g) */
  void (*sgd)(void *ctx, float *w, const float *g, float *v, size_t rows, size_t cols,
              size_t ld, float lr, float momentum);
  /* x[0..n) = 0 */
  void (*zero)(void *ctx, float *x, size_t n);
  /* Copies n floats of the table's memory to the host, once the work before
     it is done (a device table synchronizes its stream). */
  void (*read)(void *ctx, const float *src, size_t n, float *host);
  /* Waits for everything the table has been asked to do. */
  void (*sync)(void *ctx);
} cnn_ops;

/* The host table; `threads` OpenBLAS threads (0: OpenBLAS's default). */
const cnn_ops *cnn_ops_cpu(int threads);
/* OpenBLAS's build string (to show that it is OpenBLAS, not the reference BLAS). */
const char *cnn_blas_config(void);

/* The device table on `stream` (a cudaStream_t, from mmb_queue_get_native),
   NULL when built without CUDA or when cuBLAS cannot start. */
const cnn_ops *cnn_ops_gpu(void *stream, char *why, size_t why_len);
void cnn_ops_gpu_destroy(const cnn_ops *ops);

#ifdef __cplusplus
}
#endif

#endif /* CNN_OPS_H */
