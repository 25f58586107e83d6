/* Collectives matched across the GPUs of a job, clock offsets (job.h).
 * The coupled run itself is lsim_job_run in src/engine.c (it drives the
 * engines' internals). */
#include "lumosim/job.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    const char *group; /* "" = world */
    int64_t seq;
    uint32_t gpu, node;
} entry;

static int cmp_entry(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    int c = strcmp(a->group, b->group);
    if (c) return c;
    if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
    if (a->gpu != b->gpu) return a->gpu < b->gpu ? -1 : 1;
    return a->node < b->node ? -1 : (a->node > b->node);
}

static int cmp_ns(const void *x, const void *y)
{
    lsim_ns a = *(const lsim_ns *)x, b = *(const lsim_ns *)y;
    return (a > b) - (a < b);
}

static int is_p2p(uint8_t k) { return k == LSIM_COLL_SENDRECV || k == LSIM_COLL_SEND || k == LSIM_COLL_RECV; }

static int rank_of(lsim_graph *const *g, uint32_t i) { return g[i]->rank >= 0 ? g[i]->rank : (int)i; }

void lsim_job_free(lsim_job *j)
{
    if (!j) return;
    for (size_t i = 0; i < j->ngpus; i++) {
        if (j->inst_of) free(j->inst_of[i]);
        if (j->obs_wait) free(j->obs_wait[i]);
    }
    free(j->inst_of);
    free(j->obs_wait);
    free(j->part_off);
    free(j->part_gpu);
    free(j->part_node);
    free(j->transfer);
    free(j->clock_offset);
    free(j);
}

