/* HDF5 graph store and result archive (io/h5_*.c):
 *  - graphs built from the bundled traces (one per "GPU") written to a store
 *    and read back, all and by GPU range, are identical field by field and
 *    string by string, and simulate to bit-identical start/end arrays;
 *  - a result file round-trips every per-GPU, per-iteration, duty-cycle,
 *    per-node and critical-path value (and the embedded graphs); runs are
 *    added, kept, replaced and refused by name;
 *  - bad input never crashes and gives one clear error naming the file: a
 *    truncated store at several offsets, flipped bytes, another schema
 *    version, an edge pointing past its GPU's nodes, a negative duration, a
 *    non-monotone CSR offset, a result file where graphs are expected (and
 *    the reverse), a non-HDF5 file, a missing file.
 *
 * Usage: test_store DATA_DIR [WORK_DIR]  (WORK_DIR defaults to ".") */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "lumosim/critical.h"
#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/metrics.h"
#include "lumosim/output.h"
#include "lumosim/store.h"
#include "lumosim/trace.h"
#include "check.h"
#include "graph_same.h"

#define NG 3
static const char *const TRACES[NG] = {"hip_trace.json", "cuda_graph.json", "prewindow_megatron_rank0.json.gz"};

static char g_paths[NG][1024];
static char g_work[1024];

static void path_in_work(char *buf, size_t len, const char *name) { snprintf(buf, len, "%s/%s", g_work, name); }

/* ------------------------------------------------------------ comparison */

