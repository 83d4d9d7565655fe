/* Records (mmb_layout_create_record): layouts of named fields, stored AoS
   or SoA, and every transport converting between them: copies of arrays
   and tiles, duplicates, migrations and overwrite merges, synchronous and
   on a queue, on every host provider pair and through the fake device (its
   side staged), with odd field sizes, padded records, padded rows and both
   orders. The values are checked field by field (mmb_array_get_field,
   mmb_tile_get_field) against a reference: byte b of field f of element e
   is a function of (e, f, b, salt). */
#include "arrays.h"
#include "fake_device.h"
#include "tile/internal.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

/* (e >> 8: a byte field's values do not repeat every 256 elements, where
   a block copied from the wrong place would pass) */
static unsigned char ref_byte(size_t e, size_t f, size_t b, unsigned salt) {
  return (unsigned char)(e * 131u + (e >> 8) * 101u + f * 17u + b * 7u + salt * 29u + 1u);
}

/* The linear (row-major) number of an index. */
static size_t linear(const size_t *idx, const size_t *dims, size_t rank) {
  size_t e = 0;
  for (size_t k = 0; k < rank; k++) e = e * dims[k] + idx[k];
  return e;
}

/* A box of indices [lo, hi) holding salt. */
typedef struct box {
  size_t lo[MMB_MAX_DIMS], hi[MMB_MAX_DIMS];
  unsigned salt;
} box;

/* Writes (fill) or checks every field of every element of a host array:
   an element inside one of the n boxes with the salt of the last box it
   is in, the others with `salt`. */
static void walk_boxes(mmbArray *a, unsigned salt, const box *boxes, size_t n, bool fill) {
  mmbDimensions d;
  OK(mmb_array_get_dims(a, &d));
  size_t idx[MMB_MAX_DIMS] = {0}, lo[MMB_MAX_DIMS] = {0};
  do {
    unsigned s = salt;
    for (size_t i = 0; i < n; i++) {
      bool in = true;
      for (size_t k = 0; k < d.size; k++)
        in = in && boxes[i].lo[k] <= idx[k] && idx[k] < boxes[i].hi[k];
      if (in) s = boxes[i].salt;
    }
    size_t e = linear(idx, d.d, d.size);
    mmbField fld;
    for (size_t f = 0; mmb_array_get_field(a, f, &fld) == MMB_OK; f++) {
      unsigned char *p = fld.ptr;
      for (size_t k = 0; k < d.size; k++) p += idx[k] * fld.byte_stride[k];
      for (size_t b = 0; b < fld.size; b++) {
        if (fill) p[b] = ref_byte(e, f, b, s);
        else cr_assert_eq(p[b], ref_byte(e, f, b, s), "element %zu field %zu byte %zu (salt %u)",
                          e, f, b, s);
      }
    }
  } while (index_next(idx, lo, d.d, d.size));
}

/* Writes (fill) or checks every field of every element with one salt. */
static void walk_array(mmbArray *a, unsigned salt, bool fill) {
  walk_boxes(a, salt, NULL, 0, fill);
}

/* Writes (fill) or checks every field of a host tile of an array of
   extents `dims`. */
static void walk_tile(const mmbArrayTile *t, const size_t *dims, unsigned salt, bool fill) {
  size_t idx[MMB_MAX_DIMS], lo[MMB_MAX_DIMS];
  for (size_t k = 0; k < t->rank; k++) idx[k] = lo[k] = t->lower[k];
  do {
    size_t e = linear(idx, dims, t->rank);
    mmbField fld;
    for (size_t f = 0; mmb_tile_get_field(t, f, &fld) == MMB_OK; f++) {
      unsigned char *p = fld.ptr;
      for (size_t k = 0; k < t->rank; k++) p += (idx[k] - t->lower[k]) * fld.byte_stride[k];
      for (size_t b = 0; b < fld.size; b++) {
        if (fill) p[b] = ref_byte(e, f, b, salt);
        else cr_assert_eq(p[b], ref_byte(e, f, b, salt), "element %zu field %zu", e, f);
      }
    }
  } while (index_next(idx, lo, t->upper, t->rank));
}

static void check_tile(const mmbArrayTile *t, const size_t *dims, unsigned salt) {
  walk_tile(t, dims, salt, false);
}

/* A particle: 3 floats, a char flag, a double (C pads it to 24 bytes). */
typedef struct particle {
  float x, y, z;
  char flag;
  double mass;
} particle;

static const mmbRecordField particle_fields[] = {
  {"x", sizeof(float), offsetof(particle, x)},
  {"y", sizeof(float), offsetof(particle, y)},
  {"z", sizeof(float), offsetof(particle, z)},
  {"flag", 1, offsetof(particle, flag)},
  {"mass", sizeof(double), offsetof(particle, mass)},
};

static mmbLayout *particles(mmbRecordKind kind, size_t rank, mmbLayoutOrder order, size_t ra) {
  mmbLayout *l;
  OK(mmb_layout_create_record(particle_fields, 5, 0, kind, rank, order,
                              (mmbLayoutPadding){.row_alignment = ra}, &l));
  return l;
}

static mmbArray *make(mmbMemInterface *iface, const mmbDimensions *d, mmbLayout *l) {
  mmbArray *a;
  OK(mmb_array_create(d, l, iface, MMB_READ_WRITE, &a));
  return a;
}

MMB_TEST(record, layouts_describe_their_fields) {
  mmbLayout *aos = particles(MMB_RECORD_AOS, 1, MMB_ROWMAJOR, 0);
  mmbLayout *soa = particles(MMB_RECORD_SOA, 1, MMB_ROWMAJOR, 0);
  mmbRecordInfo ri;
  OK(mmb_layout_get_record(aos, &ri));
  cr_assert(ri.n_fields == 5 && ri.kind == MMB_RECORD_AOS && ri.record_size == sizeof(particle) &&
            ri.payload == 21);
  mmbLayoutInfo li;
  OK(mmb_layout_get_info(aos, &li));
  cr_assert_eq(li.element_size, sizeof(particle));
  OK(mmb_layout_get_info(soa, &li));
  cr_assert_eq(li.element_size, 21, "an SoA element is its payload");
  mmbRecordField f;
  OK(mmb_layout_get_field(soa, 4, &f));
  cr_assert(!strcmp(f.name, "mass") && f.size == 8 && f.offset == offsetof(particle, mass));
  size_t i;
  OK(mmb_layout_find_field(aos, "flag", &i));
  cr_assert_eq(i, 3);
  cr_assert_eq(mmb_layout_find_field(aos, "nope", &i), MMB_INVALID_ARG);
  cr_assert_eq(mmb_layout_get_field(aos, 5, &f), MMB_INVALID_ARG);
  /* the C compiler's padding, when no record size is given */
  mmbLayout *l;
  OK(mmb_layout_create_record((mmbRecordField[]){{"a", 1, 0}, {"b", 1, 1}, {"c", 1, 2}}, 3, 0,
                              MMB_RECORD_AOS, 1, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &l));
  OK(mmb_layout_get_record(l, &ri));
  cr_assert_eq(ri.record_size, 3);
  OK(mmb_layout_destroy(l));
  OK(mmb_layout_create_record((mmbRecordField[]){{"v", 12, 0}, {"w", 2, 12}}, 2, 0,
                              MMB_RECORD_AOS, 1, MMB_ROWMAJOR, (mmbLayoutPadding){0}, &l));
  OK(mmb_layout_get_record(l, &ri));
  cr_assert_eq(ri.record_size, 16, "12 bytes align to 4: 14 rounds up to 16");
  OK(mmb_layout_destroy(l));
  /* a regular layout has no records */
  mmbLayout *plain = test_layout(8, 1, MMB_ROWMAJOR, 0, MMB_TYPE_BYTES);
  OK(mmb_layout_get_record(plain, &ri));
  cr_assert_eq(ri.n_fields, 0);
  cr_assert_eq(mmb_layout_get_field(plain, 0, &f), MMB_INVALID_ARG);
  cr_assert_eq(mmb_layout_find_field(plain, "x", &i), MMB_INVALID_ARG);
  cr_assert_eq(mmb_layout_set_element_type(aos, MMB_TYPE_DOUBLE), MMB_INVALID_ARG);
  OK(mmb_layout_destroy(plain));
  OK(mmb_layout_destroy(aos));
  OK(mmb_layout_destroy(soa));
}

