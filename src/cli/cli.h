/* Private to the command-line program (not installed): the options the
 * simulating commands share, the commands, and their parsers. The pipeline
 * itself is the run layer (include/lumosim/run.h), and MPI stays under it
 * (include/lumosim/world.h). */
#ifndef LUMOSIM_CLI_H
#define LUMOSIM_CLI_H

#include "lumosim/chrome.h"
#include "lumosim/critical.h"
#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/job.h"
#include "lumosim/metrics.h"
#include "lumosim/output.h"
#include "lumosim/report.h"
#include "lumosim/run.h"
#include "lumosim/store.h"
#include "lumosim/synth.h"
#include "lumosim/whatif_plan.h"
#include "lumosim/world.h"

/* The options one parse has met, by canonical name (lsim_cli_once): an
 * option given twice is a usage error, not the last one winning. */
#define LSIM_CLI_MAXSEEN 64 /* more than any command has options */
typedef struct lsim_cli_seen {
    const char *name[LSIM_CLI_MAXSEEN];
    int n;
} lsim_cli_seen;

/* replay --replicate-from's range: samples unless --samples says, and the
 * most --samples may ask (each is a simulation of the whole job). */
#define LSIM_CLI_RANGE_SAMPLES 20
#define LSIM_CLI_RANGE_SAMPLES_MAX 10000

/* Options every simulating command takes: what the run layer needs (run),
 * and what only the CLI does with its results. */
typedef struct lsim_cli_opts {
    lsim_run_opts run;       /* build options, bins, --critical-path, --drop-edges,
                                --independent, --replicate-from (run.h) */
    int json, stats;
    int per_rank;            /* --per-rank: the table prints every rank of a large job */
    const char *trace_out;   /* --trace-out PATH or NULL */
    const char *html_out;    /* --html PATH or NULL (report) */
    const char *csv_out;     /* --csv PATH or NULL: one row per rank x iteration
                                and per rank window (docs/csv.md); "-" or
                                /dev/stdout: standard output, instead of the
                                report */
    const char *store_out;   /* build -o PATH: its free space is checked with the inputs */
    const char *run_name;    /* --run NAME (report from a result archive) */
    const char *model;       /* --model NAME|FILE.json: estimate the job's memory from its shape */
    int micro_batch;         /* --micro-batch B (with --model), 0: from the trace's activations */
    long range_samples;      /* replay --samples N: the samples of --replicate-from's range
                                (0: the default, LSIM_CLI_RANGE_SAMPLES) */
    long range_seed;         /* replay --seed S (0 unless given) */
    lsim_cli_seen seen;      /* options given so far (the command's own ones too) */
} lsim_cli_opts;

/* ---- the one option parser (args.c): every command's options are a
 * table of these, parsed by lsim_cli_getopt on getopt_long. */
typedef struct lsim_cli_opt {
    const char *name;  /* the canonical spelling ("--json", "-o"): in messages and "given twice" */
    const char *alias; /* a second spelling ("--output" for -o), or NULL */
    const char *what;  /* what its value is ("a file name"); NULL: a switch, which takes none */
    int id;            /* the command's code for it (the LSIM_OPT_* codes for the shared ones) */
    int repeat;        /* may be given more than once (calibrate --nccl-tests, whatif --slow-gpu) */
} lsim_cli_opt;

/* The options the simulating commands share: codes and table (run.c). */
enum {
    LSIM_OPT_JSON,
    LSIM_OPT_INDEPENDENT,
    LSIM_OPT_REPLICATE_FROM,
    LSIM_OPT_STATS,
    LSIM_OPT_CRITICAL,
    LSIM_OPT_LATENCY,
    LSIM_OPT_BIN_MS,
    LSIM_OPT_DROP_EDGES,
    LSIM_OPT_TRACE_OUT,
    LSIM_OPT_CSV,
    LSIM_OPT_PER_RANK,
    LSIM_OPT_SM_CONTENTION,
    LSIM_OPT_MODEL,       /* replay, report, build: the model-shape memory estimate (memest.h) */
    LSIM_OPT_MICRO_BATCH, /* with --model: the sequences per micro-batch, when the trace cannot tell */
    LSIM_OPT_NCOMMON
};
#define LSIM_OPT_ALL_COMMON ((1u << LSIM_OPT_NCOMMON) - 1)
#define LSIM_OPT_BIT(id) (1u << (id))
extern const lsim_cli_opt LSIM_CLI_COMMON[LSIM_OPT_NCOMMON];
/* Apply shared option id with its value v (NULL for a switch) to o;
 * 0, or -1 with the usage error printed. Local. */
