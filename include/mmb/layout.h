/**
 * \file mmb/layout.h
 * Layouts: how the elements of an N-dimensional array are placed in memory.
 *
 * A regular layout stores elements of one size, row-major (the last
 * dimension contiguous) or column-major (the first), optionally padding every
 * row (the run along the contiguous dimension) to a multiple of
 * mmbLayoutPadding.row_alignment bytes. Arrays copy their layout when they are
 * created, so a layout may be destroyed as soon as it has been used.
 */
#ifndef MMB_LAYOUT_H
#define MMB_LAYOUT_H

#include <mmb/export.h>
#include <mmb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A regular one-dimensional layout.
 * \param element_size  bytes per element, > 0.
 * \param padding       row_alignment: 0, or a power of two, a multiple of
 *                      \p element_size and at most MMB_MAX_ALIGNMENT; pads the
 *                      array's storage to that multiple.
 * \return MMB_OK; MMB_INVALID_ARG for a NULL \p out_layout, a zero element
 *         size or a bad padding; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_layout_create_regular_1d(size_t element_size, mmbLayoutPadding padding,
                                                 mmbLayout **out_layout);

/**
 * A regular N-dimensional layout.
 * \param element_size  bytes per element, > 0.
 * \param n_dims        the rank, 1..MMB_MAX_DIMS.
 * \param order         MMB_ROWMAJOR or MMB_COLMAJOR.
 * \param padding       as for mmb_layout_create_regular_1d: each row starts
 *                      at a multiple of row_alignment bytes.
 * \return MMB_OK; MMB_INVALID_ARG for NULL, a zero element size, a rank
 *         outside 1..MMB_MAX_DIMS, an unknown order or a bad padding;
 *         MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_layout_create_regular_nd(size_t element_size, size_t n_dims,
                                                 mmbLayoutOrder order, mmbLayoutPadding padding,
                                                 mmbLayout **out_layout);

/**
 * Says what the elements are, which SUM, MIN and MAX merges need.
 * \return MMB_OK; MMB_INVALID_ARG for NULL, an unknown type, or a type whose
 *         size is not the layout's element size (BYTES fits any size);
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_layout_set_element_type(mmbLayout *layout, mmbElementType type);

/** What a layout says (mmb_layout_get_info). */
typedef struct mmbLayoutInfo {
  size_t element_size;    /**< bytes per element */
  size_t rank;            /**< 1..MMB_MAX_DIMS */
  mmbLayoutOrder order;   /**< MMB_ROWMAJOR or MMB_COLMAJOR */
  size_t row_alignment;   /**< the padding's row alignment in bytes, 0 for none */
  mmbElementType type;    /**< MMB_TYPE_BYTES unless mmb_layout_set_element_type said */
} mmbLayoutInfo;

/** Describes \p layout, for code handed one to check its data against it.
    \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_layout_get_info(const mmbLayout *layout, mmbLayoutInfo *out_info);

/** Frees a layout; arrays made with it keep their own copy.
    \return MMB_OK; MMB_INVALID_ARG for NULL; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_layout_destroy(mmbLayout *layout);

/** The size in bytes of one element of \p type (0 for BYTES, whose size the
    layout gives). \return MMB_OK; MMB_INVALID_ARG for NULL or an unknown type;
    MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_element_type_size(mmbElementType type, size_t *out_bytes);

#ifdef __cplusplus
}
#endif

#endif /* MMB_LAYOUT_H */
