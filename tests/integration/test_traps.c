/* Every KINETO-NOTES trap, asserted on a real file (tests/data/README.md says
 * which fixture stands in where no shared trace shows a trap).
 *
 * usage: test_traps SHARED_TRACES_DIR TEST_DATA_DIR
 * Exits 77 (skipped) when the shared traces are not there.
 *
 * Besides trap-specific checks, every trace goes through the structural
 * invariants of a correct graph: CPU threads are sequences of
 * non-overlapping intervals; every GPU op has a launch edge unless it is
 * pre-window work; every start-edge admits the observed schedule
 * (end(u) + delay <= observed start(v)) in observed-latency mode; and the
 * dependency structure does not depend on the latency mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../unit/check.h"

#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/trace.h"


static char g_shared[1024], g_data[1024];

static lsim_graph *load(const char *dir, const char *rel, lsim_latency_mode m, lsim_trace **keep)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    lsim_trace *t = NULL;
    lsim_graph *g = NULL;
    lsim_err err = {0};
    if (lsim_trace_read(path, &t, &err)) {
        fprintf(stderr, "cannot read %s: %s\n", path, err.msg);
        check_failures++;
        return NULL;
    }
    lsim_build_opts o;
    lsim_build_opts_default(&o);
    o.latency = m;
    if (lsim_graph_build(t, &o, &g, &err)) {
        fprintf(stderr, "cannot build %s: %s\n", path, err.msg);
        check_failures++;
        lsim_trace_free(t);
        return NULL;
    }
    if (keep) *keep = t;
    else lsim_trace_free(t);
    return g;
}

static const char *nm(const lsim_graph *g, uint32_t v) { return lsim_strtab_get(g->strings, g->name[v]); }

/* Structural invariants, on any trace. */
static void invariants(const char *rel, const char *dir)
{
    lsim_graph *g = load(dir, rel, LSIM_LAT_OBSERVED, NULL);
    lsim_graph *gm = load(dir, rel, LSIM_LAT_MODEL, NULL);
    if (!g || !gm) goto done;
    /* threads: non-overlapping, in order */
    for (size_t v = 1; v < g->n; v++) {
        if (g->procs[g->proc[v]].is_gpu || g->proc[v] != g->proc[v - 1]) continue;
        CHECK_MSG(g->obs_start[v] >= g->obs_end[v - 1], "%s: CPU nodes %zu and %zu overlap on one thread", rel, v - 1, v);
    }
    for (size_t v = 0; v < g->n; v++) {
        int gpu = g->procs[g->proc[v]].is_gpu;
        int launches = 0;
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
            uint32_t u = g->in_src[k];
            int cls = g->in_class[k] & 0x7f;
            if (cls == LSIM_E_LAUNCH) launches++;
            if (g->in_class[k] & LSIM_EDGE_END) {
                CHECK_MSG(g->obs_end[u] + g->in_delay[k] <= g->obs_end[v], "%s: end-edge %u->%zu does not admit the trace", rel, u, v);
            } else {
                CHECK_MSG(g->obs_end[u] + g->in_delay[k] <= g->obs_start[v],
                      "%s: %s edge %u->%zu does not admit the trace (%lld > %lld)", rel,
                      lsim_edge_class_name((lsim_edge_class)cls), u, v, (long long)(g->obs_end[u] + g->in_delay[k]),
                      (long long)g->obs_start[v]);
            }
        }
        if (gpu) CHECK_MSG(launches == 1 || (g->flags[v] & LSIM_NF_PREWINDOW), "%s: GPU node %zu has %d launch edges", rel, v, launches);
    }
    /* the dependency structure is the same in both latency modes */
    CHECK_MSG(g->n == gm->n && g->nedges == gm->nedges, "%s: modes differ in structure", rel);
    if (g->n == gm->n && g->nedges == gm->nedges)
        for (size_t k = 0; k < g->nedges; k++)
            if (g->in_src[k] != gm->in_src[k] || g->in_class[k] != gm->in_class[k]) {
                CHECK_MSG(0, "%s: edge %zu differs between latency modes", rel, k);
                break;
            }
