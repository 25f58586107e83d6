/* What-if: model width (hidden, FFN) and tensor-parallel width on
 * synthesized graphs (whatif.h, docs/whatif.md).
 *
 * Every kernel of a layer-tagged graph has a role ("L12.mb3.bwd.fc1_wgrad":
 * a backward FC1 weight-gradient GEMM of a transformer layer) and so a shape
 * as a function of the model and the TP width. A kernel is re-timed by the
 * ratio of the cost model's times for the new and the source shape
 * (dur' = dur x cost(new) / cost(source)), which keeps what the source's own
 * kernel took (a traced kernel's efficiency carries over) and, on a
 * synthesized graph, gives the model's new time exactly. Collectives whose
 * message changes size (TP all-reduces, pipeline activations, gradient
 * buckets) are resized and re-timed the same way with the collective model.
 *
 * lsim_wi_relayout then gives each GPU of the new TP x DP layout its graph:
 * groups renamed and resized, TP / DP collectives removed at width 1. */
#include "wi_internal.h"
#include "lumosim/alloc.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/synth.h"

#define MAXR 65536

static int is_p2p_kind(int k) { return k == LSIM_COLL_SEND || k == LSIM_COLL_RECV || k == LSIM_COLL_SENDRECV; }

/* ------------------------------------------------------------ roles */

enum { W_NONE = WI_W_NONE, W_LAYER = WI_W_LAYER, W_EMB = WI_W_EMB, W_HEAD = WI_W_HEAD, W_GRAD = WI_W_GRAD };

/* Split a tagged name: where (W_*), pass (0 fwd, 1 bwd, 2 opt), the role
 * after the tags. 0 when the name carries no tags. */
static int parse_role(const char *s, int *where, int *pass, const char **role)
{
    const char *p = s;
    *where = W_NONE;
    if (s[0] == 'L' && isdigit((unsigned char)s[1])) {
        p = s + 1;
        while (isdigit((unsigned char)*p)) p++;
        *where = W_LAYER;
    } else if (!strncmp(s, "emb.", 4)) {
        p = s + 3, *where = W_EMB;
    } else if (!strncmp(s, "head.", 5)) {
        p = s + 4, *where = W_HEAD;
    } else if (!strncmp(s, "grad.", 5)) {
        p = s + 4, *where = W_GRAD;
    } else {
        return 0;
    }
    if (*p != '.') return 0;
    p++;
    if (!strncmp(p, "opt.", 4)) {
        *pass = 2;
        *role = p + 4;
        return 1;
    }
    if (p[0] != 'm' || p[1] != 'b' || !isdigit((unsigned char)p[2])) return 0;
    p += 2;
    while (isdigit((unsigned char)*p)) p++;
    if (!strncmp(p, ".fwd.", 5)) *pass = 0;
    else if (!strncmp(p, ".bwd.", 5)) *pass = 1;
    else return 0;
    *role = p + 5;
    return 1;
}

static double layer_params(const lsim_wi_model *M)
{
    double h = M->hidden, A = (double)M->heads * M->head_dim;
    return (4 * h * A + 2 * h * M->ffn) / M->tp + 13 * h;
}

static double emb_params(const lsim_wi_model *M) { return (double)M->vocab / M->tp * M->hidden; }

/* The cost model's time of a compute kernel of this role in model M (the
 * shapes lumosim synth gives it, docs/synthesis.md); -1: not a known role. */
