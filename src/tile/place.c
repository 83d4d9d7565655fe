/* Tiling an array (regularly, irregularly, or by a block-cyclic
   distribution), and its tiles placed away from home: in its preferred
   space (the interface's own, when the home landed in the interface's
   fallback), or dealt over spaces by a distribution. Placed tiles go home
   before the grid changes. (tile.c moves them, tiling.c makes the grid.) */
#include "tile/internal.h"

/* Moves tile t to space with its data and marks it tiling's to bring home. */
static mmbError place_tile(mmbArray *a, mmb__tile *t, mmbMemSpace *space) {
  mmbError err = mmb_tile_migrate(&t->pub, space, MMB_READ, NULL);
  if (err != MMB_OK) return err;
  t->placed = true;
  a->n_placed++;
  return MMB_OK;
}

/* An array whose home landed in its interface's fallback space prefers
   the interface's own: its tiles move there, in the grid's order, while
   they fit (the space's out-of-memory chain runs for the first that does
   not; it and the tiles after it stay home). */
static mmbError place(const char *func, mmbArray *a) {
  if (!a->preferred || !a->tiling) return MMB_OK;
  for (size_t i = 0; i < a->tiling->n_tiles; i++) {
    mmbError err = place_tile(a, &a->tiling->slots[i].tile, a->preferred);
    if (err == MMB_OUT_OF_MEMORY) break;
    if (err != MMB_OK) return mmb__fail(err, func, "placing tile %zu: %s", i, mmb_error_string(err));
  }
  return MMB_OK;
}

/* Brings placed tiles home, with their data, before the grid changes. */
static mmbError unplace(const char *func, mmbArray *a) {
  for (size_t i = 0; a->n_placed && i < a->tiling->n_tiles; i++) {
    mmb__tile *t = &a->tiling->slots[i].tile;
    if (!t->placed) continue;
    mmbError err = mmb_tile_migrate(&t->pub, a->iface->space, MMB_READ, NULL);
    if (err != MMB_OK) return mmb__fail(err, func, "bringing tile %zu home: %s", i,
                                        mmb_error_string(err));
  }
  return MMB_OK;
}

/* What every new grid needs: nothing holding the old one but placed
   tiles, which go home first. */
static mmbError retile(const char *func, mmbArray *array) {
  size_t moved = array->n_migrated - array->n_placed;   /* by the caller */
  if (array->n_array_dups || array->n_tile_dups || moved || array->n_iterators ||
      array->n_home_pins)
    return mmb__fail(MMB_BUSY, func, "%zu array duplicates, %zu tile duplicates, %zu "
                     "migrated tiles, %zu iterators and %zu tiles acquired at home are live",
                     array->n_array_dups, array->n_tile_dups, moved, array->n_iterators,
                     array->n_home_pins);
  mmbError err = mmb__tiling_may_wait(func, array);   /* the old grid's release waits */
  return err == MMB_OK ? unplace(func, array) : err;
}

mmbError mmb_array_tile(mmbArray *array, const mmbDimensions *chunk_dims) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(array, MMB__KIND_ARRAY, __func__, "array");
  MMB__ARG(!chunk_dims, __func__, "chunk_dims is NULL");
  MMB__ARG(chunk_dims->size != array->rank, __func__, "chunk of rank %zu for an array of "
           "rank %zu", chunk_dims->size, array->rank);
  for (size_t k = 0; k < array->rank; k++)
    MMB__ARG(chunk_dims->d[k] == 0, __func__, "chunk extent %zu is 0", k);
  mmbError err = retile(__func__, array);
  if (err == MMB_OK) err = mmb__tiling_new(__func__, array, chunk_dims->d);
  return err == MMB_OK ? place(__func__, array) : err;
}

mmbError mmb_array_tile_irregular(mmbArray *array, const mmbDimensions *tiles,
                                  const size_t *bounds) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(array, MMB__KIND_ARRAY, __func__, "array");
  MMB__ARG(!tiles || !bounds, __func__, "NULL argument");
  MMB__ARG(tiles->size != array->rank, __func__, "tile counts of rank %zu for an array of "
           "rank %zu", tiles->size, array->rank);
  const size_t *b = bounds;
  for (size_t k = 0; k < array->rank; b += tiles->d[k] + 1, k++) {
    size_t n = tiles->d[k];
    MMB__ARG(n == 0 || n > array->dims[k], __func__, "%zu tiles along dimension %zu of extent "
             "%zu", n, k, array->dims[k]);
    MMB__ARG(b[0] != 0 || b[n] != array->dims[k], __func__, "the boundaries of dimension %zu "
             "run from %zu to %zu, not from 0 to its extent %zu", k, b[0], b[n], array->dims[k]);
    for (size_t i = 0; i < n; i++)
      MMB__ARG(b[i + 1] <= b[i], __func__, "boundary %zu of dimension %zu (%zu) is not past the "
               "one before (%zu): a tile holds at least one index", i + 1, k, b[i + 1], b[i]);
  }
  mmbError err = retile(__func__, array);
  if (err == MMB_OK) err = mmb__tiling_new_irregular(__func__, array, tiles->d, bounds);
  return err == MMB_OK ? place(__func__, array) : err;
}

