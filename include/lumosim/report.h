/* Printing a replay: a human-readable table or the stable JSON document
 * described in docs/report-json.md. Local.
 *
 * Ownership: everything is borrowed; nothing is retained after the call. */
#ifndef LUMOSIM_REPORT_H
#define LUMOSIM_REPORT_H

#include <stdio.h>

#include "lumosim/critical.h"
#include "lumosim/graph.h"
#include "lumosim/memest.h"
#include "lumosim/metrics.h"
#include "lumosim/netshare.h"

/* What the reports need of a GPU beyond its measurements, when its graph is
 * not at hand: a result archive read without its graphs (lumosim report of
 * a large or a --detail summary archive; the archive's gpus/stage, replica,
 * observed columns, docs/hdf5-schema.md). Each field is what the GPU's graph
 * would give. */
typedef struct lsim_report_brief {
    int rank;                      /* the graph's rank (-1: its index) */
    const char *source;            /* the trace path it was built from (borrowed) */
    int observed;                  /* it has observed times (lsim_metrics_observed_nodes > 0) */
    int stage, replica;            /* lsim_report_coords_of */
    char *const *iter_names;       /* the report's iteration names (its niters), borrowed */
    lsim_latency_mode latency;     /* the graph's --latency mode (the CSV's latency_mode) */
} lsim_report_brief;

/* One replayed rank: its graph, its measurements and, when available, the
 * simulated times, the deciding edges and the critical path (NULL if not
 * computed). */
typedef struct lsim_replay_item {
    const lsim_graph *g;
    const lsim_rank_report *r;
    const lsim_ns *start, *end;             /* simulated times per node */
    const int64_t *bind_start, *bind_end;   /* see lsim_engine_bind_start */
    const lsim_critical_path *cp;           /* NULL unless --critical-path */
    int coupled;                            /* simulated together with the
                                               job's other ranks (collectives
                                               matched across GPUs) */
    lsim_ns clock_offset;                   /* estimated clock offset of this
                                               rank (coupled runs), ns */
    int unmeasured;                         /* a copy of another rank's trace
                                               (--replicate-from without this
                                               rank's own trace): its "actual"
                                               side was never measured, so it
                                               is shown as not measured (null
                                               in JSON), with no error */
    const lsim_report_brief *brief;         /* last, so positional initializers
                                               stay valid: non-NULL when g may be
                                               NULL (the HTML page: a GPU not
                                               shown in full, or a run kept
                                               without graphs); the reports then
                                               take rank, source, observed and
                                               coordinates from it */
} lsim_replay_item;

/* The brief of a graph (iter_names NULL: the graph's strings). Local. */
void lsim_report_brief_of(const lsim_graph *g, lsim_report_brief *b);

/* The job's GPU work by name: kernel, memcpy and memset nodes of every GPU
 * summed by name (any kind), in order of first appearance (GPU order, then
 * node order). The sums saturate. */
typedef struct lsim_report_kernel {
    char *name;                    /* owned by the array (lsim_report_kernels_free) */
    uint64_t count, observed;      /* nodes, and of them nodes with observed times */
    lsim_ns actual_ns;             /* sum of observed durations over the observed ones */
    lsim_ns predicted_ns;          /* sum of simulated durations */
} lsim_report_kernel;
/* From the items' graphs and simulated times (every item needs g, start and
 * end). 0 or LSIM_ENOMEM; *out: caller's. Local. */
int lsim_report_kernels_of(const lsim_replay_item *items, size_t n, lsim_report_kernel **out, size_t *nout);
void lsim_report_kernels_free(lsim_report_kernel *k, size_t n);

void lsim_report_table(FILE *f, const lsim_replay_item *items, size_t n);

/* replay --replicate-from's range of the job span (samples.h,
 * lsim_samples_replica_range): p5/p50/p95 of n samples of seed, drawn from
 * the traced rank's own durations; that rank's collectives (colls), those
 * that show waiting for peers (colls_waited) and its sum (waited, ns);
 * actual: the real job's span when every rank's trace was given, -1 when
 * it was not measured. */
typedef struct lsim_job_range {
    uint64_t n, seed;
    int32_t source;
    lsim_ns q[3];
    lsim_ns actual;
    uint64_t colls, colls_waited;
    lsim_ns waited;
} lsim_job_range;

/* What a report says about the job beside its items, each NULL when there
 * is none: the memory estimate (the table's memory lines, the JSON's
 * "memory", docs/memory.md), link sharing's last sweep (the JSON's
 * "network"), the job's critical path (printed after the job line, the
 * JSON's "job_critical_path") and replay --replicate-from's range (after
 * the job line, the JSON's "job_range"; docs/report-json.md). */
