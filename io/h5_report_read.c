/* What lumosim report reads of a result archive besides its per-GPU tables:
 * the graphs and simulated times of the few GPUs a page shows in full, and
 * the job's kernels by name summed from the kernels table. Why: reading
 * every graph to draw a 4,096-GPU page held three times what the sim that
 * wrote the archive held (issue 39; docs/report-html.md). Local. */
#include <stdint.h>
#include "lumosim/alloc.h"
#include <stdlib.h>
#include <string.h>

#include "h5_internal.h"
#include "lumosim/strtab.h"

/* rows of the kernels table read at a time: bounds the reader's buffers (the names are
 * fixed-length strings, padded to the longest) */
#define KROWS_READ 16384

void lsim_store_gpu_details_free(lsim_store_gpu_detail *d, size_t n)
{
    for (size_t i = 0; d && i < n; i++) {
        lsim_graph_free(d[i].graph);
        free(d[i].start);
        free(d[i].end);
    }
    free(d);
}

/* The times of GPU x of the run (nodes/start, nodes/end at its offset: a
 * GPU that shares another's rows reads them there). */
static int read_times(sctx *c, hid_t run, const char *where, const lsim_store_run *r, const lsim_store_gpu_result *x,
                      lsim_store_gpu_detail *d)
{
    uint64_t cnt = x->node_count;
    d->start = lsim_malloc((cnt ? cnt : 1) * sizeof *d->start);
    d->end = lsim_malloc((cnt ? cnt : 1) * sizeof *d->end);
    if (!d->start || !d->end) return h5s_nomem(c);
    int rc = h5s_get_col(c, run, where, "nodes/start", T_I64, 1, r->nnodes, x->node_offset, cnt, d->start);
    if (!rc) rc = h5s_get_col(c, run, where, "nodes/end", T_I64, 1, r->nnodes, x->node_offset, cnt, d->end);
    for (uint64_t v = 0; !rc && v < cnt; v++)
        if (d->end[v] < d->start[v])
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/nodes/end of node %llu is before its start", where,
                          (unsigned long long)(x->node_offset + v));
    return rc;
}

int lsim_store_read_gpu_details(const char *path, const char *run_name, const lsim_store_run *r, const size_t *gpus,
                                size_t n, lsim_store_gpu_detail **out, lsim_err *err)
{
    sctx c;
    hid_t runs = -1, run = -1, gg = -1;
    char where[300], gw[512];
    lsim_graph **gs = NULL;
    size_t ng = 0;
    *out = NULL;
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    lsim_store_gpu_detail *d = lsim_calloc(n ? n : 1, sizeof *d);
    int rc = d ? 0 : h5s_nomem(&c);
    for (size_t i = 0; !rc && i < n; i++)
        if (gpus[i] >= r->ngpus || (i && gpus[i] <= gpus[i - 1]))
            rc = h5s_fail(&c, LSIM_EARG, "GPU %zu requested (out of order or past the run's %zu)", gpus[i], r->ngpus);
    if (!rc) rc = h5s_open_run(&c, run_name, &runs, &run, where, sizeof where);
    if (!rc && H5Lexists(run, "graph", H5P_DEFAULT) <= 0)
        rc = h5s_fail(&c, LSIM_EARG, "%s keeps no graphs (written with --detail %s)", where,
                      lsim_store_detail_name(r->detail));
    snprintf(gw, sizeof gw, "%s/graph", where);
    if (!rc && (gg = H5Gopen2(run, "graph", H5P_DEFAULT)) < 0) rc = h5s_fail(&c, LSIM_EFORMAT, "%s cannot be opened", gw);
    if (!rc && n) rc = h5s_read_graph_tables(&c, gg, gw, 0, n, gpus, &gs, &ng);
    if (!rc && ng != n) rc = h5s_fail(&c, LSIM_EINTERNAL, "%s: %zu GPUs read of %zu", gw, ng, n);
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_store_gpu_result *x = &r->gpus[gpus[i]];
        d[i].graph = gs[i];
        gs[i] = NULL;
        rc = h5s_check_run_graph(&c, where, gpus[i], d[i].graph, x);
        if (!rc) rc = read_times(&c, run, where, r, x, &d[i]);
    }
    if (gs) lsim_store_free_graphs(gs, ng);
    if (gg >= 0) H5Gclose(gg);
    if (run >= 0) H5Gclose(run);
    if (runs >= 0) H5Gclose(runs);
    if (rc) lsim_store_gpu_details_free(d, n);
    else *out = d;
    return h5s_ctx_done(&c, rc, err);
}

