/* HDF5 graph store and result archive (io/h5_*.c, private header
 * io/h5_internal.h; schema in docs/hdf5-schema.md).
 *
 * A graph store holds the execution graphs of the GPUs of one job, one
 * lsim_graph per GPU, as flat column datasets over all GPUs (concatenated in
 * GPU order) plus a per-GPU offset index (/gpus), so a reader takes exactly
 * the rows of the GPUs it wants. A result file holds one or more named runs
 * (/runs/NAME): per-node simulated start/end in the graph's node order, per-GPU
 * and per-iteration summaries, duty cycles, critical paths and, optionally,
 * the graphs themselves, so `report` can work from the archive alone.
 * Anything that may differ between two runs of the same simulation (wall
 * times, host, MPI ranks, mapping, command line, version) is an attribute of
 * /runs/NAME/provenance, never a dataset:
 *     h5diff --exclude-path /runs/NAME/provenance a.h5 b.h5
 * reports no difference when the simulated results are equal.
 *
 * Every file carries a schema_version attribute (LSIM_STORE_SCHEMA_VERSION)
 * and a kind ("lumosim-graphs" / "lumosim-results"); readers refuse other
 * versions and kinds with one clear message.
 *
 * Errors: 0 or a negative LSIM_E* code, with err filled ("PATH: ..."):
 * LSIM_EIO (cannot open/create/rename), LSIM_EFORMAT (not HDF5, truncated,
 * wrong kind or version, inconsistent or out-of-range contents: the message
 * names the dataset), LSIM_EARG (bad GPU range, missing run), LSIM_ENOMEM.
 * Readers validate everything the engine, metrics and reports index with, so
 * a damaged file never crashes them. HDF5's own error printing is silenced
 * while a call runs (the previous handler is restored on return).
 *
 * Writes are atomic: the file is written to PATH.tmp-<pid> (the pid of MPI
 * rank 0 for the collective variants) and renamed to PATH only once complete
 * and closed; on failure the temporary file is removed and PATH is untouched.
 *
 * Ownership: graphs, runs and tables returned here are owned by the caller
 * (free with lsim_store_free_graphs / lsim_store_run_free /
 * lsim_store_gpu_table_free). Inputs are borrowed.
 *
 * Concurrency: functions without _mpi are Local (any process, MPI
 * initialised or not; they use HDF5's POSIX driver). Functions ending in
 * _mpi are Collective over comm: every rank of comm must call them with the
 * same path (and, for writes, the same command line and run name) in the same
 * order; they use MPI-IO with collective metadata and collective transfers,
 * each rank reading or writing only the rows of its own GPUs. They return the
 * same status on every rank (the error message of the lowest failing rank is
 * broadcast). Not thread-safe (HDF5's error-stack setting is global).
 *
 * HDF5 library exit: the first call asks HDF5 not to register its atexit
 * handler (H5dont_atexit; no effect if the caller initialised HDF5 first),
 * because HDF5 1.10, after rejecting a corrupt file, would print "HDF5:
 * infinite loop closing library" at exit. The store never leaves an HDF5
 * object open, so nothing is lost.
 *
 * Files use the HDF5 1.10 format (checksummed metadata and chunk indexes,
 * Fletcher-32 on every chunk): readable by HDF5 >= 1.10 and h5py. */
#ifndef LUMOSIM_STORE_H
#define LUMOSIM_STORE_H

#include <stdio.h>

#include <mpi.h>

#include "lumosim/critical.h"
#include "lumosim/search.h"
#include "lumosim/graph.h"
#include "lumosim/metrics.h"
#include "lumosim/report.h"

#define LSIM_STORE_SCHEMA_VERSION 1
#define LSIM_STORE_KIND_GRAPHS "lumosim-graphs"
#define LSIM_STORE_KIND_RESULTS "lumosim-results"
#define LSIM_STORE_KIND_SEARCH "lumosim-search"

/* ------------------------------------------------------------ probing */

typedef enum lsim_store_kind {
    LSIM_STORE_NOT_HDF5 = 0, /* missing, unreadable, or not an HDF5 file */
    LSIM_STORE_OTHER,        /* HDF5, but no lumosim kind attribute */
    LSIM_STORE_GRAPHS,       /* kind "lumosim-graphs" (any schema version) */
    LSIM_STORE_RESULTS,      /* kind "lumosim-results" (any schema version) */
    LSIM_STORE_SEARCH        /* kind "lumosim-search": lumosim search -o */
} lsim_store_kind;

