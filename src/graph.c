/* The graph object (see graph.h): name tables, the one allocator of its
 * node columns, the one CSR builder, copy, ablation, free and the bounds
 * check. Building a graph from a trace is src/build/'s. */
#include "lumosim/graph.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "lumosim/alloc.h" /* allocations through the seam: tests/unit/test_oom.c */

/* ----------------------------------------------------------- name tables */

#define NAME_(id, name) [id] = name,
static const char *const EDGE_NAMES[] = {LSIM_EDGE_CLASSES(NAME_)};
static const char *const KIND_NAMES[] = {LSIM_NODE_KINDS(NAME_)};
static const char *const DROP_NAMES[] = {LSIM_DROP_REASONS(NAME_)};
static const char *const LATENCY_NAMES[] = {LSIM_LATENCY_MODES(NAME_)};
static const char *const PHASE_NAMES[] = {LSIM_PHASES(NAME_)};
#undef NAME_

const char *lsim_phase_name(lsim_phase p) { return (unsigned)p < LSIM_PHASE_N ? PHASE_NAMES[p] : "?"; }

const char *lsim_edge_class_name(lsim_edge_class c) { return (unsigned)c < LSIM_E_NCLASSES ? EDGE_NAMES[c] : "?"; }
const char *lsim_node_kind_name(lsim_node_kind k) { return (unsigned)k < LSIM_N_NKINDS ? KIND_NAMES[k] : "?"; }
#define MEM_SOURCE_NAME_(id, name) name,
static const char *const MEM_SOURCE_NAMES[] = {LSIM_MEM_SOURCES(MEM_SOURCE_NAME_)};
#undef MEM_SOURCE_NAME_
const char *lsim_mem_source_name(int32_t source)
{
    return source >= 0 && source < LSIM_MEM_NSOURCES ? MEM_SOURCE_NAMES[source] : "?";
}

const char *lsim_drop_reason_name(lsim_drop_reason r) { return (unsigned)r < LSIM_DROP_NREASONS ? DROP_NAMES[r] : "?"; }
const char *lsim_latency_mode_name(lsim_latency_mode m) { return (unsigned)m < LSIM_LAT_NMODES ? LATENCY_NAMES[m] : "?"; }

/* The parse functions: one body, four tables. */
#define PARSE_(fn, type, names, count, what)                                   \
    int fn(const char *name, type *out, lsim_err *err)                         \
    {                                                                          \
        int i = lsim_name_index(names, count, name);                           \
        if (i < 0) return lsim_name_unknown(what, names, count, name, err);    \
        *out = (type)i;                                                        \
        return 0;                                                              \
    }
PARSE_(lsim_edge_class_parse, lsim_edge_class, EDGE_NAMES, LSIM_E_NCLASSES, "edge class")
PARSE_(lsim_node_kind_parse, lsim_node_kind, KIND_NAMES, LSIM_N_NKINDS, "node kind")
PARSE_(lsim_drop_reason_parse, lsim_drop_reason, DROP_NAMES, LSIM_DROP_NREASONS, "drop reason")
PARSE_(lsim_latency_mode_parse, lsim_latency_mode, LATENCY_NAMES, LSIM_LAT_NMODES, "latency mode")
PARSE_(lsim_phase_parse, lsim_phase, PHASE_NAMES, LSIM_PHASE_N, "training phase")
#undef PARSE_

/* Synthesized tags (gen.c): "<where>.mb<k>.fwd." / ".bwd." for layer and
 * gradient work, "grad.opt." for the optimizer step. */
lsim_phase lsim_phase_of_tag(const char *name)
{
    if (!name) return LSIM_PHASE_UNKNOWN;
    if (!strncmp(name, "grad.opt.", 9)) return LSIM_PHASE_OPTIMIZER;
    if (strstr(name, ".bwd.")) return LSIM_PHASE_BACKWARD;
    if (strstr(name, ".fwd.")) return LSIM_PHASE_FORWARD;
    return LSIM_PHASE_UNKNOWN;
}

