/* Internal: marks memory that a pool or a region holds but no caller owns, so
   that AddressSanitizer reports a use after free or after a region reset
   (mimalloc's track.h does the same). With MMB_DEBUG the bytes are also
   filled with 0xDB, which makes a stale read visible without ASan. Only host
   accessible memory is touched. */
#ifndef MMB_POISON_INTERNAL_H
#define MMB_POISON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define MMB__ASAN_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define MMB__ASAN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define MMB__ASAN_POISON(p, n) ((void)(p), (void)(n))
#define MMB__ASAN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define MMB__POISON_BYTE 0xDB

/* Bytes nobody owns any more. */
static inline void mmb__poison(bool host, void *p, size_t n) {
  if (!host || !n) return;
#if MMB_DEBUG
  MMB__ASAN_UNPOISON(p, n);
  memset(p, MMB__POISON_BYTE, n);
#endif
  MMB__ASAN_POISON(p, n);
}

/* Bytes handed to a caller, or given back to a provider. */
static inline void mmb__unpoison(bool host, void *p, size_t n) {
  if (host && n) MMB__ASAN_UNPOISON(p, n);
}

#endif /* MMB_POISON_INTERNAL_H */
