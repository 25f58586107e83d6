/* The replay pipeline shared by the simulating commands (see cli.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lumosim/et.h"
#include "lumosim/input.h"
#include "lumosim/memlimit.h"
#include "lumosim/output.h"
#include "lumosim/tmpfiles.h"

void lsim_cli_opts_default(lsim_cli_opts *o)
{
    memset(o, 0, sizeof *o);
    lsim_build_opts_default(&o->bo);
    o->bo.release_events = 1; /* the CLI frees each trace right after its build */
    o->bin_ns = 1000000;
    o->replicate_from = -1;
}

static const struct {
    const char *name;
    unsigned mask;
    int zero_launch;
} DROP_NAMES[] = {
    {"event", 1u << LSIM_E_EVENT, 0},
    {"hidden", 1u << LSIM_E_INFERRED, 0},
    {"sync", 1u << LSIM_E_SYNC, 0},
    {"cpu_cross_thread", 1u << LSIM_E_CPU_XTHREAD, 0},
    {"xthread", 1u << LSIM_E_CPU_XTHREAD, 0},
    {"launch_latency", 0, 1},
    /* dPRO-like baseline: each thread in order, launches, each stream in
     * order; no cross-stream, sync or cross-thread dependencies */
    {"dpro", (1u << LSIM_E_EVENT) | (1u << LSIM_E_INFERRED) | (1u << LSIM_E_SYNC) | (1u << LSIM_E_CPU_XTHREAD), 0},
};

static int parse_drop(lsim_cli_opts *o, const char *list)
{
    char buf[256];
    if (strlen(list) >= sizeof buf) {
        lsim_cli_usage_error("--drop-edges: the list is too long");
        return -1;
    }
    strcpy(buf, list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t k = 0;
        while (k < sizeof DROP_NAMES / sizeof *DROP_NAMES && strcmp(DROP_NAMES[k].name, tok)) k++;
        if (k == sizeof DROP_NAMES / sizeof *DROP_NAMES) {
            lsim_cli_usage_error("--drop-edges: unknown class '%s' (event, hidden, sync, cpu_cross_thread, "
                                 "launch_latency, dpro)",
                                 tok);
            return -1;
        }
        o->drop_mask |= DROP_NAMES[k].mask;
        o->zero_launch_latency |= DROP_NAMES[k].zero_launch;
    }
    return 0;
}

/* Each shared option at most once (args.c): given twice it is a usage
 * error, as for the commands' own options. */
int lsim_cli_common_opt(lsim_cli_opts *o, int argc, char **argv, int *i)
{
    static const char *const NAMES[] = {"--json",    "--independent", "--replicate-from", "--stats",     "--critical-path",
                                        "--latency", "--bin-ms",      "--drop-edges",     "--trace-out"};
    const char *a = argv[*i], *v;
    size_t k = 0;
    /* the flags (all but --replicate-from among the first five) match
     * exactly; options with a value also as --name=VALUE */
    while (k < sizeof NAMES / sizeof *NAMES &&
           !((k < 5 && k != 2) ? !strcmp(a, NAMES[k]) : lsim_cli_is_opt(a, NAMES[k])))
        k++;
    if (k == sizeof NAMES / sizeof *NAMES) return 0;
    if (lsim_cli_once(&o->seen, NAMES[k])) return -1;
    switch (k) {
    case 0: o->json = 1; break;
    case 1: o->independent = 1; break;
    case 2: {
        if (!(v = lsim_cli_value(argc, argv, i, "a rank number"))) return -1;
        char *e = NULL;
        long x = strtol(v, &e, 10);
        if (*e || e == v || x < 0 || x > 1000000) {
            lsim_cli_usage_error("--replicate-from takes a rank number (got '%s')", v);
            return -1;
        }
        o->replicate_from = (int)x;
        break;
    }
    case 3: o->stats = 1; break;
    case 4: o->critical = 1; break;
    case 5:
        if (!(v = lsim_cli_value(argc, argv, i, "model or observed"))) return -1;
        if (!strcmp(v, "model")) o->bo.latency = LSIM_LAT_MODEL;
        else if (!strcmp(v, "observed")) o->bo.latency = LSIM_LAT_OBSERVED;
        else {
            lsim_cli_usage_error("--latency takes 'model' or 'observed'");
            return -1;
        }
        break;
    case 6: {
        if (!(v = lsim_cli_value(argc, argv, i, "a number of milliseconds"))) return -1;
        char *e = NULL;
        double x = strtod(v, &e);
        if (*e || !(x > 0) || x > 1e6) {
            lsim_cli_usage_error("--bin-ms takes a positive number of milliseconds");
            return -1;
        }
        o->bin_ns = (lsim_ns)(x * 1e6);
        if (o->bin_ns < 1) o->bin_ns = 1;
        break;
    }
    case 7:
        if (!(v = lsim_cli_value(argc, argv, i, "edge classes")) || parse_drop(o, v)) return -1;
        break;
    default:
        if (!(v = lsim_cli_value(argc, argv, i, "a file name"))) return -1;
        o->trace_out = v;
        o->critical = 1; /* the trace marks the path */
        break;
    }
    return 1;
}

