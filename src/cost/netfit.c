/* Network calibration from nccl-tests results at several node counts
 * (include/lumosim/cost.h, docs/network.md): the published CSV reader and
 * the least-squares fit of the NCCL model's link and protocol parameters. */
#include "lumosim/cost.h"
#include "lumosim/alloc.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "lumosim/input.h"
#include "lumosim/trace.h"

double lsim_net_busbw_factor(int kind, int n)
{
    if (n < 1) return 1.0;
    switch (kind) {
    case LSIM_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case LSIM_COLL_REDUCESCATTER:
    case LSIM_COLL_ALLGATHER:
    case LSIM_COLL_ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

/* ---- the published CSV ---- */

/* The collective a CSV's file name names ("nccl_p5_all_reduce.csv"). */
static int csv_kind(const char *path)
{
    static const struct {
        const char *word;
        int kind;
    } W[] = {{"all_reduce", LSIM_COLL_ALLREDUCE},     {"allreduce", LSIM_COLL_ALLREDUCE},
             {"alltoall", LSIM_COLL_ALLTOALL},        {"all_to_all", LSIM_COLL_ALLTOALL},
             {"reduce_scatter", LSIM_COLL_REDUCESCATTER}, {"all_gather", LSIM_COLL_ALLGATHER}};
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < sizeof W / sizeof *W; i++)
        if (strstr(base, W[i].word)) return W[i].kind;
    return LSIM_COLL_NONE;
}

/* Split a CSV line in place at commas (no quoting in this format). */
static int fields(char *s, char **f, int max)
{
    int n = 0;
    s[strcspn(s, "\r\n")] = '\0';
    while (n < max) {
        f[n++] = s;
        char *c = strchr(s, ',');
        if (!c) break;
        *c = '\0';
        s = c + 1;
    }
    return n;
}

static int num(const char *s, double *v)
{
    char *end;
    while (isspace((unsigned char)*s)) s++;
    *v = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    return end != s && !*end && isfinite(*v);
}

#define NCOLS 4
static const char *const COLS[NCOLS] = {"Nodes", "GPUs", "size(MB)", "out algbw(GB/s)"};

int lsim_net_read_csv(const char *path, lsim_net_point **pts, size_t *n, lsim_err *err)
{
    int rc = 0, col[NCOLS] = {-1, -1, -1, -1}, header = 0;
    size_t linecap = 0, lineno = 0, start = *n, cap = *n;
    char *line = NULL;
    FILE *f = NULL;
    int kind = csv_kind(path);
    if (kind == LSIM_COLL_NONE)
        return lsim_err_set(err, LSIM_EFORMAT,
                            "%s: the file name names no collective (all_reduce, alltoall, reduce_scatter, all_gather)",
                            path);
    if ((rc = lsim_input_fopen(path, &f, err))) goto cleanup;
    while (getline(&line, &linecap, f) >= 0) {
        lineno++;
        char *fl[32];
        int nf = fields(line, fl, 32);
        if (nf == 1 && !fl[0][0]) continue; /* blank line */
        if (!header) {
            for (int i = 0; i < nf; i++)
                for (int c = 0; c < NCOLS; c++)
                    if (!strcmp(fl[i], COLS[c])) col[c] = i;
            for (int c = 0; c < NCOLS; c++)
                if (col[c] < 0) {
                    rc = lsim_err_set(err, LSIM_EFORMAT, "%s: line %zu: no column \"%s\" in the header", path, lineno,
                                      COLS[c]);
                    goto cleanup;
                }
            header = 1;
            continue;
        }
        double v[NCOLS];
        for (int c = 0; c < NCOLS; c++)
            if (col[c] >= nf || !num(fl[col[c]], &v[c]) || v[c] <= 0 || (c < 2 && v[c] != floor(v[c]))) {
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: line %zu: column %s: %s", path, lineno, COLS[c],
                                  col[c] >= nf ? "missing" : c < 2 ? "not a positive whole number" : "not a positive number");
                goto cleanup;
            }
        if (v[0] > 1e6 || v[1] > 1e9 || fmod(v[1], v[0]) != 0) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: line %zu: %g GPUs are not whole nodes of %g", path, lineno, v[1], v[0]);
            goto cleanup;
        }
        if (*n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            lsim_net_point *p = lsim_realloc(*pts, nc * sizeof *p);
            if (!p) {
                rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
                goto cleanup;
            }
            *pts = p, cap = nc;
        }
        double bytes = v[2] * 1048576.0; /* nccl-tests' sizes are powers of two: MB = 2^20 B */
        (*pts)[(*n)++] = (lsim_net_point){kind, (int)v[0], (int)v[1], bytes, bytes / v[3]}; /* B / (GB/s) = ns */
    }
    if (ferror(f)) {
        rc = lsim_err_set(err, LSIM_EIO, "%s: read error", path);
        goto cleanup;
    }
    if (*n == start) rc = lsim_err_set(err, LSIM_EFORMAT, "%s: no data rows", path);
