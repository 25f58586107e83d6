/* What-if: the graph surgery shared by the structural transformations
 * (whatif.h, "wi_internal.h"): remove node sets and duplicate segments,
 * rewiring edges along each processor's order. */
#include "wi_internal.h"
#include "lumosim/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/metrics.h"
#include "../util.h"

#define NONE UINT32_MAX

int wi_intern(lsim_graph *g, const char *s, uint32_t *id)
{
    return lsim_strtab_intern(g->strings, s, strlen(s), id);
}

/* The node before v on its processor (CPU thread or stream order), or NONE. */
static uint32_t proc_pred(const lsim_graph *g, uint32_t v)
{
    int want = g->procs[g->proc[v]].is_gpu ? LSIM_E_STREAM : LSIM_E_CPU_THREAD;
    for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
        if ((int)(g->in_class[k] & LSIM_EDGE_CLASS_MASK) == want && !(g->in_class[k] & LSIM_EDGE_END)) return g->in_src[k];
    return NONE;
}

typedef struct rkey {
    uint32_t grp;   /* process group name id (UINT32_MAX: none) */
    int64_t base;   /* the segment's first sequence number in that group, or the node's own */
    uint32_t copy;
    int64_t seq;    /* the source's sequence number */
    uint32_t x;     /* output node */
} rkey;

static int cmp_rkey(const void *a, const void *b)
{
    const rkey *p = a, *q = b;
    if (p->grp != q->grp) return p->grp < q->grp ? -1 : 1;
    if (p->base != q->base) return p->base < q->base ? -1 : 1;
    if (p->copy != q->copy) return p->copy < q->copy ? -1 : 1;
    if (p->seq != q->seq) return p->seq < q->seq ? -1 : 1;
    return (p->x > q->x) - (p->x < q->x);
}

/* renumber 2: per group, the collective kernels in the source's sequence
 * order, where the copies of a segment follow each other: key (segment's
 * first sequence number in the group, copy, sequence number). Valid when a
 * segment's collectives are consecutive in each group's order, as a layer's
 * are. */
static int renumber_by_origin(const lsim_graph *g, const wi_plan *P, lsim_graph *o, const uint32_t *from,
                              const uint32_t *copy, lsim_err *err)
{
    size_t nk = 0;
    for (size_t x = 0; x < o->n; x++)
        if ((o->flags[x] & LSIM_NF_COLL) && o->coll[x] >= 0) nk++;
    rkey *K = lsim_malloc((nk ? nk : 1) * sizeof *K);
    int64_t *first = lsim_malloc(((size_t)P->nseg + 1) * sizeof *first);
    uint32_t *fgrp = lsim_malloc(((size_t)P->nseg + 1) * sizeof *fgrp);
    if (!K || !first || !fgrp) {
        free(K);
        free(first);
        free(fgrp);
        return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", o->source);
    }
    /* a segment's first sequence number (its collectives share one group
     * in the cases this serves; others keep their own numbers as base) */
    for (uint32_t s = 0; s < P->nseg; s++) first[s] = INT64_MAX, fgrp[s] = UINT32_MAX;
    for (size_t v = 0; v < g->n; v++) {
        int32_t s = P->seg[v];
        if (s < 0 || !(g->flags[v] & LSIM_NF_COLL) || g->coll[v] < 0) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        if (ci->seq < first[s]) first[s] = ci->seq, fgrp[s] = ci->pg_name;
    }
    nk = 0;
    for (size_t x = 0; x < o->n; x++) {
        if (!(o->flags[x] & LSIM_NF_COLL) || o->coll[x] < 0) continue;
        uint32_t v = from[x];
        int32_t s = P->seg[v];
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        int in_seg = s >= 0 && fgrp[s] == ci->pg_name;
        K[nk++] = (rkey){ci->pg_name, in_seg ? first[s] : ci->seq, in_seg ? copy[x] : 0, ci->seq, (uint32_t)x};
    }
    qsort(K, nk, sizeof *K, cmp_rkey);
    int64_t next = 0;
    for (size_t i = 0; i < nk; i++) {
        if (i && K[i].grp != K[i - 1].grp) next = 0;
        o->colls[o->coll[K[i].x]].seq = next++;
    }
    free(K);
    free(first);
    free(fgrp);
    return 0;
}

