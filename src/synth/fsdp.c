/* FSDP (ZeRO-3: parameters, gradients and optimizer state sharded) in a
 * synthesized job, as PyTorch FSDP2 runs it under torchtitan
 * (docs/synthesis.md, "FSDP"; contract: fsdp.h).
 *
 * Each transformer layer, the embedding and the output head are units
 * (torchtitan's apply_fsdp: fully_shard per block, the embedding and the
 * norm + output). A unit's bf16 parameters are all-gathered over the shard
 * group on a stream of their own before it runs, the next unit's issued
 * when this one starts (FSDP2's prefetch: at most two units' gathered
 * parameters in flight), and its fp32 gradients (torchtitan's
 * mixed_precision_reduce = "float32", param "bfloat16") reduce-scattered
 * on the data-parallel stream after its backward; with hybrid sharding the
 * shard is then all-reduced over the replica group. */
#include "fsdp.h"
#include "lumosim/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE LSIM_EMIT_NONE
#define PARAM_BYTES 2 /* bf16 parameters all-gathered (torchtitan's mixed_precision_param) */

int synth_fsdp_keeps(const lsim_synth_cfg *c)
{
    /* torchtitan's reshard_after_forward policy "default": not pp_enabled
     * (a pipeline would gather every unit again for each micro-batch) */
    return c->pp > 1;
}

/* The full job's data-parallel replicas: dp_cost's when it sets them
 * (one replica simulated, the search's way: FSDP's groups are the full
 * job's, timed at its GPUs' places, each group holding the GPUs
 * synthesized), else dp */
static int full_dp(const lsim_synth_cfg *c) { return c->dp_cost > c->dp ? c->dp_cost : c->dp; }

int synth_fsdp_shards(const lsim_synth_cfg *c)
{
    /* with context parallelism the shard group is FSDP x CP GPUs
     * (torchtitan's dp_shard_cp mesh): --fsdp 1 --cp 8 shards over 8 */
    if (c->fsdp <= 0) return 0;
    int n = c->fsdp * (c->cp > 1 ? c->cp : 1);
    return n > 1 ? n : 0;
}

int synth_fsdp_check(const lsim_synth_cfg *c, lsim_err *err)
{
    if (c->fp8_all_gather && (c->precision != LSIM_PREC_FP8 || c->fsdp <= 0))
        return lsim_err_set(err, LSIM_EARG, "--fp8-all-gather needs --precision fp8 and --fsdp (it casts the FSDP "
                            "all-gathers' linear weights to FP8)");
    if (c->fsdp == 0) return 0;
    if (c->fsdp < 0 || c->fsdp > (1 << 24) || !synth_fsdp_shards(c))
        return lsim_err_set(err, LSIM_EARG, "--fsdp %d: the shard group (FSDP x CP) needs at least 2 GPUs", c->fsdp);
    if (full_dp(c) % c->fsdp)
        return lsim_err_set(err, LSIM_EARG, "--fsdp %d does not divide DP = %d (shard group x replica groups = DP)", c->fsdp,
                            full_dp(c));
    const char *bad = c->dist_opt                          ? "--distributed-optimizer"
                      : c->forward_only                    ? "--forward-only"
                      : c->grad_reduce != LSIM_GR_OVERLAP  ? "--grad-reduce after"
                      : c->grad_acc != LSIM_GA_FUSED       ? "--grad-acc buffer|autograd"
                      : !c->embed_head                     ? "equal stages without embedding and head"
                                                           : NULL;
    if (bad) return lsim_err_set(err, LSIM_EARG, "--fsdp with %s is not modelled", bad);
    return 0;
}

/* d: the index cp + CP dp in the DP x CP dimension (synth.h's numbering) */
static int32_t rank_of(const lsim_synth_cfg *c, int t, int d, int p)
{
    int cp = c->cp > 1 ? c->cp : 1;
    return (int32_t)(t + c->tp * (d + full_dp(c) * cp * p));
}

