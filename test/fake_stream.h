/* A fake stream for tests and stress drivers: a "device" thread running
   copies, host functions, event records and event waits in issue order,
   under a queue made with the thread backend's worker, exactly as the
   CUDA-stream backend is, so the stream execution path (what is issued,
   what runs on the host after a drain, requests backed by events, waits on
   events across streams) runs where there is no GPU. The "device" memory is
   a user provider's: host bytes the core treats as unreachable, which the
   fake stream (alone) reaches. */
#ifndef MMB_TEST_FAKE_STREAM_H
#define MMB_TEST_FAKE_STREAM_H

#include <mmb/mmb.h>

#include "fake_device.h"
#include "queue/internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the fake stream ----------------------------------------------------- */
typedef struct fake_event {
  atomic_int passed, refs;
  mmbError err;   /* written before passed */
} fake_event;

static void event_unref(fake_event *e) {
  if (atomic_fetch_sub(&e->refs, 1) == 1) free(e);
}
static mmbError event_query(void *ev, bool *passed) {
  fake_event *e = ev;
  *passed = atomic_load(&e->passed);
  return *passed ? e->err : MMB_OK;
}
static mmbError event_sync(void *ev) {
  fake_event *e = ev;
  while (!atomic_load(&e->passed)) usleep(50);
  return e->err;
}
static void event_destroy(void *ev) { event_unref(ev); }
static const mmb__event_ops fake_events = {
  .query = event_query, .sync = event_sync, .destroy = event_destroy,
};

typedef enum { OP_COPY, OP_HOST, OP_RECORD, OP_WAIT } op_kind;
typedef struct op {
  op_kind kind;
  char *dst;
  const char *src;
  size_t dpitch, spitch, width, height;
  void (*fn)(void *);
  void *arg;
  fake_event *ev;
  struct op *next;
} op;

typedef struct fake_stream {
  mmb__stream base;   /* first */
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  op *head, *tail;
  bool busy, stop;
  mmbError fault;       /* device thread only: a failed copy, sticky like CUDA's */
  atomic_int fail_next_issue, fail_next_on_device;
} fake_stream;

/* What the fake streams did, across every queue of a test. */
static atomic_int copies_issued, device_waits;

static void *device_thread(void *arg) {
  fake_stream *f = arg;
  pthread_mutex_lock(&f->lock);
  for (;;) {
    while (!f->head && !f->stop) pthread_cond_wait(&f->cond, &f->lock);
    op *o = f->head;
    if (!o) break;
    f->head = o->next;
    if (!f->head) f->tail = NULL;
    f->busy = true;
    pthread_mutex_unlock(&f->lock);
    switch (o->kind) {
      case OP_COPY:
        if (atomic_exchange(&f->fail_next_on_device, 0)) f->fault = MMB_ERROR;
        else dev_copy_2d(NULL, o->dst, o->dpitch, o->src, o->spitch, o->width, o->height);
        break;
      case OP_HOST: o->fn(o->arg); break;
      case OP_RECORD:
        o->ev->err = f->fault;
        atomic_store(&o->ev->passed, 1);
        event_unref(o->ev);
        break;
      case OP_WAIT:
        event_sync(o->ev);
        event_unref(o->ev);
        break;
    }
    free(o);
    pthread_mutex_lock(&f->lock);
    f->busy = false;
    pthread_cond_broadcast(&f->cond);
  }
  pthread_mutex_unlock(&f->lock);
  return NULL;
}

static mmbError push_op(fake_stream *f, op o) {
  op *n = malloc(sizeof *n);
  if (!n) return MMB_OUT_OF_MEMORY;
  *n = o;
  n->next = NULL;
  pthread_mutex_lock(&f->lock);
  if (f->tail) f->tail->next = n;
  else f->head = n;
  f->tail = n;
  pthread_cond_broadcast(&f->cond);
  pthread_mutex_unlock(&f->lock);
  return MMB_OK;
}

static bool fake_reaches(void *state, const mmbMemInterface *iface) {
  return iface->provider.ops == &device_ops;
}
static mmbError fake_copy_2d(void *state, void *dst, size_t dpitch, const void *src,
                             size_t spitch, size_t width, size_t height) {
  fake_stream *f = state;
  if (atomic_exchange(&f->fail_next_issue, 0)) return MMB_INVALID_ARG;
  atomic_fetch_add(&copies_issued, 1);
  return push_op(f, (op){.kind = OP_COPY, .dst = dst, .src = src, .dpitch = dpitch,
                         .spitch = spitch, .width = width, .height = height});
}
static mmbError fake_host_func(mmb__stream *s, void (*fn)(void *), void *arg) {
  return push_op((fake_stream *)s, (op){.kind = OP_HOST, .fn = fn, .arg = arg});
}
static mmbError fake_wait_event(mmb__stream *s, void *ev) {
  fake_event *e = ev;
  atomic_fetch_add(&e->refs, 1);
  atomic_fetch_add(&device_waits, 1);
  return push_op((fake_stream *)s, (op){.kind = OP_WAIT, .ev = e});
}
static mmbError fake_record(mmb__stream *s, void **out) {
  fake_event *e = calloc(1, sizeof *e);
  if (!e) return MMB_OUT_OF_MEMORY;
  atomic_init(&e->refs, 2);   /* the request's and the op's */
  *out = e;
  return push_op((fake_stream *)s, (op){.kind = OP_RECORD, .ev = e});
}
static mmbError fake_sync(mmb__stream *s) {
  fake_stream *f = (fake_stream *)s;
  pthread_mutex_lock(&f->lock);
  while (f->head || f->busy) pthread_cond_wait(&f->cond, &f->lock);
  mmbError err = f->fault;
  pthread_mutex_unlock(&f->lock);
  return err;
}

static void stop_device(fake_stream *f) {
  pthread_mutex_lock(&f->lock);
  f->stop = true;
  pthread_cond_broadcast(&f->cond);
  pthread_mutex_unlock(&f->lock);
  pthread_join(f->thread, NULL);
  pthread_cond_destroy(&f->cond);
  pthread_mutex_destroy(&f->lock);
  free(f);
}
static mmbError fake_start(mmbQueue *q, const mmbQueueOptions *opts) {
  fake_stream *f = calloc(1, sizeof *f);
  if (!f) return MMB_OUT_OF_MEMORY;
  f->base = (mmb__stream){
    .engine = {.state = f, .copy_2d = fake_copy_2d, .reaches = fake_reaches},
    .events = &fake_events, .host_func = fake_host_func, .wait_event = fake_wait_event,
    .record = fake_record, .sync = fake_sync, .native = f,
  };
  pthread_mutex_init(&f->lock, NULL);
  pthread_cond_init(&f->cond, NULL);
  if (pthread_create(&f->thread, NULL, device_thread, f) != 0) {
    free(f);
    return MMB_ERROR;
  }
  q->stream = &f->base;
  mmbError err = mmb__thread_backend.start(q, opts);
  if (err != MMB_OK) stop_device(f);
  return err;
}
static void fake_push(mmbQueue *q, mmb__work *w) { mmb__thread_backend.push(q, w); }
static void fake_stop(mmbQueue *q) {
  fake_stream *f = (fake_stream *)q->stream;
  mmb__thread_backend.stop(q);
  stop_device(f);
}
static const mmb__queue_backend fake_backend = {
  .name = "fake-stream", .start = fake_start, .push = fake_push, .stop = fake_stop,
};

static mmbError fake_queue_create(mmbQueue **q) {
  return mmb__queue_create_on(&fake_backend, &(mmbQueueOptions){0}, q);
}

#endif /* MMB_TEST_FAKE_STREAM_H */
