/* Collectives matched across the GPUs of a job, clock offsets, and the
 * coupled run (job.h). The run drives the engines' internals through the
 * node model shared with the serial and parallel engines (sched_inline.h). */
#include "lumosim/job.h"
#include "lumosim/metrics.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/alloc.h"
#include "internal/sched_inline.h"

/* ------------------------------------------------- the entries' order
 *
 * The matcher takes the entries in (group name by strcmp, seq, GPU, node)
 * order; equal keys keep their order (a stable sort, as glibc's qsort of
 * the entries was). Sorting the 136-byte entries themselves with strcmp
 * was most of the match (a 4,096-GPU job: 5.1 M entries, a string compare
 * and a pointer chase per comparison), so the order is found on a compact
 * key per entry instead: each distinct group name gets an id, the ids
 * given in strcmp order of the names (so comparing ids is comparing the
 * names); a counting pass by id puts each group's keys together, in entry
 * order, and each group's keys are sorted on (seq, GPU, node, entry
 * index) -- the index last makes every key distinct, so any correct sort
 * gives the stable order. */

typedef struct ekey {
    int64_t seq;
    uint32_t gpu, node;
    size_t idx; /* the entry's index before sorting */
} ekey;

static inline int key_lt(const ekey *a, const ekey *b)
{
    if (a->seq != b->seq) return a->seq < b->seq;
    if (a->gpu != b->gpu) return a->gpu < b->gpu;
    if (a->node != b->node) return a->node < b->node;
    return a->idx < b->idx;
}

static int cmp_key(const void *x, const void *y)
{
    const ekey *a = x, *b = y;
    return key_lt(a, b) ? -1 : key_lt(b, a);
}

/* A quicksort with the comparison inlined (qsort's call per comparison was
 * the cost); past its depth limit, qsort finishes the range, so a bad
 * pivot sequence costs no more than qsort would. */
static void sort_keys(ekey *a, size_t n, int depth)
{
    while (n > 16) {
        if (depth-- <= 0) {
            qsort(a, n, sizeof *a, cmp_key);
            return;
        }
        /* the median of the first, middle and last keys: the keys are
         * distinct, so it is not the range's largest and Hoare's partition
         * below leaves both sides non-empty */
        const ekey *x = &a[0], *y = &a[n / 2], *z = &a[n - 1];
        const ekey *m = key_lt(x, y) ? (key_lt(y, z) ? y : key_lt(x, z) ? z : x)
                                     : (key_lt(x, z) ? x : key_lt(y, z) ? z : y);
        ekey p = *m, t;
        size_t i = 0, j = n - 1;
        for (;;) {
            while (key_lt(&a[i], &p)) i++;
            while (key_lt(&p, &a[j])) j--;
            if (i >= j) break;
            t = a[i], a[i] = a[j], a[j] = t;
            i++, j--;
        }
        size_t left = j + 1; /* [0, j] and [j + 1, n) */
        if (left < n - left) {
            sort_keys(a, left, depth);
            a += left, n -= left;
        } else {
            sort_keys(a + left, n - left, depth);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++) {
        ekey t = a[i];
        size_t k = i;
        for (; k > 0 && key_lt(&t, &a[k - 1]); k--) a[k] = a[k - 1];
        a[k] = t;
    }
}

/* A group's keys mostly arrive as a few ascending runs, one per GPU (a
 * GPU's entries in launch order, its positions rising): merged pairwise
 * they are sorted in log2(runs) linear passes whose branches mostly go
 * the same way, where the quicksort mispredicted about half its
 * comparisons. 0 (nothing done) past MERGE_RUNS runs: then the quicksort.
 * tmp: room for n keys. */
#define MERGE_RUNS 256
static int merge_runs(ekey *a, size_t n, ekey *tmp)
{
    size_t b[MERGE_RUNS + 1], nr = 1;
    b[0] = 0;
    for (size_t i = 1; i < n; i++)
        if (key_lt(&a[i], &a[i - 1])) {
            if (nr == MERGE_RUNS) return 0;
            b[nr++] = i;
        }
    b[nr] = n;
    ekey *src = a, *dst = tmp;
    while (nr > 1) {
        size_t w = 0;
        for (size_t r = 0; r < nr; r += 2) {
            size_t lo = b[r], mid = b[r + 1], hi = r + 1 < nr ? b[r + 2] : mid;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) dst[k++] = key_lt(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
            b[w++] = lo; /* w <= r: no bound still to be read is overwritten */
        }
        b[w] = n;
        nr = w;
        ekey *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, n * sizeof *a);
    return 1;
}

/* Group names in strcmp's order; the same text is often the same
 * interned pointer. */
static int group_cmp(const char *a, const char *b) { return a == b ? 0 : strcmp(a, b); }

static uint64_t group_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t c = 0; s[c]; c++) h = (h ^ (unsigned char)s[c]) * 1099511628211ull;
    return h;
}

typedef struct distinct_name {
    const char *name; /* a distinct group name (in its first entry) */
    uint32_t d;       /* its index among the distinct names, in entry order */
} distinct_name;

static int cmp_distinct(const void *x, const void *y)
{
    return group_cmp(((const distinct_name *)x)->name, ((const distinct_name *)y)->name);
}

/* Each entry's group id (gid[q]) and the number of distinct groups: the
 * distinct names through a hash table (slot: distinct index + 1), then
 * numbered in strcmp order. */
static int group_ids(const lsim_job_entry *ents, size_t ne, uint32_t *gid, size_t *ngroups, lsim_err *err)
{
    int rc = 0;
    size_t cap = 1024, nd = 0, dcap = 256;
    uint32_t *slot = lsim_calloc(cap, sizeof *slot);
    size_t *rep = lsim_malloc(dcap * sizeof *rep); /* first entry of each distinct name */
    uint32_t *rank = NULL;
    if (!slot || !rep) goto nomem;
    for (size_t q = 0; q < ne; q++) {
        if (q && !group_cmp(ents[q].group, ents[q - 1].group)) { /* runs of one group are common */
            gid[q] = gid[q - 1];
            continue;
        }
        size_t s = (size_t)group_hash(ents[q].group) & (cap - 1);
        while (slot[s] && group_cmp(ents[rep[slot[s] - 1]].group, ents[q].group)) s = (s + 1) & (cap - 1);
        if (slot[s]) {
            gid[q] = slot[s] - 1;
            continue;
        }
        if (nd == UINT32_MAX - 1) {
            rc = lsim_err_set(err, LSIM_EARG, "more than %u process groups in one job", (unsigned)(UINT32_MAX - 1));
            goto cleanup;
        }
        if (nd == dcap) {
            size_t *r2 = lsim_realloc(rep, 2 * dcap * sizeof *rep);
            if (!r2) goto nomem;
            rep = r2;
            dcap *= 2;
        }
        rep[nd] = q;
        gid[q] = (uint32_t)nd;
        slot[s] = (uint32_t)++nd;
        if (2 * nd > cap) { /* grow: rehash the distinct names */
            uint32_t *s2 = lsim_calloc(2 * cap, sizeof *s2);
            if (!s2) goto nomem;
            cap *= 2;
            for (size_t d = 0; d < nd; d++) {
                size_t t = (size_t)group_hash(ents[rep[d]].group) & (cap - 1);
                while (s2[t]) t = (t + 1) & (cap - 1);
                s2[t] = (uint32_t)(d + 1);
            }
            lsim_free(slot);
            slot = s2;
        }
    }
    /* the ids in strcmp order of the names: sort the distinct names' first
     * entries, then renumber */
    distinct_name *byname = lsim_malloc((nd ? nd : 1) * sizeof *byname);
    rank = lsim_malloc((nd ? nd : 1) * sizeof *rank);
    if (!byname || !rank) {
        lsim_free(byname);
        goto nomem;
    }
    for (size_t d = 0; d < nd; d++) byname[d] = (distinct_name){ents[rep[d]].group, (uint32_t)d};
    if (nd) qsort(byname, nd, sizeof *byname, cmp_distinct); /* distinct names: no ties */
    for (size_t d = 0; d < nd; d++) rank[byname[d].d] = (uint32_t)d;
    lsim_free(byname);
    for (size_t q = 0; q < ne; q++) gid[q] = rank[gid[q]];
    *ngroups = nd;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
cleanup:
    lsim_free(slot);
    lsim_free(rep);
    lsim_free(rank);
    return rc;
}

/* The order above of ents[0..ne), which are left where they are: ord[p]
 * (caller-allocated, ne) gets the index of the p-th entry in that order,
 * *goff (allocated here, *ngroups + 1 entries) the bounds of each group's
 * run of positions, *ninstances the number of (group, position) keys.
 * Why not the entries sorted in place: moving them was a
 * chain of dependent cache misses (each cycle of the permutation read the
 * next source from the entry just moved), half of the match once the keys
 * were sorted; the matcher reads them through ord instead, whose next
 * indices are known ahead. Costs 28 bytes per entry while it runs (a key
 * and a group id) and room to merge the largest group (24 bytes per key,
 * at most MERGE_MAX keys: 24 MiB), freed before it returns. */