done:
    lsim_graph_free(g);
    lsim_graph_free(gm);
}

static uint32_t count_end_edges_from(const lsim_graph *g, uint32_t v, uint8_t kind)
{
    uint32_t n = 0;
    for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
        if ((g->in_class[k] & LSIM_EDGE_END) && g->kind[g->in_src[k]] == kind) n++;
    return n;
}

static uint32_t count_end_edges(const lsim_graph *g, uint32_t v)
{
    uint32_t n = 0;
    for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
        if (g->in_class[k] & LSIM_EDGE_END) n++;
    return n;
}

/* Trap 1: GPU work launched before the window (real trace, window opened
 * later by tests/data/tools/make_prewindow.py). */
static void trap_prewindow(void)
{
    lsim_graph *g = load(g_data, "prewindow_megatron_rank0.json.gz", LSIM_LAT_OBSERVED, NULL);
    if (!g) return;
    CHECK_MSG(g->prewindow > 0, "pre-window GPU ops not found");
    size_t pinned = 0;
    for (size_t v = 0; v < g->n; v++)
        if (g->flags[v] & LSIM_NF_PREWINDOW) {
            CHECK_MSG(g->release[v] == g->obs_start[v], "observed mode must pin pre-window work");
            pinned++;
        }
    CHECK_MSG(pinned == g->prewindow, "pinned %zu of %llu", pinned, (unsigned long long)g->prewindow);
    lsim_graph_free(g);
    /* model mode too: pre-window work is the GPU's initial state, the one
     * observed start a replay reads (issue 16; tests/integration/test_prewindow.c) */
    g = load(g_data, "prewindow_megatron_rank0.json.gz", LSIM_LAT_MODEL, NULL);
    if (!g) return;
    for (size_t v = 0; v < g->n; v++)
        if (g->flags[v] & LSIM_NF_PREWINDOW) CHECK_MSG(g->release[v] == g->obs_start[v], "model mode must pin pre-window work too");
    lsim_graph_free(g);
}

/* Trap 2: cudaEventRecord missing while waits exist (simple_add: 34
 * cudaStreamWaitEvent, no cudaEventRecord) and record/wait without cuda_sync
 * (megatron). */
static void trap_missing_record(void)
{
    lsim_graph *g = load(g_shared, "hta_single/critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
                         LSIM_LAT_OBSERVED, NULL);
    if (g) {
        CHECK_MSG(g->edges_by_class[LSIM_E_EVENT] + g->dropped[LSIM_DROP_CONTRADICTS_TIMES] + g->dropped[LSIM_DROP_SAME_STREAM] +
                      g->dropped[LSIM_DROP_NO_SOURCE] + g->dropped[LSIM_DROP_NO_TARGET] >= 20,
              "every cudaStreamWaitEvent must become an edge or a counted drop");
        CHECK_MSG(g->inferred_by_class[LSIM_E_EVENT] == g->edges_by_class[LSIM_E_EVENT],
              "without cudaEventRecord every event edge is inferred");
        lsim_graph_free(g);
    }
    g = load(g_shared, "megatron_tp8_a100/rank0.json.gz", LSIM_LAT_OBSERVED, NULL);
    if (g) {
        CHECK_MSG(g->edges_by_class[LSIM_E_EVENT] >= 300, "megatron: %llu event edges (338 waits in the file)",
              (unsigned long long)g->edges_by_class[LSIM_E_EVENT]);
        CHECK_MSG(g->inferred_by_class[LSIM_E_EVENT] == g->edges_by_class[LSIM_E_EVENT], "no cuda_sync: all inferred");
        lsim_graph_free(g);
    }
}

