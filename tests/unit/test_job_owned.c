/* The owner's half of the distributed match (lsim_job_match_owned, job.h)
 * against the whole-job match (lsim_job_from_entries), on hand-written
 * entries of a 3-GPU job, the keys split over two "owners" as the MPI match
 * splits them: together the owners find the serial instances; each GPU's
 * clock offset, the median of its terms from both owners, is the serial
 * one (values worked out by hand below); and with two bad instances, on
 * different owners, each owner points at its own, and the one first in
 * (group, position) order carries the serial error line. And the order
 * of the keys itself, against a list worked out by hand (key_order). And
 * the membership errors of one instance (membership). */
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "lumosim/job.h"

/* group, position, GPU, node, observed end (start = end - 100) */
static lsim_job_entry ent(const char *grp, int64_t seq, uint32_t gpu, uint32_t node, lsim_ns end, int32_t size)
{
    lsim_job_entry e;
    memset(&e, 0, sizeof e);
    e.group = grp; /* the callers' names are static */
    e.seq = seq;
    e.gpu = gpu;
    e.node = node;
    e.coll = node; /* a record per collective node, as a graph has */
    e.kind = LSIM_COLL_ALLREDUCE;
    e.observed = 1;
    e.group_size = size;
    e.bytes = 1024;
    e.obs_start = end - 100;
    e.obs_end = end;
    e.dur = 100;
    e.rank = (int32_t)gpu;
    e.root = -1;
    return e;
}

/* Owner A holds a:0, a:2 and b:0; owner B a:1. GPU 2's ends run 30 ns late
 * on a, GPU 0's 10 ns early on b against GPU 1's. Terms by hand (end minus
 * the instance's median end; of 3 participants the middle one, of 2 the
 * later, index n / 2 of the sorted ends):
 *   a:0 ends 1000, 1000, 1030 (GPUs 0, 1, 2): median 1000, terms 0, 0, 30
 *   a:1 ends 2000, 2000, 2030:                terms 0, 0, 30
 *   a:2 ends 3000, 3005, 3030:                median 3005: -5, 0, 25
 *   b:0 ends 4000 (GPU 0), 4010 (GPU 1):      median 4010: -10, 0
 * GPU 0: terms {0, 0, -5, -10}, sorted -10 -5 0 0, index 2: 0.
 * GPU 1: {0, 0, 0, 0}: 0. GPU 2: {30, 30, 25}, sorted 25 30 30: 30. */
static void split_match(void)
{
    lsim_job_entry all[] = {
        ent("a", 0, 0, 1, 1000, 3), ent("a", 0, 1, 1, 1000, 3), ent("a", 0, 2, 1, 1030, 3),
        ent("a", 1, 0, 2, 2000, 3), ent("a", 1, 1, 2, 2000, 3), ent("a", 1, 2, 2, 2030, 3),
        ent("a", 2, 0, 3, 3000, 3), ent("a", 2, 1, 3, 3005, 3), ent("a", 2, 2, 3, 3030, 3),
        ent("b", 0, 0, 4, 4000, 2), ent("b", 0, 1, 4, 4010, 2),
    };
    enum { N = sizeof all / sizeof all[0] };
    lsim_job_entry ownA[8], ownB[3];
    size_t na = 0, nb = 0;
    for (size_t q = 0; q < N; q++) {
        if (!strcmp(all[q].group, "a") && all[q].seq == 1) ownB[nb++] = all[q];
        else ownA[na++] = all[q];
    }
    lsim_err err;
    lsim_job *whole = NULL, *A = NULL, *B = NULL;
    lsim_ns da[8], db[3];
    size_t oa[8], ob[3]; /* sorted position -> entry */
    size_t fa = 0, fb = 0;
    CHECK_I64(lsim_job_from_entries(all, N, 3, NULL, NULL, NULL, NULL, &whole, &err), 0);
    CHECK_I64(lsim_job_match_owned(ownA, na, 3, NULL, NULL, oa, da, &fa, &A, &err), 0);
    CHECK_I64(lsim_job_match_owned(ownB, nb, 3, NULL, NULL, ob, db, &fb, &B, &err), 0);
    if (!whole || !A || !B) goto done;
    CHECK_I64(fa, SIZE_MAX);
    CHECK_I64(whole->ninst, 4);
    CHECK_I64(A->ninst + B->ninst, whole->ninst);
    const lsim_ns want[3] = {0, 0, 30};
    for (uint32_t g = 0; g < 3; g++) {
        lsim_ns t[8];
        size_t n = 0;
        for (size_t q = 0; q < na; q++)
            if (ownA[oa[q]].gpu == g && da[q] != INT64_MIN) t[n++] = da[q];
        for (size_t q = 0; q < nb; q++)
            if (ownB[ob[q]].gpu == g && db[q] != INT64_MIN) t[n++] = db[q];
        CHECK_I64(n, g == 2 ? 3 : 4);
        /* sort (n <= 4) and take index n / 2, as the match does */
        for (size_t x = 1; x < n; x++)
            for (size_t y = x; y > 0 && t[y - 1] > t[y]; y--) {
                lsim_ns s = t[y];
                t[y] = t[y - 1];
                t[y - 1] = s;
            }
        CHECK_I64(t[n / 2], want[g]);
        CHECK_I64(whole->clock_offset[g], want[g]);
    }
    /* a:2 on owner A (its sorted entries: a:0, a:2, b:0): GPU 0's term -5;
     * the entries stay where they were (a:2 on GPU 0 is ownA[3] there too,
     * a:0 x3 before it) */
    CHECK_I64(oa[3], 3);
    CHECK_I64(ownA[oa[3]].seq, 2);
    CHECK_I64(ownA[oa[3]].gpu, 0);
    CHECK_I64(da[3], -5);
done:
    lsim_job_free(whole);
    lsim_job_free(A);
    lsim_job_free(B);
}

