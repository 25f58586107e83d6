/* Mixture-of-experts layers and expert parallelism in synthesized jobs
 * (synth.h's ep, moe.c; docs/synthesis.md "Expert parallelism"; issue 36).
 * Expected values come from formulas written here, from the shape:
 * - balanced routing: every expert of a MoE layer receives tokens x top_k /
 *   experts of a micro-batch, tokens = the EP group's (EP x b x s / TP);
 *   the local experts' grouped FC1 GEMM is the batched GEMM of experts /
 *   EP groups of that many rows;
 * - all-to-all bytes per EP rank: per MoE layer and micro-batch a dispatch
 *   and a combine in the forward and both again in the backward, each the
 *   rank's tokens x top_k x hidden x 2 bytes, and the forward's exchange of
 *   the E tokens-per-expert counts (8 bytes each), in the group of EP ranks;
 * - the GEMM FLOPs of a step = 6 x active parameters x tokens (+ the
 *   attention's, counted apart), active = attention and dense MLPs, the
 *   router (h x E), top_k routed and the shared experts of each MoE layer,
 *   and the output layer;
 * - expert parameters per GPU divided by EP in the memory estimate; their
 *   gradients reduce-scattered over the expert-data-parallel group;
 * - skewed routing: the loads sorted are the Zipf shares of the exponent,
 *   the total exact, the draw repeatable and varying over micro-batches;
 * - refusals: experts not divisible by EP, top_k above the experts, EP not
 *   dividing the stage, --ep on a dense model;
 * - expert-tensor parallelism: the GEMM FLOPs unchanged, the experts'
 *   parameters per GPU / ETP, the ETP group's all-gather and
 *   reduce-scatter of the rows, the groups' places;
 * - the whole EP job (TP 2 with SP, PP 2, DP 2, EP 4) matches and runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "job_span.h"
#include "lumosim/engine.h"
#include "lumosim/job.h"
#include "lumosim/synth.h"

/* A small MoE model: GQA, SwiGLU, 8 experts of width 128, top-2, one shared
 * expert, the first layer dense. */
static void cfg_of(lsim_synth_cfg *c, int tp, int pp, int dp, int ep)
{
    lsim_synth_cfg_default(c);
    lsim_model_shape m = {"toymoe", 4, 256, 512, 4, 64, 256, 1024, 2, LSIM_MLP_SWIGLU, LSIM_NORM_RMS, 1, 1, 1,
                          8, 2, 1, 128, 1, 1};
    c->model = m;
    c->tp = tp, c->pp = pp, c->dp = dp, c->ep = ep;
    c->seq_parallel = tp > 1;
    c->micro_batch = 2;
    c->global_batch = 2 * dp * 2;
    c->mem_check = 0;
}

static const char *nm(const lsim_graph *g, size_t v) { return lsim_strtab_get(g->strings, g->name[v]); }

static int moe_layers(const lsim_model_shape *m)
{
    int n = 0;
    for (int l = 0; l < m->layers; l++) n += lsim_model_moe_layer(m, l);
    return n;
}

static void test_balanced(void)
{
    lsim_synth_cfg c;
    cfg_of(&c, 2, 1, 4, 4);
    const lsim_model_shape *M = &c.model;
    int64_t tok[8];
    /* the EP group's tokens: EP ranks x b s / TP; each expert its share */
    int64_t group = (int64_t)c.ep * c.micro_batch * M->seq / c.tp, each = group * M->top_k / M->experts;
    CHECK_I64(lsim_synth_expert_tokens(&c, 0, 0, 1, 0, tok), group * M->top_k);
    for (int e = 0; e < M->experts; e++) CHECK_I64(tok[e], each);
    CHECK(moe_layers(M) == 3 && !lsim_model_moe_layer(M, 0));
    lsim_graph *g = NULL;
    lsim_err err = {0};
    CHECK_MSG(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0, "%s", err.msg);
    if (!g) return;
    lsim_ns want = lsim_cost_bgemm(&c.gpu, M->experts / c.ep, (double)each, 2.0 * M->expert_ffn, M->hidden, 2);
    size_t n = 0, dense = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (g->kind[v] != LSIM_N_KERNEL) continue;
        if (!strcmp(nm(g, v), "L1.mb0.fwd.expert_fc1_gemm")) {
            n++;
            CHECK_I64(g->dur[v], want);
        }
        if (!strcmp(nm(g, v), "L0.mb0.fwd.fc1_gemm")) dense++;
        CHECK(strcmp(nm(g, v), "L0.mb0.fwd.expert_fc1_gemm") && strcmp(nm(g, v), "L1.mb0.fwd.fc1_gemm"));
    }
    CHECK_I64(n, 1);
    CHECK_I64(dense, 1);
    lsim_graph_free(g);
}

