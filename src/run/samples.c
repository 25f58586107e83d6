/* Prediction intervals (include/lumosim/samples.h, docs/intervals.md):
 * pools of traced durations per op key, the draws, the sample runs and
 * their report. */
#include "lumosim/samples.h"
#include "lumosim/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/report.h"
#include "lumosim/strtab.h"

#define NONE UINT32_MAX

struct lsim_pools {
    lsim_pool_mode mode;
    size_t ngpu;
    size_t *nn;        /* per GPU: its node count */
    uint32_t **key;    /* per GPU, per node: key id or NONE */
    uint32_t nkeys;
    uint64_t *koff;    /* CSR over keys: [koff[k], koff[k+1]) */
    uint32_t *kgpu;    /* entries by key, then GPU, then node */
    lsim_ns *kdur;
    lsim_pools_info info;
    double modelled;   /* > 0: every op drawn with this spread (lsim_pools_modelled) */
};

static int is_gpu_op(const lsim_graph *g, size_t v)
{
    return g->kind[v] == LSIM_N_KERNEL || g->kind[v] == LSIM_N_MEMCPY || g->kind[v] == LSIM_N_MEMSET;
}

/* The key of GPU op v: its name, and a collective's bytes after a byte no
 * name holds (so "x" of 1 MiB and "x" of 2 MiB are two keys). */
static int key_of(const lsim_graph *g, size_t v, lsim_strtab *keys, uint32_t *id)
{
    const char *nm = lsim_strtab_get(g->strings, g->name[v]);
    char buf[1024];
    int64_t bytes = g->coll[v] >= 0 && (size_t)g->coll[v] < g->ncoll ? g->colls[g->coll[v]].bytes : -1;
    int len = bytes >= 0 ? snprintf(buf, sizeof buf, "%.900s\x1f%lld", nm, (long long)bytes)
                         : snprintf(buf, sizeof buf, "%.1000s", nm);
    return lsim_strtab_intern(keys, buf, (size_t)len, id);
}

static int cmp_ns(const void *a, const void *b)
{
    lsim_ns x = *(const lsim_ns *)a, y = *(const lsim_ns *)b;
    return (x > y) - (x < y);
}

/* The [lo, hi) entries of key k that are GPU gpu's own (entries are by GPU). */
static void own_range(const lsim_pools *p, uint32_t k, size_t gpu, uint64_t *lo, uint64_t *hi)
{
    uint64_t a = p->koff[k], b = p->koff[k + 1];
    while (a < b) {
        uint64_t m = a + (b - a) / 2;
        if (p->kgpu[m] < gpu) a = m + 1;
        else b = m;
    }
    *lo = a;
    b = p->koff[k + 1];
    while (a < b) {
        uint64_t m = a + (b - a) / 2;
        if (p->kgpu[m] <= gpu) a = m + 1;
        else b = m;
    }
    *hi = a;
}

/* Entries of key k a node of GPU gpu may draw from. */
static uint64_t usable(const lsim_pools *p, uint32_t k, size_t gpu, uint64_t *lo, uint64_t *hi)
{
    uint64_t m = p->koff[k + 1] - p->koff[k];
    *lo = *hi = p->koff[k];
    if (p->mode == LSIM_POOL_OTHERS) {
        own_range(p, k, gpu, lo, hi);
        m -= *hi - *lo;
    }
    return m;
}