MMB_TEST(record, bad_records_are_refused) {
  mmbLayout *l = NULL;
  mmbLayoutPadding none = {0};
  mmbRecordField two[] = {{"a", 4, 0}, {"b", 4, 4}};
#define BAD(fields, n, rs, kind, pad)                                                       \
  cr_assert_eq(mmb_layout_create_record(fields, n, rs, kind, 1, MMB_ROWMAJOR, pad, &l),     \
               MMB_INVALID_ARG, #fields " " #n " " #rs);                                    \
  cr_assert_null(l)
  BAD(NULL, 2, 0, MMB_RECORD_AOS, none);
  BAD(two, 0, 0, MMB_RECORD_AOS, none);
  BAD(two, MMB_MAX_FIELDS + 1, 0, MMB_RECORD_AOS, none);
  BAD(two, 2, 6, MMB_RECORD_AOS, none);                      /* b ends at 8, past 6 */
  BAD(two, 2, 0, (mmbRecordKind)7, none);
  BAD(((mmbRecordField[]){{"a", 0, 0}}), 1, 0, MMB_RECORD_AOS, none);
  BAD(((mmbRecordField[]){{"a", 4, 0}, {"b", 4, 2}}), 2, 0, MMB_RECORD_AOS, none);   /* overlap */
  BAD(((mmbRecordField[]){{"a", 4, 0}, {"a", 4, 4}}), 2, 0, MMB_RECORD_SOA, none);   /* twice */
  BAD(((mmbRecordField[]){{"a_name_of_thirty_two_characters_", 4, 0}}), 1, 0, MMB_RECORD_AOS,
      none);
  BAD(((mmbRecordField[]){{"a", 4, SIZE_MAX - 1}}), 1, 0, MMB_RECORD_AOS, none);
  /* padding: a multiple of the record (AoS), of every field (SoA) */
  BAD(((mmbRecordField[]){{"a", 4, 0}, {"b", 8, 4}}), 2, 12, MMB_RECORD_AOS,
      ((mmbLayoutPadding){64}));
  BAD(((mmbRecordField[]){{"a", 3, 0}}), 1, 0, MMB_RECORD_SOA, ((mmbLayoutPadding){64}));
#undef BAD
  cr_assert_eq(mmb_layout_create_record(two, 2, 0, MMB_RECORD_AOS, 0, MMB_ROWMAJOR, none, &l),
               MMB_INVALID_ARG);
  cr_assert_eq(mmb_layout_create_record(two, 2, 0, MMB_RECORD_AOS, 1, MMB_ROWMAJOR, none, NULL),
               MMB_INVALID_ARG);
  /* unnamed fields are fine, and may be many */
  OK(mmb_layout_create_record((mmbRecordField[]){{NULL, 4, 0}, {NULL, 4, 4}}, 2, 0,
                              MMB_RECORD_SOA, 1, MMB_ROWMAJOR, none, &l));
  OK(mmb_layout_destroy(l));
}

/* AoS -> SoA -> AoS through a duplicate and an overwrite merge, from and to
   an interface of each kind; the SoA side rewritten between. */
static void duplicate_round_trip(mmbMemInterface *home, mmbMemInterface *away, bool away_host) {
  mmbDimensions d = dims2(37, 29);
  mmbLayout *aos = particles(MMB_RECORD_AOS, 2, MMB_ROWMAJOR, 0);
  mmbLayout *soa = particles(MMB_RECORD_SOA, 2, MMB_COLMAJOR, 0);
  mmbArray *a = make(home, &d, aos), *s;
  walk_array(a, 1, true);
  OK(mmb_array_duplicate_layout(a, away, MMB_READ_WRITE, soa, &s));
  mmbArray *h = s;
  if (!away_host) OK(mmb_array_duplicate_layout(s, home, MMB_READ_WRITE, NULL, &h));
  walk_array(h, 1, false);
  walk_array(h, 2, true);
  if (!away_host) OK(mmb_array_merge(h, MMB_MERGE_OVERWRITE));
  OK(mmb_array_merge(s, MMB_MERGE_OVERWRITE));
  walk_array(a, 2, false);
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(aos));
  OK(mmb_layout_destroy(soa));
}

MMB_TEST(record, duplicates_convert_both_ways_on_every_host_provider_pair) {
  mmbProviderType host[] = {MMB_PROVIDER_SYSTEM, MMB_PROVIDER_PINNED};
  for (size_t i = 0; i < 2; i++)
    for (size_t j = 0; j < 2; j++)
      duplicate_round_trip(test_interface(host[i], 0), test_interface(host[j], 0), true);
}

/* Round trips through a device's memory: from the host, on the device,
   and back. */
static void through_a_device(mmbMemInterface *dev) {
  duplicate_round_trip(test_interface(MMB_PROVIDER_SYSTEM, 0), dev, false);
  /* and an array homed on the device, converted on its way to the host */
  mmbDimensions d = dims2(9, 70);
  mmbLayout *soa = particles(MMB_RECORD_SOA, 2, MMB_ROWMAJOR, 0);
  mmbLayout *aos = particles(MMB_RECORD_AOS, 2, MMB_ROWMAJOR, 0);
  mmbMemInterface *host = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *src = make(host, &d, soa), *on_dev, *back, *check;
  walk_array(src, 5, true);
  OK(mmb_array_duplicate_layout(src, dev, MMB_READ_WRITE, aos, &on_dev));   /* SoA -> AoS */
  OK(mmb_array_duplicate_layout(on_dev, dev, MMB_READ_WRITE, soa, &back));  /* both on it */
  OK(mmb_array_duplicate_layout(back, host, MMB_READ, aos, &check));
  walk_array(check, 5, false);
  OK(mmb_array_merge(check, MMB_MERGE_OVERWRITE));
  OK(mmb_array_merge(back, MMB_MERGE_OVERWRITE));
  OK(mmb_array_merge(on_dev, MMB_MERGE_OVERWRITE));
  OK(mmb_array_destroy(src));
  OK(mmb_layout_destroy(soa));
  OK(mmb_layout_destroy(aos));
}

/* The fake device: each device side staged and converted on the host. */
MMB_TEST(record, duplicates_convert_through_a_device) {
  mmbMemInterface *dev = fake_device_interface(0);
  cr_assert_not_null(dev);
  through_a_device(dev);
}

/* The CUDA path without a GPU: a provider in the CUDA slot whose memory the
   core cannot reach (the fake device's), and a runtime whose kernel runs
   the element moves here. Every conversion with a side on the "device" is
   its kernel's, the other side staged beside it. */
static int fake_devices(char *why, size_t len) { return 1; }

/* The "device" memory, so that the kernel can check it touches no other. */
static struct { char *p; size_t n; } on_device[64];
static mmbError cuda_alloc(void *state, size_t size, size_t alignment, unsigned flags, void **out) {
  mmbError e = dev_alloc(state, size, alignment, flags, out);
  for (size_t i = 0; e == MMB_OK && i < 64; i++)
    if (!on_device[i].p) {
      on_device[i].p = *out, on_device[i].n = size;
      return MMB_OK;
    }
  cr_assert_eq(e, MMB_OK, "more device blocks than the test keeps");
  return e;
}
static void cuda_free(void *state, void *ptr, size_t size, size_t alignment) {
  for (size_t i = 0; i < 64; i++)
    if (on_device[i].p == ptr) on_device[i].p = NULL;
  dev_free(state, ptr, size, alignment);
}
static bool device_memory(const char *p) {
  for (size_t i = 0; i < 64; i++)
    if (on_device[i].p && p >= on_device[i].p && p < on_device[i].p + on_device[i].n) return true;
  return false;
}

/* The moves as a device's kernels make them (os/record_move.h), blocks of
   T threads run here one thread after another, in reverse: into a run of
   records, staged in chunks of `chunk` elements (the stage holding
   garbage between them, as shared memory does), else each thread's
   groups. */
static void run_kernel(const mmb__record_moves *m, size_t T, size_t chunk) {
  mmb__record_run r;
  if (m->count < 2 || !mmb__record_run_of(m, true, &r)) {
    size_t span = T * MMB__MOVE_GROUP;
    for (size_t base = 0; base < m->count; base += span)
      for (size_t t = T; t-- > 0;) mmb__record_move_group(m, base + t, T);
    return;
  }
  size_t bytes = (chunk * r.step + 7) / 8 * 8;
  char *stage = aligned_alloc(8, bytes);
  cr_assert_not_null(stage);
  for (size_t first = 0; first < m->count; first += chunk) {
    size_t n = m->count - first < chunk ? m->count - first : chunk;
    memset(stage, 0xa5, bytes);
    if (r.gaps)
      for (size_t t = T; t-- > 0;) mmb__stage_zero(&r, n, stage, t, T);
    for (size_t t = T; t-- > 0;) mmb__stage_fields(m, &r, first, n, stage, t, T);
    for (size_t t = T; t-- > 0;) mmb__stage_write(&r, first, n, stage, t, T);
  }
  free(stage);
}

static int kernel_runs;
static mmbError fake_kernel(int device, const mmb__record_moves *m) {
  cr_assert_eq(device, 0);
  for (size_t f = 0; f < m->n_fields; f++)
    cr_assert(device_memory(m->d[f]) && device_memory(m->s[f]), "the kernel reaches the host");
  kernel_runs++;
  run_kernel(m, 7, 45);
  return MMB_OK;
}

MMB_TEST(record, a_cuda_devices_side_converts_in_its_kernel) {
  static const mmb__cuda_runtime rt = {.device_count = fake_devices, .convert = fake_kernel};
  static mmbProviderOps ops;
  ops = device_ops;
  ops.alloc = cuda_alloc;
  ops.free = cuda_free;
  const mmbProviderOps *cuda = mmb__provider_lookup(MMB_PROVIDER_CUDA);
  mmb__provider_install(MMB_PROVIDER_CUDA, &ops);
  mmb__os_set_cuda(&rt);
  /* its space: a layer no host provider serves, made a CUDA one's */
  mmbMemLayer layer;
  mmbMemSpace *gpu;
  mmbMemInterface *dev;
  OK(mmb_layer_register("FAKEGPU", &(mmbLayerProperties){.device_only = true}, &layer));
  OK(mmb_request_space(layer, MMB_CPU, NULL, &gpu));
  gpu->info.default_provider = MMB_PROVIDER_CUDA;
  OK(mmb_request_interface(gpu, NULL, &dev));
  through_a_device(dev);
  /* host AoS -> device SoA and back; host SoA -> device AoS, device AoS ->
     SoA on it, -> host AoS (read-only: its merge moves nothing); the two
     other merges back */
  cr_assert_eq(kernel_runs, 7, "%d kernel runs", kernel_runs);
  OK(mmb_interface_destroy(dev));
  mmb__os_set_cuda(NULL);
  mmb__provider_install(MMB_PROVIDER_CUDA, cuda);
}

/* A CUDA device: converted there by the kernel (skipped without one). */
MMB_TEST(record, duplicates_convert_on_a_cuda_device) {
  mmbMemInterface *dev = test_cuda_interface();
  through_a_device(dev);
  OK(mmb_interface_destroy(dev));
}

/* What a CUDA device's conversion kernel runs (os/record_move.h), run here
   on the host: blocks of T threads, chunks of `chunk` elements. */
