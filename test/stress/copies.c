/* The copy engine's helper threads under concurrent callers: three threads
   copy 5 MiB buffers at once through an interface that splits copies over
   two threads (one split copy runs at a time; the others run alone), with
   streaming stores from the first byte, and convert 5 MiB of records
   between AoS and SoA, split the same way. Checks every byte. A plain program,
   run by `make test` and under ThreadSanitizer by `make test SANITIZE=thread`. */
#include <mmb/mmb.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 3, ROUNDS = 6, BYTES = 5 << 20 };

static mmbMemInterface *iface;

/* 5 MiB of records of 3 floats, AoS to SoA and back: 0 where every value
   arrived. */
static uintptr_t convert_round(uintptr_t id, int r) {
  static const mmbRecordField xyz[] = {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}};
  size_t n = BYTES / 12;
  mmbDimensions d = {1, {n}};
  mmbLayout *la, *ls;
  mmbArray *a, *s;
  if (mmb_layout_create_record(xyz, 3, 12, MMB_RECORD_AOS, 1, MMB_ROWMAJOR,
                               (mmbLayoutPadding){0}, &la) != MMB_OK)
    return 1;
  if (mmb_layout_create_record(xyz, 3, 12, MMB_RECORD_SOA, 1, MMB_ROWMAJOR,
                               (mmbLayoutPadding){0}, &ls) != MMB_OK ||
      mmb_array_create(&d, la, iface, MMB_READ_WRITE, &a) != MMB_OK ||
      mmb_array_create(&d, ls, iface, MMB_READ_WRITE, &s) != MMB_OK)
    return 1;
  float *v = mmb_array_ptr(a);
  for (size_t i = 0; i < 3 * n; i++) v[i] = (float)(i + id + (size_t)r);
  uintptr_t bad = mmb_array_copy(s, a) != MMB_OK;
  for (size_t f = 0; f < 3 && !bad; f++) {
    mmbField fld;
    bad |= mmb_array_get_field(s, f, &fld) != MMB_OK;
    for (size_t e = 0; e < n && !bad; e++)
      bad |= ((float *)fld.ptr)[e] != (float)(3 * e + f + id + (size_t)r);
  }
  memset(v, 0, 3 * n * sizeof *v);
  bad |= mmb_array_copy(a, s) != MMB_OK;
  for (size_t i = 0; i < 3 * n && !bad; i++) bad |= v[i] != (float)(i + id + (size_t)r);
  bad |= mmb_array_destroy(a) != MMB_OK || mmb_array_destroy(s) != MMB_OK ||
         mmb_layout_destroy(la) != MMB_OK || mmb_layout_destroy(ls) != MMB_OK;
  return bad;
}

static void *run(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  mmbAllocation *a, *b;
  if (mmb_allocate(BYTES, iface, &a) != MMB_OK || mmb_allocate(BYTES, iface, &b) != MMB_OK)
    return (void *)1;
  unsigned char *s = mmb_allocation_ptr(a), *d = mmb_allocation_ptr(b);
  uintptr_t bad = 0;
  for (int r = 0; r < ROUNDS && !bad; r++) {
    for (size_t i = 0; i < BYTES; i++) s[i] = (unsigned char)(i + id * 7 + (size_t)r);
    size_t rows = 1000, width = BYTES / rows - 100;   /* gapped rows, then one run */
    bad |= mmb_copy_2d(b, 0, 0, BYTES / rows, a, 0, 0, BYTES / rows, width, rows) != MMB_OK;
    for (size_t row = 0; row < rows && !bad; row++)
      bad |= memcmp(d + row * (BYTES / rows), s + row * (BYTES / rows), width) != 0;
    bad |= mmb_copy(b, a) != MMB_OK || memcmp(d, s, BYTES) != 0;
    bad |= convert_round(id, r);
  }
  bad |= mmb_free(a) != MMB_OK || mmb_free(b) != MMB_OK;
  return (void *)bad;
}

int main(void) {
  setenv("MMB_COPY_NT_BYTES", "1", 1);
  mmbOptions opts = {.log_level = MMB_LOG_ERROR};
  if (mmb_init(&opts) != MMB_OK) return 1;
  mmbMemSpace *dram;
  mmbMemInterfaceConfig cfg = {.flags = MMB_INTERFACE_THREAD_SAFE, .copy_threads = 2};
  if (mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram) != MMB_OK ||
      mmb_request_interface(dram, &cfg, &iface) != MMB_OK)
    return 1;
  pthread_t t[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, run, (void *)i);
  int failed = 0;
  for (int i = 0; i < THREADS; i++) {
    void *bad;
    pthread_join(t[i], &bad);
    failed |= bad != NULL;
  }
  failed |= mmb_interface_destroy(iface) != MMB_OK || mmb_finalize() != MMB_OK;
  printf("stress-copies: %d threads x %d rounds of split, streamed 5 MiB copies and record "
         "conversions: %s\n", THREADS,
         ROUNDS, failed ? "FAILED" : "ok");
  return failed;
}
