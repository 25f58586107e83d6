/* Critical path (see critical.h). */
#include "lumosim/critical.h"

#include "lumosim/alloc.h"

#include <stdlib.h>
#include <string.h>

static const char *CAT_NAMES[LSIM_CP_NCATS] = {"cpu", "cpu_gap", "launch_latency", "gpu_compute",
                                               "communication", "waiting", "other"};

const char *lsim_cp_cat_name(lsim_cp_cat c) { return (unsigned)c < LSIM_CP_NCATS ? CAT_NAMES[c] : "?"; }

void lsim_critical_path_clear(lsim_critical_path *cp)
{
    if (!cp) return;
    lsim_free(cp->nodes);
    lsim_free(cp->via);
    memset(cp, 0, sizeof *cp);
}

static lsim_cp_cat node_cat(const lsim_graph *g, uint32_t v)
{
    switch (g->kind[v]) {
    case LSIM_N_KERNEL:
    case LSIM_N_MEMCPY:
    case LSIM_N_MEMSET: return (g->flags[v] & LSIM_NF_COLL) ? LSIM_CP_COMM : LSIM_CP_GPU_COMPUTE;
    default: return LSIM_CP_CPU;
    }
}

static lsim_cp_cat edge_cat(int cls)
{
    switch (cls) {
    case LSIM_E_CPU_THREAD:
    case LSIM_E_CPU_XTHREAD: return LSIM_CP_CPU_GAP;
    case LSIM_E_LAUNCH: return LSIM_CP_LAUNCH;
    default: return LSIM_CP_WAIT; /* sync return, stream queue gap, events */
    }
}

/* Keep the LSIM_CP_TOP nodes with the most own time on the path (insertion
 * into a small sorted array; ties keep the earlier node). gpus: NULL for a
 * GPU's own path. */
static void top_put(uint32_t *top, uint32_t *gpus, lsim_ns *time, size_t *ntop, uint32_t gpu, uint32_t v, lsim_ns t)
{
    if (t <= 0) return;
    size_t i = *ntop < LSIM_CP_TOP ? (*ntop)++ : LSIM_CP_TOP;
    if (i == LSIM_CP_TOP) {
        if (t <= time[LSIM_CP_TOP - 1]) return;
        i = LSIM_CP_TOP - 1;
    }
    for (; i > 0 && time[i - 1] < t; i--) {
        top[i] = top[i - 1];
        if (gpus) gpus[i] = gpus[i - 1];
        time[i] = time[i - 1];
    }
    top[i] = v;
    if (gpus) gpus[i] = gpu;
    time[i] = t;
}

/* The node a path through g ends on: the one that ends last among GPU
 * streams and the threads that launch or wait for GPU work (side threads
 * such as the NCCL watchdog, polling cudaEventQuery across the whole window,
 * would otherwise make a chain of their own idle gaps "critical"); any
 * thread when there is no GPU work. *wstart: the earliest start. g->n > 0. */
static int path_end(const lsim_graph *g, const lsim_ns *S, const lsim_ns *E, uint32_t *last, lsim_ns *wstart,
                    lsim_err *err)
{
    uint8_t *active = lsim_calloc(g->nprocs ? g->nprocs : 1, 1);
    if (!active) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the critical path", g->source);
    for (size_t v = 0; v < g->n; v++) {
        if (g->procs[g->proc[v]].is_gpu) active[g->proc[v]] = 1;
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
            int cls = g->in_class[k] & LSIM_EDGE_CLASS_MASK;
            if (cls == LSIM_E_LAUNCH) active[g->proc[g->in_src[k]]] = 1;
            if (cls == LSIM_E_SYNC) active[g->proc[v]] = 1;
        }
    }
    int64_t lastv = -1;
    *wstart = S[0];
    for (size_t v = 0; v < g->n; v++) {
        if (S[v] < *wstart) *wstart = S[v];
        if (active[g->proc[v]] && (lastv < 0 || E[v] > E[lastv])) lastv = (int64_t)v;
    }
    lsim_free(active);
    if (lastv < 0)
        for (size_t v = 0; v < g->n; v++)
            if (lastv < 0 || E[v] > E[lastv]) lastv = (int64_t)v;
    *last = (uint32_t)lastv;
    return 0;
}

