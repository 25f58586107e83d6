/* The option parser of every command (lsim_cli_getopt, on getopt_long)
 * and each command's table of options (see cli.h), apart from the commands
 * themselves so the fuzz target (tests/fuzz/fuzz_cli.c) drives exactly the
 * parses the commands run. Each parser only reads argv and prints its
 * usage or its one usage-error line; nothing is opened, read or written.
 *
 * The rules every command keeps, because one function applies them (README
 * "Usage"): --name VALUE and --name=VALUE alike; options and paths in any
 * order; an option the command's table lacks is an error naming it and the
 * command (it was silently ignored, or taken by a command it does nothing
 * for); an option given twice is a usage error naming it (the last one
 * silently winning lost a setting: `-o a -o b`, `--dp 2 --dp 4`), except
 * the ones the table marks repeatable (calibrate --nccl-tests, whatif
 * --slow-gpu); an option's value is never the next option (`--run --json`
 * is a missing run name): a value that starts with '-' is written
 * --name=VALUE; "--" ends the options. What getopt_long does not do is
 * done around it: the once-only check, the value that is an option, and
 * refusing abbreviations (getopt takes any unambiguous prefix). */
#include <getopt.h>
#include <poll.h>
#include <signal.h>
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
#include "lumosim/memlimit.h"
#include "lumosim/samples.h"
#include "lumosim/text.h"
#include "lumosim/whatif_steps.h"

const char *const LSIM_USAGE_BUILD =
    "usage: lumosim build [--latency model|observed] [--sm-contention on|off]\n"
    "                     [--model M [--micro-batch B]] TRACES... -o JOB.h5\n"
    "       lumosim build --chakra DIR -o JOB.h5\n"
    "\n"
    "Parses the traces once and stores the execution graphs of every GPU (nodes,\n"
    "edges, processors, names, collectives, iterations, the latency model baked\n"
    "into the edge delays) with provenance (source names, sizes, CRC-32, version,\n"
    "command line) in an HDF5 graph store (docs/hdf5-schema.md). Under mpirun the\n"
    "traces are split over the ranks and the store is written collectively.\n"
    "--sm-contention on adds the SM edges of lumosim replay --sm-contention on.\n"
    "--model M records the job's memory estimate (as lumosim replay --model M) in\n"
    "the store, which sim, info and report then show, OOM flagged (serial only).\n"
    "--chakra DIR reads MLCommons Chakra execution traces instead, one rank per\n"
    "file PREFIX.RANK.et (lumosim export --chakra writes them; docs/chakra.md).\n";

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
    "                   (the default: whole data-parallel replicas per rank,\n"
    "                   else whole tensor-parallel groups: the fewest messages),\n"
    "                   stages (whole pipeline stages per rank: the least\n"
    "                   memory), linear (contiguous blocks), round-robin (GPU g\n"
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
    "  --link-sharing T concurrent network transfers share the NICs and the\n"
    "                   leaves' uplinks of topology file T, max-min fairly\n"
    "                   (docs/network.md, \"Link sharing\"): the job is run,\n"
    "                   its transfers re-timed, and run again until the times\n"
    "                   no longer change; GPU i of the job is rank i\n"
    "  --share-passes N at most N runs with re-timed transfers (default 10)\n"
    "  --symmetry S     on (the default): GPUs that reach the same times\n"
    "                   (colour refinement over their structure, clock and\n"
    "                   collective partners; docs/scaling.md, \"Symmetry\n"
    "                   reduction\") are simulated once per class, with the\n"
    "                   same results; off simulates every GPU. With\n"
    "                   --link-sharing the classes are found again after\n"
    "                   each sweep (replicas whose links are loaded\n"
    "                   differently split); under mpirun every GPU is\n"
    "                   simulated\n"
    "  --match-parts N  match the job's collectives in N parts (1..16), each\n"
    "                   a run of its process groups: about 1/N of the\n"
    "                   match's sort in memory, for N + 1 listings of the\n"
    "                   collectives; the same job and results. Default: one\n"
    "                   part when the sort fits the memory limit, else the\n"
    "                   fewest that fit (docs/scaling.md, \"The match in\n"
    "                   parts\"); under mpirun the ranks share the match\n"
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

