/* lumosim collect: consolidate result archives into one CSV (see cli.h;
 * columns documented in docs/slurm.md).
 *
 * Every PATH is a result archive or a directory searched recursively for
 * *.h5 files; of those, the ones lsim_store_probe calls result archives are
 * read, the others (graph stores, foreign HDF5) are skipped with a note on
 * stderr; a FIFO or device under an archive's name is an error. Each file
 * is read once, however many names lead to it (d and ./d, a symbolic
 * link: same real path). The archives are sorted by path (byte order) and each run (name
 * order) and GPU (archive order) becomes one row, so the CSV depends only on
 * the files, not on the order of the arguments or of readdir. Fields are
 * quoted per RFC 4180 (CRLF line ends, a field with a comma, quote, CR or LF
 * in double quotes, quotes doubled). The CSV is written to a temporary name
 * and renamed when complete: a bad archive leaves no CSV behind. */
#define _DEFAULT_SOURCE /* realpath */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "lumosim/csv.h"
#include "lumosim/input.h"
#include "lumosim/text.h"

const char *const LSIM_USAGE_COLLECT =
    "usage: lumosim collect RESULT.h5|DIR... -o SWEEP.csv [--run NAME]\n"
    "\n"
    "Reads every run of every lumosim result archive given (a directory stands\n"
    "for the *.h5 result archives below it, searched recursively; other .h5\n"
    "files there are skipped with a note) and writes one CSV row per (file,\n"
    "run, GPU): window and breakdown actual/predicted, the job's span, and the\n"
    "run's provenance (command line, configuration, MPI ranks, version, time).\n"
    "Rows are sorted by file path, run name and GPU; columns: docs/slurm.md.\n"
    "\n"
    "options:\n"
    "  -o SWEEP.csv     the CSV to write (required; written atomically)\n"
    "  --run NAME       only run NAME (every archive must hold it)\n"
    "  -h, --help       this help\n";

/* The CSV header; every row has exactly these fields, in this order. */
static const char *const COLUMNS[] = {
    "file", "run", "gpu", "rank", "source", "latency_mode", "coupled", "clock_offset_ns",
    "window_actual_ns", "window_predicted_ns", "window_error",
    "exposed_compute_actual_ns", "overlapped_actual_ns", "exposed_comm_actual_ns", "exposed_comm_wait_actual_ns",
    "other_actual_ns",
    "exposed_compute_predicted_ns", "overlapped_predicted_ns", "exposed_comm_predicted_ns",
    "exposed_comm_wait_predicted_ns", "other_predicted_ns",
    "iterations", "run_gpus", "job_actual_ns", "job_predicted_ns", "job_error",
    "command_line", "config", "mpi_ranks", "mapping", "lumosim_version", "host", "created", "wall_seconds"};
#define NCOLUMNS (sizeof COLUMNS / sizeof *COLUMNS)

/* The archives found: v[i] as named (the CSV's file column), real[i] its
 * real path (symbolic links, "." and ".." resolved), which says whether two
 * names are one file. */
typedef struct path_list {
    char **v, **real;
    size_t n, capv, capreal;
} path_list;

static int list_add(path_list *l, const char *p, lsim_err *err)
{
    if (LSIM_GROW(l->v, &l->capv, l->n + 1) || LSIM_GROW(l->real, &l->capreal, l->n + 1))
        return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    char *rp = realpath(p, NULL); /* it exists (just probed); else the name stands for itself */
    if (!rp) rp = strdup(p);
    if (!rp) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (!(l->v[l->n] = strdup(p))) {
        free(rp);
        return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    }
    l->real[l->n++] = rp;
    return 0;
}

static void list_free(path_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i]);
        free(l->real[i]);
    }
    free(l->v);
    free(l->real);
}

/* An archive's names, to sort together by name. */
typedef struct named {
    char *v, *real;
    size_t at; /* position in name order */
} named;

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const named *)a)->v, ((const named *)b)->v);
}

static int cmp_real(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->real, y->real);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

static int ends_with_h5(const char *s)
{
    size_t n = strlen(s);
    return n > 3 && !strcmp(s + n - 3, ".h5");
}

/* Why a .h5 file found in a directory is not collected (in buf when it is
 * another lumosim kind). */
