/* Mixture-of-experts layers and expert parallelism in a synthesized job, as
 * Megatron-Core runs them with the all-to-all token dispatcher and grouped
 * GEMMs (--moe-token-dispatcher-type alltoall --moe-grouped-gemm; the
 * published Megatron-Bridge MoE rows), dropless, routing balanced
 * ("we force-balance the token distribution among experts"; docs/
 * synthesis.md, "Expert parallelism"; contract: moe.h).
 *
 * A MoE layer replaces the dense MLP after the second norm: the router (a
 * GEMM of the rank's tokens x hidden x experts, and the top-k softmax over
 * its fp32 logits), the permutation of each token's top-k copies by
 * expert, the dispatch all-to-all in the EP group, the GPU's experts / EP
 * local experts as grouped GEMMs (FC1, activation, FC2) over the tokens
 * routed to them, the combine all-to-all back, and the unpermutation (each
 * token's top-k outputs weighted and summed). Shared experts run on the
 * rank's tokens on the compute stream while the dispatch is in flight
 * (Megatron's shared-expert overlap). Experts are not split over the
 * attention's TP (Megatron's MoE parallel folding): with TP the MoE block
 * runs on the rank's sequence-parallel shard of the tokens, so TP > 1
 * needs --sequence-parallel. With expert-tensor parallelism (--etp ETP >
 * 1) each expert's FFN is split over ETP GPUs (the stage's GPUs as ETP x
 * EP x EDP, ETP fastest, Megatron's expert layout): the tokens dispatched
 * to them are all-gathered over the ETP group before the experts, and
 * their partial outputs reduce-scattered after (the alltoall dispatcher
 * with a tensor-parallel expert group), so each GPU runs its ETP group's
 * rows at 1 / ETP of the width. The routed experts' gradients are reduced
 * over the expert-data-parallel group (the GPUs of the stage with the same
 * place in their EP and ETP groups). */
#include "moe.h"
#include "lumosim/alloc.h"
#include "routing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE LSIM_EMIT_NONE

