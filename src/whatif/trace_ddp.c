/* What-if: the gradient all-reduces of PyTorch DDP inserted into a traced
 * training step of data-parallel width 1 (whatif --dp N from DP 1; docs/
 * whatif.md). A trace has no layer tags to place buckets by, but autograd
 * records each parameter's AccumulateGrad with its shape (graph.h,
 * grad_bytes), and DDP's bucketing is a rule over exactly that: the
 * gradients in the order they became ready, cut where a bucket's bytes
 * reach its cap. Each bucket is launched from the thread that made its last
 * gradient ready, on a stream of its own that first waits for what that
 * thread had enqueued, and the first GPU work launched after the backward
 * pass waits for the pass's last bucket (DDP's finalize: work.wait() makes
 * the current stream wait). The buckets are placed in a group of one, timed
 * for it; the DP step then widens them and the network step re-times them
 * for the new group, as it does for a traced job cut to DP 1. */
#include "wi_internal.h"
#include "lumosim/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/cost.h"

#define NONE UINT32_MAX

typedef struct grad_item {
    int64_t pass;  /* iteration, or INT64_MAX outside every iteration */
    lsim_ns t;     /* its start in the schedule, or 0 (node order) */
    uint32_t v;
} grad_item;

static int cmp_grad_item(const void *a, const void *b)
{
    const grad_item *x = a, *y = b;
    if (x->pass != y->pass) return x->pass < y->pass ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

/* The passes: with the schedule's start times, each backward pass (a
 * forward launch or a new ProfilerStep between two gradients starts a new one: gradient
 * accumulation's micro-batches each run their backward, and DDP, unless
 * told no_sync(), all-reduces after every one), in time order (a
 * what-if's copies of a layer are appended after the nodes they copy, so
 * ids no longer follow a thread); without them, a node's ProfilerStep
 * iteration and node ids, which a built graph's follow (the build emits
 * each thread's pieces in time order). */
int wi_ddp_buckets(const lsim_graph *g, const lsim_ns *start, int64_t first_cap, int64_t cap, wi_ddp_bucket **out,
                   size_t *nout, uint32_t *npass)
{
    *out = NULL;
    *nout = 0;
    *npass = 0;
    size_t n = 0, nb = 0;
    for (size_t v = 0; v < g->n; v++) n += g->grad_bytes[v] > 0;
    grad_item *it = lsim_malloc((n ? n : 1) * sizeof *it);
    wi_ddp_bucket *B = lsim_malloc((n ? n : 1) * sizeof *B);
    if (!it || !B) {
        free(it);
        free(B);
        return LSIM_ENOMEM;
    }
    n = 0;
    for (size_t v = 0; v < g->n; v++)
        if (g->grad_bytes[v] > 0)
            it[n++] = (grad_item){start ? 0 : g->iter[v] >= 0 ? g->iter[v] : INT64_MAX, start ? start[v] : 0, (uint32_t)v};
    qsort(it, n, sizeof *it, cmp_grad_item);
    if (start && n) {
        /* the launch times of forward work, then a pass number per
         * gradient: one more at each forward launch between two */
        size_t nfw = 0;
        lsim_ns *fw = lsim_malloc((g->n ? g->n : 1) * sizeof *fw);
        if (!fw) {
            free(it);
            free(B);
            return LSIM_ENOMEM;
        }
        for (size_t v = 0; v < g->n; v++) {
            if (g->phase[v] != LSIM_PHASE_FORWARD || !g->procs[g->proc[v]].is_gpu) continue;
            for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
                if ((g->in_class[k] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) fw[nfw++] = start[g->in_src[k]];
        }
        for (size_t i = 1; i < nfw; i++) /* insertion sort of a nearly sorted list */
            for (size_t j = i; j > 0 && fw[j - 1] > fw[j]; j--) {
                lsim_ns x = fw[j];
                fw[j] = fw[j - 1], fw[j - 1] = x;
            }
        int64_t pass = 0;
        size_t f = 0;
        lsim_ns t0 = it[0].t;
        while (f < nfw && fw[f] <= t0) f++;
        for (size_t i = 0; i < n; i++) {
            int moved = 0;
            while (f < nfw && fw[f] < it[i].t) f++, moved = 1;
            if (i && (moved || g->iter[it[i].v] != g->iter[it[i - 1].v])) pass++; /* also a new ProfilerStep */
            it[i].pass = pass;
        }
        free(fw);
    }
    int64_t limit = first_cap, open = 0;
    uint32_t params = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || it[i].pass != it[i - 1].pass) {
            if (open) nb++; /* close the last pass's open bucket */
            open = 0;
            limit = first_cap;
            ++*npass;
        }
        if (!open) B[nb] = (wi_ddp_bucket){(int32_t)(*npass - 1), 0, NONE, 0}, params = 0;
        open = 1;
        B[nb].bytes += g->grad_bytes[it[i].v];
        B[nb].last = it[i].v;
        B[nb].nparams = ++params;
        /* DDP (reducer.cpp, compute_bucket_assignment_by_size): a bucket
         * closes once its size reaches its limit; the next uses the next
         * limit (1 MiB first, then bucket_cap_mb) */
        if (B[nb].bytes >= limit) {
            nb++;
            open = 0;
            limit = cap;
        }
    }
    if (open) nb++;
    free(it);
    *out = B;
    *nout = nb;
    return 0;
}

