/* torchtitan's ways of running a layer in synthesized jobs (issue 36):
 * --recompute op (per-op selective activation checkpointing) and
 * --kernels eager (PyTorch eager, no torch.compile); docs/synthesis.md.
 * Expected values come from formulas written here:
 * - op recomputation re-runs every second matmul of a layer (wk, wo, w3:
 *   2 T h (KV + A + f) / TP FLOPs, T tokens) and nothing more of the GEMMs;
 * - its memory keeps per token the layer's input and W2's output (2h
 *   each), Q and the attention's output (2A each), V (2KV), the gate (2f);
 * - eager kernels move the bytes torchtitan's ops move: RMSNorm 36 per
 *   element forward, the loss 18 per fp32 logit, SwiGLU 10 per FFN element;
 * - its loss alone (--loss eager: torchtitan's cross_entropy(pred.float()),
 *   left eager by its per-block torch.compile) moves 18 bytes a logit
 *   forward and 22 backward, and holds 12 bytes a logit at the backward's
 *   peak (log_softmax's saved output, nll's gradient, log_softmax's
 *   gradient: 4 each) where the fused loss holds the fp32 logits, 4; 10
 *   against 4 forward-only. Only the last stage holds logits. */
#include <string.h>

#include "check.h"
#include "lumosim/memest.h"
#include "lumosim/synth.h"

static void cfg_of(lsim_synth_cfg *c, int rc, int kernels)
{
    lsim_synth_cfg_default(c);
    CHECK(lsim_model_builtin("llama3-8b", &c->model, NULL) == 0);
    c->model.layers = 2;
    c->model.seq = 2048;
    c->tp = 2, c->pp = 1, c->dp = 1, c->micro_batch = 1, c->global_batch = 1, c->mem_check = 0;
    c->recompute = rc;
    c->kernels = kernels;
}

static const char *nm(const lsim_graph *g, size_t v) { return lsim_strtab_get(g->strings, g->name[v]); }

/* the summed duration of GPU 0's kernels whose name ends in `suffix` and
 * contains `part` (NULL: any) */
static double dur_of(const lsim_graph *g, const char *part, const char *suffix, size_t *n)
{
    double d = 0;
    size_t ls = strlen(suffix);
    *n = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (g->kind[v] != LSIM_N_KERNEL) continue;
        const char *s = nm(g, v);
        size_t l = strlen(s);
        if (l < ls || strcmp(s + l - ls, suffix) || (part && !strstr(s, part))) continue;
        d += (double)g->dur[v];
        (*n)++;
    }
    return d;
}

static void test_op_recompute(void)
{
    lsim_synth_cfg c;
    cfg_of(&c, LSIM_RC_OP, LSIM_KERN_FUSED);
    lsim_err err;
    lsim_graph *g = NULL;
    CHECK_MSG(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0, "%s", err.msg);
    if (!g) return;
    const lsim_model_shape *M = &c.model;
    double T = (double)c.micro_batch * M->seq, h = M->hidden, t = c.tp;
    double A = (double)M->heads * M->head_dim, KV = (double)M->kv_heads * M->head_dim, f = M->ffn;
    size_t nk, nw, np, nall;
    double dk = dur_of(g, ".rc_", "k_gemm", &nk), dw = dur_of(g, ".rc_", "w3_gemm", &nw);
    double dp = dur_of(g, ".rc_", "proj_gemm", &np);
    dur_of(g, ".rc_", "_gemm", &nall);
    size_t L = (size_t)M->layers;
    CHECK_I64(nk, L);
    CHECK_I64(nw, L);
    CHECK_I64(np, L);
    CHECK_I64(nall, 3 * L); /* wk, wo, w3: nothing else of the GEMMs again */
    CHECK(dk == L * (double)lsim_cost_gemm(&c.gpu, T, KV / t, h, 2));
    CHECK(dw == L * (double)lsim_cost_gemm(&c.gpu, T, f / t, h, 2));
    CHECK(dp == L * (double)lsim_cost_gemm(&c.gpu, T, h, A / t, 2));
    /* the recomputed FLOPs are those of every second matmul */
    double flops = 2 * T * h * (KV + A + f) / t, all = 2 * T * h * (A + 2 * KV + A + 3 * f) / t;
    CHECK(flops > 0.3 * all && flops < 0.5 * all);
    /* and nothing with full's names: no recomputed QKV or FC1 */
    size_t nq;
    dur_of(g, ".rc_", "qkv_gemm", &nq);
    CHECK_I64(nq, 0);
    lsim_graph_free(g);

    /* the memory it keeps */
    lsim_memest_in in;
    lsim_memest_in_default(&in);
    in.layers = 2, in.hidden = M->hidden, in.ffn = M->ffn, in.heads = M->heads, in.head_dim = M->head_dim;
    in.seq = M->seq, in.vocab = M->vocab, in.kv_heads = M->kv_heads, in.swiglu = 1, in.rmsnorm = 1;
    in.tp = 1, in.pp = 1, in.dp = 1, in.micro_batch = 1, in.microbatches = 1;
    in.recompute = LSIM_MEMEST_RC_OP;
    CHECK(lsim_memest_check(&in, &err) == 0);
    double want = T * (2 * h + 2 * A + 2 * KV + 2 * A + 2 * f + 2 * h);
    CHECK_MSG(lsim_memest_layer_act(&in, 1) == want, "%g vs %g", lsim_memest_layer_act(&in, 1), want);
    in.recompute = LSIM_MEMEST_RC_FULL;
    double full = lsim_memest_layer_act(&in, 1);
    in.recompute = LSIM_MEMEST_RC_NONE;
    CHECK(full < want && want < lsim_memest_layer_act(&in, 1));
    CHECK_STR(lsim_recompute_name(LSIM_RC_OP), "op");
}

