/* bench_store: the HDF5 graph store against the JSON it came from, and the
 * compression of each dataset class.
 *
 * usage: bench_store [--runs R] [--dir D] TRACE...
 *        bench_store [--runs R] [--dir D] --classes STORE.h5
 *
 * TRACE...: parses the traces and builds their graphs (the JSON path,
 * timed), writes one store per whole-store setting (none, shuffle, deflate
 * 1, deflate 4, the default per class) and loads it back R times
 * (median). Prints per setting: file size, bytes per million nodes, write
 * and load time, load throughput in nodes/s and MB/s, and how many times
 * faster loading the store is than parsing the JSON. Also BENCH lines.
 *
 * --classes STORE.h5: reads the graphs of a store (e.g. a synthesized job)
 * and, for each dataset class (store.h LSIM_STORE_CLASS_*) and each filter
 * (none, shuffle, shuffle + deflate 1, shuffle + deflate 4), writes a store
 * with that class so filtered and every other class unfiltered, R times,
 * and loads it R times: the class's stored bytes, and the store's write
 * and load time (medians; CPU seconds of this process, and wall) next to
 * the all-unfiltered store's, so the difference is the class's own cost. Then the default against deflate 1
 * everywhere (the previous default). Also BENCH lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "lumosim/graph.h"
#include "lumosim/report.h"
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

static const char *const class_names[LSIM_STORE_NCLASSES] = {"bytes (uint8)", "ids (32-bit)", "int64",
                                                             "float64", "chars (strings)"};
static const char *const class_keys[LSIM_STORE_NCLASSES] = {"bytes", "ids", "int64", "float64", "chars"};

/* The class of a dataset, as the store's writer decides it (io/h5_util.c). */
static int class_of(hid_t d, const char *name)
{
    hid_t t = H5Dget_type(d);
    size_t n = strlen(name), sz = H5Tget_size(t);
    H5T_class_t k = H5Tget_class(t);
    H5Tclose(t);
    if (k == H5T_STRING || (n >= 5 && !strcmp(name + n - 5, "chars"))) return LSIM_STORE_CLASS_CHARS;
    if (k == H5T_FLOAT) return LSIM_STORE_CLASS_FLOAT;
    return sz == 1 ? LSIM_STORE_CLASS_BYTES : sz == 4 ? LSIM_STORE_CLASS_IDS : LSIM_STORE_CLASS_INT64;
}

typedef struct {
    unsigned long long stored[LSIM_STORE_NCLASSES], raw[LSIM_STORE_NCLASSES];
} class_bytes;

