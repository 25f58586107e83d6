/* lumosim export --chakra DIR STORE and lumosim build --chakra DIR -o STORE:
 * a graph store as MLCommons Chakra execution traces, one file per GPU,
 * and back (include/lumosim/chakra.h, docs/chakra.md). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "lumosim/chakra.h"

const char *const LSIM_USAGE_EXPORT =
    "usage: lumosim export --chakra DIR JOB.h5\n"
    "\n"
    "Writes the graphs of a graph store (built from traces, synthesized or a\n"
    "what-if) as MLCommons Chakra execution traces, one file per GPU,\n"
    "DIR/PREFIX.RANK.et (PREFIX: the store's name without .h5), for ASTRA-sim\n"
    "and the other tools that read Chakra. DIR is created when missing; it may\n"
    "hold no other .et files. Every file is written under a temporary name and\n"
    "renamed only when all are complete: a failure leaves DIR as it was.\n"
    "lumosim build --chakra DIR -o JOB2.h5 reads them back; what the round trip\n"
    "keeps (the simulation, to the nanosecond) is in docs/chakra.md.\n";

/* ------------------------------------------------------------ names */

/* DIR/PREFIX.RANK.et into buf (cap bytes): 0, or LSIM_EARG when too long. */
static int et_name(char *buf, size_t cap, const char *dir, const char *prefix, size_t rank, lsim_err *err)
{
    int w = snprintf(buf, cap, "%s/%s.%zu.et", dir, prefix, rank);
    if (w < 0 || (size_t)w >= cap) return lsim_err_set(err, LSIM_EARG, "%s: path too long", dir);
    return 0;
}

/* A name PREFIX.RANK.et: 1 with the prefix's length and the rank. */
static int parse_et(const char *name, size_t *plen, long *rank)
{
    size_t n = strlen(name);
    if (n < 5 || strcmp(name + n - 3, ".et")) return 0;
    size_t e = n - 3, d = e;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9') d--;
    if (d == e || d < 2 || name[d - 1] != '.' || e - d > 7 || (name[d] == '0' && e - d > 1)) return 0;
    *plen = d - 1;
    *rank = strtol(name + d, NULL, 10);
    return 1;
}

/* The prefix of STORE's files: its base name without a trailing .h5. */
static void store_prefix(const char *store, char *buf, size_t cap)
{
    const char *b = strrchr(store, '/');
    b = b ? b + 1 : store;
    snprintf(buf, cap, "%s", b);
    size_t n = strlen(buf);
    if (n > 3 && !strcmp(buf + n - 3, ".h5")) buf[n - 3] = 0;
    if (!buf[0]) snprintf(buf, cap, "lumosim");
}

/* ------------------------------------------------------------ export */

typedef struct export_args {
    const char *dir, *store;
} export_args;

static int on_export(void *ctx, const lsim_cli_opt *e, const char *v)
{
    export_args *a = ctx;
    if (e) {
        a->dir = v;
        return 0;
    }
    if (a->store) {
        lsim_cli_usage_error("export takes one graph store ('%s' and '%s' given)", a->store, v);
        return -1;
    }
    a->store = v;
    return 0;
}

/* DIR exists as a directory (0; *made = 0), or is made (0; *made = 1);
 * anything else there is refused. Other .et files in it are refused too:
 * a later build --chakra DIR would read them as ranks of this job. */
