/* Workload synthesis options and the trends a synthesized step must follow
 * (synth.h, docs/synthesis.md "Options"; issue 15). Expected values are laws,
 * not outputs of the code under test:
 * - more data-parallel replicas add only the growth of the gradient
 *   all-reduces (with the reduction after the flush, exactly their summed
 *   growth; overlapped, never more);
 * - PP 2 -> 4 -> 8 at fixed micro-batches follows the 1F1B bubble law
 *   (m + p - 1)(tf + tb) within 5 %;
 * - full recomputation adds one forward pass of each layer, selective the
 *   attention core's forward;
 * - the memory check refuses GPT-3 175B at TP 8 x PP 2 (about 196 GB per
 *   GPU by the standard accounting) on 80 GB GPUs;
 * - sequence parallelism, scatter/gather and the distributed optimizer
 *   change the collectives as Megatron does;
 * - pipeline bubbles are idle time, not communication;
 * - gradient accumulation over micro-batches (--grad-acc buffer|autograd)
 *   moves (2 x gradient bytes + element bytes) per parameter per
 *   micro-batch (3 x element bytes, from the second micro-batch on, for
 *   autograd), over the parameter count of the model's shape, and nothing
 *   when fused;
 * - host stalls under fair-share scheduling: a GPU's host loses
 *   launches x stall_prob x stall_ns to them, within one stall whatever
 *   the draws (independent lengths at a fixed rate would spread the total
 *   over sqrt(stalls) x stall_sd_ns); a host becoming ready at a time
 *   unrelated to them (the step's start, a blocking call's return) waits
 *   with probability s / (s + w) (s, w: stall and work per launch) and
 *   then on average (m^2 + sd^2) / 2m (renewal theory's mean residual of a
 *   length-biased stall). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lumosim/engine.h"
#include "lumosim/job.h"
#include "lumosim/metrics.h"
#include "lumosim/synth.h"
#include "oracle_report.h"

static void small_cfg(lsim_synth_cfg *c)
{
    lsim_synth_cfg_default(c);
    lsim_model_builtin("gpt3-15b", &c->model, NULL);
    c->model.layers = 16;
    c->tp = c->pp = c->dp = 1;
    c->micro_batch = 1;
    c->global_batch = 2;
}

/* Synthesize every GPU, simulate the job; span, and per GPU the end array
 * (ends may be NULL) and the breakdown of GPU 0 (bd may be NULL). */
static int run(const lsim_synth_cfg *c, lsim_graph ***gout, lsim_ns *span, lsim_breakdown *bd)
{
    lsim_err err;
    size_t n = lsim_synth_ngpus(c);
    lsim_graph **g = calloc(n, sizeof *g);
    lsim_engine **e = calloc(n, sizeof *e);
    lsim_ns **w = calloc(n, sizeof *w);
    lsim_job *j = NULL;
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) rc = lsim_synth_gpu(c, (uint32_t)i, NULL, &g[i], &err);
    if (!rc) rc = lsim_job_match(g, n, &j, &err);
    for (size_t i = 0; !rc && i < n; i++) {
        rc = lsim_engine_new(g[i], &e[i], &err);
        w[i] = malloc((g[i]->n ? g[i]->n : 1) * sizeof **w);
    }
    if (!rc) rc = lsim_job_run(j, e, w, &err);
    *span = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_ns *en = lsim_engine_end(e[i]);
        for (size_t v = 0; v < g[i]->n; v++)
            if (en[v] > *span) *span = en[v];
    }
    if (!rc && bd) {
        lsim_rank_report r;
        lsim_job_waits(j, 0, g[0], lsim_engine_start(e[0]), lsim_engine_end(e[0]), w[0]);
        rc = lsim_metrics_compute_ex(g[0], lsim_engine_start(e[0]), lsim_engine_end(e[0]), 1000000, NULL, w[0], &r, &err);
        if (!rc) *bd = r.bd_predicted;
        /* and the independent oracle of the breakdown agrees */
        ref_report ref;
        if (!rc && ref_compute(g[0], lsim_engine_start(e[0]), lsim_engine_end(e[0]), 1000000, NULL, w[0], &ref) == 0) {
            CHECK(compare_report("synthesized job, GPU 0", &r, &ref) == 0);
            ref_free(&ref);
        }
        lsim_rank_report_clear(&r);
    }
    if (rc) fprintf(stderr, "run: %s\n", err.msg);
    for (size_t i = 0; i < n; i++) {
        lsim_engine_free(e[i]);
        free(w[i]);
    }
    free(e);
    free(w);
    lsim_job_free(j);
    if (gout && !rc) *gout = g;
    else {
        for (size_t i = 0; i < n; i++) lsim_graph_free(g[i]);
        free(g);
    }
    return rc;
}