cleanup:
    if (rc) *n = start; /* all or nothing */
    free(line);
    if (f) fclose(f);
    return rc;
}

/* ---- the fit ---- */

/* The time the model gives a point, with its algorithm/protocol forced (or
 * AUTO: NCCL's choice, reported). */
static double model_ns(const lsim_topology *t, const lsim_net_point *p, lsim_coll_algo a, lsim_coll_proto q,
                       lsim_coll_algo *ua, lsim_coll_proto *uq)
{
    return (double)lsim_cost_collective_nccl(t, p->kind, (int64_t)llround(p->bytes), NULL, p->gpus, a, q, ua, uq);
}

/* The model is linear in (latency, 1 / efficiency) once the algorithm and
 * protocol are fixed: t = c0 + lat x cl + cb / eff. The coefficients are
 * read off the model itself (one copy of each formula: cost.c), with the
 * parameter at 0 / 1 and at 1 ms. */
static void coeffs(const lsim_topology *t0, const lsim_net_point *p, lsim_coll_algo a, lsim_coll_proto q, int a2a,
                   double *c0, double *cl, double *cb)
{
    lsim_topology t = *t0;
    t.ring_step_ns = t.tree_hop_ns = t.a2a_peer_ns = 0;
    t.ring_eff = t.tree_eff = t.a2a_eff = 1;
    double base = model_ns(&t, p, a, q, NULL, NULL);
    if (a2a) t.a2a_peer_ns = 1000000;
    else if (a == LSIM_ALGO_TREE) t.tree_hop_ns = 1000000;
    else t.ring_step_ns = 1000000;
    *cl = (model_ns(&t, p, a, q, NULL, NULL) - base) / 1e6;
    *c0 = (double)t0->coll_base_ns;
    *cb = base - *c0;
}

/* Weighted least squares by the normal equations, k <= 4 unknowns. 0, or
 * -1 when singular. */
static int solve(double m[4][5], int k, double *x)
{
    for (int i = 0; i < k; i++) {
        int piv = i;
        for (int r = i + 1; r < k; r++)
            if (fabs(m[r][i]) > fabs(m[piv][i])) piv = r;
        if (!(fabs(m[piv][i]) > 1e-300)) return -1;
        for (int c = 0; c <= k; c++) {
            double tmp = m[i][c];
            m[i][c] = m[piv][c], m[piv][c] = tmp;
        }
        for (int r = 0; r < k; r++) {
            if (r == i) continue;
            double f = m[r][i] / m[i][i];
            for (int c = i; c <= k; c++) m[r][c] -= f * m[i][c];
        }
    }
    for (int i = 0; i < k; i++) x[i] = m[i][k] / m[i][i];
    for (int i = 0; i < k; i++)
        if (!isfinite(x[i])) return -1;
    return 0;
}

/* Parameters of the collective part: [0] ring_step_ns, [1] tree_hop_ns,
 * [2] 1 / ring_eff, [3] 1 / tree_eff. */
