/* The option parsers of the commands (see cli.h), apart from the commands
 * themselves so the fuzz target (tests/fuzz/fuzz_cli.c) drives exactly the
 * loops the commands run. Each parser only reads argv and prints its usage
 * or its one usage-error line; nothing is opened, read or written.
 *
 * The rules every parser keeps (README "Usage"): an option given twice is a
 * usage error naming it (the last one silently winning lost a setting:
 * `-o a -o b`, `--dp 2 --dp 4`), except the options documented as
 * repeatable (calibrate --nccl-tests, whatif --slow-gpu); an option's value
 * is never the next option (`--run --json` is a missing run name): a value
 * that starts with '-' is written --name=VALUE; "--" ends the options of
 * the commands that take paths. */
#include <unistd.h>
#include <cjson/cJSON.h>
#include <sys/stat.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lumosim/samples.h"
#include "lumosim/text.h"
#include "lumosim/whatif.h"

const char *const LSIM_USAGE_BUILD =
    "usage: lumosim build [--latency model|observed] [--sm-contention on|off] TRACES... -o JOB.h5\n"
    "\n"
    "Parses the traces once and stores the execution graphs of every GPU (nodes,\n"
    "edges, processors, names, collectives, iterations, the latency model baked\n"
    "into the edge delays) with provenance (source names, sizes, CRC-32, version,\n"
    "command line) in an HDF5 graph store (docs/hdf5-schema.md). Under mpirun the\n"
    "traces are split over the ranks and the store is written collectively.\n"
    "--sm-contention on adds the SM edges of lumosim replay --sm-contention on.\n";

const char *const LSIM_USAGE_SIM =
    "usage: lumosim sim [options] JOB.h5 [-o RESULT.h5 [--run NAME]]\n"
    "\n"
    "Simulates the graphs of a graph store (lumosim build) and prints the same\n"
    "report as replay (table, or --json: the same document as replay --json).\n"
    "With -o, the results go to an HDF5 result archive as run NAME (default\n"
    "\"sim\"; adding a run to an existing archive keeps the others, --replace\n"
    "overwrites one of the same name). Under mpirun the GPUs are split over the\n"
    "ranks, read and written collectively; -o is then required.\n"
    "\n"
    "options:\n"
    "  --json, --critical-path, --trace-out F, --drop-edges C, --bin-ms N, --stats,\n"
    "  --per-rank\n"
    "                   as for replay (a store keeps no CPU op tree: --trace-out\n"
    "                   writes CPU threads as the graph's flattened pieces)\n"
    "  --csv F          write one CSV row per GPU x iteration and per GPU window\n"
    "                   (docs/csv.md; - : standard output, instead of the\n"
    "                   report); under mpirun written by rank 0 alone, the\n"
    "                   same bytes as the serial run's\n"
    "  -o RESULT.h5     write the result archive\n"
    "  --run NAME       run name in the archive (default sim)\n"
    "  --replace        replace a run of that name\n"
    "  --detail D       what the archive's run keeps (docs/hdf5-schema.md, \"Level\n"
    "                   of detail\"): ops (the default) every op's simulated\n"
    "                   start and end with the graphs; nodes also the in-edge\n"
    "                   that decided each (the default with --trace-out);\n"
    "                   summary only the per-GPU, iteration, kernel, duty and\n"
    "                   critical-path tables (no per-node rows, no graphs)\n"
    "  --mapping M      under mpirun, which MPI rank simulates which GPU: groups\n"
    "                   (the default: contiguous blocks of whole tensor-parallel\n"
    "                   groups), linear (contiguous blocks), round-robin (GPU g\n"
    "                   on rank g mod K) or file:PATH (lines \"GPU RANK\"); the\n"
    "                   results are the same for every mapping\n"
    "  --samples N      prediction intervals: simulate the job N times, each GPU\n"
    "                   op's duration drawn from the job's own traced durations\n"
    "                   of the same op (docs/intervals.md), and print p5 / p50\n"
    "                   / p95 of the job span, the breakdown and each GPU's\n"
    "                   window (--json: as JSON); under mpirun the samples are\n"
    "                   spread over the ranks, with the same numbers\n"
    "  --seed S         the draws' seed (default 1)\n"
    "  --draw-from P    job (the default: every GPU's durations) or others (a\n"
    "                   GPU draws from the other GPUs' durations only, so its\n"
    "                   measured window tests its interval)\n"
    "  --windows W      under mpirun, what each synchronisation round runs:\n"
    "                   ready (the default: every node whose inputs are final),\n"
    "                   paths (a time window up to the earliest time any rank\n"
    "                   can still send a collective arrival, bounded by the\n"
    "                   shortest path to one, plus the lookahead) or start (the\n"
    "                   earliest pending event plus the lookahead); the results\n"
    "                   are the same. A store built with --sm-contention on\n"
    "                   runs with ready only (a held kernel has no time bound)\n"
    "\n"
    "A store too big for the ranks' memory is refused before it is read, with\n"
    "the estimate per rank and the smallest K (MPI ranks) at which it fits\n"
    "(LUMOSIM_MEM_LIMIT=8G sets the limit, 0 turns the check off;\n"
    "docs/reliability.md). LUMOSIM_HUGEPAGES=1 advises the engines' memory\n"
    "for transparent huge pages (off by default: docs/performance.md).\n";

