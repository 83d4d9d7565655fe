/* Copies between allocations: every range is checked here, then contiguous
   dimensions are folded together and the copy goes to the host engine (both
   sides host accessible) or to the provider of the side that is not. */
#include "alloc/move/move.h"

#include <string.h>
#include <time.h>
#include <sys/prctl.h>

typedef mmb__copy_side side;

static mmbError overflow(const char *func, const char *which) {
  return mmb__fail(MMB_OVERFLOW, func, "%s range overflows size_t", which);
}

static mmbError check_side(const char *func, const char *which, mmbAllocation *h,
                           const size_t *offset, const size_t *pitch, size_t ndims,
                           const size_t *dims, side *out) {
  mmbAllocation *a = mmb__handle_open(h);
  MMB__ARG(!a, func, "%s %p is not a live allocation", which, (void *)h);
  size_t off = offset[0], span = dims[0], t;
  for (size_t k = 1; k < ndims; k++) {
    size_t stride = pitch[k - 1];
    /* dim k-1, with its offset, must fit in one step of dim k */
    size_t inner, unit = k == 1 ? 1 : pitch[k - 2];
    if (mmb__add_overflows(offset[k - 1], dims[k - 1], &inner) ||
        mmb__mul_overflows(inner, unit, &inner))
      return overflow(func, which);
    MMB__ARG(inner > stride, func, "%s: dim %zu (%zu bytes with its offset) is wider than "
             "its pitch %zu", which, k - 1, inner, stride);
    if (mmb__mul_overflows(offset[k], stride, &t) || mmb__add_overflows(off, t, &off) ||
        mmb__mul_overflows(dims[k] - 1, stride, &t) || mmb__add_overflows(span, t, &span))
      return overflow(func, which);
    out->stride[k] = stride;
  }
  size_t end;
  if (mmb__add_overflows(off, span, &end)) return overflow(func, which);
  MMB__ARG(end > a->size, func, "%s range ends at byte %zu, past the allocation's %zu bytes",
           which, end, a->size);
  out->a = a;
  out->offset = off;
  out->span = span;
  return MMB_OK;
}

/* Folds dims that are contiguous on both sides into their inner neighbour. */
static size_t collapse(size_t *ds, size_t *ss, size_t ndims, size_t *dims) {
  size_t n = 1;
  for (size_t k = 1; k < ndims; k++) {
    size_t inner_d = n == 1 ? dims[0] : ds[n - 1] * dims[n - 1];
    size_t inner_s = n == 1 ? dims[0] : ss[n - 1] * dims[n - 1];
    if (ds[k] == inner_d && ss[k] == inner_s) {
      dims[n - 1] *= dims[k];    /* fits: the callers bounded the ranges */
      continue;
    }
    dims[n] = dims[k];
    ds[n] = ds[k];
    ss[n] = ss[k];
    n++;
  }
  return n;
}

static mmbError device_copy(const mmb__copy_engine *e, char *dst, const size_t *ds,
                            const char *src, const size_t *ss, size_t ndims, const size_t *dims) {
  if (ndims == 1) return e->copy_2d(e->state, dst, dims[0], src, dims[0], dims[0], 1);
  if (ndims == 2) return e->copy_2d(e->state, dst, ds[1], src, ss[1], dims[0], dims[1]);
  if (ndims == 3 && e->copy_3d) {
    mmbError err = e->copy_3d(e->state, dst, ds[1], ds[2], src, ss[1], ss[2], dims[0],
                              dims[1], dims[2]);
    if (err != MMB_UNSUPPORTED) return err;
  }
  size_t k = ndims - 1;
  for (size_t i = 0; i < dims[k]; i++) {
    mmbError err = device_copy(e, dst + i * ds[k], ds, src + i * ss[k], ss, k, dims);
    if (err != MMB_OK) return err;
  }
  return MMB_OK;
}

static bool host_side(const mmbMemInterface *i) { return !i || mmb__iface_host_accessible(i); }

/* Whether the stream `on` can do the copy (host pairs stay on the host). */
static bool stream_reaches(const mmb__copy_engine *on, mmbMemInterface *di, mmbMemInterface *si) {
  bool dh = host_side(di), sh = host_side(si);
  return !(dh && sh) && (dh || on->reaches(on->state, di)) && (sh || on->reaches(on->state, si));
}

/* MMB_EMULATE's bw=: the throttled space a copy goes through (the slower
   side's), NULL for none. A space requested from a throttled one (a
   limited child of the emulated HBM, or of DRAM with DRAM:bw=) is held to
   its rate. */