int lsim_pools_new(lsim_graph *const *g, size_t n, lsim_pool_mode mode, lsim_pools **out, lsim_err *err)
{
    *out = NULL;
    lsim_pools *p = lsim_calloc(1, sizeof *p);
    lsim_strtab *keys = lsim_strtab_new();
    uint64_t *fill = NULL;
    double *rel = NULL;
    int rc = 0;
    if (!p || !keys || !(p->nn = lsim_calloc(n ? n : 1, sizeof *p->nn)) || !(p->key = lsim_calloc(n ? n : 1, sizeof *p->key)))
        goto nomem;
    p->mode = mode;
    p->ngpu = n;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        p->nn[i] = g[i]->n;
        if (!(p->key[i] = lsim_malloc((g[i]->n ? g[i]->n : 1) * sizeof *p->key[i]))) goto nomem;
        for (size_t v = 0; v < g[i]->n; v++) {
            p->key[i][v] = NONE;
            if (!is_gpu_op(g[i], v)) continue;
            if (key_of(g[i], v, keys, &p->key[i][v])) goto nomem;
            total++;
        }
    }
    p->nkeys = lsim_strtab_count(keys);
    if (!(p->koff = lsim_calloc((size_t)p->nkeys + 1, sizeof *p->koff)) ||
        !(p->kgpu = lsim_malloc((total ? total : 1) * sizeof *p->kgpu)) ||
        !(p->kdur = lsim_malloc((total ? total : 1) * sizeof *p->kdur)) ||
        !(fill = lsim_calloc((size_t)p->nkeys + 1, sizeof *fill)) || !(rel = lsim_malloc(((size_t)p->nkeys + 1) * sizeof *rel)))
        goto nomem;
    for (size_t i = 0; i < n; i++)
        for (size_t v = 0; v < g[i]->n; v++)
            if (p->key[i][v] != NONE) p->koff[p->key[i][v] + 1]++;
    for (uint32_t k = 0; k < p->nkeys; k++) p->koff[k + 1] += p->koff[k];
    for (size_t i = 0; i < n; i++) /* GPU order, then node order: own ranges are contiguous */
        for (size_t v = 0; v < g[i]->n; v++) {
            uint32_t k = p->key[i][v];
            if (k == NONE) continue;
            uint64_t at = p->koff[k] + fill[k]++;
            p->kgpu[at] = (uint32_t)i;
            p->kdur[at] = g[i]->dur[v];
        }
    /* the fitted spread: median relative std-dev of the well-seen keys */
    size_t nr = 0;
    for (uint32_t k = 0; k < p->nkeys; k++) {
        uint64_t m = p->koff[k + 1] - p->koff[k];
        if (m < LSIM_SAMPLES_SPREAD_MIN) continue;
        double s = 0, q = 0;
        for (uint64_t e = p->koff[k]; e < p->koff[k + 1]; e++) s += (double)p->kdur[e];
        double mean = s / (double)m;
        if (!(mean > 0)) continue;
        for (uint64_t e = p->koff[k]; e < p->koff[k + 1]; e++) q += ((double)p->kdur[e] - mean) * ((double)p->kdur[e] - mean);
        rel[nr++] = sqrt(q / (double)(m - 1)) / mean;
    }
    if (nr) {
        /* sort the doubles by hand-free qsort on their bits is not safe
         * for NaN; none here (finite by construction) */
        for (size_t a = 1; a < nr; a++) /* insertion sort: nr is the key count */
            for (size_t b = a; b > 0 && rel[b - 1] > rel[b]; b--) {
                double t = rel[b];
                rel[b] = rel[b - 1];
                rel[b - 1] = t;
            }
        p->info.spread = nr % 2 ? rel[nr / 2] : 0.5 * (rel[nr / 2 - 1] + rel[nr / 2]);
    }
    p->info.ops = total;
    p->info.keys = p->nkeys;
    for (size_t i = 0; i < n; i++)
        for (size_t v = 0; v < g[i]->n; v++) {
            uint32_t k = p->key[i][v];
            uint64_t lo, hi;
            if (k != NONE && usable(p, k, i, &lo, &hi) < 2) p->info.ops_spread++;
        }
    *out = p;
    p = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory building the duration pools");
cleanup:
    lsim_pools_free(p);
    lsim_strtab_free(keys);
    free(fill);
    free(rel);
    return rc;
}

