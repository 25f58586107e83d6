/* build, sim, info, and report from a result archive (see cli.h).
 *
 * Under mpirun (detected from the launcher's environment) build and sim are
 * MPI programs: the GPUs are split into contiguous blocks over the ranks,
 * each rank reads, builds or simulates only its own GPUs, and the HDF5 files
 * are written and read collectively (io/h5store.c). Rank 0 then prints the
 * report from the result file it helped write, so the output of `sim` is the
 * same for any number of ranks. Without mpirun everything is serial and MPI
 * is not initialised. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include <mpi.h>

#include "cli.h"
#include "lumosim/output.h"
#include "lumosim/input.h"
#include "lumosim/memlimit.h"
#include "lumosim/pdes.h"
#include "lumosim/whatif.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The command line as one string (provenance): "lumosim SUB ARGS...".
 * Caller frees. */
static char *join_argv(const char *sub, int argc, char **argv)
{
    size_t len = 16 + strlen(sub);
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    char *s = malloc(len);
    if (!s) return NULL;
    strcpy(s, "lumosim ");
    strcat(s, sub);
    for (int i = 0; i < argc; i++) {
        strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

/* Launched by mpirun/srun? (Open MPI, PMIx, Slurm PMI) */
static int under_mpi_launcher(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE");
}

typedef struct mpi_ctx {
    int on, rank, size;
} mpi_ctx;

static int mpi_begin(mpi_ctx *m)
{
    memset(m, 0, sizeof *m);
    m->size = 1;
    if (!under_mpi_launcher()) return 0;
    int inited = 0;
    MPI_Initialized(&inited);
    /* Open MPI's lockedfile shared-file-pointer component probes every file
     * we open by creating OUTPUT.locktest.RANK beside it; a rank killed
     * during that probe leaves the file behind where no other rank knows
     * its name. We never use shared file pointers, so leave the component
     * out (unless the user chose otherwise). Read by MPI_Init. */
    if (!inited) setenv("OMPI_MCA_sharedfp", "^lockedfile", 0);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) return -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    m->on = m->size > 1;
    if (!m->on) MPI_Finalize(); /* a single rank works like no mpirun */
    return 0;
}

static void mpi_end(mpi_ctx *m)
{
    if (m->on) MPI_Finalize();
}

/* Collective: the worst status over the ranks (so all ranks stop together
 * before any collective write). */
static int agree(const mpi_ctx *m, int rc)
{
    if (!m->on) return rc;
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return worst;
}

/* Block distribution of n items over the ranks. */
static void block(const mpi_ctx *m, size_t n, size_t *first, size_t *count)
{
    size_t q = n / (size_t)m->size, r = n % (size_t)m->size, k = (size_t)m->rank;
    *first = k * q + (k < r ? k : r);
    *count = q + (k < r ? 1 : 0);
}

/* The parallel layout of a job, for the "groups" mapping: the tensor- and
 * data-parallel widths of GPU 0's collectives (src/whatif's identification:
 * canonical group names of synthesized jobs, rank lists of traces), GPUs
 * numbered as Megatron does (rank = tp + TP * (dp + DP * pp)). 1 for a width
 * that is not seen or does not divide the GPU count. Rank 0 reads GPU 0's
 * graph alone and tells the others. Collective over MPI_COMM_WORLD. */
static int job_layout(const mpi_ctx *m, const char *job, size_t total, size_t *tp, size_t *dp, lsim_err *err)
{
    long long w[2] = {1, 1};
    int rc = 0;
    if (m->rank == 0 && total > 1) {
        lsim_graph **gs = NULL;
        size_t ng = 0;
        lsim_wi_ident id;
        rc = lsim_store_read_graphs(job, 0, 1, &gs, &ng, err);
        if (!rc && ng) rc = lsim_wi_identify(gs[0], 0, &id, err);
        if (!rc && ng) {
            if (id.tp_size > 1 && total % (size_t)id.tp_size == 0) w[0] = id.tp_size;
            if (id.dp_size > 1 && total % ((size_t)w[0] * (size_t)id.dp_size) == 0) w[1] = id.dp_size;
        }
        lsim_store_free_graphs(gs, ng);
    }
    rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, err);
    MPI_Bcast(w, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    *tp = (size_t)w[0];
    *dp = (size_t)w[1];
    return rc;
}

/* The GPUs this rank simulates, ascending (*out: caller frees), under
 * mapping "groups" (the default), "linear" (contiguous blocks),
 * "round-robin" (GPU g on MPI rank g mod K) or "file:PATH" (lines "GPU
 * RANK", '#' comments; every GPU exactly once). "groups" keeps the most
 * frequent collectives on one rank: with at least as many data-parallel
 * replicas as ranks, whole replicas (every TP group and pipeline stage of
 * one replica: all its TP all-reduces and send/recv pairs) in contiguous
 * blocks of replicas, so only the gradient all-reduces cross ranks; else
 * contiguous blocks of whole TP groups; else linear. *how names what was
 * applied (provenance). Every rank computes the whole mapping, so a bad file
 * fails on all of them alike. Local. */
static int map_gpus(const mpi_ctx *m, const char *mapping, size_t total, size_t tp, size_t dp, const char **how,
                    size_t **out, size_t *nout, lsim_err *err)
{
    int rc = 0;
    size_t n = 0, first = 0, count = 0;
    int32_t *owner = NULL;
    FILE *f = NULL;
    size_t *g = malloc((total ? total : 1) * sizeof *g);
    *out = NULL;
    *nout = 0;
    if (!g) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    *how = mapping;
    if (!strcmp(mapping, "groups") && dp > 1 && dp >= (size_t)m->size) {
        /* replica of GPU i: (i / tp) mod dp */
        block(m, dp, &first, &count);
        for (size_t i = 0; i < total; i++) {
            size_t r = (i / tp) % dp;
            if (r >= first && r < first + count) g[n++] = i;
        }
        *how = "groups:replicas";
    } else if (!strcmp(mapping, "groups") && tp > 1 && total / tp >= (size_t)m->size) {
        block(m, total / tp, &first, &count);
        for (size_t i = first * tp; i < (first + count) * tp; i++) g[n++] = i;
        *how = "groups:tp";
    } else if (!strcmp(mapping, "linear") || !strcmp(mapping, "groups")) {
        block(m, total, &first, &count);
        for (size_t i = 0; i < count; i++) g[n++] = first + i;
        if (!strcmp(mapping, "groups")) *how = "groups:linear";
    } else if (!strcmp(mapping, "round-robin")) {
        for (size_t i = (size_t)m->rank; i < total; i += (size_t)m->size) g[n++] = i;
    } else if (!strncmp(mapping, "file:", 5) && mapping[5]) {
        const char *path = mapping + 5;
        char line[256];
        long lineno = 0;
        owner = malloc((total ? total : 1) * sizeof *owner);
        if (!owner) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
            goto cleanup;
        }
        for (size_t i = 0; i < total; i++) owner[i] = -1;
        struct stat mst;
        if (stat(path, &mst) != 0) {
            rc = lsim_err_set(err, LSIM_EIO, "%s: cannot read the mapping file: %s", path, strerror(errno));
            goto cleanup;
        }
        /* a FIFO would block every rank in the open (input.h) */
        if ((rc = lsim_input_fopen(path, &f, err))) goto cleanup;
        while (fgets(line, sizeof line, f)) {
            lineno++;
            if (!strchr(line, '\n') && !feof(f)) {
                rc = lsim_err_set(err, LSIM_EARG, "%s:%ld: line too long", path, lineno);
                goto cleanup;
            }
            char *hash = strchr(line, '#');
            if (hash) *hash = '\0';
            long long gpu = -1, rank = -1;
            char extra[2];
            int k = sscanf(line, "%lld %lld %1s", &gpu, &rank, extra);
            if (k == EOF) continue; /* blank or comment */
            if (k != 2) {
                rc = lsim_err_set(err, LSIM_EARG, "%s:%ld: expected \"GPU RANK\" (two integers)", path, lineno);
                goto cleanup;
            }
            if (gpu < 0 || (unsigned long long)gpu >= total) {
                rc = lsim_err_set(err, LSIM_EARG, "%s:%ld: GPU %lld does not exist (the store holds GPUs 0..%zu)", path,
                                  lineno, gpu, total ? total - 1 : 0);
                goto cleanup;
            }
            if (rank < 0 || rank >= m->size) {
                rc = lsim_err_set(err, LSIM_EARG, "%s:%ld: MPI rank %lld does not exist (the job has ranks 0..%d)",
                                  path, lineno, rank, m->size - 1);
                goto cleanup;
            }
            if (owner[gpu] >= 0) {
                rc = lsim_err_set(err, LSIM_EARG, "%s:%ld: GPU %lld is mapped twice", path, lineno, gpu);
                goto cleanup;
            }
            owner[gpu] = (int32_t)rank;
        }
        if (ferror(f)) {
            rc = lsim_err_set(err, LSIM_EIO, "%s: read error", path);
            goto cleanup;
        }
        for (size_t i = 0; i < total; i++) {
            if (owner[i] < 0) {
                rc = lsim_err_set(err, LSIM_EARG, "%s: GPU %zu is not mapped to any MPI rank", path, i);
                goto cleanup;
            }
            if (owner[i] == m->rank) g[n++] = i;
        }
    } else {
        rc = lsim_err_set(err, LSIM_EARG, "unknown --mapping '%s' (groups, linear, round-robin or file:PATH)", mapping);
        goto cleanup;
    }
    *out = g;
    *nout = n;
    g = NULL;
cleanup:
    if (f) fclose(f);
    free(owner);
    free(g);
    return rc;
}