int synth_fsdp_init(synth_fsdp *F, const lsim_synth_cfg *c, int tpi, int dpi, int ppi, int m, double layer_params,
                    double emb_params, double lin, int nlin)
{
    memset(F, 0, sizeof *F);
    F->ahead = NONE;
    F->ahead_key = SYNTH_FSDP_NOKEY;
    if (!synth_fsdp_shards(c)) return 0;
    F->c = c;
    F->n = synth_fsdp_shards(c); /* dpi is cp + CP dp with context parallelism */
    F->nrep = full_dp(c) / c->fsdp;
    F->keep = synth_fsdp_keeps(c);
    F->m = m;
    /* torchtitan's mesh ["dp_replicate", "dp_shard"]: the shard group is n
     * consecutive data-parallel indices, the replica group every n-th */
    int r = dpi / F->n, s = dpi % F->n, have = c->dp * (c->cp > 1 ? c->cp : 1); /* synthesized: [0, have) */
    F->nsim = have - r * F->n < F->n ? have - r * F->n : F->n;
    F->nrepsim = (have - s + F->n - 1) / F->n < F->nrep ? (have - s + F->n - 1) / F->n : F->nrep;
    F->shard_ranks = lsim_malloc((size_t)F->n * sizeof *F->shard_ranks);
    F->rep_ranks = lsim_malloc((size_t)F->nrep * sizeof *F->rep_ranks);
    if (!F->shard_ranks || !F->rep_ranks) return LSIM_ENOMEM;
    for (int j = 0; j < F->n; j++) F->shard_ranks[j] = rank_of(c, tpi, r * F->n + j, ppi);
    for (int j = 0; j < F->nrep; j++) F->rep_ranks[j] = rank_of(c, tpi, j * F->n + s, ppi);
    snprintf(F->shard_pg, sizeof F->shard_pg, "fsdp:%d:%d:%d", tpi, ppi, r);
    snprintf(F->rep_pg, sizeof F->rep_pg, "hsdp:%d:%d:%d", tpi, ppi, s);
    F->params[0] = layer_params;
    F->params[1] = emb_params;
    F->lin = c->fp8_all_gather ? lin : 0, F->nlin = nlin;
    for (int i = 0; i < 2; i++) {
        /* all-gather: each rank's shard of bf16 parameters (cost.h's
         * convention: bytes = the rank's input), a layer's linear weights
         * in FP8 (1 byte) with fp8_all_gather (torchao casts
         * Float8Linear.weight's shard before the gather; norms, the
         * embedding and the output layer, which torchtitan leaves out of
         * the float8 conversion, stay bf16); reduce-scatter: the whole fp32
         * gradient (its input), each rank keeping 1/n; all-reduce: the shard */
        double f8 = i == 0 ? F->lin : 0;
        F->ag_bytes[i] = (int64_t)(((F->params[i] - f8) * PARAM_BYTES + f8) / F->n);
        F->rs_bytes[i] = (int64_t)(F->params[i] * c->grad_bytes);
        F->ar_bytes[i] = (int64_t)(F->params[i] * c->grad_bytes / F->n);
        F->ag[i] = lsim_cost_collective(&c->topo, LSIM_COLL_ALLGATHER, F->ag_bytes[i], F->shard_ranks, F->n, LSIM_ALGO_AUTO);
        F->rs[i] = lsim_cost_collective(&c->topo, LSIM_COLL_REDUCESCATTER, F->rs_bytes[i], F->shard_ranks, F->n,
                                        LSIM_ALGO_AUTO);
        F->ar[i] = F->nrep > 1 ? lsim_cost_collective(&c->topo, LSIM_COLL_ALLREDUCE, F->ar_bytes[i], F->rep_ranks, F->nrep,
                                                      LSIM_ALGO_AUTO)
                               : 0;
    }
    if (F->lin > 0) {
        /* the shard's cast (fp32 sharded weight read, FP8 written) before
         * each gather, with the scale precomputed after the last step; the
         * step's amax over every linear weight shard and the all-reduce
         * (max) of one fp32 scale per weight matrix */
        F->f8cast = lsim_cost_elementwise(&c->gpu, F->lin / F->n * 5.0);
    }
    return 0;
}

void synth_fsdp_fp8_scales(synth_fsdp *F, lsim_emit *E, int layers)
{
    if (F->n <= 1 || !(F->lin > 0) || layers <= 0) return;
    int64_t bytes = (int64_t)F->nlin * layers * 4;
    snprintf(E->tag, sizeof E->tag, "step.opt.");
    lsim_emit_compute(E, "fp8_weight_amax", lsim_cost_elementwise(&F->c->gpu, F->lin / F->n * 4.0 * layers));
    lsim_emit_comm(E, LSIM_ES_DP, "fp8_scale_allreduce",
                   lsim_cost_collective(&F->c->topo, LSIM_COLL_ALLREDUCE, bytes, F->shard_ranks, F->n, LSIM_ALGO_AUTO),
                   LSIM_COLL_ALLREDUCE, bytes, F->nsim, F->shard_pg, F->shard_seq++);
}

void synth_fsdp_free(synth_fsdp *F)
{
    free(F->shard_ranks);
    free(F->rep_ranks);
    F->shard_ranks = F->rep_ranks = NULL;
}

/* The unit after key in the chunk's forward (bwd = 0) or backward order. */
static int next_key(const synth_fsdp_chunk *ch, int key, int bwd)
{
    if (!bwd) {
        if (key == SYNTH_FSDP_EMB) return ch->lo;
        if (key >= 0 && key < ch->hi) return key + 1;
        if (key == ch->hi && ch->head) return SYNTH_FSDP_HEAD;
        return SYNTH_FSDP_NOKEY;
    }
    if (key == SYNTH_FSDP_HEAD) return ch->hi;
    if (key > ch->lo) return key - 1;
    if (key == ch->lo && ch->emb) return SYNTH_FSDP_EMB;
    return SYNTH_FSDP_NOKEY;
}