#define MERGE_MAX ((size_t)1 << 20)
static int sort_entries(const lsim_job_entry *ents, size_t ne, size_t *ord, size_t **goff, size_t *ngroups,
                        size_t *ninstances, lsim_err *err)
{
    int rc = 0;
    size_t ng = 0;
    uint32_t *gid = lsim_malloc((ne ? ne : 1) * sizeof *gid);
    ekey *key = NULL, *tmp = NULL;
    size_t *off = NULL;
    *goff = NULL;
    *ngroups = 0;
    if (!gid) goto nomem;
    if ((rc = group_ids(ents, ne, gid, &ng, err))) goto cleanup;
    off = lsim_calloc(ng + 1, sizeof *off);
    key = lsim_malloc((ne ? ne : 1) * sizeof *key);
    if (!off || !key) goto nomem;
    for (size_t q = 0; q < ne; q++) off[gid[q] + 1]++;
    for (size_t g = 0; g < ng; g++) off[g + 1] += off[g];
    for (size_t q = 0; q < ne; q++) /* off[g] runs ahead as group g fills */
        key[off[gid[q]]++] = (ekey){ents[q].seq, ents[q].gpu, ents[q].node, q};
    for (size_t g = ng; g > 0; g--) off[g] = off[g - 1];
    off[0] = 0;
    lsim_free(gid);
    gid = NULL;
    /* room to merge the largest group of at most MERGE_MAX keys (a bigger
     * one is quicksorted: the room stays under 24 MiB) */
    size_t most = 0;
    for (size_t g = 0; g < ng; g++)
        if (off[g + 1] - off[g] > most && off[g + 1] - off[g] <= MERGE_MAX) most = off[g + 1] - off[g];
    if (most && !(tmp = lsim_malloc(most * sizeof *tmp))) goto nomem;
    size_t ninst = 0;
    for (size_t g = 0; g < ng; g++) {
        size_t n = off[g + 1] - off[g];
        int depth = 0;
        for (size_t m = n; m; m >>= 1) depth += 2;
        if (n > MERGE_MAX || !merge_runs(key + off[g], n, tmp)) sort_keys(key + off[g], n, depth);
        for (size_t p = off[g]; p < off[g + 1]; p++) ninst += p == off[g] || key[p].seq != key[p - 1].seq;
    }
    for (size_t p = 0; p < ne; p++) ord[p] = key[p].idx;
    *goff = off;
    *ngroups = ng;
    *ninstances = ninst;
    off = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
cleanup:
    lsim_free(gid);
    lsim_free(key);
    lsim_free(tmp);
    lsim_free(off);
    return rc;
}

static int cmp_ns(const void *x, const void *y)
{
    lsim_ns a = *(const lsim_ns *)x, b = *(const lsim_ns *)y;
    return (a > b) - (a < b);
}

/* Each GPU's clock offset (job.h): the median of its ndiff[i] terms
 * diffs[i] (sorted here), left as it is for a GPU without any. */
static void clock_medians(lsim_ns **diffs, const size_t *ndiff, size_t n, lsim_ns *clock_offset)
{
    for (size_t i = 0; i < n; i++) {
        if (!ndiff[i]) continue;
        qsort(diffs[i], ndiff[i], sizeof **diffs, cmp_ns);
        clock_offset[i] = diffs[i][ndiff[i] / 2];
    }
}

static int is_p2p(uint8_t k) { return k == LSIM_COLL_SENDRECV || k == LSIM_COLL_SEND || k == LSIM_COLL_RECV; }

static int rank_of(const int32_t *ranks, uint32_t i) { return ranks && ranks[i] >= 0 ? ranks[i] : (int)i; }

static const char *src_of(const char *const *sources, uint32_t i) { return sources && sources[i] ? sources[i] : "job"; }

void lsim_job_free(lsim_job *j)
{
    if (!j) return;
    for (size_t i = 0; i < j->ngpus; i++) {
        if (j->inst_of) lsim_free(j->inst_of[i]);
        if (j->obs_wait) lsim_free(j->obs_wait[i]);
    }
    lsim_free(j->inst_of);
    lsim_free(j->obs_wait);
    lsim_free(j->part_off);
    lsim_free(j->part_gpu);
    lsim_free(j->part_node);
    lsim_free(j->part_coll);
    lsim_free(j->transfer);
    lsim_free(j->rule);
    lsim_free(j->root);
    lsim_free(j->clock_offset);
    lsim_free(j->inst_id);
    lsim_free(j);
}

/* ------------------------------------------------------ point to point */

static int32_t gpu_rank(const lsim_graph *g, uint32_t gid) { return g->rank >= 0 ? g->rank : (int32_t)gid; }

/* "p2p:A->B" or "p2p:A->B#CHANNEL" -> A, B and the channel ("" if none). */
static int parse_pair(const char *s, int32_t *a, int32_t *b, const char **chan)
{
    if (!s || strncmp(s, "p2p:", 4)) return 0;
    char *e;
    if (!isdigit((unsigned char)s[4])) return 0;
    long x = strtol(s + 4, &e, 10);
    if (strncmp(e, "->", 2) || !isdigit((unsigned char)e[2])) return 0;
    const char *q = e + 2;
    long y = strtol(q, &e, 10);
    if ((*e && *e != '#') || x > INT32_MAX || y > INT32_MAX) return 0;
    *a = (int32_t)x;
    *b = (int32_t)y;
    if (chan) *chan = e;
    return 1;
}

/* A ranks list text ("[3, 4]", "3,4") of exactly two ranks. */
static int parse_two_ranks(const char *s, int32_t *a, int32_t *b)
{
    long v[3];
    int n = 0;
    if (!s) return 0;
    while (*s) {
        if (isdigit((unsigned char)*s)) {
            char *e;
            long x = strtol(s, &e, 10);
            if (n == 3 || x > INT32_MAX) return 0;
            v[n++] = x;
            s = e;
        } else if (*s == '-') {
            return 0;
        } else {
            s++;
        }
    }
    if (n != 2 || v[0] == v[1]) return 0;
    *a = (int32_t)v[0];
    *b = (int32_t)v[1];
    return 1;
}

/* The n-th rank of a ranks list text ("[0, 1, 2, 3]"), -1 if it has no
 * n-th. */
static int32_t nth_rank(const char *s, int32_t n)
{
    int32_t i = 0;
    while (s && *s) {
        if (isdigit((unsigned char)*s)) {
            char *e;
            long x = strtol(s, &e, 10);
            if (x > INT32_MAX) return -1;
            if (i++ == n) return (int32_t)x;
            s = e;
        } else {
            s++;
        }
    }
    return -1;
}

/* The rank of a broadcast's or reduce's root, numbered like the GPUs'
 * ranks: c10d names it within its process group, so through the group's
 * ranks list; without that list only a root in the world group, whose
 * ranks are the GPUs', is known. -1 unknown (the instance then keeps the
 * all-wait rule and is counted, job.h). */
static int32_t root_rank(const lsim_graph *g, const lsim_coll_info *c)
{
    if ((c->kind != LSIM_COLL_BROADCAST && c->kind != LSIM_COLL_REDUCE) || c->root < 0) return -1;
    if (c->pg_ranks != UINT32_MAX) return nth_rank(lsim_strtab_get(g->strings, c->pg_ranks), c->root);
    return c->pg_name == UINT32_MAX ? c->root : -1;
}

/* The pair of a point-to-point kernel: 1 with the group key written,
 * 0 when the peer is unknown, negative on a contradiction. */
static int p2p_pair(const lsim_graph *g, uint32_t gid, const lsim_coll_info *c, char *key, size_t keylen, lsim_err *err)
{
    int32_t me = gpu_rank(g, gid), a, b;
    const char *chan = "";
    const char *pg = c->pg_name != UINT32_MAX ? lsim_strtab_get(g->strings, c->pg_name) : NULL;
    const char *pr = c->pg_ranks != UINT32_MAX ? lsim_strtab_get(g->strings, c->pg_ranks) : NULL;
    if (parse_pair(pg, &a, &b, &chan)) {
        if ((c->kind == LSIM_COLL_SEND && a != me) || (c->kind == LSIM_COLL_RECV && b != me) ||
            (c->kind == LSIM_COLL_SENDRECV && a != me && b != me) || a == b)
            return lsim_err_set(err, LSIM_ETRACE, "%s: %s kernel on rank %d names the pair %s, which rank %d is not the %s of",
                                lsim_graph_name(g), lsim_coll_kind_name((lsim_coll_kind)c->kind), me, pg, me,
                                c->kind == LSIM_COLL_SEND ? "sender" : c->kind == LSIM_COLL_RECV ? "receiver" : "side");
    } else if (parse_two_ranks(pr, &a, &b) && (a == me || b == me)) {
        int32_t peer = a == me ? b : a;
        if (c->kind == LSIM_COLL_SEND) a = me, b = peer;
        else if (c->kind == LSIM_COLL_RECV) a = peer, b = me;
        else a = me, b = peer;
    } else {
        return 0;
    }
    if (c->kind == LSIM_COLL_SENDRECV)
        snprintf(key, keylen, "p2p:%d<->%d%.24s", a < b ? a : b, a < b ? b : a, chan);
    else
        snprintf(key, keylen, "p2p:%d->%d%.24s", a, b, chan);
    return 1;
}

typedef struct p2p_ent {
    int64_t seq;
    uint32_t node;
    size_t idx; /* entry index */
} p2p_ent;

static int cmp_p2p(const void *x, const void *y)
{
    const p2p_ent *a = x, *b = y;
    if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
    return a->node < b->node ? -1 : (a->node > b->node);
}

/* Number each GPU's p2p entries [first, last) on their pair, in launch
 * order. */
static int number_p2p(lsim_job_entry *e, size_t first, size_t last, lsim_err *err)
{
    size_t n = last - first;
    if (n == 0) return 0;
    p2p_ent *t = lsim_malloc(n * sizeof *t);
    if (!t) return lsim_err_set(err, LSIM_ENOMEM, "out of memory matching point-to-point kernels");
    for (size_t q = 0; q < n; q++) t[q] = (p2p_ent){e[first + q].seq, e[first + q].node, first + q};
    qsort(t, n, sizeof *t, cmp_p2p);
    /* per pair: a counter; pairs of one GPU are few, a linear scan of the
     * distinct keys seen so far is enough */
    size_t *keys = lsim_malloc(n * sizeof *keys);
    int64_t *cnt = lsim_calloc(n, sizeof *cnt);
    size_t nk = 0;
    if (!keys || !cnt) {
        lsim_free(t);
        lsim_free(keys);
        lsim_free(cnt);
        return lsim_err_set(err, LSIM_ENOMEM, "out of memory matching point-to-point kernels");
    }
    for (size_t q = 0; q < n; q++) {
        lsim_job_entry *x = &e[t[q].idx];
        size_t k = 0;
        while (k < nk && group_cmp(e[keys[k]].group, x->group)) k++;
        if (k == nk) keys[nk++] = t[q].idx;
        x->seq = cnt[k]++;
    }
    lsim_free(t);
    lsim_free(keys);
    lsim_free(cnt);
    return 0;
}

