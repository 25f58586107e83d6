/* Private to the HDF5 graph store and result archive (io/h5_*.c; API:
 * include/lumosim/store.h; schema: docs/hdf5-schema.md).
 *
 *   h5_util.c     HDF5 plumbing: the call context and its error capture,
 *                 the MPI agreement, types, attributes, chunked/compressed
 *                 columns and row selections, per-GPU record tables, the
 *                 temporary-file life cycle (create, open, check, rename)
 *   h5_graph.c    the graph store: graph tables, write and read
 *   h5_stream.c   the streaming graph-store writer (lsim_store_writer)
 *   h5_archive.c  the result archive: runs, written and read from one
 *                 column table
 *   h5_info.c     probe, root attributes, `lumosim info`
 *
 * One code path for serial and MPI I/O: a writer or reader always handles
 * a range (or list) of "local" GPUs out of the file's global GPU list. The
 * serial functions are the one-process case (POSIX driver, no MPI calls);
 * the _mpi ones open the file with the MPI-IO driver, make metadata
 * operations collective and transfer raw data collectively, every rank
 * selecting only its own rows (an empty selection when it has none). Every
 * collective HDF5 call is reached by all ranks in the same order: a rank
 * that failed locally agrees the failure with the others (h5s_agree)
 * before the next collective call instead of skipping it. Functions marked
 * "Collective in MPI mode" below must be called by every rank of c->comm
 * when c->mpi is set; the others are local.
 *
 * Errors: functions returning int give 0 or a negative LSIM_E* code with
 * c->e filled ("PATH: ..."); h5s_ctx_done copies it to the caller's err.
 * Memory: nothing here keeps what it is given; returned arrays are the
 * caller's (free / h5s_free_strs). Every malloc, calloc and realloc goes
 * through the seam (alloc.h), so that tests/unit/test_store_oom.c can make
 * each one fail. */
#ifndef LUMOSIM_H5_INTERNAL_H
#define LUMOSIM_H5_INTERNAL_H

#include "lumosim/alloc.h"
#include "lumosim/output.h"
#include "lumosim/store.h"

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

/* Chunk rows of the flat tables: at most 128 Ki rows (1 MiB of 8-byte
 * values). Under mpirun HDF5 writes a compressed chunk from the one rank
 * that owns it, which gathers the whole chunk and its filtered copy: 8 MiB
 * chunks cost that rank 57 MiB at K = 8 on the 1,024-GPU job (massif),
 * more than its share of the job itself. */
#define CHUNK_MAX_ROWS ((uint64_t)1 << 17)
/* sizeof a struct field. */
#define FSZ(type, f) sizeof(((type *)0)->f)

/* ------------------------------------------------------------ context */

typedef struct sctx {
    const char *path;   /* the user's path, for messages */
    lsim_err e;         /* this process's error; copied out at the end */
    hid_t file;
    hid_t dxpl;         /* H5P_DEFAULT, or collective MPI-IO transfers */
    int mpi;
    MPI_Comm comm;
    int rank, size;
    int filt[LSIM_STORE_NCLASSES]; /* writers: each class's filter (LSIM_STORE_FILTER_*, 1..9 deflate) */
    H5E_auto2_t old_fn; /* HDF5's error printer, restored on exit */
    void *old_data;
    lsim_out *out;      /* rank 0: the output in progress (output.h), NULL elsewhere */
    int tmp_slot[2];    /* other ranks: the temporary's and the lock's names
                           registered with tmpfiles.h while the collective
                           write runs (a rank that mpirun ends after rank 0
                           was SIGKILLed removes them), -1 none */
    lsim_out **hold;    /* results: leave the file under its temporary name and
                           hand the output to the caller (lsim_store_run_info.hold) */
    const size_t *gids; /* collective writes/reads under a GPU-to-rank mapping:
                           this process's global GPU indices, ascending;
                           NULL = the contiguous block after the lower ranks' */
    size_t ngids;
    int share;          /* graph reads: GPUs with the same node and edge rows
                           share one copy in memory (LSIM_STORE_READ_SHARE) */
    int no_bind;        /* graph reads: the memory check leaves out the
                           engines' deciding edges (LSIM_STORE_READ_NO_BIND) */
    int archive;        /* graph reads: the memory check counts an archive's
                           write (LSIM_STORE_READ_ARCHIVE) */
    int reduced;        /* graph reads: the memory check counts sharing GPUs
                           as a reduced run holds them (LSIM_STORE_READ_REDUCED) */
    int one_proc;       /* graph reads: the reader cannot run under mpirun
                           (LSIM_STORE_READ_ONE_PROCESS) */
    int cpu_ops;        /* graph reads: also the CPU op trees
                           (LSIM_STORE_READ_CPU_OPS) */
    int no_duty;        /* result reads: without the duty cycles
                           (LSIM_STORE_READ_NO_DUTY) */
    lsim_store_progress_fn progress; /* graph reads: the read's progress
                           (lsim_store_read_graphs_progress), NULL: none */
    void *progress_ctx;
} sctx;