/* skewed routing: the sorted loads are the Zipf shares n r^-z / H (each
 * within one of its floor: largest remainder), the total exact, the same
 * draw for the same (seed, layer, micro-batch), another order for others */
static void test_skew(void)
{
    lsim_synth_cfg c;
    cfg_of(&c, 1, 1, 4, 4);
    c.routing_skew = 1.2;
    const lsim_model_shape *M = &c.model;
    int E = M->experts;
    int64_t a[8], b[8], s[8];
    int64_t n = (int64_t)c.ep * c.micro_batch * M->seq * M->top_k;
    CHECK_I64(lsim_synth_expert_tokens(&c, 0, 0, 1, 0, a), n);
    double H = 0;
    for (int r = 1; r <= E; r++) H += pow(r, -c.routing_skew);
    memcpy(s, a, sizeof s);
    int64_t sum = 0;
    for (int i = 0; i < E; i++) /* sort descending */
        for (int j = i + 1; j < E; j++)
            if (s[j] > s[i]) {
                int64_t t = s[i];
                s[i] = s[j], s[j] = t;
            }
    for (int r = 0; r < E; r++) {
        double x = (double)n * pow(r + 1, -c.routing_skew) / H;
        CHECK_MSG(s[r] == (int64_t)floor(x) || s[r] == (int64_t)floor(x) + 1, "rank %d: %lld tokens, Zipf share %.2f", r,
                  (long long)s[r], x);
        sum += s[r];
    }
    CHECK_I64(sum, n);
    CHECK_I64(lsim_synth_expert_tokens(&c, 0, 0, 1, 0, b), n);
    CHECK(!memcmp(a, b, sizeof a));
    int differ = 0;
    for (int mb = 1; mb < 6; mb++) {
        lsim_synth_expert_tokens(&c, 0, 0, 1, mb, b);
        differ += memcmp(a, b, sizeof a) != 0;
    }
    CHECK(differ > 0);
    /* the GPUs of a group get different loads: their expert GEMMs differ */
    lsim_graph *g0 = NULL, *g1 = NULL;
    lsim_err err = {0};
    CHECK(lsim_synth_gpu(&c, 0, NULL, &g0, &err) == 0 && lsim_synth_gpu(&c, 1, NULL, &g1, &err) == 0);
    if (g0 && g1) CHECK(!lsim_graph_same_structure(g0, g1));
    lsim_graph_free(g0);
    lsim_graph_free(g1);
    c.routing_skew = -1;
    lsim_err e2 = {0};
    CHECK(lsim_synth_check(&c, &e2) == LSIM_EARG && strstr(e2.msg, "--routing-skew -1: not a Zipf exponent"));
}

static void test_a2a_bytes(int tp, int dp, int ep)
{
    lsim_synth_cfg c;
    cfg_of(&c, tp, 2, dp, ep);
    const lsim_model_shape *M = &c.model;
    lsim_graph *g = NULL;
    lsim_err err = {0};
    CHECK_MSG(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0, "%s", err.msg);
    if (!g) return;
    int m = lsim_synth_microbatches(&c), mine = 0;
    for (int l = 0; l < M->layers / c.pp; l++) mine += lsim_model_moe_layer(M, l); /* stage 0's layers */
    int64_t per = (int64_t)c.micro_batch * M->seq / c.tp * M->top_k * M->hidden * 2;
    /* and before each forward's dispatch the tokens-per-expert counts, E
     * int64 values, for the host to size the dropless buffers */
    int64_t counts = (int64_t)M->experts * 8, want = (int64_t)mine * m * (4 * per + counts), got = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (g->coll[v] < 0) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        if (ci->kind != LSIM_COLL_ALLTOALL) continue;
        CHECK_I64(ci->bytes, strstr(nm(g, v), "moe_counts") ? counts : per);
        CHECK_I64(ci->group_size, ep);
        CHECK_STR(lsim_strtab_get(g->strings, ci->pg_name), "ep:0:0");
        got += ci->bytes;
    }
    CHECK_MSG(got == want, "TP %d DP %d EP %d: all-to-all bytes %lld, formula %lld", tp, dp, ep, (long long)got,
              (long long)want);
    lsim_graph_free(g);
}

