/* What-if transformations (whatif.h) on hand-built graphs: identification of
 * group classes and layers, layer removal and duplication with the rewired
 * edges written out by hand, the network re-time ratio, stragglers, noise,
 * and that no transformation touches its input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lumosim/metrics.h"
#include "lumosim/synth.h"
#include "lumosim/whatif.h"

static uint32_t find(const lsim_graph *g, const char *name, int kind)
{
    for (size_t v = 0; v < g->n; v++)
        if (g->kind[v] == kind && !strcmp(lsim_strtab_get(g->strings, g->name[v]), name)) return (uint32_t)v;
    return UINT32_MAX;
}

/* the in-edge of v of class cls, its source (UINT32_MAX none) */
static uint32_t pred(const lsim_graph *g, uint32_t v, int cls)
{
    for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
        if ((g->in_class[k] & 0x7f) == cls) return g->in_src[k];
    return UINT32_MAX;
}

/* emb, layers L0 L1 L2 (kernels 100, 200, 300 ns), head: one CPU thread
 * launching onto one stream */
static lsim_graph *three_layers(void)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t cpu, s, prevc = UINT32_MAX, prevk = UINT32_MAX;
    if (lsim_gb_new("t", 0, 1, &b, &err)) return NULL;
    lsim_gb_proc(b, 0, 1, 1, &cpu);
    lsim_gb_proc(b, 1, 0, 7, &s);
    lsim_gb_iteration(b, "ProfilerStep#0");
    const char *names[5] = {"emb.mb0.fwd.lookup", "L0.mb0.fwd.gemm", "L1.mb0.fwd.gemm", "L2.mb0.fwd.gemm",
                            "head.mb0.fwd.xent"};
    lsim_ns durs[5] = {50, 100, 200, 300, 70};
    for (int i = 0; i < 5; i++) {
        uint32_t c, k;
        lsim_gb_node(b, LSIM_N_RUNTIME, 0, cpu, names[i], 10, &c);
        lsim_gb_node(b, LSIM_N_KERNEL, 0, s, names[i], durs[i], &k);
        if (i == 0) lsim_gb_set_release(b, c, 0);
        lsim_gb_edge(b, c, k, LSIM_E_LAUNCH, 5);
        if (prevc != UINT32_MAX) lsim_gb_edge(b, prevc, c, LSIM_E_CPU_THREAD, 0);
        if (prevk != UINT32_MAX) lsim_gb_edge(b, prevk, k, LSIM_E_STREAM, 0);
        prevc = c;
        prevk = k;
    }
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) return NULL;
    return g;
}

static void test_layers(void)
{
    lsim_graph *g = three_layers();
    CHECK(g != NULL);
    if (!g) return;
    lsim_wi_ident id;
    lsim_err err;
    CHECK(lsim_wi_identify(g, 0, 0, &id, &err) == 0);
    CHECK_I64(id.layer_source, LSIM_WI_LAYERS_TAGS);
    CHECK_I64(id.nchunks, 1);
    CHECK_I64(id.layers_per_chunk, 3);
    lsim_wi_layout L = {1, 1, 1};
    lsim_topology topo;
    lsim_topology_default(NULL, &topo);
    size_t n0 = g->n;
    uint64_t e0 = g->nedges;

    /* 3 -> 2: the first and last layers stay, L1 goes; L2 becomes L1 */
    lsim_wi_counts rec;
    memset(&rec, 0, sizeof rec);
    lsim_graph *o = NULL;
    CHECK(lsim_wi_layers(g, &L, 2, 0, &topo, &o, &rec, &err) == 0);
    CHECK_I64(g->n, n0);      /* input untouched */
    CHECK_I64(g->nedges, e0);
    if (o) {
        CHECK_I64(o->n, 8);
        CHECK_I64(rec.removed[LSIM_N_KERNEL], 1);
        CHECK_I64(rec.removed[LSIM_N_RUNTIME], 1);
        uint32_t k0 = find(o, "L0.mb0.fwd.gemm", LSIM_N_KERNEL), k1 = find(o, "L1.mb0.fwd.gemm", LSIM_N_KERNEL);
        uint32_t c0 = find(o, "L0.mb0.fwd.gemm", LSIM_N_RUNTIME), c1 = find(o, "L1.mb0.fwd.gemm", LSIM_N_RUNTIME);
        uint32_t kh = find(o, "head.mb0.fwd.xent", LSIM_N_KERNEL);
        CHECK(k1 != UINT32_MAX && k0 != UINT32_MAX && kh != UINT32_MAX);
        CHECK(find(o, "L2.mb0.fwd.gemm", LSIM_N_KERNEL) == UINT32_MAX);
        if (k1 != UINT32_MAX && k0 != UINT32_MAX && kh != UINT32_MAX) {
            CHECK_I64(o->dur[k1], 300); /* the old L2 */
            CHECK_I64(pred(o, k1, LSIM_E_STREAM), k0);
            CHECK_I64(pred(o, c1, LSIM_E_CPU_THREAD), c0);
            CHECK_I64(pred(o, kh, LSIM_E_STREAM), k1);
        }
        /* 13 edges (5 launch, 4 CPU order, 4 stream order); L1's three
         * in-edges go, its two out-edges become the two bypass edges */
        CHECK_I64(e0, 13);
        CHECK_I64(o->nedges, 10);
    }
    lsim_graph_free(o);
    o = NULL;

    /* 3 -> 6: every layer twice, in order, renumbered L0..L5 */
    memset(&rec, 0, sizeof rec);
    CHECK(lsim_wi_layers(g, &L, 6, 0, &topo, &o, &rec, &err) == 0);
    if (o) {
        CHECK_I64(o->n, 16);
        CHECK_I64(rec.added[LSIM_N_KERNEL], 3);
        static const lsim_ns want[6] = {100, 100, 200, 200, 300, 300};
        uint32_t k = find(o, "head.mb0.fwd.xent", LSIM_N_KERNEL);
        for (int i = 5; i >= 0 && k != UINT32_MAX; i--) {
            k = pred(o, k, LSIM_E_STREAM);
            char nm[32];
            snprintf(nm, sizeof nm, "L%d.mb0.fwd.gemm", i);
            CHECK(k != UINT32_MAX);
            if (k == UINT32_MAX) break;
            CHECK_I64(o->dur[k], want[i]);
            CHECK_MSG(!strcmp(lsim_strtab_get(o->strings, o->name[k]), nm), "stream position %d is %s", i,
                      lsim_strtab_get(o->strings, o->name[k]));
            /* its launch call is the CPU node of the same name */
            uint32_t c = pred(o, k, LSIM_E_LAUNCH);
            CHECK(c != UINT32_MAX && !strcmp(lsim_strtab_get(o->strings, o->name[c]), nm));
        }
        if (k != UINT32_MAX) CHECK(!strcmp(lsim_strtab_get(o->strings, o->name[pred(o, k, LSIM_E_STREAM)]), "emb.mb0.fwd.lookup"));
    }
    lsim_graph_free(o);
    o = NULL;

    /* not divisible, and no layer structure */
    CHECK(lsim_wi_layers(g, &L, 0, 0, &topo, &o, &rec, &err) == LSIM_EARG);
    lsim_wi_layout L2 = {1, 2, 1};
    CHECK(lsim_wi_layers(g, &L2, 5, 0, &topo, &o, &rec, &err) == LSIM_EARG);
    CHECK(strstr(err.msg, "not divisible by PP x V = 2 x 1") != NULL);
    lsim_graph_free(g);
}