int lsim_cli_stdout_gone(void)
{
    struct pollfd p = {.fd = 1, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

static void print_error(const char *raw)
{
    if (lsim_cli_stdout_gone()) { /* the reader went away: quietly, as coreutils (issue 39) */
        signal(SIGPIPE, SIG_DFL);
        raise(SIGPIPE);
    }
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

/* A rank of an MPI launch other than 0, from the launcher's environment
 * (usage errors come before MPI_Init, and every rank parses the same
 * arguments, so rank 0 alone says it once: issue 39). */
static int launched_rank_not_0(void)
{
    static const char *const VARS[3] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (int k = 0; k < 3; k++) {
        const char *v = getenv(VARS[k]);
        if (v && *v) return strcmp(v, "0") != 0;
    }
    return 0;
}

void lsim_cli_usage_error(const char *fmt, ...)
{
    if (launched_rank_not_0()) return;
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

/* ------------------------------------------------------- the parser */

/* getopt_long's code of table entry k (the command's own options, then
 * the shared ones it takes): above every short option's character. */
#define OPT_CODE0 256
#define MAX_ENTRIES (LSIM_CLI_MAXSEEN + LSIM_OPT_NCOMMON)

/* The option as written in el (an argument that starts with "--"), up to
 * its '=': its length. */
static int spelled_len(const char *el)
{
    return (int)strcspn(el, "=");
}

/* el is written as e's name or alias exactly, not abbreviated (getopt_long
 * takes any unambiguous prefix). Short options are always exact. */
static int spelled_exactly(const char *el, const lsim_cli_opt *e)
{
    if (el[0] != '-' || el[1] != '-') return 1;
    size_t n = (size_t)spelled_len(el);
    const char *sp[2] = {e->name, e->alias};
    for (int j = 0; j < 2; j++)
        if (sp[j] && sp[j][1] == '-' && strlen(sp[j]) == n && !strncmp(el, sp[j], n)) return 1;
    return 0;
}

static void unknown_option(const lsim_cli_spec *s, const char *el)
{
    lsim_cli_usage_error("unknown option '%s' for %s (see lumosim %s --help)", el, s->cmd, s->cmd);
}

/* The value of entry e, written in el: refused when missing, empty, or the
 * next argument when that is itself an option (-1, printed). */
static int check_value(const char *el, const lsim_cli_opt *e, const char *v, int from_next)
{
    int n = el[1] == '-' ? spelled_len(el) : 2;
    if (v && from_next && v[0] == '-' && v[1]) {
        if (el[1] == '-')
            lsim_cli_usage_error("%.*s needs %s, not the option '%s' (a value that starts with '-': %.*s=VALUE)", n,
                                 el, e->what, v, n, el);
        else
            lsim_cli_usage_error("%.*s needs %s, not the option '%s' (a file name that starts with '-': ./NAME)", n,
                                 el, e->what, v);
        return -1;
    }
    if (!v || !*v) {
        lsim_cli_usage_error("%.*s needs %s", n, el, e->what);
        return -1;
    }
    return 0;
}

int lsim_cli_getopt(int argc, char **argv, const lsim_cli_spec *s)
{
    const lsim_cli_opt *ent[MAX_ENTRIES];
    struct option lo[2 * MAX_ENTRIES + 3];
    char shorts[2 * MAX_ENTRIES + 8] = "-:hV"; /* '-': arguments in order, never permuted, whatever
                                                  POSIXLY_CORRECT says; ':': a missing value is told apart */
    size_t nent = 0, nlo = 0, nsh = 4;
    for (size_t k = 0; k < s->nopts && nent < MAX_ENTRIES; k++) ent[nent++] = &s->opts[k];
    for (int k = 0; k < LSIM_OPT_NCOMMON && nent < MAX_ENTRIES; k++)
        if (s->common & LSIM_OPT_BIT(k)) ent[nent++] = &LSIM_CLI_COMMON[k];
    for (size_t k = 0; k < nent; k++) {
        const char *sp[2] = {ent[k]->name, ent[k]->alias};
        for (int j = 0; j < 2; j++) {
            if (!sp[j]) continue;
            if (sp[j][1] == '-') {
                lo[nlo++] = (struct option){sp[j] + 2, ent[k]->what ? required_argument : no_argument, NULL,
                                            OPT_CODE0 + (int)k};
            } else {
                shorts[nsh++] = sp[j][1];
                if (ent[k]->what) shorts[nsh++] = ':';
            }
        }
    }
    shorts[nsh] = '\0';
    lo[nlo++] = (struct option){"help", no_argument, NULL, 'h'};
    lo[nlo++] = (struct option){"version", no_argument, NULL, 'V'};
    lo[nlo] = (struct option){NULL, 0, NULL, 0};
    /* getopt wants the program's name first; the strings stay argv's */
    char **av = malloc((size_t)(argc + 2) * sizeof *av);
    if (!av) {
        lsim_cli_usage_error("out of memory");
        return -1;
    }
    av[0] = (char *)"lumosim";
    for (int i = 0; i < argc; i++) av[i + 1] = argv[i];
    av[argc + 1] = NULL;
    int ac = argc + 1, rc = 1;
    opterr = 0;
    optind = 0; /* glibc: start afresh (a previous parse, POSIXLY_CORRECT read again) */
    while (rc > 0) {
        int at = optind < 1 ? 1 : optind; /* no permutation: the argument being read */
        int c = getopt_long(ac, av, shorts, lo, NULL);
        if (c == -1) break;
        const char *el = at < ac ? av[at] : "";
        if (c == 1) { /* a path or other argument */
            rc = s->on(s->ctx, NULL, optarg) ? -1 : 1;
            continue;
        }
        if (c == 'h' || c == 'V') {
            if ((el[1] == '-' && strcmp(el, c == 'h' ? "--help" : "--version")) || !s->usage) {
                unknown_option(s, el);
                rc = -1;
            } else {
                if (c == 'h') fputs(s->usage, stdout);
                else printf("lumosim %s\n", LSIM_VERSION);
                rc = 0;
            }
            continue;
        }
        if (c == ':' || c == '?') {
            /* optopt: the code of the option missing its value or given a
             * value it does not take; a character not ours; 0: unknown */
            size_t k = nent;
            if (optopt >= OPT_CODE0) k = (size_t)(optopt - OPT_CODE0);
            else if (optopt > 0)
                for (k = 0; k < nent && !(ent[k]->name[1] == optopt && !ent[k]->name[2]) &&
                            !(ent[k]->alias && ent[k]->alias[1] == optopt && !ent[k]->alias[2]);
                     k++) {
                }
            if (k < nent && c == ':') check_value(el, ent[k], NULL, 0);
            else if (k < nent && el[1] == '-' && ent[k]->what == NULL && strchr(el, '='))
                lsim_cli_usage_error("%.*s takes no value (got '%s')", spelled_len(el), el, el);
            else unknown_option(s, el);
            rc = -1;
            continue;
        }
        const lsim_cli_opt *e = c >= OPT_CODE0 && (size_t)(c - OPT_CODE0) < nent ? ent[c - OPT_CODE0] : NULL;
        if (!e) /* a short option of the table */
            for (size_t k = 0; k < nent && !e; k++)
                if ((ent[k]->name[1] == c && !ent[k]->name[2]) ||
                    (ent[k]->alias && ent[k]->alias[1] == c && !ent[k]->alias[2]))
                    e = ent[k];
        if (!e || !spelled_exactly(el, e)) {
            unknown_option(s, el);
            rc = -1;
            continue;
        }
        const char *v = e->what ? optarg : NULL;
        /* "-o=job.h5" means job.h5, as "--output=job.h5" does (getopt
         * would take "=job.h5" for the file's name) */
        if (v && el[1] != '-' && v == el + 2 && v[0] == '=') v++;
        if (e->what && check_value(el, e, v, at + 1 < ac && v == av[at + 1])) {
            rc = -1;
            continue;
        }
        if (!e->repeat && lsim_cli_once(s->seen, e->name)) {
            rc = -1;
            continue;
        }
        if (e->repeat && !was_seen(s->seen, e->name) && s->seen->n < LSIM_CLI_MAXSEEN)
            s->seen->name[s->seen->n++] = e->name;
        int common = e >= LSIM_CLI_COMMON && e < LSIM_CLI_COMMON + LSIM_OPT_NCOMMON;
        if (common ? lsim_cli_common_apply(s->o, e->id, v) : s->on(s->ctx, e, v)) rc = -1;
    }
    for (int i = optind; rc > 0 && i < ac; i++) /* after "--": paths */
        if (s->on(s->ctx, NULL, av[i])) rc = -1;
    free(av);
    return rc;
}

/* A positive integer up to max, or -1 (message printed). */
static int pos_long(const char *opt, const char *v, long max, long *out)
{
    char *e;
    errno = 0;
    long x = strtol(v, &e, 10);
    if (errno || *e || e == v || x <= 0 || x > max) {
        lsim_cli_usage_error("%s needs a positive integer up to %ld (got '%.40s%s')", opt, max, v, strlen(v) > 40 ? "..." : "");
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

#define NOPTS(t) (sizeof(t) / sizeof *(t))

/* The paths of a command that takes them, into the caller's array. */
typedef struct paths_ctx {
    char **args;
    int n;
} paths_ctx;

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

enum { O_OUT = 100, O_RUN, O_HTML, O_NOT_REPORT, O_REPLACE, O_DETAIL, O_MAPPING, O_LOOKAHEAD, O_SKEW, O_SAMPLES,
       O_SEED, O_DRAW, O_WINDOWS, O_NO_LATENCY, O_NO_SM, O_CHAKRA, O_SHARE, O_PASSES, O_SYMMETRY, O_MATCH_PARTS };

/* --samples N (smp: 1..max) or --seed S (a non-negative integer) into *out;
 * -1 after the usage error line. */
static int samples_or_seed(int smp, const char *v, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || end == v || x < (smp ? 1 : 0) || (smp && x > max)) {
        if (smp) lsim_cli_usage_error("--samples needs an integer in 1..%ld, not '%s'", max, v);
        else lsim_cli_usage_error("--seed needs a non-negative integer, not '%s'", v);
        return -1;
    }
    *out = (long)x;
    return 0;
}

typedef struct report_ctx {
    paths_ctx p;
    lsim_cli_opts *o;
} report_ctx;

static int on_report(void *ctx, const lsim_cli_opt *e, const char *v)
{
    report_ctx *r = ctx;
    if (!e) {
        r->p.args[r->p.n++] = (char *)v;
        return 0;
    }
    switch (e->id) {
    case O_RUN: r->o->run_name = v; return 0;
    case O_HTML: r->o->html_out = v; return 0;
    case O_SAMPLES:
    case O_SEED:
        return samples_or_seed(e->id == O_SAMPLES, v, LSIM_CLI_RANGE_SAMPLES_MAX,
                               e->id == O_SAMPLES ? &r->o->range_samples : &r->o->range_seed);
    default:
        /* report prints no table and no document: an option that would
         * change them does not apply (it was silently ignored) */
        lsim_cli_usage_error("report writes an HTML page: %s does not apply (lumosim replay %s prints the report)",
                             e->name, e->name);
        return -1;
    }
}

/* replay/report: paths and the shared options. */
int lsim_cli_parse_paths(int argc, char **argv, lsim_cli_opts *o, const char *usage, int allow_html, char **args)
{
    /* --samples, --seed: replay --replicate-from's range (docs/intervals.md,
     * "One traced rank"), which the page shows too */
    static const lsim_cli_opt REPORT[] = {{"--run", NULL, "a run name", O_RUN, 0},
                                          {"--html", NULL, "a file name", O_HTML, 0},
                                          {"--json", NULL, NULL, O_NOT_REPORT, 0},
                                          {"--per-rank", NULL, NULL, O_NOT_REPORT, 0},
                                          {"--samples", NULL, "a number of samples", O_SAMPLES, 0},
                                          {"--seed", NULL, "a seed", O_SEED, 0}};
    static const lsim_cli_opt REPLAY[] = {{"--samples", NULL, "a number of samples", O_SAMPLES, 0},
                                          {"--seed", NULL, "a seed", O_SEED, 0}};
    report_ctx r = {{args, 0}, o};
    lsim_cli_spec s = {allow_html ? "report" : "replay",
                       usage,
                       allow_html ? REPORT : REPLAY,
                       allow_html ? NOPTS(REPORT) : NOPTS(REPLAY),
                       allow_html ? LSIM_OPT_ALL_COMMON & ~(LSIM_OPT_BIT(LSIM_OPT_JSON) | LSIM_OPT_BIT(LSIM_OPT_PER_RANK))
                                  : LSIM_OPT_ALL_COMMON,
                       o,
                       &o->seen,
                       on_report,
                       &r};
    int rc = lsim_cli_getopt(argc, argv, &s);
    if (rc <= 0) return rc;
    if (r.p.n == 0) {
        lsim_cli_usage_error("at least one trace file or directory is needed (see --help)");
        return -1;
    }
    if (csv_stdout_clash(o)) return -1;
    if (o->run.replicate_from < 0 && (was_seen(&o->seen, "--samples") || was_seen(&o->seen, "--seed"))) {
        lsim_cli_usage_error("%s %s is about the range of a job rebuilt from one rank: it needs --replicate-from R "
                             "(a job's prediction intervals: lumosim build, then lumosim sim --samples N)",
                             s.cmd, was_seen(&o->seen, "--samples") ? "--samples" : "--seed");
        return -1;
    }
    return r.p.n;
}

/* ------------------------------------------------------------ build, sim */

typedef struct build_ctx {
    lsim_cli_build_args *b;
    char **args;
} build_ctx;

static int on_build(void *ctx, const lsim_cli_opt *e, const char *v)
{
    build_ctx *c = ctx;
    if (!e) c->args[c->b->nargs++] = (char *)v;
    else if (e->id == O_CHAKRA) c->b->chakra = v;
    else c->b->out = v; /* -o */
    return 0;
}

int lsim_cli_parse_build(int argc, char **argv, lsim_cli_build_args *b, char **args)
{
    static const lsim_cli_opt OPTS[] = {{"-o", "--output", "a file name", O_OUT, 0},
                                        {"--chakra", NULL, "a directory of Chakra ET files", O_CHAKRA, 0}};
    memset(b, 0, sizeof *b);
    lsim_cli_opts_default(&b->o);
    build_ctx c = {b, args};
    lsim_cli_spec s = {"build",   LSIM_USAGE_BUILD, OPTS, NOPTS(OPTS), LSIM_OPT_BIT(LSIM_OPT_LATENCY) | LSIM_OPT_BIT(LSIM_OPT_SM_CONTENTION) | LSIM_OPT_BIT(LSIM_OPT_MODEL) | LSIM_OPT_BIT(LSIM_OPT_MICRO_BATCH),
                       &b->o,     &b->o.seen,       on_build, &c};
    int rc = lsim_cli_getopt(argc, argv, &s);
    if (rc <= 0) return rc;
    if (b->chakra && b->nargs) {
        lsim_cli_usage_error("build takes traces or --chakra DIR, not both");
        return -1;
    }
    if (!b->out || (!b->nargs && !b->chakra)) {
        lsim_cli_usage_error("build needs traces (or --chakra DIR) and -o JOB.h5 (see lumosim build --help)");
        return -1;
    }
    return 1;
}

static int on_sim(void *ctx, const lsim_cli_opt *e, const char *v)
{
    lsim_cli_sim_args *s = ctx;
    if (!e) {
        if (s->job) {
            lsim_cli_usage_error("sim takes one graph store ('%s' and '%s' given)", s->job, v);
            return -1;
        }
        s->job = v;
        return 0;
    }
    switch (e->id) {
    case O_OUT: s->out = v; break;
    case O_RUN: s->run_name = v; break;
    case O_REPLACE: s->replace = 1; break;
    case O_DETAIL: {
        lsim_store_detail d;
        if (lsim_store_detail_parse(v, &d)) {
            lsim_cli_usage_error("unknown --detail '%s' (nodes, ops or summary)", v);
            return -1;
        }
        s->detail = (int)d;
        break;
    }
    case O_MAPPING:
        if (strcmp(v, "groups") && strcmp(v, "stages") && strcmp(v, "linear") && strcmp(v, "round-robin") &&
            (strncmp(v, "file:", 5) || !v[5])) {
            lsim_cli_usage_error("unknown --mapping '%s' (groups, stages, linear, round-robin or file:PATH)", v);
            return -1;
        }
        s->mapping = v;
        break;
    case O_LOOKAHEAD:
    case O_SKEW: { /* testing: force a lookahead; over-promise each window's bound */
        char *end = NULL;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (errno || *end || end == v || x <= 0) {
            lsim_cli_usage_error("%s needs a positive integer, not '%s'", e->name, v);
            return -1;
        }
        *(e->id == O_LOOKAHEAD ? &s->lookahead : &s->bound_skew) = (lsim_ns)x;
        break;
    }
    case O_SAMPLES:
    case O_SEED:
        if (samples_or_seed(e->id == O_SAMPLES, v, LSIM_SAMPLES_MAX, e->id == O_SAMPLES ? &s->samples : &s->seed))
            return -1;
        break;
    case O_SHARE: s->share_topo = v; break;
    case O_PASSES: {
        char *end = NULL;
        long x = strtol(v, &end, 10);
        if (*end || end == v || x < 1 || x > 100) {
            lsim_cli_usage_error("--share-passes needs an integer in 1..100, not '%s'", v);
            return -1;
        }
        s->share_passes = (int)x;
        break;
    }
    case O_MATCH_PARTS: {
        char *end = NULL;
        long x = strtol(v, &end, 10);
        if (*end || end == v || x < 1 || x > LSIM_MATCH_PARTS_MAX) {
            lsim_cli_usage_error("--match-parts needs an integer in 1..%d, not '%s'", LSIM_MATCH_PARTS_MAX, v);
            return -1;
        }
        s->o.run.match_parts = (unsigned)x;
        break;
    }
    case O_SYMMETRY:
        if (strcmp(v, "on") && strcmp(v, "off")) {
            lsim_cli_usage_error("unknown --symmetry '%s' (on or off)", v);
            return -1;
        }
        s->o.run.symmetry_off = !strcmp(v, "off");
        break;
    case O_DRAW:
        if (strcmp(v, "job") && strcmp(v, "others")) {
            lsim_cli_usage_error("unknown --draw-from '%s' (job or others)", v);
            return -1;
        }
        s->draw_others = !strcmp(v, "others");
        break;
    case O_WINDOWS:
        /* the order of lsim_pdes_windows (args.c stays free of MPI) */
        s->windows = !strcmp(v, "ready") ? 0 : !strcmp(v, "paths") ? 1 : !strcmp(v, "start") ? 2 : -1;
        if (s->windows < 0) {
            lsim_cli_usage_error("unknown --windows '%s' (ready, paths or start)", v);
            return -1;
        }
        break;
    case O_NO_SM: /* so are the SM edges */
        lsim_cli_usage_error("sim cannot change --sm-contention: it is fixed when the store is built "
                             "(lumosim build --sm-contention on ...)");
        return -1;
    default: /* --latency: baked into the store's edge delays */
        lsim_cli_usage_error("sim cannot change the latency mode: it is fixed when the store is built "
                             "(lumosim build --latency MODE ...)");
        return -1;
    }
    return 0;
}

int lsim_cli_parse_sim(int argc, char **argv, lsim_cli_sim_args *s)
{
    static const lsim_cli_opt OPTS[] = {
        {"-o", "--output", "a file name", O_OUT, 0},
        {"--run", NULL, "a run name", O_RUN, 0},
        {"--replace", NULL, NULL, O_REPLACE, 0},
        {"--detail", NULL, "nodes, ops or summary", O_DETAIL, 0},
        {"--mapping", NULL, "groups, stages, linear, round-robin or file:PATH", O_MAPPING, 0},
        {"--lookahead-ns", NULL, "a number of nanoseconds", O_LOOKAHEAD, 0},
        {"--bound-skew-ns", NULL, "a number of nanoseconds", O_SKEW, 0},
        {"--samples", NULL, "a number of samples", O_SAMPLES, 0},
        {"--seed", NULL, "a seed", O_SEED, 0},
        {"--draw-from", NULL, "job or others", O_DRAW, 0},
        {"--windows", NULL, "ready, paths or start", O_WINDOWS, 0},
        {"--link-sharing", NULL, "a topology file", O_SHARE, 0},
        {"--share-passes", NULL, "a number of passes", O_PASSES, 0},
        {"--symmetry", NULL, "on or off", O_SYMMETRY, 0},
        {"--match-parts", NULL, "a number of parts", O_MATCH_PARTS, 0},
        {"--latency", NULL, "model or observed", O_NO_LATENCY, 0},
        {"--sm-contention", NULL, "on or off", O_NO_SM, 0},
    };
    memset(s, 0, sizeof *s);
    lsim_cli_opts_default(&s->o);
    s->run_name = "sim";
    s->mapping = "groups";
    s->seed = 1;
    lsim_cli_seen *seen = &s->o.seen;
    lsim_cli_spec sp = {"sim", LSIM_USAGE_SIM, OPTS,  NOPTS(OPTS), LSIM_OPT_ALL_COMMON & ~(LSIM_OPT_BIT(LSIM_OPT_LATENCY) | LSIM_OPT_BIT(LSIM_OPT_SM_CONTENTION) | LSIM_OPT_BIT(LSIM_OPT_MODEL) | LSIM_OPT_BIT(LSIM_OPT_MICRO_BATCH)),
                        &s->o, seen,           on_sim, s};
    int rc = lsim_cli_getopt(argc, argv, &sp);
    if (rc <= 0) return rc;
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
    if (s->share_passes && !s->share_topo) {
        lsim_cli_usage_error("--share-passes is about link sharing: it needs --link-sharing TOPOLOGY.json");
        return -1;
    }
    if (s->share_topo && (s->samples || s->o.run.independent)) {
        lsim_cli_usage_error("--link-sharing shares the links of one coupled run: it does not take %s",
                             s->samples ? "--samples" : "--independent");
        return -1;
    }
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

static int on_paths(void *ctx, const lsim_cli_opt *e, const char *v)
{
    paths_ctx *p = ctx;
    (void)e; /* only paths: the commands using it have no options of their own */
    p->args[p->n++] = (char *)v;
    return 0;
}

int lsim_cli_parse_ablate(int argc, char **argv, lsim_cli_opts *o, const char *usage, char **args)
{
    /* the options that apply to every variant alike */
    paths_ctx p = {args, 0};
    lsim_cli_spec s = {"ablate",
                       usage,
                       NULL,
                       0,
                       LSIM_OPT_BIT(LSIM_OPT_JSON) | LSIM_OPT_BIT(LSIM_OPT_LATENCY) | LSIM_OPT_BIT(LSIM_OPT_BIN_MS) |
                           LSIM_OPT_BIT(LSIM_OPT_SM_CONTENTION),
                       o,
                       &o->seen,
                       on_paths,
                       &p};
    int rc = lsim_cli_getopt(argc, argv, &s);
    if (rc <= 0) return rc;
    if (!p.n) {
        lsim_cli_usage_error("ablate needs at least one trace file or directory");
        return -1;
    }
    return p.n;
}

int lsim_cli_parse_info(int argc, char **argv, const char *usage, char **args)
{
    paths_ctx p = {args, 0};
    lsim_cli_seen seen = {{0}, 0};
    lsim_cli_spec s = {"info", usage, NULL, 0, 0, NULL, &seen, on_paths, &p};
    int rc = lsim_cli_getopt(argc, argv, &s);
    if (rc <= 0) return rc;
    if (!p.n) {
        lsim_cli_usage_error("info needs a graph store or result archive (see lumosim info --help)");
        return -1;
    }
    return p.n;
}

typedef struct collect_ctx {
    lsim_cli_collect_args *c;
    char **args;
} collect_ctx;

static int on_collect(void *ctx, const lsim_cli_opt *e, const char *v)
{
    collect_ctx *x = ctx;
    if (!e) x->args[x->c->nargs++] = (char *)v;
    else if (e->id == O_OUT) x->c->out = v;
    else x->c->run_name = v;
    return 0;
}

int lsim_cli_parse_collect(int argc, char **argv, const char *usage, lsim_cli_collect_args *c, char **args)
{
    static const lsim_cli_opt OPTS[] = {{"-o", "--output", "a file name", O_OUT, 0},
                                        {"--run", NULL, "a run name", O_RUN, 0}};
    memset(c, 0, sizeof *c);
    lsim_cli_seen seen = {{0}, 0};
    collect_ctx x = {c, args};
    lsim_cli_spec s = {"collect", usage, OPTS, NOPTS(OPTS), 0, NULL, &seen, on_collect, &x};
    int rc = lsim_cli_getopt(argc, argv, &s);
    if (rc <= 0) return rc;
    if (!c->nargs || !c->out) {
        lsim_cli_usage_error("collect needs result archives or directories and -o SWEEP.csv "
                             "(see lumosim collect --help)");
        return -1;
    }
    return 1;
}

/* ------------------------------------------------------------ calibrate */

enum { C_GPU = 200, C_TOPO, C_TOPO_OUT, C_NCCL, C_CSV, C_FIT_NODES, C_ALGO, C_PROTO };

static int on_calibrate(void *ctx, const lsim_cli_opt *e, const char *v)
{
    lsim_cli_calibrate_args *o = ctx;
    if (!e) o->traces[o->ntraces++] = (char *)v;
    else if (e->id == O_OUT) o->out = v;
    else if (e->id == C_GPU) o->gpu = v;
    else if (e->id == C_TOPO) o->topo = v;
    else if (e->id == C_TOPO_OUT) o->topo_out = v;
    else if (e->id == C_CSV) o->csv[o->ncsv++] = v;
    else if (e->id == C_FIT_NODES) o->fit_nodes = v;
    else if (e->id == C_ALGO) o->algo = v;
    else if (e->id == C_PROTO) o->proto = v;
    else o->nccl[o->nnccl++] = v; /* --nccl-tests, repeatable, in order */
    return 0;
}

int lsim_cli_parse_calibrate(int argc, char **argv, const char *usage, lsim_cli_calibrate_args *o)
{
    static const lsim_cli_opt OPTS[] = {{"-o", "--out", "a file name", O_OUT, 0},
                                        {"--gpu", NULL, "a GPU name or file", C_GPU, 0},
                                        {"--topology", NULL, "a file name", C_TOPO, 0},
                                        {"--topology-out", NULL, "a file name", C_TOPO_OUT, 0},
                                        {"--nccl-tests", NULL, "a file name", C_NCCL, 1},
                                        {"--nccl-csv", NULL, "a file name", C_CSV, 1},
                                        {"--fit-nodes", NULL, "a list of node counts", C_FIT_NODES, 0},
                                        {"--nccl-algo", NULL, "auto, ring or tree", C_ALGO, 0},
                                        {"--nccl-proto", NULL, "auto, ll, ll128 or simple", C_PROTO, 0}};
    lsim_cli_seen seen = {{0}, 0};
    o->gpu = o->out = o->topo = o->topo_out = NULL;
    o->fit_nodes = o->algo = o->proto = NULL;
    o->nnccl = o->ntraces = o->ncsv = 0;
    lsim_cli_spec s = {"calibrate", usage, OPTS, NOPTS(OPTS), 0, NULL, &seen, on_calibrate, o};
    int rc = lsim_cli_getopt(argc, argv, &s);
    if (rc <= 0) return rc;
    int net = o->ncsv || o->fit_nodes || o->algo || o->proto;
    if (net && o->ntraces) {
        lsim_cli_usage_error("--nccl-csv, --fit-nodes, --nccl-algo and --nccl-proto calibrate the network alone: give "
                             "no traces");
        return -1;
    }
    if (!o->ntraces && (o->ncsv || o->nnccl) && !o->out) {
        if (!o->topo_out) {
            lsim_cli_usage_error("calibrating the network alone needs --topology-out FILE");
            return -1;
        }
        return 1;
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

/* synth's options: the code says where the value goes. */
enum {
    S_MODEL = 300, S_GPU, S_TOPO, S_OUT, S_SCHEDULE, /* strings */
    S_INT0 = 310,                                    /* + index into the ints: --tp ... --gpus */
    S_SHAPE0 = 320,                                  /* + index into shape[] */
    S_FLAG0 = 330,                                   /* + index into the switches */
    S_WORD0 = 340,                                   /* + index into the words */
    S_DP_COST = 360, S_SEED, S_FSDP, S_CP, S_EP, S_SKEW, S_PPL, S_DIRICHLET, S_HIST, S_FP8AG, S_CAP, S_PAD, S_ETP
};

#define NSYNTH_WORDS 10 /* S_WORD0 + 10 stays below S_DP_COST */
static const char *const SYNTH_WORDS[NSYNTH_WORDS][4] = {{"none", "selective", "full", "op"},
                                                        {"overlap", "after", NULL},
                                                        {"flash", "unfused", NULL},
                                                        {"2", "4", NULL},
                                                        {"fused", "buffer", "autograd"},
                                                        {"bf16", "fp8", NULL},
                                                        {"current", "delayed", NULL},
                                                        {"fused", "eager", NULL},
                                                        {"spec", "fa2", "fa3", NULL},
                                                        {"fused", "eager", NULL}};

static int on_synth(void *ctx, const lsim_cli_opt *e, const char *v)
{
    lsim_cli_synth_args *s = ctx;
    long x = 0;
    if (!e) {
        lsim_cli_usage_error("unexpected argument '%s' (see lumosim synth --help)", v);
        return -1;
    }
    int id = e->id;
    if (id == S_FP8AG || id == S_PAD) {
        *(id == S_FP8AG ? &s->fp8_all_gather : &s->pad_to_capacity) = 1;
        return 0;
    }
    if (id >= S_FLAG0 && id < S_FLAG0 + 10) { /* ids below S_WORD0 */
        int *flags[10] = {&s->seq_parallel, &s->dist_opt,     &s->scatter_gather, &s->no_dropout, &s->tp_overlap,
                          &s->forward_only, &s->no_mem_check, &s->stats,          &s->no_p2p_sync, &s->no_share};
        *flags[id - S_FLAG0] = 1;
        return 0;
    }
    if (id >= S_WORD0 && id < S_WORD0 + NSYNTH_WORDS) {
        int w = id - S_WORD0, k = 0;
        int *words[NSYNTH_WORDS] = {&s->recompute, &s->grad_reduce, &s->attention, &s->grad_bytes,
                                    &s->grad_acc,  &s->precision,   &s->fp8_scaling, &s->kernels,
                                    &s->attn_kernel, &s->loss};
        while (k < 4 && SYNTH_WORDS[w][k] && strcmp(v, SYNTH_WORDS[w][k])) k++;
        if (k == 4 || !SYNTH_WORDS[w][k]) {
            lsim_cli_usage_error("%s '%s': expected %s|%s%s%s%s%s", e->name, v, SYNTH_WORDS[w][0], SYNTH_WORDS[w][1],
                                 SYNTH_WORDS[w][2] ? "|" : "", SYNTH_WORDS[w][2] ? SYNTH_WORDS[w][2] : "",
                                 SYNTH_WORDS[w][3] ? "|" : "", SYNTH_WORDS[w][3] ? SYNTH_WORDS[w][3] : "");
            return -1;
        }
        *words[w] = w == 3 ? atoi(v) : k;
        return 0;
    }
    if (id >= S_INT0 && id < S_INT0 + 6) {
        int *ints[6] = {&s->tp, &s->pp, &s->dp, &s->micro_batch, &s->global_batch, &s->gpus};
        if (pos_long(e->name, v, 1000000000L, &x)) return -1;
        *ints[id - S_INT0] = (int)x;
        return 0;
    }
    if (id >= S_SHAPE0 && id < S_SHAPE0 + 6) {
        if (pos_long(e->name, v, 1000000000L, &x)) return -1;
        s->shape[id - S_SHAPE0] = (int)x;
        return 0;
    }
    switch (id) {
    case S_MODEL: s->model = v; break;
    case S_GPU: s->gpu = v; break;
    case S_TOPO: s->topo = v; break;
    case S_OUT: s->out = v; break;
    case S_SCHEDULE:
        if (schedule_of(v, 1000000000L, &x)) return -1;
        s->vstages = (int)x;
        break;
    case S_DP_COST:
        if (pos_long("--dp-cost", v, 1L << 24, &x)) return -1;
        s->dp_cost = (int)x;
        break;
    case S_FSDP:
        if (pos_long("--fsdp", v, 1L << 24, &x)) return -1;
        s->fsdp = (int)x;
        break;
    case S_CP:
        if (pos_long("--cp", v, 1L << 24, &x)) return -1;
        s->cp = (int)x;
        break;
    case S_EP:
        if (pos_long("--ep", v, 1L << 24, &x)) return -1;
        s->ep = (int)x;
        break;
    case S_ETP:
        if (pos_long("--etp", v, 1L << 24, &x)) return -1;
        s->etp = (int)x;
        break;
    case S_PPL: {
        lsim_err err = {0};
        if (lsim_split_parse(v, &s->split, &err)) {
            lsim_cli_usage_error("%s", err.msg);
            return -1;
        }
        break;
    }
    case S_SKEW:
    case S_DIRICHLET:
    case S_CAP: {
        /* a Zipf exponent, a Dirichlet concentration or a capacity factor:
         * any finite number parses; synth refuses one below 0 naming it */
        static const char *const WHAT[] = {"--routing-skew needs a Zipf exponent >= 0",
                                           "--routing-dirichlet needs a concentration > 0",
                                           "--capacity-factor needs a factor > 0"};
        char *end;
        int w = id == S_SKEW ? 0 : id == S_DIRICHLET ? 1 : 2;
        double *dst = w == 0 ? &s->routing_skew : w == 1 ? &s->routing_dirichlet : &s->capacity_factor;
        *dst = strtod(v, &end);
        if (*end || end == v || !isfinite(*dst)) {
            lsim_cli_usage_error("%s (got '%.40s')", WHAT[w], v);
            return -1;
        }
        break;
    }
    case S_HIST:
        s->routing_hist = v;
        break;
    default: /* --seed */
        if (strcmp(v, "0") && pos_long("--seed", v, 2000000000L, &x)) return -1;
        s->seed = x;
        break;
    }
    return 0;
}

int lsim_cli_parse_synth_opts(int argc, char **argv, const char *usage, lsim_cli_synth_args *s)
{
    static const lsim_cli_opt OPTS[] = {
        {"--model", NULL, "a model name or file", S_MODEL, 0},
        {"--gpu", NULL, "a GPU name or file", S_GPU, 0},
        {"--topology", NULL, "a file name", S_TOPO, 0},
        {"-o", "--output", "a file name", S_OUT, 0},
        {"--schedule", NULL, "1f1b or interleaved:V", S_SCHEDULE, 0},
        {"--tp", NULL, "a positive integer", S_INT0 + 0, 0},
        {"--pp", NULL, "a positive integer", S_INT0 + 1, 0},
        {"--dp", NULL, "a positive integer", S_INT0 + 2, 0},
        {"--micro-batch", NULL, "a positive integer", S_INT0 + 3, 0},
        {"--global-batch", NULL, "a positive integer", S_INT0 + 4, 0},
        {"--gpus", NULL, "a positive integer", S_INT0 + 5, 0},
        {"--layers", NULL, "a positive integer", S_SHAPE0 + 0, 0},
        {"--hidden", NULL, "a positive integer", S_SHAPE0 + 1, 0},
        {"--ffn", NULL, "a positive integer", S_SHAPE0 + 2, 0},
        {"--heads", NULL, "a positive integer", S_SHAPE0 + 3, 0},
        {"--seq", NULL, "a positive integer", S_SHAPE0 + 4, 0},
        {"--vocab", NULL, "a positive integer", S_SHAPE0 + 5, 0},
        /* the Megatron options: switches, and words from a short list */
        {"--sequence-parallel", NULL, NULL, S_FLAG0 + 0, 0},
        {"--distributed-optimizer", NULL, NULL, S_FLAG0 + 1, 0},
        {"--scatter-gather", NULL, NULL, S_FLAG0 + 2, 0},
        {"--no-dropout", NULL, NULL, S_FLAG0 + 3, 0},
        {"--tp-overlap", NULL, NULL, S_FLAG0 + 4, 0},
        {"--forward-only", NULL, NULL, S_FLAG0 + 5, 0},
        {"--no-memory-check", NULL, NULL, S_FLAG0 + 6, 0},
        {"--stats", NULL, NULL, S_FLAG0 + 7, 0},
        {"--no-p2p-sync", NULL, NULL, S_FLAG0 + 8, 0},
        {"--no-shared-structure", NULL, NULL, S_FLAG0 + 9, 0},
        {"--fp8-all-gather", NULL, NULL, S_FP8AG, 0},
        {"--capacity-factor", NULL, "a capacity factor", S_CAP, 0},
        {"--pad-to-capacity", NULL, NULL, S_PAD, 0},
        {"--recompute", NULL, "a word", S_WORD0 + 0, 0},
        {"--grad-reduce", NULL, "a word", S_WORD0 + 1, 0},
        {"--attention", NULL, "a word", S_WORD0 + 2, 0},
        {"--grad-bytes", NULL, "2 or 4", S_WORD0 + 3, 0},
        {"--grad-acc", NULL, "a word", S_WORD0 + 4, 0},
        {"--precision", NULL, "a word", S_WORD0 + 5, 0},
        {"--fp8-scaling", NULL, "a word", S_WORD0 + 6, 0},
        {"--kernels", NULL, "a word", S_WORD0 + 7, 0},
        {"--attention-kernel", NULL, "a word", S_WORD0 + 8, 0},
        {"--loss", NULL, "a word", S_WORD0 + 9, 0},
        {"--dp-cost", NULL, "a positive integer", S_DP_COST, 0},
        {"--fsdp", NULL, "a positive integer", S_FSDP, 0},
        {"--cp", NULL, "a positive integer", S_CP, 0},
        {"--ep", NULL, "a positive integer", S_EP, 0},
        {"--etp", NULL, "a positive integer", S_ETP, 0},
        {"--routing-skew", NULL, "a Zipf exponent", S_SKEW, 0},
        {"--routing-dirichlet", NULL, "a Dirichlet concentration", S_DIRICHLET, 0},
        {"--routing-hist", NULL, "a file name", S_HIST, 0},
        {"--pp-layers", NULL, "even, embed-loss, middle or N,N,...", S_PPL, 0},
        {"--seed", NULL, "a non-negative integer", S_SEED, 0},
    };
    memset(s, 0, sizeof *s);
    s->recompute = s->grad_reduce = s->attention = s->grad_bytes = s->grad_acc = s->precision = s->fp8_scaling = s->kernels = -1;
    s->attn_kernel = s->loss = -1;
    lsim_cli_seen seen = {{0}, 0};
    lsim_cli_spec sp = {"synth", usage, OPTS, NOPTS(OPTS), 0, NULL, &seen, on_synth, s};
    return lsim_cli_getopt(argc, argv, &sp);
}

int lsim_cli_parse_synth(int argc, char **argv, const char *usage, lsim_cli_synth_args *s)
{
    int rc = lsim_cli_parse_synth_opts(argc, argv, usage, s);
    if (rc <= 0) return rc;
    if (!s->model || !s->out || !s->tp || !s->pp || !s->dp || !s->micro_batch || !s->global_batch) {
        lsim_cli_usage_error("synth needs --model, --tp, --pp, --dp, --micro-batch, --global-batch and -o "
                             "(see lumosim synth --help)");
        return -1;
    }
    return 1;
}

/* ------------------------------------------------------------ whatif */

/* whatif's options are the what-if step table's (whatif_steps.h): the
 * parser's table is made from it, the code of each its index there, and a
 * value goes into the request by the table's rule. */
#define W_MAXOPTS 64

static int on_whatif(void *ctx, const lsim_cli_opt *e, const char *v)
{
    lsim_wi_request *w = ctx;
    if (!e) {
        if (w->in) {
            lsim_cli_usage_error("unexpected argument '%s' (one JOB.h5; see lumosim whatif --help)", v);
            return -1;
        }
        w->in = v;
        return 0;
    }
    lsim_err err = {0};
    if (lsim_wi_opt_apply(w, lsim_wi_opt_at((size_t)e->id), v, &err)) {
        lsim_cli_usage_error("%s", err.msg);
        return -1;
    }
    return 0;
}

int lsim_cli_parse_whatif(int argc, char **argv, const char *usage, lsim_cli_whatif_args *w)
{
    lsim_cli_opt opts[W_MAXOPTS];
    size_t n = lsim_wi_nopts();
    if (n > W_MAXOPTS) abort(); /* the table outgrew this parser: a build error in spirit */
    for (size_t k = 0; k < n; k++) {
        const lsim_wi_opt *o = lsim_wi_opt_at(k);
        opts[k] = (lsim_cli_opt){o->name, o->alias, o->what, (int)k, o->repeat};
    }
    lsim_wi_request_init(w);
    lsim_cli_seen seen = {{0}, 0};
    lsim_cli_spec sp = {"whatif", usage, opts, n, 0, NULL, &seen, on_whatif, w};
    int rc = lsim_cli_getopt(argc, argv, &sp);
    if (rc <= 0) return rc;
    if (!w->in || (!w->out && !w->identify)) {
        lsim_cli_usage_error("whatif needs JOB.h5 and -o NEW.h5 (or --identify) (see lumosim whatif --help)");
        return -1;
    }
    if (w->identify && w->out) {
        /* it would be ignored: say so rather than seem to have done it */
        lsim_cli_usage_error("--identify writes nothing: -o is not used with it (see lumosim whatif --help)");
        return -1;
    }
    for (size_t k = 0; w->identify && k < n; k++)
        if (!lsim_wi_opt_at(k)->with_identify && was_seen(&seen, lsim_wi_opt_at(k)->name)) {
            lsim_cli_usage_error("--identify transforms nothing: %s is not used with it (see lumosim whatif --help)",
                                 lsim_wi_opt_at(k)->name);
            return -1;
        }
    return 1;
}
