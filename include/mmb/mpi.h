/**
 * \file mmb/mpi.h
 * Tiles and arrays between MPI ranks: send, receive, broadcast and
 * all-reduce, from and into any tier (libmmb_mpi; `pkg-config mmb-mpi`);
 * and block-cyclic arrays handed to ScaLAPACK (mmb_mpi_array_descriptor).
 *
 * This header and libmmb_mpi are built when MPI is found; the core library
 * (libmmb) never links MPI. MPI must be initialised by the caller (MPI_Init
 * or MPI_Init_thread) before any call here, and mmb by mmb_init.
 *
 * How bytes reach MPI:
 *  - a contiguous host tile goes straight from (into) its storage;
 *  - a strided host tile goes through an MPI derived datatype, or is packed
 *    into a contiguous duplicate by mmb's copy engine, whichever is faster
 *    for its shape (mmbMpiOptions.packing; the rule is measured by bench/mpi);
 *  - a tile in device memory goes straight to MPI when MPI is CUDA-aware
 *    (mmb_mpi_cuda_aware), else it is staged through a duplicate in pinned
 *    host memory, drawn from the pooled interface mmb keeps for that space.
 * A grid tile's copies cached dirty in a tile cache go home first
 * (mmb_tile_flush), so a send sends what the cache holds.
 * A tile written by a receive, a broadcast or an all-reduce has its write
 * recorded (mmb_tile_mark_written, or the merge of its staging duplicate),
 * so read-only duplicates made before it go stale.
 *
 * Matching and errors:
 *  - Every operation first compares what the ranks hold: a send's header
 *    carries the tile's shape and element type and the receiver answers it;
 *    a collective agrees on a signature. A difference (rank, extents,
 *    element size or type, root, reduction) is MMB_INVALID_ARG on every rank
 *    involved, and no data moves. So is a failure on one rank (a read-only
 *    destination, no room for staging): the others learn of it and fail too
 *    instead of waiting.
 *  - A peer that never takes part is MMB_TIMEOUT after mmbMpiOptions.timeout
 *    seconds (MMB_MPI_TIMEOUT in the environment; default 300). The
 *    communicator may then hold an unmatched message: treat it as broken.
 *  - Argument errors (NULLs, a rank outside the communicator, a tag outside
 *    0..mmb_mpi_tag_max(), an unknown reduction) return at once, and nothing
 *    is sent.
 *  - Tags: a send uses \p tag and, for the receiver's answer, tag +
 *    mmb_mpi_tag_max() + 1; other traffic on the communicator should keep
 *    to tags up to mmb_mpi_tag_max().
 *  - Arrays go tile by tile in the grid's row-major order: the ranks must
 *    tile their arrays alike (an untiled array is one tile).
 *  - A tile's own pending asynchronous work (a duplicate_async into it)
 *    must be waited for first, or submitted to the same queue.
 *
 * _async twins run as tasks on a queue (mmb_queue_submit_task): once the
 * work submitted before them has completed, a host thread of the queue (a
 * thread queue's worker; a stream queue's own thread, after the stream's
 * earlier work) starts the MPI operations and drives their progress, so
 * mmb_wait on the request returns when MPI has completed them, with their
 * error, and work submitted to the queue after them runs after. They need
 * MPI_THREAD_MULTIPLE (MPI_Init_thread), since that thread calls MPI beside
 * the caller's. Collectives on one communicator must start in the same
 * order on every rank: issue them from one thread, or through one queue.
 */
#ifndef MMB_MPI_H
#define MMB_MPI_H

#include <mpi.h>

#include <mmb/mmb.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How strided host tiles reach MPI (mmbMpiOptions.packing). */
typedef enum mmbMpiPacking {
  MMB_MPI_PACK_AUTO,     /**< by shape: packed when its contiguous runs are short */
  MMB_MPI_PACK_ALWAYS,   /**< packed into a contiguous duplicate by mmb's copy engine */
  MMB_MPI_PACK_NEVER     /**< an MPI derived datatype over the tile's storage */
} mmbMpiPacking;

