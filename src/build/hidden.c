/* Hidden dependencies: a GPU op that started later than all its known
 * dependencies allow gets the dependency its timing shows (the op on
 * another stream of the device that ended just before): waits whose calls
 * the profiler filtered out. And the order inside CUDA/HIP graph launches,
 * whose internal edges the trace does not show either (bld_graph_edges). */
#include "build_internal.h"
#include "lumosim/alloc.h"

/* ---------------------------------------------- timing-inferred GPU deps */

/* For each GPU op, the start its known start-edges explain (observed ends of
 * predecessors + model delays). If it started later than that by more than
 * the slack, some dependency is missing: take the op on another stream of the
 * same device that ended last, no earlier than infer_gap before the start.
 * "Before" is read at the trace's timestamp granularity: in a trace written
 * in whole microseconds a source that ended a fraction of a microsecond
 * before its target can show up to one microsecond after the target's start,
 * so a source that began before the target and ends up to one resolution
 * step after its start is a near miss, accepted (its delay keeps the observed
 * overlap, so the observed schedule stays admissible). */
int bld_hidden_edges(bld_builder *b)
{
    lsim_graph *g = b->g;
    int rc = 0;
    size_t ne0 = b->nedges;
    const lsim_ns tol = b->t->ts_resolution_ns > 0 ? b->t->ts_resolution_ns : 0;
    lsim_ns *explained = lsim_malloc((g->n ? g->n : 1) * sizeof *explained);
    lsim_time_node *ends = lsim_malloc((g->n ? g->n : 1) * sizeof *ends);
    if (!explained || !ends) {
        rc = bld_oom(b);
        goto cleanup;
    }
    for (size_t v = 0; v < g->n; v++) explained[v] = INT64_MIN;
    size_t n = 0;
    for (size_t i = 0; i < ne0; i++) {
        const lsim_edge *e = &b->edges[i];
        if (e->cls & LSIM_EDGE_END) continue;
        if (!g->procs[g->proc[e->dst]].is_gpu) continue;
        /* from observed ends and mode-independent delays, so that which
         * edges are recovered does not depend on the latency mode */
        lsim_ns d, gap = g->obs_start[e->dst] - g->obs_end[e->src];
        switch (e->cls & 0x7f) {
        case LSIM_E_LAUNCH: d = bld_model_launch_delay(b, e->src); break;
        case LSIM_E_STREAM:
        case LSIM_E_EVENT: d = gap < 0 ? gap : 0; break;
        default: d = e->delay; break;
        }
        lsim_ns x = g->obs_end[e->src] + d;
        if (x > explained[e->dst]) explained[e->dst] = x;
    }
    for (size_t v = 0; v < g->n; v++)
        if (g->procs[g->proc[v]].is_gpu) ends[n++] = (lsim_time_node){g->obs_end[v], (uint32_t)v};
    qsort(ends, n, sizeof *ends, lsim_time_node_cmp);
    for (size_t v = 0; v < g->n; v++) {
        if (!g->procs[g->proc[v]].is_gpu || (g->flags[v] & LSIM_NF_PREWINDOW)) continue;
        /* a graph's later ops: their graph's order is their dependency */
        if ((g->flags[v] & LSIM_NF_GRAPH) && b->graph_head[b->launch_of[v]] != v) continue;
        if (explained[v] == INT64_MIN || g->obs_start[v] - explained[v] <= b->o->infer_slack_ns) continue;
        lsim_ns s = g->obs_start[v];
        for (size_t k = lsim_time_node_count_le(ends, n, s + tol); k-- > 0;) {
            if (s - ends[k].t > b->o->infer_gap_ns) break;
            uint32_t u = ends[k].node;
            if (g->proc[u] == g->proc[v] || b->proc_device[g->proc[u]] != b->proc_device[g->proc[v]]) continue;
            if (ends[k].t > s && g->obs_start[u] >= s) continue; /* ran after it: no near miss */
            if (ends[k].t <= explained[v]) break; /* would explain nothing */
            if ((rc = bld_add_edge(b, u, (uint32_t)v, LSIM_E_INFERRED, s - ends[k].t))) goto cleanup;
            g->inferred_by_class[LSIM_E_INFERRED]++;
            break;
        }
    }
    if (b->o->latency == LSIM_LAT_MODEL && b->nedges > ne0) {
        /* the model's signalling delay: the median of the recovered gaps */
        size_t m = b->nedges - ne0;
        for (size_t i = 0; i < m; i++) explained[i] = b->edges[ne0 + i].delay;
        lsim_ns med = lsim_median_i64(explained, m);
        for (size_t i = ne0; i < b->nedges; i++) b->edges[i].delay = med;
    }
cleanup:
    free(explained);
    free(ends);
    return rc;
}

