/* Building an lsim_graph by hand (synth.h): the node columns grow inside a
 * graph (lsim_graph_resize_nodes), edges in a list; at the end the one CSR
 * builder makes the two CSRs (in-edges in insertion order per target,
 * out-edges ordered by target per source, as the graph store rebuilds
 * them). */
#include "lumosim/metrics.h"
#include "lumosim/alloc.h"
#include "lumosim/synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"

struct lsim_gbuilder {
    int rc;
    lsim_err err;
    char *source;
    int32_t rank, world;
    lsim_strtab *strings;
    /* nodes: the columns of g (g->n of them, capn allocated); only kind,
     * flags, proc, name, dur, release, corr and coll are set before finish */
    lsim_graph *g;
    size_t capn;
    /* edges */
    size_t ne, cape;
    lsim_edge *edges;
    /* procs, colls, iteration */
    lsim_proc *procs;
    uint32_t nprocs, capp;
    lsim_coll_info *colls;
    size_t ncoll, capc;
    int has_iter;
    uint32_t iter_name;
    /* the last node's name, its id and (-1: not yet asked) its phase: an
     * emitted kernel follows its launch call of the same name */
    char last[256];
    size_t lastlen;
    uint32_t lastid;
    int lastphase;
    /* the phase of the last prefix asked (-1: none yet) */
    char ptag[64];
    size_t ptaglen;
    int pphase;
};

/* lsim_phase_of_tag(name) of the node named prefix + suffix. A suffix
 * without a '.' adds nothing to the tests (".fwd.", ".bwd." end with a
 * '.', "grad.opt." has one at its end), so the prefix's phase, kept from
 * the last node with the same prefix, is the name's: one strstr per
 * layer instead of one per kernel. */
static int phase_of(lsim_gbuilder *b, const char *prefix, size_t lp, const char *suffix, size_t ls)
{
    if (memchr(suffix, '.', ls) || lp >= sizeof b->ptag) return (int)lsim_phase_of_tag(b->last);
    if (b->pphase < 0 || b->ptaglen != lp || memcmp(b->ptag, prefix, lp)) {
        memcpy(b->ptag, prefix, lp);
        b->ptag[lp] = 0;
        b->ptaglen = lp;
        b->pphase = (int)lsim_phase_of_tag(b->ptag);
    }
    return b->pphase;
}

static int fail(lsim_gbuilder *b, int code, const char *what)
{
    if (!b->rc) b->rc = lsim_err_set(&b->err, code, "%s: %s", b->source ? b->source : "graph", what);
    return b->rc;
}

int lsim_gb_new(const char *source, int32_t rank, int32_t world_size, lsim_gbuilder **out, lsim_err *err)
{
    *out = NULL;
    lsim_gbuilder *b = lsim_calloc(1, sizeof *b);
    if (!b || !(b->source = lsim_strdup(source ? source : "synth")) || !(b->strings = lsim_strtab_new()) ||
        !(b->g = lsim_calloc(1, sizeof *b->g))) {
        lsim_gb_free(b);
        return lsim_err_set(err, LSIM_ENOMEM, "out of memory building a graph");
    }
    b->rank = rank;
    b->world = world_size;
    b->lastlen = SIZE_MAX; /* no last name */
    b->pphase = -1;
    *out = b;
    return 0;
}

int lsim_gb_reserve_strings(lsim_gbuilder *b, uint32_t n)
{
    if (b->rc) return b->rc;
    return lsim_strtab_reserve(b->strings, n) ? fail(b, LSIM_ENOMEM, "out of memory") : 0;
}

int lsim_gb_reserve(lsim_gbuilder *b, size_t nodes, size_t edges)
{
    if (b->rc) return b->rc;
    if (nodes > b->capn) {
        if (lsim_graph_resize_nodes(b->g, nodes, NULL)) return fail(b, LSIM_ENOMEM, "out of memory");
        b->capn = nodes;
    }
    if (edges > b->cape) {
        lsim_edge *e = lsim_realloc(b->edges, edges * sizeof *e);
        if (!e) return fail(b, LSIM_ENOMEM, "out of memory");
        b->edges = e;
        b->cape = edges;
    }
    return 0;
}

