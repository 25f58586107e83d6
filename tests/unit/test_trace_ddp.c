/* DDP gradient buckets inserted into a traced DP-1 training step
 * (lsim_wi_trace_ddp, whatif.h), on a graph built by hand, with the
 * expected buckets and edges worked out by hand from PyTorch DDP's rule
 * (reducer.cpp, compute_bucket_assignment_by_size: gradients in the order
 * they became ready; a bucket closes once its bytes reach its limit, 1 MiB
 * for the first, then bucket_cap_mb = 25 MiB):
 *
 *   thread T: c0 a1 c1 a2 c2 a3 c3   (c: launch calls, a: AccumulateGrad ends)
 *   stream S: k0 k1 k2 k3            (ci launches ki; k3 the optimizer)
 *   gradients: a1 600 KiB, a2 600 KiB, a3 30 MiB
 *
 * bucket 0 = a1 + a2 = 1,228,800 B (>= 1 MiB, closes at a2), waiting for
 * k1 (the last work T launched before a2); bucket 1 = a3 = 30 MiB (>= 25
 * MiB), waiting for k2, after bucket 0 on its stream; k3, the first work
 * launched on S after a3 (the pass's last gradient), waits for bucket 1.
 * Also: the identification lists the same buckets, and a graph without
 * gradient sizes is refused with a line naming record_shapes. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "lumosim/cost.h"
#include "lumosim/synth.h"
#include "lumosim/whatif.h"

enum { C0, A1, C1, A2, C2, A3, C3, K0, K1, K2, K3, NN };

static lsim_graph *hand(int with_grads)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t T, S, v[NN];
    static const char *const nm[NN] = {"c0", "a1", "c1", "a2", "c2", "a3", "c3", "k0", "k1", "k2", "k3"};
    if (lsim_gb_new("hand", 0, 1, &b, &err)) return NULL;
    lsim_gb_proc(b, 0, 1, 1, &T);
    lsim_gb_proc(b, 1, 0, 7, &S);
    for (int i = C0; i <= C3; i++)
        lsim_gb_node(b, (i % 2) ? LSIM_N_CPU : LSIM_N_RUNTIME, 0, T, nm[i], 10, &v[i]);
    for (int i = K0; i <= K3; i++) lsim_gb_node(b, LSIM_N_KERNEL, 0, S, nm[i], 100, &v[i]);
    lsim_gb_set_release(b, v[C0], 0);
    for (int i = C0; i < C3; i++) lsim_gb_edge(b, v[i], v[i + 1], LSIM_E_CPU_THREAD, 0);
    for (int i = 0; i < 4; i++) lsim_gb_edge(b, v[C0 + 2 * i], v[K0 + i], LSIM_E_LAUNCH, 5);
    for (int i = K0; i < K3; i++) lsim_gb_edge(b, v[i], v[i + 1], LSIM_E_STREAM, 0);
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) return NULL;
    if (with_grads) {
        g->grad_bytes[A1] = 600 * 1024;
        g->grad_bytes[A2] = 600 * 1024;
        g->grad_bytes[A3] = 30ll * 1024 * 1024;
    }
    return g;
}

/* 1 if dst has an incoming edge from src of class cls (-1: any class) */
static int has_edge(const lsim_graph *g, uint32_t src, uint32_t dst, int cls)
{
    for (uint64_t k = g->in_off[dst]; k < g->in_off[dst + 1]; k++)
        if (g->in_src[k] == src && (cls < 0 || (g->in_class[k] & 0x7f) == cls)) return 1;
    return 0;
}

/* lsim_wi_trace_ddp of g as GPU 0 of a DP-1 job on the H100's default
 * network: its return code, *o, *rec and err filled */
static int run_ddp(const lsim_graph *g, lsim_graph **o, lsim_wi_counts *rec, lsim_err *err)
{
    lsim_gpu_spec gpu;
    lsim_topology topo;
    CHECK(lsim_gpu_spec_builtin("h100", &gpu, err) == 0);
    lsim_topology_default(&gpu, &topo);
    lsim_wi_layout L = {1, 1, 1};
    memset(rec, 0, sizeof *rec);
    return lsim_wi_trace_ddp(g, &L, &topo, 0, o, rec, err);
}

