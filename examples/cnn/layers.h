/* The layers: 2-D convolution (im2col + sgemm), ReLU, max-pooling and dense,
   each with a forward and a backward pass, plus the softmax cross-entropy
   loss. Activations are NCHW, one batch (or one chunk of a batch's
   samples) at a time. Forward allocates its outputs in the pass's region
   and keeps what backward needs (in p->keep when the pass gives one);
   backward allocates in the pass's (child) region. Weighted layers visit their
   weights tile by tile through the memory plan (cnn_tiles), so a layer does
   not know whether its weights are resident or streamed. */
#ifndef CNN_LAYERS_H
#define CNN_LAYERS_H

#include "plan.h"

typedef enum cnn_layer_kind { CNN_CONV, CNN_RELU, CNN_MAXPOOL, CNN_DENSE } cnn_layer_kind;

/* One sample's shape, stored channel by channel (NCHW); a dense layer's is 1 x 1 x n. */
typedef struct cnn_shape {
  size_t h, w, c;
} cnn_shape;

static inline size_t cnn_shape_size(cnn_shape s) { return s.h * s.w * s.c; }

/* Plain SGD with optional momentum (PyTorch's: v = m v + g; w -= lr v). */
typedef struct cnn_sgd {
  float lr, momentum;
} cnn_sgd;

/* A buffer that takes what forward keeps for backward, laid out for `rows`
   samples whatever the pass's batch: every chunk of a batch finds its
   activations at the same offsets (offload.h). */
typedef struct cnn_keep {
  unsigned char *base;
  size_t used, size, rows;
} cnn_keep;

/* One batch going through the layers. */
typedef struct cnn_pass {
  cnn_plan *plan;
  const cnn_ops *ops;
  mmbRegion *region;     /* where this pass allocates */
  size_t batch;          /* samples in this batch */
  const cnn_sgd *sgd;    /* backward: update each weight tile once its gradient is
                            known (after its part of dx); NULL: gradients only */
  size_t norm;           /* the loss is a mean over this many rows (0: batch); the
                            global batch when it is split across ranks */
  struct cnn_dist *dist; /* data-parallel (dist.h): each gradient is all-reduced
                            as soon as backward has it; cnn_param_apply updates */
  /* A batch in chunks of samples (offload.h); all zero for a whole batch: */
  size_t row0;           /* the chunk's first sample: backward adds the weight
                            gradients to the earlier chunks' */
  cnn_keep *keep;        /* forward keeps what backward needs here, not in the region */
  float *y_into;         /* forward writes the layer's output here, not in the region */
} cnn_pass;

typedef struct cnn_layer {
  cnn_layer_kind kind;
  cnn_shape in, out;
  size_t k;                    /* conv: kernel size; max-pool: window (= stride) */
  cnn_param *weight, *bias;    /* conv: filters x (k*k*c); dense: out x in; bias: n x 1 */
  /* kept by forward for backward, in the batch's region */
  const float *x;              /* input (dense) or im2col of it (conv) */
  float *y;                    /* output */
  uint8_t *arg;                /* max-pool: where each maximum was */
} cnn_layer;

/* Sets up a layer's shapes; weighted layers get their parameters from the
   model. 0 on success, -1 when the shapes do not fit (with a message). */
int cnn_layer_init(cnn_layer *l, cnn_layer_kind kind, cnn_shape in, size_t k, size_t out_features,
                   char *err, size_t err_len);

/* Bytes a layer's forward keeps for backward (p->keep) for `rows`
   samples; `last`: its output goes to p->y_into and is not kept. */
size_t cnn_layer_kept_bytes(const cnn_layer *l, size_t rows, bool last);

/* Points what the layer kept at the same offsets in another copy of the
   keep buffer: from `from` to `to`, both `size` bytes. */
void cnn_layer_rebase(cnn_layer *l, const void *from, void *to, size_t size);

/* y = layer(x), allocated in p->region (kept activations in p->keep when
   set; y at p->y_into when set). ReLU works in place (*y == x). */
mmbError cnn_layer_forward(cnn_layer *l, cnn_pass *p, const float *x, float **y);

/* From dy (the gradient of the layer's output), the parameters' gradients
   (and, with p->sgd, their update) and, when dx is not NULL, the gradient of
   its input, allocated in p->region (ReLU: in place, *dx == dy). */
mmbError cnn_layer_backward(cnn_layer *l, cnn_pass *p, float *dy, float **dx);

/* The update of one parameter from its (all-reduced) gradient: a walk over
   its values, gradients and velocities with p->sgd. */
mmbError cnn_param_apply(cnn_pass *p, cnn_param *w);

/* Softmax cross-entropy of the logits against labels (in the compute
   tier): dlogits allocated in p->region; stats[0] += summed loss,
   stats[1] += correct predictions (stats in the compute tier). */
mmbError cnn_loss(cnn_pass *p, const float *logits, const uint8_t *labels, size_t classes,
                  float *stats, float **dlogits);

#endif /* CNN_LAYERS_H */
