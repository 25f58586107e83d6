/* Chakra ET import (include/lumosim/chakra.h): one file, one graph. The
 * file is read whole with one read and split into its varint-prefixed
 * messages (protobuf's delimited-stream framing, checked before any is
 * unpacked); protobuf-c unpacks the nodes one at a time into one arena,
 * reset for the next, and each node's columns and edges are taken before
 * the next is unpacked. The dependencies (ids, cycles) are checked once
 * every node is read. */
#include "lumosim/chakra.h"
#include "lumosim/alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chakra_internal.h"

typedef ChakraProtoMsg__Node cnode;
typedef ChakraProtoMsg__AttributeProto cattr;

/* protobuf-c's allocations while unpacking one node: bumped out of one
 * block and reset, not freed, for the next node, so that after the first
 * node unpacking calls no malloc and reuses the same cached bytes. A node
 * larger than the block gets blocks of its own until the reset, which
 * enlarges the block to fit it next time. */
typedef struct arena {
    uint8_t *mem;
    size_t cap, used, want;
    void **extra;
    size_t nextra, capextra;
} arena;

static void *arena_alloc(void *data, size_t size)
{
    arena *a = data;
    size = (size + 15) & ~(size_t)15;
    a->want += size;
    if (size <= a->cap - a->used) {
        void *p = a->mem + a->used;
        a->used += size;
        return p;
    }
    void *p = lsim_malloc(size);
    if (p && LSIM_GROW(a->extra, &a->capextra, a->nextra + 1)) free(p), p = NULL;
    if (p) a->extra[a->nextra++] = p;
    return p;
}

static void arena_free(void *data, void *p) { (void)data, (void)p; }

static void arena_drop_extra(arena *a)
{
    for (size_t i = 0; i < a->nextra; i++) free(a->extra[i]);
    a->nextra = 0;
}

/* Ready for the next node. A block that cannot be enlarged leaves the next
 * large node to extra blocks again: slower, not wrong. */
static void arena_reset(arena *a)
{
    arena_drop_extra(a);
    if (a->want > a->cap) {
        size_t nc = a->cap ? a->cap : 1;
        while (nc < a->want) nc *= 2;
        uint8_t *nb = lsim_malloc(nc);
        if (nb) free(a->mem), a->mem = nb, a->cap = nc;
    }
    a->used = a->want = 0;
}

static void arena_free_all(arena *a)
{
    arena_drop_extra(a);
    free(a->extra);
    free(a->mem);
}

typedef struct rctx {
    const char *path;
    lsim_err *err;
    uint8_t *bytes;
    size_t size;
    lsim_chakra_cache *cache; /* non-NULL: bytes are its buffer (lsim_ck_cache_file), not owned */
    ChakraProtoMsg__GlobalMetadata *meta;
    size_t *body, *len; /* each node message's bytes, from the framing */
    size_t n;
    int own;            /* written by lumosim: the lsim.* attributes hold the graph */
    int32_t rank, world;
    uint64_t *id;       /* each node's Chakra id */
    uint8_t *cpu;       /* each node a CPU node (lsim's or Chakra's sense) */
    uint64_t *ids;      /* (id, node index) pairs sorted by id; NULL: ids are 0..n-1 in order */
    uint64_t *dep;      /* each edge's source id, until resolved */
    lsim_edge *e;
    size_t ne, cape, capdep;
    const lsim_graph *g; /* for the names of nodes already read */
} rctx;

static const char *nname(const cnode *m) { return m->name && m->name[0] ? m->name : "?"; }

/* Node v's name once it is read (the error lines after the nodes). */
static const char *vname(const rctx *c, size_t v)
{
    const char *s = lsim_strtab_get(c->g->strings, c->g->name[v]);
    return s && s[0] ? s : "?";
}

static int read_all(rctx *c)
{
    FILE *f = fopen(c->path, "rb");
    if (!f) return lsim_err_set(c->err, LSIM_EIO, "%s: cannot open: %s", c->path, strerror(errno));
    int rc = 0;
    struct stat st;
    if (fstat(fileno(f), &st) || st.st_size < 0) rc = lsim_err_set(c->err, LSIM_EIO, "%s: cannot read: %s", c->path, strerror(errno));
    else if (!(c->bytes = c->cache ? lsim_ck_cache_file(c->cache, (size_t)st.st_size + 1)
                                   : lsim_malloc((size_t)st.st_size + 1)))
        rc = lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
    else if ((c->size = fread(c->bytes, 1, (size_t)st.st_size, f)) != (size_t)st.st_size || ferror(f))
        rc = lsim_err_set(c->err, LSIM_EIO, "%s: cannot read: %s", c->path, ferror(f) ? strerror(errno) : "shorter than its size");
    fclose(f);
    return rc;
}

/* The message at *pos: its bytes [*body, *body + *len). 1 when one is
 * there, 0 at the end, an error for a truncated prefix or body. k: the
 * message's number (0: the metadata), for the message. */
static int next_msg(rctx *c, size_t *pos, size_t *body, size_t *len, size_t k)
{
    if (*pos == c->size) return 0;
    uint64_t v = 0;
    size_t p = *pos;
    for (int sh = 0;; sh += 7) {
        if (p == c->size || sh > 63)
            return lsim_err_set(c->err, LSIM_EFORMAT, "%s: message %zu at byte %zu: truncated or corrupt length prefix",
                                c->path, k, *pos);
        uint8_t b = c->bytes[p++];
        v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) break;
    }
    if (v > c->size - p)
        return lsim_err_set(c->err, LSIM_EFORMAT,
                            "%s: message %zu at byte %zu: truncated (%" PRIu64 " bytes announced, %zu left)", c->path,
                            k, *pos, v, c->size - p);
    *body = p, *len = (size_t)v, *pos = p + (size_t)v;
    return 1;
}