/* A GPU whose GEMMs run at exactly their peak (test_models' exact_gpu). */
static void exact_gpu(lsim_gpu_spec *g)
{
    lsim_gpu_spec_builtin("h100", g, NULL);
    g->peak_flops = 1e11;
    g->sms = 0;
    g->gemm_eff_max = 1, g->gemm_eff_half = 1;
    g->attn_eff_max = 1, g->attn_eff_half = 1;
    g->mem_bw = 1e14, g->mem_eff = 1;
    g->kernel_min_ns = 1;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static void test_flops(int tp, int pp, int dp, int ep, int etp)
{
    lsim_synth_cfg c;
    cfg_of(&c, tp, pp, dp, ep);
    c.etp = etp;
    exact_gpu(&c.gpu);
    const lsim_model_shape *M = &c.model;
    double h = M->hidden, H = M->heads, d = M->head_dim, KV = M->kv_heads, fe = M->expert_ffn, E = M->experts;
    double attn = h * (H + 2 * KV) * d + H * d * h, active = M->vocab * h;
    for (int l = 0; l < M->layers; l++)
        active += attn + (lsim_model_moe_layer(M, l) ? h * E + (M->top_k + M->shared_experts) * 3 * h * fe
                                                     : 3 * h * M->ffn);
    double tokens = (double)c.global_batch * M->seq, want = 6 * active * tokens;
    size_t n = lsim_synth_ngpus(&c);
    lsim_graph **g = calloc(n, sizeof *g);
    lsim_err err = {0};
    int rc = lsim_synth_job(&c, g, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    double gemm = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        for (size_t v = 0; v < g[i]->n; v++) {
            const char *s = nm(g[i], v);
            if (g[i]->kind[v] == LSIM_N_KERNEL && (ends_with(s, "_gemm") || ends_with(s, "_dgrad") || ends_with(s, "_wgrad")))
                gemm += (double)g[i]->dur[v] * 1e-9 * c.gpu.peak_flops;
        }
        lsim_graph_free(g[i]);
    }
    free(g);
    CHECK_MSG(fabs(gemm - want) <= 1e-5 * want,
              "TP %d PP %d DP %d EP %d ETP %d: graph %.6e GEMM FLOPs, 6 N_active tokens %.6e", tp, pp, dp, ep, etp, gemm,
              want);
}

/* expert parameters per GPU divided by EP: the estimate's parameters at EP
 * 1 and EP 4 differ by the stage's MoE layers x (E - E / 4) experts of 3 h fe */
static void test_memory(void)
{
    lsim_synth_cfg c;
    lsim_synth_mem a, b;
    cfg_of(&c, 1, 1, 4, 1);
    lsim_synth_memory(&c, &a);
    c.ep = 4;
    lsim_synth_memory(&c, &b);
    const lsim_model_shape *M = &c.model;
    double want = moe_layers(M) * (M->experts - M->experts / 4.0) * 3.0 * M->hidden * M->expert_ffn;
    CHECK_MSG(fabs((a.params - b.params) - want) < 0.5, "params %.0f - %.0f, formula %.0f", a.params, b.params, want);
    CHECK(b.total < a.total && b.total > 0);
}

/* Expert-tensor parallelism (ETP 2, EP 2, DP 8: EDP 2): the routed
 * experts' parameters per GPU halve; per MoE layer and micro-batch, on
 * the ETP group (GPUs 0 and 1) an all-gather of the rows the GPU received
 * (balanced: its tokens x top_k, as many as it dispatched) and a
 * reduce-scatter of the group's (ETP x that), forward and backward; EP
 * groups take every ETP-th GPU (GPU 0's: 0 and 2); the gradients reduce
 * over the 8 / (2 x 2) = 2 GPUs with the same place in both. */
static void test_etp(void)
{
    lsim_synth_cfg c;
    lsim_synth_mem a, b;
    cfg_of(&c, 1, 1, 8, 2);
    c.dist_opt = 1;
    lsim_synth_memory(&c, &a);
    c.etp = 2;
    lsim_synth_memory(&c, &b);
    const lsim_model_shape *M = &c.model;
    double h = M->hidden, fe = M->expert_ffn;
    double half = moe_layers(M) * (M->experts / 2.0) * 3.0 * h * fe / 2;
    CHECK_MSG(fabs((a.params - b.params) - half) < 0.5, "params %.0f - %.0f, formula %.0f", a.params, b.params, half);
    lsim_graph *g = NULL;
    lsim_err err = {0};
    CHECK_MSG(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0, "%s", err.msg);
    if (!g) return;
    int64_t mine = (int64_t)c.micro_batch * M->seq * M->top_k * (int64_t)h * 2;
    size_t ag = 0, rs = 0, a2a = 0, edp = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (g->coll[v] < 0) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        const char *pg = lsim_strtab_get(g->strings, ci->pg_name);
        if (!strcmp(pg, "etp:0:0")) {
            CHECK_I64(ci->group_size, 2);
            if (ci->kind == LSIM_COLL_ALLGATHER) {
                ag++;
                CHECK_I64(ci->bytes, mine);
            }
            if (ci->kind == LSIM_COLL_REDUCESCATTER) {
                rs++;
                CHECK_I64(ci->bytes, 2 * mine);
            }
        } else if (!strcmp(pg, "ep:0:0") && ci->kind == LSIM_COLL_ALLTOALL && ci->bytes == mine) {
            a2a++;
        } else if (!strcmp(pg, "edp:0:0")) {
            CHECK_I64(ci->group_size, 2);
            edp += ci->kind == LSIM_COLL_REDUCESCATTER;
        }
    }
    int mbs = c.global_batch / (c.micro_batch * c.dp);
    CHECK_I64(ag, (size_t)(2 * moe_layers(M) * mbs));
    CHECK_I64(rs, (size_t)(2 * moe_layers(M) * mbs));
    CHECK_I64(a2a, (size_t)(4 * moe_layers(M) * mbs));
    CHECK_I64(edp, (size_t)moe_layers(M));
    lsim_graph_free(g);
    /* refused: ETP not dividing the expert FFN, EP x ETP not dividing the stage */
    c.etp = 3;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--etp 3"));
    c.etp = 16;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "EP x ETP"));
}

