/* One job, all ranks: collectives matched across the GPUs' graphs, clock
 * offsets, and the coupled replay.
 *
 * Matching: the collective kernels of each GPU are keyed by (process group,
 * sequence number on that group) -- ranks of a group issue its collectives
 * in the same order (lsim_coll_info.seq, graph build). The group is the
 * kernel's process-group name when the trace names one, else the world group
 * (every GPU of the job). A position where the participants disagree
 * (different kinds, different sizes when both are known) or where a member
 * of the group has no collective is an error naming the group, the position
 * and the ranks -- never silently paired.
 *
 * Point to point: a send on GPU a to peer b and the matching recv on GPU b
 * form a 2-participant instance, keyed by the directed pair (group
 * "p2p:A->B", A and B the GPUs' ranks: lsim_graph.rank, else the GPU's index
 * in the job) and the position on that pair (the k-th send from A to B pairs
 * with the k-th recv on B from A, each GPU's p2p kernels taken in launch
 * order: lsim_coll_info.seq, then node id). A SENDRECV kernel with a known
 * peer pairs with the peer's SENDRECV on the undirected pair "p2p:A<->B"
 * (A < B). The peer comes from the kernel's process group:
 *   - pg_name "p2p:A->B" (synthesized graphs, lumosim synth) names the pair;
 *   - otherwise a process group of exactly two ranks (pg_ranks text such as
 *     "[3, 4]") that contains the GPU's own rank: the peer is the other one.
 * Kernels whose peer is unknown (Kineto traces without process-group
 * metadata) keep their traced durations, uncoupled, and are counted
 * (uncoupled_p2p). A send with no recv (or a recv with no send) at the same
 * position, sizes that differ, a kernel whose own rank is not the side of
 * the pair it claims: an error naming the GPUs, the pair and the position.
 *
 * Collective model (model latency mode): on each participant a collective
 * starts when it is locally ready (its arrival); all participants end at
 * max(arrival of every participant) + transfer, with the transfer time of the
 * instance taken from the trace: the observed duration of the participant
 * that arrived last (it waited least). Nodes that were never observed
 * (obs_start == LSIM_OBS_NONE, metrics.h: synthesized graphs) carry their
 * modelled duration in dur: an instance with such a participant transfers
 * in the longest dur of its participants, and takes no part in the clock
 * offsets. In observed latency mode the GPUs are
 * replayed independently with their traced durations (the exactness check).
 *
 * Rooted collectives (broadcast, reduce) whose root is known (the entries'
 * root, from the trace: lsim_coll_info.root through the group's ranks
 * list) end per participant, by who each one waits for (NCCL/RCCL's
 * broadcast root only pushes its data into its peers' buffers; a reduce's
 * non-roots push theirs towards the root):
 *   broadcast  root:     its own arrival + transfer (it waits for nobody);
 *              others:   max(arrival of every participant) + transfer;
 *   reduce     root:     max(arrival of every participant) + transfer;
 *              others:   max(arrival of every non-root) + transfer.
 * Why the others of a broadcast still wait for every participant and not
 * for the root alone: on the real 4-rank RCCL job (ddp4_mi300) the two
 * receivers that arrived before the last one ended with it in every
 * broadcast of 212 kB, and the root ended its own transfer after it
 * started in all six (docs/cost-models.md, "Rooted collectives"). A
 * broadcast or reduce whose root no participant names keeps the all-wait
 * rule and is counted (rootless_inst, lsim_job_rootless); participants
 * naming different roots, or a root that is not a participant, is an
 * error naming the group, the position and the ranks. The root of a
 * rooted instance takes no part in the clock offsets (it does not end
 * with the others), and observed waiting follows the same rule.
 *
 * Clock offsets: traces from different hosts may have offset clocks; matched
 * collectives finish together, so each rank's offset is the median, over its
 * collectives, of (its observed end - the median observed end of the
 * participants). The coupled replay shifts each rank's release times by
 * -offset so all ranks run on one clock.
 *
 * Ownership: lsim_job_match allocates *out (lsim_job_free releases it; on
 * failure *out is NULL); the graphs are borrowed and must outlive the job.
 * Local. */
