/* Context parallelism in a synthesized job (internal to src/synth; the
 * model and its sources: docs/synthesis.md, "Context parallelism"). The
 * sequence is split over the CP ranks; gen.c costs every kernel on seq / CP
 * tokens and calls these in place of the attention core. Local. */
#ifndef LUMOSIM_SYNTH_CP_H
#define LUMOSIM_SYNTH_CP_H

#include "lumosim/synth.h"

typedef struct synth_cp {
    int n;                         /* CP ranks (0: off) */
    int32_t self, next, prev;      /* ranks in the job: this GPU, the ring's next and previous */
    int64_t kv_bytes;              /* one K and V block: 2 x (s / CP) x b x kv heads / TP x head dim x 2 */
    lsim_ns kv_ns;                 /* its transfer to the next rank */
    int64_t seq[4];                /* positions on the four channels: KV out, in; dKV out, in */
    char pg[4][48];
} synth_cp;

/* Off (c->cp <= 1): F->n = 0. Else the ring of GPU `self` whose CP peers
 * are next and prev; micro_batch x (seq / cp) tokens. cost_self and
 * cost_next: the two GPUs' places in the full job, where the transfer is
 * timed (they differ from self and next when --dp-cost simulates fewer
 * replicas, gen.c's cost_rank). */
void synth_cp_init(synth_cp *F, const lsim_synth_cfg *c, int32_t self, int32_t next, int32_t prev, int32_t cost_self,
                   int32_t cost_next);
/* The attention core of one layer and micro-batch, forward: CP blocks of
 * attention (blk_ns each: causal attention of seq / CP queries and keys,
 * the load-balanced share of one block), the K/V blocks passed around the
 * ring while the previous block is computed. pfx: the recomputation prefix. */
void synth_cp_attn_fwd(synth_cp *F, lsim_emit *E, const char *pfx, lsim_ns blk_ns);
/* Backward: the same ring of K/V blocks, and each block's dK/dV passed on
 * after it is computed, back to its owner after CP steps. */
void synth_cp_attn_bwd(synth_cp *F, lsim_emit *E, lsim_ns blk_ns);
/* The configuration checks of --cp (lsim_synth_check). */
int synth_cp_check(const lsim_synth_cfg *c, lsim_err *err);

#endif