int lsim_job_match(lsim_graph *const *g, size_t n, lsim_job **out, lsim_err *err)
{
    int rc = 0;
    entry *ents = NULL;
    lsim_ns *tmp = NULL, **diffs = NULL;
    size_t *ndiff = NULL;
    lsim_job *j = calloc(1, sizeof *j);
    *out = NULL;
    if (!j) return lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
    j->ngpus = n;
    j->graphs = g;
    size_t ne = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t v = 0; v < g[i]->n; v++)
            if ((g[i]->flags[v] & LSIM_NF_COLL) && g[i]->coll[v] >= 0) ne++;
    ents = malloc((ne ? ne : 1) * sizeof *ents);
    j->inst_of = calloc(n, sizeof *j->inst_of);
    j->obs_wait = calloc(n, sizeof *j->obs_wait);
    j->clock_offset = calloc(n ? n : 1, sizeof *j->clock_offset);
    diffs = calloc(n ? n : 1, sizeof *diffs);
    ndiff = calloc(n ? n : 1, sizeof *ndiff);
    if (!ents || !j->inst_of || !j->obs_wait || !j->clock_offset || !diffs || !ndiff) goto nomem;
    ne = 0;
    for (uint32_t i = 0; i < n; i++) {
        j->inst_of[i] = malloc((g[i]->n ? g[i]->n : 1) * sizeof **j->inst_of);
        j->obs_wait[i] = calloc(g[i]->n ? g[i]->n : 1, sizeof **j->obs_wait);
        diffs[i] = malloc((g[i]->n ? g[i]->n : 1) * sizeof **diffs);
        if (!j->inst_of[i] || !j->obs_wait[i] || !diffs[i]) goto nomem;
        for (size_t v = 0; v < g[i]->n; v++) j->inst_of[i][v] = -1;
        for (uint32_t v = 0; v < g[i]->n; v++) {
            if (!(g[i]->flags[v] & LSIM_NF_COLL) || g[i]->coll[v] < 0) continue;
            const lsim_coll_info *c = &g[i]->colls[g[i]->coll[v]];
            if (is_p2p(c->kind)) {
                j->uncoupled_p2p++;
                continue;
            }
            const char *grp = c->pg_name != UINT32_MAX ? lsim_strtab_get(g[i]->strings, c->pg_name) : "";
            ents[ne++] = (entry){grp ? grp : "", c->seq, i, v};
        }
    }
    qsort(ents, ne, sizeof *ents, cmp_entry);
    /* instances */
    size_t ninst = 0;
    for (size_t k = 0; k < ne; k++)
        if (k == 0 || strcmp(ents[k].group, ents[k - 1].group) || ents[k].seq != ents[k - 1].seq) ninst++;
    j->part_off = malloc((ninst + 1) * sizeof *j->part_off);
    j->part_gpu = malloc((ne ? ne : 1) * sizeof *j->part_gpu);
    j->part_node = malloc((ne ? ne : 1) * sizeof *j->part_node);
    j->transfer = malloc((ninst ? ninst : 1) * sizeof *j->transfer);
    tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!j->part_off || !j->part_gpu || !j->part_node || !j->transfer || !tmp) goto nomem;
    size_t k = 0, inst = 0;
    const char *last_group = NULL;
    while (k < ne) {
        size_t e = k;
        while (e < ne && !strcmp(ents[e].group, ents[k].group) && ents[e].seq == ents[k].seq) e++;
        if (!last_group || strcmp(last_group, ents[k].group)) {
            j->ngroups++;
            last_group = ents[k].group;
        }
        const entry *x = &ents[k];
        const lsim_graph *g0 = g[x->gpu];
        const lsim_coll_info *c0 = &g0->colls[g0->coll[x->node]];
        const char *gname = *x->group ? x->group : "world";
        /* membership: the world group is every GPU; a named group its size */
        size_t want = *x->group ? (c0->group_size > 0 ? (size_t)c0->group_size : e - k) : n;
        for (size_t a = k + 1; a < e; a++)
            if (ents[a].gpu == ents[a - 1].gpu) {
                rc = lsim_err_set(err, LSIM_ETRACE, "%s and %s: collective #%lld on group %s appears twice on rank %d",
                                  g[ents[a].gpu]->source, g[ents[a].gpu]->source, (long long)x->seq, gname,
                                  rank_of(g, ents[a].gpu));
                goto cleanup;
            }
        if (e - k != want) {
            /* name a rank that has it and one that does not */
            uint32_t missing = UINT32_MAX;
            for (uint32_t i = 0, a = (uint32_t)k; i < n && missing == UINT32_MAX; i++) {
                if (a < e && ents[a].gpu == i) a++;
                else if (!*x->group) missing = i;
            }
            if (missing != UINT32_MAX)
                rc = lsim_err_set(err, LSIM_ETRACE,
                                  "%s: collective #%lld (%s) on the world group is on rank %d (%s) but missing on rank %d",
                                  g[missing]->source, (long long)x->seq, lsim_coll_kind_name((lsim_coll_kind)c0->kind),
                                  rank_of(g, x->gpu), g0->source, rank_of(g, missing));
            else
                rc = lsim_err_set(err, LSIM_ETRACE, "%s: collective #%lld on group %s has %zu participants, the group has %zu",
                                  g0->source, (long long)x->seq, gname, e - k, want);
            goto cleanup;
        }
        /* agreement on kind and size */
        lsim_ns last_start = INT64_MIN;
        lsim_ns transfer = 0;
        for (size_t a = k; a < e; a++) {
            const lsim_graph *ga = g[ents[a].gpu];
            uint32_t v = ents[a].node;
            const lsim_coll_info *ca = &ga->colls[ga->coll[v]];
            int generic = ca->kind == LSIM_COLL_GENERIC || ca->kind == LSIM_COLL_OTHER || c0->kind == LSIM_COLL_GENERIC ||
                          c0->kind == LSIM_COLL_OTHER;
            if (ca->kind != c0->kind && !generic) {
                rc = lsim_err_set(err, LSIM_ETRACE, "%s: collective #%lld on group %s is %s on rank %d but %s on rank %d (%s)",
                                  ga->source, (long long)x->seq, gname, lsim_coll_kind_name((lsim_coll_kind)ca->kind),
                                  rank_of(g, ents[a].gpu), lsim_coll_kind_name((lsim_coll_kind)c0->kind),
                                  rank_of(g, x->gpu), g0->source);
                goto cleanup;
            }
            if (ca->bytes >= 0 && c0->bytes >= 0 && ca->bytes != c0->bytes) {
                rc = lsim_err_set(err, LSIM_ETRACE,
                                  "%s: collective #%lld on group %s moves %lld bytes on rank %d but %lld on rank %d (%s)",
                                  ga->source, (long long)x->seq, gname, (long long)ca->bytes, rank_of(g, ents[a].gpu),
                                  (long long)c0->bytes, rank_of(g, x->gpu), g0->source);
                goto cleanup;
            }
            /* the participant that arrived last waited least: its duration
             * is the transfer (ties: the shorter) */
            if (ga->obs_start[v] > last_start ||
                (ga->obs_start[v] == last_start && ga->obs_end[v] - ga->obs_start[v] < transfer)) {
                last_start = ga->obs_start[v];
                transfer = ga->obs_end[v] - ga->obs_start[v];
            }
            j->part_gpu[a] = ents[a].gpu;
            j->part_node[a] = v;
            j->inst_of[ents[a].gpu][v] = (int32_t)inst;
            tmp[a - k] = ga->obs_end[v];
        }
        j->part_off[inst] = k;
        j->transfer[inst] = transfer;
        /* clock: each participant's end against the median end */
        qsort(tmp, e - k, sizeof *tmp, cmp_ns);
        lsim_ns med = tmp[(e - k) / 2];
        for (size_t a = k; a < e; a++) {
            uint32_t i = ents[a].gpu;
            diffs[i][ndiff[i]++] = g[i]->obs_end[ents[a].node] - med;
        }
        inst++;
        k = e;
    }
    j->part_off[inst] = k;
    j->ninst = inst;
    for (size_t i = 0; i < n; i++) {
        if (!ndiff[i]) continue;
        qsort(diffs[i], ndiff[i], sizeof **diffs, cmp_ns);
        j->clock_offset[i] = diffs[i][ndiff[i] / 2];
    }
    /* observed waiting, on the aligned clocks */
    for (size_t q = 0; q < j->ninst; q++) {
        lsim_ns last = INT64_MIN;
        for (uint64_t a = j->part_off[q]; a < j->part_off[q + 1]; a++) {
            lsim_ns s = g[j->part_gpu[a]]->obs_start[j->part_node[a]] - j->clock_offset[j->part_gpu[a]];
            if (s > last) last = s;
        }
        for (uint64_t a = j->part_off[q]; a < j->part_off[q + 1]; a++) {
            uint32_t i = j->part_gpu[a], v = j->part_node[a];
            lsim_ns w = last - (g[i]->obs_start[v] - j->clock_offset[i]);
            lsim_ns d = g[i]->obs_end[v] - g[i]->obs_start[v];
            j->obs_wait[i][v] = w < 0 ? 0 : w > d ? d : w;
        }
    }
    *out = j;
    j = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
cleanup:
    if (diffs)
        for (size_t i = 0; i < n; i++) free(diffs[i]);
    free(diffs);
    free(ndiff);
    free(tmp);
    free(ents);
    lsim_job_free(j);
    return rc;
}

void lsim_job_align_clocks(lsim_job *j)
{
    for (size_t i = 0; i < j->ngpus; i++) {
        lsim_graph *g = j->graphs[i];
        lsim_ns off = j->clock_offset[i];
        if (!off) continue;
        for (size_t v = 0; v < g->n; v++)
            if (g->release[v] != INT64_MIN) g->release[v] -= off;
        g->t0 -= off;
        j->clock_offset[i] = off; /* kept for reporting */
    }
}