#ifndef LUMOSIM_JOB_H
#define LUMOSIM_JOB_H

#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/strtab.h"

typedef struct lsim_job {
    size_t ngpus;
    lsim_graph *const *graphs;   /* borrowed; NULL (or NULL entries) for GPUs
                                    simulated by other MPI ranks */
    /* instances: participants [part_off[k], part_off[k+1]) */
    size_t ninst;
    uint64_t *part_off;
    uint32_t *part_gpu, *part_node;
    uint32_t *part_coll;         /* per participant: its node's collective
                                    record (where inst_of keeps it) */
    lsim_ns *transfer;           /* per instance */
    int32_t **inst_of;           /* per GPU, per collective record (its
                                    graph's colls[], which its collective
                                    nodes index by coll[v]): instance or -1;
                                    read through lsim_job_inst. Why not per
                                    node: 4 bytes a node of every GPU were a
                                    quarter of a big job's match, and
                                    collectives are a few per cent of nodes */
    lsim_ns **obs_wait;          /* per GPU, per node: observed waiting for
                                    peers (last arrival - own start), 0 else */
    lsim_ns *clock_offset;       /* per GPU */
    uint32_t ngroups;            /* process groups seen (p2p pairs included) */
    uint64_t uncoupled_p2p;      /* send/recv kernels left with traced durations
                                    (peer unknown) */
    uint64_t p2p_inst;           /* instances that are point-to-point pairs */
    uint8_t *rule;               /* per instance: lsim_job_rule */
    uint64_t *root;              /* per instance: the root's index into
                                    part_gpu/part_node (rule BCAST or REDUCE), 0 else */
    uint64_t rooted_inst;        /* broadcast/reduce instances with a known root */
    uint64_t rootless_inst;      /* broadcast/reduce instances without one (all wait) */
    /* A distributed match (lsim_mpi_job_match, run_mpi.h) holds only the
     * instances some GPU of this MPI rank takes part in, each with all its
     * participants: inst_id[k] is instance k's id in the whole job (the
     * same on every rank; ascending in k), ninst_job the job's instance
     * count. ngroups then counts nothing (0); ninst_job, p2p_inst,
     * rooted_inst and rootless_inst are the job's. A serial match: inst_id
     * NULL (instance k is k), ninst_job = ninst. */
    uint64_t *inst_id;
    uint64_t ninst_job;
} lsim_job;

/* Node v's instance, or -1: inst (the job's inst_of of the GPU whose graph
 * is g, or of a GPU with g's structure; NULL: -1) at v's collective record
 * when v is a collective node. Local. */
static inline int32_t lsim_job_inst(const int32_t *inst, const lsim_graph *g, size_t v)
{
    /* the flag first: collectives are a few per cent of the nodes, and the
     * engine has just read the flags of the node (sched_resolve) */
    if (!inst || !(g->flags[v] & LSIM_NF_COLL)) return -1;
    int32_t c = g->coll[v];
    return c >= 0 ? inst[c] : -1;
}

/* How an instance's participants end (above). */
typedef enum lsim_job_rule {
    LSIM_JOB_ALL = 0,      /* every participant: last arrival + transfer */
    LSIM_JOB_BCAST = 1,    /* broadcast with a known root */
    LSIM_JOB_REDUCE = 2,   /* reduce with a known root */
    LSIM_JOB_ROOTLESS = 3  /* broadcast/reduce whose root is unknown: as ALL */
} lsim_job_rule;

int lsim_job_match(lsim_graph *const *graphs, size_t n, lsim_job **out, lsim_err *err);

/* The same, telling progress(ctx, what, done, total) as it goes (may be
 * NULL): the GPUs whose collectives are listed, then the entries paired
 * into instances; a few hundred calls at most. Why: the match of a
 * 98,304-GPU job takes most of a minute (docs/scaling.md).
 *
 * parts > 1: the match in that many parts, for a job whose collectives'
 * sort does not fit at once (LSIM_MEM_MATCH_B a collective kernel,
 * memlimit.h). The collectives are listed once more to count each
 * group's, the groups cut in strcmp order of their names into `parts`
 * runs of about equal kernels, and each run listed and matched on its
 * own: the sort holds a part's entries only, the job's own arrays (the
 * participants and each GPU's instance slots) being made for the whole
 * job first. The job and any error are the same as with parts 1, array
 * for array; it costs parts + 1 listings of every GPU's nodes. 0 or 1:
 * one part. Local. */
