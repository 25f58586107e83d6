/* One GPU's execution graph of a synthesized Megatron-style iteration
 * (synth.h; what and why: docs/synthesis.md).
 *
 * The program of a GPU is its pipeline schedule (lsim_synth_schedule) cut
 * into blocks (one step each for 1F1B; Megatron's forward+backward pairs in
 * the steady phase of the interleaved schedule). Between two blocks one
 * group of point-to-point operations is posted together, as Megatron's
 * batched p2p does: the sends of the block just computed and the receives
 * the next block needs. The group's kernels wait for the compute stream
 * (event), the next compute kernel waits for all of them (events) and, with
 * p2p_sync, the CPU blocks until they have completed. */
#include "lumosim/synth.h"
#include "lumosim/alloc.h"

#include "cp.h"
#include "fsdp.h"
#include "moe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX


/* kernel durations of one layer / embedding / head (the same for every
 * layer and micro-batch of the job) */
typedef struct costs {
    lsim_ns ln, qkv, attn, proj, add, fc1, gelu, fc2;
    lsim_ns rope, b_rope; /* rotary embeddings on Q and K (models with rope) */
    /* FP8: the linear GEMMs' durations at FP8, and for each linear (F8_QKV..F8_FC2)
     * the cast of its input, weight and output gradient, and (current
     * scaling) their amax; the amax history update (delayed scaling) */
    lsim_ns f8_cast[4][3], f8_amax[4][3], f8_hist;
    lsim_ns qkv_bias, qkv_copy, qk, softmax, pdrop, pv; /* unfused attention, forward */
    lsim_ns b_add, b_fc2d, b_fc2w, b_gelu, b_fc1d, b_fc1w, b_ln, b_projd, b_projw, b_attn, b_qkvd, b_qkvw;
    lsim_ns b_dv, b_dp, b_pdrop, b_softmax, b_dq, b_dk; /* unfused attention, backward */
    lsim_ns b_res;      /* a residual's two gradients summed (autograd's accumulation) */
    lsim_ns bg_qkv, bg_proj, bg_fc1, bg_fc2, b_copy; /* unfused path: bias gradients, the copy's backward */
    lsim_ns x_float, x_read, x_rw, x_small, mask; /* unfused path: the cross entropy's ops, the causal mask */
    lsim_ns emb, b_emb, lnf, logits, xent, b_xent, b_logitsd, b_logitsw;
    lsim_ns tp_ar;      /* activation all-reduce in the TP group */
    lsim_ns tp_rs, tp_ag; /* sequence parallel: reduce-scatter of the activations, all-gather of a shard */
    lsim_ns tp_ar_small;/* the loss's all-reduce (3 floats per token) */
    lsim_ns pp_ag;      /* scatter/gather: the all-gather of a received shard */
    int64_t act_bytes;  /* one micro-batch's activations at a stage boundary */
    int64_t p2p_bytes;  /* what one pipeline send carries (act_bytes / TP with SP or scatter/gather) */
    double layer_params, emb_params; /* per GPU */
    double w_qkv, w_proj, w_fc1, w_fc2; /* one layer's weight matrices per GPU (parameters) */
    double head_params;           /* per GPU: the output layer's own weights (untied, or tied on another stage) */
    lsim_ns rc_k, rc_w3;          /* --recompute op: the K projection's and W3's (up) GEMMs alone */
} costs;

enum { F8_QKV = 0, F8_PROJ, F8_FC1, F8_FC2 };   /* the FP8 linears of a layer */
enum { F8_IN = 0, F8_W, F8_GRAD };              /* their scaled tensors */

typedef struct pairseq {
    int32_t src, dst;
    int bwd;
    int64_t n;
} pairseq;

typedef struct bucket {
    double params;
    int lo, hi, n, mb;
} bucket;

typedef struct gen {
    const lsim_synth_cfg *c;
    lsim_emit e;                  /* builder, CPU thread, streams, tag, rc */
    int tpi, ppi, dpi, m, V;
    int tps;                      /* TP ranks simulated per stage: TP, or 1 with tp_one */
    int32_t rank;
    int64_t tp_seq, dp_seq;
    pairseq pairs[16];
    int npairs;
    char tp_pg[48], dp_pg[48];
    int32_t *tp_ranks;            /* the TP group's ranks in the full job (costs only) */
    int32_t *dpc_ranks;           /* the DP group the collectives are timed over (dp_cost) */
    int dpc;                      /* its size */
    costs k;
    double bucket;                /* parameters waiting for the next DP reduction */
    int bucket_lo, bucket_hi;     /* layers in it (-1: none) */
    int bucket_n;
    bucket *done;                 /* every bucket of the step, in order */
    size_t ndone, capdone;
    const char *pfx;              /* "rc_" while a layer's forward is recomputed, else "" */
    synth_fsdp fsdp;              /* --fsdp (fsdp.c); fsdp.n = 0: off */
    synth_cp cp;                  /* --cp (cp.c); cp.n = 0: off */
    synth_moe moe;                /* mixture-of-experts layers, --ep (moe.c); moe.on = 0: a dense model */
    int dpx;                      /* GPUs of the data-parallel dimension: DP x CP (dpi is the index
                                     cp + CP dp in it, so the gradients' group spans DP x CP) */
} gen;

/* A GPU's rank in the job synthesized: TP ranks fastest, TPS of them per
 * stage (1 with tp_one). */
static int32_t gpu_rank(const gen *G, int tpi, int dpi, int ppi)
{
    return (int32_t)(tpi + G->tps * (dpi + G->dpx * ppi));
}

/* The rank of (tp, dp, pp) in the full job the user runs: TP x DPC x PP
 * GPUs, rank = tp + TP (dp + DPC pp). */
static int32_t full_rank(const gen *G, int tpi, int dpi, int ppi)
{
    return (int32_t)(tpi + G->c->tp * (dpi + G->dpc * ppi));
}

/* The rank whose place in the network a collective or transfer is timed
 * for: the GPU's rank in the full job of dp_cost replicas and all TP
 * ranks. Why: with fewer replicas or TP ranks simulated (dp_cost > dp,
 * tp_one) the GPUs are numbered densely, so a replica's two pipeline
 * stages can land on one node that, in the job the user runs, are DP x TP
 * GPUs apart and on different nodes; timing by the dense numbers made
 * pipeline sends NVLink-fast (TP 1 PP 2 DP 8: the replica's step 0.3 %
 * short of the full job's). */
static int32_t cost_rank(const gen *G, int32_t r)
{
    const lsim_synth_cfg *c = G->c;
    if (G->dpc <= G->dpx && G->tps == c->tp) return r;
    int t = (int)(r % G->tps), d = (int)((r / G->tps) % G->dpx), p = (int)(r / ((int32_t)G->tps * G->dpx));
    return full_rank(G, t, d, p);
}

/* A compute kernel, named with the recomputation prefix. */
/* what with the recomputation prefix (nm holds 64 bytes); what itself
 * when there is none, the common case, without formatting */
static const char *pfxd(const gen *G, const char *what, char *nm)
{
    if (!G->pfx[0]) return what;
    size_t a = strlen(G->pfx), b = strnlen(what, 63 - a);
    memcpy(nm, G->pfx, a);
    memcpy(nm + a, what, b);
    nm[a + b] = 0;
    return nm;
}

static void comp(gen *G, const char *what, lsim_ns dur)
{
    char nm[64];
    lsim_emit_compute(&G->e, pfxd(G, what, nm), dur);
}

/* --precision fp8: the casts to FP8 before a linear GEMM (docs/models.md,
 * "Precision"): of the tensors `which` (F8_IN and F8_W before the forward
 * GEMM, F8_GRAD before the input-gradient GEMM; the weight-gradient GEMM
 * reuses the transposes the casts wrote), each preceded with current
 * scaling by the reduction of its amax. */
static void fp8_cast(gen *G, int lin, int which)
{
    static const char *const LIN[4] = {"qkv", "proj", "fc1", "fc2"};
    static const char *const TEN[3] = {"in", "w", "grad"};
    if (G->c->precision != LSIM_PREC_FP8) return;
    /* FP8 all-gather under FSDP: the weight arrives cast, its scale
     * precomputed after the last optimizer step (fsdp.c) */
    if (which == F8_W && G->c->fp8_all_gather) return;
    char w[48];
    if (G->c->fp8_scaling == LSIM_FP8_CURRENT) {
        snprintf(w, sizeof w, "%s_%s_fp8_amax", LIN[lin], TEN[which]);
        comp(G, w, G->k.f8_amax[lin][which]);
    }
    snprintf(w, sizeof w, "%s_%s_fp8_cast", LIN[lin], TEN[which]);
    comp(G, w, G->k.f8_cast[lin][which]);
}

/* Delayed scaling: once per step, each scaled tensor's amax history
 * rolled and its scale recomputed from it (after the layer's last
 * backward; Transformer Engine's amax_and_scale_update). */