/* one collective per class, groups known only from rank lists */
static void test_identify_and_retime(void)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t cpu, s, c[4], k[4];
    CHECK(lsim_gb_new("r", 2, 8, &b, &err) == 0);
    lsim_gb_proc(b, 0, 1, 1, &cpu);
    lsim_gb_proc(b, 1, 0, 7, &s);
    for (int i = 0; i < 4; i++) {
        lsim_gb_node(b, LSIM_N_RUNTIME, 0, cpu, "ncclKernel", 10, &c[i]);
        lsim_gb_node(b, LSIM_N_KERNEL, 0, s, "ncclKernel", 1000000, &k[i]);
        lsim_gb_edge(b, c[i], k[i], LSIM_E_LAUNCH, 5);
        if (i) lsim_gb_edge(b, k[i - 1], k[i], LSIM_E_STREAM, 0), lsim_gb_edge(b, c[i - 1], c[i], LSIM_E_CPU_THREAD, 0);
    }
    lsim_gb_coll(b, k[0], LSIM_COLL_ALLREDUCE, 1 << 20, 2, "3", 0);
    lsim_gb_coll(b, k[1], LSIM_COLL_ALLREDUCE, 1 << 20, 4, "4", 0);
    lsim_gb_coll(b, k[2], LSIM_COLL_SEND, 1 << 20, 2, "5", 0);
    lsim_gb_coll(b, k[3], LSIM_COLL_ALLREDUCE, 1 << 26, 8, "dp:0:1", 0);
    lsim_graph *g = NULL;
    CHECK(lsim_gb_finish(b, &g, &err) == 0);
    if (!g) return;
    static const char *const rl[3] = {"[2, 3]", "[0, 2, 4, 6]", "[2, 6]"};
    for (int i = 0; i < 3; i++)
        lsim_strtab_intern(g->strings, rl[i], strlen(rl[i]), &g->colls[g->coll[k[i]]].pg_ranks);
    CHECK_I64(lsim_wi_coll_class(g, (size_t)g->coll[k[0]]), LSIM_WI_TP);
    CHECK_I64(lsim_wi_coll_class(g, (size_t)g->coll[k[1]]), LSIM_WI_DP);
    CHECK_I64(lsim_wi_coll_class(g, (size_t)g->coll[k[2]]), LSIM_WI_PP);
    CHECK_I64(lsim_wi_coll_class(g, (size_t)g->coll[k[3]]), LSIM_WI_DP);
    lsim_wi_ident id;
    CHECK(lsim_wi_identify(g, 2, 0, &id, &err) == 0);
    CHECK_I64(id.layer_source, LSIM_WI_LAYERS_UNKNOWN);
    CHECK_I64(id.colls[LSIM_WI_DP], 2);
    CHECK_I64(id.tp_i, 0);  /* from "dp:0:1" */
    CHECK_I64(id.pp_i, 1);

    /* Megatron numbering */
    lsim_wi_layout L = {2, 2, 4};
    int t, d, p;
    lsim_wi_coords(&L, 13, &t, &d, &p);
    CHECK(t == 1 && d == 2 && p == 1);
    CHECK_I64(lsim_wi_rank(&L, 1, 2, 1), 13);
    int32_t r[8];
    CHECK_I64(lsim_wi_group_ranks("dp:1:0", &L, r, 8), 4);
    CHECK(r[0] == 1 && r[1] == 3 && r[2] == 5 && r[3] == 7);
    CHECK_I64(lsim_wi_group_ranks("tp:1:3", &L, r, 8), 2);
    CHECK(r[0] == 14 && r[1] == 15);

    /* the DP all-reduce "dp:0:1" of a DP 2 job (ranks 4, 6 when TP 2, PP 2)
     * in a DP 4 job (ranks 8, 10, 12, 14): dur x cost(new) / cost(old) */
    lsim_wi_layout Lo = {2, 2, 2}, Ln = {2, 2, 4};
    lsim_topology topo;
    lsim_topology_default(NULL, &topo);
    topo.gpus_per_node = 4;
    int32_t ro[2] = {4, 6}, rn[4] = {8, 10, 12, 14};
    lsim_ns co = lsim_cost_collective(&topo, LSIM_COLL_ALLREDUCE, 1 << 26, ro, 2, LSIM_ALGO_AUTO);
    lsim_ns cn = lsim_cost_collective(&topo, LSIM_COLL_ALLREDUCE, 1 << 26, rn, 4, LSIM_ALGO_AUTO);
    CHECK(co != cn);
    lsim_wi_counts rec;
    memset(&rec, 0, sizeof rec);
    lsim_graph *o = NULL;
    CHECK(lsim_wi_retime(g, &Lo, &Ln, &topo, &topo, &o, &rec, &err) == 0);
    if (o) {
        CHECK_I64(o->dur[k[3]], llround(1000000.0 * (double)cn / (double)co));
        CHECK_I64(g->dur[k[3]], 1000000);
        CHECK_I64(rec.coll_retimed[LSIM_WI_DP], 1);
        /* the rank-list groups keep their ranks: same topology, same time */
        CHECK_I64(o->dur[k[0]], 1000000);
    }
    lsim_graph_free(o);
    o = NULL;
    /* another network: every sized collective re-timed by the ratio */
    lsim_topology slow = topo;
    slow.intra_bw /= 4;
    memset(&rec, 0, sizeof rec);
    CHECK(lsim_wi_retime(g, &Lo, &Lo, &topo, &slow, &o, &rec, &err) == 0);
    if (o) {
        int32_t tr[2] = {2, 3};
        lsim_ns a = lsim_cost_collective(&topo, LSIM_COLL_ALLREDUCE, 1 << 20, tr, 2, LSIM_ALGO_AUTO);
        lsim_ns bb = lsim_cost_collective(&slow, LSIM_COLL_ALLREDUCE, 1 << 20, tr, 2, LSIM_ALGO_AUTO);
        CHECK_I64(o->dur[k[0]], llround(1000000.0 * (double)bb / (double)a));
        CHECK(o->dur[k[0]] > 1000000);
    }
    lsim_graph_free(o);
    lsim_graph_free(g);
}

static void test_slow_jitter(void)
{
    lsim_graph *g = three_layers(), *a = NULL, *b = NULL, *c = NULL;
    lsim_err err;
    lsim_wi_counts rec;
    memset(&rec, 0, sizeof rec);
    if (!g) return;
    CHECK(lsim_wi_slow(g, 1.5, &a, &rec, &err) == 0);
    if (a) {
        uint32_t k = find(a, "L1.mb0.fwd.gemm", LSIM_N_KERNEL), cc = find(a, "L1.mb0.fwd.gemm", LSIM_N_RUNTIME);
        CHECK_I64(a->dur[k], 300);
        CHECK_I64(a->dur[cc], 10); /* CPU untouched */
        CHECK_I64(g->dur[k], 200);
        CHECK_I64(rec.retimed[LSIM_N_KERNEL], 5);
    }
    CHECK(lsim_wi_slow(g, 0, &b, &rec, &err) == LSIM_EARG);
    CHECK(lsim_wi_slow(g, NAN, &b, &rec, &err) == LSIM_EARG);
    lsim_graph_free(a);
    a = NULL;
    /* same seed: same noise; another seed: different; sigma 0: none */
    CHECK(lsim_wi_jitter(g, 0.2, 7, 0, &a, &rec, &err) == 0);
    CHECK(lsim_wi_jitter(g, 0.2, 7, 0, &b, &rec, &err) == 0);
    CHECK(lsim_wi_jitter(g, 0.2, 8, 0, &c, &rec, &err) == 0);
    if (a && b && c) {
        int same = 1, diff = 0;
        for (size_t v = 0; v < g->n; v++) {
            same &= a->dur[v] == b->dur[v];
            diff |= a->dur[v] != c->dur[v];
            if (g->kind[v] == LSIM_N_RUNTIME) CHECK_I64(a->dur[v], 10);
        }
        CHECK(same);
        CHECK(diff);
    }
    lsim_graph_free(a);
    lsim_graph_free(b);
    lsim_graph_free(c);
    a = NULL;
    CHECK(lsim_wi_jitter(g, 0, 7, 0, &a, &rec, &err) == 0);
    for (size_t v = 0; a && v < g->n; v++) CHECK_I64(a->dur[v], g->dur[v]);
    lsim_graph_free(a);
    a = NULL;
    /* "trace": every kernel name differs (tags stripped, "fwd.gemm" x3 share
     * a spread of 100 ns / 200 ns = 0.5), the others have one sample each */
    CHECK(lsim_wi_jitter(g, -1, 7, 0, &a, &rec, &err) == 0);
    if (a) {
        CHECK_I64(a->dur[find(a, "emb.mb0.fwd.lookup", LSIM_N_KERNEL)], 50);
        CHECK(a->dur[find(a, "L0.mb0.fwd.gemm", LSIM_N_KERNEL)] != 100 ||
              a->dur[find(a, "L2.mb0.fwd.gemm", LSIM_N_KERNEL)] != 300);
    }
    lsim_graph_free(a);
    lsim_graph_free(g);
}

