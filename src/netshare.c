/* Link sharing between concurrent network transfers: the flows of a job
 * and the max-min fair sweep over them (include/lumosim/netshare.h,
 * docs/network.md "Link sharing"). */
#include "lumosim/netshare.h"
#include "lumosim/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/graph.h"
#include "lumosim/metrics.h"
#include "lumosim/trace.h"

void lsim_netflows_free(lsim_netflows *f)
{
    if (!f) return;
    free(f->id);
    free(f->key);
    free(f->kind);
    free(f->parts);
    free(f->bytes);
    free(f->start);
    free(f->work);
    free(f->loff);
    free(f->link);
    free(f->dem);
    memset(f, 0, sizeof *f);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = lsim_realloc(*p, c * size);
    if (!q) return -1;
    *p = q;
    return 0;
}

int lsim_netflows_add(lsim_netflows *f, uint64_t id, uint64_t key, int kind, uint32_t parts, int64_t bytes,
                      lsim_ns start, lsim_ns work, const uint32_t *link, const double *dem, size_t nlinks,
                      lsim_err *err)
{
    size_t fc = f->cap, lc = f->lcap;
    if (grow((void **)&f->id, &fc, f->n + 1, sizeof *f->id) ||
        grow((void **)&f->key, &(size_t){f->cap}, f->n + 1, sizeof *f->key) ||
        grow((void **)&f->kind, &(size_t){f->cap}, f->n + 1, sizeof *f->kind) ||
        grow((void **)&f->parts, &(size_t){f->cap}, f->n + 1, sizeof *f->parts) ||
        grow((void **)&f->bytes, &(size_t){f->cap}, f->n + 1, sizeof *f->bytes) ||
        grow((void **)&f->start, &(size_t){f->cap}, f->n + 1, sizeof *f->start) ||
        grow((void **)&f->work, &(size_t){f->cap}, f->n + 1, sizeof *f->work) ||
        grow((void **)&f->loff, &(size_t){f->cap ? f->cap + 1 : 0}, f->n + 2, sizeof *f->loff) ||
        grow((void **)&f->link, &lc, f->nl + nlinks, sizeof *f->link) ||
        grow((void **)&f->dem, &(size_t){f->lcap}, f->nl + nlinks, sizeof *f->dem))
        return lsim_err_set(err, LSIM_ENOMEM, "link sharing: out of memory");
    f->cap = fc;
    f->lcap = lc;
    if (f->n == 0) f->loff[0] = 0;
    f->id[f->n] = id;
    f->key[f->n] = key;
    f->kind[f->n] = (uint8_t)(kind >= 0 && kind < LSIM_COLL_NKINDS ? kind : LSIM_COLL_OTHER);
    f->parts[f->n] = parts;
    f->bytes[f->n] = bytes;
    f->start[f->n] = start;
    f->work[f->n] = work;
    if (nlinks) {
        memcpy(f->link + f->nl, link, nlinks * sizeof *link);
        memcpy(f->dem + f->nl, dem, nlinks * sizeof *dem);
    }
    f->nl += nlinks;
    f->n++;
    f->loff[f->n] = f->nl;
    return 0;
}

/* ------------------------------------------------------------ collect */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int is_p2p(int kind) { return kind == LSIM_COLL_SEND || kind == LSIM_COLL_RECV; }

/* Scratch of one instance's links (grown as needed, reused). */
typedef struct lbuf {
    uint32_t *link, *tmp;
    double *dem;
    size_t n, cap, tcap;
} lbuf;

static int lb_push(lbuf *b, uint32_t l, double d)
{
    size_t c = b->cap;
    if (grow((void **)&b->link, &c, b->n + 1, sizeof *b->link) ||
        grow((void **)&b->dem, &(size_t){b->cap}, b->n + 1, sizeof *b->dem))
        return -1;
    b->cap = c;
    b->link[b->n] = l;
    b->dem[b->n++] = d;
    return 0;
}

/* Equal-cost paths per leaf uplink (ecmp_paths; 1: one aggregated link). */
static uint32_t paths_of(const lsim_topology *t) { return t->ecmp_paths > 1 ? (uint32_t)t->ecmp_paths : 1; }

/* Leaf links are modelled: a fat tree that is oversubscribed, or whose
 * uplinks are split into ECMP paths. */
static int has_leaves(const lsim_topology *t)
{
    return t->nodes_per_leaf > 0 && (t->oversubscription > 1 || paths_of(t) > 1);
}

