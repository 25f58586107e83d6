/* HDF5 graph store and result archive (include/lumosim/store.h; schema:
 * docs/hdf5-schema.md).
 *
 * One code path for serial and MPI I/O: a writer or reader always handles a
 * contiguous range of "local" GPUs out of the file's global GPU list. The
 * serial functions are the one-process case (POSIX driver, no MPI calls);
 * the _mpi functions open the file with the MPI-IO driver, make metadata
 * operations collective and transfer raw data collectively, and every rank
 * selects only its own rows (an empty selection when it has none). Every
 * collective HDF5 call is reached by all ranks in the same order: a rank that
 * failed locally agrees the failure with the others (agree()) before the
 * next collective call instead of skipping it.
 *
 * Flat columns: each GPU's rows of a table (nodes, edges, procs, iters,
 * colls, strings, string bytes) are concatenated in GPU order; /gpus holds
 * each GPU's offset and count per table. Reading a range of GPUs reads one
 * hyperslab per column and splits it into the graphs. */
#include "lumosim/store.h"
#include "lumosim/memlimit.h"
#include "lumosim/input.h"
#include "lumosim/output.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>
#include <zlib.h>

#define CHUNK_MAX_ROWS ((uint64_t)1 << 20)
#define DEFLATE_DEFAULT 1 /* inflate speed dominates loading: level 1 reads
                             ~1.5x faster than 4 for ~10 % more bytes */
#define RUN_NAME_MAX 200

/* ------------------------------------------------------------ context */

typedef struct sctx {
    const char *path;   /* the user's path, for messages */
    lsim_err e;         /* this process's error; copied out at the end */
    hid_t file;
    hid_t dxpl;         /* H5P_DEFAULT, or collective MPI-IO transfers */
    int mpi;
    MPI_Comm comm;
    int rank, size;
    int deflate;        /* writers: 0 = no compression, 1..9 = level */
    H5E_auto2_t old_fn; /* HDF5's error printer, restored on exit */
    void *old_data;
    lsim_out *out;      /* rank 0: the output in progress (output.h), NULL elsewhere */
    lsim_out **hold;    /* results: leave the file under its temporary name and
                           hand the output to the caller (lsim_store_run_info.hold) */
    const size_t *gids; /* collective writes/reads under a GPU-to-rank mapping:
                           this process's global GPU indices, ascending;
                           NULL = the contiguous block after the lower ranks' */
    size_t ngids;
} sctx;

/* HDF5 1.10 leaks internal free-list blocks when it rejects corrupt
 * metadata, and then prints "HDF5: infinite loop closing library" from its
 * atexit handler. Skip that handler (it only closes what is still open; the
 * store never leaves anything open). No effect when the caller initialised
 * HDF5 first. */
static void quiet_exit(void)
{
    static int done;
    if (!done) {
        done = 1;
        H5dont_atexit();
    }
}

static void ctx_init(sctx *c, const char *path, int mpi, MPI_Comm comm)
{
    memset(c, 0, sizeof *c);
    c->path = path ? path : "(null)";
    c->file = -1;
    c->dxpl = H5P_DEFAULT;
    c->mpi = mpi;
    c->comm = comm;
    c->rank = 0;
    c->size = 1;
    c->deflate = DEFLATE_DEFAULT;
    if (mpi) {
        MPI_Comm_rank(comm, &c->rank);
        MPI_Comm_size(comm, &c->size);
    }
    quiet_exit();
    H5Eget_auto2(H5E_DEFAULT, &c->old_fn, &c->old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static int ctx_done(sctx *c, int rc, lsim_err *err)
{
    lsim_out_abort(c->out); /* an error path that never reached finish_tmp */
    c->out = NULL;
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
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(sctx *c, int code, const char *fmt, ...)
{
    char buf[LSIM_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return lsim_err_set(&c->e, code, "%s: %s", c->path, buf);
}

static int nomem(sctx *c) { return fail(c, LSIM_ENOMEM, "out of memory"); }

/* Global index of local GPU i (gfirst from gather_records). */
static size_t gpu_at(const sctx *c, size_t gfirst, size_t i) { return c->gids ? c->gids[i] : gfirst + i; }

/* MPI: every rank learns whether any rank failed; the lowest failing rank's
 * error becomes everyone's. Serial: rc unchanged. */
static int agree(sctx *c, int rc)
{
    if (!c->mpi) return rc;
    int mine = rc ? c->rank : c->size, first = c->size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c->comm);
    if (first == c->size) return 0;
    lsim_err e = c->e;
    MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, first, c->comm);
    e.msg[LSIM_ERR_LEN - 1] = '\0';
    c->e = e;
    return e.code ? e.code : LSIM_EINTERNAL;
}

/* ------------------------------------------------------------ types */

enum { T_U8, T_I32, T_U32, T_I64, T_U64, T_F64 };

static hid_t ftype(int t)
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

static hid_t mtype(int t)
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

static size_t tsize(int t)
{
    switch (t) {
    case T_U8: return 1;
    case T_I32:
    case T_U32: return 4;
    default: return 8;
    }
}

/* Fixed-length NUL-terminated string type holding len characters. */
static hid_t str_type(size_t len)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return -1;
    if (H5Tset_size(t, len + 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* ------------------------------------------------------------ attributes */

static int put_attr(hid_t loc, const char *name, hid_t ft, hid_t mt, hsize_t n, const void *val)
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

static int put_attr_str(hid_t loc, const char *name, const char *s)
{
    if (!s) s = "";
    hid_t t = str_type(strlen(s));
    if (t < 0) return -1;
    int rc = put_attr(loc, name, t, t, 0, s);
    H5Tclose(t);
    return rc;
}

static int put_attr_u64(hid_t loc, const char *name, uint64_t v)
{
    return put_attr(loc, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, 0, &v);
}

static int put_attr_i32(hid_t loc, const char *name, int32_t v)
{
    return put_attr(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT32, 0, &v);
}

static int put_attr_f64(hid_t loc, const char *name, double v)
{
    return put_attr(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, &v);
}

/* A 1-D array of fixed-length strings (each padded to the longest). */
static int put_attr_strs(hid_t loc, const char *name, const char *const *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] && strlen(s[i]) > w) w = strlen(s[i]);
    char *buf = calloc(n ? n : 1, w + 1);
    if (!buf) return -1;
    for (size_t i = 0; i < n; i++)
        if (s[i]) memcpy(buf + i * (w + 1), s[i], strlen(s[i]));
    hid_t t = str_type(w);
    int rc = t < 0 ? -1 : put_attr(loc, name, t, t, n ? n : 1, buf);
    if (t >= 0) H5Tclose(t);
    free(buf);
    return rc;
}

/* Attribute readers: 1 = read, 0 = absent, -1 = present but unreadable or of
 * the wrong kind. */
static int get_attr_str(hid_t loc, const char *name, char **out)
{
    *out = NULL;
    if (H5Aexists(loc, name) <= 0) return 0;
    int rc = -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : -1;
    hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
    if (t < 0 || sp < 0 || H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(sp) != 1) goto out;
    if (H5Tis_variable_str(t) > 0) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        char *v = NULL;
        if (mt >= 0 && H5Tset_size(mt, H5T_VARIABLE) >= 0 && H5Aread(a, mt, &v) >= 0) {
            *out = strdup(v ? v : "");
            H5free_memory(v);
            rc = *out ? 1 : -1;
        }
        if (mt >= 0) H5Tclose(mt);
    } else {
        size_t sz = H5Tget_size(t);
        hid_t mt = sz ? str_type(sz) : -1; /* room for a NUL after the data */
        char *v = sz ? calloc(1, sz + 2) : NULL;
        if (mt >= 0 && v && H5Aread(a, mt, v) >= 0) {
            v[sz] = '\0';
            *out = v;
            v = NULL;
            rc = 1;
        }
        free(v);
        if (mt >= 0) H5Tclose(mt);
    }
out:
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}

static int get_attr_num(hid_t loc, const char *name, int is_float, void *out)
{
    if (H5Aexists(loc, name) <= 0) return 0;
    int rc = -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : -1;
    hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
    if (t >= 0 && sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1) {
        H5T_class_t k = H5Tget_class(t);
        if (k == H5T_INTEGER || (is_float && k == H5T_FLOAT))
            rc = H5Aread(a, is_float ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, out) < 0 ? -1 : 1;
    }
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}

/* Arrays of fixed strings / doubles (phase names and times). */
static int get_attr_strs(hid_t loc, const char *name, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (H5Aexists(loc, name) <= 0) return 0;
    int rc = -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : -1;
    hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
    hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (t < 0 || np < 0 || H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) != 0) goto out;
    size_t sz = H5Tget_size(t);
    if (!sz || np > 1000000) goto out;
    hid_t mt = str_type(sz);
    char *buf = calloc((size_t)np ? (size_t)np : 1, sz + 1);
    char **v = calloc((size_t)np ? (size_t)np : 1, sizeof *v);
    if (mt >= 0 && buf && v && H5Aread(a, mt, buf) >= 0) {
        size_t i;
        for (i = 0; i < (size_t)np; i++) {
            if (!(v[i] = calloc(1, sz + 1))) break;
            memcpy(v[i], buf + i * (sz + 1), sz);
        }
        if (i == (size_t)np) {
            *out = v;
            *n = (size_t)np;
            v = NULL;
            rc = 1;
        } else {
            while (i) free(v[--i]);
        }
    }
    free(v);
    free(buf);
    if (mt >= 0) H5Tclose(mt);
out:
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}

static int get_attr_f64s(hid_t loc, const char *name, double **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (H5Aexists(loc, name) <= 0) return 0;
    int rc = -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
    hid_t t = a >= 0 ? H5Aget_type(a) : -1;
    hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (t >= 0 && np >= 0 && np <= 1000000 && H5Tget_class(t) == H5T_FLOAT) {
        double *v = calloc((size_t)np ? (size_t)np : 1, sizeof *v);
        if (v && H5Aread(a, H5T_NATIVE_DOUBLE, v) >= 0) {
            *out = v;
            *n = (size_t)np;
            rc = 1;
        } else {
            free(v);
        }
    }
    if (t >= 0) H5Tclose(t);
    if (sp >= 0) H5Sclose(sp);
    if (a >= 0) H5Aclose(a);
    return rc;
}

/* ------------------------------------------------------------ columns */

static hid_t lcpl_parents(void)
{
    hid_t p = H5Pcreate(H5P_LINK_CREATE);
    if (p >= 0 && H5Pset_create_intermediate_group(p, 1) < 0) {
        H5Pclose(p);
        return -1;
    }
    return p;
}

/* The rows of a flat table this process reads or writes: ascending,
 * non-overlapping ranges, packed back to back in the memory buffer (HDF5
 * transfers a union of hyperslabs in file order, so the buffer holds the
 * ranges in the order given). One range in the common case (a contiguous
 * block of GPUs); one or more per GPU under a round-robin or file mapping.
 * Not copyable once sel_one has pointed it at itself. */
typedef struct rowsel {
    size_t n, cap;
    uint64_t *off, *cnt;
    uint64_t rows;     /* sum of cnt */
    uint64_t o1, c1;   /* storage for a single range */
    int owned;
} rowsel;

static void sel_one(rowsel *s, uint64_t off, uint64_t cnt)
{
    memset(s, 0, sizeof *s);
    s->o1 = off;
    s->c1 = cnt;
    s->off = &s->o1;
    s->cnt = &s->c1;
    s->n = cnt ? 1 : 0;
    s->rows = cnt;
}

static void sel_free(rowsel *s)
{
    if (s->owned) {
        free(s->off);
        free(s->cnt);
    }
    memset(s, 0, sizeof *s);
}

/* Append rows [off, off + cnt); merged with the previous range when they
 * touch, so a contiguous block stays one hyperslab. */
static int sel_add(sctx *c, rowsel *s, uint64_t off, uint64_t cnt)
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
        if (had && sel_add(c, s, o, k)) return LSIM_ENOMEM;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        uint64_t *no = realloc(s->off, cap * sizeof *no);
        if (!no) return nomem(c);
        s->off = no;
        uint64_t *nc = realloc(s->cnt, cap * sizeof *nc);
        if (!nc) return nomem(c);
        s->cnt = nc;
        s->cap = cap;
    }
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
 * rows with shuffle + deflate (unless c->deflate is 0) + Fletcher-32 (chunk 0
 * or total 0: contiguous, unfiltered), and write this process's rows (sel)
 * from buf (memory type mt). Collective in MPI mode (sel may be empty). */
