/* The coupled job run (lsim_job_run) on two GPUs built by hand, expected
 * times worked out by hand from the model (docs/ARCHITECTURE.md 4c, job.h):
 * a collective ends on every participant at its last arrival + the
 * instance's transfer (never observed: the longest modelled duration of the
 * participants), the time a participant waited for its peers is reported
 * apart (waits, lsim_job_waits), and a blocking call whose end-edge comes
 * from the collective returns after it. test_oracle.c checks a 3-GPU job
 * with observed clocks and a send/recv pair; not repeated here. Also:
 * collective orders that disagree end in an error naming the instance
 * (not a hang), and a second run of the same engines gives the same times. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "lumosim/engine.h"
#include "lumosim/job.h"
#include "lumosim/metrics.h"
#include "lumosim/synth.h"

enum { NC, NY, NK, NX, NZ, NNODES }; /* node ids in build order */

/* the collective x's kind and, per GPU, its bytes (coupling_kinds sets them) */
static int g_kind = LSIM_COLL_ALLREDUCE;
static int64_t g_bytes[2] = {1 << 20, 1 << 20};
/* x's root within its group (rooted_kinds sets it; the group's ranks list
 * is then "[0, 1]", as a trace names it), -1 none */
static int32_t g_root = -1;

/* GPU i: c (CPU, release 0, 10) launches k (D[i]) with latency 5; the
 * collective x (X[i], group "tp", seq 0) follows k on the comm stream
 * (event edge 0) and z (10) follows x (stream edge 0); on the thread, the
 * blocking call y (1) after c waits for x (end-edge, delay 3). */
static lsim_graph *gpu(int i, const lsim_ns *D, const lsim_ns *X)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t T, S1, S2, v[NNODES];
    if (lsim_gb_new(i ? "gpu1" : "gpu0", i, 2, &b, &err)) return NULL;
    lsim_gb_proc(b, 0, 1, 1, &T);
    lsim_gb_proc(b, 1, i, 7, &S1);
    lsim_gb_proc(b, 1, i, 8, &S2);
    lsim_gb_node(b, LSIM_N_RUNTIME, 0, T, "c", 10, &v[NC]);
    lsim_gb_node(b, LSIM_N_RUNTIME, LSIM_NF_BLOCKING, T, "y", 1, &v[NY]);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S1, "k", D[i], &v[NK]);
    lsim_gb_node(b, LSIM_N_KERNEL, LSIM_NF_COLL, S2, "x", X[i], &v[NX]);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S2, "z", 10, &v[NZ]);
    lsim_gb_coll(b, v[NX], g_kind, g_bytes[i], 2, "tp", 0);
    lsim_gb_set_release(b, v[NC], 0);
    lsim_gb_edge(b, v[NC], v[NY], LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, v[NC], v[NK], LSIM_E_LAUNCH, 5);
    lsim_gb_edge(b, v[NK], v[NX], LSIM_E_EVENT, 0);
    lsim_gb_edge(b, v[NX], v[NZ], LSIM_E_STREAM, 0);
    lsim_gb_edge(b, v[NX], v[NY], LSIM_E_SYNC | LSIM_EDGE_END, 3);
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) return NULL;
    if (g_root >= 0) {
        lsim_coll_info *ci = &g->colls[g->coll[v[NX]]];
        ci->root = g_root;
        if (lsim_strtab_intern(g->strings, "[0, 1]", 6, &ci->pg_ranks)) {
            lsim_graph_free(g);
            return NULL;
        }
    }
    return g;
}

typedef struct job2 {
    lsim_graph *g[2];
    lsim_engine *e[2];
    lsim_job *j;
} job2;

static void job2_free(job2 *J)
{
    lsim_engine_free(J->e[1]); /* the first engine owns the group's memory: last */
    lsim_engine_free(J->e[0]);
    lsim_job_free(J->j);
    lsim_graph_free(J->g[0]);
    lsim_graph_free(J->g[1]);
}

