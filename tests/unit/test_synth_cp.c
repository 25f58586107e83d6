/* Context parallelism in synthesized jobs (synth.h's cp, docs/synthesis.md
 * "Context parallelism"; issue 36). Expected values come from formulas
 * written here:
 * - a layer's forward runs CP attention blocks, each the causal attention
 *   of seq / CP queries and keys, so a rank's attention FLOPs are CP x 2 b
 *   H d (s / CP)^2 (causal: half of 4 b H d n^2) = 2 b H d s^2 / CP: doubling
 *   CP halves them;
 * - the ring: CP - 1 K/V transfers of 2 x (s / CP) x b x H / TP x d x 2
 *   bytes per layer forward, CP - 1 K/V and CP dK/dV transfers backward,
 *   to the next rank of the CP group and from the previous one;
 * - the non-attention kernels run on s / CP tokens (the QKV GEMM's time is
 *   the cost model's for b s / CP rows);
 * - the gradients are all-reduced over DP x CP GPUs;
 * - the whole job matches and runs; CP not dividing the sequence is
 *   refused naming --cp and the sequence. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lumosim/engine.h"
#include "lumosim/job.h"
#include "lumosim/synth.h"

static void cfg_of(lsim_synth_cfg *c, int tp, int pp, int dp, int cp)
{
    lsim_synth_cfg_default(c);
    lsim_model_builtin("gpt3-15b", &c->model, NULL);
    c->model.layers = 4;
    c->model.seq = 8192;
    c->tp = tp, c->pp = pp, c->dp = dp, c->cp = cp;
    c->micro_batch = 1;
    c->global_batch = dp;
    c->mem_check = 0;
}

static const char *nm(const lsim_graph *g, size_t v) { return lsim_strtab_get(g->strings, g->name[v]); }

/* the attention FLOPs of GPU 0's first layer's forward, by the formula,
 * over the blocks the graph holds; checks each block's duration and the
 * ring's transfers on the way */
static double layer_attn_flops(int cp)
{
    lsim_synth_cfg c;
    cfg_of(&c, 2, 1, 1, cp);
    lsim_err err;
    lsim_graph *g = NULL;
    CHECK(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0);
    if (!g) return 0;
    const lsim_model_shape *M = &c.model;
    double b = c.micro_batch, H = (double)M->heads / c.tp, d = M->head_dim, n = (double)M->seq / cp;
    lsim_ns blk = lsim_cost_attention(&c.gpu, c.micro_batch, M->heads / c.tp, M->seq / cp, M->head_dim, 1, 0);
    int64_t kv = (int64_t)(2 * n * b * H * d * 2);
    size_t blocks = 0, fsend = 0, bsend = 0, brecv = 0, dsend = 0;
    char next[32], prev[32];
    snprintf(next, sizeof next, "p2p:0->%d#", 2 % (2 * cp)); /* GPU 0 is cp 0: next cp 1 = rank TP */
    snprintf(prev, sizeof prev, "p2p:%d->0#", 2 * (cp - 1));
    for (size_t v = 0; v < g->n; v++) {
        if (g->kind[v] != LSIM_N_KERNEL) continue;
        const char *s = nm(g, v);
        if (!strcmp(s, "L0.mb0.fwd.attn")) {
            blocks++;
            CHECK(g->dur[v] == blk);
        }
        if (g->coll[v] < 0 || strncmp(s, "L0.mb0.", 7)) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        const char *pg = lsim_strtab_get(g->strings, ci->pg_name);
        if (ci->kind == LSIM_COLL_SEND) {
            CHECK_I64(ci->bytes, kv);
            CHECK(!strncmp(pg, next, strlen(next)));
            if (strstr(s, ".fwd.cp_kv")) fsend++;
            if (strstr(s, ".bwd.cp_kv")) bsend++;
            if (strstr(s, ".bwd.cp_dkv")) dsend++;
        }
        if (ci->kind == LSIM_COLL_RECV) {
            CHECK(!strncmp(pg, prev, strlen(prev)));
            if (strstr(s, ".bwd.")) brecv++;
        }
    }
    CHECK_I64(blocks, (size_t)cp);
    CHECK_I64(fsend, (size_t)cp - 1);
    CHECK_I64(bsend, (size_t)cp - 1);
    CHECK_I64(dsend, (size_t)cp);
    CHECK_I64(brecv, (size_t)(2 * cp - 1));
    /* the QKV GEMM on the rank's b s / CP tokens */
    size_t v = 0;
    while (v < g->n && (g->kind[v] != LSIM_N_KERNEL || strcmp(nm(g, v), "L0.mb0.fwd.qkv_gemm"))) v++;
    double A = (double)M->heads * M->head_dim;
    CHECK(v < g->n && g->dur[v] == lsim_cost_gemm(&c.gpu, b * n, 3 * A / c.tp, M->hidden, 2));
    lsim_graph_free(g);
    return (double)blocks * 2 * b * H * d * n * n; /* causal: half of 4 b H d n^2 a block */
}

