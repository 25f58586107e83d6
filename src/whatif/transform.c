/* What-if transformations (whatif.h, docs/whatif.md). Each reads its input
 * graph and returns a new one. */
#include "wi_internal.h"
#include "lumosim/alloc.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/metrics.h"

#define NONE UINT32_MAX
#define MAXR 65536

static int is_compute(const lsim_graph *g, size_t v)
{
    return (g->kind[v] == LSIM_N_KERNEL || g->kind[v] == LSIM_N_MEMCPY || g->kind[v] == LSIM_N_MEMSET) &&
           !(g->flags[v] & LSIM_NF_COLL) && g->coll[v] < 0;
}

static int oom(const lsim_graph *g, lsim_err *err)
{
    return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", g->source);
}

/* ------------------------------------------------------------ job context */

struct lsim_wi_job {
    size_t ngpus;
    lsim_ns *offset;
    uint64_t *off;    /* per GPU: [off[i], off[i+1]) into node/transfer, by node */
    uint32_t *node;
    lsim_ns *transfer;
};

typedef struct gnt {
    uint32_t gpu, node;
    lsim_ns t;
} gnt;

static int cmp_gnt(const void *a, const void *b)
{
    const gnt *x = a, *y = b;
    if (x->gpu != y->gpu) return x->gpu < y->gpu ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

int lsim_wi_job_new(lsim_job_entry *entries, size_t ne, size_t ngpus, const int32_t *ranks, lsim_wi_job **out,
                    lsim_err *err)
{
    *out = NULL;
    lsim_job *j = NULL;
    gnt *t = NULL;
    size_t *nc = lsim_calloc(ngpus ? ngpus : 1, sizeof *nc);
    lsim_wi_job *w = lsim_calloc(1, sizeof *w);
    int rc = 0;
    if (!nc || !w) goto nomem;
    if ((rc = lsim_job_from_entries(entries, ne, ngpus, ranks, NULL, nc, NULL, &j, err))) goto cleanup;
    size_t np = j->part_off[j->ninst];
    w->ngpus = ngpus;
    if (!(w->offset = lsim_calloc(ngpus ? ngpus : 1, sizeof *w->offset)) ||
        !(w->off = lsim_calloc(ngpus + 1, sizeof *w->off)) || !(w->node = lsim_malloc((np ? np : 1) * sizeof *w->node)) ||
        !(w->transfer = lsim_malloc((np ? np : 1) * sizeof *w->transfer)) || !(t = lsim_malloc((np ? np : 1) * sizeof *t)))
        goto nomem;
    for (size_t i = 0; i < ngpus; i++) w->offset[i] = j->clock_offset[i];
    for (size_t k = 0; k < j->ninst; k++)
        for (uint64_t a = j->part_off[k]; a < j->part_off[k + 1]; a++)
            t[a] = (gnt){j->part_gpu[a], j->part_node[a], j->transfer[k]};
    qsort(t, np, sizeof *t, cmp_gnt);
    for (size_t a = 0; a < np; a++) {
        w->off[t[a].gpu + 1]++;
        w->node[a] = t[a].node;
        w->transfer[a] = t[a].t;
    }
    for (size_t i = 0; i < ngpus; i++) w->off[i + 1] += w->off[i];
    *out = w;
    w = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching the job's collectives");
cleanup:
    lsim_job_free(j);
    lsim_wi_job_free(w);
    free(nc);
    free(t);
    return rc;
}

void lsim_wi_job_free(lsim_wi_job *j)
{
    if (!j) return;
    free(j->offset);
    free(j->off);
    free(j->node);
    free(j->transfer);
    free(j);
}

/* ------------------------------------------------------------ normalize */

int lsim_wi_normalize(const lsim_graph *in, const lsim_wi_job *job, size_t gpu, const lsim_wi_layout *L,
                      lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    lsim_graph *g = NULL;
    int rc = lsim_graph_clone(in, &g, err);
    if (rc) return rc;
    lsim_ns off = job && gpu < job->ngpus ? job->offset[gpu] : 0;
    for (size_t v = 0; v < g->n; v++) {
        g->obs_start[v] = g->obs_end[v] = LSIM_OBS_NONE;
        if (g->release[v] != INT64_MIN) g->release[v] -= off;
    }
    g->t0 -= off;
    if (job && gpu < job->ngpus)
        for (uint64_t a = job->off[gpu]; a < job->off[gpu + 1]; a++) {
            uint32_t v = job->node[a];
            if (v < g->n && g->dur[v] != job->transfer[a]) {
                g->dur[v] = job->transfer[a];
                rec->retimed[g->kind[v]]++;
            }
        }
    if (L) {
        /* canonical group names */
        int32_t me = in->rank >= 0 ? in->rank : (int32_t)gpu;
        int t, d, p;
        lsim_wi_coords(L, me, &t, &d, &p);
        int world = L->tp * L->dp * L->pp;
        for (size_t c = 0; c < g->ncoll; c++) {
            lsim_coll_info *ci = &g->colls[c];
            lsim_wi_gclass k = lsim_wi_coll_class(in, c);
            const char *pg = ci->pg_name != UINT32_MAX ? lsim_strtab_get(g->strings, ci->pg_name) : "";
            char name[64];
            name[0] = 0;
            if (!strncmp(pg, "tp:", 3) || !strncmp(pg, "dp:", 3) || !strncmp(pg, "p2p:", 4)) continue;
            if (k == LSIM_WI_WORLD && L->tp == world) k = LSIM_WI_TP;
            else if (k == LSIM_WI_WORLD && L->dp == world) k = LSIM_WI_DP;
            if (k == LSIM_WI_TP) snprintf(name, sizeof name, "tp:%d:%d", p, d);
            else if (k == LSIM_WI_DP) snprintf(name, sizeof name, "dp:%d:%d", t, p);
            else if (k == LSIM_WI_PP) {
                const char *pr = ci->pg_ranks != UINT32_MAX ? lsim_strtab_get(g->strings, ci->pg_ranks) : NULL;
                long r[3];
                int nr = 0;
                for (const char *q = pr; q && *q;) {
                    if (isdigit((unsigned char)*q)) {
                        char *e;
                        long x = strtol(q, &e, 10);
                        if (nr < 3) r[nr] = x;
                        nr++;
                        q = e;
                    } else {
                        q++;
                    }
                }
                int a = nr == 2 ? (int)r[0] : -1, b = nr == 2 ? (int)r[1] : -1;
                if (nr == 2 && (a == me || b == me)) {
                    int peer = a == me ? b : a;
                    if (ci->kind == LSIM_COLL_RECV) snprintf(name, sizeof name, "p2p:%d->%d", peer, me);
                    else snprintf(name, sizeof name, "p2p:%d->%d", me, peer);
                }
            }
            if (!name[0]) continue;
            if (wi_intern(g, name, &ci->pg_name)) goto nomem;
            ci->pg_ranks = UINT32_MAX;
            if (k == LSIM_WI_TP) ci->group_size = L->tp;
            if (k == LSIM_WI_DP) ci->group_size = L->dp;
        }
    }
    *out = g;
    return 0;
nomem:
    rc = oom(in, err);
    lsim_graph_free(g);
    return rc;
}

/* ------------------------------------------------------------ data parallel */

int lsim_wi_dp(const lsim_graph *in, const lsim_wi_layout *from, int new_dp, uint32_t new_gpu, lsim_graph **out,
               lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    if (new_dp <= 0) return lsim_err_set(err, LSIM_EARG, "--dp %d: the data-parallel width must be positive", new_dp);
    lsim_wi_layout to = *from;
    to.dp = new_dp;
    return lsim_wi_relayout(in, from, &to, new_gpu, out, rec, err);
}

/* ------------------------------------------------------------ network */

/* Member ranks of collective c's group: canonical names in layout L,
 * else the rank list text, else the world. */
static int group_of(const lsim_graph *g, const lsim_coll_info *ci, const lsim_wi_layout *L, int32_t *r, int cap)
{
    const char *pg = ci->pg_name != UINT32_MAX ? lsim_strtab_get(g->strings, ci->pg_name) : NULL;
    int n = lsim_wi_group_ranks(pg, L, r, cap);
    if (n > 0) return n;
    if (ci->pg_ranks != UINT32_MAX) {
        const char *s = lsim_strtab_get(g->strings, ci->pg_ranks);
        n = 0;
        while (s && *s) {
            if (isdigit((unsigned char)*s)) {
                char *e;
                long x = strtol(s, &e, 10);
                if (n < cap) r[n] = (int32_t)x;
                n++;
                s = e;
            } else {
                s++;
            }
        }
        if (n > 0) return n;
    }
    n = ci->group_size > 0 ? ci->group_size : L->tp * L->dp * L->pp;
    for (int i = 0; i < n && i < cap; i++) r[i] = i;
    return n;
}

int lsim_wi_retime(const lsim_graph *in, const lsim_wi_layout *Lold, const lsim_wi_layout *Lnew,
                   const lsim_topology *told, const lsim_topology *tnew, lsim_graph **out, lsim_wi_counts *rec,
                   lsim_err *err)
{
    *out = NULL;
    lsim_graph *g = NULL;
    int rc = lsim_graph_clone(in, &g, err);
    if (rc) return rc;
    int32_t *rn = lsim_malloc(MAXR * sizeof *rn), *ro = lsim_malloc(MAXR * sizeof *ro);
    if (!rn || !ro) {
        rc = oom(in, err);
        goto cleanup;
    }
    for (size_t v = 0; v < g->n; v++) {
        if (g->coll[v] < 0) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        if (ci->bytes <= 0) continue;
        lsim_wi_gclass cls = lsim_wi_coll_class(g, (size_t)g->coll[v]);
        int nn = group_of(g, ci, Lnew, rn, MAXR), no = 0;
        if (nn > MAXR) continue;
        const char *pg = ci->pg_name != UINT32_MAX ? lsim_strtab_get(g->strings, ci->pg_name) : "";
        int a, b;
        if (sscanf(pg, "dp:%d:%d", &a, &b) == 2) {
            for (int dd = 0; dd < Lold->dp && dd < MAXR; dd++) ro[no++] = lsim_wi_rank(Lold, a % Lold->tp, dd, b);
        } else if (sscanf(pg, "tp:%d:%d", &a, &b) == 2) {
            /* a TP group's source is the whole source TP group */
            for (int tt = 0; tt < Lold->tp && tt < MAXR; tt++) ro[no++] = lsim_wi_rank(Lold, tt, b % Lold->dp, a);
        } else if (lsim_wi_group_ranks(pg, Lnew, rn, 0) > 0) {
            /* members mapped back to the source layout */
            for (int i = 0; i < nn; i++) {
                int t, d, p;
                lsim_wi_coords(Lnew, rn[i], &t, &d, &p);
                int32_t r = lsim_wi_rank(Lold, t % Lold->tp, d % Lold->dp, p);
                int dup = 0;
                for (int q = 0; q < no; q++) dup |= ro[q] == r;
                if (!dup) ro[no++] = r;
            }
        } else {
            memcpy(ro, rn, (size_t)nn * sizeof *ro);
            no = nn;
        }
        lsim_ns co = lsim_cost_collective(told, ci->kind, ci->bytes, ro, no, LSIM_ALGO_AUTO);
        lsim_ns cn = lsim_cost_collective(tnew, ci->kind, ci->bytes, rn, nn, LSIM_ALGO_AUTO);
        if (co == cn) continue;
        lsim_ns d = co > 0 ? lsim_ns_from_double((double)g->dur[v] * ((double)cn / (double)co)) : cn;
        if (d == g->dur[v]) continue;
        g->dur[v] = d;
        rec->retimed[g->kind[v]]++;
        rec->coll_retimed[cls]++;
    }
    *out = g;
    g = NULL;
cleanup:
    free(rn);
    free(ro);
    lsim_graph_free(g);
    return rc;
}

/* ------------------------------------------------------------ GPU */

static int has(const char *s, const char *w) { return strstr(s, w) != NULL; }

static lsim_ns regpu(const char *name, lsim_ns t, const lsim_gpu_spec *f, const lsim_gpu_spec *to)
{
    if (t <= f->kernel_min_ns) return lsim_ns_from_double((double)t * ((double)to->kernel_min_ns / (double)f->kernel_min_ns));
    double s = (double)t * 1e-9, r;
    int gemm = has(name, "gemm") || has(name, "Gemm") || has(name, "GEMM") || has(name, "cutlass") || has(name, "xmma") ||
               has(name, "_dgrad") || has(name, "_wgrad") || has(name, "matmul") || has(name, "cublas");
    int attn = !gemm && (has(name, "attn") || has(name, "flash") || has(name, "fmha") || has(name, "ttention"));
    if (gemm || attn) {
        double emf = gemm ? f->gemm_eff_max : f->attn_eff_max, hf = gemm ? f->gemm_eff_half : f->attn_eff_half;
        double emt = gemm ? to->gemm_eff_max : to->attn_eff_max, ht = gemm ? to->gemm_eff_half : to->attn_eff_half;
        double flops = s * f->peak_flops * emf - hf;
        if (flops < 0) flops = 0;
        r = (flops + ht) / (to->peak_flops * emt);
    } else {
        double bytes = s * f->mem_bw * f->mem_eff;
        r = bytes / (to->mem_bw * to->mem_eff);
    }
    lsim_ns ns = lsim_ns_from_double(r * 1e9);
    return ns < to->kernel_min_ns ? to->kernel_min_ns : ns;
}

int lsim_wi_gpu(const lsim_graph *in, const lsim_gpu_spec *from, const lsim_gpu_spec *to, lsim_graph **out,
                lsim_wi_counts *rec, lsim_err *err)
{
    lsim_graph *g = NULL;
    int rc = lsim_graph_clone(in, &g, err);
    if (rc) return rc;
    for (size_t v = 0; v < g->n; v++) {
        if (!is_compute(g, v)) continue;
        lsim_ns d = regpu(lsim_strtab_get(g->strings, g->name[v]), g->dur[v], from, to);
        if (d != g->dur[v]) g->dur[v] = d, rec->retimed[g->kind[v]]++;
    }
    *out = g;
    return 0;
}

/* ------------------------------------------------------------ stragglers, noise */

int lsim_wi_slow_check(double factor, lsim_err *err)
{
    if (!(factor > 0) || !isfinite(factor))
        return lsim_err_set(err, LSIM_EARG, "slow-GPU factor %g: must be a positive number", factor);
    if (factor < LSIM_WI_SLOW_MIN || factor > LSIM_WI_SLOW_MAX)
        return lsim_err_set(err, LSIM_EARG, "slow-GPU factor %g is outside %g..%g (docs/whatif.md)", factor,
                            LSIM_WI_SLOW_MIN, LSIM_WI_SLOW_MAX);
    return 0;
}

int lsim_wi_jitter_check(double sigma, lsim_err *err)
{
    if (!isfinite(sigma) || sigma < 0 || sigma > LSIM_WI_JITTER_MAX)
        return lsim_err_set(err, LSIM_EARG, "jitter (a relative standard deviation) %g is outside 0..%g (docs/whatif.md)",
                            sigma, LSIM_WI_JITTER_MAX);
    return 0;
}

int lsim_wi_slow(const lsim_graph *in, double factor, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    int rc0 = lsim_wi_slow_check(factor, err);
    if (rc0) return rc0;
    lsim_graph *g = NULL;
    int rc = lsim_graph_clone(in, &g, err);
    if (rc) return rc;
    for (size_t v = 0; v < g->n; v++) {
        if (!is_compute(g, v)) continue;
        lsim_ns d = lsim_ns_from_double((double)g->dur[v] * factor);
        if (d != g->dur[v]) g->dur[v] = d, rec->retimed[g->kind[v]]++;
    }
    *out = g;
    return 0;
}

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* a standard normal from (seed, gpu, node) alone (Box-Muller) */
static double normal(uint64_t seed, uint32_t gpu, uint64_t node)
{
    uint64_t h = splitmix(seed ^ splitmix(((uint64_t)gpu << 40) ^ node));
    uint64_t h2 = splitmix(h);
    double u1 = ((double)(h >> 11) + 1.0) / 9007199254740993.0, u2 = (double)(h2 >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* the name without synthesized tags: "L12.mb3.fwd.qkv_gemm" -> "fwd.qkv_gemm" */
static const char *strip_tags(const char *s)
{
    for (int i = 0; i < 2; i++) {
        const char *p = s;
        if (p[0] == 'L' && isdigit((unsigned char)p[1])) p++;
        else if (p[0] == 'm' && p[1] == 'b' && isdigit((unsigned char)p[2])) p += 2;
        else break;
        while (isdigit((unsigned char)*p)) p++;
        if (*p != '.') break;
        s = p + 1;
    }
    return s;
}

int lsim_wi_jitter(const lsim_graph *in, double sigma, uint64_t seed, uint32_t gpu, lsim_graph **out,
                   lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    if (!isfinite(sigma)) return lsim_err_set(err, LSIM_EARG, "jitter %g: not a number", sigma);
    if (sigma >= 0 && lsim_wi_jitter_check(sigma, err)) return LSIM_EARG; /* < 0: "trace" */
    lsim_graph *g = NULL;
    lsim_strtab *keys = NULL;
    uint32_t *key = NULL;
    double *sum = NULL, *sq = NULL;
    uint64_t *cnt = NULL;
    int rc = lsim_graph_clone(in, &g, err);
    if (rc) return rc;
    if (sigma < 0) {
        /* per-name relative spread of the graph's own kernels */
        if (!(keys = lsim_strtab_new()) || !(key = lsim_malloc((g->n ? g->n : 1) * sizeof *key))) goto nomem;
        for (size_t v = 0; v < g->n; v++) {
            key[v] = UINT32_MAX;
            if (!is_compute(g, v)) continue;
            const char *s = strip_tags(lsim_strtab_get(g->strings, g->name[v]));
            if (lsim_strtab_intern(keys, s, strlen(s), &key[v])) goto nomem;
        }
        uint32_t nk = lsim_strtab_count(keys);
        if (!(sum = lsim_calloc(nk + 1, sizeof *sum)) || !(sq = lsim_calloc(nk + 1, sizeof *sq)) ||
            !(cnt = lsim_calloc(nk + 1, sizeof *cnt)))
            goto nomem;
        for (size_t v = 0; v < g->n; v++)
            if (key[v] != UINT32_MAX) {
                double d = (double)g->dur[v];
                sum[key[v]] += d, sq[key[v]] += d * d, cnt[key[v]]++;
            }
    }
    for (size_t v = 0; v < g->n; v++) {
        if (!is_compute(g, v)) continue;
        double s = sigma;
        if (sigma < 0) {
            uint32_t k = key[v];
            if (cnt[k] < 2 || sum[k] <= 0) continue;
            double m = sum[k] / (double)cnt[k], var = sq[k] / (double)cnt[k] - m * m;
            s = var > 0 ? sqrt(var * (double)cnt[k] / (double)(cnt[k] - 1)) / m : 0;
        }
        if (s == 0) continue;
        double f = 1.0 + s * normal(seed, gpu, v);
        if (f < 0) f = 0;
        lsim_ns d = lsim_ns_from_double((double)g->dur[v] * f);
        if (d != g->dur[v]) g->dur[v] = d, rec->retimed[g->kind[v]]++;
    }
    *out = g;
    g = NULL;
    goto cleanup;
nomem:
    rc = oom(in, err);
cleanup:
    lsim_graph_free(g);
    lsim_strtab_free(keys);
    free(key);
    free(sum);
    free(sq);
    free(cnt);
    return rc;
}
