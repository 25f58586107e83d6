/* What-if: pipeline depth of a traced training step (--pp on a trace with a
 * backward pass; whatif.h lsim_wi_trace_pipeline, docs/whatif.md "Pipeline
 * of a training step"). The step's forward and backward layers are the
 * training cut's (layers.c train_cut: annotations forward, autograd's
 * Sequence numbers backward). Stage p keeps the forward and backward
 * segments of its layers; the rest of the step goes where Megatron puts
 * it: forward work before the first layer (embedding) on stage 0, after
 * the last (head, loss) on the last stage; backward work before the last
 * layer's backward (loss and head gradients) on the last stage, after the
 * first layer's (embedding gradient) on stage 0; the optimizer's kernels on
 * every stage, each re-timed by the stage's share of the parameters (the
 * AccumulateGrad bytes its layers own: a multi-tensor optimizer kernel is
 * memory-bound, its time proportional to the bytes it updates); CPU work
 * outside the layers on every stage (each rank runs the training loop).
 *
 * Transfers, as Megatron's 1F1B does them: a receive before the stage's
 * first layer forward (activations) and before its last layer's backward
 * (their gradients), each followed by a blocking synchronize on the
 * launching thread before the layer's work; a send after the last layer
 * forward and after the first layer's backward, not waited for (the
 * batched isend of send_forward_recv_backward: a blocking send would
 * deadlock 1F1B's steady state, where each stage sends one way and
 * receives the other). Sends and receives run on two new streams, so that
 * a queued send never holds up a receive. Each is timed lsim_cost_p2p of
 * the activations (the layers' TP all-reduce size, else micro-batch x
 * sequence x hidden x 2 from --model and --micro-batch).
 *
 * Micro-batches: the step's forward part F (the stage's forward layers and
 * the work around them on each processor) and backward part B are copied
 * m times and re-chained on every thread and stream in 1F1B order --
 * min(P - 1 - p, m) forwards, then one forward and one backward at a time,
 * then the remaining backwards (Narayanan et al. 2021, sec. 2.2) --; an
 * edge between F and B parts joins the same micro-batch; work before the
 * first part (data loading) runs once before, work after (optimizer) once
 * after the last micro-batch. Transfers are numbered by micro-batch per
 * direction, so that stage p's k-th send meets stage p+1's k-th receive.
 *
 * Why one traced micro-batch and no data-parallel collectives: with
 * gradient accumulation traced, the micro-batches would have to be paired
 * across passes before reordering, and DDP's buckets would need re-cutting
 * per stage (all-reduce once per step, after the last micro-batch's
 * backward); both are refused with the reason (cut to DP 1 first). */
#include "wi_internal.h"
#include "lumosim/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"

#define NONE UINT32_MAX
/* Parts: U_ONCE, or with V model chunks per GPU, forward of chunk c
 * 1 + c and backward of chunk c 2V - c, so that a step's parts run in
 * increasing order (forward chunks up, backward chunks down). */
enum { U_ONCE = 0 };
#define PART_F(c, V) ((uint8_t)(1 + (c)))
#define PART_B(c, V) ((uint8_t)(2 * (V) - (c)))
#define IS_B(x, V) ((x) > (V))

static int is_chain(const lsim_graph *g, uint32_t u, uint32_t v, uint8_t cls)
{
    if (g->proc[u] != g->proc[v] || (cls & LSIM_EDGE_END)) return 0;
    int want = g->procs[g->proc[v]].is_gpu ? LSIM_E_STREAM : LSIM_E_CPU_THREAD;
    return (int)(cls & LSIM_EDGE_CLASS_MASK) == want;
}

/* The part of every node of the source, or U_ONCE (train_pipe header):
 * GPU work by its layer segment (the chunk its layer is in on its GPU:
 * (l / lpc) / P) or, outside the layers, by its training phase (forward
 * work before the first layer chunk 0's, after it the last chunk's;
 * backward work before the last layer's backward the last chunk's, after
 * it chunk 0's), launch calls as what they launch, layer CPU work by its
 * segment; then, per processor in time order, unlabelled nodes between the
 * first and the last labelled one join the part before them; a node after
 * a processor's last part that feeds a part's node (the call that wakes
 * autograd's thread) joins that processor's last part, one that waits for
 * a backward part elsewhere (backward() returning) joins that part, each
 * with everything between; one before a processor's first part woken by a
 * part elsewhere joins its first part. LSIM_EARG when parts run out of
 * order on a processor. */
