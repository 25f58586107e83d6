/* Workload synthesis: the execution graphs of every GPU of one training
 * iteration of a Megatron-style GPT job (tensor, pipeline and data
 * parallel), built from a model shape, a parallel layout, a pipeline
 * schedule and the cost models (cost.h), without any trace. What is
 * generated and how: docs/synthesis.md.
 *
 * Every GPU's graph looks like a replayable Megatron trace: one CPU thread
 * that launches every kernel (a LSIM_N_RUNTIME node of launch_cpu_ns per
 * kernel, LAUNCH edges with launch_latency_ns), a compute stream, a
 * tensor-parallel collective stream, four pipeline streams (send/recv,
 * forward/backward), a data-parallel gradient all-reduce stream overlapped
 * with the last backward pass (bucketed), cross-stream event edges, the
 * optimizer step and a final blocking synchronisation. Node names carry the
 * layer and micro-batch ("L12.mb3.fwd.qkv_gemm"). Collectives carry kind,
 * bytes, group size, the group's name ("tp:PP:DP", "dp:TP:PP", pipeline
 * pairs "p2p:A->B") and their sequence number on it, and dur = the cost
 * model's transfer time; lsim_job_match couples them (job.h). No node is
 * observed: obs_start = obs_end = LSIM_OBS_NONE (metrics.h).
 *
 * GPU numbering (Megatron's default order, tensor parallel fastest):
 * rank = tp + TP * (dp + DP * pp).
 *
 * Ownership: lsim_synth_gpu allocates a graph (lsim_graph_free releases
 * it); lsim_gb_* builders are allocated by lsim_gb_new and released by
 * lsim_gb_finish (always) or lsim_gb_free. Configurations are caller-owned
 * plain data. Everything here is Local (no MPI). */
#ifndef LUMOSIM_SYNTH_H
#define LUMOSIM_SYNTH_H

#include "lumosim/common.h"
#include "lumosim/cost.h"
#include "lumosim/graph.h"
#include "lumosim/memest.h"

/* ------------------------------------------------------------ model shapes */

/* A decoder-only transformer. The fields after vocab are 0 for Megatron's
 * GPT (the gpt3-* models): multi-head attention, a GeLU MLP of two
 * matrices, LayerNorm, learned position embeddings, the output layer tied
 * to the word embeddings, biases on every linear layer. docs/models.md. */
enum { LSIM_MLP_GELU = 0, LSIM_MLP_SWIGLU };
enum { LSIM_NORM_LAYER = 0, LSIM_NORM_RMS };
typedef struct lsim_model_shape {
    char name[32];
    int layers, hidden, ffn, heads, head_dim, seq, vocab;
    int kv_heads;  /* key/value heads (GQA, MQA: 1); 0: heads (MHA) */
    int mlp;       /* LSIM_MLP_GELU: FC1 (h x ffn), GeLU, FC2; LSIM_MLP_SWIGLU: gate and up
                      fused (h x 2 ffn), SiLU(gate) * up, down (ffn x h) */
    int norm;      /* LSIM_NORM_LAYER (weight and bias) or LSIM_NORM_RMS (weight) */
    int rope;      /* 1: rotary position embeddings (a kernel on Q and K, no position table) */
    int untied;    /* 1: the output layer has its own vocab x hidden weights */
    int no_bias;   /* 1: no bias on the linear layers (Llama, Qwen3) */
    /* mixture of experts (docs/models.md, "Mixture of experts"); experts 0: a dense model */
    int experts;        /* routed experts E per MoE layer */
    int top_k;          /* routed experts each token runs (1..E) */
    int shared_experts; /* experts every token runs besides (each expert_ffn wide) */
    int expert_ffn;     /* an expert's FFN width (the MLP kind of mlp) */
    int dense_layers;   /* the first K layers keep the dense MLP of width ffn (DeepSeek's first_k_dense_replace) */
    int moe_every;      /* after them every N-th layer is MoE, the others dense (Megatron's moe_layer_freq;
                           0 or 1: all) */
} lsim_model_shape;

/* Key/value heads of a shape (kv_heads, or heads when 0). Local. */
int lsim_model_kv_heads(const lsim_model_shape *m);
/* 1 when transformer layer `layer` (0-based) of m has a mixture-of-experts
 * block in place of its dense MLP, else 0. Local. */
