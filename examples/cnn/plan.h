/* The memory plan: which tier holds what, and how parameter tiles reach the
   compute tier.

   - The capacity tier (DRAM; pinned DRAM when a GPU computes) is home to the
     data sets and to every parameter, gradient and momentum array.
   - The compute tier (the GPU's GDRAM; else HBM when the node has it; else
     DRAM standing in for it) holds two spaces of the plan's own: one for
     the parameters, limited to the fast budget (--fast-limit), and one for
     the activations and each batch's input.
   - auto (the default on a CPU): every parameter stays home
     and a walk acquires each tile in the parameters' space from mmb's tile
     cache, with the next three it lacks advised WILLNEED, and releases it after: the
     cache, with the budget as its budget, decides what stays and writes
     dirty tiles home when they go. On a GPU a tile is released only once
     the kernels that used it are done (the cache may write it home or
     reuse its memory as soon as it is released), one step late: the host
     acquires the next step's tiles and issues its kernels first, so the
     compute stream does not wait for the host.
   - When every parameter array fits the budget, each is migrated to the
     fast tier once and stays ("resident"). Otherwise the largest ones stay
     home and their tiles stream through the budget with prefetching tile
     iterators on the copy queue ("streamed"): the next tiles move while the
     current one computes, and written tiles merge home behind.
   - A backward walk of a whole batch in one process computes each tile's
     gradient into a scratch tile of its own and updates the tile at once
     (CNN_WALK_STEP): the gradient arrays are used where a gradient must
     outlive its step (offloaded chunks, data-parallel, tests).
   - Activations live in a region of the fast tier that is reset every
     batch; backward allocates in a child region. With offload (offload.h,
     auto only) the convolution block's go home in chunks through the
     parameters' cache.

   A parameter is a 2-D array of rows x cols floats, tiled by blocks of
   rows; visiting its tiles is the same loop in every plan (cnn_tiles), so
   they compute the same numbers in the same order. Forward walks the tiles
   first to last, and every other walk last to first: a walk then starts on
   the tiles the one before it ended on, those a cache still holds. */
#ifndef CNN_PLAN_H
#define CNN_PLAN_H

#include "ops.h"

#include <mmb/mmb.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a walk visits: values alone (forward); values and gradients, written
   (backward); values and velocities written from the gradients read (the
   update of data-parallel training, once the gradients are all-reduced);
   values and gradients read and written (backward of a later chunk of a
   batch's samples, whose gradients add to the earlier chunks'); values and
   velocities written, each tile's gradient computed into the walk's scratch
   (cnn_tiles.scratch) and used by the tile's update at once (backward of a
   whole batch in one process: the gradient is needed by nothing after that
   update, so it never goes to the fast tier's budget nor home). */
typedef enum cnn_walk {
  CNN_WALK_VALUES,
  CNN_WALK_BACKWARD,
  CNN_WALK_APPLY,
  CNN_WALK_ACCUMULATE,   /* backward of a batch's later chunk: gradients read and added to */
  CNN_WALK_STEP,         /* backward with the update at once: gradients in scratch */
  CNN_WALKS
} cnn_walk;

typedef struct cnn_param {
  char name[32];
  size_t rows, cols, tile_rows;
  mmbArray *value, *grad, *velocity;   /* velocity: only with momentum */
  bool streamed;                       /* set by cnn_plan_place */
  /* The iterators of its walks (cnn_tiles), made on the first walk and
     restarted by the next ones, by cnn_walk: values, gradients, velocities. */
  mmbTileIterator *walks[CNN_WALKS][3];   /* [cnn_walk][array] */
  /* Data-parallel (dist.h): the all-reduce of its gradient, and the copy
     queue's marker it waits for. */
  mmbRequest reduced, merged;
} cnn_param;

/* How parameters reach the compute tier: mmb's tile cache decides (auto);
   every array moved there once (resident); or the hand plan (streamed:
   resident when everything fits, else the largest stream). */
typedef enum cnn_plan_mode { CNN_PLAN_AUTO, CNN_PLAN_RESIDENT, CNN_PLAN_STREAMED } cnn_plan_mode;

typedef struct cnn_plan_options {
  cnn_plan_mode mode;
  bool gpu;              /* compute on CUDA device 0 */
  size_t fast_limit;     /* bytes of the fast tier for parameters; 0: the default */
  size_t depth;          /* tiles prefetched ahead; 0: 1 (double buffering) */
  int threads;           /* OpenBLAS threads (cpu) */
  bool no_hints;         /* auto: the next tile is not advised WILLNEED */
} cnn_plan_options;

typedef struct cnn_plan {
  const cnn_ops *ops;
  cnn_plan_mode mode;
  bool gpu, hints;
  /* auto: a walk releases a step's tiles after the next step's are
     acquired, once the kernels issued on them are done (set on a GPU,
     where they may still run when the host moves on; a test sets it on
     the host too) */
  bool release_late;
  size_t budget;                       /* the parameters' space limit */
  size_t depth;
  mmbMemSpace *capacity, *fast;        /* the tiers (discovered spaces) */
  mmbMemSpace *params_space, *acts_space;
  mmbMemInterface *capacity_iface, *params_iface, *acts_iface;
  mmbRegion *region;                   /* activations, reset every batch */
  mmbQueue *copy_q;                    /* uploads, prefetches and merges */
  mmbQueue *compute_q;                 /* gpu: the stream the kernels run on */
  mmbRequest marker;                   /* gpu: the compute stream's last handoff */
  char capacity_name[64], fast_name[96];
  /* filled by cnn_plan_place */
  bool streamed;
  size_t resident_bytes, stream_bytes; /* in the fast tier: resident arrays, streaming rings */
  size_t n_streamed;
} cnn_plan;

