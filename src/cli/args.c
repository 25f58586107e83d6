/* The option parsers of the commands (see cli.h), apart from the commands
 * themselves so the fuzz target (tests/fuzz/fuzz_cli.c) drives exactly the
 * loops the commands run. Each parser only reads argv and prints its usage
 * or its one usage-error line; nothing is opened, read or written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *const LSIM_USAGE_BUILD =
    "usage: lumosim build [--latency model|observed] TRACES... -o JOB.h5\n"
    "\n"
    "Parses the traces once and stores the execution graphs of every GPU (nodes,\n"
    "edges, processors, names, collectives, iterations, the latency model baked\n"
    "into the edge delays) with provenance (source names, sizes, CRC-32, version,\n"
    "command line) in an HDF5 graph store (docs/hdf5-schema.md). Under mpirun the\n"
    "traces are split over the ranks and the store is written collectively.\n";

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
    "  --json, --critical-path, --trace-out F, --drop-edges C, --bin-ms N, --stats\n"
    "                   as for replay\n"
    "  -o RESULT.h5     write the result archive\n"
    "  --run NAME       run name in the archive (default sim)\n"
    "  --replace        replace a run of that name\n"
    "  --mapping M      under mpirun, which MPI rank simulates which GPU: groups\n"
    "                   (the default: contiguous blocks of whole tensor-parallel\n"
    "                   groups), linear (contiguous blocks), round-robin (GPU g\n"
    "                   on rank g mod K) or file:PATH (lines \"GPU RANK\"); the\n"
    "                   results are the same for every mapping\n"
    "  --windows W      under mpirun, what each synchronisation round runs:\n"
    "                   ready (the default: every node whose inputs are final),\n"
    "                   paths (a time window up to the earliest time any rank\n"
    "                   can still send a collective arrival, bounded by the\n"
    "                   shortest path to one, plus the lookahead) or start (the\n"
    "                   earliest pending event plus the lookahead); the results\n"
    "                   are the same\n";

/* replay/report/ablate: paths and the shared options. */
int lsim_cli_parse_paths(int argc, char **argv, lsim_cli_opts *o, const char *usage, int allow_html, char **args)
{
    int nargs = 0, only_paths = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_paths || a[0] != '-' || !a[1]) {
            args[nargs++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--")) {
            only_paths = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (allow_html && !strcmp(a, "--run") && i + 1 < argc) {
            o->run_name = argv[++i];
            continue;
        }
        if (allow_html && (!strcmp(a, "--html") || !strncmp(a, "--html=", 7))) {
            const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || !*v) {
                fprintf(stderr, "lumosim: error: --html needs a file name\n");
                return -1;
            }
            o->html_out = v;
            continue;
        }
        int c = lsim_cli_common_opt(o, argc, argv, &i);
        if (c < 0) return -1;
        if (c == 0) {
            fprintf(stderr, "lumosim: error: unknown option '%s' (see --help)\n", a);
            return -1;
        }
    }
    if (nargs == 0) {
        fprintf(stderr, "lumosim: error: at least one trace file or directory is needed (see --help)\n");
        return -1;
    }
    return nargs;
}