int lsim_model_moe_layer(const lsim_model_shape *m, int layer);

/* The built-in models, the same shapes as data/models/NAME.json (a unit
 * test compares them): "gpt3-15b", "gpt3-44b", "gpt3-117b", "gpt3-175b"
 * (the Lumos paper's family; head dim 128, sequence 2048, vocabulary
 * 51200), "llama3-8b", "llama3-70b", "llama3.1-405b" (Meta's configs).
 * 0, or LSIM_EARG listing the known names. */
int lsim_model_builtin(const char *name, lsim_model_shape *out, lsim_err *err);

/* A JSON object (docs/models.md) with keys name (string, optional),
 * layers, hidden, ffn, heads, head_dim (default 128), seq (default 2048),
 * vocab (default 51200), kv_heads (default heads): positive integers; mlp
 * "gelu"|"swiglu", norm "layernorm"|"rmsnorm", rope, tie_embeddings (default
 * true), bias (default true): booleans; description (string) and sources
 * (an object of strings naming the keys above). heads divisible by
 * kv_heads. Unknown keys are errors. 0, LSIM_EIO, LSIM_EFORMAT ("PATH: key
 * K: what is wrong"). */
int lsim_model_load(const char *path, lsim_model_shape *out, lsim_err *err);

/* What --model takes everywhere: a file (the name holds '/' or ".json":
 * lsim_model_load) or a built-in name (lsim_model_builtin). */
int lsim_model_named(const char *name_or_path, lsim_model_shape *out, lsim_err *err);

/* ------------------------------------------------------------ configuration */

