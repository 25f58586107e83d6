/* What-if transformations: "what would this job take if ..." answered by
 * transforming the execution graphs of a traced or synthesized job and
 * simulating the result (docs/whatif.md).
 *
 * Every transformation is a pure function from graphs to graphs: it reads
 * its input graph (never modifies it) and allocates a new one, and it adds
 * what it changed to a caller-owned lsim_wi_counts (nodes added, removed and
 * re-timed per node kind, collectives re-timed per group class, edges added
 * and removed). The CLI (`lumosim whatif`) chains them per GPU:
 *
 *   normalize -> layers -> reshape (hidden, ffn, tp) -> relayout (tp, dp)
 *   -> retime (network) -> gpu -> slow-gpu -> jitter
 *
 * Structure is identified first (lsim_wi_identify): which collectives are
 * tensor / data / pipeline parallel, each rank's coordinates, and the layers
 * (from synthesized node tags "L12.mb3.fwd.qkv_gemm"; Kineto traces carry
 * no such tags and their layer structure is reported as unknown).
 *
 * Group names after normalization are canonical, as lumosim synth writes
 * them: "tp:PP:DP" (TP group of stage PP in replica DP), "dp:TP:PP",
 * "p2p:A->B[#chan]"; GPU numbering is Megatron's, rank = tp + TP * (dp + DP
 * * pp).
 *
 * Ownership: functions returning graphs allocate them (lsim_graph_free);
 * lsim_wi_job_new allocates a job context (lsim_wi_job_free); everything
 * else is caller-owned plain data. Everything here is Local (no MPI). */
#ifndef LUMOSIM_WHATIF_H
#define LUMOSIM_WHATIF_H

#include <stdio.h>

#include "lumosim/cost.h"
#include "lumosim/graph.h"
#include "lumosim/job.h"

/* ------------------------------------------------------------ identification */

typedef enum lsim_wi_gclass {
    LSIM_WI_OTHER = 0, /* a group that is none of the below (or unknown ranks) */
    LSIM_WI_TP,        /* tensor parallel: consecutive ranks */
    LSIM_WI_DP,        /* data parallel: ranks TP apart */
    LSIM_WI_PP,        /* pipeline point to point: a pair of ranks */
    LSIM_WI_WORLD,     /* every rank of the job (no process group known) */
    LSIM_WI_NGCLASS
} lsim_wi_gclass;

const char *lsim_wi_gclass_name(int c); /* "other", "tp", "dp", "pp", "world" */

typedef enum lsim_wi_layer_source {
    LSIM_WI_LAYERS_UNKNOWN = 0, /* no layer structure found */
    LSIM_WI_LAYERS_TAGS,        /* synthesized node tags "L<n>.mb<k>.fwd." */
    LSIM_WI_LAYERS_ANNOTATIONS, /* record_function annotations named like
                                   layer[i] / layers.i (found and reported;
                                   transformations do not use them yet) */
    LSIM_WI_LAYERS_KERNELS      /* a Kineto trace's layers and kernel roles
                                   recovered from the repeating structure of
                                   its compute stream between tensor-parallel
                                   all-reduces (klayers says what was found,
                                   or why not) */
} lsim_wi_layer_source;

/* Kernel roles recovered from a trace's structure (src/whatif/trace_roles.c),
 * named as lumosim synth names them: 1 ln1, 2 qkv_gemm, 3 attn, 4 proj_gemm,
 * 5 attn_allreduce, 6 dropout_add, 7 ln2, 8 fc1_gemm, 9 gelu, 10 fc2_gemm,
 * 11 mlp_allreduce, 12 dropout_add2, 13 lnf, 14 logits_gemm,
 * 15 emb_allreduce (0: none). */
#define LSIM_WI_NTROLES 16
const char *lsim_wi_trace_role_name(int r);

/* Why a compute-stream kernel of a trace got no role. */
enum {
    LSIM_WI_WHY_OUTSIDE = 0,  /* outside the layers: embedding, head, loss */
    LSIM_WI_WHY_BACKWARD,     /* its name says backward pass or optimizer
                                 (only the forward pass is recovered) */
    LSIM_WI_WHY_POSITION,     /* inside a layer at a position that has no role */
    LSIM_WI_WHY_PATTERN,      /* inside a layer whose segment does not follow
                                 norm, GEMM, ..., GEMM */
    LSIM_WI_NWHY
};
const char *lsim_wi_unassigned_why(int w);

