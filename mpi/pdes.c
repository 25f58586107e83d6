/* The conservative parallel engine: windows bounded by the lookahead, only
 * collective arrivals cross ranks (see include/lumosim/pdes.h). */
#include "lumosim/pdes.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/alloc.h"
#include "lumosim/agree.h"
#include "internal/sched_inline.h" /* the node model, shared with the serial engines */

/* Ready events, one binary heap per local GPU, ordered by (start, node).
 * Within a window the order of processing does not change any result (a
 * node's times depend on its predecessors only), so each GPU's events are
 * processed in one burst: far better locality than one heap over all GPUs.
 * READY rounds have no window end, so they need no order at all: there the
 * heap is a stack, as in the serial job run (lsim_job_run), which saves the
 * O(log n) sift per event (measured: docs/performance.md, "Figures behind
 * design choices"). */
typedef struct pheap {
    uint32_t **node; /* per local GPU: heap of node ids, in its engine's scratch */
    size_t *n;
    const lsim_ns **S; /* each local GPU's start array (stable) */
    int lifo;          /* READY rounds: a stack (see lsim_pdes_run) */
} pheap;

static inline void push(pheap *h, uint32_t l, uint32_t v)
{
    if (h->lifo) h->node[l][h->n[l]++] = v;
    else sched_heap_push(h->node[l], &h->n[l], h->S[l], v);
}

/* (time windows only: READY rounds drain the stack, sched_drain) */
static inline uint32_t pop(pheap *h, uint32_t l) { return sched_heap_pop(h->node[l], &h->n[l], h->S[l]); }

/* Instance k's id in the whole job: what a message names, since the ranks
 * of a distributed match hold different instances (job.h, inst_id). */
static inline uint64_t inst_gid(const lsim_job *j, size_t k) { return j->inst_id ? j->inst_id[k] : k; }

/* The instance this rank holds under job id id, or -1 (none of its GPUs
 * takes part: the message is not for it). inst_id ascends: a binary search. */