int synth_moe_check(const lsim_synth_cfg *c, lsim_err *err)
{
    const lsim_model_shape *m = &c->model;
    if (c->ep < 0 || c->ep > (1 << 24)) return lsim_err_set(err, LSIM_EARG, "--ep %d: not a number of ranks", c->ep);
    if (m->experts <= 0) {
        if (c->ep > 1) return lsim_err_set(err, LSIM_EARG, "--ep %d: model %s has no experts", c->ep, m->name);
        if (c->etp > 1) return lsim_err_set(err, LSIM_EARG, "--etp %d: model %s has no experts", c->etp, m->name);
        return synth_routing_check(c, err);
    }
    if (m->top_k < 1 || m->top_k > m->experts)
        return lsim_err_set(err, LSIM_EARG, "model %s: top_k: %d experts per token is not within 1 .. the %d experts",
                            m->name, m->top_k, m->experts);
    if (m->expert_ffn <= 0 || m->shared_experts < 0 || m->dense_layers < 0 || m->moe_every < 0)
        return lsim_err_set(err, LSIM_EARG, "model %s: expert_ffn must be positive, shared_experts, dense_layers and "
                            "moe_every non-negative", m->name);
    int ep = c->ep > 1 ? c->ep : 1, etp = c->etp > 1 ? c->etp : 1, dpf = c->dp_cost > c->dp ? c->dp_cost : c->dp;
    long long stage = (long long)c->tp * dpf * (c->cp > 1 ? c->cp : 1);
    if (c->etp < 0 || c->etp > (1 << 24)) return lsim_err_set(err, LSIM_EARG, "--etp %d: not a number of ranks", c->etp);
    if (etp > 1 && (m->expert_ffn % etp))
        return lsim_err_set(err, LSIM_EARG, "--etp %d: the expert FFN width %d of model %s is not divisible by ETP",
                            etp, m->expert_ffn, m->name);
    if (etp > 1 && stage % ((long long)ep * etp))
        return lsim_err_set(err, LSIM_EARG,
                            "--etp %d: EP x ETP = %lld does not divide the %lld GPUs of a stage (TP x CP x DP = %d x %d x %d)",
                            etp, (long long)ep * etp, stage, c->tp, c->cp > 1 ? c->cp : 1, dpf);
    if (m->experts % ep)
        return lsim_err_set(err, LSIM_EARG, "--ep %d: the %d experts of model %s are not divisible by EP = %d", ep,
                            m->experts, m->name, ep);
    if (stage % ep)
        return lsim_err_set(err, LSIM_EARG, "--ep %d: EP does not divide the %lld GPUs of a stage (TP x CP x DP = %d x %d x %d)",
                            ep, stage, c->tp, c->cp > 1 ? c->cp : 1, dpf);
    if (c->tp > 1 && !c->seq_parallel)
        return lsim_err_set(err, LSIM_EARG,
                            "model %s: experts with TP = %d need --sequence-parallel (the MoE block runs on the "
                            "rank's sequence shard)", m->name, c->tp);
    if (m->shared_experts > 0 && ((long long)m->shared_experts * m->expert_ffn) % c->tp)
        return lsim_err_set(err, LSIM_EARG, "model %s: the shared experts' width %lld is not divisible by TP = %d", m->name,
                            (long long)m->shared_experts * m->expert_ffn, c->tp);
    int rc = synth_routing_check(c, err);
    if (rc) return rc;
    const char *bad = c->fsdp > 0 ? "--fsdp" : c->tp_one && c->tp > 1 ? "one TP rank per stage (search)" : NULL;
    if (bad) return lsim_err_set(err, LSIM_EARG, "model %s: experts with %s are not modelled", m->name, bad);
    if (c->dp_cost > c->dp) {
        /* fewer replicas: exact when the EP x ETP blocks synthesized are
         * whole (each all-to-all's group all there) and every block routes
         * as the others do (balanced: no draw per group) */
        long long have = (long long)c->tp * c->dp * (c->cp > 1 ? c->cp : 1);
        if (synth_routing_drawn(c))
            return lsim_err_set(err, LSIM_EARG, "model %s: --dp-cost with routing drawn per EP group (skew, Dirichlet or "
                                "histogram) is not modelled: each group routes its own tokens", m->name);
        if (have % ((long long)ep * etp))
            return lsim_err_set(err, LSIM_EARG, "model %s: --dp-cost: the %lld GPUs of a stage synthesized (TP x CP x DP) "
                                "are no whole number of EP x ETP = %lld groups", m->name, have, (long long)ep * etp);
    }
    return 0;
}

/* A grouped GEMM over n experts of tok[e] tokens each: fwd/dgrad (tok x
 * N x K, tokens_k 0) or wgrad (N x K x tok, tokens_k 1). Equal groups run
 * as one batched GEMM (the grouped kernel's tiles of all experts share the
 * waves). Unequal ones (skewed routing): the batched GEMM of their mean,
 * scaled by how much the experts' own GEMMs cost more than n GEMMs of the
 * mean (tile quantization of the small groups, the large ones' extra
 * waves); 1 when equal, so the cost is continuous in the skew. */
static lsim_ns one(const lsim_gpu_spec *g, double t, double N, double K, int lb, int tokens_k)
{
    return tokens_k ? lsim_cost_gemm(g, N, K, t, lb) : lsim_cost_gemm(g, t, N, K, lb);
}