/* What the kernel structure of one GPU's trace shows. */
typedef struct lsim_wi_kernel_layers {
    int found;                 /* a repeating layer structure was found */
    int layers, runs, period;  /* layers per run, runs (forward micro-batches),
                                  TP all-reduces per layer */
    int forced;                /* layers from --trace-layers */
    uint64_t kernels, assigned, unassigned; /* compute-stream kernels */
    uint64_t ars, ars_assigned;             /* TP all-reduce kernels */
    uint64_t memops;           /* memsets / copies on the compute stream (kept) */
    int64_t kernels_per_layer, kernels_per_layer_max;
    uint64_t why_count[LSIM_WI_NWHY];
    uint64_t role_kernels[LSIM_WI_NTROLES];
    char why[192];             /* when not found */
} lsim_wi_kernel_layers;


const char *lsim_wi_layer_source_name(int s);

/* One DDP gradient bucket: a data-parallel or world all-reduce launched
 * during a backward pass. Its position in the pass is the traced time of
 * the backward compute kernels (not collectives) launched before it in
 * that pass, against the pass's whole backward compute time. */
#define LSIM_WI_MAX_BUCKETS 32
/* How a training step reduces its gradients across data-parallel ranks,
 * as its collectives show it (lsim_wi_training.dp_strategy): none seen;
 * DDP (all-reduces in the backward pass); a sharded optimizer (ZeRO-1/2,
 * Megatron's distributed optimizer: reduce-scatters of the gradients,
 * all-gathers of the parameters after the step, none in the forward
 * pass); FSDP / ZeRO-3 (parameter all-gathers in the forward pass,
 * reduce-scatters in the backward). */
enum { LSIM_WI_DPS_NONE = 0, LSIM_WI_DPS_DDP, LSIM_WI_DPS_SHARDED_OPT, LSIM_WI_DPS_FSDP, LSIM_WI_DPS_MIXED };
#define LSIM_WI_MAX_TLAYERS 64 /* layers listed per GPU by --identify's training object */
#define LSIM_WI_BUCKET_SEQS 3
typedef struct lsim_wi_bucket {
    int64_t bytes;               /* -1 unknown */
    int64_t bwd_ns_before;       /* backward compute time launched before it */
    int64_t pass_ns;             /* backward compute time of its whole pass */
    uint32_t bwd_kernels_before; /* backward compute kernels launched before it */
    int32_t pass;                /* its backward pass, 0-based */
    int32_t seqs[LSIM_WI_BUCKET_SEQS]; /* fwd_seq of the latest distinct
                                  backward kernels launched before it,
                                  latest first (the layer whose gradients it
                                  waited for); -1 none */
} lsim_wi_bucket;

/* The structure of a traced training step, from the graph's phase and
 * fwd_seq columns (graph.h). Times are traced GPU durations in ns (the
 * modelled duration for unobserved nodes). GPU work is in launch order:
 * by the start of the call that launched it (node order when unobserved). */
