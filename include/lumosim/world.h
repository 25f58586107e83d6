/* The processes of one lumosim command (io/run/world.c, in lumosim_io):
 * MPI below the command line. A command started by an MPI launcher (Open
 * MPI, PMIx, Slurm PMI) with more than one rank runs on every rank of
 * MPI_COMM_WORLD (on = 1); alone, or with one rank, it runs serially (on =
 * 0) and every function below is then local and does what one process
 * does. The program's commands hold an lsim_world and call these; they
 * name no MPI symbol themselves (tests/check_arch.py).
 *
 * Each function says whether it is collective when on (every rank calls
 * it, in the same order) or local. MPI's default error handler stays in
 * force (an MPI failure ends the job), so the reductions return nothing. */
#ifndef LUMOSIM_WORLD_H
#define LUMOSIM_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "lumosim/common.h"
#include "lumosim/output.h"
#include "lumosim/pdes.h"
#include "lumosim/run.h"
#include "lumosim/store.h"

typedef struct lsim_world {
    int on, rank, size; /* off: rank 0 of 1 */
} lsim_world;

/* MPI_Init when a launcher started this process with more than one rank
 * (one rank: MPI finalized at once, off). 0, or -1 when MPI_Init failed.
 * end: MPI_Finalize when on. Collective when on. */
int lsim_world_begin(lsim_world *w);
void lsim_world_end(lsim_world *w);

/* lsim_mpi_agree over the world (agree.h); off: rc. Collective. */
int lsim_world_agree(const lsim_world *w, int rc, lsim_err *err);

/* Element-wise reduction of v[0..n) in place over every rank (each gets
 * the result); off: nothing to do. Collective. */
typedef enum { LSIM_W_INT, LSIM_W_I64, LSIM_W_U64, LSIM_W_F64, LSIM_W_U8 } lsim_world_type;
typedef enum { LSIM_W_MIN, LSIM_W_MAX, LSIM_W_SUM } lsim_world_op;
void lsim_world_reduce(const lsim_world *w, void *v, size_t n, lsim_world_type t, lsim_world_op op);

/* Every rank's x on rank 0: *all (rank 0: w->size values, malloc'd,
 * the caller frees them with free; other ranks: NULL). 0 or LSIM_ENOMEM
 * (rank 0's, agreed). Collective. */
int lsim_world_gather_f64(const lsim_world *w, double x, double **all, lsim_err *err);

/* Per-GPU parts gathered on rank 0 in GPU order: each rank passes the n
 * GPUs it holds (their job indices gpus[i] < total), a text each (NUL-
 * terminated) and nwords words each; rank 0 gets text[g] and the words of
 * every GPU g of the job, each exactly once (else LSIM_EINTERNAL). Off:
 * the same from this process's GPUs. The texts of one rank stay under 2
 * GB, all of them too (LSIM_EARG, naming the report's way around it).
 * Rank 0's results are into one block that lsim_world_parts_free frees.
 * Collective; the status agreed. */
typedef struct lsim_world_parts {
    size_t total, nwords;
    const char **text;     /* rank 0: total entries; others NULL */
    const uint64_t *words; /* rank 0: total x nwords, GPU by GPU */
    char *buf_;
    uint64_t *hdr_;
    uint64_t *words_;
} lsim_world_parts;
int lsim_world_gather_parts(const lsim_world *w, char *const *text, const size_t *gpus, const uint64_t *words,
                            size_t nwords, size_t n, size_t total, lsim_world_parts *out, lsim_err *err);
void lsim_world_parts_free(lsim_world_parts *p);

/* The collective store, layout and run functions over the world (the
 * _mpi functions of store.h and run_mpi.h with MPI_COMM_WORLD). Collective;
 * only when on. */
int lsim_world_bcast_layout(const lsim_world *w, int rc, lsim_map_layout *l, lsim_err *err);
int lsim_world_write_graphs(const lsim_world *w, const char *path, lsim_graph *const *graphs, size_t n,
                            const lsim_store_write_opts *opts, lsim_err *err);
int lsim_world_read_graph_list(const lsim_world *w, const char *path, const size_t *gpus, size_t n, int flags,
                               lsim_graph ***out, size_t *nout, lsim_err *err);
int lsim_world_writer_open(const lsim_world *w, const char *path, const lsim_store_write_opts *opts,
                           lsim_store_writer **out, lsim_err *err);
int lsim_world_write_results(const lsim_world *w, const char *path, const char *run_name,
                             const lsim_replay_item *items, const size_t *gpus, size_t n,
                             const lsim_store_run_info *info, lsim_err *err);
int lsim_world_run_job(const lsim_world *w, const lsim_run_opts *o, lsim_run *run, const size_t *gpus, size_t total,
                       const lsim_pdes_opts *popts, lsim_pdes_stats *st, lsim_err *err);
int lsim_world_rank0_writes(const lsim_world *w, const lsim_out *held, int (*fn)(void *ctx, lsim_err *err), void *ctx,
                            lsim_err *err);
/* Wait for every rank. Collective. */
void lsim_world_barrier(const lsim_world *w);

#endif
