/* The what-if step table (whatif_steps.h): one row per what-if, from which
 * the CLI's options and --help, the plan's checks, its per-GPU transforms
 * and the record are made. The rows of the built-in steps are here, each
 * with the small pieces that bind it to its transform (src/whatif/) and its
 * check (whatif_rules.c); a new what-if's row lives in its own file and is
 * named in ROWS below. */
#include <errno.h>
#include "lumosim/alloc.h"
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/text.h"
#include "lumosim/whatif_steps.h"

#define OFF(field) offsetof(lsim_wi_request, field)
#define NELEM(a) (sizeof(a) / sizeof *(a))

/* ------------------------------------------------------------ values */

static int opt_schedule(lsim_wi_request *rq, const char *v, lsim_err *err)
{
    if (!strcmp(v, "1f1b")) {
        rq->vstages = 1;
        return 0;
    }
    if (!strncmp(v, "interleaved:", 12)) {
        static const lsim_wi_opt V = {"--schedule interleaved:V", NULL, "", 0, 0, LSIM_WI_OPT_LONG, OFF(vstages), 1000,
                                      NULL, NULL, LSIM_WI_RS_OWN};
        return lsim_wi_opt_apply(rq, &V, v + 12, err);
    }
    return lsim_err_set(err, LSIM_EARG, "unknown --schedule '%s' (1f1b or interleaved:V)", v);
}

static int opt_jitter(lsim_wi_request *rq, const char *v, lsim_err *err)
{
    rq->jitter = v;
    if (!strcmp(v, "trace")) {
        rq->sigma = -1;
        return 0;
    }
    char *e;
    rq->sigma = strtod(v, &e);
    if (*e || e == v || !isfinite(rq->sigma) || rq->sigma < 0)
        return lsim_err_set(err, LSIM_EARG, "--jitter needs a relative std-dev >= 0 or 'trace' (got '%s')", v);
    lsim_err re = {0};
    if (lsim_wi_jitter_check(rq->sigma, &re)) /* the documented range (whatif.h) */
        return lsim_err_set(err, LSIM_EARG, "--jitter %s: %s", v, re.msg);
    return 0;
}

static int opt_slow(lsim_wi_request *rq, const char *v, lsim_err *err)
{
    char *e;
    errno = 0;
    long r = strtol(v, &e, 10);
    double f = 0;
    if (!errno && e != v && *e == ':' && r >= 0 && r <= INT32_MAX) f = strtod(e + 1, &e);
    if (errno || *e || !(f > 0) || !isfinite(f))
        return lsim_err_set(err, LSIM_EARG, "--slow-gpu needs RANK:FACTOR with FACTOR > 0 (got '%s')", v);
    lsim_err re = {0};
    if (lsim_wi_slow_check(f, &re)) /* the documented range (whatif.h) */
        return lsim_err_set(err, LSIM_EARG, "--slow-gpu %s: %s", v, re.msg);
    for (int q = 0; q < rq->nslow; q++)
        if (rq->slow_rank[q] == (int32_t)r) return lsim_err_set(err, LSIM_EARG, "--slow-gpu: GPU %ld given twice", r);
    if (rq->nslow == LSIM_WI_MAXSLOW)
        return lsim_err_set(err, LSIM_EARG, "at most %d --slow-gpu options", LSIM_WI_MAXSLOW);
    rq->slow_rank[rq->nslow] = (int32_t)r;
    rq->slow_f[rq->nslow++] = f;
    return 0;
}

/* ------------------------------------------------------------ steps */

static void put_schedule(FILE *f, int V)
{
    if (V > 1) fprintf(f, "interleaved:%d", V);
    else fputs("1f1b", f);
}

/* dp: the data-parallel copy (and, with --tp, the tensor-parallel one) */
static int apply_dp(lsim_wi_ctx *c, const lsim_graph *in, int32_t gpu, int k, lsim_graph **out, lsim_wi_counts *cnt,
                    lsim_err *err)
{
    return lsim_wi_relayout(in, &c->d->Ls, &c->d->Ln, (uint32_t)gpu, out, cnt, err);
}

static void args_dp(const lsim_wi_ctx *c, FILE *f)
{
    const lsim_wi_layout *L = &c->d->L, *Ln = &c->d->Ln;
    if (Ln->tp != L->tp)
        fprintf(f, "\"args\":{\"tp_from\":%d,\"tp_to\":%d,\"dp_from\":%d,\"dp_to\":%d},", L->tp, Ln->tp, L->dp, Ln->dp);
    else fprintf(f, "\"args\":{\"from\":%d,\"to\":%d},", L->dp, Ln->dp);
}

static const char *changes_dp(const lsim_wi_ctx *c) { return c->d->Ln.tp != c->d->L.tp ? "--tp" : NULL; }