/* A new graph with g's scalars and statistics, its strings (same ids) and
 * its node columns (lsim_graph_resize_nodes) allocated for n nodes, nc
 * collectives and nprocs processors (unset), no edges yet (the caller's
 * lsim_graph_set_edges makes them); NULL when out of memory. */
static lsim_graph *shell(const lsim_graph *g, size_t n, size_t nc, uint32_t nprocs, const char *source)
{
    lsim_graph *o = lsim_calloc(1, sizeof *o);
    if (!o) return NULL;
    *o = *g;
    o->source = NULL, o->label = NULL, o->strings = NULL;
#define NULL_(field, type) o->field = NULL;
    LSIM_GRAPH_COLUMNS(NULL_)
#undef NULL_
    o->in_off = NULL, o->in_src = NULL, o->in_delay = NULL, o->in_class = NULL, o->out_off = NULL, o->out_dst = NULL;
    o->procs = NULL, o->iters = NULL, o->colls = NULL;
    o->cpu_ops = NULL; /* indexes g's nodes, not these */
    o->share_refs = NULL, o->colls_refs = NULL;
    o->n = n, o->nedges = 0, o->ncoll = nc, o->nprocs = nprocs;
#define ALLOC(f, cnt) (o->f = lsim_malloc(((cnt) ? (cnt) : 1) * sizeof *o->f))
    if (lsim_graph_resize_nodes(o, n, NULL) || !ALLOC(procs, nprocs) || !ALLOC(iters, g->niters) || !ALLOC(colls, nc) ||
        !(o->source = lsim_strdup(source)) || !(o->strings = lsim_strtab_new()))
        goto fail;
#undef ALLOC
    for (uint32_t i = 0; i < lsim_strtab_count(g->strings); i++) {
        const char *str = lsim_strtab_get(g->strings, i);
        uint32_t id;
        if (lsim_strtab_intern(o->strings, str, strlen(str), &id) || id != i) goto fail;
    }
    return o;
fail:
    lsim_graph_free(o);
    return NULL;
}

/* wi_rebuild's working arrays, one set per call. */
typedef struct rb_state {
    size_t n, nn;                 /* source nodes; new nodes */
    uint32_t nseg;
    uint32_t *segoff, *segnodes, *segsize, *posin; /* segments: their nodes in id order, a node's place */
    uint32_t *pl_off, *pl_proc, *pl_node;          /* last node of each segment per processor */
    uint32_t *id0, *cbase, *from, *copy, *fin;     /* new ids: kept, copies' base, origin, copy, final */
    lsim_edge *E;
    size_t ne, cape;
    uint64_t *inoff;
} rb_state;

static void rb_free(rb_state *S)
{
    free(S->inoff);
    free(S->id0);
    free(S->fin);
    free(S->posin);
    free(S->cbase);
    free(S->segsize);
    free(S->from);
    free(S->copy);
    free(S->segnodes);
    free(S->segoff);
    free(S->pl_off);
    free(S->pl_proc);
    free(S->pl_node);
    free(S->E);
}

/* Segments: their nodes in id order, and the last node of each segment per
 * processor. LSIM_ENOMEM (no message) or 0. */
