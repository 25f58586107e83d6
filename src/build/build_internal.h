/* Private to src/build/: the state the trace -> graph steps share, and the
 * helpers more than one step uses. The steps, in the order build.c runs
 * them (graph.h says what the graph means, ARCHITECTURE.md 3 why):
 *   build.c    processors, the driver, node and edge storage
 *   cpu.c      CPU nesting flattened per thread; iterations; training
 *              phases of GPU work from the ops around its launch
 *   gpu.c      GPU nodes in stream order, correlation, launches, collectives
 *   sync.c     blocking calls (end-edges), record/wait, cross-thread wake-ups
 *   latency.c  the launch-latency model; launch and stream-order edges
 *   hidden.c   hidden dependencies recovered from timing; the order
 *              inside CUDA/HIP graph launches
 * Everything is local (no MPI); nothing here is installed. */
#ifndef LSIM_BUILD_INTERNAL_H
#define LSIM_BUILD_INTERNAL_H

#include <stdlib.h>
#include <string.h>

#include "lumosim/graph.h"
#include "../util.h"

#define BLD_NONE UINT32_MAX

/* What the graph needs of a cuda_sync event, copied so that the trace's
 * event table can be released early. */
typedef struct bld_sync_rec {
    int32_t device;
    uint8_t kind;
    int64_t stream, wait_stream, wait_rec_corr;
} bld_sync_rec;

typedef struct bld_builder {
    lsim_trace *t;
    const lsim_build_opts *o;
    lsim_graph *g;
    lsim_err *err;
    size_t cap;
    size_t node_events; /* events on a processor (build_procs): the first node capacity */
    /* per string id, what cpu.c reads from an op's name (bld_name_bits),
     * learnt once per distinct name: 0 not yet */
    uint8_t *name_bits;
    size_t nname_bits;
    lsim_edge *edges;
    size_t nedges, capedges;
    /* per node extras used only while building */
    uint32_t *node_event; /* source event index */
    uint32_t *launch_of;  /* GPU node -> runtime node, BLD_NONE if pre-window */
    /* graph launch call node -> its graph's first op (the earliest to
     * start), BLD_NONE for every other node (gpu.c, bld_link_launches) */
    uint32_t *graph_head;
    /* per event: last piece node (CPU/runtime), GPU node (GPU) */
    uint32_t *ev_node;
    uint32_t *ev_enter; /* runtime memcpy events: their entry node */
    /* streams: nodes in stream order */
    uint32_t **stream_nodes;
    uint32_t *stream_len;
    lsim_ns **stream_lt; /* prefix-max launch time per stream position */
    int32_t *proc_device;
    /* correlation -> runtime node / sync event */
    int64_t *ckeys;
    uint32_t *cvals;        /* corr -> the runtime call's node */
    uint32_t *cvals_launch; /* corr -> the node its GPU work is launched from */
    size_t cslots;
    int64_t *skeys;
    uint32_t *svals; /* index into syncs */
    size_t sslots;
    bld_sync_rec *syncs;
    size_t nsyncs;
    /* launch latency model */
    uint32_t *api_ids;
    lsim_ns *api_lat;
    size_t napi;
    lsim_ns lat_default, lat_default_end;
    lsim_ns *api_lat_end;
    uint32_t nstreams_alloc;
    int32_t *ev_rpc;   /* runtime events: enclosing record_param_comms' coll */
    int32_t *node_rpc; /* runtime call nodes: the same, by node */
    /* training phases (cpu.c): per runtime event, the phase and forward
     * Sequence number its enclosing ops give the GPU work it launches
     * (5 bytes an event, while building); per CPU thread, 1 if it is an
     * autograd thread (backward ops and no forward-side op) */
    uint8_t *ev_phase;
    int32_t *ev_fseq;
    uint8_t *proc_autograd;
    /* the CPU op tree (keep_cpu_ops, cpu.c): ops kept so far in
     * g->cpu_ops, and per event its op while building (BLD_NONE none) */
    size_t capops;
    uint32_t *ev_op;
    /* SM contention (sm_contention only, gpu.c): per node its kernel's
     * launch configuration (blocks 0: none), and the SM count Kineto's
     * "blocks per SM" implies (0 none) */
    lsim_kernel_cfg *kc;
    uint32_t sm_hint;
} bld_builder;

