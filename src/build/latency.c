/* The launch-latency model and the edges it times: latency is learned per
 * runtime API only from launches onto idle streams that waited for nothing
 * else (two medians: from the call's start and from its end), plus the
 * dispatch gap between queued ops; then every launch and stream-order edge
 * gets its delay (observed mode: each its own); pre-window work is released
 * at its observed start in both modes. */
#include "build_internal.h"
#include "lumosim/alloc.h"

typedef struct lat_sample {
    uint32_t api;
    lsim_ns v;
} lat_sample;

static int cmp_lat_sample(const void *x, const void *y)
{
    const lat_sample *a = x, *c = y;
    if (a->api != c->api) return a->api < c->api ? -1 : 1;
    return (a->v > c->v) - (a->v < c->v);
}

/* Medians per API of `s` (sorted in place); APIs with fewer than 3 samples
 * get INT64_MIN (the all-API medians are used for them). */
static int per_api_medians(bld_builder *b, lat_sample *s, size_t n, lsim_ns *all_median, lsim_ns *out_per_api)
{
    lsim_ns *tmp = lsim_malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp) return bld_oom(b);
    for (size_t i = 0; i < n; i++) tmp[i] = s[i].v;
    *all_median = n ? lsim_median_i64(tmp, n) : 5000;
    free(tmp);
    qsort(s, n, sizeof *s, cmp_lat_sample);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j].api == s[i].api) j++;
        for (size_t k = 0; k < b->napi; k++)
            if (b->api_ids[k] == s[i].api) out_per_api[k] = j - i >= 3 ? s[i + (j - i) / 2].v : INT64_MIN;
        i = j;
    }
    return 0;
}

/* Launch latency, learned only where it is one: the stream was idle when the
 * call began and the op waited for nothing on another stream. Two medians per
 * API: from the call's start and from its end; a kernel is modelled to start
 * no earlier than either (a long call, e.g. a lazy module load, launches at
 * its end; a short one some microseconds after its start). */
int bld_learn_latency(bld_builder *b)
{
    lsim_graph *g = b->g;
    int rc = 0;
    size_t n = 0;
    lsim_ns *xready = lsim_malloc((g->n ? g->n : 1) * sizeof *xready);
    lat_sample *ls = lsim_malloc((g->n ? g->n : 1) * sizeof *ls);
    lat_sample *le = lsim_malloc((g->n ? g->n : 1) * sizeof *le);
    if (!xready || !ls || !le) {
        rc = bld_oom(b);
        goto cleanup;
    }
    for (size_t v = 0; v < g->n; v++) xready[v] = INT64_MIN;
    for (size_t k = 0; k < b->nedges; k++) {
        const lsim_edge *e = &b->edges[k];
        if ((e->cls & 0x7f) == LSIM_E_EVENT && g->obs_end[e->src] > xready[e->dst]) xready[e->dst] = g->obs_end[e->src];
    }
    for (uint32_t p = 0; p < g->nprocs; p++) {
        for (uint32_t i = 0; i < b->stream_len[p]; i++) {
            uint32_t v = b->stream_nodes[p][i];
            uint32_t r = b->launch_of[v];
            if (r == BLD_NONE) continue;
            if (xready[v] > g->obs_start[r]) continue;
            /* A graph launch's latency is that of its first op; the others
             * wait for the graph's own ops (hidden.c, bld_graph_edges), and
             * sampling them, as if each were launched alone, took a graph's
             * internal dispatch for launch latency. */
            if ((g->flags[v] & LSIM_NF_GRAPH) && b->graph_head[r] != v) continue;
            if (i > 0) {
                uint32_t prev = b->stream_nodes[p][i - 1];
                if (b->launch_of[prev] == r) continue; /* later op of the same launch */
                if (g->obs_end[prev] > g->obs_start[r]) continue; /* stream busy: queueing */
            }
            ls[n] = (lat_sample){g->name[r], g->obs_start[v] - g->obs_start[r]};
            le[n] = (lat_sample){g->name[r], g->obs_start[v] - g->obs_end[r]};
            n++;
        }
    }
    g->launch_samples = n;
    /* the distinct APIs */
    qsort(ls, n, sizeof *ls, cmp_lat_sample);
    size_t napi = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || ls[i].api != ls[i - 1].api) napi++;
    b->api_ids = lsim_malloc((napi ? napi : 1) * sizeof *b->api_ids);
    b->api_lat = lsim_malloc((napi ? napi : 1) * sizeof *b->api_lat);
    b->api_lat_end = lsim_malloc((napi ? napi : 1) * sizeof *b->api_lat_end);
    if (!b->api_ids || !b->api_lat || !b->api_lat_end) {
        rc = bld_oom(b);
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++)
        if (i == 0 || ls[i].api != ls[i - 1].api) b->api_ids[b->napi++] = ls[i].api;
    if ((rc = per_api_medians(b, ls, n, &b->lat_default, b->api_lat))) goto cleanup;
    if ((rc = per_api_medians(b, le, n, &b->lat_default_end, b->api_lat_end))) goto cleanup;
    if (!n) {
        b->lat_default = 5000;
        b->lat_default_end = 0;
    }
    if (n && b->lat_default < 0) {
        /* GPU work that starts, in the median, before the launch that issued
         * it: time runs backwards (every ts negated) or the CPU and GPU
         * clocks disagree; said as such instead of as an impossible latency
         * by the bounds check (issue 40) */
        rc = lsim_err_set(b->err, LSIM_ETRACE,
                          "%s: the GPU work starts %lld ns before the launches that issue it (median of %zu launches): "
                          "the trace's time runs backwards or its CPU and GPU clocks disagree",
                          b->t->path, (long long)-b->lat_default, n);
        goto cleanup;
    }
    g->launch_latency_ns = b->lat_default;
