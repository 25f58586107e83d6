/* Routing of a MoE layer's tokens over its experts (contract: routing.h;
 * the model: docs/synthesis.md, "Skewed routing").
 *
 * Every kind of routing is a set of weights w_e over the E experts, the
 * group's routed token copies shared by largest remainder (x_e = routed
 * w_e / sum w, floors first, the leftover one each by largest fraction,
 * ties to the lower index), so the total is exact:
 * - balanced: equal weights (tokens / E each, the remainder one each to
 *   the first experts);
 * - Zipf (--routing-skew z): the r-th most loaded expert r^-z, which expert
 *   is the r-th a permutation drawn per (stage, group, layer, mb);
 * - a measured histogram (--routing-hist): the row of the layer, as given;
 * - Dirichlet (--routing-dirichlet A): w ~ Dirichlet(A E p), p the
 *   histogram's row or uniform shares, drawn per (stage, group, layer,
 *   mb). Its mean is p and each share's variance p (1 - p) / (A E + 1):
 *   A -> infinity gives p, A = 1 / E (alpha 1 per expert with p uniform)
 *   the uniform distribution over all routings. */
#include "routing.h"
#include "lumosim/alloc.h"
#include "lumosim/input.h"
#include "lumosim/stages.h"

#include "../util.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t synth_rank_tokens(const lsim_synth_cfg *c, int seq) { return (int64_t)c->micro_batch * seq / c->tp; }

int synth_routing_drawn(const lsim_synth_cfg *c)
{
    return c->routing_skew > 0 || c->routing_dirichlet > 0 || c->routing_hist != NULL;
}

int lsim_synth_moe_layers(const lsim_model_shape *m)
{
    int n = 0;
    for (int l = 0; l < m->layers; l++) n += lsim_model_moe_layer(m, l) != 0;
    return n;
}

/* The row of the histogram that layer `layer` uses: its place among the
 * model's MoE layers, or row 0 when one row serves them all. */
static const double *hist_row(const lsim_synth_cfg *c, int layer)
{
    if (c->routing_hist_rows <= 1) return c->routing_hist;
    int k = 0;
    for (int l = 0; l < layer && l < c->model.layers; l++) k += lsim_model_moe_layer(&c->model, l) != 0;
    if (k >= c->routing_hist_rows) k = c->routing_hist_rows - 1; /* not reached: the check counts the rows */
    return c->routing_hist + (size_t)k * c->model.experts;
}

int64_t synth_capacity(const lsim_synth_cfg *c, int seq)
{
    if (!(c->capacity_factor > 0) || c->model.experts <= 0) return 0;
    /* Megatron's get_capacity: ceil(tokens x top_k / experts x C) */
    double x = ceil((double)synth_rank_tokens(c, seq) * c->model.top_k / c->model.experts * c->capacity_factor);
    return x < 1 ? 1 : (int64_t)x;
}

int synth_routing_check(const lsim_synth_cfg *c, lsim_err *err)
{
    const lsim_model_shape *m = &c->model;
    if (!(c->capacity_factor >= 0) || isinf(c->capacity_factor))
        return lsim_err_set(err, LSIM_EARG, "--capacity-factor %g: not a capacity factor (finite, above 0)",
                            c->capacity_factor);
    if (c->pad_to_capacity && !(c->capacity_factor > 0))
        return lsim_err_set(err, LSIM_EARG, "--pad-to-capacity needs --capacity-factor (the capacity it pads to)");
    if (m->experts <= 0 && c->capacity_factor > 0)
        return lsim_err_set(err, LSIM_EARG, "--capacity-factor: model %s has no experts", m->name);
    if (!(c->routing_skew >= 0) || isinf(c->routing_skew))
        return lsim_err_set(err, LSIM_EARG, "--routing-skew %g: not a Zipf exponent (finite, 0 or more)", c->routing_skew);
    if (!(c->routing_dirichlet >= 0) || isinf(c->routing_dirichlet))
        return lsim_err_set(err, LSIM_EARG, "--routing-dirichlet %g: not a Dirichlet concentration (finite, above 0)",
                            c->routing_dirichlet);
    if (m->experts <= 0) {
        const char *o = c->routing_skew != 0 ? "--routing-skew" : c->routing_dirichlet != 0 ? "--routing-dirichlet"
                        : c->routing_hist ? "--routing-hist" : NULL;
        if (o) return lsim_err_set(err, LSIM_EARG, "%s: model %s has no experts", o, m->name);
        return 0;
    }
    if (c->routing_skew > 0 && (c->routing_dirichlet > 0 || c->routing_hist))
        return lsim_err_set(err, LSIM_EARG, "--routing-skew with %s: give one routing law (a Zipf exponent, or a "
                            "histogram and/or a Dirichlet concentration)",
                            c->routing_hist ? "--routing-hist" : "--routing-dirichlet");
    int moe = lsim_synth_moe_layers(m);
    if (c->routing_hist && c->routing_hist_rows != 1 && c->routing_hist_rows != moe)
        return lsim_err_set(err, LSIM_EARG, "--routing-hist: %d rows: give 1 (every MoE layer) or one per MoE layer "
                            "of model %s (%d)", c->routing_hist_rows, m->name, moe);
    return 0;
}