/* Set up c for one API call (mpi: collective over comm) and silence HDF5's
 * error printing until h5s_ctx_done, which closes what c holds, restores
 * the printer and, when rc != 0, copies c's error to err. */
void h5s_ctx_init(sctx *c, const char *path, int mpi, MPI_Comm comm);
int h5s_ctx_done(sctx *c, int rc, lsim_err *err);
/* Ask HDF5 not to register its atexit handler (store.h, "HDF5 library exit"). */
void h5s_quiet_exit(void);
/* "PATH: message" into c's error; returns code. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int h5s_fail(sctx *c, int code, const char *fmt, ...);
int h5s_nomem(sctx *c);
/* h5s_fail of "FMT: out of memory" (LSIM_ENOMEM) or "FMT: no space left on
 * the device" (LSIM_EIO) when HDF5's error stack names that cause, else
 * of FMT followed by otherwise (e.g. " (disk full?)") with code. */
int h5s_fail_cause(sctx *c, int code, const char *otherwise, const char *fmt, ...);
/* Global index of local GPU i (gfirst from h5s_gather_records). */
size_t h5s_gpu_at(const sctx *c, size_t gfirst, size_t i);
/* MPI: every rank learns whether any rank failed (rc != 0); the lowest
 * failing rank's error becomes everyone's. Serial: rc unchanged.
 * Collective in MPI mode. */
int h5s_agree(sctx *c, int rc);
/* Writers: each class's filter from the options (NULL: the defaults). */
void h5s_apply_opts(sctx *c, const lsim_store_write_opts *o);
/* Writers: dcpl := chunks of a dataset of file type ft named `name` get
 * its class's filters (c->filt) and Fletcher-32; 0 or -1. Local. */
int h5s_set_filters(const sctx *c, hid_t dcpl, hid_t ft, const char *name);

/* ------------------------------------------------------------ types */

/* Element types of columns: file type little-endian, memory type native. */
enum { T_U8, T_I32, T_U32, T_I64, T_U64, T_F64 };
/* Memory types of record fields (mcol.mk): 0, the column's own type; or a
 * C int / size_t field kept in an integer column (converted). */
enum { M_COPY = 0, M_INT = 100, M_SIZE };

hid_t h5s_ftype(int t);
hid_t h5s_mtype(int t);
size_t h5s_tsize(int t);
/* Fixed-length NUL-terminated string type holding len characters (caller
 * closes it), or -1. */
hid_t h5s_str_type(size_t len);
uint64_t h5s_min_u64(uint64_t a, uint64_t b);

/* ------------------------------------------------------------ attributes */

/* An attribute reader's or writer's "out of memory": told apart from a bad
 * or unwritable attribute, so that a run short of memory is not told that
 * its file is damaged (issue 40). */
