/* Data-parallel training over MPI ranks (see dist.h). */
#include "dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef CNN_HAVE_MPI
#include <mmb/mpi.h>
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Whether a launcher started this process as one rank of a job (Open MPI,
   MPICH's Hydra, PMIx, Slurm's srun with PMI). */
static bool launched_by_mpirun(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                     "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i])) return true;
  return false;
}

int cnn_dist_start(int *argc, char ***argv, cnn_dist *d, char *err, size_t err_len) {
  *d = (cnn_dist){.rank = 0, .ranks = 1};
  if (!launched_by_mpirun()) return 0;
#ifdef CNN_HAVE_MPI
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    snprintf(err, err_len, "MPI_Init_thread failed");
    return -1;
  }
  d->mpi = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &d->ranks);
  if (d->ranks > 1 && provided < MPI_THREAD_MULTIPLE) {
    snprintf(err, err_len, "MPI gives thread level %d: data-parallel training all-reduces on a "
             "queue's thread and needs MPI_THREAD_MULTIPLE", provided);
    return -1;
  }
  return 0;
#else
  (void)argc;
  (void)argv;
  snprintf(err, err_len, "run under mpirun, but built without MPI (scripts/install-deps.sh mpi, "
           "then make): it would train the same model on every rank");
  return -1;
#endif
}

mmbError cnn_dist_open(cnn_dist *d) {
  if (!cnn_dist_active(d)) return MMB_OK;
  return mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &d->q);
}

mmbError cnn_dist_close(cnn_dist *d) {
  mmbError e = mmb_wait(&d->kernels);
  mmbError e2 = d->q ? mmb_queue_destroy(NULL, &d->q) : MMB_OK;
  return e != MMB_OK ? e : e2;
}

void cnn_dist_stop(cnn_dist *d) {
#ifdef CNN_HAVE_MPI
  if (d->mpi) MPI_Finalize();
#endif
  d->mpi = false;
}

int cnn_dist_agree(const cnn_dist *d, int status) {
#ifdef CNN_HAVE_MPI
  if (d->mpi && d->ranks > 1) {
    int worst = status;
    MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return worst;
  }
#endif
  (void)d;
  return status;
}

#ifdef CNN_HAVE_MPI
/* The all-reduces' time on the queue: stamps before and after each one,
   taken on the queue's thread (read once the queue is synchronized). */
static mmbError reduce_begins(void *arg) {
  cnn_dist *d = arg;
  d->reduce_seconds -= now();
  return MMB_OK;
}
static mmbError reduce_ends(void *arg) {
  cnn_dist *d = arg;
  d->reduce_seconds += now();
  return MMB_OK;
}

/* Work submitted to the queue from now on follows the kernels issued so far
   (a GPU's compute stream; nothing on the host, whose kernels are done). */
static mmbError after_kernels(cnn_dist *d, cnn_plan *plan) {
  if (!plan->compute_q) return MMB_OK;
  mmbError e = mmb_wait(&d->kernels);   /* the last one: the host stays one step ahead */
  if (e == MMB_OK) e = mmb_queue_marker(plan->compute_q, &d->kernels);
  if (e == MMB_OK) e = mmb_queue_wait_request(d->q, &d->kernels);
  return e;
}

/* The sum over ranks of a tile or of a whole array, on the queue, timed. */
static mmbError reduce(cnn_dist *d, mmbArrayTile *tile, mmbArray *array, mmbRequest *req) {
  mmbError e = mmb_queue_submit_task(d->q, reduce_begins, d, NULL);
  if (e == MMB_OK)
    e = tile ? mmb_mpi_tile_allreduce_async(tile, MMB_MERGE_SUM, MPI_COMM_WORLD, d->q, req)
             : mmb_mpi_array_allreduce_async(array, MMB_MERGE_SUM, MPI_COMM_WORLD, d->q, req);
  if (e == MMB_OK) e = mmb_queue_submit_task(d->q, reduce_ends, d, NULL);
  if (e == MMB_OK) d->reduces++;
  return e;
}
#endif

mmbError cnn_dist_reduce_tile(cnn_dist *d, cnn_plan *plan, mmbArrayTile *grad) {
#ifdef CNN_HAVE_MPI
  /* fire and forget: cnn_dist_settle collects the errors */
  mmbError e = after_kernels(d, plan);
  return e == MMB_OK ? reduce(d, grad, NULL, NULL) : e;
#else
  (void)d;
  (void)plan;
  (void)grad;
  return MMB_UNSUPPORTED;
#endif
}

mmbError cnn_dist_reduce(cnn_dist *d, cnn_plan *plan, cnn_param *p) {
#ifdef CNN_HAVE_MPI
  /* a resident parameter's tiles are on their way: their end is the
     queue's next marker */
  if (cnn_param_in_place(plan, p)) return mmb_queue_marker(d->q, &p->reduced);
  mmbError e;
  if (plan->mode == CNN_PLAN_AUTO) {
    /* the cache's copies of the gradient go home (the dirty ones written
       back) and are dropped: the sums are made at home, and the update's
       walk fetches them */
    e = mmb_array_evict(p->grad, plan->params_space);
    return e == MMB_OK ? reduce(d, NULL, p->grad, &p->reduced) : e;
  }
  /* the gradient is home (merged behind the walk, on the copy queue) and
     written (on a GPU, by kernels the copy queue waits for) */
  e = cnn_plan_handoff(plan);
  if (e == MMB_OK) e = mmb_queue_marker(plan->copy_q, &p->merged);
  if (e == MMB_OK) e = mmb_queue_wait_request(d->q, &p->merged);
  return e == MMB_OK ? reduce(d, NULL, p->grad, &p->reduced) : e;
#else
  (void)d;
  (void)plan;
  (void)p;
  return MMB_UNSUPPORTED;
#endif
}

mmbError cnn_dist_wait(cnn_dist *d, cnn_param *p) {
  double t0 = now();
  mmbError e = mmb_wait(&p->reduced), e2 = mmb_wait(&p->merged);
  d->wait_seconds += now() - t0;
  return e != MMB_OK ? e : e2;
}

mmbError cnn_dist_settle(cnn_dist *d) {
  mmbError e = mmb_wait(&d->kernels);
  mmbError e2 = mmb_queue_synchronize(d->q);
  return e != MMB_OK ? e : e2;
}

void cnn_dist_sum(const cnn_dist *d, double *x, size_t n) {
#ifdef CNN_HAVE_MPI
  if (d->mpi && d->ranks > 1) MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#else
  (void)d;
  (void)x;
  (void)n;
#endif
}

double cnn_dist_max(const cnn_dist *d, double x) {
#ifdef CNN_HAVE_MPI
  if (d->mpi && d->ranks > 1) MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
#else
  (void)d;
#endif
  return x;
}

void cnn_dist_share(const cnn_dist *d, size_t first, size_t batch, size_t n, size_t *start,
                    size_t *count) {
  size_t g = n - first < batch ? n - first : batch, ranks = (size_t)d->ranks, r = (size_t)d->rank;
  size_t base = g / ranks, extra = g % ranks;
  *start = first + r * base + (r < extra ? r : extra);
  *count = base + (r < extra);
}
