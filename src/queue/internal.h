/* Internal: queues and work items, and the table every queue backend
   implements. The public queue API knows no backend. Requests are core's
   (core/request.h): the allocator's deferred reuse waits on them too.

   A work item belongs to its queue from the push until it has run; the
   request it completes holds a reference of its own (core/request.h). */
#ifndef MMB_QUEUE_INTERNAL_H
#define MMB_QUEUE_INTERNAL_H

#include "alloc/internal.h"

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
/* MMB_INVALID_STATE (for func) when r is work of the queue the calling
   thread runs that has not run yet: work queued behind the caller, which
   a wait for it would wait for forever. MMB_OK otherwise (r NULL too). */
mmbError mmb__request_not_behind(const char *func, mmb__request *r);

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
/* The region's bytes are read by the work behind r: reset and destroy of
   the region wait for it. */
void mmb__region_read_by(mmbRegion *region, mmb__request *r);
/* `a`, once freed, is not reused before r completes. */
mmbError mmb__allocation_after(const char *func, mmbAllocation *a, mmb__request *r);
/* A request (one reference, in *out) that completes once the work pushed
   on q so far has run. */
mmbError mmb__queue_fence(const char *func, mmbQueue *q, mmb__request **out);
/* Checks the queue and request arguments of a submission. */
mmbError mmb__queue_check(const char *func, mmbQueue *q, mmbRequest *req);

#endif /* MMB_QUEUE_INTERNAL_H */
