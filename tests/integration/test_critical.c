/* Critical path and edge-class ablation.
 *
 * usage: test_critical               (1.)
 *        test_critical SHARED_TRACES_DIR  (2. and 3.; exit 77 without them)
 *
 * 1. A trace small enough to work out by hand: the path and its split into
 *    categories follow from the trace's own numbers, not from the code.
 * 2. On every shared trace: the path is a chain of real
 *    edges, each tight in simulated time; its categories add up to its
 *    length; no GPU work ends after it.
 * 3. Ablation only removes constraints: with any class dropped no node starts
 *    later than in the full model; dropping nothing changes nothing; edge
 *    counts drop by exactly the removed class. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../unit/check.h"

#include "lumosim/critical.h"
#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/trace.h"


typedef struct run {
    lsim_graph *g;
    lsim_engine *e;
    lsim_critical_path cp;
} run;

static int build(lsim_trace *t, lsim_latency_mode m, run *r)
{
    lsim_err err = {0};
    lsim_build_opts o;
    lsim_build_opts_default(&o);
    o.latency = m;
    memset(r, 0, sizeof *r);
    if (lsim_graph_build(t, &o, &r->g, &err)) {
        fprintf(stderr, "build: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int simulate(run *r)
{
    lsim_err err = {0};
    if (lsim_engine_new(r->g, &r->e, &err) || lsim_engine_run(r->e, &err) ||
        lsim_critical_path_compute(r->g, r->e, &r->cp, &err)) {
        fprintf(stderr, "simulate: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static void run_free(run *r)
{
    lsim_critical_path_clear(&r->cp);
    lsim_engine_free(r->e);
    lsim_graph_free(r->g);
}

/* Thread 10: op1 [0,10) us, cudaLaunchKernel [10,12), cudaDeviceSynchronize
 * [12,105), op2 [105,110). Kernel K on stream 7 [20,100). In observed mode
 * the path is op1 -> launch call -> K -> sync call -> op2 and splits into
 * CPU 10 + 2 + 5 = 17 us, launch latency 20 - 12 = 8 us, GPU compute 80 us,
 * waiting 105 - 100 = 5 us: 110 us in all. */
static void hand_worked(void)
{
    static const char doc[] =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op1\",\"pid\":1,\"tid\":10,\"ts\":1000,\"dur\":10},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":10,\"ts\":1010,\"dur\":2,"
        "\"args\":{\"correlation\":5}},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaDeviceSynchronize\",\"pid\":1,\"tid\":10,\"ts\":1012,"
        "\"dur\":93,\"args\":{\"correlation\":6}},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op2\",\"pid\":1,\"tid\":10,\"ts\":1105,\"dur\":5},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"K\",\"pid\":0,\"tid\":7,\"ts\":1020,\"dur\":80,"
        "\"args\":{\"correlation\":5,\"device\":0,\"stream\":7}}]}";
    lsim_trace *t = NULL;
    lsim_err err = {0};
    if (lsim_trace_read_mem("hand", doc, sizeof doc - 1, &t, &err)) {
        CHECK_MSG(0, "read: %s", err.msg);
        return;
    }
    run r;
    if (build(t, LSIM_LAT_OBSERVED, &r) || simulate(&r)) {
        CHECK_MSG(0, "hand-worked trace did not simulate");
        lsim_trace_free(t);
        return;
    }
    const char *want[] = {"op1", "cudaLaunchKernel", "K", "cudaDeviceSynchronize", "op2"};
    CHECK_MSG(r.cp.n == 5, "path has %zu nodes, want 5", r.cp.n);
    for (size_t i = 0; i < r.cp.n && i < 5; i++)
        CHECK_MSG(!strcmp(lsim_strtab_get(r.g->strings, r.g->name[r.cp.nodes[i]]), want[i]), "path node %zu is %s, want %s",
              i, lsim_strtab_get(r.g->strings, r.g->name[r.cp.nodes[i]]), want[i]);
    CHECK_MSG(r.cp.length == 110000, "length %lld", (long long)r.cp.length);
    CHECK_MSG(r.cp.by_cat[LSIM_CP_CPU] == 17000, "cpu %lld", (long long)r.cp.by_cat[LSIM_CP_CPU]);
    CHECK_MSG(r.cp.by_cat[LSIM_CP_LAUNCH] == 8000, "launch %lld", (long long)r.cp.by_cat[LSIM_CP_LAUNCH]);
    CHECK_MSG(r.cp.by_cat[LSIM_CP_GPU_COMPUTE] == 80000, "gpu %lld", (long long)r.cp.by_cat[LSIM_CP_GPU_COMPUTE]);
    CHECK_MSG(r.cp.by_cat[LSIM_CP_WAIT] == 5000, "wait %lld", (long long)r.cp.by_cat[LSIM_CP_WAIT]);
    CHECK_MSG(r.cp.ntop >= 1 && r.cp.top_time[0] == 80000, "the kernel is the top contributor");
    run_free(&r);
    lsim_trace_free(t);
    t = NULL;
    /* without the sync edge the call returns at once: op2 no longer waits
     * for the kernel */
    if (lsim_trace_read_mem("hand", doc, sizeof doc - 1, &t, &err) == 0 && build(t, LSIM_LAT_MODEL, &r) == 0) {
        lsim_graph_ablate(r.g, 1u << LSIM_E_SYNC, 0, &err);
        if (simulate(&r) == 0) {
            CHECK_MSG(r.g->edges_by_class[LSIM_E_SYNC] == 0, "sync edges remain");
            const lsim_ns *E = lsim_engine_end(r.e);
            lsim_ns op2_end = 0;
            for (size_t v = 0; v < r.g->n; v++)
                if (!strcmp(lsim_strtab_get(r.g->strings, r.g->name[v]), "op2")) op2_end = E[v] - r.g->t0;
            CHECK_MSG(op2_end < 100000, "op2 ends at %lld ns: it must not wait for the kernel any more", (long long)op2_end);
        }
        run_free(&r);
    }
    lsim_trace_free(t);
}