/* Trap: cuda_sync in all its variants. */
static void trap_cuda_sync(void)
{
    lsim_graph *g = load(g_shared, "hta_single/critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz",
                         LSIM_LAT_OBSERVED, NULL);
    if (g) {
        CHECK_MSG(g->edges_by_class[LSIM_E_EVENT] == 1 && g->inferred_by_class[LSIM_E_EVENT] == 0,
              "the Stream Wait Event with its record corr id gives one stated edge (got %llu, %llu inferred)",
              (unsigned long long)g->edges_by_class[LSIM_E_EVENT], (unsigned long long)g->inferred_by_class[LSIM_E_EVENT]);
        int found_ctx = 0;
        for (size_t v = 0; v < g->n; v++) {
            if (g->kind[v] != LSIM_N_RUNTIME) continue;
            if (!strcmp(nm(g, (uint32_t)v), "cudaDeviceSynchronize")) {
                found_ctx = 1;
                /* Context Sync waits for the last op of each of streams 20, 24, 28 */
                CHECK_MSG(count_end_edges(g, (uint32_t)v) == 3, "Context Sync: %u end-edges, want 3", count_end_edges(g, (uint32_t)v));
            }
            if (!strcmp(nm(g, (uint32_t)v), "cudaEventQuery"))
                CHECK_MSG(count_end_edges(g, (uint32_t)v) == 0, "Event Sync on cudaEventQuery must not block");
        }
        CHECK_MSG(found_ctx, "no cudaDeviceSynchronize");
        lsim_graph_free(g);
    }
    g = load(g_shared, "hta_single/critical_path__cuda_event_sync__event_sync_trace.json.gz", LSIM_LAT_OBSERVED, NULL);
    if (g) {
        int ss = 0, es = 0;
        for (size_t v = 0; v < g->n; v++) {
            if (g->kind[v] != LSIM_N_RUNTIME) continue;
            if (!strcmp(nm(g, (uint32_t)v), "cudaStreamSynchronize")) ss += count_end_edges(g, (uint32_t)v);
            if (!strcmp(nm(g, (uint32_t)v), "cudaEventSynchronize")) es += count_end_edges(g, (uint32_t)v);
        }
        CHECK_MSG(ss == 1 && es == 1, "Stream Sync and Event Sync each wait for one op (%d, %d)", ss, es);
        CHECK_MSG(g->inferred_by_class[LSIM_E_SYNC] == 0, "with cuda_sync nothing about syncs is inferred");
        lsim_graph_free(g);
    }
}

/* Trap 3: CUDA graph launches (no shared trace has one: fixture). */
static void trap_cuda_graph(void)
{
    lsim_graph *g = load(g_data, "cuda_graph.json", LSIM_LAT_OBSERVED, NULL);
    if (!g) return;
    uint32_t in_graph = 0, inferred_into_graph = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (!(g->flags[v] & LSIM_NF_GRAPH)) continue;
        in_graph++;
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
            if ((g->in_class[k] & 0x7f) == LSIM_E_INFERRED) inferred_into_graph++;
    }
    CHECK_MSG(in_graph == 7, "cudaGraphLaunch covers 7 GPU ops, found %u", in_graph);
    /* its internal order: every op but the first (41.25 us) waits for an op
     * of the graph; the cutlass kernel (48.5-57.5 us) overlaps the gemm
     * before it (41.25-61.25 us) on the same stream, so it starts at its
     * offset from the gemm's start, not after its end */
    uint32_t ordered = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (!(g->flags[v] & LSIM_NF_GRAPH)) continue;
        int from_graph = 0;
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
            uint32_t u = g->in_src[k];
            if ((g->flags[u] & LSIM_NF_GRAPH) && g->corr[u] == g->corr[v]) {
                from_graph = 1;
                CHECK_MSG(g->obs_end[u] + g->in_delay[k] <= g->obs_start[v],
                          "graph edge %u -> %zu admits no observed schedule", u, v);
            }
        }
        ordered += (uint32_t)from_graph;
    }
    CHECK_MSG(ordered == 6, "6 graph ops wait for ops of their graph, found %u", ordered);
    lsim_graph_free(g);
}

/* Trap 4: blocking calls: D2H pageable cudaMemcpyAsync (megatron), AMD
 * hipMemcpyWithStream and hipDeviceSynchronize (real ROCm trace). */
