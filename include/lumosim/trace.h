/* The trace data model: what the Kineto reader (kineto.h) produces and the
 * graph build consumes. 48-byte events, rows (thread or stream), cuda_sync
 * arguments, collective metadata, process groups and GEMM shapes in side
 * tables, and a string table. The functions here (src/trace.c) work on a
 * trace already in memory; reading one is kineto.h's.
 *
 * Ownership: the reader allocates a trace; the caller releases it with
 * lsim_trace_free. Local (no MPI). */
#ifndef LUMOSIM_TRACE_H
#define LUMOSIM_TRACE_H

#include "lumosim/common.h"
#include "lumosim/strtab.h"

/* What an event is, from its category (case-insensitive) and phase. */
typedef enum lsim_ev_kind {
    LSIM_EV_CPU_OP = 0,  /* cpu_op, python_function, other CPU-side X events */
    LSIM_EV_ANNOTATION,  /* user_annotation (ProfilerStep#N lives here) */
    LSIM_EV_RUNTIME,     /* cuda_runtime, cuda_driver, Runtime (incl. hip*) */
    LSIM_EV_KERNEL,      /* kernel */
    LSIM_EV_MEMCPY,      /* gpu_memcpy */
    LSIM_EV_MEMSET,      /* gpu_memset */
    LSIM_EV_SYNC         /* cuda_sync: an edge, not GPU work */
} lsim_ev_kind;

typedef enum lsim_sync_kind {
    LSIM_SYNC_NONE = 0,
    LSIM_SYNC_STREAM_WAIT_EVENT,
    LSIM_SYNC_EVENT,
    LSIM_SYNC_STREAM,
    LSIM_SYNC_CONTEXT
} lsim_sync_kind;

/* Collective kinds recognised from NCCL/RCCL kernel names or metadata:
 * X(identifier, name) (common.h, LSIM_ERRNO_MAP). */
#define LSIM_COLL_KINDS(X)                                                     \
    X(LSIM_COLL_NONE, "none")                                                  \
    X(LSIM_COLL_ALLREDUCE, "allreduce")                                        \
    X(LSIM_COLL_ALLGATHER, "allgather")                                        \
    X(LSIM_COLL_REDUCESCATTER, "reducescatter")                                \
    X(LSIM_COLL_BROADCAST, "broadcast")                                        \
    X(LSIM_COLL_REDUCE, "reduce")                                              \
    X(LSIM_COLL_ALLTOALL, "alltoall")                                          \
    X(LSIM_COLL_SENDRECV, "sendrecv")                                          \
    X(LSIM_COLL_SEND, "send")                                                  \
    X(LSIM_COLL_RECV, "recv")                                                  \
    X(LSIM_COLL_GENERIC, "generic") /* ncclDevKernel_Generic etc.: kind only from parent op */ \
    X(LSIM_COLL_OTHER, "other")

typedef enum lsim_coll_kind { LSIM_COLL_KINDS(LSIM_ENUM_ENTRY_) } lsim_coll_kind;
enum { LSIM_COLL_NKINDS = 0 LSIM_COLL_KINDS(LSIM_ENUM_COUNT_) };

/* The name of k ("other" out of range), and the kind of an exact name (0,
 * or LSIM_EARG in err, which may be NULL). Local. */
const char *lsim_coll_kind_name(lsim_coll_kind k);
int lsim_coll_kind_parse(const char *name, lsim_coll_kind *out, lsim_err *err);

/* Where an event sits: CPU rows are (pid, tid); GPU and cuda_sync rows are
 * (device, stream) taken from args, falling back to pid/tid. 64-bit ids
 * because real traces have 32-bit wrapped (negative) thread ids. Events refer
 * to a row by index, which keeps the event table small (it is the reader's
 * peak memory). */
typedef struct lsim_row {
    int64_t pid, tid;
    int64_t stream;       /* args.stream (GPU/sync rows), else -1 */
    int32_t device;       /* args.device (GPU/sync rows), else -1 */
    int32_t rank;         /* args.rank of its events (a merged multi-rank
                             file, KINETO-NOTES trap 10), else -1; part of
                             the row's identity, so no row mixes ranks */
} lsim_row;

