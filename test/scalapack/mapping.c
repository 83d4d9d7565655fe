/* mmb's block-cyclic mapping (mmb/cyclic.h) against ScaLAPACK's own TOOLS
   routines (NUMROC, INDXG2P, INDXG2L, INDXL2G, 1-based Fortran) on 2000
   random cases of extent, block, owners and source, every owner and a
   sample of indices each; the test is its exit status. Built and run by
   `make test` where ScaLAPACK is installed (scripts/install-deps.sh test). */
#include <mmb/cyclic.h>

#include <stdint.h>
#include <stdio.h>

int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc,
            const int *nprocs);
int indxg2p_(const int *indxglob, const int *nb, const int *iproc, const int *isrcproc,
             const int *nprocs);
int indxg2l_(const int *indxglob, const int *nb, const int *iproc, const int *isrcproc,
             const int *nprocs);
int indxl2g_(const int *indxloc, const int *nb, const int *iproc, const int *isrcproc,
             const int *nprocs);

static uint64_t next(uint64_t *s) {   /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int main(void) {
  uint64_t seed = 20261126;
  long checked = 0, failed = 0;
  for (int c = 0; c < 2000 && failed < 10; c++) {
    int n = (int)(next(&seed) % 100000), nb = 1 + (int)(next(&seed) % (c % 3 ? 64 : 5000));
    int np = 1 + (int)(next(&seed) % 97), src = (int)(next(&seed) % (uint64_t)np);
    for (int p = 0; p < np; p++) {
      size_t mine = 0;
      if (mmb_cyclic_numroc((size_t)n, (size_t)nb, (size_t)p, (size_t)src, (size_t)np, &mine) !=
              MMB_OK || (int)mine != numroc_(&n, &nb, &p, &src, &np)) {
        fprintf(stderr, "NUMROC(%d, %d, %d, %d, %d): mmb %zu, ScaLAPACK %d\n", n, nb, p, src, np,
                mine, numroc_(&n, &nb, &p, &src, &np));
        failed++;
      }
      checked++;
    }
    for (int s = 0; s < 20 && n > 0; s++) {
      int g = (int)(next(&seed) % (uint64_t)n), g1 = g + 1, dummy = 0;
      size_t p = 0, l = 0, back = 0;
      int sp = indxg2p_(&g1, &nb, &dummy, &src, &np);
      int sl = indxg2l_(&g1, &nb, &dummy, &src, &np) - 1;
      int l1 = sl + 1, sg = indxl2g_(&l1, &nb, &sp, &src, &np) - 1;
      if (mmb_cyclic_indxg2p((size_t)g, (size_t)nb, (size_t)src, (size_t)np, &p) != MMB_OK ||
          mmb_cyclic_indxg2l((size_t)g, (size_t)nb, (size_t)np, &l) != MMB_OK ||
          mmb_cyclic_indxl2g(l, (size_t)nb, p, (size_t)src, (size_t)np, &back) != MMB_OK ||
          (int)p != sp || (int)l != sl || (int)back != sg) {
        fprintf(stderr, "g %d (nb %d, np %d, src %d): mmb owner %zu local %zu back %zu, "
                "ScaLAPACK %d %d %d\n", g, nb, np, src, p, l, back, sp, sl, sg);
        failed++;
      }
      checked += 3;
    }
  }
  printf("scalapack-mapping: %ld values against ScaLAPACK's NUMROC, INDXG2P, INDXG2L, INDXL2G: "
         "%s\n", checked, failed ? "FAILED" : "all equal");
  return failed != 0;
}
