/* bench_store: the HDF5 graph store against the JSON it came from.
 *
 * usage: bench_store [--runs R] [--dir D] TRACE...
 *
 * Parses the traces and builds their graphs (the JSON path, timed), writes
 * one store per compression setting (none, deflate 1, deflate 4) and loads it
 * back R times (median). Prints per setting: file size, bytes per million
 * nodes, build (write) and load throughput in nodes/s and MB/s, and how many
 * times faster loading the store is than parsing the JSON. Also BENCH lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lumosim/graph.h"
#include "lumosim/store.h"
#include "lumosim/trace.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int runs = 5, first = 1;
    const char *dir = "/tmp";
    while (first < argc && argv[first][0] == '-') {
        if (!strcmp(argv[first], "--runs") && first + 1 < argc) runs = atoi(argv[++first]);
        else if (!strcmp(argv[first], "--dir") && first + 1 < argc) dir = argv[++first];
        else {
            fprintf(stderr, "usage: bench_store [--runs R] [--dir D] TRACE...\n");
            return 2;
        }
        first++;
    }
    if (first >= argc || runs < 1 || runs > 100) {
        fprintf(stderr, "usage: bench_store [--runs R] [--dir D] TRACE...\n");
        return 2;
    }
    size_t n = (size_t)(argc - first);
    lsim_graph **g = calloc(n, sizeof *g);
    double *tj = calloc((size_t)runs, sizeof *tj);
    if (!g || !tj) return 1;
    lsim_err err = {0};
    uint64_t nodes = 0, json_bytes = 0;
    /* JSON: parse + build, R times (graphs of the last run are kept) */
    for (int r = 0; r < runs; r++) {
        double t0 = lsim_now_s();
        for (size_t i = 0; i < n; i++) {
            lsim_trace *t = NULL;
            lsim_build_opts o;
            lsim_build_opts_default(&o);
            o.release_events = 1;
            if (g[i]) lsim_graph_free(g[i]);
            g[i] = NULL;
            if (lsim_trace_read(argv[first + (int)i], &t, &err) || lsim_graph_build(t, &o, &g[i], &err)) {
                fprintf(stderr, "bench_store: %s\n", err.msg);
                return 1;
            }
            if (r == 0) json_bytes += t->bytes_read;
            lsim_trace_free(t);
        }
        tj[r] = lsim_now_s() - t0;
    }
    for (size_t i = 0; i < n; i++) nodes += g[i]->n;
    double json_s = median(tj, runs);
    printf("%zu traces, %.1f MB of JSON, %llu nodes: parse + build %.3f s (%.2f M nodes/s), median of %d\n", n,
           (double)json_bytes / 1e6, (unsigned long long)nodes, json_s, (double)nodes / json_s / 1e6, runs);
    printf("%-10s %10s %14s %12s %12s %12s %12s %10s\n", "store", "MiB", "B/M nodes", "write s", "load s",
           "load Mn/s", "load MB/s", "vs JSON");
    const int levels[] = {-1, 1, 4}; /* -1: no compression */
    for (size_t k = 0; k < sizeof levels / sizeof *levels; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/bench_store_%d_%ld.h5", dir, levels[k], (long)getpid());
        lsim_store_write_opts wo = {"bench_store", NULL, levels[k]};
        double t0 = lsim_now_s();
        if (lsim_store_write_graphs_ex(path, g, n, &wo, &err)) {
            fprintf(stderr, "bench_store: %s\n", err.msg);
            return 1;
        }
        double write_s = lsim_now_s() - t0;
        struct stat st;
        stat(path, &st);
        double *tl = calloc((size_t)runs, sizeof *tl);
        for (int r = 0; r < runs; r++) {
            lsim_graph **back = NULL;
            size_t nb = 0;
            t0 = lsim_now_s();
            if (lsim_store_read_graphs(path, 0, SIZE_MAX, &back, &nb, &err)) {
                fprintf(stderr, "bench_store: %s\n", err.msg);
                return 1;
            }
            tl[r] = lsim_now_s() - t0;
            lsim_store_free_graphs(back, nb);
        }
        double load_s = median(tl, runs);
        free(tl);
        char name[32];
        snprintf(name, sizeof name, levels[k] > 0 ? "deflate %d" : "none", levels[k]);
        printf("%-10s %10.2f %14.0f %12.4f %12.4f %12.2f %12.1f %9.1fx\n", name, (double)st.st_size / 1048576.0,
               (double)st.st_size / ((double)nodes / 1e6), write_s, load_s, (double)nodes / load_s / 1e6,
               (double)st.st_size / 1e6 / load_s, json_s / load_s);
        printf("BENCH store=%s bytes=%lld nodes=%llu bytes_per_mnode=%.0f write_s=%.6f load_s=%.6f json_s=%.6f "
               "speedup=%.2f\n",
               levels[k] > 0 ? (levels[k] == 1 ? "deflate1" : "deflate4") : "none", (long long)st.st_size,
               (unsigned long long)nodes, (double)st.st_size / ((double)nodes / 1e6), write_s, load_s, json_s,
               json_s / load_s);
        remove(path);
    }
    for (size_t i = 0; i < n; i++) lsim_graph_free(g[i]);
    free(g);
    free(tj);
    return 0;
}