typedef struct lsim_report_extra {
    const lsim_memest_job *memory;
    const lsim_netshare_stats *network;
    const lsim_job_path *path;
    const lsim_job_range *range;
} lsim_report_extra;

/* The job's span over all items (earliest start to latest end of their
 * windows), actual and predicted. */
void lsim_report_job_span(const lsim_replay_item *items, size_t n, lsim_ns *actual, lsim_ns *predicted);

/* Writes the JSON document; returns 0 or LSIM_ENOMEM / LSIM_EIO. */
int lsim_report_json(FILE *f, const lsim_replay_item *items, size_t n,
                     lsim_err *err);
/* The table and the JSON document with what x says about the job (NULL,
 * or all of it NULL: exactly lsim_report_table / lsim_report_json).
 * per_rank 0: a job of more than LSIM_REPORT_FULL_MAX ranks prints only
 * its LSIM_REPORT_SLOWEST slowest and its fastest rank (by predicted
 * window) and one line for the others (lsim_report_pick); 1: every rank. */
void lsim_report_table_x(FILE *f, const lsim_replay_item *items, size_t n, int per_rank, const lsim_report_extra *x);
int lsim_report_json_x(FILE *f, const lsim_replay_item *items, size_t n, const lsim_report_extra *x, lsim_err *err);
/* Which ranks a summarised table prints: show[i] = 1 for every rank when
 * `every` or n <= LSIM_REPORT_FULL_MAX, else for the LSIM_REPORT_SLOWEST
 * largest windows and the smallest (ties: the lower index). Returns how
 * many. And the line that stands for the ranks not printed (nothing when
 * none is left out). Local. */
#define LSIM_REPORT_FULL_MAX 16
#define LSIM_REPORT_SLOWEST 3
size_t lsim_report_pick(const lsim_ns *window, size_t n, int every, uint8_t *show);
void lsim_report_table_omitted(FILE *f, const lsim_ns *window, const uint8_t *show, size_t n);
/* One GPU's figures for the job-level lines of a summarised table: its
 * pipeline stage and its window and breakdown, all int64 words so that sim
 * under mpirun gathers them to rank 0 as they are (LSIM_REPORT_SUM_WORDS
 * words per GPU). The stage is read from the process-group names synth and
 * whatif write (tensor-parallel "tp:PP:DP", data-parallel "dp:TP:PP"); -1
 * when the graph has neither (a trace without a pipeline, no graph). */
#define LSIM_REPORT_SUM_WORDS 12
typedef struct lsim_report_sum {
    int64_t stage;     /* pipeline stage, -1 unknown */
    int64_t obs;       /* 1: the graph has observed times (actual figures) */
    int64_t window[2]; /* actual, predicted window, ns */
    int64_t bd[2][4];  /* actual, predicted breakdown, ns: exposed compute,
                          overlapped, exposed comm, other */
} lsim_report_sum;
/* The stage of a graph as above (-1 unknown). Local. */
int lsim_report_stage_of(const lsim_graph *g);
/* Its stage and its data-parallel replica (the DP of its "tp:PP:DP" group;
 * -1 when the graph has none, as with TP 1). Local. */
void lsim_report_coords_of(const lsim_graph *g, int *stage, int *replica);
void lsim_report_sum_of(const lsim_replay_item *it, lsim_report_sum *s);
/* The per-stage means of a summarised table: printed only when some GPU is
 * left out (show[i] == 0), every GPU has a stage and there are at least two
 * stages (PP > 1); a mean is the sum (as doubles, in GPU order, so the
 * serial and the MPI table print the same) of the stage's ns figures over its
 * GPUs divided by their count. Local. */
void lsim_report_table_stages(FILE *f, const lsim_report_sum *s, const uint8_t *show, size_t n);

/* The table and the JSON document in pieces, for a report assembled from
 * several processes (sim under mpirun: each rank formats its own GPUs, rank 0
 * prints them in GPU order). lsim_report_table / lsim_report_json are
 * exactly head + items + tail / assemble over these. Local. */
typedef struct lsim_report_job_part {
    lsim_ns as, ae, ps, pe;  /* earliest window start / latest end, actual and predicted */
    int any_obs;             /* some item has observed times */
    size_t n;                /* items covered */
    const lsim_memest_job *memory; /* the job's memory estimate (memest.h; a graph store's "memory"
                                      attribute): printed after the job line, and OOM flagged;
                                      NULL (lsim_report_job_part_of): nothing said about memory */
    int unmeasured;          /* some item is unmeasured (lsim_replay_item): the
                                job's actual time is not known */
    const lsim_netshare_stats *network; /* sim --link-sharing's last sweep: the JSON's
                                           "network" object (docs/report-json.md); NULL:
                                           no such key (lsim_report_job_part_of) */
    const lsim_job_path *path; /* the job's critical path: the table's lines after the
                                  job line and the JSON's "job_critical_path"; NULL
                                  (lsim_report_job_part_of): none */
    const lsim_job_range *range; /* replay --replicate-from's range: after the job line,
                                    the JSON's "job_range"; NULL: none */
} lsim_report_job_part;
/* sim --link-sharing's figures (netshare.h) as the JSON object the
 * report's "network" is (docs/report-json.md; with the links' ids, the
 * span and the GPUs and ECMP paths that name them): text (malloc'd, the
 * caller frees it; NULL when out of memory), and back: 0, or LSIM_EFORMAT
 * naming the field that is missing or wrong. The result archive keeps the
 * text as the run's attribute "network" (store.h). Local. */