static void apply(lsim_topology *t, const double th[4])
{
    t->ring_step_ns = llround(th[0] > 0 ? th[0] : 0);
    t->tree_hop_ns = llround(th[1] > 0 ? th[1] : 0);
    t->ring_eff = 1.0 / th[2];
    t->tree_eff = 1.0 / th[3];
}

static int is_coll(const lsim_net_point *p) { return p->nodes > 1 && p->kind != LSIM_COLL_ALLTOALL; }

/* Relative residuals of the points `want` selects. */
static double sse(const lsim_topology *t, const lsim_net_point *pts, size_t n, int (*want)(const lsim_net_point *),
                  double *maxr)
{
    double s = 0;
    *maxr = 0;
    for (size_t i = 0; i < n; i++) {
        if (!want(&pts[i])) continue;
        double r = (model_ns(t, &pts[i], LSIM_ALGO_AUTO, LSIM_PROTO_AUTO, NULL, NULL) - pts[i].ns) / pts[i].ns;
        s += r * r;
        if (fabs(r) > *maxr) *maxr = fabs(r);
    }
    return s;
}

/* One descent from a start: assign each point NCCL's choice under the
 * current latencies, solve the linear least squares for that assignment,
 * repeat until the parameters stop changing (at most 60 rounds). */
static void descend(lsim_topology *t, const lsim_net_point *pts, size_t n, double th[4])
{
    for (int round = 0; round < 60; round++) {
        apply(t, th);
        double m[4][5] = {{0}};
        int used[4] = {0};
        for (size_t i = 0; i < n; i++) {
            if (!is_coll(&pts[i])) continue;
            lsim_coll_algo a;
            lsim_coll_proto q;
            model_ns(t, &pts[i], LSIM_ALGO_AUTO, LSIM_PROTO_AUTO, &a, &q);
            double c0, cl, cb, row[4] = {0}, w = 1.0 / pts[i].ns;
            coeffs(t, &pts[i], a, q, 0, &c0, &cl, &cb);
            int tr = a == LSIM_ALGO_TREE;
            row[tr] = cl * w, row[2 + tr] = cb * w;
            used[tr] = used[2 + tr] = 1;
            double y = (pts[i].ns - c0) * w;
            for (int r = 0; r < 4; r++) {
                for (int c = 0; c < 4; c++) m[r][c] += row[r] * row[c];
                m[r][4] += row[r] * y;
            }
        }
        /* only the columns some point uses */
        int idx[4], k = 0;
        for (int j = 0; j < 4; j++)
            if (used[j]) idx[k++] = j;
        double sub[4][5], x[4];
        for (int r = 0; r < k; r++) {
            for (int c = 0; c < k; c++) sub[r][c] = m[idx[r]][idx[c]];
            sub[r][k] = m[idx[r]][4];
        }
        if (solve(sub, k, x)) return;
        double next[4] = {th[0], th[1], th[2], th[3]};
        for (int j = 0; j < k; j++) next[idx[j]] = x[j];
        if (!(next[2] > 0) || !(next[3] > 0)) return; /* no bandwidth: keep the last good */
        for (int j = 2; j < 4; j++)
            if (next[j] < 1) next[j] = 1; /* efficiency at most 1 */
        int same = 1;
        for (int j = 0; j < 4; j++) {
            if (fabs(next[j] - th[j]) > 1e-9 * fabs(th[j])) same = 0;
            th[j] = next[j];
        }
        if (same) break;
    }
    apply(t, th);
}

static int is_a2a(const lsim_net_point *p) { return p->nodes > 1 && p->kind == LSIM_COLL_ALLTOALL; }

