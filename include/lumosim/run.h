/* The run layer (src/run/): from input paths to simulated, measured GPUs --
 * the pipeline the replay, report, ablate, build and sim commands share, as
 * a library. Load traces (files, directories, merged multi-rank files) or
 * graph stores into one lsim_run; simulate it serially, each graph alone or
 * the ranks of one job coupled through their collectives (the job rules:
 * rank checks, one job or not, --replicate-from, measuring the copies
 * against the real job); and the mapping of a job's GPUs to MPI ranks
 * (policies by name). The parallel run is run_mpi.h.
 *
 * Libraries: everything here is in lumosim_core (no MPI, no HDF5) except
 * lsim_run_check_inputs, lsim_run_load and lsim_run_paths, which read graph
 * stores and are in lumosim_io (io/run/load_store.c).
 *
 * The library never prints: progress and statistics go to the caller's
 * callback (lsim_run_opts.on_event). All functions are local (no MPI). */
#ifndef LUMOSIM_RUN_H
#define LUMOSIM_RUN_H

#include "lumosim/critical.h"
#include "lumosim/engine.h"
#include "lumosim/et.h"
#include "lumosim/graph.h"
#include "lumosim/job.h"
#include "lumosim/metrics.h"
#include "lumosim/netshare.h"
#include "lumosim/report.h"

/* ------------------------------------------------------------ events */

typedef enum lsim_run_event_kind {
    LSIM_RUN_PHASE,     /* path enters phase `what`: "reading", "building the
                           graph", "loading the graph store", "simulating" */
    LSIM_RUN_BYTES,     /* reading path: `bytes` uncompressed so far */
    LSIM_RUN_ET,        /* path's execution trace `what` applied: `et` */
    LSIM_RUN_LOADED,    /* trace path built into `graph`: `bytes`, `events`
                           seen, `read_s` (ingest), `build_s` */
    LSIM_RUN_SIMULATED, /* graph of path simulated alone: `simulate_s`,
                           `events` (node events) */
    LSIM_RUN_UNNAMED,   /* `count` traces that name no rank: each is replayed
                           on its own, not as one job */
    LSIM_RUN_DONE,      /* the loading or the simulating loop is over (a
                           progress line can be cleared) */
    LSIM_RUN_PROGRESS   /* inside a long phase of the job `what`: `count` of
                           `events` done (GPUs measured); as often as every
                           step, the receiver throttles */
} lsim_run_event_kind;

/* Borrowed for the call only. Fields not named by the kind are 0/NULL. */
typedef struct lsim_run_event {
    lsim_run_event_kind kind;
    const char *path;
    const char *what;
    uint64_t bytes, events;
    double read_s, build_s, simulate_s;
    const lsim_graph *graph;
    const lsim_et_apply_stats *et;
    size_t count;
} lsim_run_event;

typedef void (*lsim_run_event_fn)(void *ctx, const lsim_run_event *ev);

/* ------------------------------------------------------------ options */

/* An output the caller will write after the run: its free space is checked
 * before anything is loaded (lsim_disk_check), against the inputs' JSON
 * size divided by json_div (memlimit.h; 0 counts as 1). path NULL: none. */
typedef struct lsim_run_output {
    const char *path;
    uint64_t json_div;
} lsim_run_output;