#define ARR_EQ(a, b, field, count)                                                                                     \
    do {                                                                                                               \
        if ((count) && memcmp((a)->field, (b)->field, (count) * sizeof *(a)->field) != 0) {                            \
            fprintf(stderr, "%s:%d: graph %s: array %s differs\n", __FILE__, __LINE__, what, #field);                  \
            check_failures++;                                                                                          \
        }                                                                                                              \
    } while (0)

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

static void compare_graphs(const lsim_graph *a, const lsim_graph *b, const char *what)
{
    CHECK_STR(b->source, a->source);
    CHECK_I64(b->rank, a->rank);
    CHECK_I64(b->latency, a->latency);
    CHECK_I64(b->n, a->n);
    CHECK_I64(b->nedges, a->nedges);
    CHECK_I64(b->nprocs, a->nprocs);
    CHECK_I64(b->niters, a->niters);
    CHECK_I64(b->ncoll, a->ncoll);
    CHECK_I64(b->t0, a->t0);
    CHECK_I64(b->releases, a->releases);
    CHECK_I64(b->prewindow, a->prewindow);
    CHECK_I64(b->sync_events_used, a->sync_events_used);
    CHECK_I64(b->launch_samples, a->launch_samples);
    CHECK_I64(b->launch_latency_ns, a->launch_latency_ns);
    CHECK_I64(b->queued_gap_ns, a->queued_gap_ns);
    CHECK(memcmp(a->edges_by_class, b->edges_by_class, sizeof a->edges_by_class) == 0);
    CHECK(memcmp(a->inferred_by_class, b->inferred_by_class, sizeof a->inferred_by_class) == 0);
    CHECK(memcmp(a->dropped, b->dropped, sizeof a->dropped) == 0);
    if (a->n != b->n || a->nedges != b->nedges || a->nprocs != b->nprocs || a->niters != b->niters ||
        a->ncoll != b->ncoll)
        return;
    ARR_EQ(a, b, kind, a->n);
    ARR_EQ(a, b, flags, a->n);
    ARR_EQ(a, b, proc, a->n);
    ARR_EQ(a, b, name, a->n);
    ARR_EQ(a, b, dur, a->n);
    ARR_EQ(a, b, obs_start, a->n);
    ARR_EQ(a, b, obs_end, a->n);
    ARR_EQ(a, b, release, a->n);
    ARR_EQ(a, b, corr, a->n);
    ARR_EQ(a, b, iter, a->n);
    ARR_EQ(a, b, coll, a->n);
    ARR_EQ(a, b, in_off, a->n + 1);
    ARR_EQ(a, b, in_src, a->nedges);
    ARR_EQ(a, b, in_delay, a->nedges);
    ARR_EQ(a, b, in_class, a->nedges);
    ARR_EQ(a, b, out_off, a->n + 1);
    /* outgoing targets are derived: the same set per source (the build
     * keeps edge-insertion order, the store target order) */
    for (size_t v = 0; v < a->n; v++) {
        uint64_t k0 = a->out_off[v], k1 = a->out_off[v + 1];
        if (k1 - k0 < 2) {
            if (k1 > k0 && a->out_dst[k0] != b->out_dst[k0]) {
                fprintf(stderr, "graph %s: out_dst of node %zu differs\n", what, v);
                check_failures++;
                return;
            }
            continue;
        }
        uint32_t *x = malloc((k1 - k0) * 4), *y = malloc((k1 - k0) * 4);
        memcpy(x, a->out_dst + k0, (k1 - k0) * 4);
        memcpy(y, b->out_dst + k0, (k1 - k0) * 4);
        qsort(x, k1 - k0, 4, cmp_u32);
        qsort(y, k1 - k0, 4, cmp_u32);
        int same = memcmp(x, y, (k1 - k0) * 4) == 0;
        free(x);
        free(y);
        if (!same) {
            fprintf(stderr, "graph %s: out_dst of node %zu differs\n", what, v);
            check_failures++;
            return;
        }
    }
    for (uint32_t p = 0; p < a->nprocs; p++) {
        CHECK_I64(b->procs[p].is_gpu, a->procs[p].is_gpu);
        CHECK_I64(b->procs[p].pid, a->procs[p].pid);
        CHECK_I64(b->procs[p].tid, a->procs[p].tid);
        CHECK_I64(b->procs[p].nnodes, a->procs[p].nnodes);
    }
    for (uint32_t i = 0; i < a->niters; i++) {
        CHECK_I64(b->iters[i].name, a->iters[i].name);
        CHECK_I64(b->iters[i].obs_start, a->iters[i].obs_start);
        CHECK_I64(b->iters[i].obs_end, a->iters[i].obs_end);
    }
    for (size_t i = 0; i < a->ncoll; i++) {
        const lsim_coll_info *x = &a->colls[i], *y = &b->colls[i];
        int same = x->kind == y->kind && x->from_metadata == y->from_metadata && x->group_size == y->group_size &&
                   x->in_nelems == y->in_nelems && x->out_nelems == y->out_nelems && x->dtype_bytes == y->dtype_bytes &&
                   x->bytes == y->bytes && x->pg_name == y->pg_name && x->pg_ranks == y->pg_ranks && x->seq == y->seq;
        CHECK_MSG(same, "graph %s: collective %zu differs", what, i);
    }
    CHECK_I64(lsim_strtab_count(b->strings), lsim_strtab_count(a->strings));
    if (lsim_strtab_count(b->strings) == lsim_strtab_count(a->strings))
        for (uint32_t i = 0; i < lsim_strtab_count(a->strings); i++)
            CHECK_STR(lsim_strtab_get(b->strings, i), lsim_strtab_get(a->strings, i));
}

/* Quiet comparison of everything stored (for the corruption sweep): the
 * graph's scalars, then its arrays (graph_same.h). */
static int graphs_equal(const lsim_graph *a, const lsim_graph *b)
{
    if (strcmp(a->source, b->source) || a->rank != b->rank || a->latency != b->latency || a->n != b->n ||
        a->nedges != b->nedges || a->nprocs != b->nprocs || a->niters != b->niters || a->ncoll != b->ncoll ||
        a->t0 != b->t0 || a->releases != b->releases || a->prewindow != b->prewindow ||
        a->sync_events_used != b->sync_events_used || a->launch_samples != b->launch_samples ||
        a->launch_latency_ns != b->launch_latency_ns || a->queued_gap_ns != b->queued_gap_ns ||
        memcmp(a->edges_by_class, b->edges_by_class, sizeof a->edges_by_class) ||
        memcmp(a->inferred_by_class, b->inferred_by_class, sizeof a->inferred_by_class) ||
        memcmp(a->dropped, b->dropped, sizeof a->dropped))
        return 0;
    return graph_same(a, b);
}

/* ------------------------------------------------------------ simulation */

typedef struct sim {
    lsim_engine *e;
    lsim_rank_report r;
    lsim_critical_path cp;
} sim;

static int simulate(const lsim_graph *g, sim *s)
{
    lsim_err err;
    memset(s, 0, sizeof *s);
    memset(&err, 0, sizeof err);
    int rc = lsim_engine_new(g, &s->e, &err);
    if (!rc) rc = lsim_engine_run(s->e, &err);
    if (!rc) rc = lsim_metrics_compute(g, lsim_engine_start(s->e), lsim_engine_end(s->e), 1000000, &s->r, &err);
    if (!rc) rc = lsim_critical_path_compute(g, s->e, &s->cp, &err);
    CHECK_MSG(rc == 0, "simulate %s: %s", g->source, err.msg);
    return rc;
}

static void sim_free(sim *s)
{
    lsim_engine_free(s->e);
    lsim_rank_report_clear(&s->r);
    lsim_critical_path_clear(&s->cp);
}

static void same_times(const lsim_graph *a, const lsim_graph *b)
{
    sim x, y;
    if (simulate(a, &x) == 0 && simulate(b, &y) == 0) {
        CHECK_MSG(memcmp(lsim_engine_start(x.e), lsim_engine_start(y.e), a->n * sizeof(lsim_ns)) == 0,
                  "%s: simulated start times differ after the store round trip", a->source);
        CHECK_MSG(memcmp(lsim_engine_end(x.e), lsim_engine_end(y.e), a->n * sizeof(lsim_ns)) == 0,
                  "%s: simulated end times differ after the store round trip", a->source);
        CHECK_I64(y.r.window_predicted, x.r.window_predicted);
        sim_free(&y);
    }
    sim_free(&x);
}

/* ------------------------------------------------------------ helpers */

/* Every store call must close every HDF5 object it opened. */
static void no_open_ids(int line)
{
    ssize_t k = H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL);
    if (k != 0) {
        fprintf(stderr, "%s:%d: %zd HDF5 objects left open\n", __FILE__, line, k);
        check_failures++;
        hid_t ids[16];
        ssize_t m = H5Fget_obj_ids((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL, 16, ids);
        for (ssize_t i = 0; i < m; i++) {
            char name[256] = "";
            H5Iget_name(ids[i], name, sizeof name);
            fprintf(stderr, "   open: type %d %s\n", (int)H5Iget_type(ids[i]), name);
            if (H5Iget_type(ids[i]) == H5I_FILE) H5Fclose(ids[i]);
            else H5Oclose(ids[i]);
        }
    }
}
#define NO_OPEN_IDS() no_open_ids(__LINE__)

static int copy_prefix(const char *src, const char *dst, long n)
{
    FILE *f = fopen(src, "rb"), *g = fopen(dst, "wb");
    if (!f || !g) {
        if (f) fclose(f);
        if (g) fclose(g);
        return -1;
    }
    char buf[65536];
    long done = 0;
    size_t got;
    while ((n < 0 || done < n) && (got = fread(buf, 1, sizeof buf, f)) > 0) {
        size_t w = n < 0 || (long)got <= n - done ? got : (size_t)(n - done);
        fwrite(buf, 1, w, g);
        done += (long)w;
    }
    fclose(f);
    fclose(g);
    return 0;
}

static long file_size(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* Expect lsim_store_read_graphs(path) to fail with `code` and a message
 * naming the file and containing `needle` (NULL: anything). */
static void expect_bad_graphs(const char *path, int code, const char *needle, int line)
{
    lsim_graph **gs = (lsim_graph **)&gs;
    size_t n = 99;
    lsim_err err;
    memset(&err, 0, sizeof err);
    int rc = lsim_store_read_graphs(path, 0, SIZE_MAX, &gs, &n, &err);
    no_open_ids(line);
    if (rc == 0 || (code && rc != code)) {
        fprintf(stderr, "%s:%d: read_graphs(%s) rc=%d, expected %d; msg=\"%s\"\n", __FILE__, line, path, rc, code,
                err.msg);
        check_failures++;
        if (rc == 0) lsim_store_free_graphs(gs, n);
        return;
    }
    if (gs != NULL || n != 0) {
        fprintf(stderr, "%s:%d: failed read left output set\n", __FILE__, line);
        check_failures++;
    }
    if (strncmp(err.msg, path, strlen(path)) != 0 || (needle && !strstr(err.msg, needle))) {
        fprintf(stderr, "%s:%d: message \"%s\" should name %s and say \"%s\"\n", __FILE__, line, err.msg, path,
                needle ? needle : "");
        check_failures++;
    }
    printf("  ok: %s\n", err.msg);
}
#define BAD_GRAPHS(path, code, needle) expect_bad_graphs((path), (code), (needle), __LINE__)

/* Open a copy of the store read-write and overwrite element `row` of a
 * 1-D dataset with value (as int64). */
static int poke(const char *path, const char *dset, hsize_t row, int64_t value)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return -1;
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    hid_t fs = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t one = 1;
    hid_t ms = H5Screate_simple(1, &one, NULL);
    int rc = -1;
    if (fs >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, &row, NULL, &one, NULL) >= 0 &&
        H5Dwrite(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, &value) >= 0)
        rc = 0;
    H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (d >= 0) H5Dclose(d);
    H5Fclose(f);
    return rc;
}

/* Unlink datasets (NULL-terminated list): an archive as a lumosim from
 * before they existed wrote it. */