static int job2_new(job2 *J, const lsim_ns *D, const lsim_ns *X, lsim_err *err)
{
    memset(J, 0, sizeof *J);
    for (int i = 0; i < 2; i++)
        if (!(J->g[i] = gpu(i, D, X))) return lsim_err_set(err, LSIM_EINTERNAL, "building GPU %d", i);
    int rc = lsim_job_match(J->g, 2, &J->j, err);
    if (!rc) rc = lsim_engines_new((const lsim_graph *const *)J->g, 2, J->e, err);
    return rc;
}

/* D = {100, 300}, X = {30, 50}: x arrives at 15 + D = 115 and 315; the
 * transfer is max(30, 50) = 50, so x ends at 315 + 50 = 365 on both GPUs;
 * GPU 0 waited 315 - 115 = 200, GPU 1 nothing. z [365, 375); y returns at
 * 365 + 3 = 368 (it entered at 10). */
static void collective(void)
{
    const lsim_ns D[2] = {100, 300}, X[2] = {30, 50};
    job2 J;
    lsim_err err;
    lsim_ns w[2][NNODES], rw[NNODES];
    lsim_ns *waits[2] = {w[0], w[1]};
    if (job2_new(&J, D, X, &err) || lsim_job_run(J.j, J.e, waits, &err)) {
        CHECK_MSG(0, "collective: %s", err.msg);
        job2_free(&J);
        return;
    }
    CHECK_I64(J.j->ninst, 1);
    CHECK_I64(J.j->transfer[0], 50);
    for (int i = 0; i < 2; i++) {
        const lsim_ns *S = lsim_engine_start(J.e[i]), *E = lsim_engine_end(J.e[i]);
        const int64_t *be = lsim_engine_bind_end(J.e[i]);
        CHECK_I64(S[NK], 15);
        CHECK_I64(E[NK], 15 + D[i]);
        CHECK_MSG(S[NX] == 15 + D[i] && E[NX] == 365, "GPU %d: x [%lld, %lld)", i, (long long)S[NX], (long long)E[NX]);
        CHECK_I64(be[NX], -1); /* decided by the peers, not by an end-edge */
        CHECK_I64(S[NZ], 365);
        CHECK_I64(E[NZ], 375);
        CHECK_I64(S[NY], 10);
        CHECK_I64(E[NY], 368);
        CHECK_I64(waits[i][NX], i ? 0 : 200);
        for (int v = 0; v < NNODES; v++)
            if (v != NX) CHECK_I64(waits[i][v], 0);
        lsim_job_waits(J.j, (size_t)i, J.g[i], S, E, rw);
        CHECK(!memcmp(rw, waits[i], sizeof rw));
    }
    CHECK_I64(lsim_engine_events(J.e[0]) + lsim_engine_events(J.e[1]), 2 * NNODES);
    /* the same engines again: the same times (every run starts afresh) */
    lsim_ns S0[NNODES], E1[NNODES];
    memcpy(S0, lsim_engine_start(J.e[0]), sizeof S0);
    memcpy(E1, lsim_engine_end(J.e[1]), sizeof E1);
    CHECK(lsim_job_run(J.j, J.e, NULL, &err) == 0);
    CHECK(!memcmp(S0, lsim_engine_start(J.e[0]), sizeof S0) && !memcmp(E1, lsim_engine_end(J.e[1]), sizeof E1));
    job2_free(&J);
}

/* The same job with the arrival order swapped (D = {300, 100}) and equal
 * modelled durations: now GPU 1 waits 200 and GPU 0 nothing; x still ends
 * at 315 + 50 = 365. */
static void collective_swapped(void)
{
    const lsim_ns D[2] = {300, 100}, X[2] = {50, 50};
    job2 J;
    lsim_err err;
    lsim_ns w[2][NNODES];
    lsim_ns *waits[2] = {w[0], w[1]};
    if (job2_new(&J, D, X, &err) || lsim_job_run(J.j, J.e, waits, &err)) {
        CHECK_MSG(0, "swapped: %s", err.msg);
        job2_free(&J);
        return;
    }
    for (int i = 0; i < 2; i++) {
        CHECK_I64(lsim_engine_end(J.e[i])[NX], 365);
        CHECK_I64(waits[i][NX], i ? 200 : 0);
    }
    job2_free(&J);
}

