/* Model shapes, the synthesis configuration and its checks, and the
 * pipeline schedules (synth.h). */
#include "lumosim/synth.h"

#include "cp.h"
#include "fsdp.h"
#include "moe.h"
#include "routing.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "lumosim/input.h"

/* The Lumos paper's GPT-3 family (its Table of model sizes): layers,
 * hidden, FFN, heads; head dim 128, sequence 2048, vocabulary 51200. The
 * Llama 3 shapes are Meta's published configs (data/models/NAME.json gives
 * the source of each value; a unit test checks that these agree): GQA with 8
 * KV heads, SwiGLU, RMSNorm, RoPE, untied embeddings, no biases, a 128,256
 * token vocabulary, pre-trained at sequence 8192. */
#define LLAMA3 8, LSIM_MLP_SWIGLU, LSIM_NORM_RMS, 1, 1, 1
#define DENSE 0, 0, 0, 0, 0, 0
/* The mixture-of-experts shapes are their publishers' config.json files
 * (data/models/NAME.json names each value's source; DeepSeek-V3's MLA is
 * approximated by multi-head attention there, docs/models.md): GQA or MHA,
 * SwiGLU experts, RMSNorm, RoPE, untied; then experts, top-k, shared
 * experts, expert FFN, leading dense layers, MoE every N layers. */
#define MOE_BASE LSIM_MLP_SWIGLU, LSIM_NORM_RMS, 1, 1
static const lsim_model_shape BUILTIN[] = {
    {"gpt3-15b", 48, 6144, 12288, 48, 128, 2048, 51200, 0, 0, 0, 0, 0, 0, DENSE},
    {"gpt3-44b", 48, 12288, 24576, 48, 128, 2048, 51200, 0, 0, 0, 0, 0, 0, DENSE},
    {"gpt3-117b", 96, 12288, 24576, 96, 128, 2048, 51200, 0, 0, 0, 0, 0, 0, DENSE},
    {"gpt3-175b", 96, 12288, 49152, 96, 128, 2048, 51200, 0, 0, 0, 0, 0, 0, DENSE},
    {"llama3-8b", 32, 4096, 14336, 32, 128, 8192, 128256, LLAMA3, DENSE},
    {"llama3-70b", 80, 8192, 28672, 64, 128, 8192, 128256, LLAMA3, DENSE},
    {"llama3.1-405b", 126, 16384, 53248, 128, 128, 8192, 128256, LLAMA3, DENSE},
    {"gpt-oss-120b", 36, 2880, 2880, 64, 64, 4096, 201088, 8, MOE_BASE, 0, 128, 4, 0, 2880, 0, 1},
    {"qwen3-30b-a3b", 48, 2048, 6144, 32, 128, 4096, 151936, 4, MOE_BASE, 1, 128, 8, 0, 768, 0, 1},
    {"qwen3-235b-a22b", 94, 4096, 12288, 64, 128, 4096, 151936, 4, MOE_BASE, 1, 128, 8, 0, 1536, 0, 1},
    {"mixtral-8x7b", 32, 4096, 14336, 32, 128, 32768, 32000, 8, MOE_BASE, 1, 8, 2, 0, 14336, 0, 1},
    {"deepseek-v3", 61, 7168, 18432, 128, 128, 4096, 129280, 128, MOE_BASE, 1, 256, 8, 1, 2048, 3, 1},
};
#undef MOE_BASE
#undef DENSE
#undef LLAMA3

int lsim_model_kv_heads(const lsim_model_shape *m) { return m->kv_heads > 0 ? m->kv_heads : m->heads; }

int lsim_model_moe_layer(const lsim_model_shape *m, int layer)
{
    return lsim_memest_moe_layer(m->experts, m->dense_layers, m->moe_every, layer);
}

