/* bench/records: AoS <-> SoA conversion of 64 MiB of records by mmb_array_copy
   (an AoS array into an SoA array of the same records, and back), against
   two baselines timed in the same run, round by round in turn:
   - the bandwidth of a plain copy of the same bytes: the faster of glibc's
     memcpy and a non-temporal AVX2 copy (the best single-core copies);
   - a hand-written per-field loop, typed for the struct, one loop per field
     (what code converts with by hand), compiled -O3 -march=native.
   Four records: 3 floats (12 B), 3 floats and an int (16 B), a particle of
   3 floats, a char and a double (24 B with C's padding), and 6 doubles, a
   float and an int (56 B). Prints medians and worst rounds, in ms and GB/s
   of AoS bytes, and the ratios; target: mmb >= 0.8x the plain copy.
   Where a CUDA device is found (a CUDA build), the same records on it, in
   its conversion kernel: AoS -> SoA and back between two device arrays,
   against cudaMemcpy of the same bytes on the device and a cudaMemcpy2D
   per field (the hand-written way without a kernel); and pinned host AoS
   -> device SoA and back, against cudaMemcpy of the same bytes between
   them and a cudaMemcpy2D per field.
   Where the machine has two CPUs or more, at 64 MiB, the same conversions
   on an interface with copy_threads = 2 (split over two threads, as large
   copies are) against the non-temporal copy split over two threads, both
   dealt in chunks of 1 MiB as each thread asks. The three take turns at
   going first in a round: the first finds the second CPU idle since the
   single-thread timings, and on a VM (the AMD Zen 3 of docs/design.md) a
   thread woken there ran up to 1.7x as slow as the caller for
   milliseconds; always first, AoS -> SoA carried that alone.
   With a size (4 KiB to 64 MiB: 192K for the data in L2), the host part
   converts that many bytes of records, each round repeating every
   operation to about 64 MiB and timing its mean (the device part stays at
   64 MiB).
   Then particles tile by tile, as a tile loop converts them: a square
   array of about that size (96 KiB at least) in 32 x 32 and in 64 x 64
   tiles, each copied by mmb_tile_copy into an SoA array's tile and back,
   against a memcpy per tile row of the same bytes (a tile's rows are
   short runs).
   Usage: bench-records [rounds [bytes, with K or M]] */
#include <mmb/mmb.h>

#include "bench.h"

#include <immintrin.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef BENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

enum { BYTES = 64 << 20, MAX_ROUNDS = 64 };

/* ---- the records, and their hand-written per-field loops ------------------- */
typedef struct r12 { float x, y, z; } r12;
typedef struct r16 { float x, y, z; int32_t id; } r16;
typedef struct r32 { float x, y, z; char flag; double mass; } r32;
typedef struct r56 { double x, y, z, vx, vy, vz; float m; int32_t id; } r56;

/* The bytes from one plane of n fields of `size` to the next: planes one
   after the other, each on a cache line (so that each is aligned for its
   type, whatever n). */
static size_t plane_step(size_t n, size_t size) { return (n * size + 63) / 64 * 64; }

/* One loop per field, from the AoS array into planes one after the other
   (n elements each, plane_step apart), and back. */
#define FIELD_OUT(T, f) { T *o = (T *)plane; for (size_t i = 0; i < n; i++) o[i] = a[i].f; plane += plane_step(n, sizeof(T)); }
#define FIELD_IN(T, f)  { const T *o = (const T *)plane; for (size_t i = 0; i < n; i++) a[i].f = o[i]; plane += plane_step(n, sizeof(T)); }

