/**
 * \file mmb/queue.h
 * Asynchronous queues and requests.
 *
 * A queue runs work in submission order (FIFO) on a backend: a worker thread
 * of its own (MMB_QUEUE_THREAD) or, where a CUDA device exists, a CUDA stream
 * (MMB_QUEUE_CUDA_STREAM; MMB_QUEUE_AUTO picks it when a device is present,
 * threads otherwise).
 *
 * A request (mmbRequest) is the caller's: zero-initialise it, pass its
 * address to a submission, then wait on it or poll it. Waiting releases it
 * and sets it back to zero, so waiting twice, or on a zero request, returns
 * MMB_OK at once. Passing NULL instead of a request submits fire-and-forget
 * work: its error, if any, is kept and returned by the next
 * mmb_queue_synchronize. A request outlives its queue: destroying a queue
 * whose requests the caller still holds is safe.
 *
 * Argument errors come back from the submission; errors of the work itself
 * come back through its request.
 *
 * On a CUDA-stream queue, copies with a device side are issued on the
 * stream (cudaMemcpyAsync, cudaMemcpy2DAsync, cudaMemcpy3DAsync) and their
 * requests complete when an event recorded after them passes; mmb_queue_submit
 * work is a host function in stream order; a wait on another stream's
 * request is cudaStreamWaitEvent. What a stream cannot do (host-to-host
 * copies, merges that compute, copies through a user provider) runs on the
 * queue's helper thread once the stream's earlier work has completed, so
 * FIFO order holds for every kind of work. Requests of both backends mix
 * freely in mmb_queue_wait_request, mmb_wait and mmb_wait_all.
 */
#ifndef MMB_QUEUE_H
#define MMB_QUEUE_H

#include <mmb/export.h>
#include <mmb/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Creates a queue.
 * \param opts  NULL: MMB_QUEUE_AUTO. backend: AUTO, THREAD or CUDA_STREAM;
 *              device: the CUDA device of a stream queue; native: an existing
 *              cudaStream_t to run on (mmb_queue_destroy leaves it alive).
 * \return MMB_OK; MMB_INVALID_ARG for a NULL \p q, an unknown backend, or
 *         a native queue for a thread queue;
 *         MMB_UNAVAILABLE for CUDA_STREAM without a device; MMB_ERROR when
 *         the thread or stream cannot be made; MMB_OUT_OF_MEMORY;
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_queue_create(mmbQueueOptions *opts, mmbQueue **q);

/**
 * The native queue under \p q, for code that issues its own work in order
 * with mmb's (kernels, cuBLAS calls): the cudaStream_t of a stream queue,
 * as a void pointer (the one given in mmbQueueOptions.native, or mmb's own).
 * Work issued on it directly follows what the queue has issued on it so
 * far (mmb_wait on a request first to follow a given operation), and a
 * later mmb_queue_marker on the queue covers it.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_UNSUPPORTED for a thread
 *         queue, which has no native queue (\p *out untouched);
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_queue_get_native(const mmbQueue *q, void **out);

/**
 * A request that completes once everything submitted to \p q before this
 * call has run: an event recorded on a stream queue (cudaEventRecord), a
 * marker in the FIFO of a thread queue. With mmb_queue_wait_request it
 * orders another queue after \p q without blocking the caller.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs or a request already in use;
 *         MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_queue_marker(mmbQueue *q, mmbRequest *req);

/** The backend \p q runs on: MMB_QUEUE_THREAD or MMB_QUEUE_CUDA_STREAM
    (what MMB_QUEUE_AUTO picked). \return MMB_OK; MMB_INVALID_ARG for NULLs. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_queue_get_backend(const mmbQueue *q, mmbQueueBackend *backend);

/**
 * Runs everything submitted to \p *q, destroys it and sets \p *q to NULL.
 * \param opts  unused (NULL).
 * \return MMB_OK, or the first error of fire-and-forget work not yet
 *         reported (the queue is destroyed either way); MMB_INVALID_ARG for
 *         NULL; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_queue_destroy(mmbQueueOptions *opts, mmbQueue **q);

/**
 * Waits until everything submitted to \p q so far has run.
 * \return MMB_OK, or the first error of fire-and-forget work since the last
 *         synchronize; MMB_INVALID_ARG for NULL; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_queue_synchronize(mmbQueue *q);

/**
 * Runs fn(arg) on the queue, after the work submitted before it: on the
 * worker thread of a thread queue, as a host function in stream order on a
 * CUDA queue (cudaLaunchHostFunc: fn must not call CUDA, and should not
 * block for long, since the CUDA runtime may run the host functions of
 * every stream on one thread).
 * \return MMB_OK; MMB_INVALID_ARG for a NULL \p q or \p fn, or a request
 *         already in use; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_queue_submit(mmbQueue *q, void (*fn)(void *arg), void *arg,
                                     mmbRequest *req);

/** Work that can fail (mmb_queue_submit_task): its result is its request's. */
typedef mmbError (*mmbTaskFunction)(void *arg);