int lsim_cli_common_apply(lsim_cli_opts *o, int id, const char *v);

/* One command's options. on is called for each of the command's own
 * options (opt) with its value (NULL for a switch), and for each path or
 * other non-option argument (opt NULL, value the argument), in command-line
 * order; it returns 0, or -1 with the usage error printed. */
typedef struct lsim_cli_spec {
    const char *cmd;          /* "replay": named in the messages */
    const char *usage;        /* printed by -h / --help */
    const lsim_cli_opt *opts; /* the command's own options */
    size_t nopts;
    unsigned common;          /* the shared options it takes: LSIM_OPT_BIT(LSIM_OPT_...) */
    lsim_cli_opts *o;         /* where they go (common != 0) */
    lsim_cli_seen *seen;      /* the options met (canonical names): "given twice" */
    int (*on)(void *ctx, const lsim_cli_opt *opt, const char *value);
    void *ctx;
} lsim_cli_spec;
/* Parses argv[0..argc) (the arguments after the command's name) by s with
 * getopt_long: --name VALUE and --name=VALUE, -o VALUE and -oVALUE, options
 * and paths in any order (also under POSIXLY_CORRECT), "--" ends the
 * options. Spellings are exact (no abbreviations: a new option would
 * change what an old abbreviation means); a value is never the next option
 * (--run --json): one that starts with '-' is written --name=VALUE; -h /
 * --help print s->usage and -V / --version the version. Returns 1 (go on),
 * 0 (help or version printed: exit 0) or -1 (one usage error line printed:
 * exit 2). Values point into argv. Local; not reentrant (getopt's state). */
int lsim_cli_getopt(int argc, char **argv, const lsim_cli_spec *s);

void lsim_cli_opts_default(lsim_cli_opts *o);

/* The CLI's side of a run: its progress line (on a terminal, without
 * --stats) and --stats lines, printed from the run's events, and the
 * outputs whose free space the load checks. Lives as long as the run call. */
typedef struct lsim_cli_progress {
    int on, stats;
    double t0;                 /* the current file's reading started */
    double shown;              /* when the last LSIM_RUN_PROGRESS line was drawn */
    lsim_run_output outs[4];   /* --trace-out, --html, build -o, --csv */
} lsim_cli_progress;
/* The run layer's options for o: o->run with the CLI's callback (context
 * p) and outputs. */
void lsim_cli_run_opts(const lsim_cli_opts *o, lsim_cli_progress *p, lsim_run_opts *ro);

/* The run layer with the CLI's progress and statistics (lsim_cli_run_opts):
 * lsim_run_paths (load, replicate, simulate, measure), lsim_run_load and
 * lsim_run_simulate. Return 0 or an error with err filled ("PATH: what"). */
int lsim_cli_run_paths(const lsim_cli_opts *o, char **args, int nargs, lsim_run *run, lsim_err *err);
int lsim_cli_load(const lsim_cli_opts *o, char **args, int nargs, lsim_run *run, lsim_err *err);
int lsim_cli_simulate(const lsim_cli_opts *o, lsim_run *run, lsim_err *err);
/* --stats: a coupled run's symmetry classes (one GPU simulated per class,
 * or every GPU) and the collective match's parts, after the run (sim, and
 * replay and report through lsim_cli_run_paths). */
void lsim_cli_run_stats(const lsim_cli_opts *o, const lsim_run *r);

/* --model on replay, report and build: the job's model-shape memory
 * estimate (whatif_plan.h lsim_wi_job_memest) into *mem, owned by the
 * caller (lsim_memest_job_free). When none can be made, one warning line
 * says why and *mem stays empty (nstages 0). 0; LSIM_EARG etc. with err
 * filled for a --model that cannot be read. Local. */
struct lsim_memest_job;
int lsim_cli_job_memory(const lsim_cli_opts *o, lsim_graph *const *gs, size_t n, struct lsim_memest_job *mem,
                        lsim_err *err);