static void inserted(void)
{
    lsim_graph *g = hand(1), *o = NULL;
    CHECK(g != NULL);
    if (!g) return;
    lsim_err err;
    lsim_wi_counts rec;
    int rc = run_ddp(g, &o, &rec, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc) goto out;
    CHECK_I64((long long)o->n, NN + 4);
    CHECK_I64((long long)rec.added[LSIM_N_KERNEL], 2);
    CHECK_I64((long long)rec.added[LSIM_N_RUNTIME], 2);
    /* new nodes: call, kernel per bucket, in bucket order */
    uint32_t c[2] = {NN, NN + 2}, k[2] = {NN + 1, NN + 3};
    const int64_t want[2] = {1228800, 30ll * 1024 * 1024};
    for (int b = 0; b < 2; b++) {
        CHECK(o->kind[k[b]] == LSIM_N_KERNEL && (o->flags[k[b]] & LSIM_NF_COLL) && o->coll[k[b]] >= 0);
        if (o->coll[k[b]] < 0) continue;
        const lsim_coll_info *ci = &o->colls[o->coll[k[b]]];
        CHECK_I64(ci->bytes, want[b]);
        CHECK_I64(ci->seq, b);
        CHECK(ci->kind == LSIM_COLL_ALLREDUCE && ci->group_size == 1);
        CHECK_STR(lsim_strtab_get(o->strings, ci->pg_name), "dp:0:0");
        CHECK(o->kind[c[b]] == LSIM_N_RUNTIME && o->proc[c[b]] == o->proc[C0]);
        CHECK(has_edge(o, c[b], k[b], LSIM_E_LAUNCH));
        CHECK(o->proc[k[b]] != o->proc[K0] && o->procs[o->proc[k[b]]].is_gpu);
    }
    /* launched right after the bucket's last gradient; what followed waits */
    CHECK(has_edge(o, A2, c[0], LSIM_E_CPU_THREAD) && has_edge(o, c[0], C2, LSIM_E_CPU_THREAD));
    CHECK(has_edge(o, A3, c[1], LSIM_E_CPU_THREAD) && has_edge(o, c[1], C3, LSIM_E_CPU_THREAD));
    /* each waits for the work its thread had launched; in order */
    CHECK(has_edge(o, K1, k[0], LSIM_E_EVENT));
    CHECK(has_edge(o, K2, k[1], LSIM_E_EVENT));
    CHECK(has_edge(o, k[0], k[1], LSIM_E_STREAM));
    /* the optimizer waits for the pass's last bucket, and nothing else does */
    CHECK(has_edge(o, k[1], K3, LSIM_E_EVENT));
    CHECK(!has_edge(o, k[0], K3, -1) && !has_edge(o, k[1], K2, -1) && !has_edge(o, k[0], K2, -1));
    /* the identification buckets the same way */
    lsim_wi_ident id;
    CHECK(lsim_wi_identify(g, 0, 0, &id, &err) == 0);
    CHECK_I64((long long)id.training.ddp_buckets, 2);
    CHECK_I64((long long)id.training.grad_nodes, 3);
    CHECK_I64(id.training.ddp_bytes[0], want[0]);
    CHECK_I64(id.training.ddp_bytes[1], want[1]);
out:
    lsim_graph_free(o);
    lsim_graph_free(g);
}

static void refused(void)
{
    lsim_graph *g = hand(0), *o = NULL;
    CHECK(g != NULL);
    if (!g) return;
    lsim_err err;
    lsim_wi_counts rec;
    CHECK(run_ddp(g, &o, &rec, &err) == LSIM_EARG);
    CHECK(o == NULL);
    CHECK_MSG(strstr(err.msg, "hand") && strstr(err.msg, "record_shapes"), "%s", err.msg);
    lsim_graph_free(g);
}

/* a second pass (iteration) restarts the first-bucket limit */
static void passes(void)
{
    lsim_graph *g = hand(1);
    CHECK(g != NULL);
    if (!g) return;
    lsim_err err;
    lsim_wi_ident id;
    /* a2, a3 in a second iteration: pass 0 = {a1} (600 KiB, open, closed by
     * the pass end), pass 1 = {a2} (600 KiB < 1 MiB, then a3 -> 30.6 MiB) */
    lsim_iter *it = realloc(g->iters, 2 * sizeof *it);
    CHECK(it != NULL);
    if (!it) {
        lsim_graph_free(g);
        return;
    }
    g->iters = it;
    g->niters = 2;
    it[0] = (lsim_iter){0, 0, 0};
    it[1] = (lsim_iter){0, 0, 0};
    for (size_t v = 0; v < g->n; v++) g->iter[v] = v >= A2 && v <= C3 ? 1 : 0;
    CHECK(lsim_wi_identify(g, 0, 0, &id, &err) == 0);
    CHECK_I64((long long)id.training.ddp_buckets, 2);
    CHECK_I64((long long)id.training.grad_passes, 2);
    CHECK_I64((long long)id.training.ddp_first, 1);
    CHECK_I64(id.training.ddp_bytes[0], 600 * 1024);
    lsim_graph_free(g);
}

int main(void)
{
    inserted();
    refused();
    passes();
    return check_result("test_trace_ddp");
}
