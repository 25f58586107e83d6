/* Allocation failure, in the style of libuv's test-loop-oom.c: for n = 0, 1,
 * 2, ... make allocation n of an operation fail (lsim_alloc_fail_after,
 * alloc.h) until the operation runs to the end without reaching it. Every
 * failing run must return LSIM_ENOMEM with a message, leave its outputs
 * empty and its inputs as they were; the ASan build (LSIM_SANITIZE) runs
 * this test too, so anything a failing run leaks fails it there. Covered:
 * lsim_engine_new, lsim_engines_new, lsim_engine_run (which must allocate
 * nothing), the job setup (lsim_job_match, lsim_job_entries,
 * lsim_job_from_entries), lsim_job_run, the critical path and the job's.
 *
 * lsim_graph_ablate (src/graph.c) does not allocate through the seam yet,
 * so it cannot be made to fail from here. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "lumosim/alloc.h"
#include "lumosim/critical.h"
#include "lumosim/engine.h"
#include "lumosim/job.h"
#include "lumosim/synth.h"

/* A failing run (allocation n was reached) must report LSIM_ENOMEM and a
 * message; a run that did not reach it must succeed. Returns 1 while the
 * loop must go on. */
static int judge(const char *what, long n, int rc, const lsim_err *err)
{
    long used = lsim_alloc_count();
    lsim_alloc_fail_after(-1);
    if (used <= n) {
        CHECK_MSG(rc == 0, "%s: failed (%d: %s) with no allocation failing", what, rc, err->msg);
        return 0;
    }
    CHECK_MSG(rc == LSIM_ENOMEM, "%s: allocation %ld failed, returned %d (%s)", what, n, rc, err->msg);
    CHECK_MSG(err->msg[0] != '\0', "%s: allocation %ld failed without a message", what, n);
    return 1;
}

/* GPU i of a 2-GPU job: a launch call c (release 0), a kernel k, an
 * allreduce x on group "dp" after it, and a blocking call y that waits for
 * x (end-edge), so that the critical path has a few nodes to walk. */
static lsim_graph *gpu(int i)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t T, S1, S2, c, y, k, x;
    if (lsim_gb_new(i ? "gpu1" : "gpu0", i, 2, &b, &err)) return NULL;
    lsim_gb_proc(b, 0, 1, 1, &T);
    lsim_gb_proc(b, 1, i, 7, &S1);
    lsim_gb_proc(b, 1, i, 8, &S2);
    lsim_gb_node(b, LSIM_N_RUNTIME, 0, T, "c", 10, &c);
    lsim_gb_node(b, LSIM_N_RUNTIME, LSIM_NF_BLOCKING, T, "y", 1, &y);
    lsim_gb_node(b, LSIM_N_KERNEL, 0, S1, "k", 100 + 50 * i, &k);
    lsim_gb_node(b, LSIM_N_KERNEL, LSIM_NF_COLL, S2, "x", 40, &x);
    lsim_gb_coll(b, x, LSIM_COLL_ALLREDUCE, 4096, 2, "dp", 0);
    lsim_gb_set_release(b, c, 0);
    lsim_gb_edge(b, c, y, LSIM_E_CPU_THREAD, 0);
    lsim_gb_edge(b, c, k, LSIM_E_LAUNCH, 5);
    lsim_gb_edge(b, k, x, LSIM_E_EVENT, 0);
    lsim_gb_edge(b, x, y, LSIM_E_SYNC | LSIM_EDGE_END, 2);
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) return NULL;
    return g;
}

/* What an operation may change in a graph: a checksum of its columns. */
static uint64_t graph_sum(const lsim_graph *g)
{
    uint64_t h = 1469598103934665603ull;
#define MIX(x) (h = (h ^ (uint64_t)(x)) * 1099511628211ull)
    MIX(g->n);
    MIX(g->t0);
    for (size_t v = 0; v < g->n; v++) {
        MIX(g->dur[v]);
        MIX(g->release[v]);
        MIX(g->flags[v]);
        MIX(g->coll[v]);
    }
    for (size_t v = 0; v <= g->n; v++) MIX(g->in_off[v]);
    for (uint64_t k = 0; k < g->nedges; k++) {
        MIX(g->in_src[k]);
        MIX(g->in_delay[k]);
        MIX(g->in_class[k]);
    }
#undef MIX
    return h;
}

