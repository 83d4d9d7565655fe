/* Queues: creation over a backend, submission with requests, dependencies,
   synchronize and destroy. */
#include "queue/internal.h"

#include <string.h>

mmb__work *mmb__work_new(size_t size, mmbError (*run)(mmb__work *w), bool requested) {
  mmb__work *w;
  mmb__request *r = NULL;
  if (requested && size <= MMB__REQUEST_WORK_BYTES) {
    if (!(r = mmb__request_new())) return NULL;
    w = memset(r->work, 0, size);
    w->req = r;
    w->in_request = true;
  } else if (!(w = mmb__record_calloc(size))) {
    return NULL;
  }
  w->run = run;
  w->size = (uint32_t)size;
  return w;
}

void mmb__work_free(mmb__work *w) {
  if (w->in_request) mmb__request_unref(w->req);
  else mmb__record_free(w, w->size);
}

static mmbError noop(mmb__work *w) { return MMB_OK; }
static mmbError issue_noop(mmb__work *w, mmb__stream *s) { return MMB_OK; }

/* An item that does nothing but mark its place (a fence, a dependency). */
static mmb__work *marker(bool requested) {
  mmb__work *w = mmb__work_new(sizeof *w, noop, requested);
  if (w) w->issue = issue_noop;
  return w;
}

static void keep_error(mmbQueue *q, mmbError err) {
  pthread_mutex_lock(&q->lock);
  if (q->deferred == MMB_OK) q->deferred = err;
  pthread_mutex_unlock(&q->lock);
}

static void settle(mmbQueue *q, mmb__work *w, mmbError err) {
  if (err != MMB_OK && w->orphan) {
    mmb__log(MMB_LOG_WARN, "queue: fire-and-forget work failed: %s", mmb_error_string(err));
    keep_error(q, err);
  }
  mmb__request *r = w->req;
  if (!r) {
    mmb__work_free(w);
    return;
  }
  if (!w->in_request) mmb__work_free(w);
  mmb__request_finish(r, err);   /* w, if it lives in r, may be gone from here on */
}

/* On a stream, a dependency issued on a stream of the same kind becomes a
   wait on its event (cudaStreamWaitEvent); any other is waited for here. */
static void wait_after(mmbQueue *q, mmb__request *a) {
  mmb__stream *s = q->stream;
  void *ev;
  if (!s || !(ev = mmb__request_issued(a)) || a->event_ops != s->events ||
      s->wait_event(s, ev) != MMB_OK)
    mmb__request_wait(a);
  mmb__request_unref(a);
}

/* Issued work's request is done when the event recorded after it passes. */
static void settle_issued(mmbQueue *q, mmb__work *w) {
  mmb__stream *s = q->stream;
  mmb__request *r = w->req;
  void *ev;
  if (r && s->record(s, &ev) == MMB_OK) {
    if (!w->in_request) mmb__work_free(w);
    mmb__request_attach(r, ev, s->events);   /* a poll may settle it from here on */
    mmb__request_unref(r);                   /* the work's reference (w may go with it) */
    return;
  }
  settle(q, w, r ? s->sync(s) : MMB_OK);   /* no event: wait for the stream */
}

/* The queue whose work this thread runs (a worker runs one queue's). */
static _Thread_local mmbQueue *running_here;

mmbQueue *mmb__queue_running_here(void) { return running_here; }

/* (A thread queue runs its work in order, one at a time; a stream's earlier
   work is done before a host function or task of the stream runs: what is
   not done is behind.) */
mmbError mmb__request_not_behind(const char *func, mmb__request *r) {
  if (MMB__LIKELY(!running_here || !r || r->q != running_here) || mmb__request_done(r))
    return MMB_OK;
  return mmb__fail(MMB_INVALID_STATE, func, "called from work running on a queue, on data "
                   "with work queued behind it there: it would wait for itself (submit the "
                   "call to the queue after that work, or make it from another thread)");
}

/* Destroying or synchronising q from its own work would wait for that work
   to end, which waits for the call: refused. */
static mmbError not_from_own_work(const char *func, const mmbQueue *q) {
  if (MMB__UNLIKELY(running_here == q))
    return mmb__fail(MMB_INVALID_STATE, func, "called from work running on that queue, it would "
                     "wait for itself (submit a marker, or wait on another thread)");
  return MMB_OK;
}

