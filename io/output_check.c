/* The role and kind checks of a command's files (include/lumosim/output.h,
 * first half). Apart from src/write/output.c because telling a graph store from a
 * result archive needs the HDF5 store (lsim_store_probe): this file goes in
 * lumosim_io, the writers' half in lumosim_core. */
#define _DEFAULT_SOURCE /* realpath */
#include <errno.h>
#include "lumosim/alloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "lumosim/memlimit.h"
#include "lumosim/output.h"
#include "lumosim/store.h"
#include "internal/output_internal.h"

static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* A canonical name for comparing outputs that may not exist yet: the
 * target's directory through realpath, then its base name. NULL when the
 * directory cannot be resolved (then only inode comparisons apply). */
static char *canon(const char *path)
{
    lsim_err e;
    char *t = lsim_out_follow_links(path, &e);
    if (!t) return NULL;
    char *dir = lsim_dir_of(t);
    char *rd = dir ? realpath(dir, NULL) : NULL;
    char *out = rd ? lsim_malloc(strlen(rd) + strlen(base_of(t)) + 2) : NULL;
    if (out) sprintf(out, "%s/%s", rd, base_of(t));
    free(rd);
    free(dir);
    free(t);
    return out;
}

static const void *find_bytes(const void *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    const char *h = hay;
    for (size_t i = 0; k && i + k <= n; i++)
        if (h[i] == needle[0] && !memcmp(h + i, needle, k)) return h + i;
    return NULL;
}

int lsim_out_classify(const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) != 0) return 0;
    if (!S_ISREG(st.st_mode)) return 5;
    switch (lsim_store_probe(path)) {
    case LSIM_STORE_GRAPHS: return 1;
    case LSIM_STORE_RESULTS: return 2;
    case LSIM_STORE_OTHER: return 3;
    case LSIM_STORE_SEARCH: return 6;
    default: break;
    }
    /* gzread reads plain files as they are */
    gzFile z = gzopen(path, "rb");
    if (!z) return 0;
    enum { HEAD = 64 * 1024 };
    char *buf = lsim_malloc(HEAD);
    int n = buf ? gzread(z, buf, HEAD) : -1;
    gzclose(z);
    int kind = 5;
    if (n > 0) {
        int i = 0;
        while (i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r')) i++;
        if (i < n && buf[i] == '{' && find_bytes(buf, (size_t)n, "\"traceEvents\"")) kind = 4;
    }
    free(buf);
    return kind;
}

static const char *kind_name(int k)
{
    switch (k) {
    case 1: return "a lumosim graph store";
    case 2: return "a lumosim result archive";
    case 3: return "an HDF5 file";
    case 4: return "a Kineto/Chrome trace";
    case 6: return "a lumosim search result";
    default: return "a file";
    }
}

static const char *out_kind_name(lsim_out_kind k)
{
    switch (k) {
    case LSIM_OUT_TRACE: return "a predicted trace";
    case LSIM_OUT_STORE: return "a graph store";
    case LSIM_OUT_RESULTS: return "a result archive";
    case LSIM_OUT_SEARCH: return "a search result";
    default: return "a text file";
    }
}

/* May an existing file of kind `have` (lsim_out_classify) be replaced by an
 * output of kind `want`? */
static int kind_ok(int have, lsim_out_kind want, unsigned flags)
{
    int force = (flags & LSIM_OUT_FORCE) != 0;
    switch (have) {
    case 1: return force; /* a store holds work: never replaced without being told */
    case 2: return want == LSIM_OUT_RESULTS || force;
    case 3: return force;
    case 4: return want == LSIM_OUT_TRACE || force;
    case 6: return want == LSIM_OUT_SEARCH || force; /* a search's own previous result */
    default: return 1;
    }
}

