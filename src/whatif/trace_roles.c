/* What-if: the layer structure and kernel roles of a Kineto trace, recovered
 * from its repeating structure (wi_internal.h, docs/whatif.md).
 *
 * A traced kernel does not say which GEMM of which layer it is. Megatron's
 * tensor-parallel (TP) all-reduces do: a GPT layer's forward has two, after
 * attention's output projection and after the MLP. So each GPU's graph is
 * scheduled on its own (lsim_engine, which orders the compute stream and the
 * NCCL stream the way the graph's edges do), the compute stream's kernels
 * are cut into segments at the TP all-reduces, each segment gets a signature
 * (its kernel classes -- GEMM, attention, norm, element-wise -- with the
 * leading element-wise kernels, which belong to the layer before, dropped;
 * and the size of the all-reduce that ends it), and the smallest period of
 * the signatures that covers the longest run of segments is the layer:
 * runs = micro-batches, units per run = layers. Within a layer the roles
 * follow by position and class, named as lumosim synth names them
 * (src/synth/gen.c): attention segment  [dropout_add2 of the layer before]
 * ln1 qkv_gemm attn... proj_gemm | attn_allreduce, MLP segment dropout_add
 * ln2 fc1_gemm gelu... fc2_gemm | mlp_allreduce. After a run: the last
 * layer's dropout_add2, then lnf and logits_gemm. The all-reduce before a
 * run that carries the layers' activations is emb_allreduce.
 *
 * Only the forward pass is recovered: kernels whose names say backward,
 * gradient or optimizer are counted (forward_only = 0) and left unassigned. */
#include "wi_internal.h"
#include "lumosim/alloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/text.h"
#include "lumosim/engine.h"



static const char *const ROLE_NAME[WI_TR_NROLES] = {
    "",          "ln1",         "qkv_gemm", "attn",          "proj_gemm",     "attn_allreduce",
    "dropout_add", "ln2",       "fc1_gemm", "gelu",          "fc2_gemm",      "mlp_allreduce",
    "dropout_add2", "lnf",      "logits_gemm", "emb_allreduce"};

const char *wi_trole_name(int r) { return r > 0 && r < WI_TR_NROLES ? ROLE_NAME[r] : ""; }

const char *lsim_wi_trace_role_name(int r) { return wi_trole_name(r); }

static const char *const WHY_NAME[LSIM_WI_NWHY] = {"outside_layers", "backward_or_optimizer", "position_in_layer",
                                                   "pattern"};

const char *lsim_wi_unassigned_why(int w) { return w >= 0 && w < LSIM_WI_NWHY ? WHY_NAME[w] : "?"; }

/* ------------------------------------------------------------ kernel classes */

enum { K_ELEM = 0, K_GEMM, K_ATTN, K_NORM };

/* needle (lower case) in s, ignoring case */
static int has(const char *s, const char *needle)
{
    for (; *s; s++) {
        size_t i = 0;
        while (needle[i] && s[i] && tolower((unsigned char)s[i]) == needle[i]) i++;
        if (!needle[i]) return 1;
    }
    return 0;
}

static int kclass(const char *s)
{
    if (has(s, "softmax") || has(s, "flash") || has(s, "fmha") || has(s, "attn") || has(s, "attention"))
        return K_ATTN;
    if (has(s, "layernorm") || has(s, "layer_norm") || has(s, "rmsnorm") || has(s, "rms_norm")) return K_NORM;
    if (has(s, "gemm") || has(s, "cutlass") || has(s, "xmma") || has(s, "matmul") || has(s, "cublas") ||
        has(s, "_dgrad") || has(s, "_wgrad"))
        return K_GEMM;
    return K_ELEM;
}

int wi_kernel_class(const char *name) { return kclass(name); }

/* names that say backward pass, gradient or optimizer */
static int bwd_name(const char *s)
{
    return has(s, "backward") || has(s, "computegrad") || has(s, "gradinput") || has(s, "grad_input") ||
           has(s, "_dgrad") || has(s, "_wgrad") || has(s, "multi_tensor") || has(s, "adam") || has(s, "l2norm");
}

