/* Layer cuts of a trace (wi_internal.h wi_layers_cut): where each layer of
 * a trace begins and ends, from its repeating kernel structure, its
 * record_function annotations, or a training step's annotations and
 * autograd's Sequence numbers. A lower module of src/whatif/: identification
 * (ident.c) and the transforms (layers.c, trace_pipe.c, train_pipe.c) use
 * it, and it uses neither. */
#include "wi_internal.h"
#include "lumosim/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a record_function annotation naming a layer (graph.h) */
int wi_annot_layer(const char *s) { return lsim_graph_layer_annotation(s); }

/* The segment (run * units + layer) whose time range holds t, or -1:
 * segment s covers [t0[s], t0[s + 1]) inside a run, the last layer of a
 * run up to t1 of that layer. */
static int32_t seg_at(const lsim_ns *t0, const lsim_ns *t1, int units, int runs, lsim_ns t)
{
    int nseg = units * runs, lo = 0, hi = nseg - 1, at = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (t0[mid] <= t) at = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    if (at < 0) return -1;
    if (at % units == units - 1 && t > t1[at]) return -1;
    return at;
}

void wi_tcut_free(wi_tcut *C)
{
    if (!C) return;
    free(C->seg);
    free(C->launcher);
    free(C->t0);
    free(C->t1);
    lsim_engine_free(C->E);
    memset(C, 0, sizeof *C);
}

/* The layer subgraphs of a Kineto trace (wi_internal.h). Why time ranges:
 * kernels between a layer's recognised ones (dropouts, copies, unrecognised
 * element-wise work) belong to it as much as its GEMMs do. Why the graph's
 * own schedule: observed times are gone after normalisation, and a schedule
 * orders every processor consistently. */
