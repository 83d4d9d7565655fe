/* The allocation registry: every mmbAllocation handle lives in a slab that
   stays mapped until the last mmb_finalize. A handle is therefore always safe
   to read, which makes a double free, or a pointer mmb never handed out, a
   reported error instead of memory corruption; and a handle costs no malloc.

   Slabs grow geometrically (1 Ki, 2 Ki, ... 1 Mi handles), so membership is a
   scan of a few dozen ranges. Interfaces keep a small cache of free handles;
   the global free list behind it is guarded by `lock` (taken after an
   interface lock, never before one). */
#include "alloc.h"

#include <sys/mman.h>

#define MAX_SLABS 40
#define FIRST_SLAB_HANDLES 1024u
#define MAX_SLAB_HANDLES (1u << 20)
#define REFILL_HANDLES 64u
#define CACHE_MAX_HANDLES 512u

typedef struct slab {
  mmbAllocation *base;
  size_t count;
} slab;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slab slabs[MAX_SLABS];            /* entries below n_slabs never change */
static _Atomic size_t n_slabs;
static mmbAllocation *global_free;       /* guarded by lock */
static size_t next_slab_handles = FIRST_SLAB_HANDLES;

static bool grow_locked(void) {
  size_t n = atomic_load_explicit(&n_slabs, memory_order_relaxed);
  if (n == MAX_SLABS || mmb__fault_hit()) return false;
  size_t count = next_slab_handles;
  mmbAllocation *h = mmap(NULL, count * sizeof *h, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (h == MAP_FAILED) return false;
  for (size_t i = 0; i < count; i++) {
    atomic_init(&h[i].state, MMB__HANDLE_FREE);
    h[i].next = i + 1 < count ? &h[i + 1] : global_free;
  }
  global_free = h;
  slabs[n] = (slab){h, count};
  atomic_store_explicit(&n_slabs, n + 1, memory_order_release);
  if (next_slab_handles < MAX_SLAB_HANDLES) next_slab_handles *= 2;
  return true;
}

static bool refill(mmb__handle_cache *cache) {
  pthread_mutex_lock(&lock);
  if (!global_free && !grow_locked()) {
    pthread_mutex_unlock(&lock);
    return false;
  }
  for (unsigned i = 0; i < REFILL_HANDLES && global_free; i++) {
    mmbAllocation *a = global_free;
    global_free = a->next;
    a->next = cache->head;
    cache->head = a;
    cache->count++;
  }
  pthread_mutex_unlock(&lock);
  return true;
}

mmbAllocation *mmb__handle_take(mmb__handle_cache *cache) {
  if (MMB__UNLIKELY(!cache->head) && !refill(cache)) return NULL;
  mmbAllocation *a = cache->head;
  cache->head = a->next;
  cache->count--;
  a->next = NULL;
  return a;
}

/* Gives `keep` handles back to the global list, keeping the rest cached. */
static void spill(mmb__handle_cache *cache, size_t keep) {
  if (cache->count <= keep) return;
  mmbAllocation *first = cache->head, *last = first;
  for (size_t n = cache->count - keep; n > 1; n--) last = last->next;
  cache->head = last->next;
  cache->count = keep;
  pthread_mutex_lock(&lock);
  last->next = global_free;
  global_free = first;
  pthread_mutex_unlock(&lock);
}

void mmb__handle_give(mmb__handle_cache *cache, mmbAllocation *a) {
  atomic_store_explicit(&a->state, MMB__HANDLE_FREE, memory_order_release);
  a->ptr = NULL;
  a->interface = NULL;
  a->next = cache->head;
  cache->head = a;
  if (MMB__UNLIKELY(++cache->count > CACHE_MAX_HANDLES)) spill(cache, CACHE_MAX_HANDLES / 2);
}

void mmb__handle_cache_flush(mmb__handle_cache *cache) { spill(cache, 0); }

bool mmb__handle_is_ours(const mmbAllocation *a) {
  size_t n = atomic_load_explicit(&n_slabs, memory_order_acquire);
  uintptr_t p = (uintptr_t)a;
  for (size_t i = 0; i < n; i++) {
    uintptr_t base = (uintptr_t)slabs[i].base;
    if (p >= base && p < base + slabs[i].count * sizeof *a)
      return (p - base) % sizeof *a == 0;
  }
  return false;
}

bool mmb__handle_is_live(const mmbAllocation *a) {
  return a && mmb__handle_is_ours(a) &&
         atomic_load_explicit(&a->state, memory_order_acquire) == MMB__HANDLE_LIVE;
}

void mmb__registry_finalize(void) {
  pthread_mutex_lock(&lock);
  size_t n = atomic_load(&n_slabs);
  atomic_store(&n_slabs, 0);
  for (size_t i = 0; i < n; i++) munmap(slabs[i].base, slabs[i].count * sizeof(mmbAllocation));
  global_free = NULL;
  next_slab_handles = FIRST_SLAB_HANDLES;
  pthread_mutex_unlock(&lock);
}

void mmb__registry_for_each_live(void (*fn)(mmbAllocation *a)) {
  size_t n = atomic_load_explicit(&n_slabs, memory_order_acquire);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < slabs[i].count; j++)
      if (atomic_load(&slabs[i].base[j].state) == MMB__HANDLE_LIVE) fn(&slabs[i].base[j]);
}
