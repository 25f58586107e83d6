/* Model shapes, the synthesis configuration and its checks, and the
 * pipeline schedules (synth.h). */
#include "lumosim/synth.h"

#include "cp.h"
#include "fsdp.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "lumosim/input.h"

/* The Lumos paper's GPT-3 family (its Table of model sizes): layers,
 * hidden, FFN, heads; head dim 128, sequence 2048, vocabulary 51200. */
static const lsim_model_shape BUILTIN[] = {
    {"gpt3-15b", 48, 6144, 12288, 48, 128, 2048, 51200},
    {"gpt3-44b", 48, 12288, 24576, 48, 128, 2048, 51200},
    {"gpt3-117b", 96, 12288, 24576, 96, 128, 2048, 51200},
    {"gpt3-175b", 96, 12288, 49152, 96, 128, 2048, 51200},
};

int lsim_model_builtin(const char *name, lsim_model_shape *out, lsim_err *err)
{
    for (size_t i = 0; i < sizeof BUILTIN / sizeof *BUILTIN; i++)
        if (!strcasecmp(name, BUILTIN[i].name)) {
            *out = BUILTIN[i];
            return 0;
        }
    return lsim_err_set(err, LSIM_EARG, "unknown model '%s' (known: gpt3-15b, gpt3-44b, gpt3-117b, gpt3-175b, or a JSON file)",
                        name);
}

int lsim_model_load(const char *path, lsim_model_shape *out, lsim_err *err)
{
    int rc = 0;
    char *txt = NULL;
    cJSON *doc = NULL;
    FILE *f = NULL;
    if ((rc = lsim_input_fopen(path, &f, err))) return rc; /* a FIFO: refused, never waited on */
    size_t cap = 0, len = 0;
    while (!(rc = LSIM_GROW(txt, &cap, cap ? cap + 1 : 4096))) { /* 4096 bytes, then doubled */
        size_t k = fread(txt + len, 1, cap - len - 1, f);
        len += k;
        if (len < cap - 1) break;
        if (cap > (1u << 20)) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: too large for a model file", path);
            goto cleanup;
        }
    }
    if (rc) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    if (ferror(f)) {
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot read", path);
        goto cleanup;
    }
    txt[len] = 0;
    doc = cJSON_Parse(txt);
    if (!doc || !cJSON_IsObject(doc)) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: not a JSON object", path);
        goto cleanup;
    }
    lsim_model_shape m = {"custom", 0, 0, 0, 0, 128, 2048, 51200};
    static const char *const KEYS[] = {"layers", "hidden", "ffn", "heads", "head_dim", "seq", "vocab"};
    int *dst[] = {&m.layers, &m.hidden, &m.ffn, &m.heads, &m.head_dim, &m.seq, &m.vocab};
    for (const cJSON *it = doc->child; it; it = it->next) {
        if (!strcmp(it->string, "name")) {
            if (!cJSON_IsString(it) || strlen(it->valuestring) >= sizeof m.name) {
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key name: not a string of at most 31 characters", path);
                goto cleanup;
            }
            snprintf(m.name, sizeof m.name, "%s", it->valuestring);
            continue;
        }
        size_t k = 0;
        while (k < 7 && strcmp(it->string, KEYS[k])) k++;
        if (k == 7) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: unknown (known: name, layers, hidden, ffn, heads, head_dim, seq, vocab)",
                              path, it->string);
            goto cleanup;
        }
        double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
        if (!(d >= 1 && d <= INT_MAX && floor(d) == d)) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: not a positive integer", path, it->string);
            goto cleanup;
        }
        *dst[k] = (int)d;
    }
    for (size_t k = 0; k < 4; k++)
        if (*dst[k] <= 0) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: missing", path, KEYS[k]);
            goto cleanup;
        }
    *out = m;
cleanup:
    cJSON_Delete(doc);
    free(txt);
    fclose(f);
    return rc;
}