typedef struct lsim_run_opts {
    lsim_build_opts bo;
    lsim_ns bin_ns;          /* utilisation bins of the metrics */
    int critical;            /* compute each GPU's critical path */
    int no_bind;             /* the deciding edges are not wanted (no per-node
                                bind rows, no predicted trace): the engines
                                skip them, 16 bytes a node; ignored with
                                critical */
    unsigned drop_mask;      /* edge classes removed before simulating */
    int zero_launch_latency; /* --drop-edges launch_latency */
    int independent;         /* never couple ranks */
    int replicate_from;      /* rebuild the job from this rank's trace, -1: no */
    const lsim_run_output *outputs; /* checked by lsim_run_load (borrowed) */
    size_t noutputs;
    lsim_run_event_fn on_event; /* progress and statistics, NULL: none */
    void *ctx;                  /* passed to on_event */
    /* Link sharing (netshare.h; sim --link-sharing): after the coupled run,
     * the network flows are swept on this topology (borrowed) and the job
     * run again with the shared transfers, until a sweep gives the times
     * of the one before (a fixed point) or after share_passes sweeps (0:
     * LSIM_SHARE_PASSES). NULL: off. The job's GPU i must be rank i. */
    const lsim_topology *share;
    int share_passes;
    /* Symmetry reduction (symmetry.h; sim --symmetry off): a coupled job
     * simulates one representative GPU per class, every other GPU getting
     * its representative's times (the same results). 0: on. The classes
     * are computed either way (lsim_run.sym_rep). */
    int symmetry_off;
    /* The collective match of a coupled job in this many parts
     * (lsim_job_match_ex; sim --match-parts): about 1 / parts of its sort's
     * memory for parts + 1 listings of the collectives. 0: one part when
     * the sort fits this process's memory limit, else the fewest that fit
     * (lsim_mem_match_parts, memlimit.h). Serial runs only: under mpirun
     * each rank matches its own share of the keys. */
    unsigned match_parts;
    /* --replicate-from's collectives (run.c replicated_transfers). 0: each
     * instance takes the shortest duration the traced rank shows for a
     * collective of its kind and size (the least waiting: the point
     * prediction). 1: one of those durations drawn uniformly, waiting for
     * the peers included, by (replica_seed, replica_sample, instance)
     * (lsim_samples_hash): a sample of replay's range (samples.h,
     * lsim_samples_replica_range; lsim_samples_run sets replica_seed and
     * replica_sample per sample). */
    int replica_draw;
    uint64_t replica_seed, replica_sample;
} lsim_run_opts;
#define LSIM_SHARE_PASSES 10

/* The defaults: trace events released after each build (release_events),
 * 1 ms bins, replicate_from -1, nothing else. */
void lsim_run_opts_default(lsim_run_opts *o);

/* ------------------------------------------------------------ the run */

/* Everything one run produced, per input graph. Owned by the caller (zero
 * it before first use); everything in it is freed by lsim_run_free. */
typedef struct lsim_run {
    size_t n;
    char **paths;            /* display path of each graph */
    lsim_graph **graphs;
    lsim_engine **engines;
    lsim_rank_report *reps;
    lsim_critical_path *cps;
    lsim_replay_item *items;
    lsim_job *job;           /* when the ranks were simulated together */
    lsim_job_path *job_path; /* with critical, a coupled serial run: the job's
                                critical path across its GPUs (critical.h);
                                NULL otherwise */
    /* wall seconds of the phases of lsim_run_simulate (or of the parallel
     * run): collective matching; set-up of a coupled run's engines
     * (allocating and first writing their per-node state, lsim_run_engines);
     * the run (for independent replays, engine set-up included); metrics and
     * critical path. */
    double match_s, setup_s, simulate_s, metrics_s;
    unsigned match_parts; /* the parts the collective match ran in (lsim_run_opts.match_parts) */
    /* --replicate-from R with every rank of the job among the inputs: the
     * real ranks' graphs, by rank (owned; NULL otherwise). The copies are
     * then measured against them, not against rank R's own trace. */
    lsim_graph **truth;
    size_t ntruth;
    int replicated;          /* the graphs are copies made by --replicate-from */
    int shared;              /* link sharing ran (lsim_run_opts.share) */
    lsim_netshare_stats share_st; /* its last sweep */
    lsim_netshare_detail share_det; /* its last sweep's flows and links (owned) */
    /* The coupled job's symmetry classes (symmetry.h; NULL: none computed,
     * not a coupled serial job): each GPU's representative; nclasses of
     * them. Every GPU its own class when the quotient is not exact; with
     * link sharing, the classes after the last sweep's transfers (they may
     * split from pass to pass: run.c share_links). reduced: only
     * the representatives were simulated (sym_job, the quotient, over
     * sym_graphs; engines[i] is NULL for the others, whose items hold
     * their representative's arrays). */
    uint32_t *sym_rep, *sym_qidx;
    size_t nclasses;
    int reduced;
    lsim_job *sym_job;
    lsim_graph **sym_graphs;
    lsim_engine **sym_engines;
    /* How its graph stores were read (lsim_run_store_flags): 0, in full;
     * else sized for a reduced run (LSIM_STORE_READ_REDUCED, store.h), so
     * that a job that then does not reduce has its engines checked against
     * this process's memory limit (memlimit.h) before they are made, and is
     * refused in one line rather than killed. LSIM_RUN_SIZED_ONE_PROCESS:
     * read by replay or report, which do not run under mpirun, so the
     * refusal does not advise it. Set by whoever loads the run. */
    int sized_reduced;
} lsim_run;
#define LSIM_RUN_SIZED_REDUCED 1
#define LSIM_RUN_SIZED_ONE_PROCESS 2