/* The framing of the whole file (every message's place), then the
 * GlobalMetadata unpacked. */
static int frame_all(rctx *c)
{
    size_t pos = 0, body, len, cap = 0, capl = 0;
    int r = next_msg(c, &pos, &body, &len, 0);
    if (r < 0) return r;
    if (!r) return lsim_err_set(c->err, LSIM_EFORMAT, "%s: empty: a Chakra ET file starts with its GlobalMetadata", c->path);
    size_t mb = body, ml = len;
    for (size_t k = 1;; k++) {
        size_t b, l;
        if ((r = next_msg(c, &pos, &b, &l, k)) < 0) return r;
        if (!r) break;
        if (c->n >= UINT32_MAX - 1) return lsim_err_set(c->err, LSIM_EFORMAT, "%s: more than 2^32 nodes", c->path);
        if (LSIM_GROW(c->body, &cap, c->n + 1) || LSIM_GROW(c->len, &capl, c->n + 1))
            return lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
        c->body[c->n] = b, c->len[c->n++] = l;
    }
    c->meta = chakra_proto_msg__global_metadata__unpack(NULL, ml, c->bytes + mb);
    if (!c->meta) return lsim_err_set(c->err, LSIM_EFORMAT, "%s: message 0: not a Chakra GlobalMetadata", c->path);
    return 0;
}

/* ------------------------------------------------------------ attributes */

static const cattr *find(cattr *const *a, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (a[i]->name && !strcmp(a[i]->name, name)) return a[i];
    return NULL;
}

/* An integer attribute of any integer (or bool) type: 1 with *v, 0 absent
 * or not an integer. */
static int int_of(const cattr *x, int64_t *v)
{
    if (!x) return 0;
    switch (x->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL: *v = x->int64_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL: *v = x->int32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL: *v = x->uint32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL: *v = (int64_t)x->uint64_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL: *v = x->sint32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL: *v = x->sint64_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL: *v = x->bool_val; return 1;
    default: return 0;
    }
}

static int64_t int_or(const cattr *x, int64_t dflt)
{
    int64_t v;
    return int_of(x, &v) ? v : dflt;
}

static const char *str_of(const cattr *x)
{
    return x && x->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL ? x->string_val : NULL;
}

/* An int64 list attribute: its values and count, NULL when absent. */
static const int64_t *i64s_of(const cattr *x, size_t *cnt)
{
    *cnt = 0;
    if (!x || x->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST || !x->int64_list) return NULL;
    static const int64_t none[1] = {0}; /* present but empty: not NULL, which says absent */
    *cnt = x->int64_list->n_values;
    return *cnt ? x->int64_list->values : none;
}

static char *const *strs_of(const cattr *x, size_t *cnt)
{
    *cnt = 0;
    if (!x || x->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_LIST || !x->string_list) return NULL;
    static char *const none[1] = {NULL};
    *cnt = x->string_list->n_values;
    return *cnt ? x->string_list->values : none;
}

#define NA(m) (m)->attr, (m)->n_attr

/* The node attributes lumosim reads: each node's attributes are sorted
 * into these slots in one pass (the first of a name counts, as a search by
 * name would find), instead of a search by name per attribute read. */
enum {
    S_IS_CPU, S_PID, S_TID, S_DEVICE, S_STREAM, S_COMM_TYPE, S_COMM_SIZE, S_PG_NAME, S_COMM_GROUP_SIZE,
    S_COMM_SRC, S_COMM_DST, S_KIND, S_PROC, S_FLAGS, S_DUR, S_OBS, S_RELEASE, S_CORR, S_ITER, S_COLL,
    S_PHASE, S_FWD_SEQ, S_GRAD_BYTES, S_DEPS, S_N
};

#define SLOT(x) {x, sizeof x - 1}
static const struct {
    const char *name;
    size_t len;
} slot_name[S_N] = {SLOT("is_cpu_op"),     SLOT("pid"),          SLOT("tid"),           SLOT("device"),
                    SLOT("stream"),        SLOT("comm_type"),    SLOT("comm_size"),     SLOT("pg_name"),
                    SLOT("comm_group_size"), SLOT("comm_src"),   SLOT("comm_dst"),      SLOT(LSIM_CK_A_KIND),
                    SLOT(LSIM_CK_A_PROC),  SLOT(LSIM_CK_A_FLAGS), SLOT(LSIM_CK_A_DUR),  SLOT(LSIM_CK_A_OBS),
                    SLOT(LSIM_CK_A_RELEASE), SLOT(LSIM_CK_A_CORR), SLOT(LSIM_CK_A_ITER), SLOT(LSIM_CK_A_COLL),
                    SLOT(LSIM_CK_A_PHASE), SLOT(LSIM_CK_A_FWD_SEQ), SLOT(LSIM_CK_A_GRAD_BYTES), SLOT(LSIM_CK_A_DEPS)};

static void slots_of(const cnode *m, const cattr **sl)
{
    for (int k = 0; k < S_N; k++) sl[k] = NULL;
    for (size_t i = 0; i < m->n_attr; i++) {
        const char *nm = m->attr[i]->name;
        if (!nm) continue;
        size_t len = strlen(nm);
        for (int k = 0; k < S_N; k++)
            if (slot_name[k].len == len && nm[len - 1] == slot_name[k].name[len - 1] && !memcmp(nm, slot_name[k].name, len)) {
                if (!sl[k]) sl[k] = m->attr[i];
                break;
            }
    }
}