/* Finds the tiers, makes the spaces, interfaces, region and queues, and
   picks the kernels. On failure `err` says why (MMB_UNAVAILABLE: no GPU). */
mmbError cnn_plan_create(const cnn_plan_options *o, cnn_plan *plan, char *err, size_t err_len);

/* Places the parameters: resident if every array fits the budget, else the
   largest streamed (re-tiled smaller if their rings do not fit beside the
   resident ones). Makes the parameters' space (plan->budget may be set
   between create and place) and migrates the resident arrays to it.
   MMB_INVALID_ARG: the budget cannot hold even one-row tiles. */
mmbError cnn_plan_place(cnn_plan *plan, cnn_param *params, size_t n_params, char *err,
                        size_t err_len);

/* Moves resident arrays back home (the weights end in the capacity tier). */
mmbError cnn_plan_unplace(cnn_plan *plan, cnn_param *params, size_t n_params);

mmbError cnn_plan_destroy(cnn_plan *plan);

/* Prints the plan (tiers, budget, what is resident, what streams). */
void cnn_plan_print(const cnn_plan *plan, const cnn_param *params, size_t n_params);

/* On a GPU the kernels run on the compute stream while the copy queue moves
   tiles: before a tile the kernels used is merged or released, the copy
   queue waits for the kernels issued so far (an event, not a host wait).
   Nothing to do on the host, where kernels are done when they return. */
mmbError cnn_plan_handoff(cnn_plan *plan);

/* Waits on the host for the kernels issued so far (on a GPU; on the host
   they are done when they return): before a tile they used goes back to
   mmb's tile cache, which may then write it home or reuse its memory. */
mmbError cnn_plan_kernels_done(cnn_plan *plan);

/* A walk over a parameter's tiles: its values alone (forward), or values,
   gradients and velocities in step (backward; the update). Streamed
   parameters prefetch on the copy queue; written tiles merge home. A walk's
   iterators stay with the parameter and restart on its next walk, so a
   batch allocates nothing for them; the merges behind a walk's last tile
   complete on the copy queue, in order with the next walk's prefetches. */
typedef struct cnn_tiles {
  cnn_plan *plan;
  cnn_param *p;
  mmbArray *arrays[3];            /* walked: values, gradients, velocities (NULL: not) */
  mmbTileIterator *it[3];         /* hand plans: an iterator for each array walked */
  /* auto: how each array is walked, the current tile's index, the count */
  mmbAccessType access[3];
  size_t index, count;
  size_t advised[3];              /* the furthest position advised WILLNEED, per array */
  uint64_t fetching[3];           /* those ahead whose hint started a fetch (bit pos % 64) */
  bool reverse;                   /* last to first (every walk but forward) */
  mmbArrayTile *held[3];          /* auto, release_late: the step before's tiles, */
  mmbRequest held_done;           /* released once this marker of their kernels passes */
  mmbArrayTile *value, *grad, *velocity;   /* the current tiles; value NULL past the end */
  float *scratch;                 /* CNN_WALK_STEP: the gradient (rows x ld, the caller's) */
  size_t r0, r1;                  /* their rows */
  size_t ld;                      /* their row stride, in floats */
} cnn_tiles;

/* The most a backward step over p pins in the fast tier: a tile of each of
   its arrays (values, gradients, velocities) when its gradient goes through
   the array (offloaded chunks, data-parallel); a CNN_WALK_STEP pins one
   tile fewer. The budget checks allow for the most. */
static inline size_t cnn_param_step_bytes(const cnn_param *p) {
  return (p->velocity ? 3 : 2) * p->tile_rows * p->cols * sizeof(float);
}

/* Whether p's walks compute on its own storage (a resident parameter of the
   hand plans), not on copies that go home behind them (streamed; auto). */
static inline bool cnn_param_in_place(const cnn_plan *plan, const cnn_param *p) {
  return plan->mode != CNN_PLAN_AUTO && !p->streamed;
}

mmbError cnn_tiles_begin(cnn_plan *plan, cnn_param *p, cnn_walk walk, cnn_tiles *t);
/* Where the current tile's gradient is: its tile, or the walk's scratch. */
static inline float *cnn_tiles_gradient(const cnn_tiles *t) {
  return t->grad ? (float *)t->grad->ptr : t->scratch;
}
mmbError cnn_tiles_next(cnn_tiles *t);
/* Ends a walk (also one stopped early). */
mmbError cnn_tiles_end(cnn_tiles *t);
/* Destroys a parameter's walk iterators: they merge what they hold and wait
   for it (before the arrays move, are re-tiled or destroyed). */
mmbError cnn_tiles_release(cnn_param *p);

#endif /* CNN_PLAN_H */
