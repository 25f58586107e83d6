/* Chakra ET export (include/lumosim/chakra.h; the reader is chakra_read.c,
 * the attribute names both use are chakra_internal.h). */
#include "lumosim/chakra.h"

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

/* One message: its packed size as a varint, then its bytes. bound: at
 * least its packed size (the attrset's bound and the fields' below), so
 * that protobuf-c packs it straight into the buffer without sizing the
 * whole message first (which walks every attribute once more); it is
 * packed after a gap for the prefix, closed once the size is known. */
static int put_msg(wctx *w, const ProtobufCMessage *m, size_t bound)
{
    if (w->len + bound + 10 > w->cap) {
        size_t nc = w->cap ? w->cap : WBLOCK + 4096;
        while (nc < w->len + bound + 10) nc *= 2;
        uint8_t *nb = realloc(w->buf, nc);
        if (!nb) return lsim_err_set(w->err, LSIM_ENOMEM, "%s: out of memory", w->name);
        w->buf = nb, w->cap = nc;
    }
    /* the prefix of a message of `bound` bytes: most messages are as long
     * in varint bytes as their bound, and need no moving */
    size_t gap = 1;
    for (size_t b = bound; b >= 0x80; b >>= 7) gap++;
    uint8_t *at = w->buf + w->len;
    size_t len = protobuf_c_message_pack(m, at + gap), nh = 0;
    if (len > bound) /* would have overrun: a bound below is wrong */
        return lsim_err_set(w->err, LSIM_EINTERNAL, "%s: a message of %zu bytes over its bound %zu", w->name, len, bound);
    uint8_t h[10];
    for (uint64_t v = len;; v >>= 7) {
        h[nh++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80) break;
    }
    if (nh != gap) memmove(at + nh, at + gap, len);
    memcpy(at, h, nh);
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
    attrset *s = calloc(1, sizeof *s);
    size_t ni = g->niters, np = g->nprocs, nc = g->ncoll;
    int64_t *procs = malloc((np * 4 + 1) * sizeof *procs), *iobs = malloc((ni * 2 + 1) * sizeof *iobs);
    int64_t *colls = malloc((nc * LSIM_CK_COLL_WORDS + 1) * sizeof *colls);
    char **inames = malloc((ni + 1) * sizeof *inames), **pgn = malloc((nc + 1) * sizeof *pgn);
    char **pgr = malloc((nc + 1) * sizeof *pgr);
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

/* The attributes of node v that a Chakra reader knows (threads, streams,
 * communication) and lumosim's own. deps: 2 words per incoming edge. */
static void node_attrs(const lsim_graph *g, size_t v, attrset *s, int64_t *obs, int64_t *deps, int comm_type)
{
    const lsim_proc *p = g->proc[v] < g->nprocs ? &g->procs[g->proc[v]] : NULL;
    int cpu = g->kind[v] == LSIM_N_CPU || g->kind[v] == LSIM_N_RUNTIME;
    add_bool(s, "is_cpu_op", cpu);
    if (p && cpu) {
        add_i64(s, "pid", p->pid);
        add_i64(s, "tid", p->tid);
    } else if (p) {
        add_i64(s, "device", p->pid);
        add_i64(s, "stream", p->tid);
    }
    if (g->coll[v] >= 0 && (size_t)g->coll[v] < g->ncoll) {
        const lsim_coll_info *c = &g->colls[g->coll[v]];
        if (comm_type >= 0) add_i64(s, "comm_type", comm_type);
        if (c->bytes >= 0) add_i64(s, "comm_size", c->bytes);
        if (c->pg_name != UINT32_MAX) add_str(s, "pg_name", str_or_empty(g, c->pg_name));
        if (c->group_size > 0) add_i64(s, "comm_group_size", c->group_size);
        long long a, b;
        char arrow[3];
        /* a synthesized pair "p2p:A->B" names both sides (job.h) */
        if (c->pg_name != UINT32_MAX &&
            sscanf(str_or_empty(g, c->pg_name), "p2p:%lld%2[-<>]%lld", &a, arrow, &b) == 3 && !strcmp(arrow, "->")) {
            add_i64(s, "comm_src", a);
            add_i64(s, "comm_dst", b);
        }
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

static int put_nodes(wctx *w, const lsim_graph *g)
{
    int rc = 0;
    uint64_t maxin = 0;
    for (size_t v = 0; v < g->n; v++)
        if (g->in_off[v + 1] - g->in_off[v] > maxin) maxin = g->in_off[v + 1] - g->in_off[v];
    attrset *s = malloc(sizeof *s);
    uint64_t *ctrl = malloc((maxin + 1) * sizeof *ctrl);
    int64_t *deps = malloc((2 * maxin + 1) * sizeof *deps), obs[2];
    if (!s || !ctrl || !deps) rc = lsim_err_set(w->err, LSIM_ENOMEM, "%s: out of memory", w->name);
    for (size_t v = 0; !rc && v < g->n; v++) {
        ChakraProtoMsg__Node m = CHAKRA_PROTO_MSG__NODE__INIT;
        int comm_type;
        s->n = 0;
        s->bound = 0;
        m.id = v;
        m.name = (char *)str_or_empty(g, g->name[v]);
        m.type = node_type(g, v, &comm_type);
        uint64_t e0 = g->in_off[v];
        m.n_ctrl_deps = g->in_off[v + 1] - e0;
        for (size_t k = 0; k < m.n_ctrl_deps; k++) ctrl[k] = g->in_src[e0 + k];
        m.ctrl_deps = ctrl;
        /* Chakra's times are microseconds; the exact ns are lsim.dur_ns and
         * lsim.obs when they are not whole microseconds */
        m.duration_micros = g->dur[v] > 0 ? (uint64_t)(g->dur[v] + 500) / 1000 : 0;
        if (g->obs_start[v] != LSIM_OBS_NONE && g->obs_start[v] > 0)
            m.start_time_micros = (uint64_t)g->obs_start[v] / 1000;
        node_attrs(g, v, s, obs, deps, comm_type);
        m.n_attr = s->n;
        m.attr = s->p;
        /* id, type, the two times; name; ctrl_deps (packed) */
        rc = put_msg(w, &m.base, s->bound + 4 * B_VARINT + B_FRAME + strlen(m.name) + B_FRAME + 10 * m.n_ctrl_deps);
    }
    free(s);
    free(ctrl);
    free(deps);
    return rc;
}

int lsim_chakra_write(FILE *f, const char *name, const lsim_graph *g, const char *const *attrs, lsim_err *err)
{
    wctx w = {f, name ? name : "chakra", NULL, 0, 0, err};
    int rc = put_meta(&w, g, attrs);
    if (!rc) rc = put_nodes(&w, g);
    if (!rc) rc = flush_buf(&w);
    if (!rc && fflush(f) != 0) rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s", w.name, strerror(errno));
    free(w.buf);
    return rc;
}
