/* lumosim command-line interface. The only place that decides exit codes:
 * 0 success (a replay with large errors is still a success: it is a
 * measurement), 1 bad input or failure (one line on stderr naming the file),
 * 2 usage error. Nothing is written to stdout until every input has been
 * processed, so a failure never leaves a partial report behind; files are
 * written to a temporary name and renamed when complete. */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lumosim/memlimit.h"
#include "lumosim/output.h"
#include "lumosim/samples.h"
#include "lumosim/tmpfiles.h"

/* The main help: this head, the command table's names and summaries
 * (COMMANDS below: the listing is the table, so `lumosim help` cannot
 * leave a command out), then the tail. */
static const char *USAGE_MAIN_HEAD =
    "usage: lumosim <command> [options]\n"
    "\n"
    "Trace-driven performance simulator for distributed LLM training: rebuilds the\n"
    "execution graph of PyTorch profiler (Kineto) traces and replays it.\n"
    "\n"
    "commands:\n";
static const char *USAGE_MAIN_TAIL =
    "\n"
    "options:\n"
    "  -h, --help     this help (lumosim COMMAND --help: the command's)\n"
    "  -V, --version  print the version (also as an option of any command)\n"
    "  --force        (any command that writes a file) replace an existing graph\n"
    "                 store or result archive wholesale, or a trace with another\n"
    "                 kind of file; without it they are refused (README: Outputs)\n";

static const char *USAGE_HELP =
    "usage: lumosim help [COMMAND]\n"
    "\n"
    "Prints the help of COMMAND, the same text as lumosim COMMAND --help; without\n"
    "COMMAND, the list of commands (lumosim --help). An unknown COMMAND is a usage\n"
    "error (exit 2).\n";

#define COMMON_OPTS                                                                     \
    "  --latency MODE   model (default): per-API launch latencies learned from\n"       \
    "                   launches onto idle streams; observed GPU start times are\n"     \
    "                   never read back. observed: each launch keeps its own\n"         \
    "                   latency and pre-window work is pinned (reproduces the\n"        \
    "                   trace exactly: a self-check of the graph)\n"                    \
    "  --sm-contention on|off  off (default): kernels of different streams run\n"  \
    "                   side by side. on: a kernel waits for the SMs a kernel of\n"  \
    "                   another stream holds (from grid, block, registers and\n"    \
    "                   shared memory against deviceProperties) until that\n"       \
    "                   one's last wave begins (docs/cost-models.md)\n"  \
    "  --bin-ms N       duty-cycle bin width in ms (default 1)\n"                      \
    "  --drop-edges C[,C...]  remove dependency classes before simulating:\n"          \
    "                   event (cross-stream record/wait), hidden (dependencies\n"      \
    "                   recovered from timing), sync (GPU->CPU blocking calls),\n"     \
    "                   cpu_cross_thread, launch_latency (launch delays set to 0),\n"  \
    "                   dpro (event,hidden,sync,cpu_cross_thread: a dPRO-like\n"       \
    "                   baseline)\n"                                                    \
    "  --critical-path  compute the critical path of the simulated execution\n"        \
    "  --trace-out F    write the predicted trace (Chrome trace JSON, gzip if F\n"     \
    "                   ends in .gz) for Perfetto / chrome://tracing; marks the\n"     \
    "                   critical path; CPU ops whole and nested, with their\n"         \
    "                   categories and collective args, as in the trace\n"             \
    "  --stats          print ingest/build/simulation figures to stderr\n"                  \
    "  --per-rank       the table prints every rank; a job of more than 16 ranks\n"      \
    "                   otherwise shows its 3 slowest and its fastest, and with\n"        \
    "                   pipeline stages (tp:PP:DP groups) each stage's means\n"           \
    "  --independent    replay the ranks of one job each on its own\n"                    \
    "  --replicate-from R  build every rank of the job from rank R's trace alone\n"       \
    "                   (its graph copied per rank, collectives on the world group)\n" \
    "  --model M [--micro-batch B]  the job's peak memory per GPU estimated from\n"  \
    "                   model M's shape (built-in name or JSON, as for synth) and\n"  \
    "                   the layout, micro-batch and layers the traces show;\n"       \
    "                   flagged OOM against deviceProperties (docs/memory.md)\n"