int wi_trace_cut(const lsim_graph *in, const wi_troles *R, const char *what, wi_tcut *C, lsim_err *err)
{
    memset(C, 0, sizeof *C);
    int rc = 0;
    lsim_time_node *T = NULL;
    lsim_ns *c0 = NULL, *c1 = NULL;
    int32_t *cseg = NULL;
    int units = R->layers, runs = R->runs, nseg = units * runs;
    C->units = units, C->runs = runs, C->nseg = nseg;
    C->cpu_thread = UINT32_MAX;
    if (!R->found || units <= 0 || runs <= 0)
        return lsim_err_set(err, LSIM_EARG, "%s: layer structure unknown (%s): %s needs the layers of the trace",
                            in->source, R->why[0] ? R->why : "no repeating layer structure", what);
    size_t n = in->n;
    if ((rc = lsim_engine_new(in, &C->E, err)) || (rc = lsim_engine_run(C->E, err))) goto cleanup;
    const lsim_ns *ts = lsim_engine_start(C->E), *te = lsim_engine_end(C->E);
    T = lsim_malloc((n ? n : 1) * sizeof *T);
    C->seg = lsim_malloc((n ? n : 1) * sizeof *C->seg);
    cseg = lsim_malloc((n ? n : 1) * sizeof *cseg);
    C->launcher = lsim_malloc((n ? n : 1) * sizeof *C->launcher);
    C->t0 = lsim_malloc((size_t)nseg * sizeof *C->t0);
    C->t1 = lsim_malloc((size_t)nseg * sizeof *C->t1);
    c0 = lsim_malloc((size_t)nseg * sizeof *c0);
    c1 = lsim_malloc((size_t)nseg * sizeof *c1);
    if (!T || !C->seg || !cseg || !C->launcher || !C->t0 || !C->t1 || !c0 || !c1) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
        goto cleanup;
    }
    int32_t *seg = C->seg;
    uint32_t *launcher = C->launcher;
    lsim_ns *t0 = C->t0, *t1 = C->t1;
    /* the compute stream in time order: where each run's layers begin */
    size_t nt = 0;
    for (size_t v = 0; v < n; v++) {
        seg[v] = cseg[v] = -1;
        launcher[v] = UINT32_MAX;
        const lsim_proc *pr = &in->procs[in->proc[v]];
        if (pr->is_gpu && pr->tid == R->stream) T[nt++] = (lsim_time_node){ts[v], (uint32_t)v};
    }
    qsort(T, nt, sizeof *T, lsim_time_node_cmp);
    for (int s = 0; s < nseg; s++) t0[s] = INT64_MAX, t1[s] = INT64_MIN;
    {
        int run = -1, last = units;
        for (size_t i = 0; i < nt; i++) {
            int l = R->layer[T[i].node];
            if (l < 0) continue;
            if (l < last && (run < 0 || l == 0)) run++;
            else if (l < last) run = runs; /* out of order: reported below */
            last = l;
            if (run >= runs) break;
            int s = run * units + l;
            if (t0[s] == INT64_MAX) t0[s] = T[i].t;
            if (te[T[i].node] > t1[s]) t1[s] = te[T[i].node];
        }
        int ok = run == runs - 1;
        for (int s = 0; ok && s < nseg; s++) ok = t0[s] != INT64_MAX && (s == 0 || t0[s] > t0[s - 1]);
        if (!ok) {
            rc = lsim_err_set(err, LSIM_EARG,
                              "%s: the %d layers x %d runs recovered from the compute stream do not follow each "
                              "other in time: %s cannot cut them apart",
                              in->source, units, runs, what);
            goto cleanup;
        }
    }
    /* GPU nodes: the compute stream by time range, the owned all-reduces by
     * their range (which must be their own layer's) */
    for (size_t v = 0; v < n; v++) {
        const lsim_proc *pr = &in->procs[in->proc[v]];
        if (!pr->is_gpu) continue;
        if (pr->tid == R->stream) seg[v] = seg_at(t0, t1, units, runs, ts[v]);
        else if (R->layer[v] >= 0) {
            seg[v] = seg_at(t0, t1, units, runs, ts[v]);
            if (seg[v] < 0 || seg[v] % units != R->layer[v]) {
                rc = lsim_err_set(err, LSIM_EARG,
                                  "%s: the all-reduce of layer %d (%s) lies outside that layer's span on the compute "
                                  "stream: %s cannot place it",
                                  in->source, R->layer[v], lsim_strtab_get(in->strings, in->name[v]), what);
                goto cleanup;
            }
        }
    }
    /* launch calls of segment kernels, and the span of each segment's
     * launches on their thread */
    for (int s = 0; s < nseg; s++) c0[s] = INT64_MAX, c1[s] = INT64_MIN;
    for (size_t v = 0; v < n; v++)
        for (uint64_t k = in->in_off[v]; k < in->in_off[v + 1]; k++)
            if ((in->in_class[k] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) launcher[v] = in->in_src[k];
    uint32_t cpu_thread = UINT32_MAX;
    for (size_t v = 0; v < n; v++) {
        uint32_t u = launcher[v];
        if (seg[v] < 0 || u == UINT32_MAX || (in->flags[u] & LSIM_NF_BLOCKING)) continue;
        cseg[u] = seg[v];
        if (cpu_thread == UINT32_MAX) cpu_thread = in->proc[u];
        if (in->proc[u] != cpu_thread) continue;
        if (ts[u] < c0[seg[v]]) c0[seg[v]] = ts[u];
        if (te[u] > c1[seg[v]]) c1[seg[v]] = te[u];
    }
    for (int s = 1; s < nseg; s++)
        if (c0[s] != INT64_MAX && c0[s - 1] != INT64_MAX && c0[s] < c0[s - 1]) cpu_thread = UINT32_MAX; /* no order */
    /* the launching thread's other work between one layer's first launch and
     * the next layer's (launch calls of work outside every layer stay) */
    for (size_t v = 0; v < n; v++) {
        if (cseg[v] >= 0 || in->proc[v] != cpu_thread || (in->flags[v] & LSIM_NF_BLOCKING)) continue;
        int is_launch = 0;
        for (uint64_t k = in->out_off[v]; k < in->out_off[v + 1] && !is_launch; k++)
            is_launch = launcher[in->out_dst[k]] == v;
        if (is_launch) continue;
        for (int s = 0; s < nseg; s++) {
            if (c0[s] == INT64_MAX) continue;
            lsim_ns end = s % units == units - 1 || c0[s + 1] == INT64_MAX ? c1[s] : c0[s + 1];
            if (ts[v] >= c0[s] && ts[v] < end) {
                cseg[v] = s;
                break;
            }
        }
    }
    for (size_t v = 0; v < n; v++)
        if (seg[v] < 0) seg[v] = cseg[v];
    C->cpu_thread = cpu_thread;
    C->stream = R->stream;
cleanup:
    if (rc) wi_tcut_free(C);
    free(T);
    free(cseg);
    free(c0);
    free(c1);
    return rc;
}

/* The thread that carries the layer annotations and the highest layer
 * they name (annot_cut, train_cut): 0, or LSIM_EARG when there are none or
 * they are on two threads. */
static int annot_thread(const lsim_graph *in, const char *what, uint32_t *thr_out, int *maxl_out, lsim_err *err)
{
    uint32_t thr = UINT32_MAX;
    int maxl = -1;
    for (size_t v = 0; v < in->n; v++) {
        if (in->kind[v] != LSIM_N_CPU) continue;
        int l = wi_annot_layer(lsim_strtab_get(in->strings, in->name[v]));
        if (l < 0 || l >= 1000000) continue;
        if (thr == UINT32_MAX) thr = in->proc[v];
        if (in->proc[v] != thr)
            return lsim_err_set(err, LSIM_EARG, "%s: layer annotations on two threads: %s cannot tell the layers apart",
                                in->source, what);
        if (l > maxl) maxl = l;
    }
    if (maxl < 0) return lsim_err_set(err, LSIM_EARG, "%s: no layer annotation (%s)", in->source, what);
    *thr_out = thr, *maxl_out = maxl;
    return 0;
}