static herr_t visit(hid_t o, const char *name, const H5O_info_t *info, void *op)
{
    class_bytes *cb = op;
    if (info->type != H5O_TYPE_DATASET) return 0;
    hid_t d = H5Dopen2(o, name, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    int k = class_of(d, name);
    cb->stored[k] += H5Dget_storage_size(d);
    cb->raw[k] += (unsigned long long)H5Sget_simple_extent_npoints(sp) * H5Tget_size(t);
    H5Sclose(sp);
    H5Tclose(t);
    H5Dclose(d);
    return 0;
}

static int bytes_by_class(const char *path, class_bytes *cb)
{
    memset(cb, 0, sizeof *cb);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return -1;
    herr_t rc = H5Ovisit(f, H5_INDEX_NAME, H5_ITER_NATIVE, visit, cb);
    H5Fclose(f);
    return rc < 0 ? -1 : 0;
}

typedef struct {
    double write_s, load_s; /* wall */
    double write_cpu, load_cpu; /* this process's CPU (user + system) */
    long long bytes;
} timing;

/* CPU seconds of this process: on a machine shared with other work the
 * wall time of one process measures the others as much as itself. */
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Write the graphs R times with opts (the last file kept), load it R times. */
static int time_store(const char *path, lsim_graph **g, size_t n, const lsim_store_write_opts *wo, int runs,
                      timing *t)
{
    lsim_err err = {0};
    double *tw = calloc((size_t)runs * 4, sizeof *tw);
    if (!tw) return -1;
    double *tl = tw + runs, *cw = tw + 2 * runs, *cl = tw + 3 * runs;
    for (int r = 0; r < runs; r++) {
        remove(path);
        double t0 = lsim_now_s(), c0 = cpu_s();
        if (lsim_store_write_graphs_ex(path, g, n, wo, &err)) {
            fprintf(stderr, "bench_store: %s\n", err.msg);
            return -1;
        }
        tw[r] = lsim_now_s() - t0;
        cw[r] = cpu_s() - c0;
    }
    for (int r = 0; r < runs; r++) {
        lsim_graph **back = NULL;
        size_t nb = 0;
        double t0 = lsim_now_s(), c0 = cpu_s();
        if (lsim_store_read_graphs(path, 0, SIZE_MAX, &back, &nb, &err)) {
            fprintf(stderr, "bench_store: %s\n", err.msg);
            return -1;
        }
        tl[r] = lsim_now_s() - t0;
        cl[r] = cpu_s() - c0;
        lsim_store_free_graphs(back, nb);
    }
    struct stat st;
    t->bytes = stat(path, &st) == 0 ? (long long)st.st_size : -1;
    t->write_s = median(tw, runs);
    t->load_s = median(tl, runs);
    t->write_cpu = median(cw, runs);
    t->load_cpu = median(cl, runs);
    free(tw);
    return 0;
}

static const char *filter_name(int f, char *buf, size_t len)
{
    if (f == LSIM_STORE_FILTER_NONE) return "none";
    if (f == LSIM_STORE_FILTER_SHUFFLE) return "shuffle";
    if (f == LSIM_STORE_FILTER_DEFAULT) return "default";
    snprintf(buf, len, "deflate%d", f);
    return buf;
}

/* --classes: the per-class table. */
static int classes(const char *store, const char *dir, int runs)
{
    lsim_graph **g = NULL;
    size_t n = 0;
    lsim_err err = {0};
    if (lsim_store_read_graphs(store, 0, SIZE_MAX, &g, &n, &err)) {
        fprintf(stderr, "bench_store: %s\n", err.msg);
        return 1;
    }
    unsigned long long nodes = 0, edges = 0;
    for (size_t i = 0; i < n; i++) nodes += g[i]->n, edges += g[i]->nedges;
    char path[1024], nb[16];
    snprintf(path, sizeof path, "%s/bench_store_classes_%ld.h5", dir, (long)getpid());
    printf("%zu GPUs, %llu nodes, %llu edges, from %s; medians of %d writes and %d loads\n", n, nodes, edges, store,
           runs, runs);
    printf("%-16s %-9s %12s %12s %10s %10s %10s %10s\n", "class", "filter", "class MiB", "raw MiB", "write cpu",
           "load cpu", "write s", "load s");
    /* no source checksums: a synthesized job has no trace files */
    const char **nosrc = calloc(n ? n : 1, sizeof *nosrc);
    if (!nosrc) return 1;
    lsim_store_write_opts base = {"bench_store", nosrc, LSIM_STORE_FILTER_NONE, {0}};
    timing t0;
    class_bytes cb;
    if (time_store(path, g, n, &base, runs, &t0) || bytes_by_class(path, &cb)) return 1;
    printf("%-16s %-9s %12s %12s %10.3f %10.3f %10.3f %10.3f\n", "(all)", "none", "-", "-", t0.write_cpu,
           t0.load_cpu, t0.write_s, t0.load_s);
    printf("BENCH storeclass class=all filter=none bytes=%lld write_cpu=%.6f load_cpu=%.6f write_s=%.6f load_s=%.6f "
           "nodes=%llu\n",
           t0.bytes, t0.write_cpu, t0.load_cpu, t0.write_s, t0.load_s, nodes);
    static const int filters[] = {LSIM_STORE_FILTER_NONE, LSIM_STORE_FILTER_SHUFFLE, 1, 4};
    for (int k = 0; k < LSIM_STORE_NCLASSES; k++) {
        for (size_t f = 0; f < sizeof filters / sizeof *filters; f++) {
            lsim_store_write_opts wo = base;
            wo.filters[k] = filters[f];
            timing t;
            if (time_store(path, g, n, &wo, runs, &t) || bytes_by_class(path, &cb)) return 1;
            const char *fn = filter_name(filters[f], nb, sizeof nb);
            printf("%-16s %-9s %12.3f %12.3f %10.3f %10.3f %10.3f %10.3f\n", class_names[k], fn,
                   (double)cb.stored[k] / 1048576.0, (double)cb.raw[k] / 1048576.0, t.write_cpu, t.load_cpu,
                   t.write_s, t.load_s);
            printf("BENCH storeclass class=%s filter=%s class_bytes=%llu raw_bytes=%llu bytes=%lld write_cpu=%.6f "
                   "load_cpu=%.6f write_s=%.6f load_s=%.6f\n",
                   class_keys[k], fn, cb.stored[k], cb.raw[k], t.bytes, t.write_cpu, t.load_cpu, t.write_s, t.load_s);
        }
    }
    /* the whole store: the default per class against the previous default */
    static const int whole[] = {1, LSIM_STORE_FILTER_DEFAULT};
    for (size_t w = 0; w < 2; w++) {
        lsim_store_write_opts wo = {"bench_store", nosrc, whole[w], {0}};
        timing t;
        if (time_store(path, g, n, &wo, runs, &t)) return 1;
        const char *fn = whole[w] ? "deflate1 everywhere" : "default per class";
        printf("%-26s %12.3f MiB %10.3f %10.3f %10.3f %10.3f\n", fn, (double)t.bytes / 1048576.0, t.write_cpu,
               t.load_cpu, t.write_s, t.load_s);
        printf("BENCH storewhole setting=%s bytes=%lld write_cpu=%.6f load_cpu=%.6f write_s=%.6f load_s=%.6f "
               "nodes=%llu\n",
               whole[w] ? "deflate1" : "default", t.bytes, t.write_cpu, t.load_cpu, t.write_s, t.load_s, nodes);
    }
    remove(path);
    free(nosrc);
    lsim_store_free_graphs(g, n);
    return 0;
}

/* --archive RESULT.h5 STORE.h5: the result archive of one run (nodes
 * level, graphs embedded) written again from what it holds, R times per
 * setting: the int64 class (the per-node times) at each filter, then each
 * level of detail at the defaults; graphs copied from STORE.h5 as lumosim
 * sim does. CPU and wall seconds of the write (medians), file size. */
static int archive(const char *res, const char *store, const char *dir, int runs)
{
    lsim_store_run *r = NULL;
    lsim_err err = {0};
    if (lsim_store_read_results(res, NULL, &r, &err)) {
        fprintf(stderr, "bench_store: %s\n", err.msg);
        return 1;
    }
    if (!r->graphs || !r->bind_start) {
        fprintf(stderr, "bench_store: %s: the run needs its graphs and bind_* (--detail nodes)\n", res);
        return 1;
    }
    lsim_replay_item *it = calloc(r->ngpus ? r->ngpus : 1, sizeof *it);
    double *tw = calloc((size_t)runs * 2, sizeof *tw);
    if (!it || !tw) return 1;
    for (size_t i = 0; i < r->ngpus; i++) {
        const lsim_store_gpu_result *g = &r->gpus[i];
        it[i] = (lsim_replay_item){r->graphs[i], &g->report, g->start, g->end, g->bind_start, g->bind_end,
                                   g->has_cp ? &g->cp : NULL, g->coupled, g->clock_offset, 0, NULL};
    }
    char path[1024], nb[16];
    snprintf(path, sizeof path, "%s/bench_store_archive_%ld.h5", dir, (long)getpid());
    printf("%zu GPUs, %zu nodes, from %s (graphs copied from %s); medians of %d writes\n", r->ngpus, r->nnodes, res,
           store, runs);
    printf("%-9s %-9s %10s %10s %10s\n", "detail", "filters", "MiB", "write cpu", "write s");
    static const int filters[] = {LSIM_STORE_FILTER_NONE, LSIM_STORE_FILTER_SHUFFLE, 1, 4, 0, 0, 0};
    static const lsim_store_detail det[] = {LSIM_STORE_DETAIL_NODES, LSIM_STORE_DETAIL_NODES,
                                            LSIM_STORE_DETAIL_NODES, LSIM_STORE_DETAIL_NODES,
                                            LSIM_STORE_DETAIL_NODES, LSIM_STORE_DETAIL_OPS, LSIM_STORE_DETAIL_SUMMARY};
    for (size_t k = 0; k < sizeof det / sizeof *det; k++) {
        long long bytes = -1;
        for (int rr = 0; rr < runs; rr++) {
            remove(path);
            lsim_store_run_info info = {.command_line = "bench_store", .embed_graphs = 1, .graphs_from = store,
                                        .detail = det[k]};
            /* one filter for every class (run_info has no per-class
             * choice): the per-node times are nearly all the bytes the
             * archive encodes (its graphs are copied as they are) */
            info.deflate_level = filters[k];
            double t0 = lsim_now_s(), c0 = cpu_s();
            if (lsim_store_write_results_ex(path, "sim", it, r->ngpus, &info, &err)) {
                fprintf(stderr, "bench_store: %s\n", err.msg);
                return 1;
            }
            tw[rr] = lsim_now_s() - t0;
            tw[runs + rr] = cpu_s() - c0;
            struct stat st;
            bytes = stat(path, &st) == 0 ? (long long)st.st_size : -1;
        }
        double ws = median(tw, runs), wc = median(tw + runs, runs);
        const char *fn = filter_name(filters[k], nb, sizeof nb);
        printf("%-9s %-9s %10.2f %10.3f %10.3f\n", lsim_store_detail_name(det[k]), fn, (double)bytes / 1048576.0, wc,
               ws);
        printf("BENCH archive detail=%s filter=%s bytes=%lld write_cpu=%.6f write_s=%.6f nodes=%zu\n",
               lsim_store_detail_name(det[k]), fn, bytes, wc, ws, r->nnodes);
    }
    remove(path);
    free(tw);
    free(it);
    lsim_store_run_free(r);
    return 0;
}

int main(int argc, char **argv)
{
    int runs = 5, first = 1;
    const char *dir = "/tmp", *cls = NULL, *arch = NULL, *arch_store = NULL;
    while (first < argc && argv[first][0] == '-') {
        if (!strcmp(argv[first], "--runs") && first + 1 < argc) runs = atoi(argv[++first]);
        else if (!strcmp(argv[first], "--dir") && first + 1 < argc) dir = argv[++first];
        else if (!strcmp(argv[first], "--classes") && first + 1 < argc) cls = argv[++first];
        else if (!strcmp(argv[first], "--archive") && first + 2 < argc) {
            arch = argv[++first];
            arch_store = argv[++first];
        }
        else {
            fprintf(stderr, "usage: bench_store [--runs R] [--dir D] TRACE... | --classes STORE.h5 | --archive RESULT.h5 "
                            "STORE.h5\n");
            return 2;
        }
        first++;
    }
    if ((!cls && !arch && first >= argc) || runs < 1 || runs > 100) {
        fprintf(stderr, "usage: bench_store [--runs R] [--dir D] TRACE... | --classes STORE.h5 | --archive RESULT.h5 "
                            "STORE.h5\n");
        return 2;
    }
    if (cls) return classes(cls, dir, runs);
    if (arch) return archive(arch, arch_store, dir, runs);
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
    /* whole-store settings: deflate_level of lsim_store_write_opts */
    const int levels[] = {LSIM_STORE_FILTER_NONE, LSIM_STORE_FILTER_SHUFFLE, 1, 4, LSIM_STORE_FILTER_DEFAULT};
    for (size_t k = 0; k < sizeof levels / sizeof *levels; k++) {
        char path[1024], nb[16];
        snprintf(path, sizeof path, "%s/bench_store_%zu_%ld.h5", dir, k, (long)getpid());
        lsim_store_write_opts wo = {"bench_store", NULL, 0, {0}};
        for (int c = 0; c < LSIM_STORE_NCLASSES; c++) wo.filters[c] = levels[k];
        timing t;
        if (time_store(path, g, n, &wo, runs, &t)) return 1;
        const char *name = filter_name(levels[k], nb, sizeof nb);
        printf("%-10s %10.2f %14.0f %12.4f %12.4f %12.2f %12.1f %9.1fx\n", name, (double)t.bytes / 1048576.0,
               (double)t.bytes / ((double)nodes / 1e6), t.write_s, t.load_s, (double)nodes / t.load_s / 1e6,
               (double)t.bytes / 1e6 / t.load_s, json_s / t.load_s);
        printf("BENCH store=%s bytes=%lld nodes=%llu bytes_per_mnode=%.0f write_s=%.6f load_s=%.6f json_s=%.6f "
               "speedup=%.2f\n",
               name, t.bytes, (unsigned long long)nodes, (double)t.bytes / ((double)nodes / 1e6), t.write_s,
               t.load_s, json_s, json_s / t.load_s);
        remove(path);
    }
    for (size_t i = 0; i < n; i++) lsim_graph_free(g[i]);
    free(g);
    free(tj);
    return 0;
}
