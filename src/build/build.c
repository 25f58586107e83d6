/* The trace -> graph driver (see graph.h, and build_internal.h for the
 * steps): the builder's storage (nodes through the graph's one allocator,
 * edges in a list that the one CSR builder turns into the graph's arrays),
 * processors, and lsim_graph_build itself.
 *
 * Order of work, and why:
 *  1. processors: CPU threads (pid, tid) and GPU streams (device, stream);
 *  2. CPU threads are flattened: nested ops become pieces so that a thread is
 *     a sequence of non-overlapping intervals; gaps become edge delays;
 *  3. GPU activities become nodes in per-stream order, joined to their launch
 *     by correlation id (no launch in the file = pre-window work);
 *  4. the launch-latency model is learned from launches onto idle streams
 *     (only there is kernel.ts - launch.ts a latency and not queueing);
 *  5. blocking calls, cross-stream waits and cross-thread wake-ups add edges;
 *     whatever the trace does not state is inferred and every inferred edge is
 *     checked against observed times (contradictions dropped and counted);
 *  6. a GPU op that still starts later than its known dependencies explain is
 *     given the hidden dependency the timing shows (another stream's op that
 *     ended just before it): that recovers CUDA-graph internals and waits
 *     whose cudaEventRecord the profiler filtered out.
 * The structure of the graph does not depend on the latency mode; only
 * delays, durations of blocking calls and releases do. */
#include "build_internal.h"
#include "lumosim/alloc.h"

void lsim_build_opts_default(lsim_build_opts *o)
{
    o->latency = LSIM_LAT_MODEL;
    o->nest_tol_ns = 1000;
    o->infer_gap_ns = 10000;
    o->infer_slack_ns = 5000;
    o->event_tol_ns = 1000;
    o->release_events = 0;
    o->keep_cpu_ops = 0;
    o->sm_contention = 0;
}

/* ------------------------------------------------------------- storage */

int bld_add_edge(bld_builder *b, uint32_t src, uint32_t dst, uint8_t cls, lsim_ns delay)
{
    if (LSIM_GROW(b->edges, &b->capedges, b->nedges + 1)) return bld_oom(b);
    b->edges[b->nedges++] = (lsim_edge){dst, src, delay, cls};
    return 0;
}

/* Capacity for need nodes: the graph's columns (lsim_graph_resize_nodes)
 * and the builder's per-node extras, doubled together. */
static int grow_nodes(bld_builder *b, size_t need)
{
    if (need <= b->cap) return 0;
    /* the first capacity is the number of events that become nodes (most
     * traces have fewer nodes than that): the training columns are filled
     * to the capacity, so doubling past the count touched memory for nothing */
    size_t nc = b->cap ? b->cap : b->node_events > 1024 ? b->node_events : 1024;
    while (nc < need) nc *= 2;
    size_t cev = b->cap, clo = b->cap;
    if (lsim_graph_resize_nodes(b->g, nc, NULL) || LSIM_GROW(b->node_event, &cev, nc) || LSIM_GROW(b->launch_of, &clo, nc))
        return bld_oom(b);
    b->cap = nc;
    return 0;
}

int bld_new_node(bld_builder *b, uint8_t kind, uint32_t proc, uint32_t ev, lsim_ns s, lsim_ns e, uint32_t *id)
{
    lsim_graph *g = b->g;
    int rc = grow_nodes(b, g->n + 1);
    if (rc) return rc;
    size_t v = g->n++;
    const lsim_event *x = &b->t->ev[ev];
    g->kind[v] = kind;
    g->flags[v] = 0;
    g->proc[v] = proc;
    g->name[v] = x->name;
    g->obs_start[v] = s;
    g->obs_end[v] = e;
    g->dur[v] = e - s;
    g->release[v] = INT64_MIN;
    g->corr[v] = x->corr;
    g->iter[v] = -1;
    g->coll[v] = x->coll;
    g->phase[v] = LSIM_PHASE_UNKNOWN; /* GPU work: bld_phases */
    g->fwd_seq[v] = -1;
    g->grad_bytes[v] = 0; /* bld_grads */
    b->node_event[v] = ev;
    b->launch_of[v] = BLD_NONE;
    *id = (uint32_t)v;
    return 0;
}