/* --------------------------------------------------------------- draws */

/* A uniform double in (0, 1) from the stream st (splitmix64's counter). */
static double unif(uint64_t *st)
{
    *st += 0x9E3779B97F4A7C15ull;
    return ((double)(lsim_mix64(*st) >> 11) + 0.5) * 0x1p-53;
}

/* A standard normal variate (Box-Muller, one of the pair). */
static double normal(uint64_t *st)
{
    double u = unif(st), v = unif(st);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* A Gamma(a, 1) variate: Marsaglia and Tsang (2000) for a >= 1, and
 * Gamma(a + 1) U^(1/a) below. The acceptance rate is above 95 %, so 64
 * tries end it with a certainty the doubles cannot tell from 1; the mode
 * is returned if they ever do not (bounded, never a loop without end). */
static double gamma_draw(double a, uint64_t *st)
{
    if (!(a > 0)) return 0;
    if (a < 1) return gamma_draw(a + 1, st) * pow(unif(st), 1 / a);
    double d = a - 1.0 / 3, cc = 1 / sqrt(9 * d);
    for (int it = 0; it < 64; it++) {
        double x = normal(st), v = 1 + cc * x;
        if (v <= 0) continue;
        v = v * v * v;
        if (log(unif(st)) < 0.5 * x * x + d - d * v + d * log(v)) return d * v;
    }
    return d;
}

/* routed shared over E experts by weights w (W their sum > 0), largest
 * remainder; rem: E doubles of scratch. */
static void apportion(int64_t routed, int E, const double *w, double W, int64_t *out, double *rem)
{
    int64_t left = routed;
    for (int r = 0; r < E; r++) {
        double x = (double)routed * w[r] / W;
        out[r] = (int64_t)floor(x);
        rem[r] = x - (double)out[r];
        left -= out[r];
    }
    for (; left > 0; left--) { /* at most E: each remainder is below 1 */
        int best = 0;
        for (int r = 1; r < E; r++)
            if (rem[r] > rem[best]) best = r;
        out[best]++;
        rem[best] = -1;
    }
}

/* Zipf: shares r^-z / H in rank order, then the ranks given to the experts
 * by a Fisher-Yates permutation drawn from key. */
static void zipf(int64_t routed, int E, double z, uint64_t key, int64_t *out, double *w, double *rem)
{
    double H = 0;
    for (int r = 1; r <= E; r++) H += w[r - 1] = pow(r, -z);
    apportion(routed, E, w, H, out, rem);
    uint64_t st = key;
    for (int i = E - 1; i > 0; i--) { /* out[i] <-> out[j], j uniform in 0..i */
        st += 0x9E3779B97F4A7C15ull;
        int j = (int)(lsim_mix64(st) % (uint64_t)(i + 1));
        int64_t t = out[i];
        out[i] = out[j], out[j] = t;
    }
}

/* Dirichlet(A E p) by normalized Gamma draws; p NULL: uniform. Gamma draws
 * of tiny shape can all underflow to 0: then the weights are p itself. */
static void dirichlet(int64_t routed, int E, double A, const double *p, uint64_t key, int64_t *out, double *w, double *rem)
{
    uint64_t st = key;
    double W = 0;
    for (int e = 0; e < E; e++) W += w[e] = gamma_draw(A * E * (p ? p[e] : 1.0 / E), &st);
    if (!(W > 0) || !isfinite(W)) {
        W = 0;
        for (int e = 0; e < E; e++) W += w[e] = p ? p[e] : 1.0;
    }
    apportion(routed, E, w, W, out, rem);
}

int64_t synth_route(const lsim_synth_cfg *c, int seq, int stage, int group, int layer, int mb, int64_t *tok,
                    double *scratch)
{
    const lsim_model_shape *m = &c->model;
    int ep = c->ep > 1 ? c->ep : 1, E = m->experts;
    int64_t routed = synth_rank_tokens(c, seq) * ep * m->top_k;
    double *w = scratch, *rem = scratch + E;
    const double *p = c->routing_hist ? hist_row(c, layer) : NULL;
    uint64_t key = lsim_mix64(c->seed * 0xD1B54A32D192ED03ull + (uint64_t)stage * 0x9E3779B97F4A7C15ull);
    key = lsim_mix64(key ^ ((uint64_t)group << 32 | (uint32_t)layer));
    key = lsim_mix64(key ^ (uint64_t)(uint32_t)mb);
    if (c->routing_skew > 0) {
        zipf(routed, E, c->routing_skew, key, tok, w, rem);
    } else if (c->routing_dirichlet > 0) {
        dirichlet(routed, E, c->routing_dirichlet, p, key, tok, w, rem);
    } else if (p) {
        apportion(routed, E, p, 1.0, tok, rem); /* the rows are normalized: they sum to 1 */
    } else {
        for (int e = 0; e < E; e++) tok[e] = routed / E + (e < routed % E); /* balanced */
    }
    int64_t cap = synth_capacity(c, seq) * ep; /* the expert's capacity over the group's ranks */
    for (int e = 0; cap > 0 && e < E; e++) tok[e] = c->pad_to_capacity || tok[e] > cap ? cap : tok[e];
    return routed;
}

int64_t lsim_synth_expert_tokens(const lsim_synth_cfg *c, int stage, int group, int layer, int mb, int64_t *tokens)
{
    const lsim_model_shape *m = &c->model;
    if (m->experts <= 0 || c->tp <= 0) return 0;
    int cp = c->cp > 1 ? c->cp : 1;
    double *scratch = lsim_malloc((size_t)2 * m->experts * sizeof *scratch);
    if (!scratch) return 0;
    int64_t n = synth_route(c, m->seq / cp, stage, group, layer, mb, tokens, scratch);
    free(scratch);
    return n;
}

/* ------------------------------------------------------------ the memory */

double synth_expert_act_load(const lsim_synth_cfg *c)
{
    const lsim_model_shape *m = &c->model;
    if (m->experts <= 0 || c->tp <= 0) return 1;
    int seq = m->seq / (c->cp > 1 ? c->cp : 1);
    int64_t cap = synth_capacity(c, seq);
    /* an expert at capacity over its balanced share: every expert under
     * padding, the cut's bound without it */
    double full = cap > 0 ? (double)cap * m->experts / ((double)synth_rank_tokens(c, seq) * m->top_k) : 0;
    if (synth_routing_drawn(c)) {
        lsim_synth_routing_sum r;
        if (!lsim_synth_routing_summary(c, &r) && r.act_load > 0) return r.act_load;
        /* out of memory for the draws: the most a capacity lets through */
        return full > 0 ? full : 1;
    }
    if (cap > 0 && (c->pad_to_capacity || full < 1)) return full;
    return 1;
}

/* ------------------------------------------------------------ the summary */

int lsim_synth_routing_summary(const lsim_synth_cfg *c, lsim_synth_routing_sum *out)
{
    const lsim_model_shape *m = &c->model;
    memset(out, 0, sizeof *out);
    if (m->experts <= 0 || !synth_routing_drawn(c)) return 0;
    int ep = c->ep > 1 ? c->ep : 1, E = m->experts, eloc = E / ep, V = c->vstages > 0 ? c->vstages : 1;
    int mbs = lsim_synth_microbatches(c);
    int64_t stage_gpus = (int64_t)c->tp * (c->cp > 1 ? c->cp : 1) * c->dp;
    int64_t ngroups = stage_gpus / ep;
    int seq = m->seq / (c->cp > 1 ? c->cp : 1);
    int64_t *tok = lsim_malloc((size_t)E * sizeof *tok);
    double *load = lsim_calloc((size_t)stage_gpus, sizeof *load), *scratch = lsim_malloc((size_t)2 * E * sizeof *scratch);
    if (!tok || !load || !scratch) {
        free(tok);
        free(load);
        free(scratch);
        return LSIM_ENOMEM;
    }
    double best = -1, worst_gpu = -1;
    for (int s = 0; s < c->pp; s++) {
        memset(load, 0, (size_t)stage_gpus * sizeof *load);
        double sum = 0, routed = 0;
        for (int ch = 0; ch < V; ch++) {
            int lo, n = lsim_split_span(&c->split, m->layers, c->pp, V, ch * c->pp + s, &lo);
            for (int l = lo; l < lo + n; l++) {
                if (!lsim_model_moe_layer(m, l)) continue;
                for (int64_t g = 0; g < ngroups; g++)
                    for (int mb = 0; mb < mbs; mb++) {
                        int64_t all = synth_route(c, seq, s, (int)g, l, mb, tok, scratch);
                        routed += (double)all;
                        for (int e = 0; e < E && all > 0; e++) {
                            load[g * ep + e / eloc] += (double)tok[e];
                            sum += (double)tok[e];
                            double x = (double)tok[e] * E / (double)all;
                            if (x > best) {
                                best = x;
                                out->expert = e, out->layer = l, out->mb = mb;
                                out->expert_gpu = (int64_t)s * stage_gpus + g * ep + e / eloc;
                            }
                        }
                    }
            }
        }
        for (int64_t w = 0; w < stage_gpus && routed > 0; w++) {
            double a = load[w] * (double)stage_gpus / routed;
            if (a > out->act_load) out->act_load = a;
        }
        for (int64_t w = 0; w < stage_gpus && sum > 0; w++) {
            double x = load[w] * (double)stage_gpus / sum;
            if (x > worst_gpu) {
                worst_gpu = x;
                out->gpu = (int64_t)s * stage_gpus + w;
                out->stage = s, out->group = (int)(w / ep), out->ep_rank = (int)(w % ep);
                out->gpu_load = x;
            }
        }
    }
    out->expert_load = best > 0 ? best : 0;
    out->on = best > 0;
    free(tok);
    free(load);
    free(scratch);
    return 0;
}

/* ------------------------------------------------------------ the file */

/* One row of the file: `experts` numbers into row; 0 or one line. */
static int parse_row(const char *path, int line, char *s, int experts, double *row, lsim_err *err)
{
    int n = 0;
    double sum = 0;
    for (char *p = s;;) {
        while (*p == ',' || *p == ' ' || *p == '\t' || *p == '\r') p++;
        if (!*p) break;
        char *end;
        double x = strtod(p, &end);
        if (end == p || (*end && *end != ',' && !isspace((unsigned char)*end)))
            return lsim_err_set(err, LSIM_EFORMAT, "%s: line %d: '%.20s' is not a number", path, line, p);
        if (!isfinite(x) || x < 0)
            return lsim_err_set(err, LSIM_EFORMAT, "%s: line %d: value %d is %g: tokens per expert are finite and "
                                "0 or more", path, line, n + 1, x);
        if (n < experts) row[n] = x;
        n++, sum += x;
        p = end;
    }
    if (n != experts)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: line %d: %d values, the model has %d experts", path, line, n, experts);
    if (!(sum > 0) || !isfinite(sum))
        return lsim_err_set(err, LSIM_EFORMAT, "%s: line %d: the values sum to %g: not a distribution", path, line, sum);
    for (int e = 0; e < experts; e++) row[e] /= sum;
    return 0;
}

int lsim_synth_routing_load(const char *path, const lsim_model_shape *m, double **out, int *rows, lsim_err *err)
{
    int rc = 0, n = 0, line = 0;
    size_t cap = 0;
    FILE *f = NULL;
    char *buf = NULL;
    size_t bcap = 0;
    double *v = NULL;
    *out = NULL, *rows = 0;
    if (m->experts <= 0) return lsim_err_set(err, LSIM_EARG, "--routing-hist %s: model %s has no experts", path, m->name);
    int moe = lsim_synth_moe_layers(m);
    if ((rc = lsim_input_fopen(path, &f, err))) return rc; /* a FIFO: refused, never waited on */
    /* lines of any length (a row of 256 experts' counts is long): read up
     * to each newline, the buffer grown as needed, bounded by the rows */
    for (;;) {
        size_t len = 0;
        int ch = 0;
        while ((ch = fgetc(f)) != EOF && ch != '\n') {
            if (len + 2 > bcap) {
                if (bcap > (64u << 20)) {
                    rc = lsim_err_set(err, LSIM_EFORMAT, "%s: line %d: longer than 64 MB", path, line + 1);
                    goto cleanup;
                }
                if ((rc = LSIM_GROW(buf, &bcap, len + 2))) goto nomem;
            }
            buf[len++] = (char)ch;
        }
        if (ch == EOF && ferror(f)) {
            rc = lsim_err_set(err, LSIM_EIO, "%s: cannot read", path);
            goto cleanup;
        }
        if (ch == EOF && len == 0) break;
        line++;
        if (!buf && (rc = LSIM_GROW(buf, &bcap, 2))) goto nomem;
        buf[len] = 0;
        char *hash = strchr(buf, '#');
        if (hash) *hash = 0;
        char *p = buf;
        while (isspace((unsigned char)*p) || *p == ',') p++;
        if (*p) {
            if (n >= moe) {
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: line %d: more rows than the %d MoE layers of model %s", path,
                                  line, moe, m->name);
                goto cleanup;
            }
            if ((rc = LSIM_GROW(v, &cap, (size_t)(n + 1) * m->experts))) goto nomem;
            if ((rc = parse_row(path, line, p, m->experts, v + (size_t)n * m->experts, err))) goto cleanup;
            n++;
        }
        if (ch == EOF) break;
    }
    if (n != 1 && n != moe) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: %d rows: give 1 (every MoE layer) or one per MoE layer of model %s (%d)",
                          path, n, m->name, moe);
        goto cleanup;
    }
    *out = v, *rows = n;
    v = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
cleanup:
    if (f) fclose(f);
    free(buf);
    free(v);
    return rc;
}
