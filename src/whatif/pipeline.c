/* What-if: pipeline depth, schedule and micro-batches (whatif.h,
 * docs/whatif.md, "Pipeline").
 *
 * The work of one (tp, dp) column of the source job (one GPU per pipeline
 * stage) is cut into segments by the synthesized node tags: per layer (and
 * embedding, LM head), micro-batch and pass (forward, backward, optimizer),
 * the kernels on the compute and tensor-parallel streams in launch order,
 * each with its own duration. A GPU of the new pipeline is then emitted in
 * the new schedule's order (lsim_synth_schedule), wired exactly as lumosim
 * synth wires a GPU (src/synth/gen.c): one CPU thread launching every
 * kernel, the compute stream, the TP stream, the DP stream and four
 * pipeline streams, Megatron's batched point-to-point groups between
 * blocks, cross-stream events, the gradient buckets of the last
 * micro-batch, the optimizer and the final synchronisation.
 *
 * Nothing that moves is re-timed: kernels keep the duration they had in the
 * source (micro-batch k of the new job takes the source's micro-batch
 * k mod m); TP all-reduces are re-timed only when their group's cost
 * changes (ratio). What is new is timed with the cost ratio the network
 * transform uses: send/recv kernels from a source send (dur x cost_p2p(new
 * pair) / cost_p2p(source pair)), or from the cost model when the source has
 * no pipeline; gradient buckets (refilled with the new stage's layers, 40 M
 * parameters each, as synthesis does) from a source bucket (dur x
 * cost(new bytes, new DP group) / cost(source bytes, source group)). */
#include <ctype.h>
#include "lumosim/alloc.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/synth.h"
#include "wi_internal.h"

#define NONE UINT32_MAX

enum { P_FWD = 0, P_BWD = 1, P_OPT = 2 };
#define W_EMB (-1)
#define W_HEAD (-2)

typedef struct prec {
    int32_t where, mb; /* layer, W_EMB or W_HEAD; micro-batch (0 for the optimizer) */
    uint8_t pass, tp;  /* P_*; a TP all-reduce (else a compute kernel) */
    uint8_t ckind;     /* collective kind of a TP all-reduce */
    int32_t stage;     /* source pipeline stage */
    uint32_t what;     /* the name after the tag, in names */
    lsim_ns dur;
    int64_t bytes;
} prec;

struct lsim_wi_pipe {
    lsim_wi_layout L;
    int tpi, dpi;
    lsim_strtab *names;
    prec *r;
    size_t nr, cap;
    uint64_t *off; /* per key: [off[k], off[k+1]) into sorted */
    prec *sorted;
    int layers, m, indexed;
    int has_emb, has_head, has_opt_eh;
    int have_launch;
    lsim_ns lcpu, ldelay, llat;
    int saw_p2p, saw_sync;
    lsim_ns host_step, host_opt; /* lumosim synth's host nodes (step.begin.dataloader, step.opt.host), 0: none */
    int have_p2p, have_dp;
    int64_t p2p_bytes, dp_bytes;
    lsim_ns p2p_dur, dp_dur;
    int32_t p2p_a, p2p_b;
    int dp_stage;
    char source[200];
    uint64_t gpus_in, gpus_out, edges_in, edges_out;
    uint64_t nodes_in[LSIM_N_NKINDS], nodes_out[LSIM_N_NKINDS];
};

/* "L12.mb3.fwd.qkv_gemm", "emb.mb0.bwd.lookup", "L3.opt.adam", "head.opt.adam" */
static int parse_tag(const char *s, int32_t *where, int32_t *mb, int *pass, const char **what)
{
    const char *p;
    char *e;
    if (s[0] == 'L' && isdigit((unsigned char)s[1])) {
        long l = strtol(s + 1, &e, 10);
        if (l > 1000000) return 0;
        *where = (int32_t)l;
        p = e;
    } else if (!strncmp(s, "emb.", 4)) {
        *where = W_EMB;
        p = s + 3;
    } else if (!strncmp(s, "head.", 5)) {
        *where = W_HEAD;
        p = s + 4;
    } else {
        return 0;
    }
    if (*p++ != '.') return 0;
    if (!strncmp(p, "opt.", 4)) {
        *mb = 0;
        *pass = P_OPT;
        *what = p + 4;
        return 1;
    }
    if (p[0] != 'm' || p[1] != 'b' || !isdigit((unsigned char)p[2])) return 0;
    long k = strtol(p + 2, &e, 10);
    if (k > 1000000) return 0;
    if (!strncmp(e, ".fwd.", 5)) *pass = P_FWD;
    else if (!strncmp(e, ".bwd.", 5)) *pass = P_BWD;
    else return 0;
    *mb = (int32_t)k;
    *what = e + 5;
    return 1;
}