/* ------------------------------------------------------------ pieces */

/* ------------------------------------------------------- progress */

static int g_progress = -1; /* -1: not decided yet */
static double g_progress_last;

void lsim_cli_tty_progress_off(void) { g_progress = 0; }

void lsim_cli_tty_progress(int force, const char *fmt, ...)
{
    /* on a terminal only (a log file or a pipe gets nothing), at most five
     * times a second unless a new phase starts */
    if (g_progress < 0) g_progress = isatty(STDERR_FILENO);
    if (!g_progress) return;
    double now = lsim_now_s();
    if (!force && now - g_progress_last < 0.2) return;
    g_progress_last = now;
    char raw[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r\033[Klumosim: %s", raw);
    fflush(stderr);
}

void lsim_cli_tty_progress_done(void)
{
    if (g_progress > 0 && g_progress_last > 0) fputs("\r\033[K", stderr);
    g_progress_last = 0;
}

static int g_json_errors;

void lsim_cli_set_json_errors(int on) { g_json_errors = on; }

/* The file an error names: the message's text before its first ": " when
 * that is a path (it exists, or it has a '/'), as every library message
 * starts with the file it is about; else NULL (into buf). */
static const char *error_file(const char *msg, char *buf, size_t cap)
{
    const char *c = strstr(msg, ": ");
    size_t n = c ? (size_t)(c - msg) : 0;
    if (!n || n >= cap) return NULL;
    memcpy(buf, msg, n);
    buf[n] = '\0';
    /* a file that exists, or one in a directory that exists (an output) */
    struct stat st;
    if (stat(buf, &st) == 0) return buf;
    char *slash = strrchr(buf, '/');
    if (!slash) return NULL;
    int ok;
    if (slash == buf) {
        ok = 1;
    } else {
        *slash = '\0';
        ok = stat(buf, &st) == 0 && S_ISDIR(st.st_mode);
        *slash = '/';
    }
    return ok ? buf : NULL;
}

static void print_error(const char *raw)
{
    char line[4096], file[1024];
    lsim_text_line(line, sizeof line, raw);
    if (!g_json_errors) {
        fprintf(stderr, "lumosim: error: %s\n", line);
        return;
    }
    /* --json: the error as one JSON object on one line (docs/report-json.md) */
    cJSON *o = cJSON_CreateObject();
    const char *f = error_file(raw, file, sizeof file);
    char *txt = NULL;
    if (o && cJSON_AddStringToObject(o, "error", line) &&
        (f ? cJSON_AddStringToObject(o, "file", f) != NULL : cJSON_AddNullToObject(o, "file") != NULL))
        txt = cJSON_PrintUnformatted(o);
    if (txt) fprintf(stderr, "%s\n", txt);
    else fprintf(stderr, "lumosim: error: %s\n", line); /* out of memory: the plain line */
    cJSON_free(txt);
    cJSON_Delete(o);
}

static void vprint_error(const char *fmt, va_list ap)
{
    char raw[2048];
    vsnprintf(raw, sizeof raw, fmt, ap);
    print_error(raw);
}

/* The same line for both: the caller's exit code tells usage from input. */
void lsim_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint_error(fmt, ap);
    va_end(ap);
}

void lsim_cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint_error(fmt, ap);
    va_end(ap);
}

static int was_seen(const lsim_cli_seen *s, const char *name)
{
    for (int k = 0; k < s->n; k++)
        if (!strcmp(s->name[k], name)) return 1;
    return 0;
}

int lsim_cli_once(lsim_cli_seen *s, const char *name)
{
    if (was_seen(s, name)) {
        lsim_cli_usage_error("%s given twice", name);
        return -1;
    }
    if (s->n < LSIM_CLI_MAXSEEN) s->name[s->n++] = name;
    return 0;
}

int lsim_cli_is_opt(const char *a, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(a, name, n) && (a[n] == '\0' || a[n] == '=');
}

const char *lsim_cli_value(int argc, char **argv, int *i, const char *what)
{
    const char *a = argv[*i];
    const char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
    int n = (int)(eq ? (size_t)(eq - a) : strlen(a));
    const char *v = NULL;
    if (eq) {
        v = eq + 1;
    } else if (*i + 1 < argc) {
        const char *next = argv[*i + 1];
        if (next[0] == '-' && next[1]) {
            if (a[1] == '-')
                lsim_cli_usage_error("%.*s needs %s, not the option '%s' (a value that starts with '-': %.*s=VALUE)", n,
                                     a, what, next, n, a);
            else
                lsim_cli_usage_error("%.*s needs %s, not the option '%s' (a file name that starts with '-': ./NAME)",
                                     n, a, what, next);
            return NULL;
        }
        v = next;
        ++*i;
    }
    if (!v || !*v) {
        lsim_cli_usage_error("%.*s needs %s", n, a, what);
        return NULL;
    }
    return v;
}