/* Progress of a match (lsim_job_match_ex): fn NULL, none. Told when the
 * count goes from `before` past a multiple of 2^shift to `done`, and at
 * the end. */
typedef struct job_progress {
    lsim_job_progress_fn fn;
    void *ctx;
} job_progress;

static void tell(const job_progress *p, const char *what, size_t before, size_t done, size_t total, unsigned shift)
{
    if (p && p->fn && ((before >> shift) != (done >> shift) || done == total)) p->fn(p->ctx, what, done, total);
}

/* The collective nodes of g[0..n) into *ne, each GPU's checked to have a
 * collective record of its own (the job keeps a node's instance at its
 * record, job.h inst_of): a damaged store or Chakra file could give two
 * one record. */
static int count_entries(lsim_graph *const *g, size_t n, size_t *ne, lsim_err *err)
{
    size_t most = 1;
    for (size_t i = 0; i < n; i++)
        if (g[i]->ncoll > most) most = g[i]->ncoll;
    uint32_t *first = lsim_malloc(most * sizeof *first); /* record -> its node + 1 */
    if (!first) return lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
    int rc = 0;
    size_t last = 0; /* the previous GPU's collective nodes */
    *ne = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (i && g[i]->share_refs && g[i]->share_refs == g[i - 1]->share_refs && g[i]->ncoll == g[i - 1]->ncoll) {
            *ne += last; /* the same nodes as the GPU before, checked */
            continue;
        }
        memset(first, 0, g[i]->ncoll * sizeof *first);
        last = 0;
        for (uint32_t v = 0; v < g[i]->n && !rc; v++) {
            int32_t c = g[i]->coll[v];
            if (!(g[i]->flags[v] & LSIM_NF_COLL) || c < 0) continue;
            if ((size_t)c >= g[i]->ncoll)
                rc = lsim_err_set(err, LSIM_ETRACE, "%s: node %u names collective record %d of %zu", lsim_graph_name(g[i]), v, c,
                                  g[i]->ncoll);
            else if (first[c])
                rc = lsim_err_set(err, LSIM_ETRACE, "%s: collective kernels %u and %u share collective record %d",
                                  lsim_graph_name(g[i]), first[c] - 1, v, c);
            else
                first[c] = v + 1;
            last++;
        }
        *ne += last;
    }
    lsim_free(first);
    return rc;
}

/* s[0..len) interned in names: its stable text (*id its id), or NULL (no
 * memory). */
static const char *intern_group(lsim_strtab *names, const char *s, size_t len, uint32_t *id)
{
    return lsim_strtab_intern(names, s, len, id) ? NULL : lsim_strtab_get(names, *id);
}

/* Which entries a listing keeps (lsim_job_match_ex in parts): NULL, all.
 * part_of (by interned group id, nnames of them) names each group's part,
 * and only the groups of part `part` are kept, `want` of them. With census
 * set, nothing is kept: count[id] gets each group's entries (grown here as
 * names are interned, cap of them) and hasobs[gpu] 1 for a GPU with an
 * observed collective. */
typedef struct part_sel {
    const uint32_t *part_of;
    uint32_t part;
    uint64_t *count;
    size_t cap;
    uint8_t *hasobs;
    int census;      /* this listing is the census */
    size_t want;     /* a part's entries (from the census) */
    uint32_t nnames; /* the groups part_of knows */
} part_sel;

/* sel's census counts one entry of group id (0 or LSIM_ENOMEM). */
static int census_add(part_sel *sel, uint32_t id, lsim_err *err)
{
    if (id >= sel->cap) {
        size_t cap = sel->cap ? sel->cap : 1024;
        while (cap <= id) cap *= 2;
        uint64_t *c = lsim_realloc(sel->count, cap * sizeof *c);
        if (!c) return lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
        memset(c + sel->cap, 0, (cap - sel->cap) * sizeof *c);
        sel->count = c;
        sel->cap = cap;
    }
    sel->count[id]++;
    return 0;
}

/* One collective node's entry (its group left to the caller). */
static void fill_entry(lsim_job_entry *x, const lsim_graph *g, uint32_t gid, uint32_t v, const lsim_coll_info *c)
{
    x->seq = c->seq;
    x->gpu = gid;
    x->node = v;
    x->coll = (uint32_t)g->coll[v];
    x->kind = c->kind;
    x->bytes = c->bytes;
    x->obs_start = g->obs_start[v];
    x->obs_end = g->obs_end[v];
    x->observed = g->obs_start[v] != LSIM_OBS_NONE && g->obs_end[v] != LSIM_OBS_NONE;
    x->dur = g->dur[v];
    x->rank = gpu_rank(g, gid);
    x->root = root_rank(g, c);
}

/* p2p entries of a GPU are contiguous in [first, last) once the
 * collectives between them are set aside: moved to the front of the range
 * and numbered on their pairs (the collectives' seq is left as it is). */
static int p2p_range(lsim_job_entry *e, size_t first, size_t last, lsim_err *err)
{
    size_t np = 0;
    for (size_t q = first; q < last; q++)
        if (is_p2p(e[q].kind)) np++;
    lsim_job_entry *tmp = lsim_malloc((last - first) * sizeof *tmp);
    if (!tmp) return lsim_err_set(err, LSIM_ENOMEM, "out of memory matching point-to-point kernels");
    size_t a = 0, b = np;
    for (size_t q = first; q < last; q++) tmp[is_p2p(e[q].kind) ? a++ : b++] = e[q];
    memcpy(&e[first], tmp, (last - first) * sizeof *tmp);
    lsim_free(tmp);
    return number_p2p(e, first, first + np, err);
}

#define GROUP_MEMO 16 /* group names a GPU's listing remembers */
static int list_entries(lsim_graph *const *g, const uint32_t *gpu_ids, size_t n, lsim_strtab *names,
                        const job_progress *prog, part_sel *sel, lsim_job_entry **out, size_t *nout, uint64_t *p2p,
                        lsim_err *err)
{
    size_t ne = 0;
    int rc = 0;
    int census = sel && sel->census;
    if (out) *out = NULL;
    if (nout) *nout = 0;
    /* a part's entries were counted, and the records checked, by the census */
    if (sel && !census) ne = sel->want;
    else if ((rc = count_entries(g, n, &ne, err))) return rc;
    lsim_job_entry *e = census ? NULL : lsim_calloc(ne ? ne : 1, sizeof *e);
    /* the size named: a job too large for one process is one whose
     * collectives are (366.7 M at 98,304 GPUs of a Llama 405B-class job
     * with sequence parallelism and full recomputation: 29 GB of entries) */
    if (!census && !e)
        return lsim_err_set(err, LSIM_ENOMEM,
                            "out of memory matching collectives: %zu collective kernels of %zu GPUs need %.1f GiB for "
                            "their entries alone (%zu B each); under mpirun each rank lists and matches its own GPUs'",
                            ne, n, (double)ne * (double)sizeof *e / (double)(1ULL << 30), sizeof *e);
    size_t room = ne;
    ne = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t gid = gpu_ids ? gpu_ids[i] : (uint32_t)i;
        size_t p2p_first = SIZE_MAX, p2p_last = 0;
        /* The group text of the GPU's collectives by their group name id
         * (a few groups a GPU: TP, DP, PP pairs, EP), and of its last p2p
         * kernel, by what it is made from: formatting and interning the
         * name for each of 5 M entries was a third of a 4,096-GPU job's
         * match; with one name remembered, a GPU whose kernels alternate
         * between groups still interned nearly every entry's. */
        uint32_t c_ids[GROUP_MEMO], c_sid[GROUP_MEMO], c_n = 0, c_next = 0, p_name = 0, p_ranks = 0, p_sid = 0;
        const char *c_texts[GROUP_MEMO];
        uint8_t p_kind = 0;
        int p_have = 0, p_k = 0;
        const char *p_group = NULL;
        for (uint32_t v = 0; v < g[i]->n; v++) {
            if (!(g[i]->flags[v] & LSIM_NF_COLL) || g[i]->coll[v] < 0) continue;
            const lsim_coll_info *c = &g[i]->colls[g[i]->coll[v]];
            const char *group;
            uint32_t sid;
            int32_t gsize;
            if (is_p2p(c->kind)) {
                if (!p_have || c->pg_name != p_name || c->pg_ranks != p_ranks || c->kind != p_kind) {
                    char key[LSIM_JOB_GROUP_MAX] = {0};
                    int k = p2p_pair(g[i], gid, c, key, sizeof key, err);
                    if (k < 0) {
                        rc = k;
                        goto fail;
                    }
                    if (k && !(p_group = intern_group(names, key, strlen(key), &p_sid))) goto nomem;
                    p_have = 1, p_k = k, p_name = c->pg_name, p_ranks = c->pg_ranks, p_kind = c->kind;
                }
                if (p_k == 0) {
                    if (p2p && (!sel || census)) (*p2p)++; /* counted once: by the census */
                    continue;
                }
                group = p_group, sid = p_sid, gsize = 2;
            } else {
                uint32_t m = 0;
                while (m < c_n && c_ids[m] != c->pg_name) m++;
                if (m == c_n) {
                    const char *grp = c->pg_name != UINT32_MAX ? lsim_strtab_get(g[i]->strings, c->pg_name) : "";
                    /* cut as snprintf into the 64-byte name cut it */
                    size_t l = grp ? strnlen(grp, LSIM_JOB_GROUP_MAX - 1) : 0;
                    uint32_t id = 0;
                    const char *t = intern_group(names, grp ? grp : "", l, &id);
                    if (!t) goto nomem;
                    m = c_n < GROUP_MEMO ? c_n++ : c_next++ % GROUP_MEMO; /* full: replace in turn */
                    c_ids[m] = c->pg_name, c_texts[m] = t, c_sid[m] = id;
                }
                group = c_texts[m], sid = c_sid[m], gsize = c->group_size;
            }
            if (census) {
                if ((rc = census_add(sel, sid, err))) goto fail;
                if (sel->hasobs && g[i]->obs_start[v] != LSIM_OBS_NONE && g[i]->obs_end[v] != LSIM_OBS_NONE)
                    sel->hasobs[gid] = 1;
                continue;
            }
            if (sel && (sid >= sel->nnames || sel->part_of[sid] != sel->part)) {
                if (sid < sel->nnames) continue;
                rc = lsim_err_set(err, LSIM_EINTERNAL, "collective kernels changed between two listings");
                goto fail;
            }
            if (ne == room) {
                rc = lsim_err_set(err, LSIM_EINTERNAL, "collective kernels changed between two listings");
                goto fail;
            }
            lsim_job_entry *x = &e[ne];
            memset(x, 0, sizeof *x);
            x->group = group;
            x->group_size = gsize;
            fill_entry(x, g[i], gid, v, c);
            if (is_p2p(c->kind)) {
                if (p2p_first == SIZE_MAX) p2p_first = ne;
                p2p_last = ne + 1;
            }
            ne++;
        }
        if (p2p_first != SIZE_MAX && (rc = p2p_range(e, p2p_first, p2p_last, err))) goto fail;
        tell(prog, "listing collective kernels", i, i + 1, n, 10); /* every 1,024 GPUs */
    }
    if (sel && !census && ne != room) {
        rc = lsim_err_set(err, LSIM_EINTERNAL, "collective kernels changed between two listings");
        goto fail;
    }
    if (out) *out = e;
    if (nout) *nout = ne;
    return 0;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