cleanup:
    free(xready);
    free(ls);
    free(le);
    return rc;
}

/* Modelled delay of a launch edge from the end of call node r. */
lsim_ns bld_model_launch_delay(const bld_builder *b, uint32_t r)
{
    const lsim_graph *g = b->g;
    lsim_ns ls = b->lat_default, le = b->lat_default_end;
    int learned = 0;
    for (size_t i = 0; i < b->napi; i++)
        if (b->api_ids[i] == g->name[r]) {
            if (b->api_lat[i] != INT64_MIN) {
                ls = b->api_lat[i];
                le = b->api_lat_end[i];
                learned = 1;
            }
            break;
        }
    /* A graph launch submits its first kernels while the call is still
     * running: without samples of its own, borrowing the kernel-launch floor
     * from the call's end would hold them back. */
    if (!learned && strstr(lsim_strtab_get(g->strings, g->name[r]), "GraphLaunch")) return ls - (g->obs_end[r] - g->obs_start[r]);
    lsim_ns from_start = ls - (g->obs_end[r] - g->obs_start[r]);
    return from_start > le ? from_start : le;
}

/* Launch and stream-order edges. Launch delay is relative to the end of the
 * call's node; latency is measured from the call's start. */
/* The gap a stream leaves between two ops when the second was already
 * queued (its launch predicted it ready before the first ended): the GPU's
 * own dispatch overhead, about a microsecond, which adds up over thousands
 * of back-to-back kernels. Median over such pairs with a non-negative gap
 * below 20 us. */
static int learn_queued_gap(bld_builder *b, lsim_ns *out)
{
    lsim_graph *g = b->g;
    size_t n = 0;
    lsim_ns *gaps = lsim_malloc((g->n ? g->n : 1) * sizeof *gaps);
    if (!gaps) return bld_oom(b);
    for (uint32_t p = 0; p < g->nprocs; p++) {
        for (uint32_t i = 1; i < b->stream_len[p]; i++) {
            uint32_t v = b->stream_nodes[p][i], prev = b->stream_nodes[p][i - 1];
            uint32_t r = b->launch_of[v];
            if (r == BLD_NONE || r == b->launch_of[prev] || (g->flags[v] & LSIM_NF_GRAPH)) continue;
            if (g->obs_end[r] + bld_model_launch_delay(b, r) >= g->obs_end[prev]) continue; /* not queued */
            lsim_ns gap = g->obs_start[v] - g->obs_end[prev];
            if (gap >= 0 && gap < 20000) gaps[n++] = gap;
        }
    }
    *out = n >= 8 ? lsim_median_i64(gaps, n) : 0;
    free(gaps);
    return 0;
}