/* ------------------------------------------------------ CUDA-graph internals */

/* One graph launch correlation covers all of its graph's ops (KINETO-NOTES
 * trap 3), and the trace shows none of the graph's internal edges: the
 * record/wait and stream order captured into it became graph edges, which
 * CUPTI does not report. What the trace does show is the internal order,
 * and a replay keeps it: an op of a graph starts after the ops of the same
 * graph that ended before it started (within one timestamp step), on its
 * stream and on the graph's other streams. Ops of the graph that overlapped
 * in the trace (branches, also on one stream) stay unordered.
 *
 * The gap between such an op and the last of those ends is the graph's own
 * device-side dispatch: the CPU was done with the graph when the call
 * returned, so nothing on the CPU timeline can widen or narrow it, and no
 * other part of the model predicts it. It is a per-graph-node delay, the
 * gap this launch of the graph shows at that node, in both latency modes.
 * (A median over the trace's launches of the same graph -- same ops in the
 * same order on the same streams -- was tried: on the megatron fixture of
 * tests/data/tools/make_cuda_graph.py, launches of one graph differ in
 * their internal gaps by up to milliseconds, and the median moved ops by
 * up to 19 ms, GPU start-error p90 5.8 ms against 7 us.) An op with no
 * such predecessor (a root of the graph other than its first op) is
 * dispatched at its offset from the first op's start. Only the first op
 * is placed from outside the graph: after the launch call (+ the learned
 * graph launch latency, latency.c), after earlier work on its stream and
 * after the events waited for before the call; every other op's time
 * follows from it and from these edges, never from its observed start.
 * Before this, stream edges packed a graph's ops back to back (the idle
 * inside graphs disappeared from the replay), and every op of a graph on
 * an idle stream was a launch-latency sample (the idle before graphs
 * went with it). */
typedef struct gr_key {
    uint32_t r;
    lsim_ns s, e;
    uint32_t v;
} gr_key;

static int cmp_gr_start(const void *x, const void *y)
{
    const gr_key *a = x, *c = y;
    if (a->r != c->r) return a->r < c->r ? -1 : 1;
    if (a->s != c->s) return a->s < c->s ? -1 : 1;
    return a->v < c->v ? -1 : a->v > c->v;
}

static int cmp_gr_end(const void *x, const void *y)
{
    const gr_key *a = x, *c = y;
    if (a->e != c->e) return a->e < c->e ? -1 : 1;
    if (a->s != c->s) return a->s < c->s ? -1 : 1;
    return a->v < c->v ? -1 : a->v > c->v;
}

typedef struct gr_edge {
    uint32_t src, dst; /* dst: index into the start-ordered list */
} gr_edge;