/* ---------------------------------------------------------- node columns */

/* realloc one by one: a failure leaves the columns done so far larger
 * (their contents kept) and the rest as they were, so g stays whole. The
 * training columns' new slots get their none value: graph makers written
 * before those columns (what-if rebuilds, say) set every other column of
 * the nodes they make and leave these "unknown", never garbage. */
int lsim_graph_resize_nodes(lsim_graph *g, size_t cap, lsim_err *err)
{
    size_t c = cap ? cap : 1;
    if (lsim_graph_unshare(g, err)) return LSIM_ENOMEM;
#define RESIZE_(field, type)                                                                 \
    {                                                                                        \
        type *p_ = c <= SIZE_MAX / sizeof(type) ? lsim_realloc(g->field, c * sizeof(type)) : NULL; \
        if (!p_) goto nomem;                                                                 \
        g->field = p_;                                                                       \
    }
#define FILL_(field, type)                                                                   \
    {                                                                                        \
        size_t from_ = g->field ? g->n : 0;                                                  \
        RESIZE_(field, type)                                                                 \
        for (size_t i_ = from_; i_ < c; i_++) g->field[i_] = (type)LSIM_GRAPH_NONE_##field;  \
    }
    LSIM_GRAPH_BASE_COLUMNS(RESIZE_)
    LSIM_GRAPH_TRAINING_COLUMNS(FILL_)
#undef FILL_
#undef RESIZE_
    return 0;
nomem:
    return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", g->source ? g->source : "graph");
}

/* ------------------------------------------------------------------ CSR */

static void free_edges(lsim_graph *g)
{
    free(g->in_off);
    free(g->in_src);
    free(g->in_delay);
    free(g->in_class);
    free(g->out_off);
    free(g->out_dst);
}

/* Counting sorts: by target for the incoming CSR (list order kept within a
 * target), by source for the outgoing one, over the list or over the
 * incoming CSR. Everything is allocated before g is touched. */
/* The outgoing CSR (out_off, n + 1, and out_dst, one per edge: allocated
 * by the caller) from the incoming one, LSIM_OUT_BY_DST: by target, then by
 * the target's incoming order. 0 or LSIM_ENOMEM (nothing changed then). */
static int out_by_dst(size_t n, uint64_t ne, const uint64_t *in_off, const uint32_t *in_src, uint64_t *out_off,
                      uint32_t *out_dst)
{
    uint64_t *fill = lsim_calloc(n + 1, sizeof *fill);
    if (!fill) return LSIM_ENOMEM;
    memset(out_off, 0, (n + 1) * sizeof *out_off);
    for (uint64_t k = 0; k < ne; k++) out_off[in_src[k] + 1]++;
    for (size_t v = 0; v < n; v++) out_off[v + 1] += out_off[v];
    for (size_t v = 0; v < n; v++)
        for (uint64_t k = in_off[v]; k < in_off[v + 1]; k++) out_dst[out_off[in_src[k]] + fill[in_src[k]]++] = (uint32_t)v;
    free(fill);
    return 0;
}

int lsim_graph_outgoing(lsim_graph *g, lsim_err *err)
{
    if (out_by_dst(g->n, g->nedges, g->in_off, g->in_src, g->out_off, g->out_dst))
        return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", g->source ? g->source : "graph");
    return 0;
}

