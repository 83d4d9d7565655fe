/* Internal: layouts and arrays, shared with src/tile (which builds tiling and
   every transport on them). src/array never calls tile code: an array only
   holds the tiling src/tile attaches, and a hook to release it. */
#ifndef MMB_ARRAY_INTERNAL_H
#define MMB_ARRAY_INTERNAL_H

#include "alloc/internal.h"

struct mmbLayout {
  size_t element_size;
  size_t rank;
  mmbLayoutOrder order;
  size_t row_alignment;      /* bytes, 0 = none */
  mmbElementType type;
};

/* Strides (elements) and total bytes of `rank` extents laid out as `l` says
   (l->rank is not consulted: a 1-D layout lays out any tile of rank 1).
   MMB_OVERFLOW when a size does not fit in size_t. */
mmbError mmb__layout_strides(const char *func, const mmbLayout *l, size_t rank,
                             const size_t *dims, size_t *stride, size_t *bytes);
/* The index of the contiguous dimension. */
static inline size_t mmb__layout_inner(const mmbLayout *l, size_t rank) {
  return l->order == MMB_COLMAJOR ? 0 : rank - 1;
}
/* Checks a layout given for storage of `rank` extents of `esize` bytes. */
mmbError mmb__layout_fits(const char *func, const mmbLayout *l, size_t rank, size_t esize);
static inline bool mmb__access_valid(mmbAccessType a) {
  return a == MMB_READ || a == MMB_WRITE || a == MMB_READ_WRITE;
}

struct mmb__tiling;   /* src/tile */
struct mmb__request;  /* src/queue */

struct mmbArray {
  mmbLayout layout;
  size_t rank;
  size_t dims[MMB_MAX_DIMS];
  size_t stride[MMB_MAX_DIMS];   /* elements, home storage */
  size_t bytes;                  /* home storage, padding included */
  size_t alignment;              /* of the home storage */
  mmbMemInterface *iface;        /* holds the home storage */
  mmbAllocation *home;           /* owned storage; NULL when wrapped or in a region */
  mmbRegion *region;             /* the region holding the home, if any */
  mmbMemInterface *wrapped_on;   /* wrapped: the interface it was made on, kept busy (its
                                    n_wrapped) until the array is destroyed */
  char *data;                    /* the home storage */
  mmbAccessType access;
  /* coherence: every write mmb makes bumps version; whole-array writes also
     whole_version (so tile duplicates can tell). */
  _Atomic unsigned long long version, whole_version;   /* (atomic: as a tile's) */
  /* duplicate arrays: the origin and its version when copied */
  mmbArray *origin;
  unsigned long long origin_seen;
  size_t n_array_dups;           /* live duplicate arrays of this one */
  /* kept by src/tile */
  struct mmb__tiling *tiling;
  void (*tiling_release)(mmbArray *array);
  size_t n_tile_dups;            /* live duplicates of its tiles (cached copies included) */
  size_t n_cached;               /* copies of its tiles in tile caches */
  void (*cache_drop)(mmbArray *array);   /* drops the unpinned ones (src/tile) */
  size_t n_migrated;             /* tiles living away from home */
  size_t n_placed;               /* ... of them, placed there by tiling (preferred) */
  mmbMemSpace *preferred;        /* the interface's space, when the home landed in its
                                    fallback: tiling places tiles there while they fit */
  size_t n_iterators;
  struct mmb__request *pending;  /* the last asynchronous whole-array operation */
};

/* Checks a handle an array function was given. */
#define MMB__ARRAY_ARG(a, func) MMB__HANDLE((a), MMB__KIND_ARRAY, (func), "array")

/* The part of array creation that lays out and checks, shared by duplicate. */
mmbError mmb__array_new(const char *func, const size_t *dims, size_t rank, const mmbLayout *l,
                        mmbMemInterface *iface, mmbAccessType access, mmbArray **out);
/* Allocates an owned home of a->bytes at a->alignment for `a` in `iface`
   into *out (the array itself is not changed); *out_iface is the
   interface whose space holds it: iface, or the one mmb made in iface's
   fallback space when the allocation landed there. */
mmbError mmb__array_alloc_home(const char *func, mmbArray *a, mmbMemInterface *iface,
                               unsigned flags, mmbAllocation **out, mmbMemInterface **out_iface);
/* Makes `home` (from mmb__array_alloc_home on `asked`, landed on
   `landed`) the array's home: where it landed is its interface, and the
   space asked for, if it is not that, the one its tiles prefer. */
void mmb__array_take_home(mmbArray *a, mmbAllocation *home, mmbMemInterface *asked,
                          mmbMemInterface *landed);

#endif /* MMB_ARRAY_INTERNAL_H */
