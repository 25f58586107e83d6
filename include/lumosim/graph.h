/* The execution graph of one GPU rank, built from one Kineto trace.
 *
 * Nodes (struct of arrays): flattened CPU intervals per thread (nesting
 * resolved so each thread is a sequence of non-overlapping intervals), CUDA/HIP
 * runtime calls, and GPU activities per stream. Edges: CSR over incoming
 * edges, each with a class and a delay in ns; plus a CSR of outgoing targets
 * for the engine. Semantics (Lumos Algorithm 1, extended for blocking calls):
 *
 *   start(v) = max(release(v), max over start-edges u->v of end(u) + delay)
 *   end(v)   = max(start(v) + dur(v), max over end-edges u->v of end(u) + delay)
 *
 * End-edges model blocking calls (cudaStreamSynchronize & co.): the call
 * enters when its thread reaches it and returns when the GPU work it waits for
 * has finished. release(v) pins the first node of each CPU thread to its
 * observed start (CPU time, allowed in the model) and, in observed-latency
 * mode only, pre-window GPU work to its observed start.
 *
 * Ownership: lsim_graph_build allocates *out and MOVES trace->strings into the
 * graph (trace->strings becomes NULL; the trace can then be freed). Free the
 * graph with lsim_graph_free. Local (no MPI). */
#ifndef LUMOSIM_GRAPH_H
#define LUMOSIM_GRAPH_H

#include "lumosim/common.h"
#include "lumosim/strtab.h"
#include "lumosim/trace.h"

/* Name tables (common.h, LSIM_ERRNO_MAP): X(identifier, name) per value,
 * generating the enum, the name function and the parse function; the names
 * are those reports, stores and the CLI use. */
/* Node kinds. */
#define LSIM_NODE_KINDS(X)                                                                   \
    X(LSIM_N_CPU, "cpu")         /* a piece of a CPU op / annotation, or a gap-free CPU span */ \
    X(LSIM_N_RUNTIME, "runtime") /* a CUDA/HIP runtime or driver call (its last piece) */     \
    X(LSIM_N_KERNEL, "kernel")                                                               \
    X(LSIM_N_MEMCPY, "memcpy")                                                               \
    X(LSIM_N_MEMSET, "memset")

typedef enum lsim_node_kind { LSIM_NODE_KINDS(LSIM_ENUM_ENTRY_) LSIM_N_NKINDS } lsim_node_kind;

/* Edge classes: the four Lumos classes, split finer for reporting/ablation. */
#define LSIM_EDGE_CLASSES(X)                                                                         \
    X(LSIM_E_CPU_THREAD, "cpu_thread")        /* CPU->CPU same thread, delay = preserved gap */        \
    X(LSIM_E_CPU_XTHREAD, "cpu_cross_thread") /* CPU->CPU across threads (one waits for another) */    \
    X(LSIM_E_LAUNCH, "launch")                /* CPU->GPU launch correlation, delay = launch latency */ \
    X(LSIM_E_SYNC, "sync")                    /* GPU->CPU blocking call waits (end-edge) */             \
    X(LSIM_E_STREAM, "stream")                /* GPU->GPU same-stream order */                          \
    X(LSIM_E_EVENT, "event")                  /* GPU->GPU cross-stream event record/wait */             \
    X(LSIM_E_INFERRED, "hidden")              /* GPU->GPU hidden dependency recovered from timing */

typedef enum lsim_edge_class { LSIM_EDGE_CLASSES(LSIM_ENUM_ENTRY_) LSIM_E_NCLASSES } lsim_edge_class;

#define LSIM_EDGE_END 0x80u /* flag in in_class: end-edge (constrains end) */
/* Flag in in_class: an SM edge (class LSIM_E_INFERRED, built only with
 * lsim_build_opts.sm_contention), from a kernel u that fills every SM of
 * the GPU to a kernel v on another stream that no SM has room for while
 * it does. Conditional, unlike every other edge: when v becomes ready
 * (its start from the other edges, s) while u runs and before u's last
 * wave begins (start(u) <= s < end(u) + delay, delay = -u's last wave),
 * v starts when that wave begins; otherwise the edge does nothing. */
