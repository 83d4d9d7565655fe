/* build/bin/pgemm: C = A B on an existing distributed engine. A, B and C
   are n x n block-cyclic mmb arrays over a P x Q grid of MPI ranks (each
   rank holds its local part: mmb_array_tile_block_cyclic), multiplied by
   ScaLAPACK's PDGEMM on mmb's storage in place (mmb_mpi_array_descriptor),
   and checked on a sample of C against a product computed from the
   matrices' formulas.

     mpirun -np 4 build/bin/pgemm --n 4096 --block 64 --json
     mpirun -np 2 build/bin/pgemm --n 2048 --capacity storage   # local parts on disk

   Options: --n N (default 1024) --block B (64) --capacity dram|storage
   --samples S (checked entries of C per rank, default 64) --json.
   Exit status: 0 correct; 1 a failure, or an error past the bound;
   2 bad arguments. */
#include <mmb/mmb.h>
#include <mmb/mpi.h>

#include "blas.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* BLACS and ScaLAPACK (libscalapack-openmpi) */
void Cblacs_get(int context, int what, int *value);
void Cblacs_gridinit(int *context, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int context);
void Cblacs_exit(int keep_mpi);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);
void pdgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
             const double *alpha, const double *a, const int *ia, const int *ja, const int *desca,
             const double *b, const int *ib, const int *jb, const int *descb, const double *beta,
             double *c, const int *ic, const int *jc, const int *descc);

/* The matrices, by global index: small integers over small integers, so a
   product's terms are exact and its error is the sum's rounding alone. */
static double a_at(size_t i, size_t j) { return (double)((i * 7 + j * 3) % 17) / 8.0 - 1.0; }
static double b_at(size_t i, size_t j) { return (double)((i * 5 + j * 11) % 13) / 6.0 - 1.0; }

typedef struct cli {
  size_t n, block, samples;
  bool storage, json;
} cli;

static int parse(int argc, char **argv, cli *c, int rank) {
  *c = (cli){.n = 1024, .block = 64, .samples = 64};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (!strcmp(a, "--json")) {
      c->json = true;
      continue;
    }
    if (!v) goto bad;
    i++;
    if (!strcmp(a, "--capacity") && (!strcmp(v, "dram") || !strcmp(v, "storage"))) {
      c->storage = !strcmp(v, "storage");
      continue;
    }
    unsigned long long x = strtoull(v, &end, 10);
    if (*v == '-' || !end || *end || x == 0 || x > (1u << 20)) goto bad;
    if (!strcmp(a, "--n")) c->n = x;
    else if (!strcmp(a, "--block")) c->block = x;
    else if (!strcmp(a, "--samples")) c->samples = x;
    else goto bad;
    continue;
  bad:
    if (rank == 0)
      fprintf(stderr, "pgemm: bad option %s%s%s\nusage: pgemm [--n N] [--block B] "
              "[--capacity dram|storage] [--samples S] [--json]\n", a, v ? " " : "", v ? v : "");
    return 2;
  }
  return 0;
}

/* The most square P x Q grid of `ranks` (P <= Q). */
static void grid_of(int ranks, int *p, int *q) {
  *p = 1;
  for (int d = 1; d * d <= ranks; d++)
    if (ranks % d == 0) *p = d;
  *q = ranks / *p;
}

static int fail(const char *what, mmbError e) {
  fprintf(stderr, "pgemm: %s: %s\n", what, mmb_error_string(e));
  return 1;
}

/* One matrix on this rank: its local part, and ScaLAPACK's descriptor of
   the whole. A rank that the distribution leaves without a block along a
   dimension (n under block x grid) holds no part: no array is made for it
   (mmb_array_tile_block_cyclic's contract), and descinit gives its
   descriptor, with the leading dimension ScaLAPACK asks: its rows, or 1. */
