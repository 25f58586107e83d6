/* Unit test: the GPU-to-rank mapping policies (src/run/mapping.c, run.h).
 * Each policy on small hand-made layouts; the expected assignments are
 * worked out by hand from the policies' definitions (comments), not taken
 * from a run. GPUs are numbered as Megatron does: GPU = tp + TP * (dp + DP
 * * pp). No MPI: the policies are pure functions of the layout and K. */
#define _DEFAULT_SOURCE /* mkstemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "lumosim/run.h"

/* owner under mapping, compared with want[0..l->ngpus), and how */
static void expect(const char *mapping, lsim_map_layout l, int k, const int32_t *want, const char *how_want)
{
    int32_t owner[64];
    const char *how = NULL;
    lsim_err err = {0};
    int rc = lsim_map_assign(mapping, &l, k, owner, &how, &err);
    CHECK_MSG(rc == 0, "%s over %d ranks: %s", mapping, k, err.msg);
    if (rc) return;
    for (size_t g = 0; g < l.ngpus; g++)
        CHECK_MSG(owner[g] == want[g], "%s (%zu GPUs, TP %zu, DP %zu) over %d ranks: GPU %zu on rank %d, expected %d",
                  mapping, l.ngpus, l.tp, l.dp, k, g, owner[g], want[g]);
    CHECK_MSG(how && !strcmp(how, how_want), "%s: applied '%s', expected '%s'", mapping, how ? how : "(null)", how_want);
}

/* mapping refused with LSIM_EARG/EIO and a message containing want */
static void refused(const char *mapping, lsim_map_layout l, int k, const char *want)
{
    int32_t owner[64];
    const char *how = NULL;
    lsim_err err = {0};
    int rc = lsim_map_assign(mapping, &l, k, owner, &how, &err);
    CHECK_MSG(rc != 0, "%s: accepted", mapping);
    CHECK_MSG(strstr(err.msg, want) != NULL, "%s: message '%s' lacks '%s'", mapping, err.msg, want);
}

static void test_groups(void)
{
    /* 8 GPUs, TP 2, DP 2 (so PP 2): replica (dp) of GPU g = (g / 2) mod 2,
     * TP group = g / 2 */
    lsim_map_layout a = {8, 2, 2};
    /* K = 2 <= DP: whole replicas, replica 0 (GPUs 0 1 4 5) on rank 0,
     * replica 1 (2 3 6 7) on rank 1 */
    static const int32_t rep2[] = {0, 0, 1, 1, 0, 0, 1, 1};
    expect("groups", a, 2, rep2, "groups:replicas");
    /* K = 3 > DP, 4 TP groups >= 3: blocks of TP groups, 4 = 2 + 1 + 1:
     * groups 0 1 (GPUs 0-3) on rank 0, group 2 on rank 1, group 3 on rank 2 */
    static const int32_t tp3[] = {0, 0, 0, 0, 1, 1, 2, 2};
    expect("groups", a, 3, tp3, "groups:tp");
    /* K = 5 > 4 TP groups: linear, 8 = 2 + 2 + 2 + 1 + 1 */
    static const int32_t lin5[] = {0, 0, 1, 1, 2, 2, 3, 4};
    expect("groups", a, 5, lin5, "groups:linear");
    /* 8 GPUs, TP 1, DP 4 (PP 2): replica of GPU g = g mod 4; K = 3 <= DP:
     * replicas in blocks 4 = 2 + 1 + 1: replicas 0 1 on rank 0, 2 on 1, 3 on 2 */
    lsim_map_layout b = {8, 1, 4};
    static const int32_t rep3[] = {0, 0, 1, 2, 0, 0, 1, 2};
    expect("groups", b, 3, rep3, "groups:replicas");
    /* no layout known (TP = DP = 1): linear, 8 = 3 + 3 + 2 */
    lsim_map_layout c = {8, 1, 1};
    static const int32_t lin3[] = {0, 0, 0, 1, 1, 1, 2, 2};
    expect("groups", c, 3, lin3, "groups:linear");
}

static void test_stages(void)
{
    /* 8 GPUs, TP 2, DP 2, so PP 2: stage of GPU g = g / 4 */
    lsim_map_layout a = {8, 2, 2};
    /* K = 2 <= PP: whole stages, stage 0 (GPUs 0-3) on rank 0, stage 1 on
     * rank 1 (groups gives whole replicas instead: 0 0 1 1 0 0 1 1) */
    static const int32_t st2[] = {0, 0, 0, 0, 1, 1, 1, 1};
    expect("stages", a, 2, st2, "stages:stages");
    /* K = 3 > PP, 4 TP groups >= 3: blocks of TP groups 2 + 1 + 1 */
    static const int32_t tp3[] = {0, 0, 0, 0, 1, 1, 2, 2};
    expect("stages", a, 3, tp3, "stages:tp");
    /* K = 5 > 4 TP groups: linear */
    static const int32_t lin5[] = {0, 0, 1, 1, 2, 2, 3, 4};
    expect("stages", a, 5, lin5, "stages:linear");
    /* 24 GPUs, TP 2, DP 3, PP 4: stage = g / 6; K = 3: 4 stages = 2 + 1 + 1,
     * stages 0 1 (GPUs 0-11) on rank 0, stage 2 on 1, stage 3 on 2 */
    lsim_map_layout b = {24, 2, 3};
    int32_t st3[24];
    for (int g = 0; g < 24; g++) st3[g] = g < 12 ? 0 : g < 18 ? 1 : 2;
    expect("stages", b, 3, st3, "stages:stages");
    /* no pipeline (TP 2, DP 4: one stage): blocks of TP groups, 4 = 2 + 2 */
    lsim_map_layout c = {8, 2, 4};
    static const int32_t tp2[] = {0, 0, 0, 0, 1, 1, 1, 1};
    expect("stages", c, 2, tp2, "stages:tp");
    /* no layout known: linear */
    lsim_map_layout d = {8, 1, 1};
    static const int32_t lin3[] = {0, 0, 0, 1, 1, 1, 2, 2};
    expect("stages", d, 3, lin3, "stages:linear");
}

