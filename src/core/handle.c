/* Handles: every object a caller holds a pointer to (spaces, interfaces,
   regions, layouts, arrays, tiles, iterators, queues, requests) lives in one
   range of address space, the arena, with a 16-byte header just before the
   pointer the caller gets: its kind, and whether it is live or dead.

   Two rules make every handle safe to check, whatever the caller did with it:
   - The arena is never unmapped once mapped (mmb_finalize drops every
     object in it, and keeps its place), so reading a header is always
     allowed: a handle that points elsewhere is "not made by
     mmb", one whose header says dead is "destroyed".
   - An address is not handed out twice until the arena wraps: objects are
     bumped through it, and a page whose objects are all gone goes back to
     the kernel (MADV_DONTNEED, after which it reads as zeros: dead) but
     keeps its place. The address of a handle is thus its generation: a
     stale handle never reaches a new object, which a slot reused at once
     would. The arena grows 1 MiB at a time up to ARENA_MAX (4 GiB); only
     then, or when the system refuses to commit more, does it wrap, and
     placement skips every page that still holds a live object.

   Making and destroying an object takes one lock (objects are made at the
   rate of tiles and asynchronous calls, not of malloc); checking one is a
   range test and an atomic load. Under AddressSanitizer a dead object's
   bytes are poisoned, so mmb's own use of one is reported, but never a
   header (nor a tiling, whose tiles' headers are inside it), so checking a
   handle is always allowed. Lock order: the arena lock is a leaf. */
#include "core/internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif
#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* 4 GiB of addresses (8 Mi objects of a tile's size before an address comes
   back; at most 8 MiB of page tables). Under ASan 512 MiB: its shadow of
   every address the cursor passes stays resident, an eighth of it. */
#ifdef ARENA_ASAN
#define ARENA_MAX ((size_t)1 << 29)
#else
#define ARENA_MAX ((size_t)1 << 32)
#endif
#define PAGE ((size_t)4096)
#define ARENA_BYTES arena_bytes
#define N_PAGES (arena_bytes / PAGE)
#define GROW_BYTES ((size_t)1 << 20)
#define GRANULE ((size_t)64)
#define PENDING_MAX 16
/* counts of pages are themselves in pages: one covers 4 MiB of the arena */
#define PER_COUNTS_PAGE (PAGE / sizeof(uint32_t))
#define N_COUNTS_PAGES (ARENA_MAX / PAGE / PER_COUNTS_PAGE)

#define TAG_LIVE MMB__TAG_LIVE
#define TAG_DEAD MMB__TAG_DEAD
#define TAG MMB__TAG

_Static_assert(sizeof(mmb__objhdr) == 16, "a header is 16 bytes");

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t arena_bytes = ARENA_MAX;   /* set while unmapped (tests shrink it) */
char *_Atomic mmb__arena_base;           /* the arena; set once under lock */
_Atomic size_t mmb__arena_committed;     /* bytes readable and writable from mmb__arena_base */
static uint32_t *counts;                /* per page: objects that touch it */
static uint32_t active[N_COUNTS_PAGES]; /* per page of counts: its entries not 0 */
static size_t cursor;                   /* next free byte */
static size_t pending[PENDING_MAX];     /* pages to give back */
static size_t n_pending;

static const char *const kind_names[MMB__KIND_COUNT] = {
    [MMB__KIND_SPACE] = "space",       [MMB__KIND_INTERFACE] = "interface",
    [MMB__KIND_REGION] = "region",     [MMB__KIND_LAYOUT] = "layout",
    [MMB__KIND_ARRAY] = "array",       [MMB__KIND_TILE] = "tile",
    [MMB__KIND_TILING] = "tiling",     [MMB__KIND_ITERATOR] = "tile iterator",
    [MMB__KIND_QUEUE] = "queue",       [MMB__KIND_REQUEST] = "request",
};

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

extern void __lsan_register_root_region(const void *p, size_t size) __attribute__((weak));
extern void __lsan_unregister_root_region(const void *p, size_t size) __attribute__((weak));

void mmb__leak_root(const void *p, size_t n, bool on) {
  if (on && __lsan_register_root_region) __lsan_register_root_region(p, n);
  if (!on && __lsan_unregister_root_region) __lsan_unregister_root_region(p, n);
}

