/* Data-parallel training over MPI ranks:
     mpirun -np N build/bin/cnn --batch B ...
   Each rank trains on its share of every global batch of B samples (B/N of
   them, so B must be a multiple of N), from the same weights. As backward
   finishes each parameter's gradient, its tiles are all-reduced (summed) on
   a queue of the rank's own with libmmb_mpi (mmb_mpi_tile_allreduce_async,
   each tile as soon as backward has written it), while backward goes on,
   as bucketed data-parallel training does (a parameter that is not
   resident, streamed or cached by the auto plan, is all-reduced whole at
   home after its walk); the loss is a mean over the global batch, so the sums are
   the global batch's gradients, and every rank then applies the same update
   (cnn_param_apply). Rank 0 prints and writes the summary.

   Built without MPI (or run without mpirun), there is one rank and none of
   this runs. */
#ifndef CNN_DIST_H
#define CNN_DIST_H

#include "plan.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct cnn_dist {
  int rank, ranks;          /* 0 and 1 alone */
  bool mpi;                 /* MPI is initialised (by cnn_dist_start) */
  mmbQueue *q;              /* the all-reduces run on its thread */
  mmbRequest kernels;       /* gpu: the compute stream's last handoff to q */
  /* seconds, this rank: waiting for all-reduces before an update (what the
     overlap did not hide), and the all-reduces' own time on the queue */
  double wait_seconds, reduce_seconds;
  size_t reduces;           /* all-reduces started */
} cnn_dist;

/* Starts MPI when the program runs under mpirun (MPI_THREAD_MULTIPLE: the
   queue's thread calls MPI), else one rank. 0, or -1 with a message. */
int cnn_dist_start(int *argc, char ***argv, cnn_dist *d, char *err, size_t err_len);
/* After mmb_init: the queue. */
mmbError cnn_dist_open(cnn_dist *d);
/* Before mmb_finalize: waits for what is pending and destroys the queue. */
mmbError cnn_dist_close(cnn_dist *d);
/* MPI_Finalize (after mmb_finalize). */
void cnn_dist_stop(cnn_dist *d);
/* Every rank stops with `status` if any rank's is not 0 (the largest). */
int cnn_dist_agree(const cnn_dist *d, int status);

static inline bool cnn_dist_active(const cnn_dist *d) { return d && d->ranks > 1; }

/* Starts the all-reduce of one tile of a resident parameter's gradient, as
   soon as backward has written it (on a GPU, once its kernels have run). */
mmbError cnn_dist_reduce_tile(cnn_dist *d, cnn_plan *plan, mmbArrayTile *grad);
/* After p's backward walk: a resident parameter's tiles are all on their
   way; a streamed one's gradient is all-reduced once the copy queue has
   merged the walk that wrote it; with the auto plan, once the tile cache
   has written it home and dropped its copies (mmb_array_evict). */
mmbError cnn_dist_reduce(cnn_dist *d, cnn_plan *plan, cnn_param *p);
/* Waits for p's all-reduce (before its update). */
mmbError cnn_dist_wait(cnn_dist *d, cnn_param *p);
/* After the updates: the first error of the all-reduces. */
mmbError cnn_dist_settle(cnn_dist *d);

/* x[i] = the sum over ranks of x[i] (a collective; blocking). */
void cnn_dist_sum(const cnn_dist *d, double *x, size_t n);
/* The largest x over ranks. */
double cnn_dist_max(const cnn_dist *d, double x);
/* The global batch of `batch` samples starting at sample `first` of an
   epoch of n: this rank's first sample and count in it. */
void cnn_dist_share(const cnn_dist *d, size_t first, size_t batch, size_t n, size_t *start,
                    size_t *count);

#endif /* CNN_DIST_H */