typedef struct lsim_synth_cfg {
    lsim_model_shape model;
    int tp, pp, dp;
    int micro_batch, global_batch;  /* micro-batches per pipeline m = global / (micro * dp) */
    int vstages;                    /* 1: 1F1B; V > 1: interleaved 1F1B with V model chunks per GPU */
    lsim_split split;               /* the layers over the pp x vstages virtual stages (stages.h,
                                       --pp-layers; default even) */
    int gpus;                       /* 0: not given; else must equal tp * pp * dp */
    lsim_gpu_spec gpu;
    lsim_topology topo;
    int elem_bytes;                 /* activations and GEMMs: 2 (bf16) */
    double dp_bucket_params;        /* gradient bucket size in parameters (40e6) */
    int p2p_sync;                   /* the CPU blocks until each pipeline send/recv group
                                       has completed (Megatron's batch_p2p_sync, default 1) */
    int embed_head;                 /* embedding on the first stage, LM head + loss on the
                                       last (1); 0 gives equal stages (analytical checks) */
    int optimizer;                  /* optimizer step after the backward pass (1) */
    /* Megatron options that change the step (docs/synthesis.md, "Options");
     * the defaults are the first value named */
    int recompute;                  /* LSIM_RC_NONE, _SELECTIVE (attention core), _FULL (each layer's forward),
                                       _OP (torchtitan's per-op selective checkpointing: every second
                                       matmul of a layer and the element-wise ops recomputed) */
    int seq_parallel;               /* TP all-reduces become reduce-scatter + all-gather, norms and
                                       dropout on seq / TP tokens */
    int grad_reduce;                /* LSIM_GR_OVERLAP: buckets during the last backward; LSIM_GR_AFTER:
                                       after the pipeline flush (Megatron's 2021 local DDP) */
    int dist_opt;                   /* distributed optimizer: gradient reduce-scatter, optimizer on
                                       1/DP of the parameters, parameter all-gather */
    int scatter_gather;             /* pipeline sends split over the TP ranks, all-gathered after */
    int attention;                  /* LSIM_ATTN_FLASH or LSIM_ATTN_UNFUSED (batched GEMMs + softmax) */
    int dropout;                    /* unfused attention: the attention-probability dropout kernel (1) */
    int tp_overlap;                 /* backward: the input-gradient TP all-reduce runs during the
                                       weight-gradient GEMM (Megatron's async TP all-reduce) */
    int grad_bytes;                 /* bytes per gradient in the DP reduction: 4 (fp32 main gradients) or 2 */
    int grad_acc;                   /* how each micro-batch's weight gradients are summed over the
                                       micro-batches: LSIM_GA_FUSED (in the weight-gradient GEMM, no
                                       kernel), LSIM_GA_BUFFER (one add per parameter tensor into the
                                       main-gradient buffer, every micro-batch: Megatron's 2021 local
                                       DDP), LSIM_GA_AUTOGRAD (PyTorch's AccumulateGrad into .grad: the
                                       first micro-batch's gradient is kept, an add for every later one) */
    int forward_only;               /* forward passes only: no backward, no optimizer (1F1B needed) */
    int mem_check;                  /* refuse a job that does not fit the GPU's memory (1) */
    uint64_t seed;                  /* host stalls (gpu.host_stall_prob > 0): deterministic draws */
    int dp_cost;                    /* > dp: the data-parallel collectives (and the distributed
                                       optimizer's shards, FSDP's shard and replica groups, the
                                       experts' EP, ETP and EDP groups) are those of dp_cost
                                       replicas, so that a job too large to simulate whole runs with
                                       fewer replicas and the network model's cost of the full
                                       group; with experts only whole EP x ETP blocks and balanced
                                       routing (lsim_synth_check refuses the rest); 0: dp */
    int tp_one;                     /* 1: only tensor-parallel rank 0 of each stage and replica is
                                       synthesized (PP x DP GPUs, rank = dp + DP pp), every shape
                                       still split TP ways; its TP collectives are groups of one,
                                       timed as the TP-wide groups at the GPUs' places in the full
                                       job (with dp_cost's replicas), and its pipeline transfers too.
                                       The TP ranks of a stage are the same program at the same
                                       times, so the step is the full job's to the nanosecond where
                                       lsim_synth_tp_one_exact says so; 0: every TP rank */
    int terse_names;                /* 1: node names without their layer and micro-batch
                                       (".fwd.qkv_gemm", not "L12.mb3.fwd.qkv_gemm"): nothing
                                       simulated depends on a name, and a GPU's hundreds of
                                       thousands of distinct names cost the search a fifth of a
                                       candidate's time (interning, formatting); 0: full names */
    int precision;                  /* LSIM_PREC_BF16, or LSIM_PREC_FP8: the layers' linear GEMMs
                                       (QKV, projection, FC1, FC2; forward, input and weight
                                       gradients) at the GPU's peak_flops_fp8, each GEMM input cast
                                       (cast-transpose kernels); the output layer and attention
                                       stay bf16 (Transformer Engine's and torchao's defaults) */
    int fp8_scaling;                /* LSIM_FP8_CURRENT: an amax reduction before each cast;
                                       LSIM_FP8_DELAYED: the previous step's amax, the history
                                       updated once per scaled tensor per step */
    int fp8_all_gather;             /* FP8 with FSDP: each layer's linear weights cast to FP8 before
                                       their all-gather (torchao's enable_fsdp_float8_all_gather,
                                       with precompute_float8_dynamic_scale_for_fsdp: one amax
                                       kernel and one scale all-reduce after the optimizer); 0 off */
    int fsdp;                       /* FSDP shard group size N (PyTorch FSDP2 as torchtitan runs it;
                                       docs/synthesis.md "FSDP"): 0 off; N = DP full shard, N < DP
                                       hybrid shard (DP / N replica groups all-reduce the shards);
                                       replaces the DP buckets */
    int cp;                         /* context parallel ranks (ring attention; docs/synthesis.md
                                       "Context parallelism"): 0 or 1 off; the GPUs are TP x CP x
                                       DP x PP, rank = tp + TP (cp + CP (dp + DP pp)), the
                                       gradients reduced over DP x CP */
    int ep;                         /* expert parallel ranks (docs/synthesis.md "Expert parallelism"):
                                       0 or 1 off; EP groups are consecutive blocks of EP ranks of a
                                       stage's TP x CP x DP GPUs (Megatron's expert layout ETP 1 x EP x
                                       EDP), each holding experts / EP whole experts; tokens dispatched
                                       and combined by all-to-alls in the group */
    double routing_skew;            /* Zipf exponent of the tokens each expert receives (docs/synthesis.md
                                       "Skewed routing"): 0 balanced; > 0 drawn per step, MoE layer,
                                       micro-batch and EP group from seed */
    double routing_dirichlet;       /* Dirichlet concentration A (docs/synthesis.md "Skewed routing"):
                                       > 0: each (stage, EP group, MoE layer, micro-batch) draws the
                                       experts' shares from Dirichlet(A E p), p routing_hist's row or
                                       uniform; 0 off */
    const double *routing_hist;     /* measured shares of the tokens per expert (--routing-hist,
                                       lsim_synth_routing_load): routing_hist_rows rows of
                                       model.experts values, each row summing to 1; alone, every
                                       layer's tokens are its row's shares; NULL none. Not owned:
                                       the caller keeps it while the configuration is used */
    int routing_hist_rows;          /* 1 (every MoE layer) or one per MoE layer, in layer order */
    double capacity_factor;         /* MoE expert capacity (Megatron's moe_expert_capacity_factor):
                                       > 0: each rank sends an expert at most ceil(its tokens x
                                       top_k / experts x C) tokens, the rest dropped; 0 dropless */
    int pad_to_capacity;            /* with capacity_factor: every expert's input padded to its
                                       capacity (moe_pad_expert_input_to_capacity): static sizes,
                                       no counts exchange nor host sync */
    int attn_kernel;                /* the attention kernel whose curve the GPU spec gives
                                       (gpu.attn_eff_* already replaced by lsim_synth_attn_kernel):
                                       LSIM_AK_SPEC (the spec's own), LSIM_AK_FA2, LSIM_AK_FA3;
                                       recorded in the options */
    int kernels;                    /* LSIM_KERN_FUSED: norms, RoPE, SwiGLU and the loss as fused
                                       kernels (Transformer Engine, torch.compile); LSIM_KERN_EAGER:
                                       as PyTorch eager runs torchtitan's model, op by op in fp32
                                       (docs/synthesis.md "Eager kernels") */
    int loss;                       /* LSIM_LOSS_FUSED: the cross entropy as one fused kernel on
                                       the logits (Megatron's vocab-parallel cross entropy,
                                       Transformer Engine); LSIM_LOSS_EAGER: PyTorch's
                                       cross_entropy on an fp32 copy of the logits, op by op, as
                                       torchtitan computes it (its blocks compiled, not its loss).
                                       --kernels eager implies it. Time and memory
                                       (docs/synthesis.md, docs/memory.md) */
    int etp;                        /* expert-tensor parallel ranks (docs/synthesis.md "Expert
                                       parallelism"): 0 or 1 off; each expert's FFN split over ETP
                                       GPUs, Megatron's expert layout ETP x EP x EDP (ETP fastest);
                                       the tokens dispatched to them all-gathered over the ETP group
                                       before the experts, their outputs reduce-scattered after */
} lsim_synth_cfg;
enum { LSIM_PREC_BF16 = 0, LSIM_PREC_FP8 };
enum { LSIM_FP8_CURRENT = 0, LSIM_FP8_DELAYED };