static const char *USAGE_REPLAY =
    "usage: lumosim replay [options] PATH...\n"
    "\n"
    "Replays each Kineto trace (one file per GPU rank, .json or .json.gz) and\n"
    "reports, per rank and per ProfilerStep#N: actual vs predicted time and error,\n"
    "the breakdown (exposed compute, overlapped, exposed communication, other),\n"
    "the stream-active duty cycle, graph statistics and, with --critical-path,\n"
    "the critical path. A directory PATH stands for its *.json and *.json.gz\n"
    "files in name order (PyTorch execution traces, *.et.json*, are skipped).\n"
    "\n"
    "options:\n" COMMON_OPTS "  --samples N      with --replicate-from: the job's p5/p50/p95 range from rank\n"
    "                   R's own durations, collectives with R's waiting drawn in,\n"
    "                   from N simulations (default 20; docs/intervals.md)\n"
    "  --seed S         the range's seed (default 0)\n"
    "  --json           print the JSON document (docs/report-json.md)\n"
    "  --csv F          write one CSV row per rank x iteration and per rank\n"
    "                   window: times, errors, breakdowns (docs/csv.md);\n"
    "                   - : standard output, instead of the table\n"
    "  -h, --help       this help\n"
    "\n"
    "Not under mpirun (refused: it would run once per rank); for a parallel run:\n"
    "lumosim build, then mpirun lumosim sim.\n";

static const char *USAGE_REPORT =
    "usage: lumosim report [options] PATH... --html OUT.html\n"
    "       lumosim report RESULT.h5 [--run NAME] --html OUT.html\n"
    "\n"
    "Replays the traces or graph stores (critical path included), or reads a\n"
    "result archive as is, and writes one self-contained HTML page:\n"
    "per-iteration stacked bars of the breakdown, actual beside predicted; a\n"
    "per-rank timeline overview; the critical-path summary; graph statistics\n"
    "(docs/report-html.md).\n"
    "\n"
    "options:\n" COMMON_OPTS "  --html OUT.html  where to write the page (required)\n"
    "  --csv F          also write the CSV of the results (as for replay;\n"
    "                   docs/csv.md)\n"
    "  --run NAME       the run of a result archive (default: its only run)\n"
    "  --samples N      with --replicate-from: the job's p5/p50/p95 range from rank\n"
    "                   R's own durations, on the page (as for replay)\n"
    "  --seed S         the range's seed (default 0)\n"
    "  -h, --help       this help\n"
    "\n"
    "A result archive's page is drawn from its tables; only the GPUs shown in\n"
    "full (at most 16) have their graphs read.\n"
    "Not under mpirun (refused: it would run once per rank); for a parallel run:\n"
    "lumosim build, then mpirun lumosim sim -o RESULT.h5, then lumosim report RESULT.h5.\n";

const char *const LSIM_USAGE_ABLATE =
    "usage: lumosim ablate [options] PATH...\n"
    "\n"
    "Replays each trace with the full model and with each dependency class\n"
    "removed in turn (event, hidden, sync, cpu_cross_thread, launch_latency,\n"
    "and the dPRO-like baseline), and prints per trace and variant: iteration\n"
    "error, each breakdown component's error, and critical-path edge recall\n"
    "against the full model. Each trace is simulated alone (its collectives\n"
    "keep their traced durations), as replay --independent does.\n"
    "\n"
    "options:\n"
    "  --latency MODE   as for replay (default model)\n"
    "  --bin-ms N       duty-cycle bin width in ms, as for replay (default 1)\n"
    "  --json           print JSON instead of the table\n"
    "  -h, --help       this help\n"
    "\n"
    "Not under mpirun (refused: it would run once per rank).\n";

/* Parse [options] PATH... for a simulating command. Options may come before
 * or after the paths; "--" ends options. Returns the number of paths stored
 * in args (>= 1), or -1 after printing a usage error, or 0 for --help. */
typedef struct html_ctx {
    const lsim_run *r;
    const lsim_memest_job *mem;   /* a graph store's memory estimate, or NULL */
    const lsim_job_range *range;  /* --replicate-from's range, or NULL */
} html_ctx;

static int write_html(FILE *f, void *ctx, lsim_err *err)
{
    const html_ctx *h = ctx;
    lsim_report_extra x = {h->mem, NULL, h->r->job_path, h->range};
    return lsim_report_html_x(f, h->r->items, h->r->n, &x, err);
}