typedef struct lsim_wi_training {
    int known;                       /* some GPU node has a phase */
    uint32_t iterations;             /* ProfilerStep annotations */
    uint64_t kernels[LSIM_PHASE_N];  /* per lsim_phase */
    int64_t kernel_ns[LSIM_PHASE_N];
    uint64_t memops[LSIM_PHASE_N];   /* memcpy + memset */
    int64_t memop_ns[LSIM_PHASE_N];
    uint32_t passes;                 /* backward passes: runs of backward
                                        work between forward / optimizer /
                                        zero_grad / data-loader work */
    uint64_t nbuckets;               /* all of them (listed: the first
                                        LSIM_WI_MAX_BUCKETS) */
    int64_t bucket_bytes;            /* their known bytes */
    lsim_wi_bucket buckets[LSIM_WI_MAX_BUCKETS];
    /* what could not be recovered */
    uint64_t gpu_ops, gpu_unknown;   /* GPU nodes; of them without a phase */
    uint64_t bwd_kernels, bwd_no_fwd; /* backward kernels; of them without
                                         a forward op (fwd_seq -1) */
    uint64_t fwd_seqs, fwd_undiff;   /* distinct forward Sequence numbers;
                                        of them met by no backward work */
    /* parameter gradients (graph.h grad_bytes) and the DDP buckets they
     * make (LSIM_WI_DDP_* caps), what --dp from 1 inserts */
    uint64_t grad_nodes;             /* CPU nodes that end AccumulateGrad ops */
    int64_t grad_bytes;              /* their bytes, all passes */
    uint32_t grad_passes;            /* passes they split into */
    uint64_t ddp_buckets;            /* buckets over all passes */
    uint32_t ddp_first;              /* buckets of the first pass (listed: up
                                        to LSIM_WI_MAX_BUCKETS) */
    int64_t ddp_bytes[LSIM_WI_MAX_BUCKETS];
    /* the layers of the step (layer annotations for the forward pass,
     * autograd's Sequence numbers for the backward: what --layers cuts),
     * summed over the passes; per layer up to LSIM_WI_MAX_TLAYERS */
    int layers_cut;                  /* 1: cut; 0: not tried (no annotations) or why says why */
    int layers, layer_passes;
    uint64_t bwd_in_layers;          /* backward kernels inside a layer's backward */
    struct {
        uint32_t fwd_kernels, bwd_kernels;
        int64_t fwd_ns, bwd_ns, grad_bytes;
        uint32_t buckets;            /* gradient buckets launched in its backward stretch */
        int64_t bucket_bytes;
    } layer[LSIM_WI_MAX_TLAYERS];
    uint32_t buckets_outside;        /* buckets launched outside every layer (after the last one's backward) */
    /* the data-parallel collectives of the step (DP or world group, GPU
     * kernels) per phase and kind, and the strategy they show:
     * LSIM_WI_DPS_* */
    uint32_t dp_colls[LSIM_PHASE_N][3]; /* [phase][0 all-reduce, 1 all-gather, 2 reduce-scatter] */
    int dp_strategy;
    char layers_why[200];            /* why the layers were not cut ("" when cut or not tried) */
} lsim_wi_training;

/* What one GPU's graph shows about its place in the job. */
typedef struct lsim_wi_ident {
    int32_t rank;              /* the graph's rank, else its index in the job */
    int32_t world;             /* the graph's world size, -1 unknown */
    int tp_i, pp_i, dp_i;      /* coordinates from canonical group names; -1 unknown */
    int tp_size, dp_size;      /* group sizes of its TP / DP collectives; 0 none seen */
    uint64_t colls[LSIM_WI_NGCLASS]; /* collective / p2p kernels per class */
    int layer_source;          /* lsim_wi_layer_source */
    int layer_lo, layer_hi;    /* tagged layers on this GPU (-1 none) */
    int nchunks;               /* runs of consecutive layers (model chunks) */
    int layers_per_chunk;      /* 0 when chunks differ in size */
    uint64_t layer_nodes;      /* nodes inside layer subgraphs */
    int annotations;           /* distinct layer annotations (Kineto) */
    int forward_only;          /* no backward-pass or optimizer work seen */
    /* world-group all-reduces by the thread that launched them: the
     * autograd (backward) thread -- a CPU thread running
     * "autograd::engine::evaluate_function: ..." ops -- or any other. DDP's
     * gradient buckets are all-reduces launched from the backward thread
     * while it runs; tensor-parallel all-reduces also run in the forward
     * pass, from the main thread. lsim_wi_layout_of tells them apart. */
    uint64_t world_ar_bwd, world_ar_other;
    lsim_wi_kernel_layers klayers; /* layer_source LSIM_WI_LAYERS_KERNELS */
    lsim_wi_training training;  /* the training step's structure */
} lsim_wi_ident;

/* The "training" object of --identify's JSON for one GPU (no newline). */
void lsim_wi_put_training(FILE *f, const lsim_wi_training *t);

/* The "layers" members of --identify's JSON for kernel-structure layers
 * (after "source"): found, layers, micro-batches, roles per layer, the
 * unassigned kernels and why. */
void lsim_wi_put_kernel_layers(FILE *f, const lsim_wi_ident *ids, size_t n);

/* Identify one GPU's graph; gpu is its index in the job (used when the graph
 * has no rank). Group classes of real traces come from the process groups'
 * rank lists (pg_ranks): all ranks = world, consecutive = tp, equally spaced
 * = dp, two ranks with send/recv = pp. 0 or LSIM_ENOMEM. */
