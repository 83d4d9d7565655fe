/**
 * \file mmb/extension.h
 * For libraries built on mmb (libmmb_mpi, the Fortran module's shim, a
 * code's own layer): calls that let them behave as part of mmb. An
 * application does not need them.
 */
#ifndef MMB_EXTENSION_H
#define MMB_EXTENSION_H

#include <mmb/export.h>
#include <mmb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Writes a message as mmb's own are written: only when \p level passes the
 * log level (mmb_logging_set_level, MMB_LOG_LEVEL), to the callback of
 * mmb_logging_set_callback when one is set, else to stderr as
 * "mmb: <level>: <text>". A message longer than 511 bytes is cut there.
 * Callable from any thread, before mmb_init too; it never fails.
 * \param level  MMB_LOG_ERROR .. MMB_LOG_DEBUG; other values write nothing.
 * \param fmt    a printf format, and its arguments after it.
 */
MMB_EXPORT void mmb_log(mmbLogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * Records that \p tile's data was written outside mmb (by a kernel, MPI,
 * a BLAS call through ptr), as mmb's own writes are recorded: its version
 * moves on, so read-only duplicates made from it before are stale and a
 * merge of a read-only duplicate cannot silently undo the write.
 *
 * \warning This changes the tile's coherence record, which every
 * duplicate, merge and transfer of the tile relies on: call it once per
 * write made outside mmb, after that write, and only on a tile the caller
 * wrote (a layer that receives into tiles, as libmmb_mpi does). A call
 * without a write makes mmb treat read-only duplicates as stale; a write
 * without a call lets a merge of a read-only duplicate undo it.
 * \return MMB_OK; MMB_INVALID_ARG for NULL or a tile not made by mmb;
 *         MMB_INVALID_STATE for a read-only tile (a read-only duplicate,
 *         or a tile of an array made without MMB_WRITE); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_tile_mark_written(mmbArrayTile *tile);

#ifdef __cplusplus
}
#endif

#endif /* MMB_EXTENSION_H */
