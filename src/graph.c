/* Execution-graph construction from one Kineto trace (see graph.h).
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
#include "lumosim/graph.h"

#include <limits.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

static const char *EDGE_NAMES[LSIM_E_NCLASSES] = {"cpu_thread", "cpu_cross_thread", "launch", "sync",
                                                  "stream",     "event",            "hidden"};
const char *lsim_edge_class_name(lsim_edge_class c)
{
    return (unsigned)c < LSIM_E_NCLASSES ? EDGE_NAMES[c] : "?";
}
static const char *KIND_NAMES[LSIM_N_NKINDS] = {"cpu", "runtime", "kernel", "memcpy", "memset"};
const char *lsim_node_kind_name(lsim_node_kind k) { return (unsigned)k < LSIM_N_NKINDS ? KIND_NAMES[k] : "?"; }
static const char *DROP_NAMES[LSIM_DROP_NREASONS] = {"contradicts_observed_times", "no_source", "no_target",
                                                     "same_stream"};
const char *lsim_drop_reason_name(lsim_drop_reason r)
{
    return (unsigned)r < LSIM_DROP_NREASONS ? DROP_NAMES[r] : "?";
}

void lsim_build_opts_default(lsim_build_opts *o)
{
    o->latency = LSIM_LAT_MODEL;
    o->nest_tol_ns = 1000;
    o->infer_gap_ns = 10000;
    o->infer_slack_ns = 5000;
    o->event_tol_ns = 1000;
    o->release_events = 0;
}

/* ------------------------------------------------------------ small utils */

typedef struct edge_tmp {
    uint32_t dst, src;
    lsim_ns delay;
    uint8_t cls; /* class | LSIM_EDGE_END */
} edge_tmp;

/* What the graph needs of a cuda_sync event, copied so that the trace's
 * event table can be released early. */
typedef struct sync_rec {
    int32_t device;
    uint8_t kind;
    int64_t stream, wait_stream, wait_rec_corr;
} sync_rec;

typedef struct builder {
    lsim_trace *t;
    const lsim_build_opts *o;
    lsim_graph *g;
    lsim_err *err;
    size_t cap;
    edge_tmp *edges;
    size_t nedges, capedges;
    /* per node extras used only while building */
    uint32_t *node_event; /* source event index */
    uint32_t *launch_of;  /* GPU node -> runtime node, NONE if pre-window */
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
    sync_rec *syncs;
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
} builder;

static int oom(builder *b) { return lsim_err_set(b->err, LSIM_ENOMEM, "%s: out of memory building the graph", b->t->path); }

static int add_edge(builder *b, uint32_t src, uint32_t dst, uint8_t cls, lsim_ns delay)
{
    if (b->nedges == b->capedges) {
        size_t nc = b->capedges ? b->capedges * 2 : 1024;
        edge_tmp *n = realloc(b->edges, nc * sizeof *n);
        if (!n) return oom(b);
        b->edges = n;
        b->capedges = nc;
    }
    b->edges[b->nedges++] = (edge_tmp){dst, src, delay, cls};
    return 0;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* open addressing int64 -> uint32; key INT64_MIN = empty */
static int map_init(int64_t **keys, uint32_t **vals, size_t *slots, size_t n)
{
    size_t s = 16;
    while (s < n * 2 + 16) s <<= 1;
    *keys = malloc(s * sizeof **keys);
    *vals = malloc(s * sizeof **vals);
    if (!*keys || !*vals) return LSIM_ENOMEM;
    for (size_t i = 0; i < s; i++) (*keys)[i] = INT64_MIN;
    *slots = s;
    return 0;
}

/* returns 1 if inserted, 0 if the key existed (value untouched) */
static int map_put(int64_t *keys, uint32_t *vals, size_t slots, int64_t k, uint32_t v)
{
    size_t i = mix64((uint64_t)k) & (slots - 1);
    while (keys[i] != INT64_MIN) {
        if (keys[i] == k) return 0;
        i = (i + 1) & (slots - 1);
    }
    keys[i] = k;
    vals[i] = v;
    return 1;
}

static size_t map_slot(const int64_t *keys, size_t slots, int64_t k)
{
    size_t i = mix64((uint64_t)k) & (slots - 1);
    while (keys[i] != INT64_MIN && keys[i] != k) i = (i + 1) & (slots - 1);
    return i;
}

static uint32_t map_get(const int64_t *keys, const uint32_t *vals, size_t slots, int64_t k)
{
    if (!keys || k == INT64_MIN) return NONE;
    size_t i = mix64((uint64_t)k) & (slots - 1);
    while (keys[i] != INT64_MIN) {
        if (keys[i] == k) return vals[i];
        i = (i + 1) & (slots - 1);
    }
    return NONE;
}

static int cmp_ns(const void *a, const void *b)
{
    lsim_ns x = *(const lsim_ns *)a, y = *(const lsim_ns *)b;
    return (x > y) - (x < y);
}

static lsim_ns median(lsim_ns *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_ns);
    return v[n / 2];
}

/* --------------------------------------------------------- node storage */

static int grow_nodes(builder *b, size_t need)
{
    lsim_graph *g = b->g;
    if (need <= b->cap) return 0;
    size_t nc = b->cap ? b->cap : 1024;
    while (nc < need) nc *= 2;
#define GROW(field)                                                   \
    do {                                                              \
        void *p_ = realloc(g->field, nc * sizeof *g->field);          \
        if (!p_) return oom(b);                                       \
        g->field = p_;                                                \
    } while (0)
    GROW(kind);
    GROW(flags);
    GROW(proc);
    GROW(name);
    GROW(dur);
    GROW(obs_start);
    GROW(obs_end);
    GROW(release);
    GROW(corr);
    GROW(iter);
    GROW(coll);
#undef GROW
    uint32_t *ne = realloc(b->node_event, nc * sizeof *ne);
    if (!ne) return oom(b);
    b->node_event = ne;
    uint32_t *lo = realloc(b->launch_of, nc * sizeof *lo);
    if (!lo) return oom(b);
    b->launch_of = lo;
    b->cap = nc;
    return 0;
}

static int new_node(builder *b, uint8_t kind, uint32_t proc, uint32_t ev, lsim_ns s, lsim_ns e, uint32_t *id)
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
    b->node_event[v] = ev;
    b->launch_of[v] = NONE;
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

static int is_gpu_kind(uint8_t k) { return k == LSIM_EV_KERNEL || k == LSIM_EV_MEMCPY || k == LSIM_EV_MEMSET; }
static int is_cpu_kind(uint8_t k) { return k == LSIM_EV_CPU_OP || k == LSIM_EV_ANNOTATION || k == LSIM_EV_RUNTIME; }

/* Assign each event a processor; returns per-event proc index (NONE if the
 * event is not on a processor). Processors are sorted (CPU by pid/tid, GPU by
 * device/stream) so ids are deterministic. */
static int build_procs(builder *b, uint32_t **ev_proc_out)
{
    lsim_trace *t = b->t;
    lsim_graph *g = b->g;
    int rc = 0;
    prockey *keys = malloc((t->nev ? t->nev : 1) * sizeof *keys);
    uint32_t *ev_proc = malloc((t->nev ? t->nev : 1) * sizeof *ev_proc);
    if (!keys || !ev_proc) {
        rc = oom(b);
        goto cleanup;
    }
    size_t nk = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        ev_proc[i] = NONE;
        const lsim_row *r = lsim_event_row(t, e);
        if (is_gpu_kind(e->kind)) keys[nk++] = (prockey){1, r->device, r->stream, (uint32_t)i};
        else if (is_cpu_kind(e->kind)) keys[nk++] = (prockey){0, r->pid, r->tid, (uint32_t)i};
    }
    qsort(keys, nk, sizeof *keys, cmp_prockey);
    size_t np = 0;
    for (size_t i = 0; i < nk; i++)
        if (i == 0 || cmp_prockey(&keys[i], &keys[i - 1]) != 0) np++;
    g->procs = calloc(np ? np : 1, sizeof *g->procs);
    b->proc_device = calloc(np ? np : 1, sizeof *b->proc_device);
    if (!g->procs || !b->proc_device) {
        rc = oom(b);
        goto cleanup;
    }
    uint32_t p = NONE;
    for (size_t i = 0; i < nk; i++) {
        if (i == 0 || cmp_prockey(&keys[i], &keys[i - 1]) != 0) {
            p = p == NONE ? 0 : p + 1;
            g->procs[p].is_gpu = keys[i].is_gpu;
            g->procs[p].pid = keys[i].a;
            g->procs[p].tid = keys[i].b;
            b->proc_device[p] = keys[i].is_gpu ? (int32_t)keys[i].a : -1;
        }
        ev_proc[keys[i].idx] = p;
    }
    g->nprocs = (uint32_t)np;
    *ev_proc_out = ev_proc;
    ev_proc = NULL;
cleanup:
    free(keys);
    free(ev_proc);
    return rc;
}

static const char *api_base(const char *n);

/* ---------------------------------------------------------- CPU flatten */

int lsim_graph_layer_annotation(const char *s)
{
    const char *p = strstr(s, "layer");
    if (!p) p = strstr(s, "Layer");
    if (!p) return -1;
    p += 5;
    if (*p == 's') p++;
    if (*p == '[' || *p == '.' || *p == '_' || *p == ' ') p++;
    if (!isdigit((unsigned char)*p)) return -1;
    long l = strtol(p, NULL, 10);
    return l > 1000000 ? -1 : (int)l;
}

