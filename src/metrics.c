/* Replay measurements (see metrics.h). Everything here is computed twice
 * from the same node set: once from observed times, once from simulated
 * times, so actual and predicted figures are defined identically. */
#include "lumosim/metrics.h"
#include "lumosim/alloc.h"
#include "lumosim/job.h"

#include <stdlib.h>
#include <string.h>

size_t lsim_metrics_observed_nodes(const lsim_graph *g)
{
    size_t k = 0;
    for (size_t v = 0; v < g->n; v++)
        if (g->obs_start[v] != LSIM_OBS_NONE) k++;
    return k;
}

int lsim_report_observed(const lsim_rank_report *r)
{
    return r->window_actual > 0;
}

/* Counted from the columns, not kept as a graph scalar, so that every graph
 * (built, loaded from a store, what-if) reports what its replay really read. */
size_t lsim_metrics_prewindow_released(const lsim_graph *g)
{
    size_t k = 0;
    for (size_t v = 0; v < g->n; v++)
        if ((g->flags[v] & LSIM_NF_PREWINDOW) && g->release[v] != INT64_MIN) k++;
    return k;
}

double lsim_rel_err(lsim_ns actual, lsim_ns predicted)
{
    if (actual == 0) return 0.0;
    return ((double)predicted - (double)actual) / (double)actual;
}

typedef struct pt {
    lsim_ns t;
    int8_t comm; /* 0 compute, 1 comm transferring, 2 comm waiting */
    int8_t d;    /* +1 open, -1 close */
} pt;

/* Sweep order: by time; at equal times closes first (touching intervals
 * do not overlap), then by category. */
static inline int pt_less(const pt *a, const pt *b)
{
    if (a->t != b->t) return a->t < b->t;
    if (a->d != b->d) return a->d < b->d;
    return a->comm < b->comm;
}

/* Sort points in sweep order: runs of 32 by insertion, then
 * bottom-up merges between pts and tmp (np elements each). Points with equal
 * keys are equal, so the result is the one qsort gives; but qsort's
 * callback per comparison made sorting most of the metrics' time on large
 * jobs (about 2 x 10^8 points for a 4,096-GPU GPT-3 job), and the points
 * come in long sorted runs (each stream in order) that merge cheaply. */
