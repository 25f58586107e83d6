/* Discrete-event replay of one execution graph (Lumos Algorithm 1).
 *
 * A node is dispatched when every predecessor has finished; its start and end
 * follow the rules in graph.h. Dispatch order is by (start time, node id)
 * through a binary heap, so the run is deterministic and time-ordered (the
 * parallel engine's windows rely on that). All memory is sized from the graph
 * in lsim_engine_new; lsim_engine_run allocates nothing.
 *
 * Ownership: lsim_engine_new allocates; lsim_engine_free releases. The graph
 * is borrowed and must outlive the engine. Results (start/end arrays) are
 * owned by the engine and valid until the next run or free. Local.
 *
 * lsim_engines_new creates the engines of many graphs (a job's GPUs) over one
 * allocation (lsim_alloc_big: 2 MiB-aligned, faulted in at once), which
 * the first engine owns: free every engine of the group with
 * lsim_engine_free, and use none after freeing the first. On failure nothing
 * is left allocated and out[] is all NULL. */
#ifndef LUMOSIM_ENGINE_H
#define LUMOSIM_ENGINE_H

#include "lumosim/graph.h"

typedef struct lsim_engine lsim_engine;

int lsim_engine_new(const lsim_graph *g, lsim_engine **out, lsim_err *err);
int lsim_engines_new(const lsim_graph *const *g, size_t n, lsim_engine **out, lsim_err *err);
/* The same; keep_bind 0: the engines do not keep the deciding edges
 * (lsim_engine_bind_start/_end return NULL; no critical path from them),
 * 24 bytes a node instead of 40. Times are the same either way. */
int lsim_engines_new_ex(const lsim_graph *const *g, size_t n, int keep_bind, lsim_engine **out, lsim_err *err);
void lsim_engine_free(lsim_engine *e);

/* Simulate. Fails with LSIM_EINTERNAL if the graph has a cycle (some nodes
 * never become ready); err names how many. */
int lsim_engine_run(lsim_engine *e, lsim_err *err);

const lsim_ns *lsim_engine_start(const lsim_engine *e);
const lsim_ns *lsim_engine_end(const lsim_engine *e);
/* The in-edge that decided each node's start (index k into g->in_src /
 * in_delay / in_class; -1 when the release time or t0 decided it), and the
 * end-edge that decided its end (-1 when end = start + dur). Ties go to the
 * first edge in CSR order. Valid like start/end; NULL when the engine
 * was made without them (lsim_engines_new_ex). */
const int64_t *lsim_engine_bind_start(const lsim_engine *e);
const int64_t *lsim_engine_bind_end(const lsim_engine *e);

/* Node-events processed by the last run (one per node). */
uint64_t lsim_engine_events(const lsim_engine *e);

/* Stepping from outside, for drivers outside the library (the library's
 * own, the job run and mpi/pdes.c, inline the same node model from the
 * private include/internal/sched_inline.h). reset: every node waits for all its predecessors
 * (the roots are the nodes without in-edges). resolve: fix a ready node's start, end
 * and deciding edges. set_end: a collective's end decided by its peers.
 * release: v is done; its successors that became ready are written to
 * `ready` (room for v's out-degree), their number returned. Local; no
 * allocation. */
void lsim_engine_reset(lsim_engine *e);
void lsim_engine_resolve(lsim_engine *e, uint32_t v);
void lsim_engine_set_end(lsim_engine *e, uint32_t v, lsim_ns end);
size_t lsim_engine_release(lsim_engine *e, uint32_t v, uint32_t *ready);
const lsim_graph *lsim_engine_graph(const lsim_engine *e);
/* Drain: run the *n ready nodes held in e's scratch array (a stack) and
 * every node they make ready, in no time order, until none is left. Each
 * newly ready node is resolved; one with inst[v] >= 0 (a collective of the
 * job: instance inst[v]) is handed to hook(ctx, v, inst[v]) instead, which
 * may push nodes back (scratch[(*n)++] = v, e.g. when the collective
 * completes) and returns 0 or a failure code; the first failure lands in
 * *rc and stops the drain. Returns the node-events run. For drivers whose
 * results do not depend on the order (the job run, the parallel engine's
 * READY rounds): the per-event work is the serial engine's, inlined. Local;
 * no allocation. */
typedef int (*lsim_engine_hook)(void *ctx, uint32_t v, int32_t inst);
uint64_t lsim_engine_drain(lsim_engine *e, size_t *n, const int32_t *inst, lsim_engine_hook hook, void *ctx, int *rc);
/* Room for g->n node ids that stepping from outside leaves alone: the
 * driver's own ready queue (the job run's stack, the parallel engine's
 * heap), so that no driver allocates another per-node array. */
uint32_t *lsim_engine_scratch(lsim_engine *e);

#endif
