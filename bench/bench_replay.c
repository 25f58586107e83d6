/* bench_replay: time each phase of a lumosim replay on one or more traces.
 *
 *   bench_replay [--runs R] [--latency model|observed] [--bin-us B]
 *                [--no-fork] TRACE...
 *
 * Per trace: lsim_trace_read (ingest), lsim_graph_build, lsim_engine_new,
 * lsim_engine_run R times (median reported), lsim_metrics_compute. Prints one
 * line per phase, a summary, and one machine-readable line
 *
 *   BENCH key=value ... file=PATH
 *
 * (file last, so a path may contain spaces). MB = 10^6 bytes, MiB = 2^20.
 * Peak RSS is getrusage(RUSAGE_SELF).ru_maxrss; with more than one trace each
 * one is measured in a fresh child process (fork) so every figure is that
 * file's own peak, unless --no-fork is given (then peaks are cumulative).
 * Exit status: 0 if every trace replayed, 1 if any failed, 2 on bad usage. */
#include <stdint.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lumosim/common.h"
#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/metrics.h"
#include "lumosim/trace.h"

/* Peak resident set so far, MiB (Linux reports ru_maxrss in KiB). */
static double peak_rss_mib(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    return (double)ru.ru_maxrss / 1024.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct bench_opts {
    int runs;
    lsim_latency_mode latency;
    lsim_ns bin_ns;
} bench_opts;

static int bench_one(const char *path, const bench_opts *bo)
{
    lsim_err err = {0, {0}};
    lsim_trace *t = NULL;
    lsim_graph *g = NULL;
    lsim_engine *e = NULL;
    lsim_rank_report rep;
    int rc = 1;
    memset(&rep, 0, sizeof rep);

    double rss_base = peak_rss_mib();
    double t_start = lsim_now_s();

    /* ingest */
    double t0 = lsim_now_s();
    if (lsim_trace_read(path, &t, &err) != 0) {
        fprintf(stderr, "bench_replay: ingest failed: %s\n", err.msg);
        goto out;
    }
    double ingest_s = lsim_now_s() - t0;
    double rss_ingest = peak_rss_mib();
    uint64_t bytes = t->bytes_read, events = t->events_seen;
    size_t kept = t->nev;
    double mb = (double)bytes / 1e6;
    printf("%s\n", path);
    printf("  ingest   %9.3f s  %10.1f MB  %8.1f MB/s  %10llu events  %10.0f events/s"
           "  (%zu complete events kept)\n",
           ingest_s, mb, mb / ingest_s, (unsigned long long)events,
           (double)events / ingest_s, kept);

    /* graph */
    lsim_build_opts o;
    lsim_build_opts_default(&o);
    o.latency = bo->latency;
    o.release_events = 1; /* as the CLI does */
    t0 = lsim_now_s();
    if (lsim_graph_build(t, &o, &g, &err) != 0) {
        fprintf(stderr, "bench_replay: graph build failed: %s\n", err.msg);
        goto out;
    }
    double build_s = lsim_now_s() - t0;
    lsim_trace_free(t); /* the CLI keeps only the graph from here on */
    t = NULL;
    double rss_build = peak_rss_mib();
    printf("  build    %9.3f s  %10zu nodes  %10llu edges  (%llu inferred, %llu dropped)\n",
           build_s, g->n, (unsigned long long)g->nedges,
           (unsigned long long)lsim_graph_inferred_total(g),
           (unsigned long long)lsim_graph_dropped_total(g));

    /* engine */
    t0 = lsim_now_s();
    if (lsim_engine_new(g, &e, &err) != 0) {
        fprintf(stderr, "bench_replay: engine setup failed: %s\n", err.msg);
        goto out;
    }
    double enew_s = lsim_now_s() - t0;
    double *runs = malloc((size_t)bo->runs * sizeof *runs);
    if (!runs) {
        fprintf(stderr, "bench_replay: out of memory\n");
        goto out;
    }
    for (int i = 0; i < bo->runs; i++) {
        t0 = lsim_now_s();
        if (lsim_engine_run(e, &err) != 0) {
            fprintf(stderr, "bench_replay: engine run failed: %s\n", err.msg);
            free(runs);
            goto out;
        }
        runs[i] = lsim_now_s() - t0;
    }
    qsort(runs, (size_t)bo->runs, sizeof *runs, cmp_double);
    double run_med = bo->runs % 2 ? runs[bo->runs / 2]
                                  : 0.5 * (runs[bo->runs / 2 - 1] + runs[bo->runs / 2]);
    double run_min = runs[0], run_max = runs[bo->runs - 1];
    free(runs);
    uint64_t nev = lsim_engine_events(e);
    double neps = run_med > 0 ? (double)nev / run_med : 0;
    printf("  engine   %9.6f s  median of %d runs (min %.6f, max %.6f; setup %.3f s)"
           "  %llu node-events  %.2f M node-events/s\n",
           run_med, bo->runs, run_min, run_max, enew_s, (unsigned long long)nev,
           neps / 1e6);

    /* metrics */
    t0 = lsim_now_s();
    if (lsim_metrics_compute(g, lsim_engine_start(e), lsim_engine_end(e), bo->bin_ns,
                             &rep, &err) != 0) {
        fprintf(stderr, "bench_replay: metrics failed: %s\n", err.msg);
        goto out;
    }
    double metrics_s = lsim_now_s() - t0;
    printf("  metrics  %9.3f s  window actual %.3f ms, predicted %.3f ms (%+.2f%%)\n",
           metrics_s, (double)rep.window_actual / 1e6, (double)rep.window_predicted / 1e6,
           100.0 * lsim_rel_err(rep.window_actual, rep.window_predicted));

    double total_s = lsim_now_s() - t_start;
    double rss = peak_rss_mib();
    double ratio = mb > 0 ? rss * 1048576.0 / (double)bytes : 0;
    printf("  summary  %.1f MB uncompressed, %llu events: ingest %.1f MB/s, %.0f events/s;"
           " graph %zu nodes, %llu edges, build %.3f s; engine %.2f M node-events/s;"
           " peak RSS %.1f MiB (%.3f x uncompressed); total %.3f s\n",
           mb, (unsigned long long)events, mb / ingest_s, (double)events / ingest_s, g->n,
           (unsigned long long)g->nedges, build_s, neps / 1e6, rss, ratio, total_s);
    printf("BENCH bytes=%llu events=%llu kept=%zu ingest_s=%.6f ingest_mbps=%.3f "
           "ingest_eps=%.1f nodes=%zu edges=%llu build_s=%.6f engine_new_s=%.6f "
           "runs=%d run_s=%.9f run_min_s=%.9f node_events=%llu engine_neps=%.1f "
           "metrics_s=%.6f rss_base_mib=%.2f rss_ingest_mib=%.2f rss_build_mib=%.2f "
           "rss_mib=%.2f rss_ratio=%.4f total_s=%.6f latency=%s file=%s\n",
           (unsigned long long)bytes, (unsigned long long)events, kept, ingest_s,
           mb / ingest_s, (double)events / ingest_s, g->n, (unsigned long long)g->nedges,
           build_s, enew_s, bo->runs, run_med, run_min, (unsigned long long)nev, neps,
           metrics_s, rss_base, rss_ingest, rss_build, rss, ratio, total_s,
           bo->latency == LSIM_LAT_OBSERVED ? "observed" : "model", path);
    rc = 0;
out:
    lsim_rank_report_clear(&rep);
    if (e)
        lsim_engine_free(e);
    if (g)
        lsim_graph_free(g);
    if (t)
        lsim_trace_free(t);
    fflush(stdout);
    return rc;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_replay [--runs R] [--latency model|observed] [--bin-us B]"
            " [--no-fork] TRACE...\n");
}

