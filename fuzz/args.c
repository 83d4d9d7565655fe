/* Fuzz target: the argument surface. The input's bytes become layouts
   (element size, rank, order, padding), array dims, chunk dims, tile
   indices, duplicate layouts and mmb_copy_nd's offsets, pitches and dims,
   edges included (0, huge, SIZE_MAX). Each call is checked against a model
   of what the headers promise: valid arguments succeed and move exactly the
   bytes the reference says, invalid ones are refused and change nothing. */
#include "input.h"

#include <stdbool.h>

#define SPACE_BYTES ((size_t)1 << 20)
#define MAX_TILES 4096

static mmbMemSpace *space;
static mmbMemInterface *iface;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  CHECK(mmb_init(&(mmbOptions){.log_level = MMB_LOG_OFF}) == MMB_OK, "init");
  mmbMemSpaceConfig cfg = {.size_limit = SPACE_BYTES, .name = "fuzz"};
  CHECK(mmb_request_space(MMB_DRAM, MMB_CPU, &cfg, &space) == MMB_OK, "space");
  CHECK(mmb_request_interface(space, NULL, &iface) == MMB_OK, "interface");
  return 0;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 8));
}

/* ---- mmb_copy_nd ---------------------------------------------------------- */

typedef unsigned __int128 u128;

typedef struct side_model {
  size_t off, size;
  size_t stride[MMB_MAX_DIMS];
} side_model;

/* 0: valid; 1: out of bounds or a dim wider than its pitch; 2: overflow. */
static int model_side(size_t size, const size_t *offset, const size_t *pitch, size_t ndims,
                      const size_t *dims, side_model *out) {
  u128 off = offset[0], span = dims[0];
  for (size_t k = 1; k < ndims; k++) {
    u128 stride = pitch[k - 1], unit = k == 1 ? 1 : pitch[k - 2];
    u128 inner = ((u128)offset[k - 1] + dims[k - 1]) * unit;
    if (inner > SIZE_MAX) return 2;
    if (inner > stride) return 1;
    off += (u128)offset[k] * stride;
    span += (u128)(dims[k] - 1) * stride;
    if (off > SIZE_MAX || span > SIZE_MAX) return 2;
    out->stride[k] = pitch[k - 1];
  }
  if (off + span > SIZE_MAX) return 2;
  if (off + span > size) return 1;
  out->off = (size_t)off;
  out->size = size;
  return 0;
}

/* Calls fn(dst_byte, src_byte, width) for every row, in order. */
static void for_rows(const side_model *d, const side_model *s, size_t ndims, const size_t *dims,
                     void (*fn)(size_t, size_t, size_t, void *), void *arg) {
  size_t idx[MMB_MAX_DIMS] = {0};
  for (;;) {
    size_t da = d->off, sa = s->off;
    for (size_t k = 1; k < ndims; k++) {
      da += idx[k] * d->stride[k];
      sa += idx[k] * s->stride[k];
    }
    fn(da, sa, dims[0], arg);
    size_t k = 1;
    while (k < ndims && ++idx[k] == dims[k]) idx[k++] = 0;
    if (k == ndims) return;
  }
}

typedef struct rowcopy {
  unsigned char *dst;
  const unsigned char *src;
} rowcopy;

static void copy_row(size_t da, size_t sa, size_t w, void *arg) {
  rowcopy *r = arg;
  memcpy(r->dst + da, r->src + sa, w);
}

static void mark_row(size_t da, size_t sa, size_t w, void *arg) {
  (void)sa;
  memset((unsigned char *)arg + da, 1, w);
}

typedef struct probe {
  const unsigned char *marks;
  bool hit;
} probe;

static void probe_row(size_t da, size_t sa, size_t w, void *arg) {
  probe *p = arg;
  (void)da;
  for (size_t i = 0; i < w; i++) p->hit |= p->marks[sa + i];
}

static bool contiguous(const side_model *x, size_t ndims, const size_t *dims) {
  size_t width = dims[0];
  for (size_t k = 1; k < ndims; k++) {
    if (dims[k] > 1 && x->stride[k] != width) return false;
    width *= dims[k];
  }
  return true;
}