/* layers */
static int apply_layers(lsim_wi_ctx *c, const lsim_graph *in, int32_t gpu, int k, lsim_graph **out,
                        lsim_wi_counts *cnt, lsim_err *err)
{
    return lsim_wi_layers(in, c->L, (int)c->rq->layers, (int)c->rq->trace_layers, c->tfrom, out, cnt, err);
}

static void args_layers(const lsim_wi_ctx *c, FILE *f)
{
    fprintf(f, "\"args\":{\"from\":%d,\"to\":%ld},", c->ids[0].layers_per_chunk * c->ids[0].nchunks * c->L->pp,
            c->rq->layers);
}

static const char *changes_layers(const lsim_wi_ctx *c) { return "--layers"; }

/* shape: kernels re-timed for a new width; from TP 1 on a training step,
 * the all-reduces of the new width's activations after them */
static int runs_shape(const lsim_wi_ctx *c) { return c->d->used[LSIM_WI_ST_SHAPE] || c->d->tp_train; }

static int apply_shape(lsim_wi_ctx *c, const lsim_graph *in, int32_t gpu, int k, lsim_graph **out,
                       lsim_wi_counts *cnt, lsim_err *err)
{
    const lsim_wi_decision *d = c->d;
    lsim_graph *a = NULL;
    int rc = 0;
    if (d->used[LSIM_WI_ST_SHAPE]) {
        rc = lsim_wi_reshape(in, c->L, &d->Mfrom, &d->Mto, (int)c->rq->trace_layers, c->gfrom, c->tfrom, &a, cnt, err);
        if (rc || !d->tp_train) {
            *out = a;
            return rc;
        }
        in = a;
    }
    int64_t act = (int64_t)d->Mto.micro_batch * d->Mto.seq * d->Mto.hidden * d->Mto.elem_bytes;
    rc = lsim_wi_train_tp(in, c->L, act, c->tfrom, gpu, out, cnt, err);
    lsim_graph_free(a);
    return rc;
}

static void args_shape(const lsim_wi_ctx *c, FILE *f)
{
    const lsim_wi_decision *d = c->d;
    fprintf(f,
            "\"args\":{\"from\":{\"hidden\":%d,\"ffn\":%d,\"tp\":%d,\"micro_batch\":%d},\"to\":{\"hidden\":%d,"
            "\"ffn\":%d,\"tp\":%d,\"micro_batch\":%d}},",
            d->Mfrom.hidden, d->Mfrom.ffn, d->Mfrom.tp, d->Mfrom.micro_batch, d->Mto.hidden, d->Mto.ffn, d->Mto.tp,
            d->Mto.micro_batch);
}

static const char *changes_shape(const lsim_wi_ctx *c)
{
    return c->rq->hidden ? "--hidden" : c->rq->ffn ? "--ffn" : "--tp";
}

/* pipeline: run by the plan's pipeline runners (whole stages) */
static void args_pipe(const lsim_wi_ctx *c, FILE *f)
{
    const lsim_wi_decision *d = c->d;
    fprintf(f, "\"args\":{\"pp\":{\"from\":%d,\"to\":%d},\"schedule\":{\"from\":\"", c->d->L.pp, d->pcfg.pp);
    put_schedule(f, c->ids[0].nchunks > 0 ? c->ids[0].nchunks : 1);
    fputs("\",\"to\":\"", f);
    put_schedule(f, d->pcfg.vstages);
    fprintf(f, "\"},\"micro_batches\":{\"from\":%d,\"to\":%d}},", d->src_m, d->pcfg.micro_batches);
}

static const char *changes_pipe(const lsim_wi_ctx *c)
{
    return c->rq->pp ? "--pp" : c->rq->micro_batches ? "--micro-batches" : "--schedule";
}

/* grad-buckets: a traced step's DDP buckets, cut from the gradients of the
 * new step's layers and shape (so after them) */
static int when_grad(const lsim_wi_request *rq, const lsim_wi_facts *f, const lsim_wi_decision *d)
{
    /* a traced data-parallel training step whose layers or shape change:
     * its DDP buckets are cut again from the new gradients */
    if (d->used[LSIM_WI_ST_LAYERS] || d->used[LSIM_WI_ST_SHAPE])
        for (size_t i = 0; i < f->n; i++)
            if (f->ids[i].training.layers_cut && f->ids[i].training.nbuckets > 0) return 1;
    return 0;
}

static int runs_grad(const lsim_wi_ctx *c) { return c->d->used[LSIM_WI_ST_GRAD] && !c->d->grad_per_stage; }

/* The bytes DDP's Reducer adds to a GPU that had no DDP: one flat buffer
 * per gradient bucket (reducer.cpp, initialize_buckets: bucket.gradients =
 * at::empty(bucket size)), which with gradient_as_bucket_view=False,
 * PyTorch's default, is one more copy of every gradient. A bucket is built
 * once and reused every step, so it is one backward pass's AccumulateGrad
 * bytes (graph.h grad_bytes), passes told apart by ProfilerStep iteration
 * as lsim_wi_trace_ddp's bucketing tells them: the largest pass. */
