/* The duration pools and draws of prediction intervals (samples.h), on
 * graphs built by hand, against values worked out by hand:
 *   GPU 0: kernels a (10), a (20), b (100);  GPU 1: kernels a (30), a (40),
 *   c x 5 (90, 100, 110, 100, 100).
 * - job pool: every a draws from {10, 20, 30, 40}; others pool: GPU 0's a
 *   from {30, 40} only, GPU 1's from {10, 20} only;
 * - the fitted spread is the median relative std-dev of keys with >= 5
 *   durations: c alone, sqrt(200 / 4) / 100 = 0.0707107;
 * - ops without two durations to draw from: b (seen once) in the job pool;
 *   with the others pool b and the five c too (no other GPU runs them);
 * - draws depend on (seed, sample, GPU, node) only; nearest-rank
 *   percentiles. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "lumosim/samples.h"
#include "lumosim/synth.h"

static lsim_graph *gpu(int i)
{
    lsim_gbuilder *b;
    lsim_err err;
    uint32_t T, S, c, k, prev = UINT32_MAX;
    static const lsim_ns D0[] = {10, 20, 100}, D1[] = {30, 40, 90, 100, 110, 100, 100};
    static const char *const N0[] = {"a", "a", "b"}, *const N1[] = {"a", "a", "c", "c", "c", "c", "c"};
    const lsim_ns *D = i ? D1 : D0;
    const char *const *N = i ? N1 : N0;
    int n = i ? 7 : 3;
    if (lsim_gb_new(i ? "gpu1" : "gpu0", -1, -1, &b, &err)) return NULL;
    lsim_gb_proc(b, 0, 1, 1, &T);
    lsim_gb_proc(b, 1, 0, 7, &S);
    lsim_gb_node(b, LSIM_N_RUNTIME, 0, T, "launch", 5, &c);
    lsim_gb_set_release(b, c, 0);
    for (int j = 0; j < n; j++) {
        lsim_gb_node(b, LSIM_N_KERNEL, 0, S, N[j], D[j], &k);
        lsim_gb_edge(b, c, k, LSIM_E_LAUNCH, 1);
        if (prev != UINT32_MAX) lsim_gb_edge(b, prev, k, LSIM_E_STREAM, 0);
        prev = k;
    }
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) return NULL;
    return g;
}

static int in_set(lsim_ns x, const lsim_ns *s, int n)
{
    for (int i = 0; i < n; i++)
        if (x == s[i]) return 1;
    return 0;
}

static void draws(void)
{
    lsim_graph *g[2] = {gpu(0), gpu(1)};
    CHECK(g[0] && g[1]);
    if (!g[0] || !g[1]) return;
    lsim_err err;
    lsim_pools *job = NULL, *oth = NULL;
    CHECK(lsim_pools_new(g, 2, LSIM_POOL_JOB, &job, &err) == 0);
    CHECK(lsim_pools_new(g, 2, LSIM_POOL_OTHERS, &oth, &err) == 0);
    if (!job || !oth) goto out;
    lsim_pools_info in;
    lsim_pools_get_info(job, &in);
    CHECK_I64((long long)in.ops, 10);
    CHECK_I64((long long)in.keys, 3);
    CHECK_MSG(fabs(in.spread - sqrt(200.0 / 4.0) / 100.0) < 1e-9, "spread %g", in.spread);
    CHECK_I64((long long)in.ops_spread, 1); /* b */
    lsim_pools_get_info(oth, &in);
    CHECK_I64((long long)in.ops_spread, 6); /* b; the five c, which no other GPU has */
    static const lsim_ns all[] = {10, 20, 30, 40}, other0[] = {30, 40}, other1[] = {10, 20};
    int seen_all[4] = {0, 0, 0, 0};
    for (uint64_t s = 0; s < 64; s++) {
        lsim_graph *c0 = NULL, *c1 = NULL;
        CHECK(lsim_graph_clone(g[0], &c0, &err) == 0 && lsim_graph_clone(g[1], &c1, &err) == 0);
        if (!c0 || !c1) {
            lsim_graph_free(c0);
            lsim_graph_free(c1);
            break;
        }
        CHECK(lsim_pools_draw(job, c0, 0, 7, s, &err) == 0);
        for (size_t v = 0; v < c0->n; v++) {
            if (c0->kind[v] != LSIM_N_KERNEL || strcmp(lsim_strtab_get(c0->strings, c0->name[v]), "a")) continue;
            CHECK_MSG(in_set(c0->dur[v], all, 4), "job pool drew %lld", (long long)c0->dur[v]);
            for (int k = 0; k < 4; k++) seen_all[k] |= c0->dur[v] == all[k];
        }
        /* others: each GPU only from the other's a */
        lsim_graph *d0 = NULL, *d1 = NULL;
        CHECK(lsim_graph_clone(g[0], &d0, &err) == 0 && lsim_graph_clone(g[1], &d1, &err) == 0);
        if (d0 && d1) {
            CHECK(lsim_pools_draw(oth, d0, 0, 7, s, &err) == 0 && lsim_pools_draw(oth, d1, 1, 7, s, &err) == 0);
            for (size_t v = 0; v < d0->n; v++)
                if (d0->kind[v] == LSIM_N_KERNEL && !strcmp(lsim_strtab_get(d0->strings, d0->name[v]), "a"))
                    CHECK_MSG(in_set(d0->dur[v], other0, 2), "GPU 0 drew its own %lld", (long long)d0->dur[v]);
            for (size_t v = 0; v < d1->n; v++)
                if (d1->kind[v] == LSIM_N_KERNEL && !strcmp(lsim_strtab_get(d1->strings, d1->name[v]), "a"))
                    CHECK_MSG(in_set(d1->dur[v], other1, 2), "GPU 1 drew its own %lld", (long long)d1->dur[v]);
        }
        /* the same (seed, sample, GPU) again: the same draws */
        lsim_graph *e0 = NULL;
        CHECK(lsim_graph_clone(g[0], &e0, &err) == 0);
        if (e0) {
            CHECK(lsim_pools_draw(job, e0, 0, 7, s, &err) == 0);
            CHECK(!memcmp(e0->dur, c0->dur, c0->n * sizeof *c0->dur));
        }
        lsim_graph_free(c0);
        lsim_graph_free(c1);
        lsim_graph_free(d0);
        lsim_graph_free(d1);
        lsim_graph_free(e0);
    }
    for (int k = 0; k < 4; k++) CHECK_MSG(seen_all[k], "64 samples never drew %lld", (long long)all[k]);
    /* a graph that is not the pools' GPU is refused */
    CHECK(lsim_pools_draw(job, g[0], 1, 7, 0, &err) == LSIM_EARG);
out:
    lsim_pools_free(job);
    lsim_pools_free(oth);
    lsim_graph_free(g[0]);
    lsim_graph_free(g[1]);
}

static void percentiles(void)
{
    lsim_ns v[20];
    for (int i = 0; i < 20; i++) v[i] = 20 - i; /* 20 .. 1, unsorted */
    CHECK_I64(lsim_samples_percentile(v, 20, 5), 1);   /* ceil(0.05 * 20) = 1st */
    CHECK_I64(lsim_samples_percentile(v, 20, 50), 10); /* 10th */
    CHECK_I64(lsim_samples_percentile(v, 20, 95), 19); /* 19th */
    CHECK_I64(lsim_samples_percentile(v, 20, 100), 20);
    lsim_ns one[1] = {42};
    CHECK_I64(lsim_samples_percentile(one, 1, 5), 42);
}

int main(void)
{
    draws();
    percentiles();
    return check_result("test_samples");
}
