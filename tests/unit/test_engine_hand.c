/* The serial engine on small graphs built by hand, every expected time
 * worked out by hand from the model (docs/ARCHITECTURE.md 4, graph.h):
 *
 *   start(v) = max(release(v), max over start-edges u->v of end(u) + delay)
 *   end(v)   = max(start(v) + dur(v), max over end-edges u->v of end(u) + delay)
 *   a root without a release starts at t0.
 *
 * What test_oracle.c already checks (ties between edges and between an edge
 * and a release, a non-binding end-edge, one graph through the job driver)
 * is not repeated. Here: a chain with positive, negative and zero delays; a
 * fork and join; a blocking call held by its GPU work (two end-edges, one
 * binding); release times and t0; a cycle refused with an error; the ready
 * heap's order (start, node id); edge-class ablation; the drain
 * (lsim_engine_drain) equal to the run; and SM edges (graph.h
 * LSIM_EDGE_SM), held, not held, chained, and the same through the drain. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "lumosim/engine.h"
#include "lumosim/synth.h"

#include "internal/sched_inline.h" /* the ready heap, tested directly */

typedef struct run {
    lsim_graph *g;
    lsim_engine *e;
    const lsim_ns *S, *E;
    const int64_t *bs, *be;
} run;

/* Build with the builder b (freed), then simulate. 0 or the failure. */
static int simulate(lsim_gbuilder *b, run *r, lsim_err *err)
{
    memset(r, 0, sizeof *r);
    int rc = lsim_gb_finish(b, &r->g, err);
    if (!rc) rc = lsim_engine_new(r->g, &r->e, err);
    if (!rc) rc = lsim_engine_run(r->e, err);
    if (rc) return rc;
    r->S = lsim_engine_start(r->e);
    r->E = lsim_engine_end(r->e);
    r->bs = lsim_engine_bind_start(r->e);
    r->be = lsim_engine_bind_end(r->e);
    return 0;
}

static void run_free(run *r)
{
    lsim_engine_free(r->e);
    lsim_graph_free(r->g);
}

/* the in-edge src -> v (its CSR index), -1 if none */
static int64_t edge_from(const lsim_graph *g, uint32_t src, uint32_t v)
{
    for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
        if (g->in_src[k] == src) return (int64_t)k;
    return -1;
}

#define CHECK_SPAN(r, v, s, e)                                                                                    \
    CHECK_MSG((r)->S[v] == (s) && (r)->E[v] == (e), "node %u runs [%lld, %lld), want [%lld, %lld)", (unsigned)(v), \
              (long long)(r)->S[v], (long long)(r)->E[v], (long long)(s), (long long)(e))

static lsim_gbuilder *builder(const char *name, uint32_t *cpu, uint32_t *s1, uint32_t *s2)
{
    lsim_gbuilder *b;
    lsim_err err;
    if (lsim_gb_new(name, 0, 1, &b, &err)) return NULL;
    lsim_gb_proc(b, 0, 1, 1, cpu);
    lsim_gb_proc(b, 1, 0, 7, s1);
    lsim_gb_proc(b, 1, 0, 8, s2);
    return b;
}

/* a (release 100, 10) -3-> b (5) -(-2)-> c (4) -0-> d (0) -7-> e (1):
 *   a [100,110)  b [113,118)  c [116,120) (overlaps b by 2)  d [120,120)
 *   e [127,128); each start decided by its one in-edge. */
