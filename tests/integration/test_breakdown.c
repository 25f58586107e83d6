/* The replay's breakdown, window, iterations and duty cycle on real traces,
 * checked against an independent oracle (tests/unit/oracle.h: interval
 * unions, intersections and differences, none of src/metrics.c's sweep).
 *
 * usage: test_breakdown fixtures TEST_DATA_DIR EXAMPLE_TRACE
 *        test_breakdown shared SHARED_TRACES_DIR
 *        test_breakdown job SHARED_TRACES_DIR
 *
 *   fixtures  tests/data's replayable fixtures and the bundled example, each
 *             in both latency modes
 *   shared    every shared single-rank trace, modelled latency
 *   job       megatron_tp8_a100's eight ranks coupled (collectives matched,
 *             clocks aligned, waits for peers split out: the figures job.sh
 *             bounds), each GPU against the oracle with the observed and the
 *             simulated waits
 * Exits 77 (skipped) when the shared traces are missing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../unit/check.h"
#include "../unit/oracle_report.h"

#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/job.h"
#include "lumosim/metrics.h"
#include "lumosim/trace.h"

#define BIN_NS 1000000 /* the CLI's default */

static lsim_graph *load(const char *path, lsim_latency_mode mode)
{
    lsim_trace *t = NULL;
    lsim_graph *g = NULL;
    lsim_err err;
    lsim_build_opts o;
    if (lsim_trace_read(path, &t, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return NULL;
    }
    lsim_build_opts_default(&o);
    o.latency = mode;
    if (lsim_graph_build(t, &o, &g, &err)) CHECK_MSG(0, "%s", err.msg);
    lsim_trace_free(t);
    return g;
}

/* metrics against the oracle for one GPU's results; waits may be NULL.
 * Returns the number of iterations (0 on failure). */
static uint32_t judge(const char *what, const lsim_graph *g, const lsim_ns *S, const lsim_ns *E, const lsim_ns *ow,
                  const lsim_ns *pw)
{
    lsim_rank_report m;
    ref_report r;
    lsim_err err;
    if (lsim_metrics_compute_ex(g, S, E, BIN_NS, ow, pw, &m, &err)) {
        CHECK_MSG(0, "%s: %s", what, err.msg);
        return 0;
    }
    uint32_t ni = m.niters;
    if (ref_compute(g, S, E, BIN_NS, ow, pw, &r)) {
        CHECK_MSG(0, "%s: the oracle failed (out of memory, or more than %d iterations)", what, MAXIT);
    } else {
        int bad = compare_report(what, &m, &r);
        /* the figures must mean something: a GPU rank with a window */
        CHECK_MSG(m.window_actual > 0 && m.gpu_nodes > 0, "%s: no window or no GPU work", what);
        if (!bad)
            printf("ok: %-60s window %.3f ms, exposed compute %.3f ms, overlapped %.3f ms, exposed comm %.3f ms "
                   "(waiting %.3f ms), other %.3f ms, %u iterations, %u bins\n",
                   what, m.window_predicted / 1e6, m.bd_predicted.exposed_compute / 1e6, m.bd_predicted.overlapped / 1e6,
                   m.bd_predicted.exposed_comm / 1e6, m.bd_predicted.exposed_comm_wait / 1e6, m.bd_predicted.other / 1e6,
                   m.niters, m.nbins_predicted);
        if (!bad && m.has_fidelity)
            printf("    GPU start error median %lld ns, p90 %lld ns (%llu ops); CPU median %lld ns, p90 %lld ns; "
                   "duty difference %.2f points\n",
                   (long long)m.start_err_gpu.median, (long long)m.start_err_gpu.p90,
                   (unsigned long long)m.start_err_gpu.n, (long long)m.start_err_cpu.median,
                   (long long)m.start_err_cpu.p90, 100 * m.duty_abs_diff);
        ref_free(&r);
    }
    lsim_rank_report_clear(&m);
    return ni;
}

/* Returns the number of iterations (0 on failure). */
static uint32_t one_file(const char *path, lsim_latency_mode mode)
{
    lsim_graph *g = load(path, mode);
    lsim_engine *e = NULL;
    lsim_err err;
    char what[512];
    uint32_t ni = 0;
    if (!g) return 0;
    snprintf(what, sizeof what, "%s (%s)", strrchr(path, '/') ? strrchr(path, '/') + 1 : path,
             mode == LSIM_LAT_MODEL ? "model" : "observed");
    if (lsim_engine_new(g, &e, &err) || lsim_engine_run(e, &err)) CHECK_MSG(0, "%s: %s", what, err.msg);
    else ni = judge(what, g, lsim_engine_start(e), lsim_engine_end(e), NULL, NULL);
    lsim_engine_free(e);
    lsim_graph_free(g);
    return ni;
}

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static int shared(const char *dir)
{
    static const char *rel[] = {
        "hta_single/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "hta_single/critical_path__cuda_event_sync__event_sync_trace.json.gz",
        "hta_single/critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz",
        "hta_single/critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
        "hta_single/nccl_parser_config__nccl_data.json.gz",
        "hta_single/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        "hta_single/timeline_analysis__sampled_rank-0.json.gz",
        "hta_single/trace_filter__sampled_rank-1.json.gz",
        "megatron_tp8_a100/rank0.json.gz",
        "megatron_tp8_a100/rank5.json.gz",
        "ddp4_mi300/rank0.json.gz", /* 3 ProfilerSteps: the GPU partition has inner boundaries */
    };
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, rel[i]);
        if (!exists(p)) {
            printf("SKIP: %s is missing: the shared traces cannot be checked\n", p);
            return 77;
        }
        uint32_t ni = one_file(p, LSIM_LAT_MODEL);
        if (strstr(rel[i], "ddp4_mi300")) CHECK_MSG(ni == 3, "%s: %u iterations, the trace has 3 ProfilerSteps", rel[i], ni);
    }
    return -1;
}