static const char *skip_reason(lsim_store_kind k, char *buf, size_t n)
{
    const char *name = lsim_store_kind_name(k);
    if (name) {
        snprintf(buf, n, "a %s, not a result archive", name);
        return buf;
    }
    return k == LSIM_STORE_OTHER ? "an HDF5 file but not a lumosim result archive" : "not readable as HDF5";
}

/* Collect the result archives under directory `dir` (symbolic links to
 * directories are not followed, so a link loop cannot recurse forever). */
static int walk(const char *dir, path_list *out, lsim_err *err)
{
    int rc = 0;
    char *p = NULL;
    DIR *d = opendir(dir);
    if (!d) return lsim_err_set(err, LSIM_EIO, "%s: cannot read directory: %s", dir, strerror(errno));
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno) rc = lsim_err_set(err, LSIM_EIO, "%s: cannot read directory: %s", dir, strerror(errno));
            break;
        }
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        free(p);
        if (!(p = malloc(len))) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
            break;
        }
        snprintf(p, len, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e->d_name);
        struct stat st;
        if (lstat(p, &st) != 0) continue; /* vanished meanwhile */
        if (S_ISDIR(st.st_mode)) {
            if ((rc = walk(p, out, err))) break;
            continue;
        }
        if (!ends_with_h5(e->d_name)) continue;
        if (stat(p, &st) != 0 || S_ISDIR(st.st_mode)) continue; /* a dangling link; a link to a directory */
        /* a FIFO (socket, device) under an archive's name: an error naming
         * it, neither opened (HDF5 would wait for a writer) nor skipped
         * unsaid */
        if (!S_ISREG(st.st_mode)) {
            rc = lsim_input_check(p, 0, NULL, err);
            break;
        }
        lsim_store_kind k = lsim_store_probe(p);
        if (k != LSIM_STORE_RESULTS) {
            char shown[1024], why[64]; /* one line, whatever the name holds (text.h) */
            fprintf(stderr, "lumosim: note: %s: skipped (%s)\n", lsim_text_line(shown, sizeof shown, p),
                    skip_reason(k, why, sizeof why));
            continue;
        }
        if ((rc = list_add(out, p, err))) break;
    }
    free(p);
    closedir(d);
    return rc;
}

/* Expand the arguments into a sorted list of distinct result archives. A
 * file named explicitly must be a result archive. */
static int expand(char **args, int nargs, path_list *out, lsim_err *err)
{
    int rc = 0;
    for (int i = 0; !rc && i < nargs; i++) {
        struct stat st;
        int is_dir = 0;
        if (stat(args[i], &st) != 0) {
            rc = lsim_err_set(err, LSIM_EIO, "%s: %s", args[i], strerror(errno));
        } else if ((rc = lsim_input_check(args[i], 1, &is_dir, err))) {
            /* a FIFO: "is a FIFO, not a file" */
        } else if (is_dir) {
            size_t before = out->n;
            rc = walk(args[i], out, err);
            if (!rc && out->n == before)
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: no lumosim result archive (*.h5) found", args[i]);
        } else {
            lsim_store_kind k = lsim_store_probe(args[i]);
            char why[64];
            if (k != LSIM_STORE_RESULTS && !(rc = lsim_store_refuse_kind(args[i], k, "a result archive", err)))
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: %s", args[i], skip_reason(k, why, sizeof why));
            else rc = list_add(out, args[i], err);
        }
    }
    if (rc) return rc;
    /* Sorted by name; then each file once, under the first of its names in
     * that order: a file given twice, also under a DIR, or by two names of
     * one file (d and ./d, a symbolic link). */
    named *t = malloc((out->n ? out->n : 1) * sizeof *t);
    if (!t) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < out->n; i++) t[i] = (named){out->v[i], out->real[i], 0};
    qsort(t, out->n, sizeof *t, cmp_name);
    for (size_t i = 0; i < out->n; i++) t[i].at = i;
    qsort(t, out->n, sizeof *t, cmp_real);
    for (size_t i = 1; i < out->n; i++)
        if (!strcmp(t[i].real, t[i - 1].real)) {
            free(t[i].v);
            t[i].v = NULL; /* the real path stays with the first */
        }
    for (size_t i = 0; i < out->n; i++) {
        out->v[t[i].at] = t[i].v;
        out->real[t[i].at] = t[i].v ? t[i].real : NULL;
        if (!t[i].v) free(t[i].real);
    }
    free(t);
    size_t k = 0;
    for (size_t i = 0; i < out->n; i++)
        if (out->v[i]) {
            out->v[k] = out->v[i];
            out->real[k++] = out->real[i];
        }
    out->n = k;
    return 0;
}

