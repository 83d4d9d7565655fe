/* The thread backend: one worker thread per queue, running work items in
   FIFO order. The worker takes the whole list at once and runs it without
   the lock; it spins briefly before it sleeps, so that back-to-back
   submissions do not pay a wake-up each. With mmbQueueOptions.near, the
   worker is bound with hwloc to the CPUs of that space's NUMA node. */
#include "queue/internal.h"

#include <sched.h>

typedef struct thread_queue {
  mmbQueue *q;
  pthread_t thread;
  pthread_mutex_t lock;      /* guards head, tail, stop, sleeping */
  pthread_cond_t cond;
  mmb__work *head, *tail;
  _Atomic bool pending;      /* head != NULL, readable without the lock */
  bool stop, sleeping;
} thread_queue;

static mmb__work *take_all(thread_queue *t) {
  mmb__work *w = t->head;
  t->head = t->tail = NULL;
  atomic_store_explicit(&t->pending, false, memory_order_relaxed);
  return w;
}

static void *worker(void *arg) {
  thread_queue *t = arg;
  for (;;) {
    for (int i = 0; i < 4000 && !atomic_load_explicit(&t->pending, memory_order_relaxed); i++)
      if (i % 256 == 255) sched_yield();
    pthread_mutex_lock(&t->lock);
    while (!t->head && !t->stop) {
      t->sleeping = true;
      pthread_cond_wait(&t->cond, &t->lock);
      t->sleeping = false;
    }
    mmb__work *w = take_all(t);
    bool stop = t->stop;
    pthread_mutex_unlock(&t->lock);
    while (w) {
      mmb__work *next = w->next;
      mmb__work_execute(t->q, w);
      w = next;
    }
    if (stop) {   /* stop is set after the last push: drain, then end */
      pthread_mutex_lock(&t->lock);
      bool empty = !t->head;
      pthread_mutex_unlock(&t->lock);
      if (empty) return NULL;
    }
  }
}

static void bind_near(thread_queue *t, const mmbMemSpace *space) {
  if (space) mmb__os_bind_thread(t->thread, space->info.numa_node);
}

static mmbError thread_start(mmbQueue *q, const mmbQueueOptions *opts) {
  thread_queue *t = mmb__calloc(1, sizeof *t);
  if (!t) return MMB_OUT_OF_MEMORY;
  t->q = q;
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

static void thread_push(mmbQueue *q, mmb__work *w) {
  thread_queue *t = q->state;
  w->next = NULL;
  pthread_mutex_lock(&t->lock);
  if (t->tail) t->tail->next = w;
  else t->head = w;
  t->tail = w;
  atomic_store_explicit(&t->pending, true, memory_order_relaxed);
  if (t->sleeping) pthread_cond_signal(&t->cond);
  pthread_mutex_unlock(&t->lock);
}

static void thread_stop(mmbQueue *q) {
  thread_queue *t = q->state;
  pthread_mutex_lock(&t->lock);
  t->stop = true;
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