typedef struct matrix {
  mmbArray *array;   /* NULL: the empty local part */
  double *x, none;   /* x: the local part, or &none for PDGEMM to ignore */
  size_t rows, cols;
  int desc[9];
} matrix;

/* This rank's part of the n x n distribution in column-major order, tiled
   by its blocks, filled from `at` (NULL: zeros). */
static mmbError local_part(const mmbBlockCyclic *bc, mmbMemInterface *iface, int ctxt,
                           double (*at)(size_t, size_t), matrix *m) {
  mmbLayout *l;
  *m = (matrix){0};
  m->x = &m->none;
  mmbError e = mmb_cyclic_numroc(bc->global[0], bc->block[0], bc->owner[0], 0, bc->grid[0],
                                 &m->rows);
  if (e == MMB_OK) e = mmb_cyclic_numroc(bc->global[1], bc->block[1], bc->owner[1], 0,
                                         bc->grid[1], &m->cols);
  if (e != MMB_OK) return e;
  if (!m->rows || !m->cols) {
    int n = (int)bc->global[0], nb = (int)bc->block[0], zero = 0, info = 0;
    int lld = m->rows ? (int)m->rows : 1;
    descinit_(m->desc, &n, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
    return info == 0 ? MMB_OK : MMB_INVALID_ARG;
  }
  if ((e = mmb_layout_create_regular_nd(sizeof(double), 2, MMB_COLMAJOR, (mmbLayoutPadding){0},
                                        &l)) != MMB_OK)
    return e;
  e = mmb_layout_set_element_type(l, MMB_TYPE_DOUBLE);
  if (e == MMB_OK) e = mmb_array_create(&(mmbDimensions){2, {m->rows, m->cols}}, l, iface,
                                        MMB_READ_WRITE, &m->array);
  mmbError d = mmb_layout_destroy(l);
  if (e == MMB_OK) e = d;
  if (e == MMB_OK) e = mmb_array_tile_block_cyclic(m->array, bc);
  if (e == MMB_OK) e = mmb_mpi_array_descriptor(m->array, ctxt, m->desc);
  if (e != MMB_OK) return e;
  m->x = mmb_array_ptr(m->array);
  for (size_t j = 0; j < m->cols; j++)
    for (size_t i = 0; i < m->rows; i++) {
      size_t gi = 0, gj = 0;
      (void)mmb_cyclic_indxl2g(i, bc->block[0], bc->owner[0], 0, bc->grid[0], &gi);
      (void)mmb_cyclic_indxl2g(j, bc->block[1], bc->owner[1], 0, bc->grid[1], &gj);
      m->x[j * m->rows + i] = at ? at(gi, gj) : 0.0;
    }
  return MMB_OK;
}

int main(int argc, char **argv) {
  cnn_blas_start(argc, argv);   /* may start again with a better OpenBLAS kernel */
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  cli c;
  int status = parse(argc, argv, &c, rank);
  int p, q, myrow, mycol, ctxt;
  grid_of(ranks, &p, &q);
  if (status || mmb_init(NULL) != MMB_OK) {
    MPI_Finalize();
    return status ? status : 1;
  }
  cnn_blas blas = {0};   /* the kernel PDGEMM's BLAS runs, checked on rank 0 */
  if (rank == 0 && !cnn_blas_measure(&blas)) {
    fprintf(stderr, "pgemm: %s\n", blas.note);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", p, q);
  Cblacs_gridinfo(ctxt, &p, &q, &myrow, &mycol);
  mmbBlockCyclic bc = {.rank = 2, .global = {c.n, c.n}, .block = {c.block, c.block},
                       .grid = {(size_t)p, (size_t)q}, .owner = {(size_t)myrow, (size_t)mycol}};
  mmbMemSpace *space;
  mmbMemInterface *iface = NULL;
  matrix a = {0}, b = {0}, cm = {0};
  mmbError e = mmb_request_space(c.storage ? MMB_STORAGE : MMB_DRAM, MMB_CPU, NULL, &space);
  if (e == MMB_OK) e = mmb_request_interface(space, NULL, &iface);
  if (e == MMB_OK) e = local_part(&bc, iface, ctxt, a_at, &a);
  if (e == MMB_OK) e = local_part(&bc, iface, ctxt, b_at, &b);
  if (e == MMB_OK) e = local_part(&bc, iface, ctxt, NULL, &cm);
  if (e != MMB_OK) {
    status = fail("the local parts", e);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int n = (int)c.n, one = 1;
  double alpha = 1.0, beta = 0.0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  pdgemm_("N", "N", &n, &n, &n, &alpha, a.x, &one, &one, a.desc, b.x, &one, &one, b.desc, &beta,
          cm.x, &one, &one, cm.desc);
  MPI_Barrier(MPI_COMM_WORLD);
  double seconds = MPI_Wtime() - t0;
  /* a sample of this rank's C against the formulas, relative to sum |a||b| */
  double worst = 0.0;
  unsigned long long s = 0x9e3779b97f4a7c15ull * (unsigned long long)(rank + 1);
  for (size_t k = 0; !status && cm.array && k < c.samples; k++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    size_t i = s % cm.rows, j = (s >> 20) % cm.cols, gi = 0, gj = 0;
    (void)mmb_cyclic_indxl2g(i, c.block, (size_t)myrow, 0, (size_t)p, &gi);
    (void)mmb_cyclic_indxl2g(j, c.block, (size_t)mycol, 0, (size_t)q, &gj);
    double ref = 0.0, mag = 0.0;
    for (size_t t = 0; t < c.n; t++) {
      ref += a_at(gi, t) * b_at(t, gj);
      mag += fabs(a_at(gi, t) * b_at(t, gj));
    }
    double err = fabs(cm.x[j * cm.rows + i] - ref) / (mag > 0 ? mag : 1.0);
    if (err > worst) worst = err;
  }
  double max_err = worst;
  MPI_Allreduce(&worst, &max_err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  double bound = 4.0 * (double)c.n * 0x1.0p-53;   /* n terms' rounding, with room */
  double gflops = 2.0 * (double)c.n * (double)c.n * (double)c.n / seconds * 1e-9;
  if (rank == 0) {
    printf("pgemm: OpenBLAS kernel %s (%s)\n", blas.kernel, blas.note);
    printf("pgemm: C = A B, n %zu in blocks of %zu over %d x %d ranks (%s): %.3f s, %.2f GFLOP/s, "
           "max relative error %.2e on %zu samples a rank (bound %.1e)\n", c.n, c.block, p, q,
           c.storage ? "local parts on the storage tier" : "local parts in DRAM", seconds, gflops,
           max_err, c.samples, bound);
    if (c.json)
      printf("{\"ranks\": %d, \"grid\": [%d, %d], \"n\": %zu, \"block\": %zu, \"capacity\": \"%s\", "
             "\"seconds\": %.6f, \"gflops\": %.6g, \"max_rel_error\": %.3e, \"blas_kernel\": \"%s\"}\n",
             ranks, p, q, c.n, c.block, c.storage ? "storage" : "dram", seconds, gflops, max_err,
             blas.kernel);
  }
  if (!status && !(max_err <= bound)) status = 1;
  mmbArray *arrays[3] = {a.array, b.array, cm.array};
  for (int i = 0; i < 3; i++)
    if (arrays[i] && (e = mmb_array_destroy(arrays[i])) != MMB_OK) status = fail("destroy", e);
  if (iface && (e = mmb_interface_destroy(iface)) != MMB_OK) status = fail("the interface", e);
  Cblacs_gridexit(ctxt);
  Cblacs_exit(1);   /* BLACS lets go of what it holds; MPI stays ours to finalize */
  if ((e = mmb_finalize()) != MMB_OK) status = fail("mmb_finalize", e);
  MPI_Finalize();
  return status;
}