static int unlink_all(const char *path, const char *const *dsets)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return -1;
    int rc = 0;
    for (; *dsets; dsets++)
        if (H5Ldelete(f, *dsets, H5P_DEFAULT) < 0) rc = -1;
    H5Fclose(f);
    return rc;
}

static int set_root_int(const char *path, const char *attr, int value)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return -1;
    hid_t a = H5Aopen(f, attr, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, H5T_NATIVE_INT, &value) >= 0 ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    H5Fclose(f);
    return rc;
}

/* ------------------------------------------------------------ tests */

static void test_graph_roundtrip(lsim_graph **orig, const char *store)
{
    lsim_err err;
    memset(&err, 0, sizeof err);
    const char *srcs[NG];
    for (int i = 0; i < NG; i++) srcs[i] = g_paths[i];
    int rc = lsim_store_write_graphs(store, orig, NG, "test_store write", srcs, &err);
    CHECK_MSG(rc == 0, "write_graphs: %s", err.msg);
    if (rc) return;
    /* no temporary file left behind */
    char tmp[1300];
    lsim_out_tmp_name(store, (long)getpid(), tmp, sizeof tmp);
    CHECK(access(tmp, F_OK) != 0);
    CHECK(lsim_store_probe(store) == LSIM_STORE_GRAPHS);
    CHECK(lsim_store_probe(g_paths[0]) == LSIM_STORE_NOT_HDF5);

    size_t n = 0;
    CHECK(lsim_store_count_gpus(store, &n, &err) == 0);
    CHECK_I64(n, NG);

    lsim_store_gpu_info *tab = NULL;
    size_t nt = 0;
    rc = lsim_store_gpu_table(store, &tab, &nt, &err);
    CHECK_MSG(rc == 0, "gpu_table: %s", err.msg);
    CHECK_I64(nt, NG);
    for (size_t i = 0; rc == 0 && i < nt; i++) {
        CHECK_STR(tab[i].source, orig[i]->source);
        CHECK_I64(tab[i].nodes, orig[i]->n);
        CHECK_I64(tab[i].edges, orig[i]->nedges);
        CHECK_I64(tab[i].source_size, file_size(g_paths[i]));
    }
    lsim_store_gpu_table_free(tab, nt);

    /* all GPUs */
    lsim_graph **gs = NULL;
    rc = lsim_store_read_graphs(store, 0, SIZE_MAX, &gs, &n, &err);
    CHECK_MSG(rc == 0, "read_graphs: %s", err.msg);
    CHECK_I64(n, NG);
    for (size_t i = 0; rc == 0 && i < n && i < NG; i++) {
        compare_graphs(orig[i], gs[i], TRACES[i]);
        same_times(orig[i], gs[i]);
    }
    if (rc == 0) lsim_store_free_graphs(gs, n);

    /* subsets: only those GPUs */
    rc = lsim_store_read_graphs(store, 1, 1, &gs, &n, &err);
    CHECK_MSG(rc == 0, "read_graphs(1, 1): %s", err.msg);
    CHECK_I64(n, 1);
    if (rc == 0 && n == 1) compare_graphs(orig[1], gs[0], "subset 1..1");
    if (rc == 0) lsim_store_free_graphs(gs, n);
    rc = lsim_store_read_graphs(store, 1, SIZE_MAX, &gs, &n, &err);
    CHECK_MSG(rc == 0, "read_graphs(1, all): %s", err.msg);
    CHECK_I64(n, 2);
    if (rc == 0 && n == 2) {
        compare_graphs(orig[1], gs[0], "subset 1..2 #1");
        compare_graphs(orig[2], gs[1], "subset 1..2 #2");
        same_times(orig[2], gs[1]);
    }
    if (rc == 0) lsim_store_free_graphs(gs, n);
    rc = lsim_store_read_graphs(store, NG, SIZE_MAX, &gs, &n, &err);
    CHECK_MSG(rc == 0 && n == 0 && gs == NULL, "read_graphs(end, all): rc=%d n=%zu", rc, n);
    rc = lsim_store_read_graphs(store, NG + 1, SIZE_MAX, &gs, &n, &err);
    CHECK_I64(rc, LSIM_EARG);
    rc = lsim_store_read_graphs(store, 1, 3, &gs, &n, &err);
    CHECK_I64(rc, LSIM_EARG);
    CHECK(strstr(err.msg, store) == err.msg);

    FILE *devnull = fopen("/dev/null", "w");
    rc = lsim_store_info(store, devnull, &err);
    CHECK_MSG(rc == 0, "info: %s", err.msg);
    fclose(devnull);

    /* write without checksums (synthetic graphs); unreadable source = error */
    char p2[1200];
    path_in_work(p2, sizeof p2, "store_nosrc.h5");
    const char *none[NG] = {NULL, NULL, NULL};
    rc = lsim_store_write_graphs(p2, orig, NG, NULL, none, &err);
    CHECK_MSG(rc == 0, "write without sources: %s", err.msg);
    const char *missing[NG] = {"/nonexistent/trace.json", NULL, NULL};
    rc = lsim_store_write_graphs(p2, orig, NG, NULL, missing, &err);
    CHECK_I64(rc, LSIM_EIO);
    CHECK(strstr(err.msg, "/nonexistent/trace.json") != NULL);
    CHECK(lsim_store_probe(p2) == LSIM_STORE_GRAPHS); /* the old file is untouched */
    /* compression levels: none and maximum give the same graphs */
    for (int lvl = -1; lvl <= 9; lvl += 10) {
        lsim_store_write_opts o = {"test_store levels", srcs, lvl, {0}};
        rc = lsim_store_write_graphs_ex(p2, orig, NG, &o, &err);
        CHECK_MSG(rc == 0, "write deflate %d: %s", lvl, err.msg);
        rc = lsim_store_read_graphs(p2, 0, SIZE_MAX, &gs, &n, &err);
        CHECK_MSG(rc == 0 && n == NG, "read deflate %d: %s", lvl, err.msg);
        for (size_t i = 0; rc == 0 && i < n; i++) compare_graphs(orig[i], gs[i], "deflate level");
        if (rc == 0) lsim_store_free_graphs(gs, n);
    }
    /* every filter of every dataset class (none, shuffle only, deflate 1
     * and 9, one class at a time, the others unfiltered) reads back the
     * same graphs; and a filter is what the file says it is: none is
     * larger than deflate on these graphs */
    long none_size = -1, defl_size = -1;
    static const int filters[] = {LSIM_STORE_FILTER_NONE, LSIM_STORE_FILTER_SHUFFLE, 1, 9};
    for (int k = 0; k < LSIM_STORE_NCLASSES; k++)
        for (size_t f = 0; f < sizeof filters / sizeof *filters; f++) {
            lsim_store_write_opts o = {"test_store classes", srcs, LSIM_STORE_FILTER_NONE, {0}};
            o.filters[k] = filters[f];
            rc = lsim_store_write_graphs_ex(p2, orig, NG, &o, &err);
            CHECK_MSG(rc == 0, "write class %d filter %d: %s", k, filters[f], err.msg);
            rc = lsim_store_read_graphs(p2, 0, SIZE_MAX, &gs, &n, &err);
            CHECK_MSG(rc == 0 && n == NG, "read class %d filter %d: %s", k, filters[f], err.msg);
            for (size_t i = 0; rc == 0 && i < n; i++) compare_graphs(orig[i], gs[i], "class filter");
            if (rc == 0) lsim_store_free_graphs(gs, n);
        }
    for (int w = 0; w < 2; w++) {
        lsim_store_write_opts o = {"test_store classes", srcs, w ? 1 : LSIM_STORE_FILTER_NONE, {0}};
        CHECK(lsim_store_write_graphs_ex(p2, orig, NG, &o, &err) == 0);
        *(w ? &defl_size : &none_size) = file_size(p2);
    }
    CHECK_MSG(none_size > defl_size && defl_size > 0, "store sizes: none %ld, deflate %ld", none_size, defl_size);
    /* an empty store */
    rc = lsim_store_write_graphs(p2, orig, 0, NULL, NULL, &err);
    CHECK_MSG(rc == 0, "write empty: %s", err.msg);
    rc = lsim_store_read_graphs(p2, 0, SIZE_MAX, &gs, &n, &err);
    CHECK_MSG(rc == 0 && n == 0, "read empty: rc=%d %s", rc, err.msg);
    remove(p2);
    NO_OPEN_IDS();
}

