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

/* ---- records: elements of named fields, stored AoS or SoA ----------------- */

/** Room for a field's name, its terminating NUL included. */
#define MMB_FIELD_NAME_MAX 32

/** How the records of an array are stored. */
typedef enum mmbRecordKind {
  MMB_RECORD_AOS = 0,  /**< array of structures: each record's fields together */
  MMB_RECORD_SOA = 1   /**< structure of arrays: one plane per field, each a regular
                            array of that field's values */
} mmbRecordKind;

/** One field of a record. The same description serves both kinds, so a C
    struct is described once: {"x", sizeof p.x, offsetof(P, x)}. */
typedef struct mmbRecordField {
  const char *name;  /**< NULL, or at most MMB_FIELD_NAME_MAX - 1 bytes (copied) */
  size_t size;       /**< bytes, > 0 */
  size_t offset;     /**< bytes from the start of a record in AoS storage */
} mmbRecordField;

/**
 * A layout of records of \p n_fields named fields. AoS stores records of
 * \p record_size bytes, each field at its offset (the gaps are padding);
 * SoA stores one plane per field, each 64-byte aligned, holding that field of
 * every element as a regular array (shared element strides). Two record
 * layouts hold "the same records" when their fields have the same sizes in
 * the same order: mmb_array_copy, mmb_tile_copy, the duplicates, migrations
 * and overwrite merges between them convert AoS to SoA and back on the way,
 * in one pass over the data.
 * An AoS layout's element size is \p record_size; an SoA layout's is the
 * sum of the field sizes (what a tile's element_size then says: read SoA
 * tiles through mmb_tile_get_field). SoA storage is one block: with cap the
 * element count (row padding included) rounded up to a multiple of 64 (of
 * row_alignment, when larger),
 * field f's plane starts cap * (the sizes of the fields before f) bytes in;
 * a buffer wrapped with mmb_array_create_wrapped must be laid out so.
 * \param fields       \p n_fields fields, non-overlapping, inside \p record_size.
 * \param n_fields     1..MMB_MAX_FIELDS.
 * \param record_size  bytes per AoS record, 0 = the end of the last field
 *                     rounded up to the largest power-of-two field alignment
 *                     (up to 16 bytes), as a C compiler pads a struct.
 * \param kind         MMB_RECORD_AOS or MMB_RECORD_SOA.
 * \param n_dims, order as for mmb_layout_create_regular_nd.
 * \param padding      row_alignment 0, or a power of two up to MMB_MAX_ALIGNMENT
 *                     and a multiple of the record size (AoS) or of every
 *                     field's size (SoA: each plane's rows are padded).
 * \return MMB_OK; MMB_INVALID_ARG for NULLs, no or too many fields, a zero
 *         size, overlapping fields, a field past the record, a long or
 *         repeated name, an unknown kind or order, a bad rank or padding;
 *         MMB_OVERFLOW; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_layout_create_record(const mmbRecordField *fields, size_t n_fields,
                                             size_t record_size, mmbRecordKind kind,
                                             size_t n_dims, mmbLayoutOrder order,
                                             mmbLayoutPadding padding, mmbLayout **out_layout);

/** What a record layout says (mmb_layout_get_record). */
typedef struct mmbRecordInfo {
  size_t n_fields;     /**< 0: not a record layout */
  mmbRecordKind kind;  /**< how the layout stores them */
  size_t record_size;  /**< bytes of an AoS record, padding included */
  size_t payload;      /**< the sum of the field sizes */
} mmbRecordInfo;

/** Describes a layout's records (n_fields 0 for a regular layout).
    \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_layout_get_record(const mmbLayout *layout, mmbRecordInfo *out_info);

/** Field \p index of a record layout; out_field->name stays valid until
    mmb_finalize ("" for an unnamed field).
    \return MMB_OK; MMB_INVALID_ARG for NULLs, a layout without records or
    an index past its fields; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_layout_get_field(const mmbLayout *layout, size_t index,
                                         mmbRecordField *out_field);

/** The index of the field named \p name.
    \return MMB_OK; MMB_INVALID_ARG for NULLs, a layout without records or
    no field of that name; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_layout_find_field(const mmbLayout *layout, const char *name,
                                          size_t *out_index);

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
