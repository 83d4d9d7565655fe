/* The interface duplicates and migrated tiles draw on: one pooled,
   thread-safe interface per space, made on first use and kept here, by the
   tile layer (the allocator knows nothing of it). When a space is released
   the allocator calls the hook below, which destroys the space's interface
   if nothing of it is live; at finalize the allocator tears down every
   interface, and the table is forgotten. */
#include "tile/internal.h"

typedef struct dup_interface {
  mmbMemSpace *space;
  mmbMemInterface *iface;
  struct dup_interface *next;
} dup_interface;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* before the interface list lock */
static dup_interface *table;

static dup_interface **find(const mmbMemSpace *space) {
  dup_interface **link = &table;
  while (*link && (*link)->space != space) link = &(*link)->next;
  return link;
}

mmbError mmb__dup_interface(mmbMemSpace *space, mmbMemInterface **out) {
  pthread_mutex_lock(&lock);
  dup_interface **link = find(space);
  mmbError err = MMB_OK;
  if (!*link) {
    dup_interface *d = mmb__calloc(1, sizeof *d);
    mmbMemInterfaceConfig cfg = {.strategy = MMB_STRATEGY_POOL, .flags = MMB_INTERFACE_THREAD_SAFE};
    if (!d) err = MMB_OUT_OF_MEMORY;
    else if ((err = mmb_request_interface(space, &cfg, &d->iface)) != MMB_OK) mmb__free(d);
    else {
      d->space = space;
      *link = d;
    }
  }
  if (err == MMB_OK) *out = (*link)->iface;
  pthread_mutex_unlock(&lock);
  return err;
}

void mmb__dup_interface_released(mmbMemSpace *space) {
  pthread_mutex_lock(&lock);
  dup_interface **link = find(space), *d = *link;
  if (d && mmb_interface_destroy(d->iface) == MMB_OK) {
    *link = d->next;
    mmb__free(d);
  }
  pthread_mutex_unlock(&lock);
}

void mmb__dup_interfaces_forget(void) {
  pthread_mutex_lock(&lock);
  while (table) {
    dup_interface *d = table;
    table = d->next;
    mmb__free(d);
  }
  pthread_mutex_unlock(&lock);
}