/* ------------------------------------------------------------ processors */

typedef struct prockey {
    uint8_t is_gpu;
    int64_t a, b;
    uint32_t idx;
} prockey;

static int cmp_prockey(const void *x, const void *y)
{
    const prockey *p = x, *q = y;
    if (p->is_gpu != q->is_gpu) return p->is_gpu - q->is_gpu;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    return 0;
}

/* Assign each event a processor; returns per-event proc index (BLD_NONE if the
 * event is not on a processor). Processors are sorted (CPU by pid/tid, GPU by
 * device/stream) so ids are deterministic. An event's processor is a
 * function of its row and whether it is GPU work, so only the (row, GPU)
 * pairs that occur are sorted, a few dozen, not every event: sorting
 * the events was a quarter of the graph build (issue 20;
 * docs/performance.md). */
static int build_procs(bld_builder *b, uint32_t **ev_proc_out)
{
    lsim_trace *t = b->t;
    lsim_graph *g = b->g;
    int rc = 0;
    size_t nslot = 2 * (t->nrows ? t->nrows : 1);
    prockey *keys = lsim_malloc(nslot * sizeof *keys);
    uint32_t *slot_proc = lsim_malloc(nslot * sizeof *slot_proc); /* (row, GPU) pair -> processor */
    uint32_t *ev_proc = lsim_malloc((t->nev ? t->nev : 1) * sizeof *ev_proc);
    if (!keys || !slot_proc || !ev_proc) {
        rc = bld_oom(b);
        goto cleanup;
    }
    for (size_t i = 0; i < nslot; i++) slot_proc[i] = BLD_NONE;
    size_t nk = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        int gpu = bld_is_gpu_kind(e->kind);
        if (!gpu && !bld_is_cpu_kind(e->kind)) continue;
        size_t sl = 2 * (size_t)e->row + (size_t)gpu;
        if (slot_proc[sl] != BLD_NONE) continue;
        slot_proc[sl] = 0; /* seen; numbered below */
        const lsim_row *r = lsim_event_row(t, e);
        keys[nk++] = gpu ? (prockey){1, r->device, r->stream, (uint32_t)sl} : (prockey){0, r->pid, r->tid, (uint32_t)sl};
    }
    qsort(keys, nk, sizeof *keys, cmp_prockey);
    size_t np = 0;
    for (size_t i = 0; i < nk; i++)
        if (i == 0 || cmp_prockey(&keys[i], &keys[i - 1]) != 0) np++;
    g->procs = lsim_calloc(np ? np : 1, sizeof *g->procs);
    b->proc_device = lsim_calloc(np ? np : 1, sizeof *b->proc_device);
    if (!g->procs || !b->proc_device) {
        rc = bld_oom(b);
        goto cleanup;
    }
    uint32_t p = BLD_NONE;
    for (size_t i = 0; i < nk; i++) {
        if (i == 0 || cmp_prockey(&keys[i], &keys[i - 1]) != 0) {
            p = p == BLD_NONE ? 0 : p + 1;
            g->procs[p].is_gpu = keys[i].is_gpu;
            g->procs[p].pid = keys[i].a;
            g->procs[p].tid = keys[i].b;
            b->proc_device[p] = keys[i].is_gpu ? (int32_t)keys[i].a : -1;
        }
        slot_proc[keys[i].idx] = p;
    }
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        int gpu = bld_is_gpu_kind(e->kind);
        ev_proc[i] = gpu || bld_is_cpu_kind(e->kind) ? slot_proc[2 * (size_t)e->row + (size_t)gpu] : BLD_NONE;
        b->node_events += ev_proc[i] != BLD_NONE;
    }
    g->nprocs = (uint32_t)np;
    *ev_proc_out = ev_proc;
    ev_proc = NULL;
cleanup:
    free(keys);
    free(slot_proc);
    free(ev_proc);
    return rc;
}
/* --------------------------------------------------------------- driver */

/* The GPU's memory from the trace's [memory] events and deviceProperties
 * (graph.h, mem_*). Which device: the one the trace's GPU rows ran on
 * (most rows; a merged multi-rank file lists every rank's device), else
 * the one with the most memory events, else none. */