int lsim_cli_build(int argc, char **argv)
{
    lsim_cli_build_args ba;
    lsim_cli_opts o;
    const char *out = NULL;
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    int nargs = 0, status = 0;
    lsim_err err = {0};
    lsim_cli_run run = {0};
    char *cmd = join_argv("build", argc, argv);
    mpi_ctx m = {0, 0, 1};
    if (!args || !cmd) {
        fprintf(stderr, "lumosim: error: out of memory\n");
        free(args);
        free(cmd);
        return 1;
    }
    int p = lsim_cli_parse_build(argc, argv, &ba, args);
    if (p <= 0) {
        status = p < 0 ? 2 : 0;
        goto done;
    }
    o = ba.o;
    out = ba.out;
    nargs = ba.nargs;
    lsim_io_file bouts[1] = {{out, "-o", 1, LSIM_OUT_STORE}};
    if (lsim_cli_check_io(args, nargs, bouts, 1, &err)) {
        fprintf(stderr, "lumosim: error: %s\n", err.msg);
        status = 1;
        goto done;
    }
    o.store_out = out;
    if (mpi_begin(&m)) {
        fprintf(stderr, "lumosim: error: MPI_Init failed\n");
        status = 1;
        goto done;
    }
    {
        int rc = 0;
        if (!m.on) {
            rc = lsim_cli_load(&o, args, nargs, &run, &err);
            if (!rc) {
                lsim_store_write_opts wo = {cmd, (const char *const *)run.paths, 1};
                rc = lsim_store_write_graphs_ex(out, run.graphs, run.n, &wo, &err);
            }
        } else {
            /* every rank expands the same inputs, then builds its contiguous
             * block of the files, so GPU order is the serial order */
            lsim_cli_run files = {0};
            rc = lsim_cli_expand(args, nargs, &files, &err);
            size_t first = 0, count = 0;
            if (!rc) block(&m, files.n, &first, &count);
            if (!rc && count) rc = lsim_cli_load(&o, files.paths + first, (int)count, &run, &err);
            lsim_cli_run_free(&files);
            rc = agree(&m, rc);
            if (!rc) {
                lsim_store_write_opts wo = {cmd, (const char *const *)run.paths, 1};
                rc = lsim_store_write_graphs_mpi_ex(out, MPI_COMM_WORLD, run.graphs, run.n, &wo, &err);
            } else if (!err.msg[0]) {
                lsim_err_set(&err, LSIM_EINTERNAL, "another MPI rank failed");
            }
        }
        if (rc) {
            if (m.rank == 0 || err.msg[0]) fprintf(stderr, "lumosim: error: %s\n", err.msg);
            status = 1;
        }
        lsim_cli_outcome_known();
    }
    mpi_end(&m);
done:
    lsim_cli_run_free(&run);
    free(args);
    free(cmd);
    return status;
}

