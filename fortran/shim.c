/* The C half of module mamba (libfmmb): what Fortran cannot say through
   ISO_C_BINDING alone. It reads and writes Fortran descriptors
   (ISO_Fortran_binding.h, F2018) so that wrapped data of any type and rank
   is checked against its layout, and a tile's data becomes a Fortran pointer
   with the tile's bounds and strides; and it remembers the iterators the
   module made, so that destroying an array destroys the ones its caller
   forgot. It uses mmb's public API only. */
#include <ISO_Fortran_binding.h>
#include <mmb/mmb.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t data_bytes(const CFI_cdesc_t *d) {
  size_t n = d->elem_len;
  for (int i = 0; i < d->rank; i++) n *= (size_t)d->dim[i].extent;
  return n;
}

/* mmb_log for Fortran, which cannot call a variadic function. */
void mmbf_log(int level, const char *text) { mmb_log((mmbLogLevel)level, "%s", text); }

/* mmb_array_create_wrapped over a Fortran array: the data must be
   contiguous, of the layout's rank, and hold the array's storage (dims, with
   the layout's padding). A layout element smaller than the data's is
   accepted, as Mamba accepted it (codes write storage_size(1.0)/8 for
   real(8) data): the array then describes the first bytes of the data and
   nothing past it is touched; it is logged at debug level. A larger one
   would reach past the data, and is refused. */
mmbError mmbf_array_create_wrapped(CFI_cdesc_t *data, const size_t *dims, size_t ndims,
                                   const mmbLayout *layout, mmbMemInterface *interface,
                                   int access, mmbArray **out_array) {
  if (!data || !out_array || !dims || ndims == 0 || ndims > MMB_MAX_DIMS) return MMB_INVALID_ARG;
  if (!data->base_addr || !CFI_is_contiguous(data)) return MMB_INVALID_ARG;
  mmbLayoutInfo info;
  mmbError err = mmb_layout_get_info(layout, &info);
  if (err != MMB_OK) return err;
  if (info.rank != (size_t)data->rank || info.rank != ndims) {
    mmb_log(MMB_LOG_DEBUG, "mmb_array_create_wrapped: a layout of rank %zu over data of rank %d "
            "with %zu dimensions", info.rank, (int)data->rank, ndims);
    return MMB_INVALID_ARG;
  }
  if (info.element_size > data->elem_len) {
    mmb_log(MMB_LOG_DEBUG, "mmb_array_create_wrapped: the layout's %zu-byte elements are larger "
            "than the data's %zu bytes", info.element_size, (size_t)data->elem_len);
    return MMB_INVALID_ARG;
  }
  if (info.element_size < data->elem_len)
    mmb_log(MMB_LOG_DEBUG, "mmb_array_create_wrapped: the layout's %zu-byte elements are smaller "
            "than the data's %zu bytes: the array covers the data's first bytes only",
            info.element_size, (size_t)data->elem_len);
  mmbDimensions d = {.size = ndims};
  for (size_t i = 0; i < ndims; i++) d.d[i] = dims[i];
  mmbArray *a;
  err = mmb_array_create_wrapped(data->base_addr, &d, layout, interface, (mmbAccessType)access, &a);
  if (err != MMB_OK) return err;
  size_t bytes;
  err = mmb_array_get_bytes(a, &bytes);
  if (err == MMB_OK && bytes > data_bytes(data)) {   /* dims past the data */
    mmb_log(MMB_LOG_DEBUG, "mmb_array_create_wrapped: the array's %zu bytes reach past the "
            "data's %zu", bytes, data_bytes(data));
    err = MMB_INVALID_ARG;
  }
  if (err != MMB_OK) {
    if (mmb_array_destroy(a) != MMB_OK) return MMB_ERROR;
    return err;
  }
  *out_array = a;
  return MMB_OK;
}

/* Checks \p tile is a live tile mmb made (and not a stale read-only
   duplicate), before its fields are read; *host: its data is host memory. */
static mmbError check_tile(const mmbArrayTile *tile, bool *host) {
  mmbArrayTile *local;
  mmbError err = mmb_tile_get_space_local_handle((mmbArrayTile *)tile, &local);
  if (err != MMB_OK) return err;
  *host = local == tile;   /* else a copy of its fields in device memory */
  return MMB_OK;
}

/* The public fields of \p tile, checked first. */
mmbError mmbf_tile_info(const mmbArrayTile *tile, mmbArrayTile *out) {
  bool host;
  mmbError err = check_tile(tile, &host);
  if (err == MMB_OK) memcpy(out, tile, offsetof(mmbArrayTile, space) + sizeof tile->space);
  return err;
}