/* ----------------------------------------------------------- paths */

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int push_path(lsim_cli_run *r, size_t *cap, const char *s)
{
    if (r->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        char **nv = realloc(r->paths, nc * sizeof *nv);
        if (!nv) return LSIM_ENOMEM;
        r->paths = nv;
        *cap = nc;
    }
    if (!(r->paths[r->n] = strdup(s))) return LSIM_ENOMEM;
    r->n++;
    return 0;
}

/* Files as given; a directory stands for its *.json / *.json.gz files in
 * name order, execution traces (*.et.json*) skipped. Only regular files and
 * directories: a FIFO (or socket, device) given or found under a trace's
 * name is an error naming it, never opened (reading it would wait for a
 * writer) nor skipped unsaid (input.h); other names in a directory are not
 * traces whatever their type. */
static int expand_paths(char **args, int nargs, lsim_cli_run *r, lsim_err *err)
{
    size_t cap = 0;
    for (int i = 0; i < nargs; i++) {
        int is_dir = 0, rc = lsim_input_check(args[i], 1, &is_dir, err);
        if (rc) return rc;
        if (!is_dir) {
            if (push_path(r, &cap, args[i])) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
            continue;
        }
        DIR *d = opendir(args[i]);
        if (!d) return lsim_err_set(err, LSIM_EIO, "%s: cannot open directory: %s", args[i], strerror(errno));
        size_t first = r->n;
        struct dirent *de;
        while ((de = readdir(d))) {
            const char *nm = de->d_name;
            if (nm[0] == '.' || strstr(nm, ".et.json")) continue;
            if (!ends_with(nm, ".json") && !ends_with(nm, ".json.gz")) continue;
            size_t len = strlen(args[i]) + strlen(nm) + 2;
            char *p = malloc(len);
            if (!p) {
                rc = LSIM_ENOMEM;
                break;
            }
            snprintf(p, len, "%s%s%s", args[i], ends_with(args[i], "/") ? "" : "/", nm);
            if ((rc = lsim_input_check(p, 0, NULL, err))) {
                free(p);
                break;
            }
            if ((rc = push_path(r, &cap, p))) lsim_err_set(err, LSIM_ENOMEM, "out of memory");
            free(p);
            if (rc) break;
        }
        closedir(d);
        if (rc == LSIM_ENOMEM) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        if (rc) return rc;
        if (r->n == first)
            return lsim_err_set(err, LSIM_ETRACE, "%s: directory holds no *.json or *.json.gz traces", args[i]);
        qsort(r->paths + first, r->n - first, sizeof *r->paths, cmp_str);
    }
    return 0;
}

/* ----------------------------------------------------------- progress */

typedef struct progress {
    int on;
    const char *path;
    double t0;
} progress;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress_line(progress *p, const char *what)
{
    if (p->on) fprintf(stderr, "\r\033[Klumosim: %s: %s", p->path, what);
}

static void on_bytes(void *ctx, uint64_t bytes)
{
    progress *p = ctx;
    char buf[96];
    double dt = now_s() - p->t0;
    snprintf(buf, sizeof buf, "reading, %.0f MB (%.0f MB/s)", (double)bytes / 1e6, dt > 0 ? (double)bytes / 1e6 / dt : 0);
    progress_line(p, buf);
}

static long peak_rss_kib(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* ----------------------------------------------------------- the run */

void lsim_cli_run_free(lsim_cli_run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (!r->paths) break;
        if (r->graphs) lsim_graph_free(r->graphs[i]);
        if (r->engines) lsim_engine_free(r->engines[i]);
        if (r->reps) lsim_rank_report_clear(&r->reps[i]);
        if (r->cps) lsim_critical_path_clear(&r->cps[i]);
        free(r->paths[i]);
    }
    lsim_job_free(r->job);
    for (size_t i = 0; r->truth && i < r->ntruth; i++) lsim_graph_free(r->truth[i]);
    free(r->truth);
    free(r->graphs);
    free(r->engines);
    free(r->reps);
    free(r->cps);
    free(r->items);
    free(r->paths);
    memset(r, 0, sizeof *r);
}