int lsim_store_read_duty(const char *path, const char *run_name, lsim_store_run *r, const size_t *gpus, size_t n,
                         lsim_err *err)
{
    sctx c;
    hid_t runs = -1, run = -1;
    char where[300];
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = h5s_open_run(&c, run_name, &runs, &run, where, sizeof where);
    int64_t tot[2] = {0, 0};
    for (int k = 0; !rc && k < 2; k++)
        if ((tot[k] = h5s_dset_rows(&c, run, where, k ? "duty/predicted" : "duty/actual")) < 0) rc = c.e.code;
    for (size_t i = 0; !rc && i < n; i++) {
        if (gpus[i] >= r->ngpus) {
            rc = h5s_fail(&c, LSIM_EARG, "GPU %zu requested, the run has %zu", gpus[i], r->ngpus);
            break;
        }
        lsim_store_gpu_result *g = &r->gpus[gpus[i]];
        lsim_rank_report *rep = &g->report;
        for (int k = 0; !rc && k < 2; k++) {
            uint64_t o = g->duty_offset[k], m = g->duty_count[k];
            double **dst = k ? &rep->duty_predicted : &rep->duty_actual;
            if (*dst || !m) continue; /* already read, or none */
            if (m > UINT32_MAX || o > (uint64_t)tot[k] || m > (uint64_t)tot[k] - o) {
                rc = h5s_fail(&c, LSIM_EFORMAT, "%s/gpus/duty_%s_offset and count of GPU %zu run past the %lld rows "
                              "of duty/%s", where, k ? "predicted" : "actual", gpus[i], (long long)tot[k],
                              k ? "predicted" : "actual");
                break;
            }
            if (!(*dst = lsim_malloc(m * sizeof **dst))) rc = h5s_nomem(&c);
            else rc = h5s_get_col(&c, run, where, k ? "duty/predicted" : "duty/actual", T_F64, 1, (uint64_t)tot[k], o, m,
                                  *dst);
            if (!rc) *(k ? &rep->nbins_predicted : &rep->nbins_actual) = (uint32_t)m;
        }
    }
    if (run >= 0) H5Gclose(run);
    if (runs >= 0) H5Gclose(runs);
    return h5s_ctx_done(&c, rc, err);
}

/* How many GPUs use each row of the kernels table (a GPU whose kernel rows equal an
 * earlier GPU's points at those: docs/hdf5-schema.md, "Result file"): a
 * running sum over +1 at each GPU's first row and -1 past its last. */
static int row_uses(sctx *c, hid_t run, const char *where, uint64_t ktot, uint64_t **uses)
{
    int64_t ngpu = h5s_dset_rows(c, run, where, "gpus/kernel_offset");
    if (ngpu < 0) return c->e.code;
    uint64_t *off = lsim_malloc(((size_t)ngpu + 1) * sizeof *off), *cnt = lsim_malloc(((size_t)ngpu + 1) * sizeof *cnt);
    int64_t *diff = lsim_calloc(ktot + 1, sizeof *diff);
    int rc = off && cnt && diff ? 0 : h5s_nomem(c);
    if (!rc) rc = h5s_get_col(c, run, where, "gpus/kernel_offset", T_U64, 1, (uint64_t)ngpu, 0, (uint64_t)ngpu, off);
    if (!rc) rc = h5s_get_col(c, run, where, "gpus/kernel_count", T_U64, 1, (uint64_t)ngpu, 0, (uint64_t)ngpu, cnt);
    for (int64_t g = 0; !rc && g < ngpu; g++) {
        if (off[g] > ktot || cnt[g] > ktot - off[g])
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/kernel_offset and kernel_count of GPU %lld run past the %llu rows "
                          "of kernels/*", where, (long long)g, (unsigned long long)ktot);
        else if (cnt[g])
            diff[off[g]]++, diff[off[g] + cnt[g]]--;
    }
    uint64_t *u = rc ? NULL : (uint64_t *)diff; /* in place: the running sum is never negative */
    int64_t run_sum = 0;
    for (uint64_t k = 0; u && k < ktot; k++) {
        run_sum += diff[k];
        u[k] = (uint64_t)run_sum;
    }
    free(off);
    free(cnt);
    if (rc) free(diff);
    else *uses = u;
    return rc;
}

/* a x m, saturating (m GPUs use the row whose total is a) */
static lsim_ns times_sat(lsim_ns a, uint64_t m)
{
    if (a <= 0 || m == 0) return a > 0 ? 0 : a;
    if (m > (uint64_t)(INT64_MAX / a)) return INT64_MAX;
    return a * (lsim_ns)m;
}