#define H5S_NOMEM (-2)
/* Writers: 0 or -1 (put_attr_strs and h5s_label: H5S_NOMEM too). An
 * existing attribute of that name is replaced. */
int h5s_put_attr(hid_t loc, const char *name, hid_t ft, hid_t mt, hsize_t n, const void *val);
int h5s_put_attr_str(hid_t loc, const char *name, const char *s);
int h5s_put_attr_u64(hid_t loc, const char *name, uint64_t v);
int h5s_put_attr_i32(hid_t loc, const char *name, int32_t v);
int h5s_put_attr_f64(hid_t loc, const char *name, double v);
int h5s_put_attr_strs(hid_t loc, const char *name, const char *const *s, size_t n);
/* Readers: 1 = read, 0 = absent, -1 = present but unreadable or of the
 * wrong kind, H5S_NOMEM = out of memory. Strings are the caller's to free. get_attr_num reads an
 * integer as int64_t, or (is_float) an integer or float as double. */
int h5s_get_attr_str(hid_t loc, const char *name, char **out);
int h5s_get_attr_num(hid_t loc, const char *name, int is_float, void *out);
int h5s_get_attr_strs(hid_t loc, const char *name, char ***out, size_t *n);
int h5s_get_attr_f64s(hid_t loc, const char *name, double **out, size_t *n);
/* Attribute "columns" on the 2-D dataset dset: the names of its columns. */
int h5s_label(hid_t loc, const char *dset, const char *const *names, size_t n);
/* "cannot label WHAT columns" for a failed h5s_label (or a run of them:
 * rc their first failure), or out of memory. */
int h5s_label_fail(sctx *c, int rc, const char *what);

/* ------------------------------------------------------------ columns */

/* The rows of a flat table this process reads or writes: ascending,
 * non-overlapping ranges, packed back to back in the memory buffer (HDF5
 * transfers a union of hyperslabs in file order, so the buffer holds the
 * ranges in the order given). One range in the common case (a contiguous
 * block of GPUs); one or more per GPU under a round-robin or file mapping.
 * Not copyable once h5s_sel_one has pointed it at itself; h5s_sel_free
 * frees what h5s_sel_add allocated. */
typedef struct rowsel {
    size_t n, cap;
    uint64_t *off, *cnt;
    uint64_t rows;     /* sum of cnt */
    uint64_t o1, c1;   /* storage for a single range */
    int owned;
} rowsel;

void h5s_sel_one(rowsel *s, uint64_t off, uint64_t cnt);
void h5s_sel_free(rowsel *s);
int h5s_sel_add(sctx *c, rowsel *s, uint64_t off, uint64_t cnt);

/* Link-creation property list that creates missing parent groups. */
hid_t h5s_lcpl_parents(void);
/* Create dataset `name` (relative to loc) of total x width elements of
 * file type ft, chunked by `chunk` rows with its class's filters
 * (h5s_set_filters) + Fletcher-32 (chunk 0 or total 0: contiguous,
 * unfiltered), and write this process's rows sel from buf (memory type
 * mt). Collective in MPI mode (sel may be empty). */
int h5s_put_raw(sctx *c, hid_t loc, const char *where, const char *name, hid_t ft, hid_t mt, int width,
                uint64_t total, uint64_t chunk, const rowsel *sel, const void *buf);
/* h5s_put_raw in two steps, for a table written in rounds: create (the
 * dataset, caller closes, or -1 with the error set), then write rows sel
 * of it, as often as needed. Both collective in MPI mode. */
hid_t h5s_create_raw(sctx *c, hid_t loc, const char *where, const char *name, hid_t ft, int width, uint64_t total,
                     uint64_t chunk);
int h5s_write_rows(sctx *c, hid_t d, const char *where, const char *name, hid_t mt, int width, uint64_t total,
                   const rowsel *sel, const void *buf);
