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
 * into a small sorted array; ties keep the earlier node). */
static void top_insert(lsim_critical_path *cp, uint32_t v, lsim_ns t)
{
    if (t <= 0) return;
    size_t i = cp->ntop < LSIM_CP_TOP ? cp->ntop++ : LSIM_CP_TOP;
    if (i == LSIM_CP_TOP) {
        if (t <= cp->top_time[LSIM_CP_TOP - 1]) return;
        i = LSIM_CP_TOP - 1;
    }
    while (i > 0 && cp->top_time[i - 1] < t) {
        cp->top[i] = cp->top[i - 1];
        cp->top_time[i] = cp->top_time[i - 1];
        i--;
    }
    cp->top[i] = v;
    cp->top_time[i] = t;
}

int lsim_critical_path_compute(const lsim_graph *g, const lsim_engine *e, lsim_critical_path *out, lsim_err *err)
{
    memset(out, 0, sizeof *out);
    if (g->n == 0) return 0;
    const lsim_ns *S = lsim_engine_start(e), *E = lsim_engine_end(e);
    const int64_t *bs = lsim_engine_bind_start(e), *be = lsim_engine_bind_end(e);
    /* The path ends at the node that ends last among the work that matters:
     * GPU streams and the threads that launch or wait for GPU work. Side
     * threads (the NCCL watchdog polling cudaEventQuery across the whole
     * window) would otherwise make a chain of their own idle gaps "critical". */
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
    lsim_ns wstart = S[0];
    for (size_t v = 0; v < g->n; v++) {
        if (S[v] < wstart) wstart = S[v];
        if (active[g->proc[v]] && (lastv < 0 || E[v] > E[lastv])) lastv = (int64_t)v;
    }
    lsim_free(active);
    if (lastv < 0) /* no GPU work at all: any thread */
        for (size_t v = 0; v < g->n; v++)
            if (lastv < 0 || E[v] > E[lastv]) lastv = (int64_t)v;
    uint32_t last = (uint32_t)lastv;
    /* walk back once to count, then again to fill: no guessing of sizes */
    size_t n = 0;
    for (int64_t v = last, k;; n++) {
        k = be[v] >= 0 ? be[v] : bs[v];
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
        int64_t k = be[v] >= 0 ? be[v] : bs[v];
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
        /* the path always leaves v at its end */
        if (j > 0) {
            int64_t k = out->via[j];
            int cls = g->in_class[k] & LSIM_EDGE_CLASS_MASK;
            uint32_t u = out->nodes[j - 1];
            if (g->in_class[k] & LSIM_EDGE_END) {
                /* v (a blocking call) returned when u ended (+ return delay):
                 * its whole span up to u's end counts as waiting */
                lsim_ns w = E[v] - E[u];
                out->by_cat[LSIM_CP_WAIT] += w;
                out->by_class[cls] += w;
                out->edges_by_class[cls]++;
                continue; /* v's own time is the wait */
            }
            lsim_ns d = S[v] - E[u];
            out->by_cat[edge_cat(cls)] += d;
            out->by_class[cls] += d;
            out->edges_by_class[cls]++;
        }
        lsim_ns own = E[v] - S[v];
        out->by_cat[node_cat(g, v)] += own;
        out->by_kind[g->kind[v]] += own;
        top_insert(out, v, own);
    }
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