int lsim_graph_set_edges(lsim_graph *g, const lsim_edge *e, uint64_t ne, lsim_out_order order, lsim_err *err)
{
    size_t n = g->n, e1 = ne ? (size_t)ne : 1;
    int rc = 0;
    if (lsim_graph_unshare(g, err)) return LSIM_ENOMEM;
    for (uint64_t i = 0; i < ne; i++)
        if (e[i].src >= n || e[i].dst >= n)
            return lsim_err_set(err, LSIM_EINTERNAL, "%s: edge %llu names a node past %zu", g->source ? g->source : "graph",
                                (unsigned long long)i, n);
    uint64_t *in_off = lsim_calloc(n + 1, sizeof *in_off), *out_off = lsim_calloc(n + 1, sizeof *out_off);
    uint64_t *fill = lsim_calloc(n + 1, sizeof *fill);
    uint32_t *in_src = NULL, *out_dst = NULL;
    lsim_ns *in_delay = NULL;
    uint8_t *in_class = NULL;
    if (ne > SIZE_MAX / sizeof *in_delay || !in_off || !out_off || !fill || !(in_src = lsim_malloc(e1 * sizeof *in_src)) ||
        !(in_delay = lsim_malloc(e1 * sizeof *in_delay)) || !(in_class = lsim_malloc(e1 * sizeof *in_class)) ||
        !(out_dst = lsim_malloc(e1 * sizeof *out_dst))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", g->source ? g->source : "graph");
        goto cleanup;
    }
    for (uint64_t i = 0; i < ne; i++) {
        in_off[e[i].dst + 1]++;
        out_off[e[i].src + 1]++;
    }
    for (size_t v = 0; v < n; v++) {
        in_off[v + 1] += in_off[v];
        out_off[v + 1] += out_off[v];
    }
    for (uint64_t i = 0; i < ne; i++) { /* stable: list order within a node */
        uint64_t k = in_off[e[i].dst] + fill[e[i].dst]++;
        in_src[k] = e[i].src;
        in_delay[k] = e[i].delay;
        in_class[k] = e[i].cls;
    }
    memset(fill, 0, (n + 1) * sizeof *fill);
    if (order == LSIM_OUT_BY_LIST) {
        for (uint64_t i = 0; i < ne; i++) out_dst[out_off[e[i].src] + fill[e[i].src]++] = e[i].dst;
    } else if (out_by_dst(n, ne, in_off, in_src, out_off, out_dst)) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", g->source ? g->source : "graph");
        goto cleanup;
    }
    /* commit */
    free_edges(g);
    g->in_off = in_off, g->in_src = in_src, g->in_delay = in_delay, g->in_class = in_class;
    g->out_off = out_off, g->out_dst = out_dst;
    g->nedges = ne;
    in_off = out_off = NULL, in_src = out_dst = NULL, in_delay = NULL, in_class = NULL;
cleanup:
    free(fill);
    free(out_dst);
    free(in_class);
    free(in_delay);
    free(in_src);
    free(out_off);
    free(in_off);
    return rc;
}

void lsim_graph_count_edges(lsim_graph *g)
{
    memset(g->edges_by_class, 0, sizeof g->edges_by_class);
    for (uint64_t k = 0; k < g->nedges; k++) {
        unsigned c = g->in_class[k] & LSIM_EDGE_CLASS_MASK;
        if (c < LSIM_E_NCLASSES) g->edges_by_class[c]++;
    }
}

/* The incoming CSR of g as an edge list, in CSR order (caller frees). */
static lsim_edge *edge_list(const lsim_graph *g)
{
    lsim_edge *e = lsim_malloc((g->nedges ? g->nedges : 1) * sizeof *e);
    if (!e) return NULL;
    for (size_t v = 0; v < g->n; v++)
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
            e[k] = (lsim_edge){(uint32_t)v, g->in_src[k], g->in_delay[k], g->in_class[k]};
    return e;
}

/* ---------------------------------------------------------------- clone */