static void chain(void)
{
    uint32_t T, s1, s2, v[5];
    lsim_err err;
    run r;
    lsim_gbuilder *b = builder("chain", &T, &s1, &s2);
    const lsim_ns dur[5] = {10, 5, 4, 0, 1}, delay[4] = {3, -2, 0, 7};
    for (int i = 0; i < 5; i++) lsim_gb_node(b, LSIM_N_CPU, 0, T, "n", dur[i], &v[i]);
    lsim_gb_set_release(b, v[0], 100);
    for (int i = 0; i < 4; i++) lsim_gb_edge(b, v[i], v[i + 1], LSIM_E_CPU_THREAD, delay[i]);
    if (simulate(b, &r, &err)) {
        CHECK_MSG(0, "chain: %s", err.msg);
        run_free(&r);
        return;
    }
    CHECK_SPAN(&r, v[0], 100, 110);
    CHECK_SPAN(&r, v[1], 113, 118);
    CHECK_SPAN(&r, v[2], 116, 120);
    CHECK_SPAN(&r, v[3], 120, 120);
    CHECK_SPAN(&r, v[4], 127, 128);
    CHECK_I64(r.bs[v[0]], -1);
    for (int i = 1; i < 5; i++) {
        CHECK_I64(r.bs[v[i]], edge_from(r.g, v[i - 1], v[i]));
        CHECK_I64(r.be[v[i]], -1);
    }
    CHECK_I64(lsim_engine_events(r.e), 5);
    run_free(&r);
}

/* r (release 0, 10) forks to x (30, delay 2) and y (5, delay 20); they
 * join at j (1; from x delay 1, from y delay 0):
 *   r [0,10)  x [12,42)  y [30,35)  j = max(42 + 1, 35 + 0) = 43 -> [43,44),
 *   decided by the edge from x. */
static void fork_join(void)
{
    uint32_t T, s1, s2, rr, x, y, j;
    lsim_err err;
    run r;
    lsim_gbuilder *b = builder("fork", &T, &s1, &s2);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "r", 10, &rr);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s1, "x", 30, &x);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s2, "y", 5, &y);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s1, "j", 1, &j);
    lsim_gb_set_release(b, rr, 0);
    lsim_gb_edge(b, rr, x, LSIM_E_LAUNCH, 2);
    lsim_gb_edge(b, rr, y, LSIM_E_LAUNCH, 20);
    lsim_gb_edge(b, y, j, LSIM_E_EVENT, 0);
    lsim_gb_edge(b, x, j, LSIM_E_STREAM, 1);
    if (simulate(b, &r, &err)) {
        CHECK_MSG(0, "fork/join: %s", err.msg);
        run_free(&r);
        return;
    }
    CHECK_SPAN(&r, rr, 0, 10);
    CHECK_SPAN(&r, x, 12, 42);
    CHECK_SPAN(&r, y, 30, 35);
    CHECK_SPAN(&r, j, 43, 44);
    CHECK_I64(r.bs[j], edge_from(r.g, x, j));
    run_free(&r);
}

/* A blocking call held by the GPU work it waits for. Thread: L (launch
 * call, release 0, 4) -1-> Y (cudaStreamSynchronize-like, 3) -0-> n (5).
 * L launches K (50, latency 6) and K2 (1, latency 6, another stream); Y
 * has end-edges from both (delay 2):
 *   L [0,4)  K [10,60)  K2 [10,11)  Y starts 5, ends max(5 + 3, 60 + 2,
 *   11 + 2) = 62 (the edge from K binds)  n [62,67). */
static void end_edges(void)
{
    uint32_t T, s1, s2, L, Y, n, K, K2;
    lsim_err err;
    run r;
    lsim_gbuilder *b = builder("sync", &T, &s1, &s2);
    lsim_gb_node(b, LSIM_N_RUNTIME, 0, T, "L", 4, &L);
    lsim_gb_node(b, LSIM_N_RUNTIME, LSIM_NF_BLOCKING, T, "Y", 3, &Y);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "n", 5, &n);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s1, "K", 50, &K);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s2, "K2", 1, &K2);
    lsim_gb_set_release(b, L, 0);
    lsim_gb_edge(b, L, Y, LSIM_E_CPU_THREAD, 1);
    lsim_gb_edge(b, Y, n, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, L, K, LSIM_E_LAUNCH, 6);
    lsim_gb_edge(b, L, K2, LSIM_E_LAUNCH, 6);
    lsim_gb_edge(b, K2, Y, LSIM_E_SYNC | LSIM_EDGE_END, 2);
    lsim_gb_edge(b, K, Y, LSIM_E_SYNC | LSIM_EDGE_END, 2);
    if (simulate(b, &r, &err)) {
        CHECK_MSG(0, "end-edges: %s", err.msg);
        run_free(&r);
        return;
    }
    CHECK_SPAN(&r, L, 0, 4);
    CHECK_SPAN(&r, K, 10, 60);
    CHECK_SPAN(&r, K2, 10, 11);
    CHECK_SPAN(&r, Y, 5, 62);
    CHECK_SPAN(&r, n, 62, 67);
    CHECK_I64(r.bs[Y], edge_from(r.g, L, Y));
    CHECK_I64(r.be[Y], edge_from(r.g, K, Y));
    CHECK_I64(r.be[n], -1);
    run_free(&r);
}

