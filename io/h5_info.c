/* What a store or result file is and holds: lsim_store_probe,
 * lsim_store_read_attr and lsim_store_info (store.h). Local. */
#include "h5_internal.h"

#include "lumosim/memest.h"
#include "lumosim/metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int lsim_store_read_attr(const char *path, const char *name, char **text, lsim_err *err)
{
    sctx c;
    *text = NULL;
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = h5s_open_file(&c);
    if (!rc) {
        int got = h5s_get_attr_str(c.file, name, text);
        if (got == H5S_NOMEM) rc = h5s_nomem(&c);
        else if (got < 0) rc = h5s_fail(&c, LSIM_EFORMAT, "attribute %s is not a string", name);
        else if (got == 0) rc = h5s_fail(&c, LSIM_EARG, "no attribute %s", name);
    }
    return h5s_ctx_done(&c, rc, err);
}
lsim_store_kind h5s_kind_of(const char *attr)
{
    if (!attr) return LSIM_STORE_OTHER;
    if (!strcmp(attr, LSIM_STORE_KIND_GRAPHS)) return LSIM_STORE_GRAPHS;
    if (!strcmp(attr, LSIM_STORE_KIND_RESULTS)) return LSIM_STORE_RESULTS;
    if (!strcmp(attr, LSIM_STORE_KIND_SEARCH)) return LSIM_STORE_SEARCH;
    return LSIM_STORE_OTHER;
}

lsim_store_kind lsim_store_probe(const char *path)
{
    if (!path) return LSIM_STORE_NOT_HDF5;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return LSIM_STORE_NOT_HDF5;
    H5E_auto2_t fn;
    void *data;
    h5s_quiet_exit();
    H5Eget_auto2(H5E_DEFAULT, &fn, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    lsim_store_kind k = LSIM_STORE_NOT_HDF5;
    if (H5Fis_hdf5(path) > 0) {
        hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (f >= 0) {
            char *kind = NULL;
            k = LSIM_STORE_OTHER;
            if (h5s_get_attr_str(f, "kind", &kind) > 0) k = h5s_kind_of(kind);
            free(kind);
            H5Fclose(f);
        }
    }
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, fn, data);
    return k;
}
/* Each lumosim kind: its name, what writes it, what reads it (the words of
 * every wrong-kind refusal, lsim_store_refuse_kind and h5s_check_root). */
static const struct {
    const char *name, *made_by, *read_by;
} kind_words[] = {
    [LSIM_STORE_GRAPHS] = {"graph store", "lumosim build, synth or whatif",
                           "simulate it with lumosim sim, replay or report, or reshape it with lumosim whatif"},
    [LSIM_STORE_RESULTS] = {"result archive", "lumosim sim -o", "read it with lumosim report, info or collect"},
    [LSIM_STORE_SEARCH] = {"search result", "lumosim search -o", "read it with lumosim info or lumosim search --merge"},
};

const char *lsim_store_kind_name(lsim_store_kind k)
{
    return k == LSIM_STORE_GRAPHS || k == LSIM_STORE_RESULTS || k == LSIM_STORE_SEARCH ? kind_words[k].name : NULL;
}

int lsim_store_refuse_kind(const char *path, lsim_store_kind is, const char *takes, lsim_err *err)
{
    const char *name = lsim_store_kind_name(is);
    if (!name) return 0;
    return lsim_err_set(err, LSIM_EFORMAT, "%s: is a lumosim %s (written by %s), not %s: %s", path, name,
                        kind_words[is].made_by, takes, kind_words[is].read_by);
}

/* ------------------------------------------------------------ info */

typedef struct sstat {
    char name[48];
    uint64_t raw, stored, ndsets;
} sstat;

typedef struct walk {
    sstat s[24];
    int n;
} walk;

static void walk_account(walk *w, const char *top, hid_t d)
{
    hid_t sp = H5Dget_space(d), t = H5Dget_type(d);
    hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : 0;
    size_t ts = t >= 0 ? H5Tget_size(t) : 0;
    uint64_t raw = np > 0 ? (uint64_t)np * ts : 0, stored = H5Dget_storage_size(d);
    if (t >= 0) H5Tclose(t);
    if (sp >= 0) H5Sclose(sp);
    int k;
    for (k = 0; k < w->n && strcmp(w->s[k].name, top) != 0; k++) {}
    if (k == w->n) {
        if (w->n == (int)(sizeof w->s / sizeof w->s[0])) k = w->n - 1;
        else snprintf(w->s[w->n++].name, sizeof w->s[0].name, "%.47s", top);
    }
    w->s[k].raw += raw;
    w->s[k].stored += stored;
    w->s[k].ndsets++;
}