void lsim_gb_free(lsim_gbuilder *b)
{
    if (!b) return;
    free(b->source);
    lsim_strtab_free(b->strings);
    lsim_graph_free(b->g);
    free(b->edges);
    free(b->procs);
    free(b->colls);
    free(b);
}

int lsim_gb_proc(lsim_gbuilder *b, int is_gpu, int64_t pid, int64_t tid, uint32_t *idx)
{
    if (b->rc) return b->rc;
    size_t cap = b->capp;
    if (LSIM_GROW(b->procs, &cap, (size_t)b->nprocs + 1)) return fail(b, LSIM_ENOMEM, "out of memory");
    b->capp = (uint32_t)cap;
    b->procs[b->nprocs] = (lsim_proc){(uint8_t)(is_gpu != 0), pid, tid, 0};
    *idx = b->nprocs++;
    return 0;
}

int lsim_gb_iteration(lsim_gbuilder *b, const char *name)
{
    if (b->rc) return b->rc;
    if (lsim_strtab_intern(b->strings, name, strlen(name), &b->iter_name)) return fail(b, LSIM_ENOMEM, "out of memory");
    b->has_iter = 1;
    return 0;
}

int lsim_gb_node2(lsim_gbuilder *b, lsim_node_kind kind, uint8_t flags, uint32_t proc, const char *prefix,
                  const char *suffix, lsim_ns dur, uint32_t *id)
{
    *id = 0;
    if (b->rc) return b->rc;
    if (proc >= b->nprocs || (int)kind < 0 || kind >= LSIM_N_NKINDS || dur < 0)
        return fail(b, LSIM_EARG, "bad node (processor, kind or duration)");
    lsim_graph *g = b->g;
    if (g->n >= UINT32_MAX - 1) return fail(b, LSIM_EARG, "too many nodes");
    if (g->n + 1 > b->capn) {
        size_t c = b->capn ? 2 * b->capn : 256;
        if (lsim_graph_resize_nodes(g, c, NULL)) return fail(b, LSIM_ENOMEM, "out of memory");
        b->capn = c;
    }
    size_t lp = strlen(prefix), ls = strlen(suffix);
    if (lp + ls >= sizeof b->last) return fail(b, LSIM_EARG, "node name too long");
    uint32_t v = (uint32_t)g->n;
    if (b->lastlen == lp + ls && !memcmp(b->last, prefix, lp) && !memcmp(b->last + lp, suffix, ls)) {
        g->name[v] = b->lastid;
    } else {
        memcpy(b->last, prefix, lp);
        memcpy(b->last + lp, suffix, ls + 1);
        if (lsim_strtab_intern(b->strings, b->last, lp + ls, &g->name[v])) {
            b->lastlen = SIZE_MAX;
            return fail(b, LSIM_ENOMEM, "out of memory");
        }
        b->lastlen = lp + ls;
        b->lastid = g->name[v];
        b->lastphase = -1;
    }
    g->kind[v] = (uint8_t)kind;
    g->flags[v] = flags;
    g->proc[v] = proc;
    g->dur[v] = dur;
    g->release[v] = INT64_MIN;
    g->corr[v] = -1;
    g->coll[v] = -1;
    /* GPU work's training phase from its tag ("L3.mb0.bwd.fc1_gemm"); no
     * autograd Sequence numbers in a synthesized graph */
    if (kind == LSIM_N_KERNEL || kind == LSIM_N_MEMCPY || kind == LSIM_N_MEMSET) {
        if (b->lastphase < 0) b->lastphase = phase_of(b, prefix, lp, suffix, ls);
        g->phase[v] = (uint8_t)b->lastphase;
    } else {
        g->phase[v] = (uint8_t)LSIM_PHASE_UNKNOWN;
    }
    g->fwd_seq[v] = -1;
    b->procs[proc].nnodes++;
    g->n++;
    *id = v;
    return 0;
}

int lsim_gb_node(lsim_gbuilder *b, lsim_node_kind kind, uint8_t flags, uint32_t proc, const char *name, lsim_ns dur,
                 uint32_t *id)
{
    return lsim_gb_node2(b, kind, flags, proc, name, "", dur, id);
}

int lsim_gb_set_release(lsim_gbuilder *b, uint32_t node, lsim_ns release)
{
    if (b->rc) return b->rc;
    if (node >= b->g->n) return fail(b, LSIM_EARG, "release of a node that does not exist");
    b->g->release[node] = release;
    return 0;
}