/* the routed experts' gradients: with the distributed optimizer one
 * reduce-scatter per MoE layer over the expert-data-parallel group (DP x TP
 * / EP GPUs) of the GPU's E / EP experts' fp32 gradients, and the bf16
 * all-gather of one shard after the optimizer */
static void test_edp(void)
{
    lsim_synth_cfg c;
    cfg_of(&c, 1, 1, 8, 2);
    c.dist_opt = 1;
    const lsim_model_shape *M = &c.model;
    lsim_graph *g = NULL;
    lsim_err err = {0};
    CHECK_MSG(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0, "%s", err.msg);
    if (!g) return;
    int edp = 8 / 2;
    double ex = (double)M->experts / 2 * 3.0 * M->hidden * M->expert_ffn;
    size_t rs = 0, ag = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (g->coll[v] < 0) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        if (strcmp(lsim_strtab_get(g->strings, ci->pg_name), "edp:0:0")) continue;
        CHECK_I64(ci->group_size, edp);
        if (ci->kind == LSIM_COLL_REDUCESCATTER) {
            rs++;
            CHECK_I64(ci->bytes, (int64_t)(ex * 4));
        }
        if (ci->kind == LSIM_COLL_ALLGATHER) {
            ag++;
            CHECK_I64(ci->bytes, (int64_t)(ex * 2 / edp));
        }
    }
    CHECK_I64(rs, (size_t)moe_layers(M));
    CHECK_I64(ag, (size_t)moe_layers(M));
    lsim_graph_free(g);
}

