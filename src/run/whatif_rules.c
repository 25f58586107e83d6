/* The what-if plan's feasibility rules (whatif_plan.h): an ordered table of
 * pure checks on (request, facts). Each rule refuses with one line naming
 * what the source lacks and what to do instead, or records part of the
 * plan. The order is the order the messages have always come in: a request
 * that breaks two rules is told about the first. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lumosim/memlimit.h"
#include "lumosim/whatif_steps.h"


int lsim_wi_ident_layers(const lsim_wi_ident *id)
{
    if (id->layer_source == LSIM_WI_LAYERS_ANNOTATIONS) return id->layers_per_chunk;
    if (id->layer_source == LSIM_WI_LAYERS_KERNELS && id->klayers.found) return id->klayers.layers;
    return 0;
}

int lsim_wi_ident_runs(const lsim_wi_ident *id)
{
    return id->layer_source == LSIM_WI_LAYERS_KERNELS ? id->klayers.runs : 1;
}

/* every GPU synthesized (layer tags): what the pipeline re-emission needs,
 * which also brings DP and TP up from width 1 */
static int all_tagged(const lsim_wi_facts *f)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->ids[i].layer_source != LSIM_WI_LAYERS_TAGS) return 0;
    return 1;
}

static int all_forward_only(const lsim_wi_facts *f)
{
    int fwd = 1;
    for (size_t i = 0; i < f->n; i++) fwd &= f->ids[i].forward_only != 0;
    return fwd;
}

/* kernel roles for --tp / --hidden / --ffn: tags, or a found kernel structure */
static int has_roles(const lsim_wi_ident *id)
{
    return id->layer_source == LSIM_WI_LAYERS_TAGS || id->klayers.found || id->training.layers_cut;
}

/* Size before work, as synth checks its configuration before it makes
 * anything: the graphs a transformation holds at once (`held` of them, with
 * nodes, edges and strings in all) against this process's memory
 * (memlimit.h), and the largest new GPU (gpu_nodes) against the 2^32 - 1
 * nodes a graph can number. Estimates, in doubles: --layers 1000000 or
 * --micro-batches 100000 once grew past 4 GB before failing. */
int lsim_wi_size_check(const char *out, double held, double nodes, double edges, double strings, double gpu_nodes,
                      lsim_err *err)
{
    if (!(gpu_nodes <= (double)UINT32_MAX))
        return lsim_err_set(err, LSIM_EARG,
                            "%s: the transformed job would have about %.3g nodes on one GPU, more than a graph can "
                            "number (2^32 - 1)",
                            out, gpu_nodes);
    double x[4] = {held, nodes, edges, strings};
    uint64_t u[4];
    for (int i = 0; i < 4; i++) u[i] = x[i] >= 1e18 ? (uint64_t)1e18 : x[i] > 0 ? (uint64_t)x[i] : 0;
    char what[LSIM_ERR_LEN];
    snprintf(what, sizeof what, "%s (the transformed GPUs held at once)", out ? out : "the new store");
    return lsim_mem_check_graphs(what, u[0], u[1], u[2], u[3], err);
}

/* --dp: a new width. From DP 1, a backward pass needs gradient all-reduces
 * inserted: synthesized stores say where by their layer tags (the pipeline
 * is re-emitted); a traced step by its AccumulateGrad sizes, bucketed as
 * DDP does (the grad-buckets step) -- unless it was cut to DP 1 from a
 * larger job and kept its buckets in a group of one (lsim_wi_relayout),
 * which are widened as they are. */
static int refuse_sharded(const lsim_wi_facts *f, size_t i, const char *what, lsim_err *err);

