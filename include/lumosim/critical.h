/* Critical path of a simulated execution.
 *
 * Walks back from the node that ends last among GPU work and the threads
 * that launch or wait for it (side threads such as the NCCL watchdog do not
 * end a path): at each node, whatever decided
 * it -- the end-edge of a blocking call (the path continues at the GPU work it
 * waited for), else the start-edge that decided its start (the path continues
 * at that predecessor), else its release time (the path starts there). Every
 * nanosecond of the path's length is attributed exactly once: to a node's own
 * duration, to an edge's delay, or to waiting. Deterministic: ties are broken
 * the way the engine broke them.
 *
 * Ownership: lsim_critical_path_compute fills a caller-provided struct and
 * allocates its arrays; lsim_critical_path_clear frees them. Local. */
#ifndef LUMOSIM_CRITICAL_H
#define LUMOSIM_CRITICAL_H

#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/job.h"

#define LSIM_CP_TOP 20

/* What each stretch of the path is. */
typedef enum lsim_cp_cat {
    LSIM_CP_CPU = 0,        /* CPU work (ops, runtime call overhead) */
    LSIM_CP_CPU_GAP,        /* gaps kept between CPU pieces of a thread */
    LSIM_CP_LAUNCH,         /* launch latency (call to GPU start) */
    LSIM_CP_GPU_COMPUTE,    /* kernels, memcpy, memset that are not communication */
    LSIM_CP_COMM,           /* collective / point-to-point kernels */
    LSIM_CP_WAIT,           /* blocking calls waiting, return latency, GPU queue
                               gaps and cross-stream signalling */
    LSIM_CP_OTHER,          /* before the first node (window start to release) */
    LSIM_CP_NCATS
} lsim_cp_cat;

const char *lsim_cp_cat_name(lsim_cp_cat c);

typedef struct lsim_critical_path {
    uint32_t *nodes;          /* path nodes, first to last */
    int64_t *via;             /* via[i]: in-edge (CSR index) from nodes[i-1] into
                                 nodes[i]; -1 for i = 0 */
    size_t n;
    lsim_ns start, end;       /* [window start, end of the path's last node) */
    lsim_ns length;           /* end - start (the simulated window, unless a
                                 side thread outlasts all GPU-related work) */
    lsim_ns by_cat[LSIM_CP_NCATS];
    lsim_ns by_kind[LSIM_N_NKINDS];      /* node time on the path per node kind */
    lsim_ns by_class[LSIM_E_NCLASSES];   /* edge time on the path per class
                                            (negative: observed overlaps) */
    uint64_t edges_by_class[LSIM_E_NCLASSES]; /* path edges per class */
    uint32_t top[LSIM_CP_TOP];           /* nodes with the most time on the path */
    lsim_ns top_time[LSIM_CP_TOP];
    size_t ntop;
} lsim_critical_path;

int lsim_critical_path_compute(const lsim_graph *g, const lsim_engine *e, lsim_critical_path *out, lsim_err *err);
void lsim_critical_path_clear(lsim_critical_path *cp);

/* Fraction of `ref`'s path edges (consecutive node pairs) that are also on
 * `cp`'s path: the critical-path edge recall of an ablated run against the
 * full model (both runs on the same graph nodes). 1.0 when ref has no edges. */
double lsim_critical_path_recall(const lsim_critical_path *ref, const lsim_critical_path *cp);

/* The job's critical path: one path across the GPUs of a coupled run
 * (job.h). It walks back from the node that ends last in the whole job
 * (among the work lsim_critical_path_compute would end a GPU's path on),
 * and at every collective whose end was decided by another participant it
 * continues on the participant that arrived last among those this one
 * waited for (by the instance's rule, job.h: a broadcast's root waits for
 * nobody, a reduce's non-roots for the last non-root; ties: the first in
 * participant order). Within a GPU it is lsim_critical_path_compute's walk.
 * Every nanosecond of [start, end) is booked once, on the GPU of the
 * stretch: a node's own time, an edge's delay, a blocking call's wait, or,
 * at a crossing, the collective's transfer (from the last arrival to this
 * participant's end) as communication. Peer waiting is never on the path:
 * the path is the late GPU's work instead. length equals the job's
 * predicted span (earliest start to latest end over all GPUs) whenever the
 * last-ending node is GPU-related work.
 *
 * Ownership: lsim_job_path_compute allocates out's arrays (the graphs are
 * borrowed: they must outlive it); lsim_job_path_clear frees them. Local;
 * for a serial coupled run (every GPU's graph and engine present). */
#define LSIM_CP_VIA_PEER (-2)

typedef struct lsim_job_path {
    size_t n;
    uint32_t *gpu, *node;    /* entries first to last: the GPU (after gpu_ids)
                                and its node id */
    int64_t *via;            /* how entry i's stretch follows entry i-1: an
                                in-edge (CSR index) of entry i's graph from
                                entry i-1's node; LSIM_CP_VIA_PEER: entry i-1
                                is the last arrival of entry i's collective
                                (the path left it at its start); -1 for i = 0 */
    lsim_ns *at;             /* the path's time when it leaves entry i */
    lsim_ns start, end, length;
    lsim_ns by_cat[LSIM_CP_NCATS];
    size_t ngpus;
    lsim_ns *by_gpu;         /* path time booked on each GPU (after gpu_ids) */
    uint64_t crossings;      /* collectives where the path moved to another GPU */
    uint32_t top_gpu[LSIM_CP_TOP], top_node[LSIM_CP_TOP];
    lsim_ns top_time[LSIM_CP_TOP];
    size_t ntop;
    lsim_graph *const *graphs; /* borrowed: graphs[gpu[i]] names entry i */
} lsim_job_path;

/* j was run by lsim_job_run over engines[0..j->ngpus) made from
 * graphs[0..j->ngpus) (with their deciding edges). gpu_ids (NULL: the
 * identity) maps the run's GPU index to the one reported, ngpus_out
 * GPUs in all, named by names[0..ngpus_out) (borrowed). 0, LSIM_ENOMEM,
 * LSIM_EINTERNAL (a walk that does not end). */
int lsim_job_path_compute(const lsim_job *j, lsim_graph *const *graphs, lsim_engine *const *engines,
                          const uint32_t *gpu_ids, size_t ngpus_out, lsim_graph *const *names, lsim_job_path *out,
                          lsim_err *err);
/* One GPU's simulated times as the job's path reads them (borrowed): an
 * engine's (lsim_engine_start/_end/_bind_start/_bind_end), or a result
 * archive's written with --detail nodes (store.h, lsim_store_gpu_result). */
typedef struct lsim_cp_times {
    const lsim_ns *start, *end;
    const int64_t *bind_start, *bind_end;
} lsim_cp_times;
/* The same walk on times[0..j->ngpus) instead of engines: the path of a
 * run read back from its archive (under mpirun no process holds every
 * engine) is the serial run's. LSIM_EARG when a GPU with nodes lacks one
 * of the four arrays. */
int lsim_job_path_compute_times(const lsim_job *j, lsim_graph *const *graphs, const lsim_cp_times *times,
                                const uint32_t *gpu_ids, size_t ngpus_out, lsim_graph *const *names,
                                lsim_job_path *out, lsim_err *err);
void lsim_job_path_clear(lsim_job_path *p);
/* The GPUs with time on the path, most first (ties: the lower index):
 * *order (lsim_malloc'd, the caller frees it with lsim_free) holds *n of
 * them. 0, or LSIM_ENOMEM. Local. */
int lsim_job_path_gpu_order(const lsim_job_path *p, uint32_t **order, size_t *n);

#endif
