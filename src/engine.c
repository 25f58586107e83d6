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
#include "lumosim/job.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct lsim_engine {
    const lsim_graph *g;
    lsim_ns *start, *end;
    int64_t *bind_start, *bind_end; /* deciding in-edge (index into in_src), -1 none */
    uint32_t *indeg;
    uint32_t *heap;  /* node ids: the run's heap, or the driver's scratch */
    void *block;     /* the one allocation behind every array of the group; set on its first engine */
    size_t hn;
    uint64_t events;
};

/* Bytes of one engine's arrays, each rounded to a cache line so that no two
 * GPUs' arrays share one. */
static size_t line(size_t b) { return (b + 63) / 64 * 64; }
static size_t engine_bytes(size_t n)
{
    return 4 * line(n * sizeof(lsim_ns)) + 2 * line(n * sizeof(uint32_t));
}

/* One allocation for the per-node arrays of all the engines, through
 * lsim_alloc_big: a job's engines are created together, first written during
 * the run, and freed together. */
int lsim_engines_new(const lsim_graph *const *g, size_t n, lsim_engine **out, lsim_err *err)
{
    int rc = 0;
    size_t total = 0;
    char *block = NULL;
    for (size_t i = 0; i < n; i++) out[i] = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t b = engine_bytes(g[i]->n ? g[i]->n : 1);
        if (total > SIZE_MAX - b) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the engine", g[i]->source);
            goto cleanup;
        }
        total += b;
    }
    block = lsim_alloc_big(total);
    if (!block) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the engines (%zu MiB)", n ? g[0]->source : "job",
                          total >> 20);
        goto cleanup;
    }
    char *p = block;
    for (size_t i = 0; i < n; i++) {
        lsim_engine *e = calloc(1, sizeof *e);
        size_t m = g[i]->n ? g[i]->n : 1;
        if (!e) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the engine", g[i]->source);
            goto cleanup;
        }
        if (i == 0) e->block = block;
        out[i] = e;
        e->g = g[i];
        e->start = (lsim_ns *)p, p += line(m * sizeof(lsim_ns));
        e->end = (lsim_ns *)p, p += line(m * sizeof(lsim_ns));
        e->bind_start = (int64_t *)p, p += line(m * sizeof(int64_t));
        e->bind_end = (int64_t *)p, p += line(m * sizeof(int64_t));
        e->indeg = (uint32_t *)p, p += line(m * sizeof(uint32_t));
        e->heap = (uint32_t *)p, p += line(m * sizeof(uint32_t));
    }
    return 0;
cleanup:
    for (size_t i = n; i-- > 0;) {
        free(out[i]);
        out[i] = NULL;
    }
    free(block);
    return rc;
}

int lsim_engine_new(const lsim_graph *g, lsim_engine **out, lsim_err *err)
{
    return lsim_engines_new(&g, 1, out, err);
}

void lsim_engine_free(lsim_engine *e)
{
    if (!e) return;
    free(e->block);
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
 * deterministic). The sums saturate (common.h): graphs within their bounds
 * (graph.h) never reach int64's ends, and a job whose paths do gets a time
 * the metrics refuse rather than one wrapped to the far side of zero. */
