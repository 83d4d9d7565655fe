/* Layouts: element size (or records of named fields, AoS or SoA), order,
   row padding and element type, and the stride computation every array and
   tile storage goes through. */
#include "array/internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

mmbError mmb_element_type_size(mmbElementType type, size_t *out_bytes) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out_bytes, __func__, "out_bytes is NULL");
  switch (type) {
    case MMB_TYPE_BYTES: *out_bytes = 0; return MMB_OK;
    case MMB_TYPE_FLOAT: *out_bytes = sizeof(float); return MMB_OK;
    case MMB_TYPE_DOUBLE: *out_bytes = sizeof(double); return MMB_OK;
    case MMB_TYPE_INT32: *out_bytes = sizeof(int32_t); return MMB_OK;
    case MMB_TYPE_INT64: *out_bytes = sizeof(int64_t); return MMB_OK;
  }
  return mmb__fail(MMB_INVALID_ARG, __func__, "unknown element type %d", (int)type);
}

/* ---- records ------------------------------------------------------------- */

typedef struct interned {
  struct interned *next;
  mmb__fieldset rec;
  void *_Atomic memo[MMB__RECORD_MEMOS];
} interned;
static interned *records;
static pthread_mutex_t records_lock = PTHREAD_MUTEX_INITIALIZER;

const mmb__fieldset *mmb__record_intern(const mmb__fieldset *r) {
  pthread_mutex_lock(&records_lock);
  interned *i = records;
  while (i && memcmp(&i->rec, r, sizeof *r)) i = i->next;
  if (!i && (i = mmb__calloc(1, sizeof *i))) {
    i->rec = *r;
    i->next = records;
    records = i;
  }
  pthread_mutex_unlock(&records_lock);
  return i ? &i->rec : NULL;
}

void *_Atomic *mmb__record_memo(const mmb__fieldset *r, size_t slot) {
  interned *i = (interned *)((char *)r - offsetof(interned, rec));
  return &i->memo[slot];
}

void mmb__layouts_finalize(void) {
  pthread_mutex_lock(&records_lock);
  while (records) {
    interned *i = records;
    records = i->next;
    for (size_t k = 0; k < MMB__RECORD_MEMOS; k++) mmb__free(atomic_load(&i->memo[k]));
    mmb__free(i);
  }
  pthread_mutex_unlock(&records_lock);
}

/* The alignment a C compiler would give a field of `size` bytes (at most 16). */
static size_t field_align(size_t size) {
  size_t a = size & -size;
  return a > 16 ? 16 : a;
}

/* Checks the fields and fills `r` (zeroed by the caller). */
static mmbError record_fill(const char *func, const mmbRecordField *fields, size_t n,
                            size_t record_size, mmbRecordKind kind, mmb__fieldset *r) {
  MMB__ARG(!fields, func, "fields is NULL");
  MMB__ARG(n < 1 || n > MMB_MAX_FIELDS, func, "%zu fields, not 1..%d", n, MMB_MAX_FIELDS);
  MMB__ARG(kind != MMB_RECORD_AOS && kind != MMB_RECORD_SOA, func, "unknown record kind %d",
           (int)kind);
  size_t end = 0, align = 1;
  r->n = n;
  r->kind = kind;
  for (size_t f = 0; f < n; f++) {
    const mmbRecordField *x = &fields[f];
    size_t e;
    MMB__ARG(x->size == 0, func, "field %zu has size 0", f);
    MMB__ARG(mmb__add_overflows(x->offset, x->size, &e), func, "field %zu overflows", f);
    if (x->name) {
      MMB__ARG(strlen(x->name) >= MMB_FIELD_NAME_MAX, func, "field %zu: a name of %zu bytes, "
               "more than %d", f, strlen(x->name), MMB_FIELD_NAME_MAX - 1);
      for (size_t g = 0; g < f; g++)
        MMB__ARG(*x->name && !strcmp(x->name, r->name[g]), func, "two fields named \"%s\"",
                 x->name);
      strcpy(r->name[f], x->name);
    }
    for (size_t g = 0; g < f; g++)
      MMB__ARG(x->offset < r->offset[g] + r->size[g] && r->offset[g] < e, func,
               "fields %zu and %zu overlap", g, f);
    r->size[f] = x->size;
    r->offset[f] = x->offset;
    r->before[f] = r->payload;
    MMB__ARG(mmb__add_overflows(r->payload, x->size, &r->payload), func, "the record overflows");
    if (e > end) end = e;
    if (field_align(x->size) > align) align = field_align(x->size);
  }
  if (!record_size) {   /* padded as a C compiler pads a struct */
    if (mmb__add_overflows(end, align - 1, &record_size))
      return mmb__fail(MMB_OVERFLOW, func, "the record overflows");
    record_size &= ~(align - 1);
  }
  MMB__ARG(record_size < end, func, "a field ends at byte %zu, past the record's %zu", end,
           record_size);
  r->record_size = record_size;
  return MMB_OK;
}

