/**
 * \file mmb/cache.h
 * mmb manages a fast tier: a cache of tiles per space.
 *
 * A program acquires the tiles it is about to use in the space it computes
 * in, and releases them when done; mmb decides what stays. A tile acquired
 * in a space is fetched there on a miss (its data copied in, for MMB_READ)
 * and stays cached after its release, so the next acquire is a hit. When
 * the space's cache budget is full, the least recently used unpinned tile
 * goes: a clean one is dropped for free, a dirty one (acquired with
 * MMB_WRITE since it was last written home) is written home first, exactly
 * once, on the space's own queue (so a miss does not wait for it). mmb's
 * own calls on the tile wait for that write; code that reads an array's
 * home through a pointer calls mmb_array_flush (or, for a tile,
 * mmb_tile_flush) first, which waits for it too. Hints change the order (mmb_tile_advise).
 *
 * The coherence record stays exact: a cached copy is a duplicate of its
 * tile (mmb/tile.h), so while tiles of an array are cached, the array
 * cannot be re-tiled (MMB_BUSY) and its tiles' other duplicates see the same
 * rules. mmb_array_flush writes every dirty copy home; mmb_array_evict drops
 * an array's copies from a space; mmb_array_destroy drops the copies of its
 * tiles (without writing them back: the array is going), unless one is
 * pinned: then it is MMB_BUSY and drops none.
 *
 * The calls of this header may be made from several threads at once: one
 * lock guards every space's cache, and it is never held while data moves.
 */
#ifndef MMB_CACHE_H
#define MMB_CACHE_H

#include <mmb/export.h>
#include <mmb/queue.h>
#include <mmb/types.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What a program says of a tile's use in a space (mmb_tile_advise). */
typedef enum mmbAdvice {
  MMB_ADVICE_NORMAL = 0,   /**< least recently used goes first */
  MMB_ADVICE_WILLNEED,     /**< fetch it now, ahead of its acquire; evicted last */
  MMB_ADVICE_WONTNEED,     /**< not needed soon: written home now if dirty, evicted first */
  MMB_ADVICE_KEEP,         /**< never evicted to make room (mmb_array_evict still drops it) */
} mmbAdvice;

/** A space's cache settings (mmb_space_set_cache). */
typedef struct mmbCacheConfig {
  /** Bytes the cached copies may hold at once; 0: the space's limit. */
  size_t budget_bytes;
  /** The share of the budget kept clean under pressure: when dirty copies
      that are not pinned hold more than (1 - clean_share) of it and the
      cache is full, the least recently used of them are written home on a
      release, so that eviction mostly drops clean copies. 0 writes nothing home ahead of need; 1 writes every
      dirty copy home as soon as it is released. Default 0.5. */
  double clean_share;
} mmbCacheConfig;

/** A space's cache counters since mmb_init (mmb_space_get_cache_stats). */
typedef struct mmbCacheStats {
  uint64_t hits;              /**< acquires that found a valid copy (or the tile at home) */
  uint64_t misses;            /**< acquires that fetched or refreshed a copy */
  uint64_t fetched_bytes;     /**< bytes copied into the space by misses and prefetches */
  uint64_t clean_drops;       /**< clean copies evicted (nothing moved) */
  uint64_t writebacks;        /**< dirty copies written home (evictions, flushes, ahead of need) */
  uint64_t writeback_bytes;   /**< bytes those moved */
  uint64_t refetches;         /**< misses of a tile evicted from this space before */
  uint64_t oom_rounds;        /**< rounds of the out-of-memory chain run for the space */
  uint64_t handler_calls;     /**< calls of the space's out-of-memory handlers */
  uint64_t fallback_bytes;    /**< bytes of the space's interfaces served by their fallback */
  uint64_t used_bytes;        /**< now: bytes the cached copies hold */
  uint64_t dirty_bytes;       /**< now: of those, dirty */
  uint64_t pinned_bytes;      /**< now: of those, acquired and not yet released */
  uint64_t budget_bytes;      /**< now: the budget */
} mmbCacheStats;

