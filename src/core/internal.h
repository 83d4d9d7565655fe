/* Internal: shared by every part of libmmb (never installed). */
#ifndef MMB_CORE_INTERNAL_H
#define MMB_CORE_INTERNAL_H

#include <mmb/mmb.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#define MMB__LIKELY(x) __builtin_expect(!!(x), 1)
#define MMB__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MMB__ALWAYS_INLINE inline __attribute__((always_inline))

/* ---- lifecycle ----------------------------------------------------------
   The lifecycle (src/lifecycle.c, above every floor) brings mmb up and down;
   core keeps only the count of nested mmb_init calls, for every floor to
   check. Written under the lifecycle's lock. */
bool mmb__initialized(void);
unsigned mmb__init_count(void);
void mmb__set_init_count(unsigned count);
#define MMB__REQUIRE_INIT()                                     \
  do {                                                          \
    if (MMB__UNLIKELY(!mmb__initialized())) return MMB_NOT_INITIALIZED; \
  } while (0)

/* ---- logging (log.c) ---------------------------------------------------- */
/* Messages go to stderr as "mmb: <level>: text". */
#define mmb__log mmb_log   /* mmb/extension.h: extensions write as mmb does */
/* Applies opts/env at init: the option wins unless MMB_LOG_DEFAULT. */
mmbError mmb__log_configure(mmbLogLevel from_options);
/* Logs why an argument was refused (at debug level) and returns err. */
mmbError mmb__fail(mmbError err, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#ifdef __clang_analyzer__
/* The analyser sees that a refusal returns the error it was given. */
#define mmb__fail(err, ...) (mmb__fail((err), __VA_ARGS__), (err))
#endif
/* A call of mmb's own that cannot fail unless mmb has a bug (freeing what
   it owns): a failure is logged at error level, and the caller goes on. */
void mmb__must(mmbError err, const char *call);
#define MMB__MUST(call) mmb__must((call), #call)
#define MMB__ARG(cond, func, ...) \
  do { if (MMB__UNLIKELY(cond)) return mmb__fail(MMB_INVALID_ARG, func, __VA_ARGS__); } while (0)

/* ---- environment (env.c) ------------------------------------------------ */
/* "4096", "512K", "2G", "1t", "64MiB": binary units. False on anything else,
   negative numbers and overflow. */
bool mmb__parse_size(const char *text, size_t *out);
bool mmb__parse_log_level(const char *text, mmbLogLevel *out);

/* ---- sizes -------------------------------------------------------------- */
static inline bool mmb__mul_overflows(size_t a, size_t b, size_t *out) {
  return __builtin_mul_overflow(a, b, out);
}
static inline bool mmb__add_overflows(size_t a, size_t b, size_t *out) {
  return __builtin_add_overflow(a, b, out);
}
static inline bool mmb__is_pow2(size_t x) { return x && !(x & (x - 1)); }
static inline size_t mmb__min(size_t a, size_t b) { return a < b ? a : b; }
static inline size_t mmb__max(size_t a, size_t b) { return a > b ? a : b; }

/* ---- internal memory and fault injection (fault.c) --------------- */
/* Every allocation the library makes for itself goes through these, so that
   the fault injector reaches every allocation site. */
void *mmb__malloc(size_t n);
void *mmb__calloc(size_t count, size_t size);
void mmb__free(void *p);
/* Zeroed, on cache lines of its own (128-byte aligned and padded: the
   adjacent-line prefetcher pairs lines), for what one thread writes while
   others write their own. Freed with mmb__free. */
void *mmb__calloc_lines(size_t size);

/* A free list shared by threads with a stack per thread in front of it
   (recycle.c): take and give touch the calling thread's stack alone, which
   trades with the shared list in batches under its lock. Blocks link
   through the pointer `link` bytes into them; the shared list keeps at
   most `keep`, and `destroy` ends a block it has no room for. Each list
   has a slot of its own below MMB__FREELIST_SLOTS. A thread's stacks go
   back to the shared lists when it ends. */
#define MMB__FREELIST_SLOTS 20
#define MMB__FREELIST_SLOT_REQUESTS 16   /* 0..15: the record classes (recycle.c) */
typedef struct mmb__freelist {
  pthread_mutex_t lock;   /* adaptive: held for a few stores */
  void *head;
  size_t count, keep, link;
  void (*destroy)(void *block);
  unsigned slot;
} mmb__freelist;
#define MMB__FREELIST_INIT(keep_, link_, destroy_, slot_)                                    \
  {.lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP, .keep = (keep_), .link = (link_),          \
   .destroy = (destroy_), .slot = (slot_)}
void *mmb__freelist_take(mmb__freelist *l);   /* NULL when there is none */
void mmb__freelist_give(mmb__freelist *l, void *block);
/* Ends every block of the shared list and of the calling thread's stack. */
void mmb__freelist_trim(mmb__freelist *l);

/* Internal records the library makes and drops at a high rate (requests,
   work items, fences) come from free lists of size classes (recycle.c, on
   mmb__freelist); free needs the size the record was made with. Both
   allocations count as fault-injection sites. */
void *mmb__record_alloc(size_t n);
void *mmb__record_calloc(size_t n);
void mmb__record_free(void *p, size_t n);
/* Gives the kept blocks back to malloc (mmb_finalize). */
void mmb__records_trim(void);

/* ---- handles (handle.c) --------------------------------------------------
   Every object a caller holds a pointer to lives in the handle arena, with
   a header (its kind, live or dead) in the 16 bytes before that pointer.
   A handle can always be checked, whatever happened to it: checking reads
   only the arena, which stays mapped, and an address is not reused for a
   new object until the arena wraps (see handle.c). */
typedef enum mmb__kind {
  MMB__KIND_SPACE = 1, MMB__KIND_INTERFACE, MMB__KIND_REGION, MMB__KIND_LAYOUT,
  MMB__KIND_ARRAY, MMB__KIND_TILE, MMB__KIND_TILING, MMB__KIND_ITERATOR,
  MMB__KIND_QUEUE, MMB__KIND_REQUEST, MMB__KIND_COUNT
} mmb__kind;
typedef struct mmb__objhdr {
  _Atomic uint64_t tag;
  size_t bytes;            /* of its block, header included; 0 when embedded */
} mmb__objhdr;
/* A zeroed object of `size` bytes, live: its handle. NULL when out of memory
   (a fault-injection site). */
void *mmb__object_new(mmb__kind kind, size_t size);
/* Marks it dead and gives its bytes back (NULL: nothing). */
void mmb__object_free(void *obj);
/* An object inside another's block (a tile of a tiling), whose header is the
   16 bytes before it there: marked live, and marked dead. */
void mmb__object_embed(void *obj, mmb__kind kind);
void mmb__object_retire(void *obj);
/* "mmbHnd" in the top 48 bits of a tag, the state and the kind below. */
#define MMB__TAG_MAGIC ((uint64_t)0x6d6d62486e64 << 16)
#define MMB__TAG_LIVE ((uint64_t)1 << 8)
#define MMB__TAG_DEAD ((uint64_t)2 << 8)
#define MMB__TAG(state, kind) (MMB__TAG_MAGIC | (state) | (uint64_t)(kind))
extern char *_Atomic mmb__arena_base;
extern _Atomic size_t mmb__arena_committed;
/* The tag before obj, or 0 where mmb puts no object: never reads outside
   the arena's usable part. */
static inline uint64_t mmb__object_tag(const void *obj) {
  /* relaxed: a handle reaches another thread through that thread's own
     synchronisation, which makes the arena's growth and the tag visible */
  const char *b = atomic_load_explicit(&mmb__arena_base, memory_order_relaxed);
  uintptr_t off = (uintptr_t)obj - (uintptr_t)b;
  /* one compare for the range: an address below the first header wraps
     around to a huge offset */
  if (MMB__UNLIKELY(!b || off - sizeof(mmb__objhdr) >=
                              atomic_load_explicit(&mmb__arena_committed, memory_order_relaxed) ||
                    off % 16))
    return 0;
  return atomic_load_explicit(&((const mmb__objhdr *)(const void *)((const char *)obj -
                                                                     sizeof(mmb__objhdr)))->tag,
                              memory_order_relaxed);
}
/* True when obj is a live object of that kind. */
static inline bool mmb__object_is(const void *obj, mmb__kind kind) {
  return obj && mmb__object_tag(obj) == MMB__TAG(MMB__TAG_LIVE, kind);
}
/* MMB_OK for a live object of that kind; else MMB_INVALID_ARG, logging why
   (NULL, never made by mmb, destroyed, another kind), naming it `what`. */
mmbError mmb__object_check(const char *func, const void *obj, mmb__kind kind, const char *what);
/* The check inline (a range test and a load); the reason only on failure.
   The second look reads the tag again: after the arena wraps, a stale
   handle's address may hold a new live object by then, and the call goes
   on with it, as it would have a moment later (it never returns MMB_OK
   with its work undone). */
#define MMB__HANDLE(obj, kind, func, what)                                   \
  do {                                                                      \
    if (MMB__UNLIKELY(!mmb__object_is((obj), (kind)))) {                    \
      mmbError mmb__handle_err = mmb__object_check((func), (obj), (kind), (what)); \
      if (mmb__handle_err != MMB_OK) return mmb__handle_err;                \
    }                                                                       \
  } while (0)
/* LeakSanitizer scans the heap, stacks and globals, not an mmap: ranges
   mmb maps for its records (the arena, the allocation registry) point at
   memory from malloc, so they are shown to it as roots whenever the process
   runs with it (mmb itself instrumented or not). */
void mmb__leak_root(const void *p, size_t n, bool on);
/* Tests: the arena's size in bytes (a multiple of 1 MiB, at most its
   default), set before it is mapped; false otherwise. */
bool mmb__objects_set_capacity(size_t bytes);
/* Drops every object of the arena, which stays mapped (the last mmb_finalize). */
void mmb__objects_finalize(void);

/* Fault injection (tests only, but always built): after `skip` more sites
   have passed, the next `count` sites fail. A site is an internal allocation
   or a trip to a provider. */
void mmb__fault_arm(unsigned long skip, unsigned long count);
void mmb__fault_disarm(void);
unsigned long mmb__fault_failures(void);   /* sites failed since arming */
bool mmb__fault_hit(void);                 /* true: the caller must fail */

/* ---- time --------------------------------------------------------------- */
#include <time.h>
/* A monotonic clock in nanoseconds (spins, the trace's timestamps). */
static inline uint64_t mmb__now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- requests (request.c) ------------------------------------------------ */
#include "core/request.h"

#endif /* MMB_CORE_INTERNAL_H */
