/* What-if: change the number of layers of a synthesized job (whatif.h,
 * docs/whatif.md). A layer subgraph is every node tagged "L<l>." (forward and
 * backward of each micro-batch, the optimizer step) plus the gradient bucket
 * that holds that layer alone; pipeline send/recv and blocking
 * synchronisations carry a layer tag but belong to the schedule and stay. */
#include "wi_internal.h"
#include "lumosim/alloc.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_p2p_kind(int k) { return k == LSIM_COLL_SEND || k == LSIM_COLL_RECV || k == LSIM_COLL_SENDRECV; }

/* "L<l>.mb<k>.fwd." / ".bwd." / "L<l>.opt.": the segment key, or -1 */
static int64_t seg_key(const char *s, int *layer)
{
    int l, mb, n = 0;
    char pass[4];
    *layer = -1;
    if (s[0] != 'L' || !isdigit((unsigned char)s[1])) return -1;
    if (sscanf(s, "L%d.mb%d.%3[a-z].%n", &l, &mb, pass, &n) == 3 && n > 0 && (!strcmp(pass, "fwd") || !strcmp(pass, "bwd"))) {
        *layer = l;
        return ((int64_t)l << 32) | ((int64_t)(mb + 1) << 2) | (pass[0] == 'b');
    }
    if (sscanf(s, "L%d.opt.%n", &l, &n) == 1 && n > 0) {
        *layer = l;
        return ((int64_t)l << 32) | 2;
    }
    return -1;
}

/* "grad.mb<k>.bwd.dp_allreduce.b<n>.L<a>-<b>": 1 with mb, a, b */
static int bucket(const char *s, int *mb, int *a, int *b)
{
    int n;
    return sscanf(s, "grad.mb%d.bwd.dp_allreduce.b%d.L%d-%d", mb, &n, a, b) == 4;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* How many copies layer pos of a chunk of lpc layers gets in a chunk of
 * nlpc: fewer keeps the first half and the last half (the layers next to the
 * embedding and the head stay), more spreads the extra copies evenly from
 * the front. */
static int layer_copies(int pos, int lpc, int nlpc)
{
    int k1 = (nlpc + 1) / 2, k2 = nlpc / 2, extra = nlpc - lpc;
    if (nlpc <= lpc) return pos < k1 || pos >= lpc - k2 ? 1 : 0;
    return 1 + extra / lpc + (pos < extra % lpc ? 1 : 0);
}

typedef struct lctx {
    const lsim_graph *g;
    const int *count;   /* copies per old layer, index l - lo */
    const int *newid;   /* new id of the first copy, index l - lo */
    int lo, hi;
} lctx;

static int rename_node(void *ctx, lsim_graph *o, uint32_t v, uint32_t c, uint32_t *id)
{
    lctx *C = ctx;
    const char *s = lsim_strtab_get(C->g->strings, C->g->name[v]);
    *id = UINT32_MAX;
    if (s[0] != 'L' || !isdigit((unsigned char)s[1])) return 0;
    char *e;
    long l = strtol(s + 1, &e, 10);
    if (*e != '.' || l < C->lo || l > C->hi || C->count[l - C->lo] == 0) return 0;
    int nl = C->newid[l - C->lo] + (int)c;
    if (nl == l) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "L%d%s", nl, e);
    return wi_intern(o, buf, id) ? LSIM_ENOMEM : 0;
}



/* Layer annotations of a cut trace renamed to the layer they now are:
 * copy c of layer l becomes layer (copies of the layers before l) + c, so
 * that the new trace's annotations count 0..N-1 again and a later what-if
 * (--layers back up, --pp) finds N layers. The number is the one
 * lsim_graph_layer_annotation reads (after "layer", or a module's instance
 * number). */
typedef struct tname_ctx {
    const lsim_graph *g;
    const int32_t *seg;
    const int *first;   /* per layer: the new index of its first copy */
    int units, nf;      /* layers per pass; forward segments (annotations are there) */
} tname_ctx;

