/* Parallel HDF5 graph store (io/h5_graph.c and io/h5_archive.c, the _mpi functions), run under
 * MPIEXEC at several process counts:
 *  - a collective write where each rank passes its own block of GPUs (one
 *    rank may have none) reads back, serially, identical to the graphs, and
 *    its datasets equal those of a serial write of the same graphs;
 *  - collective reads where each rank reads its own block, every rank reads
 *    everything, or some ranks read nothing, give identical graphs;
 *  - a collective result write (each rank its GPUs' replays, graphs
 *    embedded, a second run added to the file) reads back serially equal to
 *    the replays, and its datasets equal those of a serial write;
 *  - bad input (another kind of file, a truncated file, an edge past its
 *    GPU's nodes that only one rank's block contains, a GPU range past the
 *    end on one rank) fails on every rank with the same message, no hang.
 *
 * Usage: mpiexec -n N test_store_mpi DATA_DIR WORK_DIR */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "lumosim/critical.h"
#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/metrics.h"
#include "lumosim/store.h"
#include "lumosim/trace.h"
#include "check.h"

#define NG 3
static const char *const TRACES[NG] = {"hip_trace.json", "cuda_graph.json", "prewindow_megatron_rank0.json.gz"};

static int g_rank, g_size;

#define SAME(f, cnt) ((cnt) == 0 || memcmp(a->f, b->f, (cnt) * sizeof *a->f) == 0)
static int graphs_equal(const lsim_graph *a, const lsim_graph *b)
{
    if (strcmp(a->source, b->source) || a->rank != b->rank || a->latency != b->latency || a->n != b->n ||
        a->nedges != b->nedges || a->nprocs != b->nprocs || a->niters != b->niters || a->ncoll != b->ncoll ||
        a->t0 != b->t0 || a->releases != b->releases || a->prewindow != b->prewindow ||
        a->launch_latency_ns != b->launch_latency_ns || a->queued_gap_ns != b->queued_gap_ns ||
        memcmp(a->edges_by_class, b->edges_by_class, sizeof a->edges_by_class) ||
        memcmp(a->dropped, b->dropped, sizeof a->dropped))
        return 0;
    if (!SAME(kind, a->n) || !SAME(flags, a->n) || !SAME(proc, a->n) || !SAME(name, a->n) || !SAME(dur, a->n) ||
        !SAME(obs_start, a->n) || !SAME(obs_end, a->n) || !SAME(release, a->n) || !SAME(corr, a->n) ||
        !SAME(iter, a->n) || !SAME(coll, a->n) || !SAME(in_off, a->n + 1) || !SAME(in_src, a->nedges) ||
        !SAME(in_delay, a->nedges) || !SAME(in_class, a->nedges) || !SAME(out_off, a->n + 1))
        return 0;
    for (uint32_t p = 0; p < a->nprocs; p++)
        if (a->procs[p].pid != b->procs[p].pid || a->procs[p].tid != b->procs[p].tid ||
            a->procs[p].nnodes != b->procs[p].nnodes)
            return 0;
    for (size_t i = 0; i < a->ncoll; i++)
        if (a->colls[i].bytes != b->colls[i].bytes || a->colls[i].seq != b->colls[i].seq ||
            a->colls[i].pg_name != b->colls[i].pg_name)
            return 0;
    if (lsim_strtab_count(a->strings) != lsim_strtab_count(b->strings)) return 0;
    for (uint32_t i = 0; i < lsim_strtab_count(a->strings); i++)
        if (strcmp(lsim_strtab_get(a->strings, i), lsim_strtab_get(b->strings, i))) return 0;
    return 1;
}
#undef SAME

/* This rank's block of n GPUs. */
static void block(size_t n, int rank, int size, size_t *first, size_t *count)
{
    size_t a = n * (size_t)rank / (size_t)size, b = n * (size_t)(rank + 1) / (size_t)size;
    *first = a;
    *count = b - a;
}

/* Every rank must agree on rc and on the message. */
static void same_everywhere(int rc, const lsim_err *err, int line)
{
    int lo = rc, hi = rc;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi) {
        fprintf(stderr, "%s:%d: rank %d: status differs between ranks (%d..%d)\n", __FILE__, line, g_rank, lo, hi);
        check_failures++;
    }
    char msg[LSIM_ERR_LEN];
    memcpy(msg, err->msg, sizeof msg);
    MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rc && strcmp(msg, err->msg) != 0) {
        fprintf(stderr, "%s:%d: rank %d: message \"%s\" differs from rank 0's \"%s\"\n", __FILE__, line, g_rank,
                err->msg, msg);
        check_failures++;
    }
}

