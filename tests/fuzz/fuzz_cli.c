/* Fuzz target: the command-line option parser (lsim_cli_getopt in
 * src/cli/args.c, on getopt_long; the shared options' table in
 * src/cli/run.c) through every command's table (replay/report, build,
 * sim, ablate, info, collect, calibrate, synth, whatif), run exactly as
 * the commands run them. The input is
 * split on NUL or newline into an argv (at most 64 arguments, each its own
 * exact-size allocation so a read past an argument's end is caught); the
 * parser only is called: nothing is simulated, read or written. Nothing may
 * crash, leak or hang, and what it parses must be in range.
 *
 * Built two ways like fuzz_kineto.c (tests/fuzz/CMakeLists.txt), compiled
 * together with src/cli/run.c (the CLI is not part of the library): a
 * libFuzzer binary with clang, and everywhere a plain program over the seed
 * corpus (corpus_cli/: realistic command lines, one argument a line, plus
 * every crash input ever found). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What an options struct may hold after any parse. */
static void check_opts(const lsim_cli_opts *o)
{
    if (o->run.bin_ns < 1 || o->run.bin_ns > (lsim_ns)1e12) abort();
    if (o->run.bo.latency != LSIM_LAT_MODEL && o->run.bo.latency != LSIM_LAT_OBSERVED) abort();
    if (o->run.replicate_from < -1 || o->run.replicate_from > 1000000) abort();
    if (o->trace_out && !o->run.critical) abort();
}

/* A value the parser handed back must be one of the arguments (or a
 * suffix of one, for --name=value), never a pointer elsewhere. */
static void check_in_argv(const char *v, int argc, char **argv)
{
    if (!v) return;
    for (int i = 0; i < argc; i++)
        if (v >= argv[i] && v <= argv[i] + strlen(argv[i])) return;
    abort();
}

static int g_argc;
static char **g_argv;

/* A value taken from the next argument is never an option (--run --json):
 * one that starts with '-' can only come from --name=VALUE, inside an
 * argument, never a whole one. */
static void check_value(const char *v)
{
    if (!v || v[0] != '-' || !v[1]) return;
    for (int i = 0; i < g_argc; i++)
        if (v == g_argv[i]) abort();
}

/* The parsers of ablate, info, collect, calibrate, synth and whatif. */
static void parse_others(int argc, char **argv, char **args)
{
    int n;
    lsim_cli_opts o;
    lsim_cli_opts_default(&o);
    n = lsim_cli_parse_ablate(argc, argv, &o, "usage\n", args);
    if (n < -1 || n > argc) abort();
    for (int i = 0; i < n; i++) check_in_argv(args[i], argc, argv);
    if (n > 0) check_opts(&o);

    n = lsim_cli_parse_info(argc, argv, "usage\n", args);
    if (n < -1 || n > argc) abort();
    for (int i = 0; i < n; i++) check_in_argv(args[i], argc, argv);

    lsim_cli_collect_args ca;
    int r = lsim_cli_parse_collect(argc, argv, "usage\n", &ca, args);
    if (r < -1 || r > 1 || ca.nargs < 0 || ca.nargs > argc) abort();
    if (r == 1) {
        if (!ca.out || !ca.nargs) abort();
        check_in_argv(ca.out, argc, argv);
        check_in_argv(ca.run_name, argc, argv);
        check_value(ca.out);
        check_value(ca.run_name);
    }

    lsim_cli_calibrate_args cb;
    const char **nccl = malloc((size_t)(argc + 1) * sizeof *nccl);
    if (nccl) {
        cb.traces = args;
        cb.nccl = nccl;
        r = lsim_cli_parse_calibrate(argc, argv, "usage\n", &cb);
        if (r < -1 || r > 1 || cb.ntraces < 0 || cb.nnccl < 0 || cb.ntraces + cb.nnccl > argc) abort();
        if (r == 1) {
            if (!cb.out || !cb.ntraces) abort();
            check_in_argv(cb.out, argc, argv);
            check_in_argv(cb.gpu, argc, argv);
            check_in_argv(cb.topo, argc, argv);
            check_in_argv(cb.topo_out, argc, argv);
            check_value(cb.out);
            for (int i = 0; i < cb.nnccl; i++) check_in_argv(cb.nccl[i], argc, argv);
        }
        free(nccl);
    }

    lsim_cli_synth_args sy;
    r = lsim_cli_parse_synth(argc, argv, "usage\n", &sy);
    if (r < -1 || r > 1) abort();
    if (r == 1) {
        if (!sy.model || !sy.out || sy.tp <= 0 || sy.pp <= 0 || sy.dp <= 0 || sy.micro_batch <= 0 ||
            sy.global_batch <= 0 || sy.gpus < 0 || sy.vstages < 0)
            abort();
        for (int k = 0; k < 6; k++)
            if (sy.shape[k] < 0) abort();
        check_in_argv(sy.model, argc, argv);
        check_in_argv(sy.out, argc, argv);
        check_value(sy.out);
    }

    lsim_cli_whatif_args w;
    r = lsim_cli_parse_whatif(argc, argv, "usage\n", &w);
    if (r < -1 || r > 1) abort();
    if (r == 1) {
        if (!w.in || (!w.out && !w.identify) || (w.identify && w.out)) abort();
        if (w.dp < 0 || w.tp < 0 || w.pp < 0 || w.layers < 0 || w.seed < 1 || w.batch < 1 || w.vstages < 0) abort();
        if (w.nslow < 0 || w.nslow > LSIM_CLI_MAXSLOW) abort();
        for (int k = 0; k < w.nslow; k++)
            if (w.slow_rank[k] < 0 || !(w.slow_f[k] > 0)) abort();
        if (w.jitter ? !(w.sigma >= 0 || w.sigma == -1) : w.sigma != 0) abort();
        check_in_argv(w.in, argc, argv);
        check_in_argv(w.out, argc, argv);
        check_value(w.out);
    }
}

