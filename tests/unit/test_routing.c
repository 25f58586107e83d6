/* Routing of a MoE layer's tokens that is not balanced (routing.c,
 * lsim_synth_routing_load; docs/synthesis.md "Skewed routing"; issue 36).
 * Expected values come from formulas written here:
 * - a measured histogram alone: each expert's tokens are the largest-
 *   remainder rounding of routed x its share (shares computed here from the
 *   file's counts), per MoE layer when the file has a row per MoE layer
 *   (the dense first layer has none), the total exact;
 * - Dirichlet(A E p): the total exact every draw; over many draws each
 *   expert's mean share is p_e within 4 standard errors of the Dirichlet's
 *   own variance p (1 - p) / (A E + 1); a large A gives p within a token
 *   or two; a small A a most-loaded expert far above p's; the same
 *   (seed, layer, mb) the same draw; the spread of the GPUs' expert GEMMs;
 * - a capacity factor: each expert cut to EP x ceil(T k / E C) tokens, the
 *   dispatch bytes the kept fraction of the dropless ones; padded, every
 *   expert at capacity, E x capacity x h x 2 bytes, no counts exchange;
 * - the file's refusals, each one line naming the file and the line;
 * - the configuration's refusals (two laws at once, a negative
 *   concentration, a dense model, a row count that is neither 1 nor the
 *   MoE layers). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "lumosim/synth.h"

/* test_synth_moe's toy model: 4 layers, the first dense; 8 experts, top-2 */
static void cfg_of(lsim_synth_cfg *c)
{
    lsim_synth_cfg_default(c);
    lsim_model_shape m = {"toymoe", 4, 256, 512, 4, 64, 256, 1024, 2, LSIM_MLP_SWIGLU, LSIM_NORM_RMS, 1, 1, 1,
                          8, 2, 1, 128, 1, 1};
    c->model = m;
    c->tp = 1, c->pp = 1, c->dp = 4, c->ep = 4;
    c->micro_batch = 2;
    c->global_batch = 16;
    c->mem_check = 0;
}

/* routed x w_e / W rounded by largest remainder, written here */
static void expect_apportion(int64_t routed, int E, const double *w, int64_t *out)
{
    double W = 0, rem[64];
    for (int e = 0; e < E; e++) W += w[e];
    int64_t left = routed;
    for (int e = 0; e < E; e++) {
        double x = (double)routed * w[e] / W;
        out[e] = (int64_t)floor(x), rem[e] = x - floor(x), left -= out[e];
    }
    while (left-- > 0) {
        int b = 0;
        for (int e = 1; e < E; e++)
            if (rem[e] > rem[b]) b = e;
        out[b]++, rem[b] = -1;
    }
}