/* GPU 0 runs a (seq 0) then b (seq 1) on its comm stream; GPU 1 runs its
 * seq 1 before its seq 0. Each GPU arrives at a different instance and then
 * waits for the other: neither can complete. The run must return an error
 * naming instance 0 (1 of 2 arrived), not hang. */
static void orders_disagree(void)
{
    lsim_graph *g[2] = {NULL, NULL};
    lsim_engine *e[2] = {NULL, NULL};
    lsim_job *j = NULL;
    lsim_err err;
    memset(&err, 0, sizeof err);
    for (int i = 0; i < 2; i++) {
        lsim_gbuilder *b;
        uint32_t T, S, c, p, q;
        if (lsim_gb_new(i ? "gpu1" : "gpu0", i, 2, &b, &err)) goto out;
        lsim_gb_proc(b, 0, 1, 1, &T);
        lsim_gb_proc(b, 1, i, 8, &S);
        lsim_gb_node(b, LSIM_N_RUNTIME, 0, T, "c", 5, &c);
        lsim_gb_node(b, LSIM_N_KERNEL, LSIM_NF_COLL, S, "p", 10, &p);
        lsim_gb_node(b, LSIM_N_KERNEL, LSIM_NF_COLL, S, "q", 10, &q);
        lsim_gb_coll(b, p, LSIM_COLL_ALLREDUCE, 64, 2, "dp", i ? 1 : 0);
        lsim_gb_coll(b, q, LSIM_COLL_ALLREDUCE, 64, 2, "dp", i ? 0 : 1);
        lsim_gb_set_release(b, c, 0);
        lsim_gb_edge(b, c, p, LSIM_E_LAUNCH, 5);
        lsim_gb_edge(b, p, q, LSIM_E_STREAM, 0);
        if (lsim_gb_finish(b, &g[i], &err)) goto out;
    }
    if (lsim_job_match(g, 2, &j, &err) || lsim_engines_new((const lsim_graph *const *)g, 2, e, &err)) {
        CHECK_MSG(0, "orders: %s", err.msg);
        goto out;
    }
    CHECK_I64(j->ninst, 2);
    CHECK_I64(lsim_job_run(j, e, NULL, &err), LSIM_EINTERNAL);
    CHECK_MSG(strstr(err.msg, "gpu0") && strstr(err.msg, "instance 0, 1 of 2 participants arrived") &&
                  strstr(err.msg, "can never complete"),
              "message: %s", err.msg);
    CHECK_I64(lsim_engine_events(e[0]) + lsim_engine_events(e[1]), 2); /* only the two launch calls ran */
out:
    lsim_engine_free(e[1]);
    lsim_engine_free(e[0]);
    lsim_job_free(j);
    lsim_graph_free(g[0]);
    lsim_graph_free(g[1]);
}

/* The per-kind report of the collective() job (lsim_metrics_coupling): x is
 * coupled on both GPUs; GPU 0's x spans [115, 365): 250 ns, of which it
 * waited 200 and transferred 50; GPU 1's [315, 365): 50, all transfer.
 * Never observed: the actual times are 0. Run alone (inst_of NULL) the same
 * kernel counts as traced, with no waiting. And an all-to-all may move a
 * different amount on each GPU (all_to_allv), an all-reduce may not. */
