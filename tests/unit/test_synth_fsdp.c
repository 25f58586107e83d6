/* FSDP in synthesized jobs (synth.h's fsdp, docs/synthesis.md "FSDP";
 * issue 36). Expected values come from formulas written here, not from the
 * code under test:
 * - a layer's all-gather carries its parameters x 2 bytes (bf16) / N per
 *   rank, the embedding's V x h x 2 / N; its reduce-scatter the whole fp32
 *   gradient (cost.h's convention: the input), params x 4, of which each
 *   rank keeps params x 4 / N; hybrid shard all-reduces that shard over
 *   DP / N replicas;
 * - the count per GPU: without PP, per micro-batch L + 2 forward
 *   all-gathers, L + 1 backward ones (the last forward unit is not
 *   resharded), L + 2 reduce-scatters; with PP every unit of a stage
 *   gathered once and reduced once, all after the stage's last backward;
 * - the prefetch: unit i + 1's all-gather is launched before unit i's
 *   first kernel, and unit i's first kernel waits for unit i's all-gather;
 * - the Adam kernels run on params / N;
 * - the memory: 16 / N bytes per parameter plus two units' bf16 weights;
 *   with PP the stage's bf16 weights all kept, and its fp32 gradients
 *   whole (accumulated unsharded until the last backward's
 *   reduce-scatter): 2 + 4 + 12 / N bytes per parameter;
 * - FP8 all-gather: a layer's linear weights gathered in 1 byte, the rest
 *   in 2, a shard cast before each layer gather, no forward weight cast,
 *   one scale all-reduce of 4 bytes per weight matrix;
 * - every bad combination is refused with one message naming it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "job_span.h"
#include "lumosim/engine.h"
#include "lumosim/job.h"
#include "lumosim/synth.h"

enum { L = 4 };

static void cfg_of(lsim_synth_cfg *c, int tp, int pp, int dp, int fsdp, int gb)
{
    lsim_synth_cfg_default(c);
    lsim_model_builtin("gpt3-15b", &c->model, NULL);
    c->model.layers = L;
    c->model.ffn = 4 * c->model.hidden; /* a GPT layer's 13 h small parameters exactly (below) */
    c->model.seq = 1024;
    c->tp = tp, c->pp = pp, c->dp = dp, c->fsdp = fsdp;
    c->micro_batch = 1;
    c->global_batch = gb;
}

/* One layer's parameters at TP 1: QKV h x 3A + 3A, projection A x h + h,
 * FC1 h x f + f, FC2 f x h + h, two layer norms 2h each (A = h, f = 4h:
 * 12 h^2 + 13 h). */
static double layer_params(const lsim_model_shape *m)
{
    double h = m->hidden, A = (double)m->heads * m->head_dim, f = m->ffn;
    return h * 3 * A + 3 * A + A * h + h + h * f + f + f * h + h + 4 * h;
}

static const char *nm(const lsim_graph *g, size_t v) { return lsim_strtab_get(g->strings, g->name[v]); }

static const lsim_coll_info *coll(const lsim_graph *g, size_t v)
{
    return g->coll[v] < 0 ? NULL : &g->colls[g->coll[v]];
}

static const char *pg_of(const lsim_graph *g, const lsim_coll_info *ci) { return lsim_strtab_get(g->strings, ci->pg_name); }

/* index of the first kernel whose name is exactly `name`, or SIZE_MAX */
static size_t find(const lsim_graph *g, const char *name)
{
    for (size_t v = 0; v < g->n; v++)
        if (g->kind[v] == LSIM_N_KERNEL && !strcmp(nm(g, v), name)) return v;
    return SIZE_MAX;
}

static int has_pred(const lsim_graph *g, size_t v, size_t u)
{
    for (uint64_t i = g->in_off[v]; i < g->in_off[v + 1]; i++)
        if (g->in_src[i] == u) return 1;
    return 0;
}