/* Releases: p (release 1000, 1) [1000,1001); q after p (delay 0) with an
 * earlier release 500: the edge decides, [1001,1003); w after p with a
 * later release 2000: the release decides (no deciding edge), [2000,2004);
 * z, a root without a release, starts at t0 (set to 7 here), [7,16). */
static void releases(void)
{
    uint32_t T, s1, s2, p, q, w, z;
    lsim_err err;
    run r;
    lsim_gbuilder *b = builder("release", &T, &s1, &s2);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "p", 1, &p);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "q", 2, &q);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s1, "w", 4, &w);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s2, "z", 9, &z);
    lsim_gb_set_release(b, p, 1000);
    lsim_gb_set_release(b, q, 500);
    lsim_gb_set_release(b, w, 2000);
    lsim_gb_edge(b, p, q, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, p, w, LSIM_E_LAUNCH, 0);
    memset(&r, 0, sizeof r);
    if (lsim_gb_finish(b, &r.g, &err)) {
        CHECK_MSG(0, "releases: %s", err.msg);
        return;
    }
    r.g->t0 = 7;
    if (lsim_engine_new(r.g, &r.e, &err) || lsim_engine_run(r.e, &err)) {
        CHECK_MSG(0, "releases: %s", err.msg);
        run_free(&r);
        return;
    }
    r.S = lsim_engine_start(r.e);
    r.E = lsim_engine_end(r.e);
    r.bs = lsim_engine_bind_start(r.e);
    CHECK_SPAN(&r, p, 1000, 1001);
    CHECK_SPAN(&r, q, 1001, 1003);
    CHECK_SPAN(&r, w, 2000, 2004);
    CHECK_SPAN(&r, z, 7, 16);
    CHECK_I64(r.bs[q], edge_from(r.g, p, q));
    CHECK_I64(r.bs[w], -1);
    CHECK_I64(r.bs[z], -1);
    run_free(&r);
}

/* a (release 0) -> b -> c -> b, and d alone: b and c wait for each other.
 * The run must end with an error naming 2 of 4 nodes, not hang. */
static void cycle(void)
{
    uint32_t T, s1, s2, a, bb, c, d;
    lsim_err err;
    run r;
    lsim_gbuilder *b = builder("cyclic", &T, &s1, &s2);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "a", 1, &a);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "b", 1, &bb);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "c", 1, &c);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s1, "d", 1, &d);
    lsim_gb_set_release(b, a, 0);
    lsim_gb_edge(b, a, bb, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, bb, c, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, c, bb, LSIM_E_CPU_XTHREAD, 0);
    memset(&err, 0, sizeof err);
    int rc = simulate(b, &r, &err);
    CHECK_I64(rc, LSIM_EINTERNAL);
    CHECK_MSG(strstr(err.msg, "cycle") && strstr(err.msg, "2 of 4"), "message: %s", err.msg);
    if (r.e) CHECK_I64(lsim_engine_events(r.e), 2);
    run_free(&r);
}

/* The ready heap pops by (start, node id): equal starts in ascending id,
 * whatever the order they were pushed in. */
