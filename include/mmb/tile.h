/**
 * \file mmb/tile.h
 * Tiles of an array, their transport and tile iterators.
 *
 * mmb_array_tile partitions an array's index space into a grid of tiles of a
 * chunk shape (edge tiles are smaller). A tile starts as a view into the
 * array's home storage. Then:
 *  - duplicate makes a new tile, a copy in another space (READ copies the
 *    data in, WRITE does not); the original stays valid;
 *  - merge folds a duplicate back into its origin (overwrite, sum, min, max or
 *    a user function) and releases it: its handle is invalid afterwards;
 *  - migrate moves the tile's data to another space: the tile's fields then
 *    describe the new storage, and the home storage of its block is stale
 *    until the tile migrates back to the array's space;
 *  - copy copies between two tiles of the same shape, any spaces.
 *
 * Each tile keeps a coherence record: a version bumped by every write mmb
 * makes to it, the versions its duplicates were copied at, and whether its
 * home is stale. So merging a read-only duplicate moves no bytes, and reading
 * a read-only duplicate whose origin has since been written, or an array home
 * whose tile lives elsewhere, is MMB_INVALID_STATE instead of silent garbage.
 * Writes made through plain pointers are the caller's to order.
 *
 * Duplicates and migrations into a space draw on a pooled, thread-safe
 * interface that mmb keeps for that space; its bytes show in the space's
 * statistics. A space without room gives MMB_OUT_OF_MEMORY and leaves the
 * tile exactly as it was.
 */
#ifndef MMB_TILE_H
#define MMB_TILE_H

