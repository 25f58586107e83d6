/* The figures of a rank report (metrics.h) recomputed with oracle.h from a
 * graph and its observed and simulated times, and the comparison with what
 * lsim_metrics_compute_ex reported. For tests (include check.h first). */
#ifndef LSIM_TEST_ORACLE_REPORT_H
#define LSIM_TEST_ORACLE_REPORT_H

#include <inttypes.h>
#include <stdio.h>

#include "oracle.h"

#include "lumosim/graph.h"
#include "lumosim/metrics.h"

#define MAXIT 64
typedef struct ref_report {
    or_ns win[2], win_start[2];
    or_breakdown bd[2];
    uint32_t niters;
    or_ns it[2][MAXIT];
    or_breakdown ibd[2][MAXIT];
    size_t nbins[2];
    double *duty[2];
    or_ns max_err_start, max_err_end;
    uint64_t exact;
    or_ns cpu[2][MAXIT];
    /* start-error distributions, [0] GPU [1] CPU: n, median, p90, max */
    uint64_t en[2];
    or_ns emed[2], ep90[2], emax[2];
    double duty_diff;
} ref_report;

static void ref_free(ref_report *r)
{
    free(r->duty[0]);
    free(r->duty[1]);
}

static int ref_cmp_ns(const void *x, const void *y)
{
    or_ns a = *(const or_ns *)x, b = *(const or_ns *)y;
    return a < b ? -1 : a > b;
}

/* Nearest rank, stated as metrics.h's reader would: the smallest value x of
 * the (sorted) list such that at least p % of the values are <= x. */
static or_ns ref_rank(const or_ns *v, size_t n, unsigned p)
{
    for (size_t i = 0; i < n; i++) {
        size_t le = i + 1;
        while (le < n && v[le] == v[i]) le++; /* values <= v[i] */
        if ((uint64_t)le * 100 >= (uint64_t)p * n) return v[i];
        i = le - 1;
    }
    return 0;
}

/* The figures metrics.h defines, from the graph and the time arrays alone:
 * pass 0 observed (observed nodes only), pass 1 predicted (every node). */
