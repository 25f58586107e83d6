/* Known answers for the model's core, none produced by the code under test.
 *
 * 1. The breakdown, window, iterations and duty cycle of lsim_metrics_compute
 *    against oracle.h (interval unions, intersections and differences, an
 *    independent method) on a hand-worked graph whose figures are written
 *    out below, and on 400 random graphs (touching and zero-length intervals,
 *    unobserved nodes, waits beyond a collective's length, two iterations).
 * 2. The engine (Lumos Algorithm 1 with end-edges) on a hand-built graph:
 *    every node's start, end and deciding edges worked out by hand, ties
 *    (two edges; an edge and a release), a negative delay, a non-binding
 *    end-edge, a root without release.
 * 3. The critical path of a hand-built graph: its nodes and its split into
 *    categories, node kinds and edge classes.
 * 4. A job via the job API: three GPUs, two collectives on one group, then
 *    the same job observed on three skewed clocks (offsets, transfers and
 *    observed waits by hand), and a send/recv pair.
 * 5. Hand-written Kineto traces through the reader and the graph build,
 *    each built so that the latency model's answer is known: five
 *    idle-stream launches with one latency and a ProfilerStep (the modelled
 *    replay must be exact), a record/wait pair (one event edge, honoured),
 *    three queued kernels (stream order), ten queued kernels 1 us apart (the
 *    queued-op gap) and a dependency the trace does not state (one hidden
 *    edge); the last three replay exactly too. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "oracle_report.h"

#include "lumosim/critical.h"
#include "lumosim/engine.h"
#include "lumosim/job.h"
#include "lumosim/metrics.h"
#include "lumosim/synth.h"
#include "lumosim/trace.h"

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    /* xorshift64*: fixed seed, so every run checks the same graphs */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

static const char *node_name(const lsim_graph *g, uint32_t v) { return lsim_strtab_get(g->strings, g->name[v]); }

static uint32_t find_node(const lsim_graph *g, const char *name)
{
    for (size_t v = 0; v < g->n; v++)
        if (!strcmp(node_name(g, (uint32_t)v), name)) return (uint32_t)v;
    return UINT32_MAX;
}

/* the CSR index of the in-edge src -> v of class cls (-1 none) */
static int64_t edge_index(const lsim_graph *g, uint32_t src, uint32_t v, unsigned cls)
{
    for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
        if (g->in_src[k] == src && g->in_class[k] == cls) return (int64_t)k;
    return -1;
}

/* ------------------------------------------------------- 0. the oracle */

static void oracle_self_test(void)
{
    or_set a = {0}, b = {0}, u = {0}, x = {0}, d = {0};
    or_push(&a, 0, 5);
    or_push(&a, 3, 8);
    or_push(&a, 10, 12);
    or_push(&a, 12, 13); /* touches: merges */
    or_push(&b, 2, 4);
    or_push(&b, 6, 11);
    or_normalize(&a, 0, 100);
    or_normalize(&b, 0, 100);
    CHECK_I64(a.n, 2); /* [0,8) [10,13) */
    CHECK_I64(or_measure(&a), 11);
    CHECK(or_intersect(&a, &b, &x) == 0);
    CHECK_I64(or_measure(&x), 2 + 2 + 1); /* [2,4) [6,8) [10,11) */
    CHECK(or_subtract(&a, &b, &d) == 0);
    CHECK_I64(or_measure(&d), 2 + 2 + 2); /* [0,2) [4,6) [11,13) */
    CHECK(or_union(&a, &b, &u, 0, 100) == 0);
    CHECK_I64(or_measure(&u), 13); /* [0,13) */
    or_normalize(&a, 1, 11); /* clipped */
    CHECK_I64(or_measure(&a), 7 + 1);
    or_free(&a);
    or_free(&b);
    or_free(&u);
    or_free(&x);
    or_free(&d);
}

/* ------------------------------------- 1. breakdown against the oracle */

/* CPU thread [0, 53) observed, [0, 60) predicted; compute k1, k2 on one
 * stream, collective c1 on another:
 *
 *            observed          predicted
 *   k1       [0, 10)           [0, 12)
 *   k2       [20, 34)          [30, 40)
 *   c1       [6, 24)           [5, 35), of which [5, 15) waiting
 *
 * observed: C = [0,10) u [20,34) (24), M = [6,24) (18), C n M = [6,10) u
 *   [20,24) (8): exposed compute 16, overlapped 8, exposed comm 10, other
 *   53 - |[0,34)| = 19.
 * predicted: C = [0,12) u [30,40) (22), M = [5,35) (30), C n M = [5,12) u
 *   [30,35) (12): exposed compute 10, overlapped 12, exposed comm 18, other
 *   60 - 40 = 20; waiting with nothing else running: [12,15) = 3.
 * duty, 25 ns bins: observed [0,25) 25/25, [25,50) 9/25, [50,53) 0/3;
 *   predicted [0,25) 1, [25,50) 15/25, [50,60) 0. */
static void breakdown_hand(void)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t cpu, s1, s2, n_cpu, k1, k2, c1;
    if (lsim_gb_new("hand", 0, 1, &b, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    lsim_gb_proc(b, 0, 1, 1, &cpu);
    lsim_gb_proc(b, 1, 0, 7, &s1);
    lsim_gb_proc(b, 1, 0, 8, &s2);
    lsim_gb_iteration(b, "ProfilerStep#1");
    lsim_gb_node(b, LSIM_N_CPU, 0, cpu, "cpu", 53, &n_cpu);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s1, "k1", 10, &k1);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, s1, "k2", 14, &k2);
    lsim_gb_node(b, LSIM_N_KERNEL, LSIM_NF_COLL, s2, "c1", 18, &c1);
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    lsim_ns os[4] = {0, 0, 20, 6}, oe[4] = {53, 10, 34, 24};
    lsim_ns S[4] = {0, 0, 30, 5}, E[4] = {60, 12, 40, 35}, pw[4] = {0, 0, 0, 10};
    memcpy(g->obs_start, os, sizeof os);
    memcpy(g->obs_end, oe, sizeof oe);
    lsim_rank_report m;
    if (lsim_metrics_compute_ex(g, S, E, 25, NULL, pw, &m, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        lsim_graph_free(g);
        return;
    }
    CHECK_I64(m.window_actual, 53);
    CHECK_I64(m.window_predicted, 60);
    CHECK_I64(m.bd_actual.exposed_compute, 16);
    CHECK_I64(m.bd_actual.overlapped, 8);
    CHECK_I64(m.bd_actual.exposed_comm, 10);
    CHECK_I64(m.bd_actual.other, 19);
    CHECK_I64(m.bd_actual.exposed_comm_wait, 0);
    CHECK_I64(m.bd_predicted.exposed_compute, 10);
    CHECK_I64(m.bd_predicted.overlapped, 12);
    CHECK_I64(m.bd_predicted.exposed_comm, 18);
    CHECK_I64(m.bd_predicted.other, 20);
    CHECK_I64(m.bd_predicted.exposed_comm_wait, 3);
    CHECK_I64(m.niters, 1);
    if (m.niters == 1) {
        CHECK_I64(m.iters[0].actual, 53);
        CHECK_I64(m.iters[0].predicted, 60);
        CHECK_I64(m.iters[0].bd_actual.exposed_comm, 10);
        CHECK_I64(m.iters[0].bd_predicted.overlapped, 12);
        CHECK_I64(m.iters[0].bd_predicted.exposed_comm_wait, 3);
        CHECK_I64(m.iters[0].cpu_actual, 53); /* the CPU node's span */
        CHECK_I64(m.iters[0].cpu_predicted, 60);
    }
    CHECK_I64(m.nbins_actual, 3);
    CHECK_I64(m.nbins_predicted, 3);
    if (m.nbins_actual == 3 && m.nbins_predicted == 3) {
        CHECK(m.duty_actual[0] == 1.0 && m.duty_actual[1] == 9.0 / 25 && m.duty_actual[2] == 0.0);
        CHECK(m.duty_predicted[0] == 1.0 && m.duty_predicted[1] == 15.0 / 25 && m.duty_predicted[2] == 0.0);
    }
    /* the oracle gives the same hand-worked figures */
    ref_report r;
    CHECK(ref_compute(g, S, E, 25, NULL, pw, &r) == 0);
    CHECK_I64(r.bd[0].exposed_compute, 16);
    CHECK_I64(r.bd[1].exposed_comm, 18);
    CHECK_I64(r.bd[1].exposed_comm_wait, 3);
    compare_report("hand", &m, &r);
    ref_free(&r);
    lsim_rank_report_clear(&m);
    lsim_graph_free(g);
}