static int rb_segments(const lsim_graph *g, const wi_plan *P, rb_state *S)
{
    size_t n = S->n;
    uint32_t nseg = S->nseg;
    if (!(S->segoff = lsim_calloc((size_t)nseg + 2, sizeof *S->segoff)) || !(S->posin = lsim_malloc((n ? n : 1) * sizeof *S->posin)) ||
        !(S->segsize = lsim_calloc((size_t)nseg + 1, sizeof *S->segsize)) || !(S->cbase = lsim_calloc((size_t)nseg + 1, sizeof *S->cbase)))
        return LSIM_ENOMEM;
    uint32_t *segoff = S->segoff;
    for (size_t v = 0; v < n; v++)
        if (P->seg[v] >= 0) segoff[P->seg[v] + 1]++;
    for (uint32_t s = 0; s < nseg; s++) S->segsize[s] = segoff[s + 1], segoff[s + 1] += segoff[s];
    if (!(S->segnodes = lsim_malloc(((size_t)segoff[nseg] + 1) * sizeof *S->segnodes))) return LSIM_ENOMEM;
    uint32_t *fill = lsim_calloc((size_t)nseg + 1, sizeof *fill);
    if (!fill) return LSIM_ENOMEM;
    for (size_t v = 0; v < n; v++)
        if (P->seg[v] >= 0) {
            int32_t s = P->seg[v];
            S->posin[v] = fill[s];
            S->segnodes[segoff[s] + fill[s]++] = (uint32_t)v;
        }
    free(fill);
    /* last node of each segment per processor */
    if (!(S->pl_off = lsim_calloc((size_t)nseg + 1, sizeof *S->pl_off)) ||
        !(S->pl_proc = lsim_malloc(((size_t)segoff[nseg] + 1) * sizeof *S->pl_proc)) ||
        !(S->pl_node = lsim_malloc(((size_t)segoff[nseg] + 1) * sizeof *S->pl_node)))
        return LSIM_ENOMEM;
    uint32_t w = 0;
    for (uint32_t s = 0; s < nseg; s++) {
        S->pl_off[s] = w;
        for (uint32_t q = segoff[s]; q < segoff[s + 1]; q++) {
            uint32_t v = S->segnodes[q], k = S->pl_off[s];
            while (k < w && S->pl_proc[k] != g->proc[v]) k++;
            if (k == w) S->pl_proc[w++] = g->proc[v];
            S->pl_node[k] = v; /* ascending ids: the last wins */
        }
    }
    S->pl_off[nseg] = w;
    return 0;
}

/* New node ids: kept nodes in order, a segment's copies right after its
 * last node; each new node's origin and copy, each source node's final
 * copy. LSIM_ENOMEM (no message), LSIM_EARG (err set) or 0. */
static int rb_ids(const lsim_graph *g, const wi_plan *P, rb_state *S, lsim_err *err)
{
    size_t n = S->n, nn = 0;
    if (!(S->id0 = lsim_malloc((n ? n : 1) * sizeof *S->id0))) return LSIM_ENOMEM;
    for (size_t v = 0; v < n; v++) {
        int32_t s = P->seg[v];
        S->id0[v] = P->removed[v] ? NONE : (uint32_t)nn++;
        if (s >= 0 && S->segnodes[S->segoff[s + 1] - 1] == v && P->copies[s] > 1) {
            S->cbase[s] = (uint32_t)nn;
            nn += (size_t)(P->copies[s] - 1) * S->segsize[s];
        }
    }
    if (nn >= UINT32_MAX - 1)
        return lsim_err_set(err, LSIM_EARG, "%s: the transformed graph would have too many nodes", g->source);
    S->nn = nn;
    if (!(S->from = lsim_malloc((nn ? nn : 1) * sizeof *S->from)) || !(S->copy = lsim_malloc((nn ? nn : 1) * sizeof *S->copy)) ||
        !(S->fin = lsim_malloc((n ? n : 1) * sizeof *S->fin)))
        return LSIM_ENOMEM;
    for (size_t v = 0; v < n; v++) {
        int32_t s = P->seg[v];
        if (S->id0[v] != NONE) S->from[S->id0[v]] = (uint32_t)v, S->copy[S->id0[v]] = 0;
        S->fin[v] = S->id0[v];
        if (s >= 0 && P->copies[s] > 1) {
            for (int c = 1; c < P->copies[s]; c++) {
                uint32_t x = S->cbase[s] + (uint32_t)(c - 1) * S->segsize[s] + S->posin[v];
                S->from[x] = (uint32_t)v;
                S->copy[x] = (uint32_t)c;
            }
            S->fin[v] = S->cbase[s] + (uint32_t)(P->copies[s] - 2) * S->segsize[s] + S->posin[v];
        }
    }
    return 0;
}

/* New node of copy c of source node v. */
static uint32_t rb_node_of(const wi_plan *P, const rb_state *S, uint32_t v, uint32_t c)
{
    return c == 0 ? S->id0[v] : S->cbase[P->seg[v]] + (c - 1) * S->segsize[P->seg[v]] + S->posin[v];
}