static int ref_compute(const lsim_graph *g, const lsim_ns *S, const lsim_ns *E, lsim_ns bin, const lsim_ns *ow,
                       const lsim_ns *pw, ref_report *r)
{
    memset(r, 0, sizeof *r);
    r->niters = g->niters;
    if (g->niters > MAXIT) return -1;
    or_ns *errs[2] = {malloc((g->n + 1) * sizeof(or_ns)), malloc((g->n + 1) * sizeof(or_ns))};
    if (!errs[0] || !errs[1]) {
        free(errs[0]);
        free(errs[1]);
        return -1;
    }
    for (size_t v = 0; v < g->n; v++) {
        if (g->obs_start[v] == LSIM_OBS_NONE) continue;
        or_ns ds = S[v] - g->obs_start[v], de = E[v] - g->obs_end[v];
        ds = ds < 0 ? -ds : ds;
        de = de < 0 ? -de : de;
        if (ds > r->max_err_start) r->max_err_start = ds;
        if (de > r->max_err_end) r->max_err_end = de;
        if (!ds && !de) r->exact++;
        int c = g->procs[g->proc[v]].is_gpu ? 0 : 1;
        errs[c][r->en[c]++] = ds;
    }
    for (int c = 0; c < 2; c++) {
        qsort(errs[c], r->en[c], sizeof(or_ns), ref_cmp_ns);
        r->emed[c] = ref_rank(errs[c], r->en[c], 50);
        r->ep90[c] = ref_rank(errs[c], r->en[c], 90);
        r->emax[c] = r->en[c] ? errs[c][r->en[c] - 1] : 0;
        free(errs[c]);
    }
    for (int pass = 0; pass < 2; pass++) {
        const lsim_ns *s = pass ? S : g->obs_start, *e = pass ? E : g->obs_end, *w = pass ? pw : ow;
        /* span: over the nodes of the pass (any kind); a step's CPU span
         * over its CPU nodes, and its first GPU start */
        or_ns lo = INT64_MAX, hi = INT64_MIN, ilo[MAXIT], ihi[MAXIT], first[MAXIT];
        for (uint32_t i = 0; i < g->niters; i++) ilo[i] = first[i] = INT64_MAX, ihi[i] = INT64_MIN;
        for (size_t v = 0; v < g->n; v++) {
            if (!pass && g->obs_start[v] == LSIM_OBS_NONE) continue;
            if (s[v] < lo) lo = s[v];
            if (e[v] > hi) hi = e[v];
            int32_t it = g->iter[v];
            if (it >= 0 && g->procs[g->proc[v]].is_gpu) {
                if (s[v] < first[it]) first[it] = s[v];
            } else if (it >= 0) {
                if (s[v] < ilo[it]) ilo[it] = s[v];
                if (e[v] > ihi[it]) ihi[it] = e[v];
            }
        }
        if (lo > hi) lo = hi = 0;
        /* row i of the GPU partition: from the earliest first GPU start of
         * steps i.. (the window start for step 0) to that of steps i+1..
         * (the window end after the last), never past the window end */
        or_ns rs[MAXIT + 1];
        for (uint32_t i = 0; i <= g->niters; i++) {
            or_ns m = hi;
            for (uint32_t j = i; j < g->niters; j++)
                if (first[j] < m) m = first[j];
            rs[i] = i == 0 ? lo : m;
        }
        for (uint32_t i = 0; i < g->niters; i++) r->cpu[pass][i] = ilo[i] <= ihi[i] ? ihi[i] - ilo[i] : 0;
        r->win[pass] = hi - lo;
        r->win_start[pass] = lo;
        r->nbins[pass] = (size_t)((hi - lo + bin - 1) / bin);
        r->duty[pass] = calloc(r->nbins[pass] + 1, sizeof(double));
        if (!r->duty[pass]) return -1;
        for (int32_t i = -1; i < (int32_t)g->niters; i++) { /* -1: the whole window */
            or_input in = {0};
            or_ns a = i < 0 ? lo : rs[i], b = i < 0 ? hi : rs[i + 1];
            for (size_t v = 0; v < g->n; v++) {
                if (!g->procs[g->proc[v]].is_gpu || (!pass && g->obs_start[v] == LSIM_OBS_NONE)) continue;
                /* a pipeline send/recv waiting for its peer is a bubble: its
                 * waiting is in no set (idle), only its transfer counts */
                int k = g->coll[v] >= 0 ? g->colls[g->coll[v]].kind : LSIM_COLL_NONE;
                int p2p = k == LSIM_COLL_SEND || k == LSIM_COLL_RECV || k == LSIM_COLL_SENDRECV;
                or_ns wv = w ? w[v] : 0, sv = s[v];
                if (p2p && wv > 0) sv = s[v] + (wv < e[v] - s[v] ? wv : e[v] - s[v]), wv = 0;
                if (or_add(&in, (g->flags[v] & LSIM_NF_COLL) != 0, sv, e[v], wv)) return -1;
            }
            int rc = or_compute(&in, a, b, i < 0 ? &r->bd[pass] : &r->ibd[pass][i], i < 0 ? r->duty[pass] : NULL,
                                i < 0 ? r->nbins[pass] : 0, bin);
            or_input_free(&in);
            if (rc) return -1;
            if (i >= 0) r->it[pass][i] = b - a;
        }
    }
    size_t nb = r->nbins[0] > r->nbins[1] ? r->nbins[0] : r->nbins[1];
    for (size_t k = 0; k < nb; k++) {
        double x = (k < r->nbins[0] ? r->duty[0][k] : 0) - (k < r->nbins[1] ? r->duty[1][k] : 0);
        r->duty_diff += x < 0 ? -x : x;
    }
    if (nb) r->duty_diff /= (double)nb;
    return 0;
}

static int same_bd(const lsim_breakdown *m, const or_breakdown *o, int with_wait)
{
    return m->exposed_compute == o->exposed_compute && m->overlapped == o->overlapped &&
           m->exposed_comm == o->exposed_comm && m->other == o->other &&
           (!with_wait || m->exposed_comm_wait == o->exposed_comm_wait);
}

#define BD_FMT "compute %" PRId64 " overlapped %" PRId64 " comm %" PRId64 " other %" PRId64 " wait %" PRId64
#define BD_M(x) (int64_t)(x).exposed_compute, (int64_t)(x).overlapped, (int64_t)(x).exposed_comm, (int64_t)(x).other, \
                (int64_t)(x).exposed_comm_wait