void mmb__work_execute(mmbQueue *q, mmb__work *w) {
  running_here = q;
  if (w->after) wait_after(q, w->after);
  mmb__stream *s = q->stream;
  mmbError err = s && w->issue ? w->issue(w, s) : MMB_UNSUPPORTED;
  if (err == MMB_OK) {
    settle_issued(q, w);
  } else if (err != MMB_UNSUPPORTED) {
    settle(q, w, err);
  } else {   /* host work runs after what the stream has in flight */
    err = s ? s->sync(s) : MMB_OK;
    settle(q, w, err == MMB_OK ? w->run(w) : err);
  }
  running_here = NULL;
}

mmbError mmb__queue_check(const char *func, mmbQueue *q, mmbRequest *req) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(q, MMB__KIND_QUEUE, func, "queue");
  MMB__ARG(req && req->impl, func, "the request is in use: wait on it first (or zero it)");
  return MMB_OK;
}

mmbError mmb__queue_push(const char *func, mmbQueue *q, mmb__work *w, mmbRequest *req,
                         mmb__request **track) {
  w->orphan = !req;
  if ((req || track) && !w->req) {
    if (!(w->req = mmb__request_new())) {
      mmb__work_free(w);
      return mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for a request");
    }
  }
  if (w->req) {   /* one reference for the work, one per holder */
    mmb__request *r = w->req;
    r->q = q;
    /* nobody else sees r before the push: plain stores, no atomic operations */
    uint32_t refs = (uint32_t)(req != NULL) + (uint32_t)(track != NULL);
    atomic_store_explicit(&r->state,
                          atomic_load_explicit(&r->state, memory_order_relaxed) + refs * MMB__RQ_REF,
                          memory_order_relaxed);
    if (req) req->impl = mmb__request_hold(r);
    if (track) *track = r;
  }
  q->backend->push(q, w);
  return MMB_OK;
}

void mmb__pending_wait(mmb__request **slot) {
  if (!*slot) return;
  mmb__request_wait(*slot);
  mmb__request_unref(*slot);
  *slot = NULL;
}

static mmbError push_after(const char *func, mmbQueue *q, mmb__request *r) {
  mmb__work *w = marker(false);
  if (!w) return mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for a dependency");
  w->after = r;
  mmb__request_ref(r);
  return mmb__queue_push(func, q, w, NULL, NULL);
}

mmbError mmb__pending_order(const char *func, mmbQueue *q, mmb__request *r) {
  if (!r || r->q == q || mmb__request_done(r)) return MMB_OK;
  return push_after(func, q, r);
}

void mmb__pending_release_done(mmb__request **slot) {
  if (*slot && mmb__request_done(*slot)) {
    mmb__request_unref(*slot);
    *slot = NULL;
  }
}

void mmb__pending_set(mmb__request **slot, mmb__request *r) {
  mmb__request_ref(r);
  if (*slot) mmb__request_unref(*slot);
  *slot = r;
}

/* The backends, installed by the lifecycle (the dispatcher never names
   them: they call it to run their work, so naming them would make a cycle). */
static const mmb__queue_backend *thread_backend, *stream_backend;

void mmb__queue_backends_install(const mmb__queue_backend *thread,
                                 const mmb__queue_backend *stream) {
  thread_backend = thread;
  stream_backend = stream;
}

static mmbError resolve_backend(const mmbQueueOptions *o, const mmb__queue_backend **out) {
  switch (o->backend) {
    case MMB_QUEUE_AUTO:
      if (o->native) return resolve_backend(&(mmbQueueOptions){.backend = MMB_QUEUE_CUDA_STREAM,
                                                              .device = o->device,
                                                              .native = o->native}, out);
      *out = stream_backend && mmb__cuda_device_count() > 0 ? stream_backend : thread_backend;
      return MMB_OK;
    case MMB_QUEUE_THREAD:
      MMB__ARG(o->native != NULL, "mmb_queue_create", "a thread queue takes no native queue");
      *out = thread_backend;
      return MMB_OK;
    case MMB_QUEUE_CUDA_STREAM:
      if (!stream_backend || mmb__cuda_device_count() == 0)
        return mmb__fail(MMB_UNAVAILABLE, "mmb_queue_create", "no CUDA device for a stream");
      MMB__ARG(o->device < 0 || o->device >= mmb__cuda_device_count(), "mmb_queue_create",
               "device %d of %d", o->device, mmb__cuda_device_count());
      *out = stream_backend;
      return MMB_OK;
  }
  return mmb__fail(MMB_INVALID_ARG, "mmb_queue_create", "unknown backend %d", (int)o->backend);
}

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static mmbQueue *live;   /* guarded by live_lock */