/* ECMP's hash of one channel of a flow onto a path (splitmix64 of the
 * flow's key, the leaf, the direction and the channel): a function of
 * the job alone, the same on every MPI rank. */
static uint32_t ecmp_path(uint64_t id, uint32_t leaf, int dir, uint64_t c, uint32_t paths)
{
    uint64_t x = id * 0x9e3779b97f4a7c15ull ^ ((uint64_t)leaf << 20) ^ ((uint64_t)dir << 19) ^ c;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (uint32_t)(x % paths);
}

/* Demand d (in NICs) leaving (dir 0) or entering (1) leaf L: on one
 * aggregated link, or in ceil(d) equal channels each hashed onto a path. */
static int leaf_push(lbuf *b, const lsim_job *j, const lsim_topology *t, uint64_t id, uint32_t leaf, int dir, double d)
{
    uint32_t S = paths_of(t);
    uint64_t base = 2 * (uint64_t)j->ngpus;
    if (S == 1) return lb_push(b, (uint32_t)(base + 2 * (uint64_t)leaf + (uint64_t)dir), d);
    uint64_t k = d > 1 ? (uint64_t)ceil(d) : 1;
    for (uint64_t c = 0; c < k; c++) {
        uint64_t p = (uint64_t)leaf * S + ecmp_path(id, leaf, dir, c, S);
        if (lb_push(b, (uint32_t)(base + 2 * p + (uint64_t)dir), d / (double)k)) return -1;
    }
    return 0;
}

/* The fat tree's links of instance k (participants p0..p0+n; id its key,
 * netshare.h): per leaf touched, its uplink and downlink (or their ECMP
 * paths) with the NICs' worth of traffic that crosses them (netshare.h).
 * src/dst >= 0: a send from src to dst. */
static int leaf_links(const lsim_job *j, const lsim_topology *t, uint64_t id, uint64_t p0, uint64_t n, int kind,
                      int64_t src, int64_t dst, lbuf *b)
{
    uint32_t gpn = (uint32_t)t->gpus_per_node, npl = (uint32_t)t->nodes_per_leaf;
    if (src >= 0) {
        uint32_t ls = (uint32_t)src / gpn / npl, ld = (uint32_t)dst / gpn / npl;
        if (ls == ld) return 0;
        return leaf_push(b, j, t, id, ls, 0, 1.0) || leaf_push(b, j, t, id, ld, 1, 1.0);
    }
    size_t tc = b->tcap;
    if (grow((void **)&b->tmp, &tc, 2 * n, sizeof *b->tmp)) return -1;
    b->tcap = tc;
    uint32_t *node = b->tmp, *leaf = b->tmp + n;
    for (uint64_t i = 0; i < n; i++) {
        node[i] = j->part_gpu[p0 + i] / gpn;
        leaf[i] = node[i] / npl;
    }
    qsort(node, n, sizeof *node, cmp_u32);
    qsort(leaf, n, sizeof *leaf, cmp_u32);
    if (leaf[0] == leaf[n - 1]) return 0;
    /* channels: the fewest participants on one node (NCCL's rings, one per NIC) */
    uint64_t gmin = n;
    for (uint64_t i = 0, r = 1; i < n; i++, r++)
        if (i + 1 == n || node[i + 1] != node[i]) {
            if (r < gmin) gmin = r;
            r = 0;
        }
    for (uint64_t i = 0, r = 1; i < n; i++, r++)
        if (i + 1 == n || leaf[i + 1] != leaf[i]) {
            double d = kind == LSIM_COLL_ALLTOALL ? (double)r * (double)(n - r) / (double)(n - gmin) : (double)gmin;
            if (leaf_push(b, j, t, id, leaf[i], 0, d) || leaf_push(b, j, t, id, leaf[i], 1, d)) return -1;
            r = 0;
        }
    return 0;
}

/* The links of instance k whose first participant is (g, v); 0 with
 * b->n = 0 when it crosses no network link; -1 out of memory. */