#define LSIM_EDGE_SM 0x40u
#define LSIM_EDGE_CLASS_MASK 0x3fu /* in_class & this: the lsim_edge_class */

/* Names: "?" for a value out of range. Parse: the value of a name, 0, or
 * LSIM_EARG naming the valid ones in err (may be NULL). Local. */
const char *lsim_edge_class_name(lsim_edge_class c);
const char *lsim_node_kind_name(lsim_node_kind k);
int lsim_edge_class_parse(const char *name, lsim_edge_class *out, lsim_err *err);
int lsim_node_kind_parse(const char *name, lsim_node_kind *out, lsim_err *err);

/* Node flags */
#define LSIM_NF_PREWINDOW 0x01u /* GPU work whose launch precedes the trace */
#define LSIM_NF_BLOCKING  0x02u /* runtime call that blocks on the GPU */
#define LSIM_NF_COLL      0x04u /* collective / point-to-point comm kernel */
#define LSIM_NF_GRAPH     0x08u /* launched by a CUDA/HIP graph launch */
#define LSIM_NF_ENTER     0x10u /* zero-length entry of a memcpy call: its copy
                                   is launched from here, while the call's
                                   own node (next on the thread) may wait for
                                   that copy to finish */
#define LSIM_NF_DTOH_PAGEABLE 0x20u /* device-to-pageable-host copy: the
                                       cudaMemcpyAsync that issued it blocks */

#define LSIM_LATENCY_MODES(X)                                                      \
    X(LSIM_LAT_MODEL, "model")       /* per-API latencies learned on idle streams */ \
    X(LSIM_LAT_OBSERVED, "observed") /* each launch keeps its own latency; pre-window pinned */

typedef enum lsim_latency_mode { LSIM_LATENCY_MODES(LSIM_ENUM_ENTRY_) } lsim_latency_mode;
enum { LSIM_LAT_NMODES = 0 LSIM_LATENCY_MODES(LSIM_ENUM_COUNT_) };

/* "model" / "observed" ("?" out of range), and back (0, or LSIM_EARG in err,
 * which may be NULL). Local. */
const char *lsim_latency_mode_name(lsim_latency_mode m);
int lsim_latency_mode_parse(const char *name, lsim_latency_mode *out, lsim_err *err);

typedef struct lsim_build_opts {
    lsim_latency_mode latency;
    lsim_ns nest_tol_ns;     /* child may poke out of parent by this (1000) */
    lsim_ns infer_gap_ns;    /* max gap end(u)->start(v) for timing-inferred
                                GPU edges and cross-thread wake-ups (10000) */
    lsim_ns infer_slack_ns;  /* a GPU start later than its explained start by
                                more than this is searched for a hidden dep (5000) */
    lsim_ns event_tol_ns;    /* observed-time tolerance when validating (1000) */
    int release_events;      /* free the trace's event table as soon as the
                                build no longer needs it (lower peak memory;
                                the trace keeps its counters, rows, strings are
                                moved anyway) (0) */
    int keep_cpu_ops;        /* keep each CPU thread's original op tree
                                (lsim_graph.cpu_ops) for the predicted trace;
                                48 bytes per CPU event and 4 per node (0) */
    int sm_contention;       /* SM edges (LSIM_EDGE_SM) between kernels of
                                different streams, from their grids, blocks,
                                registers and shared memory against the
                                trace's deviceProperties (0) */
} lsim_build_opts;

void lsim_build_opts_default(lsim_build_opts *o);

typedef struct lsim_proc {
    uint8_t is_gpu;
    int64_t pid, tid;   /* CPU: pid/tid; GPU: device/stream */
    uint32_t nnodes;
} lsim_proc;

typedef struct lsim_iter {
    uint32_t name;       /* "ProfilerStep#N" */
    lsim_ns obs_start, obs_end; /* the annotation's own span */
} lsim_iter;