static bool map_locked(void) {
  if (atomic_load_explicit(&mmb__arena_base, memory_order_relaxed)) return true;
  void *range = mmap(NULL, ARENA_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
  if (range == MAP_FAILED) return false;
  void *c = mmap(NULL, N_PAGES * sizeof *counts, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (c == MAP_FAILED) {
    munmap(range, ARENA_BYTES);
    return false;
  }
  counts = c;
  mmb__leak_root(range, ARENA_BYTES, true);
  cursor = 0;
  n_pending = 0;
  memset(active, 0, sizeof active);
  atomic_store_explicit(&mmb__arena_committed, 0, memory_order_relaxed);
  atomic_store_explicit(&mmb__arena_base, range, memory_order_release);
  return true;
}

/* Makes [committed, end) usable, a whole number of GROW_BYTES. */
static bool grow_locked(size_t end) {
  size_t have = atomic_load_explicit(&mmb__arena_committed, memory_order_relaxed);
  if (end <= have) return true;
  size_t to = round_up(end, GROW_BYTES);
  if (to > ARENA_BYTES) return false;
  if (mprotect(mmb__arena_base + have, to - have, PROT_READ | PROT_WRITE) != 0) return false;
  atomic_store_explicit(&mmb__arena_committed, to, memory_order_release);
  return true;
}

static int by_page(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

/* Gives the pending pages back to the kernel, a run at a time. */
static void flush_locked(void) {
  qsort(pending, n_pending, sizeof *pending, by_page);
  for (size_t i = 0; i < n_pending;) {
    size_t j = i + 1;
    while (j < n_pending && pending[j] == pending[j - 1] + 1) j++;
    madvise(mmb__arena_base + pending[i] * PAGE, (j - i) * PAGE, MADV_DONTNEED);
    i = j;
  }
  n_pending = 0;
}

/* A page of counts all zero, away from the cursor, goes back too: the
   counts follow the live objects, not the ground the cursor has covered. */
static void counts_maybe_release_locked(size_t cp) {
  if (!active[cp] && cp != cursor / PAGE / PER_COUNTS_PAGE)
    madvise(counts + cp * PER_COUNTS_PAGE, PAGE, MADV_DONTNEED);
}

static void count_up_locked(size_t page) {
  if (counts[page]++ == 0) active[page / PER_COUNTS_PAGE]++;
}

/* A page whose last object went: back to the kernel, unless the cursor is
   still filling it. */
static void page_emptied_locked(size_t page) {
  if (--active[page / PER_COUNTS_PAGE] == 0) counts_maybe_release_locked(page / PER_COUNTS_PAGE);
  if (page == cursor / PAGE && cursor % PAGE) return;
  pending[n_pending++] = page;
  if (n_pending == PENDING_MAX) flush_locked();
}

/* Pages about to be handed out again are not given back after all. */
static void unpend_locked(size_t first, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n_pending; i++)
    if (pending[i] < first || pending[i] >= first + n) pending[k++] = pending[i];
  n_pending = k;
}

static bool pages_free(size_t first, size_t n) {
  for (size_t p = first; p < first + n; p++)
    if (counts[p]) return false;
  return true;
}

/* Where n bytes go: after the cursor, in its page when they fit there;
   otherwise from the next run of free pages (growing, or wrapping). */
static bool place_locked(size_t n, size_t *out) {
  if (n <= PAGE - cursor % PAGE && cursor % PAGE) {
    *out = cursor;
    return grow_locked(cursor + n);
  }
  size_t need = round_up(n, PAGE) / PAGE;
  size_t first = round_up(cursor, PAGE) / PAGE;
  /* ahead of the cursor, then from the start once the arena is spent */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t p = first; p + need <= N_PAGES; p++) {
      size_t have = atomic_load_explicit(&mmb__arena_committed, memory_order_relaxed);
      if ((p + need) * PAGE > have && !grow_locked((p + need) * PAGE)) {
        if (p * PAGE >= have) break;  /* nothing more to be had: wrap */
        continue;
      }
      if (pages_free(p, need)) {
        /* the page the cursor filled last (cursor may be the arena's end) */
        size_t last = cursor ? (cursor - 1) / PAGE : 0;
        if (cursor % PAGE && !counts[last]) {
          pending[n_pending++] = last;   /* the cursor leaves an empty page */
          if (n_pending == PENDING_MAX) flush_locked();
        }
        unpend_locked(p, need);
        *out = p * PAGE;
        cursor = *out;
        if (last / PER_COUNTS_PAGE != p / PER_COUNTS_PAGE)
          counts_maybe_release_locked(last / PER_COUNTS_PAGE);
        return true;
      }
    }
    first = 0;
  }
  return false;
}

static mmb__objhdr *header(const void *obj) {
  return (mmb__objhdr *)(void *)((char *)obj - sizeof(mmb__objhdr));
}

void *mmb__object_new(mmb__kind kind, size_t size) {
  if (mmb__fault_hit() || size > ARENA_BYTES / 4) return NULL;
  size_t n = round_up(size + sizeof(mmb__objhdr), GRANULE), at;
  pthread_mutex_lock(&lock);
  if (!map_locked() || !place_locked(n, &at)) {
    pthread_mutex_unlock(&lock);
    return NULL;
  }
  cursor = at + n;
  for (size_t p = at / PAGE; p <= (at + n - 1) / PAGE; p++) count_up_locked(p);
  pthread_mutex_unlock(&lock);
  char *block = mmb__arena_base + at;
  UNPOISON(block, n);
  memset(block, 0, n);
  mmb__objhdr *h = (mmb__objhdr *)(void *)block;
  h->bytes = n;
  atomic_store_explicit(&h->tag, TAG(TAG_LIVE, kind), memory_order_release);
  return block + sizeof *h;
}

