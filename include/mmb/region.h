/**
 * \file mmb/region.h
 * Regions (arenas): many allocations with one lifetime.
 *
 * A region bumps a pointer through fixed-size blocks taken from its
 * interface (a pooled interface serves them from its pool). Resetting it
 * forgets everything allocated in it in O(1) and keeps its blocks, so a loop
 * that allocates the same things every iteration reaches a flat memory
 * profile after its first iteration, with no provider trip. Blocks given up
 * by one region (destroyed, or handed back by a child) go to a free-block
 * list shared by every region of the interface.
 *
 * mmb_region_push opens a child region that allocates after everything its
 * parent holds; resetting or destroying the child gives back only what the
 * child allocated. Regions nest in stack order: while a region has a live
 * child, allocating in it, resetting it or destroying it is MMB_BUSY.
 *
 * A region belongs to one thread at a time (regions of a thread-safe
 * interface may live on different threads). On a pinned interface the blocks
 * stay page-locked; on a device interface the pointers are device pointers.
 * Under AddressSanitizer, memory of a reset region is poisoned, so a use
 * after reset is reported.
 */
#ifndef MMB_REGION_H
#define MMB_REGION_H

#include <mmb/export.h>
#include <mmb/types.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The alignment of mmb_region_alloc when 0 is asked for (that of max_align_t). */
#define MMB_REGION_DEFAULT_ALIGNMENT 16u

/**
 * Creates a region drawing blocks from \p interface.
 * \param opts  NULL or zeroed: 1 MiB blocks; block_size is rounded up to 4 KiB.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_OVERFLOW for an absurd
 *         block_size; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED. No block is
 *         taken before the first allocation.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_region_create(mmbMemInterface *interface, const mmbRegionOptions *opts,
                                      mmbRegion **out_region);

/**
 * Opens a child of \p parent: it allocates in the same blocks, after what
 * \p parent holds, and gives back only its own allocations.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_BUSY if \p parent already
 *         has a live child; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_region_push(mmbRegion *parent, mmbRegion **out_child);

/**
 * Allocates \p n_bytes in \p region: a pointer bump in the common case. An
 * allocation larger than a block gets a block of its own.
 * \param alignment  a power of two up to MMB_MAX_ALIGNMENT; 0 = MMB_REGION_DEFAULT_ALIGNMENT.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, \p n_bytes == 0 or a bad
 *         alignment; MMB_OVERFLOW for sizes that cannot be addressed; MMB_BUSY
 *         while \p region has a live child; MMB_OUT_OF_MEMORY when no block
 *         can be had, after the space's out-of-memory chain (mmb/cache.h;
 *         the region is left as it was); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_region_alloc(mmbRegion *region, size_t n_bytes, size_t alignment,
                                     void **out_ptr);

/** \cond INTERNAL
    The first member of every mmbRegion: a magic word while the region is
    live, its bump position, and how far the inline path below may bump (0
    when only the library may). Read and written by mmb_region_alloc only;
    not part of the API. */
typedef struct mmb__region_cursor {
  uint64_t magic;
  uintptr_t bump, limit;
} mmb__region_cursor;
/* "mmbRegn1": the magic word of a live region's cursor. */
#define MMB__REGION_MAGIC 0x6d6d625265676e31ull

/* mmb_region_alloc's common case, inlined into the caller: a bump within the
   current block. It reads nothing before the cursor's magic word, the first
   word of the region, says it is a live region: anything else (a pointer
   that is not a region, a destroyed one, one from before mmb_finalize) goes
   to the library's function and is refused there, as is everything else it
   does not do (a new block, a dedicated block, bad arguments, a region with
   a live child). That function is still exported as mmb_region_alloc (take
   its address, or define MMB_NO_INLINE, to call it directly). */
MMB_NODISCARD static inline mmbError mmb__region_alloc_inline(mmbRegion *region, size_t n_bytes,
                                                size_t alignment, void **out_ptr) {
  mmb__region_cursor *c = (mmb__region_cursor *)(void *)region;
  if (c && c->magic == MMB__REGION_MAGIC && out_ptr && n_bytes - 1 < ((size_t)1 << 40) &&
      alignment <= 4096 && !(alignment & (alignment - 1))) {
    uintptr_t a = alignment ? alignment : MMB_REGION_DEFAULT_ALIGNMENT;
    /* bump <= limit, both addresses, and a <= 4096, n_bytes < 2^40: no sum wraps */
    uintptr_t p = (c->bump + a - 1) & ~(a - 1);
    if (p + n_bytes <= c->limit) {
      c->bump = p + n_bytes;
      *out_ptr = (void *)p;
      return MMB_OK;
    }
  }
  return (mmb_region_alloc)(region, n_bytes, alignment, out_ptr);
}
#ifndef MMB_NO_INLINE
#define mmb_region_alloc(region, n_bytes, alignment, out_ptr) \
  mmb__region_alloc_inline((region), (n_bytes), (alignment), (out_ptr))
#endif
/** \endcond */

/**
 * Forgets everything allocated in \p region (and every mmbAllocation placed
 * in it, whose handles become invalid), keeping its blocks for reuse.
 * \return MMB_OK; MMB_INVALID_ARG for NULL; MMB_BUSY while a child lives;
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_region_reset(mmbRegion *region);

/**
 * Resets \p region and destroys it. A root region's blocks go to the
 * interface's shared free-block list (mmb_interface_trim gives them back to
 * the provider).
 * \return MMB_OK; MMB_INVALID_ARG for NULL; MMB_BUSY while a child lives
 *         (nothing changes); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_region_destroy(mmbRegion *region);

#ifdef __cplusplus
}
#endif

#endif /* MMB_REGION_H */