static int rename_annotation(void *ctx, lsim_graph *o, uint32_t v, uint32_t c, uint32_t *id)
{
    tname_ctx *T = ctx;
    *id = UINT32_MAX;
    if (T->g->kind[v] != LSIM_N_CPU || T->seg[v] < 0 || T->seg[v] >= T->nf) return 0;
    const char *s = lsim_strtab_get(T->g->strings, T->g->name[v]);
    int l = wi_annot_layer(s);
    if (l < 0 || l != T->seg[v] % T->units) return 0;
    int nl = T->first[l] + (int)c;
    if (nl == l) return 0;
    const char *p;
    if (!strncmp(s, "nn.Module: ", 11)) { /* a module: the instance number after the last '_' */
        p = strrchr(s, '_');
        if (!p) return 0;
        p++;
    } else {
        p = strstr(s, "layer");
        if (!p) p = strstr(s, "Layer");
        if (!p) return 0;
        p += 5;
        while (*p && !isdigit((unsigned char)*p)) p++;
    }
    const char *q = p;
    while (isdigit((unsigned char)*q)) q++;
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s%d%s", (int)(p - s), s, nl, q);
    return wi_intern(o, buf, id) ? LSIM_ENOMEM : 0;
}

/* --layers on a Kineto trace: the layers are those trace_roles.c recovers
 * from the compute stream's repeating structure (wi_trace_cut: run r, layer
 * l, a time range of that stream from the layer's first kernel to the next
 * layer's, with the tensor-parallel all-reduces it owns, their launch calls,
 * and the CPU work of the launching threads between the layer's first launch
 * and the next layer's; blocking calls stay, as for tagged graphs). Every
 * rank of a job recovers the same structure, so the copies' collectives pair
 * up again (sequence numbers are renumbered). */
/* A layer's all-gather (FSDP fetching its parameters) must end before the
 * layer computes. The trace shows that wait only where the all-gather was
 * late; one prefetched early carries no edge, and a copy of its layer put
 * where nothing prefetches it would compute without its parameters. So the
 * first compute-stream kernel of every segment holding an all-gather gets
 * an event edge from it where it has none. *aug: the graph with them (NULL
 * when none is needed); node ids are kept, so the cut stays valid. */
static int gather_edges(const lsim_graph *in, const wi_tcut *C, lsim_graph **aug, lsim_wi_counts *rec, lsim_err *err)
{
    *aug = NULL;
    const lsim_ns *ts = lsim_engine_start(C->E);
    size_t n = in->n, ne = 0;
    uint32_t *first = lsim_malloc((size_t)(C->nseg ? C->nseg : 1) * sizeof *first);
    wi_addedge *E = NULL;
    if (!first) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
    for (int s = 0; s < C->nseg; s++) first[s] = UINT32_MAX;
    size_t ng = 0;
    for (size_t v = 0; v < n; v++) {
        int s = C->seg[v];
        if (s < 0 || !in->procs[in->proc[v]].is_gpu) continue;
        if (in->coll[v] >= 0 && in->colls[in->coll[v]].kind == LSIM_COLL_ALLGATHER) ng++;
        if ((in->flags[v] & LSIM_NF_COLL) || in->procs[in->proc[v]].tid != C->stream) continue;
        if (first[s] == UINT32_MAX || ts[v] < ts[first[s]]) first[s] = (uint32_t)v;
    }
    int rc = 0;
    if (ng && !(E = lsim_malloc(ng * sizeof *E))) rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", in->source);
    for (size_t v = 0; !rc && ng && v < n; v++) {
        int s = C->seg[v];
        if (s < 0 || !in->procs[in->proc[v]].is_gpu || in->coll[v] < 0 ||
            in->colls[in->coll[v]].kind != LSIM_COLL_ALLGATHER || first[s] == UINT32_MAX)
            continue;
        int has = 0;
        for (uint64_t k = in->out_off[v]; k < in->out_off[v + 1]; k++) has |= in->out_dst[k] == first[s];
        if (!has && ts[v] <= ts[first[s]]) E[ne++] = (wi_addedge){(uint32_t)v, first[s], LSIM_E_EVENT, 0};
    }
    if (!rc && ne) rc = wi_append(in, NULL, 0, NULL, 0, E, ne, aug, rec, err);
    free(first);
    free(E);
    return rc;
}

