/* The result file of `lumosim search -o FILE.h5` (docs/hdf5-schema.md,
 * "Search results"): every candidate of the space, refused ones with their
 * reason, and the ranking, so that a search can be archived and analysed
 * later like a result archive. Written whole by one process, through a
 * temporary file renamed into place (src/write/output.c), like every output. */
#include "h5_internal.h"

#include "lumosim/search.h"
#include "lumosim/store.h"
#include "lumosim/whatif_plan.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* One candidate as the file holds it (the columns of /search/candidates). */
typedef struct srow {
    int32_t tp, pp, dp, micro_batch, vstages, mem_stage, micro_batches, cp, ep, fsdp;
    uint8_t recompute, distributed_optimizer, reason, simulated;
    double mem_bytes;
    int64_t step, breakdown[4], sim_ns;
    double thr; /* written, never read back: --merge ranks again (search_rank.c) */
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
    SC("micro_batches", micro_batches, T_I32),
    SC("cp", cp, T_I32),
    SC("ep", ep, T_I32),
    SC("fsdp", fsdp, T_I32),
};
#define NSCOLS (sizeof search_cols / sizeof search_cols[0])
/* Throughput (issue 39), by the ranking's own function, so that the file
 * says what --json, --csv and the table say; files written before it lack
 * the column, and reading them needs none of it. */
static const mcol search_thr_cols[] = {SC("throughput_per_s", thr, T_F64)};

static int write_search(sctx *c, const lsim_search_file_info *info, const lsim_search_cand *cand, size_t n,
                        const size_t *ranking, size_t nrank)
{
    char tmp[4096];
    srow *rows = lsim_calloc(n ? n : 1, sizeof *rows);
    uint64_t *rk = lsim_calloc(nrank ? nrank : 1, sizeof *rk);
    const char **why = lsim_calloc(n ? n : 1, sizeof *why);
    const char **rule = lsim_calloc(n ? n : 1, sizeof *rule);
    rowsel all, rsel;
    h5s_sel_one(&all, 0, n);
    h5s_sel_one(&rsel, 0, nrank);
    int rc = rows && rk && why && rule ? 0 : h5s_nomem(c);
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
        r->thr = x->simulated ? lsim_search_throughput(x, info->global_batch) : NAN;
        why[i] = x->reason == LSIM_SR_OK ? "" : x->why;
        /* --from: the what-if rule that refused, and the --micro-batches asked (0: the source's) */
        rule[i] = x->reason == LSIM_SR_REFUSED && x->rule ? x->rule : "";
        r->micro_batches = x->from_req[4];
        r->cp = x->cp > 1 ? x->cp : 1, r->ep = x->ep > 1 ? x->ep : 1, r->fsdp = x->fsdp;
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
                  h5s_put_attr(g, "reason_counts", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, LSIM_SR_N, counts) |
                  h5s_put_attr_str(g, "from", info->from ? info->from : "") |
                  h5s_put_attr_str(g, "job_options", info->job ? info->job : "") |
                  h5s_put_attr_i32(g, "shard", info->shards > 1 ? info->shard : 0) |
                  h5s_put_attr_i32(g, "shards", info->shards > 1 ? info->shards : 1) |
                  h5s_put_attr_str(g, "rank_by", info->by_step ? "step" : "throughput");
        if (bad) rc = h5s_fail(c, LSIM_EIO, "cannot write the attributes of /search");
    }
    if (!rc) rc = h5s_put_records(c, c->file, "", "search/candidates", search_cols, NSCOLS, rows, sizeof *rows, n, &all, n, 0);
    if (!rc) rc = h5s_put_records(c, c->file, "", "search/candidates", search_thr_cols, 1, rows, sizeof *rows, n, &all, n, 0);
    if (!rc) {
        hid_t t = H5Gopen2(c->file, "search/candidates", H5P_DEFAULT);
        lsim_search_unit u = lsim_search_unit_of(cand, n, info->global_batch);
        if (t < 0 || h5s_put_attr_str(t, "throughput_unit", lsim_search_unit_name(u)))
            rc = h5s_fail(c, LSIM_EIO, "cannot write /search/candidates' throughput_unit");
        if (t >= 0) H5Gclose(t);
    }
    if (!rc) rc = h5s_put_strings(c, c->file, "", "search/candidates/why", why, n, n, &all, 0);
    if (!rc) rc = h5s_put_strings(c, c->file, "", "search/candidates/whatif_rule", rule, n, n, &all, 0);
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
    free(rule);
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

