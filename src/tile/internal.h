/* Internal: tiles, their coherence record, views and the transfer and merge
   machinery that every tile and whole-array transport is built on. */
#ifndef MMB_TILE_INTERNAL_H
#define MMB_TILE_INTERNAL_H

#include "array/internal.h"
#include "queue/internal.h"

typedef struct mmb__tile mmb__tile;
typedef struct mmb__deferred mmb__deferred;   /* a job run later (mmb__job_defer) */

/* A tile: a grid tile of an array (array set, a view of the home or of its
   migrated storage) or a duplicate (origin set, storage of its own).
   Coherence: version counts the writes mmb made to the tile's data; a
   duplicate remembers its origin's version (and the origin array's
   whole_version) at the time it was copied, so a read-only duplicate knows
   when it has gone stale. A grid tile with storage is migrated: its block of
   the home is stale until it comes back. */
struct mmb__tile {
  mmbArrayTile pub;          /* first: what the caller sees; a handle (tile kind) */
  mmbArray *array;           /* grid tiles */
  mmb__tile *origin;         /* duplicates */
  mmbMemInterface *iface;    /* of the current storage */
  mmbAllocation *storage;    /* owned storage; NULL: a view of the home */
  mmbAccessType access;      /* duplicates: how it was asked for */
  /* version is atomic: a queue's task (libmmb_mpi's) may record a write
     while the caller reads the tile's state */
  _Atomic unsigned long long version;
  unsigned long long seen_version, seen_whole;
  size_t n_dups;             /* live duplicates made from it */
  mmbAllocation *local;      /* a copy of pub in a device space */
  mmb__request *pending;     /* the last asynchronous operation on it */
  /* the tile cache (cache.c), under its lock: a tile's cached copies, one
     per space; a copy's entry; how often a tile at home is acquired */
  struct mmb__cache_entry *cached, *entry;
  unsigned home_pins, home_write_pins;   /* (write pins: at most home_pins, as a copy's) */
  const mmbMemSpace *evicted_from;   /* the last space a copy was evicted from */
  uint64_t cache_id;                 /* its name in the trace's cache events; 0: none yet */
  bool placed;               /* migrated to its array's preferred space by tiling */
  bool merging;              /* a duplicate whose merge runs now (its merge function
                                may call mmb: the handle is refused meanwhile) */
  /* records (NULL: plain elements); SoA: pub.ptr is field 0 of element
     `first` of planes of `cap` elements (mmb__view_field) */
  const mmb__fieldset *rec;
  size_t first, cap;
};

/* A grid tile is a handle too: each has the header of one just before it. */
struct mmb__tile_slot {
  _Alignas(16) mmb__objhdr hdr;
  mmb__tile tile;
};

struct mmb__tiling {
  size_t n_tiles;
  size_t grid[MMB_MAX_DIMS];
  size_t chunk[MMB_MAX_DIMS];     /* the largest tile extent along each dimension */
  const size_t *cut[MMB_MAX_DIMS];   /* grid[k] + 1 boundaries along k, after the slots */
  bool cyclic;                       /* made by a block-cyclic distribution: */
  mmbBlockCyclic bc;                 /* ... this one (place.c) */
  struct mmb__tile_slot slots[];
};

/* ---- the interface duplicates draw on (dup_interface.c) ------------------ */
/* The pooled, thread-safe interface kept for a space (made on first use). */
mmbError mmb__dup_interface(mmbMemSpace *space, mmbMemInterface **out);
/* The allocator's release hook: destroys the space's interface if idle. */
void mmb__dup_interface_released(mmbMemSpace *space);
/* Forgets the table (finalize; the allocator tears the interfaces down). */
void mmb__dup_interfaces_forget(void);

/* The tile behind a caller's pointer, or NULL unless it is a live tile. */
static inline mmb__tile *mmb__tile_of(mmbArrayTile *t) {
  return mmb__object_is(t, MMB__KIND_TILE) ? (mmb__tile *)t : NULL;
}
/* The array's tiling, made (one tile, the whole array) if it has none. */
mmbError mmb__array_tiling(const char *func, mmbArray *a, struct mmb__tiling **out);
/* A new grid of chunk-shaped tiles over `a`, the old one released (tiling.c). */
mmbError mmb__tiling_new(const char *func, mmbArray *a, const size_t *chunk);
/* The same with grid[k] tiles along k between the boundaries that follow
   each other in `bounds` (grid[k] + 1 of them per dimension, checked by
   the caller: from 0 to the extent, increasing). */