static void heap_order(void)
{
    const lsim_ns S[8] = {5, 3, 5, 3, 5, 1, 3, 5};
    const uint32_t push[8] = {4, 2, 7, 0, 6, 5, 3, 1};
    const uint32_t want[8] = {5, 1, 3, 6, 0, 2, 4, 7};
    uint32_t H[8];
    size_t n = 0;
    for (int i = 0; i < 8; i++) sched_heap_push(H, &n, S, push[i]);
    CHECK_I64(n, 8);
    for (int i = 0; i < 8; i++) {
        uint32_t v = sched_heap_pop(H, &n, S);
        CHECK_MSG(v == want[i], "pop %d gave node %u, want %u", i, v, want[i]);
    }
    CHECK_I64(n, 0);
}

/* Ablation on a clone. Thread: c (release 0, 10) -0-> c2 (10); c launches
 * k1 (100, latency 5) on S1, c2 launches k2 (20, latency 5) on S2, and k2
 * waits for k1 (event edge 0):
 *   full               c [0,10) c2 [10,20) k1 [15,115) k2 [115,135)
 *   no event edges     k2 [25,45) (its launch alone)
 *   zero launch lat.   k1 starts with its call: [0,100); k2 max(10, 100) =
 *                      [100,120)
 *   both               k1 [0,100) k2 [10,30)
 * Every start no later than in the full run; CPU nodes unchanged. */
static void ablation(void)
{
    static const struct {
        unsigned mask;
        int zero;
        lsim_ns k1, k2;
    } V[4] = {{0, 0, 15, 115}, {1u << LSIM_E_EVENT, 0, 15, 25}, {0, 1, 0, 100}, {1u << LSIM_E_EVENT, 1, 0, 10}};
    uint32_t T, s1, s2, c, c2, k1, k2;
    lsim_err err;
    lsim_gbuilder *b = builder("ablate", &T, &s1, &s2);
    lsim_graph *full = NULL;
    lsim_gb_node(b, LSIM_N_RUNTIME, 0, T, "c", 10, &c);
    lsim_gb_node(b, LSIM_N_RUNTIME, 0, T, "c2", 10, &c2);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s1, "k1", 100, &k1);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s2, "k2", 20, &k2);
    lsim_gb_set_release(b, c, 0);
    lsim_gb_edge(b, c, c2, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, c, k1, LSIM_E_LAUNCH, 5);
    lsim_gb_edge(b, c2, k2, LSIM_E_LAUNCH, 5);
    lsim_gb_edge(b, k1, k2, LSIM_E_EVENT, 0);
    if (lsim_gb_finish(b, &full, &err)) {
        CHECK_MSG(0, "ablation: %s", err.msg);
        return;
    }
    lsim_ns base[4] = {0};
    for (int i = 0; i < 4; i++) {
        lsim_graph *g = NULL;
        lsim_engine *e = NULL;
        if (lsim_graph_clone(full, &g, &err) || lsim_graph_ablate(g, V[i].mask, V[i].zero, &err) ||
            lsim_engine_new(g, &e, &err) || lsim_engine_run(e, &err)) {
            CHECK_MSG(0, "ablation %d: %s", i, err.msg);
        } else {
            const lsim_ns *S = lsim_engine_start(e), *E = lsim_engine_end(e);
            CHECK_MSG(S[k1] == V[i].k1 && E[k1] == V[i].k1 + 100, "ablation %d: k1 [%lld, %lld)", i, (long long)S[k1],
                      (long long)E[k1]);
            CHECK_MSG(S[k2] == V[i].k2 && E[k2] == V[i].k2 + 20, "ablation %d: k2 [%lld, %lld)", i, (long long)S[k2],
                      (long long)E[k2]);
            CHECK_I64(S[c], 0);
            CHECK_I64(S[c2], 10);
            for (uint32_t v = 0; v < 4; v++) {
                if (i == 0) base[v] = S[v];
                CHECK_MSG(S[v] <= base[v], "ablation %d made node %u later", i, v);
            }
        }
        lsim_engine_free(e);
        lsim_graph_free(g);
    }
    lsim_graph_free(full);
}

