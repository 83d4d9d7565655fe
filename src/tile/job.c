/* Jobs: the data movement of a transport, run at once or on a queue, with
   the hazards that keep a synchronous call from touching bytes still in
   flight and order asynchronous work across queues (see tile/internal.h). */
#include "tile/internal.h"

typedef struct job_work {
  mmb__work w;
  mmb__job job;
} job_work;

static bool is_copy(const mmb__job *j) {
  return j->kind == MMB__JOB_COPY || (j->kind == MMB__JOB_MERGE && mmb__merge_is_copy(&j->op));
}

static mmbError job_run(mmb__job *j) {
  if (j->kind == MMB__JOB_NONE) return MMB_OK;
  uint64_t start = mmb__tile_trace_start();
  mmbError err = j->kind == MMB__JOB_COPY ? mmb__view_copy(j->func, NULL, &j->dst, &j->src)
                                          : mmb__view_merge(j->func, &j->dst, &j->src, &j->op);
  if (err == MMB_OK) mmb__tile_trace_end(j->name, start, &j->src, j->from, j->to);
  return err;
}

static void job_retire(mmb__job *j) {
  for (size_t i = 0; i < 2; i++)
    if (j->retired[i]) MMB__MUST(mmb_free(j->retired[i]));
}

static mmbError work_run(mmb__work *w) { return job_run(&((job_work *)w)->job); }

/* On a stream queue, copies with a device side are issued on the stream;
   merges that compute, and copies the host must do, run on the host. */
static mmbError work_issue(mmb__work *w, mmb__stream *s) {
  mmb__job *j = &((job_work *)w)->job;
  if (j->kind == MMB__JOB_NONE) return MMB_OK;
  return is_copy(j) ? mmb__view_copy(j->func, &s->engine, &j->dst, &j->src) : MMB_UNSUPPORTED;
}

/* On a queue, storage left behind is freed now, in the caller's thread, and
   reused once the job has run (whatever its outcome: an error leaves the
   target's bytes undefined, nothing leaks). */
static void retire_after(mmb__job *j, mmb__request *r) {
  for (size_t i = 0; i < 2; i++) {
    if (!j->retired[i]) continue;
    if (mmb__allocation_after(j->func, j->retired[i], r) != MMB_OK) mmb__request_wait(r);
    MMB__MUST(mmb_free(j->retired[i]));
  }
}

void mmb__job_own_tile(mmb__job *j, size_t i, mmb__tile *t) {
  j->own[i] = &t->pending;
  j->also[i] = t->array ? &t->array->pending : NULL;
}

/* Applies f to every hazard slot the job must respect (own, also, then
   whole arrays' tiles), with ctx. */
static mmbError each_slot(mmb__job *j, mmbError (*f)(void *ctx, mmb__request **slot),
                          void *ctx) {
  mmbError err = MMB_OK;
  for (size_t i = 0; i < 2 && err == MMB_OK; i++) {
    if (j->own[i] && *j->own[i]) err = f(ctx, j->own[i]);
    if (err == MMB_OK && j->also[i] && *j->also[i]) err = f(ctx, j->also[i]);
    mmbArray *a = j->whole[i];
    if (a && a->tiling)
      for (size_t t = 0; t < a->tiling->n_tiles && err == MMB_OK; t++)
        if (a->tiling->slots[t].tile.pending) err = f(ctx, &a->tiling->slots[t].tile.pending);
  }
  return err;
}

static mmbError slot_wait(void *ctx, mmb__request **slot) {
  mmb__pending_wait(slot);
  return MMB_OK;
}

static mmbError slot_not_behind(void *func, mmb__request **slot) {
  return mmb__request_not_behind(func, *slot);
}

static mmbError slot_order(void *q, mmb__request **slot) {
  return mmb__pending_order("mmb: async transport", q, *slot);
}

