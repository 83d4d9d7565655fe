/* libmmb_mpi on 2 ranks (test/mpi/run.sh 2 build/test/mpi-tests; make test
   runs it when MPI is there): send, receive, broadcast and all-reduce of
   tiles and arrays, contiguous, strided (derived datatypes and packed) and
   in memory the host cannot reach (a user provider: the staged path a GPU
   without CUDA-aware MPI takes), blocking and on queues; shapes, element
   types, roots and reductions that differ across ranks, a rank that fails,
   a peer that never comes, and bad arguments: a clear error on every rank,
   never a hang. A failed check aborts every rank (MPI_Abort), and an alarm
   ends a run that hangs. */
#include <mmb/mpi.h>

#include "../fake_device.h"   /* memory the host may not touch: a user provider */

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int rank, size;
static const char *current = "setup";

#define CHECK(cond, ...)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "mpi-tests: rank %d: %s: %s:%d: %s: ", rank, current, __FILE__,      \
              __LINE__, #cond);                                                            \
      fprintf(stderr, __VA_ARGS__);                                                        \
      fputc('\n', stderr);                                                                 \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                        \
    }                                                                                      \
  } while (0)
#define EXPECT(call, want)                                                                 \
  do {                                                                                     \
    mmbError e_ = (call), w_ = (want);                                                     \
    CHECK(e_ == w_, "%s, expected %s", mmb_error_name(e_), mmb_error_name(w_));            \
  } while (0)
#define OK(call) EXPECT(call, MMB_OK)

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "mpi-tests: a test hangs (alarm)\n";
  if (write(2, msg, sizeof msg - 1)) {}
  _exit(3);
}

/* The last message mmb's logger passed to the code's callback. */
static char kept[512];
static mmbLogLevel kept_level;
static void keep_message(mmbLogLevel level, const char *message, void *user_data) {
  (void)user_data;
  kept_level = level;
  snprintf(kept, sizeof kept, "%s", message);
}

static void begin(const char *name) {
  current = name;
  MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- arrays with known values -------------------------------------------- */

static mmbMemInterface *sys;

/* The value at (i, j) on a rank (salt): integers, exact in every type. */
static double value(size_t i, size_t j, int salt) { return (double)(i * 100 + j + 7 * salt); }

static size_t type_size(mmbElementType t) {
  size_t n;
  OK(mmb_element_type_size(t, &n));
  return n;
}

static double get(const mmbArrayTile *t, mmbElementType type, size_t i, size_t j) {
  const char *p = (const char *)t->ptr +
                  ((i - t->lower[0]) * t->stride[0] + (j - t->lower[1]) * t->stride[1]) *
                      t->element_size;
  switch (type) {
    case MMB_TYPE_FLOAT: return *(const float *)p;
    case MMB_TYPE_INT32: return *(const int32_t *)p;
    case MMB_TYPE_INT64: return (double)*(const int64_t *)p;
    default: return *(const double *)p;
  }
}

static void put(const mmbArrayTile *t, mmbElementType type, size_t i, size_t j, double v) {
  char *p = (char *)t->ptr +
            ((i - t->lower[0]) * t->stride[0] + (j - t->lower[1]) * t->stride[1]) * t->element_size;
  switch (type) {
    case MMB_TYPE_FLOAT: *(float *)p = (float)v; break;
    case MMB_TYPE_INT32: *(int32_t *)p = (int32_t)v; break;
    case MMB_TYPE_INT64: *(int64_t *)p = (int64_t)v; break;
    default: *(double *)p = v; break;
  }
}

typedef struct spec {
  size_t rows, cols, tile_rows, tile_cols;
  mmbElementType type;
  mmbLayoutOrder order;
  size_t row_alignment;
  mmbAccessType access;
} spec;

static void *wrapped[8];   /* read-only arrays' data, freed at the end */
static int n_wrapped;

/* An array of s, filled with value(., ., salt) (salt < 0: zeros), tiled. */
static mmbArray *make(const spec *s, mmbMemInterface *iface, int salt) {
  mmbLayout *l;
  mmbArray *a, *host;
  OK(mmb_layout_create_regular_nd(type_size(s->type), 2, s->order,
                                  (mmbLayoutPadding){.row_alignment = s->row_alignment}, &l));
  OK(mmb_layout_set_element_type(l, s->type));
  mmbDimensions d = {2, {s->rows, s->cols}};
  OK(mmb_array_create(&d, l, sys, MMB_READ_WRITE, &host));
  mmbArrayTile *whole;
  OK(mmb_tile_at(host, &(mmbIndex){2, {0, 0}}, &whole));
  for (size_t i = 0; i < s->rows; i++)
    for (size_t j = 0; j < s->cols; j++) put(whole, s->type, i, j, salt < 0 ? 0 : value(i, j, salt));
  if (iface == sys && s->access == MMB_READ_WRITE) {
    a = host;
  } else if (!(s->access & MMB_WRITE)) {   /* read-only: wraps a copy of the data */
    size_t bytes;
    OK(mmb_array_get_bytes(host, &bytes));
    CHECK(n_wrapped < 8, "too many read-only arrays");
    wrapped[n_wrapped] = malloc(bytes);
    memcpy(wrapped[n_wrapped], mmb_array_ptr(host), bytes);
    OK(mmb_array_create_wrapped(wrapped[n_wrapped++], &d, l, sys, s->access, &a));
    OK(mmb_array_destroy(host));
  } else {
    OK(mmb_array_create(&d, l, iface, s->access, &a));
    OK(mmb_array_copy(a, host));
    OK(mmb_array_destroy(host));
  }
  OK(mmb_layout_destroy(l));
  OK(mmb_array_tile(a, &(mmbDimensions){2, {s->tile_rows, s->tile_cols}}));
  return a;
}

static mmbArrayTile *tile(mmbArray *a, size_t i, size_t j) {
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){2, {i, j}}, &t));
  return t;
}