static void init_memory(const lsim_trace *t, lsim_graph *g)
{
    int rows[LSIM_TRACE_MEM_DEVICES] = {0}, dev = -1;
    for (size_t i = 0; i < t->nrows; i++)
        if (t->rows[i].stream >= 0 && t->rows[i].device >= 0 && t->rows[i].device < LSIM_TRACE_MEM_DEVICES)
            rows[t->rows[i].device]++;
    for (int d = 0; d < LSIM_TRACE_MEM_DEVICES; d++)
        if (rows[d] > 0 && (dev < 0 || rows[d] > rows[dev])) dev = d;
    if (dev < 0)
        for (int d = 0; d < LSIM_TRACE_MEM_DEVICES; d++)
            if (t->mem[d].events > 0 && (dev < 0 || t->mem[d].events > t->mem[dev].events)) dev = d;
    g->mem_device = dev;
    g->mem_source = LSIM_MEM_SRC_NONE;
    if (dev < 0) return;
    const lsim_trace_memdev *m = &t->mem[dev];
    g->mem_capacity = t->dev_capacity[dev];
    g->mem_events = m->events;
    if (m->with_totals > 0) {
        g->mem_source = LSIM_MEM_SRC_TOTALS;
        g->mem_peak_allocated = m->max_allocated;
        g->mem_peak_reserved = m->max_reserved;
    } else if (m->events > 0) {
        /* allocated(t) = A0 + cum(t) >= 0 everywhere, so A0 >= -cum_min and
         * the peak A0 + cum_max >= cum_max - cum_min */
        g->mem_source = LSIM_MEM_SRC_DELTAS;
        /* cum saturates (kineto.c), so the difference may not fit */
        g->mem_peak_allocated = m->cum_min < 0 && m->cum_max > INT64_MAX + m->cum_min ? INT64_MAX : m->cum_max - m->cum_min;
    }
    /* figures past LSIM_BYTES_MAX (the reader takes values up to 2^50 each)
     * are no GPU's: unknown, as a store's check would refuse them
     * (lsim_graph_check_tables) */
    if (g->mem_capacity > LSIM_BYTES_MAX) g->mem_capacity = 0;
    if (g->mem_peak_allocated > LSIM_BYTES_MAX || g->mem_peak_reserved > LSIM_BYTES_MAX) {
        g->mem_source = LSIM_MEM_SRC_NONE;
        g->mem_peak_allocated = g->mem_peak_reserved = 0;
    }
}

/* The graph's own scalars from the trace, and its time origin t0. Events a
 * day apart mean a corrupt timestamp (or two traces glued together): one
 * profiling window lasts seconds to minutes, so say so instead of sizing
 * anything by that span. */
static int init_graph(bld_builder *b)
{
    lsim_trace *t = b->t;
    lsim_graph *g = b->g;
    g->strings = t->strings;
    t->strings = NULL;
    g->source = lsim_strdup(t->path);
    g->rank = t->rank;
    g->world_size = t->world_size;
    g->latency = b->o->latency;
    g->device = t->device_name; /* an id in t->strings, which the graph now owns */
    init_memory(t, g);
    if (!g->source || t->nev > UINT32_MAX / 2)
        return lsim_err_set(b->err, LSIM_ENOMEM, "%s: out of memory (or more than 2^31 events)", t->path);
    g->t0 = INT64_MAX;
    lsim_ns tmax = INT64_MIN;
    size_t i0 = 0, i1 = 0;
    for (size_t i = 0; i < t->nev; i++) {
        if (!bld_is_gpu_kind(t->ev[i].kind) && !bld_is_cpu_kind(t->ev[i].kind)) continue;
        if (t->ev[i].ts < g->t0) {
            g->t0 = t->ev[i].ts;
            i0 = i;
        }
        if (t->ev[i].ts + t->ev[i].dur > tmax) {
            tmax = t->ev[i].ts + t->ev[i].dur;
            i1 = i;
        }
    }
    if (tmax != INT64_MIN && tmax - g->t0 > (lsim_ns)86400 * 1000000000)
        return lsim_err_set(b->err, LSIM_ETRACE,
                            "%s: event timestamps span %.0f s (\"%.40s\" at %lld us to \"%.40s\" ending at %lld us): "
                            "not one profiling window",
                            t->path, (double)(tmax - g->t0) / 1e9, lsim_strtab_get(g->strings, t->ev[i0].name),
                            (long long)(g->t0 / 1000), lsim_strtab_get(g->strings, t->ev[i1].name),
                            (long long)(tmax / 1000));
    return 0;
}

