/* Private to the command-line program (not installed): the replay pipeline
 * shared by the replay, report and ablate commands. */
#ifndef LUMOSIM_CLI_H
#define LUMOSIM_CLI_H

#include "lumosim/chrome.h"
#include "lumosim/critical.h"
#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/job.h"
#include "lumosim/metrics.h"
#include "lumosim/report.h"
#include "lumosim/store.h"

/* Options every simulating command takes. */
typedef struct lsim_cli_opts {
    lsim_build_opts bo;
    lsim_ns bin_ns;
    int json, stats, critical;
    unsigned drop_mask;      /* edge classes removed before simulating */
    int zero_launch_latency; /* --drop-edges launch_latency */
    const char *trace_out;   /* --trace-out PATH or NULL */
    const char *html_out;    /* --html PATH or NULL (report) */
    const char *store_out;   /* build -o PATH: its free space is checked with the inputs */
    const char *run_name;    /* --run NAME (report from a result archive) */
    int independent;         /* --independent: never couple ranks */
    int replicate_from;      /* --replicate-from R, -1 if not given */
} lsim_cli_opts;

/* Everything one run produced, per input file. Owned; free with
 * lsim_cli_run_free. */
typedef struct lsim_cli_run {
    size_t n;
    char **paths;
    lsim_graph **graphs;
    lsim_engine **engines;
    lsim_rank_report *reps;
    lsim_critical_path *cps;
    lsim_replay_item *items;
    lsim_job *job;           /* when the ranks were simulated together */
    /* wall seconds of the phases of lsim_cli_simulate (or of the parallel
     * engine's run): collective matching; set-up of a coupled run's engines
     * (allocating and first writing their per-node state, lsim_cli_engines);
     * the run (for independent replays, engine set-up included); metrics and
     * critical path. `sim` records them in the result's provenance. */
    double match_s, setup_s, simulate_s, metrics_s;
} lsim_cli_run;

/* Parses one option shared by the simulating commands at argv[*i]; returns
 * 1 if consumed (advancing *i past a value), 0 if not ours, -1 on a usage
 * error (message printed). */
int lsim_cli_common_opt(lsim_cli_opts *o, int argc, char **argv, int *i);
void lsim_cli_opts_default(lsim_cli_opts *o);

/* Expand PATHs (files, directories) and replay each: read, build, ablate
 * (if asked), simulate, measure, critical path (if asked). Returns 0 or an
 * error with err filled ("PATH: what"). */
int lsim_cli_run_paths(const lsim_cli_opts *o, char **args, int nargs, lsim_cli_run *run, lsim_err *err);

/* The two halves of lsim_cli_run_paths: load graphs (traces, directories of
 * traces, graph stores) into run->graphs/paths; then simulate run's graphs
 * (ablate, engine, metrics, critical path) and fill items. */
int lsim_cli_load(const lsim_cli_opts *o, char **args, int nargs, lsim_cli_run *run, lsim_err *err);
/* Only the expansion of PATHs into trace files (run->paths, run->n). */
int lsim_cli_expand(char **args, int nargs, lsim_cli_run *run, lsim_err *err);
int lsim_cli_simulate(const lsim_cli_opts *o, lsim_cli_run *run, lsim_err *err);

/* The report item of GPU i of run (engine, report and path already there). */
lsim_replay_item lsim_cli_item(const lsim_cli_run *run, size_t i, int with_cp, int coupled, lsim_ns clock_offset);
/* Before a coupled run: ablate the graphs (if asked) and create
 * run->engines over one allocation (lsim_engines_new). */
int lsim_cli_engines(const lsim_cli_opts *o, lsim_cli_run *run, lsim_err *err);
/* After a coupled run: metrics (with the waits) and critical path of local
 * GPU i, which is GPU `gpu` of run->job; fills run->items[i]. */
int lsim_cli_finish_gpu(const lsim_cli_opts *o, lsim_cli_run *run, size_t i, size_t gpu, lsim_err *err);

int lsim_cli_build(int argc, char **argv);
int lsim_cli_sim(int argc, char **argv);
int lsim_cli_info(int argc, char **argv);
/* lumosim collect: result archives (files, directories) -> one CSV (collect.c). */
int lsim_cli_collect(int argc, char **argv);
/* lumosim synth: a synthesized job into a graph store (synth_cmd.c). */
int lsim_cli_synth(int argc, char **argv);
/* lumosim whatif (whatif_cmd.c) */
int lsim_cli_whatif(int argc, char **argv);
/* lumosim calibrate: fit a GPU spec (and a topology) to traces and
 * nccl-tests output (calibrate_cmd.c). */
int lsim_cli_calibrate(int argc, char **argv);
int lsim_cli_report_results(const char *path, const char *run_name, const char *html_out);
void lsim_cli_run_free(lsim_cli_run *run);

/* Write the predicted trace if o->trace_out is set. */
int lsim_cli_write_trace(const lsim_cli_opts *o, const lsim_cli_run *run, lsim_err *err);

/* Before any work: the directory an output goes to exists and is
 * writable (path NULL: nothing to check). */
int lsim_cli_check_output(const char *path, lsim_err *err);

/* Write a text file atomically through a callback (temporary name, rename). */
int lsim_cli_write_atomic(const char *path, int (*writer)(FILE *f, void *ctx, lsim_err *err), void *ctx, lsim_err *err);

/* The command's outcome is decided and reported (its error line printed, or
 * success): a SIGTERM from here on -- mpirun ending the ranks still in
 * MPI_Finalize after one of them exited non-zero -- cleans up silently
 * instead of printing "stopped by a signal". Defined in main.c. */
void lsim_cli_outcome_known(void);

int lsim_cli_ablate(int argc, char **argv);

/* ---- option parsers (args.c), apart so tests/fuzz/fuzz_cli.c runs them.
 * They read argv only (values point into it) and print the usage (--help)
 * or one "lumosim: error: ..." line. Return 1: go on; 0: help printed
 * (exit 0); -1: usage error (exit 2). lsim_cli_parse_paths returns the
 * number of paths put in args (caller-allocated, argc entries) instead of 1. */
extern const char *const LSIM_USAGE_BUILD;
extern const char *const LSIM_USAGE_SIM;
int lsim_cli_parse_paths(int argc, char **argv, lsim_cli_opts *o, const char *usage, int allow_html, char **args);

typedef struct lsim_cli_build_args {
    lsim_cli_opts o;
    const char *out;
    int nargs;                 /* traces put in the caller's args[] */
} lsim_cli_build_args;
int lsim_cli_parse_build(int argc, char **argv, lsim_cli_build_args *b, char **args);

typedef struct lsim_cli_sim_args {
    lsim_cli_opts o;
    const char *job, *out, *run_name, *mapping;
    int replace;
    lsim_ns lookahead;         /* > 0: forced (tests provoke a violation) */
    lsim_ns bound_skew;        /* testing: added to each window's bound */
    int windows;               /* --windows: 0 ready, 1 paths, 2 start (lsim_pdes_windows) */
} lsim_cli_sim_args;
int lsim_cli_parse_sim(int argc, char **argv, lsim_cli_sim_args *s);

#endif