int lsim_cli_expand(char **args, int nargs, lsim_cli_run *r, lsim_err *err)
{
    return expand_paths(args, nargs, r, err);
}

/* Append graph g (owned from now on) with its display path. */
static int push_graph(lsim_cli_run *r, size_t *cap, lsim_graph *g, const char *path)
{
    if (r->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        lsim_graph **ng = realloc(r->graphs, nc * sizeof *ng);
        if (!ng) return LSIM_ENOMEM;
        r->graphs = ng;
        char **np = realloc(r->paths, nc * sizeof *np);
        if (!np) return LSIM_ENOMEM;
        r->paths = np;
        *cap = nc;
    }
    r->paths[r->n] = strdup(path);
    if (!r->paths[r->n]) return LSIM_ENOMEM;
    r->graphs[r->n++] = g;
    return 0;
}

/* The execution trace beside a Kineto trace (PATH minus .json[.gz] plus
 * .et.json[.gz]), if there is one, fills in the process groups and sizes
 * its collective kernels do not carry (et.h), before the graph is built. */
static int apply_sibling_et(const lsim_cli_opts *o, lsim_trace *t, lsim_err *err)
{
    char *etp = NULL;
    lsim_et_apply_stats st;
    int rc = lsim_et_apply_sibling(t, &st, &etp, err);
    if (!rc && etp && o->stats)
        fprintf(stderr, "lumosim: stats: %s: execution trace %s: %zu of %zu collective kernels paired, %zu took their "
                        "process group from it, %zu their sizes\n",
                t->path, etp, st.matched, st.kernels, st.group_filled, st.size_filled);
    free(etp);
    return rc;
}

/* A merged multi-rank file (TraceLens TraceFusion, KINETO-NOTES trap 10:
 * every event tagged args.rank) is one job: one graph per rank, ranks
 * 0..N-1 of a world of N, each from the file read again and cut to its
 * rank (lsim_trace_keep_rank), labelled "PATH [rank R]". t is the first
 * read; *merged says whether it was one (then t is the caller's to free and
 * nothing else of it is used). Ranks that are not 0..N-1: one error line. */
static int load_merged(const lsim_cli_opts *o, const char *path, lsim_trace *t, lsim_cli_run *r, size_t *cap,
                       int *merged, lsim_err *err)
{
    int32_t *rk = NULL;
    size_t n = 0;
    *merged = 0;
    if (lsim_trace_row_ranks(t, &rk, &n)) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
    int rc = 0;
    if (n < 2) goto cleanup;
    *merged = 1;
    for (size_t q = 0; q < n && !rc; q++)
        if (rk[q] != (int32_t)q)
            rc = lsim_err_set(err, LSIM_ETRACE,
                              "%s: a merged file of %zu ranks whose events name rank %d: ranks must be 0..%zu "
                              "(rank %zu is missing)",
                              path, n, rk[q], n - 1, q);
    for (size_t q = 0; q < n && !rc; q++) {
        lsim_trace *u = NULL;
        lsim_graph *g = NULL;
        rc = lsim_trace_read(path, &u, err);
        if (!rc) rc = lsim_trace_keep_rank(u, (int32_t)q, (int32_t)n, err);
        if (!rc) rc = lsim_graph_build(u, &o->bo, &g, err);
        lsim_trace_free(u);
        size_t len = strlen(path) + 32;
        char *label = rc ? NULL : malloc(len);
        if (label) snprintf(label, len, "%s [rank %zu]", path, q);
        if (!rc && g && label) {
            free(g->source);
            g->source = label;
            label = NULL;
        }
        /* the file's own path: build checksums it as the graph's source */
        if (!rc && (!g || !g->source || push_graph(r, cap, g, path)))
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        free(label);
        if (rc) lsim_graph_free(g);
    }
cleanup:
    free(rk);
    return rc;
}

