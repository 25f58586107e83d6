/* The run layer over MPI (include/lumosim/run_mpi.h): agreement on a
 * failure, the distributed collective match, the parallel coupled run. In
 * lumosim_mpi. Every MPI call goes to the communicator the caller passes. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/run_mpi.h"

/* The one agreement on a failure over MPI (run_mpi.h): the engine, the
 * run layer and the CLI all stop on the same status and message. */
int lsim_mpi_agree(MPI_Comm comm, int rc, lsim_err *err)
{
    int me = 0, np = 1, first = 0;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    int mine = rc ? me : np;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == np) return 0;
    /* the failing rank's own status with its own message, as one block:
     * a code from one rank beside the message of another would misname the
     * failure */
    lsim_err e;
    memset(&e, 0, sizeof e);
    if (me == first) {
        e = *err;
        e.code = rc;
        if (!e.msg[0]) lsim_err_set(&e, rc, "%s", lsim_strerror(rc));
    }
    MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, first, comm);
    e.msg[LSIM_ERR_LEN - 1] = '\0';
    *err = e;
    return e.code;
}

int lsim_mpi_gather_entries(MPI_Comm comm, const lsim_job_entry *mine, size_t nmine, lsim_job_entry **all,
                            size_t *nall, lsim_err *err)
{
    int np = 1, rc = 0;
    MPI_Comm_size(comm, &np);
    int *cnt = malloc((size_t)np * sizeof *cnt), *dsp = malloc((size_t)np * sizeof *dsp);
    lsim_job_entry *buf = NULL;
    MPI_Datatype ent = MPI_DATATYPE_NULL;
    *all = NULL;
    *nall = 0;
    if (!cnt || !dsp) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    else if (nmine > INT_MAX)
        rc = lsim_err_set(err, LSIM_EARG, "%zu collective entries on one MPI rank: more than one exchange can count (%d)",
                          nmine, INT_MAX);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    /* counts in entries (the derived type below), so the limit is 2^31 - 1
     * entries, not bytes (16.7 M entries of 128 bytes) */
    int my = (int)nmine;
    MPI_Allgather(&my, 1, MPI_INT, cnt, 1, MPI_INT, comm);
    long long sum = 0;
    for (int r = 0; r < np; r++) {
        dsp[r] = (int)(sum < INT_MAX ? sum : INT_MAX);
        sum += cnt[r];
    }
    /* the same sum on every rank: all refuse together */
    if (sum > INT_MAX)
        rc = lsim_err_set(err, LSIM_EARG, "%lld collective entries in the job: more than one exchange can count (%d)", sum,
                          INT_MAX);
    else if (!(buf = malloc(sum ? (size_t)sum * sizeof *buf : 1)))
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for the job's %lld collective entries", sum);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    MPI_Type_contiguous((int)sizeof *buf, MPI_BYTE, &ent);
    MPI_Type_commit(&ent);
    MPI_Allgatherv(mine, my, ent, buf, cnt, dsp, ent, comm);
    MPI_Type_free(&ent);
    *all = buf;
    *nall = (size_t)sum;
    buf = NULL;
cleanup:
    free(buf);
    free(cnt);
    free(dsp);
    return rc;
}

int lsim_mpi_job_match(MPI_Comm comm, lsim_graph *const *graphs, const uint32_t *gpu_ids, size_t nlocal, size_t ngpus,
                       lsim_job **job, uint64_t *p2p, lsim_err *err)
{
    lsim_job_entry *mine = NULL, *all = NULL;
    size_t nmine = 0, nall = 0;
    size_t *nodes = calloc(ngpus ? ngpus : 1, sizeof *nodes);
    int rc = nodes ? 0 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    *job = NULL;
    for (size_t i = 0; !rc && i < nlocal; i++) {
        if (gpu_ids[i] >= ngpus) rc = lsim_err_set(err, LSIM_EARG, "GPU %u of a job of %zu GPUs", gpu_ids[i], ngpus);
        else nodes[gpu_ids[i]] = graphs[i]->n;
    }
    if (!rc) rc = lsim_job_entries(graphs, gpu_ids, nlocal, &mine, &nmine, p2p, err);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    /* every rank gets every GPU's collective list and matches the whole job */
    if ((rc = lsim_mpi_gather_entries(comm, mine, nmine, &all, &nall, err))) goto cleanup;
    rc = lsim_job_from_entries(all, nall, ngpus, NULL, NULL, nodes, job, err);
    rc = lsim_mpi_agree(comm, rc, err);
    if (rc) {
        lsim_job_free(*job);
        *job = NULL;
    }
cleanup:
    free(mine);
    free(all);
    free(nodes);
    return rc;
}

int lsim_mpi_bcast_layout(MPI_Comm comm, int rc, lsim_map_layout *l, lsim_err *err)
{
    long long w[2] = {(long long)l->tp, (long long)l->dp};
    rc = lsim_mpi_agree(comm, rc, err);
    MPI_Bcast(w, 2, MPI_LONG_LONG, 0, comm);
    l->tp = (size_t)w[0];
    l->dp = (size_t)w[1];
    return rc;
}

/* The job's graphs by global GPU (this rank's only; the others NULL), for
 * job->graphs; and the local GPUs' global ids as the engine wants them. */
static int local_tables(const lsim_run *run, const size_t *gpus, size_t total, lsim_graph ***gtab, uint32_t **gid,
                        lsim_err *err)
{
    *gtab = calloc(total ? total : 1, sizeof **gtab);
    *gid = malloc((run->n ? run->n : 1) * sizeof **gid);
    if (!*gtab || !*gid) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < run->n; i++) {
        if (gpus[i] >= total) return lsim_err_set(err, LSIM_EARG, "GPU %zu of a job of %zu GPUs", gpus[i], total);
        (*gid)[i] = (uint32_t)gpus[i];
        (*gtab)[gpus[i]] = run->graphs[i];
    }
    return 0;
}

int lsim_run_mpi_job(MPI_Comm comm, const lsim_run_opts *o, lsim_run *run, const size_t *gpus, size_t total,
                     const lsim_pdes_opts *popts, lsim_pdes_stats *st, lsim_err *err)
{
    uint64_t p2p = 0;
    uint32_t *gid = NULL;
    lsim_graph **gtab = NULL;
    memset(st, 0, sizeof *st);
    int rc = local_tables(run, gpus, total, &gtab, &gid, err);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    double t0 = lsim_now_s();
    if ((rc = lsim_mpi_job_match(comm, run->graphs, gid, run->n, total, &run->job, &p2p, err))) goto cleanup;
    run->job->graphs = gtab;
    run->job->uncoupled_p2p = p2p;
    lsim_job_align_clocks(run->job);
    rc = lsim_run_alloc_results(run, err);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    double t1 = lsim_now_s();
    run->match_s = t1 - t0;
    rc = lsim_run_engines(o, run, err);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    run->setup_s = lsim_now_s() - t1;
    t1 = lsim_now_s();
    rc = lsim_pdes_run(comm, run->job, gid, run->engines, run->n, NULL, popts, st, err);
    double t2 = lsim_now_s();
    run->simulate_s = t2 - t1;
    for (size_t i = 0; !rc && i < run->n; i++) rc = lsim_run_finish_gpu(o, run, i, gid[i], err);
    run->metrics_s = lsim_now_s() - t2;
    rc = lsim_mpi_agree(comm, rc, err);
cleanup:
    if (run->job) run->job->graphs = NULL;
    free(gtab);
    free(gid);
    return rc;
}