/* Why inferred edges were dropped. */
#define LSIM_DROP_REASONS(X)                                                                   \
    X(LSIM_DROP_CONTRADICTS_TIMES, "contradicts_observed_times") /* source ended after target started */ \
    X(LSIM_DROP_NO_SOURCE, "no_source")     /* nothing recorded/enqueued to wait on */          \
    X(LSIM_DROP_NO_TARGET, "no_target")     /* no later work on the waiting stream */           \
    X(LSIM_DROP_SAME_STREAM, "same_stream") /* record and wait on one stream: implicit */

typedef enum lsim_drop_reason { LSIM_DROP_REASONS(LSIM_ENUM_ENTRY_) LSIM_DROP_NREASONS } lsim_drop_reason;
const char *lsim_drop_reason_name(lsim_drop_reason r);
int lsim_drop_reason_parse(const char *name, lsim_drop_reason *out, lsim_err *err);

/* The per-node columns of lsim_graph, defined once: X(name, C type), in
 * struct order. Every place that allocates, resizes, copies, permutes, reads
 * or writes all node columns expands this list, so a new column is added
 * here and nowhere else (the HDF5 store, the clone, the allocator).
 *   kind       lsim_node_kind
 *   flags      LSIM_NF_*
 *   proc       index into procs
 *   name       strtab id
 *   dur        duration used by the simulation
 *   obs_start  observed start (reporting/validation only)
 *   obs_end    observed end
 *   release    earliest start, INT64_MIN if none
 *   corr       correlation id or -1
 *   iter       index into iters or -1
 *   coll       index into colls or -1 */
#define LSIM_GRAPH_BASE_COLUMNS(X) \
    X(kind, uint8_t)          \
    X(flags, uint8_t)         \
    X(proc, uint32_t)         \
    X(name, uint32_t)         \
    X(dur, lsim_ns)           \
    X(obs_start, lsim_ns)     \
    X(obs_end, lsim_ns)       \
    X(release, lsim_ns)       \
    X(corr, int64_t)          \
    X(iter, int32_t)          \
    X(coll, int32_t)
/* The training-step columns (13 bytes a node), after the base ones. No
 * simulation reads them; they say where in a training step a GPU node
 * belongs, for what-if identification. Stores written before them lack
 * them: a store reads them as their none value (LSIM_GRAPH_NONE_<name>),
 * and so does every slot lsim_graph_resize_nodes adds.
 *   phase      lsim_phase of GPU nodes (kernel, memcpy, memset), from the
 *              CPU ops and annotations around the launch; CPU nodes unknown
 *   fwd_seq    GPU nodes of the forward / backward phase: autograd's
 *              Sequence number of the forward op that launched it / of the
 *              forward op its backward op differentiates (modulo 2^31:
 *              equal to it below 2^31, and pairing needs only equality
 *              within one window); a what-if's copy c of a layer carries
 *              it + c 2^20 (whatif/rebuild.c), so copies pair apart; -1 none
 *   grad_bytes CPU nodes that end an autograd AccumulateGrad op: the bytes
 *              of the parameter gradient(s) it made ready ("Input Dims"
 *              x "Input type" of torch::autograd::AccumulateGrad, recorded
 *              with record_shapes), the size DDP buckets by; 0 none.
 *              What-if inserts gradient buckets from it (DP 1 -> N). */
#define LSIM_GRAPH_TRAINING_COLUMNS(X) \
    X(phase, uint8_t)                  \
    X(fwd_seq, int32_t)                \
    X(grad_bytes, int64_t)
#define LSIM_GRAPH_NONE_phase 0 /* LSIM_PHASE_UNKNOWN */
#define LSIM_GRAPH_NONE_fwd_seq (-1)
#define LSIM_GRAPH_NONE_grad_bytes 0
#define LSIM_GRAPH_COLUMNS(X) LSIM_GRAPH_BASE_COLUMNS(X) LSIM_GRAPH_TRAINING_COLUMNS(X)