/* Three ProfilerSteps on one CPU thread and three streams, every figure
 * worked out by hand (ns; step -1: in no step):
 *
 *   node  step  where            observed     predicted   |start err|
 *   c0     0    CPU              [0, 10)      [0, 12)      0
 *   c1     1    CPU              [40, 50)     [45, 52)     5
 *   c2     2    CPU              [80, 90)     [70, 75)    10
 *   c3    -1    CPU              [110, 115)   [90, 96)    20
 *   pw    -1    stream B         [1, 4)       [2, 5)       1
 *   g0a    0    stream A         [5, 30)      [6, 33)      1
 *   g0b    0    stream B, coll   [20, 45)     [22, 50)     2
 *   g1a    1    stream A         [50, 70)     [60, 64)    10
 *   g2a    2    stream C         [95, 120)    [58, 100)   37
 *
 * Windows: observed [0, 120) = 120, predicted [0, 100) = 100.
 * First GPU start per step: observed 5, 50, 95; predicted 6, 60, 58.
 * Partition, observed: b = 0, min(50, 95) = 50, min(95, 120) = 95, 120:
 *   rows 50, 45, 25 (sum 120). Predicted: b3 = 100, b2 = min(58, 100) = 58,
 *   b1 = min(60, 58) = 58 (step 2's GPU work started first), b0 = 0: rows
 *   58, 0, 42 (sum 100).
 * CPU spans: observed 10, 10, 10; predicted 12, 7, 5.
 * Breakdown of observed row 0 [0, 50): C = [1,4) u [5,30) = 28, M = [20,45)
 *   = 25, C n M = [20,30) = 10: compute 18, overlapped 10, comm 15, other
 *   50 - |[1,4) u [5,45)| = 50 - 43 = 7. Row 1 [50, 95): compute 20, other
 *   25. Row 2 [95, 120): compute 25, other 0.
 * Predicted row 0 [0, 58): C = [2,5) u [6,33) = 30, M = [22,50) = 28,
 *   C n M = [22,33) = 11: compute 19, overlapped 11, comm 17, other
 *   58 - (3 + 44) = 11. Row 1: all 0. Row 2 [58, 100): compute 42.
 * Start errors, GPU: 1 1 2 10 37 (n 5): median rank ceil(2.5) = 3 -> 2,
 *   p90 rank ceil(4.5) = 5 -> 37, max 37. CPU: 0 5 10 20 (n 4): median rank
 *   2 -> 5 (not the average 7.5), p90 rank ceil(3.6) = 4 -> 20, max 20.
 * Duty, 10 ns bins, observed (12 bins) .8 1 1 1 .5 1 1 0 0 .5 1 1,
 *   predicted (10 bins) .7 1 1 1 1 .2 1 1 1 1: |differences| .1 0 0 0 .5 .8
 *   0 1 1 .5 and 1 1 for the two bins past the predicted window: 5.9 / 12. */
