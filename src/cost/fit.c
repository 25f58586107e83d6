/* Calibration fits of t = alpha + bytes / beta: from (bytes, ns) pairs and
 * from nccl-tests output files (include/lumosim/cost.h,
 * docs/cost-models.md "Calibration"). */
#include "lumosim/cost.h"
#include "lumosim/alloc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "lumosim/trace.h"
#include "lumosim/input.h"

int lsim_cost_fit_alpha_beta(const double *bytes, const double *ns, size_t n, lsim_coll_fit *out, lsim_err *err)
{
    /* Weighted least squares with w = 1/y^2, i.e. minimising the squared
     * relative residuals: nccl-tests sizes span 8 B to gigabytes, and an
     * unweighted fit would let the largest points (whose rounding alone is
     * larger than alpha) decide the intercept. Centred sums keep the
     * conditioning good with x up to 1e10. */
    if (n < 2 || !bytes || !ns) return lsim_err_set(err, LSIM_EARG, "need at least 2 points to fit alpha and beta, got %zu", n);
    double sw = 0, swx = 0, swy = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(bytes[i]) || bytes[i] < 0)
            return lsim_err_set(err, LSIM_EARG, "point %zu: size %g is not a finite non-negative number", i, bytes[i]);
        if (!isfinite(ns[i]) || ns[i] <= 0)
            return lsim_err_set(err, LSIM_EARG, "point %zu: time %g ns is not a finite positive number", i, ns[i]);
        double w = 1.0 / (ns[i] * ns[i]);
        sw += w, swx += w * bytes[i], swy += w * ns[i];
    }
    double xm = swx / sw, ym = swy / sw, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        double w = 1.0 / (ns[i] * ns[i]), dx = bytes[i] - xm;
        sxx += w * dx * dx, sxy += w * dx * (ns[i] - ym);
    }
    if (!(sxx > 0)) return lsim_err_set(err, LSIM_EARG, "all %zu points have the same size: no bandwidth can be fitted", n);
    double slope = sxy / sxx; /* ns per byte */
    if (!(slope > 0) || !isfinite(slope))
        return lsim_err_set(err, LSIM_EARG, "time does not grow with size over the %zu points: no bandwidth can be fitted", n);
    double alpha = ym - slope * xm, worst = 0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs(alpha + slope * bytes[i] - ns[i]) / ns[i];
        if (r > worst) worst = r;
    }
    out->kind = LSIM_COLL_NONE;
    out->alpha_ns = alpha;
    out->beta_bytes_per_s = 1e9 / slope;
    out->points = n;
    out->max_rel_residual = worst;
    out->nranks = -1;
    return 0;
}

/* ---- nccl-tests output ---- */

/* The program names nccl-tests builds. "all_reduce_perf" is looked for
 * before "reduce_perf" (its suffix), over the whole line. */
static const struct {
    const char *prog;
    int kind;
} PROGS[] = {
    {"all_reduce_perf", LSIM_COLL_ALLREDUCE},  {"reduce_scatter_perf", LSIM_COLL_REDUCESCATTER},
    {"all_gather_perf", LSIM_COLL_ALLGATHER},  {"alltoall_perf", LSIM_COLL_ALLTOALL},
    {"sendrecv_perf", LSIM_COLL_SENDRECV},     {"broadcast_perf", LSIM_COLL_BROADCAST},
    {"reduce_perf", LSIM_COLL_REDUCE},
};

static int is_alnum(char c) { return isalnum((unsigned char)c); }

/* The kind named by a program name in `s`, not inside a longer word
 * (underscores may join it: "h100_all_reduce_perf.txt"). */
static int kind_in(const char *s)
{
    for (size_t k = 0; k < sizeof PROGS / sizeof *PROGS; k++) {
        size_t len = strlen(PROGS[k].prog);
        for (const char *p = strstr(s, PROGS[k].prog); p; p = strstr(p + 1, PROGS[k].prog))
            if ((p == s || !is_alnum(p[-1])) && !is_alnum(p[len])) return PROGS[k].kind;
    }
    return LSIM_COLL_NONE;
}