/* What PATH is, cheaply (opens the file, reads one attribute). Lets a
 * command that takes traces also take a graph store. Never fails. Local. */
lsim_store_kind lsim_store_probe(const char *path);

/* What a lumosim file of kind k is ("graph store", "result archive",
 * "search result"); NULL for a kind that is not
 * lumosim's (LSIM_STORE_NOT_HDF5, LSIM_STORE_OTHER). Local. */
const char *lsim_store_kind_name(lsim_store_kind k);

/* The one refusal of PATH, a lumosim file of kind `is`, by a command that
 * takes `takes` (words: "a graph store", "traces or a graph store"): what
 * PATH is, what wrote it and what reads it, e.g. "se.h5: is a lumosim
 * search result (written by lumosim search -o), not a graph store: read it with
 * lumosim info or lumosim search --merge". Returns LSIM_EFORMAT; for a
 * kind that is not lumosim's, 0 with err untouched (the caller says what
 * it says of a foreign file). Local. */
int lsim_store_refuse_kind(const char *path, lsim_store_kind is, const char *takes, lsim_err *err);

/* ------------------------------------------------------------ graph stores */

/* Write n graphs (GPU i = graphs[i], in that order) to PATH. command_line is
 * stored as the created_by attribute (NULL: ""). source_paths[i] is read to
 * record its size and CRC-32 (zlib crc32 over the bytes of the file, gzip or
 * not); source_paths == NULL reads graphs[i]->source instead; a NULL entry
 * records no checksum (size -1). An unreadable source file is an LSIM_EIO
 * error. The graphs are not modified. Local. */
int lsim_store_write_graphs(const char *path, lsim_graph *const *graphs, size_t n, const char *command_line,
                            const char *const *source_paths, lsim_err *err);

/* The classes of datasets whose compression is chosen apart (by element
 * type: what compresses, and how fast, differs between them;
 * docs/store-performance.md has the figures behind the defaults). */
enum {
    LSIM_STORE_CLASS_BYTES, /* uint8: node kinds and flags, edge classes, phases */
    LSIM_STORE_CLASS_IDS,   /* 32-bit integers: string ids, processors, edge sources, iterations */
    LSIM_STORE_CLASS_INT64, /* 64-bit integers: times, durations, delays, offsets, counts */
    LSIM_STORE_CLASS_FLOAT, /* float64: duty cycles, errors, means */
    LSIM_STORE_CLASS_CHARS, /* string tables' bytes (strings/chars) and fixed-length strings */
    LSIM_STORE_NCLASSES
};
/* A class's filter (lsim_store_write_opts.filters): every chunk keeps its
 * Fletcher-32 checksum whatever the choice. */
#define LSIM_STORE_FILTER_DEFAULT 0  /* the default for the class */
#define LSIM_STORE_FILTER_NONE (-1)  /* no compression */
#define LSIM_STORE_FILTER_SHUFFLE (-2) /* byte shuffle only (no compression) */
/* 1..9: byte shuffle + deflate (zlib) at that level */

/* The same with options (NULL: defaults). deflate_level: 0 = the default
 * per class (filters below), 1..9 = shuffle + zlib at that level for every
 * class, -1 = no compression. filters[k], when not 0, sets class k's filter
 * (over deflate_level). */
typedef struct lsim_store_write_opts {
    const char *command_line;
    const char *const *source_paths;
    int deflate_level;
    int filters[LSIM_STORE_NCLASSES];
} lsim_store_write_opts;

int lsim_store_write_graphs_ex(const char *path, lsim_graph *const *graphs, size_t n,
                               const lsim_store_write_opts *opts, lsim_err *err);

/* Streamed writing, for stores too large to hold every graph in memory
 * (lumosim synth): open, add the GPUs in batches (GPU order = order of the
 * calls), close. Only one batch needs to be in memory at a time; the store
 * read back is the same as lsim_store_write_graphs of all the graphs (the
 * datasets grow in fixed 64 Ki-row chunks instead of being sized up front).
 * The file is PATH.tmp-<pid> until close renames it; abort (or a failed add
 * followed by abort) removes it. source_paths (may be NULL) are checksummed
 * as in lsim_store_write_graphs; opts->source_paths is ignored.
 * Ownership: open allocates *out; close and abort free it (close also on
 * failure). Graphs are borrowed for the duration of the add. Local. */