/* The in-edge that decided node v: a blocking call's end-edge (the path
 * continues at the GPU work it waited for), else its start-edge; -1: its
 * release time (the path starts there). */
static int64_t decided_by(const int64_t *bs, const int64_t *be, int64_t v) { return be[v] >= 0 ? be[v] : bs[v]; }

/* How the path enters node v of g from u by in-edge k (k < 0: v starts it):
 * the edge's stretch (its class cls, booked as category cat) and v's own
 * time on the path (own < 0: none, a blocking call whose span up to u's end
 * (+ return delay) is the edge's wait). */
typedef struct step {
    lsim_ns edge, own;
    int cls;
    lsim_cp_cat cat;
} step;

static step step_into(const lsim_graph *g, const lsim_ns *S, const lsim_ns *E, uint32_t u, uint32_t v, int64_t k)
{
    step st = {0, E[v] - S[v], -1, LSIM_CP_OTHER};
    if (k < 0) return st;
    st.cls = g->in_class[k] & LSIM_EDGE_CLASS_MASK;
    if (g->in_class[k] & LSIM_EDGE_END) {
        st.edge = E[v] - E[u];
        st.cat = LSIM_CP_WAIT;
        st.own = -1;
    } else {
        st.edge = S[v] - E[u];
        st.cat = edge_cat(st.cls);
    }
    return st;
}

int lsim_critical_path_compute(const lsim_graph *g, const lsim_engine *e, lsim_critical_path *out, lsim_err *err)
{
    memset(out, 0, sizeof *out);
    if (g->n == 0) return 0;
    const lsim_ns *S = lsim_engine_start(e), *E = lsim_engine_end(e);
    const int64_t *bs = lsim_engine_bind_start(e), *be = lsim_engine_bind_end(e);
    uint32_t last;
    lsim_ns wstart;
    int rc = path_end(g, S, E, &last, &wstart, err);
    if (rc) return rc;
    /* walk back once to count, then again to fill: no guessing of sizes */
    size_t n = 0;
    for (int64_t v = last, k;; n++) {
        k = decided_by(bs, be, v);
        if (k < 0) break;
        v = g->in_src[k];
        if (n > g->n) return lsim_err_set(err, LSIM_EINTERNAL, "%s: critical path does not terminate", g->source);
    }
    n++;
    out->nodes = lsim_malloc(n * sizeof *out->nodes);
    out->via = lsim_malloc(n * sizeof *out->via);
    if (!out->nodes || !out->via) {
        lsim_critical_path_clear(out);
        return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the critical path", g->source);
    }
    out->n = n;
    size_t i = n;
    for (int64_t v = last;;) {
        int64_t k = decided_by(bs, be, v);
        out->nodes[--i] = (uint32_t)v;
        out->via[i] = k;
        if (k < 0) break;
        v = g->in_src[k];
    }
    out->via[0] = -1;
    uint32_t first = out->nodes[0];
    out->start = wstart;
    out->end = E[last];
    out->length = out->end - out->start;
    /* attribution: the stretch before the first node is "other"; each node
     * contributes the part of its span that the path runs through, each edge
     * the time between its source's end and the next stretch. */
    out->by_cat[LSIM_CP_OTHER] += S[first] - wstart;
    for (size_t j = 0; j < n; j++) {
        uint32_t v = out->nodes[j];
        step st = step_into(g, S, E, j ? out->nodes[j - 1] : v, v, out->via[j]);
        if (st.cls >= 0) {
            out->by_cat[st.cat] += st.edge;
            out->by_class[st.cls] += st.edge;
            out->edges_by_class[st.cls]++;
        }
        if (st.own < 0) continue;
        out->by_cat[node_cat(g, v)] += st.own;
        out->by_kind[g->kind[v]] += st.own;
        top_put(out->top, NULL, out->top_time, &out->ntop, 0, v, st.own);
    }
    return 0;
}

