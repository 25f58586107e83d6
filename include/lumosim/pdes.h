/* The conservative parallel engine (mpi/pdes.c).
 *
 * The GPUs of one job are split over the MPI ranks; each rank simulates its
 * own GPUs' graphs. Only collective arrival timestamps cross ranks. Time
 * advances in windows [T, W = T + L): every rank processes its events that
 * start before W. L, the lookahead, is the shortest transfer time of any
 * collective instance whose participants are on more than one rank
 * (computed at start-up from the matched collectives and the GPU-to-rank
 * layout, the same on every rank); instances inside one rank complete there
 * and do not bound it. At the end of a window one MPI_Allgather carries
 * each rank's arrival count, its earliest pending event and a failure
 * flag, and, when there are arrivals, one MPI_Allgatherv the (instance,
 * time) pairs. A collective completes at max(arrivals) + transfer >= T + L
 * = W, so no event before W can depend on an arrival not yet received:
 * nothing is ever rolled back; the next window starts at the earliest
 * pending event, or at W when arrivals were exchanged (a completion is
 * never earlier than W). Every message is checked where it is created (its
 * instance's transfer must be >= L); a violation is a fatal error on every
 * rank. Results do not depend on the number of ranks or the layout: each
 * node's times are a function of its predecessors only, and ties are
 * broken by (time, global GPU, node).
 *
 * Collective over comm: every rank calls it with its own GPUs (possibly
 * none; together a partition of the job's GPUs). Ownership: everything
 * borrowed. */
#ifndef LUMOSIM_PDES_H
#define LUMOSIM_PDES_H

#include <mpi.h>

#include "lumosim/engine.h"
#include "lumosim/job.h"

typedef struct lsim_pdes_stats {
    lsim_ns lookahead;          /* L used */
    uint64_t windows;           /* synchronisation rounds */
    uint64_t messages;          /* arrival pairs exchanged (all ranks) */
    uint64_t allreduces;        /* MPI_Allreduce calls (start, end, buffer growth) */
    uint64_t allgathers;        /* MPI_Allgather(v) calls (one or two per window) */
} lsim_pdes_stats;

/* job: matched over all GPUs of the job (lsim_job_from_entries), with
 * inst_of/obs_wait for this rank's GPUs. gpu_ids[i]: global index of local
 * GPU i, whose engine is engines[i] (made from its graph, release times
 * already aligned). waits[i]: caller-allocated, one per node.
 * lookahead_ns > 0 overrides L (tests provoke the violation this way). */
int lsim_pdes_run(MPI_Comm comm, const lsim_job *job, const uint32_t *gpu_ids, lsim_engine *const *engines, size_t nlocal,
                  lsim_ns *const *waits, lsim_ns lookahead_ns, lsim_pdes_stats *stats, lsim_err *err);

/* Collective: the worst status over the ranks of comm; when it is an
 * error, err on every rank gets the message of the lowest failing rank (so
 * any rank can print it and all exit together, none left waiting). */
int lsim_mpi_agree(MPI_Comm comm, int rc, lsim_err *err);

#endif
