/**
 * \file mmb/array.h
 * N-dimensional arrays and whole-array transport.
 *
 * An array has a shape (mmbDimensions), a layout and a home: an allocation it
 * owns in an interface's space, memory in a region, or a buffer of the
 * caller's that it wraps and never frees. Arrays are tiled (mmb/tile.h); an
 * untiled array is one tile covering all of it.
 *
 * Whole-array transport follows the tile semantics (mmb/tile.h; docs/design.md):
 * mmb_array_duplicate makes a new array, in another interface, that is a
 * duplicate of its origin; mmb_array_merge folds it back and destroys it;
 * mmb_array_migrate moves the home; mmb_array_copy copies between two arrays
 * of one shape. An operation that would read a home whose data lives
 * elsewhere (a tile migrated away) returns MMB_INVALID_STATE.
 *
 * An array, its tiles and its iterators belong to one thread at a time.
 */
#ifndef MMB_ARRAY_H
#define MMB_ARRAY_H

#include <mmb/export.h>
#include <mmb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Options of mmb_array_create_opts; zero for defaults. */
typedef struct mmbArrayOptions {
  size_t alignment;   /**< of the home storage: a power of two; 0 = MMB_DEFAULT_ALIGNMENT
                           (or the layout's row_alignment when larger) */
  unsigned flags;     /**< MMB_ALLOC_ZERO */
  mmbRegion *region;  /**< place the home storage in this region: it goes when the
                           region is reset or destroyed, so destroy the array first */
} mmbArrayOptions;

/**
 * Creates an array with a home allocation of its own in \p interface's space.
 * \param dims       the shape: dims->size must be the layout's rank, every
 *                   extent > 0, and the storage must fit in size_t.
 * \param layout     element size, order, padding and element type (copied).
 * \param interface  where the home storage is allocated.
 * \param access     how the array will be used: an array without MMB_WRITE
 *                   cannot be the destination of a copy or a merge
 *                   (MMB_INVALID_STATE).
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, a rank that is not the layout's,
 *         a zero extent or an unknown access; MMB_OVERFLOW when the storage
 *         size overflows; MMB_OUT_OF_MEMORY (nothing is left allocated);
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_create(const mmbDimensions *dims, const mmbLayout *layout,
                                     mmbMemInterface *interface, mmbAccessType access,
                                     mmbArray **out_array);

/**
 * As mmb_array_create, with options. With opts->region, \p interface may be
 * NULL (the region's interface is used) or must be the region's.
 * \return as mmb_array_create; MMB_INVALID_ARG for a bad alignment, unknown
 *         flags or an interface that is not the region's; MMB_BUSY when the
 *         region has a live child (as mmb_region_alloc).
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_create_opts(const mmbDimensions *dims, const mmbLayout *layout,
                                          mmbMemInterface *interface, mmbAccessType access,
                                          const mmbArrayOptions *opts, mmbArray **out_array);

/**
 * Wraps a buffer of the caller's, laid out as \p layout says for \p dims.
 * The array never frees it. \p interface says whose memory it is (host
 * memory: any host interface, such as one on the first DRAM space).
 * \return as mmb_array_create, with MMB_INVALID_ARG for a NULL \p data.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_create_wrapped(void *data, const mmbDimensions *dims,
                                             const mmbLayout *layout, mmbMemInterface *interface,
                                             mmbAccessType access, mmbArray **out_array);

/**
 * Destroys an array, its tiling and its home storage (not a wrapped buffer,
 * nor region memory, which goes with its region). Destroying a duplicate
 * array discards it without merging. Tiles migrated away are freed with it,
 * and the copies of its tiles in tile caches, unwritten (mmb/cache.h).
 * \return MMB_OK; MMB_INVALID_ARG for NULL; MMB_BUSY (and nothing changes,
 *         cached copies included) while duplicates of the array or of its
 *         tiles, tiles acquired in a cache (at home too), or iterators over
 *         it, are live,
 *         and for an array with cached copies from an out-of-memory handler
 *         a cache's fetch reached (mmbOomHandler); MMB_INVALID_STATE (and
 *         nothing changes) from work running on a queue, when work is queued
 *         behind it there on the array, its tiles or their cached copies: it
 *         would wait for itself; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_destroy(mmbArray *array);

/** The home storage's address. Cannot fail: NULL for NULL, before mmb_init, or when the
    home is not host accessible (device memory). */
MMB_EXPORT void *mmb_array_ptr(const mmbArray *array);