static void sort_pts(pt *pts, pt *tmp, size_t np)
{
    const size_t RUN = 32;
    for (size_t lo = 0; lo < np; lo += RUN) {
        size_t hi = lo + RUN < np ? lo + RUN : np;
        for (size_t i = lo + 1; i < hi; i++) {
            pt x = pts[i];
            size_t j = i;
            while (j > lo && pt_less(&x, &pts[j - 1])) {
                pts[j] = pts[j - 1];
                j--;
            }
            pts[j] = x;
        }
    }
    pt *src = pts, *dst = tmp;
    for (size_t w = RUN; w < np; w *= 2) {
        for (size_t lo = 0; lo < np; lo += 2 * w) {
            size_t mid = lo + w < np ? lo + w : np, hi = lo + 2 * w < np ? lo + 2 * w : np;
            size_t i = lo, j = mid, k = lo;
            if (mid == hi || !pt_less(&src[mid], &src[mid - 1])) { /* already in order */
                memcpy(dst + lo, src + lo, (hi - lo) * sizeof *src);
                continue;
            }
            while (i < mid && j < hi) dst[k++] = pt_less(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        pt *t = src;
        src = dst;
        dst = t;
    }
    if (src != pts) memcpy(pts, src, np * sizeof *pts);
}

/* One stretch of len ns with nc compute, nm transferring and nw waiting
 * collectives running, into bd (its `other` is derived at the end). */
static inline void bd_acc(lsim_breakdown *bd, long nc, long nm, long nw, lsim_ns len)
{
    if (nc > 0 && nm + nw > 0) bd->overlapped += len;
    else if (nc > 0) bd->exposed_compute += len;
    else if (nm + nw > 0) {
        bd->exposed_comm += len;
        if (nm == 0) bd->exposed_comm_wait += len;
    }
}

/* Sweep the GPU intervals of the selected nodes (sorted here, with tmp as
 * room for np points); fills the breakdown over [s0, s1), if bins is given
 * adds per-bin active time, and if nparts > 0 fills parts[k], the breakdown
 * over [bounds[k], bounds[k + 1]) (bounds: nparts + 1 non-decreasing times
 * from s0 to s1), in the same pass: one sort for the window and all its
 * iterations, so the parts add up to the whole by construction. */
static void sweep(pt *pts, pt *tmp, size_t np, lsim_ns s0, lsim_ns s1, lsim_breakdown *bd, double *bins,
                  uint32_t nbins, lsim_ns bin_ns, const lsim_ns *bounds, lsim_breakdown *parts, uint32_t nparts)
{
    sort_pts(pts, tmp, np);
    long nc = 0, nm = 0, nw = 0;
    lsim_ns prev = s0;
    uint32_t part = 0;
    memset(bd, 0, sizeof *bd);
    if (nparts) memset(parts, 0, nparts * sizeof *parts);
    for (size_t i = 0; i <= np; i++) {
        lsim_ns t = i < np ? pts[i].t : s1;
        if (t < s0) t = s0;
        if (t > s1) t = s1;
        if (t > prev) {
            bd_acc(bd, nc, nm, nw, t - prev);
            for (lsim_ns a = prev; nparts && a < t && (nc > 0 || nm + nw > 0);) {
                while (part + 1 < nparts && bounds[part + 1] <= a) part++;
                lsim_ns b = part + 1 < nparts && bounds[part + 1] < t ? bounds[part + 1] : t;
                bd_acc(&parts[part], nc, nm, nw, b - a);
                a = b;
            }
            if (bins && (nc > 0 || nm + nw > 0)) {
                lsim_ns a = prev;
                while (a < t) {
                    uint32_t k = (uint32_t)((a - s0) / bin_ns);
                    if (k >= nbins) break;
                    lsim_ns be = s0 + (lsim_ns)(k + 1) * bin_ns;
                    lsim_ns bend = be < t ? be : t;
                    bins[k] += (double)(bend - a);
                    a = bend;
                }
            }
            prev = t;
        }
        if (i < np) {
            if (pts[i].comm == 1) nm += pts[i].d;
            else if (pts[i].comm == 2) nw += pts[i].d;
            else nc += pts[i].d;
        }
    }
    bd->other = (s1 - s0) - bd->exposed_compute - bd->exposed_comm - bd->overlapped;
    for (uint32_t k = 0; k < nparts; k++)
        parts[k].other = (bounds[k + 1] - bounds[k]) - parts[k].exposed_compute - parts[k].exposed_comm - parts[k].overlapped;
}

static int cmp_ns(const void *a, const void *b)
{
    lsim_ns x = *(const lsim_ns *)a, y = *(const lsim_ns *)b;
    return (x > y) - (x < y);
}

/* The nearest-rank distribution of v[0..n) (metrics.h), sorting v. */
static lsim_err_dist err_dist(lsim_ns *v, size_t n)
{
    lsim_err_dist d = {0, 0, 0, 0};
    if (!n) return d;
    qsort(v, n, sizeof *v, cmp_ns);
    d.n = n;
    d.median = v[(50 * (uint64_t)n + 99) / 100 - 1];
    d.p90 = v[(90 * (uint64_t)n + 99) / 100 - 1];
    d.max = v[n - 1];
    return d;
}

double lsim_metrics_duty_diff(const lsim_rank_report *r)
{
    uint32_t na = r->duty_actual ? r->nbins_actual : 0, np = r->duty_predicted ? r->nbins_predicted : 0;
    uint32_t nb = na > np ? na : np;
    double s = 0;
    for (uint32_t k = 0; k < nb; k++) {
        double a = k < na ? r->duty_actual[k] : 0.0, p = k < np ? r->duty_predicted[k] : 0.0;
        s += a > p ? a - p : p - a;
    }
    return nb ? s / nb : 0.0;
}

/* The partition's boundaries (metrics.h) from each step's earliest GPU
 * start first[i] (INT64_MAX: none): b[0..n] over the window [s0, s1].
 * Backwards, so that a step without GPU work, or whose work starts after
 * the next step's, takes the next boundary and gets a row of 0. first and
 * b may be the same array (first[i] is read before b[i] is written;
 * first[0] is not used: row 0 starts at the window start). */
static void partition(const lsim_ns *first, uint32_t n, lsim_ns s0, lsim_ns s1, lsim_ns *b)
{
    b[n] = s1;
    for (uint32_t i = n; i-- > 1;) b[i] = first[i] < b[i + 1] ? first[i] : b[i + 1];
    if (n) b[0] = s0; /* first[i] >= s0: the window holds every node */
}

void lsim_rank_report_clear(lsim_rank_report *r)
{
    if (!r) return;
    free(r->iters);
    free(r->duty_actual);
    if (!r->duty_predicted_borrowed) free(r->duty_predicted);
    memset(r, 0, sizeof *r);
}

/* The sweep points of GPU node v: a collective with a known wait w is a
 * waiting interval [s, s+w) and a transferring one [s+w, e). A pipeline
 * send or receive that waits for its peer is a bubble: the stage has
 * nothing to do until the other stage gets there, so its waiting counts as
 * idle ("other"), not as communication (issue 15; docs/synthesis.md). */
static size_t add_points(pt *pts, size_t np, const lsim_graph *g, size_t v, lsim_ns s, lsim_ns e, const lsim_ns *wait)
{
    if (!(g->flags[v] & LSIM_NF_COLL)) {
        pts[np++] = (pt){s, 0, 1};
        pts[np++] = (pt){e, 0, -1};
        return np;
    }
    lsim_ns w = wait ? wait[v] : 0;
    if (w < 0) w = 0;
    if (w > e - s) w = e - s;
    int k = g->coll[v] >= 0 ? g->colls[g->coll[v]].kind : LSIM_COLL_NONE;
    if (w > 0 && (k == LSIM_COLL_SEND || k == LSIM_COLL_RECV || k == LSIM_COLL_SENDRECV)) {
        pts[np++] = (pt){s + w, 1, 1};
        pts[np++] = (pt){e, 1, -1};
        return np;
    }
    if (w > 0) {
        pts[np++] = (pt){s, 2, 1};
        pts[np++] = (pt){s + w, 2, -1};
    }
    pts[np++] = (pt){s + w, 1, 1};
    pts[np++] = (pt){e, 1, -1};
    return np;
}

int lsim_metrics_compute(const lsim_graph *g, const lsim_ns *start, const lsim_ns *end, lsim_ns bin_ns,
                         lsim_rank_report *out, lsim_err *err)
{
    return lsim_metrics_compute_ex(g, start, end, bin_ns, NULL, NULL, out, err);
}

int lsim_metrics_compute_ex(const lsim_graph *g, const lsim_ns *start, const lsim_ns *end, lsim_ns bin_ns,
                            const lsim_ns *obs_wait, const lsim_ns *pred_wait, lsim_rank_report *out, lsim_err *err)
{
    int rc = 0;
    lsim_ns *errs = NULL;
    lsim_breakdown *parts = NULL;
    memset(out, 0, sizeof *out);
    if (bin_ns <= 0) bin_ns = 1000000;
    out->bin_ns = bin_ns;
    size_t ngpu = 0, nobs_all = lsim_metrics_observed_nodes(g);
    for (size_t v = 0; v < g->n; v++)
        if (g->procs[g->proc[v]].is_gpu) ngpu++;
    size_t ni = g->niters ? g->niters : 1;
    pt *pts = lsim_malloc((4 * ngpu + 1) * sizeof *pts), *tmp = lsim_malloc((4 * ngpu + 1) * sizeof *tmp);
    out->iters = lsim_calloc(ni, sizeof *out->iters);
    /* per iteration: CPU span actual (min, max), predicted (min, max), then
     * the earliest GPU start actual, predicted; boundaries: 2 x (n + 1) */
    lsim_ns *is = lsim_malloc(ni * 6 * sizeof *is), *bnd = lsim_malloc((ni + 1) * 2 * sizeof *bnd);
    parts = lsim_malloc(ni * sizeof *parts);
    /* |start error| of the observed nodes: GPU ones from the front, CPU
     * ones from the back */
    errs = lsim_malloc((nobs_all ? nobs_all : 1) * sizeof *errs);
    if (!pts || !tmp || !out->iters || !is || !bnd || !parts || !errs) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory computing metrics", g->source);
        goto cleanup;
    }
    out->niters = g->niters;
    out->gpu_nodes = ngpu;

    lsim_ns as = INT64_MAX, ae = INT64_MIN, ps = INT64_MAX, pe = INT64_MIN;
    for (uint32_t i = 0; i < g->niters; i++) {
        lsim_ns *x = &is[6 * i];
        x[0] = x[2] = x[4] = x[5] = INT64_MAX;
        x[1] = x[3] = INT64_MIN;
    }
    size_t nobs = 0, ngerr = 0, ncerr = 0;
    for (size_t v = 0; v < g->n; v++) {
        /* Every difference below is of two times within +-LSIM_TIME_MAX,
         * which int64 holds; observed times are checked when the graph is
         * made (graph.h), simulated ones here: a job whose paths add up
         * past int64 saturates in the engine and is refused, rather than
         * reported with a wrapped window or duty cycle. */
        if (start[v] < -LSIM_TIME_MAX || start[v] > LSIM_TIME_MAX || end[v] < -LSIM_TIME_MAX || end[v] > LSIM_TIME_MAX) {
            rc = lsim_err_set(err, LSIM_EFORMAT,
                              "%s: node %zu is simulated to [%lld, %lld] ns, outside +-(2^62 - 1) ns: the job's "
                              "durations and delays add up past the range of int64 times",
                              g->source, v, (long long)start[v], (long long)end[v]);
            goto cleanup;
        }
        if (start[v] < ps) ps = start[v];
        if (end[v] > pe) pe = end[v];
        int32_t it = g->iter[v];
        int gpu = g->procs[g->proc[v]].is_gpu;
        lsim_ns *x = it >= 0 ? &is[6 * it] : NULL;
        if (x && gpu && start[v] < x[5]) x[5] = start[v];
        if (x && !gpu) {
            if (start[v] < x[2]) x[2] = start[v];
            if (end[v] > x[3]) x[3] = end[v];
        }
        if (g->obs_start[v] == LSIM_OBS_NONE) continue; /* never observed: no actual, no error */
        nobs++;
        if (g->obs_start[v] < as) as = g->obs_start[v];
        if (g->obs_end[v] > ae) ae = g->obs_end[v];
        lsim_ns ds = start[v] - g->obs_start[v], de = end[v] - g->obs_end[v];
        if (ds < 0) ds = -ds;
        if (de < 0) de = -de;
        if (ds > out->max_abs_start_err) out->max_abs_start_err = ds;
        if (de > out->max_abs_end_err) out->max_abs_end_err = de;
        if (ds == 0 && de == 0) out->nodes_exact++;
        if (gpu) errs[ngerr++] = ds;
        else errs[nobs_all - ++ncerr] = ds;
        if (x && gpu && g->obs_start[v] < x[4]) x[4] = g->obs_start[v];
        if (x && !gpu) {
            if (g->obs_start[v] < x[0]) x[0] = g->obs_start[v];
            if (g->obs_end[v] > x[1]) x[1] = g->obs_end[v];
        }
    }
    if (g->n == 0) as = ae = ps = pe = 0;
    if (nobs == 0) as = ae = 0;
    out->window_actual_start = as;
    out->window_predicted_start = ps;
    out->window_actual = ae - as;
    out->window_predicted = pe - ps;
    if (nobs) {
        out->has_fidelity = 1;
        out->start_err_gpu = err_dist(errs, ngerr);
        out->start_err_cpu = err_dist(errs + nobs_all - ncerr, ncerr);
    }

    {
        /* bins are sized by the window: refuse sizes no trace window has */
        const lsim_ns max_bins = 50 * 1000 * 1000;
        lsim_ns nba = (out->window_actual + bin_ns - 1) / bin_ns, nbp = (out->window_predicted + bin_ns - 1) / bin_ns;
        if (nba > max_bins || nbp > max_bins) {
            rc = lsim_err_set(err, LSIM_EARG, "%s: %lld duty-cycle bins of %lld ns needed (window %.3f s): use a larger --bin-ms",
                              g->source, (long long)(nba > nbp ? nba : nbp), (long long)bin_ns,
                              (double)(out->window_actual > out->window_predicted ? out->window_actual : out->window_predicted) / 1e9);
            goto cleanup;
        }
        out->nbins_actual = (uint32_t)nba;
        out->nbins_predicted = (uint32_t)nbp;
    }
    out->duty_actual = lsim_calloc(out->nbins_actual + 1, sizeof(double));
    out->duty_predicted = lsim_calloc(out->nbins_predicted + 1, sizeof(double));
    if (!out->duty_actual || !out->duty_predicted) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory computing metrics", g->source);
        goto cleanup;
    }
    for (int pass = 0; pass < 2; pass++) {
        const lsim_ns *S = pass ? start : g->obs_start;
        const lsim_ns *E = pass ? end : g->obs_end;
        size_t np = 0;
        const lsim_ns *W = pass ? pred_wait : obs_wait;
        for (size_t v = 0; v < g->n; v++)
            if (g->procs[g->proc[v]].is_gpu && (pass || g->obs_start[v] != LSIM_OBS_NONE))
                np = add_points(pts, np, g, v, S[v], E[v], W);
        double *bins = pass ? out->duty_predicted : out->duty_actual;
        uint32_t nb = pass ? out->nbins_predicted : out->nbins_actual;
        lsim_ns s0 = pass ? ps : as, s1 = pass ? pe : ae;
        /* the iterations' rows: the GPU partition of this side's window */
        lsim_ns *b = &bnd[pass * (ni + 1)];
        for (uint32_t i = 0; i < g->niters; i++) b[i] = is[6 * i + 4 + pass];
        partition(b, g->niters, s0, s1, b);
        sweep(pts, tmp, np, s0, s1, pass ? &out->bd_predicted : &out->bd_actual, bins, nb, bin_ns, b, parts,
              g->niters);
        for (uint32_t i = 0; i < g->niters; i++) {
            if (pass) out->iters[i].bd_predicted = parts[i];
            else out->iters[i].bd_actual = parts[i];
        }
        for (uint32_t k = 0; k < nb; k++) {
            lsim_ns blen = bin_ns;
            if (k == nb - 1 && (s1 - s0) % bin_ns) blen = (s1 - s0) % bin_ns;
            bins[k] /= (double)blen;
        }
    }
    if (nobs) out->duty_abs_diff = lsim_metrics_duty_diff(out);
    for (uint32_t i = 0; i < g->niters; i++) {
        lsim_iter_report *r = &out->iters[i];
        const lsim_ns *x = &is[6 * i];
        r->name = g->iters[i].name;
        r->actual = bnd[i + 1] - bnd[i];
        r->predicted = bnd[(ni + 1) + i + 1] - bnd[(ni + 1) + i];
        r->cpu_actual = x[0] <= x[1] ? x[1] - x[0] : 0;
        r->cpu_predicted = x[2] <= x[3] ? x[3] - x[2] : 0;
    }
cleanup:
    free(pts);
    free(tmp);
    free(is);
    free(bnd);
    free(parts);
    free(errs);
    if (rc) lsim_rank_report_clear(out);
    return rc;
}