int lsim_cli_load(const lsim_cli_opts *o, char **args, int nargs, lsim_cli_run *r, lsim_err *err)
{
    lsim_cli_run files = {0};
    size_t cap = 0;
    int rc = 0;
    progress pg = {isatty(STDERR_FILENO) && !o->stats, NULL, 0};
    /* Refuse up front what would not fit in memory (memlimit.h), rather
     * than be killed by the OOM killer half-way. Paths that do not expand
     * are left for the loop below to report in order. */
    {
        lsim_cli_run all = {0};
        lsim_err perr = {0};
        int bad = 0;
        for (int a = 0; a < nargs && !bad; a++)
            if (lsim_store_probe(args[a]) == LSIM_STORE_NOT_HDF5) bad = expand_paths(&args[a], 1, &all, &perr);
        uint64_t json = 0;
        if (!bad) rc = lsim_mem_check_inputs((const char *const *)all.paths, all.n, &json, err);
        /* outputs that would not fit on disk, before the work (sizes in
         * memlimit.h, with a margin) */
        if (!rc) rc = lsim_disk_check(o->trace_out, json / 10, err);
        if (!rc) rc = lsim_disk_check(o->html_out, json / 100, err);
        if (!rc) rc = lsim_disk_check(o->store_out, json / 25, err);
        lsim_cli_run_free(&all);
        if (rc) return rc;
    }
    for (int a = 0; a < nargs && !rc; a++) {
        lsim_store_kind kind = lsim_store_probe(args[a]);
        if (kind == LSIM_STORE_RESULTS) {
            rc = lsim_err_set(err, LSIM_EARG, "%s: is a result file, not traces or a graph store (see lumosim report / info)",
                              args[a]);
            break;
        }
        if (kind == LSIM_STORE_NOT_HDF5) {
            /* an HDF5 file HDF5 cannot open is damaged, not a trace */
            unsigned char sig[8] = {0};
            FILE *f = NULL;
            lsim_err ignored = {0}; /* not a regular file: expand_paths below says why */
            if (lsim_input_fopen(args[a], &f, &ignored)) f = NULL;
            size_t got = f ? fread(sig, 1, sizeof sig, f) : 0;
            if (f) fclose(f);
            if (got == 8 && !memcmp(sig, "\x89HDF\r\n\x1a\n", 8)) {
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: truncated or corrupt HDF5 file", args[a]);
                break;
            }
        }
        if (kind == LSIM_STORE_GRAPHS || kind == LSIM_STORE_OTHER) {
            lsim_graph **gs = NULL;
            size_t ng = 0;
            pg.path = args[a];
            progress_line(&pg, "loading the graph store");
            if ((rc = lsim_store_read_graphs(args[a], 0, SIZE_MAX, &gs, &ng, err))) break;
            for (size_t k = 0; k < ng; k++) {
                if (!rc && push_graph(r, &cap, gs[k], gs[k]->source)) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
                if (rc) lsim_graph_free(gs[k]);
            }
            free(gs);
            continue;
        }
        /* traces: a file or a directory of them */
        rc = expand_paths(&args[a], 1, &files, err); /* on an error, what it found is freed below */
        for (size_t i = 0; i < files.n && !rc; i++) {
            lsim_trace *t = NULL;
            lsim_graph *g = NULL;
            pg.path = files.paths[i];
            pg.t0 = now_s();
            progress_line(&pg, "reading");
            double t0 = now_s();
            rc = lsim_trace_read_ex(files.paths[i], pg.on ? on_bytes : NULL, &pg, &t, err);
            int merged = 0;
            if (!rc && (rc = load_merged(o, files.paths[i], t, r, &cap, &merged, err)) == 0 && merged) {
                lsim_trace_free(t);
                continue;
            }
            if (!rc) rc = apply_sibling_et(o, t, err);
            double t1 = now_s();
            uint64_t bytes = t ? t->bytes_read : 0, evs = t ? t->events_seen : 0;
            progress_line(&pg, "building the graph");
            if (!rc) rc = lsim_graph_build(t, &o->bo, &g, err);
            lsim_trace_free(t);
            if (!rc && o->stats)
                fprintf(stderr, "lumosim: stats: %s: %.1f MB uncompressed, %llu events, ingest %.3f s (%.1f MB/s), "
                                "build %.3f s, %zu nodes %llu edges\n",
                        files.paths[i], (double)bytes / 1e6, (unsigned long long)evs, t1 - t0,
                        t1 > t0 ? (double)bytes / 1e6 / (t1 - t0) : 0, now_s() - t1, g->n, (unsigned long long)g->nedges);
            if (!rc && push_graph(r, &cap, g, files.paths[i])) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
            if (rc) lsim_graph_free(g);
        }
        for (size_t i = 0; i < files.n; i++) free(files.paths[i]);
        free(files.paths);
        memset(&files, 0, sizeof files);
    }
    if (pg.on) fputs("\r\033[K", stderr);
    return rc;
}

lsim_replay_item lsim_cli_item(const lsim_cli_run *r, size_t i, int with_cp, int coupled, lsim_ns clock_offset)
{
    const lsim_engine *e = r->engines[i];
    return (lsim_replay_item){r->graphs[i],        &r->reps[i],
                              lsim_engine_start(e), lsim_engine_end(e),
                              lsim_engine_bind_start(e), lsim_engine_bind_end(e),
                              with_cp ? &r->cps[i] : NULL, coupled,
                              clock_offset};
}