/* Every element of tile t (any memory: read through a host copy) is
   want(i, j). */
static void expect_tile(mmbArrayTile *t, mmbElementType type, double (*want)(size_t, size_t, int),
                        int salt) {
  mmbArrayTile *h = t;
  mmbTileState st;
  OK(mmb_tile_get_state(t, &st));
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  if (!st.host_accessible) OK(mmb_tile_duplicate(t, dram, MMB_READ, NULL, &h));
  for (size_t i = t->lower[0]; i < t->upper[0]; i++)
    for (size_t j = t->lower[1]; j < t->upper[1]; j++)
      CHECK(get(h, type, i, j) == want(i, j, salt), "(%zu, %zu): %g, expected %g", i, j,
            get(h, type, i, j), want(i, j, salt));
  if (h != t) OK(mmb_tile_discard(h));
}

static void expect_array(mmbArray *a, mmbElementType type, double (*want)(size_t, size_t, int),
                         int salt) {
  mmbDimensions g;
  OK(mmb_array_tile_grid(a, &g));
  for (size_t i = 0; i < g.d[0]; i++)
    for (size_t j = 0; j < g.d[1]; j++) expect_tile(tile(a, i, j), type, want, salt);
}

static double zero(size_t i, size_t j, int salt) { return 0; }

static void set_packing(mmbMpiPacking p, double timeout) {
  mmbMpiOptions o;
  OK(mmb_mpi_get_options(&o));
  o.packing = p;
  o.timeout = timeout;
  OK(mmb_mpi_set_options(&o));
}

/* ---- the tests ------------------------------------------------------------ */

static const spec rows_f = {64, 32, 16, 32, MMB_TYPE_FLOAT, MMB_ROWMAJOR, 0, MMB_READ_WRITE};

/* A contiguous tile goes straight from one array to the other; the write is
   recorded: a read-only duplicate made before it is stale. */
