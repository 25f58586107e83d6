/* The trace data model (see include/lumosim/trace.h): what is done to a
 * trace already in memory. Reading one is src/read/kineto.c's; the graph build,
 * the job and the reports use these without reaching into the reader. */
#include "lumosim/trace.h"
#include "lumosim/alloc.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define COLL_NAME_(id, name) [id] = name,
static const char *const COLL_NAMES[] = {LSIM_COLL_KINDS(COLL_NAME_)};
#undef COLL_NAME_

const char *lsim_coll_kind_name(lsim_coll_kind k)
{
    return (unsigned)k < LSIM_COLL_NKINDS ? COLL_NAMES[k] : "other";
}

int lsim_coll_kind_parse(const char *name, lsim_coll_kind *out, lsim_err *err)
{
    int i = lsim_name_index(COLL_NAMES, LSIM_COLL_NKINDS, name);
    if (i < 0) return lsim_name_unknown("collective kind", COLL_NAMES, LSIM_COLL_NKINDS, name, err);
    *out = (lsim_coll_kind)i;
    return 0;
}

void lsim_trace_free(lsim_trace *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->npg; i++) free(t->pgs[i].ranks);
    free(t->pgs);
    free(t->colls);
    free(t->rows);
    free(t->syncs);
    free(t->gemms);
    free(t->autograd);
    free(t->kcfg);
    free(t->ev);
    lsim_strtab_free(t->strings);
    free(t->path);
    free(t);
}

void lsim_trace_drop_events(lsim_trace *t)
{
    if (!t) return;
    free(t->ev);
    t->ev = NULL;
    t->nev = t->capev = 0;
    free(t->gemms); /* indexes the events */
    t->gemms = NULL;
    t->ngemm = t->capgemm = 0;
    free(t->autograd); /* indexes the events too */
    t->autograd = NULL;
    t->nautograd = t->capautograd = 0;
    free(t->kcfg); /* and so does this one */
    t->kcfg = NULL;
    t->nkcfg = t->capkcfg = 0;
}

/* The entry for event ev in a side table sorted by ev, whose entries
 * (size bytes each) begin with their uint64_t ev (lsim_kernel_cfg,
 * lsim_autograd_op); NULL when it has none. */
_Static_assert(offsetof(lsim_kernel_cfg, ev) == 0 && offsetof(lsim_autograd_op, ev) == 0,
               "side tables begin with their event index");

static const void *side_entry(const void *base, size_t n, size_t size, size_t ev)
{
    const char *b = base;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t x;
        memcpy(&x, b + mid * size, sizeof x);
        if (x < ev) lo = mid + 1;
        else hi = mid;
    }
    uint64_t x = 0;
    if (lo < n) memcpy(&x, b + lo * size, sizeof x);
    return lo < n && x == ev ? b + lo * size : NULL;
}

const lsim_kernel_cfg *lsim_trace_kcfg_of(const lsim_trace *t, size_t ev)
{
    return side_entry(t->kcfg, t->nkcfg, sizeof *t->kcfg, ev);
}

const lsim_autograd_op *lsim_trace_autograd_of(const lsim_trace *t, size_t ev)
{
    return side_entry(t->autograd, t->nautograd, sizeof *t->autograd, ev);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int lsim_trace_row_ranks(const lsim_trace *t, int32_t **ranks, size_t *n)
{
    *ranks = NULL;
    *n = 0;
    int32_t *r = lsim_malloc((t->nrows ? t->nrows : 1) * sizeof *r);
    if (!r) return LSIM_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < t->nrows; i++)
        if (t->rows[i].rank >= 0) r[k++] = t->rows[i].rank;
    qsort(r, k, sizeof *r, cmp_i32);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || r[u - 1] != r[i]) r[u++] = r[i];
    if (!u) {
        free(r);
        return 0;
    }
    *ranks = r;
    *n = u;
    return 0;
}

/* Why in place: a merged file is read once per rank (lsim_cli_load), and
 * each copy keeps only its rank's events, so peak memory is one file's. */
int lsim_trace_keep_rank(lsim_trace *t, int32_t rank, int32_t world, lsim_err *err)
{
    int64_t *to = lsim_malloc((t->nev ? t->nev : 1) * sizeof *to);
    if (!to) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", t->path);
    size_t k = 0, nev = t->nev;
    for (size_t i = 0; i < nev; i++) {
        if (t->rows[t->ev[i].row].rank != rank) {
            to[i] = -1;
            continue;
        }
        to[i] = (int64_t)k;
        t->ev[k++] = t->ev[i];
    }
    t->nev = k;
    size_t g = 0;
    for (size_t i = 0; i < t->ngemm; i++)
        if (t->gemms[i].ev < nev && to[t->gemms[i].ev] >= 0) {
            t->gemms[g] = t->gemms[i];
            t->gemms[g++].ev = (uint64_t)to[t->gemms[i].ev];
        }
    t->ngemm = g;
    size_t a = 0;
    for (size_t i = 0; i < t->nautograd; i++)
        if (t->autograd[i].ev < nev && to[t->autograd[i].ev] >= 0) {
            t->autograd[a] = t->autograd[i];
            t->autograd[a++].ev = (uint64_t)to[t->autograd[i].ev];
        }
    t->nautograd = a;
    size_t kc = 0;
    for (size_t i = 0; i < t->nkcfg; i++)
        if (t->kcfg[i].ev < nev && to[t->kcfg[i].ev] >= 0) {
            t->kcfg[kc] = t->kcfg[i];
            t->kcfg[kc++].ev = (uint64_t)to[t->kcfg[i].ev];
        }
    t->nkcfg = kc;
    free(to);
    t->rank = rank;
    t->world_size = world;
    if (!k) return lsim_err_set(err, LSIM_ETRACE, "%s: rank %d of the merged file has no events", t->path, rank);
    return 0;
}