static void free_job(lsim_graph **g, size_t n)
{
    for (size_t i = 0; g && i < n; i++) lsim_graph_free(g[i]);
    free(g);
}

static const char *nm(const lsim_graph *g, size_t v) { return lsim_strtab_get(g->strings, g->name[v]); }

/* summed durations of GPU kernels whose name contains `what` (and, if
 * given, `also`) */
static lsim_ns sum_kernels(const lsim_graph *g, const char *what, const char *also)
{
    lsim_ns s = 0;
    for (size_t v = 0; v < g->n; v++)
        if (g->kind[v] == LSIM_N_KERNEL && strstr(nm(g, v), what) && (!also || strstr(nm(g, v), also))) s += g->dur[v];
    return s;
}

/* ------------------------------------------------------------ DP */

static void test_dp_growth(void)
{
    lsim_synth_cfg c;
    small_cfg(&c);
    c.tp = 2;
    c.grad_reduce = LSIM_GR_AFTER;
    c.mem_check = 0;
    lsim_ns span[2];
    lsim_ns ar[2];
    for (int k = 0; k < 2; k++) {
        c.dp = k ? 4 : 2;
        c.global_batch = 2 * c.dp; /* the same micro-batches per replica */
        lsim_graph **g = NULL;
        CHECK(run(&c, &g, &span[k], NULL) == 0);
        if (!g) return;
        ar[k] = sum_kernels(g[0], "dp_allreduce", NULL);
        CHECK(ar[k] > 0);
        free_job(g, lsim_synth_ngpus(&c));
    }
    /* after the flush the all-reduces run back to back, nothing overlaps
     * them: the step grows by exactly their growth (rounding: 1 ns a node) */
    CHECK(ar[1] > ar[0]);
    CHECK_MSG(llabs((span[1] - span[0]) - (ar[1] - ar[0])) <= 100, "DP 2 -> 4: step +%lld ns, all-reduces +%lld ns",
              (long long)(span[1] - span[0]), (long long)(ar[1] - ar[0]));
    /* overlapped with the backward pass: never more than that growth */
    c.grad_reduce = LSIM_GR_OVERLAP;
    lsim_ns s2, s4;
    c.dp = 2, c.global_batch = 4;
    CHECK(run(&c, NULL, &s2, NULL) == 0);
    c.dp = 4, c.global_batch = 8;
    CHECK(run(&c, NULL, &s4, NULL) == 0);
    CHECK_MSG(s4 >= s2 && s4 - s2 <= ar[1] - ar[0] + 100, "overlapped: step +%lld ns, all-reduces +%lld ns",
              (long long)(s4 - s2), (long long)(ar[1] - ar[0]));
    /* --dp-cost: one replica whose all-reduces are those of 4 (buckets
     * in a group of one, timed for the full group): the DP 4 step */
    c.grad_reduce = LSIM_GR_AFTER;
    c.dp = 1, c.global_batch = 2, c.dp_cost = 4;
    lsim_ns s1;
    CHECK(run(&c, NULL, &s1, NULL) == 0);
    CHECK_MSG(llabs(s1 - span[1]) <= 100, "--dp-cost 4 at DP 1: %lld ns, DP 4: %lld ns", (long long)s1,
              (long long)span[1]);
}

/* ------------------------------------------------------------ PP */