int lsim_cli_build(int argc, char **argv);
int lsim_cli_sim(int argc, char **argv);
int lsim_cli_info(int argc, char **argv);
/* lumosim collect: result archives (files, directories) -> one CSV (collect.c). */
int lsim_cli_collect(int argc, char **argv);
/* lumosim synth: a synthesized job into a graph store (synth_cmd.c). */
int lsim_cli_synth(int argc, char **argv);
int lsim_cli_search(int argc, char **argv); /* search_cmd.c */
/* lumosim whatif (whatif_cmd.c) */
int lsim_cli_whatif(int argc, char **argv);
/* lumosim calibrate: fit a GPU spec (and a topology) to traces and
 * nccl-tests output (calibrate_cmd.c). */
int lsim_cli_calibrate(int argc, char **argv);
int lsim_cli_report_results(const char *path, const char *run_name, const char *html_out, const char *csv_out);
/* Items for every GPU of a stored run read with its graphs (the archive's
 * embedded ones); a run without graphs is refused in one line naming path
 * and the --detail that keeps them. *out: caller's. (store_cmds.c) */
int lsim_cli_items_of_run(const lsim_store_run *r, const char *path, lsim_replay_item **out, lsim_err *err);

/* Write the predicted trace if o->trace_out is set. */
int lsim_cli_write_trace(const lsim_cli_opts *o, const lsim_run *run, lsim_err *err);

/* Before anything is read: the command's input paths (files or
 * directories, NULL entries skipped) and its outputs (path NULL: not
 * asked for), checked by lsim_out_check (output.h) -- no output replaces an
 * input, another output, or a file of another kind unless --force. */
int lsim_cli_check_io(char *const *inputs, int nin, const lsim_io_file *outs, size_t nout, lsim_err *err);
/* --force on the command line (main.c takes it out of argv). */
extern int lsim_cli_force;
/* --force-large, likewise: run past the work cap below. */
extern int lsim_cli_force_large;

/* The work cap (docs/reliability.md, "Work caps"): a command whose work,
 * estimated from metadata before it starts, exceeds LSIM_CLI_WORK_CAP node
 * simulations (GPUs x nodes, samples x nodes, candidates x nodes) is
 * refused unless --force-large: 0, or LSIM_EARG with one line "what: about
 * N node simulations (how), over the cap of 1e8 ...: change, or
 * --force-large". 1e8 is about 2 minutes on one core at the rate measured
 * on this 2-core machine: whatif --dp 10000 of a synthesized 8-GPU store
 * (40,000 GPUs, 1.1e7 nodes) took 13 s of CPU to write and sim of it 11 s,
 * about 1e6 nodes a second (sim --samples reuses a graph: 6e6 a second).
 * The documented examples stay below it (whatif --dp 4096 of a training
 * step: 5.1e6 nodes, docs/whatif.md). */
#define LSIM_CLI_WORK_CAP 1e8
/* Work a GPU costs that symmetry reduction and shared structure do not
 * remove, in the cap's node simulations (1e6 a second; wall times on this
 * 2-core machine, docs/reliability.md "Work caps"):
 * - synth, beyond GPU 0's nodes: generating, checking and writing the GPU.
 *   synth --model gpt3-15b --layers 8 --tp 8 --pp 8 --dp 2048 (131,072
 *   GPUs of 78 nodes) took 32.3 s, 246 us a GPU, 168 beyond its nodes;
 *   --dp 1024 11.4 s. 170: the 10^6-GPU job (dp 15625) 2.5e8, measured
 *   247 s.
 * - sim: reading a GPU's rows and metadata, its report and its archive
 *   rows: sim -o of that 131,072-GPU store took 14.6 s (load 4.5, match
 *   2.3, write 6.5), 111 us a GPU; of the 65,536-GPU one 6.4 s. 200 a GPU.
 * - sim: a collective record's listing and match, 0.1 (1e7 a second): the
 *   98,304-GPU Llama job's match of 366.7 M kernels took 38 s
 *   (docs/scaling.md), estimate 56 s for its 58.7 s. GPT-3 175B's records
 *   match slower here (4,096 GPUs 6.7 s, 16,384 GPUs 18.9 s for 5.1 M and
 *   20.5 M records; sim -o 11.8 s and 34.1 s): that job is estimated at
 *   about a third of its time, which keeps bench/symmetry.sh's 65,536-GPU
 *   sim (81.6 s) under the cap. */
