/* The streaming graph-store writer (lsim_store_writer, store.h): the
 * flat graph columns are appendable datasets, grown batch by batch; /gpus
 * and the root attributes are written at close. Serial (POSIX driver) or,
 * opened with lsim_store_writer_open_mpi, collective (MPI-IO): each add is
 * then one round in which every rank appends its batch after the lower
 * ranks' batches of the same round, so the store is the serial one of the
 * GPUs in that order. */
#include "h5_internal.h"
#include "lumosim/alloc.h"

#include "lumosim/agree.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows per chunk of the appendable datasets: the final size is not known
 * when they are created, so a fixed size (64 Ki rows: 512 KiB of int64,
 * inside HDF5's default 1 MiB chunk cache, so the partly filled last chunk
 * of a batch stays cached for the next). */
#define APPEND_CHUNK_ROWS ((hsize_t)1 << 16)
#define GREC 7 /* words per GPU in lsim_store_writer.gall */
#define NDSETS (H5S_NGCOLS + 3)

struct lsim_store_writer {
    sctx c;
    char tmp[4096];
    hid_t d[H5S_NGCOLS + 3];      /* the flat columns, then strings/offset, strings/chars, strings/id */
    uint64_t rows[RK_N];      /* rows written so far per row kind */
    gmeta *m;                 /* per-GPU index so far: this rank's GPUs */
    char **src;
    size_t n, capm, capsrc;   /* n: this rank's GPUs so far (serial: all) */
    uint64_t ngpu;            /* GPUs so far over all ranks */
    rowsel sel;               /* this rank's rows of /gpus (serial: 0..n) */
    uint64_t *gall;           /* per GPU so far, all ranks (GREC each): node
                                 offset, node count, edge offset, edge count,
                                 own rows (1/0), own string table (1/0), its
                                 string count; what a later GPU that shares
                                 one's rows or strings needs */
    size_t capg;
    char *buf;
    size_t bufcap;
    lsim_store_write_opts opts;
    char *command_line;
    int lat, mixed;
    char *attr_name[LSIM_STORE_MAX_ATTRS], *attr_text[LSIM_STORE_MAX_ATTRS]; /* extra root attributes */
    int nattr;
};

