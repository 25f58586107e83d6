/* Per-GPU peak memory of a training step from the model shape, layout and
 * options (memest.h; the accounting, its sources and a comparison with the
 * published formulas: docs/memory.md). Pure: no MPI, no I/O. */
#include "lumosim/memest.h"
#include "lumosim/alloc.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- constants, each with its source (none fitted to a configuration) */

/* Bytes per parameter, mixed-precision Adam as Megatron-LM runs it with
 * --bf16: a bf16 model weight (2), a main gradient (fp32 by default: 4;
 * --grad-bytes 2 gives 2), and the optimizer's fp32 master weight and
 * Adam's two moments (4 + 4 + 4 = 12). 2 + 4 + 12 = 18 and, with the
 * distributed optimizer sharding the 12 bytes over d replicas, 6 + 12/d:
 * Megatron-LM docs/source/distrib_optimizer.md ("bf16 param, fp32 grads:
 * 18 | 6 + 12/d") and megatron/training/theoretical_memory_usage.py. With
 * 2-byte gradients, 16 = 2 + 2 + 12: the ZeRO paper's mixed-precision Adam
 * (Rajbhandari et al. 2020, "ZeRO", section 3.1, K = 12). */
#define WEIGHT_BYTES 2.0
#define OPTIM_BYTES 12.0
/* NCCL: one buffer of NCCL_BUFFSIZE (4 MiB by default: NCCL's
 * "Environment Variables" documentation) per channel for each of the two
 * connections a channel makes (receive from the previous rank; the tree's
 * or the other direction's), per communicator the GPU belongs to. Channels:
 * 24, what NCCL opens on an 8-GPU A100 NVSwitch node ("Channel 00/24" in
 * the NCCL_DEBUG=INFO log of NVIDIA/nccl issue #578; NCCL's limit is 32). */
#define NCCL_BUFFSIZE (4.0 * 1024 * 1024)
#define NCCL_CONNS 2.0
#define NCCL_CHANNELS 24.0
/* The CUDA context with PyTorch's CUDA kernels loaded: 666,632,192 bytes
 * with eager module loading, 287,047,680 with lazy loading
 * (pytorch/pytorch PR #86509's measurement); the eager figure, since
 * Megatron loads cuBLAS, NCCL and its fused kernels besides. */
#define CUDA_CONTEXT 666632192.0
/* Temporaries (the optimizer's and the backward's transient buffers): 5 %
 * of the activations, as Megatron-LM's theoretical_memory_usage.py adds
 * ("buffer for optimizer and miscellaneous temporaries (5% overhead)"). */
#define TEMP_FRACTION 0.05
/* Token ids kept for the embedding's backward: int64 (8 bytes) per token
 * (theoretical_memory_usage.py: "8 * seq_length * micro_batch_size"). */
#define TOKEN_ID_BYTES 8.0

/* Bytes a logit holds at the loss's peak on the last stage. Fused (Megatron's
 * vocab-parallel cross entropy, Korthikanti et al. section 4.3): the fp32
 * logits, 4. PyTorch eager on an fp32 copy (torchtitan's
 * cross_entropy(pred.float(), labels)): log_softmax's output is saved for
 * the backward (4), whose peak also holds nll_loss's gradient (4) and
 * log_softmax's gradient (4): 12; its forward peak is 10 (the bf16
 * logits, the fp32 copy, the output), 10 forward-only. */
static double logit_bytes(const lsim_memest_in *in)
{
    if (!in->loss_eager) return 4;
    return in->forward_only ? 10 : 12;
}

void lsim_memest_in_default(lsim_memest_in *in)
{
    memset(in, 0, sizeof *in);
    in->vstages = 1;
    in->grad_bytes = 4;
    in->dropout = 1;
    in->embed_head = 1;
}