/* cuda_sync arguments (only cuda_sync events have them). */
typedef struct lsim_sync_info {
    int64_t wait_stream;   /* wait_on_stream, -1 if absent */
    int64_t wait_rec_corr; /* wait_on_cuda_event_record_corr_id, -1 if absent */
} lsim_sync_info;

/* One complete ("X") event, 48 bytes. */
typedef struct lsim_event {
    lsim_ns ts, dur;      /* ns; dur >= 0 (negative durations are rejected) */
    int64_t corr;         /* args.correlation, -1 if absent */
    uint32_t name;        /* strtab id */
    uint32_t cat;         /* strtab id of the original category */
    uint32_t row;         /* index into lsim_trace.rows */
    int32_t coll;         /* index into lsim_trace.colls, -1 if none */
    int32_t sync;         /* index into lsim_trace.syncs (cuda_sync), -1 if none */
    uint8_t kind;         /* lsim_ev_kind */
    uint8_t sync_kind;    /* lsim_sync_kind */
    uint8_t pageable;     /* gpu_memcpy whose name says Pageable (DtoH blocks) */
    uint8_t dtoh;         /* gpu_memcpy device-to-host */
} lsim_event;

/* Collective metadata, attached to NCCL kernels and record_param_comms ops. */
typedef struct lsim_coll_info {
    uint8_t kind;          /* lsim_coll_kind */
    uint8_t from_metadata; /* 1 if kind/size came from args, 0 if from name */
    int32_t group_size;    /* -1 unknown */
    int64_t in_nelems, out_nelems; /* -1 unknown */
    int32_t dtype_bytes;   /* -1 unknown */
    int64_t bytes;         /* -1 unknown */
    uint32_t pg_name;      /* strtab id, UINT32_MAX unknown */
    uint32_t pg_ranks;     /* strtab id of the ranks list text, UINT32_MAX unknown */
    int64_t seq;           /* kernels: position among this rank's collectives
                              on the same process group (pg_name; the world
                              group when unknown), in launch order; set by the
                              graph build, -1 before */
    int32_t root;          /* broadcast / reduce: the root's rank within the
                              process group (c10d's root_rank, from the
                              enclosing c10d::broadcast_ / c10d::reduce_ op's
                              "Concrete Inputs"), -1 unknown or not rooted */
} lsim_coll_info;

/* A process group from distributedInfo.pg_config. */
typedef struct lsim_pg {
    uint32_t name;   /* strtab id */
    uint32_t desc;   /* strtab id ("" if absent) */
    int32_t size;
    int32_t nranks;
    int32_t *ranks;  /* owned by the trace */
} lsim_pg;

/* A GEMM-like CPU op (aten::mm, aten::addmm, aten::bmm, aten::baddbmm,
 * aten::matmul, aten::linear), or a memory-bound one calibration fits
 * mem_eff from (element-wise aten ops, layer norms, softmaxes, Megatron's
 * fused ones: the list in src/read/kineto.c), with the shapes the profiler recorded
 * (record_shapes): "Input Dims" of its first LSIM_GEMM_MAX_TENSORS inputs and
 * the element size of its first input from "Input type". Kept in a side
 * table, only for these ops, for calibration (calibrate.h). The table also
 * holds autograd's LSIM_ACCUMULATE_GRAD ops, whose one input is a parameter's
 * gradient: its size is what DDP buckets by (graph.h, grad_bytes);
 * calibration skips them. */
#define LSIM_ACCUMULATE_GRAD "torch::autograd::AccumulateGrad"
#define LSIM_GEMM_MAX_TENSORS 3
#define LSIM_GEMM_MAX_DIMS 4
typedef struct lsim_gemm_op {
    uint64_t ev;        /* index into lsim_trace.ev */
    uint32_t name;      /* strtab id of the op name */
    int8_t ndims[LSIM_GEMM_MAX_TENSORS]; /* dims of input i; -1: absent, not a
                                            list of numbers, or more than
                                            LSIM_GEMM_MAX_DIMS dims */
    int8_t elem_bytes;  /* 2 Half/BFloat16, 4 float, 8 double, 1 8-bit; -1 unknown */
    int64_t dims[LSIM_GEMM_MAX_TENSORS][LSIM_GEMM_MAX_DIMS];
} lsim_gemm_op;