static int ddp_bucket_bytes(const lsim_graph *g, int64_t *out, lsim_err *err)
{
    int64_t *pass = lsim_calloc((size_t)g->niters + 1, sizeof *pass), best = 0;
    *out = 0;
    if (!pass) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t v = 0; v < g->n; v++) {
        if (g->grad_bytes[v] <= 0) continue;
        size_t k = g->iter[v] >= 0 && (uint32_t)g->iter[v] < g->niters ? (size_t)g->iter[v] : g->niters;
        if (pass[k] <= INT64_MAX - g->grad_bytes[v]) pass[k] += g->grad_bytes[v];
    }
    for (size_t k = 0; k <= g->niters; k++) best = pass[k] > best ? pass[k] : best;
    free(pass);
    *out = best;
    return 0;
}

static int apply_grad(lsim_wi_ctx *c, const lsim_graph *in, int32_t gpu, int k, lsim_graph **out, lsim_wi_counts *cnt,
                      lsim_err *err)
{
    lsim_graph *b = NULL;
    int rc = lsim_wi_trace_ddp(in, c->L, c->tfrom, gpu, &b, cnt, err);
    int64_t add = 0;
    /* from DP 1 only: a traced DP > 1 step's memory already holds its
     * bucket buffers (its buckets are only cut again) */
    if (!rc && c->L->dp == 1 && (b->mem_source == LSIM_MEM_SRC_TOTALS || b->mem_source == LSIM_MEM_SRC_DELTAS))
        rc = ddp_bucket_bytes(in, &add, err);
    if (!rc && add > 0) {
        /* the buckets live through the whole step, so every peak grows by them */
        b->mem_peak_allocated += add;
        if (b->mem_source == LSIM_MEM_SRC_TOTALS) b->mem_peak_reserved += add;
        if (add > c->ddp_bytes) c->ddp_bytes = add;
    }
    if (rc) {
        lsim_graph_free(b);
        b = NULL;
    }
    *out = b;
    return rc;
}

static void memory_grad(const lsim_wi_ctx *c, FILE *f)
{
    fprintf(f,
            "\"memory\":{\"figures\":\"carried\",\"added_bytes\":%lld,\"why\":\"DDP's Reducer holds one flat "
            "buffer per gradient bucket (gradient_as_bucket_view=False, PyTorch's default): one more copy of the "
            "gradients, added to the peaks\"},",
            (long long)c->ddp_bytes);
}

/* network */
static int when_net(const lsim_wi_request *rq, const lsim_wi_facts *f, const lsim_wi_decision *d)
{
    return rq->topo || rq->gpu || d->used[LSIM_WI_ST_DP] || d->used[LSIM_WI_ST_SHAPE];
}

static int apply_net(lsim_wi_ctx *c, const lsim_graph *in, int32_t gpu, int k, lsim_graph **out, lsim_wi_counts *cnt,
                     lsim_err *err)
{
    return lsim_wi_retime(in, &c->d->Ls, &c->d->Ln, c->tfrom, c->tto, out, cnt, err);
}

static void args_net(const lsim_wi_ctx *c, FILE *f)
{
    const lsim_wi_request *rq = c->rq;
    fputs("\"args\":{\"topology\":", f); /* file and GPU names: escaped (text.h) */
    lsim_text_json(f, rq->topo ? rq->topo : rq->gpu ? "default for --gpu" : "unchanged");
    fputs(",\"from_topology\":", f);
    lsim_text_json(f, rq->from_topo ? rq->from_topo : "default for --from-gpu");
    fputs("},", f);
}

/* gpu */
static int when_gpu(const lsim_wi_request *rq, const lsim_wi_facts *f, const lsim_wi_decision *d)
{
    return rq->gpu != NULL;
}

static int apply_gpu(lsim_wi_ctx *c, const lsim_graph *in, int32_t gpu, int k, lsim_graph **out, lsim_wi_counts *cnt,
                     lsim_err *err)
{
    return lsim_wi_gpu(in, c->gfrom, c->gto, out, cnt, err);
}

static void args_gpu(const lsim_wi_ctx *c, FILE *f)
{
    fputs("\"args\":{\"from_how\":", f);
    lsim_text_json(f, c->from_how);
    fputs(",\"from\":", f);
    lsim_text_json(f, c->gfrom->name);
    fputs(",\"to\":", f);
    lsim_text_json(f, c->gto->name);
    fputs("},", f);
}