int h5s_put_col(sctx *c, hid_t loc, const char *where, const char *name, int t, int width, uint64_t total,
                uint64_t chunk, const rowsel *sel, const void *buf);
/* Open dataset `name` and check it is total x width elements of class cls
 * (strings: fixed length, *strsize gets the size). The dataset (caller
 * closes), or -1 with the error set. Collective in MPI mode. */
hid_t h5s_open_col(sctx *c, hid_t loc, const char *where, const char *name, H5T_class_t cls, int width,
                   uint64_t total, size_t *strsize);
/* Rows [off, off + cnt) of an opened dataset. Collective in MPI mode. */
int h5s_read_rows(sctx *c, hid_t d, const char *where, const char *name, hid_t mt, int width, uint64_t off,
                  uint64_t cnt, void *buf);
/* open_col + read + close: rows [off, off + cnt), or the rows sel.
 * Collective in MPI mode. */
int h5s_get_col(sctx *c, hid_t loc, const char *where, const char *name, int t, int width, uint64_t total,
                uint64_t off, uint64_t cnt, void *buf);
int h5s_get_col_sel(sctx *c, hid_t loc, const char *where, const char *name, int t, uint64_t total,
                    const rowsel *sel, void *buf);
/* A column of fixed-length strings as wide as the longest anywhere: this
 * process's rows sel (nloc in all) of total. Collective in MPI mode. */
int h5s_put_strings(sctx *c, hid_t loc, const char *where, const char *name, const char *const *s, size_t nloc,
                    uint64_t total, const rowsel *sel, uint64_t chunk);
/* Rows [first, first + cnt) of a string column of total rows; *out: cnt
 * strings (h5s_free_strs). Collective in MPI mode. */
int h5s_get_strings(sctx *c, hid_t loc, const char *where, const char *name, uint64_t total, uint64_t first,
                    size_t cnt, char ***out);
void h5s_free_strs(char **s, size_t n);

/* ------------------------------------------------------------ per-GPU records */

/* One column of a per-GPU record table: field (esz bytes) of a struct,
 * `width` elements of column type t. mk is the field's memory type:
 * M_COPY (the column's type; the bytes are copied), or M_INT / M_SIZE for a C int / size_t
 * field held in an integer column (width 1; converted on the way).
 * Initialisers that leave mk out get M_COPY. */
typedef struct mcol {
    const char *name;
    int t, width;
    size_t field, esz;
    int mk;
} mcol;

/* Write columns cols[] of records rec[0..nloc) (record size rsz), rows sel
 * of `total`, as datasets GROUP/NAME (chunk 0: contiguous). Collective in
 * MPI mode. */
int h5s_put_records(sctx *c, hid_t loc, const char *where, const char *group, const mcol *cols, size_t ncols,
                    const void *rec, size_t rsz, uint64_t total, const rowsel *sel, size_t nloc, uint64_t chunk);
/* h5s_put_records in rounds: create the datasets GROUP/NAME (d[0..ncols),
 * the caller closes those >= 0), then write rows sel of records
 * rec[0..nloc) into them, as often as needed. Collective in MPI mode. */
int h5s_create_records(sctx *c, hid_t loc, const char *where, const char *group, const mcol *cols, size_t ncols,
                       uint64_t total, uint64_t chunk, hid_t *d);
int h5s_write_records(sctx *c, const hid_t *d, const char *where, const char *group, const mcol *cols, size_t ncols,
                      const void *rec, size_t rsz, uint64_t total, const rowsel *sel, size_t nloc);
/* Read rows [first, first + cnt) of columns cols[] (datasets GROUP/NAME of
 * `total` rows) into records rec[0..cnt). Collective in MPI mode. */
int h5s_get_records(sctx *c, hid_t loc, const char *where, const char *group, const mcol *cols, size_t ncols,
                    void *rec, size_t rsz, uint64_t total, uint64_t first, size_t cnt);
