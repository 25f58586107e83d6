/* Cost models: how long a kernel, a collective or a point-to-point transfer
 * takes on a given GPU and network, for workload synthesis and what-if
 * transforms. Every formula and every constant is documented, with its
 * source, in docs/cost-models.md.
 *
 * - Kernels (GEMM, attention, element-wise): roofline,
 *   max(compute, bytes / (mem_bw * mem_eff), kernel_min_ns); GEMMs' compute
 *   by tiles and waves over the SMs (specs with sms), attention's (and
 *   GEMMs' without sms) by an efficiency curve FLOPs / (peak * eff(FLOPs)),
 *   eff(f) = eff_max * f / (f + eff_half).
 * - Collectives: alpha-beta per algorithm (ring, tree) over a two-level
 *   topology (NVLink inside a node, one NIC per GPU across nodes), with
 *   NCCL's step counts and bus-bandwidth factors.
 * - Calibration: least-squares fits of t = alpha + bytes / beta, from
 *   (bytes, time) pairs or from an nccl-tests output file.
 *
 * Units: time in integer nanoseconds (lsim_ns), bandwidth in bytes/s, FLOPs
 * and FLOP/s as doubles. Ownership: every struct is caller-owned plain data,
 * nothing is allocated for the caller. Everything here is Local (no MPI) and
 * thread-safe (no global state). */
#ifndef LUMOSIM_COST_H
#define LUMOSIM_COST_H

#include <stddef.h>
#include <stdint.h>

#include "lumosim/common.h"

typedef enum lsim_coll_algo { LSIM_ALGO_AUTO = 0, LSIM_ALGO_RING, LSIM_ALGO_TREE } lsim_coll_algo;

/* "auto", "ring", "tree". */
const char *lsim_coll_algo_name(lsim_coll_algo a);

/* NCCL's protocols (docs/cost-models.md, "NCCL's choice"): LL (8-byte
 * lines, 4 of them flag), LL128 (128-byte lines, 8 bytes flag), Simple. */
typedef enum lsim_coll_proto { LSIM_PROTO_AUTO = 0, LSIM_PROTO_LL, LSIM_PROTO_LL128, LSIM_PROTO_SIMPLE } lsim_coll_proto;

/* "auto", "ll", "ll128", "simple". */
const char *lsim_coll_proto_name(lsim_coll_proto p);

/* The protocol named s (case-insensitive): 0, or LSIM_EARG (no message). */
int lsim_coll_proto_parse(const char *s, lsim_coll_proto *out);

typedef struct lsim_gpu_spec {
    char name[32];            /* NUL-terminated, e.g. "h100" */
    double peak_flops;        /* dense BF16/FP16 tensor FLOP/s */
    double mem_bw;            /* HBM bytes/s */
    double gemm_eff_max;      /* efficiency of a very large GEMM, (0,1] */
    double gemm_eff_half;     /* FLOPs of a GEMM that reaches half of gemm_eff_max */
    double attn_eff_max, attn_eff_half; /* same for attention (flash) kernels */
    double mem_eff;           /* achieved fraction of mem_bw by element-wise kernels, (0,1] */
    lsim_ns kernel_min_ns;    /* floor of any kernel's duration */
    lsim_ns launch_cpu_ns;    /* CPU time of one launch call (cudaLaunchKernel) */
    lsim_ns launch_latency_ns;/* launch call start -> kernel start on an idle stream */
    /* Optional keys (0: not given). With sms > 0 a GEMM is costed by tiles
     * and waves over the SMs (gemm_eff_max: a tile's main loop against the
     * per-SM peak; gemm_tile_ns: a tile's fixed prologue and epilogue),
     * else by the efficiency curve (gemm_eff_max, gemm_eff_half). */
    int sms;                  /* streaming multiprocessors */
    lsim_ns gemm_tile_ns;     /* fixed time of one output tile of a GEMM */
    double mem_capacity;      /* device memory, bytes (0: unknown, nothing checked) */
    /* Host (CPU) time of the training framework, learned from traces
     * (lumosim calibrate); 0: none. */
    lsim_ns host_dispatch_ns; /* framework time before each kernel launch call */
    lsim_ns host_step_ns;     /* once per iteration, before its first launch (data loading) */
    lsim_ns host_opt_ns;      /* the optimizer step's own CPU time, besides its launches */
    double host_stall_prob;   /* probability that a launch is preceded by a stall, [0,1) */
    lsim_ns host_stall_ns;    /* mean length of a stall */
    lsim_ns host_stall_sd_ns; /* its standard deviation: gamma-distributed; 0: exponential */
    double peak_flops_fp8;    /* dense FP8 tensor FLOP/s (optional; 0: no FP8, as the A100) */
    /* The attention curve of named kernels on this part (optional; 0: not
     * measured), which synth --attention-kernel puts in place of
     * attn_eff_max / attn_eff_half: FlashAttention-2 and -3 */
    double attn_fa2_eff_max, attn_fa2_eff_half, attn_fa3_eff_max, attn_fa3_eff_half;
    /* The backward's own curves (optional; 0: the forward's): the spec's,
     * and the named kernels' */
    double attn_bwd_eff_max, attn_bwd_eff_half;
    double attn_fa2_bwd_eff_max, attn_fa2_bwd_eff_half, attn_fa3_bwd_eff_max, attn_fa3_bwd_eff_half;
} lsim_gpu_spec;