static void test_eager(void)
{
    lsim_synth_cfg c;
    lsim_err err;
    lsim_graph *g = NULL, *f = NULL;
    cfg_of(&c, LSIM_RC_NONE, LSIM_KERN_EAGER);
    CHECK_MSG(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0, "%s", err.msg);
    cfg_of(&c, LSIM_RC_NONE, LSIM_KERN_FUSED);
    CHECK_MSG(lsim_synth_gpu(&c, 0, NULL, &f, &err) == 0, "%s", err.msg);
    if (!g || !f) return;
    const lsim_model_shape *M = &c.model;
    double T = (double)c.micro_batch * M->seq, h = M->hidden, V = (double)M->vocab / c.tp, F = (double)M->ffn / c.tp;
    size_t n;
    double ln = dur_of(g, ".fwd.", ".ln1", &n);
    CHECK(n == (size_t)M->layers && ln == n * (double)lsim_cost_elementwise(&c.gpu, 36 * T * h));
    double xe = dur_of(g, "fwd", ".xent", &n);
    CHECK(n == 1 && xe == (double)lsim_cost_elementwise(&c.gpu, 18 * T * V));
    double sw = dur_of(g, ".fwd.", ".swiglu", &n);
    CHECK(n == (size_t)M->layers && sw == n * (double)lsim_cost_elementwise(&c.gpu, 10 * T * F));
    /* the same GEMMs, more bytes elsewhere */
    size_t a, b;
    CHECK(dur_of(g, NULL, "_gemm", &a) == dur_of(f, NULL, "_gemm", &b) && a == b);
    CHECK(dur_of(g, NULL, ".ln2", &a) > dur_of(f, NULL, ".ln2", &b));
    lsim_graph_free(g);
    lsim_graph_free(f);
    /* bad values are refused */
    cfg_of(&c, LSIM_RC_NONE, 2);
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG);
    cfg_of(&c, LSIM_RC_N, 0);
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG);
}

/* the last stage's activations with the loss eager minus fused */
static double loss_act_gap(lsim_synth_cfg *c, int stage)
{
    lsim_memest_in in;
    lsim_memest_stage a, b;
    lsim_err err;
    c->loss = LSIM_LOSS_EAGER;
    lsim_synth_memest_in(c, &in);
    CHECK_MSG(lsim_memest_stage_of(&in, stage, &a, &err) == 0, "%s", err.msg);
    c->loss = LSIM_LOSS_FUSED;
    lsim_synth_memest_in(c, &in);
    CHECK_MSG(lsim_memest_stage_of(&in, stage, &b, &err) == 0, "%s", err.msg);
    return a.activations - b.activations;
}

static void test_eager_loss(void)
{
    lsim_synth_cfg c;
    lsim_err err;
    lsim_graph *g = NULL, *f = NULL;
    cfg_of(&c, LSIM_RC_NONE, LSIM_KERN_FUSED);
    c.loss = LSIM_LOSS_EAGER;
    CHECK_MSG(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0, "%s", err.msg);
    cfg_of(&c, LSIM_RC_NONE, LSIM_KERN_FUSED);
    CHECK_MSG(lsim_synth_gpu(&c, 0, NULL, &f, &err) == 0, "%s", err.msg);
    if (!g || !f) return;
    const lsim_model_shape *M = &c.model;
    double T = (double)c.micro_batch * M->seq, V = (double)M->vocab / c.tp;
    size_t n, m;
    CHECK(dur_of(g, "fwd", ".xent", &n) == (double)lsim_cost_elementwise(&c.gpu, 18 * T * V) && n == 1);
    CHECK(dur_of(g, "bwd", ".xent", &n) == (double)lsim_cost_elementwise(&c.gpu, 22 * T * V) && n == 1);
    /* the layers' kernels stay fused */
    CHECK(dur_of(g, NULL, ".ln1", &n) == dur_of(f, NULL, ".ln1", &m) && n == m && n > 0);
    lsim_graph_free(g);
    lsim_graph_free(f);

    /* memory: 8 bytes a logit more on the last stage, nothing on the first */
    cfg_of(&c, LSIM_RC_NONE, LSIM_KERN_FUSED);
    c.pp = 2, c.global_batch = 2;
    CHECK(loss_act_gap(&c, 1) == 8 * T * V);
    CHECK(loss_act_gap(&c, 0) == 0);
    c.forward_only = 1;
    CHECK(loss_act_gap(&c, 1) == 6 * T * V);
    c.forward_only = 0;
    /* --kernels eager runs the loss eager too */
    lsim_memest_in in, in2;
    c.kernels = LSIM_KERN_EAGER;
    lsim_synth_memest_in(&c, &in);
    c.kernels = LSIM_KERN_FUSED, c.loss = LSIM_LOSS_EAGER;
    lsim_synth_memest_in(&c, &in2);
    CHECK(in.loss_eager && in2.loss_eager);
    c.loss = 2;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG);
}

int main(void)
{
    test_op_recompute();
    test_eager();
    test_eager_loss();
    return check_result("test_synth_torchtitan");
}