static void r12_out(const r12 *a, char *plane, size_t n) { FIELD_OUT(float, x) FIELD_OUT(float, y) FIELD_OUT(float, z) }
static void r12_in(r12 *a, const char *plane, size_t n) { FIELD_IN(float, x) FIELD_IN(float, y) FIELD_IN(float, z) }
static void r16_out(const r16 *a, char *plane, size_t n) { FIELD_OUT(float, x) FIELD_OUT(float, y) FIELD_OUT(float, z) FIELD_OUT(int32_t, id) }
static void r16_in(r16 *a, const char *plane, size_t n) { FIELD_IN(float, x) FIELD_IN(float, y) FIELD_IN(float, z) FIELD_IN(int32_t, id) }
static void r32_out(const r32 *a, char *plane, size_t n) { FIELD_OUT(float, x) FIELD_OUT(float, y) FIELD_OUT(float, z) FIELD_OUT(char, flag) FIELD_OUT(double, mass) }
static void r32_in(r32 *a, const char *plane, size_t n) { FIELD_IN(float, x) FIELD_IN(float, y) FIELD_IN(float, z) FIELD_IN(char, flag) FIELD_IN(double, mass) }
static void r56_out(const r56 *a, char *plane, size_t n) {
  FIELD_OUT(double, x) FIELD_OUT(double, y) FIELD_OUT(double, z) FIELD_OUT(double, vx)
  FIELD_OUT(double, vy) FIELD_OUT(double, vz) FIELD_OUT(float, m) FIELD_OUT(int32_t, id)
}
static void r56_in(r56 *a, const char *plane, size_t n) {
  FIELD_IN(double, x) FIELD_IN(double, y) FIELD_IN(double, z) FIELD_IN(double, vx)
  FIELD_IN(double, vy) FIELD_IN(double, vz) FIELD_IN(float, m) FIELD_IN(int32_t, id)
}

typedef struct record_case {
  const char *name;
  size_t size, n_fields;
  mmbRecordField fields[8];
  void (*out)(const void *aos, char *planes, size_t n);
  void (*in)(void *aos, const char *planes, size_t n);
} record_case;

/* The bytes of the planes of n records of rc (plane_step apart). */
static size_t planes_bytes(const record_case *rc, size_t n) {
  size_t bytes = 0;
  for (size_t f = 0; f < rc->n_fields; f++) bytes += plane_step(n, rc->fields[f].size);
  return bytes;
}

#define F(T, f) {#f, sizeof(((T *)0)->f), offsetof(T, f)}
static const record_case cases[] = {
  {"3 floats", sizeof(r12), 3, {F(r12, x), F(r12, y), F(r12, z)},
   (void (*)(const void *, char *, size_t))r12_out, (void (*)(void *, const char *, size_t))r12_in},
  {"3 floats + int", sizeof(r16), 4, {F(r16, x), F(r16, y), F(r16, z), F(r16, id)},
   (void (*)(const void *, char *, size_t))r16_out, (void (*)(void *, const char *, size_t))r16_in},
  {"particle (24 B, 5 fields)", sizeof(r32), 5,
   {F(r32, x), F(r32, y), F(r32, z), F(r32, flag), F(r32, mass)},
   (void (*)(const void *, char *, size_t))r32_out, (void (*)(void *, const char *, size_t))r32_in},
  {"6 doubles + float + int", sizeof(r56), 8,
   {F(r56, x), F(r56, y), F(r56, z), F(r56, vx), F(r56, vy), F(r56, vz), F(r56, m), F(r56, id)},
   (void (*)(const void *, char *, size_t))r56_out, (void (*)(void *, const char *, size_t))r56_in},
};

/* ---- the plain copies ------------------------------------------------------- */
__attribute__((target("avx2"))) static void nt_copy(void *dst, const void *src, size_t bytes) {
  __m256i *d = dst;
  const __m256i *s = src;
  size_t n = bytes / 32;
  for (size_t i = 0; i < n; i += 4) {
    __m256i a = _mm256_load_si256(s + i), b = _mm256_load_si256(s + i + 1);
    __m256i c = _mm256_load_si256(s + i + 2), e = _mm256_load_si256(s + i + 3);
    _mm256_stream_si256(d + i, a);
    _mm256_stream_si256(d + i + 1, b);
    _mm256_stream_si256(d + i + 2, c);
    _mm256_stream_si256(d + i + 3, e);
  }
  _mm_sfence();
}

/* The non-temporal copy split over two threads, dealt in chunks of 1 MiB
   as mmb deals its split copies and conversions: the baseline of
   conversions on an interface with copy_threads = 2. Its second thread
   waits between copies, as mmb's helpers do (a thread made for each copy
   would cost the baseline 35-55 us a copy, about 1%). */
static struct {
  pthread_barrier_t go, done;
  char *d;
  const char *s;
  bench_deal deal;   /* of bytes (a multiple of 128) */
  bool stop;         /* the helper returns */
} nt2;

