/* What-if: identification of structure (whatif.h): group classes, rank
 * coordinates, the job's layout, and the layers of synthesized graphs. */
#include "wi_internal.h"
#include "lumosim/alloc.h"

#include "lumosim/metrics.h"
#include "lumosim/text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lsim_wi_gclass_name(int c)
{
    static const char *const N[LSIM_WI_NGCLASS] = {"other", "tp", "dp", "pp", "world"};
    return c >= 0 && c < LSIM_WI_NGCLASS ? N[c] : "?";
}

const char *lsim_wi_layer_source_name(int s)
{
    return s == LSIM_WI_LAYERS_TAGS          ? "synthesized tags"
           : s == LSIM_WI_LAYERS_ANNOTATIONS ? "annotations"
           : s == LSIM_WI_LAYERS_KERNELS     ? "kernel structure"
                                             : "unknown";
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* "L<n>." at the start of a name: n, else -1. */
static int tag_layer(const char *s)
{
    if (!s || s[0] != 'L' || !isdigit((unsigned char)s[1])) return -1;
    char *e;
    long x = strtol(s + 1, &e, 10);
    return *e == '.' && x < 100000000 ? (int)x : -1;
}


/* The CPU threads that run autograd's backward ops: 1 per proc in bwd. */
static void backward_threads(const lsim_graph *g, uint8_t *bwd)
{
    static const char pfx[] = "autograd::engine::evaluate_function";
    for (size_t v = 0; v < g->n; v++) {
        if (g->kind[v] != LSIM_N_CPU || g->proc[v] >= g->nprocs) continue;
        if (!strncmp(lsim_strtab_get(g->strings, g->name[v]), pfx, sizeof pfx - 1)) bwd[g->proc[v]] = 1;
    }
}

/* The CPU thread that launched GPU node v (its launch edge's source), or
 * UINT32_MAX when none is in the trace. */
static uint32_t launcher(const lsim_graph *g, size_t v)
{
    for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
        if ((g->in_class[k] & ~LSIM_EDGE_END) == LSIM_E_LAUNCH) return g->proc[g->in_src[k]];
    return UINT32_MAX;
}

/* ------------------------------------------------------- training step */

typedef struct tr_item {
    lsim_ns key; /* launch order */
    uint32_t v;
} tr_item;

static int cmp_tr_item(const void *a, const void *b)
{
    const tr_item *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

static int cmp_i32v(const void *a, const void *b) { return cmp_i32(a, b); }

static lsim_ns traced_ns(const lsim_graph *g, size_t v)
{
    return g->obs_start[v] != LSIM_OBS_NONE && g->obs_end[v] != LSIM_OBS_NONE ? g->obs_end[v] - g->obs_start[v]
                                                                              : g->dur[v];
}

static size_t uniq_i32(int32_t *a, size_t n)
{
    qsort(a, n, sizeof *a, cmp_i32v);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || a[u - 1] != a[i]) a[u++] = a[i];
    return u;
}

/* The training step from the phase and fwd_seq columns: time and counts
 * per phase, then, in launch order, the backward passes and the gradient
 * buckets in them (DP / world all-reduces launched during backward), then
 * what is missing: GPU work without a phase, backward kernels without a
 * forward op, forward Sequence numbers no backward work carries. Why
 * launch order and not GPU order: a bucket's place in the backward pass is
 * where autograd's hook fired on the CPU; on the GPU it only waits. */
static int identify_training(const lsim_graph *g, lsim_wi_training *T)
{
    memset(T, 0, sizeof *T);
    T->iterations = g->niters;
    tr_item *it = NULL;
    int32_t *fs = NULL, *bs = NULL;
    size_t ni = 0, nf = 0, nb = 0;
    int rc = 0;
    if (!(it = lsim_malloc((g->n ? g->n : 1) * sizeof *it)) || !(fs = lsim_malloc((g->n ? g->n : 1) * sizeof *fs)) ||
        !(bs = lsim_malloc((g->n ? g->n : 1) * sizeof *bs))) {
        rc = LSIM_ENOMEM;
        goto cleanup;
    }
    for (size_t v = 0; v < g->n; v++) {
        uint8_t k = g->kind[v];
        if (k != LSIM_N_KERNEL && k != LSIM_N_MEMCPY && k != LSIM_N_MEMSET) continue;
        T->gpu_ops++;
        unsigned ph = g->phase[v] < LSIM_PHASE_N ? g->phase[v] : LSIM_PHASE_UNKNOWN;
        lsim_ns d = traced_ns(g, v);
        if (k == LSIM_N_KERNEL) T->kernels[ph]++, T->kernel_ns[ph] += d;
        else T->memops[ph]++, T->memop_ns[ph] += d;
        if (ph == LSIM_PHASE_UNKNOWN) {
            T->gpu_unknown++;
            continue;
        }
        T->known = 1;
        if (ph == LSIM_PHASE_BACKWARD && k == LSIM_N_KERNEL) {
            T->bwd_kernels++;
            if (g->fwd_seq[v] < 0) T->bwd_no_fwd++;
        }
        if (g->fwd_seq[v] >= 0 && ph == LSIM_PHASE_FORWARD) fs[nf++] = g->fwd_seq[v];
        if (g->fwd_seq[v] >= 0 && ph == LSIM_PHASE_BACKWARD) bs[nb++] = g->fwd_seq[v];
        uint32_t u = UINT32_MAX;
        for (uint64_t e = g->in_off[v]; e < g->in_off[v + 1]; e++)
            if ((g->in_class[e] & ~LSIM_EDGE_END) == LSIM_E_LAUNCH) {
                u = g->in_src[e];
                break;
            }
        lsim_ns key = u != UINT32_MAX && g->obs_start[u] != LSIM_OBS_NONE ? g->obs_start[u] : (lsim_ns)v;
        it[ni++] = (tr_item){key, (uint32_t)v};
    }
    nf = uniq_i32(fs, nf);
    nb = uniq_i32(bs, nb);
    T->fwd_seqs = nf;
    for (size_t i = 0, j = 0; i < nf; i++) {
        while (j < nb && bs[j] < fs[i]) j++;
        if (j >= nb || bs[j] != fs[i]) T->fwd_undiff++;
    }
    qsort(it, ni, sizeof *it, cmp_tr_item);
    int in_pass = 0;
    lsim_ns before = 0;
    uint32_t kbefore = 0;
    int32_t recent[LSIM_WI_BUCKET_SEQS];
    size_t first_listed = 0; /* buckets of the open pass start here */
    for (size_t i = 0; i <= ni; i++) {
        uint32_t v = i < ni ? it[i].v : UINT32_MAX;
        unsigned ph = i < ni ? g->phase[v] : LSIM_PHASE_UNKNOWN;
        int ends = i == ni || ph == LSIM_PHASE_FORWARD || ph == LSIM_PHASE_OPTIMIZER || ph == LSIM_PHASE_ZERO_GRAD ||
                   ph == LSIM_PHASE_DATALOADER;
        if (in_pass && ends) {
            size_t top = T->nbuckets < LSIM_WI_MAX_BUCKETS ? (size_t)T->nbuckets : LSIM_WI_MAX_BUCKETS;
            for (size_t b = first_listed; b < top; b++) T->buckets[b].pass_ns = before;
            in_pass = 0;
        }
        if (i == ni || ph != LSIM_PHASE_BACKWARD) continue;
        if (!in_pass) {
            in_pass = 1;
            T->passes++;
            before = 0;
            kbefore = 0;
            for (int r = 0; r < LSIM_WI_BUCKET_SEQS; r++) recent[r] = -1;
            first_listed = T->nbuckets < LSIM_WI_MAX_BUCKETS ? (size_t)T->nbuckets : LSIM_WI_MAX_BUCKETS;
        }
        int32_t c = g->coll[v];
        if (g->kind[v] == LSIM_N_KERNEL && c >= 0 && (size_t)c < g->ncoll) {
            lsim_wi_gclass cl = lsim_wi_coll_class(g, (size_t)c);
            if (g->colls[c].kind == LSIM_COLL_ALLREDUCE && (cl == LSIM_WI_DP || cl == LSIM_WI_WORLD)) {
                if (T->nbuckets < LSIM_WI_MAX_BUCKETS) {
                    lsim_wi_bucket *B = &T->buckets[T->nbuckets];
                    B->bytes = g->colls[c].bytes;
                    B->bwd_ns_before = before;
                    B->bwd_kernels_before = kbefore;
                    B->pass = (int32_t)T->passes - 1;
                    memcpy(B->seqs, recent, sizeof recent);
                }
                T->nbuckets++;
                if (g->colls[c].bytes > 0) T->bucket_bytes = lsim_ns_add_sat(T->bucket_bytes, g->colls[c].bytes);
            }
            continue;
        }
        if (g->kind[v] != LSIM_N_KERNEL || (g->flags[v] & LSIM_NF_COLL)) continue;
        before += traced_ns(g, v);
        kbefore++;
        int32_t q = g->fwd_seq[v];
        if (q >= 0 && q != recent[0]) {
            int r = 0; /* move q to the front, keeping the others in order */
            while (r < LSIM_WI_BUCKET_SEQS - 1 && recent[r] != q) r++;
            for (; r > 0; r--) recent[r] = recent[r - 1];
            recent[0] = q;
        }
    }
    /* the data-parallel collectives by phase and kind, and the strategy */
    for (size_t v = 0; v < g->n; v++) {
        if (g->coll[v] < 0 || (size_t)g->coll[v] >= g->ncoll || !g->procs[g->proc[v]].is_gpu) continue;
        lsim_wi_gclass c = lsim_wi_coll_class(g, (size_t)g->coll[v]);
        if (c != LSIM_WI_DP && c != LSIM_WI_WORLD) continue;
        int k = g->colls[g->coll[v]].kind, col = k == LSIM_COLL_ALLREDUCE ? 0 : k == LSIM_COLL_ALLGATHER ? 1
                                                  : k == LSIM_COLL_REDUCESCATTER ? 2 : -1;
        if (col >= 0 && g->phase[v] < LSIM_PHASE_N) T->dp_colls[g->phase[v]][col]++;
    }
    {
        const uint32_t(*d)[3] = T->dp_colls;
        int ddp = d[LSIM_PHASE_BACKWARD][0] > 0;
        int fsdp = d[LSIM_PHASE_FORWARD][1] > 0 && d[LSIM_PHASE_BACKWARD][2] > 0;
        uint32_t rs = 0, ag = 0;
        for (int p = 0; p < LSIM_PHASE_N; p++) rs += d[p][2], ag += d[p][1];
        int sharded = !fsdp && rs > 0 && ag > 0 && !d[LSIM_PHASE_FORWARD][1];
        T->dp_strategy = ddp + fsdp + sharded > 1 ? LSIM_WI_DPS_MIXED
                         : ddp                   ? LSIM_WI_DPS_DDP
                         : fsdp                  ? LSIM_WI_DPS_FSDP
                         : sharded               ? LSIM_WI_DPS_SHARDED_OPT
                                                 : LSIM_WI_DPS_NONE;
    }
    /* the gradients, bucketed as DDP would, in the order the graph's own
     * schedule runs them (a what-if's copied layers are appended after the
     * nodes they copy, so node ids need not follow the thread) */
    {
        wi_ddp_bucket *B = NULL;
        size_t n = 0, ng = 0;
        lsim_engine *E = NULL;
        for (size_t v = 0; v < g->n; v++) ng += g->grad_bytes[v] > 0;
        lsim_err e2;
        if (ng && (lsim_engine_new(g, &E, &e2) || lsim_engine_run(E, &e2))) {
            lsim_engine_free(E); /* not schedulable (sim says why): node order */
            E = NULL;
        }
        rc = wi_ddp_buckets(g, E ? lsim_engine_start(E) : NULL, LSIM_WI_DDP_FIRST_CAP, LSIM_WI_DDP_CAP, &B, &n,
                            &T->grad_passes);
        lsim_engine_free(E);
        if (rc) goto cleanup;
        T->ddp_buckets = n;
        for (size_t b = 0; b < n; b++) {
            T->grad_nodes += B[b].nparams;
            T->grad_bytes = lsim_ns_add_sat(T->grad_bytes, B[b].bytes);
            if (B[b].pass == 0 && T->ddp_first < LSIM_WI_MAX_BUCKETS) T->ddp_bytes[T->ddp_first++] = B[b].bytes;
        }
        free(B);
    }
cleanup:
    free(it);
    free(fs);
    free(bs);
    return rc;
}

/* The training step's layers as --layers cuts them (layers.c), per layer
 * over all passes: forward and backward kernels and traced time, and the
 * gradient bytes of the AccumulateGrad ops in its backward. Why here: the
 * user sees what a training-step what-if will copy or cut before asking
 * for it. A cut that fails is not an error of identification: its reason
 * is kept and printed. */
static int identify_train_layers(const lsim_graph *g, int trace_layers, lsim_wi_training *T)
{
    int annotated = 0;
    for (size_t v = 0; v < g->n && !annotated; v++)
        annotated = g->kind[v] == LSIM_N_CPU && wi_annot_layer(lsim_strtab_get(g->strings, g->name[v])) >= 0;
    if (!annotated) {
        snprintf(T->layers_why, sizeof T->layers_why, "%s",
                 "no layer annotations: a training step's layers come from record_function(\"layers.i\") around "
                 "each layer's forward pass, their backward from autograd's Sequence numbers");
        return 0;
    }
    wi_tcut C;
    lsim_err e;
    int rc = wi_layers_cut(g, trace_layers, "--layers", &C, &e);
    if (rc == LSIM_ENOMEM) return rc;
    if (rc) {
        const char *m = e.msg, *c = strstr(m, ": ");
        const char *w = c && !strncmp(m, g->source, strlen(g->source)) ? c + 2 : m;
        size_t k = strlen(w) < sizeof T->layers_why ? strlen(w) : sizeof T->layers_why - 1;
        memcpy(T->layers_why, w, k);
        T->layers_why[k] = 0;
        return 0;
    }
    if (C.nseg != 2 * C.units * C.runs) { /* a forward-only trace: not a training cut */
        wi_tcut_free(&C);
        return 0;
    }
    T->layers_cut = 1;
    T->layers = C.units;
    T->layer_passes = C.runs;
    int nf = C.units * C.runs;
    for (size_t v = 0; v < g->n; v++) {
        int s = C.seg[v];
        if (s < 0) continue;
        int l = s % C.units, bwd = s >= nf;
        if (l >= LSIM_WI_MAX_TLAYERS) {
            if (bwd && g->kind[v] == LSIM_N_KERNEL) T->bwd_in_layers++;
            continue;
        }
        if (g->kind[v] == LSIM_N_KERNEL && !(g->flags[v] & LSIM_NF_COLL)) {
            if (bwd) T->layer[l].bwd_kernels++, T->layer[l].bwd_ns += traced_ns(g, v), T->bwd_in_layers++;
            else T->layer[l].fwd_kernels++, T->layer[l].fwd_ns += traced_ns(g, v);
        }
        if (bwd && g->coll[v] >= 0 && g->colls[g->coll[v]].kind == LSIM_COLL_ALLREDUCE && g->procs[g->proc[v]].is_gpu) {
            T->layer[l].buckets++; /* launched in this layer's backward: the gradients it waited for */
            if (g->colls[g->coll[v]].bytes > 0)
                T->layer[l].bucket_bytes = lsim_ns_add_sat(T->layer[l].bucket_bytes, g->colls[g->coll[v]].bytes);
        }
        if (bwd) T->layer[l].grad_bytes += g->grad_bytes[v];
    }
    for (size_t v = 0; v < g->n; v++)
        if (C.seg[v] < 0 && g->coll[v] >= 0 && g->phase[v] == LSIM_PHASE_BACKWARD &&
            g->colls[g->coll[v]].kind == LSIM_COLL_ALLREDUCE && g->procs[g->proc[v]].is_gpu)
            T->buckets_outside++;
    wi_tcut_free(&C);
    return 0;
}

void lsim_wi_put_training(FILE *f, const lsim_wi_training *T)
{
    fprintf(f, "{\"phases_known\":%s,\"iterations\":%u,\"phases\":{", T->known ? "true" : "false", T->iterations);
    for (int p = 0; p < LSIM_PHASE_N; p++)
        fprintf(f, "%s\"%s\":{\"kernels\":%llu,\"kernel_ns\":%lld,\"memops\":%llu,\"memop_ns\":%lld}", p ? "," : "",
                lsim_phase_name((lsim_phase)p), (unsigned long long)T->kernels[p], (long long)T->kernel_ns[p],
                (unsigned long long)T->memops[p], (long long)T->memop_ns[p]);
    fprintf(f, "},\"optimizer_ns\":%lld,\"backward_passes\":%u,\"ddp_buckets\":{\"count\":%llu,\"bytes\":%lld,\"listed\":[",
            (long long)(T->kernel_ns[LSIM_PHASE_OPTIMIZER] + T->memop_ns[LSIM_PHASE_OPTIMIZER]), T->passes,
            (unsigned long long)T->nbuckets, (long long)T->bucket_bytes);
    size_t nl = T->nbuckets < LSIM_WI_MAX_BUCKETS ? (size_t)T->nbuckets : LSIM_WI_MAX_BUCKETS;
    for (size_t b = 0; b < nl; b++) {
        const lsim_wi_bucket *B = &T->buckets[b];
        fprintf(f,
                "%s{\"pass\":%d,\"bytes\":%lld,\"backward_ns_before\":%lld,\"backward_kernels_before\":%u,"
                "\"position\":%.4f,\"after_seqs\":[",
                b ? "," : "", B->pass, (long long)B->bytes, (long long)B->bwd_ns_before, B->bwd_kernels_before,
                B->pass_ns > 0 ? (double)B->bwd_ns_before / (double)B->pass_ns : 0.0);
        for (int r = 0, k = 0; r < LSIM_WI_BUCKET_SEQS; r++)
            if (B->seqs[r] >= 0) fprintf(f, "%s%d", k++ ? "," : "", B->seqs[r]);
        fputs("]}", f);
    }
    fprintf(f, "]},\"gradients\":{\"nodes\":%llu,\"bytes\":%lld,\"passes\":%u,\"ddp_buckets\":%llu,\"first_pass_bytes\":[",
            (unsigned long long)T->grad_nodes, (long long)T->grad_bytes, T->grad_passes,
            (unsigned long long)T->ddp_buckets);
    for (uint32_t b = 0; b < T->ddp_first; b++) fprintf(f, "%s%lld", b ? "," : "", (long long)T->ddp_bytes[b]);
    fprintf(f,
            "]},\"unrecovered\":["
            "{\"what\":\"GPU work without a phase (no launch in the trace, or a store without phases)\",\"count\":%llu,\"of\":%llu},"
            "{\"what\":\"backward kernels without a forward op\",\"count\":%llu,\"of\":%llu},"
            "{\"what\":\"forward ops never differentiated\",\"count\":%llu,\"of\":%llu}]",
            (unsigned long long)T->gpu_unknown, (unsigned long long)T->gpu_ops, (unsigned long long)T->bwd_no_fwd,
            (unsigned long long)T->bwd_kernels, (unsigned long long)T->fwd_undiff, (unsigned long long)T->fwd_seqs);
    static const char *const DPS[] = {"none", "ddp", "sharded_optimizer", "fsdp", "mixed"};
    fprintf(f, ",\"data_parallel\":{\"strategy\":\"%s\",\"by_phase\":{", DPS[T->dp_strategy]);
    for (int p = 0, k = 0; p < LSIM_PHASE_N; p++) {
        const uint32_t *d = T->dp_colls[p];
        if (!d[0] && !d[1] && !d[2]) continue;
        fprintf(f, "%s\"%s\":{\"allreduce\":%u,\"allgather\":%u,\"reducescatter\":%u}", k++ ? "," : "",
                lsim_phase_name((lsim_phase)p), d[0], d[1], d[2]);
    }
    fputs("}}", f);
    fprintf(f, ",\"layers\":{\"found\":%s", T->layers_cut ? "true" : "false");
    if (T->layers_cut) {
        fprintf(f,
                ",\"layers\":%d,\"passes\":%d,\"backward_kernels_in_layers\":%llu,\"backward_kernels\":%llu,"
                "\"buckets_outside_layers\":%u,\"listed\":[",
                T->layers, T->layer_passes, (unsigned long long)T->bwd_in_layers, (unsigned long long)T->bwd_kernels,
                T->buckets_outside);
        for (int l = 0; l < T->layers && l < LSIM_WI_MAX_TLAYERS; l++)
            fprintf(f,
                    "%s{\"layer\":%d,\"forward_kernels\":%u,\"forward_ns\":%lld,\"backward_kernels\":%u,"
                    "\"backward_ns\":%lld,\"grad_bytes\":%lld,\"buckets\":%u,\"bucket_bytes\":%lld}",
                    l ? "," : "", l, T->layer[l].fwd_kernels, (long long)T->layer[l].fwd_ns, T->layer[l].bwd_kernels,
                    (long long)T->layer[l].bwd_ns, (long long)T->layer[l].grad_bytes, T->layer[l].buckets,
                    (long long)T->layer[l].bucket_bytes);
        fputc(']', f);
    } else {
        fputs(",\"why\":", f);
        lsim_text_json(f, T->layers_why[0] ? T->layers_why : "no layer annotations");
    }
    fputs("}}", f);
}

int lsim_wi_identify(const lsim_graph *g, size_t gpu, int trace_layers, lsim_wi_ident *out, lsim_err *err)
{
    memset(out, 0, sizeof *out);
    out->rank = g->rank >= 0 ? g->rank : (int32_t)gpu;
    out->world = g->world_size;
    out->tp_i = out->pp_i = out->dp_i = -1;
    out->layer_lo = out->layer_hi = -1;
    uint8_t *seen = NULL, *annot = NULL, *bwd = NULL;
    int rc = 0;
    if (!(bwd = lsim_calloc(g->nprocs ? g->nprocs : 1, 1))) goto nomem;
    backward_threads(g, bwd);
    if (identify_training(g, &out->training)) goto nomem;
    if (out->training.known && out->training.kernels[LSIM_PHASE_BACKWARD] > 0 &&
        identify_train_layers(g, trace_layers, &out->training))
        goto nomem;
    for (size_t v = 0; v < g->n; v++) {
        if (g->coll[v] < 0 || (size_t)g->coll[v] >= g->ncoll) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        lsim_wi_gclass c = lsim_wi_coll_class(g, (size_t)g->coll[v]);
        out->colls[c]++;
        const char *pg = ci->pg_name != UINT32_MAX ? lsim_strtab_get(g->strings, ci->pg_name) : NULL;
        int a, b;
        if (c == LSIM_WI_TP) {
            if (pg && sscanf(pg, "tp:%d:%d", &a, &b) == 2) out->pp_i = a, out->dp_i = b;
            if (ci->group_size > out->tp_size) out->tp_size = ci->group_size;
        } else if (c == LSIM_WI_DP) {
            if (pg && sscanf(pg, "dp:%d:%d", &a, &b) == 2) out->tp_i = a, out->pp_i = b;
            if (ci->group_size > out->dp_size) out->dp_size = ci->group_size;
        } else if (c == LSIM_WI_WORLD && g->world_size > 1 && ci->kind == LSIM_COLL_ALLREDUCE &&
                   g->proc[v] < g->nprocs && g->procs[g->proc[v]].is_gpu) {
            /* decided by lsim_wi_layout_of, from who launched it */
            uint32_t p = launcher(g, v);
            if (p < g->nprocs && bwd[p]) out->world_ar_bwd++;
            else out->world_ar_other++;
        }
    }
    /* layers: tags on synthesized graphs */
    int lo = -1, hi = -1;
    for (size_t v = 0; v < g->n; v++) {
        int l = tag_layer(lsim_strtab_get(g->strings, g->name[v]));
        if (l < 0) continue;
        out->layer_nodes++;
        if (lo < 0 || l < lo) lo = l;
        if (l > hi) hi = l;
    }
    if (lo >= 0) {
        out->layer_source = LSIM_WI_LAYERS_TAGS;
        out->layer_lo = lo;
        out->layer_hi = hi;
        if (!(seen = lsim_calloc((size_t)(hi - lo + 1), 1))) goto nomem;
        for (size_t v = 0; v < g->n; v++) {
            int l = tag_layer(lsim_strtab_get(g->strings, g->name[v]));
            if (l >= 0) seen[l - lo] = 1;
        }
        int runs = 0, len = 0, plen = -1, same = 1;
        for (int l = lo; l <= hi + 1; l++) {
            if (l <= hi && seen[l - lo]) {
                len++;
                continue;
            }
            if (len) {
                runs++;
                if (plen >= 0 && plen != len) same = 0;
                plen = len;
            }
            len = 0;
        }
        out->nchunks = runs;
        out->layers_per_chunk = same ? plen : 0;
    } else {
        /* Kineto: record_function annotations on CPU nodes */
        int maxl = -1;
        for (size_t v = 0; v < g->n; v++) {
            if (g->kind[v] != LSIM_N_CPU) continue;
            int l = wi_annot_layer(lsim_strtab_get(g->strings, g->name[v]));
            if (l > maxl && l < 1000000) maxl = l;
        }
        if (maxl >= 0) {
            if (!(annot = lsim_calloc((size_t)maxl + 1, 1))) goto nomem;
            for (size_t v = 0; v < g->n; v++) {
                if (g->kind[v] != LSIM_N_CPU) continue;
                int l = wi_annot_layer(lsim_strtab_get(g->strings, g->name[v]));
                if (l >= 0 && l <= maxl && !annot[l]) annot[l] = 1, out->annotations++;
            }
            /* the kernel structure too, for the kernel roles (--tp,
             * --hidden, --ffn) and to compare with the annotations */
            if ((rc = wi_ident_kernels(g, trace_layers, out, err))) goto cleanup;
            out->layer_source = LSIM_WI_LAYERS_ANNOTATIONS;
            out->forward_only = wi_forward_only(g);
            out->layer_lo = 0;
            out->layer_hi = maxl;
            out->nchunks = 1;
            out->layers_per_chunk = maxl + 1;
        } else {
            /* Kineto without annotations: the repeating kernel structure */
            if ((rc = wi_ident_kernels(g, trace_layers, out, err))) goto cleanup;
        }
    }
    if (out->layer_source == LSIM_WI_LAYERS_TAGS) out->forward_only = wi_forward_only(g);
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory identifying the graph", g->source);
cleanup:
    free(bwd);
    free(seen);
    free(annot);
    return rc;
}

int lsim_wi_layout_of(const lsim_wi_ident *ids, size_t n, int gpus_per_node, lsim_wi_layout *out, lsim_err *err)
{
    int tp = 0, dp = 0, world_only = 1, ddp = 1;
    uint64_t bwd_ar = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i].tp_size > tp) tp = ids[i].tp_size;
        if (ids[i].dp_size > dp) dp = ids[i].dp_size;
        if (ids[i].colls[LSIM_WI_TP] || ids[i].colls[LSIM_WI_DP] || ids[i].colls[LSIM_WI_PP]) world_only = 0;
        if (ids[i].world_ar_other) ddp = 0;
        bwd_ar += ids[i].world_ar_bwd;
    }
    if (!tp && !dp && world_only && n > 1) {
        /* every collective is on the whole job: gradient buckets only (all
         * of its all-reduces from the backward thread) is data parallel;
         * otherwise within a node it is tensor parallel */
        if (ddp && bwd_ar) dp = (int)n;
        else if (gpus_per_node > 0 && n <= (size_t)gpus_per_node) tp = (int)n;
        else dp = (int)n;
    }
    if (!tp) tp = 1;
    if (!dp) {
        /* no DP collective (a forward-only job): the replicas the TP groups'
         * names count */
        for (size_t i = 0; i < n; i++)
            if (ids[i].dp_i + 1 > dp && ids[i].colls[LSIM_WI_TP]) dp = ids[i].dp_i + 1;
    }
    if (!dp) dp = 1;
    if (n % ((size_t)tp * (size_t)dp))
        return lsim_err_set(err, LSIM_EARG, "the job's %zu GPUs are not a multiple of TP x DP = %d x %d", n, tp, dp);
    out->tp = tp;
    out->dp = dp;
    out->pp = (int)(n / ((size_t)tp * (size_t)dp));
    for (size_t i = 0; i < n; i++) {
        if (ids[i].rank != (int32_t)i)
            return lsim_err_set(err, LSIM_EARG, "GPU %zu of the job has rank %d: ranks must be 0..%zu in order", i,
                                ids[i].rank, n - 1);
        int t, d, p;
        lsim_wi_coords(out, (int32_t)i, &t, &d, &p);
        if ((ids[i].tp_i >= 0 && ids[i].tp_i != t) || (ids[i].dp_i >= 0 && ids[i].dp_i != d) ||
            (ids[i].pp_i >= 0 && ids[i].pp_i != p))
            return lsim_err_set(err, LSIM_EARG,
                                "rank %zu's groups name it (tp %d, dp %d, pp %d), but Megatron's numbering with TP %d, DP "
                                "%d, PP %d gives (tp %d, dp %d, pp %d)",
                                i, ids[i].tp_i, ids[i].dp_i, ids[i].pp_i, out->tp, out->dp, out->pp, t, d, p);
    }
    return 0;
}