static void fp8_history(gen *G)
{
    if (G->c->precision != LSIM_PREC_FP8 || G->c->fp8_scaling != LSIM_FP8_DELAYED) return;
    for (int i = 0; i < 12; i++) comp(G, "fp8_amax_history", G->k.f8_hist);
}

/* A TP collective; with pend the next compute kernel waits for it (TP is
 * synchronous), else the caller pends it later (an overlapped one). */
static uint32_t tp_coll(gen *G, const char *what, lsim_coll_kind kind, int64_t bytes, lsim_ns dur, int pend)
{
    if (G->c->tp <= 1) return NONE;
    char nm[64];
    /* with tp_one a group of one (the rank alone), timed as the TP-wide
     * one: nothing to match (a fifth of a candidate's time was the
     * matcher's, sorting TP collectives of one participant) */
    uint32_t v = G->tps == 1 ? lsim_emit_comm_alone(&G->e, LSIM_ES_TP, pfxd(G, what, nm), dur)
                             : lsim_emit_comm(&G->e, LSIM_ES_TP, pfxd(G, what, nm), dur, kind, bytes, G->tps,
                                              G->tp_pg, G->tp_seq++);
    if (v != NONE && pend) lsim_emit_pend(&G->e, v);
    return v;
}

/* A synchronous TP all-reduce: the next compute kernel waits for it. */
static void tp_allreduce(gen *G, const char *what, int64_t bytes, lsim_ns dur)
{
    tp_coll(G, what, LSIM_COLL_ALLREDUCE, bytes, dur, 1);
}

/* After a row-parallel GEMM (forward): the partial sums all-reduced, or
 * with sequence parallelism reduce-scattered over the sequence. */
static void tp_reduce(gen *G, const char *ar, const char *rs)
{
    if (G->c->seq_parallel) tp_coll(G, rs, LSIM_COLL_REDUCESCATTER, G->k.act_bytes, G->k.tp_rs, 1);
    else tp_allreduce(G, ar, G->k.act_bytes, G->k.tp_ar);
}

/* Sequence parallelism: the sequence shards all-gathered before a
 * column-parallel GEMM (synchronous unless pend is 0). */
static uint32_t tp_gather(gen *G, const char *what, int pend)
{
    if (!G->c->seq_parallel) return NONE;
    return tp_coll(G, what, LSIM_COLL_ALLGATHER, G->k.act_bytes / G->c->tp, G->k.tp_ag, pend);
}

/* The name prefix of what follows: "L12.mb3.fwd.", or with terse_names
 * only the pass (".fwd."), which keeps the node's phase (graph.h) */
static void set_tag(gen *G, const char *where, int mb, int bwd)
{
    if (G->c->terse_names) memcpy(G->e.tag, bwd ? ".bwd." : ".fwd.", 6);
    else snprintf(G->e.tag, sizeof G->e.tag, "%s.mb%d.%s.", where, mb, bwd ? "bwd" : "fwd");
}

static void set_layer_tag(gen *G, int layer, int mb, int bwd)
{
    char w[24] = "";
    if (!G->c->terse_names) snprintf(w, sizeof w, "L%d", layer);
    set_tag(G, w, mb, bwd);
}

/* ------------------------------------------------------------ DP buckets */

static int64_t bucket_bytes(const gen *G, double params) { return (int64_t)(params * (double)G->c->grad_bytes); }

/* The reduction of one gradient bucket: an all-reduce, or with the
 * distributed optimizer a reduce-scatter (each rank keeps its shard). */
static void dp_emit(gen *G, const bucket *bk)
{
    int64_t bytes = bucket_bytes(G, bk->params);
    int kind = G->c->dist_opt ? LSIM_COLL_REDUCESCATTER : LSIM_COLL_ALLREDUCE;
    lsim_ns d = lsim_cost_collective(&G->c->topo, kind, bytes, G->dpc_ranks, G->dpc, LSIM_ALGO_AUTO);
    char what[64];
    snprintf(what, sizeof what, "%s.b%d.L%d-%d", G->c->dist_opt ? "dp_reducescatter" : "dp_allreduce", bk->n, bk->lo,
             bk->hi);
    snprintf(G->e.tag, sizeof G->e.tag, "grad.mb%d.bwd.", bk->mb);
    lsim_emit_comm(&G->e, LSIM_ES_DP, what, d, (lsim_coll_kind)kind, bytes, G->dpx, G->dp_pg, G->dp_seq++);
}

static void dp_flush(gen *G, int mb)
{
    if (G->bucket_lo < 0 || G->fsdp.n) return; /* FSDP reduces per unit (fsdp.c) */
    bucket bk = {G->bucket, G->bucket_lo, G->bucket_hi, G->bucket_n, mb};
    if (G->ndone == G->capdone) {
        size_t cap = G->capdone ? 2 * G->capdone : 64;
        bucket *q = lsim_realloc(G->done, cap * sizeof *q);
        if (!q) G->e.rc = LSIM_ENOMEM;
        else G->done = q, G->capdone = cap;
    }
    if (G->ndone < G->capdone) G->done[G->ndone++] = bk;
    /* overlapped: reduced as soon as the bucket is full; after: once the
     * pipeline has flushed (emitted by the caller) */
    if (G->dpc > 1 && G->c->grad_reduce == LSIM_GR_OVERLAP) dp_emit(G, &bk);
    G->bucket_n++;
    G->bucket = 0;
    G->bucket_lo = G->bucket_hi = -1;
}

/* params of `layer` (or -1 embedding, -2 head) are ready: bucket them */
static void dp_add(gen *G, int layer, double params, int mb)
{
    if (G->fsdp.n) return; /* FSDP reduces per unit (fsdp.c) */
    int l = layer < 0 ? (layer == -1 ? 0 : G->c->model.layers - 1) : layer;
    if (G->bucket_lo < 0 || l < G->bucket_lo) G->bucket_lo = l;
    if (G->bucket_hi < 0 || l > G->bucket_hi) G->bucket_hi = l;
    G->bucket += params;
    if (G->bucket >= G->c->dp_bucket_params) dp_flush(G, mb);
}

/* ------------------------------------------------------------ compute */

/* The attention core, forward: one flash-attention kernel, or Megatron's
 * unfused path (the QKV bias added and one of Q/K/V made contiguous by
 * their own kernels, Q K^T as a batched GEMM, the fused scale-mask-softmax,
 * the attention-probability dropout, P V). */
static void attn_fwd(gen *G)
{
    const costs *k = &G->k;
    if (G->cp.n) { /* ring attention (cp.c): k->attn is one block's, seq / CP tokens */
        synth_cp_attn_fwd(&G->cp, &G->e, G->pfx, k->attn);
        return;
    }
    if (G->c->attention != LSIM_ATTN_UNFUSED) {
        comp(G, "attn", k->attn);
        return;
    }
    if (!G->c->model.no_bias) comp(G, "qkv_bias", k->qkv_bias);
    comp(G, "qkv_copy", k->qkv_copy);
    comp(G, "qk_gemm", k->qk);
    comp(G, "softmax", k->softmax);
    if (G->c->dropout) comp(G, "probs_dropout", k->pdrop);
    comp(G, "pv_gemm", k->pv);
}

/* The parameters of `layer` per GPU that the data-parallel gradient
 * buckets and the optimizer hold: a MoE layer's routed experts are the
 * expert-data-parallel group's (moe.c). */
static double layer_params_of(const gen *G, int layer)
{
    return lsim_model_moe_layer(&G->c->model, layer) ? G->moe.dense_params : G->k.layer_params;
}

static void layer_fwd(gen *G, int layer, int mb, int bwd_tag)
{
    const costs *k = &G->k;
    set_layer_tag(G, layer, mb, bwd_tag);
    comp(G, "ln1", k->ln);
    tp_gather(G, "attn_ag", 1);
    fp8_cast(G, F8_QKV, F8_IN);
    fp8_cast(G, F8_QKV, F8_W);
    comp(G, "qkv_gemm", k->qkv);
    if (G->c->model.rope) comp(G, "rope", k->rope);
    attn_fwd(G);
    fp8_cast(G, F8_PROJ, F8_IN);
    fp8_cast(G, F8_PROJ, F8_W);
    comp(G, "proj_gemm", k->proj);
    tp_reduce(G, "attn_allreduce", "attn_rs");
    comp(G, "dropout_add", k->add);
    comp(G, "ln2", k->ln);
    if (lsim_model_moe_layer(&G->c->model, layer)) {
        synth_moe_fwd(&G->moe, G->c, &G->e, G->pfx, layer, mb);
        comp(G, "dropout_add2", k->add);
        return;
    }
    tp_gather(G, "mlp_ag", 1);
    fp8_cast(G, F8_FC1, F8_IN);
    fp8_cast(G, F8_FC1, F8_W);
    comp(G, "fc1_gemm", k->fc1);
    comp(G, G->c->model.mlp == LSIM_MLP_SWIGLU ? "swiglu" : "gelu", k->gelu);
    fp8_cast(G, F8_FC2, F8_IN);
    fp8_cast(G, F8_FC2, F8_W);
    comp(G, "fc2_gemm", k->fc2);
    tp_reduce(G, "mlp_allreduce", "mlp_rs");
    comp(G, "dropout_add2", k->add);
}