static lsim_ns grouped(const lsim_gpu_spec *g, const int64_t *tok, int n, double N, double K, int lb, int tokens_k)
{
    int eq = 1;
    double sum = 0;
    for (int e = 0; e < n; e++) eq &= tok[e] == tok[0], sum += (double)tok[e];
    if (eq) return tokens_k ? lsim_cost_bgemm(g, n, N, K, (double)tok[0], lb) : lsim_cost_bgemm(g, n, (double)tok[0], N, K, lb);
    double mean = sum / n, own = 0;
    for (int e = 0; e < n; e++)
        if (tok[e] > 0) own += (double)one(g, (double)tok[e], N, K, lb, tokens_k);
    lsim_ns batched = tokens_k ? lsim_cost_bgemm(g, n, N, K, mean, lb) : lsim_cost_bgemm(g, n, mean, N, K, lb);
    return (lsim_ns)llround((double)batched * own / (n * (double)one(g, mean, N, K, lb, tokens_k)));
}

/* The kernels' costs of one MoE layer and micro-batch on this GPU. */
static void moe_costs(synth_moe *X, const lsim_synth_cfg *c, const int64_t *tok)
{
    const lsim_gpu_spec *g = &c->gpu;
    const lsim_model_shape *m = &c->model;
    int swiglu = m->mlp == LSIM_MLP_SWIGLU, lb = c->precision == LSIM_PREC_FP8 ? 1 : c->elem_bytes, k = m->top_k;
    /* tok: the rows of each local expert over the ETP group (every GPU of
     * it runs them all, at 1 / ETP of the expert's width) */
    double h = m->hidden, E = m->experts, fe = (double)m->expert_ffn / X->etp, f1e = swiglu ? 2 * fe : fe;
    double eb = c->elem_bytes, Tm = (double)synth_rank_tokens(c, m->seq), T = (double)c->micro_batch * m->seq, rows = 0;
    for (int e = 0; e < X->eloc; e++) rows += (double)tok[e];
    /* the router: a GEMM of the rank's tokens into E logits (bf16: the
     * logits' fp32 softmax, Megatron's moe_router_dtype, is the top-k
     * kernel's), the top-k softmax reading fp32 logits and writing the
     * probabilities (4 + 4 bytes), plus the top-k's indices */
    X->router = lsim_cost_gemm(g, Tm, E, h, c->elem_bytes);
    X->topk = lsim_cost_elementwise(g, Tm * E * 8 + Tm * k * 8);
    X->permute = lsim_cost_elementwise(g, (Tm + Tm * k) * h * eb);         /* read each token, write k copies */
    X->unpermute = lsim_cost_elementwise(g, (Tm * k + Tm) * h * eb);       /* read k outputs, write the sum */
    X->efc1 = grouped(g, tok, X->eloc, f1e, h, lb, 0);
    X->eact = lsim_cost_elementwise(g, (swiglu ? 3 : 2) * rows * fe * eb);
    X->efc2 = grouped(g, tok, X->eloc, h, fe, lb, 0);
    X->b_efc2d = grouped(g, tok, X->eloc, fe, h, lb, 0);
    X->b_efc2w = grouped(g, tok, X->eloc, fe, h, lb, 1);
    X->b_eact = lsim_cost_elementwise(g, (swiglu ? 5 : 3) * rows * fe * eb);
    X->b_efc1d = grouped(g, tok, X->eloc, h, f1e, lb, 0);
    X->b_efc1w = grouped(g, tok, X->eloc, h, f1e, lb, 1);
    X->b_unpermute = X->unpermute;
    X->b_permute = X->permute;
    X->b_topk = X->topk;
    X->b_routerd = lsim_cost_gemm(g, Tm, h, E, c->elem_bytes);
    X->b_routerw = lsim_cost_gemm(g, h, E, Tm, c->elem_bytes);
    /* shared experts: TP-split like the dense MLP (width shared x fe / TP)
     * on the layer's T tokens; their TP collectives are not modelled */
    double fs = (double)m->shared_experts * m->expert_ffn / c->tp, f1s = swiglu ? 2 * fs : fs;
    if (m->shared_experts > 0) {
        X->sfc1 = lsim_cost_gemm(g, T, f1s, h, lb);
        X->sact = lsim_cost_elementwise(g, (swiglu ? 3 : 2) * T * fs * eb);
        X->sfc2 = lsim_cost_gemm(g, T, h, fs, lb);
        X->b_sfc2d = lsim_cost_gemm(g, T, fs, h, lb);
        X->b_sfc2w = lsim_cost_gemm(g, fs, h, T, lb);
        X->b_sact = lsim_cost_elementwise(g, (swiglu ? 5 : 3) * T * fs * eb);
        X->b_sfc1d = lsim_cost_gemm(g, T, h, f1s, lb);
        X->b_sfc1w = lsim_cost_gemm(g, h, f1s, T, lb);
    }
    /* FP8 (docs/models.md "Precision"): the grouped GEMMs' inputs, weights
     * and output gradients cast as the dense linears' are */
    const double el[2][3] = {{rows * h, X->eloc * h * f1e, rows * f1e}, {rows * fe, X->eloc * fe * h, rows * h}};
    for (int j = 0; j < 3; j++) {
        X->f8_fc1[j] = lsim_cost_elementwise(g, el[0][j] * (eb + 2));
        X->f8_fc2[j] = lsim_cost_elementwise(g, el[1][j] * (eb + 2));
        X->f8_amax1[j] = lsim_cost_elementwise(g, el[0][j] * eb);
        X->f8_amax2[j] = lsim_cost_elementwise(g, el[1][j] * eb);
    }
    /* the dispatch's send buffer: the rank's tokens' top-k copies (dropless,
     * balanced: as many come back); NCCL's all-to-all cost over the group.
     * With a capacity: the copies kept (the group's kept fraction, the same
     * on every rank of the group), or padded, the capacity of every expert */
    X->a2a_bytes = (int64_t)(Tm * k * h * eb);
    if (c->capacity_factor > 0) {
        double kept = 0, all = (double)synth_rank_tokens(c, m->seq) * X->ep * k;
        for (int e = 0; e < m->experts; e++) kept += (double)X->tok[e];
        X->a2a_bytes = c->pad_to_capacity ? (int64_t)((double)synth_capacity(c, m->seq) * m->experts * h * eb)
                                          : (int64_t)(Tm * k * h * eb * (all > 0 ? kept / all : 1));
    }
    X->count_bytes = (int64_t)m->experts * 8;
    X->count_a2a = X->ep > 1 ? lsim_cost_collective(&c->topo, LSIM_COLL_ALLTOALL, X->count_bytes, X->ep_ranks, X->ep, LSIM_ALGO_AUTO) : 0;
    X->d2h = lsim_cost_elementwise(g, (double)X->count_bytes);
    X->a2a = X->ep > 1 ? lsim_cost_collective(&c->topo, LSIM_COLL_ALLTOALL, X->a2a_bytes, X->ep_ranks, X->ep, LSIM_ALGO_AUTO) : 0;
    if (X->etp > 1) {
        /* the rows this GPU received (its EP group's for its experts), all-
         * gathered over the ETP group; the group's partial outputs
         * reduce-scattered back (the backward: the reverse of each) */
        double mine = 0;
        for (int e = 0; e < X->eloc; e++) mine += (double)X->tok[(size_t)X->idx * X->eloc + e];
        X->etp_ag_bytes = (int64_t)(mine * h * eb);
        X->etp_rs_bytes = (int64_t)(rows * h * eb);
        X->etp_ag = lsim_cost_collective(&c->topo, LSIM_COLL_ALLGATHER, X->etp_ag_bytes, X->etp_ranks, X->etp, LSIM_ALGO_AUTO);
        X->etp_rs = lsim_cost_collective(&c->topo, LSIM_COLL_REDUCESCATTER, X->etp_rs_bytes, X->etp_ranks, X->etp,
                                         LSIM_ALGO_AUTO);
    }
}