/* ---- block-cyclic ------------------------------------------------------- */

static mmbError check_cyclic(const char *func, const mmbArray *a, const mmbBlockCyclic *bc) {
  MMB__ARG(!bc, func, "bc is NULL");
  MMB__ARG(bc->rank != a->rank, func, "a distribution of rank %zu for an array of rank %zu",
           bc->rank, a->rank);
  for (size_t k = 0; k < a->rank; k++) {
    MMB__ARG(!bc->block[k] || !bc->grid[k], func, "dimension %zu: blocks of %zu over %zu owners",
             k, bc->block[k], bc->grid[k]);
    MMB__ARG(bc->source[k] >= bc->grid[k], func, "dimension %zu: source %zu outside a grid of "
             "%zu", k, bc->source[k], bc->grid[k]);
  }
  return MMB_OK;
}

/* The new grid, by the distribution's blocks, keeps the distribution. */
static mmbError tile_by_blocks(const char *func, mmbArray *a, const mmbBlockCyclic *bc) {
  mmbError err = retile(func, a);
  if (err == MMB_OK) err = mmb__tiling_new(func, a, bc->block);
  if (err != MMB_OK) return err;
  a->tiling->cyclic = true;
  a->tiling->bc = *bc;
  return MMB_OK;
}

mmbError mmb_array_tile_block_cyclic(mmbArray *array, const mmbBlockCyclic *bc) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(array, MMB__KIND_ARRAY, __func__, "array");
  mmbError err = check_cyclic(__func__, array, bc);
  if (err != MMB_OK) return err;
  for (size_t k = 0; k < array->rank; k++) {
    size_t mine = 0;
    MMB__ARG(mmb_cyclic_numroc(bc->global[k], bc->block[k], bc->owner[k], bc->source[k],
                               bc->grid[k], &mine) != MMB_OK, __func__,
             "dimension %zu: owner %zu outside a grid of %zu", k, bc->owner[k], bc->grid[k]);
    MMB__ARG(mine != array->dims[k], __func__, "dimension %zu: the array's extent is %zu, where "
             "owner %zu holds %zu of %zu", k, array->dims[k], bc->owner[k], mine, bc->global[k]);
  }
  err = tile_by_blocks(__func__, array, bc);
  return err == MMB_OK ? place(__func__, array) : err;
}

mmbError mmb_array_distribute(mmbArray *array, const mmbBlockCyclic *bc,
                              mmbMemSpace *const *spaces) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(array, MMB__KIND_ARRAY, __func__, "array");
  mmbError err = check_cyclic(__func__, array, bc);
  if (err != MMB_OK) return err;
  MMB__ARG(!spaces, __func__, "spaces is NULL");
  size_t owners = 1;
  for (size_t k = 0; k < array->rank; k++) {
    MMB__ARG(bc->global[k] != array->dims[k], __func__, "dimension %zu: a distribution of %zu "
             "for an array of %zu", k, bc->global[k], array->dims[k]);
    MMB__ARG(mmb__mul_overflows(owners, bc->grid[k], &owners), __func__,
             "the owners overflow size_t");
  }
  for (size_t o = 0; o < owners; o++) MMB__HANDLE(spaces[o], MMB__KIND_SPACE, __func__, "spaces[]");
  if ((err = tile_by_blocks(__func__, array, bc)) != MMB_OK) return err;
  struct mmb__tiling *g = array->tiling;
  for (size_t i = 0; i < g->n_tiles; i++) {
    mmb__tile *t = &g->slots[i].tile;
    size_t o = 0;
    for (size_t k = 0; k < array->rank; k++) {   /* the owner of the block's first index */
      size_t p = 0;
      (void)mmb_cyclic_indxg2p(t->pub.lower[k], bc->block[k], bc->source[k], bc->grid[k], &p);
      o = o * bc->grid[k] + p;   /* (checked by check_cyclic: it cannot fail) */
    }
    if (spaces[o] == array->iface->space) continue;
    if ((err = place_tile(array, t, spaces[o])) != MMB_OK) {
      mmbError back = unplace(__func__, array);   /* nothing half dealt */
      return mmb__fail(err, __func__, "block %zu to %s: %s%s", i, spaces[o]->info.name,
                       mmb_error_string(err), back != MMB_OK ? " (and not all came home)" : "");
    }
  }
  return MMB_OK;
}

mmbError mmb_array_get_block_cyclic(const mmbArray *array, mmbBlockCyclic *out) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(array, MMB__KIND_ARRAY, __func__, "array");
  MMB__ARG(!out, __func__, "out is NULL");
  if (!array->tiling || !array->tiling->cyclic)
    return mmb__fail(MMB_INVALID_STATE, __func__, "the array is not tiled block-cyclically");
  *out = array->tiling->bc;
  return MMB_OK;
}