/* Split a line in place into at most max whitespace-separated tokens. */
static int tokens(char *s, char **tok, int max)
{
    int n = 0;
    for (;;) {
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s || n == max) return n;
        tok[n++] = s;
        while (*s && !isspace((unsigned char)*s)) s++;
        if (*s) *s++ = '\0';
    }
}

static int parse_i64(const char *s, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return end != s && !*end && !errno;
}

static int parse_pos_double(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end && isfinite(*v) && *v > 0;
}

#define MAXTOK 32

/* The table of an nccl-tests output: sizes x[] (B) and times y[] (ns), the
 * caller frees them (also on failure); *kind from the program name (NONE if
 * not found), *nranks from its "#  Rank N" lines (0 if none). */
static int read_nccl_table(const char *path, double **xp, double **yp, size_t *np, int *kindp, int *nranksp,
                           lsim_err *err)
{
    int rc = 0, kind = LSIM_COLL_NONE, col_time = -1, nranks = 0;
    size_t npts = 0, capx = 0, capy = 0, linecap = 0;
    double *x = NULL, *y = NULL;
    char *line = NULL;
    FILE *f = NULL;
    if ((rc = lsim_input_fopen(path, &f, err))) goto cleanup; /* a FIFO: refused, never waited on */
    ssize_t got;
    size_t lineno = 0;
    while ((got = getline(&line, &linecap, f)) >= 0) {
        lineno++;
        if (memchr(line, '\0', (size_t)got)) continue; /* binary garbage: not a table line */
        if (kind == LSIM_COLL_NONE) kind = kind_in(line);
        char *tok[MAXTOK];
        const char *s = line;
        while (isspace((unsigned char)*s)) s++;
        if (*s == '#') {
            int nt = tokens(line + (s - line) + 1, tok, MAXTOK);
            long long r;
            if (nt >= 2 && strcmp(tok[0], "Rank") == 0 && parse_i64(tok[1], &r)) nranks++;
            /* "#  size  count  type  redop  [root]  time  algbw  busbw ..." */
            if (nt >= 2 && strcmp(tok[0], "size") == 0)
                for (int i = 1; i < nt; i++)
                    if (strcmp(tok[i], "time") == 0) {
                        col_time = i;
                        break;
                    }
            continue;
        }
        if (col_time < 0) continue;
        int nt = tokens(line, tok, MAXTOK);
        long long size;
        double us;
        /* A line that starts with a whole number is a row of the table:
         * one that cannot be used is refused, naming it, never dropped
         * (a run whose times are inf, nan or N/A is a failed run, and a
         * fit of what is left would hide it). Other lines (NCCL INFO,
         * warnings, command lines) are not rows. */
        if (nt == 0 || !parse_i64(tok[0], &size)) continue;
        if (size < 0) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: line %zu: size %lld is negative", path, lineno, size);
            goto cleanup;
        }
        if (nt <= col_time) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: line %zu: a row of %d field(s), the time is field %d of the table",
                              path, lineno, nt, col_time + 1);
            goto cleanup;
        }
        if (!parse_pos_double(tok[col_time], &us) || us > 1e12) {
            rc = lsim_err_set(err, LSIM_EFORMAT,
                              "%s: line %zu: time '%.32s' (size %lld) is not a finite positive number of microseconds "
                              "(at most 1e12)",
                              path, lineno, tok[col_time], size);
            goto cleanup;
        }
        if (LSIM_GROW(x, &capx, npts + 1) || LSIM_GROW(y, &capy, npts + 1)) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
            goto cleanup;
        }
        x[npts] = (double)size;
        y[npts] = us * 1e3;
        npts++;
    }
    if (ferror(f)) {
        rc = lsim_err_set(err, LSIM_EIO, "%s: read error", path);
        goto cleanup;
    }
    if (col_time < 0) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: no nccl-tests table (a \"#  size  count  type ...  time\" header line)", path);
        goto cleanup;
    }
    if (kind == LSIM_COLL_NONE) {
        const char *base = strrchr(path, '/');
        kind = kind_in(base ? base + 1 : path);
    }