static int layers_of_trace(const lsim_graph *in, const lsim_wi_layout *L, int layers, int trace_layers, lsim_graph **out,
                           lsim_wi_counts *rec, lsim_err *err)
{
    int rc = 0;
    lsim_graph *aug = NULL;
    wi_tcut C;
    memset(&C, 0, sizeof C);
    int *copies = NULL, *first = NULL;
    uint8_t *removed = NULL, *rev = NULL;
    if (layers <= 0 || layers % L->pp) {
        rc = lsim_err_set(err, LSIM_EARG, "--layers %d is not divisible by PP = %d", layers, L->pp);
        goto cleanup;
    }
    if ((rc = wi_layers_cut(in, trace_layers, "--layers", &C, err))) goto cleanup;
    int nlpc = layers / L->pp, nseg = C.nseg;
    size_t n = in->n;
    if ((rc = gather_edges(in, &C, &aug, rec, err))) goto cleanup;
    if (aug) in = aug;
    removed = lsim_calloc(n ? n : 1, 1);
    copies = lsim_malloc((size_t)nseg * sizeof *copies);
    if (!removed || !copies) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
        goto cleanup;
    }
    if (!(first = lsim_malloc((size_t)C.units * sizeof *first)) || !(rev = lsim_malloc((size_t)nseg))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
        goto cleanup;
    }
    for (int s = 0; s < nseg; s++) copies[s] = layer_copies(s % C.units, C.units, nlpc);
    for (int l = 0, at = 0; l < C.units; l++) first[l] = at, at += copies[l];
    for (size_t v = 0; v < n; v++)
        if (C.seg[v] >= 0 && copies[C.seg[v]] == 0) removed[v] = 1;
    {
        tname_ctx T = {in, C.seg, first, C.units, C.units * C.runs};
        for (int s = 0; s < nseg; s++) rev[s] = s >= C.units * C.runs && C.annotated;
        wi_plan P = {removed, C.seg, copies, (uint32_t)nseg, NULL, 2, C.annotated ? rename_annotation : NULL, &T, rev, NULL, NULL};
        rc = wi_rebuild(in, &P, out, rec, err);
    }
cleanup:
    wi_tcut_free(&C);
    lsim_graph_free(aug);
    free(removed);
    free(copies);
    free(first);
    free(rev);
    return rc;
}