/* trace_layers: a trace's layers per micro-batch (--trace-layers), overriding
 * the count found from its repeating kernel structure; 0: found. The same
 * argument of the transforms below (and lsim_wi_pipe_cfg.trace_layers). */
int lsim_wi_identify(const lsim_graph *g, size_t gpu, int trace_layers, lsim_wi_ident *out, lsim_err *err);

/* The class of collective c (index into g->colls). */
lsim_wi_gclass lsim_wi_coll_class(const lsim_graph *g, size_t c);

typedef struct lsim_wi_layout {
    int tp, pp, dp;            /* widths; tp * pp * dp = world */
} lsim_wi_layout;

/* The job's parallel layout from every GPU's identification: TP and DP from
 * the group sizes, PP = world / (TP * DP); every GPU's rank must be its
 * index and its coordinates (where known) must agree with Megatron's
 * numbering. When every collective is on the whole world, it is DP if all
 * of its all-reduces come from the backward thread (DDP gradient buckets:
 * world_ar_bwd), else TP when the world fits in gpus_per_node GPUs, else
 * DP. LSIM_EARG
 * naming the GPU that disagrees. */
int lsim_wi_layout_of(const lsim_wi_ident *ids, size_t n, int gpus_per_node, lsim_wi_layout *out, lsim_err *err);

/* Coordinates of a rank in a layout, and back. */
void lsim_wi_coords(const lsim_wi_layout *L, int32_t rank, int *tp, int *dp, int *pp);
int32_t lsim_wi_rank(const lsim_wi_layout *L, int tp, int dp, int pp);

/* Member ranks of the canonical group `pg` ("tp:P:D", "dp:T:P", "p2p:A->B",
 * "" = world) in layout L: up to cap written to ranks, the count returned
 * (0: not a canonical name). */
int lsim_wi_group_ranks(const char *pg, const lsim_wi_layout *L, int32_t *ranks, int cap);

/* ------------------------------------------------------------ the record */

typedef struct lsim_wi_counts {
    uint64_t added[LSIM_N_NKINDS], removed[LSIM_N_NKINDS], retimed[LSIM_N_NKINDS];
    uint64_t coll_retimed[LSIM_WI_NGCLASS];
    uint64_t edges_added, edges_removed;
    uint64_t gpus_added, gpus_removed;
} lsim_wi_counts;

/* ------------------------------------------------------------ job context */

/* What normalization needs from the whole source job: the coupled
 * instances' transfer times (lsim_job_from_entries) and clock offsets. */
typedef struct lsim_wi_job lsim_wi_job;

/* From the job's collective entries (lsim_job_entries over every GPU; read,
 * not moved: lsim_job_from_entries). 0, LSIM_ETRACE (unmatched collectives, as lsim_job_match),
 * LSIM_ENOMEM. */
int lsim_wi_job_new(lsim_job_entry *entries, size_t ne, size_t ngpus, const int32_t *ranks, lsim_wi_job **out,
                    lsim_err *err);
void lsim_wi_job_free(lsim_wi_job *j);

/* ------------------------------------------------------------ transformations */

/* The what-if starting point of GPU `gpu` of the job: every node unobserved
 * (obs_start = obs_end = LSIM_OBS_NONE: a what-if has no actual times), each
 * coupled collective's dur = its instance's transfer time (observed or
 * modelled, as lsim_job_run would take it), release times shifted by the
 * GPU's clock offset, and process groups renamed to the canonical names of
 * layout L (L may be NULL: names kept). Simulating the result predicts what
 * simulating the input predicts. 0 or LSIM_ENOMEM. */
int lsim_wi_normalize(const lsim_graph *in, const lsim_wi_job *job, size_t gpu, const lsim_wi_layout *L,
                      lsim_graph **out, lsim_wi_counts *rec, lsim_err *err);

/* Layers: the model gets `layers` layers instead of the source's (tags, or
 * on a forward-only trace its layer annotations or kernel structure:
 * LSIM_EARG "layer structure unknown" otherwise; topo unused for traces). Each model chunk
 * keeps its first and last layers and loses or duplicates whole layer
 * subgraphs (every micro-batch's forward and backward, the optimizer step,
 * the layer's own gradient bucket) with their collectives; edges are rewired
 * along each processor's order; collective sequence numbers renumbered;
 * layers renamed. Gradient buckets that hold several layers are resized
 * (and re-timed on topo) in proportion. layers must be divisible by PP x V
 * (LSIM_EARG naming the numbers). */
