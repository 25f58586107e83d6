/* Uneven pipeline stages (stages.h, synth --pp-layers; issue 36: Llama 3.1
 * 405B's 126 layers over 8 stages). Expected values come from the stacks'
 * own rules, written here in their own form:
 * - torchtitan's generate_split_points: cumulative split points, the first
 *   stage base = L / S layers, each later stage but the last one more while
 *   L % S extra layers remain, the last the rest;
 * - Megatron's account_for_embedding/loss_in_pipeline_split: L + 2 "layers"
 *   split evenly, the embedding the first of virtual stage 0's, the loss the
 *   last of the last virtual stage's.
 * And a synthesized job puts exactly those layers' GEMMs on each GPU, its
 * pipeline sends carry the last layer of a stage, and the memory estimate
 * counts the stage's layers. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "lumosim/memest.h"
#include "lumosim/stages.h"
#include "lumosim/synth.h"

/* torchtitan's loop, as its source writes it: split points, not counts */
static void torchtitan_counts(int L, int S, int *out)
{
    int base = L / S, extra = L % S, cur = 0, prev = 0;
    for (int i = 0; i < S - 1; i++) {
        if (i == 0) cur += base;
        else if (extra > 0) cur += base + 1, extra--;
        else cur += base;
        out[i] = cur - prev;
        prev = cur;
    }
    out[S - 1] = L - prev;
}

static void check_spans(const lsim_split *sp, int L, int pp, int V, const int *want)
{
    int next = 0;
    for (int vs = 0; vs < pp * V; vs++) {
        int first = -1, n = lsim_split_span(sp, L, pp, V, vs, &first);
        CHECK_MSG(n == want[vs] && first == next, "%s L %d S %d vs %d: %d layers from %d, want %d from %d",
                  lsim_split_name(sp), L, pp * V, vs, n, first, want[vs], next);
        next += want[vs];
    }
    CHECK_I64(next, L);
}