static lsim_ns role_cost(const lsim_gpu_spec *g, const lsim_wi_model *M, int where, int pass, const char *r)
{
    double t = M->tp, T = (double)M->micro_batch * M->seq, h = M->hidden, f = (double)M->ffn / t,
           Al = (double)M->heads * M->head_dim / t, V = (double)M->vocab / t, eb = M->elem_bytes;
    int e = M->elem_bytes, bwd = pass == 1;
    if (pass == 2) {
        if (strcmp(r, "adam")) return -1;
        return lsim_cost_elementwise(g, (where == W_LAYER ? layer_params(M) : emb_params(M)) * 30.0);
    }
    if (where == W_EMB) return !strcmp(r, "lookup") ? lsim_cost_elementwise(g, 2 * T * h * eb) : -1;
    if (where == W_HEAD) {
        if (!strcmp(r, "lnf")) return lsim_cost_elementwise(g, (bwd ? 3 : 2) * T * h * eb);
        if (!strcmp(r, "xent")) return lsim_cost_elementwise(g, bwd ? 2 * T * V * eb : 2 * T * V * 4);
        if (!bwd && !strcmp(r, "logits_gemm")) return lsim_cost_gemm(g, T, V, h, e);
        if (bwd && !strcmp(r, "logits_dgrad")) return lsim_cost_gemm(g, T, h, V, e);
        if (bwd && !strcmp(r, "logits_wgrad")) return lsim_cost_gemm(g, V, h, T, e);
        return -1;
    }
    if (where != W_LAYER) return -1;
    if (!strcmp(r, "ln1") || !strcmp(r, "ln2")) return lsim_cost_elementwise(g, (bwd ? 3 : 2) * T * h * eb);
    if (!strcmp(r, "dropout_add") || !strcmp(r, "dropout_add2")) return lsim_cost_elementwise(g, 3 * T * h * eb);
    if (bwd && (!strcmp(r, "residual_add") || !strcmp(r, "residual_add2"))) return lsim_cost_elementwise(g, 3 * T * h * eb);
    if (!strcmp(r, "gelu")) return lsim_cost_elementwise(g, (bwd ? 3 : 2) * T * f * eb);
    if (!strcmp(r, "attn")) return lsim_cost_attention(g, M->micro_batch, (double)M->heads / t, M->seq, M->head_dim, 1, bwd);
    if (!bwd) {
        if (!strcmp(r, "qkv_gemm")) return lsim_cost_gemm(g, T, 3 * Al, h, e);
        if (!strcmp(r, "proj_gemm")) return lsim_cost_gemm(g, T, h, Al, e);
        if (!strcmp(r, "fc1_gemm")) return lsim_cost_gemm(g, T, f, h, e);
        if (!strcmp(r, "fc2_gemm")) return lsim_cost_gemm(g, T, h, f, e);
        return -1;
    }
    if (!strcmp(r, "fc2_dgrad")) return lsim_cost_gemm(g, T, f, h, e);
    if (!strcmp(r, "fc2_wgrad")) return lsim_cost_gemm(g, f, h, T, e);
    if (!strcmp(r, "fc1_dgrad")) return lsim_cost_gemm(g, T, h, f, e);
    if (!strcmp(r, "fc1_wgrad")) return lsim_cost_gemm(g, h, f, T, e);
    if (!strcmp(r, "proj_dgrad")) return lsim_cost_gemm(g, T, Al, h, e);
    if (!strcmp(r, "proj_wgrad")) return lsim_cost_gemm(g, Al, h, T, e);
    if (!strcmp(r, "qkv_dgrad")) return lsim_cost_gemm(g, T, h, 3 * Al, e);
    if (!strcmp(r, "qkv_wgrad")) return lsim_cost_gemm(g, 3 * Al, h, T, e);
    return -1;
}

/* A gradient bucket of x parameters as nl layers + k embedding copies of
 * model M; 0 when no decomposition is within 0.1 % of a layer. */
static int split_bucket(const lsim_wi_model *M, double x, double *nl, double *k)
{
    double lp = layer_params(M), ep = emb_params(M);
    for (int e = 0; e <= 2; e++) {
        double l = floor((x - e * ep) / lp + 0.5);
        if (l < 0) continue;
        if (fabs(x - e * ep - l * lp) <= 1e-3 * lp + 8) {
            *nl = l, *k = e;
            return 1;
        }
    }
    return 0;
}

/* The recovered roles of trace g, or LSIM_EARG saying why there are none
 * (what: the transformation that needs them). */
