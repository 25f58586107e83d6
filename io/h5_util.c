/* HDF5 plumbing shared by the graph store and the result archive
 * (io/h5_internal.h): the call context, HDF5 error silencing and the MPI
 * agreement, types, attributes, chunked and compressed columns, row
 * selections, per-GPU record tables, and the temporary-file life cycle. */
#include "h5_internal.h"
#include "lumosim/alloc.h"
#include "lumosim/tmpfiles.h"

#include "lumosim/input.h"
#include "lumosim/agree.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

/* The default filter of each dataset class (store.h LSIM_STORE_CLASS_*):
 * docs/store-performance.md, "Filters per dataset class", has the figures
 * it was chosen from (bench/store.sh). */
static const int filt_default[LSIM_STORE_NCLASSES] = {
    [LSIM_STORE_CLASS_BYTES] = 1,
    [LSIM_STORE_CLASS_IDS] = 1,
    [LSIM_STORE_CLASS_INT64] = 1,
    [LSIM_STORE_CLASS_FLOAT] = 1,
    [LSIM_STORE_CLASS_CHARS] = 1,
};

/* ------------------------------------------------------------ context */

/* ------------------------------------------------------------ context */

/* HDF5 1.10 leaks internal free-list blocks when it rejects corrupt
 * metadata, and then prints "HDF5: infinite loop closing library" from its
 * atexit handler. Skip that handler (it only closes what is still open; the
 * store never leaves anything open). No effect when the caller initialised
 * HDF5 first. */
void h5s_quiet_exit(void)
{
    static int done;
    if (!done) {
        done = 1;
        H5dont_atexit();
    }
}