/* The rows of each local expert over the ETP group: the sum of the ETP
 * group's EP groups' draws (one EP group, this GPU's own, without ETP). */
static void local_rows(synth_moe *X, const lsim_synth_cfg *c, int layer, int mb)
{
    if (X->etp <= 1) {
        synth_route(c, c->model.seq, X->ppi, X->grp, layer, mb, X->tok, X->rem);
        memcpy(X->tokl, X->tok + (size_t)X->idx * X->eloc, (size_t)X->eloc * sizeof *X->tokl);
        return;
    }
    memset(X->tokl, 0, (size_t)X->eloc * sizeof *X->tokl);
    for (int t = 0; t < X->etp; t++) {
        synth_route(c, c->model.seq, X->ppi, X->grp0 + t, layer, mb, X->tok, X->rem);
        for (int e = 0; e < X->eloc; e++) X->tokl[e] += X->tok[(size_t)X->idx * X->eloc + e];
    }
    /* X->tok: this GPU's own EP group's draw again (its dispatch) */
    synth_route(c, c->model.seq, X->ppi, X->grp, layer, mb, X->tok, X->rem);
}

int synth_moe_init(synth_moe *X, const lsim_synth_cfg *c, int ppi, int w, int stage_gpus, int have)
{
    memset(X, 0, sizeof *X);
    const lsim_model_shape *m = &c->model;
    if (m->experts <= 0) return 0;
    X->on = 1;
    X->ep = c->ep > 1 ? c->ep : 1;
    X->etp = c->etp > 1 ? c->etp : 1;
    X->edp = stage_gpus / (X->ep * X->etp);
    X->edpsim = have / (X->ep * X->etp); /* one a block, the blocks whole */
    X->eloc = m->experts / X->ep;
    /* the stage's GPUs as ETP x EP x EDP, ETP fastest (Megatron's expert
     * rank order): with ETP 1, EP groups are consecutive blocks */
    int et = w % X->etp, idx = (w / X->etp) % X->ep, d = w / (X->etp * X->ep), base = ppi * stage_gpus;
    int grp = d * X->etp + et;
    X->ep_ranks = lsim_malloc((size_t)X->ep * sizeof *X->ep_ranks);
    X->edp_ranks = lsim_malloc((size_t)X->edp * sizeof *X->edp_ranks);
    X->etp_ranks = lsim_malloc((size_t)X->etp * sizeof *X->etp_ranks);
    X->tok = lsim_malloc((size_t)m->experts * sizeof *X->tok);
    X->tokl = lsim_malloc((size_t)X->eloc * sizeof *X->tokl);
    X->rem = lsim_malloc((size_t)2 * m->experts * sizeof *X->rem);
    if (!X->ep_ranks || !X->edp_ranks || !X->etp_ranks || !X->tok || !X->tokl || !X->rem) {
        synth_moe_free(X);
        return LSIM_ENOMEM;
    }
    X->ppi = ppi, X->grp = grp, X->idx = idx, X->et = et, X->grp0 = d * X->etp;
    for (int j = 0; j < X->ep; j++) X->ep_ranks[j] = base + d * X->etp * X->ep + j * X->etp + et;
    for (int i = 0; i < X->edp; i++) X->edp_ranks[i] = base + et + X->etp * idx + X->etp * X->ep * i;
    for (int t = 0; t < X->etp; t++) X->etp_ranks[t] = base + (w / X->etp) * X->etp + t;
    snprintf(X->ep_pg, sizeof X->ep_pg, "ep:%d:%d", ppi, grp);
    snprintf(X->edp_pg, sizeof X->edp_pg, "edp:%d:%d", ppi, idx * X->etp + et);
    snprintf(X->etp_pg, sizeof X->etp_pg, "etp:%d:%d", ppi, w / X->etp);
    /* balanced routing over the group's tokens (skewed: redrawn per layer
     * and micro-batch, synth_moe_fwd); this rank's experts are idx x eloc
     * .. + eloc */
    local_rows(X, c, 0, 0);
    moe_costs(X, c, X->tokl);
    /* the parameters: memest.h's count, the one rule for the graph and
     * the memory estimate */
    lsim_memest_in in;
    lsim_synth_memest_in(c, &in);
    X->dense_params = lsim_memest_moe_params(&in, &X->expert_params);
    X->edp_bytes = (int64_t)(X->expert_params * c->grad_bytes);
    X->edp_ag_bytes = (int64_t)(X->expert_params * 2.0 / X->edp); /* bf16 weights, one shard */
    if (X->edp > 1) {
        int kind = c->dist_opt ? LSIM_COLL_REDUCESCATTER : LSIM_COLL_ALLREDUCE;
        X->edp_red = lsim_cost_collective(&c->topo, kind, X->edp_bytes, X->edp_ranks, X->edp, LSIM_ALGO_AUTO);
        X->edp_ag = lsim_cost_collective(&c->topo, LSIM_COLL_ALLGATHER, X->edp_ag_bytes, X->edp_ranks, X->edp, LSIM_ALGO_AUTO);
    }
    return 0;
}

