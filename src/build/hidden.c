/* Hidden dependencies: a GPU op that started later than all its known
 * dependencies allow gets the dependency its timing shows (the op on
 * another stream of the device that ended just before): CUDA-graph
 * internals and waits whose calls the profiler filtered out. */
#include "build_internal.h"

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
    lsim_ns *explained = malloc((g->n ? g->n : 1) * sizeof *explained);
    lsim_time_node *ends = malloc((g->n ? g->n : 1) * sizeof *ends);
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
