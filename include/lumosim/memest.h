/* Per-GPU peak memory of one training step, estimated from the model shape,
 * the parallel layout and the Megatron options: weights, gradients and
 * optimizer state (with and without the distributed optimizer), the
 * activations of the micro-batches in flight under the pipeline schedule
 * (none, selective or full recomputation; sequence parallelism),
 * communication buffers and a framework reserve. Every constant and
 * formula, with its source: docs/memory.md and the comments in
 * src/memest.c.
 *
 * GPU numbering is Megatron's (synth.h): rank = tp + TP * (dp + DP * pp),
 * so GPU g is on pipeline stage g / (TP * DP); every GPU of a stage has the
 * same estimate.
 *
 * Pure: no MPI, no I/O, no global state. lsim_memest_stage and
 * lsim_memest_worst allocate nothing; lsim_memest_job_of and
 * lsim_memest_job_parse allocate the job's stage array (released by
 * lsim_memest_job_free); lsim_memest_job_json allocates the text it returns
 * (the caller frees it). Inputs are caller-owned plain data. Local. */
#ifndef LUMOSIM_MEMEST_H
#define LUMOSIM_MEMEST_H

#include "lumosim/common.h"
#include "lumosim/stages.h"

enum { LSIM_MEMEST_RC_NONE = 0, LSIM_MEMEST_RC_SELECTIVE, LSIM_MEMEST_RC_FULL, LSIM_MEMEST_RC_OP };
enum { LSIM_MEMEST_ATTN_FLASH = 0, LSIM_MEMEST_ATTN_UNFUSED };

/* What the estimate needs. Sizes are positive; heads * head_dim is the
 * attention width (it need not equal hidden). */
typedef struct lsim_memest_in {
    int layers, hidden, ffn, heads, head_dim, seq, vocab;
    /* the model's kind (synth.h's lsim_model_shape; all 0 for Megatron's
     * GPT): KV heads (0: heads), a SwiGLU MLP (three matrices), RMSNorm
     * (a weight, no bias), rotary positions (no position table), an output
     * layer with its own weights, no linear biases */
    int kv_heads, swiglu, rmsnorm, rope, untied, no_bias;
    int tp, pp, dp;
    int vstages;      /* model chunks per GPU: 1 (1F1B) or V (interleaved 1F1B) */
    lsim_split split; /* the layers over the pp x vstages virtual stages (stages.h; zeroed: even) */
    int micro_batch;  /* b: sequences per micro-batch */
    int microbatches; /* m: micro-batches per pipeline and step */
    int recompute;    /* LSIM_MEMEST_RC_* */
    int seq_parallel; /* Megatron's sequence parallelism */
    int dist_opt;     /* distributed optimizer: optimizer state sharded over opt_shards */
    int opt_shards;   /* replicas the distributed optimizer shards over (0: dp) */
    int grad_bytes;   /* bytes per main gradient: 4 (fp32, Megatron's default with bf16) or 2 */
    int attention;    /* LSIM_MEMEST_ATTN_FLASH (no s x s tensor kept) or _UNFUSED */
    int dropout;      /* unfused attention keeps the attention-probability dropout (mask, output) */
    int embed_head;   /* embedding on the first stage, final norm + (tied) output layer on the last */
    int forward_only; /* forward passes only: bf16 weights, one layer's activations */
    int fsdp;         /* FSDP shard group (0: none): fp32 master weights, gradients and Adam's moments
                         sharded over it, bf16 weights gathered per unit (docs/memory.md) */
    int fsdp_keep;    /* FSDP: the stage's gathered bf16 weights kept over the step (PP), not two
                         units at a time, and its gradients accumulated unsharded until the last
                         micro-batch's reduce-scatter */
    int fsdp_fp8;     /* FSDP with FP8 all-gather (torchao): a layer's linear weights are gathered
                         and held in 1 byte, its norms and biases in 2 */
    /* mixture of experts (synth.h's lsim_model_shape; experts 0: dense):
     * routed experts, top-k, shared experts, expert FFN width, leading dense
     * layers, MoE every N layers; ep: expert parallel ranks (0 or 1: none) */
    int experts, top_k, shared_experts, expert_ffn, dense_layers, moe_every, ep;
    double expert_load; /* the most loaded GPU's routed token copies over the balanced share
                           (0: balanced, 1): scales the routed experts' activations */
    int loss_eager;     /* the cross entropy as PyTorch eager on an fp32 copy of the logits
                           (synth.h LSIM_LOSS_EAGER): its backward holds 12 bytes a logit, not
                           the fused loss's 4 (docs/memory.md) */
    int etp;            /* expert-tensor parallel ranks (0 or 1: none): each routed expert's
                           FFN split over them, its input all-gathered over them */
} lsim_memest_in;

/* Defaults: 1F1B, flash attention with dropout, no recomputation, no SP, no
 * distributed optimizer, fp32 main gradients, embedding and head on. The
 * shape, layout and batch sizes are left 0 (must be set). */
void lsim_memest_in_default(lsim_memest_in *in);