/* ------------------------------------------------------------ checks */

static int cmp_id(const void *a, const void *b)
{
    uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
    return x < y ? -1 : x > y;
}

/* ids: (id, index) pairs sorted by id; a repeated id is an error. Ids
 * 0..n-1 in order (every file lumosim writes) need no table. */
static int index_ids(rctx *c)
{
    size_t v = 0;
    while (v < c->n && c->id[v] == v) v++;
    if (v == c->n) return 0;
    uint64_t *pairs = lsim_malloc((2 * c->n + 1) * sizeof *pairs);
    if (!pairs) return lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
    for (size_t i = 0; i < c->n; i++) pairs[2 * i] = c->id[i], pairs[2 * i + 1] = i;
    qsort(pairs, c->n, 2 * sizeof *pairs, cmp_id);
    c->ids = pairs;
    for (size_t i = 1; i < c->n; i++)
        if (pairs[2 * i] == pairs[2 * i - 2])
            return lsim_err_set(c->err, LSIM_EFORMAT, "%s: node %" PRIu64 " '%s': a second node with the same id",
                                c->path, pairs[2 * i], vname(c, pairs[2 * i + 1]));
    return 0;
}

/* The index of the node with id `id`, or -1. */
static int64_t lookup(const rctx *c, uint64_t id)
{
    if (!c->ids) return id < c->n ? (int64_t)id : -1;
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->ids[2 * mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < c->n && c->ids[2 * lo] == id ? (int64_t)c->ids[2 * lo + 1] : -1;
}

static int check_type(const rctx *c, const cnode *m)
{
    static const char *const names[] = {"INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE",
                                        "COMP_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE",
                                        "STORAGE_NODE", "BATCH_NODE", "CHECKPOINT_NODE"};
    int t = (int)m->type;
    if (t >= CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE && t <= CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE) return 0;
    if (t >= 0 && t <= CHAKRA_PROTO_MSG__NODE_TYPE__CHECKPOINT_NODE)
        return lsim_err_set(c->err, LSIM_EFORMAT,
                            "%s: node %" PRIu64 " '%s': node type %s is not one lumosim reads (metadata, memory, "
                            "compute and communication nodes)",
                            c->path, m->id, nname(m), names[t]);
    return lsim_err_set(c->err, LSIM_EFORMAT, "%s: node %" PRIu64 " '%s': unknown node type %d", c->path, m->id,
                        nname(m), t);
}

/* ------------------------------------------------------------ the graph */

static int is_cpu(const rctx *c, const cnode *m, const cattr *const *sl)
{
    int64_t k;
    if (c->own && int_of(sl[S_KIND], &k)) return k == LSIM_N_CPU || k == LSIM_N_RUNTIME;
    return int_or(sl[S_IS_CPU], m->type == CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE) != 0;
}

/* Node v's incoming edges, in order: ctrl_deps, then data_deps, each an
 * edge from the node named (resolved by resolve_edges once every id is
 * known). Own files: classes and delays from lsim.deps; others: delay 0,
 * the class from the two ends (resolve_edges, docs/chakra.md). */
static int take_edges(rctx *c, const cnode *m, const cattr *const *sl, size_t v)
{
    size_t nd = 0, nn = m->n_ctrl_deps + m->n_data_deps;
    const int64_t *deps = c->own ? i64s_of(sl[S_DEPS], &nd) : NULL;
    if (c->own && m->n_ctrl_deps && (!deps || nd != 2 * m->n_ctrl_deps))
        return lsim_err_set(c->err, LSIM_EFORMAT, "%s: node %" PRIu64 " '%s': %s does not match its %zu ctrl_deps",
                            c->path, m->id, nname(m), LSIM_CK_A_DEPS, m->n_ctrl_deps);
    if (LSIM_GROW(c->e, &c->cape, c->ne + nn) || LSIM_GROW(c->dep, &c->capdep, c->ne + nn))
        return lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
    for (size_t j = 0; j < nn; j++) {
        lsim_edge *x = &c->e[c->ne];
        c->dep[c->ne++] = j < m->n_ctrl_deps ? m->ctrl_deps[j] : m->data_deps[j - m->n_ctrl_deps];
        x->dst = (uint32_t)v, x->src = 0, x->delay = 0, x->cls = 0xff; /* 0xff: from the ends */
        if (deps && j < m->n_ctrl_deps) {
            x->delay = deps[2 * j];
            if ((deps[2 * j + 1] & LSIM_EDGE_CLASS_MASK) >= LSIM_E_NCLASSES || deps[2 * j + 1] < 0 ||
                deps[2 * j + 1] > 0xff)
                return lsim_err_set(c->err, LSIM_EFORMAT, "%s: node %" PRIu64 " '%s': edge class %" PRId64 " out of range",
                                    c->path, m->id, nname(m), deps[2 * j + 1]);
            x->cls = (uint8_t)deps[2 * j + 1];
        }
    }
    return 0;
}

/* Every edge's source from its id, once every node is read. */
static int resolve_edges(rctx *c, const uint32_t *proc)
{
    for (size_t k = 0; k < c->ne; k++) {
        lsim_edge *x = &c->e[k];
        size_t v = x->dst;
        int64_t u = lookup(c, c->dep[k]);
        if (u < 0)
            return lsim_err_set(c->err, LSIM_EFORMAT,
                                "%s: node %" PRIu64 " '%s': depends on node %" PRIu64 ", which the file does not hold",
                                c->path, c->id[v], vname(c, v), c->dep[k]);
        if ((size_t)u == v)
            return lsim_err_set(c->err, LSIM_EFORMAT, "%s: node %" PRIu64 " '%s': depends on itself (a cycle)", c->path,
                                c->id[v], vname(c, v));
        x->src = (uint32_t)u;
        if (x->cls != 0xff) continue;
        int cu = c->cpu[u], cv = c->cpu[v], same = proc[u] == proc[v];
        x->cls = cu && cv ? (same ? LSIM_E_CPU_THREAD : LSIM_E_CPU_XTHREAD)
                 : cu    ? LSIM_E_LAUNCH
                 : cv    ? LSIM_E_SYNC
                         : (same ? LSIM_E_STREAM : LSIM_E_EVENT);
    }
    return 0;
}

/* A dependency cycle: Kahn's order over the edges; a node left over waits
 * on a cycle, and walking back along left-over predecessors reaches one of
 * its nodes, which the message names. */
static int check_acyclic(rctx *c, const lsim_graph *g)
{
    size_t n = g->n, done = 0, head = 0;
    uint32_t *indeg = lsim_malloc((n + 1) * sizeof *indeg), *queue = lsim_malloc((n + 1) * sizeof *queue);
    int rc = 0;
    if (!indeg || !queue) {
        rc = lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
        goto cleanup;
    }
    for (size_t v = 0; v < n; v++) {
        indeg[v] = (uint32_t)(g->in_off[v + 1] - g->in_off[v]);
        if (!indeg[v]) queue[done++] = (uint32_t)v;
    }
    while (head < done) {
        uint32_t u = queue[head++];
        for (uint64_t k = g->out_off[u]; k < g->out_off[u + 1]; k++)
            if (--indeg[g->out_dst[k]] == 0) queue[done++] = g->out_dst[k];
    }
    if (done == n) goto cleanup;
    size_t v = 0;
    while (!indeg[v]) v++;
    for (size_t step = 0; step < n; step++) /* n steps back: inside the cycle */
        for (uint64_t k = g->in_off[v]; k < g->in_off[v + 1]; k++)
            if (indeg[g->in_src[k]]) {
                v = g->in_src[k];
                break;
            }
    rc = lsim_err_set(c->err, LSIM_EFORMAT, "%s: node %" PRIu64 " '%s': on a dependency cycle", c->path, c->id[v],
                      vname(c, v));
cleanup:
    free(indeg);
    free(queue);
    return rc;
}

static int intern(rctx *c, lsim_graph *g, const char *s, uint32_t *id)
{
    if (lsim_strtab_intern(g->strings, s, strlen(s), id))
        return lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
    return 0;
}

static int bad_meta(const rctx *c, const char *what)
{
    return lsim_err_set(c->err, LSIM_EFORMAT, "%s: GlobalMetadata: %s", c->path, what);
}

/* A lumosim file's tables: the graph's scalars, processors, iterations and
 * collectives from the GlobalMetadata. */
static int own_tables(rctx *c, lsim_graph *g)
{
    ChakraProtoMsg__GlobalMetadata *md = c->meta;
    size_t n = 0, n2 = 0, n3 = 0;
    const int64_t *w = i64s_of(find(NA(md), LSIM_CK_A_GRAPH), &n);
    lsim_ck_graph_set(g, w);
    const char *s = str_of(find(NA(md), LSIM_CK_A_SOURCE));
    if (s && !(g->source = lsim_strdup(s))) return lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
    if ((s = str_of(find(NA(md), LSIM_CK_A_DEVICE))) && intern(c, g, s, &g->device)) return LSIM_ENOMEM;
    const int64_t *p = i64s_of(find(NA(md), LSIM_CK_A_PROCS), &n);
    if (!p || n % 4 || n / 4 > UINT32_MAX) return bad_meta(c, LSIM_CK_A_PROCS " missing or malformed");
    g->nprocs = (uint32_t)(n / 4);
    if (!(g->procs = lsim_calloc(g->nprocs + 1, sizeof *g->procs))) return LSIM_ENOMEM;
    for (size_t i = 0; i < g->nprocs; i++)
        g->procs[i] = (lsim_proc){(uint8_t)(p[4 * i] != 0), p[4 * i + 1], p[4 * i + 2], (uint32_t)p[4 * i + 3]};
    char *const *names = strs_of(find(NA(md), LSIM_CK_A_ITER_NAMES), &n);
    const int64_t *io = i64s_of(find(NA(md), LSIM_CK_A_ITER_OBS), &n2);
    if ((n && !names) || (n2 && !io) || n2 != 2 * n || n > INT32_MAX)
        return bad_meta(c, "iteration names and times do not match");
    g->niters = (uint32_t)n;
    if (!(g->iters = lsim_calloc(n + 1, sizeof *g->iters))) return LSIM_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (intern(c, g, names[i], &g->iters[i].name)) return LSIM_ENOMEM;
        g->iters[i].obs_start = io[2 * i], g->iters[i].obs_end = io[2 * i + 1];
    }
    const int64_t *cw = i64s_of(find(NA(md), LSIM_CK_A_COLLS), &n);
    char *const *pgn = strs_of(find(NA(md), LSIM_CK_A_COLL_PG), &n2), *const *pgr = strs_of(find(NA(md), LSIM_CK_A_COLL_RANKS), &n3);
    size_t nc = n / LSIM_CK_COLL_WORDS;
    if (n % LSIM_CK_COLL_WORDS || (nc && (!cw || !pgn || !pgr)) || n2 != nc || n3 != nc || nc > INT32_MAX)
        return bad_meta(c, "collective table malformed");
    g->ncoll = nc;
    if (!(g->colls = lsim_calloc(nc + 1, sizeof *g->colls))) return LSIM_ENOMEM;
    for (size_t i = 0; i < nc; i++) {
        const int64_t *x = cw + i * LSIM_CK_COLL_WORDS;
        lsim_coll_info *k = &g->colls[i];
        if (x[0] < 0 || x[0] >= LSIM_COLL_NKINDS) return bad_meta(c, "collective kind out of range");
        *k = (lsim_coll_info){(uint8_t)x[0], (uint8_t)x[1], (int32_t)x[2], x[3], x[4], (int32_t)x[5], x[6],
                              UINT32_MAX, UINT32_MAX, x[7], (int32_t)x[8]};
        if (x[9] && intern(c, g, pgn[i], &k->pg_name)) return LSIM_ENOMEM;
        if (x[10] && intern(c, g, pgr[i], &k->pg_ranks)) return LSIM_ENOMEM;
    }
    return 0;
}

