/* Pre-window GPU work (launched before the trace window) is the GPU's
 * initial state: in both latency modes every such op is released at its
 * observed start, in stream order. This shows that the rule matters: each
 * fixture is replayed in model mode as built, and again with the pre-window
 * releases moved back to the window start (the rule before issue 16, rebuilt
 * here on a clone so the product needs no switch); the observed-latency
 * replay is the reference that must stay exact.
 *
 * usage: test_prewindow TEST_DATA_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../unit/check.h"

#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/metrics.h"
#include "lumosim/trace.h"

static const char *g_data;

static lsim_graph *load(const char *rel, lsim_latency_mode m)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", g_data, rel);
    lsim_trace *t = NULL;
    lsim_graph *g = NULL;
    lsim_err err = {0};
    if (lsim_trace_read(path, &t, &err)) {
        CHECK_MSG(0, "cannot read %s: %s", path, err.msg);
        return NULL;
    }
    lsim_build_opts o;
    lsim_build_opts_default(&o);
    o.latency = m;
    if (lsim_graph_build(t, &o, &g, &err)) CHECK_MSG(0, "cannot build %s: %s", path, err.msg);
    lsim_trace_free(t);
    return g;
}

typedef struct outcome {
    double window_err, iter_err; /* iter_err: largest |error| (0 if none) */
    double cpu_iter_err;         /* the same of the iterations' CPU-side spans */
    double bd_err;               /* sum of |breakdown component error| / window */
    lsim_ns pw_start_err;        /* max |start - observed start| over pre-window ops */
    lsim_ns max_start_err;
    int ok;
} outcome;

static outcome replay(const lsim_graph *g)
{
    outcome o = {0};
    lsim_engine *e = NULL;
    lsim_rank_report r = {0};
    lsim_err err = {0};
    if (lsim_engine_new(g, &e, &err) || lsim_engine_run(e, &err) ||
        lsim_metrics_compute(g, lsim_engine_start(e), lsim_engine_end(e), 1000000, &r, &err)) {
        CHECK_MSG(0, "replay failed: %s", err.msg);
        lsim_engine_free(e);
        return o;
    }
    o.window_err = lsim_rel_err(r.window_actual, r.window_predicted);
    for (uint32_t i = 0; i < r.niters; i++) {
        double x = fabs(lsim_rel_err(r.iters[i].actual, r.iters[i].predicted));
        if (x > o.iter_err) o.iter_err = x;
        x = fabs(lsim_rel_err(r.iters[i].cpu_actual, r.iters[i].cpu_predicted));
        if (x > o.cpu_iter_err) o.cpu_iter_err = x;
    }
    o.bd_err = (double)(llabs(r.bd_predicted.exposed_compute - r.bd_actual.exposed_compute) +
                        llabs(r.bd_predicted.overlapped - r.bd_actual.overlapped) +
                        llabs(r.bd_predicted.exposed_comm - r.bd_actual.exposed_comm) +
                        llabs(r.bd_predicted.other - r.bd_actual.other)) /
               (double)r.window_actual;
    const lsim_ns *s = lsim_engine_start(e);
    for (size_t v = 0; v < g->n; v++)
        if (g->flags[v] & LSIM_NF_PREWINDOW) {
            lsim_ns d = llabs(s[v] - g->obs_start[v]);
            if (d > o.pw_start_err) o.pw_start_err = d;
        }
    o.max_start_err = r.max_abs_start_err;
    o.ok = 1;
    lsim_rank_report_clear(&r);
    lsim_engine_free(e);
    return o;
}

/* The graph as the old rule made it: pre-window work released at t0. */
static outcome replay_released_at_t0(const lsim_graph *g)
{
    lsim_graph *c = NULL;
    lsim_err err = {0};
    outcome o = {0};
    if (lsim_graph_clone(g, &c, &err)) {
        CHECK_MSG(0, "clone: %s", err.msg);
        return o;
    }
    for (size_t v = 0; v < c->n; v++)
        if (c->flags[v] & LSIM_NF_PREWINDOW) c->release[v] = c->t0;
    o = replay(c);
    lsim_graph_free(c);
    return o;
}

/* Which nodes are released at their observed start: exactly the GPU ops
 * without a launch call in the trace, counted by the report. */
