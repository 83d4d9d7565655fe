/**
 * \file mmb/allocation.h
 * Allocations (one contiguous block from an interface) and the copies
 * between them, across any pair of providers.
 *
 * A handle passed to mmb_free twice, or a pointer mmb never handed out, is
 * detected by the allocation registry and refused with MMB_INVALID_ARG.
 */
#ifndef MMB_ALLOCATION_H
#define MMB_ALLOCATION_H

#include <mmb/export.h>
#include <mmb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Allocates \p n_bytes from \p interface, aligned to MMB_DEFAULT_ALIGNMENT.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs or \p n_bytes == 0;
 *         MMB_OVERFLOW if \p n_bytes cannot be rounded up to the alignment;
 *         MMB_OUT_OF_MEMORY if the provider or a space's limit refuses (the
 *         space is left as it was); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_allocate(size_t n_bytes, mmbMemInterface *interface,
                                 mmbAllocation **out_allocation);

/**
 * As mmb_allocate, with options.
 * \param opts  NULL or zeroed for defaults. alignment: a power of two up to
 *              MMB_MAX_ALIGNMENT (0 = default); flags: MMB_ALLOC_ZERO.
 * \return as mmb_allocate; MMB_INVALID_ARG for a bad alignment or unknown
 *         flags; MMB_UNSUPPORTED if zeroing was asked of a provider that
 *         cannot zero.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_allocate_opts(size_t n_bytes, mmbMemInterface *interface,
                                      const mmbAllocateOptions *opts,
                                      mmbAllocation **out_allocation);

/**
 * Frees an allocation; the handle is invalid afterwards.
 * \return MMB_OK; MMB_INVALID_ARG for NULL, a handle already freed, or
 *         anything mmb did not hand out (reported at error level);
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_free(mmbAllocation *allocation);

/** The allocation's address (device memory: a device pointer). Cannot fail:
    NULL for NULL or a handle that is not live. */
MMB_EXPORT void *mmb_allocation_ptr(const mmbAllocation *allocation);
/** The bytes asked for. Cannot fail: 0 for NULL or a handle that is not live. */
MMB_EXPORT size_t mmb_allocation_size(const mmbAllocation *allocation);
/** The interface it came from (for one its interface's fallback space
    served, mmb's interface there). \return MMB_OK; MMB_INVALID_ARG;
    MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_allocation_get_interface(const mmbAllocation *allocation,
                                             mmbMemInterface **out_interface);
/** Deprecated: the former name of mmb_allocation_get_interface, kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_allocation_get_interface")
mmbError mmb_allocation_interface(const mmbAllocation *allocation,
                                  mmbMemInterface **out_interface);

/** The space the allocation's bytes are in: its interface's, or the
    interface's fallback space when the allocation was served there.
    \return MMB_OK; MMB_INVALID_ARG for NULLs or a handle that is not live;
    MMB_NOT_INITIALIZED. (A name the design fixed, kept as programs use it.) */
MMB_EXPORT MMB_NODISCARD mmbError mmb_allocation_space(const mmbAllocation *allocation,
                                                       mmbMemSpace **out_space);