int lsim_cli_finish_gpu(const lsim_cli_opts *o, lsim_cli_run *r, size_t i, size_t gpu, lsim_err *err)
{
    lsim_graph *g = r->graphs[i];
    const lsim_engine *e = r->engines[i];
    lsim_ns *wait = malloc((g->n ? g->n : 1) * sizeof *wait);
    if (!wait) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the simulated waits", g->source);
    lsim_job_waits(r->job, gpu, lsim_engine_start(e), lsim_engine_end(e), g->n, wait);
    int rc = lsim_metrics_compute_ex(g, lsim_engine_start(e), lsim_engine_end(e), o->bin_ns, r->job->obs_wait[gpu],
                                     wait, &r->reps[i], err);
    free(wait);
    if (!rc && o->critical) rc = lsim_critical_path_compute(g, e, &r->cps[i], err);
    r->items[i] = lsim_cli_item(r, i, o->critical, 1, r->job->clock_offset[gpu]);
    return rc;
}

/* Ablate (if asked), then one engine per local GPU over one large
 * allocation (lsim_engines_new, lsim_alloc_big): written first during the
 * run, the engines' state is most of the fresh memory a run touches. The
 * simulated waits are not kept during the run; lsim_cli_finish_gpu recovers
 * them (lsim_job_waits). */
int lsim_cli_engines(const lsim_cli_opts *o, lsim_cli_run *r, lsim_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < r->n && !rc; i++) {
        lsim_graph *g = r->graphs[i];
        if (o->drop_mask || o->zero_launch_latency) rc = lsim_graph_ablate(g, o->drop_mask, o->zero_launch_latency, err);
    }
    if (rc) return rc;
    return lsim_engines_new((const lsim_graph *const *)r->graphs, r->n, r->engines, err);
}

/* The inputs are the ranks of one job: each graph says its rank and the
 * world size, and together they are ranks 0..n-1 of a world of n. */
static int one_job(const lsim_cli_run *r)
{
    if (r->n < 2) return 0;
    for (size_t i = 0; i < r->n; i++) /* observed latency replays each rank exactly, alone */
        if (r->graphs[i]->latency != LSIM_LAT_MODEL) return 0;
    unsigned char *seen = calloc(r->n, 1);
    int ok = seen != NULL;
    for (size_t i = 0; ok && i < r->n; i++) {
        const lsim_graph *g = r->graphs[i];
        if (g->world_size != (int32_t)r->n || g->rank < 0 || (size_t)g->rank >= r->n || seen[g->rank]) ok = 0;
        else seen[g->rank] = 1;
    }
    free(seen);
    return ok;
}

/* All ranks of one job together: collectives matched across GPUs, clocks
 * aligned, one joint run. */
/* A job rebuilt from one rank (--replicate-from): every copy observed the
 * same durations, and each of them includes that rank's waiting for its
 * peers. The least biased transfer estimate the one trace gives for a
 * collective is the shortest duration among that rank's collectives of the
 * same kind and size (the instance where it waited least). */
static void replicated_transfers(lsim_job *j, const lsim_graph *g)
{
    for (size_t k = 0; k < j->ninst; k++) {
        uint32_t v0 = j->part_node[j->part_off[k]];
        const lsim_coll_info *c0 = &g->colls[g->coll[v0]];
        if (g->obs_start[v0] == LSIM_OBS_NONE) continue; /* never observed: the matcher's modelled transfer stands */
        lsim_ns best = g->obs_end[v0] - g->obs_start[v0];
        for (size_t v = 0; v < g->n; v++) {
            if (!(g->flags[v] & LSIM_NF_COLL) || g->coll[v] < 0) continue;
            const lsim_coll_info *c = &g->colls[g->coll[v]];
            if (c->kind != c0->kind || c->bytes != c0->bytes || g->obs_start[v] == LSIM_OBS_NONE) continue;
            if (g->obs_end[v] - g->obs_start[v] < best) best = g->obs_end[v] - g->obs_start[v];
        }
        j->transfer[k] = best;
    }
}

static int simulate_job(const lsim_cli_opts *o, lsim_cli_run *r, lsim_err *err)
{
    double t0 = now_s();
    int rc = lsim_job_match(r->graphs, r->n, &r->job, err);
    if (rc) return rc;
    if (o->replicate_from >= 0) replicated_transfers(r->job, r->graphs[0]);
    lsim_job_align_clocks(r->job);
    double t1 = now_s();
    r->match_s = t1 - t0;
    rc = lsim_cli_engines(o, r, err);
    double t1b = now_s();
    r->setup_s = t1b - t1;
    if (!rc) rc = lsim_job_run(r->job, r->engines, NULL, err);
    double t2 = now_s();
    r->simulate_s = t2 - t1b;
    for (size_t i = 0; i < r->n && !rc; i++) rc = lsim_cli_finish_gpu(o, r, i, i, err);
    r->metrics_s = now_s() - t2;
    return rc;
}