/* Autograd's own links on a cpu_op (KINETO-NOTES 13): args["Sequence
 * number"] and args["Fwd thread id"]. A backward op (the
 * "autograd::engine::evaluate_function: XBackward0" wrapper and the
 * XBackward0 inside it, on the autograd thread) carries the Sequence number
 * of the forward op it differentiates and the forward thread's id (> 0);
 * forward-side ops have Fwd thread id 0. Kept in a side table, only for
 * cpu_ops that carry a Sequence number (24 bytes each; the 48-byte event
 * does not grow), in file order, for the graph build's training phases. */
typedef struct lsim_autograd_op {
    uint64_t ev;        /* index into lsim_trace.ev */
    int64_t seq;        /* Sequence number */
    int64_t fwd_tid;    /* Fwd thread id: 0 forward side, > 0 backward op, -1 absent */
} lsim_autograd_op;

/* A kernel's launch configuration, as Kineto records it in the kernel's
 * args ("grid", "block", "registers per thread", "shared memory", "est.
 * achieved occupancy %", "blocks per SM"), for the SM-occupancy resource
 * of the graph build (docs/accuracy.md, "SM contention"); 32 bytes each,
 * in file order, only for kernels that carry a grid and a block. */
typedef struct lsim_kernel_cfg {
    uint64_t ev;        /* index into lsim_trace.ev */
    uint64_t blocks;    /* grid x * y * z */
    uint32_t threads;   /* block x * y * z */
    uint32_t smem;      /* "shared memory" per block, bytes (0 absent) */
    uint16_t regs;      /* "registers per thread" (0 absent) */
    uint16_t sms_hint;  /* blocks / "blocks per SM" rounded: Kineto's own SM
                           count (0 absent), for traces without deviceProperties */
    uint8_t occ_pct;    /* "est. achieved occupancy %", 1..100 (0 absent) */
} lsim_kernel_cfg;

/* The first device's SM limits from deviceProperties (0: not listed). */
typedef struct lsim_trace_sm {
    int32_t sms;             /* numSms */
    int32_t threads_per_sm;  /* maxThreadsPerMultiProcessor */
    int32_t regs_per_sm;     /* regsPerMultiprocessor */
    int32_t smem_per_sm;     /* sharedMemPerMultiprocessor (maxSharedMemoryPerMultiProcessor on ROCm) */
    int32_t warp;            /* warpSize */
    int32_t cc_major, cc_minor; /* computeMajor / computeMinor */
} lsim_trace_sm;

/* GPU memory as the profiler saw it (profile_memory=True): its "[memory]"
 * instant events for one device. Newer traces give the allocator's
 * running totals ("Total Allocated", "Total Reserved"); older ones (2021)
 * only each allocation's signed "Bytes", so the running sum counts from
 * the window's start and max - min of it is a lower bound of the peak
 * (what was allocated before the window is not in the file). */
#define LSIM_TRACE_MEM_DEVICES 16
typedef struct lsim_trace_memdev {
    uint64_t events;        /* [memory] events of this device */
    uint64_t with_totals;   /* of which carried "Total Allocated" */
    int64_t max_allocated;  /* max "Total Allocated", bytes */
    int64_t max_reserved;   /* max "Total Reserved", bytes (0: none seen) */
    int64_t cum, cum_max, cum_min; /* running sum of "Bytes" in file order */
} lsim_trace_memdev;