/* Two bad instances: b:1 has GPU 1 only (size 2), a:5 moves 2048 bytes on
 * GPU 2. Serially a:5 comes first ("a" < "b"); owner A holds b:1 and a
 * good a:4, owner B a:5. */
static void first_error(void)
{
    lsim_job_entry all[] = {
        ent("a", 4, 0, 1, 1000, 3), ent("a", 4, 1, 1, 1000, 3), ent("a", 4, 2, 1, 1000, 3),
        ent("b", 1, 1, 2, 2000, 2),
        ent("a", 5, 0, 3, 3000, 3), ent("a", 5, 1, 3, 3000, 3), ent("a", 5, 2, 3, 3000, 3),
    };
    all[6].bytes = 2048;
    enum { N = sizeof all / sizeof all[0] };
    lsim_job_entry ownA[4] = {all[3], all[0], all[1], all[2]}, ownB[3] = {all[4], all[5], all[6]};
    lsim_err ew, ea, eb;
    lsim_job *j = NULL;
    lsim_ns d[4];
    size_t oa[4], ob[3];
    size_t fa = 0, fb = 0;
    memset(&ew, 0, sizeof ew);
    memset(&ea, 0, sizeof ea);
    memset(&eb, 0, sizeof eb);
    CHECK_I64(lsim_job_from_entries(all, N, 3, NULL, NULL, NULL, NULL, &j, &ew), LSIM_ETRACE);
    CHECK(j == NULL);
    CHECK_I64(lsim_job_match_owned(ownA, 4, 3, NULL, NULL, oa, d, &fa, &j, &ea), LSIM_ETRACE);
    CHECK(j == NULL);
    CHECK_I64(lsim_job_match_owned(ownB, 3, 3, NULL, NULL, ob, d, &fb, &j, &eb), LSIM_ETRACE);
    CHECK(j == NULL);
    /* each owner points at its bad instance's first sorted entry */
    CHECK_I64(fa, 3); /* sorted: a:4 x3, then b:1 (entry 0, not moved) */
    CHECK_I64(oa[fa < 4 ? fa : 0], 0);
    CHECK_STR(ownA[oa[fa < 4 ? fa : 0]].group, "b");
    CHECK_I64(fb, 0);
    CHECK_STR(ownB[ob[fb < 3 ? fb : 0]].group, "a");
    CHECK_I64(ownB[ob[fb < 3 ? fb : 0]].seq, 5);
    /* the first in (group, position) order is the serial line */
    CHECK_STR(eb.msg, ew.msg);
    CHECK(strcmp(ea.msg, ew.msg) != 0);
    CHECK(strstr(ew.msg, "#5 on group a") != NULL);
}

