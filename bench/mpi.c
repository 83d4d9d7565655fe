/* libmmb_mpi against MPI itself, on 2 ranks (make bench, or
     test/mpi/run.sh 2 build/bin/bench-mpi):
   - all-reduce (sum) of a contiguous float tile, from 4 KiB to the wide
     net's 43 MiB of gradients: mmb_mpi_tile_allreduce against
     MPI_Allreduce(MPI_IN_PLACE) on the same buffer;
   - a strided tile (rows of R bytes, every other row of its array, 4 MiB
     in all) there and back: through a derived datatype (MMB_MPI_PACK_NEVER)
     and packed by the copy engine (ALWAYS), against a hand-made
     MPI_Type_vector and against the same bytes contiguous (the wire's
     limit); AUTO's choice is the faster of mmb's two where the two differ
     by more than the noise.
   Each measure alternates its contenders rep by rep, in the same run, with
   the same flags; medians and 90th percentiles of the round trips. */
#include <mmb/mpi.h>

#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 31

static int rank;

static double pct(double *v, int n, double p) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[(int)(p * (n - 1) + 0.5)];
}

static void check(mmbError e, const char *what) {
  if (e == MMB_OK) return;
  fprintf(stderr, "bench-mpi: %s: %s\n", what, mmb_error_string(e));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static mmbArray *floats(mmbMemInterface *iface, size_t rows, size_t cols) {
  mmbLayout *l;
  mmbArray *a;
  check(mmb_layout_create_regular_nd(4, 2, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &l), "layout");
  check(mmb_layout_set_element_type(l, MMB_TYPE_FLOAT), "type");
  check(mmb_array_create(&(mmbDimensions){2, {rows, cols}}, l, iface, MMB_READ_WRITE, &a), "array");
  check(mmb_layout_destroy(l), "layout");
  float *x = mmb_array_ptr(a);
  for (size_t i = 0; i < rows * cols; i++) x[i] = (float)(i % 1000);
  return a;
}

static void set_packing(mmbMpiPacking p) {
  mmbMpiOptions o;
  check(mmb_mpi_get_options(&o), "options");
  o.packing = p;
  check(mmb_mpi_set_options(&o), "options");
}

/* ---- all-reduce ---------------------------------------------------------- */

static void allreduce(mmbMemInterface *iface) {
  static const size_t sizes[] = {4 << 10, 256 << 10, 4 << 20, 11083776 * 4};
  if (!rank)
    printf("all-reduce (sum) of a contiguous float tile, 2 ranks: mmb_mpi_tile_allreduce vs "
           "MPI_Allreduce in place\n  %10s %12s %12s %12s %12s %7s\n", "bytes", "MPI p50", "p90",
           "mmb p50", "p90", "ratio");
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s] / 4, cols = n < 1024 ? n : 1024;
    mmbArray *a = floats(iface, n / cols, cols);
    mmbArrayTile *t;
    check(mmb_tile_at(a, &(mmbIndex){2, {0, 0}}, &t), "tile");
    int reps = sizes[s] > (8 << 20) ? 11 : REPS;
    double mpi[REPS], mmb[REPS];
    for (int r = -1; r < reps; r++) {   /* r = -1: warm-up */
      for (int who = 0; who < 2; who++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        if (who == 0) MPI_Allreduce(MPI_IN_PLACE, t->ptr, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else check(mmb_mpi_tile_allreduce(t, MMB_MERGE_SUM, MPI_COMM_WORLD), "allreduce");
        double dt = now() - t0;
        if (r >= 0) (who ? mmb : mpi)[r] = dt;
        float *x = t->ptr;   /* keep the values finite */
        for (size_t i = 0; i < n; i += 4096) x[i] = 1;
      }
    }
    if (!rank) {
      double m50 = pct(mpi, reps, 0.5), m90 = pct(mpi, reps, 0.9);
      double b50 = pct(mmb, reps, 0.5), b90 = pct(mmb, reps, 0.9);
      printf("  %10zu %9.1f us %9.1f us %9.1f us %9.1f us %7.2f\n", sizes[s], m50 * 1e6,
             m90 * 1e6, b50 * 1e6, b90 * 1e6, b50 / m50);
    }
    check(mmb_array_destroy(a), "destroy");
  }
}