static void trap_blocking(void)
{
    lsim_graph *g = load(g_shared, "megatron_tp8_a100/rank0.json.gz", LSIM_LAT_OBSERVED, NULL);
    if (g) {
        int blocking_copies = 0;
        for (size_t v = 0; v < g->n; v++)
            if (g->kind[v] == LSIM_N_RUNTIME && !strcmp(nm(g, (uint32_t)v), "cudaMemcpyAsync") &&
                count_end_edges_from(g, (uint32_t)v, LSIM_N_MEMCPY) > 0)
                blocking_copies++;
        CHECK_MSG(blocking_copies >= 1, "a DtoH pageable cudaMemcpyAsync must wait for its copy");
        lsim_graph_free(g);
    }
    g = load(g_shared, "hta_single/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz", LSIM_LAT_OBSERVED, NULL);
    if (g) {
        int copies = 0, devsync = 0;
        for (size_t v = 0; v < g->n; v++) {
            if (g->kind[v] != LSIM_N_RUNTIME) continue;
            if (!strcmp(nm(g, (uint32_t)v), "hipMemcpyWithStream") && count_end_edges_from(g, (uint32_t)v, LSIM_N_MEMCPY) == 1)
                copies++;
            if (!strcmp(nm(g, (uint32_t)v), "hipDeviceSynchronize") && count_end_edges(g, (uint32_t)v) >= 1) devsync++;
        }
        CHECK_MSG(copies == 2, "both hipMemcpyWithStream calls wait for their copy (%d)", copies);
        CHECK_MSG(devsync == 1, "hipDeviceSynchronize waits");
        lsim_graph_free(g);
    }
}

/* Trap 5: nested runtime calls (megatron: cudaOccupancy... inside
 * cudaMemsetAsync) and zero-duration events. */
static void trap_nesting(void)
{
    lsim_trace *t = NULL;
    lsim_graph *g = load(g_shared, "megatron_tp8_a100/rank0.json.gz", LSIM_LAT_OBSERVED, &t);
    if (!g) return;
    size_t nested = 0, zero = 0;
    for (size_t i = 0; i < t->nev; i++) {
        if (t->ev[i].dur == 0) zero++;
    }
    /* a runtime call with a runtime call nested inside it is split: its node
     * (the last piece) ends with the call but starts after the nested one */
    for (size_t i = 0; i < t->nev && nested < 5; i++) {
        const lsim_event *a = &t->ev[i];
        if (a->kind != LSIM_EV_RUNTIME) continue;
        for (size_t j = 0; j < t->nev; j++) {
            const lsim_event *c = &t->ev[j];
            if (j == i || c->kind != LSIM_EV_RUNTIME || c->row != a->row) continue;
            if (!(c->ts >= a->ts && c->ts + c->dur <= a->ts + a->dur && c->dur < a->dur)) continue;
            for (size_t v = 0; v < g->n; v++)
                if (g->kind[v] == LSIM_N_RUNTIME && g->name[v] == a->name && g->obs_end[v] == a->ts + a->dur &&
                    g->obs_start[v] >= c->ts + c->dur) {
                    nested++;
                    break;
                }
            break;
        }
    }
    CHECK_MSG(nested >= 1, "no runtime call split around a nested runtime call");
    CHECK_MSG(zero > 1000, "megatron rank0 has ~1900 zero-duration events, read %zu", zero);
    lsim_trace_free(t);
    lsim_graph_free(g);
}

/* Trap 6: autograd threads and negative thread ids; float timestamps with
 * sub-microsecond digits; Trap 7: NCCL names, kernel metadata, pg_config. */