static void read_and_compare(const char *path, lsim_graph **orig, size_t first, size_t count, const char *what)
{
    lsim_graph **gs = NULL;
    size_t n = 0;
    lsim_err err;
    memset(&err, 0, sizeof err);
    int rc = lsim_store_read_graphs_mpi(path, MPI_COMM_WORLD, first, count, &gs, &n, &err);
    same_everywhere(rc, &err, __LINE__);
    CHECK_MSG(rc == 0, "rank %d: %s: %s", g_rank, what, err.msg);
    if (rc) return;
    size_t want = count == SIZE_MAX ? NG - first : count;
    CHECK_I64(n, want);
    for (size_t i = 0; i < n && i < want; i++)
        CHECK_MSG(graphs_equal(orig[first + i], gs[i]), "rank %d: %s: GPU %zu differs", g_rank, what, first + i);
    lsim_store_free_graphs(gs, n);
}

static void expect_fail(const char *path, size_t first, size_t count, const char *needle, int line)
{
    lsim_graph **gs = NULL;
    size_t n = 0;
    lsim_err err;
    memset(&err, 0, sizeof err);
    int rc = lsim_store_read_graphs_mpi(path, MPI_COMM_WORLD, first, count, &gs, &n, &err);
    same_everywhere(rc, &err, line);
    if (rc == 0) {
        fprintf(stderr, "%s:%d: rank %d: reading %s succeeded\n", __FILE__, line, g_rank, path);
        check_failures++;
        lsim_store_free_graphs(gs, n);
    } else if (!strstr(err.msg, needle) || strncmp(err.msg, path, strlen(path)) != 0) {
        fprintf(stderr, "%s:%d: rank %d: message \"%s\" lacks \"%s\"\n", __FILE__, line, g_rank, err.msg, needle);
        check_failures++;
    } else if (g_rank == 0) {
        printf("  ok: %s\n", err.msg);
    }
}


typedef struct sim {
    lsim_engine *e;
    lsim_rank_report r;
    lsim_critical_path cp;
} sim;

