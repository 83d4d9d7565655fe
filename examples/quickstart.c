/* quickstart: the smallest useful mmb program. It asks for a DRAM space
   (capped at 64 MiB of its own), makes an interface on it, allocates two
   matrices, copies a 3x4 sub-block of one into the other with mmb_copy_2d,
   sums its rows into a bare block (mmb_ptr_allocate: malloc-style, no handle),
   and prints the interface's statistics. */
#include <mmb/mmb.h>

#include <stdio.h>

#define CHECK(call)                                                              \
  do {                                                                           \
    mmbError e_ = (call);                                                        \
    if (e_ != MMB_OK) {                                                          \
      fprintf(stderr, "quickstart: %s failed: %s\n", #call, mmb_error_string(e_)); \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

enum { ROWS = 8, COLS = 8 };

int main(void) {
  CHECK(mmb_init(NULL));

  /* A space of our own on the first DRAM node, limited to 64 MiB. */
  mmbMemSpace *dram;
  mmbMemSpaceConfig space_cfg = {.size_limit = 64u << 20};
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, &space_cfg, &dram));
  mmbMemInterface *iface;
  CHECK(mmb_request_interface(dram, NULL, &iface));   /* system provider, basic strategy */

  mmbAllocation *a, *b;
  CHECK(mmb_allocate(ROWS * COLS * sizeof(double), iface, &a));
  mmbAllocateOptions zeroed = {.flags = MMB_ALLOC_ZERO};
  CHECK(mmb_allocate_opts(ROWS * COLS * sizeof(double), iface, &zeroed, &b));

  double *src = mmb_allocation_ptr(a), *dst = mmb_allocation_ptr(b);
  for (int i = 0; i < ROWS * COLS; i++) src[i] = i;

  /* Rows 2..4, columns 1..4 of a -> rows 0..2, columns 4..7 of b.
     x offsets, widths and pitches in bytes; y offsets and heights in rows. */
  const size_t pitch = COLS * sizeof(double);
  CHECK(mmb_copy_2d(b, 4 * sizeof(double), 0, pitch, a, 1 * sizeof(double), 2, pitch,
                    4 * sizeof(double), 3));

  printf("b after copying a[2..4][1..4] to b[0..2][4..7]:\n");
  for (int r = 0; r < 3; r++) {
    for (int c = 0; c < COLS; c++) printf("%5.0f", dst[r * COLS + c]);
    printf("\n");
  }

  /* A bare block, malloc and free on the interface: b's row sums. */
  double *sums;
  CHECK(mmb_ptr_allocate(ROWS * sizeof *sums, iface, (void **)&sums));
  for (int r = 0; r < ROWS; r++) {
    sums[r] = 0;
    for (int c = 0; c < COLS; c++) sums[r] += dst[r * COLS + c];
  }
  printf("row sums of b: %.0f %.0f %.0f (and %d more)\n", sums[0], sums[1], sums[2], ROWS - 3);

  mmbStats st;
  CHECK(mmb_interface_get_stats(iface, &st));
  printf("interface: %zu bytes used (high %zu), %zu reserved, %llu allocations, %llu provider trips\n",
         st.used_current, st.used_high, st.reserved_current, st.n_allocs, st.n_provider_allocs);

  CHECK(mmb_ptr_deallocate(sums, iface));
  CHECK(mmb_free(a));
  CHECK(mmb_free(b));
  CHECK(mmb_interface_destroy(iface));
  CHECK(mmb_space_release(dram));
  CHECK(mmb_finalize());
  return 0;
}
