/**
 * \file mmb/core.h
 * Library lifecycle, error strings and logging.
 *
 * Every mmb function other than mmb_init, mmb_version, the error strings
 * and mmb_logging_set_callback returns MMB_NOT_INITIALIZED when called
 * before mmb_init or after the last mmb_finalize.
 */
#ifndef MMB_CORE_H
#define MMB_CORE_H

#include <mmb/export.h>
#include <mmb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The version of these headers (major); mmb_version says that of the library. */
#define MMB_VERSION_MAJOR 0
/** ... minor (a new minor version may change the ABI while the major is 0) */
#define MMB_VERSION_MINOR 2
/** ... patch */
#define MMB_VERSION_PATCH 0
/** ... as a string */
#define MMB_VERSION_STRING "0.2.0"

/**
 * The version of the library the program runs with, as "MAJOR.MINOR.PATCH";
 * each pointer may be NULL. Compare with MMB_VERSION_* (the headers it was
 * compiled with) to catch a program built against other headers than the
 * libmmb.so it loads. Callable at any time.
 */
MMB_EXPORT const char *mmb_version(int *major, int *minor, int *patch);

/**
 * Initialises the library: reads the environment, discovers the node's memory
 * spaces (hwloc NUMA nodes, CUDA devices) and applies MMB_LIMIT_<LAYER> caps.
 * Calls nest: each mmb_init needs one mmb_finalize, and only the first one
 * does any work (later calls ignore \p opts).
 *
 * Environment: MMB_LOG_LEVEL=off|error|warn|info|debug; MMB_LIMIT_DRAM,
 * MMB_LIMIT_HBM, MMB_LIMIT_NVDIMM, MMB_LIMIT_GDRAM = a size in bytes with an
 * optional K, M, G or T suffix (binary units), capping the bytes the whole
 * layer may hold at once.
 *
 * \param opts  NULL or zeroed for defaults.
 * \return MMB_OK; MMB_INVALID_ARG if an option or an environment variable is
 *         malformed (the message names it); MMB_OUT_OF_MEMORY; MMB_ERROR if
 *         the topology could not be read.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_init(const mmbOptions *opts);

/**
 * Undoes one mmb_init. The last call releases every space, interface and
 * allocation the library still holds (live allocations are reported at warn
 * level, then freed).
 * \return MMB_OK; MMB_NOT_INITIALIZED if there is no matching mmb_init;
 *         MMB_INVALID_STATE for the last call made from queue work or from
 *         an out-of-memory handler (what runs it still needs the library).
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_finalize(void);

/** Whether the library is initialised (for code that shares it). */
MMB_EXPORT bool mmb_is_initialized(void);

/** A static description of \p err; never NULL, also for unknown values. */
MMB_EXPORT const char *mmb_error_string(mmbError err);

/** The name of an error code, "MMB_OK" to "MMB_TIMEOUT" (from MMB_ERROR_MAP);
    "MMB_UNKNOWN_ERROR" for other values. Never NULL. */
MMB_EXPORT const char *mmb_error_name(mmbError err);

/**
 * Sets the level of the messages mmb writes to stderr (prefixed "mmb:").
 * \param level  MMB_LOG_OFF .. MMB_LOG_DEBUG, or MMB_LOG_DEFAULT for
 *               MMB_LOG_LEVEL from the environment, else warn.
 * \return MMB_OK; MMB_INVALID_ARG for an unknown level or a malformed
 *         MMB_LOG_LEVEL; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_logging_set_level(mmbLogLevel level);

/** The current log level (never MMB_LOG_DEFAULT). */
MMB_EXPORT MMB_NODISCARD mmbError mmb_logging_get_level(mmbLogLevel *out_level);

/** Receives mmb's messages: the level, the text (no "mmb:" prefix, no
    newline, valid during the call only) and the pointer given with it. */
typedef void (*mmbLogFunction)(mmbLogLevel level, const char *message, void *user_data);

/**
 * Routes the messages that pass the log level to \p fn instead of stderr
 * (an MPI rank's logger, a code's own log file); NULL goes back to stderr.
 * \p fn may be called from any thread (a queue's worker too), one message at
 * a time; it must not call mmb. Callable at any time, also before mmb_init
 * (to see its messages).
 * \return MMB_OK.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_logging_set_callback(mmbLogFunction fn, void *user_data);

#ifdef __cplusplus
}
#endif

#endif /* MMB_CORE_H */