/* Where in a training step a GPU node runs (the phase column). */
#define LSIM_PHASES(X)                                                                                  \
    X(LSIM_PHASE_UNKNOWN, "unknown")       /* not recovered: no launch in the trace (pre-window), a  \
                                              store written before the column, an untagged graph */ \
    X(LSIM_PHASE_FORWARD, "forward")       /* inside a forward op (Sequence number, Fwd thread id 0) \
                                              or a "*.forward" annotation */                        \
    X(LSIM_PHASE_BACKWARD, "backward")     /* inside a backward op, or on the autograd thread */     \
    X(LSIM_PHASE_OPTIMIZER, "optimizer")   /* inside "Optimizer.step#..." */                         \
    X(LSIM_PHASE_ZERO_GRAD, "zero_grad")   /* inside "Optimizer.zero_grad#..." */                    \
    X(LSIM_PHASE_DATALOADER, "dataloader") /* inside "enumerate(DataLoader)#..." */                  \
    X(LSIM_PHASE_OTHER, "other")           /* launched outside all of the above */

typedef enum lsim_phase { LSIM_PHASES(LSIM_ENUM_ENTRY_) LSIM_PHASE_N } lsim_phase;

/* "forward" ... ("?" out of range), and back (0, or LSIM_EARG in err, which
 * may be NULL). Local. */
const char *lsim_phase_name(lsim_phase p);
int lsim_phase_parse(const char *name, lsim_phase *out, lsim_err *err);

/* The phase a synthesized node's tag implies ("L3.mb0.fwd.qkv_gemm" forward,
 * "...bwd..." backward, "grad.opt." optimizer), LSIM_PHASE_UNKNOWN when it
 * has none. Local. */
lsim_phase lsim_phase_of_tag(const char *name);

/* The original CPU op tree of a trace (every cpu_op, user_annotation and
 * runtime call of the CPU threads, nesting intact), kept beside the
 * flattened pieces only when lsim_build_opts.keep_cpu_ops asks for it, so
 * that the predicted trace (chrome.h) can write each op whole, nested and
 * with its category, at simulated times. Why positions in pieces and not
 * times: a piece's duration is traced, so an op boundary inside a piece
 * keeps its offset from the piece's simulated start, while gaps and waits
 * between pieces move with the simulation.
 *
 * Each boundary (start, end) is a piece and an offset from the piece's
 * observed start, or (LSIM_OP_*_AT_END) from its observed end: an end that
 * coincides with a piece's end (a blocking call returning) follows the
 * piece's simulated end, and a boundary after a thread's last piece keeps
 * its distance from that piece's end. Its observed time is recovered from
 * the piece's observed times. Ends are the build's clamped ends (a child
 * poking out of its parent ends with it), so the tree nests.
 *
 * Order: per CPU thread in the build's thread order (by start, longer
 * first, annotations before ops before runtime calls), threads in
 * processor order; an op's thread is its pieces' proc. Only graphs built
 * from a trace with keep_cpu_ops have it (never synthesized or what-if
 * graphs, nor graphs read from a store: the store does not keep it). Any
 * change of the node set invalidates it: nnodes records g->n at build, and
 * readers ignore a table whose nnodes differs. Owned by the graph. */
#define LSIM_OP_START_AT_END 0x01u /* start_off counts from start_node's observed end */
#define LSIM_OP_END_AT_END 0x02u   /* end_off counts from end_node's observed end */
typedef struct lsim_cpu_op {
    uint32_t name, cat;          /* strtab ids: the event's name and original category */
    uint32_t start_node, end_node; /* the pieces its start and end fall in (or next to) */
    lsim_ns start_off, end_off;  /* from the piece's observed start (or end, flags) */
    int64_t corr;                /* runtime calls: correlation id, else -1 */
    int32_t coll;                /* record_param_comms: index into colls, else -1 */
    uint8_t kind;                /* lsim_ev_kind: CPU_OP, ANNOTATION or RUNTIME */
    uint8_t flags;               /* LSIM_OP_* */
} lsim_cpu_op;

