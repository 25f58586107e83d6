/* The processes of one lumosim command (world.h). */
#include "lumosim/world.h"
#include "lumosim/alloc.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "lumosim/run_mpi.h"

/* Launched by mpirun/srun? (Open MPI, PMIx, Slurm PMI) */
static int under_launcher(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE");
}

int lsim_world_begin(lsim_world *w)
{
    memset(w, 0, sizeof *w);
    w->size = 1;
    if (!under_launcher()) return 0;
    int inited = 0;
    MPI_Initialized(&inited);
    /* Open MPI's lockedfile shared-file-pointer component probes every file
     * we open by creating OUTPUT.locktest.RANK beside it; a rank killed
     * during that probe leaves the file behind where no other rank knows
     * its name. We never use shared file pointers, so leave the component
     * out (unless the user chose otherwise). Read by MPI_Init. */
    if (!inited) setenv("OMPI_MCA_sharedfp", "^lockedfile", 0);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) return -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w->size);
    w->on = w->size > 1;
    if (!w->on) MPI_Finalize(); /* a single rank works like no mpirun */
    return 0;
}

void lsim_world_end(lsim_world *w)
{
    if (w->on) MPI_Finalize();
}

int lsim_world_agree(const lsim_world *w, int rc, lsim_err *err)
{
    return w->on ? lsim_mpi_agree(MPI_COMM_WORLD, rc, err) : rc;
}

void lsim_world_reduce(const lsim_world *w, void *v, size_t n, lsim_world_type t, lsim_world_op op)
{
    static const size_t SIZE[] = {sizeof(int), sizeof(int64_t), sizeof(uint64_t), sizeof(double), 1};
    if (!w->on) return;
    MPI_Datatype dt = t == LSIM_W_INT   ? MPI_INT
                      : t == LSIM_W_I64 ? MPI_INT64_T
                      : t == LSIM_W_U64 ? MPI_UINT64_T
                      : t == LSIM_W_F64 ? MPI_DOUBLE
                                            : MPI_UNSIGNED_CHAR;
    MPI_Op o = op == LSIM_W_MIN ? MPI_MIN : op == LSIM_W_MAX ? MPI_MAX : MPI_SUM;
    /* MPI counts are ints: a longer vector goes in slices */
    for (size_t at = 0; at < n;) {
        size_t k = n - at < (size_t)INT_MAX ? n - at : (size_t)INT_MAX;
        MPI_Allreduce(MPI_IN_PLACE, (char *)v + at * SIZE[t], (int)k, dt, o, MPI_COMM_WORLD);
        at += k;
    }
}

