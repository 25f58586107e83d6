/* bench_phold: a PHOLD-style synthetic job for the parallel engine.
 *
 * usage: [mpirun -np K] bench_phold [options]        (--help lists them)
 *
 * No trace: every rank generates, in memory, the graphs of its block of the
 * N GPUs (linear mapping, as bench_pdes). Each GPU is a random DAG of E
 * kernels on W lanes (each node follows the previous node of its lane,
 * plus, with probability 1/4, an edge from a random recent node), with
 * exponential durations (mean --mean-ns). A fraction F of each GPU's nodes
 * are collectives. They are generated in rounds, so that every GPU takes
 * part in exactly round(F E) collectives, in the same global order on every
 * GPU (which rules out deadlock): in each round the GPUs are partitioned
 * into groups of G, either aligned blocks of G consecutive GPUs (a "local"
 * round: its groups never cross MPI ranks while N/K is a multiple of G) or
 * the blocks of a random permutation (a "random" round: its groups cross
 * ranks with probability about 1 - (1/K)^(G-1)). --cross X is the fraction
 * of random rounds, so the cross-rank fraction is tunable without making
 * the graph depend on K. A collective's transfer time is L + U[0, extra)
 * (random rounds) or --local-lat-ns + U[0, extra) (local rounds); the
 * parallel engine's lookahead is the shortest transfer, so L (or the local
 * latency, if smaller) is the lookahead. Everything is seeded: the graphs,
 * and so the results, do not depend on K.
 *
 * At K = 1 the job runs serially (lsim_job_run) and on the parallel engine
 * (lsim_pdes_run, one rank); at K > 1 on the parallel engine. One BENCH line
 * per mode, on rank 0 (keys below). result_hash combines every node's start
 * and end on every GPU: it must not depend on K or the mode. A mismatch
 * (serial vs parallel here, --expect-hash H, or --verify: rank 0 rebuilds
 * the whole job and runs it serially) is printed loudly and the program
 * exits 1.
 *
 * Time in MPI: this program defines MPI_Allreduce, MPI_Allgather and
 * MPI_Allgatherv (PMPI interposition: the library's calls link to these,
 * which time the PMPI_ ones while a measured run is in progress). mpi_s is
 * the mean over ranks (it includes waiting for the slowest rank), mpi_max_s
 * the largest, split into allreduce and allgather(v) time. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/job.h"
#include "lumosim/metrics.h"
#include "lumosim/pdes.h"
#include "lumosim/run_mpi.h"
#include "lumosim/strtab.h"

/* ------------------------------------------------------------ MPI timing */

static int g_timing;
static double g_t_allreduce, g_t_allgather;

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    if (!g_timing) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    double a = lsim_now_s();
    int rc = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    g_t_allreduce += lsim_now_s() - a;
    return rc;
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!g_timing) return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    double a = lsim_now_s();
    int rc = PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    g_t_allgather += lsim_now_s() - a;
    return rc;
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!g_timing) return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    double a = lsim_now_s();
    int rc = PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    g_t_allgather += lsim_now_s() - a;
    return rc;
}

/* ------------------------------------------------------------ options */

typedef struct opts {
    size_t ngpus;
    uint32_t events;      /* per GPU */
    double coll_frac;     /* F */
    uint32_t group;       /* G */
    double cross;         /* fraction of random (cross-rank) rounds */
    lsim_ns lookahead;    /* L: minimum transfer of random rounds */
    lsim_ns local_lat;    /* minimum transfer of local rounds (-1: = L) */
    lsim_ns coll_extra;   /* transfer = min + U[0, extra) (-1: = L) */
    lsim_ns mean;         /* mean compute duration */
    uint32_t lanes;       /* W */
    uint64_t seed;
    int runs;
    int serial;           /* -1 auto (K = 1), 0 no, 1 yes (K = 1 only) */
    int verify;           /* rank 0 rebuilds the job and runs it serially */
    lsim_pdes_windows windows; /* --windows ready|paths|start */
    const char *expect;   /* expected result hash (hex) */
    const char *label;    /* free text for the BENCH line (scaling=strong...) */
} opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: [mpirun -np K] bench_phold [--gpus N] [--events E] [--coll-frac F] [--group G] [--cross X]\n"
               "       [--lookahead-ns L] [--local-lat-ns L2] [--coll-extra-ns X] [--mean-ns M] [--lanes W]\n"
               "       [--seed S] [--runs R] [--serial|--no-serial] [--verify] [--expect-hash H] [--label TEXT]\n"
               "       [--windows ready|paths|start]\n"
               "defaults: N 64, E 20000 per GPU, F 0.05, G 8, X 1 (all rounds random), L 10000 ns, L2 = L,\n"
               "          extra = L, M 5000 ns, W 2, seed 1, R 3; serial run at K = 1 only\n");
}