/* The per-event maps, all "none" (BLD_NONE, -1). */
static int alloc_event_maps(bld_builder *b)
{
    size_t n = b->t->nev ? b->t->nev : 1;
    if (!(b->ev_node = lsim_malloc(n * sizeof *b->ev_node)) || !(b->ev_enter = lsim_malloc(n * sizeof *b->ev_enter)) ||
        !(b->ev_rpc = lsim_malloc(n * sizeof *b->ev_rpc)) || !(b->ev_phase = lsim_malloc(n * sizeof *b->ev_phase)) ||
        !(b->ev_fseq = lsim_malloc(n * sizeof *b->ev_fseq)))
        return bld_oom(b);
    for (size_t i = 0; i < b->t->nev; i++) {
        b->ev_node[i] = b->ev_enter[i] = BLD_NONE;
        b->ev_rpc[i] = -1;
        b->ev_phase[i] = LSIM_PHASE_UNKNOWN;
        b->ev_fseq[i] = -1;
    }
    return 0;
}

/* Nodes: CPU pieces, iterations, GPU work; the trace's collectives copied;
 * each launch call's enclosing record_param_comms by node. */
static int build_nodes(bld_builder *b, const uint32_t *ev_proc)
{
    lsim_trace *t = b->t;
    lsim_graph *g = b->g;
    int rc;
    if ((rc = bld_cpu(b, ev_proc))) return rc;
    /* only a call's own node (its last piece) carries its correlation id:
     * the entry node of a memcpy and the pieces around nested calls do not,
     * so written out (--trace-out) each call is one correlation again */
    for (size_t v = 0; v < g->n; v++)
        if (g->kind[v] == LSIM_N_RUNTIME && b->ev_node[b->node_event[v]] != v) g->corr[v] = -1;
    if ((rc = bld_iters(b)) || (rc = bld_gpu(b, ev_proc))) return rc;
    if (t->ncoll) {
        if (!(g->colls = lsim_malloc(t->ncoll * sizeof *g->colls))) return bld_oom(b);
        memcpy(g->colls, t->colls, t->ncoll * sizeof *g->colls);
        g->ncoll = t->ncoll;
    }
    if (!(b->node_rpc = lsim_malloc((g->n ? g->n : 1) * sizeof *b->node_rpc))) return bld_oom(b);
    for (size_t v = 0; v < g->n; v++) b->node_rpc[v] = -1;
    for (size_t i = 0; i < t->nev; i++)
        if (b->ev_rpc[i] >= 0 && b->ev_node[i] != BLD_NONE) b->node_rpc[b->ev_node[i]] = b->ev_rpc[i];
    return 0;
}

/* Edges, in the order whose list order the CSR keeps: launches linked,
 * collectives labelled, then blocking, event, launch/stream, cross-thread,
 * hidden and (sm_contention) SM edges. */
static int build_edges(bld_builder *b)
{
    int rc;
    if ((rc = bld_link_launches(b)) || (rc = bld_label_collectives(b)) || (rc = bld_blocking_edges(b)) ||
        (rc = bld_event_edges(b)) || (rc = bld_learn_latency(b)) || (rc = bld_launch_and_stream_edges(b)) ||
        (rc = bld_xthread_edges(b)) || (rc = bld_hidden_edges(b)) || (rc = bld_sm_edges(b)))
        return rc;
    return 0;
}

/* The CSR from the edge list, the statistics, and the bounds every later
 * stage relies on (graph.h): a trace whose event lasts hours is refused
 * here, not simulated into a wrapped window. */
static int finish_graph(bld_builder *b)
{
    lsim_graph *g = b->g;
    if (lsim_graph_set_edges(g, b->edges, b->nedges, LSIM_OUT_BY_LIST, NULL)) return bld_oom(b);
    lsim_graph_count_edges(g);
    for (size_t v = 0; v < g->n; v++)
        if (g->release[v] != INT64_MIN) g->releases++;
    for (uint32_t p = 0; p < g->nprocs; p++) g->procs[p].nnodes = 0;
    for (size_t v = 0; v < g->n; v++) g->procs[g->proc[v]].nnodes++;
    return lsim_graph_check_bounds(g, b->t->path, g->rank >= 0 ? (size_t)g->rank : 0, b->err);
}