static int job(const char *dir)
{
    enum { N = 8 };
    lsim_graph *g[N] = {NULL};
    lsim_engine *e[N] = {NULL};
    lsim_job *j = NULL;
    lsim_ns *w = NULL;
    lsim_err err;
    char p[4096];
    for (int i = 0; i < N; i++) {
        snprintf(p, sizeof p, "%s/megatron_tp8_a100/rank%d.json.gz", dir, i);
        if (!exists(p)) {
            printf("SKIP: %s is missing: the job cannot be checked\n", p);
            return 77;
        }
    }
    for (int i = 0; i < N; i++) {
        snprintf(p, sizeof p, "%s/megatron_tp8_a100/rank%d.json.gz", dir, i);
        if (!(g[i] = load(p, LSIM_LAT_MODEL))) goto out;
    }
    if (lsim_job_match(g, N, &j, &err)) {
        CHECK_MSG(0, "match: %s", err.msg);
        goto out;
    }
    CHECK(lsim_job_align_clocks(j, &err) == 0);
    if (lsim_engines_new((const lsim_graph *const *)g, N, e, &err) || lsim_job_run(j, e, NULL, &err)) {
        CHECK_MSG(0, "run: %s", err.msg);
        goto out;
    }
    for (int i = 0; i < N; i++) {
        const lsim_ns *S = lsim_engine_start(e[i]), *E = lsim_engine_end(e[i]);
        lsim_ns *nw = realloc(w, (g[i]->n ? g[i]->n : 1) * sizeof *w);
        if (!nw) goto out;
        w = nw;
        lsim_job_waits(j, (size_t)i, g[i], S, E, w);
        /* the waits must be there, else the split is not exercised */
        lsim_ns sw = 0, so = 0;
        for (size_t v = 0; v < g[i]->n; v++) {
            sw += w[v];
            so += j->obs_wait[i] ? j->obs_wait[i][v] : 0;
        }
        CHECK_MSG(sw > 0 && so > 0, "GPU %d: no waiting for peers (simulated %lld, observed %lld ns)", i, (long long)sw,
                  (long long)so);
        snprintf(p, sizeof p, "megatron_tp8_a100 job, GPU %d", i);
        judge(p, g[i], S, E, j->obs_wait[i], w);
    }
out:
    free(w);
    for (int i = N - 1; i >= 0; i--) lsim_engine_free(e[i]);
    lsim_job_free(j);
    for (int i = 0; i < N; i++) lsim_graph_free(g[i]);
    return -1;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "fixtures")) {
        static const char *fx[] = {"cuda_graph.json", "hip_trace.json", "prewindow_megatron_rank0.json.gz"};
        char p[4096];
        for (size_t i = 0; i < sizeof fx / sizeof *fx; i++)
            for (int mode = 0; mode < 2; mode++) {
                snprintf(p, sizeof p, "%s/%s", argv[2], fx[i]);
                one_file(p, mode ? LSIM_LAT_OBSERVED : LSIM_LAT_MODEL);
            }
        one_file(argv[3], LSIM_LAT_MODEL);
        one_file(argv[3], LSIM_LAT_OBSERVED);
    } else if (argc >= 3 && (!strcmp(argv[1], "shared") || !strcmp(argv[1], "job"))) {
        if (!exists(argv[2])) {
            printf("SKIP: shared traces not found at %s\n", argv[2]);
            return 77;
        }
        int rc = !strcmp(argv[1], "shared") ? shared(argv[2]) : job(argv[2]);
        if (rc == 77) return 77;
    } else {
        fprintf(stderr, "usage: test_breakdown fixtures DATA EXAMPLE | shared DIR | job DIR\n");
        return 2;
    }
    return check_result("test_breakdown");
}
