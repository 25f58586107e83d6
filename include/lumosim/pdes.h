/* The conservative parallel engine (mpi/pdes.c).
 *
 * The GPUs of one job are split over the MPI ranks; each rank simulates its
 * own GPUs' graphs. Only collective arrival timestamps cross ranks, in
 * rounds: at the end of each, one MPI_Allgather carries every rank's
 * arrival count, earliest pending event, earliest possible next arrival and
 * a failure flag, and, when there are arrivals, one MPI_Allgatherv the
 * (instance, time) pairs. L, the lookahead, is the shortest transfer time of
 * any collective instance whose participants are on more than one rank
 * (computed at start-up from the matched collectives and the GPU-to-rank
 * layout: each rank's least over the instances it holds, then the least
 * over the ranks, the same on every rank): an arrival at t completes its
 * instance at >= t + L. A message names its instance by its id in the job
 * (job.h, inst_id): a rank holds only the instances its GPUs take part in
 * (lsim_mpi_job_match) and skips the others' messages. What a round runs is lsim_pdes_windows below; nothing is ever
 * rolled back. Every message is checked where it is created (its
 * instance's transfer >= L, its time >= the round's promised bound); a
 * violation is a fatal error on every rank. Results do not depend on the
 * number of ranks, the layout or the mode: each node's times are a function
 * of its predecessors only, and ties are broken by (time, global GPU, node).
 *
 * Collective over comm: every rank calls it with its own GPUs (possibly
 * none; together a partition of the job's GPUs). Ownership: everything
 * borrowed; everything allocated is freed before return. */
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
    double bounds_s;            /* this rank: computing the path bounds */
    double sync_s;              /* this rank: in the window-end collectives
                                   (waiting for the slowest rank included) */
} lsim_pdes_stats;

/* What bounds a window (docs/ARCHITECTURE.md, "The parallel engine").
 * READY (the default): a round runs every node whose inputs are final,
 *   whatever its time, then exchanges the arrivals it produced. Valid
 *   because a node's start and end are functions of its predecessors only
 *   (graph.h): once ready, nothing a later message brings can change it, and
 *   a message only completes a collective whose participants are not ready
 *   yet. Rounds = the depth of the chain of cross-rank collectives.
 * PATHS: the time window [T, B + L), B the earliest time any rank can still
 *   send an arrival, bounded per pending node by the shortest path of
 *   durations and delays to a cross-rank collective (path_bounds in
 *   pdes.c); never earlier than T. The classic protocol, for node models
 *   whose results would depend on the order of events. What the instances
 *   a round completed bound is known only to the ranks that hold them: one
 *   MPI_Allreduce per round with arrivals gives every rank the least.
 * START: the plain window [T, T + L) from the earliest pending event T.
 * Every mode gives the same results; only windows and time differ. */
typedef enum lsim_pdes_windows { LSIM_PDES_READY = 0, LSIM_PDES_PATHS = 1, LSIM_PDES_START = 2 } lsim_pdes_windows;

/* "ready", "paths", "start" -> mode (0), or -1 for anything else. Local. */
int lsim_pdes_windows_parse(const char *name, lsim_pdes_windows *mode);
const char *lsim_pdes_windows_name(lsim_pdes_windows mode);

typedef struct lsim_pdes_opts {
    lsim_ns lookahead_ns;      /* > 0 overrides L (tests provoke the violation) */
    lsim_pdes_windows windows;
    lsim_ns skew_ns;           /* testing: added to each window's promised
                                  bound, so the check at message creation
                                  must fire */
} lsim_pdes_opts;

/* job: matched over all GPUs of the job, with inst_of/obs_wait for this
 * rank's GPUs: by lsim_mpi_job_match (the instances of this rank's GPUs,
 * inst_id set) or whole (lsim_job_from_entries, inst_id NULL). gpu_ids[i]: global index of local
 * GPU i, whose engine is engines[i] (made from its graph, release times
 * already aligned). waits[i]: caller-allocated, one per node.
 * opts: NULL for the defaults (L from the job, READY rounds, no skew). */
int lsim_pdes_run(MPI_Comm comm, const lsim_job *job, const uint32_t *gpu_ids, lsim_engine *const *engines, size_t nlocal,
                  lsim_ns *const *waits, const lsim_pdes_opts *opts, lsim_pdes_stats *stats, lsim_err *err);

/* The agreement on a failure every rank returns (lsim_mpi_agree) is in
 * agree.h. */

#endif