typedef struct cpu_item {
    lsim_ns ts, end;
    uint32_t ev;
    uint8_t prio;
} cpu_item;

typedef struct flat_state {
    uint32_t proc;
    lsim_ns cursor;
    uint32_t last_node; /* previous piece on this thread */
    int layer_end;      /* last_node ends a layer annotation: merge nothing into it */
} flat_state;

/* Emit the piece [s, e) of event item `it` as a node, chained to the previous
 * piece of the thread with the gap as delay. */
static int emit_piece(builder *b, flat_state *fs, const cpu_item *it, lsim_ns s, lsim_ns e, int force)
{
    if (e <= s && !force) return 0;
    const lsim_event *x = &b->t->ev[it->ev];
    uint8_t kind = x->kind == LSIM_EV_RUNTIME ? LSIM_N_RUNTIME : LSIM_N_CPU;
    uint32_t v = fs->last_node;
    /* Adjacent CPU pieces with no gap between them are one stretch of CPU
     * work to the simulation: merge them (keeps memory per event low). Never
     * across the start of a ProfilerStep, so iteration membership stays, and
     * never a layer annotation's first or last piece with its neighbours, so
     * where the layer starts and ends stays visible
     * (lsim_graph_layer_annotation). */
    if (kind == LSIM_N_CPU && v != NONE && b->g->kind[v] == LSIM_N_CPU && b->g->obs_end[v] == s &&
        !(x->kind == LSIM_EV_ANNOTATION && x->ts == s &&
          !strncmp(lsim_strtab_get(b->g->strings, x->name), "ProfilerStep#", 13)) &&
        !(x->kind == LSIM_EV_ANNOTATION && (s == x->ts || e == x->ts + x->dur) &&
          lsim_graph_layer_annotation(lsim_strtab_get(b->g->strings, x->name)) >= 0) &&
        !fs->layer_end) {
        b->g->obs_end[v] = e;
        b->g->dur[v] = e - b->g->obs_start[v];
        fs->cursor = e;
        b->ev_node[it->ev] = v;
        return 0;
    }
    int rc = new_node(b, kind, fs->proc, it->ev, s, e, &v);
    if (rc) return rc;
    if (fs->last_node == NONE) {
        b->g->release[v] = s; /* thread start: CPU time, allowed */
    } else {
        lsim_ns gap = s - b->g->obs_end[fs->last_node];
        if ((rc = add_edge(b, fs->last_node, v, LSIM_E_CPU_THREAD, gap))) return rc;
    }
    fs->last_node = v;
    fs->cursor = e;
    b->ev_node[it->ev] = v;
    /* a layer annotation's last piece: what follows is outside the layer */
    fs->layer_end = x->kind == LSIM_EV_ANNOTATION && e == x->ts + x->dur &&
                    lsim_graph_layer_annotation(lsim_strtab_get(b->g->strings, x->name)) >= 0;
    return 0;
}

static const lsim_event *g_sort_events;
static uint8_t cpu_prio(uint8_t kind) { return kind == LSIM_EV_ANNOTATION ? 0 : kind == LSIM_EV_CPU_OP ? 1 : 2; }

/* Thread order: by start, longer first (the parent), annotations before ops
 * before runtime calls at a tie, then file order. */
static int cmp_cpu_idx(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, c = *(const uint32_t *)y;
    const lsim_event *p = &g_sort_events[a], *q = &g_sort_events[c];
    if (p->ts != q->ts) return p->ts < q->ts ? -1 : 1;
    lsim_ns pe = p->ts + p->dur, qe = q->ts + q->dur;
    if (pe != qe) return pe > qe ? -1 : 1;
    uint8_t pp = cpu_prio(p->kind), qp = cpu_prio(q->kind);
    if (pp != qp) return pp - qp;
    return a < c ? -1 : (a > c);
}

typedef struct cpu_stack {
    cpu_item *v;
    size_t n, cap;
} cpu_stack;

/* One thread: a stack walk over its events in thread order. The stack holds
 * the open (enclosing) events; only its depth is ever allocated. */
static int flatten_thread(builder *b, uint32_t proc, const uint32_t *idx, size_t n, cpu_stack *st)
{
    flat_state fs = {proc, INT64_MIN, NONE, 0};
    int rc;
    st->n = 0;
    for (size_t i = 0; i < n; i++) {
        const lsim_event *x = &b->t->ev[idx[i]];
        cpu_item it = {x->ts, x->ts + x->dur, idx[i], cpu_prio(x->kind)};
        while (st->n > 0 && st->v[st->n - 1].end <= it.ts) {
            cpu_item *top = &st->v[--st->n];
            int force = b->ev_node[top->ev] == NONE && b->t->ev[top->ev].kind == LSIM_EV_RUNTIME;
            if ((rc = emit_piece(b, &fs, top, fs.cursor > top->ts ? fs.cursor : top->ts, top->end, force))) return rc;
        }
        if (st->n > 0) {
            cpu_item *top = &st->v[st->n - 1];
            if (it.end > top->end) it.end = top->end; /* poke-out (0.25 us precision) clamped */
            if ((rc = emit_piece(b, &fs, top, fs.cursor > top->ts ? fs.cursor : top->ts, it.ts, 0))) return rc;
        }
        if (st->n == st->cap) {
            size_t nc = st->cap ? st->cap * 2 : 64;
            cpu_item *nv = realloc(st->v, nc * sizeof *nv);
            if (!nv) return oom(b);
            st->v = nv;
            st->cap = nc;
        }
        st->v[st->n++] = it;
        fs.cursor = it.ts;
        if (x->kind == LSIM_EV_RUNTIME)
            for (size_t k = st->n - 1; k-- > 0;) {
                const lsim_event *enc = &b->t->ev[st->v[k].ev];
                if (enc->kind == LSIM_EV_CPU_OP && enc->coll >= 0) {
                    b->ev_rpc[it.ev] = enc->coll; /* launched inside record_param_comms */
                    break;
                }
            }
        if (x->kind == LSIM_EV_RUNTIME && !strncmp(api_base(lsim_strtab_get(b->g->strings, x->name)), "Memcpy", 6)) {
            if ((rc = emit_piece(b, &fs, &st->v[st->n - 1], it.ts, it.ts, 1))) return rc;
            b->g->flags[fs.last_node] |= LSIM_NF_ENTER;
            b->ev_enter[it.ev] = fs.last_node;
            b->ev_node[it.ev] = NONE;
        }
    }
    while (st->n > 0) {
        cpu_item *top = &st->v[--st->n];
        int force = b->ev_node[top->ev] == NONE && b->t->ev[top->ev].kind == LSIM_EV_RUNTIME;
        if ((rc = emit_piece(b, &fs, top, fs.cursor > top->ts ? fs.cursor : top->ts, top->end, force))) return rc;
    }
    return 0;
}

static int build_cpu(builder *b, const uint32_t *ev_proc)
{
    lsim_trace *t = b->t;
    lsim_graph *g = b->g;
    int rc = 0;
    cpu_stack st = {0};
    size_t *count = calloc(g->nprocs + 1, sizeof *count);
    uint32_t *idx = malloc((t->nev ? t->nev : 1) * sizeof *idx);
    if (!count || !idx) {
        rc = oom(b);
        goto cleanup;
    }
    for (size_t i = 0; i < t->nev; i++)
        if (ev_proc[i] != NONE && !g->procs[ev_proc[i]].is_gpu) count[ev_proc[i] + 1]++;
    for (uint32_t p = 0; p < g->nprocs; p++) count[p + 1] += count[p];
    for (size_t i = 0; i < t->nev; i++) {
        uint32_t p = ev_proc[i];
        if (p == NONE || g->procs[p].is_gpu) continue;
        idx[count[p]++] = (uint32_t)i;
    }
    /* count[p] is now the end of p's range; walk ranges */
    g_sort_events = t->ev;
    size_t begin = 0;
    for (uint32_t p = 0; p < g->nprocs; p++) {
        size_t end = count[p];
        if (g->procs[p].is_gpu || end == begin) {
            begin = end;
            continue;
        }
        qsort(idx + begin, end - begin, sizeof *idx, cmp_cpu_idx);
        if ((rc = flatten_thread(b, p, idx + begin, end - begin, &st))) goto cleanup;
        begin = end;
    }
cleanup:
    free(count);
    free(idx);
    free(st.v);
    return rc;
}

/* ------------------------------------------------------------- GPU nodes */

static const lsim_graph *g_sort_graph;
static int cmp_stream_order(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, c = *(const uint32_t *)y;
    const lsim_graph *g = g_sort_graph;
    if (g->obs_start[a] != g->obs_start[c]) return g->obs_start[a] < g->obs_start[c] ? -1 : 1;
    if (g->obs_end[a] != g->obs_end[c]) return g->obs_end[a] < g->obs_end[c] ? -1 : 1;
    return a < c ? -1 : (a > c);
}