/* The last node of segment s on processor proc, NONE when none. */
static uint32_t rb_last_on(const rb_state *S, int32_t s, uint32_t proc)
{
    uint32_t last = NONE;
    for (uint32_t q = S->pl_off[s]; q < S->pl_off[s + 1]; q++)
        if (S->pl_proc[q] == proc) last = S->pl_node[q];
    return last;
}

/* Edge (x <- src, cls) once per (source, class) of x: the largest delay.
 * LSIM_ENOMEM or 0. */
static int rb_edge(rb_state *S, uint32_t x, uint32_t src, lsim_ns delay, uint8_t cls)
{
    uint64_t q = S->inoff[x];
    for (; q < S->ne; q++)
        if (S->E[q].src == src && S->E[q].cls == cls) break;
    if (q < S->ne) {
        if (delay > S->E[q].delay) S->E[q].delay = delay;
        return 0;
    }
    if (LSIM_GROW(S->E, &S->cape, S->ne + 1)) return LSIM_ENOMEM;
    S->E[S->ne++] = (lsim_edge){x, src, delay, cls};
    return 0;
}

/* Edges, per new node in order. LSIM_ENOMEM or 0. */
static int rb_edges(const lsim_graph *g, const wi_plan *P, rb_state *S)
{
    if (!(S->inoff = lsim_malloc((S->nn + 1) * sizeof *S->inoff))) return LSIM_ENOMEM;
    for (size_t x = 0; x < S->nn; x++) {
        uint32_t v = S->from[x], c = S->copy[x];
        int32_t s = P->seg[v];
        S->inoff[x] = S->ne;
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
            uint32_t u = g->in_src[k], src;
            if (s >= 0 && P->seg[u] == s) {
                src = rb_node_of(P, S, u, c);
            } else if (P->removed[u]) {
                uint32_t w = u;
                while (w != NONE && P->removed[w]) w = proc_pred(g, w);
                if (w == NONE) continue;
                src = S->fin[w];
            } else if (c >= 1) {
                uint32_t last = rb_last_on(S, s, g->proc[u]);
                src = last != NONE ? rb_node_of(P, S, last, c - 1) : S->fin[u];
            } else {
                src = S->fin[u];
            }
            if (src == NONE || src == x) continue;
            /* one edge per (source, class): the largest delay */
            if (rb_edge(S, (uint32_t)x, src, g->in_delay[k], g->in_class[k])) return LSIM_ENOMEM;
        }
        /* a copy follows the previous copy on every processor, also where
         * the segment's first node there has no predecessor */
        if (c >= 1) {
            uint32_t pp = proc_pred(g, v);
            if (pp == NONE || P->seg[pp] != s) {
                uint32_t last = rb_last_on(S, s, g->proc[v]);
                uint8_t cls = g->procs[g->proc[v]].is_gpu ? LSIM_E_STREAM : LSIM_E_CPU_THREAD;
                uint32_t src = rb_node_of(P, S, last, c - 1);
                uint64_t q = S->inoff[x];
                for (; q < S->ne; q++)
                    if (S->E[q].src == src && S->E[q].cls == cls) break;
                if (q == S->ne) {
                    if (LSIM_GROW(S->E, &S->cape, S->ne + 1)) return LSIM_ENOMEM;
                    S->E[S->ne++] = (lsim_edge){(uint32_t)x, src, 0, cls};
                }
            }
        }
    }
    S->inoff[S->nn] = S->ne;
    return 0;
}

/* The new graph's node columns, each from its origin (a copy: unobserved,
 * its own correlation and forward Sequence number), and the record. */