int lsim_gb_set_corr(lsim_gbuilder *b, uint32_t node, int64_t corr)
{
    if (b->rc) return b->rc;
    if (node >= b->g->n) return fail(b, LSIM_EARG, "correlation of a node that does not exist");
    b->g->corr[node] = corr;
    return 0;
}

int lsim_gb_edge(lsim_gbuilder *b, uint32_t src, uint32_t dst, unsigned cls, lsim_ns delay)
{
    if (b->rc) return b->rc;
    if (src >= b->g->n || dst >= b->g->n || src == dst || (cls & LSIM_EDGE_CLASS_MASK) >= LSIM_E_NCLASSES)
        return fail(b, LSIM_EARG, "bad edge (node or class)");
    if (LSIM_GROW(b->edges, &b->cape, b->ne + 1)) return fail(b, LSIM_ENOMEM, "out of memory");
    b->edges[b->ne++] = (lsim_edge){dst, src, delay, (uint8_t)cls};
    return 0;
}

int lsim_gb_coll(lsim_gbuilder *b, uint32_t node, lsim_coll_kind kind, int64_t bytes, int32_t group_size,
                 const char *pg_name, int64_t seq)
{
    if (b->rc) return b->rc;
    if (node >= b->g->n) return fail(b, LSIM_EARG, "collective on a node that does not exist");
    if (LSIM_GROW(b->colls, &b->capc, b->ncoll + 1)) return fail(b, LSIM_ENOMEM, "out of memory");
    lsim_coll_info *c = &b->colls[b->ncoll];
    memset(c, 0, sizeof *c);
    c->kind = (uint8_t)kind;
    c->from_metadata = 1;
    c->group_size = group_size;
    c->in_nelems = c->out_nelems = -1;
    c->dtype_bytes = -1;
    c->bytes = bytes;
    c->pg_name = c->pg_ranks = UINT32_MAX;
    c->seq = seq;
    c->root = -1;
    if (pg_name && lsim_strtab_intern(b->strings, pg_name, strlen(pg_name), &c->pg_name))
        return fail(b, LSIM_ENOMEM, "out of memory");
    b->g->coll[node] = (int32_t)b->ncoll++;
    b->g->flags[node] |= LSIM_NF_COLL;
    return 0;
}

int lsim_gb_finish(lsim_gbuilder *b, lsim_graph **out, lsim_err *err)
{
    *out = NULL;
    lsim_graph *g = NULL;
    int rc = b->rc;
    if (rc) {
        if (err) *err = b->err;
        goto cleanup;
    }
    /* the node columns are the graph's already: take the graph */
    g = b->g, b->g = NULL;
    size_t n = g->n;
    g->rank = b->rank;
    g->world_size = b->world;
    g->device = UINT32_MAX; /* no trace: no deviceProperties */
    g->latency = LSIM_LAT_MODEL;
    if (!b->capn && lsim_graph_resize_nodes(g, 1, NULL)) goto nomem;
    for (size_t v = 0; v < n; v++) {
        g->obs_start[v] = g->obs_end[v] = LSIM_OBS_NONE;
        g->iter[v] = b->has_iter ? 0 : -1;
    }
    if (lsim_graph_set_edges(g, b->edges, b->ne, LSIM_OUT_BY_DST, NULL)) goto nomem;
    lsim_graph_count_edges(g);
    g->procs = b->procs, b->procs = NULL;
    g->nprocs = b->nprocs;
    if (!g->procs && !(g->procs = lsim_malloc(sizeof *g->procs))) goto nomem;
    g->colls = b->colls, b->colls = NULL;
    g->ncoll = b->ncoll;
    if (!g->colls && !(g->colls = lsim_malloc(sizeof *g->colls))) goto nomem;
    g->iters = lsim_calloc(1, sizeof *g->iters);
    if (!g->iters) goto nomem;
    if (b->has_iter) {
        g->niters = 1;
        g->iters[0] = (lsim_iter){b->iter_name, LSIM_OBS_NONE, LSIM_OBS_NONE};
    }
    g->strings = b->strings, b->strings = NULL;
    g->source = b->source, b->source = NULL;
    g->t0 = 0;
    *out = g;
    g = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory building the graph", b->source ? b->source : "graph");
cleanup:
    lsim_graph_free(g);
    lsim_gb_free(b);
    return rc;
}