/* Annotated work into segments (annot_cut, train_cut): every node's
 * launch call (C->launcher); the annotating thread's work inside span s
 * ([a0[s], a1[s]], spans in time order) to segment s, blocking calls
 * staying, as for the kernel structure; then the GPU work launched there,
 * with each segment's GPU span (C->t0, C->t1, which the caller set empty)
 * and each stream's compute kernels counted (cnt, per processor). */
static void annot_assign(const lsim_graph *in, uint32_t thr, const lsim_ns *a0, const lsim_ns *a1, int nspan,
                         const lsim_ns *ts, const lsim_ns *te, wi_tcut *C, uint32_t *cnt)
{
    size_t n = in->n;
    for (size_t v = 0; v < n; v++) {
        C->seg[v] = -1;
        C->launcher[v] = UINT32_MAX;
        for (uint64_t k = in->in_off[v]; k < in->in_off[v + 1]; k++)
            if ((in->in_class[k] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) C->launcher[v] = in->in_src[k];
        if (in->proc[v] != thr || (in->flags[v] & LSIM_NF_BLOCKING)) continue;
        int lo = 0, hi = nspan - 1, at = -1;
        while (lo <= hi) {
            int mid = (lo + hi) / 2;
            if (a0[mid] <= ts[v]) at = mid, lo = mid + 1;
            else hi = mid - 1;
        }
        if (at >= 0 && te[v] <= a1[at]) C->seg[v] = at;
    }
    for (size_t v = 0; v < n; v++) {
        uint32_t u = C->launcher[v];
        if (!in->procs[in->proc[v]].is_gpu) continue;
        if (in->kind[v] == LSIM_N_KERNEL && !(in->flags[v] & LSIM_NF_COLL)) cnt[in->proc[v]]++;
        if (u == UINT32_MAX || C->seg[u] < 0) continue;
        int s = C->seg[v] = C->seg[u];
        if (ts[v] < C->t0[s]) C->t0[s] = ts[v];
        if (te[v] > C->t1[s]) C->t1[s] = te[v];
    }
}

/* The layers from record_function annotations (wi_layers_cut). Why the
 * first and last piece: the launching thread is flattened, so an annotation
 * survives only as the pieces between (and around) the ops it holds; a
 * record_function's own enter and exit cost leaves a piece at each end. */
static int annot_cut(const lsim_graph *in, const char *what, wi_tcut *C, lsim_err *err)
{
    memset(C, 0, sizeof *C);
    C->cpu_thread = UINT32_MAX;
    C->annotated = 1;
    int rc = 0, maxl = -1;
    size_t n = in->n;
    uint32_t thr = UINT32_MAX, *cnt = NULL;
    if ((rc = annot_thread(in, what, &thr, &maxl, err))) return rc;
    int units = maxl + 1;
    C->units = units, C->runs = 1, C->nseg = units;
    if ((rc = lsim_engine_new(in, &C->E, err)) || (rc = lsim_engine_run(C->E, err))) goto cleanup;
    const lsim_ns *ts = lsim_engine_start(C->E), *te = lsim_engine_end(C->E);
    C->seg = lsim_malloc((n ? n : 1) * sizeof *C->seg);
    C->launcher = lsim_malloc((n ? n : 1) * sizeof *C->launcher);
    C->t0 = lsim_malloc((size_t)units * sizeof *C->t0);
    C->t1 = lsim_malloc((size_t)units * sizeof *C->t1);
    lsim_ns *a0 = lsim_malloc((size_t)units * sizeof *a0), *a1 = lsim_malloc((size_t)units * sizeof *a1);
    cnt = lsim_calloc(in->nprocs ? in->nprocs : 1, sizeof *cnt);
    if (!C->seg || !C->launcher || !C->t0 || !C->t1 || !a0 || !a1 || !cnt) {
        free(a0);
        free(a1);
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
        goto cleanup;
    }
    for (int l = 0; l < units; l++) a0[l] = C->t0[l] = INT64_MAX, a1[l] = C->t1[l] = INT64_MIN;
    for (size_t v = 0; v < n; v++) {
        if (in->kind[v] != LSIM_N_CPU || in->proc[v] != thr) continue;
        int l = wi_annot_layer(lsim_strtab_get(in->strings, in->name[v]));
        if (l < 0 || l >= units) continue;
        if (ts[v] < a0[l]) a0[l] = ts[v];
        if (te[v] > a1[l]) a1[l] = te[v];
    }
    for (int l = 0; l < units && !rc; l++) {
        if (a0[l] == INT64_MAX)
            rc = lsim_err_set(err, LSIM_EARG, "%s: layer annotations 0..%d, but none for layer %d: %s needs every layer",
                              in->source, maxl, l, what);
        else if (l && a0[l] < a1[l - 1])
            rc = lsim_err_set(err, LSIM_EARG,
                              "%s: the annotations of layers %d and %d overlap (several micro-batches, or nested "
                              "layers): %s cuts one forward pass of consecutive layers",
                              in->source, l - 1, l, what);
    }
    if (!rc) annot_assign(in, thr, a0, a1, units, ts, te, C, cnt);
    free(a0);
    free(a1);
    if (rc) goto cleanup;
    uint32_t cs = 0;
    for (uint32_t p = 1; p < in->nprocs; p++)
        if (cnt[p] > cnt[cs]) cs = p;
    C->stream = in->nprocs ? in->procs[cs].tid : -1;
    for (int l = 0; l < units && !rc; l++)
        if (C->t0[l] == INT64_MAX)
            rc = lsim_err_set(err, LSIM_EARG, "%s: layer annotation %d launches no GPU work: %s cannot place it",
                              in->source, l, what);
    C->cpu_thread = thr;
cleanup:
    if (rc) wi_tcut_free(C);
    free(cnt);
    return rc;
}

/* A run of layer segments in time order on one thread: the end of segment
 * s's stretch there is the next segment's first launch when that segment is
 * the next layer of the same pass (work between them belongs to s), else
 * its own last launch. */
static lsim_ns stretch_end(const lsim_ns *c0, const lsim_ns *c1, int s, int next) { return next >= 0 && c0[next] != INT64_MAX ? c0[next] : c1[s]; }

/* The layers of a traced training step (wi_layers_cut, docs/whatif.md
 * "Layers of a training step"). Forward: layer l of forward pass r is the
 * annotating thread's work inside the r-th occurrence of annotation
 * layer[l] and the GPU work launched there (as annot_cut). Backward: the
 * GPU work whose forward op -- autograd's Sequence number, fwd_seq -- lies
 * in that forward segment's Sequence range, widened to the compute stream's
 * stretch from the layer's first backward kernel to the next backward
 * layer's (l - 1: backward runs the layers in reverse), so that
 * AccumulateGrad copies and kernels without a forward op between them go
 * with it, plus the launching (autograd) thread's work over the same
 * stretch of its launches: the evaluate_function wrappers and the
 * AccumulateGrad ops, whose gradient bytes then follow the layer's copies.
 * Why Sequence ranges and not one op per kernel: ops that launch nothing in
 * the forward pass (views, transposes) still own a Sequence number their
 * backward kernels carry, and they lie between the layer's others.
 * Segments: forward run * units + l, backward units * runs + run * units +
 * l. Collectives (DDP's buckets) are in no segment. */
/* train_cut's state across its phases. */
typedef struct tc_state {
    const lsim_graph *in;
    const char *what;
    wi_tcut *C;
    int units, runs, nf, nseg, maxl;
    uint32_t thr;                 /* the annotating thread */
    const lsim_ns *ts, *te;       /* each node's simulated start and end */
    lsim_time_node *A, *Q;        /* annotation pieces in time order; forward Sequence numbers and their segments */
    size_t na, nq;
    lsim_ns *a0, *a1;             /* forward segment's annotation span */
    lsim_ns *c0, *c1, *lst;       /* backward segment's stretch of launches; its last paired kernel's start */
    int32_t *smin, *smax;         /* forward segment's Sequence range */
    uint32_t *bthr, *cnt;         /* backward segment's launching thread; GPU nodes per processor */
} tc_state;

static int tc_nomem(const tc_state *S, lsim_err *err)
{
    return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", S->in->source);
}

/* The annotation pieces in time order (a new forward pass starts where the
 * layer index falls back), the segments' arrays, and each forward segment's
 * annotation span: every layer in every pass, none nested. */
static int tc_annotations(tc_state *S, lsim_err *err)
{
    const lsim_graph *in = S->in;
    wi_tcut *C = S->C;
    const char *what = S->what;
    size_t n = in->n;
    int units = S->units, maxl = S->maxl;
    uint32_t thr = S->thr;
    const lsim_ns *ts = S->ts, *te = S->te;
    lsim_time_node *A;
    size_t na = 0;
    if (!(A = S->A = lsim_malloc((n ? n : 1) * sizeof *A))) return tc_nomem(S, err);
    for (size_t v = 0; v < n; v++)
        if (in->kind[v] == LSIM_N_CPU && in->proc[v] == thr) {
            int l = wi_annot_layer(lsim_strtab_get(in->strings, in->name[v]));
            if (l >= 0 && l < units) A[na++] = (lsim_time_node){ts[v], (uint32_t)v};
        }
    S->na = na;
    qsort(A, na, sizeof *A, lsim_time_node_cmp);
    int runs = 0;
    {
        int last = units;
        for (size_t i = 0; i < na; i++) {
            int l = wi_annot_layer(lsim_strtab_get(in->strings, in->name[A[i].node]));
            if (l < last) runs++;
            last = l;
        }
    }
    int nf = units * runs, nseg = 2 * nf;
    S->runs = runs, S->nf = nf, S->nseg = nseg;
    C->units = units, C->runs = runs, C->nseg = nseg;
    C->seg = lsim_malloc((n ? n : 1) * sizeof *C->seg);
    C->launcher = lsim_malloc((n ? n : 1) * sizeof *C->launcher);
    C->t0 = lsim_malloc((size_t)nseg * sizeof *C->t0);
    C->t1 = lsim_malloc((size_t)nseg * sizeof *C->t1);
    S->a0 = lsim_malloc((size_t)nf * sizeof *S->a0), S->a1 = lsim_malloc((size_t)nf * sizeof *S->a1);
    S->c0 = lsim_malloc((size_t)nseg * sizeof *S->c0), S->c1 = lsim_malloc((size_t)nseg * sizeof *S->c1);
    S->lst = lsim_malloc((size_t)nseg * sizeof *S->lst);
    S->smin = lsim_malloc((size_t)nf * sizeof *S->smin), S->smax = lsim_malloc((size_t)nf * sizeof *S->smax);
    S->bthr = lsim_malloc((size_t)nseg * sizeof *S->bthr);
    S->cnt = lsim_calloc(in->nprocs ? in->nprocs : 1, sizeof *S->cnt);
    if (!C->seg || !C->launcher || !C->t0 || !C->t1 || !S->a0 || !S->a1 || !S->c0 || !S->c1 || !S->smin || !S->smax ||
        !S->bthr || !S->cnt || !S->lst)
        return tc_nomem(S, err);
    lsim_ns *a0 = S->a0, *a1 = S->a1;
    for (int s = 0; s < nf; s++) a0[s] = INT64_MAX, a1[s] = INT64_MIN, S->smin[s] = INT32_MAX, S->smax[s] = -1;
    for (int s = 0; s < nseg; s++)
        C->t0[s] = S->c0[s] = INT64_MAX, C->t1[s] = S->c1[s] = S->lst[s] = INT64_MIN, S->bthr[s] = UINT32_MAX;
    {
        int run = -1, last = units;
        for (size_t i = 0; i < na; i++) {
            uint32_t v = A[i].node;
            int l = wi_annot_layer(lsim_strtab_get(in->strings, in->name[v]));
            if (l < last) run++;
            last = l;
            int s = run * units + l;
            if (ts[v] < a0[s]) a0[s] = ts[v];
            if (te[v] > a1[s]) a1[s] = te[v];
        }
    }
    for (int s = 0; s < nf; s++) {
        if (a0[s] == INT64_MAX) {
            return lsim_err_set(err, LSIM_EARG,
                              "%s: forward pass %d of %d has no annotation for layer %d (layers 0..%d annotated): %s "
                              "needs every layer in every pass",
                              in->source, s / units + 1, runs, s % units, maxl, what);
        }
        if (s && a0[s] < a1[s - 1]) {
            return lsim_err_set(err, LSIM_EARG,
                              "%s: the annotations of layers %d and %d overlap (nested layers): %s cuts passes of "
                              "consecutive layers",
                              in->source, (s - 1) % units, s % units, what);
        }
    }
    return 0;
}

/* Forward: the annotating thread's work inside each annotation, then the
 * GPU work launched there, and each layer's Sequence numbers; the compute
 * stream (the GPU processor with the most of it). */
static int tc_forward(tc_state *S, lsim_err *err)
{
    const lsim_graph *in = S->in;
    wi_tcut *C = S->C;
    const char *what = S->what;
    size_t n = in->n;
    int units = S->units, nf = S->nf;
    int32_t *smin = S->smin, *smax = S->smax;
    uint32_t *cnt = S->cnt;
    annot_assign(in, S->thr, S->a0, S->a1, nf, S->ts, S->te, C, cnt);
    for (size_t v = 0; v < n; v++) {
        int s = C->seg[v];
        if (s < 0 || !in->procs[in->proc[v]].is_gpu) continue;
        if (in->phase[v] == LSIM_PHASE_FORWARD && in->fwd_seq[v] >= 0) {
            if (in->fwd_seq[v] < smin[s]) smin[s] = in->fwd_seq[v];
            if (in->fwd_seq[v] > smax[s]) smax[s] = in->fwd_seq[v];
        }
    }
    uint32_t cs = 0;
    for (uint32_t p = 1; p < in->nprocs; p++)
        if (cnt[p] > cnt[cs]) cs = p;
    C->stream = in->nprocs ? in->procs[cs].tid : -1;
    for (int s = 0; s < nf; s++) {
        if (C->t0[s] == INT64_MAX) {
            return lsim_err_set(err, LSIM_EARG, "%s: layer annotation %d (pass %d) launches no GPU work: %s cannot place it",
                              in->source, s % units, s / units + 1, what);
        }
        if (smin[s] == INT32_MAX) {
            return lsim_err_set(err, LSIM_EARG,
                              "%s: layer %d of forward pass %d has no GPU work with an autograd Sequence number: %s "
                              "cannot pair its backward pass with it (record the trace with a PyTorch that writes "
                              "\"Sequence number\")",
                              in->source, s % units, s / units + 1, what);
        }
    }
    return 0;
}

/* Every forward Sequence number of a layer, and its segment: exact pairs
 * (a what-if's copies of a layer carry numbers of their own, rebuild.c, so
 * ranges need not grow with the layers); a number in two layers refused. */
static int tc_sequences(tc_state *S, lsim_err *err)
{
    const lsim_graph *in = S->in;
    wi_tcut *C = S->C;
    const char *what = S->what;
    size_t n = in->n;
    int units = S->units, nf = S->nf;
    lsim_time_node *Q;
    size_t nq = 0;
    if (!(Q = S->Q = lsim_malloc((n ? n : 1) * sizeof *Q))) return tc_nomem(S, err);
    for (size_t v = 0; v < n; v++)
        if (C->seg[v] >= 0 && C->seg[v] < nf && in->procs[in->proc[v]].is_gpu && in->phase[v] == LSIM_PHASE_FORWARD &&
            in->fwd_seq[v] >= 0)
            Q[nq++] = (lsim_time_node){in->fwd_seq[v], (uint32_t)C->seg[v]};
    qsort(Q, nq, sizeof *Q, lsim_time_node_cmp);
    {
        size_t m = 0;
        for (size_t i = 0; i < nq; i++) {
            if (m && Q[m - 1].t == Q[i].t) {
                if (Q[m - 1].node != Q[i].node) {
                    return lsim_err_set(err, LSIM_EARG,
                                      "%s: autograd Sequence number %lld is in layers %u and %u: %s cannot tell which "
                                      "one a backward kernel differentiates",
                                      in->source, (long long)Q[i].t, Q[m - 1].node % (unsigned)units,
                                      Q[i].node % (unsigned)units, what);
                }
                continue;
            }
            Q[m++] = Q[i];
        }
        nq = m;
    }
    S->nq = nq;
    return 0;
}

/* Backward: GPU work by the forward op it differentiates (side streams by
 * pairing alone; the compute stream's paired kernels bound each backward
 * layer), every layer paired, in reverse layer order. */
static int tc_backward(tc_state *S, lsim_err *err)
{
    const lsim_graph *in = S->in;
    wi_tcut *C = S->C;
    const char *what = S->what;
    size_t n = in->n, nq = S->nq;
    int units = S->units, nf = S->nf, runs = S->runs;
    const lsim_time_node *Q = S->Q;
    const lsim_ns *ts = S->ts, *te = S->te;
    lsim_ns *lst = S->lst;
    uint64_t nbwd = 0, paired = 0;
    for (size_t v = 0; v < n; v++) {
        if (!in->procs[in->proc[v]].is_gpu || in->phase[v] != LSIM_PHASE_BACKWARD || (in->flags[v] & LSIM_NF_COLL))
            continue;
        nbwd++;
        int32_t q = in->fwd_seq[v];
        if (q < 0) continue;
        size_t lo = 0, hi = nq;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (Q[mid].t < q) lo = mid + 1;
            else hi = mid;
        }
        if (lo == nq || Q[lo].t != q) continue;
        int b = nf + (int)Q[lo].node;
        paired++;
        if (in->procs[in->proc[v]].tid == C->stream) {
            if (ts[v] < C->t0[b]) C->t0[b] = ts[v];
            if (te[v] > C->t1[b]) C->t1[b] = te[v];
            if (ts[v] > lst[b]) lst[b] = ts[v];
        } else {
            C->seg[v] = b; /* side streams: by pairing alone */
        }
    }
    if (!paired) {
        return lsim_err_set(err, LSIM_EARG,
                          "%s: none of the %llu backward kernels carries a forward op inside a layer: %s cannot place "
                          "the backward pass's layers",
                          in->source, (unsigned long long)nbwd, what);
    }
    for (int r = 0; r < runs; r++)
        for (int l = 0; l < units; l++) {
            int b = nf + r * units + l;
            if (C->t0[b] == INT64_MAX) {
                return lsim_err_set(err, LSIM_EARG,
                                  "%s: layer %d of pass %d has no backward kernel paired with its forward ops: %s "
                                  "cannot cut its backward pass",
                                  in->source, l, r + 1, what);
            }
            if (l && C->t0[b - 1] <= C->t0[b]) {
                return lsim_err_set(err, LSIM_EARG,
                                  "%s: the backward kernels of layer %d (pass %d) do not run after layer %d's: %s cuts "
                                  "a backward pass that runs the layers in reverse",
                                  in->source, l - 1, r + 1, l, what);
            }
        }
    return 0;
}