/* Activation recomputation, with the names the CLI and the files use. */
#define LSIM_RECOMPUTE_MODES(X)                                                                                        \
    X(LSIM_RC_NONE, "none") X(LSIM_RC_SELECTIVE, "selective") X(LSIM_RC_FULL, "full") X(LSIM_RC_OP, "op")
enum { LSIM_RECOMPUTE_MODES(LSIM_ENUM_ENTRY_) LSIM_RC_N };
/* "none", "selective", "full", "op"; "?" out of range. Local. */
const char *lsim_recompute_name(int mode);
enum { LSIM_GR_OVERLAP = 0, LSIM_GR_AFTER };
enum { LSIM_GA_FUSED = 0, LSIM_GA_BUFFER, LSIM_GA_AUTOGRAD };
enum { LSIM_ATTN_FLASH = 0, LSIM_ATTN_UNFUSED };
enum { LSIM_KERN_FUSED = 0, LSIM_KERN_EAGER };
enum { LSIM_LOSS_FUSED = 0, LSIM_LOSS_EAGER };
enum { LSIM_AK_SPEC = 0, LSIM_AK_FA2, LSIM_AK_FA3 };
/* Put the named attention kernel's curves, forward and backward (the GPU spec's attn_fa2_* or
 * attn_fa3_*) in c->gpu's attn_eff_max / attn_eff_half and record it in
 * c->attn_kernel: 0, or LSIM_EARG naming the spec when it has no such
 * curve or the attention is unfused. LSIM_AK_SPEC: nothing changes.
 * Local. */
