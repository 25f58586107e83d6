/* The GPU side of the build: GPU activities as nodes in per-stream order,
 * joined to their launch call by correlation id (none in the file:
 * pre-window work), collectives completed from their record_param_comms
 * and numbered per process group, and the stream-position queries the
 * sync and latency steps ask. */
#include "build_internal.h"

/* ---------------------------------------------------- correlation maps */

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

uint32_t bld_map_get(const int64_t *keys, const uint32_t *vals, size_t slots, int64_t k)
{
    if (!keys || k == INT64_MIN) return BLD_NONE;
    size_t i = mix64((uint64_t)k) & (slots - 1);
    while (keys[i] != INT64_MIN) {
        if (keys[i] == k) return vals[i];
        i = (i + 1) & (slots - 1);
    }
    return BLD_NONE;
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

int bld_gpu(bld_builder *b, const uint32_t *ev_proc)
{
    lsim_trace *t = b->t;
    lsim_graph *g = b->g;
    int rc;
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        if (!bld_is_gpu_kind(e->kind)) continue;
        uint8_t k = e->kind == LSIM_EV_KERNEL ? LSIM_N_KERNEL : e->kind == LSIM_EV_MEMCPY ? LSIM_N_MEMCPY : LSIM_N_MEMSET;
        uint32_t v;
        if ((rc = bld_new_node(b, k, ev_proc[i], (uint32_t)i, e->ts, e->ts + e->dur, &v))) return rc;
        if (e->coll >= 0 && t->colls[e->coll].kind != LSIM_COLL_NONE) g->flags[v] |= LSIM_NF_COLL;
        if (e->kind == LSIM_EV_MEMCPY && e->dtoh && e->pageable) g->flags[v] |= LSIM_NF_DTOH_PAGEABLE;
        b->ev_node[i] = v;
    }
    /* per-stream order */
    b->stream_nodes = calloc(g->nprocs, sizeof *b->stream_nodes);
    b->stream_len = calloc(g->nprocs, sizeof *b->stream_len);
    b->stream_lt = calloc(g->nprocs, sizeof *b->stream_lt);
    if (!b->stream_nodes || !b->stream_len || !b->stream_lt) return bld_oom(b);
    b->nstreams_alloc = g->nprocs;
    for (size_t v = 0; v < g->n; v++)
        if (g->procs[g->proc[v]].is_gpu) b->stream_len[g->proc[v]]++;
    for (uint32_t p = 0; p < g->nprocs; p++) {
        if (!b->stream_len[p]) continue;
        b->stream_nodes[p] = malloc(b->stream_len[p] * sizeof(uint32_t));
        b->stream_lt[p] = malloc(b->stream_len[p] * sizeof(lsim_ns));
        if (!b->stream_nodes[p] || !b->stream_lt[p]) return bld_oom(b);
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

int bld_corr_maps(bld_builder *b)
{
    lsim_trace *t = b->t;
    size_t nrt = 0, nsync = 0;
    for (size_t i = 0; i < t->nev; i++) {
        if (t->ev[i].kind == LSIM_EV_RUNTIME && t->ev[i].corr >= 0) nrt++;
        if (t->ev[i].kind == LSIM_EV_SYNC && t->ev[i].corr >= 0) nsync++;
    }
    if (map_init(&b->ckeys, &b->cvals, &b->cslots, nrt) || map_init(&b->skeys, &b->svals, &b->sslots, nsync))
        return bld_oom(b);
    b->syncs = malloc((nsync ? nsync : 1) * sizeof *b->syncs);
    b->cvals_launch = malloc(b->cslots * sizeof *b->cvals_launch);
    if (!b->syncs || !b->cvals_launch) return bld_oom(b);
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        if (e->corr < 0) continue;
        if (e->kind == LSIM_EV_RUNTIME) {
            uint32_t v = b->ev_node[i];
            if (v == BLD_NONE) continue;
            if (map_put(b->ckeys, b->cvals, b->cslots, e->corr, v)) {
                b->cvals_launch[map_slot(b->ckeys, b->cslots, e->corr)] = b->ev_enter[i] != BLD_NONE ? b->ev_enter[i] : v;
            } else {
                uint32_t other = bld_map_get(b->ckeys, b->cvals, b->cslots, e->corr);
                return lsim_err_set(b->err, LSIM_ETRACE,
                                    "%s: duplicate correlation id %lld on two runtime calls (\"%s\" and \"%s\")",
                                    t->path, (long long)e->corr, lsim_strtab_get(b->g->strings, b->g->name[other]),
                                    lsim_strtab_get(b->g->strings, e->name));
            }
        } else if (e->kind == LSIM_EV_SYNC) {
            const lsim_row *r = lsim_event_row(t, e);
            b->syncs[b->nsyncs] = (bld_sync_rec){r->device, e->sync_kind, r->stream, lsim_event_wait_stream(t, e),
                                              lsim_event_wait_rec_corr(t, e)};
            if (map_put(b->skeys, b->svals, b->sslots, e->corr, (uint32_t)b->nsyncs)) b->nsyncs++;
        }
    }
    return 0;
}

/* ------------------------------------------------------------- launches */

int bld_link_launches(bld_builder *b)
{
    lsim_graph *g = b->g;
    for (size_t v = 0; v < g->n; v++) {
        if (!g->procs[g->proc[v]].is_gpu) continue;
        /* launched from the call's node, or from its entry node (memcpy) */
        uint32_t r = g->corr[v] >= 0 ? bld_map_get(b->ckeys, b->cvals_launch, b->cslots, g->corr[v]) : BLD_NONE;
        b->launch_of[v] = r;
        if (r == BLD_NONE) {
            g->flags[v] |= LSIM_NF_PREWINDOW;
            g->prewindow++;
        } else if (strstr(bld_rt_name(b, r), "GraphLaunch")) {
            g->flags[v] |= LSIM_NF_GRAPH;
        }
    }
    /* prefix-max launch time per stream position */
    for (uint32_t p = 0; p < g->nprocs; p++) {
        lsim_ns m = INT64_MIN;
        for (uint32_t i = 0; i < b->stream_len[p]; i++) {
            uint32_t v = b->stream_nodes[p][i];
            lsim_ns lt = b->launch_of[v] == BLD_NONE ? INT64_MIN : g->obs_start[b->launch_of[v]];
            if (lt > m) m = lt;
            b->stream_lt[p][i] = m;
        }
    }
    return 0;
}

/* Collective kernels: complete what the kernel does not say from the
 * record_param_comms op its launch sits in (older PyTorch: sizes from Input
 * Dims; newer: name, sizes, group), then number them per process group in
 * launch order -- the key by which ranks of a group are matched later. */
int bld_label_collectives(bld_builder *b)
{
    lsim_graph *g = b->g;
    size_t n = 0;
    for (size_t v = 0; v < g->n; v++)
        if ((g->flags[v] & LSIM_NF_COLL) && g->coll[v] >= 0) n++;
    if (!n) return 0;
    lsim_time_node *ord = malloc(n * sizeof *ord);
    uint32_t *gname = malloc(n * sizeof *gname);
    int64_t *gcount = malloc(n * sizeof *gcount);
    if (!ord || !gname || !gcount) {
        free(ord);
        free(gname);
        free(gcount);
        return bld_oom(b);
    }
    n = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (!(g->flags[v] & LSIM_NF_COLL) || g->coll[v] < 0) continue;
        uint32_t r = b->launch_of[v];
        lsim_coll_info *c = &g->colls[g->coll[v]];
        int32_t rpc = r != BLD_NONE ? b->node_rpc[r] : -1;
        if (r != BLD_NONE && rpc < 0 && b->node_rpc) {
            /* the launch may sit in a piece of the call: look up the call */
            uint32_t call = g->corr[v] >= 0 ? bld_map_get(b->ckeys, b->cvals, b->cslots, g->corr[v]) : BLD_NONE;
            if (call != BLD_NONE) rpc = b->node_rpc[call];
        }
        if (rpc >= 0) {
            const lsim_coll_info *p = &g->colls[rpc];
            /* a generic kernel takes the op's kind; so does a SendRecv kernel
             * inside an all_to_all (NCCL runs one as grouped sends and
             * receives to every peer: one SendRecv kernel per rank), which
             * is then matched across its group rather than as a pair */
            if ((c->kind == LSIM_COLL_GENERIC || c->kind == LSIM_COLL_OTHER ||
                 (c->kind == LSIM_COLL_SENDRECV && p->kind == LSIM_COLL_ALLTOALL)) &&
                p->kind != LSIM_COLL_NONE)
                c->kind = p->kind;
            if (c->in_nelems < 0) c->in_nelems = p->in_nelems;
            if (c->out_nelems < 0) c->out_nelems = p->out_nelems;
            if (c->group_size < 0) c->group_size = p->group_size;
            if (c->dtype_bytes < 0) c->dtype_bytes = p->dtype_bytes;
            if (c->pg_name == UINT32_MAX) c->pg_name = p->pg_name;
            if (c->pg_ranks == UINT32_MAX) c->pg_ranks = p->pg_ranks;
            if (c->root < 0 && (c->kind == LSIM_COLL_BROADCAST || c->kind == LSIM_COLL_REDUCE) && p->kind == c->kind)
                c->root = p->root;
            if (c->bytes < 0 && c->in_nelems >= 0 && c->dtype_bytes > 0 && c->in_nelems <= INT64_MAX / c->dtype_bytes)
                c->bytes = c->in_nelems * c->dtype_bytes;
        }
        ord[n++] = (lsim_time_node){r != BLD_NONE ? g->obs_start[r] : g->obs_start[v], (uint32_t)v};
    }
    qsort(ord, n, sizeof *ord, lsim_time_node_cmp);
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
static uint32_t launched_before(const bld_builder *b, uint32_t p, lsim_ns t)
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

/* Last op on stream p launched strictly before time t (BLD_NONE if none). */
uint32_t bld_last_launched_before(const bld_builder *b, uint32_t p, lsim_ns t)
{
    uint32_t k = launched_before(b, p, t);
    return k == 0 ? BLD_NONE : b->stream_nodes[p][k - 1];
}

/* First op on stream p launched at or after time t (BLD_NONE if none). */
uint32_t bld_first_launched_after(const bld_builder *b, uint32_t p, lsim_ns t)
{
    uint32_t k = launched_before(b, p, t);
    return k == b->stream_len[p] ? BLD_NONE : b->stream_nodes[p][k];
}

uint32_t bld_stream_proc(const bld_builder *b, int32_t device, int64_t stream)
{
    const lsim_graph *g = b->g;
    for (uint32_t p = 0; p < g->nprocs; p++)
        if (g->procs[p].is_gpu && g->procs[p].tid == stream && (device < 0 || g->procs[p].pid == device)) return p;
    return BLD_NONE;
}

/* Stream of the GPU op launched by thread `proc` closest before/after the
 * runtime node v (by thread order): the launches around a record or wait. */
uint32_t bld_thread_launch_stream(const bld_builder *b, uint32_t v, int after)
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
            uint32_t u = bld_first_launched_after(b, p, g->obs_start[k]);
            if (u != BLD_NONE && b->launch_of[u] != BLD_NONE && b->node_event[b->launch_of[u]] == b->node_event[k]) return p;
        }
        if ((after ? k - v : v - k) > 64) break; /* look near the call only */
    }
    return BLD_NONE;
}