static void kernel_moves(const mmb__view *d, const mmb__view *s, size_t T, size_t chunk) {
  mmb__record_moves m;
  mmb__record_moves_make(d, s, &m);
  run_kernel(&m, T, chunk);
}
static void kernel_copy_by(mmbArray *dst, mmbArray *src, size_t T, size_t chunk) {
  mmb__view d = mmb__array_view(dst), s = mmb__array_view(src);
  kernel_moves(&d, &s, T, chunk);
}
static void kernel_copy(mmbArray *dst, mmbArray *src) { kernel_copy_by(dst, src, 5, 13); }

/* A kernel's moves: a packed array of any rank moves as one dimension, a
   padded one keeps its rows; each field by the widest word both sides
   align to. */
MMB_TEST(record, kernel_moves_merge_packed_dimensions_and_move_by_words) {
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *aos = particles(MMB_RECORD_AOS, 3, MMB_ROWMAJOR, 0);
  mmbLayout *soa = particles(MMB_RECORD_SOA, 3, MMB_ROWMAJOR, 0);
  mmbLayout *padded = particles(MMB_RECORD_SOA, 3, MMB_ROWMAJOR, 64);
  mmbDimensions d = {3, {4, 5, 6}};
  mmbArray *a = make(sys, &d, aos), *s = make(sys, &d, soa), *p = make(sys, &d, padded);
  mmb__view va = mmb__array_view(a), vs = mmb__array_view(s), vp = mmb__array_view(p);
  mmb__record_moves m;
  mmb__record_moves_make(&vs, &va, &m);
  cr_assert(m.rank == 1 && m.count == 120 && m.dim[0] == 120 && m.ds[0] == 1 && m.ss[0] == 1,
            "rank %zu, count %zu", m.rank, m.count);
  cr_assert_eq(mmb__field_unit(&m, 0), 4, "a float on both sides");
  cr_assert_eq(mmb__field_unit(&m, 3), 1, "a char");
  cr_assert_eq(mmb__field_unit(&m, 4), 8, "a double in its plane and its record");
  mmb__record_run r;
  cr_assert(!mmb__record_run_of(&m, true, &r), "planes are no run of records");
  cr_assert(mmb__record_run_of(&m, false, &r), "the source is one");
  cr_assert(r.lo == mmb_array_ptr(a) && r.step == 24 && r.span == 24 && r.unit == 8 && r.gaps,
            "step %zu, span %zu, unit %zu", r.step, r.span, r.unit);
  mmb__record_moves_make(&vp, &va, &m);   /* rows of 6 padded to 64 bytes a plane */
  cr_assert(m.rank == 2 && m.count == 120 && m.dim[0] == 6 && m.dim[1] == 20 && m.ss[1] == 6,
            "rank %zu, dims %zu %zu", m.rank, m.dim[0], m.dim[1]);
  cr_assert(!mmb__record_run_of(&m, false, &r), "rows: no one run");
  walk_array(a, 9, true);
  kernel_copy(p, a);
  walk_array(p, 9, false);
  kernel_copy(s, p);   /* and both ways between padded and packed */
  walk_array(s, 9, false);
  memset(mmb_array_ptr(a), 0xff, 120 * sizeof(particle));
  kernel_copy(a, s);   /* records written whole: their padding zeroed, as the host streams them */
  walk_array(a, 9, false);
  for (size_t e = 0; e < 120; e++) {
    const unsigned char *rec = (const unsigned char *)mmb_array_ptr(a) + e * sizeof(particle);
    cr_assert(!rec[13] && !rec[14] && !rec[15], "record %zu's padding", e);
  }
  /* 3 floats in records of 16 bytes: no gap between the fields, 4 bytes
     after them, written as zeros where the window covers them (all but a
     chunk's last record), never as what the stage held (0xa5) */
  mmbLayout *xyz_, *xyz;
  OK(mmb_layout_create_record(particle_fields, 3, 16, MMB_RECORD_AOS, 1, MMB_ROWMAJOR,
                              (mmbLayoutPadding){0}, &xyz_));
  OK(mmb_layout_create_record(particle_fields, 3, 0, MMB_RECORD_SOA, 1, MMB_ROWMAJOR,
                              (mmbLayoutPadding){0}, &xyz));
  mmbDimensions line = {1, {100}};
  mmbArray *r16 = make(sys, &line, xyz_), *planes = make(sys, &line, xyz);
  walk_array(planes, 4, true);
  memset(mmb_array_ptr(r16), 0xff, 100 * 16);
  va = mmb__array_view(r16);
  vs = mmb__array_view(planes);
  mmb__record_moves_make(&va, &vs, &m);
  cr_assert(mmb__record_run_of(&m, true, &r) && r.span == 12 && r.step == 16 && r.gaps);
  kernel_copy(r16, planes);
  walk_array(r16, 4, false);
  for (size_t e = 0; e < 100; e++) {
    const unsigned char *rec = (const unsigned char *)mmb_array_ptr(r16) + e * 16;
    for (int b = 12; b < 16; b++)
      cr_assert_eq(rec[b], e % 13 == 12 || e == 99 ? 0xff : 0, "record %zu's padding", e);
  }
  mmbArray *arrays[] = {a, s, p, r16, planes};
  for (size_t i = 0; i < 5; i++) OK(mmb_array_destroy(arrays[i]));
  mmbLayout *layouts[] = {aos, soa, padded, xyz_, xyz};
  for (size_t i = 0; i < 5; i++) OK(mmb_layout_destroy(layouts[i]));
}

/* Random records (fixed seed): 3 to 8 fields of odd sizes at shuffled
   offsets with padding, rank 1 to 3, either order, padded rows; copied
   AoS -> SoA -> AoS' (another AoS shape) and checked against the model,
   by mmb_array_copy and by a device kernel's moves (blocks of 1 to 9
   threads, chunks of 1 to 64 elements). */
MMB_TEST(record, random_records_copy_between_any_two_storages) {
  uint64_t seed = 0x5eed;
  static const size_t sizes[] = {1, 2, 3, 4, 5, 8, 12, 16, 7};
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  for (int round = 0; round < 40; round++) {
    size_t n = 3 + test_rand(&seed) % 6, rank = 1 + test_rand(&seed) % 3;
    mmbRecordField a[8], b[8];
    size_t off_a = 0, pow2 = 1;
    for (size_t f = 0; f < n; f++) {
      size_t s = sizes[test_rand(&seed) % 9];
      a[f] = (mmbRecordField){NULL, s, off_a};
      off_a += s + test_rand(&seed) % 3;   /* gaps: padding */
      pow2 = pow2 && !(s & (s - 1));
    }
    size_t off_b = 0;   /* the other AoS shape: the fields in reverse order */
    for (size_t f = n; f-- > 0;) {
      b[f] = (mmbRecordField){NULL, a[f].size, off_b};
      off_b += a[f].size;
    }
    mmbDimensions d = {rank, {0}};
    for (size_t k = 0; k < rank; k++) d.d[k] = 1 + test_rand(&seed) % (rank == 1 ? 300 : 13);
    mmbLayoutOrder o1 = test_rand(&seed) % 2 ? MMB_ROWMAJOR : MMB_COLMAJOR;
    mmbLayoutOrder o2 = test_rand(&seed) % 2 ? MMB_ROWMAJOR : MMB_COLMAJOR;
    size_t pad = pow2 && test_rand(&seed) % 2 ? 64 : 0;
    mmbLayout *la, *ls, *lb;
    OK(mmb_layout_create_record(a, n, off_a + 3, MMB_RECORD_AOS, rank, o1, (mmbLayoutPadding){0},
                                &la));
    OK(mmb_layout_create_record(a, n, 0, MMB_RECORD_SOA, rank, o2,
                                (mmbLayoutPadding){.row_alignment = pad}, &ls));
    OK(mmb_layout_create_record(b, n, 0, MMB_RECORD_AOS, rank, o2, (mmbLayoutPadding){0}, &lb));
    mmbArray *xa = make(iface, &d, la), *xs = make(iface, &d, ls), *xb = make(iface, &d, lb);
    walk_array(xa, round, true);
    OK(mmb_array_copy(xs, xa));
    walk_array(xs, round, false);
    OK(mmb_array_copy(xb, xs));
    walk_array(xb, round, false);
    walk_array(xa, round + 1, true);
    OK(mmb_array_copy(xb, xa));   /* AoS -> AoS of another shape */
    walk_array(xb, round + 1, false);
    walk_array(xa, round + 2, true);   /* the same three, as a kernel moves them */
    size_t T = 1 + test_rand(&seed) % 9, chunk = 1 + test_rand(&seed) % 64;
    kernel_copy_by(xs, xa, T, chunk);
    walk_array(xs, round + 2, false);
    kernel_copy_by(xb, xs, T, chunk);
    walk_array(xb, round + 2, false);
    walk_array(xa, round + 3, true);
    kernel_copy_by(xb, xa, T, chunk);
    walk_array(xb, round + 3, false);
    OK(mmb_array_destroy(xa));
    OK(mmb_array_destroy(xs));
    OK(mmb_array_destroy(xb));
    OK(mmb_layout_destroy(la));
    OK(mmb_layout_destroy(ls));
    OK(mmb_layout_destroy(lb));
  }
}

