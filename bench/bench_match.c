/* bench_match: the collective match of a graph store's job over MPI ranks.
 *
 * usage: [mpirun -np K] bench_match [--method dist|gather] [--verify] STORE
 *
 * Every rank reads its block of the store's GPUs (lsim_map_block), then
 * matches the job's collectives once, by
 *   dist    the distributed match (lsim_mpi_job_match: instances hashed to
 *           owner ranks, each rank gets back only its GPUs' instances);
 *   gather  the match it replaced: every rank gathers every GPU's entries
 *           (lsim_mpi_gather_entries) and matches the whole job
 *           (lsim_job_from_entries), as run_mpi.c did before issue 20.
 * and prints, on rank 0, one line
 *   BENCH match method= ranks= gpus= nodes= entries= match_s= peak_mb=
 *     job_mb= instances= held_max=
 * match_s: the slowest rank's wall time of the match; peak_mb: the largest
 * rise of any rank's peak RSS during the match over its RSS before it
 * (VmHWM reset through /proc/self/clear_refs first; the graphs are loaded
 * before and not counted; with glibc every allocation of 64 KiB or more is
 * its own mapping, returned when freed, so that memory the loading freed
 * but kept cannot hide the match's); job_mb: the largest lsim_job a rank holds after
 * it (its arrays, counted); held_max: the most instances a rank holds.
 *
 * --verify runs both and compares them on every rank: the job's counts and
 * every GPU's clock offset, and for each node of this rank's GPUs the
 * instance it is in (participants in order, transfer, rule, root) and its
 * observed waiting. Prints "verify: K = N: the distributed match equals
 * gather-and-match" or lines with MISMATCH (exit 1). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__ /* defined by the headers above */
#include <malloc.h>
#endif

#include "lumosim/job.h"
#include "lumosim/run.h"
#include "lumosim/run_mpi.h"
#include "lumosim/store.h"

static int die(const char *what, const lsim_err *err)
{
    fprintf(stderr, "bench_match: %s: %s\n", what, err ? err->msg : "");
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

/* kB of a /proc/self/status field (VmRSS, VmHWM), -1 unknown */
static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') kb = strtol(line + n + 1, NULL, 10);
    if (f) fclose(f);
    return kb;
}

/* reset VmHWM to the current RSS (Linux >= 4.0): what the match adds on
 * top of the loaded graphs is then HWM - RSS before */
static void reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

/* The match run_mpi.c made before the distributed one: gather, match all. */
static int gather_match(lsim_graph *const *g, const uint32_t *gid, size_t n, size_t ngpus, lsim_job **out,
                        lsim_err *err)
{
    lsim_job_entry *mine = NULL, *all = NULL;
    size_t nmine = 0, nall = 0;
    size_t *nodes = calloc(2 * ngpus, sizeof *nodes), *colls = nodes ? nodes + ngpus : NULL;
    lsim_strtab *mn = lsim_strtab_new(), *an = lsim_strtab_new(); /* the entries' group names */
    int rc = nodes && mn && an ? 0 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) nodes[gid[i]] = g[i]->n, colls[gid[i]] = g[i]->ncoll;
    if (!rc) rc = lsim_job_entries(g, gid, n, mn, &mine, &nmine, NULL, err);
    if ((rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, err))) goto cleanup;
    if ((rc = lsim_mpi_gather_entries(MPI_COMM_WORLD, mine, nmine, an, &all, &nall, err))) goto cleanup;
    rc = lsim_job_from_entries(all, nall, ngpus, NULL, NULL, nodes, colls, out, err);
    rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, err);
cleanup:
    free(mine);
    free(all);
    lsim_strtab_free(mn);
    lsim_strtab_free(an);
    free(nodes);
    return rc;
}

/* bytes of a job's arrays on this rank */
static double job_bytes(const lsim_job *j, lsim_graph *const *g, const uint32_t *gid, size_t n)
{
    double b = (double)j->ninst * (8 + 8 + 1 + 8 + (j->inst_id ? 8 : 0)) + (double)j->part_off[j->ninst] * 12 +
               (double)j->ngpus * (8 + 8 + 8);
    for (size_t i = 0; i < n; i++) b += (double)g[i]->ncoll * 4 + (double)g[i]->n * (j->obs_wait[gid[i]] ? 8 : 0);
    return b;
}

static int bad = 0;
static void mismatch(int me, const char *what, size_t a, size_t b)
{
    if (bad++ < 10) printf("MISMATCH rank %d: %s (%zu, %zu)\n", me, what, a, b);
}

