/* Chakra ET export (include/lumosim/chakra.h; the reader is chakra_read.c,
 * the attribute names both use are chakra_internal.h). */
#include "lumosim/chakra.h"
#include "lumosim/alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chakra_internal.h"

const char *const lsim_chakra_store_attr[LSIM_CHAKRA_NSTORE_ATTRS] = {"device", "memory", "whatif"};

/* ------------------------------------------------------------ the stream */

/* The file's bytes are gathered in buf and written a block at a time. */
typedef struct wctx {
    FILE *f;
    const char *name;
    uint8_t *buf;
    size_t cap, len;
    lsim_err *err;
} wctx;

#define WBLOCK ((size_t)1 << 20) /* written when this much is gathered */

static int flush_buf(wctx *w)
{
    if (w->len && fwrite(w->buf, 1, w->len, w->f) != w->len)
        return lsim_err_set(w->err, LSIM_EIO, "%s: cannot write: %s", w->name, strerror(errno));
    w->len = 0;
    return 0;
}

/* x as a protobuf varint at `at`; the bytes written (at most 10). */
static size_t put_varint(uint8_t *at, uint64_t x)
{
    size_t n = 0;
    for (;; x >>= 7) {
        at[n++] = (uint8_t)((x & 0x7f) | (x >= 0x80 ? 0x80 : 0));
        if (x < 0x80) return n;
    }
}

static size_t varint_len(uint64_t x)
{
    size_t n = 1;
    for (; x >= 0x80; x >>= 7) n++;
    return n;
}

/* Room in the buffer for `more` bytes. */
static int wreserve(wctx *w, size_t more)
{
    if (LSIM_GROW(w->buf, &w->cap, w->len + more)) return lsim_err_set(w->err, LSIM_ENOMEM, "%s: out of memory", w->name);
    return 0;
}

/* One message: its packed size as a varint, then its bytes. bound: at
 * least its packed size (the attrset's bound and the fields' below), so
 * that protobuf-c packs it straight into the buffer without sizing the
 * whole message first (which walks every attribute once more); it is
 * packed after a gap for the prefix, closed once the size is known. */
static int put_msg(wctx *w, const ProtobufCMessage *m, size_t bound)
{
    int rc = wreserve(w, bound + 10);
    if (rc) return rc;
    /* the prefix of a message of `bound` bytes: most messages are as long
     * in varint bytes as their bound, and need no moving */
    size_t gap = varint_len(bound);
    uint8_t *at = w->buf + w->len;
    size_t len = protobuf_c_message_pack(m, at + gap), nh = varint_len(len);
    if (len > bound) /* would have overrun: a bound below is wrong */
        return lsim_err_set(w->err, LSIM_EINTERNAL, "%s: a message of %zu bytes over its bound %zu", w->name, len, bound);
    if (nh != gap) memmove(at + nh, at + gap, len);
    put_varint(at, len);
    w->len += nh + len;
    return w->len >= WBLOCK ? flush_buf(w) : 0;
}

/* ------------------------------------------------------------ attributes */

/* A node's or the metadata's attributes, built in place: the messages and
 * the lists they point to live here until the message is packed. */
#define MAXA 32
typedef struct attrset {
    ChakraProtoMsg__AttributeProto a[MAXA];
    ChakraProtoMsg__AttributeProto *p[MAXA];
    ChakraProtoMsg__Int64List l64[MAXA];
    ChakraProtoMsg__StringList ls[MAXA];
    size_t n;
    size_t bound; /* at least the attributes' packed size in their message (put_msg) */
    /* node_attrs: the attributes [cut[k][0], cut[k][1]) are group k of
     * those that differ between GPUs of one structure (struct
     * lsim_chakra_cache): 0 the processor's ids, 1 the group's name, 2 the
     * pair a synthesized send names */
    size_t cut[3][2];
} attrset;

/* Upper bounds of packed sizes: a tag (at most 2 bytes for these field
 * numbers), a length (5) and the bytes; a varint at most 10 bytes. */
#define B_FRAME 7     /* a length-delimited field's tag and length */
#define B_VARINT 12   /* a varint field's tag and value */

