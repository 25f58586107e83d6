/* Configuration search around a job (include/lumosim/search_from.h,
 * docs/search.md "Around a job: --from"): the what-if plan's rules decide
 * which layouts are reachable, the plan writes each one, and it is
 * simulated exactly as `lumosim sim` simulates a store, so the search's
 * step is the one `lumosim whatif` + `lumosim sim` print. */
#include "lumosim/search_from.h"
#include "lumosim/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include "lumosim/input.h"
#include "lumosim/memest.h"
#include "lumosim/store.h"
#include "lumosim/tmpfiles.h"
#include "lumosim/whatif_plan.h"
#include "lumosim/world.h"

/* The request every candidate starts from: the source, its shape and the
 * hardware options. */
static void base_request(const lsim_search_from *s, lsim_wi_request *rq)
{
    memset(rq, 0, sizeof *rq);
    rq->in = s->in;
    rq->model = s->model;
    rq->gpu = s->gpu;
    rq->topo = s->topo;
    rq->micro_batch = s->micro_batch;
    rq->seed = 1;
    rq->batch = 64; /* whatif's default: source GPUs read at a time */
    rq->sigma = 0;
    rq->cmd = "lumosim search --from";
}

/* Candidate c's what-if request (c->from_req: 0 = the source's). */
static void cand_request(const lsim_search_from *s, const lsim_search_cand *c, lsim_wi_request *rq)
{
    base_request(s, rq);
    rq->tp = c->from_req[0], rq->pp = c->from_req[1], rq->dp = c->from_req[2];
    rq->vstages = c->from_req[3], rq->micro_batches = c->from_req[4];
}

/* The source must be a graph store: the line lumosim sim gives otherwise. */
static int check_source(const char *in, lsim_err *err)
{
    lsim_store_kind kind = lsim_store_probe(in);
    if (kind == LSIM_STORE_NOT_HDF5 && lsim_input_check(in, 0, NULL, err)) return err->code;
    if (kind != LSIM_STORE_GRAPHS && lsim_store_refuse_kind(in, kind, "a graph store", err)) return err->code;
    if (kind != LSIM_STORE_GRAPHS)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: %s", in,
                            kind == LSIM_STORE_OTHER ? "is an HDF5 file but not a lumosim graph store"
                                                     : "not a graph store (missing, truncated, corrupt, or another "
                                                       "format)");
    return 0;
}

static int nz(int n) { return n ? n : 1; }

/* One candidate checked against the facts: the GPU count, the global
 * batch, then the what-if rules (pure functions of request and facts). */
static void check(const lsim_search_from *s, const lsim_wi_facts *f, int mb, lsim_search_cand *x)
{
    lsim_wi_request rq;
    lsim_wi_decision d;
    lsim_err err = {0};
    long tpp = (long)x->tp * x->pp * x->dp;
    if (s->gpus > 0 && tpp != s->gpus) {
        x->reason = LSIM_SR_GPUS;
        snprintf(x->why, sizeof x->why, "TP x PP x DP = %ld is not the %d GPUs of --gpus", tpp, s->gpus);
        return;
    }
    if (s->global_batch > 0) {
        long per = (long)x->dp * mb;
        if (!s->nmbs && s->global_batch % per) {
            x->reason = LSIM_SR_SHAPE;
            snprintf(x->why, sizeof x->why, "the global batch %d is not a multiple of DP x micro-batch = %ld",
                     s->global_batch, per);
            return;
        }
        if (!s->nmbs) x->from_req[4] = (int)(s->global_batch / per);
        if ((long)x->from_req[4] * per != s->global_batch) {
            x->reason = LSIM_SR_SHAPE;
            snprintf(x->why, sizeof x->why, "DP %d x %d micro-batches x micro-batch %d is not the global batch %d",
                     x->dp, x->from_req[4], mb, s->global_batch);
            return;
        }
    }
    cand_request(s, x, &rq);
    int rc = lsim_wi_plan_check(&rq, f, &d, &err);
    if (rc) {
        x->reason = LSIM_SR_REFUSED;
        x->rule = d.refused ? d.refused : rc == LSIM_ENOMEM ? "memory" : "?";
        snprintf(x->why, sizeof x->why, "%s", err.msg);
        return;
    }
    /* the layout the what-if makes */
    x->tp = d.Ln.tp, x->pp = d.Ln.pp, x->dp = d.Ln.dp;
    if (d.pipe) x->vstages = d.pcfg.vstages;
    x->reason = LSIM_SR_OK;
}