static int build_gpu(builder *b, const uint32_t *ev_proc)
{
    lsim_trace *t = b->t;
    lsim_graph *g = b->g;
    int rc;
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        if (!is_gpu_kind(e->kind)) continue;
        uint8_t k = e->kind == LSIM_EV_KERNEL ? LSIM_N_KERNEL : e->kind == LSIM_EV_MEMCPY ? LSIM_N_MEMCPY : LSIM_N_MEMSET;
        uint32_t v;
        if ((rc = new_node(b, k, ev_proc[i], (uint32_t)i, e->ts, e->ts + e->dur, &v))) return rc;
        if (e->coll >= 0 && t->colls[e->coll].kind != LSIM_COLL_NONE) g->flags[v] |= LSIM_NF_COLL;
        if (e->kind == LSIM_EV_MEMCPY && e->dtoh && e->pageable) g->flags[v] |= LSIM_NF_DTOH_PAGEABLE;
        b->ev_node[i] = v;
    }
    /* per-stream order */
    b->stream_nodes = calloc(g->nprocs, sizeof *b->stream_nodes);
    b->stream_len = calloc(g->nprocs, sizeof *b->stream_len);
    b->stream_lt = calloc(g->nprocs, sizeof *b->stream_lt);
    if (!b->stream_nodes || !b->stream_len || !b->stream_lt) return oom(b);
    b->nstreams_alloc = g->nprocs;
    for (size_t v = 0; v < g->n; v++)
        if (g->procs[g->proc[v]].is_gpu) b->stream_len[g->proc[v]]++;
    for (uint32_t p = 0; p < g->nprocs; p++) {
        if (!b->stream_len[p]) continue;
        b->stream_nodes[p] = malloc(b->stream_len[p] * sizeof(uint32_t));
        b->stream_lt[p] = malloc(b->stream_len[p] * sizeof(lsim_ns));
        if (!b->stream_nodes[p] || !b->stream_lt[p]) return oom(b);
        b->stream_len[p] = 0;
    }
    for (size_t v = 0; v < g->n; v++)
        if (g->procs[g->proc[v]].is_gpu) b->stream_nodes[g->proc[v]][b->stream_len[g->proc[v]]++] = (uint32_t)v;
    g_sort_graph = g;
    for (uint32_t p = 0; p < g->nprocs; p++)
        if (b->stream_len[p]) qsort(b->stream_nodes[p], b->stream_len[p], sizeof(uint32_t), cmp_stream_order);
    return 0;
}

/* ----------------------------------------------------- correlation maps */

static int build_corr_maps(builder *b)
{
    lsim_trace *t = b->t;
    size_t nrt = 0, nsync = 0;
    for (size_t i = 0; i < t->nev; i++) {
        if (t->ev[i].kind == LSIM_EV_RUNTIME && t->ev[i].corr >= 0) nrt++;
        if (t->ev[i].kind == LSIM_EV_SYNC && t->ev[i].corr >= 0) nsync++;
    }
    if (map_init(&b->ckeys, &b->cvals, &b->cslots, nrt) || map_init(&b->skeys, &b->svals, &b->sslots, nsync))
        return oom(b);
    b->syncs = malloc((nsync ? nsync : 1) * sizeof *b->syncs);
    b->cvals_launch = malloc(b->cslots * sizeof *b->cvals_launch);
    if (!b->syncs || !b->cvals_launch) return oom(b);
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        if (e->corr < 0) continue;
        if (e->kind == LSIM_EV_RUNTIME) {
            uint32_t v = b->ev_node[i];
            if (v == NONE) continue;
            if (map_put(b->ckeys, b->cvals, b->cslots, e->corr, v)) {
                b->cvals_launch[map_slot(b->ckeys, b->cslots, e->corr)] = b->ev_enter[i] != NONE ? b->ev_enter[i] : v;
            } else {
                uint32_t other = map_get(b->ckeys, b->cvals, b->cslots, e->corr);
                return lsim_err_set(b->err, LSIM_ETRACE,
                                    "%s: duplicate correlation id %lld on two runtime calls (\"%s\" and \"%s\")",
                                    t->path, (long long)e->corr, lsim_strtab_get(b->g->strings, b->g->name[other]),
                                    lsim_strtab_get(b->g->strings, e->name));
            }
        } else if (e->kind == LSIM_EV_SYNC) {
            const lsim_row *r = lsim_event_row(t, e);
            b->syncs[b->nsyncs] = (sync_rec){r->device, e->sync_kind, r->stream, lsim_event_wait_stream(t, e),
                                              lsim_event_wait_rec_corr(t, e)};
            if (map_put(b->skeys, b->svals, b->sslots, e->corr, (uint32_t)b->nsyncs)) b->nsyncs++;
        }
    }
    return 0;
}

/* ------------------------------------------------------------- launches */

static const char *rt_name(const builder *b, uint32_t v) { return lsim_strtab_get(b->g->strings, b->g->name[v]); }

/* API name without its cuda/hip/cu prefix, for classification. */
static const char *api_base(const char *n)
{
    if (!strncmp(n, "cuda", 4)) return n + 4;
    if (!strncmp(n, "hip", 3)) return n + 3;
    if (!strncmp(n, "cu", 2)) return n + 2;
    return n;
}

static int link_launches(builder *b)
{
    lsim_graph *g = b->g;
    for (size_t v = 0; v < g->n; v++) {
        if (!g->procs[g->proc[v]].is_gpu) continue;
        /* launched from the call's node, or from its entry node (memcpy) */
        uint32_t r = g->corr[v] >= 0 ? map_get(b->ckeys, b->cvals_launch, b->cslots, g->corr[v]) : NONE;
        b->launch_of[v] = r;
        if (r == NONE) {
            g->flags[v] |= LSIM_NF_PREWINDOW;
            g->prewindow++;
        } else if (strstr(rt_name(b, r), "GraphLaunch")) {
            g->flags[v] |= LSIM_NF_GRAPH;
        }
    }
    /* prefix-max launch time per stream position */
    for (uint32_t p = 0; p < g->nprocs; p++) {
        lsim_ns m = INT64_MIN;
        for (uint32_t i = 0; i < b->stream_len[p]; i++) {
            uint32_t v = b->stream_nodes[p][i];
            lsim_ns lt = b->launch_of[v] == NONE ? INT64_MIN : g->obs_start[b->launch_of[v]];
            if (lt > m) m = lt;
            b->stream_lt[p][i] = m;
        }
    }
    return 0;
}

/* A (time, node) pair, ordered by time then node id: for ordering
 * collectives by launch and for searching ops by their end time. */
typedef struct time_node {
    lsim_ns t;
    uint32_t node;
} time_node;

static int cmp_time_node(const void *x, const void *y)
{
    const time_node *a = x, *c = y;
    if (a->t != c->t) return a->t < c->t ? -1 : 1;
    return a->node < c->node ? -1 : (a->node > c->node);
}

/* Number of items with t <= s in a sorted array (index past the last). */
static size_t count_le(const time_node *v, size_t n, lsim_ns s)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].t <= s) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Collective kernels: complete what the kernel does not say from the
 * record_param_comms op its launch sits in (older PyTorch: sizes from Input
 * Dims; newer: name, sizes, group), then number them per process group in
 * launch order -- the key by which ranks of a group are matched later. */
static int label_collectives(builder *b)
{
    lsim_graph *g = b->g;
    size_t n = 0;
    for (size_t v = 0; v < g->n; v++)
        if ((g->flags[v] & LSIM_NF_COLL) && g->coll[v] >= 0) n++;
    if (!n) return 0;
    time_node *ord = malloc(n * sizeof *ord);
    uint32_t *gname = malloc(n * sizeof *gname);
    int64_t *gcount = malloc(n * sizeof *gcount);
    if (!ord || !gname || !gcount) {
        free(ord);
        free(gname);
        free(gcount);
        return oom(b);
    }
    n = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (!(g->flags[v] & LSIM_NF_COLL) || g->coll[v] < 0) continue;
        uint32_t r = b->launch_of[v];
        lsim_coll_info *c = &g->colls[g->coll[v]];
        int32_t rpc = r != NONE ? b->node_rpc[r] : -1;
        if (r != NONE && rpc < 0 && b->node_rpc) {
            /* the launch may sit in a piece of the call: look up the call */
            uint32_t call = g->corr[v] >= 0 ? map_get(b->ckeys, b->cvals, b->cslots, g->corr[v]) : NONE;
            if (call != NONE) rpc = b->node_rpc[call];
        }
        if (rpc >= 0) {
            const lsim_coll_info *p = &g->colls[rpc];
            if ((c->kind == LSIM_COLL_GENERIC || c->kind == LSIM_COLL_OTHER) && p->kind != LSIM_COLL_NONE) c->kind = p->kind;
            if (c->in_nelems < 0) c->in_nelems = p->in_nelems;
            if (c->out_nelems < 0) c->out_nelems = p->out_nelems;
            if (c->group_size < 0) c->group_size = p->group_size;
            if (c->dtype_bytes < 0) c->dtype_bytes = p->dtype_bytes;
            if (c->pg_name == UINT32_MAX) c->pg_name = p->pg_name;
            if (c->pg_ranks == UINT32_MAX) c->pg_ranks = p->pg_ranks;
            if (c->bytes < 0 && c->in_nelems >= 0 && c->dtype_bytes > 0 && c->in_nelems <= INT64_MAX / c->dtype_bytes)
                c->bytes = c->in_nelems * c->dtype_bytes;
        }
        ord[n++] = (time_node){r != NONE ? g->obs_start[r] : g->obs_start[v], (uint32_t)v};
    }
    qsort(ord, n, sizeof *ord, cmp_time_node);
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        lsim_coll_info *c = &g->colls[g->coll[ord[i].node]];
        size_t k = 0;
        while (k < ng && gname[k] != c->pg_name) k++;
        if (k == ng) {
            gname[ng] = c->pg_name;
            gcount[ng++] = 0;
        }
        c->seq = gcount[k]++;
    }
    free(ord);
    free(gname);
    free(gcount);
    return 0;
}

/* How many ops of stream p were launched strictly before time t (launch
 * times are prefix maxima, so this is a binary search). */