/* The memory estimate of report's one input when it is a graph store that
 * records one (synthesized jobs, docs/memory.md) into *m; else m stays
 * empty (an unreadable one is said and left out). */
static void store_memory(char **args, int nargs, lsim_memest_job *m)
{
    char *text = NULL;
    lsim_err e = {0};
    if (nargs != 1 || lsim_store_probe(args[0]) != LSIM_STORE_GRAPHS) return;
    if (lsim_store_read_attr(args[0], "memory", &text, &e) || !text) return;
    if (lsim_memest_job_parse(text, m, &e))
        fprintf(stderr, "lumosim: warning: %s: the memory estimate is unreadable (%s); left out\n", args[0], e.msg);
    free(text);
}

/* replay and report: same pipeline, different output. */
static int cmd_simulate(int argc, char **argv, int html)
{
    lsim_cli_opts o;
    lsim_cli_opts_default(&o);
    if (html) o.run.critical = 1;
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    if (!args) {
        lsim_cli_error("out of memory");
        return 1;
    }
    int nargs = lsim_cli_parse_paths(argc, argv, &o, html ? USAGE_REPORT : USAGE_REPLAY, html, args);
    if (nargs <= 0) {
        free(args);
        return nargs == 0 ? 0 : 2;
    }
    if (html && !o.html_out) {
        lsim_cli_error("report needs --html OUT.html");
        free(args);
        return 2;
    }
    {
        lsim_err cerr = {0};
        lsim_io_file outs[3] = {{o.trace_out, "--trace-out", 1, LSIM_OUT_TRACE},
                                {o.html_out, "--html", 1, LSIM_OUT_TEXT},
                                {lsim_cli_csv_checked(&o), "--csv", 1, LSIM_OUT_TEXT}};
        if (lsim_cli_check_io(args, nargs, outs, 3, &cerr)) {
            lsim_cli_error("%s", cerr.msg);
            free(args);
            return 1;
        }
    }
    if (o.micro_batch && !o.model) {
        lsim_cli_usage_error("--micro-batch goes with --model (the memory estimate's shape)");
        free(args);
        return 2;
    }
    if (html && nargs == 1 && lsim_store_probe(args[0]) == LSIM_STORE_RESULTS) {
        int st = lsim_cli_report_results(args[0], o.run_name, o.html_out, o.csv_out);
        free(args);
        return st;
    }
    /* report also takes a result archive, which replay's loading does not
     * say when it refuses a search result */
    if (html && nargs == 1 && lsim_store_probe(args[0]) == LSIM_STORE_SEARCH) {
        lsim_err kerr = {0};
        lsim_store_refuse_kind(args[0], LSIM_STORE_SEARCH, "traces, a graph store or a result archive", &kerr);
        lsim_cli_error("%s", kerr.msg);
        free(args);
        return 1;
    }
    if (o.run_name) { /* it would be ignored */
        lsim_cli_usage_error("--run selects a run of a result archive, and %s is not one", args[0]);
        free(args);
        return 2;
    }
    int status = 0;
    lsim_err err = {0};
    lsim_run run = {0};
    lsim_memest_job mem;
    memset(&mem, 0, sizeof mem);
    if (html) store_memory(args, nargs, &mem);
    html_ctx hc = {&run, mem.nstages ? &mem : NULL, NULL};
    if (o.stats) lsim_cli_tty_progress_off(); /* its lines would be garbled */
    int rc = lsim_cli_run_paths(&o, args, nargs, &run, &err) || lsim_cli_write_trace(&o, &run, &err);
    /* reading, building and simulating say their progress (run events);
     * a large job's page takes seconds more */
    if (!rc && o.model) {
        /* --model: the estimate from the job's own layout replaces a store's */
        lsim_memest_job_free(&mem);
        rc = lsim_cli_job_memory(&o, run.graphs, run.n, &mem, &err);
        hc.mem = mem.nstages ? &mem : NULL;
    }
    lsim_job_range range;
    int with_range = !rc && o.run.replicate_from >= 0;
    if (with_range) {
        /* the job rebuilt from one rank: its range from that rank's own durations */
        long n = o.range_samples ? o.range_samples : LSIM_CLI_RANGE_SAMPLES;
        double nodes = 0; /* each sample simulates every copy's nodes */
        for (size_t i = 0; i < run.n; i++) nodes += (double)run.graphs[i]->n;
        char how[160];
        snprintf(how, sizeof how, "the range's %ld samples x %.0f nodes", n, nodes);
        rc = lsim_cli_work_cap(args[0], (double)n * nodes, how, "use fewer --samples", &err);
        lsim_cli_tty_progress(1, "replay: %ld samples of the range", n);
        if (!rc) rc = lsim_samples_replica_range(&o.run, &run, (uint64_t)n, (uint64_t)o.range_seed, &range, &err);
        lsim_cli_tty_progress_done();
    }
    if (!rc && html) {
        hc.range = with_range ? &range : NULL;
        lsim_cli_tty_progress(1, "report: writing %s (%zu ranks)", o.html_out, run.n);
        rc = lsim_cli_write_atomic(o.html_out, write_html, &hc, &err);
        lsim_cli_tty_progress_done();
    }
    if (rc || lsim_cli_write_csv(&o, run.items, run.n, &err)) {
        lsim_cli_tty_progress_done();
        lsim_cli_error("%s", err.msg);
        status = 1;
        goto cleanup;
    }
    if (!html && !lsim_cli_csv_is_stdout(o.csv_out)) { /* --csv -: the CSV is the report */
        lsim_report_extra x = {hc.mem, NULL, run.job_path, with_range ? &range : NULL};
        if (o.json) {
            if (lsim_report_json_x(stdout, run.items, run.n, &x, &err)) {
                lsim_cli_error("%s", err.msg);
                status = 1;
            }
        } else {
            lsim_report_table_x(stdout, run.items, run.n, o.per_rank, &x);
        }
        if (fflush(stdout) != 0) {
            lsim_cli_error("cannot write the report to standard output: %s", strerror(errno));
            status = 1;
        }
    }
    if (!status && hc.mem && hc.mem->oom) {
        /* loudly, and after the report, as sim does */
        char line[256];
        lsim_memest_oom_line(hc.mem, line, sizeof line);
        fprintf(stderr, "lumosim: warning: %s\n", line);
    }
cleanup:
    lsim_memest_job_free(&mem);
    lsim_run_free(&run);
    free(args);
    return status;
}