int lsim_wi_rule_dp(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err)
{
    if (!rq->dp || rq->dp == f->L.dp) return 0;
    /* a sharded step's collectives are not DDP's buckets: DP from 1 would
     * add buckets it does not run, and a new width would leave each
     * rank's shard (its optimizer step, its all-gathers) as traced */
    for (size_t i = 0; i < f->n; i++) {
        int rc0 = refuse_sharded(f, i, "--dp", err);
        if (rc0) return rc0;
    }
    int dp_groups = 0;
    for (size_t i = 0; i < f->n; i++) dp_groups |= f->ids[i].colls[LSIM_WI_DP] > 0;
    if (f->L.dp == 1 && !f->ids[0].forward_only && !(dp_groups && !all_tagged(f))) {
        /* forward-only: no gradient all-reduce to replicate */
        if (!all_tagged(f)) {
            for (size_t i = 0; i < f->n; i++)
                if (!f->ids[i].training.ddp_buckets)
                    return lsim_err_set(err, LSIM_EARG,
                                        "%s: rank %zu: --dp %ld: the source has data-parallel width 1 and a backward "
                                        "pass, but no parameter gradient sizes (AccumulateGrad ops with Input Dims: "
                                        "profile with record_shapes=True), so the gradient buckets to insert are "
                                        "unknown; start from such a trace or one with DP >= 2",
                                        f->in, i, rq->dp);
            d->used[LSIM_WI_ST_GRAD] = 1;
        } else {
            d->dp_from1 = 1;
        }
    }
    d->Ln.dp = (int)rq->dp;
    d->used[LSIM_WI_ST_DP] = 1;
    return 0;
}

/* --tp: a new width. From TP 1 there is no tensor-parallel all-reduce to
 * split a layer's work with, except where synthesis placed them (tags). */
int lsim_wi_rule_tp(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err)
{
    if (!rq->tp || rq->tp == f->L.tp) return 0;
    int train = f->n > 0;
    for (size_t i = 0; i < f->n; i++) train &= f->ids[i].training.layers_cut;
    if (f->L.tp == 1 && train && !all_tagged(f)) {
        /* a traced training step: the roles say where Megatron's
         * all-reduces go (lsim_wi_train_tp) */
        for (size_t i = 0; i < f->n; i++) {
            int rc0 = refuse_sharded(f, i, "--tp", err);
            if (rc0) return rc0;
        }
        if (!rq->model || rq->micro_batch <= 0)
            return lsim_err_set(err, LSIM_EARG,
                                "%s: --tp %ld on a training step of TP 1: give --model (its shape) and --micro-batch "
                                "(sequences per micro-batch): they size the tensor-parallel all-reduces inserted",
                                f->in, rq->tp);
        d->tp_train = 1;
    } else if (f->L.tp == 1) {
        if (!all_tagged(f))
            return lsim_err_set(err, LSIM_EARG,
                                "--tp %ld: the source has tensor-parallel width 1, so there is no tensor-parallel "
                                "all-reduce to split its layers' work with (lumosim inserts them only in "
                                "synthesized stores and in traced training steps with layer annotations); start "
                                "from a trace with TP >= 2",
                                rq->tp);
        d->tp_from1 = 1;
    }
    d->Ln.tp = (int)rq->tp;
    d->used[LSIM_WI_ST_DP] = 1;
    d->name[LSIM_WI_ST_DP] = "tp";
    return 0;
}

/* The trace pipeline's memory: each new stage GPU is its source GPU's nodes
 * scaled by the new micro-batches and its share of the (new) layers; the
 * source column, a new stage and a clone held at once. */
static int trace_pipe_size(const lsim_wi_request *rq, const lsim_wi_facts *f, const lsim_wi_decision *d, lsim_err *err)
{
    const lsim_wi_layout *L = &f->L;
    double tl = lsim_wi_ident_layers(&f->ids[0]) > 0 ? lsim_wi_ident_layers(&f->ids[0]) : 1;
    double mf = d->src_m > 0 ? (double)d->pcfg.micro_batches / d->src_m : 1;
    double lf = (rq->layers ? (double)rq->layers / tl : 1.0) * L->pp / (d->pcfg.pp > 0 ? d->pcfg.pp : 1);
    double g1 = (mf > 1 ? mf : 1) * (lf > 1 ? lf : 1), hn = 0, he = 0, hs = 0, big = 0;
    size_t per0 = (size_t)L->tp * (size_t)L->dp;
    for (size_t i = 0; i < per0 && i < f->n; i++) {
        double g = (double)f->size[i].nodes * g1;
        hn += (double)f->size[i].nodes + g, he += (double)f->size[i].edges * (1 + g1);
        hs += (double)f->size[i].strings * (1 + g1);
        if (g > big) big = g;
    }
    return lsim_wi_size_check(rq->out, 2.0 * (double)per0 + 1, hn + big, he + 1.8 * big, hs, big, err);
}

/* --pp, --schedule, --micro-batches (and DP or TP from width 1): the
 * pipeline is rebuilt, from a trace whose layers were recovered on every
 * rank (the same structure everywhere), else from layer tags. */
