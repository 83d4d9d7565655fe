/* Internal: queues, requests and work items, and the table every queue
   backend implements. The public queue API knows no backend.

   Ownership: a request is reference counted; the caller's mmbRequest holds
   one reference and the work item that completes it another, so either side
   may go first (a request outlives its queue). A work item belongs to its
   queue from the push until it has run. */
#ifndef MMB_QUEUE_INTERNAL_H
#define MMB_QUEUE_INTERNAL_H

#include "alloc/internal.h"

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
  const mmbQueue *q;            /* the queue it was submitted on */
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
/* The region's bytes are read by the work behind r: reset and destroy of
   the region wait for it. */
void mmb__region_read_by(mmbRegion *region, mmb__request *r);
/* The caller's mmbRequest.impl for r, which the caller now holds; r is
   new, not yet seen by another thread. */
void *mmb__request_hold(mmb__request *r);
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

/* A device stream a queue backend runs work on (cuda_stream.c). What is
   issued on it runs in issue order, after the call that issued it returns. */
typedef struct mmb__stream {
  void *native;                   /* the device's own handle (a cudaStream_t) */
  mmb__copy_engine engine;        /* copies, issued on the stream */
  const mmb__event_ops *events;   /* what record makes */
  /* Enqueues fn(arg) on the stream; fn must not call CUDA. */
  mmbError (*host_func)(struct mmb__stream *s, void (*fn)(void *), void *arg);
  /* Later work on the stream waits for an event of `events`' kind. */
  mmbError (*wait_event)(struct mmb__stream *s, void *event);
  /* A new event that passes once the work issued so far has run. */
  mmbError (*record)(struct mmb__stream *s, void **event);
  /* Blocks until the work issued so far has run (its error, if it failed). */
  mmbError (*sync)(struct mmb__stream *s);
} mmb__stream;

typedef struct mmb__work mmb__work;
struct mmb__work {
  mmbError (*run)(mmb__work *w);   /* the work, on the host; its error goes to req */
  /* Optional: issues the work on a stream instead (a stream queue tries it
     first). MMB_UNSUPPORTED, with nothing issued: run it on the host. */
  mmbError (*issue)(mmb__work *w, mmb__stream *s);
  mmb__request *req;               /* completed after run (may be NULL) */
  mmb__request *after;             /* optional: run only once it is done */
  mmb__work *next;
  uint32_t size;                   /* as made by mmb__work_new */
  bool orphan;                     /* the caller holds no request: errors are deferred */
  bool in_request;                 /* it lives in req's record (and goes with it) */
};

/* A work item with `size` bytes (at least sizeof(mmb__work)) whose payload
   follows the header; NULL on OOM. With `requested` (the work will be
   pushed with a request, the caller's or a tracked one), a small item is
   made inside its request's record, and w->req is that request. */
mmb__work *mmb__work_new(size_t size, mmbError (*run)(mmb__work *w), bool requested);
/* Frees an item that was not pushed, or has run (with its own request's
   reference, when it lives in it). */
void mmb__work_free(mmb__work *w);

typedef struct mmb__queue_backend {
  const char *name;
  mmbError (*start)(mmbQueue *q, const mmbQueueOptions *opts);
  /* Takes the item; it runs after every item pushed before it. */
  void (*push)(mmbQueue *q, mmb__work *w);
  /* Runs what was pushed, then releases the backend's resources. */
  void (*stop)(mmbQueue *q);
} mmb__queue_backend;

/* The thread backend. A stream backend runs its work on the same worker,
   which issues what it can on q->stream and runs the rest on the host. */
extern const mmb__queue_backend mmb__thread_backend;
/* NULL when mmb was built without CUDA. */
extern const mmb__queue_backend *const mmb__cuda_stream_backend;
/* The backends mmb_queue_create chooses from (the lifecycle, at init; the
   stream one NULL without CUDA). */
void mmb__queue_backends_install(const mmb__queue_backend *thread,
                                 const mmb__queue_backend *stream);

struct mmbQueue {
  const mmb__queue_backend *backend;
  void *state;
  mmb__stream *stream;     /* a stream backend's stream; NULL for threads */
  pthread_mutex_t lock;    /* guards deferred */
  mmbError deferred;       /* first error of fire-and-forget work since synchronize */
  mmbQueue *next, *prev;   /* live queues, for mmb_finalize */
};

/* Drains and destroys the queues the caller left (finalize, first). */
void mmb__queues_finalize(void);
/* The queue whose work the calling thread is running now; NULL outside
   queue work. Waiting on that queue from there would wait for itself. */
mmbQueue *mmb__queue_running_here(void);

/* mmb_queue_create once the backend is chosen (tests pass their own). */
mmbError mmb__queue_create_on(const mmb__queue_backend *be, const mmbQueueOptions *o,
                              mmbQueue **q);

/* Backends call this to run an item in order: waits for its dependency,
   runs it (or issues it on q->stream), completes its request (or keeps its
   error), frees it. */
void mmb__work_execute(mmbQueue *q, mmb__work *w);

/* Submits w on q with the caller's request (NULL: fire-and-forget). With
   `track`, the work gets a request even without the caller's, and *track
   receives a reference to it. On an error w is freed and nothing is queued. */
mmbError mmb__queue_push(const char *func, mmbQueue *q, mmb__work *w, mmbRequest *req,
                         mmb__request **track);

/* ---- hazards ------------------------------------------------------------
   An object mmb moves data of (a tile, an array) keeps the request of the
   last asynchronous operation submitted on it. A synchronous operation
   waits for it; an asynchronous one on another queue is ordered after it
   (FIFO orders one queue). The error stays with the operation's own request. */
/* Waits for *slot's work, if any, and clears the slot. */
void mmb__pending_wait(mmb__request **slot);
/* Later work on q waits for r when r is pending on another queue. */
mmbError mmb__pending_order(const char *func, mmbQueue *q, mmb__request *r);
/* Makes r (a new reference) the object's last operation. */
void mmb__pending_set(mmb__request **slot, mmb__request *r);
/* Lets go of the object's last operation if it is done: nothing to order
   after it any more, and its request need not live as long as the object. */
void mmb__pending_release_done(mmb__request **slot);

/* ---- reuse (reuse.c) ---------------------------------------------------- */
extern const mmb__fence_ops mmb__request_fence;
/* `a`, once freed, is not reused before r completes. */
mmbError mmb__allocation_after(const char *func, mmbAllocation *a, mmb__request *r);
/* A request (one reference, in *out) that completes once the work pushed
   on q so far has run. */
mmbError mmb__queue_fence(const char *func, mmbQueue *q, mmb__request **out);
/* Checks the queue and request arguments of a submission. */
mmbError mmb__queue_check(const char *func, mmbQueue *q, mmbRequest *req);

#endif /* MMB_QUEUE_INTERNAL_H */