int lsim_model_builtin(const char *name, lsim_model_shape *out, lsim_err *err)
{
    for (size_t i = 0; i < sizeof BUILTIN / sizeof *BUILTIN; i++)
        if (!strcasecmp(name, BUILTIN[i].name)) {
            *out = BUILTIN[i];
            return 0;
        }
    return lsim_err_set(err, LSIM_EARG,
                        "unknown model '%s' (known: gpt3-15b, gpt3-44b, gpt3-117b, gpt3-175b, llama3-8b, llama3-70b, "
                        "llama3.1-405b, gpt-oss-120b, qwen3-30b-a3b, qwen3-235b-a22b, mixtral-8x7b, deepseek-v3, or a JSON "
                        "file)",
                        name);
}

/* The model file's keys (docs/models.md). Integers are positive; words
 * pick an index of their list; booleans set a field to 1 when the value
 * differs from the GPT default (tie_embeddings and bias default true). */
typedef enum { MK_INT, MK_COUNT, MK_WORD, MK_BOOL, MK_NOTBOOL, MK_NAME, MK_TEXT, MK_SOURCES } mkey_rule;
typedef struct mkey {
    const char *key;
    mkey_rule rule;
    size_t off;
    const char *words[2];
} mkey;
#define MOFF(f) offsetof(lsim_model_shape, f)
static const mkey MKEYS[] = {
    {"name", MK_NAME, 0, {0}},
    {"description", MK_TEXT, 0, {0}},
    {"sources", MK_SOURCES, 0, {0}},
    {"layers", MK_INT, MOFF(layers), {0}},
    {"hidden", MK_INT, MOFF(hidden), {0}},
    {"ffn", MK_INT, MOFF(ffn), {0}},
    {"heads", MK_INT, MOFF(heads), {0}},
    {"head_dim", MK_INT, MOFF(head_dim), {0}},
    {"seq", MK_INT, MOFF(seq), {0}},
    {"vocab", MK_INT, MOFF(vocab), {0}},
    {"kv_heads", MK_INT, MOFF(kv_heads), {0}},
    {"mlp", MK_WORD, MOFF(mlp), {"gelu", "swiglu"}},
    {"norm", MK_WORD, MOFF(norm), {"layernorm", "rmsnorm"}},
    {"rope", MK_BOOL, MOFF(rope), {0}},
    {"tie_embeddings", MK_NOTBOOL, MOFF(untied), {0}},
    {"bias", MK_NOTBOOL, MOFF(no_bias), {0}},
    {"experts", MK_INT, MOFF(experts), {0}},
    {"top_k", MK_INT, MOFF(top_k), {0}},
    {"shared_experts", MK_COUNT, MOFF(shared_experts), {0}},
    {"expert_ffn", MK_INT, MOFF(expert_ffn), {0}},
    {"dense_layers", MK_COUNT, MOFF(dense_layers), {0}},
    {"moe_every", MK_INT, MOFF(moe_every), {0}},
};
#define NMKEYS (sizeof MKEYS / sizeof *MKEYS)
#undef MOFF

/* The index of key in MKEYS, or NMKEYS. */
static size_t mkey_find(const char *key)
{
    size_t k = 0;
    while (k < NMKEYS && strcmp(key, MKEYS[k].key)) k++;
    return k;
}