static int cmp_sstat(const void *a, const void *b)
{
    return strcmp(((const sstat *)a)->name, ((const sstat *)b)->name);
}

static void walk_group(hid_t g, const char *top, walk *w, int depth)
{
    H5G_info_t gi;
    if (depth > 6 || H5Gget_info(g, &gi) < 0) return;
    for (hsize_t i = 0; i < gi.nlinks && i < 100000; i++) {
        char name[256];
        /* native order: see h5s_list_links (the groups are summed, then sorted) */
        if (H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_NATIVE, i, name, sizeof name, H5P_DEFAULT) < 0) continue;
        hid_t o = H5Oopen(g, name, H5P_DEFAULT);
        if (o < 0) continue;
        H5I_type_t ty = H5Iget_type(o);
        if (ty == H5I_GROUP) walk_group(o, top ? top : name, w, depth + 1);
        else if (ty == H5I_DATASET) walk_account(w, top ? top : name, o);
        H5Oclose(o);
    }
}

static void human(char *buf, size_t len, double b)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    while (b >= 1024 && k < 4) {
        b /= 1024;
        k++;
    }
    snprintf(buf, len, k ? "%.1f %s" : "%.0f %s", b, u[k]);
}

static void print_storage(FILE *out, hid_t loc, const char *indent)
{
    walk w;
    memset(&w, 0, sizeof w);
    walk_group(loc, NULL, &w, 0);
    qsort(w.s, (size_t)w.n, sizeof w.s[0], cmp_sstat);
    uint64_t tr = 0, ts = 0;
    fprintf(out, "%sstorage (raw -> stored):\n", indent);
    for (int k = 0; k < w.n; k++) {
        char a[32], b[32];
        human(a, sizeof a, (double)w.s[k].raw);
        human(b, sizeof b, (double)w.s[k].stored);
        fprintf(out, "%s  %-14s %3llu datasets %11s -> %11s", indent, w.s[k].name, (unsigned long long)w.s[k].ndsets,
                a, b);
        if (w.s[k].stored) fprintf(out, "  (%.1fx)", (double)w.s[k].raw / (double)w.s[k].stored);
        fputc('\n', out);
        tr += w.s[k].raw;
        ts += w.s[k].stored;
    }
    char a[32], b[32];
    human(a, sizeof a, (double)tr);
    human(b, sizeof b, (double)ts);
    fprintf(out, "%s  %-14s              %11s -> %11s", indent, "total", a, b);
    if (ts) fprintf(out, "  (%.1fx)", (double)tr / (double)ts);
    fputc('\n', out);
}

/* Every graph of the store read and checked as sim reads it (issue 40: no
 * command accepts what another refuses; the /gpus table alone left the
 * collectives and the edges unchecked), INFO_WINDOW GPUs at a time so
 * that info holds a window's graphs, never the job's (shared structure
 * read once a window). Nothing of the graphs is printed. */
#define INFO_WINDOW 4096
static int check_graphs(sctx *c, size_t n)
{
    int rc = 0, share = c->share;
    c->share = 1;
    for (size_t first = 0; !rc && first < n; first += INFO_WINDOW) {
        lsim_graph **gs = NULL;
        size_t ng = 0;
        rc = h5s_read_graph_tables(c, c->file, "", first, n - first < INFO_WINDOW ? n - first : INFO_WINDOW, NULL,
                                   &gs, &ng);
        lsim_store_free_graphs(gs, ng);
    }
    c->share = share;
    return rc;
}