static void test_bubble_law(void)
{
    /* equal stages (no embedding / head), no optimizer; PP 2, 4, 8 over 16
     * layers at m = 8 micro-batches; tf + tb is one stage's compute per
     * micro-batch (its kernels of micro-batch 0) */
    for (int p = 2; p <= 8; p *= 2) {
        lsim_synth_cfg c;
        small_cfg(&c);
        c.pp = p;
        c.global_batch = 8;
        c.embed_head = 0;
        c.optimizer = 0;
        lsim_graph **g = NULL;
        lsim_ns span = 0;
        CHECK(run(&c, &g, &span, NULL) == 0);
        if (!g) return;
        lsim_ns tfb = 0;
        for (size_t v = 0; v < g[0]->n; v++)
            if (g[0]->kind[v] == LSIM_N_KERNEL && !(g[0]->flags[v] & LSIM_NF_COLL) && strstr(nm(g[0], v), ".mb0."))
                tfb += g[0]->dur[v];
        double law = (double)(8 + p - 1) * (double)tfb, err = ((double)span - law) / law;
        CHECK_MSG(fabs(err) <= 0.05, "PP %d: step %lld ns, (m + p - 1)(tf + tb) = %.0f ns: %+.2f %%", p, (long long)span,
                  law, 100 * err);
        free_job(g, lsim_synth_ngpus(&c));
    }
}

/* ------------------------------------------------------------ recomputation */

static void test_recompute(void)
{
    lsim_synth_cfg c;
    small_cfg(&c);
    c.model.layers = 4;
    c.embed_head = 0;
    c.optimizer = 0;
    c.attention = LSIM_ATTN_UNFUSED;
    lsim_ns s[3];
    lsim_graph **g0 = NULL;
    for (int r = LSIM_RC_NONE; r <= LSIM_RC_FULL; r++) {
        c.recompute = r;
        lsim_graph **g = NULL;
        CHECK(run(&c, &g, &s[r], NULL) == 0);
        if (!g) return;
        if (r == LSIM_RC_NONE) g0 = g;
        else free_job(g, 1);
    }
    if (!g0) return;
    /* one GPU, the CPU ahead: the step is the sum of its kernels, so full
     * recomputation adds the forward pass of every layer and micro-batch
     * once, selective the attention core's forward (Q K^T, softmax, dropout) */
    lsim_ns fwd = sum_kernels(g0[0], ".fwd.", NULL);
    lsim_ns core = sum_kernels(g0[0], ".fwd.qk_gemm", NULL) + sum_kernels(g0[0], ".fwd.softmax", NULL) +
                   sum_kernels(g0[0], ".fwd.probs_dropout", NULL);
    CHECK(fwd > 0 && core > 0);
    double ef = ((double)(s[LSIM_RC_FULL] - s[LSIM_RC_NONE]) - (double)fwd) / (double)fwd;
    double es = ((double)(s[LSIM_RC_SELECTIVE] - s[LSIM_RC_NONE]) - (double)core) / (double)core;
    CHECK_MSG(fabs(ef) <= 0.01, "full recomputation adds %lld ns, one forward is %lld ns", (long long)(s[2] - s[0]),
              (long long)fwd);
    CHECK_MSG(fabs(es) <= 0.01, "selective recomputation adds %lld ns, the attention core %lld ns",
              (long long)(s[1] - s[0]), (long long)core);
    free_job(g0, 1);
}

/* ------------------------------------------------------------ memory */