int lsim_search_from_enumerate(const lsim_search_from *s, lsim_search_cand **out, size_t *n,
                               lsim_search_from_info *info, lsim_err *err)
{
    lsim_wi_request rq;
    lsim_wi_plan *p = NULL;
    lsim_search_cand *c = NULL;
    *out = NULL;
    *n = 0;
    memset(info, 0, sizeof *info);
    int rc = check_source(s->in, err);
    if (rc) return rc;
    base_request(s, &rq);
    /* any layout option makes pass 1 find the source's model (the facts
     * every rule reads); this plan is only checked, never run */
    rq.dp = 1;
    rc = lsim_wi_plan_open(&rq, &p, err);
    if (rc) goto cleanup;
    const lsim_wi_facts *f = lsim_wi_plan_facts(p);
    info->tp = f->L.tp, info->pp = f->L.pp, info->dp = f->L.dp, info->gpus = f->n;
    info->micro_batch = s->micro_batch > 0 ? (int)s->micro_batch : f->have_model ? f->from_model.micro_batch : 0;
    info->seq = f->have_model ? f->from_model.seq : 0;
    if (s->global_batch > 0 && info->micro_batch <= 0) {
        rc = lsim_err_set(err, LSIM_EARG,
                          "%s: --global-batch needs the source's micro-batch size: give --micro-batch N, or --model "
                          "so that it is found from the activations (%s)",
                          s->in, f->model_err[0] ? f->model_err : "the shape is unknown");
        goto cleanup;
    }
    int V0 = f->n && f->ids[0].nchunks > 0 ? f->ids[0].nchunks : 1;
    int rc0 = LSIM_RC_NONE;
    if (f->sopts && strstr(f->sopts, "rc=full")) rc0 = LSIM_RC_FULL;
    else if (f->sopts && strstr(f->sopts, "rc=selective")) rc0 = LSIM_RC_SELECTIVE;
    else if (f->sopts && strstr(f->sopts, "rc=op")) rc0 = LSIM_RC_OP; /* torchtitan's per-op checkpointing */
    size_t total = (size_t)nz(s->ntp) * (size_t)nz(s->npp) * (size_t)nz(s->ndp) * (size_t)nz(s->nvst) *
                   (size_t)nz(s->nmbs);
    if (!(c = lsim_calloc(total, sizeof *c))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        goto cleanup;
    }
    size_t k = 0;
    for (int a = 0; a < nz(s->ntp); a++)
        for (int b = 0; b < nz(s->npp); b++)
            for (int e = 0; e < nz(s->ndp); e++)
                for (int v = 0; v < nz(s->nvst); v++)
                    for (int m = 0; m < nz(s->nmbs); m++) {
                        lsim_search_cand *x = &c[k++];
                        x->from_req[0] = s->ntp ? s->tp[a] : 0;
                        x->from_req[1] = s->npp ? s->pp[b] : 0;
                        x->from_req[2] = s->ndp ? s->dp[e] : 0;
                        x->from_req[3] = s->nvst ? s->vst[v] : 0;
                        x->from_req[4] = s->nmbs ? s->mbs[m] : 0;
                        x->tp = x->from_req[0] ? x->from_req[0] : f->L.tp;
                        x->pp = x->from_req[1] ? x->from_req[1] : f->L.pp;
                        x->dp = x->from_req[2] ? x->from_req[2] : f->L.dp;
                        x->vstages = x->from_req[3] ? x->from_req[3] : V0;
                        x->mb = info->micro_batch;
                        x->recompute = rc0;
                        check(s, f, info->micro_batch, x);
                    }
    *out = c;
    *n = k;
    c = NULL;
cleanup:
    free(c);
    lsim_wi_plan_free(p);
    return rc;
}

/* The new store's peak per GPU: the model estimate's worst stage (a
 * synthesized source), else the record's most loaded GPU of the carried
 * traced figures; 0 unknown. */
static double peak_of(const char *path, const char *record)
{
    char *text = NULL;
    lsim_err e = {0};
    double peak = 0;
    if (!lsim_store_read_attr(path, "memory", &text, &e) && text) {
        lsim_memest_job j;
        memset(&j, 0, sizeof j);
        if (!lsim_memest_job_parse(text, &j, NULL) && j.worst >= 0 && j.worst < j.nstages)
            peak = j.stages[j.worst].total;
        lsim_memest_job_free(&j);
    }
    free(text);
    if (peak > 0 || !record) return peak;
    cJSON *r = cJSON_Parse(record);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "memory"), "worst");
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(w, "peak_bytes");
    if (cJSON_IsNumber(pk)) peak = pk->valuedouble;
    cJSON_Delete(r);
    return peak;
}

