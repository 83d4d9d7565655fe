/* Internal: queues, requests and work items, and the table every queue
   backend implements. The public queue API knows no backend.

   Ownership: a request is reference counted; the caller's mmbRequest holds
   one reference and the work item that completes it another, so either side
   may go first (a request outlives its queue). A work item belongs to its
   queue from the push until it has run. */
#ifndef MMB_QUEUE_INTERNAL_H
#define MMB_QUEUE_INTERNAL_H

#include "../alloc/alloc.h"

typedef struct mmb__request {
  _Atomic int done;
  mmbError err;                 /* written before done is released */
  _Atomic int refs;
  pthread_mutex_t lock;         /* with cond: for waiters that sleep */
  pthread_cond_t cond;
  const mmbQueue *q;            /* the queue it was submitted on */
} mmb__request;

mmb__request *mmb__request_new(void);              /* one reference; NULL on OOM */
void mmb__request_ref(mmb__request *r);
void mmb__request_unref(mmb__request *r);
void mmb__request_complete(mmb__request *r, mmbError err);
static inline bool mmb__request_done(mmb__request *r) {
  return atomic_load_explicit(&r->done, memory_order_acquire);
}
/* Spins briefly, then sleeps until done; returns the work's error. */
mmbError mmb__request_wait(mmb__request *r);

typedef struct mmb__work mmb__work;
struct mmb__work {
  mmbError (*run)(mmb__work *w);   /* the work; its error goes to req */
  void (*finish)(mmb__work *w);    /* optional: after run, before req completes */
  mmb__request *req;               /* completed after run (may be NULL) */
  bool orphan;                     /* the caller holds no request: errors are deferred */
  mmb__request *after;             /* optional: run only once it is done */
  mmb__work *next;
};

/* A work item with `size` bytes (at least sizeof(mmb__work)) whose payload
   follows the header; NULL on OOM. */
mmb__work *mmb__work_new(size_t size, mmbError (*run)(mmb__work *w));

typedef struct mmb__queue_backend {
  const char *name;
  mmbError (*start)(mmbQueue *q, const mmbQueueOptions *opts);
  /* Takes the item; it runs after every item pushed before it. */
  void (*push)(mmbQueue *q, mmb__work *w);
  /* Runs what was pushed, then releases the backend's resources. */
  void (*stop)(mmbQueue *q);
} mmb__queue_backend;

extern const mmb__queue_backend mmb__thread_backend;
/* NULL when mmb was built without CUDA. */
extern const mmb__queue_backend *const mmb__cuda_stream_backend;

struct mmbQueue {
  const mmb__queue_backend *backend;
  void *state;
  pthread_mutex_t lock;    /* guards deferred */
  mmbError deferred;       /* first error of fire-and-forget work since synchronize */
  mmbQueue *next, *prev;   /* live queues, for mmb_finalize */
};

/* Backends call this to run an item in order: waits for its dependency,
   runs it, completes its request (or keeps its error), frees it. */
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