mmbError mmb__tiling_new_irregular(const char *func, mmbArray *a, const size_t *grid,
                                   const size_t *bounds);
/* MMB_OK when this thread may wait for the work on a's tiles (none of it
   is queued behind the queue work the thread runs): asked before a grid
   goes (a destroy, a re-tile), which waits for it. The cache asks the same
   of the copies too before a flush or an eviction. */
mmbError mmb__tiling_may_wait(const char *func, const mmbArray *a);
/* Points a tile at storage (owned, or NULL for a view of the home). */
struct mmb__view;
void mmb__tile_set_storage(mmb__tile *t, const struct mmb__view *v, mmbAllocation *storage);
/* The view of a grid tile's block of the array's home, wherever it lives. */
struct mmb__view mmb__tile_home_view(const mmb__tile *t);
/* Points a grid tile at its block of the array's home. */
void mmb__tile_set_home(mmb__tile *t);
/* Records a write of t's data, as mmb's own writes are (its version, and
   its array's, move on): duplicates and cached copies made before are
   behind it. */
void mmb__tile_wrote(mmb__tile *t);
/* True for a read-only duplicate array whose origin has been written since. */
static inline bool mmb__array_stale(const mmbArray *a) {
  return a->origin && !(a->access & MMB_WRITE) && a->origin->version != a->origin_seen;
}
/* For the tile cache (cache.c): a duplicate made for it; a duplicate's
   data written into its origin, or its origin's into it, the duplicate
   kept (both then hold the same version); a duplicate released, written
   back first or not. Each runs now (q NULL) or on q; a duplicate made or
   refreshed with `later` runs when the caller runs the job it gets there. */
mmbError mmb__tile_duplicate_in(const char *func, mmb__tile *t, mmbMemSpace *space,
                                mmbAccessType access, mmbQueue *q, mmbRequest *req,
                                mmb__deferred **later, mmb__tile **out);
mmbError mmb__tile_write_back(const char *func, mmb__tile *dup, mmbQueue *q);
mmbError mmb__tile_refresh(const char *func, mmb__tile *dup, mmbQueue *q, mmbRequest *req,
                           mmb__deferred **later);
mmbError mmb__tile_release_dup(const char *func, mmb__tile *dup, bool write_back, mmbQueue *q);
/* True for a duplicate whose origin has been written since it was copied. */
bool mmb__tile_dup_behind(const mmb__tile *dup);
/* True when releasing the duplicate without writing it back would not wait:
   no work is pending on it, its origin or the origin's array. */
bool mmb__tile_dup_idle(const mmb__tile *dup);
/* The tile cache: an array's copies dropped unless one is pinned
   (mmb_array_destroy's hook), a space's release refused from an
   out-of-memory handler the cache's own allocation reached (its cache
   would go under the lock this thread holds), a released space's cache
   gone, dirty copies home before mmb reads or writes a home, everything
   forgotten (finalize). */
mmbError mmb__cache_drop_array(mmbArray *array);
mmbError mmb__cache_space_leaving(const char *func);
void mmb__cache_space_gone(mmbMemSpace *space);
mmbError mmb__cache_home_current(const char *func, mmbArray *a, mmb__tile *t);
/* mmb__cache_home_current as tile.c and array_transport.c reach it:
   through a hook (defined in tile.c, set by the lifecycle), since cache.c
   calls tile.c and a direct call back would make a cycle. */
extern mmbError (*mmb__home_current_hook)(const char *func, mmbArray *a, mmb__tile *t);
static inline mmbError mmb__home_current(const char *func, mmbArray *a, mmb__tile *t) {
  return mmb__home_current_hook ? mmb__home_current_hook(func, a, t) : MMB_OK;
}
void mmb__caches_finalize(void);
mmbError mmb__caches_init(void);   /* reads MMB_CACHE */
/* The tile cache's steps of a space's out-of-memory chain (the hook the
   lifecycle sets: mmb__space_set_oom_hook). */