typedef struct lsim_cpu_ops {
    lsim_cpu_op *op;
    size_t n;
    uint32_t *node_op; /* per node: the op whose own piece starts the node
                          (CPU nodes; UINT32_MAX for GPU nodes); the
                          predicted trace writes a node's flows with it */
    size_t nnodes;     /* g->n when built */
} lsim_cpu_ops;

typedef struct lsim_graph {
    char *source;            /* trace path */
    /* The GPU as messages name it, when the user gave another file than
     * source: a store's "PATH: GPU i (source)" (the store reader sets it;
     * a store's source is the trace it was built from, or a synth label).
     * NULL: source. Not copied by lsim_graph_clone: a copy may become
     * another GPU. lsim_graph_name reads it. */
    char *label;
    int32_t rank;            /* distributedInfo.rank or -1 */
    int32_t world_size;      /* distributedInfo.world_size or -1 */
    lsim_strtab *strings;    /* owned */
    lsim_latency_mode latency;

    /* nodes: one array of n elements per LSIM_GRAPH_COLUMNS entry */
    size_t n;
#define LSIM_GRAPH_COLUMN_FIELD_(name, type) type *name;
    LSIM_GRAPH_COLUMNS(LSIM_GRAPH_COLUMN_FIELD_)
#undef LSIM_GRAPH_COLUMN_FIELD_

    /* incoming edges, CSR: preds of v are in_src[in_off[v] .. in_off[v+1]) */
    uint64_t *in_off;
    uint32_t *in_src;
    lsim_ns *in_delay;
    uint8_t *in_class;       /* lsim_edge_class | LSIM_EDGE_END */
    /* outgoing, CSR */
    uint64_t *out_off;
    uint32_t *out_dst;
    uint64_t nedges;

    lsim_proc *procs;
    uint32_t nprocs;
    lsim_iter *iters;
    uint32_t niters;
    lsim_coll_info *colls;   /* copied from the trace */
    size_t ncoll;

    lsim_ns t0;              /* earliest observed time in the trace */

    /* statistics */
    uint64_t edges_by_class[LSIM_E_NCLASSES];
    uint64_t inferred_by_class[LSIM_E_NCLASSES]; /* edges not stated by the trace */
    uint64_t dropped[LSIM_DROP_NREASONS];
    uint64_t releases;       /* nodes with a release time */
    uint64_t prewindow;      /* GPU nodes with no launch in the trace */
    uint64_t sync_events_used; /* cuda_sync events that produced an edge */
    uint64_t launch_samples; /* idle-stream launches used for the latency model */
    lsim_ns launch_latency_ns; /* median modelled latency (all APIs), for reports */
    lsim_ns queued_gap_ns;   /* modelled gap between back-to-back queued ops */
    uint32_t device;         /* strtab id of the trace's deviceProperties[0]
                                name, UINT32_MAX unknown (synthesized graphs,
                                graphs read from a store: the store keeps the
                                job's GPU as its root attribute "device") */
    /* GPU memory of a traced GPU, from the trace's [memory] events
     * (profile_memory=True; trace.h, lsim_trace_memdev) and its
     * deviceProperties. mem_source: LSIM_MEM_SRC_*; bytes, 0 unknown.
     * Synthesized graphs have none (their estimate is the store's
     * "memory" attribute, memest.h); a what-if of a trace carries its
     * source GPU's figures or drops them (LSIM_MEM_SRC_DROPPED). */
    uint64_t mem_events;        /* [memory] events of the GPU */
    int32_t mem_source;
    int32_t mem_device;         /* the device id the figures are of (-1 none; traces only) */
    int64_t mem_peak_allocated; /* TOTALS: max Total Allocated; DELTAS: lower bound */
    int64_t mem_peak_reserved;  /* max Total Reserved (TOTALS only) */
    int64_t mem_capacity;       /* deviceProperties totalGlobalMem */
    lsim_cpu_ops *cpu_ops;   /* NULL unless built with keep_cpu_ops (above) */
    /* Shared structure. NULL: the graph owns its node columns and edge
     * CSRs. Else they are held jointly by every graph with the same
     * share_refs (lsim_graph_share), which counts those graphs: DP
     * replicas and TP ranks of a synthesized job are identical up to their
     * strings, processors, iterations and collectives, so a store read
     * with LSIM_STORE_READ_SHARE (store.h) keeps one copy of each
     * structure per process. Read-only while shared: a function that
     * changes the node columns or edges first calls lsim_graph_unshare
     * (lsim_graph_resize_nodes, lsim_graph_set_edges, lsim_graph_ablate
     * and lsim_job_align_clocks do). Freed by the last graph holding it. */
    size_t *share_refs;
    /* Shared collectives' table, the same way: NULL, the graph owns
     * colls; else held jointly by every graph with the same colls_refs.
     * The GPUs of a synthesized stage have equal tables (their group
     * names differ in their strings, not their ids), 80 kB a GPU of a
     * GPT-3 job; a store read with LSIM_STORE_READ_SHARE keeps one copy.
     * Read-only while shared: lsim_graph_unshare gives a private copy of
     * both. */
    size_t *colls_refs;
} lsim_graph;