static void test_linear_round_robin(void)
{
    lsim_map_layout a = {8, 2, 2};
    /* contiguous blocks whatever the layout: 8 = 3 + 3 + 2 */
    static const int32_t lin3[] = {0, 0, 0, 1, 1, 1, 2, 2};
    expect("linear", a, 3, lin3, "linear");
    /* GPU g on rank g mod 3 */
    static const int32_t rr3[] = {0, 1, 2, 0, 1, 2, 0, 1};
    expect("round-robin", a, 3, rr3, "round-robin");
    /* more ranks than GPUs: one GPU each, the last ranks none */
    lsim_map_layout d = {3, 1, 1};
    static const int32_t lin4[] = {0, 1, 2};
    expect("linear", d, 4, lin4, "linear");

    /* the GPUs of one rank, ascending */
    size_t *g = NULL, n = 0;
    const char *how = NULL;
    lsim_err err = {0};
    CHECK(lsim_map_local("round-robin", &a, 3, 1, &g, &n, &how, &err) == 0);
    CHECK_I64(n, 3);
    if (n == 3) {
        CHECK_I64(g[0], 1);
        CHECK_I64(g[1], 4);
        CHECK_I64(g[2], 7);
    }
    free(g);
    size_t first = 0, count = 0;
    lsim_map_block(8, 3, 2, &first, &count);
    CHECK_I64(first, 6);
    CHECK_I64(count, 2);
}

static void test_file(void)
{
    lsim_map_layout l = {4, 1, 1};
    char path[64], mapping[80];
    /* comments, blank lines and trailing comments skipped; as written */
    check_write_tmp(path, sizeof path, "lsim_test_mapping", "# GPU RANK\n3 1\n0 0\n\n1 1  # trailing\n2 0\n");
    snprintf(mapping, sizeof mapping, "file:%s", path);
    static const int32_t want[] = {0, 1, 0, 1};
    expect(mapping, l, 2, want, mapping);
    unlink(path);

    static const struct {
        const char *text, *msg;
    } BAD[] = {
        {"0 0\n0 1\n1 0\n2 0\n3 0\n", ":2: GPU 0 is mapped twice"},
        {"0 0\n1 0\n2 0\n", ": GPU 3 is not mapped to any MPI rank"},
        {"0 0\n1 2\n2 0\n3 0\n", ":2: MPI rank 2 does not exist (the job has ranks 0..1)"},
        {"0 0\n4 1\n", ":2: GPU 4 does not exist (the store holds GPUs 0..3)"},
        {"0\n", ":1: expected \"GPU RANK\" (two integers)"},
        {"0 0 0\n", ":1: expected \"GPU RANK\" (two integers)"},
    };
    for (size_t k = 0; k < sizeof BAD / sizeof *BAD; k++) {
        check_write_tmp(path, sizeof path, "lsim_test_mapping", BAD[k].text);
        snprintf(mapping, sizeof mapping, "file:%s", path);
        refused(mapping, l, 2, BAD[k].msg);
        unlink(path);
    }
    refused("file:/nonexistent/lsim.map", l, 2, "/nonexistent/lsim.map: cannot read the mapping file");
}

static void test_names(void)
{
    lsim_map_layout l = {4, 1, 1};
    const char *unk = "(groups, stages, linear, round-robin or file:PATH)";
    refused("foo", l, 2, "unknown --mapping 'foo'");
    refused("file:", l, 2, unk);
    refused("groupsx", l, 2, unk);
    refused("linear:3", l, 2, unk);
    size_t n = 0;
    const lsim_map_policy *p = lsim_map_policies(&n);
    CHECK_I64(n, 5);
    if (n == 5) {
        CHECK(!strcmp(p[0].name, "groups") && !strcmp(p[1].name, "stages") && !strcmp(p[2].name, "linear") &&
              !strcmp(p[3].name, "round-robin") && !strcmp(p[4].name, "file") && p[4].takes_arg);
        for (size_t k = 0; k < n; k++) CHECK(p[k].desc && p[k].desc[0] && p[k].assign);
    }
}

int main(void)
{
    test_groups();
    test_stages();
    test_linear_round_robin();
    test_file();
    test_names();
    return check_result("test_mapping");
}