int lsim_wi_rule_pipeline(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err)
{
    d->pipe = rq->pp || rq->vstages || rq->micro_batches || d->dp_from1 || d->tp_from1;
    if (!d->pipe) return 0;
    const lsim_wi_ident *ids = f->ids;
    d->tpipe = 1;
    for (size_t i = 0; i < f->n; i++)
        if (!lsim_wi_ident_layers(&ids[i])) d->tpipe = 0;
    for (size_t i = 0; i < f->n && !d->tpipe; i++)
        if (ids[i].layer_source != LSIM_WI_LAYERS_TAGS)
            return lsim_err_set(err, LSIM_EARG,
                                "%s: rank %zu: layer structure unknown (%s): --pp, --schedule and --micro-batches "
                                "need every kernel tagged by layer and micro-batch, as lumosim synth writes them "
                                "(L12.mb3.fwd.qkv_gemm), or a trace with layer annotations or layers that repeat "
                                "between tensor-parallel all-reduces, on every rank (see whatif --identify)",
                                f->in, i,
                                ids[i].layer_source == LSIM_WI_LAYERS_KERNELS
                                    ? ids[i].klayers.why
                                    : "no layer tags, annotations or tensor-parallel all-reduces");
    d->pcfg.pp = rq->pp ? (int)rq->pp : f->L.pp;
    d->pcfg.trace_layers = (int)rq->trace_layers;
    d->pcfg.dp_to = d->Ln.dp;
    d->pcfg.tp_to = d->Ln.tp;
    d->pcfg.vstages = rq->vstages ? (int)rq->vstages : (ids[0].nchunks > 0 ? ids[0].nchunks : 1);
    d->Ln.pp = d->pcfg.pp;
    d->used[LSIM_WI_ST_PIPE] = 1;
    if (!d->tpipe) return 0; /* a tagged source: checked once pass 2 has read it (lsim_wi_pipe_check) */
    for (size_t i = 1; i < f->n; i++)
        if (lsim_wi_ident_layers(&ids[i]) != lsim_wi_ident_layers(&ids[0]) ||
            lsim_wi_ident_runs(&ids[i]) != lsim_wi_ident_runs(&ids[0]))
            return lsim_err_set(err, LSIM_EARG,
                                "%s: rank %zu: %d layers x %d forward runs recovered, rank 0 has %d x %d: --pp needs "
                                "the same structure on every rank",
                                f->in, i, lsim_wi_ident_layers(&ids[i]), lsim_wi_ident_runs(&ids[i]),
                                lsim_wi_ident_layers(&ids[0]), lsim_wi_ident_runs(&ids[0]));
    d->src_m = lsim_wi_ident_runs(&ids[0]);
    /* a training step without TP all-reduces: the activations from the
     * model's shape and the micro-batch the user names */
    if (f->have_model && rq->micro_batch > 0)
        d->pcfg.act_bytes = (int64_t)rq->micro_batch * f->from_model.seq * f->from_model.hidden *
                            (f->from_model.elem_bytes > 0 ? f->from_model.elem_bytes : 2);
    d->pcfg.micro_batches = rq->micro_batches ? (int)rq->micro_batches : d->src_m;
    d->grad_per_stage = !all_forward_only(f) && d->used[LSIM_WI_ST_GRAD];
    /* a rank of a data-parallel job on its own: its buckets run over the
     * world group, whose other members are not in the store */
    for (size_t i = 0; i < f->n && !all_forward_only(f); i++)
        if (f->ids[i].training.layers_cut && f->ids[i].colls[LSIM_WI_WORLD] > 0)
            return lsim_err_set(err, LSIM_EARG,
                                "%s: rank %zu: --pp on a data-parallel training step (%llu collectives over the world "
                                "group, whose other ranks are not in the store): --pp takes a DP-1 step (whatif JOB "
                                "--dp 1 on the whole job cuts one; --pp with --dp then inserts DDP's buckets per stage)",
                                f->in, i, (unsigned long long)f->ids[i].colls[LSIM_WI_WORLD]);
    int rc = lsim_wi_trace_pipe_check(f->in, all_forward_only(f), &f->L, &d->pcfg,
                                      rq->layers ? (int)rq->layers : lsim_wi_ident_layers(&ids[0]), d->src_m, err);
    if (rc) return rc;
    return trace_pipe_size(rq, f, d, err);
}

