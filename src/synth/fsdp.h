/* FSDP in a synthesized job (internal to src/synth; the model and its
 * sources: docs/synthesis.md, "FSDP"). gen.c calls these around each unit
 * (a transformer layer, the embedding, the output head) of a GPU's program;
 * what they emit goes through gen.c's emitter. Local. */
#ifndef LUMOSIM_SYNTH_FSDP_H
#define LUMOSIM_SYNTH_FSDP_H

#include "lumosim/synth.h"

#include <limits.h>

/* A unit's key: its layer (0..L-1), or one of these. */
#define SYNTH_FSDP_EMB (-1)
#define SYNTH_FSDP_HEAD (-2)
#define SYNTH_FSDP_NOKEY INT_MIN

/* The units of one model chunk on this GPU, in forward order: the
 * embedding (emb), layers lo..hi, the head (head). */
typedef struct synth_fsdp_chunk {
    int lo, hi, emb, head;
} synth_fsdp_chunk;

typedef struct synth_fsdp {
    const lsim_synth_cfg *c;
    int n, nrep;                 /* shard group size (FSDP x CP), replica groups (DP / FSDP) of the
                                    full job (dp_cost's replicas when set): the collectives' costs */
    int nsim, nrepsim;           /* the members of this GPU's shard and replica groups that are
                                    synthesized (fewer with dp_cost > dp): the groups' sizes */
    int keep;                    /* gathered once per step and kept (PP > 1: torchtitan's
                                    reshard_after_forward = not pp_enabled), gradients reduced
                                    on the last micro-batch only */
    int m;                       /* micro-batches per pipeline */
    int32_t *shard_ranks, *rep_ranks;
    char shard_pg[48], rep_pg[48];
    int64_t shard_seq, rep_seq;
    double params[2];            /* a layer's, the embedding's / head's parameters per GPU */
    double lin;                  /* a layer's linear weights per GPU (gathered in FP8 with fp8_all_gather) */
    int nlin;                    /* weight matrices per layer (their FP8 scales) */
    lsim_ns f8cast;              /* fp8_all_gather: a layer shard's cast before its gather */
    int64_t ag_bytes[2], rs_bytes[2], ar_bytes[2]; /* [0] a layer, [1] the embedding / head */
    lsim_ns ag[2], rs[2], ar[2];
    uint32_t ahead;              /* the all-gather issued one unit ahead */
    int ahead_key;
} synth_fsdp;

/* Off (synth_fsdp_shards 0): F->n = 0 and nothing is allocated.
 * Else the groups of GPU (tpi, dpi, ppi) (dpi: cp + CP dp with context
 * parallelism, whose ranks join the shard group) and the collectives' costs;
 * layer_params and emb_params are per GPU (TP shard), lin of layer_params
 * the nlin weight matrices of the layer's linears (FP8 all-gather). 0 or
 * LSIM_ENOMEM. */
int synth_fsdp_init(synth_fsdp *F, const lsim_synth_cfg *c, int tpi, int dpi, int ppi, int m, double layer_params,
                    double emb_params, double lin, int nlin);
void synth_fsdp_free(synth_fsdp *F);
/* Before unit `key` of chunk ch runs (forward, or backward with bwd) for
 * micro-batch mb: its all-gather (the one prefetched, or issued now) for
 * the next compute kernel to wait on, and the next unit's issued ahead. */
void synth_fsdp_pre(synth_fsdp *F, lsim_emit *E, const synth_fsdp_chunk *ch, int key, int mb, int bwd);
/* After unit key's backward: its gradients reduce-scattered over the shard
 * group (and, hybrid, the shard all-reduced over the replica group) on the
 * data-parallel stream, overlapping the rest of the backward. Not with a
 * pipeline (F->keep): synth_fsdp_post_chunk. */
void synth_fsdp_post(synth_fsdp *F, lsim_emit *E, int key, int mb);
/* After chunk ch's whole backward of micro-batch mb, under a pipeline: on
 * its last micro-batch every unit of the chunk reduced at once, in forward
 * order (torch.distributed.pipelining's stage calls FSDP's post_backward by
 * hand once the last backward is done); nothing otherwise. */
void synth_fsdp_post_chunk(synth_fsdp *F, lsim_emit *E, const synth_fsdp_chunk *ch, int mb);
/* fp8_all_gather, after the optimizer: torchao's
 * precompute_float8_dynamic_scale_for_fsdp, the amax of every linear
 * weight shard of the GPU's `layers` layers (one kernel) and one all-reduce
 * of their scales over the shard group. */
void synth_fsdp_fp8_scales(synth_fsdp *F, lsim_emit *E, int layers);
/* GPUs of the shard group: FSDP x CP; 0 when nothing is sharded. */
int synth_fsdp_shards(const lsim_synth_cfg *c);
/* The configuration checks of --fsdp (synth.h's lsim_synth_check). */
int synth_fsdp_check(const lsim_synth_cfg *c, lsim_err *err);
/* 1: each unit's gathered parameters are kept over the step (PP > 1), 0:
 * resharded after its forward and gathered again for its backward; the one
 * rule for the graph and the memory estimate. */
int synth_fsdp_keeps(const lsim_synth_cfg *c);

#endif