/* The weight gradients of one micro-batch summed into those of the ones
 * before (--grad-acc; docs/synthesis.md): an element-wise add per
 * parameter tensor, as Megatron's DDP hook (main_grad.add_(grad)) or
 * PyTorch's AccumulateGrad runs it, reading both gradients and writing the
 * sum. Why it is modelled: it moves the GPU's whole parameter share once
 * per micro-batch, so it grows with the micro-batches per pipeline (up to
 * 5 % of a step in the pipeline rows of Megatron's SC'21 Table 1), where
 * fused into the weight-gradient GEMM (Megatron's
 * gradient_accumulation_fusion, later) it costs nothing extra. */
static void grad_acc(gen *G, const char *what, double params, int mb)
{
    const lsim_synth_cfg *c = G->c;
    if (c->grad_acc == LSIM_GA_FUSED || c->forward_only) return;
    /* AccumulateGrad keeps the first gradient of a .grad that is None */
    if (c->grad_acc == LSIM_GA_AUTOGRAD && mb == 0) return;
    double per = c->grad_acc == LSIM_GA_BUFFER ? 2.0 * c->grad_bytes + c->elem_bytes : 3.0 * c->elem_bytes;
    comp(G, what, lsim_cost_elementwise(&c->gpu, params * per));
}

/* The small parameter tensors of a layer (biases, layer-norm weights and
 * biases): one add each, after the layer's backward. */
static void grad_acc_small(gen *G, int mb)
{
    const lsim_model_shape *M = &G->c->model;
    double t = G->c->tp, h = M->hidden, Al = (double)M->heads * M->head_dim / t, f = M->ffn / t;
    double KVl = (double)lsim_model_kv_heads(M) * M->head_dim / t, f1 = M->mlp == LSIM_MLP_SWIGLU ? 2 * f : f;
    /* qkv, proj, fc1, fc2 biases (none without biases); ln1, ln2 weight and
     * bias (RMSNorm: weight only) */
    const double n[8] = {Al + 2 * KVl, h, f1, h, h, h, h, h};
    int lo = M->no_bias ? 4 : 0, rms = M->norm == LSIM_NORM_RMS;
    for (int i = lo; i < 8; i++)
        if (!(rms && (i == 5 || i == 7))) grad_acc(G, "small_grad_acc", n[i], mb);
}

/* The backward of a column-parallel GEMM (QKV, FC1): the input gradient
 * (dgrad) is summed over the TP ranks. Without sequence parallelism or
 * overlap: dgrad, wgrad, then a synchronous all-reduce. With
 * --tp-overlap the all-reduce runs during wgrad; with sequence
 * parallelism the input is all-gathered again for wgrad during dgrad and
 * the gradient reduce-scattered during wgrad (Megatron's
 * LinearWithGradAccumulationAndAsyncCommunication). */
static void col_bwd(gen *G, const char *dgrad, lsim_ns dd, const char *wgrad, lsim_ns dw, const char *ar,
                    const char *ag, const char *rs, const char *acc, double wparams, int mb)
{
    uint32_t g = tp_gather(G, ag, 0);
    comp(G, dgrad, dd);
    if (g != NONE) lsim_emit_pend(&G->e, g);
    if (G->c->seq_parallel || G->c->tp_overlap) {
        uint32_t r = G->c->seq_parallel ? tp_coll(G, rs, LSIM_COLL_REDUCESCATTER, G->k.act_bytes, G->k.tp_rs, 0)
                                        : tp_coll(G, ar, LSIM_COLL_ALLREDUCE, G->k.act_bytes, G->k.tp_ar, 0);
        comp(G, wgrad, dw);
        grad_acc(G, acc, wparams, mb);
        if (r != NONE) lsim_emit_pend(&G->e, r);
    } else {
        comp(G, wgrad, dw);
        grad_acc(G, acc, wparams, mb);
        tp_allreduce(G, ar, G->k.act_bytes, G->k.tp_ar);
    }
}

static void attn_bwd(gen *G)
{
    const costs *k = &G->k;
    if (G->cp.n) {
        synth_cp_attn_bwd(&G->cp, &G->e, k->b_attn);
        return;
    }
    if (G->c->attention != LSIM_ATTN_UNFUSED) {
        comp(G, "attn", k->b_attn); /* flash attention recomputes its scores itself */
        return;
    }
    if (G->c->recompute == LSIM_RC_SELECTIVE) {
        /* selective recomputation: the attention core's forward again,
         * since its s x s tensors were not kept */
        G->pfx = "rc_";
        comp(G, "qk_gemm", k->qk);
        comp(G, "softmax", k->softmax);
        if (G->c->dropout) comp(G, "probs_dropout", k->pdrop);
        G->pfx = "";
    }
    comp(G, "dv_gemm", k->b_dv);
    comp(G, "dp_gemm", k->b_dp);
    if (G->c->dropout) comp(G, "probs_dropout", k->b_pdrop);
    comp(G, "softmax", k->b_softmax);
    comp(G, "dq_gemm", k->b_dq);
    comp(G, "dk_gemm", k->b_dk);
}

/* Megatron without Transformer Engine (the unfused path) reduces each
 * bias's gradient in its own kernel (grad_output.sum over the tokens);
 * Transformer Engine fuses it into the GEMM's epilogue. */
static void bias_grad(gen *G, const char *what, lsim_ns d)
{
    if (G->c->attention == LSIM_ATTN_UNFUSED && !G->c->model.no_bias) comp(G, what, d);
}

/* The dense MLP's backward, FC2 to FC1's input gradient. */
static void mlp_bwd(gen *G, int mb)
{
    const costs *k = &G->k;
    tp_gather(G, "mlp_grad_ag", 1);
    fp8_cast(G, F8_FC2, F8_GRAD);
    comp(G, "fc2_dgrad", k->b_fc2d);
    comp(G, "fc2_wgrad", k->b_fc2w);
    grad_acc(G, "fc2_grad_acc", k->w_fc2, mb);
    bias_grad(G, "fc2_bias_grad", k->bg_fc2);
    comp(G, G->c->model.mlp == LSIM_MLP_SWIGLU ? "swiglu" : "gelu", k->b_gelu);
    bias_grad(G, "fc1_bias_grad", k->bg_fc1);
    fp8_cast(G, F8_FC1, F8_GRAD);
    col_bwd(G, "fc1_dgrad", k->b_fc1d, "fc1_wgrad", k->b_fc1w, "mlp_allreduce", "mlp_in_ag", "mlp_grad_rs",
            "fc1_grad_acc", k->w_fc1, mb);
}

/* torchtitan's per-op selective checkpointing (selective_ac_option "op",
 * _apply_ac_to_transformer_block): the layer's matmuls are counted in
 * order -- wq, wk, wv, wo, w1, w3, w2 -- and every second one (wk, wo, w3)
 * is recomputed, with every op that is not a matmul or the attention
 * (norms, RoPE, the residual add, SiLU x up), before the layer's backward.
 * The saved reduce-scatter output (torchtitan's TP) needs no collective
 * again. FP8: the recomputed projections cast their inputs again. */
static void layer_rc_op(gen *G, int layer, int mb)
{
    const costs *k = &G->k;
    set_layer_tag(G, layer, mb, 1);
    G->pfx = "rc_";
    comp(G, "ln1", k->ln);
    comp(G, "k_gemm", k->rc_k);
    if (G->c->model.rope) comp(G, "rope", k->rope);
    fp8_cast(G, F8_PROJ, F8_IN);
    comp(G, "proj_gemm", k->proj);
    comp(G, "dropout_add", k->add);
    comp(G, "ln2", k->ln);
    if (!lsim_model_moe_layer(&G->c->model, layer)) { /* a MoE layer's experts are not torchtitan's dense W3 */
        fp8_cast(G, F8_FC1, F8_IN);
        comp(G, "w3_gemm", k->rc_w3);
        comp(G, G->c->model.mlp == LSIM_MLP_SWIGLU ? "swiglu" : "gelu", k->gelu);
    }
    G->pfx = "";
}

