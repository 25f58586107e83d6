/* The node model, written once for the three schedulers (private header).
 *
 * The serial engine (lsim_engine_run), the coupled job run (lsim_job_run,
 * both in src/engine.c) and the conservative parallel engine (mpi/pdes.c)
 * simulate the same model (graph.h, job.h):
 *
 *   start(v) = max(release(v), max over start-edges u->v of end(u) + delay)
 *   end(v)   = max(start(v) + dur(v), max over end-edges u->v of end(u) + delay)
 *   a collective ends, on every participant, at its last arrival + transfer
 *   (a broadcast's or reduce's root by its own rule: job.h).
 *
 * They differ only in the order they visit ready nodes and in where a
 * collective's arrivals come from. Everything they share is here: the
 * engine's per-node state, resolve, readiness counting, the ready heap
 * ordered by (start, node id), collective completion, the work queue of
 * GPUs and the drain loop.
 *
 * Why a header of static inline functions and not calls into engine.c:
 * these run once per node-event. Through one call per node each way the
 * parallel engine did the same work 1.3x slower per node (ROSS's authors
 * measured the same for indirect model calls). The drain's hook is a
 * function pointer only in its signature: every caller passes a static
 * function of its own translation unit, so once the drain is inlined the
 * call is direct. Nothing here allocates.
 *
 * Included by src/engine.c, src/job.c and mpi/pdes.c only. */
#ifndef LSIM_SCHED_INLINE_H
#define LSIM_SCHED_INLINE_H

#include "lumosim/engine.h"
#include "lumosim/job.h"

#include <limits.h>
#include <string.h>

/* One GPU's simulation state. All per-node arrays are sized from the graph
 * by lsim_engines_new; the run only writes them. */
struct lsim_engine {
    const lsim_graph *g;
    lsim_ns *start, *end;
    int64_t *bind_start, *bind_end; /* deciding in-edge (index into in_src), -1 none; NULL: not kept */
    uint32_t *indeg;
    uint32_t *heap;  /* node ids: the run's heap, or the driver's scratch */
    void *block;     /* the one allocation behind every array of the group; set on its first engine */
    size_t hn;
    uint64_t events;
};

/* ------------------------------------------------------------ one node */

/* SM contention (graph.h, LSIM_EDGE_SM): v, ready at *s, waits for the SMs
 * that the kernels of its SM edges hold. CUDA hands a kernel's thread
 * blocks to SMs as resources free up, and a kernel's remaining blocks go
 * before those of kernels queued after it (CUDA C Programming Guide,
 * "Hardware Implementation": as thread blocks terminate, new blocks are
 * launched on the vacated multiprocessors): so while a kernel u that fills
 * every SM still has blocks to hand out, no block of v can start, and v's
 * first block starts when u's last wave begins, end(u) + delay (delay =
 * -u's last wave, from its waves; the build decided that a block of v does
 * not fit beside a full SM of u's). Holding v can put it into another
 * kernel's first waves, so the edges are tried until none holds it
 * (each can move s once: s only grows, and an edge that moved it no longer
 * applies). The edges' sources are v's predecessors, so start(v) stays a
 * function of its predecessors' times and the three schedulers agree
 * whatever order they visit nodes in; but v may start before its source
 * (it was ready before the source started), earlier than the edge's delay
 * says, so the parallel engine's time windows refuse SM edges (pdes.c). */
static inline void sched_sm_hold(const lsim_engine *e, uint32_t v, lsim_ns *s, int64_t *bs)
{
    const lsim_graph *g = e->g;
    for (int moved = 1; moved;) {
        moved = 0;
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
            if (!(g->in_class[k] & LSIM_EDGE_SM)) continue;
            uint32_t u = g->in_src[k];
            lsim_ns lw = lsim_ns_add_sat(e->end[u], g->in_delay[k]);
            if (e->start[u] <= *s && *s < lw) {
                *s = lw;
                *bs = (int64_t)k;
                moved = 1;
            }
        }
    }
}

/* All predecessors of v are done: fix its start and end, and remember which
 * in-edge decided each (the first one reaching the maximum, so the choice is
 * deterministic). The sums saturate (common.h): graphs within their bounds
 * (graph.h) never reach int64's ends, and a job whose paths do gets a time
 * the metrics refuse rather than one wrapped to the far side of zero. */
