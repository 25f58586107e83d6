/* Predicted trace: a Chrome trace-event JSON file (opens in Perfetto and
 * chrome://tracing) of the simulated execution.
 *
 * Layout: the input's processes and threads (CPU: pid/tid) and GPU rows
 * (pid = device, tid = stream), named as in the input; on CPU threads, when
 * the graph keeps the trace's op tree (graph.h, lsim_cpu_ops), one complete
 * event ("X") per op of the trace, whole and nested, with its category and
 * record_param_comms' collective args under Kineto's names; otherwise, and
 * for GPU work, one complete event per graph node at its simulated time,
 * with its original name, its
 * original category (cpu_op, cuda_runtime, kernel, gpu_memcpy, gpu_memset)
 * and args (correlation, observed ts/dur, iteration, collective kind/bytes/
 * group/seq when known); flow arrows (ph s/f) for every edge that decided a
 * node's start or end across threads/streams; a counter track ("C") with the
 * stream-active duty cycle; and, when the critical path is given, a separate
 * process "rank R: critical path" whose track repeats the path's nodes
 * under names of their own ("CPU op: aten::mm", the node's name in
 * args.op; category lumosim_critical_path, which the reader skips).
 * Timestamps are microseconds with three decimals, so lsim_trace_read gives
 * back every node's nanoseconds exactly.
 *
 * Several ranks go into one file; each rank's pids are offset so ranks stay
 * apart (documented in docs/trace-out.md).
 *
 * Streaming: events are written as they are produced (zlib gzwrite when the
 * path ends in ".gz", stdio otherwise), to PATH.tmp-<pid>, renamed to PATH
 * only when complete; on failure the temporary file is removed and PATH is
 * untouched. Local. */
#ifndef LUMOSIM_CHROME_H
#define LUMOSIM_CHROME_H

#include "lumosim/report.h"

/* jp: the job's critical path (critical.h; NULL: none), written as one
 * more process after every rank's (docs/trace-out.md). */
int lsim_chrome_write(const char *path, const lsim_replay_item *items, size_t n, const lsim_job_path *jp,
                      lsim_err *err);

#endif