/**
 * malloc-style: allocates \p n_bytes from \p interface and returns the bare
 * pointer (device memory: a device pointer), aligned to
 * MMB_DEFAULT_ALIGNMENT. No handle: give it back with mmb_ptr_deallocate on the
 * same interface. On a pool interface, blocks up to 2 KiB come from slabs
 * of their own through a cache of the calling thread, a stack pop with no
 * lock; the stats count them like any allocation (mmb_interface_destroy is
 * MMB_BUSY while one lives). Copies and arrays take handles: use
 * mmb_allocate for those. A block queue work may still touch is freed with
 * mmb_ptr_deallocate_async (queue.h).
 * \return MMB_OK; MMB_INVALID_ARG for NULLs or \p n_bytes == 0; otherwise
 *         as mmb_allocate.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_ptr_allocate(size_t n_bytes, mmbMemInterface *interface,
                                                void **out_ptr);
/** Deprecated: the former name of mmb_ptr_allocate, with its first two arguments
    the other way round; kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_ptr_allocate")
mmbError mmb_ptr_alloc(mmbMemInterface *interface, size_t n_bytes, void **out_ptr);

/**
 * As mmb_ptr_allocate, with options (NULL or zeroed for defaults): alignment, a
 * power of two up to MMB_MAX_ALIGNMENT (256 as cudaMalloc's, 4096 for a
 * page); flags: MMB_ALLOC_ZERO. A block aligned beyond 64 bytes, or zeroed,
 * is an allocation with a handle underneath (still freed by mmb_ptr_deallocate).
 * \return as mmb_allocate_opts; MMB_INVALID_ARG for opts->region (a region's
 *         bytes come from mmb_region_alloc).
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_ptr_allocate_opts(size_t n_bytes, mmbMemInterface *interface,
                                                     const mmbAllocateOptions *opts,
                                                     void **out_ptr);
/** Deprecated: the former name of mmb_ptr_allocate_opts, with its first two arguments
    the other way round; kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_ptr_allocate_opts")
mmbError mmb_ptr_alloc_opts(mmbMemInterface *interface, size_t n_bytes,
                            const mmbAllocateOptions *opts, void **out_ptr);

/**
 * Frees a pointer mmb_ptr_allocate or mmb_ptr_allocate_opts returned from
 * \p interface. As with free(),
 * an address freed and handed out again by a later mmb_ptr_allocate names that
 * new block.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, a pointer already freed, one
 *         from another interface or from mmb_allocate, or anything mmb did
 *         not hand out (reported at error level; nothing is freed);
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_ptr_deallocate(void *ptr, mmbMemInterface *interface);
/** Deprecated: the former name of mmb_ptr_deallocate, with its first two arguments
    the other way round; kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_ptr_deallocate")
mmbError mmb_ptr_free(mmbMemInterface *interface, void *ptr);

/**
 * Copies all of \p src to the start of \p dst (\p dst == \p src: nothing
 * moves, in any memory).
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, handles that are not live
 *         allocations, or \p dst smaller than \p src;
 *         MMB_UNSUPPORTED if no provider of the pair can copy;
 *         the provider's error (MMB_ERROR); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_copy(mmbAllocation *dst, mmbAllocation *src);

/**
 * Copies \p width bytes from \p src + \p soffset to \p dst + \p doffset.
 * Within one allocation: the same range moves nothing; overlapping ranges
 * of host-accessible memory are copied as by memmove.
 * \return as mmb_copy; MMB_INVALID_ARG for \p width == 0, a range past
 *         either end, or overlapping (not identical) ranges of memory the
 *         host cannot reach; MMB_OVERFLOW for offsets that overflow.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_copy_1d(mmbAllocation *dst, size_t doffset,
                                mmbAllocation *src, size_t soffset, size_t width);

/**
 * Copies a \p width bytes x \p height rows block. x offsets, widths and
 * pitches are bytes, y offsets and heights are rows: the block starts at byte
 * yoffset * pitch + xoffset. Each pitch must be at least xoffset + width.
 * Two blocks of one allocation that share no byte copy like any others,
 * however their rows interleave (a halo exchange); the same block moves
 * nothing; blocks that share bytes are refused, unless each is one
 * contiguous run (a single row, or pitch == width), which is then
 * mmb_copy_1d.
 * \return as mmb_copy_1d; MMB_INVALID_ARG also for a zero height or pitch, a
 *         pitch narrower than xoffset + width, or blocks of one allocation
 *         that share bytes (as above); nothing is copied then.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_copy_2d(mmbAllocation *dst, size_t dxoffset, size_t dyoffset, size_t dxpitch,
                                mmbAllocation *src, size_t sxoffset, size_t syoffset, size_t spitch,
                                size_t width, size_t height);

/**
 * Copies an N-dimensional block. dims[0] is the contiguous width in bytes,
 * dims[k>0] counts along dim k; offset[0] is bytes, offset[k>0] an index
 * along dim k; pitch[k] is the stride in bytes of dim k+1 (pitch[ndims-1] is
 * ignored, and both pitch arrays may be NULL when \p ndims is 1). Each dim
 * must fit in the next one's pitch: offset[0] + dims[0] <= pitch[0] and
 * (offset[k] + dims[k]) * pitch[k-1] <= pitch[k]. Blocks of one allocation:
 * as mmb_copy_2d (disjoint blocks copy, whatever their shapes).
 * \return as mmb_copy_2d; MMB_INVALID_ARG for \p ndims outside
 *         1..MMB_MAX_DIMS, NULL arrays, a zero extent, or any range out of
 *         bounds.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_copy_nd(mmbAllocation *dst, const size_t *doffset, const size_t *dpitch,
                                mmbAllocation *src, const size_t *soffset, const size_t *spitch,
                                size_t ndims, const size_t *dims);

#ifdef __cplusplus
}
#endif

#endif /* MMB_ALLOCATION_H */