/**
 * A local tile of \p tile in \p space, pinned until mmb_tile_release: a copy
 * already cached there (a hit), or one fetched now (a miss), evicting
 * unpinned copies if the budget is full. With MMB_READ the copy holds the
 * tile's data; with MMB_WRITE the copy becomes dirty and is written home
 * when it is evicted or flushed. A tile whose storage is in \p space is
 * itself the local tile (never evicted); acquired with MMB_WRITE, the
 * write is recorded then, so copies of it cached elsewhere are fetched
 * again at their next acquire. Acquiring twice pins twice. A tile may be
 * cached in several spaces: its copies written in the others go home
 * first (on their queues), so the acquire sees the last write wherever it
 * was made, and a copy here that it left behind is fetched again.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, an unknown access, or a
 *         duplicate (acquire its origin); MMB_INVALID_STATE for MMB_WRITE on
 *         a read-only tile; MMB_BUSY while a copy of the tile is acquired
 *         for writing in another space, or the tile itself at home (it
 *         may still be written); MMB_OUT_OF_MEMORY at once when the pinned copies
 *         (and those advised KEEP) leave no room for it: nothing is evicted
 *         then, so no livelock; the copy's error (MMB_ERROR, ...) when its
 *         data failed to arrive twice (a failed prefetch, then this fetch):
 *         the copy is then neither pinned nor ever written home, and the
 *         next acquire that reads it copies it again; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_acquire(mmbArrayTile *tile, mmbMemSpace *space,
                                                   mmbAccessType access,
                                                   mmbArrayTile **out_local);

/**
 * mmb_tile_acquire on a queue: a miss's copy is fetched on \p q, and
 * \p req (may be NULL) completes once the local tile holds the data (for a
 * hit, once the work submitted to \p q before has run, and a copy still on
 * its way, such as a prefetch, has arrived). \p *out_local is set at once;
 * read or write it only after \p req, or in work submitted to \p q after
 * this call. When the copy's data fails to arrive (its copy, or the
 * prefetch it waited for, failed), \p req ends with the copy's error
 * (MMB_ERROR, ...; without \p req, mmb_queue_synchronize returns it): the
 * local tile's bytes are undefined, and it stays pinned; release it all the
 * same. It is never written home, and the next acquire that reads it copies
 * it again.
 * \return as mmb_tile_acquire (an error of the copy itself comes through
 *         \p req instead); MMB_INVALID_ARG for a NULL queue or a request
 *         already in use.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_acquire_async(mmbArrayTile *tile, mmbMemSpace *space,
                                                         mmbAccessType access, mmbQueue *q,
                                                         mmbRequest *req,
                                                         mmbArrayTile **out_local);

/**
 * Unpins a tile mmb_tile_acquire gave; it stays cached, clean or dirty.
 * \return MMB_OK; MMB_INVALID_ARG for NULL or a tile that is not pinned (never
 *         acquired, or released as many times as it was acquired);
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_release(mmbArrayTile *local);

/**
 * A hint on \p tile's use in \p space (mmbAdvice). WILLNEED fetches a tile
 * not yet cached on the space's copy queue, only into room it can make at
 * once: without evicting pinned, KEEP or WILLNEED copies, nor copies that
 * are dirty or still moving (otherwise it does nothing, and never waits);
 * its acquire then waits for the copy. WONTNEED starts writing a dirty,
 * unpinned copy home on that queue.
 * \return MMB_OK (also when there is nothing to do); MMB_INVALID_ARG for
 *         NULLs, an unknown advice or a duplicate; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_advise(mmbArrayTile *tile, mmbMemSpace *space,
                                                  mmbAdvice advice);

/**
 * Writes every dirty cached copy of \p array's tiles home, in every space,
 * and waits for the writes already on their way (evictions, WONTNEED,
 * ahead of need): the home then holds every write. The copies stay cached,
 * clean (a copy pinned with MMB_WRITE stays dirty: it may still be written).
 * \return MMB_OK; MMB_INVALID_ARG; MMB_INVALID_STATE (nothing changes) from
 *         work running on a queue, when work is queued behind it there on
 *         the tiles or their copies: it would wait for itself; an error of a
 *         copy; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_flush(mmbArray *array);

/**
 * mmb_array_flush for one tile of an array's grid: its dirty cached copies
 * go home, after the work on its way there, before code reads or writes
 * the tile's home through its pointer (MPI, I/O, a kernel; after writing,
 * mmb_tile_mark_written).
 * \return MMB_OK (also when nothing is cached); MMB_INVALID_ARG for NULL,
 *         not a tile, or a duplicate (a cached copy too: flush its origin);
 *         MMB_INVALID_STATE as mmb_array_flush; an error of a copy;
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_flush(mmbArrayTile *tile);

/**
 * Drops the cached copies of \p array's tiles from \p space (NULL: from
 * every space), writing the dirty ones home first.
 * \return MMB_OK; MMB_BUSY when some are pinned (those stay; the others are
 *         gone); MMB_INVALID_ARG; MMB_INVALID_STATE as mmb_array_flush; an
 *         error of a copy; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_evict(mmbArray *array, mmbMemSpace *space);

/**
 * Sets \p space's cache budget and clean share (NULL: the defaults). A
 * budget below what is cached now evicts unpinned copies down to it.
 * \return MMB_OK; MMB_INVALID_ARG for a NULL space or a clean share outside
 *         [0, 1]; MMB_BUSY when pinned copies hold more than the new budget
 *         (the old one stays); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_set_cache(mmbMemSpace *space,
                                                      const mmbCacheConfig *config);

/** \p space's cache settings. \return MMB_OK; MMB_INVALID_ARG for NULLs;
    MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_get_cache(mmbMemSpace *space,
                                                      mmbCacheConfig *out_config);

/** \p space's cache counters. \return MMB_OK; MMB_INVALID_ARG for NULLs;
    MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_get_cache_stats(const mmbMemSpace *space,
                                                            mmbCacheStats *out);

/* ---- the out-of-memory chain ---------------------------------------------
   When an allocation in a space is refused (its provider, or a limit), mmb
   does not give up at once. In order, trying the allocation again after
   each step: it trims the cached memory of every thread-safe interface
   drawing on the same budgets, and the allocating interface's (whose
   pool gives its free segments back itself when that makes room); drops the
   clean unpinned tile copies cached in the space (and in spaces drawing on
   it), WONTNEED first, KEEP never, and gives their bytes back to the
   provider; writes home and drops the dirty ones; calls the
   space's handlers, in the order they were added, for up to
   MMB_OOM_HANDLER_ROUNDS rounds while one of them says MMB_OOM_RETRY; then
   serves it from the interface's fallback space, if it has one
   (mmbMemInterfaceConfig.fallback). Only then is it MMB_OUT_OF_MEMORY, with
   nothing changed. An allocation made inside the chain (by a handler, in
   any space) that is refused gets MMB_OUT_OF_MEMORY at once: no second
   chain, no deadlock. */