static uint32_t launched_before(const builder *b, uint32_t p, lsim_ns t)
{
    uint32_t lo = 0, hi = b->stream_len[p];
    const lsim_ns *lt = b->stream_lt[p];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (lt[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Last op on stream p launched strictly before time t (NONE if none). */
static uint32_t last_launched_before(const builder *b, uint32_t p, lsim_ns t)
{
    uint32_t k = launched_before(b, p, t);
    return k == 0 ? NONE : b->stream_nodes[p][k - 1];
}

/* First op on stream p launched at or after time t (NONE if none). */
static uint32_t first_launched_after(const builder *b, uint32_t p, lsim_ns t)
{
    uint32_t k = launched_before(b, p, t);
    return k == b->stream_len[p] ? NONE : b->stream_nodes[p][k];
}

static uint32_t stream_proc(const builder *b, int32_t device, int64_t stream)
{
    const lsim_graph *g = b->g;
    for (uint32_t p = 0; p < g->nprocs; p++)
        if (g->procs[p].is_gpu && g->procs[p].tid == stream && (device < 0 || g->procs[p].pid == device)) return p;
    return NONE;
}

/* Stream of the GPU op launched by thread `proc` closest before/after the
 * runtime node v (by thread order): the launches around a record or wait. */
static uint32_t thread_launch_stream(const builder *b, uint32_t v, int after)
{
    const lsim_graph *g = b->g;
    /* walk this thread's nodes: nodes of one thread are contiguous in id order */
    uint32_t proc = g->proc[v];
    for (size_t k = v;;) {
        if (after) {
            if (++k >= g->n || g->proc[k] != proc) break;
        } else {
            if (k == 0) break;
            if (g->proc[--k] != proc) break;
        }
        if (g->kind[k] != LSIM_N_RUNTIME || g->corr[k] < 0) continue;
        /* does this runtime call launch GPU work? its ops carry its launch time */
        for (uint32_t p = 0; p < g->nprocs; p++) {
            if (!g->procs[p].is_gpu) continue;
            /* ops launched exactly by k have launch time obs_start[k] */
            uint32_t u = first_launched_after(b, p, g->obs_start[k]);
            if (u != NONE && b->launch_of[u] != NONE && b->node_event[b->launch_of[u]] == b->node_event[k]) return p;
        }
        if ((after ? k - v : v - k) > 64) break; /* look near the call only */
    }
    return NONE;
}

typedef struct lat_sample {
    uint32_t api;
    lsim_ns v;
} lat_sample;

static int cmp_lat_sample(const void *x, const void *y)
{
    const lat_sample *a = x, *c = y;
    if (a->api != c->api) return a->api < c->api ? -1 : 1;
    return (a->v > c->v) - (a->v < c->v);
}

/* Medians per API of `s` (sorted in place); APIs with fewer than 3 samples
 * get INT64_MIN (the all-API medians are used for them). */
static int per_api_medians(builder *b, lat_sample *s, size_t n, lsim_ns *all_median, lsim_ns *out_per_api)
{
    lsim_ns *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp) return oom(b);
    for (size_t i = 0; i < n; i++) tmp[i] = s[i].v;
    *all_median = n ? median(tmp, n) : 5000;
    free(tmp);
    qsort(s, n, sizeof *s, cmp_lat_sample);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j].api == s[i].api) j++;
        for (size_t k = 0; k < b->napi; k++)
            if (b->api_ids[k] == s[i].api) out_per_api[k] = j - i >= 3 ? s[i + (j - i) / 2].v : INT64_MIN;
        i = j;
    }
    return 0;
}

/* Launch latency, learned only where it is one: the stream was idle when the
 * call began and the op waited for nothing on another stream. Two medians per
 * API: from the call's start and from its end; a kernel is modelled to start
 * no earlier than either (a long call, e.g. a lazy module load, launches at
 * its end; a short one some microseconds after its start). */
static int learn_latency(builder *b)
{
    lsim_graph *g = b->g;
    int rc = 0;
    size_t n = 0;
    lsim_ns *xready = malloc((g->n ? g->n : 1) * sizeof *xready);
    lat_sample *ls = malloc((g->n ? g->n : 1) * sizeof *ls);
    lat_sample *le = malloc((g->n ? g->n : 1) * sizeof *le);
    if (!xready || !ls || !le) {
        rc = oom(b);
        goto cleanup;
    }
    for (size_t v = 0; v < g->n; v++) xready[v] = INT64_MIN;
    for (size_t k = 0; k < b->nedges; k++) {
        const edge_tmp *e = &b->edges[k];
        if ((e->cls & 0x7f) == LSIM_E_EVENT && g->obs_end[e->src] > xready[e->dst]) xready[e->dst] = g->obs_end[e->src];
    }
    for (uint32_t p = 0; p < g->nprocs; p++) {
        for (uint32_t i = 0; i < b->stream_len[p]; i++) {
            uint32_t v = b->stream_nodes[p][i];
            uint32_t r = b->launch_of[v];
            if (r == NONE) continue;
            if (xready[v] > g->obs_start[r]) continue;
            if (i > 0) {
                uint32_t prev = b->stream_nodes[p][i - 1];
                if (b->launch_of[prev] == r) continue; /* later op of the same launch */
                if (g->obs_end[prev] > g->obs_start[r]) continue; /* stream busy: queueing */
            }
            ls[n] = (lat_sample){g->name[r], g->obs_start[v] - g->obs_start[r]};
            le[n] = (lat_sample){g->name[r], g->obs_start[v] - g->obs_end[r]};
            n++;
        }
    }
    g->launch_samples = n;
    /* the distinct APIs */
    qsort(ls, n, sizeof *ls, cmp_lat_sample);
    size_t napi = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || ls[i].api != ls[i - 1].api) napi++;
    b->api_ids = malloc((napi ? napi : 1) * sizeof *b->api_ids);
    b->api_lat = malloc((napi ? napi : 1) * sizeof *b->api_lat);
    b->api_lat_end = malloc((napi ? napi : 1) * sizeof *b->api_lat_end);
    if (!b->api_ids || !b->api_lat || !b->api_lat_end) {
        rc = oom(b);
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++)
        if (i == 0 || ls[i].api != ls[i - 1].api) b->api_ids[b->napi++] = ls[i].api;
    if ((rc = per_api_medians(b, ls, n, &b->lat_default, b->api_lat))) goto cleanup;
    if ((rc = per_api_medians(b, le, n, &b->lat_default_end, b->api_lat_end))) goto cleanup;
    if (!n) {
        b->lat_default = 5000;
        b->lat_default_end = 0;
    }
    g->launch_latency_ns = b->lat_default;
cleanup:
    free(xready);
    free(ls);
    free(le);
    return rc;
}

/* Modelled delay of a launch edge from the end of call node r. */
static lsim_ns model_launch_delay(const builder *b, uint32_t r)
{
    const lsim_graph *g = b->g;
    lsim_ns ls = b->lat_default, le = b->lat_default_end;
    int learned = 0;
    for (size_t i = 0; i < b->napi; i++)
        if (b->api_ids[i] == g->name[r]) {
            if (b->api_lat[i] != INT64_MIN) {
                ls = b->api_lat[i];
                le = b->api_lat_end[i];
                learned = 1;
            }
            break;
        }
    /* A graph launch submits its first kernels while the call is still
     * running: without samples of its own, borrowing the kernel-launch floor
     * from the call's end would hold them back. */
    if (!learned && strstr(lsim_strtab_get(g->strings, g->name[r]), "GraphLaunch")) return ls - (g->obs_end[r] - g->obs_start[r]);
    lsim_ns from_start = ls - (g->obs_end[r] - g->obs_start[r]);
    return from_start > le ? from_start : le;
}

/* Launch and stream-order edges. Launch delay is relative to the end of the
 * call's node; latency is measured from the call's start. */
/* The gap a stream leaves between two ops when the second was already
 * queued (its launch predicted it ready before the first ended): the GPU's
 * own dispatch overhead, about a microsecond, which adds up over thousands
 * of back-to-back kernels. Median over such pairs with a non-negative gap
 * below 20 us. */
static int learn_queued_gap(builder *b, lsim_ns *out)
{
    lsim_graph *g = b->g;
    size_t n = 0;
    lsim_ns *gaps = malloc((g->n ? g->n : 1) * sizeof *gaps);
    if (!gaps) return oom(b);
    for (uint32_t p = 0; p < g->nprocs; p++) {
        for (uint32_t i = 1; i < b->stream_len[p]; i++) {
            uint32_t v = b->stream_nodes[p][i], prev = b->stream_nodes[p][i - 1];
            uint32_t r = b->launch_of[v];
            if (r == NONE || r == b->launch_of[prev] || (g->flags[v] & LSIM_NF_GRAPH)) continue;
            if (g->obs_end[r] + model_launch_delay(b, r) >= g->obs_end[prev]) continue; /* not queued */
            lsim_ns gap = g->obs_start[v] - g->obs_end[prev];
            if (gap >= 0 && gap < 20000) gaps[n++] = gap;
        }
    }
    *out = n >= 8 ? median(gaps, n) : 0;
    free(gaps);
    return 0;
}