static int info_graphs(sctx *c, FILE *out)
{
    gmeta *m = NULL;
    char **src = NULL;
    size_t n = 0;
    int rc = h5s_read_gpu_table(c, c->file, "", &m, &src, &n);
    if (!rc) rc = check_graphs(c, n);
    if (rc) {
        h5s_free_strs(src, n);
        free(m);
        return rc;
    }
    char *ver = NULL, *cmd = NULL, *lat = NULL;
    /* optional: absent is fine, out of memory is not (a summary missing
     * lines would look like an older store's) */
    if (h5s_get_attr_str(c->file, "lumosim_version", &ver) == H5S_NOMEM ||
        h5s_get_attr_str(c->file, "created_by", &cmd) == H5S_NOMEM ||
        h5s_get_attr_str(c->file, "latency_mode", &lat) == H5S_NOMEM) {
        rc = h5s_nomem(c);
        goto cleanup;
    }
    uint64_t tot[RK_N] = {0}, shared = 0, own = 0, like = 0, patched = 0;
    for (size_t i = 0; i < n; i++) {
        for (int r = 0; r < RK_N; r++) tot[r] += m[i].cnt[r];
        tot[RK_STR] += m[i].nstr - m[i].cnt[RK_STR]; /* a shared table counts whole, as its nodes do */
        if (m[i].strings_like >= 0) {
            like++;
            patched += m[i].cnt[RK_STR];
        }
        if (m[i].same_as >= 0) shared++;
        else if (m[i].cnt[RK_NODE]) own++;
    }
    struct stat st;
    char fsz[32] = "?";
    if (stat(c->path, &st) == 0) human(fsz, sizeof fsz, (double)st.st_size);
    fprintf(out, "%s: lumosim graph store, schema version %d, %s\n", c->path, LSIM_STORE_SCHEMA_VERSION, fsz);
    fprintf(out, "  written by lumosim %s: %s\n", ver ? ver : "?", cmd && *cmd ? cmd : "(no command line)");
    fprintf(out, "  latency mode %s\n", lat ? lat : "?");
    {
        /* what a transformation (lumosim whatif) recorded, if anything */
        char *wi = NULL;
        if (h5s_get_attr_str(c->file, "whatif", &wi) > 0 && wi) fprintf(out, "  what-if record: %s\n", wi);
        free(wi);
    }
    {
        /* the memory estimate synth recorded (docs/memory.md), if any */
        char *mt = NULL;
        lsim_memest_job mj;
        lsim_err merr = {0};
        if (h5s_get_attr_str(c->file, "memory", &mt) > 0 && mt) {
            if (lsim_memest_job_parse(mt, &mj, &merr)) {
                fprintf(out, "  memory per GPU: unreadable estimate (%s)\n", merr.msg);
            } else {
                const lsim_memest_stage *w = &mj.stages[mj.worst];
                fprintf(out, "  memory per GPU (estimate from the %s shape and layout): peak %.2f GB on pipeline stage %d", mj.source,
                        w->total / 1e9, mj.worst);
                if (mj.capacity > 0)
                    fprintf(out, "; the %s has %.2f GB%s\n", mj.gpu, mj.capacity / 1e9, mj.oom ? ": OOM" : "");
                else
                    fprintf(out, "; capacity unknown\n");
                for (int s = 0; s < mj.nstages; s++)
                    fprintf(out, "    stage %d: %.2f GB (states %.2f, activations %.2f, buffers and reserve %.2f)%s\n", s,
                            mj.stages[s].total / 1e9,
                            (mj.stages[s].weights + mj.stages[s].grads + mj.stages[s].optim) / 1e9,
                            mj.stages[s].activations / 1e9, (mj.stages[s].comm + mj.stages[s].reserve) / 1e9,
                            mj.capacity > 0 && mj.stages[s].total > mj.capacity ? "  OOM" : "");
                lsim_memest_job_free(&mj);
            }
        }
        free(mt);
    }
    fprintf(out,
            "  %zu GPUs: %llu nodes, %llu edges, %llu processors, %llu iterations, %llu collectives, %llu strings\n",
            n, (unsigned long long)tot[RK_NODE], (unsigned long long)tot[RK_EDGE], (unsigned long long)tot[RK_PROC],
            (unsigned long long)tot[RK_ITER], (unsigned long long)tot[RK_COLL], (unsigned long long)tot[RK_STR]);
    if (shared)
        fprintf(out, "  shared structure: %llu GPUs use the node and edge rows of another; %llu node rows held for %llu "
                     "GPUs with rows of their own\n",
                (unsigned long long)shared, (unsigned long long)h5s_total_rows(m, n, RK_NODE), (unsigned long long)own);
    if (like)
        fprintf(out, "  shared strings: %llu GPUs use the string table of another, %llu of their strings their own\n",
                (unsigned long long)like, (unsigned long long)patched);
    print_storage(out, c->file, "  ");
    fprintf(out, "  %4s %5s %10s %10s %6s %6s %7s  %s\n", "gpu", "rank", "nodes", "edges", "procs", "iters", "colls",
            "source (bytes, crc32)");
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "  %4zu %5d %10llu %10llu %6llu %6llu %7llu  %s", i, m[i].rank,
                (unsigned long long)m[i].cnt[RK_NODE], (unsigned long long)m[i].cnt[RK_EDGE],
                (unsigned long long)m[i].cnt[RK_PROC], (unsigned long long)m[i].cnt[RK_ITER],
                (unsigned long long)m[i].cnt[RK_COLL], src[i]);
        if (m[i].source_size >= 0)
            fprintf(out, " (%lld bytes, %08" PRIx32 ")", (long long)m[i].source_size, m[i].source_crc32);
        fputc('\n', out);
    }
