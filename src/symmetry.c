/* Exact symmetry reduction: classes by colour refinement and the quotient
 * job (include/lumosim/symmetry.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/alloc.h"
#include "lumosim/symmetry.h"
#include "util.h"

/* SplitMix64's finaliser: the refinement's hashes only propose classes,
 * the quotient's check decides exactness, so a collision costs the
 * reduction, never a wrong result. */
#define fmix lsim_mix64

static uint64_t mix(uint64_t h, uint64_t x) { return fmix(h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2))); }

/* Words of n bytes into h (a trailing partial word zero-padded), four
 * words a step into four lanes folded at the end. Why four: one lane makes
 * every word wait for the previous word's two multiplies, and hashing each
 * GPU's columns was a third of a MoE search (a candidate's replicas are
 * synthesized, so none shares a structure object); four independent
 * chains keep the multiplier busy. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t a[4] = {h, h ^ 0x243f6a8885a308d3ULL, h ^ 0x13198a2e03707344ULL, h ^ 0xa4093822299f31d0ULL};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, b + i, 32);
        for (int k = 0; k < 4; k++) a[k] = fmix(a[k] ^ w[k]) + 0x9e3779b97f4a7c15ULL;
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        a[0] = fmix(a[0] ^ w) + 0x9e3779b97f4a7c15ULL;
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, b + i, n - i);
        a[1] = fmix(a[1] ^ w) + 0x9e3779b97f4a7c15ULL;
    }
    for (int k = 1; k < 4; k++) a[0] = mix(a[0], a[k]);
    return fmix(a[0] ^ n);
}

uint64_t lsim_sym_structure_hash(const lsim_graph *g)
{
    size_t n = g->n, e = (size_t)g->nedges;
    uint64_t h = mix(n, e);
#define HASH_(field, type) if (n) h = hash_bytes(h, g->field, n * sizeof(type));
    LSIM_GRAPH_COLUMNS(HASH_)
#undef HASH_
    h = hash_bytes(h, g->in_off, (n + 1) * sizeof *g->in_off);
    if (e) {
        h = hash_bytes(h, g->in_src, e * sizeof *g->in_src);
        h = hash_bytes(h, g->in_delay, e * sizeof *g->in_delay);
        h = hash_bytes(h, g->in_class, e * sizeof *g->in_class);
    }
    return h;
}

/* A GPU's key for one round: colours are numbered by sorting these. */
typedef struct ckey {
    lsim_sym_key k;
    uint32_t gpu;
} ckey;

static int cmp_ckey(const void *x, const void *y)
{
    const ckey *p = x, *q = y;
    const uint64_t a[4] = {p->k.structure, p->k.t0, p->k.offset, p->k.own};
    const uint64_t b[4] = {q->k.structure, q->k.t0, q->k.offset, q->k.own};
    for (int w = 0; w < 4; w++)
        if (a[w] != b[w]) return a[w] < b[w] ? -1 : 1;
    return (p->gpu > q->gpu) - (p->gpu < q->gpu);
}

/* Number the keys' distinct values into col (by GPU); the count. */
static size_t number(ckey *k, size_t n, uint32_t *col)
{
    qsort(k, n, sizeof *k, cmp_ckey);
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && cmp_ckey(&(ckey){k[i].k, 0}, &(ckey){k[i - 1].k, 0})) c++;
        col[k[i].gpu] = (uint32_t)c;
    }
    return n ? c + 1 : 0;
}

typedef struct sptr {
    uintptr_t p;
    uint32_t gpu;
} sptr;

static int cmp_sptr(const void *x, const void *y)
{
    const sptr *a = x, *b = y;
    if (a->p != b->p) return a->p < b->p ? -1 : 1;
    return (a->gpu > b->gpu) - (a->gpu < b->gpu);
}

int lsim_sym_keys(const lsim_job *j, lsim_sym_key *keys, lsim_err *err)
{
    size_t n = j->ngpus;
    sptr *s = lsim_malloc((n ? n : 1) * sizeof *s);
    if (!s) return lsim_err_set(err, LSIM_ENOMEM, "out of memory for the symmetry classes");
    /* one hash per structure object: the GPUs sharing one are sorted together */
    for (size_t i = 0; i < n; i++) {
        const lsim_graph *g = j->graphs[i];
        s[i] = (sptr){(uintptr_t)(g->share_refs ? (const void *)g->share_refs : (const void *)g), (uint32_t)i};
    }
    qsort(s, n, sizeof *s, cmp_sptr);
    uint64_t h = 0;
    for (size_t a = 0; a < n; a++) {
        uint32_t i = s[a].gpu;
        const lsim_graph *g = j->graphs[i];
        if (!a || s[a].p != s[a - 1].p) h = lsim_sym_structure_hash(g);
        keys[i] = (lsim_sym_key){h, (uint64_t)g->t0, (uint64_t)j->clock_offset[i], j->obs_wait[i] ? (uint64_t)i + 1 : 0};
    }
    lsim_free(s);
    return 0;
}