int lsim_wi_pipe_new(const lsim_wi_layout *L, int tp_i, int dp_i, lsim_wi_pipe **out, lsim_err *err)
{
    *out = NULL;
    lsim_wi_pipe *s = lsim_calloc(1, sizeof *s);
    if (!s || !(s->names = lsim_strtab_new())) {
        free(s);
        return lsim_err_set(err, LSIM_ENOMEM, "out of memory (pipeline transform)");
    }
    s->L = *L;
    s->tpi = tp_i;
    s->dpi = dp_i;
    s->dp_stage = -1;
    *out = s;
    return 0;
}

void lsim_wi_pipe_free(lsim_wi_pipe *s)
{
    if (!s) return;
    lsim_strtab_free(s->names);
    free(s->r);
    free(s->sorted);
    free(s->off);
    free(s);
}

static int add_rec(lsim_wi_pipe *s, const prec *r)
{
    if (s->nr == s->cap) {
        size_t c = s->cap ? 2 * s->cap : 1024;
        prec *q = lsim_realloc(s->r, c * sizeof *q);
        if (!q) return LSIM_ENOMEM;
        s->r = q;
        s->cap = c;
    }
    s->r[s->nr++] = *r;
    return 0;
}

int lsim_wi_pipe_add(lsim_wi_pipe *s, const lsim_graph *g, int pp_i, lsim_err *err)
{
    if (s->indexed) return lsim_err_set(err, LSIM_EARG, "pipeline transform: source added after use");
    if (!s->gpus_in) snprintf(s->source, sizeof s->source, "%s", g->source ? g->source : "");
    s->gpus_in++;
    s->edges_in += g->nedges;
    for (size_t v = 0; v < g->n; v++) {
        s->nodes_in[g->kind[v]]++;
        const char *nm = lsim_strtab_get(g->strings, g->name[v]);
        size_t ln = strlen(nm);
        if (g->kind[v] == LSIM_N_RUNTIME && (g->flags[v] & LSIM_NF_BLOCKING) && ln >= 5 && !strcmp(nm + ln - 5, ".sync"))
            s->saw_sync = 1;
        /* the host's work that launches nothing, re-emitted where synthesis puts it */
        if (g->kind[v] == LSIM_N_RUNTIME && !strcmp(nm, "step.begin.dataloader")) s->host_step = g->dur[v];
        if (g->kind[v] == LSIM_N_RUNTIME && !strcmp(nm, "step.opt.host")) s->host_opt = g->dur[v];
        if (g->kind[v] != LSIM_N_KERNEL) continue;
        prec r;
        memset(&r, 0, sizeof r);
        r.stage = pp_i;
        r.dur = g->dur[v];
        if (g->coll[v] >= 0) {
            const lsim_coll_info *ci = &g->colls[g->coll[v]];
            const char *pg = ci->pg_name != UINT32_MAX ? lsim_strtab_get(g->strings, ci->pg_name) : "";
            if (ci->kind == LSIM_COLL_SEND || ci->kind == LSIM_COLL_RECV || ci->kind == LSIM_COLL_SENDRECV) {
                s->saw_p2p = 1;
                int a, b;
                if (!s->have_p2p && ci->kind == LSIM_COLL_SEND && ci->bytes > 0 && sscanf(pg, "p2p:%d->%d", &a, &b) == 2) {
                    s->have_p2p = 1;
                    s->p2p_bytes = ci->bytes;
                    s->p2p_dur = g->dur[v];
                    s->p2p_a = a;
                    s->p2p_b = b;
                }
                continue;
            }
            if (!strncmp(pg, "dp:", 3)) {
                if (!s->have_dp && ci->bytes > 0) {
                    s->have_dp = 1;
                    s->dp_bytes = ci->bytes;
                    s->dp_dur = g->dur[v];
                    s->dp_stage = pp_i;
                }
                continue;
            }
            if (strncmp(pg, "tp:", 3))
                return lsim_err_set(err, LSIM_EARG,
                                    "%s: collective '%s' on group '%s' is neither tensor, data nor pipeline parallel: "
                                    "the pipeline transform cannot place it",
                                    g->source, nm, pg);
            r.tp = 1;
            r.ckind = ci->kind;
            r.bytes = ci->bytes;
        }
        int pass;
        const char *what;
        if (!parse_tag(nm, &r.where, &r.mb, &pass, &what))
            return lsim_err_set(err, LSIM_EARG,
                                "%s: kernel '%s' carries no layer / micro-batch tag: the pipeline transform places "
                                "only tagged work (lumosim synth's L12.mb3.fwd.qkv_gemm)",
                                g->source, nm);
        r.pass = (uint8_t)pass;
        if (lsim_strtab_intern(s->names, what, strlen(what), &r.what)) goto nomem;
        if (r.where >= s->layers) s->layers = r.where + 1;
        if (pass != P_OPT && r.mb >= s->m) s->m = r.mb + 1;
        if (r.where == W_EMB && pass == P_FWD) s->has_emb = 1;
        if (r.where == W_HEAD && pass == P_FWD) s->has_head = 1;
        if (r.where < 0 && pass == P_OPT) s->has_opt_eh = 1;
        if (!s->have_launch)
            for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
                if ((g->in_class[k] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) {
                    s->have_launch = 1;
                    s->lcpu = g->dur[g->in_src[k]];
                    s->ldelay = g->in_delay[k];
                    s->llat = g->launch_latency_ns;
                    break;
                }
        if (add_rec(s, &r)) goto nomem;
    }
    return 0;
nomem:
    return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory (pipeline transform)", g->source);
}

static size_t key_of(const lsim_wi_pipe *s, int32_t where, int32_t mb, int pass)
{
    size_t w = where >= 0 ? (size_t)where : where == W_EMB ? (size_t)s->layers : (size_t)s->layers + 1;
    return (w * (size_t)s->m + (size_t)mb) * 3 + (size_t)pass;
}

static int index_recs(lsim_wi_pipe *s, lsim_err *err)
{
    if (s->indexed) return 0;
    if (s->m <= 0 || s->layers <= 0)
        return lsim_err_set(err, LSIM_EARG, "%s: no layer-tagged work found (pipeline transform)", s->source);
    size_t nk = ((size_t)s->layers + 2) * (size_t)s->m * 3;
    free(s->off);
    free(s->sorted);
    s->off = lsim_calloc(nk + 1, sizeof *s->off);
    s->sorted = lsim_malloc((s->nr ? s->nr : 1) * sizeof *s->sorted);
    if (!s->off || !s->sorted) return lsim_err_set(err, LSIM_ENOMEM, "out of memory (pipeline transform)");
    for (size_t i = 0; i < s->nr; i++) s->off[key_of(s, s->r[i].where, s->r[i].mb, s->r[i].pass) + 1]++;
    for (size_t k = 0; k < nk; k++) s->off[k + 1] += s->off[k];
    uint64_t *pos = lsim_malloc((nk + 1) * sizeof *pos);
    if (!pos) return lsim_err_set(err, LSIM_ENOMEM, "out of memory (pipeline transform)");
    memcpy(pos, s->off, (nk + 1) * sizeof *pos);
    for (size_t i = 0; i < s->nr; i++) s->sorted[pos[key_of(s, s->r[i].where, s->r[i].mb, s->r[i].pass)]++] = s->r[i];
    free(pos);
    s->indexed = 1;
    return 0;
}

static size_t seg_of(const lsim_wi_pipe *s, int32_t where, int32_t mb, int pass, const prec **out)
{
    size_t k = key_of(s, where, pass == P_OPT ? 0 : mb % s->m, pass);
    *out = s->sorted + s->off[k];
    return (size_t)(s->off[k + 1] - s->off[k]);
}

void lsim_wi_pipe_source(const lsim_wi_pipe *s, int *layers, int *micro_batches)
{
    if (layers) *layers = s->layers;
    if (micro_batches) *micro_batches = s->m;
}

int wi_pipe_shape_check(const lsim_wi_pipe_cfg *to, int N, const char *whose, lsim_err *err)
{
    int pp = to->pp, V = to->vstages, m = to->micro_batches;
    if (pp <= 0 || V <= 0 || m <= 0)
        return lsim_err_set(err, LSIM_EARG, "--pp %d, interleaved:%d, --micro-batches %d: must be positive", pp, V, m);
    if (pp > N) return lsim_err_set(err, LSIM_EARG, "--pp %d: more pipeline stages than the %s %d layers", pp, whose, N);
    if ((long)pp * V > N)
        return lsim_err_set(err, LSIM_EARG, "--pp %d with interleaved:%d: PP x V = %d model chunks, more than the %d layers",
                            pp, V, pp * V, N);
    if (N % (pp * V))
        return lsim_err_set(err, LSIM_EARG, "the %s %d layers are not divisible by PP x V = %d x %d", whose, N, pp, V);
    if (V > 1 && pp < 2)
        return lsim_err_set(err, LSIM_EARG, "--schedule interleaved:%d needs --pp >= 2 (got %d); use --schedule 1f1b", V, pp);
    if (V > 1 && m % pp)
        return lsim_err_set(err, LSIM_EARG,
                            "--schedule interleaved:%d: %d micro-batches per pipeline are not divisible by PP = %d "
                            "(Megatron's rule)",
                            V, m, pp);
    return 0;
}

int lsim_wi_pipe_check(lsim_wi_pipe *s, const lsim_wi_pipe_cfg *to, lsim_err *err)
{
    int rc = index_recs(s, err);
    if (rc) return rc;
    int V = to->vstages, m = to->micro_batches, N = s->layers;
    if ((rc = wi_pipe_shape_check(to, N, "model's", err))) return rc;
    if ((double)m * V * N > 1e8) return lsim_err_set(err, LSIM_EARG, "--micro-batches %d: too much work to emit", m);
    if (!s->have_launch) return lsim_err_set(err, LSIM_EARG, "%s: no kernel launch found (pipeline transform)", s->source);
    for (int32_t l = 0; l < N; l++)
        for (int32_t k = 0; k < s->m; k++)
            for (int p = P_FWD; p <= P_BWD; p++) {
                const prec *r;
                if (!seg_of(s, l, k, p, &r))
                    return lsim_err_set(err, LSIM_EARG,
                                        "%s: layer %d, micro-batch %d has no %s kernels in the source (column tp %d, "
                                        "dp %d): the pipeline transform needs every layer of every micro-batch",
                                        s->source, l, k, p ? "backward" : "forward", s->tpi, s->dpi);
            }
    return 0;
}

void lsim_wi_pipe_estimate(const lsim_wi_pipe *s, const lsim_wi_pipe_cfg *to, double *nodes, double *edges,
                           double *strings)
{
    /* kernels of the layers (forward and backward, all source micro-batches),
     * of the embedding and head, and of the optimizer: a new GPU gets 1/PP
     * of the layers, all of the embedding or head (stage 0, the last; both
     * counted: PP may be 1), each per new micro-batch, plus its layers'
     * optimizer; p2p, sync and buckets: a few per micro-batch */
    double lay = 0, eh = 0, opt = 0;
    for (size_t i = 0; i < s->nr; i++) {
        if (s->r[i].pass == P_OPT) opt++;
        else if (s->r[i].where >= 0) lay++;
        else eh++;
    }
    double mf = s->m > 0 ? (double)to->micro_batches / (double)s->m : 1.0, pp = to->pp > 0 ? to->pp : 1;
    double k = (lay / pp + eh) * mf + opt / pp + 8.0 * to->micro_batches * (to->vstages > 0 ? to->vstages : 1) + 64;
    *nodes = 2.0 * k;
    *edges = 1.8 * *nodes;
    *strings = k;
}

/* ------------------------------------------------------------ emitting */

typedef struct pairseq {
    int32_t src, dst;
    int bwd;
    int64_t n;
} pairseq;

typedef struct em {
    lsim_wi_pipe *S;
    const lsim_topology *topo;
    lsim_wi_layout Lp;
    lsim_emit e; /* builder, CPU thread, streams, tag, rc (lsim_synth's emitter) */
    int ppi, m, V, lpc, p2p_sync, dp_to, tp_to;
    int32_t rank;
    int64_t tp_seq, dp_seq;
    pairseq pairs[16];
    int npairs;
    char tp_pg[48], dp_pg[48];
    int32_t *tpr_old, *tpr_new, *dpr_old, *dpr_new;
    double layer_params, emb_params, bucket, bucket_max;
    int bucket_lo, bucket_hi, bucket_n;
    int64_t act, tokens;
    lsim_wi_counts *rec;
} em;

static void set_tag(em *E, int32_t where, int mb, int pass)
{
    char w[24];
    if (where >= 0) snprintf(w, sizeof w, "L%d", where);
    else snprintf(w, sizeof w, "%s", where == W_EMB ? "emb" : "head");
    if (pass == P_OPT) snprintf(E->e.tag, sizeof E->e.tag, "%s.opt.", w);
    else snprintf(E->e.tag, sizeof E->e.tag, "%s.mb%d.%s.", w, mb, pass ? "bwd" : "fwd");
}

/* a TP all-reduce in the new stage's group: re-timed only when the group's
 * cost differs from the source stage's group */
static void tp_rec(em *E, const prec *r, const char *what)
{
    const lsim_wi_layout *L = &E->S->L;
    lsim_ns d = r->dur;
    if (r->stage != E->ppi || L->pp != E->Lp.pp) {
        for (int t = 0; t < L->tp; t++) {
            E->tpr_old[t] = lsim_wi_rank(L, t, E->S->dpi, r->stage);
            E->tpr_new[t] = lsim_wi_rank(&E->Lp, t, E->S->dpi, E->ppi);
        }
        lsim_ns co = lsim_cost_collective(E->topo, r->ckind, r->bytes, E->tpr_old, L->tp, LSIM_ALGO_AUTO);
        lsim_ns cn = lsim_cost_collective(E->topo, r->ckind, r->bytes, E->tpr_new, L->tp, LSIM_ALGO_AUTO);
        if (co != cn && co > 0) d = lsim_ns_from_double((double)d * ((double)cn / (double)co));
        if (d != r->dur) E->rec->retimed[LSIM_N_KERNEL]++, E->rec->coll_retimed[LSIM_WI_TP]++;
    }
    uint32_t v = lsim_emit_comm(&E->e, LSIM_ES_TP, what, d, (lsim_coll_kind)r->ckind, r->bytes, L->tp, E->tp_pg, E->tp_seq++);
    if (v != NONE) lsim_emit_pend(&E->e, v);
}

/* From TP 1 (tp_to > 1): the TP all-reduce lumosim synth places after
 * kernel `what` of segment (where, pass), if any: its name and size. */
static const char *tp_after(const em *E, int32_t where, int pass, const char *what, int64_t *bytes)
{
    static const struct { int layer, pass; const char *after, *ar; } AT[] = {
        {1, P_FWD, "proj_gemm", "attn_allreduce"}, {1, P_FWD, "fc2_gemm", "mlp_allreduce"},
        {1, P_BWD, "fc1_wgrad", "mlp_allreduce"},  {1, P_BWD, "qkv_wgrad", "attn_allreduce"},
        {W_EMB, P_FWD, "lookup", "emb_allreduce"}, {W_HEAD, P_FWD, "xent", "xent_allreduce"},
    };
    for (size_t i = 0; i < sizeof AT / sizeof AT[0]; i++) {
        int w = AT[i].layer == 1 ? where >= 0 : where == AT[i].layer;
        if (w && pass == AT[i].pass && !strcmp(what, AT[i].after)) {
            *bytes = where == W_HEAD ? E->tokens * 12 : E->act; /* the loss: 3 floats per token */
            return AT[i].ar;
        }
    }
    return NULL;
}

/* the source's kernels of one segment, in their order */
static void segment(em *E, int32_t where, int mb, int pass)
{
    const prec *r;
    size_t n = seg_of(E->S, where, mb, pass, &r);
    set_tag(E, where, mb, pass);
    int insert_tp = E->tp_to > 1 && E->S->L.tp == 1;
    for (size_t i = 0; i < n; i++) {
        const char *what = lsim_strtab_get(E->S->names, r[i].what);
        if (r[i].tp) tp_rec(E, &r[i], what);
        else lsim_emit_compute(&E->e, what, r[i].dur);
        int64_t bytes = 0;
        const char *ar = insert_tp ? tp_after(E, where, pass, what, &bytes) : NULL;
        if (ar) {
            /* a group of one costs nothing: the network step times it */
            uint32_t v = lsim_emit_comm(&E->e, LSIM_ES_TP, ar, 0, LSIM_COLL_ALLREDUCE, bytes, 1, E->tp_pg, E->tp_seq++);
            if (v != NONE) lsim_emit_pend(&E->e, v);
            E->rec->coll_retimed[LSIM_WI_TP]++;
        }
    }
}

/* ------------------------------------------------------------ DP buckets */

static void dp_flush(em *E, int mb)
{
    if (E->bucket_lo < 0) return;
    if (E->Lp.dp > 1 || E->dp_to > 1) {
        int64_t bytes = (int64_t)(E->bucket * 4.0); /* fp32 main gradients */
        const lsim_wi_layout *L = &E->S->L;
        lsim_ns cn = lsim_cost_collective(E->topo, LSIM_COLL_ALLREDUCE, bytes, E->dpr_new, E->Lp.dp, LSIM_ALGO_AUTO), d = cn;
        if (E->S->have_dp) {
            for (int q = 0; q < L->dp; q++) E->dpr_old[q] = lsim_wi_rank(L, E->S->tpi, q, E->S->dp_stage);
            lsim_ns co = lsim_cost_collective(E->topo, LSIM_COLL_ALLREDUCE, E->S->dp_bytes, E->dpr_old, L->dp, LSIM_ALGO_AUTO);
            if (co > 0) d = lsim_ns_from_double((double)E->S->dp_dur * ((double)cn / (double)co));
        }
        if (!E->S->have_dp || d != E->S->dp_dur || bytes != E->S->dp_bytes)
            E->rec->retimed[LSIM_N_KERNEL]++, E->rec->coll_retimed[LSIM_WI_DP]++;
        char what[64];
        snprintf(what, sizeof what, "dp_allreduce.b%d.L%d-%d", E->bucket_n, E->bucket_lo, E->bucket_hi);
        snprintf(E->e.tag, sizeof E->e.tag, "grad.mb%d.bwd.", mb);
        lsim_emit_comm(&E->e, LSIM_ES_DP, what, d, LSIM_COLL_ALLREDUCE, bytes, E->Lp.dp, E->dp_pg, E->dp_seq++);
    }
    E->bucket_n++;
    E->bucket = 0;
    E->bucket_lo = E->bucket_hi = -1;
}

static void dp_add(em *E, int layer, double params, int mb)
{
    int l = layer < 0 ? (layer == W_EMB ? 0 : E->S->layers - 1) : layer;
    if (E->bucket_lo < 0 || l < E->bucket_lo) E->bucket_lo = l;
    if (E->bucket_hi < 0 || l > E->bucket_hi) E->bucket_hi = l;
    E->bucket += params;
    if (E->bucket >= E->bucket_max) dp_flush(E, mb);
}

/* ------------------------------------------------------------ steps */

static int first_layer(const em *E, int chunk) { return (chunk * E->Lp.pp + E->ppi) * E->lpc; }
static int is_first_vs(const em *E, int chunk) { return chunk == 0 && E->ppi == 0; }
static int is_last_vs(const em *E, int chunk) { return chunk == E->V - 1 && E->ppi == E->Lp.pp - 1; }

static void step_compute(em *E, const lsim_synth_step *s)
{
    int lo = first_layer(E, s->chunk), hi = lo + E->lpc - 1;
    int last_mb = s->mb == E->m - 1;
    if (!s->bwd) {
        if (E->S->has_emb && is_first_vs(E, s->chunk)) segment(E, W_EMB, s->mb, P_FWD);
        for (int l = lo; l <= hi; l++) segment(E, l, s->mb, P_FWD);
        if (E->S->has_head && is_last_vs(E, s->chunk)) segment(E, W_HEAD, s->mb, P_FWD);
    } else {
        if (E->S->has_head && is_last_vs(E, s->chunk)) {
            segment(E, W_HEAD, s->mb, P_BWD);
            if (last_mb && E->Lp.pp > 1) dp_add(E, W_HEAD, E->emb_params, s->mb);
        }
        for (int l = hi; l >= lo; l--) {
            segment(E, l, s->mb, P_BWD);
            if (last_mb) dp_add(E, l, E->layer_params, s->mb);
        }
        if (E->S->has_emb && is_first_vs(E, s->chunk)) {
            segment(E, W_EMB, s->mb, P_BWD);
            if (last_mb) dp_add(E, W_EMB, E->emb_params, s->mb);
        }
        if (last_mb) dp_flush(E, s->mb);
    }
}

static int64_t pair_seq(em *E, int32_t src, int32_t dst, int bwd)
{
    for (int i = 0; i < E->npairs; i++)
        if (E->pairs[i].src == src && E->pairs[i].dst == dst && E->pairs[i].bwd == bwd) return E->pairs[i].n++;
    if (E->npairs == 16) return -1;
    E->pairs[E->npairs++] = (pairseq){src, dst, bwd, 1};
    return 0;
}

static int32_t vs_rank(const em *E, int vs) { return lsim_wi_rank(&E->Lp, E->S->tpi, E->S->dpi, vs % E->Lp.pp); }

static uint32_t p2p_op(em *E, int role, int32_t peer, int send, int layer, int mb, int bwd, const char *what)
{
    char pg[48];
    int32_t src = send ? E->rank : peer, dst = send ? peer : E->rank;
    snprintf(pg, sizeof pg, "p2p:%d->%d#%s", src, dst, bwd ? "bwd" : "fwd");
    set_tag(E, layer, mb, bwd);
    const lsim_wi_pipe *S = E->S;
    lsim_ns cn = lsim_cost_p2p(E->topo, E->act, src, dst), d = cn;
    if (S->have_p2p) {
        lsim_ns co = lsim_cost_p2p(E->topo, S->p2p_bytes, S->p2p_a, S->p2p_b);
        if (co > 0) d = lsim_ns_from_double((double)S->p2p_dur * ((double)cn / (double)co));
    }
    if (!S->have_p2p || d != S->p2p_dur) E->rec->retimed[LSIM_N_KERNEL]++, E->rec->coll_retimed[LSIM_WI_PP]++;
    uint32_t v = lsim_emit_comm(&E->e, role, what, d, send ? LSIM_COLL_SEND : LSIM_COLL_RECV, E->act, 2, pg, pair_seq(E, src, dst, bwd));
    if (v != NONE) lsim_emit_pend(&E->e, v);
    return v;
}

static int step_sends(em *E, const lsim_synth_step *s, uint32_t *ops, int n)
{
    int vs = s->chunk * E->Lp.pp + E->ppi, nvs = E->Lp.pp * E->V, lo = first_layer(E, s->chunk);
    if (!s->bwd && vs + 1 < nvs) ops[n++] = p2p_op(E, LSIM_ES_SENDF, vs_rank(E, vs + 1), 1, lo + E->lpc - 1, s->mb, 0, "send_next");
    if (s->bwd && vs > 0) ops[n++] = p2p_op(E, LSIM_ES_SENDB, vs_rank(E, vs - 1), 1, lo, s->mb, 1, "send_prev");
    return n;
}

static int step_recvs(em *E, const lsim_synth_step *s, uint32_t *ops, int n)
{
    int vs = s->chunk * E->Lp.pp + E->ppi, nvs = E->Lp.pp * E->V, lo = first_layer(E, s->chunk);
    if (!s->bwd && vs > 0) ops[n++] = p2p_op(E, LSIM_ES_RECVF, vs_rank(E, vs - 1), 0, lo, s->mb, 0, "recv_prev");
    if (s->bwd && vs + 1 < nvs) ops[n++] = p2p_op(E, LSIM_ES_RECVB, vs_rank(E, vs + 1), 0, lo + E->lpc - 1, s->mb, 1, "recv_next");
    return n;
}

static void p2p_group_sync(em *E, const uint32_t *ops, int n)
{
    if (!E->p2p_sync || n == 0) return;
    uint32_t v = lsim_emit_cpu(&E->e, "sync", LSIM_NF_BLOCKING);
    if (v == NONE) return;
    for (int i = 0; i < n; i++)
        if (ops[i] != NONE) lsim_gb_edge(E->e.b, ops[i], v, LSIM_E_SYNC | LSIM_EDGE_END, 0);
}

int lsim_wi_pipeline(lsim_wi_pipe *S, const lsim_wi_pipe_cfg *to, const lsim_wi_model *M, const lsim_topology *topo,
                     int pp_i, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    int rc = lsim_wi_pipe_check(S, to, err);
    if (rc) return rc;
    if (pp_i < 0 || pp_i >= to->pp) return lsim_err_set(err, LSIM_EARG, "pipeline stage %d of %d", pp_i, to->pp);
    em E;
    memset(&E, 0, sizeof E);
    lsim_synth_step *steps = NULL;
    lsim_graph *g = NULL;
    E.S = S;
    E.topo = topo;
    E.Lp = S->L;
    E.Lp.pp = to->pp;
    E.ppi = pp_i;
    E.m = to->micro_batches;
    E.V = to->vstages;
    E.lpc = S->layers / (to->pp * to->vstages);
    E.rank = lsim_wi_rank(&E.Lp, S->tpi, S->dpi, pp_i);
    E.rec = rec;
    E.dp_to = to->dp_to;
    E.tp_to = to->tp_to;
    E.e.last_cpu = E.e.last_comp = NONE;
    E.e.lcpu = E.S->lcpu;
    E.e.ldelay = E.S->ldelay;
    for (int s = 0; s < LSIM_ES_N; s++) E.e.last_on[s] = NONE;
    E.bucket_lo = E.bucket_hi = -1;
    E.bucket_max = to->bucket_params > 0 ? to->bucket_params : 40e6;
    /* batch_p2p_sync: seen in the source, or the default without a pipeline */
    E.p2p_sync = S->saw_sync || !S->saw_p2p;
    {
        double t = M->tp, h = M->hidden, A = (double)M->heads * M->head_dim, Vv = M->vocab / t;
        double T = (double)M->micro_batch * M->seq, eb = M->elem_bytes > 0 ? M->elem_bytes : 2;
        E.layer_params = (4 * h * A + 2 * h * M->ffn) / t + 13 * h;
        E.emb_params = Vv * h;
        E.act = (int64_t)(T * h * eb);
        E.tokens = (int64_t)T;
    }
    snprintf(E.tp_pg, sizeof E.tp_pg, "tp:%d:%d", pp_i, S->dpi);
    snprintf(E.dp_pg, sizeof E.dp_pg, "dp:%d:%d", S->tpi, pp_i);
    int nsteps = 2 * E.m * E.V, total = E.m * E.V, nwarm = 0;
    size_t nr = (size_t)(S->L.tp > E.Lp.dp ? S->L.tp : E.Lp.dp) + 1;
    steps = lsim_malloc((size_t)nsteps * sizeof *steps);
    E.tpr_old = lsim_malloc(nr * sizeof *E.tpr_old);
    E.tpr_new = lsim_malloc(nr * sizeof *E.tpr_new);
    E.dpr_old = lsim_malloc(nr * sizeof *E.dpr_old);
    E.dpr_new = lsim_malloc(nr * sizeof *E.dpr_new);
    if (!steps || !E.tpr_old || !E.tpr_new || !E.dpr_old || !E.dpr_new) goto nomem;
    for (int q = 0; q < E.Lp.dp; q++) E.dpr_new[q] = lsim_wi_rank(&E.Lp, S->tpi, q, pp_i);
    if ((rc = lsim_synth_schedule(to->pp, pp_i, E.m, E.V, steps, &nwarm, err))) goto cleanup;
    {
        char src[512];
        uint32_t world = (uint32_t)(E.Lp.tp * E.Lp.dp * E.Lp.pp);
        snprintf(src, sizeof src, "whatif:pp%d.v%d.m%d/gpu%d<-%.400s", to->pp, to->vstages, to->micro_batches, E.rank,
                 S->source);
        if ((rc = lsim_gb_new(src, E.rank, (int32_t)world, &E.e.b, err))) goto cleanup;
    }
    int gpn = topo->gpus_per_node > 0 ? topo->gpus_per_node : 8;
    lsim_gb_proc(E.e.b, 0, 1000 + (int64_t)E.rank, 1, &E.e.cpu);
    for (int s = 0; s < LSIM_ES_N; s++) lsim_gb_proc(E.e.b, 1, E.rank % gpn, lsim_emit_stream_id[s], &E.e.stream[s]);
    lsim_gb_iteration(E.e.b, "ProfilerStep#0");
    if (S->host_step > 0) {
        snprintf(E.e.tag, sizeof E.e.tag, "step.begin.");
        lsim_emit_host(&E.e, "dataloader", S->host_step);
    }
    /* blocks as lumosim synth cuts them: one step, or a steady-phase F+B
     * pair of the interleaved schedule; one p2p group between blocks */
    uint32_t ops[8];
    int nops = 0, blo = 0, bhi = 1;
    if (E.V > 1 && nwarm < total && 0 >= nwarm) bhi = 2;
    for (int i = blo; i < bhi; i++) nops = step_recvs(&E, &steps[i], ops, nops);
    p2p_group_sync(&E, ops, nops);
    while (blo < nsteps) {
        for (int i = blo; i < bhi; i++) step_compute(&E, &steps[i]);
        int nlo = bhi, nhi = bhi + 1;
        if (E.V > 1 && nlo >= nwarm && nlo < nwarm + 2 * (total - nwarm) && ((nlo - nwarm) % 2) == 0) nhi = nlo + 2;
        if (nhi > nsteps) nhi = nsteps;
        nops = 0;
        for (int i = blo; i < bhi; i++) nops = step_sends(&E, &steps[i], ops, nops);
        for (int i = nlo; i < nhi; i++) nops = step_recvs(&E, &steps[i], ops, nops);
        p2p_group_sync(&E, ops, nops);
        blo = nlo;
        bhi = nhi;
    }
    /* optimizer: after every gradient all-reduce; each layer's own step */
    if (E.e.last_on[LSIM_ES_DP] != NONE) lsim_emit_pend(&E.e, E.e.last_on[LSIM_ES_DP]);
    if (S->host_opt > 0) {
        snprintf(E.e.tag, sizeof E.e.tag, "step.opt.");
        lsim_emit_host(&E.e, "host", S->host_opt);
    }
    for (int ch = 0; ch < E.V; ch++) {
        int lo = first_layer(&E, ch);
        for (int l = lo; l < lo + E.lpc; l++) {
            const prec *r;
            size_t n = seg_of(S, l, 0, P_OPT, &r);
            set_tag(&E, l, 0, P_OPT);
            for (size_t i = 0; i < n; i++) lsim_emit_compute(&E.e, lsim_strtab_get(S->names, r[i].what), r[i].dur);
        }
        if (S->has_opt_eh && (is_first_vs(&E, ch) || is_last_vs(&E, ch))) {
            /* the embedding's step on the first stage, the (tied) output
             * layer's on the last: the same parameters, the same kernel */
            int32_t w = is_first_vs(&E, ch) ? W_EMB : W_HEAD;
            const prec *r;
            size_t n = seg_of(S, w, 0, P_OPT, &r);
            if (!n) n = seg_of(S, w == W_EMB ? W_HEAD : W_EMB, 0, P_OPT, &r);
            set_tag(&E, w, 0, P_OPT);
            for (size_t i = 0; i < n; i++) lsim_emit_compute(&E.e, lsim_strtab_get(S->names, r[i].what), r[i].dur);
        }
    }
    /* the step ends when every stream is done */
    snprintf(E.e.tag, sizeof E.e.tag, "step.end.");
    uint32_t fin = lsim_emit_cpu(&E.e, "synchronize", LSIM_NF_BLOCKING);
    for (int s = 0; s < LSIM_ES_N && fin != NONE; s++)
        if (E.e.last_on[s] != NONE) lsim_gb_edge(E.e.b, E.e.last_on[s], fin, LSIM_E_SYNC | LSIM_EDGE_END, 0);
    for (size_t i = 0; i < E.e.npend && fin != NONE; i++) lsim_gb_edge(E.e.b, E.e.pend[i], fin, LSIM_E_SYNC | LSIM_EDGE_END, 0);
    {
        lsim_gbuilder *b = E.e.b;
        E.e.b = NULL;
        if ((rc = lsim_gb_finish(b, &g, err))) goto cleanup;
    }
    if (E.e.rc) goto nomem;
    g->launch_latency_ns = S->llat;
    S->gpus_out++;
    S->edges_out += g->nedges;
    for (size_t v = 0; v < g->n; v++) S->nodes_out[g->kind[v]]++;
    *out = g;
    g = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory (pipeline transform)", S->source);
cleanup:
    lsim_gb_free(E.e.b);
    lsim_graph_free(g);
    free(steps);
    free(E.e.pend);
    free(E.tpr_old);
    free(E.tpr_new);
    free(E.dpr_old);
    free(E.dpr_new);
    return rc;
}

void lsim_wi_pipe_record(const lsim_wi_pipe *s, lsim_wi_counts *rec)
{
    for (int k = 0; k < LSIM_N_NKINDS; k++) {
        if (s->nodes_out[k] > s->nodes_in[k]) rec->added[k] += s->nodes_out[k] - s->nodes_in[k];
        else rec->removed[k] += s->nodes_in[k] - s->nodes_out[k];
    }
    if (s->edges_out > s->edges_in) rec->edges_added += s->edges_out - s->edges_in;
    else rec->edges_removed += s->edges_in - s->edges_out;
    if (s->gpus_out > s->gpus_in) rec->gpus_added += s->gpus_out - s->gpus_in;
    else rec->gpus_removed += s->gpus_in - s->gpus_out;
}