static void test_full_shard(void)
{
    lsim_synth_cfg c;
    int N = 4, m = 2;
    cfg_of(&c, 1, 1, 4, N, 4 * m);
    lsim_err err;
    lsim_graph *g = NULL;
    CHECK(lsim_synth_gpu(&c, 1, NULL, &g, &err) == 0);
    if (!g) return;
    CHECK(strstr(g->source, "fsdp=4") != NULL);
    double P = layer_params(&c.model), E = (double)c.model.vocab * c.model.hidden;
    size_t ag_f = 0, ag_b = 0, rs = 0, other = 0;
    for (size_t v = 0; v < g->n; v++) {
        const lsim_coll_info *ci = coll(g, v);
        if (!ci) continue;
        const char *pg = pg_of(g, ci), *name = nm(g, v);
        if (strcmp(pg, "fsdp:0:0:0")) {
            other++;
            continue;
        }
        CHECK_I64(ci->group_size, N);
        double p = name[0] == 'L' ? P : E;
        if (ci->kind == LSIM_COLL_ALLGATHER) {
            strstr(name, ".fwd.") ? ag_f++ : ag_b++;
            CHECK_MSG(llabs(ci->bytes - (int64_t)(p * 2 / N)) <= 1, "%s: %lld bytes, want %.0f", name,
                      (long long)ci->bytes, p * 2 / N);
        } else if (ci->kind == LSIM_COLL_REDUCESCATTER) {
            rs++;
            /* the shard each rank keeps: params x 4 (fp32 reduce) / N */
            CHECK_MSG(fabs((double)ci->bytes / N - p * 4 / N) <= 1, "%s: %lld bytes", name, (long long)ci->bytes);
        } else {
            other++;
        }
    }
    CHECK_I64(ag_f, (size_t)m * (L + 2));
    CHECK_I64(ag_b, (size_t)m * (L + 1));
    CHECK_I64(rs, (size_t)m * (L + 2));
    CHECK_I64(other, 0); /* no DDP bucket, no hybrid all-reduce */
    /* prefetch: layer 2's all-gather launched before layer 1's first
     * kernel; layer 1's first kernel waits for layer 1's all-gather */
    size_t ag2 = find(g, "L2.mb0.fwd.fsdp_allgather"), ag1 = find(g, "L1.mb0.fwd.fsdp_allgather"),
           ln1 = find(g, "L1.mb0.fwd.ln1");
    CHECK(ag2 != SIZE_MAX && ln1 != SIZE_MAX && ag2 < ln1);
    CHECK(ln1 != SIZE_MAX && ag1 != SIZE_MAX && has_pred(g, ln1, ag1));
    /* backward: layer 1's all-gather launched before layer 2's backward */
    size_t bag1 = find(g, "L1.mb0.bwd.fsdp_allgather"), b2 = find(g, "L2.mb0.bwd.dropout_add2");
    CHECK(bag1 != SIZE_MAX && b2 != SIZE_MAX && bag1 < b2);
    CHECK(find(g, "head.mb0.bwd.fsdp_allgather") == SIZE_MAX); /* not resharded after forward */
    /* Adam on params / N: the layer's kernel as the cost model times 30 bytes of it */
    size_t adam = find(g, "L0.opt.adam");
    CHECK(adam != SIZE_MAX && g->dur[adam] == lsim_cost_elementwise(&c.gpu, P / N * 30.0));
    lsim_graph_free(g);
}

