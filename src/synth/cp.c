/* Context parallelism (ring attention) in a synthesized job, as torchtitan
 * (torch.distributed.tensor.experimental.context_parallel, ring over the
 * CP mesh) and Megatron (Transformer Engine's AttnFuncWithCPAndKVP2P) run
 * it (docs/synthesis.md, "Context parallelism"; contract: cp.h).
 *
 * Each rank holds seq / CP tokens, split load-balanced (torchtitan's and
 * Megatron's: the sequence cut into 2 CP chunks, rank r holding chunks r
 * and 2 CP - 1 - r), so each of the CP steps of the ring costs every rank
 * the same: the causal attention of seq / CP queries and keys. At step k
 * the rank computes its queries against the K/V block it holds while it
 * sends that block to the next rank and receives the next one from the
 * previous rank (point-to-point, as Megatron's batch_isend_irecv); the
 * next step waits for the receive. The backward passes the K/V blocks the
 * same way and each block's dK/dV gradient after it is computed: CP - 1
 * K/V transfers and CP dK/dV transfers per layer (the last returns the
 * gradient to the block's owner). Not modelled: the kernels that merge
 * each step's partial output by its log-sum-exp (element-wise over the
 * rank's output, small beside the attention). */
#include "cp.h"

#include <stdio.h>
#include <string.h>

#define NONE LSIM_EMIT_NONE

int synth_cp_check(const lsim_synth_cfg *c, lsim_err *err)
{
    if (c->cp <= 1) return 0;
    if (c->cp > (1 << 24)) return lsim_err_set(err, LSIM_EARG, "--cp %d: too many ranks", c->cp);
    if (c->model.seq % (2 * c->cp))
        return lsim_err_set(err, LSIM_EARG,
                            "--cp %d: the sequence length %d is not divisible by 2 x CP = %d (the load-balanced causal "
                            "split)",
                            c->cp, c->model.seq, 2 * c->cp);
    if (c->seq_parallel && (c->model.seq / c->cp) % c->tp)
        return lsim_err_set(err, LSIM_EARG, "--cp %d with --sequence-parallel: seq / CP = %d is not divisible by TP = %d",
                            c->cp, c->model.seq / c->cp, c->tp);
    const char *bad = c->attention == LSIM_ATTN_UNFUSED ? "--attention unfused"
                      : c->tp_one                      ? "one TP rank per stage (search)"
                                                       : NULL;
    if (bad) return lsim_err_set(err, LSIM_EARG, "--cp with %s is not modelled", bad);
    return 0;
}

void synth_cp_init(synth_cp *F, const lsim_synth_cfg *c, int32_t self, int32_t next, int32_t prev, int32_t cost_self,
                   int32_t cost_next)
{
    memset(F, 0, sizeof *F);
    if (c->cp <= 1) return;
    const lsim_model_shape *M = &c->model;
    F->n = c->cp;
    F->self = self, F->next = next, F->prev = prev;
    /* K and V of the rank's tokens: the model's KV heads (grouped-query
     * attention passes kv_heads, not heads, around the ring: Llama 3 8B's 8
     * of 32 make each block 4 times smaller than multi-head attention's) */
    int kv_heads = lsim_model_kv_heads(M);
    F->kv_bytes = 2 * (int64_t)c->micro_batch * (M->seq / c->cp) * (kv_heads / c->tp) * M->head_dim * c->elem_bytes;
    F->kv_ns = lsim_cost_p2p(&c->topo, F->kv_bytes, cost_self, cost_next);
    static const char *const CH[2] = {"cpkv", "cpdkv"};
    for (int i = 0; i < 2; i++) {
        snprintf(F->pg[2 * i], sizeof F->pg[0], "p2p:%d->%d#%s", self, next, CH[i]);
        snprintf(F->pg[2 * i + 1], sizeof F->pg[0], "p2p:%d->%d#%s", prev, self, CH[i]);
    }
}

/* One transfer around the ring on channel ch (0: K/V, 1: dK/dV): the send
 * to the next rank after `after` (the block it forwards), the receive from
 * the previous; the receive's kernel. */
static uint32_t ring_step(synth_cp *F, lsim_emit *E, int ch, uint32_t after)
{
    uint32_t s = lsim_emit_comm(E, LSIM_ES_CPS, ch ? "cp_dkv_send" : "cp_kv_send", F->kv_ns, LSIM_COLL_SEND, F->kv_bytes,
                                2, F->pg[2 * ch], F->seq[2 * ch]++);
    if (s != NONE && after != NONE) lsim_gb_edge(E->b, after, s, LSIM_E_EVENT, 0);
    return lsim_emit_comm(E, LSIM_ES_CPR, ch ? "cp_dkv_recv" : "cp_kv_recv", F->kv_ns, LSIM_COLL_RECV, F->kv_bytes, 2,
                          F->pg[2 * ch + 1], F->seq[2 * ch + 1]++);
}

static void block(lsim_emit *E, const char *pfx, lsim_ns d)
{
    char nm[64];
    snprintf(nm, sizeof nm, "%sattn", pfx);
    lsim_emit_compute(E, nm, d);
}

void synth_cp_attn_fwd(synth_cp *F, lsim_emit *E, const char *pfx, lsim_ns blk_ns)
{
    uint32_t got = NONE; /* the block received at the step before */
    for (int k = 0; k < F->n; k++) {
        uint32_t r = k < F->n - 1 ? ring_step(F, E, 0, got) : NONE;
        if (got != NONE) lsim_emit_pend(E, got);
        block(E, pfx, blk_ns);
        got = r;
    }
}

void synth_cp_attn_bwd(synth_cp *F, lsim_emit *E, lsim_ns blk_ns)
{
    uint32_t got = NONE, dgot = NONE;
    for (int k = 0; k < F->n; k++) {
        uint32_t r = k < F->n - 1 ? ring_step(F, E, 0, got) : NONE;
        if (got != NONE) lsim_emit_pend(E, got);
        if (dgot != NONE) lsim_emit_pend(E, dgot); /* accumulated into the block's dK/dV */
        block(E, "", blk_ns);
        dgot = ring_step(F, E, 1, dgot);
        got = r;
    }
    /* the layer's own dK/dV, home after CP steps: the QKV backward needs it */
    if (dgot != NONE) lsim_emit_pend(E, dgot);
}