#include <mmb/array.h>
#include <mmb/export.h>
#include <mmb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Tiles \p array into chunks of \p chunk_dims (edge tiles smaller; an extent
 * larger than the array's is clamped). Tile pointers from an earlier tiling
 * become invalid.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, a rank that is not the array's
 *         or a zero chunk extent; MMB_OVERFLOW for a grid whose tile count
 *         overflows; MMB_BUSY while the array or its tiles have live
 *         duplicates, tiles are migrated away or acquired at home (a tile
 *         cache's, mmb/cache.h), or iterators are live;
 *         MMB_INVALID_STATE (nothing changes) from work running on a queue,
 *         when work is queued behind it there on the tiles: releasing them
 *         would wait for itself; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_tile(mmbArray *array, const mmbDimensions *chunk_dims);

/**
 * Tiles \p array irregularly: tiles->d[k] tiles along dimension k, between
 * boundaries given in \p bounds dimension after dimension, tiles->d[k] + 1
 * of them for dimension k, from 0 to the array's extent, each past the one
 * before (tile i along k spans [b[i], b[i + 1])). Adaptive meshes, ragged
 * batches: everything that takes tiles (transports, iterators, the tile
 * cache) takes these. Tile pointers from an earlier tiling become invalid.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, a rank that is not the
 *         array's, a count of 0 or over the extent, boundaries that do not
 *         run from 0 to the extent or do not increase; MMB_OVERFLOW;
 *         MMB_BUSY as mmb_array_tile; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_tile_irregular(mmbArray *array,
                                                           const mmbDimensions *tiles,
                                                           const size_t *bounds);

/** Tiles per dimension (all 1 for an untiled array).
    \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
    (A name fixed before the mmb_X_get_Y convention, kept as programs use it.) */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_tile_grid(const mmbArray *array, mmbDimensions *out_grid);

/**
 * The tile at \p tile_index in the grid. The tile belongs to the array: it
 * lives until the array is re-tiled or destroyed.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, a rank that is not the array's
 *         or an index outside the grid; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_at(mmbArray *array, const mmbIndex *tile_index,
                                mmbArrayTile **out_tile);

/**
 * Copies \p src_tile into \p dst_tile: same rank, extents and element size;
 * any spaces and strides, either side a grid tile or a duplicate. Copies of
 * either tile cached dirty (mmb/cache.h) go home first: the copy reads what
 * the cache held, and no cached copy later puts older data over \p dst_tile
 * (its copies are refreshed when next read).
 * \return MMB_OK (also for dst == src); MMB_INVALID_ARG for NULLs, tiles not
 *         made by mmb, or shapes or element sizes that differ; MMB_BUSY while
 *         a copy of either tile is acquired for writing in a cache;
 *         MMB_INVALID_STATE when \p dst_tile is read-only (a read-only
 *         duplicate, or a tile of an array made without MMB_WRITE) or
 *         \p src_tile a stale read-only duplicate; MMB_UNSUPPORTED; MMB_OUT_OF_MEMORY (for
 *         staging); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_copy(mmbArrayTile *dst_tile, mmbArrayTile *src_tile);

/**
 * Copies the transpose of \p src_tile into \p dst_tile: dst's extents are
 * src's in reverse order, and element (i0, ..., ik) of dst is element
 * (ik, ..., i0) of src (for 2-D tiles, dst = src^T). Any spaces, strides and
 * storage orders: between host tiles of 4- or 8-byte elements it is one
 * pass of a blocked SIMD transpose, so a tiled out-of-place transpose is a
 * loop of this call over the tiles of A and B (examples/tiled_transpose.c).
 * \return as mmb_tile_copy; MMB_INVALID_ARG when dst's extents are not src's
 *         reversed, or for a tile of more than one element onto itself.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_copy_transposed(mmbArrayTile *dst_tile,
                                                           mmbArrayTile *src_tile);

/**
 * Makes \p *out_tile, a duplicate of \p in_tile in \p in_space, with the same
 * absolute indices (lower, upper). \p in_layout gives the order and padding of
 * its storage (its rank must be the tile's and its element size the tile's);
 * NULL means contiguous, in the array's order. MMB_READ copies the data in
 * (what a dirty copy in a tile cache held, which goes home first); without
 * MMB_WRITE the duplicate is read-only.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, an unknown access or a layout
 *         that does not fit; MMB_BUSY with MMB_READ while a copy of the tile
 *         is acquired for writing in a cache; MMB_INVALID_STATE when \p in_tile is a stale
 *         read-only duplicate, or MMB_WRITE is asked of a read-only tile (a
 *         read-only duplicate, or a tile of an array made without MMB_WRITE),
 *         whose duplicate could never be merged; MMB_OUT_OF_MEMORY when \p in_space has no room
 *         (the tile is left as it was); MMB_OVERFLOW; MMB_UNAVAILABLE;
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_duplicate(mmbArrayTile *in_tile, mmbMemSpace *in_space,
                                       mmbAccessType in_access, mmbLayout *in_layout,
                                       mmbArrayTile **out_tile);

/**
 * Moves a tile's data to \p in_space, in \p in_layout (NULL: contiguous, in
 * the array's order). MMB_READ copies the data; without it the new storage
 * starts undefined. Migrating to the array's own space with a NULL layout
 * brings the tile home: its block of the home storage is valid again
 * (bringing home a tile that is home does nothing).
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, an unknown access or a layout
 *         that does not fit; MMB_INVALID_STATE for a duplicate (duplicate it
 *         again instead); MMB_BUSY while the tile has live duplicates;
 *         MMB_OUT_OF_MEMORY (the tile is left as it was); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_migrate(mmbArrayTile *in_tile, mmbMemSpace *in_space,
                                     mmbAccessType in_access, mmbLayout *in_layout);

/**
 * Folds a duplicate back into its origin with \p in_merge and releases it:
 * \p in_tile is invalid afterwards. A read-only duplicate moves no bytes.
 * Copies of the origin cached dirty go home first, as for mmb_tile_copy (a
 * SUM adds to what they held).
 * \return MMB_OK; MMB_INVALID_ARG for NULL, a tile not made by mmb, an
 *         unknown merge type, or SUM, MIN or MAX without an element type
 *         (mmb_layout_set_element_type on the array's layout);
 *         MMB_INVALID_STATE when \p in_tile is not a duplicate, or a
 *         writable duplicate of a read-only origin; MMB_BUSY while
 *         it has live duplicates of its own, or a copy of the origin is
 *         acquired for writing in a cache; MMB_UNSUPPORTED;
 *         MMB_OUT_OF_MEMORY (for staging: nothing changes); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_merge(mmbArrayTile *in_tile, mmbMergeType in_merge);

/**
 * Releases a duplicate without writing anything back: its origin keeps the
 * data it had (a scratch copy, a transfer that failed half-way).
 * \p in_tile is invalid afterwards.
 * \return MMB_OK; MMB_INVALID_ARG for NULL or a tile not made by mmb;
 *         MMB_INVALID_STATE when \p in_tile is not a duplicate; MMB_BUSY
 *         while it has live duplicates of its own; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_discard(mmbArrayTile *in_tile);

/** As mmb_tile_merge, folding with a user function over contiguous runs.
    \return as mmb_tile_merge; MMB_INVALID_ARG for a NULL \p fn. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_merge_with(mmbArrayTile *in_tile, mmbMergeFunction fn,
                                        void *user_data);

/* ---- _async twins: as for arrays (see mmb/array.h) ------------------------ */
/** mmb_tile_copy on a queue. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_copy_async(mmbArrayTile *dst_tile, mmbArrayTile *src_tile,
                                        mmbQueue *q, mmbRequest *req);
/** mmb_tile_copy_transposed on a queue. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_copy_transposed_async(mmbArrayTile *dst_tile,
                                                                 mmbArrayTile *src_tile,
                                                                 mmbQueue *q, mmbRequest *req);
/** mmb_tile_duplicate on a queue: \p *out_tile is set at once, its bytes
    arrive when \p req completes. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_duplicate_async(mmbArrayTile *in_tile, mmbMemSpace *in_space,
                                             mmbAccessType in_access, mmbLayout *in_layout,
                                             mmbQueue *q, mmbRequest *req,
                                             mmbArrayTile **out_tile);
/** mmb_tile_migrate on a queue: the tile's fields describe the new storage
    at once. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_migrate_async(mmbArrayTile *in_tile, mmbMemSpace *in_space,
                                           mmbAccessType in_access, mmbLayout *in_layout,
                                           mmbQueue *q, mmbRequest *req);
/** mmb_tile_merge on a queue: the duplicate's handle is invalid at once. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_merge_async(mmbArrayTile *in_tile, mmbMergeType in_merge,
                                         mmbQueue *q, mmbRequest *req);
/** mmb_tile_merge_with on a queue (\p fn runs on the queue's worker). */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_merge_with_async(mmbArrayTile *in_tile, mmbMergeFunction fn,
                                              void *user_data, mmbQueue *q, mmbRequest *req);

/**
 * A handle to the tile that code running where the tile's data lives can
 * read: the tile itself when its space is host accessible, else a copy of its
 * public fields in that space's memory (for a kernel to use with the
 * MMB_TILE_AT_* macros). The copy is refreshed on each call and freed when the
 * tile moves or is released.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_INVALID_STATE for a stale
 *         read-only duplicate; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_get_space_local_handle(mmbArrayTile *in_tile,
                                                    mmbArrayTile **out_tile);

/** What a tile is, beyond its public fields (mmb_tile_get_state). */
typedef struct mmbTileState {
  mmbElementType type;      /**< the array's element type (mmb_layout_set_element_type) */
  bool duplicate;           /**< made by mmb_tile_duplicate, not a tile of the grid */
  bool writable;            /**< mmb may write it: a tile of an array made with
                                 MMB_WRITE, or a duplicate asked for with it */
  bool stale;               /**< a read-only duplicate whose origin was written
                                 since: reading it is MMB_INVALID_STATE */
  bool host_accessible;     /**< the host may dereference ptr */
  bool contiguous;          /**< its elements fill one run of
                                 element_size * (product of dim) bytes at ptr */
  unsigned long long version;   /**< writes made to its data, as mmb knows them */
  bool soa;                 /**< SoA records: each field lies in a plane of its own
                                 (mmb_tile_get_field); ptr is field 0's */
} mmbTileState;

/**
 * Describes \p tile: what code that moves a tile's bytes itself (MPI, a
 * kernel, I/O) needs to know to do it right.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs or a tile not made by mmb (or
 *         released); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_get_state(mmbArrayTile *tile, mmbTileState *out_state);

/**
 * Where field \p index of the tile's elements lives in its current storage:
 * for a tile of SoA records, in the field's plane, for AoS at its offset in
 * each record; for a regular layout, field 0 is the element. This is how
 * code reads SoA tiles (their ptr is field 0's).
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, a tile that is not live, or an
 *         index past the fields; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_get_field(const mmbArrayTile *tile, size_t index,
                                       mmbField *out_field);

/**
 * An iterator over the tiles of an array (the whole array when untiled), in
 * the schedule of \p opts (NULL: row-major). It starts on the first tile.
 * The array cannot be re-tiled or destroyed while the iterator lives.
 *
 * MMB_SCHEDULE_CUSTOM visits the tiles opts->order lists (row-major grid
 * positions), or those opts->order_fn gives for positions 0, 1, ...: any
 * subset of the grid, in any order, each tile at most once; checked at
 * creation. Every mode below follows it, so prefetches and cache hints
 * fetch the tiles the schedule visits next.
 *
 * Through the tile cache (opts->space set, no queue): the iterator acquires
 * each tile in opts->space from its tile cache (mmb/cache.h) with
 * opts->access (0: MMB_READ), advises the next opts->depth tiles of the
 * schedule MMB_ADVICE_WILLNEED, hands out the cached copy (the tile itself
 * when the space is its home) and releases it when it moves on or is
 * destroyed; the cache writes written copies home when it evicts or
 * flushes them (mmb_array_flush).
 *
 * Prefetching (opts->queue and opts->space set): the iterator hands out
 * duplicates in opts->space instead of the array's tiles. It keeps the next
 * opts->depth tiles on their way on the queue, and behind the caller merges
 * each duplicate back with opts->merge (MMB_WRITE in opts->access) or
 * releases it (MMB_READ alone). With MMB_WRITE alone nothing is read in:
 * write every element of each tile handed out. Creating it starts the walk
 * and waits for the first duplicate; next waits for the one it moves to; a
 * failed prefetch comes back from the call that needed it. The space must
 * hold depth + 2 tiles, as its pool carves them: mmb_tile_iterator_footprint
 * says how many bytes that takes. Destroy merges the current tile, releases
 * the ones not yet handed out, and waits for the merges.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, an unknown schedule, access or
 *         merge, a queue without a space, or SUM, MIN or MAX on a layout
 *         without an element type; for MMB_SCHEDULE_CUSTOM, neither or both
 *         of order and order_fn, an order_length of 0 or over the tiles, a
 *         position outside the grid, a tile visited twice, or no tile (and
 *         order or order_fn with another schedule); MMB_INVALID_STATE for
 *         writable duplicates of a read-only array; MMB_OUT_OF_MEMORY (also
 *         when the space has no room, or the cache's pinned tiles would pass
 *         its budget); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_iterator_create(mmbArray *in_array,
                                             const mmbTileIteratorOptions *opts,
                                             mmbTileIterator **out_it);
/**
 * Bytes of opts->space that a prefetching iterator over \p in_array with
 * \p opts always has enough with: depth + 2 duplicates of the array's
 * largest tile (at most one per tile), as the pool mmb keeps for the space
 * carves them (tiles up to 2 KiB from 64 KiB slabs, 16 tiles to a 2 MiB
 * segment; larger ones in 512-byte granules, from 2 MiB segments up to
 * 1 MiB, 20 MiB segments up to 10 MiB, a segment each beyond). Several iterators
 * drawing on one space need at most the sum of their footprints; if their
 * tiles have one size and each array has at least as many tiles as all of
 * them hold together, at most the footprint of one iterator whose depth + 2
 * is the sum of theirs. Use it to size a space for an iterator, or tiles for
 * a space's budget.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_OUT_OF_MEMORY when the
 *         array's tiling cannot be made; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_iterator_footprint(mmbArray *in_array,
                                                const mmbTileIteratorOptions *opts,
                                                size_t *out_bytes);

/** Back to the first tile (prefetching: unless it is there already, the
    current tile is merged, the prefetched ones are released, and the walk
    starts again). \return MMB_OK; MMB_INVALID_ARG for NULL; MMB_NOT_INITIALIZED; a prefetch's
    error. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_iterator_first(mmbTileIterator *it);
/** On to the next tile; past the last one, mmb_tile_iterator_tile gives NULL.
    \return MMB_OK; MMB_INVALID_ARG for NULL; MMB_NOT_INITIALIZED; MMB_INVALID_STATE when already
    past the end; prefetching: a merge's or a prefetch's error. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_iterator_next(mmbTileIterator *it);
/** The number of tiles it visits (a custom schedule's may be fewer than the
    grid's). \return MMB_OK; MMB_INVALID_ARG for NULLs;
    MMB_NOT_INITIALIZED. (Mamba's name, kept as Mamba wrote it.) */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_iterator_count(mmbTileIterator *it, size_t *count);
/** The current tile (prefetching: its duplicate; through the cache: its
    cached copy). Cannot fail: NULL past the end, for NULL, before mmb_init,
    or when the current tile's prefetch or acquire failed. */
MMB_EXPORT mmbArrayTile *mmb_tile_iterator_tile(const mmbTileIterator *it);
/** The current tile's grid index. \return MMB_OK; MMB_INVALID_ARG for NULLs;
    MMB_NOT_INITIALIZED;
    MMB_INVALID_STATE past the end. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_iterator_get_index(const mmbTileIterator *it, mmbIndex *out_index);
/** Deprecated: the former name of mmb_tile_iterator_get_index, kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_tile_iterator_get_index")
mmbError mmb_tile_iterator_index(const mmbTileIterator *it, mmbIndex *out_index);
/** \return MMB_OK; MMB_INVALID_ARG for NULL; MMB_NOT_INITIALIZED; prefetching: the first error
    of the last merges (the iterator is destroyed either way). */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_iterator_destroy(mmbTileIterator *it);

#ifdef __cplusplus
}
#endif

#endif /* MMB_TILE_H */