/* Are u and v ops of one graph launch? Their order is the graph's
 * (bld_graph_edges), not the stream's. */
static int same_graph_launch(const bld_builder *b, uint32_t u, uint32_t v)
{
    return (b->g->flags[u] & b->g->flags[v] & LSIM_NF_GRAPH) && b->launch_of[u] == b->launch_of[v];
}

int bld_launch_and_stream_edges(bld_builder *b)
{
    lsim_graph *g = b->g;
    int rc;
    int observed = b->o->latency == LSIM_LAT_OBSERVED;
    lsim_ns qgap = 0;
    if (!observed && (rc = learn_queued_gap(b, &qgap))) return rc;
    g->queued_gap_ns = qgap;
    for (uint32_t p = 0; p < g->nprocs; p++) {
        uint32_t front = BLD_NONE; /* the op that ended last so far on this stream */
        for (uint32_t i = 0; i < b->stream_len[p]; i++) {
            uint32_t v = b->stream_nodes[p][i];
            uint32_t r = b->launch_of[v];
            /* After ops that overlapped (CUDA-graph branches), the next op
             * that starts after all of them waits for the one that ended
             * last, not only for its immediate predecessor. */
            if (i > 1 && front != b->stream_nodes[p][i - 1] && !same_graph_launch(b, front, v) &&
                g->obs_start[v] >= g->obs_end[front] - b->o->event_tol_ns) {
                lsim_ns gap = g->obs_start[v] - g->obs_end[front];
                if ((rc = bld_add_edge(b, front, v, LSIM_E_STREAM, observed ? (gap < 0 ? gap : 0) : (gap < 0 ? 0 : qgap))))
                    return rc;
            }
            if (front == BLD_NONE || g->obs_end[v] > g->obs_end[front]) front = v;
            if (r != BLD_NONE) {
                lsim_ns d = observed ? g->obs_start[v] - g->obs_end[r]
                                     : bld_model_launch_delay(b, r);
                if ((rc = bld_add_edge(b, r, v, LSIM_E_LAUNCH, d))) return rc;
                g->iter[v] = g->iter[r];
            } else {
                /* Pre-window work (no launch call in the trace): the GPU's
                 * initial state, which nothing in the window predicts, so
                 * in both modes it is released at its observed start -- the
                 * one observed start a replay reads (counted: the report's
                 * prewindow_released). Its stream order stays below. */
                g->release[v] = g->obs_start[v];
            }
            if (i > 0 && !same_graph_launch(b, b->stream_nodes[p][i - 1], v)) {
                uint32_t prev = b->stream_nodes[p][i - 1];
                lsim_ns gap = g->obs_start[v] - g->obs_end[prev];
                /* Observed mode keeps the observed overlap. The model does not
                 * read GPU start times: ops that ran concurrently on one stream
                 * (CUDA-graph branches) may start together with their
                 * predecessor; an overlap within the timestamp precision is
                 * no overlap; otherwise the queued-op gap. */
                lsim_ns d = observed ? (gap < 0 ? gap : 0)
                                     : gap < -b->o->event_tol_ns ? -(g->obs_end[prev] - g->obs_start[prev])
                                     : gap < 0 ? 0 : qgap;
                if ((rc = bld_add_edge(b, prev, v, LSIM_E_STREAM, d))) return rc;
            }
        }
    }
    /* the order inside each graph launch, in place of the stream edges
     * skipped above */
    return bld_graph_edges(b);
}