static int prepare_dir(const char *dir, const char *prefix, size_t n, int *made, lsim_err *err)
{
    struct stat st;
    *made = 0;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT) return lsim_err_set(err, LSIM_EIO, "%s: %s", dir, strerror(errno));
        if (mkdir(dir, 0777) != 0) return lsim_err_set(err, LSIM_EIO, "%s: cannot create: %s", dir, strerror(errno));
        *made = 1;
        return 0;
    }
    if (!S_ISDIR(st.st_mode))
        return lsim_err_set(err, LSIM_EARG, "%s: --chakra names a directory; this exists and is not one", dir);
    DIR *d = opendir(dir);
    if (!d) return lsim_err_set(err, LSIM_EIO, "%s: cannot read: %s", dir, strerror(errno));
    int rc = 0;
    size_t lp = strlen(prefix), plen;
    long rank;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 3, ".et")) continue;
        if (parse_et(e->d_name, &plen, &rank) && plen == lp && !strncmp(e->d_name, prefix, lp) && (size_t)rank < n)
            continue; /* replaced by this export */
        rc = lsim_err_set(err, LSIM_EARG,
                          "%s: holds %s, which this export would not replace (build --chakra would read it as a rank "
                          "of the job): use an empty directory",
                          dir, e->d_name);
    }
    closedir(d);
    return rc;
}

/* The store's root attributes a Chakra file carries (absent: NULL). */
static void read_store_attrs(const char *store, char **attrs)
{
    for (int k = 0; k < LSIM_CHAKRA_NSTORE_ATTRS; k++) {
        lsim_err e = {0};
        attrs[k] = NULL;
        if (lsim_store_read_attr(store, lsim_chakra_store_attr[k], &attrs[k], &e)) attrs[k] = NULL;
    }
}

/* GPUs are read in runs of at most this many nodes (at least one GPU),
 * the runs' GPUs sharing their structure in memory (a stage's rows are
 * read once a run, not once a GPU: on the 4,096-GPU GPT-3 store reading
 * one GPU at a time was half the export's CPU time); a run of GPUs that
 * share nothing holds about 250 MB. */
#define EXPORT_RUN_NODES ((uint64_t)1 << 22)

/* The GPUs [first, *end) of one run. */
static void run_end(const lsim_store_gpu_info *t, size_t n, size_t first, size_t *end)
{
    uint64_t nodes = t[first].nodes;
    size_t e = first + 1;
    while (e < n && nodes + t[e].nodes <= EXPORT_RUN_NODES) nodes += t[e++].nodes;
    *end = e;
}

/* Every GPU's file under its temporary name (outs[i]), a run of GPUs in
 * memory at a time, and the run holding the graph whose node records the
 * cache holds: a GPU of the same structure is written by copying them
 * (chakra.h). */
static int write_all(const export_args *a, const char *prefix, size_t n, lsim_out **outs, uint64_t *nodes,
                     lsim_err *err)
{
    char *attrs[LSIM_CHAKRA_NSTORE_ATTRS];
    char path[4096];
    lsim_chakra_cache *cache = NULL;
    lsim_store_gpu_info *table = NULL;
    size_t nt = 0, ng = 0, nheld = 0;
    lsim_graph **gs = NULL, **held = NULL; /* held: the run the cache borrows from */
    read_store_attrs(a->store, attrs);
    int rc = lsim_chakra_cache_new(&cache, err);
    if (!rc) rc = lsim_store_gpu_table(a->store, &table, &nt, err);
    if (!rc && nt != n) rc = lsim_err_set(err, LSIM_EFORMAT, "%s: %zu GPUs in its table, %zu counted", a->store, nt, n);
    for (size_t first = 0, end = 0; !rc && first < n; first = end) {
        run_end(table, n, first, &end);
        rc = lsim_store_read_graphs_ex(a->store, first, end - first, LSIM_STORE_READ_SHARE, &gs, &ng, err);
        for (size_t k = 0; !rc && k < ng; k++) {
            size_t i = first + k;
            lsim_cli_tty_progress(0, "export: GPU %zu of %zu", i + 1, n);
            rc = et_name(path, sizeof path, a->dir, prefix, i, err);
            if (!rc) rc = lsim_out_begin(path, LSIM_OUT_REGULAR, 0, &outs[i], err);
            FILE *f = rc ? NULL : fopen(lsim_out_file(outs[i]), "wb");
            if (!rc && !f) rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
            if (!rc) rc = lsim_chakra_write_cached(f, path, gs[k], (const char *const *)attrs, cache, err);
            if (f && fclose(f) != 0 && !rc) rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
            if (!rc) *nodes += gs[k]->n;
        }
        int borrowed = 0; /* does the cache now hold a graph of this run? */
        for (size_t k = 0; gs && k < ng; k++) borrowed |= lsim_chakra_cache_graph(cache) == gs[k];
        if (borrowed) {
            lsim_store_free_graphs(held, nheld);
            held = gs, nheld = ng;
        } else {
            lsim_store_free_graphs(gs, ng);
        }
        gs = NULL, ng = 0;
    }
    lsim_chakra_cache_free(cache);
    lsim_store_free_graphs(held, nheld);
    lsim_store_gpu_table_free(table, nt);
    for (int k = 0; k < LSIM_CHAKRA_NSTORE_ATTRS; k++) free(attrs[k]);
    return rc;
}