int lsim_graph_clone(const lsim_graph *g, lsim_graph **out, lsim_err *err)
{
    *out = NULL;
    lsim_graph *c = lsim_calloc(1, sizeof *c);
    if (!c) goto nomem;
    *c = *g; /* scalars and statistics; every pointer is replaced below */
    c->source = NULL, c->label = NULL;
    c->strings = NULL;
#define NULL_(field, type) c->field = NULL;
    LSIM_GRAPH_COLUMNS(NULL_)
#undef NULL_
    c->in_off = NULL, c->in_src = NULL, c->in_delay = NULL, c->in_class = NULL, c->out_off = NULL, c->out_dst = NULL;
    c->procs = NULL, c->iters = NULL, c->colls = NULL;
    c->cpu_ops = NULL;
    c->share_refs = NULL; /* the copy owns its structure */
    c->colls_refs = NULL; /* and its collectives (DUP below) */
    if (lsim_graph_resize_nodes(c, g->n, NULL)) goto nomem;
    if (g->n) {
#define COPY_(field, type) memcpy(c->field, g->field, g->n * sizeof(type));
        LSIM_GRAPH_COLUMNS(COPY_)
#undef COPY_
    }
#define DUP(field, count)                                                      \
    do {                                                                       \
        size_t n_ = (count) ? (count) : 1;                                     \
        if (!(c->field = lsim_malloc(n_ * sizeof *g->field))) goto nomem;           \
        if (count) memcpy(c->field, g->field, (count) * sizeof *g->field);     \
    } while (0)
    DUP(in_off, g->n + 1);
    DUP(out_off, g->n + 1);
    DUP(in_src, g->nedges);
    DUP(in_delay, g->nedges);
    DUP(in_class, g->nedges);
    DUP(out_dst, g->nedges);
    DUP(procs, g->nprocs);
    DUP(iters, g->niters);
    DUP(colls, g->ncoll);
#undef DUP
    if (lsim_graph_cpu_ops(g)) { /* the op tree follows its graph (--replicate-from copies) */
        const lsim_cpu_ops *t = g->cpu_ops;
        if (!(c->cpu_ops = lsim_calloc(1, sizeof *c->cpu_ops))) goto nomem;
        c->cpu_ops->n = t->n;
        c->cpu_ops->nnodes = t->nnodes;
        if (!(c->cpu_ops->op = lsim_malloc((t->n ? t->n : 1) * sizeof *t->op)) ||
            !(c->cpu_ops->node_op = lsim_malloc((t->nnodes ? t->nnodes : 1) * sizeof *t->node_op)))
            goto nomem;
        if (t->n) memcpy(c->cpu_ops->op, t->op, t->n * sizeof *t->op);
        if (t->nnodes) memcpy(c->cpu_ops->node_op, t->node_op, t->nnodes * sizeof *t->node_op);
    }
    if (!(c->source = lsim_strdup(g->source)) || !(c->strings = lsim_strtab_new())) goto nomem;
    /* ids are dense in insertion order, so re-interning keeps every id */
    for (uint32_t i = 0; i < lsim_strtab_count(g->strings); i++) {
        const char *s = lsim_strtab_get(g->strings, i);
        uint32_t id;
        if (lsim_strtab_intern(c->strings, s, strlen(s), &id) || id != i) goto nomem;
    }
    *out = c;
    return 0;
nomem:
    lsim_graph_free(c);
    return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory copying the graph", g->source);
}

/* ------------------------------------------------------------- ablation */

/* Why a list first: the kept edges (with their new delays) and the new CSR
 * are all allocated before g changes, so that running out of memory
 * leaves g as it was. The list is in incoming-CSR order, so the new CSR
 * keeps every surviving edge's order. */
int lsim_graph_ablate(lsim_graph *g, unsigned drop_mask, int zero_launch_latency, lsim_err *err)
{
    lsim_edge *e = edge_list(g);
    if (!e) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", g->source);
    uint64_t w = 0, dropped[LSIM_E_NCLASSES] = {0};
    for (uint64_t k = 0; k < g->nedges; k++) {
        int cls = e[k].cls & LSIM_EDGE_CLASS_MASK;
        if (drop_mask & (1u << cls)) {
            dropped[cls]++;
            continue;
        }
        /* zero latency: the GPU work may start when its call starts */
        if (cls == LSIM_E_LAUNCH && zero_launch_latency) e[k].delay = -g->dur[e[k].src];
        e[w++] = e[k];
    }
    int rc = lsim_graph_set_edges(g, e, w, LSIM_OUT_BY_DST, NULL);
    free(e);
    if (rc) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", g->source);
    for (int c = 0; c < LSIM_E_NCLASSES; c++) g->edges_by_class[c] -= dropped[c];
    return 0;
}

