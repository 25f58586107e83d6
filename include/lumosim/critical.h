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

#endif