static int label_parts(const lsim_graph *in, const wi_tcut *C, const lsim_ns *ts, int P, int V, int lpc, uint8_t *unit,
                       lsim_err *err)
{
    size_t n = in->n;
    int nf = C->units * C->runs, N = C->units, rc = 0;
    lsim_ns tf0 = C->t0[0], tbl = C->t0[nf + N - 1];
    for (size_t v = 0; v < n; v++) {
        unit[v] = U_ONCE;
        int s = C->seg[v];
        if (s >= 0) {
            int c = ((s % N) / lpc) / P;
            unit[v] = s < nf ? PART_F(c, V) : PART_B(c, V);
        } else if (in->procs[in->proc[v]].is_gpu) {
            if (in->phase[v] == LSIM_PHASE_FORWARD) unit[v] = ts[v] < tf0 ? PART_F(0, V) : PART_F(V - 1, V);
            else if (in->phase[v] == LSIM_PHASE_BACKWARD) unit[v] = ts[v] < tbl ? PART_B(V - 1, V) : PART_B(0, V);
        }
    }
    for (size_t v = 0; v < n; v++) {
        uint32_t u = C->launcher[v];
        if (u != NONE && unit[v] != U_ONCE && unit[u] == U_ONCE) unit[u] = unit[v];
    }
    lsim_time_node *T = lsim_malloc((n ? n : 1) * sizeof *T);
    size_t *off = lsim_calloc((size_t)in->nprocs + 1, sizeof *off);
    if (!T || !off) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
        goto cleanup;
    }
    for (size_t v = 0; v < n; v++) off[in->proc[v] + 1]++;
    for (uint32_t p = 0; p < in->nprocs; p++) off[p + 1] += off[p];
    {
        size_t *fill = lsim_calloc((size_t)in->nprocs + 1, sizeof *fill);
        if (!fill) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
            goto cleanup;
        }
        for (size_t v = 0; v < n; v++) T[off[in->proc[v]] + fill[in->proc[v]]++] = (lsim_time_node){ts[v], (uint32_t)v};
        free(fill);
    }
    for (uint32_t p = 0; p < in->nprocs; p++) {
        lsim_time_node *t = T + off[p];
        size_t k = off[p + 1] - off[p];
        uint8_t cur = U_ONCE;
        qsort(t, k, sizeof *t, lsim_time_node_cmp);
        for (size_t i = 0; i < k; i++) {
            uint8_t x = unit[t[i].node];
            if (x == U_ONCE) continue;
            if (x < cur) {
                rc = lsim_err_set(err, LSIM_EARG,
                                  "%s: %s work of the step runs after %s work that follows it in the step on one "
                                  "thread or stream (processor %u): --pp cannot reorder the step into pipeline "
                                  "micro-batches",
                                  in->source, IS_B(x, V) ? "backward" : "forward", IS_B(cur, V) ? "backward" : "later",
                                  p);
                goto cleanup;
            }
            cur = x;
        }
        size_t last = k;
        for (size_t i = 0; i < k; i++)
            if (unit[t[i].node] != U_ONCE) last = i;
        cur = U_ONCE;
        for (size_t i = 0; i < k && i <= last && last < k; i++) {
            if (unit[t[i].node] != U_ONCE) cur = unit[t[i].node];
            else if (cur != U_ONCE) unit[t[i].node] = cur;
        }
    }
    /* after a processor's last part: work that feeds a part elsewhere (the
     * call that wakes autograd's thread) joins it, and work that waits for
     * backward work elsewhere (backward() returning on the main thread) is
     * the micro-batch's backward there; to a fixed point (each pass extends
     * one processor's run; a handful suffice) */
    for (int pass = 0, changed = 1; changed && pass < 8; pass++) {
        changed = 0;
        for (uint32_t p = 0; p < in->nprocs; p++) {
            lsim_time_node *t = T + off[p];
            size_t k = off[p + 1] - off[p], last = k;
            for (size_t i = 0; i < k; i++)
                if (unit[t[i].node] != U_ONCE) last = i;
            if (last == k) continue;
            size_t reach = last, bfrom = k;
            uint8_t lab = unit[t[last].node], joined = lab;
            for (size_t i = last + 1; i < k; i++) {
                uint32_t u = t[i].node;
                for (uint64_t e = in->out_off[u]; e < in->out_off[u + 1]; e++)
                    if (unit[in->out_dst[e]] != U_ONCE && in->proc[in->out_dst[e]] != p) reach = i;
                for (uint64_t e = in->in_off[u]; e < in->in_off[u + 1]; e++) {
                    uint8_t x = unit[in->in_src[e]];
                    if (IS_B(x, V) && x > lab && in->proc[in->in_src[e]] != p) {
                        reach = i;
                        if (bfrom == k) bfrom = i;
                        if (x > joined) joined = x;
                    }
                }
            }
            /* from the first join on, the work waits with the backward
             * part it joins; before it, it is the last part's */
            for (size_t i = last + 1; i <= reach; i++) unit[t[i].node] = i >= bfrom ? joined : lab, changed = 1;
            /* before the first part: work woken by a part elsewhere (the
             * wrapper autograd's thread opens the backward with) joins it */
            size_t first = 0;
            while (unit[t[first].node] == U_ONCE) first++;
            size_t from = first;
            for (size_t i = 0; i < first; i++)
                for (uint64_t e = in->in_off[t[i].node]; e < in->in_off[t[i].node + 1] && from == first; e++)
                    if (unit[in->in_src[e]] != U_ONCE && in->proc[in->in_src[e]] != p) from = i;
            for (size_t i = from; i < first; i++) unit[t[i].node] = unit[t[first].node], changed = 1;
        }
    }
cleanup:
    free(T);
    free(off);
    return rc;
}

/* A tensor-parallel collective, which goes with its layer: one --tp from
 * 1 inserted (a "tp:P:D" group of one, widened after the pipeline), or
 * one classed TP outside the backward pass. Why not every "tp:" group: a
 * one-GPU store of a DDP job names its buckets' world group so after
 * normalization, and those are the backward's gradient reduction. */
static int tp_group(const lsim_graph *g, size_t v)
{
    const lsim_coll_info *ci = &g->colls[g->coll[v]];
    const char *pg = ci->pg_name != NONE ? lsim_strtab_get(g->strings, ci->pg_name) : "";
    if (!strncmp(pg, "tp:", 3) && ci->group_size <= 1) return 1;
    return lsim_wi_coll_class(g, (size_t)g->coll[v]) == LSIM_WI_TP && g->phase[v] != LSIM_PHASE_BACKWARD;
}