typedef struct lsim_topology {
    int gpus_per_node;        /* GPUs joined by NVLink/NVSwitch; global rank r is on node r / gpus_per_node */
    double intra_bw;          /* bytes/s per GPU inside a node (NVLink, unidirectional) */
    lsim_ns intra_lat_ns;     /* per-step latency inside a node */
    double inter_bw;          /* bytes/s per GPU across nodes (one NIC per GPU) */
    lsim_ns inter_lat_ns;     /* per-step latency across nodes */
    lsim_coll_algo algo;      /* default algorithm (AUTO: the faster of ring and tree per call) */
    lsim_ns coll_base_ns;     /* fixed cost of every collective / p2p call (kernel
                                 setup, NCCL's baseLat); 0 when unknown (optional key) */
    /* The NCCL model of collectives across nodes (optional keys; nccl_tuning
     * 0, the default of every description made before it: the alpha-beta
     * model above, unchanged). With nccl_tuning = 1, a collective whose group
     * spans several nodes is costed per algorithm (ring, tree) and protocol
     * (LL, LL128, Simple) and NCCL's choice is the one its tuning model
     * predicts fastest (docs/cost-models.md, "NCCL's choice"); inside a
     * node nothing changes. The efficiencies are achieved fractions of the
     * node's NIC line rate (gpus x inter_bw), 0: 1; the latencies are per
     * ring step / per tree hop of the Simple protocol, fitted by calibrate. */
    int nccl_tuning;
    double ring_eff, tree_eff, a2a_eff;
    lsim_ns ring_step_ns;     /* per ring step (NVLink and network steps alike) */
    lsim_ns tree_hop_ns;      /* per tree hop, up or down */
    lsim_ns a2a_peer_ns;      /* all-to-all: per peer on another node */
    lsim_coll_proto proto;    /* forced protocol (AUTO: NCCL's choice) */
    /* Fat tree: groups over more than nodes_per_leaf nodes cross the spine,
     * whose bandwidth is the leaves' divided by oversubscription (>= 1);
     * 0: one non-blocking fabric. */
    int nodes_per_leaf;
    double oversubscription;
    /* Link sharing (netshare.h, docs/network.md "Link sharing"; optional,
     * 0 by default): 1 when lumosim sim --link-sharing shares the NICs and
     * the leaves' uplinks between concurrent transfers. A collective is
     * then costed alone on an idle fabric: its group crossing the spine is
     * no longer divided by oversubscription here (the uplinks' sharing
     * gives that slowdown when the fabric is loaded). */
    int link_sharing;
    /* ECMP (netshare.h; optional, 0 or 1: one aggregated uplink per leaf):
     * each leaf's uplink is ecmp_paths equal paths, and each channel of a
     * flow leaving or entering a leaf is hashed onto one of them, so flows
     * can collide on a path while another is idle. Needs nodes_per_leaf. */
    int ecmp_paths;
} lsim_topology;

/* Built-in parameters ("h100", "a100", "h200", case-insensitive) compiled
 * into the library: the same numbers as data/gpu/NAME.json (a unit test
 * checks they agree). Returns 0, or LSIM_EARG for an unknown name (the
 * message lists the known ones). */
int lsim_gpu_spec_builtin(const char *name, lsim_gpu_spec *out, lsim_err *err);