/* A wait clamped to [0, d], as the breakdown's sweep clamps it. */
static lsim_ns clamp_wait(const lsim_ns *wait, size_t v, lsim_ns d)
{
    lsim_ns w = wait ? wait[v] : 0;
    return w < 0 ? 0 : w > d ? d : w;
}

void lsim_metrics_coupling(const lsim_graph *g, const int32_t *inst_of, const lsim_ns *start, const lsim_ns *end,
                           const lsim_ns *obs_wait, const lsim_ns *pred_wait, lsim_rank_report *r)
{
    /* Why here and not in the engine: a job can report "coupled" while part
     * of its collectives (point-to-point kernels whose peers the trace does
     * not name) were replayed with their traced durations; the counts per
     * kind say how much of the communication the coupling really covers,
     * and the times per kind how much of it was waiting for the group's
     * last arrival rather than moving data (issue 16). Sums saturate
     * (lsim_ns_add_sat): within the graph's bounds they never do. */
    memset(r->coll_coupled, 0, sizeof r->coll_coupled);
    memset(r->coll_traced, 0, sizeof r->coll_traced);
    memset(r->coll_time_actual, 0, sizeof r->coll_time_actual);
    memset(r->coll_wait_actual, 0, sizeof r->coll_wait_actual);
    memset(r->coll_time_predicted, 0, sizeof r->coll_time_predicted);
    memset(r->coll_wait_predicted, 0, sizeof r->coll_wait_predicted);
    for (size_t v = 0; v < g->n; v++) {
        if (g->kind[v] != LSIM_N_KERNEL || g->coll[v] < 0 || (size_t)g->coll[v] >= g->ncoll) continue;
        unsigned k = g->colls[g->coll[v]].kind;
        if (k >= LSIM_COLL_NKINDS || k == LSIM_COLL_NONE) continue;
        if (lsim_job_inst(inst_of, g, v) >= 0) r->coll_coupled[k]++;
        else r->coll_traced[k]++;
        if (start && end) {
            lsim_ns d = end[v] - start[v] > 0 ? end[v] - start[v] : 0;
            r->coll_time_predicted[k] = lsim_ns_add_sat(r->coll_time_predicted[k], d);
            r->coll_wait_predicted[k] = lsim_ns_add_sat(r->coll_wait_predicted[k], clamp_wait(pred_wait, v, d));
        }
        if (g->obs_start[v] != LSIM_OBS_NONE && g->obs_end[v] != LSIM_OBS_NONE) {
            lsim_ns d = g->obs_end[v] - g->obs_start[v] > 0 ? g->obs_end[v] - g->obs_start[v] : 0;
            r->coll_time_actual[k] = lsim_ns_add_sat(r->coll_time_actual[k], d);
            r->coll_wait_actual[k] = lsim_ns_add_sat(r->coll_wait_actual[k], clamp_wait(obs_wait, v, d));
        }
    }
    r->has_coupling = 1;
    r->has_coll_time = start && end;
}
