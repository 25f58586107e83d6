/* What a replay measured: per-rank window and per-iteration times, actual vs
 * predicted; the Lumos breakdown; the stream-active duty cycle.
 *
 * Definitions (docs/report-json.md is the user-facing version):
 * - window: span of all of the rank's nodes (CPU and GPU).
 * - a step's nodes: the CPU nodes whose observed start lies inside its
 *   ProfilerStep#N annotation (any thread, so the autograd thread counts)
 *   and the GPU work they launched (graph column iter).
 * - iteration (actual, predicted): the step projected onto the GPU. With
 *   t_i the earliest start of step i's GPU work, the rows' boundaries are
 *   b_0 = window start, b_i = min(t_i, b_{i+1}) for 0 < i < n (a step with
 *   no GPU work: b_{i+1}), b_n = window end, and iteration i is
 *   [b_i, b_{i+1}). The rows partition the window, so they add up to it
 *   exactly, actual and predicted alike; the first row also holds whatever
 *   precedes the first step's GPU work, the last whatever follows the last
 *   step's start. Each is computed from its own times (observed or
 *   simulated); a step whose GPU work starts only after the next step's
 *   has a row of 0.
 * - CPU span of an iteration (cpu_actual, cpu_predicted): first start to
 *   last end of the step's CPU nodes (the annotation's own span, plus the
 *   autograd thread's work that began in it); 0 without CPU nodes. These
 *   may overlap one another and do not add up to anything.
 * - breakdown over a span: exposed compute = time only non-communication GPU
 *   work runs; overlapped = both kinds run; exposed communication = only
 *   collective/p2p kernels run; other = the rest of the span. An
 *   iteration's breakdown is over its row of the partition, of all the GPU
 *   work in it (whichever step launched it), so the iterations' breakdowns
 *   add up to the window's.
 * - duty cycle: fraction of each bin (1 ms default) in which at least one GPU
 *   stream is active. Called that, not "SM utilization". Actual bins count
 *   from the observed window start, predicted ones from the predicted one.
 * - duty-cycle difference: mean over k < max(nbins_actual, nbins_predicted)
 *   of |duty_actual[k] - duty_predicted[k]|, a bin past the end of one
 *   timeline counting as 0 there; a fraction (reports print points).
 * - start-error distribution: |simulated start - observed start| of the
 *   observed GPU nodes and, separately, the observed CPU nodes (pre-window
 *   GPU work included). Percentiles are nearest-rank: of the n values in
 *   ascending order x_1 <= ... <= x_n, the p-th percentile is x_k with
 *   k = ceil(p * n / 100) (so k >= 1 for n >= 1); the median is the 50th
 *   (x_ceil(n/2): the lower middle value when n is even, never an average),
 *   so every figure is an error some node really had.
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

/* A start-error distribution (definition above); all 0 when n == 0. */
typedef struct lsim_err_dist {
    uint64_t n;               /* nodes counted */
    lsim_ns median, p90, max; /* ns, nearest-rank */
} lsim_err_dist;

/* cpu_actual / cpu_predicted of a result archive written before they were
 * recorded (its actual / predicted: the span of the step's nodes, CPU and
 * GPU, the definition then). */
#define LSIM_SPAN_UNKNOWN INT64_MIN

typedef struct lsim_iter_report {
    uint32_t name; /* strtab id in the graph */
    lsim_ns actual, predicted;         /* the row of the GPU partition */
    lsim_ns cpu_actual, cpu_predicted; /* the CPU-side span */
    lsim_breakdown bd_actual, bd_predicted; /* over the row */
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
    /* duty_predicted is another report's, equal to this one's (a symmetry
     * class's representative: lsim_run shares it), not freed with this
     * one, which must not outlive it. Why: 13,000 bins of a Llama 405B step
     * at 1 ms were 105 kB of each of 98,304 GPUs. */
    uint8_t duty_predicted_borrowed;
    /* per-node agreement (exactness of observed-latency replay) */
    lsim_ns max_abs_start_err, max_abs_end_err;
    uint64_t nodes_exact; /* nodes whose start and end match observed */
    uint64_t gpu_nodes;
    /* node-level fidelity: valid when has_fidelity (the graph has observed
     * nodes; a result archive written before these were recorded has 0) */
    int has_fidelity;
    lsim_err_dist start_err_gpu, start_err_cpu;
    double duty_abs_diff; /* duty-cycle difference, a fraction */
    /* the GPU's collective and point-to-point kernels by lsim_coll_kind:
     * coupled (matched across the job: they end with their peers) or kept
     * with their traced duration (an independent replay, a peer unknown);
     * valid when has_coupling (set by the run layer after the metrics;
     * archives written before it have 0) */
    int has_coupling;
    uint64_t coll_coupled[LSIM_COLL_NKINDS], coll_traced[LSIM_COLL_NKINDS];
    /* the same kernels' time by kind, summed over the kernels (end - start),
     * and the part of it spent waiting for the group's last arrival (the
     * rest, time - wait, is the transfer): actual from the trace (observed
     * kernels; the observed waiting on aligned clocks) and predicted from
     * the replay. Valid when has_coll_time (set with the counts; archives
     * written before it have 0). */
    int has_coll_time;
    lsim_ns coll_time_actual[LSIM_COLL_NKINDS], coll_wait_actual[LSIM_COLL_NKINDS];
    lsim_ns coll_time_predicted[LSIM_COLL_NKINDS], coll_wait_predicted[LSIM_COLL_NKINDS];
    /* of the coupled kernels, by kind, those of broadcasts and reduces
     * whose root the trace does not name, so every participant waited for
     * the last (lsim_job_rootless, job.h). Valid when has_rootless (set by
     * the run layer with the counts; archives written before it have 0). */
    int has_rootless;
    uint64_t coll_rootless[LSIM_COLL_NKINDS];
} lsim_rank_report;

/* Whether a report holds "actual" figures, from the report alone (an archive
 * read without its graphs: lumosim collect, info): a GPU with no observed
 * node has an actual window of 0 (above), one with observed nodes spans
 * them (> 0). Python's reader applies the same rule (python/lumosim). */
int lsim_report_observed(const lsim_rank_report *r);

/* Fill r's coupling counts and per-kind times from g: a collective kernel v
 * is coupled when inst_of (the job's instance array of this GPU, job.h;
 * NULL: the GPU ran alone) gives it an instance (lsim_job_inst), else it kept its traced
 * duration. start/end: the replay's times (g->n each); obs_wait, pred_wait:
 * per-node waiting for peers, observed and simulated (NULL: none, as for a
 * GPU run alone), each clamped to the kernel's duration. Borrowed. Local. */
void lsim_metrics_coupling(const lsim_graph *g, const int32_t *inst_of, const lsim_ns *start, const lsim_ns *end,
                           const lsim_ns *obs_wait, const lsim_ns *pred_wait, lsim_rank_report *r);

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

/* The duty-cycle difference of r's bins (definition above); 0 without bins.
 * For a caller that replaces one side's bins (run.c's --replicate-from
 * measurement). */
double lsim_metrics_duty_diff(const lsim_rank_report *r);

/* Relative error (pred-actual)/actual as a fraction; 0 when actual == 0. */
double lsim_rel_err(lsim_ns actual, lsim_ns predicted);

#endif