fail:
    lsim_free(e);
    return rc;
}

int lsim_job_entries(lsim_graph *const *g, const uint32_t *gpu_ids, size_t n, lsim_strtab *names, lsim_job_entry **out,
                     size_t *nout, uint64_t *p2p, lsim_err *err)
{
    return list_entries(g, gpu_ids, n, names, NULL, NULL, out, nout, p2p, err);
}

static int from_entries_ex(const lsim_job_entry *ents, size_t ne, size_t n, const int32_t *ranks,
                           const char *const *sources, const size_t *node_count, const size_t *coll_count,
                           const job_progress *prog, size_t *order, lsim_ns *ediff, size_t *fail_at, lsim_job **out,
                           lsim_err *err);

int lsim_job_match(lsim_graph *const *g, size_t n, lsim_job **out, lsim_err *err)
{
    return lsim_job_match_ex(g, n, 1, NULL, NULL, out, err);
}

/* ------------------------------------------------- the match in parts
 *
 * lsim_job_match_ex with parts > 1. The census lists every GPU's
 * collectives once without keeping them and counts each group's entries;
 * the groups, in strcmp order of their names, are cut into `parts` runs
 * of about equal entries. Each run is then listed and matched on its own
 * (the serial matcher, as an owner of the distributed match does) and
 * appended to the job. The sorted order is (group, position, GPU, node)
 * and a run holds whole groups, so the runs in turn give the instances,
 * their participants and the first failure of the match in one part: the
 * job is the same array for array, and the error the same line. */

typedef struct parts_job {
    lsim_job *j;
    size_t np, ni, icap;     /* participants and instances so far, room for instances */
    lsim_ns *obs_s, *obs_e;  /* per participant, when the job has observed entries */
    uint8_t *obs;
    lsim_ns **diffs;         /* per GPU: its clock-offset terms */
    size_t *ndiff, *dcap;
} parts_job;

/* Each interned group's part (part_of, allocated here) and each part's
 * entries (want, parts of them), from the census counts: the names in
 * strcmp order, a group in the part where its first entry falls. */
static int cut_parts(const lsim_strtab *names, const part_sel *sel, unsigned parts, uint32_t **part_of,
                     size_t *want, lsim_err *err)
{
    uint32_t nd = lsim_strtab_count(names);
    distinct_name *ids = lsim_malloc((nd ? nd : 1) * sizeof *ids);
    *part_of = lsim_malloc((nd ? nd : 1) * sizeof **part_of);
    int rc = 0;
    if (!ids || !*part_of) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
        goto cleanup;
    }
    uint64_t total = 0;
    for (uint32_t d = 0; d < nd; d++) {
        ids[d] = (distinct_name){lsim_strtab_get(names, d), d};
        total += d < sel->cap ? sel->count[d] : 0;
    }
    if (nd) qsort(ids, nd, sizeof *ids, cmp_distinct); /* distinct names: no ties */
    for (unsigned p = 0; p < parts; p++) want[p] = 0;
    uint64_t acc = 0; /* at most the job's entries: acc x parts stays far below 2^64 */
    for (uint32_t d = 0; d < nd; d++) {
        uint32_t id = ids[d].d;
        uint64_t c = id < sel->cap ? sel->count[id] : 0;
        unsigned p = total ? (unsigned)(acc * parts / total) : 0;
        (*part_of)[id] = p;
        want[p] += c;
        acc += c;
    }
cleanup:
    lsim_free(ids);
    return rc;
}

/* Room in pj for `more` instances (grown by half again, at least). */
static int parts_room(parts_job *pj, size_t more, lsim_err *err)
{
    if (pj->ni + more <= pj->icap) return 0;
    size_t cap = pj->icap + pj->icap / 2;
    if (cap < pj->ni + more) cap = pj->ni + more;
    lsim_job *j = pj->j;
    uint64_t *po = lsim_realloc(j->part_off, (cap + 1) * sizeof *po);
    if (po) j->part_off = po;
    lsim_ns *tr = po ? lsim_realloc(j->transfer, cap * sizeof *tr) : NULL;
    if (tr) j->transfer = tr;
    uint8_t *ru = tr ? lsim_realloc(j->rule, cap * sizeof *ru) : NULL;
    if (ru) j->rule = ru;
    uint64_t *ro = ru ? lsim_realloc(j->root, cap * sizeof *ro) : NULL;
    if (ro) j->root = ro;
    if (!ro) return lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
    pj->icap = cap;
    return 0;
}

/* One part's matched job oj (its entries e through order, ediff each
 * sorted position's clock term) appended to pj: instances after those so
 * far, participants after theirs, each GPU's instance slots and clock
 * terms, the participants' observations when the job has any. */
static int merge_part(parts_job *pj, const lsim_job *oj, const lsim_job_entry *e, const size_t *order,
                      const lsim_ns *ediff, size_t ne, const int32_t *ranks, const char *const *src, lsim_err *err)
{
    lsim_job *j = pj->j;
    int rc = parts_room(pj, oj->ninst, err);
    if (rc) return rc;
    for (size_t k = 0; k < oj->ninst; k++) {
        j->part_off[pj->ni + k] = pj->np + oj->part_off[k];
        j->transfer[pj->ni + k] = oj->transfer[k];
        j->rule[pj->ni + k] = oj->rule[k];
        int rooted = oj->rule[k] == LSIM_JOB_BCAST || oj->rule[k] == LSIM_JOB_REDUCE;
        j->root[pj->ni + k] = rooted ? pj->np + oj->root[k] : 0;
        for (uint64_t a = oj->part_off[k]; a < oj->part_off[k + 1]; a++) {
            uint32_t gpu = oj->part_gpu[a], c = oj->part_coll[a];
            size_t at = pj->np + a;
            j->part_gpu[at] = gpu;
            j->part_node[at] = oj->part_node[a];
            j->part_coll[at] = c;
            if (j->inst_of[gpu][c] >= 0)
                return lsim_err_set(err, LSIM_ETRACE, "%s: collective record %u belongs to two collective kernels of rank %d",
                                    src_of(src, gpu), c, rank_of(ranks, gpu));
            j->inst_of[gpu][c] = (int32_t)(pj->ni + k);
            if (pj->obs) {
                const lsim_job_entry *x = &e[order[a]];
                pj->obs[at] = x->observed, pj->obs_s[at] = x->obs_start, pj->obs_e[at] = x->obs_end;
            }
            if (ediff[a] == INT64_MIN) continue;
            if (pj->ndiff[gpu] == pj->dcap[gpu]) {
                size_t cap = pj->dcap[gpu] ? 2 * pj->dcap[gpu] : 16;
                lsim_ns *d = lsim_realloc(pj->diffs[gpu], cap * sizeof *d);
                if (!d) return lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
                pj->diffs[gpu] = d;
                pj->dcap[gpu] = cap;
            }
            pj->diffs[gpu][pj->ndiff[gpu]++] = ediff[a];
        }
    }
    pj->ni += oj->ninst;
    pj->np += ne;
    j->ngroups += oj->ngroups;
    j->p2p_inst += oj->p2p_inst;
    j->rooted_inst += oj->rooted_inst;
    j->rootless_inst += oj->rootless_inst;
    return 0;
}

/* Participant a of pj, for lsim_job_observed_waits. */
static void parts_obs(const void *ctx, uint64_t a, lsim_job_obs *o)
{
    const parts_job *pj = ctx;
    *o = (lsim_job_obs){pj->j->part_gpu[a], pj->j->part_node[a], pj->obs ? pj->obs[a] : 0,
                        pj->obs ? pj->obs_s[a] : 0, pj->obs ? pj->obs_e[a] : 0};
}

/* pj's job made for n GPUs of ne entries in all (hasobs: which GPUs have an
 * observed collective): every GPU's instance slots (-1), its observed
 * waiting where it has observations, its clock terms' lists. */
