/* Configuration search (docs/search.md): every TP x PP x DP x micro-batch x
 * schedule x recomputation x distributed-optimizer layout of a model on N
 * GPUs, the ones that do not divide or do not fit in memory discarded with
 * the reason counted, the rest synthesized and simulated, ranked by step
 * time.
 *
 * One configuration is simulated as one data-parallel replica (TP x PP
 * GPUs) whose gradient collectives and optimizer shards are those of the
 * whole DP group (lsim_synth_cfg.dp_cost): the replicas of a synthesized
 * job are identical, so the replica's step is the job's, for a DP-times
 * smaller simulation. The TP ranks of a replica's stage are identical too,
 * so the replica is simulated with one TP rank per stage (PP GPUs;
 * lsim_synth_cfg.tp_one), its TP collectives timed as the TP-wide ones:
 * the same step again, TP times smaller. Memory is memest.h's estimate of
 * the full job on the GPU spec's capacity. A candidate with FSDP, expert
 * parallelism or a MoE model is simulated whole (synth refuses --dp-cost
 * with them), and one with CP keeps every TP rank.
 *
 * Ownership: lsim_search_enumerate allocates *out (free()). Everything is
 * local (no MPI); lsim_search_world_eval (search_from.h) spreads the
 * candidates over MPI ranks. */
#ifndef LUMOSIM_SEARCH_H
#define LUMOSIM_SEARCH_H

#include "lumosim/run.h"
#include "lumosim/synth.h"

#define LSIM_SEARCH_MAXV 32 /* values per searched dimension */

/* The space: base holds the model, GPU, topology, global batch and the
 * options not searched; each list the values tried (ascending). */
typedef struct lsim_search_space {
    lsim_synth_cfg base;
    int gpus;
    int tp[LSIM_SEARCH_MAXV], ntp;
    int pp[LSIM_SEARCH_MAXV], npp;        /* 0 entries: every divisor of the layers */
    int mb[LSIM_SEARCH_MAXV], nmb;
    int vst[LSIM_SEARCH_MAXV], nvst;      /* 1: 1F1B; V > 1: interleaved with V chunks */
    int rc[3], nrc;                       /* LSIM_RC_* */
    int dopt[2], ndopt;                   /* distributed optimizer off (0) / on (1) */
    /* the modern modes (docs/search.md "Context, expert and FSDP"); 0
     * entries: the default, {1} ({0} for fsdp) */
    int cp[LSIM_SEARCH_MAXV], ncp;        /* context-parallel ranks */
    int ep[LSIM_SEARCH_MAXV], nep;        /* expert-parallel ranks (MoE models) */
    int fsdp[LSIM_SEARCH_MAXV], nfsdp;    /* FSDP shard group: 0 off, LSIM_SEARCH_FSDP_FULL (DP), or N */
} lsim_search_space;
#define LSIM_SEARCH_FSDP_FULL (-1)

/* Why a candidate is not simulated. */
#define LSIM_SEARCH_REASONS(X)                                                                      \
    X(LSIM_SR_OK, "simulated")                /* feasible (simulated unless the budget ran out) */ \
    X(LSIM_SR_GPUS, "gpus_not_divisible")     /* TP x PP does not divide the GPUs */               \
    X(LSIM_SR_SHAPE, "shape_not_divisible")   /* heads, hidden, FFN, layers, batch, schedule */    \
    X(LSIM_SR_MEMORY, "does_not_fit")         /* memest.h's peak above the GPU's capacity */       \
    X(LSIM_SR_REDUNDANT, "redundant")         /* the same job as another candidate: distributed     \
                                                 optimizer at DP 1, selective recomputation with     \
                                                 flash attention */                                  \
    X(LSIM_SR_REFUSED, "whatif_refused")      /* --from: a what-if rule refuses it (search_from.h) */

typedef enum lsim_search_reason { LSIM_SEARCH_REASONS(LSIM_ENUM_ENTRY_) LSIM_SR_N } lsim_search_reason;
const char *lsim_search_reason_name(lsim_search_reason r);

typedef struct lsim_search_cand {
    int tp, pp, dp, mb, vstages, recompute, dist_opt;
    int cp, ep, fsdp;          /* context and expert parallel ranks (1: none), FSDP shard group (0: off) */
    int reason;                /* lsim_search_reason */
    double mem_bytes;          /* memest.h peak per GPU (0 when it does not divide) */
    int mem_stage;
    char why[LSIM_ERR_LEN];    /* refused: the check's message */
    /* after lsim_search_eval */
    int simulated;
    lsim_ns step;              /* predicted step time (the job span) */
    lsim_ns bd[4];             /* mean over the replica's GPUs: exposed compute, overlapped, exposed comm, other */
    double sim_s;              /* wall seconds of synthesis + simulation */
    /* --from (search_from.h) */
    int from_req[5];           /* the what-if's --tp, --pp, --dp, --schedule V, --micro-batches; 0: the source's */
    const char *rule;          /* LSIM_SR_REFUSED: the what-if rule that refused (static), else NULL */
} lsim_search_cand;

/* Every combination of the space, in a fixed order (TP, PP, micro-batch,
 * schedule, recomputation, distributed optimizer, CP, EP, FSDP), each checked:
 * reason set, memory estimated. 0, LSIM_EARG (an empty space, bad base),
 * LSIM_ENOMEM. */