/* The built-in spec a trace's deviceProperties name stands for ("NVIDIA
 * A100-SXM4-80GB" -> "a100"; h200, h100, a100, matched case-insensitively
 * anywhere in the name), or NULL when none does (or devname is NULL). Local. */
const char *lsim_gpu_builtin_for_device(const char *devname);

/* Read a GPU JSON file (schema in docs/cost-models.md). Returns 0; LSIM_EIO
 * when the file cannot be read ("PATH: ..."); LSIM_EFORMAT for malformed
 * JSON, a non-object, an unknown key, a wrong type, a missing required key,
 * a non-positive or non-finite value, an efficiency outside (0,1], or a
 * number outside its physical range (peak_flops 1e11..1e17 FLOP/s, mem_bw
 * 1e9..1e14 B/s, *_eff_half 1..1e15 FLOP, *_ns 1..1e7 ns; the optional
 * keys sms, gemm_tile_ns, mem_capacity, host_* and "sources" (an object of
 * strings naming keys) with theirs; the reasons are in src/cost/spec.c and
 * docs/cost-models.md) ("PATH: key K: what is wrong"). Optional keys left
 * out are 0. *out is written only on success. */
int lsim_gpu_spec_load(const char *path, lsim_gpu_spec *out, lsim_err *err);

/* Check a spec in memory with the same rules as the loader (for specs built
 * by hand or by calibration); `label` names it in the message. 0 or
 * LSIM_EARG. */
int lsim_gpu_spec_check(const lsim_gpu_spec *g, const char *label, lsim_err *err);

/* A DGX-like default: 8 GPUs per node, NVLink and NIC figures for that GPU
 * (name containing "a100": NVLink3 300 GB/s, 200 Gb/s NIC; anything else,
 * NULL included: NVLink4 450 GB/s, 400 Gb/s NIC), algo AUTO. */
void lsim_topology_default(const lsim_gpu_spec *gpu, lsim_topology *out);

/* Read a topology JSON file; the same error rules (unknown key, negative or
 * zero bandwidth, gpus_per_node not a positive integer, unknown "algo",
 * a number outside its range: gpus_per_node 1..1e6, intra_bw and inter_bw
 * 1e6..1e14 B/s, latencies and coll_base_ns 0..1e8 ns, ...). 0, LSIM_EIO
 * or LSIM_EFORMAT; *out is written only on success. */
int lsim_topology_load(const char *path, lsim_topology *out, lsim_err *err);

/* Check a topology in memory with the loader's rules (one built by
 * calibration); `label` names it. 0 or LSIM_EARG. */
int lsim_topology_check(const lsim_topology *t, const char *label, lsim_err *err);

/* Kernel costs, ns, always >= kernel_min_ns (also for zero, negative or
 * non-finite shapes, which cost kernel_min_ns). elem_bytes: 2 for bf16/fp16
 * (peak_flops); 4 for fp32 runs on TF32 tensor cores at half of peak_flops;
 * it also sizes the memory-bound term; 1 for FP8 runs at peak_flops_fp8
 * (peak_flops when the spec has none). GEMMs: with g->sms > 0, the best of
 * the 256x128, 128x256 and 128x128 output tiles, waves = ceil(tiles x
 * split / sms), each wave 2 tm tn k/split / (peak / sms x gemm_eff_max) +
 * gemm_tile_ns, split-K when the tiles do not fill the SMs
 * (docs/cost-models.md, "GEMM: tiles and waves"); without sms, the
 * efficiency curve. */
lsim_ns lsim_cost_gemm(const lsim_gpu_spec *g, double m, double n, double k, int elem_bytes);

/* A batched GEMM: batch independent m x n x k products (attention's Q K^T
 * and P V). batch 1 is lsim_cost_gemm. */
lsim_ns lsim_cost_bgemm(const lsim_gpu_spec *g, double batch, double m, double n, double k, int elem_bytes);

/* The tile decomposition lsim_cost_bgemm uses (g->sms > 0): for the tile
 * that is fastest with g's gemm_eff_max and gemm_tile_ns, its waves, one
 * wave's main loop at efficiency 1 (ns) and the split-K reduction (ns):
 * time = waves x (main_ns / gemm_eff_max + gemm_tile_ns) + reduce_ns before
 * the memory roofline and the floor. For calibration (calibrate.c). 0, or
 * LSIM_EARG without sms or for a bad shape (no message). */