/** What a handler says after its attempt to free room. */
typedef enum mmbOomAction {
  MMB_OOM_GIVE_UP = 0,   /**< nothing more to free: go on down the chain */
  MMB_OOM_RETRY,         /**< room may have been freed: try the allocation again */
} mmbOomAction;

/** A space's out-of-memory handler: \p bytes_needed is the refused
    allocation's size, \p attempt counts the rounds from 0. It may call
    mmb: free, trim, destroy what it owns, but not the interface whose
    allocation was refused (MMB_BUSY: the chain goes on with it), nor
    finalize mmb (MMB_INVALID_STATE). When the refused allocation is
    a tile cache's own copy (an acquire's fetch), the cache is at work on
    the handler's thread: the calls that would change a cache
    (mmb_tile_acquire, mmb_tile_release, mmb_tile_advise, mmb_tile_flush,
    mmb_array_flush, mmb_array_evict, mmb_space_set_cache,
    mmb_space_release, mmb_register_memory, and mmb_array_destroy of an
    array with cached copies) return MMB_BUSY there, and nothing changes; the cache's
    settings and counters can be read. */
typedef mmbOomAction (*mmbOomHandler)(mmbMemSpace *space, size_t bytes_needed,
                                      unsigned attempt, void *arg);

/** Rounds of handler calls before the chain goes on to the fallback. */
#define MMB_OOM_HANDLER_ROUNDS 3

/**
 * Adds \p fn (with \p arg) to \p space's handlers, after those already
 * there. A space holds up to 8.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs or a pair already added;
 *         MMB_OUT_OF_MEMORY when the space has 8; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_add_oom_handler(mmbMemSpace *space, mmbOomHandler fn,
                                                            void *arg);

/** Removes the handler \p fn added with \p arg.
    \return MMB_OK; MMB_INVALID_ARG for NULLs or a pair not added;
    MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_space_remove_oom_handler(mmbMemSpace *space,
                                                               mmbOomHandler fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* MMB_CACHE_H */