/* A positive integer up to max, or -1 (message printed). */
static int pos_long(const char *opt, const char *v, long max, long *out)
{
    char *e;
    errno = 0;
    long x = strtol(v, &e, 10);
    if (errno || *e || e == v || x <= 0 || x > max) {
        lsim_cli_usage_error("%s needs a positive integer (got '%s')", opt, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* 1f1b -> 1, interleaved:V -> V (1..max); -1 (message printed). */
static int schedule_of(const char *v, long max, long *out)
{
    if (!strcmp(v, "1f1b")) {
        *out = 1;
        return 0;
    }
    if (!strncmp(v, "interleaved:", 12)) return pos_long("--schedule interleaved:V", v + 12, max, out);
    lsim_cli_usage_error("unknown --schedule '%s' (1f1b or interleaved:V)", v);
    return -1;
}

static int is_help(const char *a, const char *usage)
{
    return usage && (!strcmp(a, "-h") || !strcmp(a, "--help"));
}

/* One argument of a command that takes paths: 1 a path (store it), -1 the
 * "--" that ends the options (skip it; every later argument is a path),
 * 0 an option. "-" alone is a path (standard input names). */
static int path_arg(const char *a, int *only_paths)
{
    if (*only_paths || a[0] != '-' || !a[1]) return 1;
    if (!strcmp(a, "--")) {
        *only_paths = 1;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ replay, report */

/* --csv to standard output takes the report's place there: with --json
 * both would be one stream. -1 (printed) when both are asked for. */
static int csv_stdout_clash(const lsim_cli_opts *o)
{
    if (!o->json || !lsim_cli_csv_is_stdout(o->csv_out)) return 0;
    lsim_cli_usage_error("--csv %s and --json would both write to standard output: give --csv a file name",
                         o->csv_out);
    return -1;
}

/* replay/report: paths and the shared options. */
int lsim_cli_parse_paths(int argc, char **argv, lsim_cli_opts *o, const char *usage, int allow_html, char **args)
{
    int nargs = 0, only_paths = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int pa = path_arg(a, &only_paths);
        if (pa) {
            if (pa > 0) args[nargs++] = argv[i];
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (allow_html && lsim_cli_is_opt(a, "--run")) {
            if (lsim_cli_once(&o->seen, "--run") || !(o->run_name = lsim_cli_value(argc, argv, &i, "a run name")))
                return -1;
            continue;
        }
        if (allow_html && lsim_cli_is_opt(a, "--html")) {
            if (lsim_cli_once(&o->seen, "--html") || !(o->html_out = lsim_cli_value(argc, argv, &i, "a file name")))
                return -1;
            continue;
        }
        if (allow_html && (!strcmp(a, "--json") || !strcmp(a, "--per-rank"))) {
            /* report prints no table and no document: an option that would
             * change them does not apply (it was silently ignored) */
            lsim_cli_usage_error("report writes an HTML page: %s does not apply (lumosim replay %s prints the report)", a,
                                 a);
            return -1;
        }
        int c = lsim_cli_common_opt(o, argc, argv, &i);
        if (c < 0) return -1;
        if (c == 0) {
            lsim_cli_usage_error("unknown option '%s' (see --help)", a);
            return -1;
        }
    }
    if (nargs == 0) {
        lsim_cli_usage_error("at least one trace file or directory is needed (see --help)");
        return -1;
    }
    if (csv_stdout_clash(o)) return -1;
    return nargs;
}

/* ------------------------------------------------------------ build, sim */

int lsim_cli_parse_build(int argc, char **argv, lsim_cli_build_args *b, char **args)
{
    memset(b, 0, sizeof *b);
    lsim_cli_opts_default(&b->o);
    int only_paths = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int pa = path_arg(a, &only_paths);
        if (pa) {
            if (pa > 0) args[b->nargs++] = argv[i];
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(LSIM_USAGE_BUILD, stdout);
            return 0;
        } else if (!strcmp(a, "-o") || lsim_cli_is_opt(a, "--output")) {
            if (lsim_cli_once(&b->o.seen, "-o") || !(b->out = lsim_cli_value(argc, argv, &i, "a file name"))) return -1;
        } else if (lsim_cli_is_opt(a, "--latency") || lsim_cli_is_opt(a, "--sm-contention")) {
            if (lsim_cli_common_opt(&b->o, argc, argv, &i) < 0) return -1;
        } else {
            lsim_cli_usage_error("unknown option '%s' (see lumosim build --help)", a);
            return -1;
        }
    }
    if (!b->out || !b->nargs) {
        lsim_cli_usage_error("build needs traces and -o JOB.h5 (see lumosim build --help)");
        return -1;
    }
    return 1;
}

int lsim_cli_parse_sim(int argc, char **argv, lsim_cli_sim_args *s)
{
    memset(s, 0, sizeof *s);
    lsim_cli_opts_default(&s->o);
    s->run_name = "sim";
    s->mapping = "groups";
    s->seed = 1;
    lsim_cli_seen *seen = &s->o.seen;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(LSIM_USAGE_SIM, stdout);
            return 0;
        }
        if (!strcmp(a, "-o") || lsim_cli_is_opt(a, "--output")) {
            if (lsim_cli_once(seen, "-o") || !(s->out = lsim_cli_value(argc, argv, &i, "a file name"))) return -1;
            continue;
        }
        if (lsim_cli_is_opt(a, "--run")) {
            if (lsim_cli_once(seen, "--run") || !(s->run_name = lsim_cli_value(argc, argv, &i, "a run name"))) return -1;
            continue;
        }
        if (!strcmp(a, "--replace")) {
            if (lsim_cli_once(seen, "--replace")) return -1;
            s->replace = 1;
            continue;
        }
        if (lsim_cli_is_opt(a, "--detail")) {
            const char *v = NULL;
            lsim_store_detail d;
            if (lsim_cli_once(seen, "--detail") || !(v = lsim_cli_value(argc, argv, &i, "nodes, ops or summary")))
                return -1;
            if (lsim_store_detail_parse(v, &d)) {
                lsim_cli_usage_error("unknown --detail '%s' (nodes, ops or summary)", v);
                return -1;
            }
            s->detail = (int)d;
            continue;
        }
        if (lsim_cli_is_opt(a, "--mapping")) {
            const char *m = NULL;
            if (lsim_cli_once(seen, "--mapping") ||
                !(m = lsim_cli_value(argc, argv, &i, "groups, linear, round-robin or file:PATH")))
                return -1;
            if (strcmp(m, "groups") && strcmp(m, "linear") && strcmp(m, "round-robin") &&
                (strncmp(m, "file:", 5) || !m[5])) {
                lsim_cli_usage_error("unknown --mapping '%s' (groups, linear, round-robin or file:PATH)", m);
                return -1;
            }
            s->mapping = m;
            continue;
        }
        /* testing: force a lookahead; over-promise each window's bound */
        if (lsim_cli_is_opt(a, "--lookahead-ns") || lsim_cli_is_opt(a, "--bound-skew-ns")) {
            int la = lsim_cli_is_opt(a, "--lookahead-ns");
            const char *name = la ? "--lookahead-ns" : "--bound-skew-ns";
            if (lsim_cli_once(seen, name)) return -1;
            const char *v = lsim_cli_value(argc, argv, &i, "a number of nanoseconds");
            char *end = NULL;
            if (!v) return -1;
            errno = 0;
            long long x = strtoll(v, &end, 10);
            if (errno || *end || end == v || x <= 0) {
                lsim_cli_usage_error("%s needs a positive integer, not '%s'", name, v);
                return -1;
            }
            *(la ? &s->lookahead : &s->bound_skew) = (lsim_ns)x;
            continue;
        }
        if (lsim_cli_is_opt(a, "--samples") || lsim_cli_is_opt(a, "--seed")) {
            int smp = lsim_cli_is_opt(a, "--samples");
            const char *name = smp ? "--samples" : "--seed";
            if (lsim_cli_once(seen, name)) return -1;
            const char *v = lsim_cli_value(argc, argv, &i, smp ? "a number of samples" : "a seed");
            char *end = NULL;
            if (!v) return -1;
            errno = 0;
            long long x = strtoll(v, &end, 10);
            if (errno || *end || end == v || x < (smp ? 1 : 0) || (smp && x > LSIM_SAMPLES_MAX)) {
                if (smp) lsim_cli_usage_error("--samples needs an integer in 1..%d, not '%s'", LSIM_SAMPLES_MAX, v);
                else lsim_cli_usage_error("--seed needs a non-negative integer, not '%s'", v);
                return -1;
            }
            *(smp ? &s->samples : &s->seed) = (long)x;
            continue;
        }
        if (lsim_cli_is_opt(a, "--draw-from")) {
            const char *v = NULL;
            if (lsim_cli_once(seen, "--draw-from") || !(v = lsim_cli_value(argc, argv, &i, "job or others")))
                return -1;
            if (strcmp(v, "job") && strcmp(v, "others")) {
                lsim_cli_usage_error("unknown --draw-from '%s' (job or others)", v);
                return -1;
            }
            s->draw_others = !strcmp(v, "others");
            continue;
        }
        if (lsim_cli_is_opt(a, "--windows")) {
            const char *v = NULL;
            if (lsim_cli_once(seen, "--windows") || !(v = lsim_cli_value(argc, argv, &i, "ready, paths or start")))
                return -1;
            /* the order of lsim_pdes_windows (args.c stays free of MPI) */
            s->windows = !strcmp(v, "ready") ? 0 : !strcmp(v, "paths") ? 1 : !strcmp(v, "start") ? 2 : -1;
            if (s->windows < 0) {
                lsim_cli_usage_error("unknown --windows '%s' (ready, paths or start)", v);
                return -1;
            }
            continue;
        }
        if (!strncmp(a, "--latency", 9)) {
            /* the latency model is baked into the store's edge delays */
            lsim_cli_usage_error("sim cannot change the latency mode: it is fixed when the store is built "
                                 "(lumosim build --latency MODE ...)");
            return -1;
        }
        if (lsim_cli_is_opt(a, "--sm-contention")) {
            /* so are the SM edges */
            lsim_cli_usage_error("sim cannot change --sm-contention: it is fixed when the store is built "
                                 "(lumosim build --sm-contention on ...)");
            return -1;
        }
        if (a[0] == '-' && a[1]) {
            int c = lsim_cli_common_opt(&s->o, argc, argv, &i);
            if (c <= 0) {
                if (c == 0) lsim_cli_usage_error("unknown option '%s' (see lumosim sim --help)", a);
                return -1;
            }
            continue;
        }
        if (s->job) {
            lsim_cli_usage_error("sim takes one graph store ('%s' and '%s' given)", s->job, a);
            return -1;
        }
        s->job = a;
    }
    if (!s->job) {
        lsim_cli_usage_error("sim needs a graph store (see lumosim sim --help)");
        return -1;
    }
    /* a run name, a replacement or a level of detail without an archive
     * would be ignored */
    if (!s->out && (was_seen(seen, "--run") || s->replace || was_seen(seen, "--detail"))) {
        lsim_cli_usage_error("%s is about a run of the result archive: it needs -o RESULT.h5",
                             s->replace ? "--replace" : was_seen(seen, "--run") ? "--run" : "--detail");
        return -1;
    }
    /* the predicted trace's flow arrows are the in-edges that decided each
     * op (nodes/bind_*); under mpirun it is drawn from the archive, so the
     * archive keeps them: the same trace serial or parallel */
    if (!was_seen(seen, "--detail")) s->detail = s->o.trace_out ? LSIM_STORE_DETAIL_NODES : LSIM_STORE_DETAIL_OPS;
    else if (s->o.trace_out && s->detail != LSIM_STORE_DETAIL_NODES) {
        lsim_cli_usage_error("--trace-out draws each op's deciding in-edge, which only --detail nodes keeps in the "
                             "archive (leave --detail out, or give --detail nodes)");
        return -1;
    }
    if (csv_stdout_clash(&s->o)) return -1;
    if (!s->samples && (was_seen(seen, "--seed") || was_seen(seen, "--draw-from"))) {
        lsim_cli_usage_error("%s is about prediction intervals: it needs --samples N",
                             was_seen(seen, "--seed") ? "--seed" : "--draw-from");
        return -1;
    }
    if (s->samples && (s->out || s->o.trace_out || s->o.csv_out || s->o.run.critical)) {
        lsim_cli_usage_error("--samples prints the intervals of N simulations; it does not take %s",
                             s->out ? "-o" : s->o.trace_out ? "--trace-out" : s->o.csv_out ? "--csv" : "--critical-path");
        return -1;
    }
    return 1;
}

/* ------------------------------------------------------------ ablate, info, collect */

int lsim_cli_parse_ablate(int argc, char **argv, lsim_cli_opts *o, const char *usage, char **args)
{
    int nargs = 0, only_paths = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int pa = path_arg(a, &only_paths);
        if (pa) {
            if (pa > 0) args[nargs++] = argv[i];
            continue;
        }
        if (is_help(a, usage)) {
            fputs(usage, stdout);
            return 0;
        }
        /* the options that apply to every variant alike */
        if (!strcmp(a, "--json") || lsim_cli_is_opt(a, "--latency") || lsim_cli_is_opt(a, "--bin-ms") ||
            lsim_cli_is_opt(a, "--sm-contention")) {
            if (lsim_cli_common_opt(o, argc, argv, &i) < 0) return -1;
            continue;
        }
        lsim_cli_usage_error("unknown option '%s' (see lumosim ablate --help)", a);
        return -1;
    }
    if (!nargs) {
        lsim_cli_usage_error("ablate needs at least one trace file or directory");
        return -1;
    }
    return nargs;
}

int lsim_cli_parse_info(int argc, char **argv, const char *usage, char **args)
{
    int n = 0, only_paths = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int pa = path_arg(a, &only_paths);
        if (pa) {
            if (pa > 0) args[n++] = argv[i];
        } else if (is_help(a, usage)) {
            fputs(usage, stdout);
            return 0;
        } else {
            lsim_cli_usage_error("unknown option '%s' (see lumosim info --help)", a);
            return -1;
        }
    }
    if (!n) {
        lsim_cli_usage_error("info needs a graph store or result archive (see lumosim info --help)");
        return -1;
    }
    return n;
}