typedef struct lsim_store_writer lsim_store_writer;
int lsim_store_writer_open(const char *path, const lsim_store_write_opts *opts, lsim_store_writer **out,
                           lsim_err *err);
int lsim_store_writer_add(lsim_store_writer *w, lsim_graph *const *graphs, size_t n, const char *const *source_paths,
                          lsim_err *err);
/* The same, collective over comm (lumosim synth under mpirun): every rank
 * of comm calls open, add, set_attr (same names and texts), close and
 * abort together, the same number of times; the error of the lowest
 * failing rank is everyone's (a caller agrees its own failures before the
 * next call, e.g. lsim_mpi_agree). Each add is one round: rank 0's graphs
 * of the call, then rank 1's, and so on (n may differ per rank, 0
 * allowed), so the store is the serial writer's of all the graphs in that
 * order (same datasets, chunks and filters). Each rank holds only its
 * batch and the index entries of its own GPUs. */
/* Add with shared structure: same_as (NULL: none) gives per graph -1, or
 * the index in the store of an earlier GPU (added before, or earlier in
 * this round) whose node columns and incoming edges equal this graph's
 * (lsim_graph_same_structure) and that has rows of its own: the graph's
 * node and edge rows are then not written again, its offsets point at
 * that GPU's (docs/hdf5-schema.md, "Shared structure"). The caller vouches
 * for the equality; the writer checks the counts (LSIM_EARG).
 * Shared strings: str_base (NULL: none) gives per graph NULL or the graph
 * of GPU same_as[i] as the caller holds it; when its string table has as
 * many strings, the graph's table is written as that GPU's with only the
 * strings that differ in rows of its own (/gpus/strings_like,
 * /strings/id). The writer finds the differences itself; the GPU must
 * have written its string table whole. Collective like
 * lsim_store_writer_add. */
int lsim_store_writer_add_ex(lsim_store_writer *w, lsim_graph *const *graphs, size_t n,
                             const char *const *source_paths, const int64_t *same_as,
                             const lsim_graph *const *str_base, lsim_err *err);
int lsim_store_writer_open_mpi(const char *path, MPI_Comm comm, const lsim_store_write_opts *opts,
                               lsim_store_writer **out, lsim_err *err);
int lsim_store_writer_close(lsim_store_writer *w, lsim_err *err);
void lsim_store_writer_abort(lsim_store_writer *w);
/* A string attribute on the store's root, written at close (e.g. "whatif":
 * the JSON record of what a transformation changed; `lumosim info` prints
 * it). name: 1..64 letters, digits or '_', not one of the store's own
 * (schema_version, kind, lumosim_version, created_by, latency_mode);
 * setting a name again replaces its text; at most LSIM_STORE_MAX_ATTRS.
 * LSIM_EARG / LSIM_ENOMEM. */
#define LSIM_STORE_MAX_ATTRS 8
int lsim_store_writer_set_attr(lsim_store_writer *w, const char *name, const char *text, lsim_err *err);
/* The GPU every graph names (its trace's deviceProperties), what a store's
 * root attribute "device" holds: 1 with the name in dev (cap bytes) when
 * all n name the same one, else 0. Local. */
int lsim_store_job_device(lsim_graph *const *graphs, size_t n, char *dev, size_t cap);

/* The string attribute `name` of the root of a graph store or result file.
 * *text: caller frees. LSIM_EARG when absent, LSIM_EFORMAT when not a
 * string, LSIM_EIO/LSIM_EFORMAT when the file cannot be opened. Local. */
int lsim_store_read_attr(const char *path, const char *name, char **text, lsim_err *err);

/* Read GPUs [first_gpu, first_gpu + count) (count = SIZE_MAX: to the end).
 * Only those GPUs' rows are read. *out gets an array of *nout graphs (each
 * identical to the graph written, its outgoing CSR rebuilt from the incoming
 * one, ordered by target node within each source), or NULL when *nout is 0.
 * first_gpu past the end, or a range past it, is LSIM_EARG. Local. */
int lsim_store_read_graphs(const char *path, size_t first_gpu, size_t count, lsim_graph ***out, size_t *nout,
                           lsim_err *err);