static int put_raw(sctx *c, hid_t loc, const char *where, const char *name, hid_t ft, hid_t mt, int width,
                   uint64_t total, uint64_t chunk, const rowsel *sel, const void *buf)
{
    int rc = 0, nd = width > 1 ? 2 : 1;
    hsize_t dims[2] = {total, (hsize_t)width};
    hid_t fs = H5Screate_simple(nd, dims, NULL), ms = -1, d = -1;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), lcpl = lcpl_parents();
    if (fs < 0 || dcpl < 0 || lcpl < 0) {
        rc = fail(c, LSIM_EIO, "cannot create %s/%s", where, name);
        goto out;
    }
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    if (total > 0 && chunk > 0) {
        hsize_t ch[2] = {chunk < total ? chunk : total, (hsize_t)width};
        if (H5Pset_chunk(dcpl, nd, ch) < 0 ||
            (c->deflate > 0 && (H5Pset_shuffle(dcpl) < 0 || H5Pset_deflate(dcpl, (unsigned)c->deflate) < 0)) ||
            H5Pset_fletcher32(dcpl) < 0) {
            rc = fail(c, LSIM_EIO, "cannot set up chunking for %s/%s", where, name);
            goto out;
        }
    }
    d = H5Dcreate2(loc, name, ft, fs, lcpl, dcpl, H5P_DEFAULT);
    if (d < 0) {
        rc = fail(c, LSIM_EIO, "cannot create dataset %s/%s", where, name);
        goto out;
    }
    if (total == 0) goto out;
    if (sel->rows) {
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
        rc = fail(c, LSIM_EIO, "cannot write %s/%s (disk full?)", where, name);
out:
    if (ms >= 0) H5Sclose(ms);
    if (d >= 0) H5Dclose(d);
    if (lcpl >= 0) H5Pclose(lcpl);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

static int put_col(sctx *c, hid_t loc, const char *where, const char *name, int t, int width, uint64_t total,
                   uint64_t chunk, const rowsel *sel, const void *buf)
{
    return put_raw(c, loc, where, name, ftype(t), mtype(t), width, total, chunk, sel, buf);
}

/* Open dataset `name` and check it is total x width elements of the
 * expected class (and, for strings, fixed length: *strsize gets the size).
 * Returns the dataset or -1 with the error set. Collective in MPI mode. */
static hid_t open_col(sctx *c, hid_t loc, const char *where, const char *name, H5T_class_t cls, int width,
                      uint64_t total, size_t *strsize)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) {
        /* H5Lexists fails when a parent group is missing too */
        fail(c, LSIM_EFORMAT, "dataset %s/%s is missing", where, name);
        return -1;
    }
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0) {
        fail(c, LSIM_EFORMAT, "%s/%s cannot be opened (not a dataset, or the file is corrupt)", where, name);
        return -1;
    }
    hid_t sp = H5Dget_space(d), t = H5Dget_type(d);
    hsize_t dims[2] = {0, 0};
    int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    int ok = 1;
    if (nd != (width > 1 ? 2 : 1) || H5Sget_simple_extent_dims(sp, dims, NULL) < 0) {
        fail(c, LSIM_EFORMAT, "%s/%s has %d dimensions, expected %d", where, name, nd, width > 1 ? 2 : 1);
        ok = 0;
    } else if (dims[0] != total || (width > 1 && dims[1] != (hsize_t)width)) {
        if (width > 1)
            fail(c, LSIM_EFORMAT, "%s/%s is %llu x %llu, expected %llu x %d (from the /gpus offsets and counts)", where,
                 name, (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)total, width);
        else
            fail(c, LSIM_EFORMAT, "%s/%s has %llu rows, expected %llu (from the offsets and counts)", where, name,
                 (unsigned long long)dims[0], (unsigned long long)total);
        ok = 0;
    } else if (t < 0 || H5Tget_class(t) != cls || (cls == H5T_STRING && H5Tis_variable_str(t) != 0)) {
        fail(c, LSIM_EFORMAT, "%s/%s has the wrong type (expected %s)", where, name,
             cls == H5T_STRING ? "fixed-length strings" : cls == H5T_FLOAT ? "floating point" : "integers");
        ok = 0;
    } else if (strsize) {
        *strsize = H5Tget_size(t);
        if (*strsize == 0 || *strsize > ((size_t)1 << 20)) {
            fail(c, LSIM_EFORMAT, "%s/%s has strings of %zu bytes", where, name, *strsize);
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
    if (fs < 0) return fail(c, LSIM_EFORMAT, "cannot read %s/%s", where, name);
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
        rc = fail(c, LSIM_EFORMAT, "cannot read %s/%s: the file is truncated or corrupt (checksum or decompression "
                                   "failure)",
                  where, name);
    if (ms >= 0) H5Sclose(ms);
    H5Sclose(fs);
    return rc;
}

/* Rows [off, off + cnt) (cnt may be 0). */
static int read_rows(sctx *c, hid_t d, const char *where, const char *name, hid_t mt, int width, uint64_t off,
                     uint64_t cnt, void *buf)
{
    rowsel s;
    sel_one(&s, off, cnt);
    return read_sel(c, d, where, name, mt, width, &s, buf);
}

/* open_col + read_rows + close. */
static int get_col(sctx *c, hid_t loc, const char *where, const char *name, int t, int width, uint64_t total,
                   uint64_t off, uint64_t cnt, void *buf)
{
    hid_t d = open_col(c, loc, where, name, t == T_F64 ? H5T_FLOAT : H5T_INTEGER, width, total, NULL);
    int rc = d < 0 ? c->e.code : 0;
    rc = agree(c, rc);
    if (rc) {
        if (d >= 0) H5Dclose(d);
        return rc;
    }
    rc = read_rows(c, d, where, name, mtype(t), width, off, cnt, buf);
    H5Dclose(d);
    return rc;
}

/* open_col + read_sel + close. */
static int get_col_sel(sctx *c, hid_t loc, const char *where, const char *name, int t, uint64_t total,
                       const rowsel *sel, void *buf)
{
    hid_t d = open_col(c, loc, where, name, t == T_F64 ? H5T_FLOAT : H5T_INTEGER, 1, total, NULL);
    int rc = agree(c, d < 0 ? c->e.code : 0);
    if (rc) {
        if (d >= 0) H5Dclose(d);
        return rc;
    }
    rc = read_sel(c, d, where, name, mtype(t), 1, sel, buf);
    H5Dclose(d);
    return rc;
}

/* ------------------------------------------------------------ CRC-32 */

static int file_crc(sctx *c, const char *p, int64_t *size, uint32_t *crc)
{
    FILE *f = NULL;
    lsim_err ie = {0};
    if (lsim_input_fopen(p, &f, &ie)) return fail(c, LSIM_EIO, "cannot read a source trace to checksum it: %s", ie.msg);
    unsigned char *buf = malloc(1 << 20);
    if (!buf) {
        fclose(f);
        return nomem(c);
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
    if (bad) return fail(c, LSIM_EIO, "error reading source trace %s", p);
    *size = total;
    *crc = (uint32_t)h;
    return 0;
}

/* ------------------------------------------------------------ graph tables */

/* Row kinds: the tables whose rows are flat over all GPUs. */
enum { RK_NODE, RK_EDGE, RK_PROC, RK_ITER, RK_COLL, RK_STR, RK_CHAR, RK_N };
static const char *const rk_name[RK_N] = {"node", "edge", "proc", "iter", "coll", "string", "char"};

/* One column of a graph table: a field of an array in lsim_graph (a plain
 * array, or one field of an array of structs). */
typedef struct gcol {
    const char *name;
    int t, rk;
    size_t ptr;    /* offsetof the array pointer in lsim_graph */
    size_t stride; /* bytes per row in memory */
    size_t field;  /* offset of the field in a row */
    size_t esz;    /* sizeof the field (checked against the type) */
} gcol;

#define FSZ(type, f) sizeof(((type *)0)->f)
#define GSZ(f) sizeof(*((lsim_graph *)0)->f)
#define GA(nm, f, t, rk) {nm, t, rk, offsetof(lsim_graph, f), GSZ(f), 0, GSZ(f)}
#define GS(nm, f, st, sf, t, rk) {nm, t, rk, offsetof(lsim_graph, f), sizeof(st), offsetof(st, sf), FSZ(st, sf)}

static const gcol gcols[] = {
    GA("nodes/kind", kind, T_U8, RK_NODE),
    GA("nodes/flags", flags, T_U8, RK_NODE),
    GA("nodes/proc", proc, T_U32, RK_NODE),
    GA("nodes/name", name, T_U32, RK_NODE),
    GA("nodes/dur", dur, T_I64, RK_NODE),
    GA("nodes/obs_start", obs_start, T_I64, RK_NODE),
    GA("nodes/obs_end", obs_end, T_I64, RK_NODE),
    GA("nodes/release", release, T_I64, RK_NODE),
    GA("nodes/corr", corr, T_I64, RK_NODE),
    GA("nodes/iter", iter, T_I32, RK_NODE),
    GA("nodes/coll", coll, T_I32, RK_NODE),
    GA("nodes/in_off", in_off, T_U64, RK_NODE), /* n per GPU; in_off[n] = edge_count */
    GA("edges/in_src", in_src, T_U32, RK_EDGE),
    GA("edges/in_delay", in_delay, T_I64, RK_EDGE),
    GA("edges/in_class", in_class, T_U8, RK_EDGE),
    GS("procs/is_gpu", procs, lsim_proc, is_gpu, T_U8, RK_PROC),
    GS("procs/pid", procs, lsim_proc, pid, T_I64, RK_PROC),
    GS("procs/tid", procs, lsim_proc, tid, T_I64, RK_PROC),
    GS("procs/nnodes", procs, lsim_proc, nnodes, T_U32, RK_PROC),
    GS("iters/name", iters, lsim_iter, name, T_U32, RK_ITER),
    GS("iters/obs_start", iters, lsim_iter, obs_start, T_I64, RK_ITER),
    GS("iters/obs_end", iters, lsim_iter, obs_end, T_I64, RK_ITER),
    GS("colls/kind", colls, lsim_coll_info, kind, T_U8, RK_COLL),
    GS("colls/from_metadata", colls, lsim_coll_info, from_metadata, T_U8, RK_COLL),
    GS("colls/group_size", colls, lsim_coll_info, group_size, T_I32, RK_COLL),
    GS("colls/in_nelems", colls, lsim_coll_info, in_nelems, T_I64, RK_COLL),
    GS("colls/out_nelems", colls, lsim_coll_info, out_nelems, T_I64, RK_COLL),
    GS("colls/dtype_bytes", colls, lsim_coll_info, dtype_bytes, T_I32, RK_COLL),
    GS("colls/bytes", colls, lsim_coll_info, bytes, T_I64, RK_COLL),
    GS("colls/pg_name", colls, lsim_coll_info, pg_name, T_U32, RK_COLL),
    GS("colls/pg_ranks", colls, lsim_coll_info, pg_ranks, T_U32, RK_COLL),
    GS("colls/seq", colls, lsim_coll_info, seq, T_I64, RK_COLL),
};
#define NGCOLS (sizeof gcols / sizeof gcols[0])

/* Per-GPU index and statistics (/gpus), one POD record per GPU. */
typedef struct gmeta {
    int32_t rank;
    int32_t world_size;
    uint8_t latency;
    int64_t source_size;
    uint32_t source_crc32;
    uint64_t off[RK_N], cnt[RK_N];
    int64_t t0, queued_gap_ns, launch_latency_ns;
    uint64_t launch_samples, prewindow, releases, sync_events_used;
    uint64_t edges_by_class[LSIM_E_NCLASSES], inferred_by_class[LSIM_E_NCLASSES], dropped[LSIM_DROP_NREASONS];
} gmeta;

/* One column of a per-GPU record: field (esz bytes = width elements of
 * type t) of a POD struct. */
typedef struct mcol {
    const char *name;
    int t, width;
    size_t field, esz;
} mcol;

#define MC(nm, f, t) {nm, t, 1, offsetof(gmeta, f), FSZ(gmeta, f)}
#define MCA(nm, f, t, w) {nm, t, w, offsetof(gmeta, f), FSZ(gmeta, f)}
#define MOFF(nm, arr, rk) {nm, T_U64, 1, offsetof(gmeta, arr) + (rk) * sizeof(uint64_t), sizeof(uint64_t)}

static const mcol gpu_cols[] = {
    MC("rank", rank, T_I32),
    MC("world_size", world_size, T_I32),
    MC("latency_mode", latency, T_U8),
    MC("source_size", source_size, T_I64),
    MC("source_crc32", source_crc32, T_U32),
    MOFF("node_offset", off, RK_NODE), MOFF("node_count", cnt, RK_NODE),
    MOFF("edge_offset", off, RK_EDGE), MOFF("edge_count", cnt, RK_EDGE),
    MOFF("proc_offset", off, RK_PROC), MOFF("proc_count", cnt, RK_PROC),
    MOFF("iter_offset", off, RK_ITER), MOFF("iter_count", cnt, RK_ITER),
    MOFF("coll_offset", off, RK_COLL), MOFF("coll_count", cnt, RK_COLL),
    MOFF("string_offset", off, RK_STR), MOFF("string_count", cnt, RK_STR),
    MOFF("char_offset", off, RK_CHAR), MOFF("char_count", cnt, RK_CHAR),
    MC("t0", t0, T_I64),
    MC("queued_gap_ns", queued_gap_ns, T_I64),
    MC("launch_latency_ns", launch_latency_ns, T_I64),
    MC("launch_samples", launch_samples, T_U64),
    MC("prewindow", prewindow, T_U64),
    MC("releases", releases, T_U64),
    MC("sync_events_used", sync_events_used, T_U64),
    MCA("edges_by_class", edges_by_class, T_U64, LSIM_E_NCLASSES),
    MCA("inferred_by_class", inferred_by_class, T_U64, LSIM_E_NCLASSES),
    MCA("dropped", dropped, T_U64, LSIM_DROP_NREASONS),
};
#define NGPUCOLS (sizeof gpu_cols / sizeof gpu_cols[0])

/* Write columns cols[] of records rec[0..nloc) (record size rsz), rows sel
 * (nloc rows in all) of `total`, as datasets GROUP/NAME. chunk 0:
 * contiguous. */
static int put_records(sctx *c, hid_t loc, const char *where, const char *group, const mcol *cols, size_t ncols,
                       const void *rec, size_t rsz, uint64_t total, const rowsel *sel, size_t nloc, uint64_t chunk)
{
    size_t maxrow = 0;
    for (size_t k = 0; k < ncols; k++)
        if (cols[k].esz > maxrow) maxrow = cols[k].esz;
    char *buf = malloc((nloc ? nloc : 1) * maxrow);
    int rc = agree(c, buf ? 0 : nomem(c));
    for (size_t k = 0; k < ncols && !rc; k++) {
        const mcol *mc = &cols[k];
        for (size_t i = 0; i < nloc; i++) memcpy(buf + i * mc->esz, (const char *)rec + i * rsz + mc->field, mc->esz);
        char name[128];
        snprintf(name, sizeof name, "%s/%s", group, mc->name);
        rc = agree(c, put_col(c, loc, where, name, mc->t, mc->width, total, chunk, sel, buf));
    }
    free(buf);
    return rc;
}

/* Read rows [first, first + cnt) of columns cols[] (datasets GROUP/NAME of
 * `total` rows) into records rec[0..cnt). */
static int get_records(sctx *c, hid_t loc, const char *where, const char *group, const mcol *cols, size_t ncols,
                       void *rec, size_t rsz, uint64_t total, uint64_t first, size_t cnt)
{
    size_t maxrow = 0;
    for (size_t k = 0; k < ncols; k++)
        if (cols[k].esz > maxrow) maxrow = cols[k].esz;
    char *buf = malloc((cnt ? cnt : 1) * maxrow);
    int rc = agree(c, buf ? 0 : nomem(c));
    for (size_t k = 0; k < ncols && !rc; k++) {
        const mcol *mc = &cols[k];
        char name[128];
        snprintf(name, sizeof name, "%s/%s", group, mc->name);
        rc = agree(c, get_col(c, loc, where, name, mc->t, mc->width, total, first, cnt, buf));
        for (size_t i = 0; !rc && i < cnt; i++) memcpy((char *)rec + i * rsz + mc->field, buf + i * mc->esz, mc->esz);
    }
    free(buf);
    return rc;
}

static int check_cols(sctx *c, const mcol *cols, size_t ncols)
{
    for (size_t k = 0; k < ncols; k++)
        if (cols[k].esz != tsize(cols[k].t) * (size_t)cols[k].width)
            return fail(c, LSIM_EINTERNAL, "store column %s: field size does not match its type", cols[k].name);
    return 0;
}

static int check_layout(sctx *c)
{
    for (size_t k = 0; k < NGCOLS; k++)
        if (gcols[k].esz != tsize(gcols[k].t))
            return fail(c, LSIM_EINTERNAL, "store column %s: field size %zu does not match its type", gcols[k].name,
                        gcols[k].esz);
    return check_cols(c, gpu_cols, NGPUCOLS);
}

static void *colbase(const lsim_graph *g, const gcol *k) { return *(void *const *)((const char *)g + k->ptr); }

static void pack(const gcol *k, const lsim_graph *g, size_t rows, char *dst)
{
    const char *b = colbase(g, k);
    size_t es = k->esz;
    if (k->stride == es) {
        if (rows) memcpy(dst, b, rows * es);
        return;
    }
    for (size_t i = 0; i < rows; i++) memcpy(dst + i * es, b + i * k->stride + k->field, es);
}

static void unpack(const gcol *k, lsim_graph *g, size_t rows, const char *src)
{
    char *b = colbase(g, k);
    size_t es = k->esz;
    if (k->stride == es) {
        if (rows) memcpy(b, src, rows * es);
        return;
    }
    for (size_t i = 0; i < rows; i++) memcpy(b + i * k->stride + k->field, src + i * es, es);
}

static const char *latency_name(int l) { return l == LSIM_LAT_OBSERVED ? "observed" : "model"; }

static void meta_from_graph(gmeta *m, const lsim_graph *g)
{
    memset(m, 0, sizeof *m);
    m->rank = g->rank;
    m->world_size = g->world_size;
    m->latency = (uint8_t)g->latency;
    m->source_size = -1;
    m->cnt[RK_NODE] = g->n;
    m->cnt[RK_EDGE] = g->nedges;
    m->cnt[RK_PROC] = g->nprocs;
    m->cnt[RK_ITER] = g->niters;
    m->cnt[RK_COLL] = g->ncoll;
    uint32_t ns = g->strings ? lsim_strtab_count(g->strings) : 0;
    m->cnt[RK_STR] = ns;
    uint64_t chars = 0;
    for (uint32_t i = 0; i < ns; i++) chars += strlen(lsim_strtab_get(g->strings, i)) + 1;
    m->cnt[RK_CHAR] = chars;
    m->t0 = g->t0;
    m->queued_gap_ns = g->queued_gap_ns;
    m->launch_latency_ns = g->launch_latency_ns;
    m->launch_samples = g->launch_samples;
    m->prewindow = g->prewindow;
    m->releases = g->releases;
    m->sync_events_used = g->sync_events_used;
    memcpy(m->edges_by_class, g->edges_by_class, sizeof m->edges_by_class);
    memcpy(m->inferred_by_class, g->inferred_by_class, sizeof m->inferred_by_class);
    memcpy(m->dropped, g->dropped, sizeof m->dropped);
}

/* Offsets = prefix sums of counts, in GPU order. */
static void meta_offsets(gmeta *m, size_t n)
{
    uint64_t acc[RK_N] = {0};
    for (size_t i = 0; i < n; i++)
        for (int r = 0; r < RK_N; r++) {
            m[i].off[r] = acc[r];
            acc[r] += m[i].cnt[r];
        }
}

static uint64_t total_rows(const gmeta *m, size_t n, int rk) { return n ? m[n - 1].off[rk] + m[n - 1].cnt[rk] : 0; }

/* Chunk rows for a flat table: the largest GPU's rows (so chunks line up
 * with GPU boundaries when GPUs are of equal size), at most 1 Mi rows. */
static uint64_t chunk_rows(const gmeta *m, size_t n, int rk)
{
    uint64_t mx = 0;
    for (size_t i = 0; i < n; i++)
        if (m[i].cnt[rk] > mx) mx = m[i].cnt[rk];
    if (mx > CHUNK_MAX_ROWS) mx = CHUNK_MAX_ROWS;
    return mx ? mx : 1;
}

/* The rows of table rk that GPUs lm[0..n) hold, in GPU order. */
static int sel_table(sctx *c, const gmeta *lm, size_t n, int rk, rowsel *sel)
{
    int rc = 0;
    sel_one(sel, 0, 0);
    for (size_t i = 0; i < n && !rc; i++) rc = sel_add(c, sel, lm[i].off[rk], lm[i].cnt[rk]);
    return rc;
}

/* The same for the two string tables (per-string offsets, bytes). */
static int sel_strings(sctx *c, const gmeta *lm, size_t n, rowsel *ssel, rowsel *csel)
{
    int rc = sel_table(c, lm, n, RK_STR, ssel);
    sel_one(csel, 0, 0);
    if (!rc) rc = sel_table(c, lm, n, RK_CHAR, csel);
    return rc;
}

static int put_strings(sctx *c, hid_t loc, const char *where, const char *name, const char *const *s, size_t nloc,
                       uint64_t total, const rowsel *sel, uint64_t chunk);
static int get_strings(sctx *c, hid_t loc, const char *where, const char *name, uint64_t total, uint64_t first,
                       size_t cnt, char ***out);
static void free_strs(char **s, size_t n);

/* ------------------------------------------------------------ graph write */

/* Write the graph tables of all GPUs under loc (where: its path for
 * messages). This process holds graphs[0..nloc), local GPU i being global
 * GPU gpu_at(c, gfirst, i) of the list m[0..ngpu) (offsets set).
 * sources[i]: local GPU i's source path text. */
static int write_graph_tables(sctx *c, hid_t loc, const char *where, lsim_graph *const *graphs, size_t nloc,
                              const gmeta *m, size_t ngpu, size_t gfirst, const char *const *sources, int flat)
{
    int rc = 0;
    char *buf = NULL;
    rowsel sel;
    sel_one(&sel, 0, 0);
    /* /gpus: this process writes its own rows */
    for (size_t i = 0; i < nloc && !rc; i++) rc = sel_add(c, &sel, gpu_at(c, gfirst, i), 1);
    gmeta *lm = malloc((nloc ? nloc : 1) * sizeof *lm);
    if (!rc && !lm) rc = nomem(c);
    rc = agree(c, rc);
    if (rc) goto out;
    for (size_t i = 0; i < nloc; i++) lm[i] = m[gpu_at(c, gfirst, i)];
    rc = put_records(c, loc, where, "gpus", gpu_cols, NGPUCOLS, lm, sizeof *lm, ngpu, &sel, nloc,
                     min_u64(ngpu, CHUNK_MAX_ROWS));
    /* /gpus/source: fixed-length strings as wide as the longest anywhere */
    if (!rc)
        rc = put_strings(c, loc, where, "gpus/source", sources, nloc, ngpu, &sel, min_u64(ngpu, CHUNK_MAX_ROWS));
    sel_free(&sel);
    if (rc || !flat) goto out; /* !flat: the flat tables are there already (copied) */
    /* flat graph columns: each GPU's rows, packed in GPU order */
    for (size_t k = 0; k < NGCOLS && !rc; k++) {
        const gcol *gc = &gcols[k];
        int rk = gc->rk;
        rc = sel_table(c, lm, nloc, rk, &sel);
        buf = rc ? NULL : malloc(sel.rows ? sel.rows * gc->esz : 1);
        rc = agree(c, rc ? rc : buf ? 0 : nomem(c));
        if (rc) goto out;
        uint64_t at = 0;
        for (size_t i = 0; i < nloc; i++) {
            pack(gc, graphs[i], lm[i].cnt[rk], buf + at * gc->esz);
            at += lm[i].cnt[rk];
        }
        rc = agree(c, put_col(c, loc, where, gc->name, gc->t, 1, total_rows(m, ngpu, rk), chunk_rows(m, ngpu, rk),
                              &sel, buf));
        free(buf);
        buf = NULL;
        sel_free(&sel);
    }
    if (rc) goto out;
    /* strings: per-string offsets (local to the GPU's bytes) and the bytes,
     * each string NUL-terminated */
    {
        rowsel ssel, csel;
        rc = sel_strings(c, lm, nloc, &ssel, &csel);
        uint64_t *so = rc ? NULL : malloc((ssel.rows ? ssel.rows : 1) * sizeof *so);
        char *chars = rc ? NULL : malloc(csel.rows ? csel.rows : 1);
        rc = agree(c, rc ? rc : so && chars ? 0 : nomem(c));
        if (!rc) {
            uint64_t sat = 0, cat = 0;
            for (size_t i = 0; i < nloc; i++) {
                uint64_t *o = so + sat;
                char *ch = chars + cat;
                uint64_t at = 0;
                for (uint64_t k = 0; k < lm[i].cnt[RK_STR]; k++) {
                    const char *str = lsim_strtab_get(graphs[i]->strings, (uint32_t)k);
                    size_t len = strlen(str);
                    o[k] = at;
                    memcpy(ch + at, str, len + 1);
                    at += len + 1;
                }
                sat += lm[i].cnt[RK_STR];
                cat += lm[i].cnt[RK_CHAR];
            }
            rc = agree(c, put_col(c, loc, where, "strings/offset", T_U64, 1, total_rows(m, ngpu, RK_STR),
                                  chunk_rows(m, ngpu, RK_STR), &ssel, so));
            if (!rc)
                rc = agree(c, put_col(c, loc, where, "strings/chars", T_U8, 1, total_rows(m, ngpu, RK_CHAR),
                                      chunk_rows(m, ngpu, RK_CHAR), &csel, chars));
        }
        free(so);
        free(chars);
        sel_free(&ssel);
        sel_free(&csel);
    }
out:
    free(buf);
    free(lm);
    sel_free(&sel);
    return rc;
}

/* Column names on the 2-D datasets, for h5py/h5dump readers. */
static int label_graph_tables(hid_t loc)
{
    const char *cls[LSIM_E_NCLASSES], *drop[LSIM_DROP_NREASONS];
    for (int i = 0; i < LSIM_E_NCLASSES; i++) cls[i] = lsim_edge_class_name((lsim_edge_class)i);
    for (int i = 0; i < LSIM_DROP_NREASONS; i++) drop[i] = lsim_drop_reason_name((lsim_drop_reason)i);
    int rc = 0;
    const char *names[] = {"gpus/edges_by_class", "gpus/inferred_by_class", "gpus/dropped"};
    for (int k = 0; k < 3; k++) {
        hid_t d = H5Dopen2(loc, names[k], H5P_DEFAULT);
        if (d < 0) return -1;
        rc |= put_attr_strs(d, "columns", k < 2 ? cls : drop, k < 2 ? LSIM_E_NCLASSES : LSIM_DROP_NREASONS);
        H5Dclose(d);
    }
    return rc;
}

/* Gather every rank's POD records (nloc of rsz bytes each) to every rank,
 * in global GPU order: rank order, or under a mapping (c->gids) each record
 * at its GPU's index, the ranks' GPU lists together being a permutation of
 * 0..total-1 (checked). *gfirst = the index of this rank's first record
 * (without a mapping). Serial: a copy. */
static int gather_records(sctx *c, const void *lm, size_t nloc, size_t rsz, void **all, size_t *ntot, size_t *gfirst)
{
    *all = NULL;
    *ntot = 0;
    *gfirst = 0;
    if (!c->mpi) {
        void *m = malloc((nloc ? nloc : 1) * rsz);
        if (!m) return nomem(c);
        if (nloc) memcpy(m, lm, nloc * rsz);
        *all = m;
        *ntot = nloc;
        return 0;
    }
    int mine = (int)nloc;
    int *counts = calloc((size_t)c->size, sizeof *counts), *displs = calloc((size_t)c->size, sizeof *displs);
    void *m = NULL;
    int rc = counts && displs ? 0 : nomem(c);
    if (nloc > (size_t)INT_MAX / rsz) rc = fail(c, LSIM_EARG, "too many GPUs on one MPI rank");
    rc = agree(c, rc);
    if (rc) goto out;
    MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, c->comm);
    size_t tot = 0;
    for (int r = 0; r < c->size; r++) {
        if (r == c->rank) *gfirst = tot;
        tot += (size_t)counts[r];
    }
    if (tot > (size_t)INT_MAX / rsz) rc = fail(c, LSIM_EARG, "too many GPUs for one collective write");
    if (!rc && !(m = malloc((tot ? tot : 1) * rsz))) rc = nomem(c);
    rc = agree(c, rc);
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
        uint64_t *ids = malloc((tot ? tot : 1) * sizeof *ids), *myids = malloc((nloc ? nloc : 1) * sizeof *myids);
        char *perm = malloc((tot ? tot : 1) * rsz), *seen = calloc(tot ? tot : 1, 1);
        rc = ids && myids && perm && seen ? 0 : nomem(c);
        rc = agree(c, rc);
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
                    rc = fail(c, LSIM_EARG, "the GPU-to-rank mapping is not a permutation of GPUs 0..%zu (GPU %llu %s)",
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
        rc = agree(c, rc);
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

/* Gather the per-GPU index to every rank, offsets set over all GPUs. */
static int gather_meta(sctx *c, const gmeta *lm, size_t nloc, gmeta **all, size_t *ngpu, size_t *gfirst)
{
    void *m = NULL;
    int rc = agree(c, gather_records(c, lm, nloc, sizeof *lm, &m, ngpu, gfirst));
    if (rc) {
        free(m);
        return rc;
    }
    *all = m;
    meta_offsets(*all, *ngpu);
    return 0;
}

static int write_root_attrs(sctx *c, const char *kind, const char *command_line, const char *latency)
{
    hid_t r = c->file;
    if (put_attr_i32(r, "schema_version", LSIM_STORE_SCHEMA_VERSION) || put_attr_str(r, "kind", kind) ||
        put_attr_str(r, "lumosim_version", LSIM_VERSION) ||
        (command_line && put_attr_str(r, "created_by", command_line)) ||
        (latency && put_attr_str(r, "latency_mode", latency)))
        return fail(c, LSIM_EIO, "cannot write the file's attributes");
    return 0;
}

/* Start PATH's output on rank 0 (io/output.c: symlinks followed, stale
 * temporaries removed, the lock taken with LSIM_OUT_LOCK) and give every
 * rank the temporary's name in tmp. Collective under MPI. */
static int begin_tmp(sctx *c, unsigned flags, char *tmp, size_t tmplen)
{
    int rc = 0;
    tmp[0] = '\0';
    if (c->rank == 0) {
        rc = lsim_out_begin(c->path, flags | LSIM_OUT_REGULAR, 0, &c->out, &c->e);
        if (!rc && strlen(lsim_out_file(c->out)) >= tmplen) rc = fail(c, LSIM_EARG, "path too long");
        if (!rc) snprintf(tmp, tmplen, "%s", lsim_out_file(c->out));
    }
    rc = agree(c, rc);
    if (!rc && c->mpi) MPI_Bcast(tmp, (int)tmplen, MPI_CHAR, 0, c->comm);
    return rc;
}

/* MPI runs: every dataset transfer is collective (compressed datasets
 * require it for writes); reads of GPU rows may switch to independent
 * (read_transfers). */
static int collective_transfers(sctx *c)
{
    int rc = 0;
    c->dxpl = H5Pcreate(H5P_DATASET_XFER);
    if (c->dxpl < 0 || H5Pset_dxpl_mpio(c->dxpl, H5FD_MPIO_COLLECTIVE) < 0)
        rc = fail(c, LSIM_EIO, "cannot set up collective transfers");
    return agree(c, rc);
}

/* Create PATH's temporary file (MPI: all ranks, name from rank 0's pid). */
static int create_tmp(sctx *c, char *tmp, size_t tmplen)
{
    if (begin_tmp(c, 0, tmp, tmplen)) return c->e.code ? c->e.code : LSIM_EIO;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    int rc = fapl < 0 ? fail(c, LSIM_EIO, "cannot create HDF5 property list") : 0;
    /* the HDF5 1.10 file format: every metadata structure, chunk indexes
     * included, carries a checksum (and every chunk a Fletcher-32), so
     * damage is an error, never wrong data; readable by HDF5 >= 1.10 */
    if (!rc && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) < 0)
        rc = fail(c, LSIM_EIO, "cannot set the HDF5 file format version");
    if (!rc && c->mpi &&
        (H5Pset_fapl_mpio(fapl, c->comm, MPI_INFO_NULL) < 0 || H5Pset_all_coll_metadata_ops(fapl, 1) < 0 ||
         H5Pset_coll_metadata_write(fapl, 1) < 0))
        rc = fail(c, LSIM_EIO, "cannot set up MPI-IO");
    rc = agree(c, rc);
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
        rc = agree(c, rc);
    }
    if (!rc && c->mpi) rc = collective_transfers(c);
    if (fapl >= 0) H5Pclose(fapl);
    return rc;
}

/* Close the temporary file and rename it over PATH; on rc != 0 remove it. */
static int finish_tmp(sctx *c, const char *tmp, int rc)
{
    if (c->dxpl != H5P_DEFAULT) H5Pclose(c->dxpl);
    c->dxpl = H5P_DEFAULT;
    if (c->file >= 0) {
        if (H5Fclose(c->file) < 0 && !rc) rc = fail(c, LSIM_EIO, "cannot close %s (disk full?)", tmp);
        c->file = -1;
    }
    rc = agree(c, rc);
    (void)tmp;
    if (c->rank == 0) {
        if (rc) lsim_out_abort(c->out);
        else if (c->hold) *c->hold = c->out; /* the caller commits it */
        else rc = lsim_out_commit(c->out, &c->e);
    }
    c->out = NULL;
    return agree(c, rc);
}

/* Root attribute "device": the GPU every trace of the job names in its
 * deviceProperties, when they all name the same one (what-if takes the
 * source GPU from it). Collective under MPI: rank 0's name is the
 * candidate, every rank checks its own graphs. */
static int write_device_attr(sctx *c, lsim_graph *const *graphs, size_t n)
{
    char dev[256] = "";
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        const lsim_graph *g = graphs[i];
        const char *d = g->device != UINT32_MAX ? lsim_strtab_get(g->strings, g->device) : NULL;
        if (!d || !*d || strlen(d) >= sizeof dev) ok = 0;
        else if (!dev[0]) snprintf(dev, sizeof dev, "%s", d);
        else if (strcmp(dev, d)) ok = 0;
    }
    if (c->mpi) {
        char root[256];
        memcpy(root, dev, sizeof root);
        MPI_Bcast(root, (int)sizeof root, MPI_CHAR, 0, c->comm);
        if (n && strcmp(root, dev)) ok = 0;
        if (!root[0]) ok = 0;
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c->comm);
        memcpy(dev, root, sizeof dev);
    }
    if (!ok || !dev[0]) return 0;
    return agree(c, put_attr_str(c->file, "device", dev) ? fail(c, LSIM_EIO, "cannot write the attribute device") : 0);
}