static void test_bad_graph_stores(lsim_graph **orig, const char *store, const char *results)
{
    char p[1200];
    long size = file_size(store);
    CHECK(size > 0);
    /* truncated at several offsets */
    static const double fr[] = {0.0, 0.001, 0.1, 0.5, 0.9, 0.99};
    for (size_t k = 0; k < sizeof fr / sizeof fr[0]; k++) {
        path_in_work(p, sizeof p, "store_trunc.h5");
        long at = (long)((double)size * fr[k]);
        if (at >= size) at = size - 1;
        CHECK(copy_prefix(store, p, at) == 0);
        BAD_GRAPHS(p, LSIM_EFORMAT, "not an HDF5 file or truncated");
        lsim_err err;
        size_t n;
        CHECK(lsim_store_count_gpus(p, &n, &err) == LSIM_EFORMAT);
        FILE *devnull = fopen("/dev/null", "w");
        CHECK(lsim_store_info(p, devnull, &err) == LSIM_EFORMAT);
        fclose(devnull);
        remove(p);
    }
    /* flipped bytes anywhere: never a crash, and never wrong data read
     * without an error (metadata and every chunk are checksummed); bytes
     * that no reader looks at (unused B-tree slots, padding) may go
     * unnoticed */
    int detected = 0, tries = 0, silent = 0;
    for (long at = 64; at < size && !getenv("SKIPFLIP"); at += size / 151 + 1) {
        path_in_work(p, sizeof p, "store_flip.h5");
        CHECK(copy_prefix(store, p, -1) == 0);
        FILE *f = fopen(p, "r+b");
        fseek(f, at, SEEK_SET);
        unsigned char junk[16];
        size_t got = fread(junk, 1, sizeof junk, f);
        for (size_t i = 0; i < got; i++) junk[i] ^= 0x5a;
        fseek(f, at, SEEK_SET);
        fwrite(junk, 1, got, f);
        fclose(f);
        lsim_graph **gs = NULL;
        size_t n = 0;
        lsim_err err;
        memset(&err, 0, sizeof err);
        int rc = lsim_store_read_graphs(p, 0, SIZE_MAX, &gs, &n, &err);
        NO_OPEN_IDS();
        tries++;
        if (rc) {
            detected++;
            CHECK_MSG(strncmp(err.msg, p, strlen(p)) == 0, "message does not name the file: %s", err.msg);
        } else {
            int same = n == NG;
            for (size_t i = 0; same && i < n; i++) same = graphs_equal(orig[i], gs[i]);
            if (!same) {
                fprintf(stderr, "flipping bytes at offset %ld changed the graphs without an error\n", at);
                silent++;
            }
            lsim_store_free_graphs(gs, n);
        }
        remove(p);
    }
    printf("  flipped bytes at %d offsets: %d detected, %d harmless, %d silently wrong\n", tries, detected,
           tries - detected - silent, silent);
    CHECK(silent == 0);

    /* another schema version */
    path_in_work(p, sizeof p, "store_v99.h5");
    copy_prefix(store, p, -1);
    CHECK(set_root_int(p, "schema_version", 99) == 0);
    BAD_GRAPHS(p, LSIM_EFORMAT, "schema version 99 not supported (this lumosim reads 1)");
    remove(p);

    /* an edge past its GPU's nodes: GPU 1's first edge (local ids) */
    lsim_store_gpu_info *tab = NULL;
    size_t nt = 0;
    lsim_err err;
    CHECK(lsim_store_gpu_table(store, &tab, &nt, &err) == 0);
    if (nt == NG) {
        hsize_t e1 = tab[0].edges; /* first edge row of GPU 1 */
        path_in_work(p, sizeof p, "store_badedge.h5");
        copy_prefix(store, p, -1);
        CHECK(poke(p, "/edges/in_src", e1, (int64_t)tab[1].nodes) == 0);
        BAD_GRAPHS(p, LSIM_EFORMAT, "/edges/in_src of GPU 1");
        /* reading only GPU 0 does not touch GPU 1's rows */
        lsim_graph **gs = NULL;
        size_t n = 0;
        CHECK(lsim_store_read_graphs(p, 0, 1, &gs, &n, &err) == 0);
        lsim_store_free_graphs(gs, n);
        remove(p);

        path_in_work(p, sizeof p, "store_negdur.h5");
        copy_prefix(store, p, -1);
        CHECK(poke(p, "/nodes/dur", tab[0].nodes + tab[1].nodes + 5, -7) == 0);
        BAD_GRAPHS(p, LSIM_EFORMAT, "/nodes/dur of GPU 2: node 5 has a negative duration");
        remove(p);

        path_in_work(p, sizeof p, "store_inoff.h5");
        copy_prefix(store, p, -1);
        CHECK(poke(p, "/nodes/in_off", 3, (int64_t)tab[0].edges + 10) == 0);
        BAD_GRAPHS(p, LSIM_EFORMAT, "/nodes/in_off of GPU 0");
        remove(p);

        path_in_work(p, sizeof p, "store_proc.h5");
        copy_prefix(store, p, -1);
        CHECK(poke(p, "/nodes/proc", 0, (int64_t)tab[0].procs) == 0);
        BAD_GRAPHS(p, LSIM_EFORMAT, "/nodes/proc of GPU 0");
        remove(p);

        path_in_work(p, sizeof p, "store_count.h5");
        copy_prefix(store, p, -1);
        CHECK(poke(p, "/gpus/node_count", 2, (int64_t)tab[2].nodes + 1) == 0);
        BAD_GRAPHS(p, LSIM_EFORMAT, "/nodes/kind has");
        remove(p);

        path_in_work(p, sizeof p, "store_offset.h5");
        copy_prefix(store, p, -1);
        CHECK(poke(p, "/gpus/edge_offset", 1, 1) == 0);
        BAD_GRAPHS(p, LSIM_EFORMAT, "/gpus/edge_offset of GPU 1");
        remove(p);

        path_in_work(p, sizeof p, "store_str.h5");
        copy_prefix(store, p, -1);
        CHECK(poke(p, "/strings/offset", 1, 0) == 0);
        BAD_GRAPHS(p, LSIM_EFORMAT, "/strings/offset of GPU 0");
        remove(p);
    }
    lsim_store_gpu_table_free(tab, nt);

    /* no graphs dataset at all */
    path_in_work(p, sizeof p, "store_nodset.h5");
    copy_prefix(store, p, -1);
    {
        hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
        CHECK(f >= 0 && H5Ldelete(f, "/edges/in_delay", H5P_DEFAULT) >= 0);
        if (f >= 0) H5Fclose(f);
    }
    BAD_GRAPHS(p, LSIM_EFORMAT, "dataset /edges/in_delay is missing");
    remove(p);

    /* the wrong kind of file */
    BAD_GRAPHS(results, LSIM_EFORMAT, "is a lumosim result archive (written by lumosim sim -o), not a graph store");
    BAD_GRAPHS(g_paths[0], LSIM_EFORMAT, "not an HDF5 file or truncated");
    path_in_work(p, sizeof p, "does_not_exist.h5");
    BAD_GRAPHS(p, LSIM_EIO, NULL);
    lsim_store_run *r = NULL;
    CHECK(lsim_store_read_results(store, NULL, &r, &err) == LSIM_EFORMAT);
    CHECK(strstr(err.msg, "is a lumosim graph store (written by lumosim build, synth or whatif), not a result archive") != NULL);
    CHECK(r == NULL);
    NO_OPEN_IDS();
}