int lsim_cli_check_ranks(const lsim_cli_run *r, lsim_err *err)
{
    for (size_t i = 0; i < r->n; i++) {
        const lsim_graph *g = r->graphs[i];
        if (g->world_size >= 1 && (g->rank < -1 || g->rank >= g->world_size))
            return lsim_err_set(err, LSIM_ETRACE, "%s: rank %d is outside 0..%d (world size %d)", r->paths[i],
                                g->rank, g->world_size - 1, g->world_size);
    }
    return 0;
}

/* Distributed traces (world size > 1) given together must be the ranks of
 * one job: no mixed world sizes, no rank twice, none missing. */
static int check_job(const lsim_cli_run *r, lsim_err *err)
{
    int rc = lsim_cli_check_ranks(r, err);
    if (rc) return rc;
    if (r->n < 2) return 0;
    int32_t w = r->graphs[0]->world_size;
    for (size_t i = 0; i < r->n; i++) {
        if (r->graphs[i]->world_size < 2 || r->graphs[i]->rank < 0) return 0; /* not distributed traces */
        if (r->graphs[i]->latency != LSIM_LAT_MODEL) return 0; /* observed: each rank replays alone */
    }
    for (size_t i = 1; i < r->n; i++)
        if (r->graphs[i]->world_size != w)
            return lsim_err_set(err, LSIM_ETRACE, "%s and %s: traces of different jobs (world size %d and %d)",
                                r->paths[0], r->paths[i], w, r->graphs[i]->world_size);
    for (size_t i = 0; i < r->n; i++)
        for (size_t k = i + 1; k < r->n; k++)
            if (r->graphs[i]->rank == r->graphs[k]->rank)
                return lsim_err_set(err, LSIM_ETRACE, "%s and %s: both are rank %d", r->paths[i], r->paths[k],
                                    r->graphs[i]->rank);
    if ((int32_t)r->n != w) {
        int32_t miss = -1;
        for (int32_t q = 0; q < w && miss < 0; q++) {
            size_t i = 0;
            while (i < r->n && r->graphs[i]->rank != q) i++;
            if (i == r->n) miss = q;
        }
        return lsim_err_set(err, LSIM_ETRACE,
                            "%s: %zu traces of a job of %d ranks: rank %d is missing (give every rank's trace, or "
                            "--independent to replay each on its own)",
                            r->paths[0], r->n, w, miss);
    }
    return 0;
}

int lsim_cli_simulate(const lsim_cli_opts *o, lsim_cli_run *r, lsim_err *err)
{
    int rc = 0;
    r->engines = calloc(r->n ? r->n : 1, sizeof *r->engines);
    r->reps = calloc(r->n ? r->n : 1, sizeof *r->reps);
    r->cps = calloc(r->n ? r->n : 1, sizeof *r->cps);
    r->items = calloc(r->n ? r->n : 1, sizeof *r->items);
    if (!r->engines || !r->reps || !r->cps || !r->items) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (!o->independent) {
        if ((rc = check_job(r, err))) return rc;
        if (one_job(r)) return simulate_job(o, r, err);
        /* several traces that name no rank: say what happens, and how to
         * get the job (KINETO-NOTES: "Many files have none of these") */
        int unnamed = r->n >= 2;
        for (size_t i = 0; unnamed && i < r->n; i++) unnamed = r->graphs[i]->world_size < 0;
        if (unnamed)
            fprintf(stderr,
                    "lumosim: note: the %zu traces name no rank (no distributedInfo): each is replayed on its own, "
                    "not as one job; to simulate them together, each trace needs \"distributedInfo\": {\"rank\": R, "
                    "\"world_size\": %zu}\n",
                    r->n, r->n);
    }
    progress pg = {isatty(STDERR_FILENO) && !o->stats, NULL, 0};
    for (size_t i = 0; i < r->n; i++) {
        lsim_graph *g = r->graphs[i];
        pg.path = r->paths[i];
        progress_line(&pg, "simulating");
        if (o->drop_mask || o->zero_launch_latency) rc = lsim_graph_ablate(g, o->drop_mask, o->zero_launch_latency, err);
        double t2 = now_s();
        if (!rc) rc = lsim_engine_new(g, &r->engines[i], err);
        if (!rc) rc = lsim_engine_run(r->engines[i], err);
        double t3 = now_s();
        const lsim_engine *e = r->engines[i];
        if (!rc) rc = lsim_metrics_compute(g, lsim_engine_start(e), lsim_engine_end(e), o->bin_ns, &r->reps[i], err);
        if (!rc && o->critical) rc = lsim_critical_path_compute(g, e, &r->cps[i], err);
        r->simulate_s += t3 - t2;
        r->metrics_s += now_s() - t3;
        if (rc) break;
        if (o->stats) {
            double sim = t3 - t2;
            fprintf(stderr, "lumosim: stats: %s: simulate %.4f s (%.1f M node-events/s), peak RSS %.1f MiB\n",
                    r->paths[i], sim, sim > 0 ? (double)lsim_engine_events(e) / 1e6 / sim : 0,
                    (double)peak_rss_kib() / 1024.0);
        }
        r->items[i] = lsim_cli_item(r, i, o->critical, 0, 0);
    }
    if (pg.on) fputs("\r\033[K", stderr);
    return rc;
}