static void test_memory(void)
{
    lsim_synth_cfg c;
    lsim_synth_cfg_default(&c);
    lsim_model_builtin("gpt3-175b", &c.model, NULL);
    c.tp = 8, c.pp = 2, c.dp = 1, c.micro_batch = 1, c.global_batch = 8;
    lsim_synth_mem m;
    lsim_synth_memory(&c, &m);
    /* 96 layers of 12 h^2 parameters (4 h A + 2 h ffn, A = h) and the
     * 51200 x 12288 embedding, over TP 8 and PP 2: about 10.9e9 per GPU,
     * 18 bytes each (bf16 weight, fp32 gradient, fp32 master, two moments) */
    double h = 12288, want = (48 * (12 * h * h) / 8 + 51200 / 8 * h) * 18;
    CHECK_MSG(fabs(m.states - want) / want < 0.01, "states %.4g, want %.4g", m.states, want);
    CHECK(m.states > 190e9 && m.states < 200e9); /* "about 196 GB" */
    /* activations on top: stage 0 holds 2 micro-batches of 48 layers, (10 +
     * 24 / 8) s b h bytes each (flash attention) */
    CHECK_MSG(fabs(m.activations - 2 * 48 * 13 * 2048 * h) / m.activations < 0.01, "activations %.4g", m.activations);
    lsim_err err;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "GB per GPU") && strstr(err.msg, "80.0 GB"));
    c.mem_check = 0;
    CHECK(lsim_synth_check(&c, &err) == 0);
    /* the distributed optimizer shards the 12 bytes of optimizer state */
    c.mem_check = 1, c.dp = 8, c.global_batch = 64, c.dist_opt = 1, c.pp = 8;
    lsim_synth_memory(&c, &m);
    double p = 12 * (12 * h * h) / 8 + 51200 / 8 * h;
    CHECK_MSG(fabs(m.states - p * (6 + 12.0 / 8)) / (p * 7.5) < 0.01, "states %.4g", m.states);
    CHECK(lsim_synth_check(&c, &err) == 0);
}

/* ------------------------------------------------------------ collectives */

static void test_collectives(void)
{
    lsim_synth_cfg c;
    small_cfg(&c);
    c.model.layers = 4;
    c.tp = 2, c.pp = 2, c.dp = 2, c.global_batch = 4;
    c.seq_parallel = 1;
    c.dist_opt = 1;
    lsim_err err;
    lsim_graph *g = NULL;
    CHECK(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0);
    if (!g) return;
    CHECK(strstr(g->source, " opts:sp,distopt") != NULL);
    int64_t act = 2048LL * 6144 * 2;
    size_t ar = 0, rs = 0, ag = 0, send = 0, dprs = 0, dpag = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (g->coll[v] < 0) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        const char *pg = lsim_strtab_get(g->strings, ci->pg_name);
        if (!strncmp(pg, "tp:", 3)) {
            if (ci->kind == LSIM_COLL_ALLREDUCE) ar++;
            if (ci->kind == LSIM_COLL_REDUCESCATTER) {
                rs++;
                CHECK(ci->bytes == act || strstr(nm(g, v), "head"));
            }
            if (ci->kind == LSIM_COLL_ALLGATHER) {
                ag++;
                CHECK_I64(ci->bytes, act / 2);
            }
        }
        if (ci->kind == LSIM_COLL_SEND) {
            send++;
            CHECK_I64(ci->bytes, act / 2); /* the shard: SP */
        }
        if (!strncmp(pg, "dp:", 3) && ci->kind == LSIM_COLL_REDUCESCATTER) dprs++;
        if (!strncmp(pg, "dp:", 3) && ci->kind == LSIM_COLL_ALLGATHER) dpag++;
    }
    /* stage 0: 2 layers x 2 micro-batches; forward 2 RS + 2 AG, backward
     * 2 RS + 4 AG (the gradients and the inputs of the weight gradients) a
     * layer; the embedding's RS forward, AG backward; only the loss keeps
     * an all-reduce (on the last stage, not this one) */
    CHECK_I64(rs, 2 * 2 * 4 + 2);
    CHECK_I64(ag, 2 * 2 * 6 + 2);
    CHECK_I64(ar, 0);
    CHECK_I64(send, 2);
    CHECK(dprs > 0 && dprs == dpag); /* each bucket: gradient RS, parameter AG */
    lsim_graph_free(g);
    /* scatter/gather without SP: sends carry 1/TP, an all-gather follows
     * each receive */
    c.seq_parallel = 0, c.dist_opt = 0, c.scatter_gather = 1;
    CHECK(lsim_synth_gpu(&c, 4, NULL, &g, &err) == 0); /* stage 1 */
    if (!g) return;
    size_t recv = 0, ppag = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (g->coll[v] < 0) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        if (ci->kind == LSIM_COLL_RECV) {
            recv++;
            CHECK_I64(ci->bytes, act / 2);
        }
        if (strstr(nm(g, v), "pp_ag")) {
            ppag++;
            CHECK_I64(ci->bytes, act / 2);
        }
    }
    CHECK_I64(recv, 2);
    CHECK_I64(ppag, recv);
    lsim_graph_free(g);
}