typedef void (*lsim_job_progress_fn)(void *ctx, const char *what, size_t done, size_t total);
int lsim_job_match_ex(lsim_graph *const *graphs, size_t n, unsigned parts, lsim_job_progress_fn progress, void *ctx,
                      lsim_job **out, lsim_err *err);

/* The same in two steps, for GPUs spread over MPI ranks: each rank lists the
 * collective and coupled point-to-point kernels of its own graphs (gpu_ids: their global GPU indices,
 * NULL = 0..n-1), the ranks exchange the lists, and every rank matches the
 * whole job from them. node_count[i] > 0 for GPUs whose arrays (inst_of,
 * per collective record: coll_count[i] of them, and obs_wait, per node)
 * this process needs, 0 for the others (either NULL: none); ranks[i] and
 * sources[i] name GPU i in errors (either may be NULL). The entries are
 * read, not moved: they are matched in (group name in strcmp order,
 * position, GPU, node) order, equal keys in their given order, through an
 * order of their indices made while matching (28 bytes per entry for the
 * sort and at most 24 MiB more, freed before the job's per-node arrays are
 * made, then 8 per entry for the order). Local. */
#define LSIM_JOB_GROUP_MAX 64 /* a group name's bytes with its NUL, at most */
typedef struct lsim_job_entry {
    const char *group;    /* process-group name, NUL-terminated, shorter
                             than LSIM_JOB_GROUP_MAX; "" = world;
                             "p2p:A->B" or "p2p:A<->B" for point-to-point
                             pairs. Borrowed: interned in the names table
                             lsim_job_entries was given, or the caller's.
                             Why not the text in the entry: 64 bytes of 136,
                             the largest part of a 65,536-GPU job's match. */
    int64_t seq;          /* position on the group (on the pair for p2p) */
    uint32_t gpu, node;
    uint32_t coll;        /* the node's collective record (graph.h coll[v]):
                             where inst_of keeps its instance */
    uint8_t kind;
    uint8_t observed;     /* obs_start/obs_end are real observations */
    int32_t group_size;
    int64_t bytes;
    lsim_ns obs_start, obs_end;
    lsim_ns dur;          /* the node's simulation duration (modelled when
                             not observed) */
    int32_t rank;         /* the GPU's rank (names it in errors) */
    int32_t root;         /* broadcast/reduce: the root's rank (the same
                             numbering as rank), -1 unknown */
} lsim_job_entry;

/* *p2p (may be NULL) is incremented by the number of send/recv kernels
 * whose peer is unknown (left uncoupled). The entries' group names are
 * interned in names (the caller's; it must outlive the entries). Fails
 * (LSIM_ETRACE) when a p2p kernel names a pair its GPU is not the right
 * side of. */
int lsim_job_entries(lsim_graph *const *graphs, const uint32_t *gpu_ids, size_t n, lsim_strtab *names,
                     lsim_job_entry **out, size_t *nout, uint64_t *p2p, lsim_err *err);
int lsim_job_from_entries(const lsim_job_entry *entries, size_t ne, size_t ngpus, const int32_t *ranks,
                          const char *const *sources, const size_t *node_count, const size_t *coll_count,
                          lsim_job **out, lsim_err *err);
void lsim_job_free(lsim_job *j);