/* --hidden / --ffn / --tp on a hand-built GPU 1 of a TP 2 job of GPT-3 15B
 * at micro-batch 2: ln1, fc1 GEMM (3 ms: not the cost model's time, so the
 * ratio must carry the source's own efficiency over), the MLP all-reduce of
 * micro-batch x seq x hidden x 2 bytes, the optimizer step */
static void test_shape_tp(void)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t cpu, s, st, c[4], k[4];
    CHECK(lsim_gb_new("synth:gpt3-15b/gpu1", 1, 2, &b, &err) == 0);
    lsim_gb_proc(b, 0, 1, 1, &cpu);
    lsim_gb_proc(b, 1, 0, 7, &s);
    lsim_gb_proc(b, 1, 0, 13, &st);
    const char *nm[4] = {"L0.mb0.fwd.ln1", "L0.mb0.fwd.fc1_gemm", "L0.mb0.fwd.mlp_allreduce", "L0.opt.adam"};
    lsim_ns du[4] = {50000, 3000000, 400000, 700000};
    for (int i = 0; i < 4; i++) {
        lsim_gb_node(b, LSIM_N_RUNTIME, 0, cpu, nm[i], 10, &c[i]);
        lsim_gb_node(b, LSIM_N_KERNEL, 0, i == 2 ? st : s, nm[i], du[i], &k[i]);
        lsim_gb_edge(b, c[i], k[i], LSIM_E_LAUNCH, 5);
        if (i) lsim_gb_edge(b, c[i - 1], c[i], LSIM_E_CPU_THREAD, 0), lsim_gb_edge(b, k[i - 1], k[i], LSIM_E_EVENT, 0);
        else lsim_gb_set_release(b, c[i], 0);
    }
    const int64_t act = 2LL * 2048 * 6144 * 2;
    lsim_gb_coll(b, k[2], LSIM_COLL_ALLREDUCE, act, 2, "tp:0:0", 0);
    lsim_graph *g = NULL;
    CHECK(lsim_gb_finish(b, &g, &err) == 0);
    if (!g) return;
    lsim_wi_layout L = {2, 1, 1};
    lsim_wi_model M;
    CHECK(lsim_wi_model_of(g, &L, NULL, 0, &M, &err) == 0);
    CHECK(M.hidden == 6144 && M.ffn == 12288 && M.heads == 48 && M.head_dim == 128 && M.vocab == 51200);
    CHECK_I64(M.micro_batch, 2); /* from the all-reduce's size */
    CHECK_I64(M.tp, 2);
    lsim_gpu_spec gpu;
    lsim_gpu_spec_builtin("h100", &gpu, &err);
    lsim_topology topo;
    lsim_topology_default(&gpu, &topo);
    lsim_wi_counts rec;
    memset(&rec, 0, sizeof rec);
    lsim_graph *o = NULL;
    /* FFN x2: the FC1 GEMM 4096 x 6144 x 6144 becomes 4096 x 12288 x 6144:
     * re-timed by the cost model's ratio (FLOPs x2; on H100's 132 SMs the
     * tiles fill 5.8 waves, then 11.6, so at most twice as long) */
    lsim_wi_model F = M;
    F.ffn = 24576;
    CHECK(lsim_wi_reshape(g, &L, &M, &F, 0, &gpu, &topo, &o, &rec, &err) == 0);
    if (o) {
        double r = (double)lsim_cost_gemm(&gpu, 4096, 12288, 6144, 2) / (double)lsim_cost_gemm(&gpu, 4096, 6144, 6144, 2);
        CHECK(llabs(o->dur[k[1]] - llround(3e6 * r)) <= 20); /* the model's times are whole ns */
        CHECK(o->dur[k[1]] > 5500000 && o->dur[k[1]] <= 6000020); /* 2x, up to ns rounding */
        CHECK_I64(o->dur[k[0]], 50000);                    /* layer norm: hidden only */
        CHECK_I64(o->colls[o->coll[k[2]]].bytes, act);     /* activations unchanged */
        CHECK_I64(o->dur[k[2]], 400000);
        CHECK(o->dur[k[3]] > 700000);                      /* more parameters */
        CHECK_I64(g->dur[k[1]], 3000000);                  /* input untouched */
    }
    lsim_graph_free(o);
    o = NULL;
    /* hidden x2: activations double, so the all-reduce's bytes; the
     * memory-bound layer norm doubles */
    F = M;
    F.hidden = 12288;
    CHECK(lsim_wi_reshape(g, &L, &M, &F, 0, &gpu, &topo, &o, &rec, &err) == 0);
    if (o) {
        CHECK_I64(o->colls[o->coll[k[2]]].bytes, 2 * act);
        CHECK(llabs(o->dur[k[0]] - 100000) <= 1);
        int32_t r2[2] = {0, 1};
        double want = 400000.0 * (double)lsim_cost_collective(&topo, LSIM_COLL_ALLREDUCE, 2 * act, r2, 2, LSIM_ALGO_AUTO) /
                      (double)lsim_cost_collective(&topo, LSIM_COLL_ALLREDUCE, act, r2, 2, LSIM_ALGO_AUTO);
        CHECK(llabs(o->dur[k[2]] - llround(want)) <= 1);
        CHECK(o->dur[k[2]] > 700000 && o->dur[k[2]] < 800000);
    }
    lsim_graph_free(o);
    o = NULL;
    /* TP 2 -> 4: the FC1 GEMM's output shard halves */
    F = M;
    F.tp = 4;
    CHECK(lsim_wi_reshape(g, &L, &M, &F, 0, &gpu, &topo, &o, &rec, &err) == 0);
    if (o) CHECK(o->dur[k[1]] > 1500000 && o->dur[k[1]] < 1530000);
    lsim_graph_free(o);
    o = NULL;
    /* relayout: GPU 3 of TP 4 is a copy of TP rank 1 in group tp:0:0 of 4 */
    lsim_wi_layout L4 = {4, 1, 1}, L1 = {1, 1, 1};
    CHECK(lsim_wi_relayout(g, &L, &L4, 3, &o, &rec, &err) == 0);
    if (o) {
        CHECK(o->rank == 3 && o->world_size == 4);
        CHECK_I64(o->colls[o->coll[k[2]]].group_size, 4);
        CHECK(!strcmp(lsim_strtab_get(o->strings, o->colls[o->coll[k[2]]].pg_name), "tp:0:0"));
    }
    lsim_graph_free(o);
    o = NULL;
    /* TP 1: the all-reduce and its launch go, the order closes over them */
    CHECK(lsim_wi_relayout(g, &L, &L1, 0, &o, &rec, &err) == 0);
    if (o) {
        CHECK_I64(o->n, g->n - 2);
        CHECK_I64(o->ncoll, 0);
        uint32_t adam = find(o, "L0.opt.adam", LSIM_N_RUNTIME), fc1 = find(o, "L0.mb0.fwd.fc1_gemm", LSIM_N_RUNTIME);
        CHECK(adam != UINT32_MAX && pred(o, adam, LSIM_E_CPU_THREAD) == fc1);
        /* and back from TP 1 without TP all-reduces: nothing to split */
        lsim_graph *back = NULL;
        CHECK(lsim_wi_relayout(o, &L1, &L, 0, &back, &rec, &err) == LSIM_EARG && !back);
        CHECK(strstr(err.msg, "tensor-parallel width 1") != NULL);
    }
    lsim_graph_free(o);
    o = NULL;
    /* TP must divide heads (48), hidden, FFN, vocabulary */
    F = M;
    F.tp = 5;
    CHECK(lsim_wi_reshape(g, &L, &M, &F, 0, &gpu, &topo, &o, &rec, &err) == LSIM_EARG);
    CHECK(strstr(err.msg, "TP 5 does not divide the model (heads 48") != NULL);
    CHECK(o == NULL);
    /* a wrong source shape shows in the activations */
    lsim_wi_model W = M;
    W.hidden = 5000;
    CHECK(lsim_wi_model_of(g, &L, &W, 0, &M, &err) == LSIM_EARG);
    CHECK(strstr(err.msg, "not the source's") != NULL);
    lsim_graph_free(g);
    /* no tags: no roles */
    g = three_layers();
    if (g) {
        free(g->source);
        g->source = strdup("k");
        for (size_t v = 0; v < g->n; v++) lsim_strtab_intern(g->strings, "gemm", 4, &g->name[v]);
        F = M;
        CHECK(lsim_wi_reshape(g, &L, &M, &F, 0, &gpu, &topo, &o, &rec, &err) == LSIM_EARG);
        CHECK(strstr(err.msg, "layer structure unknown") != NULL);
    }
    lsim_graph_free(g);
}

