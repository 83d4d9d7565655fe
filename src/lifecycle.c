/* mmb_init and mmb_finalize: the one place that brings mmb's floors up, from
   the bottom, and down, from the top (as SQLite's sqlite3_initialize and
   mimalloc's mi_process_init do). It stands above every floor and is the
   only file that names them all: the floors themselves never call upward,
   and the one hook the allocator calls up through (a space's release) is
   set here. Nested pairs are counted (core keeps the count); one mutex
   serialises them.

     up:   core (logging)  ->  os (topology, the CUDA runtime slot)
           ->  providers (installed in the allocator's table), the queue
               backends (installed in the dispatcher's)
           ->  alloc (limits, discovered spaces, trace)  ->  tile (its hook)
     down: queue (drains what callers left)  ->  tile  ->  alloc  ->  os
           ->  core (recycled records) */
#include "builtin.h"
#include "tile/internal.h"

#include <pthread.h>

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

static void install_providers(void) {
  mmb__provider_install(MMB_PROVIDER_SYSTEM, &mmb__system_provider);
  mmb__provider_install(MMB_PROVIDER_PINNED, &mmb__pinned_provider);
  mmb__provider_install(MMB_PROVIDER_FILE, &mmb__file_provider);
#if MMB_HAVE_CUDA
  mmb__os_set_cuda(&mmb__cuda_runtime_impl);
  mmb__provider_install(MMB_PROVIDER_CUDA, &mmb__cuda_provider);
#else
  mmb__os_set_cuda(NULL);
#endif
  mmb__queue_backends_install(&mmb__thread_backend, mmb__cuda_stream_backend);
}

/* Also undoes a bring_up that stopped half way: each step copes with a
   floor that never came up. */
static void bring_down(void) {
  mmb__caches_finalize();
  mmb__queues_finalize();
  mmb__layouts_finalize();
  mmb__space_set_release_hook(NULL);
  mmb__home_current_hook = NULL;
  mmb__request_not_behind_hook = NULL;
  mmb__space_set_oom_hook(NULL);
  mmb__dup_interfaces_forget();
  mmb__interfaces_finalize();
  mmb__slab_map_finalize();
  mmb__engine_finalize();
  mmb__trace_finalize();
  mmb__registry_finalize();
  mmb__spaces_finalize();
  mmb__providers_finalize();
  mmb__os_finalize();
  mmb__requests_trim();
  mmb__records_trim();
  mmb__objects_finalize();
}

/* A space being released: the tile layer lets go of what it keeps there
   (or refuses, from an out-of-memory handler the cache's allocation ran). */
static mmbError space_released(mmbMemSpace *space, bool gone) {
  if (gone) {
    mmb__cache_space_gone(space);
    return MMB_OK;
  }
  mmbError err = mmb__cache_space_leaving("mmb_space_release");
  if (err == MMB_OK) mmb__dup_interface_released(space);
  return err;
}

static mmbError bring_up(const mmbOptions *opts) {
  mmbError err = mmb__log_configure(opts ? opts->log_level : MMB_LOG_DEFAULT);
  if (err != MMB_OK) return err;
  if ((err = mmb__os_init()) != MMB_OK) return err;
  install_providers();
  if ((err = mmb__engine_init()) == MMB_OK &&
      (err = mmb__spaces_init()) == MMB_OK &&
      (err = mmb__spaces_discover()) == MMB_OK &&
      (err = mmb__caches_init()) == MMB_OK)
    err = mmb__trace_init();
  if (err == MMB_OK) {
    mmb__space_set_release_hook(space_released);
    mmb__home_current_hook = mmb__cache_home_current;
    mmb__request_not_behind_hook = mmb__request_not_behind;
    mmb__space_set_oom_hook(mmb__cache_oom_step);
  }
  else bring_down();
  return err;
}

mmbError mmb_init(const mmbOptions *opts) {
  pthread_mutex_lock(&init_lock);
  unsigned count = mmb__init_count();
  mmbError err = count > 0 ? MMB_OK : bring_up(opts);
  if (err == MMB_OK) mmb__set_init_count(count + 1);
  pthread_mutex_unlock(&init_lock);
  return err;
}

mmbError mmb_finalize(void) {
  pthread_mutex_lock(&init_lock);
  unsigned count = mmb__init_count();
  if (count == 1 && mmb__queue_running_here()) {
    /* it would destroy the queue, and the work, it is called from */
    pthread_mutex_unlock(&init_lock);
    return mmb__fail(MMB_INVALID_STATE, __func__, "called from queue work: the last "
                     "mmb_finalize drains and destroys every queue");
  }
  if (count == 1 && mmb__oom_chain_runs_for(NULL)) {
    /* the chain goes on with the interface and space it runs for */
    pthread_mutex_unlock(&init_lock);
    return mmb__fail(MMB_INVALID_STATE, __func__, "called from an out-of-memory handler: "
                     "the allocation that ran it still needs its interface");
  }
  if (count == 1) bring_down();   /* while the count still says initialised */
  if (count > 0) mmb__set_init_count(count - 1);
  pthread_mutex_unlock(&init_lock);
  return count > 0 ? MMB_OK : MMB_NOT_INITIALIZED;
}
