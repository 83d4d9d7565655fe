/* The pool's small blocks: slabs, as mimalloc's pages and jemalloc's slabs.
   A slab is a 64 KiB block of the pool cut into blocks of one size class;
   taking and giving back a block is a push or a pop on the slab's stack of
   free indices, with no split, no coalescing and no search. The records
   (this stack included) live in host memory, so a slab may be memory the
   host cannot touch.

   Each class keeps the slabs that have free blocks on a list, and one wholly
   free slab as a spare; further wholly free slabs go back to the pool
   (where they coalesce and may leave with their segment), as do spares at
   mmb_interface_trim and past the release threshold. A slab the pool cannot
   give (a space whose limit leaves no 64 KiB) is no error: the caller takes
   a granule block instead.

   Slabs of malloc-style blocks (mmb_ptr_allocate) are kept apart from those
   of handle blocks, on lists of their own: they are 64 KiB aligned, listed
   in the slab map, and their records are reused rather than freed. Their
   lists are per home (pool.h: SLAB_HOMES): a cache refills from its home's
   slabs, then from the spare, then from a slab another home can spare (not
   the head of its list), and only then from a new slab.

   Everything here runs under the interface lock (or on the one thread that
   owns a non-thread-safe interface). */
#include "alloc/strategy/pool.h"

/* ---- the slab map: each 64 KiB page's malloc-style slab (pool.h) ------- */

#define LEAF_ENTRIES ((size_t)1 << SLAB_MAP_BITS)
_Atomic uintptr_t *_Atomic mmb__slab_map[(size_t)1 << SLAB_MAP_BITS];
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;

static bool map_store(const void *base, uintptr_t entry) {
  uintptr_t page = (uintptr_t)base >> 16;
  if (page >> (2 * SLAB_MAP_BITS)) return false;
  pthread_mutex_lock(&map_lock);
  _Atomic(_Atomic uintptr_t *) *top = &mmb__slab_map[page >> SLAB_MAP_BITS];
  _Atomic uintptr_t *leaf = atomic_load_explicit(top, memory_order_relaxed);
  if (!leaf && entry && (leaf = mmb__calloc(LEAF_ENTRIES, sizeof *leaf)))
    atomic_store_explicit(top, leaf, memory_order_release);
  if (leaf) atomic_store_explicit(&leaf[page & (LEAF_ENTRIES - 1)], entry, memory_order_release);
  pthread_mutex_unlock(&map_lock);
  return leaf != NULL;
}

/* false: the address is beyond the map, or no memory for a leaf. */
static bool map_set(const void *base, pool_slab *s) {
  if ((uintptr_t)s & SLAB_ENTRY_CLASS) return false;   /* malloc aligns to 16: never */
  return map_store(base, (uintptr_t)s | s->cls);
}
static void map_clear(const void *base) { (void)map_store(base, 0); }

void mmb__slab_map_finalize(void) {
  pthread_mutex_lock(&map_lock);
  for (size_t i = 0; i < LEAF_ENTRIES; i++)
    mmb__free(atomic_exchange_explicit(&mmb__slab_map[i], NULL, memory_order_relaxed));
  pthread_mutex_unlock(&map_lock);
}

/* ---- slabs ---------------------------------------------------------------- */

static bool host(const pool *p) { return mmb__iface_host_accessible(p->iface); }

static int kind(const pool_slab *s) { return s->iface != NULL; }

static pool_slab **list_of(pool *p, const pool_slab *s) {
  return &p->partial[kind(s) ? 1 + s->home : 0][s->cls];
}

static void list_add(pool *p, pool_slab *s) {
  pool_slab **head = list_of(p, s);
  s->prev = NULL;
  s->next = *head;
  if (s->next) s->next->prev = s;
  *head = s;
  s->listed = true;
}

static void list_remove(pool *p, pool_slab *s) {
  if (s->prev) s->prev->next = s->next;
  else *list_of(p, s) = s->next;
  if (s->next) s->next->prev = s->prev;
  s->listed = false;
}

/* A malloc-style slab of class cls with free blocks that another home can
   spare: never the head of its list, the slab its caches refill from (two
   threads taking turns at one slab would write the same lines of its asked
   entries with every free). */
static pool_slab *other_home(pool *p, size_t cls, unsigned home) {
  for (unsigned h = 0; h < SLAB_HOMES; h++) {
    pool_slab *head = p->partial[1 + h][cls];
    if (h != home && head && head->next) return head->next;
  }
  return NULL;
}

/* A malloc-style slab's record: room for the most blocks, then an asked
   entry per 64 B (pool.h: slab_asked). */
#define PTR_RECORD_BYTES (sizeof(pool_slab) + 2 * SLAB_MAX_BLOCKS * sizeof(uint16_t))