/* The value of option argv[*i] ("-o F", "--name F" or "--name=F"), or NULL
 * (message printed) when it has none. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, const char *what)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    const char *v = NULL;
    if (!strncmp(a, name, n) && a[n] == '=') v = a + n + 1;
    else if (*i + 1 < argc) v = argv[++*i];
    if (!v || !*v) {
        fprintf(stderr, "lumosim: error: %s needs %s\n", name, what);
        return NULL;
    }
    return v;
}

static int is_opt(const char *a, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(a, name, n) && (a[n] == '\0' || a[n] == '=');
}

int lsim_cli_parse_build(int argc, char **argv, lsim_cli_build_args *b, char **args)
{
    memset(b, 0, sizeof *b);
    lsim_cli_opts_default(&b->o);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(LSIM_USAGE_BUILD, stdout);
            return 0;
        }
        if (!strcmp(a, "-o") || is_opt(a, "--output")) {
            if (!(b->out = opt_value(argc, argv, &i, a[1] == 'o' ? "-o" : "--output", "a file name"))) return -1;
        } else if (a[0] == '-' && a[1]) {
            if (strncmp(a, "--latency", 9) != 0 || lsim_cli_common_opt(&b->o, argc, argv, &i) <= 0) {
                fprintf(stderr, "lumosim: error: unknown option '%s' (see lumosim build --help)\n", a);
                return -1;
            }
        } else {
            args[b->nargs++] = argv[i];
        }
    }
    if (!b->out || !b->nargs) {
        fprintf(stderr, "lumosim: error: build needs traces and -o JOB.h5 (see lumosim build --help)\n");
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
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(LSIM_USAGE_SIM, stdout);
            return 0;
        }
        if (!strcmp(a, "-o") || is_opt(a, "--output")) {
            if (!(s->out = opt_value(argc, argv, &i, a[1] == 'o' ? "-o" : "--output", "a file name"))) return -1;
            continue;
        }
        if (is_opt(a, "--run")) {
            if (!(s->run_name = opt_value(argc, argv, &i, "--run", "a run name"))) return -1;
            continue;
        }
        if (!strcmp(a, "--replace")) {
            s->replace = 1;
            continue;
        }
        if (is_opt(a, "--mapping")) {
            const char *m = opt_value(argc, argv, &i, "--mapping", "groups, linear, round-robin or file:PATH");
            if (!m) return -1;
            if (strcmp(m, "groups") && strcmp(m, "linear") && strcmp(m, "round-robin") &&
                (strncmp(m, "file:", 5) || !m[5])) {
                fprintf(stderr, "lumosim: error: unknown --mapping '%s' (groups, linear, round-robin or file:PATH)\n",
                        m);
                return -1;
            }
            s->mapping = m;
            continue;
        }
        /* testing: force a lookahead; over-promise each window's bound */
        if (is_opt(a, "--lookahead-ns") || is_opt(a, "--bound-skew-ns")) {
            int la = is_opt(a, "--lookahead-ns");
            const char *name = la ? "--lookahead-ns" : "--bound-skew-ns";
            const char *v = opt_value(argc, argv, &i, name, "a number of nanoseconds");
            char *end = NULL;
            long long x = v ? strtoll(v, &end, 10) : 0;
            if (!v || *end || x <= 0) {
                if (v) fprintf(stderr, "lumosim: error: %s needs a positive integer, not '%s'\n", name, v);
                return -1;
            }
            *(la ? &s->lookahead : &s->bound_skew) = (lsim_ns)x;
            continue;
        }
        if (is_opt(a, "--windows")) {
            const char *v = opt_value(argc, argv, &i, "--windows", "ready, paths or start");
            if (!v) return -1;
            /* the order of lsim_pdes_windows (args.c stays free of MPI) */
            s->windows = !strcmp(v, "ready") ? 0 : !strcmp(v, "paths") ? 1 : !strcmp(v, "start") ? 2 : -1;
            if (s->windows < 0) {
                fprintf(stderr, "lumosim: error: unknown --windows '%s' (ready, paths or start)\n", v);
                return -1;
            }
            continue;
        }
        if (!strncmp(a, "--latency", 9)) {
            /* the latency model is baked into the store's edge delays */
            fprintf(stderr, "lumosim: error: sim cannot change the latency mode: it is fixed when the store is built "
                            "(lumosim build --latency MODE ...)\n");
            return -1;
        }
        if (a[0] == '-' && a[1]) {
            int c = lsim_cli_common_opt(&s->o, argc, argv, &i);
            if (c <= 0) {
                if (c == 0) fprintf(stderr, "lumosim: error: unknown option '%s' (see lumosim sim --help)\n", a);
                return -1;
            }
            continue;
        }
        if (s->job) {
            fprintf(stderr, "lumosim: error: sim takes one graph store\n");
            return -1;
        }
        s->job = a;
    }
    if (!s->job) {
        fprintf(stderr, "lumosim: error: sim needs a graph store (see lumosim sim --help)\n");
        return -1;
    }
    return 1;
}
