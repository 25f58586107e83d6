/* Symmetry classes and the quotient (symmetry.h) on jobs written by hand
 * (instances only: the refinement and the check read no graph), expected
 * classes worked out from the job's shape:
 *  - a ring of 2 pairs of GPUs, {0,1} and {2,3} all-reducing at node 0, all
 *    with one first colour: one class, and the quotient one GPU with one
 *    instance of one member;
 *  - the same with GPU 3's first colour its own (a slow GPU): 3 is alone,
 *    its partner 2 too (it waits for 3), {0,1} stay one class;
 *  - a broadcast {0,1} rooted at 0 and {2,3} rooted at 2: the roots one
 *    class, the others one (the role is in the colour);
 *  - the check: a partition that merges GPUs whose instances transfer in
 *    different times is not exact (no quotient), whatever proposed it. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "lumosim/symmetry.h"

/* 4 GPUs, 2 instances {0,1} and {2,3} at node 0; rule and transfers given. */
static lsim_job *pairs(uint8_t rule, lsim_ns t0, lsim_ns t1)
{
    lsim_job *j = calloc(1, sizeof *j);
    static uint64_t off[3] = {0, 2, 4}, root[2] = {0, 2};
    static uint32_t gpu[4] = {0, 1, 2, 3}, node[4] = {0, 0, 0, 0}, coll[4] = {0, 0, 0, 0};
    static lsim_ns transfer[2], offset[4];
    static uint8_t rules[2];
    transfer[0] = t0;
    transfer[1] = t1;
    rules[0] = rules[1] = rule;
    j->ngpus = 4;
    j->ninst = j->ninst_job = 2;
    j->part_off = off;
    j->part_gpu = gpu;
    j->part_node = node;
    j->part_coll = coll;
    j->transfer = transfer;
    j->rule = rules;
    j->root = root;
    j->clock_offset = offset;
    return j;
}

static void classes(const lsim_job *j, const lsim_sym_key *k, const uint32_t *want, size_t nwant)
{
    uint32_t rep[4];
    size_t n = 0;
    lsim_err err;
    CHECK(lsim_sym_classes(j, k, rep, &n, &err) == 0);
    CHECK_I64((int64_t)n, (int64_t)nwant);
    for (int i = 0; i < 4; i++) CHECK_I64(rep[i], want[i]);
}

int main(void)
{
    lsim_sym_key same[4] = {{1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}};
    lsim_job *j = pairs(LSIM_JOB_ALL, 5, 5);
    classes(j, same, (const uint32_t[]){0, 0, 0, 0}, 1);
    {
        uint32_t rep[4] = {0, 0, 0, 0}, qidx[4];
        size_t nodes[4] = {1, 1, 1, 1};
        lsim_job *q = NULL;
        lsim_err err;
        CHECK(lsim_sym_quotient(j, rep, nodes, nodes, qidx, &q, &err) == 0);
        CHECK(q != NULL);
        if (q) {
            CHECK_I64((int64_t)q->ngpus, 1);
            CHECK_I64((int64_t)q->ninst, 1);
            CHECK_I64((int64_t)q->part_off[1], 1);
            CHECK_I64(q->transfer[0], 5);
            CHECK_I64(q->inst_of[0][0], 0);
        }
        CHECK_I64(qidx[0], 0);
        CHECK_I64(qidx[3], UINT32_MAX);
        lsim_job_free(q);
    }
    lsim_sym_key slow[4] = {{1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}, {2, 0, 0, 0}};
    classes(j, slow, (const uint32_t[]){0, 0, 2, 3}, 3);
    free(j);

    j = pairs(LSIM_JOB_BCAST, 5, 5);
    classes(j, same, (const uint32_t[]){0, 1, 0, 1}, 2);
    free(j);

    /* the pairs transfer in 5 and 7 ns: the refinement splits them; a
     * partition that merges them anyway is refused by the check */
    j = pairs(LSIM_JOB_ALL, 5, 7);
    classes(j, same, (const uint32_t[]){0, 0, 2, 2}, 2);
    {
        uint32_t rep[4] = {0, 0, 0, 0}, qidx[4];
        size_t nodes[4] = {1, 1, 1, 1};
        lsim_job *q = NULL;
        lsim_err err;
        CHECK(lsim_sym_quotient(j, rep, nodes, nodes, qidx, &q, &err) == 0);
        CHECK(q == NULL);
        lsim_job_free(q);
    }
    free(j);
    return check_result("test_symmetry");
}