int lsim_memest_check(const lsim_memest_in *in, lsim_err *err)
{
    /* Why: every figure below divides by these; a bad layout gives nonsense,
     * so refuse it with the numbers named rather than estimate it. */
    if (in->layers <= 0 || in->hidden <= 0 || in->ffn <= 0 || in->heads <= 0 || in->head_dim <= 0 || in->seq <= 0 ||
        in->vocab <= 0)
        return lsim_err_set(err, LSIM_EARG,
                            "memory estimate: model sizes must be positive (layers %d, hidden %d, ffn %d, heads %d, "
                            "head dim %d, seq %d, vocab %d)",
                            in->layers, in->hidden, in->ffn, in->heads, in->head_dim, in->seq, in->vocab);
    if (!(in->expert_load >= 0) || isinf(in->expert_load))
        return lsim_err_set(err, LSIM_EARG, "memory estimate: expert load %g is not a load (finite, 0 or more)",
                            in->expert_load);
    if (in->tp <= 0 || in->pp <= 0 || in->dp <= 0 || in->vstages <= 0 || in->micro_batch <= 0 || in->microbatches <= 0)
        return lsim_err_set(err, LSIM_EARG,
                            "memory estimate: TP %d, PP %d, DP %d, chunks %d, micro-batch %d and micro-batches %d "
                            "must be positive",
                            in->tp, in->pp, in->dp, in->vstages, in->micro_batch, in->microbatches);
    lsim_err se = {0};
    if (lsim_split_check(&in->split, in->layers, in->pp, in->vstages, &se))
        return lsim_err_set(err, LSIM_EARG, "memory estimate: %s", se.msg);
    if (in->hidden % in->tp || in->heads % in->tp || in->ffn % in->tp || in->vocab % in->tp)
        return lsim_err_set(err, LSIM_EARG,
                            "memory estimate: hidden %d, heads %d, FFN %d and vocabulary %d must be divisible by TP = %d",
                            in->hidden, in->heads, in->ffn, in->vocab, in->tp);
    if (in->seq_parallel && in->seq % in->tp)
        return lsim_err_set(err, LSIM_EARG, "memory estimate: sequence parallelism needs seq %d divisible by TP = %d",
                            in->seq, in->tp);
    if (in->recompute < LSIM_MEMEST_RC_NONE || in->recompute > LSIM_MEMEST_RC_OP ||
        in->attention < LSIM_MEMEST_ATTN_FLASH || in->attention > LSIM_MEMEST_ATTN_UNFUSED ||
        (in->grad_bytes != 2 && in->grad_bytes != 4) || in->opt_shards < 0)
        return lsim_err_set(err, LSIM_EARG,
                            "memory estimate: unknown recomputation %d, attention %d, gradient bytes %d or optimizer "
                            "shards %d",
                            in->recompute, in->attention, in->grad_bytes, in->opt_shards);
    if (in->fsdp < 0 || (in->fsdp > 1 && in->dp % in->fsdp))
        return lsim_err_set(err, LSIM_EARG, "memory estimate: FSDP shard group %d does not divide DP = %d", in->fsdp,
                            in->dp);
    return 0;
}

double lsim_memest_layer_act(const lsim_memest_in *in, int stored)
{
    /* Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
     * Transformer Models" (arXiv 2205.05198), section 4 and Table 2, with
     * 2-byte activations and 1-byte dropout masks, written per token so that
     * the attention width A = heads x head_dim and the FFN width f need not
     * be h and 4h:
     *   kept whole on every TP rank (without SP): the two layer norms' inputs
     *   (2h + 2h), the QKV GEMM's and FC1's inputs (2h + 2h), the two
     *   residual dropout masks (h + h): 10h;
     *   split over TP: Q and K (4A), V (2A), the projection's input (2A),
     *   GeLU's and FC2's inputs (2f + 2f): 8A + 4f (= 24h for A = h, f = 4h);
     *   the s x s part, split over TP: softmax output (2 a s), its dropout
     *   mask (a s) and output (2 a s): 5 a s; 2 a s without the dropout.
     * Hence sbh(10 + 24/t + 5as/(ht)) with TP and sbh(34/t + 5as/(ht)) with
     * sequence parallelism (everything split). Flash attention keeps no s x s
     * tensor (its backward recomputes the scores; the fp32 log-sum-exp, 4a
     * bytes per token, is left out), nor does selective recomputation, which
     * recomputes exactly that part. Full recomputation keeps the layer's
     * input only: 2h per token (2h/t with SP, where the input is the shard). */
    double h = in->hidden, t = in->tp, A = (double)in->heads * in->head_dim, f = in->ffn, a = in->heads;
    double tok = (double)in->seq * in->micro_batch;
    /* with GQA K and V are kv_heads x head_dim wide (Q, K, V and the
     * projection's input: 2A + 4KV + 2A, 8A with MHA); SwiGLU keeps its
     * fused gate-and-up output (2f wide, the input of SiLU * up) and the
     * down GEMM's input: 4f + 2f */
    double KV = (double)(in->kv_heads > 0 ? in->kv_heads : in->heads) * in->head_dim;
    int sp = in->seq_parallel;
    if (stored && in->recompute == LSIM_MEMEST_RC_FULL) return tok * 2 * h / (sp ? t : 1);
    if (stored && in->recompute == LSIM_MEMEST_RC_OP) {
        /* torchtitan's per-op selective checkpointing (_apply_ac_to_transformer_block,
         * selective_ac_option "op"): a layer keeps its input (2h, what the
         * recomputation starts from) and the outputs of the matmuls it saves
         * -- every odd one of wq, wk, wv, wo, w1, w3, w2: Q (2A), V (2KV), W1's
         * gate (2f), W2's output (2h) -- and the attention's output (2A);
         * the rest (norms, K, RoPE, wo, W3, SiLU x up) is recomputed before
         * the layer's backward. Split over TP as Korthikanti's: h whole
         * without SP, A, KV, f split */
        double opw = 4 * h, ops = 4 * A + 2 * KV + 2 * f;
        return tok * (sp ? (opw + ops) / t : opw + ops / t);
    }
    double s2 = in->attention == LSIM_MEMEST_ATTN_UNFUSED ? (in->dropout ? 5.0 : 2.0) * a * in->seq : 0;
    if (stored && in->recompute == LSIM_MEMEST_RC_SELECTIVE) s2 = 0;
    double whole = 10 * h, split = 4 * A + 4 * KV + (in->swiglu ? 6 : 4) * f;
    return tok * (sp ? (whole + split + s2) / t : whole + (split + s2) / t);
}