static int print_report(const lsim_cli_opts *o, const lsim_replay_item *items, size_t n, lsim_err *err)
{
    int rc = 0;
    if (o->json) rc = lsim_report_json(stdout, items, n, err);
    else lsim_report_table(stdout, items, n);
    if (!rc && fflush(stdout) != 0) rc = lsim_err_set(err, LSIM_EIO, "cannot write the report: %s", strerror(errno));
    return rc;
}

/* Under mpirun: each rank formats its own GPUs' report sections (table
 * text or JSON objects, lsim_report_*_item), rank 0 gathers them and prints
 * the report in GPU order, byte for byte what the serial run prints. Why:
 * reading every GPU's graphs and results back on rank 0 took longer than the
 * simulation at K = 2 and needed memory for the whole job on one rank.
 * Collective over MPI_COMM_WORLD; rc on every rank (a print error: rank 0's). */
static int report_parallel(const lsim_cli_opts *o, const lsim_cli_run *run, const size_t *gpus, size_t total,
                           lsim_err *err)
{
    int me = 0, np = 1, rc = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    size_t n = run->n;
    char **txt = calloc(n ? n : 1, sizeof *txt), *mine = NULL, *all = NULL, **objs = NULL;
    uint64_t *hdr = malloc((2 * n + 1) * sizeof *hdr), *allhdr = NULL;
    int *cnt = NULL, *dsp = NULL, *bcnt = NULL, *bdsp = NULL;
    size_t bytes = 0;
    if (!txt || !hdr) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
    for (size_t i = 0; !rc && i < n; i++) {
        txt[i] = o->json ? lsim_report_json_item(&run->items[i], gpus[i]) : lsim_report_table_item(&run->items[i], gpus[i]);
        if (!txt[i]) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
        else bytes += strlen(txt[i]) + 1;
    }
    if (!rc && bytes > INT_MAX) rc = lsim_err_set(err, LSIM_EARG, "the report of this rank's GPUs exceeds 2 GB");
    if (!rc && !(mine = malloc(bytes ? bytes : 1))) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
    for (size_t i = 0, at = 0; !rc && i < n; i++) {
        size_t len = strlen(txt[i]) + 1;
        memcpy(mine + at, txt[i], len);
        at += len;
        hdr[2 * i] = gpus[i];
        hdr[2 * i + 1] = len;
    }
    if (me == 0) {
        cnt = malloc((size_t)np * 2 * sizeof *cnt);
        dsp = malloc((size_t)np * sizeof *dsp);
        bcnt = malloc((size_t)np * sizeof *bcnt);
        bdsp = malloc((size_t)np * sizeof *bdsp);
        objs = calloc(total ? total : 1, sizeof *objs);
        if (!cnt || !dsp || !bcnt || !bdsp || !objs) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
    }
    if ((rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, err))) goto cleanup;
    /* the job line: earliest starts, latest ends, any observed, latency */
    lsim_report_job_part p;
    lsim_report_job_part_of(run->items, n, &p);
    int64_t mn[2] = {p.as, p.ps}, mx[4] = {p.ae, p.pe, p.any_obs, n && run->items[0].g->latency == LSIM_LAT_OBSERVED},
            gmn[2], gmx[4];
    MPI_Reduce(mn, gmn, 2, MPI_INT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(mx, gmx, 4, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    int c2[2] = {(int)(2 * n), (int)bytes};
    MPI_Gather(c2, 2, MPI_INT, cnt, 2, MPI_INT, 0, MPI_COMM_WORLD);
    long long hsum = 0, bsum = 0;
    if (me == 0) {
        for (int r = 0; r < np; r++) {
            dsp[r] = (int)hsum;
            bdsp[r] = (int)bsum;
            hsum += cnt[2 * r];
            bsum += cnt[2 * r + 1];
            bcnt[r] = cnt[2 * r + 1];
            cnt[r] = cnt[2 * r]; /* compacted in place: r <= 2 r */
        }
        if (bsum > INT_MAX) rc = lsim_err_set(err, LSIM_EARG, "the report exceeds 2 GB: use -o and lumosim collect");
        else if (!(allhdr = malloc((size_t)(hsum ? hsum : 1) * sizeof *allhdr)) || !(all = malloc((size_t)(bsum ? bsum : 1))))
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
    }
    if ((rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, err))) goto cleanup;
    MPI_Gatherv(hdr, (int)(2 * n), MPI_UINT64_T, allhdr, cnt, dsp, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Gatherv(mine, (int)bytes, MPI_CHAR, all, bcnt, bdsp, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (me == 0) {
        /* each GPU's text, in GPU order (every GPU exactly once) */
        long long at = 0;
        for (long long q = 0; q + 1 < hsum && !rc; q += 2) {
            uint64_t g = allhdr[q];
            if (g >= total || objs[g]) rc = lsim_err_set(err, LSIM_EINTERNAL, "report: GPU %llu twice", (unsigned long long)g);
            else objs[g] = all + at;
            at += (long long)allhdr[q + 1];
        }
        for (size_t g = 0; g < total && !rc; g++)
            if (!objs[g]) rc = lsim_err_set(err, LSIM_EINTERNAL, "report: GPU %zu missing", g);
        lsim_report_job_part jp = {gmn[0], gmx[0], gmn[1], gmx[1], (int)gmx[2], total};
        if (!rc && o->json) rc = lsim_report_json_assemble(stdout, (int)gmx[3], objs, total, &jp, err);
        else if (!rc) {
            lsim_report_table_head(stdout, (int)gmx[3]);
            for (size_t g = 0; g < total; g++) fputs(objs[g], stdout);
            lsim_report_table_tail(stdout, &jp);
        }
        if (!rc && fflush(stdout) != 0) rc = lsim_err_set(err, LSIM_EIO, "cannot write the report: %s", strerror(errno));
    }
cleanup:
    for (size_t i = 0; txt && i < n; i++) free(txt[i]);
    free(txt);
    free(hdr);
    free(mine);
    free(all);
    free(allhdr);
    free(objs);
    free(cnt);
    free(dsp);
    free(bcnt);
    free(bdsp);
    return rc;
}

/* Items for every GPU of a stored run (graphs embedded in the archive). */
static int items_of_run(const lsim_store_run *r, const char *path, lsim_replay_item **out, lsim_err *err)
{
    if (!r->graphs) return lsim_err_set(err, LSIM_EFORMAT, "%s: run %s holds no graphs to report on", path, r->name);
    lsim_replay_item *it = calloc(r->ngpus ? r->ngpus : 1, sizeof *it);
    if (!it) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->ngpus; i++) {
        const lsim_store_gpu_result *gr = &r->gpus[i];
        it[i] = (lsim_replay_item){r->graphs[i], &gr->report, gr->start, gr->end, gr->bind_start, gr->bind_end,
                                   gr->has_cp ? &gr->cp : NULL, gr->coupled, gr->clock_offset};
    }
    *out = it;
    return 0;
}

/* Under mpirun, the ranks of one job: this process holds GPUs gpus[0..run->n)
 * of `total`. Collective over MPI_COMM_WORLD. */
static int sim_parallel_job(const lsim_cli_opts *o, lsim_cli_run *run, const size_t *gpus, size_t total,
                            const lsim_pdes_opts *popts, lsim_err *err)
{
    int rc = 0, np = 1, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    lsim_job_entry *mine = NULL, *all = NULL;
    size_t nmine = 0;
    uint64_t p2p = 0;
    uint32_t *gid = malloc((run->n ? run->n : 1) * sizeof *gid);
    size_t *nodes = calloc(total ? total : 1, sizeof *nodes);
    int *cnt = malloc((size_t)np * sizeof *cnt), *dsp = malloc((size_t)np * sizeof *dsp);
    lsim_graph **gtab = calloc(total ? total : 1, sizeof *gtab);
    if (!gid || !nodes || !cnt || !dsp || !gtab) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < run->n; i++) {
        gid[i] = (uint32_t)gpus[i];
        nodes[gpus[i]] = run->graphs[i]->n;
        gtab[gpus[i]] = run->graphs[i];
    }
    if (!rc) rc = lsim_job_entries(run->graphs, gid, run->n, &mine, &nmine, &p2p, err);
    if ((rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, err))) goto cleanup;
    double t0 = now_s();
    /* every rank gets every GPU's collective list and matches the whole job */
    int mybytes = (int)(nmine * sizeof *mine);
    MPI_Allgather(&mybytes, 1, MPI_INT, cnt, 1, MPI_INT, MPI_COMM_WORLD);
    long long sum = 0;
    for (int r = 0; r < np; r++) {
        dsp[r] = (int)sum;
        sum += cnt[r];
    }
    all = malloc(sum ? (size_t)sum : 1);
    rc = all ? 0 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if ((rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, err))) goto cleanup;
    MPI_Allgatherv(mine, mybytes, MPI_BYTE, all, cnt, dsp, MPI_BYTE, MPI_COMM_WORLD);
    rc = lsim_job_from_entries(all, (size_t)sum / sizeof *all, total, NULL, NULL, nodes, &run->job, err);
    if (!rc) {
        run->job->graphs = gtab;
        run->job->uncoupled_p2p = p2p;
        lsim_job_align_clocks(run->job);
        run->engines = calloc(run->n ? run->n : 1, sizeof *run->engines);
        run->reps = calloc(run->n ? run->n : 1, sizeof *run->reps);
        run->cps = calloc(run->n ? run->n : 1, sizeof *run->cps);
        run->items = calloc(run->n ? run->n : 1, sizeof *run->items);
        if (!run->engines || !run->reps || !run->cps || !run->items)
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    }
    if ((rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, err))) goto cleanup;
    double t1 = now_s();
    run->match_s = t1 - t0;
    rc = lsim_cli_engines(o, run, err);
    if ((rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, err))) goto cleanup;
    run->setup_s = now_s() - t1;
    t1 = now_s();
    lsim_pdes_stats st;
    rc = lsim_pdes_run(MPI_COMM_WORLD, run->job, gid, run->engines, run->n, NULL, popts, &st, err);
    double t2 = now_s();
    run->simulate_s = t2 - t1;
    if (!rc && o->stats) {
        /* the time each rank spent in the round-end exchanges (waiting for
         * the slowest included): with balanced work, what K = 2 loses */
        double *sy = me == 0 ? malloc((size_t)np * sizeof *sy) : NULL;
        MPI_Gather(&st.sync_s, 1, MPI_DOUBLE, sy, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (me == 0) {
            fprintf(stderr,
                    "lumosim: stats: parallel engine on %d ranks: lookahead %lld ns, %llu windows, %llu arrival "
                    "messages, %llu allreduces, %llu allgathers; seconds in round-end exchanges per rank:",
                    np, (long long)st.lookahead, (unsigned long long)st.windows, (unsigned long long)st.messages,
                    (unsigned long long)st.allreduces, (unsigned long long)st.allgathers);
            for (int r = 0; sy && r < np; r++) fprintf(stderr, " %.3f", sy[r]);
            fputc('\n', stderr);
        }
        free(sy);
    }
    for (size_t i = 0; !rc && i < run->n; i++) rc = lsim_cli_finish_gpu(o, run, i, gid[i], err);
    run->metrics_s = now_s() - t2;
cleanup:
    if (run->job) run->job->graphs = NULL;
    free(gtab);
    free(mine);
    free(all);
    free(gid);
    free(nodes);
    free(cnt);
    free(dsp);
    return rc;
}