/* The owner's half of the distributed match (run_mpi.c): entries[0..ne)
 * hold every participant of the (group, position) keys they contain, of a
 * job of ngpus GPUs; they are matched and checked exactly as
 * lsim_job_from_entries does (ranks, sources: of every GPU of the job,
 * either may be NULL), so an error is the same line. The entries are not
 * moved: order (caller-allocated, ne) gets the sorted order, order[p] the
 * index in entries of the p-th entry in (group, position, GPU, node)
 * order. *out gets the instances only (no per-node arrays); instance k's
 * participants are the sorted positions [part_off[k], part_off[k+1]),
 * i.e. entries[order[p]]. ediff (caller-allocated, ne) gets, per sorted
 * position, its entry's term of its GPU's clock offset (its observed end
 * minus the median end of its instance's participants), INT64_MIN when it
 * has none. On failure *fail_at is the sorted position of the first entry
 * of the instance that failed (order is then filled), SIZE_MAX when the
 * failure is no instance's (memory, an entry out of range): the ranks
 * agree on the failure first in (group, position) order, which is the one
 * a serial match reports. Local. */
int lsim_job_match_owned(const lsim_job_entry *entries, size_t ne, size_t ngpus, const int32_t *ranks,
                         const char *const *sources, size_t *order, lsim_ns *ediff, size_t *fail_at, lsim_job **out,
                         lsim_err *err);

/* Shift each GPU's release times by -clock_offset (in place, once; a
 * graph sharing its structure gets its own copy first). 0, or
 * LSIM_ENOMEM. Local. */
int lsim_job_align_clocks(lsim_job *j, lsim_err *err);

/* Run the engines of all GPUs of the job together (engines[i] was made from
 * graphs[i]); collectives end as described above. Afterwards each engine's
 * start/end/bind arrays hold that GPU's results, and waits[i][v] (if waits
 * is non-NULL; caller-allocated, g->n each) the simulated time node v spent
 * waiting for peers. Deterministic: ties are broken by (time, GPU, node),
 * keys that do not depend on any process layout. Fails with LSIM_EINTERNAL
 * naming the instance if a collective can never complete. Local. */
int lsim_job_run(const lsim_job *j, lsim_engine *const *engines, lsim_ns *const *waits, lsim_err *err);
/* The same, telling progress(ctx, "simulating", nodes done, nodes in all)
 * as it goes (every Mi nodes and at the end; may be NULL; it must return
 * quickly: a terminal line, issue 39). Local. */
int lsim_job_run_ex(const lsim_job *j, lsim_engine *const *engines, lsim_ns *const *waits,
                    lsim_job_progress_fn progress, void *ctx, lsim_err *err);

/* The observed waiting of every participant (j->obs_wait, on the aligned
 * clocks; GPUs whose obs_wait is NULL skipped), by the one rule the replay
 * follows: an instance with an unobserved participant has none; a
 * broadcast's root waits for nobody, a reduce's non-roots for the last
 * non-root, everyone else for the last arrival; clamped to [0, duration].
 * part(ctx, a, o) gives participant a (an index of j->part_off's ranges).
 * Serial (lsim_job_from_entries) and parallel (run_mpi.c) matching both
 * call it. Local. */
typedef struct lsim_job_obs {
    uint32_t gpu, node;
    uint8_t observed;
    lsim_ns obs_start, obs_end;
} lsim_job_obs;
typedef void (*lsim_job_part_fn)(const void *ctx, uint64_t a, lsim_job_obs *o);
void lsim_job_observed_waits(lsim_job *j, lsim_job_part_fn part, const void *ctx);

/* The same waits, recovered after a run from GPU gpu's start and end arrays
 * (g: its graph, or one with its structure; g->n nodes): a collective of
 * instance k ends at its last arrival + transfer[k] on every participant,
 * so it waited end - start - transfer[k]; other nodes 0. Equal to what
 * lsim_job_run and the parallel engine write, without a per-node array for
 * the whole job during the run. wait: caller-allocated, g->n entries.
 * Local. */
void lsim_job_waits(const lsim_job *j, size_t gpu, const lsim_graph *g, const lsim_ns *start, const lsim_ns *end,
                    lsim_ns *wait);

/* Per collective kind (out[LSIM_COLL_NKINDS], zeroed here): how many of
 * GPU gpu's n nodes are in rootless instances (a broadcast or reduce whose
 * root the trace does not name, coupled with every participant waiting for
 * the last). Local. */
void lsim_job_rootless(const lsim_job *j, size_t gpu, const lsim_graph *g, uint64_t *out);

#endif
