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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX


/* kernel durations of one layer / embedding / head (the same for every
 * layer and micro-batch of the job) */
typedef struct costs {
    lsim_ns ln, qkv, attn, proj, add, fc1, gelu, fc2;
    lsim_ns b_add, b_fc2d, b_fc2w, b_gelu, b_fc1d, b_fc1w, b_ln, b_projd, b_projw, b_attn, b_qkvd, b_qkvw;
    lsim_ns emb, b_emb, lnf, logits, xent, b_xent, b_logitsd, b_logitsw;
    lsim_ns tp_ar;      /* activation all-reduce in the TP group */
    lsim_ns tp_ar_small;/* the loss's all-reduce (3 floats per token) */
    int64_t act_bytes;  /* one micro-batch's activations at a stage boundary */
    double layer_params, emb_params; /* per GPU */
} costs;

typedef struct pairseq {
    int32_t src, dst;
    int bwd;
    int64_t n;
} pairseq;

typedef struct gen {
    const lsim_synth_cfg *c;
    lsim_emit e;                  /* builder, CPU thread, streams, tag, rc */
    int tpi, ppi, dpi, m, V, lpc; /* lpc: layers per chunk */
    int32_t rank;
    int64_t tp_seq, dp_seq;
    pairseq pairs[16];
    int npairs;
    char tp_pg[48], dp_pg[48];
    int32_t *tp_ranks, *dp_ranks;
    costs k;
    double bucket;                /* parameters waiting for the next DP all-reduce */
    int bucket_lo, bucket_hi;     /* layers in it (-1: none) */
    int bucket_n;
} gen;

static int32_t gpu_rank(const gen *G, int tpi, int dpi, int ppi)
{
    return (int32_t)(tpi + G->c->tp * (dpi + G->c->dp * ppi));
}

/* A synchronous TP all-reduce: the next compute kernel waits for it. */
static void tp_allreduce(gen *G, const char *what, int64_t bytes, lsim_ns dur)
{
    if (G->c->tp <= 1) return;
    uint32_t v = lsim_emit_comm(&G->e, LSIM_ES_TP, what, dur, LSIM_COLL_ALLREDUCE, bytes, G->c->tp, G->tp_pg, G->tp_seq++);
    if (v != NONE) lsim_emit_pend(&G->e, v);
}

static void set_tag(gen *G, const char *where, int mb, int bwd)
{
    snprintf(G->e.tag, sizeof G->e.tag, "%s.mb%d.%s.", where, mb, bwd ? "bwd" : "fwd");
}

static void set_layer_tag(gen *G, int layer, int mb, int bwd)
{
    char w[24];
    snprintf(w, sizeof w, "L%d", layer);
    set_tag(G, w, mb, bwd);
}

/* ------------------------------------------------------------ DP buckets */

static void dp_flush(gen *G, int mb)
{
    if (G->bucket_lo < 0) return;
    if (G->c->dp > 1) {
        int64_t bytes = (int64_t)(G->bucket * 4.0); /* fp32 main gradients */
        lsim_ns d = lsim_cost_collective(&G->c->topo, LSIM_COLL_ALLREDUCE, bytes, G->dp_ranks, G->c->dp, LSIM_ALGO_AUTO);
        char what[64];
        snprintf(what, sizeof what, "dp_allreduce.b%d.L%d-%d", G->bucket_n, G->bucket_lo, G->bucket_hi);
        snprintf(G->e.tag, sizeof G->e.tag, "grad.mb%d.bwd.", mb);
        lsim_emit_comm(&G->e, LSIM_ES_DP, what, d, LSIM_COLL_ALLREDUCE, bytes, G->c->dp, G->dp_pg, G->dp_seq++);
    }
    G->bucket_n++;
    G->bucket = 0;
    G->bucket_lo = G->bucket_hi = -1;
}

/* params of `layer` (or -1 embedding, -2 head) are ready: bucket them */
static void dp_add(gen *G, int layer, double params, int mb)
{
    int l = layer < 0 ? (layer == -1 ? 0 : G->c->model.layers - 1) : layer;
    if (G->bucket_lo < 0 || l < G->bucket_lo) G->bucket_lo = l;
    if (G->bucket_hi < 0 || l > G->bucket_hi) G->bucket_hi = l;
    G->bucket += params;
    if (G->bucket >= G->c->dp_bucket_params) dp_flush(G, mb);
}

/* ------------------------------------------------------------ compute */