/* The compute stream's backward stretches (layer l from its first kernel
 * to layer l - 1's first, layer 0 up to its last), their launches, and the
 * launching thread's other work over each stretch. */
static void tc_stretches(tc_state *S)
{
    const lsim_graph *in = S->in;
    wi_tcut *C = S->C;
    size_t n = in->n;
    int units = S->units, nf = S->nf, runs = S->runs;
    const lsim_ns *ts = S->ts, *te = S->te;
    lsim_ns *c0 = S->c0, *c1 = S->c1, *lst = S->lst;
    uint32_t *bthr = S->bthr;
    for (size_t v = 0; v < n; v++) {
        if (C->seg[v] >= 0 || !in->procs[in->proc[v]].is_gpu || in->procs[in->proc[v]].tid != C->stream ||
            (in->flags[v] & LSIM_NF_COLL))
            continue;
        for (int r = 0; r < runs && C->seg[v] < 0; r++)
            for (int l = 0; l < units; l++) {
                int b = nf + r * units + l;
                /* layer 0 up to its last paired kernel's start: the next
                 * kernel may start the instant that one ends */
                if (ts[v] >= C->t0[b] && (l ? ts[v] < C->t0[b - 1] : ts[v] <= lst[b])) {
                    C->seg[v] = b;
                    break;
                }
            }
    }
    /* their launches, and each backward segment's stretch of launches on
     * its thread */
    for (size_t v = 0; v < n; v++) {
        int b = C->seg[v];
        uint32_t u = C->launcher[v];
        if (b < nf || u == UINT32_MAX || (in->flags[u] & LSIM_NF_BLOCKING) || C->seg[u] >= 0) continue;
        C->seg[u] = b;
        if (bthr[b] == UINT32_MAX) bthr[b] = in->proc[u];
        if (in->proc[u] != bthr[b]) continue;
        if (ts[u] < c0[b]) c0[b] = ts[u];
        if (te[u] > c1[b]) c1[b] = te[u];
    }
    /* the launching thread's other work over a backward layer's stretch:
     * up to the next backward layer's first launch, for layer 0 up to the
     * first launch of GPU work outside every layer after it (the
     * embedding's backward), so that its AccumulateGrad ops go with it */
    for (int r = 0; r < runs; r++)
        for (int l = 0; l < units; l++) {
            int b = nf + r * units + l;
            lsim_ns end = l ? stretch_end(c0, c1, b, b - 1) : INT64_MAX;
            if (c0[b] == INT64_MAX) continue;
            if (!l) {
                for (size_t v = 0; v < n; v++) {
                    uint32_t u = C->launcher[v];
                    if (u != UINT32_MAX && C->seg[v] < 0 && !(in->flags[v] & LSIM_NF_COLL) && in->proc[u] == bthr[b] &&
                        ts[u] > c1[b] && ts[u] < end)
                        end = ts[u];
                }
                if (end == INT64_MAX) end = c1[b];
            }
            /* a collective launched there (a DDP bucket) goes with the
             * stretch, launch and kernel: left outside, its launch call
             * would split the stretch on its thread, and a copy placed
             * after the stretch would wait for itself; the what-if cuts
             * the buckets again from the new gradients (trace_ddp.c) */
            for (size_t v = 0; v < n; v++) {
                if (C->seg[v] >= 0 || in->proc[v] != bthr[b] || (in->flags[v] & LSIM_NF_BLOCKING)) continue;
                int is_launch = 0, coll = -1;
                for (uint64_t k = in->out_off[v]; k < in->out_off[v + 1]; k++)
                    if (C->launcher[in->out_dst[k]] == v) {
                        is_launch = 1;
                        if (in->flags[in->out_dst[k]] & LSIM_NF_COLL) coll = (int)in->out_dst[k];
                    }
                if (ts[v] < c0[b] || ts[v] >= end) continue;
                if (!is_launch) C->seg[v] = b;
                else if (coll >= 0 && C->seg[coll] < 0) C->seg[v] = C->seg[coll] = b;
            }
        }
}