static int trace_roles_ok(const lsim_graph *g, int trace_layers, wi_troles *R, const char *what, lsim_err *err)
{
    int rc = wi_trace_roles(g, trace_layers > 0 ? trace_layers : 0, R, err);
    if (rc) return rc;
    if (!R->found) {
        rc = lsim_err_set(err, LSIM_EARG,
                          "%s: layer structure unknown (kernel structure: %s): %s needs each kernel's role in its "
                          "layer; give the layer count with --trace-layers N if the structure repeats",
                          g->source, R->why, what);
        wi_troles_free(R);
        return rc;
    }
    if (!R->forward_only) {
        wi_troles_free(R);
        return lsim_err_set(err, LSIM_EARG,
                            "%s: %s: the trace has backward-pass or optimizer kernels, whose roles are not recovered "
                            "from the kernel structure (only a forward pass is; docs/whatif.md)",
                            g->source, what);
    }
    return 0;
}

/* Role of node v: from a synthesized tag, from R (a forward trace's kernel
 * structure) or from TT (a training step's layers; its gradient buckets
 * are DDP's, "dp_allreduce"). */
static int node_role(const lsim_graph *g, const wi_troles *R, const wi_train_roles *TT, size_t v, int *where,
                     int *pass, const char **role)
{
    if (TT) {
        if (g->coll[v] >= 0) {
            lsim_wi_gclass c = lsim_wi_coll_class(g, (size_t)g->coll[v]);
            if ((c != LSIM_WI_DP && c != LSIM_WI_WORLD) || g->colls[g->coll[v]].kind != LSIM_COLL_ALLREDUCE ||
                g->phase[v] != LSIM_PHASE_BACKWARD)
                return 0;
            *where = W_GRAD, *pass = 1, *role = "dp_allreduce";
            return 1;
        }
        if (!TT->role[v]) return 0;
        *where = TT->where[v], *pass = TT->pass[v], *role = TT->role[v];
        return 1;
    }
    if (!R) return parse_role(lsim_strtab_get(g->strings, g->name[v]), where, pass, role);
    int r = R->role[v];
    if (!r) return 0;
    *pass = 0;
    *role = wi_trole_name(r);
    *where = r == WI_TR_LNF || r == WI_TR_LOGITS ? W_HEAD : r == WI_TR_EMB_AR ? W_EMB : W_LAYER;
    return 1;
}

/* ------------------------------------------------------------ the model */

int lsim_wi_model_check(const lsim_wi_model *M, const char *what, lsim_err *err)
{
    if (M->hidden <= 0 || M->ffn <= 0 || M->heads <= 0 || M->head_dim <= 0 || M->seq <= 0 || M->vocab <= 0 ||
        M->micro_batch <= 0 || M->elem_bytes <= 0 || M->tp <= 0)
        return lsim_err_set(err, LSIM_EARG, "%s: the model shape needs positive sizes", what);
    if (M->heads % M->tp || M->hidden % M->tp || M->ffn % M->tp || M->vocab % M->tp)
        return lsim_err_set(err, LSIM_EARG,
                            "%s: TP %d does not divide the model (heads %d, hidden %d, FFN %d, vocabulary %d must all "
                            "be divisible by it)",
                            what, M->tp, M->heads, M->hidden, M->ffn, M->vocab);
    return 0;
}

