/* Calibration of the cost models (cost.h) from real traces and nccl-tests
 * output: the observations are gathered into an accumulator, then fitted.
 * Method and figures: docs/cost-models.md, section "Calibration".
 *
 * - GEMM efficiency: every kernel whose launch call lies inside the
 *   innermost CPU op of its thread that is aten::mm, addmm, bmm, baddbmm,
 *   matmul or linear (the op with the latest start among those containing
 *   the call) is attributed to that op; the op's FLOPs come from its
 *   recorded "Input Dims" (lsim_gemm_op), its time is the sum of its
 *   kernels' durations. eff(f) = eff_max * f / (f + eff_half) is fitted as
 *   t = (f + eff_half) / (peak * eff_max) over per-shape median times,
 *   relative least squares (lsim_cost_fit_alpha_beta), leaving out shapes
 *   the roofline calls memory-bound (FLOPs per byte below the ridge point).
 * - kernel_min_ns: 1st percentile of non-collective kernel durations;
 *   launch_cpu_ns: median duration of kernel-launch calls (*LaunchKernel*)
 *   that launched a kernel in the trace; launch_latency_ns: median over the
 *   traces of lsim_graph.launch_latency_ns (idle-stream launches only).
 * - Collectives: (bytes, transfer time) per (kind, group size): matched
 *   instances of a job (lsim_job.transfer: the last arrival's duration), or,
 *   for traces that are not one job, each size's shortest observed
 *   duration; nccl-tests fits come in as they are.
 *
 * Ownership: lsim_calib_new allocates the accumulator, lsim_calib_free
 * releases it; traces, graphs and jobs are borrowed only during the call.
 * Everything here is Local (no MPI). */
#ifndef LUMOSIM_CALIBRATE_H
#define LUMOSIM_CALIBRATE_H

#include <stdio.h>

#include "lumosim/common.h"
#include "lumosim/cost.h"
#include "lumosim/graph.h"
#include "lumosim/job.h"
#include "lumosim/trace.h"

typedef struct lsim_calib lsim_calib;

/* Where a collective fit's points came from. */
typedef enum lsim_calib_src {
    LSIM_CALIB_SRC_JOB = 0,   /* matched instances of one job: transfer time */
    LSIM_CALIB_SRC_MIN,       /* unmatched traces: shortest duration per size */
    LSIM_CALIB_SRC_NCCL_TESTS /* an nccl-tests output file */
} lsim_calib_src;

typedef struct lsim_calib_coll {
    lsim_coll_fit fit;    /* kind, alpha_ns, beta_bytes_per_s, points, residual */
    int32_t nranks;       /* group size, -1 unknown */
    lsim_calib_src src;
    char label[96];       /* nccl-tests file name (cut), else "" */
    int used_for;         /* topology: 0 not used, 1 intra-node fields, 2 inter-node */
} lsim_calib_coll;

/* One GEMM shape of the fit: batch x (M x K) . (K x N). */
typedef struct lsim_calib_shape {
    int64_t batch, m, n, k;
    double flops;         /* 2 * batch * m * n * k */
    size_t count;         /* op instances */
    double median_ns;     /* median of their kernel time */
    double eff;           /* observed flops / (median * peak) */
    double rel_residual;  /* (fitted - median) / median */
    int memory_bound;     /* arithmetic intensity below the base spec's ridge
                             point peak / (mem_bw * mem_eff): the roofline
                             costs it by bytes, so it is not in the fit */
} lsim_calib_shape;

/* One memory-bound op kind of the mem_eff fit. */
#define LSIM_CALIB_MEMNAMES 16
typedef struct lsim_calib_memop {
    char name[48];
    size_t count;
    double bytes, ns;  /* summed over its ops */
} lsim_calib_memop;

typedef struct lsim_calib_report {
    size_t traces;
    /* GEMM */
    size_t gemm_ops;            /* GEMM-like CPU ops in the traces */
    size_t gemm_ops_launched;   /* of which launched at least one kernel */
    size_t gemm_kernels;        /* kernels attributed to them */
    size_t gemm_points;         /* op instances in the fit */
    size_t gemm_skipped_shape;  /* launched, but shapes unusable (not recorded,
                                   inconsistent, > LSIM_GEMM_MAX_DIMS dims) */
    size_t gemm_skipped_dtype;  /* other element sizes than the fitted one */
    size_t gemm_skipped_membound; /* op instances of memory-bound shapes */
    int gemm_elem_bytes;        /* element size fitted (2, or 4 when no 2-byte ops) */
    int gemm_mode;              /* 2: eff_max and eff_half fitted; 1: eff_max
                                   only, eff_half kept (the two-parameter fit
                                   gave eff_half <= 0 or had one shape);
                                   with a base spec that has sms (tiles and
                                   waves): 4 eff_max and gemm_tile_ns fitted,
                                   3 eff_max only, gemm_tile_ns kept */
    int gemm_clamped;           /* eff_max came out above 1 and was set to 1 */
    double gemm_max_rel_residual, gemm_median_rel_residual; /* over shapes */
    lsim_calib_shape *shapes;   /* owned by the accumulator */
    size_t nshapes;
    /* kernels and launches */
    size_t kernels;             /* non-collective kernels for kernel_min_ns */
    size_t launch_calls;        /* launch calls for launch_cpu_ns */
    size_t latency_traces;      /* traces with idle-stream launch samples */
    uint64_t latency_samples;
    /* collectives: fits per (source, kind, group size), owned by the accumulator */
    lsim_calib_coll *colls;
    size_t ncolls;
    /* memory-bound ops (mem_eff): ops of the kernels' sum >= 10 us used,
     * per op name (at most LSIM_CALIB_MEMNAMES); mem_fitted 0: kept */
    size_t mem_ops;
    int mem_fitted;
    lsim_calib_memop memops[LSIM_CALIB_MEMNAMES];
    size_t nmemops;
    /* host time: gaps between consecutive launch calls of a thread (no
     * blocking call between them), of which stalls (> 10 x the median);
     * data-loader and optimizer annotations. *_fitted 0: kept. */
    size_t host_gaps, host_stalls, host_steps, host_opts;
    int dispatch_fitted, stall_fitted, step_fitted, opt_fitted;
    lsim_ns host_gap_mean_ns;   /* mean gap (the median is host_dispatch_ns) */
} lsim_calib_report;