/* The same with flags: LSIM_STORE_READ_SHARE makes GPUs whose node and
 * edge rows are one (a store's shared structure, docs/hdf5-schema.md)
 * share one copy of them in memory (graph.h, share_refs): for readers that
 * simulate without changing the graphs, or change them only through the
 * functions that unshare first. Without it every graph owns its
 * structure, as lsim_store_read_graphs gives them. Local. */
#define LSIM_STORE_READ_SHARE 1
/* LSIM_STORE_READ_NO_BIND: the graphs will be simulated by engines without
 * the deciding edges (lsim_run_opts.no_bind, engine.h), so the memory check
 * before reading counts LSIM_MEM_BIND_B bytes a node less (memlimit.h).
 * It changes nothing read. */
#define LSIM_STORE_READ_NO_BIND 2
/* LSIM_STORE_READ_ARCHIVE: the run will write a result archive (sim -o),
 * so the memory check counts LSIM_MEM_WRITE_B bytes more for each node of
 * a GPU with a structure of its own (memlimit.h). Changes nothing read. */
#define LSIM_STORE_READ_ARCHIVE 4
/* LSIM_STORE_READ_ONE_PROCESS: the reader runs in one process only (replay,
 * report: refused under mpirun), so a memory refusal does not advise
 * mpirun (memlimit.h, ranks 0). Changes nothing read. */
#define LSIM_STORE_READ_ONE_PROCESS 8
/* LSIM_STORE_READ_CPU_OPS: also each traced GPU's CPU op tree when the store
 * keeps it (/cpu_ops; lsim_graph.cpu_ops), for a predicted trace that writes
 * every CPU op whole; other reads leave it (48 bytes per op) unread. */
#define LSIM_STORE_READ_CPU_OPS 16
/* LSIM_STORE_READ_REDUCED: the graphs will be simulated with the symmetry
 * reduction (serial sim, symmetry.h): the memory check counts a GPU that
 * shares another's structure by its collective kernels, at
 * LSIM_MEM_MATCH_B each (no engine of its own; memlimit.h). A run that
 * then does not reduce checks its engines before
 * making them (lsim_run.sized_reduced). */
#define LSIM_STORE_READ_REDUCED 32
int lsim_store_read_graphs_ex(const char *path, size_t first_gpu, size_t count, int flags, lsim_graph ***out,
                              size_t *nout, lsim_err *err);

/* lsim_store_read_graphs_ex, telling progress(ctx, part, done, total) as
 * it goes (may be NULL): "reading columns" (each of the store's columns
 * read for every GPU asked), then "checking GPUs" (each GPU's graph
 * assembled and validated). It must return quickly and call no MPI (the
 * caller's terminal line, issue 39: 98,304 GPUs load in 18 s). Local. */
typedef void (*lsim_store_progress_fn)(void *ctx, const char *part, size_t done, size_t total);
int lsim_store_read_graphs_progress(const char *path, size_t first_gpu, size_t count, int flags,
                                    lsim_store_progress_fn progress, void *ctx, lsim_graph ***out, size_t *nout,
                                    lsim_err *err);

/* Free what lsim_store_read_graphs* returned (graphs and the array). */
void lsim_store_free_graphs(lsim_graph **graphs, size_t n);

/* Number of GPUs in a graph store. Local. */
int lsim_store_count_gpus(const char *path, size_t *n, lsim_err *err);

/* The per-GPU index of a graph store, without the graphs: enough to
 * partition GPUs over MPI ranks (by node count, by rank) before reading. */
typedef struct lsim_store_gpu_info {
    int32_t rank;            /* distributedInfo.rank or -1 */
    char *source;            /* trace path as built */
    int64_t source_size;     /* bytes, -1 unknown */
    uint32_t source_crc32;   /* valid when source_size >= 0 */
    uint64_t nodes, edges, procs, iters, colls, strings;
} lsim_store_gpu_info;

int lsim_store_gpu_table(const char *path, lsim_store_gpu_info **out, size_t *n, lsim_err *err);
void lsim_store_gpu_table_free(lsim_store_gpu_info *t, size_t n);

/* Collective variants. Write: each rank passes its own graphs (n may differ
 * per rank, 0 allowed); GPU order in the file is rank 0's graphs, then rank
 * 1's, and so on; the result is byte-for-byte the same dataset contents as
 * the serial write of all graphs in that order. Read: each rank names its own
 * range (ranges may overlap or be empty). */