static inline void resolve(lsim_engine *e, uint32_t v)
{
    const lsim_graph *g = e->g;
    lsim_ns s = g->release[v];
    lsim_ns endc = INT64_MIN;
    int64_t bs = -1, be = -1;
    for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
        lsim_ns x = lsim_ns_add_sat(e->end[g->in_src[k]], g->in_delay[k]);
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
    lsim_ns en = lsim_ns_add_sat(s, g->dur[v]);
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

/* ------------------------------------------------------------ a whole job */

/* Ready nodes, one stack per GPU (segments of one array: each node is
 * pushed once). Results do not depend on the order nodes are processed in --
 * a node's times are a function of its predecessors' only, and a
 * collective's of its participants' arrivals -- so instead of one heap over
 * the whole job ordered by time (a cache miss per comparison on a large
 * job), each GPU's ready work is run in one burst until it blocks on a
 * collective.
 *
 * Which GPU runs next: the one most recently given work (a stack of GPUs).
 * When a collective completes, its participants are pushed last, so they run
 * next while their data is still in cache: the 8 GPUs of a tensor-parallel
 * group advance through their layers together. Sweeping all GPUs in index
 * order instead ran each GPU for a few nodes (one collective's worth) per
 * sweep, with every other GPU's data between two visits: on a 4,096-GPU job
 * (67 M nodes) that was mostly cache misses. */
typedef struct jstack {
    size_t *n;        /* per GPU: ready nodes, kept in its engine's heap array */
    uint32_t *gpu;    /* GPUs with work (or running), most recent last */
    size_t ngpu;
    uint8_t *queued;  /* per GPU: in gpu[] */
} jstack;

typedef struct jstate {
    const lsim_job *j;
    lsim_engine *const *e;
    lsim_ns *const *waits;
    uint32_t *arrived;
    lsim_ns *max_arrival;
    jstack st;
    uint32_t cur; /* the GPU being drained */
} jstate;

static inline void jpush(jstate *s, uint32_t g, uint32_t v)
{
    s->e[g]->heap[s->st.n[g]++] = v;
    if (!s->st.queued[g]) {
        s->st.queued[g] = 1;
        s->st.gpu[s->st.ngpu++] = g;
    }
}

/* Collective v (instance k) on GPU gi is resolved: it waits for its peers;
 * the last arrival completes it on every participant. */
static void jarrive(jstate *s, uint32_t gi, uint32_t v, int32_t k)
{
    lsim_engine *e = s->e[gi];
    if (e->start[v] > s->max_arrival[k]) s->max_arrival[k] = e->start[v];
    uint64_t p0 = s->j->part_off[k], p1 = s->j->part_off[k + 1];
    if (++s->arrived[k] < p1 - p0) return;
    lsim_ns end = lsim_ns_add_sat(s->max_arrival[k], s->j->transfer[k]);
    for (uint64_t p = p0; p < p1; p++) {
        uint32_t pg = s->j->part_gpu[p], pv = s->j->part_node[p];
        lsim_engine *pe = s->e[pg];
        if (s->waits) s->waits[pg][pv] = lsim_ns_sub_sat(s->max_arrival[k], pe->start[pv]);
        pe->end[pv] = end;
        pe->bind_end[pv] = -1;
        jpush(s, pg, pv);
    }
}

/* v on GPU gi is ready: resolve it; a collective waits for its peers. */
static void jresolve(jstate *s, uint32_t gi, uint32_t v)
{
    resolve(s->e[gi], v);
    int32_t k = s->j->inst_of[gi][v];
    if (k < 0) jpush(s, gi, v);
    else jarrive(s, gi, v, k);
}

static int jhook(void *ctx, uint32_t v, int32_t k)
{
    jstate *s = ctx;
    jarrive(s, s->cur, v, k);
    return 0;
}

/* The hot loop of both coupled drivers (lsim_job_run, the parallel
 * engine's READY rounds). It lives here so that resolve() inlines into it:
 * through the stepping calls, one call per node each way, the parallel
 * engine did the same work 1.3x slower per node. The hook runs only for
 * collectives, a few per cent of the nodes. */
uint64_t lsim_engine_drain(lsim_engine *e, size_t *n, const int32_t *inst, lsim_engine_hook hook, void *ctx, int *rc)
{
    const lsim_graph *g = e->g;
    uint32_t *stack = e->heap;
    uint64_t done = 0;
    while (*n && !*rc) {
        uint32_t u = stack[--*n];
        done++;
        for (uint64_t k = g->out_off[u]; k < g->out_off[u + 1]; k++) {
            uint32_t w = g->out_dst[k];
            if (--e->indeg[w]) continue;
            resolve(e, w);
            if (inst[w] < 0) stack[(*n)++] = w;
            else if (!*rc) *rc = hook(ctx, w, inst[w]);
        }
    }
    e->events += done;
    return done;
}

int lsim_job_run(const lsim_job *j, lsim_engine *const *E, lsim_ns *const *waits, lsim_err *err)
{
    int rc = 0;
    size_t total = 0;
    jstate s = {j, E, waits, calloc(j->ninst ? j->ninst : 1, sizeof(uint32_t)),
                malloc((j->ninst ? j->ninst : 1) * sizeof(lsim_ns)), {NULL, NULL, 0, NULL}, 0};
    s.st.n = calloc(j->ngpus ? j->ngpus : 1, sizeof *s.st.n);
    s.st.gpu = malloc((j->ngpus ? j->ngpus : 1) * sizeof *s.st.gpu);
    s.st.queued = calloc(j->ngpus ? j->ngpus : 1, 1);
    for (size_t i = 0; i < j->ngpus; i++) total += E[i]->g->n;
    if (!s.arrived || !s.max_arrival || !s.st.n || !s.st.gpu || !s.st.queued) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for the job's engine");
        goto cleanup;
    }
    for (size_t k = 0; k < j->ninst; k++) s.max_arrival[k] = INT64_MIN;
    for (uint32_t i = 0; i < j->ngpus; i++) {
        lsim_engine *e = E[i];
        const lsim_graph *g = e->g;
        e->hn = 0;
        e->events = 0;
        if (waits) memset(waits[i], 0, (g->n ? g->n : 1) * sizeof(lsim_ns));
        for (size_t v = 0; v < g->n; v++) e->indeg[v] = (uint32_t)(g->in_off[v + 1] - g->in_off[v]);
    }
    for (uint32_t i = 0; i < j->ngpus; i++)
        for (size_t v = 0; v < E[i]->g->n; v++)
            if (E[i]->indeg[v] == 0) jresolve(&s, i, (uint32_t)v);
    uint64_t done = 0;
    while (s.st.ngpu) {
        /* the GPU on top stays queued while it runs (work it gives itself
         * must not queue it twice); GPUs it completes collectives for are
         * queued above it and run after it blocks */
        size_t at = s.st.ngpu - 1;
        uint32_t gi = s.st.gpu[at];
        int hrc = 0; /* jhook never fails */
        s.cur = gi;
        done += lsim_engine_drain(E[gi], &s.st.n[gi], j->inst_of[gi], jhook, &s, &hrc);
        s.st.queued[gi] = 0;
        s.st.ngpu--;
        /* the GPUs queued while gi ran (a few: one collective's peers) move
         * down one place, in order */
        memmove(&s.st.gpu[at], &s.st.gpu[at + 1], (s.st.ngpu - at) * sizeof *s.st.gpu);
    }
    if (done != total) {
        /* name one collective that never completed */
        for (size_t k = 0; k < j->ninst; k++) {
            uint64_t np = j->part_off[k + 1] - j->part_off[k];
            if (s.arrived[k] && s.arrived[k] < np) {
                uint32_t g0 = j->part_gpu[j->part_off[k]];
                rc = lsim_err_set(err, LSIM_EINTERNAL,
                                  "%s: a collective (instance %zu, %llu of %llu participants arrived) can never complete: "
                                  "the ranks' collective orders do not agree",
                                  E[g0]->g->source, k, (unsigned long long)s.arrived[k], (unsigned long long)np);
                goto cleanup;
            }
        }
        rc = lsim_err_set(err, LSIM_EINTERNAL, "job: %llu of %llu nodes never became ready",
                          (unsigned long long)(total - done), (unsigned long long)total);
    }
cleanup:
    free(s.arrived);
    free(s.max_arrival);
    free(s.st.n);
    free(s.st.gpu);
    free(s.st.queued);
    return rc;
}

/* ------------------------------------------------- stepping from outside */

void lsim_engine_reset(lsim_engine *e)
{
    const lsim_graph *g = e->g;
    e->hn = 0;
    e->events = 0;
    for (size_t v = 0; v < g->n; v++) e->indeg[v] = (uint32_t)(g->in_off[v + 1] - g->in_off[v]);
}


void lsim_engine_resolve(lsim_engine *e, uint32_t v) { resolve(e, v); }

void lsim_engine_set_end(lsim_engine *e, uint32_t v, lsim_ns end)
{
    e->end[v] = end;
    e->bind_end[v] = -1;
}

size_t lsim_engine_release(lsim_engine *e, uint32_t v, uint32_t *ready)
{
    const lsim_graph *g = e->g;
    size_t n = 0;
    e->events++;
    for (uint64_t k = g->out_off[v]; k < g->out_off[v + 1]; k++) {
        uint32_t w = g->out_dst[k];
        if (--e->indeg[w] == 0) ready[n++] = w;
    }
    return n;
}

const lsim_graph *lsim_engine_graph(const lsim_engine *e) { return e->g; }

uint32_t *lsim_engine_scratch(lsim_engine *e) { return e->heap; }