/* A collective of the step's gradient reduction: in the backward pass or
 * outside the layers, not tensor-parallel. */
static int grad_coll(const lsim_graph *in, const wi_tcut *C, size_t v)
{
    int nf = C->units * C->runs;
    return (in->flags[v] & LSIM_NF_COLL) && in->procs[in->proc[v]].is_gpu && in->coll[v] >= 0 &&
           (C->seg[v] < 0 || C->seg[v] >= nf || in->phase[v] == LSIM_PHASE_BACKWARD) && !tp_group(in, v);
}

/* A gradient all-reduce in a group of one (a DDP step cut to DP 1 keeps its
 * buckets so: lsim_wi_relayout). */
static int bucket_of_one(const lsim_graph *in, size_t v)
{
    const lsim_coll_info *ci = &in->colls[in->coll[v]];
    return ci->kind == LSIM_COLL_ALLREDUCE && ci->group_size == 1;
}

/* One transfer at a stage boundary (train_pipe header): on thread `thr`
 * (its nodes cpu[0..nc) in time order), around segment `seg`'s anchor
 * kernel g (first compute kernel for a receive, last for a send). */
typedef struct tp_ctx {
    const lsim_graph *in;
    const wi_tcut *C;
    const lsim_ns *ts;
    const uint8_t *removed;
    const uint32_t *nid;
    const lsim_graph *o1;
    wi_addnode *A;
    wi_addedge *E;
    size_t na, ne;
    uint8_t *part; /* per added node */
    lsim_ns lcall, ldelay;
    int64_t corr;
    uint32_t ps, pr, last_send, last_recv;
} tp_ctx;

static int transfer(tp_ctx *X, int seg, int recv, int bwd, uint8_t part, int j, lsim_ns dur, int64_t bytes, int32_t a,
                    int32_t b, lsim_time_node *cpu, size_t *ncpu, lsim_err *err)
{
    const lsim_graph *in = X->in;
    const wi_tcut *C = X->C;
    const lsim_ns *ts = X->ts;
    uint32_t g = NONE;
    for (size_t v = 0; v < in->n; v++) {
        if (C->seg[v] != seg || (in->flags[v] & LSIM_NF_COLL)) continue;
        const lsim_proc *pr = &in->procs[in->proc[v]];
        if (!pr->is_gpu || pr->tid != C->stream) continue;
        lsim_time_node p = {ts[v], (uint32_t)v}, q = {g == NONE ? 0 : ts[g], g};
        int d = g == NONE ? 0 : lsim_time_node_cmp(&p, &q);
        if (g == NONE || (recv ? d < 0 : d > 0)) g = (uint32_t)v;
    }
    uint32_t thr = g != NONE && C->launcher[g] != NONE ? in->proc[C->launcher[g]] : NONE;
    if (g == NONE || thr == NONE) {
        return lsim_err_set(err, LSIM_EARG,
                            "%s: %s layer %d has no launched compute kernel: --pp cannot place the transfer %s it",
                            in->source, bwd ? "backward" : "forward", seg % C->units, recv ? "before" : "after");
    }
    size_t nc = 0;
    for (size_t v = 0; v < in->n; v++)
        if (in->proc[v] == thr) cpu[nc++] = (lsim_time_node){ts[v], (uint32_t)v};
    qsort(cpu, nc, sizeof *cpu, lsim_time_node_cmp);
    *ncpu = nc;
    size_t at = nc;
    for (size_t i = 0; i < nc; i++)
        if (C->seg[cpu[i].node] == seg) {
            at = i;
            if (recv) break;
        }
    if (at == nc)
        return lsim_err_set(err, LSIM_EARG, "%s: layer %d has no work on its launching thread: --pp cannot place the "
                            "transfer %s it", in->source, seg % C->units, recv ? "before" : "after");
    uint32_t cp = cpu[at].node, nb = NONE;
    if (recv) {
        for (size_t i = at; i-- > 0;)
            if (!X->removed[cpu[i].node]) { nb = cpu[i].node; break; }
    } else {
        for (size_t i = at + 1; i < nc; i++)
            if (!X->removed[cpu[i].node]) { nb = cpu[i].node; break; }
    }
    const lsim_graph *o1 = X->o1;
    uint32_t base = (uint32_t)(o1->n + X->na), call = base, kern = base + 1, sync = base + 2;
    int32_t it = o1->iter[X->nid[cp]];
    wi_addnode *A = X->A + X->na;
    A[0] = (wi_addnode){LSIM_N_RUNTIME, 0, in->proc[cp], "cudaLaunchKernel", X->lcall, it, X->corr, 0, {0}, {0}};
    A[1] = (wi_addnode){LSIM_N_KERNEL, LSIM_NF_COLL, recv ? X->pr : X->ps,
                        recv ? (bwd ? "ncclDevKernel_SendRecv [pipeline recv grad]" : "ncclDevKernel_SendRecv [pipeline recv]")
                             : (bwd ? "ncclDevKernel_SendRecv [pipeline send grad]" : "ncclDevKernel_SendRecv [pipeline send]"),
                        dur, it, X->corr, 1, {0}, {0}};
    lsim_coll_info *ci = &A[1].coll;
    ci->kind = recv ? LSIM_COLL_RECV : LSIM_COLL_SEND;
    ci->from_metadata = 1;
    ci->group_size = 2;
    ci->in_nelems = ci->out_nelems = bytes / 2;
    ci->dtype_bytes = 2;
    ci->bytes = bytes;
    ci->pg_ranks = NONE;
    ci->seq = 0; /* the micro-batch, once copied */
    ci->root = -1;
    /* one group per direction and stage boundary j (> 0 with model
     * chunks: GPU P-1 sends to GPU 0 at every chunk boundary) */
    if (j > 0) snprintf(A[1].pg, sizeof A[1].pg, "p2p:%d->%d#%s%d", a, b, bwd ? "bwd" : "fwd", j);
    else snprintf(A[1].pg, sizeof A[1].pg, "p2p:%d->%d#%s", a, b, bwd ? "bwd" : "fwd");
    X->corr++;
    wi_addedge *E = X->E + X->ne;
    size_t ne = 0;
    X->part[X->na] = X->part[X->na + 1] = part;
    if (recv) {
        A[2] = (wi_addnode){LSIM_N_RUNTIME, LSIM_NF_BLOCKING, in->proc[cp], "cudaStreamSynchronize", X->lcall, it, -1, 0,
                            {0}, {0}};
        X->part[X->na + 2] = part;
        X->na += 3;
        if (nb != NONE) E[ne++] = (wi_addedge){X->nid[nb], call, LSIM_E_CPU_THREAD, 0};
        E[ne++] = (wi_addedge){call, sync, LSIM_E_CPU_THREAD, 0};
        E[ne++] = (wi_addedge){sync, X->nid[cp], LSIM_E_CPU_THREAD, 0};
        E[ne++] = (wi_addedge){kern, sync, LSIM_E_SYNC | LSIM_EDGE_END, 0};
        E[ne++] = (wi_addedge){kern, X->nid[g], LSIM_E_EVENT, 0}; /* the layer needs what arrived */
        if (X->last_recv != NONE) E[ne++] = (wi_addedge){X->last_recv, kern, LSIM_E_STREAM, 0};
        X->last_recv = kern;
    } else {
        X->na += 2;
        E[ne++] = (wi_addedge){X->nid[cp], call, LSIM_E_CPU_THREAD, 0};
        if (nb != NONE) E[ne++] = (wi_addedge){call, X->nid[nb], LSIM_E_CPU_THREAD, 0};
        E[ne++] = (wi_addedge){X->nid[g], kern, LSIM_E_EVENT, 0}; /* sent once computed */
        if (X->last_send != NONE) E[ne++] = (wi_addedge){X->last_send, kern, LSIM_E_STREAM, 0};
        X->last_send = kern;
    }
    E[ne++] = (wi_addedge){call, kern, LSIM_E_LAUNCH, X->ldelay};
    X->ne += ne;
    return 0;
}