bool mmb__cache_oom_step(mmbMemSpace *space, int step);
/* Releases a duplicate on q without writing it back (after q's work). */
mmbError mmb__tile_discard_async(mmbArrayTile *dup, mmbQueue *q);
/* Releases a tile's owned storage and space-local copy. */
void mmb__tile_drop_storage(mmb__tile *t);

/* ---- views (transfer.c) -------------------------------------------------- */
/* Elements of one rank and size, at ptr with strides in elements, in memory
   of iface (NULL: plain host memory). */
typedef struct mmb__view {
  mmbMemInterface *iface;
  char *ptr;
  size_t esize, rank;
  size_t dim[MMB_MAX_DIMS], stride[MMB_MAX_DIMS];
  /* records (NULL: plain elements of esize bytes). SoA storage holds one
     plane of `cap` elements per field; ptr is field 0 of element `first`
     of its plane, and every plane shares the strides. */
  const mmb__fieldset *rec;
  size_t first, cap;
} mmb__view;

static inline mmb__view mmb__tile_view(const mmb__tile *t) {
  mmb__view v = {.iface = t->iface, .ptr = t->pub.ptr, .esize = t->pub.element_size,
                 .rank = t->pub.rank, .rec = t->rec, .first = t->first, .cap = t->cap};
  for (size_t k = 0; k < v.rank; k++) {
    v.dim[k] = t->pub.dim[k];
    v.stride[k] = t->pub.stride[k];
  }
  return v;
}
mmb__view mmb__array_view(const mmbArray *a);
static inline bool mmb__view_host(const mmb__view *v) {
  return !v->iface || mmb__iface_host_accessible(v->iface);
}
static inline size_t mmb__view_bytes(const mmb__view *v) {
  size_t n = v->esize;   /* bounded: the view lies in storage that exists */
  for (size_t k = 0; k < v->rank; k++) n *= v->dim[k];
  return n;
}
/* The dimensions of extent > 1 of a pair of views, innermost (smallest
   stride in d) first; strides in elements. */
typedef struct mmb__plan {
  size_t n;
  size_t dim[MMB_MAX_DIMS], ds[MMB_MAX_DIMS], ss[MMB_MAX_DIMS];
} mmb__plan;
static inline void mmb__plan_make(const mmb__view *d, const mmb__view *s, mmb__plan *p) {
  p->n = 0;
  for (size_t k = 0; k < d->rank; k++) {
    if (d->dim[k] == 1) continue;
    size_t i = p->n++;
    while (i > 0 && p->ds[i - 1] > d->stride[k]) {
      p->dim[i] = p->dim[i - 1];
      p->ds[i] = p->ds[i - 1];
      p->ss[i] = p->ss[i - 1];
      i--;
    }
    p->dim[i] = d->dim[k];
    p->ds[i] = d->stride[k];
    p->ss[i] = s->stride[k];
  }
}
/* Copies every element of src to dst (same rank and extents), any strides,
   any spaces: rows through the copy engine or the provider; a change of
   order element by element on the host, staged when a side is a device's.
   With a stream `on`: issued there, or MMB_UNSUPPORTED (nothing issued)
   when it is the host's to do (host pairs, staging, a side out of reach). */
mmbError mmb__view_copy(const char *func, const mmb__copy_engine *on, const mmb__view *dst,
                        const mmb__view *src);
/* A host buffer holding v's extents packed in v's own order (or in `like`'s
   order when given); free with mmb__free(out->ptr). */
mmbError mmb__view_stage(const mmb__view *v, const mmb__view *like, mmb__view *out);

/* ---- records (record.c) ------------------------------------------------- */
/* Field f of v's first element, and the bytes to the next element's. */
static inline char *mmb__view_field(const mmb__view *v, size_t f) {
  return mmb__record_field(v->rec, v->ptr, v->first, v->cap, f);
}
static inline size_t mmb__view_field_step(const mmb__view *v, size_t f) {
  return mmb__record_step(v->rec, v->esize, f);
}
/* True when the views' elements lie in memory alike (plain, or AoS records
   of one size and field offsets): their bytes copy as they are. */
bool mmb__view_alike(const mmb__view *a, const mmb__view *b);
/* The plain view of field f of an SoA view. */
mmb__view mmb__view_plane(const mmb__view *v, size_t f);
/* Converts the records of host view src into host view dst (same records,
   stored otherwise), element by element in dst's order. */