/* ------------------------------------------------------------ CSV output */

/* Text fields and doubles by the CSV rules of csv.h (lsim_csv_field,
 * lsim_csv_double): one copy of them for every CSV lumosim writes. */
static void put_str(FILE *f, const char *s, int last) { (void)lsim_csv_field(f, s, last); }

static void put_i64(FILE *f, int64_t v)
{
    fprintf(f, "%" PRId64 ",", v);
}

static void put_u64(FILE *f, uint64_t v)
{
    fprintf(f, "%" PRIu64 ",", v);
}

static void put_dbl(FILE *f, double v) { lsim_csv_double(f, v); }

/* An integer, or an empty field where it was not measured (docs/csv.md:
 * a synthesized or what-if GPU has no actual figures, never 0). */
static void put_obs_i64(FILE *f, int obs, int64_t v)
{
    if (obs) put_i64(f, v);
    else fputc(',', f);
}

/* job_obs: some GPU of the run was observed (the job's actual span exists) */
static void put_row(FILE *f, const char *path, const lsim_store_run *r, size_t i, lsim_ns ja, lsim_ns jp, int job_obs)
{
    const lsim_store_gpu_result *g = &r->gpus[i];
    const lsim_rank_report *rep = &g->report;
    const lsim_breakdown *a = &rep->bd_actual, *p = &rep->bd_predicted;
    int obs = lsim_report_observed(rep);
    put_str(f, path, 0);
    put_str(f, r->name, 0);
    put_u64(f, (uint64_t)i);
    put_i64(f, g->rank);
    put_str(f, g->source, 0);
    put_str(f, lsim_latency_mode_name(r->graphs ? r->graphs[i]->latency : r->latency), 0);
    put_i64(f, g->coupled ? 1 : 0);
    put_i64(f, g->clock_offset);
    put_obs_i64(f, obs, rep->window_actual);
    put_i64(f, rep->window_predicted);
    if (obs) put_dbl(f, lsim_rel_err(rep->window_actual, rep->window_predicted));
    else fputc(',', f);
    put_obs_i64(f, obs, a->exposed_compute);
    put_obs_i64(f, obs, a->overlapped);
    put_obs_i64(f, obs, a->exposed_comm);
    put_obs_i64(f, obs, a->exposed_comm_wait);
    put_obs_i64(f, obs, a->other);
    put_i64(f, p->exposed_compute);
    put_i64(f, p->overlapped);
    put_i64(f, p->exposed_comm);
    put_i64(f, p->exposed_comm_wait);
    put_i64(f, p->other);
    put_u64(f, rep->niters);
    put_u64(f, (uint64_t)r->ngpus);
    put_obs_i64(f, job_obs, ja);
    put_i64(f, jp);
    if (job_obs) put_dbl(f, lsim_rel_err(ja, jp));
    else fputc(',', f);
    put_str(f, r->command_line, 0);
    put_str(f, r->config, 0);
    if (r->mpi_ranks > 0) fprintf(f, "%d,", r->mpi_ranks);
    else fputc(',', f);
    put_str(f, r->mapping, 0);
    put_str(f, r->lumosim_version, 0);
    put_str(f, r->host, 0);
    put_str(f, r->created, 0);
    if (r->wall_seconds > 0) fprintf(f, "%.6f\r\n", r->wall_seconds);
    else fputs("\r\n", f);
}

typedef struct collect_ctx {
    const path_list *files;
    const char *run_name; /* NULL: every run */
} collect_ctx;