/* Make g use src's node columns and edge CSRs (g's own are freed first;
 * g->n and g->nedges become src's), held jointly from now on. 0, or
 * LSIM_ENOMEM (g unchanged). Local. */
int lsim_graph_share(lsim_graph *g, lsim_graph *src, lsim_err *err);

/* 1 when a and b have the same structure: node count, every node column
 * (LSIM_GRAPH_COLUMNS) and the incoming CSR (in_off, in_src, in_delay,
 * in_class), byte for byte; the outgoing CSR follows from it. Strings,
 * processors, iterations and collectives are not compared: the store
 * keeps them per GPU. Local. */
int lsim_graph_same_structure(const lsim_graph *a, const lsim_graph *b);

/* Make g use src's collectives' table (g's own freed first; g->ncoll
 * becomes src's), held jointly from now on (colls_refs). 0, or
 * LSIM_ENOMEM (g unchanged). Local. */
int lsim_graph_share_colls(lsim_graph *g, lsim_graph *src, lsim_err *err);

/* Give g a private copy of its structure and of its collectives' table
 * where it shares them (no-op otherwise): 0, or LSIM_ENOMEM with g still
 * sharing. Local. */
int lsim_graph_unshare(lsim_graph *g, lsim_err *err);

/* Where a graph's mem_peak_* come from: none (no [memory] events for the
 * GPU), totals (the allocator's running totals), deltas (signed
 * allocation sizes only, as 2021 traces have them: a lower bound),
 * dropped (a what-if changed what the GPU holds, so its source GPU's
 * figures no longer apply: peaks 0, unknown; docs/memory.md),
 * reestimated (a what-if with --model: the source GPU's measured peaks
 * plus the model-shape estimate's change from the source's layout to the
 * new one, memest.h). A what-if
 * graph (no observed node) with totals or deltas carries its source GPU's
 * figures (whatif_plan.h). */
#define LSIM_MEM_SOURCES(X)                                                                                          \
    X(LSIM_MEM_SRC_NONE, "none") X(LSIM_MEM_SRC_TOTALS, "totals") X(LSIM_MEM_SRC_DELTAS, "deltas")                   \
    X(LSIM_MEM_SRC_DROPPED, "dropped") X(LSIM_MEM_SRC_REESTIMATED, "reestimated")
#define LSIM_MEM_SOURCE_ENUM_(id, name) id,
enum { LSIM_MEM_SOURCES(LSIM_MEM_SOURCE_ENUM_) LSIM_MEM_NSOURCES };
#undef LSIM_MEM_SOURCE_ENUM_

/* A graph's memory source's name ("none", "totals", "deltas"; "?" out of
 * range). Local. */
const char *lsim_mem_source_name(int32_t source);

/* The CPU op table of g if it is still valid for g's nodes, else NULL;
 * and its release (NULL is a no-op). Local. */
const lsim_cpu_ops *lsim_graph_cpu_ops(const lsim_graph *g);
void lsim_cpu_ops_free(lsim_cpu_ops *t);

int lsim_graph_build(lsim_trace *t, const lsim_build_opts *o, lsim_graph **out,
                     lsim_err *err);