static void simulate(const lsim_graph *g, sim *s)
{
    lsim_err err;
    memset(s, 0, sizeof *s);
    int rc = lsim_engine_new(g, &s->e, &err);
    if (!rc) rc = lsim_engine_run(s->e, &err);
    if (!rc) rc = lsim_metrics_compute(g, lsim_engine_start(s->e), lsim_engine_end(s->e), 1000000, &s->r, &err);
    if (!rc) rc = lsim_critical_path_compute(g, s->e, &s->cp, &err);
    if (rc) {
        fprintf(stderr, "rank %d: %s\n", g_rank, err.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static lsim_replay_item item_of(const lsim_graph *g, sim *s)
{
    return (lsim_replay_item){g, &s->r, lsim_engine_start(s->e), lsim_engine_end(s->e), lsim_engine_bind_start(s->e),
                              lsim_engine_bind_end(s->e), &s->cp, 0, 0, 0, NULL};
}

static void test_results(lsim_graph **orig, size_t first, size_t count, const char *work)
{
    char res[1200], ser[1200];
    snprintf(res, sizeof res, "%s/results_mpi_np%d.h5", work, g_size);
    snprintf(ser, sizeof ser, "%s/results_mpi_serial_np%d.h5", work, g_size);
    sim sims[NG];
    lsim_replay_item items[NG];
    for (int i = 0; i < NG; i++) {
        simulate(orig[i], &sims[i]);
        items[i] = item_of(orig[i], &sims[i]);
    }
    if (g_rank == 0) remove(res);
    MPI_Barrier(MPI_COMM_WORLD);
    lsim_store_run_info info;
    memset(&info, 0, sizeof info);
    info.command_line = "test_store_mpi";
    info.embed_graphs = 1;
    lsim_err err;
    memset(&err, 0, sizeof err);
    int rc = lsim_store_write_results_mpi(res, MPI_COMM_WORLD, "one", items + first, count, &info, &err);
    same_everywhere(rc, &err, __LINE__);
    CHECK_MSG(rc == 0, "rank %d: write_results_mpi: %s", g_rank, err.msg);
    info.embed_graphs = 0;
    rc = lsim_store_write_results_mpi(res, MPI_COMM_WORLD, "two", items + first, count, &info, &err);
    same_everywhere(rc, &err, __LINE__);
    CHECK_MSG(rc == 0, "rank %d: write_results_mpi (second run): %s", g_rank, err.msg);
    rc = lsim_store_write_results_mpi(res, MPI_COMM_WORLD, "two", items + first, count, &info, &err);
    same_everywhere(rc, &err, __LINE__);
    CHECK_MSG(rc == LSIM_EARG && strstr(err.msg, "already holds a run named 'two'"), "rank %d: duplicate run: %d %s",
              g_rank, rc, err.msg);
    if (g_rank == 0) {
        for (int k = 0; k < 2; k++) {
            lsim_store_run *r = NULL;
            rc = lsim_store_read_results(res, k ? "two" : "one", &r, &err);
            CHECK_MSG(rc == 0, "read_results: %s", err.msg);
            if (rc) continue;
            CHECK_I64(r->ngpus, NG);
            CHECK(k ? r->graphs == NULL : r->graphs != NULL);
            for (size_t i = 0; i < r->ngpus && i < NG; i++) {
                const lsim_store_gpu_result *g = &r->gpus[i];
                CHECK(memcmp(g->start, lsim_engine_start(sims[i].e), orig[i]->n * 8) == 0);
                CHECK(memcmp(g->end, lsim_engine_end(sims[i].e), orig[i]->n * 8) == 0);
                CHECK(g->bind_start && memcmp(g->bind_start, lsim_engine_bind_start(sims[i].e), orig[i]->n * 8) == 0);
                CHECK_I64(g->report.window_predicted, sims[i].r.window_predicted);
                CHECK_I64(g->report.niters, sims[i].r.niters);
                CHECK_I64(g->report.nbins_predicted, sims[i].r.nbins_predicted);
                CHECK_I64(g->cp.n, sims[i].cp.n);
                if (r->graphs) CHECK(graphs_equal(orig[i], r->graphs[i]));
            }
            CHECK_I64(r->mpi_ranks, g_size);
            lsim_store_run_free(r);
        }
        remove(ser);
        info.embed_graphs = 1;
        rc = lsim_store_write_results_ex(ser, "one", items, NG, &info, &err);
        CHECK_MSG(rc == 0, "serial write_results: %s", err.msg);
        char cmd[4096];
        if (system("command -v h5diff >/dev/null 2>&1") == 0) {
            /* group comparisons: compare each subgroup (provenance differs) */
            const char *sub[] = {"gpus", "iterations", "nodes", "duty", "critical_path", "graph"};
            for (int k = 0; k < 6; k++) {
                snprintf(cmd, sizeof cmd, "h5diff -q %s %s /runs/one/%s /runs/one/%s >/dev/null 2>&1", res, ser,
                         sub[k], sub[k]);
                CHECK_MSG(system(cmd) == 0, "parallel and serial result files differ: %s", cmd);
            }
        }
        remove(res);
        remove(ser);
    }
    for (int i = 0; i < NG; i++) {
        lsim_engine_free(sims[i].e);
        lsim_rank_report_clear(&sims[i].r);
        lsim_critical_path_clear(&sims[i].cp);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (argc < 3) {
        if (g_rank == 0) fprintf(stderr, "usage: test_store_mpi DATA_DIR WORK_DIR\n");
        MPI_Finalize();
        return 2;
    }
    lsim_graph *orig[NG] = {NULL};
    char paths[NG][1024];
    for (int i = 0; i < NG; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", argv[1], TRACES[i]);
        lsim_trace *t = NULL;
        lsim_err err;
        int rc = lsim_trace_read(paths[i], &t, &err);
        if (!rc) rc = lsim_graph_build(t, NULL, &orig[i], &err);
        lsim_trace_free(t);
        if (rc) {
            fprintf(stderr, "rank %d: %s\n", g_rank, err.msg);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (orig[i]->rank < 0) orig[i]->rank = i;
    }
    char store[1200], serial[1200], bad[1200];
    snprintf(store, sizeof store, "%s/store_mpi_np%d.h5", argv[2], g_size);
    snprintf(serial, sizeof serial, "%s/store_mpi_serial_np%d.h5", argv[2], g_size);
    snprintf(bad, sizeof bad, "%s/store_mpi_bad_np%d.h5", argv[2], g_size);

    /* collective write: each rank its block */
    size_t first, count;
    block(NG, g_rank, g_size, &first, &count);
    const char *src[NG];
    for (int i = 0; i < NG; i++) src[i] = paths[i];
    lsim_err err;
    memset(&err, 0, sizeof err);
    int rc = lsim_store_write_graphs_mpi(store, MPI_COMM_WORLD, orig + first, count, "test_store_mpi", src + first,
                                         &err);
    same_everywhere(rc, &err, __LINE__);
    CHECK_MSG(rc == 0, "rank %d: write_graphs_mpi: %s", g_rank, err.msg);

    if (g_rank == 0) {
        /* serial read of the parallel file, and a serial write to compare */
        lsim_graph **gs = NULL;
        size_t n = 0;
        rc = lsim_store_read_graphs(store, 0, SIZE_MAX, &gs, &n, &err);
        CHECK_MSG(rc == 0, "serial read of the parallel store: %s", err.msg);
        CHECK_I64(n, NG);
        for (size_t i = 0; rc == 0 && i < n; i++) CHECK_MSG(graphs_equal(orig[i], gs[i]), "GPU %zu differs", i);
        if (!rc) lsim_store_free_graphs(gs, n);
        rc = lsim_store_write_graphs(serial, orig, NG, "test_store_mpi", src, &err);
        CHECK_MSG(rc == 0, "serial write: %s", err.msg);
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "h5diff -q %s %s >/dev/null 2>&1", store, serial);
        if (system("command -v h5diff >/dev/null 2>&1") == 0)
            CHECK_MSG(system(cmd) == 0, "datasets of the parallel and the serial store differ (%s)", cmd);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* collective reads */
    read_and_compare(store, orig, first, count, "own block");
    read_and_compare(store, orig, 0, SIZE_MAX, "everything");
    read_and_compare(store, orig, g_rank % 2 ? NG : 0, g_rank % 2 ? 0 : SIZE_MAX, "every other rank nothing");

    /* bad input: the same error everywhere */
    expect_fail(argv[1], 0, SIZE_MAX, "is a directory", __LINE__);
    if (g_rank == 0) {
        FILE *f = fopen(store, "rb"), *g = fopen(bad, "wb");
        char buf[4096];
        size_t got, total = 0;
        while ((got = fread(buf, 1, sizeof buf, f)) > 0 && total < 20000) {
            fwrite(buf, 1, got, g);
            total += got;
        }
        fclose(f);
        fclose(g);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_fail(bad, 0, SIZE_MAX, "not an HDF5 file or truncated", __LINE__);
    if (g_rank == 0) {
        /* GPU 2's first edge points past its nodes */
        lsim_store_gpu_info *tab = NULL;
        size_t nt = 0;
        CHECK(lsim_store_gpu_table(store, &tab, &nt, &err) == 0);
        remove(bad);
        FILE *f = fopen(store, "rb"), *g = fopen(bad, "wb");
        char buf[4096];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, got, g);
        fclose(f);
        fclose(g);
        hid_t h = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
        hid_t d = H5Dopen2(h, "/edges/in_src", H5P_DEFAULT);
        hid_t fs = H5Dget_space(d);
        hsize_t row = tab[0].edges + tab[1].edges, one = 1;
        hid_t ms = H5Screate_simple(1, &one, NULL);
        uint32_t v = (uint32_t)tab[2].nodes + 3;
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &row, NULL, &one, NULL);
        CHECK(H5Dwrite(d, H5T_NATIVE_UINT32, ms, fs, H5P_DEFAULT, &v) >= 0);
        H5Sclose(ms);
        H5Sclose(fs);
        H5Dclose(d);
        H5Fclose(h);
        lsim_store_gpu_table_free(tab, nt);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* only the last rank's block holds GPU 2, yet every rank fails */
    expect_fail(bad, first, count, "/edges/in_src of GPU 2", __LINE__);
    /* one rank asks for a range past the end */
    expect_fail(store, g_rank == g_size - 1 ? NG + 1 : 0, 1, "GPUs 4..5 requested", __LINE__);

    test_results(orig, first, count, argv[2]);

    if (g_rank == 0) {
        remove(store);
        remove(serial);
        remove(bad);
    }
    for (int i = 0; i < NG; i++) lsim_graph_free(orig[i]);
    int fails = check_failures;
    MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check_failures = fails;
    int res = g_rank == 0 ? check_result("test_store_mpi") : (fails ? 1 : 0);
    MPI_Finalize();
    return res;
}
