/* Moving the elements of one view into another. When both sides run along
   the same contiguous dimension the copy is a set of rows, which the copy
   engine (host pairs) or the provider (cudaMemcpy2D/3D) moves; a change of
   order is done on the host, through a packed staging buffer for a side the
   host cannot reach: a blocked SIMD transpose for 2-D views of 4- or 8-byte
   elements, element by element otherwise. */
#include "tile/internal.h"
#include "tile/transpose8.h"

#include <immintrin.h>
#include <string.h>

/* Rows: dims[0] in bytes, strides in bytes, as the copy engine wants them.
   With `elements`, each row is one element and every plan dim is outer: a
   copy between two views of one order whose contiguous dims have gaps. */
static mmbError copy_rows(const char *func, const mmb__copy_engine *on, const mmb__view *d,
                          const mmb__view *s, const mmb__plan *p, bool elements) {
  size_t es = d->esize, dims[MMB_MAX_DIMS + 1], ds[MMB_MAX_DIMS + 1] = {0},
         ss[MMB_MAX_DIMS + 1] = {0};
  size_t first = elements ? 0 : 1, n = p->n + (elements ? 1 : 0);
  if (n == 0) n = 1;
  dims[0] = elements || !p->n ? es : p->dim[0] * es;
  for (size_t k = first; k < p->n; k++) {
    size_t at = elements ? k + 1 : k;
    dims[at] = p->dim[k];
    ds[at] = p->ds[k] * es;
    ss[at] = p->ss[k] * es;
  }
  return mmb__copy_strided(func, on, d->iface, d->ptr, ds, s->iface, s->ptr, ss, n, dims);
}

static bool same_order(const mmb__plan *p) {
  for (size_t k = 1; k < p->n; k++)
    if (p->ss[k] < p->ss[k - 1]) return false;
  return true;
}

#define STEP(T)                                                              \
  for (size_t i = 0; i < n; i++) ((T *)dst)[i * dstep] = ((const T *)src)[i * sstep]; \
  return

/* One run along the destination's innermost dimension (steps in elements). */
static void step_run(char *dst, size_t dstep, const char *src, size_t sstep, size_t n,
                     size_t es) {
  switch (es) {
    case 1: STEP(uint8_t);
    case 2: STEP(uint16_t);
    case 4: STEP(uint32_t);
    case 8: STEP(uint64_t);
    default:
      for (size_t i = 0; i < n; i++) memcpy(dst + i * dstep * es, src + i * sstep * es, es);
  }
}

/* ---- a 2-D change of order: a blocked transpose ------------------------------ */

/* One 8 x 8 block of 4-byte elements, in AVX2 registers. */
__attribute__((target("avx2"))) static void transpose8x8(uint32_t *dst, size_t dp,
                                                         const uint32_t *src, size_t sp) {
  __m256 r[8];
  _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)
    r[i] = _mm256_loadu_ps((const float *)(src + i * sp));
  mmb__transpose8x8(r);
  _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++)
    _mm256_storeu_ps((float *)(dst + j * dp), r[j]);
}