static int check_dir(const char *path, lsim_err *err)
{
    char *dir = lsim_dir_of(path);
    if (!dir) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    struct stat st;
    int rc = 0;
    /* one that exists but is a file is named as such: "does not exist"
     * would send the user looking for a missing directory */
    int found = stat(dir, &st) == 0;
    if (!found && errno == ENOENT)
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: directory %s does not exist", path, dir);
    else if (!found) /* a file on the way (ENOTDIR), a loop, no search permission */
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: directory %s: %s", path, dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s: is not a directory", path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: directory %s is not writable: %s", path, dir,
                          strerror(errno));
    free(dir);
    return rc;
}

/* Is existing output `o` (stat ost) a file input directory `d` would read:
 * directly inside it, and a trace, store or archive? */
static int inside_dir(const char *o, const struct stat *dst, int okind)
{
    if (okind != 1 && okind != 2 && okind != 4) return 0;
    char *t = lsim_out_follow_links(o, &(lsim_err){0});
    char *dir = t ? lsim_dir_of(t) : NULL;
    struct stat ps;
    int in = dir && stat(dir, &ps) == 0 && ps.st_dev == dst->st_dev && ps.st_ino == dst->st_ino;
    free(dir);
    free(t);
    return in;
}

static int check_files(const lsim_io_file *files, size_t n, unsigned flags, lsim_err *err);

/* What lsim_out_check allowed, for its second look when the output is
 * begun (recheck): each output's canonical name, how it was named, its
 * kind, the flags, and the file found then (none: existed 0). One process
 * runs one command, so the list stays small; it lives until exit. */
typedef struct allowed {
    char *canon, *path, *role;
    lsim_out_kind kind;
    unsigned flags;
    int existed;
    struct stat st;
} allowed;
static allowed *g_allowed;
static size_t g_nallowed;

static int same_file(int existed, const struct stat *a, int exists, const struct stat *b)
{
    if (existed != exists) return 0;
    return !exists || (a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
                       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec);
}

/* lsim_out_set_recheck's hook: an output begun (committed 0) whose file is
 * no longer the one the check saw is checked again, as it is now; one
 * committed by this run is its own (the next look compares with it). An
 * output the check never saw (a library caller without the CLI) passes. */
static int recheck(const char *target, int committed, lsim_err *err)
{
    char *cn = canon(target);
    allowed *a = NULL;
    for (size_t i = 0; cn && i < g_nallowed && !a; i++)
        if (!strcmp(g_allowed[i].canon, cn)) a = &g_allowed[i];
    free(cn);
    if (!a) return 0;
    struct stat now;
    int exists = stat(target, &now) == 0;
    int rc = 0;
    if (!committed && !same_file(a->existed, &a->st, exists, &now)) {
        lsim_io_file f = {a->path, a->role, 1, a->kind};
        lsim_err e = {0};
        if ((rc = check_files(&f, 1, a->flags, &e)))
            lsim_err_set(err, rc, "%s (another lumosim wrote it after this run started)", e.msg);
    }
    a->existed = exists;
    if (exists) a->st = now;
    return rc;
}

/* Keep what the check allowed of output f (canonical name cn). Best effort:
 * without memory there is no second look, as before it existed. */
static void remember(const lsim_io_file *f, const char *cn, unsigned flags)
{
    allowed *a = NULL;
    for (size_t i = 0; i < g_nallowed && !a; i++)
        if (!strcmp(g_allowed[i].canon, cn)) a = &g_allowed[i];
    if (!a) {
        allowed *grown = lsim_realloc(g_allowed, (g_nallowed + 1) * sizeof *grown);
        if (!grown) return;
        g_allowed = grown;
        a = &g_allowed[g_nallowed];
        memset(a, 0, sizeof *a);
        if (!(a->canon = lsim_strdup(cn))) return;
        g_nallowed++;
    }
    char *path = lsim_strdup(f->path), *role = lsim_strdup(f->role ? f->role : "-o");
    if (!path || !role) {
        free(path);
        free(role);
        return;
    }
    free(a->path);
    free(a->role);
    a->path = path;
    a->role = role;
    a->kind = f->kind;
    a->flags = flags;
    a->existed = stat(f->path, &a->st) == 0;
    lsim_out_set_recheck(recheck);
}