/* A layer's GEMM weights (no biases, no norms) on one TP rank: QKV, the
 * projection and the MLP's matrices (lsim_memest_layer_params). */
static double layer_linear(const lsim_memest_in *in)
{
    double h = in->hidden, A = (double)in->heads * in->head_dim, f = in->ffn;
    double KV = (double)(in->kv_heads > 0 ? in->kv_heads : in->heads) * in->head_dim;
    return (h * (A + 2 * KV) + A * h + (in->swiglu ? 3 : 2) * h * f) / in->tp;
}

double lsim_memest_layer_params(const lsim_memest_in *in)
{
    /* A Megatron GPT layer: QKV (h x 3A weights, 3A bias), projection (A x h,
     * bias h), FC1 (h x f, bias f), FC2 (f x h, bias h), two layer norms (2h
     * each). Column-parallel weights and biases and row-parallel weights are
     * split over TP; the row-parallel biases and the norms are replicated:
     * (4hA + 2hf + 3A + f)/t + 6h, i.e. 12h^2 + 13h for A = h, f = 4h, t = 1
     * (Narayanan et al. 2021, section 5.1). */
    double h = in->hidden, A = (double)in->heads * in->head_dim, f = in->ffn;
    if (!(in->kv_heads || in->swiglu || in->rmsnorm || in->no_bias)) return (4 * h * A + 2 * h * f + 3 * A + f) / in->tp + 6 * h;
    /* the general layer: QKV h x (A + 2KV) (grouped-query attention: KV =
     * kv_heads x head_dim), projection A x h, the MLP's matrices (GeLU: h x f
     * and f x h; SwiGLU: gate and up h x 2f, down f x h), biases of the same
     * split unless the model has none, and two norms (LayerNorm: weight and
     * bias, 2h each; RMSNorm: weight, h) */
    double KV = (double)(in->kv_heads > 0 ? in->kv_heads : in->heads) * in->head_dim;
    double mats = h * (A + 2 * KV) + A * h + (in->swiglu ? 3 : 2) * h * f;
    /* biases: QKV's and FC1's split, the projection's and FC2's (row-parallel) replicated */
    double bias_split = in->no_bias ? 0 : A + 2 * KV + (in->swiglu ? 2 : 1) * f, bias_repl = in->no_bias ? 0 : 2 * h;
    return (mats + bias_split) / in->tp + bias_repl + (in->rmsnorm ? 2 : 4) * h;
}

int lsim_memest_moe_layer(int experts, int dense_layers, int moe_every, int layer)
{
    if (experts <= 0 || layer < dense_layers) return 0;
    return moe_every <= 1 || (layer - dense_layers) % moe_every == 0;
}

