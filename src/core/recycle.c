/* Recycled records: the requests, work items and fences that every
   asynchronous call makes and drops, never seen by the caller. Taken from
   malloc each time, they churn the heap across threads (a record made on
   the caller's thread is often dropped on a queue's worker), and the
   process's resident memory creeps up in a loop that keeps nothing new.
   Here they come back from free lists of 64-byte size classes, last freed
   first out, so a steady loop reuses the same few blocks. Each thread keeps
   a small stack per class (up to CACHE blocks) and trades with the list
   shared by every thread in batches of CACHE / 2, under the class's lock:
   records flow one way in an asynchronous loop (made by the caller, freed
   by the worker), and a lock and its cache line taken per record cost more
   than the rest of a request's round trip. The shared list keeps at most
   KEEP blocks; the rest go back to free. A thread's stack goes back to the
   shared list when the thread ends.

   Objects the caller holds a handle to (tiles, regions) are not recycled:
   a handle used after its object is gone must not reach a new object.
   Under AddressSanitizer every record goes to malloc and free, so a use
   after free is still reported. Lock order: a class lock is a leaf. The
   locks are adaptive: held for a few stores, and taken by a queue's worker
   and its caller in turn, so a waiter spins rather than sleeping (a futex
   sleep and wake-up cost tens of microseconds in a round trip of one). */
#include "core/internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CLASS_BYTES ((size_t)64)
#define N_CLASSES 16   /* records up to 1 KiB */
#define KEEP 256       /* blocks kept per class */

#if defined(__SANITIZE_ADDRESS__)
#define RECYCLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RECYCLE 0
#endif
#endif
#ifndef RECYCLE
#define RECYCLE 1
#endif

typedef struct free_block {
  struct free_block *next;
} free_block;

#define CACHE 32   /* blocks a thread keeps per class */

static struct record_class {
  pthread_mutex_t lock;
  free_block *head;
  size_t count;
} classes[N_CLASSES] = {[0 ... N_CLASSES - 1] = {PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP, NULL, 0}};

static struct record_class *class_of(size_t n) {
  size_t c = (n + CLASS_BYTES - 1) / CLASS_BYTES;
  return RECYCLE && c >= 1 && c <= N_CLASSES ? &classes[c - 1] : NULL;
}

/* This thread's stacks, one per class. */
typedef struct thread_cache {
  free_block *head[N_CLASSES];
  unsigned count[N_CLASSES];
  bool registered;   /* with the key whose destructor gives them back */
} thread_cache;
static __thread thread_cache cache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

/* Moves up to n blocks from the top of *from (count *have) onto rc's shared
   list; what the list has no room for goes back to free. */
static void give_batch(struct record_class *rc, free_block **from, unsigned *have, unsigned n) {
  free_block *spill = NULL;
  pthread_mutex_lock(&rc->lock);
  for (; n && *from; n--, (*have)--) {
    free_block *b = *from;
    *from = b->next;
    if (rc->count < KEEP) {
      b->next = rc->head;
      rc->head = b;
      rc->count++;
    } else {
      b->next = spill;
      spill = b;
    }
  }
  pthread_mutex_unlock(&rc->lock);
  while (spill) {
    free_block *next = spill->next;
    free(spill);
    spill = next;
  }
}

/* A thread ends: its stacks go to the shared lists. */
static void thread_ends(void *arg) {
  thread_cache *c = arg;
  for (size_t i = 0; i < N_CLASSES; i++)
    give_batch(&classes[i], &c->head[i], &c->count[i], c->count[i]);
}

static void make_key(void) { pthread_key_create(&cache_key, thread_ends); }

static thread_cache *my_cache(void) {
  if (!cache.registered) {
    pthread_once(&cache_once, make_key);
    pthread_setspecific(cache_key, &cache);
    cache.registered = true;
  }
  return &cache;
}

void *mmb__record_alloc(size_t n) {
  if (mmb__fault_hit()) return NULL;
  struct record_class *rc = class_of(n);
  if (!rc) return malloc(n ? n : 1);
  size_t i = (size_t)(rc - classes);
  thread_cache *c = my_cache();
  if (!c->head[i]) {   /* a batch from the shared list */
    pthread_mutex_lock(&rc->lock);
    for (unsigned k = 0; k < CACHE / 2 && rc->head; k++) {
      free_block *b = rc->head;
      rc->head = b->next;
      rc->count--;
      b->next = c->head[i];
      c->head[i] = b;
      c->count[i]++;
    }
    pthread_mutex_unlock(&rc->lock);
  }
  free_block *b = c->head[i];
  if (b) {
    c->head[i] = b->next;
    c->count[i]--;
  }
  /* a fresh block has its class's full size, so any record of the class fits */
  return b ? (void *)b : malloc((i + 1) * CLASS_BYTES);
}

void *mmb__record_calloc(size_t n) {
  void *p = mmb__record_alloc(n);
  if (p) memset(p, 0, n);
  return p;
}

void mmb__record_free(void *p, size_t n) {
  if (!p) return;
  struct record_class *rc = class_of(n);
  if (!rc) {
    free(p);
    return;
  }
  size_t i = (size_t)(rc - classes);
  thread_cache *c = my_cache();
  free_block *b = p;
  b->next = c->head[i];
  c->head[i] = b;
  if (++c->count[i] > CACHE) give_batch(rc, &c->head[i], &c->count[i], CACHE / 2);
}

void mmb__records_trim(void) {
  if (RECYCLE) thread_ends(my_cache());   /* the calling thread's stacks too */
  for (size_t i = 0; i < N_CLASSES; i++) {
    pthread_mutex_lock(&classes[i].lock);
    free_block *b = classes[i].head;
    classes[i].head = NULL;
    classes[i].count = 0;
    pthread_mutex_unlock(&classes[i].lock);
    while (b) {
      free_block *next = b->next;
      free(b);
      b = next;
    }
  }
}