static mmbMemSpace *space_throttle(mmbMemSpace *space) {
  for (mmbMemSpace *s = space; s; s = s->parent)
    if (s->throttle) return s;
  return NULL;
}
static mmbMemSpace *throttle_of(const mmbMemInterface *di, const mmbMemInterface *si) {
  mmbMemSpace *d = di ? space_throttle(di->space) : NULL, *s = si ? space_throttle(si->space) : NULL;
  return d && s ? (d->throttle <= s->throttle ? d : s) : d ? d : s;
}

/* A throttled space is one link, as a bus is: the copies to and from it
   share its rate, in turn. A copy of `bytes` begun at `start` (ns) books
   the link's next free span of bytes / rate and ends no sooner than that
   span does (so two copies at once take twice as long, not half).
   It ends at the span's end, not later: nanosleep wakes 60-200 us late on
   virtual machines even with a timer slack of 1 ns, which on a tile's span
   of 0.6 ms ran a link of 1 GiB/s at 0.89 GiB/s, the link idle while the
   copy overslept. So it sleeps to PACE_SPIN_NS short of the end and spins
   until the end. It does not yield there: where every core computes, the
   copy worker shares one with a computing thread, and a yield hands that
   thread the core for its time slice, which ended a 12 us span 3 ms late. */
#define PACE_SPIN_NS 250000u

static void pace(mmbMemSpace *link, uint64_t start, size_t bytes) {
  uint64_t span = (uint64_t)((double)bytes * 1e9 / (double)link->throttle), want;
  uint64_t free_at = atomic_load_explicit(&link->link_free_ns, memory_order_relaxed);
  do {
    want = (free_at > start ? free_at : start) + span;
  } while (!atomic_compare_exchange_weak_explicit(&link->link_free_ns, &free_at, want,
                                                  memory_order_relaxed, memory_order_relaxed));
  uint64_t now = mmb__now_ns();
  if (now >= want) return;
  /* the default timer slack (50 us) would add more than a tile's span */
  static _Thread_local bool tight;
  if (!tight) {
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);   /* a hint: without it, coarser */
    tight = true;
  }
  for (; now < want; now = mmb__now_ns()) {
    uint64_t left = want - now;
    if (left <= PACE_SPIN_NS) {
      mmb__cpu_relax();
      continue;
    }
    left -= PACE_SPIN_NS;
    struct timespec ts = {.tv_sec = (time_t)(left / 1000000000u), .tv_nsec = (long)(left % 1000000000u)};
    (void)nanosleep(&ts, NULL);
  }
}

unsigned mmb__copy_threads(const mmbMemInterface *di, const mmbMemInterface *si) {
  unsigned d = di ? di->copy_threads : 0, s = si ? si->copy_threads : 0;
  return d > s ? d : s;
}

static void copy_host(char *dst, const size_t *ds, const char *src, const size_t *ss, size_t ndims,
                      const size_t *dims, mmbMemSpace *link, const mmbMemInterface *di,
                      const mmbMemInterface *si) {
  uint64_t start = link ? mmb__now_ns() : 0;
  int numa = di ? di->space->info.numa_node : -1;
  mmb__engine_copy(dst, ds, src, ss, ndims, dims, mmb__copy_threads(di, si), numa);
  if (link) {
    size_t bytes = 1;
    for (size_t k = 0; k < ndims; k++) bytes *= dims[k];
    pace(link, start, bytes);
  }
}

mmbError mmb__copy_strided(const char *func, const mmb__copy_engine *on, mmbMemInterface *di,
                           char *dst, const size_t *dstride, mmbMemInterface *si,
                           const char *src, const size_t *sstride, size_t ndims,
                           const size_t *extent) {
  if (on && !stream_reaches(on, di, si)) return MMB_UNSUPPORTED;
  size_t dims[MMB_MAX_DIMS + 1], ds[MMB_MAX_DIMS + 1] = {0}, ss[MMB_MAX_DIMS + 1] = {0};
  memcpy(dims, extent, ndims * sizeof *dims);
  for (size_t k = 1; k < ndims; k++) {
    ds[k] = dstride[k];
    ss[k] = sstride[k];
  }
  ndims = collapse(ds, ss, ndims, dims);
  if (!on && host_side(di) && host_side(si)) {
    copy_host(dst, ds, src, ss, ndims, dims, throttle_of(di, si), di, si);
    return MMB_OK;
  }
  const char *name = "stream";
  mmb__copy_engine by_provider;
  if (!on) {
    const mmb__provider *p = !host_side(di) ? &di->provider : &si->provider;
    if (!p->ops->copy_2d)
      return mmb__fail(MMB_UNSUPPORTED, func, "provider '%s' cannot copy", p->ops->name);
    by_provider = (mmb__copy_engine){p->state, p->ops->copy_2d, p->ops->copy_3d, NULL};
    on = &by_provider;
    name = p->ops->name;
  }
  mmbError err = device_copy(on, dst, ds, src, ss, ndims, dims);
  /* never MMB_UNSUPPORTED once something may have been issued */
  if (err == MMB_UNSUPPORTED) err = MMB_ERROR;
  return err == MMB_OK ? MMB_OK : mmb__fail(err, func, "%s copy failed: %s", name,
                                           mmb_error_string(err));
}

