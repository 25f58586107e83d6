/* The memory estimate (memest.h) against figures computed here, by hand,
 * from the published formulas rather than from the code:
 * - per-layer activations against Korthikanti et al. 2022 ("Reducing
 *   Activation Recomputation in Large Transformer Models", arXiv 2205.05198,
 *   Table 2) on the paper's four models (Table 3: 22B, 175B, 530B, 1T, all
 *   at TP 8) with no, selective and full recomputation, with and without
 *   sequence parallelism, and without any parallelism;
 * - the first stage's activations of 1F1B (L layers' worth, section 4.2.3)
 *   and of the interleaved schedule (times 1 + (p - 1)/(p V));
 * - the in-flight count's closed form against synth's schedules;
 * - parameters against 12 L h^2 + 13 L h + (V + s) h + 2h (GPT-3 175B) and
 *   the bytes per parameter of Megatron's distributed-optimizer table (18,
 *   6 + 12/d; 16 with 2-byte gradients);
 * - GPT-3 175B at TP 8 x PP 2 (the "about 196 GB per GPU") is OOM on
 *   an 80 GB A100 and a small job is not; the JSON record round-trips and
 *   a damaged one is refused naming the key. No MPI. */
#include "check.h"

#include "lumosim/memest.h"
#include "lumosim/synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int close_rel(double a, double b, double tol) { return fabs(a - b) <= tol * fabs(b); }

/* The paper's Table 3 models (s = 2048, v = 51200, b = 1, t = 8). */
typedef struct paper_model {
    const char *name;
    int a, h, L, t, p;
} paper_model;
static const paper_model MODELS[] = {
    {"22B", 64, 6144, 48, 8, 1},
    {"175B", 96, 12288, 96, 8, 8},
    {"530B", 128, 20480, 105, 8, 35},
    {"1T", 160, 25600, 128, 8, 64},
};

static void in_of(const paper_model *m, int b, lsim_memest_in *in)
{
    lsim_memest_in_default(in);
    in->layers = m->L, in->hidden = m->h, in->ffn = 4 * m->h, in->heads = m->a, in->head_dim = m->h / m->a;
    in->seq = 2048, in->vocab = 51200;
    in->tp = m->t, in->pp = m->p, in->dp = 1, in->micro_batch = b;
    in->microbatches = 64 * m->p; /* m >= p: 1F1B's first stage holds p micro-batches */
    /* the paper's attention: unfused, with the attention-probability dropout */
    in->attention = LSIM_MEMEST_ATTN_UNFUSED;
    in->dropout = 1;
}

static void test_layer_activations(void)
{
    for (size_t k = 0; k < sizeof MODELS / sizeof MODELS[0]; k++) {
        const paper_model *m = &MODELS[k];
        lsim_memest_in in;
        in_of(m, 1, &in);
        double s = 2048, b = 1, h = m->h, a = m->a, t = m->t, sbh = s * b * h;
        /* Table 2, row by row */
        double none = sbh * (10 + 24 / t + 5 * a * s / (h * t));
        double sp = sbh * (34 / t + 5 * a * s / (h * t));
        double sel = sbh * (10 + 24 / t);
        double sp_sel = sbh * (34 / t);
        double full = sbh * 2;
        double got;
        got = lsim_memest_layer_act(&in, 1);
        CHECK_MSG(close_rel(got, none, 1e-12), "%s TP: %.6g, paper %.6g", m->name, got, none);
        in.seq_parallel = 1;
        got = lsim_memest_layer_act(&in, 1);
        CHECK_MSG(close_rel(got, sp, 1e-12), "%s TP+SP: %.6g, paper %.6g", m->name, got, sp);
        in.recompute = LSIM_MEMEST_RC_SELECTIVE;
        got = lsim_memest_layer_act(&in, 1);
        CHECK_MSG(close_rel(got, sp_sel, 1e-12), "%s TP+SP+selective: %.6g, paper %.6g", m->name, got, sp_sel);
        /* the working set selective recomputation rebuilds is the full one */
        CHECK(close_rel(lsim_memest_layer_act(&in, 0), sp, 1e-12));
        in.seq_parallel = 0;
        got = lsim_memest_layer_act(&in, 1);
        CHECK_MSG(close_rel(got, sel, 1e-12), "%s TP+selective: %.6g, paper %.6g", m->name, got, sel);
        in.recompute = LSIM_MEMEST_RC_FULL;
        got = lsim_memest_layer_act(&in, 1);
        CHECK_MSG(close_rel(got, full, 1e-12), "%s full: %.6g, paper %.6g", m->name, got, full);
        /* with SP the checkpointed input is the layer's shard (the paper's
         * Table 2 lists 2sbh for full recomputation without SP) */
        in.seq_parallel = 1;
        got = lsim_memest_layer_act(&in, 1);
        CHECK_MSG(close_rel(got, full / t, 1e-12), "%s full+SP: %.6g, want %.6g", m->name, got, full / t);
        /* no parallelism at all: sbh(34 + 5as/h) */
        in.recompute = LSIM_MEMEST_RC_NONE, in.seq_parallel = 0, in.tp = 1;
        got = lsim_memest_layer_act(&in, 1);
        CHECK(close_rel(got, sbh * (34 + 5 * a * s / h), 1e-12));
        /* flash attention keeps no s x s tensor: the selective figure */
        in.tp = m->t, in.attention = LSIM_MEMEST_ATTN_FLASH;
        CHECK(close_rel(lsim_memest_layer_act(&in, 1), sel, 1e-12));
        /* unfused without the dropout: softmax output only, 2as/h */
        in.attention = LSIM_MEMEST_ATTN_UNFUSED, in.dropout = 0;
        CHECK(close_rel(lsim_memest_layer_act(&in, 1), sbh * (10 + 24 / t + 2 * a * s / (h * t)), 1e-12));
    }
    /* one value written out: GPT-3 175B, TP 8, s = 2048, b = 1: 5 a s / (h t)
     * = 5 x 96 x 2048 / (12288 x 8) = 10, so 23 sbh = 23 x 25,165,824 =
     * 578,813,952 bytes per layer; 96 layers on the first stage: 55.57 GB */
    lsim_memest_in in;
    in_of(&MODELS[1], 1, &in);
    CHECK(fabs(lsim_memest_layer_act(&in, 1) - 578813952.0) < 1);
}