/* The structural transforms re-emit or re-time lumosim synth's default
 * graph (its kernel roles, collectives and buckets); a store synthesized
 * with other options is refused rather than transformed into something
 * synthesis would not make. Data-parallel width is a copy, except where the
 * options make a GPU depend on DP (the distributed optimizer's and FSDP's
 * shards, host stalls' draws, context parallelism's DP x CP numbering).
 * The one test and message of the rule, on what the request changes: from
 * pass 1's decision (lsim_wi_rule_synth_options) or from the store's
 * metadata before any graph is read (lsim_wi_rule_synth_options_meta). */
static const char *synth_options_what(const lsim_wi_request *rq, const char *so, int tp_changes, int pipe,
                                      int dp_changes)
{
    if (!so[0]) return NULL;
    return rq->layers                                    ? "--layers"
           : (rq->hidden || rq->ffn || tp_changes)       ? "--tp, --hidden and --ffn"
           : pipe                                        ? "--pp, --schedule, --micro-batches (and DP or TP from width 1)"
           : dp_changes && (strstr(so, "distopt") || strstr(so, "stalls") || strstr(so, "dpcost") ||
                            strstr(so, "fsdp=") || strstr(so, "cp="))
               ? "--dp"
               : NULL;
}

static int synth_options_refuse(const char *in, const char *so, const char *what, lsim_err *err)
{
    return lsim_err_set(err, LSIM_EARG,
                        "%s: synthesized with non-default options (%s), which %s cannot carry over by editing the graphs: "
                        "add --resynth to synthesize the job again with the new layout from the store's recorded "
                        "arguments (network, GPU, straggler and noise what-ifs work on it as it is)",
                        in, so, what);
}

int lsim_wi_rule_synth_options(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err)
{
    const char *so = f->sopts ? f->sopts : "";
    const char *what = synth_options_what(rq, so, d->Ln.tp != f->L.tp, d->pipe, d->used[LSIM_WI_ST_DP]);
    return what ? synth_options_refuse(f->in, so, what, err) : 0;
}

int lsim_wi_rule_synth_options_meta(const lsim_wi_request *rq, const char *sopts, const lsim_wi_layout *L, lsim_err *err)
{
    /* What pass 1's rules dp, tp and pipeline decide on a synthesized
     * (tagged) store, where none of them refuses: the pipeline is rebuilt
     * for --pp, --schedule, --micro-batches, and for DP from width 1 unless
     * the job is forward-only, which only the graphs tell (left to pass 1). */
    int tp_changes = rq->tp && L && rq->tp != L->tp;
    int dp_changes = rq->dp && L && rq->dp != L->dp;
    int pipe = rq->pp || rq->vstages || rq->micro_batches;
    int unknown = !rq->layers && !rq->hidden && !rq->ffn &&
                  ((rq->tp && !L) || (!pipe && rq->dp && (!L || (dp_changes && L->dp == 1))));
    const char *what = unknown ? NULL : synth_options_what(rq, sopts, tp_changes, pipe, tp_changes || dp_changes);
    return what ? synth_options_refuse(rq->in, sopts, what, err) : 0;
}

/* A traced training step that shards its parameters or optimizer state
 * (FSDP, ZeRO, Megatron's distributed optimizer: all-gathers and
 * reduce-scatters across the data-parallel ranks): what (a structural
 * what-if) would leave those collectives as they are, so it is refused. */
static int refuse_sharded(const lsim_wi_facts *f, size_t i, const char *what, lsim_err *err)
{
    static const char *const DPS[] = {"none", "ddp", "sharded_optimizer", "fsdp", "mixed"};
    int s = f->ids[i].training.dp_strategy;
    if (!f->ids[i].training.layers_cut || (s != LSIM_WI_DPS_FSDP && s != LSIM_WI_DPS_SHARDED_OPT && s != LSIM_WI_DPS_MIXED))
        return 0;
    return lsim_err_set(err, LSIM_EARG,
                        "%s: rank %zu: %s: the step shards its parameters or optimizer state "
                        "(training.data_parallel.strategy %s: all-gathers and reduce-scatters across the data-parallel "
                        "ranks), whose per-unit collectives are not re-cut yet (DDP steps are)",
                        f->in, i, what, DPS[s]);
}

/* --tp, --hidden, --ffn, --model (and a tagged pipeline): each kernel's role
 * in its layer, and the source's model shape; the new shape must divide. */