/* Pipeline: a small synthesized job (4 layers, TP 2, DP 2, m = 4) re-cut
 * to other pipelines must give, GPU by GPU, the graph lumosim synth makes
 * for the target (every node's kind, name, duration, processor and every
 * in-edge), since nothing but the structure changes. Then the errors. */
static int same_graph(const lsim_graph *a, const lsim_graph *b)
{
    if (a->n != b->n || a->nedges != b->nedges || a->nprocs != b->nprocs || a->rank != b->rank ||
        a->world_size != b->world_size || a->ncoll != b->ncoll)
        return 0;
    for (size_t v = 0; v < a->n; v++) {
        if (a->kind[v] != b->kind[v] || a->dur[v] != b->dur[v] || a->proc[v] != b->proc[v] || a->flags[v] != b->flags[v] ||
            a->release[v] != b->release[v] || a->in_off[v + 1] != b->in_off[v + 1] ||
            strcmp(lsim_strtab_get(a->strings, a->name[v]), lsim_strtab_get(b->strings, b->name[v])))
            return 0;
        if (a->coll[v] >= 0) {
            const lsim_coll_info *x = &a->colls[a->coll[v]], *y = &b->colls[b->coll[v]];
            if (b->coll[v] < 0 || x->kind != y->kind || x->bytes != y->bytes || x->seq != y->seq ||
                x->group_size != y->group_size ||
                strcmp(lsim_strtab_get(a->strings, x->pg_name), lsim_strtab_get(b->strings, y->pg_name)))
                return 0;
        }
    }
    for (uint64_t k = 0; k < a->nedges; k++)
        if (a->in_src[k] != b->in_src[k] || a->in_class[k] != b->in_class[k] || a->in_delay[k] != b->in_delay[k]) return 0;
    for (uint32_t p = 0; p < a->nprocs; p++)
        if (a->procs[p].is_gpu != b->procs[p].is_gpu || a->procs[p].pid != b->procs[p].pid || a->procs[p].tid != b->procs[p].tid)
            return 0;
    return 1;
}