static int parts_alloc(parts_job *pj, size_t n, size_t ne, const size_t *nodes, const size_t *colls,
                       const uint8_t *hasobs, lsim_err *err)
{
    lsim_job *j = pj->j = lsim_calloc(1, sizeof *j);
    int any = 0;
    for (size_t i = 0; i < n; i++) any |= hasobs[i];
    if (!j) goto nomem;
    j->ngpus = n;
    j->inst_of = lsim_calloc(n ? n : 1, sizeof *j->inst_of);
    j->obs_wait = lsim_calloc(n ? n : 1, sizeof *j->obs_wait);
    j->clock_offset = lsim_calloc(n ? n : 1, sizeof *j->clock_offset);
    j->part_gpu = lsim_malloc((ne ? ne : 1) * sizeof *j->part_gpu);
    j->part_node = lsim_malloc((ne ? ne : 1) * sizeof *j->part_node);
    j->part_coll = lsim_malloc((ne ? ne : 1) * sizeof *j->part_coll);
    j->part_off = lsim_malloc(sizeof *j->part_off);
    pj->diffs = lsim_calloc(n ? n : 1, sizeof *pj->diffs);
    pj->ndiff = lsim_calloc(n ? 2 * n : 1, sizeof *pj->ndiff);
    pj->dcap = pj->ndiff ? pj->ndiff + n : NULL;
    if (!j->inst_of || !j->obs_wait || !j->clock_offset || !j->part_gpu || !j->part_node || !j->part_coll ||
        !j->part_off || !pj->diffs || !pj->ndiff)
        goto nomem;
    if (any) {
        pj->obs = lsim_malloc(ne ? ne : 1);
        pj->obs_s = lsim_malloc((ne ? ne : 1) * sizeof *pj->obs_s);
        pj->obs_e = lsim_malloc((ne ? ne : 1) * sizeof *pj->obs_e);
        if (!pj->obs || !pj->obs_s || !pj->obs_e) goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        if (!nodes[i]) continue; /* as the serial match: no arrays for a GPU without nodes */
        j->inst_of[i] = lsim_malloc((colls[i] ? colls[i] : 1) * sizeof **j->inst_of);
        if (hasobs[i]) j->obs_wait[i] = lsim_calloc(nodes[i], sizeof **j->obs_wait);
        if (!j->inst_of[i] || (hasobs[i] && !j->obs_wait[i])) goto nomem;
        for (size_t c = 0; c < colls[i]; c++) j->inst_of[i][c] = -1;
    }
    return 0;
nomem:
    return lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
}

/* One part listed (sel) and matched, then appended to pj. */
static int match_one_part(lsim_graph *const *g, size_t n, lsim_strtab *names, part_sel *sel, const int32_t *ranks,
                          const char *const *src, parts_job *pj, lsim_err *err)
{
    lsim_job_entry *e = NULL;
    size_t ne = 0, *order = NULL;
    lsim_ns *ediff = NULL;
    lsim_job *oj = NULL;
    int rc = list_entries(g, NULL, n, names, NULL, sel, &e, &ne, NULL, err);
    if (rc) return rc;
    order = lsim_malloc((ne ? ne : 1) * sizeof *order);
    ediff = lsim_malloc((ne ? ne : 1) * sizeof *ediff);
    if (!order || !ediff) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
    if (!rc) rc = from_entries_ex(e, ne, n, ranks, src, NULL, NULL, NULL, order, ediff, NULL, &oj, err);
    if (!rc) rc = merge_part(pj, oj, e, order, ediff, ne, ranks, src, err);
    lsim_job_free(oj);
    lsim_free(e);
    lsim_free(order);
    lsim_free(ediff);
    return rc;
}

static int match_in_parts(lsim_graph *const *g, size_t n, unsigned parts, const int32_t *ranks,
                          const char *const *src, const size_t *nodes, const size_t *colls, const job_progress *prog,
                          lsim_job **out, uint64_t *p2p, lsim_err *err)
{
    lsim_strtab *names = lsim_strtab_new();
    part_sel sel = {0};
    parts_job pj = {0};
    uint32_t *part_of = NULL;
    size_t *want = lsim_malloc(parts * sizeof *want), ne = 0;
    int rc = 0;
    sel.hasobs = lsim_calloc(n ? n : 1, 1);
    if (!names || !want || !sel.hasobs) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
        goto cleanup;
    }
    sel.census = 1;
    if ((rc = list_entries(g, NULL, n, names, prog, &sel, NULL, NULL, p2p, err))) goto cleanup;
    sel.census = 0;
    if ((rc = cut_parts(names, &sel, parts, &part_of, want, err))) goto cleanup;
    for (unsigned p = 0; p < parts; p++) ne += want[p];
    if ((rc = parts_alloc(&pj, n, ne, nodes, colls, sel.hasobs, err))) goto cleanup;
    sel.part_of = part_of;
    sel.nnames = lsim_strtab_count(names);
    for (unsigned p = 0; p < parts && !rc; p++) {
        tell(prog, "matching collective kernels, part by part", p, p + 1, parts, 0);
        sel.part = p;
        sel.want = want[p];
        rc = match_one_part(g, n, names, &sel, ranks, src, &pj, err);
    }
    if (rc) goto cleanup;
    lsim_job *j = pj.j;
    j->part_off[pj.ni] = pj.np;
    j->ninst = j->ninst_job = pj.ni;
    clock_medians(pj.diffs, pj.ndiff, n, j->clock_offset);
    lsim_job_observed_waits(j, parts_obs, &pj);
    *out = j;
    pj.j = NULL;
cleanup:
    lsim_job_free(pj.j);
    for (size_t i = 0; pj.diffs && i < n; i++) lsim_free(pj.diffs[i]);
    lsim_free(pj.diffs);
    lsim_free(pj.ndiff);
    lsim_free(pj.obs);
    lsim_free(pj.obs_s);
    lsim_free(pj.obs_e);
    lsim_free(sel.count);
    lsim_free(sel.hasobs);
    lsim_free(part_of);
    lsim_free(want);
    lsim_strtab_free(names);
    return rc;
}

int lsim_job_match_ex(lsim_graph *const *g, size_t n, unsigned parts, lsim_job_progress_fn progress, void *ctx,
                      lsim_job **out, lsim_err *err)
{
    job_progress prog = {progress, ctx};
    lsim_job_entry *e = NULL;
    lsim_strtab *names = NULL; /* the entries' group names */
    size_t ne = 0;
    uint64_t p2p = 0;
    int32_t *ranks = lsim_malloc((n ? n : 1) * sizeof *ranks);
    const char **src = lsim_malloc((n ? n : 1) * sizeof *src);
    size_t *nodes = lsim_malloc((n ? 2 * n : 1) * sizeof *nodes), *colls = nodes ? nodes + n : NULL;
    int rc = 0;
    *out = NULL;
    if (!ranks || !src || !nodes) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        ranks[i] = g[i]->rank;
        src[i] = lsim_graph_name(g[i]);
        nodes[i] = g[i]->n;
        colls[i] = g[i]->ncoll;
    }
    if (parts > 1) {
        rc = match_in_parts(g, n, parts, ranks, src, nodes, colls, &prog, out, &p2p, err);
    } else if (!(names = lsim_strtab_new())) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
    } else if (!(rc = list_entries(g, NULL, n, names, &prog, NULL, &e, &ne, &p2p, err))) {
        rc = from_entries_ex(e, ne, n, ranks, src, nodes, colls, &prog, NULL, NULL, NULL, out, err);
    }
    if (rc) goto cleanup;
    (*out)->graphs = g;
    (*out)->uncoupled_p2p = p2p;
cleanup:
    lsim_free(e);
    lsim_strtab_free(names);
    lsim_free(ranks);
    lsim_free(src);
    lsim_free(nodes);
    return rc;
}

/* One p2p instance of np entries (same pair and position), x0 and x1 its
 * first two (x1 NULL when np is 1): exactly one send on the sender and one
 * recv on the receiver (or two sendrecvs), equal sizes. */
static int check_p2p(const lsim_job_entry *x0, const lsim_job_entry *x1, size_t np, const char *const *sources,
                     lsim_err *err)
{
    lsim_job_entry x[2]; /* copies: the entries are not adjacent (sort_entries) */
    x[0] = *x0;
    if (x1) x[1] = *x1;
    else memset(&x[1], 0, sizeof x[1]);
    int32_t a = -1, b = -1;
    int directed = parse_pair(x->group, &a, &b, NULL);
    if (np == 2 && x[0].gpu != x[1].gpu) {
        int ok = directed ? ((x[0].kind == LSIM_COLL_SEND && x[1].kind == LSIM_COLL_RECV) ||
                             (x[0].kind == LSIM_COLL_RECV && x[1].kind == LSIM_COLL_SEND))
                          : (x[0].kind == LSIM_COLL_SENDRECV && x[1].kind == LSIM_COLL_SENDRECV);
        if (!ok)
            return lsim_err_set(err, LSIM_ETRACE, "%s: point-to-point #%lld on pair %s is %s on rank %d but %s on rank %d",
                                src_of(sources, x[0].gpu), (long long)x[0].seq, x->group + 4,
                                lsim_coll_kind_name((lsim_coll_kind)x[0].kind), x[0].rank,
                                lsim_coll_kind_name((lsim_coll_kind)x[1].kind), x[1].rank);
        if (x[0].bytes >= 0 && x[1].bytes >= 0 && x[0].bytes != x[1].bytes) {
            const lsim_job_entry *s = x[0].kind == LSIM_COLL_SEND ? &x[0] : &x[1], *r = s == &x[0] ? &x[1] : &x[0];
            return lsim_err_set(err, LSIM_ETRACE,
                                "%s: point-to-point #%lld on pair %s: rank %d sends %lld bytes but rank %d receives %lld",
                                src_of(sources, s->gpu), (long long)x[0].seq, x->group + 4, s->rank, (long long)s->bytes,
                                r->rank, (long long)r->bytes);
        }
        return 0;
    }
    if (np == 1) {
        if (directed)
            return lsim_err_set(err, LSIM_ETRACE,
                                "%s: %s #%lld on pair %s (rank %d) has no matching %s on rank %d",
                                src_of(sources, x->gpu), lsim_coll_kind_name((lsim_coll_kind)x->kind), (long long)x->seq,
                                x->group + 4, x->rank, x->kind == LSIM_COLL_SEND ? "recv" : "send",
                                x->kind == LSIM_COLL_SEND ? b : a);
        return lsim_err_set(err, LSIM_ETRACE, "%s: sendrecv #%lld on pair %s (rank %d) has no matching sendrecv on its peer",
                            src_of(sources, x->gpu), (long long)x->seq, x->group + 4, x->rank);
    }
    return lsim_err_set(err, LSIM_ETRACE, "%s: point-to-point #%lld on pair %s has %zu kernels on ranks %d and %d, not one on each side",
                        src_of(sources, x->gpu), (long long)x->seq, x->group + 4, np, x[0].rank, x[1].rank);
}

