/* The GPU side of the build: GPU activities as nodes in per-stream order,
 * joined to their launch call by correlation id (none in the file:
 * pre-window work), collectives completed from their record_param_comms
 * and numbered per process group, and the stream-position queries the
 * sync and latency steps ask. */
#include <stdio.h>
#include "lumosim/alloc.h"

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
    /* at most 2/3 full: the correlation maps (16 bytes a slot with
     * cvals_launch) were the largest allocation at the graph build's peak
     * of memory, at half full or less (docs/performance.md) */
    size_t s = 16;
    while (s < n + n / 2 + 16) s <<= 1;
    *keys = lsim_malloc(s * sizeof **keys);
    *vals = lsim_malloc(s * sizeof **vals);
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

/* ----------------------------------------------------- SM contention */

/* Each kernel node's launch configuration, copied from the trace's side
 * table while the events exist (the edges come after release_events may
 * have dropped them), and the SM count Kineto's "blocks per SM" (grid
 * blocks / numSms) implies: the median over the kernels, for traces
 * without deviceProperties (the sampled ones). */
static int sm_configs(bld_builder *b)
{
    const lsim_trace *t = b->t;
    lsim_graph *g = b->g;
    if (!t->nkcfg) return 0;
    int64_t *hint = lsim_malloc(t->nkcfg * sizeof *hint);
    if (!(b->kc = lsim_calloc(g->n ? g->n : 1, sizeof *b->kc)) || !hint) {
        free(hint);
        return bld_oom(b);
    }
    size_t nh = 0;
    for (size_t j = 0; j < t->nkcfg; j++) {
        uint32_t v = t->kcfg[j].ev < t->nev ? b->ev_node[t->kcfg[j].ev] : BLD_NONE;
        if (v == BLD_NONE || v >= g->n || g->kind[v] != LSIM_N_KERNEL) continue;
        b->kc[v] = t->kcfg[j];
        if (t->kcfg[j].sms_hint) hint[nh++] = t->kcfg[j].sms_hint;
    }
    b->sm_hint = nh ? (uint32_t)lsim_median_i64(hint, nh) : 0;
    free(hint);
    return 0;
}

/* The SM limits of the trace's GPU (deviceProperties; a trace without
 * them: the SM count Kineto implies and the limits compute capabilities
 * 7.0, 8.0 and 9.0 share, 2048 threads and 65536 registers per SM). The
 * resident-block limit is not in deviceProperties: CUDA C Programming
 * Guide, "Compute Capabilities" (technical specifications table), 32
 * blocks per SM for 7.0, 8.0, 9.0 and AMD's CDNA (a compute unit: 32
 * wavefronts of up to 64 lanes, CDNA3 ISA guide), 16 for 7.5, 8.6, 8.7,
 * 24 for 8.9. */
typedef struct sm_dev {
    int64_t sms, threads, regs, smem, warp, blocks;
} sm_dev;

static sm_dev sm_device(const bld_builder *b)
{
    const lsim_trace_sm *s = &b->t->sm;
    sm_dev d = {s->sms, s->threads_per_sm, s->regs_per_sm, s->smem_per_sm, s->warp, 32};
    if (!d.sms) d = (sm_dev){b->sm_hint, 2048, 65536, 0, 32, 32};
    if (!d.threads) d.threads = 2048;
    if (!d.warp) d.warp = 32;
    int cc = s->cc_major * 10 + s->cc_minor;
    if (cc == 75 || cc == 86 || cc == 87) d.blocks = 16;
    else if (cc == 89) d.blocks = 24;
    return d;
}

/* Blocks of kernel k one SM holds at once: the least of the block, thread
 * (in whole warps), register and shared-memory limits (register and
 * shared-memory allocation granularity ignored: a few per cent), lowered
 * to what Kineto's "est. achieved occupancy %" (resident warps / the SM's
 * warps) says for a kernel with a full wave. 0: unknown. */