static mmbError check_padding(const char *func, size_t ra, size_t esize, const mmb__fieldset *r) {
  if (!ra) return MMB_OK;
  bool fits = mmb__is_pow2(ra) && ra <= MMB_MAX_ALIGNMENT;
  if (!mmb__record_soa(r)) fits = fits && ra % esize == 0;
  for (size_t f = 0; mmb__record_soa(r) && f < r->n; f++) fits = fits && ra % r->size[f] == 0;
  MMB__ARG(!fits, func, "row_alignment %zu must be a power of two up to %zu and a multiple of "
           "the %s", ra, (size_t)MMB_MAX_ALIGNMENT,
           mmb__record_soa(r) ? "size of every field" : "element size");
  return MMB_OK;
}

static mmbError layout_create(const char *func, size_t esize, const mmb__fieldset *rec,
                              size_t rank, mmbLayoutOrder order, mmbLayoutPadding padding,
                              mmbLayout **out) {
  MMB__ARG(!out, func, "out_layout is NULL");
  MMB__ARG(esize == 0, func, "element size is 0");
  MMB__ARG(rank < 1 || rank > MMB_MAX_DIMS, func, "rank %zu, not 1..%d", rank, MMB_MAX_DIMS);
  MMB__ARG(order != MMB_ROWMAJOR && order != MMB_COLMAJOR, func, "unknown order %d", (int)order);
  size_t ra = padding.row_alignment;
  mmbError err = check_padding(func, ra, esize, rec);
  if (err != MMB_OK) return err;
  if (rec && !(rec = mmb__record_intern(rec))) return MMB_OUT_OF_MEMORY;
  mmbLayout *l = mmb__object_new(MMB__KIND_LAYOUT, sizeof *l);
  if (!l) return MMB_OUT_OF_MEMORY;
  *l = (mmbLayout){.element_size = esize, .rank = rank, .order = order, .row_alignment = ra,
                   .type = MMB_TYPE_BYTES, .rec = rec};
  *out = l;
  return MMB_OK;
}

mmbError mmb_layout_create_regular_1d(size_t element_size, mmbLayoutPadding padding,
                                      mmbLayout **out_layout) {
  MMB__REQUIRE_INIT();
  return layout_create(__func__, element_size, NULL, 1, MMB_ROWMAJOR, padding, out_layout);
}

mmbError mmb_layout_create_regular_nd(size_t element_size, size_t n_dims, mmbLayoutOrder order,
                                      mmbLayoutPadding padding, mmbLayout **out_layout) {
  MMB__REQUIRE_INIT();
  return layout_create(__func__, element_size, NULL, n_dims, order, padding, out_layout);
}

mmbError mmb_layout_create_record(const mmbRecordField *fields, size_t n_fields,
                                  size_t record_size, mmbRecordKind kind, size_t n_dims,
                                  mmbLayoutOrder order, mmbLayoutPadding padding,
                                  mmbLayout **out_layout) {
  MMB__REQUIRE_INIT();
  mmb__fieldset r;
  memset(&r, 0, sizeof r);   /* (interning compares the whole struct) */
  mmbError err = record_fill(__func__, fields, n_fields, record_size, kind, &r);
  if (err != MMB_OK) return err;
  return layout_create(__func__, kind == MMB_RECORD_SOA ? r.payload : r.record_size, &r, n_dims,
                       order, padding, out_layout);
}

mmbError mmb_layout_get_record(const mmbLayout *layout, mmbRecordInfo *out_info) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(layout, MMB__KIND_LAYOUT, __func__, "layout");
  MMB__ARG(!out_info, __func__, "out_info is NULL");
  const mmb__fieldset *r = layout->rec;
  *out_info = r ? (mmbRecordInfo){.n_fields = r->n, .kind = r->kind,
                                  .record_size = r->record_size, .payload = r->payload}
                : (mmbRecordInfo){0};
  return MMB_OK;
}

static mmbError record_of(const char *func, const mmbLayout *l, const mmb__fieldset **out) {
  MMB__HANDLE(l, MMB__KIND_LAYOUT, func, "layout");
  MMB__ARG(!l->rec, func, "the layout has no records (mmb_layout_create_record)");
  *out = l->rec;
  return MMB_OK;
}

mmbError mmb_layout_get_field(const mmbLayout *layout, size_t index, mmbRecordField *out_field) {
  MMB__REQUIRE_INIT();
  const mmb__fieldset *r;
  mmbError err = record_of(__func__, layout, &r);
  if (err != MMB_OK) return err;
  MMB__ARG(!out_field, __func__, "out_field is NULL");
  MMB__ARG(index >= r->n, __func__, "field %zu of %zu", index, r->n);
  *out_field = (mmbRecordField){.name = r->name[index], .size = r->size[index],
                                .offset = r->offset[index]};
  return MMB_OK;
}

