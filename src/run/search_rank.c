/* The configuration search's ranking model (search.h): the order a budget
 * spends itself in, what a candidate's step processes, and the ranking of
 * the simulated candidates. Every order is total (ties by candidate
 * index), so it is the same for any sort, any rank count and any sharding;
 * the sorts go through a key per candidate, not through the candidates. */
#include <stdlib.h>
#include "lumosim/alloc.h"

#include "lumosim/search.h"

/* A candidate's sort key: k ascending, then step ascending, then i. */
typedef struct rank_key {
    double k;
    lsim_ns step;
    size_t i;
} rank_key;

static int cmp_key(const void *x, const void *y)
{
    const rank_key *a = x, *b = y;
    if (a->k != b->k) return a->k < b->k ? -1 : 1;
    if (a->step != b->step) return a->step < b->step ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* order[0..n) sorted by the keys made by key_of (ctx: its context). */
static int sort_by(size_t *order, size_t n, rank_key (*key_of)(const void *ctx, size_t i), const void *ctx,
                   lsim_err *err)
{
    rank_key *k = lsim_malloc((n ? n : 1) * sizeof *k);
    if (!k) return lsim_err_set(err, LSIM_ENOMEM, "out of memory ranking %zu candidates", n);
    for (size_t j = 0; j < n; j++) k[j] = key_of(ctx, order[j]);
    qsort(k, n, sizeof *k, cmp_key);
    for (size_t j = 0; j < n; j++) order[j] = k[j].i;
    free(k);
    return 0;
}

typedef struct proxy_ctx {
    const lsim_search_space *s;
    const lsim_search_cand *c;
} proxy_ctx;

/* The analytic proxy of a candidate's step: the 1F1B bubble (pp - 1) / (m
 * V) and the recomputed share (full: one more forward of three passes,
 * selective: a tenth of that). */
static rank_key proxy_key(const void *ctx, size_t i)
{
    const proxy_ctx *p = ctx;
    const lsim_search_cand *c = &p->c[i];
    double m = (double)p->s->base.global_batch / ((double)c->mb * c->dp);
    double bubble = (c->pp - 1) / (m * c->vstages);
    double rc = c->recompute == LSIM_RC_FULL ? 1.0 / 3 : c->recompute == LSIM_RC_SELECTIVE ? 1.0 / 30 : 0;
    return (rank_key){bubble + rc, 0, i};
}

int lsim_search_order_proxy(const lsim_search_space *s, const lsim_search_cand *c, size_t *order, size_t n,
                            lsim_err *err)
{
    proxy_ctx p = {s, c};
    return sort_by(order, n, proxy_key, &p, err);
}

static const char *const UNIT_NAME[] = {"samples/s", "micro-batches/s", "batches/s"};

const char *lsim_search_unit_name(lsim_search_unit u)
{
    return u >= LSIM_SEARCH_SAMPLES && u <= LSIM_SEARCH_BATCHES ? UNIT_NAME[u] : "?";
}

lsim_search_unit lsim_search_unit_of(const lsim_search_cand *c, size_t n, int global_batch)
{
    if (global_batch > 0) return LSIM_SEARCH_SAMPLES;
    int m = 0, b = 0;
    for (size_t i = 0; i < n; i++) m |= c[i].from_req[4] > 0, b |= c[i].mb > 0;
    return !m ? LSIM_SEARCH_BATCHES : b ? LSIM_SEARCH_SAMPLES : LSIM_SEARCH_MICROBATCHES;
}

double lsim_search_per_step(const lsim_search_cand *x, int global_batch)
{
    if (global_batch > 0) return (double)global_batch;
    double m = x->from_req[4] > 0 ? x->from_req[4] : 1, b = x->from_req[4] > 0 && x->mb > 0 ? x->mb : 1;
    return (double)x->dp * m * b;
}

double lsim_search_throughput(const lsim_search_cand *x, int global_batch)
{
    return x->step > 0 ? lsim_search_per_step(x, global_batch) / ((double)x->step / 1e9) : 0;
}

typedef struct rank_ctx {
    const lsim_search_cand *c;
    int global_batch, by_step;
} rank_ctx;

/* by step: the shortest first; by throughput: the highest first (its
 * negation ascending), ties by step */
static rank_key rank_of(const void *ctx, size_t i)
{
    const rank_ctx *r = ctx;
    double k = r->by_step ? 0 : -lsim_search_throughput(&r->c[i], r->global_batch);
    return (rank_key){k, r->c[i].step, i};
}

int lsim_search_rank(const lsim_search_cand *c, size_t *order, size_t n, int global_batch, int by_step,
                     lsim_err *err)
{
    rank_ctx r = {c, global_batch, by_step};
    return sort_by(order, n, rank_of, &r, err);
}