static void fuzz_copy_nd(input *in) {
  size_t dsize = 1 + in_u8(in) * 16, ssize = 1 + in_u8(in) * 16;
  bool same = in_u8(in) % 4 == 0;
  mmbAllocation *d, *s;
  if (mmb_allocate(dsize, iface, &d) != MMB_OK) return;
  if (same) {
    s = d;
    ssize = dsize;
  } else if (mmb_allocate(ssize, iface, &s) != MMB_OK) {
    CHECK(mmb_free(d) == MMB_OK, "free");
    return;
  }
  unsigned char *dp = mmb_allocation_ptr(d), *sp = mmb_allocation_ptr(s);
  fill(dp, dsize, 1);
  if (!same) fill(sp, ssize, 2);
  size_t ndims = in_u8(in) % (MMB_MAX_DIMS + 2);
  size_t dims[MMB_MAX_DIMS + 1], doff[MMB_MAX_DIMS + 1], soff[MMB_MAX_DIMS + 1];
  size_t dpitch[MMB_MAX_DIMS + 1], spitch[MMB_MAX_DIMS + 1];
  for (size_t k = 0; k <= MMB_MAX_DIMS; k++) {
    dims[k] = in_size(in, k == 0 ? 64 : 4);
    doff[k] = in_u8(in) % 3 ? in_u8(in) % 8 : in_size(in, 64);
    soff[k] = in_u8(in) % 3 ? in_u8(in) % 8 : in_size(in, 64);
    dpitch[k] = in_size(in, 512);
    spitch[k] = in_u8(in) % 2 ? dpitch[k] : in_size(in, 512);
  }
  bool null_pitch = ndims == 1 && in_u8(in) % 2;

  unsigned char *before = malloc(dsize + ssize), *expect = malloc(dsize);
  CHECK(before && expect, "malloc");
  memcpy(before, dp, dsize);
  memcpy(before + dsize, sp, ssize);

  int valid = ndims >= 1 && ndims <= MMB_MAX_DIMS ? 0 : 1;
  for (size_t k = 0; !valid && k < ndims; k++) valid = dims[k] == 0;
  side_model dm = {0}, sm = {0};
  if (!valid) valid = model_side(dsize, doff, dpitch, ndims, dims, &dm);
  if (!valid) valid = model_side(ssize, soff, spitch, ndims, dims, &sm);
  bool refused_overlap = false;
  if (!valid) {
    memcpy(expect, dp, dsize);
    if (same) {   /* the header's rules for one allocation */
      unsigned char *marks = calloc(1, dsize);
      CHECK(marks, "calloc");
      for_rows(&dm, &sm, ndims, dims, mark_row, marks);
      probe p = {marks, false};
      for_rows(&dm, &sm, ndims, dims, probe_row, &p);
      free(marks);
      bool same_block = dm.off == sm.off;
      for (size_t k = 1; k < ndims; k++)
        same_block &= dims[k] == 1 || dm.stride[k] == sm.stride[k];
      if (p.hit && !same_block &&
          !(contiguous(&dm, ndims, dims) && contiguous(&sm, ndims, dims)))
        refused_overlap = true;
      else if (!same_block) {   /* disjoint rows, or one run each: read all, then write */
        unsigned char *tmp = malloc(dsize);
        CHECK(tmp, "malloc");
        memcpy(tmp, dp, dsize);
        for_rows(&dm, &sm, ndims, dims, copy_row, &(rowcopy){expect, tmp});
        free(tmp);
      }
    } else {
      for_rows(&dm, &sm, ndims, dims, copy_row, &(rowcopy){expect, sp});
    }
  }

  mmbError err = mmb_copy_nd(d, doff, null_pitch ? NULL : dpitch, s, soff,
                             null_pitch ? NULL : spitch, ndims, dims);
  CHECK_ERROR(err);
  if (valid || refused_overlap) {
    CHECK(err == MMB_INVALID_ARG || (valid == 2 && err == MMB_OVERFLOW),
          "copy_nd: expected a refusal (%d), got %s", valid, mmb_error_name(err));
    CHECK(!memcmp(before, dp, dsize) && !memcmp(before + dsize, sp, ssize),
          "a refused copy changed memory");
  } else {
    CHECK(err == MMB_OK, "copy_nd of valid arguments: %s", mmb_error_name(err));
    CHECK(!memcmp(expect, dp, dsize), "copy_nd moved other bytes than the reference");
    if (!same) CHECK(!memcmp(before + dsize, sp, ssize), "copy_nd wrote its source");
  }
  free(before);
  free(expect);
  CHECK(mmb_free(d) == MMB_OK, "free");
  if (!same) CHECK(mmb_free(s) == MMB_OK, "free");
}

/* ---- layouts, arrays, tiles, duplicates ---------------------------------- */

static bool layout_valid(size_t esize, size_t rank, unsigned order, size_t ra) {
  return esize && rank >= 1 && rank <= MMB_MAX_DIMS && order <= MMB_COLMAJOR &&
         (!ra || (!(ra & (ra - 1)) && ra % esize == 0 && ra <= MMB_MAX_ALIGNMENT));
}