/* Instance inst, entries [k, e): its rule, and for a broadcast or reduce
 * whose root a participant names, which participant that is (job.h).
 * Participants naming different roots, or a root outside the instance, is
 * an error naming the group, the position and the ranks. */
static int find_root(lsim_job *j, size_t inst, const lsim_job_entry *ents, const size_t *ord, size_t k, size_t e,
                     const char *const *sources, const int32_t *ranks, lsim_err *err)
{
    const lsim_job_entry *x = &ents[ord[k]];
    const char *gname = *x->group ? x->group : "world";
    j->rule[inst] = LSIM_JOB_ALL;
    if (x->kind != LSIM_COLL_BROADCAST && x->kind != LSIM_COLL_REDUCE) return 0;
    size_t named = SIZE_MAX;
    for (size_t a = k; a < e; a++) {
        if (ents[ord[a]].root < 0) continue;
        if (named == SIZE_MAX) named = a;
        else if (ents[ord[a]].root != ents[ord[named]].root)
            return lsim_err_set(err, LSIM_ETRACE, "%s: %s #%lld on group %s has root rank %d on rank %d but %d on rank %d (%s)",
                                src_of(sources, ents[ord[a]].gpu), lsim_coll_kind_name((lsim_coll_kind)x->kind),
                                (long long)x->seq, gname, ents[ord[a]].root, rank_of(ranks, ents[ord[a]].gpu), ents[ord[named]].root,
                                rank_of(ranks, ents[ord[named]].gpu), src_of(sources, ents[ord[named]].gpu));
    }
    if (named == SIZE_MAX) {
        j->rule[inst] = LSIM_JOB_ROOTLESS;
        j->rootless_inst++;
        return 0;
    }
    for (size_t a = k; a < e; a++)
        if (ents[ord[a]].rank == ents[ord[named]].root) {
            j->rule[inst] = x->kind == LSIM_COLL_BROADCAST ? LSIM_JOB_BCAST : LSIM_JOB_REDUCE;
            j->root[inst] = a;
            j->rooted_inst++;
            return 0;
        }
    return lsim_err_set(err, LSIM_ETRACE, "%s: %s #%lld on group %s names root rank %d, which is not one of its %zu participants",
                        src_of(sources, ents[ord[named]].gpu), lsim_coll_kind_name((lsim_coll_kind)x->kind), (long long)x->seq,
                        gname, ents[ord[named]].root, e - k);
}

/* The entries of lsim_job_from_entries in part order (through ord). */
typedef struct job_parts {
    const lsim_job_entry *ents;
    const size_t *ord;
} job_parts;

static void entry_part(const void *ctx, uint64_t a, lsim_job_obs *o)
{
    const job_parts *jp = ctx;
    const lsim_job_entry *e = &jp->ents[jp->ord[a]];
    *o = (lsim_job_obs){e->gpu, e->node, e->observed, e->obs_start, e->obs_end};
}

void lsim_job_observed_waits(lsim_job *j, lsim_job_part_fn part, const void *ctx)
{
    /* the rule the replay follows: a broadcast's root waits for nobody, a
     * reduce's non-roots for the last non-root */
    for (size_t q = 0; q < j->ninst; q++) {
        lsim_ns last = INT64_MIN, last_x = INT64_MIN;
        lsim_job_obs ea;
        int all_observed = 1;
        for (uint64_t a = j->part_off[q]; a < j->part_off[q + 1]; a++) {
            part(ctx, a, &ea);
            if (!ea.observed) all_observed = 0;
        }
        if (!all_observed) continue; /* nothing observed: no observed waiting */
        int rooted = j->rule[q] == LSIM_JOB_BCAST || j->rule[q] == LSIM_JOB_REDUCE;
        for (uint64_t a = j->part_off[q]; a < j->part_off[q + 1]; a++) {
            part(ctx, a, &ea);
            lsim_ns s = lsim_ns_sub_sat(ea.obs_start, j->clock_offset[ea.gpu]); /* an offset may be ~2^63 */
            if (s > last) last = s;
            if ((!rooted || a != j->root[q]) && s > last_x) last_x = s;
        }
        for (uint64_t a = j->part_off[q]; a < j->part_off[q + 1]; a++) {
            part(ctx, a, &ea);
            if (!j->obs_wait[ea.gpu]) continue;
            lsim_ns own = lsim_ns_sub_sat(ea.obs_start, j->clock_offset[ea.gpu]);
            lsim_ns upto = !rooted ? last
                           : j->rule[q] == LSIM_JOB_BCAST ? (a == j->root[q] ? own : last)
                                                          : (a == j->root[q] ? last : last_x);
            lsim_ns w = lsim_ns_sub_sat(upto, own);
            lsim_ns d = ea.obs_end - ea.obs_start;
            j->obs_wait[ea.gpu][ea.node] = w < 0 ? 0 : w > d ? d : w;
        }
    }
}

/* lsim_job_from_entries and, for the owner of a distributed match,
 * lsim_job_match_owned (job.h): one matcher, so the two cannot disagree on
 * an instance or on an error line. order (NULL: made here; else ne
 * entries): the sorted order (sort_entries); ediff (NULL or ne entries):
 * each sorted position's clock-offset term; fail_at (NULL or): the sorted
 * position where the failing instance starts. */
/* Membership of the instance made of the sorted entries [k, e): each GPU
 * once, and as many as its group holds (the world group: every GPU; a
 * named group: its size). LSIM_ETRACE naming a rank that has it and one
 * that does not, or the counts. */
static int check_members(const lsim_job_entry *ents, const size_t *ord, size_t k, size_t e, size_t n,
                         const int32_t *ranks, const char *const *sources, lsim_err *err)
{
    const lsim_job_entry *x = &ents[ord[k]];
    const char *gname = *x->group ? x->group : "world";
    size_t want = *x->group ? (x->group_size > 0 ? (size_t)x->group_size : e - k) : n;
    for (size_t a = k + 1; a < e; a++)
        if (ents[ord[a]].gpu == ents[ord[a - 1]].gpu)
            return lsim_err_set(err, LSIM_ETRACE, "%s: collective #%lld on group %s appears twice on rank %d",
                                src_of(sources, ents[ord[a]].gpu), (long long)x->seq, gname,
                                rank_of(ranks, ents[ord[a]].gpu));
    if (e - k == want) return 0;
    uint32_t missing = UINT32_MAX;
    for (uint32_t i = 0, a = (uint32_t)k; i < n && missing == UINT32_MAX; i++) {
        if (a < e && ents[ord[a]].gpu == i) a++;
        else if (!*x->group) missing = i;
    }
    if (missing != UINT32_MAX)
        return lsim_err_set(err, LSIM_ETRACE,
                            "%s: collective #%lld (%s) on the world group is on rank %d (%s) but missing on rank %d",
                            src_of(sources, missing), (long long)x->seq, lsim_coll_kind_name((lsim_coll_kind)x->kind),
                            rank_of(ranks, x->gpu), src_of(sources, x->gpu), rank_of(ranks, missing));
    return lsim_err_set(err, LSIM_ETRACE, "%s: collective #%lld on group %s has %zu participants, the group has %zu",
                        src_of(sources, x->gpu), (long long)x->seq, gname, e - k, want);
}