static int inst_links(const lsim_job *j, const lsim_topology *t, size_t k, const lsim_graph *g, uint32_t v, lbuf *b)
{
    uint64_t p0 = j->part_off[k], n = j->part_off[k + 1] - p0;
    uint32_t gpn = (uint32_t)t->gpus_per_node;
    b->n = 0;
    int multi = 0;
    for (uint64_t i = 1; i < n && !multi; i++)
        if (j->part_gpu[p0 + i] / gpn != j->part_gpu[p0] / gpn) multi = 1;
    if (!multi) return 0;
    int kind = g->coll[v] >= 0 ? g->colls[g->coll[v]].kind : LSIM_COLL_NONE;
    int64_t src = -1, dst = -1;
    if (is_p2p(kind) && n == 2) {
        uint32_t me = j->part_gpu[p0], other = j->part_gpu[p0 + 1];
        src = kind == LSIM_COLL_SEND ? me : other;
        dst = kind == LSIM_COLL_SEND ? other : me;
        if (lb_push(b, (uint32_t)(2 * src), 1.0) || lb_push(b, (uint32_t)(2 * dst + 1), 1.0)) return -1;
    } else {
        for (uint64_t i = 0; i < n; i++)
            if (lb_push(b, 2 * j->part_gpu[p0 + i], 1.0) || lb_push(b, 2 * j->part_gpu[p0 + i] + 1, 1.0)) return -1;
    }
    if (has_leaves(t)) return leaf_links(j, t, (uint64_t)j->part_gpu[p0] << 32 | v, p0, n, kind, src, dst, b);
    return 0;
}

int lsim_netshare_collect(const lsim_job *j, const lsim_ns *const *ends, const lsim_ns *work,
                          const lsim_topology *t, lsim_netflows *out, lsim_err *err)
{
    int rc = 0;
    lbuf b = {0};
    if (t->gpus_per_node <= 0) return lsim_err_set(err, LSIM_EARG, "link sharing: gpus_per_node must be positive");
    for (size_t k = 0; k < j->ninst && !rc; k++) {
        if (j->rule[k] != LSIM_JOB_ALL && j->rule[k] != LSIM_JOB_ROOTLESS) continue;
        uint64_t p0 = j->part_off[k];
        if (j->part_off[k + 1] - p0 < 2) continue;
        uint32_t gpu = j->part_gpu[p0], v = j->part_node[p0];
        const lsim_graph *g = j->graphs ? j->graphs[gpu] : NULL;
        if (!g || !ends[gpu] || g->obs_start[v] != LSIM_OBS_NONE) continue;
        if (inst_links(j, t, k, g, v, &b)) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "link sharing: out of memory");
            break;
        }
        if (!b.n) continue;
        uint64_t id = j->inst_id ? j->inst_id[k] : k;
        const lsim_coll_info *ci = g->coll[v] >= 0 && (size_t)g->coll[v] < g->ncoll ? &g->colls[g->coll[v]] : NULL;
        int kind = ci ? ci->kind : LSIM_COLL_OTHER;
        if (kind == LSIM_COLL_SEND || kind == LSIM_COLL_RECV) kind = LSIM_COLL_SENDRECV; /* a pair: either side first */
        uint64_t np = j->part_off[k + 1] - p0;
        rc = lsim_netflows_add(out, id, (uint64_t)gpu << 32 | v, kind, np > UINT32_MAX ? UINT32_MAX : (uint32_t)np,
                               ci && ci->bytes >= 0 ? ci->bytes : -1, ends[gpu][v] - j->transfer[k], work[k], b.link,
                               b.dem, b.n, err);
    }
    free(b.link);
    free(b.tmp);
    free(b.dem);
    return rc;
}

/* -------------------------------------------------------------- sweep */

typedef struct skey {
    lsim_ns start;
    uint64_t id;
    size_t f;
} skey;

static int cmp_skey(const void *a, const void *b)
{
    const skey *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return (x->f > y->f) - (x->f < y->f);
}

typedef struct sweep {
    const lsim_netflows *f;
    size_t nlinks, nnic;
    double upcap;
    size_t *act, na;
    double *rem, *rate, *rcap, *udem, *nicw, *upw, *lbusy;
    uint8_t *frozen, *slowed;
} sweep;

static double link_cap(const sweep *s, uint32_t l) { return l < s->nnic ? 1.0 : s->upcap; }

/* Max-min fair rates of the active flows by progressive filling: every
 * unfrozen flow's rate rises together until a link is full (its flows
 * freeze at that level) or it reaches its alone rate 1. Summed in the
 * active list's order, which is the same on every MPI rank. */