/* Rows [k0, k0 + m) of the kernels table added to the totals by name. */
static int add_rows(sctx *c, hid_t run, const char *where, uint64_t ktot, uint64_t k0, size_t m, const uint64_t *uses,
                    lsim_strtab *keys, lsim_report_kernel **ka, size_t *cap)
{
    char **nm = NULL;
    uint64_t *cnt = lsim_malloc(m * sizeof *cnt), *obs = lsim_malloc(m * sizeof *obs);
    int64_t *act = lsim_malloc(m * sizeof *act), *pre = lsim_malloc(m * sizeof *pre);
    int rc = cnt && obs && act && pre ? 0 : h5s_nomem(c);
    if (!rc) rc = h5s_get_strings(c, run, where, "kernels/name", ktot, k0, m, &nm);
    if (!rc) rc = h5s_get_col(c, run, where, "kernels/count", T_U64, 1, ktot, k0, m, cnt);
    if (!rc) rc = h5s_get_col(c, run, where, "kernels/observed_count", T_U64, 1, ktot, k0, m, obs);
    if (!rc) rc = h5s_get_col(c, run, where, "kernels/actual_total", T_I64, 1, ktot, k0, m, act);
    if (!rc) rc = h5s_get_col(c, run, where, "kernels/predicted_total", T_I64, 1, ktot, k0, m, pre);
    for (size_t q = 0; !rc && q < m; q++) {
        uint64_t u = uses[k0 + q];
        uint32_t id;
        if (!u) continue;
        if (obs[q] > cnt[q] || act[q] < 0 || pre[q] < 0) {
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/kernels: row %llu is inconsistent (observed_count over count, or a "
                          "negative total)", where, (unsigned long long)(k0 + q));
            break;
        }
        if (lsim_strtab_intern(keys, nm[q], strlen(nm[q]), &id)) {
            rc = h5s_nomem(c);
            break;
        }
        size_t old = *cap;
        if (LSIM_GROW(*ka, cap, (size_t)id + 1)) {
            rc = h5s_nomem(c);
            break;
        }
        if (*cap > old) memset(*ka + old, 0, (*cap - old) * sizeof **ka);
        lsim_report_kernel *k = &(*ka)[id];
        k->count += cnt[q] * u;
        k->observed += obs[q] * u;
        k->actual_ns = lsim_ns_add_sat(k->actual_ns, times_sat(act[q], u));
        k->predicted_ns = lsim_ns_add_sat(k->predicted_ns, times_sat(pre[q], u));
    }
    h5s_free_strs(nm, nm ? m : 0);
    free(cnt);
    free(obs);
    free(act);
    free(pre);
    return rc;
}

int lsim_store_read_kernel_totals(const char *path, const char *run_name, lsim_report_kernel **out, size_t *n,
                                  int *have, lsim_err *err)
{
    sctx c;
    hid_t runs = -1, run = -1;
    char where[300];
    uint64_t *uses = NULL;
    lsim_report_kernel *ka = NULL;
    size_t cap = 0;
    lsim_strtab *keys = NULL;
    *out = NULL;
    *n = 0;
    *have = 0;
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = h5s_open_run(&c, run_name, &runs, &run, where, sizeof where);
    int present = !rc && H5Lexists(run, "kernels", H5P_DEFAULT) > 0 &&
                  H5Lexists(run, "gpus/kernel_offset", H5P_DEFAULT) > 0;
    int64_t ktot = present ? h5s_dset_rows(&c, run, where, "kernels/count") : 0;
    if (ktot < 0) rc = c.e.code;
    if (!rc && present) rc = row_uses(&c, run, where, (uint64_t)ktot, &uses);
    if (!rc && present && !(keys = lsim_strtab_new())) rc = h5s_nomem(&c);
    for (uint64_t k0 = 0; !rc && present && k0 < (uint64_t)ktot; k0 += KROWS_READ) {
        size_t m = (uint64_t)ktot - k0 < KROWS_READ ? (size_t)((uint64_t)ktot - k0) : KROWS_READ;
        rc = add_rows(&c, run, where, (uint64_t)ktot, k0, m, uses, keys, &ka, &cap);
    }
    uint32_t nk = !rc && keys ? lsim_strtab_count(keys) : 0;
    for (uint32_t k = 0; !rc && k < nk; k++)
        if (!(ka[k].name = lsim_strdup(lsim_strtab_get(keys, k)))) rc = h5s_nomem(&c);
    if (rc) lsim_report_kernels_free(ka, nk);
    else {
        *out = ka;
        *n = nk;
        *have = present;
    }
    lsim_strtab_free(keys);
    free(uses);
    if (run >= 0) H5Gclose(run);
    if (runs >= 0) H5Gclose(runs);
    return h5s_ctx_done(&c, rc, err);
}