static int write_graphs_impl(sctx *c, lsim_graph *const *graphs, size_t n, const char *command_line,
                             const char *const *source_paths)
{
    int rc = check_layout(c);
    gmeta *lm = NULL, *m = NULL;
    const char **src = NULL;
    size_t ngpu = 0, gfirst = 0;
    char tmp[4096];
    if (!rc && n && !graphs) rc = fail(c, LSIM_EARG, "no graphs given");
    for (size_t i = 0; !rc && i < n; i++)
        if (!graphs[i] || !graphs[i]->strings)
            rc = fail(c, LSIM_EARG, "graph %zu is missing or has no string table", i);
    rc = agree(c, rc);
    if (rc) return rc;
    lm = calloc(n ? n : 1, sizeof *lm);
    src = calloc(n ? n : 1, sizeof *src);
    rc = agree(c, lm && src ? 0 : nomem(c));
    if (rc) goto out;
    for (size_t i = 0; i < n && !rc; i++) {
        meta_from_graph(&lm[i], graphs[i]);
        const char *sp = source_paths ? source_paths[i] : graphs[i]->source;
        src[i] = graphs[i]->source ? graphs[i]->source : sp ? sp : "";
        if (sp) rc = file_crc(c, sp, &lm[i].source_size, &lm[i].source_crc32);
    }
    rc = agree(c, rc);
    if (rc) goto out;
    /* latency mode of the set: one mode, or "mixed" */
    int lat = n ? (int)lm[0].latency : 0, mixed = 0;
    for (size_t i = 1; i < n; i++)
        if (lm[i].latency != lat) mixed = 1;
    if (c->mpi) {
        int lo[2] = {n ? lat : INT_MAX, n ? -lat : INT_MAX}, go[2];
        MPI_Allreduce(lo, go, 2, MPI_INT, MPI_MIN, c->comm);
        int anymixed = 0;
        MPI_Allreduce(&mixed, &anymixed, 1, MPI_INT, MPI_MAX, c->comm);
        mixed = anymixed || (go[0] != INT_MAX && go[0] != -go[1]);
        lat = go[0] == INT_MAX ? 0 : go[0];
    }
    rc = gather_meta(c, lm, n, &m, &ngpu, &gfirst);
    if (rc) goto out;
    rc = create_tmp(c, tmp, sizeof tmp);
    if (rc) goto out;
    rc = agree(c, write_root_attrs(c, LSIM_STORE_KIND_GRAPHS, command_line ? command_line : "",
                                   mixed ? "mixed" : latency_name(lat)));
    if (!rc) rc = write_device_attr(c, graphs, n);
    if (!rc) rc = write_graph_tables(c, c->file, "", graphs, n, m, ngpu, gfirst, src, 1);
    if (!rc) rc = agree(c, label_graph_tables(c->file) ? fail(c, LSIM_EIO, "cannot label /gpus columns") : 0);
    rc = finish_tmp(c, tmp, rc);
out:
    free(lm);
    free(m);
    free(src);
    return rc;
}

static void apply_opts(sctx *c, const lsim_store_write_opts *o)
{
    if (o && o->deflate_level < 0) c->deflate = 0;
    else if (o && o->deflate_level > 0) c->deflate = o->deflate_level > 9 ? 9 : o->deflate_level;
}

int lsim_store_write_graphs_ex(const char *path, lsim_graph *const *graphs, size_t n,
                               const lsim_store_write_opts *o, lsim_err *err)
{
    sctx c;
    ctx_init(&c, path, 0, MPI_COMM_NULL);
    apply_opts(&c, o);
    int rc = path ? write_graphs_impl(&c, graphs, n, o ? o->command_line : NULL, o ? o->source_paths : NULL)
                  : fail(&c, LSIM_EARG, "no output path");
    return ctx_done(&c, rc, err);
}

int lsim_store_write_graphs(const char *path, lsim_graph *const *graphs, size_t n, const char *command_line,
                            const char *const *source_paths, lsim_err *err)
{
    lsim_store_write_opts o = {command_line, source_paths, 0};
    return lsim_store_write_graphs_ex(path, graphs, n, &o, err);
}

int lsim_store_write_graphs_mpi_ex(const char *path, MPI_Comm comm, lsim_graph *const *graphs, size_t n,
                                   const lsim_store_write_opts *o, lsim_err *err)
{
    sctx c;
    ctx_init(&c, path, 1, comm);
    apply_opts(&c, o);
    int rc = path ? write_graphs_impl(&c, graphs, n, o ? o->command_line : NULL, o ? o->source_paths : NULL)
                  : fail(&c, LSIM_EARG, "no output path");
    return ctx_done(&c, rc, err);
}

int lsim_store_write_graphs_mpi(const char *path, MPI_Comm comm, lsim_graph *const *graphs, size_t n,
                                const char *command_line, const char *const *source_paths, lsim_err *err)
{
    lsim_store_write_opts o = {command_line, source_paths, 0};
    return lsim_store_write_graphs_mpi_ex(path, comm, graphs, n, &o, err);
}

/* ------------------------------------------------------------ open + check */

static int open_file(sctx *c)
{
    struct stat st;
    int rc = 0;
    if (stat(c->path, &st) != 0) rc = fail(c, LSIM_EIO, "%s", strerror(errno));
    /* a regular file only: HDF5 would open a FIFO and wait for a writer
     * ("PATH: is a FIFO, not a file", input.h) */
    else if (!S_ISREG(st.st_mode)) rc = lsim_input_check(c->path, 0, NULL, &c->e);
    rc = agree(c, rc);
    if (rc) return rc;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) rc = fail(c, LSIM_EIO, "cannot create HDF5 property list");
    if (!rc && c->mpi &&
        (H5Pset_fapl_mpio(fapl, c->comm, MPI_INFO_NULL) < 0 || H5Pset_all_coll_metadata_ops(fapl, 1) < 0))
        rc = fail(c, LSIM_EIO, "cannot set up MPI-IO");
    rc = agree(c, rc);
    if (!rc) {
        /* H5Fis_hdf5 first: opening a non-HDF5 file through MPI-IO is slow and noisy */
        htri_t is = H5Fis_hdf5(c->path);
        if (is > 0) c->file = H5Fopen(c->path, H5F_ACC_RDONLY, fapl);
        if (is <= 0 || c->file < 0) rc = fail(c, LSIM_EFORMAT, "not an HDF5 file or truncated");
        rc = agree(c, rc);
    }
    if (!rc && c->mpi) rc = collective_transfers(c);
    if (fapl >= 0) H5Pclose(fapl);
    return rc;
}

/* Check the root's schema_version and kind (want: the expected kind). */
static int check_root(sctx *c, const char *want)
{
    char *kind = NULL;
    int64_t ver = 0;
    int rk = get_attr_str(c->file, "kind", &kind);
    int rv = get_attr_num(c->file, "schema_version", 0, &ver);
    int rc = 0;
    if (rk <= 0 || (strcmp(kind, LSIM_STORE_KIND_GRAPHS) != 0 && strcmp(kind, LSIM_STORE_KIND_RESULTS) != 0))
        rc = fail(c, LSIM_EFORMAT, "HDF5 file, but not a lumosim %s (no lumosim 'kind' attribute)",
                  strcmp(want, LSIM_STORE_KIND_GRAPHS) == 0 ? "graph store" : "result file");
    else if (rv <= 0)
        rc = fail(c, LSIM_EFORMAT, "the schema_version attribute is missing or not an integer");
    else if (ver != LSIM_STORE_SCHEMA_VERSION)
        rc = fail(c, LSIM_EFORMAT, "schema version %lld not supported (this lumosim reads %d)", (long long)ver,
                  LSIM_STORE_SCHEMA_VERSION);
    else if (strcmp(kind, want) != 0)
        rc = fail(c, LSIM_EFORMAT, "is a %s file, not a %s", kind,
                  strcmp(want, LSIM_STORE_KIND_GRAPHS) == 0 ? "graph store" : "result file");
    free(kind);
    return agree(c, rc);
}

/* ------------------------------------------------------------ streamed graph write */

/* Rows per chunk of the appendable datasets: the final size is not known
 * when they are created, so a fixed size (64 Ki rows: 512 KiB of int64,
 * inside HDF5's default 1 MiB chunk cache, so the partly filled last chunk
 * of a batch stays cached for the next). */
#define APPEND_CHUNK_ROWS ((hsize_t)1 << 16)

struct lsim_store_writer {
    sctx c;
    char tmp[4096];
    hid_t d[NGCOLS + 2];      /* the flat columns, then strings/offset, strings/chars */
    uint64_t rows[RK_N];      /* rows written so far per row kind */
    gmeta *m;                 /* per-GPU index so far */
    char **src;
    size_t n, cap;
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

/* An empty dataset that grows by appends (chunked, same filters as put_raw). */
static hid_t create_appendable(sctx *c, hid_t loc, const char *name, int t)
{
    hsize_t dims[1] = {0}, maxd[1] = {H5S_UNLIMITED}, ch[1] = {APPEND_CHUNK_ROWS};
    hid_t fs = H5Screate_simple(1, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE), lcpl = lcpl_parents(), d = -1;
    if (fs >= 0 && dcpl >= 0 && lcpl >= 0 && H5Pset_chunk(dcpl, 1, ch) >= 0 &&
        (c->deflate <= 0 || (H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, (unsigned)c->deflate) >= 0)) &&
        H5Pset_fletcher32(dcpl) >= 0) {
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
        d = H5Dcreate2(loc, name, ftype(t), fs, lcpl, dcpl, H5P_DEFAULT);
    }
    if (d < 0) fail(c, LSIM_EIO, "cannot create dataset /%s", name);
    if (lcpl >= 0) H5Pclose(lcpl);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (fs >= 0) H5Sclose(fs);
    return d;
}

/* Append cnt rows of buf (memory type of t) at row `at` of d. */
static int append_rows(sctx *c, hid_t d, const char *name, int t, uint64_t at, uint64_t cnt, const void *buf)
{
    if (!cnt) return 0;
    hsize_t nd[1] = {at + cnt}, o[1] = {at}, n[1] = {cnt};
    int rc = 0;
    hid_t fs = -1, ms = -1;
    if (H5Dset_extent(d, nd) < 0 || (fs = H5Dget_space(d)) < 0 ||
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, o, NULL, n, NULL) < 0 || (ms = H5Screate_simple(1, n, NULL)) < 0 ||
        H5Dwrite(d, mtype(t), ms, fs, H5P_DEFAULT, buf) < 0)
        rc = fail(c, LSIM_EIO, "cannot write /%s (disk full?)", name);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

void lsim_store_writer_abort(lsim_store_writer *w)
{
    if (!w) return;
    wq_on(&w->c);
    for (size_t k = 0; k < NGCOLS + 2; k++)
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
    free(w->m);
    free(w->buf);
    free(w->command_line);
    free(w);
}

int lsim_store_writer_open(const char *path, const lsim_store_write_opts *opts, lsim_store_writer **out, lsim_err *err)
{
    *out = NULL;
    lsim_store_writer *w = calloc(1, sizeof *w);
    if (!w) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t k = 0; k < NGCOLS + 2; k++) w->d[k] = -1;
    ctx_init(&w->c, path, 0, MPI_COMM_NULL); /* also silences HDF5 errors */
    apply_opts(&w->c, opts);
    if (opts) w->opts = *opts;
    w->opts.source_paths = NULL; /* per batch, not kept */
    w->lat = -1;
    int rc = check_layout(&w->c);
    if (!rc && opts && opts->command_line && !(w->command_line = strdup(opts->command_line))) rc = nomem(&w->c);
    if (!rc) rc = create_tmp(&w->c, w->tmp, sizeof w->tmp);
    for (size_t k = 0; !rc && k < NGCOLS; k++)
        if ((w->d[k] = create_appendable(&w->c, w->c.file, gcols[k].name, gcols[k].t)) < 0) rc = w->c.e.code;
    if (!rc && (w->d[NGCOLS] = create_appendable(&w->c, w->c.file, "strings/offset", T_U64)) < 0) rc = w->c.e.code;
    if (!rc && (w->d[NGCOLS + 1] = create_appendable(&w->c, w->c.file, "strings/chars", T_U8)) < 0) rc = w->c.e.code;
    if (rc) {
        if (err) *err = w->c.e;
        lsim_store_writer_abort(w);
        return rc;
    }
    wq_off(&w->c);
    *out = w;
    return 0;
}