int lsim_world_gather_f64(const lsim_world *w, double x, double **all, lsim_err *err)
{
    *all = NULL;
    int rc = 0;
    if (w->rank == 0 && !(*all = lsim_malloc((size_t)w->size * sizeof **all)))
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if ((rc = lsim_world_agree(w, rc, err))) {
        free(*all);
        *all = NULL;
        return rc;
    }
    if (w->on) MPI_Gather(&x, 1, MPI_DOUBLE, *all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else (*all)[0] = x;
    return 0;
}

void lsim_world_parts_free(lsim_world_parts *p)
{
    if (!p) return;
    free((void *)p->text);
    free(p->buf_);
    free(p->hdr_);
    free(p->words_);
    memset(p, 0, sizeof *p);
}

/* Rank 0, once every header has arrived: each GPU's text and words in GPU
 * order, every GPU exactly once. hdr: per GPU its index, its text's bytes,
 * its words. */
static int parts_place(lsim_world_parts *p, long long hsum, lsim_err *err)
{
    size_t hw = 2 + p->nwords, total = p->total;
    const char **text = lsim_calloc(total ? total : 1, sizeof *text);
    p->words_ = lsim_calloc(total * p->nwords + 1, sizeof *p->words_);
    p->text = text;
    p->words = p->words_;
    if (!text || !p->words_) return lsim_err_set(err, LSIM_ENOMEM, "out of memory gathering the GPUs' parts");
    long long at = 0;
    for (long long q = 0; q + (long long)hw - 1 < hsum; q += (long long)hw) {
        uint64_t g = p->hdr_[q];
        if (g >= total || text[g])
            return lsim_err_set(err, LSIM_EINTERNAL, "the GPUs' parts: GPU %llu twice", (unsigned long long)g);
        text[g] = p->buf_ + at;
        memcpy(p->words_ + g * p->nwords, p->hdr_ + q + 2, p->nwords * sizeof *p->words_);
        at += (long long)p->hdr_[q + 1];
    }
    for (size_t g = 0; g < total; g++)
        if (!text[g]) return lsim_err_set(err, LSIM_EINTERNAL, "the GPUs' parts: GPU %zu missing", g);
    return 0;
}

/* This rank's parts as one header and one block of texts. */
static int parts_pack(char *const *text, const size_t *gpus, const uint64_t *words, size_t nwords, size_t n,
                      uint64_t **hdr, char **mine, size_t *bytes, lsim_err *err)
{
    size_t hw = 2 + nwords, b = 0;
    for (size_t i = 0; i < n; i++) b += strlen(text[i]) + 1;
    *bytes = b;
    if (b > INT_MAX || hw * n > INT_MAX)
        return lsim_err_set(err, LSIM_EARG, "the report of this rank's GPUs exceeds 2 GB: use -o and lumosim collect");
    *hdr = lsim_malloc((hw * n + 1) * sizeof **hdr);
    *mine = lsim_malloc(b ? b : 1);
    if (!*hdr || !*mine) return lsim_err_set(err, LSIM_ENOMEM, "out of memory gathering the GPUs' parts");
    for (size_t i = 0, at = 0; i < n; i++) {
        size_t len = strlen(text[i]) + 1;
        memcpy(*mine + at, text[i], len);
        at += len;
        (*hdr)[hw * i] = gpus[i];
        (*hdr)[hw * i + 1] = len;
        if (nwords) memcpy(*hdr + hw * i + 2, words + nwords * i, nwords * sizeof **hdr);
    }
    return 0;
}

int lsim_world_gather_parts(const lsim_world *w, char *const *text, const size_t *gpus, const uint64_t *words,
                            size_t nwords, size_t n, size_t total, lsim_world_parts *out, lsim_err *err)
{
    memset(out, 0, sizeof *out);
    out->total = total;
    out->nwords = nwords;
    int np = w->size, me = w->rank;
    uint64_t *hdr = NULL;
    char *mine = NULL;
    size_t bytes = 0;
    int *cnt = NULL, *dsp = NULL, *bcnt = NULL, *bdsp = NULL;
    int rc = parts_pack(text, gpus, words, nwords, n, &hdr, &mine, &bytes, err);
    if (!w->on) { /* this process holds every part */
        out->hdr_ = hdr, out->buf_ = mine;
        hdr = NULL, mine = NULL;
        if (!rc) rc = parts_place(out, (long long)((2 + nwords) * n), err);
        goto cleanup;
    }
    if (!rc && me == 0) {
        cnt = lsim_malloc((size_t)np * 2 * sizeof *cnt);
        dsp = lsim_malloc((size_t)np * sizeof *dsp);
        bcnt = lsim_malloc((size_t)np * sizeof *bcnt);
        bdsp = lsim_malloc((size_t)np * sizeof *bdsp);
        if (!cnt || !dsp || !bcnt || !bdsp) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory gathering the GPUs' parts");
    }
    if ((rc = lsim_world_agree(w, rc, err))) goto cleanup;
    int c2[2] = {(int)((2 + nwords) * n), (int)bytes};
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
        if (bsum > INT_MAX || hsum > INT_MAX) rc = lsim_err_set(err, LSIM_EARG, "the report exceeds 2 GB: use -o and lumosim collect");
        else if (!(out->hdr_ = lsim_malloc((size_t)(hsum ? hsum : 1) * sizeof *out->hdr_)) ||
                 !(out->buf_ = lsim_malloc((size_t)(bsum ? bsum : 1))))
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory gathering the GPUs' parts");
    }
    if ((rc = lsim_world_agree(w, rc, err))) goto cleanup;
    MPI_Gatherv(hdr, c2[0], MPI_UINT64_T, out->hdr_, cnt, dsp, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Gatherv(mine, c2[1], MPI_CHAR, out->buf_, bcnt, bdsp, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (me == 0) rc = parts_place(out, hsum, err);
    rc = lsim_world_agree(w, rc, err);
cleanup:
    free(hdr);
    free(mine);
    free(cnt);
    free(dsp);
    free(bcnt);
    free(bdsp);
    if (rc) lsim_world_parts_free(out);
    return rc;
}

int lsim_world_bcast_layout(const lsim_world *w, int rc, lsim_map_layout *l, lsim_err *err)
{
    return w->on ? lsim_mpi_bcast_layout(MPI_COMM_WORLD, rc, l, err) : rc;
}

int lsim_world_write_graphs(const lsim_world *w, const char *path, lsim_graph *const *graphs, size_t n,
                            const lsim_store_write_opts *opts, lsim_err *err)
{
    (void)w;
    return lsim_store_write_graphs_mpi_ex(path, MPI_COMM_WORLD, graphs, n, opts, err);
}

int lsim_world_read_graph_list(const lsim_world *w, const char *path, const size_t *gpus, size_t n, int flags,
                               lsim_graph ***out, size_t *nout, lsim_err *err)
{
    (void)w;
    return lsim_store_read_graph_list_mpi_ex(path, MPI_COMM_WORLD, gpus, n, flags, out, nout, err);
}

int lsim_world_writer_open(const lsim_world *w, const char *path, const lsim_store_write_opts *opts,
                           lsim_store_writer **out, lsim_err *err)
{
    (void)w;
    return lsim_store_writer_open_mpi(path, MPI_COMM_WORLD, opts, out, err);
}

int lsim_world_write_results(const lsim_world *w, const char *path, const char *run_name,
                             const lsim_replay_item *items, const size_t *gpus, size_t n,
                             const lsim_store_run_info *info, lsim_err *err)
{
    (void)w;
    return lsim_store_write_results_mapped_mpi(path, MPI_COMM_WORLD, run_name, items, gpus, n, info, err);
}

int lsim_world_run_job(const lsim_world *w, const lsim_run_opts *o, lsim_run *run, const size_t *gpus, size_t total,
                       const lsim_pdes_opts *popts, lsim_pdes_stats *st, lsim_err *err)
{
    (void)w;
    return lsim_run_mpi_job(MPI_COMM_WORLD, o, run, gpus, total, popts, st, err);
}

int lsim_world_rank0_writes(const lsim_world *w, const lsim_out *held, int (*fn)(void *ctx, lsim_err *err), void *ctx,
                            lsim_err *err)
{
    (void)w;
    return lsim_mpi_rank0_writes(MPI_COMM_WORLD, held, fn, ctx, err);
}

void lsim_world_barrier(const lsim_world *w)
{
    if (w->on) MPI_Barrier(MPI_COMM_WORLD);
}