/* Another tool's file: one iteration holding every node, as a synthesized
 * graph has; the processors come with the nodes (foreign_proc). */
static int foreign_tables(rctx *c, lsim_graph *g)
{
    g->rank = c->rank;
    g->world_size = c->world;
    g->latency = LSIM_LAT_MODEL;
    g->device = UINT32_MAX;
    g->mem_device = -1;
    if (!(g->source = lsim_strdup(c->path))) return LSIM_ENOMEM;
    if (!(g->iters = lsim_calloc(1, sizeof *g->iters))) return LSIM_ENOMEM;
    g->niters = 1;
    g->iters[0] = (lsim_iter){0, LSIM_OBS_NONE, LSIM_OBS_NONE};
    return intern(c, g, "chakra", &g->iters[0].name);
}

/* Another tool's node: one processor per CPU thread (pid, tid) and per GPU
 * stream (device, stream) the nodes name, in the order first named. */
static int foreign_proc(rctx *c, lsim_graph *g, const cattr *const *sl, int gpu, uint32_t *capp, uint32_t *out)
{
    int64_t pid = int_or(sl[gpu ? S_DEVICE : S_PID], c->rank >= 0 ? c->rank : 0);
    int64_t tid = int_or(sl[gpu ? S_STREAM : S_TID], 0);
    uint32_t i = 0;
    while (i < g->nprocs && (g->procs[i].is_gpu != gpu || g->procs[i].pid != pid || g->procs[i].tid != tid)) i++;
    if (i == g->nprocs) {
        size_t cp = *capp;
        if (LSIM_GROW(g->procs, &cp, (size_t)g->nprocs + 1)) return LSIM_ENOMEM;
        *capp = (uint32_t)cp;
        g->procs[g->nprocs++] = (lsim_proc){(uint8_t)gpu, pid, tid, 0};
    }
    g->procs[i].nnodes++;
    *out = i;
    return 0;
}

