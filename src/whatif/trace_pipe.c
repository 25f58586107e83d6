/* What-if: pipeline depth of a Kineto trace (--pp on a trace; whatif.h,
 * docs/whatif.md). The trace's layers are the ones trace_roles.c recovers
 * from its kernel structure and layers.c cuts into subgraphs
 * (wi_trace_cut). Stage p of the new pipeline is the source GPU's graph
 * with every layer of the other stages removed (work before the first
 * layer -- embedding -- stays on the first stage, work after the last --
 * head, loss -- on the last; CPU work outside the layers stays on every
 * stage: each rank runs the training loop), and a transfer inserted at each
 * stage boundary the way Megatron's forward-only schedule does it: the
 * receiver launches a receive, synchronizes (batch_p2p_sync) and only then
 * launches the layer; the sender launches a send once the layer's last
 * kernel is queued and synchronizes on it. Kernels keep their durations;
 * each transfer is timed by the cost model (lsim_cost_p2p of the
 * activations, the size of the layers' tensor-parallel all-reduces).
 *
 * Why only forward-only traces with one micro-batch: only the forward
 * pass's layers are recovered (a backward pass would have to be cut and
 * rescheduled in 1F1B order), and with several forward micro-batches the
 * work between one micro-batch's head and the next one's embedding cannot
 * be told apart by time alone. Both are refused with the reason. */
#include "wi_internal.h"
#include "lumosim/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"

#define NONE UINT32_MAX

/* Transfers on the pair (a -> b) before boundary j (the boundary that
 * enters virtual stage j), in boundary order: both ends count the same. */
static int64_t pair_seq(int j, int a, int b, int P)
{
    int64_t s = 0;
    for (int i = 1; i < j; i++)
        if ((i - 1) % P == a && i % P == b) s++;
    return s;
}

int lsim_wi_trace_pipe_check(const char *source, int forward_only, const lsim_wi_layout *L,
                             const lsim_wi_pipe_cfg *to, int layers, int runs, lsim_err *err)
{
    int m = to->micro_batches;
    if (L->pp != 1)
        return lsim_err_set(err, LSIM_EARG,
                            "%s: the trace already has a pipeline (PP = %d): --pp on a trace re-cuts a PP-1 trace only",
                            source, L->pp);
    if (!forward_only) {
        /* a training step (train_pipe.c): one traced micro-batch, 1F1B */
        if (runs != 1)
            return lsim_err_set(err, LSIM_EARG,
                                "%s: the step runs %d forward and backward passes (gradient accumulation): --pp on a "
                                "training step takes a trace of one micro-batch per step (--micro-batches sets the "
                                "new count)",
                                source, runs);
        if (L->dp > 1)
            return lsim_err_set(err, LSIM_EARG,
                                "%s: --pp on a data-parallel training step (DP %d): its traced buckets would have to "
                                "be re-cut per stage, which is not built; --pp takes a DP-1 step (whatif --dp 1 cuts "
                                "one from a DDP job; --pp with --dp then inserts DDP's buckets per stage)",
                                source, L->dp);
        if (m > 1024) return lsim_err_set(err, LSIM_EARG, "--micro-batches %d: at most 1024 copies of a traced step", m);
        return wi_pipe_shape_check(to, layers, "trace's", err);
    }
    if (runs != 1)
        return lsim_err_set(err, LSIM_EARG,
                            "%s: the trace runs %d forward micro-batches: --pp on a trace needs exactly one (the work "
                            "between one micro-batch's head and the next one's embedding cannot be told apart)",
                            source, runs);
    if (m > 1 && to->vstages > 1)
        return lsim_err_set(err, LSIM_EARG,
                            "--schedule interleaved:%d with --micro-batches %d on a trace: the trace's forward pass is "
                            "copied per micro-batch in order, as 1F1B runs a forward-only pipeline; use --schedule "
                            "1f1b",
                            to->vstages, m);
    if (m > 1024)
        return lsim_err_set(err, LSIM_EARG, "--micro-batches %d: at most 1024 copies of a trace's forward pass", m);
    return wi_pipe_shape_check(to, layers, "trace's", err);
}

/* A transfer's anchors on layer l (recv: before it, else after it): the
 * layer's first (last) compute kernel g, its first (last) node on the
 * launching thread cp, and the neighbour there that stays nb (the previous
 * kept node before a receive, the next one after a send; NONE if none). */