static int64_t inst_local(const lsim_job *j, uint64_t id)
{
    if (!j->inst_id) return id < j->ninst ? (int64_t)id : -1;
    size_t lo = 0, hi = j->ninst;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (j->inst_id[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < j->ninst && j->inst_id[lo] == id ? (int64_t)lo : -1;
}

typedef struct pstate {
    const lsim_job *j;
    lsim_engine *const *e;
    lsim_ns *const *waits;
    const uint32_t *gid;
    int32_t *local_of;        /* global GPU -> local index or -1 */
    uint32_t *arrived;        /* per instance, all ranks' arrivals known here */
    lsim_ns *max_arrival;
    sched_rooted x;           /* rooted instances: their non-roots' arrivals */
    uint8_t *remote;          /* per instance: has participants on other ranks */
    uint8_t *has_local;       /* per instance: has participants on this rank */
    int64_t *out;             /* outgoing (instance, time) pairs */
    size_t nout, capout;
    lsim_ns lookahead;
    lsim_ns bound;            /* no message of this window arrives before it */
    lsim_err *err;
    int violation;
    uint32_t cur; /* READY rounds: the local GPU being drained */
    pheap h;
    /* local GPUs that may have work in the window, most recently given
     * work last (see the window loop) */
    sched_wq wq;
} pstate;

/* The arrivals the sides `done` of instance k wait for are known (all of
 * them, or a rooted instance's root's or others': job.h): those local
 * participants end. */
static void complete(pstate *s, size_t k, unsigned done)
{
    const lsim_job *j = s->j;
    int rooted = j->rule[k] == LSIM_JOB_BCAST || j->rule[k] == LSIM_JOB_REDUCE;
    for (uint64_t p = j->part_off[k]; p < j->part_off[k + 1]; p++) {
        int pr = rooted && p == j->root[k];
        if (!(done & (pr ? SCHED_ROOT_DONE : SCHED_OTHERS_DONE))) continue;
        int32_t l = s->local_of[j->part_gpu[p]];
        if (l < 0) continue;
        uint32_t v = j->part_node[p];
        lsim_ns last = sched_coll_last(j, s->max_arrival, &s->x, k, pr, s->e[l]->start[v]);
        sched_coll_finish(s->e[l], v, last, lsim_ns_add_sat(last, j->transfer[k]), s->waits ? s->waits[l] : NULL);
        push(&s->h, (uint32_t)l, v);
        sched_wq_push(&s->wq, (uint32_t)l);
    }
}

static void arrive(pstate *s, size_t k, lsim_ns t, int is_root)
{
    unsigned done = sched_coll_arrive_rooted(s->j, s->arrived, s->max_arrival, &s->x, k, is_root, t);
    if (done) complete(s, k, done);
}

/* Collective v (instance k) on local GPU l is resolved: it arrives; an
 * instance with participants on other ranks also makes a message. */
static int coll_ready(pstate *s, uint32_t l, uint32_t v, int32_t k)
{
    lsim_engine *e = s->e[l];
    lsim_ns t = e->start[v];
    int is_root = sched_coll_is_root(s->j, (size_t)k, s->gid[l], v);
    if (s->remote[k]) {
        /* a message: its instance must not complete before the window ends */
        if (s->j->transfer[k] < s->lookahead && !s->violation) {
            s->violation = 1;
            lsim_err_set(s->err, LSIM_EINTERNAL,
                         "%s: lookahead violated: collective instance %llu transfers in %lld ns, less than the lookahead "
                         "of %lld ns (it would complete inside a window already simulated)",
                         lsim_engine_graph(e)->source, (unsigned long long)inst_gid(s->j, (size_t)k),
                         (long long)s->j->transfer[k], (long long)s->lookahead);
        }
        if (t < s->bound && !s->violation) {
            s->violation = 1;
            lsim_err_set(s->err, LSIM_EINTERNAL,
                         "%s: lookahead violated: collective instance %llu arrives at %lld ns, before %lld ns, the "
                         "earliest cross-rank arrival this window promised (its window ended %lld ns later)",
                         lsim_engine_graph(e)->source, (unsigned long long)inst_gid(s->j, (size_t)k), (long long)t,
                         (long long)s->bound, (long long)s->lookahead);
        }
        if (s->nout + 2 > s->capout) {
            size_t nc = s->capout ? s->capout * 2 : 256;
            int64_t *no = lsim_realloc(s->out, nc * sizeof *no);
            if (!no) return lsim_err_set(s->err, LSIM_ENOMEM, "out of memory for the parallel engine's arrivals");
            s->out = no;
            s->capout = nc;
        }
        /* a root's arrival is told apart (the low bit): the others of a
         * reduce do not wait for it; the instance by its job id */
        s->out[s->nout++] = (int64_t)(inst_gid(s->j, (size_t)k) << 1 | (uint64_t)(is_root != 0));
        s->out[s->nout++] = t;
    }
    arrive(s, (size_t)k, t, is_root);
    return 0;
}

static int ready(pstate *s, uint32_t l, uint32_t v)
{
    sched_resolve(s->e[l], v);
    int32_t k = lsim_job_inst(s->j->inst_of[s->gid[l]], s->e[l]->g, v);
    if (k >= 0) return coll_ready(s, l, v, k);
    push(&s->h, l, v);
    return 0;
}

/* sched_drain's hook (READY rounds): the GPU being drained is s->cur */
static int drain_hook(void *ctx, uint32_t v, int32_t k)
{
    pstate *s = ctx;
    return coll_ready(s, s->cur, v, k);
}


/* Bounds are kept in [-BIG, BIG]; BIG and beyond mean "never". Times are
 * nanoseconds since the epoch (about 1.7e18), well inside. */
#define BIG (INT64_MAX / 2)
static inline lsim_ns clampb(lsim_ns a) { return a > BIG ? BIG : a < -BIG ? -BIG : a; }
static inline lsim_ns addb(lsim_ns a, lsim_ns b) { return clampb(clampb(a) + clampb(b)); }

/* Push (local GPU << 32 | node) on a growing stack; 0 or -1 (no memory). */
static int push_node(uint64_t **stack, size_t *top, size_t *cap, uint64_t x)
{
    if (*top == *cap) {
        uint64_t *ns = lsim_realloc(*stack, 2 * *cap * sizeof *ns);
        if (!ns) return -1;
        *stack = ns;
        *cap *= 2;
    }
    (*stack)[(*top)++] = x;
    return 0;
}

/* eb[l][v] for every local node: a lower bound of (the arrival time of the
 * next cross-rank collective that v's end can lead to) - end(v), BIG when
 * none can follow. Why: a window may then reach up to the earliest time
 * any rank can still send a message (min over pending nodes of end + eb)
 * plus the lookahead, instead of the earliest pending event plus the
 * lookahead; on a job whose collectives all cross ranks that is one window
 * per wave of collectives, not one per cluster of kernel starts.
 *
 * Computed backwards over the local graphs coupled through the instances
 * whose participants are all on this rank (Kahn's algorithm on the
 * reversed edges; per node b = bound from its start):
 *   b(w) = 0                        w's instance crosses ranks (w is a message)
 *        = transfer + min e(p)      w's instance is local: p its participants
 *        = dur(w) + e(w)            otherwise
 *   e(u) = min over edges u->w of delay + b(w)    start-edge
 *                                   delay + e(w)  end-edge (end(w) >= end(u) + delay)
 * Each is a valid lower bound because start and end are maxima over the
 * same terms (graph.h) and a collective ends at max(arrival) + transfer.
 * An end-edge into a collective is no bound (its end is its peers'), and
 * nodes left on a cycle get -BIG: no bound, the window falls back to the
 * earliest pending event. Allocates eb (caller frees each eb[l]). */
static int path_bounds(const pstate *s, size_t nlocal, lsim_ns **eb)
{
    int rc = 0;
    const lsim_job *j = s->j;
    size_t ni = j->ninst ? j->ninst : 1, cap = 1024, top = 0;
    uint32_t **cnt = lsim_calloc(nlocal ? nlocal : 1, sizeof *cnt);
    uint32_t *icnt = lsim_calloc(ni, sizeof *icnt);
    lsim_ns *imin = lsim_malloc(ni * sizeof *imin);
    uint64_t *stack = lsim_malloc(cap * sizeof *stack);
    if (!cnt || !icnt || !imin || !stack) {
        rc = LSIM_ENOMEM;
        goto cleanup;
    }
    for (size_t k = 0; k < j->ninst; k++) {
        imin[k] = BIG;
        if (!s->remote[k]) icnt[k] = (uint32_t)(j->part_off[k + 1] - j->part_off[k]);
    }
    for (size_t l = 0; l < nlocal; l++) {
        const lsim_graph *g = lsim_engine_graph(s->e[l]);
        eb[l] = lsim_malloc((g->n ? g->n : 1) * sizeof **eb);
        cnt[l] = lsim_malloc((g->n ? g->n : 1) * sizeof **cnt);
        if (!eb[l] || !cnt[l]) {
            rc = LSIM_ENOMEM;
            goto cleanup;
        }
        for (size_t v = 0; v < g->n; v++) {
            eb[l][v] = BIG;
            cnt[l][v] = (uint32_t)(g->out_off[v + 1] - g->out_off[v]);
        }
    }
    /* seed: nodes with no successor (re-scanned so the stack can grow) */
    for (size_t l = 0; l < nlocal; l++) {
        const lsim_graph *g = lsim_engine_graph(s->e[l]);
        for (size_t v = 0; v < g->n; v++)
            if (!cnt[l][v]) {
                if (push_node(&stack, &top, &cap, (uint64_t)l << 32 | v)) {
                    rc = LSIM_ENOMEM;
                    goto cleanup;
                }
            }
    }
    while (top) {
        uint64_t x = stack[--top];
        uint32_t l = (uint32_t)(x >> 32), v = (uint32_t)x;
        /* e(v) is final: the nodes whose b is now known */
        int32_t k = lsim_job_inst(s->j->inst_of[s->gid[l]], s->e[l]->g, v);
        uint32_t first = 0, last = 0, pl = l, pv = v;
        lsim_ns b;
        if (k >= 0 && !s->remote[k]) {
            if (eb[l][v] < imin[k]) imin[k] = eb[l][v];
            if (--icnt[k]) continue;
            first = (uint32_t)j->part_off[k];
            last = (uint32_t)(j->part_off[k + 1] - 1);
            b = addb(j->transfer[k], imin[k]);
        } else {
            b = k >= 0 ? 0 : addb(lsim_engine_graph(s->e[l])->dur[v], eb[l][v]);
        }
        for (uint64_t p = first; p <= last; p++) {
            if (k >= 0 && !s->remote[k]) {
                pl = (uint32_t)s->local_of[j->part_gpu[p]];
                pv = j->part_node[p];
            }
            const lsim_graph *g = lsim_engine_graph(s->e[pl]);
            for (uint64_t q = g->in_off[pv]; q < g->in_off[pv + 1]; q++) {
                uint32_t u = g->in_src[q];
                lsim_ns val = (g->in_class[q] & LSIM_EDGE_END) ? (k >= 0 ? BIG : addb(g->in_delay[q], eb[pl][pv]))
                                                              : addb(g->in_delay[q], b);
                if (val < eb[pl][u]) eb[pl][u] = val;
                if (--cnt[pl][u] == 0) {
                    if (push_node(&stack, &top, &cap, (uint64_t)pl << 32 | u)) {
                        rc = LSIM_ENOMEM;
                        goto cleanup;
                    }
                }
            }
        }
    }
    /* never finalised (a cycle through collectives): no bound */
    for (size_t l = 0; l < nlocal; l++) {
        const lsim_graph *g = lsim_engine_graph(s->e[l]);
        for (size_t v = 0; v < g->n; v++)
            if (cnt[l][v]) eb[l][v] = -BIG;
    }
cleanup:
    for (size_t l = 0; cnt && l < nlocal; l++) lsim_free(cnt[l]);
    lsim_free(cnt);
    lsim_free(icnt);
    lsim_free(imin);
    lsim_free(stack);
    return rc;
}

/* The earliest pending event (first) and, with path bounds, the earliest
 * time a message can still leave this rank without new arrivals (eot): the
 * least end + eb over every pending node (their ends are fixed). */
static void pending_bounds(const pstate *s, size_t nlocal, lsim_ns *const *eb, lsim_ns *first, lsim_ns *eot)
{
    lsim_ns f = INT64_MAX, m = BIG;
    for (size_t l = 0; l < nlocal; l++) {
        if (!s->h.n[l]) continue;
        if (s->h.lifo) /* unordered: the few nodes collectives completed by the last exchange */
            for (size_t i = 0; i < s->h.n[l]; i++) f = s->h.S[l][s->h.node[l][i]] < f ? s->h.S[l][s->h.node[l][i]] : f;
        else if (s->h.S[l][s->h.node[l][0]] < f) f = s->h.S[l][s->h.node[l][0]];
        if (!eb) continue;
        const lsim_ns *end = lsim_engine_end(s->e[l]);
        for (size_t i = 0; i < s->h.n[l]; i++) {
            uint32_t v = s->h.node[l][i];
            lsim_ns b = addb(end[v], eb[l][v]);
            if (b < m) m = b;
        }
    }
    *first = f;
    *eot = m;
}

int lsim_pdes_windows_parse(const char *name, lsim_pdes_windows *mode)
{
    static const char *const names[] = {"ready", "paths", "start"};
    for (int i = 0; i < 3; i++)
        if (name && !strcmp(name, names[i])) {
            *mode = (lsim_pdes_windows)i;
            return 0;
        }
    return -1;
}

const char *lsim_pdes_windows_name(lsim_pdes_windows mode)
{
    return mode == LSIM_PDES_PATHS ? "paths" : mode == LSIM_PDES_START ? "start" : "ready";
}

/* One run of the engine: the state of the rounds and the exchange buffers
 * (pd_* below: set up, agree on the lookahead and the path bounds, run
 * windows until no rank has an event, check every node ran). */
typedef struct prun {
    MPI_Comm comm;
    int me, np;
    const lsim_pdes_opts *opts;
    lsim_pdes_stats *st;
    size_t nlocal, total;   /* local GPUs, their nodes */
    pstate s;
    uint32_t *rbuf;         /* released nodes, the largest out-degree */
    int *counts, *displs;   /* per rank: the allgathers' counts and offsets */
    int64_t *in;            /* arrivals received (instance << 1 | root, time) */
    size_t incap;
    int64_t *gmin;          /* per cross-rank instance: least path bound here */
    int32_t *xi;            /* per instance: index among the cross-rank ones, or -1 */
    lsim_ns **eb;           /* path bounds per local node (path_bounds) */
    int32_t *owner;         /* per GPU: its rank */
    int64_t *rec;           /* per rank: a round's four figures */
    uint32_t *allgid;
    size_t ncross;
    int any_cross, bounds;
    uint64_t done;          /* nodes run here */
} prun;

/* Every buffer the run needs; 1 when some allocation failed here. */
static int pd_alloc(prun *p, const lsim_job *j, lsim_engine *const *e)
{
    pstate *s = &p->s;
    size_t maxdeg = 1, nl = p->nlocal ? p->nlocal : 1, ni = j->ninst ? j->ninst : 1, ng = j->ngpus ? j->ngpus : 1;
    for (size_t l = 0; l < p->nlocal; l++) {
        const lsim_graph *g = lsim_engine_graph(e[l]);
        p->total += g->n;
        for (size_t v = 0; v < g->n; v++)
            if (g->out_off[v + 1] - g->out_off[v] > maxdeg) maxdeg = g->out_off[v + 1] - g->out_off[v];
    }
    p->rbuf = lsim_malloc(maxdeg * sizeof *p->rbuf);
    p->counts = lsim_malloc((size_t)p->np * sizeof *p->counts);
    p->displs = lsim_malloc((size_t)p->np * sizeof *p->displs);
    p->eb = lsim_calloc(nl, sizeof *p->eb);
    s->local_of = lsim_malloc(ng * sizeof *s->local_of);
    s->arrived = lsim_calloc(ni, sizeof *s->arrived);
    s->max_arrival = lsim_malloc(ni * sizeof *s->max_arrival);
    s->x.arrived_x = lsim_calloc(ni, sizeof *s->x.arrived_x);
    s->x.max_x = lsim_malloc(ni * sizeof *s->x.max_x);
    s->remote = lsim_calloc(ni, 1);
    s->has_local = lsim_calloc(ni, 1);
    p->owner = lsim_malloc(ng * sizeof *p->owner);
    p->rec = lsim_malloc((size_t)p->np * 4 * sizeof *p->rec);
    p->allgid = lsim_malloc(ng * sizeof *p->allgid);
    s->h.node = lsim_calloc(nl, sizeof *s->h.node);
    s->h.n = lsim_calloc(nl, sizeof *s->h.n);
    s->h.S = lsim_malloc(nl * sizeof *s->h.S);
    s->h.lifo = p->opts->windows == LSIM_PDES_READY;
    s->wq.gpu = lsim_malloc(nl * sizeof *s->wq.gpu);
    s->wq.queued = lsim_calloc(nl, 1);
    int fail = !p->rbuf || !p->counts || !p->displs || !s->local_of || !s->arrived || !s->max_arrival ||
               !s->x.arrived_x || !s->x.max_x || !s->remote || !s->has_local || !p->owner || !p->rec || !p->allgid ||
               !s->h.node || !s->h.n || !s->h.S || !s->wq.gpu || !s->wq.queued || !p->eb || p->nlocal > j->ngpus;
    for (size_t l = 0; !fail && l < p->nlocal; l++) {
        s->h.S[l] = lsim_engine_start(e[l]);
        s->h.node[l] = e[l]->heap;
    }
    return fail;
}

static void pd_free(prun *p)
{
    pstate *s = &p->s;
    for (size_t l = 0; p->eb && l < p->nlocal; l++) lsim_free(p->eb[l]);
    lsim_free(p->eb);
    lsim_free(p->gmin);
    lsim_free(p->xi);
    lsim_free(p->rbuf);
    lsim_free(p->counts);
    lsim_free(p->displs);
    lsim_free(p->in);
    lsim_free(s->out);
    lsim_free(s->local_of);
    lsim_free(s->arrived);
    lsim_free(s->max_arrival);
    lsim_free(s->x.arrived_x);
    lsim_free(s->x.max_x);
    lsim_free(s->remote);
    lsim_free(s->has_local);
    lsim_free(p->owner);
    lsim_free(p->rec);
    lsim_free(p->allgid);
    lsim_free(s->h.node);
    lsim_free(s->h.n);
    lsim_free(s->h.S);
    lsim_free(s->wq.gpu);
    lsim_free(s->wq.queued);
}

/* Which rank owns every GPU, so that every rank knows which instances
 * cross ranks and agrees on the lookahead. Collective. */
static int pd_owners(prun *p)
{
    const lsim_job *j = p->s.j;
    int mine = (int)p->nlocal, at = 0;
    for (size_t i = 0; i < j->ngpus; i++) p->s.local_of[i] = -1;
    for (size_t l = 0; l < p->nlocal; l++) p->s.local_of[p->s.gid[l]] = (int32_t)l;
    MPI_Allgather(&mine, 1, MPI_INT, p->counts, 1, MPI_INT, p->comm);
    for (int r = 0; r < p->np; r++) {
        p->displs[r] = at;
        at += p->counts[r];
    }
    p->st->allgathers++;
    if ((size_t)at != j->ngpus) /* every rank sees the same total */
        return lsim_err_set(p->s.err, LSIM_EINTERNAL, "parallel engine: the ranks hold %d GPUs, the job has %zu", at,
                            j->ngpus);
    MPI_Allgatherv(p->s.gid, mine, MPI_UINT32_T, p->allgid, p->counts, p->displs, MPI_UINT32_T, p->comm);
    p->st->allgathers++;
    for (size_t i = 0; i < j->ngpus; i++) p->owner[i] = -1;
    int bad = 0;
    for (int r = 0; r < p->np; r++)
        for (int q = p->displs[r]; q < p->displs[r] + p->counts[r]; q++) {
            if (p->allgid[q] >= j->ngpus || p->owner[p->allgid[q]] >= 0) bad = 1;
            else p->owner[p->allgid[q]] = r;
        }
    if (bad) return lsim_err_set(p->s.err, LSIM_EINTERNAL, "parallel engine: the ranks' GPUs are not a partition of the job");
    return 0;
}

/* The lookahead: the shortest transfer of any instance whose participants
 * are on more than one rank. Instances inside one rank complete there,
 * within the window, and never need it: a fast NVLink collective kept on
 * one rank must not shrink every window. Each rank knows only the
 * instances its GPUs take part in (a distributed match, job.h), but every
 * cross-rank instance has participants on some rank: the least over the
 * ranks' least is the job's (one allreduce, which also agrees on whether
 * any instance crosses ranks at all). Collective. */
static int pd_lookahead(prun *p)
{
    pstate *s = &p->s;
    const lsim_job *j = s->j;
    lsim_ns L = INT64_MAX;
    p->xi = lsim_malloc((j->ninst ? j->ninst : 1) * sizeof *p->xi);
    for (size_t k = 0; p->xi && k < j->ninst; k++) {
        s->max_arrival[k] = s->x.max_x[k] = INT64_MIN;
        int nl = 0, cross = 0;
        uint64_t n = j->part_off[k + 1] - j->part_off[k];
        int32_t o0 = n ? p->owner[j->part_gpu[j->part_off[k]]] : -1;
        for (uint64_t q = j->part_off[k]; q < j->part_off[k + 1]; q++) {
            if (s->local_of[j->part_gpu[q]] >= 0) nl++;
            if (p->owner[j->part_gpu[q]] != o0) cross = 1;
        }
        s->remote[k] = (uint64_t)nl < n;
        s->has_local[k] = nl > 0;
        if (cross && j->transfer[k] < L) L = j->transfer[k];
        p->xi[k] = cross ? (int32_t)p->ncross++ : -1;
    }
    int local_fail = !p->xi || p->ncross > INT_MAX;
    int64_t v[3] = {local_fail ? -1 : 0, L, -(int64_t)p->ncross}, all[3];
    MPI_Allreduce(v, all, 3, MPI_INT64_T, MPI_MIN, p->comm);
    p->st->allreduces++;
    if (all[0] < 0)
        return lsim_err_set(s->err, LSIM_ENOMEM, "out of memory for the parallel engine's window bounds (on some rank)");
    L = all[1];
    p->any_cross = all[2] < 0;
    if (L == INT64_MAX) L = 1000000000; /* no collectives at all */
    if (L < 1) L = 1;
    s->lookahead = p->opts->lookahead_ns > 0 ? p->opts->lookahead_ns : L;
    p->st->lookahead = s->lookahead;
    return 0;
}

/* The path bounds, and for every cross-rank instance the least bound over
 * its participants on this rank: the ranks' least at a round's end is the
 * job's (an allreduce per round with arrivals). Collective. */
static int pd_path_bounds(prun *p)
{
    pstate *s = &p->s;
    const lsim_job *j = s->j;
    int any_fail = 0;
    p->bounds = p->opts->windows == LSIM_PDES_PATHS && p->any_cross; /* else nothing can be sent */
    double tb = MPI_Wtime();
    if (p->bounds) {
        p->gmin = lsim_malloc((p->ncross ? p->ncross : 1) * sizeof *p->gmin);
        int local_fail = !p->gmin || path_bounds(s, p->nlocal, p->eb) != 0;
        for (size_t q = 0; !local_fail && q < p->ncross; q++) p->gmin[q] = BIG;
        for (size_t k = 0; !local_fail && k < j->ninst; k++) {
            if (p->xi[k] < 0) continue;
            for (uint64_t q = j->part_off[k]; q < j->part_off[k + 1]; q++) {
                int32_t l = s->local_of[j->part_gpu[q]];
                if (l >= 0 && p->eb[l][j->part_node[q]] < p->gmin[p->xi[k]]) p->gmin[p->xi[k]] = p->eb[l][j->part_node[q]];
            }
        }
        MPI_Allreduce(&local_fail, &any_fail, 1, MPI_INT, MPI_MAX, p->comm);
        p->st->allreduces++;
    }
    p->st->bounds_s = MPI_Wtime() - tb;
    if (any_fail)
        return lsim_err_set(s->err, LSIM_ENOMEM, "out of memory for the parallel engine's window bounds (on some rank)");
    return 0;
}

/* SM edges (graph.h LSIM_EDGE_SM) hold a kernel only while their source
 * runs: a kernel ready before its source starts runs earlier than the
 * edge's delay says, which no time window can bound. READY rounds need no
 * bound, and no agreement (the mode is the same on every rank). Collective
 * in window modes. */
static int pd_sm_check(prun *p)
{
    if (p->opts->windows == LSIM_PDES_READY) return 0;
    int sm = 0, any_sm = 0;
    for (size_t l = 0; l < p->nlocal && !sm; l++) {
        const lsim_graph *g = lsim_engine_graph(p->s.e[l]);
        for (uint64_t k = 0; k < g->nedges; k++)
            if (g->in_class[k] & LSIM_EDGE_SM) {
                sm = 1;
                break;
            }
    }
    MPI_Allreduce(&sm, &any_sm, 1, MPI_INT, MPI_MAX, p->comm);
    p->st->allreduces++;
    if (!any_sm) return 0;
    return lsim_err_set(p->s.err, LSIM_EARG,
                        "--windows %s cannot simulate SM edges (a store built with --sm-contention on): a kernel held "
                        "for SMs is not bounded by its edges' delays; use --windows ready",
                        lsim_pdes_windows_name(p->opts->windows));
}

/* Every local GPU's events before W. A collective completing on one GPU
 * gives its local peers work: they are queued above the GPU running and
 * run after it, while their data is still in cache (the GPUs of a
 * tensor-parallel group advance together). Sweeping the local GPUs in
 * index order until none made progress cost a sweep over every GPU per
 * collective wave, and a cache miss per GPU per sweep: on a 4,096-GPU job
 * at K = 2, 6x the serial engine's time. Local; rc as ready() sets it. */
static int pd_window(prun *p, lsim_ns W)
{
    pstate *s = &p->s;
    lsim_engine *const *e = s->e;
    int rc = 0;
    uint64_t done = 0; /* a local counter: the loop's stores never alias it */
    for (size_t l = 0; l < p->nlocal; l++)
        if (s->h.n[l] && s->h.S[l][s->h.node[l][0]] < W) sched_wq_push(&s->wq, (uint32_t)l);
    while (s->wq.n && !rc) {
        size_t at = s->wq.n - 1;
        uint32_t l = s->wq.gpu[at]; /* stays queued while it runs */
        if (s->h.lifo) { /* READY: no window end, no order */
            s->cur = l;
            done += sched_drain(e[l], &s->h.n[l], s->j->inst_of[s->gid[l]], drain_hook, s, &rc);
        }
        while (!s->h.lifo && s->h.n[l] && s->h.S[l][s->h.node[l][0]] < W && !rc) {
            uint32_t v = pop(&s->h, l);
            done++;
            size_t nr = sched_release(e[l], v, p->rbuf);
            for (size_t k = 0; k < nr && !rc; k++) rc = ready(s, l, p->rbuf[k]);
        }
        sched_wq_remove(&s->wq, at);
    }
    p->done += done;
    return rc; /* on failure the queue is left as it is: the run ends */
}

/* The arrivals of a round, sum of them from every rank (counts/displs set):
 * received, applied to the instances this rank holds, and the bound M of
 * the next round lowered by the instances they complete. The time from ts
 * to the arrivals' receipt, and the bound's allreduce, count as
 * synchronization (stats). Collective. */
static int pd_arrivals(prun *p, long long sum, double ts, lsim_ns *M, int *peer_failed)
{
    pstate *s = &p->s;
    const lsim_job *j = s->j;
    if ((size_t)sum > p->incap) {
        /* every rank sees the same sums, so all grow here together and
         * agree on success (rarely: the buffer only grows) */
        size_t cap = p->incap ? p->incap : 256;
        while (cap < (size_t)sum) cap *= 2;
        int64_t *nin = lsim_realloc(p->in, cap * sizeof *nin);
        int oom = !nin, any_oom = 0;
        if (nin) {
            p->in = nin;
            p->incap = cap;
        }
        MPI_Allreduce(&oom, &any_oom, 1, MPI_INT, MPI_MAX, p->comm);
        p->st->allreduces++;
        if (any_oom) {
            *peer_failed = 1;
            return oom ? lsim_err_set(s->err, LSIM_ENOMEM, "out of memory exchanging arrivals") : 0;
        }
    }
    int64_t *in = p->in;
    MPI_Allgatherv(s->out, (int)s->nout, MPI_INT64_T, in, p->counts, p->displs, MPI_INT64_T, p->comm);
    p->st->allgathers++;
    p->st->sync_s += MPI_Wtime() - ts;
    p->st->messages += (uint64_t)sum / 2;
    /* the messages by the instances this rank holds (own arrivals were
     * counted when made; an instance none of its GPUs takes part in is none
     * of its business): -1, else local k << 1 | root */
    for (long long q = 0; q + 1 < sum; q += 2) {
        int64_t k = inst_local(j, (uint64_t)in[q] >> 1);
        in[q] = k < 0 ? -1 : (k << 1 | (in[q] & 1));
    }
    for (int r = 0; r < p->np; r++) {
        if (r == p->me) continue;
        for (int q = p->displs[r]; q + 1 < p->displs[r] + p->counts[r]; q += 2)
            if (in[q] >= 0) arrive(s, (size_t)(in[q] >> 1), in[q + 1], (int)(in[q] & 1));
    }
    /* the ranks that hold a cross-rank instance know which completed this
     * window and bound what follows: E + the least path bound over its
     * participants; the least over all ranks (an allreduce) is what every
     * rank bounds the next round by */
    for (long long q = 0; p->bounds && q + 1 < sum; q += 2) {
        if (in[q] < 0) continue;
        size_t k = (size_t)(in[q] >> 1);
        if (p->xi[k] < 0) continue;
        /* the earliest end the instance's known arrivals fix: a reduce's
         * non-roots end before its root; a broadcast's root ended on its
         * own rank, where it is pending */
        uint64_t npart = j->part_off[k + 1] - j->part_off[k];
        lsim_ns first_end;
        if (j->rule[k] == LSIM_JOB_REDUCE && npart > 1 && s->x.arrived_x[k] == npart - 1) first_end = s->x.max_x[k];
        else if (s->arrived[k] == npart) first_end = s->max_arrival[k];
        else continue;
        lsim_ns c = addb(addb(first_end, j->transfer[k]), p->gmin[p->xi[k]]);
        if (c < *M) *M = c;
    }
    if (p->bounds) {
        double ta = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, M, 1, MPI_INT64_T, MPI_MIN, p->comm);
        p->st->allreduces++;
        p->st->sync_s += MPI_Wtime() - ta;
    }
    return 0;
}

/* A round's end: every rank's arrival count, earliest pending event,
 * earliest possible arrival and failure flag in one allgather, then the
 * arrivals when there are any. *T: the next round's earliest event (no
 * later than due), *M its bound; *peer_failed when some rank failed.
 * Collective. */
static int pd_exchange(prun *p, int rc, lsim_ns due, lsim_ns *T, lsim_ns *M, int *peer_failed)
{
    pstate *s = &p->s;
    lsim_ns first, eot;
    pending_bounds(s, p->nlocal, p->bounds ? p->eb : NULL, &first, &eot);
    if (s->violation && !rc) rc = LSIM_EINTERNAL; /* its message is already in err */
    int64_t mine[4] = {(int64_t)s->nout, first, eot, rc ? 1 : 0};
    double ts = MPI_Wtime();
    MPI_Allgather(mine, 4, MPI_INT64_T, p->rec, 4, MPI_INT64_T, p->comm);
    p->st->allgathers++;
    long long sum = 0;
    int fail = 0;
    lsim_ns next = INT64_MAX;
    *M = BIG;
    for (int r = 0; r < p->np; r++) {
        p->displs[r] = (int)sum;
        p->counts[r] = (int)p->rec[4 * r];
        sum += p->rec[4 * r];
        if (p->rec[4 * r + 1] < next) next = p->rec[4 * r + 1];
        if (p->rec[4 * r + 2] < *M) *M = p->rec[4 * r + 2];
        if (p->rec[4 * r + 3]) fail = 1;
    }
    if (fail) {
        *peer_failed = 1;
        return rc;
    }
    if (sum > INT_MAX) {
        *peer_failed = 1; /* every rank sees the same sum */
        return lsim_err_set(s->err, LSIM_EINTERNAL, "too many collective arrivals in one window");
    }
    if (sum > 0) {
        rc = pd_arrivals(p, sum, ts, M, peer_failed);
        if (*peer_failed) return rc;
        if (next > due) next = due; /* completions just received are due from B + L on */
    } else {
        p->st->sync_s += MPI_Wtime() - ts;
    }
    s->nout = 0;
    *T = next;
    return rc;
}

/* Rounds until no rank has an event. T: the earliest pending event of any
 * rank; M: the earliest time any rank can still send an arrival (path
 * bounds; BIG without them). One allreduce to start; after that, one
 * allgather per round (pd_exchange). Every message of a round arrives at
 * >= T: it starts a node reachable from a pending one, or from a collective
 * completed by the last exchange, which ends at >= the previous B + L
 * ("due"), so the next T is never later than that (rounds never shrink
 * behind a completion keyed by its earlier start). Collective. */
static int pd_rounds(prun *p, int rc, int *peer_failed)
{
    pstate *s = &p->s;
    lsim_ns T = INT64_MAX, M = -BIG, first, eot;
    pending_bounds(s, p->nlocal, p->bounds ? p->eb : NULL, &first, &eot);
    int64_t neg[3] = {first, eot, rc ? -1 : 0}, all[3];
    MPI_Allreduce(neg, all, 3, MPI_INT64_T, MPI_MIN, p->comm);
    p->st->allreduces++;
    if (all[2] < 0) *peer_failed = 1;
    else T = all[0], M = all[1];
    while (T != INT64_MAX && !*peer_failed) {
        /* B: no message of this window arrives before it (T by the
         * argument above, M by the path bounds); a message at t >= B
         * completes its instance at >= B + L, so every event before W =
         * B + L has all its inputs. READY rounds have no W: every ready
         * node runs (its inputs are final by definition), and B + L only
         * bounds when the completions this round's messages cause are due. */
        lsim_ns B = (p->bounds || !p->any_cross) && M > T ? M : T; /* no cross-rank instance: one window */
        B = clampb(B + p->opts->skew_ns);
        s->bound = B;
        lsim_ns W = B >= BIG || B > INT64_MAX - s->lookahead ? INT64_MAX : B + s->lookahead;
        lsim_ns due = W == INT64_MAX ? INT64_MAX - 1 : W; /* completions by this window's messages: not before */
        if (p->opts->windows == LSIM_PDES_READY) W = INT64_MAX;
        p->st->windows++;
        rc = pd_window(p, W);
        rc = pd_exchange(p, rc, due, &T, &M, peer_failed);
    }
    return rc;
}

int lsim_pdes_run(MPI_Comm comm, const lsim_job *j, const uint32_t *gid, lsim_engine *const *e, size_t nlocal,
                  lsim_ns *const *waits, const lsim_pdes_opts *opts, lsim_pdes_stats *st, lsim_err *err)
{
    lsim_pdes_opts dflt = {0, LSIM_PDES_READY, 0};
    prun p;
    memset(&p, 0, sizeof p);
    p.comm = comm;
    p.opts = opts ? opts : &dflt;
    p.st = st;
    p.nlocal = nlocal;
    MPI_Comm_rank(comm, &p.me);
    MPI_Comm_size(comm, &p.np);
    memset(st, 0, sizeof *st);
    p.s.j = j;
    p.s.e = e;
    p.s.waits = waits;
    p.s.gid = gid;
    p.s.err = err;
    int rc = 0, peer_failed = 0, local_fail = pd_alloc(&p, j, e), any_fail = 0;
    MPI_Allreduce(&local_fail, &any_fail, 1, MPI_INT, MPI_MAX, comm);
    if (any_fail) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for the parallel engine (on some rank)");
    if (!rc) rc = pd_owners(&p);
    if (!rc) rc = pd_lookahead(&p);
    if (!rc) rc = pd_path_bounds(&p);
    if (!rc) rc = pd_sm_check(&p);
    if (rc) goto cleanup; /* every rank agrees on each of the above */
    for (size_t l = 0; l < nlocal; l++) sched_reset(e[l]);
    for (size_t l = 0; l < nlocal && !rc; l++) {
        const lsim_graph *g = lsim_engine_graph(e[l]);
        if (waits) memset(waits[l], 0, (g->n ? g->n : 1) * sizeof **waits);
        for (uint32_t v = 0; v < g->n && !rc; v++) /* roots: no in-edge */
            if (g->in_off[v + 1] == g->in_off[v]) rc = ready(&p.s, (uint32_t)l, v);
    }
    rc = pd_rounds(&p, rc, &peer_failed);
    if (!rc && !peer_failed) {
        uint64_t all_done = 0, all_total = 0, t64 = p.total;
        MPI_Allreduce(&p.done, &all_done, 1, MPI_UINT64_T, MPI_SUM, comm);
        MPI_Allreduce(&t64, &all_total, 1, MPI_UINT64_T, MPI_SUM, comm);
        st->allreduces += 2;
        if (all_done != all_total)
            rc = lsim_err_set(err, LSIM_EINTERNAL,
                              "parallel engine: %llu of %llu nodes never became ready (collective orders do not agree)",
                              (unsigned long long)(all_total - all_done), (unsigned long long)all_total);
    }
    rc = lsim_mpi_agree(comm, rc, err); /* the same message on every rank */
cleanup:
    pd_free(&p);
    return rc;
}