static volatile sig_atomic_t g_outcome_known;

void lsim_cli_outcome_known(void) { g_outcome_known = 1; }

/* SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1/2: remove the temporary files of outputs in progress (so an
 * interrupted run leaves nothing that looks like a result), then die of the
 * signal as if unhandled. */
static void on_signal(int sig)
{
    /* write(2) is async-signal-safe; under mpirun this is the line that says
     * why a rank stopped when another one died and the launcher ended it --
     * unless the outcome was already decided and reported (then the
     * launcher is only ending the ranks still in MPI_Finalize after one
     * returned its exit status, and a second line would mislead) */
    static const char msg[] = "lumosim: error: stopped by a signal; unfinished outputs removed\n";
    if (!g_outcome_known) {
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
    }
    lsim_tmp_remove_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Notices of the output layer (stale temporaries removed, waiting for an
 * archive's lock): one line each on stderr. */
static void print_notice(const char *line) { fprintf(stderr, "lumosim: note: %s\n", line); }

/* The commands that write files take --force (replace a graph store or a
 * result archive, or a trace by something else: output.h) anywhere before
 * "--". It is taken out of argv here, so that every command's parser stays
 * as it is; given twice it is a usage error. Returns 0, or -1 (printed). */
static int take_force(int *argc, char **argv)
{
    /* --force-large too: run past a work cap (cli.h, lsim_cli_work_cap) */
    static const char *const flag[2] = {"--force", "--force-large"};
    int k = 0, seen[2] = {0, 0}, only_paths = 0;
    for (int i = 0; i < *argc; i++) {
        if (!only_paths && !strcmp(argv[i], "--")) only_paths = 1;
        int f = only_paths ? -1 : !strcmp(argv[i], flag[0]) ? 0 : !strcmp(argv[i], flag[1]) ? 1 : -1;
        if (f >= 0) {
            if (seen[f]++) {
                lsim_cli_error("%s given twice", flag[f]);
                return -1;
            }
            continue;
        }
        argv[k++] = argv[i];
    }
    argv[k] = NULL;
    *argc = k;
    lsim_cli_force = seen[0];
    lsim_cli_force_large = seen[1];
    return 0;
}

static int run_command(int argc, char **argv);

/* Every command's standard output is checked once at the end: a report
 * that could not be written (a full disk, a closed pipe) is a failure with
 * a line saying so, never exit 0 with nothing written. SIGPIPE is ignored so
 * that a closed pipe shows up here as EPIPE instead of killing mid-write;
 * EPIPE then ends the process by SIGPIPE, quietly, as coreutils end. */
int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    lsim_out_set_notice(print_notice);
    int st = run_command(argc, argv);
    errno = 0;
    int bad = ferror(stdout);
    if (fflush(stdout) != 0) bad = 1;
    int e = errno, gone = bad && st == 0 && (e == EPIPE || lsim_cli_stdout_gone()); /* before fclose closes fd 1 */
    if (fclose(stdout) != 0 && !bad) bad = 1, e = errno;
    if (gone) {
        /* the reader went away (`lumosim info x.h5 | head -1`): end quietly
         * with the status coreutils get there, killed by SIGPIPE */
        signal(SIGPIPE, SIG_DFL);
        raise(SIGPIPE);
    }
    if (bad && st == 0) { /* a command that failed has said why already */
        lsim_cli_error("cannot write to standard output: %s", e ? strerror(e) : "a write failed");
        st = 1;
    }
    return st;
}

static int cmd_replay(int argc, char **argv) { return cmd_simulate(argc, argv, 0); }
static int cmd_report(int argc, char **argv) { return cmd_simulate(argc, argv, 1); }
/* The command table (in the manner of Redis's): what each command runs and
 * how main treats it. `writes`: it writes files the user names, so --force
 * is taken out of its arguments (main.c take_force); `serial_only`: there
 * is no parallel engine behind it, so under mpirun it is refused (one
 * line, rank 0) instead of running once per rank; `usage`: the command's
 * help, the one text both `lumosim NAME --help` (its parser) and `lumosim
 * help NAME` print; `summary`: its line in the main help (continuation
 * lines indented to the summary column). */
typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    int writes, serial_only;
    const char *const *usage;
    const char *summary;
} cli_command;