static void iterations_hand(void)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t cpu, sa, sb, sc, id[9];
    if (lsim_gb_new("steps", 0, 1, &b, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    lsim_gb_proc(b, 0, 1, 1, &cpu);
    lsim_gb_proc(b, 1, 0, 7, &sa);
    lsim_gb_proc(b, 1, 0, 8, &sb);
    lsim_gb_proc(b, 1, 0, 9, &sc);
    lsim_gb_iteration(b, "ProfilerStep#0");
    const char *nm[9] = {"c0", "c1", "c2", "c3", "pw", "g0a", "g0b", "g1a", "g2a"};
    uint32_t pr[9] = {cpu, cpu, cpu, cpu, sb, sa, sb, sa, sc};
    int32_t step[9] = {0, 1, 2, -1, -1, 0, 0, 1, 2};
    lsim_ns os[9] = {0, 40, 80, 110, 1, 5, 20, 50, 95}, oe[9] = {10, 50, 90, 115, 4, 30, 45, 70, 120};
    lsim_ns S[9] = {0, 45, 70, 90, 2, 6, 22, 60, 58}, E[9] = {12, 52, 75, 96, 5, 33, 50, 64, 100};
    for (int k = 0; k < 9; k++)
        lsim_gb_node(b, pr[k] == cpu ? LSIM_N_CPU : LSIM_N_KERNEL, k == 6 ? LSIM_NF_COLL : 0, pr[k], nm[k], oe[k] - os[k],
                     &id[k]);
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    /* the builder makes one iteration: make it three, by hand */
    lsim_iter *its = realloc(g->iters, 3 * sizeof *its);
    if (!its) {
        CHECK_MSG(0, "out of memory");
        lsim_graph_free(g);
        return;
    }
    g->iters = its;
    g->niters = 3;
    its[1] = its[2] = its[0];
    for (int k = 0; k < 9; k++) {
        g->obs_start[id[k]] = os[k];
        g->obs_end[id[k]] = oe[k];
        g->iter[id[k]] = step[k];
    }
    lsim_ns Sv[9], Ev[9];
    for (int k = 0; k < 9; k++) Sv[id[k]] = S[k], Ev[id[k]] = E[k];
    lsim_rank_report m;
    if (lsim_metrics_compute_ex(g, Sv, Ev, 10, NULL, NULL, &m, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        lsim_graph_free(g);
        return;
    }
    CHECK_I64(m.window_actual, 120);
    CHECK_I64(m.window_predicted, 100);
    CHECK_I64(m.niters, 3);
    if (m.niters == 3) {
        lsim_ns ra[3] = {50, 45, 25}, rp[3] = {58, 0, 42}, ca[3] = {10, 10, 10}, cp[3] = {12, 7, 5};
        for (int i = 0; i < 3; i++) {
            CHECK_I64(m.iters[i].actual, ra[i]);
            CHECK_I64(m.iters[i].predicted, rp[i]);
            CHECK_I64(m.iters[i].cpu_actual, ca[i]);
            CHECK_I64(m.iters[i].cpu_predicted, cp[i]);
        }
        const lsim_breakdown *a = &m.iters[0].bd_actual, *p = &m.iters[0].bd_predicted;
        CHECK_I64(a->exposed_compute, 18);
        CHECK_I64(a->overlapped, 10);
        CHECK_I64(a->exposed_comm, 15);
        CHECK_I64(a->other, 7);
        CHECK_I64(m.iters[1].bd_actual.exposed_compute, 20);
        CHECK_I64(m.iters[1].bd_actual.other, 25);
        CHECK_I64(m.iters[2].bd_actual.exposed_compute, 25);
        CHECK_I64(m.iters[2].bd_actual.other, 0);
        CHECK_I64(p->exposed_compute, 19);
        CHECK_I64(p->overlapped, 11);
        CHECK_I64(p->exposed_comm, 17);
        CHECK_I64(p->other, 11);
        CHECK_I64(m.iters[1].bd_predicted.exposed_compute + m.iters[1].bd_predicted.other, 0);
        CHECK_I64(m.iters[2].bd_predicted.exposed_compute, 42);
        CHECK_I64(m.iters[2].bd_predicted.other, 0);
    }
    CHECK_I64(m.bd_actual.exposed_compute, 63);
    CHECK_I64(m.bd_actual.other, 32);
    CHECK_I64(m.bd_predicted.exposed_compute, 61);
    CHECK_I64(m.bd_predicted.other, 11);
    CHECK_I64(m.has_fidelity, 1);
    CHECK_I64((int64_t)m.start_err_gpu.n, 5);
    CHECK_I64(m.start_err_gpu.median, 2);
    CHECK_I64(m.start_err_gpu.p90, 37);
    CHECK_I64(m.start_err_gpu.max, 37);
    CHECK_I64((int64_t)m.start_err_cpu.n, 4);
    CHECK_I64(m.start_err_cpu.median, 5);
    CHECK_I64(m.start_err_cpu.p90, 20);
    CHECK_I64(m.start_err_cpu.max, 20);
    CHECK_MSG(m.duty_abs_diff - 5.9 / 12 < 1e-12 && 5.9 / 12 - m.duty_abs_diff < 1e-12, "duty difference %.15f, want 5.9 / 12", m.duty_abs_diff);
    ref_report r;
    CHECK(ref_compute(g, Sv, Ev, 10, NULL, NULL, &r) == 0);
    compare_report("steps", &m, &r);
    ref_free(&r);
    lsim_rank_report_clear(&m);
    /* a synthesized graph (nothing observed): no fidelity, predicted rows
     * still partition the predicted window */
    for (int k = 0; k < 9; k++) g->obs_start[id[k]] = g->obs_end[id[k]] = LSIM_OBS_NONE;
    if (lsim_metrics_compute_ex(g, Sv, Ev, 10, NULL, NULL, &m, &err) == 0) {
        CHECK_I64(m.has_fidelity, 0);
        CHECK_I64((int64_t)m.start_err_gpu.n, 0);
        CHECK_I64(m.window_actual, 0);
        if (m.niters == 3) {
            CHECK_I64(m.iters[0].predicted + m.iters[1].predicted + m.iters[2].predicted, 100);
            CHECK_I64(m.iters[1].predicted, 0);
            CHECK_I64(m.iters[0].actual + m.iters[1].actual + m.iters[2].actual, 0);
        }
    } else {
        CHECK_MSG(0, "%s", err.msg);
    }
    lsim_rank_report_clear(&m);
    lsim_graph_free(g);
}

/* Random graphs: one CPU thread, three streams, a mix of compute and
 * collectives on a small time grid (so that intervals touch and tie), some
 * nodes unobserved, two iterations plus nodes in none. */
static void breakdown_random(void)
{
    int failed = 0;
    for (int round = 0; round < 400 && failed < 3; round++) {
        lsim_gbuilder *b;
        lsim_err err;
        uint32_t procs[4];
        if (lsim_gb_new("random", 0, 1, &b, &err)) {
            CHECK_MSG(0, "%s", err.msg);
            return;
        }
        lsim_gb_proc(b, 0, 1, 1, &procs[0]);
        for (int s = 1; s < 4; s++) lsim_gb_proc(b, 1, 0, 6 + s, &procs[s]);
        lsim_gb_iteration(b, "ProfilerStep#1");
        int n = (int)rnd_in(1, round < 50 ? 5 : 60);
        for (int v = 0; v < n; v++) {
            uint32_t p = (uint32_t)rnd_in(0, 3), id;
            uint8_t fl = p > 0 && rnd() % 5 < 2 ? LSIM_NF_COLL : 0;
            lsim_gb_node(b, p ? LSIM_N_KERNEL : LSIM_N_CPU, fl, procs[p], "n", 1, &id);
        }
        lsim_graph *g = NULL;
        if (lsim_gb_finish(b, &g, &err)) {
            CHECK_MSG(0, "%s", err.msg);
            return;
        }
        /* a second iteration: the graph owns iters, a plain malloc'd array */
        lsim_iter *it = realloc(g->iters, 2 * sizeof *it);
        if (!it) {
            lsim_graph_free(g);
            return;
        }
        g->iters = it;
        g->iters[1] = g->iters[0];
        g->niters = 2;
        lsim_ns *S = malloc((size_t)n * sizeof *S), *E = malloc((size_t)n * sizeof *E);
        lsim_ns *ow = malloc((size_t)n * sizeof *ow), *pw = malloc((size_t)n * sizeof *pw);
        if (!S || !E || !ow || !pw) {
            free(S), free(E), free(ow), free(pw);
            lsim_graph_free(g);
            return;
        }
        lsim_ns grid = rnd_in(1, 50);
        for (int v = 0; v < n; v++) {
            lsim_ns a = grid * rnd_in(0, 40), len = grid * rnd_in(0, 8);
            g->obs_start[v] = a;
            g->obs_end[v] = a + len;
            if (rnd() % 7 == 0) g->obs_start[v] = g->obs_end[v] = LSIM_OBS_NONE;
            a = grid * rnd_in(0, 40) + rnd_in(-3, 3);
            len = grid * rnd_in(0, 8);
            S[v] = a;
            E[v] = a + len;
            ow[v] = rnd_in(-20, 2 * len + 20);
            pw[v] = rnd_in(-20, 2 * len + 20);
            g->iter[v] = (int32_t)rnd_in(-1, 1);
        }
        lsim_ns bin = rnd_in(1, 400);
        int with_waits = round % 3 != 0;
        lsim_rank_report m;
        ref_report r;
        char what[64];
        snprintf(what, sizeof what, "random graph %d (%d nodes, bin %lld)", round, n, (long long)bin);
        if (lsim_metrics_compute_ex(g, S, E, bin, with_waits ? ow : NULL, with_waits ? pw : NULL, &m, &err)) {
            CHECK_MSG(0, "%s: %s", what, err.msg);
            failed++;
        } else {
            if (ref_compute(g, S, E, bin, with_waits ? ow : NULL, with_waits ? pw : NULL, &r)) {
                CHECK_MSG(0, "%s: oracle out of memory", what);
            } else {
                if (compare_report(what, &m, &r)) failed++;
                ref_free(&r);
            }
            lsim_rank_report_clear(&m);
        }
        free(S), free(E), free(ow), free(pw);
        lsim_graph_free(g);
    }
}

/* ------------------------------------------------------ 2. the engine */

/* One thread T (a b c d e q), streams S1 (k1 k2 m), S2 (f h), S3 (z):
 *
 *   a  CPU      release 100, dur 10                  -> [100, 110)
 *   b  CPU      a -cpu 3->                    dur 5  -> [113, 118)
 *   k1 kernel   a -launch 7->                 dur 50 -> [117, 167)
 *   k2 kernel   b -launch 7-> (125), k1 -stream 1-> (168), dur 20
 *                                                    -> [168, 188), by the stream edge
 *   c  sync     b -cpu 0-> (118), dur 2, end-edge k2 -sync 4-> (192)
 *                                                    -> [118, 192), end by the end-edge
 *   d  CPU      c -cpu 0->                    dur 10 -> [192, 202)
 *   e  CPU      d -cpu 0-> (202), release 500, dur 1 -> [500, 501), by the release
 *   f  kernel   d -launch 6-> (208) and k2 -event 20-> (208): a tie, the
 *               first edge in CSR order decides; dur 30 -> [208, 238)
 *   h  kernel   f -stream 0-> (238) and release 238: the edge decides; dur 5
 *                                                    -> [238, 243)
 *   m  kernel   k2 -stream -8-> (an observed overlap) dur 40 -> [180, 220)
 *   q  sync     e -cpu 0-> (501), dur 100, end-edge m -sync 300-> (520):
 *               inside q's own span, does not bind  -> [501, 601)
 *   z  kernel   no edges, no release: starts at t0 = 0, dur 9 -> [0, 9) */
static lsim_graph *engine_graph(void)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t T, S1, S2, S3, a, bb, k1, k2, c, d, e, f, h, m, q, z;
    if (lsim_gb_new("engine", 0, 1, &b, &err)) return NULL;
    lsim_gb_proc(b, 0, 1, 1, &T);
    lsim_gb_proc(b, 1, 0, 7, &S1);
    lsim_gb_proc(b, 1, 0, 8, &S2);
    lsim_gb_proc(b, 1, 0, 9, &S3);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "a", 10, &a);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "b", 5, &bb);
    lsim_gb_node(b, LSIM_N_RUNTIME, LSIM_NF_BLOCKING, T, "c", 2, &c);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "d", 10, &d);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "e", 1, &e);
    lsim_gb_node(b, LSIM_N_RUNTIME, LSIM_NF_BLOCKING, T, "q", 100, &q);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S1, "k1", 50, &k1);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S1, "k2", 20, &k2);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S1, "m", 40, &m);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S2, "f", 30, &f);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S2, "h", 5, &h);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S3, "z", 9, &z);
    lsim_gb_set_release(b, a, 100);
    lsim_gb_set_release(b, e, 500);
    lsim_gb_set_release(b, h, 238);
    lsim_gb_edge(b, a, bb, LSIM_E_CPU_THREAD, 3);
    lsim_gb_edge(b, a, k1, LSIM_E_LAUNCH, 7);
    lsim_gb_edge(b, bb, k2, LSIM_E_LAUNCH, 7);
    lsim_gb_edge(b, k1, k2, LSIM_E_STREAM, 1);
    lsim_gb_edge(b, bb, c, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, k2, c, LSIM_E_SYNC | LSIM_EDGE_END, 4);
    lsim_gb_edge(b, c, d, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, d, e, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, d, f, LSIM_E_LAUNCH, 6);
    lsim_gb_edge(b, k2, f, LSIM_E_EVENT, 20);
    lsim_gb_edge(b, f, h, LSIM_E_STREAM, 0);
    lsim_gb_edge(b, k2, m, LSIM_E_STREAM, -8);
    lsim_gb_edge(b, e, q, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, m, q, LSIM_E_SYNC | LSIM_EDGE_END, 300);
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) return NULL;
    return g;
}