/* Grow the writer's scratch buffer to at least `need` bytes. */
static int wbuf(lsim_store_writer *w, size_t need)
{
    if (need <= w->bufcap) return 0;
    char *b = realloc(w->buf, need);
    if (!b) return nomem(&w->c);
    w->buf = b;
    w->bufcap = need;
    return 0;
}

int lsim_store_writer_add(lsim_store_writer *w, lsim_graph *const *graphs, size_t n,
                          const char *const *source_paths, lsim_err *err)
{
    sctx *c = &w->c;
    int rc = 0;
    wq_on(c);
    for (size_t i = 0; !rc && i < n; i++)
        if (!graphs || !graphs[i] || !graphs[i]->strings)
            rc = fail(c, LSIM_EARG, "graph %zu of the batch is missing or has no string table", i);
    if (!rc && w->n + n > w->cap) {
        size_t cap = w->cap ? w->cap : 64;
        while (cap < w->n + n) cap *= 2;
        gmeta *m = realloc(w->m, cap * sizeof *m);
        if (m) w->m = m;
        char **sp = m ? realloc(w->src, cap * sizeof *sp) : NULL;
        if (sp) w->src = sp;
        if (!m || !sp) rc = nomem(c);
        else w->cap = cap;
    }
    /* the batch's index entries, offsets continuing the rows written so far */
    uint64_t brows[RK_N] = {0};
    for (size_t i = 0; !rc && i < n; i++) {
        gmeta *x = &w->m[w->n + i];
        meta_from_graph(x, graphs[i]);
        if (source_paths && source_paths[i]) rc = file_crc(c, source_paths[i], &x->source_size, &x->source_crc32);
        for (int r = 0; r < RK_N; r++) {
            x->off[r] = w->rows[r] + brows[r];
            brows[r] += x->cnt[r];
        }
    }
    /* each column once per batch (a partly filled chunk is rewritten only
     * at the batch's two ends) */
    for (size_t k = 0; !rc && k < NGCOLS; k++) {
        const gcol *gc = &gcols[k];
        uint64_t cnt = brows[gc->rk];
        if (!cnt) continue;
        if ((rc = wbuf(w, cnt * gc->esz))) break;
        uint64_t at = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = w->m[w->n + i].cnt[gc->rk];
            pack(gc, graphs[i], r, w->buf + at * gc->esz);
            at += r;
        }
        rc = append_rows(c, w->d[k], gc->name, gc->t, w->rows[gc->rk], cnt, w->buf);
    }
    /* strings: per-string offsets within each GPU's bytes, then the bytes */
    uint64_t ns = brows[RK_STR], nc = brows[RK_CHAR];
    if (!rc && ns && !(rc = wbuf(w, ns * sizeof(uint64_t) + nc))) {
        uint64_t *o = (uint64_t *)(void *)w->buf;
        char *ch = w->buf + ns * sizeof(uint64_t);
        uint64_t so = 0, co = 0;
        for (size_t i = 0; i < n; i++) {
            const lsim_graph *g = graphs[i];
            uint64_t gs = w->m[w->n + i].cnt[RK_STR], pos = 0;
            for (uint64_t k = 0; k < gs; k++) {
                const char *str = lsim_strtab_get(g->strings, (uint32_t)k);
                size_t len = strlen(str);
                o[so + k] = pos;
                memcpy(ch + co + pos, str, len + 1);
                pos += len + 1;
            }
            so += gs;
            co += pos;
        }
        rc = append_rows(c, w->d[NGCOLS], "strings/offset", T_U64, w->rows[RK_STR], ns, o);
        if (!rc) rc = append_rows(c, w->d[NGCOLS + 1], "strings/chars", T_U8, w->rows[RK_CHAR], nc, ch);
    }
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_graph *g = graphs[i];
        const char *sp = source_paths ? source_paths[i] : NULL;
        if (!(w->src[w->n + i] = strdup(g->source ? g->source : sp ? sp : ""))) {
            for (size_t k = 0; k < i; k++) free(w->src[w->n + k]);
            rc = nomem(c);
        }
    }
    if (!rc) {
        for (size_t i = 0; i < n; i++) {
            int lat = graphs[i]->latency;
            if (w->lat < 0) w->lat = lat;
            else if (w->lat != lat) w->mixed = 1;
        }
        for (int r = 0; r < RK_N; r++) w->rows[r] += brows[r];
        w->n += n;
    }
    if (rc && err) *err = c->e;
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
    char *t = strdup(text ? text : "");
    if (!t) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (i == w->nattr) {
        if (!(w->attr_name[i] = strdup(name))) {
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

int lsim_store_read_attr(const char *path, const char *name, char **text, lsim_err *err)
{
    sctx c;
    *text = NULL;
    ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = open_file(&c);
    if (!rc) {
        int got = get_attr_str(c.file, name, text);
        if (got < 0) rc = fail(&c, LSIM_EFORMAT, "attribute %s is not a string", name);
        else if (got == 0) rc = fail(&c, LSIM_EARG, "no attribute %s", name);
    }
    return ctx_done(&c, rc, err);
}

int lsim_store_writer_close(lsim_store_writer *w, lsim_err *err)
{
    if (!w) return 0;
    sctx *c = &w->c;
    wq_on(c);
    int rc = 0;
    for (size_t k = 0; k < NGCOLS + 2; k++) {
        if (w->d[k] >= 0 && H5Dclose(w->d[k]) < 0 && !rc) rc = fail(c, LSIM_EIO, "cannot close a dataset (disk full?)");
        w->d[k] = -1;
    }
    rowsel all;
    sel_one(&all, 0, w->n);
    const char **src = (const char **)w->src;
    if (!rc)
        rc = put_records(c, c->file, "", "gpus", gpu_cols, NGPUCOLS, w->m, sizeof *w->m, w->n, &all, w->n,
                         min_u64(w->n ? w->n : 1, CHUNK_MAX_ROWS));
    if (!rc)
        rc = put_strings(c, c->file, "", "gpus/source", src, w->n, w->n, &all, min_u64(w->n ? w->n : 1, CHUNK_MAX_ROWS));
    if (!rc)
        rc = write_root_attrs(c, LSIM_STORE_KIND_GRAPHS, w->command_line ? w->command_line : "",
                              w->mixed ? "mixed" : latency_name(w->lat < 0 ? 0 : w->lat));
    for (int i = 0; !rc && i < w->nattr; i++)
        if (put_attr_str(c->file, w->attr_name[i], w->attr_text[i]))
            rc = fail(c, LSIM_EIO, "cannot write the attribute %s", w->attr_name[i]);
    if (!rc && label_graph_tables(c->file)) rc = fail(c, LSIM_EIO, "cannot label /gpus columns");
    rc = finish_tmp(c, w->tmp, rc);
    w->tmp[0] = '\0';
    if (rc && err) *err = c->e;
    wq_off(c);
    lsim_store_writer_abort(w); /* frees; the file is already renamed or removed */
    return rc;
}

/* ------------------------------------------------------------ graph read */

/* Read and check /gpus (all GPUs) under loc. */
static int read_gpu_table(sctx *c, hid_t loc, const char *where, gmeta **out, char ***sources, size_t *ngpu)
{
    *out = NULL;
    *ngpu = 0;
    if (sources) *sources = NULL;
    int rc = 0;
    size_t n = 0;
    /* the row count comes from /gpus/rank */
    if (H5Lexists(loc, "gpus", H5P_DEFAULT) <= 0 || H5Lexists(loc, "gpus/rank", H5P_DEFAULT) <= 0)
        rc = fail(c, LSIM_EFORMAT, "dataset %s/gpus/rank is missing", where);
    else {
        hid_t d = H5Dopen2(loc, "gpus/rank", H5P_DEFAULT);
        hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
        hsize_t dims[2];
        if (sp < 0 || H5Sget_simple_extent_ndims(sp) != 1 || H5Sget_simple_extent_dims(sp, dims, NULL) < 0)
            rc = fail(c, LSIM_EFORMAT, "%s/gpus/rank is not a 1-D dataset", where);
        else if (dims[0] > ((hsize_t)1 << 31))
            rc = fail(c, LSIM_EFORMAT, "%s/gpus/rank has %llu rows", where, (unsigned long long)dims[0]);
        else
            n = (size_t)dims[0];
        if (sp >= 0) H5Sclose(sp);
        if (d >= 0) H5Dclose(d);
    }
    rc = agree(c, rc);
    if (rc) return rc;
    gmeta *m = calloc(n ? n : 1, sizeof *m);
    rc = agree(c, m ? 0 : nomem(c));
    if (!rc) rc = get_records(c, loc, where, "gpus", gpu_cols, NGPUCOLS, m, sizeof *m, n, 0, n);
    /* offsets must be the prefix sums of the counts (GPU order, no gaps) */
    uint64_t acc[RK_N] = {0};
    for (size_t i = 0; !rc && i < n; i++) {
        for (int r = 0; r < RK_N && !rc; r++) {
            if (m[i].off[r] != acc[r])
                rc = fail(c, LSIM_EFORMAT, "%s/gpus/%s_offset of GPU %zu is %llu, expected %llu (the sum of the "
                                           "previous GPUs' counts)",
                          where, rk_name[r], i, (unsigned long long)m[i].off[r], (unsigned long long)acc[r]);
            else if (m[i].cnt[r] > UINT64_MAX / 16 - acc[r])
                rc = fail(c, LSIM_EFORMAT, "%s/gpus/%s_count of GPU %zu is too large", where, rk_name[r], i);
            else
                acc[r] += m[i].cnt[r];
        }
        if (rc) break;
        if (m[i].cnt[RK_NODE] > UINT32_MAX || m[i].cnt[RK_PROC] > UINT32_MAX || m[i].cnt[RK_ITER] > UINT32_MAX ||
            m[i].cnt[RK_STR] > UINT32_MAX || m[i].cnt[RK_COLL] > INT32_MAX)
            rc = fail(c, LSIM_EFORMAT, "%s/gpus: GPU %zu has more rows than node/processor/string ids can address",
                      where, i);
        else if (m[i].latency > LSIM_LAT_OBSERVED)
            rc = fail(c, LSIM_EFORMAT, "%s/gpus/latency_mode of GPU %zu is %u (0 or 1)", where, i, m[i].latency);
    }
    rc = agree(c, rc);
    char **src = NULL;
    if (!rc && sources) rc = get_strings(c, loc, where, "gpus/source", n, 0, n, &src);
    if (rc) {
        free(m);
        return rc;
    }
    *out = m;
    *ngpu = n;
    if (sources) *sources = src;
    return 0;
}

static void free_strs(char **s, size_t n)
{
    if (!s) return;
    for (size_t i = 0; i < n; i++) free(s[i]);
    free(s);
}

static int graph_alloc(lsim_graph *g, const gmeta *m)
{
    size_t n = (size_t)m->cnt[RK_NODE], e = (size_t)m->cnt[RK_EDGE];
#define AL(f, cnt)                                                                                                     \
    do {                                                                                                               \
        size_t c_ = (cnt) ? (cnt) : 1;                                                                                 \
        if (!(g->f = malloc(c_ * sizeof *g->f))) return LSIM_ENOMEM;                                                  \
    } while (0)
    AL(kind, n);
    AL(flags, n);
    AL(proc, n);
    AL(name, n);
    AL(dur, n);
    AL(obs_start, n);
    AL(obs_end, n);
    AL(release, n);
    AL(corr, n);
    AL(iter, n);
    AL(coll, n);
    AL(in_off, n + 1);
    AL(out_off, n + 1);
    AL(in_src, e);
    AL(in_delay, e);
    AL(in_class, e);
    AL(out_dst, e);
    AL(procs, (size_t)m->cnt[RK_PROC]);
    AL(iters, (size_t)m->cnt[RK_ITER]);
    AL(colls, (size_t)m->cnt[RK_COLL]);
#undef AL
    memset(g->procs, 0, (m->cnt[RK_PROC] ? m->cnt[RK_PROC] : 1) * sizeof *g->procs);
    memset(g->iters, 0, (m->cnt[RK_ITER] ? m->cnt[RK_ITER] : 1) * sizeof *g->iters);
    memset(g->colls, 0, (m->cnt[RK_COLL] ? m->cnt[RK_COLL] : 1) * sizeof *g->colls);
    g->rank = m->rank;
    g->world_size = m->world_size;
    g->latency = (lsim_latency_mode)m->latency;
    g->n = n;
    g->nedges = e;
    g->nprocs = (uint32_t)m->cnt[RK_PROC];
    g->niters = (uint32_t)m->cnt[RK_ITER];
    g->ncoll = (size_t)m->cnt[RK_COLL];
    g->t0 = m->t0;
    g->queued_gap_ns = m->queued_gap_ns;
    g->launch_latency_ns = m->launch_latency_ns;
    g->launch_samples = m->launch_samples;
    g->prewindow = m->prewindow;
    g->releases = m->releases;
    g->sync_events_used = m->sync_events_used;
    memcpy(g->edges_by_class, m->edges_by_class, sizeof g->edges_by_class);
    memcpy(g->inferred_by_class, m->inferred_by_class, sizeof g->inferred_by_class);
    memcpy(g->dropped, m->dropped, sizeof g->dropped);
    return 0;
}

/* Everything the engine, metrics, critical path and reports index with. */
static int validate_graph(sctx *c, const char *where, const lsim_graph *g, size_t gi)
{
    size_t n = g->n;
    uint32_t nstr = lsim_strtab_count(g->strings);
#define BAD(...) return fail(c, LSIM_EFORMAT, __VA_ARGS__)
    for (size_t v = 0; v < n; v++) {
        if (g->kind[v] >= LSIM_N_NKINDS)
            BAD("%s/nodes/kind of GPU %zu: node %zu has kind %u (valid: 0..%d)", where, gi, v, g->kind[v],
                LSIM_N_NKINDS - 1);
        if (g->proc[v] >= g->nprocs)
            BAD("%s/nodes/proc of GPU %zu: node %zu is on processor %u, the GPU has %u", where, gi, v, g->proc[v],
                g->nprocs);
        if (g->name[v] >= nstr)
            BAD("%s/nodes/name of GPU %zu: node %zu has string id %u, the GPU has %u strings", where, gi, v,
                g->name[v], nstr);
        if (g->dur[v] < 0)
            BAD("%s/nodes/dur of GPU %zu: node %zu has a negative duration (%lld ns)", where, gi, v,
                (long long)g->dur[v]);
        if (g->iter[v] < -1 || (g->iter[v] >= 0 && (uint32_t)g->iter[v] >= g->niters))
            BAD("%s/nodes/iter of GPU %zu: node %zu has iteration %d, the GPU has %u", where, gi, v, g->iter[v],
                g->niters);
        if (g->coll[v] < -1 || (g->coll[v] >= 0 && (size_t)g->coll[v] >= g->ncoll))
            BAD("%s/nodes/coll of GPU %zu: node %zu has collective %d, the GPU has %zu", where, gi, v, g->coll[v],
                g->ncoll);
        if (g->in_off[v] > g->in_off[v + 1] || g->in_off[v + 1] > g->nedges)
            BAD("%s/nodes/in_off of GPU %zu is not a valid offset list at node %zu (%llu, then %llu; %llu edges)",
                where, gi, v, (unsigned long long)g->in_off[v], (unsigned long long)g->in_off[v + 1],
                (unsigned long long)g->nedges);
    }
    if (g->in_off[0] != 0) BAD("%s/nodes/in_off of GPU %zu does not start at 0", where, gi);
    for (uint64_t k = 0; k < g->nedges; k++) {
        if (g->in_src[k] >= n)
            BAD("%s/edges/in_src of GPU %zu: edge %llu points to node %u, the GPU has %zu nodes", where, gi,
                (unsigned long long)k, g->in_src[k], n);
        if ((g->in_class[k] & ~LSIM_EDGE_END) >= LSIM_E_NCLASSES)
            BAD("%s/edges/in_class of GPU %zu: edge %llu has class %u (valid: 0..%d, + 0x80 for end-edges)", where,
                gi, (unsigned long long)k, g->in_class[k], LSIM_E_NCLASSES - 1);
    }
    uint64_t *cnt = calloc(g->nprocs ? g->nprocs : 1, sizeof *cnt);
    if (!cnt) return nomem(c);
    for (size_t v = 0; v < n; v++) cnt[g->proc[v]]++;
    for (uint32_t p = 0; p < g->nprocs; p++) {
        if (g->procs[p].is_gpu > 1 || cnt[p] != g->procs[p].nnodes) {
            unsigned long long have = (unsigned long long)cnt[p];
            free(cnt);
            BAD("%s/procs of GPU %zu: processor %u claims %u nodes (is_gpu %u), the nodes say %llu", where, gi, p,
                g->procs[p].nnodes, g->procs[p].is_gpu, have);
        }
    }
    free(cnt);
    for (uint32_t i = 0; i < g->niters; i++)
        if (g->iters[i].name >= nstr)
            BAD("%s/iters/name of GPU %zu: iteration %u has string id %u, the GPU has %u strings", where, gi, i,
                g->iters[i].name, nstr);
    for (size_t i = 0; i < g->ncoll; i++) {
        const lsim_coll_info *ci = &g->colls[i];
        if (ci->kind > LSIM_COLL_OTHER)
            BAD("%s/colls/kind of GPU %zu: collective %zu has kind %u", where, gi, i, ci->kind);
        if ((ci->pg_name != UINT32_MAX && ci->pg_name >= nstr) || (ci->pg_ranks != UINT32_MAX && ci->pg_ranks >= nstr))
            BAD("%s/colls/pg_name or pg_ranks of GPU %zu: collective %zu names a string past the GPU's %u", where, gi,
                i, nstr);
    }
#undef BAD
    /* durations, delays and times within the graph bounds (graph.h): a
     * duration of INT64_MAX would otherwise be simulated into a window of
     * 10^13 duty-cycle bins or a wrapped, negative one */
    {
        char label[LSIM_ERR_LEN];
        lsim_err e = {0};
        snprintf(label, sizeof label, "%s%s%s", c->path, *where ? " " : "", where);
        if (lsim_graph_check_bounds(g, label, gi, &e)) {
            c->e = e;
            return e.code;
        }
    }
    return 0;
}

static int rebuild_out_csr(lsim_graph *g)
{
    size_t n = g->n;
    memset(g->out_off, 0, (n + 1) * sizeof *g->out_off);
    for (uint64_t k = 0; k < g->nedges; k++) g->out_off[g->in_src[k] + 1]++;
    for (size_t v = 0; v < n; v++) g->out_off[v + 1] += g->out_off[v];
    uint64_t *fill = calloc(n ? n : 1, sizeof *fill);
    if (!fill) return LSIM_ENOMEM;
    for (size_t v = 0; v < n; v++)
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
            uint32_t u = g->in_src[k];
            g->out_dst[g->out_off[u] + fill[u]++] = (uint32_t)v;
        }
    free(fill);
    return 0;
}

void lsim_store_free_graphs(lsim_graph **graphs, size_t n)
{
    if (!graphs) return;
    for (size_t i = 0; i < n; i++) lsim_graph_free(graphs[i]);
    free(graphs);
}

/* Read GPUs [first, first + count) of the graph tables under loc. */
/* Read GPUs [first, first + count) (count SIZE_MAX: to the end), or, with
 * list, GPUs list[0..count) (ascending), of the graph tables under loc. */
static int read_graph_tables(sctx *c, hid_t loc, const char *where, size_t first, size_t count, const size_t *list,
                             lsim_graph ***out, size_t *nout)
{
    gmeta *m = NULL, *lm = NULL;
    char **src = NULL;
    size_t ngpu = 0;
    lsim_graph **gs = NULL;
    char *buf = NULL;
    rowsel sel;
    sel_one(&sel, 0, 0);
    int rc = check_layout(c);
    rc = agree(c, rc);
    if (!rc) rc = read_gpu_table(c, loc, where, &m, &src, &ngpu);
    if (rc) return rc;
    if (list) {
        for (size_t i = 0; i < count && !rc; i++)
            if (list[i] >= ngpu || (i && list[i] <= list[i - 1]))
                rc = fail(c, LSIM_EARG, "GPU %zu requested%s, the store holds %zu (0..%zu)", list[i],
                          list[i] < ngpu ? " out of order" : "", ngpu, ngpu ? ngpu - 1 : 0);
    } else if (first > ngpu || (count != SIZE_MAX && count > ngpu - first)) {
        rc = fail(c, LSIM_EARG, "GPUs %zu..%zu requested, the store holds %zu (0..%zu)", first,
                  count == SIZE_MAX ? ngpu : first + count, ngpu, ngpu ? ngpu - 1 : 0);
    }
    if (count == SIZE_MAX) count = first <= ngpu ? ngpu - first : 0;
    rc = agree(c, rc);
    if (rc) goto out;
    lm = malloc((count ? count : 1) * sizeof *lm);
    rc = agree(c, lm ? 0 : nomem(c));
    if (rc) goto out;
    for (size_t i = 0; i < count; i++) lm[i] = m[list ? list[i] : first + i];
    {
        /* Size before work: the GPU table says how big the graphs are, so
         * a store too big for this process (memlimit.h) is refused here, in
         * one line, before anything is allocated for them, not found out
         * by the OOM killer. Each rank checks its own GPUs. */
        uint64_t tot[3] = {0, 0, 0};
        for (size_t i = 0; i < count; i++) {
            tot[0] += lm[i].cnt[RK_NODE];
            tot[1] += lm[i].cnt[RK_EDGE];
            tot[2] += lm[i].cnt[RK_STR];
        }
        lsim_err e = {0};
        int mrc = count ? lsim_mem_check_graphs(c->path, count, tot[0], tot[1], tot[2], &e) : 0;
        if (mrc) c->e = e;
        rc = agree(c, mrc);
        if (rc) goto out;
    }
    /* every dataset's shape first, so nothing is allocated from counts the
     * datasets do not back */
    for (size_t k = 0; k < NGCOLS && !rc; k++) {
        hid_t d = open_col(c, loc, where, gcols[k].name, H5T_INTEGER, 1, total_rows(m, ngpu, gcols[k].rk), NULL);
        rc = agree(c, d < 0 ? c->e.code : 0);
        if (d >= 0) H5Dclose(d);
    }
    const char *scols[2] = {"strings/offset", "strings/chars"};
    for (int k = 0; k < 2 && !rc; k++) {
        hid_t d = open_col(c, loc, where, scols[k], H5T_INTEGER, 1, total_rows(m, ngpu, k ? RK_CHAR : RK_STR), NULL);
        rc = agree(c, d < 0 ? c->e.code : 0);
        if (d >= 0) H5Dclose(d);
    }
    if (rc) goto out;
    gs = calloc(count ? count : 1, sizeof *gs);
    if (!gs) rc = nomem(c);
    for (size_t i = 0; !rc && i < count; i++) {
        if (!(gs[i] = calloc(1, sizeof *gs[i])) || graph_alloc(gs[i], &lm[i]) ||
            !(gs[i]->source = strdup(src[list ? list[i] : first + i])) || !(gs[i]->strings = lsim_strtab_new()))
            rc = nomem(c);
        if (gs[i]) gs[i]->device = UINT32_MAX; /* the store's is a root attribute ("device") */
    }
    rc = agree(c, rc);
    if (rc) goto out;
    /* One staging buffer for every column, as large as the largest: a
     * buffer per column was a fresh mapping each time (glibc maps large
     * blocks and unmaps them on free), so every column's bytes were
     * page-faulted and zeroed twice, into the buffer and into the graphs
     * (23 columns, 6 GB on a 4,096-GPU job). */
    size_t bufsz = 1;
    for (size_t k = 0; k < NGCOLS && count > 1; k++) {
        uint64_t rows = 0;
        for (size_t i = 0; i < count; i++) rows += lm[i].cnt[gcols[k].rk];
        if (rows * gcols[k].esz > bufsz) bufsz = (size_t)(rows * gcols[k].esz);
    }
    char *stage = NULL;
    for (size_t k = 0; k < NGCOLS && !rc; k++) {
        const gcol *gc = &gcols[k];
        int rk = gc->rk;
        rc = sel_table(c, lm, count, rk, &sel);
        int direct = count == 1 && gc->stride == gc->esz;
        if (rc) buf = NULL;
        else if (direct) buf = colbase(gs[0], gc);
        else buf = stage ? stage : (stage = malloc(count > 1 ? bufsz : sel.rows ? sel.rows * gc->esz : 1));
        rc = agree(c, rc ? rc : buf ? 0 : nomem(c));
        if (!rc) rc = agree(c, get_col_sel(c, loc, where, gc->name, gc->t, total_rows(m, ngpu, rk), &sel, buf));
        uint64_t at = 0;
        for (size_t i = 0; !rc && !direct && i < count; i++) {
            unpack(gc, gs[i], lm[i].cnt[rk], buf + at * gc->esz);
            at += lm[i].cnt[rk];
        }
        if (count == 1 && !direct) { /* one GPU: sized per column */
            free(stage);
            stage = NULL;
        }
        buf = NULL;
        sel_free(&sel);
    }
    free(stage);
    stage = NULL;
    if (rc) goto out;
    {
        /* strings */
        rowsel ssel, csel;
        rc = sel_strings(c, lm, count, &ssel, &csel);
        uint64_t *so = rc ? NULL : malloc((ssel.rows ? ssel.rows : 1) * sizeof *so);
        char *chars = rc ? NULL : malloc(csel.rows ? csel.rows : 1);
        rc = agree(c, rc ? rc : so && chars ? 0 : nomem(c));
        if (!rc)
            rc = agree(c, get_col_sel(c, loc, where, "strings/offset", T_U64, total_rows(m, ngpu, RK_STR), &ssel, so));
        if (!rc)
            rc = agree(c, get_col_sel(c, loc, where, "strings/chars", T_U8, total_rows(m, ngpu, RK_CHAR), &csel, chars));
        uint64_t sat = 0, cat = 0;
        for (size_t i = 0; !rc && i < count; i++) {
            const uint64_t *o = so + sat;
            const char *ch = chars + cat;
            sat += lm[i].cnt[RK_STR];
            cat += lm[i].cnt[RK_CHAR];
            uint64_t nb = lm[i].cnt[RK_CHAR];
            for (uint64_t s = 0; s < lm[i].cnt[RK_STR] && !rc; s++) {
                uint64_t b = o[s], e = s + 1 < lm[i].cnt[RK_STR] ? o[s + 1] : nb;
                uint32_t id;
                if (b >= e || e > nb || ch[e - 1] != '\0' || memchr(ch + b, '\0', e - 1 - b) != NULL)
                    rc = fail(c, LSIM_EFORMAT, "%s/strings/offset of GPU %zu: string %llu is not a NUL-terminated "
                                               "range inside the GPU's %llu bytes of /strings/chars",
                              where, (list ? list[i] : first + i), (unsigned long long)s, (unsigned long long)nb);
                else if (lsim_strtab_intern(gs[i]->strings, ch + b, e - 1 - b, &id))
                    rc = nomem(c);
                else if (id != s)
                    rc = fail(c, LSIM_EFORMAT, "%s/strings of GPU %zu: string %llu repeats string %u", where,
                              (list ? list[i] : first + i), (unsigned long long)s, id);
            }
            if (!rc && lm[i].cnt[RK_STR] == 0 && nb != 0)
                rc = fail(c, LSIM_EFORMAT, "%s/gpus: GPU %zu has string bytes but no strings", where, (list ? list[i] : first + i));
        }
        free(so);
        free(chars);
        sel_free(&ssel);
        sel_free(&csel);
        rc = agree(c, rc);
        if (rc) goto out;
    }
    for (size_t i = 0; !rc && i < count; i++) {
        gs[i]->in_off[gs[i]->n] = gs[i]->nedges;
        rc = validate_graph(c, where, gs[i], (list ? list[i] : first + i));
        if (!rc && rebuild_out_csr(gs[i])) rc = nomem(c);
    }
    rc = agree(c, rc);
    if (rc) goto out;
    *out = count ? gs : NULL;
    *nout = count;
    if (!count) free(gs);
    gs = NULL;
out:
    if (gs) lsim_store_free_graphs(gs, count);
    sel_free(&sel);
    free_strs(src, ngpu);
    free(lm);
    free(m);
    return rc;
}

/* MPI reads of GPU rows: independent transfers when every rank's GPUs form
 * a few runs of consecutive GPUs (each rank then reads and inflates only
 * the chunks its rows lie in: on 1,024 synthesized GPUs at K = 2, load
 * 3.2 s -> 2.4 s against 4.3 s at K = 1), collective ones when some rank's
 * rows are scattered (round-robin: collective buffering reads each chunk
 * once). Every rank must use the same mode, hence the allreduce. */
static int read_transfers(sctx *c, size_t count, const size_t *list)
{
    if (!c->mpi) return 0;
    long runs = count ? 1 : 0, most = 0;
    for (size_t i = 1; list && i < count; i++)
        if (list[i] != list[i - 1] + 1) runs++;
    MPI_Allreduce(&runs, &most, 1, MPI_LONG, MPI_MAX, c->comm);
    int rc = 0;
    if (most <= 8 && H5Pset_dxpl_mpio(c->dxpl, H5FD_MPIO_INDEPENDENT) < 0)
        rc = fail(c, LSIM_EIO, "cannot set up independent transfers");
    return agree(c, rc);
}

static int read_graphs_impl(sctx *c, size_t first, size_t count, const size_t *list, lsim_graph ***out,
                            size_t *nout)
{
    int rc = open_file(c);
    if (!rc) rc = read_transfers(c, count, list);
    if (!rc) rc = check_root(c, LSIM_STORE_KIND_GRAPHS);
    if (!rc) rc = read_graph_tables(c, c->file, "", first, count, list, out, nout);
    return rc;
}

int lsim_store_read_graphs(const char *path, size_t first_gpu, size_t count, lsim_graph ***out, size_t *nout,
                           lsim_err *err)
{
    sctx c;
    *out = NULL;
    *nout = 0;
    ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = read_graphs_impl(&c, first_gpu, count, NULL, out, nout);
    return ctx_done(&c, rc, err);
}

int lsim_store_read_graphs_mpi(const char *path, MPI_Comm comm, size_t first_gpu, size_t count,
                               lsim_graph ***out, size_t *nout, lsim_err *err)
{
    sctx c;
    *out = NULL;
    *nout = 0;
    ctx_init(&c, path, 1, comm);
    int rc = read_graphs_impl(&c, first_gpu, count, NULL, out, nout);
    return ctx_done(&c, rc, err);
}

int lsim_store_read_graph_list_mpi(const char *path, MPI_Comm comm, const size_t *gpus, size_t n,
                                   lsim_graph ***out, size_t *nout, lsim_err *err)
{
    sctx c;
    *out = NULL;
    *nout = 0;
    ctx_init(&c, path, 1, comm);
    static const size_t none[1] = {0}; /* a list, empty: no GPUs on this rank */
    int rc = n && !gpus ? fail(&c, LSIM_EARG, "no GPU list given") : 0;
    rc = agree(&c, rc);
    if (!rc) rc = read_graphs_impl(&c, 0, n, n ? gpus : none, out, nout);
    return ctx_done(&c, rc, err);
}

int lsim_store_count_gpus(const char *path, size_t *n, lsim_err *err)
{
    sctx c;
    gmeta *m = NULL;
    *n = 0;
    ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = open_file(&c);
    if (!rc) rc = check_root(&c, LSIM_STORE_KIND_GRAPHS);
    if (!rc) rc = read_gpu_table(&c, c.file, "", &m, NULL, n);
    free(m);
    return ctx_done(&c, rc, err);
}

int lsim_store_gpu_table(const char *path, lsim_store_gpu_info **out, size_t *nout, lsim_err *err)
{
    sctx c;
    gmeta *m = NULL;
    char **src = NULL;
    size_t n = 0;
    *out = NULL;
    *nout = 0;
    ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = open_file(&c);
    if (!rc) rc = check_root(&c, LSIM_STORE_KIND_GRAPHS);
    if (!rc) rc = read_gpu_table(&c, c.file, "", &m, &src, &n);
    if (!rc) {
        lsim_store_gpu_info *t = calloc(n ? n : 1, sizeof *t);
        if (!t) rc = nomem(&c);
        for (size_t i = 0; !rc && i < n; i++) {
            t[i].rank = m[i].rank;
            t[i].source = src[i];
            src[i] = NULL;
            t[i].source_size = m[i].source_size;
            t[i].source_crc32 = m[i].source_crc32;
            t[i].nodes = m[i].cnt[RK_NODE];
            t[i].edges = m[i].cnt[RK_EDGE];
            t[i].procs = m[i].cnt[RK_PROC];
            t[i].iters = m[i].cnt[RK_ITER];
            t[i].colls = m[i].cnt[RK_COLL];
            t[i].strings = m[i].cnt[RK_STR];
        }
        if (!rc) {
            *out = t;
            *nout = n;
        } else {
            free(t);
        }
    }
    free_strs(src, n);
    free(m);
    return ctx_done(&c, rc, err);
}

void lsim_store_gpu_table_free(lsim_store_gpu_info *t, size_t n)
{
    if (!t) return;
    for (size_t i = 0; i < n; i++) free(t[i].source);
    free(t);
}

lsim_store_kind lsim_store_probe(const char *path)
{
    if (!path) return LSIM_STORE_NOT_HDF5;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return LSIM_STORE_NOT_HDF5;
    H5E_auto2_t fn;
    void *data;
    quiet_exit();
    H5Eget_auto2(H5E_DEFAULT, &fn, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    lsim_store_kind k = LSIM_STORE_NOT_HDF5;
    if (H5Fis_hdf5(path) > 0) {
        hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (f >= 0) {
            char *kind = NULL;
            k = LSIM_STORE_OTHER;
            if (get_attr_str(f, "kind", &kind) > 0) {
                if (!strcmp(kind, LSIM_STORE_KIND_GRAPHS)) k = LSIM_STORE_GRAPHS;
                else if (!strcmp(kind, LSIM_STORE_KIND_RESULTS)) k = LSIM_STORE_RESULTS;
            }
            free(kind);
            H5Fclose(f);
        }
    }
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, fn, data);
    return k;
}

/* ============================================================ results */

/* Per-GPU summary record of a run (/runs/NAME/gpus). */
typedef struct rmeta {
    int32_t rank;
    uint8_t has_cp;
    uint64_t node_offset, node_count, iter_offset, iter_count;
    uint64_t duty_actual_offset, duty_actual_count, duty_predicted_offset, duty_predicted_count;
    int64_t window_actual, window_predicted, window_actual_start, window_predicted_start;
    double window_error;
    int64_t bd_actual[4], bd_predicted[4];
    int64_t comm_wait_actual, comm_wait_predicted; /* breakdown exposed_comm_wait */
    uint8_t coupled;                               /* simulated with the job */
    int64_t clock_offset;
    int64_t bin_ns, max_abs_start_err, max_abs_end_err;
    uint64_t nodes_exact, gpu_nodes;
    uint64_t cp_offset, cp_count;
    int64_t cp_start, cp_end, cp_length;
    int64_t cp_by_cat[LSIM_CP_NCATS], cp_by_kind[LSIM_N_NKINDS], cp_by_class[LSIM_E_NCLASSES];
    uint64_t cp_edges_by_class[LSIM_E_NCLASSES];
    uint32_t cp_top[LSIM_CP_TOP];
    int64_t cp_top_time[LSIM_CP_TOP];
    uint64_t cp_ntop;
} rmeta;

#define RC1(nm, f, t) {nm, t, 1, offsetof(rmeta, f), FSZ(rmeta, f)}
#define RCA(nm, f, t, w) {nm, t, w, offsetof(rmeta, f), FSZ(rmeta, f)}

static const mcol run_gpu_cols[] = {
    RC1("rank", rank, T_I32),
    RC1("node_offset", node_offset, T_U64),
    RC1("node_count", node_count, T_U64),
    RC1("iter_offset", iter_offset, T_U64),
    RC1("iter_count", iter_count, T_U64),
    RC1("duty_actual_offset", duty_actual_offset, T_U64),
    RC1("duty_actual_count", duty_actual_count, T_U64),
    RC1("duty_predicted_offset", duty_predicted_offset, T_U64),
    RC1("duty_predicted_count", duty_predicted_count, T_U64),
    RC1("window_actual", window_actual, T_I64),
    RC1("window_predicted", window_predicted, T_I64),
    RC1("window_actual_start", window_actual_start, T_I64),
    RC1("window_predicted_start", window_predicted_start, T_I64),
    RC1("window_error", window_error, T_F64),
    RCA("breakdown_actual", bd_actual, T_I64, 4),
    RCA("breakdown_predicted", bd_predicted, T_I64, 4),
    RC1("exposed_comm_wait_actual", comm_wait_actual, T_I64),
    RC1("exposed_comm_wait_predicted", comm_wait_predicted, T_I64),
    RC1("coupled", coupled, T_U8),
    RC1("clock_offset", clock_offset, T_I64),
    RC1("bin_ns", bin_ns, T_I64),
    RC1("max_abs_start_err", max_abs_start_err, T_I64),
    RC1("max_abs_end_err", max_abs_end_err, T_I64),
    RC1("nodes_exact", nodes_exact, T_U64),
    RC1("gpu_nodes", gpu_nodes, T_U64),
    RC1("has_critical_path", has_cp, T_U8),
    RC1("cp_offset", cp_offset, T_U64),
    RC1("cp_count", cp_count, T_U64),
    RC1("cp_start", cp_start, T_I64),
    RC1("cp_end", cp_end, T_I64),
    RC1("cp_length", cp_length, T_I64),
    RCA("cp_by_cat", cp_by_cat, T_I64, LSIM_CP_NCATS),
    RCA("cp_by_kind", cp_by_kind, T_I64, LSIM_N_NKINDS),
    RCA("cp_by_class", cp_by_class, T_I64, LSIM_E_NCLASSES),
    RCA("cp_edges_by_class", cp_edges_by_class, T_U64, LSIM_E_NCLASSES),
    RCA("cp_top", cp_top, T_U32, LSIM_CP_TOP),
    RCA("cp_top_time", cp_top_time, T_I64, LSIM_CP_TOP),
    RC1("cp_ntop", cp_ntop, T_U64),
};
#define NRUNGPUCOLS (sizeof run_gpu_cols / sizeof run_gpu_cols[0])

/* One iteration row (/runs/NAME/iterations). */
typedef struct riter {
    uint32_t gpu, name_id;
    int64_t actual, predicted;
    double error;
    int64_t bd_actual[4], bd_predicted[4];
} riter;

#define RI(nm, f, t, w) {nm, t, w, offsetof(riter, f), FSZ(riter, f)}
static const mcol run_iter_cols[] = {
    RI("gpu", gpu, T_U32, 1),
    RI("name_id", name_id, T_U32, 1),
    RI("actual", actual, T_I64, 1),
    RI("predicted", predicted, T_I64, 1),
    RI("error", error, T_F64, 1),
    RI("breakdown_actual", bd_actual, T_I64, 4),
    RI("breakdown_predicted", bd_predicted, T_I64, 4),
};
#define NRUNITERCOLS (sizeof run_iter_cols / sizeof run_iter_cols[0])

static void bd_put(int64_t o[4], const lsim_breakdown *b)
{
    o[0] = b->exposed_compute;
    o[1] = b->overlapped;
    o[2] = b->exposed_comm;
    o[3] = b->other;
}

static void bd_get(lsim_breakdown *b, const int64_t o[4])
{
    b->exposed_compute = o[0];
    b->overlapped = o[1];
    b->exposed_comm = o[2];
    b->other = o[3];
}

/* A column of fixed-length strings (as wide as the longest anywhere): this
 * process's rows sel (nloc in all) of total. */
static int put_strings(sctx *c, hid_t loc, const char *where, const char *name, const char *const *s, size_t nloc,
                       uint64_t total, const rowsel *sel, uint64_t chunk)
{
    uint64_t w = 0;
    for (size_t i = 0; i < nloc; i++)
        if (s[i] && strlen(s[i]) > w) w = strlen(s[i]);
    if (c->mpi) MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_UINT64_T, MPI_MAX, c->comm);
    char *buf = calloc(nloc ? nloc : 1, w + 1);
    int rc = agree(c, buf ? 0 : nomem(c));
    if (rc) return rc;
    for (size_t i = 0; i < nloc; i++)
        if (s[i]) memcpy(buf + i * (w + 1), s[i], strlen(s[i]));
    hid_t st = str_type(w);
    rc = agree(c, st < 0 ? fail(c, LSIM_EIO, "cannot create a string type") : 0);
    if (!rc) rc = agree(c, put_raw(c, loc, where, name, st, st, 1, total, chunk, sel, buf));
    if (st >= 0) H5Tclose(st);
    free(buf);
    return rc;
}

