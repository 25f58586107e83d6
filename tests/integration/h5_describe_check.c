/* h5_describe_check FILE.h5... -- the self-description of lumosim's HDF5
 * files (docs/hdf5-schema.md, "Units and enum tables") and the result
 * archive's kernel summary, read with the plain HDF5 API, independently
 * of lumosim's own readers:
 *   - every numeric dataset (the walk enumerates them all, so a new column
 *     without units fails) has a string attribute `units` of the vocabulary;
 *     every dataset whose name says it is a time (start, end, dur, delay,
 *     window, time, *_ns, t0, ...) has units "ns", sizes "bytes";
 *   - the enum columns carry `enum_names` equal to lsim_*_name(0..N-1),
 *     N the enum's size, and every stored value is below N;
 *   - each run's kernels/... rows equal what this program sums itself from
 *     the run's embedded graph (kind, name, flags, obs_start/obs_end) and
 *     simulated times (nodes/start, end), GPU by GPU, row for row.
 * Exit 0 when all hold, 1 with one line per failure (at most 20). */
#include "lumosim/search.h"
#include "lumosim/synth.h"
#include "lumosim/graph.h"
#include "lumosim/metrics.h"
#include "lumosim/trace.h"

#include <hdf5.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nfail;
static const char *cur;

#define FAIL(...)                                                     \
    do {                                                              \
        if (nfail++ < 20) {                                           \
            printf("FAIL %s: ", cur);                                 \
            printf(__VA_ARGS__);                                      \
            printf("\n");                                             \
        }                                                             \
    } while (0)

/* attribute `name` of obj as a string (malloc'd), NULL if absent */
static char *attr_str(hid_t obj, const char *name)
{
    if (H5Aexists(obj, name) <= 0) return NULL;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT), t = H5Aget_type(a);
    char *s = NULL;
    if (H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t)) {
        size_t n = H5Tget_size(t);
        s = calloc(1, n + 1);
        if (s && H5Aread(a, t, s) < 0) s[0] = '\0';
    }
    H5Tclose(t);
    H5Aclose(a);
    return s;
}

/* 1-D string array attribute: *n entries of width w in one buffer */
static char *attr_strs(hid_t obj, const char *name, size_t *n, size_t *w)
{
    *n = 0;
    if (H5Aexists(obj, name) <= 0) return NULL;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT), t = H5Aget_type(a), sp = H5Aget_space(a);
    char *buf = NULL;
    hssize_t k = H5Sget_simple_extent_npoints(sp);
    if (H5Tget_class(t) == H5T_STRING && k > 0) {
        *w = H5Tget_size(t);
        buf = calloc((size_t)k, *w + 1);
        if (buf && H5Aread(a, t, buf) >= 0) *n = (size_t)k;
    }
    H5Sclose(sp);
    H5Tclose(t);
    H5Aclose(a);
    return buf;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* What the name of a dataset says its units must be (NULL: no claim). The
 * few names that look like times but are not are listed. */
static const char *implied_units(const char *table, const char *name)
{
    static const char *const not_times[] = {"bind_start",          "bind_end",           "window_error", "prewindow",
                                            "start_err_gpu_count", "start_err_cpu_count", "has_coll_time",
                                            "start_node",          "end_node"}; /* cpu_ops/op: node ids */
    for (size_t k = 0; k < sizeof not_times / sizeof *not_times; k++)
        if (!strcmp(name, not_times[k])) return "1";
    if (!strcmp(table, "duty")) return "1"; /* busy fractions */
    if (strstr(name, "start") || strstr(name, "end") || strstr(name, "dur") || strstr(name, "delay") ||
        strstr(name, "window") || strstr(name, "time") || strstr(name, "latency_ns") || ends_with(name, "_ns") ||
        !strcmp(name, "t0") || !strcmp(name, "release") || strstr(name, "breakdown") ||
        strstr(name, "exposed_comm_wait") || !strcmp(name, "clock_offset") || ends_with(name, "_err") ||
        !strcmp(name, "cp_length") || !strncmp(name, "cp_by_", 6) || ends_with(name, "_total") ||
        ends_with(name, "_mean") || (!strcmp(table, "iterations") && (!strcmp(name, "actual") || !strcmp(name, "predicted"))))
        return "ns";
    if (!strcmp(name, "bytes") || !strcmp(name, "dtype_bytes") || !strcmp(name, "source_size")) return "bytes";
    if (strstr(name, "nelems")) return "elements";
    if (ends_with(name, "_per_s")) return "1/s";
    return NULL;
}

