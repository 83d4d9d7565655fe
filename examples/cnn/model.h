/* The networks and their parameters.
     seed: conv 3x3, 4 filters -> ReLU -> max-pool 2 -> dense -> classes
     wide: conv 3x3, 32 filters -> ReLU -> max-pool 2 -> dense 2048 -> ReLU
           -> dense -> classes   (11.1 M parameters on 28x28 images)
   Parameters are arrays in the capacity tier, initialised deterministically
   from a seed as PyTorch does by default (uniform in +-1/sqrt(fan_in)). */
#ifndef CNN_MODEL_H
#define CNN_MODEL_H

#include "layers.h"

#define CNN_MAX_LAYERS 8
#define CNN_MAX_PARAMS (2 * CNN_MAX_LAYERS)

typedef struct cnn_model_options {
  const char *net;         /* "seed" or "wide" */
  cnn_shape input;         /* one image: h x w x 1 */
  size_t classes;
  unsigned long long seed;
  bool momentum;           /* keep a velocity array per parameter */
  size_t tile_bytes;       /* dense weights are tiled in blocks of rows of at most
                              this many bytes; 0: 1 MiB */
} cnn_model_options;

typedef struct cnn_model {
  char net[16];
  cnn_shape input;
  size_t classes;
  size_t n_layers, n_params;
  cnn_layer layers[CNN_MAX_LAYERS];
  cnn_param params[CNN_MAX_PARAMS];
} cnn_model;

/* Builds the network with its arrays in `home`. Returns MMB_INVALID_ARG for
   an unknown net or a shape it does not fit (err says which). */
mmbError cnn_model_create(const cnn_model_options *o, mmbMemInterface *home, cnn_model *m,
                          char *err, size_t err_len);
mmbError cnn_model_destroy(cnn_model *m);

/* splitmix64: a small, well-mixed generator, so a seed gives the same
   weights and epoch orders on every machine. */
unsigned long long cnn_random_next(unsigned long long *state);

/* A rows x cols array of floats in `home`, untiled and uninitialised. */
mmbError cnn_float_array(size_t rows, size_t cols, mmbMemInterface *home, mmbArray **out);

/* A rows x cols parameter in `home`, uniform in +-bound (from *state), with
   a zeroed gradient (and velocity), tiled by blocks of rows of at most
   tile_bytes (SIZE_MAX: one tile). */
mmbError cnn_param_create(cnn_param *p, const char *name, size_t rows, size_t cols, float bound,
                          size_t tile_bytes, bool momentum, unsigned long long *state,
                          mmbMemInterface *home);
void cnn_param_destroy(cnn_param *p);

/* Bytes of the parameters' values (not gradients or velocities). */
size_t cnn_model_param_bytes(const cnn_model *m);
size_t cnn_model_param_count(const cnn_model *m);
/* Floating-point operations to train on one sample: each weighted layer's
   product forward (2 per multiply-add), the weight gradient's, and the
   input gradient's (not the first layer's), as the backward pass does. */
double cnn_model_train_flops(const cnn_model *m);

/* logits = the network applied to x (batch x input floats). */
mmbError cnn_model_forward(cnn_model *m, cnn_pass *p, const float *x, float **logits);
/* Back-propagates dlogits through every layer (the first one's input
   gradient is not needed), updating the parameters when p->sgd is set. */
mmbError cnn_model_backward(cnn_model *m, cnn_pass *p, float *dlogits);

/* Data-parallel: the update of every parameter, in the order backward
   all-reduced their gradients, each once its all-reduce is done (p->dist,
   p->sgd set). */
mmbError cnn_model_apply(cnn_model *m, cnn_pass *p);

/* FNV-1a over every parameter's values, read from the capacity tier
   (cnn_plan_unplace first). Two runs with equal weights have equal sums. */
mmbError cnn_model_checksum(cnn_model *m, unsigned long long *out);

#endif /* CNN_MODEL_H */