static void memory_gpu(const lsim_wi_ctx *c, FILE *f)
{
    fputs("\"memory\":{\"figures\":\"carried\",\"capacity_bytes\":", f);
    if (c->gto->mem_capacity > 0) fprintf(f, "%lld", (long long)c->gto->mem_capacity);
    else fputs("null", f);
    fputs(",\"why\":", f);
    char w[256];
    snprintf(w, sizeof w, "the same tensors on the %s: the capacity is its spec's mem_capacity%s", c->gto->name,
             c->gto->mem_capacity > 0 ? "" : " (not given: unknown)");
    lsim_text_json(f, w);
    fputs("},", f);
}

/* slow-gpu: once per --slow-gpu, on its GPU only */
static int when_slow(const lsim_wi_request *rq, const lsim_wi_facts *f, const lsim_wi_decision *d)
{
    return rq->nslow > 0;
}

static int reps_slow(const lsim_wi_ctx *c) { return c->rq->nslow; }

static int apply_slow(lsim_wi_ctx *c, const lsim_graph *in, int32_t gpu, int k, lsim_graph **out, lsim_wi_counts *cnt,
                      lsim_err *err)
{
    if (c->rq->slow_rank[k] != gpu) return 0;
    return lsim_wi_slow(in, c->rq->slow_f[k], out, cnt, err);
}

static void args_slow(const lsim_wi_ctx *c, FILE *f)
{
    fputs("\"args\":[", f);
    for (int q = 0; q < c->rq->nslow; q++)
        fprintf(f, "%s{\"rank\":%d,\"factor\":%.17g}", q ? "," : "", c->rq->slow_rank[q], c->rq->slow_f[q]);
    fputs("],", f);
}

/* jitter */
static int when_jitter(const lsim_wi_request *rq, const lsim_wi_facts *f, const lsim_wi_decision *d)
{
    return rq->jitter != NULL;
}

static int apply_jitter(lsim_wi_ctx *c, const lsim_graph *in, int32_t gpu, int k, lsim_graph **out,
                        lsim_wi_counts *cnt, lsim_err *err)
{
    return lsim_wi_jitter(in, c->rq->sigma, (uint64_t)c->rq->seed, (uint32_t)gpu, out, cnt, err);
}

static void args_jitter(const lsim_wi_ctx *c, FILE *f)
{
    if (c->rq->sigma < 0) fprintf(f, "\"args\":{\"sigma\":\"trace\",\"seed\":%ld},", c->rq->seed);
    else fprintf(f, "\"args\":{\"sigma\":%.17g,\"seed\":%ld},", c->rq->sigma, c->rq->seed);
}

/* ------------------------------------------------------------ the rows */

#define POS "a positive integer"

static const lsim_wi_opt O_IDENTIFY[] = {
    {"--identify", NULL, NULL, 0, 1, LSIM_WI_OPT_SWITCH, OFF(identify), 0, NULL,
     "  --identify        print what was found (layout, group classes, layers,\n"
     "                    each rank's role) as JSON and write nothing (so -o\n"
     "                    and the transformation options are refused with it)\n", LSIM_WI_RS_NONE},
};
static const lsim_wi_row ROW_IDENTIFY = {.name = "identify", .step = -1, .opts = O_IDENTIFY, .nopts = NELEM(O_IDENTIFY)};

static const lsim_wi_opt O_DP[] = {
    {"--dp", NULL, POS, 0, 0, LSIM_WI_OPT_LONG, OFF(dp), 1000000, NULL,
     "  --dp N            data-parallel width N (per-replica batch kept; from\n"
     "                    DP 1 gradient buckets are inserted: synthesized\n"
     "                    stores by their layer tags, traces as PyTorch DDP\n"
     "                    buckets their AccumulateGrad sizes (record_shapes))\n", LSIM_WI_RS_OWN},
};
static const lsim_wi_row ROW_DP = {
    "dp", LSIM_WI_ST_DP, O_DP, NELEM(O_DP), 1, lsim_wi_rule_dp, NULL, LSIM_WI_PH_GPU, 1, NULL, NULL, apply_dp, args_dp,
    changes_dp,
    "DDP: every replica holds the full model, its gradients and optimizer state and its own micro-batch's "
    "activations, as its source GPU did",
    NULL};

/* --tp: decided here, run by the dp step's copy (recorded as "tp") and the
 * shape step's re-timing */
static const lsim_wi_opt O_TP[] = {
    {"--tp", NULL, POS, 0, 0, LSIM_WI_OPT_LONG, OFF(tp), 1000000, NULL,
     "  --tp N            tensor-parallel width N: each layer's kernels\n"
     "                    re-timed for the new shards, TP all-reduces re-timed\n"
     "                    for the new group (from TP 1, synthesized stores:\n"
     "                    inserted where synth puts them; traced training\n"
     "                    steps with layer annotations: where Megatron-LM puts\n"
     "                    them, sized by --model and --micro-batch); DP kept\n"
     "                    unless --dp\n", LSIM_WI_RS_SYNTH},
};
static const lsim_wi_row ROW_TP = {.name = "tp", .step = -1, .opts = O_TP, .nopts = NELEM(O_TP), .check_at = 2,
                                   .check = lsim_wi_rule_tp};