static void send_and_receive_a_contiguous_tile(void) {
  begin("send_and_receive_a_contiguous_tile");
  mmbArray *a = make(&rows_f, sys, rank == 0 ? 1 : -1);
  mmbArrayTile *t = tile(a, 1, 0), *before;
  mmbTileState st;
  if (rank == 0) {
    OK(mmb_mpi_tile_send(t, 1, 5, MPI_COMM_WORLD));
  } else {
    mmbMemSpace *dram;
    MPI_Status status;
    OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
    OK(mmb_tile_duplicate(t, dram, MMB_READ, NULL, &before));
    OK(mmb_mpi_tile_recv(t, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
    CHECK(status.MPI_SOURCE == 0 && status.MPI_TAG == 5, "status %d %d", status.MPI_SOURCE,
          status.MPI_TAG);
    expect_tile(t, MMB_TYPE_FLOAT, value, 1);
    expect_tile(tile(a, 0, 0), MMB_TYPE_FLOAT, zero, 0);   /* only that tile */
    OK(mmb_tile_get_state(t, &st));
    CHECK(st.version == 1, "version %llu", st.version);
    OK(mmb_tile_get_state(before, &st));
    CHECK(st.stale, "the duplicate made before the receive is stale");
    OK(mmb_tile_discard(before));
  }
  /* MPI_PROC_NULL: nothing to do */
  OK(mmb_mpi_tile_send(t, MPI_PROC_NULL, 5, MPI_COMM_WORLD));
  OK(mmb_mpi_tile_recv(t, MPI_PROC_NULL, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  OK(mmb_array_destroy(a));
}

/* A tile whose write is still in a tile cache (a dirty copy) sends what
   the cache holds; a tile received into while a dirty copy of it is cached
   ends with what was received, and the copy, refreshed, holds it too. */
static void tiles_cached_dirty_go_home_first(void) {
  begin("tiles_cached_dirty_go_home_first");
  mmbArray *a = make(&rows_f, sys, rank == 0 ? 1 : -1);
  mmbArrayTile *t = tile(a, 1, 0), *l;
  mmbMemSpace *fast;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 8 << 20,
                                                                .name = "fast"}, &fast));
  OK(mmb_tile_acquire(t, fast, MMB_READ_WRITE, &l));
  for (size_t i = l->lower[0]; i < l->upper[0]; i++)   /* rank 0 sends these, rank 1 loses them */
    for (size_t j = l->lower[1]; j < l->upper[1]; j++) put(l, MMB_TYPE_FLOAT, i, j, value(i, j, 2 + rank));
  OK(mmb_tile_release(l));   /* cached, dirty: the home still holds the old values */
  if (rank == 0) {
    OK(mmb_mpi_tile_send(t, 1, 6, MPI_COMM_WORLD));
    expect_tile(t, MMB_TYPE_FLOAT, value, 2);   /* flushed home on the way */
  } else {
    OK(mmb_mpi_tile_recv(t, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    expect_tile(t, MMB_TYPE_FLOAT, value, 2);
    OK(mmb_tile_acquire(t, fast, MMB_READ, &l));
    expect_tile(l, MMB_TYPE_FLOAT, value, 2);
    OK(mmb_tile_release(l));
  }
  OK(mmb_array_flush(a));   /* no write-back puts older data back */
  expect_tile(t, MMB_TYPE_FLOAT, value, 2);
  OK(mmb_array_destroy(a));
  OK(mmb_space_release(fast));
}

/* Strided tiles between a padded row-major array and a column-major one, in
   both directions, through derived datatypes, packed, and as AUTO picks:
   every element lands at its index. */
static void strided_tiles_in_every_layout_and_packing(void) {
  begin("strided_tiles_in_every_layout_and_packing");
  spec row = {40, 30, 16, 8, MMB_TYPE_DOUBLE, MMB_ROWMAJOR, 256, MMB_READ_WRITE};
  spec col = row;
  col.order = MMB_COLMAJOR;
  col.row_alignment = 0;
  mmbMpiPacking modes[] = {MMB_MPI_PACK_NEVER, MMB_MPI_PACK_ALWAYS, MMB_MPI_PACK_AUTO};
  for (int m = 0; m < 3; m++) {
    set_packing(modes[m], 60);
    mmbArray *a = make(rank == 0 ? &row : &col, sys, rank == 0 ? 2 : 3);
    mmbArray *b = make(rank == 0 ? &row : &col, sys, -1);
    for (int from = 0; from < 2; from++) {
      if (rank == from) OK(mmb_mpi_tile_send(tile(a, 1, 2), 1 - from, 9, MPI_COMM_WORLD));
      else OK(mmb_mpi_tile_recv(tile(b, 1, 2), from, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    expect_tile(tile(b, 1, 2), MMB_TYPE_DOUBLE, value, rank == 0 ? 3 : 2);
    expect_tile(tile(b, 2, 3), MMB_TYPE_DOUBLE, zero, 0);   /* an edge tile: untouched */
    /* whole arrays, tile by tile */
    if (rank == 0) OK(mmb_mpi_array_send(a, 1, 10, MPI_COMM_WORLD));
    else OK(mmb_mpi_array_recv(b, 0, 10, MPI_COMM_WORLD));
    if (rank == 1) expect_array(b, MMB_TYPE_DOUBLE, value, 2);
    OK(mmb_array_destroy(a));
    OK(mmb_array_destroy(b));
  }
  set_packing(MMB_MPI_PACK_AUTO, 60);
}

/* A tile in memory the host cannot reach goes through a host copy (the
   path of a GPU's memory under MPI that is not CUDA-aware). */
static void tiles_the_host_cannot_reach_are_staged(void) {
  begin("tiles_the_host_cannot_reach_are_staged");
  mmbMemInterface *dev = fake_device_interface(0);
  CHECK(dev, "the fake device's interface");
  spec s = {30, 20, 8, 8, MMB_TYPE_INT32, MMB_ROWMAJOR, 0, MMB_READ_WRITE};
  mmbArray *a = make(&s, dev, rank == 0 ? 4 : -1);
  mmbTileState st;
  OK(mmb_tile_get_state(tile(a, 1, 1), &st));
  CHECK(!st.host_accessible, "the provider's memory is not the host's");
  if (rank == 0) OK(mmb_mpi_tile_send(tile(a, 1, 1), 1, 11, MPI_COMM_WORLD));
  else OK(mmb_mpi_tile_recv(tile(a, 1, 1), 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  if (rank == 1) expect_tile(tile(a, 1, 1), MMB_TYPE_INT32, value, 4);
  OK(mmb_mpi_array_bcast(a, 0, MPI_COMM_WORLD));
  expect_array(a, MMB_TYPE_INT32, value, 4);
  OK(mmb_mpi_array_allreduce(a, MMB_MERGE_SUM, MPI_COMM_WORLD));
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(dev));
}

/* The same on a GPU's memory: staged through pinned host memory, or straight
   to MPI when it is CUDA-aware. Skipped (on every rank alike) without a CUDA
   device. */
static void gpu_tiles_where_there_is_a_gpu(void) {
  begin("gpu_tiles_where_there_is_a_gpu");
  mmbMemSpace *gpu;
  int here = mmb_request_space(MMB_GDRAM, MMB_GPU_CUDA, NULL, &gpu) == MMB_OK, everywhere;
  MPI_Allreduce(&here, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!everywhere) {
    if (rank == 0) printf("mpi-tests: gpu_tiles_where_there_is_a_gpu: skipped (no CUDA device)\n");
    return;
  }
  mmbMemInterface *dev;
  OK(mmb_request_interface(gpu, NULL, &dev));
  spec s = {30, 20, 8, 8, MMB_TYPE_DOUBLE, MMB_ROWMAJOR, 0, MMB_READ_WRITE};
  mmbArray *a = make(&s, dev, rank == 0 ? 6 : -1);
  if (rank == 0) OK(mmb_mpi_tile_send(tile(a, 1, 1), 1, 12, MPI_COMM_WORLD));
  else OK(mmb_mpi_tile_recv(tile(a, 1, 1), 0, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  expect_tile(tile(a, 1, 1), MMB_TYPE_DOUBLE, value, 6);
  OK(mmb_mpi_array_bcast(a, 0, MPI_COMM_WORLD));
  expect_array(a, MMB_TYPE_DOUBLE, value, 6);
  OK(mmb_mpi_array_allreduce(a, MMB_MERGE_MAX, MPI_COMM_WORLD));
  expect_array(a, MMB_TYPE_DOUBLE, value, 6);
  OK(mmb_array_destroy(a));
  OK(mmb_interface_destroy(dev));
}

static double value_root1(size_t i, size_t j, int salt) { return value(i, j, 1); }
/* After a broadcast of tile (1, 1) (8 x 16) from rank 1, rank 0's array. */
static double rank0_after(size_t i, size_t j, int salt) {
  return value(i, j, i >= 8 && i < 16 && j >= 16 && j < 32);
}

/* Broadcasts of a tile and of a tiled array, from either root, into a
   different layout on the other rank. */
static void broadcasts(void) {
  begin("broadcasts");
  spec row = {20, 40, 8, 16, MMB_TYPE_FLOAT, MMB_ROWMAJOR, 128, MMB_READ_WRITE};
  spec col = row;
  col.order = MMB_COLMAJOR;
  mmbArray *a = make(rank == 0 ? &row : &col, sys, rank);
  OK(mmb_mpi_tile_bcast(tile(a, 1, 1), 1, MPI_COMM_WORLD));
  expect_tile(tile(a, 1, 1), MMB_TYPE_FLOAT, value_root1, 0);
  if (rank == 0) expect_tile(tile(a, 0, 0), MMB_TYPE_FLOAT, value, 0);
  OK(mmb_mpi_array_bcast(a, 0, MPI_COMM_WORLD));
  expect_array(a, MMB_TYPE_FLOAT, rank0_after, 0);
  OK(mmb_array_destroy(a));
}

/* Ranks fill value(., ., 0) and value(., ., 1): the reductions by hand. */
static double sum2(size_t i, size_t j, int s) { return value(i, j, 0) + value(i, j, 1); }
static double min2(size_t i, size_t j, int s) { return value(i, j, 0); }
static double max2(size_t i, size_t j, int s) { return value(i, j, 1); }

/* SUM, MIN and MAX over every element type, tile by tile, strided. */
static void allreduce_every_type_and_reduction(void) {
  begin("allreduce_every_type_and_reduction");
  mmbElementType types[] = {MMB_TYPE_FLOAT, MMB_TYPE_DOUBLE, MMB_TYPE_INT32, MMB_TYPE_INT64};
  mmbMergeType ops[] = {MMB_MERGE_SUM, MMB_MERGE_MIN, MMB_MERGE_MAX};
  double (*want[])(size_t, size_t, int) = {sum2, min2, max2};
  for (int t = 0; t < 4; t++)
    for (int o = 0; o < 3; o++) {
      spec s = {20, 20, 8, 8, types[t], o == 1 ? MMB_COLMAJOR : MMB_ROWMAJOR, 64, MMB_READ_WRITE};
      mmbArray *a = make(&s, sys, rank);
      OK(mmb_mpi_array_allreduce(a, ops[o], MPI_COMM_WORLD));
      expect_array(a, types[t], want[o], 0);
      OK(mmb_array_destroy(a));
    }
}

/* The _async twins on a thread queue: the worker drives MPI; mmb_wait
   returns once the data is there; work after them on the queue runs after. */
typedef struct after_check {
  mmbArrayTile *t;
  bool ok;
} after_check;
static mmbError check_after(void *arg) {
  after_check *c = arg;
  c->ok = get(c->t, MMB_TYPE_FLOAT, c->t->lower[0], 0) == value(c->t->lower[0], 0, 0);
  return MMB_OK;
}

static void async_twins_on_a_queue(void) {
  begin("async_twins_on_a_queue");
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  mmbArray *a = make(&rows_f, sys, rank == 0 ? 0 : -1);
  mmbRequest r[4] = {{0}};
  mmbError errs[4];
  after_check c = {.t = tile(a, 3, 0)};
  for (int i = 0; i < 4; i++) {
    if (rank == 0) OK(mmb_mpi_tile_send_async(tile(a, (size_t)i, 0), 1, 20 + i, MPI_COMM_WORLD, q, &r[i]));
    else OK(mmb_mpi_tile_recv_async(tile(a, (size_t)i, 0), 0, 20 + i, MPI_COMM_WORLD, q, &r[i]));
  }
  mmbRequest after = {0};
  OK(mmb_queue_submit_task(q, check_after, &c, &after));
  OK(mmb_wait_all(4, r, errs));
  OK(mmb_wait(&after));
  CHECK(c.ok, "work after a receive on the queue sees its data");
  expect_array(a, MMB_TYPE_FLOAT, value, 0);
  /* whole arrays */
  mmbArray *b = make(&rows_f, sys, rank);
  OK(mmb_mpi_array_allreduce_async(b, MMB_MERGE_MAX, MPI_COMM_WORLD, q, &r[0]));
  OK(mmb_mpi_tile_bcast_async(tile(a, 0, 0), 1, MPI_COMM_WORLD, q, &r[1]));
  if (rank == 1) OK(mmb_mpi_array_send_async(a, 0, 30, MPI_COMM_WORLD, q, &r[2]));
  else OK(mmb_mpi_array_recv_async(a, 1, 30, MPI_COMM_WORLD, q, &r[2]));
  OK(mmb_mpi_array_bcast_async(b, 0, MPI_COMM_WORLD, q, NULL));   /* fire and forget */
  OK(mmb_wait_all(3, r, errs));
  OK(mmb_queue_synchronize(q));
  expect_array(b, MMB_TYPE_FLOAT, max2, 0);
  expect_array(a, MMB_TYPE_FLOAT, value, 0);
  /* an error of the operation comes back through its request */
  mmbArray *small = make(&(spec){8, 8, 8, 8, MMB_TYPE_FLOAT, MMB_ROWMAJOR, 0, MMB_READ_WRITE}, sys, 0);
  mmbArrayTile *mine = rank == 0 ? tile(a, 0, 0) : tile(small, 0, 0);
  OK(mmb_mpi_tile_allreduce_async(mine, MMB_MERGE_SUM, MPI_COMM_WORLD, q, &r[0]));
  EXPECT(mmb_wait(&r[0]), MMB_INVALID_ARG);
  OK(mmb_array_destroy(small));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(b));
}

/* Shapes, element types, roots and reductions that differ: MMB_INVALID_ARG
   on both ranks, no data moved, and the communicator still in step. */
static void what_differs_fails_on_every_rank(void) {
  begin("what_differs_fails_on_every_rank");
  mmbArray *a = make(&rows_f, sys, rank == 0 ? 5 : -1);
  spec narrow = rows_f;
  narrow.tile_cols = 16;
  mmbArray *n = make(&narrow, sys, -1);
  spec ints = rows_f;
  ints.type = MMB_TYPE_INT32;
  mmbArray *i32 = make(&ints, sys, -1);
  /* 16 x 32 against 16 x 16 */
  if (rank == 0) EXPECT(mmb_mpi_tile_send(tile(a, 0, 0), 1, 40, MPI_COMM_WORLD), MMB_INVALID_ARG);
  else EXPECT(mmb_mpi_tile_recv(tile(n, 0, 0), 0, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MMB_INVALID_ARG);
  if (rank == 1) expect_tile(tile(n, 0, 0), MMB_TYPE_FLOAT, zero, 0);
  /* float against int32 (the same size) */
  if (rank == 0) EXPECT(mmb_mpi_tile_send(tile(a, 0, 0), 1, 41, MPI_COMM_WORLD), MMB_INVALID_ARG);
  else EXPECT(mmb_mpi_tile_recv(tile(i32, 0, 0), 0, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MMB_INVALID_ARG);
  /* arrays tiled differently */
  if (rank == 0) EXPECT(mmb_mpi_array_send(a, 1, 42, MPI_COMM_WORLD), MMB_INVALID_ARG);
  else EXPECT(mmb_mpi_array_recv(n, 0, 42, MPI_COMM_WORLD), MMB_INVALID_ARG);
  /* collectives */
  EXPECT(mmb_mpi_tile_allreduce(rank == 0 ? tile(a, 0, 0) : tile(n, 0, 0), MMB_MERGE_SUM,
                                MPI_COMM_WORLD), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_allreduce(rank == 0 ? tile(a, 0, 0) : tile(i32, 0, 0), MMB_MERGE_SUM,
                                MPI_COMM_WORLD), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_allreduce(tile(a, 0, 0), rank == 0 ? MMB_MERGE_SUM : MMB_MERGE_MAX,
                                MPI_COMM_WORLD), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_bcast(tile(a, 0, 0), rank, MPI_COMM_WORLD), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_array_bcast(rank == 0 ? a : n, 0, MPI_COMM_WORLD), MMB_INVALID_ARG);
  if (rank == 1) expect_array(a, MMB_TYPE_FLOAT, zero, 0);
  /* and then all is well */
  if (rank == 0) OK(mmb_mpi_tile_send(tile(a, 0, 0), 1, 43, MPI_COMM_WORLD));
  else OK(mmb_mpi_tile_recv(tile(a, 0, 0), 0, 43, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  expect_tile(tile(a, 0, 0), MMB_TYPE_FLOAT, value, 5);
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(n));
  OK(mmb_array_destroy(i32));
}

/* A rank that cannot take part (a read-only destination, a tile MPI cannot
   count) fails with its own error and the others with MMB_INVALID_ARG. */
static void a_failure_on_one_rank_reaches_the_others(void) {
  begin("a_failure_on_one_rank_reaches_the_others");
  spec ro = rows_f;
  ro.access = MMB_READ;
  mmbArray *a = make(&rows_f, sys, 0), *r = make(&ro, sys, 0);
  if (rank == 0) EXPECT(mmb_mpi_tile_send(tile(a, 0, 0), 1, 50, MPI_COMM_WORLD), MMB_INVALID_ARG);
  else EXPECT(mmb_mpi_tile_recv(tile(r, 0, 0), 0, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MMB_INVALID_STATE);
  EXPECT(mmb_mpi_tile_allreduce(rank == 1 ? tile(r, 0, 0) : tile(a, 0, 0), MMB_MERGE_SUM,
                                MPI_COMM_WORLD), rank == 1 ? MMB_INVALID_STATE : MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_bcast(rank == 1 ? tile(r, 0, 0) : tile(a, 0, 0), 0, MPI_COMM_WORLD),
         rank == 1 ? MMB_INVALID_STATE : MMB_INVALID_ARG);
  OK(mmb_mpi_tile_bcast(rank == 0 ? tile(r, 0, 0) : tile(a, 0, 0), 0, MPI_COMM_WORLD));   /* the root only reads */
  /* more elements than MPI's int count: refused before a byte is read (the
     storage is never touched: PROT_NONE) */
  size_t big = (size_t)INT32_MAX + 64;
  void *p = mmap(NULL, big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(p != MAP_FAILED, "mmap");
  mmbLayout *l;
  mmbArray *huge;
  OK(mmb_layout_create_regular_1d(1, (mmbLayoutPadding){0}, &l));
  OK(mmb_array_create_wrapped(p, &(mmbDimensions){1, {big}}, l, sys, MMB_READ_WRITE, &huge));
  mmbArrayTile *h;
  OK(mmb_tile_at(huge, &(mmbIndex){1, {0}}, &h));
  if (rank == 0) EXPECT(mmb_mpi_tile_send(h, 1, 51, MPI_COMM_WORLD), MMB_OVERFLOW);
  else EXPECT(mmb_mpi_tile_recv(tile(a, 0, 0), 0, 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MMB_INVALID_ARG);
  OK(mmb_array_destroy(huge));
  OK(mmb_layout_destroy(l));
  munmap(p, big);
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(r));
}

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

/* A rank waiting for a late peer leaves its cores to the ranks that compute:
   the queue's thread that drives the receive, and the caller in mmb_wait,
   together use under 8% of the wait's second in CPU time (a bound on CPU
   time, not on the clock: a loaded machine does not make it fail). */
static void a_waiting_rank_leaves_its_cores(void) {
  begin("a_waiting_rank_leaves_its_cores");
  mmbArray *a = make(&rows_f, sys, 0);
  if (rank == 0) {
    mmbQueue *q;
    mmbRequest r = {0};
    OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
    double cpu = cpu_seconds();
    OK(mmb_mpi_tile_recv_async(tile(a, 0, 0), 1, 81, MPI_COMM_WORLD, q, &r));
    OK(mmb_wait(&r));
    cpu = cpu_seconds() - cpu;
    CHECK(cpu < 0.08, "waiting 1 s for the peer took %.3f s of CPU", cpu);
    OK(mmb_queue_destroy(NULL, &q));
  } else {
    sleep(1);
    OK(mmb_mpi_tile_send(tile(a, 0, 0), 0, 81, MPI_COMM_WORLD));
  }
  OK(mmb_array_destroy(a));
}

/* A peer that never comes: MMB_TIMEOUT after the timeout, not a hang. */
static void a_peer_that_never_comes_times_out(void) {
  begin("a_peer_that_never_comes_times_out");
  set_packing(MMB_MPI_PACK_AUTO, 0.3);
  mmbArray *a = make(&rows_f, sys, 0);
  if (rank == 0) {
    EXPECT(mmb_mpi_tile_recv(tile(a, 0, 0), 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MMB_TIMEOUT);
    EXPECT(mmb_mpi_tile_send(tile(a, 0, 0), 1, 78, MPI_COMM_WORLD), MMB_TIMEOUT);
    mmbQueue *q;
    mmbRequest r = {0};
    OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
    OK(mmb_mpi_tile_recv_async(tile(a, 1, 0), 1, 79, MPI_COMM_WORLD, q, &r));
    EXPECT(mmb_wait(&r), MMB_TIMEOUT);
    OK(mmb_queue_destroy(NULL, &q));
  }
  set_packing(MMB_MPI_PACK_AUTO, 60);
  OK(mmb_array_destroy(a));
}

/* Bad arguments return at once; nothing is sent. */
static void bad_arguments_are_refused(void) {
  begin("bad_arguments_are_refused");
  mmbArray *a = make(&rows_f, sys, 0);
  mmbArrayTile *t = tile(a, 0, 0), *gone;
  mmbMemSpace *dram;
  int tag_max;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  OK(mmb_tile_duplicate(t, dram, MMB_READ, NULL, &gone));
  OK(mmb_tile_discard(gone));
  OK(mmb_mpi_tag_max(&tag_max));
  CHECK(tag_max >= 16383, "tag_max %d", tag_max);
  MPI_Comm w = MPI_COMM_WORLD;
  EXPECT(mmb_mpi_tile_send(NULL, 1, 0, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_send(gone, 1, 0, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_send(t, size, 0, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_send(t, -5, 0, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_send(t, MPI_ANY_SOURCE, 0, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_send(t, 1, -1, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_send(t, 1, MPI_ANY_TAG, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_send(t, 1, tag_max + 1, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_send(t, 1, 0, MPI_COMM_NULL), MMB_INVALID_ARG);
  /* SoA records lie in one plane per field: not one message's bytes */
  mmbLayout *soa;
  mmbArray *records;
  OK(mmb_layout_create_record((mmbRecordField[]){{"a", 4, 0}, {"b", 8, 8}}, 2, 0,
                              MMB_RECORD_SOA, 1, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &soa));
  OK(mmb_array_create(&(mmbDimensions){1, {16}}, soa, sys, MMB_READ_WRITE, &records));
  mmbArrayTile *whole;
  OK(mmb_tile_at(records, &(mmbIndex){1, {0}}, &whole));
  if (rank == 0) EXPECT(mmb_mpi_tile_send(whole, 1, 3, w), MMB_UNSUPPORTED);
  else EXPECT(mmb_mpi_tile_recv(whole, 0, 3, w, MPI_STATUS_IGNORE), MMB_UNSUPPORTED);
  OK(mmb_array_destroy(records));
  OK(mmb_layout_destroy(soa));
  /* its messages go where mmb's go: to the code's callback, with the rank */
  OK(mmb_logging_set_callback(keep_message, NULL));
  OK(mmb_logging_set_level(MMB_LOG_DEBUG));
  kept[0] = '\0';
  EXPECT(mmb_mpi_tile_send(t, 1, 0, MPI_COMM_NULL), MMB_INVALID_ARG);
  OK(mmb_logging_set_level(MMB_LOG_ERROR));
  OK(mmb_logging_set_callback(NULL, NULL));
  char want[64];
  snprintf(want, sizeof want, "mmb_mpi_tile_send: rank %d: comm is MPI_COMM_NULL", rank);
  CHECK(strcmp(kept, want) == 0, "the callback got \"%s\"", kept);
  CHECK(kept_level == MMB_LOG_DEBUG, "at level %d", (int)kept_level);
  EXPECT(mmb_mpi_tile_recv(NULL, 0, 0, w, MPI_STATUS_IGNORE), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_recv(t, size + 3, 0, w, MPI_STATUS_IGNORE), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_array_recv(a, MPI_ANY_SOURCE, 0, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_array_send(NULL, 1, 0, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_bcast(t, size, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_bcast(t, -1, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_array_bcast(NULL, 0, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_allreduce(t, MMB_MERGE_OVERWRITE, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_allreduce(t, (mmbMergeType)42, w), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_array_allreduce(NULL, MMB_MERGE_SUM, w), MMB_INVALID_ARG);
  mmbLayout *l;
  mmbArray *b;
  OK(mmb_layout_create_regular_nd(4, 2, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &l));
  OK(mmb_array_create(&(mmbDimensions){2, {4, 4}}, l, sys, MMB_READ_WRITE, &b));
  EXPECT(mmb_mpi_array_allreduce(b, MMB_MERGE_SUM, w), MMB_INVALID_ARG);   /* no element type */
  OK(mmb_array_destroy(b));
  OK(mmb_layout_destroy(l));
  mmbRequest r = {0};
  EXPECT(mmb_mpi_tile_send_async(t, 1, 0, w, NULL, &r), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tile_allreduce_async(NULL, MMB_MERGE_SUM, w, NULL, &r), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_array_recv_async(a, MPI_ANY_SOURCE, 0, w, NULL, NULL), MMB_INVALID_ARG);
  mmbMpiOptions o;
  bool aware;
  EXPECT(mmb_mpi_get_options(NULL), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_set_options(NULL), MMB_INVALID_ARG);
  OK(mmb_mpi_get_options(&o));
  CHECK(o.timeout > 0 && o.packing == MMB_MPI_PACK_AUTO, "the defaults");
  mmbMpiOptions bad = o;
  bad.timeout = 0;
  EXPECT(mmb_mpi_set_options(&bad), MMB_INVALID_ARG);
  bad.timeout = NAN;
  EXPECT(mmb_mpi_set_options(&bad), MMB_INVALID_ARG);
  bad = o;
  bad.packing = (mmbMpiPacking)7;
  EXPECT(mmb_mpi_set_options(&bad), MMB_INVALID_ARG);
  bad = o;
  bad.cuda = (mmbMpiCuda)9;
  EXPECT(mmb_mpi_set_options(&bad), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_cuda_aware(NULL), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_tag_max(NULL), MMB_INVALID_ARG);
  OK(mmb_mpi_cuda_aware(&aware));
  bad = o;
  bad.cuda = MMB_MPI_CUDA_STAGED;
  OK(mmb_mpi_set_options(&bad));
  OK(mmb_mpi_cuda_aware(&aware));
  CHECK(!aware, "STAGED is never CUDA-aware");
  OK(mmb_mpi_set_options(&o));
  OK(mmb_array_destroy(a));
}

int main(int argc, char **argv) {
  int provided;
  signal(SIGALRM, on_alarm);
  alarm(240);
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size == 2, "run on 2 ranks (test/mpi/run.sh 2 %s)", argv[0]);
  CHECK(provided == MPI_THREAD_MULTIPLE, "MPI gives thread level %d", provided);
  /* before mmb_init: refused, not a crash */
  EXPECT(mmb_mpi_tile_bcast(NULL, 0, MPI_COMM_WORLD), MMB_INVALID_ARG);
  EXPECT(mmb_mpi_array_bcast((mmbArray *)&provided, 0, MPI_COMM_WORLD), MMB_NOT_INITIALIZED);
  OK(mmb_init(&(mmbOptions){.log_level = MMB_LOG_ERROR}));
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  OK(mmb_request_interface(dram, NULL, &sys));
  set_packing(MMB_MPI_PACK_AUTO, 60);
  send_and_receive_a_contiguous_tile();
  tiles_cached_dirty_go_home_first();
  strided_tiles_in_every_layout_and_packing();
  tiles_the_host_cannot_reach_are_staged();
  gpu_tiles_where_there_is_a_gpu();
  broadcasts();
  allreduce_every_type_and_reduction();
  async_twins_on_a_queue();
  what_differs_fails_on_every_rank();
  a_failure_on_one_rank_reaches_the_others();
  a_peer_that_never_comes_times_out();
  a_waiting_rank_leaves_its_cores();
  bad_arguments_are_refused();
  begin("teardown");
  OK(mmb_interface_destroy(sys));
  OK(mmb_finalize());
  for (int i = 0; i < n_wrapped; i++) free(wrapped[i]);
  if (rank == 0) printf("mpi-tests: 13 groups passed on %d ranks\n", size);
  MPI_Finalize();
  return 0;
}