/* Read rows [first, first + cnt) of a fixed-length string column of total rows. */
static int get_strings(sctx *c, hid_t loc, const char *where, const char *name, uint64_t total, uint64_t first,
                       size_t cnt, char ***out)
{
    size_t ssz = 0;
    char **v = NULL, *sb = NULL;
    hid_t st = -1;
    *out = NULL;
    hid_t d = open_col(c, loc, where, name, H5T_STRING, 1, total, &ssz);
    int rc = agree(c, d < 0 ? c->e.code : 0);
    if (!rc) {
        sb = calloc(cnt ? cnt : 1, ssz + 1);
        v = calloc(cnt ? cnt : 1, sizeof *v);
        st = str_type(ssz);
        rc = agree(c, sb && v && st >= 0 ? 0 : nomem(c));
    }
    if (!rc) rc = agree(c, read_rows(c, d, where, name, st, 1, first, cnt, sb));
    for (size_t i = 0; !rc && i < cnt; i++) {
        if (!(v[i] = calloc(1, ssz + 1))) rc = nomem(c);
        else memcpy(v[i], sb + i * (ssz + 1), ssz);
    }
    rc = agree(c, rc);
    if (st >= 0) H5Tclose(st);
    if (d >= 0) H5Dclose(d);
    free(sb);
    if (rc) {
        free_strs(v, cnt);
        return rc;
    }
    *out = v;
    return 0;
}