static int rb_columns(const lsim_graph *g, const wi_plan *P, const rb_state *S, lsim_graph *o, lsim_wi_counts *rec)
{
    size_t ci = 0;
    for (size_t x = 0; x < S->nn; x++) {
        uint32_t v = S->from[x], c = S->copy[x];
        o->kind[x] = g->kind[v];
        o->flags[x] = g->flags[v];
        o->proc[x] = g->proc[v];
        o->procs[g->proc[v]].nnodes++;
        o->name[x] = g->name[v];
        if (P->name_of) {
            uint32_t id = UINT32_MAX;
            int rc = P->name_of(P->ctx, o, v, c, &id);
            if (rc) return rc;
            if (id != UINT32_MAX) o->name[x] = id;
        }
        o->dur[x] = g->dur[v];
        o->obs_start[x] = c ? LSIM_OBS_NONE : g->obs_start[v];
        o->obs_end[x] = c ? LSIM_OBS_NONE : g->obs_end[v];
        o->release[x] = c ? INT64_MIN : g->release[v];
        if (o->release[x] != INT64_MIN) o->releases++;
        o->corr[x] = g->corr[v] < 0 || !c ? g->corr[v] : g->corr[v] + ((int64_t)c << 40);
        o->iter[x] = g->iter[v];
        o->phase[x] = g->phase[v]; /* a copy keeps its training phase and forward op */
        /* a copy's forward op is another op: its own Sequence number,
         * 2^20 further per copy (modulo 2^31, graph.h), so that a later
         * what-if pairs each copy's backward with its own forward */
        {
            int32_t sg = P->seg ? P->seg[v] : -1;
            int64_t k = sg >= 0 && P->seq_reverse && P->seq_reverse[sg] ? P->copies[sg] - 1 - (int64_t)c : c;
            o->fwd_seq[x] = g->fwd_seq[v] < 0 || !k ? g->fwd_seq[v]
                                                     : (int32_t)(((int64_t)g->fwd_seq[v] + (k << 20)) & 0x7fffffff);
        }
        o->grad_bytes[x] = g->grad_bytes[v]; /* and a copied layer's gradients (DDP buckets by them) */
        o->coll[x] = -1;
        if (g->coll[v] >= 0) {
            o->colls[ci] = g->colls[g->coll[v]];
            o->coll[x] = (int32_t)ci++;
        }
        if (c) rec->added[g->kind[v]]++;
    }
    for (size_t v = 0; v < S->n; v++)
        if (P->removed[v]) rec->removed[g->kind[v]]++;
    return 0;
}

int wi_rebuild(const lsim_graph *g, const wi_plan *P, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    rb_state S;
    memset(&S, 0, sizeof S);
    S.n = g->n;
    S.nseg = P->nseg;
    lsim_graph *o = NULL;
    int rc = rb_segments(g, P, &S);
    if (!rc) rc = rb_ids(g, P, &S, err);
    if (rc == LSIM_EARG) goto cleanup;
    if (!rc) rc = rb_edges(g, P, &S);
    if (rc) goto nomem;
    /* the graph: scalars and statistics from g, every array new */
    size_t ncoll = 0;
    for (size_t x = 0; x < S.nn; x++)
        if (g->coll[S.from[x]] >= 0) ncoll++;
    if (!(o = shell(g, S.nn, ncoll, g->nprocs, P->source ? P->source : g->source)) ||
        lsim_graph_set_edges(o, S.E, S.ne, LSIM_OUT_BY_DST, NULL))
        goto nomem;
    if (g->nprocs) memcpy(o->procs, g->procs, g->nprocs * sizeof *o->procs);
    for (uint32_t p = 0; p < o->nprocs; p++) o->procs[p].nnodes = 0;
    if (g->niters) memcpy(o->iters, g->iters, g->niters * sizeof *o->iters);
    lsim_graph_count_edges(o);
    o->releases = 0;
    if ((rc = rb_columns(g, P, &S, o, rec))) goto cleanup;
    if (S.ne > g->nedges) rec->edges_added += S.ne - g->nedges;
    else rec->edges_removed += g->nedges - S.ne;
    if (P->renumber == 2) rc = renumber_by_origin(g, P, o, S.from, S.copy, err);
    else if (P->renumber) rc = wi_renumber_seq(o, err);
    if (rc) goto cleanup;
    if (P->from_out) *P->from_out = S.from, S.from = NULL;
    if (P->copy_out) *P->copy_out = S.copy, S.copy = NULL;
    *out = o;
    o = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", g->source);
cleanup:
    rb_free(&S);
    lsim_graph_free(o);
    return rc;
}

int wi_renumber_seq(lsim_graph *o, lsim_err *err)
{
    uint32_t ns = lsim_strtab_count(o->strings) + 1;
    int64_t *next = lsim_calloc(ns, sizeof *next);
    if (!next) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", o->source);
    for (size_t x = 0; x < o->n; x++) {
        if (o->coll[x] < 0) continue;
        lsim_coll_info *ci = &o->colls[o->coll[x]];
        uint32_t k = ci->pg_name == UINT32_MAX ? ns - 1 : ci->pg_name;
        if (k < ns) ci->seq = next[k]++;
    }
    free(next);
    return 0;
}