/* ------------------------------------------------------- the job's path */

void lsim_job_path_clear(lsim_job_path *p)
{
    if (!p) return;
    lsim_free(p->gpu);
    lsim_free(p->node);
    lsim_free(p->via);
    lsim_free(p->at);
    lsim_free(p->by_gpu);
    memset(p, 0, sizeof *p);
}

/* Participant index of instance k that decided when participant self ended:
 * the latest arrival among those self waits for (job.h's rules); self
 * itself when it arrived last (ties stay on self, else the first). */
static uint64_t last_arrival(const lsim_job *j, uint64_t k, uint64_t self, const lsim_cp_times *t)
{
    int rule = j->rule ? j->rule[k] : LSIM_JOB_ALL;
    int root = rule == LSIM_JOB_BCAST || rule == LSIM_JOB_REDUCE;
    if (root && rule == LSIM_JOB_BCAST && self == j->root[k]) return self; /* waits for nobody */
    int skip_root = root && rule == LSIM_JOB_REDUCE && self != j->root[k];
    uint64_t best = self;
    lsim_ns bt = t[j->part_gpu[self]].start[j->part_node[self]];
    for (uint64_t p = j->part_off[k]; p < j->part_off[k + 1]; p++) {
        if (skip_root && p == j->root[k]) continue;
        lsim_ns tp = t[j->part_gpu[p]].start[j->part_node[p]];
        if (tp > bt) {
            bt = tp;
            best = p;
        }
    }
    return best;
}

/* The participant index of node v on GPU gi in its instance k. */
static uint64_t participant(const lsim_job *j, uint64_t k, uint32_t gi, uint32_t v)
{
    uint64_t p = j->part_off[k];
    while (p + 1 < j->part_off[k + 1] && !(j->part_gpu[p] == gi && j->part_node[p] == v)) p++;
    return p;
}

typedef struct jwalk {
    uint32_t *gpu, *node;
    int64_t *via;
    size_t n, cap;
} jwalk;

/* Append entry (gi, v), entered by an edge not known yet (-1). */
static int jwalk_push(jwalk *w, uint32_t gi, uint32_t v)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 256;
        uint32_t *g = lsim_realloc(w->gpu, cap * sizeof *g);
        if (g) w->gpu = g;
        uint32_t *nd = g ? lsim_realloc(w->node, cap * sizeof *nd) : NULL;
        if (nd) w->node = nd;
        int64_t *vi = nd ? lsim_realloc(w->via, cap * sizeof *vi) : NULL;
        if (!vi) return LSIM_ENOMEM;
        w->via = vi;
        w->cap = cap;
    }
    w->gpu[w->n] = gi;
    w->node[w->n] = v;
    w->via[w->n++] = -1;
    return 0;
}

/* Walk back from (gi, v) to the path's first node, entries last to first:
 * via[i] is how entry i was entered (filled when its predecessor is found). */
static int jwalk_back(const lsim_job *j, lsim_graph *const *graphs, const lsim_cp_times *t, uint32_t gi, uint32_t v,
                      jwalk *w, lsim_err *err)
{
    uint64_t bound = 0;
    for (size_t i = 0; i < j->ngpus; i++) bound += 2 * graphs[i]->n + 2;
    int rc = jwalk_push(w, gi, v);
    for (int crossed = 0; !rc;) {
        if (w->n > bound) return lsim_err_set(err, LSIM_EINTERNAL, "the job's critical path does not terminate");
        int32_t k = j->inst_of ? lsim_job_inst(j->inst_of[gi], graphs[gi], v) : -1;
        if (k >= 0 && !crossed) {
            uint64_t self = participant(j, (uint64_t)k, gi, v);
            uint64_t p = last_arrival(j, (uint64_t)k, self, t);
            if (p != self) { /* the path continues on the GPU that arrived last */
                w->via[w->n - 1] = LSIM_CP_VIA_PEER;
                gi = j->part_gpu[p];
                v = j->part_node[p];
                rc = jwalk_push(w, gi, v);
                crossed = 1; /* left at its start: its own start-edge next */
                continue;
            }
        }
        int64_t e = crossed ? t[gi].bind_start[v] : decided_by(t[gi].bind_start, t[gi].bind_end, v);
        crossed = 0;
        if (e < 0) break;
        w->via[w->n - 1] = e;
        v = graphs[gi]->in_src[e];
        rc = jwalk_push(w, gi, v);
    }
    return rc ? lsim_err_set(err, LSIM_ENOMEM, "out of memory for the job's critical path") : 0;
}