/* The outputs as lsim_out_check sees them: the store is read, each file
 * written (none may be the store). */
static int check_outputs(const export_args *a, const char *prefix, size_t n, lsim_err *err)
{
    lsim_io_file *f = calloc(n + 1, sizeof *f);
    char **names = calloc(n + 1, sizeof *names);
    int rc = !f || !names ? lsim_err_set(err, LSIM_ENOMEM, "out of memory") : 0;
    char path[4096];
    if (!rc) f[0] = (lsim_io_file){a->store, "input", 0, LSIM_OUT_TEXT};
    for (size_t i = 0; !rc && i < n; i++) {
        rc = et_name(path, sizeof path, a->dir, prefix, i, err);
        if (!rc && !(names[i] = strdup(path))) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        if (!rc) f[i + 1] = (lsim_io_file){names[i], "--chakra", 1, LSIM_OUT_TEXT};
    }
    if (!rc) rc = lsim_out_check(f, n + 1, lsim_cli_force ? LSIM_OUT_FORCE : 0, err);
    for (size_t i = 0; names && i < n; i++) free(names[i]);
    free(names);
    free(f);
    return rc;
}

int lsim_cli_export(int argc, char **argv)
{
    static const lsim_cli_opt OPTS[] = {{"--chakra", NULL, "a directory", 1, 0}};
    export_args a = {NULL, NULL};
    lsim_cli_seen seen = {{0}, 0};
    lsim_cli_spec s = {"export", LSIM_USAGE_EXPORT, OPTS, 1, 0, NULL, &seen, on_export, &a};
    int p = lsim_cli_getopt(argc, argv, &s);
    if (p <= 0) return p < 0 ? 2 : 0;
    if (!a.dir || !a.store) {
        lsim_cli_usage_error("export needs --chakra DIR and a graph store (see lumosim export --help)");
        return 2;
    }
    lsim_err err = {0};
    lsim_out **outs = NULL;
    size_t n = 0;
    uint64_t nodes = 0;
    int made = 0, rc = 0;
    char prefix[256];
    store_prefix(a.store, prefix, sizeof prefix);
    lsim_store_kind kind = lsim_store_probe(a.store);
    if (kind != LSIM_STORE_GRAPHS && !(rc = lsim_store_refuse_kind(a.store, kind, "a graph store", &err)))
        rc = lsim_err_set(&err, LSIM_EARG, "%s: not a lumosim graph store (lumosim build, synth or whatif make one)",
                          a.store);
    if (!rc) rc = lsim_store_count_gpus(a.store, &n, &err);
    if (!rc) rc = prepare_dir(a.dir, prefix, n, &made, &err);
    if (!rc) rc = check_outputs(&a, prefix, n, &err);
    if (!rc && !(outs = calloc(n + 1, sizeof *outs))) rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
    if (!rc) rc = write_all(&a, prefix, n, outs, &nodes, &err);
    /* all or nothing: the files are renamed into place only once every
     * one is written */
    for (size_t i = 0; outs && i < n; i++) {
        if (!rc) rc = lsim_out_commit(outs[i], &err);
        else lsim_out_abort(outs[i]);
        outs[i] = NULL;
    }
    free(outs);
    lsim_cli_tty_progress_done();
    if (rc && made) rmdir(a.dir);
    if (rc) {
        lsim_cli_error("%s", err.msg);
        return 1;
    }
    printf("exported %zu GPU%s (%" PRIu64 " nodes) to %s/%s.RANK.et\n", n, n == 1 ? "" : "s", nodes, a.dir, prefix);
    return 0;
}

