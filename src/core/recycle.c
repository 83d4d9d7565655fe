/* Recycled records: the requests, work items and fences that every
   asynchronous call makes and drops, never seen by the caller. Taken from
   malloc each time, they churn the heap across threads (a record made on
   the caller's thread is often dropped on a queue's worker), and the
   process's resident memory creeps up in a loop that keeps nothing new.
   Here they come back from free lists of 64-byte size classes shared by
   every thread, last freed first out, so a steady loop reuses the same few
   blocks. Each list keeps at most KEEP blocks; the rest go back to free.

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

static struct record_class {
  pthread_mutex_t lock;
  free_block *head;
  size_t count;
} classes[N_CLASSES] = {[0 ... N_CLASSES - 1] = {PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP, NULL, 0}};

static struct record_class *class_of(size_t n) {
  size_t c = (n + CLASS_BYTES - 1) / CLASS_BYTES;
  return RECYCLE && c >= 1 && c <= N_CLASSES ? &classes[c - 1] : NULL;
}

void *mmb__record_alloc(size_t n) {
  if (mmb__fault_hit()) return NULL;
  struct record_class *rc = class_of(n);
  if (!rc) return malloc(n ? n : 1);
  pthread_mutex_lock(&rc->lock);
  free_block *b = rc->head;
  if (b) {
    rc->head = b->next;
    rc->count--;
  }
  pthread_mutex_unlock(&rc->lock);
  /* a fresh block has its class's full size, so any record of the class fits */
  return b ? (void *)b : malloc((size_t)(rc - classes + 1) * CLASS_BYTES);
}

void *mmb__record_calloc(size_t n) {
  void *p = mmb__record_alloc(n);
  if (p) memset(p, 0, n);
  return p;
}

void mmb__record_free(void *p, size_t n) {
  if (!p) return;
  struct record_class *rc = class_of(n);
  if (rc) {
    pthread_mutex_lock(&rc->lock);
    if (rc->count < KEEP) {
      free_block *b = p;
      b->next = rc->head;
      rc->head = b;
      rc->count++;
      p = NULL;
    }
    pthread_mutex_unlock(&rc->lock);
  }
  free(p);
}

void mmb__records_trim(void) {
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