int lsim_wi_layers(const lsim_graph *in, const lsim_wi_layout *L, int layers, int trace_layers, const lsim_topology *topo,
                   lsim_graph **out, lsim_wi_counts *rec, lsim_err *err);

/* Data parallel: the graph of GPU new_gpu of a job with width new_dp, made
 * from `in`, the graph of the source GPU with the same TP and PP coordinates
 * and DP coordinate new_dp's % from->dp. Groups renamed, DP group sizes set,
 * rank and world size set; durations unchanged (lsim_wi_retime re-times). */
int lsim_wi_dp(const lsim_graph *in, const lsim_wi_layout *from, int new_dp, uint32_t new_gpu, lsim_graph **out,
               lsim_wi_counts *rec, lsim_err *err);

/* Model shape of a job (for --hidden, --ffn, --tp): the widths, the
 * micro-batch (sequences), the element size of activations and GEMMs (2)
 * and the TP width the kernels are sharded over. */
typedef struct lsim_wi_model {
    int hidden, ffn, heads, head_dim, seq, vocab;
    int micro_batch, elem_bytes, tp;
} lsim_wi_model;

/* Positive sizes, and tp dividing heads, hidden, FFN and vocabulary
 * (LSIM_EARG naming every number; `what` starts the message). */
int lsim_wi_model_check(const lsim_wi_model *M, const char *what, lsim_err *err);

/* The source model of GPU graph g in layout L: `given` (hidden > 0) or the
 * built-in shape named by a synthesized graph's source ("synth:gpt3-15b/..");
 * tp = L->tp; the micro-batch from the activations' size (TP all-reduce or
 * pipeline transfer = micro-batch x seq x hidden x elem_bytes), which must
 * be whole (else the shape is not the source's: LSIM_EARG), else given's,
 * else 1. LSIM_EARG when the shape is unknown. */
int lsim_wi_model_of(const lsim_graph *g, const lsim_wi_layout *L, const lsim_wi_model *given, int trace_layers,
                     lsim_wi_model *out, lsim_err *err);

/* Width and TP: every layer-tagged kernel (its role from the tag,
 * "L12.mb3.bwd.fc1_wgrad") re-timed by dur x cost(role in `to`) /
 * cost(role in `from`) on gpu (lsim_cost_gemm / _attention /
 * _elementwise with the shapes lumosim synth uses); TP all-reduces and
 * pipeline transfers resized to the new activations, gradient buckets to
 * the new parameter counts, each re-timed by the collective cost ratio in
 * layout L on topo (group sizes are lsim_wi_relayout's). Graphs without
 * layer tags: LSIM_EARG "layer structure unknown". */
int lsim_wi_reshape(const lsim_graph *in, const lsim_wi_layout *L, const lsim_wi_model *from, const lsim_wi_model *to,
                    int trace_layers, const lsim_gpu_spec *gpu, const lsim_topology *topo, lsim_graph **out, lsim_wi_counts *rec,
                    lsim_err *err);

/* TP and DP widths: the graph of GPU new_gpu of layout `to` (same PP),
 * made from `in`, the graph of the source GPU (t % from->tp, d % from->dp,
 * p) for new coordinates (t, d, p). TP / DP / pipeline groups renamed and
 * sized, rank and world size set; at width 1 the TP (DP) collectives and
 * their launches are removed. From width 1 to more: LSIM_EARG (nothing to
 * replicate). Durations unchanged (lsim_wi_reshape, lsim_wi_retime). */
int lsim_wi_relayout(const lsim_graph *in, const lsim_wi_layout *from, const lsim_wi_layout *to, uint32_t new_gpu,
                     lsim_graph **out, lsim_wi_counts *rec, lsim_err *err);

