/* Fault injection: makes chosen allocation sites fail, so that tests can walk
   every failure path of the library (see test/test_fault.c). */
#include "core/internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_bool armed;
static _Atomic unsigned long skip_left, fail_left, failures;

void mmb__fault_arm(unsigned long skip, unsigned long count) {
  atomic_store(&skip_left, skip);
  atomic_store(&fail_left, count);
  atomic_store(&failures, 0);
  atomic_store(&armed, count > 0);
}

void mmb__fault_disarm(void) { atomic_store(&armed, false); }

unsigned long mmb__fault_failures(void) { return atomic_load(&failures); }

bool mmb__fault_hit(void) {
  if (MMB__LIKELY(!atomic_load_explicit(&armed, memory_order_relaxed))) return false;
  /* Decrement skip_left if positive; the site that finds it at zero fails. */
  unsigned long s = atomic_load(&skip_left);
  while (s > 0) {
    if (atomic_compare_exchange_weak(&skip_left, &s, s - 1)) return false;
  }
  unsigned long f = atomic_load(&fail_left);
  while (f > 0) {
    if (atomic_compare_exchange_weak(&fail_left, &f, f - 1)) {
      atomic_fetch_add(&failures, 1);
      if (f == 1) atomic_store(&armed, false);
      return true;
    }
  }
  return false;
}

void *mmb__malloc(size_t n) { return mmb__fault_hit() ? NULL : malloc(n); }
void *mmb__calloc(size_t count, size_t size) {
  return mmb__fault_hit() ? NULL : calloc(count, size);
}
void *mmb__calloc_lines(size_t size) {
  size_t n = (size + 127) & ~(size_t)127;
  void *p = mmb__fault_hit() ? NULL : aligned_alloc(128, n);
  if (p) memset(p, 0, n);
  return p;
}
void mmb__free(void *p) { free(p); }
