/* A program outside the repository, built against an installed mmb with
     mpicc mpi_user.c $(pkg-config --cflags --libs mmb-mpi)
   and run on 2 ranks: each rank's 1000 x 300 array of doubles, tiled by
   blocks of 100 rows, becomes the sum over ranks; then rank 0 sends one
   tile to rank 1 on a queue. As docs/mpi.md shows it. */
#include <mmb/mpi.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                 \
  do {                                                                              \
    mmbError e_ = (call);                                                           \
    if (e_ != MMB_OK) {                                                             \
      fprintf(stderr, "mpi_user: %s: %s\n", #call, mmb_error_string(e_));           \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                 \
    }                                                                               \
  } while (0)

int main(int argc, char **argv) {
  int provided, rank, ranks;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  CHECK(mmb_init(NULL));

  mmbMemSpace *dram;
  mmbMemInterface *iface;
  mmbLayout *layout;
  mmbArray *a;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  CHECK(mmb_request_interface(dram, NULL, &iface));
  CHECK(mmb_layout_create_regular_nd(sizeof(double), 2, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &layout));
  CHECK(mmb_layout_set_element_type(layout, MMB_TYPE_DOUBLE));   /* reductions need it */
  mmbDimensions dims = {2, {1000, 300}};
  CHECK(mmb_array_create(&dims, layout, iface, MMB_READ_WRITE, &a));
  double *x = mmb_array_ptr(a);
  for (size_t i = 0; i < 1000 * 300; i++) x[i] = rank + 1;
  CHECK(mmb_array_tile(a, &(mmbDimensions){2, {100, 300}}));

  CHECK(mmb_mpi_array_allreduce(a, MMB_MERGE_SUM, MPI_COMM_WORLD));
  double want = ranks * (ranks + 1) / 2.0;
  for (size_t i = 0; i < 1000 * 300; i++)
    if (x[i] != want) {
      fprintf(stderr, "mpi_user: rank %d: element %zu is %g, not %g\n", rank, i, x[i], want);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }

  mmbQueue *q;
  mmbRequest req = {0};
  mmbArrayTile *t;
  CHECK(mmb_queue_create(NULL, &q));
  CHECK(mmb_tile_at(a, &(mmbIndex){2, {3, 0}}, &t));
  if (rank == 0) {
    for (size_t i = 0; i < 100 * 300; i++) ((double *)t->ptr)[i] = -1;
    CHECK(mmb_mpi_tile_send_async(t, 1, 7, MPI_COMM_WORLD, q, &req));
  } else if (rank == 1) {
    CHECK(mmb_mpi_tile_recv_async(t, 0, 7, MPI_COMM_WORLD, q, &req));
  }
  CHECK(mmb_wait(&req));
  if (rank == 1 && (MMB_TILE_AT_2D(t, double, 350, 7) != -1 || x[0] != want)) {
    fprintf(stderr, "mpi_user: rank 1: the tile did not arrive\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  CHECK(mmb_queue_destroy(NULL, &q));
  CHECK(mmb_array_destroy(a));
  CHECK(mmb_layout_destroy(layout));
  CHECK(mmb_interface_destroy(iface));
  CHECK(mmb_finalize());
  if (rank == 0) printf("mpi_user: ok on %d ranks\n", ranks);
  MPI_Finalize();
  return 0;
}