int lsim_wi_model_of(const lsim_graph *g, const lsim_wi_layout *L, const lsim_wi_model *given, int trace_layers,
                     lsim_wi_model *out, lsim_err *err)
{
    lsim_wi_model M;
    memset(&M, 0, sizeof M);
    if (given && given->hidden > 0) {
        M = *given;
    } else {
        /* "synth:NAME/gpuN": a built-in shape */
        const char *s = g->source ? g->source : "";
        const char *p = strstr(s, "synth:");
        char name[32] = "";
        if (p) {
            size_t n = strcspn(p + 6, "/");
            if (n < sizeof name) memcpy(name, p + 6, n), name[n] = 0;
        }
        lsim_model_shape sh;
        lsim_err e2;
        if (!name[0] || lsim_model_builtin(name, &sh, &e2))
            return lsim_err_set(err, LSIM_EARG,
                                "%s: the model shape is unknown (not a store that lumosim synth wrote for a built-in "
                                "model): give the source's shape with --model NAME|FILE.json",
                                s);
        M.hidden = sh.hidden, M.ffn = sh.ffn, M.heads = sh.heads, M.head_dim = sh.head_dim;
        M.seq = sh.seq, M.vocab = sh.vocab;
    }
    if (M.elem_bytes <= 0) M.elem_bytes = 2;
    M.tp = L->tp;
    /* the micro-batch from the activations (TP all-reduces, pipeline
     * transfers: tokens x hidden x element size) */
    int64_t act = -1;
    {
        /* a trace: the layers' TP all-reduces from its kernel structure */
        lsim_wi_ident id;
        int rc0 = lsim_wi_identify(g, 0, trace_layers, &id, err);
        if (rc0) return rc0;
        if (id.layer_source == LSIM_WI_LAYERS_KERNELS) {
            wi_troles R;
            if ((rc0 = trace_roles_ok(g, trace_layers, &R, "the model shape", err))) return rc0;
            for (size_t v = 0; v < g->n && act < 0; v++)
                if (R.role[v] == WI_TR_ATTN_AR || R.role[v] == WI_TR_MLP_AR) act = g->colls[g->coll[v]].bytes;
            wi_troles_free(&R);
        }
    }
    for (size_t v = 0; v < g->n && act < 0; v++) {
        if (g->coll[v] < 0) continue;
        int where, pass;
        const char *r;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        if (!parse_role(lsim_strtab_get(g->strings, g->name[v]), &where, &pass, &r)) continue;
        if (is_p2p_kind(ci->kind) || !strcmp(r, "attn_allreduce") || !strcmp(r, "mlp_allreduce")) act = ci->bytes;
    }
    if (act > 0) {
        int64_t per = (int64_t)M.seq * M.hidden * M.elem_bytes;
        if (act % per)
            return lsim_err_set(err, LSIM_EARG,
                                "%s: its activations are %lld bytes, not a whole number of sequences of %d tokens x "
                                "hidden %d x %d bytes: the model shape is not the source's (give --model)",
                                g->source, (long long)act, M.seq, M.hidden, M.elem_bytes);
        int mb = (int)(act / per);
        if (given && given->micro_batch > 0 && given->micro_batch != mb)
            return lsim_err_set(err, LSIM_EARG, "%s: its activations are those of micro-batch %d, not %d", g->source, mb,
                                given->micro_batch);
        M.micro_batch = mb;
    } else if (given && given->micro_batch > 0) {
        M.micro_batch = given->micro_batch;
    } else {
        M.micro_batch = 1;
    }
    int rc = lsim_wi_model_check(&M, "the source", err);
    if (rc) return rc;
    *out = M;
    return 0;
}

/* ------------------------------------------------------------ reshape */

static int group_ranks(const lsim_graph *g, const lsim_coll_info *ci, const lsim_wi_layout *L, int32_t *r)
{
    const char *pg = ci->pg_name != UINT32_MAX ? lsim_strtab_get(g->strings, ci->pg_name) : NULL;
    int n = lsim_wi_group_ranks(pg, L, r, MAXR);
    return n > 0 && n <= MAXR ? n : 0;
}