/* One GPU of one pipeline stage at its peak. Bytes unless named otherwise;
 * total = weights + grads + optim + activations + comm + reserve. */
typedef struct lsim_memest_stage {
    double params;      /* parameters on the GPU */
    double weights;     /* bf16 model weights */
    double grads;       /* main gradients */
    double optim;       /* fp32 master weights and Adam's two moments (sharded with the distributed optimizer) */
    double act_layer;   /* activations one layer keeps for one micro-batch (Korthikanti et al. 2022) */
    double activations; /* everything kept at the peak: inflight x layers x act_layer, plus the
                           embedding's / head's and full recomputation's working layer */
    double comm;        /* communication buffers: NCCL's, pipeline and sequence-parallel buffers */
    double reserve;     /* framework: CUDA context, temporaries */
    double total;
    int inflight;       /* model-chunk forwards whose backward has not run, at the peak */
    int layers;         /* transformer layers on the GPU (all its chunks) */
} lsim_memest_stage;

/* Check the input: positive sizes, layers split over pp * vstages by split,
 * hidden / heads / ffn / vocab divisible by tp, seq divisible by tp with
 * sequence parallelism, known options. 0 or LSIM_EARG naming the numbers. */
int lsim_memest_check(const lsim_memest_in *in, lsim_err *err);

/* The estimate for pipeline stage `stage` (0 .. pp - 1). 0 or LSIM_EARG. */
int lsim_memest_stage_of(const lsim_memest_in *in, int stage, lsim_memest_stage *out, lsim_err *err);

/* The stage with the largest total (the first of equals) and its estimate.
 * 0 or LSIM_EARG. */
int lsim_memest_worst(const lsim_memest_in *in, int *stage, lsim_memest_stage *out, lsim_err *err);

/* Pieces, exposed for the tests and for callers that need one term. */
/* Activation bytes one transformer layer keeps for one micro-batch until
 * its backward; stored = 0: its whole working set (what full recomputation
 * rebuilds), 1: what the recomputation option keeps. */
double lsim_memest_layer_act(const lsim_memest_in *in, int stored);
/* Parameters of one transformer layer on one GPU (its TP shard). */
double lsim_memest_layer_params(const lsim_memest_in *in);
/* 1 when layer `layer` of a model with `experts` routed experts, the first
 * dense_layers dense and then every moe_every-th MoE (0 or 1: all), is a
 * MoE layer (the one rule; synth.h's lsim_model_moe_layer). */
int lsim_memest_moe_layer(int experts, int dense_layers, int moe_every, int layer);
/* A MoE layer's parameters on one GPU: returns those of everything but the
 * routed experts (attention, norms, router, TP-split shared experts) and
 * sets *experts to the GPU's experts / EP routed experts'. */
double lsim_memest_moe_params(const lsim_memest_in *in, double *experts);
/* Model-chunk forwards in flight at the peak on `stage`: 1F1B min(pp -
 * stage, m); interleaved min((pp - stage - 1) * 2 + (V - 1) * pp + 1, m V)
 * (Megatron's warm-up count plus the steady phase's one forward). */
int lsim_memest_inflight(int pp, int stage, int m, int vstages);

/* ------------------------------------------------------------ the job */

/* The estimate of every stage of a job and the GPU it runs on, as `lumosim
 * synth` records it in the graph store (root attribute "memory", JSON) and
 * `lumosim sim` / `info` print it. */
typedef struct lsim_memest_job {
    char source[16];           /* where the estimate comes from: "model" (shape and layout) */
    char gpu[32];              /* the GPU's name */
    double capacity;           /* its memory in bytes; 0: unknown (never OOM) */
    int tp, pp, dp;
    int worst;                 /* the stage with the largest total */
    int oom;                   /* capacity > 0 and the worst total exceeds it */
    int nstages;               /* pp */
    lsim_memest_stage *stages; /* nstages, owned */
} lsim_memest_job;

/* Every stage of `in` on a GPU named gpu with `capacity` bytes (0:
 * unknown). out is overwritten (free it first). 0, LSIM_EARG, LSIM_ENOMEM. */
int lsim_memest_job_of(const lsim_memest_in *in, const char *gpu, double capacity, lsim_memest_job *out,
                       lsim_err *err);
void lsim_memest_job_free(lsim_memest_job *j); /* the stages; j itself is the caller's; NULL ok */
/* The job as compact JSON (docs/memory.md, "Stored"): *text allocated,
 * caller frees. 0 or LSIM_ENOMEM. */
int lsim_memest_job_json(const lsim_memest_job *j, char **text, lsim_err *err);
/* The JSON back (what lsim_memest_job_json wrote). 0, LSIM_EFORMAT naming
 * the key, LSIM_ENOMEM. */
int lsim_memest_job_parse(const char *text, lsim_memest_job *out, lsim_err *err);
/* The OOM warning's text, one line without "lumosim: warning: " and
 * newline: "OOM: pipeline stage S needs an estimated X GB per GPU, more
 * than the GPU's Y GB". out holds cap bytes. */
void lsim_memest_oom_line(const lsim_memest_job *j, char *out, size_t cap);

#endif