int lsim_cost_gemm_waves(const lsim_gpu_spec *g, double batch, double m, double n, double k, int elem_bytes,
                         double *waves, double *main_ns, double *reduce_ns);

/* Flash attention, bf16. FLOPs forward 4*batch*heads*seq^2*head_dim (QK^T and
 * PV), halved when causal; backward 2.5x forward. */
lsim_ns lsim_cost_attention(const lsim_gpu_spec *g, double batch, double heads, double seq,
                            double head_dim, int causal, int backward);

/* An element-wise / memory-bound kernel that reads and writes bytes_moved in all. */
lsim_ns lsim_cost_elementwise(const lsim_gpu_spec *g, double bytes_moved);

/* Collective transfer time (ns) among the n global GPU ranks ranks[0..n)
 * (NULL: ranks 0..n-1), node of rank r = r / gpus_per_node. kind is an
 * lsim_coll_kind (trace.h). `bytes` is the per-rank INPUT buffer, as
 * record_param_comms reports it (in_msg_nelems * dtype size, which is what
 * lsim_coll_info.bytes holds):
 *   all_reduce      the buffer (input = output)        moves 2(n-1)/n * bytes
 *   reduce_scatter  the whole input (n x the output)  moves  (n-1)/n * bytes
 *   all_gather      this rank's shard (output / n)    moves  (n-1)   * bytes
 *   all_to_all      the whole send buffer             moves  (n-1)/n * bytes
 *   broadcast/reduce the buffer                       moves        1 * bytes
 *   send/recv/sendrecv the message                    as lsim_cost_p2p between the
 *                                                      slowest-linked pair
 * GENERIC, OTHER and NONE are costed as all_reduce. algo: AUTO uses the
 * topology's default (itself AUTO: the faster of ring and tree). Tree exists
 * for all_reduce only (as in NCCL); other kinds always use the ring. n <= 1
 * or bytes <= 0: 0. */
lsim_ns lsim_cost_collective(const lsim_topology *t, int kind, int64_t bytes, const int32_t *ranks,
                             int n, lsim_coll_algo algo);

/* lsim_cost_collective with the protocol forced too (AUTO: the topology's,
 * itself AUTO: NCCL's choice), saying which algorithm and protocol gave the
 * time (either pointer may be NULL). Without nccl_tuning, or within one
 * node, the protocol is reported as SIMPLE. */
lsim_ns lsim_cost_collective_nccl(const lsim_topology *t, int kind, int64_t bytes, const int32_t *ranks, int n,
                                  lsim_coll_algo algo, lsim_coll_proto proto, lsim_coll_algo *algo_used,
                                  lsim_coll_proto *proto_used);

/* The algorithm lsim_cost_collective uses for this call (RING or TREE). */
lsim_coll_algo lsim_cost_collective_algo(const lsim_topology *t, int kind, int64_t bytes,
                                         const int32_t *ranks, int n, lsim_coll_algo algo);

/* Point-to-point send of `bytes` from GPU src to GPU dst:
 * coll_base_ns + lat + bytes / bw of the link class (NVLink if same node,
 * else NIC). src == dst or bytes <= 0: 0. */
lsim_ns lsim_cost_p2p(const lsim_topology *t, int64_t bytes, int32_t src, int32_t dst);

/* A fit of t = alpha + bytes / beta. kind: an lsim_coll_kind, LSIM_COLL_NONE
 * when not known. beta is in bytes of the fitted size per second (for
 * nccl-tests, the `size` column: the algorithm bandwidth asymptote, not
 * busbw). max_rel_residual: max over points of |fit - t| / t. nranks: the
 * ranks the nccl-tests run used (its "#  Rank N ..." lines), -1 unknown. */
typedef struct lsim_coll_fit {
    int kind;
    double alpha_ns;
    double beta_bytes_per_s;
    size_t points;
    double max_rel_residual;
    int nranks;
} lsim_coll_fit;

/* The bandwidths a collective fit may give, bytes/s: those a topology
 * accepts for its links (intra_bw, inter_bw; src/cost/spec.c). */
#define LSIM_FIT_BW_MIN 1e6
#define LSIM_FIT_BW_MAX 1e14

