/* An independent reference for the replay breakdown (metrics.h), for tests.
 *
 * src/metrics.c sweeps the sorted interval end points once with counters.
 * This helper shares none of that code and none of its method: it merges
 * the intervals of each category into sorted disjoint lists (union), and
 * combines the lists with intersection and difference, straight from the
 * definitions in metrics.h:
 *
 *   C = union of non-communication GPU work, T = union of collectives
 *   transferring, W = union of collectives waiting for peers (a collective's
 *   first `wait` ns, clipped to [0, its length]; a pipeline send or
 *   receive's waiting is in no set: a bubble, idle), M = T u W, all clipped to
 *   the span [s0, s1);
 *   overlapped = |C n M|, exposed compute = |C| - overlapped,
 *   exposed communication = |M| - overlapped, other = (s1 - s0) - |C u M|,
 *   exposed_comm_wait = |W - T - C|;
 *   duty cycle of bin k = |(C u M) n bin k| / length of bin k (the last bin
 *   may be shorter).
 *
 * Quadratic nowhere: sort + linear merges, so it also runs over real
 * traces. Plain C11, no lumosim headers beyond the time type. */
#ifndef LSIM_TEST_ORACLE_H
#define LSIM_TEST_ORACLE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t or_ns;

typedef struct or_iv {
    or_ns a, b; /* [a, b) */
} or_iv;

typedef struct or_set {
    or_iv *v;
    size_t n, cap;
} or_set;

static int or_push(or_set *s, or_ns a, or_ns b)
{
    if (b <= a) return 0; /* empty intervals cover nothing */
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 64;
        or_iv *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) return -1;
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = (or_iv){a, b};
    return 0;
}

static void or_free(or_set *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int or_cmp(const void *x, const void *y)
{
    const or_iv *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

/* Clip to [s0, s1), sort, merge overlapping and touching intervals. */
static void or_normalize(or_set *s, or_ns s0, or_ns s1)
{
    size_t w = 0;
    for (size_t i = 0; i < s->n; i++) {
        or_ns a = s->v[i].a < s0 ? s0 : s->v[i].a, b = s->v[i].b > s1 ? s1 : s->v[i].b;
        if (b > a) s->v[w++] = (or_iv){a, b};
    }
    s->n = w;
    if (!w) return;
    qsort(s->v, s->n, sizeof *s->v, or_cmp);
    w = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (s->v[i].a <= s->v[w].b) {
            if (s->v[i].b > s->v[w].b) s->v[w].b = s->v[i].b;
        } else {
            s->v[++w] = s->v[i];
        }
    }
    s->n = w + 1;
}

static or_ns or_measure(const or_set *s)
{
    or_ns m = 0;
    for (size_t i = 0; i < s->n; i++) m += s->v[i].b - s->v[i].a;
    return m;
}

/* Normalized inputs; out is normalized. */
static int or_intersect(const or_set *x, const or_set *y, or_set *out)
{
    size_t i = 0, j = 0;
    out->n = 0;
    while (i < x->n && j < y->n) {
        or_ns a = x->v[i].a > y->v[j].a ? x->v[i].a : y->v[j].a;
        or_ns b = x->v[i].b < y->v[j].b ? x->v[i].b : y->v[j].b;
        if (b > a && or_push(out, a, b)) return -1;
        if (x->v[i].b < y->v[j].b) i++;
        else j++;
    }
    return 0;
}

static int or_union(const or_set *x, const or_set *y, or_set *out, or_ns s0, or_ns s1)
{
    out->n = 0;
    for (size_t i = 0; i < x->n; i++)
        if (or_push(out, x->v[i].a, x->v[i].b)) return -1;
    for (size_t i = 0; i < y->n; i++)
        if (or_push(out, y->v[i].a, y->v[i].b)) return -1;
    or_normalize(out, s0, s1);
    return 0;
}

/* x - y, both normalized. */
static int or_subtract(const or_set *x, const or_set *y, or_set *out)
{
    size_t j = 0;
    out->n = 0;
    for (size_t i = 0; i < x->n; i++) {
        or_ns a = x->v[i].a, b = x->v[i].b;
        while (j < y->n && y->v[j].b <= a) j++;
        size_t k = j;
        while (a < b && k < y->n && y->v[k].a < b) {
            if (y->v[k].a > a && or_push(out, a, y->v[k].a)) return -1;
            if (y->v[k].b > a) a = y->v[k].b;
            k++;
        }
        if (a < b && or_push(out, a, b)) return -1;
    }
    return 0;
}

/* What the oracle is fed: GPU intervals by category. */
typedef struct or_input {
    or_set comp, xfer, wait;
} or_input;

typedef struct or_breakdown {
    or_ns exposed_compute, overlapped, exposed_comm, other, exposed_comm_wait;
} or_breakdown;

/* A GPU interval [s, e): compute, or a collective of which the first
 * `wait` ns are waiting (clipped to [0, e - s]). */
static int or_add(or_input *in, int is_comm, or_ns s, or_ns e, or_ns wait)
{
    if (!is_comm) return or_push(&in->comp, s, e);
    if (e < s) return 0;
    if (wait < 0) wait = 0;
    if (wait > e - s) wait = e - s;
    if (or_push(&in->wait, s, s + wait)) return -1;
    return or_push(&in->xfer, s + wait, e);
}

static void or_input_free(or_input *in)
{
    or_free(&in->comp);
    or_free(&in->xfer);
    or_free(&in->wait);
}

/* The breakdown over [s0, s1), and if bins is given the active fraction of
 * each of the nbins bins of bin_ns (the last one ends at s1). Normalizes the
 * input sets in place. 0, or -1 out of memory. */
static int or_compute(or_input *in, or_ns s0, or_ns s1, or_breakdown *bd, double *bins, size_t nbins, or_ns bin_ns)
{
    int rc = -1;
    or_set M = {0}, CM = {0}, CnM = {0}, WT = {0}, WTC = {0}, B = {0}, A = {0};
    memset(bd, 0, sizeof *bd);
    if (s1 < s0) s1 = s0;
    or_normalize(&in->comp, s0, s1);
    or_normalize(&in->xfer, s0, s1);
    or_normalize(&in->wait, s0, s1);
    if (or_union(&in->xfer, &in->wait, &M, s0, s1) || or_union(&in->comp, &M, &CM, s0, s1) ||
        or_intersect(&in->comp, &M, &CnM) || or_subtract(&in->wait, &in->xfer, &WT) || or_subtract(&WT, &in->comp, &WTC))
        goto out;
    bd->overlapped = or_measure(&CnM);
    bd->exposed_compute = or_measure(&in->comp) - bd->overlapped;
    bd->exposed_comm = or_measure(&M) - bd->overlapped;
    bd->other = (s1 - s0) - or_measure(&CM);
    bd->exposed_comm_wait = or_measure(&WTC);
    for (size_t k = 0; bins && k < nbins; k++) {
        or_ns a = s0 + (or_ns)k * bin_ns, b = a + bin_ns > s1 ? s1 : a + bin_ns;
        B.n = 0;
        if (or_push(&B, a, b) || or_intersect(&CM, &B, &A)) goto out;
        bins[k] = b > a ? (double)or_measure(&A) / (double)(b - a) : 0.0;
    }
    rc = 0;
out:
    or_free(&M);
    or_free(&CM);
    or_free(&CnM);
    or_free(&WT);
    or_free(&WTC);
    or_free(&B);
    or_free(&A);
    return rc;
}

#endif