int lsim_sym_same_members(const lsim_job *j, const uint32_t *rep)
{
    for (size_t i = 0; i < j->ngpus; i++) {
        const lsim_graph *a = j->graphs[i], *b = j->graphs[rep[i]];
        if (rep[i] == i) continue;
        if (j->obs_wait[i] || j->obs_wait[rep[i]] || a->t0 != b->t0 || j->clock_offset[i] != j->clock_offset[rep[i]])
            return 0;
        if (!(a->share_refs && a->share_refs == b->share_refs) && !lsim_graph_same_structure(a, b)) return 0;
    }
    return 1;
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

int lsim_sym_classes(const lsim_job *j, const lsim_sym_key *keys, uint32_t *rep, size_t *nclass, lsim_err *err)
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
    for (size_t i = 0; i < n; i++) k[i] = (ckey){keys[i], (uint32_t)i};
    size_t c = number(k, n, col);
    for (;;) {
        round_hashes(j, col, h, buf);
        for (size_t i = 0; i < n; i++) k[i] = (ckey){{col[i], h[i], 0, 0}, (uint32_t)i};
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

/* An image's member: (representative's quotient index, node, root), and
 * the node's collective record. */
typedef struct imem {
    uint32_t q, node, coll;
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
        buf[m++] = (imem){qidx[rep[j->part_gpu[p]]], j->part_node[p], j->part_coll[p], (uint8_t)is_root(j, k, p)};
    qsort(buf, m, sizeof *buf, cmp_imem);
    for (size_t a = 0; a < m; a++) {
        if (u && buf[a].q == buf[u - 1].q && buf[a].node == buf[u - 1].node) {
            if (buf[a].root != buf[u - 1].root || buf[a].coll != buf[u - 1].coll) return 0;
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
    int32_t have = q->inst_of[buf[0].q][buf[0].coll];
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
        if (q->inst_of[buf[a].q][buf[a].coll] >= 0) return 0; /* a member in another image */
        q->inst_of[buf[a].q][buf[a].coll] = (int32_t)qi;
        q->part_gpu[o + a] = buf[a].q;
        q->part_node[o + a] = buf[a].node;
        q->part_coll[o + a] = buf[a].coll;
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
static int quotient_new(const lsim_job *j, const size_t *coll_count, const uint32_t *qidx, size_t nrep, lsim_job **out)
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
    q->part_coll = lsim_malloc(np * sizeof *q->part_coll);
    q->transfer = lsim_malloc(ni * sizeof *q->transfer);
    q->rule = lsim_calloc(ni, sizeof *q->rule);
    q->root = lsim_calloc(ni, sizeof *q->root);
    if (!q->inst_of || !q->obs_wait || !q->clock_offset || !q->part_off || !q->part_gpu || !q->part_node ||
        !q->part_coll || !q->transfer || !q->rule || !q->root)
        return LSIM_ENOMEM;
    for (size_t i = 0; i < j->ngpus; i++) {
        if (qidx[i] == UINT32_MAX) continue;
        size_t nc = coll_count[i];
        int32_t *a = lsim_malloc((nc ? nc : 1) * sizeof *a);
        if (!(q->inst_of[qidx[i]] = a)) return LSIM_ENOMEM;
        for (size_t c = 0; c < nc; c++) a[c] = -1;
        q->clock_offset[qidx[i]] = j->clock_offset[i];
    }
    q->ngroups = j->ngroups;
    q->uncoupled_p2p = j->uncoupled_p2p;
    q->p2p_inst = j->p2p_inst;
    q->rooted_inst = j->rooted_inst;
    q->rootless_inst = j->rootless_inst;
    return 0;
}

int lsim_sym_quotient(const lsim_job *j, const uint32_t *rep, const size_t *node_count, const size_t *coll_count,
                      uint32_t *qidx, lsim_job **out, lsim_err *err)
{
    size_t nrep = 0, maxp = 1;
    lsim_job *q = NULL;
    imem *buf = NULL;
    int exact = 1, rc = 0;
    *out = NULL;
    for (size_t i = 0; i < j->ngpus; i++) qidx[i] = rep[i] == i ? (uint32_t)nrep++ : UINT32_MAX;
    for (size_t k = 0; k < j->ninst; k++)
        if (j->part_off[k + 1] - j->part_off[k] > maxp) maxp = j->part_off[k + 1] - j->part_off[k];
    if (!(buf = lsim_malloc(maxp * sizeof *buf)) || quotient_new(j, coll_count, qidx, nrep, &q)) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for the symmetry quotient");
        goto cleanup;
    }
    for (size_t k = 0; k < j->ninst && exact; k++) {
        size_t m = 0;
        for (uint64_t p = j->part_off[k]; p < j->part_off[k + 1] && exact; p++)
            if (j->part_node[p] >= node_count[rep[j->part_gpu[p]]] || j->part_coll[p] >= coll_count[rep[j->part_gpu[p]]])
                exact = 0; /* no such node or record on the representative */
        if (exact) m = image(j, k, rep, qidx, buf);
        exact = exact && m && place(j, k, buf, m, q);
    }
    /* A representative's collective nodes are exactly its images' members:
     * each of its participations is a member of its instance's image, the
     * members are distinct, so equal counts make equal sets. */
    uint64_t own = 0;
    for (uint64_t p = 0; exact && p < j->part_off[j->ninst]; p++) own += rep[j->part_gpu[p]] == j->part_gpu[p];
    if (exact && own != q->part_off[q->ninst]) exact = 0;
    if (!exact) goto cleanup;
    q->ninst_job = q->ninst;
    *out = q;
    q = NULL;
cleanup:
    lsim_job_free(q);
    lsim_free(buf);
    return rc;
}
