/* Kineto (PyTorch profiler) Chrome-trace reader: the file -> lsim_trace step
 * (the data model is trace.h's).
 *
 * Reads one trace file, plain JSON or gzip (detected from the content, not the
 * name), as a stream: the traceEvents array is scanned and each event object
 * is parsed on its own with cJSON, so peak memory is the compact event table
 * of trace.h, never the document. Timestamps are converted once, exactly, from
 * the decimal text of `ts`/`dur` (microseconds, integer or float) to int64
 * nanoseconds, rounding half away from zero below 1 ns.
 *
 * Ownership: the readers allocate *out; the caller releases it with
 * lsim_trace_free (trace.h). Local (no MPI). */
#ifndef LUMOSIM_KINETO_H
#define LUMOSIM_KINETO_H

#include "lumosim/trace.h"

/* Read one trace. On failure returns a negative code, fills err with
 * "PATH: what is wrong", and leaves *out NULL. Errors: unreadable path
 * (LSIM_EIO), truncated/corrupt gzip or malformed JSON (LSIM_EFORMAT), a
 * JSON document that is not a trace, no GPU and no CPU events, negative
 * durations (LSIM_ETRACE). */
int lsim_trace_read(const char *path, lsim_trace **out, lsim_err *err);

/* The same, calling progress(ctx, uncompressed bytes so far) every 16 MiB
 * of input (progress may be NULL). */
typedef void (*lsim_progress_fn)(void *ctx, uint64_t bytes);
int lsim_trace_read_ex(const char *path, lsim_progress_fn progress, void *ctx, lsim_trace **out, lsim_err *err);

/* Read from a memory buffer (fuzzing and tests); `label` names it in errors. */
int lsim_trace_read_mem(const char *label, const char *buf, size_t len,
                        lsim_trace **out, lsim_err *err);

/* Parse a JSON number's decimal text in microseconds into nanoseconds,
 * exactly. Returns 0, or LSIM_EFORMAT if it is not a number. Exposed for
 * unit tests. */
int lsim_us_text_to_ns(const char *s, size_t len, lsim_ns *out);

/* Classify a kernel name as a collective (LSIM_COLL_NONE if not NCCL/RCCL);
 * *dtype_bytes gets the element size the name implies, or -1. Local. */
lsim_coll_kind lsim_coll_from_kernel_name(const char *name, int32_t *dtype_bytes);

/* 1 when a kernel name that lsim_coll_from_kernel_name does not classify
 * still looks like communication (it names a collective -- all_reduce,
 * all_gather, reduce_scatter, all_to_all, sendrecv -- or a communication
 * library: nccl, rccl, nvshmem, multimem, deep_ep): such a kernel is
 * replayed as compute, so the report counts it and names one, rather than
 * keeping it silently (docs/execution-trace.md, "Communication kernels").
 * 0 otherwise. Local. */
int lsim_comm_like_kernel_name(const char *name);

#endif