cleanup:
    *xp = x, *yp = y, *np = npts, *kindp = kind, *nranksp = nranks;
    free(line);
    if (f) fclose(f);
    return rc;
}

int lsim_cost_fit_nccl_tests(const char *path, lsim_coll_fit *out, lsim_err *err)
{
    int kind = LSIM_COLL_NONE, nranks = 0;
    size_t npts = 0;
    double *x = NULL, *y = NULL;
    int rc = read_nccl_table(path, &x, &y, &npts, &kind, &nranks, err);
    if (rc) goto cleanup;
    if (npts < 2) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: %zu data row(s) in the nccl-tests table, at least 2 needed", path, npts);
        goto cleanup;
    }
    {
        /* Times that do not grow with the size (a latency-bound or broken
         * run, or one size measured over and over) fit a slope of about 0,
         * a bandwidth of 1e44 B/s: refused, as is any bandwidth outside the
         * range a topology accepts (1e6..1e14 B/s, src/cost/spec.c). */
        double lo = y[0], hi = y[0];
        for (size_t i = 1; i < npts; i++) lo = y[i] < lo ? y[i] : lo, hi = y[i] > hi ? y[i] : hi;
        if (hi == lo) {
            rc = lsim_err_set(err, LSIM_EFORMAT,
                              "%s: all %zu rows have the same time (%g us): no bandwidth can be fitted to times that do "
                              "not grow with the size",
                              path, npts, lo / 1e3);
            goto cleanup;
        }
    }
    lsim_coll_fit fit;
    lsim_err e = {0};
    if (lsim_cost_fit_alpha_beta(x, y, npts, &fit, &e)) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: %s", path, e.msg);
        goto cleanup;
    }
    if (!(fit.beta_bytes_per_s >= LSIM_FIT_BW_MIN && fit.beta_bytes_per_s <= LSIM_FIT_BW_MAX)) {
        rc = lsim_err_set(err, LSIM_EFORMAT,
                          "%s: the %zu rows fit a bandwidth of %g B/s, outside %g..%g B/s: the times hardly grow with "
                          "the size",
                          path, npts, fit.beta_bytes_per_s, LSIM_FIT_BW_MIN, LSIM_FIT_BW_MAX);
        goto cleanup;
    }
    fit.kind = kind;
    fit.nranks = nranks > 0 ? nranks : -1;
    *out = fit;
cleanup:
    free(y);
    free(x);
    return rc;
}

int lsim_net_read_nccl_tests(const char *path, int gpus_per_node, lsim_net_point **pts, size_t *n, lsim_err *err)
{
    int kind = LSIM_COLL_NONE, nranks = 0;
    size_t npts = 0;
    double *x = NULL, *y = NULL;
    int rc = read_nccl_table(path, &x, &y, &npts, &kind, &nranks, err);
    if (rc) goto cleanup;
    if (gpus_per_node < 1 || nranks < 1 || nranks % gpus_per_node) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: %d rank(s) listed (\"#  Rank N\" lines): not whole nodes of %d GPUs",
                          path, nranks, gpus_per_node);
        goto cleanup;
    }
    if (kind == LSIM_COLL_NONE) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: cannot tell the collective (no nccl-tests program name)", path);
        goto cleanup;
    }
    lsim_net_point *p = lsim_realloc(*pts, (*n + npts) * sizeof *p);
    if (!p) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    *pts = p;
    for (size_t i = 0; i < npts; i++)
        p[(*n)++] = (lsim_net_point){kind, nranks / gpus_per_node, nranks, x[i], y[i]};
cleanup:
    free(y);
    free(x);
    return rc;
}