/* The bounds every graph's times keep (docs/hdf5-schema.md, "Bounds").
 * They are what makes int64 arithmetic on them safe: the difference of two
 * times always fits, and a graph's simulated times stay far from
 * overflow.
 *
 * - Absolute times (obs_start, obs_end unless LSIM_OBS_NONE; release
 *   unless INT64_MIN; t0): |t| <= LSIM_TIME_MAX = 2^62 - 1 ns, 146 years
 *   either side of 1970 (Kineto's timestamps are ns since the epoch,
 *   about 1.7e18; its reader refuses |ts| > 2^62 too).
 * - Each duration, each observed span (obs_end - obs_start) and each edge
 *   delay's magnitude: <= LSIM_DUR_MAX = 1e13 ns, 2.8 hours. No profiled
 *   window comes near it (the PyTorch profiler records one to a few
 *   iterations: seconds to minutes), while a duration of INT64_MAX, or a
 *   what-if factor of 1e300, is far past it.
 * - Per graph, the sum of all durations and delay magnitudes:
 *   <= LSIM_GRAPH_SUM_MAX = 2^53 ns (104 days of work on one GPU), so that
 *   no path through one graph can carry its times past int64 (2^62 + 2^53
 *   < 2^63). A job's paths cross GPUs; past 2^9 GPUs at the bound the
 *   engine saturates instead of wrapping, and the metrics refuse simulated
 *   times beyond LSIM_TIME_MAX (metrics.h). */
#define LSIM_TIME_MAX (((lsim_ns)1 << 62) - 1)
#define LSIM_DUR_MAX ((lsim_ns)10000000000000)
#define LSIM_GRAPH_SUM_MAX ((lsim_ns)1 << 53)

/* Check g against the bounds above: 0, or LSIM_EFORMAT with one line
 * "FILE: GPU G, node N: what is wrong (the limit)" (edges are named by the
 * node they enter). file names where the graph comes from or goes (a
 * trace, a store being read or written); gpu its index in the job. Run
 * when a graph is built from a trace, read from a store, synthesized, and
 * by whatif before it writes one. Local. */
int lsim_graph_check_bounds(const lsim_graph *g, const char *file, size_t gpu, lsim_err *err);

/* The part of lsim_graph_check_bounds that reads no node or edge: the
 * per-GPU values and the collectives' table (a GPU that shares another's
 * structure, h5_graph.c, checks only these). Bounds:
 * - world_size -1 (unknown) or 1..LSIM_WORLD_MAX; rank -1 or below it;
 * - launch_latency_ns and queued_gap_ns 0..LSIM_DUR_MAX (a negative
 *   median latency is a trace whose time runs backwards, build/latency.c);
 * - each collective's group_size -1 or 1..world_size (LSIM_WORLD_MAX
 *   when unknown); bytes, in_nelems, out_nelems -1 or 0..LSIM_BYTES_MAX;
 *   dtype_bytes -1 or 1..64; root -1 or 0..group_size - 1 (below the
 *   largest group when group_size is unknown);
 * - mem_source one of LSIM_MEM_SOURCES; mem_device -1 or
 *   0..LSIM_TRACE_MEM_DEVICES - 1; mem_peak_allocated, mem_peak_reserved
 *   and mem_capacity 0..LSIM_BYTES_MAX (a trace's larger figures are
 *   dropped by the build, build.c init_memory).
 * lsim_graph_check_bounds also refuses a self-loop edge. */
int lsim_graph_check_tables(const lsim_graph *g, const char *file, size_t gpu, lsim_err *err);
/* 2^20 GPUs: 10x the largest published training job (about 100,000 GPUs);
 * 1e13 bytes, 50x the memory of the largest GPU (192 GB) */
#define LSIM_WORLD_MAX (1 << 20)
#define LSIM_BYTES_MAX ((int64_t)10000000000000)