void lsim_run_free(lsim_run *r);

/* PATHs (files, directories) into trace files appended to r->paths (r->n):
 * files as given; a directory stands for its *.json / *.json.gz files in
 * name order, execution traces (*.et.json*) skipped. Only regular files and
 * directories (input.h). */
int lsim_run_expand(char **args, int nargs, lsim_run *r, lsim_err *err);

/* Append graph g (owned by r from now on, also on failure) with its
 * display path. */
int lsim_run_push_graph(lsim_run *r, lsim_graph *g, const char *path, lsim_err *err);

/* Append graphs gs[0..ng) (owned by r from now on, also on failure; the
 * array gs stays the caller's), each labelled by its source, else by
 * fallback. */
int lsim_run_add_graphs(lsim_run *r, lsim_graph **gs, size_t ng, const char *fallback, lsim_err *err);

/* One path of traces (a file, or a directory of them) read and built into
 * graphs appended to r: a trace's execution trace beside it applied
 * (et.h); a merged multi-rank file becomes one graph per rank, labelled
 * "PATH [rank R]". */
int lsim_run_load_traces(const lsim_run_opts *o, const char *path, lsim_run *r, lsim_err *err);

/* lumosim_io. Before anything is read: what the inputs would need in
 * memory is refused if it does not fit (memlimit.h); *json gets the
 * inputs' trace bytes. */
int lsim_run_check_inputs(char **args, int nargs, uint64_t *json, lsim_err *err);
/* lumosim_io. The flags (LSIM_STORE_READ_*, store.h) a graph store is read
 * with for a run with options o: structures shared, the memory check sized
 * as the run will use it -- the deciding edges only when the engines keep
 * them, and, serial (one process) and with nothing that gives every GPU its
 * own times (--symmetry off, link sharing, --independent,
 * --replicate-from), one engine per symmetry class
 * (LSIM_STORE_READ_REDUCED). One rule for sim, replay and report: a store
 * given to report takes sim's road (issue 39). */
int lsim_run_store_flags(const lsim_run_opts *o, int serial);
/* lumosim_io. Load graphs (traces, directories of traces, graph stores)
 * into r, after lsim_run_check_inputs and the outputs' free space
 * (o->outputs); stores read by lsim_run_store_flags (serial: replay and
 * report run in one process). A result archive, or an HDF5 file HDF5
 * cannot open, is an error naming it. */
int lsim_run_load(const lsim_run_opts *o, char **args, int nargs, lsim_run *r, lsim_err *err);
/* lumosim_io. The whole serial pipeline: lsim_run_load, --replicate-from,
 * lsim_run_simulate, and measuring the copies against the real job. */
int lsim_run_paths(const lsim_run_opts *o, char **args, int nargs, lsim_run *r, lsim_err *err);

/* Every graph's rank inside its world (0..world_size-1, or -1 unknown):
 * one outside would silently turn off the coupling of the whole job. */
int lsim_run_check_ranks(const lsim_run *r, lsim_err *err);
/* Every graph a distributed trace of model latency (what a coupled run
 * needs; says nothing about which ranks are there). */
int lsim_run_job_like(const lsim_run *r);

/* --replicate-from: keep rank o->replicate_from's graph only and copy it to
 * every rank of its world; with every rank of the job among the inputs,
 * the real ranks are kept in r->truth. */
int lsim_run_replicate(const lsim_run_opts *o, lsim_run *r, lsim_err *err);
/* The waiting a traced rank's collectives show, by the rule the copies'
 * collectives are timed with: a collective node's waiting is its traced
 * duration less the shortest traced duration of a collective of its kind
 * and size on that rank (its transfer estimate). *colls: observed
 * collective nodes; *waited: those with waiting > 0; *total: its sum, ns.
 * 0 or LSIM_ENOMEM. Local. */
int lsim_run_replica_waits(const lsim_graph *g, uint64_t *colls, uint64_t *waited, lsim_ns *total, lsim_err *err);
/* After the simulation, with r->truth: the "actual" side of each copy's
 * report becomes the real rank's (the prediction is untouched). */
int lsim_run_measure_truth(const lsim_run_opts *o, lsim_run *r, lsim_err *err);

/* Allocate r's engines, reports, critical paths and items (one per graph,
 * zeroed). */
int lsim_run_alloc_results(lsim_run *r, lsim_err *err);
/* Simulate r's graphs serially (ablate, engine, metrics, critical path)
 * and fill r->items: unless o->independent, distributed traces given
 * together must be the ranks of one job, simulated coupled. */