#define LSIM_CLI_SYNTH_GPU_WORK 170
#define LSIM_CLI_SIM_GPU_WORK 200
#define LSIM_CLI_SIM_COLL_WORK 0.1
int lsim_cli_work_cap(const char *what, double work, const char *how, const char *change, lsim_err *err);

/* Write a text file atomically through a callback (temporary name, rename). */
int lsim_cli_write_atomic(const char *path, int (*writer)(FILE *f, void *ctx, lsim_err *err), void *ctx, lsim_err *err);

/* --csv: PATH names standard output ("-" or /dev/stdout): the CSV is then
 * written there and the report (table or JSON) is not printed. */
int lsim_cli_csv_is_stdout(const char *path);
/* The file an output check sees for --csv: NULL for standard output. */
const char *lsim_cli_csv_checked(const lsim_cli_opts *o);
/* An output named by the user: standard output (lsim_cli_csv_is_stdout)
 * written and flushed through writer, any other path written atomically
 * (lsim_cli_write_atomic). */
int lsim_cli_write_output(const char *path, int (*writer)(FILE *f, void *ctx, lsim_err *err), void *ctx,
                          lsim_err *err);
/* The CSV of items[0..n) (GPUs 0..n-1) to o->csv_out, if set. */
int lsim_cli_write_csv(const lsim_cli_opts *o, const lsim_replay_item *items, size_t n, lsim_err *err);

/* The command's outcome is decided and reported (its error line printed, or
 * success): a SIGTERM from here on -- mpirun ending the ranks still in
 * MPI_Finalize after one of them exited non-zero -- cleans up silently
 * instead of printing "stopped by a signal". Defined in main.c. */
void lsim_cli_outcome_known(void);

int lsim_cli_ablate(int argc, char **argv);
/* lumosim export --chakra DIR STORE, and build --chakra DIR -o STORE
 * (chakra_cmd.c, docs/chakra.md). */
int lsim_cli_export(int argc, char **argv);
extern const char *const LSIM_USAGE_EXPORT;
int lsim_cli_build_chakra(const char *dir, const char *out, const char *cmd);
extern const char *const LSIM_USAGE_ABLATE; /* main.c */

/* ---- option parsers (args.c), apart so tests/fuzz/fuzz_cli.c runs them.
 * They read argv only (values point into it) and print the usage (--help)
 * or one "lumosim: error: ..." line. Return 1: go on; 0: help printed
 * (exit 0); -1: usage error (exit 2). lsim_cli_parse_paths returns the
 * number of paths put in args (caller-allocated, argc entries) instead of 1. */
extern const char *const LSIM_USAGE_BUILD;
extern const char *const LSIM_USAGE_SIM;
/* The other commands' help texts, kept with each command and printed by
 * both its --help and `lumosim help NAME` (main.c's command table). */
extern const char *const LSIM_USAGE_INFO;     /* store_cmds.c */
extern const char *const LSIM_USAGE_COLLECT;  /* collect.c */
extern const char *const LSIM_USAGE_SYNTH;    /* synth_cmd.c */
extern const char *const LSIM_USAGE_SEARCH;   /* search_cmd.c */
extern const char *const LSIM_USAGE_CALIBRATE; /* calibrate_cmd.c */
extern const char *LSIM_USAGE_WHATIF;         /* whatif_cmd.c: made from the step table */
int lsim_cli_parse_paths(int argc, char **argv, lsim_cli_opts *o, const char *usage, int allow_html, char **args);

typedef struct lsim_cli_build_args {
    lsim_cli_opts o;
    const char *out;
    const char *chakra;        /* --chakra DIR: Chakra ET files instead of traces */
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
    long samples;              /* --samples N: prediction intervals (samples.h), 0 none */
    long seed;                 /* --seed S (1) */
    int draw_others;           /* --draw-from others (1) or job (0) */
    int detail;                /* --detail: lsim_store_detail of the archive's run
                                  (default ops; nodes with --trace-out) */
    const char *share_topo;    /* --link-sharing TOPOLOGY.json (netshare.h), NULL: off */
    int share_passes;          /* --share-passes N (0: not given, 1) */
} lsim_cli_sim_args;
/* The commands that run under mpirun (store_cmds.c, synth_cmd.c,
 * search_cmd.c) hold an lsim_world (world.h): MPI stays below them. */