/* Another tool's communication node v: its collective, keyed for matching
 * by its process group (pg_name; the world group when absent) and its
 * position on it in the file's order; a send or receive by the directed
 * pair of ranks comm_src -> comm_dst (job.h, "Point to point"). */
typedef struct pgseq {
    char **name;
    int64_t *next;
    size_t n, cap, capn;
    size_t capc; /* of g->colls */
    uint32_t capp; /* of g->procs */
} pgseq;

static int foreign_coll(rctx *c, lsim_graph *g, const cnode *m, const cattr *const *sl, size_t v, pgseq *ps)
{
    lsim_coll_info k = {LSIM_COLL_OTHER, 1, -1, -1, -1, -1, -1, UINT32_MAX, UINT32_MAX, -1, -1};
    char pair[64];
    const char *pg = str_of(sl[S_PG_NAME]);
    int64_t me = c->rank >= 0 ? c->rank : 0, src, dst;
    if (m->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE || m->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE) {
        int send = m->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
        k.kind = send ? LSIM_COLL_SEND : LSIM_COLL_RECV;
        k.group_size = 2;
        src = int_or(sl[S_COMM_SRC], send ? me : -1);
        dst = int_or(sl[S_COMM_DST], send ? -1 : me);
        pg = NULL;
        if (src >= 0 && dst >= 0) {
            snprintf(pair, sizeof pair, "p2p:%" PRId64 "->%" PRId64, src, dst);
            pg = pair;
        }
    } else if (m->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE) {
        int64_t t;
        if (!int_of(sl[S_COMM_TYPE], &t))
            return lsim_err_set(c->err, LSIM_EFORMAT, "%s: node %" PRIu64 " '%s': a COMM_COLL_NODE without comm_type",
                                c->path, m->id, nname(m));
        k.kind = (uint8_t)lsim_ck_coll_kind_of(t);
        k.group_size = (int32_t)int_or(sl[S_COMM_GROUP_SIZE], -1);
    }
    k.bytes = int_or(sl[S_COMM_SIZE], -1);
    if (pg && intern(c, g, pg, &k.pg_name)) return LSIM_ENOMEM;
    const char *key = pg ? pg : "";
    size_t i = 0;
    while (i < ps->n && strcmp(ps->name[i], key)) i++;
    if (i == ps->n) {
        if (LSIM_GROW(ps->name, &ps->cap, ps->n + 1) || LSIM_GROW(ps->next, &ps->capn, ps->n + 1) ||
            !(ps->name[ps->n] = lsim_strdup(key)))
            return LSIM_ENOMEM;
        ps->next[ps->n++] = 0;
    }
    k.seq = ps->next[i]++;
    if (LSIM_GROW(g->colls, &ps->capc, g->ncoll + 1)) return LSIM_ENOMEM;
    g->colls[g->ncoll] = k;
    g->coll[v] = (int32_t)g->ncoll++;
    g->flags[v] |= LSIM_NF_COLL;
    return 0;
}