/* One member of the model object into m. */
static int model_key(const char *path, const cJSON *it, lsim_model_shape *m, lsim_err *err)
{
    size_t k = mkey_find(it->string);
    if (k == NMKEYS)
        return lsim_err_set(err, LSIM_EFORMAT,
                            "%s: key %s: unknown (known: name, description, sources, layers, hidden, ffn, heads, "
                            "head_dim, seq, vocab, kv_heads, mlp, norm, rope, tie_embeddings, bias, experts, top_k, "
                            "shared_experts, expert_ffn, dense_layers, moe_every)",
                            path, it->string);
    const mkey *d = &MKEYS[k];
    int *dst = (int *)((char *)m + d->off);
    switch (d->rule) {
    case MK_NAME:
        if (!cJSON_IsString(it) || strlen(it->valuestring) >= sizeof m->name)
            return lsim_err_set(err, LSIM_EFORMAT, "%s: key name: not a string of at most 31 characters", path);
        snprintf(m->name, sizeof m->name, "%s", it->valuestring);
        return 0;
    case MK_TEXT:
        if (!cJSON_IsString(it)) return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: not a string", path, d->key);
        return 0;
    case MK_SOURCES:
        /* documentation the file carries: each member names a key and says
         * where its value comes from */
        if (!cJSON_IsObject(it)) return lsim_err_set(err, LSIM_EFORMAT, "%s: key sources: not an object", path);
        for (const cJSON *s = it->child; s; s = s->next) {
            size_t j = mkey_find(s->string);
            if (j == NMKEYS || MKEYS[j].rule == MK_SOURCES || !cJSON_IsString(s))
                return lsim_err_set(err, LSIM_EFORMAT, "%s: key sources: member %s: not a string naming a model key",
                                    path, s->string);
        }
        return 0;
    case MK_WORD:
        for (int w = 0; w < 2; w++)
            if (cJSON_IsString(it) && !strcmp(it->valuestring, d->words[w])) {
                *dst = w;
                return 0;
            }
        return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: expected \"%s\" or \"%s\"", path, d->key, d->words[0],
                            d->words[1]);
    case MK_BOOL:
    case MK_NOTBOOL:
        if (!cJSON_IsBool(it)) return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: not true or false", path, d->key);
        *dst = d->rule == MK_BOOL ? cJSON_IsTrue(it) : !cJSON_IsTrue(it);
        return 0;
    default: {
        double v = cJSON_IsNumber(it) ? it->valuedouble : -1, lo = d->rule == MK_COUNT ? 0 : 1;
        if (!(v >= lo && v <= INT_MAX && floor(v) == v))
            return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: not a %s integer", path, d->key,
                                lo ? "positive" : "non-negative");
        *dst = (int)v;
        return 0;
    }
    }
}

/* The mixture-of-experts keys together: experts needs top_k (at most
 * experts) and expert_ffn; the others mean nothing without experts. */
static int moe_keys_check(const char *path, const lsim_model_shape *m, lsim_err *err)
{
    static const char *const K[] = {"top_k", "shared_experts", "expert_ffn", "dense_layers", "moe_every"};
    const int v[] = {m->top_k, m->shared_experts, m->expert_ffn, m->dense_layers, m->moe_every};
    if (!m->experts) {
        for (size_t i = 0; i < 5; i++)
            if (v[i]) return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: given without experts", path, K[i]);
        return 0;
    }
    if (!m->top_k) return lsim_err_set(err, LSIM_EFORMAT, "%s: key top_k: missing (the model has experts)", path);
    if (m->top_k > m->experts)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: key top_k: %d experts per token is more than the %d experts", path,
                            m->top_k, m->experts);
    if (!m->expert_ffn) return lsim_err_set(err, LSIM_EFORMAT, "%s: key expert_ffn: missing (the model has experts)", path);
    if (m->dense_layers >= m->layers)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: key dense_layers: %d of %d layers leaves no MoE layer", path,
                            m->dense_layers, m->layers);
    return 0;
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
    lsim_model_shape m = {"custom", 0, 0, 0, 0, 128, 2048, 51200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (const cJSON *it = doc->child; it; it = it->next) {
        /* a key given twice: the second would silently win */
        for (const cJSON *p = doc->child; p != it; p = p->next)
            if (!strcmp(p->string, it->string)) {
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: given twice", path, it->string);
                goto cleanup;
            }
        if ((rc = model_key(path, it, &m, err))) goto cleanup;
    }
    static const char *const REQ[] = {"layers", "hidden", "ffn", "heads"};
    const int *req[] = {&m.layers, &m.hidden, &m.ffn, &m.heads};
    for (size_t k = 0; k < 4; k++)
        if (*req[k] <= 0) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: missing", path, REQ[k]);
            goto cleanup;
        }
    /* grouped-query attention: every KV head serves heads / kv_heads query heads */
    if (m.kv_heads > m.heads || m.heads % lsim_model_kv_heads(&m)) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key kv_heads: %d query heads are not divisible by %d KV heads", path,
                          m.heads, m.kv_heads);
        goto cleanup;
    }
    if ((rc = moe_keys_check(path, &m, err))) goto cleanup;
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