/* The what-if's static name of rule `name` (the file's copy is freed). */
static const char *rule_static(const char *name)
{
    for (int i = 0; i < lsim_wi_plan_nrules(); i++)
        if (!strcmp(name, lsim_wi_plan_rule_name(i))) return lsim_wi_plan_rule_name(i);
    /* search_from.c's own: the result's size, and a check the transform makes */
    return !name[0] ? NULL : !strcmp(name, "memory") ? "memory" : "transform";
}

static int read_search(sctx *c, lsim_search_file *o)
{
    hid_t g = H5Gopen2(c->file, "search", H5P_DEFAULT);
    if (g < 0) return h5s_fail(c, LSIM_EFORMAT, "no /search group");
    int64_t gpus = 0, gb = 0, seq = 0, shard = 0, shards = 1;
    uint64_t n = 0;
    double cap = 0, secs = 0, budget = 0;
    srow *rows = NULL;
    char **why = NULL, **rule = NULL;
    int rc = 0;
    lsim_search_file_info *fi = &o->info;
    if (h5s_get_attr_str(c->file, "created_by", &o->strs[0]) <= 0 || h5s_get_attr_str(g, "model", &o->strs[1]) <= 0 ||
        h5s_get_attr_str(g, "gpu", &o->strs[2]) <= 0 || h5s_get_attr_num(g, "gpus", 0, &gpus) <= 0 ||
        h5s_get_attr_num(g, "global_batch", 0, &gb) <= 0 || h5s_get_attr_num(g, "sequence", 0, &seq) <= 0 ||
        h5s_get_attr_num(g, "candidates", 0, &n) <= 0 || h5s_get_attr_num(g, "gpu_memory", 1, &cap) <= 0 ||
        h5s_get_attr_num(g, "wall_seconds", 1, &secs) <= 0 || h5s_get_attr_num(g, "budget_seconds", 1, &budget) <= 0)
        rc = h5s_fail(c, LSIM_EFORMAT, "/search: an attribute is missing or malformed");
    /* written since --from and --shard: absent in older files (a whole search of --model) */
    if (!rc && h5s_get_attr_str(g, "from", &o->strs[3]) < 0) rc = h5s_fail(c, LSIM_EFORMAT, "/search: bad attribute from");
    /* written since search took synth's job options: absent, none */
    if (!rc && h5s_get_attr_str(g, "job_options", &o->strs[4]) < 0)
        rc = h5s_fail(c, LSIM_EFORMAT, "/search: bad attribute job_options");
    if (!rc && (h5s_get_attr_num(g, "shard", 0, &shard) < 0 || h5s_get_attr_num(g, "shards", 0, &shards) < 0))
        rc = h5s_fail(c, LSIM_EFORMAT, "/search: bad attribute shard or shards");
    if (!rc && (n > ((uint64_t)1 << 32) || shards < 1 || shard < 0 || shard >= shards))
        rc = h5s_fail(c, LSIM_EFORMAT, "/search: %llu candidates, shard %lld of %lld", (unsigned long long)n,
                      (long long)shard, (long long)shards);
    if (!rc && (!(rows = lsim_calloc(n ? n : 1, sizeof *rows)) || !(o->cand = lsim_calloc(n ? n : 1, sizeof *o->cand))))
        rc = h5s_nomem(c);
    if (!rc) rc = h5s_get_records(c, c->file, "", "search/candidates", search_cols, NSCOLS, rows, sizeof *rows, n, 0, n);
    if (!rc && n) rc = h5s_get_strings(c, c->file, "", "search/candidates/why", n, 0, n, &why);
    if (!rc && n) rc = h5s_get_strings(c, c->file, "", "search/candidates/whatif_rule", n, 0, n, &rule);
    for (size_t i = 0; !rc && i < n; i++) {
        const srow *r = &rows[i];
        lsim_search_cand *x = &o->cand[i];
        if (r->reason >= LSIM_SR_N || r->recompute >= LSIM_RC_N || r->cp < 1 || r->ep < 1 || r->fsdp < 0)
            rc = h5s_fail(c, LSIM_EFORMAT, "/search/candidates: row %zu has reason %u, recompute %u, cp %d, ep %d, fsdp %d",
                          i, r->reason, r->recompute, (int)r->cp, (int)r->ep, (int)r->fsdp);
        x->tp = r->tp, x->pp = r->pp, x->dp = r->dp, x->mb = r->micro_batch, x->vstages = r->vstages;
        x->mem_stage = r->mem_stage, x->recompute = r->recompute, x->dist_opt = r->distributed_optimizer;
        x->reason = r->reason, x->simulated = r->simulated != 0, x->mem_bytes = r->mem_bytes;
        x->step = x->simulated ? r->step : 0;
        for (int q = 0; q < 4; q++) x->bd[q] = x->simulated ? r->breakdown[q] : 0;
        x->sim_s = x->simulated ? (double)r->sim_ns / 1e9 : 0;
        x->from_req[4] = r->micro_batches;
        x->cp = r->cp, x->ep = r->ep, x->fsdp = r->fsdp;
        snprintf(x->why, sizeof x->why, "%s", why[i]);
        x->rule = x->reason == LSIM_SR_REFUSED ? rule_static(rule[i]) : NULL;
    }
    if (!rc) {
        o->n = n;
        *fi = (lsim_search_file_info){o->strs[0], o->strs[1], o->strs[2], (int)gpus, (int)gb, (int)seq, cap, secs,
                                      budget, o->strs[3] ? o->strs[3] : "", (int)shard, (int)shards,
                                      o->strs[4] ? o->strs[4] : "", 0};
    }
    h5s_free_strs(why, n);
    h5s_free_strs(rule, n);
    free(rows);
    H5Gclose(g);
    return rc;
}