static void layer_fwd(gen *G, int layer, int mb)
{
    const costs *k = &G->k;
    set_layer_tag(G, layer, mb, 0);
    lsim_emit_compute(&G->e, "ln1", k->ln);
    lsim_emit_compute(&G->e, "qkv_gemm", k->qkv);
    lsim_emit_compute(&G->e, "attn", k->attn);
    lsim_emit_compute(&G->e, "proj_gemm", k->proj);
    tp_allreduce(G, "attn_allreduce", k->act_bytes, k->tp_ar);
    lsim_emit_compute(&G->e, "dropout_add", k->add);
    lsim_emit_compute(&G->e, "ln2", k->ln);
    lsim_emit_compute(&G->e, "fc1_gemm", k->fc1);
    lsim_emit_compute(&G->e, "gelu", k->gelu);
    lsim_emit_compute(&G->e, "fc2_gemm", k->fc2);
    tp_allreduce(G, "mlp_allreduce", k->act_bytes, k->tp_ar);
    lsim_emit_compute(&G->e, "dropout_add2", k->add);
}

static void layer_bwd(gen *G, int layer, int mb, int last_mb)
{
    const costs *k = &G->k;
    set_layer_tag(G, layer, mb, 1);
    lsim_emit_compute(&G->e, "dropout_add2", k->b_add);
    lsim_emit_compute(&G->e, "fc2_dgrad", k->b_fc2d);
    lsim_emit_compute(&G->e, "fc2_wgrad", k->b_fc2w);
    lsim_emit_compute(&G->e, "gelu", k->b_gelu);
    lsim_emit_compute(&G->e, "fc1_dgrad", k->b_fc1d);
    lsim_emit_compute(&G->e, "fc1_wgrad", k->b_fc1w);
    tp_allreduce(G, "mlp_allreduce", k->act_bytes, k->tp_ar);
    lsim_emit_compute(&G->e, "ln2", k->b_ln);
    lsim_emit_compute(&G->e, "dropout_add", k->b_add);
    lsim_emit_compute(&G->e, "proj_dgrad", k->b_projd);
    lsim_emit_compute(&G->e, "proj_wgrad", k->b_projw);
    lsim_emit_compute(&G->e, "attn", k->b_attn);
    lsim_emit_compute(&G->e, "qkv_dgrad", k->b_qkvd);
    lsim_emit_compute(&G->e, "qkv_wgrad", k->b_qkvw);
    tp_allreduce(G, "attn_allreduce", k->act_bytes, k->tp_ar);
    lsim_emit_compute(&G->e, "ln1", k->b_ln);
    if (last_mb) dp_add(G, layer, k->layer_params, mb);
}

static int first_layer(const gen *G, int chunk) { return (chunk * G->c->pp + G->ppi) * G->lpc; }
static int is_first_vs(const gen *G, int chunk) { return chunk == 0 && G->ppi == 0; }
static int is_last_vs(const gen *G, int chunk) { return chunk == G->V - 1 && G->ppi == G->c->pp - 1; }

