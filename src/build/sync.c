/* Synchronisation edges: blocking calls get end-edges from the GPU work
 * they wait for (from cuda_sync when present, else inferred), cross-stream
 * record/wait pairs become edges (likewise), and a thread resuming right
 * after another thread's work is woken by it. Every inferred edge is
 * checked against the observed times; contradictions are dropped and
 * counted. */
#include "build_internal.h"
#include "lumosim/alloc.h"

/* ---------------------------------------------------- blocking calls */

typedef enum { BLK_NONE, BLK_CONTEXT, BLK_STREAM, BLK_EVENT, BLK_MEMCPY } blk_kind;

static blk_kind blocking_kind(const char *name)
{
    const char *a = bld_api_base(name);
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
static int device_of_sync(const bld_builder *b, uint32_t sync_ev)
{
    return sync_ev == BLD_NONE ? -1 : b->syncs[sync_ev].device;
}

typedef struct wait_edge {
    uint32_t u, v;
    int inferred;
} wait_edge;

/* The GPU work blocking call v (of kind bk, name nm) waits for, into
 * cand[0..256): its own copy (a memcpy), the last launched op of every
 * stream of its device (a device/context synchronize), or of the one
 * stream it names or its event was recorded on; unknown stream: the one
 * whose last launched op ended last before the call returned (*inferred).
 * Returns the number found, or -1 when v does not block (an async copy
 * that is not to pageable memory). *se gets v's cuda_sync record or NULL. */
static int wait_candidates(bld_builder *b, uint32_t v, blk_kind bk, const char *nm, uint32_t *cand, int *inferred,
                           const bld_sync_rec **se_out)
{
    lsim_graph *g = b->g;
    uint32_t sev = g->corr[v] >= 0 ? bld_map_get(b->skeys, b->svals, b->sslots, g->corr[v]) : BLD_NONE;
    const bld_sync_rec *se = sev != BLD_NONE ? &b->syncs[sev] : NULL;
    int dev = device_of_sync(b, sev);
    int ncand = 0;
    lsim_ns t_call = g->obs_start[v];
    *inferred = 0;
    *se_out = se;
    if (bk == BLK_MEMCPY) {
        /* its own copy: ops launched by this call */
        int blocks = 0;
        for (uint32_t p = 0; p < g->nprocs && ncand < 256; p++) {
            if (!g->procs[p].is_gpu) continue;
            uint32_t u = bld_first_launched_after(b, p, g->obs_start[v]);
            if (u != BLD_NONE && b->launch_of[u] != BLD_NONE && b->node_event[b->launch_of[u]] == b->node_event[v]) {
                int async = strstr(nm, "Async") != NULL;
                if (!async || (g->flags[u] & LSIM_NF_DTOH_PAGEABLE)) blocks = 1;
                cand[ncand++] = u;
            }
        }
        return blocks ? ncand : -1;
    }
    if (bk == BLK_CONTEXT) {
        for (uint32_t p = 0; p < g->nprocs && ncand < 256; p++) {
            if (!g->procs[p].is_gpu || (dev >= 0 && g->procs[p].pid != dev)) continue;
            uint32_t u = bld_last_launched_before(b, p, t_call);
            if (u != BLD_NONE) cand[ncand++] = u;
        }
        return ncand;
    }
    uint32_t sp = BLD_NONE;
    lsim_ns t_ref = t_call;
    if (se && bk == BLK_STREAM && se->stream >= 0) sp = bld_stream_proc(b, se->device, se->stream);
    if (se && bk == BLK_EVENT) {
        uint32_t rec = se->wait_rec_corr >= 0 ? bld_map_get(b->ckeys, b->cvals, b->cslots, se->wait_rec_corr) : BLD_NONE;
        if (rec != BLD_NONE) t_ref = g->obs_start[rec];
        if (se->wait_stream >= 0) sp = bld_stream_proc(b, se->device, se->wait_stream);
        else if (rec != BLD_NONE) sp = bld_thread_launch_stream(b, rec, 0);
    }
    if (sp != BLD_NONE) {
        uint32_t u = bld_last_launched_before(b, sp, t_ref);
        if (u != BLD_NONE) cand[ncand++] = u;
        return ncand;
    }
    /* unknown stream: the one whose last launched op ended last before the
     * call returned */
    *inferred = 1;
    uint32_t best = BLD_NONE;
    for (uint32_t p = 0; p < g->nprocs; p++) {
        if (!g->procs[p].is_gpu) continue;
        uint32_t u = bld_last_launched_before(b, p, t_call);
        if (u == BLD_NONE || g->obs_end[u] > g->obs_end[v] + b->o->event_tol_ns) continue;
        if (best == BLD_NONE || g->obs_end[u] > g->obs_end[best]) best = u;
    }
    if (best != BLD_NONE) cand[ncand++] = best;
    else g->dropped[LSIM_DROP_NO_SOURCE]++;
    return ncand;
}

/* The end-edges of the waits w[0..nw), with the return latency: observed,
 * or modelled as the median over calls that really waited. In the model a
 * call that waited for known GPU work returns when that work ends (plus the
 * return latency): its own duration drops to zero. A call that returned
 * well after all the work it is known to wait for was held by something
 * the trace does not show (untraced work, the profiler flushing): it keeps
 * its observed duration as a floor. */
static int add_wait_edges(bld_builder *b, const wait_edge *w, size_t nw)
{
    lsim_graph *g = b->g;
    int rc = 0;
    int observed = b->o->latency == LSIM_LAT_OBSERVED;
    lsim_ns *wend = NULL;
    lsim_ns *ret = lsim_malloc((nw ? nw : 1) * sizeof *ret);
    if (!ret) return bld_oom(b);
    size_t nr = 0;
    for (size_t i = 0; i < nw; i++) {
        uint32_t u = w[i].u, v = w[i].v;
        if (g->obs_end[u] > g->obs_start[v]) ret[nr++] = g->obs_end[v] - g->obs_end[u];
    }
    lsim_ns ret_model = nr ? lsim_median_i64(ret, nr) : 2000;
    if (ret_model < 0) ret_model = 0;
    for (size_t i = 0; i < nw; i++) {
        uint32_t u = w[i].u, v = w[i].v;
        lsim_ns d = observed ? g->obs_end[v] - g->obs_end[u] : ret_model;
        if ((rc = bld_add_edge(b, u, v, LSIM_E_SYNC | LSIM_EDGE_END, d))) goto cleanup;
        if (w[i].inferred) g->inferred_by_class[LSIM_E_SYNC]++;
    }
    if (observed) goto cleanup;
    if (!(wend = lsim_calloc(g->n ? g->n : 1, sizeof *wend))) {
        rc = bld_oom(b);
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
cleanup:
    free(wend);
    free(ret);
    return rc;
}

/* Blocking calls: each waits for the GPU work wait_candidates finds, unless
 * that work ended after the call returned (dropped, counted). */
int bld_blocking_edges(bld_builder *b)
{
    lsim_graph *g = b->g;
    int rc = 0;
    size_t nw = 0, capw = 0;
    wait_edge *w = NULL;
    for (size_t v = 0; v < g->n; v++) {
        if (g->kind[v] != LSIM_N_RUNTIME || (g->flags[v] & LSIM_NF_ENTER)) continue;
        const char *nm = bld_rt_name(b, (uint32_t)v);
        blk_kind bk = blocking_kind(nm);
        if (bk == BLK_NONE) continue;
        uint32_t cand[256];
        int inferred;
        const bld_sync_rec *se;
        int ncand = wait_candidates(b, (uint32_t)v, bk, nm, cand, &inferred, &se);
        if (ncand < 0) continue;
        if (se && ncand) g->sync_events_used++;
        for (int i = 0; i < ncand; i++) {
            uint32_t u = cand[i];
            if (g->obs_end[u] > g->obs_end[v] + b->o->event_tol_ns) {
                g->dropped[LSIM_DROP_CONTRADICTS_TIMES]++;
                continue;
            }
            if (LSIM_GROW(w, &capw, nw + 1)) {
                rc = bld_oom(b);
                goto cleanup;
            }
            w[nw++] = (wait_edge){u, (uint32_t)v, inferred};
        }
        g->flags[v] |= LSIM_NF_BLOCKING;
    }
    rc = add_wait_edges(b, w, nw);
cleanup:
    free(w);
    return rc;
}

/* --------------------------------------------------- cross-stream waits */

static int try_event_edge(bld_builder *b, uint32_t src, uint32_t dst, int inferred)
{
    lsim_graph *g = b->g;
    lsim_ns slack = g->obs_start[dst] - g->obs_end[src];
    if (slack < -b->o->event_tol_ns) return 1; /* contradicted */
    int observed = b->o->latency == LSIM_LAT_OBSERVED;
    int rc = bld_add_edge(b, src, dst, LSIM_E_EVENT, observed && slack < 0 ? slack : 0);
    if (rc) return rc;
    if (inferred) g->inferred_by_class[LSIM_E_EVENT]++;
    return 0;
}

/* Is node k a cudaEventRecord (hipEventRecord) call piece? */
static int is_event_record(bld_builder *b, size_t k)
{
    return b->g->kind[k] == LSIM_N_RUNTIME && !strncmp(bld_api_base(bld_rt_name(b, (uint32_t)k)), "EventRecord", 11);
}

/* Nodes this far back on the wait's thread (and no further) are searched
 * for the record a wait without cuda_sync arguments pairs with. */
#define EVENT_RECORD_REACH 4097

/* The record a wait is paired with, when cuda_sync does not name it, is
 * the most recent cudaEventRecord on the wait's thread within
 * EVENT_RECORD_REACH nodes, without crossing another thread's nodes. It is
 * kept while walking the nodes forward (last_rec: reset where the thread
 * changes), one look per node, instead of a scan back from every wait,
 * which with the records missing went 4,097 nodes back each time and was
 * most of the graph build (issue 20; docs/performance.md, "Figures behind
 * design choices"). */
int bld_event_edges(bld_builder *b)
{
    lsim_graph *g = b->g;
    int rc;
    size_t last_rec = SIZE_MAX; /* most recent record in the current thread's run of nodes before v */
    for (size_t v = 0; v < g->n; v++) {
        if (v > 0 && g->proc[v] != g->proc[v - 1]) last_rec = SIZE_MAX;
        else if (v > 0 && is_event_record(b, v - 1)) last_rec = v - 1;
        if (g->kind[v] != LSIM_N_RUNTIME || (g->flags[v] & LSIM_NF_ENTER)) continue;
        const char *a = bld_api_base(bld_rt_name(b, (uint32_t)v));
        if (strncmp(a, "StreamWaitEvent", 15) != 0) continue;
        uint32_t sev = g->corr[v] >= 0 ? bld_map_get(b->skeys, b->svals, b->sslots, g->corr[v]) : BLD_NONE;
        const bld_sync_rec *se = sev != BLD_NONE ? &b->syncs[sev] : NULL;
        int inferred = 1;
        /* waiting stream */
        uint32_t sw = BLD_NONE;
        if (se && se->stream >= 0) sw = bld_stream_proc(b, se->device, se->stream);
        if (sw == BLD_NONE) sw = bld_thread_launch_stream(b, (uint32_t)v, 1);
        uint32_t dst = sw != BLD_NONE ? bld_first_launched_after(b, sw, g->obs_start[v]) : BLD_NONE;
        if (dst == BLD_NONE) {
            g->dropped[LSIM_DROP_NO_TARGET]++;
            continue;
        }
        /* recording stream and the time of the record */
        uint32_t sr = BLD_NONE, rec = BLD_NONE;
        if (se && se->wait_rec_corr >= 0) rec = bld_map_get(b->ckeys, b->cvals, b->cslots, se->wait_rec_corr);
        if (se && se->wait_stream >= 0) sr = bld_stream_proc(b, se->device, se->wait_stream);
        if (se && sr != BLD_NONE && rec != BLD_NONE) inferred = 0;
        if (rec == BLD_NONE && last_rec != SIZE_MAX && v - last_rec <= EVENT_RECORD_REACH) rec = (uint32_t)last_rec;
        if (sr == BLD_NONE && rec != BLD_NONE) sr = bld_thread_launch_stream(b, rec, 0);
        if (sr == sw && sr != BLD_NONE) {
            g->dropped[LSIM_DROP_SAME_STREAM]++;
            continue;
        }
        uint32_t src = BLD_NONE;
        if (sr != BLD_NONE) src = bld_last_launched_before(b, sr, rec != BLD_NONE ? g->obs_start[rec] : g->obs_start[v]);
        if (src != BLD_NONE) {
            rc = try_event_edge(b, src, dst, inferred);
            if (rc < 0) return rc;
            if (rc == 0) {
                if (se) g->sync_events_used++;
                continue;
            }
        }
        /* fall back: the latest-ending op launched on another stream before
         * the wait that the observed times allow */
        uint32_t best = BLD_NONE;
        for (uint32_t p = 0; p < g->nprocs; p++) {
            if (!g->procs[p].is_gpu || p == sw || b->proc_device[p] != b->proc_device[sw]) continue;
            uint32_t u = bld_last_launched_before(b, p, g->obs_start[v]);
            if (u == BLD_NONE || g->obs_end[u] > g->obs_start[dst] + b->o->event_tol_ns) continue;
            if (best == BLD_NONE || g->obs_end[u] > g->obs_end[best]) best = u;
        }
        if (best == BLD_NONE) {
            g->dropped[src != BLD_NONE ? LSIM_DROP_CONTRADICTS_TIMES : LSIM_DROP_NO_SOURCE]++;
            continue;
        }
        if (src != BLD_NONE) g->dropped[LSIM_DROP_CONTRADICTS_TIMES]++; /* the first guess */
        rc = try_event_edge(b, best, dst, 1);
        if (rc < 0) return rc;
    }
    return 0;
}

/* -------------------------------------------------- cross-thread wakeups */

/* A thread that resumes after an idle gap right after another thread of the
 * same process finished something was (demonstrably, by timing) woken by it.
 * The gap edge is kept, so in the model this can only delay, never hurry. */
int bld_xthread_edges(bld_builder *b)
{
    lsim_graph *g = b->g;
    int rc = 0;
    size_t n = 0;
    lsim_time_node *ends = lsim_malloc((g->n ? g->n : 1) * sizeof *ends);
    if (!ends) return bld_oom(b);
    for (size_t v = 0; v < g->n; v++)
        if (!g->procs[g->proc[v]].is_gpu) ends[n++] = (lsim_time_node){g->obs_end[v], (uint32_t)v};
    qsort(ends, n, sizeof *ends, lsim_time_node_cmp);
    const lsim_ns min_gap = 2 * b->o->infer_gap_ns;
    for (size_t v = 0; v < g->n; v++) {
        if (g->procs[g->proc[v]].is_gpu) continue;
        int first = v == 0 || g->proc[v - 1] != g->proc[v];
        if (!first && g->obs_start[v] - g->obs_end[v - 1] < min_gap) continue;
        lsim_ns s = g->obs_start[v];
        /* last end <= s */
        for (size_t k = lsim_time_node_count_le(ends, n, s); k-- > 0;) {
            if (s - ends[k].t > b->o->infer_gap_ns) break;
            uint32_t u = ends[k].node;
            if (g->proc[u] == g->proc[v] || g->procs[g->proc[u]].pid != g->procs[g->proc[v]].pid) continue;
            if ((rc = bld_add_edge(b, u, (uint32_t)v, LSIM_E_CPU_XTHREAD, s - ends[k].t))) goto cleanup;
            g->inferred_by_class[LSIM_E_CPU_XTHREAD]++;
            break;
        }
    }
    /* Joins: a long piece of one thread that ends right after a node of
     * another thread of the process, which was busy through most of the
     * piece, waited for that thread (the caller of autograd's backward()
     * for the engine's thread: the main thread shows one piece of its
     * ProfilerStep over the whole backward pass). Modelled as an end-edge
     * with the observed return gap, and the piece keeps only its own work
     * before the other thread took over, so that the wait follows the other
     * thread when a what-if makes it longer or shorter; replayed as traced,
     * it ends where it did. */
    for (size_t v = 0; v < g->n; v++) {
        if (g->procs[g->proc[v]].is_gpu || g->kind[v] != LSIM_N_CPU) continue;
        lsim_ns s = g->obs_start[v], e = g->obs_end[v];
        if (e - s < min_gap) continue;
        /* the return gap: the wake-up of the waiting thread plus what runs
         * untraced between (DDP's finalize, the engine's teardown: 230-300
         * us on ddp4_mi300), at most a tenth of the piece */
        lsim_ns window = (e - s) / 10 > b->o->infer_gap_ns ? (e - s) / 10 : b->o->infer_gap_ns;
        if (window > 1000000) window = 1000000;
        for (size_t k = lsim_time_node_count_le(ends, n, e); k-- > 0;) {
            if (e - ends[k].t > window) break;
            uint32_t u = ends[k].node;
            if (g->proc[u] == g->proc[v] || g->procs[g->proc[u]].pid != g->procs[g->proc[v]].pid ||
                g->obs_start[u] < s)
                continue;
            /* the other thread's last node before the piece ends */
            if (u + 1 < g->n && g->proc[u + 1] == g->proc[u] && g->obs_start[u + 1] < e) continue;
            /* the other thread's busy time inside the piece, and where it
             * took over (its nodes are contiguous and in time order) */
            lsim_ns busy = 0, first = g->obs_start[u];
            for (uint32_t w = u; g->proc[w] == g->proc[u] && g->obs_end[w] > s; w--) {
                lsim_ns a = g->obs_start[w] > s ? g->obs_start[w] : s;
                busy += g->obs_end[w] - a;
                if (g->obs_start[w] >= s) first = g->obs_start[w];
                if (w == 0) break;
            }
            if (2 * busy < e - s) continue;
            if ((rc = bld_add_edge(b, u, (uint32_t)v, LSIM_E_CPU_XTHREAD | LSIM_EDGE_END, e - g->obs_end[u]))) goto cleanup;
            g->inferred_by_class[LSIM_E_CPU_XTHREAD]++;
            g->dur[v] = first - s;
            break;
        }
    }
cleanup:
    free(ends);
    return rc;
}