static const struct {
    const char *name;
    lsim_ns start, end;
    const char *bind_start; /* source of the deciding start edge, "" release/t0 */
    const char *bind_end;   /* source of the deciding end-edge, "" none */
} ENGINE_WANT[] = {
    {"a", 100, 110, "", ""},    {"b", 113, 118, "a", ""},  {"k1", 117, 167, "a", ""}, {"k2", 168, 188, "k1", ""},
    {"c", 118, 192, "b", "k2"}, {"d", 192, 202, "c", ""},  {"e", 500, 501, "", ""},   {"f", 208, 238, "d", ""},
    {"h", 238, 243, "f", ""},   {"m", 180, 220, "k2", ""}, {"q", 501, 601, "e", ""},  {"z", 0, 9, "", ""},
};

static void check_engine_results(const lsim_graph *g, const lsim_ns *S, const lsim_ns *E, const int64_t *bs,
                                 const int64_t *be, const char *driver)
{
    for (size_t i = 0; i < sizeof ENGINE_WANT / sizeof *ENGINE_WANT; i++) {
        uint32_t v = find_node(g, ENGINE_WANT[i].name);
        if (v == UINT32_MAX) {
            CHECK_MSG(0, "node %s missing", ENGINE_WANT[i].name);
            continue;
        }
        CHECK_MSG(S[v] == ENGINE_WANT[i].start && E[v] == ENGINE_WANT[i].end, "%s: %s runs [%lld, %lld), want [%lld, %lld)",
                  driver, ENGINE_WANT[i].name, (long long)S[v], (long long)E[v], (long long)ENGINE_WANT[i].start,
                  (long long)ENGINE_WANT[i].end);
        if (!bs) continue;
        const char *ws = ENGINE_WANT[i].bind_start, *we = ENGINE_WANT[i].bind_end;
        CHECK_MSG(*ws ? bs[v] >= 0 && !strcmp(node_name(g, g->in_src[bs[v]]), ws) : bs[v] == -1,
                  "%s: %s's start decided by edge %lld, want from '%s'", driver, ENGINE_WANT[i].name, (long long)bs[v], ws);
        CHECK_MSG(*we ? be[v] >= 0 && !strcmp(node_name(g, g->in_src[be[v]]), we) : be[v] == -1,
                  "%s: %s's end decided by edge %lld, want from '%s'", driver, ENGINE_WANT[i].name, (long long)be[v], we);
    }
    /* the tie at f goes to the first edge in CSR order, the launch from d */
    uint32_t f = find_node(g, "f");
    if (f != UINT32_MAX && bs) CHECK_I64(bs[f], edge_index(g, find_node(g, "d"), f, LSIM_E_LAUNCH));
    if (f != UINT32_MAX) CHECK_I64(edge_index(g, find_node(g, "d"), f, LSIM_E_LAUNCH), (int64_t)g->in_off[f]);
}

static void engine_hand(void)
{
    lsim_graph *g = engine_graph();
    lsim_err err;
    CHECK(g != NULL);
    if (!g) return;
    lsim_engine *e = NULL;
    if (lsim_engine_new(g, &e, &err) || lsim_engine_run(e, &err)) {
        CHECK_MSG(0, "engine: %s", err.msg);
        lsim_engine_free(e);
        lsim_graph_free(g);
        return;
    }
    CHECK_I64(lsim_engine_events(e), g->n);
    check_engine_results(g, lsim_engine_start(e), lsim_engine_end(e), lsim_engine_bind_start(e), lsim_engine_bind_end(e),
                         "engine");
    /* the same graph through the job driver (one GPU, no collectives) */
    lsim_graph *gs[1] = {g};
    lsim_job *j = NULL;
    if (lsim_job_match(gs, 1, &j, &err) || lsim_job_run(j, &e, NULL, &err)) {
        CHECK_MSG(0, "job: %s", err.msg);
    } else {
        CHECK_I64(j->ninst, 0);
        check_engine_results(g, lsim_engine_start(e), lsim_engine_end(e), lsim_engine_bind_start(e),
                             lsim_engine_bind_end(e), "job driver");
    }
    lsim_job_free(j);
    lsim_engine_free(e);
    lsim_graph_free(g);
}

/* ------------------------------------------------- 3. critical path */

/* Thread T: a (CPU, release 0, 10), L (launch call, 2), Y (blocking call,
 * 50), b2 (CPU, 5); K (kernel on S1, 80) launched by L with latency 8; C (a
 * collective on S2, 15) after K by an event edge of 2; Y waits for K and
 * for C (end-edges of 5); a side thread W runs [0, 1000) and launches
 * nothing.
 *   a [0,10)  L [10,12)  K [20,100)  C [102,117)  Y [12,122)  b2 [122,127)
 * The path is a L K C Y b2, 127 ns: CPU 10 + 2 + 5 = 17, launch latency 8,
 * GPU compute 80, communication 15, waiting 2 (event) + 5 (Y after C) = 7;
 * W does not end it. */