static void trap_cross_thread(void)
{
    /* the autograd thread resumes right after the main thread hands work
     * over: cross-thread edges, each admitted by the trace (invariants) */
    lsim_graph *g = load(g_shared, "hta_single/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                         LSIM_LAT_OBSERVED, NULL);
    if (!g) return;
    CHECK_MSG(g->edges_by_class[LSIM_E_CPU_XTHREAD] > 0, "no cross-thread edge in a trace with an autograd thread");
    for (size_t v = 0; v < g->n; v++)
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
            if ((g->in_class[k] & 0x7f) == LSIM_E_CPU_XTHREAD)
                CHECK_MSG(g->proc[g->in_src[k]] != g->proc[v], "cross-thread edge within one thread");
    lsim_graph_free(g);
}

static void trap_threads_and_collectives(void)
{
    lsim_trace *t = NULL;
    lsim_graph *g = load(g_shared, "hta_single/nccl_parser_config__nccl_data.json.gz", LSIM_LAT_OBSERVED, &t);
    if (!g) return;
    int neg = 0;
    for (uint32_t p = 0; p < g->nprocs; p++)
        if (!g->procs[p].is_gpu && g->procs[p].tid == -549452224) neg = 1;
    CHECK_MSG(neg, "negative thread id -549452224 must be a thread of its own");
    CHECK_MSG(t->ts_float, "float timestamps expected");
    int frac = 0;
    for (size_t i = 0; i < t->nev && !frac; i++)
        if (t->ev[i].ts % 1000 != 0) frac = 1;
    CHECK_MSG(frac, "sub-microsecond digits of float timestamps must survive");
    /* the backward pass launches from a second thread; its GPU work still
     * belongs to the ProfilerStep */
    uint32_t main_thread = g->proc[0];
    size_t other_thread_gpu_in_iter = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (!g->procs[g->proc[v]].is_gpu || g->iter[v] < 0) continue;
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
            if ((g->in_class[k] & 0x7f) == LSIM_E_LAUNCH && g->proc[g->in_src[k]] != main_thread) other_thread_gpu_in_iter++;
    }
    CHECK_MSG(other_thread_gpu_in_iter > 100, "autograd-thread launches must count in iterations (%zu)", other_thread_gpu_in_iter);
    /* distributedInfo / pg_config */
    CHECK_MSG(t->rank == 0 && t->world_size == 2 && t->npg == 1, "distributedInfo rank/world/pg_config");
    if (t->npg == 1)
        CHECK_MSG(t->pgs[0].size == 2 && t->pgs[0].nranks == 2 && t->pgs[0].ranks[1] == 1, "pg_config ranks [0, 1]");
    /* kernel metadata: Collective name, sizes, group */
    int allreduce_meta = 0, broadcast = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (!(g->flags[v] & LSIM_NF_COLL) || g->coll[v] < 0) continue;
        const lsim_coll_info *c = &g->colls[g->coll[v]];
        if (c->kind == LSIM_COLL_ALLREDUCE && c->from_metadata && c->in_nelems > 0 && c->group_size == 2 && c->bytes > 0 &&
            c->pg_name != UINT32_MAX)
            allreduce_meta++;
        if (c->kind == LSIM_COLL_BROADCAST) broadcast++;
    }
    CHECK_MSG(allreduce_meta == 15 && broadcast == 6, "15 all-reduce with metadata (%d), 6 broadcast (%d)", allreduce_meta, broadcast);
    lsim_trace_free(t);
    lsim_graph_free(g);

    /* older naming without metadata: megatron's ncclDevKernel_AllReduce_Sum_f16_RING_LL;
     * sizes from record_param_comms' Input Dims */
    g = load(g_shared, "megatron_tp8_a100/rank0.json.gz", LSIM_LAT_OBSERVED, NULL);
    if (g) {
        int ar = 0;
        for (size_t v = 0; v < g->n; v++)
            if ((g->flags[v] & LSIM_NF_COLL) && g->colls[g->coll[v]].kind == LSIM_COLL_ALLREDUCE) ar++;
        CHECK_MSG(ar == 84, "megatron rank0 has 84 all-reduce kernels, found %d", ar);
        /* sizes completed from the enclosing record_param_comms, numbered in
         * launch order on the (world) group */
        int sized = 0, seq_ok = 1;
        int64_t seen[84] = {0};
        for (size_t v = 0; v < g->n; v++) {
            if (!(g->flags[v] & LSIM_NF_COLL)) continue;
            const lsim_coll_info *c = &g->colls[g->coll[v]];
            if (c->bytes > 0 && c->in_nelems > 0) sized++;
            if (c->seq < 0 || c->seq >= 84) seq_ok = 0;
            else seen[c->seq]++;
        }
        for (int i = 0; i < 84 && seq_ok; i++)
            if (seen[i] != 1) seq_ok = 0;
        CHECK_MSG(sized >= 81, "all-reduce sizes from record_param_comms: %d of 84", sized);
        CHECK_MSG(seq_ok, "sequence numbers must be 0..83, each once");
        int rpc_sized = 0;
        for (size_t i = 0; i < g->ncoll; i++)
            if (g->colls[i].in_nelems == 4LL * 2048 * 4096) rpc_sized++; /* any kind: the nccl:* title now names it */
        CHECK_MSG(rpc_sized > 0, "record_param_comms Input Dims [4, 2048, 4096] must give the message size");
        lsim_graph_free(g);
    }
    g = load(g_shared, "hta_single/timeline_analysis__sampled_rank-0.json.gz", LSIM_LAT_OBSERVED, NULL);
    if (g) {
        /* 10 ncclKernel_SendRecv kernels; the 4 inside the trace's own
         * nccl:all_to_all titles are all-to-alls, the other 6 stay sendrecv */
        int sr = 0, a2a = 0;
        for (size_t v = 0; v < g->n; v++) {
            if (!(g->flags[v] & LSIM_NF_COLL)) continue;
            if (g->colls[g->coll[v]].kind == LSIM_COLL_SENDRECV) sr++;
            if (g->colls[g->coll[v]].kind == LSIM_COLL_ALLTOALL) a2a++;
        }
        CHECK_MSG(sr == 6 && a2a == 4, "10 ncclKernel_SendRecv kernels: 4 all-to-all (nccl:all_to_all), 6 sendrecv; found %d, %d", a2a, sr);
        lsim_graph_free(g);
    }
}

