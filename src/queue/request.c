/* Requests: a completion flag and an error, with a reference for the caller
   and one for the work that completes it; for work issued on a stream, the
   event that marks its end. */
#include "queue/internal.h"

#include <sched.h>

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

mmb__request *mmb__request_new(void) {
  mmb__request *r = mmb__object_new(MMB__KIND_REQUEST, sizeof *r);
  if (!r) return NULL;
  atomic_init(&r->held, 0);
  atomic_init(&r->done, 0);
  atomic_init(&r->refs, 1);
  atomic_init(&r->event, NULL);
  r->event_ops = NULL;
  r->err = MMB_OK;
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->cond, NULL);
  return r;
}

void mmb__request_ref(mmb__request *r) { atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed); }

void mmb__request_unref(mmb__request *r) {
  if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1) return;
  void *ev = atomic_load_explicit(&r->event, memory_order_acquire);
  if (ev) r->event_ops->destroy(ev);
  pthread_cond_destroy(&r->cond);
  pthread_mutex_destroy(&r->lock);
  mmb__object_free(r);
}

void mmb__request_complete(mmb__request *r, mmbError err) {
  pthread_mutex_lock(&r->lock);   /* a waiter between its check and its sleep sees it */
  if (!atomic_load_explicit(&r->done, memory_order_relaxed)) {
    r->err = err;
    atomic_store_explicit(&r->done, 1, memory_order_release);
    pthread_cond_broadcast(&r->cond);
  }
  pthread_mutex_unlock(&r->lock);
}

void mmb__request_attach(mmb__request *r, void *event, const mmb__event_ops *ops) {
  pthread_mutex_lock(&r->lock);
  r->event_ops = ops;
  atomic_store_explicit(&r->event, event, memory_order_release);
  pthread_cond_broadcast(&r->cond);   /* sleepers go on to wait for the event */
  pthread_mutex_unlock(&r->lock);
}

bool mmb__request_poll(mmb__request *r) {
  void *ev = atomic_load_explicit(&r->event, memory_order_acquire);
  if (!ev) return false;
  bool passed = false;
  mmbError err = r->event_ops->query(ev, &passed);
  if (err == MMB_OK && !passed) return false;
  mmb__request_complete(r, err);
  return true;
}

static bool issued(mmb__request *r) {
  return atomic_load_explicit(&r->done, memory_order_acquire) ||
         atomic_load_explicit(&r->event, memory_order_acquire);
}

/* A short spin first: a round trip through a busy worker is a few
   microseconds, far less than a sleep and a wake-up. */
static bool spin(mmb__request *r, bool (*ready)(mmb__request *r)) {
  for (int i = 0; i < 2000; i++) {
    if (ready(r)) return true;
    if (i % 64 == 63) sched_yield();
    else CPU_RELAX();
  }
  return ready(r);
}

void *mmb__request_issued(mmb__request *r) {
  if (!spin(r, issued)) {
    pthread_mutex_lock(&r->lock);
    while (!issued(r)) pthread_cond_wait(&r->cond, &r->lock);
    pthread_mutex_unlock(&r->lock);
  }
  return atomic_load_explicit(&r->done, memory_order_acquire)
             ? NULL : atomic_load_explicit(&r->event, memory_order_acquire);
}

/* Work issued on a stream is waited for on its event. */
mmbError mmb__request_wait(mmb__request *r) {
  void *ev;
  if (!spin(r, mmb__request_done) && (ev = mmb__request_issued(r)))
    mmb__request_complete(r, r->event_ops->sync(ev));
  return r->err;
}

mmbError mmb__request_held(const char *func, const mmbRequest *req) {
  MMB__ARG(!req, func, "req is NULL");
  const mmb__request *r = req->impl;
  if (!r) return MMB_OK;
  MMB__HANDLE(r, MMB__KIND_REQUEST, func, "request");
  MMB__ARG(!atomic_load_explicit(&r->held, memory_order_acquire), func,
           "request %p was waited for already (through a copy of it?)", (const void *)r);
  return MMB_OK;
}

mmbError mmb_request_is_complete(mmbRequest *req, bool *complete) {
  MMB__REQUIRE_INIT();
  mmbError err = mmb__request_held(__func__, req);
  if (err != MMB_OK) return err;
  MMB__ARG(!complete, __func__, "complete is NULL");
  *complete = !req->impl || mmb__request_done(req->impl);
  return MMB_OK;
}

mmbError mmb_wait(mmbRequest *req) {
  MMB__REQUIRE_INIT();
  mmbError err = mmb__request_held(__func__, req);
  if (err != MMB_OK) return err;
  mmb__request *r = req->impl;
  if (!r) return MMB_OK;
  /* the caller's reference is dropped once, whatever copies of req exist */
  MMB__ARG(!atomic_exchange_explicit(&r->held, 0, memory_order_acq_rel), __func__,
           "request %p was waited for already (through a copy of it?)", (void *)r);
  err = mmb__request_wait(r);
  req->impl = NULL;
  mmb__request_unref(r);
  return err;
}

mmbError mmb_wait_all(size_t num_requests, mmbRequest *reqs, mmbError *errors) {
  MMB__REQUIRE_INIT();
  MMB__ARG(num_requests && !reqs, __func__, "reqs is NULL");
  mmbError first = MMB_OK;
  for (size_t i = 0; i < num_requests; i++) {
    mmbError err = mmb_wait(&reqs[i]);
    if (errors) errors[i] = err;
    if (first == MMB_OK) first = err;
  }
  return first;
}