static void test_hybrid_and_pp(void)
{
    lsim_synth_cfg c;
    int N = 2, m = 2;
    cfg_of(&c, 1, 1, 4, N, 4 * m);
    lsim_err err;
    lsim_graph *g = NULL;
    CHECK(lsim_synth_gpu(&c, 3, NULL, &g, &err) == 0); /* dp 3: replica 1, shard 1 */
    if (!g) return;
    double P = layer_params(&c.model);
    size_t rs = 0, ar = 0;
    for (size_t v = 0; v < g->n; v++) {
        const lsim_coll_info *ci = coll(g, v);
        if (!ci) continue;
        const char *pg = pg_of(g, ci);
        if (ci->kind == LSIM_COLL_REDUCESCATTER) {
            rs++;
            CHECK(!strcmp(pg, "fsdp:0:0:1"));
        }
        if (ci->kind == LSIM_COLL_ALLREDUCE) {
            ar++;
            CHECK(!strcmp(pg, "hsdp:0:0:1"));
            CHECK_I64(ci->group_size, 4 / N);
            if (nm(g, v)[0] == 'L') CHECK(llabs(ci->bytes - (int64_t)(P * 4 / N)) <= 1);
        }
    }
    CHECK_I64(rs, (size_t)m * (L + 2));
    CHECK_I64(ar, rs);
    lsim_graph_free(g);
    /* PP 2: each unit of the stage gathered once, reduced once */
    cfg_of(&c, 2, 2, 2, 2, 2 * 4);
    CHECK(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0);
    if (!g) return;
    size_t ag = 0;
    rs = 0;
    for (size_t v = 0; v < g->n; v++) {
        const lsim_coll_info *ci = coll(g, v);
        if (!ci || strncmp(pg_of(g, ci), "fsdp:", 5)) continue;
        if (ci->kind == LSIM_COLL_ALLGATHER) {
            ag++;
            CHECK(strstr(nm(g, v), ".mb0.fwd.") != NULL);
        }
        if (ci->kind == LSIM_COLL_REDUCESCATTER) {
            rs++;
            CHECK(strstr(nm(g, v), ".mb3.bwd.") != NULL);
        }
    }
    CHECK_I64(ag, L / 2 + 1); /* stage 0: 2 layers and the embedding */
    CHECK_I64(rs, L / 2 + 1);
    /* all after the stage's last backward, the embedding's lookup backward
     * being its last kernel (the pipeline calls post_backward by hand once
     * it is done), in forward order: embedding, layer 0, layer 1 */
    size_t last = find(g, "emb.mb3.bwd.lookup"), r_emb = find(g, "emb.mb3.bwd.fsdp_reducescatter"),
           r0 = find(g, "L0.mb3.bwd.fsdp_reducescatter"), r1 = find(g, "L1.mb3.bwd.fsdp_reducescatter");
    CHECK(last != SIZE_MAX && r_emb != SIZE_MAX && r0 != SIZE_MAX && r1 != SIZE_MAX);
    CHECK(last < r_emb && r_emb < r0 && r0 < r1);
    lsim_graph_free(g);
}

/* The whole job runs; and fewer replicas with --dp-cost give its step to
 * the nanosecond (the search's way, search.c): the replicas of a
 * synthesized job are the same program at the same times, so a shard or
 * replica group's collective ends when its members' own times say, timed
 * for the full group at their places in the full job. Full shard, hybrid,
 * hybrid under a pipeline with context parallelism, a second stage whose
 * shard group spans two nodes of the full job, and one TP rank per stage
 * (tp_one, the search's way for TP > 1: each TP rank's groups are its own,
 * over the same nodes as the others'). */
static void test_runs(void)
{
    static const struct {
        int tp, pp, dp, fsdp, cp, dp_sim, tp_one;
    } k[] = {{1, 1, 4, 4, 1, 1, 0}, {1, 1, 8, 2, 1, 1, 0}, {1, 1, 8, 4, 1, 2, 0}, {1, 2, 4, 2, 2, 1, 0},
             {1, 2, 16, 16, 1, 1, 0}, {2, 2, 8, 4, 1, 1, 1}, {4, 1, 4, 2, 1, 1, 1}};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        lsim_synth_cfg c;
        lsim_ns whole = 0, part = 0;
        cfg_of(&c, k[i].tp, k[i].pp, k[i].dp, k[i].fsdp, 2 * k[i].dp);
        c.cp = k[i].cp;
        c.model.seq = 2048;
        lsim_err err;
        if (job_span(&c, &whole, &err)) {
            CHECK_MSG(0, "%s", err.msg); /* every FSDP collective coupled: the matcher refuses unpaired ones */
            continue;
        }
        c.dp_cost = c.dp, c.dp = k[i].dp_sim, c.global_batch = 2 * k[i].dp_sim;
        c.tp_one = k[i].tp_one;
        CHECK(!c.tp_one || lsim_synth_tp_one_exact(&c));
        CHECK_MSG(lsim_synth_check(&c, &err) == 0, "%s", err.msg);
        if (job_span(&c, &part, &err)) {
            CHECK_MSG(0, "%s", err.msg);
            continue;
        }
        CHECK_MSG(part == whole && whole > 0,
                  "TP %d PP %d DP %d FSDP %d CP %d: %d replicas (one TP rank: %d) with --dp-cost %lld ns, whole %lld ns",
                  k[i].tp, k[i].pp, k[i].dp, k[i].fsdp, k[i].cp, k[i].dp_sim, k[i].tp_one, (long long)part,
                  (long long)whole);
    }
}