cleanup:
    free(ver);
    free(cmd);
    free(lat);
    h5s_free_strs(src, n);
    free(m);
    return rc;
}

static int info_results(sctx *c, FILE *out)
{
    hid_t runs = H5Gopen2(c->file, "runs", H5P_DEFAULT);
    char **names = NULL;
    size_t n = 0;
    int rc = runs < 0 ? h5s_fail(c, LSIM_EFORMAT, "result file without a /runs group") : h5s_list_links(c, runs, &names, &n);
    struct stat st;
    char fsz[32] = "?";
    if (stat(c->path, &st) == 0) human(fsz, sizeof fsz, (double)st.st_size);
    if (!rc)
        fprintf(out, "%s: lumosim result file, schema version %d, %s, %zu run%s\n", c->path, LSIM_STORE_SCHEMA_VERSION,
                fsz, n, n == 1 ? "" : "s");
    for (size_t k = 0; !rc && k < n; k++) {
        hid_t run = H5Gopen2(runs, names[k], H5P_DEFAULT);
        lsim_store_run *r = NULL;
        char where[300];
        snprintf(where, sizeof where, "/runs/%s", names[k]);
        rc = run < 0 ? h5s_fail(c, LSIM_EFORMAT, "cannot open %s", where) : h5s_read_run_summary(c, run, where, names[k], &r);
        if (!rc) {
            int32_t emb = 0;
            int64_t e64 = 0;
            if (h5s_get_attr_num(run, "graphs_embedded", 0, &e64) > 0) emb = (int32_t)e64;
            fprintf(out, "\nrun '%s': %zu GPUs, %zu nodes, latency %s%s, detail %s\n", r->name, r->ngpus, r->nnodes,
                    lsim_latency_mode_name((lsim_latency_mode)r->latency), emb ? ", graphs embedded" : "",
                    lsim_store_detail_name(r->detail));
            fprintf(out, "  lumosim %s on %s, %d MPI rank%s, created %s", r->lumosim_version ? r->lumosim_version : "?",
                    r->host ? r->host : "?", r->mpi_ranks, r->mpi_ranks == 1 ? "" : "s", r->created ? r->created : "?");
            if (r->wall_seconds >= 0) fprintf(out, ", wall %.3f s", r->wall_seconds);
            fputc('\n', out);
            for (size_t p = 0; p < r->nphases; p++)
                fprintf(out, "%s%s %.3f s%s", p ? ", " : "  phases: ", r->phase_names[p], r->phase_seconds[p],
                        p + 1 == r->nphases ? "\n" : "");
            if (r->command_line && *r->command_line) fprintf(out, "  command: %s\n", r->command_line);
            if (r->mapping) fprintf(out, "  mapping: %s\n", r->mapping);
            if (r->config) fprintf(out, "  config: %s\n", r->config);
            print_storage(out, run, "  ");
            fprintf(out, "  %4s %5s %10s %14s %14s %8s  %s\n", "gpu", "rank", "nodes", "actual ms", "predicted ms",
                    "error", "source");
            for (size_t i = 0; i < r->ngpus; i++) {
                const lsim_store_gpu_result *g = &r->gpus[i];
                /* a synthesized or what-if GPU: nothing measured, never 0 ms, +0.00 % */
                if (!lsim_report_observed(&g->report))
                    fprintf(out, "  %4zu %5d %10llu %14s %14.3f %8s  %s\n", i, g->rank,
                            (unsigned long long)g->node_count, "not measured",
                            (double)g->report.window_predicted / 1e6, "-", g->source);
                else
                    fprintf(out, "  %4zu %5d %10llu %14.3f %14.3f %+7.2f%%  %s\n", i, g->rank,
                            (unsigned long long)g->node_count, (double)g->report.window_actual / 1e6,
                            (double)g->report.window_predicted / 1e6,
                            100.0 * lsim_rel_err(g->report.window_actual, g->report.window_predicted), g->source);
            }
        }
        lsim_store_run_free(r);
        if (run >= 0) H5Gclose(run);
    }
    h5s_free_strs(names, n);
    if (runs >= 0) H5Gclose(runs);
    return rc;
}