static void test_first_stage(void)
{
    for (size_t k = 0; k < sizeof MODELS / sizeof MODELS[0]; k++) {
        const paper_model *m = &MODELS[k];
        for (int rc = 0; rc < 3; rc++)
            for (int sp = 0; sp < 2; sp++) {
                lsim_memest_in in;
                in_of(m, 1, &in);
                in.recompute = rc, in.seq_parallel = sp;
                lsim_memest_stage st;
                CHECK(lsim_memest_stage_of(&in, 0, &st, NULL) == 0);
                /* section 4.2.3: p micro-batches of L/p layers = L layers;
                 * plus (section 4.3) the embedding's dropout mask (sbh, /t
                 * with SP) and int64 token ids per micro-batch in flight;
                 * with PP = 1 the output layer is on this stage too: the
                 * final norm's and output layer's inputs (4sbh, /t with SP)
                 * and the fp32 logits 4sbv/t; full recomputation: one
                 * layer's working set besides */
                double s = 2048, h = m->h, t = m->t, a = m->a, sbh = s * h, div = sp ? t : 1;
                double per = rc == 2 ? 2 * sbh / div
                             : sp    ? sbh * (34 / t + (rc ? 0 : 5 * a * s / (h * t)))
                                     : sbh * (10 + 24 / t + (rc ? 0 : 5 * a * s / (h * t)));
                double want = m->L * per + m->p * (sbh / div + 8 * s);
                if (rc == 2) want += sp ? sbh * (34 / t + 5 * a * s / (h * t)) : sbh * (10 + 24 / t + 5 * a * s / (h * t));
                if (m->p == 1) want += 4 * sbh / div + 4 * s * 51200 / t;
                CHECK_MSG(close_rel(st.activations, want, 1e-12), "%s rc %d sp %d: %.6g, want %.6g", m->name, rc, sp,
                          st.activations, want);
                CHECK_I64(st.inflight, m->p);
            }
    }
    /* interleaved, V = 2 and V = 4: the first stage holds 1 + (p-1)/(pV)
     * times L layers' worth (Korthikanti et al. section 4.2.3) */
    for (int V = 2; V <= 4; V *= 2) {
        lsim_memest_in in;
        in_of(&MODELS[1], 1, &in);
        in.vstages = V, in.embed_head = 0;
        lsim_memest_stage st;
        CHECK(lsim_memest_stage_of(&in, 0, &st, NULL) == 0);
        double p = 8, want = 96 * (1 + (p - 1) / (p * V)) * lsim_memest_layer_act(&in, 1);
        CHECK_MSG(close_rel(st.activations, want, 1e-12), "V %d: %.6g, want %.6g", V, st.activations, want);
    }
    /* fewer micro-batches than stages: only m are in flight */
    lsim_memest_in in;
    in_of(&MODELS[1], 1, &in);
    in.microbatches = 3;
    CHECK_I64(lsim_memest_inflight(8, 0, 3, 1), 3);
    lsim_memest_stage st;
    CHECK(lsim_memest_stage_of(&in, 0, &st, NULL) == 0 && st.inflight == 3);
}