MMB_TEST(record, migrating_to_another_layout_converts_and_tiles_follow) {
  mmbDimensions d = dims2(40, 33);
  mmbLayout *aos = particles(MMB_RECORD_AOS, 2, MMB_ROWMAJOR, 0);
  mmbLayout *soa = particles(MMB_RECORD_SOA, 2, MMB_ROWMAJOR, 64);
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = make(sys, &d, aos);
  walk_array(a, 3, true);
  OK(mmb_array_tile(a, &(mmbDimensions){2, {16, 16}}));
  OK(mmb_array_migrate_layout(a, sys, MMB_READ_WRITE, soa));   /* in place of the old home */
  walk_array(a, 3, false);
  size_t bytes;
  OK(mmb_array_get_bytes(a, &bytes));
  cr_assert_geq(bytes, 40 * 33 * 21, "SoA planes hold the payload");
  mmbArrayTile *t;
  OK(mmb_tile_at(a, &(mmbIndex){2, {1, 2}}, &t));
  cr_assert_eq(t->element_size, 21);
  check_tile(t, d.d, 3);
  mmbTileState st;
  OK(mmb_tile_get_state(t, &st));
  cr_assert(st.soa && !st.contiguous);
  mmbField x, mass;
  OK(mmb_tile_get_field(t, 0, &x));
  OK(mmb_tile_get_field(t, 4, &mass));
  cr_assert(x.ptr == t->ptr && x.size == 4 && x.byte_stride[1] == 4 && mass.byte_stride[1] == 8);
  cr_assert_eq(mmb_tile_get_field(t, 5, &x), MMB_INVALID_ARG);
  /* and back to AoS on the pinned provider */
  OK(mmb_array_migrate_layout(a, test_interface(MMB_PROVIDER_PINNED, 0), MMB_READ, aos));
  walk_array(a, 3, false);
  OK(mmb_tile_get_state(t, &st));
  cr_assert(!st.soa && t->element_size == sizeof(particle));
  OK(mmb_tile_get_field(t, 4, &mass));
  cr_assert_eq(mass.byte_stride[1], sizeof(particle));
  check_tile(t, d.d, 3);
  OK(mmb_array_destroy(a));
  OK(mmb_layout_destroy(aos));
  OK(mmb_layout_destroy(soa));
}

static void count_calls(void *dst, const void *src, size_t count, size_t esize, void *user) {
  ++*(int *)user;
}

MMB_TEST(record, tiles_convert_on_copy_duplicate_and_merge) {
  mmbDimensions d = dims2(30, 20);
  mmbLayout *aos = particles(MMB_RECORD_AOS, 2, MMB_ROWMAJOR, 0);
  mmbLayout *soa = particles(MMB_RECORD_SOA, 2, MMB_ROWMAJOR, 0);
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = make(sys, &d, aos), *s = make(sys, &d, soa);
  walk_array(a, 7, true);
  mmbDimensions chunk = {2, {8, 8}};
  OK(mmb_array_tile(a, &chunk));
  OK(mmb_array_tile(s, &chunk));
  mmbDimensions grid;
  OK(mmb_array_tile_grid(a, &grid));
  for (size_t i = 0; i < grid.d[0]; i++)
    for (size_t j = 0; j < grid.d[1]; j++) {
      mmbArrayTile *ta, *ts;
      OK(mmb_tile_at(a, &(mmbIndex){2, {i, j}}, &ta));
      OK(mmb_tile_at(s, &(mmbIndex){2, {i, j}}, &ts));
      OK(mmb_tile_copy(ts, ta));   /* AoS -> SoA, tile by tile */
      check_tile(ts, d.d, 7);
    }
  walk_array(s, 7, false);
  /* an SoA tile duplicated into AoS storage, written, merged back */
  mmbArrayTile *ts, *dup;
  OK(mmb_tile_at(s, &(mmbIndex){2, {1, 1}}, &ts));
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbLayout *aos_tile = particles(MMB_RECORD_AOS, 2, MMB_COLMAJOR, 0);
  OK(mmb_tile_duplicate(ts, dram, MMB_READ_WRITE, aos_tile, &dup));
  OK(mmb_layout_destroy(aos_tile));   /* the duplicate keeps its records */
  cr_assert_eq(dup->element_size, sizeof(particle));
  check_tile(dup, d.d, 7);
  mmbField fx;
  OK(mmb_tile_get_field(dup, 0, &fx));
  float *x0 = fx.ptr;
  *x0 = 1234.5f;
  OK(mmb_tile_merge(dup, MMB_MERGE_OVERWRITE));
  mmbField sx;
  OK(mmb_tile_get_field(ts, 0, &sx));
  cr_assert_eq(*(float *)sx.ptr, 1234.5f);
  /* a user merge between AoS and SoA storage is refused, nothing lost */
  mmbLayout *aos2 = particles(MMB_RECORD_AOS, 2, MMB_ROWMAJOR, 0);
  OK(mmb_tile_duplicate(ts, dram, MMB_READ_WRITE, aos2, &dup));
  int calls = 0;
  cr_assert_eq(mmb_tile_merge_with(dup, count_calls, &calls), MMB_UNSUPPORTED);
  cr_assert_eq(calls, 0);
  OK(mmb_tile_merge(dup, MMB_MERGE_OVERWRITE));
  OK(mmb_layout_destroy(aos2));
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(s));
  OK(mmb_layout_destroy(aos));
  OK(mmb_layout_destroy(soa));
}

MMB_TEST(record, conversions_run_on_a_queue) {
  mmbQueue *q;
  OK(mmb_queue_create(&(mmbQueueOptions){.backend = MMB_QUEUE_THREAD}, &q));
  mmbDimensions d = {3, {5, 7, 11}};
  mmbLayout *aos = particles(MMB_RECORD_AOS, 3, MMB_ROWMAJOR, 0);
  mmbLayout *soa = particles(MMB_RECORD_SOA, 3, MMB_COLMAJOR, 0);
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbArray *a = make(sys, &d, aos), *s;
  walk_array(a, 11, true);
  mmbRequest r1 = {0}, r2 = {0}, r3 = {0};
  OK(mmb_array_duplicate_layout_async(a, sys, MMB_READ_WRITE, soa, q, &r1, &s));
  OK(mmb_array_migrate_layout_async(s, sys, MMB_READ_WRITE, aos, q, &r2));   /* SoA -> AoS */
  OK(mmb_wait(&r1));
  OK(mmb_wait(&r2));
  walk_array(s, 11, false);
  walk_array(s, 12, true);
  OK(mmb_array_merge_async(s, MMB_MERGE_OVERWRITE, q, &r3));   /* AoS dup of an AoS array now */
  OK(mmb_wait(&r3));
  walk_array(a, 12, false);
  OK(mmb_array_destroy(a));
  OK(mmb_queue_destroy(NULL, &q));
  OK(mmb_layout_destroy(aos));
  OK(mmb_layout_destroy(soa));
}

MMB_TEST(record, other_records_and_plain_elements_are_refused) {
  mmbDimensions d = dims2(4, 4);
  mmbMemInterface *sys = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmbLayout *aos = particles(MMB_RECORD_AOS, 2, MMB_ROWMAJOR, 0);
  mmbLayout *other, *plain = test_layout(sizeof(particle), 2, MMB_ROWMAJOR, 0, MMB_TYPE_BYTES);
  mmbLayout *rank1 = particles(MMB_RECORD_SOA, 1, MMB_ROWMAJOR, 0);
  mmbRecordField swapped[5];
  memcpy(swapped, particle_fields, sizeof swapped);
  swapped[3] = particle_fields[4];   /* mass before flag: other sizes in order */
  swapped[4] = particle_fields[3];
  OK(mmb_layout_create_record(swapped, 5, 0, MMB_RECORD_SOA, 2, MMB_ROWMAJOR,
                              (mmbLayoutPadding){0}, &other));
  mmbArray *a = make(sys, &d, aos), *x = make(sys, &d, other), *p = make(sys, &d, plain), *dup;
  cr_assert_eq(mmb_array_copy(x, a), MMB_INVALID_ARG);
  cr_assert_eq(mmb_array_copy(p, a), MMB_INVALID_ARG, "records are not plain bytes");
  cr_assert_eq(mmb_array_duplicate_layout(a, sys, MMB_READ, other, &dup), MMB_INVALID_ARG);
  cr_assert_eq(mmb_array_duplicate_layout(a, sys, MMB_READ, plain, &dup), MMB_INVALID_ARG);
  cr_assert_eq(mmb_array_duplicate_layout(a, sys, MMB_READ, rank1, &dup), MMB_INVALID_ARG);
  cr_assert_eq(mmb_array_migrate_layout(a, sys, MMB_READ, other), MMB_INVALID_ARG);
  cr_assert_eq(mmb_array_migrate_layout(a, sys, MMB_READ, (mmbLayout *)a), MMB_INVALID_ARG,
               "not a layout");
  mmbField f;
  cr_assert_eq(mmb_array_get_field(a, 5, &f), MMB_INVALID_ARG);
  cr_assert_eq(mmb_array_get_field(a, 0, NULL), MMB_INVALID_ARG);
  cr_assert_eq(mmb_array_get_field(NULL, 0, &f), MMB_INVALID_ARG);
  OK(mmb_array_get_field(p, 0, &f));   /* a plain element is its one field */
  cr_assert(f.ptr == mmb_array_ptr(p) && f.size == sizeof(particle) &&
            f.byte_stride[0] == 4 * sizeof(particle));
  cr_assert_eq(mmb_array_get_field(p, 1, &f), MMB_INVALID_ARG);
  cr_assert_eq(mmb_tile_get_field(NULL, 0, &f), MMB_INVALID_ARG);
  OK(mmb_array_destroy(a));
  OK(mmb_array_destroy(x));
  OK(mmb_array_destroy(p));
  OK(mmb_layout_destroy(aos));
  OK(mmb_layout_destroy(other));
  OK(mmb_layout_destroy(plain));
  OK(mmb_layout_destroy(rank1));
}

/* SoA tiles through the tile cache and a prefetching iterator: their
   copies keep SoA storage, and written fields come home. */