/* The order of stage p of P with m micro-batches and V model chunks:
 * part and micro-batch per entry, 2 V m entries. V = 1: 1F1B, min(P - 1 -
 * p, m) forwards, then one forward and one backward alternating, then the
 * remaining backwards. V > 1: Megatron-LM's interleaved 1F1B
 * (schedules.py, forward_backward_pipelining_with_interleaving): the k-th
 * forward runs chunk (k / P) mod V of micro-batch (k / (P V)) P + k mod P,
 * the k-th backward chunk V - 1 - (k / P) mod V of the same micro-batch
 * formula; (P - p - 1) 2 + (V - 1) P warm-up forwards (at most m V). */
static void schedule(int p, int P, int V, int m, uint8_t *part, int *mb)
{
    int total = m * V, w, k = 0, f = 0, b = 0;
    if (V == 1) w = P - 1 - p < m ? P - 1 - p : m;
    else w = (P - p - 1) * 2 + (V - 1) * P < total ? (P - p - 1) * 2 + (V - 1) * P : total;
#define FWD_(i) (part[k] = PART_F(((i) / P) % V, V), mb[k++] = ((i) / (P * V)) * P + (i) % P)
#define BWD_(i) (part[k] = PART_B(V - 1 - ((i) / P) % V, V), mb[k++] = ((i) / (P * V)) * P + (i) % P)
    for (; f < w; f++) FWD_(f);
    while (f < total) {
        FWD_(f);
        f++;
        BWD_(b);
        b++;
    }
    while (b < total) {
        BWD_(b);
        b++;
    }
#undef FWD_
#undef BWD_
}

/* o2's 2V parts copied m times (wi_rebuild) and every edge made again:
 * inside a part within its copy, between parts within the micro-batch,
 * from a part into work after it from the last micro-batch; and per
 * processor the chain through the parts in the schedule's order. *out: the
 * new graph; *accum: per new node, 1 for the backward copies before the
 * last (their gradients accumulate). */