double lsim_memest_moe_params(const lsim_memest_in *in, double *experts)
{
    /* the layer without its MLP: QKV and projection with their biases
     * (QKV's split, the projection's replicated), two norms; then the
     * router (h x E, replicated, a bias with biases), the shared experts
     * (shared x expert_ffn wide, split over TP like the dense MLP), and the
     * GPU's E / EP routed experts, each FC1 (h x f, SwiGLU h x 2f) and FC2
     * (f x h) split over ETP with FC1's bias (FC2's whole) */
    double h = in->hidden, A = (double)in->heads * in->head_dim, t = in->tp, b = in->no_bias ? 0 : 1;
    double KV = (double)(in->kv_heads > 0 ? in->kv_heads : in->heads) * in->head_dim;
    double fe = in->expert_ffn, f1e = in->swiglu ? 2 * fe : fe, fs = (double)in->shared_experts * fe;
    double f1s = in->swiglu ? 2 * fs : fs, E = in->experts, ep = in->ep > 1 ? in->ep : 1, et = in->etp > 1 ? in->etp : 1;
    double attn = (h * (A + 2 * KV) + A * h + b * (A + 2 * KV)) / t + b * h + (in->rmsnorm ? 2 : 4) * h;
    *experts = E / ep * ((h * f1e + fe * h) / et + b * (f1e / et + h));
    return attn + h * E + b * E + (h * f1s + fs * h + b * f1s) / t + b * (fs > 0) * h;
}

/* Activation bytes a MoE layer keeps for one micro-batch: the dense
 * layer's less its MLP's (4f or SwiGLU's 6f per token over TP), plus, per
 * token the rank routes (its sequence shard with TP), each of its top-k
 * copies' expert input (2h, all-gathered over ETP: ETP x 2h) and FC1
 * output and activation (4f or 6f of the expert width: the ETP group's
 * copies at 1 / ETP of it), the router's fp32 probabilities (4E, and the
 * logits 4E); and the shared experts' as a dense MLP's. */
static double moe_layer_act(const lsim_memest_in *in, int stored)
{
    double act = lsim_memest_layer_act(in, stored);
    if (stored && in->recompute == LSIM_MEMEST_RC_FULL) return act;
    double tok = (double)in->seq * in->micro_batch, t = in->tp, mk = in->swiglu ? 6 : 4;
    double fe = in->expert_ffn, fs = (double)in->shared_experts * fe, h = in->hidden;
    /* the routed copies the GPU's experts keep (their input and the
     * MLP's), scaled by its load: routing that is not balanced, or a
     * capacity that pads or cuts */
    double load = in->expert_load > 0 ? in->expert_load : 1;
    double et = in->etp > 1 ? in->etp : 1;
    return act - tok * mk * in->ffn / t + tok / t * (in->top_k * (2 * h * et + mk * fe) * load + 8.0 * in->experts) +
           tok * mk * fs / t;
}

/* Parameters, optimizer-state bytes and kept activation bytes (one
 * micro-batch) of the layers of `stage` of a MoE model: the routed
 * experts' optimizer state is sharded over the expert-data-parallel group
 * (TP x DP / (EP x ETP) GPUs; DP here is DP x CP) with the distributed
 * optimizer. */
static void moe_stage(const lsim_memest_in *in, int stage, int shards, double *params, double *optim, double *act)
{
    int V = in->vstages;
    double ex = 0, dense = lsim_memest_layer_params(in), moe = lsim_memest_moe_params(in, &ex);
    double edp = (double)in->tp * shards / (in->ep > 1 ? in->ep : 1) / (in->etp > 1 ? in->etp : 1);
    double a_d = lsim_memest_layer_act(in, 1);
    double a_m = moe_layer_act(in, 1), so = in->dist_opt ? shards : 1, eo = in->dist_opt && edp > 1 ? edp : 1;
    *params = *optim = *act = 0;
    for (int ch = 0; ch < V; ch++) {
        int lo, n = lsim_split_span(&in->split, in->layers, in->pp, V, ch * in->pp + stage, &lo);
        for (int l = lo; l < lo + n; l++) {
            int m = lsim_memest_moe_layer(in->experts, in->dense_layers, in->moe_every, l);
            *params += m ? moe + ex : dense;
            *optim += m ? moe * OPTIM_BYTES / so + ex * OPTIM_BYTES / eo : dense * OPTIM_BYTES / so;
            *act += m ? a_m : a_d;
        }
    }
    *act /= V; /* a chunk's layers, on average */
}