MMB_TEST(record, soa_tiles_go_through_the_cache_and_iterators) {
  mmbDimensions d = dims2(48, 40);
  mmbLayout *soa = particles(MMB_RECORD_SOA, 2, MMB_ROWMAJOR, 0);
  mmbArray *s = make(test_interface(MMB_PROVIDER_SYSTEM, 0), &d, soa);
  walk_array(s, 21, true);
  OK(mmb_array_tile(s, &(mmbDimensions){2, {16, 16}}));
  mmbMemSpace *fast = limited_space(64 << 10);   /* room for a few tiles */
  mmbDimensions grid;
  OK(mmb_array_tile_grid(s, &grid));
  for (size_t i = 0; i < grid.d[0]; i++)
    for (size_t j = 0; j < grid.d[1]; j++) {
      mmbArrayTile *t, *l;
      OK(mmb_tile_at(s, &(mmbIndex){2, {i, j}}, &t));
      OK(mmb_tile_acquire(t, fast, MMB_READ_WRITE, &l));
      mmbTileState st;
      OK(mmb_tile_get_state(l, &st));
      cr_assert(st.soa && l->space == fast);
      check_tile(l, d.d, 21);
      mmbField m;
      OK(mmb_tile_get_field(l, 4, &m));
      *(double *)m.ptr = (double)(i * 10 + j);   /* the tile's first mass */
      OK(mmb_tile_release(l));
    }
  OK(mmb_array_flush(s));
  OK(mmb_array_evict(s, fast));
  for (size_t i = 0; i < grid.d[0]; i++)
    for (size_t j = 0; j < grid.d[1]; j++) {
      mmbArrayTile *t;
      OK(mmb_tile_at(s, &(mmbIndex){2, {i, j}}, &t));
      mmbField m;
      OK(mmb_tile_get_field(t, 4, &m));
      cr_assert_eq(*(double *)m.ptr, (double)(i * 10 + j));
    }
  OK(mmb_array_destroy(s));
  OK(mmb_layout_destroy(soa));
}

/* The bytes of AoS records of `rs` bytes at `p` that no field covers: set
   to `fill`, or checked to be zero. */
static void record_gaps(unsigned char *p, size_t n, size_t rs, const mmbRecordField *f,
                        size_t n_fields, bool fill) {
  for (size_t e = 0; e < n; e++)
    for (size_t b = 0; b < rs; b++) {
      bool field = false;
      for (size_t k = 0; k < n_fields; k++)
        field |= b >= f[k].offset && b < f[k].offset + f[k].size;
      if (field) continue;
      if (fill) p[e * rs + b] = 0xab;
      else cr_assert_eq(p[e * rs + b], 0, "record %zu, gap byte %zu", e, b);
    }
}

/* Fields of whole 4-byte words go 16 records at a time through AVX-512
   registers (where the CPU has it; the other fields of the record field by
   field; fields of 1 or 2 bytes alone in their word too, both ways):
   tables of up to 24 steps from registers (records of 2 to 6 words whose
   moved fields take as many vectors by the grid's fixed shape), records of up to 16
   words with longer ones by a transposition (of qwords where doubles lie
   on them, else of words), others step by step; and
   large conversions stream their blocks, from the registers where whole
   cache lines come out of them (planes that start on one: 16 x 64
   elements): all of them, with ragged tails, checked for each shape,
   streaming forced on and off.
   Streamed blocks write the gaps between the fields of AoS records zero
   (gaps_zero; elsewhere they are undefined). */
static void word_records_round_trip(bool gaps_zero) {
  static const mmbRecordField shapes[][8] = {
    {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}},                  /* 12 B */
    {{"a", 4, 0}, {"b", 8, 8}, {"c", 4, 16}},                 /* 24 B, gaps */
    {{"q", 16, 0}, {"id", 4, 16}},                            /* 20 B */
    {{"big", 12, 4}, {"w", 4, 112}},                          /* 116 B: a step per pair */
    {{"x", 4, 0}, {"flag", 1, 4}, {"s", 2, 6}},               /* 8 B: x in registers */
    {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}, {"flag", 1, 12}}, /* 16 B, with a byte */
    {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}, {"flag", 1, 12}, {"mass", 8, 16}},   /* 13, 15 steps */
    {{"x", 8, 0}, {"y", 8, 8}, {"z", 8, 16}, {"vx", 8, 24}, {"vy", 8, 32}, {"vz", 8, 40},
     {"m", 4, 48}, {"id", 4, 52}},                            /* 56 B: transposed */
    {{"a", 8, 4}, {"b", 4, 20}, {"c", 12, 28}, {"d", 4, 44}}, /* 52 B, gaps: 30 steps */
    {{"a", 4, 0}, {"b", 4, 4}, {"c", 4, 8}, {"d", 4, 12}, {"e", 4, 16}, {"f", 4, 20},
     {"g", 4, 24}, {"h", 4, 28}},                             /* 40 B, a gap: transposed */
    {{"v", 12, 0}, {"a", 4, 12}, {"b", 4, 16}, {"c", 4, 20}, {"d", 4, 24}, {"e", 4, 28},
     {"f", 4, 32}, {"g", 4, 36}},                             /* 44 B, a gap: 50 and 51 steps */
    {{"a", 4, 0}, {"h", 2, 6}, {"b", 4, 8}},                  /* 12 B, h alone in its word */
    {{"x", 8, 0}, {"c", 1, 9}, {"y", 4, 12}, {"z", 4, 16}},   /* 20 B, c alone in its word */
    {{"x", 8, 0}, {"y", 8, 8}, {"z", 8, 16}, {"vx", 8, 24}, {"vy", 8, 32}, {"vz", 8, 40},
     {"m", 4, 48}, {"c", 1, 53}},                             /* 56 B transposed, c alone */
    {{"v", 12, 0}, {"a", 4, 12}, {"b", 4, 16}, {"c", 4, 20}, {"d", 4, 24}, {"e", 4, 28},
     {"f", 4, 32}, {"h", 2, 38}},                             /* 44 B step by step, h alone */
    {{"a", 8, 0}, {"b", 4, 8}, {"c", 8, 16}, {"d", 8, 24}, {"e", 4, 36}},   /* 40 B by qwords */
    {{"x", 8, 0}, {"h", 2, 10}, {"y", 8, 16}, {"z", 8, 24}, {"w", 8, 32},
     {"u", 4, 40}},                                           /* 48 B by qwords, h alone */
    {{"a", 8, 0}, {"b", 8, 8}, {"c", 8, 16}, {"d", 8, 24}, {"e", 8, 32}, {"f", 8, 40},
     {"g", 8, 48}, {"m", 4, 56}},                             /* 64 B by qwords */
    {{"a", 4, 0}, {"b", 8, 4}, {"c", 8, 12}, {"d", 8, 20}, {"e", 8, 28}, {"f", 8, 36},
     {"g", 4, 44}},                                           /* 48 B, doubles astride qwords */
    {{"a", 8, 0}, {"s", 2, 8}, {"t", 2, 10}, {"c", 8, 16}, {"d", 8, 24},
     {"e", 8, 32}},                                           /* 40 B by qwords, s, t after */
    {{"x", 4, 0}, {"y", 4, 4}},                               /* 8 B: the grid of 2 words */
    {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}, {"id", 4, 12}},   /* 16 B: of 4 */
    {{"a", 4, 0}, {"b", 4, 4}, {"c", 4, 8}, {"d", 4, 12}, {"e", 4, 16}},   /* 20 B: of 5 */
    {{"a", 4, 0}, {"b", 4, 4}, {"c", 4, 8}, {"d", 4, 12}, {"e", 4, 16},
     {"f", 4, 20}},                                           /* 24 B: of 6 */
    {{"a", 4, 0}, {"b", 4, 4}, {"c", 4, 8}, {"d", 4, 12}, {"e", 4, 16}, {"f", 4, 20},
     {"g", 4, 24}},                                           /* 28 B: 7 words, no grid */
    {{"d", 8, 0}, {"f", 4, 8}},                               /* 12 B: 3 words, a double */
    {{"x", 4, 0}, {"z", 4, 8}},                               /* 12 B: 3 words, a gap */
    {{"c", 1, 0}, {"x", 4, 4}, {"h", 2, 10}, {"y", 4, 12}},   /* 16 B: a byte, a half, alone */
  };
  static const size_t n_fields[] = {3, 3, 2, 2, 3, 4, 5, 8, 4, 8, 8, 3, 4, 8, 8, 5, 6, 8, 7, 6,
                                    2, 4, 5, 6, 7, 2, 2, 4};
  static const size_t rs[] = {12, 24, 20, 116, 8, 16, 24, 56, 52, 40, 44, 12, 20, 56, 44,
                              40, 48, 64, 48, 40, 8, 16, 20, 24, 28, 12, 12, 16};
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  for (size_t k = 0; k < sizeof rs / sizeof *rs; k++) {
    mmbDimensions shapes_of[] = {{1, {16 * 70 + 5}}, {1, {16 * 64}}, dims2(37, 41)};
    for (size_t v = 0; v < 3; v++) {
      mmbDimensions *d = &shapes_of[v];
      int rank = (int)d->size;
      size_t n = rank == 1 ? d->d[0] : d->d[0] * d->d[1];
      mmbLayout *la, *ls;
      OK(mmb_layout_create_record(shapes[k], n_fields[k], rs[k], MMB_RECORD_AOS, (size_t)rank,
                                  MMB_ROWMAJOR, (mmbLayoutPadding){0}, &la));
      OK(mmb_layout_create_record(shapes[k], n_fields[k], 0, MMB_RECORD_SOA, (size_t)rank,
                                  MMB_ROWMAJOR, (mmbLayoutPadding){0}, &ls));
      mmbArray *a = make(iface, d, la), *s = make(iface, d, ls);
      walk_array(a, (unsigned)k, true);
      OK(mmb_array_copy(s, a));
      walk_array(s, (unsigned)k, false);
      walk_array(s, (unsigned)k + 9, true);
      record_gaps(mmb_array_ptr(a), n, rs[k], shapes[k], n_fields[k], true);
      OK(mmb_array_copy(a, s));
      walk_array(a, (unsigned)k + 9, false);
      if (gaps_zero) record_gaps(mmb_array_ptr(a), n, rs[k], shapes[k], n_fields[k], false);
      OK(mmb_array_destroy(a));
      OK(mmb_array_destroy(s));
      OK(mmb_layout_destroy(la));
      OK(mmb_layout_destroy(ls));
    }
  }
}