static int reorder(const lsim_graph *o2, const uint8_t *part, int pp_i, int P, int V, int m, lsim_graph **out,
                   uint8_t **accum, lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    *accum = NULL;
    size_t n = o2->n;
    int rc = 0, *cps = lsim_malloc(2 * (size_t)V * sizeof *cps);
    const size_t NP = 2 * (size_t)V, NE = 2 * (size_t)V * (size_t)m;
    lsim_graph *o3 = NULL;
    int32_t *seg = lsim_malloc((n ? n : 1) * sizeof *seg);
    uint8_t *none = lsim_calloc(n ? n : 1, 1), *sp = lsim_malloc(NE);
    uint32_t *from = NULL, *copy = NULL, *inv = NULL, *pred = NULL, *succ = NULL, *first = NULL, *last = NULL;
    int *smb = lsim_malloc(NE * sizeof *smb);
    lsim_ns *dfirst = NULL;
    lsim_edge *E = NULL;
    size_t ne = 0, cape = 0;
    uint32_t np = o2->nprocs;
    if (!seg || !none || !sp || !smb || !cps) goto nomem;
    for (size_t i = 0; i < NP; i++) cps[i] = m;
    for (size_t v = 0; v < n; v++) seg[v] = part[v] == U_ONCE ? -1 : part[v] - 1;
    {
        wi_plan pl = {none, seg, cps, (uint32_t)NP, NULL, 2, NULL, NULL, NULL, &from, &copy};
        if ((rc = wi_rebuild(o2, &pl, &o3, rec, err))) goto cleanup;
    }
    size_t n3 = o3->n;
    if (!(inv = lsim_malloc((n ? n : 1) * (size_t)m * sizeof *inv)) || !(pred = lsim_malloc((n ? n : 1) * sizeof *pred)) ||
        !(succ = lsim_malloc((n ? n : 1) * sizeof *succ)) || !(first = lsim_malloc(NP * np * sizeof *first)) ||
        !(last = lsim_malloc(NP * np * sizeof *last)) || !(dfirst = lsim_calloc(NP * np, sizeof *dfirst)))
        goto nomem;
    for (size_t i = 0; i < n * (size_t)m; i++) inv[i] = NONE;
    for (size_t x = 0; x < n3; x++) inv[(size_t)copy[x] * n + from[x]] = (uint32_t)x;
    for (size_t v = 0; v < n; v++) pred[v] = succ[v] = NONE;
    lsim_ns *dpred = lsim_calloc(n ? n : 1, sizeof *dpred);
    if (!dpred) goto nomem;
    for (size_t v = 0; v < n; v++)
        for (uint64_t k = o2->in_off[v]; k < o2->in_off[v + 1]; k++)
            if (is_chain(o2, o2->in_src[k], (uint32_t)v, o2->in_class[k])) {
                pred[v] = o2->in_src[k], dpred[v] = o2->in_delay[k];
                succ[o2->in_src[k]] = (uint32_t)v;
            }
    /* each part's first and last node per processor: one run each */
    for (size_t i = 0; i < NP * np; i++) first[i] = last[i] = NONE;
    for (size_t v = 0; v < n; v++) {
        if (part[v] == U_ONCE) continue;
        size_t k = (size_t)(part[v] - 1) * np + o2->proc[v];
        if (pred[v] == NONE || part[pred[v]] != part[v]) {
            if (first[k] != NONE) {
                free(dpred);
                rc = lsim_err_set(err, LSIM_EARG,
                                  "%s: the step's %s work is not one run on processor %u: --pp cannot copy it per "
                                  "micro-batch",
                                  o2->source, IS_B(part[v], V) ? "backward" : "forward", o2->proc[v]);
                goto cleanup;
            }
            first[k] = (uint32_t)v, dfirst[k] = dpred[v];
        }
        if (succ[v] == NONE || part[succ[v]] != part[v]) last[k] = (uint32_t)v;
    }
    /* edges of every new node */
    for (size_t x = 0; x < n3; x++) {
        uint32_t v = from[x], c = copy[x];
        for (uint64_t k = o2->in_off[v]; k < o2->in_off[v + 1]; k++) {
            uint32_t u = o2->in_src[k], src;
            uint8_t cls = o2->in_class[k];
            if (is_chain(o2, u, v, cls) && part[u] != part[v]) continue; /* the schedule's chain */
            if (part[u] == U_ONCE) src = inv[u];
            else if (part[v] != U_ONCE) src = inv[(size_t)c * n + u];
            else src = inv[(size_t)(m - 1) * n + u];
            if (src == NONE) continue;
            if (LSIM_GROW(E, &cape, ne + 1)) {
                free(dpred);
                goto nomem;
            }
            E[ne++] = (lsim_edge){(uint32_t)x, src, o2->in_delay[k], cls};
        }
    }
    /* the chain of every processor through the parts, in the schedule's
     * order, between the work before the parts and the work after */
    schedule(pp_i, P, V, m, sp, smb);
    for (uint32_t p = 0; p < np; p++) {
        uint32_t head = NONE, tail = NONE;
        for (size_t q = 0; q < NP; q++) {
            if (head == NONE) head = first[q * np + p];
            if (last[q * np + p] != NONE) tail = last[q * np + p];
        }
        if (head == NONE) continue;
        uint32_t prev = pred[head] != NONE ? inv[pred[head]] : NONE;
        uint32_t after = succ[tail];
        uint8_t cls = o2->procs[p].is_gpu ? LSIM_E_STREAM : LSIM_E_CPU_THREAD;
        for (size_t i = 0; i < NE; i++) {
            size_t k = (size_t)(sp[i] - 1) * np + p;
            if (first[k] == NONE) continue;
            uint32_t x = inv[(size_t)smb[i] * n + first[k]];
            if (prev != NONE) {
                if (LSIM_GROW(E, &cape, ne + 1)) {
                    free(dpred);
                    goto nomem;
                }
                E[ne++] = (lsim_edge){x, prev, dfirst[k], cls};
            }
            prev = inv[(size_t)smb[i] * n + last[k]];
        }
        if (after != NONE && prev != NONE) {
            if (LSIM_GROW(E, &cape, ne + 1)) {
                free(dpred);
                goto nomem;
            }
            E[ne++] = (lsim_edge){inv[after], prev, dpred[after], cls};
        }
    }
    free(dpred);
    if (lsim_graph_set_edges(o3, E, ne, LSIM_OUT_BY_DST, err)) goto nomem;
    lsim_graph_count_edges(o3);
    /* the backward copies before the last: their gradients accumulate */
    if (!(*accum = lsim_malloc(n3 ? n3 : 1))) goto nomem;
    for (size_t x = 0; x < n3; x++) (*accum)[x] = IS_B(part[from[x]], V) && copy[x] + 1 < (uint32_t)m;
    /* transfers numbered by micro-batch in their direction's group */
    for (size_t x = 0; x < n3; x++) {
        if (o3->coll[x] < 0) continue;
        lsim_coll_info *ci = &o3->colls[o3->coll[x]];
        if (ci->kind == LSIM_COLL_SEND || ci->kind == LSIM_COLL_RECV) ci->seq = copy[x];
    }
    *out = o3;
    o3 = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", o2->source);
cleanup:
    lsim_graph_free(o3);
    free(cps);
    free(seg);
    free(none);
    free(sp);
    free(smb);
    free(from);
    free(copy);
    free(inv);
    free(pred);
    free(succ);
    free(first);
    free(last);
    free(dfirst);
    free(E);
    return rc;
}

