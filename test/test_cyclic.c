/* Block-cyclic distributions (mmb/cyclic.h): ScaLAPACK's mapping on a
   case worked by hand and on 1000 random ones against a reference model
   (every global index has one owner and one local index there, the
   owners' counts are NUMROC's, INDXL2G undoes INDXG2L); bad input; a
   local part tiled by its blocks; an array dealt over spaces. (Against
   ScaLAPACK's own routines: test/scalapack/mapping.c.) */
#include "arrays.h"

#include <stdlib.h>

static size_t numroc(size_t n, size_t nb, size_t p, size_t src, size_t np) {
  size_t out = 0;
  OK(mmb_cyclic_numroc(n, nb, p, src, np, &out));
  return out;
}

MMB_TEST(cyclic, the_mapping_by_hand) {
  /* 10 indices in blocks of 3 over 2 owners from 0: [0,3) 0, [3,6) 1, [6,9) 0, [9] 1 */
  cr_assert(numroc(10, 3, 0, 0, 2) == 6 && numroc(10, 3, 1, 0, 2) == 4);
  cr_assert(numroc(10, 3, 1, 1, 2) == 6, "from owner 1, it has the first block");
  size_t p, l, g;
  OK(mmb_cyclic_indxg2p(4, 3, 0, 2, &p));
  OK(mmb_cyclic_indxg2l(4, 3, 2, &l));
  cr_assert(p == 1 && l == 1);
  OK(mmb_cyclic_indxg2l(9, 3, 2, &l));
  OK(mmb_cyclic_indxl2g(3, 3, 1, 0, 2, &g));
  cr_assert(l == 3 && g == 9);
  FAILS(mmb_cyclic_numroc(10, 0, 0, 0, 2, &l), MMB_INVALID_ARG);
  FAILS(mmb_cyclic_numroc(10, 3, 0, 0, 0, &l), MMB_INVALID_ARG);
  FAILS(mmb_cyclic_numroc(10, 3, 2, 0, 2, &l), MMB_INVALID_ARG);
  FAILS(mmb_cyclic_numroc(10, 3, 0, 2, 2, NULL), MMB_INVALID_ARG);
  FAILS(mmb_cyclic_indxg2p(4, 3, 2, 2, &p), MMB_INVALID_ARG);
  FAILS(mmb_cyclic_indxg2l(4, 3, 0, &l), MMB_INVALID_ARG);
  FAILS(mmb_cyclic_indxl2g(3, 0, 1, 0, 2, &g), MMB_INVALID_ARG);
}

MMB_TEST(cyclic, the_mapping_against_a_model) {
  uint64_t seed = 20261126;
  for (int c = 0; c < 1000; c++) {
    size_t n = test_rand(&seed) % 500, nb = 1 + test_rand(&seed) % 40,
           np = 1 + test_rand(&seed) % 64, src = test_rand(&seed) % np;
    size_t count[64] = {0};
    for (size_t g = 0; g < n; g++) {
      size_t p, l, back;
      OK(mmb_cyclic_indxg2p(g, nb, src, np, &p));
      OK(mmb_cyclic_indxg2l(g, nb, np, &l));
      cr_assert_eq(p, (src + g / nb) % np, "case %d: the owner deals blocks in turn", c);
      cr_assert_eq(l, count[p], "case %d: g %zu is the next of its owner's", c, g);
      count[p]++;
      OK(mmb_cyclic_indxl2g(l, nb, p, src, np, &back));
      cr_assert_eq(back, g, "case %d: INDXL2G undoes INDXG2L", c);
    }
    for (size_t p = 0; p < np; p++)
      cr_assert_eq(numroc(n, nb, p, src, np), count[p], "case %d (n %zu nb %zu np %zu src %zu), "
                   "owner %zu", c, n, nb, np, src, p);
  }
}

static mmbBlockCyclic dist2(size_t m, size_t n, size_t mb, size_t nb, size_t pr, size_t pc) {
  return (mmbBlockCyclic){.rank = 2, .global = {m, n}, .block = {mb, nb}, .grid = {pr, pc}};
}