/* The rows of one side, in address order (each dimension fits in the next
   one's pitch, so lexicographic order is address order). */
typedef struct rows {
  const side *s;
  size_t ndims, idx[MMB_MAX_DIMS], start;
  const size_t *dims;
  bool done;
} rows;

static void rows_first(rows *r, const side *s, size_t ndims, const size_t *dims) {
  *r = (rows){.s = s, .ndims = ndims, .dims = dims, .start = s->offset};
}

static void rows_next(rows *r) {
  for (size_t k = 1; k < r->ndims; k++) {
    if (++r->idx[k] < r->dims[k]) {
      r->start += r->s->stride[k];
      return;
    }
    r->start -= (r->dims[k] - 1) * r->s->stride[k];
    r->idx[k] = 0;
  }
  r->done = true;
}

/* Whether two blocks of one allocation share a byte: a merge of their rows,
   as long as the copy's own walk over them. */
static bool blocks_share_bytes(const side *d, const side *s, size_t ndims, const size_t *dims) {
  if (d->a != s->a || d->offset >= s->offset + s->span || s->offset >= d->offset + d->span)
    return false;
  rows x, y;
  rows_first(&x, d, ndims, dims);
  rows_first(&y, s, ndims, dims);
  while (!x.done && !y.done) {
    if (x.start + dims[0] <= y.start) rows_next(&x);
    else if (y.start + dims[0] <= x.start) rows_next(&y);
    else return true;
  }
  return false;
}

/* Bytes of a side that is one contiguous run, else 0. */
static size_t contiguous_bytes(const side *x, size_t ndims, const size_t *dims) {
  size_t width = dims[0];
  for (size_t k = 1; k < ndims; k++) {
    if (dims[k] > 1 && x->stride[k] != width) return 0;
    width *= dims[k];
  }
  return width;
}

/* Decides, at submission, what a copy within one allocation is: blocks that
   share no byte copy like any others; the very same block is left as it is;
   overlapping contiguous runs of host memory move as by memmove; anything
   else that overlaps is refused. */
static mmbError check_overlap(const char *func, mmb__copy_plan *p) {
  if (!blocks_share_bytes(&p->d, &p->s, p->ndims, p->dims)) return MMB_OK;
  bool same = p->d.offset == p->s.offset;
  for (size_t k = 1; k < p->ndims; k++) same &= p->dims[k] == 1 || p->d.stride[k] == p->s.stride[k];
  if (same) {
    p->same = true;
    return MMB_OK;
  }
  size_t run = contiguous_bytes(&p->d, p->ndims, p->dims);
  MMB__ARG(!run || run != contiguous_bytes(&p->s, p->ndims, p->dims), func,
           "the source and destination blocks share bytes of one allocation");
  MMB__ARG(!host_side(p->d.a->interface), func,
           "the source and destination overlap in memory the host cannot reach");
  p->move = run;
  return MMB_OK;
}

static mmbError run_copy(const char *func, const mmb__copy_plan *p, const mmb__copy_engine *on) {
  if (p->same) return MMB_OK;
  char *dst = (char *)p->d.a->ptr + p->d.offset;
  const char *src = (const char *)p->s.a->ptr + p->s.offset;
  if (p->move) {
    if (on) return MMB_UNSUPPORTED;   /* host memory: the host's to do */
    memmove(dst, src, p->move);
    return MMB_OK;
  }
  return mmb__copy_strided(func, on, p->d.a->interface, dst, p->d.stride, p->s.a->interface, src,
                           p->s.stride, p->ndims, p->dims);
}