static int bad_node(const rctx *c, const cnode *m, const char *what, int64_t value)
{
    return lsim_err_set(c->err, LSIM_EFORMAT, "%s: node %" PRIu64 " '%s': %s (%" PRId64 ")", c->path, m->id, nname(m),
                        what, value);
}

/* The columns of node v: lumosim's attributes where the file has them (own
 * files), Chakra's fields otherwise. */
static int fill_node(rctx *c, lsim_graph *g, size_t v, const cnode *m, const cattr *const *sl, uint32_t *proc,
                     pgseq *ps)
{
    int64_t x;
    size_t no = 0;
    if (intern(c, g, m->name ? m->name : "", &g->name[v])) return LSIM_ENOMEM;
    int cpu = c->cpu[v] = (uint8_t)is_cpu(c, m, sl);
    if (c->own) {
        x = int_or(sl[S_KIND], -1);
        if (x < 0 || x >= LSIM_N_NKINDS) return bad_node(c, m, LSIM_CK_A_KIND " missing or out of range", x);
        g->kind[v] = (uint8_t)x;
        x = int_or(sl[S_PROC], -1);
        if (x < 0 || x >= g->nprocs) return bad_node(c, m, LSIM_CK_A_PROC " missing or out of range", x);
        proc[v] = (uint32_t)x;
    } else {
        int t = m->type;
        if (foreign_proc(c, g, sl, !cpu, &ps->capp, &proc[v]))
            return lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
        g->kind[v] = cpu ? LSIM_N_CPU
                     : t == CHAKRA_PROTO_MSG__NODE_TYPE__MEM_LOAD_NODE || t == CHAKRA_PROTO_MSG__NODE_TYPE__MEM_STORE_NODE
                         ? LSIM_N_MEMCPY
                         : LSIM_N_KERNEL;
    }
    g->proc[v] = proc[v];
    g->flags[v] = (uint8_t)int_or(sl[S_FLAGS], 0);
    if (!int_of(sl[S_DUR], &x)) {
        if (m->duration_micros > (uint64_t)(LSIM_DUR_MAX / 1000))
            return bad_node(c, m, "duration_micros past the bound of 1e10 us", (int64_t)m->duration_micros);
        x = (int64_t)m->duration_micros * 1000;
    }
    g->dur[v] = x;
    const int64_t *obs = c->own ? i64s_of(sl[S_OBS], &no) : NULL;
    if (obs && no != 2) return bad_node(c, m, LSIM_CK_A_OBS " is not two times", (int64_t)no);
    g->obs_start[v] = obs ? obs[0] : LSIM_OBS_NONE;
    g->obs_end[v] = obs ? obs[1] : LSIM_OBS_NONE;
    g->release[v] = int_or(sl[S_RELEASE], INT64_MIN);
    g->corr[v] = int_or(sl[S_CORR], -1);
    x = int_or(sl[S_ITER], c->own ? -1 : 0);
    if (x < -1 || x >= (int64_t)g->niters) return bad_node(c, m, "iteration out of range", x);
    g->iter[v] = (int32_t)x;
    g->coll[v] = -1;
    if (c->own) {
        x = int_or(sl[S_COLL], -1);
        if (x < -1 || x >= (int64_t)g->ncoll) return bad_node(c, m, "collective out of range", x);
        g->coll[v] = (int32_t)x;
    } else if (m->type >= CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE &&
               m->type <= CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE) {
        int rc = foreign_coll(c, g, m, sl, v, ps);
        if (rc) return rc == LSIM_ENOMEM ? lsim_err_set(c->err, rc, "%s: out of memory", c->path) : rc;
    }
    x = int_or(sl[S_PHASE], LSIM_PHASE_UNKNOWN);
    if (x < 0 || x >= LSIM_PHASE_N) return bad_node(c, m, "phase out of range", x);
    g->phase[v] = (uint8_t)x;
    g->fwd_seq[v] = (int32_t)int_or(sl[S_FWD_SEQ], -1);
    g->grad_bytes[v] = int_or(sl[S_GRAD_BYTES], 0);
    return 0;
}

/* Every node in file order: unpacked into the arena, its type checked, its
 * columns and edges taken, the arena reset for the next. */
static int read_nodes(rctx *c, lsim_graph *g, uint32_t *proc, pgseq *ps)
{
    arena ar = {0};
    ProtobufCAllocator alloc = {arena_alloc, arena_free, &ar};
    const cattr *sl[S_N];
    int rc = 0;
    ar.cap = 1 << 16;
    if (!(ar.mem = lsim_malloc(ar.cap))) return lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
    for (size_t v = 0; !rc && v < c->n; v++) {
        cnode *m = chakra_proto_msg__node__unpack(&alloc, c->len[v], c->bytes + c->body[v]);
        if (!m) {
            rc = lsim_err_set(c->err, LSIM_EFORMAT, "%s: message %zu: not a valid Chakra Node", c->path, v + 1);
            break;
        }
        c->id[v] = m->id;
        slots_of(m, sl);
        if (!(rc = check_type(c, m)) && !(rc = fill_node(c, g, v, m, sl, proc, ps))) rc = take_edges(c, m, sl, v);
        arena_reset(&ar);
    }
    arena_free_all(&ar);
    return rc;
}

