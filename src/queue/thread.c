/* The thread backend: one worker thread per queue, running work items in
   FIFO order. Submission is lock-free: a push onto an atomic stack, which
   the worker takes whole and reverses. After a batch the worker spins for
   up to MMB__SPIN_NS (back-to-back submissions then cost no wake-up),
   yielding now and then to threads with work, then sleeps; a submitter
   signals only a worker that said it sleeps (the same handshake as a
   request's sleepers, request.c). With
   mmbQueueOptions.near, the worker is bound with hwloc to the CPUs of that
   space's NUMA node. */
#include "queue/internal.h"


typedef struct thread_queue {
  mmbQueue *q;
  pthread_t thread;
  _Atomic(mmb__work *) stack;   /* pushed work, newest first */
  _Atomic bool sleeping, stop;
  pthread_mutex_t lock;         /* with cond: the worker's sleep */
  pthread_cond_t cond;
} thread_queue;

static bool work_or_stop(void *arg) {
  thread_queue *t = arg;
  return atomic_load_explicit(&t->stack, memory_order_relaxed) ||
         atomic_load_explicit(&t->stop, memory_order_relaxed);
}

/* Waits for work (or stop): spins, yielding now and then to threads that
   have work (BLAS, the caller's), then sleeps. */
static void wait_for_work(thread_queue *t) {
  if (mmb__spin(work_or_stop, t, true)) return;
  pthread_mutex_lock(&t->lock);
  atomic_store_explicit(&t->sleeping, true, memory_order_seq_cst);
  while (!atomic_load_explicit(&t->stack, memory_order_seq_cst) &&
         !atomic_load_explicit(&t->stop, memory_order_seq_cst))
    pthread_cond_wait(&t->cond, &t->lock);
  atomic_store_explicit(&t->sleeping, false, memory_order_relaxed);
  pthread_mutex_unlock(&t->lock);
}

static void *worker(void *arg) {
  thread_queue *t = arg;
  for (;;) {
    /* stop is set after the last push, so it is read before the stack: read
       after, a push and the stop could both land between the two reads, and
       that work would be lost with the queue */
    bool stopping = atomic_load_explicit(&t->stop, memory_order_acquire);
    mmb__work *w = atomic_exchange_explicit(&t->stack, NULL, memory_order_acquire);
    if (!w) {
      if (stopping) return NULL;
      wait_for_work(t);
      continue;
    }
    mmb__work *fifo = NULL;   /* oldest first */
    while (w) {
      mmb__work *next = w->next;
      w->next = fifo;
      fifo = w;
      w = next;
    }
    while (fifo) {
      mmb__work *next = fifo->next;
      mmb__work_execute(t->q, fifo);
      fifo = next;
    }
  }
}

static void bind_near(thread_queue *t, const mmbMemSpace *space) {
  if (space) mmb__os_bind_thread(t->thread, space->info.numa_node);
}

static mmbError thread_start(mmbQueue *q, const mmbQueueOptions *opts) {
  thread_queue *t = mmb__calloc_lines(sizeof *t);   /* its words bounce between two threads */
  if (!t) return MMB_OUT_OF_MEMORY;
  t->q = q;
  atomic_init(&t->stack, NULL);
  atomic_init(&t->sleeping, false);
  atomic_init(&t->stop, false);
  pthread_mutex_init(&t->lock, NULL);
  pthread_cond_init(&t->cond, NULL);
  if (pthread_create(&t->thread, NULL, worker, t) != 0) {
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    mmb__free(t);
    return mmb__fail(MMB_ERROR, "mmb_queue_create", "no worker thread");
  }
  bind_near(t, opts->near);
  q->state = t;
  return MMB_OK;
}

static void wake_worker(thread_queue *t) {
  if (!atomic_load_explicit(&t->sleeping, memory_order_seq_cst)) return;
  pthread_mutex_lock(&t->lock);
  pthread_cond_signal(&t->cond);
  pthread_mutex_unlock(&t->lock);
}

static void thread_push(mmbQueue *q, mmb__work *w) {
  thread_queue *t = q->state;
  mmb__work *head = atomic_load_explicit(&t->stack, memory_order_relaxed);
  do {
    w->next = head;
  } while (!atomic_compare_exchange_weak_explicit(&t->stack, &head, w, memory_order_seq_cst,
                                                  memory_order_relaxed));
  wake_worker(t);
}

static void thread_stop(mmbQueue *q) {
  thread_queue *t = q->state;
  atomic_store_explicit(&t->stop, true, memory_order_seq_cst);
  pthread_mutex_lock(&t->lock);
  pthread_cond_signal(&t->cond);
  pthread_mutex_unlock(&t->lock);
  pthread_join(t->thread, NULL);
  pthread_cond_destroy(&t->cond);
  pthread_mutex_destroy(&t->lock);
  mmb__free(t);
}

const mmb__queue_backend mmb__thread_backend = {
  .name = "thread", .start = thread_start, .push = thread_push, .stop = thread_stop,
};

#ifndef MMB_HAVE_CUDA   /* with CUDA: cuda_stream.c */
const mmb__queue_backend *const mmb__cuda_stream_backend = NULL;
#endif
