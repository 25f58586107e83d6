/* How a model's transformer layers split over the virtual pipeline stages
 * (docs/synthesis.md, "Uneven pipeline stages").
 *
 * A pipeline of PP stages with V model chunks per GPU has S = PP x V
 * virtual stages; virtual stage vs = chunk x PP + stage holds a run of
 * consecutive layers, in order (Megatron's and torchtitan's "loop"
 * placement). Today's stacks split a model whose layers do not divide S in
 * one of a few ways, each a rule here:
 *
 *   even        L / S each; L must be divisible by S (the default)
 *   embed-loss  Megatron's account_for_embedding_in_pipeline_split and
 *               account_for_loss_in_pipeline_split: the embedding and the
 *               loss count as one layer each, (L + 2) / S per virtual stage,
 *               so the first and the last hold one transformer layer fewer;
 *               L + 2 must be divisible by S
 *   middle      torchtitan's generate_split_points (torchtitan 9dec370,
 *               torchtitan/parallelisms/pipelining_utils.py): base = L / S,
 *               the first stage base, the next L % S stages base + 1, the
 *               last what is left
 *   N,N,...     a list, one count per virtual stage, summing to L
 *
 * Every virtual stage must hold at least one layer. Pure plain data: a
 * split is a value (its list inside it), no allocation, no MPI. Local. */
#ifndef LUMOSIM_STAGES_H
#define LUMOSIM_STAGES_H

#include <stdint.h>

#include "lumosim/common.h"

enum { LSIM_SPLIT_EVEN = 0, LSIM_SPLIT_EMBED_LOSS, LSIM_SPLIT_MIDDLE, LSIM_SPLIT_LIST };
/* virtual stages a list can name */
#define LSIM_SPLIT_MAX_VS 1024

typedef struct lsim_split {
    int mode;                           /* LSIM_SPLIT_*; 0 (even) when zeroed */
    int n;                              /* LSIM_SPLIT_LIST: entries in list */
    uint16_t list[LSIM_SPLIT_MAX_VS];   /* LSIM_SPLIT_LIST: layers of virtual stage 0, 1, ... */
} lsim_split;

/* Parse what --pp-layers takes: "even", "embed-loss", "middle" or a comma
 * list of positive counts (at most LSIM_SPLIT_MAX_VS, each below 65536).
 * 0, or LSIM_EARG with a message naming the value. */
int lsim_split_parse(const char *s, lsim_split *out, lsim_err *err);

/* Whether sp splits `layers` layers over pp x V virtual stages with at
 * least one layer each. 0, or LSIM_EARG naming every number involved. */
int lsim_split_check(const lsim_split *sp, int layers, int pp, int V, lsim_err *err);

/* Layers of virtual stage vs (0 .. pp V - 1) and, in *first, its first
 * layer. sp must have passed lsim_split_check for the same numbers. */
int lsim_split_span(const lsim_split *sp, int layers, int pp, int V, int vs, int *first);

/* The split's name as --pp-layers writes it ("even", "embed-loss",
 * "middle", "list"). */
const char *lsim_split_name(const lsim_split *sp);

#endif
