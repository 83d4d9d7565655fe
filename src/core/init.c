/* The count of nested mmb_init calls. The lifecycle (src/lifecycle.c) does
   the work of init and finalize; core keeps the count so that every floor
   can refuse calls made outside init and finalize. */
#include "core/internal.h"

#include <stdatomic.h>

static _Atomic unsigned init_count;

bool mmb__initialized(void) {
  return atomic_load_explicit(&init_count, memory_order_acquire) > 0;
}

bool mmb_is_initialized(void) { return mmb__initialized(); }

unsigned mmb__init_count(void) { return atomic_load_explicit(&init_count, memory_order_acquire); }

void mmb__set_init_count(unsigned count) {
  atomic_store_explicit(&init_count, count, memory_order_release);
}