static void step_compute(gen *G, const lsim_synth_step *s)
{
    const costs *k = &G->k;
    int lo = first_layer(G, s->chunk), hi = lo + G->lpc - 1;
    int eh = G->c->embed_head;
    int last_mb = s->mb == G->m - 1;
    if (!s->bwd) {
        if (eh && is_first_vs(G, s->chunk)) {
            set_tag(G, "emb", s->mb, 0);
            lsim_emit_compute(&G->e, "lookup", k->emb);
            tp_allreduce(G, "emb_allreduce", k->act_bytes, k->tp_ar);
        }
        for (int l = lo; l <= hi; l++) layer_fwd(G, l, s->mb);
        if (eh && is_last_vs(G, s->chunk)) {
            set_tag(G, "head", s->mb, 0);
            lsim_emit_compute(&G->e, "lnf", k->lnf);
            lsim_emit_compute(&G->e, "logits_gemm", k->logits);
            lsim_emit_compute(&G->e, "xent", k->xent);
            tp_allreduce(G, "xent_allreduce", (int64_t)G->c->micro_batch * G->c->model.seq * 12, k->tp_ar_small);
        }
    } else {
        if (eh && is_last_vs(G, s->chunk)) {
            set_tag(G, "head", s->mb, 1);
            lsim_emit_compute(&G->e, "xent", k->b_xent);
            lsim_emit_compute(&G->e, "logits_dgrad", k->b_logitsd);
            lsim_emit_compute(&G->e, "logits_wgrad", k->b_logitsw);
            lsim_emit_compute(&G->e, "lnf", k->b_ln);
            /* the output layer is the embedding (tied): its own copy only
             * when the embedding lives on another stage */
            if (last_mb && G->c->pp > 1) dp_add(G, -2, k->emb_params, s->mb);
        }
        for (int l = hi; l >= lo; l--) layer_bwd(G, l, s->mb, last_mb);
        if (eh && is_first_vs(G, s->chunk)) {
            set_tag(G, "emb", s->mb, 1);
            lsim_emit_compute(&G->e, "lookup", k->b_emb);
            if (last_mb) dp_add(G, -1, k->emb_params, s->mb);
        }
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
    lsim_ns d = lsim_cost_p2p(&G->c->topo, G->k.act_bytes, src, dst);
    uint32_t v = lsim_emit_comm(&G->e, role, what, d, send ? LSIM_COLL_SEND : LSIM_COLL_RECV, G->k.act_bytes, 2, pg,
                   pair_seq(G, src, dst, bwd));
    if (v != NONE) lsim_emit_pend(&G->e, v);
    return v;
}

/* Sends of step s (done). */
static int step_sends(gen *G, const lsim_synth_step *s, uint32_t *ops, int n)
{
    int vs = s->chunk * G->c->pp + G->ppi, nvs = G->c->pp * G->V, lo = first_layer(G, s->chunk);
    if (!s->bwd && vs + 1 < nvs) ops[n++] = p2p_op(G, LSIM_ES_SENDF, vs_rank(G, vs + 1), 1, lo + G->lpc - 1, s->mb, 0, "send_next");
    if (s->bwd && vs > 0) ops[n++] = p2p_op(G, LSIM_ES_SENDB, vs_rank(G, vs - 1), 1, lo, s->mb, 1, "send_prev");
    return n;
}

/* Receives step s needs. */
static int step_recvs(gen *G, const lsim_synth_step *s, uint32_t *ops, int n)
{
    int vs = s->chunk * G->c->pp + G->ppi, nvs = G->c->pp * G->V, lo = first_layer(G, s->chunk);
    if (!s->bwd && vs > 0) ops[n++] = p2p_op(G, LSIM_ES_RECVF, vs_rank(G, vs - 1), 0, lo, s->mb, 0, "recv_prev");
    if (s->bwd && vs + 1 < nvs) ops[n++] = p2p_op(G, LSIM_ES_RECVB, vs_rank(G, vs + 1), 0, lo + G->lpc - 1, s->mb, 1, "recv_next");
    return n;
}

/* After a group: the CPU blocks until its kernels are done (batch_p2p_sync). */
static void p2p_group_sync(gen *G, const uint32_t *ops, int n)
{
    if (!G->c->p2p_sync || n == 0) return;
    uint32_t v = lsim_emit_cpu(&G->e, "sync", LSIM_NF_BLOCKING);
    if (v == NONE) return;
    for (int i = 0; i < n; i++)
        if (ops[i] != NONE) lsim_gb_edge(G->e.b, ops[i], v, LSIM_E_SYNC | LSIM_EDGE_END, 0);
}

/* ------------------------------------------------------------ costs */

static void fill_costs(gen *G)
{
    const lsim_synth_cfg *c = G->c;
    const lsim_gpu_spec *g = &c->gpu;
    const lsim_model_shape *M = &c->model;
    costs *k = &G->k;
    double t = c->tp, T = (double)c->micro_batch * M->seq, h = M->hidden, f = M->ffn / t, A = (double)M->heads * M->head_dim,
           Al = A / t, V = M->vocab / t, eb = c->elem_bytes;
    k->ln = lsim_cost_elementwise(g, 2 * T * h * eb);
    k->qkv = lsim_cost_gemm(g, T, 3 * Al, h, c->elem_bytes);
    k->attn = lsim_cost_attention(g, c->micro_batch, M->heads / t, M->seq, M->head_dim, 1, 0);
    k->proj = lsim_cost_gemm(g, T, h, Al, c->elem_bytes);
    k->add = lsim_cost_elementwise(g, 3 * T * h * eb);
    k->fc1 = lsim_cost_gemm(g, T, f, h, c->elem_bytes);
    k->gelu = lsim_cost_elementwise(g, 2 * T * f * eb);
    k->fc2 = lsim_cost_gemm(g, T, h, f, c->elem_bytes);
    k->b_add = lsim_cost_elementwise(g, 3 * T * h * eb);
    k->b_fc2d = lsim_cost_gemm(g, T, f, h, c->elem_bytes);
    k->b_fc2w = lsim_cost_gemm(g, f, h, T, c->elem_bytes);
    k->b_gelu = lsim_cost_elementwise(g, 3 * T * f * eb);
    k->b_fc1d = lsim_cost_gemm(g, T, h, f, c->elem_bytes);
    k->b_fc1w = lsim_cost_gemm(g, h, f, T, c->elem_bytes);
    k->b_ln = lsim_cost_elementwise(g, 3 * T * h * eb);
    k->b_projd = lsim_cost_gemm(g, T, Al, h, c->elem_bytes);
    k->b_projw = lsim_cost_gemm(g, Al, h, T, c->elem_bytes);
    k->b_attn = lsim_cost_attention(g, c->micro_batch, M->heads / t, M->seq, M->head_dim, 1, 1);
    k->b_qkvd = lsim_cost_gemm(g, T, h, 3 * Al, c->elem_bytes);
    k->b_qkvw = lsim_cost_gemm(g, 3 * Al, h, T, c->elem_bytes);
    k->emb = lsim_cost_elementwise(g, 2 * T * h * eb);
    k->b_emb = lsim_cost_elementwise(g, 2 * T * h * eb);
    k->lnf = lsim_cost_elementwise(g, 2 * T * h * eb);
    k->logits = lsim_cost_gemm(g, T, V, h, c->elem_bytes);
    k->xent = lsim_cost_elementwise(g, 2 * T * V * 4);
    k->b_xent = lsim_cost_elementwise(g, 2 * T * V * eb);
    k->b_logitsd = lsim_cost_gemm(g, T, h, V, c->elem_bytes);
    k->b_logitsw = lsim_cost_gemm(g, V, h, T, c->elem_bytes);
    k->act_bytes = (int64_t)(T * h * eb);
    k->tp_ar = lsim_cost_collective(&c->topo, LSIM_COLL_ALLREDUCE, k->act_bytes, G->tp_ranks, c->tp, LSIM_ALGO_AUTO);
    k->tp_ar_small = lsim_cost_collective(&c->topo, LSIM_COLL_ALLREDUCE, (int64_t)T * 12, G->tp_ranks, c->tp, LSIM_ALGO_AUTO);
    k->layer_params = (4 * h * A + 2 * h * M->ffn) / t + 13 * h; /* + biases, layer norms (replicated) */
    k->emb_params = V * h;
}

/* ------------------------------------------------------------ one GPU */

int lsim_synth_gpu(const lsim_synth_cfg *c, uint32_t gpu, const char *source, lsim_graph **out, lsim_err *err)
{
    *out = NULL;
    int rc = lsim_synth_check(c, err);
    if (rc) return rc;
    size_t ngpu = lsim_synth_ngpus(c);
    if (gpu >= ngpu) return lsim_err_set(err, LSIM_EARG, "GPU %u of a job of %zu", gpu, ngpu);
    gen G;
    memset(&G, 0, sizeof G);
    G.c = c;
    G.tpi = (int)(gpu % (uint32_t)c->tp);
    G.dpi = (int)(gpu / (uint32_t)c->tp % (uint32_t)c->dp);
    G.ppi = (int)(gpu / ((uint32_t)c->tp * (uint32_t)c->dp));
    G.rank = (int32_t)gpu;
    G.m = lsim_synth_microbatches(c);
    G.V = c->vstages;
    G.lpc = c->model.layers / (c->pp * c->vstages);
    G.e.last_cpu = G.e.last_comp = NONE;
    /* launch_latency_ns counts from the call's start; edges count from the
     * predecessor's end */
    G.e.lcpu = c->gpu.launch_cpu_ns;
    G.e.ldelay = c->gpu.launch_latency_ns - c->gpu.launch_cpu_ns;
    for (int s = 0; s < LSIM_ES_N; s++) G.e.last_on[s] = NONE;
    G.bucket_lo = G.bucket_hi = -1;
    snprintf(G.tp_pg, sizeof G.tp_pg, "tp:%d:%d", G.ppi, G.dpi);
    snprintf(G.dp_pg, sizeof G.dp_pg, "dp:%d:%d", G.tpi, G.ppi);
    lsim_synth_step *steps = malloc((size_t)2 * G.m * G.V * sizeof *steps);
    G.tp_ranks = malloc((size_t)c->tp * sizeof *G.tp_ranks);
    G.dp_ranks = malloc((size_t)c->dp * sizeof *G.dp_ranks);
    char src[96];
    if (!source) snprintf(src, sizeof src, "synth:%s/gpu%u", c->model.name, gpu);
    if (!steps || !G.tp_ranks || !G.dp_ranks) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory synthesizing GPU %u", gpu);
        goto cleanup;
    }
    for (int t = 0; t < c->tp; t++) G.tp_ranks[t] = gpu_rank(&G, t, G.dpi, G.ppi);
    for (int d = 0; d < c->dp; d++) G.dp_ranks[d] = gpu_rank(&G, G.tpi, d, G.ppi);
    fill_costs(&G);
    if ((rc = lsim_synth_schedule(c->pp, G.ppi, G.m, G.V, steps, NULL, err))) goto cleanup;
    int nwarm = 0;
    lsim_synth_schedule(c->pp, G.ppi, G.m, G.V, steps, &nwarm, NULL);
    if ((rc = lsim_gb_new(source ? source : src, (int32_t)gpu, (int32_t)ngpu, &G.e.b, err))) goto cleanup;
    int dev = (int)(gpu % (uint32_t)(c->topo.gpus_per_node > 0 ? c->topo.gpus_per_node : 8));
    lsim_gb_proc(G.e.b, 0, 1000 + (int64_t)gpu, 1, &G.e.cpu);
    for (int s = 0; s < LSIM_ES_N; s++) lsim_gb_proc(G.e.b, 1, dev, lsim_emit_stream_id[s], &G.e.stream[s]);
    lsim_gb_iteration(G.e.b, "ProfilerStep#0");

    /* blocks: [lo, hi) ranges of steps; steady-phase F+B pairs are one
     * block in the interleaved schedule */
    int nsteps = 2 * G.m * G.V, total = G.m * G.V;
    uint32_t ops[8];
    int nops = 0;
    /* receives of the first block */
    int blo = 0, bhi = 1;
    if (G.V > 1 && nwarm < total && 0 >= nwarm) bhi = 2;
    for (int i = blo; i < bhi; i++) nops = step_recvs(&G, &steps[i], ops, nops);
    p2p_group_sync(&G, ops, nops);
    while (blo < nsteps) {
        for (int i = blo; i < bhi; i++) step_compute(&G, &steps[i]);
        /* the next block */
        int nlo = bhi, nhi = bhi + 1;
        if (G.V > 1 && nlo >= nwarm && nlo < nwarm + 2 * (total - nwarm) && ((nlo - nwarm) % 2) == 0) nhi = nlo + 2;
        if (nhi > nsteps) nhi = nsteps;
        nops = 0;
        for (int i = blo; i < bhi; i++) nops = step_sends(&G, &steps[i], ops, nops);
        for (int i = nlo; i < nhi; i++) nops = step_recvs(&G, &steps[i], ops, nops);
        p2p_group_sync(&G, ops, nops);
        blo = nlo;
        bhi = nhi;
    }
    /* optimizer: after every gradient all-reduce */
    if (G.e.last_on[LSIM_ES_DP] != NONE) lsim_emit_pend(&G.e, G.e.last_on[LSIM_ES_DP]);
    if (c->optimizer) {
        const costs *k = &G.k;
        for (int ch = 0; ch < G.V; ch++) {
            int lo = first_layer(&G, ch);
            for (int l = lo; l < lo + G.lpc; l++) {
                char w[24];
                snprintf(w, sizeof w, "L%d.opt.", l);
                snprintf(G.e.tag, sizeof G.e.tag, "%s", w);
                lsim_emit_compute(&G.e, "adam", lsim_cost_elementwise(&c->gpu, k->layer_params * 30.0));
            }
            if (c->embed_head && (is_first_vs(&G, ch) || is_last_vs(&G, ch))) {
                snprintf(G.e.tag, sizeof G.e.tag, "%s.opt.", is_first_vs(&G, ch) ? "emb" : "head");
                lsim_emit_compute(&G.e, "adam", lsim_cost_elementwise(&c->gpu, k->emb_params * 30.0));
            }
        }
    }
    /* the step ends when every stream is done (loss.item(), logging) */
    snprintf(G.e.tag, sizeof G.e.tag, "step.end.");
    uint32_t fin = lsim_emit_cpu(&G.e, "synchronize", LSIM_NF_BLOCKING);
    for (int s = 0; s < LSIM_ES_N && fin != NONE; s++)
        if (G.e.last_on[s] != NONE) lsim_gb_edge(G.e.b, G.e.last_on[s], fin, LSIM_E_SYNC | LSIM_EDGE_END, 0);
    for (size_t i = 0; i < G.e.npend && fin != NONE; i++) lsim_gb_edge(G.e.b, G.e.pend[i], fin, LSIM_E_SYNC | LSIM_EDGE_END, 0);
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
        if (!rc) {
            g->launch_latency_ns = c->gpu.launch_latency_ns;
            *out = g;
        }
    }
cleanup:
    lsim_gb_free(G.e.b);
    free(steps);
    free(G.tp_ranks);
    free(G.dp_ranks);
    free(G.e.pend);
    return rc;
}