int lsim_store_write_graphs_mpi(const char *path, MPI_Comm comm, lsim_graph *const *graphs, size_t n,
                                const char *command_line, const char *const *source_paths, lsim_err *err);
int lsim_store_write_graphs_mpi_ex(const char *path, MPI_Comm comm, lsim_graph *const *graphs, size_t n,
                                   const lsim_store_write_opts *opts, lsim_err *err);
int lsim_store_read_graphs_mpi(const char *path, MPI_Comm comm, size_t first_gpu, size_t count,
                               lsim_graph ***out, size_t *nout, lsim_err *err);
/* Collective read under any GPU-to-rank mapping: this rank reads GPUs
 * gpus[0..n) (strictly ascending global indices, n may be 0); (*out)[i] is
 * GPU gpus[i]. Only those GPUs' rows are read (one hyperslab per run of
 * consecutive GPUs). An index past the end or out of order is LSIM_EARG. */
int lsim_store_read_graph_list_mpi(const char *path, MPI_Comm comm, const size_t *gpus, size_t n,
                                   lsim_graph ***out, size_t *nout, lsim_err *err);
/* With flags (LSIM_STORE_READ_SHARE, above). Collective. */
int lsim_store_read_graph_list_mpi_ex(const char *path, MPI_Comm comm, const size_t *gpus, size_t n, int flags,
                                      lsim_graph ***out, size_t *nout, lsim_err *err);

/* ------------------------------------------------------------ result files */

/* The level of detail of a run in a result archive (its attribute
 * "detail"; docs/hdf5-schema.md, "Level of detail"):
 *   NODES    everything: the per-GPU, iteration, kernel, duty and
 *            critical-path tables, every node's simulated start and end and
 *            the in-edges that decided them (nodes/bind_*), and the graphs
 *            (when embedded)
 *   OPS      the same without nodes/bind_*: every op's simulated times with
 *            its graph (what Results.node_table, lumosim report and
 *            --trace-out read; only the predicted trace's flow arrows need
 *            bind_*)
 *   SUMMARY  the per-GPU, iteration, kernel, duty and critical-path tables
 *            only: no per-node rows, no graphs */
typedef enum lsim_store_detail {
    LSIM_STORE_DETAIL_NODES = 0,
    LSIM_STORE_DETAIL_OPS = 1,
    LSIM_STORE_DETAIL_SUMMARY = 2
} lsim_store_detail;

/* "nodes", "ops", "summary"; parse: 0, or -1 for any other text. Local. */
const char *lsim_store_detail_name(lsim_store_detail d);
int lsim_store_detail_parse(const char *s, lsim_store_detail *out);

/* Configuration and counters of a run, stored as attributes. Everything
 * here except embed_graphs and replace lands in /runs/NAME/provenance
 * (allowed to differ between runs with equal results). All fields optional:
 * zero/NULL means "not recorded". */
typedef struct lsim_store_run_info {
    const char *command_line;
    double wall_seconds;                 /* total wall time, < 0 or 0: unknown */
    const char *const *phase_names;      /* e.g. "read", "build", "simulate" */
    const double *phase_seconds;         /* wall time per phase */
    size_t nphases;
    int mpi_ranks;                       /* 0: 1 */
    const char *mapping;                 /* GPU-to-MPI-rank mapping, free text */
    const char *host;                    /* NULL: gethostname() */
    const char *config;                  /* what-if parameters etc., free text/JSON */
    int embed_graphs;                    /* also store each GPU's graph under
                                            /runs/NAME/graph (graph-store layout) */
    int replace;                         /* a run of that name already in the
                                            file is replaced (else LSIM_EARG) */
    int deflate_level;                   /* as in lsim_store_write_opts */
    const char *graphs_from;             /* with embed_graphs: a graph store
                                            whose GPUs are exactly the items'
                                            graphs, unchanged since they were
                                            read from it (no ablation, no clock
                                            shift); its node, edge, processor,
                                            iteration, collective and string
                                            tables are then copied into the
                                            run as they are (compressed
                                            chunks, no re-encoding) instead of
                                            being written again. NULL: write */
    struct lsim_out **hold;              /* non-NULL: the finished archive stays
                                            under its temporary name, its lock
                                            held, and the output is handed over
                                            in *hold (rank 0; NULL on the other
                                            ranks) for the caller to commit
                                            (lsim_out_commit) once its other
                                            outputs have succeeded, or abort;
                                            read it back through
                                            lsim_out_file. On failure *hold is
                                            left NULL and nothing remains */
    const char *memory;                  /* last, so positional initializers stay valid:
                                            the job's memory estimate (memest.h JSON, the
                                            graph store's root attribute "memory"), kept as
                                            the run's attribute "memory"; NULL: none */
    int detail;                          /* lsim_store_detail: what the run keeps
                                            (0, LSIM_STORE_DETAIL_NODES: everything) */
    /* Progress of the write, NULL: none. Called on every rank as the
     * writer enters part k (1-based) of n ("sharing equal rows", "GPUs",
     * "iterations", "node rows", "kernels", "graphs"), with progress_ctx;
     * it must return quickly and call no MPI (the caller's terminal line,
     * issue 39). */
    void (*progress)(void *ctx, const char *part, int k, int n);
    void *progress_ctx;
    const char *network;                 /* sim --link-sharing's figures (the
                                            report's "network" object,
                                            lsim_report_network_text), kept
                                            as the run's attribute "network";
                                            NULL: none */
    const struct lsim_netshare_detail *network_rows; /* the same sweep's flows and
                                            links (netshare.h), kept as the
                                            run's net_flows and net_links
                                            tables; every rank holds the
                                            same rows; NULL: none */
} lsim_store_run_info;