/* The estimate of c changed by one option or layout, or 0 where the change
 * is not a configuration lsim_synth_check accepts (the memory check off,
 * so the advice never recurses). */
static double mem_total_if(const lsim_synth_cfg *c)
{
    lsim_synth_cfg t = *c;
    lsim_synth_mem mm;
    t.mem_check = 0;
    t.gpus = 0;
    if (lsim_synth_check(&t, NULL)) return 0;
    lsim_synth_memory(&t, &mm);
    return mm.total;
}

/* Append "TEXT (X GB)" to one of two lists: fits (within the GPU) or helps
 * (smaller than now, still too large). A change that saves nothing (the
 * selective recomputation under flash attention, which keeps no s x s
 * tensor) is never suggested. */
static void mem_note(char *fits, char *helps, size_t cap, const char *what, double total, double now, double capacity)
{
    if (!(total > 0) || total >= now * (1 - 1e-9)) return;
    char *dst = total <= capacity ? fits : helps;
    size_t n = strlen(dst);
    snprintf(dst + n, cap - n, "%s%s (%.1f GB)", n ? ", " : "", what, total / 1e9);
}

/* What makes a job that the memory check refuses fit, computed from the
 * estimate: each option it lacks (distributed optimizer, sequence
 * parallelism, recomputation, a smaller micro-batch) and twice the PP or TP
 * on the same GPUs (DP halved), with the GB each gives; then the options
 * together. One clause for the refusal, ending with --no-memory-check. */