int lsim_cli_parse_collect(int argc, char **argv, const char *usage, lsim_cli_collect_args *c, char **args)
{
    memset(c, 0, sizeof *c);
    lsim_cli_seen seen = {{0}, 0};
    int only_paths = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int pa = path_arg(a, &only_paths);
        if (pa) {
            if (pa > 0) args[c->nargs++] = argv[i];
        } else if (is_help(a, usage)) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "-o") || lsim_cli_is_opt(a, "--output")) {
            if (lsim_cli_once(&seen, "-o") || !(c->out = lsim_cli_value(argc, argv, &i, "a file name"))) return -1;
        } else if (lsim_cli_is_opt(a, "--run")) {
            if (lsim_cli_once(&seen, "--run") || !(c->run_name = lsim_cli_value(argc, argv, &i, "a run name")))
                return -1;
        } else {
            lsim_cli_usage_error("unknown option '%s' (see lumosim collect --help)", a);
            return -1;
        }
    }
    if (!c->nargs || !c->out) {
        lsim_cli_usage_error("collect needs result archives or directories and -o SWEEP.csv "
                             "(see lumosim collect --help)");
        return -1;
    }
    return 1;
}

/* ------------------------------------------------------------ calibrate */

int lsim_cli_parse_calibrate(int argc, char **argv, const char *usage, lsim_cli_calibrate_args *o)
{
    lsim_cli_seen seen = {{0}, 0};
    int only = 0;
    o->gpu = o->out = o->topo = o->topo_out = NULL;
    o->nnccl = o->ntraces = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int pa = path_arg(a, &only);
        if (pa) {
            if (pa > 0) o->traces[o->ntraces++] = argv[i];
            continue;
        }
        if (is_help(a, usage)) {
            fputs(usage, stdout);
            return 0;
        }
        const char **dst = NULL, *name = NULL;
        if (!strcmp(a, "-o") || lsim_cli_is_opt(a, "--out")) dst = &o->out, name = "-o";
        else if (lsim_cli_is_opt(a, "--gpu")) dst = &o->gpu, name = "--gpu";
        else if (lsim_cli_is_opt(a, "--topology")) dst = &o->topo, name = "--topology";
        else if (lsim_cli_is_opt(a, "--topology-out")) dst = &o->topo_out, name = "--topology-out";
        else if (lsim_cli_is_opt(a, "--nccl-tests")) dst = &o->nccl[o->nnccl], name = NULL; /* repeatable */
        if (!dst) {
            lsim_cli_usage_error("unknown option '%s' (see lumosim calibrate --help)", a);
            return -1;
        }
        if (name && lsim_cli_once(&seen, name)) return -1;
        if (!(*dst = lsim_cli_value(argc, argv, &i, !strcmp(a, "--gpu") ? "a GPU name or file" : "a file name")))
            return -1;
        if (!name) o->nnccl++;
    }
    if (!o->ntraces) {
        lsim_cli_usage_error("calibrate needs at least one trace file or directory (see --help)");
        return -1;
    }
    if (!o->out) {
        lsim_cli_usage_error("calibrate needs -o gpu.json");
        return -1;
    }
    return 1;
}