/* Add run `run_name` (letters, digits, '_', '-', '.', '+', '=', ',';
 * 1..200 chars) with items[0..n) (GPU i = items[i]; items[i].r, start and
 * end are required; bind_start/bind_end are stored when every item has them;
 * cp when given) to the result file PATH: a missing PATH is created, an
 * existing result file keeps its other runs (copied into the new file), any
 * other existing file is refused (LSIM_EFORMAT) and left alone. Atomic. Local. */
int lsim_store_write_results(const char *path, const char *run_name, const lsim_replay_item *items, size_t n,
                             const char *command_line, double wall_seconds, lsim_err *err);
int lsim_store_write_results_ex(const char *path, const char *run_name, const lsim_replay_item *items, size_t n,
                                const lsim_store_run_info *info, lsim_err *err);

/* Collective variant: each rank passes the items of its own GPUs (GPU order
 * in the run: rank 0's, then rank 1's, ...; n may be 0). Rank 0 alone copies
 * the runs to keep from an existing file (POSIX I/O), then every rank writes
 * its rows of the new run through MPI-IO. info must be the same on every
 * rank (host and creation time are rank 0's). */
int lsim_store_write_results_mpi(const char *path, MPI_Comm comm, const char *run_name,
                                 const lsim_replay_item *items, size_t n, const lsim_store_run_info *info,
                                 lsim_err *err);

/* Collective, under any GPU-to-rank mapping: items[i] is GPU gpus[i] of the
 * run (gpus strictly ascending on each rank; the ranks' lists together must
 * be a permutation of 0..N-1, else LSIM_EARG on every rank). The file is
 * the same, dataset for dataset, as the serial write of all N items in GPU
 * order: the layout of the ranks never shows in the result. */
int lsim_store_write_results_mapped_mpi(const char *path, MPI_Comm comm, const char *run_name,
                                        const lsim_replay_item *items, const size_t *gpus, size_t n,
                                        const lsim_store_run_info *info, lsim_err *err);

/* One GPU of a run, as read back. */
typedef struct lsim_store_gpu_result {
    int32_t rank;
    char *source;
    uint64_t node_offset, node_count;    /* rows of this GPU in run->start/end */
    lsim_rank_report report;             /* as computed by lsim_metrics_compute;
                                            report.iters[k].name is the graph's
                                            string id; its text: iter_names[k] */
    char **iter_names;
    int has_cp;                          /* cp valid (nodes/via local to this GPU) */
    lsim_critical_path cp;
    const lsim_ns *start, *end;          /* into the run's arrays */
    const int64_t *bind_start, *bind_end; /* NULL when not stored */
    int coupled;                         /* simulated with the job's other ranks */
    lsim_ns clock_offset;                /* its estimated clock offset, ns */
    int has_place;                       /* the next three were stored (runs
                                            written before them: 0, and
                                            stage, replica -1) */
    int32_t stage, replica;              /* lsim_report_coords_of its graph, -1 unknown */
    int observed;                        /* its graph has observed times */
    uint64_t duty_offset[2], duty_count[2]; /* its duty bins' rows, actual and
                                            predicted, in the run's duty/
                                            tables (read or not) */
} lsim_store_gpu_result;