static void compare_run(const lsim_store_run *r, lsim_graph **gs, sim *sims, size_t n, int embedded)
{
    CHECK_I64(r->ngpus, n);
    if (r->ngpus != n) return;
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) nn += gs[i]->n;
    CHECK_I64(r->nnodes, nn);
    CHECK(r->bind_start != NULL && r->bind_end != NULL);
    for (size_t i = 0; i < n; i++) {
        const lsim_store_gpu_result *g = &r->gpus[i];
        const sim *s = &sims[i];
        CHECK_STR(g->source, gs[i]->source);
        CHECK_I64(g->rank, gs[i]->rank);
        CHECK_I64(g->node_count, gs[i]->n);
        CHECK(memcmp(g->start, lsim_engine_start(s->e), gs[i]->n * 8) == 0);
        CHECK(memcmp(g->end, lsim_engine_end(s->e), gs[i]->n * 8) == 0);
        if (g->bind_start) {
            CHECK(memcmp(g->bind_start, lsim_engine_bind_start(s->e), gs[i]->n * 8) == 0);
            CHECK(memcmp(g->bind_end, lsim_engine_bind_end(s->e), gs[i]->n * 8) == 0);
        }
        const lsim_rank_report *a = &s->r, *b = &g->report;
        CHECK_I64(b->window_actual, a->window_actual);
        CHECK_I64(b->window_predicted, a->window_predicted);
        CHECK_I64(b->window_actual_start, a->window_actual_start);
        CHECK_I64(b->window_predicted_start, a->window_predicted_start);
        CHECK(memcmp(&b->bd_actual, &a->bd_actual, sizeof a->bd_actual) == 0);
        CHECK(memcmp(&b->bd_predicted, &a->bd_predicted, sizeof a->bd_predicted) == 0);
        CHECK_I64(b->bin_ns, a->bin_ns);
        CHECK_I64(b->max_abs_start_err, a->max_abs_start_err);
        CHECK_I64(b->max_abs_end_err, a->max_abs_end_err);
        CHECK_I64(b->nodes_exact, a->nodes_exact);
        CHECK_I64(b->gpu_nodes, a->gpu_nodes);
        CHECK_I64(b->niters, a->niters);
        for (uint32_t k = 0; k < a->niters && k < b->niters; k++) {
            CHECK_I64(b->iters[k].name, a->iters[k].name);
            CHECK_I64(b->iters[k].actual, a->iters[k].actual);
            CHECK_I64(b->iters[k].predicted, a->iters[k].predicted);
            CHECK(memcmp(&b->iters[k].bd_actual, &a->iters[k].bd_actual, sizeof(lsim_breakdown)) == 0);
            CHECK(memcmp(&b->iters[k].bd_predicted, &a->iters[k].bd_predicted, sizeof(lsim_breakdown)) == 0);
            CHECK_STR(g->iter_names[k], lsim_strtab_get(gs[i]->strings, a->iters[k].name));
            CHECK_I64(b->iters[k].cpu_actual, a->iters[k].cpu_actual);
            CHECK_I64(b->iters[k].cpu_predicted, a->iters[k].cpu_predicted);
        }
        CHECK_I64(b->has_fidelity, a->has_fidelity);
        CHECK(memcmp(&b->start_err_gpu, &a->start_err_gpu, sizeof a->start_err_gpu) == 0);
        CHECK(memcmp(&b->start_err_cpu, &a->start_err_cpu, sizeof a->start_err_cpu) == 0);
        CHECK(b->duty_abs_diff == a->duty_abs_diff);
        CHECK_I64(b->nbins_actual, a->nbins_actual);
        CHECK_I64(b->nbins_predicted, a->nbins_predicted);
        if (b->nbins_actual == a->nbins_actual && a->nbins_actual)
            CHECK(memcmp(b->duty_actual, a->duty_actual, a->nbins_actual * sizeof(double)) == 0);
        if (b->nbins_predicted == a->nbins_predicted && a->nbins_predicted)
            CHECK(memcmp(b->duty_predicted, a->duty_predicted, a->nbins_predicted * sizeof(double)) == 0);
        CHECK(g->has_cp);
        const lsim_critical_path *x = &s->cp, *y = &g->cp;
        CHECK_I64(y->n, x->n);
        if (y->n == x->n && x->n) {
            CHECK(memcmp(y->nodes, x->nodes, x->n * sizeof *x->nodes) == 0);
            CHECK(memcmp(y->via, x->via, x->n * sizeof *x->via) == 0);
        }
        CHECK_I64(y->start, x->start);
        CHECK_I64(y->end, x->end);
        CHECK_I64(y->length, x->length);
        CHECK(memcmp(y->by_cat, x->by_cat, sizeof x->by_cat) == 0);
        CHECK(memcmp(y->by_kind, x->by_kind, sizeof x->by_kind) == 0);
        CHECK(memcmp(y->by_class, x->by_class, sizeof x->by_class) == 0);
        CHECK(memcmp(y->edges_by_class, x->edges_by_class, sizeof x->edges_by_class) == 0);
        CHECK_I64(y->ntop, x->ntop);
        for (size_t k = 0; k < x->ntop && k < y->ntop; k++) {
            CHECK_I64(y->top[k], x->top[k]);
            CHECK_I64(y->top_time[k], x->top_time[k]);
        }
    }
    if (embedded) {
        CHECK(r->graphs != NULL);
        for (size_t i = 0; r->graphs && i < n; i++) compare_graphs(gs[i], r->graphs[i], "embedded");
    } else {
        CHECK(r->graphs == NULL);
    }
}