/* Data-parallel collectives cannot be placed on one stage, except a DP-1
 * cut's buckets (a group of one): they are cut again per stage. */
static int dp_collectives_check(const lsim_graph *in, const wi_tcut *C, lsim_err *err)
{
    uint64_t dpc = 0;
    for (size_t v = 0; v < in->n; v++) {
        if (grad_coll(in, C, v) && !bucket_of_one(in, v)) dpc++;
    }
    if (dpc)
        return lsim_err_set(err, LSIM_EARG,
                            "%s: a data-parallel training step (%llu collectives in its backward pass or "
                            "outside its layers: gradient reduction): DDP's buckets would have to be re-cut per "
                            "stage, which is not built; --pp takes a DP-1 step (whatif --dp 1 cuts one from a DDP "
                            "job)",
                            in->source, (unsigned long long)dpc);
    return 0;
}

/* Stage pp_i's share of the parameters (of P stages; layer l on stage
 * (l / lpc) % P), for the optimizer's kernels, and which gradient ops are
 * of its own parameters (gstage). Gradients outside the layers go by the
 * CPU-side time of the last layer's backward (the launching thread runs
 * ahead of the GPU): before it the head's, after it the embedding's. The
 * gradient ops of other stages' parameters stay as CPU work (each rank runs
 * the loop), their sizes do not: they are not this stage's to reduce. */
static double param_share(const lsim_graph *in, const wi_tcut *C, const lsim_ns *ts, int P, int N, int lpc, int pp_i,
                          int8_t *gstage)
{
#define STAGE(l) (((l) / lpc) % P)
    size_t n = in->n;
    int nf = N;
    double share = 1.0 / P;
    lsim_ns tblc = INT64_MAX;
    for (size_t v = 0; v < n; v++)
        if (C->seg[v] == nf + N - 1 && !in->procs[in->proc[v]].is_gpu && ts[v] < tblc) tblc = ts[v];
    double mine = 0, all = 0;
    for (size_t v = 0; v < n; v++) {
        if (in->grad_bytes[v] <= 0) continue;
        int32_t s = C->seg[v];
        int st = s >= 0 ? STAGE(s % N) : ts[v] < tblc ? P - 1 : 0;
        all += (double)in->grad_bytes[v];
        if (st == pp_i) mine += (double)in->grad_bytes[v];
    }
    if (all > 0) share = mine / all;
    for (size_t v = 0; v < n; v++) {
        if (in->grad_bytes[v] <= 0) continue;
        int32_t s = C->seg[v];
        gstage[v] = (int8_t)((s >= 0 ? STAGE(s % N) : ts[v] < tblc ? P - 1 : 0) == pp_i);
    }
#undef STAGE
    return share;
}

/* DP from 1: DDP's buckets cut from the stage's own gradients, once per
 * step -- the last micro-batch's backward (pipeline training reduces after
 * accumulating: DDP's no_sync() for the other micro-batches) -- by
 * lsim_wi_trace_ddp with the accumulating copies' gradient sizes hidden,
 * then given back. o2 is left as it was. */
static int stage_ddp(const char *source, lsim_graph *o2, const uint8_t *accum, const lsim_wi_layout *Ls,
                     const lsim_topology *topo, int32_t me, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    size_t n2 = o2->n;
    int64_t *gsave = lsim_malloc((n2 ? n2 : 1) * sizeof *gsave);
    *out = NULL;
    if (!gsave) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", source);
    memcpy(gsave, o2->grad_bytes, n2 * sizeof *gsave);
    for (size_t x = 0; accum && x < n2; x++)
        if (accum[x]) o2->grad_bytes[x] = 0;
    int rc = lsim_wi_trace_ddp(o2, Ls, topo, me, out, rec, err);
    memcpy(o2->grad_bytes, gsave, n2 * sizeof *gsave);
    if (!rc) memcpy((*out)->grad_bytes, gsave, n2 * sizeof *gsave); /* wi_append keeps ids 0..n2-1 */
    free(gsave);
    return rc;
}