/* An existing result file that already holds the run, or is no result
 * file, is refused before the store is read: the write would refuse it only
 * after the whole simulation (a minute at 4,096 GPUs). Local; every rank
 * reads the same file and reaches the same answer. */
static int check_run_free(const char *out, const char *run_name, lsim_err *err)
{
    struct stat st;
    if (stat(out, &st) != 0) return 0;
    char **names = NULL;
    size_t n = 0;
    int rc = lsim_store_list_runs(out, &names, &n, err);
    if (rc) {
        char why[LSIM_ERR_LEN];
        snprintf(why, sizeof why, "%s", err->msg);
        return lsim_err_set(err, rc, "%s (not overwritten: remove it or choose another -o)", why);
    }
    for (size_t i = 0; i < n; i++) {
        if (!rc && !strcmp(names[i], run_name))
            rc = lsim_err_set(err, LSIM_EARG, "%s: already holds a run named '%s' (choose another name with --run, "
                              "or --replace it)", out, run_name);
        free(names[i]);
    }
    free(names);
    return rc;
}

int lsim_cli_sim(int argc, char **argv)
{
    lsim_cli_sim_args sa;
    int p = lsim_cli_parse_sim(argc, argv, &sa);
    if (p <= 0) return p < 0 ? 2 : 0;
    lsim_cli_opts o = sa.o;
    const char *out = sa.out, *run_name = sa.run_name, *job = sa.job, *mapping = sa.mapping;
    int replace = sa.replace, status = 0;
    lsim_pdes_opts popts = {sa.lookahead, (lsim_pdes_windows)sa.windows, sa.bound_skew};
    size_t *gpus = NULL, ngpus_local = 0;
    char mapping_used[64 + 4096] = "serial"; /* provenance: the mapping as applied */
    lsim_err err = {0};
    lsim_cli_run run = {0};
    lsim_store_run *stored = NULL;
    lsim_replay_item *items = NULL;
    lsim_out *held = NULL; /* rank 0, with --trace-out: the archive written, not yet committed */
    char *cmd = join_argv("sim", argc, argv);
    mpi_ctx m = {0, 0, 1};
    if (!cmd) {
        fprintf(stderr, "lumosim: error: out of memory\n");
        return 1;
    }
    /* a result archive is about 1.6 x its graph store (memlimit.h) */
    struct stat jst;
    uint64_t need = out && stat(job, &jst) == 0 ? (uint64_t)jst.st_size * 2 : 0;
    char *sins[2] = {(char *)job, !strncmp(mapping, "file:", 5) ? (char *)mapping + 5 : NULL};
    lsim_io_file souts[2] = {{out, "-o", 1, LSIM_OUT_RESULTS}, {o.trace_out, "--trace-out", 1, LSIM_OUT_TRACE}};
    if (lsim_cli_check_io(sins, 2, souts, 2, &err) || lsim_disk_check(out, need, &err)) {
        fprintf(stderr, "lumosim: error: %s\n", err.msg);
        free(cmd);
        return 1;
    }
    if (mpi_begin(&m)) {
        fprintf(stderr, "lumosim: error: MPI_Init failed\n");
        free(cmd);
        return 1;
    }
    double t0 = now_s();
    int rc = 0;
    size_t gtotal = 0;
    lsim_store_kind kind = lsim_store_probe(job);
    /* not a regular file (a FIFO, a directory): say what it is (input.h) */
    if (kind == LSIM_STORE_NOT_HDF5 && lsim_input_check(job, 0, NULL, &err)) rc = err.code;
    else if (kind != LSIM_STORE_GRAPHS)
        rc = lsim_err_set(&err, LSIM_EFORMAT, "%s: %s", job,
                          kind == LSIM_STORE_RESULTS ? "is a result file, not a graph store (see lumosim report / info)"
                          : kind == LSIM_STORE_OTHER ? "is an HDF5 file but not a lumosim graph store"
                                                     : "not a graph store (missing, truncated, corrupt, or another format)");
    if (!rc && m.on && !out) rc = lsim_err_set(&err, LSIM_EARG, "under mpirun, sim needs -o RESULT.h5");
    if (!rc && out && !replace) rc = check_run_free(out, run_name, &err);
    if (!rc) {
        lsim_graph **gs = NULL;
        size_t ng = 0, total = 0;
        if (m.on) {
            size_t tp = 1, dp = 1;
            const char *how = mapping;
            rc = lsim_store_count_gpus(job, &total, &err);
            rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, &err);
            if (!rc && !strcmp(mapping, "groups")) rc = job_layout(&m, job, total, &tp, &dp, &err);
            if (!rc) rc = map_gpus(&m, mapping, total, tp, dp, &how, &gpus, &ngpus_local, &err);
            snprintf(mapping_used, sizeof mapping_used, "%s", how);
            gtotal = total;
            rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, &err);
            if (!rc) rc = lsim_store_read_graph_list_mpi(job, MPI_COMM_WORLD, gpus, ngpus_local, &gs, &ng, &err);
        } else {
            rc = lsim_store_read_graphs(job, 0, SIZE_MAX, &gs, &ng, &err);
        }
        if (!rc) {
            run.graphs = gs;
            run.n = ng;
            run.paths = calloc(ng ? ng : 1, sizeof *run.paths);
            for (size_t i = 0; run.paths && i < ng; i++) run.paths[i] = strdup(gs[i]->source ? gs[i]->source : job);
            if (!run.paths) rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
        } else {
            lsim_store_free_graphs(gs, ng);
        }
    }
    double tl = now_s(); /* loaded */
    if (!rc) rc = lsim_cli_check_ranks(&run, &err); /* a store of another lumosim, or edited */
    if (m.on) rc = lsim_mpi_agree(MPI_COMM_WORLD, rc, &err);
    int coupled = 0;
    if (!rc && m.on && !o.independent) {
        /* the ranks of one job are coupled through their collectives: the
         * parallel engine simulates them together */
        int job_like = 1, all = 0;
        for (size_t i = 0; i < run.n; i++)
            if (run.graphs[i]->world_size < 2 || run.graphs[i]->rank < 0 || run.graphs[i]->latency != LSIM_LAT_MODEL)
                job_like = 0;
        MPI_Allreduce(&job_like, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        coupled = all;
    }
    if (coupled) rc = sim_parallel_job(&o, &run, gpus, gtotal, &popts, &err);
    else if (!rc) rc = lsim_cli_simulate(&o, &run, &err);
    rc = m.on ? lsim_mpi_agree(MPI_COMM_WORLD, rc, &err) : rc;
    double t1 = now_s();
    /* provenance: wall time per phase (under mpirun the slowest rank's, so
     * every rank writes the same attribute) */
    const char *phases[] = {"load", "match", "setup", "simulate", "metrics"};
    double run_match_s = run.match_s, run_setup_s = run.setup_s, run_sim_s = run.simulate_s,
           run_metrics_s = run.metrics_s;
    double secs[] = {tl - t0, run_match_s, run_setup_s, run_sim_s, run_metrics_s};
    if (m.on) MPI_Allreduce(MPI_IN_PLACE, secs, 5, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    uint64_t local_nodes = 0;
    for (size_t i = 0; i < run.n; i++) local_nodes += run.graphs[i]->n;
    if (!rc && out) {
        /* The graphs to embed are the store's own when nothing changed them
         * after loading (no --drop-edges, no clock shift: synthesized jobs,
         * and traced ones whose clocks already agree): then the result file
         * copies the store's tables rather than encoding them again. */
        int same = !o.drop_mask && !o.zero_launch_latency;
        for (size_t i = 0; same && run.job && i < run.job->ngpus; i++)
            if (run.job->clock_offset[i]) same = 0;
        if (m.on) MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        /* with --trace-out the archive is committed last, once the trace
         * is written: a failed trace-out then leaves the archive as it was,
         * and the same command can simply be run again */
        lsim_store_run_info info = {cmd,  t1 - t0, phases, secs,           5, m.size, mapping_used, NULL, NULL,
                                    1,    replace, 1,      same ? job : NULL, o.trace_out ? &held : NULL};
        rc = m.on ? lsim_store_write_results_mapped_mpi(out, MPI_COMM_WORLD, run_name, run.items, gpus, run.n, &info,
                                                        &err)
                  : lsim_store_write_results_ex(out, run_name, run.items, run.n, &info, &err);
    }
    double t2 = now_s();
    int reported = 0;
    if (m.on && !rc && !o.trace_out) {
        rc = report_parallel(&o, &run, gpus, gtotal, &err);
        reported = 1;
    }
    if (m.on) {
        /* With --trace-out rank 0 reads every GPU's results and graphs back
         * from the archive: drop this rank's copy first, so that its peak
         * is the larger of the two, not their sum (4,096-GPU GPT-3 job at
         * K = 2: 7.0 GB held per rank, 9.7 GB read back). */
        free(gpus);
        gpus = NULL;
        lsim_cli_run_free(&run);
    }
    if (!rc && m.rank == 0 && !reported) {
        if (m.on) {
            /* the report of every GPU comes from the archive just written */
            /* the report needs no per-node times; the predicted trace does */
            const char *written = held ? lsim_out_file(held) : out;
            rc = lsim_store_read_results_ex(written, run_name, o.trace_out ? 0 : LSIM_STORE_READ_NO_TIMES, &stored,
                                            &err);
            if (!rc) rc = items_of_run(stored, out, &items, &err);
            if (!rc && o.trace_out) rc = lsim_chrome_write(o.trace_out, items, stored->ngpus, &err);
            if (!rc && held) {
                rc = lsim_out_commit(held, &err);
                held = NULL;
            }
            if (!rc) rc = print_report(&o, items, stored->ngpus, &err);
        } else {
            rc = lsim_cli_write_trace(&o, &run, &err);
            if (!rc && held) {
                rc = lsim_out_commit(held, &err);
                held = NULL;
            }
            if (!rc) rc = print_report(&o, run.items, run.n, &err);
        }
    }
    lsim_out_abort(held); /* an output above failed: the archive stays as it was */
    held = NULL;
    if (rc) {
        if (m.rank == 0) fprintf(stderr, "lumosim: error: %s\n", err.msg[0] ? err.msg : "failed");
        status = 1;
    }
    if (!rc && o.stats) {
        /* one line per MPI rank: this rank's own phase times (bench/gpt3_scaling.sh) */
        double t3 = now_s();
        struct rusage ru;
        long rss = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
        fprintf(stderr,
                "lumosim: stats: rank %d of %d: %llu nodes; load %.3f s, match %.3f s, setup %.3f s, simulate %.3f "
                "s, metrics %.3f s, write %.3f s, report %.3f s, total %.3f s; peak RSS %.1f MiB\n",
                m.rank, m.size, (unsigned long long)local_nodes, tl - t0, run_match_s, run_setup_s, run_sim_s,
                run_metrics_s,
                t2 - t1, t3 - t2, t3 - t0, (double)rss / 1024.0);
    }
    lsim_cli_outcome_known();
    free(items);
    free(gpus);
    lsim_store_run_free(stored);
    lsim_cli_run_free(&run);
    mpi_end(&m);
    free(cmd);
    return status;
}

static const char *const USAGE_INFO = "usage: lumosim info FILE.h5...\n\nPrints what a graph store or result archive holds.\n";

int lsim_cli_info(int argc, char **argv)
{
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    if (!args) {
        fprintf(stderr, "lumosim: error: out of memory\n");
        return 1;
    }
    int n = lsim_cli_parse_info(argc, argv, USAGE_INFO, args), status = n < 0 ? 2 : 0;
    for (int i = 0; i < n && !status; i++) {
        lsim_err err = {0};
        if (lsim_store_info(args[i], stdout, &err)) {
            fprintf(stderr, "lumosim: error: %s\n", err.msg);
            status = 1;
        }
    }
    free(args);
    return status;
}

int lsim_cli_refuse_mpi(const char *command)
{
    if (!under_mpi_launcher()) return 0;
    /* The launcher's environment does not say how many ranks there are in
     * every MPI; MPI does. One rank is a serial run like any other. */
    mpi_ctx m;
    if (mpi_begin(&m)) {
        fprintf(stderr, "lumosim: error: MPI_Init failed\n");
        return 1;
    }
    if (!m.on) return 0;
    /* Refused rather than run on rank 0 alone: these commands have no
     * parallel engine, so every rank would redo (and print) the whole
     * replay; the parallel path is a graph store simulated by sim. */
    if (m.rank == 0) {
        if (!strcmp(command, "report"))
            fprintf(stderr, "lumosim: error: report does not run under mpirun (it would run once per rank): run it "
                            "without mpirun, or for a parallel run use lumosim build, then mpirun lumosim sim -o "
                            "RESULT.h5 and lumosim report RESULT.h5\n");
        else
            fprintf(stderr, "lumosim: error: %s does not run under mpirun (it would run once per rank): run it "
                            "without mpirun, or for a parallel run use lumosim build, then mpirun lumosim sim\n",
                    command);
        fflush(stderr);
    }
    /* every rank here before any exits: the launcher then ends nothing
     * half-way, and the line above is the only one */
    MPI_Barrier(MPI_COMM_WORLD);
    lsim_cli_outcome_known();
    mpi_end(&m);
    return 1;
}

static int write_html_items(FILE *f, void *ctx, lsim_err *err)
{
    const lsim_store_run *r = ((void **)ctx)[0];
    const lsim_replay_item *items = ((void **)ctx)[1];
    return lsim_report_html(f, items, r->ngpus, err);
}

int lsim_cli_report_results(const char *path, const char *run_name, const char *html_out)
{
    lsim_err err = {0};
    lsim_store_run *r = NULL;
    lsim_replay_item *items = NULL;
    int rc = lsim_store_read_results(path, run_name, &r, &err);
    if (!rc) rc = items_of_run(r, path, &items, &err);
    if (!rc) {
        void *ctx[2] = {r, items};
        rc = lsim_cli_write_atomic(html_out, write_html_items, ctx, &err);
    }
    if (rc) fprintf(stderr, "lumosim: error: %s\n", err.msg);
    free(items);
    lsim_store_run_free(r);
    return rc ? 1 : 0;
}