/* Marks the object dead, keeping its kind (for the reason a check gives). */
static mmb__kind retire(mmb__objhdr *h) {
  mmb__kind kind = (mmb__kind)(atomic_load_explicit(&h->tag, memory_order_relaxed) & 0xff);
  atomic_store_explicit(&h->tag, TAG(TAG_DEAD, kind), memory_order_release);
  return kind;
}

void mmb__object_retire(void *obj) { retire(header(obj)); }

void mmb__object_free(void *obj) {
  if (!obj) return;
  mmb__objhdr *h = header(obj);
  size_t n = h->bytes, at = (size_t)((char *)h - mmb__arena_base);
  mmb__kind kind = retire(h);
  /* the header stays readable, and so does a region's cursor, which
     mmb/region.h's inline path reads (it finds no magic word) */
  size_t keep = sizeof *h + (kind == MMB__KIND_REGION ? sizeof(mmb__region_cursor) : 0);
  /* not a tiling (its tiles' headers are inside it), nor a request, which a
     queue's worker may drop while another thread checks a stale copy */
  if (kind != MMB__KIND_TILING && kind != MMB__KIND_REQUEST)
    POISON((char *)h + keep, n - keep);
  pthread_mutex_lock(&lock);
  for (size_t p = at / PAGE; p <= (at + n - 1) / PAGE; p++)
    if (--counts[p] == 0) page_emptied_locked(p);
  pthread_mutex_unlock(&lock);
}

void mmb__object_embed(void *obj, mmb__kind kind) {
  mmb__objhdr *h = header(obj);
  h->bytes = 0;
  atomic_store_explicit(&h->tag, TAG(TAG_LIVE, kind), memory_order_release);
}


static const char *kind_name(mmb__kind kind) {
  return kind > 0 && kind < MMB__KIND_COUNT ? kind_names[kind] : "object";
}

mmbError mmb__object_check(const char *func, const void *obj, mmb__kind kind, const char *what) {
  if (!obj) return mmb__fail(MMB_INVALID_ARG, func, "%s is NULL", what);
  uint64_t tag = mmb__object_tag(obj);
  if (tag == TAG(TAG_LIVE, kind)) return MMB_OK;
  mmb__kind was = (mmb__kind)(tag & 0xff);
  if ((tag & ~(uint64_t)0xffff) != MMB__TAG_MAGIC || was <= 0 || was >= MMB__KIND_COUNT)
    return mmb__fail(MMB_INVALID_ARG, func,
                     tag ? "%s %p is not an mmb %s" : "%s %p is not an mmb %s (or was destroyed)",
                     what, obj, kind_name(kind));
  if (was != kind)
    return mmb__fail(MMB_INVALID_ARG, func, "%s %p is a%s %s, not a%s %s", what, obj,
                     strchr("aeiou", kind_name(was)[0]) ? "n" : "", kind_name(was),
                     strchr("aeiou", kind_name(kind)[0]) ? "n" : "", kind_name(kind));
  return mmb__fail(MMB_INVALID_ARG, func, "%s %p was destroyed or released before this call",
                   what, obj);
}

bool mmb__objects_set_capacity(size_t bytes) {
  pthread_mutex_lock(&lock);
  bool ok = !atomic_load(&mmb__arena_base) && bytes >= GROW_BYTES && bytes <= ARENA_MAX &&
            bytes % GROW_BYTES == 0;
  if (ok) arena_bytes = bytes;
  pthread_mutex_unlock(&lock);
  return ok;
}

/* The arena stays mapped for the life of the process: every object in it
   is dropped (its pages read as zeros again: no tag, so a handle kept from
   before is "not an mmb object (or destroyed)", and mmb/region.h's inline
   path finds no region), and the cursor goes on from where it was, so that
   a later mmb_init hands out other addresses than the stale handles hold,
   until the arena wraps. */
void mmb__objects_finalize(void) {
  pthread_mutex_lock(&lock);
  char *b = atomic_load_explicit(&mmb__arena_base, memory_order_relaxed);
  if (b) {
    size_t committed = atomic_load(&mmb__arena_committed);
    UNPOISON(b, committed);
    madvise(b, committed, MADV_DONTNEED);
    madvise(counts, N_PAGES * sizeof *counts, MADV_DONTNEED);
    memset(active, 0, sizeof active);
  }
  n_pending = 0;
  pthread_mutex_unlock(&lock);
}