static void link_queue(mmbQueue *q) {
  pthread_mutex_lock(&live_lock);
  q->next = live;
  if (live) live->prev = q;
  live = q;
  pthread_mutex_unlock(&live_lock);
}

static void unlink_queue(mmbQueue *q) {
  pthread_mutex_lock(&live_lock);
  if (q->prev) q->prev->next = q->next;
  else live = q->next;
  if (q->next) q->next->prev = q->prev;
  pthread_mutex_unlock(&live_lock);
}

mmbError mmb_queue_create(mmbQueueOptions *opts, mmbQueue **q) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!q, __func__, "q is NULL");
  mmbQueueOptions o = opts ? *opts : (mmbQueueOptions){0};
  if (o.near) MMB__HANDLE(o.near, MMB__KIND_SPACE, __func__, "opts->near");
  const mmb__queue_backend *be = NULL;
  mmbError err = resolve_backend(&o, &be);
  return err != MMB_OK ? err : mmb__queue_create_on(be, &o, q);
}

mmbError mmb__queue_create_on(const mmb__queue_backend *be, const mmbQueueOptions *o,
                              mmbQueue **q) {
  mmbError err;
  mmbQueue *nq = mmb__object_new(MMB__KIND_QUEUE, sizeof *nq);
  if (!nq) return MMB_OUT_OF_MEMORY;
  nq->backend = be;
  pthread_mutex_init(&nq->lock, NULL);
  if ((err = be->start(nq, o)) != MMB_OK) {
    pthread_mutex_destroy(&nq->lock);
    mmb__object_free(nq);
    return err;
  }
  link_queue(nq);
  *q = nq;
  return MMB_OK;
}

mmbError mmb_queue_get_native(const mmbQueue *q, void **out) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(q, MMB__KIND_QUEUE, __func__, "queue");
  MMB__ARG(!out, __func__, "out is NULL");
  if (!q->stream) return mmb__fail(MMB_UNSUPPORTED, __func__, "a thread queue has no native queue");
  *out = q->stream->native;
  return MMB_OK;
}

/* A marker pushed on q: done once everything pushed before it has run. */
static mmbError push_marker(const char *func, mmbQueue *q, mmbRequest *req, mmb__request **track) {
  mmb__work *w = marker(req || track);
  if (!w) return mmb__fail(MMB_OUT_OF_MEMORY, func, "no memory for a marker");
  return mmb__queue_push(func, q, w, req, track);
}

mmbError mmb_queue_marker(mmbQueue *q, mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  if (err != MMB_OK) return err;
  MMB__ARG(!req, __func__, "req is NULL");
  return push_marker(__func__, q, req, NULL);
}

mmbError mmb_queue_get_backend(const mmbQueue *q, mmbQueueBackend *backend) {
  MMB__HANDLE(q, MMB__KIND_QUEUE, __func__, "queue");
  MMB__ARG(!backend, __func__, "backend is NULL");
  *backend = q->stream ? MMB_QUEUE_CUDA_STREAM : MMB_QUEUE_THREAD;
  return MMB_OK;
}

static mmbError take_deferred(mmbQueue *q) {
  pthread_mutex_lock(&q->lock);
  mmbError err = q->deferred;
  q->deferred = MMB_OK;
  pthread_mutex_unlock(&q->lock);
  return err;
}

mmbError mmb_queue_destroy(mmbQueueOptions *opts, mmbQueue **q) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!q, __func__, "q is NULL");
  MMB__HANDLE(*q, MMB__KIND_QUEUE, __func__, "queue");
  mmbError own = not_from_own_work(__func__, *q);
  if (own != MMB_OK) return own;
  mmbQueue *dq = *q;
  unlink_queue(dq);
  dq->backend->stop(dq);
  mmbError err = take_deferred(dq);
  pthread_mutex_destroy(&dq->lock);
  mmb__object_free(dq);
  *q = NULL;
  return err;
}