int lsim_job_path_compute(const lsim_job *j, lsim_graph *const *graphs, lsim_engine *const *engines,
                          const uint32_t *gpu_ids, size_t ngpus_out, lsim_graph *const *names, lsim_job_path *out,
                          lsim_err *err)
{
    memset(out, 0, sizeof *out);
    lsim_cp_times *t = lsim_malloc((j->ngpus ? j->ngpus : 1) * sizeof *t);
    if (!t) return lsim_err_set(err, LSIM_ENOMEM, "out of memory for the job's critical path");
    for (size_t i = 0; i < j->ngpus; i++)
        t[i] = (lsim_cp_times){lsim_engine_start(engines[i]), lsim_engine_end(engines[i]),
                               lsim_engine_bind_start(engines[i]), lsim_engine_bind_end(engines[i])};
    int rc = lsim_job_path_compute_times(j, graphs, t, gpu_ids, ngpus_out, names, out, err);
    lsim_free(t);
    return rc;
}

int lsim_job_path_compute_times(const lsim_job *j, lsim_graph *const *graphs, const lsim_cp_times *t,
                                const uint32_t *gpu_ids, size_t ngpus_out, lsim_graph *const *names,
                                lsim_job_path *out, lsim_err *err)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < j->ngpus; i++)
        if (graphs[i]->n && (!t[i].start || !t[i].end || !t[i].bind_start || !t[i].bind_end))
            return lsim_err_set(err, LSIM_EARG, "%s: no deciding edges to walk the job's critical path on",
                                lsim_graph_name(graphs[i]));
    jwalk w = {0};
    int rc = 0;
    int64_t lg = -1;
    uint32_t lv = 0;
    lsim_ns start = 0, lend = 0;
    for (size_t i = 0; i < j->ngpus && !rc; i++) {
        if (!graphs[i]->n) continue;
        uint32_t v;
        lsim_ns ws;
        if ((rc = path_end(graphs[i], t[i].start, t[i].end, &v, &ws, err))) break;
        lsim_ns e = t[i].end[v];
        if (lg < 0 || ws < start) start = ws;
        if (lg < 0 || e > lend) {
            lg = (int64_t)i;
            lv = v;
            lend = e;
        }
    }
    if (rc || lg < 0) return rc;
    if ((rc = jwalk_back(j, graphs, t, (uint32_t)lg, lv, &w, err))) goto cleanup;
    size_t n = w.n;
    /* the walk's arrays, first to last, become the path's */
    for (size_t a = 0, b = n - 1; a < b; a++, b--) {
        uint32_t tg = w.gpu[a], tv = w.node[a];
        int64_t ti = w.via[a];
        w.gpu[a] = w.gpu[b], w.node[a] = w.node[b], w.via[a] = w.via[b];
        w.gpu[b] = tg, w.node[b] = tv, w.via[b] = ti;
    }
    out->gpu = w.gpu, out->node = w.node, out->via = w.via;
    w.gpu = w.node = NULL;
    w.via = NULL;
    out->n = n;
    out->at = lsim_malloc(n * sizeof *out->at);
    out->by_gpu = lsim_calloc(ngpus_out ? ngpus_out : 1, sizeof *out->by_gpu);
    if (!out->at || !out->by_gpu) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for the job's critical path");
        goto cleanup;
    }
    out->ngpus = ngpus_out;
    out->graphs = names;
    out->start = start;
    out->end = lend;
    out->length = lend - start;
    for (size_t i = 0; i < n; i++) { /* first to last */
        uint32_t gi = out->gpu[i], v = out->node[i];
        int64_t via = out->via[i];
        int decider = i + 1 < n && out->via[i + 1] == LSIM_CP_VIA_PEER;
        uint32_t go = gpu_ids ? gpu_ids[gi] : gi;
        const lsim_graph *g = graphs[gi];
        const lsim_ns *S = t[gi].start, *E = t[gi].end;
        out->gpu[i] = go; /* in place: later entries read only node[i - 1] */
        out->at[i] = decider ? S[v] : E[v];
        if (i == 0) {
            out->by_cat[LSIM_CP_OTHER] += S[v] - start;
            out->by_gpu[go] += S[v] - start;
        }
        if (via == LSIM_CP_VIA_PEER) { /* from the last arrival to this end */
            lsim_ns dt = E[v] - out->at[i - 1];
            out->by_cat[LSIM_CP_COMM] += dt;
            out->by_gpu[go] += dt;
            out->crossings++;
            top_put(out->top_node, out->top_gpu, out->top_time, &out->ntop, go, v, dt);
            continue;
        }
        step st = step_into(g, S, E, i ? out->node[i - 1] : v, v, via);
        if (st.cls >= 0) {
            out->by_cat[st.cat] += st.edge;
            out->by_gpu[go] += st.edge;
        }
        if (st.own < 0 || decider) continue;
        out->by_cat[node_cat(g, v)] += st.own;
        out->by_gpu[go] += st.own;
        top_put(out->top_node, out->top_gpu, out->top_time, &out->ntop, go, v, st.own);
    }