static void test_hist(void)
{
    lsim_synth_cfg c;
    cfg_of(&c);
    char p1[64], p3[64];
    /* one row of counts, with a comment and a blank line */
    check_write_tmp(p1, sizeof p1, "lsim_routing", "# tokens per expert, measured\n\n10, 30 5 5\t0,50,100,0  # a comment\n");
    double *h = NULL;
    int rows = 0;
    lsim_err err = {0};
    CHECK_MSG(lsim_synth_routing_load(p1, &c.model, &h, &rows, &err) == 0, "%s", err.msg);
    CHECK_I64(rows, 1);
    const double counts[8] = {10, 30, 5, 5, 0, 50, 100, 0};
    for (int e = 0; h && e < 8; e++) CHECK(fabs(h[e] - counts[e] / 200.0) < 1e-15);
    c.routing_hist = h, c.routing_hist_rows = rows;
    CHECK_MSG(lsim_synth_check(&c, &err) == 0, "%s", err.msg);
    int64_t n = (int64_t)c.ep * c.micro_batch * c.model.seq * c.model.top_k, tok[8], want[8];
    expect_apportion(n, 8, counts, want);
    for (int layer = 1; layer < 4; layer++)
        for (int mb = 0; mb < 3; mb++) {
            CHECK_I64(lsim_synth_expert_tokens(&c, 0, 1, layer, mb, tok), n);
            CHECK(!memcmp(tok, want, sizeof tok));
        }
    CHECK_I64(tok[4] + tok[7], 0); /* experts that got nothing get nothing */
    /* a row per MoE layer (3: layers 1..3); layer l uses row l - 1 */
    check_write_tmp(p3, sizeof p3, "lsim_routing", "1 1 1 1 1 1 1 1\n8 0 0 0 0 0 0 0\n1 2 3 4 5 6 7 8\n");
    double *h3 = NULL;
    CHECK_MSG(lsim_synth_routing_load(p3, &c.model, &h3, &rows, &err) == 0, "%s", err.msg);
    CHECK_I64(rows, 3);
    c.routing_hist = h3, c.routing_hist_rows = rows;
    CHECK_MSG(lsim_synth_check(&c, &err) == 0, "%s", err.msg);
    const double r1[8] = {1, 1, 1, 1, 1, 1, 1, 1}, r2[8] = {8, 0, 0, 0, 0, 0, 0, 0}, r3[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const double *rr[3] = {r1, r2, r3};
    for (int layer = 1; layer < 4; layer++) {
        expect_apportion(n, 8, rr[layer - 1], want);
        CHECK_I64(lsim_synth_expert_tokens(&c, 0, 0, layer, 1, tok), n);
        CHECK_MSG(!memcmp(tok, want, sizeof tok), "layer %d", layer);
    }
    /* two rows: neither one nor one per MoE layer */
    c.routing_hist_rows = 2;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--routing-hist: 2 rows: give 1"));
    /* with a Zipf exponent: two laws */
    c.routing_hist_rows = 3, c.routing_skew = 1;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--routing-skew with --routing-hist"));
    free(h), free(h3);
    unlink(p1), unlink(p3);
}

/* the share each expert got over draws (layers x micro-batches x groups) */
static void mean_shares(lsim_synth_cfg *c, int draws, double *mean, double *max_share)
{
    int64_t tok[8];
    memset(mean, 0, 8 * sizeof *mean);
    *max_share = 0;
    for (int k = 0; k < draws; k++) {
        int64_t n = lsim_synth_expert_tokens(c, 0, k % 7, 1 + k % 3, k / 21, tok), sum = 0;
        for (int e = 0; e < 8; e++) {
            sum += tok[e], mean[e] += (double)tok[e] / (double)n / draws;
            if ((double)tok[e] / (double)n > *max_share) *max_share = (double)tok[e] / (double)n;
        }
        CHECK_I64(sum, n);
    }
}

static void test_dirichlet(void)
{
    lsim_synth_cfg c;
    cfg_of(&c);
    const double p[8] = {0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05};
    c.routing_hist = p, c.routing_hist_rows = 1;
    lsim_err err = {0};
    int draws = 2100;
    double mean[8], mx;
    const double As[3] = {0.5, 2, 20};
    for (int a = 0; a < 3; a++) {
        c.routing_dirichlet = As[a];
        CHECK_MSG(lsim_synth_check(&c, &err) == 0, "%s", err.msg);
        mean_shares(&c, draws, mean, &mx);
        for (int e = 0; e < 8; e++) {
            double se = sqrt(p[e] * (1 - p[e]) / (As[a] * 8 + 1) / draws);
            CHECK_MSG(fabs(mean[e] - p[e]) < 4 * se + 1e-4, "A %g: expert %d: mean share %.4f, expected %.4f (se %.4f)",
                      As[a], e, mean[e], p[e], se);
        }
        if (a == 0) CHECK_MSG(mx > 0.8, "A 0.5: the most loaded expert's share is at most %.3f", mx);
    }
    /* a large concentration: the histogram itself, within a token or two */
    c.routing_dirichlet = 1e7;
    int64_t tok[8], want[8], n = lsim_synth_expert_tokens(&c, 0, 0, 1, 0, tok);
    expect_apportion(n, 8, p, want);
    for (int e = 0; e < 8; e++) CHECK_MSG(llabs(tok[e] - want[e]) <= 2, "expert %d: %lld, expected %lld", e,
                                          (long long)tok[e], (long long)want[e]);
    /* uniform p (no histogram): repeatable, varying with the micro-batch */
    c.routing_hist = NULL, c.routing_hist_rows = 0, c.routing_dirichlet = 1;
    int64_t a1[8], b1[8];
    lsim_synth_expert_tokens(&c, 0, 0, 2, 3, a1);
    lsim_synth_expert_tokens(&c, 0, 0, 2, 3, b1);
    CHECK(!memcmp(a1, b1, sizeof a1));
    lsim_synth_expert_tokens(&c, 0, 0, 2, 4, b1);
    CHECK(memcmp(a1, b1, sizeof a1));
    c.seed = 7;
    lsim_synth_expert_tokens(&c, 0, 0, 2, 3, b1);
    CHECK(memcmp(a1, b1, sizeof a1));
    /* the GPUs of a group get different loads: their expert GEMMs differ */
    lsim_graph *g0 = NULL, *g1 = NULL;
    CHECK(lsim_synth_gpu(&c, 0, NULL, &g0, &err) == 0 && lsim_synth_gpu(&c, 1, NULL, &g1, &err) == 0);
    if (g0 && g1) CHECK(!lsim_graph_same_structure(g0, g1));
    lsim_graph_free(g0);
    lsim_graph_free(g1);
    /* refusals */
    c.routing_dirichlet = -1;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--routing-dirichlet -1: not a Dirichlet"));
    c.routing_dirichlet = 1, c.routing_skew = 2;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--routing-skew with --routing-dirichlet"));
    c.routing_skew = 0;
    lsim_model_builtin("llama3-8b", &c.model, NULL);
    c.ep = 1;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--routing-dirichlet: model llama3-8b has no experts"));
}

static const char *gname(const lsim_graph *g, size_t v) { return lsim_strtab_get(g->strings, g->name[v]); }

/* the bytes of GPU 0's first collective named `what` (-1: none) */
static int64_t coll_bytes(const lsim_synth_cfg *c, const char *what)
{
    lsim_graph *g = NULL;
    lsim_err err = {0};
    int64_t b = -1;
    CHECK_MSG(lsim_synth_gpu(c, 0, NULL, &g, &err) == 0, "%s", err.msg);
    for (size_t v = 0; g && v < g->n && b < 0; v++)
        if (g->coll[v] >= 0 && strstr(gname(g, v), what)) b = g->colls[g->coll[v]].bytes;
    lsim_graph_free(g);
    return b;
}

/* A capacity factor (Megatron's): each rank sends an expert at most
 * ceil(T k / E C) tokens, T = b s / TP the rank's tokens; the group's
 * expert at most EP times that; the dispatch carries the kept copies; with
 * padding every expert gets the capacity, the dispatch E x capacity x h x
 * 2 bytes, and no counts are exchanged */
static void test_capacity(void)
{
    lsim_synth_cfg c;
    cfg_of(&c);
    const double counts[8] = {10, 30, 5, 5, 0, 50, 100, 0};
    double p[8];
    for (int e = 0; e < 8; e++) p[e] = counts[e] / 200.0;
    c.routing_hist = p, c.routing_hist_rows = 1;
    int64_t T = (int64_t)c.micro_batch * c.model.seq / c.tp, k = c.model.top_k, n = c.ep * T * k, tok[8], want[8];
    double h = c.model.hidden;
    lsim_err err = {0};
    /* dropless first: the bytes every rank sends */
    CHECK_I64(coll_bytes(&c, "moe_dispatch"), T * k * (int64_t)h * 2);
    c.capacity_factor = 1.0;
    CHECK_MSG(lsim_synth_check(&c, &err) == 0, "%s", err.msg);
    int64_t cap = c.ep * (int64_t)ceil((double)T * k / 8 * 1.0), kept = 0;
    expect_apportion(n, 8, counts, want);
    CHECK_I64(lsim_synth_expert_tokens(&c, 0, 0, 1, 0, tok), n);
    for (int e = 0; e < 8; e++) {
        int64_t w = want[e] > cap ? cap : want[e];
        CHECK_MSG(tok[e] == w, "expert %d: %lld tokens, expected min(%lld, capacity %lld)", e, (long long)tok[e],
                  (long long)want[e], (long long)cap);
        kept += w;
    }
    CHECK(kept < n);
    CHECK_I64(coll_bytes(&c, "moe_dispatch"), (int64_t)((double)T * k * h * 2 * ((double)kept / (double)n)));
    CHECK(coll_bytes(&c, "moe_counts") > 0);
    /* balanced routing under the same capacity: nothing dropped */
    c.routing_hist = NULL, c.routing_hist_rows = 0;
    CHECK_I64(lsim_synth_expert_tokens(&c, 0, 0, 1, 0, tok), n);
    for (int e = 0; e < 8; e++) CHECK_I64(tok[e], n / 8);
    /* padded: every expert at capacity (C = 1.5) */
    c.routing_hist = p, c.routing_hist_rows = 1;
    c.capacity_factor = 1.5, c.pad_to_capacity = 1;
    int64_t cap1 = (int64_t)ceil((double)T * k / 8 * 1.5);
    lsim_synth_expert_tokens(&c, 0, 0, 1, 0, tok);
    for (int e = 0; e < 8; e++) CHECK_I64(tok[e], c.ep * cap1);
    CHECK_I64(coll_bytes(&c, "moe_dispatch"), cap1 * 8 * (int64_t)h * 2);
    CHECK_I64(coll_bytes(&c, "moe_counts"), -1);
    /* refusals */
    c.capacity_factor = -1;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--capacity-factor -1: not a capacity factor"));
    c.capacity_factor = 0;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--pad-to-capacity needs --capacity-factor"));
    c.pad_to_capacity = 0, c.capacity_factor = 1, c.routing_hist = NULL, c.routing_hist_rows = 0, c.ep = 1;
    lsim_model_builtin("llama3-8b", &c.model, NULL);
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--capacity-factor: model llama3-8b has no experts"));
}

/* Where the routing loads the step most: one expert (5 of 8) takes 8 x the
 * others' tokens in every layer; with EP 4 it sits on GPU 2 (experts 4
 * and 5), whose load over the step is (tok[4] + tok[5]) x 4 / the group's
 * copies, the expert's tok[5] x 8 / them (counts from the test's own
 * apportionment); balanced routing reports nothing */
static void test_summary(void)
{
    lsim_synth_cfg c;
    cfg_of(&c);
    lsim_synth_routing_sum r;
    CHECK(lsim_synth_routing_summary(&c, &r) == 0 && !r.on);
    const double hot[8] = {1, 1, 1, 1, 1, 8, 1, 1};
    double p[8];
    for (int e = 0; e < 8; e++) p[e] = hot[e] / 15;
    c.routing_hist = p, c.routing_hist_rows = 1;
    int64_t n = (int64_t)c.ep * c.micro_batch * c.model.seq * c.model.top_k, want[8];
    expect_apportion(n, 8, hot, want);
    CHECK(lsim_synth_routing_summary(&c, &r) == 0 && r.on);
    CHECK_I64(r.gpu, 2);
    CHECK(r.stage == 0 && r.group == 0 && r.ep_rank == 2);
    CHECK_I64(r.expert, 5);
    CHECK_I64(r.expert_gpu, 2);
    CHECK(r.layer == 1 && r.mb == 0); /* the first MoE layer's first draw: every one is the same */
    CHECK_MSG(fabs(r.gpu_load - (double)(want[4] + want[5]) * 4 / (double)n) < 1e-12, "GPU load %g", r.gpu_load);
    CHECK_MSG(fabs(r.expert_load - (double)want[5] * 8 / (double)n) < 1e-12, "expert load %g", r.expert_load);
    /* dropless: the activations' load is the GPU's */
    CHECK_MSG(fabs(r.act_load - r.gpu_load) < 1e-12, "act load %g, GPU load %g", r.act_load, r.gpu_load);
    /* a capacity cuts the hot expert: the GPU keeps min(copies, capacity)
     * of each of its experts, over its balanced share n / 4 */
    c.capacity_factor = 1.0;
    int64_t T = (int64_t)c.micro_batch * c.model.seq / c.tp, cap = c.ep * (int64_t)ceil((double)T * c.model.top_k / 8);
    CHECK(lsim_synth_routing_summary(&c, &r) == 0 && r.on);
    double kept2 = (double)(want[4] < cap ? want[4] : cap) + (double)(want[5] < cap ? want[5] : cap);
    CHECK_MSG(fabs(r.act_load - kept2 * 4 / (double)n) < 1e-12, "cut: act load %g, want %g", r.act_load,
              kept2 * 4 / (double)n);
}

/* The memory estimate's routed activations: the most loaded GPU's share
 * (the summary's act_load) with drawn routing; capacity x E / (T k) with
 * padding (every expert at capacity), and for a factor under 1 without
 * it; 1 when balanced and dropless. The routed term of the kept
 * activations, inflight x MoE layers x T x k x (2h + 6 f_e) bytes (SwiGLU:
 * the expert MLP's six f_e-wide values; memest.c), scales by it. */
static void test_memory_load(void)
{
    lsim_synth_cfg c;
    cfg_of(&c);
    lsim_memest_in in;
    lsim_synth_memest_in(&c, &in);
    CHECK_MSG(in.expert_load == 1.0, "balanced: %g", in.expert_load);
    int64_t T = (int64_t)c.micro_batch * c.model.seq / c.tp, k = c.model.top_k;
    c.capacity_factor = 1.5, c.pad_to_capacity = 1;
    lsim_synth_memest_in(&c, &in);
    double want = ceil((double)T * k / 8 * 1.5) * 8 / ((double)T * k);
    CHECK_MSG(fabs(in.expert_load - want) < 1e-12, "padded: %g, want %g", in.expert_load, want);
    c.capacity_factor = 0.5, c.pad_to_capacity = 0;
    lsim_synth_memest_in(&c, &in);
    want = ceil((double)T * k / 8 * 0.5) * 8 / ((double)T * k);
    CHECK_MSG(fabs(in.expert_load - want) < 1e-12 && want < 1, "cut: %g, want %g", in.expert_load, want);
    c.capacity_factor = 0;
    const double hot[8] = {1, 1, 1, 1, 1, 8, 1, 1};
    double p[8];
    for (int e = 0; e < 8; e++) p[e] = hot[e] / 15;
    c.routing_hist = p, c.routing_hist_rows = 1;
    lsim_synth_routing_sum r;
    CHECK(lsim_synth_routing_summary(&c, &r) == 0 && r.on);
    lsim_synth_memest_in(&c, &in);
    CHECK_MSG(in.expert_load == r.act_load && r.act_load > 1, "drawn: %g, summary %g", in.expert_load, r.act_load);
    /* the estimate: its routed term, scaled */
    lsim_memest_stage a, b;
    in.expert_load = 1;
    CHECK(lsim_memest_stage_of(&in, 0, &a, NULL) == 0);
    in.expert_load = 2.5;
    CHECK(lsim_memest_stage_of(&in, 0, &b, NULL) == 0);
    double tok = (double)in.seq * in.micro_batch / in.tp, moe_layers = c.model.layers - c.model.dense_layers;
    double term = a.inflight * moe_layers * tok * k * (2.0 * in.hidden + 6.0 * in.expert_ffn);
    CHECK_MSG(fabs((b.activations - a.activations) - 1.5 * term) <= 1e-9 * term, "activations %.6g -> %.6g, want +%.6g",
              a.activations, b.activations, 1.5 * term);
    in.expert_load = NAN;
    lsim_err err = {0};
    CHECK(lsim_memest_stage_of(&in, 0, &b, &err) == LSIM_EARG && strstr(err.msg, "expert load nan is not a load"));
}

/* each bad file: refused with one line naming the file (and the line) */
static void bad_file(const char *text, const char *needle)
{
    lsim_synth_cfg c;
    cfg_of(&c);
    char path[64];
    check_write_tmp(path, sizeof path, "lsim_routing", text);
    double *h = (double *)&c;
    int rows = -1;
    lsim_err err = {0};
    CHECK_MSG(lsim_synth_routing_load(path, &c.model, &h, &rows, &err) == LSIM_EFORMAT, "accepted: %s", needle);
    CHECK_MSG(strstr(err.msg, path) && strstr(err.msg, needle) && !strchr(err.msg, '\n'), "'%s' not in: %s", needle,
              err.msg);
    CHECK(h == NULL && rows == 0);
    unlink(path);
}

static void test_bad_files(void)
{
    bad_file("1 2 3 4 5 6 7\n", "line 1: 7 values, the model has 8 experts");
    bad_file("# c\n1 2 3 4 5 6 7 8 9\n", "line 2: 9 values, the model has 8 experts");
    bad_file("1 2 3 -4 5 6 7 8\n", "line 1: value 4 is -4");
    bad_file("1 2 3 nan 5 6 7 8\n", "value 4 is nan");
    bad_file("1 2 3 x 5 6 7 8\n", "line 1: 'x 5 6 7 8' is not a number");
    bad_file("0 0 0 0 0 0 0 0\n", "line 1: the values sum to 0: not a distribution");
    bad_file("1 1 1 1 1 1 1 1\n1 1 1 1 1 1 1 1\n", "2 rows: give 1 (every MoE layer) or one per MoE layer of model toymoe (3)");
    bad_file("# nothing\n", "0 rows");
    bad_file("1 1 1 1 1 1 1 1\n1 1 1 1 1 1 1 1\n1 1 1 1 1 1 1 1\n1 1 1 1 1 1 1 1\n", "line 4: more rows than the 3 MoE layers");
    lsim_synth_cfg c;
    cfg_of(&c);
    double *h = NULL;
    int rows = 0;
    lsim_err err = {0};
    CHECK(lsim_synth_routing_load("/nonexistent/hist.csv", &c.model, &h, &rows, &err) < 0 &&
          strstr(err.msg, "/nonexistent/hist.csv"));
}

int main(void)
{
    test_hist();
    test_dirichlet();
    test_capacity();
    test_memory_load();
    test_summary();
    test_bad_files();
    return check_result("test_routing");
}