static void critical_hand(void)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t T, W, S1, S2, a, L, Y, b2, K, C, w;
    if (lsim_gb_new("critical", 0, 1, &b, &err)) return;
    lsim_gb_proc(b, 0, 1, 1, &T);
    lsim_gb_proc(b, 0, 1, 2, &W);
    lsim_gb_proc(b, 1, 0, 7, &S1);
    lsim_gb_proc(b, 1, 0, 8, &S2);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "a", 10, &a);
    lsim_gb_node(b, LSIM_N_RUNTIME, 0, T, "L", 2, &L);
    lsim_gb_node(b, LSIM_N_RUNTIME, LSIM_NF_BLOCKING, T, "Y", 50, &Y);
    lsim_gb_node(b, LSIM_N_CPU, 0, T, "b2", 5, &b2);
    lsim_gb_node(b, LSIM_N_CPU, 0, W, "w", 1000, &w);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S1, "K", 80, &K);
    lsim_gb_node(b, LSIM_N_KERNEL, LSIM_NF_COLL, S2, "C", 15, &C);
    lsim_gb_set_release(b, a, 0);
    lsim_gb_set_release(b, w, 0);
    lsim_gb_edge(b, a, L, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, L, Y, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, Y, b2, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, L, K, LSIM_E_LAUNCH, 8);
    lsim_gb_edge(b, K, C, LSIM_E_EVENT, 2);
    lsim_gb_edge(b, K, Y, LSIM_E_SYNC | LSIM_EDGE_END, 5);
    lsim_gb_edge(b, C, Y, LSIM_E_SYNC | LSIM_EDGE_END, 5);
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    lsim_engine *e = NULL;
    lsim_critical_path cp;
    memset(&cp, 0, sizeof cp);
    if (lsim_engine_new(g, &e, &err) || lsim_engine_run(e, &err) || lsim_critical_path_compute(g, e, &cp, &err)) {
        CHECK_MSG(0, "%s", err.msg);
    } else {
        const char *want[] = {"a", "L", "K", "C", "Y", "b2"};
        CHECK_I64(cp.n, 6);
        for (size_t i = 0; i < cp.n && i < 6; i++)
            CHECK_MSG(!strcmp(node_name(g, cp.nodes[i]), want[i]), "path node %zu is %s, want %s", i,
                      node_name(g, cp.nodes[i]), want[i]);
        CHECK_I64(cp.start, 0);
        CHECK_I64(cp.end, 127);
        CHECK_I64(cp.length, 127);
        CHECK_I64(cp.by_cat[LSIM_CP_CPU], 17);
        CHECK_I64(cp.by_cat[LSIM_CP_CPU_GAP], 0);
        CHECK_I64(cp.by_cat[LSIM_CP_LAUNCH], 8);
        CHECK_I64(cp.by_cat[LSIM_CP_GPU_COMPUTE], 80);
        CHECK_I64(cp.by_cat[LSIM_CP_COMM], 15);
        CHECK_I64(cp.by_cat[LSIM_CP_WAIT], 7);
        CHECK_I64(cp.by_cat[LSIM_CP_OTHER], 0);
        CHECK_I64(cp.by_kind[LSIM_N_KERNEL], 95);
        CHECK_I64(cp.by_kind[LSIM_N_CPU], 15);
        CHECK_I64(cp.by_kind[LSIM_N_RUNTIME], 2);
        CHECK_I64(cp.by_class[LSIM_E_LAUNCH], 8);
        CHECK_I64(cp.by_class[LSIM_E_EVENT], 2);
        CHECK_I64(cp.by_class[LSIM_E_SYNC], 5);
        CHECK_I64(cp.edges_by_class[LSIM_E_CPU_THREAD], 2);
        CHECK_I64(cp.edges_by_class[LSIM_E_LAUNCH], 1);
        CHECK_I64(cp.edges_by_class[LSIM_E_EVENT], 1);
        CHECK_I64(cp.edges_by_class[LSIM_E_SYNC], 1);
        CHECK(cp.ntop >= 1 && cp.top[0] == K && cp.top_time[0] == 80);
        CHECK(lsim_critical_path_recall(&cp, &cp) == 1.0);
    }
    lsim_critical_path_clear(&cp);
    lsim_engine_free(e);
    lsim_graph_free(g);
}

/* ------------------------------------------------------------ 4. jobs */

/* GPU i of a 3-GPU job: c (CPU, release 0, 10) launches k (compute, D[i])
 * with latency 5; the collectives x (X[i]) and y (Y[i]), seq 0 and 1 on
 * group "g", run on the comm stream after k (event edge 0) and after each
 * other; z (compute, 10) follows y (event edge 0).
 * If obs: observed on a clock running skew[i] ahead, on this true timeline:
 *   c [0,10)  k [15, 15+D)  x [15+D, 365)  y [365, 435)  z [435, 445). */
static const lsim_ns JD[3] = {100, 300, 200}, JX[3] = {30, 50, 40}, JY[3] = {70, 20, 60}, SKEW[3] = {0, 2000, -1000};

static lsim_graph *job_gpu(int i, int obs)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t T, S1, S2, c, k, x, y, z;
    if (lsim_gb_new(i == 0 ? "gpu0" : i == 1 ? "gpu1" : "gpu2", i, 3, &b, &err)) return NULL;
    lsim_gb_proc(b, 0, 1, 1, &T);
    lsim_gb_proc(b, 1, i, 7, &S1);
    lsim_gb_proc(b, 1, i, 8, &S2);
    lsim_gb_node(b, LSIM_N_RUNTIME, 0, T, "c", 10, &c);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S1, "k", JD[i], &k);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S1, "z", 10, &z);
    lsim_gb_node(b, LSIM_N_KERNEL, LSIM_NF_COLL, S2, "x", JX[i], &x);
    lsim_gb_node(b, LSIM_N_KERNEL, LSIM_NF_COLL, S2, "y", JY[i], &y);
    lsim_gb_coll(b, x, LSIM_COLL_ALLREDUCE, 4096, 3, "g", 0);
    lsim_gb_coll(b, y, LSIM_COLL_ALLREDUCE, 1024, 3, "g", 1);
    lsim_gb_set_release(b, c, obs ? SKEW[i] : 0);
    lsim_gb_edge(b, c, k, LSIM_E_LAUNCH, 5);
    lsim_gb_edge(b, k, x, LSIM_E_EVENT, 0);
    lsim_gb_edge(b, x, y, LSIM_E_STREAM, 0);
    lsim_gb_edge(b, y, z, LSIM_E_EVENT, 0);
    lsim_gb_edge(b, k, z, LSIM_E_STREAM, 0);
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) return NULL;
    if (obs) {
        lsim_ns s[5] = {0, 15, 435, 15 + JD[i], 365}, e[5] = {10, 15 + JD[i], 445, 365, 435};
        for (int v = 0; v < 5; v++) {
            g->obs_start[v] = s[v] + SKEW[i];
            g->obs_end[v] = e[v] + SKEW[i];
        }
    }
    return g;
}

