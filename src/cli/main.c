/* lumosim command-line interface. The only place that decides exit codes:
 * 0 success (a replay with large errors is still a success: it is a
 * measurement), 1 bad input or failure (one line on stderr naming the file),
 * 2 usage error. Nothing is written to stdout until every input has been
 * processed, so a failure never leaves a partial report behind. */
#include <dirent.h>
#include <malloc.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "lumosim/common.h"
#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/metrics.h"
#include "lumosim/report.h"
#include "lumosim/trace.h"

static const char *USAGE_MAIN =
    "usage: lumosim <command> [options]\n"
    "\n"
    "Trace-driven performance simulator for distributed LLM training: rebuilds the\n"
    "execution graph of PyTorch profiler (Kineto) traces and replays it.\n"
    "\n"
    "commands:\n"
    "  replay    replay Kineto traces and report actual vs predicted time\n"
    "  help      show help for a command (lumosim help replay)\n"
    "\n"
    "options:\n"
    "  -h, --help     this help\n"
    "  -V, --version  print the version\n";

static const char *USAGE_REPLAY =
    "usage: lumosim replay [options] PATH...\n"
    "\n"
    "Replays each Kineto trace (one file per GPU rank, .json or .json.gz) and\n"
    "reports, per rank and per ProfilerStep#N: actual vs predicted time and error,\n"
    "the breakdown (exposed compute, overlapped, exposed communication, other),\n"
    "the stream-active duty cycle, and graph statistics.\n"
    "A directory PATH stands for its *.json and *.json.gz files in name order\n"
    "(PyTorch execution traces, *.et.json*, are skipped).\n"
    "\n"
    "options:\n"
    "  --latency MODE   model (default): per-API launch latencies learned from\n"
    "                   launches onto idle streams; observed GPU start times are\n"
    "                   never read back. observed: each launch keeps its own\n"
    "                   latency and pre-window work is pinned (reproduces the\n"
    "                   trace exactly: a self-check of the graph)\n"
    "  --json           print the JSON document (docs/report-json.md)\n"
    "  --bin-ms N       duty-cycle bin width in ms (default 1)\n"
    "  --stats          print ingest/build/simulation figures to stderr\n"
    "  -h, --help       this help\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct pathlist {
    char **v;
    size_t n, cap;
} pathlist;

static int pl_push(pathlist *pl, const char *s)
{
    if (pl->n == pl->cap) {
        size_t nc = pl->cap ? pl->cap * 2 : 16;
        char **nv = realloc(pl->v, nc * sizeof *nv);
        if (!nv) return LSIM_ENOMEM;
        pl->v = nv;
        pl->cap = nc;
    }
    pl->v[pl->n] = strdup(s);
    if (!pl->v[pl->n]) return LSIM_ENOMEM;
    pl->n++;
    return 0;
}

static void pl_free(pathlist *pl)
{
    for (size_t i = 0; i < pl->n; i++) free(pl->v[i]);
    free(pl->v);
}

/* Expand PATH arguments: files as given, directories to their traces. */
static int expand_paths(char **args, int nargs, pathlist *out, lsim_err *err)
{
    for (int i = 0; i < nargs; i++) {
        struct stat st;
        if (stat(args[i], &st) != 0)
            return lsim_err_set(err, LSIM_EIO, "%s: cannot open: %s", args[i], strerror(errno));
        if (!S_ISDIR(st.st_mode)) {
            if (pl_push(out, args[i])) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
            continue;
        }
        DIR *d = opendir(args[i]);
        if (!d) return lsim_err_set(err, LSIM_EIO, "%s: cannot open directory: %s", args[i], strerror(errno));
        size_t first = out->n;
        struct dirent *de;
        int rc = 0;
        while ((de = readdir(d))) {
            const char *nm = de->d_name;
            if (nm[0] == '.' || strstr(nm, ".et.json")) continue;
            if (!ends_with(nm, ".json") && !ends_with(nm, ".json.gz")) continue;
            size_t len = strlen(args[i]) + strlen(nm) + 2;
            char *p = malloc(len);
            if (!p) {
                rc = LSIM_ENOMEM;
                break;
            }
            snprintf(p, len, "%s%s%s", args[i], ends_with(args[i], "/") ? "" : "/", nm);
            rc = pl_push(out, p);
            free(p);
            if (rc) break;
        }
        closedir(d);
        if (rc) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        if (out->n == first)
            return lsim_err_set(err, LSIM_ETRACE, "%s: directory holds no *.json or *.json.gz traces", args[i]);
        qsort(out->v + first, out->n - first, sizeof *out->v, cmp_str);
    }
    return 0;
}