/* mmb again, every copy and conversion from the first byte on streamed
   (MMB_COPY_NT_BYTES=1): the interfaces made before are gone. */
static void stream_every_conversion(void) {
  OK(mmb_finalize());
  setenv("MMB_COPY_NT_BYTES", "1", 1);
  OK(mmb_init(&(mmbOptions){.log_level = MMB_LOG_OFF}));
}

MMB_TEST(record, word_records_convert_in_registers) { word_records_round_trip(false); }

MMB_TEST(record, word_records_convert_streamed) {
  stream_every_conversion();
  word_records_round_trip(true);
}

/* Without AVX-512 (or with it turned off), records of whole words up to
   64 bytes go 8 at a time through AVX2 registers, each 32-byte half of a
   record one vector: the same shapes, both ways, in place and streamed.
   In the cache, records of words only and records of qwords with doubles
   (none astride) take loops without a test per word: the 8- to 28-byte
   and 40-byte word shapes, the 24-byte one with gaps, and the 40-, 56-
   and 64-byte ones by qwords; with their lone fields through stages (up
   to 4 a record, LONE_BLOCKS blocks at a time: 140 blocks in the longest
   shape) the 12- and 16-byte word shapes with a byte or a half alone,
   and the 20-, 24- and 48-byte qword ones.
   On a CPU with AVX2 only the tests above take this path already. */
MMB_TEST(record, word_records_convert_by_avx2) {
  if (!__builtin_cpu_supports("avx2")) cr_skip_test("the CPU has no AVX2");
  mmb__record_use_avx512(false);
  word_records_round_trip(false);
  stream_every_conversion();
  word_records_round_trip(true);
  mmb__record_use_avx512(true);
}

/* One side of tile_copied: records stored AoS (of the shape's record
   size) or SoA, rows padded to row_alignment bytes (0: none). */
typedef struct side {
  mmbRecordKind kind;
  size_t row_alignment;
} side;

/* Arrays of 9 x `cols` records of one shape, `to` (filled with salt 2) and
   `from` (salt 1), tiled 9 x `tile_cols`: tile (0, t) copied from one into
   the other, whose tile then holds the other's values, while the
   destination's tiles beside it keep their own. */
static void tile_copied(mmbMemInterface *iface, const mmbRecordField *shape, size_t n_fields,
                        size_t rs, size_t cols, size_t tile_cols, size_t t, side to_side,
                        side from_side) {
  mmbLayout *lt, *lf;
  OK(mmb_layout_create_record(shape, n_fields, to_side.kind == MMB_RECORD_AOS ? rs : 0,
                              to_side.kind, 2, MMB_ROWMAJOR,
                              (mmbLayoutPadding){to_side.row_alignment}, &lt));
  OK(mmb_layout_create_record(shape, n_fields, from_side.kind == MMB_RECORD_AOS ? rs : 0,
                              from_side.kind, 2, MMB_ROWMAJOR,
                              (mmbLayoutPadding){from_side.row_alignment}, &lf));
  mmbDimensions d = dims2(9, cols);
  mmbArray *to = make(iface, &d, lt), *from = make(iface, &d, lf);
  walk_array(from, 1, true);
  walk_array(to, 2, true);
  OK(mmb_array_tile(to, &(mmbDimensions){2, {9, tile_cols}}));
  OK(mmb_array_tile(from, &(mmbDimensions){2, {9, tile_cols}}));
  mmbArrayTile *dst, *src, *beside;
  OK(mmb_tile_at(to, &(mmbIndex){2, {0, t}}, &dst));
  OK(mmb_tile_at(from, &(mmbIndex){2, {0, t}}, &src));
  OK(mmb_tile_copy(dst, src));
  check_tile(dst, d.d, 1);
  for (size_t b = t ? t - 1 : 1; b <= t + 1 && b * tile_cols < cols; b += 2) {
    OK(mmb_tile_at(to, &(mmbIndex){2, {0, b}}, &beside));
    check_tile(beside, d.d, 2);
  }
  OK(mmb_array_destroy(to));
  OK(mmb_array_destroy(from));
  OK(mmb_layout_destroy(lt));
  OK(mmb_layout_destroy(lf));
}

/* The first tile, between AoS and SoA, rows unpadded. */
static void first_tile_copied(mmbMemInterface *iface, const mmbRecordField *shape,
                              size_t n_fields, size_t rs, size_t cols, size_t tile_cols,
                              bool into_soa) {
  side aos = {MMB_RECORD_AOS, 0}, soa = {MMB_RECORD_SOA, 0};
  tile_copied(iface, shape, n_fields, rs, cols, tile_cols, 0, into_soa ? soa : aos,
              into_soa ? aos : soa);
}

/* AVX2's loads and stores of a record reach past it into the next (by 4
   to 28 bytes: records of 8, 20, 24, 36 and 56 bytes), where later blocks
   overwrite what they stored: never past the end of a run. Streamed, the
   blocks stop short of it (the rest field by field); in the cache, the
   last block of a run loads and stores its last record exactly, and
   converts a run to its end. A tile of 24 columns (3 blocks) of a
   40-column array, copied into the other array's, lands whole and leaves
   the columns after it as they were, both ways, in place and streamed:
   words, qwords, a lone byte among qwords (the particle), records of one
   and of two vectors, and of 4 words (in 16-byte halves). */
MMB_TEST(record, avx2_stores_stay_inside_their_tile) {
  static const mmbRecordField shapes[][9] = {
    {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}},
    {{"a", 4, 0}, {"b", 8, 8}, {"c", 4, 16}},
    {{"x", 8, 0}, {"y", 8, 8}, {"z", 8, 16}, {"vx", 8, 24}, {"vy", 8, 32}, {"vz", 8, 40},
     {"m", 4, 48}, {"id", 4, 52}},
    {{"x", 4, 0}, {"y", 4, 4}},
    {{"a", 4, 0}, {"b", 4, 4}, {"c", 4, 8}, {"d", 4, 12}, {"e", 4, 16}},
    {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}, {"flag", 1, 12}, {"mass", 8, 16}},
    {{"a", 4, 0}, {"b", 4, 4}, {"c", 4, 8}, {"d", 4, 12}, {"e", 4, 16}, {"f", 4, 20},
     {"g", 4, 24}, {"h", 4, 28}, {"i", 4, 32}},
  };
  static const size_t n_fields[] = {3, 3, 8, 2, 5, 5, 9}, rs[] = {12, 24, 56, 8, 20, 24, 36};
  if (!__builtin_cpu_supports("avx2")) cr_skip_test("the CPU has no AVX2");
  mmb__record_use_avx512(false);
  for (int streamed = 0; streamed < 2; streamed++) {
    if (streamed) stream_every_conversion();
    mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
    for (size_t k = 0; k < sizeof rs / sizeof *rs; k++)
      for (int into_soa = 0; into_soa < 2; into_soa++)
        first_tile_copied(iface, shapes[k], n_fields[k], rs[k], 40, 24, into_soa);
  }
  mmb__record_use_avx512(true);
}

/* In the cache, a tile's rows convert in one call, each a whole run:
   tiles of 13 and 21 columns (their last 5 records of each row field by
   field) and a tile starting at column 13, between AoS and SoA both ways,
   rows padded or not, and between SoA arrays of different padding, land
   whole and leave the tiles beside them as they were (padded AoS rows
   where the record size divides their 512 bytes). The shapes take each
   of the register paths: words (3 of them, and 3 in 16 bytes), qwords
   with a lone byte (the particle, in 24 and in 32 bytes), a field too
   wide for the registers among words, a double astride two qwords and
   five half-words (AVX2's tested loop), with AVX-512's blocks too where
   the CPU has them. */
MMB_TEST(record, tile_rows_convert_in_one_call) {
  static const mmbRecordField shapes[][6] = {
    {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}},
    {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}, {"flag", 1, 12}, {"mass", 8, 16}},
    {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}},
    {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}, {"flag", 1, 12}, {"mass", 8, 16}},
    {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}, {"v", 16, 12}, {"id", 4, 28}},
    {{"a", 4, 0}, {"d", 8, 4}, {"b", 4, 12}},
    {{"a", 2, 0}, {"b", 2, 4}, {"c", 2, 8}, {"d", 2, 12}, {"e", 2, 16}, {"f", 4, 20}},
  };
  static const size_t n_fields[] = {3, 5, 3, 5, 5, 3, 6}, rs[] = {12, 24, 16, 32, 32, 16, 32};
  static const struct {
    side to, from;
  } pairs[] = {
    {{MMB_RECORD_SOA, 0}, {MMB_RECORD_AOS, 0}},   {{MMB_RECORD_AOS, 0}, {MMB_RECORD_SOA, 0}},
    {{MMB_RECORD_SOA, 64}, {MMB_RECORD_AOS, 512}}, {{MMB_RECORD_AOS, 512}, {MMB_RECORD_SOA, 64}},
    {{MMB_RECORD_SOA, 0}, {MMB_RECORD_SOA, 64}},  {{MMB_RECORD_SOA, 64}, {MMB_RECORD_SOA, 0}},
  };
  static const size_t tiles[][2] = {{13, 0}, {21, 0}, {13, 1}};   /* columns, tile */
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  for (int avx512 = 0; avx512 < 2; avx512++) {
    if (avx512 && !__builtin_cpu_supports("avx512f")) break;
    mmb__record_use_avx512(avx512);
    for (size_t k = 0; k < sizeof rs / sizeof *rs; k++)
      for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++) {
        bool aos_padded = (pairs[p].to.kind == MMB_RECORD_AOS && pairs[p].to.row_alignment) ||
                          (pairs[p].from.kind == MMB_RECORD_AOS && pairs[p].from.row_alignment);
        if (aos_padded && 512 % rs[k]) continue;
        for (size_t t = 0; t < 3; t++)
          tile_copied(iface, shapes[k], n_fields[k], rs[k], 40, tiles[t][0], tiles[t][1],
                      pairs[p].to, pairs[p].from);
      }
  }
  mmb__record_use_avx512(true);
}