/* ------------------------------------------------------------ import */

typedef struct et_dir {
    char **paths; /* by rank */
    size_t n;
} et_dir;

static void et_dir_free(et_dir *d)
{
    for (size_t i = 0; d->paths && i < d->n; i++) free(d->paths[i]);
    free(d->paths);
}

/* DIR's PREFIX.RANK.et files, by rank: one prefix, ranks 0..N-1 each once. */
static int list_dir(const char *dir, et_dir *out, lsim_err *err)
{
    DIR *d = opendir(dir);
    if (!d) return lsim_err_set(err, LSIM_EIO, "%s: cannot read the directory: %s", dir, strerror(errno));
    int rc = 0;
    char prefix[256] = "", first[256] = "";
    size_t cap = 0, plen;
    long rank;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 3, ".et")) continue;
        if (!parse_et(e->d_name, &plen, &rank) || plen >= sizeof prefix) {
            rc = lsim_err_set(err, LSIM_EARG, "%s: %s is not named PREFIX.RANK.et", dir, e->d_name);
            break;
        }
        if (!first[0]) {
            snprintf(first, sizeof first, "%s", e->d_name);
            memcpy(prefix, e->d_name, plen);
            prefix[plen] = 0;
        } else if (strlen(prefix) != plen || strncmp(prefix, e->d_name, plen)) {
            rc = lsim_err_set(err, LSIM_EARG, "%s: %s and %s are of two jobs (prefixes differ)", dir, first, e->d_name);
            break;
        }
        if ((size_t)rank >= cap) {
            size_t nc = cap;
            if (LSIM_GROW(out->paths, &nc, (size_t)rank + 1)) {
                rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
                break;
            }
            memset(out->paths + cap, 0, (nc - cap) * sizeof *out->paths);
            cap = nc;
        }
        if ((size_t)rank + 1 > out->n) out->n = (size_t)rank + 1;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!(out->paths[rank] = strdup(path))) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    }
    closedir(d);
    if (!rc && !out->n) rc = lsim_err_set(err, LSIM_EARG, "%s: holds no Chakra ET files (PREFIX.RANK.et)", dir);
    for (size_t i = 0; !rc && i < out->n; i++)
        if (!out->paths[i])
            rc = lsim_err_set(err, LSIM_EARG, "%s: %s.%zu.et is missing (ranks 0 to %zu, one file each)", dir, prefix,
                              i, out->n - 1);
    return rc;
}

/* same[i]: the first GPU holding the structure GPU i shares in memory (the
 * read took it from that GPU's, chakra.h), -1 for the first and for a GPU
 * of its own; base[i] that GPU's graph: the store keeps one copy of the
 * rows, as synth writes them (lsim_store_writer_add_ex). */
static int shared_rows(lsim_graph **gs, size_t n, int64_t **same, const lsim_graph ***base, lsim_err *err)
{
    *same = malloc((n + 1) * sizeof **same);
    *base = calloc(n + 1, sizeof **base);
    if (!*same || !*base) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    /* the read shares a file's structure with the last graph it read
     * whole, so the GPUs sharing one come in a run; a structure met again
     * after another's run gets rows of its own once more (correct, larger) */
    size_t first = 0; /* the first GPU of the current run */
    for (size_t i = 0; i < n; i++) {
        (*same)[i] = -1;
        if (gs[i]->share_refs && i && gs[i]->share_refs == gs[first]->share_refs)
            (*same)[i] = (int64_t)first, (*base)[i] = gs[first];
        else
            first = i;
    }
    return 0;
}

