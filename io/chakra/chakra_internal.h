/* Private to lumosim_chakra (io/chakra/): the attribute names lumosim
 * writes into Chakra ET files and the packing of the graph's tables into
 * integer lists, one definition for the writer and the reader
 * (docs/chakra.md lists them). */
#ifndef LUMOSIM_CHAKRA_INTERNAL_H
#define LUMOSIM_CHAKRA_INTERNAL_H

#include <stdint.h>

#include "lumosim/chakra.h"
#include "lumosim/graph.h"
#include "lumosim/metrics.h"
#include "et_def.pb-c.h"

/* GlobalMetadata.version: the Chakra schema release the fields follow */
#define LSIM_CK_SCHEMA_VERSION "0.0.4"

/* metadata attributes */
#define LSIM_CK_A_GRAPH "lsim.graph"             /* int64 list, LSIM_CK_GRAPH_WORDS */
#define LSIM_CK_A_SOURCE "lsim.source"           /* the trace the graph came from */
#define LSIM_CK_A_DEVICE "lsim.device"           /* the trace's GPU name */
#define LSIM_CK_A_PROCS "lsim.procs"             /* int64 list: is_gpu, pid, tid, nnodes per processor */
#define LSIM_CK_A_ITER_NAMES "lsim.iter_names"   /* string list */
#define LSIM_CK_A_ITER_OBS "lsim.iter_obs"       /* int64 list: observed start, end per iteration */
#define LSIM_CK_A_COLLS "lsim.colls"             /* int64 list, LSIM_CK_COLL_WORDS per collective */
#define LSIM_CK_A_COLL_PG "lsim.coll_pg_name"    /* string list ("" and word 9 = 0: unknown) */
#define LSIM_CK_A_COLL_RANKS "lsim.coll_pg_ranks" /* string list ("" and word 10 = 0: unknown) */
#define LSIM_CK_A_STORE "lsim.store."            /* + a store root attribute's name */

/* node attributes: the column of the same name (graph.h) */
#define LSIM_CK_A_KIND "lsim.kind"
#define LSIM_CK_A_PROC "lsim.proc"
#define LSIM_CK_A_FLAGS "lsim.flags"
#define LSIM_CK_A_DUR "lsim.dur_ns"    /* when dur is not whole microseconds */
#define LSIM_CK_A_OBS "lsim.obs"       /* int64 list: obs_start, obs_end */
#define LSIM_CK_A_RELEASE "lsim.release"
#define LSIM_CK_A_CORR "lsim.corr"
#define LSIM_CK_A_ITER "lsim.iter"
#define LSIM_CK_A_COLL "lsim.coll"
#define LSIM_CK_A_PHASE "lsim.phase"
#define LSIM_CK_A_FWD_SEQ "lsim.fwd_seq"
#define LSIM_CK_A_GRAD_BYTES "lsim.grad_bytes"
#define LSIM_CK_A_DEPS "lsim.deps"     /* int64 list: delay, class per ctrl_dep */

/* lsim.graph: latency, rank, world_size, t0, queued_gap_ns,
 * launch_latency_ns, launch_samples, prewindow, releases,
 * sync_events_used, mem_events, mem_source, mem_device,
 * mem_peak_allocated, mem_peak_reserved, mem_capacity, then
 * edges_by_class, inferred_by_class, dropped */
#define LSIM_CK_GRAPH_WORDS (16 + 2 * LSIM_E_NCLASSES + LSIM_DROP_NREASONS)
/* lsim.colls: kind, from_metadata, group_size, in_nelems, out_nelems,
 * dtype_bytes, bytes, seq, root, has pg_name, has pg_ranks */
#define LSIM_CK_COLL_WORDS 11

static inline void lsim_ck_graph_words(const lsim_graph *g, int64_t *w)
{
    int64_t h[16] = {g->latency,          g->rank,          g->world_size,         g->t0,
                     g->queued_gap_ns,    g->launch_latency_ns, (int64_t)g->launch_samples, (int64_t)g->prewindow,
                     (int64_t)g->releases, (int64_t)g->sync_events_used, (int64_t)g->mem_events, g->mem_source,
                     g->mem_device,       g->mem_peak_allocated, g->mem_peak_reserved, g->mem_capacity};
    for (int i = 0; i < 16; i++) w[i] = h[i];
    for (int i = 0; i < LSIM_E_NCLASSES; i++) {
        w[16 + i] = (int64_t)g->edges_by_class[i];
        w[16 + LSIM_E_NCLASSES + i] = (int64_t)g->inferred_by_class[i];
    }
    for (int i = 0; i < LSIM_DROP_NREASONS; i++) w[16 + 2 * LSIM_E_NCLASSES + i] = (int64_t)g->dropped[i];
}