void mmb__record_convert(const mmb__view *dst, const mmb__view *src);
/* Whether conversions may use AVX-512 where the CPU has it (true by
   default); false makes them take the AVX2 path, for its tests on CPUs
   with both. Not for use while conversions run. */
void mmb__record_use_avx512(bool on);
/* The same conversion as plain data, for a device's kernel
   (os/record_move.h); the pointers are the views' own, wherever they are,
   and a dimension contiguous on both sides with the one inside it is
   merged into that one (a packed array of any rank moves as rank 1). */
void mmb__record_moves_make(const mmb__view *dst, const mmb__view *src, mmb__record_moves *out);

/* ---- storage (transfer.c) ------------------------------------------------ */
/* New storage for a tile's extents in `space` (mmb's own interface there),
   laid out by `l` (NULL: packed in `order`). Fills the view's iface, ptr and
   strides; rank, esize and dim must be set. */
mmbError mmb__storage_new(const char *func, mmbMemSpace *space, const mmbLayout *l,
                          mmbLayoutOrder order, mmb__view *v, mmbAllocation **out);

/* ---- merges (merge.c) ---------------------------------------------------- */
typedef struct mmb__merge_op {
  mmbMergeType type;
  mmbElementType etype;
  mmbMergeFunction fn;     /* set: a user merge */
  void *user;
} mmb__merge_op;
mmbError mmb__merge_op_check(const char *func, const mmb__merge_op *op);
/* An overwrite without a user function: a plain copy. */
bool mmb__merge_is_copy(const mmb__merge_op *op);
/* Folds src into dst (same rank and extents) as op says. */
mmbError mmb__view_merge(const char *func, const mmb__view *dst, const mmb__view *src,
                         const mmb__merge_op *op);

/* ---- jobs (job.c) --------------------------------------------------------
   Every transport is checked and prepared first (storage made, views
   worked out), then its data moves: now, or on a queue. Its bookkeeping
   (the coherence record, the tile's fields) is committed by the caller
   once the job has run (synchronous) or been submitted (asynchronous), so
   later calls see the new state at once and only the bytes are in flight. */
typedef enum { MMB__JOB_NONE, MMB__JOB_COPY, MMB__JOB_MERGE } mmb__job_kind;

typedef struct mmb__job {
  const char *func, *name;          /* name: the trace event */
  mmb__job_kind kind;
  mmb__view dst, src;
  mmb__merge_op op;
  const mmbMemSpace *from, *to;     /* for the trace */
  mmbAllocation *made;              /* made for it: freed if it never runs */
  mmbAllocation *retired[2];        /* left behind: freed once the data moved */
  /* hazards: `own` objects get this job as their last operation; `also`
     objects and every tile of the `whole` arrays are only waited for */
  mmb__request **own[2], **also[2];
  mmbArray *whole[2];
} mmb__job;

/* Runs the job (q NULL), or submits it on q with the caller's request. On
   MMB_OK the caller commits; on an error `made` has been freed and nothing
   changed. */
mmbError mmb__job_start(mmb__job *j, mmbQueue *q, mmbRequest *req);
/* Hazard slots of a tile: its own, and its array's (whole-array work). */
void mmb__job_own_tile(mmb__job *j, size_t i, mmb__tile *t);
/* A job its caller runs itself a moment later, with no lock held (the tile
   cache's fetches): mmb__job_defer takes its hazards now, as a queue would,
   so that later work on its tiles is ordered after it; it fails as
   mmb__job_start does. mmb__job_run_deferred then waits for the work
   before it, runs it, completes the request that stands for it (the `own`
   slots hold it) and frees it; it returns the job's error. */
mmbError mmb__job_defer(mmb__job *j, mmb__deferred **out);
mmbError mmb__job_run_deferred(mmb__deferred *d);

/* ---- trace helpers ------------------------------------------------------- */
static inline uint64_t mmb__tile_trace_start(void) {
  return mmb__trace_active() ? mmb__now_ns() : 0;
}
static inline void mmb__tile_trace_end(const char *name, uint64_t start, const mmb__view *v,
                                       const mmbMemSpace *from, const mmbMemSpace *to) {
  if (start) mmb__trace_duration(name, start, mmb__view_bytes(v), from, to);
}

#endif /* MMB_TILE_INTERNAL_H */