/* ------------------------------------------------------------ bubbles */

static void test_bubbles_idle(void)
{
    /* TP 1, DP 1: the only collectives are pipeline sends and receives, so
     * all waiting is a bubble: idle ("other"), none of it communication */
    lsim_synth_cfg c;
    small_cfg(&c);
    c.pp = 4, c.global_batch = 4;
    lsim_ns span;
    lsim_breakdown bd;
    lsim_graph **g = NULL;
    CHECK(run(&c, &g, &span, &bd) == 0);
    CHECK_I64(bd.exposed_comm_wait, 0);
    CHECK(bd.other > span / 10); /* stage 0 idles through 3 of 7 micro-batch slots in each direction */
    free_job(g, 4);
}

/* ------------------------------------------------------------ bad input */

static void test_bad(void)
{
    lsim_synth_cfg c;
    lsim_err err;
    small_cfg(&c);
    c.tp = 3;
    c.model.hidden = 6144, c.model.heads = 48; /* 48 heads / 3 fine */
    c.model.ffn = 12288;
    c.model.vocab = 51202;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "vocabulary 51202"));
    small_cfg(&c);
    c.tp = 3, c.seq_parallel = 1, c.model.seq = 2048, c.model.vocab = 51204;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "sequence length 2048 is not divisible by TP = 3"));
    small_cfg(&c);
    c.pp = 2, c.vstages = 2, c.forward_only = 1, c.global_batch = 2;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "--forward-only"));
    small_cfg(&c);
    c.pp = 3; /* 16 layers */
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "16 layers are not divisible by PP x V = 3 x 1"));
    small_cfg(&c);
    c.gpu.peak_flops = 989.4; /* TFLOP/s where FLOP/s is expected */
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "peak_flops") && strstr(err.msg, "989.4"));
}

/* ------------------------------------------------------------ gradient accumulation */

/* kernels whose name contains `what` on graph g: count, and summed durations */
static int count_kernels(const lsim_graph *g, const char *what, lsim_ns *sum)
{
    int n = 0;
    *sum = 0;
    for (size_t v = 0; v < g->n; v++)
        if (g->kind[v] == LSIM_N_KERNEL && strstr(nm(g, v), what)) n++, *sum += g->dur[v];
    return n;
}