static int valid_run_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > RUN_NAME_MAX || !strcmp(s, ".") || !strcmp(s, "..")) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("_-.+=,", ch)))
            return 0;
    }
    return 1;
}

/* Column names of 2-D datasets, for readers. */
static int label(hid_t loc, const char *dset, const char *const *names, size_t n)
{
    hid_t d = H5Dopen2(loc, dset, H5P_DEFAULT);
    if (d < 0) return -1;
    int rc = put_attr_strs(d, "columns", names, n);
    H5Dclose(d);
    return rc;
}

static int label_run(hid_t run)
{
    static const char *const bd[4] = {"exposed_compute", "overlapped", "exposed_comm", "other"};
    const char *cat[LSIM_CP_NCATS], *kind[LSIM_N_NKINDS], *cls[LSIM_E_NCLASSES];
    for (int i = 0; i < LSIM_CP_NCATS; i++) cat[i] = lsim_cp_cat_name((lsim_cp_cat)i);
    for (int i = 0; i < LSIM_N_NKINDS; i++) kind[i] = lsim_node_kind_name((lsim_node_kind)i);
    for (int i = 0; i < LSIM_E_NCLASSES; i++) cls[i] = lsim_edge_class_name((lsim_edge_class)i);
    int rc = 0;
    rc |= label(run, "gpus/breakdown_actual", bd, 4);
    rc |= label(run, "gpus/breakdown_predicted", bd, 4);
    rc |= label(run, "iterations/breakdown_actual", bd, 4);
    rc |= label(run, "iterations/breakdown_predicted", bd, 4);
    rc |= label(run, "gpus/cp_by_cat", cat, LSIM_CP_NCATS);
    rc |= label(run, "gpus/cp_by_kind", kind, LSIM_N_NKINDS);
    rc |= label(run, "gpus/cp_by_class", cls, LSIM_E_NCLASSES);
    rc |= label(run, "gpus/cp_edges_by_class", cls, LSIM_E_NCLASSES);
    return rc;
}

static void iso_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tmv;
    if (gmtime_r(&t, &tmv)) strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    else snprintf(buf, len, "unknown");
}

static int write_provenance(sctx *c, hid_t run, const lsim_store_run_info *info)
{
    /* attributes are written collectively with the same value everywhere:
     * rank 0's host and clock */
    char host[256] = "", now[64];
    if (info && info->host) snprintf(host, sizeof host, "%s", info->host);
    else if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    iso_now(now, sizeof now);
    if (c->mpi) {
        MPI_Bcast(host, (int)sizeof host, MPI_CHAR, 0, c->comm);
        MPI_Bcast(now, (int)sizeof now, MPI_CHAR, 0, c->comm);
    }
    hid_t p = H5Gcreate2(run, "provenance", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (p < 0) return fail(c, LSIM_EIO, "cannot create the run's provenance group");
    int bad = 0;
    bad |= put_attr_str(p, "lumosim_version", LSIM_VERSION);
    bad |= put_attr_str(p, "command_line", info && info->command_line ? info->command_line : "");
    bad |= put_attr_str(p, "host", host);
    bad |= put_attr_str(p, "created", now);
    bad |= put_attr_i32(p, "mpi_ranks", info && info->mpi_ranks > 0 ? info->mpi_ranks : c->size);
    if (info && info->mapping) bad |= put_attr_str(p, "mapping", info->mapping);
    if (info && info->config) bad |= put_attr_str(p, "config", info->config);
    if (info && info->wall_seconds > 0) bad |= put_attr_f64(p, "wall_seconds", info->wall_seconds);
    if (info && info->nphases && info->phase_names && info->phase_seconds) {
        bad |= put_attr_strs(p, "phase_names", info->phase_names, info->nphases);
        bad |= put_attr(p, "phase_seconds", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, info->nphases, info->phase_seconds);
    }
    H5Gclose(p);
    return bad ? fail(c, LSIM_EIO, "cannot write the run's provenance attributes") : 0;
}

/* Offsets of the flat run tables, as prefix sums over all GPUs. */
static void run_offsets(rmeta *m, size_t n)
{
    uint64_t nn = 0, ni = 0, nda = 0, ndp = 0, ncp = 0;
    for (size_t i = 0; i < n; i++) {
        m[i].node_offset = nn;
        m[i].iter_offset = ni;
        m[i].duty_actual_offset = nda;
        m[i].duty_predicted_offset = ndp;
        m[i].cp_offset = ncp;
        nn += m[i].node_count;
        ni += m[i].iter_count;
        nda += m[i].duty_actual_count;
        ndp += m[i].duty_predicted_count;
        ncp += m[i].cp_count;
    }
}

/* Concatenate a per-GPU array field of the local items (k selects it) into
 * buf, as rows [first row of local GPU 0, ...). */
enum { F_START, F_END, F_BIND_START, F_BIND_END, F_DUTY_A, F_DUTY_P, F_CP_NODE, F_CP_VIA };

static void gather_field(const lsim_replay_item *items, const rmeta *lm, size_t nloc, int k, char *buf)
{
    uint64_t base = 0;
    for (size_t i = 0; i < nloc; i++) {
        const lsim_replay_item *it = &items[i];
        const void *src = NULL;
        uint64_t rows = 0;
        size_t es = 8;
        switch (k) {
        case F_START: src = it->start, rows = lm[i].node_count; break;
        case F_END: src = it->end, rows = lm[i].node_count; break;
        case F_BIND_START: src = it->bind_start, rows = lm[i].node_count; break;
        case F_BIND_END: src = it->bind_end, rows = lm[i].node_count; break;
        case F_DUTY_A: src = it->r->duty_actual, rows = lm[i].duty_actual_count; break;
        case F_DUTY_P: src = it->r->duty_predicted, rows = lm[i].duty_predicted_count; break;
        case F_CP_NODE: src = it->cp ? it->cp->nodes : NULL, rows = lm[i].cp_count, es = 4; break;
        default: src = it->cp ? it->cp->via : NULL, rows = lm[i].cp_count; break;
        }
        if (rows) memcpy(buf + base * es, src, rows * es);
        base += rows;
    }
}

/* Write one run's datasets under `run`. This process holds items[0..nloc),
 * local GPU i being GPU gpu_at(c, gfirst, i) of the run (serial: all of
 * them, in order). */
static int write_run(sctx *c, hid_t run, const char *where, const lsim_replay_item *items, size_t nloc,
                     const lsim_store_run_info *info)
{
    int rc = check_cols(c, run_gpu_cols, NRUNGPUCOLS);
    if (!rc) rc = check_cols(c, run_iter_cols, NRUNITERCOLS);
    rc = agree(c, rc);
    if (rc) return rc;
    rmeta *lm = calloc(nloc ? nloc : 1, sizeof *lm), *m = NULL;
    riter *ri = NULL;
    const char **names = NULL, **src = NULL;
    char *buf = NULL;
    size_t ngpu = 0, gfirst = 0;
    rowsel sg, si, sn, sda, sdp, scp;
    sel_one(&sg, 0, 0);
    sel_one(&si, 0, 0);
    sel_one(&sn, 0, 0);
    sel_one(&sda, 0, 0);
    sel_one(&sdp, 0, 0);
    sel_one(&scp, 0, 0);
    rc = agree(c, lm ? 0 : nomem(c));
    if (rc) return rc;
    int bind = 1, lat = nloc ? (int)items[0].g->latency : -2;
    for (size_t i = 0; i < nloc; i++) {
        const lsim_replay_item *it = &items[i];
        const lsim_rank_report *r = it->r;
        rmeta *x = &lm[i];
        if (!it->bind_start || !it->bind_end) bind = 0;
        x->rank = it->g->rank;
        x->node_count = it->g->n;
        x->iter_count = r->niters;
        x->duty_actual_count = r->duty_actual ? r->nbins_actual : 0;
        x->duty_predicted_count = r->duty_predicted ? r->nbins_predicted : 0;
        x->window_actual = r->window_actual;
        x->window_predicted = r->window_predicted;
        x->window_actual_start = r->window_actual_start;
        x->window_predicted_start = r->window_predicted_start;
        x->window_error = lsim_rel_err(r->window_actual, r->window_predicted);
        bd_put(x->bd_actual, &r->bd_actual);
        bd_put(x->bd_predicted, &r->bd_predicted);
        x->comm_wait_actual = r->bd_actual.exposed_comm_wait;
        x->comm_wait_predicted = r->bd_predicted.exposed_comm_wait;
        x->coupled = (uint8_t)(it->coupled != 0);
        x->clock_offset = it->clock_offset;
        x->bin_ns = r->bin_ns;
        x->max_abs_start_err = r->max_abs_start_err;
        x->max_abs_end_err = r->max_abs_end_err;
        x->nodes_exact = r->nodes_exact;
        x->gpu_nodes = r->gpu_nodes;
        x->cp_length = -1;
        if (it->cp) {
            const lsim_critical_path *cp = it->cp;
            x->has_cp = 1;
            x->cp_count = cp->n;
            x->cp_start = cp->start;
            x->cp_end = cp->end;
            x->cp_length = cp->length;
            memcpy(x->cp_by_cat, cp->by_cat, sizeof x->cp_by_cat);
            memcpy(x->cp_by_kind, cp->by_kind, sizeof x->cp_by_kind);
            memcpy(x->cp_by_class, cp->by_class, sizeof x->cp_by_class);
            memcpy(x->cp_edges_by_class, cp->edges_by_class, sizeof x->cp_edges_by_class);
            x->cp_ntop = cp->ntop > LSIM_CP_TOP ? LSIM_CP_TOP : cp->ntop;
            for (size_t k = 0; k < x->cp_ntop; k++) {
                x->cp_top[k] = cp->top[k];
                x->cp_top_time[k] = cp->top_time[k];
            }
        }
        if ((int)it->g->latency != lat) lat = -1;
    }
    if (c->mpi) {
        /* every rank must agree on which datasets exist and on the mode */
        MPI_Allreduce(MPI_IN_PLACE, &bind, 1, MPI_INT, MPI_MIN, c->comm);
        int lo = lat == -2 ? INT_MAX : lat, hi = lat == -2 ? INT_MIN : lat;
        MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, c->comm);
        MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, c->comm);
        lat = lo == INT_MAX ? 0 : lo != hi ? -1 : lo;
    } else if (lat == -2) {
        lat = 0;
    }
    {
        void *all = NULL;
        rc = agree(c, gather_records(c, lm, nloc, sizeof *lm, &all, &ngpu, &gfirst));
        m = all;
        if (rc) goto out;
        run_offsets(m, ngpu);
        for (size_t i = 0; i < nloc; i++) lm[i] = m[gpu_at(c, gfirst, i)];
    }
    /* global totals, chunk sizes and this process's first rows */
    uint64_t tn = 0, ti = 0, tda = 0, tdp = 0, tcp = 0, maxn = 0;
    for (size_t i = 0; i < ngpu; i++) {
        tn += m[i].node_count;
        ti += m[i].iter_count;
        tda += m[i].duty_actual_count;
        tdp += m[i].duty_predicted_count;
        tcp += m[i].cp_count;
        if (m[i].node_count > maxn) maxn = m[i].node_count;
    }
    uint64_t ln = 0, li = 0, lda = 0, ldp = 0, lcp = 0;
    for (size_t i = 0; i < nloc; i++) {
        ln += lm[i].node_count;
        li += lm[i].iter_count;
        lda += lm[i].duty_actual_count;
        ldp += lm[i].duty_predicted_count;
        lcp += lm[i].cp_count;
    }
    uint64_t nchunk = min_u64(maxn ? maxn : 1, CHUNK_MAX_ROWS);
    /* this process's rows of each flat table: its GPUs' ranges, in GPU order */
    for (size_t i = 0; i < nloc && !rc; i++) {
        const rmeta *x = &lm[i];
        if (sel_add(c, &sg, gpu_at(c, gfirst, i), 1) || sel_add(c, &si, x->iter_offset, x->iter_count) ||
            sel_add(c, &sn, x->node_offset, x->node_count) ||
            sel_add(c, &sda, x->duty_actual_offset, x->duty_actual_count) ||
            sel_add(c, &sdp, x->duty_predicted_offset, x->duty_predicted_count) ||
            sel_add(c, &scp, x->cp_offset, x->cp_count))
            rc = LSIM_ENOMEM;
    }
    rc = agree(c, rc);
    if (rc) goto out;

    rc = put_records(c, run, where, "gpus", run_gpu_cols, NRUNGPUCOLS, lm, sizeof *lm, ngpu, &sg, nloc,
                     min_u64(ngpu ? ngpu : 1, CHUNK_MAX_ROWS));
    if (rc) goto out;
    src = calloc(nloc ? nloc : 1, sizeof *src);
    rc = agree(c, src ? 0 : nomem(c));
    if (rc) goto out;
    for (size_t i = 0; i < nloc; i++) src[i] = items[i].g->source ? items[i].g->source : "";
    rc = put_strings(c, run, where, "gpus/source", src, nloc, ngpu, &sg, min_u64(ngpu ? ngpu : 1, CHUNK_MAX_ROWS));
    if (rc) goto out;

    /* iterations */
    ri = calloc(li ? li : 1, sizeof *ri);
    names = calloc(li ? li : 1, sizeof *names);
    rc = agree(c, ri && names ? 0 : nomem(c));
    if (rc) goto out;
    for (size_t i = 0, row0 = 0; i < nloc; i++) {
        const lsim_rank_report *r = items[i].r;
        for (uint32_t k = 0; k < r->niters; k++) {
            uint64_t row = row0 + k;
            riter *x = &ri[row];
            const lsim_iter_report *it = &r->iters[k];
            x->gpu = (uint32_t)gpu_at(c, gfirst, i);
            x->name_id = it->name;
            x->actual = it->actual;
            x->predicted = it->predicted;
            x->error = lsim_rel_err(it->actual, it->predicted);
            bd_put(x->bd_actual, &it->bd_actual);
            bd_put(x->bd_predicted, &it->bd_predicted);
            const char *s = items[i].g->strings ? lsim_strtab_get(items[i].g->strings, it->name) : NULL;
            names[row] = s ? s : "";
        }
        row0 += r->niters;
    }
    uint64_t ichunk = min_u64(ti ? ti : 1, CHUNK_MAX_ROWS);
    rc = put_records(c, run, where, "iterations", run_iter_cols, NRUNITERCOLS, ri, sizeof *ri, ti, &si, li, ichunk);
    if (!rc) rc = put_strings(c, run, where, "iterations/name", names, li, ti, &si, ichunk);
    if (rc) goto out;

    /* flat per-node / per-bin / per-path-step columns */
    {
        uint64_t mx = ln;
        if (lda > mx) mx = lda;
        if (ldp > mx) mx = ldp;
        if (lcp > mx) mx = lcp;
        buf = malloc((mx ? mx : 1) * 8);
        rc = agree(c, buf ? 0 : nomem(c));
        if (rc) goto out;
        struct {
            const char *name;
            int field, t;
            uint64_t total;
            const rowsel *sel;
            uint64_t chunk;
        } cols[] = {
            {"duty/actual", F_DUTY_A, T_F64, tda, &sda, min_u64(tda ? tda : 1, CHUNK_MAX_ROWS)},
            {"duty/predicted", F_DUTY_P, T_F64, tdp, &sdp, min_u64(tdp ? tdp : 1, CHUNK_MAX_ROWS)},
            {"nodes/start", F_START, T_I64, tn, &sn, nchunk},
            {"nodes/end", F_END, T_I64, tn, &sn, nchunk},
            {"nodes/bind_start", F_BIND_START, T_I64, tn, &sn, nchunk},
            {"nodes/bind_end", F_BIND_END, T_I64, tn, &sn, nchunk},
            {"critical_path/node", F_CP_NODE, T_U32, tcp, &scp, min_u64(tcp ? tcp : 1, CHUNK_MAX_ROWS)},
            {"critical_path/via", F_CP_VIA, T_I64, tcp, &scp, min_u64(tcp ? tcp : 1, CHUNK_MAX_ROWS)},
        };
        for (size_t k = 0; k < sizeof cols / sizeof cols[0] && !rc; k++) {
            if (!bind && (cols[k].field == F_BIND_START || cols[k].field == F_BIND_END)) continue;
            gather_field(items, lm, nloc, cols[k].field, buf);
            rc = agree(c, put_col(c, run, where, cols[k].name, cols[k].t, 1, cols[k].total, cols[k].chunk, cols[k].sel,
                                  buf));
        }
        free(buf);
        buf = NULL;
        if (rc) goto out;
    }
    rc = agree(c, label_run(run) ? fail(c, LSIM_EIO, "cannot label %s columns", where) : 0);
    if (rc) goto out;

    /* embedded graphs */
    int embed = info && info->embed_graphs;
    if (embed) {
        gmeta *gl = calloc(nloc ? nloc : 1, sizeof *gl), *gm = NULL;
        lsim_graph **gs = calloc(nloc ? nloc : 1, sizeof *gs);
        size_t ng = 0, gf = 0;
        char gw[512];
        snprintf(gw, sizeof gw, "%s/graph", where);
        rc = gl && gs ? 0 : nomem(c);
        for (size_t i = 0; !rc && i < nloc; i++) {
            if (!items[i].g->strings) rc = fail(c, LSIM_EARG, "graph %zu has no string table", gpu_at(c, gfirst, i));
            meta_from_graph(&gl[i], items[i].g);
            gs[i] = (lsim_graph *)items[i].g; /* only read */
        }
        rc = agree(c, rc);
        if (!rc) rc = gather_meta(c, gl, nloc, &gm, &ng, &gf);
        hid_t gg = -1;
        int copied = info->graphs_from != NULL; /* the flat tables were copied by prepare_results_tmp */
        if (!rc) {
            gg = copied ? H5Gopen2(run, "graph", H5P_DEFAULT)
                        : H5Gcreate2(run, "graph", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            rc = agree(c, gg < 0 ? fail(c, LSIM_EIO, "cannot create %s", gw) : 0);
        }
        if (!rc) rc = write_graph_tables(c, gg, gw, gs, nloc, gm, ng, gf, src, !copied);
        /* copied tables must hold exactly these GPUs' rows */
        for (size_t k = 0; !rc && copied && k < NGCOLS; k++) {
            hid_t d = open_col(c, gg, gw, gcols[k].name, H5T_INTEGER, 1, total_rows(gm, ng, gcols[k].rk), NULL);
            rc = agree(c, d < 0 ? c->e.code : 0);
            if (d >= 0) H5Dclose(d);
        }
        if (!rc) rc = agree(c, label_graph_tables(gg) ? fail(c, LSIM_EIO, "cannot label %s columns", gw) : 0);
        if (gg >= 0) H5Gclose(gg);
        free(gl);
        free(gm);
        free(gs);
        if (rc) goto out;
    }
    /* attributes: deterministic counters on the run, the rest in provenance */
    if (put_attr_u64(run, "ngpus", ngpu) || put_attr_u64(run, "nnodes", tn) || put_attr_u64(run, "events", tn) ||
        put_attr_str(run, "latency_mode", lat < 0 ? "mixed" : latency_name(lat)) ||
        put_attr_i32(run, "graphs_embedded", embed))
        rc = fail(c, LSIM_EIO, "cannot write the attributes of %s", where);
    rc = agree(c, rc);
    if (!rc) rc = agree(c, write_provenance(c, run, info));
out:
    sel_free(&sg);
    sel_free(&si);
    sel_free(&sn);
    sel_free(&sda);
    sel_free(&sdp);
    sel_free(&scp);
    free(buf);
    free(lm);
    free(m);
    free(ri);
    free(names);
    free(src);
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
static int list_links(sctx *c, hid_t loc, char ***out, size_t *n)
{
    H5G_info_t gi;
    *out = NULL;
    *n = 0;
    if (H5Gget_info(loc, &gi) < 0) return fail(c, LSIM_EFORMAT, "cannot list the runs");
    if (gi.nlinks > 1000000) return fail(c, LSIM_EFORMAT, "the run list is damaged");
    char **v = calloc(gi.nlinks ? gi.nlinks : 1, sizeof *v);
    if (!v) return nomem(c);
    for (hsize_t i = 0; i < gi.nlinks; i++) {
        ssize_t len = H5Lget_name_by_idx(loc, ".", H5_INDEX_NAME, H5_ITER_NATIVE, i, NULL, 0, H5P_DEFAULT);
        if (len < 0 || !(v[i] = calloc(1, (size_t)len + 1)) ||
            H5Lget_name_by_idx(loc, ".", H5_INDEX_NAME, H5_ITER_NATIVE, i, v[i], (size_t)len + 1, H5P_DEFAULT) < 0) {
            free_strs(v, (size_t)i + 1);
            return len < 0 ? fail(c, LSIM_EFORMAT, "cannot list the runs") : nomem(c);
        }
    }
    qsort(v, (size_t)gi.nlinks, sizeof *v, cmp_name);
    *out = v;
    *n = (size_t)gi.nlinks;
    return 0;
}

static hid_t fapl_v110(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) < 0) {
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}