static int transfer_anchors(const lsim_graph *in, const wi_tcut *C, const lsim_ns *ts, const lsim_time_node *cpu,
                            size_t nc, const uint8_t *removed, int l, int recv, uint32_t *g_out, uint32_t *cp,
                            uint32_t *nb_out, lsim_err *err)
{
    /* anchors: the layer's first (last) compute kernel and its first
     * (last) node on the launching thread */
    uint32_t g = NONE;
    for (size_t v = 0; v < in->n; v++) {
        if (C->seg[v] != l) continue;
        const lsim_proc *pr = &in->procs[in->proc[v]];
        if (!pr->is_gpu || pr->tid != C->stream) continue;
        lsim_time_node a = {ts[v], (uint32_t)v}, b = {g == NONE ? 0 : ts[g], g};
        int d = g == NONE ? 0 : lsim_time_node_cmp(&a, &b);
        if (g == NONE || (recv ? d < 0 : d > 0)) g = (uint32_t)v;
    }
    size_t at = nc;
    for (size_t i = 0; i < nc; i++)
        if (C->seg[cpu[i].node] == l) {
            at = i;
            if (recv) break;
        }
    if (g == NONE || at == nc)
        return lsim_err_set(err, LSIM_EARG,
                            "%s: layer %d has no compute kernel or no launch on the launching thread: --pp "
                            "cannot place the transfer %s it",
                            in->source, l, recv ? "before" : "after");
    *cp = cpu[at].node;
    /* the neighbour on the thread that stays: the previous kept node
     * before a receive, the next one after a send */
    uint32_t nb = NONE;
    if (recv) {
        for (size_t i = at; i-- > 0;)
            if (!removed[cpu[i].node]) { nb = cpu[i].node; break; }
    } else {
        for (size_t i = at + 1; i < nc; i++)
            if (!removed[cpu[i].node]) { nb = cpu[i].node; break; }
    }
    *g_out = g;
    *nb_out = nb;
    return 0;
}

/* The stage's whole forward pass, transfers included, once per
 * micro-batch (M), each copy after the previous one on every thread and
 * stream (wi_rebuild puts copy c of node v at c n + v); each group's
 * collectives numbered copy after copy. */
static int micro_batches(const char *source, const lsim_graph *o2, size_t M, lsim_graph **out, lsim_wi_counts *scratch,
                         lsim_err *err)
{
    size_t n2 = o2->n;
    uint8_t *none = lsim_calloc(n2 ? n2 : 1, 1);
    int32_t *all = lsim_malloc((n2 ? n2 : 1) * sizeof *all);
    uint32_t ns = lsim_strtab_count(o2->strings) + 1;
    int64_t *per = lsim_calloc(ns, sizeof *per);
    int cp = (int)M, rc = 0;
    lsim_graph *o3 = NULL;
    *out = NULL;
    if (!none || !all || !per) {
        free(none), free(all), free(per);
        return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", source);
    }
    for (size_t v = 0; v < n2; v++) all[v] = 0;
    for (size_t k = 0; k < o2->ncoll; k++) {
        uint32_t gname = o2->colls[k].pg_name == NONE ? ns - 1 : o2->colls[k].pg_name;
        if (o2->colls[k].seq + 1 > per[gname]) per[gname] = o2->colls[k].seq + 1;
    }
    wi_plan pl = {none, all, &cp, 1, NULL, 0, NULL, NULL, NULL, NULL, NULL};
    rc = wi_rebuild(o2, &pl, &o3, scratch, err);
    for (size_t x = 0; !rc && x < o3->n; x++) {
        if (o3->coll[x] < 0) continue;
        lsim_coll_info *ci = &o3->colls[o3->coll[x]];
        uint32_t gname = ci->pg_name == NONE ? ns - 1 : ci->pg_name;
        ci->seq += (int64_t)(x / n2) * per[gname];
    }
    free(none), free(all), free(per);
    if (rc) return rc;
    *out = o3;
    return 0;
}