static void expect_refused(lsim_synth_cfg *c, const char *needle)
{
    lsim_err err = {0};
    CHECK_MSG(lsim_synth_check(c, &err) == LSIM_EARG, "accepted (%s)", needle);
    CHECK_MSG(strstr(err.msg, needle) && !strchr(err.msg, '\n'), "'%s' not in: %s", needle, err.msg);
}

static void test_refusals(void)
{
    lsim_synth_cfg c;
    cfg_of(&c, 1, 1, 3, 3);
    expect_refused(&c, "--ep 3: the 8 experts of model toymoe are not divisible by EP = 3");
    cfg_of(&c, 1, 1, 4, 4);
    c.model.top_k = 9;
    expect_refused(&c, "top_k: 9 experts per token");
    cfg_of(&c, 1, 1, 2, 4);
    expect_refused(&c, "--ep 4: EP does not divide the 2 GPUs of a stage");
    cfg_of(&c, 2, 1, 2, 2);
    c.seq_parallel = 0;
    expect_refused(&c, "need --sequence-parallel");
    /* --dp-cost: a replica holding half an EP group; routing drawn per group */
    cfg_of(&c, 1, 1, 2, 4);
    c.dp_cost = 8;
    expect_refused(&c, "--dp-cost: the 2 GPUs of a stage synthesized (TP x CP x DP) are no whole number of EP x ETP = 4");
    cfg_of(&c, 1, 1, 4, 4);
    c.dp_cost = 8, c.routing_skew = 1.0;
    expect_refused(&c, "--dp-cost with routing drawn per EP group");
    cfg_of(&c, 2, 1, 2, 2);
    c.seq_parallel = 0;
    lsim_model_builtin("llama3-8b", &c.model, NULL);
    expect_refused(&c, "--ep 2: model llama3-8b has no experts");
}

/* The whole EP job matches and runs; and, with balanced routing, fewer
 * replicas with --dp-cost give its step to the nanosecond (the search's
 * way, search.c): the replicas hold whole EP x ETP blocks, each routing
 * as the others. TP 2 with SP, PP 2, EP 4 of DP 8 (2 replicas of 8); TP 1,
 * EP 2, ETP 2 of DP 8 (4 of 8). */
static void test_job(void)
{
    static const struct {
        int tp, pp, dp, ep, etp, dp_sim;
    } k[] = {{2, 2, 8, 4, 1, 2}, {1, 1, 8, 2, 2, 4}};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        lsim_synth_cfg c;
        lsim_err err = {0};
        lsim_ns whole = 0, part = 0;
        cfg_of(&c, k[i].tp, k[i].pp, k[i].dp, k[i].ep);
        c.etp = k[i].etp;
        if (job_span(&c, &whole, &err)) {
            CHECK_MSG(0, "%s", err.msg);
            continue;
        }
        c.dp_cost = c.dp, c.dp = k[i].dp_sim, c.global_batch = c.global_batch / k[i].dp * k[i].dp_sim;
        CHECK_MSG(lsim_synth_check(&c, &err) == 0, "%s", err.msg);
        if (job_span(&c, &part, &err)) {
            CHECK_MSG(0, "%s", err.msg);
            continue;
        }
        CHECK_MSG(part == whole && whole > 0, "TP %d PP %d DP %d EP %d ETP %d: %d replicas with --dp-cost %lld ns, whole %lld ns",
                  k[i].tp, k[i].pp, k[i].dp, k[i].ep, k[i].etp, k[i].dp_sim, (long long)part, (long long)whole);
    }
}

int main(void)
{
    test_balanced();
    test_skew();
    test_a2a_bytes(1, 4, 4);
    test_a2a_bytes(2, 4, 8);
    test_a2a_bytes(1, 8, 2);
    test_flops(1, 1, 1, 1, 1);
    test_flops(2, 2, 2, 4, 1);
    test_flops(1, 2, 4, 2, 1);
    test_flops(1, 1, 8, 2, 2);
    test_flops(2, 2, 4, 2, 4);
    test_memory();
    test_etp();
    test_edp();
    test_refusals();
    test_job();
    return check_result("test_synth_moe");
}