static void test_inflight_schedule(void)
{
    /* the closed form against the peak of synth's own schedules */
    for (int pp = 1; pp <= 8; pp++)
        for (int V = 1; V <= 3; V++)
            for (int m = 1; m <= 24; m++) {
                if (V > 1 && (pp < 2 || m % pp)) continue;
                lsim_synth_step *steps = malloc((size_t)2 * m * V * sizeof *steps);
                for (int s = 0; s < pp && steps; s++) {
                    if (lsim_synth_schedule(pp, s, m, V, steps, NULL, NULL)) {
                        CHECK(0);
                        continue;
                    }
                    int cur = 0, peak = 0;
                    for (int i = 0; i < 2 * m * V; i++) {
                        cur += steps[i].bwd ? -1 : 1;
                        if (cur > peak) peak = cur;
                    }
                    CHECK_MSG(lsim_memest_inflight(pp, s, m, V) == peak, "pp %d stage %d m %d V %d: %d, schedule %d",
                              pp, s, m, V, lsim_memest_inflight(pp, s, m, V), peak);
                }
                free(steps);
            }
}

static void gpt175(lsim_memest_in *in)
{
    lsim_memest_in_default(in);
    in->layers = 96, in->hidden = 12288, in->ffn = 49152, in->heads = 96, in->head_dim = 128;
    in->seq = 2048, in->vocab = 51200;
    in->tp = 1, in->pp = 1, in->dp = 1, in->micro_batch = 1, in->microbatches = 8;
}

static void test_params_and_states(void)
{
    /* GPT-3 175B whole: 12 L h^2 + 13 L h + V h + s h + 2 h (Narayanan et
     * al. 2021 with the final norm), 174.6e9 parameters */
    double L = 96, h = 12288, V = 51200, s = 2048;
    double whole = 12 * L * h * h + 13 * L * h + V * h + s * h + 2 * h;
    lsim_memest_in in;
    gpt175(&in);
    lsim_memest_stage st;
    CHECK(lsim_memest_stage_of(&in, 0, &st, NULL) == 0);
    CHECK_MSG(close_rel(st.params, whole, 1e-12), "params %.10g, hand %.10g", st.params, whole);
    CHECK(st.params > 174.5e9 && st.params < 174.7e9);
    /* 18 bytes each: bf16 weight 2, fp32 main gradient 4, fp32 master and
     * two moments 12 */
    CHECK(close_rel(st.weights, 2 * whole, 1e-12) && close_rel(st.grads, 4 * whole, 1e-12) &&
          close_rel(st.optim, 12 * whole, 1e-12));
    /* TP 8 x PP 2, stage 0: 48 layers of (4h^2 + 8h^2 + 3h + 4h)/8 + 6h,
     * the word embeddings / 8 and the position embeddings; stage 1: 48
     * layers, the tied output layer's copy / 8 and the final norm */
    in.tp = 8, in.pp = 2;
    double lay = (12 * h * h + 7 * h) / 8 + 6 * h;
    double p0 = 48 * lay + V / 8 * h + s * h, p1 = 48 * lay + V / 8 * h + 2 * h;
    lsim_memest_stage s0, s1;
    CHECK(lsim_memest_stage_of(&in, 0, &s0, NULL) == 0 && lsim_memest_stage_of(&in, 1, &s1, NULL) == 0);
    CHECK_MSG(close_rel(s0.params, p0, 1e-12), "stage 0 %.10g, hand %.10g", s0.params, p0);
    CHECK_MSG(close_rel(s1.params, p1, 1e-12), "stage 1 %.10g, hand %.10g", s1.params, p1);
    /* the "about 196 GB per GPU" of states */
    double states0 = s0.weights + s0.grads + s0.optim;
    CHECK_MSG(close_rel(states0, 18 * p0, 1e-12) && states0 > 190e9 && states0 < 200e9, "states %.4g", states0);
    /* the distributed optimizer at DP 8: 6 + 12/8 bytes per parameter */
    in.dp = 8, in.dist_opt = 1;
    CHECK(lsim_memest_stage_of(&in, 0, &s0, NULL) == 0);
    CHECK(close_rel(s0.weights + s0.grads + s0.optim, (6 + 12.0 / 8) * p0, 1e-12));
    /* sharded as the replicas of --dp-cost would be */
    in.opt_shards = 64;
    CHECK(lsim_memest_stage_of(&in, 0, &s0, NULL) == 0);
    CHECK(close_rel(s0.weights + s0.grads + s0.optim, (6 + 12.0 / 64) * p0, 1e-12));
    /* 2-byte gradients: 16 without the distributed optimizer (ZeRO's K = 12) */
    in.dist_opt = 0, in.opt_shards = 0, in.grad_bytes = 2;
    CHECK(lsim_memest_stage_of(&in, 0, &s0, NULL) == 0);
    CHECK(close_rel(s0.weights + s0.grads + s0.optim, 16 * p0, 1e-12));
    /* forward-only: bf16 weights only */
    in.grad_bytes = 4, in.forward_only = 1;
    CHECK(lsim_memest_stage_of(&in, 0, &s0, NULL) == 0);
    CHECK(s0.grads == 0 && s0.optim == 0 && close_rel(s0.weights, 2 * p0, 1e-12) && s0.inflight == 1);
    /* the total is the sum of its parts, buffers and reserve positive */
    in.forward_only = 0;
    CHECK(lsim_memest_stage_of(&in, 0, &s0, NULL) == 0);
    CHECK(s0.comm > 0 && s0.reserve > 0 &&
          close_rel(s0.total, s0.weights + s0.grads + s0.optim + s0.activations + s0.comm + s0.reserve, 1e-12));
}

