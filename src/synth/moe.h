/* Mixture-of-experts layers and expert parallelism in a synthesized job
 * (internal to src/synth; the model and its sources: docs/synthesis.md,
 * "Expert parallelism", and docs/models.md, "Mixture of experts"). gen.c
 * calls these in place of a MoE layer's dense MLP; what they emit goes
 * through gen.c's emitter. Local. */
#ifndef LUMOSIM_SYNTH_MOE_H
#define LUMOSIM_SYNTH_MOE_H

#include "lumosim/synth.h"

typedef struct synth_moe {
    int on;                      /* the model has experts */
    int ep, edp, eloc;           /* EP group size, expert-data-parallel group size (the full job's,
                                    with dp_cost), experts per GPU */
    int edpsim;                  /* the EDP group's GPUs synthesized: its collectives' size */
    int etp, et;                 /* expert-tensor-parallel group size, place in it */
    int32_t *ep_ranks, *edp_ranks, *etp_ranks;
    char ep_pg[48], edp_pg[48], etp_pg[48];
    int64_t ep_seq, edp_seq, etp_seq;
    int64_t etp_ag_bytes, etp_rs_bytes; /* ETP > 1: this rank's received rows (all-gather), the group's (reduce-scatter) */
    lsim_ns etp_ag, etp_rs;
    int64_t *tokl;               /* tokens of each local expert over the ETP group (eloc) */
    int64_t a2a_bytes;           /* one dispatch (or combine) send buffer: the rank's tokens x top_k x h x 2 */
    lsim_ns a2a;
    int64_t count_bytes;         /* the tokens-per-expert counts exchanged before the dispatch */
    lsim_ns count_a2a, d2h;      /* their all-to-all; the split sizes' copy to the host */
    /* forward: router GEMM and top-k softmax, permute, the local experts'
     * grouped GEMMs and activation, unpermute; shared experts */
    lsim_ns router, topk, permute, unpermute, efc1, eact, efc2, sfc1, sact, sfc2;
    lsim_ns b_routerd, b_routerw, b_topk, b_permute, b_unpermute;
    lsim_ns b_efc1d, b_efc1w, b_eact, b_efc2d, b_efc2w, b_sfc1d, b_sfc1w, b_sact, b_sfc2d, b_sfc2w;
    lsim_ns f8_fc1[3], f8_fc2[3], f8_amax1[3], f8_amax2[3]; /* FP8 casts: input, weight, gradient */
    double dense_params;         /* a MoE layer's parameters per GPU but the routed experts */
    double expert_params;        /* the GPU's routed experts' parameters in one MoE layer */
    int64_t edp_bytes;
    lsim_ns edp_red, edp_ag;
    int64_t edp_ag_bytes;
    int ppi, grp, idx;           /* stage, EP group, place in it */
    int grp0;                    /* the EP group of the ETP group's first GPU (its groups: grp0 .. + etp) */
    int64_t *tok;                /* tokens per expert of the group (the last draw) */
    double *rem;                 /* the draw's scratch */
} synth_moe;

/* Off (a dense model): X->on = 0, nothing allocated. Else the EP and
 * expert-data-parallel groups of the GPU at index w = tp + TP (cp + CP dp)
 * of stage ppi (stage_gpus = TP x CP x DP GPUs a stage of the full job,
 * DP = dp_cost's replicas with dp_cost; have: the first `have` of them
 * synthesized, whole EP x ETP blocks, synth_moe_check) and every kernel's
 * and collective's cost; c is the configuration with the rank's seq / CP.
 * 0 or LSIM_ENOMEM. */
int synth_moe_init(synth_moe *X, const lsim_synth_cfg *c, int ppi, int w, int stage_gpus, int have);
void synth_moe_free(synth_moe *X);
/* The MoE block of one layer and micro-batch, forward (pfx: the
 * recomputation prefix) and backward; with routing_skew the tokens of
 * (layer, mb) are drawn (lsim_synth_expert_tokens) and the kernels costed
 * for them. */
void synth_moe_fwd(synth_moe *X, const lsim_synth_cfg *c, lsim_emit *E, const char *pfx, int layer, int mb);
void synth_moe_bwd(synth_moe *X, const lsim_synth_cfg *c, lsim_emit *E, int layer, int mb);
/* After a MoE layer's last backward: its routed experts' gradients reduced
 * over the expert-data-parallel group (all-reduce, or reduce-scatter with
 * the distributed optimizer) on the data-parallel stream. */
void synth_moe_grads(synth_moe *X, const lsim_synth_cfg *c, lsim_emit *E, int layer);
/* The optimizer step of a MoE layer's routed experts (their share), and
 * with the distributed optimizer their all-gather over the EDP group. */
void synth_moe_opt(synth_moe *X, const lsim_synth_cfg *c, lsim_emit *E, int layer);
/* The configuration checks of --ep and of MoE models (lsim_synth_check). */
int synth_moe_check(const lsim_synth_cfg *c, lsim_err *err);

#endif
