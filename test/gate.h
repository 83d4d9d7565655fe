/* The gate: queue work that blocks until the test opens it, so that "not
   yet" is observable and ordering mistakes show up as wrong data rather
   than as luck. On a stream queue it is a host function holding the stream. */
#ifndef MMB_TEST_GATE_H
#define MMB_TEST_GATE_H

#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static atomic_int gate;
static inline void wait_gate(void *arg) {
  while (!atomic_load(&gate)) usleep(100);
}
static inline void close_gate(mmbQueue *q) {
  atomic_store(&gate, 0);
  OK(mmb_queue_submit(q, wait_gate, NULL, NULL));
}
static inline void *open_later(void *arg) {
  usleep(30000);
  atomic_store(&gate, 1);
  return NULL;
}
/* Opens the gate from another thread while this one blocks in mmb. */
static inline pthread_t open_gate_soon(void) {
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, open_later, NULL), 0);
  return t;
}

#endif