static mmbLayout *fuzz_layout(input *in, size_t *rank_out, size_t *esize_out) {
  size_t esize = in_u8(in) % 4 ? (size_t)1 << (in_u8(in) % 4) : in_size(in, 16);
  size_t rank = in_u8(in) % 4 ? 1 + in_u8(in) % 3 : in_u8(in) % (MMB_MAX_DIMS + 3);
  unsigned order = in_u8(in) % 5 ? in_u8(in) % 2 : in_u8(in);
  size_t ra = in_u8(in) % 3 ? 0 : in_size(in, 256);
  mmbLayout *l = NULL;
  mmbError err = mmb_layout_create_regular_nd(esize, rank, (mmbLayoutOrder)order,
                                              (mmbLayoutPadding){ra}, &l);
  CHECK_ERROR(err);
  CHECK((err == MMB_OK) == layout_valid(esize, rank, order, ra),
        "layout(%zu, %zu, %u, %zu): %s", esize, rank, order, ra, mmb_error_name(err));
  *rank_out = rank;
  *esize_out = esize;
  return l;
}

/* Byte offset of element idx (absolute) of a tile. */
static size_t tile_offset(const mmbArrayTile *t, const size_t *idx) {
  size_t e = 0;
  for (size_t k = 0; k < t->rank; k++) e += (idx[k] - t->lower[k]) * t->stride[k];
  return e * t->element_size;
}

/* Calls fn on every element of the tile, by absolute index. */
static bool tile_next(const mmbArrayTile *t, size_t *idx) {
  for (size_t k = t->rank; k-- > 0;) {
    if (++idx[k] < t->upper[k]) return true;
    idx[k] = t->lower[k];
  }
  return false;
}

static void fuzz_tiles(input *in, mmbArray *a, size_t rank, size_t esize) {
  mmbDimensions dims, strides;
  CHECK(mmb_array_get_dims(a, &dims) == MMB_OK && mmb_array_get_strides(a, &strides) == MMB_OK, "dims");
  size_t crank = in_u8(in) % 5 ? rank : in_u8(in) % (MMB_MAX_DIMS + 2);
  mmbDimensions chunk = {.size = crank};
  size_t n_tiles = 1;
  bool chunk_ok = crank == rank;
  for (size_t k = 0; k < crank && k < MMB_MAX_DIMS; k++) {
    chunk.d[k] = in_size(in, 6);
    chunk_ok &= chunk.d[k] > 0;
    if (k < rank && chunk.d[k]) {
      size_t c = chunk.d[k] < dims.d[k] ? chunk.d[k] : dims.d[k];
      n_tiles *= dims.d[k] / c + (dims.d[k] % c != 0);
      if (n_tiles > MAX_TILES) return;   /* (a tiling that big is the caller's choice) */
    }
  }
  mmbError err = mmb_array_tile(a, &chunk);
  CHECK_ERROR(err);
  CHECK((err == MMB_OK) == chunk_ok || (chunk_ok && err == MMB_OUT_OF_MEMORY),
        "array_tile: %s", mmb_error_name(err));
  mmbDimensions grid;
  CHECK(mmb_array_tile_grid(a, &grid) == MMB_OK && grid.size == rank, "grid");
  for (int round = 0; round < 4; round++) {
    size_t irank = in_u8(in) % 6 ? rank : in_u8(in) % (MMB_MAX_DIMS + 2);
    mmbIndex idx = {.size = irank};
    bool idx_ok = irank == rank;
    for (size_t k = 0; k < irank && k < MMB_MAX_DIMS; k++) {
      idx.d[k] = in_u8(in) % 5 ? in_u8(in) % (grid.d[k < rank ? k : 0] + 1) : in_size(in, 4);
      idx_ok &= k < rank && idx.d[k] < grid.d[k];
    }
    mmbArrayTile *t = NULL;
    err = mmb_tile_at(a, &idx, &t);
    CHECK_ERROR(err);
    CHECK((err == MMB_OK) == idx_ok, "tile_at: %s", mmb_error_name(err));
    if (!t) continue;
    const unsigned char *home = mmb_array_ptr(a);
    size_t abytes;
    CHECK(mmb_array_get_bytes(a, &abytes) == MMB_OK, "bytes");
    CHECK(t->rank == rank && t->element_size == esize, "tile shape");
    size_t at[MMB_MAX_DIMS] = {0};   /* (zeroed: the analyser loses t->rank == rank over calls) */
    for (size_t k = 0; k < rank; k++) {
      CHECK(t->lower[k] < t->upper[k] && t->upper[k] <= dims.d[k], "tile bounds");
      CHECK(t->dim[k] == t->upper[k] - t->lower[k], "tile dim");
      at[k] = t->upper[k] - 1;
    }
    CHECK((const unsigned char *)t->ptr >= home &&
          (const unsigned char *)t->ptr + tile_offset(t, at) + esize <= home + abytes,
          "a tile reaches outside its array");
    /* a duplicate, with a layout of its own (maybe one that does not fit) */
    size_t lrank = 0, lesize = 0;
    mmbLayout *dl = in_u8(in) % 2 ? fuzz_layout(in, &lrank, &lesize) : NULL;
    mmbArrayTile *dup = NULL;
    err = mmb_tile_duplicate(t, space, MMB_READ_WRITE, dl, &dup);
    CHECK_ERROR(err);
    if (dl && (lrank != rank || lesize != esize))
      CHECK(err == MMB_INVALID_ARG, "a layout that does not fit: %s", mmb_error_name(err));
    if (dup) {
      size_t i[MMB_MAX_DIMS] = {0};   /* (as at) */
      for (size_t k = 0; k < rank; k++) i[k] = t->lower[k];
      unsigned v0 = in_u8(in), v = v0;
      do {   /* the duplicate holds the tile's data; then write it through */
        CHECK(!memcmp((char *)dup->ptr + tile_offset(dup, i), (char *)t->ptr + tile_offset(t, i),
                      esize), "a duplicate's element differs from its tile's");
        memset((char *)dup->ptr + tile_offset(dup, i), (int)(v++), esize);
      } while (tile_next(t, i));
      CHECK(mmb_tile_merge(dup, MMB_MERGE_OVERWRITE) == MMB_OK, "merge");
      CHECK(mmb_tile_merge(dup, MMB_MERGE_OVERWRITE) == MMB_INVALID_ARG, "merged twice");
      for (size_t k = 0; k < rank; k++) i[k] = t->lower[k];
      v = v0;
      do {   /* the merge wrote every element back to the array's home */
        const unsigned char *e = (const unsigned char *)t->ptr + tile_offset(t, i);
        for (size_t b = 0; b < esize; b++)
          CHECK(e[b] == (unsigned char)v, "merged element differs from the duplicate's");
        v++;
      } while (tile_next(t, i));
    }
    if (dl) CHECK(mmb_layout_destroy(dl) == MMB_OK, "layout destroy");
  }
}

