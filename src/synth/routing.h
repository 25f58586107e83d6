/* How a MoE layer's routed tokens fall on the experts in a synthesized job
 * (internal to src/synth; the model: docs/synthesis.md, "Skewed routing").
 * Balanced (the default, what the published MoE rows force), a Zipf law
 * (--routing-skew), a Dirichlet draw (--routing-dirichlet) around uniform
 * shares or around a measured histogram (--routing-hist), or the histogram
 * itself. Every draw is a function of (seed, stage, EP group, layer,
 * micro-batch) alone, so any number of MPI ranks makes the same job.
 * Local. */
#ifndef LUMOSIM_SYNTH_ROUTING_H
#define LUMOSIM_SYNTH_ROUTING_H

#include "lumosim/synth.h"

/* Tokens a rank routes per micro-batch: micro_batch x seq / TP (seq
 * already / CP). */
int64_t synth_rank_tokens(const lsim_synth_cfg *c, int seq);
/* 1 when the tokens per expert differ from layer to layer or micro-batch
 * to micro-batch (a skew, a Dirichlet or a histogram), 0 when balanced. */
int synth_routing_drawn(const lsim_synth_cfg *c);
/* The tokens per expert (tok[0 .. experts-1]) of EP group `group` of
 * stage `stage` in layer `layer`, micro-batch mb, its ranks routing
 * seq-token micro-batches; scratch holds 2 x experts doubles. Returns the
 * total, EP x synth_rank_tokens x top_k, which the counts sum to exactly
 * when dropless; with a capacity each expert is cut to (padded to, with
 * pad_to_capacity) EP x synth_capacity. */
int64_t synth_route(const lsim_synth_cfg *c, int seq, int stage, int group, int layer, int mb, int64_t *tok,
                    double *scratch);
/* A rank's capacity per expert (Megatron's get_capacity: ceil(the rank's
 * tokens x top_k / experts x capacity_factor), at least 1) for seq-token
 * micro-batches; 0 when dropless. */
int64_t synth_capacity(const lsim_synth_cfg *c, int seq);

/* The most loaded GPU's routed token copies over the step, over its
 * balanced share: 1 for balanced dropless routing; the capacity's share
 * with padding (and below 1 when a capacity factor under 1 cuts balanced
 * routing); the routing summary's act_load when routing is drawn (every
 * stage's layers, groups and micro-batches; 0 or more). Scales the routed
 * experts' activations in the memory estimate. Local. */
double synth_expert_act_load(const lsim_synth_cfg *c);
/* The routing options' checks (synth_moe_check calls it): one line naming
 * the option. */
int synth_routing_check(const lsim_synth_cfg *c, lsim_err *err);

#endif