mmbError mmb__copy_prepare(const char *func, mmbAllocation *dst, const size_t *doffset,
                           const size_t *dpitch, mmbAllocation *src, const size_t *soffset,
                           const size_t *spitch, size_t ndims, const size_t *dims,
                           mmb__copy_plan *out) {
  MMB__REQUIRE_INIT();
  MMB__ARG(ndims < 1 || ndims > MMB_MAX_DIMS, func, "%zu dims, not 1..%d", ndims, MMB_MAX_DIMS);
  MMB__ARG(!doffset || !soffset || !dims || (ndims > 1 && (!dpitch || !spitch)), func,
           "NULL offset, pitch or dims array");
  for (size_t k = 0; k < ndims; k++) MMB__ARG(dims[k] == 0, func, "dims[%zu] is 0", k);
  /* filled in place, only what ndims uses: the plan is a few hundred bytes,
     and zeroing or copying it whole costs more than a small copy itself */
  out->ndims = ndims;
  out->same = false;
  out->move = 0;
  mmbError err = check_side(func, "destination", dst, doffset, dpitch, ndims, dims, &out->d);
  if (err == MMB_OK) err = check_side(func, "source", src, soffset, spitch, ndims, dims, &out->s);
  if (err != MMB_OK) return err;
  memcpy(out->dims, dims, ndims * sizeof *dims);
  return check_overlap(func, out);
}

mmbError mmb__copy_run(const char *func, mmb__copy_plan *p, const mmb__copy_engine *on) {
  uint64_t start = !on && mmb__trace_active() ? mmb__now_ns() : 0;
  mmbError err = run_copy(func, p, on);
  if (start && err == MMB_OK) {
    size_t bytes = 1;
    for (size_t k = 0; k < p->ndims; k++) bytes *= p->dims[k];   /* bounded by the checks */
    mmb__trace_duration("copy", start, bytes, p->s.a->interface->space,
                        p->d.a->interface->space);
  }
  return err;
}

static mmbError run_now(const char *func, mmbError err, mmb__copy_plan *p) {
  return err == MMB_OK ? mmb__copy_run(func, p, NULL) : err;
}

mmbError mmb_copy_nd(mmbAllocation *dst, const size_t *doffset, const size_t *dpitch,
                     mmbAllocation *src, const size_t *soffset, const size_t *spitch,
                     size_t ndims, const size_t *dims) {
  mmb__copy_plan p;
  return run_now(__func__, mmb__copy_prepare(__func__, dst, doffset, dpitch, src, soffset, spitch,
                                             ndims, dims, &p), &p);
}

mmbError mmb__copy_prepare_2d(const char *func, mmbAllocation *dst, size_t dxoffset,
                              size_t dyoffset, size_t dxpitch, mmbAllocation *src,
                              size_t sxoffset, size_t syoffset, size_t spitch, size_t width,
                              size_t height, mmb__copy_plan *out) {
  const size_t doff[2] = {dxoffset, dyoffset}, dp[2] = {dxpitch, 0};
  const size_t soff[2] = {sxoffset, syoffset}, sp[2] = {spitch, 0};
  const size_t dims[2] = {width, height};
  return mmb__copy_prepare(func, dst, doff, dp, src, soff, sp, 2, dims, out);
}

mmbError mmb_copy_2d(mmbAllocation *dst, size_t dxoffset, size_t dyoffset, size_t dxpitch,
                     mmbAllocation *src, size_t sxoffset, size_t syoffset, size_t spitch,
                     size_t width, size_t height) {
  mmb__copy_plan p;
  return run_now(__func__, mmb__copy_prepare_2d(__func__, dst, dxoffset, dyoffset, dxpitch, src,
                                                sxoffset, syoffset, spitch, width, height, &p),
                 &p);
}

mmbError mmb_copy_1d(mmbAllocation *dst, size_t doffset, mmbAllocation *src, size_t soffset,
                     size_t width) {
  mmb__copy_plan p;
  return run_now(__func__, mmb__copy_prepare(__func__, dst, &doffset, NULL, src, &soffset, NULL,
                                             1, &width, &p), &p);
}

mmbError mmb__copy_prepare_whole(const char *func, mmbAllocation *dst, mmbAllocation *src,
                                 mmb__copy_plan *out) {
  MMB__REQUIRE_INIT();
  const mmbAllocation *d = mmb__handle_open(dst), *s = mmb__handle_open(src);
  MMB__ARG(!d || !s, func, "NULL or dead allocation");
  MMB__ARG(d->size < s->size, func, "destination (%zu bytes) is smaller than the "
           "source (%zu bytes)", d->size, s->size);
  size_t zero = 0, width = s->size;
  return mmb__copy_prepare(func, dst, &zero, NULL, src, &zero, NULL, 1, &width, out);
}

mmbError mmb_copy(mmbAllocation *dst, mmbAllocation *src) {
  mmb__copy_plan p;
  return run_now(__func__, mmb__copy_prepare_whole(__func__, dst, src, &p), &p);
}