static void small_cfg(lsim_synth_cfg *c, int pp, int V, int m)
{
    lsim_synth_cfg_default(c);
    lsim_model_shape sh = {"tiny", 4, 256, 1024, 4, 64, 128, 1024, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    c->model = sh;
    c->tp = 2, c->dp = 2, c->pp = pp, c->vstages = V;
    c->micro_batch = 1;
    c->global_batch = m * c->dp;
    c->dp_bucket_params = 300000; /* a few layers per bucket: the buckets are refilled */
}

/* every GPU of `to` re-cut from synth(from) equals synth(to); returns the
 * number of GPUs that differ (-1: an error) */
static int recut(const lsim_synth_cfg *from, const lsim_synth_cfg *to, lsim_wi_counts *rec)
{
    lsim_err err;
    lsim_wi_layout L = {from->tp, from->pp, from->dp};
    lsim_wi_model M = {to->model.hidden, to->model.ffn, to->model.heads, to->model.head_dim, to->model.seq,
                       to->model.vocab, to->micro_batch, 2, to->tp};
    lsim_wi_pipe_cfg pc = {to->pp, to->vstages, lsim_synth_microbatches(to), to->dp_bucket_params, 0, 0, 0, 0};
    int bad = 0;
    for (int t = 0; t < L.tp; t++)
        for (int d = 0; d < L.dp; d++) {
            lsim_wi_pipe *S = NULL;
            if (lsim_wi_pipe_new(&L, t, d, &S, &err)) return -1;
            for (int p = 0; p < L.pp; p++) {
                lsim_graph *g = NULL;
                if (lsim_synth_gpu(from, (uint32_t)lsim_wi_rank(&L, t, d, p), NULL, &g, &err)) bad = -1;
                if (g && lsim_wi_pipe_add(S, g, p, &err)) bad = -1;
                lsim_graph_free(g);
            }
            int layers = 0, m = 0;
            lsim_wi_pipe_source(S, &layers, &m);
            CHECK_I64(layers, from->model.layers);
            CHECK_I64(m, lsim_synth_microbatches(from));
            lsim_wi_layout Lt = {to->tp, to->pp, to->dp};
            for (int p = 0; p < to->pp && bad >= 0; p++) {
                lsim_graph *a = NULL, *b = NULL;
                if (lsim_wi_pipeline(S, &pc, &M, &from->topo, p, &a, rec, &err) ||
                    lsim_synth_gpu(to, (uint32_t)lsim_wi_rank(&Lt, t, d, p), NULL, &b, &err)) {
                    bad = -1;
                } else if (!same_graph(a, b)) {
                    fprintf(stderr, "recut: GPU (tp %d, dp %d, pp %d) differs from synthesis\n", t, d, p);
                    bad++;
                }
                lsim_graph_free(a);
                lsim_graph_free(b);
            }
            lsim_wi_pipe_record(S, rec);
            lsim_wi_pipe_free(S);
        }
    return bad;
}

static void test_pipeline(void)
{
    lsim_synth_cfg a, b;
    lsim_wi_counts rec;
    /* PP 2 -> 4, 4 -> 2, 2 -> 1, 1 -> 2 (1F1B, m = 4) */
    int pairs[4][2] = {{2, 4}, {4, 2}, {2, 1}, {1, 2}};
    for (int i = 0; i < 4; i++) {
        small_cfg(&a, pairs[i][0], 1, 4);
        small_cfg(&b, pairs[i][1], 1, 4);
        memset(&rec, 0, sizeof rec);
        CHECK_MSG(recut(&a, &b, &rec) == 0, "PP %d -> %d", pairs[i][0], pairs[i][1]);
        /* GPUs: (TP x DP) x the difference in stages */
        CHECK_I64((int64_t)rec.gpus_added - (int64_t)rec.gpus_removed, 4 * (pairs[i][1] - pairs[i][0]));
        /* from PP 1 every transfer is new (cost model): per column, 4
         * micro-batches x (send + recv) x (activations + gradients) */
        if (pairs[i][0] == 1) CHECK_I64(rec.coll_retimed[LSIM_WI_PP], 4 * 16);
    }
    /* schedules and micro-batches */
    small_cfg(&a, 2, 1, 4), small_cfg(&b, 2, 2, 4);
    memset(&rec, 0, sizeof rec);
    CHECK_MSG(recut(&a, &b, &rec) == 0, "1F1B -> interleaved:2");
    CHECK_MSG(recut(&b, &a, &rec) == 0, "interleaved:2 -> 1F1B");
    small_cfg(&b, 2, 1, 8);
    CHECK_MSG(recut(&a, &b, &rec) == 0, "m 4 -> 8");
    CHECK_MSG(recut(&b, &a, &rec) == 0, "m 8 -> 4");
    small_cfg(&b, 4, 1, 8);
    CHECK_MSG(recut(&a, &b, &rec) == 0, "PP 2 m 4 -> PP 4 m 8");
    /* the re-cut is not a copy: m 4 -> 8 has twice the layer kernels */
    {
        lsim_err err;
        lsim_graph *g4 = NULL, *g8 = NULL;
        small_cfg(&b, 2, 1, 8);
        CHECK(lsim_synth_gpu(&a, 0, NULL, &g4, &err) == 0 && lsim_synth_gpu(&b, 0, NULL, &g8, &err) == 0);
        if (g4 && g8) CHECK(g8->n > g4->n + g4->n / 2);
        lsim_graph_free(g4);
        lsim_graph_free(g8);
    }
    /* errors: nothing emitted, the reason named */
    {
        lsim_err err;
        small_cfg(&a, 2, 1, 4);
        lsim_wi_layout L = {2, 2, 2};
        lsim_wi_pipe *S = NULL;
        CHECK(lsim_wi_pipe_new(&L, 0, 0, &S, &err) == 0);
        for (int p = 0; p < 2; p++) {
            lsim_graph *g = NULL;
            CHECK(lsim_synth_gpu(&a, (uint32_t)lsim_wi_rank(&L, 0, 0, p), NULL, &g, &err) == 0);
            if (g) CHECK(lsim_wi_pipe_add(S, g, p, &err) == 0);
            lsim_graph_free(g);
        }
        lsim_wi_pipe_cfg c8 = {8, 1, 4, 0, 0, 0, 0, 0}, c3 = {3, 1, 4, 0, 0, 0, 0, 0}, ci = {4, 2, 4, 0, 0, 0, 0, 0}, cm = {2, 2, 3, 0, 0, 0, 0, 0}, c1 = {1, 2, 4, 0, 0, 0, 0, 0};
        CHECK(lsim_wi_pipe_check(S, &c8, &err) == LSIM_EARG && strstr(err.msg, "more pipeline stages than the model's 4 layers"));
        CHECK(lsim_wi_pipe_check(S, &c3, &err) == LSIM_EARG && strstr(err.msg, "not divisible by PP x V = 3 x 1"));
        CHECK(lsim_wi_pipe_check(S, &ci, &err) == LSIM_EARG && strstr(err.msg, "PP x V = 8 model chunks"));
        CHECK(lsim_wi_pipe_check(S, &cm, &err) == LSIM_EARG && strstr(err.msg, "not divisible by PP = 2"));
        CHECK(lsim_wi_pipe_check(S, &c1, &err) == LSIM_EARG && strstr(err.msg, "needs --pp >= 2"));
        lsim_wi_model M = {256, 1024, 4, 64, 128, 1024, 1, 2, 2};
        lsim_graph *o = NULL;
        memset(&rec, 0, sizeof rec);
        CHECK(lsim_wi_pipeline(S, &c8, &M, &a.topo, 0, &o, &rec, &err) == LSIM_EARG && o == NULL);
        lsim_wi_pipe_free(S);
        /* a kernel without a tag cannot be placed */
        lsim_graph *g = three_layers();
        lsim_wi_layout L1 = {1, 1, 1};
        CHECK(g != NULL && lsim_wi_pipe_new(&L1, 0, 0, &S, &err) == 0);
        if (g && S) {
            uint32_t id;
            CHECK(lsim_strtab_intern(g->strings, "gemm_untagged", 13, &id) == 0);
            g->name[find(g, "L1.mb0.fwd.gemm", LSIM_N_KERNEL)] = id;
            CHECK(lsim_wi_pipe_add(S, g, 0, &err) == LSIM_EARG && strstr(err.msg, "gemm_untagged"));
        }
        lsim_wi_pipe_free(S);
        lsim_graph_free(g);
    }
}

/* Kernel roles of a trace from its repeating structure: a Megatron-like
 * forward pass (embedding, 3 layers of ln GEMM ... GEMM | all-reduce, head)
 * with trace kernel names, no tags. Expected by hand: 3 layers, 2
 * all-reduces per layer, 14 kernels per layer (the first layer's leading
 * add is the embedding's), the embedding lookup and the loss unassigned. */
static lsim_graph *trace_graph(const char *lookup_name)
{
    static const char *const LAYER[] = {"triton__0d1d2d3d4de", "cuApplyLayerNorm<c10::Half>", "sm80_xmma_gemm_f16f16",
                                        "elementwise_kernel<128, 4>", "ampere_fp16_s1688gemm_fp16_256x64",
                                        "scaled_upper_triang_masked_softmax_warp_forward",
                                        "ampere_fp16_s16816gemm_fp16_64x128_nn", "elementwise_kernel<128, 4>",
                                        "cutlass::Kernel2<cutlass_80_tensorop_f16_s16816gemm_relu>", "AR",
                                        "triton__0d1d2d3d4de", "cuApplyLayerNorm<c10::Half>",
                                        "ampere_fp16_s16816gemm_fp16_128x128_tn", "triton__0d1d2d3de",
                                        "cutlass::Kernel2<cutlass_80_tensorop_f16_s16816gemm_relu>", "AR"};
    const int64_t act = 1LL * 128 * 256 * 2; /* micro-batch 1, seq 128, hidden 256 */
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t cpu, s, nc, prevc = UINT32_MAX, prevk = UINT32_MAX, prevar = UINT32_MAX, qkv = 0, ln = 0, ar = 0;
    CHECK(lsim_gb_new("trace", 0, 2, &b, &err) == 0);
    lsim_gb_proc(b, 0, 1, 1, &cpu);
    lsim_gb_proc(b, 1, 0, 7, &s);
    lsim_gb_proc(b, 1, 0, 24, &nc);
    int nseq = 0;
    const char *seq[80];
    seq[nseq++] = lookup_name;
    seq[nseq++] = "AR";
    for (int l = 0; l < 3; l++)
        for (int i = l == 0 ? 1 : 0; i < 16; i++) seq[nseq++] = LAYER[i];
    seq[nseq++] = "triton__0d1d2d3d4de";
    seq[nseq++] = "cuApplyLayerNorm<c10::Half>";
    seq[nseq++] = "ampere_fp16_s16816gemm_fp16_128x256_tn";
    seq[nseq++] = "reduce_kernel<512, 1>";
    seq[nseq++] = "ARsmall";
    int64_t cseq = 0;
    for (int i = 0; i < nseq; i++) {
        uint32_t c, k;
        int isar = !strncmp(seq[i], "AR", 2);
        lsim_gb_node(b, LSIM_N_RUNTIME, 0, cpu, "cudaLaunchKernel", 10, &c);
        lsim_gb_node(b, LSIM_N_KERNEL, 0, isar ? nc : s, isar ? "ncclKernel_AllReduce_RING_LL_Sum_half" : seq[i],
                     1000 + 10 * i, &k);
        if (isar) lsim_gb_coll(b, k, LSIM_COLL_ALLREDUCE, strcmp(seq[i], "AR") ? 512 : act, 2, "tp:0:0", cseq++);
        if (!i) lsim_gb_set_release(b, c, 0);
        else lsim_gb_edge(b, prevc, c, LSIM_E_CPU_THREAD, 0);
        lsim_gb_edge(b, c, k, LSIM_E_LAUNCH, 5);
        if (isar) {
            if (prevk != UINT32_MAX) lsim_gb_edge(b, prevk, k, LSIM_E_EVENT, 0);
            if (prevar != UINT32_MAX) lsim_gb_edge(b, prevar, k, LSIM_E_STREAM, 0);
            prevar = k;
        } else {
            if (prevk != UINT32_MAX) lsim_gb_edge(b, prevk, k, LSIM_E_STREAM, 0);
            if (prevar != UINT32_MAX && i > 0 && !strncmp(seq[i - 1], "AR", 2)) lsim_gb_edge(b, prevar, k, LSIM_E_EVENT, 0);
            prevk = k;
        }
        if (i == 4) qkv = k; /* layer 0: lookup AR ln1 qkv -> index 3; +1 for the launch pairing */
        if (i == 3) ln = k;
        if (i == 10) ar = k;
        prevc = c;
    }
    (void)qkv;
    (void)ln;
    (void)ar;
    lsim_graph *g = NULL;
    CHECK(lsim_gb_finish(b, &g, &err) == 0);
    return g;
}

static void test_trace_roles(void)
{
    lsim_err err;
    lsim_graph *g = trace_graph("indexSelectLargeIndex");
    if (!g) return;
    const int64_t act = 1LL * 128 * 256 * 2;
    (void)act;
    lsim_wi_ident id;
    CHECK(lsim_wi_identify(g, 0, 0, &id, &err) == 0);
    CHECK_I64(id.layer_source, LSIM_WI_LAYERS_KERNELS);
    CHECK_I64(id.klayers.found, 1);
    CHECK_I64(id.klayers.layers, 3);
    CHECK_I64(id.klayers.runs, 1);
    CHECK_I64(id.klayers.period, 2);
    CHECK_I64(id.klayers.kernels_per_layer, 14);
    CHECK_I64(id.klayers.kernels_per_layer_max, 14);
    CHECK_I64(id.klayers.role_kernels[2], 3);  /* qkv_gemm */
    CHECK_I64(id.klayers.role_kernels[3], 15); /* attn: 5 per layer */
    CHECK_I64(id.klayers.role_kernels[5], 3);  /* attn_allreduce */
    CHECK_I64(id.klayers.role_kernels[12], 3); /* dropout_add2 */
    CHECK_I64(id.klayers.role_kernels[13], 1); /* lnf */
    CHECK_I64(id.klayers.role_kernels[14], 1); /* logits_gemm */
    CHECK_I64(id.klayers.role_kernels[15], 1); /* emb_allreduce */
    CHECK_I64(id.klayers.unassigned, 2);       /* lookup, loss reduce */
    CHECK_I64(id.klayers.why_count[LSIM_WI_WHY_OUTSIDE], 2);
    CHECK_I64(id.forward_only, 1);
    CHECK(!strcmp(lsim_wi_trace_role_name(2), "qkv_gemm"));
    /* the override: 3 layers holds, 2 does not repeat */
    CHECK(lsim_wi_identify(g, 0, 3, &id, &err) == 0);
    CHECK_I64(id.klayers.layers, 3);
    CHECK_I64(id.klayers.forced, 1);
    CHECK(lsim_wi_identify(g, 0, 2, &id, &err) == LSIM_EARG);
    CHECK(strstr(err.msg, "--trace-layers 2: the structure does not repeat consistently") != NULL);
    /* a request's count is its own: the next identification finds them again */
    CHECK(lsim_wi_identify(g, 0, 0, &id, &err) == 0);
    CHECK_I64(id.klayers.forced, 0);
    /* TP 2 -> 4: the QKV GEMM re-timed by the cost ratio, layer norm kept,
     * the micro-batch from the layers' all-reduces */
    lsim_wi_layout L = {2, 1, 1};
    lsim_wi_model given = {256, 1024, 4, 64, 128, 512, 0, 2, 0}, M;
    CHECK(lsim_wi_model_of(g, &L, &given, 0, &M, &err) == 0);
    CHECK_I64(M.micro_batch, 1);
    lsim_gpu_spec gpu;
    lsim_gpu_spec_builtin("a100", &gpu, &err);
    lsim_topology topo;
    lsim_topology_default(&gpu, &topo);
    lsim_wi_counts rec;
    memset(&rec, 0, sizeof rec);
    lsim_wi_model T = M;
    T.tp = 4;
    lsim_graph *o = NULL;
    CHECK(lsim_wi_reshape(g, &L, &M, &T, 0, &gpu, &topo, &o, &rec, &err) == 0);
    if (o) {
        /* node ids: kernel of step i is 2 i + 1 */
        uint32_t q = 2 * 3 + 1, n1 = 2 * 2 + 1;
        lsim_ns c0 = lsim_cost_gemm(&gpu, 128, 3.0 * 256 / 2, 256, 2), c1 = lsim_cost_gemm(&gpu, 128, 3.0 * 256 / 4, 256, 2);
        CHECK_I64(o->dur[q], llround((double)g->dur[q] * ((double)c1 / (double)c0)));
        CHECK_I64(o->dur[n1], g->dur[n1]);
        /* at most qkv, attn x5, proj, fc1, gelu, fc2 per layer and the logits
         * GEMM (a tiny GEMM at the GPU's floor at both widths keeps its time);
         * at least the attention kernels and the QKV GEMMs */
        CHECK(rec.retimed[LSIM_N_KERNEL] <= 3 * 10 + 1 && rec.retimed[LSIM_N_KERNEL] >= 3 * 6);
        lsim_graph_free(o);
    }
    lsim_graph_free(g);
}

static size_t count_kind(const lsim_graph *g, int kind)
{
    size_t c = 0;
    for (size_t v = 0; v < g->n; v++) c += g->kind[v] == kind;
    return c;
}

/* --pp on a trace: the 3-layer forward pass above (TP 2) cut into 3
 * stages. Expected by hand: the embedding (lookup + its all-reduce) on
 * stage 0, one layer per stage (16 kernels each: 14 compute, 2
 * all-reduces; a layer owns the next one's leading add), the head (lnf,
 * logits, loss reduce, small all-reduce) on stage 2; a send after stage
 * 0's layer, a receive and a send on stage 1, a receive on stage 2, each
 * with its launch and a blocking synchronize; the receive feeds the
 * layer's first kernel (its layer norm) and the synchronize holds back
 * that kernel's launch; transfers timed lsim_cost_p2p(activations). */
static void test_trace_pipeline(void)
{
    lsim_err err;
    lsim_graph *g = trace_graph("indexSelectLargeIndex");
    if (!g) return;
    const int64_t act = 1LL * 128 * 256 * 2;
    lsim_gpu_spec gpu;
    lsim_gpu_spec_builtin("a100", &gpu, &err);
    lsim_topology topo;
    lsim_topology_default(&gpu, &topo);
    lsim_wi_layout L = {2, 1, 1};
    lsim_wi_pipe_cfg to = {3, 1, 1, 0, 0, 0, 0, 0};
    lsim_wi_counts rec;
    memset(&rec, 0, sizeof rec);
    static const size_t want_k[3] = {2 + 16 + 1, 16 + 2, 16 + 4 + 1}, want_r[3] = {18 + 2, 16 + 4, 20 + 2};
    static const int32_t want_rank[3] = {0, 2, 4};
    size_t kern = 0;
    for (int p = 0; p < 3; p++) {
        lsim_graph *o = NULL;
        CHECK(lsim_wi_trace_pipeline(g, &L, &to, &topo, 0, 0, p, &o, &rec, &err) == 0);
        if (!o) continue;
        CHECK_I64((int64_t)count_kind(o, LSIM_N_KERNEL), (int64_t)want_k[p]);
        CHECK_I64((int64_t)count_kind(o, LSIM_N_RUNTIME), (int64_t)want_r[p]);
        CHECK_I64(o->rank, want_rank[p]);
        CHECK_I64(o->world_size, 6);
        kern += count_kind(o, LSIM_N_KERNEL);
        int sends = 0, recvs = 0, ars = 0;
        for (size_t v = 0; v < o->n; v++) {
            if (o->coll[v] < 0) continue;
            const lsim_coll_info *ci = &o->colls[o->coll[v]];
            const char *pg = lsim_strtab_get(o->strings, ci->pg_name);
            if (ci->kind == LSIM_COLL_ALLREDUCE) {
                char want[32];
                snprintf(want, sizeof want, "tp:%d:0", p);
                CHECK(!strcmp(pg, want));
                CHECK_I64(ci->seq, ars);
                ars++;
                continue;
            }
            int32_t a = ci->kind == LSIM_COLL_SEND ? want_rank[p] : want_rank[p - 1 < 0 ? 0 : p - 1];
            int32_t b2 = ci->kind == LSIM_COLL_SEND ? want_rank[p + 1 > 2 ? 2 : p + 1] : want_rank[p];
            char want[32];
            snprintf(want, sizeof want, "p2p:%d->%d#fwd", a, b2);
            CHECK(!strcmp(pg, want));
            CHECK_I64(ci->bytes, act);
            CHECK_I64(ci->seq, 0);
            CHECK_I64(o->dur[v], lsim_cost_p2p(&topo, act, a, b2));
            CHECK(o->procs[o->proc[v]].is_gpu && o->procs[o->proc[v]].tid > 24); /* a stream of its own */
            if (ci->kind == LSIM_COLL_SEND) {
                sends++;
                /* after the layer's last kernel (the next layer's add) */
                uint32_t u = pred(o, (uint32_t)v, LSIM_E_EVENT);
                CHECK(u != UINT32_MAX && !strcmp(lsim_strtab_get(o->strings, o->name[u]), "triton__0d1d2d3d4de"));
                continue;
            }
            recvs++;
            /* the receive feeds the layer's layer norm, and the synchronize
             * after it comes before that kernel's launch */
            uint32_t ln = UINT32_MAX, sync = UINT32_MAX;
            for (uint64_t k = o->out_off[v]; k < o->out_off[v + 1]; k++) {
                uint32_t w = o->out_dst[k];
                if (o->kind[w] == LSIM_N_KERNEL && !(o->flags[w] & LSIM_NF_COLL)) ln = w;
                if (o->flags[w] & LSIM_NF_BLOCKING) sync = w;
            }
            CHECK(ln != UINT32_MAX && !strcmp(lsim_strtab_get(o->strings, o->name[ln]), "cuApplyLayerNorm<c10::Half>"));
            CHECK(sync != UINT32_MAX && ln != UINT32_MAX && pred(o, ln, LSIM_E_LAUNCH) != UINT32_MAX &&
                  pred(o, pred(o, ln, LSIM_E_LAUNCH), LSIM_E_CPU_THREAD) == sync);
            /* on its own graph: the layer starts after the receive ends */
            lsim_engine *E = NULL;
            CHECK(lsim_engine_new(o, &E, &err) == 0 && lsim_engine_run(E, &err) == 0);
            if (E && ln != UINT32_MAX) CHECK(lsim_engine_start(E)[ln] >= lsim_engine_end(E)[v]);
            lsim_engine_free(E);
        }
        CHECK_I64(ars, p == 0 ? 1 + 2 : p == 1 ? 2 : 2 + 1);
        CHECK_I64(sends, p < 2);
        CHECK_I64(recvs, p > 0);
        lsim_graph_free(o);
    }
    CHECK_I64((int64_t)kern, (int64_t)count_kind(g, LSIM_N_KERNEL) + 4);
    CHECK_I64((int64_t)rec.coll_retimed[LSIM_WI_PP], 4);
    /* what cannot apply: named, nothing made */
    lsim_graph *o = NULL;
    lsim_wi_pipe_cfg bad = {2, 1, 1, 0, 0, 0, 0, 0};
    CHECK(lsim_wi_trace_pipeline(g, &L, &bad, &topo, 0, 0, 0, &o, &rec, &err) == LSIM_EARG && !o);
    CHECK(strstr(err.msg, "the trace's 3 layers are not divisible by PP x V = 2 x 1") != NULL);
    bad = (lsim_wi_pipe_cfg){3, 2, 3, 0, 0, 0, 0, 0};
    CHECK(lsim_wi_trace_pipeline(g, &L, &bad, &topo, 0, 0, 0, &o, &rec, &err) == LSIM_EARG && !o);
    CHECK(strstr(err.msg, "interleaved:2 with --micro-batches 3 on a trace") != NULL);
    /* 2 micro-batches on 3 stages: stage 1 receives, computes and sends
     * twice, the second copy's transfers numbered 1 on their pairs and its
     * all-reduces after the first copy's */
    lsim_wi_pipe_cfg two = {3, 1, 2, 0, 0, 0, 0, 0};
    CHECK(lsim_wi_trace_pipeline(g, &L, &two, &topo, 0, 0, 1, &o, &rec, &err) == 0);
    if (o) {
        CHECK_I64((int64_t)count_kind(o, LSIM_N_KERNEL), 2 * (16 + 2));
        int64_t seen = 0;
        for (size_t v = 0; v < o->n; v++) {
            if (o->coll[v] < 0) continue;
            const lsim_coll_info *ci = &o->colls[o->coll[v]];
            int copy = v >= o->n / 2;
            if (ci->kind == LSIM_COLL_ALLREDUCE) CHECK(ci->seq / 2 == copy);
            else CHECK_I64(ci->seq, copy);
            seen |= (int64_t)1 << (ci->kind == LSIM_COLL_ALLREDUCE ? ci->seq : 4 + 2 * (ci->kind == LSIM_COLL_SEND) + copy);
        }
        CHECK_I64(seen, 0xff); /* all-reduces 0..3, recv 0 1, send 0 1 */
        lsim_graph_free(o);
        o = NULL;
    }
    lsim_wi_layout L2 = {2, 2, 1};
    CHECK(lsim_wi_trace_pipeline(g, &L2, &to, &topo, 0, 0, 0, &o, &rec, &err) == LSIM_EARG && !o);
    CHECK(strstr(err.msg, "already has a pipeline (PP = 2)") != NULL);
    lsim_graph_free(g);
    /* a backward pass (a kernel named so, outside the layers) without layer
     * annotations is refused: its layers are not recovered (a training
     * step with annotations goes to train_pipe.c) */
    g = trace_graph("embedding_dense_backward_kernel");
    if (!g) return;
    CHECK(lsim_wi_trace_pipeline(g, &L, &to, &topo, 0, 0, 0, &o, &rec, &err) == LSIM_EARG && !o);
    CHECK(strstr(err.msg, "backward-pass or optimizer kernels") != NULL);
    /* and --layers would cut the forward layers and leave their backward */
    lsim_wi_layout L1 = {2, 1, 1};
    CHECK(lsim_wi_layers(g, &L1, 6, 0, &topo, &o, &rec, &err) == LSIM_EARG && !o);
    CHECK(strstr(err.msg, "backward-pass or optimizer kernels") != NULL);
    lsim_graph_free(g);
}

/* Layers from record_function annotations: one thread, each layer an
 * annotation piece at its start and end around the launches of a GEMM and
 * a TP all-reduce, then a head kernel. names[] gives the annotation of each
 * layer (to build broken ones). Kernels 100 ns, all-reduces 50 ns. */
static lsim_graph *annotated(const char *const *names, int nl)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t cpu, s, nc, prev = UINT32_MAX, pk = UINT32_MAX, pa = UINT32_MAX;
    if (lsim_gb_new("annotated", 0, 2, &b, &err)) return NULL;
    lsim_gb_proc(b, 0, 1, 1, &cpu);
    lsim_gb_proc(b, 1, 0, 7, &s);
    lsim_gb_proc(b, 1, 0, 24, &nc);
    int64_t seq = 0;
#define CPU(name, id)                                                                                               \
    do {                                                                                                            \
        lsim_gb_node(b, LSIM_N_CPU, 0, cpu, name, 5, &id);                                                          \
        if (prev == UINT32_MAX) lsim_gb_set_release(b, id, 0);                                                      \
        else lsim_gb_edge(b, prev, id, LSIM_E_CPU_THREAD, 0);                                                       \
        prev = id;                                                                                                  \
    } while (0)
    for (int l = 0; l <= nl; l++) {
        uint32_t a, c, k, c2, k2;
        if (l < nl) CPU(names[l], a);
        lsim_gb_node(b, LSIM_N_RUNTIME, 0, cpu, "cudaLaunchKernel", 10, &c);
        lsim_gb_edge(b, prev, c, LSIM_E_CPU_THREAD, 0);
        prev = c;
        lsim_gb_node(b, LSIM_N_KERNEL, 0, s, l < nl ? "sm80_xmma_gemm" : "head_xent", 100, &k);
        lsim_gb_edge(b, c, k, LSIM_E_LAUNCH, 5);
        if (pk != UINT32_MAX) lsim_gb_edge(b, pk, k, LSIM_E_STREAM, 0);
        if (pa != UINT32_MAX) lsim_gb_edge(b, pa, k, LSIM_E_EVENT, 0);
        pk = k;
        if (l == nl) break;
        lsim_gb_node(b, LSIM_N_RUNTIME, 0, cpu, "cudaLaunchKernel", 10, &c2);
        lsim_gb_edge(b, prev, c2, LSIM_E_CPU_THREAD, 0);
        prev = c2;
        lsim_gb_node(b, LSIM_N_KERNEL, 0, nc, "ncclKernel_AllReduce", 50, &k2);
        lsim_gb_coll(b, k2, LSIM_COLL_ALLREDUCE, 4096, 2, "tp:0:0", seq++);
        lsim_gb_edge(b, c2, k2, LSIM_E_LAUNCH, 5);
        lsim_gb_edge(b, k, k2, LSIM_E_EVENT, 0);
        if (pa != UINT32_MAX) lsim_gb_edge(b, pa, k2, LSIM_E_STREAM, 0);
        pa = k2;
        CPU(names[l], a);
    }
#undef CPU
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) return NULL;
    return g;
}