/* All-to-all: t = c0 + peer_ns x cl + cb / a2a_eff, linear at once. */
static int fit_a2a(lsim_topology *t, const lsim_net_point *pts, size_t n)
{
    double m[4][5] = {{0}}, x[2];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_a2a(&pts[i])) continue;
        double c0, cl, cb, w = 1.0 / pts[i].ns;
        coeffs(t, &pts[i], LSIM_ALGO_AUTO, LSIM_PROTO_AUTO, 1, &c0, &cl, &cb);
        double row[2] = {cl * w, cb * w}, y = (pts[i].ns - c0) * w;
        for (int r = 0; r < 2; r++) {
            for (int c = 0; c < 2; c++) m[r][c] += row[r] * row[c];
            m[r][2] += row[r] * y;
        }
        k++;
    }
    if (!k) return 0;
    double sub[4][5] = {{m[0][0], m[0][1], m[0][2]}, {m[1][0], m[1][1], m[1][2]}};
    if (solve(sub, 2, x) || !(x[1] > 0)) return -1;
    t->a2a_peer_ns = llround(x[0] > 0 ? x[0] : 0);
    t->a2a_eff = x[1] < 1 ? 1 : 1.0 / x[1];
    return x[1] < 1;
}

int lsim_net_fit(const lsim_topology *base, const lsim_net_point *pts, size_t n, lsim_topology *out,
                 lsim_net_fit_report *rep, lsim_err *err)
{
    lsim_net_fit_report r;
    memset(&r, 0, sizeof r);
    int gpn = base->gpus_per_node;
    for (size_t i = 0; i < n; i++) {
        const lsim_net_point *p = &pts[i];
        if (p->nodes < 1 || p->gpus != p->nodes * gpn || !(p->bytes > 0) || !(p->ns > 0))
            return lsim_err_set(err, LSIM_EARG,
                                "point %zu (%d GPUs on %d nodes, %g B, %g ns): not %d GPUs per node, the topology's, or "
                                "not a positive size and time",
                                i + 1, p->gpus, p->nodes, p->bytes, p->ns, gpn);
        if (is_coll(p)) r.coll_points++;
        else if (is_a2a(p)) r.a2a_points++;
        else r.skipped++;
    }
    if (!r.coll_points && !r.a2a_points)
        return lsim_err_set(err, LSIM_EARG, "no measurement spans several nodes: nothing to fit the network to");
    lsim_topology t = *base, best = *base;
    t.nccl_tuning = 1;
    best.nccl_tuning = 1;
    if (r.coll_points) {
        /* The choice of algorithm depends on the latencies, so the fit is
         * not one linear problem: descents from a grid of starts (ring
         * steps 1 us to 100 us, tree hops 1, 10, 100 us), the best kept. */
        double best_sse = INFINITY;
        for (int i = 0; i <= 20; i++)
            for (int j = 0; j < 3; j++) {
                /* fixed starts, not base's values: a held-out check must
                 * not depend on a fit the base file may carry */
                double th[4] = {1e3 * pow(100.0, i / 20.0), 1e3 * pow(10.0, j), 1 / 0.9, 1 / 0.7};
                descend(&t, pts, n, th);
                double mx, s = sse(&t, pts, n, is_coll, &mx);
                if (s < best_sse) best_sse = s, best = t;
            }
        r.clamped = best.ring_eff >= 1 || best.tree_eff >= 1;
        r.coll_rms = sqrt(best_sse / (double)r.coll_points);
        sse(&best, pts, n, is_coll, &r.coll_max);
        for (size_t i = 0; i < n; i++) {
            if (!is_coll(&pts[i])) continue;
            lsim_coll_algo a;
            model_ns(&best, &pts[i], LSIM_ALGO_AUTO, LSIM_PROTO_AUTO, &a, NULL);
            if (a == LSIM_ALGO_TREE) r.tree_points++;
            else r.ring_points++;
        }
    }
    if (r.a2a_points) {
        int c = fit_a2a(&best, pts, n);
        if (c < 0) return lsim_err_set(err, LSIM_EARG, "the all-to-all points fit no positive bandwidth");
        r.clamped |= c;
        r.a2a_rms = sqrt(sse(&best, pts, n, is_a2a, &r.a2a_max) / (double)r.a2a_points);
    }
    *out = best;
    if (rep) *rep = r;
    return 0;
}
