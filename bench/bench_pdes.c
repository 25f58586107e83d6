/* bench_pdes: the parallel engine on a large replicated job.
 *
 * usage: [mpirun -np K] bench_pdes --gpus N [--runs R] [--windows ready|paths|start] TRACE
 *
 * Every MPI rank builds the graph of TRACE (one GPU of a real job), takes
 * its block of the N GPUs and gives each a copy of that graph (all GPUs in
 * the world group: every collective couples all N), matches the job's
 * collectives from the exchanged lists, and runs the conservative parallel
 * engine R times (median). Prints, on rank 0: nodes, time per phase (load =
 * read + build + copy, match, simulate), node-events/s per rank, windows,
 * messages and allreduces per simulated iteration, and BENCH key=value
 * lines for bench/scaling.sh (parallel efficiency = T(K=1) / (K * T(K))). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/job.h"
#include "lumosim/pdes.h"
#include "lumosim/run_mpi.h"
#include "lumosim/trace.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fail(const char *what, const lsim_err *err)
{
    fprintf(stderr, "bench_pdes: %s: %s\n", what, err ? err->msg : "");
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    size_t ngpus = 64;
    int runs = 3;
    const char *trace = NULL;
    lsim_pdes_opts popts = {0, LSIM_PDES_READY, 0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpus") && i + 1 < argc) ngpus = (size_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--windows") && i + 1 < argc) {
            if (lsim_pdes_windows_parse(argv[++i], &popts.windows)) runs = 0; /* usage below */
        }
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else trace = argv[i];
    }
    if (!trace || ngpus < 2 || runs < 1 || runs > 50) {
        if (me == 0) fprintf(stderr, "usage: [mpirun -np K] bench_pdes --gpus N [--runs R] [--windows ready|paths|start] TRACE\n");
        MPI_Finalize();
        return 2;
    }
    lsim_err err = {0};
    double t0 = lsim_now_s();
    lsim_trace *t = NULL;
    lsim_graph *tmpl = NULL;
    lsim_build_opts o;
    lsim_build_opts_default(&o);
    o.release_events = 1;
    if (lsim_trace_read(trace, &t, &err) || lsim_graph_build(t, &o, &tmpl, &err)) return fail("build", &err);
    lsim_trace_free(t);
    /* this rank's block of GPUs, each a copy of the template */
    size_t first = 0, nloc = 0;
    lsim_map_block(ngpus, np, me, &first, &nloc);
    lsim_graph **g = calloc(nloc ? nloc : 1, sizeof *g);
    uint32_t *gid = malloc((nloc ? nloc : 1) * sizeof *gid);
    if (!g || !gid) return fail("out of memory", NULL);
    for (size_t i = 0; i < nloc; i++) {
        if (lsim_graph_clone(tmpl, &g[i], &err)) return fail("copy", &err);
        g[i]->rank = (int32_t)(first + i);
        g[i]->world_size = (int32_t)ngpus;
        gid[i] = (uint32_t)(first + i);
    }
    double t_load = lsim_now_s() - t0;
    /* match the job from the exchanged collective lists (run_mpi.h) */
    t0 = lsim_now_s();
    lsim_job *job = NULL;
    if (lsim_mpi_job_match(MPI_COMM_WORLD, g, gid, nloc, ngpus, &job, NULL, &err)) return fail("match", &err);
    double t_match = lsim_now_s() - t0;
    lsim_engine **e = calloc(nloc ? nloc : 1, sizeof *e);
    lsim_ns **waits = calloc(nloc ? nloc : 1, sizeof *waits);
    uint64_t local_nodes = 0;
    if (lsim_engines_new((const lsim_graph *const *)g, nloc, e, &err)) return fail("engine", &err);
    for (size_t i = 0; i < nloc; i++) {
        waits[i] = malloc(g[i]->n * sizeof **waits);
        local_nodes += g[i]->n;
    }
    double *ts = malloc((size_t)runs * sizeof *ts);
    lsim_pdes_stats st;
    for (int run = 0; run < runs; run++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double a = lsim_now_s();
        if (lsim_pdes_run(MPI_COMM_WORLD, job, gid, e, nloc, waits, &popts, &st, &err)) return fail("simulate", &err);
        double mine_s = lsim_now_s() - a, slowest;
        MPI_Allreduce(&mine_s, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        ts[run] = slowest;
    }
    qsort(ts, (size_t)runs, sizeof *ts, cmp_d);
    double t_sim = ts[runs / 2];
    uint64_t total_nodes = 0;
    MPI_Allreduce(&local_nodes, &total_nodes, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    /* one predicted end per run must agree across rank counts: print it */
    lsim_ns my_end = INT64_MIN, job_end;
    for (size_t i = 0; i < nloc; i++)
        for (size_t v = 0; v < g[i]->n; v++)
            if (lsim_engine_end(e[i])[v] > my_end) my_end = lsim_engine_end(e[i])[v];
    MPI_Allreduce(&my_end, &job_end, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0) {
        printf("%zu GPUs (%llu nodes) on %d rank(s): load %.3f s, match %.3f s, simulate %.3f s (median of %d), "
               "%.1f M node-events/s per rank; lookahead %lld ns, %llu windows, %llu messages, %llu allreduces per "
               "iteration\n",
               ngpus, (unsigned long long)total_nodes, np, t_load, t_match, t_sim, runs,
               (double)total_nodes / t_sim / 1e6 / np, (long long)st.lookahead, (unsigned long long)st.windows,
               (unsigned long long)st.messages, (unsigned long long)st.allreduces);
        printf("BENCH gpus=%zu ranks=%d nodes=%llu load_s=%.6f match_s=%.6f sim_s=%.6f windows=%llu messages=%llu "
               "allreduces=%llu job_end=%lld windows_mode=%s bounds_s=%.6f sync_s=%.6f\n",
               ngpus, np, (unsigned long long)total_nodes, t_load, t_match, t_sim, (unsigned long long)st.windows,
               (unsigned long long)st.messages, (unsigned long long)st.allreduces, (long long)job_end,
               lsim_pdes_windows_name(popts.windows), st.bounds_s, st.sync_s);
    }
    for (size_t i = 0; i < nloc; i++) {
        lsim_engine_free(e[i]);
        free(waits[i]);
        lsim_graph_free(g[i]);
    }
    lsim_job_free(job);
    lsim_graph_free(tmpl);
    free(e);
    free(waits);
    free(g);
    free(gid);
    free(ts);
    MPI_Finalize();
    return 0;
}