/* One archive's rows (one run at a time in memory). */
static int write_file(FILE *f, const char *path, const char *only, lsim_err *err)
{
    char **names = NULL;
    size_t nnames = 0;
    lsim_store_run *r = NULL;
    lsim_replay_item *items = NULL;
    int rc = lsim_store_list_runs(path, &names, &nnames, err);
    if (!rc && only) {
        size_t k = 0;
        while (k < nnames && strcmp(names[k], only)) k++;
        if (k == nnames) rc = lsim_err_set(err, LSIM_EARG, "%s: holds no run named %s", path, only);
    }
    if (!rc && !nnames) rc = lsim_err_set(err, LSIM_EFORMAT, "%s: the result archive holds no runs", path);
    for (size_t k = 0; !rc && k < nnames; k++) {
        if (only && strcmp(names[k], only)) continue;
        /* the per-GPU table only (a row per GPU: no graph, time or bin of
         * a 100,000-GPU run held); the graphs only for the GPUs' latency
         * modes when the run's attribute says "mixed" (or is absent) */
        if ((rc = lsim_store_read_results_ex(path, names[k], LSIM_STORE_READ_NO_GRAPHS | LSIM_STORE_READ_NO_DUTY, &r,
                                             err)))
            break;
        if (!r->latency_known) {
            lsim_store_run_free(r);
            r = NULL;
            if ((rc = lsim_store_read_results_ex(path, names[k], LSIM_STORE_READ_NO_TIMES | LSIM_STORE_READ_NO_DUTY, &r,
                                                 err)))
                break;
        }
        items = calloc(r->ngpus ? r->ngpus : 1, sizeof *items);
        if (!items) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
            break;
        }
        for (size_t i = 0; i < r->ngpus; i++) items[i].r = &r->gpus[i].report;
        lsim_ns ja = 0, jp = 0;
        lsim_report_job_span(items, r->ngpus, &ja, &jp);
        int job_obs = 0;
        for (size_t i = 0; i < r->ngpus; i++) job_obs |= lsim_report_observed(&r->gpus[i].report);
        for (size_t i = 0; i < r->ngpus; i++) put_row(f, path, r, i, ja, jp, job_obs);
        if (ferror(f)) rc = lsim_err_set(err, LSIM_EIO, "cannot write the CSV: %s", strerror(errno));
        free(items);
        items = NULL;
        lsim_store_run_free(r);
        r = NULL;
    }
    free(items);
    lsim_store_run_free(r);
    for (size_t k = 0; k < nnames; k++) free(names[k]);
    free(names);
    return rc;
}

static int write_csv(FILE *f, void *vctx, lsim_err *err)
{
    const collect_ctx *c = vctx;
    for (size_t k = 0; k < NCOLUMNS; k++) put_str(f, COLUMNS[k], k + 1 == NCOLUMNS);
    int rc = 0;
    for (size_t i = 0; !rc && i < c->files->n; i++) {
        /* a sweep is hundreds of archives: say which one is being read */
        lsim_cli_tty_progress(i == 0 || i + 1 == c->files->n, "collect: %zu of %zu archives read (%s)", i,
                              c->files->n, c->files->v[i]);
        rc = write_file(f, c->files->v[i], c->run_name, err);
    }
    lsim_cli_tty_progress_done();
    return rc;
}

int lsim_cli_collect(int argc, char **argv)
{
    lsim_cli_collect_args ca;
    int status = 0;
    lsim_err err = {0};
    path_list files = {0};
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    if (!args) {
        lsim_cli_error("out of memory");
        return 1;
    }
    int p = lsim_cli_parse_collect(argc, argv, LSIM_USAGE_COLLECT, &ca, args);
    if (p <= 0) {
        status = p < 0 ? 2 : 0;
        goto cleanup;
    }
    const char *out = ca.out, *run_name = ca.run_name;
    int nargs = ca.nargs;
    collect_ctx ctx = {&files, run_name};
    lsim_io_file outs[1] = {{out, "-o", 1, LSIM_OUT_TEXT}};
    if (lsim_cli_check_io(args, nargs, outs, 1, &err) || expand(args, nargs, &files, &err) ||
        lsim_cli_write_atomic(out, write_csv, &ctx, &err)) {
        lsim_cli_error("%s", err.msg);
        status = 1;
    }
cleanup:
    list_free(&files);
    free(args);
    return status;
}