cleanup:
    lsim_free(w.gpu);
    lsim_free(w.node);
    lsim_free(w.via);
    if (rc) lsim_job_path_clear(out);
    return rc;
}

typedef struct gpu_share {
    lsim_ns t;
    uint32_t gpu;
} gpu_share;

static int cmp_share(const void *a, const void *b)
{
    const gpu_share *x = a, *y = b;
    if (x->t != y->t) return x->t > y->t ? -1 : 1;
    return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

int lsim_job_path_gpu_order(const lsim_job_path *p, uint32_t **order, size_t *n)
{
    *n = 0;
    gpu_share *s = lsim_malloc((p->ngpus ? p->ngpus : 1) * sizeof *s);
    *order = lsim_malloc((p->ngpus ? p->ngpus : 1) * sizeof **order);
    if (!s || !*order) {
        lsim_free(s);
        lsim_free(*order);
        *order = NULL;
        return LSIM_ENOMEM;
    }
    for (size_t i = 0; i < p->ngpus; i++)
        if (p->by_gpu[i] > 0) s[(*n)++] = (gpu_share){p->by_gpu[i], (uint32_t)i};
    qsort(s, *n, sizeof *s, cmp_share);
    for (size_t i = 0; i < *n; i++) (*order)[i] = s[i].gpu;
    lsim_free(s);
    return 0;
}

typedef struct pair {
    uint32_t a, b;
} pair;

static int cmp_pair(const void *x, const void *y)
{
    const pair *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

double lsim_critical_path_recall(const lsim_critical_path *ref, const lsim_critical_path *cp)
{
    if (!ref || ref->n < 2) return 1.0;
    if (!cp || cp->n < 2) return 0.0;
    pair *v = lsim_malloc((cp->n - 1) * sizeof *v);
    if (!v) return -1.0;
    for (size_t i = 1; i < cp->n; i++) v[i - 1] = (pair){cp->nodes[i - 1], cp->nodes[i]};
    qsort(v, cp->n - 1, sizeof *v, cmp_pair);
    size_t hit = 0;
    for (size_t i = 1; i < ref->n; i++) {
        pair key = {ref->nodes[i - 1], ref->nodes[i]};
        if (bsearch(&key, v, cp->n - 1, sizeof *v, cmp_pair)) hit++;
    }
    lsim_free(v);
    return (double)hit / (double)(ref->n - 1);
}