static void test_results(lsim_graph **gs, const char *results, const char *store)
{
    sim sims[NG];
    lsim_replay_item items[NG];
    int ok = 1;
    for (int i = 0; i < NG; i++) {
        if (simulate(gs[i], &sims[i])) ok = 0;
        items[i] = (lsim_replay_item){gs[i], &sims[i].r, lsim_engine_start(sims[i].e), lsim_engine_end(sims[i].e),
                                      lsim_engine_bind_start(sims[i].e), lsim_engine_bind_end(sims[i].e), &sims[i].cp, 0, 0, 0, NULL};
    }
    if (!ok) return;
    lsim_err err;
    memset(&err, 0, sizeof err);
    remove(results);
    const char *phases[] = {"read", "build", "simulate"};
    double secs[] = {0.5, 0.25, 0.125};
    lsim_store_run_info info = {.command_line = "test_store base",
                                .wall_seconds = 1.5,
                                .phase_names = phases,
                                .phase_seconds = secs,
                                .nphases = 3,
                                .mapping = "all on rank 0",
                                .config = "{\"dp\": 1}",
                                .embed_graphs = 1};
    int rc = lsim_store_write_results_ex(results, "base", items, NG, &info, &err);
    CHECK_MSG(rc == 0, "write_results: %s", err.msg);
    CHECK(lsim_store_probe(results) == LSIM_STORE_RESULTS);
    rc = lsim_store_write_results(results, "second", items, NG, "test_store second", 2.0, &err);
    CHECK_MSG(rc == 0, "write_results second: %s", err.msg);
    rc = lsim_store_write_results(results, "second", items, NG, "again", 2.0, &err);
    CHECK_I64(rc, LSIM_EARG);
    CHECK(strstr(err.msg, "already holds a run named 'second'") != NULL);
    rc = lsim_store_write_results(results, "bad/name", items, NG, "x", 0, &err);
    CHECK_I64(rc, LSIM_EARG);
    info.replace = 1;
    info.embed_graphs = 0;
    rc = lsim_store_write_results_ex(results, "second", items, NG, &info, &err);
    CHECK_MSG(rc == 0, "replace: %s", err.msg);
    /* a graph store or a non-HDF5 file is never overwritten */
    rc = lsim_store_write_results(store, "x", items, NG, "x", 0, &err);
    CHECK_I64(rc, LSIM_EFORMAT);
    CHECK(lsim_store_probe(store) == LSIM_STORE_GRAPHS);
    rc = lsim_store_write_results(g_paths[0], "x", items, NG, "x", 0, &err);
    CHECK_I64(rc, LSIM_EFORMAT);

    char **names = NULL;
    size_t nr = 0;
    rc = lsim_store_list_runs(results, &names, &nr, &err);
    CHECK_MSG(rc == 0, "list_runs: %s", err.msg);
    CHECK_I64(nr, 2);
    if (nr == 2) {
        CHECK_STR(names[0], "base");
        CHECK_STR(names[1], "second");
    }
    for (size_t i = 0; i < nr; i++) free(names[i]);
    free(names);

    lsim_store_run *r = NULL;
    rc = lsim_store_read_results(results, NULL, &r, &err);
    CHECK_I64(rc, LSIM_EARG);
    CHECK(strstr(err.msg, "base, second") != NULL);
    rc = lsim_store_read_results(results, "nope", &r, &err);
    CHECK_I64(rc, LSIM_EARG);
    rc = lsim_store_read_results(results, "base", &r, &err);
    CHECK_MSG(rc == 0, "read_results base: %s", err.msg);
    if (rc == 0) {
        compare_run(r, gs, sims, NG, 1);
        CHECK_STR(r->command_line, "test_store base");
        CHECK_STR(r->mapping, "all on rank 0");
        CHECK_STR(r->config, "{\"dp\": 1}");
        CHECK_STR(r->lumosim_version, LSIM_VERSION);
        CHECK(r->wall_seconds == 1.5);
        CHECK_I64(r->nphases, 3);
        if (r->nphases == 3) {
            CHECK_STR(r->phase_names[2], "simulate");
            CHECK(r->phase_seconds[1] == 0.25);
        }
        CHECK_I64(r->mpi_ranks, 1);
        CHECK_I64(r->events, r->nnodes);
        /* the archive alone is enough for a report */
        lsim_replay_item it[NG];
        for (size_t i = 0; i < r->ngpus && i < NG; i++)
            it[i] = (lsim_replay_item){r->graphs[i], &r->gpus[i].report, r->gpus[i].start, r->gpus[i].end,
                                       r->gpus[i].bind_start, r->gpus[i].bind_end, &r->gpus[i].cp, 0, 0, 0, NULL};
        FILE *devnull = fopen("/dev/null", "w");
        lsim_report_table(devnull, it, r->ngpus);
        CHECK(lsim_report_json(devnull, it, r->ngpus, &err) == 0);
        fclose(devnull);
        lsim_store_run_free(r);
    }
    rc = lsim_store_read_results(results, "second", &r, &err);
    CHECK_MSG(rc == 0, "read_results second: %s", err.msg);
    if (rc == 0) {
        compare_run(r, gs, sims, NG, 0);
        lsim_store_run_free(r);
    }
    FILE *devnull = fopen("/dev/null", "w");
    rc = lsim_store_info(results, devnull, &err);
    CHECK_MSG(rc == 0, "info results: %s", err.msg);
    fclose(devnull);

    /* levels of detail: each run keeps what its level says, records the
     * level, and its per-GPU results are the same at every level and for
     * every filter choice (no compression, deflate 9) */
    static const lsim_store_detail lv[] = {LSIM_STORE_DETAIL_NODES, LSIM_STORE_DETAIL_OPS, LSIM_STORE_DETAIL_SUMMARY};
    for (size_t k = 0; k < 3 * 2; k++) {
        char dp[1200];
        path_in_work(dp, sizeof dp, "results_detail.h5");
        remove(dp);
        lsim_store_run_info di = {.command_line = "test_store detail", .embed_graphs = 1, .detail = lv[k % 3],
                                  .deflate_level = k < 3 ? LSIM_STORE_FILTER_NONE : 9};
        rc = lsim_store_write_results_ex(dp, "d", items, NG, &di, &err);
        CHECK_MSG(rc == 0, "write detail %s: %s", lsim_store_detail_name(lv[k % 3]), err.msg);
        rc = lsim_store_read_results(dp, "d", &r, &err);
        CHECK_MSG(rc == 0, "read detail %s: %s", lsim_store_detail_name(lv[k % 3]), err.msg);
        if (rc) continue;
        CHECK_I64(r->detail, lv[k % 3]);
        CHECK((r->bind_start != NULL) == (lv[k % 3] == LSIM_STORE_DETAIL_NODES));
        CHECK((r->start != NULL) == (lv[k % 3] != LSIM_STORE_DETAIL_SUMMARY));
        CHECK((r->graphs != NULL) == (lv[k % 3] != LSIM_STORE_DETAIL_SUMMARY));
        if (lv[k % 3] == LSIM_STORE_DETAIL_NODES) compare_run(r, gs, sims, NG, 1);
        for (size_t i = 0; i < r->ngpus && i < NG; i++) {
            const lsim_rank_report *a = &sims[i].r, *b = &r->gpus[i].report;
            CHECK_I64(b->window_predicted, a->window_predicted);
            CHECK(memcmp(&b->bd_predicted, &a->bd_predicted, sizeof a->bd_predicted) == 0);
            CHECK_I64(b->niters, a->niters);
            for (uint32_t t = 0; t < b->niters && t < a->niters; t++)
                CHECK_I64(b->iters[t].predicted, a->iters[t].predicted);
            CHECK_I64(r->gpus[i].cp.n, sims[i].cp.n);
            if (r->start) CHECK(memcmp(r->gpus[i].start, lsim_engine_start(sims[i].e), gs[i]->n * 8) == 0);
        }
        lsim_store_run_free(r);
        r = NULL;
        remove(dp);
    }

    /* damaged result files */
    char p[1200];
    long size = file_size(results);
    static const double fr[] = {0.1, 0.5, 0.9};
    for (size_t k = 0; k < 3; k++) {
        path_in_work(p, sizeof p, "results_trunc.h5");
        copy_prefix(results, p, (long)((double)size * fr[k]));
        rc = lsim_store_read_results(p, "base", &r, &err);
        CHECK_I64(rc, LSIM_EFORMAT);
        CHECK(strstr(err.msg, "not an HDF5 file or truncated") != NULL);
        remove(p);
    }
    path_in_work(p, sizeof p, "results_cp.h5");
    copy_prefix(results, p, -1);
    CHECK(poke(p, "/runs/base/critical_path/node", 0, 1 << 30) == 0);
    rc = lsim_store_read_results(p, "base", &r, &err);
    CHECK_I64(rc, LSIM_EFORMAT);
    CHECK(strstr(err.msg, "/runs/base/critical_path of GPU 0") != NULL);
    printf("  ok: %s\n", err.msg);
    remove(p);
    /* an archive written before the node fidelity and the CPU-side spans
     * were recorded still reads: fidelity absent, spans unknown, and the
     * reports say nothing about them (null, not 0) */
    path_in_work(p, sizeof p, "results_old.h5");
    copy_prefix(results, p, -1);
    static const char *const opt[] = {"/runs/base/gpus/has_fidelity", "/runs/base/gpus/start_err_gpu_count",
                                      "/runs/base/gpus/start_err_gpu", "/runs/base/gpus/start_err_cpu_count",
                                      "/runs/base/gpus/start_err_cpu", "/runs/base/gpus/duty_abs_diff",
                                      "/runs/base/iterations/cpu_actual", "/runs/base/iterations/cpu_predicted", NULL};
    CHECK(unlink_all(p, opt) == 0);
    rc = lsim_store_read_results(p, "base", &r, &err);
    CHECK_MSG(rc == 0, "read an archive without the optional columns: %s", err.msg);
    if (rc == 0) {
        lsim_replay_item it[NG];
        size_t niter = 0;
        for (size_t i = 0; i < r->ngpus && i < NG; i++) {
            const lsim_rank_report *q = &r->gpus[i].report;
            CHECK_I64(q->has_fidelity, 0);
            CHECK_I64(q->iters[0].actual, sims[i].r.iters[0].actual);
            for (uint32_t k = 0; k < q->niters; k++, niter++) {
                CHECK_I64(q->iters[k].cpu_actual, LSIM_SPAN_UNKNOWN);
                CHECK_I64(q->iters[k].cpu_predicted, LSIM_SPAN_UNKNOWN);
            }
            it[i] = (lsim_replay_item){r->graphs[i], &r->gpus[i].report, r->gpus[i].start, r->gpus[i].end,
                                       r->gpus[i].bind_start, r->gpus[i].bind_end, &r->gpus[i].cp, 0, 0, 0, NULL};
        }
        CHECK_MSG(niter > 0, "the test graphs have no iterations: the CPU-side spans are not checked");
        char *buf = NULL;
        size_t len = 0;
        FILE *mf = open_memstream(&buf, &len);
        CHECK(mf && lsim_report_json(mf, it, r->ngpus, &err) == 0);
        if (mf) fclose(mf);
        if (buf) {
            size_t nnull = 0;
            for (const char *q = buf; (q = strstr(q, "\"cpu_predicted_ns\":null")); q++) nnull++;
            CHECK_I64(nnull, niter);
            CHECK(strstr(buf, "\"start_error_gpu\":null") != NULL);
            CHECK(strstr(buf, "\"mean_abs_diff_pp\":null") != NULL);
        }
        free(buf);
        lsim_store_run_free(r);
    }
    remove(p);
    path_in_work(p, sizeof p, "results_edge.h5");
    copy_prefix(results, p, -1);
    CHECK(poke(p, "/runs/base/graph/edges/in_src", 0, 1 << 30) == 0);
    rc = lsim_store_read_results(p, "base", &r, &err);
    CHECK_I64(rc, LSIM_EFORMAT);
    CHECK(strstr(err.msg, "/runs/base/graph/edges/in_src of GPU 0") != NULL);
    printf("  ok: %s\n", err.msg);
    remove(p);

    for (int i = 0; i < NG; i++) sim_free(&sims[i]);
    NO_OPEN_IDS();
}