/* Why a separate pass rather than a wi_plan option: insertion needs new
 * processors, names and collectives, which removal and copying never make;
 * appending keeps wi_rebuild's id rules untouched. */
int wi_append(const lsim_graph *g, const lsim_proc *procs, uint32_t nprocs, const wi_addnode *nodes, size_t nn,
              const wi_addedge *edges, size_t ne, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    lsim_graph *o = NULL;
    lsim_edge *E = NULL;
    size_t n = g->n + nn, nc = g->ncoll;
    uint64_t m = g->nedges + ne;
    for (size_t i = 0; i < nn; i++) nc += nodes[i].has_coll != 0;
    for (size_t i = 0; i < ne; i++)
        if (edges[i].src >= n || edges[i].dst >= n) return lsim_err_set(err, LSIM_EARG, "%s: edge to no node", g->source);
    if (n >= UINT32_MAX - 1) return lsim_err_set(err, LSIM_EARG, "%s: the graph would have too many nodes", g->source);
    if (!(o = shell(g, n, nc, g->nprocs + nprocs, g->source))) goto nomem;
    if (g->nprocs) memcpy(o->procs, g->procs, g->nprocs * sizeof *o->procs);
    if (nprocs) memcpy(o->procs + g->nprocs, procs, nprocs * sizeof *o->procs);
    for (uint32_t p = g->nprocs; p < o->nprocs; p++) o->procs[p].nnodes = 0;
    if (g->niters) memcpy(o->iters, g->iters, g->niters * sizeof *o->iters);
    if (g->ncoll) memcpy(o->colls, g->colls, g->ncoll * sizeof *o->colls);
    if (g->n) {
#define COPY_(field, type) memcpy(o->field, g->field, g->n * sizeof(type));
        LSIM_GRAPH_COLUMNS(COPY_)
#undef COPY_
    }
    size_t ci = g->ncoll;
    for (size_t i = 0; i < nn; i++) {
        const wi_addnode *a = &nodes[i];
        size_t x = g->n + i;
        if (a->proc >= o->nprocs) {
            lsim_graph_free(o);
            return lsim_err_set(err, LSIM_EARG, "%s: node on no processor", g->source);
        }
        o->kind[x] = a->kind, o->flags[x] = a->flags, o->proc[x] = a->proc, o->dur[x] = a->dur;
        o->obs_start[x] = o->obs_end[x] = LSIM_OBS_NONE;
        o->release[x] = INT64_MIN;
        o->corr[x] = a->corr, o->iter[x] = a->iter, o->coll[x] = -1;
        o->procs[a->proc].nnodes++;
        if (wi_intern(o, a->name, &o->name[x])) goto nomem;
        if (a->has_coll) {
            o->colls[ci] = a->coll;
            if (wi_intern(o, a->pg, &o->colls[ci].pg_name)) goto nomem;
            o->coll[x] = (int32_t)ci++;
            o->flags[x] |= LSIM_NF_COLL;
        }
        rec->added[a->kind]++;
    }
    /* incoming CSR: the old edges of each node, then the new ones (the
     * builder keeps list order within a target) */
    E = lsim_malloc((m ? m : 1) * sizeof *E);
    if (!E) goto nomem;
    for (size_t v = 0; v < g->n; v++)
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
            E[k] = (lsim_edge){(uint32_t)v, g->in_src[k], g->in_delay[k], g->in_class[k]};
    for (size_t i = 0; i < ne; i++) {
        E[g->nedges + i] = (lsim_edge){edges[i].dst, edges[i].src, edges[i].delay, edges[i].cls};
        o->edges_by_class[edges[i].cls & LSIM_EDGE_CLASS_MASK]++;
    }
    if (lsim_graph_set_edges(o, E, m, LSIM_OUT_BY_DST, NULL)) goto nomem;
    free(E);
    rec->edges_added += ne;
    *out = o;
    return 0;
nomem:
    free(E);
    lsim_graph_free(o);
    return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", g->source);
}