mmbError mmb__field_get(const char *func, const mmb__fieldset *r, size_t esize, char *ptr,
                        size_t first, size_t cap, size_t rank, const size_t *stride, size_t index,
                        mmbField *out) {
  MMB__ARG(!out, func, "out_field is NULL");
  size_t n = r ? r->n : 1;
  MMB__ARG(index >= n, func, "field %zu of %zu", index, n);
  *out = (mmbField){.ptr = ptr ? mmb__record_field(r, ptr, first, cap, index) : NULL,
                    .size = r ? r->size[index] : esize};
  size_t step = mmb__record_step(r, esize, index);
  for (size_t k = 0; k < rank; k++) out->byte_stride[k] = stride[k] * step;
  return MMB_OK;
}

mmbError mmb_layout_find_field(const mmbLayout *layout, const char *name, size_t *out_index) {
  MMB__REQUIRE_INIT();
  const mmb__fieldset *r;
  mmbError err = record_of(__func__, layout, &r);
  if (err != MMB_OK) return err;
  MMB__ARG(!name || !out_index, __func__, "NULL argument");
  for (size_t f = 0; f < r->n; f++)
    if (*name && !strcmp(r->name[f], name)) {
      *out_index = f;
      return MMB_OK;
    }
  return mmb__fail(MMB_INVALID_ARG, __func__, "no field named \"%s\"", name);
}

mmbError mmb_layout_set_element_type(mmbLayout *layout, mmbElementType type) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(layout, MMB__KIND_LAYOUT, __func__, "layout");
  size_t size;
  mmbError err = mmb_element_type_size(type, &size);
  if (err != MMB_OK) return err;
  MMB__ARG(size && layout->rec, __func__, "a record layout has no one element type");
  MMB__ARG(size && size != layout->element_size, __func__,
           "type %d is %zu bytes, the layout's elements %zu", (int)type, size,
           layout->element_size);
  layout->type = type;
  return MMB_OK;
}

mmbError mmb_layout_get_info(const mmbLayout *layout, mmbLayoutInfo *out_info) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(layout, MMB__KIND_LAYOUT, __func__, "layout");
  MMB__ARG(!out_info, __func__, "out_info is NULL");
  *out_info = (mmbLayoutInfo){.element_size = layout->element_size, .rank = layout->rank,
                              .order = layout->order, .row_alignment = layout->row_alignment,
                              .type = layout->type};
  return MMB_OK;
}

mmbError mmb_layout_destroy(mmbLayout *layout) {
  MMB__REQUIRE_INIT();
  MMB__HANDLE(layout, MMB__KIND_LAYOUT, __func__, "layout");
  mmb__object_free(layout);
  return MMB_OK;
}

mmbError mmb__layout_fits(const char *func, const mmbLayout *l, size_t rank,
                          const mmb__fieldset *rec, size_t esize) {
  MMB__ARG(!mmb__elements_match(l->rec, l->element_size, rec, esize), func,
           "the layout's elements (%zu bytes%s) are not the data's (%zu bytes%s): records "
           "match when their fields have the same sizes, in order", l->element_size,
           l->rec ? ", records" : "", esize, rec ? ", records" : "");
  MMB__ARG(l->rank != rank, func, "layout of rank %zu for data of rank %zu", l->rank, rank);
  return MMB_OK;
}

/* The row pitch's granule in elements: SoA rows of every plane start at
   multiples of row_alignment bytes when the pitch is a multiple of
   row_alignment / (the smallest field). */
static size_t pitch_granule(const mmbLayout *l) {
  if (!l->row_alignment) return 1;
  if (!mmb__record_soa(l->rec)) return l->row_alignment / l->element_size;
  size_t smallest = l->rec->size[0];
  for (size_t f = 1; f < l->rec->n; f++)
    if (l->rec->size[f] < smallest) smallest = l->rec->size[f];
  return l->row_alignment / smallest;
}

mmbError mmb__layout_strides(const char *func, const mmbLayout *l, size_t rank,
                             const size_t *dims, size_t *stride, size_t *bytes) {
  size_t es = l->element_size, inner = mmb__layout_inner(l, rank), g = pitch_granule(l);
  size_t pitch;   /* elements from one row to the next */
  if (mmb__add_overflows(dims[inner], g - 1, &pitch)) goto overflow;
  pitch -= pitch % g;
  stride[inner] = 1;
  size_t total = pitch;   /* elements up to and including the current dim */
  for (size_t n = 1; n < rank; n++) {
    size_t k = l->order == MMB_COLMAJOR ? n : rank - 1 - n;
    stride[k] = total;
    if (mmb__mul_overflows(total, dims[k], &total)) goto overflow;
  }
  if (mmb__record_soa(l->rec)) {   /* each plane: a multiple of the plane alignment */
    size_t a = l->row_alignment > MMB__SOA_PLANE_ALIGN ? l->row_alignment : MMB__SOA_PLANE_ALIGN;
    if (mmb__add_overflows(total, a - 1, &total)) goto overflow;
    total -= total % a;
  }
  if (mmb__mul_overflows(total, es, bytes)) goto overflow;
  return MMB_OK;
overflow:
  return mmb__fail(MMB_OVERFLOW, func, "the storage of these extents overflows size_t");
}