void lsim_pools_free(lsim_pools *p)
{
    if (!p) return;
    for (size_t i = 0; p->key && i < p->ngpu; i++) free(p->key[i]);
    free(p->key);
    free(p->nn);
    free(p->koff);
    free(p->kgpu);
    free(p->kdur);
    free(p);
}

void lsim_pools_get_info(const lsim_pools *p, lsim_pools_info *out) { *out = p->info; }

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t lsim_samples_hash(uint64_t seed, uint64_t sample, uint64_t gpu, uint64_t node)
{
    return splitmix(seed ^ splitmix(sample ^ splitmix((gpu << 40) ^ node)));
}

int lsim_pools_draw(const lsim_pools *p, lsim_graph *g, size_t gpu, uint64_t seed, uint64_t sample, lsim_err *err)
{
    if (gpu >= p->ngpu || g->n != p->nn[gpu])
        return lsim_err_set(err, LSIM_EARG, "%s: GPU %zu does not match the duration pools", g->source, gpu);
    const uint32_t *key = p->key[gpu];
    for (size_t v = 0; v < g->n; v++) {
        uint32_t k = key[v];
        if (k == NONE) continue;
        uint64_t lo, hi, m = usable(p, k, gpu, &lo, &hi), h = lsim_samples_hash(seed, sample, gpu, v);
        if (p->modelled > 0) m = 0; /* modelled durations: no pool to draw from */
        if (m >= 2) {
            uint64_t j = p->koff[k] + h % m;
            if (j >= lo) j += hi - lo; /* skip this GPU's own entries (others) */
            g->dur[v] = p->kdur[j];
            continue;
        }
        /* one duration or none besides this node's own: the fitted spread
         * around the other GPU's value, else around its own */
        lsim_ns base = g->dur[v];
        if (m == 1) base = p->kdur[lo > p->koff[k] ? p->koff[k] : hi];
        if (p->info.spread <= 0) {
            g->dur[v] = base;
            continue;
        }
        uint64_t h2 = splitmix(h);
        double u1 = ((double)(h >> 11) + 1.0) / 9007199254740993.0, u2 = (double)(h2 >> 11) / 9007199254740992.0;
        double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2), f = 1.0 + p->info.spread * z;
        g->dur[v] = lsim_ns_from_double((double)base * (f > 0 ? f : 0));
    }
    return 0;
}

int lsim_samples_run(const lsim_run_opts *o, lsim_graph *const *g, size_t n, size_t nit, const lsim_pools *p,
                     uint64_t seed, uint64_t first, uint64_t count, lsim_sample *out, lsim_err *err)
{
    int rc = 0;
    lsim_graph **cp = lsim_calloc(n ? n : 1, sizeof *cp);
    if (!cp) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (uint64_t s = 0; s < count && !rc; s++) {
        lsim_run r;
        memset(&r, 0, sizeof r);
        for (size_t i = 0; i < n && !rc; i++) {
            rc = lsim_graph_clone(g[i], &cp[i], err);
            if (!rc) rc = lsim_pools_draw(p, cp[i], i, seed, first + s, err);
        }
        if (rc) {
            for (size_t i = 0; i < n; i++) lsim_graph_free(cp[i]), cp[i] = NULL;
            break;
        }
        rc = lsim_run_add_graphs(&r, cp, n, "sample", err); /* r owns them now */
        memset(cp, 0, n * sizeof *cp);
        lsim_run_opts so = *o; /* the sample's own collective draws (replica_draw) */
        so.replica_seed = seed;
        so.replica_sample = first + s;
        if (!rc) rc = lsim_run_simulate(&so, &r, err);
        if (!rc) {
            lsim_sample *x = &out[s];
            lsim_ns a;
            lsim_report_job_span(r.items, r.n, &a, &x->job);
            lsim_run_mean_breakdown(&r, x->bd);
            for (size_t i = 0; i < r.n; i++) {
                x->window[i] = r.reps[i].window_predicted;
                for (size_t j = 0; j < nit; j++)
                    x->iter[i * nit + j] = j < r.reps[i].niters ? r.reps[i].iters[j].predicted : -1;
            }
        }
        lsim_run_free(&r);
    }
    free(cp);
    return rc;
}