static void test_rules(void)
{
    lsim_err err;
    lsim_split sp;
    int want[64];
    /* torchtitan, Llama 3.1 405B: 1F1B (one stage per rank) and interleaved (two) */
    CHECK(lsim_split_parse("middle", &sp, &err) == 0 && sp.mode == LSIM_SPLIT_MIDDLE);
    CHECK(lsim_split_check(&sp, 126, 8, 1, &err) == 0);
    torchtitan_counts(126, 8, want);
    CHECK(want[0] == 15 && want[1] == 16 && want[6] == 16 && want[7] == 15); /* the reference itself */
    check_spans(&sp, 126, 8, 1, want);
    torchtitan_counts(126, 16, want);
    check_spans(&sp, 126, 8, 2, want);
    torchtitan_counts(5, 2, want);
    check_spans(&sp, 5, 2, 1, want);
    /* Megatron, 405B on PP 8 x VP 8 and Qwen3 235B on PP 8 x VP 4 */
    CHECK(lsim_split_parse("embed-loss", &sp, &err) == 0 && sp.mode == LSIM_SPLIT_EMBED_LOSS);
    int cases[2][3] = {{126, 8, 8}, {94, 8, 4}};
    for (int k = 0; k < 2; k++) {
        int L = cases[k][0], pp = cases[k][1], V = cases[k][2], S = pp * V, q = (L + 2) / S;
        CHECK(lsim_split_check(&sp, L, pp, V, &err) == 0);
        for (int vs = 0; vs < S; vs++) want[vs] = q - (vs == 0) - (vs == S - 1);
        check_spans(&sp, L, pp, V, want);
    }
    CHECK(lsim_split_check(&sp, 126, 8, 3, &err) == LSIM_EARG && strstr(err.msg, "= 128 are not divisible by PP x V = 8 x 3"));
    /* a list, and even */
    CHECK(lsim_split_parse("3,1,2", &sp, &err) == 0 && sp.mode == LSIM_SPLIT_LIST && sp.n == 3);
    CHECK(lsim_split_check(&sp, 6, 3, 1, &err) == 0);
    int l3[3] = {3, 1, 2};
    check_spans(&sp, 6, 3, 1, l3);
    CHECK(lsim_split_check(&sp, 7, 3, 1, &err) == LSIM_EARG && strstr(err.msg, "lists 6 layers in all, but the model has 7"));
    CHECK(lsim_split_check(&sp, 6, 2, 1, &err) == LSIM_EARG && strstr(err.msg, "lists 3 virtual stages"));
    memset(&sp, 0, sizeof sp);
    CHECK(lsim_split_check(&sp, 126, 8, 1, &err) == LSIM_EARG && strstr(err.msg, "126 layers are not divisible by PP x V = 8 x 1"));
    int e4[4] = {3, 3, 3, 3};
    check_spans(&sp, 12, 2, 2, e4);
    /* what the parser refuses */
    const char *bad[] = {"", "1,", ",1", "1,,2", "0,3", "-1,2", "2x", "65536", "middles"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK_MSG(lsim_split_parse(bad[i], &sp, &err) == LSIM_EARG, "'%s' accepted", bad[i]);
}

/* the distinct layers whose forward QKV GEMM GPU g runs */
static void layers_of(const lsim_synth_cfg *c, uint32_t gpu, int *lo, int *hi, int *count)
{
    lsim_err err;
    lsim_graph *g = NULL;
    *lo = 1 << 30, *hi = -1, *count = 0;
    CHECK_MSG(lsim_synth_gpu(c, gpu, NULL, &g, &err) == 0, "%s", err.msg);
    if (!g) return;
    int seen[64] = {0};
    for (size_t v = 0; v < g->n; v++) {
        int l, mb;
        const char *s = lsim_strtab_get(g->strings, g->name[v]);
        if (g->kind[v] != LSIM_N_KERNEL || sscanf(s, "L%d.mb%d.fwd.", &l, &mb) != 2 || !strstr(s, ".fwd.qkv_gemm")) continue;
        if (l >= 0 && l < 64 && !seen[l]++) (*count)++;
        if (l < *lo) *lo = l;
        if (l > *hi) *hi = l;
    }
    lsim_graph_free(g);
}

static void test_synth(void)
{
    lsim_synth_cfg c;
    lsim_err err;
    lsim_synth_cfg_default(&c);
    CHECK(lsim_model_builtin("llama3-8b", &c.model, NULL) == 0);
    c.model.layers = 11, c.model.seq = 1024;
    c.tp = 1, c.pp = 3, c.dp = 1, c.micro_batch = 1, c.global_batch = 3, c.mem_check = 0;
    CHECK(lsim_synth_check(&c, &err) == LSIM_EARG && strstr(err.msg, "11 layers are not divisible"));
    CHECK(lsim_split_parse("middle", &c.split, &err) == 0);
    CHECK_MSG(lsim_synth_check(&c, &err) == 0, "%s", err.msg);
    int want[3];
    torchtitan_counts(11, 3, want); /* 3, 4, 4 */
    int next = 0;
    lsim_memest_in mi;
    lsim_synth_memest_in(&c, &mi);
    for (int s = 0; s < 3; s++) {
        int lo, hi, n;
        layers_of(&c, (uint32_t)s, &lo, &hi, &n);
        CHECK_MSG(n == want[s] && lo == next && hi == next + want[s] - 1, "stage %d runs layers %d..%d (%d), want %d..%d",
                  s, lo, hi, n, next, next + want[s] - 1);
        next += want[s];
        lsim_memest_stage st;
        CHECK(lsim_memest_stage_of(&mi, s, &st, &err) == 0);
        CHECK_I64(st.layers, want[s]);
    }
    /* interleaved: GPU 0 holds virtual stages 0 and 3 of a list */
    c.vstages = 2, c.global_batch = 3;
    CHECK(lsim_split_parse("1,2,3,2,2,1", &c.split, &err) == 0);
    CHECK_MSG(lsim_synth_check(&c, &err) == 0, "%s", err.msg);
    int lo, hi, n;
    layers_of(&c, 0, &lo, &hi, &n); /* layers 0 and 6, 7 */
    CHECK_MSG(n == 3 && lo == 0 && hi == 7, "GPU 0 runs %d layers %d..%d", n, lo, hi);
    layers_of(&c, 2, &lo, &hi, &n); /* layers 3..5 and 10 */
    CHECK_MSG(n == 4 && lo == 3 && hi == 10, "GPU 2 runs %d layers %d..%d", n, lo, hi);
}

int main(void)
{
    test_rules();
    test_synth();
    return check_result("test_stages");
}