static void test_grad_acc(void)
{
    /* one GPU, 4 layers, 4 micro-batches, the embedding (tied head on the
     * same GPU); element-wise kernels by bytes alone (no floor), so that
     * the adds' summed time is their bytes over the memory bandwidth */
    lsim_synth_cfg c;
    small_cfg(&c);
    c.model.layers = 4;
    c.global_batch = 4;
    c.optimizer = 0;
    c.grad_bytes = 2;
    c.gpu.kernel_min_ns = 1; /* every add here is longer */
    const int m = 4, L = 4;
    double h = c.model.hidden, A = (double)c.model.heads * c.model.head_dim, f = c.model.ffn, V = c.model.vocab;
    /* parameters of the shape, counted here: per layer QKV (h x 3A), the
     * projection (A x h), FC1 and FC2 (h x f each), their biases (3A, h,
     * f, h) and two layer norms (2h each); the embedding V x h */
    double layer = 3 * h * A + A * h + 2 * h * f + 3 * A + h + f + h + 4 * h, params = L * layer + V * h;
    double bw = c.gpu.mem_bw * c.gpu.mem_eff;
    lsim_ns span[3] = {0, 0, 0}, acc[3] = {0, 0, 0};
    int n[3] = {0, 0, 0};
    for (int a = LSIM_GA_FUSED; a <= LSIM_GA_AUTOGRAD; a++) {
        c.grad_acc = a;
        lsim_graph **g = NULL;
        CHECK(run(&c, &g, &span[a], NULL) == 0);
        if (!g) return;
        n[a] = count_kernels(g[0], "grad_acc", &acc[a]);
        /* autograd keeps the first micro-batch's gradients as they are */
        int first = 0;
        for (size_t v = 0; v < g[0]->n; v++)
            first += g[0]->kind[v] == LSIM_N_KERNEL && strstr(nm(g[0], v), ".mb0.") && strstr(nm(g[0], v), "grad_acc");
        CHECK_MSG(first == (a == LSIM_GA_BUFFER ? 12 * L + 1 : 0), "grad-acc %d: %d adds in micro-batch 0", a, first);
        free_job(g, 1);
    }
    /* fused: no kernel; buffer: 12 tensors per layer and the embedding,
     * every micro-batch; autograd: from the second micro-batch on */
    CHECK_MSG(n[LSIM_GA_FUSED] == 0, "fused: %d adds", n[0]);
    CHECK_MSG(n[LSIM_GA_BUFFER] == m * (12 * L + 1), "buffer: %d adds, want %d", n[1], m * (12 * L + 1));
    CHECK_MSG(n[LSIM_GA_AUTOGRAD] == (m - 1) * (12 * L + 1), "autograd: %d adds, want %d", n[2], (m - 1) * (12 * L + 1));
    /* bytes: main gradient read and written (2 bytes each here) and the new
     * gradient read (2): 6 per parameter; autograd 3 x 2 */
    double want_b = m * params * 6 / bw * 1e9, want_a = (m - 1) * params * 6 / bw * 1e9;
    CHECK_MSG(fabs((double)acc[1] - want_b) <= n[1] + 1e-6 * want_b, "buffer: adds %lld ns, %.0f ns by bytes",
              (long long)acc[1], want_b);
    CHECK_MSG(fabs((double)acc[2] - want_a) <= n[2] + 1e-6 * want_a, "autograd: adds %lld ns, %.0f ns by bytes",
              (long long)acc[2], want_a);
    /* and the step is longer by at least the adds (one GPU: they are on
     * its only compute stream) */
    CHECK_MSG(span[1] - span[0] >= acc[1] - 100, "buffer: step +%lld ns, adds %lld ns", (long long)(span[1] - span[0]),
              (long long)acc[1]);
    /* fp32 main gradients: 4 + 4 + 2 bytes per parameter */
    c.grad_acc = LSIM_GA_BUFFER;
    c.grad_bytes = 4;
    lsim_graph **g = NULL;
    lsim_ns s4 = 0, a4 = 0;
    CHECK(run(&c, &g, &s4, NULL) == 0);
    if (!g) return;
    count_kernels(g[0], "grad_acc", &a4);
    free_job(g, 1);
    double want4 = m * params * 10 / bw * 1e9;
    CHECK_MSG(fabs((double)a4 - want4) <= n[1] + 1e-6 * want4, "fp32 buffer: adds %lld ns, %.0f ns by bytes",
              (long long)a4, want4);
    /* PP 2: the first stage adds the embedding's gradient, the last its
     * tied copy in the output layer; forward-only adds nothing */
    c.grad_bytes = 2;
    c.pp = 2;
    CHECK(run(&c, &g, &s4, NULL) == 0);
    if (!g) return;
    lsim_ns d;
    CHECK(count_kernels(g[0], "emb_grad_acc", &d) == m && count_kernels(g[0], "head_grad_acc", &d) == 0);
    CHECK(count_kernels(g[1], "emb_grad_acc", &d) == 0 && count_kernels(g[1], "head_grad_acc", &d) == m);
    CHECK_MSG(fabs((double)d - m * V * h * 6 / bw * 1e9) <= m + 1e-6 * d, "head adds %lld ns", (long long)d);
    CHECK(count_kernels(g[0], "grad_acc", &d) == m * (12 * L / 2 + 1));
    free_job(g, 2);
    c.pp = 1;
    c.forward_only = 1;
    CHECK(run(&c, &g, &s4, NULL) == 0);
    if (!g) return;
    CHECK(count_kernels(g[0], "grad_acc", &d) == 0);
    free_job(g, 1);
    /* an unknown kind is refused */
    lsim_err err;
    c.forward_only = 0;
    c.grad_acc = 7;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "gradient accumulation"));
}