void lsim_synth_cfg_default(lsim_synth_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->vstages = 1;
    c->elem_bytes = 2;
    c->dp_bucket_params = 40e6;
    c->p2p_sync = 1;
    c->embed_head = 1;
    c->optimizer = 1;
    c->dropout = 1;
    c->grad_bytes = 4;
    c->mem_check = 1;
    lsim_gpu_spec_builtin("h100", &c->gpu, NULL);
    lsim_topology_default(&c->gpu, &c->topo);
}

size_t lsim_synth_ngpus(const lsim_synth_cfg *c)
{
    return (size_t)(c->tp_one ? 1 : c->tp) * (size_t)c->pp * (size_t)c->dp * (size_t)(c->cp > 1 ? c->cp : 1);
}

int lsim_synth_tp_one_exact(const lsim_synth_cfg *c)
{
    int g = c->topo.gpus_per_node;
    if (c->gpu.host_stall_prob > 0 && c->gpu.host_stall_ns > 0) return 0;
    return c->tp > 0 && g > 0 && (g % c->tp == 0 || c->tp % g == 0);
}

int lsim_synth_microbatches(const lsim_synth_cfg *c)
{
    long long d = (long long)c->micro_batch * c->dp;
    return d > 0 ? (int)(c->global_batch / d) : 0;
}