static long peak_rss_kib(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    return ru.ru_maxrss;
}

static int cmd_replay(int argc, char **argv)
{
    lsim_build_opts bo;
    lsim_build_opts_default(&bo);
    bo.release_events = 1; /* the CLI frees the trace right after the build */
    int json = 0, stats = 0;
    lsim_ns bin_ns = 1000000;
    int first_path = -1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE_REPLAY, stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else if (!strcmp(a, "--latency") || !strncmp(a, "--latency=", 10)) {
            const char *v = a[9] == '=' ? a + 10 : (i + 1 < argc ? argv[++i] : NULL);
            if (v && !strcmp(v, "model")) bo.latency = LSIM_LAT_MODEL;
            else if (v && !strcmp(v, "observed")) bo.latency = LSIM_LAT_OBSERVED;
            else {
                fprintf(stderr, "lumosim: error: --latency takes 'model' or 'observed'\n");
                return 2;
            }
        } else if (!strcmp(a, "--bin-ms") || !strncmp(a, "--bin-ms=", 9)) {
            const char *v = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            char *e = NULL;
            double x = v ? strtod(v, &e) : 0;
            if (!v || *e || !(x > 0) || x > 1e6) {
                fprintf(stderr, "lumosim: error: --bin-ms takes a positive number of milliseconds\n");
                return 2;
            }
            bin_ns = (lsim_ns)(x * 1e6);
            if (bin_ns < 1) bin_ns = 1;
        } else if (!strcmp(a, "--")) {
            first_path = i + 1;
            break;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "lumosim: error: unknown option '%s' (see lumosim replay --help)\n", a);
            return 2;
        } else {
            first_path = i;
            break;
        }
    }
    /* options after paths are not accepted: keeps PATH lists unambiguous */
    if (first_path < 0 || first_path >= argc) {
        fprintf(stderr, "lumosim: error: replay needs at least one trace file or directory (see lumosim replay --help)\n");
        return 2;
    }
    for (int i = first_path; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1] && strcmp(argv[i - 1], "--")) {
            /* allow trailing options like `replay FILE --json` */
            const char *a = argv[i];
            if (!strcmp(a, "--json")) json = 1;
            else if (!strcmp(a, "--stats")) stats = 1;
            else {
                fprintf(stderr, "lumosim: error: unknown option '%s' after paths (see lumosim replay --help)\n", a);
                return 2;
            }
            argv[i] = NULL;
        }

    int status = 0;
    lsim_err err = {0};
    pathlist pl = {0};
    lsim_graph **graphs = NULL;
    lsim_rank_report *reps = NULL;
    lsim_replay_item *items = NULL;
    size_t ndone = 0;
    char **args = malloc((size_t)(argc - first_path) * sizeof *args);
    int nargs = 0;
    if (!args) {
        fprintf(stderr, "lumosim: error: out of memory\n");
        return 1;
    }
    for (int i = first_path; i < argc; i++)
        if (argv[i]) args[nargs++] = argv[i];
    if (expand_paths(args, nargs, &pl, &err)) {
        fprintf(stderr, "lumosim: error: %s\n", err.msg);
        status = 1;
        goto cleanup;
    }
    graphs = calloc(pl.n, sizeof *graphs);
    reps = calloc(pl.n, sizeof *reps);
    items = calloc(pl.n, sizeof *items);
    if (!graphs || !reps || !items) {
        fprintf(stderr, "lumosim: error: out of memory\n");
        status = 1;
        goto cleanup;
    }
    for (size_t i = 0; i < pl.n; i++) {
        lsim_trace *t = NULL;
        lsim_engine *e = NULL;
        double t0 = now_s();
        int rc = lsim_trace_read(pl.v[i], &t, &err);
        double t1 = now_s();
        if (!rc) rc = lsim_graph_build(t, &bo, &graphs[i], &err);
        double t2 = now_s();
        uint64_t bytes = t ? t->bytes_read : 0, evs = t ? t->events_seen : 0;
        lsim_trace_free(t);
        if (!rc) rc = lsim_engine_new(graphs[i], &e, &err);
        if (!rc) rc = lsim_engine_run(e, &err);
        double t3 = now_s();
        if (!rc) rc = lsim_metrics_compute(graphs[i], lsim_engine_start(e), lsim_engine_end(e), bin_ns, &reps[i], &err);
        if (!rc && stats) {
            double ing = t1 - t0, sim = t3 - t2;
            fprintf(stderr,
                    "lumosim: stats: %s: %.1f MB uncompressed, %llu events, ingest %.3f s (%.1f MB/s), "
                    "build %.3f s, %zu nodes %llu edges, simulate %.4f s (%.1f M node-events/s), peak RSS %.1f MiB\n",
                    pl.v[i], (double)bytes / 1e6, (unsigned long long)evs, ing, ing > 0 ? (double)bytes / 1e6 / ing : 0,
                    t2 - t1, graphs[i]->n, (unsigned long long)graphs[i]->nedges, sim,
                    sim > 0 ? (double)lsim_engine_events(e) / 1e6 / sim : 0, (double)peak_rss_kib() / 1024.0);
        }
        lsim_engine_free(e);
        if (rc) {
            fprintf(stderr, "lumosim: error: %s\n", err.msg);
            status = 1;
            goto cleanup;
        }
        items[i].g = graphs[i];
        items[i].r = &reps[i];
        ndone = i + 1;
    }
    if (json) {
        if (lsim_report_json(stdout, items, ndone, &err)) {
            fprintf(stderr, "lumosim: error: %s\n", err.msg);
            status = 1;
        }
    } else {
        lsim_report_table(stdout, items, ndone);
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "lumosim: error: cannot write the report: %s\n", strerror(errno));
        status = 1;
    }
