/* Model files and model kinds (synth.h, docs/models.md): the shipped
 * data/models files equal the built-ins; bad model files and layouts are
 * refused naming the field; and the structural check of issue 36: the
 * training FLOPs of one step, computed here from the shape by the formula
 * Megatron-LM and torchtitan use, equal the GEMM FLOPs of the synthesized
 * graphs, read back from the kernels' durations on a GPU whose GEMMs run at
 * exactly their peak. The memory estimate's parameter count equals the
 * count from the shape. LSIM_SOURCE_DIR locates data/. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lumosim/memest.h"
#include "lumosim/synth.h"

#ifndef LSIM_SOURCE_DIR
#error "LSIM_SOURCE_DIR must be defined (tests/unit/CMakeLists.txt)"
#endif

static const char *const SHIPPED[] = {"gpt3-15b",     "gpt3-44b",      "gpt3-117b",       "gpt3-175b",
                                      "llama3-8b",    "llama3-70b",    "llama3.1-405b",   "gpt-oss-120b",
                                      "qwen3-30b-a3b", "qwen3-235b-a22b", "mixtral-8x7b", "deepseek-v3"};

static void test_shipped(void)
{
    char path[512];
    for (size_t i = 0; i < sizeof SHIPPED / sizeof *SHIPPED; i++) {
        lsim_model_shape b, f;
        lsim_err err = {0};
        snprintf(path, sizeof path, "%s/data/models/%s.json", LSIM_SOURCE_DIR, SHIPPED[i]);
        CHECK(lsim_model_builtin(SHIPPED[i], &b, NULL) == 0);
        memset(&f, 0, sizeof f);
        int rc = lsim_model_load(path, &f, &err);
        CHECK_MSG(rc == 0, "%s", err.msg);
        CHECK_STR(f.name, SHIPPED[i]);
        CHECK_MSG(memcmp(&f, &b, sizeof f) == 0, "%s: the file and the built-in differ", SHIPPED[i]);
    }
    /* Meta's published shapes (config.json) */
    lsim_model_shape m;
    CHECK(lsim_model_named("llama3-8b", &m, NULL) == 0);
    CHECK(m.layers == 32 && m.hidden == 4096 && m.ffn == 14336 && m.heads == 32 && m.kv_heads == 8 &&
          m.vocab == 128256 && m.seq == 8192 && m.untied && m.mlp == LSIM_MLP_SWIGLU && m.norm == LSIM_NORM_RMS &&
          m.rope && m.no_bias);
    CHECK(lsim_model_builtin("llama3-70b", &m, NULL) == 0 && m.layers == 80 && m.hidden == 8192 && m.ffn == 28672 &&
          m.heads == 64 && m.kv_heads == 8);
    CHECK(lsim_model_builtin("llama3.1-405b", &m, NULL) == 0 && m.layers == 126 && m.hidden == 16384 &&
          m.ffn == 53248 && m.heads == 128 && m.kv_heads == 8);
    /* the MoE shapes: their publishers' config.json (the files' sources) */
    CHECK(lsim_model_builtin("gpt-oss-120b", &m, NULL) == 0 && m.layers == 36 && m.hidden == 2880 && m.experts == 128 &&
          m.top_k == 4 && m.expert_ffn == 2880 && m.kv_heads == 8 && m.head_dim == 64 && !m.no_bias);
    CHECK(lsim_model_builtin("qwen3-30b-a3b", &m, NULL) == 0 && m.layers == 48 && m.experts == 128 && m.top_k == 8 &&
          m.expert_ffn == 768 && m.shared_experts == 0);
    CHECK(lsim_model_builtin("qwen3-235b-a22b", &m, NULL) == 0 && m.layers == 94 && m.hidden == 4096 &&
          m.expert_ffn == 1536);
    CHECK(lsim_model_builtin("mixtral-8x7b", &m, NULL) == 0 && m.experts == 8 && m.top_k == 2 && m.expert_ffn == 14336);
    CHECK(lsim_model_builtin("deepseek-v3", &m, NULL) == 0 && m.experts == 256 && m.top_k == 8 &&
          m.shared_experts == 1 && m.dense_layers == 3 && m.expert_ffn == 2048 && !lsim_model_moe_layer(&m, 2) &&
          lsim_model_moe_layer(&m, 3));
    /* the GPT-3 built-ins are what they were: MHA, GeLU, LayerNorm, tied */
    CHECK(lsim_model_builtin("gpt3-175b", &m, NULL) == 0 && m.kv_heads == 0 && m.mlp == 0 && m.norm == 0 &&
          !m.rope && !m.untied && !m.no_bias && lsim_model_kv_heads(&m) == 96);
}