static box box_of(const mmbArrayTile *t, unsigned salt) {
  box b = {.salt = salt};
  for (size_t k = 0; k < t->rank; k++) b.lo[k] = t->lower[k], b.hi[k] = t->upper[k];
  return b;
}

/* Streaming stages each run of the destination and writes it out whole,
   so it takes runs whose records, or planes' elements, are contiguous. A
   tile one column wide has its runs a row apart: streamed, its 9 records
   land where they belong, into SoA (rows padded or not) and into AoS, and
   the columns beside it keep their own. */
MMB_TEST(record, streamed_tiles_one_column_wide) {
  side aos = {MMB_RECORD_AOS, 0}, soa = {MMB_RECORD_SOA, 0}, soa64 = {MMB_RECORD_SOA, 64};
  stream_every_conversion();
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  const mmbRecordField *shape = particle_fields;
  tile_copied(iface, shape, 5, sizeof(particle), 40, 1, 0, soa, aos);
  tile_copied(iface, shape, 5, sizeof(particle), 40, 1, 7, soa64, aos);
  tile_copied(iface, shape, 5, sizeof(particle), 40, 1, 7, aos, soa64);
  tile_copied(iface, shape, 5, sizeof(particle), 40, 1, 7, soa, soa64);
}

/* A random side of a tile copy: AoS or SoA, its rows padded where the
   layout allows it (AoS to 512 bytes where the record divides them, SoA
   to 64 where every field does), either order. */
static mmbLayout *random_side(uint64_t *seed, const mmbRecordField *fields, size_t n, size_t rs,
                              size_t rank, bool pow2) {
  bool soa = test_rand(seed) % 2, padded = test_rand(seed) % 2;
  size_t ra = !padded ? 0 : soa ? (pow2 ? 64 : 0) : (512 % rs ? 0 : 512);
  mmbLayoutOrder o = test_rand(seed) % 4 ? MMB_ROWMAJOR : MMB_COLMAJOR;
  mmbLayout *l;
  OK(mmb_layout_create_record(fields, n, soa ? 0 : rs, soa ? MMB_RECORD_SOA : MMB_RECORD_AOS,
                              rank, o, (mmbLayoutPadding){.row_alignment = ra}, &l));
  return l;
}

/* Random tiles of random records (fixed seed), against the reference: 1 to 8
   fields, either of whole words at their own alignment (the register
   paths) or of odd sizes with gaps; rank 1 to 3, tiles of any extents,
   regular or irregular (up to 6 along each dimension, between random
   boundaries), each side AoS or SoA, padded or not, in either order, on
   the system or the pinned provider. A tile of one array is duplicated in
   the other's storage, rewritten there and merged back; three tiles of
   the other are copied into it; in the cache and then streamed (every
   conversion), with AVX-512 on and off where the CPU has it. The copies
   again by a device kernel's moves (blocks of 1 to 9 threads, chunks of 1
   to 64 elements); one of them acquired in another space's tile cache,
   rewritten, flushed home. A tile of the other array migrated into the
   first one's storage, rewritten, brought home. Those tiles hold what was
   written to them, every other element its own. */
static void random_tiles_round(uint64_t *seed, mmbMemInterface *const *ifaces,
                               mmbMemSpace *fast) {
  static const size_t words[] = {1, 2, 4, 4, 4, 8, 8, 16}, odd[] = {1, 2, 3, 4, 5, 7, 8, 12, 16};
  bool aligned = test_rand(seed) % 2;
  size_t n = 1 + test_rand(seed) % 8, off = 0, align = 1;
  bool pow2 = true;
  mmbRecordField fields[8];
  for (size_t f = 0; f < n; f++) {
    size_t s = aligned ? words[test_rand(seed) % 8] : odd[test_rand(seed) % 9];
    size_t a = aligned ? (s < 8 ? s : 8) : 1;
    off = (off + a - 1) / a * a;
    fields[f] = (mmbRecordField){NULL, s, off};
    off += s + (aligned ? 0 : test_rand(seed) % 3);
    align = a > align ? a : align;
    pow2 = pow2 && !(s & (s - 1));
  }
  size_t rs = (off + align - 1) / align * align + (aligned ? 0 : test_rand(seed) % 4);
  size_t rank = 1 + test_rand(seed) % 3;
  static const size_t most[3][3] = {{300}, {9, 70}, {5, 6, 40}};
  mmbDimensions d = {rank, {0}}, tiling = {rank, {0}}, grid = {rank, {0}};
  bool irregular = test_rand(seed) % 2;
  size_t bounds[3 * 7], *b = bounds;   /* irregular: up to 6 tiles along each */
  for (size_t k = 0; k < rank; k++) {
    d.d[k] = 1 + test_rand(seed) % most[rank - 1][k];
    tiling.d[k] = 1 + test_rand(seed) % d.d[k];
    grid.d[k] = (d.d[k] + tiling.d[k] - 1) / tiling.d[k];
    if (!irregular) continue;
    size_t cuts = test_rand(seed) % (d.d[k] < 6 ? d.d[k] : 6);   /* of the d - 1 inside */
    grid.d[k] = cuts + 1;
    *b++ = 0;
    for (size_t i = 1, left = cuts; i < d.d[k]; i++)   /* each with chance left / (d - i) */
      if (left && test_rand(seed) % (d.d[k] - i) < left) *b++ = i, left--;
    *b++ = d.d[k];
  }
  mmbLayout *lt = random_side(seed, fields, n, rs, rank, pow2);
  mmbLayout *lf = random_side(seed, fields, n, rs, rank, pow2);
  mmbArray *to = make(ifaces[test_rand(seed) % 2], &d, lt);
  mmbArray *from = make(ifaces[test_rand(seed) % 2], &d, lf);
  walk_array(from, 1, true);
  walk_array(to, 2, true);
  if (irregular) {
    OK(mmb_array_tile_irregular(to, &grid, bounds));
    OK(mmb_array_tile_irregular(from, &grid, bounds));
  } else {
    OK(mmb_array_tile(to, &tiling));
    OK(mmb_array_tile(from, &tiling));
  }
  /* a tile of `to` duplicated in the other side's storage, rewritten there
     (salt 3) and merged back */
  mmbIndex at = {rank, {0}};
  for (size_t k = 0; k < rank; k++) at.d[k] = test_rand(seed) % grid.d[k];
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbArrayTile *t, *dup, *dst[3], *src[3];
  OK(mmb_tile_at(to, &at, &t));
  OK(mmb_tile_duplicate(t, dram, MMB_READ_WRITE, lf, &dup));
  check_tile(dup, d.d, 2);
  walk_tile(dup, d.d, 3, true);
  OK(mmb_tile_merge(dup, MMB_MERGE_OVERWRITE));
  box boxes[5] = {box_of(t, 3)};   /* in the order written */
  for (size_t c = 0; c < 3; c++) {   /* then three tiles of `from` copied in */
    for (size_t k = 0; k < rank; k++) at.d[k] = test_rand(seed) % grid.d[k];
    OK(mmb_tile_at(to, &at, &dst[c]));
    OK(mmb_tile_at(from, &at, &src[c]));
    OK(mmb_tile_copy(dst[c], src[c]));
    boxes[c + 1] = box_of(dst[c], 1);
  }
  walk_boxes(to, 2, boxes, 4, false);
  walk_array(to, 2, true);   /* the same copies, as a device's kernel moves them */
  size_t T = 1 + test_rand(seed) % 9, chunk = 1 + test_rand(seed) % 64;
  for (size_t c = 0; c < 3; c++) {
    mmb__view dv = mmb__tile_view(mmb__tile_of(dst[c]));
    mmb__view sv = mmb__tile_view(mmb__tile_of(src[c]));
    kernel_moves(&dv, &sv, T, chunk);
  }
  walk_boxes(to, 2, boxes + 1, 3, false);
  /* one of those tiles acquired in a cache of another space, rewritten
     there (salt 5), released and flushed home */
  mmbArrayTile *local;
  OK(mmb_tile_acquire(dst[1], fast, MMB_READ_WRITE, &local));
  cr_assert(local != dst[1] && local->space == fast, "a copy in the cache");
  check_tile(local, d.d, 1);
  walk_tile(local, d.d, 5, true);
  OK(mmb_tile_release(local));
  OK(mmb_array_flush(to));
  boxes[4] = box_of(dst[1], 5);
  walk_boxes(to, 2, boxes + 1, 4, false);
  /* a tile of `from` migrated into `to`'s storage, rewritten there (salt
     4), brought home */
  OK(mmb_tile_migrate(src[0], dram, MMB_READ_WRITE, lt));
  check_tile(src[0], d.d, 1);
  walk_tile(src[0], d.d, 4, true);
  OK(mmb_tile_migrate(src[0], dram, MMB_READ_WRITE, NULL));
  box migrated = box_of(src[0], 4);
  walk_boxes(from, 1, &migrated, 1, false);
  OK(mmb_array_destroy(to));
  OK(mmb_array_destroy(from));
  OK(mmb_layout_destroy(lt));
  OK(mmb_layout_destroy(lf));
}

MMB_TEST(record, random_tiles_copy_between_any_two_storages) {
  uint64_t seed = 0x711e5;
  for (int streamed = 0; streamed < 2; streamed++) {
    if (streamed) stream_every_conversion();
    mmbMemInterface *ifaces[] = {test_interface(MMB_PROVIDER_SYSTEM, 0),
                                 test_interface(MMB_PROVIDER_PINNED, 0)};
    mmbMemSpace *fast;
    OK(mmb_request_space(MMB_DRAM, MMB_CPU, &(mmbMemSpaceConfig){.size_limit = 8 << 20,
                                                                  .name = "fast"}, &fast));
    for (int avx512 = 0; avx512 < 2; avx512++) {
      if (avx512 && !__builtin_cpu_supports("avx512f")) break;
      mmb__record_use_avx512(avx512);
      for (int round = 0; round < 400; round++) random_tiles_round(&seed, ifaces, fast);
    }
  }
  mmb__record_use_avx512(true);
}