/* ------------------------------------------------------------ synth */

int lsim_cli_parse_synth(int argc, char **argv, const char *usage, lsim_cli_synth_args *s)
{
    static const char *const SHAPE_OPT[6] = {"--layers", "--hidden", "--ffn", "--heads", "--seq", "--vocab"};
    static const char *const INT_OPT[6] = {"--tp", "--pp", "--dp", "--micro-batch", "--global-batch", "--gpus"};
    static const char *const STR_OPT[5] = {"--model", "--gpu", "--topology", "-o", "--schedule"};
    memset(s, 0, sizeof *s);
    s->recompute = s->grad_reduce = s->attention = s->grad_bytes = s->grad_acc = -1;
    lsim_cli_seen seen = {{0}, 0};
    int *ints[6] = {&s->tp, &s->pp, &s->dp, &s->micro_batch, &s->global_batch, &s->gpus};
    /* the Megatron options: switches, and words from a short list */
    static const char *const FLAG_OPT[7] = {"--sequence-parallel", "--distributed-optimizer", "--scatter-gather",
                                            "--no-dropout",        "--tp-overlap",             "--forward-only",
                                            "--no-memory-check"};
    int *flags[7] = {&s->seq_parallel, &s->dist_opt, &s->scatter_gather, &s->no_dropout, &s->tp_overlap,
                     &s->forward_only, &s->no_mem_check};
    static const char *const WORD_OPT[5] = {"--recompute", "--grad-reduce", "--attention", "--grad-bytes",
                                            "--grad-acc"};
    static const char *const WORDS[5][3] = {{"none", "selective", "full"},
                                            {"overlap", "after", NULL},
                                            {"flash", "unfused", NULL},
                                            {"2", "4", NULL},
                                            {"fused", "buffer", "autograd"}};
    int *words[5] = {&s->recompute, &s->grad_reduce, &s->attention, &s->grad_bytes, &s->grad_acc};
    const char **strs[4] = {&s->model, &s->gpu, &s->topo, &s->out};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a, usage)) {
            fputs(usage, stdout);
            return 0;
        }
        if (a[0] != '-' || !a[1]) {
            lsim_cli_usage_error("unexpected argument '%s' (see lumosim synth --help)", a);
            return -1;
        }
        if (!strcmp(a, "--stats") || !strcmp(a, "--no-p2p-sync")) {
            int st = !strcmp(a, "--stats");
            if (lsim_cli_once(&seen, st ? "--stats" : "--no-p2p-sync")) return -1;
            *(st ? &s->stats : &s->no_p2p_sync) = 1;
            continue;
        }
        int f = 0, w = 0;
        while (f < 7 && strcmp(a, FLAG_OPT[f])) f++;
        if (f < 7) {
            if (lsim_cli_once(&seen, FLAG_OPT[f])) return -1;
            *flags[f] = 1;
            continue;
        }
        while (w < 5 && !lsim_cli_is_opt(a, WORD_OPT[w])) w++;
        if (w < 5) {
            const char *v;
            if (lsim_cli_once(&seen, WORD_OPT[w]) || !(v = lsim_cli_value(argc, argv, &i, w == 3 ? "2 or 4" : "a word")))
                return -1;
            int x = 0;
            while (x < 3 && WORDS[w][x] && strcmp(v, WORDS[w][x])) x++;
            if (x == 3 || !WORDS[w][x]) {
                lsim_cli_usage_error("%s '%s': expected %s|%s%s%s", WORD_OPT[w], v, WORDS[w][0], WORDS[w][1],
                                     WORDS[w][2] ? "|" : "", WORDS[w][2] ? WORDS[w][2] : "");
                return -1;
            }
            *words[w] = w == 3 ? atoi(v) : x;
            continue;
        }
        if (lsim_cli_is_opt(a, "--dp-cost")) {
            const char *v;
            long x = 0;
            if (lsim_cli_once(&seen, "--dp-cost") || !(v = lsim_cli_value(argc, argv, &i, "a positive integer")) ||
                pos_long("--dp-cost", v, 1L << 24, &x))
                return -1;
            s->dp_cost = (int)x;
            continue;
        }
        if (lsim_cli_is_opt(a, "--seed")) {
            const char *v;
            long x = 0;
            if (lsim_cli_once(&seen, "--seed") || !(v = lsim_cli_value(argc, argv, &i, "a non-negative integer")))
                return -1;
            if (!strcmp(v, "0")) x = 0;
            else if (pos_long("--seed", v, 2000000000L, &x)) return -1;
            s->seed = x;
            continue;
        }
        int k = -1, kind = 0; /* 1 string, 2 int, 3 shape; k: the index in that table */
        for (int j = 0; k < 0 && j < 5; j++)
            if (j == 3 ? (!strcmp(a, "-o") || lsim_cli_is_opt(a, "--output")) : lsim_cli_is_opt(a, STR_OPT[j]))
                k = j, kind = 1;
        for (int j = 0; k < 0 && j < 6; j++)
            if (lsim_cli_is_opt(a, INT_OPT[j])) k = j, kind = 2;
        for (int j = 0; k < 0 && j < 6; j++)
            if (lsim_cli_is_opt(a, SHAPE_OPT[j])) k = j, kind = 3;
        if (k < 0) {
            lsim_cli_usage_error("unknown option '%s' (see lumosim synth --help)", a);
            return -1;
        }
        const char *name = kind == 1 ? STR_OPT[k] : kind == 2 ? INT_OPT[k] : SHAPE_OPT[k];
        if (lsim_cli_once(&seen, name)) return -1;
        const char *v = lsim_cli_value(argc, argv, &i,
                                       kind != 1               ? "a positive integer"
                                       : !strcmp(name, "--schedule") ? "1f1b or interleaved:V"
                                       : !strcmp(name, "--gpu")      ? "a GPU name or file"
                                       : !strcmp(name, "--model")    ? "a model name or file"
                                                                     : "a file name");
        long x = 0;
        if (!v) return -1;
        if (kind == 1 && k == 4) {
            if (schedule_of(v, 1000000000L, &x)) return -1;
            s->vstages = (int)x;
        } else if (kind == 1) {
            *strs[k] = v;
        } else {
            if (pos_long(name, v, 1000000000L, &x)) return -1;
            *(kind == 2 ? ints[k] : &s->shape[k]) = (int)x;
        }
    }
    if (!s->model || !s->out || !s->tp || !s->pp || !s->dp || !s->micro_batch || !s->global_batch) {
        lsim_cli_usage_error("synth needs --model, --tp, --pp, --dp, --micro-batch, --global-batch and -o "
                             "(see lumosim synth --help)");
        return -1;
    }
    return 1;
}