/* the enum table a column must carry (NULL: none) */
typedef const char *(*name_fn)(int);
static const char *nk(int i) { return lsim_node_kind_name((lsim_node_kind)i); }
static const char *ec(int i) { return lsim_edge_class_name((lsim_edge_class)i); }
static const char *ck(int i) { return lsim_coll_kind_name((lsim_coll_kind)i); }
static const char *ph(int i) { return lsim_phase_name((lsim_phase)i); }
static const char *lm(int i) { return lsim_latency_mode_name((lsim_latency_mode)i); }
static const char *ms(int i) { return lsim_mem_source_name(i); }
static const char *rcm(int i) { return lsim_recompute_name(i); }
static const char *srn(int i) { return lsim_search_reason_name((lsim_search_reason)i); }

static int enum_of(const char *table, const char *name, name_fn *fn)
{
    if ((!strcmp(table, "nodes") || !strcmp(table, "kernels")) && !strcmp(name, "kind")) return *fn = nk, LSIM_N_NKINDS;
    if (!strcmp(table, "edges") && !strcmp(name, "in_class")) return *fn = ec, LSIM_E_NCLASSES;
    if (!strcmp(table, "colls") && !strcmp(name, "kind")) return *fn = ck, LSIM_COLL_NKINDS;
    if (!strcmp(table, "nodes") && !strcmp(name, "phase")) return *fn = ph, LSIM_PHASE_N;
    if (!strcmp(table, "gpus") && !strcmp(name, "latency_mode")) return *fn = lm, LSIM_LAT_NMODES;
    if (!strcmp(table, "gpus") && !strcmp(name, "mem_source")) return *fn = ms, LSIM_MEM_NSOURCES;
    if (!strcmp(table, "candidates") && !strcmp(name, "recompute")) return *fn = rcm, LSIM_RC_N;
    if (!strcmp(table, "candidates") && !strcmp(name, "reason")) return *fn = srn, LSIM_SR_N;
    return 0;
}

static int nnumeric;

static void check_dataset(hid_t d, const char *path, const char *table, const char *name)
{
    hid_t t = H5Dget_type(d);
    H5T_class_t cls = H5Tget_class(t);
    H5Tclose(t);
    if (cls == H5T_STRING) return;
    nnumeric++;
    char *u = attr_str(d, "units");
    if (!u) {
        FAIL("%s has no units attribute", path);
        return;
    }
    if (strcmp(u, "ns") && strcmp(u, "bytes") && strcmp(u, "elements") && strcmp(u, "1/s") && strcmp(u, "1"))
        FAIL("%s: units '%s' is not ns, bytes, elements, 1/s or 1", path, u);
    const char *want = implied_units(table, name);
    if (want && strcmp(u, want)) FAIL("%s: units '%s', its name says '%s'", path, u, want);
    free(u);

    name_fn fn = NULL;
    int ne = enum_of(table, name, &fn);
    size_t n = 0, w = 0;
    char *names = attr_strs(d, "enum_names", &n, &w);
    if (ne && !names) FAIL("%s: no enum_names attribute", path);
    if (!ne && names) FAIL("%s: an enum_names attribute on a column that is no enum", path);
    if (ne && names) {
        if (n != (size_t)ne) FAIL("%s: enum_names has %zu names, the enum %d values", path, n, ne);
        for (size_t i = 0; i < n && i < (size_t)ne; i++)
            if (strcmp(names + i * w, fn((int)i))) FAIL("%s: enum_names[%zu] '%s', lsim name '%s'", path, i, names + i * w, fn((int)i));
        /* every stored value names an entry */
        hid_t sp = H5Dget_space(d);
        hssize_t rows = H5Sget_simple_extent_npoints(sp);
        H5Sclose(sp);
        uint8_t *v = malloc(rows > 0 ? (size_t)rows : 1);
        if (v && rows > 0 && H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0)
            for (hssize_t i = 0; i < rows; i++) {
                unsigned x = strcmp(name, "in_class") ? v[i] : (v[i] & 0x7fu);
                if (x >= (unsigned)ne) {
                    FAIL("%s row %lld: value %u has no name", path, (long long)i, x);
                    break;
                }
            }
        free(v);
    }
    free(names);
}