/* --replicate-from R: keep rank R's graph only and copy it to every rank of
 * its world (the copies' collectives match by sequence on the world group). */
static int replicate(const lsim_cli_opts *o, lsim_cli_run *r, lsim_err *err)
{
    size_t src = r->n;
    for (size_t i = 0; i < r->n; i++)
        if (r->graphs[i]->rank == o->replicate_from) src = i;
    if (src == r->n) return lsim_err_set(err, LSIM_EARG, "--replicate-from %d: no trace of rank %d among the inputs",
                                         o->replicate_from, o->replicate_from);
    int32_t w = r->graphs[src]->world_size;
    if (w < 2) return lsim_err_set(err, LSIM_EARG, "%s: --replicate-from needs a trace that names its world size", r->paths[src]);
    lsim_graph **ng = calloc((size_t)w, sizeof *ng);
    char **np = calloc((size_t)w, sizeof *np);
    int rc = ng && np ? 0 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (int32_t q = 0; q < w && !rc; q++) {
        rc = lsim_graph_clone(r->graphs[src], &ng[q], err);
        if (rc) break;
        ng[q]->rank = q;
        size_t len = strlen(r->paths[src]) + 64;
        if (!(np[q] = malloc(len))) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        else snprintf(np[q], len, "%s (copy as rank %d)", r->paths[src], q);
    }
    if (rc) {
        for (int32_t q = 0; q < w; q++) {
            if (ng) lsim_graph_free(ng[q]);
            if (np) free(np[q]);
        }
        free(ng);
        free(np);
        return rc;
    }
    /* every rank of the job given: keep the real ranks, to measure the
     * copies against the job that really ran */
    lsim_graph **truth = NULL;
    if (r->n == (size_t)w && one_job(r) && (truth = calloc((size_t)w, sizeof *truth))) {
        for (size_t i = 0; i < r->n; i++) {
            truth[r->graphs[i]->rank] = r->graphs[i];
            r->graphs[i] = NULL;
        }
        for (int32_t q = 0; q < w; q++) {
            const char *real = truth[q] && truth[q]->source ? truth[q]->source : "?";
            size_t len = strlen(r->paths[src]) + strlen(real) + 64;
            char *p = malloc(len);
            if (!p) continue; /* the label only */
            snprintf(p, len, "%s (copy as rank %d; actual: %s)", r->paths[src], q, real);
            free(np[q]);
            np[q] = p;
        }
    }
    /* the reports name each copy by its label (what it is, and what its
     * "actual" column was measured against), not by the source file alone */
    for (int32_t q = 0; q < w; q++) {
        char *l = strdup(np[q]);
        if (!l) continue;
        free(ng[q]->source);
        ng[q]->source = l;
    }
    for (size_t i = 0; i < r->n; i++) {
        lsim_graph_free(r->graphs[i]);
        free(r->paths[i]);
    }
    free(r->graphs);
    free(r->paths);
    r->graphs = ng;
    r->paths = np;
    r->truth = truth;
    r->ntruth = truth ? (size_t)w : 0;
    r->n = (size_t)w;
    return 0;
}

/* --replicate-from with the whole job given: the "actual" side of each
 * copy's report becomes the real rank's -- its window (and where it
 * started, so the job span is the real job's), its iterations by name, its
 * breakdown and duty cycle -- computed from that rank's trace alone, never
 * from the simulation. The prediction is untouched. Node agreement still
 * compares with the source rank's trace (the copies are its nodes). */