static int from_entries_ex(const lsim_job_entry *ents, size_t ne, size_t n, const int32_t *ranks,
                           const char *const *sources, const size_t *node_count, const size_t *coll_count,
                           const job_progress *prog, size_t *order, lsim_ns *ediff, size_t *fail_at, lsim_job **out,
                           lsim_err *err)
{
    int rc = 0;
    size_t at = SIZE_MAX; /* the instance being matched, for fail_at */
    lsim_ns *tmp = NULL, **diffs = NULL;
    size_t *ndiff = NULL, *goff = NULL, ng = 0, *ord = order, *own_ord = NULL;
    uint8_t *hasobs = NULL;
    lsim_job *j = lsim_calloc(1, sizeof *j);
    *out = NULL;
    if (!j) return lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
    j->ngpus = n;
    j->graphs = NULL;
    j->inst_of = lsim_calloc(n, sizeof *j->inst_of);
    j->obs_wait = lsim_calloc(n, sizeof *j->obs_wait);
    j->clock_offset = lsim_calloc(n ? n : 1, sizeof *j->clock_offset);
    diffs = lsim_calloc(n ? n : 1, sizeof *diffs);
    ndiff = lsim_calloc(n ? n : 1, sizeof *ndiff);
    if (!j->inst_of || !j->obs_wait || !j->clock_offset || !diffs || !ndiff) goto nomem;
    for (size_t q = 0; q < ne; q++)
        if (ents[q].gpu >= n ||
            (node_count && node_count[ents[q].gpu] &&
             (ents[q].node >= node_count[ents[q].gpu] || !coll_count || ents[q].coll >= coll_count[ents[q].gpu]))) {
            rc = lsim_err_set(err, LSIM_EINTERNAL, "collective entry out of range");
            goto cleanup;
        }
    /* sorted before the per-node arrays are made, so that the sort's keys
     * are freed before them and add nothing to the peak */
    if (!ord && !(ord = own_ord = lsim_malloc((ne ? ne : 1) * sizeof *ord))) goto nomem;
    size_t ninst = 0; /* counted on the sorted keys, which are read in order */
    if ((rc = sort_entries(ents, ne, ord, &goff, &ng, &ninst, err))) goto cleanup;
    /* Per GPU: its entries (ndiff as a count for now; each GPU gets at most
     * one clock difference per entry of its own -- sizing by all entries
     * reserved ne x n slots, 180 GB of address space on a 4,096-GPU job) and
     * whether any is observed: only those GPUs can have observed waiting;
     * the others keep obs_wait NULL, read as all zero (8 bytes per node,
     * 0.5 GB, saved on a synthesized 4,096-GPU job). */
    hasobs = lsim_calloc(n ? n : 1, 1);
    if (!hasobs) goto nomem;
    for (size_t q = 0; q < ne; q++) {
        ndiff[ents[q].gpu]++;
        if (ents[q].observed) hasobs[ents[q].gpu] = 1;
    }
    for (uint32_t i = 0; i < n; i++) {
        size_t nn = node_count ? node_count[i] : 0;
        diffs[i] = lsim_malloc((ndiff[i] ? ndiff[i] : 1) * sizeof **diffs);
        ndiff[i] = 0;
        if (!diffs[i]) goto nomem;
        if (!nn) continue; /* a GPU of another MPI rank: no arrays of its own here */
        size_t nc = coll_count ? coll_count[i] : 0;
        j->inst_of[i] = lsim_malloc((nc ? nc : 1) * sizeof **j->inst_of);
        if (hasobs[i]) j->obs_wait[i] = lsim_calloc(nn, sizeof **j->obs_wait);
        if (!j->inst_of[i] || (hasobs[i] && !j->obs_wait[i])) goto nomem;
        for (size_t c = 0; c < nc; c++) j->inst_of[i][c] = -1;
    }
    for (size_t q = 0; ediff && q < ne; q++) ediff[q] = INT64_MIN;
    /* instances: group g's entries are [goff[g], goff[g + 1]), none empty */
    j->part_off = lsim_malloc((ninst + 1) * sizeof *j->part_off);
    j->part_gpu = lsim_malloc((ne ? ne : 1) * sizeof *j->part_gpu);
    j->part_node = lsim_malloc((ne ? ne : 1) * sizeof *j->part_node);
    j->part_coll = lsim_malloc((ne ? ne : 1) * sizeof *j->part_coll);
    j->transfer = lsim_malloc((ninst ? ninst : 1) * sizeof *j->transfer);
    j->rule = lsim_calloc(ninst ? ninst : 1, sizeof *j->rule);
    j->root = lsim_calloc(ninst ? ninst : 1, sizeof *j->root);
    tmp = lsim_malloc((n ? n : 1) * sizeof *tmp);
    if (!j->part_off || !j->part_gpu || !j->part_node || !j->part_coll || !j->transfer || !j->rule || !j->root || !tmp)
        goto nomem;
    size_t k = 0, inst = 0, g = 0;
    while (k < ne) {
        while (goff[g + 1] <= k) g++;
        size_t e = k;
        while (e < goff[g + 1] && ents[ord[e]].seq == ents[ord[k]].seq) e++;
        if (k == goff[g]) j->ngroups++;
        const lsim_job_entry *x = &ents[ord[k]];
        const char *gname = *x->group ? x->group : "world";
        at = k;
        if (is_p2p(x->kind)) {
            if ((rc = check_p2p(&ents[ord[k]], e - k > 1 ? &ents[ord[k + 1]] : NULL, e - k, sources, err))) goto cleanup;
            j->p2p_inst++;
        }
        if ((rc = check_members(ents, ord, k, e, n, ranks, sources, err))) goto cleanup;
        /* agreement on kind and size */
        lsim_ns last_start = INT64_MIN;
        lsim_ns transfer = 0, modelled = 0;
        int all_observed = 1;
        size_t nobs = 0;
        for (size_t a = k; a < e; a++) {
            const lsim_job_entry *ea = &ents[ord[a]];
            int generic = is_p2p(ea->kind) || ea->kind == LSIM_COLL_GENERIC || ea->kind == LSIM_COLL_OTHER || x->kind == LSIM_COLL_GENERIC ||
                          x->kind == LSIM_COLL_OTHER;
            if (ea->kind != x->kind && !generic) {
                rc = lsim_err_set(err, LSIM_ETRACE, "%s: collective #%lld on group %s is %s on rank %d but %s on rank %d (%s)",
                                  src_of(sources, ea->gpu), (long long)x->seq, gname,
                                  lsim_coll_kind_name((lsim_coll_kind)ea->kind), rank_of(ranks, ea->gpu),
                                  lsim_coll_kind_name((lsim_coll_kind)x->kind), rank_of(ranks, x->gpu),
                                  src_of(sources, x->gpu));
                goto cleanup;
            }
            /* an all-to-all with split sizes (all_to_allv) moves a
             * different amount on every rank */
            if (ea->bytes >= 0 && x->bytes >= 0 && ea->bytes != x->bytes && x->kind != LSIM_COLL_ALLTOALL) {
                rc = lsim_err_set(err, LSIM_ETRACE,
                                  "%s: collective #%lld on group %s moves %lld bytes on rank %d but %lld on rank %d (%s)",
                                  src_of(sources, ea->gpu), (long long)x->seq, gname, (long long)ea->bytes,
                                  rank_of(ranks, ea->gpu), (long long)x->bytes, rank_of(ranks, x->gpu),
                                  src_of(sources, x->gpu));
                goto cleanup;
            }
            /* the participant that arrived last waited least: its duration
             * is the transfer (ties: the shorter) */
            if (ea->observed) {
                lsim_ns d = ea->obs_end - ea->obs_start;
                if (ea->obs_start > last_start || (ea->obs_start == last_start && d < transfer)) {
                    last_start = ea->obs_start;
                    transfer = d;
                }
                tmp[nobs++] = ea->obs_end;
            } else {
                all_observed = 0;
            }
            if (ea->dur > modelled) modelled = ea->dur;
            j->part_gpu[a] = ea->gpu;
            j->part_node[a] = ea->node;
            j->part_coll[a] = ea->coll;
            if (j->inst_of && j->inst_of[ea->gpu]) {
                int32_t *slot = &j->inst_of[ea->gpu][ea->coll];
                /* one record, one collective node: two would share one
                 * instance slot (a damaged store or Chakra file) */
                if (*slot >= 0) {
                    rc = lsim_err_set(err, LSIM_ETRACE,
                                      "%s: collective record %u belongs to two collective kernels of rank %d",
                                      src_of(sources, ea->gpu), ea->coll, rank_of(ranks, ea->gpu));
                    goto cleanup;
                }
                *slot = (int32_t)inst;
            }
        }
        j->part_off[inst] = k;
        /* never observed (synthesized): the modelled duration is the transfer */
        j->transfer[inst] = all_observed ? transfer : modelled;
        if ((rc = find_root(j, inst, ents, ord, k, e, sources, ranks, err))) goto cleanup;
        /* clock: each observed participant's end against their median end;
         * a rooted instance's root does not end with the others */
        if (all_observed) {
            int rooted = j->rule[inst] == LSIM_JOB_BCAST || j->rule[inst] == LSIM_JOB_REDUCE;
            nobs = 0;
            for (size_t a = k; a < e; a++)
                if (!rooted || a != j->root[inst]) tmp[nobs++] = ents[ord[a]].obs_end;
            if (nobs) {
                qsort(tmp, nobs, sizeof *tmp, cmp_ns);
                lsim_ns med = tmp[nobs / 2];
                for (size_t a = k; a < e; a++)
                    if (!rooted || a != j->root[inst]) {
                        diffs[ents[ord[a]].gpu][ndiff[ents[ord[a]].gpu]++] = ents[ord[a]].obs_end - med;
                        if (ediff) ediff[a] = ents[ord[a]].obs_end - med;
                    }
            }
        }
        inst++;
        tell(prog, "pairing collective kernels", k, e, ne, 20); /* every Mi entries */
        k = e;
    }
    at = SIZE_MAX;
    j->part_off[inst] = k;
    j->ninst = inst;
    j->ninst_job = inst;
    clock_medians(diffs, ndiff, n, j->clock_offset);
    /* observed waiting, on the aligned clocks (local GPUs only) */
    {
        job_parts jp = {ents, ord};
        lsim_job_observed_waits(j, entry_part, &jp);
    }
    *out = j;
    j = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
cleanup:
    if (fail_at) *fail_at = rc ? at : SIZE_MAX;
    if (diffs)
        for (size_t i = 0; i < n; i++) lsim_free(diffs[i]);
    lsim_free(diffs);
    lsim_free(ndiff);
    lsim_free(hasobs);
    lsim_free(goff);
    lsim_free(own_ord);
    lsim_free(tmp);
    lsim_job_free(j);
    return rc;
}

int lsim_job_from_entries(const lsim_job_entry *ents, size_t ne, size_t n, const int32_t *ranks,
                          const char *const *sources, const size_t *node_count, const size_t *coll_count,
                          lsim_job **out, lsim_err *err)
{
    return from_entries_ex(ents, ne, n, ranks, sources, node_count, coll_count, NULL, NULL, NULL, NULL, out, err);
}

/* The owner matches its keys with the serial matcher itself, so each
 * instance, its transfer, rule, root and clock terms, and the first error
 * are the serial ones. */
int lsim_job_match_owned(const lsim_job_entry *ents, size_t ne, size_t n, const int32_t *ranks,
                         const char *const *sources, size_t *order, lsim_ns *ediff, size_t *fail_at, lsim_job **out,
                         lsim_err *err)
{
    return from_entries_ex(ents, ne, n, ranks, sources, NULL, NULL, NULL, order, ediff, fail_at, out, err);
}