/* FSDP's backward all-gathers: each to the backward layer that starts next
 * on its thread (below). */
static void tc_fsdp_gathers(tc_state *S)
{
    const lsim_graph *in = S->in;
    wi_tcut *C = S->C;
    size_t n = in->n;
    int nf = S->nf, nseg = S->nseg;
    const lsim_ns *ts = S->ts;
    const lsim_ns *c0 = S->c0;
    const uint32_t *bthr = S->bthr;
    /* FSDP's backward all-gathers fetch the parameters of the layer about
     * to run backward: launched after the previous layer's last op (inside
     * its stretch) or before the first backward layer (outside every
     * stretch), each belongs to the backward layer that starts next on its
     * thread, with the launching thread's work from it to that layer's
     * first launch (its op's closing piece: left out, it would split the
     * layer's run on the thread and a copy would wait for itself; launches
     * of other GPU work stay). Reduce-scatters reduce the layer just done:
     * they stay in its stretch. */
    for (size_t v = 0; v < n; v++) {
        uint32_t u = C->launcher[v];
        if (!(in->flags[v] & LSIM_NF_COLL) || in->coll[v] < 0 || in->phase[v] != LSIM_PHASE_BACKWARD || u == UINT32_MAX ||
            in->colls[in->coll[v]].kind != LSIM_COLL_ALLGATHER)
            continue;
        int nb = -1;
        for (int b = nf; b < nseg; b++)
            if (bthr[b] == in->proc[u] && c0[b] != INT64_MAX && c0[b] >= ts[u] && (nb < 0 || c0[b] < c0[nb])) nb = b;
        if (nb < 0 || C->seg[v] == nb) continue;
        int was = C->seg[u];
        C->seg[v] = C->seg[u] = nb;
        for (size_t w = 0; w < n; w++) {
            if (C->seg[w] != was || in->proc[w] != in->proc[u] || ts[w] <= ts[u] || ts[w] >= c0[nb] ||
                (in->flags[w] & LSIM_NF_BLOCKING))
                continue;
            int launches = 0;
            for (uint64_t k = in->out_off[w]; k < in->out_off[w + 1]; k++)
                launches |= C->launcher[in->out_dst[k]] == w;
            if (!launches) C->seg[w] = nb;
        }
    }
}

