/* Recycled records: the requests, work items and fences that every
   asynchronous call makes and drops, never seen by the caller. Taken from
   malloc each time, they churn the heap across threads (a record made on
   the caller's thread is often dropped on a queue's worker), and the
   process's resident memory creeps up in a loop that keeps nothing new.
   Here they come back from free lists of 64-byte size classes, last freed
   first out, so a steady loop reuses the same few blocks. Each thread keeps
   a small stack per class (up to CACHE blocks) and trades with the list
   shared by every thread in batches of CACHE / 2, under the class's lock
   (mmb__freelist, which the request records use too):
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

/* ---- free lists with a stack per thread ----------------------------------- */

#define CACHE 32   /* blocks a thread keeps per list; batches of CACHE / 2 */

static void **link_of(const mmb__freelist *l, void *block) {
  return (void **)((char *)block + l->link);
}

/* This thread's stacks, by slot, and the lists they belong to. */
typedef struct thread_stacks {
  void *head[MMB__FREELIST_SLOTS];
  unsigned count[MMB__FREELIST_SLOTS];
  bool registered;   /* with the key whose destructor gives them back */
} thread_stacks;
static __thread thread_stacks stacks;
static mmb__freelist *_Atomic lists[MMB__FREELIST_SLOTS];
static pthread_key_t stacks_key;
static pthread_once_t stacks_once = PTHREAD_ONCE_INIT;

/* Moves up to n blocks from the top of a thread's stack to l's shared list;
   what the list has no room for is destroyed. */
static void give_batch(mmb__freelist *l, thread_stacks *t, unsigned n) {
  unsigned s = l->slot;
  void *spill = NULL;
  pthread_mutex_lock(&l->lock);
  for (; n && t->head[s]; n--, t->count[s]--) {
    void *b = t->head[s];
    t->head[s] = *link_of(l, b);
    bool keep = l->count < l->keep;
    *link_of(l, b) = keep ? l->head : spill;
    if (keep) {
      l->head = b;
      l->count++;
    } else {
      spill = b;
    }
  }
  pthread_mutex_unlock(&l->lock);
  while (spill) {
    void *next = *link_of(l, spill);
    l->destroy(spill);
    spill = next;
  }
}

static void thread_ends(void *arg) {
  thread_stacks *t = arg;
  for (unsigned s = 0; s < MMB__FREELIST_SLOTS; s++) {
    mmb__freelist *l = atomic_load_explicit(&lists[s], memory_order_acquire);
    if (l) give_batch(l, t, t->count[s]);
  }
}

static void make_key(void) { pthread_key_create(&stacks_key, thread_ends); }

static thread_stacks *my_stacks(mmb__freelist *l) {
  if (!stacks.registered) {
    pthread_once(&stacks_once, make_key);
    pthread_setspecific(stacks_key, &stacks);
    stacks.registered = true;
  }
  /* known to thread_ends; stored once, not on every call: the word is shared */
  if (atomic_load_explicit(&lists[l->slot], memory_order_relaxed) != l)
    atomic_store_explicit(&lists[l->slot], l, memory_order_release);
  return &stacks;
}

void *mmb__freelist_take(mmb__freelist *l) {
  thread_stacks *t = my_stacks(l);
  unsigned s = l->slot;
  if (!t->head[s]) {   /* a batch from the shared list */
    pthread_mutex_lock(&l->lock);
    for (unsigned k = 0; k < CACHE / 2 && l->head; k++) {
      void *b = l->head;
      l->head = *link_of(l, b);
      l->count--;
      *link_of(l, b) = t->head[s];
      t->head[s] = b;
      t->count[s]++;
    }
    pthread_mutex_unlock(&l->lock);
  }
  void *b = t->head[s];
  if (b) {
    t->head[s] = *link_of(l, b);
    t->count[s]--;
  }
  return b;
}

void mmb__freelist_give(mmb__freelist *l, void *block) {
  thread_stacks *t = my_stacks(l);
  unsigned s = l->slot;
  *link_of(l, block) = t->head[s];
  t->head[s] = block;
  if (++t->count[s] > CACHE) give_batch(l, t, CACHE / 2);
}

void mmb__freelist_trim(mmb__freelist *l) {
  thread_stacks *t = my_stacks(l);
  give_batch(l, t, t->count[l->slot]);
  pthread_mutex_lock(&l->lock);
  void *b = l->head;
  l->head = NULL;
  l->count = 0;
  pthread_mutex_unlock(&l->lock);
  while (b) {
    void *next = *link_of(l, b);
    l->destroy(b);
    b = next;
  }
}

/* ---- records: free lists of 64-byte size classes --------------------------- */

static void free_block(void *b) { free(b); }

#define CLASS(i) MMB__FREELIST_INIT(KEEP, 0, free_block, i)
static mmb__freelist classes[N_CLASSES] = {CLASS(0),  CLASS(1),  CLASS(2),  CLASS(3),
                                           CLASS(4),  CLASS(5),  CLASS(6),  CLASS(7),
                                           CLASS(8),  CLASS(9),  CLASS(10), CLASS(11),
                                           CLASS(12), CLASS(13), CLASS(14), CLASS(15)};
_Static_assert(N_CLASSES <= MMB__FREELIST_SLOT_REQUESTS, "a slot for each class, and the requests'");

static mmb__freelist *class_of(size_t n) {
  size_t c = (n + CLASS_BYTES - 1) / CLASS_BYTES;
  return RECYCLE && c >= 1 && c <= N_CLASSES ? &classes[c - 1] : NULL;
}

void *mmb__record_alloc(size_t n) {
  if (mmb__fault_hit()) return NULL;
  mmb__freelist *rc = class_of(n);
  if (!rc) return malloc(n ? n : 1);
  void *b = mmb__freelist_take(rc);
  /* a fresh block has its class's full size, so any record of the class fits */
  return b ? b : malloc((size_t)(rc - classes + 1) * CLASS_BYTES);
}

void *mmb__record_calloc(size_t n) {
  void *p = mmb__record_alloc(n);
  if (p) memset(p, 0, n);
  return p;
}

void mmb__record_free(void *p, size_t n) {
  if (!p) return;
  mmb__freelist *rc = class_of(n);
  if (rc) mmb__freelist_give(rc, p);
  else free(p);
}

void mmb__records_trim(void) {
  for (size_t i = 0; RECYCLE && i < N_CLASSES; i++) mmb__freelist_trim(&classes[i]);
}