/* ------------------------------------------------------------ emitter */

const int64_t lsim_emit_stream_id[LSIM_ES_N] = {7, 13, 21, 30, 31, 32, 33};

/* splitmix64: a deterministic stream of draws from one seed */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double next_unit(uint64_t *s) { return ((double)(next_u64(s) >> 11) + 0.5) / 9007199254740992.0; }

/* A gamma(k, 1) draw, k >= 1 (Marsaglia and Tsang 2000), from normal
 * draws by Box-Muller. */
static double gamma_draw(uint64_t *s, double k)
{
    double d = k - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double z = sqrt(-2 * log(next_unit(s))) * cos(6.283185307179586 * next_unit(s)), v = 1 + c * z;
        if (v <= 0) continue;
        v = v * v * v;
        double u = next_unit(s);
        if (log(u) < 0.5 * z * z + d - d * v + d * log(v)) return d * v;
    }
}

/* The length of one stall: mean stall_ns, gamma-distributed with standard
 * deviation stall_sd_ns (shape k = (mean / sd)^2), exponential when that
 * is unknown or the shape would be below 1. With biased set, the length of
 * the stall in progress at a random time instead (length-biased: gamma of
 * shape k + 1, the same scale). */
static double stall_len(lsim_emit *E, int biased)
{
    double m = (double)E->stall_ns, sd = (double)E->stall_sd_ns, k = sd > 0 ? (m / sd) * (m / sd) : 1;
    if (k < 1) k = 1;
    if (biased) return gamma_draw(&E->rng, k + 1) * m / k;
    if (k > 1) return gamma_draw(&E->rng, k) * m / k;
    return -log(next_unit(&E->rng)) * m;
}

/* A host stall before a launch call (the OS giving the launching thread's
 * core to another process, the garbage collector: the long tail of the
 * gaps between launches in real traces), of stall_len's length. Where they
 * fall is fair-share scheduling (Linux CFS: a thread that was kept off its
 * core for x runs until its virtual runtime has caught up): after a stall
 * of x the next one comes after x / stall_ns / stall_prob launches, so a
 * GPU's host loses the same fraction of its time to stalls however they
 * are sliced. The shared A100 trace shows exactly that: its eight ranks
 * lose 437 to 470 ms each (standard deviation 11 ms) to 19 to 39 stalls
 * (calibrate's count) whose mean lengths, 23 to 12 ms, fall as their
 * number rises; stalls of independent lengths at a fixed rate would
 * spread the totals over a standard deviation of 50 ms (29 of sd 9.2 ms),
 * and the job, which waits for its slowest host at every tensor-parallel
 * all-reduce, with them (docs/synthesis.md, "Host time"). The first
 * stall's phase is random per GPU. */
static lsim_ns stall(lsim_emit *E)
{
    if (!(E->stall_prob > 0) || E->stall_ns <= 0) return 0;
    if (E->stall_phase <= 0) E->stall_phase = next_unit(&E->rng) / E->stall_prob;
    E->stall_phase -= 1;
    if (E->stall_phase > 0) return 0;
    double x = stall_len(E, 0);
    E->stall_phase += x / (double)E->stall_ns / E->stall_prob;
    return x < 1e12 ? (lsim_ns)x : (lsim_ns)1e12;
}

/* How long the thread waits for its core when it becomes ready at a time
 * that has nothing to do with the stalls (the step's start; the return of
 * a blocking call, when the GPU work it waited for ends): under the share
 * stall() keeps, the core is taken a fraction f = s / (s + w) of the time
 * (s = stall_prob x stall_ns of stall per launch, w = lcpu of work per
 * launch), and then the wait is the rest of the stall in progress: a
 * uniform fraction of a length-biased stall (renewal theory). The shared
 * A100 trace's ranks enter the step 0 to 30 ms apart and return from the
 * step's last cudaDeviceSynchronize 0 to 18 ms after their GPU's last
 * kernel: mean 8.5 and 6.1 ms, against f x E[rest] = 0.76 x 10.6 = 8.0
 * ms from the spec calibrate fits on it. 0 without stalls. */
