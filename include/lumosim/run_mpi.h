/* The run layer over MPI (mpi/run_mpi.c, in lumosim_mpi): the pieces a
 * program needs to simulate one job with its GPUs split over the ranks of a
 * communicator the CALLER passes (the library never uses MPI_COMM_WORLD on
 * its own): the distributed collective match and the parallel coupled run
 * (lsim_run_mpi_job), on the agreement of agree.h.
 *
 * Each function says whether it is collective (every rank of comm must call
 * it, in the same order) or local. */
#ifndef LUMOSIM_RUN_MPI_H
#define LUMOSIM_RUN_MPI_H

#include <mpi.h>

#include "lumosim/agree.h" /* lsim_mpi_agree */
#include "lumosim/job.h"
#include "lumosim/output.h"
#include "lumosim/pdes.h"
#include "lumosim/run.h"

/* Collective: every rank passes the collective entries of its own GPUs
 * (lsim_job_entries); every rank gets all ranks' entries, concatenated in rank order, in *all (allocated here,
 * the caller frees; *nall entries), their group names interned in names
 * (the caller's, outliving them). The exchange counts ENTRIES, through an
 * MPI derived datatype of one entry (MPI_Type_contiguous), not bytes, so it
 * holds 2^31 - 1 entries per rank and in total; past that it is refused
 * with LSIM_EARG and a message on every rank (no overflowed count). Any
 * failure is agreed (lsim_mpi_agree): all ranks return the same status.
 * The match before issue 20 (every rank matched the whole job from it);
 * kept for bench/bench_match.c, which measures the two against each other. */
int lsim_mpi_gather_entries(MPI_Comm comm, const lsim_job_entry *mine, size_t nmine, lsim_strtab *names,
                            lsim_job_entry **all, size_t *nall, lsim_err *err);

/* Collective: THE distributed collective match. Each rank passes its own
 * GPUs' graphs (graphs[i] is global GPU gpu_ids[i] of the job's ngpus;
 * together the ranks hold every GPU once). Each collective entry
 * (lsim_job_entries) goes to the owner rank its key (process group,
 * position) hashes to (MPI_Alltoallv); the owners match their keys with
 * the serial matcher (lsim_job_match_owned) and send every instance, with
 * all its participants, back to the ranks whose GPUs take part in it. So
 * each rank gets (*job: allocated here, the caller frees with
 * lsim_job_free; its graphs pointer is left NULL for the caller to set)
 * only those instances, numbered by their id in the job (job.h, inst_id),
 * inst_of and obs_wait for its own GPUs, and every GPU's clock offset: per
 * rank O(job / K) memory beyond the instances that cross ranks, where the
 * gather it replaced (lsim_mpi_gather_entries, then lsim_job_from_entries)
 * held the whole job's entries on every rank. Everything a rank holds
 * equals what that whole-job match gives for its GPUs (bench_match
 * --verify, test mpi:match_ranks). Counts are 64-bit; an exchange of more
 * than 2^31 - 1 records on one rank is refused on every rank (LSIM_EARG).
 * If p2p is not NULL it gets the number of this rank's own point-to-point
 * kernels left uncoupled. The status is agreed; a matching error is the
 * one first in (group, position) order, with the GPUs named by their
 * sources and ranks (exchanged for it): the line a serial match prints. */
int lsim_mpi_job_match(MPI_Comm comm, lsim_graph *const *graphs, const uint32_t *gpu_ids, size_t nlocal, size_t ngpus,
                       lsim_job **job, uint64_t *p2p, lsim_err *err);

/* Collective: rank 0's layout widths (l->tp, l->dp, from lsim_map_layout_of
 * on its GPU 0; rc its status) given to every rank, after agreeing on rc.
 * l->ngpus is each rank's own (the same everywhere). */
int lsim_mpi_bcast_layout(MPI_Comm comm, int rc, lsim_map_layout *l, lsim_err *err);

/* Collective: the ranks of one job simulated together on the parallel
 * engine (pdes.h). This rank holds GPUs gpus[0..run->n) of `total` in
 * run->graphs; afterwards run->job, engines, reports and items are filled
 * as by a serial coupled run (lsim_run_simulate), and run's phase times
 * set; *st gets the engine's statistics. Ownership as lsim_run. The status
 * is agreed: the same on every rank. */
int lsim_run_mpi_job(MPI_Comm comm, const lsim_run_opts *o, lsim_run *run, const size_t *gpus, size_t total,
                     const lsim_pdes_opts *popts, lsim_pdes_stats *st, lsim_err *err);

/* Collective: rank 0 runs fn(ctx, err) alone (e.g. writes the predicted
 * trace of the whole job) while every other rank keeps the names of the
 * files it creates registered (tmpfiles.h): the temporary and lock of
 * `held`, an output rank 0 began earlier (NULL on the other ranks, or
 * none), and those of every output fn begins. Rank 0 relays each name as it
 * appears and goes (lsim_out_set_watch). A SIGKILLed rank 0 then leaves
 * nothing once mpirun ends the others with SIGTERM (issue 40). fn is called
 * on rank 0 only; the status is rank 0's, agreed on every rank. */
int lsim_mpi_rank0_writes(MPI_Comm comm, const lsim_out *held, int (*fn)(void *ctx, lsim_err *err), void *ctx,
                          lsim_err *err);

#endif