static int never(void *ctx, uint32_t v, int32_t k)
{
    (void)ctx, (void)v, (void)k;
    return LSIM_EINTERNAL;
}

/* Stepping from outside: reset, resolve the roots onto the scratch stack,
 * drain. On a graph without collectives (no hook call) the result must be
 * the run's, deciding edges included, and every node runs once. Graph: the
 * fork/join and the blocking call above, side by side. */
static void drain_equals_run(void)
{
    uint32_t T, T2, s1, s2, L, Y, K, rr, x, y, j;
    lsim_err err;
    run r;
    lsim_gbuilder *b = builder("drain", &T, &s1, &s2);
    lsim_gb_proc(b, 0, 1, 2, &T2);
    lsim_gb_node(b, LSIM_N_RUNTIME, 0, T, "L", 4, &L);
    lsim_gb_node(b, LSIM_N_RUNTIME, LSIM_NF_BLOCKING, T, "Y", 3, &Y);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s1, "K", 50, &K);
    lsim_gb_node(b, LSIM_N_CPU, 0, T2, "r", 10, &rr);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s2, "x", 30, &x);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s2, "y", 5, &y);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s2, "j", 1, &j);
    lsim_gb_set_release(b, L, 0);
    lsim_gb_set_release(b, rr, 3);
    lsim_gb_edge(b, L, Y, LSIM_E_CPU_THREAD, 1);
    lsim_gb_edge(b, L, K, LSIM_E_LAUNCH, 6);
    lsim_gb_edge(b, K, Y, LSIM_E_SYNC | LSIM_EDGE_END, 2);
    lsim_gb_edge(b, rr, x, LSIM_E_LAUNCH, 2);
    lsim_gb_edge(b, rr, y, LSIM_E_LAUNCH, 20);
    lsim_gb_edge(b, x, j, LSIM_E_STREAM, 1);
    lsim_gb_edge(b, y, j, LSIM_E_EVENT, 0);
    if (simulate(b, &r, &err)) {
        CHECK_MSG(0, "drain: %s", err.msg);
        run_free(&r);
        return;
    }
    size_t n = r.g->n;
    lsim_ns S[8], E[8];
    int64_t bs[8], be[8];
    memcpy(S, r.S, n * sizeof *S);
    memcpy(E, r.E, n * sizeof *E);
    memcpy(bs, r.bs, n * sizeof *bs);
    memcpy(be, r.be, n * sizeof *be);
    /* by hand: Y [5,62) as in end_edges; r [3,13), x [15,45), y [33,38),
     * j at max(45 + 1, 38 + 0) = 46 */
    CHECK_SPAN(&r, Y, 5, 62);
    CHECK_SPAN(&r, j, 46, 47);
    int32_t inst[8];
    for (size_t v = 0; v < n; v++) inst[v] = -1;
    lsim_engine_reset(r.e);
    uint32_t *stack = lsim_engine_scratch(r.e);
    size_t top = 0;
    for (uint32_t v = 0; v < n; v++)
        if (r.g->in_off[v + 1] == r.g->in_off[v]) {
            lsim_engine_resolve(r.e, v);
            stack[top++] = v;
        }
    int rc = 0;
    CHECK_I64(lsim_engine_drain(r.e, &top, inst, never, NULL, &rc), n);
    CHECK_I64(rc, 0);
    CHECK_I64(top, 0);
    CHECK_I64(lsim_engine_events(r.e), n);
    CHECK(!memcmp(S, r.S, n * sizeof *S) && !memcmp(E, r.E, n * sizeof *E));
    CHECK(!memcmp(bs, r.bs, n * sizeof *bs) && !memcmp(be, r.be, n * sizeof *be));
    run_free(&r);
}