static void expect_bad(const char *text, const char *needle)
{
    char path[64];
    lsim_model_shape m;
    lsim_err err = {0};
    check_write_tmp(path, sizeof path, "lsim_test_models", text);
    int rc = lsim_model_load(path, &m, &err);
    CHECK_MSG(rc == LSIM_EFORMAT, "accepted: %s", text);
    CHECK_MSG(strstr(err.msg, needle) && strstr(err.msg, path) && !strchr(err.msg, '\n'), "'%s' not in: %s", needle,
              err.msg);
    remove(path);
}

static void test_bad_files(void)
{
    const char *base = "{\"layers\": 2, \"hidden\": 256, \"ffn\": 512, \"heads\": 8";
    char t[512];
    snprintf(t, sizeof t, "%s, \"kv_heads\": 3}", base);
    expect_bad(t, "key kv_heads: 8 query heads are not divisible by 3 KV heads");
    snprintf(t, sizeof t, "%s, \"kv_heads\": 16}", base);
    expect_bad(t, "key kv_heads");
    snprintf(t, sizeof t, "%s, \"experts\": 8}", base);
    expect_bad(t, "key top_k: missing");
    snprintf(t, sizeof t, "%s, \"experts\": 8, \"top_k\": 9, \"expert_ffn\": 64}", base);
    expect_bad(t, "key top_k: 9 experts per token is more than the 8 experts");
    snprintf(t, sizeof t, "%s, \"experts\": 8, \"top_k\": 2}", base);
    expect_bad(t, "key expert_ffn: missing");
    snprintf(t, sizeof t, "%s, \"top_k\": 2}", base);
    expect_bad(t, "key top_k: given without experts");
    snprintf(t, sizeof t, "%s, \"experts\": 8, \"top_k\": 2, \"expert_ffn\": 64, \"dense_layers\": 2}", base);
    expect_bad(t, "key dense_layers");
    snprintf(t, sizeof t, "%s, \"experts\": 0}", base);
    expect_bad(t, "key experts: not a positive integer");
    snprintf(t, sizeof t, "%s, \"mlp\": \"relu\"}", base);
    expect_bad(t, "key mlp: expected \"gelu\" or \"swiglu\"");
    snprintf(t, sizeof t, "%s, \"norm\": \"batchnorm\"}", base);
    expect_bad(t, "key norm");
    snprintf(t, sizeof t, "%s, \"rope\": 1}", base);
    expect_bad(t, "key rope: not true or false");
    snprintf(t, sizeof t, "%s, \"heads\": 4}", base);
    expect_bad(t, "key heads: given twice");
    snprintf(t, sizeof t, "%s, \"sources\": {\"hiden\": \"x\"}}", base);
    expect_bad(t, "key sources: member hiden");
    expect_bad("{\"layers\": 2, \"hidden\": 256, \"ffn\": 512}", "key heads: missing");
    /* a good one: every key */
    char path[64];
    lsim_model_shape m;
    lsim_err err = {0};
    snprintf(t, sizeof t,
             "%s, \"kv_heads\": 2, \"mlp\": \"swiglu\", \"norm\": \"rmsnorm\", \"rope\": true, "
             "\"tie_embeddings\": false, \"bias\": false, \"description\": \"toy\", \"sources\": {\"ffn\": \"x\"}}",
             base);
    check_write_tmp(path, sizeof path, "lsim_test_models", t);
    CHECK_MSG(lsim_model_load(path, &m, &err) == 0, "%s", err.msg);
    CHECK(m.kv_heads == 2 && m.mlp == LSIM_MLP_SWIGLU && m.norm == LSIM_NORM_RMS && m.rope && m.untied && m.no_bias &&
          m.head_dim == 128 && m.seq == 2048 && m.vocab == 51200);
    remove(path);
}

/* A GPU on which a bf16 GEMM of F FLOPs lasts F / 1e11 s exactly (up to
 * the nanosecond's rounding and one FLOP of the efficiency curve's
 * half-point), memory never binds, and flash attention runs at peak too. */