/* ---- strided tiles --------------------------------------------------------- */

/* Rank 0 sends, rank 1 receives and sends back: the round trip. */
static double round_trip(int who, mmbArrayTile *t, void *flat, int flat_bytes, MPI_Datatype vec) {
  if (who >= 2) set_packing(who == 2 ? MMB_MPI_PACK_NEVER : MMB_MPI_PACK_ALWAYS);   /* untimed */
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now();
  for (int leg = 0; leg < 2; leg++) {
    bool sending = (rank == 0) == (leg == 0);
    int peer = 1 - rank;
    if (who == 0) {   /* the same bytes, contiguous */
      if (sending) MPI_Send(flat, flat_bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      else MPI_Recv(flat, flat_bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (who == 1) {   /* a hand-made vector type */
      if (sending) MPI_Send(t->ptr, 1, vec, peer, 2, MPI_COMM_WORLD);
      else MPI_Recv(t->ptr, 1, vec, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {   /* mmb: 2 derived, 3 packed */
      if (sending) check(mmb_mpi_tile_send(t, peer, 3, MPI_COMM_WORLD), "send");
      else check(mmb_mpi_tile_recv(t, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "recv");
    }
  }
  return now() - t0;
}

static void strided(mmbMemInterface *iface) {
  static const size_t row_bytes[] = {64, 256, 1024, 4096, 16384, 65536};
  const size_t total = 4 << 20;
  mmbMpiOptions o;
  check(mmb_mpi_get_options(&o), "options");
  if (!rank)
    printf("\na strided tile there and back (rows of R bytes, every other row; 4 MiB), median "
           "round trip (p90)\n  %7s %16s %16s %16s %16s  %s\n", "R", "contiguous", "MPI vector",
           "mmb derived", "mmb packed", "AUTO picks (pack_below)");
  for (size_t s = 0; s < sizeof row_bytes / sizeof row_bytes[0]; s++) {
    size_t cols = row_bytes[s] / 4, rows = total / row_bytes[s];
    /* every other row: the left half of an array twice as wide */
    mmbArray *b = floats(iface, rows, 2 * cols);
    check(mmb_array_tile(b, &(mmbDimensions){2, {rows, cols}}), "tile");
    mmbArrayTile *t;
    check(mmb_tile_at(b, &(mmbIndex){2, {0, 0}}, &t), "tile");
    MPI_Datatype vec;
    MPI_Type_vector((int)rows, (int)cols, (int)(2 * cols), MPI_FLOAT, &vec);
    MPI_Type_commit(&vec);
    char *flat = malloc(total);
    memset(flat, 1, total);
    double v[4][REPS];
    for (int r = -1; r < REPS; r++)
      for (int who = 0; who < 4; who++) {
        double dt = round_trip(who, t, flat, (int)total, vec);
        if (r >= 0) v[who][r] = dt;
      }
    if (!rank) {
      double p50[4], p90[4];
      for (int w = 0; w < 4; w++) {
        p50[w] = pct(v[w], REPS, 0.5);
        p90[w] = pct(v[w], REPS, 0.9);
      }
      printf("  %7zu", row_bytes[s]);
      for (int w = 0; w < 4; w++) printf(" %6.0f (%5.0f) us", p50[w] * 1e6, p90[w] * 1e6);
      printf("  %s; faster: %s\n", row_bytes[s] < o.pack_below ? "packed" : "derived",
             p50[3] < p50[2] ? "packed" : "derived");
    }
    MPI_Type_free(&vec);
    free(flat);
    check(mmb_array_destroy(b), "destroy");
  }
  check(mmb_mpi_set_options(&o), "options");
}

int main(int argc, char **argv) {
  int provided, ranks;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks != 2) {
    if (!rank) fprintf(stderr, "bench-mpi: run on 2 ranks (test/mpi/run.sh 2 %s)\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  check(mmb_init(NULL), "mmb_init");
  mmbMemSpace *dram;
  mmbMemInterface *iface;
  check(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram), "space");
  check(mmb_request_interface(dram, NULL, &iface), "interface");
  allreduce(iface);
  strided(iface);
  check(mmb_interface_destroy(iface), "interface");
  check(mmb_finalize(), "mmb_finalize");
  MPI_Finalize();
  return 0;
}
