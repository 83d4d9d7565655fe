/* An outside program: built by `make test` against the *installed* headers
   and library through pkg-config, it calls every allocation-level function of
   the contract and checks what each returns. Exit 0 = all as documented. */
#include <mmb/mmb.h>

#include <stdio.h>
#include <string.h>

static int failures;
#define EXPECT(call, want)                                                           \
  do {                                                                               \
    mmbError got_ = (call);                                                          \
    if (got_ != (want)) {                                                            \
      fprintf(stderr, "outside: %s = %s, expected %s\n", #call, mmb_error_string(got_), \
              mmb_error_string(want));                                               \
      failures++;                                                                    \
    }                                                                                \
  } while (0)

int main(void) {
  mmbMemSpace *space = NULL;
  EXPECT(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &space), MMB_NOT_INITIALIZED);
  mmbOptions opts = {.log_level = MMB_LOG_WARN};
  EXPECT(mmb_init(&opts), MMB_OK);
  EXPECT(mmb_logging_set_level(MMB_LOG_ERROR), MMB_OK);

  size_t n = 0, cap = 0;
  mmbMemLayer layer;
  EXPECT(mmb_space_count(&n), MMB_OK);
  EXPECT(mmb_space_at(0, &space), MMB_OK);
  EXPECT(mmb_space_layer(space, &layer), MMB_OK);
  EXPECT(mmb_space_capacity(space, &cap), MMB_OK);
  mmbMemSpace *limited;
  mmbMemSpaceConfig cfg = {.size_limit = 8u << 20};
  EXPECT(mmb_request_space(MMB_DRAM, MMB_CPU, &cfg, &limited), MMB_OK);
  mmbMemInterface *iface;
  mmbMemInterfaceConfig icfg = {.provider = MMB_PROVIDER_SYSTEM, .strategy = MMB_STRATEGY_BASIC};
  EXPECT(mmb_request_interface(limited, &icfg, &iface), MMB_OK);

  mmbAllocation *a, *b, *big;
  EXPECT(mmb_allocate(4096, iface, &a), MMB_OK);
  mmbAllocateOptions o = {.alignment = 4096, .flags = MMB_ALLOC_ZERO};
  EXPECT(mmb_allocate_opts(4096, iface, &o, &b), MMB_OK);
  EXPECT(mmb_allocate(16u << 20, iface, &big), MMB_OUT_OF_MEMORY);   /* past the limit */
  memset(mmb_allocation_ptr(a), 1, mmb_allocation_size(a));

  size_t doff[2] = {0, 1}, soff[2] = {0, 0}, pitch[2] = {64, 0}, dims[2] = {64, 4};
  EXPECT(mmb_copy(b, a), MMB_OK);
  EXPECT(mmb_copy_1d(b, 100, a, 0, 50), MMB_OK);
  EXPECT(mmb_copy_2d(b, 0, 0, 64, a, 0, 0, 64, 64, 8), MMB_OK);
  EXPECT(mmb_copy_nd(b, doff, pitch, a, soff, pitch, 2, dims), MMB_OK);
  EXPECT(mmb_copy_1d(b, 4000, a, 0, 200), MMB_INVALID_ARG);

  mmbStats st;
  EXPECT(mmb_interface_get_stats(iface, &st), MMB_OK);
  if (st.used_current != 8192 || st.n_failed != 1) {
    fprintf(stderr, "outside: stats used %zu failed %llu\n", st.used_current, st.n_failed);
    failures++;
  }
  EXPECT(mmb_space_get_stats(limited, &st), MMB_OK);
  EXPECT(mmb_interface_reset_high(iface), MMB_OK);
  EXPECT(mmb_interface_trim(iface, 0), MMB_OK);
  EXPECT(mmb_interface_destroy(iface), MMB_BUSY);
  EXPECT(mmb_free(a), MMB_OK);
  EXPECT(mmb_free(a), MMB_INVALID_ARG);   /* double free: reported, harmless */
  EXPECT(mmb_free(b), MMB_OK);
  EXPECT(mmb_interface_destroy(iface), MMB_OK);

  /* bare blocks on a pool of the same space */
  mmbMemInterfaceConfig pcfg = {.strategy = MMB_STRATEGY_POOL};
  EXPECT(mmb_request_interface(limited, &pcfg, &iface), MMB_OK);
  void *p, *q;
  EXPECT(mmb_ptr_allocate(300, iface, &p), MMB_OK);
  EXPECT(mmb_ptr_allocate_opts(300, iface, &(mmbAllocateOptions){.alignment = 256}, &q), MMB_OK);
  memset(p, 2, 300);
  memset(q, 3, 300);
  EXPECT(mmb_ptr_deallocate(p, iface), MMB_OK);
  EXPECT(mmb_ptr_deallocate(p, iface), MMB_INVALID_ARG);   /* twice: refused */
  EXPECT(mmb_ptr_deallocate(q, iface), MMB_OK);
  EXPECT(mmb_interface_destroy(iface), MMB_OK);
  EXPECT(mmb_space_release(limited), MMB_OK);
  EXPECT(mmb_finalize(), MMB_OK);
  if (failures) return 1;
  printf("outside program: %zu spaces, first is %s with %zu bytes; every call as documented\n", n,
         mmb_layer_name(layer), cap);
  return 0;
}