static void engines(lsim_graph *const *g)
{
    lsim_err err;
    uint64_t sum0 = graph_sum(g[0]);
    for (long n = 0;; n++) {
        lsim_engine *e = NULL;
        lsim_alloc_fail_after(n);
        int rc = lsim_engine_new(g[0], &e, &err);
        int more = judge("lsim_engine_new", n, rc, &err);
        CHECK(more ? e == NULL : e != NULL);
        CHECK_I64(graph_sum(g[0]), sum0);
        if (!more) {
            /* the run allocates nothing: no allocation to fail */
            lsim_alloc_fail_after(0);
            rc = lsim_engine_run(e, &err);
            CHECK_I64(lsim_alloc_count(), 0);
            lsim_alloc_fail_after(-1);
            CHECK_I64(rc, 0);
        }
        lsim_engine_free(e);
        if (!more) break;
    }
    for (long n = 0;; n++) {
        lsim_engine *e[2] = {(lsim_engine *)&err, (lsim_engine *)&err}; /* must be cleared */
        lsim_alloc_fail_after(n);
        int rc = lsim_engines_new((const lsim_graph *const *)g, 2, e, &err);
        int more = judge("lsim_engines_new", n, rc, &err);
        CHECK(more ? e[0] == NULL && e[1] == NULL : e[0] != NULL && e[1] != NULL);
        if (!more) {
            lsim_engine_free(e[1]);
            lsim_engine_free(e[0]);
            break;
        }
    }
}

static void job_setup(lsim_graph *const *g)
{
    lsim_err err;
    uint64_t sum[2] = {graph_sum(g[0]), graph_sum(g[1])};
    for (long n = 0;; n++) {
        lsim_job *j = (lsim_job *)&err;
        lsim_alloc_fail_after(n);
        int rc = lsim_job_match(g, 2, &j, &err);
        int more = judge("lsim_job_match", n, rc, &err);
        CHECK(more ? j == NULL : j != NULL && j->ninst == 1);
        CHECK_I64(graph_sum(g[0]), sum[0]);
        CHECK_I64(graph_sum(g[1]), sum[1]);
        if (!more) lsim_job_free(j);
        if (!more) break;
    }
    lsim_strtab *names = lsim_strtab_new(); /* the entries' group names (libc's allocator: not failed here) */
    CHECK(names != NULL);
    if (!names) return;
    for (long n = 0;; n++) {
        lsim_job_entry *e = (lsim_job_entry *)&err;
        size_t ne = 99;
        lsim_alloc_fail_after(n);
        int rc = lsim_job_entries(g, NULL, 2, names, &e, &ne, NULL, &err);
        int more = judge("lsim_job_entries", n, rc, &err);
        CHECK(more ? e == NULL && ne == 0 : e != NULL && ne == 2);
        if (!more) lsim_free(e);
        if (!more) break;
    }
    /* from entries: the entries are read, not moved (job.h): every run,
     * failing or not, leaves them exactly as they were */
    lsim_job_entry *ents = NULL, *copy = NULL;
    size_t ne = 0;
    CHECK(lsim_job_entries(g, NULL, 2, names, &ents, &ne, NULL, &err) == 0 && ne == 2);
    copy = malloc(ne * sizeof *copy);
    if (!copy || ne != 2) goto out;
    memcpy(copy, ents, ne * sizeof *copy);
    const int32_t ranks[2] = {0, 1};
    const char *src[2] = {"gpu0", "gpu1"};
    const size_t nodes[2] = {g[0]->n, g[1]->n}, colls[2] = {g[0]->ncoll, g[1]->ncoll};
    for (long n = 0;; n++) {
        lsim_job *j = (lsim_job *)&err;
        lsim_alloc_fail_after(n);
        int rc = lsim_job_from_entries(ents, ne, 2, ranks, src, nodes, colls, &j, &err);
        int more = judge("lsim_job_from_entries", n, rc, &err);
        CHECK(more ? j == NULL : j != NULL && j->ninst == 1);
        CHECK(!memcmp(ents, copy, ne * sizeof *ents));
        if (!more) lsim_job_free(j);
        if (!more) break;
    }
out:
    free(copy);
    lsim_free(ents);
    lsim_strtab_free(names);
}