int lsim_synth_attn_kernel(lsim_synth_cfg *c, int kernel, lsim_err *err);
/* Whether the loss runs as PyTorch eager (c->loss LSIM_LOSS_EAGER, or
 * --kernels eager, which runs everything eager). Local. */
int lsim_synth_loss_eager(const lsim_synth_cfg *c);

/* Defaults: 1F1B, elem_bytes 2, buckets of 40e6 parameters, p2p_sync,
 * embed_head and optimizer on, gpus 0, the options above at their first
 * value (dropout, grad_bytes 4, mem_check on); the GPU is the built-in h100
 * with its default topology. model/tp/pp/dp/batches are left 0 (must be
 * set). */
void lsim_synth_cfg_default(lsim_synth_cfg *c);

/* Memory per GPU of the most loaded pipeline stage (bytes): memest.h's
 * estimate (docs/memory.md) of the configuration: weights, gradients and
 * optimizer state (18 bytes per parameter: bf16 weight, fp32 main
 * gradient, fp32 master weight and two Adam moments; 16 with 2-byte
 * gradients; the distributed optimizer shards the 12 bytes of optimizer
 * state over DP), activations of the micro-batches in flight (the
 * schedule's largest count of forwards whose backward has not run) by
 * Korthikanti et al. 2022, communication buffers and a framework reserve.
 * A configuration memest.h refuses gives all zeros. */
typedef struct lsim_synth_mem {
    int stage;                 /* the most loaded stage */
    double params;             /* parameters on one of its GPUs */
    double states, activations, total; /* bytes */
    double other;              /* communication buffers and framework reserve (in total) */
    int inflight;              /* micro-batch chunks in flight on it */
} lsim_synth_mem;
void lsim_synth_memory(const lsim_synth_cfg *c, lsim_synth_mem *out);
/* The memest.h input of a configuration (shape, layout, micro-batches,
 * options; the distributed optimizer's shards are dp_cost's replicas when
 * given). */
void lsim_synth_memest_in(const lsim_synth_cfg *c, lsim_memest_in *in);

/* The options that differ from the defaults, as lumosim synth records them
 * in every graph's source ("synth:MODEL/gpuN opts:rc=full,sp"): "" when all
 * are defaults. out holds at least 320 bytes (every option at once). */
void lsim_synth_opts(const lsim_synth_cfg *c, char *out, size_t cap);

/* Check a configuration: positive sizes; tp * pp * dp == gpus (if given);
 * layers split over pp * vstages by split (stages.h); hidden, heads and ffn divisible by tp;
 * global batch divisible by micro_batch * dp; interleaved: micro-batches
 * per pipeline divisible by pp (Megatron's rule), pp >= 2; sequence
 * parallel: seq divisible by tp; forward-only: 1F1B; the GPU spec's and
 * the topology's values in range (lsim_gpu_spec_check); FP8 only on a GPU
 * with peak_flops_fp8; KV heads dividing heads and divisible by TP; with mem_check and
 * a known gpu.mem_capacity, lsim_synth_memory within it. One message naming
 * every number involved; LSIM_EARG. */
int lsim_synth_check(const lsim_synth_cfg *c, lsim_err *err);

/* GPUs synthesized: TP x PP x DP, PP x DP with tp_one. */
size_t lsim_synth_ngpus(const lsim_synth_cfg *c);
/* 1 when tp_one gives the step of the job with every TP rank exactly: no
 * host stalls (their draws are per GPU, so TP ranks would differ), and TP
 * divides the GPUs per node or is a multiple of it (then every TP rank's
 * data-parallel group and pipeline peers span the same nodes in the same
 * shape as rank 0's, and the network model (cost.h) times a group by its
 * node shape alone); else 0. Local. */