int lsim_synth_check(const lsim_synth_cfg *c, lsim_err *err)
{
    const lsim_model_shape *m = &c->model;
    if (m->layers <= 0 || m->hidden <= 0 || m->ffn <= 0 || m->heads <= 0 || m->head_dim <= 0 || m->seq <= 0 || m->vocab <= 0)
        return lsim_err_set(err, LSIM_EARG, "model %s: layers, hidden, ffn, heads, head_dim, seq and vocab must be positive",
                            m->name);
    if (c->tp <= 0 || c->pp <= 0 || c->dp <= 0)
        return lsim_err_set(err, LSIM_EARG, "--tp, --pp and --dp must be positive (got %d, %d, %d)", c->tp, c->pp, c->dp);
    if (c->micro_batch <= 0 || c->global_batch <= 0)
        return lsim_err_set(err, LSIM_EARG, "--micro-batch and --global-batch must be positive (got %d, %d)", c->micro_batch,
                            c->global_batch);
    if (c->vstages <= 0) return lsim_err_set(err, LSIM_EARG, "interleaved:V needs V >= 1 (got %d)", c->vstages);
    unsigned long long n = (unsigned long long)c->tp * (unsigned long long)c->pp * (unsigned long long)c->dp *
                           (unsigned long long)(c->cp > 1 ? c->cp : 1); /* CP: synth_cp_check */
    if (n > (1u << 24)) return lsim_err_set(err, LSIM_EARG, "TP x PP x DP = %llu GPUs is more than lumosim synthesizes (16777216)", n);
    if (c->gpus > 0 && n != (unsigned long long)c->gpus)
        return lsim_err_set(err, LSIM_EARG, "TP x PP x DP = %d x %d x %d = %llu does not match --gpus %d", c->tp, c->pp, c->dp, n,
                            c->gpus);
    if (m->layers % (c->pp * c->vstages))
        return lsim_err_set(err, LSIM_EARG, "%d layers are not divisible by PP x V = %d x %d (pipeline stages x model chunks)",
                            m->layers, c->pp, c->vstages);
    if (m->hidden % c->tp) return lsim_err_set(err, LSIM_EARG, "hidden size %d is not divisible by TP = %d", m->hidden, c->tp);
    if (m->heads % c->tp) return lsim_err_set(err, LSIM_EARG, "%d attention heads are not divisible by TP = %d", m->heads, c->tp);
    if (m->ffn % c->tp) return lsim_err_set(err, LSIM_EARG, "FFN size %d is not divisible by TP = %d", m->ffn, c->tp);
    if (m->vocab % c->tp) return lsim_err_set(err, LSIM_EARG, "vocabulary %d is not divisible by TP = %d", m->vocab, c->tp);
    long long mbdp = (long long)c->micro_batch * c->dp;
    if (c->global_batch % mbdp)
        return lsim_err_set(err, LSIM_EARG, "global batch %d is not divisible by micro-batch x DP = %d x %d = %lld",
                            c->global_batch, c->micro_batch, c->dp, mbdp);
    int mb = lsim_synth_microbatches(c);
    if (c->vstages > 1 && c->pp < 2)
        return lsim_err_set(err, LSIM_EARG, "the interleaved schedule needs PP >= 2 (got PP = %d)", c->pp);
    if (c->vstages > 1 && mb % c->pp)
        return lsim_err_set(err, LSIM_EARG,
                            "the interleaved schedule needs the micro-batches per pipeline (%d = %d / (%d x %d)) divisible by "
                            "PP = %d",
                            mb, c->global_batch, c->micro_batch, c->dp, c->pp);
    if ((double)mb * c->vstages * (double)m->layers > 1e8)
        return lsim_err_set(err, LSIM_EARG, "%d micro-batches x %d layers is more than lumosim synthesizes", mb, m->layers);
    if (c->elem_bytes != 2 && c->elem_bytes != 4)
        return lsim_err_set(err, LSIM_EARG, "element size must be 2 or 4 bytes (got %d)", c->elem_bytes);
    if (!(c->dp_bucket_params > 0)) return lsim_err_set(err, LSIM_EARG, "gradient bucket size must be positive");
    if (c->topo.gpus_per_node <= 0) return lsim_err_set(err, LSIM_EARG, "topology: gpus_per_node must be positive");
    if (c->recompute < LSIM_RC_NONE || c->recompute > LSIM_RC_FULL || c->grad_reduce < LSIM_GR_OVERLAP ||
        c->grad_reduce > LSIM_GR_AFTER || c->attention < LSIM_ATTN_FLASH || c->attention > LSIM_ATTN_UNFUSED)
        return lsim_err_set(err, LSIM_EARG, "unknown recomputation, gradient reduction or attention kind");
    if (c->grad_bytes != 2 && c->grad_bytes != 4)
        return lsim_err_set(err, LSIM_EARG, "gradient element size must be 2 or 4 bytes (got %d)", c->grad_bytes);
    if (c->grad_acc < LSIM_GA_FUSED || c->grad_acc > LSIM_GA_AUTOGRAD)
        return lsim_err_set(err, LSIM_EARG, "unknown gradient accumulation kind %d", c->grad_acc);
    /* Megatron's sequence parallelism splits the sequence over the TP ranks */
    if (c->seq_parallel && m->seq % c->tp)
        return lsim_err_set(err, LSIM_EARG, "--sequence-parallel: sequence length %d is not divisible by TP = %d", m->seq,
                            c->tp);
    if (c->dp_cost < 0 || c->dp_cost > (1 << 24))
        return lsim_err_set(err, LSIM_EARG, "--dp-cost %d: not a number of replicas", c->dp_cost);
    if (c->tp_one != 0 && c->tp_one != 1) return lsim_err_set(err, LSIM_EARG, "tp_one %d: not 0 or 1", c->tp_one);
    if (c->forward_only && c->vstages > 1)
        return lsim_err_set(err, LSIM_EARG, "--forward-only needs the 1F1B schedule (got interleaved:%d)", c->vstages);
    int rc = synth_fsdp_check(c, err);
    if (!rc) rc = synth_cp_check(c, err);
    if (!rc) rc = lsim_gpu_spec_check(&c->gpu, c->gpu.name, err);
    if (!rc) rc = lsim_topology_check(&c->topo, "topology", err);
    if (rc) return rc;
    if (c->mem_check && c->gpu.mem_capacity > 0) {
        lsim_synth_mem mm;
        lsim_synth_memory(c, &mm);
        if (mm.total > c->gpu.mem_capacity)
            return lsim_err_set(err, LSIM_EARG,
                                "the job needs %.1f GB per GPU on pipeline stage %d (weights, gradients and optimizer "
                                "state %.1f GB for %.3g parameters, activations %.1f GB for %d micro-batch chunks in "
                                "flight, buffers and reserve %.1f GB), more than the %s's %.1f GB: use more TP or PP, "
                                "--recompute, --distributed-optimizer, a smaller micro-batch, or --no-memory-check",
                                mm.total / 1e9, mm.stage, mm.states / 1e9, mm.params, mm.activations / 1e9, mm.inflight,
                                mm.other / 1e9, c->gpu.name, c->gpu.mem_capacity / 1e9);
    }
    return 0;
}