static const lsim_wi_opt O_LAYERS[] = {
    {"--layers", NULL, POS, 0, 0, LSIM_WI_OPT_LONG, OFF(layers), 1000000, NULL,
     "  --layers N        N layers: a synthesized store's layer-tagged nodes, or\n"
     "                    the layers a trace repeats (see --identify), cut and\n"
     "                    copied with their collectives; on a training step\n"
     "                    with layer annotations, each layer's forward and\n"
     "                    backward work (autograd's Sequence numbers) and its\n"
     "                    gradients, so DDP's buckets follow\n", LSIM_WI_RS_SYNTH},
};
static const lsim_wi_row ROW_LAYERS = {"layers", LSIM_WI_ST_LAYERS, O_LAYERS, NELEM(O_LAYERS), 7, lsim_wi_rule_layers,
                                       NULL, LSIM_WI_PH_SOURCE, 1, NULL, NULL, apply_layers, args_layers,
                                       changes_layers, NULL, NULL};

static const lsim_wi_opt O_SHAPE[] = {
    {"--hidden", NULL, POS, 0, 0, LSIM_WI_OPT_LONG, OFF(hidden), 100000000, NULL,
     "  --hidden N        model width N (attention width heads x head_dim kept);\n"
     "                    on a trace, give its shape with --model\n", LSIM_WI_RS_SYNTH},
    {"--ffn", NULL, POS, 0, 0, LSIM_WI_OPT_LONG, OFF(ffn), 100000000, NULL, "  --ffn N           MLP width N\n", LSIM_WI_RS_SYNTH},
};
static const lsim_wi_row ROW_SHAPE = {"shape", LSIM_WI_ST_SHAPE, O_SHAPE, NELEM(O_SHAPE), 5, lsim_wi_rule_shape, NULL,
                                      LSIM_WI_PH_SOURCE, 2, runs_shape, NULL, apply_shape, args_shape, changes_shape,
                                      NULL, NULL};

static const lsim_wi_opt O_PIPE[] = {
    {"--pp", NULL, POS, 0, 0, LSIM_WI_OPT_LONG, OFF(pp), 100000, NULL,
     "  --pp N            pipeline stages N: layers reassigned, send/recv\n"
     "                    inserted, schedule rebuilt (synthesized stores; on a\n"
     "                    forward-only trace with one micro-batch, its layers\n"
     "                    cut into stages with a transfer at each boundary; on\n"
     "                    a DP-1 training step of one micro-batch, its forward\n"
     "                    and backward layers into 1F1B stages: give --model\n"
     "                    and --micro-batch when its layers have no TP\n"
     "                    all-reduce)\n", LSIM_WI_RS_SYNTH},
    {"--schedule", NULL, "1f1b or interleaved:V", 0, 0, LSIM_WI_OPT_FN, 0, 0, opt_schedule,
     "  --schedule S      1f1b or interleaved:V (default: the source's)\n", LSIM_WI_RS_OWN},
    {"--micro-batches", NULL, POS, 0, 0, LSIM_WI_OPT_LONG, OFF(micro_batches), 1000000, NULL,
     "  --micro-batches N micro-batches per pipeline (default: the source's;\n"
     "                    with --dp, a fixed global batch; on a forward-only\n"
     "                    trace, its forward pass once per micro-batch; on a\n"
     "                    training step, its forward and backward in 1F1B order)\n", LSIM_WI_RS_OWN},
};
static const lsim_wi_row ROW_PIPE = {"pipeline", LSIM_WI_ST_PIPE, O_PIPE, NELEM(O_PIPE), 3, lsim_wi_rule_pipeline,
                                     NULL, LSIM_WI_PH_STAGE, 0, NULL, NULL, NULL, args_pipe, changes_pipe, NULL, NULL};

/* the source as read: normalized (collectives matched, clocks aligned),
 * and what is known of it beyond its graphs */
static const lsim_wi_opt O_SOURCE[] = {
    {"--model", NULL, "a model name or file", 0, 0, LSIM_WI_OPT_STR, OFF(model), 0, NULL,
     "  --model M         the source's model shape (built-in name or JSON as for\n"
     "                    lumosim synth; default: the name a synth store carries);\n"
     "                    on a trace with [memory] events, also re-estimates the\n"
     "                    peaks a layer/width/pipeline change would drop\n", LSIM_WI_RS_EDITS},
    {"--micro-batch", NULL, POS, 0, 0, LSIM_WI_OPT_LONG, OFF(micro_batch), 1000000, NULL,
     "  --micro-batch N   the source's micro-batch size (default: from the\n"
     "                    activations' size, else 1)\n", LSIM_WI_RS_EDITS},
    {"--trace-layers", NULL, POS, 0, 1, LSIM_WI_OPT_LONG, OFF(trace_layers), 1000000, NULL,
     "  --trace-layers N  a trace's layers per micro-batch, overriding the count\n"
     "                    found from its repeating kernel structure\n", LSIM_WI_RS_EDITS},
};
static const lsim_wi_row ROW_SOURCE = {"normalize", LSIM_WI_ST_NORM, O_SOURCE, NELEM(O_SOURCE), 0, NULL, NULL,
                                       LSIM_WI_PH_NONE, 0, NULL, NULL, NULL, NULL, NULL,
                                       "the same work on the same GPU", NULL};