int lsim_synth_tp_one_exact(const lsim_synth_cfg *c);
int lsim_synth_microbatches(const lsim_synth_cfg *c); /* m, per pipeline */
/* Tokens routed to each of the model's experts (tokens[0..experts-1]) in
 * MoE layer `layer`, micro-batch mb of EP group `group` of pipeline stage
 * `stage`: the group's tokens (EP ranks x the micro-batch's tokens a rank
 * routes: micro_batch x seq / CP / TP) times top_k. Balanced routing
 * (routing_skew 0, what the published MoE rows force): spread evenly (the
 * remainder one each to the first experts). Skewed (routing_skew z > 0):
 * the r-th most loaded expert gets the share r^-z / sum_k k^-z (Zipf;
 * rounded by largest remainder, so the total is exact), the experts'
 * ranks a permutation drawn from (seed, stage, group, layer, mb).
 * routing_hist alone: the layer's row's shares, rounded the same way;
 * routing_dirichlet A: shares drawn from Dirichlet(A E p) per (seed,
 * stage, group, layer, mb), p the row or uniform. With capacity_factor C
 * each expert keeps at most EP x ceil(rank tokens x top_k / experts x C)
 * (every rank's capacity; the ranks' shares of an expert taken as equal),
 * exactly that with pad_to_capacity: the counts then sum to at most the
 * total.
 * Returns the total; 0 for a dense model (or no memory). Local. */
int64_t lsim_synth_expert_tokens(const lsim_synth_cfg *c, int stage, int group, int layer, int mb, int64_t *tokens);

/* Where routing that is not balanced loads the step most (synth prints it
 * and records it as the store's "routing" attribute): over every MoE
 * layer, micro-batch and EP group of the step (lsim_synth_expert_tokens),
 * the GPU whose local experts receive the most token copies in all, as a
 * multiple of the mean GPU's (the EP rank that holds up its group at the
 * combines most), and the single most loaded expert, as a multiple of its
 * balanced share. */
typedef struct lsim_synth_routing_sum {
    int on;                   /* 0: balanced routing or a dense model (nothing below) */
    int64_t gpu;              /* the most loaded GPU (global rank) */
    int stage, group, ep_rank;/* its pipeline stage, EP group in the stage and place in the group */
    double gpu_load;          /* its token copies over the step / the mean GPU's */
    int expert, layer, mb;    /* the most loaded expert, where */
    int64_t expert_gpu;       /* the GPU holding it */
    double expert_load;       /* its copies / the balanced share (group copies / experts) */
    double act_load;          /* the most loaded GPU's copies over the step / its balanced share
                                 (before any capacity cut or padding): what its routed experts'
                                 activations are of the balanced ones (the memory estimate) */
} lsim_synth_routing_sum;
/* 0 or LSIM_ENOMEM. Local. */
int lsim_synth_routing_summary(const lsim_synth_cfg *c, lsim_synth_routing_sum *out);

/* The MoE layers of a model (lsim_model_moe_layer over its layers). Local. */
int lsim_synth_moe_layers(const lsim_model_shape *m);
/* A measured histogram of the tokens each expert receives (synth
 * --routing-hist FILE): a text file of rows of m->experts numbers (token
 * counts or shares, 0 or more, not all 0), separated by commas, spaces or
 * tabs; '#' starts a comment, blank lines are skipped. One row (every MoE
 * layer) or one per MoE layer of m, in layer order. *out (the caller
 * frees it) gets the rows normalized to sum to 1, *rows their number.
 * LSIM_EFORMAT with one line naming the file, the line and what is wrong;
 * LSIM_EIO; LSIM_EARG for a model without experts. Local. */
int lsim_synth_routing_load(const char *path, const lsim_model_shape *m, double **out, int *rows, lsim_err *err);

/* ------------------------------------------------------------ schedules */

/* One unit of work on a pipeline stage: forward or backward of micro-batch
 * mb through model chunk `chunk` (0..V-1; the chunk holds layers
 * [(chunk * pp + stage) * L/(pp V), ... + L/(pp V)) ). */
typedef struct lsim_synth_step {
    uint8_t bwd;
    int32_t chunk, mb;
} lsim_synth_step;

/* The order of work on pipeline stage `stage` (0..pp-1) with m micro-batches
 * and V chunks: 1F1B (V = 1: warm-up pp-stage-1 forwards, steady one
 * forward one backward, cool-down backwards) or Megatron's interleaved 1F1B
 * (V > 1: warm-up (pp-stage-1)*2 + (V-1)*pp forward steps). out gets 2*m*V
 * steps. *nwarm (may be NULL) the number of warm-up forwards. 0 or
 * LSIM_EARG. */
int lsim_synth_schedule(int pp, int stage, int m, int V, lsim_synth_step *out, int *nwarm, lsim_err *err);