/* One 4 x 4 block of 8-byte elements. */
__attribute__((target("avx2"))) static void transpose4x4(uint64_t *dst, size_t dp,
                                                         const uint64_t *src, size_t sp) {
  __m256d r0 = _mm256_loadu_pd((const double *)(src + 0 * sp));
  __m256d r1 = _mm256_loadu_pd((const double *)(src + 1 * sp));
  __m256d r2 = _mm256_loadu_pd((const double *)(src + 2 * sp));
  __m256d r3 = _mm256_loadu_pd((const double *)(src + 3 * sp));
  __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  _mm256_storeu_pd((double *)(dst + 0 * dp), _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd((double *)(dst + 1 * dp), _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd((double *)(dst + 2 * dp), _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd((double *)(dst + 3 * dp), _mm256_permute2f128_pd(t1, t3, 0x31));
}

/* dst (cols x rows, pitch dp) = src (rows x cols, pitch sp)^T in K x K
   register blocks within cache blocks of 16 KiB (BLOCK x BLOCK elements);
   ragged edges by the scalar loop. One driver per element type.
   A destination whose pitch is (close to) a multiple of 4 KiB would put a
   block's rows in the same few L1 sets and evict them as they are written
   (4096 x 4096 floats: 1.6x slower), so there each block is transposed
   into a packed buffer on the stack and its rows copied out. */
#define BLOCKED_TRANSPOSE(name, T, K, BLOCK, kernel)                                          \
  __attribute__((target("avx2"))) static void name(T *dst, size_t dp, const T *src, size_t sp, \
                                                   size_t rows, size_t cols) {                 \
    size_t pitch_mod = dp * sizeof(T) % 4096;                                                 \
    bool staged = pitch_mod < 256 || pitch_mod > 4096 - 256;                                  \
    _Alignas(64) T buf[BLOCK * BLOCK];                                                        \
    for (size_t i0 = 0; i0 < rows; i0 += BLOCK)                                               \
      for (size_t j0 = 0; j0 < cols; j0 += BLOCK) {                                           \
        size_t i1 = mmb__min(i0 + BLOCK, rows), j1 = mmb__min(j0 + BLOCK, cols), i = i0;      \
        /* the block's destination: dst itself, or buf (pitch BLOCK, from (j0, i0)) */        \
        T *d = staged ? buf - j0 * BLOCK - i0 : dst;                                          \
        size_t p = staged ? BLOCK : dp;                                                       \
        for (; i + K <= i1; i += K) {                                                         \
          size_t j = j0;                                                                      \
          for (; j + K <= j1; j += K) kernel(d + j * p + i, p, src + i * sp + j, sp);         \
          for (; j < j1; j++)                                                                 \
            for (size_t k = i; k < i + K; k++) d[j * p + k] = src[k * sp + j];                \
        }                                                                                     \
        for (; i < i1; i++)                                                                   \
          for (size_t j = j0; j < j1; j++) d[j * p + i] = src[i * sp + j];                    \
        if (staged)                                                                           \
          for (size_t j = j0; j < j1; j++)                                                    \
            memcpy(dst + j * dp + i0, buf + (j - j0) * BLOCK, (i1 - i0) * sizeof(T));         \
      }                                                                                       \
  }
BLOCKED_TRANSPOSE(transpose32, uint32_t, 8, 64, transpose8x8)
BLOCKED_TRANSPOSE(transpose64, uint64_t, 4, 32, transpose4x4)

/* A plan that is one 2-D transpose of 4- or 8-byte elements: the
   destination's contiguous dim is the source's outer one and the reverse. */
static bool transpose_2d(char *dst, const char *src, const mmb__plan *p, size_t es) {
  /* (libgcc's constructor has read the CPU's features before any call) */
  if ((es != 4 && es != 8) || p->n != 2 || p->ds[0] != 1 || p->ss[1] != 1 ||
      !__builtin_cpu_supports("avx2"))
    return false;
  /* element (a, b) of the plan: dst a + b ds[1], src a ss[0] + b; so src has
     dim[0] rows of dim[1] */
  if (es == 4)
    transpose32((uint32_t *)dst, p->ds[1], (const uint32_t *)src, p->ss[0], p->dim[0], p->dim[1]);
  else
    transpose64((uint64_t *)dst, p->ds[1], (const uint64_t *)src, p->ss[0], p->dim[0], p->dim[1]);
  return true;
}

static void permute(char *dst, const char *src, const mmb__plan *p, size_t k, size_t es) {
  if (k == 0) {
    step_run(dst, p->ds[0], src, p->ss[0], p->dim[0], es);
    return;
  }
  for (size_t i = 0; i < p->dim[k]; i++)
    permute(dst + i * p->ds[k] * es, src + i * p->ss[k] * es, p, k - 1, es);
}

/* Packed strides for v's extents, in the order of `order_of`'s strides. */
static void pack_like(const mmb__view *v, const mmb__view *order_of, size_t *stride) {
  size_t idx[MMB_MAX_DIMS], r = v->rank;
  for (size_t k = 0; k < r; k++) {
    size_t i = k;
    while (i > 0 && order_of->stride[idx[i - 1]] > order_of->stride[k]) {
      idx[i] = idx[i - 1];
      i--;
    }
    idx[i] = k;
  }
  size_t total = 1;
  for (size_t i = 0; i < r; i++) {
    stride[idx[i]] = total;
    total *= v->dim[idx[i]];
  }
}

/* v's extents packed at ptr (of iface; NULL: host memory of mmb's own), in
   the order of like's strides. */
static void view_packed(const mmb__view *v, const mmb__view *like, mmbMemInterface *iface,
                        void *ptr, mmb__view *out) {
  *out = *v;
  out->iface = iface;
  pack_like(v, like, out->stride);
  out->ptr = ptr;
  out->first = 0;   /* SoA: planes packed one after the other */
  out->cap = mmb__view_bytes(v) / v->esize;
}

mmbError mmb__view_stage(const mmb__view *v, const mmb__view *like, mmb__view *out) {
  view_packed(v, like ? like : v, NULL, mmb__malloc(mmb__view_bytes(v)), out);
  return out->ptr ? MMB_OK : MMB_OUT_OF_MEMORY;
}

/* Records whose views do not lie alike, or SoA: SoA pairs plane by plane;
   otherwise converted on a CUDA device where a side is one's, else on the
   host, a device side staged in its own storage (with a stream,
   MMB_UNSUPPORTED: the host does it). */
static mmbError record_copy(const char *func, const mmb__copy_engine *on, const mmb__view *d,
                           const mmb__view *s);

mmbError mmb__view_copy(const char *func, const mmb__copy_engine *on, const mmb__view *d,
                        const mmb__view *s) {
  if (!mmb__view_alike(d, s) || mmb__record_soa(d->rec)) return record_copy(func, on, d, s);
  mmb__plan p;
  mmb__plan_make(d, s, &p);
  if (p.n == 0 || (p.ds[0] == 1 && p.ss[0] == 1)) return copy_rows(func, on, d, s, &p, false);
  if (mmb__view_host(d) && mmb__view_host(s)) {
    if (on) return MMB_UNSUPPORTED;
    if (!transpose_2d(d->ptr, s->ptr, &p, d->esize)) permute(d->ptr, s->ptr, &p, p.n - 1, d->esize);
    return MMB_OK;
  }
  if (same_order(&p)) return copy_rows(func, on, d, s, &p, true);
  /* A change of order with a device side: stage the device side packed in
     its own order, so that its half of the trip is rows, and reorder on the
     host (both sides on devices: the recursion stages the source too). A
     stream leaves this to the host. */
  if (on) return MMB_UNSUPPORTED;
  mmb__view tmp;
  mmbError err = mmb__view_stage(!mmb__view_host(d) ? d : s, NULL, &tmp);
  if (err != MMB_OK) return mmb__fail(err, func, "no host staging buffer");
  err = mmb__view_copy(func, NULL, &tmp, s);
  if (err == MMB_OK) err = mmb__view_copy(func, NULL, d, &tmp);
  mmb__free(tmp.ptr);
  return err;
}

mmb__view mmb__array_view(const mmbArray *a) {
  mmb__view v = {.iface = a->iface, .ptr = a->data, .esize = a->layout.element_size,
                 .rank = a->rank, .rec = a->layout.rec, .cap = a->bytes / a->layout.element_size};
  for (size_t k = 0; k < a->rank; k++) {
    v.dim[k] = a->dims[k];
    v.stride[k] = a->stride[k];
  }
  return v;
}

mmbError mmb__storage_new(const char *func, mmbMemSpace *space, const mmbLayout *l,
                          mmbLayoutOrder order, mmb__view *v, mmbAllocation **out) {
  mmbLayout packed = {.element_size = v->esize, .rank = v->rank, .order = order, .rec = v->rec};
  if (!l) l = &packed;
  v->esize = l->element_size;   /* a record layout may store the same records otherwise */
  v->rec = l->rec;
  size_t bytes;
  mmbError err = mmb__layout_strides(func, l, v->rank, v->dim, v->stride, &bytes);
  if (err != MMB_OK) return err;
  mmbMemInterface *iface;
  if ((err = mmb__dup_interface(space, &iface)) != MMB_OK)
    return mmb__fail(err, func, "no interface on %s: %s", space->info.name,
                     mmb_error_string(err));
  mmbAllocateOptions o = {.alignment = l->row_alignment > MMB_DEFAULT_ALIGNMENT
                                           ? l->row_alignment : MMB_DEFAULT_ALIGNMENT};
  if ((err = mmb_allocate_opts(bytes, iface, &o, out)) != MMB_OK)
    return mmb__fail(err, func, "no room for %zu bytes in %s: %s", bytes, space->info.name,
                     mmb_error_string(err));
  v->iface = iface;
  v->ptr = mmb_allocation_ptr(*out);
  v->first = 0;
  v->cap = bytes / v->esize;
  return MMB_OK;
}

/* The CUDA device whose memory v is, or -1 (host memory, or a provider of
   the user's). */
static int cuda_device(const mmb__view *v) {
  if (!v->iface || mmb__view_host(v) || v->iface->provider.type != MMB_PROVIDER_CUDA) return -1;
  return v->iface->space->info.device < 0 ? 0 : v->iface->space->info.device;
}

/* v's extents packed in v's own storage, beside `by` (in mmb's interface
   of by's space, when that is memory of by's provider). */
static bool stage_beside(const mmb__view *v, const mmb__view *by, mmb__view *out,
                         mmbAllocation **out_alloc) {
  mmbMemInterface *iface;
  size_t bytes = mmb__view_bytes(v);
  if (!by->iface || mmb__dup_interface(by->iface->space, &iface) != MMB_OK ||
      iface->provider.type != by->iface->provider.type ||
      mmb_allocate(bytes, iface, out_alloc) != MMB_OK)
    return false;
  view_packed(v, v, iface, mmb_allocation_ptr(*out_alloc), out);
  return true;
}

/* Converts in the CUDA runtime's kernel on the device of d (or of s when d
   is not a CUDA device's): a side that lies elsewhere (the host, another
   device) is staged there in its own storage and copied as it lies, so the
   trip between them carries the bytes unchanged. false, with nothing done,
   when no staging buffer fits on the device: the host converts instead. */
static bool device_convert(const char *func, const mmb__cuda_runtime *rt, const mmb__view *d,
                           const mmb__view *s, mmbError *err) {
  int dd = cuda_device(d), sd = cuda_device(s), dev = dd >= 0 ? dd : sd;
  mmb__record_moves m;
  if (dd >= 0 && dd == sd) {
    mmb__record_moves_make(d, s, &m);
    *err = rt->convert(dev, &m);
  } else {
    bool into = dd >= 0;   /* the kernel writes d: s is staged beside it */
    mmb__view tmp;
    mmbAllocation *a;
    if (!stage_beside(into ? s : d, into ? d : s, &tmp, &a)) return false;
    if (into && (*err = mmb__view_copy(func, NULL, &tmp, s)) == MMB_OK) {
      mmb__record_moves_make(d, &tmp, &m);
      *err = rt->convert(dev, &m);
    } else if (!into) {
      mmb__record_moves_make(&tmp, s, &m);
      if ((*err = rt->convert(dev, &m)) == MMB_OK) *err = mmb__view_copy(func, NULL, d, &tmp);
    }
    mmbError f = mmb_free(a);
    if (*err == MMB_OK) *err = f;
  }
  if (*err != MMB_OK) *err = mmb__fail(*err, func, "record conversion on CUDA device %d: %s", dev,
                                       mmb_error_string(*err));
  return true;
}

static mmbError record_copy(const char *func, const mmb__copy_engine *on, const mmb__view *d,
                           const mmb__view *s) {
  if (mmb__view_alike(d, s)) {   /* both SoA: plane by plane, by any transport */
    for (size_t f = 0; f < d->rec->n; f++) {
      mmb__view pd = mmb__view_plane(d, f), ps = mmb__view_plane(s, f);
      mmbError err = mmb__view_copy(func, on, &pd, &ps);
      if (err != MMB_OK) return err;   /* (every plane takes the same path) */
    }
    return MMB_OK;
  }
  if (on) return MMB_UNSUPPORTED;
  if (mmb__view_host(d) && mmb__view_host(s)) {
    mmb__record_convert(d, s);
    return MMB_OK;
  }
  /* a side in a CUDA device's memory: converted there, in a kernel */
  const mmb__cuda_runtime *rt = mmb__os_cuda();
  mmbError err = MMB_OK;
  if (rt && rt->convert && (cuda_device(d) >= 0 || cuda_device(s) >= 0) &&
      device_convert(func, rt, d, s, &err))
    return err;
  /* other devices (or no room on one): each device side staged on the host
     in its own storage, packed, then converted */
  mmb__view hd = *d, hs = *s;
  bool stage_d = !mmb__view_host(d), stage_s = !mmb__view_host(s);
  if (stage_s && (err = mmb__view_stage(s, NULL, &hs)) == MMB_OK) {
    if ((err = mmb__view_copy(func, NULL, &hs, s)) != MMB_OK) mmb__free(hs.ptr);
  }
  if (err != MMB_OK) return err == MMB_OUT_OF_MEMORY ? mmb__fail(err, func, "no host staging "
                                                                  "buffer") : err;
  if (stage_d && (err = mmb__view_stage(d, NULL, &hd)) != MMB_OK)
    err = mmb__fail(err, func, "no host staging buffer");
  if (err == MMB_OK) {
    mmb__record_convert(&hd, &hs);
    if (stage_d) {
      err = mmb__view_copy(func, NULL, d, &hd);
      mmb__free(hd.ptr);
    }
  }
  if (stage_s) mmb__free(hs.ptr);
  return err;
}