/* ------------------------------------------------------------ random */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnext(rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    uint64_t z = r->s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double runif(rng *r) { return (double)(rnext(r) >> 11) * (1.0 / 9007199254740992.0); }
static uint64_t rbelow(rng *r, uint64_t n) { return n ? rnext(r) % n : 0; }

/* ------------------------------------------------------------ the job */

/* The collective schedule, identical on every rank: per round, whether it
 * is random, and each GPU's group in it. */
typedef struct sched {
    uint32_t rounds;
    uint8_t *is_random;   /* per round */
    uint32_t *group_of;   /* [round * ngpus + gpu] */
    uint32_t *size_of;    /* [round * ngpus + gpu]: its group's size */
    uint32_t *local_seq;  /* per round: index among local rounds */
} sched;

static void sched_free(sched *s)
{
    free(s->is_random);
    free(s->group_of);
    free(s->size_of);
    free(s->local_seq);
}

static int sched_make(const opts *o, sched *s)
{
    memset(s, 0, sizeof *s);
    double r = o->coll_frac * (double)o->events;
    s->rounds = (uint32_t)(r + 0.5);
    if (s->rounds > o->events) s->rounds = o->events;
    size_t n = o->ngpus, R = s->rounds ? s->rounds : 1;
    s->is_random = calloc(R, 1);
    s->group_of = malloc(R * n * sizeof *s->group_of);
    s->size_of = malloc(R * n * sizeof *s->size_of);
    s->local_seq = calloc(R, sizeof *s->local_seq);
    uint32_t *perm = malloc(n * sizeof *perm);
    if (!s->is_random || !s->group_of || !s->size_of || !s->local_seq || !perm) {
        free(perm);
        return -1;
    }
    rng g = {mix64(o->seed ^ 0x5c4ed01eull)};
    uint32_t nlocal = 0;
    for (uint32_t k = 0; k < s->rounds; k++) {
        s->is_random[k] = runif(&g) < o->cross;
        for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
        if (s->is_random[k])
            for (size_t i = n - 1; i > 0; i--) {
                size_t j = (size_t)rbelow(&g, i + 1);
                uint32_t t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
        else
            s->local_seq[k] = nlocal++;
        for (size_t p = 0; p < n; p++) {
            uint32_t grp = (uint32_t)(p / o->group);
            size_t lo = (size_t)grp * o->group, hi = lo + o->group > n ? n : lo + o->group;
            s->group_of[(size_t)k * n + perm[p]] = grp;
            s->size_of[(size_t)k * n + perm[p]] = (uint32_t)(hi - lo);
        }
    }
    free(perm);
    return 0;
}

/* The transfer time of group grp of round k (the same on every member). */
static lsim_ns transfer_of(const opts *o, const sched *s, uint32_t k, uint32_t grp)
{
    lsim_ns base = s->is_random[k] ? o->lookahead : o->local_lat;
    uint64_t h = mix64(o->seed * 0x100000001b3ull ^ mix64(((uint64_t)k << 32) | grp));
    return base + (o->coll_extra > 0 ? (lsim_ns)(h % (uint64_t)o->coll_extra) : 0);
}

/* Graph of GPU gpu, built directly (struct of arrays + both CSRs). */
static int make_graph(const opts *o, const sched *s, uint32_t gpu, lsim_graph **out)
{
    *out = NULL;
    size_t n = o->events, W = o->lanes;
    lsim_graph *g = calloc(1, sizeof *g);
    if (!g) return -1;
    char src[64];
    snprintf(src, sizeof src, "phold:gpu%u", gpu);
    g->source = strdup(src);
    g->strings = lsim_strtab_new();
    g->rank = (int32_t)gpu;
    g->world_size = (int32_t)o->ngpus;
    g->latency = LSIM_LAT_MODEL;
    g->n = n;
    g->kind = malloc(n);
    g->flags = malloc(n);
    g->proc = malloc(n * sizeof *g->proc);
    g->name = malloc(n * sizeof *g->name);
    g->dur = malloc(n * sizeof *g->dur);
    g->obs_start = malloc(n * sizeof *g->obs_start);
    g->obs_end = malloc(n * sizeof *g->obs_end);
    g->release = malloc(n * sizeof *g->release);
    g->corr = malloc(n * sizeof *g->corr);
    g->iter = malloc(n * sizeof *g->iter);
    g->coll = malloc(n * sizeof *g->coll);
    g->in_off = calloc(n + 1, sizeof *g->in_off);
    g->out_off = calloc(n + 1, sizeof *g->out_off);
    size_t cape = n * (W + 1) + 1; /* lane edge + joins or one random edge */
    g->in_src = malloc(cape * sizeof *g->in_src);
    g->in_delay = malloc(cape * sizeof *g->in_delay);
    g->in_class = malloc(cape);
    g->out_dst = malloc(cape * sizeof *g->out_dst);
    g->nprocs = (uint32_t)W;
    g->procs = calloc(W, sizeof *g->procs);
    g->iters = calloc(1, sizeof *g->iters);
    g->ncoll = s->rounds;
    g->colls = calloc(s->rounds ? s->rounds : 1, sizeof *g->colls);
    uint64_t *pos = malloc((n + 1) * sizeof *pos);
    uint32_t kname = 0, cname = 0;
    if (!g->source || !g->strings || !g->kind || !g->flags || !g->proc || !g->name || !g->dur || !g->obs_start ||
        !g->obs_end || !g->release || !g->corr || !g->iter || !g->coll || !g->in_off || !g->out_off || !g->in_src ||
        !g->in_delay || !g->in_class || !g->out_dst || !g->procs || !g->iters || !g->colls || !pos ||
        lsim_strtab_intern(g->strings, "phold.kernel", 12, &kname) ||
        lsim_strtab_intern(g->strings, "phold.collective", 16, &cname))
        goto fail;
    for (size_t l = 0; l < W; l++) g->procs[l] = (lsim_proc){1, (int64_t)gpu, (int64_t)l, 0};
    rng r = {mix64(o->seed ^ mix64(0xa11ce000ull + gpu))};
    size_t left = s->rounds, round = 0, ne = 0;
    for (size_t v = 0; v < n; v++) {
        size_t lane = v % W;
        int is_coll = left && runif(&r) * (double)(n - v) < (double)left;
        g->kind[v] = LSIM_N_KERNEL;
        g->proc[v] = (uint32_t)lane;
        g->procs[lane].nnodes++;
        g->obs_start[v] = g->obs_end[v] = LSIM_OBS_NONE;
        g->release[v] = v < W ? 0 : INT64_MIN;
        g->corr[v] = -1;
        g->iter[v] = -1;
        g->coll[v] = -1;
        g->in_off[v] = ne;
        if (v >= W) { /* the previous node on this lane */
            g->in_src[ne] = (uint32_t)(v - W);
            g->in_delay[ne] = 0;
            g->in_class[ne++] = LSIM_E_STREAM;
        }
        if (is_coll) {
            uint32_t k = (uint32_t)round++;
            left--;
            size_t at = (size_t)k * o->ngpus + gpu;
            uint32_t grp = s->group_of[at];
            char pg[48];
            if (s->is_random[k]) snprintf(pg, sizeof pg, "phold:r%u.%u", k, grp);
            else snprintf(pg, sizeof pg, "phold:b%u", grp);
            lsim_coll_info *c = &g->colls[k];
            c->kind = LSIM_COLL_ALLREDUCE;
            c->from_metadata = 1;
            c->group_size = (int32_t)s->size_of[at];
            c->in_nelems = c->out_nelems = 1 << 18;
            c->dtype_bytes = 4;
            c->bytes = 1 << 20;
            c->pg_ranks = UINT32_MAX;
            c->seq = s->is_random[k] ? 0 : (int64_t)s->local_seq[k];
            if (lsim_strtab_intern(g->strings, pg, strlen(pg), &c->pg_name)) goto fail;
            g->flags[v] = LSIM_NF_COLL;
            g->name[v] = cname;
            g->coll[v] = (int32_t)k;
            g->dur[v] = transfer_of(o, s, k, grp);
            /* a join: it waits for the last node of every other lane */
            for (size_t d = 1; d < W && d <= v; d++) {
                g->in_src[ne] = (uint32_t)(v - d);
                g->in_delay[ne] = 0;
                g->in_class[ne++] = LSIM_E_EVENT;
            }
        } else {
            g->flags[v] = 0;
            g->name[v] = kname;
            double u = runif(&r);
            g->dur[v] = 1 + (lsim_ns)(-log(1.0 - u) * (double)o->mean);
            if (v > 2 * W && runif(&r) < 0.25) { /* a random dependency on a recent node */
                size_t back = W + 1 + (size_t)rbelow(&r, 32);
                if (back <= v) {
                    g->in_src[ne] = (uint32_t)(v - back);
                    g->in_delay[ne] = (lsim_ns)rbelow(&r, 1000);
                    g->in_class[ne++] = LSIM_E_EVENT;
                }
            }
        }
    }
    g->in_off[n] = ne;
    g->nedges = ne;
    for (size_t k = 0; k < ne; k++) {
        g->out_off[g->in_src[k] + 1]++;
        g->edges_by_class[g->in_class[k] & 0x7fu]++;
    }
    for (size_t v = 0; v < n; v++) g->out_off[v + 1] += g->out_off[v];
    memcpy(pos, g->out_off, (n + 1) * sizeof *pos);
    for (size_t v = 0; v < n; v++) /* targets ascending per source */
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) g->out_dst[pos[g->in_src[k]]++] = (uint32_t)v;
    g->releases = W < n ? W : n;
    g->t0 = 0;
    free(pos);
    *out = g;
    return 0;
fail:
    free(pos);
    lsim_graph_free(g);
    return -1;
}

/* ------------------------------------------------------------ helpers */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what, const lsim_err *err)
{
    fprintf(stderr, "bench_phold: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static uint64_t gpu_hash(const lsim_engine *e, size_t n, uint32_t gpu)
{
    const lsim_ns *S = lsim_engine_start(e), *E = lsim_engine_end(e);
    uint64_t h = 0xcbf29ce484222325ull ^ gpu;
    for (size_t v = 0; v < n; v++) h = mix64(h ^ (uint64_t)S[v]) ^ mix64((uint64_t)E[v] + v);
    return mix64(h + 0x9e3779b97f4a7c15ull * (gpu + 1));
}

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

static int parse_args(int argc, char **argv, opts *o)
{
    *o = (opts){64, 20000, 0.05, 8, 1.0, 10000, -1, -1, 5000, 2, 1, 3, -1, 0, LSIM_PDES_READY, NULL, ""};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (!strcmp(a, "--gpus") && v) o->ngpus = (size_t)strtoull(v, NULL, 10);
        else if (!strcmp(a, "--events") && v) o->events = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--coll-frac") && v) o->coll_frac = atof(v);
        else if (!strcmp(a, "--group") && v) o->group = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--cross") && v) o->cross = atof(v);
        else if (!strcmp(a, "--lookahead-ns") && v) o->lookahead = strtoll(v, NULL, 10);
        else if (!strcmp(a, "--windows") && v) {
            if (lsim_pdes_windows_parse(v, &o->windows)) return -1;
        }
        else if (!strcmp(a, "--local-lat-ns") && v) o->local_lat = strtoll(v, NULL, 10);
        else if (!strcmp(a, "--coll-extra-ns") && v) o->coll_extra = strtoll(v, NULL, 10);
        else if (!strcmp(a, "--mean-ns") && v) o->mean = strtoll(v, NULL, 10);
        else if (!strcmp(a, "--lanes") && v) o->lanes = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--seed") && v) o->seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--runs") && v) o->runs = atoi(v);
        else if (!strcmp(a, "--expect-hash") && v) o->expect = v;
        else if (!strcmp(a, "--label") && v) o->label = v;
        else {
            takes = 0;
            if (!strcmp(a, "--serial")) o->serial = 1;
            else if (!strcmp(a, "--no-serial")) o->serial = 0;
            else if (!strcmp(a, "--verify")) o->verify = 1;
            else return -1;
        }
        i += takes;
    }
    if (o->local_lat < 0) o->local_lat = o->lookahead;
    if (o->coll_extra < 0) o->coll_extra = o->lookahead;
    if (o->ngpus < 2 || o->ngpus > (1u << 24) || o->events < 1 || o->coll_frac < 0 || o->coll_frac > 1 ||
        o->group < 2 || o->cross < 0 || o->cross > 1 || o->lookahead < 1 || o->local_lat < 1 || o->mean < 1 ||
        o->lanes < 1 || o->lanes > 64 || o->runs < 1 || o->runs > 50)
        return -1;
    return 0;
}