static inline void sched_resolve(lsim_engine *e, uint32_t v)
{
    const lsim_graph *g = e->g;
    lsim_ns s = g->release[v];
    lsim_ns endc = INT64_MIN;
    int64_t bs = -1, be = -1;
    int sm = 0;
    for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
        lsim_ns x = lsim_ns_add_sat(e->end[g->in_src[k]], g->in_delay[k]);
        if (g->in_class[k] & (LSIM_EDGE_END | LSIM_EDGE_SM)) {
            if (g->in_class[k] & LSIM_EDGE_SM) sm = 1;
            else if (x > endc) {
                endc = x;
                be = (int64_t)k;
            }
        } else if (x > s || (x == s && bs < 0)) {
            s = x; /* an edge explains a start it ties with better than a release */
            bs = (int64_t)k;
        }
    }
    if (s == INT64_MIN) s = g->t0;
    if (sm) sched_sm_hold(e, v, &s, &bs);
    lsim_ns en = lsim_ns_add_sat(s, g->dur[v]);
    if (endc >= en) en = endc; /* a blocking call that returns with its GPU work waited for it */
    else be = -1;
    e->start[v] = s;
    e->end[v] = en;
    if (e->bind_start) { /* NULL: not kept (lsim_engines_new_ex) */
        e->bind_start[v] = bs;
        e->bind_end[v] = be;
    }
}

/* Every node waits for all its predecessors again; nothing has run. */
static inline void sched_reset(lsim_engine *e)
{
    const lsim_graph *g = e->g;
    e->hn = 0;
    e->events = 0;
    for (size_t v = 0; v < g->n; v++) e->indeg[v] = (uint32_t)(g->in_off[v + 1] - g->in_off[v]);
}

/* v is done: its successors that became ready go to ready[] (room for v's
 * out-degree); their number is returned. */
static inline size_t sched_release(lsim_engine *e, uint32_t v, uint32_t *ready)
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

/* ------------------------------------------- the ready heap (start, id) */

/* Keys are unique (the node id breaks ties), so the pop order, and with it
 * a time-windowed run, is deterministic. S: the GPU's start array. */
static inline int sched_before(const lsim_ns *S, uint32_t a, uint32_t b)
{
    return S[a] < S[b] || (S[a] == S[b] && a < b);
}

static inline void sched_heap_push(uint32_t *H, size_t *hn, const lsim_ns *S, uint32_t v)
{
    size_t i = (*hn)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!sched_before(S, v, H[p])) break;
        H[i] = H[p];
        i = p;
    }
    H[i] = v;
}

static inline uint32_t sched_heap_pop(uint32_t *H, size_t *hn, const lsim_ns *S)
{
    uint32_t top = H[0];
    uint32_t last = H[--*hn];
    size_t i = 0, n = *hn;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && sched_before(S, H[c + 1], H[c])) c++;
        if (!sched_before(S, H[c], last)) break;
        H[i] = H[c];
        i = c;
    }
    if (n) H[i] = last;
    return top;
}

/* ------------------------------------------------------- collectives */

/* Instance k receives an arrival at t: 1 when it was the last one (the
 * instance completes at sched_coll_end), else 0. */
static inline int sched_coll_arrive(const lsim_job *j, uint32_t *arrived, lsim_ns *max_arrival, size_t k, lsim_ns t)
{
    if (t > max_arrival[k]) max_arrival[k] = t;
    return ++arrived[k] == j->part_off[k + 1] - j->part_off[k];
}

/* The end of a completed instance on every participant: the last arrival
 * plus the instance's transfer, saturating like resolve. */
static inline lsim_ns sched_coll_end(const lsim_job *j, const lsim_ns *max_arrival, size_t k)
{
    return lsim_ns_add_sat(max_arrival[k], j->transfer[k]);
}

/* What an arrival makes known (sched_coll_arrive_rooted): the root's end,
 * the other participants' end (job.h, rooted collectives). */
enum { SCHED_ROOT_DONE = 1, SCHED_OTHERS_DONE = 2 };

/* Rooted arrivals: per instance, the arrivals of the non-roots (a reduce's
 * non-roots wait for those only). One per driver, beside arrived and
 * max_arrival. */
typedef struct sched_rooted {
    uint32_t *arrived_x;
    lsim_ns *max_x;
} sched_rooted;

/* Is participant (gpu, v) instance k's root? Only a BCAST or REDUCE
 * instance has one. */
static inline int sched_coll_is_root(const lsim_job *j, size_t k, uint32_t gpu, uint32_t v)
{
    uint8_t r = j->rule[k];
    return (r == LSIM_JOB_BCAST || r == LSIM_JOB_REDUCE) && j->part_gpu[j->root[k]] == gpu && j->part_node[j->root[k]] == v;
}