int lsim_wi_rule_shape(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err)
{
    if (!(d->Ln.tp != f->L.tp || rq->hidden || rq->ffn || rq->model || (d->pipe && !d->tpipe))) return 0;
    for (size_t i = 0; i < f->n; i++)
        if (f->ids[i].layer_source != LSIM_WI_LAYERS_TAGS && ((d->pipe && !d->tpipe) || !has_roles(&f->ids[i])))
            return lsim_err_set(err, LSIM_EARG,
                                "%s: rank %zu: layer structure unknown (%s): --tp, --hidden and --ffn need each "
                                "kernel's role in its layer, which lumosim synth's node tags give "
                                "(L12.mb3.fwd.qkv_gemm) or a trace's repeating kernel structure (whatif --identify)",
                                f->in, i,
                                f->ids[i].layer_source == LSIM_WI_LAYERS_ANNOTATIONS
                                    ? "layer annotations found, kernel roles not"
                                    : "no layer tags or annotations");
    for (size_t i = 0; i < f->n && (rq->hidden || rq->ffn); i++) {
        int rc0 = refuse_sharded(f, i, "--hidden and --ffn", err);
        if (rc0) return rc0;
    }
    if (!f->have_model)
        return lsim_err_set(err, f->model_rc ? f->model_rc : LSIM_EARG, "%s",
                            f->model_err[0] ? f->model_err : "the source's model shape is unknown");
    d->Mfrom = f->from_model;
    d->Mto = d->Mfrom;
    if (rq->hidden) d->Mto.hidden = (int)rq->hidden;
    if (rq->ffn) d->Mto.ffn = (int)rq->ffn;
    d->Mto.tp = d->Ln.tp;
    int rc = lsim_wi_model_check(&d->Mto, "the transformed job", err);
    if (rc) return rc;
    d->used[LSIM_WI_ST_SHAPE] = memcmp(&d->Mto, &d->Mfrom, sizeof d->Mto) != 0;
    return 0;
}

int lsim_wi_rule_job_size(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err)
{
    const lsim_wi_layout *Ln = &d->Ln;
    if ((uint64_t)Ln->tp * (uint64_t)Ln->pp * (uint64_t)Ln->dp > 100000000ull)
        return lsim_err_set(err, LSIM_EARG, "--dp %ld: a job of more than 10^8 GPUs", rq->dp);
    d->ngpu_out = (size_t)Ln->tp * (size_t)Ln->pp * (size_t)Ln->dp;
    return 0;
}

/* --layers: each source GPU's layer nodes copied layers / old times; a
 * stage's source GPUs, their new graphs, a normalized copy and a clone
 * held at once. */
static int layers_size(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_err *err)
{
    const lsim_wi_ident *ids = f->ids;
    int V = ids[0].nchunks;
    double r = (double)rq->layers / (double)((long)ids[0].layers_per_chunk * V * f->L.pp), worst = 0, big = 0;
    double wn = 0, we = 0, ws = 0;
    size_t per0 = (size_t)f->L.tp * (size_t)f->L.dp;
    for (size_t p0 = 0; per0 && p0 < f->n; p0 += per0) {
        double hn = 0, he = 0, hs = 0;
        for (size_t i = p0; i < p0 + per0 && i < f->n; i++) {
            double n0 = (double)f->size[i].nodes, g = n0 + (r > 1 ? (double)ids[i].layer_nodes * (r - 1) : 0);
            double gf = n0 > 0 ? g / n0 : 1;
            hn += n0 + 2 * g, he += (double)f->size[i].edges * (1 + 2 * gf);
            hs += (double)f->size[i].strings * (1 + 2 * gf);
            if (g > big) big = g;
        }
        if (hn > worst) worst = hn, wn = hn, we = he, ws = hs;
    }
    return lsim_wi_size_check(rq->out, 2.0 * (double)per0 + 1, wn, we, ws, big, err);
}

/* --layers N: tagged (synth) graphs, or traces whose layers were recovered
 * from the kernel structure, the same on every rank (their copies'
 * collectives must pair up), forward-only; N divisible by PP x V. */