/** The shape. \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_get_dims(const mmbArray *array, mmbDimensions *out_dims);
/** Deprecated: the former name of mmb_array_get_dims, kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_array_get_dims")
mmbError mmb_array_dims(const mmbArray *array, mmbDimensions *out_dims);

/** Strides of the home storage, in elements, per dimension (padding included).
    \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_get_strides(const mmbArray *array, mmbDimensions *out_strides);
/** Deprecated: the former name of mmb_array_get_strides, kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_array_get_strides")
mmbError mmb_array_strides(const mmbArray *array, mmbDimensions *out_strides);

/** Bytes of the home storage (padding included).
    \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_get_bytes(const mmbArray *array, size_t *out_bytes);
/** Deprecated: the former name of mmb_array_get_bytes, kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_array_get_bytes")
mmbError mmb_array_bytes(const mmbArray *array, size_t *out_bytes);

/** The interface that holds the home storage.
    \return MMB_OK; MMB_INVALID_ARG; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_get_interface(const mmbArray *array, mmbMemInterface **out_interface);
/** Deprecated: the former name of mmb_array_get_interface, kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_array_get_interface")
mmbError mmb_array_interface(const mmbArray *array, mmbMemInterface **out_interface);

/**
 * Copies every element of \p src into \p dst: same rank, extents and element
 * size; any spaces, orders and paddings. Tiles of \p dst that have
 * read-only duplicates see those duplicates go stale. Copies of tiles of
 * either array cached dirty (mmb/cache.h) go home first: the copy reads
 * what the cache held, and no cached copy later puts older data over
 * \p dst.
 * \return MMB_OK (also when dst == src); MMB_INVALID_ARG for NULLs, shapes or
 *         element sizes that differ; MMB_BUSY while a copy of a tile of
 *         either array is acquired for writing in a cache; MMB_INVALID_STATE when \p dst is
 *         read-only (made or duplicated without MMB_WRITE), a tile of either
 *         array lives away from home (migrated), or \p src is a read-only
 *         duplicate gone stale;
 *         MMB_UNSUPPORTED when no provider can copy; MMB_OUT_OF_MEMORY when a
 *         staging buffer cannot be had; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_copy(mmbArray *dst, mmbArray *src);

/**
 * Moves the home of an array to \p in_interface (an owned allocation there).
 * MMB_READ in \p in_access copies the data; without it the new home starts
 * undefined. The old storage is freed (a wrapped buffer is only let go of).
 * Tiles follow: their ptr, stride and space describe the new home.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs or an unknown access;
 *         MMB_BUSY while duplicates of the array or of its tiles are live;
 *         MMB_INVALID_STATE when a tile is migrated away;
 *         MMB_OUT_OF_MEMORY (the array is left as it was); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_migrate(mmbArray *in_array, mmbMemInterface *in_interface,
                                      mmbAccessType in_access);

/**
 * Makes \p *out_array, a duplicate of \p in_array in \p in_interface: same
 * shape and layout. MMB_READ copies the data in (what dirty copies of its
 * tiles in tile caches held, which go home first); a duplicate without
 * MMB_WRITE is read-only, and merging it moves no bytes.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs or an unknown access; MMB_BUSY
 *         with MMB_READ while a copy of one of its tiles is acquired for
 *         writing in a cache;
 *         MMB_INVALID_STATE when a tile of \p in_array is migrated away, or
 *         \p in_array is a stale read-only duplicate; MMB_OVERFLOW;
 *         MMB_OUT_OF_MEMORY (nothing changes); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_duplicate(mmbArray *in_array, mmbMemInterface *in_interface,
                                        mmbAccessType in_access, mmbArray **out_array);

/**
 * As mmb_array_duplicate, the duplicate laid out by \p in_layout: of the
 * array's rank and of the same elements (the same records, stored AoS or
 * SoA, in any order and padding), converted on the way in, and on the way
 * back when it is merged with MMB_MERGE_OVERWRITE. A NULL layout is the
 * array's own (mmb_array_duplicate).
 * \return as mmb_array_duplicate; MMB_INVALID_ARG for a layout of another
 *         rank or of other elements.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_duplicate_layout(mmbArray *in_array, mmbMemInterface *in_interface,
                                               mmbAccessType in_access, const mmbLayout *in_layout,
                                               mmbArray **out_array);

/**
 * As mmb_array_migrate, the new home laid out by \p in_layout (as for
 * mmb_array_duplicate_layout): MMB_READ converts the data on the way, AoS to
 * SoA or back. Migrating to the array's own interface with another layout
 * re-lays it out in place of the old home. The array's layout is then
 * \p in_layout, and its tiles describe the new storage.
 * \return as mmb_array_migrate; MMB_INVALID_ARG for a layout of another
 *         rank or of other elements.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_migrate_layout(mmbArray *in_array, mmbMemInterface *in_interface,
                                             mmbAccessType in_access, const mmbLayout *in_layout);

/**
 * Where field \p index of the array's elements lives in its home (for a
 * regular layout, field 0 is the element): for SoA storage, the field's
 * plane. NULL ptr when the home is not host accessible.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs or an index past the fields;
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_get_field(const mmbArray *array, size_t index, mmbField *out_field);

/**
 * Folds a duplicate array back into its origin with \p in_merge, then
 * destroys the duplicate (its handle is invalid afterwards). A read-only
 * duplicate moves no bytes, whatever \p in_merge.
 * \return MMB_OK; MMB_INVALID_ARG for NULL, an unknown merge type, or SUM,
 *         MIN or MAX on a layout without an element type; MMB_INVALID_STATE
 *         when \p in_array is not a duplicate, its origin is read-only, or a
 *         tile of it or of its origin is migrated away; MMB_BUSY while the duplicate has live
 *         duplicates or iterators of its own, or a copy of a tile of the
 *         origin is acquired for writing in a cache (dirty ones go home
 *         first, as for mmb_array_copy); MMB_UNSUPPORTED;
 *         MMB_OUT_OF_MEMORY (for staging: nothing changes); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_merge(mmbArray *in_array, mmbMergeType in_merge);

/** A user merge: called on runs of \p count contiguous elements, \p dst in
    the origin and \p src in the duplicate, both in host memory. It runs
    inside the merge. In a synchronous merge, the duplicate being merged is
    refused there (MMB_INVALID_ARG), and its array, still counting it, is
    neither destroyed nor re-tiled (MMB_BUSY). In the _async twins it runs
    on the queue's worker, after the duplicate's handle is gone: destroying
    or re-tiling the array there would wait for the merge it runs in, and
    is refused (MMB_INVALID_STATE). */