/* Instance k receives an arrival at t, from its root or not: which ends
 * it makes known (SCHED_*_DONE bits). All-wait instances: both, at the
 * last arrival. A broadcast's root: its own end at once; the others at
 * the last arrival. A reduce's non-roots: at the last non-root arrival;
 * its root at the last arrival. Why bits and not one completion: the two
 * sides of a rooted instance become known at different arrivals. */
static inline unsigned sched_coll_arrive_rooted(const lsim_job *j, uint32_t *arrived, lsim_ns *max_arrival,
                                                sched_rooted *x, size_t k, int is_root, lsim_ns t)
{
    uint64_t n = j->part_off[k + 1] - j->part_off[k];
    int last = sched_coll_arrive(j, arrived, max_arrival, k, t);
    switch (j->rule[k]) {
    case LSIM_JOB_BCAST: return (is_root ? SCHED_ROOT_DONE : 0u) | (last ? SCHED_OTHERS_DONE : 0u);
    case LSIM_JOB_REDUCE: {
        unsigned d = last ? SCHED_ROOT_DONE : 0u;
        if (!is_root) {
            if (t > x->max_x[k]) x->max_x[k] = t;
            if (++x->arrived_x[k] == n - 1) d |= SCHED_OTHERS_DONE;
        }
        return d;
    }
    default: return last ? SCHED_ROOT_DONE | SCHED_OTHERS_DONE : 0u;
    }
}

/* The arrival participant (root or not) of a completed side of instance k
 * waited for: a broadcast's root its own start (own_start), a reduce's
 * non-roots the last of theirs, everyone else the last arrival. Its end is
 * that plus the transfer. */
static inline lsim_ns sched_coll_last(const lsim_job *j, const lsim_ns *max_arrival, const sched_rooted *x, size_t k,
                                      int is_root, lsim_ns own_start)
{
    if (j->rule[k] == LSIM_JOB_BCAST && is_root) return own_start;
    if (j->rule[k] == LSIM_JOB_REDUCE && !is_root) return x->max_x[k];
    return max_arrival[k];
}

/* Participant v of a completed instance (last arrival `last`) on engine e
 * ends at `end`; its peers decided that, not an end-edge. waits: the GPU's
 * waiting array, or NULL. */
static inline void sched_coll_finish(lsim_engine *e, uint32_t v, lsim_ns last, lsim_ns end, lsim_ns *waits)
{
    if (waits) waits[v] = lsim_ns_sub_sat(last, e->start[v]);
    e->end[v] = end;
    if (e->bind_end) e->bind_end[v] = -1;
}

/* ----------------------------------------------- the queue of GPUs */

/* GPUs with ready work (or running), most recently given work last; each
 * at most once (queued[]). The driver runs the one on top until it blocks;
 * the GPUs it gives work meanwhile (one collective's peers) are queued above
 * it and run next, while their data is still in cache (a tensor-parallel
 * group advances through its layers together). */
typedef struct sched_wq {
    uint32_t *gpu;
    size_t n;
    uint8_t *queued;
} sched_wq;

static inline void sched_wq_push(sched_wq *q, uint32_t g)
{
    if (!q->queued[g]) {
        q->queued[g] = 1;
        q->gpu[q->n++] = g;
    }
}

/* The GPU at position at (the one that ran) leaves the queue; the GPUs
 * queued while it ran move down one place, in order. */
static inline void sched_wq_remove(sched_wq *q, size_t at)
{
    q->queued[q->gpu[at]] = 0;
    q->n--;
    memmove(&q->gpu[at], &q->gpu[at + 1], (q->n - at) * sizeof *q->gpu);
}

/* ------------------------------------------------------------ drain */

/* Run the *n ready nodes held in e's scratch array (a stack) and every node
 * they make ready, in no time order, until none is left: for drivers whose
 * results do not depend on the order (the job run, the parallel engine's
 * READY rounds). A newly ready node is resolved; one of an instance k
 * (lsim_job_inst(inst, e->g, v) >= 0: inst is the GPU's inst_of, job.h)
 * goes to hook(ctx, v, k) instead, which may
 * push nodes back (scratch[(*n)++] = v) and returns 0 or a failure code;
 * the first failure lands in *rc and stops the drain. The hook runs only
 * for collectives, a few per cent of the nodes. Returns the node-events
 * run. */
static inline uint64_t sched_drain(lsim_engine *e, size_t *n, const int32_t *inst, lsim_engine_hook hook, void *ctx,
                                   int *rc)
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
            sched_resolve(e, w);
            int32_t ki = lsim_job_inst(inst, g, w);
            if (ki < 0) stack[(*n)++] = w;
            else if (!*rc) *rc = hook(ctx, w, ki);
        }
    }
    e->events += done;
    return done;
}

#endif
