/* Exact symmetry reduction: classes by colour refinement and the quotient
 * job (include/lumosim/symmetry.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/alloc.h"
#include "lumosim/symmetry.h"

/* SplitMix64's finaliser: the refinement's hashes only propose classes,
 * the quotient's check decides exactness, so a collision costs the
 * reduction, never a wrong result. */
static uint64_t fmix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t mix(uint64_t h, uint64_t x) { return fmix(h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2))); }

/* A GPU's key for one round: colours are numbered by sorting these. */
typedef struct ckey {
    uint64_t a, b, c;
    uint32_t gpu;
} ckey;

static int cmp_ckey(const void *x, const void *y)
{
    const ckey *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    if (p->c != q->c) return p->c < q->c ? -1 : 1;
    return (p->gpu > q->gpu) - (p->gpu < q->gpu);
}

/* Number the keys' distinct values into col (by GPU); the count. */
static size_t number(ckey *k, size_t n, uint32_t *col)
{
    qsort(k, n, sizeof *k, cmp_ckey);
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && (k[i].a != k[i - 1].a || k[i].b != k[i - 1].b || k[i].c != k[i - 1].c)) c++;
        col[k[i].gpu] = (uint32_t)c;
    }
    return n ? c + 1 : 0;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static int is_root(const lsim_job *j, size_t k, uint64_t p)
{
    return (j->rule[k] == LSIM_JOB_BCAST || j->rule[k] == LSIM_JOB_REDUCE) && p == j->root[k];
}

/* One refinement round: h[g] gets the sum of g's participations' hashes
 * under the colours col. buf: room for the largest instance. */
static void round_hashes(const lsim_job *j, const uint32_t *col, uint64_t *h, uint64_t *buf)
{
    memset(h, 0, j->ngpus * sizeof *h);
    for (size_t k = 0; k < j->ninst; k++) {
        size_t m = 0;
        for (uint64_t p = j->part_off[k]; p < j->part_off[k + 1]; p++)
            buf[m++] = ((uint64_t)col[j->part_gpu[p]] << 1) | (uint64_t)is_root(j, k, p);
        qsort(buf, m, sizeof *buf, cmp_u64);
        uint64_t ih = mix(mix(j->rule[k], (uint64_t)j->transfer[k]), m);
        for (size_t a = 0; a < m; a++)
            if (!a || buf[a] != buf[a - 1]) ih = mix(ih, buf[a]);
        for (uint64_t p = j->part_off[k]; p < j->part_off[k + 1]; p++)
            h[j->part_gpu[p]] += mix(ih, ((uint64_t)j->part_node[p] << 1) | (uint64_t)is_root(j, k, p));
    }
}

int lsim_sym_classes(const lsim_job *j, uint32_t *rep, size_t *nclass, lsim_err *err)
{
    size_t n = j->ngpus, maxp = 1;
    int rc = 0;
    ckey *k = lsim_malloc((n ? n : 1) * sizeof *k);
    uint32_t *col = lsim_malloc((n ? n : 1) * sizeof *col);
    uint64_t *h = lsim_malloc((n ? n : 1) * sizeof *h), *buf = NULL;
    for (size_t q = 0; q < j->ninst; q++)
        if (j->part_off[q + 1] - j->part_off[q] > maxp) maxp = j->part_off[q + 1] - j->part_off[q];
    buf = lsim_malloc(maxp * sizeof *buf);
    if (!k || !col || !h || !buf) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for the symmetry classes");
        goto cleanup;
    }
    /* the first colour: what the GPU's own engine reads */
    for (size_t i = 0; i < n; i++) {
        const lsim_graph *g = j->graphs[i];
        const void *s = j->obs_wait[i] ? (const void *)g : g->share_refs ? (const void *)g->share_refs : (const void *)g;
        k[i] = (ckey){(uint64_t)(uintptr_t)s, (uint64_t)g->t0, (uint64_t)j->clock_offset[i], (uint32_t)i};
    }
    size_t c = number(k, n, col);
    for (;;) {
        round_hashes(j, col, h, buf);
        for (size_t i = 0; i < n; i++) k[i] = (ckey){col[i], h[i], 0, (uint32_t)i};
        size_t c2 = number(k, n, col);
        if (c2 == c) break; /* refinement only splits: the same count is the same partition */
        c = c2;
    }
    /* the representative: the lowest index of the class (h reused) */
    for (size_t i = 0; i < n; i++) h[i] = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (h[col[i]] == UINT64_MAX) h[col[i]] = i;
        rep[i] = (uint32_t)h[col[i]];
    }
    *nclass = c;