typedef struct launch {
    uint32_t call, gpu;
} launch;

/* Median of v[0..n) (v reordered), or dflt when n is 0. */
static lsim_ns median_or(lsim_ns *v, size_t n, lsim_ns dflt) { return n ? lsim_median_i64(v, n) : dflt; }

/* Buckets a traced DP > 1 step already ran (re-cut after its layers or
 * shape changed): their group, and what the trace measured of them. */
typedef struct bucket_ref {
    char pg[48];       /* as wi_addnode's */
    int32_t group_size;
    int64_t seq_base;  /* after every other collective's of the group */
    double k;          /* median of traced duration / modelled cost */
    const uint8_t *synced; /* per backward pass: it all-reduced in the trace
                              (DDP's no_sync() leaves the others out) */
    uint32_t npass;
} bucket_ref;

static int insert_buckets(const lsim_graph *in, const lsim_wi_layout *L, const lsim_topology *topo, int32_t me,
                          const bucket_ref *ref, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    int rc = 0;
    wi_ddp_bucket *B = NULL;
    size_t nb = 0, n = in->n;
    uint32_t npass = 0;
    lsim_engine *E = NULL;
    launch *lastl = NULL;   /* per processor: the latest launch seen in node order */
    uint32_t *wait = NULL;  /* per bucket: the compute node it waits for */
    lsim_time_node *byt = NULL;
    uint32_t *bof = NULL;  /* per node: the bucket it is the last gradient of */
    lsim_ns *samp = NULL;
    wi_addnode *A = NULL;
    wi_addedge *Ed = NULL;
    size_t na = 0, ne = 0;
    if ((rc = lsim_engine_new(in, &E, err)) || (rc = lsim_engine_run(E, err))) goto cleanup;
    const lsim_ns *ts = lsim_engine_start(E), *te = lsim_engine_end(E);
    if ((rc = wi_ddp_buckets(in, ts, LSIM_WI_DDP_FIRST_CAP, LSIM_WI_DDP_CAP, &B, &nb, &npass))) goto nomem;
    if (ref && ref->synced) { /* only the passes that all-reduced in the trace */
        size_t m = 0;
        for (size_t b = 0; b < nb; b++)
            if ((uint32_t)B[b].pass < ref->npass && ref->synced[B[b].pass]) B[m++] = B[b];
        nb = m;
    }
    if (!nb) {
        rc = lsim_err_set(err, LSIM_EARG,
                          "%s: no parameter gradient sizes (AccumulateGrad ops with Input Dims; profile with "
                          "record_shapes=True), so the gradient buckets to insert are unknown",
                          in->source);
        goto cleanup;
    }
    if (!(lastl = lsim_malloc((in->nprocs ? in->nprocs : 1) * sizeof *lastl)) || !(wait = lsim_malloc(nb * sizeof *wait)) ||
        !(bof = lsim_malloc((n ? n : 1) * sizeof *bof)) || !(byt = lsim_malloc((n ? n : 1) * sizeof *byt)) ||
        !(samp = lsim_malloc((n ? n : 1) * sizeof *samp)) || !(A = lsim_calloc(2 * nb, sizeof *A)) ||
        !(Ed = lsim_calloc(7 * nb, sizeof *Ed)))
        goto nomem;
    /* what each bucket waits for: the GPU work its thread launched last
     * before the bucket's last gradient was ready (DDP's all-reduce is
     * enqueued on the NCCL stream after an event on the current stream);
     * one walk of the nodes in schedule order */
    for (uint32_t p = 0; p < in->nprocs; p++) lastl[p] = (launch){NONE, NONE};
    for (size_t b = 0; b < nb; b++) wait[b] = NONE;
    {
        /* the bucket each node is the last gradient of */
        for (size_t v = 0; v < n; v++) bof[v] = NONE;
        for (size_t b = 0; b < nb; b++) bof[B[b].last] = (uint32_t)b;
        for (size_t v = 0; v < n; v++) byt[v] = (lsim_time_node){ts[v], (uint32_t)v};
        qsort(byt, n, sizeof *byt, lsim_time_node_cmp);
        for (size_t i = 0; i < n; i++) {
            uint32_t v = byt[i].node;
            if (in->kind[v] == LSIM_N_RUNTIME)
                for (uint64_t k = in->out_off[v]; k < in->out_off[v + 1]; k++) {
                    uint32_t w = in->out_dst[k];
                    if (!in->procs[in->proc[w]].is_gpu || (in->flags[w] & LSIM_NF_COLL)) continue;
                    lastl[in->proc[v]] = (launch){(uint32_t)v, w};
                }
            if (bof[v] != NONE) wait[bof[v]] = lastl[in->proc[v]].gpu;
        }
    }
    /* launch costs of this trace: median launch call, median launch delay */
    lsim_ns lcall, ldelay;
    {
        size_t k = 0;
        for (size_t v = 0; v < n; v++)
            if (in->kind[v] == LSIM_N_RUNTIME && in->out_off[v + 1] > in->out_off[v]) samp[k++] = in->dur[v];
        lcall = median_or(samp, k, 5000);
        k = 0;
        for (uint64_t e = 0; e < in->nedges; e++)
            if ((in->in_class[e] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) samp[k++] = in->in_delay[e];
        ldelay = median_or(samp, k, 5000);
    }
    /* the new stream: on the device of the compute work, after its streams */
    int64_t pid = 0, tid = 0, corr = 0;
    for (size_t b = 0; b < nb; b++)
        if (wait[b] != NONE) {
            pid = in->procs[in->proc[wait[b]]].pid;
            break;
        }
    for (uint32_t p = 0; p < in->nprocs; p++)
        if (in->procs[p].is_gpu && in->procs[p].pid == pid && in->procs[p].tid >= tid) tid = in->procs[p].tid + 1;
    for (size_t v = 0; v < n; v++)
        if (in->corr[v] >= corr) corr = in->corr[v] + 1;
    lsim_proc pstream = {1, pid, tid, 0};
    int t_i, d_i, p_i;
    lsim_wi_coords(L, me, &t_i, &d_i, &p_i);
    int32_t one[1] = {me};
    uint32_t prev = NONE;
    for (size_t b = 0; b < nb; b++) {
        uint32_t a = B[b].last, call = (uint32_t)(n + na), kern = call + 1;
        int32_t it = in->iter[a];
        A[na] = (wi_addnode){LSIM_N_RUNTIME, 0, in->proc[a], "cudaLaunchKernel", lcall, it, corr, 0, {0}, {0}};
        /* timed for a group of one (DP 1: the DP step widens it), or as
         * the trace's own buckets ran: their measured duration over the
         * modelled cost, times the modelled cost of this one */
        lsim_ns dur = ref ? lsim_ns_from_double(ref->k * (double)lsim_cost_collective(topo, LSIM_COLL_ALLREDUCE,
                                                                                      B[b].bytes, NULL, ref->group_size,
                                                                                      LSIM_ALGO_AUTO))
                          : lsim_cost_collective(topo, LSIM_COLL_ALLREDUCE, B[b].bytes, one, 1, LSIM_ALGO_AUTO);
        A[na + 1] = (wi_addnode){LSIM_N_KERNEL, LSIM_NF_COLL, in->nprocs, "ncclDevKernel_AllReduce [ddp gradient bucket]",
                                 dur, it, corr, 1, {0}, {0}};
        lsim_coll_info *ci = &A[na + 1].coll;
        ci->kind = LSIM_COLL_ALLREDUCE;
        ci->from_metadata = 1;
        ci->group_size = ref ? ref->group_size : 1;
        ci->dtype_bytes = -1;
        ci->in_nelems = ci->out_nelems = -1;
        ci->bytes = B[b].bytes;
        ci->pg_ranks = NONE;
        ci->seq = (ref ? ref->seq_base : 0) + (int64_t)b;
        ci->root = -1;
        if (ref) memcpy(A[na + 1].pg, ref->pg, sizeof ref->pg);
        else snprintf(A[na + 1].pg, sizeof A[na + 1].pg, "dp:%d:%d", t_i, p_i);
        corr++;
        na += 2;
        /* the launch follows the last gradient on its thread; what came
         * next there keeps its own edge from it and now also waits for
         * the launch */
        Ed[ne++] = (wi_addedge){a, call, LSIM_E_CPU_THREAD, 0};
        for (uint64_t k = in->out_off[a]; k < in->out_off[a + 1]; k++) {
            uint32_t w = in->out_dst[k];
            if (in->proc[w] == in->proc[a] && !in->procs[in->proc[w]].is_gpu) {
                Ed[ne++] = (wi_addedge){call, w, LSIM_E_CPU_THREAD, 0};
                break;
            }
        }
        Ed[ne++] = (wi_addedge){call, kern, LSIM_E_LAUNCH, ldelay};
        if (prev != NONE) Ed[ne++] = (wi_addedge){prev, kern, LSIM_E_STREAM, 0};
        if (wait[b] != NONE) Ed[ne++] = (wi_addedge){wait[b], kern, LSIM_E_EVENT, 0};
        prev = kern;
        /* a pass's last bucket: the first GPU work launched on the compute
         * stream once the pass's last gradient was ready waits for it */
        if (wait[b] != NONE && (b + 1 == nb || B[b + 1].pass != B[b].pass)) {
            uint32_t stream = in->proc[wait[b]], best = NONE;
            for (size_t v = 0; v < n; v++) {
                if (in->kind[v] != LSIM_N_RUNTIME || ts[v] < te[a]) continue;
                for (uint64_t k = in->out_off[v]; k < in->out_off[v + 1]; k++) {
                    uint32_t w = in->out_dst[k];
                    if (in->proc[w] != stream) continue;
                    if (best == NONE || ts[v] < ts[best] || (ts[v] == ts[best] && v < best)) best = (uint32_t)v;
                }
            }
            if (best != NONE)
                for (uint64_t k = in->out_off[best]; k < in->out_off[best + 1]; k++)
                    if (in->proc[in->out_dst[k]] == stream) {
                        Ed[ne++] = (wi_addedge){kern, in->out_dst[k], LSIM_E_EVENT, 0};
                        break;
                    }
        }
        rec->coll_retimed[LSIM_WI_DP]++;
    }
    if ((rc = wi_append(in, &pstream, 1, A, na, Ed, ne, out, rec, err))) goto cleanup;
    /* the buckets are backward-pass work, as a trace's are (--identify
     * lists them; a later what-if cuts them again) */
    for (size_t x = 0; x < na; x++) (*out)->phase[n + x] = LSIM_PHASE_BACKWARD;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
cleanup:
    lsim_engine_free(E);
    free(B);
    free(lastl);
    free(wait);
    free(bof);
    free(byt);
    free(samp);
    free(A);
    free(Ed);
    return rc;
}

/* A traced gradient bucket: a data-parallel (or world) all-reduce of the
 * backward pass. */
static int traced_bucket(const lsim_graph *g, size_t v)
{
    if (g->coll[v] < 0 || g->phase[v] != LSIM_PHASE_BACKWARD || !g->procs[g->proc[v]].is_gpu) return 0;
    lsim_wi_gclass c = lsim_wi_coll_class(g, (size_t)g->coll[v]);
    return (c == LSIM_WI_DP || c == LSIM_WI_WORLD) && g->colls[g->coll[v]].kind == LSIM_COLL_ALLREDUCE;
}

/* From DP 1: DDP's buckets inserted in a group of one. From a traced DP >
 * 1 step whose layers or shape changed (the plan runs this step then): the
 * buckets it ran no longer match its gradients, so they and their launch
 * calls are removed and DDP's rule cuts new ones from the new gradients, in
 * the traced buckets' group, each timed by the cost model scaled by what
 * the trace measured (the median of traced duration over modelled cost:
 * the ratio principle, as the network step keeps a measured collective). */
int lsim_wi_trace_ddp(const lsim_graph *in, const lsim_wi_layout *L, const lsim_topology *topo, int32_t me,
                      lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    size_t n = in->n, nt = 0;
    for (size_t v = 0; v < n; v++) nt += traced_bucket(in, v);
    if (!nt) return insert_buckets(in, L, topo, me, NULL, out, rec, err);
    int rc = 0;
    bucket_ref ref;
    memset(&ref, 0, sizeof ref);
    uint8_t *removed = lsim_calloc(n ? n : 1, 1);
    int32_t *seg = lsim_malloc((n ? n : 1) * sizeof *seg);
    double *k = lsim_malloc(nt * sizeof *k);
    uint8_t *synced = NULL;
    lsim_graph *cut = NULL;
    if (!removed || !seg || !k) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
        goto cleanup;
    }
    size_t nk = 0;
    uint32_t pgn = UINT32_MAX;
    for (size_t v = 0; v < n; v++) {
        seg[v] = -1;
        if (!traced_bucket(in, v)) continue;
        const lsim_coll_info *ci = &in->colls[in->coll[v]];
        if (pgn == UINT32_MAX) {
            pgn = ci->pg_name;
            ref.group_size = ci->group_size > 0 ? ci->group_size : L->dp;
            const char *nm = pgn != UINT32_MAX ? lsim_strtab_get(in->strings, pgn) : "";
            size_t ln = strlen(nm) < sizeof ref.pg ? strlen(nm) : sizeof ref.pg - 1;
            memcpy(ref.pg, nm, ln);
            ref.pg[ln] = 0;
        }
        lsim_ns c = ci->bytes > 0 ? lsim_cost_collective(topo, LSIM_COLL_ALLREDUCE, ci->bytes, NULL, ref.group_size,
                                                         LSIM_ALGO_AUTO)
                                  : 0;
        if (c > 0 && in->dur[v] > 0) k[nk++] = (double)in->dur[v] / (double)c;
        removed[v] = 1;
        for (uint64_t e = in->in_off[v]; e < in->in_off[v + 1]; e++)
            if ((in->in_class[e] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) removed[in->in_src[e]] = 1;
    }
    if (!nk) {
        rc = lsim_err_set(err, LSIM_EARG,
                          "%s: rank %d: its %zu gradient all-reduces carry no message size, so the buckets a new "
                          "layer count or shape makes cannot be timed from them",
                          in->source, me, nt);
        goto cleanup;
    }
    /* the median ratio (insertion sort: a step has tens of buckets) */
    for (size_t i = 1; i < nk; i++)
        for (size_t j = i; j > 0 && k[j - 1] > k[j]; j--) {
            double x = k[j];
            k[j] = k[j - 1], k[j - 1] = x;
        }
    ref.k = nk % 2 ? k[nk / 2] : (k[nk / 2 - 1] + k[nk / 2]) / 2;
    /* which backward passes all-reduced: the pass of the last gradient
     * before each traced bucket's launch */
    {
        lsim_engine *E = NULL;
        wi_ddp_bucket *Bin = NULL;
        size_t nbin = 0;
        uint32_t np = 0;
        if ((rc = lsim_engine_new(in, &E, err)) || (rc = lsim_engine_run(E, err))) {
            lsim_engine_free(E);
            goto cleanup;
        }
        const lsim_ns *ts = lsim_engine_start(E);
        rc = wi_ddp_buckets(in, ts, LSIM_WI_DDP_FIRST_CAP, LSIM_WI_DDP_CAP, &Bin, &nbin, &np);
        if (!rc && np && !(synced = lsim_calloc(np, 1))) rc = LSIM_ENOMEM;
        for (size_t v = 0; !rc && v < n; v++) {
            if (!removed[v] || !in->procs[in->proc[v]].is_gpu) continue;
            lsim_ns tl = ts[v];
            for (uint64_t e = in->in_off[v]; e < in->in_off[v + 1]; e++)
                if ((in->in_class[e] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) tl = ts[in->in_src[e]];
            int32_t pass = -1;
            for (size_t b = 0; b < nbin; b++)
                if (ts[Bin[b].last] <= tl) pass = Bin[b].pass;
            if (pass >= 0) synced[pass] = 1;
        }
        free(Bin);
        lsim_engine_free(E);
        if (rc) {
            if (rc == LSIM_ENOMEM) rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
            goto cleanup;
        }
        ref.synced = synced;
        ref.npass = np;
    }
    ref.seq_base = 0;
    for (size_t c = 0; c < in->ncoll; c++)
        if (in->colls[c].pg_name == pgn && in->colls[c].seq >= ref.seq_base) ref.seq_base = in->colls[c].seq + 1;
    {
        wi_plan P = {removed, seg, NULL, 0, NULL, 0, NULL, NULL, NULL, NULL, NULL};
        if ((rc = wi_rebuild(in, &P, &cut, rec, err))) goto cleanup;
    }
    rc = insert_buckets(cut, L, topo, me, &ref, out, rec, err);
cleanup:
    lsim_graph_free(cut);
    free(removed);
    free(seg);
    free(k);
    free(synced);
    return rc;
}
