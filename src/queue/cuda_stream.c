/* The CUDA-stream backend: a queue is a CUDA stream (non-blocking, on the
   queue's device) fed by the thread backend's worker, which takes items in
   FIFO order and, for each one:
     - issues it on the stream when it can: copies with a device side
       (cudaMemcpyAsync, cudaMemcpy2DAsync, cudaMemcpy3DAsync), user work
       (cudaLaunchHostFunc), fences and dependencies (nothing to move); the
       item's request is then backed by an event recorded after it;
     - otherwise runs it on the worker once the stream has drained: host
       pairs, merges that compute, copies through a user provider.
   A dependency on a request of another stream becomes cudaStreamWaitEvent;
   one on a thread queue's request is waited for by the worker, and a thread
   queue waits for a stream's request on its event. The stream is mmb's
   own, or the caller's (mmbQueueOptions.native), which is never destroyed
   here. Only this file and providers/cuda include CUDA headers. Built only
   with CUDA. */
#include "queue/internal.h"

#include "cuda/internal.h"

typedef struct cuda_stream {
  mmb__stream base;   /* first: q->stream points here */
  cudaStream_t stream;
  int device;
  bool borrowed;      /* the caller's (mmbQueueOptions.native): never destroyed here */
} cuda_stream;

/* Work is issued from the worker thread, which keeps the queue's device current. */
static cuda_stream *current(void *state) {
  cuda_stream *c = state;
  cudaSetDevice(c->device);
  return c;
}

/* ---- events (requests outlive queues: a static table) -------------------- */
static mmbError event_query(void *ev, bool *passed) {
  cudaError_t e = cudaEventQuery(ev);
  *passed = e == cudaSuccess;
  return e == cudaErrorNotReady ? MMB_OK : mmb__cuda_error(e, "cudaEventQuery");
}

static mmbError event_sync(void *ev) {
  return mmb__cuda_error(cudaEventSynchronize(ev), "cudaEventSynchronize");
}

static void event_destroy(void *ev) { mmb__cuda_error(cudaEventDestroy(ev), "cudaEventDestroy"); }

static const mmb__event_ops cuda_events = {
  .query = event_query, .sync = event_sync, .destroy = event_destroy,
};

/* ---- the stream ---------------------------------------------------------- */
/* The copies a stream issues: those of CUDA device memory, told by the
   provider's capabilities (a user's provider of CUDA memory counts too). */
static bool reaches(void *state, const mmbMemInterface *iface) {
  return iface->provider.ops->caps & MMB_PROVIDER_CUDA_MEMORY;
}

static mmbError copy_2d(void *state, void *dst, size_t dpitch, const void *src, size_t spitch,
                        size_t width, size_t height) {
  cuda_stream *c = current(state);
  if (height == 1)
    return mmb__cuda_error(cudaMemcpyAsync(dst, src, width, cudaMemcpyDefault, c->stream),
                           "cudaMemcpyAsync");
  return mmb__cuda_error(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height,
                                           cudaMemcpyDefault, c->stream),
                         "cudaMemcpy2DAsync");
}

static mmbError copy_3d(void *state, void *dst, size_t dpitch, size_t dslice, const void *src,
                        size_t spitch, size_t sslice, size_t width, size_t height, size_t depth) {
  cuda_stream *c = current(state);
  struct cudaMemcpy3DParms p;
  if (!mmb__cuda_3d_parms(&p, dst, dpitch, dslice, src, spitch, sslice, width, height, depth))
    return MMB_UNSUPPORTED;   /* the core goes plane by plane */
  return mmb__cuda_error(cudaMemcpy3DAsync(&p, c->stream), "cudaMemcpy3DAsync");
}

static mmbError stream_host_func(mmb__stream *s, void (*fn)(void *), void *arg) {
  cuda_stream *c = current(s);
  return mmb__cuda_error(cudaLaunchHostFunc(c->stream, fn, arg), "cudaLaunchHostFunc");
}

static mmbError stream_wait_event(mmb__stream *s, void *ev) {
  cuda_stream *c = current(s);
  return mmb__cuda_error(cudaStreamWaitEvent(c->stream, ev, 0), "cudaStreamWaitEvent");
}

static mmbError stream_record(mmb__stream *s, void **out) {
  cuda_stream *c = current(s);
  cudaEvent_t ev;
  mmbError err = mmb__cuda_error(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming),
                                 "cudaEventCreateWithFlags");
  if (err != MMB_OK) return err;
  if ((err = mmb__cuda_error(cudaEventRecord(ev, c->stream), "cudaEventRecord")) != MMB_OK) {
    cudaEventDestroy(ev);
    return err;
  }
  *out = ev;
  return MMB_OK;
}

static mmbError stream_sync(mmb__stream *s) {
  cuda_stream *c = current(s);
  return mmb__cuda_error(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
}

/* ---- the backend --------------------------------------------------------- */
static mmbError stream_start(mmbQueue *q, const mmbQueueOptions *opts) {
  cuda_stream *c = mmb__calloc(1, sizeof *c);
  if (!c) return MMB_OUT_OF_MEMORY;
  c->base = (mmb__stream){
    .engine = {.state = c, .copy_2d = copy_2d, .copy_3d = copy_3d, .reaches = reaches},
    .events = &cuda_events,
    .host_func = stream_host_func,
    .wait_event = stream_wait_event,
    .record = stream_record,
    .sync = stream_sync,
  };
  c->device = opts->device;
  c->borrowed = opts->native != NULL;
  mmbError err = MMB_OK;
  if (c->borrowed)
    c->stream = opts->native;
  else
    err = mmb__cuda_error(
        ON_DEVICE(c->device, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)),
        "cudaStreamCreateWithFlags");
  if (err != MMB_OK) {
    mmb__free(c);
    return mmb__fail(err, "mmb_queue_create", "no stream on CUDA device %d", opts->device);
  }
  c->base.native = c->stream;
  q->stream = &c->base;
  if ((err = mmb__thread_backend.start(q, opts)) != MMB_OK) {
    q->stream = NULL;
    if (!c->borrowed) cudaStreamDestroy(c->stream);
    mmb__free(c);
  }
  return err;
}

static void stream_push(mmbQueue *q, mmb__work *w) { mmb__thread_backend.push(q, w); }

/* The worker drains the FIFO; the stream then finishes what was issued. */
static void stream_stop(mmbQueue *q) {
  cuda_stream *c = (cuda_stream *)q->stream;
  mmb__thread_backend.stop(q);
  mmb__cuda_error(ON_DEVICE(c->device, cudaStreamSynchronize(c->stream)),
                  "cudaStreamSynchronize");
  if (!c->borrowed)
    mmb__cuda_error(ON_DEVICE(c->device, cudaStreamDestroy(c->stream)), "cudaStreamDestroy");
  q->stream = NULL;
  mmb__free(c);
}

static const mmb__queue_backend stream_backend = {
  .name = "cuda-stream", .start = stream_start, .push = stream_push, .stop = stream_stop,
};

const mmb__queue_backend *const mmb__cuda_stream_backend = &stream_backend;