static void nt_chunks(void) {
  size_t lo, hi;
  while (bench_deal_next(&nt2.deal, &lo, &hi)) nt_copy(nt2.d + lo, nt2.s + lo, hi - lo);
}

static void *nt_helper(void *unused) {
  (void)unused;
  for (;;) {
    pthread_barrier_wait(&nt2.go);
    if (nt2.stop) return NULL;
    nt_chunks();
    pthread_barrier_wait(&nt2.done);
  }
}

static void nt_copy2(char *d, const char *s, size_t bytes) {
  nt2.d = d, nt2.s = s;
  bench_deal_start(&nt2.deal, bytes, (size_t)1 << 20);
  pthread_barrier_wait(&nt2.go);
  nt_chunks();
  pthread_barrier_wait(&nt2.done);
}

typedef struct timing {
  double v[MAX_ROUNDS];
  int n;
} timing;

static void add(timing *t, double s) { t->v[t->n++] = s; }
static double median(timing *t) {
  qsort(t->v, (size_t)t->n, sizeof *t->v, cmp_double);
  return t->v[t->n / 2];
}
static double worst(const timing *t) { return t->v[t->n - 1]; }   /* after median() */

static void row(const char *what, timing *t, double bytes) {
  double m = median(t), unit = m < 1e-3 ? 1e6 : 1e3;   /* (in us below a millisecond) */
  printf("  %-26s %8.2f %s (worst %6.2f)  %6.2f GB/s\n", what, m * unit,
         unit == 1e6 ? "us" : "ms", worst(t) * unit, bytes / m * 1e-9);
}