static int cmd_help(int argc, char **argv);

static const cli_command COMMANDS[] = {
    {"replay", cmd_replay, 1, 1, &USAGE_REPLAY, "replay Kineto traces and report actual vs predicted time"},
    {"report", cmd_report, 1, 1, &USAGE_REPORT,
     "write a self-contained HTML report (traces, graph store or\n"
     "            result archive)"},
    {"ablate", lsim_cli_ablate, 0, 1, &LSIM_USAGE_ABLATE, "replay with each dependency class removed in turn"},
    {"build", lsim_cli_build, 1, 0, &LSIM_USAGE_BUILD, "parse traces once into an HDF5 graph store"},
    {"sim", lsim_cli_sim, 1, 0, &LSIM_USAGE_SIM, "simulate a graph store; optionally archive the results"},
    {"info", lsim_cli_info, 0, 0, &LSIM_USAGE_INFO, "show what a graph store or result archive holds"},
    {"collect", lsim_cli_collect, 1, 0, &LSIM_USAGE_COLLECT, "result archives (files, directories) into one CSV"},
    {"synth", lsim_cli_synth, 1, 0, &LSIM_USAGE_SYNTH, "synthesize a training job's graphs into a graph store"},
    {"calibrate", lsim_cli_calibrate, 1, 0, &LSIM_USAGE_CALIBRATE,
     "fit the cost models' GPU (and network) parameters to traces\n"
     "            and nccl-tests output"},
    {"whatif", lsim_cli_whatif, 1, 0, &LSIM_USAGE_WHATIF,
     "transform a job's graphs (DP width, layers, network, GPU,\n"
     "            stragglers, noise) into a new graph store"},
    {"search", lsim_cli_search, 1, 0, &LSIM_USAGE_SEARCH,
     "rank a model's parallel layouts on N GPUs (memory-checked,\n"
     "            simulated)"},
    {"export", lsim_cli_export, 1, 1, &LSIM_USAGE_EXPORT,
     "write a graph store as Chakra execution traces (one .et file\n"
     "            per GPU; build --chakra reads them back)"},
    {"help", cmd_help, 0, 0, &USAGE_HELP, "show help for a command (lumosim help replay)"},
};