static void exact_gpu(lsim_gpu_spec *g)
{
    lsim_gpu_spec_builtin("h100", g, NULL);
    g->peak_flops = 1e11;
    g->sms = 0; /* the efficiency curve: eff_max 1, half-point 1 FLOP */
    g->gemm_eff_max = 1, g->gemm_eff_half = 1;
    g->attn_eff_max = 1, g->attn_eff_half = 1;
    g->mem_bw = 1e14, g->mem_eff = 1;
    g->kernel_min_ns = 1;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* FLOPs of the GEMM kernels (names *_gemm, *_dgrad, *_wgrad) and of the
 * flash-attention kernels (*.attn) of every GPU of the job. */
static int job_flops(const lsim_synth_cfg *c, double *gemm, double *attn)
{
    size_t n = lsim_synth_ngpus(c);
    lsim_graph **g = calloc(n, sizeof *g);
    lsim_err err = {0};
    int rc = lsim_synth_job(c, g, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    *gemm = *attn = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        for (size_t v = 0; v < g[i]->n; v++) {
            if (g[i]->kind[v] != LSIM_N_KERNEL) continue;
            const char *nm = lsim_strtab_get(g[i]->strings, g[i]->name[v]);
            double fl = (double)g[i]->dur[v] * 1e-9 * c->gpu.peak_flops;
            if (ends_with(nm, "_gemm") || ends_with(nm, "_dgrad") || ends_with(nm, "_wgrad")) *gemm += fl;
            else if (ends_with(nm, ".attn")) *attn += fl;
        }
        lsim_graph_free(g[i]);
    }
    free(g);
    return rc;
}

/* The shape's matrix parameters: per layer QKV h (H + 2 KV) d, projection
 * H d h, the MLP's matrices (2 or 3 of h x f), and the output layer V h
 * (the embedding is a lookup, no GEMM). */
static double matmul_params(const lsim_model_shape *m)
{
    double h = m->hidden, H = m->heads, d = m->head_dim, f = m->ffn, V = m->vocab;
    double KV = m->kv_heads > 0 ? m->kv_heads : m->heads;
    double layer = h * (H + 2 * KV) * d + H * d * h + (m->mlp == LSIM_MLP_SWIGLU ? 3 : 2) * h * f;
    return m->layers * layer + V * h;
}

/* The training FLOPs of one step (Megatron-LM, Narayanan et al. 2021 section
 * 5.1, and torchtitan's get_num_flop_per_token): per token 6 N for the
 * matrices (forward 2 N, backward 4 N: input and weight gradients) plus the
 * attention's 12 L H d s (forward Q K^T and P V, 2 s d FLOPs each per head
 * and token; backward twice that), with no causal saving. Tokens per step
 * = global batch x seq. The unfused attention path's batched GEMMs do
 * exactly that (no causal skipping); flash attention skips the masked half
 * and recomputes Q K^T in its backward (5 products against the forward's
 * 2): 12 x 1/2 x 7/6 = 7 L H d s per token. */
static void check_flops(lsim_synth_cfg *c, const char *what)
{
    const lsim_model_shape *m = &c->model;
    double tokens = (double)c->global_batch * m->seq;
    double mm = 6 * matmul_params(m) * tokens;
    double att = 12.0 * m->layers * m->heads * m->head_dim * m->seq * tokens;
    double gemm, attn;
    c->attention = LSIM_ATTN_UNFUSED;
    if (job_flops(c, &gemm, &attn)) return;
    CHECK_MSG(fabs(gemm - (mm + att)) <= 1e-6 * (mm + att), "%s unfused: graph %.6e GEMM FLOPs, formula %.6e", what,
              gemm, mm + att);
    c->attention = LSIM_ATTN_FLASH;
    if (job_flops(c, &gemm, &attn)) return;
    CHECK_MSG(fabs(gemm - mm) <= 1e-6 * mm, "%s: graph %.6e GEMM FLOPs, formula 6 N tokens %.6e", what, gemm, mm);
    CHECK_MSG(fabs(attn - att * 7 / 12) <= 1e-6 * att, "%s: graph %.6e attention FLOPs, formula %.6e", what, attn,
              att * 7 / 12);
}

static void test_flops(void)
{
    lsim_synth_cfg c;
    /* Llama 3 8B, one GPU, one sequence of 8192 tokens */
    lsim_synth_cfg_default(&c);
    CHECK(lsim_model_builtin("llama3-8b", &c.model, NULL) == 0);
    exact_gpu(&c.gpu);
    c.tp = c.pp = c.dp = 1;
    c.micro_batch = c.global_batch = 1;
    c.mem_check = 0;
    check_flops(&c, "llama3-8b");
    /* a GQA + SwiGLU toy split every way: TP 2 (2 KV heads a GPU), PP 2,
     * DP 2, 4 micro-batches, untied; and the same with MQA-like 2 KV heads
     * tied, GeLU */
    lsim_synth_cfg_default(&c);
    lsim_model_shape toy = {"toy", 4, 512, 1376, 8, 64, 256, 1000, 4, LSIM_MLP_SWIGLU, LSIM_NORM_RMS, 1, 1, 1, 0, 0, 0, 0, 0, 0};
    c.model = toy;
    exact_gpu(&c.gpu);
    c.tp = c.pp = c.dp = 2;
    c.micro_batch = 2, c.global_batch = 8;
    c.mem_check = 0;
    check_flops(&c, "toy gqa swiglu");
    c.model.kv_heads = 2, c.model.mlp = LSIM_MLP_GELU, c.model.untied = 0;
    check_flops(&c, "toy gqa gelu tied");
    /* the GPT-3 path is the same formula with KV = H and two MLP matrices */
    CHECK(lsim_model_builtin("gpt3-15b", &c.model, NULL) == 0);
    c.model.layers = 4, c.model.seq = 512;
    c.tp = 2, c.pp = 2, c.dp = 1, c.micro_batch = 1, c.global_batch = 4;
    check_flops(&c, "gpt3-15b");
}

/* memest.h's parameters of a GPU, from the shape: layers' matrices split
 * over TP, the norms (RMSNorm: h; LayerNorm: 2h) replicated, no biases;
 * the embedding on the first stage and, untied, the output layer on the last
 * (both on one stage here). */
static void test_params(void)
{
    lsim_synth_cfg c;
    lsim_synth_cfg_default(&c);
    CHECK(lsim_model_builtin("llama3-8b", &c.model, NULL) == 0);
    c.tp = 2, c.pp = c.dp = 1, c.micro_batch = c.global_batch = 1;
    lsim_memest_in in;
    lsim_memest_stage st;
    lsim_synth_memest_in(&c, &in);
    CHECK(lsim_memest_stage_of(&in, 0, &st, NULL) == 0);
    const lsim_model_shape *m = &c.model;
    double h = m->hidden, t = c.tp, mats = matmul_params(m) - (double)m->vocab * h;
    double want = mats / t + m->layers * 2 * h + 2 * (double)m->vocab * h / t + h; /* + final norm */
    CHECK_MSG(fabs(st.params - want) < 0.5, "llama3-8b TP 2: %.0f parameters a GPU, formula %.0f", st.params, want);
    /* the whole model at TP 1: Meta's 8.03 billion */
    c.tp = 1;
    lsim_synth_memest_in(&c, &in);
    CHECK(lsim_memest_stage_of(&in, 0, &st, NULL) == 0);
    CHECK_MSG(fabs(st.params - 8030261248.0) < 0.5, "llama3-8b: %.0f parameters", st.params);
}

/* Kernels of the job whose names end in suf. */
static double job_count(const lsim_synth_cfg *c, const char *suf)
{
    size_t n = lsim_synth_ngpus(c);
    lsim_graph **g = calloc(n, sizeof *g);
    double cnt = 0;
    lsim_err err = {0};
    int rc = lsim_synth_job(c, g, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    for (size_t i = 0; !rc && i < n; i++) {
        for (size_t v = 0; v < g[i]->n; v++)
            if (g[i]->kind[v] == LSIM_N_KERNEL && ends_with(lsim_strtab_get(g[i]->strings, g[i]->name[v]), suf)) cnt++;
        lsim_graph_free(g[i]);
    }
    free(g);
    return cnt;
}

/* --precision fp8: the layers' linear GEMMs (forward, input and weight
 * gradients) at peak_flops_fp8, the output layer and attention at bf16;
 * per layer and micro-batch 8 casts in the forward (each linear's input and
 * weight) and 4 in the backward (each output gradient); current scaling an
 * amax before each, delayed none but 12 history updates per layer and step
 * (3 tensors x 4 linears). */
static void test_fp8(void)
{
    lsim_synth_cfg c;
    lsim_err err = {0};
    lsim_synth_cfg_default(&c);
    lsim_model_shape toy = {"toy", 4, 512, 1376, 8, 64, 256, 1000, 4, LSIM_MLP_SWIGLU, LSIM_NORM_RMS, 1, 1, 1, 0, 0, 0, 0, 0, 0};
    c.model = toy;
    exact_gpu(&c.gpu);
    c.gpu.peak_flops_fp8 = 2 * c.gpu.peak_flops;
    c.tp = c.pp = c.dp = 2;
    c.micro_batch = 2, c.global_batch = 8;
    c.mem_check = 0;
    c.precision = LSIM_PREC_FP8;
    const lsim_model_shape *m = &c.model;
    double tokens = (double)c.global_batch * m->seq, head = (double)m->vocab * m->hidden;
    double lin = 6 * (matmul_params(m) - head) * tokens, att = 12.0 * m->layers * m->heads * m->head_dim * m->seq * tokens;
    double gemm, attn;
    if (!job_flops(&c, &gemm, &attn)) {
        /* read at the bf16 peak: the linears took half their bf16 time */
        double want = lin / 2 + 6 * head * tokens;
        CHECK_MSG(fabs(gemm - want) <= 1e-6 * want, "fp8: %.6e bf16-peak GEMM FLOPs, expected %.6e", gemm, want);
        CHECK_MSG(fabs(attn - att * 7 / 12) <= 1e-6 * att, "fp8: attention %.6e, expected %.6e", attn, att * 7 / 12);
    }
    /* every GPU runs its layers' share for every micro-batch of its replica */
    double layer_mbs = (double)m->layers * c.tp * (c.global_batch / c.micro_batch);
    CHECK(job_count(&c, "_fp8_cast") == 12 * layer_mbs);
    CHECK(job_count(&c, "_fp8_amax") == 12 * layer_mbs);
    CHECK(job_count(&c, "fp8_amax_history") == 0);
    c.fp8_scaling = LSIM_FP8_DELAYED;
    CHECK(job_count(&c, "_fp8_cast") == 12 * layer_mbs);
    CHECK(job_count(&c, "_fp8_amax") == 0);
    CHECK(job_count(&c, "fp8_amax_history") == 12.0 * m->layers * c.tp * c.dp);
    char opts[160];
    lsim_synth_opts(&c, opts, sizeof opts);
    CHECK_STR(opts, "fp8=delayed");
    c.precision = LSIM_PREC_BF16;
    CHECK(job_count(&c, "_fp8_cast") == 0);
    lsim_synth_opts(&c, opts, sizeof opts);
    CHECK_STR(opts, "");
    /* the A100 has no FP8 tensor cores: refused; the H100 and H200 have */
    c.precision = LSIM_PREC_FP8;
    CHECK(lsim_gpu_spec_builtin("a100", &c.gpu, NULL) == 0);
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG);
    CHECK_MSG(strstr(err.msg, "--precision fp8: the a100 has no FP8"), "%s", err.msg);
    CHECK(lsim_gpu_spec_builtin("h100", &c.gpu, NULL) == 0 && c.gpu.peak_flops_fp8 == 1979e12);
    CHECK(lsim_gpu_spec_builtin("h200", &c.gpu, NULL) == 0 && c.gpu.peak_flops_fp8 == 1979e12);
}

/* Layouts refused by lsim_synth_check, naming the field. */
static void test_bad_layout(void)
{
    lsim_synth_cfg c;
    lsim_err err = {0};
    lsim_synth_cfg_default(&c);
    CHECK(lsim_model_builtin("llama3-70b", &c.model, NULL) == 0);
    c.tp = 16, c.pp = 8, c.dp = 1, c.micro_batch = 1, c.global_batch = 8, c.mem_check = 0;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG);
    CHECK_MSG(strstr(err.msg, "kv_heads: 8 KV heads are not divisible by TP = 16"), "%s", err.msg);
    c.tp = 8;
    CHECK_MSG(lsim_synth_check(&c, &err) == 0, "%s", err.msg);
    c.model.kv_heads = 24; /* 64 heads */
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG);
    CHECK_MSG(strstr(err.msg, "kv_heads: 64 query heads are not divisible by 24 KV heads"), "%s", err.msg);
}

int main(void)
{
    test_shipped();
    test_bad_files();
    test_flops();
    test_params();
    test_bad_layout();
    test_fp8();
    return check_result("test_models");
}