void h5s_ctx_init(sctx *c, const char *path, int mpi, MPI_Comm comm)
{
    memset(c, 0, sizeof *c);
    c->tmp_slot[0] = c->tmp_slot[1] = -1;
    c->path = path ? path : "(null)";
    c->file = -1;
    c->dxpl = H5P_DEFAULT;
    c->mpi = mpi;
    c->comm = comm;
    c->rank = 0;
    c->size = 1;
    memcpy(c->filt, filt_default, sizeof c->filt);
    if (mpi) {
        MPI_Comm_rank(comm, &c->rank);
        MPI_Comm_size(comm, &c->size);
    }
    h5s_quiet_exit();
    H5Eget_auto2(H5E_DEFAULT, &c->old_fn, &c->old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void unregister_tmp(sctx *c)
{
    for (int k = 0; k < 2; k++) {
        lsim_tmp_unregister(c->tmp_slot[k]);
        c->tmp_slot[k] = -1;
    }
}

int h5s_ctx_done(sctx *c, int rc, lsim_err *err)
{
    lsim_out_abort(c->out); /* an error path that never reached h5s_finish_tmp */
    c->out = NULL;
    unregister_tmp(c);
    if (c->dxpl != H5P_DEFAULT) H5Pclose(c->dxpl);
    c->dxpl = H5P_DEFAULT;
    if (c->file >= 0) H5Fclose(c->file);
    c->file = -1;
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, c->old_fn, c->old_data);
    if (rc && err) *err = c->e;
    return rc;
}

/* "PATH: message" into the context's error; returns code. */
int h5s_fail(sctx *c, int code, const char *fmt, ...)
{
    char buf[LSIM_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return lsim_err_set(&c->e, code, "%s: %s", c->path, buf);
}

int h5s_nomem(sctx *c) { return h5s_fail(c, LSIM_ENOMEM, "out of memory"); }

/* HDF5 reports every failed read as a failed read and every failed write
 * as a failed write; what caused it is in its error stack (the messages
 * auto-printing would have shown). Memory is named by H5MM's "memory
 * allocation failed", the resource class's "no space available for
 * allocation" (H5E_NOSPACE) or the system's ENOMEM text; a full device by
 * the system's ENOSPC text, which HDF5's POSIX and MPI-IO drivers copy into
 * the description. Without this a run under `ulimit -v` was told its
 * intact input was corrupt, and a write with gigabytes free that the disk
 * was full (issue 40). */
enum { CAUSE_NONE = 0, CAUSE_NOMEM = 1, CAUSE_NOSPC = 2 };

static herr_t cause_of(unsigned n, const H5E_error2_t *e, void *data)
{
    int *cause = data;
    (void)n;
    const char *d = e->desc ? e->desc : "";
    if (e->min_num == H5E_NOSPACE || strstr(d, "memory allocation failed") || strstr(d, strerror(ENOMEM)))
        *cause = CAUSE_NOMEM;
    else if (!*cause && strstr(d, strerror(ENOSPC)))
        *cause = CAUSE_NOSPC;
    return 0;
}

int h5s_fail_cause(sctx *c, int code, const char *otherwise, const char *fmt, ...)
{
    char buf[LSIM_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    int cause = CAUSE_NONE;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, cause_of, &cause);
    if (cause == CAUSE_NOMEM) return h5s_fail(c, LSIM_ENOMEM, "%s: out of memory", buf);
    if (cause == CAUSE_NOSPC) return h5s_fail(c, LSIM_EIO, "%s: no space left on the device", buf);
    return h5s_fail(c, code, "%s%s", buf, otherwise);
}

/* Global index of local GPU i (gfirst from h5s_gather_records). */
size_t h5s_gpu_at(const sctx *c, size_t gfirst, size_t i) { return c->gids ? c->gids[i] : gfirst + i; }

/* The MPI agreement: every rank learns whether any rank failed; the lowest
 * failing rank's error becomes everyone's. Serial: rc unchanged.
 *
 * NOTE: this is the store's own copy of the agreement that the rest of
 * lumosim does with lsim_mpi_agree-style helpers; it is kept in this one
 * function (and nowhere else in io/h5_*.c) so that it can be switched to
 * the shared agreement function in one place. It works on the context's
 * error (c->e), which the shared one would take as an lsim_err. */
int h5s_agree(sctx *c, int rc)
{
    /* the one agreement (agree.h): the lowest failing rank's code and
     * message on every rank */
    return c->mpi ? lsim_mpi_agree(c->comm, rc, &c->e) : rc;
}

/* ------------------------------------------------------------ types */

hid_t h5s_ftype(int t)
{
    switch (t) {
    case T_U8: return H5T_STD_U8LE;
    case T_I32: return H5T_STD_I32LE;
    case T_U32: return H5T_STD_U32LE;
    case T_I64: return H5T_STD_I64LE;
    case T_U64: return H5T_STD_U64LE;
    default: return H5T_IEEE_F64LE;
    }
}

hid_t h5s_mtype(int t)
{
    switch (t) {
    case T_U8: return H5T_NATIVE_UINT8;
    case T_I32: return H5T_NATIVE_INT32;
    case T_U32: return H5T_NATIVE_UINT32;
    case T_I64: return H5T_NATIVE_INT64;
    case T_U64: return H5T_NATIVE_UINT64;
    default: return H5T_NATIVE_DOUBLE;
    }
}

size_t h5s_tsize(int t)
{
    switch (t) {
    case T_U8: return 1;
    case T_I32:
    case T_U32: return 4;
    default: return 8;
    }
}

/* Fixed-length NUL-terminated string type holding len characters. */
hid_t h5s_str_type(size_t len)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return -1;
    if (H5Tset_size(t, len + 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

uint64_t h5s_min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }


/* ------------------------------------------------------------ attributes */

int h5s_put_attr(hid_t loc, const char *name, hid_t ft, hid_t mt, hsize_t n, const void *val)
{
    hid_t sp = n ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
    if (sp < 0) return -1;
    if (H5Aexists(loc, name) > 0) H5Adelete(loc, name);
    hid_t a = H5Acreate2(loc, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 || H5Awrite(a, mt, val) < 0 ? -1 : 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return rc;
}

int h5s_put_attr_str(hid_t loc, const char *name, const char *s)
{
    if (!s) s = "";
    hid_t t = h5s_str_type(strlen(s));
    if (t < 0) return -1;
    int rc = h5s_put_attr(loc, name, t, t, 0, s);
    H5Tclose(t);
    return rc;
}

int h5s_put_attr_u64(hid_t loc, const char *name, uint64_t v)
{
    return h5s_put_attr(loc, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, 0, &v);
}

int h5s_put_attr_i32(hid_t loc, const char *name, int32_t v)
{
    return h5s_put_attr(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT32, 0, &v);
}

int h5s_put_attr_f64(hid_t loc, const char *name, double v)
{
    return h5s_put_attr(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, &v);
}

/* A 1-D array of fixed-length strings (each padded to the longest). */
int h5s_put_attr_strs(hid_t loc, const char *name, const char *const *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] && strlen(s[i]) > w) w = strlen(s[i]);
    char *buf = lsim_calloc(n ? n : 1, w + 1);
    if (!buf) return H5S_NOMEM;
    for (size_t i = 0; i < n; i++)
        if (s[i]) memcpy(buf + i * (w + 1), s[i], strlen(s[i]));
    hid_t t = h5s_str_type(w);
    int rc = t < 0 ? -1 : h5s_put_attr(loc, name, t, t, n ? n : 1, buf);
    if (t >= 0) H5Tclose(t);
    free(buf);
    return rc;
}

/* Attribute readers: 1 = read, 0 = absent, -1 = present but unreadable or of
 * the wrong kind, H5S_NOMEM = out of memory (not the file's fault). */

/* An attribute opened for reading with its type and space; an id that
 * could not be had is -1 (the readers check the ones they use). */
typedef struct attr_rd {
    hid_t a, t, sp;
} attr_rd;

/* 0: no attribute `name` on loc (nothing opened); 1: r opened (close with
 * attr_close). */
static int attr_open(hid_t loc, const char *name, attr_rd *r)
{
    r->a = r->t = r->sp = -1;
    if (H5Aexists(loc, name) <= 0) return 0;
    r->a = H5Aopen(loc, name, H5P_DEFAULT);
    r->t = r->a >= 0 ? H5Aget_type(r->a) : -1;
    r->sp = r->a >= 0 ? H5Aget_space(r->a) : -1;
    return 1;
}

static void attr_close(const attr_rd *r)
{
    if (r->sp >= 0) H5Sclose(r->sp);
    if (r->t >= 0) H5Tclose(r->t);
    if (r->a >= 0) H5Aclose(r->a);
}

int h5s_get_attr_str(hid_t loc, const char *name, char **out)
{
    *out = NULL;
    attr_rd r;
    if (!attr_open(loc, name, &r)) return 0;
    int rc = -1;
    hid_t a = r.a, t = r.t, sp = r.sp;
    if (t < 0 || sp < 0 || H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(sp) != 1) goto out;
    if (H5Tis_variable_str(t) > 0) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        char *v = NULL;
        if (mt >= 0 && H5Tset_size(mt, H5T_VARIABLE) >= 0 && H5Aread(a, mt, &v) >= 0) {
            *out = lsim_strdup(v ? v : "");
            H5free_memory(v);
            rc = *out ? 1 : H5S_NOMEM;
        }
        if (mt >= 0) H5Tclose(mt);
    } else {
        size_t sz = H5Tget_size(t);
        hid_t mt = sz ? h5s_str_type(sz) : -1; /* room for a NUL after the data */
        char *v = sz ? lsim_calloc(1, sz + 2) : NULL;
        if (sz && !v) rc = H5S_NOMEM;
        else if (mt >= 0 && H5Aread(a, mt, v) >= 0) {
            v[sz] = '\0';
            *out = v;
            v = NULL;
            rc = 1;
        }
        free(v);
        if (mt >= 0) H5Tclose(mt);
    }
out:
    attr_close(&r);
    return rc;
}

int h5s_get_attr_num(hid_t loc, const char *name, int is_float, void *out)
{
    attr_rd r;
    if (!attr_open(loc, name, &r)) return 0;
    int rc = -1;
    hid_t a = r.a, t = r.t, sp = r.sp;
    if (t >= 0 && sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1) {
        H5T_class_t k = H5Tget_class(t);
        if (k == H5T_INTEGER || (is_float && k == H5T_FLOAT))
            rc = H5Aread(a, is_float ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, out) < 0 ? -1 : 1;
    }
    attr_close(&r);
    return rc;
}

/* Arrays of fixed strings / doubles (phase names and times). */
int h5s_get_attr_strs(hid_t loc, const char *name, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    attr_rd r;
    if (!attr_open(loc, name, &r)) return 0;
    int rc = -1;
    hid_t a = r.a, t = r.t, sp = r.sp;
    hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (t < 0 || np < 0 || H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) != 0) goto out;
    size_t sz = H5Tget_size(t);
    if (!sz || np > 1000000) goto out;
    hid_t mt = h5s_str_type(sz);
    char *buf = lsim_calloc((size_t)np ? (size_t)np : 1, sz + 1);
    char **v = lsim_calloc((size_t)np ? (size_t)np : 1, sizeof *v);
    if (!buf || !v) rc = H5S_NOMEM;
    else if (mt >= 0 && H5Aread(a, mt, buf) >= 0) {
        size_t i;
        for (i = 0; i < (size_t)np; i++) {
            if (!(v[i] = lsim_calloc(1, sz + 1))) break;
            memcpy(v[i], buf + i * (sz + 1), sz);
        }
        if (i == (size_t)np) {
            *out = v;
            *n = (size_t)np;
            v = NULL;
            rc = 1;
        } else {
            rc = H5S_NOMEM;
            while (i) free(v[--i]);
        }
    }
    free(v);
    free(buf);
    if (mt >= 0) H5Tclose(mt);
out:
    attr_close(&r);
    return rc;
}

int h5s_get_attr_f64s(hid_t loc, const char *name, double **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    attr_rd r;
    if (!attr_open(loc, name, &r)) return 0;
    int rc = -1;
    hid_t a = r.a, t = r.t, sp = r.sp;
    hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (t >= 0 && np >= 0 && np <= 1000000 && H5Tget_class(t) == H5T_FLOAT) {
        double *v = lsim_calloc((size_t)np ? (size_t)np : 1, sizeof *v);
        if (!v) rc = H5S_NOMEM;
        else if (H5Aread(a, H5T_NATIVE_DOUBLE, v) >= 0) {
            *out = v;
            *n = (size_t)np;
            rc = 1;
        } else {
            free(v);
        }
    }
    attr_close(&r);
    return rc;
}
/* ------------------------------------------------------------ columns */

hid_t h5s_lcpl_parents(void)
{
    hid_t p = H5Pcreate(H5P_LINK_CREATE);
    if (p >= 0 && H5Pset_create_intermediate_group(p, 1) < 0) {
        H5Pclose(p);
        return -1;
    }
    return p;
}

void h5s_sel_one(rowsel *s, uint64_t off, uint64_t cnt)
{
    memset(s, 0, sizeof *s);
    s->o1 = off;
    s->c1 = cnt;
    s->off = &s->o1;
    s->cnt = &s->c1;
    s->n = cnt ? 1 : 0;
    s->rows = cnt;
}

void h5s_sel_free(rowsel *s)
{
    if (s->owned) {
        free(s->off);
        free(s->cnt);
    }
    memset(s, 0, sizeof *s);
}