#ifdef BENCH_HAVE_CUDA
/* ---- on a CUDA device -------------------------------------------------------- */
#define CUDA(call)                                                                       \
  do {                                                                                   \
    cudaError_t c_ = (call);                                                             \
    if (c_ != cudaSuccess) {                                                             \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(c_)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

/* The hand-written way without a kernel: one strided copy per field, AoS
   into planes one after the other (plane_step apart), or back. */
static void memcpy2d_fields(const record_case *rc, char *aos, char *planes, size_t n, bool out,
                            enum cudaMemcpyKind kind) {
  for (size_t f = 0; f < rc->n_fields; f++) {
    size_t sz = rc->fields[f].size;
    char *rec = aos + rc->fields[f].offset;
    if (out) CUDA(cudaMemcpy2D(planes, sz, rec, rc->size, sz, n, kind));
    else CUDA(cudaMemcpy2D(rec, rc->size, planes, sz, sz, n, kind));
    planes += plane_step(n, sz);
  }
}

/* The whole of an untiled array: its one tile, whose ptr and fields are
   where its bytes are (on the device too). */
static mmbArrayTile *whole(mmbArray *a) {
  mmbArrayTile *t;
  CHECK(mmb_tile_at(a, &(mmbIndex){1, {0}}, &t));
  return t;
}

/* The device's planes of soa, each against the host's (plane_step apart). */
static bool planes_agree(const record_case *rc, mmbArray *soa, const char *planes, size_t n) {
  char *got = malloc(n * rc->size);   /* (room for the widest field: a record holds it) */
  bool same = got != NULL;
  for (size_t f = 0; same && f < rc->n_fields; f++) {
    mmbField fl;
    CHECK(mmb_tile_get_field(whole(soa), f, &fl));
    size_t sz = rc->fields[f].size;
    CUDA(cudaMemcpy2D(got, sz, fl.ptr, fl.byte_stride[0], sz, n, cudaMemcpyDeviceToHost));
    same = !memcmp(got, planes, n * sz);
    planes += plane_step(n, sz);
  }
  free(got);
  return same;
}

static void device_section(int rounds) {
  mmbMemSpace *gpu, *pinned;
  if (mmb_request_space(MMB_GDRAM, MMB_GPU_CUDA, NULL, &gpu) != MMB_OK) {
    printf("on a CUDA device: none here, skipped\n");
    return;
  }
  CHECK(mmb_request_space(MMB_DRAM, MMB_GPU_CUDA, NULL, &pinned));
  mmbMemInterface *dev, *pin;
  CHECK(mmb_request_interface(gpu, NULL, &dev));
  CHECK(mmb_request_interface(pinned, NULL, &pin));
  struct cudaDeviceProp prop;
  CUDA(cudaGetDeviceProperties(&prop, 0));
  printf("\non CUDA device 0 (%s): the conversion kernel; host arrays pinned; %d rounds, "
         "medians (worst)\n", prop.name, rounds);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const record_case *rc = &cases[c];
    size_t n = BYTES / rc->size, aos_bytes = n * rc->size, soa_bytes = planes_bytes(rc, n);
    mmbLayout *la, *ls;
    CHECK(mmb_layout_create_record(rc->fields, rc->n_fields, rc->size, MMB_RECORD_AOS, 1,
                                   MMB_ROWMAJOR, (mmbLayoutPadding){0}, &la));
    CHECK(mmb_layout_create_record(rc->fields, rc->n_fields, rc->size, MMB_RECORD_SOA, 1,
                                   MMB_ROWMAJOR, (mmbLayoutPadding){0}, &ls));
    mmbDimensions d = {1, {n}};
    mmbArray *h_aos, *h_back, *d_aos, *d_soa;
    CHECK(mmb_array_create(&d, la, pin, MMB_READ_WRITE, &h_aos));
    CHECK(mmb_array_create(&d, la, pin, MMB_READ_WRITE, &h_back));
    CHECK(mmb_array_create(&d, la, dev, MMB_READ_WRITE, &d_aos));
    CHECK(mmb_array_create(&d, ls, dev, MMB_READ_WRITE, &d_soa));
    mmbAllocation *raw_a, *raw_b;   /* the plain copies' bytes on the device */
    CHECK(mmb_allocate(aos_bytes, dev, &raw_a));
    CHECK(mmb_allocate(aos_bytes, dev, &raw_b));
    /* (planes zeroed: their gaps are compared too) */
    char *a = mmb_array_ptr(h_aos), *back = mmb_array_ptr(h_back), *planes = calloc(1, soa_bytes);
    char *da = mmb_allocation_ptr(raw_a), *db = mmb_allocation_ptr(raw_b);
    char *d_aos_ptr = whole(d_aos)->ptr;
    if (!planes || !a || !back || !da || !db || !d_aos_ptr) exit(1);
    for (size_t i = 0; i < aos_bytes; i++) a[i] = (char)(i * 7 + c);
    rc->out(a, planes, n);
    CHECK(mmb_array_copy(d_aos, h_aos));   /* one layout: a plain copy; warm-ups below */
    CHECK(mmb_array_copy(d_soa, d_aos));
    CHECK(mmb_array_copy(d_aos, d_soa));
    CHECK(mmb_array_copy(d_soa, h_aos));
    CHECK(mmb_array_copy(h_back, d_soa));
    CUDA(cudaMemcpy(da, a, aos_bytes, cudaMemcpyHostToDevice));
    CUDA(cudaMemcpy(db, da, aos_bytes, cudaMemcpyDeviceToDevice));
    memcpy2d_fields(rc, da, db, n, true, cudaMemcpyDeviceToDevice);
    CUDA(cudaDeviceSynchronize());
    timing t[10] = {0};
    enum { DD_TO, DD_FROM, DD_COPY, DD_2D, HD_TO, HD_COPY, HD_2D, DH_FROM, DH_COPY, DH_2D };
    for (int r = 0; r < rounds; r++) {
      double t0;
#define TIMED(slot, call)                 \
  t0 = now();                             \
  call;                                   \
  CUDA(cudaDeviceSynchronize());          \
  add(&t[slot], now() - t0)
      TIMED(DD_TO, CHECK(mmb_array_copy(d_soa, d_aos)));
      TIMED(DD_COPY, CUDA(cudaMemcpy(db, da, aos_bytes, cudaMemcpyDeviceToDevice)));
      TIMED(DD_2D, memcpy2d_fields(rc, d_aos_ptr, db, n, true, cudaMemcpyDeviceToDevice));
      TIMED(DD_FROM, CHECK(mmb_array_copy(d_aos, d_soa)));
      TIMED(HD_TO, CHECK(mmb_array_copy(d_soa, h_aos)));
      TIMED(HD_COPY, CUDA(cudaMemcpy(da, a, aos_bytes, cudaMemcpyHostToDevice)));
      TIMED(HD_2D, memcpy2d_fields(rc, a, db, n, true, cudaMemcpyHostToDevice));
      TIMED(DH_FROM, CHECK(mmb_array_copy(h_back, d_soa)));
      TIMED(DH_COPY, CUDA(cudaMemcpy(back, da, aos_bytes, cudaMemcpyDeviceToHost)));
      TIMED(DH_2D, memcpy2d_fields(rc, back, db, n, false, cudaMemcpyDeviceToHost));
#undef TIMED
    }
    /* the conversions are exact: the device's planes are the host loop's,
       and the AoS brought back holds the same fields */
    CHECK(mmb_array_copy(d_soa, h_aos));
    bool ok = planes_agree(rc, d_soa, planes, n);
    CHECK(mmb_array_copy(d_soa, d_aos));   /* (d_aos came back from the same planes) */
    ok = ok && planes_agree(rc, d_soa, planes, n);
    memset(back, 0, aos_bytes);
    CHECK(mmb_array_copy(h_back, d_soa));
    char *planes2 = calloc(1, soa_bytes);
    if (!planes2) exit(1);
    rc->out(back, planes2, n);
    ok = ok && !memcmp(planes, planes2, soa_bytes);
    free(planes2);
    if (!ok) {
      fprintf(stderr, "bench-records: the device's conversion of %s differs from the host's\n",
              rc->name);
      exit(1);
    }
    printf("%s: %zu records of %zu B (%zu MiB)\n", rc->name, n, rc->size, aos_bytes >> 20);
    row("mmb AoS -> SoA on device", &t[DD_TO], (double)aos_bytes);
    row("mmb SoA -> AoS on device", &t[DD_FROM], (double)aos_bytes);
    row("cudaMemcpy on device", &t[DD_COPY], (double)aos_bytes);
    row("cudaMemcpy2D per field", &t[DD_2D], (double)aos_bytes);
    row("mmb host AoS -> dev SoA", &t[HD_TO], (double)aos_bytes);
    row("cudaMemcpy host -> dev", &t[HD_COPY], (double)aos_bytes);
    row("cudaMemcpy2D per field", &t[HD_2D], (double)aos_bytes);
    row("mmb dev SoA -> host AoS", &t[DH_FROM], (double)aos_bytes);
    row("cudaMemcpy dev -> host", &t[DH_COPY], (double)aos_bytes);
    row("cudaMemcpy2D per field", &t[DH_2D], (double)aos_bytes);
    printf("  ratio vs cudaMemcpy: on device AoS->SoA %.2fx, SoA->AoS %.2fx; host->dev %.2fx, "
           "dev->host %.2fx (target >= 0.8)\n",
           median(&t[DD_COPY]) / median(&t[DD_TO]), median(&t[DD_COPY]) / median(&t[DD_FROM]),
           median(&t[HD_COPY]) / median(&t[HD_TO]), median(&t[DH_COPY]) / median(&t[DH_FROM]));
    printf("  ratio vs cudaMemcpy2D per field: on device %.2fx, host->dev %.2fx, "
           "dev->host %.2fx\n", median(&t[DD_2D]) / median(&t[DD_TO]),
           median(&t[HD_2D]) / median(&t[HD_TO]), median(&t[DH_2D]) / median(&t[DH_FROM]));
    mmbArray *arrays[] = {h_aos, h_back, d_aos, d_soa};
    for (size_t i = 0; i < 4; i++) CHECK(mmb_array_destroy(arrays[i]));
    CHECK(mmb_free(raw_a));
    CHECK(mmb_free(raw_b));
    CHECK(mmb_layout_destroy(la));
    CHECK(mmb_layout_destroy(ls));
    free(planes);
  }
  CHECK(mmb_interface_destroy(dev));
  CHECK(mmb_interface_destroy(pin));
}
#else
static void device_section(int rounds) {
  (void)rounds;
  printf("on a CUDA device: built without CUDA, skipped\n");
}
#endif

/* A size: bytes, or with K or M. */
static size_t parse_size(const char *s) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  unsigned shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : 0;
  if (shift) end++;
  return *end || *s == '-' || v > (SIZE_MAX >> shift) ? 0 : (size_t)v << shift;
}