int lsim_cli_parse_sim(int argc, char **argv, lsim_cli_sim_args *s);

/* The other commands' parsers take their help text (usage, kept with the
 * command) and return as above.
 * ablate: --json, --latency and paths into args (argc entries). Returns the
 * number of paths, 0 (help) or -1. */
int lsim_cli_parse_ablate(int argc, char **argv, lsim_cli_opts *o, const char *usage, char **args);

/* info: FILE.h5... into args; returns the number of files, 0 (help) or -1. */
int lsim_cli_parse_info(int argc, char **argv, const char *usage, char **args);

/* collect: RESULT.h5|DIR... into args (argc entries). */
typedef struct lsim_cli_collect_args {
    const char *out, *run_name;
    int nargs;
} lsim_cli_collect_args;
int lsim_cli_parse_collect(int argc, char **argv, const char *usage, lsim_cli_collect_args *c, char **args);

/* calibrate: traces and nccl-tests files into the caller's arrays (argc
 * entries each). */
typedef struct lsim_cli_calibrate_args {
    const char *gpu, *out, *topo, *topo_out;
    const char **nccl;  /* --nccl-tests, repeatable, in order */
    int nnccl;
    char **traces;
    int ntraces;
    /* the network alone (no traces): --nccl-csv files, --fit-nodes LIST
     * (NULL: every node count), --nccl-algo / --nccl-proto for the report */
    const char **csv;
    int ncsv;
    const char *fit_nodes, *algo, *proto;
} lsim_cli_calibrate_args;
int lsim_cli_parse_calibrate(int argc, char **argv, const char *usage, lsim_cli_calibrate_args *c);

/* synth: 0 in a number means not given (the model's or the default). */
typedef struct lsim_cli_synth_args {
    const char *model, *gpu, *topo, *out;
    int tp, pp, dp, micro_batch, global_batch, gpus;
    int shape[6];       /* --layers --hidden --ffn --heads --seq --vocab */
    int vstages;        /* --schedule: 1 (1f1b) or V (interleaved:V) */
    int stats, no_p2p_sync;
    int no_share; /* --no-shared-structure: every GPU's node and edge rows written */
    int fp8_all_gather; /* --fp8-all-gather */
    double capacity_factor; /* --capacity-factor C, 0 not given (dropless) */
    int pad_to_capacity;    /* --pad-to-capacity */
    /* the Megatron options (issue 15, docs/synthesis.md "Options"): -1 not
     * given; recompute 0..2 (none, selective, full), grad_reduce 0..1
     * (overlap, after), attention 0..1 (flash, unfused), grad_bytes 2|4,
     * grad_acc 0..2 (fused, buffer, autograd) */
    int recompute, grad_reduce, attention, grad_bytes, grad_acc;
    int precision, fp8_scaling; /* -1 not given; 0..1 (bf16, fp8), (current, delayed) */
    int kernels;                /* --kernels: -1 not given; 0..1 (fused, eager) */
    int attn_kernel;            /* --attention-kernel: -1 not given; 0..2 (spec, fa2, fa3) */
    int loss;                   /* --loss: -1 not given; 0..1 (fused, eager) */
    int seq_parallel, dist_opt, scatter_gather, no_dropout, tp_overlap, forward_only, no_mem_check;
    long seed;
    int dp_cost;        /* --dp-cost N, 0 not given */
    int fsdp;           /* --fsdp N, 0 not given */
    int cp;             /* --cp N, 0 not given */
    int ep;             /* --ep N, 0 not given */
    int etp;            /* --etp N, 0 not given */
    double routing_skew;/* --routing-skew Z, 0 not given (balanced) */
    double routing_dirichlet; /* --routing-dirichlet A, 0 not given */
    const char *routing_hist; /* --routing-hist FILE, NULL not given */
    lsim_split split;   /* --pp-layers (zeroed: even) */
} lsim_cli_synth_args;
int lsim_cli_parse_synth(int argc, char **argv, const char *usage, lsim_cli_synth_args *s);
/* synth's options without the ones a job needs (--model aside): the fixed
 * options of a job that search lays out itself (search_cmd.c). 1, 0
 * (--help) or -1 (the usage line printed). */