/* Append rows [off, off + cnt); merged with the previous range when they
 * touch, so a contiguous block stays one hyperslab. */
int h5s_sel_add(sctx *c, rowsel *s, uint64_t off, uint64_t cnt)
{
    if (!cnt) return 0;
    if (s->n && s->off[s->n - 1] + s->cnt[s->n - 1] == off) {
        s->cnt[s->n - 1] += cnt;
        s->rows += cnt;
        return 0;
    }
    if (!s->owned) {
        uint64_t o = s->n ? s->o1 : 0, k = s->n ? s->c1 : 0;
        size_t had = s->n;
        memset(s, 0, sizeof *s);
        s->owned = 1;
        if (had && h5s_sel_add(c, s, o, k)) return LSIM_ENOMEM;
    }
    size_t capoff = s->cap, capcnt = s->cap; /* one cap for both: grown alike */
    if (LSIM_GROW(s->off, &capoff, s->n + 1) || LSIM_GROW(s->cnt, &capcnt, s->n + 1)) return h5s_nomem(c);
    s->cap = capoff;
    s->off[s->n] = off;
    s->cnt[s->n] = cnt;
    s->n++;
    s->rows += cnt;
    return 0;
}

/* Select s's rows (all columns) in the file space fs; <0 on failure. */
static int sel_apply(hid_t fs, const rowsel *s, int width)
{
    if (!s->n) return H5Sselect_none(fs) < 0 ? -1 : 0;
    for (size_t i = 0; i < s->n; i++) {
        hsize_t o[2] = {s->off[i], 0}, n[2] = {s->cnt[i], (hsize_t)width};
        if (H5Sselect_hyperslab(fs, i ? H5S_SELECT_OR : H5S_SELECT_SET, o, NULL, n, NULL) < 0) return -1;
    }
    return 0;
}

/* Create dataset `name` (relative to loc; missing parent groups are
 * created) of total x width elements of file type ft, chunked by `chunk`
 * rows with its class's filters (h5s_set_filters) + Fletcher-32 (chunk 0
 * or total 0: contiguous, unfiltered). The dataset (caller closes), or -1
 * with the error set. Collective in MPI mode. */
hid_t h5s_create_raw(sctx *c, hid_t loc, const char *where, const char *name, hid_t ft, int width, uint64_t total,
                     uint64_t chunk)
{
    int nd = width > 1 ? 2 : 1;
    hsize_t dims[2] = {total, (hsize_t)width};
    hid_t fs = H5Screate_simple(nd, dims, NULL), d = -1;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), lcpl = h5s_lcpl_parents();
    if (fs < 0 || dcpl < 0 || lcpl < 0) {
        h5s_fail(c, LSIM_EIO, "cannot create %s/%s", where, name);
        goto out;
    }
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    if (total > 0 && chunk > 0) {
        hsize_t ch[2] = {chunk < total ? chunk : total, (hsize_t)width};
        if (H5Pset_chunk(dcpl, nd, ch) < 0 || h5s_set_filters(c, dcpl, ft, name) < 0) {
            h5s_fail(c, LSIM_EIO, "cannot set up chunking for %s/%s", where, name);
            goto out;
        }
    }
    d = H5Dcreate2(loc, name, ft, fs, lcpl, dcpl, H5P_DEFAULT);
    if (d < 0) h5s_fail(c, LSIM_EIO, "cannot create dataset %s/%s", where, name);
out:
    if (lcpl >= 0) H5Pclose(lcpl);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (fs >= 0) H5Sclose(fs);
    return d;
}

/* Write this process's rows sel of dataset d (total x width elements) from
 * buf (memory type mt). Collective in MPI mode (sel may be empty). */