static void layer_bwd(gen *G, int layer, int mb, int last_mb)
{
    const costs *k = &G->k;
    if (G->c->recompute == LSIM_RC_FULL) {
        /* full recomputation: the layer's forward (with its TP
         * collectives) from its saved input, right before its backward */
        G->pfx = "rc_";
        layer_fwd(G, layer, mb, 1);
        G->pfx = "";
    }
    if (G->c->recompute == LSIM_RC_OP) layer_rc_op(G, layer, mb);
    set_layer_tag(G, layer, mb, 1);
    comp(G, "dropout_add2", k->b_add);
    int moe = lsim_model_moe_layer(&G->c->model, layer);
    if (moe) synth_moe_bwd(&G->moe, G->c, &G->e, layer, mb);
    else
        mlp_bwd(G, mb);
    comp(G, "ln2", k->b_ln);
    comp(G, "residual_add2", k->b_res);
    comp(G, "dropout_add", k->b_add);
    tp_gather(G, "attn_grad_ag", 1);
    fp8_cast(G, F8_PROJ, F8_GRAD);
    comp(G, "proj_dgrad", k->b_projd);
    comp(G, "proj_wgrad", k->b_projw);
    grad_acc(G, "proj_grad_acc", k->w_proj, mb);
    bias_grad(G, "proj_bias_grad", k->bg_proj);
    if (G->c->attention == LSIM_ATTN_UNFUSED) comp(G, "qkv_copy", k->b_copy);
    attn_bwd(G);
    if (G->c->model.rope) comp(G, "rope", k->b_rope);
    bias_grad(G, "qkv_bias_grad", k->bg_qkv);
    fp8_cast(G, F8_QKV, F8_GRAD);
    col_bwd(G, "qkv_dgrad", k->b_qkvd, "qkv_wgrad", k->b_qkvw, "attn_allreduce", "attn_in_ag", "attn_grad_rs",
            "qkv_grad_acc", k->w_qkv, mb);
    comp(G, "ln1", k->b_ln);
    comp(G, "residual_add", k->b_res);
    grad_acc_small(G, mb);
    if (last_mb) fp8_history(G);
    if (last_mb && moe) synth_moe_grads(&G->moe, G->c, &G->e, layer);
    if (last_mb) dp_add(G, layer, layer_params_of(G, layer), mb);
}

/* Megatron's path without Transformer Engine (--attention unfused) runs
 * the vocabulary-parallel cross entropy as PyTorch ops
 * (_VocabParallelCrossEntropy: the logits made fp32, their max all-reduced,
 * subtracted, the target's logit picked and all-reduced, exp, its sum
 * all-reduced, log, the softmax kept for the backward), and prepares each
 * micro-batch's data on the stages that read it (get_batch: the causal
 * mask, position ids, loss mask): kernels the shared A100 trace shows
 * (docs/synthesis.md). */
#define PREP_KERNELS 24 /* the shared trace: 26 small kernels and copies before the embedding, less the mask's 2 */
static void batch_prep(gen *G)
{
    if (G->c->attention != LSIM_ATTN_UNFUSED) return;
    /* broadcast_data copies the batch's sizes to the host (the trace's
     * device-to-pageable copy): the CPU waits for the compute stream */
    uint32_t d2h = lsim_emit_compute(&G->e, "batch_sizes", G->k.x_small);
    uint32_t w = lsim_emit_cpu(&G->e, "batch_sizes_wait", LSIM_NF_BLOCKING);
    if (d2h != NONE && w != NONE) lsim_gb_edge(G->e.b, d2h, w, LSIM_E_SYNC | LSIM_EDGE_END, 0);
    lsim_emit_compute(&G->e, "batch_mask", G->k.mask);
    for (int i = 0; i < PREP_KERNELS; i++) lsim_emit_compute(&G->e, "batch_prep", G->k.x_small);
}

static void xent_fwd(gen *G)
{
    const costs *k = &G->k;
    int64_t tok = (int64_t)G->c->micro_batch * G->c->model.seq;
    lsim_ns ar = lsim_cost_collective(&G->c->topo, LSIM_COLL_ALLREDUCE, tok * 4, G->tp_ranks, G->c->tp, LSIM_ALGO_AUTO);
    if (G->c->attention != LSIM_ATTN_UNFUSED) {
        lsim_emit_compute(&G->e, "xent", k->xent);
        tp_allreduce(G, "xent_allreduce", tok * 12, k->tp_ar_small);
        return;
    }
    lsim_emit_compute(&G->e, "xent_float", k->x_float);
    lsim_emit_compute(&G->e, "xent_max", k->x_read);
    tp_allreduce(G, "xent_max_allreduce", tok * 4, ar);
    lsim_emit_compute(&G->e, "xent_sub", k->x_rw);
    for (int i = 0; i < 6; i++) lsim_emit_compute(&G->e, "xent_target", k->x_small); /* masks, indices */
    tp_allreduce(G, "xent_target_allreduce", tok * 4, ar);
    lsim_emit_compute(&G->e, "xent_exp", k->x_rw);
    lsim_emit_compute(&G->e, "xent_sum", k->x_read);
    tp_allreduce(G, "xent_sum_allreduce", tok * 4, ar);
    for (int i = 0; i < 2; i++) lsim_emit_compute(&G->e, "xent_loss", k->x_small);
    lsim_emit_compute(&G->e, "xent_div", k->x_rw);
    for (int i = 0; i < 3; i++) lsim_emit_compute(&G->e, "loss_mask", k->x_small);
}

/* The layers of this GPU's model chunk `chunk`: their count, the first in
 * *lo (stages.h: even, or the split --pp-layers chose). */
static int chunk_layers(const gen *G, int chunk, int *lo)
{
    const lsim_synth_cfg *c = G->c;
    return lsim_split_span(&c->split, c->model.layers, c->pp, G->V, chunk * c->pp + G->ppi, lo);
}
static int is_first_vs(const gen *G, int chunk) { return chunk == 0 && G->ppi == 0; }
static int is_last_vs(const gen *G, int chunk) { return chunk == G->V - 1 && G->ppi == G->c->pp - 1; }

static void step_compute(gen *G, const lsim_synth_step *s)
{
    const costs *k = &G->k;
    int lo, hi = chunk_layers(G, s->chunk, &lo) - 1;
    hi += lo;
    int eh = G->c->embed_head;
    int last_mb = s->mb == G->m - 1;
    synth_fsdp *F = &G->fsdp;
    synth_fsdp_chunk fch = {lo, hi, eh && is_first_vs(G, s->chunk), eh && is_last_vs(G, s->chunk)};
    if (!s->bwd) {
        if (eh && is_first_vs(G, s->chunk)) {
            synth_fsdp_pre(F, &G->e, &fch, SYNTH_FSDP_EMB, s->mb, 0);
            set_tag(G, "emb", s->mb, 0);
            batch_prep(G);
            lsim_emit_compute(&G->e, "lookup", k->emb);
            tp_reduce(G, "emb_allreduce", "emb_rs");
        }
        for (int l = lo; l <= hi; l++) {
            synth_fsdp_pre(F, &G->e, &fch, l, s->mb, 0);
            layer_fwd(G, l, s->mb, 0);
        }
        if (eh && is_last_vs(G, s->chunk)) {
            synth_fsdp_pre(F, &G->e, &fch, SYNTH_FSDP_HEAD, s->mb, 0);
            set_tag(G, "head", s->mb, 0);
            if (!is_first_vs(G, s->chunk)) batch_prep(G); /* the labels and the loss mask */
            lsim_emit_compute(&G->e, "lnf", k->lnf);
            tp_gather(G, "head_ag", 1);
            lsim_emit_compute(&G->e, "logits_gemm", k->logits);
            xent_fwd(G);
        }
    } else {
        if (eh && is_last_vs(G, s->chunk)) {
            synth_fsdp_pre(F, &G->e, &fch, SYNTH_FSDP_HEAD, s->mb, 1);
            set_tag(G, "head", s->mb, 1);
            lsim_emit_compute(&G->e, "xent", k->b_xent);
            lsim_emit_compute(&G->e, "logits_dgrad", k->b_logitsd);
            lsim_emit_compute(&G->e, "logits_wgrad", k->b_logitsw);
            /* the output layer's own weights (untied) or copy of the tied
             * embedding (PP > 1); tied on one stage its gradient is summed
             * with the embedding's below */
            if (k->head_params > 0) grad_acc(G, "head_grad_acc", k->head_params, s->mb);
            if (G->c->seq_parallel) tp_coll(G, "head_grad_rs", LSIM_COLL_REDUCESCATTER, k->act_bytes, k->tp_rs, 1);
            lsim_emit_compute(&G->e, "lnf", k->b_ln);
            /* the output layer is the embedding (tied): its own copy only
             * when the embedding lives on another stage */
            if (last_mb && k->head_params > 0) dp_add(G, -2, k->head_params, s->mb);
            synth_fsdp_post(F, &G->e, SYNTH_FSDP_HEAD, s->mb);
        }
        for (int l = hi; l >= lo; l--) {
            synth_fsdp_pre(F, &G->e, &fch, l, s->mb, 1);
            layer_bwd(G, l, s->mb, last_mb);
            synth_fsdp_post(F, &G->e, l, s->mb);
        }
        if (eh && is_first_vs(G, s->chunk)) {
            synth_fsdp_pre(F, &G->e, &fch, SYNTH_FSDP_EMB, s->mb, 1);
            set_tag(G, "emb", s->mb, 1);
            tp_gather(G, "emb_grad_ag", 1);
            lsim_emit_compute(&G->e, "lookup", k->b_emb);
            grad_acc(G, "emb_grad_acc", k->emb_params, s->mb);
            if (last_mb) dp_add(G, -1, k->emb_params, s->mb);
            synth_fsdp_post(F, &G->e, SYNTH_FSDP_EMB, s->mb);
        }
        synth_fsdp_post_chunk(F, &G->e, &fch, s->mb);
        if (last_mb) dp_flush(G, s->mb); /* the chunk's gradients are complete */
    }
}