static int64_t sm_resident(const lsim_kernel_cfg *k, const sm_dev *d)
{
    if (!k->blocks || !k->threads || !d->sms) return 0;
    int64_t warps = ((int64_t)k->threads + d->warp - 1) / d->warp;
    int64_t r = d->blocks, x = d->threads / d->warp / warps;
    if (x < r) r = x;
    if (k->regs && d->regs && (x = d->regs / ((int64_t)k->regs * k->threads)) < r) r = x;
    if (k->smem && d->smem && (x = d->smem / k->smem) < r) r = x;
    if (r <= 0) return 0;
    if (k->occ_pct && (int64_t)k->blocks >= d->sms * r) {
        int64_t o = (k->occ_pct * (d->threads / d->warp) + 50 * warps) / (100 * warps);
        if (o >= 1 && o < r) r = o;
    }
    return r;
}

/* Does one block of k fit on an SM that holds r blocks of u? */
static int sm_fits(const lsim_kernel_cfg *u, int64_t r, const lsim_kernel_cfg *k, const sm_dev *d)
{
    int64_t wu = ((int64_t)u->threads + d->warp - 1) / d->warp, wk = ((int64_t)k->threads + d->warp - 1) / d->warp;
    if (r + 1 > d->blocks || (r * wu + wk) * d->warp > d->threads) return 0;
    if (d->regs && r * u->regs * (int64_t)u->threads + (int64_t)k->regs * k->threads > d->regs) return 0;
    if (d->smem && r * (int64_t)u->smem + k->smem > d->smem) return 0;
    return 1;
}

/* SM edges (graph.h, LSIM_EDGE_SM; the rule is sched_sm_hold's, in
 * include/internal/sched_inline.h). A kernel u fills the GPU when its grid is at least
 * two waves (blocks > SMs x resident blocks: one wave that fills it starts
 * its last wave at once), each wave dur(u) / waves long (equal waves: the
 * blocks of one kernel do the same work). Each kernel v gets one edge from
 * each other stream of its device: from the kernel that started last
 * before it there (what runs there when v becomes ready), when that one
 * fills the GPU and leaves no SM room for a block of v. The source started
 * at least 2 us earlier in the trace, so the edge goes forward in observed
 * time like every other edge (no cycle: the tolerances of the other rules
 * are under 1 us), and an edge the trace contradicts (v started while u
 * held every SM: the occupancy estimate was wrong for the pair) is not
 * made, so the observed schedule stays admissible. */