int h5s_write_rows(sctx *c, hid_t d, const char *where, const char *name, hid_t mt, int width, uint64_t total,
                   const rowsel *sel, const void *buf)
{
    if (total == 0) return 0;
    int rc = 0, nd = width > 1 ? 2 : 1;
    hsize_t dims[2] = {total, (hsize_t)width};
    hid_t fs = H5Dget_space(d), ms = -1;
    if (fs < 0) rc = -1;
    else if (sel->rows) {
        hsize_t n[2] = {sel->rows, (hsize_t)width};
        if (sel_apply(fs, sel, width) < 0) rc = -1;
        ms = H5Screate_simple(nd, n, NULL);
    } else {
        H5Sselect_none(fs);
        ms = H5Screate_simple(nd, dims, NULL);
        if (ms >= 0) H5Sselect_none(ms);
    }
    static const char dummy[16];
    if (rc || ms < 0 || H5Dwrite(d, mt, ms, fs, c->dxpl, buf ? buf : dummy) < 0)
        rc = h5s_fail_cause(c, LSIM_EIO, " (disk full?)", "cannot write %s/%s", where, name);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

/* create + write + close. Collective in MPI mode (sel may be empty). */
int h5s_put_raw(sctx *c, hid_t loc, const char *where, const char *name, hid_t ft, hid_t mt, int width,
                   uint64_t total, uint64_t chunk, const rowsel *sel, const void *buf)
{
    hid_t d = h5s_create_raw(c, loc, where, name, ft, width, total, chunk);
    if (d < 0) return c->e.code ? c->e.code : LSIM_EIO;
    int rc = h5s_write_rows(c, d, where, name, mt, width, total, sel, buf);
    H5Dclose(d);
    return rc;
}

int h5s_put_col(sctx *c, hid_t loc, const char *where, const char *name, int t, int width, uint64_t total,
                   uint64_t chunk, const rowsel *sel, const void *buf)
{
    return h5s_put_raw(c, loc, where, name, h5s_ftype(t), h5s_mtype(t), width, total, chunk, sel, buf);
}

/* Who provides HDF5 filter `id` on a Debian machine: the filters lumosim
 * writes are built into libhdf5; the others are plugins that HDF5 loads
 * from HDF5_PLUGIN_PATH (Debian: /usr/lib/x86_64-linux-gnu/hdf5/plugins).
 * Ids: the HDF Group's registry of filter identifiers. */
static const char *filter_package(H5Z_filter_t id, const char **name)
{
    static const struct {
        H5Z_filter_t id;
        const char *name, *pkg;
    } known[] = {
        {H5Z_FILTER_DEFLATE, "deflate", "zlib, built into libhdf5 (Debian libhdf5-103-1 / libhdf5-openmpi-103-1)"},
        {H5Z_FILTER_SHUFFLE, "shuffle", "libhdf5 itself (Debian libhdf5-103-1 / libhdf5-openmpi-103-1)"},
        {H5Z_FILTER_FLETCHER32, "fletcher32", "libhdf5 itself (Debian libhdf5-103-1 / libhdf5-openmpi-103-1)"},
        {H5Z_FILTER_SZIP, "szip", "libaec's szip, linked by libhdf5 (Debian libsz2)"},
        {H5Z_FILTER_NBIT, "nbit", "libhdf5 itself (Debian libhdf5-103-1 / libhdf5-openmpi-103-1)"},
        {H5Z_FILTER_SCALEOFFSET, "scaleoffset", "libhdf5 itself (Debian libhdf5-103-1 / libhdf5-openmpi-103-1)"},
        {307, "bzip2", "the Debian package hdf5-filter-plugin"},
        {32004, "lz4", "the Debian package hdf5-filter-plugin"},
        {32008, "bitshuffle", "the Debian package hdf5-filter-plugin"},
        {32001, "blosc", "the Debian package hdf5-filter-plugin-blosc-serial"},
        {32013, "zfp", "the Debian package hdf5-filter-plugin-zfp-serial"},
        {32000, "lzf", "the Debian package hdf5-plugin-lzf"},
        {32015, "zstd", "an HDF5 zstd plugin (Debian: python3-hdf5plugin ships one; point HDF5_PLUGIN_PATH at it)"},
    };
    for (size_t k = 0; k < sizeof known / sizeof *known; k++)
        if (known[k].id == id) {
            *name = known[k].name;
            return known[k].pkg;
        }
    *name = NULL;
    return "an HDF5 filter plugin of that id (HDF5_PLUGIN_PATH)";
}

/* A dataset whose filter pipeline names a filter this machine's HDF5 cannot
 * apply would fail at the first read with HDF5's generic "can't read data";
 * say instead which filter it is and which package provides it. Local. */
static int check_filters(sctx *c, hid_t d, const char *where, const char *name)
{
    hid_t dcpl = H5Dget_create_plist(d);
    int nf = dcpl >= 0 ? H5Pget_nfilters(dcpl) : -1, rc = 0;
    for (int k = 0; k < nf && !rc; k++) {
        unsigned flags = 0, cd[8];
        size_t ncd = sizeof cd / sizeof *cd;
        char fname[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)k, &flags, &ncd, cd, sizeof fname, fname, NULL);
        if (id < 0 || H5Zfilter_avail(id) > 0) continue;
        const char *known = NULL, *pkg = filter_package(id, &known);
        rc = h5s_fail(c, LSIM_EFORMAT,
                      "dataset %s/%s is encoded with HDF5 filter %d (%s), which this machine's HDF5 does not have: "
                      "it comes with %s",
                      where, name, (int)id, known ? known : fname[0] ? fname : "unnamed", pkg);
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    return rc;
}

/* Open dataset `name` and check it is total x width elements of the
 * expected class (and, for strings, fixed length: *strsize gets the size).
 * Returns the dataset or -1 with the error set. Collective in MPI mode. */
hid_t h5s_open_col(sctx *c, hid_t loc, const char *where, const char *name, H5T_class_t cls, int width,
                      uint64_t total, size_t *strsize)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) {
        /* H5Lexists fails when a parent group is missing too */
        h5s_fail(c, LSIM_EFORMAT, "dataset %s/%s is missing", where, name);
        return -1;
    }
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0) {
        h5s_fail(c, LSIM_EFORMAT, "%s/%s cannot be opened (not a dataset, or the file is corrupt)", where, name);
        return -1;
    }
    if (check_filters(c, d, where, name)) {
        H5Dclose(d);
        return -1;
    }
    hid_t sp = H5Dget_space(d), t = H5Dget_type(d);
    hsize_t dims[2] = {0, 0};
    int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    int ok = 1;
    if (nd != (width > 1 ? 2 : 1) || H5Sget_simple_extent_dims(sp, dims, NULL) < 0) {
        h5s_fail(c, LSIM_EFORMAT, "%s/%s has %d dimensions, expected %d", where, name, nd, width > 1 ? 2 : 1);
        ok = 0;
    } else if (dims[0] != total || (width > 1 && dims[1] != (hsize_t)width)) {
        if (width > 1)
            h5s_fail(c, LSIM_EFORMAT, "%s/%s is %llu x %llu, expected %llu x %d (from the /gpus offsets and counts)", where,
                 name, (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)total, width);
        else
            h5s_fail(c, LSIM_EFORMAT, "%s/%s has %llu rows, expected %llu (from the offsets and counts)", where, name,
                 (unsigned long long)dims[0], (unsigned long long)total);
        ok = 0;
    } else if (t < 0 || H5Tget_class(t) != cls || (cls == H5T_STRING && H5Tis_variable_str(t) != 0)) {
        h5s_fail(c, LSIM_EFORMAT, "%s/%s has the wrong type (expected %s)", where, name,
             cls == H5T_STRING ? "fixed-length strings" : cls == H5T_FLOAT ? "floating point" : "integers");
        ok = 0;
    } else if (strsize) {
        *strsize = H5Tget_size(t);
        if (*strsize == 0 || *strsize > ((size_t)1 << 20)) {
            h5s_fail(c, LSIM_EFORMAT, "%s/%s has strings of %zu bytes", where, name, *strsize);
            ok = 0;
        }
    }
    if (t >= 0) H5Tclose(t);
    if (sp >= 0) H5Sclose(sp);
    if (!ok) {
        H5Dclose(d);
        return -1;
    }
    return d;
}

/* Read rows sel of an opened dataset into buf (memory type mt), packed in
 * the order of sel's ranges. Collective in MPI mode (sel may be empty). */
static int read_sel(sctx *c, hid_t d, const char *where, const char *name, hid_t mt, int width, const rowsel *sel,
                    void *buf)
{
    int rc = 0, nd = width > 1 ? 2 : 1;
    hid_t fs = H5Dget_space(d), ms = -1;
    if (fs < 0) return h5s_fail(c, LSIM_EFORMAT, "cannot read %s/%s", where, name);
    if (sel->rows) {
        hsize_t n[2] = {sel->rows, (hsize_t)width};
        if (sel_apply(fs, sel, width) < 0) rc = -1;
        ms = H5Screate_simple(nd, n, NULL);
    } else {
        hsize_t n[2] = {1, (hsize_t)width};
        H5Sselect_none(fs);
        ms = H5Screate_simple(nd, n, NULL);
        if (ms >= 0) H5Sselect_none(ms);
    }
    static char dummy[16];
    if (rc || ms < 0 || H5Dread(d, mt, ms, fs, c->dxpl, buf ? buf : dummy) < 0)
        rc = h5s_fail_cause(c, LSIM_EFORMAT, ": the file is truncated or corrupt (checksum or decompression failure)",
                            "cannot read %s/%s", where, name);
    if (ms >= 0) H5Sclose(ms);
    H5Sclose(fs);
    return rc;
}

/* Rows [off, off + cnt) (cnt may be 0). */
int h5s_read_rows(sctx *c, hid_t d, const char *where, const char *name, hid_t mt, int width, uint64_t off,
                     uint64_t cnt, void *buf)
{
    rowsel s;
    h5s_sel_one(&s, off, cnt);
    return read_sel(c, d, where, name, mt, width, &s, buf);
}

/* h5s_open_col + h5s_read_rows + close. */
int h5s_get_col(sctx *c, hid_t loc, const char *where, const char *name, int t, int width, uint64_t total,
                   uint64_t off, uint64_t cnt, void *buf)
{
    hid_t d = h5s_open_col(c, loc, where, name, t == T_F64 ? H5T_FLOAT : H5T_INTEGER, width, total, NULL);
    int rc = d < 0 ? c->e.code : 0;
    rc = h5s_agree(c, rc);
    if (rc) {
        if (d >= 0) H5Dclose(d);
        return rc;
    }
    rc = h5s_read_rows(c, d, where, name, h5s_mtype(t), width, off, cnt, buf);
    H5Dclose(d);
    return rc;
}

/* h5s_open_col + read_sel + close. */
int h5s_get_col_sel(sctx *c, hid_t loc, const char *where, const char *name, int t, uint64_t total,
                       const rowsel *sel, void *buf)
{
    hid_t d = h5s_open_col(c, loc, where, name, t == T_F64 ? H5T_FLOAT : H5T_INTEGER, 1, total, NULL);
    int rc = h5s_agree(c, d < 0 ? c->e.code : 0);
    if (rc) {
        if (d >= 0) H5Dclose(d);
        return rc;
    }
    rc = read_sel(c, d, where, name, h5s_mtype(t), 1, sel, buf);
    H5Dclose(d);
    return rc;
}
/* ------------------------------------------------------------ CRC-32 */