static void fuzz_arrays(input *in) {
  size_t rank, esize;
  mmbLayout *l = fuzz_layout(in, &rank, &esize);
  if (!l) return;
  size_t drank = in_u8(in) % 6 ? rank : in_u8(in) % (MMB_MAX_DIMS + 2);
  mmbDimensions dims = {.size = drank};
  bool ok = drank == rank;
  for (size_t k = 0; k < drank && k < MMB_MAX_DIMS; k++) {
    dims.d[k] = in_size(in, 12);
    ok &= dims.d[k] > 0;
  }
  mmbArray *a = NULL;
  mmbError err = mmb_array_create(&dims, l, iface, MMB_READ_WRITE, &a);
  CHECK_ERROR(err);
  if (!ok) CHECK(err == MMB_INVALID_ARG, "array of bad dims: %s", mmb_error_name(err));
  else CHECK(err == MMB_OK || err == MMB_OVERFLOW || err == MMB_OUT_OF_MEMORY,
             "array: %s", mmb_error_name(err));
  if (a) {
    size_t bytes;
    CHECK(mmb_array_get_bytes(a, &bytes) == MMB_OK, "bytes");
    fill(mmb_array_ptr(a), bytes, 3);
    fuzz_tiles(in, a, rank, esize);
    CHECK(mmb_array_destroy(a) == MMB_OK, "array destroy");
    CHECK(mmb_array_destroy(a) == MMB_INVALID_ARG, "array destroyed twice");
  }
  CHECK(mmb_layout_destroy(l) == MMB_OK, "layout destroy");
  CHECK(mmb_layout_destroy(l) == MMB_INVALID_ARG, "layout destroyed twice");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size};
  while (in.n) {
    if (in_u8(&in) % 2) fuzz_copy_nd(&in);
    else fuzz_arrays(&in);
  }
  mmbStats st;
  CHECK(mmb_interface_get_stats(iface, &st) == MMB_OK && st.used_current == 0,
        "%zu bytes left allocated", st.used_current);
  return 0;
}