/* An error about the candidate's temporary store names the user's --from
 * store and the candidate instead (issue 40: "/tmp/lumosim-search-*
 * /candidate.h5" meant nothing to the user): each mention of path in the
 * message becomes "IN (candidate TP a x PP b x DP c)". */
static void name_source(const lsim_search_from *s, const lsim_search_cand *c, const char *path, lsim_err *err)
{
    char was[LSIM_ERR_LEN], who[LSIM_ERR_LEN];
    snprintf(was, sizeof was, "%s", err->msg);
    snprintf(who, sizeof who, "%s (candidate TP %d x PP %d x DP %d)", s->in, c->tp, c->pp, c->dp);
    size_t n = strlen(path), cap = sizeof err->msg, k = 0; /* k < cap throughout */
    for (const char *p = was; *p && k + 1 < cap;) {
        if (n && !strncmp(p, path, n)) {
            size_t w = (size_t)snprintf(err->msg + k, cap - k, "%s", who);
            k += w < cap - k ? w : cap - k - 1;
            p += n;
        } else {
            err->msg[k++] = *p++;
        }
    }
    err->msg[k] = '\0';
}

int lsim_search_from_eval(const lsim_search_from *s, lsim_search_cand *c, const lsim_run_opts *o, lsim_err *err)
{
    double t0 = lsim_now_s();
    char path[4096];
    lsim_wi_request rq;
    lsim_wi_plan *p = NULL;
    lsim_graph **gs = NULL;
    size_t ng = 0;
    lsim_run r;
    memset(&r, 0, sizeof r);
    int rc = 0, slot = -1;
    if ((size_t)snprintf(path, sizeof path, "%s/candidate.h5", s->workdir ? s->workdir : ".") >= sizeof path)
        return lsim_err_set(err, LSIM_EARG, "the work directory's name is too long");
    cand_request(s, c, &rq);
    rq.out = path;
    rc = lsim_wi_plan_open(&rq, &p, err);
    if (!rc) rc = lsim_wi_plan_run(p, err);
    if (rc == LSIM_EARG) {
        /* a check the transform makes once it has read the source (a tagged
         * pipeline's structure, a trace's activations): refused as a rule
         * refuses, with its message */
        c->reason = LSIM_SR_REFUSED;
        c->rule = "transform";
        name_source(s, c, path, err);
        snprintf(c->why, sizeof c->why, "%s", err->msg);
        memset(err, 0, sizeof *err);
        rc = 0;
        goto cleanup;
    }
    if (rc) goto cleanup;
    slot = lsim_tmp_register(path); /* removed below, or by an interrupted run's handler */
    c->mem_bytes = peak_of(path, lsim_wi_plan_record(p));
    if (lsim_wi_plan_oom(p)[0]) {
        /* as the search discards a layout past the GPU's memory */
        c->reason = LSIM_SR_MEMORY;
        snprintf(c->why, sizeof c->why, "%s", lsim_wi_plan_oom(p));
        goto cleanup;
    }
    /* as lumosim sim simulates a store serially (store_cmds.c sim_load,
     * sim_simulate) */
    if ((rc = lsim_store_read_graphs(path, 0, SIZE_MAX, &gs, &ng, err))) {
        lsim_store_free_graphs(gs, ng);
        goto cleanup;
    }
    rc = lsim_run_add_graphs(&r, gs, ng, path, err); /* r owns them */
    free(gs);
    gs = NULL;
    if (!rc) rc = lsim_run_check_ranks(&r, err);
    if (!rc) rc = lsim_search_measure(o, &r, c, err);
cleanup:
    if (rc) name_source(s, c, path, err);
    lsim_run_free(&r);
    lsim_wi_plan_free(p);
    unlink(path);
    if (slot >= 0) lsim_tmp_unregister(slot);
    c->sim_s = lsim_now_s() - t0;
    return rc;
}

/* A candidate's results as FLAT int64 words for the ranks' sum (a rank
 * leaves the candidates it did not evaluate at 0): state (0 not evaluated
 * here, 1 simulated, 2 not), step, breakdown x 4, sim ns, reason, peak
 * bytes, rule. */
