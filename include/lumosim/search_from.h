/* Configuration search around a job (docs/search.md, "Around a job:
 * --from"): the layouts `lumosim whatif` can reach from a traced or
 * synthesized graph store (its --tp, --pp, --schedule, --dp and
 * --micro-batches), each checked by the what-if rules (whatif_plan.h), then
 * transformed and simulated as `lumosim whatif` + `lumosim sim` would, so
 * that a ranked step is exactly what those two commands print.
 *
 * The candidates are search.h's lsim_search_cand, so the ranking, the
 * files and the sharding of the search apply unchanged. A candidate the
 * rules refuse has reason LSIM_SR_REFUSED, the rule in `rule` and its
 * message in `why`; one whose result does not fit in its GPUs' memory (the
 * what-if's estimate or carried traced figures: lsim_wi_plan_oom) is found
 * only once transformed, and becomes LSIM_SR_MEMORY then.
 *
 * Library: lumosim_io (reads and writes graph stores). Everything is local
 * (no MPI) but lsim_search_world_eval, which spreads the candidates over
 * the command's ranks (world.h). Strings are borrowed for the search's
 * lifetime. */
#ifndef LUMOSIM_SEARCH_FROM_H
#define LUMOSIM_SEARCH_FROM_H

#include "lumosim/run.h"
#include "lumosim/search.h"
#include "lumosim/world.h"

typedef struct lsim_search_from {
    const char *in;                 /* the source graph store */
    const char *model;              /* whatif --model (the source's shape), NULL: the store's */
    const char *gpu, *topo;         /* whatif --gpu / --topology for every candidate, NULL: the source's */
    long micro_batch;               /* whatif --micro-batch (the source's size), 0: from the activations */
    /* the values tried; no entry: the source's (one candidate, option not given) */
    int tp[LSIM_SEARCH_MAXV], ntp;
    int pp[LSIM_SEARCH_MAXV], npp;
    int dp[LSIM_SEARCH_MAXV], ndp;
    int vst[LSIM_SEARCH_MAXV], nvst; /* 1: 1F1B; V > 1: interleaved */
    int mbs[LSIM_SEARCH_MAXV], nmbs; /* micro-batches per pipeline */
    int gpus;                       /* > 0: only layouts of TP x PP x DP = gpus */
    int global_batch;               /* > 0: micro-batches = B / (DP x micro-batch size) (with no --micro-batches) */
    const char *workdir;            /* where the transformed stores are written (one at a time; removed) */
} lsim_search_from;

/* What the source is, found by lsim_search_from_enumerate. */
typedef struct lsim_search_from_info {
    int tp, pp, dp;                 /* the source's layout */
    int micro_batch;                /* its micro-batch size (0: unknown) */
    int seq;                        /* its sequence length (0: unknown) */
    size_t gpus;                    /* its GPUs */
} lsim_search_from_info;

/* Every combination of the given values in a fixed order (TP, PP, DP,
 * schedule, micro-batches), each checked: the GPU count (LSIM_SR_GPUS), the
 * global batch (LSIM_SR_SHAPE) and the what-if rules (LSIM_SR_REFUSED).
 * The source is read once (pass 1 of the what-if). *out allocated (free()).
 * 0; LSIM_EFORMAT / LSIM_EIO naming the file when it is not a readable
 * graph store; LSIM_EARG (--global-batch without a known micro-batch size);
 * LSIM_ENOMEM. Local. */
int lsim_search_from_enumerate(const lsim_search_from *s, lsim_search_cand **out, size_t *n,
                               lsim_search_from_info *info, lsim_err *err);

/* Transform the source into candidate c (lsim_wi_plan_run into
 * s->workdir), then, unless the result does not fit in memory (c->reason
 * becomes LSIM_SR_MEMORY, why the OOM line), simulate it as lumosim sim does
 * with run options o: step, bd, mem_bytes (the new store's estimate of the
 * most loaded GPU, or its largest carried traced peak; 0 unknown), sim_s,
 * simulated. The transformed store is removed. A what-if that the
 * transform itself refuses (LSIM_EARG: a check made once the source is
 * read, e.g. a trace's activations unknown without --model) becomes
 * LSIM_SR_REFUSED with rule "transform". 0 or the error (LSIM_EIO,
 * LSIM_ENOMEM, ...). */
int lsim_search_from_eval(const lsim_search_from *s, lsim_search_cand *c, const lsim_run_opts *o, lsim_err *err);

/* The candidates' evaluation over the world's ranks, for `lumosim search`
 * with or without --from: candidate order[k] (k < nf, feasible) is
 * evaluated on rank k mod size (fs: lsim_search_from_eval, else sp:
 * lsim_search_eval, with run options o) until `budget` seconds (> 0) have
 * passed since t0, then every rank gets every evaluated candidate's
 * results in c[0..n) in candidate order: step, bd, sim_s, reason,
 * simulated, and with fs mem_bytes, rule and why. Those no rank reached
 * stay as enumerated. rc: this rank's status so far (nonzero: it
 * evaluates nothing but still takes part). 0, this rank's error, or
 * LSIM_EINTERNAL "another rank failed"; LSIM_ENOMEM. Collective (every
 * rank calls it with the same candidates); off: local. */
int lsim_search_world_eval(const lsim_world *w, const lsim_search_space *sp, const lsim_search_from *fs,
                           lsim_search_cand *c, size_t n, const size_t *order, size_t nf, double t0, double budget,
                           const lsim_run_opts *o, int rc, lsim_err *err);

#endif