static void test_job(void)
{
    /* GPT-3 175B TP 8 x PP 2 on 80 GB A100s: OOM, stage 0 the worst */
    lsim_memest_in in;
    gpt175(&in);
    in.tp = 8, in.pp = 2;
    lsim_memest_job j, back;
    lsim_err err;
    CHECK(lsim_memest_job_of(&in, "a100", 80e9, &j, &err) == 0);
    CHECK(j.oom && j.worst == 0 && j.nstages == 2 && j.stages[0].total > 196e9);
    char *txt = NULL;
    CHECK(lsim_memest_job_json(&j, &txt, &err) == 0 && txt && strstr(txt, "\"oom\":true"));
    CHECK(txt && lsim_memest_job_parse(txt, &back, &err) == 0);
    if (txt && back.nstages == 2) {
        CHECK(back.oom && back.worst == 0 && back.tp == 8 && back.pp == 2 && back.capacity == 80e9);
        CHECK(!strcmp(back.gpu, "a100") && !strcmp(back.source, "model"));
        for (int s = 0; s < 2; s++)
            CHECK(back.stages[s].total == j.stages[s].total && back.stages[s].inflight == j.stages[s].inflight &&
                  back.stages[s].activations == j.stages[s].activations);
        char line[256];
        lsim_memest_oom_line(&back, line, sizeof line);
        CHECK_MSG(strstr(line, "stage 0") && strstr(line, "80.0 GB") && strstr(line, "a100"), "%s", line);
        lsim_memest_job_free(&back);
    }
    /* a damaged record is refused naming the key */
    if (txt) {
        char *cut = strstr(txt, "\"total_bytes\"");
        if (cut) memcpy(cut, "\"tot4l_bytes\"", 13);
        CHECK(lsim_memest_job_parse(txt, &back, &err) == LSIM_EFORMAT && strstr(err.msg, "total_bytes"));
    }
    CHECK(lsim_memest_job_parse("[1]", &back, &err) == LSIM_EFORMAT);
    free(txt);
    lsim_memest_job_free(&j);
    /* a small job fits: a 2-layer GPT-3 15B slice at TP 2 x PP 2 */
    lsim_memest_in_default(&in);
    in.layers = 4, in.hidden = 6144, in.ffn = 12288, in.heads = 48, in.head_dim = 128, in.seq = 2048, in.vocab = 51200;
    in.tp = 2, in.pp = 2, in.dp = 2, in.micro_batch = 1, in.microbatches = 4;
    CHECK(lsim_memest_job_of(&in, "a100", 80e9, &j, &err) == 0 && !j.oom && j.stages[j.worst].total < 80e9);
    lsim_memest_job_free(&j);
    /* unknown capacity: never OOM */
    gpt175(&in);
    CHECK(lsim_memest_job_of(&in, "x", 0, &j, &err) == 0 && !j.oom);
    lsim_memest_job_free(&j);
    /* bad layouts refused with the numbers */
    in.pp = 5;
    CHECK(lsim_memest_job_of(&in, "x", 0, &j, &err) == LSIM_EARG && strstr(err.msg, "96 layers"));
    in.pp = 1, in.tp = 7;
    CHECK(lsim_memest_check(&in, &err) == LSIM_EARG && strstr(err.msg, "TP = 7"));
}