/* The order the matcher takes the keys in: group names by strcmp (bytes
 * as unsigned char, a prefix before its extensions), not by length or by
 * signed char; then the position; then the GPU. The names below are
 * listed in that order, worked out by hand: "" (the world) first; 'A'
 * (0x41) before 'a' (0x61); "a" before "a-b" (its prefix); two names
 * sharing a 44-byte prefix, "...ab" before "...b"; "p2p:10->2" before
 * "p2p:1<->3" ('0' 0x30 before '<' 0x3c) before "p2p:2->10"; "tp-10"
 * before "tp-9" (by length it would be after); "z" (0x7a) before "\xc3\xa9"
 * (UTF-8 e-acute, 0xc3: negative as a signed char, so a signed compare
 * would put it first of the named ones). The entries are given scrambled
 * (names in another order, position 1 before 0, GPUs descending); the
 * instances must come out as the list, each name's position 0 then 1,
 * with their participants by GPU. */
static void key_order(void)
{
    static const char *const want[] = {
        "", "A", "a", "a-b",
        "grp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "grp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
        "p2p:10->2", "p2p:1<->3", "p2p:2->10", "tp-10", "tp-9", "z", "\xc3\xa9",
    };
    enum { NG = sizeof want / sizeof want[0], NGPU = 12, MAXE = 2 * (NGPU + 2 * (NG - 1)) };
    lsim_job_entry e[MAXE];
    size_t ne = 0;
    uint32_t node = 0;
    for (size_t k = 0; k < NG; k++) {
        size_t i = (k * 5 + 3) % NG; /* a scrambled order of the names */
        const char *g = want[i];
        for (int64_t seq = 1; seq >= 0; seq--) {
            uint32_t gpus[NGPU];
            uint8_t kinds[2] = {LSIM_COLL_ALLREDUCE, LSIM_COLL_ALLREDUCE};
            size_t np = 2;
            if (!*g) {
                np = NGPU;
                for (uint32_t q = 0; q < NGPU; q++) gpus[q] = NGPU - 1 - q;
            } else if (!strcmp(g, "p2p:10->2")) {
                gpus[0] = 10, gpus[1] = 2, kinds[0] = LSIM_COLL_SEND, kinds[1] = LSIM_COLL_RECV;
            } else if (!strcmp(g, "p2p:2->10")) {
                gpus[0] = 10, gpus[1] = 2, kinds[0] = LSIM_COLL_RECV, kinds[1] = LSIM_COLL_SEND;
            } else if (!strcmp(g, "p2p:1<->3")) {
                gpus[0] = 3, gpus[1] = 1, kinds[0] = kinds[1] = LSIM_COLL_SENDRECV;
            } else {
                gpus[0] = 7, gpus[1] = 4;
            }
            for (size_t q = 0; q < np && ne < MAXE; q++) {
                e[ne] = ent(g, seq, gpus[q], node++, 1000, (int32_t)np);
                if (np == 2) e[ne].kind = kinds[q];
                ne++;
            }
        }
    }
    CHECK_I64(ne, MAXE);
    lsim_err err;
    lsim_job *whole = NULL, *own = NULL;
    size_t order[MAXE], fail = 0;
    lsim_ns d[MAXE];
    CHECK_I64(lsim_job_from_entries(e, ne, NGPU, NULL, NULL, NULL, NULL, &whole, &err), 0);
    CHECK_I64(lsim_job_match_owned(e, ne, NGPU, NULL, NULL, order, d, &fail, &own, &err), 0);
    if (!whole || !own) goto done;
    CHECK_I64(whole->ninst, 2 * NG);
    CHECK_I64(whole->ngroups, NG);
    CHECK_I64(own->ninst, 2 * NG);
    for (size_t k = 0; k < own->ninst && k < 2 * NG; k++) {
        uint64_t p0 = own->part_off[k], p1 = own->part_off[k + 1];
        CHECK_I64(p1 - p0, *want[k / 2] ? 2 : NGPU);
        CHECK_I64(whole->part_off[k], p0);
        for (uint64_t p = p0; p < p1; p++) {
            const lsim_job_entry *x = &e[order[p]];
            CHECK_MSG(!strcmp(x->group, want[k / 2]), "instance %zu: group \"%s\", expected \"%s\"", k, x->group,
                      want[k / 2]);
            CHECK_I64(x->seq, (int64_t)(k % 2));
            if (p > p0) CHECK(x->gpu > e[order[p - 1]].gpu);
            /* the serial match: the same participants in the same order */
            CHECK_I64(whole->part_gpu[p], x->gpu);
            CHECK_I64(whole->part_node[p], x->node);
            CHECK_I64(own->part_gpu[p], x->gpu);
        }
    }
done:
    lsim_job_free(whole);
    lsim_job_free(own);
}