/* LSIM_EINTERNAL when a column's field size does not match its type. */
int h5s_check_cols(sctx *c, const mcol *cols, size_t ncols);
/* Gather every rank's POD records (nloc of rsz bytes) to every rank in
 * global GPU order (rank order, or under c->gids each at its GPU's index,
 * checked to be a permutation). *all: malloc'd; *gfirst: index of this
 * rank's first record without a mapping. Serial: a copy. Collective in MPI
 * mode. */
int h5s_gather_records(sctx *c, const void *lm, size_t nloc, size_t rsz, void **all, size_t *ntot, size_t *gfirst);

/* The run's net_flows and net_links tables (io/h5_network.c) from rows
 * every rank holds alike (rank 0 writes them). Collective in MPI mode. */
struct lsim_netshare_detail;
int h5s_write_run_network(sctx *c, hid_t run, const char *where, const struct lsim_netshare_detail *d);

/* ------------------------------------------------------------ files */

/* zlib CRC-32 and size of the file at p (gzip or not: its bytes). */
int h5s_file_crc(sctx *c, const char *p, int64_t *size, uint32_t *crc);
/* schema_version, kind, lumosim_version and (non-NULL) created_by and
 * latency_mode on the root of c->file. */
int h5s_write_root_attrs(sctx *c, const char *kind, const char *command_line, const char *latency);
/* Start PATH's output on rank 0 (src/write/output.c) and give every rank the
 * temporary's name in tmp. Collective in MPI mode. */
int h5s_begin_tmp(sctx *c, unsigned flags, char *tmp, size_t tmplen);
/* c->dxpl := collective MPI-IO transfers. Collective. */
int h5s_collective_transfers(sctx *c);
/* Create PATH's temporary file as c->file (HDF5 1.10 format; MPI-IO with
 * collective metadata in MPI mode). Collective in MPI mode. */
int h5s_create_tmp(sctx *c, char *tmp, size_t tmplen);
/* Close c->file and rename it over PATH (or hand it over, c->hold); on
 * rc != 0 remove it. Collective in MPI mode. */
int h5s_finish_tmp(sctx *c, const char *tmp, int rc);
/* Open PATH read-only as c->file (regular files only). Collective in MPI
 * mode. */
int h5s_open_file(sctx *c);
/* Check the root's kind (want) and schema_version. Collective in MPI mode. */
int h5s_check_root(sctx *c, const char *want);
/* The lumosim kind a root `kind` attribute names (LSIM_STORE_OTHER for
 * none of lumosim's): lsim_store_probe's and h5s_check_root's one reading. */
lsim_store_kind h5s_kind_of(const char *attr);
/* In MPI mode, fapl := MPI-IO with collective metadata reads (and, write:
 * writes); serial: nothing. Local (the caller agrees the result). */
int h5s_fapl_mpio(sctx *c, hid_t fapl, int write);
/* A file-access property list for the HDF5 1.10 format (caller closes). */
hid_t h5s_fapl_v110(void);
/* Names of the links in group loc, in name order (h5s_free_strs). */
int h5s_list_links(sctx *c, hid_t loc, char ***out, size_t *n);

/* ------------------------------------------------------------ graph tables (h5_graph.c) */

/* Row kinds: the tables whose rows are flat over all GPUs. */
enum { RK_NODE, RK_EDGE, RK_PROC, RK_ITER, RK_COLL, RK_STR, RK_CHAR, RK_N };

/* One column of a graph table: a field of an array in lsim_graph (a plain
 * array, or one field of an array of structs). */
typedef struct gcol {
    const char *name;
    int t, rk;
    size_t ptr;    /* offsetof the array pointer in lsim_graph */
    size_t stride; /* bytes per row in memory */
    size_t field;  /* offset of the field in a row */
    size_t esz;    /* sizeof the field (checked against the type) */
    int optional;  /* a column stores written before it lack: read as
                      `none` in every row when absent (graph.h, the
                      training columns) */
    int64_t none;
} gcol;