lsim_ns lsim_samples_percentile(lsim_ns *v, size_t n, double q)
{
    qsort(v, n, sizeof *v, cmp_ns);
    double r = ceil(q / 100.0 * (double)n);
    size_t k = r < 1 ? 0 : (size_t)r - 1;
    return v[k < n ? k : n - 1];
}

/* p5, p50, p95 of one quantity over the samples (get(s) its value). */
static void pct3(const lsim_samples_report *R, lsim_ns *tmp, int what, size_t gpu, lsim_ns out[3])
{
    for (uint64_t s = 0; s < R->n; s++)
        tmp[s] = what < 0 ? R->s[s].job : what < 4 ? R->s[s].bd[what] : what == 4 ? R->s[s].window[gpu]
                                                                                 : R->s[s].iter[gpu];
    out[0] = lsim_samples_percentile(tmp, R->n, 5);
    out[1] = lsim_samples_percentile(tmp, R->n, 50);
    out[2] = lsim_samples_percentile(tmp, R->n, 95);
}

int lsim_samples_write(FILE *f, const lsim_samples_report *R, int json, lsim_err *err)
{
    static const char *const comp[4] = {"exposed_compute", "overlapped", "exposed_comm", "other"};
    lsim_ns *tmp = lsim_malloc((R->n ? R->n : 1) * sizeof *tmp), q[3];
    if (!tmp) return lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
    const char *mode = R->mode == LSIM_POOL_OTHERS ? "others" : "job";
    uint64_t inside = 0, measured = 0, iin = 0, imeas = 0;
    int ok = 1;
    if (json) {
        ok &= fprintf(f,
                      "{\"lumosim_version\":\"%s\",\"samples\":%llu,\"seed\":%llu,\"pool\":\"%s\","
                      "\"pool_info\":{\"gpu_ops\":%llu,\"keys\":%llu,\"ops_with_fitted_spread\":%llu,"
                      "\"fitted_spread\":%.6g},\"point_ns\":%lld,\"job\":",
                      LSIM_VERSION, (unsigned long long)R->n, (unsigned long long)R->seed, mode,
                      (unsigned long long)R->info.ops, (unsigned long long)R->info.keys,
                      (unsigned long long)R->info.ops_spread, R->info.spread, (long long)R->point) > 0;
        pct3(R, tmp, -1, 0, q);
        ok &= fprintf(f, "{\"p5_ns\":%lld,\"p50_ns\":%lld,\"p95_ns\":%lld", (long long)q[0], (long long)q[1],
                      (long long)q[2]) > 0;
        if (R->actual_job >= 0)
            ok &= fprintf(f, ",\"actual_ns\":%lld,\"inside\":%s", (long long)R->actual_job,
                          R->actual_job >= q[0] && R->actual_job <= q[2] ? "true" : "false") > 0;
        ok &= fputs("},\"breakdown\":{", f) >= 0;
        for (int c = 0; c < 4; c++) {
            pct3(R, tmp, c, 0, q);
            ok &= fprintf(f, "%s\"%s\":{\"p5_ns\":%lld,\"p50_ns\":%lld,\"p95_ns\":%lld}", c ? "," : "", comp[c],
                          (long long)q[0], (long long)q[1], (long long)q[2]) > 0;
        }
        ok &= fputs("},\"gpus\":[", f) >= 0;
        for (size_t i = 0; i < R->ngpu; i++) {
            pct3(R, tmp, 4, i, q);
            ok &= fprintf(f, "%s{\"gpu\":%zu,\"window\":{\"p5_ns\":%lld,\"p50_ns\":%lld,\"p95_ns\":%lld", i ? "," : "",
                          i, (long long)q[0], (long long)q[1], (long long)q[2]) > 0;
            if (R->actual[i] >= 0) {
                int in = R->actual[i] >= q[0] && R->actual[i] <= q[2];
                inside += (uint64_t)in, measured++;
                ok &= fprintf(f, ",\"actual_ns\":%lld,\"inside\":%s", (long long)R->actual[i], in ? "true" : "false") > 0;
            }
            ok &= fputs("},\"iterations\":[", f) >= 0;
            for (size_t j = 0, k = 0; j < R->nit; j++) {
                size_t at = i * R->nit + j;
                if (R->s[0].iter[at] < 0) continue;
                pct3(R, tmp, 5, at, q);
                ok &= fprintf(f, "%s{\"p5_ns\":%lld,\"p50_ns\":%lld,\"p95_ns\":%lld", k++ ? "," : "", (long long)q[0],
                              (long long)q[1], (long long)q[2]) > 0;
                if (R->actual_iter && R->actual_iter[at] >= 0) {
                    int in = R->actual_iter[at] >= q[0] && R->actual_iter[at] <= q[2];
                    iin += (uint64_t)in, imeas++;
                    ok &= fprintf(f, ",\"actual_ns\":%lld,\"inside\":%s", (long long)R->actual_iter[at],
                                  in ? "true" : "false") > 0;
                }
                ok &= fputc('}', f) != EOF;
            }
            ok &= fputs("]}", f) >= 0;
        }
        ok &= fprintf(f,
                      "],\"coverage\":{\"windows_inside\":%llu,\"windows_measured\":%llu,\"iterations_inside\":%llu,"
                      "\"iterations_measured\":%llu}}\n",
                      (unsigned long long)inside, (unsigned long long)measured, (unsigned long long)iin,
                      (unsigned long long)imeas) > 0;
    } else {
        ok &= fprintf(f,
                      "%llu samples (seed %llu): GPU op durations drawn from the %s's traced durations of the same op "
                      "(%llu ops, %llu keys); %llu ops without two durations to draw from get the fitted spread "
                      "%.2f %%\n",
                      (unsigned long long)R->n, (unsigned long long)R->seed,
                      R->mode == LSIM_POOL_OTHERS ? "other GPUs" : "job", (unsigned long long)R->info.ops,
                      (unsigned long long)R->info.keys, (unsigned long long)R->info.ops_spread,
                      100.0 * R->info.spread) > 0;
        ok &= fprintf(f, "%-34s %12s %12s %12s %12s\n", "ms", "p5", "p50", "p95", "actual") > 0;
        pct3(R, tmp, -1, 0, q);
        ok &= fprintf(f, "%-34s %12.3f %12.3f %12.3f", "job span", (double)q[0] / 1e6, (double)q[1] / 1e6,
                      (double)q[2] / 1e6) > 0;
        ok &= (R->actual_job >= 0 ? fprintf(f, " %12.3f\n", (double)R->actual_job / 1e6) : fprintf(f, " %12s\n", "-")) > 0;
        for (int c = 0; c < 4; c++) {
            char lab[64];
            snprintf(lab, sizeof lab, "%s (mean over GPUs)", comp[c]);
            pct3(R, tmp, c, 0, q);
            ok &= fprintf(f, "%-34s %12.3f %12.3f %12.3f %12s\n", lab, (double)q[0] / 1e6, (double)q[1] / 1e6,
                          (double)q[2] / 1e6, "") > 0;
        }
        for (size_t i = 0; i < R->ngpu; i++) {
            char lab[64];
            snprintf(lab, sizeof lab, "GPU %zu window", i);
            pct3(R, tmp, 4, i, q);
            ok &= fprintf(f, "%-34s %12.3f %12.3f %12.3f", lab, (double)q[0] / 1e6, (double)q[1] / 1e6,
                          (double)q[2] / 1e6) > 0;
            if (R->actual[i] >= 0) {
                int in = R->actual[i] >= q[0] && R->actual[i] <= q[2];
                inside += (uint64_t)in, measured++;
                ok &= fprintf(f, " %12.3f %s\n", (double)R->actual[i] / 1e6, in ? "inside" : "OUTSIDE") > 0;
            } else {
                ok &= fprintf(f, " %12s\n", "-") > 0;
            }
            for (size_t j = 0; j < R->nit; j++) {
                size_t at = i * R->nit + j;
                if (R->s[0].iter[at] < 0) continue;
                snprintf(lab, sizeof lab, "  iteration %zu", j);
                pct3(R, tmp, 5, at, q);
                ok &= fprintf(f, "%-34s %12.3f %12.3f %12.3f", lab, (double)q[0] / 1e6, (double)q[1] / 1e6,
                              (double)q[2] / 1e6) > 0;
                if (R->actual_iter && R->actual_iter[at] >= 0) {
                    int in = R->actual_iter[at] >= q[0] && R->actual_iter[at] <= q[2];
                    iin += (uint64_t)in, imeas++;
                    ok &= fprintf(f, " %12.3f %s\n", (double)R->actual_iter[at] / 1e6, in ? "inside" : "OUTSIDE") > 0;
                } else {
                    ok &= fprintf(f, " %12s\n", "-") > 0;
                }
            }
        }
        if (measured)
            ok &= fprintf(f, "measured inside the p5..p95 interval: windows %llu of %llu, iterations %llu of %llu\n",
                          (unsigned long long)inside, (unsigned long long)measured, (unsigned long long)iin,
                          (unsigned long long)imeas) > 0;
    }
    free(tmp);
    return ok ? 0 : lsim_err_set(err, LSIM_EIO, "cannot write the report");
}

