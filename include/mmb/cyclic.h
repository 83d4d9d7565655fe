/**
 * \file mmb/cyclic.h
 * Block-cyclic distributions, ScaLAPACK's: along each dimension, blocks of
 * `block` indices are dealt to `grid` owners in turn, the first block to
 * owner `source`. Owners are the ranks of an MPI process grid (each holds
 * its local part as an array of its own: mmb_array_tile_block_cyclic, and
 * libmmb_mpi's mmb_mpi_array_descriptor hands it to ScaLAPACK in place), or
 * the spaces of one node (mmb_array_distribute: one array, its tiles dealt
 * round-robin over NUMA nodes or tiers).
 *
 * The mapping functions are ScaLAPACK's TOOLS routines with 0-based indices
 * (NUMROC, INDXG2P, INDXG2L, INDXL2G), inline: tested against ScaLAPACK's
 * own on random shapes, blocks and grids (test/scalapack/).
 */
#ifndef MMB_CYCLIC_H
#define MMB_CYCLIC_H

#include <mmb/export.h>
#include <mmb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A block-cyclic distribution of a rank-`rank` index space. */
typedef struct mmbBlockCyclic {
  size_t rank;                    /**< dimensions, 1 .. MMB_MAX_DIMS */
  size_t global[MMB_MAX_DIMS];    /**< the global extents */
  size_t block[MMB_MAX_DIMS];     /**< block extents (ScaLAPACK's MB, NB) */
  size_t grid[MMB_MAX_DIMS];      /**< owners along each dimension (NPROW, NPCOL) */
  size_t source[MMB_MAX_DIMS];    /**< the owner of the first block (RSRC, CSRC) */
  size_t owner[MMB_MAX_DIMS];     /**< over ranks: this owner's coordinates (MYROW, MYCOL) */
} mmbBlockCyclic;

/** NUMROC: how many of \p n indices, in blocks of \p nb dealt over \p nprocs
    owners from \p isrcproc, owner \p iproc holds, into \p *out.
    \return MMB_OK; MMB_INVALID_ARG for a NULL out, nb or nprocs of 0, or an
    owner outside 0 .. nprocs - 1. */
static inline mmbError mmb_cyclic_numroc(size_t n, size_t nb, size_t iproc, size_t isrcproc,
                                         size_t nprocs, size_t *out) {
  if (!out || !nb || !nprocs || iproc >= nprocs || isrcproc >= nprocs) return MMB_INVALID_ARG;
  size_t mydist = (nprocs + iproc - isrcproc) % nprocs, nblocks = n / nb;
  size_t extra = nblocks % nprocs, count = nblocks / nprocs * nb;
  if (mydist < extra) count += nb;
  else if (mydist == extra) count += n % nb;
  *out = count;
  return MMB_OK;
}

/** INDXG2P: the owner of global index \p g. \return as mmb_cyclic_numroc. */
static inline mmbError mmb_cyclic_indxg2p(size_t g, size_t nb, size_t isrcproc, size_t nprocs,
                                          size_t *out) {
  if (!out || !nb || !nprocs || isrcproc >= nprocs) return MMB_INVALID_ARG;
  *out = (isrcproc + g / nb) % nprocs;
  return MMB_OK;
}

/** INDXG2L: global index \p g's index in its owner's local part.
    \return as mmb_cyclic_numroc. */
static inline mmbError mmb_cyclic_indxg2l(size_t g, size_t nb, size_t nprocs, size_t *out) {
  if (!out || !nb || !nprocs) return MMB_INVALID_ARG;
  *out = nb * (g / (nb * nprocs)) + g % nb;
  return MMB_OK;
}

/** INDXL2G: owner \p iproc's local index \p l as a global index.
    \return as mmb_cyclic_numroc. */
static inline mmbError mmb_cyclic_indxl2g(size_t l, size_t nb, size_t iproc, size_t isrcproc,
                                          size_t nprocs, size_t *out) {
  if (!out || !nb || !nprocs || iproc >= nprocs || isrcproc >= nprocs) return MMB_INVALID_ARG;
  *out = nprocs * nb * (l / nb) + l % nb + (nprocs + iproc - isrcproc) % nprocs * nb;
  return MMB_OK;
}

/**
 * Tiles \p array, owner \p bc->owner's local part of a block-cyclic
 * distribution, by the distribution's blocks: its extents must be what
 * mmb_cyclic_numroc gives that owner along each dimension (an owner with
 * none along a dimension holds no part: make no array for it). The array
 * keeps the distribution (mmb_array_get_block_cyclic); its tiles are the
 * owner's blocks, in local order. Re-tiling forgets it.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, a rank that is not the
 *         array's, a block or grid extent of 0, a source or owner outside
 *         its grid, or extents that are not the owner's; MMB_BUSY and
 *         MMB_OUT_OF_MEMORY as mmb_array_tile; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_tile_block_cyclic(mmbArray *array,
                                                              const mmbBlockCyclic *bc);

/**
 * Deals the blocks of \p array (the whole index space: extents bc->global)
 * over \p spaces, one per owner of bc->grid in row-major order (the owner
 * of block (i, j) is spaces[g2p(i) * grid[1] + g2p(j)]): tiles the array by
 * the blocks and migrates each, data and all, to its owner's space (a block
 * whose owner is the array's own space stays home). bc->owner is not read.
 * Round-robin over NUMA nodes' DRAM, or over tiers. Re-tiling brings the
 * blocks home first, as for tiles placed in a preferred space.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs (a NULL space included), a
 *         rank or extents that are not the array's, a block or grid extent
 *         of 0, a source outside its grid, or more owners than fit size_t;
 *         MMB_BUSY as mmb_array_tile; MMB_OUT_OF_MEMORY when a space has no
 *         room (the blocks dealt so far are brought home);
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_distribute(mmbArray *array, const mmbBlockCyclic *bc,
                                                       mmbMemSpace *const *spaces);

/** The distribution \p array was tiled by (mmb_array_tile_block_cyclic or
    mmb_array_distribute). \return MMB_OK; MMB_INVALID_ARG for NULLs;
    MMB_INVALID_STATE when its tiling is not block-cyclic;
    MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_array_get_block_cyclic(const mmbArray *array,
                                                             mmbBlockCyclic *out);

#ifdef __cplusplus
}
#endif

#endif /* MMB_CYCLIC_H */