static int add_launch_and_stream_edges(builder *b)
{
    lsim_graph *g = b->g;
    int rc;
    int observed = b->o->latency == LSIM_LAT_OBSERVED;
    lsim_ns qgap = 0;
    if (!observed && (rc = learn_queued_gap(b, &qgap))) return rc;
    g->queued_gap_ns = qgap;
    for (uint32_t p = 0; p < g->nprocs; p++) {
        uint32_t front = NONE; /* the op that ended last so far on this stream */
        for (uint32_t i = 0; i < b->stream_len[p]; i++) {
            uint32_t v = b->stream_nodes[p][i];
            uint32_t r = b->launch_of[v];
            /* After ops that overlapped (CUDA-graph branches), the next op
             * that starts after all of them waits for the one that ended
             * last, not only for its immediate predecessor. */
            if (i > 1 && front != b->stream_nodes[p][i - 1] && g->obs_start[v] >= g->obs_end[front] - b->o->event_tol_ns) {
                lsim_ns gap = g->obs_start[v] - g->obs_end[front];
                if ((rc = add_edge(b, front, v, LSIM_E_STREAM, observed ? (gap < 0 ? gap : 0) : (gap < 0 ? 0 : qgap))))
                    return rc;
            }
            if (front == NONE || g->obs_end[v] > g->obs_end[front]) front = v;
            if (r != NONE) {
                lsim_ns d = observed ? g->obs_start[v] - g->obs_end[r]
                                     : model_launch_delay(b, r);
                if ((rc = add_edge(b, r, v, LSIM_E_LAUNCH, d))) return rc;
                g->iter[v] = g->iter[r];
            } else {
                g->release[v] = observed ? g->obs_start[v] : g->t0;
            }
            if (i > 0) {
                uint32_t prev = b->stream_nodes[p][i - 1];
                lsim_ns gap = g->obs_start[v] - g->obs_end[prev];
                /* Observed mode keeps the observed overlap. The model does not
                 * read GPU start times: ops that ran concurrently on one stream
                 * (CUDA-graph branches) may start together with their
                 * predecessor; an overlap within the timestamp precision is
                 * no overlap; otherwise the queued-op gap. */
                lsim_ns d = observed ? (gap < 0 ? gap : 0)
                                     : gap < -b->o->event_tol_ns ? -(g->obs_end[prev] - g->obs_start[prev])
                                     : gap < 0 ? 0 : qgap;
                if ((rc = add_edge(b, prev, v, LSIM_E_STREAM, d))) return rc;
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------- blocking calls */

typedef enum { BLK_NONE, BLK_CONTEXT, BLK_STREAM, BLK_EVENT, BLK_MEMCPY } blk_kind;

static blk_kind blocking_kind(const char *name)
{
    const char *a = api_base(name);
    if (!strcmp(a, "DeviceSynchronize") || !strcmp(a, "CtxSynchronize")) return BLK_CONTEXT;
    if (!strncmp(a, "StreamSynchronize", 17)) return BLK_STREAM;
    if (!strncmp(a, "EventSynchronize", 16)) return BLK_EVENT;
    if (!strncmp(a, "Memcpy", 6) && !strstr(a, "Async") && !strstr(a, "Peer") && !strstr(a, "ToSymbol") &&
        !strstr(a, "FromSymbol"))
        return BLK_MEMCPY; /* cudaMemcpy, hipMemcpy, hipMemcpyWithStream, cuMemcpyDtoH... */
    if (!strncmp(a, "MemcpyAsync", 11) || !strncmp(a, "MemcpyDtoHAsync", 15)) return BLK_MEMCPY; /* if pageable DtoH */
    return BLK_NONE;
}

/* Streams of the device a runtime call talks to (single-device traces: all). */
static int device_of_sync(const builder *b, uint32_t sync_ev)
{
    return sync_ev == NONE ? -1 : b->syncs[sync_ev].device;
}

typedef struct wait_edge {
    uint32_t u, v;
    int inferred;
} wait_edge;

static int add_blocking_edges(builder *b)
{
    lsim_graph *g = b->g;
    const lsim_build_opts *o = b->o;
    int rc = 0;
    int observed = o->latency == LSIM_LAT_OBSERVED;
    size_t nw = 0, capw = 1024;
    wait_edge *w = malloc(capw * sizeof *w);
    lsim_ns *ret = NULL;
    if (!w) return oom(b);
    for (size_t v = 0; v < g->n; v++) {
        if (g->kind[v] != LSIM_N_RUNTIME || (g->flags[v] & LSIM_NF_ENTER)) continue;
        const char *nm = rt_name(b, (uint32_t)v);
        blk_kind bk = blocking_kind(nm);
        if (bk == BLK_NONE) continue;
        uint32_t sev = g->corr[v] >= 0 ? map_get(b->skeys, b->svals, b->sslots, g->corr[v]) : NONE;
        const sync_rec *se = sev != NONE ? &b->syncs[sev] : NULL;
        int dev = device_of_sync(b, sev);
        uint32_t cand[256];
        int ncand = 0, inferred = 0;
        lsim_ns t_call = g->obs_start[v];
        if (bk == BLK_MEMCPY) {
            /* its own copy: ops launched by this call */
            int blocks = 0;
            for (uint32_t p = 0; p < g->nprocs && ncand < 256; p++) {
                if (!g->procs[p].is_gpu) continue;
                uint32_t u = first_launched_after(b, p, g->obs_start[v]);
                if (u != NONE && b->launch_of[u] != NONE && b->node_event[b->launch_of[u]] == b->node_event[v]) {
                    int async = strstr(nm, "Async") != NULL;
                    if (!async || (g->flags[u] & LSIM_NF_DTOH_PAGEABLE)) blocks = 1;
                    cand[ncand++] = u;
                }
            }
            if (!blocks) continue;
        } else if (bk == BLK_CONTEXT) {
            for (uint32_t p = 0; p < g->nprocs && ncand < 256; p++) {
                if (!g->procs[p].is_gpu || (dev >= 0 && g->procs[p].pid != dev)) continue;
                uint32_t u = last_launched_before(b, p, t_call);
                if (u != NONE) cand[ncand++] = u;
            }
        } else {
            uint32_t sp = NONE;
            lsim_ns t_ref = t_call;
            if (se && bk == BLK_STREAM && se->stream >= 0) sp = stream_proc(b, se->device, se->stream);
            if (se && bk == BLK_EVENT) {
                uint32_t rec = se->wait_rec_corr >= 0 ? map_get(b->ckeys, b->cvals, b->cslots, se->wait_rec_corr) : NONE;
                if (rec != NONE) t_ref = g->obs_start[rec];
                if (se->wait_stream >= 0) sp = stream_proc(b, se->device, se->wait_stream);
                else if (rec != NONE) sp = thread_launch_stream(b, rec, 0);
            }
            if (sp != NONE) {
                uint32_t u = last_launched_before(b, sp, t_ref);
                if (u != NONE) cand[ncand++] = u;
            } else {
                /* unknown stream: the one whose last launched op ended last
                 * before the call returned */
                inferred = 1;
                uint32_t best = NONE;
                for (uint32_t p = 0; p < g->nprocs; p++) {
                    if (!g->procs[p].is_gpu) continue;
                    uint32_t u = last_launched_before(b, p, t_call);
                    if (u == NONE || g->obs_end[u] > g->obs_end[v] + o->event_tol_ns) continue;
                    if (best == NONE || g->obs_end[u] > g->obs_end[best]) best = u;
                }
                if (best != NONE) cand[ncand++] = best;
                else g->dropped[LSIM_DROP_NO_SOURCE]++;
            }
        }
        if (se && ncand) g->sync_events_used++;
        for (int i = 0; i < ncand; i++) {
            uint32_t u = cand[i];
            if (g->obs_end[u] > g->obs_end[v] + o->event_tol_ns) {
                g->dropped[LSIM_DROP_CONTRADICTS_TIMES]++;
                continue;
            }
            if (nw == capw) {
                capw *= 2;
                wait_edge *nwp = realloc(w, capw * sizeof *w);
                if (!nwp) {
                    rc = oom(b);
                    goto cleanup;
                }
                w = nwp;
            }
            w[nw++] = (wait_edge){u, (uint32_t)v, inferred};
        }
        g->flags[v] |= LSIM_NF_BLOCKING;
    }
    /* model: return latency = median over calls that really waited */
    ret = malloc((nw ? nw : 1) * sizeof *ret);
    if (!ret) {
        rc = oom(b);
        goto cleanup;
    }
    size_t nr = 0;
    for (size_t i = 0; i < nw; i++) {
        uint32_t u = w[i].u, v = w[i].v;
        if (g->obs_end[u] > g->obs_start[v]) ret[nr++] = g->obs_end[v] - g->obs_end[u];
    }
    lsim_ns ret_model = nr ? median(ret, nr) : 2000;
    if (ret_model < 0) ret_model = 0;
    for (size_t i = 0; i < nw; i++) {
        uint32_t u = w[i].u, v = w[i].v;
        lsim_ns d = observed ? g->obs_end[v] - g->obs_end[u] : ret_model;
        if ((rc = add_edge(b, u, v, LSIM_E_SYNC | LSIM_EDGE_END, d))) goto cleanup;
        if (w[i].inferred) g->inferred_by_class[LSIM_E_SYNC]++;
    }
    if (!observed) {
        /* A call that waited for known GPU work returns when that work ends
         * (plus the return latency): its own duration drops to zero. A call
         * that returned well after all the work it is known to wait for was
         * held by something the trace does not show (untraced work, the
         * profiler flushing): it keeps its observed duration as a floor. */
        lsim_ns *wend = calloc(g->n ? g->n : 1, sizeof *wend);
        if (!wend) {
            rc = oom(b);
            goto cleanup;
        }
        for (size_t i = 0; i < nw; i++)
            if (g->obs_end[w[i].u] > wend[w[i].v]) wend[w[i].v] = g->obs_end[w[i].u];
        for (size_t i = 0; i < nw; i++) {
            uint32_t v = w[i].v;
            if (wend[v] <= g->obs_start[v]) continue; /* did not wait */
            lsim_ns tail = g->obs_end[v] - (wend[v] + ret_model);
            g->dur[v] = tail > 4 * ret_model + 50000 ? g->obs_end[v] - g->obs_start[v] : 0;
        }
        free(wend);
    }
cleanup:
    free(w);
    free(ret);
    return rc;
}

/* --------------------------------------------------- cross-stream waits */

static int try_event_edge(builder *b, uint32_t src, uint32_t dst, int inferred)
{
    lsim_graph *g = b->g;
    lsim_ns slack = g->obs_start[dst] - g->obs_end[src];
    if (slack < -b->o->event_tol_ns) return 1; /* contradicted */
    int observed = b->o->latency == LSIM_LAT_OBSERVED;
    int rc = add_edge(b, src, dst, LSIM_E_EVENT, observed && slack < 0 ? slack : 0);
    if (rc) return rc;
    if (inferred) g->inferred_by_class[LSIM_E_EVENT]++;
    return 0;
}

static int add_event_edges(builder *b)
{
    lsim_graph *g = b->g;
    int rc;
    for (size_t v = 0; v < g->n; v++) {
        if (g->kind[v] != LSIM_N_RUNTIME || (g->flags[v] & LSIM_NF_ENTER)) continue;
        const char *a = api_base(rt_name(b, (uint32_t)v));
        if (strncmp(a, "StreamWaitEvent", 15) != 0) continue;
        uint32_t sev = g->corr[v] >= 0 ? map_get(b->skeys, b->svals, b->sslots, g->corr[v]) : NONE;
        const sync_rec *se = sev != NONE ? &b->syncs[sev] : NULL;
        int inferred = 1;
        /* waiting stream */
        uint32_t sw = NONE;
        if (se && se->stream >= 0) sw = stream_proc(b, se->device, se->stream);
        if (sw == NONE) sw = thread_launch_stream(b, (uint32_t)v, 1);
        uint32_t dst = sw != NONE ? first_launched_after(b, sw, g->obs_start[v]) : NONE;
        if (dst == NONE) {
            g->dropped[LSIM_DROP_NO_TARGET]++;
            continue;
        }
        /* recording stream and the time of the record */
        uint32_t sr = NONE, rec = NONE;
        if (se && se->wait_rec_corr >= 0) rec = map_get(b->ckeys, b->cvals, b->cslots, se->wait_rec_corr);
        if (se && se->wait_stream >= 0) sr = stream_proc(b, se->device, se->wait_stream);
        if (se && sr != NONE && rec != NONE) inferred = 0;
        if (rec == NONE) {
            /* most recent cudaEventRecord on this thread before the wait */
            for (size_t k = v; k-- > 0 && g->proc[k] == g->proc[v];) {
                if (g->kind[k] == LSIM_N_RUNTIME && !strncmp(api_base(rt_name(b, (uint32_t)k)), "EventRecord", 11)) {
                    rec = (uint32_t)k;
                    break;
                }
                if (v - k > 4096) break;
            }
        }
        if (sr == NONE && rec != NONE) sr = thread_launch_stream(b, rec, 0);
        if (sr == sw && sr != NONE) {
            g->dropped[LSIM_DROP_SAME_STREAM]++;
            continue;
        }
        uint32_t src = NONE;
        if (sr != NONE) src = last_launched_before(b, sr, rec != NONE ? g->obs_start[rec] : g->obs_start[v]);
        if (src != NONE) {
            rc = try_event_edge(b, src, dst, inferred);
            if (rc < 0) return rc;
            if (rc == 0) {
                if (se) g->sync_events_used++;
                continue;
            }
        }
        /* fall back: the latest-ending op launched on another stream before
         * the wait that the observed times allow */
        uint32_t best = NONE;
        for (uint32_t p = 0; p < g->nprocs; p++) {
            if (!g->procs[p].is_gpu || p == sw || b->proc_device[p] != b->proc_device[sw]) continue;
            uint32_t u = last_launched_before(b, p, g->obs_start[v]);
            if (u == NONE || g->obs_end[u] > g->obs_start[dst] + b->o->event_tol_ns) continue;
            if (best == NONE || g->obs_end[u] > g->obs_end[best]) best = u;
        }
        if (best == NONE) {
            g->dropped[src != NONE ? LSIM_DROP_CONTRADICTS_TIMES : LSIM_DROP_NO_SOURCE]++;
            continue;
        }
        if (src != NONE) g->dropped[LSIM_DROP_CONTRADICTS_TIMES]++; /* the first guess */
        rc = try_event_edge(b, best, dst, 1);
        if (rc < 0) return rc;
    }
    return 0;
}

/* -------------------------------------------------- cross-thread wakeups */

/* A thread that resumes after an idle gap right after another thread of the
 * same process finished something was (demonstrably, by timing) woken by it.
 * The gap edge is kept, so in the model this can only delay, never hurry. */
static int add_xthread_edges(builder *b)
{
    lsim_graph *g = b->g;
    int rc = 0;
    size_t n = 0;
    time_node *ends = malloc((g->n ? g->n : 1) * sizeof *ends);
    if (!ends) return oom(b);
    for (size_t v = 0; v < g->n; v++)
        if (!g->procs[g->proc[v]].is_gpu) ends[n++] = (time_node){g->obs_end[v], (uint32_t)v};
    qsort(ends, n, sizeof *ends, cmp_time_node);
    const lsim_ns min_gap = 2 * b->o->infer_gap_ns;
    for (size_t v = 0; v < g->n; v++) {
        if (g->procs[g->proc[v]].is_gpu) continue;
        int first = v == 0 || g->proc[v - 1] != g->proc[v];
        if (!first && g->obs_start[v] - g->obs_end[v - 1] < min_gap) continue;
        lsim_ns s = g->obs_start[v];
        /* last end <= s */
        for (size_t k = count_le(ends, n, s); k-- > 0;) {
            if (s - ends[k].t > b->o->infer_gap_ns) break;
            uint32_t u = ends[k].node;
            if (g->proc[u] == g->proc[v] || g->procs[g->proc[u]].pid != g->procs[g->proc[v]].pid) continue;
            if ((rc = add_edge(b, u, (uint32_t)v, LSIM_E_CPU_XTHREAD, s - ends[k].t))) goto cleanup;
            g->inferred_by_class[LSIM_E_CPU_XTHREAD]++;
            break;
        }
    }
cleanup:
    free(ends);
    return rc;
}

/* ---------------------------------------------- timing-inferred GPU deps */

/* For each GPU op, the start its known start-edges explain (observed ends of
 * predecessors + model delays). If it started later than that by more than
 * the slack, some dependency is missing: take the op on another stream of the
 * same device that ended last, no earlier than infer_gap before the start. */
static int add_inferred_edges(builder *b)
{
    lsim_graph *g = b->g;
    int rc = 0;
    size_t ne0 = b->nedges;
    lsim_ns *explained = malloc((g->n ? g->n : 1) * sizeof *explained);
    time_node *ends = malloc((g->n ? g->n : 1) * sizeof *ends);
    if (!explained || !ends) {
        rc = oom(b);
        goto cleanup;
    }
    for (size_t v = 0; v < g->n; v++) explained[v] = INT64_MIN;
    size_t n = 0;
    for (size_t i = 0; i < ne0; i++) {
        const edge_tmp *e = &b->edges[i];
        if (e->cls & LSIM_EDGE_END) continue;
        if (!g->procs[g->proc[e->dst]].is_gpu) continue;
        /* from observed ends and mode-independent delays, so that which
         * edges are recovered does not depend on the latency mode */
        lsim_ns d, gap = g->obs_start[e->dst] - g->obs_end[e->src];
        switch (e->cls & 0x7f) {
        case LSIM_E_LAUNCH: d = model_launch_delay(b, e->src); break;
        case LSIM_E_STREAM:
        case LSIM_E_EVENT: d = gap < 0 ? gap : 0; break;
        default: d = e->delay; break;
        }
        lsim_ns x = g->obs_end[e->src] + d;
        if (x > explained[e->dst]) explained[e->dst] = x;
    }
    for (size_t v = 0; v < g->n; v++)
        if (g->procs[g->proc[v]].is_gpu) ends[n++] = (time_node){g->obs_end[v], (uint32_t)v};
    qsort(ends, n, sizeof *ends, cmp_time_node);
    for (size_t v = 0; v < g->n; v++) {
        if (!g->procs[g->proc[v]].is_gpu || (g->flags[v] & LSIM_NF_PREWINDOW)) continue;
        if (explained[v] == INT64_MIN || g->obs_start[v] - explained[v] <= b->o->infer_slack_ns) continue;
        lsim_ns s = g->obs_start[v];
        for (size_t k = count_le(ends, n, s); k-- > 0;) {
            if (s - ends[k].t > b->o->infer_gap_ns) break;
            uint32_t u = ends[k].node;
            if (g->proc[u] == g->proc[v] || b->proc_device[g->proc[u]] != b->proc_device[g->proc[v]]) continue;
            if (ends[k].t <= explained[v]) break; /* would explain nothing */
            if ((rc = add_edge(b, u, (uint32_t)v, LSIM_E_INFERRED, s - ends[k].t))) goto cleanup;
            g->inferred_by_class[LSIM_E_INFERRED]++;
            break;
        }
    }
    if (b->o->latency == LSIM_LAT_MODEL && b->nedges > ne0) {
        /* the model's signalling delay: the median of the recovered gaps */
        size_t m = b->nedges - ne0;
        for (size_t i = 0; i < m; i++) explained[i] = b->edges[ne0 + i].delay;
        lsim_ns med = median(explained, m);
        for (size_t i = ne0; i < b->nedges; i++) b->edges[i].delay = med;
    }
cleanup:
    free(explained);
    free(ends);
    return rc;
}

/* ------------------------------------------------------------ iterations */

static int cmp_iter(const void *x, const void *y)
{
    const lsim_iter *p = x, *q = y;
    if (p->obs_start != q->obs_start) return p->obs_start < q->obs_start ? -1 : 1;
    return p->name < q->name ? -1 : (p->name > q->name);
}

static int build_iters(builder *b)
{
    lsim_trace *t = b->t;
    lsim_graph *g = b->g;
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].kind == LSIM_EV_ANNOTATION && !strncmp(lsim_strtab_get(g->strings, t->ev[i].name), "ProfilerStep#", 13))
            n++;
    g->iters = calloc(n ? n : 1, sizeof *g->iters);
    if (!g->iters) return oom(b);
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        if (e->kind == LSIM_EV_ANNOTATION && !strncmp(lsim_strtab_get(g->strings, e->name), "ProfilerStep#", 13))
            g->iters[g->niters++] = (lsim_iter){e->name, e->ts, e->ts + e->dur};
    }
    qsort(g->iters, g->niters, sizeof *g->iters, cmp_iter);
    /* CPU nodes: by observed start inside the annotation (any thread) */
    for (size_t v = 0; v < g->n; v++) {
        if (g->procs[g->proc[v]].is_gpu) continue;
        lsim_ns s = g->obs_start[v];
        uint32_t lo = 0, hi = g->niters;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (g->iters[mid].obs_start <= s) lo = mid + 1;
            else hi = mid;
        }
        if (lo > 0 && s < g->iters[lo - 1].obs_end) g->iter[v] = (int32_t)(lo - 1);
    }
    return 0;
}