static void job_case(int obs)
{
    lsim_graph *g[3] = {NULL, NULL, NULL};
    lsim_engine *e[3] = {NULL, NULL, NULL};
    lsim_ns *waits[3] = {NULL, NULL, NULL};
    lsim_job *j = NULL;
    lsim_err err;
    const char *what = obs ? "observed job" : "synthesized job";
    for (int i = 0; i < 3; i++) {
        g[i] = job_gpu(i, obs);
        CHECK(g[i] != NULL);
        if (!g[i]) goto out;
        waits[i] = calloc(g[i]->n, sizeof **waits);
        if (!waits[i]) goto out;
    }
    if (lsim_job_match(g, 3, &j, &err)) {
        CHECK_MSG(0, "%s: match: %s", what, err.msg);
        goto out;
    }
    CHECK_I64(j->ninst, 2);
    CHECK_I64(j->ngroups, 1);
    /* unobserved: the longest modelled duration of the participants; observed:
     * the traced duration of the participant that arrived last (GPU 1, at
     * 315 and at 365, where all arrive together and the shortest wins) */
    uint32_t x = find_node(g[0], "x"), y = find_node(g[0], "y");
    for (size_t k = 0; k < j->ninst; k++) {
        uint32_t node = j->part_node[j->part_off[k]];
        CHECK_I64(j->part_off[k + 1] - j->part_off[k], 3);
        CHECK_I64(j->transfer[k], node == x ? 50 : 70);
        CHECK(node == x || node == y);
    }
    for (int i = 0; i < 3; i++) CHECK_I64(j->clock_offset[i], obs ? SKEW[i] : 0);
    if (obs) { /* observed waiting: the last arrival at 315 (true clock) */
        lsim_ns want[3] = {200, 0, 100};
        for (int i = 0; i < 3; i++) {
            CHECK(j->obs_wait[i] != NULL);
            if (j->obs_wait[i]) {
                CHECK_I64(j->obs_wait[i][x], want[i]);
                CHECK_I64(j->obs_wait[i][y], 0);
            }
        }
    }
    CHECK(lsim_job_align_clocks(j, &err) == 0);
    if (lsim_engines_new((const lsim_graph *const *)g, 3, e, &err) || lsim_job_run(j, e, waits, &err)) {
        CHECK_MSG(0, "%s: run: %s", what, err.msg);
        goto out;
    }
    /* x arrives at 15 + D (115, 315, 215) and ends at 315 + 50 = 365 on every
     * GPU; y arrives at 365 and ends at 365 + 70 = 435; z [435, 445). On the
     * common clock: the skewed GPUs' releases were shifted back. */
    for (int i = 0; i < 3; i++) {
        const lsim_ns *S = lsim_engine_start(e[i]), *E = lsim_engine_end(e[i]);
        uint32_t k = find_node(g[i], "k"), z = find_node(g[i], "z");
        CHECK_MSG(S[k] == 15 && E[k] == 15 + JD[i], "%s: GPU %d k [%lld, %lld)", what, i, (long long)S[k], (long long)E[k]);
        CHECK_MSG(S[x] == 15 + JD[i] && E[x] == 365, "%s: GPU %d x [%lld, %lld), want [%lld, 365)", what, i,
                  (long long)S[x], (long long)E[x], (long long)(15 + JD[i]));
        CHECK_MSG(S[y] == 365 && E[y] == 435, "%s: GPU %d y [%lld, %lld), want [365, 435)", what, i, (long long)S[y],
                  (long long)E[y]);
        CHECK_MSG(S[z] == 435 && E[z] == 445, "%s: GPU %d z [%lld, %lld)", what, i, (long long)S[z], (long long)E[z]);
        CHECK_I64(waits[i][x], 315 - (15 + JD[i]));
        CHECK_I64(waits[i][y], 0);
        lsim_ns rw[8] = {0};
        if (g[i]->n <= 8) {
            lsim_job_waits(j, (size_t)i, g[i], S, E, rw);
            for (size_t v = 0; v < g[i]->n; v++) CHECK_I64(rw[v], waits[i][v]);
        }
        /* GPU 0's breakdown with the waits: compute k [15,115) and z
         * [435,445); x waits [115,315) and transfers [315,365); y transfers
         * [365,435): exposed compute 110, exposed comm 320 of which 200
         * waiting, other 15 (the window is [0, 445)). */
        if (i == 0) {
            lsim_rank_report m;
            if (lsim_metrics_compute_ex(g[0], S, E, 1000, obs ? j->obs_wait[0] : NULL, waits[0], &m, &err) == 0) {
                CHECK_I64(m.window_predicted, 445);
                CHECK_I64(m.bd_predicted.exposed_compute, 110);
                CHECK_I64(m.bd_predicted.overlapped, 0);
                CHECK_I64(m.bd_predicted.exposed_comm, 320);
                CHECK_I64(m.bd_predicted.exposed_comm_wait, 200);
                CHECK_I64(m.bd_predicted.other, 15);
                if (obs) {
                    CHECK_I64(m.window_actual, 445);
                    CHECK_I64(m.bd_actual.exposed_comm_wait, 200);
                    CHECK_I64(m.max_abs_start_err, 0);
                    CHECK_I64(m.max_abs_end_err, 0);
                }
                lsim_rank_report_clear(&m);
            } else {
                CHECK_MSG(0, "%s", err.msg);
            }
        }
    }
out:
    for (int i = 2; i >= 0; i--) { /* the first engine owns the group's memory: last */
        lsim_engine_free(e[i]);
        free(waits[i]);
    }
    lsim_job_free(j);
    for (int i = 0; i < 3; i++) lsim_graph_free(g[i]);
}

/* A send on GPU 0 (ready at 50, 40 ns) and its recv on GPU 1 (ready at
 * 10, 25 ns), pair "p2p:0->1": one instance; both end at 50 + 40 = 90. */
static void p2p_case(void)
{
    lsim_graph *g[2] = {NULL, NULL};
    lsim_engine *e[2] = {NULL, NULL};
    lsim_job *j = NULL;
    lsim_err err;
    for (int i = 0; i < 2; i++) {
        lsim_gbuilder *b;
        uint32_t T, S, c, k;
        if (lsim_gb_new(i ? "recv" : "send", i, 2, &b, &err)) goto out;
        lsim_gb_proc(b, 0, 1, 1, &T);
        lsim_gb_proc(b, 1, i, 9, &S);
        lsim_gb_node(b, LSIM_N_RUNTIME, 0, T, "c", 5, &c);
        lsim_gb_node(b, LSIM_N_KERNEL, LSIM_NF_COLL, S, i ? "recv" : "send", i ? 25 : 40, &k);
        lsim_gb_coll(b, k, i ? LSIM_COLL_RECV : LSIM_COLL_SEND, 512, 2, "p2p:0->1", 0);
        lsim_gb_set_release(b, c, 0);
        lsim_gb_edge(b, c, k, LSIM_E_LAUNCH, i ? 5 : 45);
        if (lsim_gb_finish(b, &g[i], &err)) goto out;
    }
    if (lsim_job_match(g, 2, &j, &err) || lsim_engines_new((const lsim_graph *const *)g, 2, e, &err) ||
        lsim_job_run(j, e, NULL, &err)) {
        CHECK_MSG(0, "p2p: %s", err.msg);
        goto out;
    }
    CHECK_I64(j->ninst, 1);
    CHECK_I64(j->p2p_inst, 1);
    CHECK_I64(j->transfer[0], 40);
    for (int i = 0; i < 2; i++) {
        uint32_t k = find_node(g[i], i ? "recv" : "send");
        CHECK_I64(lsim_engine_start(e[i])[k], i ? 10 : 50);
        CHECK_I64(lsim_engine_end(e[i])[k], 90);
    }
out:
    lsim_engine_free(e[1]);
    lsim_engine_free(e[0]);
    lsim_job_free(j);
    lsim_graph_free(g[0]);
    lsim_graph_free(g[1]);
}

/* ---------------------------------------------- 5. hand-written traces */