int lsim_search_read_h5(const char *path, lsim_search_file *out, lsim_err *err)
{
    sctx c;
    memset(out, 0, sizeof *out);
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = h5s_open_file(&c);
    if (!rc) rc = h5s_check_root(&c, LSIM_STORE_KIND_SEARCH);
    if (!rc) rc = read_search(&c, out);
    rc = h5s_ctx_done(&c, rc, err);
    if (rc) lsim_search_file_free(out);
    return rc;
}

void lsim_search_file_free(lsim_search_file *f)
{
    if (!f) return;
    for (int i = 0; i < 5; i++) free(f->strs[i]);
    free(f->cand);
    memset(f, 0, sizeof *f);
}

/* Shard i of the search f[0] is: the same space, model, GPU, job options
 * and --from, and the same enumeration. */
static int same_search(const lsim_search_file *f, int i, char *const *names, lsim_err *err)
{
    const lsim_search_file_info *fi = &f[i].info, *f0 = &f[0].info;
    if (fi->shards != f0->shards || f[i].n != f[0].n || fi->gpus != f0->gpus || fi->global_batch != f0->global_batch ||
        fi->seq != f0->seq || strcmp(fi->model, f0->model) || strcmp(fi->gpu, f0->gpu) || strcmp(fi->from, f0->from) ||
        strcmp(fi->job ? fi->job : "", f0->job ? f0->job : ""))
        return lsim_err_set(err, LSIM_EARG, "%s: not a shard of the search %s is (another space, or %d shards, not %d)",
                            names[i], names[0], fi->shards, f0->shards);
    for (size_t k = 0; k < f[i].n; k++) {
        const lsim_search_cand *x = &f[i].cand[k], *y = &f[0].cand[k];
        if (x->tp != y->tp || x->pp != y->pp || x->dp != y->dp || x->mb != y->mb || x->vstages != y->vstages ||
            x->recompute != y->recompute || x->dist_opt != y->dist_opt || x->from_req[4] != y->from_req[4] ||
            x->cp != y->cp || x->ep != y->ep || x->fsdp != y->fsdp)
            return lsim_err_set(err, LSIM_EARG, "%s: candidate %zu is not %s's: not the same enumeration", names[i], k,
                                names[0]);
    }
    return 0;
}

int lsim_search_merge(const lsim_search_file *f, int n, char *const *names, lsim_search_cand **out, size_t *nout,
                      double *secs, lsim_err *err)
{
    *out = NULL;
    *nout = 0;
    *secs = 0;
    int N = f[0].info.shards, rc = 0;
    if (N != n)
        return lsim_err_set(err, LSIM_EARG, "%s: shard %d of %d, but %d files given (one per shard I = 0..%d)", names[0],
                            f[0].info.shard, N, n, N - 1);
    int *by = lsim_malloc((size_t)N * sizeof *by); /* the file of each shard */
    lsim_search_cand *c = lsim_calloc(f[0].n ? f[0].n : 1, sizeof *c);
    if (!by || !c) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory merging the shards");
    for (int i = 0; !rc && i < N; i++) by[i] = -1;
    for (int i = 0; !rc && i < n; i++) {
        int sh = f[i].info.shard;
        if ((rc = same_search(f, i, names, err))) break;
        if (by[sh] >= 0)
            rc = lsim_err_set(err, LSIM_EARG, "%s: shard %d of %d again (also %s)", names[i], sh, N, names[by[sh]]);
        else
            by[sh] = i;
        if (f[i].info.seconds > *secs) *secs = f[i].info.seconds;
    }
    for (size_t k = 0; !rc && k < f[0].n; k++) c[k] = f[by[k % (size_t)N]].cand[k];
    free(by);
    if (rc) {
        free(c);
        *secs = 0;
        return rc;
    }
    *out = c;
    *nout = f[0].n;
    return 0;
}
