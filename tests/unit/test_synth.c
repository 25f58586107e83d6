/* Point-to-point coupling (job.c) and workload synthesis (synth.h).
 * Expected values are hand-derived: small graphs built node by node, the
 * 1F1B / interleaved orders written out by hand, and closed forms for
 * trivial configurations (a single GPU: the first launch's latency plus the
 * sum of the kernels; two equal pipeline stages with free communication:
 * (m + p - 1)(tf + tb)). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lumosim/engine.h"
#include "lumosim/job.h"
#include "lumosim/metrics.h"
#include "lumosim/synth.h"

/* ------------------------------------------------------------ helpers */

/* Simulate graphs g[0..n) as one job; ends[i] gets engine i's end array
 * copied (caller frees), *span the job's predicted span (from 0). */
static int grouped_engines; /* run_job: lsim_engines_new instead of one lsim_engine_new per GPU */

static int run_job(lsim_graph **g, size_t n, lsim_job **jout, lsim_ns **ends, lsim_ns **starts, lsim_ns *span, lsim_err *err)
{
    lsim_job *j = NULL;
    lsim_engine **e = calloc(n, sizeof *e);
    lsim_ns **w = calloc(n, sizeof *w);
    int rc = lsim_job_match(g, n, &j, err);
    if (!rc && grouped_engines) rc = lsim_engines_new((const lsim_graph *const *)g, n, e, err);
    for (size_t i = 0; !rc && i < n; i++) {
        if (!grouped_engines) rc = lsim_engine_new(g[i], &e[i], err);
        w[i] = malloc((g[i]->n ? g[i]->n : 1) * sizeof **w);
    }
    if (!rc) rc = lsim_job_run(j, e, w, err);
    *span = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_ns *en = lsim_engine_end(e[i]), *st = lsim_engine_start(e[i]);
        if (ends) {
            ends[i] = malloc(g[i]->n * sizeof **ends);
            memcpy(ends[i], en, g[i]->n * sizeof **ends);
        }
        if (starts) {
            starts[i] = malloc(g[i]->n * sizeof **starts);
            memcpy(starts[i], st, g[i]->n * sizeof **starts);
        }
        for (size_t v = 0; v < g[i]->n; v++)
            if (en[v] > *span) *span = en[v];
        /* the waits recovered after the run are the ones the run wrote */
        lsim_ns *rw = malloc((g[i]->n ? g[i]->n : 1) * sizeof *rw);
        lsim_job_waits(j, i, g[i], st, en, rw);
        CHECK_MSG(memcmp(rw, w[i], g[i]->n * sizeof *rw) == 0, "GPU %zu: lsim_job_waits differs from the run's", i);
        free(rw);
    }
    for (size_t i = 0; i < n; i++) {
        lsim_engine_free(e[i]);
        free(w[i]);
    }
    free(e);
    free(w);
    if (jout && !rc) *jout = j;
    else lsim_job_free(j);
    return rc;
}

static void free_graphs(lsim_graph **g, size_t n)
{
    for (size_t i = 0; i < n; i++) lsim_graph_free(g[i]);
}

/* GPU `rank` of a 2-GPU job: kernel K (release 0, dur kdur) then a p2p
 * kernel (dur 50, `bytes`) on one stream, then kernel C (dur 10). */
static lsim_graph *p2p_gpu(int32_t rank, lsim_ns kdur, lsim_coll_kind kind, int64_t bytes, const char *pg,
                           const char *pg_ranks)
{
    lsim_gbuilder *b;
    lsim_graph *g = NULL;
    lsim_err err;
    uint32_t s, k, p, c;
    if (lsim_gb_new(rank ? "gpu1" : "gpu0", rank, 2, &b, &err)) return NULL;
    lsim_gb_proc(b, 1, rank, 7, &s);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s, "K", kdur, &k);
    lsim_gb_set_release(b, k, 0);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s, "P", 50, &p);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s, "C", 10, &c);
    lsim_gb_edge(b, k, p, LSIM_E_STREAM, 0);
    lsim_gb_edge(b, p, c, LSIM_E_STREAM, 0);
    lsim_gb_coll(b, p, kind, bytes, 2, pg, 0);
    if (lsim_gb_finish(b, &g, &err)) return NULL;
    if (pg_ranks) {
        uint32_t id;
        lsim_strtab_intern(g->strings, pg_ranks, strlen(pg_ranks), &id);
        g->colls[0].pg_ranks = id;
    }
    return g;
}