typedef struct lsim_store_run {
    char *name;
    /* provenance (NULL / 0 / -1 when not recorded) */
    char *command_line, *lumosim_version, *host, *mapping, *config, *created;
    char *memory;                        /* memest.h JSON of the job simulated, NULL: none */
    char *network;                       /* the run's link-sharing figures (report.h,
                                            lsim_report_network_parse), NULL: none */
    double wall_seconds;
    char **phase_names;
    double *phase_seconds;
    size_t nphases;
    int mpi_ranks;
    /* counters (deterministic) */
    lsim_latency_mode latency;
    int latency_known;                   /* 1: every GPU ran in mode `latency`
                                            (0: "mixed", or not recorded) */
    uint64_t events;                     /* node-events simulated */
    /* data */
    size_t ngpus;
    lsim_store_gpu_result *gpus;
    size_t nnodes;
    lsim_ns *start, *end;                /* nnodes, GPU by GPU in graph node order */
    int64_t *bind_start, *bind_end;      /* NULL when not stored */
    lsim_graph **graphs;                 /* ngpus embedded graphs, or NULL */
    lsim_store_detail detail;            /* the run's level of detail (NODES when
                                            the attribute is absent: older runs) */
} lsim_store_run;

/* Names of the runs in a result file, in name order. *names: array of owned
 * strings (free each, then the array). Local. */
int lsim_store_list_runs(const char *path, char ***names, size_t *n, lsim_err *err);

/* Read run `run_name` whole (NULL: the file must hold exactly one run, or
 * the error lists them; no collective variant yet). With the embedded
 * graphs, an lsim_replay_item per GPU
 * is {run->graphs[i], &gpus[i].report, gpus[i].start, gpus[i].end,
 * gpus[i].bind_start, gpus[i].bind_end, has_cp ? &gpus[i].cp : NULL}. Local. */
int lsim_store_read_results(const char *path, const char *run_name, lsim_store_run **out, lsim_err *err);
/* The same, with flags: LSIM_STORE_READ_NO_TIMES leaves out the per-node
 * times (start, end, bind_start, bind_end stay NULL), which reports do not
 * use: 32 bytes per node less to read and hold. A run written at
 * LSIM_STORE_DETAIL_SUMMARY reads as with this flag (and without graphs):
 * its detail field says so. */
#define LSIM_STORE_READ_NO_TIMES 1
/* LSIM_STORE_READ_NO_GRAPHS: nor the embedded graphs (run->graphs NULL):
 * the per-GPU table, iterations, duty cycles and critical paths only, read
 * in memory that does not grow with the graphs (lumosim report takes the
 * graphs of the GPUs it shows with lsim_store_read_gpu_details). */
#define LSIM_STORE_READ_NO_GRAPHS 2
/* LSIM_STORE_READ_RUN_CPU_OPS: the embedded graphs with their CPU op trees
 * (as LSIM_STORE_READ_CPU_OPS), for the predicted trace drawn from an
 * archive (sim --trace-out under mpirun). */
#define LSIM_STORE_READ_RUN_CPU_OPS 4
/* LSIM_STORE_READ_NO_DUTY: nor the duty cycles (nbins 0, arrays NULL):
 * 13,000 bins a GPU of a long step, 10 GB at 98,304 GPUs, which a summary
 * row (lumosim collect) does not use; lumosim report reads those of the
 * GPUs it shows (lsim_store_read_duty). */
#define LSIM_STORE_READ_NO_DUTY 8
int lsim_store_read_results_ex(const char *path, const char *run_name, int flags, lsim_store_run **out,
                               lsim_err *err);
void lsim_store_run_free(lsim_store_run *r);

/* The embedded graphs and simulated times (start, end; no bind_*) of the
 * GPUs gpus[0..n) (ascending) of run r as read from PATH (run_name as
 * given to that read), each checked against r's rows. *out: n details,
 * caller's (lsim_store_gpu_details_free). A run without graphs (--detail
 * summary) is LSIM_EARG. Local. */
typedef struct lsim_store_gpu_detail {
    lsim_graph *graph;
    lsim_ns *start, *end; /* the GPU's node_count each */
} lsim_store_gpu_detail;
int lsim_store_read_gpu_details(const char *path, const char *run_name, const lsim_store_run *r, const size_t *gpus,
                                size_t n, lsim_store_gpu_detail **out, lsim_err *err);