int lsim_wi_rule_layers(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err)
{
    if (!rq->layers) return 0;
    int rc0;
    const lsim_wi_ident *ids = f->ids;
    for (size_t i = 0; i < f->n; i++) {
        const lsim_wi_kernel_layers *k = &ids[i].klayers;
        int kern = lsim_wi_ident_layers(&ids[i]) > 0;
        if (ids[i].layer_source != LSIM_WI_LAYERS_TAGS && !kern)
            return lsim_err_set(err, LSIM_EARG,
                                "%s: rank %zu: layer structure unknown (%s): --layers needs graphs tagged by layer, "
                                "as lumosim synth writes them, a trace with layer annotations (record_function "
                                "\"layer[i]\"), or one whose layers repeat between tensor-parallel all-reduces (see "
                                "whatif --identify; --trace-layers N)",
                                f->in, i,
                                ids[i].layer_source == LSIM_WI_LAYERS_KERNELS ? k->why : "no layer tags or annotations");
        /* a training step: its forward layers from annotations, their
         * backward by autograd's Sequence numbers (layers.c train_cut) */
        if (kern && !ids[i].forward_only &&
            !(ids[i].layer_source == LSIM_WI_LAYERS_ANNOTATIONS && ids[i].training.known &&
              ids[i].training.kernels[LSIM_PHASE_BACKWARD] > 0))
            return lsim_err_set(err, LSIM_EARG,
                                "%s: rank %zu: --layers: the trace has backward-pass or optimizer kernels, whose "
                                "layers are recovered only from layer annotations (record_function \"layers.i\") "
                                "and autograd's Sequence numbers; %s",
                                f->in, i,
                                ids[i].layer_source != LSIM_WI_LAYERS_ANNOTATIONS ? "this trace has no layer annotations"
                                                                                  : "this store has no training phases");
        /* FSDP's per-unit collectives go with their layers (train_cut);
         * a sharded optimizer's or a mixed step's do not */
        if (f->ids[i].training.dp_strategy != LSIM_WI_DPS_FSDP && (rc0 = refuse_sharded(f, i, "--layers", err)))
            return rc0;
        if (kern && (ids[0].layer_source != ids[i].layer_source ||
                     lsim_wi_ident_layers(&ids[i]) != lsim_wi_ident_layers(&ids[0]) ||
                     lsim_wi_ident_runs(&ids[i]) != lsim_wi_ident_runs(&ids[0])))
            return lsim_err_set(err, LSIM_EARG,
                                "%s: rank %zu: %d layers x %d forward runs recovered, rank 0 has %d x %d: --layers "
                                "needs the same structure on every rank",
                                f->in, i, lsim_wi_ident_layers(&ids[i]), lsim_wi_ident_runs(&ids[i]),
                                lsim_wi_ident_layers(&ids[0]), lsim_wi_ident_runs(&ids[0]));
    }
    int V = ids[0].nchunks;
    if (V <= 0 || rq->layers % ((long)f->L.pp * V))
        return lsim_err_set(err, LSIM_EARG, "--layers %ld is not divisible by PP x V = %d x %d", rq->layers, f->L.pp, V);
    if (rq->layers == (long)ids[0].layers_per_chunk * V * f->L.pp) return 0;
    d->used[LSIM_WI_ST_LAYERS] = 1;
    return layers_size(rq, f, err);
}

int lsim_wi_rule_slow_gpu(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err)
{
    for (int s = 0; s < rq->nslow; s++)
        if ((size_t)rq->slow_rank[s] >= d->ngpu_out)
            return lsim_err_set(err, LSIM_EARG, "--slow-gpu %d:%g: the %s has ranks 0..%zu", rq->slow_rank[s],
                                rq->slow_f[s], d->used[LSIM_WI_ST_DP] ? "transformed job" : "job", d->ngpu_out - 1);
    return 0;
}

/* The checks are the step table's (whatif_steps.h), in ascending check_at,
 * then "steps": which steps run beyond what the checks decided (the rows'
 * when), which never refuses. Sorted once into a local list: the table is
 * small and the order is part of the interface (search archives keep a
 * refusing rule's index). */
#define MAXRULES 32

static int checks(const lsim_wi_row **out)
{
    int n = 0;
    for (size_t i = 0; i < lsim_wi_nrows(); i++) {
        const lsim_wi_row *r = lsim_wi_row_at(i);
        if (!r->check || n == MAXRULES) continue;
        int j = n++;
        for (; j > 0 && out[j - 1]->check_at > r->check_at; j--) out[j] = out[j - 1];
        out[j] = r;
    }
    return n;
}

int lsim_wi_plan_nrules(void)
{
    const lsim_wi_row *r[MAXRULES];
    return checks(r) + 1;
}

