/* PyTorch execution-trace reader (`*.et.json`, `*.et.json.gz`, also the
 * Chakra "host" JSON that PyTorch writes).
 *
 * What is read: the `nodes` array; of the nodes, only `record_param_comms`
 * (one per communication call issued by a process group) is kept, as an
 * lsim_et_op, together with the process groups they name and, if the file
 * has one, a top-level `distributedInfo` (rank, world_size, pg_config). Both
 * layouts PyTorch has written are understood:
 *   - schema 1.0.x: `inputs` is a list of values ([tensors], seq, process
 *     group object address, rank, collective name, in/out splits, group
 *     size); groups are known only by that address, which differs on every
 *     rank (lsim_et_pg.named = 0);
 *   - schema 1.1.x (-chakra): `inputs` is {values, shapes, types} and
 *     `attrs` carry collective_name, dtype, in/out_msg_nelems, pg_name,
 *     pg_desc, pg_size, global_rank_start/stride (named = 1).
 * Ops are listed in issue order (node id order: PyTorch assigns ids when an
 * op starts, and writes nodes when they end). "wait" records are not ops.
 *
 * The document's bytes are read whole (gzip detected from the content,
 * not the name; at most LSIM_ET_MAX_BYTES uncompressed) and parsed one
 * node at a time with cJSON, never as one tree.
 * Execution traces hold one node per operator call, a few MB per step.
 *
 * Ownership: lsim_et_read allocates *out; release it with lsim_et_free.
 * Everything here is Local (no MPI). */
#ifndef LUMOSIM_ET_H
#define LUMOSIM_ET_H

#include "lumosim/common.h"
#include "lumosim/trace.h"

#define LSIM_ET_MAX_BYTES ((size_t)256 << 20) /* uncompressed document */
#define LSIM_ET_MAX_GROUP 1048576             /* ranks in one process group */

/* A process group. */
typedef struct lsim_et_pg {
    char *name;      /* pg_name as written (named = 1), or "ptr:ADDRESS" */
    char *desc;      /* pg_desc ("" if absent) */
    int named;       /* 1: the name is the process group's name, the same on
                        every rank; 0: a process-local object address */
    int32_t size;    /* ranks in the group, -1 unknown */
    int32_t nranks;  /* global ranks, [] if unknown (0) */
    int32_t *ranks;
    uint32_t nops;   /* ops on this group */
} lsim_et_pg;

/* One communication call (a record_param_comms node). */
typedef struct lsim_et_op {
    int64_t node_id;
    int64_t seq;          /* sequence number on its group, -1 if absent */
    char name[32];        /* collective name as written ("allreduce"), cut */
    uint8_t kind;         /* lsim_coll_kind; LSIM_COLL_NONE if not known */
    uint8_t launches_kernel; /* 1: expected to launch one NCCL kernel (not
                                barrier, not an unknown name, not a group of
                                one rank, which NCCL serves by a local copy) */
    int32_t pg;           /* index into lsim_et.pgs, -1 if none named */
    int32_t group_rank;   /* collectives: this rank's rank in the group, -1 */
    int32_t peer;         /* send/recv: the peer's rank in the group, -1 */
    int32_t peer_global;  /* the peer's global rank when the group's ranks
                             are known, -1 */
    int32_t dtype_bytes;  /* element size, -1 unknown */
    int64_t in_nelems, out_nelems; /* -1 unknown */
    int64_t in_bytes, out_bytes;   /* -1 unknown */
} lsim_et_op;

typedef struct lsim_et {
    char *path;         /* label as given */
    char schema[32];    /* "" if absent */
    int32_t rank;       /* distributedInfo.rank, or derived from a group with
                           known ranks; -1 unknown */
    int32_t world_size; /* distributedInfo.world_size; -1 unknown */
    size_t nnodes;      /* all nodes */
    lsim_et_pg *pgs;
    size_t npg;
    lsim_et_op *ops;    /* issue order */
    size_t nops;
} lsim_et;

/* Read one execution trace. On failure returns a negative code, fills err
 * with "PATH: what is wrong" and leaves *out NULL. Errors: missing or
 * unreadable file (LSIM_EIO); truncated or corrupt gzip, not JSON, larger
 * than LSIM_ET_MAX_BYTES (LSIM_EFORMAT); JSON that is not an execution trace
 * (no "nodes" array, a node without name or id, duplicate ids) or
 * inconsistent records (a group with two sizes, a rank outside its group, a
 * negative size, a communication record without a collective name)
 * (LSIM_ETRACE). */
int lsim_et_read(const char *path, lsim_et **out, lsim_err *err);

/* The same from memory (fuzzing and tests; gzip data is inflated too);
 * `label` names the input in errors. */
int lsim_et_read_mem(const char *label, const char *buf, size_t len, lsim_et **out, lsim_err *err);

void lsim_et_free(lsim_et *et);

/* The execution trace beside a Kineto trace: same directory, same stem
 * (PATH minus ".json" / ".json.gz") + ".et.json.gz" or ".et.json", the
 * first that exists (a FIFO or directory of that name too: the reader then
 * refuses it with a line rather than it being skipped unsaid). *out is a malloc'd path (caller frees) or
 * NULL when there is none (also for PATH that is itself an execution
 * trace). Returns 0 or LSIM_ENOMEM. */
int lsim_et_sibling(const char *trace_path, char **out);

/* What lsim_et_apply did. */
typedef struct lsim_et_apply_stats {
    size_t kernels;      /* collective kernels in the trace */
    size_t matched;      /* paired with an ET op */
    size_t group_filled; /* got pg_name, pg_ranks or group_size from the ET */
    size_t size_filled;  /* got bytes, nelems or dtype size from the ET */
} lsim_et_apply_stats;

/* Fill what the trace's collective kernels do not say (pg_name, pg_ranks,
 * group_size, in/out_nelems, dtype_bytes, bytes; the kind of generic
 * kernels) from the execution trace of the same rank. Kernels are taken in
 * launch order, ET ops (those with launches_kernel) in issue order; a
 * kernel whose process group the trace names, and the ET names too, is
 * paired with that group's ops in order; all others are paired in order
 * with the ops of the remaining groups. Fields the trace already has are
 * kept. Before the graph build (the trace's events must be present).
 * Errors (LSIM_ETRACE, naming both files and the position): different
 * counts, kinds that cannot be the same call, different dtype size, bytes,
 * group size or group name at a position, ranks that disagree. Nothing is
 * changed in t on these errors (only LSIM_ENOMEM can stop half-way). */
int lsim_et_apply(const lsim_et *et, lsim_trace *t, lsim_et_apply_stats *st, lsim_err *err);

/* lsim_et_sibling + lsim_et_read + lsim_et_apply: what every loader of a
 * Kineto trace does. *et_path (may be NULL) gets the execution trace used,
 * malloc'd (caller frees), or NULL when there is none (then st is zeroed
 * and nothing changes). */
int lsim_et_apply_sibling(lsim_trace *t, lsim_et_apply_stats *st, char **et_path, lsim_err *err);

#endif