static void test_memory(void)
{
    lsim_synth_cfg c;
    int N = 4;
    cfg_of(&c, 1, 1, 8, N, 8);
    lsim_synth_mem mm;
    lsim_synth_memory(&c, &mm);
    const lsim_model_shape *M = &c.model;
    double h = M->hidden, E = (double)M->vocab * h;
    /* the layers, the word and position embeddings, the final norm (tied output) */
    double P = L * layer_params(M) + E + (double)M->seq * h + 2 * h;
    double U = layer_params(M) > E ? layer_params(M) : E; /* the largest unit */
    double want = P * (4 + 12.0) / N + 2 * U * 2;          /* two units gathered */
    CHECK_MSG(fabs(mm.states - want) <= 1e-9 * want, "states %.6g, want %.6g", mm.states, want);
    /* hybrid shard: the same per GPU (the shard group decides) */
    c.dp = 16, c.global_batch = 16;
    lsim_synth_memory(&c, &mm);
    CHECK_MSG(fabs(mm.states - want) <= 1e-9 * want, "hybrid: states %.6g, want %.6g", mm.states, want);
    /* PP 2: the stage's bf16 weights kept gathered and its fp32 gradients
     * accumulated unsharded; stage 0's params */
    cfg_of(&c, 1, 2, 8, N, 8);
    lsim_memest_in in;
    lsim_memest_stage st;
    lsim_synth_memest_in(&c, &in);
    CHECK(lsim_memest_stage_of(&in, 0, &st, NULL) == 0);
    double P0 = L / 2 * layer_params(M) + E + (double)M->seq * h;
    want = P0 * 2 + P0 * 4 + P0 * 12 / N;
    double got = st.weights + st.grads + st.optim;
    CHECK_MSG(fabs(got - want) <= 1e-9 * want, "PP: stage 0 states %.6g, want %.6g", got, want);
}

/* FP8 all-gather (torchao): a layer's gather carries its linear weights
 * (12 h^2 at TP 1: QKV 3h^2, projection h^2, FC1 and FC2 4h^2 each) in 1
 * byte and its other parameters in 2, / N; the embedding and head stay
 * bf16; a cast kernel on the gather's stream before each layer gather; no
 * forward weight cast; one scale all-reduce after the optimizer of 4
 * bytes per weight matrix (4 per GPT layer) */