cleanup:
    lsim_free(k);
    lsim_free(col);
    lsim_free(h);
    lsim_free(buf);
    return rc;
}

/* ----------------------------------------------------------- the quotient */

/* An image's member: (representative's quotient index, node, root). */
typedef struct imem {
    uint32_t q, node;
    uint8_t root;
} imem;

static int cmp_imem(const void *x, const void *y)
{
    const imem *a = x, *b = y;
    if (a->q != b->q) return a->q < b->q ? -1 : 1;
    if (a->node != b->node) return a->node < b->node ? -1 : 1;
    return (a->root > b->root) - (a->root < b->root);
}

/* Instance k's image into buf (sorted, distinct); its size, or 0 when two
 * participants of one class and node differ in role (not exact). */
static size_t image(const lsim_job *j, size_t k, const uint32_t *rep, const uint32_t *qidx, imem *buf)
{
    size_t m = 0, u = 0;
    for (uint64_t p = j->part_off[k]; p < j->part_off[k + 1]; p++)
        buf[m++] = (imem){qidx[rep[j->part_gpu[p]]], j->part_node[p], (uint8_t)is_root(j, k, p)};
    qsort(buf, m, sizeof *buf, cmp_imem);
    for (size_t a = 0; a < m; a++) {
        if (u && buf[a].q == buf[u - 1].q && buf[a].node == buf[u - 1].node) {
            if (buf[a].root != buf[u - 1].root) return 0;
            continue;
        }
        buf[u++] = buf[a];
    }
    return u;
}

/* Instance k (image buf[0..m)) against the quotient q built so far: a new
 * quotient instance, or the same as the one its first member already has.
 * 1 exact so far, 0 not. */
static int place(const lsim_job *j, size_t k, const imem *buf, size_t m, lsim_job *q)
{
    int32_t have = q->inst_of[buf[0].q][buf[0].node];
    if (have >= 0) {
        uint64_t o = q->part_off[have];
        if (q->part_off[have + 1] - o != m || q->rule[have] != j->rule[k] || q->transfer[have] != j->transfer[k]) return 0;
        for (size_t a = 0; a < m; a++)
            if (q->part_gpu[o + a] != buf[a].q || q->part_node[o + a] != buf[a].node ||
                is_root(q, (size_t)have, o + a) != buf[a].root)
                return 0;
        return 1;
    }
    size_t qi = q->ninst++;
    uint64_t o = q->part_off[qi];
    q->rule[qi] = j->rule[k];
    q->transfer[qi] = j->transfer[k];
    q->root[qi] = 0;
    size_t roots = 0;
    for (size_t a = 0; a < m; a++) {
        if (q->inst_of[buf[a].q][buf[a].node] >= 0) return 0; /* a member in another image */
        q->inst_of[buf[a].q][buf[a].node] = (int32_t)qi;
        q->part_gpu[o + a] = buf[a].q;
        q->part_node[o + a] = buf[a].node;
        if (buf[a].root) {
            q->root[qi] = o + a;
            roots++;
        }
    }
    if ((j->rule[k] == LSIM_JOB_BCAST || j->rule[k] == LSIM_JOB_REDUCE) && roots != 1) return 0;
    q->part_off[qi + 1] = o + m;
    return 1;
}