/** Whether device tiles go straight to MPI (mmbMpiOptions.cuda). */
typedef enum mmbMpiCuda {
  MMB_MPI_CUDA_AUTO,     /**< as MPI reports (MPIX_Query_cuda_support) */
  MMB_MPI_CUDA_AWARE,    /**< device pointers go to MPI */
  MMB_MPI_CUDA_STAGED    /**< always staged through pinned host memory */
} mmbMpiCuda;

/** Settings of libmmb_mpi, for the whole process. */
typedef struct mmbMpiOptions {
  double timeout;            /**< seconds to wait for a peer (> 0) */
  mmbMpiPacking packing;     /**< how strided host tiles reach MPI */
  mmbMpiCuda cuda;           /**< whether device tiles go straight to MPI */
  size_t pack_below;         /**< AUTO packs tiles whose contiguous runs are
                                  shorter than this many bytes */
} mmbMpiOptions;

/** The settings now: MMB_MPI_TIMEOUT, MMB_MPI_PACK (auto, always, never)
    and MMB_MPI_CUDA (auto, aware, staged) from the environment at the first
    call, else the defaults. \return MMB_OK; MMB_INVALID_ARG for NULL. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_get_options(mmbMpiOptions *out_options);

/** Replaces the settings (for operations started afterwards).
    \return MMB_OK; MMB_INVALID_ARG for NULL, a timeout that is not a
    positive number, or an unknown packing or CUDA mode. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_set_options(const mmbMpiOptions *options);

/** Whether device tiles go straight to MPI under the settings now.
    \return MMB_OK; MMB_INVALID_ARG for NULL. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_cuda_aware(bool *out_aware);

/** The largest tag a caller may use: half of MPI_TAG_UB (the upper half
    carries the receivers' answers). \return MMB_OK; MMB_INVALID_ARG for
    NULL; MMB_NOT_INITIALIZED when MPI is not. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_tag_max(int *out_tag);

/* ---- tiles ---------------------------------------------------------------- */

/**
 * Sends \p tile's elements to rank \p dest of \p comm; returns once the
 * receiver has accepted them (its answer to the header) and the data has
 * left. MPI_PROC_NULL as \p dest does nothing.
 * \return MMB_OK; MMB_INVALID_ARG for bad arguments, or when the receiver's
 *         tile differs or it failed; MMB_INVALID_STATE for a stale
 *         read-only duplicate; MMB_OVERFLOW for more than INT_MAX elements;
 *         MMB_OUT_OF_MEMORY (staging); MMB_TIMEOUT; MMB_ERROR for an MPI
 *         error; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_tile_send(mmbArrayTile *tile, int dest, int tag,
                                                    MPI_Comm comm);

/**
 * Receives into \p tile what rank \p source sent with \p tag (MPI_ANY_SOURCE
 * and MPI_ANY_TAG match any; \p status, which may be MPI_STATUS_IGNORE, says
 * which). The sender's tile must have the same rank, extents, element size
 * and element type (BYTES matches only BYTES).
 * \return as mmb_mpi_tile_send; MMB_INVALID_STATE for a read-only tile.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_tile_recv(mmbArrayTile *tile, int source, int tag,
                                                    MPI_Comm comm, MPI_Status *status);

/** Broadcasts rank \p root's \p tile into every rank's \p tile (collective
    on \p comm). \return as mmb_mpi_tile_send, on every rank. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_tile_bcast(mmbArrayTile *tile, int root, MPI_Comm comm);

/**
 * Every rank's \p tile becomes the element-wise reduction of all ranks'
 * tiles with \p op: MMB_MERGE_SUM, MMB_MERGE_MIN or MMB_MERGE_MAX, the merge
 * types, over the array's element type (float, double, int32, int64).
 * Collective on \p comm.
 * \return as mmb_mpi_tile_send, on every rank; MMB_INVALID_ARG for
 *         MMB_MERGE_OVERWRITE or elements of type BYTES.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_tile_allreduce(mmbArrayTile *tile, mmbMergeType op,
                                                         MPI_Comm comm);

/* ---- whole arrays: every tile, in the grid's row-major order ------------- */