cleanup:
    for (size_t i = 0; i < pl.n; i++) {
        if (graphs) lsim_graph_free(graphs[i]);
        if (reps) lsim_rank_report_clear(&reps[i]);
    }
    free(graphs);
    free(reps);
    free(items);
    free(args);
    pl_free(&pl);
    return status;
}

int main(int argc, char **argv)
{
    /* Large arrays grow by realloc while the graph is built. With glibc's
     * adaptive mmap threshold they would move onto the heap after the first
     * big free and every growth would copy, leaving freed heap behind; a fixed
     * threshold keeps them mmapped so realloc can use mremap. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    if (argc < 2) {
        fputs(USAGE_MAIN, stderr);
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "-h") || !strcmp(c, "--help")) {
        fputs(USAGE_MAIN, stdout);
        return 0;
    }
    if (!strcmp(c, "-V") || !strcmp(c, "--version") || !strcmp(c, "version")) {
        printf("lumosim %s\n", LSIM_VERSION);
        return 0;
    }
    if (!strcmp(c, "help")) {
        if (argc > 2 && !strcmp(argv[2], "replay")) fputs(USAGE_REPLAY, stdout);
        else fputs(USAGE_MAIN, stdout);
        return 0;
    }
    if (!strcmp(c, "replay")) return cmd_replay(argc - 2, argv + 2);
    fprintf(stderr, "lumosim: error: unknown command '%s' (see lumosim --help)\n", c);
    return 2;
}