static void walk(hid_t g, const char *path, const char *table)
{
    H5G_info_t gi;
    if (H5Gget_info(g, &gi) < 0) {
        FAIL("cannot list %s", path);
        return;
    }
    for (hsize_t i = 0; i < gi.nlinks; i++) {
        char name[512], sub[2048];
        if (H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT) < 0) continue;
        snprintf(sub, sizeof sub, "%s/%s", path, name);
        hid_t o = H5Oopen(g, name, H5P_DEFAULT);
        if (o < 0) {
            FAIL("cannot open %s", sub);
            continue;
        }
        if (H5Iget_type(o) == H5I_DATASET) check_dataset(o, sub, table, name);
        else if (H5Iget_type(o) == H5I_GROUP) walk(o, sub, name);
        H5Oclose(o);
    }
}

/* a whole 1-D numeric dataset as int64 / double / uint8 (malloc'd) */
static void *col(hid_t loc, const char *name, hid_t mt, size_t es, size_t *n)
{
    *n = 0;
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0) {
        FAIL("missing dataset %s", name);
        return NULL;
    }
    hid_t sp = H5Dget_space(d);
    hssize_t k = H5Sget_simple_extent_npoints(sp);
    H5Sclose(sp);
    void *b = calloc(k > 0 ? (size_t)k : 1, es);
    if (b && k > 0 && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, b) < 0) FAIL("cannot read %s", name);
    H5Dclose(d);
    *n = (size_t)(k > 0 ? k : 0);
    return b;
}
#define I64(loc, nm, n) ((int64_t *)col(loc, nm, H5T_NATIVE_INT64, 8, n))
#define F64(loc, nm, n) ((double *)col(loc, nm, H5T_NATIVE_DOUBLE, 8, n))

/* fixed-length string column: rows of width w */
static char *strcol(hid_t loc, const char *name, size_t *n, size_t *w)
{
    *n = 0;
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0) {
        FAIL("missing dataset %s", name);
        return NULL;
    }
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    *w = H5Tget_size(t);
    hssize_t k = H5Sget_simple_extent_npoints(sp);
    char *b = calloc(k > 0 ? (size_t)k : 1, *w + 1);
    if (b && k > 0 && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, b) < 0) FAIL("cannot read %s", name);
    H5Sclose(sp);
    H5Tclose(t);
    H5Dclose(d);
    *n = (size_t)(k > 0 ? k : 0);
    return b;
}

/* One computed summary row. */
typedef struct krow {
    int64_t kind;
    const char *name;
    int64_t count, obs, atot, ptot, coll;
    int seen;
} krow;

static int nkernel_rows;

/* String id of GPU g's table as the embedded graph holds it: its own row
 * id, or, when its strings are GPU like[g]'s (shared strings), the row of
 * its own that replaces id (ids of its rows ascend), else like[g]'s. */
typedef struct strs {
    const int64_t *soff, *scnt, *coff, *so, *like, *ids;
    const uint8_t *chars;
} strs;
static const char *str_of(const strs *t, size_t g, int64_t id)
{
    if (t->like && t->like[g] >= 0) {
        int64_t lo = t->soff[g], hi = t->soff[g] + t->scnt[g];
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (t->ids[mid] < id) lo = mid + 1;
            else hi = mid;
        }
        if (lo < t->soff[g] + t->scnt[g] && t->ids[lo] == id)
            return (const char *)t->chars + t->coff[g] + t->so[lo];
        g = (size_t)t->like[g];
    }
    return (const char *)t->chars + t->coff[g] + t->so[t->soff[g] + id];
}