/* Network: re-time every collective and p2p kernel whose cost changes:
 * dur' = dur * cost(new group in Lnew, tnew) / cost(its source group in
 * Lold, told), lsim_cost_collective / lsim_cost_p2p (the ratio keeps what
 * the trace measured; on synthesized graphs it gives the model's new time).
 * The source group of a renamed group: its members mapped back to Lold
 * (DP coordinate modulo Lold's DP); a DP group's source is the whole source
 * DP group. 0 or LSIM_ENOMEM. */
int lsim_wi_retime(const lsim_graph *in, const lsim_wi_layout *Lold, const lsim_wi_layout *Lnew,
                   const lsim_topology *told, const lsim_topology *tnew, lsim_graph **out, lsim_wi_counts *rec,
                   lsim_err *err);

/* Another GPU: compute kernels re-timed from `from` to `to` by kernel class
 * (names: GEMM-like, attention, else memory-bound): the work a duration
 * stands for is recovered by inverting the roofline of `from` and costed on
 * `to` (docs/whatif.md). Launch costs unchanged. */
int lsim_wi_gpu(const lsim_graph *in, const lsim_gpu_spec *from, const lsim_gpu_spec *to, lsim_graph **out,
                lsim_wi_counts *rec, lsim_err *err);

/* A straggler: every compute kernel, copy and memset (not collectives) of
 * this graph lasts factor times as long (LSIM_EARG outside the range of
 * lsim_wi_slow_check). */
int lsim_wi_slow(const lsim_graph *in, double factor, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err);

/* The accepted --slow-gpu factors, LSIM_WI_SLOW_MIN..LSIM_WI_SLOW_MAX
 * (0.001..1000): stragglers measured in production training are 1.1x to a
 * few times slower, a GPU 1000x slower than its peers is a failed one, and
 * the bound keeps a 10 s kernel within the graph bounds (graph.h,
 * LSIM_DUR_MAX). The accepted --jitter relative standard deviations,
 * 0..LSIM_WI_JITTER_MAX (10, i.e. 1000 %): measured kernel noise is a few
 * per cent. 0 or LSIM_EARG with one line ("--slow-gpu factor ... is
 * outside ..."). Local. */
#define LSIM_WI_SLOW_MIN 1e-3
#define LSIM_WI_SLOW_MAX 1e3
#define LSIM_WI_JITTER_MAX 10.0
int lsim_wi_slow_check(double factor, lsim_err *err);
int lsim_wi_jitter_check(double sigma, lsim_err *err);

/* Noise: each compute kernel's dur *= max(0, 1 + s * z), z standard normal
 * drawn from (seed, gpu, node) alone (deterministic, independent of batching
 * and process layout). s = sigma (>= 0), or with sigma < 0 ("trace") the
 * relative standard deviation of the durations of the graph's kernels of
 * the same name (synthesized tags stripped from the name). */
int lsim_wi_jitter(const lsim_graph *in, double sigma, uint64_t seed, uint32_t gpu, lsim_graph **out,
                   lsim_wi_counts *rec, lsim_err *err);

/* ------------------------------------------------------------ pipeline */

/* Pipeline depth, schedule and micro-batches (--pp, --schedule,
 * --micro-batches; synthesized stores: layer-tagged nodes). The work of one
 * (tp, dp) column of the source (its GPU on every pipeline stage) is cut
 * into segments by the node tags (layer / embedding / head, micro-batch,
 * forward / backward / optimizer) and each GPU of the new pipeline is
 * emitted in the new schedule's order, wired as lumosim synth wires a GPU:
 * kernels keep their own durations (micro-batch k takes the source's
 * k mod m), send/recv kernels between the new stages are timed by the p2p
 * cost ratio to a source transfer (the cost model when the source has no
 * pipeline), gradient buckets are refilled with the stage's layers and
 * timed by the collective cost ratio to a source bucket. The new job keeps
 * the source's TP and DP (lsim_wi_relayout changes them afterwards). */
typedef struct lsim_wi_pipe lsim_wi_pipe;