int h5s_file_crc(sctx *c, const char *p, int64_t *size, uint32_t *crc)
{
    FILE *f = NULL;
    lsim_err ie = {0};
    if (lsim_input_fopen(p, &f, &ie)) return h5s_fail(c, LSIM_EIO, "cannot read a source trace to checksum it: %s", ie.msg);
    unsigned char *buf = lsim_malloc(1 << 20);
    if (!buf) {
        fclose(f);
        return h5s_nomem(c);
    }
    uLong h = crc32(0L, Z_NULL, 0);
    int64_t total = 0;
    size_t got;
    while ((got = fread(buf, 1, 1 << 20, f)) > 0) {
        h = crc32(h, buf, (uInt)got);
        total += (int64_t)got;
    }
    int bad = ferror(f);
    fclose(f);
    free(buf);
    if (bad) return h5s_fail(c, LSIM_EIO, "error reading source trace %s", p);
    *size = total;
    *crc = (uint32_t)h;
    return 0;
}
/* Column k's bytes per row in memory (the field) and in a transfer buffer
 * (the column's type). */
static size_t rec_row(const mcol *k) { return !k->mk ? k->esz : h5s_tsize(k->t) * (size_t)k->width; }

static size_t rec_buf_row(const mcol *cols, size_t ncols)
{
    size_t mx = 0;
    for (size_t k = 0; k < ncols; k++) {
        if (cols[k].esz > mx) mx = cols[k].esz;
        if (rec_row(&cols[k]) > mx) mx = rec_row(&cols[k]);
    }
    return mx;
}

/* Field -> column element (to 1) or back (to 0): a copy, or for a C int /
 * size_t field a conversion to or from the column's integer type. */
static void rec_move(const mcol *k, int to, char *field, char *elem)
{
    if (!k->mk) {
        if (to) memcpy(elem, field, k->esz);
        else memcpy(field, elem, k->esz);
        return;
    }
    uint64_t v = 0;
    if (to) {
        if (k->mk == M_INT) {
            int x;
            memcpy(&x, field, sizeof x);
            v = (uint64_t)(int64_t)x;
        } else {
            size_t x;
            memcpy(&x, field, sizeof x);
            v = (uint64_t)x;
        }
        if (k->t == T_U8) *(uint8_t *)elem = (uint8_t)v;
        else memcpy(elem, &v, h5s_tsize(k->t)); /* 8-byte columns (little-endian-agnostic: same type width) */
        return;
    }
    if (k->t == T_U8) v = *(const uint8_t *)elem;
    else memcpy(&v, elem, sizeof v);
    if (k->mk == M_INT) {
        int x = (int)(int64_t)v;
        memcpy(field, &x, sizeof x);
    } else {
        size_t x = (size_t)v;
        memcpy(field, &x, sizeof x);
    }
}

/* Write columns cols[] of records rec[0..nloc) (record size rsz), rows sel
 * (nloc rows in all) of `total`, as datasets GROUP/NAME. chunk 0:
 * contiguous. */
int h5s_put_records(sctx *c, hid_t loc, const char *where, const char *group, const mcol *cols, size_t ncols,
                    const void *rec, size_t rsz, uint64_t total, const rowsel *sel, size_t nloc, uint64_t chunk)
{
    hid_t *d = lsim_malloc((ncols ? ncols : 1) * sizeof *d);
    int rc = h5s_agree(c, d ? 0 : h5s_nomem(c));
    if (rc) return rc;
    rc = h5s_create_records(c, loc, where, group, cols, ncols, total, chunk, d);
    if (!rc) rc = h5s_write_records(c, d, where, group, cols, ncols, rec, rsz, total, sel, nloc);
    for (size_t k = 0; k < ncols; k++)
        if (d[k] >= 0) H5Dclose(d[k]);
    free(d);
    return rc;
}

int h5s_create_records(sctx *c, hid_t loc, const char *where, const char *group, const mcol *cols, size_t ncols,
                       uint64_t total, uint64_t chunk, hid_t *d)
{
    int rc = 0;
    for (size_t k = 0; k < ncols; k++) d[k] = -1;
    for (size_t k = 0; k < ncols && !rc; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s/%s", group, cols[k].name);
        d[k] = h5s_create_raw(c, loc, where, name, h5s_ftype(cols[k].t), cols[k].width, total, chunk);
        rc = h5s_agree(c, d[k] < 0 ? (c->e.code ? c->e.code : LSIM_EIO) : 0);
    }
    return rc;
}

int h5s_write_records(sctx *c, const hid_t *d, const char *where, const char *group, const mcol *cols, size_t ncols,
                      const void *rec, size_t rsz, uint64_t total, const rowsel *sel, size_t nloc)
{
    char *buf = lsim_malloc((nloc ? nloc : 1) * rec_buf_row(cols, ncols));
    int rc = h5s_agree(c, buf ? 0 : h5s_nomem(c));
    for (size_t k = 0; k < ncols && !rc; k++) {
        const mcol *mc = &cols[k];
        size_t es = rec_row(mc);
        for (size_t i = 0; i < nloc; i++) rec_move(mc, 1, (char *)rec + i * rsz + mc->field, buf + i * es);
        char name[128];
        snprintf(name, sizeof name, "%s/%s", group, mc->name);
        rc = h5s_agree(c, h5s_write_rows(c, d[k], where, name, h5s_mtype(mc->t), mc->width, total, sel, buf));
    }
    free(buf);
    return rc;
}

/* Read rows [first, first + cnt) of columns cols[] (datasets GROUP/NAME of
 * `total` rows) into records rec[0..cnt). */
int h5s_get_records(sctx *c, hid_t loc, const char *where, const char *group, const mcol *cols, size_t ncols,
                    void *rec, size_t rsz, uint64_t total, uint64_t first, size_t cnt)
{
    char *buf = lsim_malloc((cnt ? cnt : 1) * rec_buf_row(cols, ncols));
    int rc = h5s_agree(c, buf ? 0 : h5s_nomem(c));
    for (size_t k = 0; k < ncols && !rc; k++) {
        const mcol *mc = &cols[k];
        size_t es = rec_row(mc);
        char name[128];
        snprintf(name, sizeof name, "%s/%s", group, mc->name);
        rc = h5s_agree(c, h5s_get_col(c, loc, where, name, mc->t, mc->width, total, first, cnt, buf));
        for (size_t i = 0; !rc && i < cnt; i++) rec_move(mc, 0, (char *)rec + i * rsz + mc->field, buf + i * es);
    }
    free(buf);
    return rc;
}

int h5s_check_cols(sctx *c, const mcol *cols, size_t ncols)
{
    for (size_t k = 0; k < ncols; k++) {
        const mcol *mc = &cols[k];
        size_t want = mc->mk == M_INT ? sizeof(int) : mc->mk == M_SIZE ? sizeof(size_t)
                                                                       : h5s_tsize(mc->t) * (size_t)mc->width;
        int conv_ok = !mc->mk || (mc->width == 1 && (mc->t == T_U8 || mc->t == T_U64 || mc->t == T_I64));
        if (mc->esz != want || !conv_ok)
            return h5s_fail(c, LSIM_EINTERNAL, "store column %s: field size does not match its type", mc->name);
    }
    return 0;
}

/* Gather every rank's POD records (nloc of rsz bytes each) to every rank,
 * in global GPU order: rank order, or under a mapping (c->gids) each record
 * at its GPU's index, the ranks' GPU lists together being a permutation of
 * 0..total-1 (checked). *gfirst = the index of this rank's first record
 * (without a mapping). Serial: a copy. */