int lsim_wi_layers(const lsim_graph *in, const lsim_wi_layout *L, int layers, int trace_layers, const lsim_topology *topo,
                   lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    lsim_wi_ident id;
    int rc = lsim_wi_identify(in, 0, trace_layers, &id, err);
    if (rc) return rc;
    if (id.layer_source == LSIM_WI_LAYERS_KERNELS || id.layer_source == LSIM_WI_LAYERS_ANNOTATIONS)
        return layers_of_trace(in, L, layers, trace_layers, out, rec, err);
    if (id.layer_source != LSIM_WI_LAYERS_TAGS)
        return lsim_err_set(err, LSIM_EARG,
                            "%s: layer structure unknown (no layer tags, annotations or repeating kernel structure): "
                            "--layers needs a graph whose nodes are tagged by layer, as lumosim synth writes them, or a "
                            "trace whose layers --identify finds",
                            in->source);
    int V = id.nchunks, lpc = id.layers_per_chunk;
    if (V <= 0 || lpc <= 0)
        return lsim_err_set(err, LSIM_EARG, "%s: the layers on this GPU (%d..%d) do not form equal model chunks",
                            in->source, id.layer_lo, id.layer_hi);
    if (layers <= 0 || layers % (L->pp * V))
        return lsim_err_set(err, LSIM_EARG, "--layers %d is not divisible by PP x V = %d x %d", layers, L->pp, V);
    int nlpc = layers / (L->pp * V), lo = id.layer_lo, hi = id.layer_hi, nl = hi - lo + 1;
    lsim_graph *o = NULL;
    int *count = lsim_calloc((size_t)nl, sizeof *count), *newid = lsim_calloc((size_t)nl, sizeof *newid), *copies = NULL;
    uint8_t *removed = lsim_calloc(in->n ? in->n : 1, 1), *keep = lsim_calloc(in->n ? in->n : 1, 1);
    int32_t *seg = lsim_malloc((in->n ? in->n : 1) * sizeof *seg);
    int64_t *keys = lsim_malloc((in->n ? in->n : 1) * sizeof *keys), *nkey = lsim_malloc((in->n ? in->n : 1) * sizeof *nkey);
    int64_t *bb = lsim_malloc((in->n ? in->n : 1) * sizeof *bb);
    uint32_t *launcher = lsim_malloc((in->n ? in->n : 1) * sizeof *launcher);
    if (!count || !newid || !removed || !keep || !seg || !keys || !nkey || !bb || !launcher) goto nomem;
    /* chunks of this GPU: runs of consecutive layers */
    {
        uint8_t *seen = keep; /* reused: cleared below */
        for (size_t v = 0; v < in->n; v++) {
            int l;
            if (seg_key(lsim_strtab_get(in->strings, in->name[v]), &l) >= 0 && l >= lo && l <= hi) seen[l - lo] = 1;
        }
        for (int l = lo; l <= hi;) {
            if (!seen[l - lo]) {
                l++;
                continue;
            }
            int base = l, vs = base / lpc, pos = 0;
            int at = vs * nlpc;
            for (; l <= hi && seen[l - lo] && pos < lpc; l++, pos++) {
                int c = layer_copies(pos, lpc, nlpc);
                count[l - lo] = c;
                newid[l - lo] = at;
                at += c;
            }
        }
        memset(keep, 0, in->n ? in->n : 1);
    }
    /* launch calls of GPU nodes */
    for (size_t v = 0; v < in->n; v++) launcher[v] = UINT32_MAX;
    for (size_t v = 0; v < in->n; v++)
        for (uint64_t k = in->in_off[v]; k < in->in_off[v + 1]; k++)
            if ((in->in_class[k] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) launcher[v] = in->in_src[k];
    /* the gradient size of one layer: the most common single-layer bucket */
    int64_t lbytes = -1;
    {
        size_t nb = 0;
        for (size_t v = 0; v < in->n; v++) {
            int mb, a, b;
            if (in->coll[v] >= 0 && bucket(lsim_strtab_get(in->strings, in->name[v]), &mb, &a, &b) && a == b)
                bb[nb++] = in->colls[in->coll[v]].bytes;
        }
        qsort(bb, nb, sizeof *bb, cmp_i64);
        size_t best = 0;
        for (size_t i = 0; i < nb;) {
            size_t j = i;
            while (j < nb && bb[j] == bb[i]) j++;
            if (j - i > best && j - i >= 2) best = j - i, lbytes = bb[i];
            i = j;
        }
    }
    /* segment of every node; schedule nodes (p2p, their calls, blocking
     * synchronisations) stay out */
    for (size_t v = 0; v < in->n; v++)
        if (in->coll[v] >= 0 && is_p2p_kind(in->colls[in->coll[v]].kind)) {
            keep[v] = 1;
            if (launcher[v] != UINT32_MAX) keep[launcher[v]] = 1;
        }
    size_t nk = 0;
    for (size_t v = 0; v < in->n; v++) {
        int l;
        const char *s = lsim_strtab_get(in->strings, in->name[v]);
        nkey[v] = -1;
        if (keep[v] || (in->flags[v] & LSIM_NF_BLOCKING)) continue;
        int64_t k = seg_key(s, &l);
        if (k >= 0 && l >= lo && l <= hi) nkey[v] = k;
    }
    for (size_t v = 0; v < in->n; v++) {
        int mb, a, b;
        if (in->coll[v] < 0 || !bucket(lsim_strtab_get(in->strings, in->name[v]), &mb, &a, &b)) continue;
        int64_t k = ((int64_t)a << 32) | ((int64_t)(mb + 1) << 2) | 1;
        uint32_t prev = UINT32_MAX;
        if (launcher[v] != UINT32_MAX)
            for (uint64_t e = in->in_off[launcher[v]]; e < in->in_off[launcher[v] + 1]; e++)
                if (in->in_class[e] == LSIM_E_CPU_THREAD) prev = in->in_src[e];
        /* the layer's own bucket: its size, launched right after the layer */
        if (a == b && in->colls[in->coll[v]].bytes == lbytes && a >= lo && a <= hi && prev != UINT32_MAX &&
            nkey[prev] == k) {
            nkey[v] = k;
            if (launcher[v] != UINT32_MAX) nkey[launcher[v]] = k;
        } else if (a < b && a >= lo && b <= hi) {
            int any = 0;
            for (int l = a; l <= b; l++) any |= count[l - lo] > 0;
            if (!any) {
                removed[v] = 1;
                if (launcher[v] != UINT32_MAX) removed[launcher[v]] = 1;
            }
        }
    }
    for (size_t v = 0; v < in->n; v++)
        if (nkey[v] >= 0) keys[nk++] = nkey[v];
    qsort(keys, nk, sizeof *keys, cmp_i64);
    size_t nseg = 0;
    for (size_t i = 0; i < nk; i++)
        if (!nseg || keys[nseg - 1] != keys[i]) keys[nseg++] = keys[i];
    if (!(copies = lsim_malloc((nseg ? nseg : 1) * sizeof *copies))) goto nomem;
    for (size_t s = 0; s < nseg; s++) copies[s] = count[(int)(keys[s] >> 32) - lo];
    for (size_t v = 0; v < in->n; v++) {
        seg[v] = -1;
        if (nkey[v] < 0) continue;
        int64_t *p = bsearch(&nkey[v], keys, nseg, sizeof *keys, cmp_i64);
        seg[v] = (int32_t)(p - keys);
        if (copies[seg[v]] == 0) removed[v] = 1;
    }
    {
        lctx C = {in, count, newid, lo, hi};
        wi_plan P = {removed, seg, copies, (uint32_t)nseg, NULL, 1, rename_node, &C, NULL, NULL, NULL};
        if ((rc = wi_rebuild(in, &P, &o, rec, err))) goto cleanup;
    }
    /* buckets of several layers: resized in proportion, re-timed */
    for (size_t x = 0; x < o->n; x++) {
        int mb, a, b;
        if (o->coll[x] < 0 || !bucket(lsim_strtab_get(o->strings, o->name[x]), &mb, &a, &b) || a >= b || a < lo || b > hi)
            continue;
        int sum = 0;
        for (int l = a; l <= b; l++) sum += count[l - lo];
        if (sum == b - a + 1) continue;
        lsim_coll_info *ci = &o->colls[o->coll[x]];
        int64_t nb = lsim_ns_from_double((double)ci->bytes * sum / (b - a + 1));
        int32_t r[4096];
        const char *pg = ci->pg_name != UINT32_MAX ? lsim_strtab_get(o->strings, ci->pg_name) : "";
        int n = lsim_wi_group_ranks(pg, L, r, 4096);
        if (n > 4096) n = 0;
        lsim_ns c0 = lsim_cost_collective(topo, ci->kind, ci->bytes, n ? r : NULL, n ? n : ci->group_size, LSIM_ALGO_AUTO);
        lsim_ns c1 = lsim_cost_collective(topo, ci->kind, nb, n ? r : NULL, n ? n : ci->group_size, LSIM_ALGO_AUTO);
        ci->bytes = nb;
        if (c0 > 0 && c1 != c0) {
            o->dur[x] = lsim_ns_from_double((double)o->dur[x] * ((double)c1 / (double)c0));
            rec->retimed[o->kind[x]]++;
            rec->coll_retimed[LSIM_WI_DP]++;
        }
    }
    *out = o;
    o = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
cleanup:
    lsim_graph_free(o);
    free(count);
    free(newid);
    free(copies);
    free(removed);
    free(keep);
    free(seg);
    free(keys);
    free(nkey);
    free(bb);
    free(launcher);
    return rc;
}

/* ------------------------------------------------- training-step roles */

void wi_train_roles_free(wi_train_roles *T)
{
    if (!T) return;
    free(T->role);
    free(T->where);
    free(T->pass);
    free(T->layer_of);
    memset(T, 0, sizeof *T);
}

typedef struct seq_role {
    int32_t seq;
    uint8_t where, gemm; /* gemm: index into the GEMM role names, else 255 */
    const char *role;
} seq_role;

static int cmp_seq_role(const void *a, const void *b)
{
    const seq_role *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* wi_train_roles_find (wi_internal.h). Why positions: a Kineto kernel carries no
 * role, but a transformer layer runs its kernels in one order (norm, QKV,
 * attention, projection, residual, norm, FC1, activation, FC2, residual),
 * and the backward kernels name the forward op they differentiate, so the
 * forward order gives every role. */
int wi_train_roles_find(const lsim_graph *g, wi_train_roles *T, lsim_err *err)
{
    static const char *const GF[] = {"qkv_gemm", "proj_gemm", "fc1_gemm", "fc2_gemm", "logits_gemm"};
    static const char *const GD[] = {"qkv_dgrad", "proj_dgrad", "fc1_dgrad", "fc2_dgrad", "logits_dgrad"};
    static const char *const GW[] = {"qkv_wgrad", "proj_wgrad", "fc1_wgrad", "fc2_wgrad", "logits_wgrad"};
    memset(T, 0, sizeof *T);
    wi_tcut C;
    /* a training step: its layers from its annotations (train_cut), never
     * from a forward-only trace's count (--trace-layers) */
    int rc = wi_layers_cut(g, 0, "changing the width", &C, err);
    if (rc) return rc;
    size_t n = g->n, nq = 0, nk = 0;
    lsim_time_node *K = NULL;
    seq_role *Q = NULL;
    uint8_t *nb = NULL; /* backward kernels seen per Sequence entry */
    int nf = C.units * C.runs;
    if (C.nseg != 2 * nf) {
        wi_tcut_free(&C);
        return lsim_err_set(err, LSIM_EARG, "%s: not a training step (no backward pass was cut)", g->source);
    }
    T->layers = C.units, T->passes = C.runs;
    T->role = lsim_calloc(n ? n : 1, sizeof *T->role);
    T->where = lsim_calloc(n ? n : 1, 1);
    T->pass = lsim_calloc(n ? n : 1, 1);
    T->layer_of = lsim_malloc((n ? n : 1) * sizeof *T->layer_of);
    K = lsim_malloc((n ? n : 1) * sizeof *K);
    Q = lsim_malloc((n ? n : 1) * sizeof *Q);
    if (!T->role || !T->where || !T->pass || !T->layer_of || !K || !Q) goto nomem;
    const lsim_ns *ts = lsim_engine_start(C.E);
    for (size_t v = 0; v < n; v++) {
        T->layer_of[v] = C.seg[v] >= 0 ? C.seg[v] % C.units : -1;
        const lsim_proc *pr = &g->procs[g->proc[v]];
        if (pr->is_gpu && pr->tid == C.stream && g->kind[v] == LSIM_N_KERNEL && !(g->flags[v] & LSIM_NF_COLL))
            K[nk++] = (lsim_time_node){ts[v], (uint32_t)v};
    }
    qsort(K, nk, sizeof *K, lsim_time_node_cmp);
    /* forward: per pass, the embedding before layer 0, each layer by
     * position, the head after the last layer */
    for (int r = 0; r < C.runs; r++) {
        lsim_ns p0 = r ? C.t1[r * C.units - 1] : INT64_MIN, first = C.t0[r * C.units];
        lsim_ns last = C.t1[r * C.units + C.units - 1], next = r + 1 < C.runs ? C.t0[(r + 1) * C.units] : INT64_MAX;
        int head_norm = 0, head_gemm = 0;
        for (size_t i = 0; i < nk; i++) {
            uint32_t v = K[i].node;
            if (g->phase[v] != LSIM_PHASE_FORWARD || C.seg[v] >= 0) continue;
            const char *nm = lsim_strtab_get(g->strings, g->name[v]);
            int kc = wi_kernel_class(nm);
            if (K[i].t > p0 && K[i].t < first && kc == WI_K_ELEM) {
                T->role[v] = "lookup", T->where[v] = WI_W_EMB;
            } else if (K[i].t >= last && K[i].t < next) {
                if (kc == WI_K_NORM && !head_norm++) T->role[v] = "lnf", T->where[v] = WI_W_HEAD;
                else if (kc == WI_K_GEMM && !head_gemm++) T->role[v] = GF[4], T->where[v] = WI_W_HEAD;
            }
            if (T->role[v] && g->fwd_seq[v] >= 0)
                Q[nq++] = (seq_role){g->fwd_seq[v], T->where[v], T->role[v] == GF[4] ? 4 : 255, T->role[v]};
        }
        for (int l = 0; l < C.units; l++) {
            int s = r * C.units + l, gi = 0, ni = 0, attn = 0;
            for (size_t i = 0; i < nk; i++) {
                uint32_t v = K[i].node;
                if (C.seg[v] != s) continue;
                const char *nm = lsim_strtab_get(g->strings, g->name[v]);
                int kc = wi_kernel_class(nm), gidx = 255;
                const char *role = NULL;
                if (kc == WI_K_NORM) role = ni == 0 ? "ln1" : ni == 1 ? "ln2" : NULL, ni++;
                else if (kc == WI_K_GEMM) role = gi < 4 ? GF[gi] : NULL, gidx = (uint8_t)gi, gi++;
                else if (kc == WI_K_ATTN) role = "attn", attn++;
                else if (gi == 2 && ni == 1) role = "dropout_add";
                else if (gi == 3) role = "gelu";
                else if (gi == 4) role = "dropout_add2";
                if (!role) continue;
                T->role[v] = role, T->where[v] = WI_W_LAYER;
                if (g->fwd_seq[v] >= 0) Q[nq++] = (seq_role){g->fwd_seq[v], WI_W_LAYER, (uint8_t)gidx, role};
            }
            if (gi != 4 || ni != 2 || !attn) {
                rc = lsim_err_set(err, LSIM_EARG,
                                  "%s: layer %d of pass %d runs %d GEMMs, %d norms and %d attention kernels: not a "
                                  "transformer layer (QKV, projection, FC1 and FC2 GEMMs, two norms, attention), so "
                                  "changing the width cannot tell its kernels' roles",
                                  g->source, l, r + 1, gi, ni, attn);
                goto cleanup;
            }
        }
    }
    qsort(Q, nq, sizeof *Q, cmp_seq_role);
    if (!(nb = lsim_calloc(nq ? nq : 1, 1))) goto nomem;
    /* backward: the role of the forward op differentiated; a GEMM's first
     * backward kernel the data gradient, its second the weight gradient */
    for (size_t i = 0; i < nk; i++) {
        uint32_t v = K[i].node;
        if (g->phase[v] == LSIM_PHASE_OPTIMIZER) {
            T->role[v] = "adam_step", T->where[v] = WI_W_GRAD, T->pass[v] = 2;
            continue;
        }
        if (g->phase[v] != LSIM_PHASE_BACKWARD || g->fwd_seq[v] < 0) continue;
        seq_role key = {g->fwd_seq[v], 0, 0, NULL};
        seq_role *q = bsearch(&key, Q, nq, sizeof *Q, cmp_seq_role);
        if (!q) continue;
        while (q > Q && q[-1].seq == key.seq) q--;
        size_t qi = (size_t)(q - Q);
        const char *role = q->role;
        if (q->gemm != 255) {
            if (wi_kernel_class(lsim_strtab_get(g->strings, g->name[v])) != WI_K_GEMM || nb[qi] >= 2) continue;
            role = nb[qi]++ ? GW[q->gemm] : GD[q->gemm];
        }
        T->role[v] = role, T->where[v] = q->where, T->pass[v] = 1;
    }
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", g->source);
cleanup:
    if (rc) wi_train_roles_free(T);
    wi_tcut_free(&C);
    free(K);
    free(Q);
    free(nb);
    return rc;
}