/* ------------------------------------------------------------ whatif */

/* whatif's options that take a value, with what the value is. */
static const struct {
    const char *name, *what;
} WHATIF_OPTS[] = {
    {"-o", "a file name"},
    {"--dp", "a positive integer"},
    {"--tp", "a positive integer"},
    {"--pp", "a positive integer"},
    {"--layers", "a positive integer"},
    {"--hidden", "a positive integer"},
    {"--ffn", "a positive integer"},
    {"--micro-batch", "a positive integer"},
    {"--micro-batches", "a positive integer"},
    {"--trace-layers", "a positive integer"},
    {"--seed", "a positive integer"},
    {"--batch", "a positive integer"},
    {"--schedule", "1f1b or interleaved:V"},
    {"--model", "a model name or file"},
    {"--topology", "a file name"},
    {"--from-topology", "a file name"},
    {"--gpu", "a GPU name or file"},
    {"--from-gpu", "a GPU name or file"},
    {"--jitter", "a relative std-dev or 'trace'"},
    {"--slow-gpu", "RANK:FACTOR"},
};
#define N_WHATIF_OPTS (sizeof WHATIF_OPTS / sizeof *WHATIF_OPTS)

/* What --identify does not use: it only reports the source's structure. */
static const char *const WHATIF_TRANSFORMS[] = {"-o",        "--dp",      "--tp",         "--pp",         "--layers",
                                               "--hidden",  "--ffn",     "--micro-batch", "--micro-batches",
                                               "--schedule", "--model",  "--topology",   "--gpu",        "--jitter",
                                               "--seed",    "--slow-gpu"};