static void test_attention_halves(void)
{
    double f2 = layer_attn_flops(2), f4 = layer_attn_flops(4), f8 = layer_attn_flops(8);
    CHECK_MSG(f2 > 0 && f4 * 2 == f2 && f8 * 2 == f4, "FLOPs %.4g %.4g %.4g", f2, f4, f8);
}

/* Synthesize and simulate c's job: the step (the last GPU end), and the
 * group size of GPU 0's "dp:" collectives (0: none) */
static lsim_ns run_job(const lsim_synth_cfg *c, int *dp_group)
{
    size_t n = lsim_synth_ngpus(c);
    lsim_graph **g = calloc(n, sizeof *g);
    lsim_engine **e = calloc(n, sizeof *e);
    lsim_ns **w = calloc(n, sizeof *w), span = 0;
    lsim_job *j = NULL;
    lsim_err err;
    int rc = lsim_synth_job(c, g, &err);
    *dp_group = 0;
    for (size_t v = 0; !rc && v < g[0]->n; v++) {
        if (g[0]->coll[v] < 0) continue;
        const lsim_coll_info *ci = &g[0]->colls[g[0]->coll[v]];
        if (!strncmp(lsim_strtab_get(g[0]->strings, ci->pg_name), "dp:", 3)) *dp_group = (int)ci->group_size;
    }
    if (!rc) rc = lsim_job_match(g, n, &j, &err);
    for (size_t i = 0; !rc && i < n; i++) {
        rc = lsim_engine_new(g[i], &e[i], &err);
        w[i] = malloc(g[i]->n * sizeof **w);
    }
    if (!rc) rc = lsim_job_run(j, e, w, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    for (size_t i = 0; !rc && i < n; i++)
        for (size_t v = 0; v < g[i]->n; v++)
            if (w[i][v] + g[i]->dur[v] > span) span = w[i][v] + g[i]->dur[v];
    for (size_t i = 0; i < n; i++) {
        lsim_engine_free(e[i]);
        lsim_graph_free(g[i]);
        free(w[i]);
    }
    free(g), free(e), free(w);
    lsim_job_free(j);
    return span;
}

static void test_job(void)
{
    lsim_synth_cfg c;
    cfg_of(&c, 2, 2, 2, 2);
    c.global_batch = 4;
    CHECK_I64(lsim_synth_ngpus(&c), 16);
    int grp;
    CHECK(run_job(&c, &grp) > 0);
    CHECK_I64(grp, 4); /* the gradients' all-reduce spans DP x CP = 4 GPUs */
}

/* --dp-cost with CP (the 1,024-GPU Megatron-Bridge 405B rows): one
 * replica of the TP 2 PP 2 CP 2 job whose data-parallel collectives are
 * those of 4 replicas, timed at the GPUs' places in the 32-GPU job, is the
 * 32-GPU job's step (replicas are symmetric; the all-reduces after the
 * flush, as the --dp-cost test of test_synth_options does) */
static void test_dp_cost(void)
{
    lsim_synth_cfg c;
    cfg_of(&c, 2, 2, 4, 2);
    c.grad_reduce = LSIM_GR_AFTER, c.dist_opt = 1;
    c.global_batch = 4 * 4; /* 4 micro-batches per pipeline */
    int g4, g1;
    lsim_ns full = run_job(&c, &g4);
    c.dp = 1, c.dp_cost = 4, c.global_batch = 4;
    lsim_err err;
    CHECK_MSG(lsim_synth_check(&c, &err) == 0, "%s", err.msg);
    lsim_ns one = run_job(&c, &g1);
    CHECK_I64(g4, 8);
    CHECK_I64(g1, 2); /* simulated: the replica's CP pair; timed for 8 */
    CHECK_MSG(full > 0 && llabs(one - full) <= 100, "--dp-cost 4 at DP 1: %lld ns, DP 4: %lld ns", (long long)one,
              (long long)full);
}

/* torchtitan's CP table: FSDP 1 x CP 8 still shards over the 8 CP ranks
 * (the dp_shard_cp mesh) */
static void test_fsdp_over_cp(void)
{
    lsim_synth_cfg c;
    cfg_of(&c, 1, 1, 1, 4);
    c.fsdp = 1;
    lsim_err err;
    lsim_graph *g = NULL;
    CHECK(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0);
    if (!g) return;
    size_t rs = 0, dp = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (g->coll[v] < 0) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        const char *pg = lsim_strtab_get(g->strings, ci->pg_name);
        if (ci->kind == LSIM_COLL_REDUCESCATTER && !strcmp(pg, "fsdp:0:0:0")) {
            rs++;
            CHECK_I64(ci->group_size, 4);
        }
        if (!strncmp(pg, "dp:", 3)) dp++;
    }
    CHECK_I64(rs, (size_t)c.model.layers + 2);
    CHECK_I64(dp, 0);
    lsim_graph_free(g);
}