/* ------------------------------------------------------------------ free */

/* The structure (node columns, edge CSRs) of g: freed, or, when shared,
 * released by g (freed with the last graph holding it). */
static void drop_structure(lsim_graph *g)
{
    if (g->share_refs && --*g->share_refs > 0) {
        g->share_refs = NULL;
        return;
    }
    free(g->share_refs);
    g->share_refs = NULL;
#define FREE_(field, type) free(g->field);
    LSIM_GRAPH_COLUMNS(FREE_)
#undef FREE_
    free_edges(g);
}

/* g's collectives' table: freed, or, when shared, released by g. */
static void drop_colls(lsim_graph *g)
{
    if (g->colls_refs && --*g->colls_refs > 0) {
        g->colls_refs = NULL;
        g->colls = NULL;
        return;
    }
    free(g->colls_refs);
    g->colls_refs = NULL;
    free(g->colls);
    g->colls = NULL;
}

int lsim_graph_share_colls(lsim_graph *g, lsim_graph *src, lsim_err *err)
{
    if (g == src) return 0;
    if (!src->colls_refs) {
        if (!(src->colls_refs = lsim_malloc(sizeof *src->colls_refs)))
            return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", src->source ? src->source : "graph");
        *src->colls_refs = 1;
    }
    drop_colls(g);
    g->colls = src->colls;
    g->ncoll = src->ncoll;
    g->colls_refs = src->colls_refs;
    ++*g->colls_refs;
    return 0;
}

/* g's own copy of a shared collectives' table. */
static int unshare_colls(lsim_graph *g, lsim_err *err)
{
    if (!g->colls_refs) return 0;
    if (*g->colls_refs > 1) {
        size_t n = g->ncoll ? g->ncoll : 1;
        lsim_coll_info *c = lsim_malloc(n * sizeof *c);
        if (!c) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", g->source ? g->source : "graph");
        memcpy(c, g->colls, g->ncoll * sizeof *c);
        --*g->colls_refs;
        g->colls = c;
    } else {
        free(g->colls_refs);
    }
    g->colls_refs = NULL;
    return 0;
}

/* Why a count and not a copy: the DP replicas and TP ranks of a
 * synthesized job share one structure per pipeline stage, so a
 * 16,384-GPU job holds a handful of them (docs/hdf5-schema.md, "Shared
 * structure"); the engines keep each GPU's times apart. */
int lsim_graph_share(lsim_graph *g, lsim_graph *src, lsim_err *err)
{
    if (g == src) return 0;
    if (!src->share_refs) {
        if (!(src->share_refs = lsim_malloc(sizeof *src->share_refs)))
            return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", src->source ? src->source : "graph");
        *src->share_refs = 1;
    }
    drop_structure(g);
#define SHARE_(field, type) g->field = src->field;
    LSIM_GRAPH_COLUMNS(SHARE_)
#undef SHARE_
    g->in_off = src->in_off;
    g->in_src = src->in_src;
    g->in_delay = src->in_delay;
    g->in_class = src->in_class;
    g->out_off = src->out_off;
    g->out_dst = src->out_dst;
    g->n = src->n;
    g->nedges = src->nedges;
    g->share_refs = src->share_refs;
    ++*g->share_refs;
    return 0;
}

/* One copy per array, all made before g changes, so that a failure leaves
 * g sharing as before. */