int lsim_memest_inflight(int pp, int stage, int m, int vstages)
{
    /* Why closed form: the peak of (forwards - backwards) over the schedule
     * of synth.h's lsim_synth_schedule, whose warm-up runs w forwards and
     * whose steady phase runs one forward before each backward, so the peak
     * is w + 1 (all of them when the warm-up is the whole step). For 1F1B w
     * = pp - stage - 1; for the interleaved schedule Megatron's w = (pp -
     * stage - 1) * 2 + (V - 1) * pp. tests/unit/test_memest.c compares it
     * with the schedule. */
    long total = (long)m * vstages, w;
    if (vstages <= 1) w = pp - stage - 1;
    else w = (long)(pp - stage - 1) * 2 + (long)(vstages - 1) * pp;
    long peak = w + 1 < total ? w + 1 : total;
    return peak < 1 ? 1 : (int)peak;
}

/* FSDP (PyTorch FSDP2 with torchtitan's mixed precision: bf16 compute
 * parameters, fp32 sharded parameters and reduction): the fp32 parameter
 * (the master weight), its fp32 gradient and Adam's two moments sharded
 * over the n ranks of the shard group, 16 / n bytes per parameter with
 * 4-byte gradients (ZeRO stage 3: Rajbhandari et al. 2020, section 5.3,
 * (2 + 2 + K) / N_d, with fp32 gradients and no separate bf16 copy); the
 * bf16 weights held whole only while gathered: two units at a time (the
 * running one and the one prefetched), or, when the pipeline keeps them
 * gathered over the step, the stage's all. A unit is a layer, or the word
 * embedding / output layer (vocabulary / TP x hidden). */
static void fsdp_states(const lsim_memest_in *in, int first, int last, lsim_memest_stage *out)
{
    double n = in->fsdp, unit = lsim_memest_layer_params(in), word = (double)in->vocab / in->tp * in->hidden;
    /* FP8 all-gather: a layer's linear weights gathered as Float8 tensors
     * (1 byte) and used as such by the FP8 GEMMs; the embedding and output
     * layer stay bf16 (torchtitan leaves them out of the conversion) */
    double f8 = in->fsdp_fp8 ? layer_linear(in) * (WEIGHT_BYTES - 1) : 0;
    double unit_bytes = unit * WEIGHT_BYTES - f8;
    if (in->embed_head && (first || last) && word * WEIGHT_BYTES > unit_bytes) unit_bytes = word * WEIGHT_BYTES;
    out->weights = in->fsdp_keep ? out->params * WEIGHT_BYTES - out->layers * f8 : 2 * unit_bytes;
    /* under a pipeline every backward but the last runs with gradient sync
     * off (torch.distributed.pipelining's stage, backward_maybe_with_nosync:
     * set_requires_gradient_sync(False), post_backward by hand after the
     * last): the stage's gradients accumulate unsharded, in the reduce dtype
     * (FSDP2's FSDPParam.to_accumulated_grad_if_needed), until the
     * reduce-scatter; the sharded .grad is None until then (zero_grad) */
    out->grads = out->params * in->grad_bytes / (in->fsdp_keep ? 1 : n);
    out->optim = out->params * OPTIM_BYTES / n;
}