static lsim_graph *build_trace(const char *label, const char *doc, lsim_latency_mode mode)
{
    lsim_trace *t = NULL;
    lsim_err err;
    lsim_build_opts o;
    lsim_graph *g = NULL;
    if (lsim_trace_read_mem(label, doc, strlen(doc), &t, &err)) {
        CHECK_MSG(0, "%s: read: %s", label, err.msg);
        return NULL;
    }
    lsim_build_opts_default(&o);
    o.latency = mode;
    if (lsim_graph_build(t, &o, &g, &err)) CHECK_MSG(0, "%s: build: %s", label, err.msg);
    lsim_trace_free(t);
    return g;
}

static int replay(const lsim_graph *g, lsim_engine **e, lsim_rank_report *m)
{
    lsim_err err;
    if (lsim_engine_new(g, e, &err) || lsim_engine_run(*e, &err) ||
        lsim_metrics_compute(g, lsim_engine_start(*e), lsim_engine_end(*e), 0, m, &err)) {
        CHECK_MSG(0, "%s: %s", g->source, err.msg);
        return -1;
    }
    return 0;
}

#define RT(name, ts, dur, corr)                                                                                   \
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"" name "\",\"pid\":1,\"tid\":10,\"ts\":" #ts ",\"dur\":" #dur \
    ",\"args\":{\"correlation\":" #corr "}}"
#define KERNEL(name, stream, ts, dur, corr)                                                                           \
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" name "\",\"pid\":0,\"tid\":" #stream ",\"ts\":" #ts ",\"dur\":" #dur \
    ",\"args\":{\"correlation\":" #corr ",\"device\":0,\"stream\":" #stream "}}"

/* Five cudaLaunchKernel calls of 4 us onto an idle stream, each kernel (20
 * us) starting 10 us after its call began; then cudaDeviceSynchronize,
 * returning 2 us after the last kernel ended. Every launch is a sample of
 * the latency model, and all agree: 10 us from the call's start, 6 us from
 * its end, so the modelled delay is max(10 - 4, 6) = 6 us after the call
 * (and the return latency of the one waiting sync is 2 us). The modelled
 * replay must then reproduce the trace exactly: each kernel at its call's
 * start + 10 us, the sync's return and the window (1000 .. 1432 us).
 * ProfilerStep#1 spans [1000, 1220): its CPU nodes (the calls that start
 * inside it and the annotation's own pieces between them) span 220 us; as
 * the only step, its row of the GPU partition is the whole window. */
static const char LATENCY_DOC[] =
    "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":10,"
    "\"ts\":1000,\"dur\":220}," RT("cudaLaunchKernel", 1000, 4, 1) "," KERNEL("K1", 7, 1010, 20, 1) "," RT(
        "cudaLaunchKernel", 1100, 4, 2) "," KERNEL("K2", 7, 1110, 20, 2) "," RT("cudaLaunchKernel", 1200, 4,
                                                                                3) "," KERNEL("K3", 7, 1210, 20, 3) ","
    RT("cudaLaunchKernel", 1300, 4, 4) "," KERNEL("K4", 7, 1310, 20, 4) "," RT("cudaLaunchKernel", 1400, 4,
                                                                               5) "," KERNEL("K5", 7, 1410, 20, 5) ","
    RT("cudaDeviceSynchronize", 1404, 28, 6) "]}";

static void latency_trace(void)
{
    lsim_graph *g = build_trace("latency", LATENCY_DOC, LSIM_LAT_MODEL);
    if (!g) return;
    CHECK_I64(g->launch_samples, 5);
    CHECK_I64(g->launch_latency_ns, 10000);
    CHECK_I64(g->edges_by_class[LSIM_E_LAUNCH], 5);
    CHECK_I64(g->edges_by_class[LSIM_E_SYNC], 1);
    CHECK_I64(g->edges_by_class[LSIM_E_INFERRED], 0);
    for (size_t v = 0; v < g->n; v++)
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
            if ((g->in_class[k] & 0x7f) == LSIM_E_LAUNCH)
                CHECK_MSG(g->in_delay[k] == 6000, "launch delay into %s: %lld ns, want 6000 (10 us - 4 us)", node_name(g, (uint32_t)v),
                          (long long)g->in_delay[k]);
    lsim_engine *e = NULL;
    lsim_rank_report m;
    memset(&m, 0, sizeof m);
    if (replay(g, &e, &m) == 0) {
        CHECK_I64(m.window_actual, 432000);
        CHECK_I64(m.window_predicted, 432000);
        CHECK_I64(m.max_abs_start_err, 0);
        CHECK_I64(m.max_abs_end_err, 0);
        CHECK_I64(m.nodes_exact, g->n);
        CHECK_I64(m.niters, 1);
        if (m.niters == 1) {
            /* one step: its GPU row is the window */
            CHECK_I64(m.iters[0].actual, 432000);
            CHECK_I64(m.iters[0].predicted, 432000);
            CHECK_I64(m.iters[0].cpu_actual, 220000);
            CHECK_I64(m.iters[0].cpu_predicted, 220000);
        }
        const lsim_ns *S = lsim_engine_start(e);
        uint32_t k5 = find_node(g, "K5");
        if (k5 != UINT32_MAX) CHECK_I64(S[k5] - g->t0, 410000);
    }
    lsim_rank_report_clear(&m);
    lsim_engine_free(e);
    lsim_graph_free(g);
}

/* Thread 10 launches A on stream 7 (call [1000,1004), A [1010,1060)),
 * records an event ([1005,1007)), makes stream 8 wait for it ([1008,1010))
 * and launches B there (call [1011,1015), B [1061,1071)). The record/wait
 * pair (no cuda_sync events: inferred from the calls around them) is one
 * event edge A -> B. The latency model has one sample (A's launch; B waited
 * for another stream), so every launch is modelled 6 us after its call:
 * A at 1010, B's launch would allow 1021, the event edge holds B until A
 * ends: B [1060, 1070) predicted (the trace: 1061). Nothing is left for a
 * hidden dependency to explain (B is 1 us after the edge allows). */
static const char EVENT_DOC[] = "{\"traceEvents\":[" RT("cudaLaunchKernel", 1000, 4, 1) "," KERNEL(
    "A", 7, 1010, 50, 1) "," RT("cudaEventRecord", 1005, 2, 2) "," RT("cudaStreamWaitEvent", 1008, 2,
                                                                     3) "," RT("cudaLaunchKernel", 1011, 4,
                                                                               4) "," KERNEL("B", 8, 1061, 10, 4) "]}";

static void event_trace(void)
{
    for (int mode = 0; mode < 2; mode++) {
        lsim_graph *g = build_trace("event", EVENT_DOC, mode ? LSIM_LAT_OBSERVED : LSIM_LAT_MODEL);
        if (!g) continue;
        uint32_t A = find_node(g, "A"), B = find_node(g, "B");
        CHECK(A != UINT32_MAX && B != UINT32_MAX);
        CHECK_I64(g->edges_by_class[LSIM_E_EVENT], 1);
        CHECK_I64(g->inferred_by_class[LSIM_E_EVENT], 1);
        CHECK_I64(g->edges_by_class[LSIM_E_INFERRED], 0);
        if (A != UINT32_MAX && B != UINT32_MAX) {
            int64_t k = edge_index(g, A, B, LSIM_E_EVENT);
            CHECK_MSG(k >= 0, "no event edge A -> B");
            if (k >= 0) CHECK_I64(g->in_delay[k], 0);
            lsim_engine *e = NULL;
            lsim_rank_report m;
            memset(&m, 0, sizeof m);
            if (replay(g, &e, &m) == 0) {
                const lsim_ns *S = lsim_engine_start(e), *E = lsim_engine_end(e);
                if (mode) { /* observed latencies: exact */
                    CHECK_I64(m.max_abs_start_err, 0);
                    CHECK_I64(m.max_abs_end_err, 0);
                } else {
                    CHECK_I64(S[A] - g->t0, 10000);
                    CHECK_I64(S[B], E[A]);
                    CHECK_I64(S[B] - g->t0, 60000);
                    CHECK_I64(m.max_abs_start_err, 1000);
                }
            }
            lsim_rank_report_clear(&m);
            lsim_engine_free(e);
        }
        lsim_graph_free(g);
    }
}