void lsim_pools_modelled(lsim_pools *p, double spread)
{
    p->modelled = spread;
    p->info.spread = spread;
    p->info.ops_spread = p->info.ops;
}

int lsim_samples_replica_range(const lsim_run_opts *o, const lsim_run *r, uint64_t n, uint64_t seed,
                               lsim_job_range *out, lsim_err *err)
{
    memset(out, 0, sizeof *out);
    if (!r->replicated || !r->n || !n) return lsim_err_set(err, LSIM_EARG, "the range needs a job made by --replicate-from");
    lsim_pools *p = NULL;
    lsim_sample *smp = lsim_calloc(n, sizeof *smp);
    lsim_ns *win = lsim_malloc(n * r->n * sizeof *win), *job = lsim_malloc(n * sizeof *job);
    int rc = smp && win && job ? 0 : lsim_err_set(err, LSIM_ENOMEM, "the range: out of memory");
    if (!rc) rc = lsim_pools_new(r->graphs, r->n, LSIM_POOL_JOB, &p, err);
    for (uint64_t k = 0; !rc && k < n; k++) smp[k].window = win + k * r->n;
    /* the point run's options, without what only the point run shows */
    lsim_run_opts ro = *o;
    ro.critical = 0;
    ro.no_bind = 1;
    ro.on_event = NULL;
    ro.replica_draw = 1;
    if (!rc) rc = lsim_samples_run(&ro, r->graphs, r->n, 0, p, seed, 0, n, smp, err);
    if (!rc) rc = lsim_run_replica_waits(r->graphs[0], &out->colls, &out->colls_waited, &out->waited, err);
    if (!rc) {
        for (uint64_t k = 0; k < n; k++) job[k] = smp[k].job;
        out->q[0] = lsim_samples_percentile(job, n, 5);
        out->q[1] = lsim_samples_percentile(job, n, 50);
        out->q[2] = lsim_samples_percentile(job, n, 95);
        out->n = n;
        out->seed = seed;
        out->source = o->replicate_from;
        out->actual = -1;
        if (r->ntruth) { /* the real ranks' windows (lsim_run_measure_truth) */
            lsim_ns pr;
            lsim_report_job_span(r->items, r->n, &out->actual, &pr);
        }
    }
    lsim_pools_free(p);
    free(smp);
    free(win);
    free(job);
    return rc;
}