/* grouped-query attention: the ring passes the KV heads' K and V (Llama 3
 * 8B: 8 of its 32 heads), 2 x (s / CP) x b x kv_heads / TP x d x 2 bytes */
static void test_gqa_blocks(void)
{
    lsim_synth_cfg c;
    lsim_synth_cfg_default(&c);
    CHECK(lsim_model_builtin("llama3-8b", &c.model, NULL) == 0);
    c.model.layers = 2;
    c.tp = 2, c.pp = 1, c.dp = 1, c.cp = 4, c.micro_batch = 1, c.global_batch = 1, c.mem_check = 0;
    lsim_err err;
    lsim_graph *g = NULL;
    CHECK(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0);
    if (!g) return;
    const lsim_model_shape *M = &c.model;
    CHECK_I64(M->kv_heads, 8);
    int64_t kv = 2 * (int64_t)(M->seq / c.cp) * (M->kv_heads / c.tp) * M->head_dim * 2;
    size_t sends = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (g->coll[v] < 0 || !strstr(nm(g, v), "cp_kv_send")) continue;
        CHECK_I64(g->colls[g->coll[v]].bytes, kv);
        sends++;
    }
    CHECK(sends > 0);
    lsim_graph_free(g);
}

static void test_bad(void)
{
    lsim_synth_cfg c;
    lsim_err err;
    cfg_of(&c, 1, 1, 1, 3); /* 8192 tokens: not in 2 x 3 chunks */
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--cp 3") && strstr(err.msg, "8192"));
    cfg_of(&c, 1, 1, 1, 2);
    c.attention = LSIM_ATTN_UNFUSED;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--cp with --attention unfused"));
    cfg_of(&c, 1, 1, 1, 2);
    c.gpus = 1;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--gpus 1"));
    c.gpus = 2;
    CHECK(lsim_synth_check(&c, &err) == 0);
}

int main(void)
{
    test_attention_halves();
    test_job();
    test_dp_cost();
    test_fsdp_over_cp();
    test_gqa_blocks();
    test_bad();
    return check_result("test_synth_cp");
}