/* ------------------------------------------------------------ host stalls */

static void stall_cfg(lsim_synth_cfg *c)
{
    small_cfg(c);
    c->gpu.host_dispatch_ns = 200000;
    c->gpu.launch_cpu_ns = 10000;
    c->gpu.host_stall_prob = 0.04;
    c->gpu.host_stall_ns = 15000000;
    c->gpu.host_stall_sd_ns = 9000000;
    c->mem_check = 0; /* the 16-layer 15B shape on one GPU: its time, not its memory */
}

static void test_stall_share(void)
{
    lsim_synth_cfg c;
    lsim_err err;
    stall_cfg(&c);
    const lsim_ns lcpu = c.gpu.host_dispatch_ns + c.gpu.launch_cpu_ns;
    const double m = (double)c.gpu.host_stall_ns;
    enum { SEEDS = 16 };
    double tot[SEEDS], sum = 0, want = 0;
    size_t nl = 0;
    for (int k = 0; k < SEEDS; k++) {
        lsim_graph *g = NULL;
        c.seed = (uint64_t)k + 1;
        CHECK_MSG(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0, "%s", err.msg);
        if (!g) return;
        tot[k] = 0, nl = 0;
        for (size_t v = 0; v < g->n; v++)
            if (g->kind[v] == LSIM_N_RUNTIME && g->corr[v] > 0) { /* a launch call: dispatch + call + its stall */
                CHECK(g->dur[v] >= lcpu);
                tot[k] += (double)(g->dur[v] - lcpu);
                nl++;
            }
        lsim_graph_free(g);
        want = (double)nl * c.gpu.host_stall_prob * m;
        /* conservation: the stalls sum to the share, within one stall
         * (the random first phase and the last stall's overshoot) */
        CHECK_MSG(fabs(tot[k] - want) <= 4 * m, "seed %d: stalls %.1f ms over %zu launches, share %.1f ms", k + 1,
                  tot[k] / 1e6, nl, want / 1e6);
        sum += tot[k];
    }
    double mean = sum / SEEDS, var = 0;
    for (int k = 0; k < SEEDS; k++) var += (tot[k] - mean) * (tot[k] - mean);
    double sd = sqrt(var / (SEEDS - 1)), indep = sqrt(want / m) * (double)c.gpu.host_stall_sd_ns;
    CHECK_MSG(nl > 500, "%zu launches", nl);
    CHECK_MSG(sd < 0.35 * indep, "stall totals' sd %.1f ms over %d seeds; independent lengths: %.1f ms", sd / 1e6,
              SEEDS, indep / 1e6);
    /* without stalls, every launch lasts exactly dispatch + call */
    c.gpu.host_stall_prob = 0;
    lsim_graph *g = NULL;
    CHECK(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0);
    for (size_t v = 0; g && v < g->n; v++)
        if (g->kind[v] == LSIM_N_RUNTIME && g->corr[v] > 0) CHECK(g->dur[v] == lcpu);
    for (size_t v = 0; g && v < g->n; v++) CHECK(g->release[v] <= 0 || g->kind[v] != LSIM_N_RUNTIME);
    lsim_graph_free(g);
}