/* A job that will not run gives back the storage made for it and says why. */
static mmbError job_abandon(mmb__job *j, mmbError err) {
  if (j->made) MMB__MUST(mmb_free(j->made));
  return err;
}

mmbError mmb__job_start(mmb__job *j, mmbQueue *q, mmbRequest *req) {
  mmbError err;
  if (!q) {
    /* from queue work, data with work queued behind it is refused: the wait
       below would wait for itself */
    if ((err = each_slot(j, slot_not_behind, (void *)j->func)) != MMB_OK)
      return job_abandon(j, err);
    each_slot(j, slot_wait, NULL);
    if ((err = job_run(j)) != MMB_OK) return job_abandon(j, err);
    job_retire(j);
    return MMB_OK;
  }
  job_work *w = NULL;
  if ((err = each_slot(j, slot_order, q)) != MMB_OK) return job_abandon(j, err);
  if (!(w = (job_work *)mmb__work_new(sizeof *w, work_run, true)))
    return job_abandon(j, mmb__fail(MMB_OUT_OF_MEMORY, j->func, "no memory for the work"));
  if (!w->w.req && !(w->w.req = mmb__request_new())) {
    mmb__work_free(&w->w);
    return job_abandon(j, mmb__fail(MMB_OUT_OF_MEMORY, j->func, "no memory for a request"));
  }
  w->w.issue = work_issue;
  w->job = *j;
  /* the slots name the job before it can run, so that what it runs (a merge
     function) sees it there, queued, and may not wait for it */
  mmb__request *r = w->w.req;
  for (size_t i = 0; i < 2; i++)
    if (j->own[i]) mmb__pending_set(j->own[i], r);
  MMB__MUST(mmb__queue_push(j->func, q, &w->w, req, &r));   /* (its request is made) */
  retire_after(j, r);
  mmb__request_unref(r);
  return MMB_OK;
}

/* ---- run by the caller, later ---------------------------------------------- */

#define DEFERRED_BEFORE 4   /* a tile job's `own` and `also` slots */

struct mmb__deferred {
  mmb__job job;
  mmb__request *r;                          /* stands for the job in its `own` slots */
  mmb__request *before[DEFERRED_BEFORE];    /* the work in its slots, to wait for */
  size_t n_before;
};

/* The work in a slot, kept to be waited for when the job runs; waited for
   now when there is no room (whole arrays' tiles: the tile cache defers no
   such job). */
static mmbError slot_keep(void *d_, mmb__request **slot) {
  mmb__deferred *d = d_;
  if (mmb__request_done(*slot)) return MMB_OK;
  if (d->n_before == DEFERRED_BEFORE) return slot_wait(NULL, slot);
  mmb__request_ref(*slot);
  d->before[d->n_before++] = *slot;
  return MMB_OK;
}

mmbError mmb__job_defer(mmb__job *j, mmb__deferred **out) {
  mmb__deferred *d = mmb__calloc(1, sizeof *d);
  mmb__request *r = d ? mmb__request_new() : NULL;
  if (!r) {
    mmb__free(d);
    return job_abandon(j, mmb__fail(MMB_OUT_OF_MEMORY, j->func, "no memory for the work"));
  }
  (void)each_slot(j, slot_keep, d);
  for (size_t i = 0; i < 2; i++)
    if (j->own[i]) mmb__pending_set(j->own[i], r);
  d->job = *j;
  d->r = r;
  *out = d;
  return MMB_OK;
}

mmbError mmb__job_run_deferred(mmb__deferred *d) {
  for (size_t i = 0; i < d->n_before; i++) {
    (void)mmb__request_wait(d->before[i]);   /* their errors are their submitters' */
    mmb__request_unref(d->before[i]);
  }
  mmbError err = job_run(&d->job);
  job_retire(&d->job);   /* an error leaves the target's bytes undefined */
  mmb__request_finish(d->r, err);
  mmb__free(d);
  return err;
}