void lsim_store_gpu_details_free(lsim_store_gpu_detail *d, size_t n);

/* The duty bins of GPUs gpus[0..n) (ascending) of run r, read with
 * LSIM_STORE_READ_NO_DUTY, into their reports (owned by r from here on,
 * as a full read gives them). Local. */
int lsim_store_read_duty(const char *path, const char *run_name, lsim_store_run *r, const size_t *gpus, size_t n,
                         lsim_err *err);

/* The run's kernels table summed over its GPUs by name: what
 * lsim_report_kernels_of gives from the graphs, read in pieces (memory
 * bounded by the distinct names and a chunk of rows). *have 0 (and nothing
 * allocated): the run has no kernels table (written before it). *out:
 * caller's (lsim_report_kernels_free). Local. */
int lsim_store_read_kernel_totals(const char *path, const char *run_name, lsim_report_kernel **out, size_t *n,
                                  int *have, lsim_err *err);

/* ------------------------------------------------------------ info */

/* Human-readable summary of a graph store or result file: kind, schema
 * version, provenance, per-GPU sizes and sources, per-dataset stored vs. raw
 * bytes; for results, each run's per-GPU window actual/predicted. Local. */
int lsim_store_info(const char *path, FILE *out, lsim_err *err);

/* ------------------------------------------------------------ search results */

/* What `lumosim search -o FILE.h5` records besides the candidates
 * (docs/hdf5-schema.md, "Search results"). Strings are borrowed. */
typedef struct lsim_search_file_info {
    const char *command_line, *model, *gpu;
    int gpus, global_batch, seq;
    double capacity; /* the GPU's memory, bytes (0: unknown) */
    double seconds;  /* wall time of the search */
    double budget;   /* --budget-seconds, 0: none */
    const char *from; /* --from JOB.h5 (search_from.h), NULL or "": a search of --model */
    int shard, shards; /* --shard I/N: this file simulated candidates i % N == I (N 0 or 1: all) */
    const char *job;   /* the job's options of a --model search (synth's, as given, space-separated;
                          NULL or "": none; files written before them read as "") */
    int by_step;       /* the ranking is by step time (--rank-by step), else by throughput; written as
                          /search's rank_by, not read back (--merge ranks by its own --rank-by) */
} lsim_search_file_info;

/* Write every candidate c[0..n) (refused ones with their reason and
 * message) and the ranking (indices into c, best first) to PATH, through a
 * temporary renamed into place; on failure nothing is left. The caller has
 * checked PATH (lsim_out_check, kind LSIM_OUT_SEARCH). 0, LSIM_EIO,
 * LSIM_ENOMEM, LSIM_EARG (a ranking entry out of range). Local: one process
 * writes it. */
int lsim_search_write_h5(const char *path, const lsim_search_file_info *info, const lsim_search_cand *c, size_t n,
                         const size_t *ranking, size_t nrank, lsim_err *err);

/* A search result read back (lumosim search --merge): what
 * lsim_search_write_h5 wrote. info's strings are owned by the struct;
 * cand[i].rule points at the what-if's static rule names. */
typedef struct lsim_search_file {
    lsim_search_file_info info;
    char *strs[5];             /* command line, model, gpu, from, job (owned) */
    lsim_search_cand *cand;    /* n, owned */
    size_t n;
} lsim_search_file;
/* 0, or LSIM_EIO / LSIM_EFORMAT naming PATH (not a search result, a
 * column missing or of the wrong size), LSIM_ENOMEM. Local. */
int lsim_search_read_h5(const char *path, lsim_search_file *out, lsim_err *err);
void lsim_search_file_free(lsim_search_file *f);
/* The N shards' files f[0..n) (read by lsim_search_read_h5, named
 * names[i] in messages) as the unsharded search: one file per shard I =
 * 0..N-1, each of the same search (space, model, GPU, job options, --from)
 * and enumeration; candidate i is taken from the shard that simulated it
 * (i mod N). *out: n candidates (malloc'd, the caller frees it), *secs the
 * longest shard's wall time. 0, LSIM_EARG (which file and why), LSIM_ENOMEM.
 * Local. */
int lsim_search_merge(const lsim_search_file *f, int n, char *const *names, lsim_search_cand **out, size_t *nout,
                      double *secs, lsim_err *err);

#endif