int lsim_search_enumerate(const lsim_search_space *s, lsim_search_cand **out, size_t *n, lsim_err *err);

/* Synthesize and simulate feasible candidate c (one replica, see above)
 * with run options o; fills step, bd, sim_s, simulated. 0 or the error. */
int lsim_search_eval(const lsim_search_space *s, lsim_search_cand *c, const lsim_run_opts *o, lsim_err *err);

/* Simulate the graphs r holds with options o and record the candidate's
 * step (the job span), mean breakdown and simulated flag: what
 * lsim_search_eval and a --from candidate (search_from.h) measure. 0 or
 * the run's error. Local. */
int lsim_search_measure(const lsim_run_opts *o, lsim_run *r, lsim_search_cand *c, lsim_err *err);

/* --top K --samples N: candidate c re-simulated N times with every GPU op's
 * duration drawn as lsim sim --samples draws them, but around its modelled
 * duration with relative std-dev `spread` (lsim_pools_modelled: a
 * synthesized kernel's duration is modelled, and its repeats are copies,
 * not measurements; *info says what was assumed), samples 0..N-1 of seed:
 * q = p5, p50, p95 of the step time, ns. Local; the graphs are c's one-replica job, as
 * lsim_search_eval simulates it. 0, LSIM_ENOMEM or the run's error. */
/* The default relative std-dev of a synthesized op's duration in
 * intervals: the fitted spread (samples.c: median relative std-dev of the
 * kernels seen 5 times or more) of the shared megatron_tp8_a100 trace's
 * rank 0, 0.40 % (lumosim build examples/megatron_tp8_rank0.json.gz -o
 * m.h5; lumosim sim m.h5 --samples 8). */
#define LSIM_SEARCH_SPREAD 0.004
struct lsim_pools_info;
int lsim_search_interval(const lsim_search_space *s, const lsim_search_cand *c, const lsim_run_opts *o,
                         uint64_t samples, uint64_t seed, double spread, lsim_ns q[3], struct lsim_pools_info *info,
                         lsim_err *err);

/* Process-wide, for a program about to evaluate many candidates (the
 * search command calls it once): the C library keeps freed memory for the
 * next candidate instead of returning it to the kernel and faulting it in
 * again (glibc's mallopt; nothing elsewhere). Local. */
void lsim_search_keep_memory(void);

/* The synth configuration of candidate c: LSIM_SEARCH_FULL the full job
 * (dp = DP); LSIM_SEARCH_REPLICA one data-parallel replica with dp_cost =
 * DP (a MoE model: the fewest replicas whose stage holds whole EP x ETP
 * blocks; the full job when its routing is drawn per EP group, which no
 * replica can stand for); LSIM_SEARCH_ONE_TP that replica with one TP rank
 * per stage (tp_one) where lsim_synth_tp_one_exact allows, else the
 * replica (always, with experts). Local. */
enum { LSIM_SEARCH_FULL = 0, LSIM_SEARCH_REPLICA = 1, LSIM_SEARCH_ONE_TP = 2 };
void lsim_search_cfg(const lsim_search_space *s, const lsim_search_cand *c, int replica, lsim_synth_cfg *out);

/* ---- the ranking model (search_rank.c). Every order below is total, ties
 * broken by candidate index: the same for any MPI rank count and any
 * sharding. Local. */

/* The order a budget spends itself in: order[0..n) (indices into c)
 * sorted by an analytic proxy of the step, ascending: the 1F1B bubble
 * (pp - 1) / (m V) plus the recomputed share (full 1/3, selective 1/30).
 * 0 or LSIM_ENOMEM (order unchanged). */
int lsim_search_order_proxy(const lsim_search_space *s, const lsim_search_cand *c, size_t *order, size_t n,
                            lsim_err *err);

/* Throughput (issue 39): what one step of a candidate processes, in a unit
 * every candidate of one search shares. global_batch > 0 (a --model
 * search, --from with --global-batch): that many samples. --from
 * otherwise keeps the job's per-replica batch (the what-if's weak
 * scaling): DP x micro-batches x micro-batch size samples when
 * --micro-batches (from_req[4]) and the micro-batch size are known, DP x
 * micro-batches micro-batches without the size, DP of the job's
 * per-replica batches without --micro-batches. Never a 0 that reads as
 * measured: a step not simulated has throughput 0 and ranks last. */
typedef enum lsim_search_unit { LSIM_SEARCH_SAMPLES, LSIM_SEARCH_MICROBATCHES, LSIM_SEARCH_BATCHES } lsim_search_unit;
lsim_search_unit lsim_search_unit_of(const lsim_search_cand *c, size_t n, int global_batch);
const char *lsim_search_unit_name(lsim_search_unit u); /* "samples/s", ... */
double lsim_search_per_step(const lsim_search_cand *x, int global_batch);
double lsim_search_throughput(const lsim_search_cand *x, int global_batch); /* per second */

/* The ranking of order[0..n) (indices into c, simulated candidates): the
 * highest throughput first, ties by the shorter step; by_step: the
 * shortest step first. 0 or LSIM_ENOMEM (order unchanged). */
int lsim_search_rank(const lsim_search_cand *c, size_t *order, size_t n, int global_batch, int by_step,
                     lsim_err *err);

#endif