/* The AoS and SoA layouts of rc's records and an array of each, of dims d,
   on iface. */
static void record_arrays(const record_case *rc, const mmbDimensions *d, mmbMemInterface *iface,
                          mmbLayout **la, mmbLayout **ls, mmbArray **aos, mmbArray **soa) {
  CHECK(mmb_layout_create_record(rc->fields, rc->n_fields, rc->size, MMB_RECORD_AOS, d->size,
                                 MMB_ROWMAJOR, (mmbLayoutPadding){0}, la));
  CHECK(mmb_layout_create_record(rc->fields, rc->n_fields, rc->size, MMB_RECORD_SOA, d->size,
                                 MMB_ROWMAJOR, (mmbLayoutPadding){0}, ls));
  CHECK(mmb_array_create(d, *la, iface, MMB_READ_WRITE, aos));
  CHECK(mmb_array_create(d, *ls, iface, MMB_READ_WRITE, soa));
}

/* ---- particles tile by tile ------------------------------------------------ */
/* Every tile of array s (a grid of g x g) copied into d's, by mmb_tile_copy. */
static void tiles_copy(mmbArray *d, mmbArray *s, size_t g) {
  for (size_t i = 0; i < g; i++)
    for (size_t j = 0; j < g; j++) {
      mmbArrayTile *td, *ts;
      CHECK(mmb_tile_at(d, &(mmbIndex){2, {i, j}}, &td));
      CHECK(mmb_tile_at(s, &(mmbIndex){2, {i, j}}, &ts));
      CHECK(mmb_tile_copy(td, ts));
    }
}