void lsim_synth_memest_in(const lsim_synth_cfg *c, lsim_memest_in *in)
{
    /* Why one mapping: the memory check, --stats and the estimate synth
     * records in the store are all memest.h's, from the same input. */
    const lsim_model_shape *m = &c->model;
    lsim_memest_in_default(in);
    in->layers = m->layers, in->hidden = m->hidden, in->ffn = m->ffn, in->heads = m->heads;
    in->head_dim = m->head_dim, in->seq = m->seq, in->vocab = m->vocab;
    in->tp = c->tp, in->pp = c->pp, in->dp = c->dp, in->vstages = c->vstages > 0 ? c->vstages : 1;
    in->micro_batch = c->micro_batch;
    in->microbatches = lsim_synth_microbatches(c);
    in->recompute = c->recompute == LSIM_RC_FULL        ? LSIM_MEMEST_RC_FULL
                    : c->recompute == LSIM_RC_SELECTIVE ? LSIM_MEMEST_RC_SELECTIVE
                                                        : LSIM_MEMEST_RC_NONE;
    in->seq_parallel = c->seq_parallel;
    in->dist_opt = c->dist_opt;
    /* --dp-cost N: the optimizer's shards are those of N replicas */
    in->opt_shards = c->dp_cost > c->dp ? c->dp_cost : c->dp;
    in->grad_bytes = c->grad_bytes;
    in->attention = c->attention == LSIM_ATTN_UNFUSED ? LSIM_MEMEST_ATTN_UNFUSED : LSIM_MEMEST_ATTN_FLASH;
    in->dropout = c->dropout;
    in->embed_head = c->embed_head;
    in->forward_only = c->forward_only;
    in->fsdp = synth_fsdp_shards(c) ? c->fsdp : 0; /* x CP below */
    in->fsdp_keep = in->fsdp && synth_fsdp_keeps(c);
    if (c->cp > 1) {
        /* context parallelism: every rank's activations and logits are its
         * seq / CP tokens'; the gradients (and FSDP's shards, the
         * distributed optimizer's) span DP x CP */
        in->seq = m->seq / c->cp;
        in->dp *= c->cp, in->opt_shards *= c->cp;
        if (in->fsdp) in->fsdp *= c->cp;
    }
}

void lsim_synth_memory(const lsim_synth_cfg *c, lsim_synth_mem *out)
{
    /* the most loaded stage of memest.h's estimate (docs/memory.md) */
    lsim_memest_in in;
    lsim_memest_stage st;
    int stage = 0;
    memset(out, 0, sizeof *out);
    lsim_synth_memest_in(c, &in);
    if (lsim_memest_worst(&in, &stage, &st, NULL)) return; /* a configuration lsim_synth_check refuses */
    out->stage = stage;
    out->params = st.params;
    out->states = st.weights + st.grads + st.optim;
    out->activations = st.activations;
    out->other = st.comm + st.reserve;
    out->total = st.total;
    out->inflight = st.inflight;
}