static void test_fp8_all_gather(void)
{
    lsim_synth_cfg c;
    int N = 4, m = 2;
    cfg_of(&c, 1, 1, 4, N, 4 * m);
    c.precision = LSIM_PREC_FP8;
    c.fp8_all_gather = 1;
    lsim_err err;
    CHECK_MSG(lsim_synth_check(&c, &err) == 0, "%s", err.msg);
    lsim_graph *g = NULL;
    CHECK(lsim_synth_gpu(&c, 1, NULL, &g, &err) == 0);
    if (!g) return;
    double h = c.model.hidden, P = layer_params(&c.model), E = (double)c.model.vocab * h, lin = 12 * h * h;
    size_t ag = 0, casts = 0, ar = 0;
    for (size_t v = 0; v < g->n; v++) {
        const char *name = nm(g, v);
        if (g->kind[v] != LSIM_N_KERNEL) continue;
        if (strstr(name, "_w_fp8_cast")) CHECK_MSG(0, "a weight cast with FP8 all-gather: %s", name);
        if (strstr(name, "fsdp_fp8_cast")) casts++;
        const lsim_coll_info *ci = coll(g, v);
        if (!ci) continue;
        if (ci->kind == LSIM_COLL_ALLGATHER) {
            double want = name[0] == 'L' ? (lin + (P - lin) * 2) / N : E * 2 / N;
            ag += name[0] == 'L';
            CHECK_MSG(llabs(ci->bytes - (int64_t)want) <= 1, "%s: %lld bytes, want %.0f", name, (long long)ci->bytes, want);
        }
        if (ci->kind == LSIM_COLL_ALLREDUCE) {
            ar++;
            CHECK(!strcmp(name, "step.opt.fp8_scale_allreduce"));
            CHECK_I64(ci->bytes, 4 * L * 4);
        }
    }
    CHECK_I64(ag, (size_t)m * (2 * L));
    CHECK_I64(casts, ag);
    CHECK_I64(ar, 1);
    CHECK(find(g, "L1.mb0.fwd.qkv_in_fp8_cast") != SIZE_MAX);
    lsim_graph_free(g);
    /* the memory: two gathered units, a layer's linear weights in 1 byte
     * (the largest unit is the larger of a layer so held and the bf16
     * embedding); PP 2 keeps the stage's gathered, each layer so held */
    lsim_synth_mem mm;
    lsim_synth_memory(&c, &mm);
    double Pall = L * P + E + (double)c.model.seq * h + 2 * h;
    double Ub = P * 2 - lin > E * 2 ? P * 2 - lin : E * 2;
    double want = Pall * 16.0 / N + 2 * Ub;
    CHECK_MSG(fabs(mm.states - want) <= 1e-9 * want, "fp8 gather: states %.6g, want %.6g", mm.states, want);
    c.fp8_all_gather = 0;
    lsim_synth_memory(&c, &mm);
    double Ub16 = P > E ? P * 2 : E * 2;
    want = Pall * 16.0 / N + 2 * Ub16;
    CHECK_MSG(fabs(mm.states - want) <= 1e-9 * want, "bf16 gather: states %.6g, want %.6g", mm.states, want);
    c.fp8_all_gather = 1;
    cfg_of(&c, 1, 2, 4, N, 4 * m);
    c.precision = LSIM_PREC_FP8;
    c.fp8_all_gather = 1;
    lsim_memest_in in;
    lsim_memest_stage st;
    lsim_synth_memest_in(&c, &in);
    CHECK(lsim_memest_stage_of(&in, 0, &st, NULL) == 0);
    double P0 = L / 2 * P + E + (double)c.model.seq * h;
    want = P0 * 2 - L / 2 * lin + P0 * 4 + P0 * 12 / N;
    double got = st.weights + st.grads + st.optim;
    CHECK_MSG(fabs(got - want) <= 1e-9 * want, "fp8 gather, PP: stage 0 states %.6g, want %.6g", got, want);
    c.precision = LSIM_PREC_BF16;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--fp8-all-gather needs --precision fp8 and --fsdp"));
}

static void test_bad(void)
{
    lsim_synth_cfg c;
    lsim_err err;
    cfg_of(&c, 1, 1, 4, 3, 12);
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--fsdp 3 does not divide DP = 4"));
    cfg_of(&c, 1, 1, 4, 1, 4);
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--fsdp 1"));
    cfg_of(&c, 1, 1, 4, 4, 4);
    c.dist_opt = 1;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--fsdp with --distributed-optimizer"));
    cfg_of(&c, 1, 1, 4, 4, 4);
    c.grad_reduce = LSIM_GR_AFTER;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--fsdp with --grad-reduce after"));
    cfg_of(&c, 1, 1, 1, 4, 1);
    c.dp_cost = 6; /* a job of 6 replicas is no whole number of shard groups of 4 */
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--fsdp 4 does not divide DP = 6"));
    cfg_of(&c, 1, 1, 4, 4, 4);
    CHECK(lsim_synth_check(&c, &err) == 0);
}

int main(void)
{
    test_full_shard();
    test_hybrid_and_pp();
    test_runs();
    test_memory();
    test_fp8_all_gather();
    test_bad();
    return check_result("test_synth_fsdp");
}