typedef struct lsim_trace {
    char *path;             /* as given */
    lsim_strtab *strings;   /* names, categories */
    lsim_event *ev;         /* complete events in file order */
    size_t nev, capev;
    lsim_coll_info *colls;
    size_t ncoll, capcoll;
    lsim_row *rows;
    size_t nrows, caprows;
    lsim_sync_info *syncs;
    size_t nsync, capsync;
    /* distributedInfo */
    int32_t rank, world_size; /* -1 if absent */
    uint32_t backend;         /* strtab id, UINT32_MAX if absent */
    lsim_pg *pgs;
    size_t npg;
    /* ingest counters */
    uint64_t bytes_read;      /* uncompressed bytes scanned */
    uint64_t events_seen;     /* all traceEvents elements, any phase */
    uint64_t flow_events;     /* ph s/f (ac2g, fwdbwd): not needed, counted */
    int ts_float;             /* 1 if any ts was written as a float */
    lsim_ns ts_resolution_ns; /* timestamp granularity: the largest divisor of
                                 1000 that divides every complete event's ts
                                 and dur in ns (1000: whole microseconds, as in
                                 older traces; 1: nanosecond digits); 0 when
                                 unknown (a trace not read from a file),
                                 taken as exact */
    /* GEMM-like CPU ops with their shapes (see lsim_gemm_op), file order */
    lsim_gemm_op *gemms;
    size_t ngemm, capgemm;
    uint32_t device_name;     /* strtab id of deviceProperties[0].name
                                 ("NVIDIA A100-SXM4-80GB"), UINT32_MAX if absent */
    /* cpu_ops with a Sequence number (see lsim_autograd_op), file order */
    lsim_autograd_op *autograd;
    size_t nautograd, capautograd;
    /* GPU [memory] events per device id (ids >= LSIM_TRACE_MEM_DEVICES and
     * CPU events are not kept), and deviceProperties' totalGlobalMem per
     * device id (0: not listed) */
    lsim_trace_memdev mem[LSIM_TRACE_MEM_DEVICES];
    int64_t dev_capacity[LSIM_TRACE_MEM_DEVICES];
    /* kernels' launch configurations (see lsim_kernel_cfg), file order, and
     * the device's SM limits */
    lsim_kernel_cfg *kcfg;
    size_t nkcfg, capkcfg;
    lsim_trace_sm sm;
} lsim_trace;

/* Free t and everything it owns; NULL is a no-op. Local. */
void lsim_trace_free(lsim_trace *t);

/* Merged multi-rank files (TraceLens TraceFusion: every event tagged
 * args.rank; KINETO-NOTES trap 10) hold one job, not one rank. The distinct
 * ranks of t's rows, ascending, into *ranks (caller frees; NULL and 0 when
 * no row has a rank: an ordinary trace). 0 or LSIM_ENOMEM. Local. */
int lsim_trace_row_ranks(const lsim_trace *t, int32_t **ranks, size_t *n);

/* Keep only the events of rank `rank` (rows of other ranks lose their
 * events; the GEMM, autograd and kernel-config side tables follow), and make t that rank of a world of
 * `world`. 0, or LSIM_ETRACE naming the file when no event is left, or
 * LSIM_ENOMEM. Local. */
int lsim_trace_keep_rank(lsim_trace *t, int32_t rank, int32_t world, lsim_err *err);

/* Release the event table (and the GEMM, autograd and kernel-config side
 * tables, which index it) only
 * (counters, rows, collectives, process groups and strings stay). Used by the graph build to lower peak memory. */
void lsim_trace_drop_events(lsim_trace *t);

/* Convenience accessors. */
static inline const lsim_row *lsim_event_row(const lsim_trace *t, const lsim_event *e) { return &t->rows[e->row]; }
static inline int64_t lsim_event_wait_stream(const lsim_trace *t, const lsim_event *e)
{
    return e->sync >= 0 ? t->syncs[e->sync].wait_stream : -1;
}
/* The autograd entry of event index ev (NULL when its cpu_op carries no
 * Sequence number): a binary search of the side table, which is in event
 * order. Local. */
const lsim_autograd_op *lsim_trace_autograd_of(const lsim_trace *t, size_t ev);

/* The launch configuration of event index ev (NULL when none was read): a
 * binary search of the side table, which is in event order. Local. */
const lsim_kernel_cfg *lsim_trace_kcfg_of(const lsim_trace *t, size_t ev);

static inline int64_t lsim_event_wait_rec_corr(const lsim_trace *t, const lsim_event *e)
{
    return e->sync >= 0 ? t->syncs[e->sync].wait_rec_corr : -1;
}

/* The reader, for callers that include only this header (kineto.h
 * includes this one first, so either order works). */
#include "lumosim/kineto.h"

#endif