/**
 * Runs fn(arg) on a host thread of the queue once the work submitted before
 * it has completed: the worker of a thread queue; on a CUDA-stream queue,
 * the queue's own thread after the stream's earlier work, so fn may call
 * CUDA, MPI or block. What fn returns is the request's error: mmb_wait
 * returns it (mmb_queue_synchronize for a NULL \p req). Libraries build
 * their _async operations on it (mmb/mpi.h).
 * \return MMB_OK; MMB_INVALID_ARG for a NULL \p q or \p fn, or a request
 *         already in use; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_queue_submit_task(mmbQueue *q, mmbTaskFunction fn, void *arg,
                                                        mmbRequest *req);

/**
 * Work submitted to \p q after this call waits for \p req (which may belong
 * to another queue, of any backend). The caller keeps \p req and still
 * waits on it or polls it.
 * \return MMB_OK (also for a zero request: nothing to wait for);
 *         MMB_INVALID_ARG for NULLs; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_queue_wait_request(mmbQueue *q, mmbRequest *req);

/** Whether the work of \p req has run (true for a zero request).
    \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_NOT_INITIALIZED. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_request_is_complete(mmbRequest *req, bool *complete);

/**
 * Waits for the work of \p req, releases the request and zeroes it.
 * \return the work's own error; MMB_OK for a zero request (never waited
 *         on, or waited on already); MMB_INVALID_ARG for NULL;
 *         MMB_INVALID_STATE when called from work running on the request's
 *         queue for work not done yet, which runs after it (the request
 *         stays the caller's); MMB_NOT_INITIALIZED (wait before the last
 *         mmb_finalize).
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_wait(mmbRequest *req);

/**
 * mmb_wait on each of \p num_requests requests.
 * \param errors  NULL, or an array receiving each request's error.
 * \return MMB_OK when every one succeeded, else the first error met;
 *         MMB_INVALID_ARG for a NULL \p reqs with \p num_requests > 0;
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_wait_all(size_t num_requests, mmbRequest *reqs, mmbError *errors);

/* ---- _async twins of the allocation copies ------------------------------ */
/** mmb_copy on a queue. \return argument errors as mmb_copy; the copy's
    own errors through \p req. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_copy_async(mmbAllocation *dest, mmbAllocation *src, mmbQueue *q,
                                   mmbRequest *req);
/** mmb_copy_1d on a queue. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_copy_1d_async(mmbAllocation *dst, size_t doffset, mmbAllocation *src,
                                      size_t soffset, size_t width, mmbQueue *q, mmbRequest *req);
/** mmb_copy_2d on a queue. */
MMB_EXPORT MMB_NODISCARD mmbError mmb_copy_2d_async(mmbAllocation *dst, size_t dxoffset, size_t dyoffset,
                                      size_t dxpitch, mmbAllocation *src, size_t sxoffset,
                                      size_t syoffset, size_t spitch, size_t width, size_t height,
                                      mmbQueue *q, mmbRequest *req);
/** mmb_copy_nd on a queue (the arrays are read at submission). */
MMB_EXPORT MMB_NODISCARD mmbError mmb_copy_nd_async(mmbAllocation *dst, const size_t *doffset,
                                      const size_t *dpitch, mmbAllocation *src,
                                      const size_t *soffset, const size_t *spitch, size_t ndims,
                                      const size_t *dims, mmbQueue *q, mmbRequest *req);

/* ---- queue-aware reuse --------------------------------------------------
   Memory that queue work may still touch is not handed out again before
   that work has completed: mmb keeps a request per queue as a fence (an
   event), never synchronizes globally, and never blocks the call. Freed
   bytes stay counted as used until their fences have passed; the
   interface's own calls (allocate, free, trim) return them, and
   mmb_interface_destroy and mmb_finalize wait for them. Allocations placed
   in a region are reused when the region is reset: use
   mmb_region_reset_async for them. */

/**
 * Frees \p allocation now (the handle is invalid on return); its bytes are
 * reused only once the work submitted to \p q before this call has run.
 * \return MMB_OK; MMB_INVALID_ARG for a NULL queue, an allocation that is
 *         not live, or one placed in a region; MMB_OUT_OF_MEMORY;
 *         MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_free_async(mmbAllocation *allocation, mmbQueue *q);

/**
 * mmb_free_async for a bare block: frees \p ptr (a live block of
 * mmb_ptr_allocate on \p iface) now; its bytes are reused only once the work
 * submitted to \p q before this call has run. Until then they count as used
 * in the interface's stats, and mmb_interface_destroy waits for them.
 * \return MMB_OK; MMB_INVALID_ARG for a NULL queue, a NULL, foreign or
 *         already freed pointer (nothing is freed); MMB_OUT_OF_MEMORY (the
 *         block is still the caller's); MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_ptr_deallocate_async(void *ptr, mmbMemInterface *iface,
                                                     mmbQueue *q);
/** Deprecated: the former name of mmb_ptr_deallocate_async, with its first two arguments
    the other way round; kept for one release. */
MMB_EXPORT MMB_NODISCARD MMB_DEPRECATED("mmb_ptr_deallocate_async")
mmbError mmb_ptr_free_async(mmbMemInterface *iface, void *ptr, mmbQueue *q);

/**
 * Records that work submitted to \p q so far uses \p allocation (as
 * torch's record_stream, with a fence taken now rather than at free time):
 * however it is freed later, its bytes are reused only once that work has
 * run. Recording on several queues waits for each; recording on one queue
 * again moves its fence later.
 * \return as mmb_free_async.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_allocation_record_queue(mmbAllocation *allocation, mmbQueue *q);

/**
 * Resets \p region once the work submitted to \p q before this call has
 * run, without waiting for it: everything allocated in the region is gone
 * for the caller at once (as mmb_region_reset). The region's next use
 * (allocate, reset, push, destroy) performs the reset, waiting only if the
 * queue has not got that far yet. A double-buffered loop (allocate batch i
 * in region i % 2, submit its work, reset_async) needs no fences of its own.
 * \return MMB_OK; MMB_INVALID_ARG for NULLs; MMB_BUSY while a child region
 *         is live; MMB_OUT_OF_MEMORY; MMB_NOT_INITIALIZED.
 */
MMB_EXPORT MMB_NODISCARD mmbError mmb_region_reset_async(mmbRegion *region, mmbQueue *q);

#ifdef __cplusplus
}
#endif

#endif /* MMB_QUEUE_H */