/* ------------------------------------------------------------------- CSR */

static int build_csr(builder *b)
{
    lsim_graph *g = b->g;
    size_t ne = b->nedges;
    g->in_off = calloc(g->n + 1, sizeof *g->in_off);
    g->out_off = calloc(g->n + 1, sizeof *g->out_off);
    g->in_src = malloc((ne ? ne : 1) * sizeof *g->in_src);
    g->in_delay = malloc((ne ? ne : 1) * sizeof *g->in_delay);
    g->in_class = malloc((ne ? ne : 1) * sizeof *g->in_class);
    g->out_dst = malloc((ne ? ne : 1) * sizeof *g->out_dst);
    uint64_t *fill = calloc(g->n + 1, sizeof *fill);
    if (!g->in_off || !g->out_off || !g->in_src || !g->in_delay || !g->in_class || !g->out_dst || !fill) {
        free(fill);
        return oom(b);
    }
    for (size_t i = 0; i < ne; i++) {
        g->in_off[b->edges[i].dst + 1]++;
        g->out_off[b->edges[i].src + 1]++;
        g->edges_by_class[b->edges[i].cls & 0x7f]++;
    }
    for (size_t v = 0; v < g->n; v++) {
        g->in_off[v + 1] += g->in_off[v];
        g->out_off[v + 1] += g->out_off[v];
    }
    for (size_t i = 0; i < ne; i++) { /* stable: insertion order within a node */
        const edge_tmp *e = &b->edges[i];
        uint64_t k = g->in_off[e->dst] + fill[e->dst]++;
        g->in_src[k] = e->src;
        g->in_delay[k] = e->delay;
        g->in_class[k] = e->cls;
    }
    memset(fill, 0, (g->n + 1) * sizeof *fill);
    for (size_t i = 0; i < ne; i++) {
        const edge_tmp *e = &b->edges[i];
        g->out_dst[g->out_off[e->src] + fill[e->src]++] = e->dst;
    }
    free(fill);
    g->nedges = ne;
    return 0;
}