/* ------------------------------------------------------------ generation */

/* The graph of GPU `gpu` (0 .. ngpus-1). cfg must have passed
 * lsim_synth_check. source: the graph's source text (NULL: "synth:MODEL").
 * 0 or LSIM_ENOMEM / LSIM_EARG. */
int lsim_synth_gpu(const lsim_synth_cfg *c, uint32_t gpu, const char *source, lsim_graph **out, lsim_err *err);
/* The same, its builder sized from `like` (a GPU of the same job, or NULL):
 * the same graph, fewer reallocations and rehashes. */
int lsim_synth_gpu_like(const lsim_synth_cfg *c, uint32_t gpu, const char *source, const lsim_graph *like,
                        lsim_graph **out, lsim_err *err);
/* Every GPU's graph, out[0 .. lsim_synth_ngpus(c)) (caller-allocated; the
 * graphs are the caller's, NULL on failure), as lsim_synth_gpu makes them,
 * each builder sized from the GPU before (the stages of a job are about
 * the same size). 0 or lsim_synth_gpu's error. */
int lsim_synth_job(const lsim_synth_cfg *c, lsim_graph **out, lsim_err *err);

/* ------------------------------------------------------------ graph builder */

/* Incremental construction of an lsim_graph by hand (the synthesizer and
 * tests use it): processors, nodes, edges (any order), collectives; finish
 * builds the CSRs. Nodes are unobserved (LSIM_OBS_NONE) with no release
 * time unless set; every node belongs to iteration 0 when the graph has one
 * (lsim_gb_iteration). Errors are sticky: after a failure the adders do
 * nothing and lsim_gb_finish returns the first error. */
typedef struct lsim_gbuilder lsim_gbuilder;

int lsim_gb_new(const char *source, int32_t rank, int32_t world_size, lsim_gbuilder **out, lsim_err *err);
void lsim_gb_free(lsim_gbuilder *b);
/* Room for this many nodes and edges in all (a hint: they still grow past
 * it), so that a graph of known size is not copied as it grows. */
int lsim_gb_reserve(lsim_gbuilder *b, size_t nodes, size_t edges);
/* Room for n names in the builder's string table (lsim_strtab_reserve). */
int lsim_gb_reserve_strings(lsim_gbuilder *b, uint32_t n);
/* A processor: CPU thread (pid, tid) or GPU stream (device, stream); its index. */
int lsim_gb_proc(lsim_gbuilder *b, int is_gpu, int64_t pid, int64_t tid, uint32_t *idx);
/* Name the graph's single iteration (e.g. "ProfilerStep#0"). */
int lsim_gb_iteration(lsim_gbuilder *b, const char *name);
int lsim_gb_node(lsim_gbuilder *b, lsim_node_kind kind, uint8_t flags, uint32_t proc, const char *name, lsim_ns dur,
                 uint32_t *id);
/* name given as pieces, joined: prefix + suffix (either may be ""). */
int lsim_gb_node2(lsim_gbuilder *b, lsim_node_kind kind, uint8_t flags, uint32_t proc, const char *prefix,
                  const char *suffix, lsim_ns dur, uint32_t *id);
int lsim_gb_set_release(lsim_gbuilder *b, uint32_t node, lsim_ns release);
int lsim_gb_set_corr(lsim_gbuilder *b, uint32_t node, int64_t corr);
/* Edge src -> dst; cls may carry LSIM_EDGE_END. */
int lsim_gb_edge(lsim_gbuilder *b, uint32_t src, uint32_t dst, unsigned cls, lsim_ns delay);

/* The Megatron-style emitter on top of a builder: one CPU thread that
 * launches every kernel, and the streams of a training step. lsim_synth_gpu
 * builds whole GPUs with it, and the pipeline what-if (whatif/pipeline.c)
 * re-emits stages the same way. The caller fills b, cpu, stream[] (its
 * processors), lcpu and ldelay, sets last_cpu/last_on[]/last_comp to
 * LSIM_EMIT_NONE and tag[] as it goes; free pend when done. Errors: the
 * adders return LSIM_EMIT_NONE, pend growth sets rc. Local. */