static void coupling_kinds(void)
{
    const lsim_ns D[2] = {100, 300}, X[2] = {30, 50};
    job2 J;
    lsim_err err;
    lsim_ns w[2][NNODES];
    lsim_ns *waits[2] = {w[0], w[1]};
    g_kind = LSIM_COLL_ALLTOALL;
    g_bytes[1] = 3 << 20;
    int rc = job2_new(&J, D, X, &err);
    if (!rc) rc = lsim_job_run(J.j, J.e, waits, &err);
    CHECK_MSG(rc == 0, "all_to_allv: %s", err.msg);
    for (int i = 0; !rc && i < 2; i++) {
        lsim_rank_report r;
        memset(&r, 0, sizeof r);
        lsim_metrics_coupling(J.g[i], J.j->inst_of[i], lsim_engine_start(J.e[i]), lsim_engine_end(J.e[i]), NULL,
                              waits[i], &r);
        CHECK(r.has_coupling == 1 && r.has_coll_time == 1);
        CHECK_I64(r.coll_coupled[LSIM_COLL_ALLTOALL], 1);
        CHECK_I64(r.coll_traced[LSIM_COLL_ALLTOALL], 0);
        CHECK_I64(r.coll_time_predicted[LSIM_COLL_ALLTOALL], i ? 50 : 250);
        CHECK_I64(r.coll_wait_predicted[LSIM_COLL_ALLTOALL], i ? 0 : 200);
        CHECK_I64(r.coll_time_actual[LSIM_COLL_ALLTOALL], 0);
        CHECK_I64(r.coll_coupled[LSIM_COLL_ALLREDUCE] + r.coll_traced[LSIM_COLL_ALLREDUCE], 0);
        lsim_metrics_coupling(J.g[i], NULL, lsim_engine_start(J.e[i]), lsim_engine_end(J.e[i]), NULL, NULL, &r);
        CHECK_I64(r.coll_coupled[LSIM_COLL_ALLTOALL], 0);
        CHECK_I64(r.coll_traced[LSIM_COLL_ALLTOALL], 1);
        CHECK_I64(r.coll_wait_predicted[LSIM_COLL_ALLTOALL], 0);
    }
    job2_free(&J);
    g_kind = LSIM_COLL_ALLREDUCE;
    CHECK_I64(job2_new(&J, D, X, &err), LSIM_ETRACE);
    CHECK(strstr(err.msg, "moves 1048576 bytes") || strstr(err.msg, "moves 3145728 bytes"));
    job2_free(&J);
    g_bytes[1] = 1 << 20;
}

/* Rooted collectives (job.h): the collective() job with x a broadcast or
 * a reduce whose root is GPU 0 (arrives first, at 115) or GPU 1 (last, at
 * 315); transfer 50 (the longest modelled duration). Worked out by hand:
 *   broadcast, root 0: the root ends at 115 + 50 = 165 without waiting (z
 *     then [165, 175), y returns at 168); GPU 1 at 315 + 50 = 365;
 *   broadcast, root 1: both at 365, GPU 0 waited 200 (for the root);
 *   reduce, root 0: the root waits for GPU 1: both at 365, GPU 0 waited 200;
 *   reduce, root 1: GPU 0 (a non-root, the only one) ends at 165 without
 *     waiting, the root at 365.
 * Without a root (rootless) a broadcast keeps the all-wait rule (both at
 * 365) and is counted; a root outside the group is an error. */