static void fill_rates(sweep *s)
{
    const lsim_netflows *f = s->f;
    for (size_t i = 0; i < s->na; i++) {
        size_t a = s->act[i];
        s->frozen[a] = 0;
        for (uint64_t q = f->loff[a]; q < f->loff[a + 1]; q++) {
            s->rcap[f->link[q]] = link_cap(s, f->link[q]);
            s->udem[f->link[q]] = 0;
        }
    }
    for (size_t i = 0; i < s->na; i++)
        for (uint64_t q = f->loff[s->act[i]]; q < f->loff[s->act[i] + 1]; q++) s->udem[f->link[q]] += f->dem[q];
    size_t left = s->na;
    while (left) {
        double lam = 1.0;
        for (size_t i = 0; i < s->na; i++) {
            size_t a = s->act[i];
            if (s->frozen[a]) continue;
            for (uint64_t q = f->loff[a]; q < f->loff[a + 1]; q++) {
                double u = s->udem[f->link[q]];
                if (u > 1e-12 && s->rcap[f->link[q]] < lam * u) lam = s->rcap[f->link[q]] / u;
            }
        }
        if (lam < 0) lam = 0;
        /* freeze the flows on a link that is full at lam (all of them at lam >= 1) */
        for (size_t i = 0; i < s->na; i++) {
            size_t a = s->act[i];
            if (s->frozen[a]) continue;
            int hit = lam >= 1.0;
            for (uint64_t q = f->loff[a]; q < f->loff[a + 1] && !hit; q++) {
                double u = s->udem[f->link[q]];
                if (u > 1e-12 && s->rcap[f->link[q]] <= lam * u * (1 + 1e-12)) hit = 1;
            }
            if (hit) s->frozen[a] = 2;
        }
        for (size_t i = 0; i < s->na; i++) {
            size_t a = s->act[i];
            if (s->frozen[a] != 2) continue;
            s->frozen[a] = 1;
            s->rate[a] = lam;
            if (lam < 1.0 - 1e-12) s->slowed[a] = 1;
            left--;
            for (uint64_t q = f->loff[a]; q < f->loff[a + 1]; q++) {
                s->rcap[f->link[q]] -= lam * f->dem[q];
                s->udem[f->link[q]] -= f->dem[q];
            }
        }
    }
}

/* The flow's shared transfer, ending at now. */
static lsim_ns shared_of(const sweep *s, size_t a, double now)
{
    lsim_ns w = s->f->work[a];
    if (!s->slowed[a]) return w;
    double d = now - (double)s->f->start[a];
    lsim_ns x = d >= 9.2e18 ? INT64_MAX : (lsim_ns)llround(d);
    return x > w ? x : w;
}

/* Advance every active flow by dt at its rate, then retire the finished
 * (keeping the active list's order) into out. */
static void advance(sweep *s, double dt, double now, lsim_ns *out, lsim_netshare_stats *st)
{
    size_t keep = 0;
    for (size_t i = 0; i < s->na; i++) {
        size_t a = s->act[i];
        s->rem[a] -= s->rate[a] * dt;
        st->nic_busy_ns += s->rate[a] * s->nicw[a] * dt;
        st->uplink_busy_ns += s->rate[a] * s->upw[a] * dt;
        for (uint64_t q = s->f->loff[a]; q < s->f->loff[a + 1]; q++)
            s->lbusy[s->f->link[q]] += s->rate[a] * s->f->dem[q] / link_cap(s, s->f->link[q]) * dt;
        if (s->rem[a] <= 1e-9 * (double)s->f->work[a] + 1e-6) {
            out[a] = shared_of(s, a, now);
            st->shared_ns += (double)out[a];
            if (out[a] > s->f->work[a]) {
                st->slowed++;
                double r = (double)out[a] / (double)s->f->work[a];
                if (r > st->max_slowdown) st->max_slowdown = r;
            }
        } else
            s->act[keep++] = a;
    }
    s->na = keep;
}

static int sweep_alloc(sweep *s, size_t n)
{
    s->act = lsim_malloc((n ? n : 1) * sizeof *s->act);
    s->rem = lsim_malloc((n ? n : 1) * sizeof *s->rem);
    s->rate = lsim_malloc((n ? n : 1) * sizeof *s->rate);
    s->nicw = lsim_calloc(n ? n : 1, sizeof *s->nicw);
    s->upw = lsim_calloc(n ? n : 1, sizeof *s->upw);
    s->frozen = lsim_calloc(n ? n : 1, 1);
    s->slowed = lsim_calloc(n ? n : 1, 1);
    s->rcap = lsim_malloc(s->nlinks * sizeof *s->rcap);
    s->udem = lsim_malloc(s->nlinks * sizeof *s->udem);
    s->lbusy = lsim_calloc(s->nlinks, sizeof *s->lbusy);
    return s->act && s->rem && s->rate && s->nicw && s->upw && s->frozen && s->slowed && s->rcap && s->udem && s->lbusy
               ? 0
               : -1;
}