int lsim_cli_parse_whatif(int argc, char **argv, const char *usage, lsim_cli_whatif_args *w)
{
    memset(w, 0, sizeof *w);
    w->seed = 1;
    w->batch = 64;
    lsim_cli_seen seen = {{0}, 0};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a, usage)) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--identify")) {
            if (lsim_cli_once(&seen, "--identify")) return -1;
            w->identify = 1;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            if (w->in) {
                lsim_cli_usage_error("unexpected argument '%s' (one JOB.h5; see lumosim whatif --help)", a);
                return -1;
            }
            w->in = a;
            continue;
        }
        size_t k = 0;
        if (!strcmp(a, "-o") || lsim_cli_is_opt(a, "--output")) k = 0;
        else
            for (k = 1; k < N_WHATIF_OPTS && !lsim_cli_is_opt(a, WHATIF_OPTS[k].name); k++) {
            }
        if (k == N_WHATIF_OPTS) {
            lsim_cli_usage_error("unknown option '%s' (see lumosim whatif --help)", a);
            return -1;
        }
        const char *name = WHATIF_OPTS[k].name;
        if (strcmp(name, "--slow-gpu") && lsim_cli_once(&seen, name)) return -1; /* --slow-gpu: one per GPU */
        const char *v = lsim_cli_value(argc, argv, &i, WHATIF_OPTS[k].what);
        if (!v) return -1;
        if (!strcmp(name, "-o")) w->out = v;
        else if (!strcmp(name, "--dp")) {
            if (pos_long(name, v, 1000000, &w->dp)) return -1;
        } else if (!strcmp(name, "--layers")) {
            if (pos_long(name, v, 1000000, &w->layers)) return -1;
        } else if (!strcmp(name, "--tp")) {
            if (pos_long(name, v, 1000000, &w->tp)) return -1;
        } else if (!strcmp(name, "--hidden")) {
            if (pos_long(name, v, 100000000, &w->hidden)) return -1;
        } else if (!strcmp(name, "--ffn")) {
            if (pos_long(name, v, 100000000, &w->ffn)) return -1;
        } else if (!strcmp(name, "--micro-batch")) {
            if (pos_long(name, v, 1000000, &w->micro_batch)) return -1;
        } else if (!strcmp(name, "--trace-layers")) { /* traces: layers per micro-batch, overriding the detected count */
            if (pos_long(name, v, 1000000, &w->trace_layers)) return -1;
        } else if (!strcmp(name, "--model")) {
            w->model = v;
        } else if (!strcmp(name, "--seed")) {
            if (pos_long(name, v, 2147483647L, &w->seed)) return -1;
        } else if (!strcmp(name, "--batch")) {
            if (pos_long(name, v, 1000000, &w->batch)) return -1;
        } else if (!strcmp(name, "--topology")) w->topo = v;
        else if (!strcmp(name, "--gpu")) w->gpu = v;
        else if (!strcmp(name, "--from-gpu")) w->from_gpu = v;
        else if (!strcmp(name, "--from-topology")) w->from_topo = v;
        else if (!strcmp(name, "--jitter")) {
            w->jitter = v;
            if (strcmp(v, "trace")) {
                char *e;
                w->sigma = strtod(v, &e);
                if (*e || e == v || !isfinite(w->sigma) || w->sigma < 0) {
                    lsim_cli_usage_error("--jitter needs a relative std-dev >= 0 or 'trace' (got '%s')", v);
                    return -1;
                }
                lsim_err re = {0};
                if (lsim_wi_jitter_check(w->sigma, &re)) { /* the documented range (whatif.h) */
                    lsim_cli_usage_error("--jitter %s: %s", v, re.msg);
                    return -1;
                }
            } else {
                w->sigma = -1;
            }
        } else if (!strcmp(name, "--slow-gpu")) {
            char *e;
            errno = 0;
            long r = strtol(v, &e, 10);
            double f = 0;
            if (!errno && e != v && *e == ':' && r >= 0 && r <= INT32_MAX) f = strtod(e + 1, &e);
            if (errno || *e || !(f > 0) || !isfinite(f)) {
                lsim_cli_usage_error("--slow-gpu needs RANK:FACTOR with FACTOR > 0 (got '%s')", v);
                return -1;
            }
            lsim_err re = {0};
            if (lsim_wi_slow_check(f, &re)) { /* the documented range (whatif.h) */
                lsim_cli_usage_error("--slow-gpu %s: %s", v, re.msg);
                return -1;
            }
            for (int q = 0; q < w->nslow; q++)
                if (w->slow_rank[q] == (int32_t)r) {
                    lsim_cli_usage_error("--slow-gpu: GPU %ld given twice", r);
                    return -1;
                }
            if (w->nslow == LSIM_CLI_MAXSLOW) {
                lsim_cli_usage_error("at most %d --slow-gpu options", LSIM_CLI_MAXSLOW);
                return -1;
            }
            if (!was_seen(&seen, name) && seen.n < LSIM_CLI_MAXSEEN) seen.name[seen.n++] = name;
            w->slow_rank[w->nslow] = (int32_t)r;
            w->slow_f[w->nslow++] = f;
        } else if (!strcmp(name, "--pp")) {
            if (pos_long(name, v, 100000, &w->pp)) return -1;
        } else if (!strcmp(name, "--micro-batches")) {
            if (pos_long(name, v, 1000000, &w->micro_batches)) return -1;
        } else if (!strcmp(name, "--schedule")) {
            if (schedule_of(v, 1000, &w->vstages)) return -1;
        }
    }
    if (!w->in || (!w->out && !w->identify)) {
        lsim_cli_usage_error("whatif needs JOB.h5 and -o NEW.h5 (or --identify) (see lumosim whatif --help)");
        return -1;
    }
    for (size_t k = 0; w->identify && k < sizeof WHATIF_TRANSFORMS / sizeof *WHATIF_TRANSFORMS; k++)
        if (was_seen(&seen, WHATIF_TRANSFORMS[k])) {
            /* it would be ignored: say so rather than seem to have done it */
            if (!strcmp(WHATIF_TRANSFORMS[k], "-o"))
                lsim_cli_usage_error("--identify writes nothing: -o is not used with it (see lumosim whatif --help)");
            else
                lsim_cli_usage_error("--identify transforms nothing: %s is not used with it (see lumosim whatif --help)",
                                     WHATIF_TRANSFORMS[k]);
            return -1;
        }
    return 1;
}
