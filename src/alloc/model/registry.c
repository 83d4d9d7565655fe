/* The allocation registry: every mmbAllocation handle lives in one range of
   address space reserved at the first allocation and never unmapped. A
   handle is therefore always safe to read, which makes a double free, or a
   pointer mmb never handed out, a reported error instead of memory
   corruption; checking one is a subtraction and a compare; and a handle
   costs no malloc.

   The range is reserved inaccessible and made usable in growing chunks
   (1 Ki, 2 Ki, ... 1 Mi handles), up to 16 Mi handles. Interfaces keep a
   small cache of free handles; the global free list behind it is guarded by
   `lock` (taken after an interface lock, never before one). */
#include "alloc/model/model.h"

#include <sys/mman.h>

#define MAX_HANDLES ((size_t)1 << 24)
#define FIRST_CHUNK_HANDLES ((size_t)1 << 10)
#define MAX_CHUNK_HANDLES ((size_t)1 << 20)
#define REFILL_HANDLES 64u
#define CACHE_MAX_HANDLES 512u

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mmbAllocation *_Atomic base;      /* the reserved range; set once under lock */
static _Atomic size_t usable;            /* handles made accessible so far */
static mmbAllocation *global_free;       /* guarded by lock */
static size_t next_chunk = FIRST_CHUNK_HANDLES;

static bool grow_locked(void) {
  mmbAllocation *b = atomic_load_explicit(&base, memory_order_relaxed);
  if (mmb__fault_hit()) return false;
  if (!b) {
    void *range = mmap(NULL, MAX_HANDLES * sizeof *b, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) return false;
    mmb__leak_root(range, MAX_HANDLES * sizeof *b, true);
    b = range;
    atomic_store_explicit(&base, b, memory_order_release);
  }
  size_t n = atomic_load_explicit(&usable, memory_order_relaxed);
  size_t count = mmb__min(next_chunk, MAX_HANDLES - n);
  if (!count || mprotect(b + n, count * sizeof *b, PROT_READ | PROT_WRITE) != 0) return false;
  madvise(b + n, count * sizeof *b, MADV_HUGEPAGE);   /* fewer TLB misses over many handles */
  for (size_t i = 0; i < count; i++) {
    mmbAllocation *h = &b[n + i];
    atomic_init(&h->state, MMB__STATE(0, MMB__HANDLE_FREE));
    h->next = i + 1 < count ? h + 1 : global_free;
  }
  global_free = &b[n];
  atomic_store_explicit(&usable, n + count, memory_order_release);
  if (next_chunk < MAX_CHUNK_HANDLES) next_chunk *= 2;
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
  mmb__handle_set(a, MMB__HANDLE_FREE);
  a->ptr = NULL;
  a->interface = NULL;
  a->fences = NULL;   /* (a region's handle: its prev) */
  a->next = cache->head;
  cache->head = a;
  if (MMB__UNLIKELY(++cache->count > CACHE_MAX_HANDLES)) spill(cache, CACHE_MAX_HANDLES / 2);
}

void mmb__handle_cache_flush(mmb__handle_cache *cache) { spill(cache, 0); }

bool mmb__handle_is_ours(const mmbAllocation *a) {
  const mmbAllocation *b = atomic_load_explicit(&base, memory_order_acquire);
  uintptr_t off = (uintptr_t)mmb__record(a) - (uintptr_t)b;
  return b && off < atomic_load_explicit(&usable, memory_order_acquire) * sizeof *a &&
         off % sizeof *a == 0;
}

mmbAllocation *mmb__handle_open(const mmbAllocation *h) {
  mmbAllocation *a = mmb__record(h);
  return h && mmb__handle_is_ours(a) &&
         atomic_load_explicit(&a->state, memory_order_acquire) == mmb__live_state(h) ? a : NULL;
}

/* The range stays mapped for the life of the process, its records and their
   generations with it: a handle kept from before mmb_finalize is refused
   after it, and after a later mmb_init, never read from unmapped memory nor
   taken for a new allocation. Every record goes back on the free list. */
void mmb__registry_finalize(void) {
  pthread_mutex_lock(&lock);
  mmbAllocation *b = atomic_load_explicit(&base, memory_order_relaxed);
  size_t n = atomic_load_explicit(&usable, memory_order_relaxed);
  global_free = NULL;
  for (size_t i = n; i-- > 0;) {
    mmbAllocation *h = &b[i];
    mmb__handle_set(h, MMB__HANDLE_FREE);
    h->ptr = NULL;
    h->interface = NULL;
    h->fences = NULL;
    h->next = global_free;
    global_free = h;
  }
  pthread_mutex_unlock(&lock);
}

void mmb__registry_for_each_live(void (*fn)(mmbAllocation *a)) {
  mmbAllocation *b = atomic_load_explicit(&base, memory_order_acquire);
  size_t n = atomic_load_explicit(&usable, memory_order_acquire);
  for (size_t i = 0; i < n; i++)
    if (mmb__handle_code(&b[i]) == MMB__HANDLE_LIVE) fn(&b[i]);
}