static inline void lsim_ck_graph_set(lsim_graph *g, const int64_t *w)
{
    g->latency = (lsim_latency_mode)w[0];
    g->rank = (int32_t)w[1];
    g->world_size = (int32_t)w[2];
    g->t0 = w[3];
    g->queued_gap_ns = w[4];
    g->launch_latency_ns = w[5];
    g->launch_samples = (uint64_t)w[6];
    g->prewindow = (uint64_t)w[7];
    g->releases = (uint64_t)w[8];
    g->sync_events_used = (uint64_t)w[9];
    g->mem_events = (uint64_t)w[10];
    g->mem_source = (int32_t)w[11];
    g->mem_device = (int32_t)w[12];
    g->mem_peak_allocated = w[13];
    g->mem_peak_reserved = w[14];
    g->mem_capacity = w[15];
    for (int i = 0; i < LSIM_E_NCLASSES; i++) {
        g->edges_by_class[i] = (uint64_t)w[16 + i];
        g->inferred_by_class[i] = (uint64_t)w[16 + LSIM_E_NCLASSES + i];
    }
    for (int i = 0; i < LSIM_DROP_NREASONS; i++) g->dropped[i] = (uint64_t)w[16 + 2 * LSIM_E_NCLASSES + i];
}

static inline void lsim_ck_coll_words(const lsim_coll_info *c, int64_t *w)
{
    int64_t h[LSIM_CK_COLL_WORDS] = {c->kind,  c->from_metadata, c->group_size, c->in_nelems,
                                     c->out_nelems, c->dtype_bytes, c->bytes,   c->seq,
                                     c->root,  c->pg_name != UINT32_MAX, c->pg_ranks != UINT32_MAX};
    for (int i = 0; i < LSIM_CK_COLL_WORDS; i++) w[i] = h[i];
}

/* Chakra's CollectiveCommType of a lumosim collective (-1: none fits:
 * generic, other, point to point) and back (LSIM_COLL_OTHER for gather,
 * scatter, barrier, which lumosim does not model apart). */
static inline int lsim_ck_comm_type_of(lsim_coll_kind k)
{
    switch (k) {
    case LSIM_COLL_ALLREDUCE: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE;
    case LSIM_COLL_ALLGATHER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER;
    case LSIM_COLL_REDUCESCATTER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER;
    case LSIM_COLL_BROADCAST: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST;
    case LSIM_COLL_REDUCE: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE;
    case LSIM_COLL_ALLTOALL: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL;
    default: return -1;
    }
}

static inline lsim_coll_kind lsim_ck_coll_kind_of(int64_t t)
{
    switch (t) {
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE: return LSIM_COLL_ALLREDUCE;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER: return LSIM_COLL_ALLGATHER;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER:
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER_BLOCK: return LSIM_COLL_REDUCESCATTER;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST: return LSIM_COLL_BROADCAST;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE: return LSIM_COLL_REDUCE;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL: return LSIM_COLL_ALLTOALL;
    default: return LSIM_COLL_OTHER;
    }
}

/* The reader's side of the cache (struct lsim_chakra_cache, io/chakra/chakra.c).
 * took: g, just read whole, is the graph the next file is compared with.
 * match: 1 when the n node messages of a file (bytes + body[v], len[v]
 * bytes each) are, byte for byte, the records the compared graph's
 * templates give with g's tables (its processors, collectives and
 * strings; g has no nodes yet), so that the file's nodes are that graph's
 * (*of); 0 when not; LSIM_ENOMEM. */
void lsim_ck_cache_took(lsim_chakra_cache *c, lsim_graph *g);
int lsim_ck_cache_match(lsim_chakra_cache *c, const lsim_graph *g, const uint8_t *bytes, const size_t *body,
                        const size_t *len, size_t n, lsim_graph **of);

/* A buffer of at least size bytes for the next file's bytes, owned by the
 * cache and kept from file to file (valid until the next call or
 * lsim_chakra_cache_free); NULL when out of memory. Why: each file read
 * into fresh memory had the kernel clear every page of it first, about a
 * third of `build --chakra`'s time on 4,096 files of 3 MB. */
uint8_t *lsim_ck_cache_file(lsim_chakra_cache *c, size_t size);

#endif