int lsim_graph_unshare(lsim_graph *g, lsim_err *err)
{
    if (unshare_colls(g, err)) return LSIM_ENOMEM;
    if (!g->share_refs) return 0;
    if (*g->share_refs == 1) { /* the last holder: the structure is g's own */
        free(g->share_refs);
        g->share_refs = NULL;
        return 0;
    }
    size_t n = g->n ? g->n : 1, e = g->nedges ? (size_t)g->nedges : 1;
    enum { NCOPY = 0
#define COUNT_(field, type) +1
        LSIM_GRAPH_COLUMNS(COUNT_)
#undef COUNT_
        + 6 };
    void *src[NCOPY], *dst[NCOPY];
    size_t bytes[NCOPY], k = 0;
#define ADD_(field, type) src[k] = g->field, bytes[k++] = n * sizeof(type);
    LSIM_GRAPH_COLUMNS(ADD_)
#undef ADD_
    src[k] = g->in_off, bytes[k++] = (g->n + 1) * sizeof *g->in_off;
    src[k] = g->out_off, bytes[k++] = (g->n + 1) * sizeof *g->out_off;
    src[k] = g->in_src, bytes[k++] = e * sizeof *g->in_src;
    src[k] = g->in_delay, bytes[k++] = e * sizeof *g->in_delay;
    src[k] = g->in_class, bytes[k++] = e * sizeof *g->in_class;
    src[k] = g->out_dst, bytes[k++] = e * sizeof *g->out_dst;
    for (k = 0; k < NCOPY; k++) {
        if (!(dst[k] = lsim_malloc(bytes[k]))) {
            while (k-- > 0) free(dst[k]);
            return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", g->source ? g->source : "graph");
        }
        memcpy(dst[k], src[k], bytes[k]);
    }
    k = 0;
#define SET_(field, type) g->field = dst[k++];
    LSIM_GRAPH_COLUMNS(SET_)
#undef SET_
    g->in_off = dst[k++];
    g->out_off = dst[k++];
    g->in_src = dst[k++];
    g->in_delay = dst[k++];
    g->in_class = dst[k++];
    g->out_dst = dst[k++];
    --*g->share_refs;
    g->share_refs = NULL;
    return 0;
}

int lsim_graph_same_structure(const lsim_graph *a, const lsim_graph *b)
{
    if (a->n != b->n || a->nedges != b->nedges) return 0;
    size_t n = a->n, e = (size_t)a->nedges;
#define CMP_(field, type) if (n && memcmp(a->field, b->field, n * sizeof(type))) return 0;
    LSIM_GRAPH_COLUMNS(CMP_)
#undef CMP_
    return !memcmp(a->in_off, b->in_off, (n + 1) * sizeof *a->in_off) &&
           (!e || (!memcmp(a->in_src, b->in_src, e * sizeof *a->in_src) &&
                   !memcmp(a->in_delay, b->in_delay, e * sizeof *a->in_delay) &&
                   !memcmp(a->in_class, b->in_class, e * sizeof *a->in_class)));
}

const char *lsim_graph_name(const lsim_graph *g)
{
    return g->label ? g->label : g->source ? g->source : "graph";
}

void lsim_graph_free(lsim_graph *g)
{
    if (!g) return;
    free(g->source);
    free(g->label);
    lsim_strtab_free(g->strings);
    drop_structure(g);
    free(g->procs);
    free(g->iters);
    drop_colls(g);
    lsim_cpu_ops_free(g->cpu_ops);
    free(g);
}

void lsim_cpu_ops_free(lsim_cpu_ops *t)
{
    if (!t) return;
    free(t->op);
    free(t->node_op);
    free(t);
}

const lsim_cpu_ops *lsim_graph_cpu_ops(const lsim_graph *g)
{
    return g && g->cpu_ops && g->cpu_ops->nnodes == g->n ? g->cpu_ops : NULL;
}

uint64_t lsim_graph_inferred_total(const lsim_graph *g)
{
    uint64_t s = 0;
    for (int i = 0; i < LSIM_E_NCLASSES; i++) s += g->inferred_by_class[i];
    return s;
}

uint64_t lsim_graph_dropped_total(const lsim_graph *g)
{
    uint64_t s = 0;
    for (int i = 0; i < LSIM_DROP_NREASONS; i++) s += g->dropped[i];
    return s;
}

/* ---------------------------------------------------------------- bounds */

/* The checks of graph.h, in one pass over nodes and edges. Absolute times
 * and the ns values are compared before any arithmetic on them, so that the
 * check itself cannot overflow: a span is computed only from two times
 * already known to be within +-LSIM_TIME_MAX. */