int lsim_wi_trace_pipeline(const lsim_graph *in, const lsim_wi_layout *L, const lsim_wi_pipe_cfg *to,
                           const lsim_topology *topo, int tp_i, int dp_i, int pp_i, lsim_graph **out,
                           lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    wi_tcut C;
    memset(&C, 0, sizeof C);
    int rc = 0;
    lsim_graph *o1 = NULL, *o2 = NULL;
    uint8_t *removed = NULL;
    int *copies = NULL;
    uint32_t *nid = NULL;
    lsim_time_node *cpu = NULL;
    lsim_ns *samp = NULL;
    wi_addnode *A = NULL;
    wi_addedge *E = NULL;
    size_t na = 0, ne = 0, n = in->n;
    lsim_wi_counts scratch;
    memset(&scratch, 0, sizeof scratch);
    const int P = to->pp, V = to->vstages;
    if (!wi_forward_only(in)) {
        rc = wi_train_pipeline(in, L, to, topo, tp_i, dp_i, pp_i, out, rec, err);
        goto cleanup;
    }
    /* the checks that need no layers first, for their own messages */
    if ((rc = lsim_wi_trace_pipe_check(in->source, wi_forward_only(in), L, to, to->pp * to->vstages, 1, err)))
        goto cleanup;
    if ((rc = wi_layers_cut(in, to->trace_layers, "--pp", &C, err))) goto cleanup;
    if ((rc = lsim_wi_trace_pipe_check(in->source, 1, L, to, C.units, C.runs, err))) goto cleanup;
    if (pp_i < 0 || pp_i >= P || tp_i < 0 || tp_i >= L->tp || dp_i < 0 || dp_i >= L->dp) {
        rc = lsim_err_set(err, LSIM_EARG, "pipeline stage %d of %d (tp %d, dp %d)", pp_i, P, tp_i, dp_i);
        goto cleanup;
    }
    const int N = C.units, lpc = N / (P * V);
    const lsim_ns *ts = lsim_engine_start(C.E);
    if (C.cpu_thread == NONE) {
        rc = lsim_err_set(err, LSIM_EARG,
                          "%s: the launches of the trace's layers do not follow layer order on one CPU thread: --pp "
                          "cannot place the transfers between stages",
                          in->source);
        goto cleanup;
    }
    if (!(removed = lsim_calloc(n ? n : 1, 1)) || !(copies = lsim_malloc((size_t)N * sizeof *copies)) ||
        !(nid = lsim_malloc((n ? n : 1) * sizeof *nid)) || !(cpu = lsim_malloc((n ? n : 1) * sizeof *cpu)) ||
        !(samp = lsim_malloc((n ? n : 1) * sizeof *samp)))
        goto nomem;
    /* the activations: what the layers' tensor-parallel all-reduces carry */
    lsim_ns bytes = 0;
    {
        size_t k = 0;
        for (size_t v = 0; v < n; v++)
            if (C.seg[v] >= 0 && in->kind[v] == LSIM_N_KERNEL && in->coll[v] >= 0 &&
                in->colls[in->coll[v]].kind == LSIM_COLL_ALLREDUCE && in->colls[in->coll[v]].bytes > 0)
                samp[k++] = in->colls[in->coll[v]].bytes;
        bytes = k ? lsim_median_i64(samp, k) : 0; /* the upper median, 0 with none */
    }
    if (bytes <= 0) {
        rc = lsim_err_set(err, LSIM_EARG,
                          "%s: the layers' tensor-parallel all-reduces carry no size, so the activations sent between "
                          "stages are unknown (--pp on a trace)",
                          in->source);
        goto cleanup;
    }
    /* which stage holds what: layer l on virtual stage l / lpc, GPU stage
     * (l / lpc) % P; before the first layer stage 0, after the last stage
     * P - 1 (1F1B and interleaved alike) */
#define STAGE(l) (((l) / lpc) % P)
    for (int l = 0; l < N; l++) copies[l] = STAGE(l) == pp_i;
    for (size_t v = 0; v < n; v++) {
        int32_t s = C.seg[v];
        if (s >= 0) removed[v] = !copies[s];
        else if (in->procs[in->proc[v]].is_gpu) removed[v] = pp_i != (ts[v] < C.t0[0] ? STAGE(0) : STAGE(N - 1));
    }
    for (size_t v = 0; v < n; v++) {
        uint32_t u = C.launcher[v];
        if (removed[v] && C.seg[v] < 0 && u != NONE && !(in->flags[u] & LSIM_NF_BLOCKING)) removed[u] = 1;
    }
    /* the launching thread in time order; node ids after removal (wi_rebuild
     * keeps the remaining nodes in id order when nothing is copied) */
    size_t nc = 0;
    {
        uint32_t k = 0;
        for (size_t v = 0; v < n; v++) {
            nid[v] = removed[v] ? NONE : k++;
            if (in->proc[v] == C.cpu_thread) cpu[nc++] = (lsim_time_node){ts[v], (uint32_t)v};
        }
    }
    qsort(cpu, nc, sizeof *cpu, lsim_time_node_cmp);
    char src[512];
    snprintf(src, sizeof src, "whatif:pp%d/stage%d<-%.400s", P, pp_i, in->source);
    {
        wi_plan pl = {removed, C.seg, copies, (uint32_t)N, src, 2, NULL, NULL, NULL, NULL, NULL};
        if ((rc = wi_rebuild(in, &pl, &o1, &scratch, err))) goto cleanup;
    }
    lsim_ns lcall, ldelay;
    wi_launch_costs(in, C.launcher, samp, &lcall, &ldelay);
    int64_t corr = wi_next_corr(in), pid, tid;
    wi_free_stream(in, C.stream, &pid, &tid);
    lsim_proc pstream = {1, pid, tid, 0};
    const uint32_t ps = o1->nprocs;
    /* at most 2 transfers per chunk, 3 nodes and 7 edges each */
    if (!(A = lsim_calloc((size_t)V * 6, sizeof *A)) || !(E = lsim_calloc((size_t)V * 14, sizeof *E))) goto nomem;
    lsim_wi_layout Ls = *L;
    Ls.pp = P;
    const int32_t me = lsim_wi_rank(&Ls, tp_i, dp_i, pp_i);
    uint32_t last_p2p = NONE;
    for (int c = 0; c < V; c++) {
        int vs = c * P + pp_i, lo = vs * lpc, hi = lo + lpc - 1;
        for (int side = 0; side < 2; side++) {
            int recv = side == 0;
            if (recv ? vs == 0 : vs == P * V - 1) continue;
            int l = recv ? lo : hi, j = recv ? vs : vs + 1;
            uint32_t g = NONE, cp = NONE, nb = NONE;
            if ((rc = transfer_anchors(in, &C, ts, cpu, nc, removed, l, recv, &g, &cp, &nb, err))) goto cleanup;
            int peer_stage = recv ? (vs - 1) % P : (vs + 1) % P;
            int32_t peer = lsim_wi_rank(&Ls, tp_i, dp_i, peer_stage);
            int32_t a = recv ? peer : me, b = recv ? me : peer;
            uint32_t base = (uint32_t)(o1->n + na), call = base, kern = base + 1, sync = base + 2;
            int32_t it = o1->iter[nid[cp]];
            A[na] = (wi_addnode){LSIM_N_RUNTIME, 0, in->proc[cp], "cudaLaunchKernel", lcall, it, corr, 0, {0}, {0}};
            A[na + 1] = (wi_addnode){LSIM_N_KERNEL, LSIM_NF_COLL, ps,
                                     recv ? "ncclDevKernel_SendRecv [pipeline recv]" : "ncclDevKernel_SendRecv [pipeline send]",
                                     lsim_cost_p2p(topo, bytes, a, b), it, corr, 1, {0}, {0}};
            lsim_coll_info *ci = &A[na + 1].coll;
            ci->kind = recv ? LSIM_COLL_RECV : LSIM_COLL_SEND;
            ci->from_metadata = 1;
            ci->group_size = 2;
            ci->in_nelems = ci->out_nelems = bytes / 2;
            ci->dtype_bytes = 2;
            ci->bytes = bytes;
            ci->pg_ranks = NONE;
            ci->seq = pair_seq(j, (j - 1) % P, j % P, P);
            ci->root = -1;
            snprintf(A[na + 1].pg, sizeof A[na + 1].pg, "p2p:%d->%d#fwd", a, b);
            A[na + 2] = (wi_addnode){LSIM_N_RUNTIME, LSIM_NF_BLOCKING, in->proc[cp], "cudaDeviceSynchronize", lcall, it,
                                     -1, 0, {0}, {0}};
            corr++;
            na += 3;
            uint32_t before = recv ? (nb != NONE ? nid[nb] : NONE) : nid[cp];
            uint32_t after = recv ? nid[cp] : (nb != NONE ? nid[nb] : NONE);
            if (before != NONE) E[ne++] = (wi_addedge){before, call, LSIM_E_CPU_THREAD, 0};
            E[ne++] = (wi_addedge){call, sync, LSIM_E_CPU_THREAD, 0};
            if (after != NONE) E[ne++] = (wi_addedge){sync, after, LSIM_E_CPU_THREAD, 0};
            E[ne++] = (wi_addedge){call, kern, LSIM_E_LAUNCH, ldelay};
            E[ne++] = (wi_addedge){kern, sync, LSIM_E_SYNC | LSIM_EDGE_END, 0};
            if (last_p2p != NONE) E[ne++] = (wi_addedge){last_p2p, kern, LSIM_E_STREAM, 0};
            /* the layer's first kernel needs the activations; the send needs
             * the layer's last kernel */
            if (recv) E[ne++] = (wi_addedge){kern, nid[g], LSIM_E_EVENT, 0};
            else E[ne++] = (wi_addedge){nid[g], kern, LSIM_E_EVENT, 0};
            last_p2p = kern;
            rec->coll_retimed[LSIM_WI_PP]++;
        }
    }
#undef STAGE
    if ((rc = wi_append(o1, &pstream, 1, A, na, E, ne, &o2, &scratch, err))) goto cleanup;
    if (to->micro_batches > 1) {
        lsim_graph *o3 = NULL;
        if ((rc = micro_batches(in->source, o2, (size_t)to->micro_batches, &o3, &scratch, err))) goto cleanup;
        lsim_graph_free(o2);
        o2 = o3;
    }
    if (wi_stage_place(o2, &Ls, tp_i, dp_i, pp_i)) goto nomem;
    *out = o2;
    o2 = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
cleanup:
    lsim_graph_free(o1);
    lsim_graph_free(o2);
    wi_tcut_free(&C);
    free(removed);
    free(copies);
    free(nid);
    free(cpu);
    free(samp);
    free(A);
    free(E);
    return rc;
}