int lsim_memest_stage_of(const lsim_memest_in *in, int stage, lsim_memest_stage *out, lsim_err *err)
{
    /* Why per stage: the stages differ (the embedding on the first, the
     * output layer and its logits on the last, and the in-flight count
     * falls from pp on the first to 1 on the last), and the most loaded one
     * decides whether the job fits. */
    memset(out, 0, sizeof *out);
    int rc = lsim_memest_check(in, err);
    if (rc) return rc;
    if (stage < 0 || stage >= in->pp)
        return lsim_err_set(err, LSIM_EARG, "memory estimate: stage %d of a %d-stage pipeline", stage, in->pp);
    double h = in->hidden, t = in->tp, tok = (double)in->seq * in->micro_batch;
    double sbh = tok * h, sp_div = in->seq_parallel ? t : 1;
    int V = in->vstages, first = stage == 0, last = stage == in->pp - 1;
    out->layers = 0;
    for (int ch = 0; ch < V; ch++) out->layers += lsim_split_span(&in->split, in->layers, in->pp, V, ch * in->pp + stage, NULL);
    /* a chunk's layers, on average over the stage's chunks (uneven splits) */
    double lpc = (double)out->layers / V;
    /* parameters: the stage's layers; the word embeddings (vocabulary split
     * over TP) and the learned position embeddings (replicated) on the
     * first stage; the final layer norm and the output layer on the last,
     * tied to the word embeddings: a copy of them when PP > 1, the same
     * tensor when PP = 1 (Megatron's GPT) */
    double params = out->layers * lsim_memest_layer_params(in);
    if (in->embed_head) {
        double word = (double)in->vocab / t * h;
        /* rotary positions have no table; an untied output layer is a
         * matrix of its own even on one stage; RMSNorm has no bias */
        if (first) params += word + (in->rope ? 0 : (double)in->seq * h);
        if (last) params += (in->rmsnorm ? 1 : 2) * h + (in->pp > 1 || in->untied ? word : 0);
    }
    out->params = params;
    out->weights = params * WEIGHT_BYTES;
    if (!in->forward_only) {
        int shards = in->opt_shards > 0 ? in->opt_shards : in->dp;
        out->grads = params * in->grad_bytes;
        out->optim = params * OPTIM_BYTES / (in->dist_opt ? shards : 1);
    }
    if (in->fsdp > 1 && !in->forward_only) fsdp_states(in, first, last, out);
    double moe_optim = 0, moe_act = 0;
    if (in->experts > 0) {
        /* MoE: the stage's layers differ (dense, MoE); the embedding and
         * head as above */
        double lp = 0, shards = in->opt_shards > 0 ? in->opt_shards : in->dp;
        moe_stage(in, stage, (int)shards, &lp, &moe_optim, &moe_act);
        params += lp - out->layers * lsim_memest_layer_params(in);
        out->params = params;
        out->weights = params * WEIGHT_BYTES;
        if (!in->forward_only) {
            out->grads = in->grad_bytes * params;
            out->optim = (params - lp) * OPTIM_BYTES / (in->dist_opt ? shards : 1) + moe_optim;
        }
    }
    /* activations: each chunk forward in flight keeps its layers'
     * activations until its backward (Korthikanti et al. 2022, section 4.2.3:
     * the first stage of 1F1B holds pp micro-batches of L/pp layers, L
     * layers' worth; the interleaved schedule (1 + (pp - 1)/(pp V)) times
     * that); full recomputation adds the working set of the one layer being
     * recomputed; forward-only keeps one layer's working set */
    double act;
    if (in->forward_only) {
        out->inflight = 1;
        act = lsim_memest_layer_act(in, 0);
    } else {
        out->inflight = lsim_memest_inflight(in->pp, stage, in->microbatches, V);
        act = (double)out->inflight * (in->experts > 0 ? moe_act : lpc * lsim_memest_layer_act(in, 1));
        if (in->recompute == LSIM_MEMEST_RC_FULL || in->recompute == LSIM_MEMEST_RC_OP) act += lsim_memest_layer_act(in, 0);
    }
    if (in->embed_head) {
        /* Korthikanti et al. section 4.3: the embedding keeps its dropout
         * mask (sbh, split with SP) and the token ids per micro-batch in
         * flight through the first chunk; the last stage keeps the final
         * norm's and the output layer's inputs (2sbh each, split with SP)
         * and the fp32 logits of the cross entropy (4sbv/t), one micro-batch */
        if (first && !in->forward_only) {
            int mb_in_flight = (out->inflight + V - 1) / V;
            act += mb_in_flight * (sbh / sp_div + TOKEN_ID_BYTES * tok);
        }
        if (last) act += (in->forward_only ? 0 : 4 * sbh / sp_div) + logit_bytes(in) * tok * in->vocab / t;
    }
    out->act_layer = lsim_memest_layer_act(in, !in->forward_only);
    out->activations = act;
    /* communication: NCCL's buffers per communicator (TP group, DP group,
     * the pipeline group, and the embedding group of the first and last
     * stage for the tied embedding's gradients); the pipeline's buffers in
     * flight (an activation sent, a gradient received: s b h x 2 bytes each,
     * the shard with SP); with sequence parallelism Megatron's global buffer
     * for the all-gathered input of a column-parallel GEMM (s b h x 2) */
    int comms = (in->tp > 1) + (in->dp > 1) + (in->pp > 1) + (in->pp > 1 && in->embed_head && (first || last)) +
                (in->fsdp > 1 && in->fsdp < in->dp); /* hybrid FSDP: the replica group's */
    out->comm = comms * NCCL_CHANNELS * NCCL_CONNS * NCCL_BUFFSIZE;
    if (in->pp > 1) out->comm += (in->forward_only ? 1 : 2) * 2 * sbh / sp_div;
    if (in->seq_parallel && in->tp > 1) out->comm += 2 * sbh;
    out->reserve = CUDA_CONTEXT + TEMP_FRACTION * act;
    out->total = out->weights + out->grads + out->optim + out->activations + out->comm + out->reserve;
    return 0;
}