void synth_moe_free(synth_moe *X)
{
    free(X->ep_ranks);
    free(X->edp_ranks);
    free(X->etp_ranks);
    free(X->tok);
    free(X->tokl);
    free(X->rem);
    X->ep_ranks = X->edp_ranks = X->etp_ranks = NULL;
    X->tok = X->tokl = NULL;
    X->rem = NULL;
}

/* ETP > 1: the expert inputs' all-gather (forward; the output gradients'
 * in the backward) or the outputs' reduce-scatter (forward; the input
 * gradients' in the backward) over the ETP group, on the EP stream, the
 * compute stream waiting for it. */
static void etp_coll(synth_moe *X, lsim_emit *E, const char *pfx, const char *what, int gather)
{
    if (X->etp <= 1) return;
    char nm[64];
    snprintf(nm, sizeof nm, "%s%s", pfx, what);
    uint32_t n = gather ? lsim_emit_comm(E, LSIM_ES_EP, nm, X->etp_ag, LSIM_COLL_ALLGATHER, X->etp_ag_bytes, X->etp,
                                         X->etp_pg, X->etp_seq++)
                        : lsim_emit_comm(E, LSIM_ES_EP, nm, X->etp_rs, LSIM_COLL_REDUCESCATTER, X->etp_rs_bytes, X->etp,
                                         X->etp_pg, X->etp_seq++);
    if (n != NONE) lsim_emit_pend(E, n);
}