/* metrics' report against the oracle's; returns the number of mismatches */
static int compare_report(const char *what, const lsim_rank_report *m, const ref_report *r)
{
    int bad = 0;
#define EXPECT(cond, ...)                    \
    do {                                     \
        if (!(cond)) {                       \
            bad++;                           \
            CHECK_MSG(cond, __VA_ARGS__);    \
        }                                    \
    } while (0)
    EXPECT(m->window_actual == r->win[0] && m->window_predicted == r->win[1], "%s: window %lld/%lld, oracle %lld/%lld",
           what, (long long)m->window_actual, (long long)m->window_predicted, (long long)r->win[0], (long long)r->win[1]);
    EXPECT(m->window_actual_start == r->win_start[0] && m->window_predicted_start == r->win_start[1], "%s: window start",
           what);
    EXPECT(same_bd(&m->bd_actual, &r->bd[0], 1), "%s: actual breakdown " BD_FMT ", oracle " BD_FMT, what, BD_M(m->bd_actual),
           BD_M(r->bd[0]));
    EXPECT(same_bd(&m->bd_predicted, &r->bd[1], 1), "%s: predicted breakdown " BD_FMT ", oracle " BD_FMT, what,
           BD_M(m->bd_predicted), BD_M(r->bd[1]));
    EXPECT(m->niters == r->niters, "%s: %u iterations, oracle %u", what, m->niters, r->niters);
    for (uint32_t i = 0; i < m->niters && i < r->niters; i++) {
        EXPECT(m->iters[i].actual == r->it[0][i] && m->iters[i].predicted == r->it[1][i],
               "%s: iteration %u %lld/%lld, oracle %lld/%lld", what, i, (long long)m->iters[i].actual,
               (long long)m->iters[i].predicted, (long long)r->it[0][i], (long long)r->it[1][i]);
        EXPECT(same_bd(&m->iters[i].bd_actual, &r->ibd[0][i], 1), "%s: iteration %u actual breakdown " BD_FMT
               ", oracle " BD_FMT, what, i, BD_M(m->iters[i].bd_actual), BD_M(r->ibd[0][i]));
        EXPECT(same_bd(&m->iters[i].bd_predicted, &r->ibd[1][i], 1), "%s: iteration %u predicted breakdown " BD_FMT
               ", oracle " BD_FMT, what, i, BD_M(m->iters[i].bd_predicted), BD_M(r->ibd[1][i]));
        EXPECT(m->iters[i].cpu_actual == r->cpu[0][i] && m->iters[i].cpu_predicted == r->cpu[1][i],
               "%s: iteration %u CPU span %lld/%lld, oracle %lld/%lld", what, i, (long long)m->iters[i].cpu_actual,
               (long long)m->iters[i].cpu_predicted, (long long)r->cpu[0][i], (long long)r->cpu[1][i]);
    }
    {
        /* the rows partition each window */
        or_ns sa = 0, sp = 0;
        for (uint32_t i = 0; i < m->niters; i++) sa += m->iters[i].actual, sp += m->iters[i].predicted;
        EXPECT(!m->niters || (sa == m->window_actual && sp == m->window_predicted),
               "%s: iterations add up to %lld/%lld, windows %lld/%lld", what, (long long)sa, (long long)sp,
               (long long)m->window_actual, (long long)m->window_predicted);
    }
    const lsim_err_dist *ed[2] = {&m->start_err_gpu, &m->start_err_cpu};
    for (int c = 0; c < 2; c++)
        EXPECT(!m->has_fidelity || (ed[c]->n == r->en[c] && ed[c]->median == r->emed[c] && ed[c]->p90 == r->ep90[c] &&
                                    ed[c]->max == r->emax[c]),
               "%s: %s start errors n %llu median %lld p90 %lld max %lld, oracle %llu %lld %lld %lld", what,
               c ? "CPU" : "GPU", (unsigned long long)ed[c]->n, (long long)ed[c]->median, (long long)ed[c]->p90,
               (long long)ed[c]->max, (unsigned long long)r->en[c], (long long)r->emed[c], (long long)r->ep90[c],
               (long long)r->emax[c]);
    EXPECT(m->has_fidelity == (r->en[0] + r->en[1] > 0), "%s: has_fidelity %d", what, m->has_fidelity);
    EXPECT(!m->has_fidelity || (m->duty_abs_diff - r->duty_diff < 1e-12 && r->duty_diff - m->duty_abs_diff < 1e-12),
           "%s: duty difference %.12f, oracle %.12f", what, m->duty_abs_diff, r->duty_diff);
    EXPECT(m->nbins_actual == r->nbins[0] && m->nbins_predicted == r->nbins[1], "%s: bins %u/%u, oracle %zu/%zu", what,
           m->nbins_actual, m->nbins_predicted, r->nbins[0], r->nbins[1]);
    for (int pass = 0; pass < 2; pass++) {
        const double *d = pass ? m->duty_predicted : m->duty_actual;
        uint32_t nb = pass ? m->nbins_predicted : m->nbins_actual;
        for (uint32_t k = 0; k < nb && k < r->nbins[pass]; k++) {
            double x = d[k] - r->duty[pass][k];
            EXPECT(x < 1e-12 && x > -1e-12, "%s: %s duty bin %u %.12f, oracle %.12f", what, pass ? "predicted" : "actual",
                   k, d[k], r->duty[pass][k]);
        }
    }
    EXPECT(m->max_abs_start_err == r->max_err_start && m->max_abs_end_err == r->max_err_end && m->nodes_exact == r->exact,
           "%s: node errors %lld/%lld (%llu exact), oracle %lld/%lld (%llu)", what, (long long)m->max_abs_start_err,
           (long long)m->max_abs_end_err, (unsigned long long)m->nodes_exact, (long long)r->max_err_start,
           (long long)r->max_err_end, (unsigned long long)r->exact);
#undef EXPECT
    return bad;
}

#endif
