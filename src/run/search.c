/* Configuration search (include/lumosim/search.h, docs/search.md): the
 * space enumerated and checked, and one candidate synthesized and
 * simulated as a single data-parallel replica. */
#include "lumosim/search.h"
#include "lumosim/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "lumosim/report.h"
#include "lumosim/samples.h"

#define NAME_(id, name) name,
static const char *const REASON_NAMES[] = {LSIM_SEARCH_REASONS(NAME_)};
#undef NAME_

const char *lsim_search_reason_name(lsim_search_reason r) { return (unsigned)r < LSIM_SR_N ? REASON_NAMES[r] : "?"; }

void lsim_search_keep_memory(void)
{
#ifdef __GLIBC__
    /* glibc's defaults hand a freed block of more than 128 kB back to the
     * kernel (mmap, heap trimming; the threshold grows only to the blocks
     * last freed), so each candidate's graphs, all about the size of the
     * last one's, were faulted in page by page again (perf: a third of a
     * TP 2 PP 16 candidate's time in page faults; 16 GPT-3 175B candidates
     * 4.8 s of sys time, 1.0 s with this). 32 MiB is the largest mmap
     * threshold glibc takes. */
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
    (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

/* The data-parallel replicas a candidate of a MoE model is synthesized
 * with: the fewest whose stage holds whole EP x ETP blocks (each
 * all-to-all's group all there; synth_moe_check), 1 for a dense model. */
static int replicas_of(const lsim_synth_cfg *cfg)
{
    if (cfg->model.experts <= 0) return 1;
    long long blk = (long long)(cfg->ep > 1 ? cfg->ep : 1) * (cfg->etp > 1 ? cfg->etp : 1);
    long long a = (long long)cfg->tp * (cfg->cp > 1 ? cfg->cp : 1), x = blk, y = a;
    while (y) {
        long long t = x % y;
        x = y, y = t;
    }
    return (int)(blk / x); /* blk / gcd(blk, a): the least d with a d a multiple of blk */
}

void lsim_search_cfg(const lsim_search_space *s, const lsim_search_cand *c, int replica, lsim_synth_cfg *out)
{
    *out = s->base;
    out->tp = c->tp, out->pp = c->pp, out->micro_batch = c->mb, out->vstages = c->vstages;
    out->recompute = c->recompute, out->dist_opt = c->dist_opt;
    out->cp = c->cp > 1 ? c->cp : 0, out->ep = c->ep > 1 ? c->ep : 0, out->fsdp = c->fsdp;
    out->gpus = 0;
    /* the experts' groups take --dp-cost (moe.c), not one TP rank per
     * stage: a stage's TP ranks are members of its EP groups */
    if (out->model.experts > 0 && replica == LSIM_SEARCH_ONE_TP) replica = LSIM_SEARCH_REPLICA;
    out->mem_check = 0; /* memory is the search's own verdict (reason) */
    int d = replicas_of(out);
    if (replica && c->dp > d && c->dp % d == 0) {
        /* d replicas (one for a dense model): their per-replica batch, the
         * whole group's collectives */
        out->dp = d;
        out->dp_cost = c->dp;
        out->global_batch = s->base.global_batch / c->dp * d;
        lsim_err err;
        /* experts whose routing is drawn per EP group: no replica is the
         * others' (synth_moe_check says so), so the candidate runs whole */
        if (out->model.experts > 0 && lsim_synth_check(out, &err)) replica = LSIM_SEARCH_FULL;
    } else if (replica) {
        replica = c->dp > 1 ? LSIM_SEARCH_FULL : replica;
    }
    if (!replica || out->dp_cost == 0) {
        out->dp = c->dp;
        out->dp_cost = 0;
        out->global_batch = s->base.global_batch;
    }
    /* nobody reads a candidate's node names (synth.h) */
    out->terse_names = replica != LSIM_SEARCH_FULL;
    /* one TP rank per stage where that is exact (synth.h) */
    out->tp_one = replica == LSIM_SEARCH_ONE_TP && c->tp > 1 && out->cp <= 1 && lsim_synth_tp_one_exact(out);
}

/* Check one candidate: divisibility by synth's own check, memory by
 * memest.h on the full job (why: the replica's estimate is the same, but
 * the full job is what the user runs). */
static void check(const lsim_search_space *s, lsim_search_cand *c)
{
    lsim_synth_cfg cfg;
    lsim_err err = {0};
    if (c->dist_opt && c->dp == 1) {
        c->reason = LSIM_SR_REDUNDANT;
        snprintf(c->why, sizeof c->why, "the distributed optimizer at DP 1 is the plain one");
        return;
    }
    if (c->recompute == LSIM_RC_SELECTIVE && s->base.attention != LSIM_ATTN_UNFUSED) {
        /* flash attention keeps no s x s tensor and recomputes the scores
         * itself: selective recomputation is the job without it (synth and
         * memest.h alike) */
        c->reason = LSIM_SR_REDUNDANT;
        snprintf(c->why, sizeof c->why, "selective recomputation with flash attention is no recomputation");
        return;
    }
    if (c->fsdp == 1 && c->cp <= 1) {
        c->reason = LSIM_SR_REDUNDANT;
        snprintf(c->why, sizeof c->why, "FSDP over one GPU is the job without it");
        return;
    }
    if (c->fsdp && c->dist_opt) {
        c->reason = LSIM_SR_REDUNDANT;
        snprintf(c->why, sizeof c->why, "FSDP shards the optimizer state itself (no distributed optimizer with it)");
        return;
    }
    lsim_search_cfg(s, c, LSIM_SEARCH_FULL, &cfg);
    if (lsim_synth_check(&cfg, &err)) {
        c->reason = LSIM_SR_SHAPE;
        snprintf(c->why, sizeof c->why, "%.199s", err.msg);
        return;
    }
    lsim_synth_mem m;
    lsim_synth_memory(&cfg, &m);
    c->mem_bytes = m.total;
    c->mem_stage = m.stage;
    if (cfg.gpu.mem_capacity > 0 && m.total > cfg.gpu.mem_capacity) {
        c->reason = LSIM_SR_MEMORY;
        snprintf(c->why, sizeof c->why, "stage %d needs %.1f GB per GPU, the %s has %.1f GB", m.stage, m.total / 1e9,
                 cfg.gpu.name, cfg.gpu.mem_capacity / 1e9);
        return;
    }
    c->reason = LSIM_SR_OK;
}

/* One candidate of the enumeration: its layout, DP from the GPUs, checked. */
static void place(const lsim_search_space *s, lsim_search_cand *x, int tp, int pp, int mb, int V, int rc, int dopt, int cp,
                  int ep, int fsdp)
{
    x->tp = tp, x->pp = pp, x->mb = mb, x->vstages = V, x->recompute = rc, x->dist_opt = dopt;
    x->cp = cp, x->ep = ep;
    long tpp = (long)tp * pp * cp;
    if (tpp <= 0 || s->gpus % tpp) {
        x->reason = LSIM_SR_GPUS;
        snprintf(x->why, sizeof x->why, "TP x PP x CP = %ld does not divide %d GPUs", tpp, s->gpus);
        return;
    }
    x->dp = (int)(s->gpus / tpp);
    x->fsdp = fsdp == LSIM_SEARCH_FSDP_FULL ? x->dp : fsdp;
    check(s, x);
}

int lsim_search_enumerate(const lsim_search_space *s, lsim_search_cand **out, size_t *n, lsim_err *err)
{
    *out = NULL;
    *n = 0;
    int pps[LSIM_SEARCH_MAXV], npp = s->npp;
    if (npp) {
        memcpy(pps, s->pp, (size_t)npp * sizeof *pps);
    } else {
        for (int p = 1; p <= s->base.model.layers && npp < LSIM_SEARCH_MAXV; p++)
            if (s->base.model.layers % p == 0) pps[npp++] = p;
    }
    static const int one[1] = {1}, off[1] = {0};
    const int *cps = s->ncp ? s->cp : one, *eps = s->nep ? s->ep : one, *fss = s->nfsdp ? s->fsdp : off;
    int ncp = s->ncp ? s->ncp : 1, nep = s->nep ? s->nep : 1, nfs = s->nfsdp ? s->nfsdp : 1;
    if (s->gpus <= 0 || !s->ntp || !npp || !s->nmb || !s->nvst || !s->nrc || !s->ndopt)
        return lsim_err_set(err, LSIM_EARG, "the search space is empty (every dimension needs a value, and --gpus N)");
    size_t total = (size_t)s->ntp * (size_t)npp * (size_t)s->nmb * (size_t)s->nvst * (size_t)s->nrc * (size_t)s->ndopt *
                   (size_t)ncp * (size_t)nep * (size_t)nfs;
    lsim_search_cand *c = lsim_calloc(total, sizeof *c);
    if (!c) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    size_t k = 0;
    for (int a = 0; a < s->ntp; a++)
        for (int b = 0; b < npp; b++)
            for (int m = 0; m < s->nmb; m++)
                for (int v = 0; v < s->nvst; v++)
                    for (int r = 0; r < s->nrc; r++)
                        for (int o = 0; o < s->ndopt; o++)
                            for (size_t q = 0; q < (size_t)ncp * nep * nfs; q++)
                                place(s, &c[k++], s->tp[a], pps[b], s->mb[m], s->vst[v], s->rc[r], s->dopt[o],
                                      cps[q / ((size_t)nep * nfs)], eps[q / nfs % nep], fss[q % nfs]);
    *out = c;
    *n = k;
    return 0;
}

int lsim_search_measure(const lsim_run_opts *o, lsim_run *r, lsim_search_cand *c, lsim_err *err)
{
    int rc = lsim_run_simulate(o, r, err);
    if (!rc) {
        lsim_ns a;
        lsim_report_job_span(r->items, r->n, &a, &c->step);
        lsim_run_mean_breakdown(r, c->bd);
        c->simulated = 1;
    }
    return rc;
}

int lsim_search_eval(const lsim_search_space *s, lsim_search_cand *c, const lsim_run_opts *o, lsim_err *err)
{
    double t0 = lsim_now_s();
    lsim_synth_cfg cfg;
    lsim_search_cfg(s, c, LSIM_SEARCH_ONE_TP, &cfg);
    size_t ng = lsim_synth_ngpus(&cfg);
    lsim_graph **gs = lsim_calloc(ng ? ng : 1, sizeof *gs);
    lsim_run r;
    memset(&r, 0, sizeof r);
    int rc = gs ? 0 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (!rc) rc = lsim_synth_job(&cfg, gs, err);
    if (!rc) {
        rc = lsim_run_add_graphs(&r, gs, ng, "search", err); /* r owns them */
        memset(gs, 0, ng * sizeof *gs);
    }
    if (!rc) rc = lsim_search_measure(o, &r, c, err);
    for (size_t i = 0; gs && i < ng; i++) lsim_graph_free(gs[i]);
    free(gs);
    lsim_run_free(&r);
    c->sim_s = lsim_now_s() - t0;
    return rc;
}

int lsim_search_interval(const lsim_search_space *s, const lsim_search_cand *c, const lsim_run_opts *o,
                         uint64_t samples, uint64_t seed, double spread, lsim_ns q[3], lsim_pools_info *info,
                         lsim_err *err)
{
    lsim_synth_cfg cfg;
    /* every TP rank: each draws its own noise, and a TP collective waits
     * for the slowest */
    lsim_search_cfg(s, c, LSIM_SEARCH_REPLICA, &cfg);
    size_t ng = lsim_synth_ngpus(&cfg);
    lsim_graph **gs = lsim_calloc(ng ? ng : 1, sizeof *gs);
    lsim_sample *out = lsim_calloc(samples ? samples : 1, sizeof *out);
    lsim_ns *v = lsim_malloc((samples ? samples : 1) * sizeof *v);
    lsim_pools *P = NULL;
    int rc = gs && out && v ? 0 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (!rc) rc = lsim_synth_job(&cfg, gs, err);
    for (uint64_t k = 0; !rc && k < samples; k++)
        if (!(out[k].window = lsim_malloc((ng ? ng : 1) * sizeof *out[k].window)) ||
            !(out[k].iter = lsim_malloc((ng ? ng : 1) * sizeof *out[k].iter)))
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (!rc) rc = lsim_pools_new(gs, ng, LSIM_POOL_JOB, &P, err);
    if (!rc) lsim_pools_modelled(P, spread);
    if (!rc) rc = lsim_samples_run(o, gs, ng, 1, P, seed, 0, samples, out, err);
    if (!rc) {
        for (uint64_t k = 0; k < samples; k++) v[k] = out[k].job;
        q[0] = lsim_samples_percentile(v, samples, 5);
        q[1] = lsim_samples_percentile(v, samples, 50);
        q[2] = lsim_samples_percentile(v, samples, 95);
        lsim_pools_get_info(P, info);
    }
    lsim_pools_free(P);
    for (uint64_t k = 0; out && k < samples; k++) free(out[k].window), free(out[k].iter);
    for (size_t i = 0; gs && i < ng; i++) lsim_graph_free(gs[i]);
    free(out);
    free(v);
    free(gs);
    return rc;
}