static int check_files(const lsim_io_file *files, size_t n, unsigned flags, lsim_err *err)
{
    int rc = 0;
    char **cn = lsim_calloc(n ? n : 1, sizeof *cn);
    if (!cn) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (files[i].path && files[i].output) cn[i] = canon(files[i].path);
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_io_file *o = &files[i];
        if (!o->path || !o->output) continue;
        if (!*o->path) {
            rc = lsim_err_set(err, LSIM_EARG, "%s needs a file name", o->role);
            break;
        }
        if (!strcmp(o->path, "-")) { /* stdout: no file to check (lsim_out_begin) */
            if (o->kind == LSIM_OUT_STORE || o->kind == LSIM_OUT_RESULTS || o->kind == LSIM_OUT_SEARCH)
                rc = lsim_err_set(err, LSIM_EARG, "%s -: %s cannot go to stdout (HDF5 needs a regular file); name a "
                                  "file", o->role, out_kind_name(o->kind));
            continue;
        }
        struct stat ost;
        int oex = stat(o->path, &ost) == 0;
        if (oex && S_ISDIR(ost.st_mode)) {
            rc = lsim_err_set(err, LSIM_EARG, "%s: is a directory; %s needs a file name", o->path, o->role);
            break;
        }
        if (!(oex && !S_ISREG(ost.st_mode)) && (rc = check_dir(o->path, err))) break;
        int okind = oex ? lsim_out_classify(o->path) : 0;
        for (size_t j = 0; !rc && j < n; j++) {
            const lsim_io_file *x = &files[j];
            if (j == i || !x->path) continue;
            struct stat xst;
            int xex = stat(x->path, &xst) == 0;
            if (!x->output) {
                if (!xex) continue;
                if (oex && S_ISREG(ost.st_mode) && xst.st_dev == ost.st_dev && xst.st_ino == ost.st_ino)
                    rc = lsim_err_set(err, LSIM_EARG, "%s: is an input (%s) and the output of %s: an output must not "
                                      "replace an input; choose another name", o->path, x->path, o->role);
                else if (oex && S_ISDIR(xst.st_mode) && inside_dir(o->path, &xst, okind))
                    rc = lsim_err_set(err, LSIM_EARG, "%s: the output of %s is %s inside the input directory %s, "
                                      "which this run reads; choose another name", o->path, o->role,
                                      kind_name(okind), x->path);
                continue;
            }
            if (j < i) continue; /* each pair of outputs once */
            int same = (cn[i] && cn[j] && !strcmp(cn[i], cn[j])) ||
                       (oex && xex && S_ISREG(ost.st_mode) && xst.st_dev == ost.st_dev && xst.st_ino == ost.st_ino);
            if (same)
                rc = lsim_err_set(err, LSIM_EARG, "%s: named as the output of both %s and %s; give each its own file",
                                  o->path, o->role, x->role);
        }
        if (rc) break;
        if (oex && S_ISREG(ost.st_mode) && !kind_ok(okind, o->kind, flags)) {
            if (okind == 1 && o->kind == LSIM_OUT_STORE)
                rc = lsim_err_set(err, LSIM_EARG, "%s: already holds a lumosim graph store; add --force to replace it",
                                  o->path);
            else
                rc = lsim_err_set(err, LSIM_EARG, "%s: is %s; %s would replace it with %s (add --force to do so)",
                                  o->path, kind_name(okind), o->role, out_kind_name(o->kind));
        }
    }
    for (size_t i = 0; i < n; i++) free(cn[i]);
    free(cn);
    return rc;
}

int lsim_out_check(const lsim_io_file *files, size_t n, unsigned flags, lsim_err *err)
{
    int rc = check_files(files, n, flags, err);
    for (size_t i = 0; !rc && i < n; i++) {
        if (!files[i].path || !files[i].output || !strcmp(files[i].path, "-")) continue;
        char *cn = canon(files[i].path);
        if (cn) remember(&files[i], cn, flags);
        free(cn);
    }
    return rc;
}