static void job_run(lsim_graph *const *g)
{
    lsim_err err;
    lsim_job *j = NULL;
    lsim_engine *e[2] = {NULL, NULL};
    lsim_ns w0[4], w1[4];
    lsim_ns *waits[2] = {w0, w1};
    if (lsim_job_match(g, 2, &j, &err) || lsim_engines_new((const lsim_graph *const *)g, 2, e, &err) || g[0]->n > 4 ||
        g[1]->n > 4) {
        CHECK_MSG(0, "job: %s", err.msg);
        goto out;
    }
    uint64_t transfer = (uint64_t)j->transfer[0], ninst = j->ninst;
    for (long n = 0;; n++) {
        lsim_alloc_fail_after(n);
        int rc = lsim_job_run(j, e, waits, &err);
        int more = judge("lsim_job_run", n, rc, &err);
        CHECK_I64(j->ninst, ninst);
        CHECK_I64(j->transfer[0], transfer);
        if (!more) {
            /* by hand: x arrives at 15 + 100 and 15 + 150, ends at
             * 165 + 40 = 205 on both; y returns at 207 */
            CHECK_I64(lsim_engine_end(e[0])[3], 205);
            CHECK_I64(lsim_engine_end(e[1])[3], 205);
            CHECK_I64(lsim_engine_end(e[0])[1], 207);
            CHECK_I64(w0[3], 50);
            CHECK_I64(w1[3], 0);
            break;
        }
    }
out:
    lsim_engine_free(e[1]);
    lsim_engine_free(e[0]);
    lsim_job_free(j);
}

static void critical(lsim_graph *const *g)
{
    lsim_err err;
    lsim_engine *e = NULL;
    if (lsim_engine_new(g[0], &e, &err) || lsim_engine_run(e, &err)) {
        CHECK_MSG(0, "critical: %s", err.msg);
        lsim_engine_free(e);
        return;
    }
    lsim_ns end0 = lsim_engine_end(e)[1];
    for (long n = 0;; n++) {
        lsim_critical_path cp;
        memset(&cp, 0xab, sizeof cp); /* must be cleared */
        lsim_alloc_fail_after(n);
        int rc = lsim_critical_path_compute(g[0], e, &cp, &err);
        int more = judge("lsim_critical_path_compute", n, rc, &err);
        CHECK_I64(lsim_engine_end(e)[1], end0);
        if (more) {
            CHECK(cp.nodes == NULL && cp.via == NULL && cp.n == 0);
            continue;
        }
        /* alone on GPU 0, x runs [115, 155) and y returns at 157: c k x y */
        CHECK_I64(cp.n, 4);
        CHECK_I64(cp.end, 157);
        for (long m = 0;; m++) {
            lsim_alloc_fail_after(m);
            double r = lsim_critical_path_recall(&cp, &cp);
            long used = lsim_alloc_count();
            lsim_alloc_fail_after(-1);
            if (used <= m) {
                CHECK(r == 1.0);
                break;
            }
            CHECK(r == -1.0);
        }
        lsim_critical_path_clear(&cp);
        break;
    }
    lsim_engine_free(e);
}

/* The job's critical path on the hand-built job (job_run above): y returns
 * at 207 on both GPUs (GPU 0 ends the path: ties keep the lower GPU); x
 * ended when GPU 1's x arrived at 165, so the path crosses there and runs
 * back through GPU 1's k (15 + 150) and c. Booked by hand: c 10 (cpu),
 * launch 5, k 150 (gpu_compute), x's transfer 205 - 165 = 40
 * (communication), y's return 2 (waiting): 207 = the job's span; GPU 1
 * 165, GPU 0 42. Every failed allocation leaves the path cleared. */
