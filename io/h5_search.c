/* The result file of `lumosim search -o FILE.h5` (docs/hdf5-schema.md,
 * "Search results"): every candidate of the space, refused ones with their
 * reason, and the ranking, so that a search can be archived and analysed
 * later like a result archive. Written whole by one process, through a
 * temporary file renamed into place (io/output.c), like every output. */
#include "h5_internal.h"

#include "lumosim/search.h"
#include "lumosim/store.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* One candidate as the file holds it (the columns of /search/candidates). */
typedef struct srow {
    int32_t tp, pp, dp, micro_batch, vstages, mem_stage;
    uint8_t recompute, distributed_optimizer, reason, simulated;
    double mem_bytes;
    int64_t step, breakdown[4], sim_ns;
} srow;

#define SC(nm, f, t) {nm, t, 1, offsetof(srow, f), FSZ(srow, f), M_COPY}
static const mcol search_cols[] = {
    SC("tp", tp, T_I32),
    SC("pp", pp, T_I32),
    SC("dp", dp, T_I32),
    SC("micro_batch", micro_batch, T_I32),
    SC("vstages", vstages, T_I32),
    SC("recompute", recompute, T_U8),
    SC("distributed_optimizer", distributed_optimizer, T_U8),
    SC("reason", reason, T_U8),
    SC("peak_memory", mem_bytes, T_F64),
    SC("peak_memory_stage", mem_stage, T_I32),
    SC("simulated", simulated, T_U8),
    SC("step", step, T_I64),
    {"breakdown", T_I64, 4, offsetof(srow, breakdown), FSZ(srow, breakdown), M_COPY},
    SC("sim_time", sim_ns, T_I64),
};
#define NSCOLS (sizeof search_cols / sizeof search_cols[0])

static int write_search(sctx *c, const lsim_search_file_info *info, const lsim_search_cand *cand, size_t n,
                        const size_t *ranking, size_t nrank)
{
    char tmp[4096];
    srow *rows = calloc(n ? n : 1, sizeof *rows);
    uint64_t *rk = calloc(nrank ? nrank : 1, sizeof *rk);
    const char **why = calloc(n ? n : 1, sizeof *why);
    rowsel all, rsel;
    h5s_sel_one(&all, 0, n);
    h5s_sel_one(&rsel, 0, nrank);
    int rc = rows && rk && why ? 0 : h5s_nomem(c);
    if (!rc) rc = h5s_check_cols(c, search_cols, NSCOLS);
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_search_cand *x = &cand[i];
        srow *r = &rows[i];
        r->tp = x->tp, r->pp = x->pp, r->dp = x->dp, r->micro_batch = x->mb, r->vstages = x->vstages;
        r->mem_stage = x->mem_stage;
        r->recompute = (uint8_t)x->recompute, r->distributed_optimizer = (uint8_t)x->dist_opt;
        r->reason = (uint8_t)x->reason, r->simulated = (uint8_t)(x->simulated != 0);
        r->mem_bytes = x->mem_bytes;
        /* -1: not simulated (refused, or not reached within the budget) */
        r->step = x->simulated ? x->step : -1;
        for (int q = 0; q < 4; q++) r->breakdown[q] = x->simulated ? x->bd[q] : -1;
        r->sim_ns = x->simulated ? (int64_t)(x->sim_s * 1e9) : -1;
        why[i] = x->reason == LSIM_SR_OK ? "" : x->why;
    }
    for (size_t i = 0; !rc && i < nrank; i++) {
        if (ranking[i] >= n) rc = h5s_fail(c, LSIM_EARG, "ranking entry %zu is not a candidate", i);
        else rk[i] = ranking[i];
    }
    if (!rc) rc = h5s_create_tmp(c, tmp, sizeof tmp);
    if (rc) goto out;
    rc = h5s_write_root_attrs(c, LSIM_STORE_KIND_SEARCH, info->command_line ? info->command_line : "", NULL);
    hid_t g = -1;
    if (!rc) {
        hid_t lcpl = h5s_lcpl_parents();
        g = H5Gcreate2(c->file, "search", lcpl, H5P_DEFAULT, H5P_DEFAULT);
        if (lcpl >= 0) H5Pclose(lcpl);
        if (g < 0) rc = h5s_fail(c, LSIM_EIO, "cannot create /search");
    }
    if (!rc) {
        /* the space searched, and what became of it */
        uint64_t nsim = 0, nfeas = 0;
        for (size_t i = 0; i < n; i++) {
            nsim += cand[i].simulated != 0;
            nfeas += cand[i].reason == LSIM_SR_OK;
        }
        const char *reasons[LSIM_SR_N];
        for (int r = 0; r < LSIM_SR_N; r++) reasons[r] = lsim_search_reason_name((lsim_search_reason)r);
        double counts[LSIM_SR_N];
        for (int r = 0; r < LSIM_SR_N; r++) counts[r] = 0;
        for (size_t i = 0; i < n; i++)
            if (cand[i].reason >= 0 && cand[i].reason < LSIM_SR_N) counts[cand[i].reason]++;
        int bad = h5s_put_attr_str(g, "model", info->model ? info->model : "") |
                  h5s_put_attr_str(g, "gpu", info->gpu ? info->gpu : "") | h5s_put_attr_i32(g, "gpus", info->gpus) |
                  h5s_put_attr_i32(g, "global_batch", info->global_batch) |
                  h5s_put_attr_i32(g, "sequence", info->seq) | h5s_put_attr_f64(g, "gpu_memory", info->capacity) |
                  h5s_put_attr_u64(g, "candidates", n) | h5s_put_attr_u64(g, "feasible", nfeas) |
                  h5s_put_attr_u64(g, "simulated", nsim) | h5s_put_attr_f64(g, "wall_seconds", info->seconds) |
                  h5s_put_attr_f64(g, "budget_seconds", info->budget) |
                  h5s_put_attr_strs(g, "reason_names", reasons, LSIM_SR_N) |
                  h5s_put_attr(g, "reason_counts", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, LSIM_SR_N, counts);
        if (bad) rc = h5s_fail(c, LSIM_EIO, "cannot write the attributes of /search");
    }
    if (!rc) rc = h5s_put_records(c, c->file, "", "search/candidates", search_cols, NSCOLS, rows, sizeof *rows, n, &all, n, 0);
    if (!rc) rc = h5s_put_strings(c, c->file, "", "search/candidates/why", why, n, n, &all, 0);
    if (!rc) rc = h5s_put_col(c, c->file, "", "search/ranking", T_U64, 1, nrank, 0, &rsel, rk);
    if (g >= 0) H5Gclose(g);
    if (!rc) rc = h5s_describe(c, c->file, "");
    rc = h5s_finish_tmp(c, tmp, rc);
out:
    h5s_sel_free(&all);
    h5s_sel_free(&rsel);
    free(rows);
    free(rk);
    free(why);
    return rc;
}

int lsim_search_write_h5(const char *path, const lsim_search_file_info *info, const lsim_search_cand *cand, size_t n,
                         const size_t *ranking, size_t nrank, lsim_err *err)
{
    sctx c;
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = path && info ? write_search(&c, info, cand, n, ranking, nrank) : h5s_fail(&c, LSIM_EARG, "no output path");
    return h5s_ctx_done(&c, rc, err);
}