static void test_wake(void)
{
    lsim_emit E;
    memset(&E, 0, sizeof E);
    E.lcpu = 210000;
    E.rng = 12345;
    CHECK(lsim_emit_wake(&E) == 0); /* no stalls: no wait */
    E.stall_prob = 0.04;
    E.stall_ns = 15000000;
    E.stall_sd_ns = 9000000;
    const double m = 15e6, sd = 9e6, s = 0.04 * m, w = 210000, f = s / (s + w);
    const int N = 200000;
    double sum = 0;
    int late = 0;
    for (int i = 0; i < N; i++) {
        lsim_ns y = lsim_emit_wake(&E);
        CHECK(y >= 0);
        late += y > 0;
        sum += (double)y;
    }
    double frac = (double)late / N, mean = sum / N, want = f * (m * m + sd * sd) / (2 * m);
    CHECK_MSG(fabs(frac - f) < 0.01, "late %.4f of the wakes, want %.4f", frac, f);
    CHECK_MSG(fabs(mean - want) < 0.02 * want, "mean wait %.3f ms, want %.3f ms", mean / 1e6, want / 1e6);
}

/* --attention-kernel fa2: the layer's attention kernels (forward and
 * backward) costed by the spec's FlashAttention-2 curve (the cost model
 * called here with that curve), the options recording it; refused on a
 * spec without the curve and with the unfused attention */
static void test_attention_kernel(void)
{
    lsim_synth_cfg c;
    small_cfg(&c);
    c.mem_check = 0; /* 16 layers of GPT-3 15B on one GPU: the curve is what is checked */
    lsim_err err = {0};
    lsim_gpu_spec g = c.gpu;
    CHECK(g.attn_fa2_eff_max > 0);
    CHECK_MSG(lsim_synth_attn_kernel(&c, LSIM_AK_FA2, &err) == 0, "%s", err.msg);
    g.attn_eff_max = g.attn_fa2_eff_max, g.attn_eff_half = g.attn_fa2_eff_half;
    g.attn_bwd_eff_max = g.attn_fa2_bwd_eff_max, g.attn_bwd_eff_half = g.attn_fa2_bwd_eff_half;
    CHECK(g.attn_bwd_eff_max > 0 && g.attn_bwd_eff_max != g.attn_eff_max);
    const lsim_model_shape *M = &c.model;
    lsim_ns f = lsim_cost_attention(&g, c.micro_batch, M->heads / c.tp, M->seq, M->head_dim, 1, 0);
    lsim_ns b = lsim_cost_attention(&g, c.micro_batch, M->heads / c.tp, M->seq, M->head_dim, 1, 1);
    lsim_graph *gr = NULL;
    CHECK_MSG(lsim_synth_gpu(&c, 0, NULL, &gr, &err) == 0, "%s", err.msg);
    size_t nf = 0, nb = 0;
    for (size_t v = 0; gr && v < gr->n; v++) {
        const char *nm = lsim_strtab_get(gr->strings, gr->name[v]);
        if (gr->kind[v] != LSIM_N_KERNEL) continue;
        if (!strcmp(nm, "L0.mb0.fwd.attn")) {
            nf++;
            CHECK_I64(gr->dur[v], f);
        }
        if (!strcmp(nm, "L0.mb0.bwd.attn")) {
            nb++;
            CHECK_I64(gr->dur[v], b);
        }
    }
    CHECK(nf == 1 && nb == 1);
    CHECK(gr && strstr(gr->source, "attn=fa2") != NULL);
    lsim_graph_free(gr);
    small_cfg(&c);
    c.attention = LSIM_ATTN_UNFUSED;
    CHECK(lsim_synth_attn_kernel(&c, LSIM_AK_FA3, &err) == LSIM_EARG && strstr(err.msg, "with --attention unfused"));
    small_cfg(&c);
    CHECK(lsim_gpu_spec_builtin("a100", &c.gpu, NULL) == 0);
    CHECK(lsim_synth_attn_kernel(&c, LSIM_AK_FA2, &err) == LSIM_EARG && strstr(err.msg, "a100 has no FlashAttention-2"));
}

int main(void)
{
    test_attention_kernel();
    test_dp_growth();
    test_bubble_law();
    test_recompute();
    test_memory();
    test_collectives();
    test_bubbles_idle();
    test_bad();
    test_grad_acc();
    test_stall_share();
    test_wake();
    return check_result("test_synth_options");
}