/* The modelled launch delay of a call of API a lasting c is
 * max(ls_a - c, le_a): two constants per API (the latency from the call's
 * start and the floor from its end, graph.h), whatever the GPU work did.
 * If any (ls, le) fits every launch of an API, so does ls* = min(d + c) and
 * le* = min(d) (one of the two terms is tight at each minimum), so the test
 * is exact: every delay d must equal max(ls* - c, le*). A delay that read
 * the work's own observed start back would not fit, unless by chance. */
typedef struct launch_delay {
    uint32_t api;
    lsim_ns d, c;
} launch_delay;

static int cmp_launch_delay(const void *a, const void *b)
{
    const launch_delay *x = a, *y = b;
    return (x->api > y->api) - (x->api < y->api);
}

static void launch_delays_fit_the_model(const lsim_graph *g, const char *rel)
{
    launch_delay *x = malloc((g->nedges ? g->nedges : 1) * sizeof *x);
    size_t n = 0, bad = 0;
    if (!x) return;
    for (size_t v = 0; v < g->n; v++)
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
            if ((g->in_class[k] & 0x7f) == LSIM_E_LAUNCH) {
                uint32_t u = g->in_src[k];
                x[n++] = (launch_delay){g->name[u], g->in_delay[k], g->obs_end[u] - g->obs_start[u]};
            }
    qsort(x, n, sizeof *x, cmp_launch_delay);
    for (size_t i = 0; i < n;) {
        size_t e = i;
        lsim_ns ls = INT64_MAX, le = INT64_MAX;
        for (; e < n && x[e].api == x[i].api; e++) {
            if (x[e].d + x[e].c < ls) ls = x[e].d + x[e].c;
            if (x[e].d < le) le = x[e].d;
        }
        for (size_t j = i; j < e; j++) {
            lsim_ns want = ls - x[j].c > le ? ls - x[j].c : le;
            if (x[j].d != want && bad++ < 3)
                CHECK_MSG(0, "%s: a %s launch (call %lld ns) has delay %lld ns; the per-API model (latency %lld ns from the "
                          "call's start, floor %lld ns after its end) gives %lld ns", rel,
                          lsim_strtab_get(g->strings, x[j].api), (long long)x[j].c, (long long)x[j].d, (long long)ls,
                          (long long)le, (long long)want);
        }
        i = e;
    }
    CHECK_MSG(bad == 0, "%s: %zu of %zu launch delays do not fit two constants per API", rel, bad, n);
    free(x);
}