/* ------------------------------------------------------------ pipeline p2p */

/* Position on the channel (pair, activations or gradients). */
static int64_t pair_seq(gen *G, int32_t src, int32_t dst, int bwd)
{
    for (int i = 0; i < G->npairs; i++)
        if (G->pairs[i].src == src && G->pairs[i].dst == dst && G->pairs[i].bwd == bwd) return G->pairs[i].n++;
    if (G->npairs == 16) return -1; /* cannot happen: 2 peers x 2 directions x 2 flows */
    G->pairs[G->npairs++] = (pairseq){src, dst, bwd, 1};
    return 0;
}

/* The GPU of virtual stage vs (chunk * pp + stage) in this GPU's TP/DP slot. */
static int32_t vs_rank(const gen *G, int vs) { return gpu_rank(G, G->tpi, G->dpi, vs % G->c->pp); }

static uint32_t p2p_op(gen *G, int role, int32_t peer, int send, int layer, int mb, int bwd, const char *what)
{
    char pg[48];
    int32_t src = send ? G->rank : peer, dst = send ? peer : G->rank;
    snprintf(pg, sizeof pg, "p2p:%d->%d#%s", src, dst, bwd ? "bwd" : "fwd");
    set_layer_tag(G, layer, mb, bwd);
    lsim_ns d = lsim_cost_p2p(&G->c->topo, G->k.p2p_bytes, cost_rank(G, src), cost_rank(G, dst));
    uint32_t v = lsim_emit_comm(&G->e, role, what, d, send ? LSIM_COLL_SEND : LSIM_COLL_RECV, G->k.p2p_bytes, 2, pg,
                                pair_seq(G, src, dst, bwd));
    if (v != NONE) lsim_emit_pend(&G->e, v);
    return v;
}

/* Sends of step s (done). */
static int step_sends(gen *G, const lsim_synth_step *s, uint32_t *ops, int n)
{
    int vs = s->chunk * G->c->pp + G->ppi, nvs = G->c->pp * G->V, lo, nl = chunk_layers(G, s->chunk, &lo);
    if (!s->bwd && vs + 1 < nvs) ops[n++] = p2p_op(G, LSIM_ES_SENDF, vs_rank(G, vs + 1), 1, lo + nl - 1, s->mb, 0, "send_next");
    if (s->bwd && vs > 0) ops[n++] = p2p_op(G, LSIM_ES_SENDB, vs_rank(G, vs - 1), 1, lo, s->mb, 1, "send_prev");
    return n;
}

/* Receives step s needs; their kernels also go to rcv[*nr] (may be NULL). */
static int step_recvs(gen *G, const lsim_synth_step *s, uint32_t *ops, int n, uint32_t *rcv, int *nr)
{
    int vs = s->chunk * G->c->pp + G->ppi, nvs = G->c->pp * G->V, lo, nl = chunk_layers(G, s->chunk, &lo), n0 = n;
    if (!s->bwd && vs > 0) ops[n++] = p2p_op(G, LSIM_ES_RECVF, vs_rank(G, vs - 1), 0, lo, s->mb, 0, "recv_prev");
    if (s->bwd && vs + 1 < nvs) ops[n++] = p2p_op(G, LSIM_ES_RECVB, vs_rank(G, vs + 1), 0, lo + nl - 1, s->mb, 1, "recv_next");
    for (int i = n0; rcv && i < n; i++) rcv[(*nr)++] = ops[i];
    return n;
}

/* After a group: the CPU blocks until its kernels are done (batch_p2p_sync).
 * With scatter/gather each received shard is then all-gathered over the TP
 * ranks (NVLink) before the next compute kernel uses it. */
static void p2p_group_sync(gen *G, const uint32_t *ops, int n, const uint32_t *rcv, int nr)
{
    if (G->c->p2p_sync && n > 0) {
        uint32_t v = lsim_emit_cpu(&G->e, "sync", LSIM_NF_BLOCKING);
        for (int i = 0; v != NONE && i < n; i++)
            if (ops[i] != NONE) lsim_gb_edge(G->e.b, ops[i], v, LSIM_E_SYNC | LSIM_EDGE_END, 0);
    }
    if (!G->c->scatter_gather || G->c->seq_parallel || G->c->tp <= 1) return;
    for (int i = 0; i < nr; i++) {
        if (rcv[i] == NONE) continue;
        uint32_t a = tp_coll(G, "pp_ag", LSIM_COLL_ALLGATHER, G->k.p2p_bytes, G->k.pp_ag, 1);
        if (a != NONE) lsim_gb_edge(G->e.b, rcv[i], a, LSIM_E_EVENT, 0);
    }
}

/* ------------------------------------------------------------ costs */

/* --kernels eager: torchtitan's Llama as PyTorch eager runs it (no
 * torch.compile; docs/synthesis.md "Eager kernels"): each op its own
 * kernel over HBM, the bytes of a layer's ops summed into one node per
 * fused kernel it replaces. Bytes per element, from torchtitan's model
 * code (models/norms.py RMSNorm, models/llama/model.py
 * apply_rotary_emb and FeedForward, train.py's cross_entropy_loss):
 * - RMSNorm forward: x.float() (2 read + 4 written), pow (4 + 4), mean
 *   (4), x * rsqrt (4 + 4), type_as (4 + 2), * weight (2 + 2): 36 (fused:
 *   2 + 2); backward, autograd of the same ops (the weight's product and
 *   its reduction 4 + 4, the cast 6, the two products 8 + 8, pow's 8, the
 *   two gradients of x summed 12, the cast back 6): 56 (fused: 6);
 * - RoPE, per element of Q and K: float() (2 + 4), the complex product
 *   (4 + 4), type_as (4 + 2): 20 each way (fused: 4);
 * - SiLU(gate) x up: silu (2 + 2), the product (4 + 2): 10 per FFN element
 *   (fused: 6); backward: the product's two gradients (4 + 2 each) and
 *   silu's (4 + 2): 18 (fused: 10);
 * - the loss on fp32 logits: float() (2 + 4), log_softmax (two reads of 4,
 *   a write of 4), 18 per logit (fused: 8); backward: nll's gradient
 *   written (4), log_softmax's (4 + 4 read, 4 written), the cast back
 *   (4 + 2): 22 (fused: 4). */
static void eager_costs(gen *G, double T, double Ts, double f, double qk)
{
    const lsim_gpu_spec *g = &G->c->gpu;
    costs *k = &G->k;
    double h = G->c->model.hidden;
    k->ln = k->lnf = lsim_cost_elementwise(g, 36 * Ts * h);
    k->b_ln = lsim_cost_elementwise(g, 56 * Ts * h);
    k->rope = k->b_rope = lsim_cost_elementwise(g, 20 * T * qk);
    if (G->c->model.mlp == LSIM_MLP_SWIGLU) {
        k->gelu = lsim_cost_elementwise(g, 10 * T * f);
        k->b_gelu = lsim_cost_elementwise(g, 18 * T * f);
    }
}

/* The loss as PyTorch eager runs it (--loss eager; torchtitan's, whose
 * blocks torch.compile compiles but not its loss): the bytes per fp32
 * logit of eager_costs' comment, 18 forward, 22 backward. */
static void eager_loss_costs(gen *G, double T, double V)
{
    G->k.xent = lsim_cost_elementwise(&G->c->gpu, 18 * T * V);
    G->k.b_xent = lsim_cost_elementwise(&G->c->gpu, 22 * T * V);
}