/* The best five of a search result (group g, ncand candidates), from its
 * stored ranking: each one's layout, step and throughput in the unit the
 * search ranked by (the file's throughput_per_s, written by the ranking's
 * own function). "-" where the file does not know a figure, never a 0: a
 * traced job's micro-batch size, the throughput of files written before
 * it. */
static int info_search_best(sctx *c, hid_t g, uint64_t ncand, FILE *out)
{
    int rc = 0;
    hsize_t nr = 0;
    hid_t d = H5Dopen2(g, "ranking", H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    if (sp < 0 || H5Sget_simple_extent_ndims(sp) != 1 || H5Sget_simple_extent_dims(sp, &nr, NULL) < 0)
        rc = h5s_fail(c, LSIM_EFORMAT, "/search/ranking is missing or not one-dimensional");
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    size_t show = nr < 5 ? (size_t)nr : 5;
    uint64_t rk[5];
    int32_t tp = 0, pp = 0, dp = 0, mb = 0, vst = 0, nmb = 0;
    int64_t step = 0;
    double thr = 0;
    char *unit = NULL, *by = NULL;
    /* written since issue 39: absent in older files */
    int has_thr = !rc && H5Lexists(g, "candidates/throughput_per_s", H5P_DEFAULT) > 0;
    hid_t t = has_thr ? H5Gopen2(g, "candidates", H5P_DEFAULT) : -1;
    if (t >= 0) h5s_get_attr_str(t, "throughput_unit", &unit);
    if (t >= 0) H5Gclose(t);
    if (!unit) has_thr = 0;
    h5s_get_attr_str(g, "rank_by", &by);
    if (!rc && show) rc = h5s_get_col(c, g, "/search", "ranking", T_U64, 1, nr, 0, show, rk);
    for (size_t i = 0; !rc && i < show; i++) {
        if (rk[i] >= ncand) {
            rc = h5s_fail(c, LSIM_EFORMAT, "/search/ranking entry %zu (%llu) is not a candidate", i,
                          (unsigned long long)rk[i]);
            break;
        }
        /* opt: absent in files written before --from (micro_batches), before issue 39 (throughput) */
        struct { const char *name; int t; void *v; int opt; } col[] = {{"candidates/tp", T_I32, &tp, 0},
            {"candidates/pp", T_I32, &pp, 0}, {"candidates/dp", T_I32, &dp, 0},
            {"candidates/micro_batch", T_I32, &mb, 0}, {"candidates/vstages", T_I32, &vst, 0},
            {"candidates/step", T_I64, &step, 0},
            {"candidates/micro_batches", T_I32, &nmb, 1}, {"candidates/throughput_per_s", T_F64, &thr, 1}};
        for (size_t k = 0; !rc && k < sizeof col / sizeof col[0]; k++)
            if (!col[k].opt || H5Lexists(g, col[k].name, H5P_DEFAULT) > 0)
                rc = h5s_get_col(c, g, "/search", col[k].name, col[k].t, 1, ncand, rk[i], 1, col[k].v);
        if (rc) break;
        if (i == 0 && by && !strcmp(by, "step")) fprintf(out, "  best %zu, by step time:\n", show);
        else if (i == 0 && by && has_thr) fprintf(out, "  best %zu, by throughput (%s):\n", show, unit);
        else if (i == 0) fprintf(out, "  best %zu:\n", show);
        /* --from's --micro-batches (0: the job's own) tell its rows apart */
        char smb[16] = "-", snmb[32] = "", sthr[64] = "throughput -";
        if (mb > 0) snprintf(smb, sizeof smb, "%d", (int)mb);
        if (nmb > 0) snprintf(snmb, sizeof snmb, " micro-batches %d", (int)nmb);
        if (has_thr && !isnan(thr)) snprintf(sthr, sizeof sthr, "%.2f %s", thr, unit);
        fprintf(out, "    %zu. TP %d PP %d DP %d micro-batch %s %s%.0d%s: step %.3f s, %s\n", i + 1, tp, pp, dp, smb,
                vst > 1 ? "interleaved:" : "1f1b", vst > 1 ? vst : 0, snmb, (double)step / 1e9, sthr);
    }
    free(unit);
    free(by);
    return rc;
}

/* `lumosim info` of a search result (io/h5_search.c): the space, what
 * became of it, and the best five, read back from the file. */
static int info_search(sctx *c, FILE *out)
{
    hid_t g = H5Gopen2(c->file, "search", H5P_DEFAULT);
    if (g < 0) return h5s_fail(c, LSIM_EFORMAT, "no /search group");
    char *model = NULL, *gpu = NULL, *cmd = NULL;
    int64_t gpus = 0, gb = 0, seq = 0;
    uint64_t ncand = 0, nsim = 0, nfeas = 0;
    char **rn = NULL;
    double *rcnt = NULL;
    size_t nrn = 0, nrc = 0;
    int rc = 0;
    if (h5s_get_attr_str(g, "model", &model) <= 0 || h5s_get_attr_str(g, "gpu", &gpu) <= 0 ||
        h5s_get_attr_num(g, "gpus", 0, &gpus) <= 0 || h5s_get_attr_num(g, "global_batch", 0, &gb) <= 0 ||
        h5s_get_attr_num(g, "sequence", 0, &seq) <= 0 || h5s_get_attr_num(g, "candidates", 0, &ncand) <= 0 ||
        h5s_get_attr_num(g, "feasible", 0, &nfeas) <= 0 || h5s_get_attr_num(g, "simulated", 0, &nsim) <= 0 ||
        h5s_get_attr_strs(g, "reason_names", &rn, &nrn) <= 0 || h5s_get_attr_f64s(g, "reason_counts", &rcnt, &nrc) <= 0 ||
        nrn != nrc)
        rc = h5s_fail(c, LSIM_EFORMAT, "/search: an attribute is missing or malformed");
    h5s_get_attr_str(c->file, "created_by", &cmd);
    char *from = NULL;
    int64_t shard = 0, shards = 1;
    h5s_get_attr_str(g, "from", &from); /* --from and --shard: absent in older files */
    h5s_get_attr_num(g, "shard", 0, &shard);
    h5s_get_attr_num(g, "shards", 0, &shards);
    if (!rc && from && from[0])
        fprintf(out, "%s: lumosim search result\n  around %s with the what-if transforms\n", c->path, from);
    else if (!rc)
        fprintf(out, "%s: lumosim search result\n  %s on %lld %s GPUs, global batch %lld, sequence %lld\n", c->path,
                model, (long long)gpus, gpu, (long long)gb, (long long)seq);
    char *job = NULL;
    h5s_get_attr_str(g, "job_options", &job); /* absent in older files: none */
    if (!rc && job && job[0]) fprintf(out, "  job options: %s\n", job);
    free(job);
    if (!rc && shards > 1)
        fprintf(out, "  shard %lld of %lld: candidates i mod %lld = %lld simulated (lumosim search --merge)\n",
                (long long)shard, (long long)shards, (long long)shards, (long long)shard);
    free(from);
    if (!rc) {
        fprintf(out, "  %llu configurations:", (unsigned long long)ncand);
        for (size_t r = 1; r < nrn; r++) fprintf(out, "%s %.0f %s", r > 1 ? "," : "", rcnt[r], rn[r]);
        fprintf(out, "; %llu feasible, %llu simulated\n", (unsigned long long)nfeas, (unsigned long long)nsim);
        if (cmd) fprintf(out, "  created by: %s\n", cmd);
    }
    if (!rc) rc = info_search_best(c, g, ncand, out);
    H5Gclose(g);
    free(model);
    free(gpu);
    free(cmd);
    h5s_free_strs(rn, nrn);
    free(rcnt);
    return rc;
}

int lsim_store_info(const char *path, FILE *out, lsim_err *err)
{
    sctx c;
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = h5s_open_file(&c);
    char *kind = NULL;
    int got = rc ? 0 : h5s_get_attr_str(c.file, "kind", &kind);
    if (got == H5S_NOMEM) {
        rc = h5s_nomem(&c);
    } else if (!rc && got > 0 && !strcmp(kind, LSIM_STORE_KIND_RESULTS)) {
        rc = h5s_check_root(&c, LSIM_STORE_KIND_RESULTS);
        if (!rc) rc = info_results(&c, out);
    } else if (!rc && kind && !strcmp(kind, LSIM_STORE_KIND_SEARCH)) {
        rc = h5s_check_root(&c, LSIM_STORE_KIND_SEARCH);
        if (!rc) rc = info_search(&c, out);
    } else if (!rc) {
        rc = h5s_check_root(&c, LSIM_STORE_KIND_GRAPHS);
        if (!rc) rc = info_graphs(&c, out);
    }
    free(kind);
    return h5s_ctx_done(&c, rc, err);
}