static void mem_advice(const lsim_synth_cfg *c, double now, char *out, size_t cap)
{
    char fits[256] = "", helps[256] = "", what[64];
    double capacity = c->gpu.mem_capacity;
    lsim_synth_cfg t = *c, all = *c;
    int opt_shards = c->dp_cost > c->dp ? c->dp_cost : c->dp;
    if (!c->dist_opt && opt_shards > 1) {
        t = *c, t.dist_opt = 1, all.dist_opt = 1;
        mem_note(fits, helps, sizeof fits, "--distributed-optimizer", mem_total_if(&t), now, capacity);
    }
    if (!c->seq_parallel && c->tp > 1) {
        t = *c, t.seq_parallel = 1, all.seq_parallel = 1;
        mem_note(fits, helps, sizeof fits, "--sequence-parallel", mem_total_if(&t), now, capacity);
    }
    for (int rc = c->recompute + 1; rc <= LSIM_RC_FULL; rc++) {
        t = *c, t.recompute = rc;
        double total = mem_total_if(&t);
        snprintf(what, sizeof what, "--recompute %s", lsim_recompute_name(rc));
        if (rc == LSIM_RC_FULL || (total > 0 && total <= capacity)) {
            mem_note(fits, helps, sizeof fits, what, total, now, capacity);
            all.recompute = rc;
            break;
        }
    }
    for (int mb = c->micro_batch / 2; c->micro_batch > 1 && mb >= 1; mb /= 2) {
        t = *c, t.micro_batch = mb;
        double total = mem_total_if(&t);
        if (mb == 1 || (total > 0 && total <= capacity)) {
            snprintf(what, sizeof what, "--micro-batch %d", mb);
            mem_note(fits, helps, sizeof fits, what, total, now, capacity);
            all.micro_batch = mb;
            break;
        }
    }
    /* the same GPUs (DP halved) where DP is even, else more of them */
    int halve = c->dp % 2 == 0;
    t = *c, t.pp = 2 * c->pp, t.dp = halve ? c->dp / 2 : c->dp;
    snprintf(what, sizeof what, halve ? "--pp %d --dp %d" : "--pp %d on twice the GPUs", t.pp, t.dp);
    mem_note(fits, helps, sizeof fits, what, mem_total_if(&t), now, capacity);
    if (2 * c->tp <= c->topo.gpus_per_node) {
        t = *c, t.tp = 2 * c->tp, t.dp = halve ? c->dp / 2 : c->dp;
        snprintf(what, sizeof what, halve ? "--tp %d --dp %d" : "--tp %d on twice the GPUs", t.tp, t.dp);
        mem_note(fits, helps, sizeof fits, what, mem_total_if(&t), now, capacity);
    }
    double together = mem_total_if(&all);
    if (fits[0])
        snprintf(out, cap, "it fits with %s; or --no-memory-check", fits);
    else if (together > 0 && together <= capacity && helps[0])
        snprintf(out, cap, "no one change fits (%s), all of these options together do (%.1f GB); or --no-memory-check",
                 helps, together / 1e9);
    else if (helps[0])
        snprintf(out, cap, "no change tried fits (%s): use more GPUs (more PP or TP) or a GPU with more memory, or --no-memory-check", helps);
    else
        snprintf(out, cap, "use more GPUs (more PP or TP), or --no-memory-check");
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
    if (lsim_split_check(&c->split, m->layers, c->pp, c->vstages, err)) return LSIM_EARG;
    if (m->hidden % c->tp) return lsim_err_set(err, LSIM_EARG, "hidden size %d is not divisible by TP = %d", m->hidden, c->tp);
    if (m->heads % c->tp) return lsim_err_set(err, LSIM_EARG, "%d attention heads are not divisible by TP = %d", m->heads, c->tp);
    if (m->ffn % c->tp) return lsim_err_set(err, LSIM_EARG, "FFN size %d is not divisible by TP = %d", m->ffn, c->tp);
    {
        /* grouped-query attention: a query head's KV head must be on its
         * GPU; Megatron splits the KV heads over TP and refuses TP above
         * them (no replication) */
        int kv = lsim_model_kv_heads(m);
        if (kv > m->heads || m->heads % kv)
            return lsim_err_set(err, LSIM_EARG, "model %s: kv_heads: %d query heads are not divisible by %d KV heads",
                                m->name, m->heads, kv);
        if (kv % c->tp)
            return lsim_err_set(err, LSIM_EARG, "model %s: kv_heads: %d KV heads are not divisible by TP = %d", m->name,
                                kv, c->tp);
        if (m->mlp < LSIM_MLP_GELU || m->mlp > LSIM_MLP_SWIGLU || m->norm < LSIM_NORM_LAYER || m->norm > LSIM_NORM_RMS)
            return lsim_err_set(err, LSIM_EARG, "model %s: unknown MLP or norm kind", m->name);
    }
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
    if (c->recompute < LSIM_RC_NONE || c->recompute >= LSIM_RC_N || c->kernels < LSIM_KERN_FUSED ||
        c->kernels > LSIM_KERN_EAGER || c->loss < LSIM_LOSS_FUSED || c->loss > LSIM_LOSS_EAGER ||
        c->grad_reduce < LSIM_GR_OVERLAP || c->grad_reduce > LSIM_GR_AFTER || c->attention < LSIM_ATTN_FLASH ||
        c->attention > LSIM_ATTN_UNFUSED)
        return lsim_err_set(err, LSIM_EARG, "unknown recomputation, gradient reduction, attention or loss kind");
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
    if (c->precision < LSIM_PREC_BF16 || c->precision > LSIM_PREC_FP8 || c->fp8_scaling < LSIM_FP8_CURRENT ||
        c->fp8_scaling > LSIM_FP8_DELAYED)
        return lsim_err_set(err, LSIM_EARG, "unknown precision %d or FP8 scaling %d", c->precision, c->fp8_scaling);
    if (c->precision == LSIM_PREC_FP8 && !(c->gpu.peak_flops_fp8 > 0))
        return lsim_err_set(err, LSIM_EARG, "--precision fp8: the %s has no FP8 tensor cores (its spec has no peak_flops_fp8)",
                            c->gpu.name);
    int rc = synth_fsdp_check(c, err);
    if (!rc) rc = synth_cp_check(c, err);
    if (!rc) rc = synth_moe_check(c, err);
    if (!rc) rc = lsim_gpu_spec_check(&c->gpu, c->gpu.name, err);
    if (!rc) rc = lsim_topology_check(&c->topo, "topology", err);
    if (rc) return rc;
    if (c->mem_check && c->gpu.mem_capacity > 0) {
        lsim_synth_mem mm;
        lsim_synth_memory(c, &mm);
        if (mm.total > c->gpu.mem_capacity) {
            char advice[512];
            mem_advice(c, mm.total, advice, sizeof advice);
            return lsim_err_set(err, LSIM_EARG,
                                "the job needs %.1f GB per GPU on pipeline stage %d (weights, gradients and optimizer "
                                "state %.1f GB for %.3g parameters, activations %.1f GB for %d micro-batch chunks in "
                                "flight, buffers and reserve %.1f GB), more than the %s's %.1f GB: %s",
                                mm.total / 1e9, mm.stage, mm.states / 1e9, mm.params, mm.activations / 1e9, mm.inflight,
                                mm.other / 1e9, c->gpu.name, c->gpu.mem_capacity / 1e9, advice);
        }
    }
    return 0;
}