static void fill_costs(gen *G)
{
    const lsim_synth_cfg *c = G->c;
    const lsim_gpu_spec *g = &c->gpu;
    const lsim_model_shape *M = &c->model;
    costs *k = &G->k;
    double t = c->tp, T = (double)c->micro_batch * M->seq, h = M->hidden, f = M->ffn / t, A = (double)M->heads * M->head_dim,
           Al = A / t, V = M->vocab / t, eb = c->elem_bytes;
    /* grouped-query attention: K and V are KVl wide per GPU, the QKV GEMM's
     * output Q3 = Al + 2 KVl (3 Al with MHA); SwiGLU's gate and up are one
     * GEMM of 2f outputs (f1), its down GEMM the same as GeLU's FC2 */
    int swiglu = M->mlp == LSIM_MLP_SWIGLU;
    double KVl = (double)lsim_model_kv_heads(M) * M->head_dim / t, Q3 = Al + 2 * KVl, f1 = swiglu ? 2 * f : f;
    /* the layers' linear GEMMs: 1-byte inputs at the FP8 peak with --precision fp8 */
    int lb = c->precision == LSIM_PREC_FP8 ? 1 : c->elem_bytes;
    {
        /* FP8 casts (docs/models.md, "Precision"): each reads the bf16
         * tensor and writes it in FP8 and transposed (Transformer Engine's
         * cast-transpose; the backward's GEMMs need the other layout), eb +
         * 2 bytes an element; current scaling's amax reads it once more, eb
         * bytes; the delayed history update rolls a 1024-entry fp32 history
         * (TE's default amax_history_len): a floor-length kernel */
        const double el[4][3] = {{T * h, h * Q3, T * Q3}, {T * Al, Al * h, T * h}, {T * h, h * f1, T * f1}, {T * f, f * h, T * h}};
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 3; j++) {
                k->f8_cast[i][j] = lsim_cost_elementwise(g, el[i][j] * (eb + 2));
                k->f8_amax[i][j] = lsim_cost_elementwise(g, el[i][j] * eb);
            }
        k->f8_hist = lsim_cost_elementwise(g, 1024.0 * 4 * 2);
    }
    /* norms and dropout-add run on the sequence shard with SP */
    double Ts = c->seq_parallel ? T / t : T;
    k->ln = lsim_cost_elementwise(g, 2 * Ts * h * eb);
    k->qkv = lsim_cost_gemm(g, T, Q3, h, lb);
    /* RoPE reads and writes Q and K (the cos/sin tables are small); its
     * backward rotates their gradients the same way */
    k->rope = k->b_rope = lsim_cost_elementwise(g, 2 * T * (Al + KVl) * eb);
    k->attn = lsim_cost_attention(g, c->micro_batch, M->heads / t, M->seq, M->head_dim, 1, 0);
    k->proj = lsim_cost_gemm(g, T, h, Al, lb);
    k->add = lsim_cost_elementwise(g, 3 * Ts * h * eb);
    k->fc1 = lsim_cost_gemm(g, T, f1, h, lb);
    /* GeLU reads f and writes f; SiLU(gate) * up reads 2f, writes f; their
     * backwards read the input(s) and the output gradient and write the
     * input gradient(s): 3f and 5f */
    k->gelu = lsim_cost_elementwise(g, (swiglu ? 3 : 2) * T * f * eb);
    k->fc2 = lsim_cost_gemm(g, T, h, f, lb);
    k->b_add = lsim_cost_elementwise(g, 3 * Ts * h * eb);
    k->b_fc2d = lsim_cost_gemm(g, T, f, h, lb);
    k->b_fc2w = lsim_cost_gemm(g, f, h, T, lb);
    k->b_gelu = lsim_cost_elementwise(g, (swiglu ? 5 : 3) * T * f * eb);
    k->b_fc1d = lsim_cost_gemm(g, T, h, f1, lb);
    k->b_fc1w = lsim_cost_gemm(g, h, f1, T, lb);
    k->b_ln = lsim_cost_elementwise(g, 3 * Ts * h * eb);
    k->b_projd = lsim_cost_gemm(g, T, Al, h, lb);
    k->b_projw = lsim_cost_gemm(g, Al, h, T, lb);
    k->b_attn = lsim_cost_attention(g, c->micro_batch, M->heads / t, M->seq, M->head_dim, 1, 1);
    k->b_qkvd = lsim_cost_gemm(g, T, h, Q3, lb);
    k->b_qkvw = lsim_cost_gemm(g, Q3, h, T, lb);
    {
        /* unfused attention over B = micro-batch x heads / TP matrices of
         * s x s scores (no causal skipping: the mask is applied in the
         * softmax); dropout reads and writes 2-byte values and writes
         * (forward) or reads (backward) a 1-byte mask */
        double B = (double)c->micro_batch * M->heads / t, s = M->seq, d = M->head_dim, ss = B * s * s;
        k->qkv_bias = lsim_cost_elementwise(g, 2 * T * Q3 * eb);
        k->qkv_copy = lsim_cost_elementwise(g, 2 * T * Al * eb);
        k->qk = lsim_cost_bgemm(g, B, s, s, d, c->elem_bytes);
        k->softmax = lsim_cost_elementwise(g, 2 * ss * eb);
        k->pdrop = lsim_cost_elementwise(g, ss * (2 * eb + 1));
        k->pv = lsim_cost_bgemm(g, B, s, d, s, c->elem_bytes);
        k->b_dv = lsim_cost_bgemm(g, B, s, d, s, c->elem_bytes);
        k->b_dp = lsim_cost_bgemm(g, B, s, s, d, c->elem_bytes);
        k->b_pdrop = lsim_cost_elementwise(g, ss * (2 * eb + 1));
        k->b_softmax = lsim_cost_elementwise(g, 3 * ss * eb);
        k->b_dq = lsim_cost_bgemm(g, B, s, d, s, c->elem_bytes);
        k->b_dk = lsim_cost_bgemm(g, B, s, d, s, c->elem_bytes);
        /* a bias gradient reads the output gradient once (its sum over the
         * tokens is tiny) */
        k->bg_qkv = lsim_cost_elementwise(g, T * Q3 * eb);
        k->bg_proj = lsim_cost_elementwise(g, Ts * h * eb);
        k->bg_fc1 = lsim_cost_elementwise(g, T * f1 * eb);
        k->bg_fc2 = lsim_cost_elementwise(g, Ts * h * eb);
        k->b_copy = lsim_cost_elementwise(g, 2 * T * Al * eb);
        /* the cross entropy over T x V/t fp32 logits: made fp32 (2 B read,
         * 4 written), read by a reduction, read and written */
        k->x_float = lsim_cost_elementwise(g, T * V * (eb + 4));
        k->x_read = lsim_cost_elementwise(g, T * V * 4);
        k->x_rw = lsim_cost_elementwise(g, T * V * 8);
        k->x_small = lsim_cost_elementwise(g, T * 4); /* a value per token: the floor */
        /* the causal mask: ones, tril and a comparison over s x s floats */
        k->mask = lsim_cost_elementwise(g, s * s * (4 + 8 + 5));
    }
    /* two gradients of T x h read, their sum written */
    k->b_res = lsim_cost_elementwise(g, 3 * Ts * h * eb);
    k->emb = lsim_cost_elementwise(g, 2 * T * h * eb);
    k->b_emb = lsim_cost_elementwise(g, 2 * T * h * eb);
    k->lnf = lsim_cost_elementwise(g, 2 * Ts * h * eb);
    k->logits = lsim_cost_gemm(g, T, V, h, c->elem_bytes);
    k->xent = lsim_cost_elementwise(g, 2 * T * V * 4);
    k->b_xent = lsim_cost_elementwise(g, 2 * T * V * eb);
    k->b_logitsd = lsim_cost_gemm(g, T, h, V, c->elem_bytes);
    k->b_logitsw = lsim_cost_gemm(g, V, h, T, c->elem_bytes);
    k->act_bytes = (int64_t)(T * h * eb);
    k->p2p_bytes = (c->seq_parallel || c->scatter_gather) ? k->act_bytes / c->tp : k->act_bytes;
    k->tp_ar = lsim_cost_collective(&c->topo, LSIM_COLL_ALLREDUCE, k->act_bytes, G->tp_ranks, c->tp, LSIM_ALGO_AUTO);
    k->tp_rs = lsim_cost_collective(&c->topo, LSIM_COLL_REDUCESCATTER, k->act_bytes, G->tp_ranks, c->tp, LSIM_ALGO_AUTO);
    k->tp_ag = lsim_cost_collective(&c->topo, LSIM_COLL_ALLGATHER, k->act_bytes / c->tp, G->tp_ranks, c->tp, LSIM_ALGO_AUTO);
    k->pp_ag = lsim_cost_collective(&c->topo, LSIM_COLL_ALLGATHER, k->p2p_bytes, G->tp_ranks, c->tp, LSIM_ALGO_AUTO);
    k->tp_ar_small = lsim_cost_collective(&c->topo, LSIM_COLL_ALLREDUCE, (int64_t)T * 12, G->tp_ranks, c->tp, LSIM_ALGO_AUTO);
    if (!(M->kv_heads || swiglu || M->norm || M->no_bias)) {
        k->layer_params = (4 * h * A + 2 * h * M->ffn) / t + 13 * h; /* + biases, layer norms (replicated) */
    } else {
        /* the matrices split over TP; biases (QKV's, FC1's split, two
         * replicated) unless the model has none; two norms of 2h (LayerNorm)
         * or h (RMSNorm) */
        double bias = M->no_bias ? 0 : Q3 + f1 + 2 * h;
        k->layer_params = h * Q3 + Al * h + h * f1 + f * h + bias + (M->norm == LSIM_NORM_RMS ? 2 : 4) * h;
    }
    k->emb_params = V * h;
    /* the output layer: its own matrix when untied; tied, a copy of the
     * embedding on the last stage when that is not the first */
    k->head_params = M->untied || c->pp > 1 ? V * h : 0;
    k->w_qkv = h * Q3;
    k->w_proj = Al * h;
    k->w_fc1 = h * f1;
    k->w_fc2 = f * h;
    k->rc_k = lsim_cost_gemm(g, T, KVl, h, lb);
    k->rc_w3 = lsim_cost_gemm(g, T, f, h, lb);
    if (c->kernels == LSIM_KERN_EAGER) eager_costs(G, T, Ts, f, Al + KVl);
    if (lsim_synth_loss_eager(c)) eager_loss_costs(G, T, V);
}