/* ------------------------------------------------------------ p2p */

static void test_p2p(void)
{
    lsim_err err = {0};
    lsim_ns span = 0, *ends[2] = {NULL, NULL};
    lsim_job *j = NULL;
    /* send after 100 ns on GPU 0, recv after 300 ns on GPU 1: both end at
     * max(100, 300) + 50 = 350; C on each at 350 + 10 = 360 */
    lsim_graph *g[2] = {p2p_gpu(0, 100, LSIM_COLL_SEND, 1000, "p2p:0->1", NULL),
                        p2p_gpu(1, 300, LSIM_COLL_RECV, 1000, "p2p:0->1", NULL)};
    CHECK(g[0] && g[1]);
    CHECK(run_job(g, 2, &j, ends, NULL, &span, &err) == 0);
    if (j) {
        CHECK_I64(j->ninst, 1);
        CHECK_I64(j->p2p_inst, 1);
        CHECK_I64(j->uncoupled_p2p, 0);
        CHECK_I64(j->transfer[0], 50);
        CHECK_I64(ends[0][1], 350);
        CHECK_I64(ends[1][1], 350);
        CHECK_I64(ends[0][2], 360);
        CHECK_I64(span, 360);
    }
    lsim_job_free(j);
    j = NULL;
    free(ends[0]);
    free(ends[1]);
    free_graphs(g, 2);

    /* the peer from a two-rank process group (as Kineto metadata gives it) */
    g[0] = p2p_gpu(0, 100, LSIM_COLL_SEND, 1000, "pp0", "[0, 1]");
    g[1] = p2p_gpu(1, 300, LSIM_COLL_RECV, 1000, "pp0", "[0, 1]");
    CHECK(run_job(g, 2, &j, ends, NULL, &span, &err) == 0);
    if (j) {
        CHECK_I64(j->p2p_inst, 1);
        CHECK_I64(ends[0][1], 350);
    }
    lsim_job_free(j);
    j = NULL;
    free(ends[0]);
    free(ends[1]);
    free_graphs(g, 2);

    /* peer unknown: uncoupled, counted, traced durations (100 + 50, 300 + 50) */
    g[0] = p2p_gpu(0, 100, LSIM_COLL_SEND, 1000, NULL, NULL);
    g[1] = p2p_gpu(1, 300, LSIM_COLL_RECV, 1000, NULL, NULL);
    CHECK(run_job(g, 2, &j, ends, NULL, &span, &err) == 0);
    if (j) {
        CHECK_I64(j->ninst, 0);
        CHECK_I64(j->uncoupled_p2p, 2);
        CHECK_I64(ends[0][1], 150);
        CHECK_I64(ends[1][1], 350);
    }
    lsim_job_free(j);
    j = NULL;
    free(ends[0]);
    free(ends[1]);
    free_graphs(g, 2);

    /* a send with no recv: the error names the pair, the position and both ranks */
    g[0] = p2p_gpu(0, 100, LSIM_COLL_SEND, 1000, "p2p:0->1", NULL);
    g[1] = p2p_gpu(1, 300, LSIM_COLL_RECV, 1000, "p2p:1->0", NULL);
    CHECK(g[1] == NULL || lsim_job_match(g, 2, &j, &err) != 0);
    /* (rank 1 receiving on 1->0 is itself a contradiction: it is not the receiver) */
    CHECK_MSG(strstr(err.msg, "1->0") != NULL, "%s", err.msg);
    free_graphs(g, 2);
    g[0] = p2p_gpu(0, 100, LSIM_COLL_SEND, 1000, "p2p:0->1", NULL);
    g[1] = p2p_gpu(1, 300, LSIM_COLL_SEND, 1000, "p2p:1->0", NULL);
    memset(&err, 0, sizeof err);
    CHECK(lsim_job_match(g, 2, &j, &err) != 0);
    CHECK_MSG(strstr(err.msg, "0->1") && strstr(err.msg, "no matching recv on rank 1") && strstr(err.msg, "#0"), "%s",
              err.msg);
    free_graphs(g, 2);

    /* sizes differ */
    g[0] = p2p_gpu(0, 100, LSIM_COLL_SEND, 1000, "p2p:0->1", NULL);
    g[1] = p2p_gpu(1, 300, LSIM_COLL_RECV, 2000, "p2p:0->1", NULL);
    memset(&err, 0, sizeof err);
    CHECK(lsim_job_match(g, 2, &j, &err) != 0);
    CHECK_MSG(strstr(err.msg, "rank 0 sends 1000 bytes but rank 1 receives 2000"), "%s", err.msg);
    free_graphs(g, 2);
}