static void sweep_free(sweep *s)
{
    free(s->act);
    free(s->rem);
    free(s->rate);
    free(s->nicw);
    free(s->upw);
    free(s->frozen);
    free(s->slowed);
    free(s->rcap);
    free(s->udem);
    free(s->lbusy);
}

/* The LSIM_NETSHARE_HOT busiest links into st (busiest first, ties by
 * lower id: the same on every MPI rank). */
static void hottest(const sweep *s, lsim_netshare_stats *st)
{
    st->nhot = 0;
    for (size_t l = 0; l < s->nlinks; l++) {
        double b = s->lbusy[l];
        if (!(b > 0)) continue;
        int i = st->nhot < LSIM_NETSHARE_HOT ? st->nhot++ : LSIM_NETSHARE_HOT;
        if (i == LSIM_NETSHARE_HOT) {
            if (b <= st->hot_busy_ns[i - 1]) continue;
            i--;
        }
        while (i > 0 && st->hot_busy_ns[i - 1] < b) {
            st->hot_busy_ns[i] = st->hot_busy_ns[i - 1];
            st->hot_link[i] = st->hot_link[i - 1];
            i--;
        }
        st->hot_busy_ns[i] = b;
        st->hot_link[i] = (uint32_t)l;
    }
}

/* Does flow x come before y among the most delayed? More delay first, then
 * the lower key, then the earlier start: an order of the flows' own
 * figures, so every MPI rank, whatever its order of the flows, keeps the
 * same ones. */
static int later(const lsim_netshare_late *x, const lsim_netshare_late *y)
{
    lsim_ns dx = x->shared - x->alone, dy = y->shared - y->alone;
    if (dx != dy) return dx > dy;
    if (x->key != y->key) return x->key < y->key;
    return x->start < y->start;
}