/* ------------------------------------------------------------ one GPU */

/* The optimizer step: each layer's Adam, element-wise over 30 bytes per
 * parameter (the fp32 gradient read, the master weight and the two moments
 * read and written, the bf16 weight written; docs/synthesis.md), on 1/DP of
 * the parameters with the distributed optimizer, which then all-gathers the
 * updated bf16 weights bucket by bucket on the DP stream. */
static void optimizer(gen *G)
{
    const lsim_synth_cfg *c = G->c;
    const costs *k = &G->k;
    /* FSDP: each rank steps its shard (fsdp.c) */
    double share = c->dist_opt ? 1.0 / G->dpc : G->fsdp.n ? 1.0 / G->fsdp.n : 1.0;
    if (c->gpu.host_opt_ns > 0) {
        snprintf(G->e.tag, sizeof G->e.tag, "step.opt.");
        lsim_emit_host(&G->e, "host", c->gpu.host_opt_ns);
    }
    for (int ch = 0; ch < G->V; ch++) {
        int lo, nl = chunk_layers(G, ch, &lo);
        for (int l = lo; l < lo + nl; l++) {
            char w[24];
            snprintf(w, sizeof w, "L%d.opt.", l);
            snprintf(G->e.tag, sizeof G->e.tag, "%s", w);
            lsim_emit_compute(&G->e, "adam", lsim_cost_elementwise(&c->gpu, layer_params_of(G, l) * share * 30.0));
            if (lsim_model_moe_layer(&c->model, l)) synth_moe_opt(&G->moe, c, &G->e, l);
        }
        if (c->embed_head && (is_first_vs(G, ch) || is_last_vs(G, ch))) {
            snprintf(G->e.tag, sizeof G->e.tag, "%s.opt.", is_first_vs(G, ch) ? "emb" : "head");
            /* the embedding, and the output layer's own weights (untied, or a tied copy on another stage) */
            double p = (is_first_vs(G, ch) ? k->emb_params : 0) + (is_last_vs(G, ch) ? k->head_params : 0);
            lsim_emit_compute(&G->e, "adam", lsim_cost_elementwise(&c->gpu, p * share * 30.0));
        }
    }
    int nl_gpu = 0;
    for (int ch = 0; ch < G->V; ch++) {
        int lo;
        nl_gpu += chunk_layers(G, ch, &lo);
    }
    synth_fsdp_fp8_scales(&G->fsdp, &G->e, nl_gpu);
    if (!c->dist_opt || G->dpc <= 1) return;
    for (size_t i = 0; i < G->ndone; i++) {
        const bucket *bk = &G->done[i];
        int64_t shard = (int64_t)(bk->params * 2.0 / G->dpc); /* bf16 weights */
        lsim_ns d = lsim_cost_collective(&c->topo, LSIM_COLL_ALLGATHER, shard, G->dpc_ranks, G->dpc, LSIM_ALGO_AUTO);
        char what[64];
        snprintf(what, sizeof what, "dp_allgather.b%d.L%d-%d", bk->n, bk->lo, bk->hi);
        snprintf(G->e.tag, sizeof G->e.tag, "grad.opt.");
        lsim_emit_comm(&G->e, LSIM_ES_DP, what, d, LSIM_COLL_ALLGATHER, shard, G->dpx, G->dp_pg, G->dp_seq++);
    }
}