/* ------------------------------------------------------------ schedules */

static void test_schedules(void)
{
    lsim_synth_step s[64];
    int w = -1;
    lsim_err err;
    /* 1F1B, 4 stages, stage 1, 6 micro-batches: warm-up 4-1-1 = 2 */
    static const char *const want1 = "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5";
    char got[512] = "";
    CHECK(lsim_synth_schedule(4, 1, 6, 1, s, &w, &err) == 0);
    CHECK_I64(w, 2);
    for (int i = 0; i < 12; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%c%d", i ? " " : "", s[i].bwd ? 'B' : 'F', s[i].mb);
    CHECK_STR(got, want1);
    /* the last stage alternates from the start */
    CHECK(lsim_synth_schedule(4, 3, 3, 1, s, &w, &err) == 0);
    CHECK_I64(w, 0);
    got[0] = 0;
    for (int i = 0; i < 6; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%c%d", i ? " " : "", s[i].bwd ? 'B' : 'F', s[i].mb);
    CHECK_STR(got, "F0 B0 F1 B1 F2 B2");
    /* interleaved, 2 stages, 2 chunks, 4 micro-batches, stage 0: warm-up
     * (2-0-1)*2 + (2-1)*2 = 4 forward steps, chunk = (k/2)%2 */
    CHECK(lsim_synth_schedule(2, 0, 4, 2, s, &w, &err) == 0);
    CHECK_I64(w, 4);
    got[0] = 0;
    for (int i = 0; i < 16; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%c%d.%d", i ? " " : "", s[i].bwd ? 'B' : 'F', s[i].chunk,
                 s[i].mb);
    CHECK_STR(got, "F0.0 F0.1 F1.0 F1.1 F0.2 B1.0 F0.3 B1.1 F1.2 B0.0 F1.3 B0.1 B1.2 B1.3 B0.2 B0.3");
    CHECK(lsim_synth_schedule(2, 0, 3, 2, s, &w, &err) == LSIM_EARG); /* 3 micro-batches, PP 2 */
}

/* ------------------------------------------------------------ synthesis */

static void tiny_cfg(lsim_synth_cfg *c)
{
    lsim_synth_cfg_default(c);
    lsim_model_builtin("gpt3-15b", &c->model, NULL);
    c->model.layers = 4;
    c->tp = 2;
    c->pp = 2;
    c->dp = 2;
    c->micro_batch = 1;
    c->global_batch = 8; /* m = 8 / (1 x 2) = 4 */
}

static int synth_all(const lsim_synth_cfg *c, lsim_graph **g, size_t n)
{
    lsim_err err;
    for (size_t i = 0; i < n; i++)
        if (lsim_synth_gpu(c, (uint32_t)i, NULL, &g[i], &err)) {
            fprintf(stderr, "synth: %s\n", err.msg);
            return -1;
        }
    return 0;
}

static int tagged(const char *s)
{
    /* <where>.<when>.<what>: where L<n> | emb | head | grad | step;
     * when mb<n>.fwd | mb<n>.bwd | opt | end */
    const char *p = s;
    if (p[0] == 'L' && p[1] >= '0' && p[1] <= '9') {
        p++;
        while (*p >= '0' && *p <= '9') p++;
    } else if (!strncmp(p, "emb", 3) || !strncmp(p, "grad", 4) || !strncmp(p, "head", 4) || !strncmp(p, "step", 4)) {
        while (*p && *p != '.') p++;
    } else {
        return 0;
    }
    if (*p++ != '.') return 0;
    if (!strncmp(p, "mb", 2) && p[2] >= '0' && p[2] <= '9') {
        p += 2;
        while (*p >= '0' && *p <= '9') p++;
        return !strncmp(p, ".fwd.", 5) || !strncmp(p, ".bwd.", 5);
    }
    return !strncmp(p, "opt.", 4) || !strncmp(p, "end.", 4);
}

static void test_structure(void)
{
    lsim_synth_cfg c;
    tiny_cfg(&c);
    lsim_err err;
    CHECK(lsim_synth_check(&c, &err) == 0);
    lsim_graph *g[8] = {NULL};
    CHECK(synth_all(&c, g, 8) == 0);
    if (!g[7]) return;
    /* GPU 0: stage 0 (layers 0-1 and the embedding), tp 0, dp 0 */
    const lsim_graph *g0 = g[0];
    size_t compute = 0, launches = 0, tp = 0, dp = 0, send = 0, recv = 0, untagged = 0, kernels = 0;
    for (size_t v = 0; v < g0->n; v++) {
        const char *nm = lsim_strtab_get(g0->strings, g0->name[v]);
        if (!tagged(nm)) {
            if (untagged++ < 3) fprintf(stderr, "untagged node name: %s\n", nm);
        }
        if (g0->kind[v] == LSIM_N_RUNTIME && !(g0->flags[v] & LSIM_NF_BLOCKING)) launches++;
        if (g0->kind[v] != LSIM_N_KERNEL) continue;
        kernels++;
        if (!(g0->flags[v] & LSIM_NF_COLL)) {
            compute++;
            continue;
        }
        const lsim_coll_info *ci = &g0->colls[g0->coll[v]];
        const char *pg = lsim_strtab_get(g0->strings, ci->pg_name);
        if (ci->kind == LSIM_COLL_SEND) {
            send++;
            CHECK_STR(pg, "p2p:0->4#fwd"); /* stage 1, tp 0, dp 0: 0 + 2 (0 + 2 x 1) = 4 */
        } else if (ci->kind == LSIM_COLL_RECV) {
            recv++;
            CHECK_STR(pg, "p2p:4->0#bwd");
        } else if (!strcmp(pg, "tp:0:0")) {
            CHECK_I64(ci->seq, (int64_t)tp);
            CHECK_I64(ci->group_size, 2);
            tp++;
        } else if (!strcmp(pg, "dp:0:0")) {
            CHECK_I64(ci->seq, (int64_t)dp);
            dp++;
        }
        CHECK(ci->bytes > 0);
        CHECK(g0->dur[v] > 0);
    }
    CHECK_I64(untagged, 0);
    /* 2 layers x 4 micro-batches x (10 forward: ln1 qkv attn proj add ln2
     * fc1 gelu fc2 add; 16 backward: add fc2 dgrad+wgrad gelu fc1
     * dgrad+wgrad ln2 residual-sum add proj dgrad+wgrad attn qkv
     * dgrad+wgrad ln1 residual-sum) + embedding (1 + 1) x 4 + optimizer (2
     * layers + embedding) = 208 + 8 + 3 */
    CHECK_I64(compute, 219);
    /* TP all-reduces: 2 layers x 4 micro-batches x (2 + 2) + the
     * embedding's forward all-reduce x 4 */
    CHECK_I64(tp, 36);
    /* each layer (151 M parameters per GPU) and the embedding (157 M)
     * exceeds a 40 M bucket: one all-reduce each */
    CHECK_I64(dp, 3);
    CHECK_I64(send, 4);
    CHECK_I64(recv, 4);
    CHECK_I64(launches, kernels); /* one launch call per kernel */
    /* the job couples: per TP x DP slot, 4 activations forward and 4
     * gradients backward */
    lsim_job *j = NULL;
    CHECK(lsim_job_match(g, 8, &j, &err) == 0);
    if (j) {
        CHECK_I64(j->p2p_inst, 4 * 4 * 2);
        CHECK_I64(j->uncoupled_p2p, 0);
        /* 4 TP groups x 36 + 4 DP groups x 3 + 32 pairs */
        CHECK_I64(j->ninst, 4 * 36 + 4 * 3 + 32);
        for (size_t k = 0; k < j->ninst; k++) CHECK(j->transfer[k] > 0);
    }
    lsim_job_free(j);
    /* the k-th send and the k-th recv on a channel carry the same micro-batch */
    for (size_t v = 0; v < g[0]->n; v++) {
        if (g[0]->kind[v] != LSIM_N_KERNEL || g[0]->coll[v] < 0) continue;
        const lsim_coll_info *ci = &g[0]->colls[g[0]->coll[v]];
        if (ci->kind != LSIM_COLL_SEND) continue;
        const char *sn = lsim_strtab_get(g[0]->strings, g[0]->name[v]);
        for (size_t u = 0; u < g[4]->n; u++) {
            if (g[4]->kind[u] != LSIM_N_KERNEL || g[4]->coll[u] < 0) continue;
            const lsim_coll_info *cr = &g[4]->colls[g[4]->coll[u]];
            if (cr->kind != LSIM_COLL_RECV || cr->seq != ci->seq ||
                strcmp(lsim_strtab_get(g[4]->strings, cr->pg_name), "p2p:0->4#fwd"))
                continue;
            const char *rn = lsim_strtab_get(g[4]->strings, g[4]->name[u]);
            CHECK_MSG(!strncmp(strchr(sn, '.'), strchr(rn, '.'), 8), "send %s vs recv %s", sn, rn);
        }
    }
    free_graphs(g, 8);
}

/* a GPU whose every kernel outlasts a launch call */
static void slow_gpu(lsim_synth_cfg *c)
{
    c->gpu.launch_cpu_ns = 1000;
    c->gpu.launch_latency_ns = 3000;
    c->gpu.kernel_min_ns = 20000;
}

static void test_single_gpu_closed_form(void)
{
    lsim_synth_cfg c;
    tiny_cfg(&c);
    c.tp = c.pp = c.dp = 1;
    c.global_batch = 3;
    slow_gpu(&c);
    lsim_err err;
    CHECK(lsim_synth_check(&c, &err) == 0);
    lsim_graph *g = NULL;
    CHECK(lsim_synth_gpu(&c, 0, NULL, &g, &err) == 0);
    if (!g) return;
    /* one stream, the CPU always ahead: the first kernel starts at the
     * launch latency, the rest back to back, the final synchronize returns
     * with the last kernel */
    lsim_ns sum = 0;
    size_t nk = 0;
    for (size_t v = 0; v < g->n; v++)
        if (g->kind[v] == LSIM_N_KERNEL) sum += g->dur[v], nk++;
    /* 4 layers x 3 micro-batches x (10 + 16: the backward's 14 and its two
     * residual-gradient sums) + embedding 2 x 3 + head (lnf logits xent;
     * xent dgrad wgrad lnf) x 3 + optimizer 4 layers + the embedding (tied
     * with the head) */
    CHECK_I64(nk, 4 * 3 * 26 + 3 * 2 + 3 * 7 + 4 + 1);
    /* a single GPU: run it alone */
    lsim_engine *e = NULL;
    CHECK(lsim_engine_new(g, &e, &err) == 0);
    CHECK(lsim_engine_run(e, &err) == 0);
    lsim_ns end = 0;
    for (size_t v = 0; v < g->n; v++)
        if (lsim_engine_end(e)[v] > end) end = lsim_engine_end(e)[v];
    CHECK_I64(end, 3000 + sum);
    /* the report: nothing observed, the predicted window is the span */
    lsim_rank_report r;
    CHECK(lsim_metrics_compute(g, lsim_engine_start(e), lsim_engine_end(e), 1000000, &r, &err) == 0);
    CHECK_I64(r.window_actual, 0);
    CHECK_I64(r.window_predicted, 3000 + sum);
    CHECK_I64(r.nodes_exact, 0);
    CHECK_I64(r.bd_predicted.exposed_compute, sum);
    CHECK_I64(lsim_metrics_observed_nodes(g), 0);
    lsim_rank_report_clear(&r);
    lsim_engine_free(e);
    lsim_graph_free(g);
}

/* PP = 2, equal stages, free communication: the 1F1B iteration on the
 * first stage lasts (m + p - 1)(tf + tb) from its first forward kernel */
static lsim_ns pipeline_span(int m, lsim_ns *tf, lsim_ns *tb, lsim_ns *stage0)
{
    lsim_synth_cfg c;
    tiny_cfg(&c);
    c.tp = c.dp = 1;
    c.pp = 2;
    c.global_batch = m;
    c.embed_head = 0;
    c.optimizer = 0;
    c.p2p_sync = 0;
    slow_gpu(&c);
    lsim_err err;
    lsim_graph *g[2] = {NULL, NULL};
    if (lsim_synth_check(&c, &err) || synth_all(&c, g, 2)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    *tf = *tb = 0;
    for (int i = 0; i < 2; i++)
        for (size_t v = 0; v < g[i]->n; v++) {
            if (g[i]->kind[v] != LSIM_N_KERNEL) continue;
            if (g[i]->flags[v] & LSIM_NF_COLL) {
                g[i]->dur[v] = 0; /* communication is free */
                continue;
            }
            const char *nm = lsim_strtab_get(g[i]->strings, g[i]->name[v]);
            if (i == 0 && strstr(nm, ".mb0.fwd.")) *tf += g[i]->dur[v];
            if (i == 0 && strstr(nm, ".mb0.bwd.")) *tb += g[i]->dur[v];
        }
    lsim_ns span = -1, *st[2] = {NULL, NULL}, *en[2] = {NULL, NULL};
    if (run_job(g, 2, NULL, en, st, &span, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        span = -1;
    } else {
        lsim_ns first = INT64_MAX, last = 0;
        for (size_t v = 0; v < g[0]->n; v++)
            if (g[0]->kind[v] == LSIM_N_KERNEL && !(g[0]->flags[v] & LSIM_NF_COLL)) {
                if (st[0][v] < first) first = st[0][v];
                if (en[0][v] > last) last = en[0][v];
            }
        *stage0 = last - first;
    }
    for (int i = 0; i < 2; i++) {
        free(st[i]);
        free(en[i]);
    }
    free_graphs(g, 2);
    return span;
}

static void test_pipeline_closed_form(void)
{
    lsim_ns tf, tb, s0, prev = 0;
    for (int m = 1; m <= 8; m *= 2) {
        lsim_ns span = pipeline_span(m, &tf, &tb, &s0);
        CHECK(span > 0);
        CHECK(tf > 0 && tb > 0);
        CHECK_I64(s0, (lsim_ns)(m + 2 - 1) * (tf + tb));
        /* the first kernel starts at the launch latency (3 us) */
        CHECK_I64(span, 3000 + (lsim_ns)(m + 2 - 1) * (tf + tb));
        CHECK_MSG(span > prev, "m = %d: %lld not longer than %lld", m, (long long)span, (long long)prev);
        prev = span;
    }
}

static void test_monotone_full(void)
{
    /* the full model (TP, DP, embedding, head, optimizer, p2p sync): more
     * micro-batches, longer iteration */
    lsim_ns prev = 0;
    for (int gb = 4; gb <= 16; gb *= 2) {
        lsim_synth_cfg c;
        tiny_cfg(&c);
        c.global_batch = gb;
        lsim_graph *g[8] = {NULL};
        lsim_err err;
        lsim_ns span = 0;
        CHECK(synth_all(&c, g, 8) == 0);
        CHECK(run_job(g, 8, NULL, NULL, NULL, &span, &err) == 0);
        CHECK_MSG(span > prev, "global batch %d: %lld not longer than %lld", gb, (long long)span, (long long)prev);
        prev = span;
        free_graphs(g, 8);
    }
    /* interleaved runs too (no deadlock) and beats 1F1B on the same job */
    lsim_synth_cfg c;
    tiny_cfg(&c);
    c.tp = c.dp = 1;
    c.model.layers = 8;
    c.pp = 4;
    c.global_batch = 8;
    lsim_graph *g[4] = {NULL};
    lsim_err err;
    lsim_ns one = 0, inter = 0;
    CHECK(synth_all(&c, g, 4) == 0);
    CHECK(run_job(g, 4, NULL, NULL, NULL, &one, &err) == 0);
    free_graphs(g, 4);
    c.vstages = 2;
    CHECK(synth_all(&c, g, 4) == 0);
    CHECK_MSG(run_job(g, 4, NULL, NULL, NULL, &inter, &err) == 0, "%s", err.msg);
    free_graphs(g, 4);
    CHECK_MSG(inter > 0 && inter < one, "interleaved %lld vs 1F1B %lld", (long long)inter, (long long)one);
}

/* The engines of a job over one allocation (lsim_engines_new) give the same
 * times as one allocation per engine, and no engine's arrays overlap
 * another's (the job run keeps its ready stacks in the scratch arrays). */
static void test_engine_group(void)
{
    lsim_synth_cfg c;
    tiny_cfg(&c);
    lsim_graph *g[8] = {NULL};
    lsim_ns *s1[8] = {NULL}, *e1[8] = {NULL}, *s2[8] = {NULL}, *e2[8] = {NULL};
    lsim_ns span1 = 0, span2 = 0;
    lsim_err err;
    CHECK(synth_all(&c, g, 8) == 0);
    CHECK_MSG(run_job(g, 8, NULL, e1, s1, &span1, &err) == 0, "%s", err.msg);
    grouped_engines = 1;
    CHECK_MSG(run_job(g, 8, NULL, e2, s2, &span2, &err) == 0, "%s", err.msg);
    grouped_engines = 0;
    CHECK(span1 > 0 && span1 == span2);
    for (size_t i = 0; i < 8; i++) {
        CHECK_MSG(s1[i] && s2[i] && memcmp(s1[i], s2[i], g[i]->n * sizeof(lsim_ns)) == 0, "GPU %zu: starts differ", i);
        CHECK_MSG(e1[i] && e2[i] && memcmp(e1[i], e2[i], g[i]->n * sizeof(lsim_ns)) == 0, "GPU %zu: ends differ", i);
        free(s1[i]), free(e1[i]), free(s2[i]), free(e2[i]);
    }
    lsim_engine *e[8] = {NULL};
    CHECK(lsim_engines_new((const lsim_graph *const *)g, 8, e, &err) == 0);
    for (size_t i = 0; e[0] && i < 8; i++)
        for (size_t k = 0; k < 8; k++) {
            const char *a0 = (const char *)lsim_engine_start(e[i]), *a1 = a0 + g[i]->n * sizeof(lsim_ns);
            const char *b0 = (const char *)lsim_engine_scratch(e[k]), *b1 = b0 + g[k]->n * sizeof(uint32_t);
            const char *c0 = (const char *)lsim_engine_end(e[k]);
            CHECK_MSG(a1 <= b0 || b1 <= a0, "engine %zu's starts overlap engine %zu's scratch", i, k);
            CHECK_MSG(i == k || a1 <= c0 || c0 + g[k]->n * sizeof(lsim_ns) <= a0, "engines %zu and %zu overlap", i, k);
        }
    for (size_t i = 8; i-- > 0;) lsim_engine_free(e[i]);
    free_graphs(g, 8);
    /* the large-array allocator: 2 MiB aligned from 4 MiB up, and writable */
    size_t big = (size_t)5 << 20;
    unsigned char *p = lsim_alloc_big(big);
    CHECK(p != NULL && ((uintptr_t)p & (((uintptr_t)2 << 20) - 1)) == 0);
    if (p) {
        memset(p, 0xab, big);
        CHECK(p[0] == 0xab && p[big - 1] == 0xab);
    }
    free(p);
}

static void test_bad_input(void)
{
    lsim_synth_cfg c;
    lsim_err err;
#define BAD(stmt, needle)                                                                 \
    do {                                                                                  \
        tiny_cfg(&c);                                                                     \
        stmt;                                                                             \
        memset(&err, 0, sizeof err);                                                      \
        CHECK(lsim_synth_check(&c, &err) == LSIM_EARG);                                   \
        CHECK_MSG(strstr(err.msg, needle) != NULL, "'%s' not in '%s'", needle, err.msg); \
    } while (0)
    BAD(c.gpus = 16, "2 x 2 x 2 = 8 does not match --gpus 16");
    BAD(c.model.layers = 5, "5 layers are not divisible by PP x V = 2 x 1");
    BAD((c.vstages = 2, c.model.layers = 6), "6 layers are not divisible by PP x V = 2 x 2");
    BAD(c.model.hidden = 6145, "hidden size 6145 is not divisible by TP = 2");
    BAD(c.model.heads = 47, "47 attention heads are not divisible by TP = 2");
    BAD(c.global_batch = 9, "global batch 9 is not divisible by micro-batch x DP = 1 x 2 = 2");
    BAD((c.vstages = 2, c.global_batch = 6), "divisible by PP = 2");
    BAD(c.tp = 0, "must be positive");
    tiny_cfg(&c);
    lsim_graph *g = NULL;
    CHECK(lsim_synth_gpu(&c, 8, NULL, &g, &err) == LSIM_EARG);
    CHECK(g == NULL);
    lsim_model_shape m;
    CHECK(lsim_model_builtin("gpt3-13b", &m, &err) == LSIM_EARG);
    CHECK(lsim_model_builtin("GPT3-175B", &m, &err) == 0);
    CHECK_I64(m.layers, 96);
    CHECK_I64(m.ffn, 49152);
}

int main(void)
{
    test_p2p();
    test_schedules();
    test_structure();
    test_single_gpu_closed_form();
    test_pipeline_closed_form();
    test_monotone_full();
    test_engine_group();
    test_bad_input();
    return check_result("test_synth");
}