static void check_kernels(hid_t run, const char *rname)
{
    int before = nfail;
    if (H5Lexists(run, "graph", H5P_DEFAULT) <= 0) {
        FAIL("run %s embeds no graph: cannot recompute its kernels", rname);
        return;
    }
    size_t G, n1, n2, n3, n4, n5, nn, nk_, ns, nc, nst, nen, x;
    int64_t *noff = I64(run, "graph/gpus/node_offset", &G), *ncnt = I64(run, "graph/gpus/node_count", &n1);
    int64_t *soff = I64(run, "graph/gpus/string_offset", &n2), *coff = I64(run, "graph/gpus/char_offset", &n3);
    size_t n6 = 0, n7 = 0, n8 = 0;
    int64_t *scnt = I64(run, "graph/gpus/string_count", &n6);
    /* shared strings (optional): the GPU whose table each uses, row ids */
    int64_t *like = H5Lexists(run, "graph/gpus/strings_like", H5P_DEFAULT) > 0 ? I64(run, "graph/gpus/strings_like", &n7) : NULL;
    int64_t *ids = like ? I64(run, "graph/strings/id", &n8) : NULL;
    int64_t *kind = I64(run, "graph/nodes/kind", &nn), *name = I64(run, "graph/nodes/name", &n4);
    int64_t *flags = I64(run, "graph/nodes/flags", &n5), *os = I64(run, "graph/nodes/obs_start", &x);
    int64_t *oe = I64(run, "graph/nodes/obs_end", &x), *st = I64(run, "nodes/start", &nst), *en = I64(run, "nodes/end", &nen);
    /* the run's per-node rows (nodes/start, nodes/end) have offsets of
     * their own: the graph's node rows may be shared between GPUs */
    size_t nr1;
    int64_t *roff = I64(run, "gpus/node_offset", &nr1);
    int64_t *so = I64(run, "graph/strings/offset", &ns);
    size_t nch;
    uint8_t *chars = col(run, "graph/strings/chars", H5T_NATIVE_UINT8, 1, &nch);
    int64_t *kg = I64(run, "kernels/gpu", &nk_), *kk = I64(run, "kernels/kind", &x), *kn = I64(run, "kernels/name_id", &x);
    int64_t *kc = I64(run, "kernels/count", &x), *ko = I64(run, "kernels/observed_count", &x);
    int64_t *kcoll = I64(run, "kernels/collective", &x);
    int64_t *ka = I64(run, "kernels/actual_total", &x), *kp = I64(run, "kernels/predicted_total", &x);
    double *kam = F64(run, "kernels/actual_mean", &x), *kpm = F64(run, "kernels/predicted_mean", &x);
    size_t kw = 0, gk1, gk2;
    char *kname = strcol(run, "kernels/name", &nc, &kw);
    int64_t *gko = I64(run, "gpus/kernel_offset", &gk1), *gkc = I64(run, "gpus/kernel_count", &gk2);
    krow *rows = calloc(nn ? nn : 1, sizeof *rows);
    strs tab = {soff, scnt, coff, so, like, ids, chars};
    int failed_reading = nfail != before;
    int64_t all_p = 0, all_a = 0, table_p = 0, table_a = 0;
    if (failed_reading || !rows || nc != nk_ || gk1 != G || gk2 != G || nr1 != G || nst != nen || n6 != G ||
        (like && (n7 != G || n8 != ns))) {
        FAIL("run %s: kernels tables missing or of inconsistent lengths", rname);
        goto out;
    }
    for (size_t g = 0; g < G; g++) {
        /* this GPU's summary, computed here, rows in first-node order */
        size_t nr = 0;
        for (int64_t v = noff[g]; v < noff[g] + ncnt[g]; v++) {
            if (kind[v] != LSIM_N_KERNEL && kind[v] != LSIM_N_MEMCPY && kind[v] != LSIM_N_MEMSET) continue;
            const char *s = str_of(&tab, g, name[v]);
            size_t r = 0;
            while (r < nr && !(rows[r].kind == kind[v] && !strcmp(rows[r].name, s))) r++;
            if (r == nr) rows[nr++] = (krow){kind[v], s, 0, 0, 0, 0, 0, 0};
            rows[r].count++;
            int64_t rv = roff[g] + (v - noff[g]);
            if (rv < 0 || (size_t)rv >= nst) {
                FAIL("run %s GPU %zu: node %" PRId64 " past the run's %zu node rows", rname, g, v - noff[g], nst);
                goto out;
            }
            rows[r].ptot += en[rv] - st[rv];
            all_p += en[rv] - st[rv];
            if (flags[v] & LSIM_NF_COLL) rows[r].coll = 1;
            if (os[v] != LSIM_OBS_NONE) {
                rows[r].obs++;
                rows[r].atot += oe[v] - os[v];
                all_a += oe[v] - os[v];
            }
        }
        if ((size_t)gkc[g] != nr) FAIL("run %s GPU %zu: %" PRId64 " kernel rows, computed %zu", rname, g, gkc[g], nr);
        /* a GPU may share the rows of an earlier one (shared structure):
         * they name that GPU, and must still be this GPU's own summary */
        size_t holder = g;
        for (size_t h = 0; h < g && holder == g; h++)
            if (gko[h] == gko[g] && gkc[h] == gkc[g] && gkc[g] > 0) holder = h;
        for (int64_t k = gko[g]; k < gko[g] + gkc[g] && k < (int64_t)nk_; k++) {
            nkernel_rows++;
            table_p += kp[k];
            table_a += ka[k];
            const char *s = kname + (size_t)k * kw;
            size_t r = 0;
            while (r < nr && !(rows[r].kind == kk[k] && !strcmp(rows[r].name, s))) r++;
            if (kg[k] != (int64_t)holder) FAIL("run %s kernels row %" PRId64 ": gpu %" PRId64 ", in GPU %zu's rows", rname, k, kg[k], g);
            if (r == nr) {
                FAIL("run %s GPU %zu: kernels row '%s' matches no GPU node", rname, g, s);
                continue;
            }
            krow *w = &rows[r];
            if (w->seen++) FAIL("run %s GPU %zu: '%s' twice", rname, g, s);
            const char *sid = str_of(&tab, g, kn[k]);
            if (strcmp(sid, s)) FAIL("run %s row %" PRId64 ": name_id %" PRId64 " is '%s', name '%s'", rname, k, kn[k], sid, s);
            if (kc[k] != w->count || ko[k] != w->obs || ka[k] != w->atot || kp[k] != w->ptot || kcoll[k] != w->coll)
                FAIL("run %s GPU %zu '%.60s': count %" PRId64 "/%" PRId64 " observed %" PRId64 "/%" PRId64
                     " actual %" PRId64 "/%" PRId64 " predicted %" PRId64 "/%" PRId64 " (table/computed)",
                     rname, g, s, kc[k], w->count, ko[k], w->obs, ka[k], w->atot, kp[k], w->ptot);
            double am = w->obs ? (double)w->atot / (double)w->obs : 0, pm = (double)w->ptot / (double)w->count;
            if (kam[k] != am || kpm[k] != pm) FAIL("run %s GPU %zu '%.60s': means %g %g, computed %g %g", rname, g, s, kam[k], kpm[k], am, pm);
        }
    }
    if (table_p != all_p || table_a != all_a)
        FAIL("run %s: table totals actual %" PRId64 " predicted %" PRId64 ", over all GPU nodes %" PRId64 " %" PRId64,
             rname, table_a, table_p, all_a, all_p);
out:
    free(scnt), free(like), free(ids);
    free(noff), free(ncnt), free(soff), free(coff), free(kind), free(name), free(flags), free(os), free(oe);
    free(st), free(en), free(roff), free(so), free(chars), free(kg), free(kk), free(kn), free(kc), free(ko), free(kcoll);
    free(ka), free(kp), free(kam), free(kpm), free(kname), free(gko), free(gkc), free(rows);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: h5_describe_check FILE.h5...\n");
        return 2;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    for (int a = 1; a < argc; a++) {
        cur = argv[a];
        hid_t f = H5Fopen(argv[a], H5F_ACC_RDONLY, H5P_DEFAULT);
        if (f < 0) {
            FAIL("cannot open");
            continue;
        }
        nnumeric = 0;
        walk(f, "", "");
        char *kind = attr_str(f, "kind");
        int nruns = 0;
        nkernel_rows = 0;
        if (kind && !strcmp(kind, "lumosim-results")) {
            hid_t runs = H5Gopen2(f, "runs", H5P_DEFAULT);
            H5G_info_t gi;
            if (runs >= 0 && H5Gget_info(runs, &gi) >= 0)
                for (hsize_t i = 0; i < gi.nlinks; i++) {
                    char rn[256];
                    if (H5Lget_name_by_idx(runs, ".", H5_INDEX_NAME, H5_ITER_INC, i, rn, sizeof rn, H5P_DEFAULT) < 0) continue;
                    hid_t r = H5Gopen2(runs, rn, H5P_DEFAULT);
                    check_kernels(r, rn);
                    H5Gclose(r);
                    nruns++;
                }
            if (runs >= 0) H5Gclose(runs);
            if (!nruns) FAIL("a result archive without runs");
            if (!nkernel_rows) FAIL("no kernel rows at all: nothing was checked");
        }
        /* a search result has 15 numeric datasets (docs/hdf5-schema.md), a store or archive dozens */
        int want = kind && !strcmp(kind, "lumosim-search") ? 15 : 40;
        if (nnumeric < want) FAIL("only %d numeric datasets found: the walk missed the tables", nnumeric);
        printf("%s: %s, %d numeric datasets with units, %d runs, %d kernel rows checked\n", argv[a],
               kind ? kind : "?", nnumeric, nruns, nkernel_rows);
        free(kind);
        H5Fclose(f);
    }
    if (nfail) printf("%d failure(s)\n", nfail);
    return nfail ? 1 : 0;
}
