/* The _async twins of the allocation copies: checked at submission with the
   synchronous copies' own checks, run on the queue (on a stream queue,
   issued on the stream when a side is device memory). The allocations must
   stay live until the request completes. */
#include "queue/internal.h"

typedef struct copy_work {
  mmb__work w;
  mmb__copy_plan plan;
} copy_work;

static mmbError run_copy(mmb__work *w) {
  return mmb__copy_run("mmb_copy_async", &((copy_work *)w)->plan, NULL);
}

/* cudaMemcpyAsync / 2DAsync / 3DAsync where a side is device memory. */
static mmbError issue_copy(mmb__work *w, mmb__stream *s) {
  return mmb__copy_run("mmb_copy_async", &((copy_work *)w)->plan, &s->engine);
}

/* The work is made first and the plan prepared inside it: a plan is a few
   hundred bytes, not worth copying for every small copy. */
static mmbError begin(const char *func, mmbQueue *q, mmbRequest *req, copy_work **out) {
  mmbError err = mmb__queue_check(func, q, req);
  if (err != MMB_OK) return err;
  copy_work *c = (copy_work *)mmb__work_new(sizeof *c, run_copy, req != NULL);
  if (!c) return mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for the work");
  c->w.issue = issue_copy;
  *out = c;
  return MMB_OK;
}

static mmbError submit(const char *func, mmbError checked, copy_work *c, mmbQueue *q,
                       mmbRequest *req) {
  if (checked != MMB_OK) {
    mmb__work_free(&c->w);
    return checked;
  }
  return mmb__queue_push(func, q, &c->w, req, NULL);
}

mmbError mmb_copy_async(mmbAllocation *dest, mmbAllocation *src, mmbQueue *q, mmbRequest *req) {
  copy_work *c = NULL;
  mmbError err = begin(__func__, q, req, &c);
  if (err != MMB_OK) return err;
  err = mmb__copy_prepare_whole(__func__, dest, src, &c->plan);
  return submit(__func__, err, c, q, req);
}

mmbError mmb_copy_1d_async(mmbAllocation *dst, size_t doffset, mmbAllocation *src,
                           size_t soffset, size_t width, mmbQueue *q, mmbRequest *req) {
  copy_work *c = NULL;
  mmbError err = begin(__func__, q, req, &c);
  if (err != MMB_OK) return err;
  err = mmb__copy_prepare(__func__, dst, &doffset, NULL, src, &soffset, NULL, 1, &width, &c->plan);
  return submit(__func__, err, c, q, req);
}

mmbError mmb_copy_2d_async(mmbAllocation *dst, size_t dxoffset, size_t dyoffset, size_t dxpitch,
                           mmbAllocation *src, size_t sxoffset, size_t syoffset, size_t spitch,
                           size_t width, size_t height, mmbQueue *q, mmbRequest *req) {
  copy_work *c = NULL;
  mmbError err = begin(__func__, q, req, &c);
  if (err != MMB_OK) return err;
  err = mmb__copy_prepare_2d(__func__, dst, dxoffset, dyoffset, dxpitch, src, sxoffset, syoffset,
                             spitch, width, height, &c->plan);
  return submit(__func__, err, c, q, req);
}

mmbError mmb_copy_nd_async(mmbAllocation *dst, const size_t *doffset, const size_t *dpitch,
                           mmbAllocation *src, const size_t *soffset, const size_t *spitch,
                           size_t ndims, const size_t *dims, mmbQueue *q, mmbRequest *req) {
  copy_work *c = NULL;
  mmbError err = begin(__func__, q, req, &c);
  if (err != MMB_OK) return err;
  err = mmb__copy_prepare(__func__, dst, doffset, dpitch, src, soffset, spitch, ndims, dims,
                          &c->plan);
  return submit(__func__, err, c, q, req);
}