static void check_release_rule(const lsim_graph *g, const char *rel)
{
    size_t pw = 0, pinned = 0;
    for (size_t v = 0; v < g->n; v++) {
        int is_pw = (g->flags[v] & LSIM_NF_PREWINDOW) != 0;
        int launched = 0;
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
            if ((g->in_class[k] & 0x7f) == LSIM_E_LAUNCH) launched = 1;
        if (g->procs[g->proc[v]].is_gpu) CHECK_MSG(is_pw == !launched, "%s: node %zu: pre-window flag %d, launch edge %d", rel, v, is_pw, launched);
        if (!is_pw) continue;
        pw++;
        CHECK_MSG(g->procs[g->proc[v]].is_gpu, "%s: CPU node %zu flagged pre-window", rel, v);
        if (g->release[v] == g->obs_start[v]) pinned++;
        else CHECK_MSG(0, "%s: pre-window node %zu released at %lld, observed start %lld", rel, v, (long long)g->release[v],
                       (long long)g->obs_start[v]);
    }
    CHECK_MSG(pw > 0 && pw == g->prewindow, "%s: %zu flagged, prewindow %llu", rel, pw, (unsigned long long)g->prewindow);
    CHECK_MSG(lsim_metrics_prewindow_released(g) == pinned && pinned == pw, "%s: counted %zu released, %zu pinned of %zu",
              rel, lsim_metrics_prewindow_released(g), pinned, pw);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_prewindow TEST_DATA_DIR\n");
        return 2;
    }
    g_data = argv[1];

    /* A hand-made trace: a 40 ms NCCL backlog and two kernels queued behind
     * it on the compute stream (their wait on the NCCL stream is pre-window
     * too), then a blocking D2H copy queued behind those. Released at t0 the
     * backlog ends 40 ms early and the copy returns 40 ms early: the window
     * loses the copy's wait, and so does the one iteration's GPU row (the
     * window), while its CPU-side span loses nearly all of it. */
    const char *bl = "prewindow_blocking.json";
    lsim_graph *gm = load(bl, LSIM_LAT_MODEL), *go = load(bl, LSIM_LAT_OBSERVED);
    if (gm && go) {
        check_release_rule(gm, bl);
        check_release_rule(go, bl);
        CHECK_I64(gm->prewindow, 3);
        outcome now = replay(gm), old = replay_released_at_t0(gm), obs = replay(go);
        fprintf(stderr, "%s: model window %+.5f iter %.5f (CPU %.5f) | at t0 window %+.5f iter %.5f (CPU %.5f) | observed "
                        "window %+.5f\n",
                bl, now.window_err, now.iter_err, now.cpu_iter_err, old.window_err, old.iter_err, old.cpu_iter_err,
                obs.window_err);
        CHECK(now.ok && old.ok && obs.ok);
        CHECK_MSG(obs.window_err == 0 && obs.max_start_err == 0, "observed replay not exact (%g, %lld ns)", obs.window_err,
                  (long long)obs.max_start_err);
        CHECK_MSG(fabs(now.window_err) <= 0.001, "model window error %+.5f", now.window_err);
        CHECK_MSG(now.iter_err <= 0.001, "model iteration error %.5f", now.iter_err);
        CHECK_MSG(now.cpu_iter_err <= 0.001, "model iteration error, CPU side %.5f", now.cpu_iter_err);
        CHECK_MSG(old.window_err <= -0.05, "released at t0 the window should be >= 5 %% short: %+.5f", old.window_err);
        CHECK_MSG(old.iter_err >= 0.05, "released at t0 the iteration should be >= 5 %% short: %.5f", old.iter_err);
        CHECK_MSG(old.cpu_iter_err >= 0.5, "released at t0 the iteration's CPU side should be >= 50 %% short: %.5f",
                  old.cpu_iter_err);
        CHECK_MSG(now.pw_start_err == 0, "pre-window op moved by %lld ns", (long long)now.pw_start_err);
    }
    lsim_graph_free(gm);
    lsim_graph_free(go);

    /* The real trace with its window opened later (make_prewindow.py): the
     * backlog ends before the CPU's first call, so the window does not move,
     * but released at t0 the compute-stream kernels that waited for the
     * NCCL kernel run under it: exposed compute turns into overlap. */
    const char *mg = "prewindow_megatron_rank0.json.gz";
    gm = load(mg, LSIM_LAT_MODEL);
    go = load(mg, LSIM_LAT_OBSERVED);
    if (gm && go) {
        check_release_rule(gm, mg);
        check_release_rule(go, mg);
        outcome now = replay(gm), old = replay_released_at_t0(gm), obs = replay(go);
        fprintf(stderr, "%s: model window %+.5f breakdown %.5f pre-window start err %lld ns | at t0 window %+.5f "
                        "breakdown %.5f pre-window start err %lld ns\n",
                mg, now.window_err, now.bd_err, (long long)now.pw_start_err, old.window_err, old.bd_err,
                (long long)old.pw_start_err);
        CHECK(now.ok && old.ok && obs.ok);
        CHECK_MSG(obs.window_err == 0 && obs.max_start_err == 0, "observed replay not exact");
        CHECK_MSG(fabs(now.window_err) <= 0.0001, "model window error %+.5f", now.window_err);
        CHECK_MSG(now.bd_err <= 0.001, "model breakdown error %.5f of the window", now.bd_err);
        CHECK_MSG(old.bd_err >= 0.01, "released at t0 the breakdown should move >= 1 %%: %.5f", old.bd_err);
        /* stream order stays: the model's queued gap may hold one back a
         * few microseconds behind its predecessor */
        CHECK_MSG(now.pw_start_err <= 5000, "pre-window op moved by %lld ns", (long long)now.pw_start_err);
        CHECK_MSG(old.pw_start_err >= 5000000, "released at t0 pre-window ops should start >= 5 ms early: %lld ns",
                  (long long)old.pw_start_err);
        CHECK_MSG(now.max_start_err < old.max_start_err, "node error %lld ns, at t0 %lld ns", (long long)now.max_start_err,
                  (long long)old.max_start_err);
    }
    lsim_graph_free(gm);
    lsim_graph_free(go);
    return check_result("test_prewindow");
}