typedef struct lsim_wi_pipe_cfg {
    int pp;               /* pipeline stages */
    int vstages;          /* 1: 1F1B; V > 1: interleaved 1F1B with V chunks per GPU */
    int micro_batches;    /* per pipeline */
    double bucket_params; /* gradient bucket size in parameters (0: 40e6, as lumosim synth) */
    int tp_to;            /* the job's final TP width (0: the source's). From a
                             TP-1 source to more, the TP all-reduces are
                             emitted where lumosim synth places them (after
                             the attention projection and FC2 forward, FC1
                             and QKV weight gradients backward, the
                             embedding lookup, the loss) in a group of one,
                             for lsim_wi_relayout to widen and lsim_wi_retime
                             to time */
    int dp_to;            /* the job's final DP width (0: the source's). From a
                             DP-1 source to more, the gradient buckets are
                             emitted in a group of one, for lsim_wi_relayout
                             to widen and lsim_wi_retime to time (the cost of
                             the new group: a group of one costs nothing) */
    int64_t act_bytes;    /* traced training steps without TP all-reduces:
                             the activations a pipeline transfer carries
                             (micro-batch x seq x hidden x 2 from --model and
                             --micro-batch), 0 unknown */
    int trace_layers;     /* a trace's layers per micro-batch (--trace-layers), 0: found (lsim_wi_identify) */
} lsim_wi_pipe_cfg;

/* An empty column (tp_i, dp_i) of source layout L. 0 or LSIM_ENOMEM. */
int lsim_wi_pipe_new(const lsim_wi_layout *L, int tp_i, int dp_i, lsim_wi_pipe **out, lsim_err *err);
void lsim_wi_pipe_free(lsim_wi_pipe *s);
/* Add the column's source GPU of stage pp_i (normalized; the graph is only
 * read). LSIM_EARG for a kernel without a tag or a collective of no known
 * class; LSIM_ENOMEM. */
int lsim_wi_pipe_add(lsim_wi_pipe *s, const lsim_graph *g, int pp_i, lsim_err *err);
/* The source's layers and micro-batches per pipeline (from the tags). */
void lsim_wi_pipe_source(const lsim_wi_pipe *s, int *layers, int *micro_batches);
/* Can the column be re-pipelined to `to`? LSIM_EARG naming the numbers:
 * more stages than layers, layers not divisible by PP x V, interleaved with
 * PP < 2 or micro-batches not divisible by PP, a layer / micro-batch
 * missing from the source. */
int lsim_wi_pipe_check(lsim_wi_pipe *s, const lsim_wi_pipe_cfg *to, lsim_err *err);
/* The size of the largest GPU the column emits in the new pipeline `to`
 * (after lsim_wi_pipe_check): an estimate, from the source's kernels per
 * layer, embedding, head and optimizer scaled by the new micro-batches and
 * the new stage's share of the layers; about 2 nodes per kernel (its
 * launch), 1.8 edges per node, a name per kernel (measured on synthesized
 * columns: 2.02 nodes per kernel, 1.68 edges per node). For the memory
 * check before the emission (whatif --micro-batches 100000). Local. */
void lsim_wi_pipe_estimate(const lsim_wi_pipe *s, const lsim_wi_pipe_cfg *to, double *nodes, double *edges,
                           double *strings);
/* The graph of stage pp_i of the column in the new pipeline (rank and
 * groups in layout (L.tp, to->pp, L.dp)). M: the model (layer and
 * embedding parameters for the buckets, activations for the transfers; its
 * tp is the final TP); topo: the source network (costs). New transfers and
 * buckets counted as re-timed in rec. */
int lsim_wi_pipeline(lsim_wi_pipe *s, const lsim_wi_pipe_cfg *to, const lsim_wi_model *M, const lsim_topology *topo,
                     int pp_i, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err);
/* After the column's new GPUs are emitted: nodes added / removed per kind,
 * edges and GPUs, as the difference between the source column and the new
 * one. */
void lsim_wi_pipe_record(const lsim_wi_pipe *s, lsim_wi_counts *rec);

/* --pp on a Kineto trace (trace_pipe.c): a forward-only PP-1 trace with one
 * forward micro-batch, its layers recovered from the kernel structure, cut
 * into the stages of a 1F1B (or interleaved) pipeline. Checks only, from
 * the identification (source: for messages; forward_only, layers and runs
 * as lsim_wi_ident / its klayers report them, layers after --layers):
 * LSIM_EARG naming the numbers. */
int lsim_wi_trace_pipe_check(const char *source, int forward_only, const lsim_wi_layout *L,
                             const lsim_wi_pipe_cfg *to, int layers, int runs, lsim_err *err);