static void kern(lsim_emit *E, const char *pfx, const char *what, lsim_ns d)
{
    char nm[64];
    snprintf(nm, sizeof nm, "%s%s", pfx, what);
    lsim_emit_compute(E, nm, d);
}

/* A dispatch or combine all-to-all on the EP stream after the compute
 * stream's latest kernel; NONE without EP. */
static uint32_t a2a(synth_moe *X, lsim_emit *E, const char *pfx, const char *what)
{
    if (X->ep <= 1) return NONE;
    char nm[64];
    snprintf(nm, sizeof nm, "%s%s", pfx, what);
    return lsim_emit_comm(E, LSIM_ES_EP, nm, X->a2a, LSIM_COLL_ALLTOALL, X->a2a_bytes, X->ep, X->ep_pg, X->ep_seq++);
}

/* Dropless routing sizes its buffers on the host: Megatron's all-to-all
 * dispatcher exchanges each rank's tokens-per-expert counts (an all-to-all
 * of E int64 counts in the EP group), copies the split sizes to the host
 * and synchronizes the stream (MoEAlltoAllTokenDispatcher.preprocess, its
 * cuda_sync_point) before it permutes, once per MoE layer forward. The CPU
 * loses its lead over the GPU there: every kernel after it is launched
 * late by the launch latency. */