int lsim_graph_check_tables(const lsim_graph *g, const char *file, size_t gpu, lsim_err *err)
{
    const char *f = file ? file : (g->source ? g->source : "graph");
    const lsim_ns D = LSIM_DUR_MAX;
    int32_t w = g->world_size;
    if (w == 0 || w < -1 || w > LSIM_WORLD_MAX)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu: gpus/world_size %d is outside -1 (unknown) or 1..%d", f, gpu,
                            (int)w, LSIM_WORLD_MAX);
    if (g->rank < -1 || (w > 0 && g->rank >= w))
        return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu: gpus/rank %d is outside -1 (unknown) or 0..%d (world_size %d)",
                            f, gpu, (int)g->rank, w > 0 ? (int)w - 1 : LSIM_WORLD_MAX - 1, (int)w);
    if (g->launch_latency_ns < 0 || g->launch_latency_ns > D)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu: gpus/launch_latency_ns %lld is outside 0..1e13 ns", f, gpu,
                            (long long)g->launch_latency_ns);
    if (g->queued_gap_ns < 0 || g->queued_gap_ns > D)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu: gpus/queued_gap_ns %lld is outside 0..1e13 ns", f, gpu,
                            (long long)g->queued_gap_ns);
    /* the memory figures (graph.h): a source the readers name, a device
     * id a trace's reader keeps (build.c init_memory), and byte counts
     * that a report prints as GB and compares with each other */
    if (g->mem_source < 0 || g->mem_source >= LSIM_MEM_NSOURCES)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu: gpus/mem_source %d is outside 0..%d", f, gpu,
                            (int)g->mem_source, LSIM_MEM_NSOURCES - 1);
    if (g->mem_device < -1 || g->mem_device >= LSIM_TRACE_MEM_DEVICES)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu: gpus/mem_device %d is outside -1 (none) or 0..%d", f, gpu,
                            (int)g->mem_device, LSIM_TRACE_MEM_DEVICES - 1);
    {
        const struct { const char *nm; int64_t v; } m[3] = {{"mem_peak_allocated", g->mem_peak_allocated},
                                                            {"mem_peak_reserved", g->mem_peak_reserved},
                                                            {"mem_capacity", g->mem_capacity}};
        for (int k = 0; k < 3; k++)
            if (m[k].v < 0 || m[k].v > LSIM_BYTES_MAX)
                return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu: gpus/%s %lld is outside 0..1e13 bytes", f, gpu,
                                    m[k].nm, (long long)m[k].v);
    }
    /* (values are named by their store datasets, docs/hdf5-schema.md)
     * a group holds at most the world (or LSIM_WORLD_MAX GPUs when the
     * trace did not say), and no collective moves more than
     * LSIM_BYTES_MAX: the cost model multiplies bytes by the group's
     * steps, and what-if sums them (whatif/ident.c) */
    int32_t gmax = w > 0 ? w : LSIM_WORLD_MAX;
    for (size_t i = 0; i < g->ncoll; i++) {
        const lsim_coll_info *c = &g->colls[i];
        const struct { const char *nm; int64_t v; } b[3] = {
            {"bytes", c->bytes}, {"in_nelems", c->in_nelems}, {"out_nelems", c->out_nelems}};
        if (c->group_size == 0 || c->group_size < -1 || c->group_size > gmax)
            return lsim_err_set(err, LSIM_EFORMAT,
                                "%s: GPU %zu, collective %zu: colls/group_size %d is outside -1 (unknown) or 1..%d (%s)", f,
                                gpu, i, (int)c->group_size, (int)gmax, w > 0 ? "world_size" : "LSIM_WORLD_MAX");
        for (int k = 0; k < 3; k++)
            if (b[k].v < -1 || b[k].v > LSIM_BYTES_MAX)
                return lsim_err_set(err, LSIM_EFORMAT,
                                    "%s: GPU %zu, collective %zu: colls/%s %lld is outside -1 (unknown) or 0..1e13", f, gpu,
                                    i, b[k].nm, (long long)b[k].v);
        if (c->dtype_bytes == 0 || c->dtype_bytes < -1 || c->dtype_bytes > 64)
            return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu, collective %zu: colls/dtype_bytes %d is outside -1 (unknown) or 1..64",
                                f, gpu, i, (int)c->dtype_bytes);
        /* the root's rank within its process group (trace.h), which the
         * job looks up in the group's ranks list (job.c root_rank) */
        int32_t rmax = c->group_size > 0 ? c->group_size : gmax;
        if (c->root < -1 || c->root >= rmax)
            return lsim_err_set(err, LSIM_EFORMAT,
                                "%s: GPU %zu, collective %zu: colls/root %d is outside -1 (unknown) or 0..%d (%s)", f,
                                gpu, i, (int)c->root, (int)rmax - 1,
                                c->group_size > 0 ? "group_size - 1" : "the largest group - 1");
    }
    return 0;
}