/* The graphs into the store, with the store attributes rank 0's file
 * carries. */
static int write_store(const char *out, const char *cmd, lsim_graph **gs, const et_dir *d, char **attrs,
                       lsim_err *err)
{
    lsim_store_write_opts wo = {cmd, NULL, 0, {0}};
    lsim_store_writer *w = NULL;
    int64_t *same = NULL;
    const lsim_graph **base = NULL;
    int rc = shared_rows(gs, d->n, &same, &base, err);
    if (!rc) rc = lsim_store_writer_open(out, &wo, &w, err);
    if (!rc) rc = lsim_store_writer_add_ex(w, gs, d->n, (const char *const *)d->paths, same, base, err);
    for (int k = 0; !rc && k < LSIM_CHAKRA_NSTORE_ATTRS; k++)
        if (attrs[k]) rc = lsim_store_writer_set_attr(w, lsim_chakra_store_attr[k], attrs[k], err);
    if (!rc) {
        rc = lsim_store_writer_close(w, err); /* frees w, also on failure */
        w = NULL;
    }
    if (w) lsim_store_writer_abort(w);
    free(same);
    free(base);
    return rc;
}

int lsim_cli_build_chakra(const char *dir, const char *out, const char *cmd)
{
    lsim_err err = {0};
    et_dir d = {NULL, 0};
    lsim_graph **gs = NULL;
    lsim_job *job = NULL;
    char *attrs[LSIM_CHAKRA_NSTORE_ATTRS] = {NULL}, *more[LSIM_CHAKRA_NSTORE_ATTRS];
    char *in[1] = {(char *)dir};
    lsim_io_file bouts[1] = {{out, "-o", 1, LSIM_OUT_STORE}};
    int rc = lsim_cli_check_io(in, 1, bouts, 1, &err);
    if (!rc) rc = list_dir(dir, &d, &err);
    if (!rc && d.n > (size_t)LSIM_WORLD_MAX)
        rc = lsim_err_set(&err, LSIM_EARG, "%s: %zu ranks, over lumosim's bound of %d", dir, d.n, LSIM_WORLD_MAX);
    if (!rc && !(gs = calloc(d.n, sizeof *gs))) rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
    /* a GPU of the previous one's structure is compared, not unpacked
     * (chakra.h); the cache borrows graphs of gs, freed after it */
    lsim_chakra_cache *cache = NULL;
    if (!rc) rc = lsim_chakra_cache_new(&cache, &err);
    for (size_t i = 0; !rc && i < d.n; i++) {
        lsim_cli_tty_progress(0, "build: reading %s", d.paths[i]);
        rc = lsim_chakra_read_cached(d.paths[i], (int32_t)i, (int32_t)d.n, &gs[i], i ? more : attrs, cache, &err);
        for (int k = 0; !rc && i && k < LSIM_CHAKRA_NSTORE_ATTRS; k++) free(more[k]);
    }
    lsim_chakra_cache_free(cache);
    /* collectives matched across the ranks now, as sim will: a group the
     * ranks do not share is the files' error, not a later run's */
    if (!rc) rc = lsim_job_match(gs, d.n, &job, &err);
    lsim_job_free(job);
    if (!rc) rc = write_store(out, cmd, gs, &d, attrs, &err);
    lsim_cli_tty_progress_done();
    lsim_cli_outcome_known();
    for (size_t i = 0; gs && i < d.n; i++) lsim_graph_free(gs[i]);
    free(gs);
    for (int k = 0; k < LSIM_CHAKRA_NSTORE_ATTRS; k++) free(attrs[k]);
    et_dir_free(&d);
    if (rc) {
        lsim_cli_error("%s", err.msg);
        return 1;
    }
    return 0;
}