int h5s_gather_records(sctx *c, const void *lm, size_t nloc, size_t rsz, void **all, size_t *ntot, size_t *gfirst)
{
    *all = NULL;
    *ntot = 0;
    *gfirst = 0;
    if (!c->mpi) {
        void *m = lsim_malloc((nloc ? nloc : 1) * rsz);
        if (!m) return h5s_nomem(c);
        if (nloc) memcpy(m, lm, nloc * rsz);
        *all = m;
        *ntot = nloc;
        return 0;
    }
    int mine = (int)nloc;
    int *counts = lsim_calloc((size_t)c->size, sizeof *counts), *displs = lsim_calloc((size_t)c->size, sizeof *displs);
    void *m = NULL;
    int rc = counts && displs ? 0 : h5s_nomem(c);
    if (nloc > (size_t)INT_MAX / rsz) rc = h5s_fail(c, LSIM_EARG, "too many GPUs on one MPI rank");
    rc = h5s_agree(c, rc);
    if (rc) goto out;
    MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, c->comm);
    size_t tot = 0;
    for (int r = 0; r < c->size; r++) {
        if (r == c->rank) *gfirst = tot;
        tot += (size_t)counts[r];
    }
    if (tot > (size_t)INT_MAX / rsz) rc = h5s_fail(c, LSIM_EARG, "too many GPUs for one collective write");
    if (!rc && !(m = lsim_malloc((tot ? tot : 1) * rsz))) rc = h5s_nomem(c);
    rc = h5s_agree(c, rc);
    if (rc) goto out;
    int at = 0;
    for (int r = 0; r < c->size; r++) {
        displs[r] = at * (int)rsz;
        at += counts[r];
        counts[r] *= (int)rsz;
    }
    MPI_Allgatherv(lm, mine * (int)rsz, MPI_BYTE, m, counts, displs, MPI_BYTE, c->comm);
    if (c->gids) {
        /* place each record at its GPU's index */
        uint64_t *ids = lsim_malloc((tot ? tot : 1) * sizeof *ids), *myids = lsim_malloc((nloc ? nloc : 1) * sizeof *myids);
        char *perm = lsim_malloc((tot ? tot : 1) * rsz), *seen = lsim_calloc(tot ? tot : 1, 1);
        rc = ids && myids && perm && seen ? 0 : h5s_nomem(c);
        rc = h5s_agree(c, rc);
        if (!rc) {
            for (size_t i = 0; i < nloc; i++) myids[i] = c->gids[i];
            at = 0;
            for (int r = 0; r < c->size; r++) {
                counts[r] /= (int)rsz;
                displs[r] = at;
                at += counts[r];
            }
            MPI_Allgatherv(myids, mine, MPI_UINT64_T, ids, counts, displs, MPI_UINT64_T, c->comm);
            for (size_t j = 0; j < tot && !rc; j++) {
                if (ids[j] >= tot || seen[ids[j]])
                    rc = h5s_fail(c, LSIM_EARG, "the GPU-to-rank mapping is not a permutation of GPUs 0..%zu (GPU %llu %s)",
                              tot ? tot - 1 : 0, (unsigned long long)ids[j], ids[j] >= tot ? "out of range" : "twice");
                else {
                    seen[ids[j]] = 1;
                    memcpy(perm + ids[j] * rsz, (char *)m + j * rsz, rsz);
                }
            }
        }
        if (!rc) {
            free(m);
            m = perm;
            perm = NULL;
        }
        free(ids);
        free(myids);
        free(perm);
        free(seen);
        rc = h5s_agree(c, rc);
        if (rc) goto out;
    }
    *all = m;
    m = NULL;
    *ntot = tot;
out:
    free(m);
    free(counts);
    free(displs);
    return rc;
}
int h5s_write_root_attrs(sctx *c, const char *kind, const char *command_line, const char *latency)
{
    hid_t r = c->file;
    if (h5s_put_attr_i32(r, "schema_version", LSIM_STORE_SCHEMA_VERSION) || h5s_put_attr_str(r, "kind", kind) ||
        h5s_put_attr_str(r, "lumosim_version", LSIM_VERSION) ||
        (command_line && h5s_put_attr_str(r, "created_by", command_line)) ||
        (latency && h5s_put_attr_str(r, "latency_mode", latency)))
        return h5s_fail(c, LSIM_EIO, "cannot write the file's attributes");
    return 0;
}

/* Start PATH's output on rank 0 (src/write/output.c: symlinks followed, stale
 * temporaries removed, the lock taken with LSIM_OUT_LOCK) and give every
 * rank the temporary's name in tmp. Collective under MPI. */
int h5s_begin_tmp(sctx *c, unsigned flags, char *tmp, size_t tmplen)
{
    int rc = 0;
    char lock[4096] = "";
    tmp[0] = '\0';
    if (c->rank == 0) {
        rc = lsim_out_begin(c->path, flags | LSIM_OUT_REGULAR, 0, &c->out, &c->e);
        const char *lk = rc ? NULL : lsim_out_lock(c->out);
        if (!rc && (strlen(lsim_out_file(c->out)) >= tmplen || (lk && strlen(lk) >= sizeof lock)))
            rc = h5s_fail(c, LSIM_EARG, "path too long");
        if (!rc) snprintf(tmp, tmplen, "%s", lsim_out_file(c->out));
        if (!rc && lk) snprintf(lock, sizeof lock, "%s", lk);
    }
    rc = h5s_agree(c, rc);
    if (!rc && c->mpi) {
        MPI_Bcast(tmp, (int)tmplen, MPI_CHAR, 0, c->comm);
        MPI_Bcast(lock, (int)sizeof lock, MPI_CHAR, 0, c->comm);
    }
    /* SIGKILL on rank 0 leaves its temporary and lock behind; mpirun then
     * ends the other ranks with SIGTERM, whose handler removes what is
     * registered (tmpfiles.h) */
    if (!rc && c->rank != 0) {
        c->tmp_slot[0] = lsim_tmp_register(tmp);
        if (lock[0]) c->tmp_slot[1] = lsim_tmp_register(lock);
    }
    return rc;
}

/* MPI runs: every dataset transfer is collective (compressed datasets
 * require it for writes); reads of GPU rows may switch to independent
 * (read_transfers). */
int h5s_collective_transfers(sctx *c)
{
    int rc = 0;
    c->dxpl = H5Pcreate(H5P_DATASET_XFER);
    if (c->dxpl < 0 || H5Pset_dxpl_mpio(c->dxpl, H5FD_MPIO_COLLECTIVE) < 0)
        rc = h5s_fail(c, LSIM_EIO, "cannot set up collective transfers");
    return h5s_agree(c, rc);
}

/* The MPI-IO hints of LUMOSIM_MPIIO_HINTS ("key=value,key=value", ';'
 * also separates), e.g. Lustre's striping_factor / striping_unit for a file
 * about to be created, or ROMIO's collective-buffering keys
 * (docs/slurm.md). A file system ignores the keys it does not know, so
 * lumosim does not judge them; it only refuses what is not KEY=VALUE, in
 * serial runs too (the same job script then fails the same way on one
 * rank and on many). *info stays MPI_INFO_NULL when the variable is unset
 * or empty; the caller frees a created one. */