int lsim_graph_check_bounds(const lsim_graph *g, const char *file, size_t gpu, lsim_err *err)
{
    const char *f = file ? file : (g->source ? g->source : "graph");
    const lsim_ns T = LSIM_TIME_MAX, D = LSIM_DUR_MAX;
    lsim_ns sum = 0;
    int rc = lsim_graph_check_tables(g, file, gpu, err);
    if (rc) return rc;
#define OUT_T(t) ((t) < -T || (t) > T)
    if (OUT_T(g->t0))
        return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu: start time t0 %lld ns is outside +-(2^62 - 1) ns", f, gpu,
                            (long long)g->t0);
    for (size_t v = 0; v < g->n; v++) {
        lsim_ns d = g->dur[v], s = g->obs_start[v], e = g->obs_end[v], r = g->release[v];
        if (d < 0 || d > D)
            return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu, node %zu: duration %lld ns is outside 0..1e13 ns", f,
                                gpu, v, (long long)d);
        if (r != INT64_MIN && OUT_T(r))
            return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu, node %zu: release time %lld ns is outside +-(2^62 - 1) ns",
                                f, gpu, v, (long long)r);
        if (s != INT64_MIN || e != INT64_MIN) { /* LSIM_OBS_NONE (metrics.h): never observed */
            if (s == INT64_MIN || e == INT64_MIN || OUT_T(s) || OUT_T(e))
                return lsim_err_set(err, LSIM_EFORMAT,
                                    "%s: GPU %zu, node %zu: observed start %lld ns / end %lld ns: not both within +-(2^62 - 1) ns",
                                    f, gpu, v, (long long)s, (long long)e);
            if (e - s < 0 || e - s > D)
                return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu, node %zu: observed span %lld ns is outside 0..1e13 ns",
                                    f, gpu, v, (long long)(e - s));
        }
        sum += d; /* <= 2^53 + 1e13 before the test below: no overflow */
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
            lsim_ns x = g->in_delay[k];
            if (g->in_src[k] == v) /* the engine would wait for it forever */
                return lsim_err_set(err, LSIM_EFORMAT, "%s: GPU %zu, node %zu: in-edge %llu is a self-loop (edges/in_src)",
                                    f, gpu, v, (unsigned long long)k);
            if (x < -D || x > D)
                return lsim_err_set(err, LSIM_EFORMAT,
                                    "%s: GPU %zu, node %zu: in-edge %llu has a delay of %lld ns, outside +-1e13 ns", f, gpu,
                                    v, (unsigned long long)k, (long long)x);
            sum += x < 0 ? -x : x;
            if (sum > LSIM_GRAPH_SUM_MAX) break;
        }
        if (sum > LSIM_GRAPH_SUM_MAX)
            return lsim_err_set(err, LSIM_EFORMAT,
                                "%s: GPU %zu: its durations and delays add up to more than 2^53 ns (104 days) by node %zu",
                                f, gpu, v);
    }
#undef OUT_T
    return 0;
}