const char *lsim_wi_plan_rule_name(int i)
{
    const lsim_wi_row *r[MAXRULES];
    int n = checks(r);
    return i >= 0 && i < n ? r[i]->name : i == n ? "steps" : NULL;
}

int lsim_wi_plan_check(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err)
{
    const lsim_wi_row *rules[MAXRULES];
    int nr = checks(rules);
    memset(d, 0, sizeof *d);
    for (int s = 0; s < LSIM_WI_ST_N; s++) {
        const lsim_wi_row *r = lsim_wi_row_of_step(s);
        d->name[s] = r ? r->name : "?";
    }
    d->used[LSIM_WI_ST_NORM] = 1;
    d->L = d->Ln = f->L;
    if (!f->n || !f->ids) return lsim_err_set(err, LSIM_EARG, "%s: the store holds no GPU", f->in);
    for (int r = 0; r < nr; r++) {
        int rc = rules[r]->check(rq, f, d, err);
        if (rc) {
            d->refused = rules[r]->name;
            return rc;
        }
    }
    int when[LSIM_WI_ST_N] = {0};
    for (size_t i = 0; i < lsim_wi_nrows(); i++) {
        const lsim_wi_row *r = lsim_wi_row_at(i);
        if (r->when && r->step >= 0) when[r->step] = r->when(rq, f, d);
    }
    for (int s = 0; s < LSIM_WI_ST_N; s++) d->used[s] |= when[s];
    d->Ls = d->L;
    d->Ls.pp = d->Ln.pp;
    return 0;
}

static void put_gclasses(FILE *f, const uint64_t *c)
{
    for (int k = 0; k < LSIM_WI_NGCLASS; k++)
        fprintf(f, "%s\"%s\":%llu", k ? "," : "", lsim_wi_gclass_name(k), (unsigned long long)c[k]);
}

void lsim_wi_put_identify(FILE *f, const lsim_wi_ident *ids, size_t n, const lsim_wi_layout *L, int roles)
{
    uint64_t tot[LSIM_WI_NGCLASS] = {0};
    int src = ids[0].layer_source, same = 1, annot = 0;
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < LSIM_WI_NGCLASS; c++) tot[c] += ids[i].colls[c];
        if (ids[i].layer_source != src) same = 0;
        if (ids[i].annotations > annot) annot = ids[i].annotations;
    }
    fprintf(f, "{\"gpus\":%zu,\"layout\":{\"tp\":%d,\"pp\":%d,\"dp\":%d},\"collectives\":{", n, L->tp, L->pp, L->dp);
    put_gclasses(f, tot);
    fprintf(f, "},\"layers\":{\"source\":\"%s\"", same ? lsim_wi_layer_source_name(src) : "mixed");
    if (same && src == LSIM_WI_LAYERS_TAGS) {
        int tot_l = ids[0].layers_per_chunk * ids[0].nchunks * L->pp;
        fprintf(f, ",\"layers\":%d,\"chunks_per_gpu\":%d,\"layers_per_chunk\":%d", tot_l, ids[0].nchunks,
                ids[0].layers_per_chunk);
    } else if (same && src == LSIM_WI_LAYERS_ANNOTATIONS) {
        int fwd = 1;
        for (size_t i = 0; i < n; i++) fwd &= ids[i].forward_only != 0;
        fprintf(f, ",\"layers\":%d,\"annotated_layers\":%d,\"forward_only\":%s,\"kernel_structure_layers\":%d",
                ids[0].layers_per_chunk, annot, fwd ? "true" : "false", ids[0].klayers.found ? ids[0].klayers.layers : 0);
    } else if (same && src == LSIM_WI_LAYERS_KERNELS)
        lsim_wi_put_kernel_layers(f, ids, n);
    fputc('}', f);
    if (roles) {
        fputs(",\"ranks\":[", f);
        for (size_t i = 0; i < n; i++) {
            int t, d, p;
            lsim_wi_coords(L, (int32_t)i, &t, &d, &p);
            fprintf(f, "%s{\"rank\":%d,\"tp\":%d,\"dp\":%d,\"pp\":%d,\"collectives\":{", i ? "," : "", ids[i].rank, t, d, p);
            put_gclasses(f, ids[i].colls);
            fprintf(f, "},\"layers\":[%d,%d],\"training\":", ids[i].layer_lo, ids[i].layer_hi);
            lsim_wi_put_training(f, &ids[i].training);
            fputc('}', f);
        }
        fputc(']', f);
    }
    fputc('}', f);
}