MMB_TEST(cyclic, a_local_part_is_tiled_by_its_blocks) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbBlockCyclic bc = dist2(10, 7, 3, 2, 2, 2), got;
  bc.owner[0] = 1;   /* rows [3,6) and [9]: 4; columns [0,2) and [4,6): 4 */
  mmbArray *a = test_array(iface, &(mmbDimensions){2, {4, 4}}, MMB_COLMAJOR, 0);
  FAILS(mmb_array_get_block_cyclic(a, &got), MMB_INVALID_STATE);
  OK(mmb_array_tile_block_cyclic(a, &bc));
  mmbDimensions grid;
  OK(mmb_array_tile_grid(a, &grid));
  cr_assert(grid.d[0] == 2 && grid.d[1] == 2, "blocks of 3 and 1 rows, 2 and 2 columns");
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 1}}, &t));
  cr_assert(t->lower[0] == 3 && t->dim[0] == 1 && t->lower[1] == 2 && t->dim[1] == 2);
  OK(mmb_array_get_block_cyclic(a, &got));
  cr_assert(got.global[0] == 10 && got.block[1] == 2 && got.owner[0] == 1);
  FAILS(mmb_array_get_block_cyclic(a, NULL), MMB_INVALID_ARG);
  mmbBlockCyclic bad = bc;
  bad.owner[1] = 1;   /* owner (1, 1) holds 4 x 3 */
  FAILS(mmb_array_tile_block_cyclic(a, &bad), MMB_INVALID_ARG);
  bad = bc, bad.owner[0] = 2;
  FAILS(mmb_array_tile_block_cyclic(a, &bad), MMB_INVALID_ARG);
  bad = bc, bad.block[1] = 0;
  FAILS(mmb_array_tile_block_cyclic(a, &bad), MMB_INVALID_ARG);
  bad = bc, bad.source[0] = 2;
  FAILS(mmb_array_tile_block_cyclic(a, &bad), MMB_INVALID_ARG);
  bad = bc, bad.rank = 1;
  FAILS(mmb_array_tile_block_cyclic(a, &bad), MMB_INVALID_ARG);
  FAILS(mmb_array_tile_block_cyclic(a, NULL), MMB_INVALID_ARG);
  OK(mmb_array_get_block_cyclic(a, &got));   /* refusals changed nothing */
  OK(mmb_array_tile(a, &(mmbDimensions){2, {2, 2}}));
  FAILS(mmb_array_get_block_cyclic(a, &got), MMB_INVALID_STATE);   /* re-tiled: forgotten */
  OK(mmb_array_destroy(a));
}

/* 12 x 12 doubles in blocks of 4 dealt over a 2 x 2 grid of spaces (the
   array's own DRAM space among them): each block in its owner's space with
   its values; re-tiling brings them home, values and all. */
MMB_TEST(cyclic, an_array_is_dealt_over_spaces) {
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbMemSpace *dram, *s[4];
  OK(mmb_interface_get_space(iface, &dram));
  s[0] = dram;
  for (int i = 1; i < 4; i++) s[i] = limited_space(1 << 20);
  mmbArray *a = test_array(iface, &(mmbDimensions){2, {12, 12}}, MMB_ROWMAJOR, 0);
  fill_array(a, 1);
  mmbBlockCyclic bc = dist2(12, 12, 4, 4, 2, 2);
  bc.source[1] = 1;
  FAILS(mmb_array_distribute(a, &bc, NULL), MMB_INVALID_ARG);
  mmbMemSpace *with_null[4] = {s[0], s[1], NULL, s[3]};
  FAILS(mmb_array_distribute(a, &bc, with_null), MMB_INVALID_ARG);
  mmbBlockCyclic wrong = bc;
  wrong.global[0] = 11;
  FAILS(mmb_array_distribute(a, &wrong, s), MMB_INVALID_ARG);
  OK(mmb_array_distribute(a, &bc, s));
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 3; j++) {
      mmbArrayTile *t;
      OK(mmb_tile_at(a, &(mmbIndex){2, {i, j}}, &t));
      size_t owner = (i % 2) * 2 + (1 + j) % 2;
      cr_assert_eq(t->space, s[owner], "block (%zu, %zu)", i, j);
      size_t idx[2] = {t->lower[0], t->lower[1]}, lo[2] = {t->lower[0], t->lower[1]};
      do cr_assert_eq(*(double *)tile_elem(t, idx), value_at(idx, 2, 1));
      while (index_next(idx, lo, t->upper, 2));
      *(double *)t->ptr = -1.0;   /* written where it lives */
    }
  mmbBlockCyclic got;
  OK(mmb_array_get_block_cyclic(a, &got));
  cr_assert_eq(got.source[1], 1);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {12, 12}}));   /* home again */
  for (int i = 1; i < 4; i++) {
    mmbStats st;
    OK(mmb_space_get_stats(s[i], &st));
    cr_assert_eq(st.used_current, 0, "space %d still holds %zu bytes", i, st.used_current);
  }
  cr_assert_eq(*array_at(a, (size_t[]){4, 8}), -1.0, "a block's write came home");
  cr_assert_eq(*array_at(a, (size_t[]){4, 9}), value_at((size_t[]){4, 9}, 2, 1));
  OK(mmb_array_destroy(a));
  for (int i = 1; i < 4; i++) OK(mmb_space_release(s[i]));
}