void lsim_synth_opts(const lsim_synth_cfg *c, char *out, size_t cap)
{
    static const char *const RC[] = {"", "rc=selective,", "rc=full,"};
    snprintf(out, cap, "%s%s%s%s%s%s%s%s%s%s%s%s", RC[c->recompute > 0 && c->recompute <= 2 ? c->recompute : 0],
             c->seq_parallel ? "sp," : "", c->grad_reduce == LSIM_GR_AFTER ? "grad=after," : "",
             c->dist_opt ? "distopt," : "", c->scatter_gather ? "sg," : "",
             c->attention == LSIM_ATTN_UNFUSED ? "attn=unfused," : "",
             c->attention == LSIM_ATTN_UNFUSED && !c->dropout ? "nodropout," : "", c->tp_overlap ? "tpoverlap," : "",
             c->grad_bytes == 2 ? "gradbytes=2," : "", c->forward_only ? "fwd," : "",
             c->gpu.host_stall_prob > 0 && c->gpu.host_stall_ns > 0 ? "stalls," : "",
             c->grad_acc == LSIM_GA_BUFFER ? "gradacc=buffer," : c->grad_acc == LSIM_GA_AUTOGRAD ? "gradacc=autograd," : "");
    if (c->dp_cost > c->dp) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "dpcost=%d,", c->dp_cost);
    }
    if (synth_fsdp_shards(c)) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "fsdp=%d,", c->fsdp);
    }
    if (c->cp > 1) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "cp=%d,", c->cp);
    }
    size_t n = strlen(out);
    if (n && out[n - 1] == ',') out[n - 1] = 0;
}

/* Megatron's interleaved schedule: forward step k runs chunk (k / pp) % V
 * on micro-batch (k / (pp V)) pp + k % pp; backward step k the chunk
 * V - 1 - (k / pp) % V on the same micro-batch. */
static lsim_synth_step istep(int pp, int V, int k, int bwd)
{
    int c = (k / pp) % V;
    lsim_synth_step s = {(uint8_t)bwd, bwd ? V - 1 - c : c, (k / (pp * V)) * pp + k % pp};
    return s;
}

int lsim_synth_schedule(int pp, int stage, int m, int V, lsim_synth_step *out, int *nwarm, lsim_err *err)
{
    if (pp <= 0 || stage < 0 || stage >= pp || m <= 0 || V <= 0)
        return lsim_err_set(err, LSIM_EARG, "schedule: bad pipeline (pp %d, stage %d, micro-batches %d, chunks %d)", pp, stage,
                            m, V);
    if (V > 1 && m % pp)
        return lsim_err_set(err, LSIM_EARG, "schedule: interleaved needs micro-batches (%d) divisible by PP (%d)", m, pp);
    int total = m * V, w;
    if (V == 1) w = pp - stage - 1;
    else w = (pp - stage - 1) * 2 + (V - 1) * pp;
    if (w > total) w = total;
    int q = 0;
    for (int k = 0; k < w; k++) out[q++] = V == 1 ? (lsim_synth_step){0, 0, k} : istep(pp, V, k, 0);
    for (int k = 0; k < total - w; k++) {
        out[q++] = V == 1 ? (lsim_synth_step){0, 0, w + k} : istep(pp, V, w + k, 0);
        out[q++] = V == 1 ? (lsim_synth_step){1, 0, k} : istep(pp, V, k, 1);
    }
    for (int k = total - w; k < total; k++) out[q++] = V == 1 ? (lsim_synth_step){1, 0, k} : istep(pp, V, k, 1);
    if (nwarm) *nwarm = w;
    return 0;
}

#define RC_NAME_(id, name) name,
static const char *const RC_NAMES[] = {LSIM_RECOMPUTE_MODES(RC_NAME_)};
#undef RC_NAME_
const char *lsim_recompute_name(int mode) { return mode >= 0 && mode < LSIM_RC_N ? RC_NAMES[mode] : "?"; }

int lsim_model_named(const char *s, lsim_model_shape *out, lsim_err *err)
{
    return strchr(s, '/') || strstr(s, ".json") ? lsim_model_load(s, out, err) : lsim_model_builtin(s, out, err);
}