static void host_sync(synth_moe *X, const lsim_synth_cfg *c, lsim_emit *E, const char *pfx)
{
    char nm[64];
    if (c->pad_to_capacity) return; /* padded to capacity: sizes known, nothing to exchange or wait for */
    if (X->ep > 1) {
        snprintf(nm, sizeof nm, "%smoe_counts", pfx);
        uint32_t n = lsim_emit_comm(E, LSIM_ES_EP, nm, X->count_a2a, LSIM_COLL_ALLTOALL, X->count_bytes, X->ep, X->ep_pg,
                                    X->ep_seq++);
        if (n != NONE) lsim_emit_pend(E, n);
    }
    snprintf(nm, sizeof nm, "%smoe_splits_d2h", pfx);
    uint32_t d2h = lsim_emit_compute(E, nm, X->d2h);
    snprintf(nm, sizeof nm, "%smoe_splits_wait", pfx);
    uint32_t w = lsim_emit_cpu(E, nm, LSIM_NF_BLOCKING);
    if (d2h != NONE && w != NONE) lsim_gb_edge(E->b, d2h, w, LSIM_E_SYNC | LSIM_EDGE_END, 0);
}

/* FP8 casts of a grouped GEMM's tensor j (0 input, 1 weight, 2 gradient) */
static void f8(const lsim_synth_cfg *c, lsim_emit *E, const char *pfx, const char *lin, int j, lsim_ns cast, lsim_ns amax)
{
    static const char *const TEN[3] = {"in", "w", "grad"};
    if (c->precision != LSIM_PREC_FP8) return;
    char w[48];
    if (c->fp8_scaling == LSIM_FP8_CURRENT) {
        snprintf(w, sizeof w, "%s_%s_fp8_amax", lin, TEN[j]);
        kern(E, pfx, w, amax);
    }
    snprintf(w, sizeof w, "%s_%s_fp8_cast", lin, TEN[j]);
    kern(E, pfx, w, cast);
}

/* Skewed routing: this layer and micro-batch's draw, and the kernels'
 * costs for the tokens it gives this GPU's experts (the forward and the
 * backward of one layer and micro-batch draw the same). */
static void redraw(synth_moe *X, const lsim_synth_cfg *c, int layer, int mb)
{
    if (!synth_routing_drawn(c)) return;
    local_rows(X, c, layer, mb);
    moe_costs(X, c, X->tokl);
}

void synth_moe_fwd(synth_moe *X, const lsim_synth_cfg *c, lsim_emit *E, const char *pfx, int layer, int mb)
{
    redraw(X, c, layer, mb);
    int swiglu = c->model.mlp == LSIM_MLP_SWIGLU;
    kern(E, pfx, "router_gemm", X->router);
    kern(E, pfx, "router_topk", X->topk);
    host_sync(X, c, E, pfx);
    kern(E, pfx, "moe_permute", X->permute);
    uint32_t d = a2a(X, E, pfx, "moe_dispatch");
    if (c->model.shared_experts > 0) { /* overlaps the dispatch */
        kern(E, pfx, "shared_fc1_gemm", X->sfc1);
        kern(E, pfx, swiglu ? "shared_swiglu" : "shared_gelu", X->sact);
        kern(E, pfx, "shared_fc2_gemm", X->sfc2);
    }
    if (d != NONE) lsim_emit_pend(E, d);
    etp_coll(X, E, pfx, "moe_etp_allgather", 1);
    f8(c, E, pfx, "expert_fc1", 0, X->f8_fc1[0], X->f8_amax1[0]);
    f8(c, E, pfx, "expert_fc1", 1, X->f8_fc1[1], X->f8_amax1[1]);
    kern(E, pfx, "expert_fc1_gemm", X->efc1);
    kern(E, pfx, swiglu ? "expert_swiglu" : "expert_gelu", X->eact);
    f8(c, E, pfx, "expert_fc2", 0, X->f8_fc2[0], X->f8_amax2[0]);
    f8(c, E, pfx, "expert_fc2", 1, X->f8_fc2[1], X->f8_amax2[1]);
    kern(E, pfx, "expert_fc2_gemm", X->efc2);
    etp_coll(X, E, pfx, "moe_etp_reducescatter", 0);
    uint32_t b = a2a(X, E, pfx, "moe_combine");
    if (b != NONE) lsim_emit_pend(E, b);
    kern(E, pfx, "moe_unpermute", X->unpermute);
}

