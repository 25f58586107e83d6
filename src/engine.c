/* Discrete-event replay (see engine.h).
 *
 * Each node waits for its predecessors (in-degree count). When the last one
 * finishes, the node's start and end are fixed by the rules in graph.h and a
 * dispatch event keyed (start, id) goes into a binary min-heap. Popping it
 * releases the node's successors. Because every successor starts no earlier
 * than its predecessor's end (delays may be negative only for overlaps that
 * were observed, and then only down to the predecessor's start is relevant for
 * ordering), events leave the heap in time order, the order the conservative
 * parallel engine will need. Keys are unique (id breaks ties), so the result
 * is deterministic. */
#include "lumosim/engine.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct lsim_engine {
    const lsim_graph *g;
    lsim_ns *start, *end;
    int64_t *bind_start, *bind_end; /* deciding in-edge (index into in_src), -1 none */
    uint32_t *indeg;
    uint32_t *heap; /* node ids */
    size_t hn;
    uint64_t events;
};

int lsim_engine_new(const lsim_graph *g, lsim_engine **out, lsim_err *err)
{
    *out = NULL;
    lsim_engine *e = calloc(1, sizeof *e);
    size_t n = g->n ? g->n : 1;
    if (!e) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the engine", g->source);
    e->g = g;
    e->start = malloc(n * sizeof *e->start);
    e->end = malloc(n * sizeof *e->end);
    e->bind_start = malloc(n * sizeof *e->bind_start);
    e->bind_end = malloc(n * sizeof *e->bind_end);
    e->indeg = malloc(n * sizeof *e->indeg);
    e->heap = malloc(n * sizeof *e->heap);
    if (!e->start || !e->end || !e->bind_start || !e->bind_end || !e->indeg || !e->heap) {
        lsim_engine_free(e);
        return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the engine", g->source);
    }
    *out = e;
    return 0;
}

void lsim_engine_free(lsim_engine *e)
{
    if (!e) return;
    free(e->start);
    free(e->end);
    free(e->bind_start);
    free(e->bind_end);
    free(e->indeg);
    free(e->heap);
    free(e);
}

static inline int before(const lsim_engine *e, uint32_t a, uint32_t b)
{
    return e->start[a] < e->start[b] || (e->start[a] == e->start[b] && a < b);
}

static inline void heap_push(lsim_engine *e, uint32_t v)
{
    size_t i = e->hn++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(e, v, e->heap[p])) break;
        e->heap[i] = e->heap[p];
        i = p;
    }
    e->heap[i] = v;
}

static inline uint32_t heap_pop(lsim_engine *e)
{
    uint32_t top = e->heap[0];
    uint32_t last = e->heap[--e->hn];
    size_t i = 0, n = e->hn;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(e, e->heap[c + 1], e->heap[c])) c++;
        if (!before(e, e->heap[c], last)) break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (n) e->heap[i] = last;
    return top;
}

/* All predecessors are done: fix start and end of v, and remember which
 * in-edge decided each (the first one reaching the maximum, so the choice is
 * deterministic). */
static inline void resolve(lsim_engine *e, uint32_t v)
{
    const lsim_graph *g = e->g;
    lsim_ns s = g->release[v];
    lsim_ns endc = INT64_MIN;
    int64_t bs = -1, be = -1;
    for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
        lsim_ns x = e->end[g->in_src[k]] + g->in_delay[k];
        if (g->in_class[k] & LSIM_EDGE_END) {
            if (x > endc) {
                endc = x;
                be = (int64_t)k;
            }
        } else if (x > s || (x == s && bs < 0)) {
            s = x; /* an edge explains a start it ties with better than a release */
            bs = (int64_t)k;
        }
    }
    if (s == INT64_MIN) s = g->t0;
    lsim_ns en = s + g->dur[v];
    if (endc >= en) en = endc; /* a blocking call that returns with its GPU work waited for it */
    else be = -1;
    e->start[v] = s;
    e->end[v] = en;
    e->bind_start[v] = bs;
    e->bind_end[v] = be;
}

int lsim_engine_run(lsim_engine *e, lsim_err *err)
{
    const lsim_graph *g = e->g;
    size_t n = g->n;
    e->hn = 0;
    e->events = 0;
    for (size_t v = 0; v < n; v++) {
        e->indeg[v] = (uint32_t)(g->in_off[v + 1] - g->in_off[v]);
        if (e->indeg[v] == 0) {
            resolve(e, (uint32_t)v);
            heap_push(e, (uint32_t)v);
        }
    }
    while (e->hn) {
        uint32_t u = heap_pop(e);
        e->events++;
        for (uint64_t k = g->out_off[u]; k < g->out_off[u + 1]; k++) {
            uint32_t w = g->out_dst[k];
            if (--e->indeg[w] == 0) {
                resolve(e, w);
                heap_push(e, w);
            }
        }
    }
    if (e->events != n)
        return lsim_err_set(err, LSIM_EINTERNAL, "%s: dependency cycle: %llu of %llu nodes never became ready",
                            g->source, (unsigned long long)(n - e->events), (unsigned long long)n);
    return 0;
}

const lsim_ns *lsim_engine_start(const lsim_engine *e) { return e->start; }
const lsim_ns *lsim_engine_end(const lsim_engine *e) { return e->end; }
const int64_t *lsim_engine_bind_start(const lsim_engine *e) { return e->bind_start; }
const int64_t *lsim_engine_bind_end(const lsim_engine *e) { return e->bind_end; }
uint64_t lsim_engine_events(const lsim_engine *e) { return e->events; }