int bld_graph_edges(bld_builder *b)
{
    lsim_graph *g = b->g;
    int rc = 0;
    const lsim_ns tol = bld_ts_step(b);
    size_t n = 0, ne = 0, cape = 0;
    for (size_t v = 0; v < g->n; v++)
        if (g->flags[v] & LSIM_NF_GRAPH) n++;
    if (!n) return 0;
    gr_key *k = lsim_malloc(n * sizeof *k), *byend = lsim_malloc(n * sizeof *byend);
    lsim_ns *x = lsim_malloc(n * sizeof *x);
    uint8_t *root = lsim_malloc(n);
    uint32_t *last = lsim_malloc(g->nprocs * sizeof *last), *touched = lsim_malloc(g->nprocs * sizeof *touched);
    gr_edge *pe = NULL;
    if (!k || !byend || !x || !root || !last || !touched) {
        rc = bld_oom(b);
        goto cleanup;
    }
    n = 0;
    for (size_t v = 0; v < g->n; v++)
        if (g->flags[v] & LSIM_NF_GRAPH) k[n++] = (gr_key){b->launch_of[v], g->obs_start[v], g->obs_end[v], (uint32_t)v};
    qsort(k, n, sizeof *k, cmp_gr_start);
    for (uint32_t p = 0; p < g->nprocs; p++) last[p] = BLD_NONE;
    for (size_t a = 0, z; a < n; a = z) {
        for (z = a + 1; z < n && k[z].r == k[a].r;) z++;
        for (size_t i = a; i < z; i++) {
            byend[i] = k[i];
            byend[i].r = (uint32_t)i; /* its place in the start order */
        }
        qsort(byend + a, z - a, sizeof *byend, cmp_gr_end);
        const uint32_t h = k[a].v; /* the graph's first op (graph_head) */
        size_t nt = 0, pend = a;
        x[a] = 0;
        root[a] = 1;
        for (size_t i = a; i < z; i++) {
            /* the ops that ended by this op's start (one timestamp step late: a
             * near miss), latest per stream */
            while (pend < z && byend[pend].e <= k[i].s + tol) {
                uint32_t q = g->proc[byend[pend].v];
                if (last[q] == BLD_NONE) touched[nt++] = q;
                last[q] = (uint32_t)pend++;
            }
            if (i == a) continue;
            lsim_ns maxend = INT64_MIN;
            for (size_t t = 0; t < nt; t++) {
                /* the latest end on that stream from an op that started
                 * before this one (one that started with or after it and ended
                 * within the step is not before it) */
                size_t j = last[touched[t]], steps = 0;
                int found = 0;
                for (;; j--) {
                    if (g->proc[byend[j].v] == touched[t] && byend[j].r < i) {
                        found = 1;
                        break;
                    }
                    if (j == a || ++steps >= 256) break;
                }
                if (!found) continue;
                if (LSIM_GROW(pe, &cape, ne + 1)) {
                    rc = bld_oom(b);
                    goto cleanup;
                }
                pe[ne++] = (gr_edge){byend[j].v, (uint32_t)i};
                if (byend[j].e > maxend) maxend = byend[j].e;
            }
            root[i] = maxend == INT64_MIN;
            x[i] = root[i] ? k[i].s - k[a].s : k[i].s - maxend;
            if (root[i]) {
                if (LSIM_GROW(pe, &cape, ne + 1)) {
                    rc = bld_oom(b);
                    goto cleanup;
                }
                pe[ne++] = (gr_edge){h, (uint32_t)i};
            }
        }
        for (size_t t = 0; t < nt; t++) last[touched[t]] = BLD_NONE;
    }
    for (size_t i = 0; i < ne; i++) {
        uint32_t u = pe[i].src, d = pe[i].dst, v = k[d].v;
        /* a root's delay is its offset from the first op's start, from
         * that op's end */
        lsim_ns delay = root[d] ? x[d] - (g->obs_end[u] - g->obs_start[u]) : x[d];
        int cross = g->proc[u] != g->proc[v];
        if ((rc = bld_add_edge(b, u, v, cross ? LSIM_E_INFERRED : LSIM_E_STREAM, delay))) goto cleanup;
        if (cross) g->inferred_by_class[LSIM_E_INFERRED]++;
    }
cleanup:
    free(k);
    free(byend);
    free(x);
    free(root);
    free(last);
    free(touched);
    free(pe);
    return rc;
}