lsim_ns lsim_emit_wake(lsim_emit *E)
{
    if (!(E->stall_prob > 0) || E->stall_ns <= 0) return 0;
    double s = E->stall_prob * (double)E->stall_ns, w = (double)(E->lcpu > 0 ? E->lcpu : 1);
    if (next_unit(&E->rng) >= s / (s + w)) return 0;
    double x = next_unit(&E->rng) * stall_len(E, 1);
    return x < 1e12 ? (lsim_ns)x : (lsim_ns)1e12;
}

static uint32_t cpu_node(lsim_emit *E, const char *what, uint8_t flags, lsim_ns dur)
{
    uint32_t v;
    if (lsim_gb_node2(E->b, LSIM_N_RUNTIME, flags, E->cpu, E->tag, what, dur, &v)) return LSIM_EMIT_NONE;
    if (E->last_cpu != LSIM_EMIT_NONE) lsim_gb_edge(E->b, E->last_cpu, v, LSIM_E_CPU_THREAD, 0);
    else lsim_gb_set_release(E->b, v, 0);
    E->last_cpu = v;
    return v;
}

uint32_t lsim_emit_cpu(lsim_emit *E, const char *what, uint8_t flags)
{
    return cpu_node(E, what, flags, E->lcpu + (flags ? 0 : stall(E)));
}

uint32_t lsim_emit_host(lsim_emit *E, const char *what, lsim_ns dur) { return cpu_node(E, what, 0, dur); }

uint32_t lsim_emit_launch(lsim_emit *E, int s, const char *what, lsim_ns dur)
{
    uint32_t call = lsim_emit_cpu(E, what, 0), v;
    if (call == LSIM_EMIT_NONE || lsim_gb_node2(E->b, LSIM_N_KERNEL, 0, E->stream[s], E->tag, what, dur, &v))
        return LSIM_EMIT_NONE;
    lsim_gb_edge(E->b, call, v, LSIM_E_LAUNCH, E->ldelay);
    if (E->last_on[s] != LSIM_EMIT_NONE) lsim_gb_edge(E->b, E->last_on[s], v, LSIM_E_STREAM, 0);
    E->corr++;
    lsim_gb_set_corr(E->b, call, E->corr);
    lsim_gb_set_corr(E->b, v, E->corr);
    E->last_on[s] = v;
    return v;
}

uint32_t lsim_emit_compute(lsim_emit *E, const char *what, lsim_ns dur)
{
    uint32_t v = lsim_emit_launch(E, LSIM_ES_COMP, what, dur);
    if (v == LSIM_EMIT_NONE) return LSIM_EMIT_NONE;
    for (size_t i = 0; i < E->npend; i++) lsim_gb_edge(E->b, E->pend[i], v, LSIM_E_EVENT, 0);
    E->npend = 0;
    E->last_comp = v;
    return v;
}

uint32_t lsim_emit_comm(lsim_emit *E, int s, const char *what, lsim_ns dur, lsim_coll_kind kind, int64_t bytes,
                        int32_t gsize, const char *pg, int64_t seq)
{
    uint32_t v = lsim_emit_launch(E, s, what, dur);
    if (v == LSIM_EMIT_NONE) return LSIM_EMIT_NONE;
    if (E->last_comp != LSIM_EMIT_NONE) lsim_gb_edge(E->b, E->last_comp, v, LSIM_E_EVENT, 0);
    lsim_gb_coll(E->b, v, kind, bytes, gsize, pg, seq);
    return v;
}

uint32_t lsim_emit_comm_alone(lsim_emit *E, int s, const char *what, lsim_ns dur)
{
    uint32_t v = lsim_emit_launch(E, s, what, dur);
    if (v == LSIM_EMIT_NONE) return LSIM_EMIT_NONE;
    if (E->last_comp != LSIM_EMIT_NONE) lsim_gb_edge(E->b, E->last_comp, v, LSIM_E_EVENT, 0);
    E->b->g->flags[v] |= LSIM_NF_COLL;
    return v;
}

int lsim_emit_pend(lsim_emit *E, uint32_t v)
{
    if (LSIM_GROW(E->pend, &E->cappend, E->npend + 1)) return E->rc = LSIM_ENOMEM;
    E->pend[E->npend++] = v;
    return 0;
}