int wi_forward_only(const lsim_graph *g)
{
    for (size_t v = 0; v < g->n; v++) {
        const char *s = lsim_strtab_get(g->strings, g->name[v]);
        if (g->kind[v] == LSIM_N_KERNEL && bwd_name(s)) return 0;
        if (s[0] == 'L' && isdigit((unsigned char)s[1]) && (strstr(s, ".bwd.") || strstr(s, ".opt."))) return 0;
        if (!strncmp(s, "grad.", 5) || !strncmp(s, "emb.opt.", 8) || strstr(s, ".mb0.bwd.")) return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ recovery */

typedef struct item {
    lsim_ns t;
    uint32_t v;
} item;

static int cmp_item(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

void wi_troles_free(wi_troles *R)
{
    free(R->role);
    free(R->layer);
    R->role = NULL;
    R->layer = NULL;
}

/* one segment of the compute stream: kernels [a, b) of the sequence, ended by
 * all-reduce ar (UINT32_MAX: none) */
typedef struct seg {
    size_t a, b, lead; /* lead: leading element-wise kernels */
    uint32_t ar;
    uint64_t sig;
    int gemms, attn, type; /* type: 1 attention, 2 MLP, 0 other */
} seg;

static void why(wi_troles *R, const char *fmt, int a, int b, int c)
{
    snprintf(R->why, sizeof R->why, fmt, a, b, c);
}

/* Does the run starting at segment a repeat with period p for u units? */
static int repeats(const seg *S, size_t a, int p, int u)
{
    for (size_t j = 0; j + (size_t)p < (size_t)u * (size_t)p; j++)
        if (S[a + j].sig != S[a + j + (size_t)p].sig) return 0;
    return 1;
}

/* wi_trace_roles's state across its phases. */
typedef struct tr_state {
    const lsim_graph *g;
    wi_troles *R;
    lsim_engine *E;
    item *K, *A;                 /* compute-stream kernels; TP all-reduces; by scheduled start */
    seg *S;                      /* the segments between all-reduces */
    uint32_t *kn, *cnt;          /* each kernel's class; kernels per processor */
    int64_t *layer_kernels;
    size_t nk, na, ns, nar;
    uint32_t cs;                 /* the compute stream's processor */
    int bp, runs, units, P;      /* period (all-reduces), runs, layers per run, segments per layer */
    size_t run_a[4096];
    int run_u[4096];
} tr_state;

static int tr_nomem(const tr_state *T, lsim_err *err)
{
    return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory identifying kernel roles", T->g->source);
}

/* The compute stream (the GPU processor with most non-collective kernels)
 * and, in the order of a schedule of this graph alone, its kernels and the
 * tensor-parallel all-reduces. 1: none (R->why says so), else 0 or rc. */
static int tr_items(tr_state *T, lsim_err *err)
{
    const lsim_graph *g = T->g;
    wi_troles *R = T->R;
    uint32_t *cnt;
    int rc = 0;
    if (!(cnt = T->cnt = lsim_calloc(g->nprocs ? g->nprocs : 1, sizeof *cnt))) return tr_nomem(T, err);
    size_t nar = 0;
    for (size_t v = 0; v < g->n; v++) {
        if (g->kind[v] != LSIM_N_KERNEL) continue;
        if (g->coll[v] < 0) cnt[g->proc[v]]++;
        else if (g->colls[g->coll[v]].kind == LSIM_COLL_ALLREDUCE) {
            lsim_wi_gclass c = lsim_wi_coll_class(g, (size_t)g->coll[v]);
            if (c == LSIM_WI_TP || c == LSIM_WI_WORLD) nar++;
        }
    }
    uint32_t cs = 0;
    for (uint32_t p = 1; p < g->nprocs; p++)
        if (cnt[p] > cnt[cs]) cs = p;
    T->cs = cs, T->nar = nar;
    if (!g->nprocs || !cnt[cs] || nar < 2) {
        why(R, "no compute stream with tensor-parallel all-reduces (%d all-reduces)", (int)nar, 0, 0);
        return 1;
    }
    R->has_tp = 1;
    R->stream = g->procs[cs].tid;
    /* order: a schedule of this graph alone */
    if ((rc = lsim_engine_new(g, &T->E, err)) || (rc = lsim_engine_run(T->E, err))) return rc;
    const lsim_ns *st = lsim_engine_start(T->E);
    size_t nk = 0, na = 0;
    item *K, *A;
    if (!(K = T->K = lsim_malloc(cnt[cs] * sizeof *K)) || !(A = T->A = lsim_malloc(nar * sizeof *A))) return tr_nomem(T, err);
    for (size_t v = 0; v < g->n; v++) {
        if (g->kind[v] != LSIM_N_KERNEL) continue;
        if (g->coll[v] < 0) {
            if (g->proc[v] == cs) K[nk++] = (item){st[v], (uint32_t)v};
            continue;
        }
        if (g->colls[g->coll[v]].kind != LSIM_COLL_ALLREDUCE) continue;
        lsim_wi_gclass c = lsim_wi_coll_class(g, (size_t)g->coll[v]);
        if (c == LSIM_WI_TP || c == LSIM_WI_WORLD) A[na++] = (item){st[v], (uint32_t)v};
    }
    qsort(K, nk, sizeof *K, cmp_item);
    qsort(A, na, sizeof *A, cmp_item);
    R->kernels = nk;
    T->nk = nk, T->na = na;
    return 0;
}

/* The segments between all-reduces: their kernels' classes and a
 * signature of each (the classes in order and the all-reduce's size). */
static int tr_segments(tr_state *T, lsim_err *err)
{
    const lsim_graph *g = T->g;
    const item *K = T->K, *A = T->A;
    size_t nk = T->nk, na = T->na;
    seg *S;
    uint32_t *kn;
    size_t ns = na + 1;
    T->ns = ns;
    if (!(S = T->S = lsim_calloc(ns, sizeof *S)) || !(kn = T->kn = lsim_malloc(nk * sizeof *kn))) return tr_nomem(T, err);
    for (size_t i = 0; i < nk; i++) kn[i] = (uint32_t)kclass(lsim_strtab_get(g->strings, g->name[K[i].v]));
    size_t i = 0;
    for (size_t s = 0; s < ns; s++) {
        S[s].a = i;
        while (i < nk && (s == na || K[i].t < A[s].t)) i++;
        S[s].b = i;
        S[s].ar = s < na ? A[s].v : UINT32_MAX;
        size_t j = S[s].a;
        while (j < S[s].b && kn[j] == K_ELEM) j++;
        S[s].lead = j - S[s].a;
        uint64_t h = 0x51ed;
        for (; j < S[s].b; j++) {
            h = mix(h, kn[j] + 1);
            S[s].gemms += kn[j] == K_GEMM;
            S[s].attn += kn[j] == K_ATTN;
        }
        h = mix(h, 99);
        if (s < na) h = mix(h, (uint64_t)g->colls[g->coll[S[s].ar]].bytes);
        else h = mix(h, 0xdead);
        S[s].sig = h;
        S[s].type = S[s].attn > 0 || S[s].gemms >= 3 ? 1 : S[s].gemms == 2 ? 2 : 0;
    }
    return 0;
}

/* The period (the smallest that covers the longest run of repeating
 * segments), the runs with that period, each starting at an attention
 * segment, and --trace-layers' override. 1: not found (R->why), else 0 or
 * rc. */
static int tr_runs(tr_state *T, int force_layers, lsim_err *err)
{
    const lsim_graph *g = T->g;
    wi_troles *R = T->R;
    const seg *S = T->S;
    size_t ns = T->ns;
    size_t *run_a = T->run_a;
    int *run_u = T->run_u;
    int bp = 0;
    size_t bcover = 0;
    for (int p = 1; p <= 8 && (size_t)p < ns; p++) {
        size_t run = 0, best = 0;
        for (size_t s = 0; s + (size_t)p < ns; s++) {
            run = S[s].sig == S[s + (size_t)p].sig && S[s].gemms > 0 ? run + 1 : 0;
            if (run > best) best = run;
        }
        size_t cover = best ? (best + (size_t)p) / (size_t)p * (size_t)p : 0;
        if (best >= (size_t)p && cover > bcover) bcover = cover, bp = p;
    }
    if (!bp) {
        why(R, "the %d segments between tensor-parallel all-reduces do not repeat", (int)ns, 0, 0);
        return 1;
    }
    /* runs with period bp, each starting at an attention segment */
    int runs = 0, units = -1, consistent = 1;
    for (size_t s = 0; s + (size_t)bp < ns;) {
        if (!(S[s].sig == S[s + (size_t)bp].sig && S[s].gemms > 0)) {
            s++;
            continue;
        }
        size_t e = s;
        while (e + (size_t)bp < ns && S[e].sig == S[e + (size_t)bp].sig) e++;
        /* segments s .. e + bp - 1 repeat; align on an attention segment */
        size_t a = s;
        while (a < s + (size_t)bp && S[a].type != 1) a++;
        if (a == s + (size_t)bp) a = s;
        int u = (int)((e + (size_t)bp - a) / (size_t)bp);
        if (u >= 2 && runs < 4096) {
            run_a[runs] = a;
            run_u[runs] = u;
            if (units < 0) units = u;
            else if (u != units) consistent = 0;
            runs++;
        }
        s = e + (size_t)bp;
    }
    if (!runs) {
        why(R, "no run of at least two layers with period %d", bp, 0, 0);
        return 1;
    }
    if (!consistent) {
        int lo = units, hi = units;
        for (int r = 0; r < runs; r++) {
            if (run_u[r] < lo) lo = run_u[r];
            if (run_u[r] > hi) hi = run_u[r];
        }
        why(R, "the structure does not repeat consistently: runs of %d to %d layers (period %d all-reduces)", lo, hi,
            bp);
        R->runs = runs;
        if (force_layers <= 0) return 1;
    }
    int P = bp;
    if (force_layers > 0) {
        for (int r = 0; r < runs; r++) {
            int nseg = run_u[r] * bp;
            if (nseg % force_layers || !repeats(S, run_a[r], nseg / force_layers, force_layers))
                return lsim_err_set(err, LSIM_EARG,
                                    "%s: --trace-layers %d: the structure does not repeat consistently: run %d of the "
                                    "compute stream has %d segments between tensor-parallel all-reduces (%d layers of %d "
                                    "found), which do not form %d equal layers",
                                    g->source, force_layers, r, nseg, run_u[r], bp, force_layers);
            P = nseg / force_layers;
            run_u[r] = force_layers;
        }
        units = force_layers;
        R->why[0] = 0;
    }
    R->found = 1;
    R->layers = units;
    R->runs = runs;
    R->period = P;
    T->bp = bp, T->runs = runs, T->units = units, T->P = P;
    return 0;
}

/* Roles by position and class, in each run's segments. */
static void tr_roles(tr_state *T)
{
    const lsim_graph *g = T->g;
    wi_troles *R = T->R;
    const item *K = T->K;
    const seg *S = T->S;
    const uint32_t *kn = T->kn;
    size_t ns = T->ns;
    int runs = T->runs, units = T->units, P = T->P;
    const size_t *run_a = T->run_a;
#define SET(k, r, l)                                                                                                   \
    do {                                                                                                               \
        R->role[K[k].v] = (uint8_t)(r);                                                                                \
        R->layer[K[k].v] = (l);                                                                                        \
    } while (0)
    for (int r = 0; r < runs; r++) {
        size_t a0 = run_a[r], a1 = a0 + (size_t)units * (size_t)P;
        if (r == 0) R->first_seg_start = S[a0].a;
        /* the embedding all-reduce before the run */
        if (a0 > 0 && S[a0 - 1].ar != UINT32_MAX && S[a0].ar != UINT32_MAX &&
            g->colls[g->coll[S[a0 - 1].ar]].bytes == g->colls[g->coll[S[a0].ar]].bytes && S[a0].type == 1) {
            R->role[S[a0 - 1].ar] = WI_TR_EMB_AR;
            R->layer[S[a0 - 1].ar] = -1;
        }
        for (size_t s = a0; s < a1; s++) {
            int l = (int)((s - a0) / (size_t)P);
            const seg *x = &S[s];
            size_t k = x->a, end = x->b;
            /* leading element-wise: the previous sub-layer's add */
            if (x->lead > 0) {
                if (x->type == 1 && s > a0) SET(k, WI_TR_ADD2, (int)((s - 1 - a0) / (size_t)P));
                else if (x->type == 2) SET(k, WI_TR_ADD1, l);
                k++;
            }
            k = x->a + x->lead;
            size_t g0 = end, g1 = end;
            for (size_t q = k; q < end; q++)
                if (kn[q] == K_GEMM) {
                    if (g0 == end) g0 = q;
                    g1 = q;
                }
            if (!x->type || k >= end || kn[k] != K_NORM || g0 == end || g0 == g1) continue; /* pattern */
            int one = x->type == 1;
            SET(k, one ? WI_TR_LN1 : WI_TR_LN2, l);
            SET(g0, one ? WI_TR_QKV : WI_TR_FC1, l);
            SET(g1, one ? WI_TR_PROJ : WI_TR_FC2, l);
            for (size_t q = k + 1; q < g0; q++) R->role[K[q].v] = 0; /* between norm and first GEMM: unknown */
            for (size_t q = g0 + 1; q < g1; q++) {
                if (!one && kn[q] == K_GEMM) break;
                SET(q, one ? WI_TR_ATTN : WI_TR_GELU, l);
            }
            if (x->ar != UINT32_MAX) {
                R->role[x->ar] = (uint8_t)(one ? WI_TR_ATTN_AR : WI_TR_MLP_AR);
                R->layer[x->ar] = l;
            }
        }
        /* after the run: the last layer's add, then lnf and the logits GEMM */
        if (a1 < ns) {
            const seg *x = &S[a1];
            size_t k = x->a;
            if (x->lead > 0) SET(k, WI_TR_ADD2, units - 1);
            k = x->a + x->lead;
            if (k + 1 < x->b && kn[k] == K_NORM && kn[k + 1] == K_GEMM) {
                SET(k, WI_TR_LNF, -1);
                SET(k + 1, WI_TR_LOGITS, -1);
            }
        }
    }
#undef SET
}

/* What was found: per-layer counts, roles, why the others have none; a
 * unit without a placed attention or MLP GEMM is not a transformer layer. */
static int tr_tally(tr_state *T, lsim_err *err)
{
    const lsim_graph *g = T->g;
    wi_troles *R = T->R;
    const item *K = T->K;
    const seg *S = T->S;
    const uint32_t *kn = T->kn;
    size_t nk = T->nk, ns = T->ns, na = T->na;
    int runs = T->runs, units = T->units, P = T->P;
    uint32_t cs = T->cs;
    const size_t *run_a = T->run_a;
    int64_t *layer_kernels;
    if (!(layer_kernels = T->layer_kernels = lsim_calloc((size_t)units, sizeof *layer_kernels))) return tr_nomem(T, err);
    for (size_t q = 0; q < nk; q++) {
        uint32_t v = K[q].v;
        int ro = R->role[v];
        if (ro) {
            R->assigned++;
            if (R->layer[v] >= 0) {
                layer_kernels[R->layer[v]]++;
                R->role_kernels[ro]++;
            } else {
                R->role_kernels[ro]++;
            }
            continue;
        }
        R->unassigned++;
        const char *nm = lsim_strtab_get(g->strings, g->name[v]);
        int w;
        if (bwd_name(nm)) w = LSIM_WI_WHY_BACKWARD;
        else {
            /* inside a run's segments? */
            w = LSIM_WI_WHY_OUTSIDE;
            for (int r = 0; r < runs; r++) {
                size_t lo = S[run_a[r]].a + S[run_a[r]].lead, hi = S[run_a[r] + (size_t)units * (size_t)P - 1].b;
                if (q >= lo && q < hi) {
                    size_t s = run_a[r];
                    while (s + 1 < ns && S[s].b <= q) s++;
                    w = S[s].type && S[s].gemms >= 2 && S[s].lead < S[s].b - S[s].a &&
                                kn[S[s].a + S[s].lead] == K_NORM
                            ? LSIM_WI_WHY_POSITION
                            : LSIM_WI_WHY_PATTERN;
                    break;
                }
            }
        }
        R->why_count[w]++;
    }
    for (size_t s = 0; s < ns; s++)
        if (S[s].ar != UINT32_MAX && R->role[S[s].ar]) R->ars_assigned++, R->role_kernels[R->role[S[s].ar]]++;
    R->ars = na;
    R->kernels_per_layer = -1;
    for (int l = 0; l < units; l++) {
        int64_t c = layer_kernels[l] / runs;
        if (l == 0) R->kernels_per_layer = c, R->kernels_per_layer_max = c;
        if (c < R->kernels_per_layer) R->kernels_per_layer = c;
        if (c > R->kernels_per_layer_max) R->kernels_per_layer_max = c;
    }
    for (size_t v = 0; v < g->n; v++)
        if ((g->kind[v] == LSIM_N_MEMSET || g->kind[v] == LSIM_N_MEMCPY) && g->proc[v] == cs) R->memops++;
    /* a transformer layer has its GEMMs placed (QKV and projection after a
     * norm, or FC1 and FC2): a unit that repeats without them -- a training
     * step's gradient buckets, say -- is not one, and cutting or re-timing
     * it as a layer would be wrong */
    if (!R->role_kernels[WI_TR_QKV] && !R->role_kernels[WI_TR_FC1]) {
        R->found = 0;
        why(R, "the unit that repeats (%d of them, %d all-reduces each) has no attention or MLP GEMM after a norm: "
               "not a transformer layer",
            units, P, 0);
        memset(R->role, 0, g->n ? g->n : 1);
        for (size_t v = 0; v < g->n; v++) R->layer[v] = -1;
    }
    return 0;
}

int wi_trace_roles(const lsim_graph *g, int force_layers, wi_troles *R, lsim_err *err)
{
    memset(R, 0, sizeof *R);
    R->forward_only = wi_forward_only(g);
    tr_state *T = lsim_calloc(1, sizeof *T);
    int rc = 0;
    if (!T || !(R->role = lsim_calloc(g->n ? g->n : 1, 1)) || !(R->layer = lsim_malloc((g->n ? g->n : 1) * sizeof *R->layer))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory identifying kernel roles", g->source);
        goto cleanup;
    }
    for (size_t v = 0; v < g->n; v++) R->layer[v] = -1;
    T->g = g, T->R = R;
    if ((rc = tr_items(T, err)) || (rc = tr_segments(T, err)) || (rc = tr_runs(T, force_layers, err))) {
        if (rc == 1) rc = 0; /* not found: R says why */
        goto cleanup;
    }
    tr_roles(T);
    rc = tr_tally(T, err);
cleanup:
    if (rc) wi_troles_free(R);
    if (T) {
        lsim_engine_free(T->E);
        free(T->K);
        free(T->A);
        free(T->S);
        free(T->kn);
        free(T->layer_kernels);
        free(T->cnt);
        free(T);
    }
    return rc;
}

/* ------------------------------------------------------------ identification */

int wi_ident_kernels(const lsim_graph *g, int trace_layers, lsim_wi_ident *out, lsim_err *err)
{
    wi_troles R;
    int rc = wi_trace_roles(g, trace_layers > 0 ? trace_layers : 0, &R, err);
    if (rc) return rc;
    out->forward_only = R.forward_only;
    if (R.has_tp) {
        out->layer_source = LSIM_WI_LAYERS_KERNELS;
        lsim_wi_kernel_layers *k = &out->klayers;
        k->found = R.found;
        k->layers = R.layers;
        k->runs = R.runs;
        k->period = R.period;
        k->kernels = R.kernels;
        k->assigned = R.assigned;
        k->unassigned = R.unassigned;
        k->ars = R.ars;
        k->ars_assigned = R.ars_assigned;
        k->memops = R.memops;
        k->kernels_per_layer = R.kernels_per_layer;
        k->kernels_per_layer_max = R.kernels_per_layer_max;
        k->forced = trace_layers > 0;
        memcpy(k->why_count, R.why_count, sizeof k->why_count);
        memcpy(k->role_kernels, R.role_kernels, sizeof k->role_kernels);
        snprintf(k->why, sizeof k->why, "%s", R.why);
        if (R.found) {
            out->layer_lo = 0;
            out->layer_hi = R.layers - 1;
            out->nchunks = 1;
            out->layers_per_chunk = R.layers;
            out->layer_nodes = R.assigned;
        }
    }
    wi_troles_free(&R);
    return 0;
}

void lsim_wi_put_kernel_layers(FILE *f, const lsim_wi_ident *ids, size_t n)
{
    if (!n) return;
    const lsim_wi_kernel_layers *k = &ids[0].klayers;
    int same = 1;
    uint64_t un = 0, kern = 0, as = 0, whyc[LSIM_WI_NWHY] = {0};
    for (size_t i = 0; i < n; i++) {
        const lsim_wi_kernel_layers *x = &ids[i].klayers;
        if (x->found != k->found || x->layers != k->layers || x->runs != k->runs || x->period != k->period)
            same = 0;
        un += x->unassigned, kern += x->kernels, as += x->assigned;
        for (int w = 0; w < LSIM_WI_NWHY; w++) whyc[w] += x->why_count[w];
    }
    fprintf(f, ",\"found\":%s", k->found && same ? "true" : "false");
    if (!k->found || !same) {
        fputs(",\"why\":", f);
        if (!same) lsim_text_json(f, "the ranks' kernel structures differ");
        else lsim_text_json(f, k->why);
    }
    if (k->found) {
        fprintf(f, ",\"layers\":%d,\"micro_batches\":%d,\"allreduces_per_layer\":%d,\"forced\":%s,\"forward_only\":%s",
                k->layers, k->runs, k->period, k->forced ? "true" : "false", ids[0].forward_only ? "true" : "false");
        fprintf(f, ",\"kernels_per_layer\":%lld", (long long)k->kernels_per_layer);
        if (k->kernels_per_layer_max != k->kernels_per_layer)
            fprintf(f, ",\"kernels_per_layer_max\":%lld", (long long)k->kernels_per_layer_max);
        fputs(",\"roles_per_layer\":{", f);
        int first = 1;
        for (int r = 1; r < WI_TR_NROLES; r++) {
            if (r == WI_TR_LNF || r == WI_TR_LOGITS || r == WI_TR_EMB_AR) continue;
            double per = k->layers && k->runs ? (double)k->role_kernels[r] / ((double)k->layers * k->runs) : 0;
            fprintf(f, "%s\"%s\":%g", first ? "" : ",", wi_trole_name(r), per);
            first = 0;
        }
        fprintf(f, "},\"head\":{\"lnf\":%llu,\"logits_gemm\":%llu,\"emb_allreduce\":%llu}",
                (unsigned long long)k->role_kernels[WI_TR_LNF], (unsigned long long)k->role_kernels[WI_TR_LOGITS],
                (unsigned long long)k->role_kernels[WI_TR_EMB_AR]);
        fprintf(f, ",\"rank0\":{\"compute_kernels\":%llu,\"assigned\":%llu,\"unassigned\":%llu,\"tp_allreduces\":%llu,"
                   "\"tp_allreduces_assigned\":%llu,\"memsets_copies_kept\":%llu}",
                (unsigned long long)k->kernels, (unsigned long long)k->assigned, (unsigned long long)k->unassigned,
                (unsigned long long)k->ars, (unsigned long long)k->ars_assigned, (unsigned long long)k->memops);
    }
    fprintf(f, ",\"all_ranks\":{\"compute_kernels\":%llu,\"assigned\":%llu,\"unassigned\":%llu,\"unassigned_why\":{",
            (unsigned long long)kern, (unsigned long long)as, (unsigned long long)un);
    for (int w = 0; w < LSIM_WI_NWHY; w++)
        fprintf(f, "%s\"%s\":%llu", w ? "," : "", lsim_wi_unassigned_why(w), (unsigned long long)whyc[w]);
    fputs("}}", f);
}