static pool_slab *record_take(pool *p, bool ptrs, size_t n) {
  if (!ptrs) return mmb__malloc(sizeof(pool_slab) + n * sizeof(uint16_t));
  pool_slab *s = p->ptr_records;
  if (s) p->ptr_records = s->next;
  return s ? s : mmb__malloc(PTR_RECORD_BYTES);
}

static void record_give(pool *p, pool_slab *s, bool ptrs) {
  if (!ptrs) {
    mmb__free(s);
    return;
  }
  s->next = p->ptr_records;
  p->ptr_records = s;
}

/* A malloc-style slab: nothing live, and listed in the map. */
static bool ptr_slab_start(pool *p, pool_slab *s) {
  s->iface = p->iface;
  for (size_t i = 0; i < SLAB_MAX_BLOCKS; i++) atomic_init(slab_asked(s, s->base + 64 * i), 0);
  return map_set(s->base, s);
}

static pool_slab *slab_new(pool *p, size_t cls, bool provider, bool ptrs) {
  size_t size = slab_class_size(cls), n = SLAB_BYTES / size;
  pool_slab *s = record_take(p, ptrs, n);
  if (!s) return NULL;
  pool_block *b = ptrs       ? mmb__pool_take_slab_aligned(p, provider)
                  : provider ? mmb__pool_take_slab(p)
                             : mmb__pool_take_held(p, SLAB_BYTES);
  if (!b) {
    record_give(p, s, ptrs);
    return NULL;
  }
  *s = (pool_slab){.block = b, .base = b->ptr, .cls = (uint32_t)cls, .n_blocks = (uint32_t)n,
                   .n_free = (uint32_t)n};
  if (ptrs && !ptr_slab_start(p, s)) {   /* an address beyond the map */
    mmb__pool_put(p, b);
    record_give(p, s, true);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) s->free[i] = (uint16_t)(n - 1 - i);   /* low addresses first */
  s->all_next = p->slabs;
  if (s->all_next) s->all_next->all_prev = s;
  p->slabs = s;
  mmb__poison(host(p), b->ptr, b->size);
  return s;
}

static void slab_release(pool *p, pool_slab *s) {
  if (s->all_prev) s->all_prev->all_next = s->all_next;
  else p->slabs = s->all_next;
  if (s->all_next) s->all_next->all_prev = s->all_prev;
  if (s->iface) map_clear(s->base);
  mmb__pool_put(p, s->block);
  record_give(p, s, s->iface != NULL);
}

char *mmb__slab_take(pool *p, size_t cls, bool provider, bool ptrs, unsigned home,
                     pool_slab **out_slab) {
  pool_slab *s = p->partial[ptrs ? 1 + home : 0][cls];
  if (!s) {
    if ((s = p->spare[ptrs][cls])) p->spare[ptrs][cls] = NULL;
    else if (ptrs && (s = other_home(p, cls, home))) list_remove(p, s);   /* it moves here */
    else if (!(s = slab_new(p, cls, provider, ptrs))) return NULL;
    s->home = ptrs ? (uint8_t)home : 0;
    list_add(p, s);
  }
  uint16_t i = s->free[--s->n_free];
  if (!s->n_free) list_remove(p, s);
  *out_slab = s;
  return s->base + (size_t)i * slab_class_size(cls);
}

void mmb__slab_put(pool *p, pool_slab *s, char *ptr) {
  s->free[s->n_free++] = (uint16_t)((size_t)(ptr - s->base) / slab_class_size(s->cls));
  if (s->n_free == 1) list_add(p, s);
  if (s->n_free < s->n_blocks) return;
  list_remove(p, s);   /* wholly free */
  const mmbMemInterface *iface = p->iface;
  bool keep = !iface->release_threshold || MMB__GET(iface->reserved) <= iface->release_threshold;
  if (keep && !p->spare[kind(s)][s->cls]) p->spare[kind(s)][s->cls] = s;
  else slab_release(p, s);
}

void mmb__slab_release_spares(pool *p) {
  for (int k = 0; k < 2; k++)
    for (size_t cls = 0; cls < SLAB_CLASSES; cls++) {
      if (p->spare[k][cls]) slab_release(p, p->spare[k][cls]);
      p->spare[k][cls] = NULL;
    }
}

/* The slabs' bytes go with the pool's segments; only the records are freed
   (and the map forgets the malloc-style slabs). */
void mmb__slab_finalize(pool *p) {
  while (p->slabs) {
    pool_slab *s = p->slabs;
    p->slabs = s->all_next;
    if (s->iface) map_clear(s->base);
    mmb__free(s);
  }
  while (p->ptr_records) {
    pool_slab *s = p->ptr_records;
    p->ptr_records = s->next;
    mmb__free(s);
  }
}