int lsim_memest_worst(const lsim_memest_in *in, int *stage, lsim_memest_stage *out, lsim_err *err)
{
    /* Why a loop: the first stage holds the most activations and the
     * embedding, the last the logits and its copy of the embedding; which
     * wins depends on the shape, so every stage is computed. */
    int rc = lsim_memest_check(in, err), best = 0;
    lsim_memest_stage cur;
    memset(out, 0, sizeof *out);
    for (int s = 0; !rc && s < in->pp; s++) {
        rc = lsim_memest_stage_of(in, s, &cur, err);
        if (!rc && (s == 0 || cur.total > out->total)) {
            *out = cur;
            best = s;
        }
    }
    if (stage) *stage = rc ? 0 : best;
    return rc;
}

/* ------------------------------------------------------------ the job */

int lsim_memest_job_of(const lsim_memest_in *in, const char *gpu, double capacity, lsim_memest_job *out,
                       lsim_err *err)
{
    /* Why a job object: synth records it in the store and sim prints it,
     * per stage, with the GPU it was estimated for. */
    memset(out, 0, sizeof *out);
    int rc = lsim_memest_check(in, err);
    if (rc) return rc;
    snprintf(out->source, sizeof out->source, "model");
    snprintf(out->gpu, sizeof out->gpu, "%s", gpu ? gpu : "");
    out->capacity = capacity > 0 ? capacity : 0;
    out->tp = in->tp, out->pp = in->pp, out->dp = in->dp;
    out->stages = lsim_calloc((size_t)in->pp, sizeof *out->stages);
    if (!out->stages) return lsim_err_set(err, LSIM_ENOMEM, "out of memory for the memory estimate");
    out->nstages = in->pp;
    for (int s = 0; !rc && s < in->pp; s++) {
        rc = lsim_memest_stage_of(in, s, &out->stages[s], err);
        if (!rc && out->stages[s].total > out->stages[out->worst].total) out->worst = s;
    }
    if (rc) {
        lsim_memest_job_free(out);
        return rc;
    }
    out->oom = out->capacity > 0 && out->stages[out->worst].total > out->capacity;
    return 0;
}

void lsim_memest_job_free(lsim_memest_job *j)
{
    if (!j) return;
    free(j->stages);
    j->stages = NULL;
    j->nstages = 0;
}

/* The stage's fields as JSON keys, in one table for writing and reading. */
#define STAGE_KEYS(X)                  \
    X("params", params)                \
    X("weights_bytes", weights)        \
    X("gradients_bytes", grads)        \
    X("optimizer_bytes", optim)        \
    X("activation_layer_bytes", act_layer) \
    X("activations_bytes", activations) \
    X("comm_bytes", comm)              \
    X("reserve_bytes", reserve)        \
    X("total_bytes", total)

int lsim_memest_job_json(const lsim_memest_job *j, char **text, lsim_err *err)
{
    /* Why JSON: the store's root attributes are strings, and the same
     * document is what sim's --json report embeds (docs/memory.md). */
    int rc = 0;
    *text = NULL;
    cJSON *o = cJSON_CreateObject(), *st = NULL;
    if (!o) goto nomem;
    const lsim_memest_stage *w = j->nstages > 0 ? &j->stages[j->worst] : NULL;
    cJSON_AddStringToObject(o, "source", j->source);
    cJSON_AddStringToObject(o, "gpu", j->gpu);
    if (j->capacity > 0) cJSON_AddNumberToObject(o, "capacity_bytes", j->capacity);
    else cJSON_AddNullToObject(o, "capacity_bytes");
    cJSON_AddNumberToObject(o, "peak_bytes", w ? w->total : 0);
    cJSON_AddNumberToObject(o, "worst_stage", j->worst);
    cJSON_AddBoolToObject(o, "oom", j->oom);
    cJSON_AddNumberToObject(o, "tp", j->tp);
    cJSON_AddNumberToObject(o, "pp", j->pp);
    cJSON_AddNumberToObject(o, "dp", j->dp);
    if (!(st = cJSON_AddArrayToObject(o, "stages"))) goto nomem;
    for (int s = 0; s < j->nstages; s++) {
        const lsim_memest_stage *g = &j->stages[s];
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(st, e)) {
            cJSON_Delete(e);
            goto nomem;
        }
        cJSON_AddNumberToObject(e, "stage", s);
#define PUT_(key, field) cJSON_AddNumberToObject(e, key, g->field);
        STAGE_KEYS(PUT_)
#undef PUT_
        cJSON_AddNumberToObject(e, "inflight", g->inflight);
        cJSON_AddNumberToObject(e, "layers", g->layers);
        cJSON_AddBoolToObject(e, "oom", j->capacity > 0 && g->total > j->capacity);
    }
    if (!(*text = cJSON_PrintUnformatted(o))) goto nomem;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the memory estimate");