static int mpiio_hints(sctx *c, MPI_Info *info)
{
    *info = MPI_INFO_NULL;
    const char *env = getenv("LUMOSIM_MPIIO_HINTS");
    if (!env || !*env) return 0;
    char buf[1024];
    if (strlen(env) >= sizeof buf)
        return lsim_err_set(&c->e, LSIM_EARG, "LUMOSIM_MPIIO_HINTS: longer than %zu characters", sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", env);
    int rc = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",;", &save); tok && !rc; tok = strtok_r(NULL, ",;", &save)) {
        char *eq = strchr(tok, '=');
        int bad = !eq || eq == tok || !eq[1] || strpbrk(tok, " \t") != NULL;
        if (!bad && (size_t)(eq - tok) >= MPI_MAX_INFO_KEY) bad = 1;
        if (bad) {
            rc = lsim_err_set(&c->e, LSIM_EARG,
                              "LUMOSIM_MPIIO_HINTS: '%s' is not KEY=VALUE (for example striping_factor=8,striping_unit=4194304)",
                              tok);
            break;
        }
        if (!c->mpi) continue;
        *eq = '\0';
        if (*info == MPI_INFO_NULL && MPI_Info_create(info) != MPI_SUCCESS) {
            *info = MPI_INFO_NULL;
            rc = lsim_err_set(&c->e, LSIM_ENOMEM, "LUMOSIM_MPIIO_HINTS: cannot create an MPI_Info");
        } else if (MPI_Info_set(*info, tok, eq + 1) != MPI_SUCCESS) {
            rc = lsim_err_set(&c->e, LSIM_EARG, "LUMOSIM_MPIIO_HINTS: MPI refused the hint '%s'", tok);
        }
    }
    if (rc && *info != MPI_INFO_NULL) MPI_Info_free(info);
    return rc;
}

/* In MPI mode, fapl := the MPI-IO driver with collective metadata reads
 * (and, for writers, writes), and the user's MPI-IO hints. Serial: only
 * the hints' syntax is checked. */
int h5s_fapl_mpio(sctx *c, hid_t fapl, int write)
{
    MPI_Info info = MPI_INFO_NULL;
    int rc = mpiio_hints(c, &info);
    if (rc || !c->mpi) return rc;
    /* H5Pset_fapl_mpio duplicates the info object */
    if (H5Pset_fapl_mpio(fapl, c->comm, info) < 0 || H5Pset_all_coll_metadata_ops(fapl, 1) < 0 ||
        (write && H5Pset_coll_metadata_write(fapl, 1) < 0))
        rc = h5s_fail(c, LSIM_EIO, "cannot set up MPI-IO");
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    return rc;
}

/* Create PATH's temporary file (MPI: all ranks, name from rank 0's pid). */
int h5s_create_tmp(sctx *c, char *tmp, size_t tmplen)
{
    if (h5s_begin_tmp(c, 0, tmp, tmplen)) return c->e.code ? c->e.code : LSIM_EIO;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    int rc = fapl < 0 ? h5s_fail(c, LSIM_EIO, "cannot create HDF5 property list") : 0;
    /* the HDF5 1.10 file format: every metadata structure, chunk indexes
     * included, carries a checksum (and every chunk a Fletcher-32), so
     * damage is an error, never wrong data; readable by HDF5 >= 1.10 */
    if (!rc && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) < 0)
        rc = h5s_fail(c, LSIM_EIO, "cannot set the HDF5 file format version");
    if (!rc) rc = h5s_fapl_mpio(c, fapl, 1);
    rc = h5s_agree(c, rc);
    if (!rc) {
        c->file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        if (c->file < 0) {
            /* HDF5 does not say why: ask the OS */
            FILE *f = fopen(tmp, "wb");
            const char *why = f ? "HDF5 cannot create it" : strerror(errno);
            if (f) {
                fclose(f);
                remove(tmp);
            }
            rc = lsim_err_set(&c->e, LSIM_EIO, "%s: cannot create %s: %s", c->path, tmp, why);
        }
        rc = h5s_agree(c, rc);
    }
    if (!rc && c->mpi) rc = h5s_collective_transfers(c);
    if (fapl >= 0) H5Pclose(fapl);
    return rc;
}

/* Close the temporary file and rename it over PATH; on rc != 0 remove it. */
int h5s_finish_tmp(sctx *c, const char *tmp, int rc)
{
    if (c->dxpl != H5P_DEFAULT) H5Pclose(c->dxpl);
    c->dxpl = H5P_DEFAULT;
    if (c->file >= 0) {
        if (H5Fclose(c->file) < 0 && !rc) rc = h5s_fail_cause(c, LSIM_EIO, " (disk full?)", "cannot close %s", tmp);
        c->file = -1;
    }
    rc = h5s_agree(c, rc);
    (void)tmp;
    if (c->rank == 0) {
        if (rc) lsim_out_abort(c->out);
        else if (c->hold) *c->hold = c->out; /* the caller commits it */
        else rc = lsim_out_commit(c->out, &c->e);
    }
    c->out = NULL;
    rc = h5s_agree(c, rc);
    unregister_tmp(c); /* renamed or removed by rank 0 by now */
    return rc;
}
void h5s_apply_opts(sctx *c, const lsim_store_write_opts *o)
{
    if (!o) return;
    for (int k = 0; k < LSIM_STORE_NCLASSES; k++) {
        int f = o->filters[k] ? o->filters[k] : o->deflate_level;
        if (f < LSIM_STORE_FILTER_SHUFFLE) f = LSIM_STORE_FILTER_NONE;
        if (f) c->filt[k] = f > 9 ? 9 : f;
    }
}

/* The class of a dataset (store.h): by its element type; the string
 * tables' bytes (uint8 too) by name. */
static int dataset_class(hid_t ft, const char *name)
{
    size_t n = strlen(name);
    if (H5Tget_class(ft) == H5T_STRING || (n >= 5 && !strcmp(name + n - 5, "chars"))) return LSIM_STORE_CLASS_CHARS;
    if (H5Tget_class(ft) == H5T_FLOAT) return LSIM_STORE_CLASS_FLOAT;
    size_t sz = H5Tget_size(ft);
    return sz == 1 ? LSIM_STORE_CLASS_BYTES : sz == 4 ? LSIM_STORE_CLASS_IDS : LSIM_STORE_CLASS_INT64;
}

int h5s_set_filters(const sctx *c, hid_t dcpl, hid_t ft, const char *name)
{
    int f = c->filt[dataset_class(ft, name)];
    if ((f == LSIM_STORE_FILTER_SHUFFLE || f > 0) && H5Pset_shuffle(dcpl) < 0) return -1;
    if (f > 0 && H5Pset_deflate(dcpl, (unsigned)f) < 0) return -1;
    return H5Pset_fletcher32(dcpl) < 0 ? -1 : 0;
}
/* ------------------------------------------------------------ open + check */

int h5s_open_file(sctx *c)
{
    struct stat st;
    int rc = 0;
    if (stat(c->path, &st) != 0) rc = h5s_fail(c, LSIM_EIO, "%s", strerror(errno));
    /* a regular file only: HDF5 would open a FIFO and wait for a writer
     * ("PATH: is a FIFO, not a file", input.h) */
    else if (!S_ISREG(st.st_mode)) rc = lsim_input_check(c->path, 0, NULL, &c->e);
    rc = h5s_agree(c, rc);
    if (rc) return rc;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) rc = h5s_fail(c, LSIM_EIO, "cannot create HDF5 property list");
    if (!rc) rc = h5s_fapl_mpio(c, fapl, 0);
    rc = h5s_agree(c, rc);
    if (!rc) {
        /* H5Fis_hdf5 first: opening a non-HDF5 file through MPI-IO is slow and noisy */
        htri_t is = H5Fis_hdf5(c->path);
        if (is > 0) c->file = H5Fopen(c->path, H5F_ACC_RDONLY, fapl);
        if (is <= 0 || c->file < 0) rc = h5s_fail(c, LSIM_EFORMAT, "not an HDF5 file or truncated");
        rc = h5s_agree(c, rc);
    }
    if (!rc && c->mpi) rc = h5s_collective_transfers(c);
    if (fapl >= 0) H5Pclose(fapl);
    return rc;
}