/* What the graph store's reader checks (io/h5_graph.c validate_graph) and
 * the bounds do not: a file lumosim wrote but someone edited gives the
 * line here, not a store that sim refuses later. */
static int check_columns(rctx *c, const lsim_graph *g)
{
    if (g->latency != LSIM_LAT_MODEL && g->latency != LSIM_LAT_OBSERVED)
        return bad_meta(c, LSIM_CK_A_GRAPH ": latency mode out of range");
    if (g->mem_source < 0 || g->mem_source >= LSIM_MEM_NSOURCES)
        return bad_meta(c, LSIM_CK_A_GRAPH ": memory source out of range");
    uint32_t *cnt = lsim_calloc(g->nprocs + 1, sizeof *cnt);
    if (!cnt) return lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
    int rc = 0;
#define BAD(what, value) \
    lsim_err_set(c->err, LSIM_EFORMAT, "%s: node %" PRIu64 " '%s': %s (%" PRId64 ")", c->path, c->id[v], vname(c, v), \
                 what, (int64_t)(value))
    for (size_t v = 0; !rc && v < g->n; v++) {
        cnt[g->proc[v]]++;
        if (g->dur[v] < 0) rc = BAD("negative duration", g->dur[v]);
        else if (g->fwd_seq[v] < -1) rc = BAD(LSIM_CK_A_FWD_SEQ " below -1", g->fwd_seq[v]);
        else if (g->grad_bytes[v] < 0 || g->grad_bytes[v] > LSIM_BYTES_MAX ||
                 (g->grad_bytes[v] && g->procs[g->proc[v]].is_gpu))
            rc = BAD(LSIM_CK_A_GRAD_BYTES " out of range or on a GPU node", g->grad_bytes[v]);
        for (uint64_t k = g->in_off[v]; !rc && k < g->in_off[v + 1]; k++)
            if ((g->in_class[k] & LSIM_EDGE_SM) &&
                (g->in_class[k] & (LSIM_EDGE_END | LSIM_EDGE_CLASS_MASK)) != LSIM_E_INFERRED)
                rc = BAD("an SM edge of a class other than hidden", g->in_class[k]);
    }
#undef BAD
    for (uint32_t p = 0; !rc && p < g->nprocs; p++)
        if (cnt[p] != g->procs[p].nnodes)
            rc = lsim_err_set(c->err, LSIM_EFORMAT, "%s: GlobalMetadata: %s: processor %u claims %u nodes, the nodes say %u",
                              c->path, LSIM_CK_A_PROCS, p, g->procs[p].nnodes, cnt[p]);
    free(cnt);
    return rc;
}

static int store_attrs(rctx *c, char **attrs)
{
    for (int k = 0; k < LSIM_CHAKRA_NSTORE_ATTRS; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s", LSIM_CK_A_STORE, lsim_chakra_store_attr[k]);
        const char *s = str_of(find(c->meta->attr, c->meta->n_attr, name));
        if (s && !(attrs[k] = lsim_strdup(s))) return lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
    }
    return 0;
}

/* A file whose nodes lsim_ck_cache_match found to be graph r's: r's
 * structure, shared, with the names interned into g's strings in node
 * order, as read_nodes interns them (g's own copy where their ids differ
 * from r's: g's strings are its own). */
/* g's table made an overlay of r's (strtab.h), r's strings with g's own
 * in their places, when that is the very table interning r's node names
 * into g would give, id for id: each of g's strings (its tables') is r's
 * of the same id or in no id of r, no node names one g replaces, and the
 * names' other ids are r's strings after g's, met in the order interning
 * would number them. *done 1 when made, 0 (g unchanged) when not; 0 or
 * LSIM_ENOMEM. Why: interning every name again made a table per GPU, the
 * most of `build --chakra`'s memory on 4,096 files (docs/chakra.md). */
static int overlay_names(rctx *c, lsim_graph *g, lsim_graph *r, int *done)
{
    uint32_t k = lsim_strtab_count(g->strings), nr = lsim_strtab_count(r->strings), next = k;
    *done = 0;
    if (k > nr) return 0;
    uint8_t *rep = lsim_calloc(k + 1, 1);
    lsim_strtab *o = NULL;
    int rc = rep ? 0 : LSIM_ENOMEM, fits = 1;
    for (uint32_t i = 0; !rc && fits && i < k; i++) {
        const char *a = lsim_strtab_get(g->strings, i), *b = lsim_strtab_get(r->strings, i);
        uint32_t j;
        if (strcmp(a, b)) rep[i] = 1, fits = !lsim_strtab_find(r->strings, a, strlen(a), &j);
    }
    for (size_t v = 0; !rc && fits && v < c->n; v++) {
        uint32_t id = r->name[v];
        if (id < k) fits = !rep[id];
        else if (id == next) next++;
        else fits = id < next;
    }
    if (!rc && fits && next == nr) {
        rc = lsim_strtab_new_overlay(r->strings, &o);
        for (uint32_t i = 0; !rc && i < k; i++) {
            const char *a = lsim_strtab_get(g->strings, i);
            if (rep[i]) rc = lsim_strtab_replace(o, i, a, strlen(a));
        }
        if (!rc) lsim_strtab_free(g->strings), g->strings = o, o = NULL, *done = 1;
    }
    lsim_strtab_free(o);
    free(rep);
    return rc ? lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path) : 0;
}