static ChakraProtoMsg__AttributeProto *add(attrset *s, const char *name)
{
    ChakraProtoMsg__AttributeProto *a = &s->a[s->n];
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    s->p[s->n++] = a;
    s->bound += B_FRAME + B_FRAME + strlen(name) + B_VARINT; /* a scalar value; lists and strings add theirs */
    return a;
}

static void add_i64(attrset *s, const char *name, int64_t v)
{
    ChakraProtoMsg__AttributeProto *a = add(s, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
    a->int64_val = v;
}

static void add_bool(attrset *s, const char *name, int v)
{
    ChakraProtoMsg__AttributeProto *a = add(s, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
    a->bool_val = v != 0;
}

static void add_str(attrset *s, const char *name, const char *v)
{
    ChakraProtoMsg__AttributeProto *a = add(s, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
    a->string_val = (char *)v;
    s->bound += B_FRAME + strlen(v);
}

static void add_i64s(attrset *s, const char *name, int64_t *v, size_t n)
{
    size_t k = s->n;
    ChakraProtoMsg__AttributeProto *a = add(s, name);
    chakra_proto_msg__int64_list__init(&s->l64[k]);
    s->l64[k].values = v;
    s->l64[k].n_values = n;
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST;
    a->int64_list = &s->l64[k];
    s->bound += 2 * B_FRAME + 10 * n;
}

static void add_strs(attrset *s, const char *name, char **v, size_t n)
{
    size_t k = s->n;
    ChakraProtoMsg__AttributeProto *a = add(s, name);
    chakra_proto_msg__string_list__init(&s->ls[k]);
    s->ls[k].values = v;
    s->ls[k].n_values = n;
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_LIST;
    a->string_list = &s->ls[k];
    for (size_t i = 0; i < n; i++) s->bound += B_FRAME + strlen(v[i]);
    s->bound += B_FRAME;
}

/* ------------------------------------------------------------ metadata */

static const char *str_or_empty(const lsim_graph *g, uint32_t id)
{
    const char *s = id == UINT32_MAX || !g->strings ? NULL : lsim_strtab_get(g->strings, id);
    return s ? s : "";
}

/* The GlobalMetadata: Chakra's version and the graph's tables. */
static int put_meta(wctx *w, const lsim_graph *g, const char *const *store_attrs)
{
    int rc = 0;
    attrset *s = lsim_calloc(1, sizeof *s);
    size_t ni = g->niters, np = g->nprocs, nc = g->ncoll;
    int64_t *procs = lsim_malloc((np * 4 + 1) * sizeof *procs), *iobs = lsim_malloc((ni * 2 + 1) * sizeof *iobs);
    int64_t *colls = lsim_malloc((nc * LSIM_CK_COLL_WORDS + 1) * sizeof *colls);
    char **inames = lsim_malloc((ni + 1) * sizeof *inames), **pgn = lsim_malloc((nc + 1) * sizeof *pgn);
    char **pgr = lsim_malloc((nc + 1) * sizeof *pgr);
    int64_t gw[LSIM_CK_GRAPH_WORDS];
    if (!s || !procs || !iobs || !colls || !inames || !pgn || !pgr) {
        rc = lsim_err_set(w->err, LSIM_ENOMEM, "%s: out of memory", w->name);
        goto cleanup;
    }
    lsim_ck_graph_words(g, gw);
    add_i64s(s, LSIM_CK_A_GRAPH, gw, LSIM_CK_GRAPH_WORDS);
    add_str(s, LSIM_CK_A_SOURCE, g->source ? g->source : "");
    if (g->device != UINT32_MAX) add_str(s, LSIM_CK_A_DEVICE, str_or_empty(g, g->device));
    for (size_t i = 0; i < np; i++) {
        procs[4 * i] = g->procs[i].is_gpu;
        procs[4 * i + 1] = g->procs[i].pid;
        procs[4 * i + 2] = g->procs[i].tid;
        procs[4 * i + 3] = g->procs[i].nnodes;
    }
    add_i64s(s, LSIM_CK_A_PROCS, procs, np * 4);
    for (size_t i = 0; i < ni; i++) {
        inames[i] = (char *)str_or_empty(g, g->iters[i].name);
        iobs[2 * i] = g->iters[i].obs_start;
        iobs[2 * i + 1] = g->iters[i].obs_end;
    }
    add_strs(s, LSIM_CK_A_ITER_NAMES, inames, ni);
    add_i64s(s, LSIM_CK_A_ITER_OBS, iobs, ni * 2);
    for (size_t i = 0; i < nc; i++) {
        lsim_ck_coll_words(&g->colls[i], colls + i * LSIM_CK_COLL_WORDS);
        pgn[i] = (char *)str_or_empty(g, g->colls[i].pg_name);
        pgr[i] = (char *)str_or_empty(g, g->colls[i].pg_ranks);
    }
    add_i64s(s, LSIM_CK_A_COLLS, colls, nc * LSIM_CK_COLL_WORDS);
    add_strs(s, LSIM_CK_A_COLL_PG, pgn, nc);
    add_strs(s, LSIM_CK_A_COLL_RANKS, pgr, nc);
    char names[LSIM_CHAKRA_NSTORE_ATTRS][64];
    for (int k = 0; store_attrs && k < LSIM_CHAKRA_NSTORE_ATTRS; k++) {
        if (!store_attrs[k]) continue;
        snprintf(names[k], sizeof names[k], "%s%s", LSIM_CK_A_STORE, lsim_chakra_store_attr[k]);
        add_str(s, names[k], store_attrs[k]);
    }
    ChakraProtoMsg__GlobalMetadata m = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
    m.version = (char *)LSIM_CK_SCHEMA_VERSION;
    m.n_attr = s->n;
    m.attr = s->p;
    rc = put_msg(w, &m.base, s->bound + B_FRAME + strlen(m.version));
cleanup:
    free(s);
    free(procs);
    free(iobs);
    free(colls);
    free(inames);
    free(pgn);
    free(pgr);
    return rc;
}

/* ------------------------------------------------------------ nodes */

/* Chakra's node type and collective type of node v. */
static ChakraProtoMsg__NodeType node_type(const lsim_graph *g, size_t v, int *comm_type)
{
    *comm_type = -1;
    if (!(g->flags[v] & LSIM_NF_COLL) || g->coll[v] < 0 || (size_t)g->coll[v] >= g->ncoll)
        return CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
    lsim_coll_kind k = g->colls[g->coll[v]].kind;
    if (k == LSIM_COLL_SEND || k == LSIM_COLL_SENDRECV) return CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
    if (k == LSIM_COLL_RECV) return CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
    *comm_type = lsim_ck_comm_type_of(k);
    return CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
}

/* Group 0: a CPU piece's process and thread, or a GPU node's device and
 * stream (p NULL: none). */
static void proc_attrs(const lsim_proc *p, int cpu, attrset *s)
{
    if (p && cpu) {
        add_i64(s, "pid", p->pid);
        add_i64(s, "tid", p->tid);
    } else if (p) {
        add_i64(s, "device", p->pid);
        add_i64(s, "stream", p->tid);
    }
}

/* Group 1: the name of collective c's group. */
static void group_attrs(const lsim_graph *g, const lsim_coll_info *c, attrset *s)
{
    if (c->pg_name != UINT32_MAX) add_str(s, "pg_name", str_or_empty(g, c->pg_name));
}

/* Group 2: a synthesized pair "p2p:A->B" names both sides (job.h). */
static void pair_attrs(const lsim_graph *g, const lsim_coll_info *c, attrset *s)
{
    long long a, b;
    char arrow[3];
    if (c->pg_name != UINT32_MAX &&
        sscanf(str_or_empty(g, c->pg_name), "p2p:%lld%2[-<>]%lld", &a, arrow, &b) == 3 && !strcmp(arrow, "->")) {
        add_i64(s, "comm_src", a);
        add_i64(s, "comm_dst", b);
    }
}

/* The attributes of node v that a Chakra reader knows (threads, streams,
 * communication) and lumosim's own. deps: 2 words per incoming edge.
 * s->cut: where the groups that differ between GPUs are. */
static void node_attrs(const lsim_graph *g, size_t v, attrset *s, int64_t *obs, int64_t *deps, int comm_type)
{
    const lsim_proc *p = g->proc[v] < g->nprocs ? &g->procs[g->proc[v]] : NULL;
    int cpu = g->kind[v] == LSIM_N_CPU || g->kind[v] == LSIM_N_RUNTIME;
    add_bool(s, "is_cpu_op", cpu);
    s->cut[0][0] = s->n;
    proc_attrs(p, cpu, s);
    s->cut[0][1] = s->n;
    if (g->coll[v] >= 0 && (size_t)g->coll[v] < g->ncoll) {
        const lsim_coll_info *c = &g->colls[g->coll[v]];
        if (comm_type >= 0) add_i64(s, "comm_type", comm_type);
        if (c->bytes >= 0) add_i64(s, "comm_size", c->bytes);
        s->cut[1][0] = s->n;
        group_attrs(g, c, s);
        s->cut[1][1] = s->n;
        if (c->group_size > 0) add_i64(s, "comm_group_size", c->group_size);
        s->cut[2][0] = s->n;
        pair_attrs(g, c, s);
        s->cut[2][1] = s->n;
    } else {
        s->cut[1][0] = s->cut[1][1] = s->cut[2][0] = s->cut[2][1] = s->n;
    }
    add_i64(s, LSIM_CK_A_KIND, g->kind[v]);
    add_i64(s, LSIM_CK_A_PROC, g->proc[v]);
    if (g->flags[v]) add_i64(s, LSIM_CK_A_FLAGS, g->flags[v]);
    if (g->dur[v] < 0 || g->dur[v] % 1000) add_i64(s, LSIM_CK_A_DUR, g->dur[v]);
    if (g->obs_start[v] != LSIM_OBS_NONE || g->obs_end[v] != LSIM_OBS_NONE) {
        obs[0] = g->obs_start[v], obs[1] = g->obs_end[v];
        add_i64s(s, LSIM_CK_A_OBS, obs, 2);
    }
    if (g->release[v] != INT64_MIN) add_i64(s, LSIM_CK_A_RELEASE, g->release[v]);
    if (g->corr[v] != -1) add_i64(s, LSIM_CK_A_CORR, g->corr[v]);
    if (g->iter[v] != -1) add_i64(s, LSIM_CK_A_ITER, g->iter[v]);
    if (g->coll[v] != -1) add_i64(s, LSIM_CK_A_COLL, g->coll[v]);
    if (g->phase[v]) add_i64(s, LSIM_CK_A_PHASE, g->phase[v]);
    if (g->fwd_seq[v] != -1) add_i64(s, LSIM_CK_A_FWD_SEQ, g->fwd_seq[v]);
    if (g->grad_bytes[v]) add_i64(s, LSIM_CK_A_GRAD_BYTES, g->grad_bytes[v]);
    uint64_t e0 = g->in_off[v], ne = g->in_off[v + 1] - e0;
    for (uint64_t k = 0; k < ne; k++) {
        deps[2 * k] = g->in_delay[e0 + k];
        deps[2 * k + 1] = g->in_class[e0 + k];
    }
    if (ne) add_i64s(s, LSIM_CK_A_DEPS, deps, 2 * ne);
}

/* Node v's own fields (all but its attributes) into m; ctrl: room for its
 * incoming edges. The bound of their packed size. */
static size_t node_head(const lsim_graph *g, size_t v, ChakraProtoMsg__Node *m, uint64_t *ctrl, int *comm_type)
{
    chakra_proto_msg__node__init(m);
    m->id = v;
    m->name = (char *)str_or_empty(g, g->name[v]);
    m->type = node_type(g, v, comm_type);
    uint64_t e0 = g->in_off[v];
    m->n_ctrl_deps = g->in_off[v + 1] - e0;
    for (size_t k = 0; k < m->n_ctrl_deps; k++) ctrl[k] = g->in_src[e0 + k];
    m->ctrl_deps = ctrl;
    /* Chakra's times are microseconds; the exact ns are lsim.dur_ns and
     * lsim.obs when they are not whole microseconds */
    m->duration_micros = g->dur[v] > 0 ? (uint64_t)(g->dur[v] + 500) / 1000 : 0;
    if (g->obs_start[v] != LSIM_OBS_NONE && g->obs_start[v] > 0)
        m->start_time_micros = (uint64_t)g->obs_start[v] / 1000;
    /* id, type, the two times; name; ctrl_deps (packed) */
    return 4 * B_VARINT + B_FRAME + strlen(m->name) + B_FRAME + 10 * m->n_ctrl_deps;
}

/* Scratch for one node at a time: its attributes and edge lists. */
typedef struct nodebuf {
    attrset s;
    uint64_t *ctrl;
    int64_t *deps, obs[2];
} nodebuf;

static int nodebuf_init(nodebuf **out, const lsim_graph *g)
{
    uint64_t maxin = 0;
    for (size_t v = 0; v < g->n; v++)
        if (g->in_off[v + 1] - g->in_off[v] > maxin) maxin = g->in_off[v + 1] - g->in_off[v];
    nodebuf *b = lsim_calloc(1, sizeof *b);
    if (b) b->ctrl = lsim_malloc((maxin + 1) * sizeof *b->ctrl), b->deps = lsim_malloc((2 * maxin + 1) * sizeof *b->deps);
    if (b && b->ctrl && b->deps) {
        *out = b;
        return 0;
    }
    if (b) free(b->ctrl), free(b->deps);
    free(b);
    return LSIM_ENOMEM;
}

static void nodebuf_free(nodebuf *b)
{
    if (b) free(b->ctrl), free(b->deps);
    free(b);
}

/* Node v packed whole by protobuf-c. */
static int put_node(wctx *w, const lsim_graph *g, size_t v, nodebuf *b)
{
    ChakraProtoMsg__Node m;
    int comm_type;
    b->s.n = 0;
    b->s.bound = 0;
    size_t bound = node_head(g, v, &m, b->ctrl, &comm_type);
    node_attrs(g, v, &b->s, b->obs, b->deps, comm_type);
    m.n_attr = b->s.n;
    m.attr = b->s.p;
    return put_msg(w, &m.base, b->s.bound + bound);
}

static int put_nodes(wctx *w, const lsim_graph *g)
{
    nodebuf *b = NULL;
    int rc = nodebuf_init(&b, g) ? lsim_err_set(w->err, LSIM_ENOMEM, "%s: out of memory", w->name) : 0;
    for (size_t v = 0; !rc && v < g->n; v++) rc = put_node(w, g, v, b);
    nodebuf_free(b);
    return rc;
}

/* ------------------------------------------------------------ the cache */

/* The GPUs of a synthesized stage, and a job's data-parallel replicas,
 * have one structure (graph.h, lsim_graph_same_structure) and one
 * collectives' table; their node records differ only in three groups of
 * attributes (attrset.cut): the processor's ids, the group's name and the
 * pair a send names, and in a node's name where a GPU's strings differ.
 * The cache keeps every node's packed bytes without those groups (its
 * template: the fields, then the attributes, each framed as protobuf-c
 * frames them, with the groups' places), and makes the groups once per
 * GPU, per processor and per collective. A GPU of the same structure is
 * then written by copying, byte for byte what packing it whole gives. */
struct lsim_chakra_cache {
    const lsim_graph *ref;   /* borrowed: the graph the templates are of */
    uint8_t *body;           /* the templates, in node order */
    size_t len, cap;
    uint64_t *off;           /* n + 1: node v's template is body[off[v] .. off[v+1]) */
    uint32_t *cut;           /* 3 per node: where groups 0, 1, 2 go, from off[v] */
    size_t ncap, ccap;
    uint8_t *grp;            /* this GPU's groups */
    size_t glen, gcap;
    uint64_t *gproc;         /* 2 nprocs + 1: processor p, cpu 0/1: grp[gproc[2p+cpu] .. +1) */
    uint64_t *gcoll;         /* 2 ncoll + 1: collective c's group 1, then 2 */
    size_t gpcap, gccap;
    uint64_t made, reused;   /* graphs whose templates were made, written or read from another's */
    lsim_graph *cand;        /* reading: the last graph read whole, borrowed (lsim_ck_cache_match) */
    uint8_t *file;           /* reading: the last file's bytes, the buffer kept for the next */
    size_t fcap;
};

int lsim_chakra_cache_new(lsim_chakra_cache **out, lsim_err *err)
{
    if (!(*out = lsim_calloc(1, sizeof **out))) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    return 0;
}

void lsim_chakra_cache_free(lsim_chakra_cache *c)
{
    if (!c) return;
    free(c->body);
    free(c->off);
    free(c->cut);
    free(c->grp);
    free(c->gproc);
    free(c->gcoll);
    free(c->file);
    free(c);
}

const lsim_graph *lsim_chakra_cache_graph(const lsim_chakra_cache *c) { return c ? c->ref : NULL; }

void lsim_chakra_cache_counts(const lsim_chakra_cache *c, uint64_t *made, uint64_t *reused)
{
    *made = c ? c->made : 0;
    *reused = c ? c->reused : 0;
}

/* Attributes [from, to) of s appended to b as the Node's field 10 frames
 * them (tag 0x52, the length as a varint, the packed AttributeProto). */
static int frame_attrs(uint8_t **b, size_t *len, size_t *cap, const attrset *s, size_t from, size_t to)
{
    if (LSIM_GROW(*b, cap, *len + s->bound + 16)) return LSIM_ENOMEM;
    for (size_t k = from; k < to; k++) {
        uint8_t *at = *b + *len;
        size_t n = protobuf_c_message_pack(&s->p[k]->base, at + 2), nh = varint_len(n);
        if (nh > 1) memmove(at + 1 + nh, at + 2, n);
        at[0] = 0x52; /* field 10, length-delimited */
        put_varint(at + 1, n);
        *len += 1 + nh + n;
    }
    return 0;
}

/* The templates of g's nodes (the cache's reference becomes g). */
static int templates_make(lsim_chakra_cache *c, const lsim_graph *g, nodebuf *b)
{
    c->ref = NULL;
    c->len = 0;
    if (LSIM_GROW(c->off, &c->ncap, g->n + 1) || LSIM_GROW(c->cut, &c->ccap, 3 * g->n + 1)) return LSIM_ENOMEM;
    for (size_t v = 0; v < g->n; v++) {
        ChakraProtoMsg__Node m;
        int comm_type;
        b->s.n = 0;
        b->s.bound = 0;
        size_t bound = node_head(g, v, &m, b->ctrl, &comm_type);
        c->off[v] = c->len;
        if (LSIM_GROW(c->body, &c->cap, c->len + bound)) return LSIM_ENOMEM;
        c->len += protobuf_c_message_pack(&m.base, c->body + c->len);
        node_attrs(g, v, &b->s, b->obs, b->deps, comm_type);
        size_t from = 0;
        for (int k = 0; k < 3; k++) {
            if (frame_attrs(&c->body, &c->len, &c->cap, &b->s, from, b->s.cut[k][0])) return LSIM_ENOMEM;
            if (c->len - c->off[v] > UINT32_MAX) return LSIM_ENOMEM;
            c->cut[3 * v + k] = (uint32_t)(c->len - c->off[v]);
            from = b->s.cut[k][1];
        }
        if (frame_attrs(&c->body, &c->len, &c->cap, &b->s, from, b->s.n)) return LSIM_ENOMEM;
    }
    c->off[g->n] = c->len;
    c->ref = g;
    c->made++;
    return 0;
}

/* g's groups: per processor (as a CPU piece and as a GPU node) and per
 * collective. */
static int groups_make(lsim_chakra_cache *c, const lsim_graph *g, nodebuf *b)
{
    c->glen = 0;
    /* never NULL, even with no group: it is copied from (0 bytes) */
    if (LSIM_GROW(c->grp, &c->gcap, 1) || LSIM_GROW(c->gproc, &c->gpcap, 2 * (size_t)g->nprocs + 1) ||
        LSIM_GROW(c->gcoll, &c->gccap, 2 * g->ncoll + 1))
        return LSIM_ENOMEM;
    attrset *s = &b->s;
    c->gproc[0] = 0;
    for (size_t i = 0; i < 2 * (size_t)g->nprocs; i++) {
        s->n = 0, s->bound = 0;
        proc_attrs(&g->procs[i / 2], (int)(i % 2), s);
        if (frame_attrs(&c->grp, &c->glen, &c->gcap, s, 0, s->n)) return LSIM_ENOMEM;
        c->gproc[i + 1] = c->glen;
    }
    c->gcoll[0] = c->glen;
    for (size_t i = 0; i < g->ncoll; i++) {
        s->n = 0, s->bound = 0;
        group_attrs(g, &g->colls[i], s);
        if (frame_attrs(&c->grp, &c->glen, &c->gcap, s, 0, s->n)) return LSIM_ENOMEM;
        c->gcoll[2 * i + 1] = c->glen;
        s->n = 0, s->bound = 0;
        pair_attrs(g, &g->colls[i], s);
        if (frame_attrs(&c->grp, &c->glen, &c->gcap, s, 0, s->n)) return LSIM_ENOMEM;
        c->gcoll[2 * i + 2] = c->glen;
    }
    return 0;
}

/* 1 when r's templates can hold g's nodes as far as their tables go: as
 * many nodes and processors, and a collectives' table equal in what the
 * templates hold of it (kind, bytes, group size). */
static int tables_fit(const lsim_graph *r, size_t n, const lsim_graph *g)
{
    if (!r || r->n != n || r->nprocs != g->nprocs || r->ncoll != g->ncoll) return 0;
    if (r->colls != g->colls)
        for (size_t i = 0; i < g->ncoll; i++)
            if (r->colls[i].kind != g->colls[i].kind || r->colls[i].bytes != g->colls[i].bytes ||
                r->colls[i].group_size != g->colls[i].group_size)
                return 0;
    return 1;
}

/* 1 when g's nodes are written from the cache's templates: their tables
 * fit and g has their graph's structure (node columns and edges). */
static int templates_fit(const lsim_chakra_cache *c, const lsim_graph *g)
{
    const lsim_graph *r = c->ref;
    return tables_fit(r, g->n, g) &&
           (r == g || (r->share_refs && r->share_refs == g->share_refs) || lsim_graph_same_structure(r, g));
}

/* Where node v's groups are in the cache's group bytes; r: a graph of
 * the templates' structure (its processor, kind and collective columns),
 * the groups made of the GPU being written or read. The node's length. */
static size_t spans_of(const lsim_chakra_cache *c, const lsim_graph *r, size_t v, uint64_t span[3][2])
{
    memset(span, 0, 3 * sizeof *span);
    if (r->proc[v] < r->nprocs) {
        size_t i = 2 * (size_t)r->proc[v] + (r->kind[v] == LSIM_N_CPU || r->kind[v] == LSIM_N_RUNTIME);
        span[0][0] = c->gproc[i], span[0][1] = c->gproc[i + 1];
    }
    if (r->coll[v] >= 0 && (size_t)r->coll[v] < r->ncoll) {
        size_t i = 2 * (size_t)r->coll[v];
        span[1][0] = c->gcoll[i], span[1][1] = c->gcoll[i + 1];
        span[2][0] = c->gcoll[i + 1], span[2][1] = c->gcoll[i + 2];
    }
    return c->off[v + 1] - c->off[v] + (span[0][1] - span[0][0]) + (span[1][1] - span[1][0]) +
           (span[2][1] - span[2][0]);
}

/* Node v of g from its template and g's groups; a node whose name is not
 * the reference's (g's strings differ) is packed whole. */
static int put_node_copied(wctx *w, const lsim_chakra_cache *c, const lsim_graph *g, size_t v, nodebuf *b)
{
    const lsim_graph *r = c->ref;
    if (g->strings != r->strings && strcmp(str_or_empty(g, g->name[v]), str_or_empty(r, r->name[v])))
        return put_node(w, g, v, b);
    uint64_t span[3][2];
    size_t len = spans_of(c, g, v, span), tl = c->off[v + 1] - c->off[v];
    int rc = wreserve(w, len + 10);
    if (rc) return rc;
    uint8_t *at = w->buf + w->len;
    at += put_varint(at, len);
    const uint8_t *t = c->body + c->off[v];
    const uint32_t *cut = c->cut + 3 * v;
    size_t from = 0;
    for (int k = 0; k < 3; k++) {
        memcpy(at, t + from, cut[k] - from);
        at += cut[k] - from;
        from = cut[k];
        memcpy(at, c->grp + span[k][0], span[k][1] - span[k][0]);
        at += span[k][1] - span[k][0];
    }
    memcpy(at, t + from, tl - from);
    at += tl - from;
    w->len = (size_t)(at - w->buf);
    return w->len >= WBLOCK ? flush_buf(w) : 0;
}

static int put_nodes_cached(wctx *w, const lsim_graph *g, lsim_chakra_cache *c)
{
    nodebuf *b = NULL;
    int rc = nodebuf_init(&b, g);
    if (!rc && !templates_fit(c, g)) rc = templates_make(c, g, b);
    else if (!rc && c->ref != g) c->reused++;
    if (!rc) rc = groups_make(c, g, b);
    if (rc) rc = lsim_err_set(w->err, LSIM_ENOMEM, "%s: out of memory", w->name);
    for (size_t v = 0; !rc && v < g->n; v++) rc = put_node_copied(w, c, g, v, b);
    nodebuf_free(b);
    return rc;
}

int lsim_chakra_write_cached(FILE *f, const char *name, const lsim_graph *g, const char *const *attrs,
                             lsim_chakra_cache *cache, lsim_err *err)
{
    wctx w = {f, name ? name : "chakra", NULL, 0, 0, err};
    int rc = put_meta(&w, g, attrs);
    if (!rc) rc = cache ? put_nodes_cached(&w, g, cache) : put_nodes(&w, g);
    if (!rc) rc = flush_buf(&w);
    if (!rc && fflush(f) != 0) rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s", w.name, strerror(errno));
    if (rc && cache) cache->ref = NULL; /* the caller may free g now */
    free(w.buf);
    return rc;
}

int lsim_chakra_write(FILE *f, const char *name, const lsim_graph *g, const char *const *attrs, lsim_err *err)
{
    return lsim_chakra_write_cached(f, name, g, attrs, NULL, err);
}

/* ------------------------------------------------------------ the reader's side */

void lsim_ck_cache_took(lsim_chakra_cache *c, lsim_graph *g)
{
    if (c) c->cand = g;
}

uint8_t *lsim_ck_cache_file(lsim_chakra_cache *c, size_t size)
{
    if (size > c->fcap) {
        uint8_t *p = lsim_malloc(size);
        if (!p) return NULL;
        free(c->file);
        c->file = p, c->fcap = size;
    }
    return c->file;
}

int lsim_ck_cache_match(lsim_chakra_cache *c, const lsim_graph *g, const uint8_t *bytes, const size_t *body,
                        const size_t *len, size_t n, lsim_graph **of)
{
    lsim_graph *r = *of = c->cand;
    if (!tables_fit(r, n, g)) return 0;
    nodebuf *b = NULL;
    int rc = nodebuf_init(&b, r);
    if (!rc && c->ref != r) rc = templates_make(c, r, b);
    if (!rc) rc = groups_make(c, g, b); /* g's tables, r's structure */
    nodebuf_free(b);
    if (rc) {
        c->ref = NULL;
        return LSIM_ENOMEM;
    }
    for (size_t v = 0; v < n; v++) {
        uint64_t span[3][2];
        if (spans_of(c, r, v, span) != len[v]) return 0;
        const uint8_t *t = c->body + c->off[v], *at = bytes + body[v];
        const uint32_t *cut = c->cut + 3 * v;
        size_t from = 0, tl = c->off[v + 1] - c->off[v];
        for (int k = 0; k < 3; k++) {
            if (memcmp(at, t + from, cut[k] - from)) return 0;
            at += cut[k] - from;
            from = cut[k];
            if (memcmp(at, c->grp + span[k][0], span[k][1] - span[k][0])) return 0;
            at += span[k][1] - span[k][0];
        }
        if (memcmp(at, t + from, tl - from)) return 0;
    }
    c->reused++;
    return 1;
}