static int train_cut(const lsim_graph *in, const char *what, wi_tcut *C, lsim_err *err)
{
    memset(C, 0, sizeof *C);
    C->cpu_thread = UINT32_MAX;
    C->annotated = 1;
    tc_state S;
    memset(&S, 0, sizeof S);
    S.in = in, S.what = what, S.C = C, S.thr = UINT32_MAX, S.maxl = -1;
    int rc = annot_thread(in, what, &S.thr, &S.maxl, err);
    if (rc) return rc;
    S.units = S.maxl + 1;
    if ((rc = lsim_engine_new(in, &C->E, err)) || (rc = lsim_engine_run(C->E, err))) goto cleanup;
    S.ts = lsim_engine_start(C->E), S.te = lsim_engine_end(C->E);
    if ((rc = tc_annotations(&S, err)) || (rc = tc_forward(&S, err)) || (rc = tc_sequences(&S, err)) ||
        (rc = tc_backward(&S, err)))
        goto cleanup;
    tc_stretches(&S);
    tc_fsdp_gathers(&S);
    C->cpu_thread = S.thr;
cleanup:
    if (rc) wi_tcut_free(C);
    free(S.cnt);
    free(S.bthr);
    free(S.smin);
    free(S.smax);
    free(S.c0);
    free(S.c1);
    free(S.lst);
    free(S.a0);
    free(S.a1);
    free(S.A);
    free(S.Q);
    return rc;
}

