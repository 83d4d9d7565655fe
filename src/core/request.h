/* Internal: requests, the completion objects of queued work. A request is
   reference counted: the caller's mmbRequest holds one reference and the
   work item that completes it another, so either side may go first (a
   request outlives its queue). They live in core because they depend on
   nothing but core: the queues complete them, and the allocator's deferred
   reuse (alloc/strategy/deferred.c) waits on them. */
#ifndef MMB_CORE_REQUEST_H
#define MMB_CORE_REQUEST_H

/* (included by core/internal.h, after what it declares) */

/* A device event (cuda_stream.c): passes once the stream work recorded
   before it has run. The table is static: requests outlive their queues. */
typedef struct mmb__event_ops {
  mmbError (*query)(void *event, bool *passed);   /* an error: the work failed */
  mmbError (*sync)(void *event);                  /* blocks until it has passed */
  void (*destroy)(void *event);
} mmb__event_ops;

/* A request is done when its work completed on the host, or, for work
   issued on a stream, once its event has passed: whoever sees that first
   (a waiter, a poll) settles it.

   Its state is one atomic word: whether it is settling (err being written)
   or done, whether a waiter may be asleep on cond, and the references. The
   worker that ran the work marks it done and drops its reference in one
   atomic operation. Its first cache line holds that word and what a waiter
   reads; the second, a small work item made with the request (the work of
   mmb_queue_submit, a marker), so that a round trip moves two adjacent
   lines between caller and worker, not three scattered ones. */
#define MMB__RQ_SETTLING 1u
#define MMB__RQ_DONE 2u
#define MMB__RQ_SLEEPERS 4u      /* a waiter sleeps, or is about to: wake it */
#define MMB__RQ_REF 8u           /* one reference */
#define MMB__REQUEST_WORK_BYTES 64   /* a work item this small lives in its request */
typedef struct mmb__request {
  _Atomic uint32_t state;       /* MMB__RQ_* flags, references * MMB__RQ_REF */
  _Atomic uint32_t claim;       /* generation << 1 | 1 while a caller's mmbRequest holds it */
  mmbError err;                 /* written (while settling) before done is set */
  const mmbQueue *q;            /* the queue it was submitted on (never read here) */
  _Atomic(void *) event;        /* set once the work is issued on a stream */
  const mmb__event_ops *event_ops;   /* written before event is released */
  struct mmb__request *next;    /* the free records */
  _Alignas(16) unsigned char work[MMB__REQUEST_WORK_BYTES];   /* a work item made with it */
  pthread_mutex_t lock;         /* with cond: for waiters that sleep */
  pthread_cond_t cond;
} mmb__request;

mmb__request *mmb__request_new(void);              /* one reference; NULL on OOM */
void mmb__request_ref(mmb__request *r);
void mmb__request_unref(mmb__request *r);
/* The work's end: completes r with err and drops the work's reference. */
void mmb__request_finish(mmb__request *r, mmbError err);
/* The work is issued on a stream: r is done once `event` has passed. */
void mmb__request_attach(mmb__request *r, void *event, const mmb__event_ops *ops);
/* Settles r if its event has passed; true when r is done. */
bool mmb__request_poll(mmb__request *r);
static inline bool mmb__request_done(mmb__request *r) {
  return (atomic_load_explicit(&r->state, memory_order_acquire) & MMB__RQ_DONE) ||
         mmb__request_poll(r);
}
/* How long a waiter (and an idle worker) spins before it sleeps: longer
   than a sleeping thread takes to wake (tens of microseconds in a VM,
   measured in bench/queue). A waiter that slept on a short round trip would
   need waking too, and the worker, idle meanwhile, would sleep before the
   next submission: every trip would then pay two wake-ups (round trips of
   4 us, where a spinning handoff takes under 1). */
#define MMB__SPIN_NS 200000u
static inline void mmb__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
/* Spins until ready(arg), for MMB__SPIN_NS at most (bounded by time, not
   by a count); with `yield`, lets threads with work run now and then.
   Returns ready(arg). */
bool mmb__spin(bool (*ready)(void *arg), void *arg, bool yield);
/* The caller's mmbRequest.impl for r, which the caller now holds; r is
   new, not yet seen by another thread. */
void *mmb__request_hold(mmb__request *r);
/* The queue floor's check that r is not work queued behind the queue work
   this thread runs (mmb__request_not_behind, set by the lifecycle):
   mmb_wait refuses to wait for such work, which would wait for it. */
extern mmbError (*mmb__request_not_behind_hook)(const char *func, mmb__request *r);
/* MMB_OK when this thread may wait for r (NULL, done, or not queued behind
   the queue work it runs); else that check's MMB_INVALID_STATE, for func.
   Asked before anything changes by every call that would wait. */
mmbError mmb__request_may_wait(const char *func, mmb__request *r);
/* MMB_OK when req is empty (*out NULL) or refers to a request its caller
   still holds (*out it); else MMB_INVALID_ARG (a stale copy, or not a
   request). */
mmbError mmb__request_held(const char *func, const mmbRequest *req, mmb__request **out);
/* Frees the kept request records (mmb_finalize). */
void mmb__requests_trim(void);
/* Spins briefly, then sleeps until done; returns the work's error. */
mmbError mmb__request_wait(mmb__request *r);
/* Waits until r is done or issued on a stream; returns its event while it
   is not done (NULL once done). */
void *mmb__request_issued(mmb__request *r);

#endif /* MMB_CORE_REQUEST_H */
