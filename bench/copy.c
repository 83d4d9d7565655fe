/* bench/copy: mmb_copy_1d/2d/nd on 256 MiB of payload, against memcpy of the
   same number of bytes measured in the same run. Prints GB/s and the ratio
   (mmb throughput / memcpy throughput; 1.0 = as fast as memcpy).
   Targets: >= 0.9 for contiguous copies and 2-D rows >= 4 KiB, >= 0.7 for
   rows of 256 B. Usage: bench-copy [MiB of payload] [repetitions] */
#include <mmb/mmb.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    mmbError e_ = (call);                                                             \
    if (e_ != MMB_OK) {                                                               \
      fprintf(stderr, "bench-copy: %s: %s\n", #call, mmb_error_string(e_));           \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct copy_case {
  const char *name;
  size_t width, pitch;   /* row bytes and pitch on both sides; pitch == width: contiguous */
  int nd;                /* 1: copy_1d, 2: copy_2d, 3: copy_nd over a 3-D box */
  double target;
} copy_case;

static size_t payload, reps;
static mmbAllocation *src, *dst;
static char *evict;
static size_t evict_bytes;

/* Every timed copy starts with a cold cache, memcpy and mmb alike: on a
   machine whose last-level cache holds hundreds of MiB, a repeated memcpy
   would otherwise run partly from cache and the comparison would be unfair. */
static void evict_caches(void) {
  for (size_t i = 0; i < evict_bytes; i += 64) evict[i]++;
}

static void run_mmb(const copy_case *c) {
  size_t rows = payload / c->width;
  if (c->nd == 1) {
    CHECK(mmb_copy_1d(dst, 0, src, 0, payload));
  } else if (c->nd == 2) {
    CHECK(mmb_copy_2d(dst, 0, 0, c->pitch, src, 0, 0, c->pitch, c->width, rows));
  } else {
    size_t planes = 16, per = rows / planes;   /* main() keeps rows a multiple of 16 */
    size_t off[3] = {0, 0, 0}, pitch[3] = {c->pitch, c->pitch * per, 0};
    size_t dims[3] = {c->width, per, planes};
    CHECK(mmb_copy_nd(dst, off, pitch, src, off, pitch, 3, dims));
  }
}

/* Best of `reps`, after one warm-up (page faults are not what we measure). */
static double best_seconds(const copy_case *c, bool baseline) {
  char *d = mmb_allocation_ptr(dst), *s = mmb_allocation_ptr(src);
  double best = 1e30;
  for (size_t r = 0; r <= reps; r++) {
    evict_caches();
    double t0 = now();
    if (baseline) memcpy(d, s, payload);
    else run_mmb(c);
    double t = now() - t0;
    if (r > 0 && t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  payload = (argc > 1 ? strtoull(argv[1], NULL, 10) : 256) << 20;
  if (payload < ((size_t)1 << 20)) payload = (size_t)1 << 20;   /* whole MiB: rows split into 16 planes */
  reps = argc > 2 ? strtoull(argv[2], NULL, 10) : 5;
  if (reps < 1) reps = 1;
  CHECK(mmb_init(NULL));
  mmbMemSpace *dram;
  mmbMemInterface *iface;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  CHECK(mmb_request_interface(dram, NULL, &iface));
  const copy_case cases[] = {
      {"copy_1d contiguous", payload, payload, 1, 0.9},
      {"copy_2d rows 64 KiB", 64 << 10, 80 << 10, 2, 0.9},
      {"copy_2d rows 4 KiB", 4 << 10, 5 << 10, 2, 0.9},
      {"copy_2d rows 256 B", 256, 320, 2, 0.7},
      {"copy_nd 3-D, rows 4 KiB", 4 << 10, 5 << 10, 3, 0.9},
      {"copy_nd 3-D, rows 256 B", 256, 320, 3, 0.7},
  };
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  evict_bytes = 2 * (llc > 0 ? (size_t)llc : (size_t)64 << 20);
  if (!(evict = malloc(evict_bytes))) return 1;
  memset(evict, 0, evict_bytes);
  size_t span = payload / 256 * 320;   /* the largest pitch/width ratio above */
  CHECK(mmb_allocate(span, iface, &src));
  CHECK(mmb_allocate(span, iface, &dst));
  memset(mmb_allocation_ptr(src), 1, span);
  memset(mmb_allocation_ptr(dst), 2, span);
  printf("bench-copy: %zu MiB of payload per copy, best of %zu, caches evicted (%zu MiB) before "
         "each; baseline memcpy of the same bytes\n", payload >> 20, reps, evict_bytes >> 20);
  printf("%-26s %12s %12s %8s %8s\n", "case", "memcpy GB/s", "mmb GB/s", "ratio", "target");
  int missed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double base = best_seconds(&cases[i], true), ours = best_seconds(&cases[i], false);
    double ratio = base / ours;
    missed += ratio < cases[i].target;
    printf("%-26s %12.2f %12.2f %8.2f %8.2f%s\n", cases[i].name, payload / base / 1e9,
           payload / ours / 1e9, ratio, cases[i].target, ratio < cases[i].target ? "  below" : "");
  }
  CHECK(mmb_free(src));
  CHECK(mmb_free(dst));
  CHECK(mmb_interface_destroy(iface));
  CHECK(mmb_finalize());
  free(evict);
  printf("%d of %zu cases below target\n", missed, sizeof cases / sizeof cases[0]);
  return 0;
}