static int take_shared(rctx *c, lsim_graph *g, lsim_graph *r)
{
    int done = 0, orc = overlay_names(c, g, r, &done);
    if (orc || done) {
        for (size_t v = 0; v < c->n; v++) c->id[v] = v;
        return orc ? orc : lsim_graph_share(g, r, c->err);
    }
    uint32_t *names = lsim_malloc((c->n + 1) * sizeof *names);
    int rc = names ? 0 : lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
    for (size_t v = 0; !rc && v < c->n; v++) {
        const char *s = lsim_strtab_get(r->strings, r->name[v]);
        rc = intern(c, g, s ? s : "", &names[v]);
        c->id[v] = v;
    }
    if (!rc) rc = lsim_graph_share(g, r, c->err);
    if (!rc && c->n && memcmp(names, g->name, c->n * sizeof *names)) {
        rc = lsim_graph_unshare(g, c->err);
        if (!rc) memcpy(g->name, names, c->n * sizeof *names);
    }
    free(names);
    return rc;
}

/* Every node message read, its edges resolved and checked (the file's
 * nodes are no other graph's). */
static int take_nodes(rctx *c, lsim_graph *g, uint32_t *proc, pgseq *ps)
{
    int rc = read_nodes(c, g, proc, ps);
    if (!rc && !g->procs && !(g->procs = lsim_calloc(1, sizeof *g->procs)))
        rc = lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
    if (!rc && !g->colls && !(g->colls = lsim_calloc(1, sizeof *g->colls)))
        rc = lsim_err_set(c->err, LSIM_ENOMEM, "%s: out of memory", c->path);
    if (!rc) rc = index_ids(c);
    if (!rc) rc = resolve_edges(c, proc);
    if (!rc) rc = lsim_graph_set_edges(g, c->e, c->ne, LSIM_OUT_BY_DST, c->err);
    if (!rc && !c->own) lsim_graph_count_edges(g);
    if (!rc) rc = check_acyclic(c, g);
    return rc;
}

int lsim_chakra_read(const char *path, int32_t rank, int32_t world_size, lsim_graph **out, char **attrs,
                     lsim_err *err)
{
    return lsim_chakra_read_cached(path, rank, world_size, out, attrs, NULL, err);
}

int lsim_chakra_read_cached(const char *path, int32_t rank, int32_t world_size, lsim_graph **out, char **attrs,
                            lsim_chakra_cache *cache, lsim_err *err)
{
    rctx c = {.path = path, .err = err, .rank = rank, .world = world_size, .cache = cache};
    lsim_graph *g = NULL, *like = NULL;
    uint32_t *proc = NULL;
    pgseq ps = {0};
    size_t nw = 0;
    int same = 0;
    *out = NULL;
    for (int k = 0; attrs && k < LSIM_CHAKRA_NSTORE_ATTRS; k++) attrs[k] = NULL;
    int rc = read_all(&c);
    if (!rc) rc = frame_all(&c);
    if (rc) goto cleanup;
    c.own = i64s_of(find(c.meta->attr, c.meta->n_attr, LSIM_CK_A_GRAPH), &nw) && nw == LSIM_CK_GRAPH_WORDS;
    c.g = g = lsim_calloc(1, sizeof *g);
    proc = lsim_malloc((c.n + 1) * sizeof *proc);
    c.id = lsim_malloc((c.n + 1) * sizeof *c.id);
    c.cpu = lsim_malloc(c.n + 1);
    if (!g || !proc || !c.id || !c.cpu || !(g->strings = lsim_strtab_new()) ||
        lsim_graph_resize_nodes(g, c.n ? c.n : 1, NULL)) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    g->n = c.n;
    rc = c.own ? own_tables(&c, g) : foreign_tables(&c, g);
    if (rc == LSIM_ENOMEM) rc = lsim_err_set(err, rc, "%s: out of memory", path);
    /* a GPU of the previous one's structure (docs/chakra.md, "Speed") */
    if (!rc && cache && c.own && (same = lsim_ck_cache_match(cache, g, c.bytes, c.body, c.len, c.n, &like)) < 0)
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
    if (!rc) rc = same ? take_shared(&c, g, like) : take_nodes(&c, g, proc, &ps);
    if (!rc) rc = check_columns(&c, g);
    if (!rc) rc = lsim_graph_check_bounds(g, path, rank >= 0 ? (size_t)rank : 0, err);
    if (!rc && attrs) rc = store_attrs(&c, attrs);
    if (!rc && cache && c.own && !same) lsim_ck_cache_took(cache, g);
    if (!rc) *out = g, g = NULL;
cleanup:
    if (rc && attrs)
        for (int k = 0; k < LSIM_CHAKRA_NSTORE_ATTRS; k++) free(attrs[k]), attrs[k] = NULL;
    lsim_graph_free(g);
    free(proc);
    free(c.e);
    free(c.dep);
    for (size_t i = 0; i < ps.n; i++) free(ps.name[i]);
    free(ps.name);
    free(ps.next);
    if (c.meta) chakra_proto_msg__global_metadata__free_unpacked(c.meta, NULL);
    free(c.body);
    free(c.len);
    free(c.id);
    free(c.cpu);
    free(c.ids);
    if (!cache) free(c.bytes);
    return rc;
}