/* The same tiles (t x t of a side x side array of esize-byte elements)
   between two plain buffers, a memcpy per tile row. */
static void rows_copy(char *d, const char *s, size_t side, size_t t, size_t esize) {
  for (size_t ti = 0; ti < side / t; ti++)
    for (size_t tj = 0; tj < side / t; tj++)
      for (size_t r = 0; r < t; r++) {
        size_t o = ((ti * t + r) * side + tj * t) * esize;
        memcpy(d + o, s + o, t * esize);
      }
}

/* Runs `what` reps times and adds the mean to the timing t. */
#define TIMED(t, reps, what)                            \
  do {                                                  \
    double t0_ = now();                                 \
    for (size_t k_ = 0; k_ < (reps); k_++) what;        \
    add(&(t), (now() - t0_) / (double)(reps));          \
  } while (0)

/* Particles tile by tile: a square array of about `bytes` of them (its
   side a multiple of 64) in 32 x 32 and 64 x 64 tiles, each tile copied
   by mmb_tile_copy into an SoA array's and back (a tile's rows are short
   runs, each converted by a call of its own), against a memcpy per tile
   row of the same bytes between two plain buffers, round by round in
   turn. */
static void tiles_section(mmbMemInterface *iface, int rounds, size_t bytes) {
  const record_case *rc = &cases[2];
  size_t side = 64;
  while ((side + 64) * (side + 64) * rc->size <= bytes) side += 64;
  size_t n = side * side, all = n * rc->size, reps = BYTES / all ? BYTES / all : 1;
  mmbLayout *la, *ls;
  mmbArray *aos, *soa;
  record_arrays(rc, &(mmbDimensions){2, {side, side}}, iface, &la, &ls, &aos, &soa);
  r32 *a = mmb_array_ptr(aos);
  for (size_t i = 0; i < n; i++)
    a[i] = (r32){.x = (float)i, .y = 1, .z = 2, .flag = (char)i, .mass = (double)i};
  char *x = aligned_alloc(64, all), *y = aligned_alloc(64, all);
  if (!x || !y) exit(1);
  memset(x, 1, all);
  memset(y, 2, all);
  for (size_t t = 32; t <= 64; t *= 2) {
    size_t g = side / t;
    CHECK(mmb_array_tile(aos, &(mmbDimensions){2, {t, t}}));
    CHECK(mmb_array_tile(soa, &(mmbDimensions){2, {t, t}}));
    tiles_copy(soa, aos, g);   /* warm-up: pages faulted in */
    tiles_copy(aos, soa, g);
    timing t_to = {0}, t_from = {0}, t_rows = {0};
    for (int r = 0; r < rounds; r++) {
      TIMED(t_to, reps, tiles_copy(soa, aos, g));
      TIMED(t_rows, reps, rows_copy(y, x, side, t, rc->size));
      TIMED(t_from, reps, tiles_copy(aos, soa, g));
    }
    mmbField fx;   /* the conversion is exact: x where the particles put it */
    CHECK(mmb_array_get_field(soa, 0, &fx));
    for (size_t i = 0; i < n; i++)
      if (((const float *)fx.ptr)[i] != a[i].x) {
        fprintf(stderr, "bench-records: a tile's x differs at particle %zu\n", i);
        exit(1);
      }
    printf("particles in %zu x %zu tiles of a %zu x %zu array (%zu KiB)\n", t, t, side, side,
           all >> 10);
    row("mmb AoS -> SoA, tile by tile", &t_to, (double)all);
    row("mmb SoA -> AoS, tile by tile", &t_from, (double)all);
    row("memcpy, a tile row at a time", &t_rows, (double)all);
    printf("  ratio vs memcpy by tile rows:   AoS->SoA %.2fx, SoA->AoS %.2fx\n",
           median(&t_rows) / median(&t_to), median(&t_rows) / median(&t_from));
  }
  free(x);
  free(y);
  CHECK(mmb_array_destroy(aos));
  CHECK(mmb_array_destroy(soa));
  CHECK(mmb_layout_destroy(la));
  CHECK(mmb_layout_destroy(ls));
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 7;
  if (rounds < 1 || rounds > MAX_ROUNDS) rounds = 7;
  size_t bytes = argc > 2 ? parse_size(argv[2]) : (size_t)BYTES;
  if (bytes < 4096 || bytes > (size_t)BYTES) {
    fprintf(stderr, "usage: bench-records [rounds [bytes: 4K to 64M]]\n");
    return 2;
  }
  size_t reps = BYTES / bytes;
  CHECK(mmb_init(NULL));
  mmbMemSpace *dram;
  mmbMemInterface *iface;
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  CHECK(mmb_request_interface(dram, NULL, &iface));
  mmbMemInterface *iface2 = NULL;   /* conversions split over two threads */
  pthread_t helper;
  if (bytes == (size_t)BYTES && sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
    CHECK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.copy_threads = 2}, &iface2));
    if (pthread_barrier_init(&nt2.go, NULL, 2) || pthread_barrier_init(&nt2.done, NULL, 2) ||
        pthread_create(&helper, NULL, nt_helper, NULL))
      return 1;
  }
  char *src = aligned_alloc(64, BYTES), *dst = aligned_alloc(64, BYTES);
  if (!src || !dst) return 1;
  memset(src, 1, BYTES);
  memset(dst, 2, BYTES);
  printf("bench-records: %zu KiB of AoS records, %d rounds (each operation %zu times a round), "
         "medians (worst)\n", bytes >> 10, rounds, reps);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const record_case *rc = &cases[c];
    size_t n = bytes / rc->size, aos_bytes = n * rc->size;
    mmbLayout *la, *ls;
    mmbArray *aos, *soa;
    mmbDimensions d = {1, {n}};
    record_arrays(rc, &d, iface, &la, &ls, &aos, &soa);
    char *a = mmb_array_ptr(aos), *planes = malloc(planes_bytes(rc, n));
    for (size_t i = 0; i < aos_bytes; i++) a[i] = (char)(i * 7);
    memset(mmb_array_ptr(soa), 0, n);   /* (touched by the warm-up below) */
    CHECK(mmb_array_copy(soa, aos));    /* warm-up: pages faulted in */
    CHECK(mmb_array_copy(aos, soa));
    mmbArray *aos2 = NULL, *soa2 = NULL;
    if (iface2) {
      CHECK(mmb_array_create(&d, la, iface2, MMB_READ_WRITE, &aos2));
      CHECK(mmb_array_create(&d, ls, iface2, MMB_READ_WRITE, &soa2));
      memcpy(mmb_array_ptr(aos2), a, aos_bytes);
      memset(mmb_array_ptr(soa2), 0, n);
      CHECK(mmb_array_copy(soa2, aos2));
      CHECK(mmb_array_copy(aos2, soa2));
    }
    rc->out(a, planes, n);
    timing t_to = {0}, t_from = {0}, t_memcpy = {0}, t_nt = {0}, t_hand_out = {0}, t_hand_in = {0};
    timing t_to2 = {0}, t_from2 = {0}, t_nt2 = {0};
    for (int r = 0; r < rounds; r++) {
      TIMED(t_to, reps, CHECK(mmb_array_copy(soa, aos)));
      TIMED(t_memcpy, reps, memcpy(dst, src, aos_bytes));
      TIMED(t_hand_out, reps, rc->out(a, planes, n));
      TIMED(t_nt, reps, nt_copy(dst, src, aos_bytes & ~(size_t)127));
      TIMED(t_from, reps, CHECK(mmb_array_copy(aos, soa)));
      TIMED(t_hand_in, reps, rc->in(a, planes, n));
      if (!iface2) continue;
      /* each first in a third of the rounds (see above) */
      for (int k = 0; k < 3; k++) {
        int which = (r + k) % 3;
        if (which == 0) TIMED(t_to2, reps, CHECK(mmb_array_copy(soa2, aos2)));
        else if (which == 1) TIMED(t_nt2, reps, nt_copy2(dst, src, aos_bytes & ~(size_t)127));
        else TIMED(t_from2, reps, CHECK(mmb_array_copy(aos2, soa2)));
      }
    }
    /* the conversion is exact: back and forth leaves the AoS fields as they were */
    CHECK(mmb_array_copy(soa, aos));
    mmbField f;
    CHECK(mmb_array_get_field(soa, 0, &f));
    if (memcmp(f.ptr, planes, n * rc->fields[0].size)) {
      fprintf(stderr, "bench-records: field 0 differs from the hand-written loop's\n");
      return 1;
    }
    printf("%s: %zu records of %zu B (%zu %s)\n", rc->name, n, rc->size,
           aos_bytes >> (aos_bytes >> 20 ? 20 : 10), aos_bytes >> 20 ? "MiB" : "KiB");
    row("mmb AoS -> SoA", &t_to, (double)aos_bytes);
    row("mmb SoA -> AoS", &t_from, (double)aos_bytes);
    row("memcpy (same bytes)", &t_memcpy, (double)aos_bytes);
    row("non-temporal copy", &t_nt, (double)aos_bytes);
    row("per-field loop AoS -> SoA", &t_hand_out, (double)aos_bytes);
    row("per-field loop SoA -> AoS", &t_hand_in, (double)aos_bytes);
    double copy = median(&t_memcpy) < median(&t_nt) ? median(&t_memcpy) : median(&t_nt);
    printf("  ratio vs the faster plain copy: AoS->SoA %.2fx, SoA->AoS %.2fx%s\n",
           copy / median(&t_to), copy / median(&t_from),
           bytes == (size_t)BYTES ? " (target >= 0.8)" : "");
    printf("  ratio vs the per-field loop:    AoS->SoA %.2fx, SoA->AoS %.2fx\n",
           median(&t_hand_out) / median(&t_to), median(&t_hand_in) / median(&t_from));
    if (iface2) {
      CHECK(mmb_array_copy(soa2, aos2));   /* (the same records: the same planes) */
      CHECK(mmb_array_get_field(soa2, 0, &f));
      if (memcmp(f.ptr, planes, n * rc->fields[0].size)) {
        fprintf(stderr, "bench-records: field 0 split over two threads differs\n");
        return 1;
      }
      row("mmb AoS -> SoA, 2 threads", &t_to2, (double)aos_bytes);
      row("mmb SoA -> AoS, 2 threads", &t_from2, (double)aos_bytes);
      row("non-temporal, 2 threads", &t_nt2, (double)aos_bytes);
      printf("  ratio vs the 2-thread copy:     AoS->SoA %.2fx, SoA->AoS %.2fx (target >= 0.8)\n",
             median(&t_nt2) / median(&t_to2), median(&t_nt2) / median(&t_from2));
      CHECK(mmb_array_destroy(aos2));
      CHECK(mmb_array_destroy(soa2));
    }
    CHECK(mmb_array_destroy(aos));
    CHECK(mmb_array_destroy(soa));
    CHECK(mmb_layout_destroy(la));
    CHECK(mmb_layout_destroy(ls));
    free(planes);
  }
  free(src);
  free(dst);
  tiles_section(iface, rounds, bytes);
  if (iface2) {
    nt2.stop = true;   /* the baseline's helper returns */
    pthread_barrier_wait(&nt2.go);
    pthread_join(helper, NULL);
    CHECK(mmb_interface_destroy(iface2));
  }
  device_section(rounds);
  CHECK(mmb_finalize());
  return 0;
}