/* The graph tables' columns (h5_graph.c): the node columns of
 * LSIM_GRAPH_COLUMNS (the training ones optional), nodes/in_off, 3 edge,
 * 4 processor, 3 iteration and 10 collective columns (checked where the
 * table is defined). */
#define H5S_COUNT_(f, type) +1
#define H5S_NGCOLS ((size_t)(0 LSIM_GRAPH_COLUMNS(H5S_COUNT_) + 22))
extern const gcol h5s_gcols[];
/* The columns of /gpus, over gmeta. */
extern const mcol h5s_gpu_cols[];
extern const size_t h5s_ngpu_cols;
extern const mcol h5s_gpu_mem_cols[]; /* optional: stores before them lack them */
extern const size_t h5s_ngpu_mem_cols;
/* /gpus/strings_like (shared strings, docs/hdf5-schema.md): optional,
 * written by the streaming writer only; absent reads as -1 everywhere. */
extern const mcol h5s_gpu_strlike_cols[];
extern const size_t h5s_ngpu_strlike_cols;

/* Per-GPU index and statistics (/gpus), one POD record per GPU. */
typedef struct gmeta {
    int32_t rank;
    int32_t world_size;
    uint8_t latency;
    int64_t source_size;
    uint32_t source_crc32;
    uint64_t off[RK_N], cnt[RK_N];
    int64_t t0, queued_gap_ns, launch_latency_ns;
    uint64_t launch_samples, prewindow, releases, sync_events_used;
    uint64_t edges_by_class[LSIM_E_NCLASSES], inferred_by_class[LSIM_E_NCLASSES], dropped[LSIM_DROP_NREASONS];
    uint64_t mem_events;
    int32_t mem_source, mem_device;
    int64_t mem_peak_allocated, mem_peak_reserved, mem_capacity;
    /* -1 when the GPU's string table is its own rows; else the earlier GPU
     * t whose table it is, except for the strings its own rows replace
     * (each row's id in /strings/id): shared strings. */
    int64_t strings_like;
    /* Not a column: the GPU's string count (cnt[RK_STR], or t's when its
     * strings are t's), set with same_as. */
    uint64_t nstr;
    /* Not a column: -1 when the GPU's node and edge rows are its own, else
     * the earlier GPU whose rows its offsets point at (shared structure,
     * docs/hdf5-schema.md); set by h5s_read_gpu_table and the writers. */
    int64_t same_as;
} gmeta;

/* LSIM_EINTERNAL when a column table does not match the structs. */
int h5s_check_layout(sctx *c);
/* Copy column k's rows of g into dst, packed. */
void h5s_pack(const gcol *k, const lsim_graph *g, size_t rows, char *dst);
/* Strings of graphs[0..n) (m[i].cnt[RK_STR] each) as the store holds them:
 * per-string offsets local to each GPU's bytes (o), and the bytes, each
 * string NUL-terminated (ch); with ids (may be NULL), each row's string id
 * (/strings/id). patch (may be NULL) gives per graph NULL (every string,
 * row k = id k) or the ids of the strings its rows hold (shared strings:
 * m[i].cnt[RK_STR] of them). */
void h5s_pack_strings(lsim_graph *const *graphs, const gmeta *m, size_t n, uint32_t *const *patch, uint64_t *o,
                      char *ch, uint32_t *ids);
/* The ids of GPU g's rows of /strings when its strings are another's
 * (m->strings_like >= 0): the ids of the strings of graph g that differ
 * from those of graph base (the same count), ascending, into ids (room for
 * the count); returns how many. */
size_t h5s_string_patches(const lsim_graph *g, const lsim_graph *base, uint32_t *ids);
/* The index entry of g (counts set, offsets 0, no source checksum). */
void h5s_meta_from_graph(gmeta *m, const lsim_graph *g);
uint64_t h5s_total_rows(const gmeta *m, size_t n, int rk);
/* Gather the per-GPU index to every rank, offsets set over all GPUs.
 * Collective in MPI mode. */