/** mmb_mpi_tile_send of every tile of \p array. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_array_send(mmbArray *array, int dest, int tag,
                                                     MPI_Comm comm);
/** mmb_mpi_tile_recv of every tile of \p array, from one \p source
    (MPI_ANY_SOURCE is MMB_INVALID_ARG: the tiles must come from one rank). */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_array_recv(mmbArray *array, int source, int tag,
                                                     MPI_Comm comm);
/** mmb_mpi_tile_bcast of every tile of \p array. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_array_bcast(mmbArray *array, int root, MPI_Comm comm);
/** mmb_mpi_tile_allreduce of every tile of \p array. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_array_allreduce(mmbArray *array, mmbMergeType op,
                                                          MPI_Comm comm);

/* ---- _async twins: tasks on \p q, completed by mmb_wait on \p req -------- */
/* Argument errors return from the call (and MMB_UNSUPPORTED without
   MPI_THREAD_MULTIPLE); the operation's own errors come back from mmb_wait
   (or mmb_queue_synchronize for a NULL req). A tile or array must stay
   alive, and untouched, until the request completes. */

/** mmb_mpi_tile_send on \p q: \p req completes once the receiver has accepted the tile and its data has left. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_tile_send_async(mmbArrayTile *tile, int dest, int tag,
                                                          MPI_Comm comm, mmbQueue *q,
                                                          mmbRequest *req);
/** mmb_mpi_tile_recv on \p q (no status: the tile says what arrived). */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_tile_recv_async(mmbArrayTile *tile, int source, int tag,
                                                          MPI_Comm comm, mmbQueue *q,
                                                          mmbRequest *req);
/** mmb_mpi_tile_bcast on \p q. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_tile_bcast_async(mmbArrayTile *tile, int root,
                                                           MPI_Comm comm, mmbQueue *q,
                                                           mmbRequest *req);
/** mmb_mpi_tile_allreduce on \p q. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_tile_allreduce_async(mmbArrayTile *tile, mmbMergeType op,
                                                               MPI_Comm comm, mmbQueue *q,
                                                               mmbRequest *req);
/** mmb_mpi_array_send on \p q. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_array_send_async(mmbArray *array, int dest, int tag,
                                                           MPI_Comm comm, mmbQueue *q,
                                                           mmbRequest *req);
/** mmb_mpi_array_recv on \p q. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_array_recv_async(mmbArray *array, int source, int tag,
                                                           MPI_Comm comm, mmbQueue *q,
                                                           mmbRequest *req);
/** mmb_mpi_array_bcast on \p q. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_array_bcast_async(mmbArray *array, int root,
                                                            MPI_Comm comm, mmbQueue *q,
                                                            mmbRequest *req);
/** mmb_mpi_array_allreduce on \p q. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_array_allreduce_async(mmbArray *array, mmbMergeType op,
                                                                MPI_Comm comm, mmbQueue *q,
                                                                mmbRequest *req);

/* ---- ScaLAPACK ------------------------------------------------------------ */

/**
 * The ScaLAPACK array descriptor (DESC_, 9 integers: DTYPE 1, CTXT, M, N,
 * MB, NB, RSRC, CSRC, LLD) of \p array, this process's local part of a
 * block-cyclic matrix (mmb_array_tile_block_cyclic, with the owner at this
 * process's row and column of the BLACS grid \p blacs_context). The array
 * is then handed to ScaLAPACK in place: mmb_array_ptr(array) is its local
 * matrix, desc its descriptor (for ScaLAPACK's 1-based IA, JA = 1). As
 * for any read through a pointer, tiles written in a tile cache reach it
 * after mmb_array_flush.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, a rank other than 2, or a local
 *         part that is not column-major (ScaLAPACK's order: stride 1 along
 *         the rows); MMB_INVALID_STATE for an array not tiled
 *         block-cyclically, or not in host memory; MMB_OVERFLOW for an
 *         extent past INT_MAX; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_mpi_array_descriptor(mmbArray *array, int blacs_context,
                                                           int desc[9]);

#ifdef __cplusplus
}
#endif

#endif /* MMB_MPI_H */