int wi_train_pipeline(const lsim_graph *in, const lsim_wi_layout *L, const lsim_wi_pipe_cfg *to,
                      const lsim_topology *topo, int tp_i, int dp_i, int pp_i, lsim_graph **out, lsim_wi_counts *rec,
                      lsim_err *err)
{
    *out = NULL;
    wi_tcut C;
    memset(&C, 0, sizeof C);
    int rc = 0;
    lsim_graph *o1 = NULL, *o2 = NULL;
    uint8_t *removed = NULL, *unit = NULL, *part2 = NULL, *accum = NULL;
    int8_t *gstage = NULL;
    int *copies = NULL;
    uint32_t *nid = NULL;
    lsim_time_node *cpu = NULL;
    lsim_ns *samp = NULL;
    tp_ctx X;
    memset(&X, 0, sizeof X);
    size_t n = in->n;
    lsim_wi_counts scratch;
    memset(&scratch, 0, sizeof scratch);
    const int P = to->pp, m = to->micro_batches;
    if ((rc = wi_layers_cut(in, to->trace_layers, "--pp", &C, err))) goto cleanup;
    if (C.runs != 1) {
        rc = lsim_err_set(err, LSIM_EARG,
                          "%s: the step runs %d forward and backward passes (gradient accumulation): --pp on a "
                          "training step takes a trace of one micro-batch per step (--micro-batches sets the new count)",
                          in->source, C.runs);
        goto cleanup;
    }
    const int N = C.units, nf = N;
    if ((rc = wi_pipe_shape_check(to, N, "trace's", err))) goto cleanup;
    const int V = to->vstages;
    if (V > 100) {
        rc = lsim_err_set(err, LSIM_EARG, "--schedule interleaved:%d: at most 100 model chunks per GPU on a training step",
                          V);
        goto cleanup;
    }
    if (pp_i < 0 || pp_i >= P || tp_i < 0 || tp_i >= L->tp || dp_i < 0 || dp_i >= L->dp) {
        rc = lsim_err_set(err, LSIM_EARG, "pipeline stage %d of %d (tp %d, dp %d)", pp_i, P, tp_i, dp_i);
        goto cleanup;
    }
    const lsim_ns *ts = lsim_engine_start(C.E);
    /* data-parallel collectives cannot be placed on one stage, except a
     * DP-1 cut's buckets (a group of one): they are cut again per stage */
    if ((rc = dp_collectives_check(in, &C, err))) goto cleanup;
    if (!(removed = lsim_calloc(n ? n : 1, 1)) || !(unit = lsim_malloc(n ? n : 1)) || !(gstage = lsim_calloc(n ? n : 1, 1)) || !(copies = lsim_malloc(2 * (size_t)N * sizeof *copies)) ||
        !(nid = lsim_malloc((n ? n : 1) * sizeof *nid)) || !(cpu = lsim_malloc((n ? n : 1) * sizeof *cpu)) ||
        !(samp = lsim_malloc((n ? n : 1) * sizeof *samp)))
        goto nomem;
    /* the activations: the layers' TP all-reduce size, else the model's */
    int64_t bytes = 0;
    {
        size_t k = 0;
        for (size_t v = 0; v < n; v++)
            if (C.seg[v] >= 0 && in->coll[v] >= 0 && in->colls[in->coll[v]].kind == LSIM_COLL_ALLREDUCE &&
                in->colls[in->coll[v]].bytes > 0)
                samp[k++] = in->colls[in->coll[v]].bytes;
        bytes = k ? lsim_median_i64(samp, k) : to->act_bytes;
    }
    if (bytes <= 0 && P > 1) {
        rc = lsim_err_set(err, LSIM_EARG,
                          "%s: the layers have no tensor-parallel all-reduce, so the activations sent between stages "
                          "are unknown: give --model (hidden, seq) and --micro-batch (sequences per micro-batch)",
                          in->source);
        goto cleanup;
    }
    /* stage of every node (train_pipe header) */
    const int lpc = N / (P * V);
#define STAGE(l) (((l) / lpc) % P)
    lsim_ns tf0 = C.t0[0], tbl = C.t0[nf + N - 1], tb0 = C.t1[nf];
    for (int s = 0; s < 2 * N; s++) copies[s] = STAGE(s % N) == pp_i;
    for (size_t v = 0; v < n; v++) {
        int32_t s = C.seg[v];
        if (s >= 0) {
            removed[v] = !copies[s];
        } else if (in->procs[in->proc[v]].is_gpu) {
            int st = -1;
            if (in->phase[v] == LSIM_PHASE_FORWARD) st = ts[v] < tf0 ? 0 : P - 1;
            else if (in->phase[v] == LSIM_PHASE_BACKWARD) st = ts[v] < tbl ? P - 1 : ts[v] >= tb0 ? 0 : -1;
            removed[v] = st >= 0 && st != pp_i;
        }
    }
    /* a DP-1 cut's buckets go (their launch calls stay, as the CPU time
     * they took): --dp cuts them again from each stage's own gradients */
    for (size_t v = 0; v < n; v++)
        if (grad_coll(in, &C, v) && bucket_of_one(in, v)) removed[v] = 1;
    for (size_t v = 0; v < n; v++) {
        uint32_t u = C.launcher[v];
        if (removed[v] && C.seg[v] < 0 && u != NONE && !(in->flags[u] & LSIM_NF_BLOCKING)) removed[u] = 1;
    }
    /* the stage's share of the parameters, for the optimizer's kernels */
    double share = param_share(in, &C, ts, P, N, lpc, pp_i, gstage);
#undef STAGE
    if ((rc = label_parts(in, &C, ts, P, V, lpc, unit, err))) goto cleanup;
    {
        uint32_t k = 0;
        for (size_t v = 0; v < n; v++) nid[v] = removed[v] ? NONE : k++;
    }
    char src[512];
    snprintf(src, sizeof src, "whatif:pp%d/stage%d<-%.400s", P, pp_i, in->source);
    {
        wi_plan pl = {removed, C.seg, copies, (uint32_t)(2 * N), src, 2, NULL, NULL, NULL, NULL, NULL};
        if ((rc = wi_rebuild(in, &pl, &o1, &scratch, err))) goto cleanup;
    }
    for (size_t v = 0; v < n; v++) {
        if (!removed[v] && in->phase[v] == LSIM_PHASE_OPTIMIZER && in->procs[in->proc[v]].is_gpu)
            o1->dur[nid[v]] = (lsim_ns)llround((double)in->dur[v] * share);
        if (!removed[v] && in->grad_bytes[v] > 0 && !gstage[v]) o1->grad_bytes[nid[v]] = 0;
    }
    wi_launch_costs(in, C.launcher, samp, &X.lcall, &X.ldelay);
    X.corr = wi_next_corr(in);
    int64_t pid, tid;
    wi_free_stream(in, C.stream, &pid, &tid);
    lsim_proc pstreams[2] = {{1, pid, tid, 0}, {1, pid, tid + 1, 0}};
    X.in = in, X.C = &C, X.ts = ts, X.removed = removed, X.nid = nid, X.o1 = o1;
    X.ps = o1->nprocs, X.pr = o1->nprocs + 1, X.last_send = X.last_recv = NONE;
    /* at most 4 transfers per chunk, 3 nodes and 8 edges each */
    if (!(X.A = lsim_calloc(12 * (size_t)V, sizeof *X.A)) || !(X.E = lsim_calloc(32 * (size_t)V, sizeof *X.E)) ||
        !(X.part = lsim_calloc(12 * (size_t)V, 1)))
        goto nomem;
    lsim_wi_layout Ls = *L;
    Ls.pp = P;
    const int32_t me = lsim_wi_rank(&Ls, tp_i, dp_i, pp_i);
    size_t nc = 0;
    /* in the order the stage runs them: per chunk up, forward receive and
     * send; per chunk down, backward receive and send. Virtual stage vs =
     * c P + p holds layers [vs lpc, (vs + 1) lpc); its neighbours are the
     * virtual stages vs - 1 and vs + 1, on GPUs (vs -+ 1) mod P */
    for (int dir = 0; dir < 2; dir++)
        for (int cc = 0; cc < V; cc++) {
            int c = dir ? V - 1 - cc : cc, vs = c * P + pp_i, lo = vs * lpc, hi = lo + lpc - 1, j = V > 1 ? vs : 0;
            int32_t prev = vs > 0 ? lsim_wi_rank(&Ls, tp_i, dp_i, (vs - 1) % P) : -1;
            int32_t next = vs < P * V - 1 ? lsim_wi_rank(&Ls, tp_i, dp_i, (vs + 1) % P) : -1;
            int jn = V > 1 ? vs + 1 : 0;
            if (!dir) {
                if (vs > 0 && (rc = transfer(&X, lo, 1, 0, PART_F(c, V), j, lsim_cost_p2p(topo, bytes, prev, me), bytes,
                                             prev, me, cpu, &nc, err)))
                    goto cleanup;
                if (vs < P * V - 1 && (rc = transfer(&X, hi, 0, 0, PART_F(c, V), jn, lsim_cost_p2p(topo, bytes, me, next),
                                                     bytes, me, next, cpu, &nc, err)))
                    goto cleanup;
            } else {
                if (vs < P * V - 1 && (rc = transfer(&X, nf + hi, 1, 1, PART_B(c, V), jn,
                                                     lsim_cost_p2p(topo, bytes, next, me), bytes, next, me, cpu, &nc, err)))
                    goto cleanup;
                if (vs > 0 && (rc = transfer(&X, nf + lo, 0, 1, PART_B(c, V), j, lsim_cost_p2p(topo, bytes, me, prev),
                                             bytes, me, prev, cpu, &nc, err)))
                    goto cleanup;
            }
            rec->coll_retimed[LSIM_WI_PP] += (vs > 0) + (vs < P * V - 1);
        }
    if ((rc = wi_append(o1, pstreams, 2, X.A, X.na, X.E, X.ne, &o2, &scratch, err))) goto cleanup;
    if (m > 1) {
        if (!(part2 = lsim_malloc(o2->n ? o2->n : 1))) goto nomem;
        for (size_t v = 0; v < n; v++)
            if (nid[v] != NONE) part2[nid[v]] = unit[v];
        for (size_t i = 0; i < X.na; i++) part2[o1->n + i] = X.part[i];
        lsim_graph *o3 = NULL;
        if ((rc = reorder(o2, part2, pp_i, P, V, m, &o3, &accum, &scratch, err))) goto cleanup;
        lsim_graph_free(o2);
        o2 = o3;
    }
    /* DP from 1: DDP's buckets cut from the stage's own gradients (below) */
    if (to->dp_to > 1) {
        lsim_graph *o4 = NULL;
        Ls.dp = L->dp;
        if ((rc = stage_ddp(in->source, o2, accum, &Ls, topo, me, &o4, rec, err))) goto cleanup;
        lsim_graph_free(o2);
        o2 = o4;
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
    free(unit);
    free(part2);
    free(accum);
    free(gstage);
    free(copies);
    free(nid);
    free(cpu);
    free(samp);
    free(X.A);
    free(X.E);
    free(X.part);
    return rc;
}