/* The quotient's arrays for nrep GPUs (a bound on its instances and
 * participants: the full job's). */
static int quotient_new(const lsim_job *j, const uint32_t *qidx, size_t nrep, lsim_job **out)
{
    lsim_job *q = lsim_calloc(1, sizeof *q);
    if (!q) return LSIM_ENOMEM;
    *out = q;
    size_t ni = j->ninst ? j->ninst : 1, np = j->part_off[j->ninst] ? j->part_off[j->ninst] : 1;
    q->ngpus = nrep;
    q->inst_of = lsim_calloc(nrep ? nrep : 1, sizeof *q->inst_of);
    q->obs_wait = lsim_calloc(nrep ? nrep : 1, sizeof *q->obs_wait);
    q->clock_offset = lsim_calloc(nrep ? nrep : 1, sizeof *q->clock_offset);
    q->part_off = lsim_calloc(ni + 1, sizeof *q->part_off);
    q->part_gpu = lsim_malloc(np * sizeof *q->part_gpu);
    q->part_node = lsim_malloc(np * sizeof *q->part_node);
    q->transfer = lsim_malloc(ni * sizeof *q->transfer);
    q->rule = lsim_calloc(ni, sizeof *q->rule);
    q->root = lsim_calloc(ni, sizeof *q->root);
    if (!q->inst_of || !q->obs_wait || !q->clock_offset || !q->part_off || !q->part_gpu || !q->part_node ||
        !q->transfer || !q->rule || !q->root)
        return LSIM_ENOMEM;
    for (size_t i = 0; i < j->ngpus; i++) {
        if (qidx[i] == UINT32_MAX) continue;
        size_t nn = j->graphs[i]->n;
        int32_t *a = lsim_malloc((nn ? nn : 1) * sizeof *a);
        if (!(q->inst_of[qidx[i]] = a)) return LSIM_ENOMEM;
        for (size_t v = 0; v < nn; v++) a[v] = -1;
        q->clock_offset[qidx[i]] = j->clock_offset[i];
    }
    q->ngroups = j->ngroups;
    q->uncoupled_p2p = j->uncoupled_p2p;
    q->p2p_inst = j->p2p_inst;
    q->rooted_inst = j->rooted_inst;
    q->rootless_inst = j->rootless_inst;
    return 0;
}

int lsim_sym_quotient(const lsim_job *j, const uint32_t *rep, uint32_t *qidx, lsim_job **out, lsim_err *err)
{
    size_t nrep = 0, maxp = 1;
    lsim_job *q = NULL;
    imem *buf = NULL;
    int exact = 1, rc = 0;
    *out = NULL;
    for (size_t i = 0; i < j->ngpus; i++) qidx[i] = rep[i] == i ? (uint32_t)nrep++ : UINT32_MAX;
    for (size_t k = 0; k < j->ninst; k++)
        if (j->part_off[k + 1] - j->part_off[k] > maxp) maxp = j->part_off[k + 1] - j->part_off[k];
    if (!(buf = lsim_malloc(maxp * sizeof *buf)) || quotient_new(j, qidx, nrep, &q)) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for the symmetry quotient");
        goto cleanup;
    }
    for (size_t k = 0; k < j->ninst && exact; k++) {
        size_t m = image(j, k, rep, qidx, buf);
        exact = m && place(j, k, buf, m, q);
    }
    /* a representative's collective nodes are exactly its images' members */
    for (size_t i = 0; i < j->ngpus && exact; i++) {
        if (qidx[i] == UINT32_MAX) continue;
        const int32_t *a = j->inst_of[i], *b = q->inst_of[qidx[i]];
        for (size_t v = 0; v < j->graphs[i]->n && exact; v++)
            if ((a[v] >= 0) != (b[v] >= 0)) exact = 0;
    }
    if (!exact) goto cleanup;
    q->ninst_job = q->ninst;
    *out = q;
    q = NULL;
cleanup:
    lsim_job_free(q);
    lsim_free(buf);
    return rc;
}