#define FLAT 10

/* A refusal's rule as a number for the ranks' reduction, and back: the
 * what-if's rules, then this file's own two ("memory", "transform"). */
static int64_t rule_code(const char *rule)
{
    int nr = lsim_wi_plan_nrules();
    for (int i = 0; rule && i < nr; i++)
        if (!strcmp(rule, lsim_wi_plan_rule_name(i))) return i + 1;
    return !rule ? 0 : !strcmp(rule, "memory") ? nr + 1 : nr + 2;
}
static const char *rule_name(int64_t k)
{
    int nr = lsim_wi_plan_nrules();
    return k <= 0 ? NULL : k <= nr ? lsim_wi_plan_rule_name((int)k - 1) : k == nr + 1 ? "memory" : "transform";
}

/* The OOM lines of --from candidates another rank found past memory:
 * every rank's why of its state-2 candidates, maxed byte by byte (the
 * others' are zero). Collective (every rank calls it, rc agreed first). */
static int share_whys(const lsim_world *w, lsim_search_cand *c, size_t n, const int64_t *flat, int rc, lsim_err *err)
{
    size_t wn = sizeof c->why;
    unsigned char *whys = NULL;
    if (!rc && !(whys = lsim_calloc(n ? n * wn : 1, 1))) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++)
        if (flat[i * FLAT] == 2) memcpy(whys + i * wn, c[i].why, wn);
    rc = lsim_world_agree(w, rc, err); /* every rank reduces, or none */
    if (!rc) lsim_world_reduce(w, whys, n * wn, LSIM_W_U8, LSIM_W_MAX);
    for (size_t i = 0; !rc && i < n; i++)
        if (flat[i * FLAT] == 2) memcpy(c[i].why, whys + i * wn, wn), c[i].why[wn - 1] = 0;
    lsim_free(whys);
    return rc;
}

int lsim_search_world_eval(const lsim_world *w, const lsim_search_space *sp, const lsim_search_from *fs,
                           lsim_search_cand *c, size_t n, const size_t *order, size_t nf, double t0, double budget,
                           const lsim_run_opts *o, int rc, lsim_err *err)
{
    int64_t *flat = NULL;
    if (!rc && !(flat = lsim_calloc((n ? n : 1) * FLAT, sizeof *flat)))
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    /* candidate k of the order on rank k mod size, until the budget is spent */
    for (size_t k = 0; !rc && k < nf; k++) {
        if ((int)(k % (size_t)w->size) != w->rank) continue;
        if (budget > 0 && lsim_now_s() - t0 > budget) break;
        lsim_search_cand *x = &c[order[k]];
        rc = fs ? lsim_search_from_eval(fs, x, o, err) : lsim_search_eval(sp, x, o, err);
        if (rc) break;
        int64_t *f = flat + order[k] * FLAT;
        f[0] = x->simulated ? 1 : 2;
        f[1] = x->step;
        for (int q = 0; q < 4; q++) f[2 + q] = x->bd[q];
        f[6] = (int64_t)(x->sim_s * 1e9);
        f[7] = x->reason;
        f[8] = (int64_t)x->mem_bytes;
        f[9] = rule_code(x->rule);
    }
    if (w->on) {
        int anybad = rc != 0;
        lsim_world_reduce(w, &anybad, 1, LSIM_W_INT, LSIM_W_MAX);
        if (anybad && !rc) rc = lsim_err_set(err, LSIM_EINTERNAL, "another rank failed");
        if (!anybad) lsim_world_reduce(w, flat, n * FLAT, LSIM_W_I64, LSIM_W_SUM);
        if (!anybad && fs) rc = share_whys(w, c, n, flat, rc, err);
    }
    for (size_t i = 0; !rc && i < n; i++) {
        const int64_t *f = flat + i * FLAT;
        if (!f[0]) continue; /* evaluated by no rank: as enumerated */
        c[i].simulated = f[0] == 1;
        c[i].step = f[1];
        for (int q = 0; q < 4; q++) c[i].bd[q] = f[2 + q];
        c[i].sim_s = (double)f[6] / 1e9;
        c[i].reason = (int)f[7];
        if (fs) c[i].mem_bytes = (double)f[8], c[i].rule = rule_name(f[9]);
    }
    lsim_free(flat);
    return rc;
}
