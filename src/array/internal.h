/* Internal: layouts and arrays, shared with src/tile (which builds tiling and
   every transport on them). src/array never calls tile code: an array only
   holds the tiling src/tile attaches, and a hook to release it. */
#ifndef MMB_ARRAY_INTERNAL_H
#define MMB_ARRAY_INTERNAL_H

#include "alloc/internal.h"

/* The fields of a record layout. Records are interned (mmb__record_intern):
   one immutable copy of each distinct description lives until finalize,
   so layouts, arrays, tiles and views point at it and copy it freely. */
typedef struct mmb__fieldset {
  size_t n;                       /* fields, 1..MMB_MAX_FIELDS */
  mmbRecordKind kind;
  size_t record_size;             /* AoS bytes per record */
  size_t payload;                 /* the sum of the sizes */
  size_t size[MMB_MAX_FIELDS], offset[MMB_MAX_FIELDS];
  size_t before[MMB_MAX_FIELDS];  /* the sizes of the fields before f (SoA planes) */
  char name[MMB_MAX_FIELDS][MMB_FIELD_NAME_MAX];
} mmb__fieldset;

/* SoA storage: the element count of every plane is a multiple of this, so
   each plane starts 64-byte aligned (or row_alignment, when larger). */
#define MMB__SOA_PLANE_ALIGN 64

struct mmbLayout {
  size_t element_size;       /* AoS: the record size; SoA: the payload */
  size_t rank;
  mmbLayoutOrder order;
  size_t row_alignment;      /* bytes, 0 = none */
  mmbElementType type;
  const mmb__fieldset *rec;    /* NULL: elements of one size */
};

/* The one interned copy of `r` (made on first use); NULL when out of memory. */
const mmb__fieldset *mmb__record_intern(const mmb__fieldset *r);
/* Slots an interned record keeps what is derived from it in (src/tile's
   conversion tables: published once with a compare-and-swap, freed with
   mmb__free at finalize). */
#define MMB__RECORD_MEMOS 2
void *_Atomic *mmb__record_memo(const mmb__fieldset *r, size_t slot);
void mmb__layouts_finalize(void);
static inline bool mmb__record_soa(const mmb__fieldset *r) {
  return r && r->kind == MMB_RECORD_SOA;
}
/* Field f of the element at `ptr` in storage of records r (NULL: plain,
   whose one field is the element): AoS at its offset; SoA in its plane,
   `ptr` being field 0 of element `first` of planes of `cap` elements. */
static inline char *mmb__record_field(const mmb__fieldset *r, char *ptr, size_t first, size_t cap,
                                      size_t f) {
  if (!r) return ptr;
  if (r->kind == MMB_RECORD_AOS) return ptr + r->offset[f];
  return ptr + cap * r->before[f] + first * r->size[f] - first * r->size[0];
}
/* Bytes from one element's field f to the next one's (esize: the storage's
   element size). */
static inline size_t mmb__record_step(const mmb__fieldset *r, size_t esize, size_t f) {
  return mmb__record_soa(r) ? r->size[f] : esize;
}
/* Describes field `index` of storage as above with strides `stride`. */
mmbError mmb__field_get(const char *func, const mmb__fieldset *r, size_t esize, char *ptr,
                        size_t first, size_t cap, size_t rank, const size_t *stride, size_t index,
                        mmbField *out);
/* Elements of two layouts hold the same data: the same records (field
   sizes), or both plain of one size. */
static inline bool mmb__elements_match(const mmb__fieldset *a, size_t ea, const mmb__fieldset *b,
                                       size_t eb) {
  if (!a || !b) return !a && !b && ea == eb;
  if (a->n != b->n) return false;
  for (size_t f = 0; f < a->n; f++)
    if (a->size[f] != b->size[f]) return false;
  return true;
}

/* Strides (elements) and total bytes of `rank` extents laid out as `l` says
   (l->rank is not consulted: a 1-D layout lays out any tile of rank 1).
   MMB_OVERFLOW when a size does not fit in size_t. */
mmbError mmb__layout_strides(const char *func, const mmbLayout *l, size_t rank,
                             const size_t *dims, size_t *stride, size_t *bytes);
/* The index of the contiguous dimension. */
static inline size_t mmb__layout_inner(const mmbLayout *l, size_t rank) {
  return l->order == MMB_COLMAJOR ? 0 : rank - 1;
}
/* Checks a layout given for storage of `rank` extents of elements `rec`
   (NULL: plain) of `esize` bytes. */
mmbError mmb__layout_fits(const char *func, const mmbLayout *l, size_t rank,
                          const mmb__fieldset *rec, size_t esize);
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
  mmbError (*tiling_may_wait)(const char *func, const mmbArray *array);   /* before release */
  size_t n_tile_dups;            /* live duplicates of its tiles (cached copies included) */
  size_t n_cached;               /* copies of its tiles in tile caches */
  size_t n_home_pins;            /* its tiles acquired at home (a tile cache's, unreleased) */
  mmbError (*cache_drop)(mmbArray *array);   /* drops them all, or none if one is pinned */
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
/* Allocates an owned home of `bytes` at `alignment` in `iface` into *out;
   *out_iface is the interface whose space holds it: iface, or the one mmb
   made in iface's fallback space when the allocation landed there. */
mmbError mmb__array_alloc_home(const char *func, size_t bytes, size_t alignment,
                               mmbMemInterface *iface, unsigned flags, mmbAllocation **out,
                               mmbMemInterface **out_iface);
/* Makes `home` (from mmb__array_alloc_home on `asked`, landed on
   `landed`) the array's home: where it landed is its interface, and the
   space asked for, if it is not that, the one its tiles prefer. */
void mmb__array_take_home(mmbArray *a, mmbAllocation *home, mmbMemInterface *asked,
                          mmbMemInterface *landed);

#endif /* MMB_ARRAY_INTERNAL_H */