/* A group too scattered to merge (more than 256 ascending runs: 300 GPUs,
 * each key given in descending order) goes through the quicksort: the
 * world group's three positions, given as 2, 0, 1, come out as three
 * instances of all 300 GPUs in order, node = 1000 x position + GPU. */
static void scattered_group(void)
{
    enum { NGPU = 300, NE = 3 * NGPU };
    lsim_job_entry *e = malloc(NE * sizeof *e);
    size_t *order = malloc(NE * sizeof *order);
    lsim_ns *d = malloc(NE * sizeof *d);
    lsim_job *j = NULL;
    lsim_err err;
    size_t ne = 0, fail = 0;
    const int64_t seqs[3] = {2, 0, 1};
    if (!e || !order || !d) goto done;
    for (int s = 0; s < 3; s++)
        for (uint32_t g = NGPU; g-- > 0;) e[ne++] = ent("", seqs[s], g, (uint32_t)(1000 * seqs[s]) + g, 1000, 0);
    CHECK_I64(lsim_job_match_owned(e, ne, NGPU, NULL, NULL, order, d, &fail, &j, &err), 0);
    if (!j) goto done;
    CHECK_I64(j->ninst, 3);
    for (size_t k = 0; k < j->ninst && k < 3; k++) {
        CHECK_I64(j->part_off[k], k * NGPU);
        for (uint32_t g = 0; g < NGPU; g++) {
            size_t p = k * NGPU + g;
            CHECK_I64(e[order[p]].seq, (int64_t)k);
            CHECK_I64(j->part_gpu[p], g);
            CHECK_I64(j->part_node[p], 1000 * k + g);
        }
    }
done:
    lsim_job_free(j);
    free(e);
    free(order);
    free(d);
}

/* Membership (job.c check_members), one line naming the ranks: a GPU
 * twice in one instance; a world-group collective missing on a rank (the
 * first such rank named, with one that has it); a named group with fewer
 * participants than its size. Sources "s0".."s2" name the files. */
static void membership(void)
{
    const char *src[] = {"s0", "s1", "s2"};
    int32_t ranks[] = {0, 1, 2};
    size_t nodes[] = {4, 4, 4};
    lsim_job *j = NULL;
    lsim_err err = {0};
    lsim_job_entry twice[] = {ent("g", 0, 0, 0, 1000, 2), ent("g", 0, 0, 1, 1000, 2)};
    CHECK(lsim_job_from_entries(twice, 2, 3, ranks, src, nodes, nodes, &j, &err) == LSIM_ETRACE && !j);
    CHECK_MSG(strstr(err.msg, "s0: collective #0 on group g appears twice on rank 0"), "%s", err.msg);
    lsim_job_entry world[] = {ent("", 5, 0, 0, 1000, 0), ent("", 5, 2, 0, 1000, 0)};
    CHECK(lsim_job_from_entries(world, 2, 3, ranks, src, nodes, nodes, &j, &err) == LSIM_ETRACE && !j);
    CHECK_MSG(strstr(err.msg, "s1: collective #5 (allreduce) on the world group is on rank 0 (s0) but missing on rank 1"),
              "%s", err.msg);
    lsim_job_entry few[] = {ent("g", 2, 1, 0, 1000, 3), ent("g", 2, 2, 0, 1000, 3)};
    CHECK(lsim_job_from_entries(few, 2, 3, ranks, src, nodes, nodes, &j, &err) == LSIM_ETRACE && !j);
    CHECK_MSG(strstr(err.msg, "s1: collective #2 on group g has 2 participants, the group has 3"), "%s", err.msg);
}

int main(void)
{
    membership();
    split_match();
    first_error();
    key_order();
    scattered_group();
    return check_result("test_job_owned");
}