/* ---------------------------------------------------------------- clone */

int lsim_graph_clone(const lsim_graph *g, lsim_graph **out, lsim_err *err)
{
    *out = NULL;
    lsim_graph *c = calloc(1, sizeof *c);
    if (!c) goto nomem;
    *c = *g; /* scalars and statistics; every pointer is replaced below */
    c->source = NULL;
    c->strings = NULL;
    c->kind = NULL, c->flags = NULL, c->proc = NULL, c->name = NULL, c->dur = NULL, c->obs_start = NULL;
    c->obs_end = NULL, c->release = NULL, c->corr = NULL, c->iter = NULL, c->coll = NULL;
    c->in_off = NULL, c->in_src = NULL, c->in_delay = NULL, c->in_class = NULL, c->out_off = NULL, c->out_dst = NULL;
    c->procs = NULL, c->iters = NULL, c->colls = NULL;
#define DUP(field, count)                                                      \
    do {                                                                       \
        size_t n_ = (count) ? (count) : 1;                                     \
        if (!(c->field = malloc(n_ * sizeof *g->field))) goto nomem;           \
        if (count) memcpy(c->field, g->field, (count) * sizeof *g->field);     \
    } while (0)
    DUP(kind, g->n);
    DUP(flags, g->n);
    DUP(proc, g->n);
    DUP(name, g->n);
    DUP(dur, g->n);
    DUP(obs_start, g->n);
    DUP(obs_end, g->n);
    DUP(release, g->n);
    DUP(corr, g->n);
    DUP(iter, g->n);
    DUP(coll, g->n);
    DUP(in_off, g->n + 1);
    DUP(out_off, g->n + 1);
    DUP(in_src, g->nedges);
    DUP(in_delay, g->nedges);
    DUP(in_class, g->nedges);
    DUP(out_dst, g->nedges);
    DUP(procs, g->nprocs);
    DUP(iters, g->niters);
    DUP(colls, g->ncoll);
#undef DUP
    if (!(c->source = strdup(g->source)) || !(c->strings = lsim_strtab_new())) goto nomem;
    /* ids are dense in insertion order, so re-interning keeps every id */
    for (uint32_t i = 0; i < lsim_strtab_count(g->strings); i++) {
        const char *s = lsim_strtab_get(g->strings, i);
        uint32_t id;
        if (lsim_strtab_intern(c->strings, s, strlen(s), &id) || id != i) goto nomem;
    }
    *out = c;
    return 0;
nomem:
    lsim_graph_free(c);
    return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory copying the graph", g->source);
}

/* ------------------------------------------------------------- ablation */

int lsim_graph_ablate(lsim_graph *g, unsigned drop_mask, int zero_launch_latency, lsim_err *err)
{
    /* filter the incoming CSR in place (order kept), then rebuild the
     * outgoing CSR from it */
    uint64_t w = 0;
    for (size_t v = 0; v < g->n; v++) {
        uint64_t b0 = g->in_off[v], b1 = g->in_off[v + 1];
        g->in_off[v] = w;
        for (uint64_t k = b0; k < b1; k++) {
            int cls = g->in_class[k] & 0x7f;
            if (drop_mask & (1u << cls)) {
                g->edges_by_class[cls]--;
                continue;
            }
            g->in_src[w] = g->in_src[k];
            /* zero latency: the GPU work may start when its call starts */
            g->in_delay[w] = cls == LSIM_E_LAUNCH && zero_launch_latency ? -g->dur[g->in_src[k]] : g->in_delay[k];
            g->in_class[w] = g->in_class[k];
            w++;
        }
    }
    g->in_off[g->n] = w;
    g->nedges = w;
    memset(g->out_off, 0, (g->n + 1) * sizeof *g->out_off);
    for (uint64_t k = 0; k < w; k++) g->out_off[g->in_src[k] + 1]++;
    for (size_t v = 0; v < g->n; v++) g->out_off[v + 1] += g->out_off[v];
    uint64_t *fill = calloc(g->n + 1, sizeof *fill);
    if (!fill) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", g->source);
    for (size_t v = 0; v < g->n; v++)
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
            g->out_dst[g->out_off[g->in_src[k]] + fill[g->in_src[k]]++] = (uint32_t)v;
    free(fill);
    return 0;
}

/* --------------------------------------------------------------- driver */

void lsim_graph_free(lsim_graph *g)
{
    if (!g) return;
    free(g->source);
    lsim_strtab_free(g->strings);
    free(g->kind);
    free(g->flags);
    free(g->proc);
    free(g->name);
    free(g->dur);
    free(g->obs_start);
    free(g->obs_end);
    free(g->release);
    free(g->corr);
    free(g->iter);
    free(g->coll);
    free(g->in_off);
    free(g->in_src);
    free(g->in_delay);
    free(g->in_class);
    free(g->out_off);
    free(g->out_dst);
    free(g->procs);
    free(g->iters);
    free(g->colls);
    free(g);
}

uint64_t lsim_graph_inferred_total(const lsim_graph *g)
{
    uint64_t s = 0;
    for (int i = 0; i < LSIM_E_NCLASSES; i++) s += g->inferred_by_class[i];
    return s;
}

uint64_t lsim_graph_dropped_total(const lsim_graph *g)
{
    uint64_t s = 0;
    for (int i = 0; i < LSIM_DROP_NREASONS; i++) s += g->dropped[i];
    return s;
}