static void job_path(lsim_graph *const *g)
{
    lsim_err err;
    lsim_job *j = NULL;
    lsim_engine *e[2] = {NULL, NULL};
    if (lsim_job_match(g, 2, &j, &err) || lsim_engines_new((const lsim_graph *const *)g, 2, e, &err) ||
        lsim_job_run(j, e, NULL, &err)) {
        CHECK_MSG(0, "job path: %s", err.msg);
        goto out;
    }
    for (long n = 0;; n++) {
        lsim_job_path p;
        memset(&p, 0xab, sizeof p); /* must be cleared */
        lsim_alloc_fail_after(n);
        int rc = lsim_job_path_compute(j, g, e, NULL, 2, g, &p, &err);
        int more = judge("lsim_job_path_compute", n, rc, &err);
        if (more) {
            CHECK(p.gpu == NULL && p.node == NULL && p.via == NULL && p.at == NULL && p.by_gpu == NULL && p.n == 0);
            continue;
        }
        static const uint32_t gpu[5] = {1, 1, 1, 0, 0}, node[5] = {0, 2, 3, 3, 1};
        CHECK_I64(p.n, 5);
        for (size_t i = 0; i < 5 && i < p.n; i++) {
            CHECK_I64(p.gpu[i], gpu[i]);
            CHECK_I64(p.node[i], node[i]);
        }
        if (p.n == 5) CHECK_I64(p.via[3], LSIM_CP_VIA_PEER);
        CHECK_I64(p.start, 0);
        CHECK_I64(p.end, 207);
        CHECK_I64(p.length, 207);
        CHECK_I64(p.crossings, 1);
        CHECK_I64(p.by_cat[LSIM_CP_CPU], 10);
        CHECK_I64(p.by_cat[LSIM_CP_LAUNCH], 5);
        CHECK_I64(p.by_cat[LSIM_CP_GPU_COMPUTE], 150);
        CHECK_I64(p.by_cat[LSIM_CP_COMM], 40);
        CHECK_I64(p.by_cat[LSIM_CP_WAIT], 2);
        CHECK_I64(p.by_gpu[0], 42);
        CHECK_I64(p.by_gpu[1], 165);
        CHECK_I64(p.ntop, 3); /* k 150, x 40, c 10 */
        CHECK_I64(p.top_gpu[0], 1);
        CHECK_I64(p.top_node[0], 2);
        CHECK_I64(p.top_time[1], 40);
        lsim_job_path_clear(&p);
        break;
    }
out:
    lsim_engine_free(e[1]);
    lsim_engine_free(e[0]);
    lsim_job_free(j);
}

/* lsim_graph_clone and lsim_graph_ablate: a failure leaves no half graph
 * behind, and the graph being ablated unchanged (it used to be left with
 * its CSR half rebuilt). */
static void graph_ops(lsim_graph *const *g)
{
    lsim_err err;
    uint64_t sum0 = graph_sum(g[0]), e0 = g[0]->nedges;
    for (long n = 0;; n++) {
        lsim_graph *c = (lsim_graph *)&err; /* must be cleared */
        lsim_alloc_fail_after(n);
        int rc = lsim_graph_clone(g[0], &c, &err);
        int more = judge("lsim_graph_clone", n, rc, &err);
        CHECK(more ? c == NULL : c != NULL);
        CHECK_I64(graph_sum(g[0]), sum0);
        if (!more) {
            CHECK_I64(graph_sum(c), sum0);
            lsim_graph_free(c);
            break;
        }
    }
    for (long n = 0;; n++) {
        lsim_graph *c = NULL;
        CHECK_I64(lsim_graph_clone(g[0], &c, &err), 0);
        if (!c) break;
        lsim_alloc_fail_after(n);
        int rc = lsim_graph_ablate(c, 1u << LSIM_E_EVENT, 1, &err);
        int more = judge("lsim_graph_ablate", n, rc, &err);
        if (more) {
            CHECK_I64(graph_sum(c), sum0); /* unchanged */
            CHECK_I64(c->nedges, e0);
        } else {
            CHECK_I64(c->nedges, e0 - 1); /* the k -> x event edge */
        }
        lsim_graph_free(c);
        if (!more) break;
    }
}

int main(void)
{
    lsim_graph *g[2] = {gpu(0), gpu(1)};
    CHECK(g[0] && g[1]);
    if (g[0] && g[1]) {
        engines(g);
        graph_ops(g);
        job_setup(g);
        job_run(g);
        critical(g);
        job_path(g);
    }
    lsim_graph_free(g[0]);
    lsim_graph_free(g[1]);
    return check_result("test_oom");
}