int lsim_cli_parse_synth_opts(int argc, char **argv, const char *usage, lsim_cli_synth_args *s);
/* The job synth's arguments describe, before its check: the defaults, each
 * option given, the model (its shape options over it), the GPU, the
 * network, the measured routing (c->routing_hist: the caller frees it).
 * search starts every candidate from it (one copy of the rules). Local. */
int lsim_cli_synth_base(const lsim_cli_synth_args *sa, lsim_synth_cfg *c, lsim_err *err);

/* One synthesized job to write (synth_cmd.c): lumosim synth's, or a
 * what-if's re-synthesis of a synthesized store (resynth.c). Borrowed. */
typedef struct lsim_cli_synth_job {
    const lsim_cli_synth_args *sa; /* sa->out: the store written */
    const char *cmd;               /* the store's command line */
    const char *args_json;         /* its "synth_args" attribute: the arguments as a JSON array
                                      of strings, file names absolute, without -o */
    const char *whatif;            /* its "whatif" attribute (the what-if's record), or NULL:
                                      lumosim synth, which prints the memory estimate */
    const char *also_in;           /* one more input the output must not replace, or NULL */
} lsim_cli_synth_job;
/* Check the configuration, then synthesize every GPU and write the store
 * (nothing on failure: 0 or LSIM_E* with err). Collective over the
 * world (world.h) when m->on, local otherwise. */
int lsim_cli_synth_write(const lsim_world *m, const lsim_cli_synth_job *j, lsim_err *err);
/* synth's arguments (argv, argc of them) as the "synth_args" JSON array:
 * the files named by --model, --gpu, --topology, --routing-hist made
 * absolute, -o and its value left out. NULL: out of memory. Caller frees. */
char *lsim_cli_synth_args_json(int argc, char **argv);
/* whatif --ep/--cp/--fsdp (lsim_wi_resynth_wanted): the synthesized store
 * rq->in's job synthesized again with the new widths into rq->out, its
 * record printed on stdout (resynth.c). 0 or LSIM_E* with err. Local. */
int lsim_cli_whatif_resynth(const lsim_wi_request *rq, lsim_err *err);

/* whatif: its options are the what-if step table's (whatif_steps.h), parsed
 * straight into the plan's request (0 in a number means not given). */
#define LSIM_CLI_MAXSLOW LSIM_WI_MAXSLOW
typedef lsim_wi_request lsim_cli_whatif_args;
int lsim_cli_parse_whatif(int argc, char **argv, const char *usage, lsim_cli_whatif_args *w);

/* ---- pieces of the parsers (args.c) */
/* name (canonical spelling, a string literal) met for the first time: 0;
 * the second time: -1 and "NAME given twice" printed. */
int lsim_cli_once(lsim_cli_seen *s, const char *name);
/* Print "lumosim: error: MESSAGE" as one line: the message (which may hold
 * arguments) with control characters and bytes that are not UTF-8
 * escaped (text.h). After lsim_cli_set_json_errors(1) (main, when the
 * command line has --json) the line is a JSON object instead:
 * {"error": MESSAGE, "file": the path the message starts with, or null}.
 * lsim_cli_error is the same for errors that are not usage errors (the
 * caller chooses the exit code either way). */
void lsim_cli_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Standard output is a pipe whose reader has closed it (poll: POLLERR),
 * whatever errno a failed write left. An error printed then ends the
 * process by SIGPIPE instead, quietly, as coreutils end (issue 39). */
int lsim_cli_stdout_gone(void);
void lsim_cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void lsim_cli_set_json_errors(int on);

/* A progress line on a terminal (stderr a TTY; nothing otherwise),
 * rewritten in place: "lumosim: MESSAGE". At most five a second unless
 * force (a new phase). _done clears it before the command's own output;
 * _off silences it (--stats, whose lines it would garble; MPI ranks other
 * than 0). Local. */
void lsim_cli_tty_progress(int force, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void lsim_cli_tty_progress_done(void);
void lsim_cli_tty_progress_off(void);

/* replay, report and ablate under mpirun (more than one rank): refused
 * with one line on rank 0, telling to use build + sim. Returns 1 when
 * refused (exit 2), 0 to go on serially. Defined in store_cmds.c. */
int lsim_cli_refuse_mpi(const char *command);

#endif