/* Silence HDF5's error printing for the duration of one writer call. */
static void wq_on(sctx *c)
{
    H5Eget_auto2(H5E_DEFAULT, &c->old_fn, &c->old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void wq_off(sctx *c)
{
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, c->old_fn, c->old_data);
}

/* An empty dataset that grows by appends (chunked, same filters as h5s_put_raw). */
static hid_t create_appendable(sctx *c, hid_t loc, const char *name, int t)
{
    hsize_t dims[1] = {0}, maxd[1] = {H5S_UNLIMITED}, ch[1] = {APPEND_CHUNK_ROWS};
    hid_t fs = H5Screate_simple(1, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE), lcpl = h5s_lcpl_parents(), d = -1;
    if (fs >= 0 && dcpl >= 0 && lcpl >= 0 && H5Pset_chunk(dcpl, 1, ch) >= 0 &&
        h5s_set_filters(c, dcpl, h5s_ftype(t), name) >= 0) {
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
        d = H5Dcreate2(loc, name, h5s_ftype(t), fs, lcpl, dcpl, H5P_DEFAULT);
    }
    if (d < 0) h5s_fail(c, LSIM_EIO, "cannot create dataset /%s", name);
    if (lcpl >= 0) H5Pclose(lcpl);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (fs >= 0) H5Sclose(fs);
    return d;
}

/* Grow d by `all` rows at row `at` and write this process's cnt of them,
 * at row at + mine, from buf (memory type of t). Collective in MPI mode
 * (every rank passes the same at and all; cnt may be 0). */
static int append_rows(sctx *c, hid_t d, const char *name, int t, uint64_t at, uint64_t mine, uint64_t cnt,
                       uint64_t all, const void *buf)
{
    if (!all) return 0;
    hsize_t nd[1] = {at + all}, o[1] = {at + mine}, n[1] = {cnt ? cnt : 1};
    static const char dummy[16];
    int rc = 0;
    hid_t fs = -1, ms = -1;
    if (H5Dset_extent(d, nd) < 0 || (fs = H5Dget_space(d)) < 0 ||
        (cnt ? H5Sselect_hyperslab(fs, H5S_SELECT_SET, o, NULL, n, NULL) : H5Sselect_none(fs)) < 0 ||
        (ms = H5Screate_simple(1, n, NULL)) < 0 || (!cnt && H5Sselect_none(ms) < 0) ||
        H5Dwrite(d, h5s_mtype(t), ms, fs, c->dxpl, buf ? buf : dummy) < 0)
        rc = h5s_fail_cause(c, LSIM_EIO, " (disk full?)", "cannot write /%s", name);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

void lsim_store_writer_abort(lsim_store_writer *w)
{
    if (!w) return;
    wq_on(&w->c);
    for (size_t k = 0; k < NDSETS; k++)
        if (w->d[k] >= 0) H5Dclose(w->d[k]);
    if (w->c.file >= 0) H5Fclose(w->c.file);
    w->c.file = -1;
    lsim_out_abort(w->c.out); /* removes the temporary; NULL after close */
    w->c.out = NULL;
    wq_off(&w->c);
    for (size_t i = 0; i < w->n; i++) free(w->src[i]);
    for (int i = 0; i < w->nattr; i++) {
        free(w->attr_name[i]);
        free(w->attr_text[i]);
    }
    free(w->src);
    h5s_sel_free(&w->sel);
    free(w->gall);
    free(w->m);
    free(w->buf);
    free(w->command_line);
    free(w);
}

static int writer_open(const char *path, int mpi, MPI_Comm comm, const lsim_store_write_opts *opts,
                       lsim_store_writer **out, lsim_err *err)
{
    *out = NULL;
    lsim_store_writer *w = lsim_calloc(1, sizeof *w);
    if (!w) {
        int rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        return mpi ? lsim_mpi_agree(comm, rc, err) : rc; /* the others' first agreement */
    }
    for (size_t k = 0; k < NDSETS; k++) w->d[k] = -1;
    h5s_ctx_init(&w->c, path, mpi, comm); /* also silences HDF5 errors */
    h5s_sel_one(&w->sel, 0, 0);
    h5s_apply_opts(&w->c, opts);
    if (opts) w->opts = *opts;
    w->opts.source_paths = NULL; /* per batch, not kept */
    w->lat = -1;
    int rc = h5s_check_layout(&w->c);
    if (!rc && opts && opts->command_line && !(w->command_line = lsim_strdup(opts->command_line))) rc = h5s_nomem(&w->c);
    rc = h5s_agree(&w->c, rc);
    if (!rc) rc = h5s_create_tmp(&w->c, w->tmp, sizeof w->tmp);
    /* every rank creates every dataset (collective metadata): a failure is
     * agreed before the next one */
    for (size_t k = 0; !rc && k < NDSETS; k++) {
        static const char *const sname[3] = {"strings/offset", "strings/chars", "strings/id"};
        static const int stype[3] = {T_U64, T_U8, T_U32};
        const char *name = k < H5S_NGCOLS ? h5s_gcols[k].name : sname[k - H5S_NGCOLS];
        int t = k < H5S_NGCOLS ? h5s_gcols[k].t : stype[k - H5S_NGCOLS];
        if ((w->d[k] = create_appendable(&w->c, w->c.file, name, t)) < 0) rc = w->c.e.code;
        rc = h5s_agree(&w->c, rc);
    }
    if (rc) {
        if (err) *err = w->c.e;
        lsim_store_writer_abort(w);
        return rc;
    }
    wq_off(&w->c);
    *out = w;
    return 0;
}

int lsim_store_writer_open(const char *path, const lsim_store_write_opts *opts, lsim_store_writer **out, lsim_err *err)
{
    return writer_open(path, 0, MPI_COMM_NULL, opts, out, err);
}

int lsim_store_writer_open_mpi(const char *path, MPI_Comm comm, const lsim_store_write_opts *opts,
                               lsim_store_writer **out, lsim_err *err)
{
    return writer_open(path, 1, comm, opts, out, err);
}

/* Grow the writer's scratch buffer to at least `need` bytes. */
static int wbuf(lsim_store_writer *w, size_t need)
{
    if (need <= w->bufcap) return 0;
    char *b = lsim_realloc(w->buf, need);
    if (!b) return h5s_nomem(&w->c);
    w->buf = b;
    w->bufcap = need;
    return 0;
}

/* Where this rank's batch goes in a round: lo[r] rows of kind r (lo[RK_N]
 * GPUs) of the lower ranks come before it, tot[r] rows in the round over
 * all ranks (on entry: this rank's own counts). Collective in MPI mode;
 * serial: lo = 0, tot unchanged. */
static void round_place(sctx *c, uint64_t *tot, uint64_t *lo)
{
    memset(lo, 0, (RK_N + 1) * sizeof *lo);
    if (!c->mpi) return;
    MPI_Exscan(tot, lo, RK_N + 1, MPI_UINT64_T, MPI_SUM, c->comm);
    if (c->rank == 0) memset(lo, 0, (RK_N + 1) * sizeof *lo); /* Exscan leaves rank 0's undefined */
    MPI_Allreduce(MPI_IN_PLACE, tot, RK_N + 1, MPI_UINT64_T, MPI_SUM, c->comm);
}

/* The node and edge places and string tables of every GPU of the round,
 * on every rank, into w->gall (from GPU w->ngpu on; the round's own GPUs'
 * offsets are final, a sharing GPU's are filled in after). Collective in
 * MPI mode. */
static int round_share_table(lsim_store_writer *w, size_t n, uint64_t round_gpus)
{
    sctx *c = &w->c;
    int rc = LSIM_GROW(w->gall, &w->capg, (size_t)(w->ngpu + round_gpus) * GREC) ? h5s_nomem(c) : 0;
    uint64_t *mine = rc ? NULL : lsim_malloc((n ? n : 1) * GREC * sizeof *mine);
    int *cnt = NULL, *dsp = NULL;
    if (!rc && !mine) rc = h5s_nomem(c);
    for (size_t i = 0; !rc && i < n; i++) {
        const gmeta *x = &w->m[w->n + i];
        uint64_t rec[GREC] = {x->off[RK_NODE], x->cnt[RK_NODE], x->off[RK_EDGE], x->cnt[RK_EDGE], x->same_as < 0,
                              x->strings_like < 0, x->nstr};
        memcpy(mine + GREC * i, rec, sizeof rec);
    }
    if (!c->mpi) {
        if (!rc && n) memcpy(w->gall + GREC * w->ngpu, mine, n * GREC * sizeof *mine);
        free(mine);
        return rc;
    }
    rc = h5s_agree(c, rc);
    if (!rc) {
        cnt = lsim_malloc((size_t)c->size * sizeof *cnt);
        dsp = lsim_malloc((size_t)c->size * sizeof *dsp);
        rc = h5s_agree(c, cnt && dsp ? 0 : h5s_nomem(c));
    }
    if (!rc) {
        int mn = (int)(n * GREC);
        MPI_Allgather(&mn, 1, MPI_INT, cnt, 1, MPI_INT, c->comm);
        for (int r = 0, at = 0; r < c->size; r++) dsp[r] = at, at += cnt[r];
        MPI_Allgatherv(mine, mn, MPI_UINT64_T, w->gall + GREC * w->ngpu, cnt, dsp, MPI_UINT64_T, c->comm);
    }
    free(dsp);
    free(cnt);
    free(mine);
    return rc;
}

/* The strings of graph g that differ from base's (same count): *ids
 * (allocated), *np, and their bytes with NULs, *bytes. */
static int find_patches(sctx *c, const lsim_graph *g, const lsim_graph *base, uint32_t **ids, uint64_t *np,
                        uint64_t *bytes)
{
    uint32_t ns = lsim_strtab_count(g->strings);
    *ids = lsim_malloc((ns ? ns : 1) * sizeof **ids);
    if (!*ids) return h5s_nomem(c);
    *np = h5s_string_patches(g, base, *ids);
    *bytes = 0;
    for (uint64_t k = 0; k < *np; k++) *bytes += strlen(lsim_strtab_get(g->strings, (*ids)[k])) + 1;
    return 0;
}

int lsim_store_writer_add(lsim_store_writer *w, lsim_graph *const *graphs, size_t n,
                          const char *const *source_paths, lsim_err *err)
{
    return lsim_store_writer_add_ex(w, graphs, n, source_paths, NULL, NULL, err);
}

int lsim_store_writer_add_ex(lsim_store_writer *w, lsim_graph *const *graphs, size_t n,
                             const char *const *source_paths, const int64_t *same_as,
                             const lsim_graph *const *str_base, lsim_err *err)
{
    sctx *c = &w->c;
    int rc = 0;
    uint32_t **patch = NULL; /* per graph: the ids its string rows replace, or NULL */
    wq_on(c);
    if (str_base && !(patch = lsim_calloc(n ? n : 1, sizeof *patch))) rc = h5s_nomem(c);
    for (size_t i = 0; !rc && i < n; i++)
        if (!graphs || !graphs[i] || !graphs[i]->strings)
            rc = h5s_fail(c, LSIM_EARG, "graph %zu of the batch is missing or has no string table", i);
    if (!rc && (LSIM_GROW(w->m, &w->capm, w->n + n) || LSIM_GROW(w->src, &w->capsrc, w->n + n))) rc = h5s_nomem(c);
    /* the batch's index entries, offsets within this rank's batch for now;
     * a GPU that shares an earlier one's node and edge rows adds none */
    uint64_t brows[RK_N] = {0};
    for (size_t i = 0; !rc && i < n; i++) {
        gmeta *x = &w->m[w->n + i];
        h5s_meta_from_graph(x, graphs[i]);
        if (same_as && same_as[i] >= 0 && graphs[i]->n) x->same_as = same_as[i];
        /* shared strings: only those that differ from the base's */
        const lsim_graph *b = str_base && same_as && same_as[i] >= 0 ? str_base[i] : NULL;
        if (b && b->strings && lsim_strtab_count(b->strings) == x->nstr && x->nstr) {
            uint64_t np = 0, bytes = 0;
            if ((rc = find_patches(c, graphs[i], b, &patch[i], &np, &bytes))) break;
            x->strings_like = same_as[i];
            x->cnt[RK_STR] = np;
            x->cnt[RK_CHAR] = bytes;
        }
        if (source_paths && source_paths[i]) rc = h5s_file_crc(c, source_paths[i], &x->source_size, &x->source_crc32);
        for (int r = 0; r < RK_N; r++) {
            if (x->same_as >= 0 && (r == RK_NODE || r == RK_EDGE)) continue;
            x->off[r] = brows[r];
            brows[r] += x->cnt[r];
        }
    }
    rc = h5s_agree(c, rc);
    uint64_t tot[RK_N + 1], lo[RK_N + 1];
    memcpy(tot, brows, sizeof brows);
    tot[RK_N] = rc ? 0 : n;
    if (!rc) round_place(c, tot, lo);
    for (size_t i = 0; !rc && i < n; i++)
        for (int r = 0; r < RK_N; r++)
            if (w->m[w->n + i].same_as < 0 || (r != RK_NODE && r != RK_EDGE))
                w->m[w->n + i].off[r] += w->rows[r] + lo[r];
    /* a sharing GPU's rows are those of an earlier GPU with rows of its own
     * and the same counts (the caller vouches for the contents) */
    if (!rc) rc = round_share_table(w, n, tot[RK_N]);
    for (size_t i = 0; !rc && i < n; i++) {
        gmeta *x = &w->m[w->n + i];
        uint64_t gi = w->ngpu + lo[RK_N] + i;
        if (x->strings_like >= 0) {
            uint64_t t = (uint64_t)x->strings_like;
            const uint64_t *e = t < gi ? w->gall + GREC * t : NULL;
            if (!e || !e[5] || e[6] != x->nstr) {
                rc = h5s_fail(c, LSIM_EARG, "graph %zu of the batch (GPU %llu) cannot share the strings of GPU %lld: "
                                            "not an earlier GPU with a string table of its own of as many strings",
                              i, (unsigned long long)gi, (long long)x->strings_like);
                break;
            }
        }
        if (x->same_as < 0) continue;
        uint64_t t = (uint64_t)x->same_as;
        const uint64_t *e = t < gi ? w->gall + GREC * t : NULL;
        if (!e || !e[4] || e[1] != x->cnt[RK_NODE] || e[3] != x->cnt[RK_EDGE]) {
            rc = h5s_fail(c, LSIM_EARG, "graph %zu of the batch (GPU %llu) cannot share the rows of GPU %lld: not an "
                                        "earlier GPU with rows of its own and the same node and edge counts",
                          i, (unsigned long long)gi, (long long)x->same_as);
            break;
        }
        x->off[RK_NODE] = e[0];
        x->off[RK_EDGE] = e[2];
        w->gall[GREC * gi + 0] = e[0];
        w->gall[GREC * gi + 2] = e[2];
        w->gall[GREC * gi + 4] = 0;
    }
    rc = h5s_agree(c, rc);
    /* each column once per batch (a partly filled chunk is rewritten only
     * at the batch's two ends); every rank takes part in every column that
     * grows in this round, with or without rows of its own */
    for (size_t k = 0; !rc && k < H5S_NGCOLS; k++) {
        const gcol *gc = &h5s_gcols[k];
        uint64_t cnt = brows[gc->rk];
        if (!tot[gc->rk]) continue;
        if ((rc = h5s_agree(c, wbuf(w, cnt * gc->esz)))) break;
        uint64_t at = 0;
        for (size_t i = 0; i < n; i++) {
            if (w->m[w->n + i].same_as >= 0 && (gc->rk == RK_NODE || gc->rk == RK_EDGE)) continue;
            uint64_t r = w->m[w->n + i].cnt[gc->rk];
            h5s_pack(gc, graphs[i], r, w->buf + at * gc->esz);
            at += r;
        }
        rc = h5s_agree(c, append_rows(c, w->d[k], gc->name, gc->t, w->rows[gc->rk], lo[gc->rk], cnt, tot[gc->rk],
                                      w->buf));
    }
    /* strings: per-string offsets within each GPU's bytes, then the bytes */
    uint64_t ns = brows[RK_STR], nc = brows[RK_CHAR];
    if (!rc && tot[RK_STR] && !(rc = h5s_agree(c, wbuf(w, ns * (sizeof(uint64_t) + sizeof(uint32_t)) + nc)))) {
        uint64_t *o = (uint64_t *)(void *)w->buf;
        uint32_t *ids = (uint32_t *)(void *)(w->buf + ns * sizeof(uint64_t));
        char *ch = w->buf + ns * (sizeof(uint64_t) + sizeof(uint32_t));
        h5s_pack_strings(graphs, w->m + w->n, n, patch, o, ch, ids);
        rc = h5s_agree(c, append_rows(c, w->d[H5S_NGCOLS], "strings/offset", T_U64, w->rows[RK_STR], lo[RK_STR], ns,
                                      tot[RK_STR], o));
        if (!rc)
            rc = h5s_agree(c, append_rows(c, w->d[H5S_NGCOLS + 1], "strings/chars", T_U8, w->rows[RK_CHAR],
                                          lo[RK_CHAR], nc, tot[RK_CHAR], ch));
        if (!rc)
            rc = h5s_agree(c, append_rows(c, w->d[H5S_NGCOLS + 2], "strings/id", T_U32, w->rows[RK_STR], lo[RK_STR], ns,
                                          tot[RK_STR], ids));
    }
    /* this rank's GPUs of the round in /gpus */
    if (!rc) rc = h5s_sel_add(c, &w->sel, w->ngpu + lo[RK_N], n);
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_graph *g = graphs[i];
        const char *sp = source_paths ? source_paths[i] : NULL;
        if (!(w->src[w->n + i] = lsim_strdup(g->source ? g->source : sp ? sp : ""))) {
            for (size_t k = 0; k < i; k++) free(w->src[w->n + k]);
            rc = h5s_nomem(c);
        }
    }
    if (!rc) {
        for (size_t i = 0; i < n; i++) {
            int lat = graphs[i]->latency;
            if (w->lat < 0) w->lat = lat;
            else if (w->lat != lat) w->mixed = 1;
        }
        for (int r = 0; r < RK_N; r++) w->rows[r] += tot[r];
        w->ngpu += tot[RK_N];
        w->n += n;
    }
    rc = h5s_agree(c, rc);
    if (rc && err) *err = c->e;
    for (size_t i = 0; patch && i < n; i++) free(patch[i]);
    free(patch);
    wq_off(c);
    return rc;
}

/* Names the store itself writes on its root, or that are not names. */
static int valid_attr_name(const char *name)
{
    static const char *const reserved[] = {"schema_version", "kind", "lumosim_version", "created_by", "latency_mode"};
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
              (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
            return 0;
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (!strcmp(name, reserved[i])) return 0;
    return 1;
}

int lsim_store_writer_set_attr(lsim_store_writer *w, const char *name, const char *text, lsim_err *err)
{
    if (!valid_attr_name(name))
        return lsim_err_set(err, LSIM_EARG, "%s: bad attribute name '%s' (1..64 letters, digits, _; not one the "
                                            "store writes itself)",
                            w->c.path, name ? name : "");
    int i = 0;
    while (i < w->nattr && strcmp(w->attr_name[i], name)) i++;
    if (i == LSIM_STORE_MAX_ATTRS) return lsim_err_set(err, LSIM_EARG, "%s: too many attributes", w->c.path);
    char *t = lsim_strdup(text ? text : "");
    if (!t) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (i == w->nattr) {
        if (!(w->attr_name[i] = lsim_strdup(name))) {
            free(t);
            return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        }
        w->nattr++;
    } else {
        free(w->attr_text[i]);
    }
    w->attr_text[i] = t;
    return 0;
}

int lsim_store_writer_close(lsim_store_writer *w, lsim_err *err)
{
    if (!w) return 0;
    sctx *c = &w->c;
    wq_on(c);
    int rc = 0;
    for (size_t k = 0; k < NDSETS; k++) {
        if (w->d[k] >= 0 && H5Dclose(w->d[k]) < 0 && !rc) rc = h5s_fail_cause(c, LSIM_EIO, " (disk full?)", "cannot close a dataset");
        w->d[k] = -1;
    }
    /* the latency mode over all GPUs: one mode, or "mixed" */
    int lat_lo = w->n ? w->lat : INT_MAX, lat_hi = w->n ? w->lat : -1, mixed = w->mixed;
    if (c->mpi) {
        MPI_Allreduce(MPI_IN_PLACE, &lat_lo, 1, MPI_INT, MPI_MIN, c->comm);
        MPI_Allreduce(MPI_IN_PLACE, &lat_hi, 1, MPI_INT, MPI_MAX, c->comm);
        MPI_Allreduce(MPI_IN_PLACE, &mixed, 1, MPI_INT, MPI_MAX, c->comm);
    }
    if (lat_hi >= 0 && lat_lo != lat_hi) mixed = 1;
    rc = h5s_agree(c, rc);
    uint64_t gch = h5s_min_u64(w->ngpu ? w->ngpu : 1, CHUNK_MAX_ROWS);
    const char **src = (const char **)w->src;
    if (!rc)
        rc = h5s_put_records(c, c->file, "", "gpus", h5s_gpu_cols, h5s_ngpu_cols, w->m, sizeof *w->m, w->ngpu, &w->sel,
                             w->n, gch);
    if (!rc)
        rc = h5s_put_records(c, c->file, "", "gpus", h5s_gpu_mem_cols, h5s_ngpu_mem_cols, w->m, sizeof *w->m, w->ngpu,
                             &w->sel, w->n, gch);
    if (!rc)
        rc = h5s_put_records(c, c->file, "", "gpus", h5s_gpu_strlike_cols, h5s_ngpu_strlike_cols, w->m, sizeof *w->m,
                             w->ngpu, &w->sel, w->n, gch);
    if (!rc) rc = h5s_put_strings(c, c->file, "", "gpus/source", src, w->n, w->ngpu, &w->sel, gch);
    if (!rc)
        rc = h5s_write_root_attrs(c, LSIM_STORE_KIND_GRAPHS, w->command_line ? w->command_line : "",
                              mixed ? "mixed" : lsim_latency_mode_name((lsim_latency_mode)(lat_hi < 0 ? 0 : lat_hi)));
    for (int i = 0; !rc && i < w->nattr; i++)
        if (h5s_put_attr_str(c->file, w->attr_name[i], w->attr_text[i]))
            rc = h5s_fail(c, LSIM_EIO, "cannot write the attribute %s", w->attr_name[i]);
    if (!rc && (rc = h5s_label_graph_tables(c->file))) rc = h5s_label_fail(c, rc, "/gpus");
    rc = h5s_agree(c, rc);
    if (!rc) rc = h5s_describe(c, c->file, "");
    rc = h5s_finish_tmp(c, w->tmp, rc);
    w->tmp[0] = '\0';
    if (rc && err) *err = c->e;
    wq_off(c);
    lsim_store_writer_abort(w); /* frees; the file is already renamed or removed */
    return rc;
}