void synth_moe_bwd(synth_moe *X, const lsim_synth_cfg *c, lsim_emit *E, int layer, int mb)
{
    redraw(X, c, layer, mb);
    int swiglu = c->model.mlp == LSIM_MLP_SWIGLU;
    kern(E, "", "moe_unpermute", X->b_unpermute);
    /* the output gradients back to the experts' ranks (the combine's
     * backward), and the input gradients home (the dispatch's) */
    uint32_t b = a2a(X, E, "", "moe_combine");
    if (b != NONE) lsim_emit_pend(E, b);
    etp_coll(X, E, "", "moe_etp_allgather", 1); /* the reduce-scatter's backward */
    f8(c, E, "", "expert_fc2", 2, X->f8_fc2[2], X->f8_amax2[2]);
    kern(E, "", "expert_fc2_dgrad", X->b_efc2d);
    kern(E, "", "expert_fc2_wgrad", X->b_efc2w);
    kern(E, "", swiglu ? "expert_swiglu" : "expert_gelu", X->b_eact);
    f8(c, E, "", "expert_fc1", 2, X->f8_fc1[2], X->f8_amax1[2]);
    kern(E, "", "expert_fc1_dgrad", X->b_efc1d);
    kern(E, "", "expert_fc1_wgrad", X->b_efc1w);
    etp_coll(X, E, "", "moe_etp_reducescatter", 0); /* the all-gather's backward */
    uint32_t d = a2a(X, E, "", "moe_dispatch");
    if (c->model.shared_experts > 0) { /* overlaps the dispatch's backward */
        kern(E, "", "shared_fc2_dgrad", X->b_sfc2d);
        kern(E, "", "shared_fc2_wgrad", X->b_sfc2w);
        kern(E, "", swiglu ? "shared_swiglu" : "shared_gelu", X->b_sact);
        kern(E, "", "shared_fc1_dgrad", X->b_sfc1d);
        kern(E, "", "shared_fc1_wgrad", X->b_sfc1w);
    }
    if (d != NONE) lsim_emit_pend(E, d);
    kern(E, "", "moe_permute", X->b_permute);
    kern(E, "", "router_topk", X->b_topk);
    kern(E, "", "router_dgrad", X->b_routerd);
    kern(E, "", "router_wgrad", X->b_routerw);
}

void synth_moe_grads(synth_moe *X, const lsim_synth_cfg *c, lsim_emit *E, int layer)
{
    if (X->edp <= 1 || c->forward_only) return;
    int kind = c->dist_opt ? LSIM_COLL_REDUCESCATTER : LSIM_COLL_ALLREDUCE;
    char what[48];
    snprintf(what, sizeof what, "%s.L%d", c->dist_opt ? "edp_reducescatter" : "edp_allreduce", layer);
    lsim_emit_comm(E, LSIM_ES_DP, what, X->edp_red, (lsim_coll_kind)kind, X->edp_bytes, X->edpsim, X->edp_pg,
                   X->edp_seq++);
}

void synth_moe_opt(synth_moe *X, const lsim_synth_cfg *c, lsim_emit *E, int layer)
{
    double share = c->dist_opt ? 1.0 / X->edp : 1.0;
    lsim_emit_compute(E, "adam_experts", lsim_cost_elementwise(&c->gpu, X->expert_params * share * 30.0));
    if (!c->dist_opt || X->edp <= 1) return;
    char what[48];
    snprintf(what, sizeof what, "edp_allgather.L%d", layer);
    lsim_emit_comm(E, LSIM_ES_DP, what, X->edp_ag, LSIM_COLL_ALLGATHER, X->edp_ag_bytes, X->edpsim, X->edp_pg,
                   X->edp_seq++);
}