/* Check the root's kind and schema_version (want: the expected kind). A
 * lumosim file of another kind is refused before its version is read: what
 * it is (lsim_store_refuse_kind) matters more than which version. */
int h5s_check_root(sctx *c, const char *want)
{
    char *kind = NULL;
    int64_t ver = 0;
    int rk = h5s_get_attr_str(c->file, "kind", &kind);
    int rv = h5s_get_attr_num(c->file, "schema_version", 0, &ver);
    lsim_store_kind have = rk > 0 ? h5s_kind_of(kind) : LSIM_STORE_OTHER, wanted = h5s_kind_of(want);
    const char *wname = lsim_store_kind_name(wanted);
    char takes[64];
    snprintf(takes, sizeof takes, "a %s", wname ? wname : want);
    int rc = 0;
    if (rk == H5S_NOMEM || rv == H5S_NOMEM)
        rc = h5s_nomem(c); /* not "no kind attribute": the file is fine */
    else if (have == LSIM_STORE_OTHER)
        rc = h5s_fail(c, LSIM_EFORMAT, "HDF5 file, but not a lumosim %s (no lumosim 'kind' attribute)",
                     wname ? wname : want);
    else if (have != wanted)
        rc = lsim_store_refuse_kind(c->path, have, takes, &c->e);
    else if (rv <= 0)
        rc = h5s_fail(c, LSIM_EFORMAT, "the schema_version attribute is missing or not an integer");
    else if (ver != LSIM_STORE_SCHEMA_VERSION)
        rc = h5s_fail(c, LSIM_EFORMAT, "schema version %lld not supported (this lumosim reads %d)", (long long)ver,
                  LSIM_STORE_SCHEMA_VERSION);
    free(kind);
    return h5s_agree(c, rc);
}
void h5s_free_strs(char **s, size_t n)
{
    if (!s) return;
    for (size_t i = 0; i < n; i++) free(s[i]);
    free(s);
}
/* A column of fixed-length strings (as wide as the longest anywhere): this
 * process's rows sel (nloc in all) of total. */
int h5s_put_strings(sctx *c, hid_t loc, const char *where, const char *name, const char *const *s, size_t nloc,
                       uint64_t total, const rowsel *sel, uint64_t chunk)
{
    uint64_t w = 0;
    for (size_t i = 0; i < nloc; i++)
        if (s[i] && strlen(s[i]) > w) w = strlen(s[i]);
    if (c->mpi) MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_UINT64_T, MPI_MAX, c->comm);
    char *buf = lsim_calloc(nloc ? nloc : 1, w + 1);
    int rc = h5s_agree(c, buf ? 0 : h5s_nomem(c));
    if (rc) return rc;
    for (size_t i = 0; i < nloc; i++)
        if (s[i]) memcpy(buf + i * (w + 1), s[i], strlen(s[i]));
    hid_t st = h5s_str_type(w);
    rc = h5s_agree(c, st < 0 ? h5s_fail(c, LSIM_EIO, "cannot create a string type") : 0);
    if (!rc) rc = h5s_agree(c, h5s_put_raw(c, loc, where, name, st, st, 1, total, chunk, sel, buf));
    if (st >= 0) H5Tclose(st);
    free(buf);
    return rc;
}

/* Read rows [first, first + cnt) of a fixed-length string column of total rows. */
int h5s_get_strings(sctx *c, hid_t loc, const char *where, const char *name, uint64_t total, uint64_t first,
                       size_t cnt, char ***out)
{
    size_t ssz = 0;
    char **v = NULL, *sb = NULL;
    hid_t st = -1;
    *out = NULL;
    hid_t d = h5s_open_col(c, loc, where, name, H5T_STRING, 1, total, &ssz);
    int rc = h5s_agree(c, d < 0 ? c->e.code : 0);
    if (!rc) {
        sb = lsim_calloc(cnt ? cnt : 1, ssz + 1);
        v = lsim_calloc(cnt ? cnt : 1, sizeof *v);
        st = h5s_str_type(ssz);
        rc = h5s_agree(c, sb && v && st >= 0 ? 0 : h5s_nomem(c));
    }
    if (!rc) rc = h5s_agree(c, h5s_read_rows(c, d, where, name, st, 1, first, cnt, sb));
    for (size_t i = 0; !rc && i < cnt; i++) {
        if (!(v[i] = lsim_calloc(1, ssz + 1))) rc = h5s_nomem(c);
        else memcpy(v[i], sb + i * (ssz + 1), ssz);
    }
    rc = h5s_agree(c, rc);
    if (st >= 0) H5Tclose(st);
    if (d >= 0) H5Dclose(d);
    free(sb);
    if (rc) {
        h5s_free_strs(v, cnt);
        return rc;
    }
    *out = v;
    return 0;
}
int h5s_label_fail(sctx *c, int rc, const char *what)
{
    if (rc == H5S_NOMEM) return h5s_nomem(c);
    return h5s_fail(c, LSIM_EIO, "cannot label %s columns", what);
}

/* Column names of 2-D datasets, for readers. */
int h5s_label(hid_t loc, const char *dset, const char *const *names, size_t n)
{
    hid_t d = H5Dopen2(loc, dset, H5P_DEFAULT);
    if (d < 0) return -1;
    int rc = h5s_put_attr_strs(d, "columns", names, n);
    H5Dclose(d);
    return rc;
}
static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Names of the links in group loc, in name order. Read in the name index's
 * native order and sorted here: HDF5 1.10 lists a group in increasing name
 * order (H5_ITER_INC) through a table of all its links, and when one link of
 * a damaged group in dense storage fails to decode it frees the table's
 * uninitialised entries (a crash in `info`'s walk_group, found by
 * tests/fuzz/fuzz_store.c; regression input
 * tests/fuzz/corpus_store/crash_info_dense_link_heap_id.h5). The native
 * order walks the name B-tree and fails cleanly. */
int h5s_list_links(sctx *c, hid_t loc, char ***out, size_t *n)
{
    H5G_info_t gi;
    *out = NULL;
    *n = 0;
    if (H5Gget_info(loc, &gi) < 0) return h5s_fail(c, LSIM_EFORMAT, "cannot list the runs");
    if (gi.nlinks > 1000000) return h5s_fail(c, LSIM_EFORMAT, "the run list is damaged");
    char **v = lsim_calloc(gi.nlinks ? gi.nlinks : 1, sizeof *v);
    if (!v) return h5s_nomem(c);
    for (hsize_t i = 0; i < gi.nlinks; i++) {
        ssize_t len = H5Lget_name_by_idx(loc, ".", H5_INDEX_NAME, H5_ITER_NATIVE, i, NULL, 0, H5P_DEFAULT);
        if (len < 0 || !(v[i] = lsim_calloc(1, (size_t)len + 1)) ||
            H5Lget_name_by_idx(loc, ".", H5_INDEX_NAME, H5_ITER_NATIVE, i, v[i], (size_t)len + 1, H5P_DEFAULT) < 0) {
            h5s_free_strs(v, (size_t)i + 1);
            return len < 0 ? h5s_fail(c, LSIM_EFORMAT, "cannot list the runs") : h5s_nomem(c);
        }
    }
    qsort(v, (size_t)gi.nlinks, sizeof *v, cmp_name);
    *out = v;
    *n = (size_t)gi.nlinks;
    return 0;
}

hid_t h5s_fapl_v110(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) < 0) {
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}
