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

#ifdef __cplusplus
}
#endif

#endif /* MMB_EXTENSION_H */