/* Three kernels launched back to back onto one stream (calls [1000,1004),
 * [1005,1009), [1010,1014)): K1 [1010,1060) found the stream idle, K2
 * [1060,1070) and K3 [1070,1090) were queued behind it. One latency sample
 * (K1: 10 us from the call's start, 6 us from its end), fewer than 8 queued
 * pairs (no queued-op gap: 0). Stream order K1 -> K2 -> K3 holds K2 and K3
 * until their predecessor ends: the modelled replay is exact. */
static const char QUEUED_DOC[] = "{\"traceEvents\":[" RT("cudaLaunchKernel", 1000, 4, 1) "," KERNEL(
    "K1", 7, 1010, 50, 1) "," RT("cudaLaunchKernel", 1005, 4, 2) "," KERNEL("K2", 7, 1060, 10, 2) "," RT(
    "cudaLaunchKernel", 1010, 4, 3) "," KERNEL("K3", 7, 1070, 20, 3) "]}";

/* A on stream 7 [1010,1060) and B on stream 8 [1061,1071), with nothing in
 * the trace that orders them (a CUDA-graph internal, a filtered-out wait);
 * three more launches on stream 9 make the latency samples 10, 10, 10, 10
 * and 50 us (B's launch looks idle): the per-API median is 10 us. B's
 * launch explains a start at 1015 + 6 = 1021 us; it started 40 us later,
 * 1 us after A ended on another stream of the device: one hidden edge A ->
 * B with the median recovered gap, 1 us. The modelled replay is exact. */
static const char HIDDEN_DOC[] = "{\"traceEvents\":[" RT("cudaLaunchKernel", 1000, 4, 1) "," KERNEL(
    "A", 7, 1010, 50, 1) "," RT("cudaLaunchKernel", 1011, 4, 2) "," KERNEL("B", 8, 1061, 10, 2) "," RT(
    "cudaLaunchKernel", 1100, 4, 3) "," KERNEL("C1", 9, 1110, 20, 3) "," RT("cudaLaunchKernel", 1200, 4,
    4) "," KERNEL("C2", 9, 1210, 20, 4) "," RT("cudaLaunchKernel", 1300, 4, 5) "," KERNEL("C3", 9, 1310, 20,
    5) "]}";

/* Ten kernels launched back to back (calls of 4 us every 5 us from 1000
 * us) onto one stream: K1 [1010, 1060) found it idle, each later one was
 * queued and started 1 us after its predecessor ended (10 us each). Nine
 * queued pairs (at least 8 are needed) all with a 1 us gap: the learned
 * queued-op gap is 1 us, and the modelled replay is exact (K10 ends at
 * 1060 + 9 x 11 = 1159 us). */
static char QUEUED_GAP_DOC[4096];
static void make_queued_gap_doc(void)
{
    size_t n = 0;
    n += (size_t)snprintf(QUEUED_GAP_DOC + n, sizeof QUEUED_GAP_DOC - n, "{\"traceEvents\":[");
    for (int i = 0; i < 10; i++) {
        int call = 1000 + 5 * i, ks = i == 0 ? 1010 : 1060 + 11 * (i - 1) + 1, kd = i == 0 ? 50 : 10;
        n += (size_t)snprintf(QUEUED_GAP_DOC + n, sizeof QUEUED_GAP_DOC - n,
                              "%s{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
                              "\"tid\":10,\"ts\":%d,\"dur\":4,\"args\":{\"correlation\":%d}},"
                              "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"K%d\",\"pid\":0,\"tid\":7,\"ts\":%d,"
                              "\"dur\":%d,\"args\":{\"correlation\":%d,\"device\":0,\"stream\":7}}",
                              i ? "," : "", call, i + 1, i + 1, ks, kd, i + 1);
    }
    snprintf(QUEUED_GAP_DOC + n, sizeof QUEUED_GAP_DOC - n, "]}");
}

static void exact_trace(const char *label, const char *doc, lsim_ns window)
{
    lsim_graph *g = build_trace(label, doc, LSIM_LAT_MODEL);
    if (!g) return;
    lsim_engine *e = NULL;
    lsim_rank_report m;
    memset(&m, 0, sizeof m);
    if (!strcmp(label, "queued gap")) {
        CHECK_I64(g->queued_gap_ns, 1000);
        CHECK_I64(g->launch_samples, 1);
        CHECK_I64(g->edges_by_class[LSIM_E_STREAM], 9);
    } else if (!strcmp(label, "queued")) {
        uint32_t k1 = find_node(g, "K1"), k2 = find_node(g, "K2"), k3 = find_node(g, "K3");
        CHECK(k1 != UINT32_MAX && k2 != UINT32_MAX && k3 != UINT32_MAX);
        if (k3 != UINT32_MAX) {
            CHECK_MSG(edge_index(g, k1, k2, LSIM_E_STREAM) >= 0, "queued: no stream edge K1 -> K2");
            CHECK_MSG(edge_index(g, k2, k3, LSIM_E_STREAM) >= 0, "queued: no stream edge K2 -> K3");
            CHECK_MSG(edge_index(g, k1, k3, LSIM_E_STREAM) < 0, "queued: a stream edge skips K2");
        }
        CHECK_I64(g->queued_gap_ns, 0);
        CHECK_I64(g->edges_by_class[LSIM_E_INFERRED], 0);
    } else {
        uint32_t a = find_node(g, "A"), bb = find_node(g, "B");
        CHECK(a != UINT32_MAX && bb != UINT32_MAX);
        CHECK_I64(g->launch_samples, 5);
        CHECK_I64(g->launch_latency_ns, 10000);
        CHECK_I64(g->edges_by_class[LSIM_E_INFERRED], 1);
        CHECK_I64(g->edges_by_class[LSIM_E_EVENT], 0);
        if (bb != UINT32_MAX) {
            int64_t k = edge_index(g, a, bb, LSIM_E_INFERRED);
            CHECK_MSG(k >= 0, "hidden: no hidden edge A -> B");
            if (k >= 0) CHECK_I64(g->in_delay[k], 1000);
        }
    }
    if (replay(g, &e, &m) == 0) {
        CHECK_MSG(m.max_abs_start_err == 0 && m.max_abs_end_err == 0, "%s: node errors %lld/%lld ns, the replay must be exact",
                  label, (long long)m.max_abs_start_err, (long long)m.max_abs_end_err);
        CHECK_I64(m.window_actual, window);
        CHECK_I64(m.window_predicted, window);
    }
    lsim_rank_report_clear(&m);
    lsim_engine_free(e);
    lsim_graph_free(g);
}

int main(void)
{
    oracle_self_test();
    breakdown_hand();
    iterations_hand();
    breakdown_random();
    engine_hand();
    critical_hand();
    job_case(0);
    job_case(1);
    p2p_case();
    latency_trace();
    event_trace();
    exact_trace("queued", QUEUED_DOC, 90000);
    exact_trace("hidden", HIDDEN_DOC, 330000);
    make_queued_gap_doc();
    exact_trace("queued gap", QUEUED_GAP_DOC, 159000);
    return check_result("test_oracle");
}