int main(int argc, char **argv)
{
    mallopt(M_MMAP_THRESHOLD, 1 << 20); /* as the CLI does (see src/cli/main.c) */
    bench_opts bo = {5, LSIM_LAT_MODEL, 1000000};
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep phase lines and errors in order */
    int fork_each = 1, first = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--runs") == 0 && i + 1 < argc) {
            bo.runs = atoi(argv[++i]);
        } else if (strcmp(a, "--latency") == 0 && i + 1 < argc) {
            const char *m = argv[++i];
            if (strcmp(m, "model") == 0)
                bo.latency = LSIM_LAT_MODEL;
            else if (strcmp(m, "observed") == 0)
                bo.latency = LSIM_LAT_OBSERVED;
            else {
                usage();
                return 2;
            }
        } else if (strcmp(a, "--bin-us") == 0 && i + 1 < argc) {
            bo.bin_ns = (lsim_ns)atoll(argv[++i]) * 1000;
        } else if (strcmp(a, "--no-fork") == 0) {
            fork_each = 0;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            return 0;
        } else if (strcmp(a, "--") == 0) {
            first = i + 1;
            break;
        } else if (a[0] == '-') {
            usage();
            return 2;
        } else {
            first = i;
            break;
        }
    }
    if (first == 0 || first >= argc || bo.runs < 1 || bo.bin_ns <= 0) {
        usage();
        return 2;
    }
    int nfiles = argc - first, failed = 0;
    for (int i = first; i < argc; i++) {
        if (nfiles == 1 || !fork_each) {
            failed |= bench_one(argv[i], &bo) != 0;
            continue;
        }
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
            perror("bench_replay: fork");
            failed |= bench_one(argv[i], &bo) != 0;
        } else if (pid == 0) {
            _exit(bench_one(argv[i], &bo) != 0);
        } else {
            int st = 0;
            if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                if (WIFSIGNALED(st))
                    fprintf(stderr, "bench_replay: %s: killed by signal %d\n", argv[i],
                            WTERMSIG(st));
                failed = 1;
            }
        }
    }
    return failed ? 1 : 0;
}