/* The graph of stage pp_i of column (tp_i, dp_i) in layout (L.tp, to->pp,
 * L.dp), from `in`, that column's normalized source GPU (only read): the
 * other stages' layers removed with their launches and CPU work (work
 * before the first layer on stage 0, after the last on the last stage, CPU
 * work outside the layers on every stage); at each stage boundary a
 * receive / send kernel on a new pipeline stream, launched from the
 * launching thread and followed by a blocking synchronize (Megatron's
 * batch_p2p_sync), the receive before the layer's first kernel (event) and
 * the send after its last, timed lsim_cost_p2p(topo, activations) with the
 * activations the layers' TP all-reduces carry; groups renamed to stage
 * pp_i, rank and world size set. New transfers counted as re-timed (pp) in
 * rec; node counts are left to the caller (the difference between a
 * column and its stages). LSIM_EARG as lsim_wi_trace_pipe_check, or when
 * the structure cannot be placed; LSIM_ENOMEM. */
int lsim_wi_trace_pipeline(const lsim_graph *in, const lsim_wi_layout *L, const lsim_wi_pipe_cfg *to,
                           const lsim_topology *topo, int tp_i, int dp_i, int pp_i, lsim_graph **out,
                           lsim_wi_counts *rec, lsim_err *err);

/* PyTorch DDP's defaults (torch.nn.parallel.DistributedDataParallel:
 * bucket_cap_mb = 25; torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES =
 * 1 MiB, a small first bucket so the first all-reduce starts early). */
#define LSIM_WI_DDP_CAP (25ll * 1024 * 1024)
#define LSIM_WI_DDP_FIRST_CAP (1024ll * 1024)

/* DP 1 -> N on a traced training step (trace_ddp.c): in's gradient buckets
 * (DDP's assignment over its AccumulateGrad sizes, graph.h grad_bytes;
 * LSIM_WI_DDP_* caps) inserted as all-reduces in a group of one, named
 * "dp:T:P" for rank me of layout L (DP 1): each launched from the thread
 * right after the bucket's last gradient (median launch call and delay of
 * the trace), on a new stream of the compute work's device, in bucket
 * order, waiting (event) for the GPU work that thread launched last; the
 * first GPU work launched on that stream after a pass's last gradient
 * waits for the pass's last bucket. Timed lsim_cost_collective(topo) for
 * the group of one: lsim_wi_relayout then widens them and lsim_wi_retime
 * re-times them for the new group. A traced DP > 1 step (its DP or world
 * all-reduces of the backward pass: the buckets it ran) has them removed
 * with their launch calls and new ones cut from its gradients in their
 * group, each timed lsim_cost_collective x the median of the traced
 * buckets' duration over their modelled cost (after --layers or a new
 * shape changed the gradients). *out is new (caller frees); added
 * nodes in rec, buckets as re-timed (dp). LSIM_EARG: no gradient sizes,
 * traced buckets without sizes; LSIM_ENOMEM. Local. */
int lsim_wi_trace_ddp(const lsim_graph *in, const lsim_wi_layout *L, const lsim_topology *topo, int32_t me,
                      lsim_graph **out, lsim_wi_counts *rec, lsim_err *err);

/* TP 1 -> N on a traced training step (train_tp.c): Megatron-LM's
 * tensor-parallel all-reduces inserted where its layers make them (after
 * each layer's projection and FC2 forward, its FC1 and QKV data gradients
 * backward, the embedding lookup; kernel roles by wi_train_roles_find), of
 * act_bytes each, in a group of one named "tp:P:D" for rank me of layout
 * L (TP 1): each launched right after its kernel from that kernel's
 * thread, on a new stream, waiting (event) for the kernel, the compute
 * stream's next kernel waiting for it; timed lsim_cost_collective(topo)
 * for the group of one, for lsim_wi_relayout to widen and lsim_wi_retime
 * to re-time. The kernels themselves are re-timed by lsim_wi_reshape at the
 * new width, before. *out is new (caller frees); added nodes in rec, the
 * all-reduces as re-timed (tp). LSIM_EARG: no sizes, no such kernels, a
 * kernel without its launch; LSIM_ENOMEM. Local. */
int lsim_wi_train_tp(const lsim_graph *in, const lsim_wi_layout *L, int64_t act_bytes, const lsim_topology *topo,
                     int32_t me, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err);

#endif