int lsim_wi_reshape(const lsim_graph *in, const lsim_wi_layout *L, const lsim_wi_model *from, const lsim_wi_model *to,
                    int trace_layers, const lsim_gpu_spec *gpu, const lsim_topology *topo, lsim_graph **out, lsim_wi_counts *rec,
                    lsim_err *err)
{
    *out = NULL;
    int rc = lsim_wi_model_check(to, "the new model", err);
    if (rc) return rc;
    lsim_wi_ident id;
    if ((rc = lsim_wi_identify(in, 0, trace_layers, &id, err))) return rc;
    wi_troles TR, *R = NULL;
    wi_train_roles TT0, *TT = NULL;
    if (id.layer_source == LSIM_WI_LAYERS_ANNOTATIONS && id.training.layers_cut) {
        if ((rc = wi_train_roles_find(in, &TT0, err))) return rc;
        TT = &TT0;
    } else if (id.layer_source == LSIM_WI_LAYERS_KERNELS) {
        if ((rc = trace_roles_ok(in, trace_layers, &TR, "changing the width or TP", err))) return rc;
        R = &TR;
    } else if (id.layer_source != LSIM_WI_LAYERS_TAGS)
        return lsim_err_set(err, LSIM_EARG,
                            "%s: layer structure unknown (%s): changing the width or TP needs each kernel's role in its "
                            "layer, which lumosim synth's node tags give (L12.mb3.fwd.qkv_gemm); a Kineto trace's "
                            "kernels carry no such role",
                            in->source,
                            id.layer_source == LSIM_WI_LAYERS_ANNOTATIONS ? "layer annotations found, kernel roles not"
                                                                          : "no layer tags or annotations");
    lsim_graph *g = NULL;
    int32_t *r = lsim_malloc(MAXR * sizeof *r);
    if (!r) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", in->source);
        goto cleanup;
    }
    if ((rc = lsim_graph_clone(in, &g, err))) goto cleanup;
    int64_t act0 = (int64_t)from->micro_batch * from->seq * from->hidden * from->elem_bytes;
    int64_t act1 = (int64_t)to->micro_batch * to->seq * to->hidden * to->elem_bytes;
    /* a training step: its optimizer steps every parameter (memory-bound,
     * 30 bytes per parameter as role_cost's Adam), and its gradients
     * (AccumulateGrad's bytes, what DDP buckets by) follow the new shape:
     * a layer's by a layer's parameters, the rest (embedding, head) by the
     * embedding's */
    lsim_ns adam0 = 0, adam1 = 0;
    if (TT) {
        adam0 = lsim_cost_elementwise(gpu, (TT->layers * layer_params(from) + 2 * emb_params(from)) * 30.0);
        adam1 = lsim_cost_elementwise(gpu, (TT->layers * layer_params(to) + 2 * emb_params(to)) * 30.0);
        for (size_t v = 0; v < g->n; v++) {
            if (g->grad_bytes[v] <= 0) continue;
            double f = TT->layer_of[v] >= 0 ? layer_params(to) / layer_params(from) : emb_params(to) / emb_params(from);
            g->grad_bytes[v] = lsim_ns_from_double((double)g->grad_bytes[v] * f);
        }
    }
    for (size_t v = 0; v < g->n; v++) {
        int where, pass;
        const char *role;
        if (!node_role(g, R, TT, v, &where, &pass, &role)) continue;
        if (g->coll[v] < 0) {
            if (g->kind[v] != LSIM_N_KERNEL) continue;
            int adam = TT && pass == 2;
            lsim_ns c0 = adam ? adam0 : role_cost(gpu, from, where, pass, role),
                    c1 = adam ? adam1 : role_cost(gpu, to, where, pass, role);
            if (c0 <= 0 || c1 < 0 || c0 == c1) continue;
            lsim_ns d = lsim_ns_from_double((double)g->dur[v] * ((double)c1 / (double)c0));
            if (d != g->dur[v]) g->dur[v] = d, rec->retimed[g->kind[v]]++;
            continue;
        }
        lsim_coll_info *ci = &g->colls[g->coll[v]];
        int64_t nb = ci->bytes;
        lsim_wi_gclass cls = lsim_wi_coll_class(g, (size_t)g->coll[v]);
        if (is_p2p_kind(ci->kind) || !strcmp(role, "attn_allreduce") || !strcmp(role, "mlp_allreduce") ||
            !strcmp(role, "emb_allreduce")) {
            if (ci->bytes == act0) nb = act1;
        } else if (!strcmp(role, "xent_allreduce")) {
            nb = (int64_t)to->micro_batch * to->seq * 12;
        } else if (!strncmp(role, "dp_allreduce", 12)) {
            double nl, k;
            if (split_bucket(from, (double)ci->bytes / 4.0, &nl, &k))
                nb = (int64_t)((nl * layer_params(to) + k * emb_params(to)) * 4.0);
            else /* unknown composition: in proportion to a layer's parameters */
                nb = lsim_ns_from_double((double)ci->bytes * layer_params(to) / layer_params(from));
        }
        if (nb == ci->bytes || ci->bytes <= 0) continue;
        lsim_ns c0, c1;
        if (is_p2p_kind(ci->kind)) {
            const char *pg = ci->pg_name != UINT32_MAX ? lsim_strtab_get(g->strings, ci->pg_name) : "";
            int a, b;
            if (sscanf(pg, "p2p:%d->%d", &a, &b) != 2) a = 0, b = 1;
            c0 = lsim_cost_p2p(topo, ci->bytes, a, b);
            c1 = lsim_cost_p2p(topo, nb, a, b);
        } else {
            int n = group_ranks(g, ci, L, r);
            c0 = lsim_cost_collective(topo, ci->kind, ci->bytes, n ? r : NULL, n ? n : ci->group_size, LSIM_ALGO_AUTO);
            c1 = lsim_cost_collective(topo, ci->kind, nb, n ? r : NULL, n ? n : ci->group_size, LSIM_ALGO_AUTO);
        }
        ci->bytes = nb;
        if (c0 > 0 && c1 != c0) {
            g->dur[v] = lsim_ns_from_double((double)g->dur[v] * ((double)c1 / (double)c0));
            rec->retimed[g->kind[v]]++;
            rec->coll_retimed[cls]++;
        }
    }
    *out = g;
    g = NULL;