/* Points the Fortran pointer \p p at \p tile's elements: the tile's rank,
   extents and strides, lower bounds lower + 1 (so p(i, j) is the element
   the wrapped array calls x(i, j)). The pointer's rank and element size must
   be the tile's; device memory the host cannot read is MMB_INVALID_STATE. */
mmbError mmbf_tile_pointer(const mmbArrayTile *tile, CFI_cdesc_t *p) {
  bool host;
  mmbError err = check_tile(tile, &host);
  if (err != MMB_OK) return err;
  if (!host) return MMB_INVALID_STATE;
  if (!p || p->rank != (CFI_rank_t)tile->rank || p->elem_len != tile->element_size)
    return MMB_INVALID_ARG;
  CFI_index_t extents[MMB_MAX_DIMS];
  for (size_t i = 0; i < tile->rank; i++) extents[i] = (CFI_index_t)tile->dim[i];
  if (CFI_establish(p, tile->ptr, CFI_attribute_pointer, p->type, p->elem_len, p->rank, extents) !=
      CFI_SUCCESS)
    return MMB_INVALID_ARG;
  for (size_t i = 0; i < tile->rank; i++) {
    p->dim[i].lower_bound = (CFI_index_t)tile->lower[i] + 1;
    p->dim[i].sm = (CFI_index_t)(tile->stride[i] * tile->element_size);
  }
  return MMB_OK;
}

/* ---- the iterators the module made, by array ----------------------------- */

typedef struct tracked {
  mmbArray *array;
  mmbTileIterator *it;
  struct tracked *next;
} tracked;

static pthread_mutex_t tracked_lock = PTHREAD_MUTEX_INITIALIZER;
static tracked *tracked_list;

mmbError mmbf_iterator_create(mmbArray *array, const mmbTileIteratorOptions *opts,
                              mmbTileIterator **out_it) {
  tracked *t = malloc(sizeof *t);
  if (!t) return MMB_OUT_OF_MEMORY;
  mmbTileIterator *it;
  mmbError err = mmb_tile_iterator_create(array, opts, &it);
  if (err != MMB_OK) {
    free(t);
    return err;
  }
  *t = (tracked){.array = array, .it = it};
  pthread_mutex_lock(&tracked_lock);
  t->next = tracked_list;
  tracked_list = t;
  pthread_mutex_unlock(&tracked_lock);
  *out_it = it;
  return MMB_OK;
}

/* Unlinks the entries of \p it (or, with \p it NULL, of \p array) into \p out. */
static void take(mmbArray *array, mmbTileIterator *it, tracked **out) {
  pthread_mutex_lock(&tracked_lock);
  for (tracked **link = &tracked_list; *link;) {
    tracked *t = *link;
    if (it ? t->it == it : t->array == array) {
      *link = t->next;
      t->next = *out;
      *out = t;
    } else {
      link = &t->next;
    }
  }
  pthread_mutex_unlock(&tracked_lock);
}

mmbError mmbf_iterator_destroy(mmbTileIterator *it) {
  mmbError err = mmb_tile_iterator_destroy(it);
  if (err == MMB_INVALID_ARG || err == MMB_NOT_INITIALIZED) return err;   /* not destroyed */
  tracked *gone = NULL;
  take(NULL, it, &gone);
  while (gone) {
    tracked *t = gone;
    gone = t->next;
    free(t);
  }
  return err;
}

/* Destroys the iterators of \p array the caller left, then the array; the
   first error wins (an iterator is destroyed even when its last merge fails). */
mmbError mmbf_array_destroy(mmbArray *array) {
  tracked *left = NULL;
  take(array, NULL, &left);
  mmbError first = MMB_OK;
  while (left) {
    tracked *t = left;
    left = t->next;
    mmbError err = mmb_tile_iterator_destroy(t->it);
    if (err != MMB_INVALID_ARG && first == MMB_OK) first = err;   /* INVALID_ARG: gone already */
    free(t);
  }
  mmbError err = mmb_array_destroy(array);
  return err != MMB_OK ? err : first;
}

/* After the last mmb_finalize every iterator is gone with the library. */
void mmbf_forget_iterators(void) {
  if (mmb_is_initialized()) return;
  tracked *all = NULL;
  pthread_mutex_lock(&tracked_lock);
  all = tracked_list;
  tracked_list = NULL;
  pthread_mutex_unlock(&tracked_lock);
  while (all) {
    tracked *t = all;
    all = t->next;
    free(t);
  }
}