/* The run's embedded graphs are the graphs of a store, unchanged since they
 * were read (lsim_store_run_info.graphs_from): copy the store's flat tables
 * into /runs/NAME/graph with H5Ocopy, which moves the compressed chunks as
 * they are. Writing them again from memory decompressed nothing but had to
 * deflate and checksum every row (about 6 GB for a 4,096-GPU GPT-3 job,
 * most of the result write's time and a buffer as large as the largest
 * column). The datasets' values are the same either way; /gpus is still
 * written from memory (its source size and checksum describe the run, not
 * the store). Rank 0 alone, POSIX driver, into the temporary file. */
static int copy_graph_tables(sctx *c, hid_t druns, const char *run_name, const char *store)
{
    static const char *const groups[] = {"nodes", "edges", "procs", "iters", "colls", "strings"};
    hid_t src = H5Fopen(store, H5F_ACC_RDONLY, H5P_DEFAULT), run = -1, gg = -1;
    int rc = 0;
    if (src < 0) return fail(c, LSIM_EIO, "cannot reopen the graph store %s to copy its graphs", store);
    run = H5Gcreate2(druns, run_name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    gg = run >= 0 ? H5Gcreate2(run, "graph", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    if (gg < 0) rc = fail(c, LSIM_EIO, "cannot create run group '%s'", run_name);
    for (size_t k = 0; !rc && k < sizeof groups / sizeof *groups; k++)
        if (H5Ocopy(src, groups[k], gg, groups[k], H5P_DEFAULT, H5P_DEFAULT) < 0)
            rc = fail(c, LSIM_EIO, "cannot copy /%s of the graph store %s", groups[k], store);
    if (gg >= 0) H5Gclose(gg);
    if (run >= 0) H5Gclose(run);
    H5Fclose(src);
    return rc;
}

/* Rank 0 alone (POSIX driver): create TMP holding the root attributes,
 * /runs and every run of an existing result file at PATH except the one
 * being replaced. On failure TMP is removed. */
static int prepare_results_tmp(sctx *c, const char *tmp, const char *run_name, const lsim_store_run_info *info)
{
    char **runs = NULL;
    size_t nruns = 0;
    hid_t src = -1, sruns = -1, dst = -1, druns = -1, fapl = -1;
    int rc = 0;
    struct stat st;
    if (stat(c->path, &st) == 0) {
        if (H5Fis_hdf5(c->path) <= 0 || (src = H5Fopen(c->path, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0)
            return fail(c, LSIM_EFORMAT, "exists and is not a lumosim result file (not an HDF5 file or truncated); "
                                         "not overwritten");
        hid_t keep = c->file;
        int keep_mpi = c->mpi;
        c->file = src;
        c->mpi = 0; /* rank 0 alone: no agreement here */
        rc = check_root(c, LSIM_STORE_KIND_RESULTS);
        c->file = keep;
        c->mpi = keep_mpi;
        if (!rc) {
            sruns = H5Gopen2(src, "runs", H5P_DEFAULT);
            rc = sruns < 0 ? fail(c, LSIM_EFORMAT, "result file without a /runs group")
                           : list_links(c, sruns, &runs, &nruns);
        }
        for (size_t i = 0; !rc && i < nruns; i++)
            if (!strcmp(runs[i], run_name) && !(info && info->replace))
                rc = fail(c, LSIM_EARG, "already holds a run named '%s' (choose another name)", run_name);
        if (rc) goto out;
    }
    fapl = fapl_v110();
    if (fapl < 0) {
        rc = fail(c, LSIM_EIO, "cannot create HDF5 property list");
        goto out;
    }
    dst = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (dst < 0) {
        FILE *f = fopen(tmp, "wb");
        const char *why = f ? "HDF5 cannot create it" : strerror(errno);
        if (f) fclose(f);
        rc = lsim_err_set(&c->e, LSIM_EIO, "%s: cannot create %s: %s", c->path, tmp, why);
        goto out;
    }
    {
        hid_t keep = c->file;
        c->file = dst;
        int keep_mpi = c->mpi;
        c->mpi = 0;
        rc = write_root_attrs(c, LSIM_STORE_KIND_RESULTS, NULL, NULL);
        c->file = keep;
        c->mpi = keep_mpi;
    }
    if (!rc && (druns = H5Gcreate2(dst, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0)
        rc = fail(c, LSIM_EIO, "cannot create /runs in %s", tmp);
    for (size_t i = 0; !rc && i < nruns; i++) {
        if (!strcmp(runs[i], run_name)) continue; /* replaced */
        if (H5Ocopy(sruns, runs[i], druns, runs[i], H5P_DEFAULT, H5P_DEFAULT) < 0)
            rc = fail(c, LSIM_EIO, "cannot copy run '%s' into the new file", runs[i]);
    }
    if (!rc && info && info->embed_graphs && info->graphs_from) rc = copy_graph_tables(c, druns, run_name, info->graphs_from);
out:
    if (druns >= 0) H5Gclose(druns);
    if (dst >= 0 && H5Fclose(dst) < 0 && !rc) rc = fail(c, LSIM_EIO, "cannot write %s (disk full?)", tmp);
    if (fapl >= 0) H5Pclose(fapl);
    if (sruns >= 0) H5Gclose(sruns);
    if (src >= 0) H5Fclose(src);
    free_strs(runs, nruns);
    if (rc && dst >= 0) remove(tmp);
    return rc;
}

static int write_results_impl(sctx *c, const char *run_name, const lsim_replay_item *items, size_t n,
                              const lsim_store_run_info *info)
{
    char tmp[4096];
    hid_t runs = -1, run = -1, fapl = -1;
    int rc = 0;
    if (!valid_run_name(run_name))
        rc = fail(c, LSIM_EARG, "bad run name '%s' (1..%d of letters, digits, _ - . + = ,)", run_name ? run_name : "",
                  RUN_NAME_MAX);
    else if (n && !items)
        rc = fail(c, LSIM_EARG, "no replay items given");
    for (size_t i = 0; !rc && i < n; i++)
        if (!items[i].g || !items[i].r || !items[i].start || !items[i].end)
            rc = fail(c, LSIM_EARG, "replay item %zu lacks its graph, report or times", i);
    if (!rc && strlen(c->path) + 32 > sizeof tmp) rc = fail(c, LSIM_EARG, "path too long");
    rc = agree(c, rc);
    if (rc) return rc;
    /* 0. rank 0 locks the archive: the new file is built from the old one,
     * so a second writer must wait for the first one's rename */
    if ((rc = begin_tmp(c, LSIM_OUT_LOCK, tmp, sizeof tmp))) return rc;
    /* 1. rank 0 copies the runs to keep into the temporary file */
    if (c->rank == 0) rc = prepare_results_tmp(c, tmp, run_name, info);
    rc = agree(c, rc);
    if (rc) {
        if (c->rank == 0) lsim_out_abort(c->out);
        c->out = NULL;
        return rc;
    }
    /* 2. everyone adds the new run */
    fapl = fapl_v110();
    if (fapl < 0) rc = fail(c, LSIM_EIO, "cannot create HDF5 property list");
    if (!rc && c->mpi &&
        (H5Pset_fapl_mpio(fapl, c->comm, MPI_INFO_NULL) < 0 || H5Pset_all_coll_metadata_ops(fapl, 1) < 0 ||
         H5Pset_coll_metadata_write(fapl, 1) < 0))
        rc = fail(c, LSIM_EIO, "cannot set up MPI-IO");
    rc = agree(c, rc);
    if (!rc) {
        c->file = H5Fopen(tmp, H5F_ACC_RDWR, fapl);
        rc = agree(c, c->file < 0 ? fail(c, LSIM_EIO, "cannot reopen %s", tmp) : 0);
    }
    if (!rc && c->mpi) rc = collective_transfers(c);
    if (!rc) {
        runs = H5Gopen2(c->file, "runs", H5P_DEFAULT);
        /* with graphs copied from a store, step 1 created the run group */
        if (info && info->embed_graphs && info->graphs_from)
            run = runs >= 0 ? H5Gopen2(runs, run_name, H5P_DEFAULT) : -1;
        else
            run = runs >= 0 ? H5Gcreate2(runs, run_name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
        rc = agree(c, run < 0 ? fail(c, LSIM_EIO, "cannot create run group '%s'", run_name) : 0);
    }
    if (!rc) {
        char where[300];
        snprintf(where, sizeof where, "/runs/%s", run_name);
        rc = write_run(c, run, where, items, n, info);
    }
    if (run >= 0) H5Gclose(run);
    if (runs >= 0) H5Gclose(runs);
    if (fapl >= 0) H5Pclose(fapl);
    /* 3. close, rename (rank 0) or remove */
    return finish_tmp(c, tmp, rc);
}

/* The entry points of the result writer: serial (mpi 0), collective in
 * rank order (mapped 0), or collective under a GPU-to-rank mapping (gpus:
 * this rank's GPUs, strictly ascending). */
static int write_results_entry(const char *path, int mpi, MPI_Comm comm, const char *run_name,
                               const lsim_replay_item *items, int mapped, const size_t *gpus, size_t n,
                               const lsim_store_run_info *info, lsim_err *err)
{
    static const size_t none[1] = {0};
    sctx c;
    ctx_init(&c, path, mpi, comm);
    if (info) {
        lsim_store_write_opts o = {NULL, NULL, info->deflate_level};
        apply_opts(&c, &o);
        c.hold = info->hold;
        if (c.hold) *c.hold = NULL;
    }
    int rc = path ? 0 : fail(&c, LSIM_EARG, "no output path");
    if (mapped) {
        if (!rc && n && !gpus) rc = fail(&c, LSIM_EARG, "no GPU list given");
        for (size_t i = 1; !rc && i < n; i++)
            if (gpus[i] <= gpus[i - 1]) rc = fail(&c, LSIM_EARG, "GPU list not ascending at GPU %zu", gpus[i]);
        c.gids = n ? gpus : none;
        c.ngids = n;
    }
    rc = agree(&c, rc);
    if (!rc) rc = write_results_impl(&c, run_name, items, n, info);
    return ctx_done(&c, rc, err);
}

int lsim_store_write_results_ex(const char *path, const char *run_name, const lsim_replay_item *items, size_t n,
                                const lsim_store_run_info *info, lsim_err *err)
{
    return write_results_entry(path, 0, MPI_COMM_NULL, run_name, items, 0, NULL, n, info, err);
}

int lsim_store_write_results_mpi(const char *path, MPI_Comm comm, const char *run_name,
                                 const lsim_replay_item *items, size_t n, const lsim_store_run_info *info,
                                 lsim_err *err)
{
    return write_results_entry(path, 1, comm, run_name, items, 0, NULL, n, info, err);
}

int lsim_store_write_results_mapped_mpi(const char *path, MPI_Comm comm, const char *run_name,
                                        const lsim_replay_item *items, const size_t *gpus, size_t n,
                                        const lsim_store_run_info *info, lsim_err *err)
{
    return write_results_entry(path, 1, comm, run_name, items, 1, gpus, n, info, err);
}

int lsim_store_write_results(const char *path, const char *run_name, const lsim_replay_item *items, size_t n,
                             const char *command_line, double wall_seconds, lsim_err *err)
{
    lsim_store_run_info info;
    memset(&info, 0, sizeof info);
    info.command_line = command_line;
    info.wall_seconds = wall_seconds;
    return lsim_store_write_results_ex(path, run_name, items, n, &info, err);
}

/* ------------------------------------------------------------ results read */

void lsim_store_run_free(lsim_store_run *r)
{
    if (!r) return;
    free(r->name);
    free(r->command_line);
    free(r->lumosim_version);
    free(r->host);
    free(r->mapping);
    free(r->config);
    free(r->created);
    free_strs(r->phase_names, r->nphases);
    free(r->phase_seconds);
    for (size_t i = 0; r->gpus && i < r->ngpus; i++) {
        lsim_store_gpu_result *g = &r->gpus[i];
        free(g->source);
        free_strs(g->iter_names, g->report.niters);
        lsim_rank_report_clear(&g->report);
        lsim_critical_path_clear(&g->cp);
    }
    free(r->gpus);
    free(r->start);
    free(r->end);
    free(r->bind_start);
    free(r->bind_end);
    lsim_store_free_graphs(r->graphs, r->graphs ? r->ngpus : 0);
    free(r);
}

/* Rows of a 1-D dataset (or -1 with the error set). */
static int64_t dset_rows(sctx *c, hid_t loc, const char *where, const char *name)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) {
        fail(c, LSIM_EFORMAT, "dataset %s/%s is missing", where, name);
        return -1;
    }
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[2];
    int64_t n = -1;
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 && H5Sget_simple_extent_dims(sp, dims, NULL) >= 0 &&
        dims[0] <= ((hsize_t)1 << 31))
        n = (int64_t)dims[0];
    else
        fail(c, LSIM_EFORMAT, "%s/%s is not a 1-D dataset of a sane size", where, name);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    return n;
}

static void read_provenance(hid_t run, lsim_store_run *r)
{
    r->wall_seconds = -1;
    r->mpi_ranks = 0;
    if (H5Lexists(run, "provenance", H5P_DEFAULT) <= 0) return;
    hid_t p = H5Gopen2(run, "provenance", H5P_DEFAULT);
    if (p < 0) return;
    int64_t v = 0;
    get_attr_str(p, "command_line", &r->command_line);
    get_attr_str(p, "lumosim_version", &r->lumosim_version);
    get_attr_str(p, "host", &r->host);
    get_attr_str(p, "mapping", &r->mapping);
    get_attr_str(p, "config", &r->config);
    get_attr_str(p, "created", &r->created);
    if (get_attr_num(p, "wall_seconds", 1, &r->wall_seconds) <= 0) r->wall_seconds = -1;
    if (get_attr_num(p, "mpi_ranks", 0, &v) > 0 && v > 0 && v <= INT_MAX) r->mpi_ranks = (int)v;
    char **pn = NULL;
    double *ps = NULL;
    size_t npn = 0, nps = 0;
    if (get_attr_strs(p, "phase_names", &pn, &npn) > 0 && get_attr_f64s(p, "phase_seconds", &ps, &nps) > 0 &&
        npn == nps) {
        r->phase_names = pn;
        r->phase_seconds = ps;
        r->nphases = npn;
    } else {
        free_strs(pn, npn);
        free(ps);
    }
    H5Gclose(p);
}

/* Check that off[] of records are prefix sums of cnt[] (fields at byte
 * offsets fo/fc); *total gets the sum. */
static int check_prefix(sctx *c, const char *where, const char *what, const void *rec, size_t rsz, size_t n,
                        size_t fo, size_t fc, uint64_t *total)
{
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t o, k;
        memcpy(&o, (const char *)rec + i * rsz + fo, 8);
        memcpy(&k, (const char *)rec + i * rsz + fc, 8);
        if (o != acc)
            return fail(c, LSIM_EFORMAT, "%s/gpus/%s_offset of GPU %zu is %llu, expected %llu", where, what, i,
                        (unsigned long long)o, (unsigned long long)acc);
        if (k > ((uint64_t)1 << 40) - acc)
            return fail(c, LSIM_EFORMAT, "%s/gpus/%s_count of GPU %zu is too large", where, what, i);
        acc += k;
    }
    *total = acc;
    return 0;
}

/* Read run group `run`; light 1: the per-GPU table and attributes only;
 * light 2: everything but the per-node times (start, end, bind_*). */
static int read_run(sctx *c, hid_t run, const char *where, const char *name, int light, lsim_store_run **out)
{
    int rc = check_cols(c, run_gpu_cols, NRUNGPUCOLS);
    if (!rc) rc = check_cols(c, run_iter_cols, NRUNITERCOLS);
    if (rc) return rc;
    lsim_store_run *r = calloc(1, sizeof *r);
    rmeta *rm = NULL;
    riter *ri = NULL;
    char **src = NULL, **inames = NULL;
    double *da = NULL, *dp = NULL;
    uint32_t *cn = NULL;
    int64_t *cv = NULL;
    size_t n = 0;
    uint64_t nn = 0, ni = 0, nda = 0, ndp = 0, ncp = 0;
    if (!r || !(r->name = strdup(name))) {
        free(r);
        return nomem(c);
    }
    read_provenance(run, r);
    char *lat = NULL;
    int64_t ev = 0;
    if (get_attr_str(run, "latency_mode", &lat) > 0 && !strcmp(lat, "observed")) r->latency = LSIM_LAT_OBSERVED;
    free(lat);
    if (get_attr_num(run, "events", 0, &ev) > 0 && ev >= 0) r->events = (uint64_t)ev;
    int64_t nrows = dset_rows(c, run, where, "gpus/rank");
    if (nrows < 0) {
        rc = c->e.code;
        goto out;
    }
    n = (size_t)nrows;
    rm = calloc(n ? n : 1, sizeof *rm);
    if (!rm) {
        rc = nomem(c);
        goto out;
    }
    rc = get_records(c, run, where, "gpus", run_gpu_cols, NRUNGPUCOLS, rm, sizeof *rm, n, 0, n);
    if (!rc) rc = get_strings(c, run, where, "gpus/source", n, 0, n, &src);
    if (!rc)
        rc = check_prefix(c, where, "node", rm, sizeof *rm, n, offsetof(rmeta, node_offset),
                          offsetof(rmeta, node_count), &nn);
    if (!rc)
        rc = check_prefix(c, where, "iter", rm, sizeof *rm, n, offsetof(rmeta, iter_offset),
                          offsetof(rmeta, iter_count), &ni);
    if (!rc)
        rc = check_prefix(c, where, "duty_actual", rm, sizeof *rm, n, offsetof(rmeta, duty_actual_offset),
                          offsetof(rmeta, duty_actual_count), &nda);
    if (!rc)
        rc = check_prefix(c, where, "duty_predicted", rm, sizeof *rm, n, offsetof(rmeta, duty_predicted_offset),
                          offsetof(rmeta, duty_predicted_count), &ndp);
    if (!rc)
        rc = check_prefix(c, where, "cp", rm, sizeof *rm, n, offsetof(rmeta, cp_offset), offsetof(rmeta, cp_count),
                          &ncp);
    for (size_t i = 0; !rc && i < n; i++) {
        const rmeta *m = &rm[i];
        if (m->node_count > UINT32_MAX || m->iter_count > UINT32_MAX || m->duty_actual_count > UINT32_MAX ||
            m->duty_predicted_count > UINT32_MAX)
            rc = fail(c, LSIM_EFORMAT, "%s/gpus: GPU %zu has impossibly many rows", where, i);
        else if (m->has_cp > 1 || (!m->has_cp && m->cp_count) || m->cp_ntop > LSIM_CP_TOP ||
                 m->cp_count > m->node_count)
            rc = fail(c, LSIM_EFORMAT, "%s/gpus: the critical-path columns of GPU %zu are inconsistent", where, i);
        for (uint64_t k = 0; !rc && k < m->cp_ntop; k++)
            if (m->cp_top[k] >= m->node_count)
                rc = fail(c, LSIM_EFORMAT, "%s/gpus/cp_top of GPU %zu names node %u, the GPU has %llu", where, i,
                          m->cp_top[k], (unsigned long long)m->node_count);
    }
    if (rc) goto out;
    r->ngpus = n;
    r->nnodes = nn;
    r->gpus = calloc(n ? n : 1, sizeof *r->gpus);
    if (!r->gpus) {
        rc = nomem(c);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        lsim_store_gpu_result *g = &r->gpus[i];
        const rmeta *m = &rm[i];
        g->rank = m->rank;
        g->source = src[i];
        src[i] = NULL;
        g->node_offset = m->node_offset;
        g->node_count = m->node_count;
        lsim_rank_report *rr = &g->report;
        rr->window_actual = m->window_actual;
        rr->window_predicted = m->window_predicted;
        rr->window_actual_start = m->window_actual_start;
        rr->window_predicted_start = m->window_predicted_start;
        bd_get(&rr->bd_actual, m->bd_actual);
        bd_get(&rr->bd_predicted, m->bd_predicted);
        rr->bd_actual.exposed_comm_wait = m->comm_wait_actual;
        rr->bd_predicted.exposed_comm_wait = m->comm_wait_predicted;
        g->coupled = m->coupled;
        g->clock_offset = m->clock_offset;
        rr->bin_ns = m->bin_ns;
        rr->max_abs_start_err = m->max_abs_start_err;
        rr->max_abs_end_err = m->max_abs_end_err;
        rr->nodes_exact = m->nodes_exact;
        rr->gpu_nodes = m->gpu_nodes;
        g->has_cp = m->has_cp;
        if (m->has_cp) {
            lsim_critical_path *cp = &g->cp;
            cp->start = m->cp_start;
            cp->end = m->cp_end;
            cp->length = m->cp_length;
            memcpy(cp->by_cat, m->cp_by_cat, sizeof cp->by_cat);
            memcpy(cp->by_kind, m->cp_by_kind, sizeof cp->by_kind);
            memcpy(cp->by_class, m->cp_by_class, sizeof cp->by_class);
            memcpy(cp->edges_by_class, m->cp_edges_by_class, sizeof cp->edges_by_class);
            cp->ntop = (size_t)m->cp_ntop;
            for (size_t k = 0; k < cp->ntop; k++) {
                cp->top[k] = m->cp_top[k];
                cp->top_time[k] = m->cp_top_time[k];
            }
        }
    }
    if (light == 1) goto done;
    /* iterations */
    ri = calloc(ni ? ni : 1, sizeof *ri);
    if (!ri) {
        rc = nomem(c);
        goto out;
    }
    rc = get_records(c, run, where, "iterations", run_iter_cols, NRUNITERCOLS, ri, sizeof *ri, ni, 0, ni);
    if (!rc) rc = get_strings(c, run, where, "iterations/name", ni, 0, ni, &inames);
    for (size_t i = 0; !rc && i < n; i++) {
        lsim_store_gpu_result *g = &r->gpus[i];
        uint32_t k, cnt = (uint32_t)rm[i].iter_count;
        if (!(g->report.iters = calloc(cnt ? cnt : 1, sizeof *g->report.iters)) ||
            !(g->iter_names = calloc(cnt ? cnt : 1, sizeof *g->iter_names))) {
            rc = nomem(c);
            break;
        }
        g->report.niters = cnt;
        for (k = 0; k < cnt; k++) {
            const riter *x = &ri[rm[i].iter_offset + k];
            if (x->gpu != i) {
                rc = fail(c, LSIM_EFORMAT, "%s/iterations/gpu: row %llu belongs to GPU %zu but says %u", where,
                          (unsigned long long)(rm[i].iter_offset + k), i, x->gpu);
                break;
            }
            lsim_iter_report *it = &g->report.iters[k];
            it->name = x->name_id;
            it->actual = x->actual;
            it->predicted = x->predicted;
            bd_get(&it->bd_actual, x->bd_actual);
            bd_get(&it->bd_predicted, x->bd_predicted);
            g->iter_names[k] = inames[rm[i].iter_offset + k];
            inames[rm[i].iter_offset + k] = NULL;
        }
    }
    if (rc) goto out;
    /* duty cycles */
    da = malloc((nda ? nda : 1) * sizeof *da);
    dp = malloc((ndp ? ndp : 1) * sizeof *dp);
    if (!da || !dp) rc = nomem(c);
    if (!rc) rc = get_col(c, run, where, "duty/actual", T_F64, 1, nda, 0, nda, da);
    if (!rc) rc = get_col(c, run, where, "duty/predicted", T_F64, 1, ndp, 0, ndp, dp);
    for (size_t i = 0; !rc && i < n; i++) {
        lsim_rank_report *rr = &r->gpus[i].report;
        uint64_t ka = rm[i].duty_actual_count, kp = rm[i].duty_predicted_count;
        if (ka && !(rr->duty_actual = malloc(ka * sizeof *da))) rc = nomem(c);
        if (kp && !(rr->duty_predicted = malloc(kp * sizeof *dp))) rc = nomem(c);
        if (rc) break;
        if (ka) memcpy(rr->duty_actual, da + rm[i].duty_actual_offset, ka * sizeof *da);
        if (kp) memcpy(rr->duty_predicted, dp + rm[i].duty_predicted_offset, kp * sizeof *dp);
        rr->nbins_actual = (uint32_t)ka;
        rr->nbins_predicted = (uint32_t)kp;
    }
    if (rc) goto out;
    /* per-node times (not for a report: 32 bytes per node) */
    if (light == 2) goto cpaths;
    r->start = malloc((nn ? nn : 1) * sizeof *r->start);
    r->end = malloc((nn ? nn : 1) * sizeof *r->end);
    if (!r->start || !r->end) rc = nomem(c);
    if (!rc) rc = get_col(c, run, where, "nodes/start", T_I64, 1, nn, 0, nn, r->start);
    if (!rc) rc = get_col(c, run, where, "nodes/end", T_I64, 1, nn, 0, nn, r->end);
    if (!rc && H5Lexists(run, "nodes/bind_start", H5P_DEFAULT) > 0) {
        r->bind_start = malloc((nn ? nn : 1) * sizeof *r->bind_start);
        r->bind_end = malloc((nn ? nn : 1) * sizeof *r->bind_end);
        if (!r->bind_start || !r->bind_end) rc = nomem(c);
        if (!rc) rc = get_col(c, run, where, "nodes/bind_start", T_I64, 1, nn, 0, nn, r->bind_start);
        if (!rc) rc = get_col(c, run, where, "nodes/bind_end", T_I64, 1, nn, 0, nn, r->bind_end);
    }
    if (rc) goto out;
cpaths:
    /* critical paths */
    cn = malloc((ncp ? ncp : 1) * sizeof *cn);
    cv = malloc((ncp ? ncp : 1) * sizeof *cv);
    if (!cn || !cv) rc = nomem(c);
    if (!rc) rc = get_col(c, run, where, "critical_path/node", T_U32, 1, ncp, 0, ncp, cn);
    if (!rc) rc = get_col(c, run, where, "critical_path/via", T_I64, 1, ncp, 0, ncp, cv);
    for (size_t i = 0; !rc && i < n; i++) {
        lsim_store_gpu_result *g = &r->gpus[i];
        if (!g->has_cp) continue;
        size_t k = (size_t)rm[i].cp_count;
        g->cp.nodes = malloc((k ? k : 1) * sizeof *g->cp.nodes);
        g->cp.via = malloc((k ? k : 1) * sizeof *g->cp.via);
        if (!g->cp.nodes || !g->cp.via) {
            rc = nomem(c);
            break;
        }
        g->cp.n = k;
        for (size_t j = 0; j < k; j++) {
            g->cp.nodes[j] = cn[rm[i].cp_offset + j];
            g->cp.via[j] = cv[rm[i].cp_offset + j];
            if (g->cp.nodes[j] >= g->node_count || g->cp.via[j] < -1) {
                rc = fail(c, LSIM_EFORMAT, "%s/critical_path of GPU %zu: entry %zu names node %u / edge %lld outside "
                                           "the GPU",
                          where, i, j, g->cp.nodes[j], (long long)g->cp.via[j]);
                break;
            }
        }
    }
    if (rc) goto out;
    /* embedded graphs: must match the run row for row */
    if (H5Lexists(run, "graph", H5P_DEFAULT) > 0) {
        hid_t gg = H5Gopen2(run, "graph", H5P_DEFAULT);
        char gw[512];
        size_t ng = 0;
        snprintf(gw, sizeof gw, "%s/graph", where);
        if (gg < 0) rc = fail(c, LSIM_EFORMAT, "%s cannot be opened", gw);
        else rc = read_graph_tables(c, gg, gw, 0, SIZE_MAX, NULL, &r->graphs, &ng);
        if (gg >= 0) H5Gclose(gg);
        if (!rc && ng != n) {
            lsim_store_free_graphs(r->graphs, ng);
            r->graphs = NULL;
            rc = fail(c, LSIM_EFORMAT, "%s holds %zu GPUs, the run %zu", gw, ng, n);
        }
        for (size_t i = 0; !rc && i < n; i++) {
            const lsim_graph *g = r->graphs[i];
            const lsim_store_gpu_result *x = &r->gpus[i];
            if (g->n != x->node_count)
                rc = fail(c, LSIM_EFORMAT, "%s: GPU %zu has %zu nodes, the run %llu", gw, i, g->n,
                          (unsigned long long)x->node_count);
            for (uint32_t k = 0; !rc && k < x->report.niters; k++)
                if (x->report.iters[k].name >= lsim_strtab_count(g->strings))
                    rc = fail(c, LSIM_EFORMAT, "%s/iterations/name_id of GPU %zu is past the graph's strings", where,
                              i);
            for (size_t k = 0; !rc && x->has_cp && k < x->cp.n; k++)
                if (x->cp.via[k] >= (int64_t)g->nedges)
                    rc = fail(c, LSIM_EFORMAT, "%s/critical_path/via of GPU %zu names edge %lld, the graph has %llu",
                              where, i, (long long)x->cp.via[k], (unsigned long long)g->nedges);
            for (size_t v = 0; !rc && r->bind_start && v < g->n; v++) {
                int64_t bs = r->bind_start[x->node_offset + v], be = r->bind_end[x->node_offset + v];
                if (bs < -1 || be < -1 || bs >= (int64_t)g->nedges || be >= (int64_t)g->nedges)
                    rc = fail(c, LSIM_EFORMAT, "%s/nodes/bind_start or bind_end of GPU %zu names an edge outside the "
                                               "graph (node %zu)",
                              where, i, v);
            }
        }
        if (rc) goto out;
    }
done:
    for (size_t i = 0; i < n; i++) {
        lsim_store_gpu_result *g = &r->gpus[i];
        if (r->start) {
            g->start = r->start + g->node_offset;
            g->end = r->end + g->node_offset;
        }
        if (r->bind_start) {
            g->bind_start = r->bind_start + g->node_offset;
            g->bind_end = r->bind_end + g->node_offset;
        }
    }
    *out = r;
    r = NULL;
out:
    lsim_store_run_free(r);
    free(rm);
    free(ri);
    free_strs(src, n);
    free_strs(inames, ni);
    free(da);
    free(dp);
    free(cn);
    free(cv);
    return rc;
}

static int open_results(sctx *c, hid_t *runs, char ***names, size_t *n)
{
    int rc = open_file(c);
    if (!rc) rc = check_root(c, LSIM_STORE_KIND_RESULTS);
    if (rc) return rc;
    *runs = H5Gopen2(c->file, "runs", H5P_DEFAULT);
    if (*runs < 0) return fail(c, LSIM_EFORMAT, "result file without a /runs group");
    return list_links(c, *runs, names, n);
}

int lsim_store_list_runs(const char *path, char ***names, size_t *n, lsim_err *err)
{
    sctx c;
    hid_t runs = -1;
    *names = NULL;
    *n = 0;
    ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = open_results(&c, &runs, names, n);
    if (runs >= 0) H5Gclose(runs);
    return ctx_done(&c, rc, err);
}

static void join_names(char *buf, size_t len, char **names, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at + 1 < len; i++) {
        int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", names[i]);
        if (w < 0) break;
        at += (size_t)w;
    }
}

int lsim_store_read_results(const char *path, const char *run_name, lsim_store_run **out, lsim_err *err)
{
    return lsim_store_read_results_ex(path, run_name, 0, out, err);
}

int lsim_store_read_results_ex(const char *path, const char *run_name, int flags, lsim_store_run **out,
                               lsim_err *err)
{
    sctx c;
    hid_t runs = -1, run = -1;
    char **names = NULL;
    size_t n = 0;
    *out = NULL;
    ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = open_results(&c, &runs, &names, &n);
    const char *pick = run_name;
    if (!rc && !pick) {
        if (n == 1) pick = names[0];
        else {
            char list[256];
            join_names(list, sizeof list, names, n);
            rc = fail(&c, LSIM_EARG, "holds %zu runs (%s): name the one to read", n, n ? list : "none");
        }
    }
    if (!rc) {
        size_t i;
        for (i = 0; i < n && strcmp(names[i], pick) != 0; i++) {}
        if (i == n) {
            char list[256];
            join_names(list, sizeof list, names, n);
            rc = fail(&c, LSIM_EARG, "no run named '%s' (runs: %s)", pick, n ? list : "none");
        }
    }
    if (!rc && (run = H5Gopen2(runs, pick, H5P_DEFAULT)) < 0) rc = fail(&c, LSIM_EFORMAT, "cannot open run '%s'", pick);
    if (!rc) {
        char where[300];
        snprintf(where, sizeof where, "/runs/%s", pick);
        rc = read_run(&c, run, where, pick, flags & LSIM_STORE_READ_NO_TIMES ? 2 : 0, out);
    }
    if (run >= 0) H5Gclose(run);
    if (runs >= 0) H5Gclose(runs);
    free_strs(names, n);
    return ctx_done(&c, rc, err);
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
        /* native order: see list_links (the groups are summed, then sorted) */
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

static int info_graphs(sctx *c, FILE *out)
{
    gmeta *m = NULL;
    char **src = NULL;
    size_t n = 0;
    int rc = read_gpu_table(c, c->file, "", &m, &src, &n);
    if (rc) return rc;
    char *ver = NULL, *cmd = NULL, *lat = NULL;
    get_attr_str(c->file, "lumosim_version", &ver);
    get_attr_str(c->file, "created_by", &cmd);
    get_attr_str(c->file, "latency_mode", &lat);
    uint64_t tot[RK_N];
    for (int r = 0; r < RK_N; r++) tot[r] = total_rows(m, n, r);
    struct stat st;
    char fsz[32] = "?";
    if (stat(c->path, &st) == 0) human(fsz, sizeof fsz, (double)st.st_size);
    fprintf(out, "%s: lumosim graph store, schema version %d, %s\n", c->path, LSIM_STORE_SCHEMA_VERSION, fsz);
    fprintf(out, "  written by lumosim %s: %s\n", ver ? ver : "?", cmd && *cmd ? cmd : "(no command line)");
    fprintf(out, "  latency mode %s\n", lat ? lat : "?");
    {
        /* what a transformation (lumosim whatif) recorded, if anything */
        char *wi = NULL;
        if (get_attr_str(c->file, "whatif", &wi) > 0 && wi) fprintf(out, "  what-if record: %s\n", wi);
        free(wi);
    }
    fprintf(out,
            "  %zu GPUs: %llu nodes, %llu edges, %llu processors, %llu iterations, %llu collectives, %llu strings\n",
            n, (unsigned long long)tot[RK_NODE], (unsigned long long)tot[RK_EDGE], (unsigned long long)tot[RK_PROC],
            (unsigned long long)tot[RK_ITER], (unsigned long long)tot[RK_COLL], (unsigned long long)tot[RK_STR]);
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
    free(ver);
    free(cmd);
    free(lat);
    free_strs(src, n);
    free(m);
    return 0;
}

static int info_results(sctx *c, FILE *out)
{
    hid_t runs = H5Gopen2(c->file, "runs", H5P_DEFAULT);
    char **names = NULL;
    size_t n = 0;
    int rc = runs < 0 ? fail(c, LSIM_EFORMAT, "result file without a /runs group") : list_links(c, runs, &names, &n);
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
        rc = run < 0 ? fail(c, LSIM_EFORMAT, "cannot open %s", where) : read_run(c, run, where, names[k], 1, &r);
        if (!rc) {
            int32_t emb = 0;
            int64_t e64 = 0;
            if (get_attr_num(run, "graphs_embedded", 0, &e64) > 0) emb = (int32_t)e64;
            fprintf(out, "\nrun '%s': %zu GPUs, %zu nodes, latency %s%s\n", r->name, r->ngpus, r->nnodes,
                    latency_name(r->latency), emb ? ", graphs embedded" : "");
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
                fprintf(out, "  %4zu %5d %10llu %14.3f %14.3f %+7.2f%%  %s\n", i, g->rank,
                        (unsigned long long)g->node_count, (double)g->report.window_actual / 1e6,
                        (double)g->report.window_predicted / 1e6,
                        100.0 * lsim_rel_err(g->report.window_actual, g->report.window_predicted), g->source);
            }
        }
        lsim_store_run_free(r);
        if (run >= 0) H5Gclose(run);
    }
    free_strs(names, n);
    if (runs >= 0) H5Gclose(runs);
    return rc;
}

int lsim_store_info(const char *path, FILE *out, lsim_err *err)
{
    sctx c;
    ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = open_file(&c);
    char *kind = NULL;
    if (!rc && get_attr_str(c.file, "kind", &kind) > 0 && !strcmp(kind, LSIM_STORE_KIND_RESULTS)) {
        rc = check_root(&c, LSIM_STORE_KIND_RESULTS);
        if (!rc) rc = info_results(&c, out);
    } else if (!rc) {
        rc = check_root(&c, LSIM_STORE_KIND_GRAPHS);
        if (!rc) rc = info_graphs(&c, out);
    }
    free(kind);
    return ctx_done(&c, rc, err);
}
