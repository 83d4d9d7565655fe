/* mmb_init / mmb_finalize: nested, counted, serialised by one mutex. */
#include "core.h"

#include <pthread.h>
#include <stdatomic.h>

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned init_count;   /* written under init_lock */

bool mmb__initialized(void) {
  return atomic_load_explicit(&init_count, memory_order_acquire) > 0;
}

bool mmb_is_initialized(void) { return mmb__initialized(); }

mmbError mmb_init(const mmbOptions *opts) {
  mmbError err = MMB_OK;
  pthread_mutex_lock(&init_lock);
  if (atomic_load(&init_count) > 0) {
    atomic_fetch_add(&init_count, 1);
    goto out;
  }
  err = mmb__log_configure(opts ? opts->log_level : MMB_LOG_DEFAULT);
  if (err != MMB_OK) goto out;
  err = mmb__alloc_init();
  if (err != MMB_OK) goto out;
  atomic_store_explicit(&init_count, 1, memory_order_release);
out:
  pthread_mutex_unlock(&init_lock);
  return err;
}

mmbError mmb_finalize(void) {
  pthread_mutex_lock(&init_lock);
  unsigned count = atomic_load(&init_count);
  if (count == 0) {
    pthread_mutex_unlock(&init_lock);
    return MMB_NOT_INITIALIZED;
  }
  if (count == 1) {
    mmb__queues_finalize();
    mmb__alloc_finalize();
    mmb__records_trim();
  }
  atomic_store_explicit(&init_count, count - 1, memory_order_release);
  pthread_mutex_unlock(&init_lock);
  return MMB_OK;
}