/* AVX2's streamed blocks into SoA stage word or qword planes, which go out
   interleaved, narrowed or halved: element by element up to a 32-byte
   boundary of the destination, then in vectors, the rest element by
   element. Rows of 101 elements put each row's run of a tile's planes at
   another offset from that boundary; a 9 x 60 tile of AoS records copied
   into the SoA array's, streamed, lands whole and leaves the tile beside
   it as it was: doubles on qwords with 4-byte halves (56 B), a double in
   word planes (24 B), a byte and a half-word alone in their words (16 B). */
MMB_TEST(record, avx2_planes_into_soa_start_anywhere) {
  static const mmbRecordField shapes[][8] = {
    {{"x", 8, 0}, {"y", 8, 8}, {"z", 8, 16}, {"vx", 8, 24}, {"vy", 8, 32}, {"vz", 8, 40},
     {"m", 4, 48}, {"id", 4, 52}},
    {{"a", 4, 0}, {"b", 8, 8}, {"c", 4, 16}},
    {{"c", 1, 0}, {"x", 4, 4}, {"h", 2, 10}, {"y", 4, 12}},
  };
  static const size_t n_fields[] = {8, 3, 4}, rs[] = {56, 24, 16};
  if (!__builtin_cpu_supports("avx2")) cr_skip_test("the CPU has no AVX2");
  mmb__record_use_avx512(false);
  stream_every_conversion();
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  for (size_t k = 0; k < 3; k++)
    first_tile_copied(iface, shapes[k], n_fields[k], rs[k], 101, 60, true);
  mmb__record_use_avx512(true);
}

/* Conversions of 4 MiB or more split over the threads their interfaces
   ask for (copy_threads), as copies do: one run of particles in parts of 64
   records (its length no multiple of 64), and rows (padded on the SoA
   side) dealt among the parts; both ways, in place and streamed, with each kernel the CPU has. */
static void split_round_trips(void) {
  mmbMemSpace *dram;
  OK(mmb_request_space(MMB_DRAM, MMB_CPU, NULL, &dram));
  mmbMemInterface *iface;
  OK(mmb_request_interface(dram, &(mmbMemInterfaceConfig){.copy_threads = 3}, &iface));
  mmbDimensions shapes[] = {{1, {300007}}, dims2(613, 509)};
  for (size_t k = 0; k < 2; k++) {
    size_t rank = shapes[k].size;
    mmbLayout *la = particles(MMB_RECORD_AOS, rank, MMB_ROWMAJOR, 0);
    mmbLayout *ls = particles(MMB_RECORD_SOA, rank, MMB_ROWMAJOR, rank == 2 ? 64 : 0);
    mmbArray *a = make(iface, &shapes[k], la), *s = make(iface, &shapes[k], ls);
    cr_assert_geq(shapes[k].d[0] * (rank == 2 ? shapes[k].d[1] : 1) * sizeof(particle),
                  (size_t)4 << 20, "large enough to split");
    walk_array(a, 31, true);
    OK(mmb_array_copy(s, a));
    walk_array(s, 31, false);
    walk_array(s, 32, true);
    OK(mmb_array_copy(a, s));
    walk_array(a, 32, false);
    OK(mmb_array_destroy(a));
    OK(mmb_array_destroy(s));
    OK(mmb_layout_destroy(la));
    OK(mmb_layout_destroy(ls));
  }
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(record, large_conversions_split_over_copy_threads) {
  for (int streamed = 0; streamed < 2; streamed++) {
    if (streamed) {
      stream_every_conversion();
    }
    split_round_trips();
    if (__builtin_cpu_supports("avx512f")) {   /* and AVX2's blocks */
      mmb__record_use_avx512(false);
      split_round_trips();
      mmb__record_use_avx512(true);
    }
  }
}

/* Rows of 24 records of 16 bytes, padded to 512 bytes, keep the bytes
   after each row as they were, both in place and streamed (into a staged
   block, whose end the last row's records reach). (Records whose AVX2
   stores reach past them: avx2_stores_stay_inside_their_tile.) */
MMB_TEST(record, avx2_blocks_stay_inside_the_run) {
  static const mmbRecordField f[] = {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}, {"id", 4, 12}};
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
  mmb__record_use_avx512(false);
  for (int streamed = 0; streamed < 2; streamed++) {
    if (streamed) {
      stream_every_conversion();
      iface = test_interface(MMB_PROVIDER_SYSTEM, 0);
    }
    mmbLayout *la, *ls;
    OK(mmb_layout_create_record(f, 4, 16, MMB_RECORD_AOS, 2, MMB_ROWMAJOR,
                                (mmbLayoutPadding){512}, &la));
    OK(mmb_layout_create_record(f, 4, 0, MMB_RECORD_SOA, 2, MMB_ROWMAJOR, (mmbLayoutPadding){0},
                                &ls));
    mmbDimensions d = dims2(9, 24);
    mmbArray *a = make(iface, &d, la), *s = make(iface, &d, ls);
    unsigned char *p = mmb_array_ptr(a);
    for (size_t row = 0; row < 9; row++) memset(p + row * 512 + 24 * 16, 0xab, 512 - 24 * 16);
    walk_array(s, 3, true);
    OK(mmb_array_copy(a, s));
    walk_array(a, 3, false);
    for (size_t row = 0; row < 9; row++)
      for (size_t b = 24 * 16; b < 512; b++)
        cr_assert_eq(p[row * 512 + b], 0xab, "streamed %d: row %zu, padding byte %zu", streamed,
                     row, b);
    walk_array(a, 5, true);
    OK(mmb_array_copy(s, a));
    walk_array(s, 5, false);
    OK(mmb_array_destroy(a));
    OK(mmb_array_destroy(s));
    OK(mmb_layout_destroy(la));
    OK(mmb_layout_destroy(ls));
  }
  mmb__record_use_avx512(true);
}

/* The tables a record converts by are made on its first conversion and
   kept with it: threads converting the same records for the first time at
   once (one table each way kept, the others dropped) and again and again
   get the same bytes as each other. */
typedef struct converter {
  mmbMemInterface *iface;
  const mmbRecordField *fields;
  size_t n_fields, rs;
  unsigned salt;
  int wrong;
} converter;

static void *convert_often(void *arg) {
  converter *c = arg;
  mmbLayout *la, *ls;
  mmbDimensions d = {1, {16 * 9 + 3}};
  if (mmb_layout_create_record(c->fields, c->n_fields, c->rs, MMB_RECORD_AOS, 1, MMB_ROWMAJOR,
                               (mmbLayoutPadding){0}, &la) != MMB_OK ||
      mmb_layout_create_record(c->fields, c->n_fields, 0, MMB_RECORD_SOA, 1, MMB_ROWMAJOR,
                               (mmbLayoutPadding){0}, &ls) != MMB_OK) {
    c->wrong = -1;
    return NULL;
  }
  mmbArray *a, *s, *back;
  if (mmb_array_create(&d, la, c->iface, MMB_READ_WRITE, &a) != MMB_OK ||
      mmb_array_create(&d, ls, c->iface, MMB_READ_WRITE, &s) != MMB_OK ||
      mmb_array_create(&d, la, c->iface, MMB_READ_WRITE, &back) != MMB_OK) {
    c->wrong = -1;
    return NULL;
  }
  size_t bytes = d.d[0] * c->rs;
  unsigned char *p = mmb_array_ptr(a), *q = mmb_array_ptr(back);
  for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(i * 37 + c->salt);
  for (int round = 0; round < 200; round++) {
    memset(q, 0, bytes);
    if (mmb_array_copy(s, a) != MMB_OK || mmb_array_copy(back, s) != MMB_OK) c->wrong++;
    for (size_t e = 0; e < d.d[0]; e++)
      for (size_t f = 0; f < c->n_fields; f++) {
        size_t at = e * c->rs + c->fields[f].offset;
        if (memcmp(p + at, q + at, c->fields[f].size)) c->wrong++;
      }
  }
  if (mmb_array_destroy(a) != MMB_OK || mmb_array_destroy(s) != MMB_OK ||
      mmb_array_destroy(back) != MMB_OK || mmb_layout_destroy(la) != MMB_OK ||
      mmb_layout_destroy(ls) != MMB_OK)
    c->wrong = -1;
  return NULL;
}

MMB_TEST(record, threads_share_a_records_tables) {
  static const mmbRecordField small[] = {{"x", 4, 0}, {"y", 4, 4}, {"z", 4, 8}};
  static const mmbRecordField wide[] = {{"x", 8, 0}, {"y", 8, 8}, {"z", 8, 16}, {"vx", 8, 24},
                                        {"vy", 8, 32}, {"vz", 8, 40}, {"m", 4, 48},
                                        {"id", 4, 52}};
  mmbMemInterface *iface = test_interface(MMB_PROVIDER_SYSTEM, MMB_INTERFACE_THREAD_SAFE);
  converter c[4];
  pthread_t th[4];
  for (unsigned i = 0; i < 4; i++) {
    c[i] = (converter){.iface = iface, .fields = i % 2 ? wide : small, .n_fields = i % 2 ? 8 : 3,
                       .rs = i % 2 ? 56 : 12, .salt = i};
    cr_assert_eq(pthread_create(&th[i], NULL, convert_often, &c[i]), 0);
  }
  for (unsigned i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    cr_assert_eq(c[i].wrong, 0, "thread %u: %d wrong fields (-1: a call failed)", i, c[i].wrong);
  }
}