/* Saturating (common.h): an offset is a difference of two observed times,
 * up to 2^63 in magnitude for times within the bounds (graph.h); a release
 * pushed past int64 then gives simulated times the metrics refuse. */
int lsim_job_align_clocks(lsim_job *j, lsim_err *err)
{
    for (size_t i = 0; j->graphs && i < j->ngpus; i++) {
        lsim_graph *g = j->graphs[i];
        lsim_ns off = j->clock_offset[i];
        if (!off || !g) continue;
        if (lsim_graph_unshare(g, err)) return LSIM_ENOMEM; /* its own releases move */
        for (size_t v = 0; v < g->n; v++)
            if (g->release[v] != INT64_MIN) { /* saturated, but never to INT64_MIN, which means "none" */
                lsim_ns r = lsim_ns_sub_sat(g->release[v], off);
                g->release[v] = r == INT64_MIN ? INT64_MIN + 1 : r;
            }
        g->t0 = lsim_ns_sub_sat(g->t0, off);
        j->clock_offset[i] = off; /* kept for reporting */
    }
    return 0;
}

void lsim_job_waits(const lsim_job *j, size_t gpu, const lsim_graph *g, const lsim_ns *start, const lsim_ns *end,
                    lsim_ns *wait)
{
    const int32_t *inst = j->inst_of[gpu];
    for (size_t v = 0; v < g->n; v++) {
        int32_t k = lsim_job_inst(inst, g, v);
        wait[v] = k < 0 ? 0 : lsim_ns_sub_sat(lsim_ns_sub_sat(end[v], start[v]), j->transfer[k]);
    }
}

void lsim_job_rootless(const lsim_job *j, size_t gpu, const lsim_graph *g, uint64_t *out)
{
    memset(out, 0, LSIM_COLL_NKINDS * sizeof *out);
    const int32_t *inst = j->inst_of ? j->inst_of[gpu] : NULL;
    for (size_t v = 0; inst && v < g->n; v++) {
        int32_t ki = lsim_job_inst(inst, g, v);
        if (ki < 0 || j->rule[ki] != LSIM_JOB_ROOTLESS || (size_t)g->coll[v] >= g->ncoll) continue;
        unsigned k = g->colls[g->coll[v]].kind;
        if (k < LSIM_COLL_NKINDS) out[k]++;
    }
}

/* ------------------------------------------------------ the coupled run */

/* Ready nodes, one stack per GPU (each in its engine's scratch array: each
 * node is pushed once). Results do not depend on the order nodes are
 * processed in -- a node's times are a function of its predecessors' only,
 * and a collective's of its participants' arrivals -- so instead of one
 * heap over the whole job ordered by time (a cache miss per comparison on a
 * large job), each GPU's ready work is run in one burst until it blocks on
 * a collective (sched_drain).
 *
 * Which GPU runs next: the one most recently given work (sched_wq). When a
 * collective completes, its participants are pushed last, so they run next
 * while their data is still in cache: the 8 GPUs of a tensor-parallel group
 * advance through their layers together. Sweeping all GPUs in index order
 * instead ran each GPU for a few nodes (one collective's worth) per sweep,
 * with every other GPU's data between two visits: on a 4,096-GPU job (67 M
 * nodes) that was mostly cache misses. */
typedef struct jstate {
    const lsim_job *j;
    lsim_engine *const *e;
    lsim_ns *const *waits;
    uint32_t *arrived;
    lsim_ns *max_arrival;
    sched_rooted x; /* rooted instances' non-root arrivals */
    size_t *n;    /* per GPU: ready nodes on its stack */
    sched_wq wq;
    uint32_t cur; /* the GPU being drained */
} jstate;

static inline void jpush(jstate *s, uint32_t g, uint32_t v)
{
    s->e[g]->heap[s->n[g]++] = v;
    sched_wq_push(&s->wq, g);
}

/* Collective v (instance k) on GPU gi is resolved: it waits for its peers;
 * the last arrival completes it on every participant (a rooted instance's
 * root and others at the arrivals each waits for: job.h). */
static void jarrive(jstate *s, uint32_t gi, uint32_t v, int32_t k)
{
    const lsim_job *j = s->j;
    int is_root = sched_coll_is_root(j, (size_t)k, gi, v);
    unsigned done = sched_coll_arrive_rooted(j, s->arrived, s->max_arrival, &s->x, (size_t)k, is_root, s->e[gi]->start[v]);
    if (!done) return;
    for (uint64_t p = j->part_off[k]; p < j->part_off[k + 1]; p++) {
        int pr = (j->rule[k] == LSIM_JOB_BCAST || j->rule[k] == LSIM_JOB_REDUCE) && p == j->root[k];
        if (!(done & (pr ? SCHED_ROOT_DONE : SCHED_OTHERS_DONE))) continue;
        uint32_t pg = j->part_gpu[p], pv = j->part_node[p];
        lsim_ns last = sched_coll_last(j, s->max_arrival, &s->x, (size_t)k, pr, s->e[pg]->start[pv]);
        sched_coll_finish(s->e[pg], pv, last, lsim_ns_add_sat(last, j->transfer[k]), s->waits ? s->waits[pg] : NULL);
        jpush(s, pg, pv);
    }
}

/* sched_drain's hook: a collective of the GPU being drained arrived. */
static int jhook(void *ctx, uint32_t v, int32_t k)
{
    jstate *s = ctx;
    jarrive(s, s->cur, v, k);
    return 0;
}

/* Which collective never completed, for the error: the first instance some
 * but not all of whose participants arrived. */
static int stuck_error(const lsim_job *j, lsim_engine *const *E, const uint32_t *arrived, uint64_t done,
                       uint64_t total, lsim_err *err)
{
    for (size_t k = 0; k < j->ninst; k++) {
        uint64_t np = j->part_off[k + 1] - j->part_off[k];
        if (arrived[k] && arrived[k] < np) {
            uint32_t g0 = j->part_gpu[j->part_off[k]];
            return lsim_err_set(err, LSIM_EINTERNAL,
                                "%s: a collective (instance %zu, %llu of %llu participants arrived) can never complete: "
                                "the ranks' collective orders do not agree",
                                E[g0]->g->source, k, (unsigned long long)arrived[k], (unsigned long long)np);
        }
    }
    return lsim_err_set(err, LSIM_EINTERNAL, "job: %llu of %llu nodes never became ready",
                        (unsigned long long)(total - done), (unsigned long long)total);
}

int lsim_job_run(const lsim_job *j, lsim_engine *const *E, lsim_ns *const *waits, lsim_err *err)
{
    return lsim_job_run_ex(j, E, waits, NULL, NULL, err);
}

int lsim_job_run_ex(const lsim_job *j, lsim_engine *const *E, lsim_ns *const *waits, lsim_job_progress_fn progress,
                    void *ctx, lsim_err *err)
{
    job_progress prog = {progress, ctx};
    int rc = 0;
    uint64_t total = 0, done = 0;
    size_t ni = j->ninst ? j->ninst : 1, ng = j->ngpus ? j->ngpus : 1;
    jstate s = {j, E, waits, NULL, NULL, {NULL, NULL}, NULL, {NULL, 0, NULL}, 0};
    s.arrived = lsim_calloc(ni, sizeof *s.arrived);
    s.max_arrival = lsim_malloc(ni * sizeof *s.max_arrival);
    s.x.arrived_x = lsim_calloc(ni, sizeof *s.x.arrived_x);
    s.x.max_x = lsim_malloc(ni * sizeof *s.x.max_x);
    s.n = lsim_calloc(ng, sizeof *s.n);
    s.wq.gpu = lsim_malloc(ng * sizeof *s.wq.gpu);
    s.wq.queued = lsim_calloc(ng, 1);
    if (!s.arrived || !s.max_arrival || !s.x.arrived_x || !s.x.max_x || !s.n || !s.wq.gpu || !s.wq.queued) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for the job's engine");
        goto cleanup;
    }
    for (size_t k = 0; k < j->ninst; k++) s.max_arrival[k] = s.x.max_x[k] = INT64_MIN;
    for (uint32_t i = 0; i < j->ngpus; i++) {
        const lsim_graph *g = E[i]->g;
        total += g->n;
        sched_reset(E[i]);
        if (waits) memset(waits[i], 0, (g->n ? g->n : 1) * sizeof(lsim_ns));
    }
    for (uint32_t i = 0; i < j->ngpus; i++)
        for (uint32_t v = 0; v < E[i]->g->n; v++) {
            if (E[i]->indeg[v]) continue;
            sched_resolve(E[i], v);
            int32_t k = lsim_job_inst(j->inst_of[i], E[i]->g, v);
            if (k < 0) jpush(&s, i, v);
            else jarrive(&s, i, v, k);
        }
    while (s.wq.n) {
        /* the GPU on top stays queued while it runs (work it gives itself
         * must not queue it twice); GPUs it completes collectives for are
         * queued above it and run after it blocks */
        size_t at = s.wq.n - 1;
        uint32_t gi = s.wq.gpu[at];
        int hrc = 0; /* jhook never fails */
        s.cur = gi;
        uint64_t before = done;
        done += sched_drain(E[gi], &s.n[gi], j->inst_of[gi], jhook, &s, &hrc);
        sched_wq_remove(&s.wq, at);
        tell(&prog, "simulating", before, done, total, 20); /* every Mi nodes */
    }
    if (done != total) rc = stuck_error(j, E, s.arrived, done, total, err);
cleanup:
    lsim_free(s.wq.queued);
    lsim_free(s.wq.gpu);
    lsim_free(s.n);
    lsim_free(s.max_arrival);
    lsim_free(s.arrived);
    lsim_free(s.x.arrived_x);
    lsim_free(s.x.max_x);
    return rc;
}