static void verify(int me, const lsim_job *d, const lsim_job *s, lsim_graph *const *g, const uint32_t *gid, size_t n)
{
    if (d->ninst_job != s->ninst || d->p2p_inst != s->p2p_inst || d->rooted_inst != s->rooted_inst ||
        d->rootless_inst != s->rootless_inst)
        mismatch(me, "job counts", (size_t)d->ninst_job, s->ninst);
    for (size_t i = 0; i < s->ngpus; i++)
        if (d->clock_offset[i] != s->clock_offset[i]) mismatch(me, "clock offset of GPU", i, 0);
    for (size_t k = 1; k < d->ninst; k++)
        if (d->inst_id[k] <= d->inst_id[k - 1]) mismatch(me, "instance ids not ascending", k, 0);
    size_t held = 0;
    for (size_t k = 0; k < s->ninst; k++) {
        int mine = 0;
        for (uint64_t p = s->part_off[k]; p < s->part_off[k + 1] && !mine; p++)
            for (size_t i = 0; i < n && !mine; i++) mine = s->part_gpu[p] == gid[i];
        held += (size_t)mine;
    }
    if (held != d->ninst) mismatch(me, "instances held", d->ninst, held);
    for (size_t i = 0; i < n; i++) {
        uint32_t G = gid[i];
        for (size_t v = 0; v < g[i]->n; v++) {
            int32_t kd = lsim_job_inst(d->inst_of[G], g[i], v), ks = lsim_job_inst(s->inst_of[G], g[i], v);
            lsim_ns wd = d->obs_wait[G] ? d->obs_wait[G][v] : 0, ws = s->obs_wait[G] ? s->obs_wait[G][v] : 0;
            if (wd != ws) mismatch(me, "observed waiting of GPU, node", G, v);
            if ((kd < 0) != (ks < 0)) {
                mismatch(me, "coupled or not: GPU, node", G, v);
                continue;
            }
            if (kd < 0) continue;
            uint64_t d0 = d->part_off[kd], d1 = d->part_off[kd + 1], s0 = s->part_off[ks], s1 = s->part_off[ks + 1];
            int same = d1 - d0 == s1 - s0 && d->transfer[kd] == s->transfer[ks] && d->rule[kd] == s->rule[ks];
            for (uint64_t a = 0; same && a < d1 - d0; a++)
                same = d->part_gpu[d0 + a] == s->part_gpu[s0 + a] && d->part_node[d0 + a] == s->part_node[s0 + a];
            if (same && (s->rule[ks] == LSIM_JOB_BCAST || s->rule[ks] == LSIM_JOB_REDUCE))
                same = d->root[kd] - d0 == s->root[ks] - s0;
            if (!same) mismatch(me, "instance of GPU, node", G, v);
        }
    }
}

int main(int argc, char **argv)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 1 << 16); /* fixed: not raised by frees (see above) */
    mallopt(M_TRIM_THRESHOLD, 1 << 16);
#endif
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *path = NULL, *method = "dist";
    int check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--method") && i + 1 < argc) method = argv[++i];
        else if (!strcmp(argv[i], "--verify")) check = 1;
        else path = argv[i];
    }
    int dist = !strcmp(method, "dist");
    if (!path || (!dist && strcmp(method, "gather"))) {
        if (me == 0) fprintf(stderr, "usage: [mpirun -np K] bench_match [--method dist|gather] [--verify] STORE\n");
        MPI_Finalize();
        return 2;
    }
    lsim_err err = {0};
    size_t ngpus = 0, first = 0, n = 0, ng = 0;
    if (lsim_store_count_gpus(path, &ngpus, &err)) return die("store", &err);
    lsim_map_block(ngpus, np, me, &first, &n);
    lsim_graph **g = NULL;
    if (lsim_store_read_graphs_mpi(path, MPI_COMM_WORLD, first, n, &g, &ng, &err)) return die("load", &err);
    uint32_t *gid = malloc((ng ? ng : 1) * sizeof *gid);
    uint64_t nodes = 0, ents = 0;
    for (size_t i = 0; i < ng; i++) {
        gid[i] = (uint32_t)(first + i);
        nodes += g[i]->n;
        for (size_t v = 0; v < g[i]->n; v++) ents += (g[i]->flags[v] & LSIM_NF_COLL) && g[i]->coll[v] >= 0;
    }
    lsim_job *j = NULL, *ref = NULL;
    MPI_Barrier(MPI_COMM_WORLD);
    long rss0 = status_kb("VmRSS");
    reset_peak();
    double t0 = MPI_Wtime();
    int rc = dist ? lsim_mpi_job_match(MPI_COMM_WORLD, g, gid, ng, ngpus, &j, NULL, &err)
                  : gather_match(g, gid, ng, ngpus, &j, &err);
    double t = MPI_Wtime() - t0;
    long hwm = status_kb("VmHWM");
    if (rc) return die("match", &err);
    double peak = rss0 >= 0 && hwm >= 0 ? (double)(hwm - rss0) / 1024.0 : -1, jb = job_bytes(j, g, gid, ng) / 1048576.0;
    double in[4] = {t, peak, jb, (double)j->ninst}, mx[4];
    uint64_t c[2] = {nodes, ents}, call[2];
    MPI_Reduce(in, mx, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(c, call, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0)
        printf("BENCH match method=%s ranks=%d gpus=%zu nodes=%llu entries=%llu match_s=%.6f peak_mb=%.1f job_mb=%.1f "
               "instances=%llu held_max=%.0f\n",
               method, np, ngpus, (unsigned long long)call[0], (unsigned long long)call[1], mx[0], mx[1], mx[2],
               (unsigned long long)(dist ? j->ninst_job : j->ninst), mx[3]);
    if (check) {
        lsim_job *d = j;
        if (!dist) {
            ref = j;
            if (lsim_mpi_job_match(MPI_COMM_WORLD, g, gid, ng, ngpus, &d, NULL, &err)) return die("match", &err);
        } else if (gather_match(g, gid, ng, ngpus, &ref, &err)) {
            return die("match", &err);
        }
        verify(me, d, ref, g, gid, ng);
        int all = 0;
        MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (me == 0 && !all)
            printf("verify: K = %d: the distributed match equals gather-and-match (%llu instances, %.0f held at most)\n", np,
                   (unsigned long long)ref->ninst, mx[3]);
        if (d != j) lsim_job_free(d);
        if (all) rc = 1;
    }
    lsim_job_free(j);
    if (ref != j) lsim_job_free(ref);
    lsim_store_free_graphs(g, ng);
    free(gid);
    MPI_Finalize();
    return rc ? 1 : 0;
}