static const lsim_wi_row ROW_GRAD = {"grad-buckets", LSIM_WI_ST_GRAD, NULL, 0, 0, NULL, when_grad, LSIM_WI_PH_SOURCE,
                                     3, runs_grad, NULL, apply_grad, NULL, NULL, NULL, memory_grad};

static const lsim_wi_opt O_NET[] = {
    {"--topology", NULL, "a file name", 0, 0, LSIM_WI_OPT_STR, OFF(topo), 0, NULL,
     "  --topology FILE   the network to re-time collectives for\n", LSIM_WI_RS_SYNTH},
    {"--from-topology", NULL, "a file name", 0, 1, LSIM_WI_OPT_STR, OFF(from_topo), 0, NULL,
     "  --from-topology F the source's network (default: --from-gpu's default)\n", LSIM_WI_RS_EDITS},
};
static const lsim_wi_row ROW_NET = {"network", LSIM_WI_ST_NET, O_NET, NELEM(O_NET), 0, NULL, when_net, LSIM_WI_PH_GPU,
                                    2, NULL, NULL, apply_net, args_net, NULL, NULL, NULL};

static const lsim_wi_opt O_GPU[] = {
    {"--gpu", NULL, "a GPU name or file", 0, 0, LSIM_WI_OPT_STR, OFF(gpu), 0, NULL,
     "  --gpu G           another GPU (built-in name or JSON): compute kernels\n"
     "                    re-timed, and its default network unless --topology\n", LSIM_WI_RS_SYNTH},
    {"--from-gpu", NULL, "a GPU name or file", 0, 1, LSIM_WI_OPT_STR, OFF(from_gpu), 0, NULL,
     "  --from-gpu G      the GPU the source ran on (default: the traces'\n"
     "                    deviceProperties; needed with --gpu without them)\n", LSIM_WI_RS_EDITS},
};
static const lsim_wi_row ROW_GPU = {"gpu", LSIM_WI_ST_GPU, O_GPU, NELEM(O_GPU), 0, NULL, when_gpu, LSIM_WI_PH_GPU, 3,
                                    NULL, NULL, apply_gpu, args_gpu, NULL, NULL, memory_gpu};

static const lsim_wi_opt O_SLOW[] = {
    {"--slow-gpu", NULL, "RANK:FACTOR", 1, 0, LSIM_WI_OPT_FN, 0, 0, opt_slow,
     "  --slow-gpu R:F    GPU rank R's compute kernels last F times as long\n"
     "                    (repeatable, once per GPU; any other option once)\n"
     "                    (F in 0.001..1000)\n", LSIM_WI_RS_EDITS},
};
static const lsim_wi_row ROW_SLOW = {"slow-gpu", LSIM_WI_ST_SLOW, O_SLOW, NELEM(O_SLOW), 8, lsim_wi_rule_slow_gpu,
                                     when_slow, LSIM_WI_PH_GPU, 4, NULL, reps_slow, apply_slow, args_slow, NULL,
                                     NULL, NULL};

static const lsim_wi_opt O_JITTER[] = {
    {"--jitter", NULL, "a relative std-dev or 'trace'", 0, 0, LSIM_WI_OPT_FN, 0, 0, opt_jitter,
     "  --jitter S|trace  per-kernel noise: relative std-dev S (0..10), or each\n"
     "                    kernel name's own spread in the source\n", LSIM_WI_RS_EDITS},
    {"--seed", NULL, POS, 0, 0, LSIM_WI_OPT_LONG, OFF(seed), 2147483647L, NULL,
     "  --seed N          noise seed (default 1)\n", LSIM_WI_RS_NONE},
};
static const lsim_wi_row ROW_JITTER = {"jitter", LSIM_WI_ST_JITTER, O_JITTER, NELEM(O_JITTER), 0, NULL, when_jitter,
                                       LSIM_WI_PH_GPU, 5, NULL, NULL, apply_jitter, args_jitter, NULL, NULL, NULL};

static const lsim_wi_row ROW_SYNTH_OPTS = {.name = "synth-options", .step = -1, .check_at = 4,
                                           .check = lsim_wi_rule_synth_options};
static const lsim_wi_row ROW_JOB_SIZE = {.name = "job-size", .step = -1, .check_at = 6, .check = lsim_wi_rule_job_size};