/* After the sweep: per kind, and the most delayed flows. */
static void by_kind(const lsim_netflows *f, const lsim_ns *out, lsim_netshare_stats *st)
{
    for (size_t a = 0; a < f->n; a++) {
        lsim_netshare_kind *k = &st->by_kind[f->kind ? f->kind[a] : LSIM_COLL_OTHER];
        k->flows++;
        k->alone_ns += (double)f->work[a];
        k->shared_ns += (double)out[a];
        if (out[a] <= f->work[a]) continue;
        k->slowed++;
        lsim_netshare_late x = {f->key[a], f->kind ? f->kind[a] : LSIM_COLL_OTHER, f->start[a], f->work[a], out[a]};
        int i = st->nlate < LSIM_NETSHARE_HOT ? st->nlate++ : LSIM_NETSHARE_HOT;
        if (i == LSIM_NETSHARE_HOT) {
            if (!later(&x, &st->late[i - 1])) continue;
            i--;
        }
        while (i > 0 && later(&x, &st->late[i - 1])) {
            st->late[i] = st->late[i - 1];
            i--;
        }
        st->late[i] = x;
    }
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile q of sorted x[0..n) by nearest rank (0 when n is 0). */
static double nearest_rank(const double *x, size_t n, double q)
{
    if (!n) return 0;
    size_t k = (size_t)ceil(q * (double)n);
    return x[(k ? k : 1) - 1];
}

/* The flows and the loaded links of the sweep as rows (det), flows in
 * key's (the sweep's) order. 0 or -1 out of memory. */
static int detail_rows(const sweep *s, const lsim_ns *out, const skey *key, size_t nused, const lsim_netshare_stats *st,
                       lsim_netshare_detail *det)
{
    const lsim_netflows *f = s->f;
    uint64_t *nf = lsim_calloc(s->nlinks, sizeof *nf);
    size_t *last = lsim_malloc(s->nlinks * sizeof *last);
    det->flows = lsim_malloc((f->n ? f->n : 1) * sizeof *det->flows);
    det->links = lsim_malloc((nused ? nused : 1) * sizeof *det->links);
    if (!nf || !last || !det->flows || !det->links) {
        free(nf);
        free(last);
        free(det->flows);
        free(det->links);
        memset(det, 0, sizeof *det);
        return -1;
    }
    for (size_t l = 0; l < s->nlinks; l++) last[l] = SIZE_MAX;
    for (size_t i = 0; i < f->n; i++) {
        size_t a = key[i].f;
        det->flows[i] = (lsim_netshare_flow_row){f->key[a] >> 32, f->key[a] & 0xffffffffu,
                                                 f->kind ? f->kind[a] : LSIM_COLL_OTHER,
                                                 f->parts ? f->parts[a] : 0, f->bytes ? f->bytes[a] : -1,
                                                 (int64_t)(f->loff[a + 1] - f->loff[a]), f->start[a], f->work[a], out[a]};
        for (uint64_t q = f->loff[a]; q < f->loff[a + 1]; q++) /* a link listed twice counts the flow once */
            if (last[f->link[q]] != a) {
                last[f->link[q]] = a;
                nf[f->link[q]]++;
            }
    }
    det->nflows = f->n;
    det->ngpus = st->ngpus;
    det->paths = st->paths;
    det->span_ns = st->span_ns;
    for (size_t l = 0; l < s->nlinks; l++)
        if (s->lbusy[l] > 0) det->links[det->nlinks++] = (lsim_netshare_link_row){l, nf[l], s->lbusy[l]};
    free(nf);
    free(last);
    return 0;
}

static const double SLOW_EDGE[LSIM_NETSHARE_SBINS] = {1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0};

double lsim_netshare_slow_edge(int k) { return k >= 0 && k < LSIM_NETSHARE_SBINS ? SLOW_EDGE[k] : INFINITY; }

/* The bins of the histograms (netshare.h). */
static int util_bin(double u)
{
    int k = u >= 0 ? (int)floor(u * LSIM_NETSHARE_UBINS) : 0;
    return k < LSIM_NETSHARE_UBINS ? k : LSIM_NETSHARE_UBINS - 1;
}

static int slow_bin(double x)
{
    int k = 0;
    while (k + 1 < LSIM_NETSHARE_SBINS && x >= SLOW_EDGE[k + 1]) k++;
    return k;
}

/* After the sweep: the links' utilization and the flows' slowdown
 * quantiles into st, and det's rows when asked. 0 or -1 out of memory. */
static int summarize(const sweep *s, const lsim_ns *out, const skey *key, lsim_netshare_stats *st,
                     lsim_netshare_detail *det)
{
    const lsim_netflows *f = s->f;
    size_t nused = 0;
    for (size_t l = 0; l < s->nlinks; l++) nused += s->lbusy[l] > 0;
    double *x = lsim_malloc((nused > f->n ? nused : f->n ? f->n : 1) * sizeof *x);
    if (!x) return -1;
    for (size_t l = 0, i = 0; l < s->nlinks; l++)
        if (s->lbusy[l] > 0) x[i++] = st->span_ns > 0 ? s->lbusy[l] / (double)st->span_ns : 0;
    qsort(x, nused, sizeof *x, cmp_dbl);
    for (size_t i = 0; i < nused; i++) st->util_hist[util_bin(x[i])]++;
    st->links_used = nused;
    st->util_p50 = nearest_rank(x, nused, 0.5);
    st->util_p90 = nearest_rank(x, nused, 0.9);
    for (size_t a = 0; a < f->n; a++) x[a] = f->work[a] > 0 ? (double)out[a] / (double)f->work[a] : 1.0;
    qsort(x, f->n, sizeof *x, cmp_dbl);
    for (size_t a = 0; a < f->n; a++) st->slow_hist[slow_bin(x[a])]++;
    st->slowdown_p50 = nearest_rank(x, f->n, 0.5);
    st->slowdown_p95 = nearest_rank(x, f->n, 0.95);
    free(x);
    return det ? detail_rows(s, out, key, nused, st, det) : 0;
}

void lsim_netshare_detail_free(lsim_netshare_detail *d)
{
    if (!d) return;
    free(d->flows);
    free(d->links);
    memset(d, 0, sizeof *d);
}

void lsim_netshare_link_name(uint32_t link, size_t ngpus, uint32_t paths, char *buf, size_t cap)
{
    size_t p = (size_t)(link / 2) - ngpus;
    if (link < 2 * ngpus) snprintf(buf, cap, "gpu %u nic %s", link / 2, link % 2 ? "rx" : "tx");
    else if (paths > 1) snprintf(buf, cap, "leaf %zu path %zu %s", p / paths, p % paths, link % 2 ? "down" : "up");
    else snprintf(buf, cap, "leaf %zu %s", p, link % 2 ? "down" : "up");
}

int lsim_netshare_sweep(const lsim_netflows *f, size_t ngpus, const lsim_topology *t, lsim_ns *out,
                        lsim_netshare_stats *st_out, lsim_netshare_detail *det, lsim_err *err)
{
    lsim_netshare_stats st = {0};
    sweep s = {0};
    skey *key = NULL;
    int rc = 0;
    size_t n = f->n;
    size_t gpn = t->gpus_per_node > 0 ? (size_t)t->gpus_per_node : 1;
    lsim_netshare_detail_free(det);
    size_t nodes = (ngpus + gpn - 1) / gpn;
    size_t nleaf = t->nodes_per_leaf > 0 ? (nodes + (size_t)t->nodes_per_leaf - 1) / (size_t)t->nodes_per_leaf : 0;
    nleaf *= paths_of(t); /* each path its own link */
    s.f = f;
    s.nnic = 2 * ngpus;
    s.nlinks = ngpus + nleaf > 0 ? 2 * (ngpus + nleaf) : 1;
    s.upcap = has_leaves(t) ? (double)t->nodes_per_leaf * (double)gpn /
                                  (t->oversubscription > 1 ? t->oversubscription : 1.0) / (double)paths_of(t)
                            : INFINITY;
    key = lsim_malloc((n ? n : 1) * sizeof *key);
    if (!key || sweep_alloc(&s, n)) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "link sharing: out of memory");
        goto cleanup;
    }
    for (size_t a = 0; a < n; a++) {
        key[a] = (skey){f->start[a], f->key[a], a};
        for (uint64_t q = f->loff[a]; q < f->loff[a + 1]; q++) {
            if (f->link[q] >= 2 * (ngpus + nleaf)) {
                rc = lsim_err_set(err, LSIM_EARG, "link sharing: flow of instance %llu names link %u of %zu",
                                  (unsigned long long)f->id[a], f->link[q], 2 * (ngpus + nleaf));
                goto cleanup;
            }
            if (f->link[q] < s.nnic) s.nicw[a] += f->dem[q];
            else s.upw[a] += f->dem[q] / s.upcap;
        }
        st.alone_ns += (double)f->work[a];
    }
    qsort(key, n, sizeof *key, cmp_skey);
    double now = n ? (double)key[0].start : 0;
    size_t pi = 0;
    while (pi < n || s.na) {
        double next = pi < n ? (double)key[pi].start : INFINITY;
        for (size_t i = 0; i < s.na; i++) {
            size_t a = s.act[i];
            double te = now + s.rem[a] / s.rate[a];
            if (te < next) next = te;
        }
        advance(&s, next - now, next, out, &st);
        now = next;
        while (pi < n && (double)key[pi].start <= now) {
            size_t a = key[pi++].f;
            s.rem[a] = (double)f->work[a];
            s.slowed[a] = 0;
            if (f->work[a] <= 0) {
                out[a] = f->work[a];
                continue;
            }
            s.act[s.na++] = a;
        }
        fill_rates(&s);
        st.events++;
        st.updates += s.na;
    }
    st.flows = n;
    st.ngpus = ngpus;
    st.paths = paths_of(t);
    hottest(&s, &st);
    by_kind(f, out, &st);
    if (n) st.span_ns = (lsim_ns)llround(now) - key[0].start;
    if (summarize(&s, out, key, &st, det)) rc = lsim_err_set(err, LSIM_ENOMEM, "link sharing: out of memory");
cleanup:
    if (st_out) *st_out = st;
    free(key);
    sweep_free(&s);
    return rc;
}

void lsim_netshare_apply(lsim_job *j, const lsim_netflows *f, const lsim_ns *shared)
{
    for (size_t a = 0; a < f->n; a++) {
        uint64_t id = f->id[a];
        size_t lo = 0, hi = j->ninst;
        if (!j->inst_id) {
            if (id < j->ninst) j->transfer[id] = shared[a];
            continue;
        }
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (j->inst_id[mid] < id) lo = mid + 1;
            else hi = mid;
        }
        if (lo < j->ninst && j->inst_id[lo] == id) j->transfer[lo] = shared[a];
    }
}