static void rooted_kinds(void)
{
    const lsim_ns D[2] = {100, 300}, X[2] = {30, 50};
    const struct {
        int kind;
        int32_t root;
        lsim_ns end[2], wait[2], y0;
    } C[] = {
        {LSIM_COLL_BROADCAST, 0, {165, 365}, {0, 0}, 168},
        {LSIM_COLL_BROADCAST, 1, {365, 365}, {200, 0}, 368},
        {LSIM_COLL_REDUCE, 0, {365, 365}, {200, 0}, 368},
        {LSIM_COLL_REDUCE, 1, {165, 365}, {0, 0}, 168},
        {LSIM_COLL_BROADCAST, -1, {365, 365}, {200, 0}, 368},
    };
    for (size_t c = 0; c < sizeof C / sizeof C[0]; c++) {
        job2 J;
        lsim_err err;
        lsim_ns w[2][NNODES], rw[NNODES];
        lsim_ns *waits[2] = {w[0], w[1]};
        g_kind = C[c].kind;
        g_root = C[c].root;
        int rc = job2_new(&J, D, X, &err);
        if (!rc) rc = lsim_job_run(J.j, J.e, waits, &err);
        CHECK_MSG(rc == 0, "rooted case %zu: %s", c, err.msg);
        for (int i = 0; !rc && i < 2; i++) {
            const lsim_ns *S = lsim_engine_start(J.e[i]), *E = lsim_engine_end(J.e[i]);
            CHECK_MSG(S[NX] == 15 + D[i] && E[NX] == C[c].end[i], "case %zu GPU %d: x [%lld, %lld), want end %lld", c, i,
                      (long long)S[NX], (long long)E[NX], (long long)C[c].end[i]);
            CHECK_I64(waits[i][NX], C[c].wait[i]);
            CHECK_I64(S[NZ], C[c].end[i]);
            lsim_job_waits(J.j, (size_t)i, J.g[i], S, E, rw);
            CHECK(!memcmp(rw, waits[i], sizeof rw));
        }
        if (!rc) {
            CHECK_I64(lsim_engine_end(J.e[0])[NY], C[c].y0);
            CHECK_I64(J.j->rooted_inst, C[c].root >= 0);
            CHECK_I64(J.j->rootless_inst, C[c].root < 0);
            uint64_t rl[LSIM_COLL_NKINDS];
            lsim_job_rootless(J.j, 0, J.g[0], rl);
            CHECK_I64(rl[C[c].kind], C[c].root < 0);
        }
        job2_free(&J);
    }
    /* a root that is not a participant */
    job2 J;
    lsim_err err;
    g_kind = LSIM_COLL_BROADCAST;
    g_root = 1;
    CHECK(job2_new(&J, D, X, &err) == 0); /* the graphs, then the job again with root rank 5 */
    if (J.j) {
        lsim_job *j2 = NULL;
        for (int i = 0; i < 2; i++) {
            lsim_coll_info *ci = &J.g[i]->colls[J.g[i]->coll[NX]];
            ci->root = 5;
            lsim_strtab_intern(J.g[i]->strings, "[0, 1, 2, 3, 4, 5]", 18, &ci->pg_ranks);
        }
        CHECK_I64(lsim_job_match(J.g, 2, &j2, &err), LSIM_ETRACE);
        CHECK_MSG(strstr(err.msg, "names root rank 5, which is not one of its 2 participants"), "message: %s", err.msg);
        lsim_job_free(j2);
    }
    job2_free(&J);
    g_kind = LSIM_COLL_ALLREDUCE;
    g_root = -1;
}

/* The job keeps a node's instance at its collective record (job.h
 * inst_of): a graph whose z is a collective kernel on x's record, as a
 * damaged store could say, is refused naming the GPU, both kernels and the
 * record; and a record past the table too. Each node's own record matches. */
static void shared_record(void)
{
    const lsim_ns D[2] = {100, 300}, X[2] = {30, 50};
    lsim_graph *g[2] = {gpu(0, D, X), gpu(1, D, X)};
    lsim_job *j = NULL;
    lsim_err err = {0};
    CHECK(g[0] && g[1]);
    if (!g[0] || !g[1]) goto out;
    CHECK_I64(lsim_job_match(g, 2, &j, &err), 0);
    if (j) {
        CHECK_I64(lsim_job_inst(j->inst_of[1], g[1], NX), 0);
        CHECK_I64(lsim_job_inst(j->inst_of[1], g[1], NZ), -1);
        CHECK_I64(j->part_coll[0], g[0]->coll[NX]);
    }
    lsim_job_free(j);
    j = NULL;
    g[1]->flags[NZ] |= LSIM_NF_COLL;
    g[1]->coll[NZ] = g[1]->coll[NX];
    CHECK_I64(lsim_job_match(g, 2, &j, &err), LSIM_ETRACE);
    CHECK(j == NULL);
    CHECK_MSG(strstr(err.msg, "gpu1: collective kernels 3 and 4 share collective record 0") != NULL, "%s", err.msg);
    g[1]->coll[NZ] = 7;
    CHECK_I64(lsim_job_match(g, 2, &j, &err), LSIM_ETRACE);
    CHECK_MSG(strstr(err.msg, "gpu1: node 4 names collective record 7 of 1") != NULL, "%s", err.msg);
out:
    lsim_job_free(j);
    lsim_graph_free(g[0]);
    lsim_graph_free(g[1]);
}

int main(void)
{
    shared_record();
    collective();
    collective_swapped();
    orders_disagree();
    coupling_kinds();
    rooted_kinds();
    return check_result("test_job_hand");
}