int lsim_graph_build(lsim_trace *t, const lsim_build_opts *o, lsim_graph **out, lsim_err *err)
{
    int rc = 0;
    builder b;
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
    b.g = calloc(1, sizeof *b.g);
    if (!b.g) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", t->path);
        goto cleanup;
    }
    lsim_graph *g = b.g;
    g->strings = t->strings;
    t->strings = NULL;
    g->source = strdup(t->path);
    g->rank = t->rank;
    g->world_size = t->world_size;
    g->latency = o->latency;
    g->device = t->device_name; /* an id in t->strings, which the graph now owns */
    if (!g->source || t->nev > UINT32_MAX / 2) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory (or more than 2^31 events)", t->path);
        goto cleanup;
    }
    g->t0 = INT64_MAX;
    lsim_ns tmax = INT64_MIN;
    size_t i0 = 0, i1 = 0;
    for (size_t i = 0; i < t->nev; i++) {
        if (!is_gpu_kind(t->ev[i].kind) && !is_cpu_kind(t->ev[i].kind)) continue;
        if (t->ev[i].ts < g->t0) {
            g->t0 = t->ev[i].ts;
            i0 = i;
        }
        if (t->ev[i].ts + t->ev[i].dur > tmax) {
            tmax = t->ev[i].ts + t->ev[i].dur;
            i1 = i;
        }
    }
    /* One profiling window lasts seconds to minutes. Events a day apart mean
     * a corrupt timestamp (or two traces glued together): say so instead of
     * sizing anything by that span. */
    if (tmax != INT64_MIN && tmax - g->t0 > (lsim_ns)86400 * 1000000000) {
        rc = lsim_err_set(err, LSIM_ETRACE,
                          "%s: event timestamps span %.0f s (\"%.40s\" at %lld us to \"%.40s\" ending at %lld us): "
                          "not one profiling window",
                          t->path, (double)(tmax - g->t0) / 1e9, lsim_strtab_get(g->strings, t->ev[i0].name),
                          (long long)(g->t0 / 1000), lsim_strtab_get(g->strings, t->ev[i1].name), (long long)(tmax / 1000));
        goto cleanup;
    }
    b.ev_node = malloc((t->nev ? t->nev : 1) * sizeof *b.ev_node);
    if (!b.ev_node) {
        rc = oom(&b);
        goto cleanup;
    }
    b.ev_enter = malloc((t->nev ? t->nev : 1) * sizeof *b.ev_enter);
    if (!b.ev_enter) {
        rc = oom(&b);
        goto cleanup;
    }
    for (size_t i = 0; i < t->nev; i++) b.ev_node[i] = b.ev_enter[i] = NONE;
    b.ev_rpc = malloc((t->nev ? t->nev : 1) * sizeof *b.ev_rpc);
    if (!b.ev_rpc) {
        rc = oom(&b);
        goto cleanup;
    }
    for (size_t i = 0; i < t->nev; i++) b.ev_rpc[i] = -1;
    if ((rc = build_procs(&b, &ev_proc))) goto cleanup;
    if ((rc = build_cpu(&b, ev_proc))) goto cleanup;
    /* only a call's own node (its last piece) carries its correlation id:
     * the entry node of a memcpy and the pieces around nested calls do not,
     * so written out (--trace-out) each call is one correlation again */
    for (size_t v = 0; v < g->n; v++)
        if (g->kind[v] == LSIM_N_RUNTIME && b.ev_node[b.node_event[v]] != v) g->corr[v] = -1;
    if ((rc = build_iters(&b))) goto cleanup;
    if ((rc = build_gpu(&b, ev_proc))) goto cleanup;
    if (t->ncoll) {
        g->colls = malloc(t->ncoll * sizeof *g->colls);
        if (!g->colls) {
            rc = oom(&b);
            goto cleanup;
        }
        memcpy(g->colls, t->colls, t->ncoll * sizeof *g->colls);
        g->ncoll = t->ncoll;
    }
    b.node_rpc = malloc((g->n ? g->n : 1) * sizeof *b.node_rpc);
    if (!b.node_rpc) {
        rc = oom(&b);
        goto cleanup;
    }
    for (size_t v = 0; v < g->n; v++) b.node_rpc[v] = -1;
    for (size_t i = 0; i < t->nev; i++)
        if (b.ev_rpc[i] >= 0 && b.ev_node[i] != NONE) b.node_rpc[b.ev_node[i]] = b.ev_rpc[i];
    if ((rc = build_corr_maps(&b))) goto cleanup;
    if (o->release_events) {
        /* from here on the graph needs nothing of the event table */
        lsim_trace_drop_events(t);
        free(b.ev_node);
        free(b.ev_enter);
        free(b.ev_rpc);
        b.ev_node = b.ev_enter = NULL;
        b.ev_rpc = NULL;
    }
    if ((rc = link_launches(&b))) goto cleanup;
    if ((rc = label_collectives(&b))) goto cleanup;
    if ((rc = add_blocking_edges(&b))) goto cleanup;
    if ((rc = add_event_edges(&b))) goto cleanup;
    if ((rc = learn_latency(&b))) goto cleanup;
    if ((rc = add_launch_and_stream_edges(&b))) goto cleanup;
    if ((rc = add_xthread_edges(&b))) goto cleanup;
    if ((rc = add_inferred_edges(&b))) goto cleanup;
    if ((rc = build_csr(&b))) goto cleanup;
    for (size_t v = 0; v < g->n; v++)
        if (g->release[v] != INT64_MIN) g->releases++;
    for (uint32_t p = 0; p < g->nprocs; p++) g->procs[p].nnodes = 0;
    for (size_t v = 0; v < g->n; v++) g->procs[g->proc[v]].nnodes++;
    /* the times every later stage relies on (graph.h): a trace whose event
     * lasts hours is refused here, not simulated into a wrapped window */
    if ((rc = lsim_graph_check_bounds(g, t->path, g->rank >= 0 ? (size_t)g->rank : 0, err))) goto cleanup;
    *out = g;
    b.g = NULL;
cleanup:
    free(ev_proc);
    free(b.ev_node);
    free(b.ev_enter);
    free(b.ev_rpc);
    free(b.node_rpc);
    free(b.node_event);
    free(b.launch_of);
    free(b.edges);
    if (b.stream_nodes)
        for (uint32_t p = 0; p < b.nstreams_alloc; p++) {
            free(b.stream_nodes[p]);
            free(b.stream_lt[p]);
        }
    free(b.stream_nodes);
    free(b.stream_lt);
    free(b.stream_len);
    free(b.ckeys);
    free(b.cvals);
    free(b.cvals_launch);
    free(b.skeys);
    free(b.svals);
    free(b.syncs);
    free(b.api_ids);
    free(b.api_lat);
    free(b.api_lat_end);
    free(b.proc_device);
    if (rc && b.g && b.g->strings) {
        /* give the strings back so the caller's trace stays whole */
        t->strings = b.g->strings;
        b.g->strings = NULL;
    }
    lsim_graph_free(b.g);
    return rc;
}

/* ---------------------------------------------------------------- bounds */

/* The checks of graph.h, in one pass over nodes and edges. Absolute times
 * and the ns values are compared before any arithmetic on them, so that the
 * check itself cannot overflow: a span is computed only from two times
 * already known to be within +-LSIM_TIME_MAX. */
int lsim_graph_check_bounds(const lsim_graph *g, const char *file, size_t gpu, lsim_err *err)
{
    const char *f = file ? file : (g->source ? g->source : "graph");
    const lsim_ns T = LSIM_TIME_MAX, D = LSIM_DUR_MAX;
    lsim_ns sum = 0;
#define OUT_T(t) ((t) < -T || (t) > T)
    if (OUT_T(g->t0))
        return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu: start time t0 %lld ns is outside +-(2^62 - 1) ns", f, gpu,
                            (long long)g->t0);
    for (size_t v = 0; v < g->n; v++) {
        lsim_ns d = g->dur[v], s = g->obs_start[v], e = g->obs_end[v], r = g->release[v];
        if (d < 0 || d > D)
            return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu, node %zu: duration %lld ns is outside 0..1e13 ns", f,
                                gpu, v, (long long)d);
        if (r != INT64_MIN && OUT_T(r))
            return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu, node %zu: release time %lld ns is outside +-(2^62 - 1) ns",
                                f, gpu, v, (long long)r);
        if (s != INT64_MIN || e != INT64_MIN) { /* LSIM_OBS_NONE (metrics.h): never observed */
            if (s == INT64_MIN || e == INT64_MIN || OUT_T(s) || OUT_T(e))
                return lsim_err_set(err, LSIM_EFORMAT,
                                    "%s: GPU %zu, node %zu: observed start %lld ns / end %lld ns: not both within +-(2^62 - 1) ns",
                                    f, gpu, v, (long long)s, (long long)e);
            if (e - s < 0 || e - s > D)
                return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu, node %zu: observed span %lld ns is outside 0..1e13 ns",
                                    f, gpu, v, (long long)(e - s));
        }
        sum += d; /* <= 2^53 + 1e13 before the test below: no overflow */
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
            lsim_ns x = g->in_delay[k];
            if (x < -D || x > D)
                return lsim_err_set(err, LSIM_EFORMAT,
                                    "%s: GPU %zu, node %zu: in-edge %llu has a delay of %lld ns, outside +-1e13 ns", f, gpu,
                                    v, (unsigned long long)k, (long long)x);
            sum += x < 0 ? -x : x;
            if (sum > LSIM_GRAPH_SUM_MAX) break;
        }
        if (sum > LSIM_GRAPH_SUM_MAX)
            return lsim_err_set(err, LSIM_EFORMAT,
                                "%s: GPU %zu: its durations and delays add up to more than 2^53 ns (104 days) by node %zu",
                                f, gpu, v);
    }
#undef OUT_T
    return 0;
}