/* One GPU; like (may be NULL) a graph of about its size. */
static int synth_one(const lsim_synth_cfg *c, uint32_t gpu, const char *source, const lsim_graph *like,
                     lsim_graph **out, lsim_err *err)
{
    *out = NULL;
    int rc = lsim_synth_check(c, err);
    if (rc) return rc;
    lsim_synth_cfg cpcfg; /* with CP: the configuration with the rank's seq / CP tokens */
    size_t ngpu = lsim_synth_ngpus(c);
    if (gpu >= ngpu) return lsim_err_set(err, LSIM_EARG, "GPU %u of a job of %zu", gpu, ngpu);
    gen G;
    memset(&G, 0, sizeof G);
    G.c = c;
    G.pfx = "";
    G.tps = c->tp_one ? 1 : c->tp;
    G.tpi = (int)(gpu % (uint32_t)G.tps);
    G.dpx = c->dp * (c->cp > 1 ? c->cp : 1);
    G.dpi = (int)(gpu / (uint32_t)G.tps % (uint32_t)G.dpx);
    G.ppi = (int)(gpu / ((uint32_t)G.tps * (uint32_t)G.dpx));
    G.rank = (int32_t)gpu;
    G.m = lsim_synth_microbatches(c);
    G.V = c->vstages;
    G.e.last_cpu = G.e.last_comp = NONE;
    /* launch_latency_ns counts from the call's start; edges count from the
     * predecessor's end. The framework's dispatch precedes the call, so a
     * launch node lasts dispatch + call and the edge delay is unchanged. */
    G.e.lcpu = c->gpu.launch_cpu_ns + c->gpu.host_dispatch_ns;
    G.e.ldelay = c->gpu.launch_latency_ns - c->gpu.launch_cpu_ns;
    G.e.stall_prob = c->gpu.host_stall_prob;
    G.e.stall_ns = c->gpu.host_stall_ns;
    G.e.stall_sd_ns = c->gpu.host_stall_sd_ns;
    {
        /* one stream per (seed, GPU): both mixed through splitmix64's
         * finalizer, so that nearby seeds and GPUs are unrelated */
        uint64_t z = c->seed * 0xD1B54A32D192ED03ull + ((uint64_t)gpu + 1) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        G.e.rng = z ^ (z >> 31);
    }
    for (int s = 0; s < LSIM_ES_MAX; s++) G.e.last_on[s] = NONE;
    G.fsdp.ahead = NONE;
    G.bucket_lo = G.bucket_hi = -1;
    snprintf(G.tp_pg, sizeof G.tp_pg, "tp:%d:%d", G.ppi, G.dpi);
    snprintf(G.dp_pg, sizeof G.dp_pg, "dp:%d:%d", G.tpi, G.ppi);
    lsim_synth_step *steps = lsim_malloc((size_t)2 * G.m * G.V * sizeof *steps);
    G.tp_ranks = lsim_malloc((size_t)c->tp * sizeof *G.tp_ranks);
    /* the data-parallel group of the full job: DP x CP GPUs (gradients and
     * the distributed optimizer's shards span both), dp_cost replicas */
    G.dpc = c->dp_cost > c->dp ? c->dp_cost * (c->cp > 1 ? c->cp : 1) : G.dpx;
    G.dpc_ranks = lsim_malloc((size_t)G.dpc * sizeof *G.dpc_ranks);
    char src[448], opts[320];
    lsim_synth_opts(c, opts, sizeof opts);
    /* the options go into the source, where what-if finds them */
    if (!source) snprintf(src, sizeof src, "synth:%s/gpu%u%s%s", c->model.name, gpu, opts[0] ? " opts:" : "", opts);
    if (!steps || !G.tp_ranks || !G.dpc_ranks) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory synthesizing GPU %u", gpu);
        goto cleanup;
    }
    /* the full job's numbering: rank = tp + TP (dp + DPC pp) */
    for (int t = 0; t < c->tp; t++) G.tp_ranks[t] = full_rank(&G, t, G.dpi, G.ppi); /* costs only */
    for (int d = 0; d < G.dpc; d++) G.dpc_ranks[d] = full_rank(&G, G.tpi, d, G.ppi);
    if (c->cp > 1) {
        /* context parallelism: the ring's peers, then every kernel costed
         * on the rank's seq / CP tokens (cp.c) */
        int cpi = G.dpi % c->cp, base = G.dpi - cpi;
        int32_t next = gpu_rank(&G, G.tpi, base + (cpi + 1) % c->cp, G.ppi);
        synth_cp_init(&G.cp, c, G.rank, next, gpu_rank(&G, G.tpi, base + (cpi + c->cp - 1) % c->cp, G.ppi),
                      cost_rank(&G, G.rank), cost_rank(&G, next));
        cpcfg = *c;
        cpcfg.model.seq /= c->cp;
        G.c = &cpcfg;
    }
    fill_costs(&G);
    if (synth_moe_init(&G.moe, G.c, G.ppi, G.tpi + G.tps * G.dpi, c->tp * G.dpc, G.tps * G.dpx)) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory synthesizing GPU %u", gpu);
        goto cleanup;
    }
    /* the layer's weight matrices: Q, K, V (one fused QKV in the GPT
     * models), the projection, FC1 (gate and up: two with SwiGLU), FC2 */
    int nlin = (c->model.kv_heads > 0 ? 3 : 1) + 1 + (c->model.mlp == LSIM_MLP_SWIGLU ? 2 : 1) + 1;
    if (synth_fsdp_init(&G.fsdp, c, G.tpi, G.dpi, G.ppi, G.m, G.k.layer_params, G.k.emb_params,
                        G.k.w_qkv + G.k.w_proj + G.k.w_fc1 + G.k.w_fc2, nlin)) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory synthesizing GPU %u", gpu);
        goto cleanup;
    }
    int nwarm = 0, nsteps = 2 * G.m * G.V, total = G.m * G.V;
    if (c->forward_only) {
        /* forward passes only: m forwards in order on every stage */
        for (int i = 0; i < G.m; i++) steps[i] = (lsim_synth_step){0, 0, i};
        nsteps = nwarm = total = G.m;
    } else if ((rc = lsim_synth_schedule(c->pp, G.ppi, G.m, G.V, steps, &nwarm, err))) {
        goto cleanup;
    }
    if ((rc = lsim_gb_new(source ? source : src, (int32_t)gpu, (int32_t)ngpu, &G.e.b, err))) goto cleanup;
    /* a little over the neighbour's size: the stages with the embedding
     * and the head have a few more nodes */
    if (like) {
        lsim_gb_reserve(G.e.b, like->n + like->n / 16 + 64, like->nedges + like->nedges / 16 + 64);
        if (like->strings) lsim_gb_reserve_strings(G.e.b, lsim_strtab_count(like->strings) + 64);
    }
    int dev = (int)(gpu % (uint32_t)(c->topo.gpus_per_node > 0 ? c->topo.gpus_per_node : 8));
    lsim_gb_proc(G.e.b, 0, 1000 + (int64_t)gpu, 1, &G.e.cpu);
    for (int s = 0; s < LSIM_ES_N; s++) lsim_gb_proc(G.e.b, 1, dev, lsim_emit_stream_id[s], &G.e.stream[s]);
    if (G.fsdp.n) lsim_gb_proc(G.e.b, 1, dev, LSIM_ES_FSDP_ID, &G.e.stream[LSIM_ES_FSDP]);
    if (G.cp.n) {
        lsim_gb_proc(G.e.b, 1, dev, LSIM_ES_CPS_ID, &G.e.stream[LSIM_ES_CPS]);
        lsim_gb_proc(G.e.b, 1, dev, LSIM_ES_CPR_ID, &G.e.stream[LSIM_ES_CPR]);
    }
    if (G.moe.ep > 1) lsim_gb_proc(G.e.b, 1, dev, LSIM_ES_EP_ID, &G.e.stream[LSIM_ES_EP]);
    lsim_gb_iteration(G.e.b, "ProfilerStep#0");
    {
        /* the host's work before the step's first launch (data loading),
         * from when this GPU's host gets its core: with host stalls the
         * GPUs enter the step apart (lsim_emit_wake), and the window of a
         * GPU, like a traced rank's, starts at its own entry */
        lsim_ns late = lsim_emit_wake(&G.e);
        uint32_t first = NONE;
        snprintf(G.e.tag, sizeof G.e.tag, "step.begin.");
        if (c->gpu.host_step_ns > 0) first = lsim_emit_host(&G.e, "dataloader", c->gpu.host_step_ns);
        else if (late > 0) first = lsim_emit_host(&G.e, "wake", 0);
        if (first != NONE && late > 0) lsim_gb_set_release(G.e.b, first, late);
    }

    /* blocks: [lo, hi) ranges of steps; steady-phase F+B pairs are one
     * block in the interleaved schedule */
    uint32_t ops[8], rcv[8];
    int nops = 0, nr = 0;
    /* receives of the first block */
    int blo = 0, bhi = 1;
    if (G.V > 1 && nwarm < total && 0 >= nwarm) bhi = 2;
    for (int i = blo; i < bhi; i++) nops = step_recvs(&G, &steps[i], ops, nops, rcv, &nr);
    p2p_group_sync(&G, ops, nops, rcv, nr);
    while (blo < nsteps) {
        for (int i = blo; i < bhi; i++) step_compute(&G, &steps[i]);
        /* the next block */
        int nlo = bhi, nhi = bhi + 1;
        if (G.V > 1 && nlo >= nwarm && nlo < nwarm + 2 * (total - nwarm) && ((nlo - nwarm) % 2) == 0) nhi = nlo + 2;
        if (nhi > nsteps) nhi = nsteps;
        nops = nr = 0;
        for (int i = blo; i < bhi; i++) nops = step_sends(&G, &steps[i], ops, nops);
        for (int i = nlo; i < nhi; i++) nops = step_recvs(&G, &steps[i], ops, nops, rcv, &nr);
        p2p_group_sync(&G, ops, nops, rcv, nr);
        blo = nlo;
        bhi = nhi;
    }
    /* gradients reduced after the flush (Megatron's local DDP of 2021) */
    if (G.dpc > 1 && c->grad_reduce == LSIM_GR_AFTER)
        for (size_t i = 0; i < G.ndone; i++) dp_emit(&G, &G.done[i]);
    /* optimizer: after every gradient reduction */
    if (G.e.last_on[LSIM_ES_DP] != NONE) lsim_emit_pend(&G.e, G.e.last_on[LSIM_ES_DP]);
    if (c->optimizer && !c->forward_only) optimizer(&G);
    /* the step ends when every stream is done (loss.item(), logging) */
    snprintf(G.e.tag, sizeof G.e.tag, "step.end.");
    uint32_t fin = lsim_emit_cpu(&G.e, "synchronize", LSIM_NF_BLOCKING);
    for (int s = 0; s < LSIM_ES_MAX && fin != NONE; s++)
        if (G.e.last_on[s] != NONE) lsim_gb_edge(G.e.b, G.e.last_on[s], fin, LSIM_E_SYNC | LSIM_EDGE_END, 0);
    for (size_t i = 0; i < G.e.npend && fin != NONE; i++) lsim_gb_edge(G.e.b, G.e.pend[i], fin, LSIM_E_SYNC | LSIM_EDGE_END, 0);
    {
        /* the synchronize returns when the host gets its core back */
        lsim_ns wake = fin != NONE ? lsim_emit_wake(&G.e) : 0;
        if (wake > 0) lsim_emit_host(&G.e, "wake", wake);
    }
    {
        lsim_graph *g = NULL;
        lsim_gbuilder *b = G.e.b;
        G.e.b = NULL;
        rc = lsim_gb_finish(b, &g, err);
        if (!rc && G.e.rc) {
            lsim_graph_free(g);
            g = NULL;
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory synthesizing GPU %u", gpu);
        }
        /* the graph bounds (graph.h): a model so wide that one GEMM lasts
         * hours is refused here, not written into a store sim refuses */
        if (!rc && (rc = lsim_graph_check_bounds(g, g->source, gpu, err))) {
            lsim_graph_free(g);
            g = NULL;
        }
        if (!rc) {
            g->launch_latency_ns = c->gpu.launch_latency_ns;
            *out = g;
        }
    }
cleanup:
    lsim_gb_free(G.e.b);
    free(steps);
    free(G.tp_ranks);
    free(G.dpc_ranks);
    free(G.e.pend);
    free(G.done);
    synth_fsdp_free(&G.fsdp);
    synth_moe_free(&G.moe);
    return rc;
}

int lsim_synth_gpu(const lsim_synth_cfg *c, uint32_t gpu, const char *source, lsim_graph **out, lsim_err *err)
{
    return synth_one(c, gpu, source, NULL, out, err);
}

int lsim_synth_gpu_like(const lsim_synth_cfg *c, uint32_t gpu, const char *source, const lsim_graph *like,
                        lsim_graph **out, lsim_err *err)
{
    return synth_one(c, gpu, source, like, out, err);
}

int lsim_synth_job(const lsim_synth_cfg *c, lsim_graph **out, lsim_err *err)
{
    size_t n = lsim_synth_ngpus(c);
    int rc = 0;
    for (size_t i = 0; i < n; i++) out[i] = NULL;
    for (size_t i = 0; !rc && i < n; i++) rc = synth_one(c, (uint32_t)i, NULL, i ? out[i - 1] : NULL, &out[i], err);
    for (size_t i = 0; rc && i < n; i++) {
        lsim_graph_free(out[i]);
        out[i] = NULL;
    }
    return rc;
}