int lsim_calib_new(lsim_calib **out, lsim_err *err);
void lsim_calib_free(lsim_calib *c);

/* One trace's GEMM ops, kernels and launch calls. Needs the trace's events
 * and strings: call before lsim_graph_build (which moves the strings). */
int lsim_calib_add_trace(lsim_calib *c, const lsim_trace *t, lsim_err *err);

/* The launch latency the graph build measured (lsim_graph.launch_latency_ns),
 * when it had idle-stream samples. */
void lsim_calib_add_graph_latency(lsim_calib *c, const lsim_graph *g);

/* Collective transfer times of a matched job: per instance, kind and bytes
 * of its first participant, group size = participants, time =
 * job->transfer. Instances of unknown size or zero time are skipped. */
int lsim_calib_add_job(lsim_calib *c, const lsim_job *j, lsim_err *err);

/* Collectives of a graph that is not part of a matched job: each kernel's
 * (kind, group size, bytes, duration); the fit uses the shortest duration
 * per (kind, group size, bytes): a lower bound on waiting, so the fit is
 * biased towards the fastest instance, but it includes no waiting for
 * peers only if some instance of each size arrived last. */
int lsim_calib_add_graph_colls(lsim_calib *c, const lsim_graph *g, lsim_err *err);

/* An nccl-tests fit (lsim_cost_fit_nccl_tests); label names it. */
int lsim_calib_add_nccl_fit(lsim_calib *c, const lsim_coll_fit *f, const char *label, lsim_err *err);

/* Fit everything: *out = *base with gemm_eff_max and gemm_eff_half (or,
 * when base has sms, gemm_eff_max and gemm_tile_ns of the tile-and-wave
 * model), mem_eff (bytes over time of the memory-bound ops with shapes),
 * kernel_min_ns, launch_cpu_ns, launch_latency_ns and the host fields
 * (host_dispatch_ns: the median gap between launch calls; host_stall_prob
 * and host_stall_ns: the gaps above 10 x that median; host_step_ns: the
 * median enumerate(DataLoader) annotation; host_opt_ns: the median
 * Optimizer.step annotation less its launches) replaced where there were
 * enough observations (attn_eff_* are kept), name = base name + "-cal". rep (may be NULL) points into the accumulator and stays valid
 * until the next fit or lsim_calib_free. LSIM_ETRACE when no GEMM kernel
 * could be attributed with usable shapes (message starts with `label`),
 * LSIM_EARG if the result fails lsim_gpu_spec_check. */
int lsim_calib_fit(lsim_calib *c, const lsim_gpu_spec *base, const char *label, lsim_gpu_spec *out,
                   lsim_calib_report *rep, lsim_err *err);

/* Map the collective fits of the last lsim_calib_fit onto a topology
 * (docs/cost-models.md, "Calibration"): the best fit within one node sets
 * intra_bw (bus bandwidth = beta x the kind's bytes-sent factor) and
 * coll_base_ns (alpha - steps x intra_lat_ns, the per-step latency kept,
 * or lowered when alpha is smaller); the best fit over whole nodes sets
 * inter_bw (bus bandwidth / GPUs per node) and inter_lat_ns. nccl-tests
 * fits are preferred over trace fits, all_reduce over other kinds. algo
 * becomes RING when anything changed. Fits with unknown group size are not
 * used. *changed counts the fields set. Marks the used fits (used_for). */
void lsim_calib_topology(lsim_calib *c, const lsim_topology *base, lsim_topology *out, int *changed);

/* Write a GPU spec / topology as JSON that lsim_gpu_spec_load /
 * lsim_topology_load accept (the schemas of data/gpu and data/topology). 0 or LSIM_EIO. */
int lsim_calib_write_gpu(FILE *f, const lsim_gpu_spec *g, const char *description, lsim_err *err);
int lsim_calib_write_topology(FILE *f, const lsim_topology *t, const char *name, const char *description,
                              lsim_err *err);

/* FLOPs and canonical shape of a GEMM-like op from its recorded shapes
 * (rules in docs/cost-models.md): 0 and *flops > 0, or -1 if the shapes are
 * missing, inconsistent or not a GEMM. `opname` is e.g. "aten::mm".
 * Exposed for tests. */
int lsim_calib_gemm_flops(const char *opname, const lsim_gemm_op *op, int64_t *batch, int64_t *m, int64_t *n,
                          int64_t *k, double *flops);

#endif
