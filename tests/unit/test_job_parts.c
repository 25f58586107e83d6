/* The match in parts (lsim_job_match_ex with parts > 1, job.h) against the
 * match in one part, array for array, on a synthesized job of 8 GPUs
 * (GPT-3 15B cut to 4 layers, TP 2 PP 2 DP 2: tensor-parallel,
 * data-parallel and pipeline point-to-point groups) at 2, 3, 4, 5 and 16
 * parts (more parts than groups leaves some empty):
 *  - as synthesized (nothing observed);
 *  - with observed times written onto every collective, each GPU's clock
 *    late by its own offset and a per-instance jitter, so that clock
 *    offsets and observed waiting are not zero (each checked to be
 *    non-zero somewhere before the comparison means anything);
 *  - with two planted disagreements on groups cut into different parts,
 *    the first in (group, position) order being the one a one-part match
 *    names: every part count must give its line. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "synth8.h"

#include "lumosim/job.h"
#include "lumosim/synth.h"

/* Every collective node observed: it starts at its node index x 1000 plus
 * a jitter of its own, and ends 400 later; GPU i's clock runs i x 37 late. */
static void observe(lsim_graph **g)
{
    for (uint32_t i = 0; i < NG; i++)
        for (uint32_t v = 0; v < g[i]->n; v++) {
            if (!(g[i]->flags[v] & LSIM_NF_COLL) || g[i]->coll[v] < 0) continue;
            lsim_ns s = (lsim_ns)v * 1000 + (lsim_ns)((v * 7 + i * 13) % 29) + (lsim_ns)i * 37;
            g[i]->obs_start[v] = s;
            g[i]->obs_end[v] = s + 400 + (lsim_ns)(v % 3);
        }
}

static int same_u64(const uint64_t *a, const uint64_t *b, size_t n) { return !n || !memcmp(a, b, n * sizeof *a); }

/* Every array of b is a's. */
static void same_job(const lsim_job *a, const lsim_job *b, unsigned parts)
{
    CHECK_MSG(a->ninst == b->ninst && a->ngroups == b->ngroups && a->p2p_inst == b->p2p_inst &&
                  a->rooted_inst == b->rooted_inst && a->rootless_inst == b->rootless_inst &&
                  a->uncoupled_p2p == b->uncoupled_p2p && a->ninst_job == b->ninst_job,
              "%u parts: counts %zu/%zu instances, %u/%u groups", parts, b->ninst, a->ninst, b->ngroups, a->ngroups);
    if (a->ninst != b->ninst) return;
    size_t np = a->part_off[a->ninst];
    CHECK_MSG(same_u64(a->part_off, b->part_off, a->ninst + 1), "%u parts: part_off", parts);
    CHECK_MSG(!memcmp(a->part_gpu, b->part_gpu, np * 4) && !memcmp(a->part_node, b->part_node, np * 4) &&
                  !memcmp(a->part_coll, b->part_coll, np * 4),
              "%u parts: participants", parts);
    CHECK_MSG(!memcmp(a->transfer, b->transfer, a->ninst * sizeof *a->transfer) &&
                  !memcmp(a->rule, b->rule, a->ninst) && same_u64(a->root, b->root, a->ninst),
              "%u parts: transfer, rule, root", parts);
    CHECK_MSG(!memcmp(a->clock_offset, b->clock_offset, NG * sizeof *a->clock_offset), "%u parts: clock offsets",
              parts);
    for (uint32_t i = 0; i < NG; i++) {
        const lsim_graph *g = a->graphs[i];
        CHECK_MSG(!memcmp(a->inst_of[i], b->inst_of[i], g->ncoll * sizeof **a->inst_of), "%u parts: GPU %u inst_of",
                  parts, i);
        CHECK_MSG(!a->obs_wait[i] == !b->obs_wait[i] &&
                      (!a->obs_wait[i] || !memcmp(a->obs_wait[i], b->obs_wait[i], g->n * sizeof **a->obs_wait)),
                  "%u parts: GPU %u observed waiting", parts, i);
    }
}

static const unsigned PARTS[] = {2, 3, 4, 5, 16};