static const cli_command *find_command(const char *name)
{
    for (size_t k = 0; k < sizeof COMMANDS / sizeof *COMMANDS; k++)
        if (!strcmp(name, COMMANDS[k].name)) return &COMMANDS[k];
    return NULL;
}

static void print_main_usage(FILE *f)
{
    fputs(USAGE_MAIN_HEAD, f);
    for (size_t k = 0; k < sizeof COMMANDS / sizeof *COMMANDS; k++)
        fprintf(f, "  %-9s %s\n", COMMANDS[k].name, COMMANDS[k].summary);
    fputs(USAGE_MAIN_TAIL, f);
}

/* help's one argument: the command named (NULL: none yet). */
static int on_help(void *ctx, const lsim_cli_opt *e, const char *v)
{
    const char **name = ctx;
    (void)e; /* help has no options of its own */
    if (*name) {
        lsim_cli_usage_error("help takes one command ('%s' and '%s' given)", *name, v);
        return -1;
    }
    *name = v;
    return 0;
}

/* lumosim help [COMMAND]: the command's own --help text (the table's
 * usage, which its parser prints too), so the two cannot differ. */
static int cmd_help(int argc, char **argv)
{
    const char *name = NULL;
    lsim_cli_seen seen = {{0}, 0};
    lsim_cli_spec s = {"help", USAGE_HELP, NULL, 0, 0, NULL, &seen, on_help, &name};
    int rc = lsim_cli_getopt(argc, argv, &s);
    if (rc <= 0) return rc == 0 ? 0 : 2;
    if (!name) {
        print_main_usage(stdout);
        return 0;
    }
    const cli_command *h = find_command(name);
    if (!h) {
        lsim_cli_usage_error("help: unknown command '%s' (see lumosim --help)", name);
        return 2;
    }
    fputs(*h->usage, stdout);
    return 0;
}

static int run_command(int argc, char **argv)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* every signal whose default ends the program: a closed terminal or
     * ssh session sends SIGHUP; a batch system's warning, SIGUSR1/2 */
    static const int ends[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        /* a signal inherited as ignored stays ignored, as in other POSIX
         * tools: under nohup SIGHUP is, and a handler would end the run the
         * user asked to outlive the terminal (issue 40) */
        struct sigaction was;
        if (sigaction(ends[i], NULL, &was) == 0 && was.sa_handler == SIG_IGN) continue;
        sigaction(ends[i], &sa, NULL);
    }
    /* Large arrays grow by realloc while the graph is built. With glibc's
     * adaptive mmap threshold they would move onto the heap after the first
     * big free and every growth would copy, leaving freed heap behind; a fixed
     * threshold keeps them mmapped so realloc can use mremap. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    /* glibc hands the heap's free top back to the kernel past 128 kB, and
     * the next allocations fault it in again page by page: reading a small
     * store (sim of an 8-GPU GPT-3 15B job) took 8,950 page faults and
     * 150-200 ms of CPU, 2,800 and 70 ms with the top kept up to 64 MiB
     * (perf stat); the 1,024-GPU GPT-3 175B sim 1.9 -> 1.76 s, peak RSS the
     * same (340 MB). */
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    if (argc < 2) {
        print_main_usage(stderr);
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "-h") || !strcmp(c, "--help")) {
        print_main_usage(stdout);
        return 0;
    }
    if (!strcmp(c, "-V") || !strcmp(c, "--version") || !strcmp(c, "version")) {
        printf("lumosim %s\n", LSIM_VERSION);
        return 0;
    }
    const cli_command *cmd = find_command(c);
    if (!cmd) {
        lsim_cli_usage_error("unknown command '%s' (see lumosim --help)", c);
        return 2;
    }
    /* with --json an error is a JSON object on stderr (the exit codes
     * stay); decided before anything is parsed, so that the parser's own
     * errors are objects too (--version: each command's parser) */
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (!strcmp(argv[i], "--json")) lsim_cli_set_json_errors(1);
    }
    if (cmd->writes) {
        int rest = argc - 2;
        if (take_force(&rest, argv + 2)) return 2;
        argc = rest + 2;
    }
    if (cmd->serial_only && lsim_cli_refuse_mpi(c)) return 2;
    lsim_err ferr;
    if (lsim_mem_floor_check(&ferr)) { /* before HDF5, which crashes below it */
        lsim_cli_error("%s", ferr.msg);
        return 1;
    }
    return cmd->run(argc - 2, argv + 2);
}