int lsim_run_simulate(const lsim_run_opts *o, lsim_run *r, lsim_err *err);

/* After a simulation: the predicted breakdown of r's GPUs, mean over them
 * (exposed compute, overlapped, exposed comm, other; ns, rounded), for the
 * one-figure-per-run callers (samples.h, search.h). All 0 when r->n is 0. */
void lsim_run_mean_breakdown(const lsim_run *r, lsim_ns out[4]);

/* The report item of GPU i of r (engine, report and path already there). */
lsim_replay_item lsim_run_item(const lsim_run *r, size_t i, int with_cp, int coupled, lsim_ns clock_offset);
/* Before a coupled run: ablate the graphs (if asked) and create
 * r->engines over one allocation (lsim_engines_new). */
int lsim_run_engines(const lsim_run_opts *o, lsim_run *r, lsim_err *err);
/* After a coupled run: metrics (with the waits) and critical path of local
 * GPU i, which is GPU `gpu` of r->job; fills r->items[i]. */
int lsim_run_finish_gpu(const lsim_run_opts *o, lsim_run *r, size_t i, size_t gpu, lsim_err *err);
/* The job's critical path of a run read back from its result archive
 * (store.h; read with its graphs and per-node times: a run written with
 * --detail nodes keeps the deciding edges): the collectives matched again
 * over the archived graphs in GPU order (lsim_job_match, as the serial run
 * matches them), then lsim_job_path_compute_times. What a serial run draws,
 * for a run none of whose processes held every engine (mpirun). 0 with
 * out->n 0 when not every GPU was coupled (a serial run has no job path
 * then); LSIM_EARG when the deciding edges were not kept, or the
 * matching's error. *out as lsim_job_path_compute's, its names the run's
 * graphs (borrowed: r must outlive it). Local (io/run/load_store.c). */
struct lsim_store_run;
int lsim_run_job_path_stored(const struct lsim_store_run *r, lsim_job_path *out, lsim_err *err);

/* ------------------------------------------------------------ mapping
 * (src/run/mapping.c) The GPUs of a job assigned to the ranks of a
 * parallel run, by named policy (after CODES's job-map methods). A policy
 * fills owner[g] (the rank of GPU g, for every g) from the job's layout. */

/* GPUs numbered as Megatron does (rank = tp + TP * (dp + DP * pp)); tp * dp
 * divides ngpus (1: not known). */
typedef struct lsim_map_layout {
    size_t ngpus, tp, dp;
} lsim_map_layout;

typedef int (*lsim_map_fn)(const lsim_map_layout *l, int nranks, const char *arg, int32_t *owner, const char **how,
                           lsim_err *err);

typedef struct lsim_map_policy {
    const char *name;  /* the --mapping value ("file" takes ":PATH") */
    int takes_arg;     /* name:ARG */
    const char *desc;  /* one line */
    lsim_map_fn assign;
} lsim_map_policy;

/* The policies, in the order of the --mapping help (static table). */
const lsim_map_policy *lsim_map_policies(size_t *n);

/* owner[0..l->ngpus) (caller-allocated) from the mapping "NAME" or
 * "NAME:ARG" over nranks ranks. *how names what was applied ("groups:tp"
 * for the groups policy, else the mapping itself; provenance). Unknown
 * names: LSIM_EARG. */
int lsim_map_assign(const char *mapping, const lsim_map_layout *l, int nranks, int32_t *owner, const char **how,
                    lsim_err *err);
/* The GPUs of `rank`, ascending, under the mapping (*gpus: allocated here,
 * the caller frees; *n of them). */
int lsim_map_local(const char *mapping, const lsim_map_layout *l, int nranks, int rank, size_t **gpus, size_t *n,
                   const char **how, lsim_err *err);
/* Block distribution of n items over nranks: rank's first and count. */
void lsim_map_block(size_t n, int nranks, int rank, size_t *first, size_t *count);
/* The rank of item i under lsim_map_block. */
int lsim_map_block_owner(size_t n, int nranks, size_t i);
/* The layout of a job of ngpus from its GPU 0 (src/whatif's
 * identification: canonical group names of synthesized jobs, rank lists of
 * traces): the tensor- and data-parallel widths of its collectives, 1 for
 * one not seen or not dividing the GPU count. */
int lsim_map_layout_of(const lsim_graph *g0, size_t ngpus, lsim_map_layout *l, lsim_err *err);

#endif