static void test_synth_agrees(void)
{
    /* synth's memory check is this estimate: the same worst stage and total */
    lsim_synth_cfg c;
    lsim_synth_cfg_default(&c);
    lsim_model_builtin("gpt3-175b", &c.model, NULL);
    c.tp = 8, c.pp = 2, c.dp = 1, c.micro_batch = 1, c.global_batch = 8;
    lsim_synth_mem m;
    lsim_synth_memory(&c, &m);
    lsim_memest_in in;
    lsim_synth_memest_in(&c, &in);
    lsim_memest_stage st;
    int stage = -1;
    CHECK(lsim_memest_worst(&in, &stage, &st, NULL) == 0);
    CHECK(stage == m.stage && st.total == m.total && st.inflight == m.inflight);
    CHECK(in.microbatches == 8 && in.attention == LSIM_MEMEST_ATTN_FLASH && in.grad_bytes == 4);
}

/* --table: the comparison of docs/memory.md, printed as Markdown rows. The
 * "paper" columns are Korthikanti et al.'s formulas (Table 2 per layer; the
 * first stage of 1F1B holds L layers' worth, the interleaved schedule (1 +
 * (p - 1)/(p V)) times that) and Megatron's state formula (18 bytes, or 6 +
 * 12/d, per parameter of the most loaded shard, (transformer block / p +
 * embedding) / t, as theoretical_memory_usage.py counts it), computed here;
 * the others are memest.h's first stage. */
static void print_table(void)
{
    static const struct {
        int model, rc, sp, V, dist, dp;
    } rows[] = {
        {0, 0, 0, 1, 0, 1}, {1, 0, 0, 1, 0, 1}, {1, 1, 1, 1, 0, 1}, {1, 2, 0, 1, 0, 1}, {1, 1, 1, 2, 1, 8},
        {2, 0, 0, 1, 0, 1}, {2, 1, 1, 1, 0, 1}, {3, 0, 0, 1, 0, 1}, {3, 1, 1, 1, 0, 1}, {3, 2, 1, 1, 1, 8},
    };
    static const char *const RC[] = {"none", "selective", "full"};
    printf("| model | TP x PP | V | recompute | SP | dist. opt. (DP) | per layer, paper (MB) | per layer, lumosim (MB) | "
           "stage-0 activations, paper (GB) | lumosim (GB) | diff. | states, Megatron (GB) | lumosim (GB) | diff. | "
           "lumosim stage-0 total (GB) | on 80 GB |\n");
    printf("|---|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const paper_model *m = &MODELS[rows[i].model];
        lsim_memest_in in;
        in_of(m, 1, &in);
        in.recompute = rows[i].rc, in.seq_parallel = rows[i].sp, in.vstages = rows[i].V;
        in.dist_opt = rows[i].dist, in.dp = rows[i].dp;
        lsim_memest_stage st;
        if (lsim_memest_stage_of(&in, 0, &st, NULL)) continue;
        double s = 2048, h = m->h, a = m->a, t = m->t, p = m->p, sbh = s * h, L = m->L, V = rows[i].V;
        double s2 = rows[i].rc ? 0 : 5 * a * s / (h * t);
        double per = rows[i].rc == 2 ? 2 * sbh : rows[i].sp ? sbh * (34 / t + s2) : sbh * (10 + 24 / t + s2);
        double act = L * per * (V > 1 ? 1 + (p - 1) / (p * V) : 1);
        double block = 12 * L * h * h + 13 * L * h + 2 * h, shard = (block / p + 51200 * h) / t;
        double states = shard * (rows[i].dist ? 6 + 12.0 / rows[i].dp : 18);
        double ours = st.weights + st.grads + st.optim;
        char dist[16] = "no";
        if (rows[i].dist) snprintf(dist, sizeof dist, "yes (%d)", rows[i].dp);
        printf("| %s | %d x %d | %d | %s | %s | %s | %.1f | %.1f | %.2f | %.2f | %+.1f %% | %.2f | %.2f | %+.2f %% | "
               "%.2f | %s |\n",
               m->name, m->t, m->p, rows[i].V, RC[rows[i].rc], rows[i].sp ? "yes" : "no", dist, per / 1e6,
               st.act_layer / 1e6, act / 1e9, st.activations / 1e9, 100 * (st.activations - act) / act, states / 1e9,
               ours / 1e9, 100 * (ours - states) / states, st.total / 1e9, st.total > 80e9 ? "OOM" : "fits");
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--table")) {
        print_table();
        return 0;
    }
    test_layer_activations();
    test_first_stage();
    test_inflight_schedule();
    test_params_and_states();
    test_job();
    test_synth_agrees();
    return check_result("test_memest");
}