static void compare(lsim_graph **g, int observed)
{
    lsim_err err;
    lsim_job *one = NULL;
    CHECK_I64(lsim_job_match_ex(g, NG, 1, NULL, NULL, &one, &err), 0);
    if (!one) return;
    CHECK(one->ninst > 0 && one->p2p_inst > 0 && one->ngroups >= 5);
    if (observed) { /* what the comparison is meant to cover */
        int offs = 0, waits = 0;
        for (uint32_t i = 0; i < NG; i++) {
            offs += one->clock_offset[i] != 0;
            for (uint32_t v = 0; one->obs_wait[i] && v < g[i]->n; v++) waits += one->obs_wait[i][v] != 0;
        }
        CHECK(offs > 0 && waits > 0);
    }
    for (size_t k = 0; k < sizeof PARTS / sizeof PARTS[0]; k++) {
        lsim_job *p = NULL;
        CHECK_I64(lsim_job_match_ex(g, NG, PARTS[k], NULL, NULL, &p, &err), 0);
        if (p) same_job(one, p, PARTS[k]);
        lsim_job_free(p);
    }
    lsim_job_free(one);
}

/* The first collective node of GPU i on a group whose name starts with
 * prefix, or UINT32_MAX. */
static uint32_t coll_on(lsim_graph *g, const char *prefix)
{
    for (uint32_t v = 0; v < g->n; v++) {
        if (!(g->flags[v] & LSIM_NF_COLL) || g->coll[v] < 0) continue;
        const lsim_coll_info *c = &g->colls[g->coll[v]];
        const char *name = c->pg_name != UINT32_MAX ? lsim_strtab_get(g->strings, c->pg_name) : "";
        if (!strncmp(name, prefix, strlen(prefix)) && c->kind != LSIM_COLL_SEND && c->kind != LSIM_COLL_RECV) return v;
    }
    return UINT32_MAX;
}

static void errors(lsim_graph **g)
{
    /* a byte count changed on one GPU of a data-parallel group and on one
     * of a tensor-parallel group ("dp..." sorts before "tp..."): the
     * data-parallel one is named, whichever part each falls in */
    uint32_t vd = coll_on(g[5], "dp"), vt = coll_on(g[2], "tp");
    CHECK(vd != UINT32_MAX && vt != UINT32_MAX);
    if (vd == UINT32_MAX || vt == UINT32_MAX) return;
    g[5]->colls[g[5]->coll[vd]].bytes += 2;
    g[2]->colls[g[2]->coll[vt]].bytes += 2;
    lsim_err want, got;
    lsim_job *j = NULL;
    CHECK_I64(lsim_job_match_ex(g, NG, 1, NULL, NULL, &j, &want), LSIM_ETRACE);
    CHECK_MSG(strstr(want.msg, "group dp") != NULL, "one part: %s", want.msg);
    for (size_t k = 0; k < sizeof PARTS / sizeof PARTS[0]; k++) {
        CHECK_I64(lsim_job_match_ex(g, NG, PARTS[k], NULL, NULL, &j, &got), LSIM_ETRACE);
        CHECK_MSG(!strcmp(got.msg, want.msg), "%u parts: '%s', one part: '%s'", PARTS[k], got.msg, want.msg);
        CHECK(j == NULL);
    }
    /* the tensor-parallel one alone: named as well */
    g[5]->colls[g[5]->coll[vd]].bytes -= 2;
    CHECK_I64(lsim_job_match_ex(g, NG, 1, NULL, NULL, &j, &want), LSIM_ETRACE);
    CHECK_MSG(strstr(want.msg, "group tp") != NULL, "one part: %s", want.msg);
    for (size_t k = 0; k < sizeof PARTS / sizeof PARTS[0]; k++) {
        CHECK_I64(lsim_job_match_ex(g, NG, PARTS[k], NULL, NULL, &j, &got), LSIM_ETRACE);
        CHECK_MSG(!strcmp(got.msg, want.msg), "%u parts: '%s', one part: '%s'", PARTS[k], got.msg, want.msg);
    }
    g[2]->colls[g[2]->coll[vt]].bytes -= 2;
}

int main(void)
{
    lsim_graph *g[NG] = {0};
    if (synth_job(g)) return 1;
    compare(g, 0);
    observe(g);
    compare(g, 1);
    errors(g);
    for (int i = 0; i < NG; i++) lsim_graph_free(g[i]);
    return check_result("test_job_parts");
}