cleanup:
    if (R) wi_troles_free(R);
    if (TT) wi_train_roles_free(TT);
    free(r);
    lsim_graph_free(g);
    return rc;
}

/* ------------------------------------------------------------ relayout */

/* Synthesized graphs tag their layers' nodes "L<n>.": any such name. */
static int layer_tagged(const lsim_graph *g)
{
    for (size_t v = 0; v < g->n; v++) {
        const char *s = lsim_strtab_get(g->strings, g->name[v]);
        if (s[0] == 'L' && isdigit((unsigned char)s[1])) {
            const char *e = s + 1;
            while (isdigit((unsigned char)*e)) e++;
            if (*e == '.') return 1;
        }
    }
    return 0;
}

int lsim_wi_relayout(const lsim_graph *in, const lsim_wi_layout *from, const lsim_wi_layout *to, uint32_t new_gpu,
                     lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    if (to->tp <= 0 || to->dp <= 0 || to->pp != from->pp)
        return lsim_err_set(err, LSIM_EARG, "TP %d x DP %d x PP %d: widths must be positive (PP %d kept)", to->tp, to->dp,
                            to->pp, from->pp);
    int has_dp = 0; /* gradient buckets emitted for the new width (lsim_wi_pipe_cfg.dp_to) */
    for (size_t c = 0; c < in->ncoll && !has_dp; c++)
        has_dp = in->colls[c].pg_name != UINT32_MAX && !strncmp(lsim_strtab_get(in->strings, in->colls[c].pg_name), "dp:", 3);
    if (from->dp == 1 && to->dp > 1 && !wi_forward_only(in) && !has_dp)
        return lsim_err_set(err, LSIM_EARG,
                            "--dp %d: the source has data-parallel width 1, so there is no gradient all-reduce to "
                            "replicate (it would have to be inserted: buckets, launches, streams, which the "
                            "relayout does not do); start from a job with DP >= 2",
                            to->dp);
    int has_tp = 0; /* TP all-reduces emitted for the new width (lsim_wi_pipe_cfg.tp_to) */
    for (size_t c = 0; c < in->ncoll && !has_tp; c++)
        has_tp = in->colls[c].pg_name != UINT32_MAX && !strncmp(lsim_strtab_get(in->strings, in->colls[c].pg_name), "tp:", 3);
    if (from->tp == 1 && to->tp > 1 && !has_tp)
        return lsim_err_set(err, LSIM_EARG,
                            "--tp %d: the source has tensor-parallel width 1, so there is no tensor-parallel "
                            "all-reduce to split its layers' work with; start from a job with TP >= 2",
                            to->tp);
    int t, d, p, rc = 0;
    lsim_wi_coords(to, (int32_t)new_gpu, &t, &d, &p);
    if (p >= to->pp)
        return lsim_err_set(err, LSIM_EARG, "GPU %u is outside a job of %d GPUs", new_gpu, to->tp * to->dp * to->pp);
    lsim_graph *g = NULL;
    char src[512];
    snprintf(src, sizeof src, "whatif:tp%d.dp%d/gpu%u<-%.400s", to->tp, to->dp, new_gpu, in->source);
    int drop_dp = to->dp == 1 && from->dp > 1, drop_tp = to->tp == 1 && from->tp > 1;
    /* A traced training step cut to DP 1 keeps its gradient buckets, in a
     * group of one (the network step re-times them to that group's cost):
     * a DDP job of one GPU still runs them, and they are what a later
     * widening (DP 1 -> N) replicates -- a trace has no layer tags to
     * insert them from. Synthesized (layer-tagged) graphs drop them, as
     * synth emits DP 1. */
    if (drop_dp && !wi_forward_only(in) && !layer_tagged(in)) drop_dp = 0;
    if (drop_dp || drop_tp) {
        /* no all-reduce in a group of one: the kernels and their launches go */
        uint8_t *removed = lsim_calloc(in->n ? in->n : 1, 1);
        int32_t *seg = lsim_malloc((in->n ? in->n : 1) * sizeof *seg);
        if (!removed || !seg) {
            free(removed);
            free(seg);
            return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
        }
        for (size_t v = 0; v < in->n; v++) {
            seg[v] = -1;
            if (in->coll[v] < 0) continue;
            lsim_wi_gclass c = lsim_wi_coll_class(in, (size_t)in->coll[v]);
            if (!((c == LSIM_WI_DP && drop_dp) || (c == LSIM_WI_TP && drop_tp))) continue;
            removed[v] = 1;
            for (uint64_t k = in->in_off[v]; k < in->in_off[v + 1]; k++)
                if ((in->in_class[k] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) removed[in->in_src[k]] = 1;
        }
        /* whole groups go, so the other groups' sequence numbers stand (a
         * renumbering in node order would count a trace's CPU-side
         * collective nodes) */
        wi_plan P = {removed, seg, NULL, 0, src, 0, NULL, NULL, NULL, NULL, NULL};
        rc = wi_rebuild(in, &P, &g, rec, err);
        free(seg);
        free(removed);
        if (rc) return rc;
    } else {
        if ((rc = lsim_graph_clone(in, &g, err))) return rc;
        free(g->source);
        if (!(g->source = lsim_strdup(src))) goto nomem;
    }
    g->rank = (int32_t)new_gpu;
    g->world_size = to->tp * to->dp * to->pp;
    for (size_t c = 0; c < g->ncoll; c++) {
        lsim_coll_info *ci = &g->colls[c];
        const char *pg = ci->pg_name != UINT32_MAX ? lsim_strtab_get(g->strings, ci->pg_name) : "";
        char name[64];
        int a, b;
        name[0] = 0;
        if (sscanf(pg, "tp:%d:%d", &a, &b) == 2) {
            snprintf(name, sizeof name, "tp:%d:%d", p, d);
            ci->group_size = to->tp;
        } else if (sscanf(pg, "dp:%d:%d", &a, &b) == 2) {
            snprintf(name, sizeof name, "dp:%d:%d", t, p);
            ci->group_size = to->dp;
        } else if (sscanf(pg, "p2p:%d->%d", &a, &b) == 2) {
            const char *h = strchr(pg, '#');
            int ta, da, pa, tb, db, pb;
            lsim_wi_coords(from, a, &ta, &da, &pa);
            lsim_wi_coords(from, b, &tb, &db, &pb);
            snprintf(name, sizeof name, "p2p:%d->%d%.24s", lsim_wi_rank(to, t, d, pa), lsim_wi_rank(to, t, d, pb),
                     h ? h : "");
        } else {
            continue;
        }
        if (wi_intern(g, name, &ci->pg_name)) goto nomem;
    }
    if (t >= from->tp || d >= from->dp) {
        rec->gpus_added++;
        for (size_t v = 0; v < g->n; v++) rec->added[g->kind[v]]++;
    }
    *out = g;
    return 0;
nomem:
    lsim_graph_free(g);
    return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
}