/* reading and writing the stores */
static const lsim_wi_opt O_STORE[] = {
    {"--batch", NULL, POS, 0, 1, LSIM_WI_OPT_LONG, OFF(batch), 1000000, NULL,
     "  --batch N         source GPUs read at a time while identifying (64)\n", LSIM_WI_RS_NONE},
    {"--no-shared-structure", NULL, NULL, 0, 0, LSIM_WI_OPT_SWITCH, OFF(no_share), 0, NULL,
     "  --no-shared-structure  write every GPU's node, edge and string rows, even\n"
     "                    where a GPU's equal those of its pipeline stage's\n"
     "                    first GPU (docs/hdf5-schema.md, \"Shared structure\")\n", LSIM_WI_RS_NONE},
    {"-o", "--output", "a file name", 0, 0, LSIM_WI_OPT_STR, OFF(out), 0, NULL,
     "  -o NEW.h5         the graph store to write\n", LSIM_WI_RS_NONE},
};
static const lsim_wi_row ROW_STORE = {.name = "store", .step = -1, .opts = O_STORE, .nopts = NELEM(O_STORE)};

/* The rows in files of their own, declared here (a new what-if's one line
 * beside its row's name below): nothing else names them. */
extern const lsim_wi_row lsim_wi_row_resynth; /* --ep, --etp, --cp, --fsdp, --resynth (whatif_resynth.c) */

/* The table, in --help order. A new what-if: its row's name here. */
static const lsim_wi_row *const ROWS[] = {
    &ROW_IDENTIFY, &ROW_DP,   &ROW_TP,  &ROW_LAYERS, &ROW_SHAPE,  &ROW_PIPE, &lsim_wi_row_resynth, &ROW_SOURCE, &ROW_GRAD,
    &ROW_NET,      &ROW_GPU,  &ROW_SLOW, &ROW_JITTER, &ROW_SYNTH_OPTS, &ROW_JOB_SIZE, &ROW_STORE,
};

size_t lsim_wi_nrows(void) { return NELEM(ROWS); }
const lsim_wi_row *lsim_wi_row_at(size_t i) { return i < NELEM(ROWS) ? ROWS[i] : NULL; }

const lsim_wi_row *lsim_wi_row_of_step(int s)
{
    for (size_t i = 0; i < NELEM(ROWS); i++)
        if (ROWS[i]->step == s) return ROWS[i];
    return NULL;
}

size_t lsim_wi_nopts(void)
{
    size_t n = 0;
    for (size_t i = 0; i < NELEM(ROWS); i++) n += ROWS[i]->nopts;
    return n;
}

const lsim_wi_opt *lsim_wi_opt_at(size_t k)
{
    for (size_t i = 0; i < NELEM(ROWS); i++) {
        if (k < ROWS[i]->nopts) return &ROWS[i]->opts[k];
        k -= ROWS[i]->nopts;
    }
    return NULL;
}

void lsim_wi_request_init(lsim_wi_request *rq)
{
    memset(rq, 0, sizeof *rq);
    rq->seed = 1;
    rq->batch = 64;
}

int lsim_wi_opt_given(const lsim_wi_request *rq, size_t i) { return i < 64 && (rq->given >> i & 1); }

int lsim_wi_opt_apply(lsim_wi_request *rq, const lsim_wi_opt *o, const char *v, lsim_err *err)
{
    char *base = (char *)rq + o->off;
    for (size_t i = 0; i < lsim_wi_nopts() && i < 64; i++) /* not found: an option's inner value (--schedule's V) */
        if (lsim_wi_opt_at(i) == o) rq->given |= (uint64_t)1 << i;
    switch (o->kind) {
    case LSIM_WI_OPT_SWITCH: *(int *)(void *)base = 1; return 0;
    case LSIM_WI_OPT_STR: *(const char **)(void *)base = v; return 0;
    case LSIM_WI_OPT_FN: return o->parse(rq, v, err);
    default: break;
    }
    char *e;
    errno = 0;
    long x = strtol(v, &e, 10);
    if (errno || *e || e == v || x <= 0 || x > o->max)
        return lsim_err_set(err, LSIM_EARG, "%s needs a positive integer up to %ld (got '%.40s%s')", o->name, o->max,
                            v, strlen(v) > 40 ? "..." : "");
    *(long *)(void *)base = x;
    return 0;
}

/* ------------------------------------------------------------ --help */

/* Words w[0..n) as lines of at most width columns, the first line after
 * `first`, the others after `indent` spaces. */
static void put_wrapped(FILE *f, const char *first, int indent, int width, const char *const *w, size_t n)
{
    int col = fprintf(f, "%s", first), space = first[0] != 0;
    for (size_t i = 0; i < n; i++) {
        int len = (int)strlen(w[i]);
        if (col > indent && col + space + len > width) {
            fprintf(f, "\n%*s", indent, "");
            col = indent, space = 0;
        }
        col += fprintf(f, "%s%s", space ? " " : "", w[i]);
        space = 1;
    }
    fputc('\n', f);
}