/* Everything the builder owns (not the graph). */
static void free_builder(bld_builder *b)
{
    free(b->ev_node);
    free(b->ev_enter);
    free(b->ev_rpc);
    free(b->ev_phase);
    free(b->ev_fseq);
    free(b->proc_autograd);
    free(b->ev_op);
    free(b->node_rpc);
    free(b->node_event);
    free(b->launch_of);
    free(b->graph_head);
    free(b->name_bits);
    free(b->edges);
    if (b->stream_nodes)
        for (uint32_t p = 0; p < b->nstreams_alloc; p++) {
            free(b->stream_nodes[p]);
            free(b->stream_lt[p]);
        }
    free(b->stream_nodes);
    free(b->stream_lt);
    free(b->stream_len);
    free(b->ckeys);
    free(b->cvals);
    free(b->cvals_launch);
    free(b->skeys);
    free(b->svals);
    free(b->syncs);
    free(b->api_ids);
    free(b->api_lat);
    free(b->api_lat_end);
    free(b->proc_device);
    free(b->kc);
}

int lsim_graph_build(lsim_trace *t, const lsim_build_opts *o, lsim_graph **out, lsim_err *err)
{
    int rc = 0;
    bld_builder b;
    memset(&b, 0, sizeof b);
    uint32_t *ev_proc = NULL;
    lsim_build_opts dflt;
    if (!o) {
        lsim_build_opts_default(&dflt);
        o = &dflt;
    }
    *out = NULL;
    b.t = t;
    b.o = o;
    b.err = err;
    if (!t->strings) /* moved into an earlier graph */
        return lsim_err_set(err, LSIM_EARG, "%s: this trace was already built into a graph; read it again", t->path);
    if (!(b.g = lsim_calloc(1, sizeof *b.g))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", t->path);
        goto cleanup;
    }
    if ((rc = init_graph(&b)) || (rc = alloc_event_maps(&b)) || (rc = build_procs(&b, &ev_proc)) ||
        (rc = build_nodes(&b, ev_proc)))
        goto cleanup;
    /* what only the nodes (and the gradients' sizes) needed goes before the
     * correlation maps, where the build's memory peaks while the event table
     * is still there (docs/performance.md): per-event maps, and with
     * release_events the trace's GEMM and kernel-configuration side tables,
     * which nothing reads after the build then */
    free(ev_proc);
    ev_proc = NULL;
    free(b.ev_rpc);
    b.ev_rpc = NULL;
    if ((rc = bld_grads(&b))) goto cleanup;
    if (o->release_events) {
        free(t->gemms);
        t->gemms = NULL;
        t->ngemm = t->capgemm = 0;
        free(t->kcfg);
        t->kcfg = NULL;
        t->nkcfg = t->capkcfg = 0;
    }
    if ((rc = bld_corr_maps(&b))) goto cleanup;
    free(b.ev_enter); /* read by the maps only */
    b.ev_enter = NULL;
    if ((rc = bld_phases(&b)) || (rc = bld_cpu_ops_finish(&b))) goto cleanup;
    if (o->release_events) {
        /* from here on the graph needs nothing of the event table */
        lsim_trace_drop_events(t);
        free(b.ev_node);
        free(b.ev_enter);
        free(b.ev_rpc);
        free(b.ev_phase);
        free(b.ev_fseq);
        b.ev_node = b.ev_enter = NULL;
        b.ev_rpc = NULL;
        b.ev_phase = NULL;
        b.ev_fseq = NULL;
    }
    if ((rc = build_edges(&b)) || (rc = finish_graph(&b))) goto cleanup;
    *out = b.g;
    b.g = NULL;
cleanup:
    free(ev_proc);
    free_builder(&b);
    if (rc && b.g && b.g->strings) {
        /* give the strings back so the caller's trace stays whole */
        t->strings = b.g->strings;
        b.g->strings = NULL;
    }
    lsim_graph_free(b.g);
    return rc;
}