/* The one out-of-memory message of the build. */
static inline int bld_oom(const bld_builder *b)
{
    return lsim_err_set(b->err, LSIM_ENOMEM, "%s: out of memory building the graph", b->t->path);
}

/* Event kinds that become GPU nodes / CPU-thread nodes. */
static inline int bld_is_gpu_kind(uint8_t k) { return k == LSIM_EV_KERNEL || k == LSIM_EV_MEMCPY || k == LSIM_EV_MEMSET; }
static inline int bld_is_cpu_kind(uint8_t k) { return k == LSIM_EV_CPU_OP || k == LSIM_EV_ANNOTATION || k == LSIM_EV_RUNTIME; }

/* API name without its cuda/hip/cu prefix, for classification. */
static inline const char *bld_api_base(const char *n)
{
    if (!strncmp(n, "cuda", 4)) return n + 4;
    if (!strncmp(n, "hip", 3)) return n + 3;
    if (!strncmp(n, "cu", 2)) return n + 2;
    return n;
}

/* The trace's timestamp step (0 if unknown): an op that ended up to one
 * step after another started may have ended before it. */
static inline lsim_ns bld_ts_step(const bld_builder *b)
{
    return b->t->ts_resolution_ns > 0 ? b->t->ts_resolution_ns : 0;
}

static inline const char *bld_rt_name(const bld_builder *b, uint32_t v)
{
    return lsim_strtab_get(b->g->strings, b->g->name[v]);
}

/* build.c: append an edge to the build's list (lsim_graph_set_edges makes
 * the CSR from it at the end); a node with the event's name and
 * correlation, its other columns unset (iter -1, no release). */
int bld_add_edge(bld_builder *b, uint32_t src, uint32_t dst, uint8_t cls, lsim_ns delay);
int bld_new_node(bld_builder *b, uint8_t kind, uint32_t proc, uint32_t ev, lsim_ns s, lsim_ns e, uint32_t *id);

/* gpu.c: the correlation maps (open addressing, int64 -> uint32; BLD_NONE
 * when absent) and where launches sit in each stream's order. */
uint32_t bld_map_get(const int64_t *keys, const uint32_t *vals, size_t slots, int64_t k);
uint32_t bld_last_launched_before(const bld_builder *b, uint32_t p, lsim_ns t);
uint32_t bld_first_launched_after(const bld_builder *b, uint32_t p, lsim_ns t);
uint32_t bld_stream_proc(const bld_builder *b, int32_t device, int64_t stream);
uint32_t bld_thread_launch_stream(const bld_builder *b, uint32_t v, int after);

/* latency.c: the modelled delay of a launch edge from the end of call r. */
lsim_ns bld_model_launch_delay(const bld_builder *b, uint32_t r);

/* The steps (0 or a negative LSIM_E* code with b->err filled). */
int bld_cpu(bld_builder *b, const uint32_t *ev_proc);
/* The op tree's per-node map over the final node set (keep_cpu_ops). */
int bld_cpu_ops_finish(bld_builder *b);
int bld_iters(bld_builder *b);
int bld_phases(bld_builder *b);
/* grad_bytes of the CPU nodes that end AccumulateGrad ops (graph.h). */
int bld_grads(bld_builder *b);
int bld_gpu(bld_builder *b, const uint32_t *ev_proc);
int bld_corr_maps(bld_builder *b);
int bld_link_launches(bld_builder *b);
int bld_label_collectives(bld_builder *b);
int bld_blocking_edges(bld_builder *b);
int bld_event_edges(bld_builder *b);
int bld_learn_latency(bld_builder *b);
int bld_launch_and_stream_edges(bld_builder *b);
int bld_xthread_edges(bld_builder *b);
int bld_hidden_edges(bld_builder *b);
/* hidden.c: the order inside each graph launch (called last by
 * bld_launch_and_stream_edges, which skips the stream edges between ops of
 * one graph launch). */
int bld_graph_edges(bld_builder *b);
int bld_sm_edges(bld_builder *b);

#endif