/* The synopsis token of option o ("[--dp N]"): its name and, when it takes
 * a value, the word its help names the value by. */
static void synopsis_token(const lsim_wi_opt *o, char *buf, size_t cap)
{
    const char *h = o->help + 2 + strlen(o->name);
    int len = 0;
    if (o->kind != LSIM_WI_OPT_SWITCH && *h == ' ') {
        h++;
        while (h[len] && h[len] != ' ' && h[len] != '\n') len++;
    }
    if (!strcmp(o->name, "-o")) snprintf(buf, cap, "%s%s%.*s", o->name, len ? " " : "", len, h);
    else snprintf(buf, cap, "[%s%s%.*s]%s", o->name, len ? " " : "", len, h, o->repeat ? "..." : "");
}

void lsim_wi_put_usage(FILE *f)
{
    size_t n = lsim_wi_nopts(), nw = 0;
    char tok[64][48];
    const char *w[64] = {0};
    for (size_t k = 0; k < n && nw < 64; k++) {
        const lsim_wi_opt *o = lsim_wi_opt_at(k);
        if (!strcmp(o->name, "--identify")) continue; /* a line of its own */
        synopsis_token(o, tok[nw], sizeof tok[nw]);
        w[nw] = tok[nw];
        nw++;
    }
    put_wrapped(f, "usage: lumosim whatif JOB.h5", 21, 100, w, nw);
    fputs("       lumosim whatif JOB.h5 --identify\n"
          "\n"
          "Transforms the job in the graph store JOB.h5 (lumosim build or synth) and\n"
          "writes the transformed job to NEW.h5 for `lumosim sim`. What changed (nodes\n"
          "added, removed, re-timed per kind) is printed as JSON and kept in NEW.h5\n"
          "(root attribute whatif; lumosim info shows it). docs/whatif.md describes\n"
          "each transformation.\n"
          "\n",
          f);
    for (size_t k = 0; k < n; k++) fputs(lsim_wi_opt_at(k)->help, f);
    /* the ranges: the integer options grouped by their bound, in table order */
    char rng[64][64];
    size_t nr = 0;
    for (size_t k = 0; k < n && nr < 64; k++) {
        const lsim_wi_opt *o = lsim_wi_opt_at(k);
        if (o->kind != LSIM_WI_OPT_LONG) continue;
        int dup = 0;
        for (size_t j = 0; j < k; j++) dup |= lsim_wi_opt_at(j)->kind == LSIM_WI_OPT_LONG && lsim_wi_opt_at(j)->max == o->max;
        if (dup) continue;
        for (size_t j = k; j < n && nr < 63; j++) {
            const lsim_wi_opt *q = lsim_wi_opt_at(j);
            if (q->kind != LSIM_WI_OPT_LONG || q->max != o->max) continue;
            int last = 1;
            for (size_t m = j + 1; m < n; m++) last &= !(lsim_wi_opt_at(m)->kind == LSIM_WI_OPT_LONG && lsim_wi_opt_at(m)->max == o->max);
            if (last) snprintf(rng[nr++], sizeof rng[0], "%s 1..%ld;", q->name, o->max);
            else snprintf(rng[nr++], sizeof rng[0], "%s,", q->name);
        }
    }
    const char *rw[80] = {0};
    size_t nrw = 0;
    static const char *const HEAD[] = {"Ranges", "(outside:", "exit", "2):"};
    for (size_t i = 0; i < NELEM(HEAD); i++) rw[nrw++] = HEAD[i];
    for (size_t i = 0; i < nr && nrw < 70; i++) rw[nrw++] = rng[i];
    /* the other options' ranges are their parsers' (whatif.h) */
    static const char *const TAIL[] = {"--slow-gpu", "F", "0.001..1000;", "--jitter", "S", "0..10.", "The",
                                       "result",     "is", "sized",       "first:",   "one", "that", "would",
                                       "not",        "fit", "in",          "memory",   "(LUMOSIM_MEM_LIMIT)",
                                       "is",         "refused", "before",  "any",      "work."};
    for (size_t i = 0; i < NELEM(TAIL) && nrw < 80; i++) rw[nrw++] = TAIL[i];
    fputc('\n', f);
    put_wrapped(f, "", 0, 72, rw, nrw);
    fputs("\n"
          "A trace's own memory figures ([memory] events) follow each new GPU:\n"
          "carried by --dp (from DP 1 plus DDP's gradient buckets), the network,\n"
          "--slow-gpu and --jitter; carried onto the new GPU's memory by --gpu (a\n"
          "peak past it: warning: OOM); dropped, with the reason, by --layers, --tp,\n"
          "--hidden, --ffn, --pp, --schedule, --micro-batches unless --model\n"
          "re-estimates them (docs/memory.md, \"A traced job after a what-if\").\n",
          f);
}