/* Whether unit key is gathered before it runs. Kept (PP): once, at its
 * chunk's first forward (micro-batch 0). Else every forward, and every
 * backward but that of the chunk's last forward unit, which torchtitan
 * does not reshard after forward (the backward would gather it at once). */
static int needs_gather(const synth_fsdp *F, const synth_fsdp_chunk *ch, int key, int mb, int bwd)
{
    if (F->keep) return !bwd && mb == 0;
    if (!bwd) return 1;
    return key != (ch->head ? SYNTH_FSDP_HEAD : ch->hi);
}

static void set_tag(const synth_fsdp *F, lsim_emit *E, int key, int mb, int bwd)
{
    const char *pass = bwd ? "bwd" : "fwd";
    if (F->c->terse_names) snprintf(E->tag, sizeof E->tag, ".%s.", pass);
    else if (key >= 0) snprintf(E->tag, sizeof E->tag, "L%d.mb%d.%s.", key, mb, pass);
    else snprintf(E->tag, sizeof E->tag, "%s.mb%d.%s.", key == SYNTH_FSDP_EMB ? "emb" : "head", mb, pass);
}

static uint32_t all_gather(synth_fsdp *F, lsim_emit *E, int key, int mb, int bwd)
{
    int i = key < 0;
    set_tag(F, E, key, mb, bwd);
    if (i == 0 && F->lin > 0) lsim_emit_launch(E, LSIM_ES_FSDP, "fsdp_fp8_cast", F->f8cast);
    return lsim_emit_comm(E, LSIM_ES_FSDP, "fsdp_allgather", F->ag[i], LSIM_COLL_ALLGATHER, F->ag_bytes[i], F->nsim,
                          F->shard_pg, F->shard_seq++);
}

void synth_fsdp_pre(synth_fsdp *F, lsim_emit *E, const synth_fsdp_chunk *ch, int key, int mb, int bwd)
{
    if (F->n <= 1) return;
    uint32_t v = NONE;
    if (needs_gather(F, ch, key, mb, bwd))
        v = F->ahead_key == key && F->ahead != NONE ? F->ahead : all_gather(F, E, key, mb, bwd);
    F->ahead = NONE;
    F->ahead_key = SYNTH_FSDP_NOKEY;
    if (v != NONE) lsim_emit_pend(E, v);
    /* the next unit's all-gather issued now: it waits for the compute
     * stream's latest kernel (the unit before this one), so it runs while
     * this unit computes */
    int nk = next_key(ch, key, bwd);
    if (nk != SYNTH_FSDP_NOKEY && needs_gather(F, ch, nk, mb, bwd)) {
        F->ahead = all_gather(F, E, nk, mb, bwd);
        F->ahead_key = nk;
    }
}

/* Unit key's reduce-scatter (and HSDP all-reduce) after micro-batch mb. */
static void reduce_unit(synth_fsdp *F, lsim_emit *E, int key, int mb)
{
    int i = key < 0;
    set_tag(F, E, key, mb, 1);
    lsim_emit_comm(E, LSIM_ES_DP, "fsdp_reducescatter", F->rs[i], LSIM_COLL_REDUCESCATTER, F->rs_bytes[i], F->nsim,
                   F->shard_pg, F->shard_seq++);
    if (F->nrep > 1)
        lsim_emit_comm(E, LSIM_ES_DP, "hsdp_allreduce", F->ar[i], LSIM_COLL_ALLREDUCE, F->ar_bytes[i], F->nrepsim,
                       F->rep_pg, F->rep_seq++);
}

void synth_fsdp_post(synth_fsdp *F, lsim_emit *E, int key, int mb)
{
    /* torchtitan without PP reduces every micro-batch's gradients (no
     * no_sync in its accumulation loop); under a pipeline the stage
     * reduces once, after its last backward (synth_fsdp_post_chunk) */
    if (F->n > 1 && !F->keep) reduce_unit(F, E, key, mb);
}

void synth_fsdp_post_chunk(synth_fsdp *F, lsim_emit *E, const synth_fsdp_chunk *ch, int mb)
{
    /* the pipeline's stage runs every backward with gradient sync off and,
     * after the last, FSDP's post_backward for each of its FSDP states
     * (stage.py backward_maybe_with_nosync): all the chunk's units at once,
     * once its whole backward is done, not overlapping it */
    if (F->n <= 1 || !F->keep || mb != F->m - 1) return;
    if (ch->emb) reduce_unit(F, E, SYNTH_FSDP_EMB, mb);
    for (int l = ch->lo; l <= ch->hi; l++) reduce_unit(F, E, l, mb);
    if (ch->head) reduce_unit(F, E, SYNTH_FSDP_HEAD, mb);
}