int lsim_synth_loss_eager(const lsim_synth_cfg *c) { return c->loss == LSIM_LOSS_EAGER || c->kernels == LSIM_KERN_EAGER; }

void lsim_synth_memest_in(const lsim_synth_cfg *c, lsim_memest_in *in)
{
    /* Why one mapping: the memory check, --stats and the estimate synth
     * records in the store are all memest.h's, from the same input. */
    const lsim_model_shape *m = &c->model;
    lsim_memest_in_default(in);
    in->layers = m->layers, in->hidden = m->hidden, in->ffn = m->ffn, in->heads = m->heads;
    in->head_dim = m->head_dim, in->seq = m->seq, in->vocab = m->vocab;
    in->kv_heads = m->kv_heads, in->swiglu = m->mlp == LSIM_MLP_SWIGLU, in->rmsnorm = m->norm == LSIM_NORM_RMS;
    in->rope = m->rope, in->untied = m->untied, in->no_bias = m->no_bias;
    /* --dp-cost N: a GPU of the full job of N replicas (its DP group's
     * communicator, FSDP's shard and replica groups) */
    in->tp = c->tp, in->pp = c->pp, in->dp = c->dp_cost > c->dp ? c->dp_cost : c->dp;
    in->vstages = c->vstages > 0 ? c->vstages : 1;
    in->split = c->split;
    in->micro_batch = c->micro_batch;
    in->microbatches = lsim_synth_microbatches(c);
    in->recompute = c->recompute == LSIM_RC_FULL        ? LSIM_MEMEST_RC_FULL
                    : c->recompute == LSIM_RC_SELECTIVE ? LSIM_MEMEST_RC_SELECTIVE
                    : c->recompute == LSIM_RC_OP        ? LSIM_MEMEST_RC_OP
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
    in->fsdp_fp8 = in->fsdp && c->fp8_all_gather;
    in->experts = m->experts, in->top_k = m->top_k, in->shared_experts = m->shared_experts;
    in->expert_ffn = m->expert_ffn, in->dense_layers = m->dense_layers, in->moe_every = m->moe_every;
    in->ep = c->ep;
    in->etp = c->etp;
    in->expert_load = synth_expert_act_load(c);
    in->loss_eager = lsim_synth_loss_eager(c);
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

int lsim_synth_attn_kernel(lsim_synth_cfg *c, int kernel, lsim_err *err)
{
    static const char *const NAME[] = {"spec", "fa2", "fa3"};
    if (kernel == LSIM_AK_SPEC) return 0;
    if (kernel != LSIM_AK_FA2 && kernel != LSIM_AK_FA3)
        return lsim_err_set(err, LSIM_EARG, "--attention-kernel: unknown kernel %d", kernel);
    if (c->attention == LSIM_ATTN_UNFUSED)
        return lsim_err_set(err, LSIM_EARG, "--attention-kernel %s with --attention unfused: the unfused attention "
                            "has no fused kernel (its batched GEMMs are costed as GEMMs)", NAME[kernel]);
    const lsim_gpu_spec *g = &c->gpu;
    double em = kernel == LSIM_AK_FA2 ? g->attn_fa2_eff_max : g->attn_fa3_eff_max;
    double half = kernel == LSIM_AK_FA2 ? g->attn_fa2_eff_half : g->attn_fa3_eff_half;
    double bem = kernel == LSIM_AK_FA2 ? g->attn_fa2_bwd_eff_max : g->attn_fa3_bwd_eff_max;
    double bhalf = kernel == LSIM_AK_FA2 ? g->attn_fa2_bwd_eff_half : g->attn_fa3_bwd_eff_half;
    if (!(em > 0))
        return lsim_err_set(err, LSIM_EARG, "--attention-kernel %s: the GPU spec %s has no FlashAttention-%c curve "
                            "(attn_%s_eff_max): give a spec file with it", NAME[kernel], c->gpu.name,
                            kernel == LSIM_AK_FA2 ? '2' : '3', NAME[kernel]);
    c->gpu.attn_eff_max = em, c->gpu.attn_eff_half = half;
    c->gpu.attn_bwd_eff_max = bem, c->gpu.attn_bwd_eff_half = bhalf; /* 0: the forward's curve */
    c->attn_kernel = kernel;
    return 0;
}

void lsim_synth_opts(const lsim_synth_cfg *c, char *out, size_t cap)
{
    static const char *const RC[] = {"", "rc=selective,", "rc=full,", "rc=op,"};
    snprintf(out, cap, "%s%s%s%s%s%s%s%s%s%s%s%s", RC[c->recompute > 0 && c->recompute <= 3 ? c->recompute : 0],
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
    if (c->precision == LSIM_PREC_FP8) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "fp8=%s,", c->fp8_scaling == LSIM_FP8_DELAYED ? "delayed" : "current");
    }
    if (synth_fsdp_shards(c)) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "fsdp=%d,%s", c->fsdp, c->fp8_all_gather ? "fp8ag," : "");
    }
    if (c->cp > 1) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "cp=%d,", c->cp);
    }
    if (c->ep > 1) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "ep=%d,", c->ep);
    }
    if (c->etp > 1) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "etp=%d,", c->etp);
    }
    if (c->routing_skew > 0) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "skew=%g,", c->routing_skew);
    }
    if (c->routing_dirichlet > 0) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "dirichlet=%g,", c->routing_dirichlet);
    }
    if (c->routing_hist) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "hist=%d,", c->routing_hist_rows);
    }
    if (c->capacity_factor > 0) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "cap=%g,%s", c->capacity_factor, c->pad_to_capacity ? "pad," : "");
    }
    if (c->attn_kernel == LSIM_AK_FA2 || c->attn_kernel == LSIM_AK_FA3) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "attn=%s,", c->attn_kernel == LSIM_AK_FA2 ? "fa2" : "fa3");
    }
    if (c->kernels == LSIM_KERN_EAGER) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "eager,");
    } else if (c->loss == LSIM_LOSS_EAGER) {
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "loss=eager,");
    }
    if (c->split.mode != LSIM_SPLIT_EVEN) {
        /* "pplayers=" also makes the structural what-ifs refuse the store
         * (whatif_rules.c): they re-emit even stages */
        size_t n = strlen(out);
        snprintf(out + n, cap > n ? cap - n : 0, "pplayers=%s,", lsim_split_name(&c->split));
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