/* The streamed writer: GPUs added in batches of 2 and 1 read back exactly
 * as written (the same graphs as the one-shot writer), the temporary file
 * is renamed at close, abort leaves nothing, and a bad batch fails. */
static void test_streamed_writer(lsim_graph **orig, const char *store)
{
    lsim_err err;
    memset(&err, 0, sizeof err);
    char path[1300], tmp[1400];
    snprintf(path, sizeof path, "%s.streamed.h5", store);
    lsim_out_tmp_name(path, (long)getpid(), tmp, sizeof tmp);
    remove(path);
    lsim_store_write_opts o = {"test_store streamed", NULL, 0, {0}};
    lsim_store_writer *w = NULL;
    int rc = lsim_store_writer_open(path, &o, &w, &err);
    CHECK_MSG(rc == 0, "writer_open: %s", err.msg);
    if (rc) return;
    CHECK(access(tmp, F_OK) == 0);   /* written under the temporary name */
    CHECK(access(path, F_OK) != 0);
    const char *srcs[NG];
    for (int i = 0; i < NG; i++) srcs[i] = g_paths[i];
    CHECK_MSG(lsim_store_writer_add(w, orig, 2, srcs, &err) == 0, "add: %s", err.msg);
    CHECK_MSG(lsim_store_writer_add(w, orig + 2, NG - 2, srcs + 2, &err) == 0, "add: %s", err.msg);
    /* extra root attributes: the store's own names and non-names refused */
    CHECK(lsim_store_writer_set_attr(w, "whatif", "{\"first\":1}", &err) == 0);
    CHECK(lsim_store_writer_set_attr(w, "whatif", "{\"dp\":4}", &err) == 0); /* replaces */
    CHECK(lsim_store_writer_set_attr(w, "kind", "x", &err) == LSIM_EARG);
    CHECK(lsim_store_writer_set_attr(w, "bad name", "x", &err) == LSIM_EARG);
    CHECK_MSG(lsim_store_writer_close(w, &err) == 0, "close: %s", err.msg);
    {
        char *t = NULL;
        CHECK(lsim_store_read_attr(path, "whatif", &t, &err) == 0);
        CHECK(t && !strcmp(t, "{\"dp\":4}"));
        free(t);
        t = NULL;
        CHECK(lsim_store_read_attr(path, "nothing_here", &t, &err) == LSIM_EARG);
        CHECK(t == NULL && strstr(err.msg, "nothing_here") != NULL);
        CHECK(lsim_store_read_attr(path, "kind", &t, &err) == 0); /* the store's own are readable */
        CHECK(t && !strcmp(t, LSIM_STORE_KIND_GRAPHS));
        free(t);
    }
    CHECK(access(tmp, F_OK) != 0);
    CHECK(lsim_store_probe(path) == LSIM_STORE_GRAPHS);
    lsim_graph **gs = NULL;
    size_t n = 0;
    rc = lsim_store_read_graphs(path, 0, SIZE_MAX, &gs, &n, &err);
    CHECK_MSG(rc == 0, "read streamed store: %s", err.msg);
    CHECK_I64(n, NG);
    for (size_t i = 0; !rc && i < n && i < NG; i++) compare_graphs(orig[i], gs[i], "streamed store");
    lsim_store_free_graphs(gs, n);
    /* the per-GPU table carries the sources' checksums, as the one-shot writer's */
    lsim_store_gpu_info *t1 = NULL, *t2 = NULL;
    size_t n1 = 0, n2 = 0;
    if (lsim_store_gpu_table(path, &t1, &n1, &err) == 0 && lsim_store_gpu_table(store, &t2, &n2, &err) == 0) {
        CHECK_I64(n1, n2);
        for (size_t i = 0; i < n1 && i < n2; i++) {
            CHECK_I64(t1[i].source_size, t2[i].source_size);
            CHECK(t1[i].source_crc32 == t2[i].source_crc32);
            CHECK_I64(t1[i].nodes, t2[i].nodes);
        }
    } else {
        CHECK_MSG(0, "gpu_table: %s", err.msg);
    }
    lsim_store_gpu_table_free(t1, n1);
    lsim_store_gpu_table_free(t2, n2);
    remove(path);
    /* abort: nothing left, not even the temporary file */
    CHECK(lsim_store_writer_open(path, &o, &w, &err) == 0);
    if (w) {
        CHECK(lsim_store_writer_add(w, orig, 1, NULL, &err) == 0);
        lsim_store_writer_abort(w);
    }
    CHECK(access(path, F_OK) != 0);
    CHECK(access(tmp, F_OK) != 0);
    /* a missing graph in a batch is an error */
    CHECK(lsim_store_writer_open(path, &o, &w, &err) == 0);
    if (w) {
        lsim_graph *none[1] = {NULL};
        CHECK(lsim_store_writer_add(w, none, 1, NULL, &err) == LSIM_EARG);
        CHECK(strstr(err.msg, "missing") != NULL);
        lsim_store_writer_abort(w);
    }
    CHECK(access(path, F_OK) != 0);
    /* an unwritable place fails at open with the path in the message */
    CHECK(lsim_store_writer_open("/nonexistent-dir/x.h5", &o, &w, &err) == LSIM_EIO);
    CHECK(w == NULL);
    CHECK(strstr(err.msg, "/nonexistent-dir/x.h5") != NULL);
    no_open_ids(__LINE__);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_store DATA_DIR [WORK_DIR]\n");
        return 2;
    }
    snprintf(g_work, sizeof g_work, "%s", argc > 2 ? argv[2] : ".");
    lsim_graph *gs[NG] = {NULL};
    int ok = 1;
    for (int i = 0; i < NG; i++) {
        snprintf(g_paths[i], sizeof g_paths[i], "%s/%s", argv[1], TRACES[i]);
        lsim_trace *t = NULL;
        lsim_err err;
        memset(&err, 0, sizeof err);
        int rc = lsim_trace_read(g_paths[i], &t, &err);
        if (!rc) rc = lsim_graph_build(t, NULL, &gs[i], &err);
        lsim_trace_free(t);
        CHECK_MSG(rc == 0, "%s: %s", g_paths[i], err.msg);
        if (rc) ok = 0;
    }
    if (!ok) return check_result("test_store");
    /* rank field differs per GPU in a real job; make it so */
    for (int i = 0; i < NG; i++)
        if (gs[i]->rank < 0) gs[i]->rank = i;
    char store[1200], results[1200];
    path_in_work(store, sizeof store, "test_store_graphs.h5");
    path_in_work(results, sizeof results, "test_store_results.h5");
    printf("graph round trip\n");
    test_graph_roundtrip(gs, store);
    printf("streamed writer\n");
    test_streamed_writer(gs, store);
    printf("results\n");
    test_results(gs, results, store);
    printf("bad graph stores\n");
    test_bad_graph_stores(gs, store, results);
    if (!getenv("LSIM_TEST_KEEP")) {
        remove(store);
        remove(results);
    }
    for (int i = 0; i < NG; i++) lsim_graph_free(gs[i]);
    return check_result("test_store");
}