/* Model mode must not read observed GPU start times back: the delays of
 * edges into GPU work come from learned parameters (one queued-op gap, one
 * signalling delay, per-API latencies), never from the node's own start. */
static void model_reads_no_gpu_starts(const char *rel, const char *dir)
{
    lsim_graph *g = load(dir, rel, LSIM_LAT_MODEL, NULL);
    if (!g) return;
    lsim_ns hidden = INT64_MIN;
    size_t exact_launch = 0, launches = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (!g->procs[g->proc[v]].is_gpu) continue;
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
            uint32_t u = g->in_src[k];
            lsim_ns d = g->in_delay[k];
            /* between ops of one graph launch the delay is the graph's own
             * device-side dispatch (src/build/hidden.c, bld_graph_edges):
             * relative to the source's end, checked by cuda_graph_replay.py */
            if ((g->flags[u] & g->flags[v] & LSIM_NF_GRAPH) && g->corr[u] == g->corr[v]) continue;
            switch (g->in_class[k] & 0x7f) {
            case LSIM_E_STREAM:
                CHECK_MSG(d == 0 || d == g->queued_gap_ns || d == -(g->obs_end[u] - g->obs_start[u]),
                      "%s: stream edge into %zu has delay %lld", rel, v, (long long)d);
                break;
            case LSIM_E_EVENT: CHECK_MSG(d == 0, "%s: event edge delay %lld", rel, (long long)d); break;
            case LSIM_E_INFERRED:
                if (hidden == INT64_MIN) hidden = d;
                CHECK_MSG(d == hidden, "%s: hidden edges must share one modelled delay", rel);
                break;
            case LSIM_E_LAUNCH:
                launches++;
                if (g->obs_end[u] + d == g->obs_start[v]) exact_launch++;
                break;
            default: break;
            }
        }
    }
    /* a learned latency matches some launches exactly; it must not match all */
    CHECK_MSG(launches == 0 || exact_launch < launches, "%s: every launch delay reproduces its observed start", rel);
    launch_delays_fit_the_model(g, rel);
    lsim_graph_free(g);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_traps SHARED_TRACES_DIR TEST_DATA_DIR\n");
        return 2;
    }
    struct stat st;
    if (stat(argv[1], &st) != 0) {
        printf("shared traces not found at %s: skipped\n", argv[1]);
        return 77;
    }
    snprintf(g_shared, sizeof g_shared, "%s", argv[1]);
    snprintf(g_data, sizeof g_data, "%s", argv[2]);
    const char *all[] = {
        "hta_single/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "hta_single/critical_path__cuda_event_sync__event_sync_trace.json.gz",
        "hta_single/critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz",
        "hta_single/critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
        "hta_single/nccl_parser_config__nccl_data.json.gz",
        "hta_single/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        "hta_single/timeline_analysis__sampled_rank-0.json.gz",
        "hta_single/trace_filter__sampled_rank-1.json.gz",
        "megatron_tp8_a100/rank0.json.gz",
        "megatron_tp8_a100/rank3.json.gz",
    };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        invariants(all[i], g_shared);
        model_reads_no_gpu_starts(all[i], g_shared);
    }
    model_reads_no_gpu_starts("cuda_graph.json", g_data);
    invariants("prewindow_megatron_rank0.json.gz", g_data);
    invariants("cuda_graph.json", g_data);
    invariants("hip_trace.json", g_data);
    trap_prewindow();
    trap_missing_record();
    trap_cuda_sync();
    trap_cuda_graph();
    trap_blocking();
    trap_nesting();
    trap_threads_and_collectives();
    trap_cross_thread();
    return check_result("test_traps");
}