static int measure_against_truth(const lsim_cli_opts *o, lsim_cli_run *r, lsim_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < r->n && !rc; i++) {
        const lsim_graph *t = r->truth[r->graphs[i]->rank];
        if (!t) continue;
        /* the observation as if it were a prediction: only its actual side is used */
        lsim_ns *s = malloc((t->n ? t->n : 1) * sizeof *s), *e = malloc((t->n ? t->n : 1) * sizeof *e);
        lsim_rank_report tr;
        memset(&tr, 0, sizeof tr);
        if (!s || !e) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        lsim_ns t0 = LSIM_OBS_NONE;
        for (size_t v = 0; !rc && v < t->n; v++)
            if (t->obs_start[v] != LSIM_OBS_NONE && (t0 == LSIM_OBS_NONE || t->obs_start[v] < t0)) t0 = t->obs_start[v];
        for (size_t v = 0; !rc && v < t->n; v++) {
            int seen = t->obs_start[v] != LSIM_OBS_NONE;
            s[v] = seen ? t->obs_start[v] : (t0 == LSIM_OBS_NONE ? 0 : t0);
            e[v] = seen ? t->obs_end[v] : s[v];
        }
        if (!rc) rc = lsim_metrics_compute(t, s, e, o->bin_ns, &tr, err);
        if (!rc) {
            lsim_rank_report *p = &r->reps[i];
            p->window_actual = tr.window_actual;
            p->window_actual_start = tr.window_actual_start;
            p->bd_actual = tr.bd_actual;
            for (uint32_t k = 0; k < p->niters; k++) {
                const char *nm = lsim_strtab_get(r->graphs[i]->strings, p->iters[k].name);
                p->iters[k].actual = 0;
                memset(&p->iters[k].bd_actual, 0, sizeof p->iters[k].bd_actual);
                for (uint32_t q = 0; q < tr.niters; q++)
                    if (nm && !strcmp(nm, lsim_strtab_get(t->strings, tr.iters[q].name))) {
                        p->iters[k].actual = tr.iters[q].actual;
                        p->iters[k].bd_actual = tr.iters[q].bd_actual;
                    }
            }
            double *d = tr.duty_actual;
            tr.duty_actual = p->duty_actual;
            p->duty_actual = d;
            uint32_t nb = tr.nbins_actual;
            tr.nbins_actual = p->nbins_actual;
            p->nbins_actual = nb;
        }
        lsim_rank_report_clear(&tr);
        free(s);
        free(e);
    }
    return rc;
}

int lsim_cli_run_paths(const lsim_cli_opts *o, char **args, int nargs, lsim_cli_run *r, lsim_err *err)
{
    int rc = lsim_cli_load(o, args, nargs, r, err);
    if (!rc && r->n == 0) rc = lsim_err_set(err, LSIM_ETRACE, "no traces to replay");
    if (!rc && o->replicate_from >= 0) rc = replicate(o, r, err);
    if (!rc) rc = lsim_cli_simulate(o, r, err);
    if (!rc && r->truth) rc = measure_against_truth(o, r, err);
    return rc;
}

int lsim_cli_write_trace(const lsim_cli_opts *o, const lsim_cli_run *r, lsim_err *err)
{
    if (!o->trace_out) return 0;
    return lsim_chrome_write(o->trace_out, r->items, r->n, err);
}

int lsim_cli_force;

int lsim_cli_check_io(char *const *inputs, int nin, const lsim_io_file *outs, size_t nout, lsim_err *err)
{
    size_t n = (size_t)(nin > 0 ? nin : 0) + nout;
    lsim_io_file *f = calloc(n ? n : 1, sizeof *f);
    if (!f) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    size_t k = 0;
    for (int i = 0; i < nin; i++) f[k++] = (lsim_io_file){inputs[i], "input", 0, LSIM_OUT_TEXT};
    for (size_t i = 0; i < nout; i++) f[k++] = outs[i];
    int rc = lsim_out_check(f, k, lsim_cli_force ? LSIM_OUT_FORCE : 0, err);
    free(f);
    return rc;
}

int lsim_cli_write_atomic(const char *path, int (*writer)(FILE *f, void *ctx, lsim_err *err), void *ctx, lsim_err *err)
{
    lsim_out *o = NULL;
    int rc = lsim_out_begin(path, 0, 0, &o, err);
    if (rc) return rc;
    /* written through (a device, /dev/stdout): append, never truncate */
    FILE *f = fopen(lsim_out_file(o), lsim_out_is_through(o) ? "a" : "w");
    if (!f) {
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
        lsim_out_abort(o);
        return rc;
    }
    rc = writer(f, ctx, err);
    if (fclose(f) != 0 && !rc) rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
    if (rc) lsim_out_abort(o);
    else rc = lsim_out_commit(o, err);
    return rc;
}