void mmb__queues_finalize(void) {
  for (;;) {
    pthread_mutex_lock(&live_lock);
    mmbQueue *q = live;
    pthread_mutex_unlock(&live_lock);
    if (!q) break;
    mmb__log(MMB_LOG_WARN, "finalize: draining and destroying a live %s queue",
             q->backend->name);
    MMB__MUST(mmb_queue_destroy(NULL, &q));
  }
}

mmbError mmb__queue_fence(const char *func, mmbQueue *q, mmb__request **out) {
  return push_marker(func, q, NULL, out);
}

mmbError mmb_queue_synchronize(mmbQueue *q) {
  mmbError err = mmb__queue_check(__func__, q, NULL);
  mmb__request *fence;
  if (err == MMB_OK) err = not_from_own_work(__func__, q);
  if (err != MMB_OK || (err = mmb__queue_fence(__func__, q, &fence)) != MMB_OK) return err;
  err = mmb__request_wait(fence);   /* on a stream: an error of work issued without a request */
  mmb__request_unref(fence);
  mmbError kept = take_deferred(q);
  return kept != MMB_OK ? kept : err;
}

typedef struct user_work {
  mmb__work w;
  void (*fn)(void *);
  void *arg;
} user_work;

_Static_assert(sizeof(user_work) <= MMB__REQUEST_WORK_BYTES, "a submission lives in its request");

static mmbError run_user(mmb__work *w) {
  user_work *u = (user_work *)w;
  u->fn(u->arg);
  return MMB_OK;
}

/* What a stream's host function needs when it runs, after the work that
   issued it may have gone: the user's call and its queue. */
typedef struct user_call {
  mmbQueue *q;
  void (*fn)(void *);
  void *arg;
} user_call;

/* On the stream's own thread, which runs the queue's work like its worker:
   the work calling back into its queue is refused there too. */
static void call_user(void *arg) {
  user_call c = *(user_call *)arg;
  mmb__free(arg);
  mmbQueue *was = running_here;
  running_here = c.q;
  c.fn(c.arg);
  running_here = was;
}

/* On a stream, user work is a host function in stream order (it must not
   call CUDA: the CUDA runtime runs it on a thread of its own). The worker
   issuing it runs its queue's work (running_here). */
static mmbError issue_user(mmb__work *w, mmb__stream *s) {
  user_work *u = (user_work *)w;
  user_call *c = mmb__malloc(sizeof *c);
  if (!c) return MMB_OUT_OF_MEMORY;
  *c = (user_call){.q = running_here, .fn = u->fn, .arg = u->arg};
  mmbError err = s->host_func(s, call_user, c);
  if (err != MMB_OK) mmb__free(c);
  return err;
}

mmbError mmb_queue_submit(mmbQueue *q, void (*fn)(void *arg), void *arg, mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  if (err != MMB_OK) return err;
  MMB__ARG(!fn, __func__, "fn is NULL");
  user_work *u = (user_work *)mmb__work_new(sizeof *u, run_user, req != NULL);
  if (!u) return MMB_OUT_OF_MEMORY;
  u->w.issue = issue_user;
  u->fn = fn;
  u->arg = arg;
  return mmb__queue_push(__func__, q, &u->w, req, NULL);
}

/* A task returns its error, which becomes the request's. It has no issue
   hook: a stream queue runs it on its own thread once the stream's earlier
   work is done, where it may call CUDA and block. */
typedef struct task_work {
  mmb__work w;
  mmbTaskFunction fn;
  void *arg;
} task_work;

static mmbError run_task(mmb__work *w) {
  task_work *t = (task_work *)w;
  return t->fn(t->arg);
}

mmbError mmb_queue_submit_task(mmbQueue *q, mmbTaskFunction fn, void *arg, mmbRequest *req) {
  mmbError err = mmb__queue_check(__func__, q, req);
  if (err != MMB_OK) return err;
  MMB__ARG(!fn, __func__, "fn is NULL");
  task_work *t = (task_work *)mmb__work_new(sizeof *t, run_task, req != NULL);
  if (!t) return MMB_OUT_OF_MEMORY;
  t->fn = fn;
  t->arg = arg;
  return mmb__queue_push(__func__, q, &t->w, req, NULL);
}

mmbError mmb_queue_wait_request(mmbQueue *q, mmbRequest *req) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(q, MMB__KIND_QUEUE, __func__, "queue");
  mmb__request *r;
  mmbError err = mmb__request_held(__func__, req, &r);
  if (err != MMB_OK || !r) return err;
  return push_after(__func__, q, r);
}