static void path_properties(const char *path)
{
    lsim_trace *t = NULL;
    lsim_err err = {0};
    if (lsim_trace_read(path, &t, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    run full;
    if (build(t, LSIM_LAT_MODEL, &full) || simulate(&full)) {
        CHECK_MSG(0, "%s: did not simulate", path);
        lsim_trace_free(t);
        return;
    }
    const lsim_graph *g = full.g;
    const lsim_critical_path *cp = &full.cp;
    const lsim_ns *S = lsim_engine_start(full.e), *E = lsim_engine_end(full.e);
    lsim_ns ws = S[0], we = E[0];
    for (size_t v = 0; v < g->n; v++) {
        if (S[v] < ws) ws = S[v];
        if (E[v] > we) we = E[v];
    }
    CHECK_MSG(cp->length <= we - ws && cp->start == ws, "%s: path length %lld, window %lld", path, (long long)cp->length,
          (long long)(we - ws));
    /* no GPU node ends after the path */
    for (size_t v = 0; v < g->n; v++)
        if (g->procs[g->proc[v]].is_gpu) CHECK_MSG(E[v] <= cp->end, "%s: GPU node %zu ends after the path", path, v);
    lsim_ns sum = 0;
    for (int c = 0; c < LSIM_CP_NCATS; c++) sum += cp->by_cat[c];
    CHECK_MSG(sum == cp->length, "%s: categories add to %lld, length %lld", path, (long long)sum, (long long)cp->length);
    CHECK_MSG(cp->n > 0 && E[cp->nodes[cp->n - 1]] == cp->end, "%s: the path must end with its last node", path);
    for (size_t i = 1; i < cp->n; i++) {
        int64_t k = cp->via[i];
        uint32_t u = cp->nodes[i - 1], v = cp->nodes[i];
        CHECK_MSG(k >= (int64_t)g->in_off[v] && k < (int64_t)g->in_off[v + 1] && g->in_src[k] == u,
              "%s: path step %zu is not an edge", path, i);
        if (k < (int64_t)g->in_off[v] || k >= (int64_t)g->in_off[v + 1]) break;
        lsim_ns at = E[u] + g->in_delay[k];
        if (g->in_class[k] & LSIM_EDGE_END) CHECK_MSG(at == E[v], "%s: end-edge on the path is not tight", path);
        else CHECK_MSG(at == S[v], "%s: edge on the path is not tight", path);
    }
    /* ablation: only earlier, and the full model is its own fixed point */
    static const struct {
        unsigned mask;
        int zl;
    } V[] = {{0, 0},
             {1u << LSIM_E_EVENT, 0},
             {1u << LSIM_E_INFERRED, 0},
             {1u << LSIM_E_SYNC, 0},
             {1u << LSIM_E_CPU_XTHREAD, 0},
             {0, 1}};
    for (size_t k = 0; k < sizeof V / sizeof *V; k++) {
        run ab = {0};
        if (lsim_graph_clone(full.g, &ab.g, &err) || lsim_graph_ablate(ab.g, V[k].mask, V[k].zl, &err) || simulate(&ab)) {
            CHECK_MSG(0, "%s: ablation %zu failed: %s", path, k, err.msg);
            run_free(&ab);
            continue;
        }
        const lsim_ns *S2 = lsim_engine_start(ab.e);
        size_t later = 0, moved = 0;
        for (size_t v = 0; v < g->n; v++) {
            if (S2[v] > S[v]) later++;
            if (S2[v] != S[v]) moved++;
        }
        CHECK_MSG(later == 0, "%s: variant %zu starts %zu nodes later than the full model", path, k, later);
        if (V[k].mask == 0 && !V[k].zl) {
            CHECK_MSG(moved == 0, "%s: dropping nothing moved %zu nodes", path, moved);
            CHECK_MSG(lsim_critical_path_recall(cp, &ab.cp) == 1.0, "%s: recall against itself must be 1", path);
        }
        for (int c = 0; c < LSIM_E_NCLASSES; c++)
            CHECK_MSG(ab.g->edges_by_class[c] == ((V[k].mask >> c) & 1u ? 0 : g->edges_by_class[c]),
                  "%s: variant %zu class %d count", path, k, c);
        run_free(&ab);
    }
    run_free(&full);
    lsim_trace_free(t);
}

int main(int argc, char **argv)
{
    struct stat st;
    if (argc < 2) { /* the hand-worked trace only */
        hand_worked();
        return check_result("test_critical");
    }
    if (stat(argv[1], &st) != 0) {
        printf("SKIP: shared traces not found at %s: the path properties cannot be checked\n", argv[1]);
        return 77;
    }
    {
        const char *rel[] = {"megatron_tp8_a100/rank0.json.gz",
                             "hta_single/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                             "hta_single/critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
                             "hta_single/nccl_parser_config__nccl_data.json.gz",
                             "hta_single/timeline_analysis__sampled_rank-0.json.gz",
                             "hta_single/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"};
        for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
            char p[2048];
            snprintf(p, sizeof p, "%s/%s", argv[1], rel[i]);
            path_properties(p);
        }
    }
    return check_result("test_critical");
}