/* Fit to an nccl-tests output file (all_reduce_perf etc.): the out-of-place
 * `time` (us) against `size` (B) of the "#  size  count  type  redop  root
 * time  algbw  busbw ..." table (older tables without `root` too); other
 * lines (NCCL INFO, command lines) are ignored. The kind comes from the
 * program name ("all_reduce_perf", "Collective test starting: ...") found in
 * the file or in its name. LSIM_EIO unreadable; LSIM_EFORMAT no table
 * header, a row (a line starting with a whole number after the header)
 * whose size is negative or whose time is missing, not a finite positive
 * number of us (inf, nan, N/A) or above 1e12 us ("PATH: line N: ..."),
 * fewer than 2 data rows, all sizes equal, all times equal, time not
 * growing with size, or a fitted bandwidth outside LSIM_FIT_BW_MIN..MAX
 * ("PATH: what is wrong"). */
int lsim_cost_fit_nccl_tests(const char *path, lsim_coll_fit *out, lsim_err *err);

/* Least squares of y = a + x / b over n points, weighted by 1/y^2 (minimises
 * relative residuals, so the small points that determine a count as much as
 * the large ones that determine b). Sets alpha_ns, beta_bytes_per_s, points,
 * max_rel_residual; kind = LSIM_COLL_NONE, nranks = -1. LSIM_EARG for n < 2,
 * a non-finite or negative x, a non-positive or non-finite y, all x equal,
 * or a slope <= 0 (no bandwidth). */
int lsim_cost_fit_alpha_beta(const double *bytes, const double *ns, size_t n, lsim_coll_fit *out,
                             lsim_err *err);

/* ---- network calibration from several node counts (docs/network.md) ---- */

/* One measured collective: `kind` over `gpus` GPUs on `nodes` nodes, `bytes`
 * as nccl-tests' size column, `ns` per call. */
typedef struct lsim_net_point {
    int kind;
    int nodes, gpus;
    double bytes, ns;
} lsim_net_point;

/* nccl-tests' bus-bandwidth factor: busbw = algbw x this (all_reduce
 * 2(n-1)/n; reduce_scatter, all_gather, alltoall (n-1)/n; others 1). */
double lsim_net_busbw_factor(int kind, int n);

/* Append the rows of a CSV of nccl-tests results in the published format
 * (a header naming at least Nodes, GPUs, size(MB) and out algbw(GB/s);
 * ../shared/published/README.md section 3) to *pts (realloc'ed; *n
 * counts): bytes = size(MB) x 2^20, ns = bytes / out algbw. The kind comes
 * from the file name (all_reduce, alltoall, reduce_scatter, all_gather).
 * 0; LSIM_EIO; LSIM_EFORMAT naming the file, the line and the column. */
int lsim_net_read_csv(const char *path, lsim_net_point **pts, size_t *n, lsim_err *err);

/* Append an nccl-tests output file's rows (the table lsim_cost_fit_nccl_tests
 * reads), its ranks on nodes of gpus_per_node: LSIM_EFORMAT when the file
 * does not list its ranks or they are not whole nodes. */
int lsim_net_read_nccl_tests(const char *path, int gpus_per_node, lsim_net_point **pts, size_t *n, lsim_err *err);

/* What lsim_net_fit did: points used per part, relative residuals
 * (predicted - measured) / measured of the time over the points used. */
typedef struct lsim_net_fit_report {
    size_t coll_points, a2a_points, skipped; /* skipped: within one node */
    size_t ring_points, tree_points;         /* NCCL's choice at the fit */
    double coll_rms, coll_max, a2a_rms, a2a_max;
    int clamped;                             /* an efficiency above 1 set to 1 */
} lsim_net_fit_report;

/* Least squares across every point spanning several nodes: *out = *base
 * with nccl_tuning = 1 and, from the all-reduce (and other ring) points,
 * ring_step_ns, tree_hop_ns, ring_eff, tree_eff, and from the all-to-all
 * points a2a_peer_ns, a2a_eff (docs/network.md, "Method"). Points whose
 * gpus / nodes is not base->gpus_per_node: LSIM_EARG naming the point. A
 * part without points keeps base's values. LSIM_EARG when no point spans
 * several nodes or the fit has no positive bandwidth. */
int lsim_net_fit(const lsim_topology *base, const lsim_net_point *pts, size_t n, lsim_topology *out,
                 lsim_net_fit_report *rep, lsim_err *err);

#endif