enum { LSIM_ES_COMP = 0, LSIM_ES_TP, LSIM_ES_DP, LSIM_ES_SENDF, LSIM_ES_SENDB, LSIM_ES_RECVF, LSIM_ES_RECVB, LSIM_ES_N };
/* Streams only some jobs have (their processors made by whoever uses them,
 * last_on[] set to LSIM_EMIT_NONE by the caller): FSDP's parameter
 * all-gathers (stream 17), context parallelism's ring sends and receives
 * (40, 41). */
enum { LSIM_ES_FSDP = LSIM_ES_N, LSIM_ES_CPS, LSIM_ES_CPR, LSIM_ES_EP, LSIM_ES_MAX };
#define LSIM_ES_FSDP_ID 17
#define LSIM_ES_CPS_ID 40
#define LSIM_ES_CPR_ID 41
#define LSIM_ES_EP_ID 42 /* expert parallelism's dispatch and combine all-to-alls */
#define LSIM_EMIT_NONE UINT32_MAX
extern const int64_t lsim_emit_stream_id[LSIM_ES_N]; /* the streams' ids */
typedef struct lsim_emit {
    lsim_gbuilder *b;
    uint32_t cpu, stream[LSIM_ES_MAX];        /* processors */
    uint32_t last_cpu, last_on[LSIM_ES_MAX], last_comp;
    uint32_t *pend;                            /* GPU nodes the next compute kernel waits for */
    size_t npend, cappend;
    int64_t corr;                              /* last correlation id given */
    lsim_ns lcpu, ldelay;                      /* launch call duration; launch edge delay */
    char tag[64];                              /* name prefix, "L12.mb3.fwd." */
    int rc;
    /* host stalls before launch calls (0: none): probability, mean length,
     * the deterministic draw's state */
    double stall_prob;
    lsim_ns stall_ns, stall_sd_ns; /* mean, standard deviation (0: exponential) */
    uint64_t rng;
    double stall_phase;            /* launches until the next stall (set from rng when 0); after a
                                    * stall of x: x / stall_ns / stall_prob more (fair share) */
} lsim_emit;
/* The wait of a thread that becomes ready at a time unrelated to the host
 * stalls (the step's start, a blocking call's return): 0 without stalls,
 * else a draw from E's rng (gbuild.c). Local. */
lsim_ns lsim_emit_wake(lsim_emit *E);
/* A CPU node (named tag + what, lcpu long) after the previous one on the thread. */
uint32_t lsim_emit_cpu(lsim_emit *E, const char *what, uint8_t flags);
/* A CPU node of its own duration (host work that launches nothing). */
uint32_t lsim_emit_host(lsim_emit *E, const char *what, lsim_ns dur);
/* A kernel on stream s, launched by a call on the CPU thread, after the previous kernel on s. */
uint32_t lsim_emit_launch(lsim_emit *E, int s, const char *what, lsim_ns dur);
/* A compute kernel: waits (events) for everything pending. */
uint32_t lsim_emit_compute(lsim_emit *E, const char *what, lsim_ns dur);
/* A communication kernel on stream s, after the compute stream's latest kernel. */
uint32_t lsim_emit_comm(lsim_emit *E, int s, const char *what, lsim_ns dur, lsim_coll_kind kind, int64_t bytes,
                        int32_t gsize, const char *pg, int64_t seq);
/* A communication kernel of a group of one, which couples with nobody:
 * marked a collective (LSIM_NF_COLL: the breakdown counts it as
 * communication) but with no collective record, so the job's matcher
 * (job.h) has nothing to pair and the engine runs it for dur, the end an
 * instance of one participant would get (its own arrival + dur). */
uint32_t lsim_emit_comm_alone(lsim_emit *E, int s, const char *what, lsim_ns dur);
/* Make the next compute kernel wait for v. 0 or LSIM_ENOMEM (also in rc). */
int lsim_emit_pend(lsim_emit *E, uint32_t v);
/* Mark node a collective / p2p kernel (sets LSIM_NF_COLL): kind, bytes,
 * group size, process-group name and sequence number on it. */
int lsim_gb_coll(lsim_gbuilder *b, uint32_t node, lsim_coll_kind kind, int64_t bytes, int32_t group_size,
                 const char *pg_name, int64_t seq);
/* Build the graph (CSR in, CSR out, statistics) and free the builder. */
int lsim_gb_finish(lsim_gbuilder *b, lsim_graph **out, lsim_err *err);

#endif