/* SM edges (graph.h LSIM_EDGE_SM, sched_sm_hold): a kernel ready at s
 * while a kernel u that fills the GPU runs (start(u) <= s < end(u) +
 * delay) starts at end(u) + delay; otherwise the edge does nothing.
 *   u  (s1, release 100, 400): [100,500), last wave from 500 - 100 = 400
 *   u2 (s3, release 300, 400): [300,700), last wave from 700 - 200 = 500
 *   v  (release 150, 10; SM edge from u): held to 400 -> [400,410)
 *   w  (release 50): ready before u starts -> [50,60), not held
 *   x  (release 450): u is in its last wave -> [450,460), not held
 *   c  (release 150; SM edges from u2, then u): u holds it to 400, where
 *      u2 (started at 300) holds it to 500 -> [500,510), decided by u2's
 *      edge, though it comes first in the CSR (the edges are tried again
 *      until none moves the start).
 * Then the drain, in its own order, must give the same times and edges. */
static void sm_edges(void)
{
    uint32_t T, s1, s2, s3, u, u2, v, w, x, c;
    lsim_err err;
    run r;
    lsim_gbuilder *b = builder("sm", &T, &s1, &s2);
    lsim_gb_proc(b, 1, 0, 9, &s3);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s1, "u", 400, &u);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s3, "u2", 400, &u2);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s2, "v", 10, &v);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s2, "w", 10, &w);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s2, "x", 10, &x);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s2, "c", 10, &c);
    const lsim_ns rel[6] = {100, 300, 150, 50, 450, 150};
    for (uint32_t i = 0; i < 6; i++) lsim_gb_set_release(b, i, rel[i]);
    const unsigned SM = LSIM_E_INFERRED | LSIM_EDGE_SM;
    lsim_gb_edge(b, u, v, SM, -100);
    lsim_gb_edge(b, u, w, SM, -100);
    lsim_gb_edge(b, u, x, SM, -100);
    lsim_gb_edge(b, u2, c, SM, -200);
    lsim_gb_edge(b, u, c, SM, -100);
    if (simulate(b, &r, &err)) {
        CHECK_MSG(0, "sm: %s", err.msg);
        run_free(&r);
        return;
    }
    CHECK_SPAN(&r, u, 100, 500);
    CHECK_SPAN(&r, u2, 300, 700);
    CHECK_SPAN(&r, v, 400, 410);
    CHECK_I64(r.bs[v], edge_from(r.g, u, v));
    CHECK_SPAN(&r, w, 50, 60);
    CHECK_I64(r.bs[w], -1);
    CHECK_SPAN(&r, x, 450, 460);
    CHECK_I64(r.bs[x], -1);
    CHECK_SPAN(&r, c, 500, 510);
    CHECK_I64(r.bs[c], edge_from(r.g, u2, c));
    /* the drain: every node with an SM edge resolved after its sources, in
     * stack order, not time order */
    size_t n = r.g->n;
    lsim_ns S[6], E[6];
    int64_t bs[6];
    memcpy(S, r.S, n * sizeof *S);
    memcpy(E, r.E, n * sizeof *E);
    memcpy(bs, r.bs, n * sizeof *bs);
    int32_t inst[6];
    for (size_t k = 0; k < n; k++) inst[k] = -1;
    lsim_engine_reset(r.e);
    uint32_t *stack = lsim_engine_scratch(r.e);
    size_t top = 0;
    for (uint32_t k = 0; k < n; k++)
        if (r.g->in_off[k + 1] == r.g->in_off[k]) {
            lsim_engine_resolve(r.e, k);
            stack[top++] = k;
        }
    int rc = 0;
    CHECK_I64(lsim_engine_drain(r.e, &top, inst, never, NULL, &rc), n);
    CHECK_I64(rc, 0);
    CHECK(!memcmp(S, r.S, n * sizeof *S) && !memcmp(E, r.E, n * sizeof *E) && !memcmp(bs, r.bs, n * sizeof *bs));
    run_free(&r);
}

int main(void)
{
    chain();
    fork_join();
    end_edges();
    releases();
    cycle();
    heap_order();
    ablation();
    drain_equals_run();
    sm_edges();
    return check_result("test_engine_hand");
}