typedef void (*mmbMergeFunction)(void *dst, const void *src, size_t count,
                                 size_t element_size, void *user_data);

/** As mmb_array_merge, folding with \p fn. \return as mmb_array_merge;
    MMB_INVALID_ARG for a NULL \p fn. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_merge_with(mmbArray *in_array, mmbMergeFunction fn, void *user_data);

/* ---- _async twins ---------------------------------------------------------
   Each checks its arguments and does its bookkeeping at once (a duplicate
   exists, a migrated array's fields describe its new home, a merged
   duplicate's handle is gone when the call returns); only the bytes move
   later, on \p q, in order with the queue's other work. Argument errors
   come back from the call, errors of the data movement through \p req
   (NULL: kept for mmb_queue_synchronize), and leave the target's bytes
   undefined. Storage an operation leaves behind is freed once the
   operation has run.

   Hazards are tracked: a synchronous transport on an array or tile waits
   for the asynchronous ones submitted on it, and an asynchronous one on
   another queue is ordered after them. Reading or writing the bytes
   yourself (mmb_array_ptr, a tile's ptr) waits for nothing: wait on the
   request first. */

/** mmb_array_copy on a queue. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_copy_async(mmbArray *dst, mmbArray *src, mmbQueue *q,
                                         mmbRequest *req);
/** mmb_array_migrate on a queue. The old home is read until the request
    completes: an owned home is freed then; a home in a region is kept, as
    mmb_region_reset and mmb_region_destroy of that region wait for the copy;
    a wrapped buffer is the caller's, and must outlive the request (wait on
    it before freeing or reusing the buffer). */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_migrate_async(mmbArray *in_array, mmbMemInterface *in_interface,
                                            mmbAccessType in_access, mmbQueue *q,
                                            mmbRequest *req);
/** mmb_array_duplicate on a queue: \p *out_array is set at once. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_duplicate_async(mmbArray *in_array, mmbMemInterface *in_interface,
                                              mmbAccessType in_access, mmbQueue *q,
                                              mmbRequest *req, mmbArray **out_array);
/** mmb_array_duplicate_layout on a queue (converting on the host, in the
    queue's order, when the layouts store the records differently). */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_duplicate_layout_async(mmbArray *in_array,
                                                     mmbMemInterface *in_interface,
                                                     mmbAccessType in_access,
                                                     const mmbLayout *in_layout, mmbQueue *q,
                                                     mmbRequest *req, mmbArray **out_array);
/** mmb_array_migrate_layout on a queue. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_migrate_layout_async(mmbArray *in_array,
                                                   mmbMemInterface *in_interface,
                                                   mmbAccessType in_access,
                                                   const mmbLayout *in_layout, mmbQueue *q,
                                                   mmbRequest *req);
/** mmb_array_merge on a queue: the duplicate's handle is invalid at once. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_merge_async(mmbArray *in_array, mmbMergeType in_merge,
                                          mmbQueue *q, mmbRequest *req);
/** mmb_array_merge_with on a queue (\p fn runs on the queue's worker). */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_merge_with_async(mmbArray *in_array, mmbMergeFunction fn,
                                               void *user_data, mmbQueue *q, mmbRequest *req);

#ifdef __cplusplus
}
#endif

#endif /* MMB_ARRAY_H */
