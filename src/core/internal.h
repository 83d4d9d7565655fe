/* Internal: shared by every part of libmmb (never installed). */
#ifndef MMB_CORE_INTERNAL_H
#define MMB_CORE_INTERNAL_H

#include <mmb/mmb.h>

#include <stdbool.h>
#include <stddef.h>
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
void mmb__log(mmbLogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool mmb__log_enabled(mmbLogLevel level);
/* Applies opts/env at init: the option wins unless MMB_LOG_DEFAULT. */
mmbError mmb__log_configure(mmbLogLevel from_options);
/* Logs why an argument was refused (at debug level) and returns err. */
mmbError mmb__fail(mmbError err, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
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

/* ---- internal memory and fault injection (fault.c) --------------- */
/* Every allocation the library makes for itself goes through these, so that
   the fault injector reaches every allocation site. */
void *mmb__malloc(size_t n);
void *mmb__calloc(size_t count, size_t size);
void mmb__free(void *p);

/* Internal records the library makes and drops at a high rate (requests,
   work items, fences) come from shared free lists (recycle.c); free needs
   the size the record was made with. Both allocations count as
   fault-injection sites. */
void *mmb__record_alloc(size_t n);
void *mmb__record_calloc(size_t n);
void mmb__record_free(void *p, size_t n);
/* Gives the kept blocks back to malloc (mmb_finalize). */
void mmb__records_trim(void);

/* Fault injection (tests only, but always built): after `skip` more sites
   have passed, the next `count` sites fail. A site is an internal allocation
   or a trip to a provider. */
void mmb__fault_arm(unsigned long skip, unsigned long count);
void mmb__fault_disarm(void);
unsigned long mmb__fault_failures(void);   /* sites failed since arming */
bool mmb__fault_hit(void);                 /* true: the caller must fail */

#endif /* MMB_CORE_INTERNAL_H */