/* A training step: phases recovered, and backward work among them. */
static int has_backward_phase(const lsim_graph *g)
{
    for (size_t v = 0; v < g->n; v++)
        if (g->phase[v] == LSIM_PHASE_BACKWARD) return 1;
    return 0;
}

int wi_layers_cut(const lsim_graph *in, int trace_layers, const char *what, wi_tcut *C, lsim_err *err)
{
    memset(C, 0, sizeof *C);
    if (!wi_forward_only(in) && has_backward_phase(in))
        for (size_t v = 0; v < in->n; v++)
            if (in->kind[v] == LSIM_N_CPU && wi_annot_layer(lsim_strtab_get(in->strings, in->name[v])) >= 0)
                return train_cut(in, what, C, err);
    if (!wi_forward_only(in))
        return lsim_err_set(err, LSIM_EARG,
                            "%s: %s: the trace has backward-pass or optimizer kernels, whose layers are not recovered "
                            "(only a forward pass's are: cutting them would leave their backward behind; "
                            "docs/whatif.md)",
                            in->source, what);
    for (size_t v = 0; v < in->n; v++)
        if (in->kind[v] == LSIM_N_CPU && wi_annot_layer(lsim_strtab_get(in->strings, in->name[v])) >= 0)
            return annot_cut(in, what, C, err);
    wi_troles R;
    int rc = wi_trace_roles(in, trace_layers > 0 ? trace_layers : 0, &R, err);
    if (rc) return rc;
    rc = wi_trace_cut(in, &R, what, C, err);
    wi_troles_free(&R);
    return rc;
}