/* ------------------------------------------------------------ main */

typedef struct runres {
    double wall, mpi_mean, mpi_max, ar_mean, ag_mean;
    lsim_pdes_stats st;
} runres;

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    opts o;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            if (me == 0) usage(stdout);
            MPI_Finalize();
            return 0;
        }
    if (parse_args(argc, argv, &o)) {
        if (me == 0) usage(stderr);
        MPI_Finalize();
        return 2;
    }
    int do_serial = o.serial < 0 ? np == 1 : (o.serial && np == 1);
    lsim_err err = {0};
    double t0 = lsim_now_s();
    sched sc;
    if (sched_make(&o, &sc)) die("out of memory for the collective schedule", NULL);
    /* this rank's block of GPUs */
    size_t first = 0, nloc = 0;
    lsim_map_block(o.ngpus, np, me, &first, &nloc);
    lsim_graph **g = calloc(nloc ? nloc : 1, sizeof *g);
    uint32_t *gid = malloc((nloc ? nloc : 1) * sizeof *gid);
    if (!g || !gid) die("out of memory", NULL);
    uint64_t local_nodes = 0, local_edges = 0;
    for (size_t i = 0; i < nloc; i++) {
        gid[i] = (uint32_t)(first + i);
        if (make_graph(&o, &sc, gid[i], &g[i])) die("out of memory generating the graphs", NULL);
        local_nodes += g[i]->n;
        local_edges += g[i]->nedges;
    }
    double t_build = lsim_now_s() - t0;
    /* match the job from the exchanged collective lists (run_mpi.h) */
    t0 = lsim_now_s();
    lsim_job *job = NULL;
    if (lsim_mpi_job_match(MPI_COMM_WORLD, g, gid, nloc, o.ngpus, &job, NULL, &err)) die("match", &err);
    double t_match = lsim_now_s() - t0;
    /* the cross-rank share of instances and participations (linear mapping) */
    uint64_t xinst = 0, arrivals = 0, xarrivals = 0;
    /* each rank holds the instances its GPUs take part in (a distributed
     * match): counted by the rank of the first participant, then summed */
    for (size_t ki = 0; ki < job->ninst; ki++) {
        uint64_t p0 = job->part_off[ki], p1 = job->part_off[ki + 1];
        int crosses = 0;
        int r0 = lsim_map_block_owner(o.ngpus, np, job->part_gpu[p0]);
        if (r0 != me) continue;
        for (uint64_t p = p0 + 1; p < p1 && !crosses; p++)
            crosses = lsim_map_block_owner(o.ngpus, np, job->part_gpu[p]) != r0;
        arrivals += p1 - p0;
        if (crosses) {
            xinst++;
            xarrivals += p1 - p0;
        }
    }
    lsim_engine **e = calloc(nloc ? nloc : 1, sizeof *e);
    lsim_ns **waits = calloc(nloc ? nloc : 1, sizeof *waits);
    if (!e || !waits) die("out of memory", NULL);
    for (size_t i = 0; i < nloc; i++) {
        if (lsim_engine_new(g[i], &e[i], &err)) die("engine", &err);
        if (!(waits[i] = malloc(g[i]->n * sizeof **waits))) die("out of memory", NULL);
    }
    uint64_t total_nodes = 0, total_edges = 0;
    MPI_Allreduce(&local_nodes, &total_nodes, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&local_edges, &total_edges, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    {
        uint64_t c[3] = {xinst, arrivals, xarrivals}, all[3];
        MPI_Allreduce(c, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        xinst = all[0], arrivals = all[1], xarrivals = all[2];
    }

    int bad = 0;
    uint64_t serial_hash = 0, pdes_hash = 0;
    char modes[2][8] = {"serial", "pdes"};
    lsim_pdes_opts popts = {0, o.windows, 0};
    for (int mode = do_serial ? 0 : 1; mode < 2; mode++) {
        runres *rs = calloc((size_t)o.runs, sizeof *rs);
        double *walls = malloc((size_t)o.runs * sizeof *walls);
        if (!rs || !walls) die("out of memory", NULL);
        for (int run = 0; run < o.runs; run++) {
            MPI_Barrier(MPI_COMM_WORLD);
            g_t_allreduce = g_t_allgather = 0;
            g_timing = 1;
            double a = lsim_now_s();
            if (mode == 0) {
                job->graphs = g;
                if (lsim_job_run(job, e, waits, &err)) die("serial run", &err);
            } else if (lsim_pdes_run(MPI_COMM_WORLD, job, gid, e, nloc, waits, &popts, &rs[run].st, &err)) {
                die("parallel run", &err);
            }
            double mine_s = lsim_now_s() - a;
            g_timing = 0;
            double in[4] = {mine_s, g_t_allreduce + g_t_allgather, g_t_allreduce, g_t_allgather}, mx[4], sm[4];
            MPI_Allreduce(in, mx, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            MPI_Allreduce(in, sm, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            rs[run].wall = mx[0];
            rs[run].mpi_max = mx[1];
            rs[run].mpi_mean = sm[1] / np;
            rs[run].ar_mean = sm[2] / np;
            rs[run].ag_mean = sm[3] / np;
            walls[run] = mx[0];
        }
        qsort(walls, (size_t)o.runs, sizeof *walls, cmp_d);
        int med = 0;
        for (int run = 0; run < o.runs; run++)
            if (rs[run].wall == walls[o.runs / 2]) med = run;
        runres *m = &rs[med];
        /* the hash of every node's start and end, over all GPUs */
        uint64_t h = 0, hall = 0;
        for (size_t i = 0; i < nloc; i++) h += gpu_hash(e[i], g[i]->n, gid[i]);
        MPI_Allreduce(&h, &hall, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (mode == 0) serial_hash = hall;
        else pdes_hash = hall;
        lsim_ns my_end = INT64_MIN, job_end = 0;
        for (size_t i = 0; i < nloc; i++)
            for (size_t v = 0; v < g[i]->n; v++)
                if (lsim_engine_end(e[i])[v] > my_end) my_end = lsim_engine_end(e[i])[v];
        MPI_Allreduce(&my_end, &job_end, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
        double rss = peak_rss_mb(), rss_max = 0;
        MPI_Allreduce(&rss, &rss_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (me == 0) {
            lsim_ns L = mode == 1 ? m->st.lookahead : o.lookahead;
            printf("BENCH phold mode=%s gpus=%zu events=%u nodes=%llu edges=%llu ranks=%d coll_frac=%g group=%u cross=%g "
                   "lookahead_ns=%lld local_lat_ns=%lld mean_ns=%lld lanes=%u seed=%llu%s%s build_s=%.6f match_s=%.6f "
                   "wall_s=%.6f node_events_per_s_per_rank=%.0f windows=%llu messages=%llu allreduces=%llu "
                   "allgathers=%llu instances=%zu cross_instances=%llu arrivals=%llu cross_arrivals=%llu mpi_s=%.6f "
                   "mpi_max_s=%.6f mpi_allreduce_s=%.6f mpi_allgather_s=%.6f peak_rss_mb=%.1f sim_end_ns=%lld "
                   "runs=%d result_hash=%016llx windows_mode=%s\n",
                   modes[mode], o.ngpus, o.events, (unsigned long long)total_nodes, (unsigned long long)total_edges, np,
                   o.coll_frac, o.group, o.cross, (long long)L, (long long)o.local_lat, (long long)o.mean, o.lanes,
                   (unsigned long long)o.seed, *o.label ? " " : "", o.label, t_build, t_match, m->wall,
                   (double)total_nodes / m->wall / np, (unsigned long long)m->st.windows,
                   (unsigned long long)m->st.messages, (unsigned long long)m->st.allreduces,
                   (unsigned long long)m->st.allgathers, (size_t)job->ninst_job, (unsigned long long)xinst,
                   (unsigned long long)arrivals, (unsigned long long)xarrivals, m->mpi_mean, m->mpi_max, m->ar_mean,
                   m->ag_mean, rss_max, (long long)job_end, o.runs, (unsigned long long)hall,
                   lsim_pdes_windows_name(o.windows));
            fflush(stdout);
        }
        free(rs);
        free(walls);
    }
    if (do_serial && serial_hash != pdes_hash) {
        if (me == 0)
            fprintf(stderr, "bench_phold: *** RESULT MISMATCH ***: serial hash %016llx, parallel hash %016llx\n",
                    (unsigned long long)serial_hash, (unsigned long long)pdes_hash);
        bad = 1;
    }
    if (o.expect && strtoull(o.expect, NULL, 16) != pdes_hash) {
        if (me == 0)
            fprintf(stderr, "bench_phold: *** RESULT MISMATCH ***: K = %d gives hash %016llx, expected %s\n", np,
                    (unsigned long long)pdes_hash, o.expect);
        bad = 1;
    }
    if (o.verify && np > 1) {
        /* rank 0 rebuilds the whole job and runs it serially */
        uint64_t ref = 0;
        if (me == 0) {
            lsim_graph **ga = calloc(o.ngpus, sizeof *ga);
            lsim_engine **ea = calloc(o.ngpus, sizeof *ea);
            lsim_job *ja = NULL;
            if (!ga || !ea) die("out of memory", NULL);
            for (size_t i = 0; i < o.ngpus; i++)
                if (make_graph(&o, &sc, (uint32_t)i, &ga[i])) die("out of memory generating the graphs", NULL);
            if (lsim_job_match(ga, o.ngpus, &ja, &err)) die("serial match", &err);
            for (size_t i = 0; i < o.ngpus; i++)
                if (lsim_engine_new(ga[i], &ea[i], &err)) die("engine", &err);
            if (lsim_job_run(ja, ea, NULL, &err)) die("serial run", &err);
            for (size_t i = 0; i < o.ngpus; i++) ref += gpu_hash(ea[i], ga[i]->n, (uint32_t)i);
            for (size_t i = 0; i < o.ngpus; i++) {
                lsim_engine_free(ea[i]);
                lsim_graph_free(ga[i]);
            }
            lsim_job_free(ja);
            free(ga);
            free(ea);
            if (ref != pdes_hash) {
                fprintf(stderr, "bench_phold: *** RESULT MISMATCH ***: K = %d gives hash %016llx, serial %016llx\n", np,
                        (unsigned long long)pdes_hash, (unsigned long long)ref);
                bad = 1;
            } else {
                printf("verify: K = %d matches the serial run (hash %016llx)\n", np, (unsigned long long)ref);
            }
        }
    }
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (size_t i = 0; i < nloc; i++) {
        lsim_engine_free(e[i]);
        free(waits[i]);
        lsim_graph_free(g[i]);
    }
    lsim_job_free(job);
    sched_free(&sc);
    free(e);
    free(waits);
    free(g);
    free(gid);
    MPI_Finalize();
    return anybad ? 1 : 0;
}