static void test_annotated_layers(void)
{
    lsim_err err;
    static const char *const ok[3] = {"layer[0]", "layer[1]", "layer[2]"};
    lsim_graph *g = annotated(ok, 3);
    if (!g) return;
    CHECK_I64(lsim_graph_layer_annotation("layer[12]"), 12);
    CHECK_I64(lsim_graph_layer_annotation("model.layers.3"), 3);
    CHECK_I64(lsim_graph_layer_annotation("aten::layer_norm"), -1);
    lsim_wi_ident id;
    CHECK(lsim_wi_identify(g, 0, 0, &id, &err) == 0);
    CHECK_I64(id.layer_source, LSIM_WI_LAYERS_ANNOTATIONS);
    CHECK_I64(id.layers_per_chunk, 3);
    /* 3 -> 6 layers: each layer's GEMM and all-reduce (and their launches
     * and annotation pieces) copied, the head kept */
    lsim_wi_layout L = {2, 1, 1};
    lsim_wi_counts rec;
    memset(&rec, 0, sizeof rec);
    lsim_graph *o = NULL;
    CHECK(lsim_wi_layers(g, &L, 6, 0, NULL, &o, &rec, &err) == 0);
    if (o) {
        CHECK_I64((int64_t)count_kind(o, LSIM_N_KERNEL), 2 * 6 + 1);
        CHECK_I64((int64_t)count_kind(o, LSIM_N_CPU), 2 * 6);
        CHECK_I64((int64_t)o->ncoll, 6);
        lsim_graph_free(o);
        o = NULL;
    }
    /* 3 stages: one layer each, the head on the last */
    lsim_gpu_spec gpu;
    lsim_gpu_spec_builtin("a100", &gpu, &err);
    lsim_topology topo;
    lsim_topology_default(&gpu, &topo);
    lsim_wi_pipe_cfg to = {3, 1, 1, 0, 0, 0, 0, 0};
    static const size_t want_k[3] = {2 + 1, 2 + 2, 2 + 1 + 1};
    for (int p = 0; p < 3; p++) {
        CHECK(lsim_wi_trace_pipeline(g, &L, &to, &topo, 0, 0, p, &o, &rec, &err) == 0);
        if (!o) continue;
        CHECK_I64((int64_t)count_kind(o, LSIM_N_KERNEL), (int64_t)want_k[p]);
        lsim_graph_free(o);
        o = NULL;
    }
    lsim_graph_free(g);
    /* broken annotations: named, nothing made */
    static const char *const gap[3] = {"layer[0]", "layer[2]", "layer[3]"};
    g = annotated(gap, 3);
    if (!g) return;
    CHECK(lsim_wi_layers(g, &L, 8, 0, NULL, &o, &rec, &err) == LSIM_EARG && !o);
    CHECK(strstr(err.msg, "none for layer 1") != NULL);
    lsim_graph_free(g);
    static const char *const again[3] = {"layer[0]", "layer[1]", "layer[0]"};
    g = annotated(again, 3);
    if (!g) return;
    CHECK(lsim_wi_layers(g, &L, 4, 0, NULL, &o, &rec, &err) == LSIM_EARG && !o);
    CHECK(strstr(err.msg, "overlap") != NULL);
    lsim_graph_free(g);
}

int main(void)
{
    test_layers();
    test_identify_and_retime();
    test_slow_jitter();
    test_shape_tp();
    test_trace_roles();
    test_trace_pipeline();
    test_annotated_layers();
    test_pipeline();
    return check_result("test_whatif");
}