cleanup:
    cJSON_Delete(o);
    return rc;
}

static int num_of(const cJSON *o, const char *key, double lo, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(x) || !(x->valuedouble >= lo) || !isfinite(x->valuedouble)) return -1;
    *v = x->valuedouble;
    return 0;
}

int lsim_memest_job_parse(const char *text, lsim_memest_job *out, lsim_err *err)
{
    /* Why strict: a store's attribute may come from another build or be
     * edited; a figure missing or out of range is an error naming the key,
     * never a silently wrong verdict. */
    int rc = 0;
    const char *bad = NULL;
    double v;
    memset(out, 0, sizeof *out);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return lsim_err_set(err, LSIM_EFORMAT, "memory estimate: not a JSON object");
    }
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(o, "source"), *gpu = cJSON_GetObjectItemCaseSensitive(o, "gpu");
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(o, "capacity_bytes");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "stages");
    int n = cJSON_IsArray(st) ? cJSON_GetArraySize(st) : 0;
    if (!cJSON_IsString(src)) bad = "source";
    else if (!cJSON_IsString(gpu)) bad = "gpu";
    else if (!cJSON_IsNull(cap) && (num_of(o, "capacity_bytes", 0, &v) || (out->capacity = v, 0))) bad = "capacity_bytes";
    else if (num_of(o, "tp", 1, &v) || (out->tp = (int)v, 0)) bad = "tp";
    else if (num_of(o, "pp", 1, &v) || (out->pp = (int)v, 0)) bad = "pp";
    else if (num_of(o, "dp", 1, &v) || (out->dp = (int)v, 0)) bad = "dp";
    else if (n < 1 || n != out->pp) bad = "stages";
    if (bad) goto bad;
    snprintf(out->source, sizeof out->source, "%s", src->valuestring);
    snprintf(out->gpu, sizeof out->gpu, "%s", gpu->valuestring);
    if (!(out->stages = lsim_calloc((size_t)n, sizeof *out->stages))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory reading the memory estimate");
        goto cleanup;
    }
    out->nstages = n;
    for (int s = 0; s < n && !bad; s++) {
        const cJSON *e = cJSON_GetArrayItem(st, s);
        lsim_memest_stage *g = &out->stages[s];
#define GET_(key, field) \
    if (!bad && num_of(e, key, 0, &g->field)) bad = key;
        STAGE_KEYS(GET_)
#undef GET_
        if (!bad && (num_of(e, "inflight", 0, &v) || (g->inflight = (int)v, 0))) bad = "inflight";
        if (!bad && (num_of(e, "layers", 0, &v) || (g->layers = (int)v, 0))) bad = "layers";
        if (!bad && g->total > out->stages[out->worst].total) out->worst = s;
    }
    if (bad) goto bad;
    out->oom = out->capacity > 0 && out->stages[out->worst].total > out->capacity;
    goto cleanup;
bad:
    rc = lsim_err_set(err, LSIM_EFORMAT, "memory estimate: key %s missing or out of range", bad);
    lsim_memest_job_free(out);
cleanup:
    cJSON_Delete(o);
    return rc;
}

void lsim_memest_oom_line(const lsim_memest_job *j, char *out, size_t cap)
{
    const lsim_memest_stage *w = j->nstages > 0 ? &j->stages[j->worst] : NULL;
    snprintf(out, cap, "OOM: pipeline stage %d needs an estimated %.1f GB per GPU, more than the %s's %.1f GB", j->worst,
             w ? w->total / 1e9 : 0.0, j->gpu[0] ? j->gpu : "GPU", j->capacity / 1e9);
}