/* The commands' own parsers (src/cli/args.c), exactly as they run. */
static void parse_commands(int argc, char **argv)
{
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    if (!args) return;
    for (int html = 0; html < 2; html++) {
        lsim_cli_opts o;
        lsim_cli_opts_default(&o);
        int n = lsim_cli_parse_paths(argc, argv, &o, "usage\n", html, args);
        if (n < -1 || n > argc) abort();
        for (int i = 0; i < n; i++) check_in_argv(args[i], argc, argv);
        if (!html && o.html_out) abort();
        if (n > 0) check_opts(&o);
    }
    lsim_cli_build_args b;
    int r = lsim_cli_parse_build(argc, argv, &b, args);
    if (r < -1 || r > 1 || b.nargs < 0 || b.nargs > argc) abort();
    if (r == 1) {
        if (!b.out || !b.nargs) abort();
        check_in_argv(b.out, argc, argv);
        check_value(b.out);
        check_opts(&b.o);
    }
    lsim_cli_sim_args sa;
    r = lsim_cli_parse_sim(argc, argv, &sa);
    if (r < -1 || r > 1) abort();
    if (r == 1) {
        if (!sa.job || !sa.run_name || !sa.mapping || sa.lookahead < 0) abort();
        check_in_argv(sa.job, argc, argv);
        check_in_argv(sa.out, argc, argv);
        if (strcmp(sa.mapping, "groups") && strcmp(sa.mapping, "linear") && strcmp(sa.mapping, "round-robin") &&
            strncmp(sa.mapping, "file:", 5))
            abort();
        if (sa.replace && !sa.out) abort(); /* --replace needs -o */
        check_value(sa.out);
        check_value(sa.run_name);
        check_opts(&sa.o);
    }
    parse_others(argc, argv, args);
    free(args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        /* the parsers print usage and error lines: keep the fuzzer's output readable */
        quiet = 1;
        if (!freopen("/dev/null", "w", stdout)) quiet = 2;
    }
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    size_t start = 0;
    for (size_t k = 0; k <= size && argc < MAX_ARGS; k++) {
        if (k < size && data[k] != '\0' && data[k] != '\n') continue;
        if (k == size && k == start && argc > 0) break; /* no empty last argument after a final separator */
        size_t len = k - start;
        char *s = malloc(len + 1);
        if (!s) break;
        if (len) memcpy(s, data + start, len);
        s[len] = '\0';
        argv[argc++] = s;
        start = k + 1;
    }
    argv[argc] = NULL;
    g_argc = argc;
    g_argv = argv;
    parse_commands(argc, argv);
    for (int i = 0; i < argc; i++) free(argv[i]);
    return 0;
}

#ifdef LSIM_LIBFUZZER
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The parser reports usage errors on stderr; millions of those lines would
 * only slow the fuzzer. Only the stdio stream is redirected: the sanitizers
 * write their reports to file descriptor 2 directly. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
#ifdef __GLIBC__
    FILE *f = fopen("/dev/null", "w");
    if (f) stderr = f;
#endif
    return 0;
}
#endif