/* The layer named by a record_function annotation (layer[i], layers.i,
 * layer_i, Layer i) or by a module of the profiler's module hierarchy
 * whose class name ends in Block or Layer ("nn.Module: GPT2Block_3",
 * "nn.Module: LlamaDecoderLayer_3"; not LayerNorm_3): i, or -1. The build keeps an annotation's own pieces
 * (its enter and exit cost, the gaps between the ops it holds) as nodes of
 * its name, never merged with the ops around them, so that what-if can find
 * where each layer starts and ends on its thread. Local. */
int lsim_graph_layer_annotation(const char *name);
void lsim_graph_free(lsim_graph *g);
/* What a message about g names first: its label, else its source, else
 * "graph". Pure. */
const char *lsim_graph_name(const lsim_graph *g);

/* The one allocator of the node columns: make every LSIM_GRAPH_COLUMNS
 * array of g hold cap nodes (at least 1), keeping the first min(old, cap)
 * values; new slots are unset, except in the training columns, where
 * slots from g->n on (from 0 in a column that was NULL) get their none
 * value, so a graph maker that knows nothing of them leaves them "unknown". g->n is not changed. Columns that are NULL
 * are allocated. On failure (LSIM_ENOMEM, err "SOURCE: out of memory"; err
 * may be NULL) every column still holds at least its old contents, so g
 * stays whole. The graph owns the columns (lsim_graph_free). Local. */
int lsim_graph_resize_nodes(lsim_graph *g, size_t cap, lsim_err *err);

/* One edge, for lsim_graph_set_edges: src -> dst, its class (lsim_edge_class,
 * possibly | LSIM_EDGE_END) and delay. */
typedef struct lsim_edge {
    uint32_t dst, src;
    lsim_ns delay;
    uint8_t cls;
} lsim_edge;

/* Order of each source's targets in the outgoing CSR. */
typedef enum lsim_out_order {
    LSIM_OUT_BY_LIST = 0, /* in the order the edges are listed (the trace build) */
    LSIM_OUT_BY_DST       /* by target, then by the target's incoming order
                             (synthesis, what-if, ablation, the store) */
} lsim_out_order;

/* The one CSR builder: replace g's edges (in_off, in_src, in_delay,
 * in_class, out_off, out_dst, nedges) by the ne edges e[] over g->n nodes.
 * Incoming edges are grouped by target, keeping list order within a target
 * (a stable counting sort); outgoing as `order` says. Statistics
 * (edges_by_class...) are the caller's. Every edge must name nodes < g->n
 * (LSIM_EINTERNAL otherwise). On failure (LSIM_ENOMEM; err may be NULL) g
 * is unchanged. e[] stays the caller's. Local. */
int lsim_graph_set_edges(lsim_graph *g, const lsim_edge *e, uint64_t ne, lsim_out_order order, lsim_err *err);
/* The same builder's outgoing half: g's out_off and out_dst (allocated,
 * written in place) from its incoming edges, LSIM_OUT_BY_DST (the store
 * reader, which reads the incoming CSR as stored). 0 or LSIM_ENOMEM. Local. */
int lsim_graph_outgoing(lsim_graph *g, lsim_err *err);

/* Recount g->edges_by_class from its incoming CSR. Local. */
void lsim_graph_count_edges(lsim_graph *g);

/* Deep copy (the copy owns everything, string ids are the same). */
int lsim_graph_clone(const lsim_graph *g, lsim_graph **out, lsim_err *err);

/* Edge-class ablation, in place: remove every edge whose class bit
 * (1u << lsim_edge_class) is in drop_mask, and with zero_launch_latency let
 * GPU work start as soon as its launch call starts (delay -dur(call); the
 * launch still orders it after the call's start). Either can only make work
 * start earlier, never later, and never creates a cycle. Returns 0 or
 * LSIM_ENOMEM. Local. */
int lsim_graph_ablate(lsim_graph *g, unsigned drop_mask, int zero_launch_latency, lsim_err *err);

/* Total edges counted per class, and inferred/dropped totals. */
uint64_t lsim_graph_inferred_total(const lsim_graph *g);
uint64_t lsim_graph_dropped_total(const lsim_graph *g);

#endif