char *lsim_report_network_text(const lsim_netshare_stats *st);
int lsim_report_network_parse(const char *text, lsim_netshare_stats *st, lsim_err *err);
/* The part of a set of items (n may be 0: neutral values; items without a
 * graph count as unobserved). */
void lsim_report_job_part_of(const lsim_replay_item *items, size_t n, lsim_report_job_part *p);
/* The first line: "replay" when some item has observed times (any_obs),
 * else "simulation of a synthesized or what-if job". */
void lsim_report_table_head(FILE *f, int observed_latency, int any_obs);
void lsim_report_table_tail(FILE *f, const lsim_report_job_part *p);
/* One item's table section / compact JSON object, as its idx-th GPU:
 * malloc'd text (caller frees), NULL when out of memory. */
char *lsim_report_table_item(const lsim_replay_item *it, size_t idx);
char *lsim_report_json_item(const lsim_replay_item *it, size_t idx);
/* The JSON document from n item objects in order; 0, LSIM_ENOMEM, LSIM_EIO. */
int lsim_report_json_assemble(FILE *f, int observed_latency, char *const *objs, size_t n, const lsim_report_job_part *p,
                              lsim_err *err);

/* One self-contained HTML page (inline SVG and CSS, no scripts fetched from
 * anywhere): per-iteration stacked bars of the breakdown, actual beside
 * predicted; a per-rank timeline overview (duty cycle); the critical-path
 * summary of each rank that has one; graph statistics. Returns 0 or
 * LSIM_EIO / LSIM_ENOMEM. (src/report_html.c) */
int lsim_report_html(FILE *f, const lsim_replay_item *items, size_t n, lsim_err *err);
/* The same with the job's memory estimate (NULL: exactly lsim_report_html):
 * a card after the summary, each stage's parts and total, OOM where a stage
 * exceeds the GPU (docs/memory.md); and with the job's critical path (NULL:
 * none), a card after it. */
int lsim_report_html_mem(FILE *f, const lsim_replay_item *items, size_t n, const lsim_memest_job *memory,
                         const lsim_job_path *path, lsim_err *err);
/* The same with everything lsim_report_extra carries (network: a card of
 * the link sharing's figures and busiest links; range: a card after the
 * summary, as the text report's "job range" lines). */
int lsim_report_html_x(FILE *f, const lsim_replay_item *items, size_t n, const lsim_report_extra *x, lsim_err *err);

/* The page from what a result archive keeps, without holding every graph
 * (lumosim report RESULT.h5 --html): each item has its report and a brief;
 * only the GPUs lsim_report_html_full names need g, start and end (and cp
 * when the run has critical paths). A GPU shown in full without a graph (a
 * run written with --detail summary) gets its iterations and timeline, and
 * a line saying what the run did not keep. The page is byte for byte what
 * lsim_report_html_mem writes from the graphs. Local. */
typedef struct lsim_report_view {
    const lsim_report_kernel *kernels; /* the job's kernels by name (NULL with nkernels 0
                                          and no graphs: the table is left out) */
    size_t nkernels;
    int latency;                       /* lsim_latency_mode of the run */
    const lsim_memest_job *memory;     /* as lsim_report_html_mem; NULL: none */
    const lsim_job_path *path;
    const lsim_job_range *range;       /* replay --replicate-from's range: a card after
                                          the summary; NULL: none */
    const lsim_netshare_stats *network; /* sim --link-sharing's figures: a card after
                                           the memory card; NULL: none */
} lsim_report_view;
int lsim_report_html_view(FILE *f, const lsim_replay_item *items, size_t n, const lsim_report_view *v,
                          lsim_err *err);
/* The GPUs the page shows in full, ascending, from the items' reports alone
 * (every GPU up to 16, else the slowest, the fastest and, beyond 64 GPUs,
 * the slowest five); out needs LSIM_REPORT_HTML_FULL_MAX entries. Returns
 * how many. Local. */
#define LSIM_REPORT_HTML_FULL_MAX 16
size_t lsim_report_html_full(const lsim_replay_item *items, size_t n, size_t *out);

#endif
