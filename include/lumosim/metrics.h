/* What a replay measured: per-rank window and per-iteration times, actual vs
 * predicted; the Lumos breakdown; the stream-active duty cycle.
 *
 * Definitions (docs/report-json.md is the user-facing version):
 * - window: span of all of the rank's nodes (CPU and GPU).
 * - iteration ProfilerStep#N: span of the nodes that belong to it: CPU nodes
 *   whose observed start lies inside the annotation (any thread, so the
 *   autograd thread counts), and GPU work launched by them.
 * - breakdown over a span: exposed compute = time only non-communication GPU
 *   work runs; overlapped = both kinds run; exposed communication = only
 *   collective/p2p kernels run; other = the rest of the span.
 * - duty cycle: fraction of each bin (1 ms default) in which at least one GPU
 *   stream is active. Called that, not "SM utilization".
 *
 * Ownership: lsim_metrics_compute fills a caller-provided report and
 * allocates its arrays; lsim_rank_report_clear frees them. Local. */
#ifndef LUMOSIM_METRICS_H
#define LUMOSIM_METRICS_H

#include "lumosim/graph.h"

/* obs_start/obs_end of a node that was never observed (synthesized graphs,
 * lumosim synth). Such nodes take no part in the "actual" figures: a graph
 * with no observed node has actual window, iterations, breakdown and duty
 * cycle all 0, and reports print them as absent, never as 0 ms. */
#define LSIM_OBS_NONE INT64_MIN

/* Number of nodes of g with an observation (obs_start != LSIM_OBS_NONE). */
size_t lsim_metrics_observed_nodes(const lsim_graph *g);

/* Number of pre-window GPU nodes of g (LSIM_NF_PREWINDOW) that carry a
 * release time: the GPU's initial state, released at its observed start in
 * both latency modes -- the only observed starts a replay reads. */
size_t lsim_metrics_prewindow_released(const lsim_graph *g);

typedef struct lsim_breakdown {
    lsim_ns exposed_compute, overlapped, exposed_comm, other;
    lsim_ns exposed_comm_wait; /* the part of exposed_comm in which the
                                  collectives running only wait for peers
                                  (0 unless waits are known: multi-rank) */
} lsim_breakdown;

typedef struct lsim_iter_report {
    uint32_t name; /* strtab id in the graph */
    lsim_ns actual, predicted;
    lsim_breakdown bd_actual, bd_predicted;
} lsim_iter_report;

typedef struct lsim_rank_report {
    lsim_ns window_actual, window_predicted;
    lsim_ns window_actual_start, window_predicted_start;
    lsim_iter_report *iters;
    uint32_t niters;
    lsim_breakdown bd_actual, bd_predicted;
    lsim_ns bin_ns;
    uint32_t nbins_actual, nbins_predicted;
    double *duty_actual, *duty_predicted;
    /* per-node agreement (exactness of observed-latency replay) */
    lsim_ns max_abs_start_err, max_abs_end_err;
    uint64_t nodes_exact; /* nodes whose start and end match observed */
    uint64_t gpu_nodes;
} lsim_rank_report;

int lsim_metrics_compute(const lsim_graph *g, const lsim_ns *start,
                         const lsim_ns *end, lsim_ns bin_ns,
                         lsim_rank_report *out, lsim_err *err);
void lsim_rank_report_clear(lsim_rank_report *r);

/* The same, with per-node waiting for peers (collectives of a coupled
 * multi-rank run; NULL = none): obs_wait from the trace, pred_wait from the
 * simulation. A collective's first `wait` ns count as waiting, the rest as
 * transfer; exposed_comm_wait is the exposed communication during which no
 * collective transfers. */
int lsim_metrics_compute_ex(const lsim_graph *g, const lsim_ns *start, const lsim_ns *end, lsim_ns bin_ns,
                            const lsim_ns *obs_wait, const lsim_ns *pred_wait, lsim_rank_report *out, lsim_err *err);

/* Relative error (pred-actual)/actual as a fraction; 0 when actual == 0. */
double lsim_rel_err(lsim_ns actual, lsim_ns predicted);

#endif