int h5s_gather_meta(sctx *c, const gmeta *lm, size_t nloc, gmeta **all, size_t *ngpu, size_t *gfirst);
/* Write the graph tables of all GPUs under loc: this process holds
 * graphs[0..nloc), local GPU i being GPU h5s_gpu_at(c, gfirst, i) of
 * m[0..ngpu); flat 0: only /gpus (the flat tables were copied). Collective
 * in MPI mode. */
int h5s_write_graph_tables(sctx *c, hid_t loc, const char *where, lsim_graph *const *graphs, size_t nloc,
                           const gmeta *m, size_t ngpu, size_t gfirst, const char *const *sources, int flat);
/* Column names on the 2-D /gpus datasets. */
int h5s_label_graph_tables(hid_t loc);
/* Read and check /gpus under loc (all GPUs); *out, *sources: caller's. */
int h5s_read_gpu_table(sctx *c, hid_t loc, const char *where, gmeta **out, char ***sources, size_t *ngpu);
/* Read GPUs [first, first + count) (count SIZE_MAX: to the end), or with
 * list GPUs list[0..count), of the graph tables under loc; *out: caller's
 * (lsim_store_free_graphs). Collective in MPI mode. */
int h5s_read_graph_tables(sctx *c, hid_t loc, const char *where, size_t first, size_t count, const size_t *list,
                          lsim_graph ***out, size_t *nout);

/* ------------------------------------------------------------ units and enum tables (h5_describe.c) */

/* Attributes `units` on every numeric dataset in the group loc (path
 * where, for messages) and the groups below it, and `enum_names` on the
 * enum columns, from the table in h5_describe.c: a numeric dataset it does
 * not know is LSIM_EINTERNAL. Collective in MPI mode (agreed). */
int h5s_describe(sctx *c, hid_t loc, const char *where);

/* ------------------------------------------------------------ result archive (h5_archive.c) */

/* Run group `run` (where: its path) without its per-GPU arrays: the
 * per-GPU table, sources and attributes (lumosim info). *out: caller's
 * (lsim_store_run_free). Local. */
int h5s_read_run_summary(sctx *c, hid_t run, const char *where, const char *name, lsim_store_run **out);
/* ------------------------------------------------------------ CPU op trees (h5_cpu_ops.c) */

/* Write /cpu_ops under loc for this process's graphs[0..nloc) (GPU gid[i],
 * ascending, of ngpu): every valid lsim_cpu_ops table; no GPU with one:
 * nothing. Collective in MPI mode. */
int h5s_write_cpu_ops(sctx *c, hid_t loc, const char *where, lsim_graph *const *graphs, const uint64_t *gid,
                      size_t nloc, uint64_t ngpu);
/* Attach to gs[0..count) (GPUs first + i, or list[i], ascending, of ngpu)
 * their tables from /cpu_ops under loc, each checked against its graph; no
 * group: nothing. Collective in MPI mode. */
int h5s_read_cpu_ops(sctx *c, hid_t loc, const char *where, lsim_graph **gs, size_t first, size_t count,
                     const size_t *list, uint64_t ngpu);

/* Rows of the 1-D dataset loc/name (at most 2^31), -1 with the error set. */
int64_t h5s_dset_rows(sctx *c, hid_t loc, const char *where, const char *name);
/* Open run run_name of the result file (NULL: its only run): *runs and *run
 * for the caller to close (-1 when not opened), where: "/runs/NAME". */
int h5s_open_run(sctx *c, const char *run_name, hid_t *runs, hid_t *run, char *where, size_t wlen);
/* GPU i's embedded graph against its run rows: node count, iteration
 * names, the critical path's edges. */
int h5s_check_run_graph(sctx *c, const char *where, size_t i, const lsim_graph *g, const lsim_store_gpu_result *x);

#endif