int bld_sm_edges(bld_builder *b)
{
    lsim_graph *g = b->g;
    if (!b->o->sm_contention || !b->kc) return 0;
    const sm_dev d = sm_device(b);
    if (!d.sms) return 0;
    const lsim_ns margin = 2000;
    for (uint32_t p = 0; p < g->nprocs; p++) {
        for (uint32_t i = 0; p < b->nstreams_alloc && i < b->stream_len[p]; i++) {
            uint32_t v = b->stream_nodes[p][i];
            if (g->kind[v] != LSIM_N_KERNEL || !b->kc[v].blocks) continue;
            for (uint32_t q = 0; q < b->nstreams_alloc; q++) {
                if (q == p || !b->stream_len[q] || b->proc_device[q] != b->proc_device[p]) continue;
                /* the last op on q that started before v (less the margin) */
                const uint32_t *sn = b->stream_nodes[q];
                size_t lo = 0, hi = b->stream_len[q];
                while (lo < hi) {
                    size_t mid = lo + (hi - lo) / 2;
                    if (g->obs_start[sn[mid]] < g->obs_start[v] - margin) lo = mid + 1;
                    else hi = mid;
                }
                uint32_t u = BLD_NONE;
                for (size_t j = lo; j-- > 0 && lo - j <= 16;)
                    if (g->kind[sn[j]] == LSIM_N_KERNEL) {
                        u = sn[j];
                        break;
                    }
                if (u == BLD_NONE || !b->kc[u].blocks) continue;
                int64_t r = sm_resident(&b->kc[u], &d);
                if (!r) continue;
                int64_t waves = ((int64_t)b->kc[u].blocks + d.sms * r - 1) / (d.sms * r);
                if (waves < 2 || sm_fits(&b->kc[u], r, &b->kc[v], &d)) continue;
                lsim_ns delay = -(g->dur[u] / waves); /* to the last wave's start */
                lsim_ns lw = g->obs_end[u] + delay;
                if (g->obs_start[v] < lw && g->obs_start[v] >= g->obs_start[u]) continue; /* contradicted */
                int rc = bld_add_edge(b, u, v, LSIM_E_INFERRED | LSIM_EDGE_SM, delay);
                if (rc) return rc;
                g->inferred_by_class[LSIM_E_INFERRED]++;
            }
        }
    }
    return 0;
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
    b->stream_nodes = lsim_calloc(g->nprocs, sizeof *b->stream_nodes);
    b->stream_len = lsim_calloc(g->nprocs, sizeof *b->stream_len);
    b->stream_lt = lsim_calloc(g->nprocs, sizeof *b->stream_lt);
    if (!b->stream_nodes || !b->stream_len || !b->stream_lt) return bld_oom(b);
    b->nstreams_alloc = g->nprocs;
    for (size_t v = 0; v < g->n; v++)
        if (g->procs[g->proc[v]].is_gpu) b->stream_len[g->proc[v]]++;
    for (uint32_t p = 0; p < g->nprocs; p++) {
        if (!b->stream_len[p]) continue;
        b->stream_nodes[p] = lsim_malloc(b->stream_len[p] * sizeof(uint32_t));
        b->stream_lt[p] = lsim_malloc(b->stream_len[p] * sizeof(lsim_ns));
        if (!b->stream_nodes[p] || !b->stream_lt[p]) return bld_oom(b);
        b->stream_len[p] = 0;
    }
    for (size_t v = 0; v < g->n; v++)
        if (g->procs[g->proc[v]].is_gpu) b->stream_nodes[g->proc[v]][b->stream_len[g->proc[v]]++] = (uint32_t)v;
    g_sort_graph = g;
    for (uint32_t p = 0; p < g->nprocs; p++)
        if (b->stream_len[p]) qsort(b->stream_nodes[p], b->stream_len[p], sizeof(uint32_t), cmp_stream_order);
    return b->o->sm_contention ? sm_configs(b) : 0;
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
    b->syncs = lsim_malloc((nsync ? nsync : 1) * sizeof *b->syncs);
    b->cvals_launch = lsim_malloc(b->cslots * sizeof *b->cvals_launch);
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

/* The rank as error messages name it. */
static void rank_label(const lsim_graph *g, char *buf, size_t n)
{
    if (g->rank >= 0) snprintf(buf, n, "rank %d", (int)g->rank);
    else snprintf(buf, n, "rank unknown (no distributedInfo)");
}

/* Each graph launch's first op (the earliest to start; by stream order on a
 * tie), b->graph_head indexed by the launch call's node. A graph's ops are
 * placed from it (latency.c, hidden.c), so a graph launch whose ops cannot
 * be placed is bad input, named, not replayed some other way: an op that
 * starts before the call began, by more than one timestamp step (the
 * launch cannot have submitted it). */
static int graph_heads(bld_builder *b)
{
    lsim_graph *g = b->g;
    const lsim_ns tol = bld_ts_step(b);
    if (!(b->graph_head = lsim_malloc((g->n ? g->n : 1) * sizeof *b->graph_head))) return bld_oom(b);
    for (size_t v = 0; v < g->n; v++) b->graph_head[v] = BLD_NONE;
    for (size_t v = 0; v < g->n; v++) {
        if (!(g->flags[v] & LSIM_NF_GRAPH)) continue;
        uint32_t r = b->launch_of[v], h = b->graph_head[r];
        lsim_ns early = g->obs_start[r] - g->obs_start[v];
        if (early > tol) {
            char rk[48];
            rank_label(g, rk, sizeof rk);
            return lsim_err_set(b->err, LSIM_ETRACE,
                                "%s: %s: %s (correlation %lld) at %.3f us: its op \"%s\" on stream %lld starts "
                                "%.3f us before the call began: the graph's ops cannot be placed",
                                b->t->path, rk, bld_rt_name(b, r), (long long)g->corr[v], (double)g->obs_start[r] / 1e3,
                                lsim_strtab_get(g->strings, g->name[v]), (long long)g->procs[g->proc[v]].tid,
                                (double)early / 1e3);
        }
        if (h == BLD_NONE || g->obs_start[v] < g->obs_start[h] || (g->obs_start[v] == g->obs_start[h] && v < h))
            b->graph_head[r] = (uint32_t)v;
    }
    return 0;
}

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
    int rc = graph_heads(b);
    if (rc) return rc;
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
    lsim_time_node *ord = lsim_malloc(n * sizeof *ord);
    uint32_t *gname = lsim_malloc(n * sizeof *gname);
    int64_t *gcount = lsim_malloc(n * sizeof *gcount);
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
