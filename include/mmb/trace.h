/**
 * \file mmb/trace.h
 * Tracing to Chrome Trace Event JSON, which opens in Perfetto
 * (ui.perfetto.dev) and chrome://tracing; tools/mmb-plot draws it.
 *
 * The trace holds one counter track per space (bytes used and reserved over
 * time), an instant event per allocate, free and provider trip (size, pointer,
 * interface, and with MMB_TRACE_BACKTRACE=depth a short backtrace), and a
 * duration event per copy. It lives in a ring of a fixed number of events:
 * when full, the oldest go, and the dump says how many ("dropped_events").
 *
 * Environment, read by mmb_init: MMB_TRACE=path starts a trace and dumps it
 * to path at the last mmb_finalize; MMB_TRACE_CAPACITY=events sizes the ring
 * (default 131072 events, about 190 bytes each); MMB_TRACE_BACKTRACE=0..8.
 */
#ifndef MMB_TRACE_H
#define MMB_TRACE_H

#include <mmb/export.h>
#include <mmb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Starts recording into a fresh ring (what an earlier trace held is dropped).
 * \return MMB_OK; MMB_BUSY if a trace is running; MMB_OUT_OF_MEMORY for the
 *         ring; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_trace_start(void);

/** Stops recording; the events stay for mmb_trace_dump.
    \return MMB_OK; MMB_INVALID_STATE if no trace runs; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_trace_stop(void);

/**
 * Writes the events held so far (running or stopped) to \p path as JSON.
 * Without any trace it writes a valid trace with no events.
 * \return MMB_OK; MMB_INVALID_ARG for NULL or ""; MMB_IO if the file cannot
 *         be written; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_trace_dump(const char *path);

/**
 * Sets how many events the next mmb_trace_start keeps (MMB_TRACE_CAPACITY).
 * \return MMB_OK; MMB_INVALID_ARG for 0; MMB_OVERFLOW; MMB_BUSY while a trace
 *         runs; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_trace_set_capacity(size_t events);

#ifdef __cplusplus
}
#endif

#endif /* MMB_TRACE_H */
