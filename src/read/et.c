/* PyTorch execution-trace reader and its pairing with a Kineto trace (see
 * include/lumosim/et.h).
 *
 * The document's bytes are read whole (inflated with zlib when they start
 * with the gzip magic; LSIM_ET_MAX_BYTES caps them), but never parsed as
 * one cJSON tree: the Kineto reader's scanner (json_internal.h) walks the
 * top-level object and hands over one node at a time, which cJSON parses
 * in the reader's arena. A whole-document tree cost about three times the
 * bytes in small allocations, and freeing them dominated the megatron
 * set's ingest (docs/performance.md). */
#include "lumosim/et.h"
#include "lumosim/alloc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "lumosim/input.h"
#include "json_internal.h"

#define MAX_GROUPS 4096

/* ------------------------------------------------------------ the bytes */

static int grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : (size_t)1 << 16;
    while (nc < need) nc *= 2;
    char *nb = lsim_realloc(*buf, nc + 1);
    if (!nb) return LSIM_ENOMEM;
    *buf = nb;
    *cap = nc;
    return 0;
}

static int too_big(const char *label, lsim_err *err)
{
    return lsim_err_set(err, LSIM_EFORMAT, "%s: execution trace larger than %zu MiB uncompressed: not supported", label,
                        LSIM_ET_MAX_BYTES >> 20);
}

/* Whole file through gzread (plain files pass through unchanged). */
static int slurp_file(const char *path, char **out, size_t *outlen, lsim_err *err)
{
    gzFile gz = NULL;
    int orc = lsim_gz_open(path, 0, &gz, err);
    if (orc) return orc;
    char *buf = NULL;
    size_t cap = 0, len = 0;
    int rc = 0;
    for (;;) {
        if ((rc = grow(&buf, &cap, len + ((size_t)1 << 16)))) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
            goto cleanup;
        }
        int got = gzread(gz, buf + len, (unsigned)(cap - len > (1u << 30) ? (1u << 30) : cap - len));
        int zerr = 0;
        if (got <= 0) (void)gzerror(gz, &zerr);
        if (got < 0 || (got == 0 && zerr != Z_OK && zerr != Z_STREAM_END)) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: %s", path, lsim_gz_why(zerr));
            goto cleanup;
        }
        if (got == 0) break;
        len += (size_t)got;
        if (len > LSIM_ET_MAX_BYTES) {
            rc = too_big(path, err);
            goto cleanup;
        }
    }
cleanup:
    rc = lsim_gz_close(gz, path, rc, err);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return 0;
}

/* Memory: gzip (by its magic) is inflated, anything else copied. */
static int slurp_mem(const char *label, const char *in, size_t inlen, char **out, size_t *outlen, lsim_err *err)
{
    char *buf = NULL;
    size_t cap = 0, len = 0;
    int rc = 0;
    if (inlen < 2 || (unsigned char)in[0] != 0x1f || (unsigned char)in[1] != 0x8b) {
        if (inlen > LSIM_ET_MAX_BYTES) return too_big(label, err);
        if (grow(&buf, &cap, inlen + 1)) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", label);
        if (inlen) memcpy(buf, in, inlen);
        buf[inlen] = '\0';
        *out = buf;
        *outlen = inlen;
        return 0;
    }
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", label);
    size_t fed = 0;
    int zr = Z_OK;
    while (zr != Z_STREAM_END) {
        if (grow(&buf, &cap, len + ((size_t)1 << 16))) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", label);
            goto cleanup;
        }
        size_t chunk_in = inlen - fed > (1u << 30) ? (1u << 30) : inlen - fed;
        zs.next_in = (Bytef *)(uintptr_t)(in + fed);
        zs.avail_in = (uInt)chunk_in;
        zs.next_out = (Bytef *)(buf + len);
        zs.avail_out = (uInt)(cap - len > (1u << 30) ? (1u << 30) : cap - len);
        uInt before_out = zs.avail_out;
        zr = inflate(&zs, Z_NO_FLUSH);
        fed += chunk_in - zs.avail_in;
        len += before_out - zs.avail_out;
        if (len > LSIM_ET_MAX_BYTES) {
            rc = too_big(label, err);
            goto cleanup;
        }
        if (zr == Z_STREAM_END) break;
        if ((zr == Z_BUF_ERROR && fed == inlen) || (chunk_in == zs.avail_in && before_out == zs.avail_out)) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: truncated gzip data (unexpected end of file)", label);
            goto cleanup;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            rc = lsim_err_set(err, zr == Z_MEM_ERROR ? LSIM_ENOMEM : LSIM_EFORMAT, "%s: %s", label,
                              zr == Z_MEM_ERROR ? "out of memory" : "corrupt gzip data");
            goto cleanup;
        }
        if (fed == inlen && zs.avail_out != 0) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: truncated gzip data (unexpected end of file)", label);
            goto cleanup;
        }
    }
cleanup:
    inflateEnd(&zs);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return 0;
}

/* ------------------------------------------------------------- helpers */

/* An integral JSON number inside int64 (NaN, fractions and huge values are
 * not: converting those is undefined behaviour). */
static int num_i64(const cJSON *v, int64_t *out)
{
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= -9.2e18 && d <= 9.2e18) || d != floor(d)) return 0;
    *out = (int64_t)d;
    return 1;
}

static const cJSON *item(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

/* Element size of a c10 ScalarType name ("Float", "Half", "BFloat16", ...)
 * or of a tensor type "Tensor(c10::Half)". */
static int32_t scalar_size(const char *s)
{
    static const struct {
        const char *name;
        int32_t sz;
    } T[] = {{"float", 4},       {"half", 2},          {"bfloat16", 2},      {"double", 8},   {"long", 8},
             {"long int", 8},    {"int", 4},           {"short", 2},         {"char", 1},     {"signed char", 1},
             {"byte", 1},        {"unsigned char", 1}, {"bool", 1},          {"complexfloat", 8},
             {"complexdouble", 16}, {"complexhalf", 4}, {"uint16", 2},       {"uint32", 4},   {"uint64", 8},
             {"float8_e4m3fn", 1}, {"float8_e5m2", 1}, {"float8_e4m3fnuz", 1}, {"float8_e5m2fnuz", 1},
             {"c10::half", 2},   {"c10::bfloat16", 2}, {"c10::complex<float>", 8}, {"c10::complex<double>", 16}};
    if (!s) return -1;
    const char *p = strstr(s, "Tensor(");
    char buf[48];
    size_t n = 0;
    if (p) {
        p += 7;
        while (p[n] && p[n] != ')' && n + 1 < sizeof buf) {
            buf[n] = p[n];
            n++;
        }
    } else {
        while (s[n] && n + 1 < sizeof buf) {
            buf[n] = s[n];
            n++;
        }
    }
    buf[n] = '\0';
    for (size_t i = 0; i < sizeof T / sizeof *T; i++)
        if (!strcasecmp(buf, T[i].name)) return T[i].sz;
    return -1;
}

/* Collective kind and whether the call launches a kernel of its own, from
 * its name as record_param_comms writes it. *skip: not an op at all. */
static lsim_coll_kind kind_of(const char *s, int *launches, int *skip)
{
    char n[64];
    size_t k = 0;
    for (const char *p = s; *p && k + 1 < sizeof n; p++)
        if (isalnum((unsigned char)*p)) n[k++] = (char)tolower((unsigned char)*p);
    n[k] = '\0';
    *launches = 1;
    *skip = 0;
    if (!strcmp(n, "wait")) {
        *skip = 1;
        return LSIM_COLL_NONE;
    }
    if (strstr(n, "barrier")) {
        *launches = 0; /* its all-reduce is recorded on its own */
        return LSIM_COLL_OTHER;
    }
    if (strstr(n, "allreduce")) return LSIM_COLL_ALLREDUCE;
    if (strstr(n, "reducescatter")) return LSIM_COLL_REDUCESCATTER;
    if (strstr(n, "allgather")) return LSIM_COLL_ALLGATHER;
    if (strstr(n, "alltoall")) return LSIM_COLL_ALLTOALL;
    if (strstr(n, "broadcast")) return LSIM_COLL_BROADCAST;
    if (strstr(n, "sendrecv")) return LSIM_COLL_SENDRECV;
    if (strstr(n, "reduce")) return LSIM_COLL_REDUCE;
    if (strstr(n, "gather") || strstr(n, "scatter")) return LSIM_COLL_OTHER; /* send/recv kernels */
    if (strstr(n, "send")) return LSIM_COLL_SEND;
    if (strstr(n, "recv")) return LSIM_COLL_RECV;
    *launches = 0;
    return LSIM_COLL_NONE;
}

static int is_tensor(const cJSON *v)
{
    /* [tensor id, storage id, offset, numel, itemsize, device] */
    return cJSON_IsArray(v) && cJSON_GetArraySize(v) == 6 && cJSON_IsNumber(cJSON_GetArrayItem(v, 3)) &&
           cJSON_IsNumber(cJSON_GetArrayItem(v, 4)) && cJSON_IsString(cJSON_GetArrayItem(v, 5));
}

/* Sum numel and bytes over a tensor or (nested) tensor list. Returns 0, 1
 * on a bad size (negative, overflow). */
static int tensor_sum(const cJSON *v, int depth, int64_t *nel, int64_t *bytes, int32_t *itemsize, int *found)
{
    if (is_tensor(v)) {
        int64_t n, s;
        if (!num_i64(cJSON_GetArrayItem(v, 3), &n) || !num_i64(cJSON_GetArrayItem(v, 4), &s) || n < 0 || s < 0 ||
            s > 64)
            return 1;
        if (n > (INT64_MAX - *nel) || (s && n > (INT64_MAX - *bytes) / s)) return 1;
        *nel += n;
        *bytes += n * s;
        if (*itemsize < 0 && s > 0) *itemsize = (int32_t)s;
        *found = 1;
        return 0;
    }
    if (!cJSON_IsArray(v) || depth >= 3) return 0;
    for (const cJSON *c = v->child; c; c = c->next)
        if (tensor_sum(c, depth + 1, nel, bytes, itemsize, found)) return 1;
    return 0;
}

/* ------------------------------------------------------------- the trace */

void lsim_et_free(lsim_et *et)
{
    if (!et) return;
    for (size_t i = 0; i < et->npg; i++) {
        free(et->pgs[i].name);
        free(et->pgs[i].desc);
        free(et->pgs[i].ranks);
    }
    free(et->pgs);
    free(et->ops);
    free(et->path);
    free(et);
}

typedef struct parser {
    lsim_et *et;
    const char *label;
    lsim_err *err;
    size_t capops, cappg;
    const char *text;   /* the document (byte offsets in messages) */
    int64_t *ids;       /* node ids met so far */
    size_t nids, capids;
    int traceevents;    /* the document has a traceEvents member (a Kineto trace) */
    int nodes_member;   /* "nodes" met, array or not */
} parser;

static int oom(parser *p) { return lsim_err_set(p->err, LSIM_ENOMEM, "%s: out of memory", p->label); }

/* The group (named, name), created if new. */
static int find_group(parser *p, int named, const char *name, const char *desc, int32_t *out)
{
    lsim_et *et = p->et;
    for (size_t i = 0; i < et->npg; i++)
        if (et->pgs[i].named == named && !strcmp(et->pgs[i].name, name)) {
            if (desc && *desc && !*et->pgs[i].desc) {
                char *d = lsim_strdup(desc);
                if (!d) return oom(p);
                free(et->pgs[i].desc);
                et->pgs[i].desc = d;
            }
            *out = (int32_t)i;
            return 0;
        }
    if (et->npg >= MAX_GROUPS)
        return lsim_err_set(p->err, LSIM_ETRACE, "%s: more than %d process groups: not supported", p->label, MAX_GROUPS);
    if (LSIM_GROW(et->pgs, &p->cappg, et->npg + 1)) return oom(p);
    lsim_et_pg *g = &et->pgs[et->npg];
    memset(g, 0, sizeof *g);
    g->named = named;
    g->size = -1;
    g->name = lsim_strdup(name);
    g->desc = lsim_strdup(desc ? desc : "");
    if (!g->name || !g->desc) {
        free(g->name);
        free(g->desc);
        return oom(p);
    }
    *out = (int32_t)et->npg++;
    return 0;
}

static int set_size(parser *p, int32_t gi, int64_t size, int64_t node)
{
    lsim_et_pg *g = &p->et->pgs[gi];
    char where[40] = "pg_config";
    if (node >= 0) snprintf(where, sizeof where, "node id %lld", (long long)node);
    if (size < 1 || size > LSIM_ET_MAX_GROUP)
        return lsim_err_set(p->err, LSIM_ETRACE, "%s: %s: process group %s has size %lld (1 to %d expected)", p->label,
                            where, g->name, (long long)size, LSIM_ET_MAX_GROUP);
    if (g->size >= 0 && g->size != size)
        return lsim_err_set(p->err, LSIM_ETRACE, "%s: %s: process group %s has size %lld here, %d before", p->label,
                            where, g->name, (long long)size, g->size);
    g->size = (int32_t)size;
    return 0;
}

/* ranks start, start + stride, ... (size of them) */
static int set_ranks(parser *p, int32_t gi, int64_t start, int64_t stride, int64_t node)
{
    lsim_et_pg *g = &p->et->pgs[gi];
    if (g->size < 1) return 0;
    if (start < 0 || stride < 1) return 0; /* -1: not given (p2p records) */
    if (start > INT32_MAX || stride > INT32_MAX || (int64_t)(g->size - 1) * stride > INT32_MAX - start)
        return lsim_err_set(p->err, LSIM_ETRACE, "%s: node id %lld: process group %s: ranks beyond 2^31 (start %lld, stride %lld)",
                            p->label, (long long)node, g->name, (long long)start, (long long)stride);
    if (g->nranks) {
        int64_t s0 = g->ranks[0], st = g->nranks > 1 ? g->ranks[1] - g->ranks[0] : stride;
        if (g->nranks != g->size || s0 != start || st != stride)
            return lsim_err_set(p->err, LSIM_ETRACE,
                                "%s: node id %lld: process group %s: ranks from %lld by %lld here, from %lld by %lld before",
                                p->label, (long long)node, g->name, (long long)start, (long long)stride, (long long)s0,
                                (long long)st);
        return 0;
    }
    g->ranks = lsim_malloc((size_t)g->size * sizeof *g->ranks);
    if (!g->ranks) return oom(p);
    for (int32_t i = 0; i < g->size; i++) g->ranks[i] = (int32_t)(start + i * stride);
    g->nranks = g->size;
    return 0;
}

static int parse_distributed(parser *p, const cJSON *di)
{
    lsim_et *et = p->et;
    int64_t v;
    if (num_i64(item(di, "rank"), &v) && v >= 0 && v <= INT32_MAX) et->rank = (int32_t)v;
    if (num_i64(item(di, "world_size"), &v) && v >= 1 && v <= INT32_MAX) et->world_size = (int32_t)v;
    const cJSON *cfg = item(di, "pg_config");
    if (!cJSON_IsArray(cfg)) return 0;
    int rc = 0;
    for (const cJSON *c = cfg->child; c; c = c->next) {
        const cJSON *nm = item(c, "pg_name"), *ds = item(c, "pg_desc"), *rk = item(c, "ranks");
        if (!cJSON_IsString(nm)) continue;
        int32_t gi;
        if ((rc = find_group(p, 1, nm->valuestring, cJSON_IsString(ds) ? ds->valuestring : "", &gi))) return rc;
        if (num_i64(item(c, "pg_size"), &v) && (rc = set_size(p, gi, v, -1))) return rc;
        lsim_et_pg *g = &et->pgs[gi];
        if (!cJSON_IsArray(rk) || g->nranks) continue;
        int m = cJSON_GetArraySize(rk);
        if (m < 1 || m > LSIM_ET_MAX_GROUP) continue;
        if (g->size >= 0 && g->size != m)
            return lsim_err_set(p->err, LSIM_ETRACE, "%s: pg_config: process group %s has %d ranks but size %d", p->label,
                                g->name, m, g->size);
        if (!(g->ranks = lsim_malloc((size_t)m * sizeof *g->ranks))) return oom(p);
        for (const cJSON *x = rk->child; x; x = x->next) {
            if (!num_i64(x, &v) || v < 0 || v > INT32_MAX) {
                free(g->ranks);
                g->ranks = NULL;
                g->nranks = 0;
                return lsim_err_set(p->err, LSIM_ETRACE, "%s: pg_config: process group %s: a rank is not a number >= 0",
                                    p->label, g->name);
            }
            g->ranks[g->nranks++] = (int32_t)v;
        }
        g->size = m;
    }
    return 0;
}

/* One record_param_comms node. */
static int parse_comm(parser *p, const cJSON *node, int64_t id)
{
    lsim_et *et = p->et;
    const cJSON *inputs = item(node, "inputs"), *outputs = item(node, "outputs"), *attrs = item(node, "attrs");
    const cJSON *vals = cJSON_IsObject(inputs) ? item(inputs, "values") : inputs;
    const cJSON *ovals = cJSON_IsObject(outputs) ? item(outputs, "values") : outputs;
    if (!cJSON_IsArray(vals)) vals = NULL;
    if (!cJSON_IsArray(ovals)) ovals = NULL;
    const cJSON *a_coll = NULL, *a_dtype = NULL, *a_in = NULL, *a_out = NULL, *a_pgname = NULL, *a_pgdesc = NULL,
                *a_pgsize = NULL, *a_start = NULL, *a_stride = NULL;
    if (cJSON_IsArray(attrs))
        for (const cJSON *a = attrs->child; a; a = a->next) {
            const cJSON *an = item(a, "name"), *av = item(a, "value");
            if (!cJSON_IsString(an) || !av) continue;
            const char *k = an->valuestring;
            if (!strcmp(k, "collective_name")) a_coll = av;
            else if (!strcmp(k, "dtype")) a_dtype = av;
            else if (!strcmp(k, "in_msg_nelems")) a_in = av;
            else if (!strcmp(k, "out_msg_nelems")) a_out = av;
            else if (!strcmp(k, "pg_name")) a_pgname = av;
            else if (!strcmp(k, "pg_desc")) a_pgdesc = av;
            else if (!strcmp(k, "pg_size")) a_pgsize = av;
            else if (!strcmp(k, "global_rank_start")) a_start = av;
            else if (!strcmp(k, "global_rank_stride")) a_stride = av;
        }
    /* the inputs: [tensors,] seq, group, rank, "name", splits..., size */
    const cJSON *at[3] = {NULL, NULL, NULL}; /* seq, group, rank before the name */
    const cJSON *cname = NULL, *last = NULL;
    int pos = -1, i = 0;
    if (vals)
        for (const cJSON *c = vals->child; c; c = c->next, i++) {
            if (pos < 0 && cJSON_IsString(c)) {
                cname = c;
                pos = i;
            } else if (pos < 0) {
                at[0] = at[1];
                at[1] = at[2];
                at[2] = c;
            }
            last = c;
        }
    if (pos < 0 || last == cname) last = NULL;
    if (pos < 3) at[0] = NULL;
    if (pos < 2) at[1] = NULL;
    if (pos < 1) at[2] = NULL;
    const char *name = cJSON_IsString(a_coll) ? a_coll->valuestring : cname ? cname->valuestring : NULL;
    if (!name || !*name)
        return lsim_err_set(p->err, LSIM_ETRACE, "%s: node id %lld: record_param_comms without a collective name",
                            p->label, (long long)id);
    int launches, skip;
    lsim_coll_kind kind = kind_of(name, &launches, &skip);
    if (skip) return 0;
    if (LSIM_GROW(et->ops, &p->capops, et->nops + 1)) return oom(p);
    lsim_et_op *op = &et->ops[et->nops];
    memset(op, 0, sizeof *op);
    op->node_id = id;
    op->seq = -1;
    snprintf(op->name, sizeof op->name, "%s", name);
    op->kind = (uint8_t)kind;
    op->pg = -1;
    op->group_rank = op->peer = op->peer_global = op->dtype_bytes = -1;
    op->in_nelems = op->out_nelems = op->in_bytes = op->out_bytes = -1;
    int64_t v;
    if (num_i64(at[0], &v) || (cJSON_IsArray(at[0]) && num_i64(cJSON_GetArrayItem(at[0], 0), &v))) op->seq = v;
    /* the process group */
    int rc = 0;
    const cJSON *g = at[1];
    if (cJSON_IsString(a_pgname))
        rc = find_group(p, 1, a_pgname->valuestring, cJSON_IsString(a_pgdesc) ? a_pgdesc->valuestring : "", &op->pg);
    else if (cJSON_IsArray(g) && cJSON_IsString(cJSON_GetArrayItem(g, 0))) {
        const cJSON *d = cJSON_GetArrayItem(g, 1);
        rc = find_group(p, 1, cJSON_GetArrayItem(g, 0)->valuestring, cJSON_IsString(d) ? d->valuestring : "", &op->pg);
    } else if (num_i64(g, &v)) {
        char nm[40];
        snprintf(nm, sizeof nm, "ptr:%lld", (long long)v);
        rc = find_group(p, 0, nm, "", &op->pg);
    }
    if (rc) return rc;
    int64_t size;
    if (!num_i64(a_pgsize, &size) && !num_i64(last, &size)) size = -1;
    if (op->pg >= 0 && size != -1 && (rc = set_size(p, op->pg, size, id))) return rc;
    if (op->pg < 0 && size != -1 && (size < 1 || size > LSIM_ET_MAX_GROUP))
        return lsim_err_set(p->err, LSIM_ETRACE, "%s: node id %lld: group size %lld (1 to %d expected)", p->label,
                            (long long)id, (long long)size, LSIM_ET_MAX_GROUP);
    int64_t start, stride;
    if (op->pg >= 0 && num_i64(a_start, &start) && num_i64(a_stride, &stride) &&
        (rc = set_ranks(p, op->pg, start, stride, id)))
        return rc;
    if (op->pg >= 0) size = p->et->pgs[op->pg].size;
    /* rank (collectives) or peer (send/recv) */
    if (num_i64(at[2], &v) && v != -1) {
        if (v < 0 || v > INT32_MAX || (size > 0 && v >= size))
            return lsim_err_set(p->err, LSIM_ETRACE, "%s: node id %lld: %s: rank %lld outside its process group of size %lld",
                                p->label, (long long)id, op->name, (long long)v, (long long)size);
        if (kind == LSIM_COLL_SEND || kind == LSIM_COLL_RECV) op->peer = (int32_t)v;
        else op->group_rank = (int32_t)v;
    }
    /* sizes: attributes first, else the tensors */
    if (cJSON_IsString(a_dtype)) op->dtype_bytes = scalar_size(a_dtype->valuestring);
    const cJSON *an[2] = {a_in, a_out};
    int64_t *nel[2] = {&op->in_nelems, &op->out_nelems}, *byt[2] = {&op->in_bytes, &op->out_bytes};
    const cJSON *tens[2] = {pos >= 4 && vals ? vals->child : NULL, ovals ? ovals->child : NULL};
    for (int s = 0; s < 2; s++) {
        if (an[s] && cJSON_IsNumber(an[s])) {
            if (!num_i64(an[s], &v) || v < 0)
                return lsim_err_set(p->err, LSIM_ETRACE, "%s: node id %lld: %s_msg_nelems is not a size", p->label,
                                    (long long)id, s ? "out" : "in");
            *nel[s] = v;
        }
        int64_t tn = 0, tb = 0;
        int32_t isz = -1;
        int found = 0;
        if (tens[s] && tensor_sum(tens[s], 0, &tn, &tb, &isz, &found))
            return lsim_err_set(p->err, LSIM_ETRACE, "%s: node id %lld: %s tensor sizes are not sizes (negative or overflowing)",
                                p->label, (long long)id, s ? "output" : "input");
        if (found) {
            if (*nel[s] < 0) *nel[s] = tn;
            if (op->dtype_bytes < 0) op->dtype_bytes = isz;
            if (*nel[s] == tn) *byt[s] = tb;
        }
        if (*byt[s] < 0 && *nel[s] >= 0 && op->dtype_bytes > 0 && *nel[s] <= INT64_MAX / op->dtype_bytes)
            *byt[s] = *nel[s] * op->dtype_bytes;
    }
    op->launches_kernel = (uint8_t)(launches && size != 1);
    et->nops++;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_op(const void *a, const void *b)
{
    const lsim_et_op *x = a, *y = b;
    return x->node_id < y->node_id ? -1 : x->node_id > y->node_id;
}

/* Pass 1 (every member but the nodes): the schema, distributedInfo (its
 * process groups are numbered before the nodes', as when the document was
 * one tree), and whether this is a Kineto trace. */
static int doc_member(void *ctx, const char *key, const char *val, size_t len)
{
    parser *p = ctx;
    lsim_et *et = p->et;
    if (!strcmp(key, "traceEvents")) p->traceevents = 1;
    if (!strcmp(key, "nodes")) p->nodes_member = 1; /* not an array */
    if (strcmp(key, "schema") && strcmp(key, "distributedInfo")) return 0;
    int rc = lsim_json_arena_begin();
    if (rc) return oom(p);
    cJSON *v = cJSON_ParseWithLength(val, len);
    if (!v) rc = lsim_err_set(p->err, LSIM_EFORMAT, "%s: not JSON (malformed at byte %zu)", p->label,
                              (size_t)(val - p->text));
    else if (!strcmp(key, "schema") && cJSON_IsString(v))
        snprintf(et->schema, sizeof et->schema, "%s", v->valuestring);
    else if (!strcmp(key, "distributedInfo") && cJSON_IsObject(v))
        rc = parse_distributed(p, v);
    if (lsim_json_arena_end()) cJSON_Delete(v);
    return rc;
}

/* Pass 2: one node, parsed alone: its id kept for the duplicate check,
 * record_param_comms parsed. */
static int doc_node(void *ctx, size_t index, const char *val, size_t len)
{
    parser *p = ctx;
    int rc = lsim_json_arena_begin();
    if (rc) return oom(p);
    cJSON *nd = cJSON_ParseWithLength(val, len);
    const cJSON *nm = cJSON_IsObject(nd) ? item(nd, "name") : NULL;
    int64_t id = 0;
    if (!nd)
        rc = lsim_err_set(p->err, LSIM_EFORMAT, "%s: not JSON (malformed at byte %zu)", p->label,
                          (size_t)(val - p->text));
    else if (!cJSON_IsObject(nd) || !cJSON_IsString(nm) || !num_i64(item(nd, "id"), &id))
        rc = lsim_err_set(p->err, LSIM_ETRACE,
                          "%s: node #%zu is not an execution-trace node (an object with a name and a numeric id)",
                          p->label, index);
    else if (LSIM_GROW(p->ids, &p->capids, p->nids + 1))
        rc = oom(p);
    else {
        p->ids[p->nids++] = id;
        if (!strcmp(nm->valuestring, "record_param_comms")) rc = parse_comm(p, nd, id);
    }
    if (lsim_json_arena_end()) cJSON_Delete(nd);
    return rc;
}

static int parse_doc(parser *p, const char *text, size_t len)
{
    lsim_et *et = p->et;
    int rc = 0, saw = 0;
    size_t k = 0;
    while (k < len && isspace((unsigned char)text[k])) k++;
    if (k == len) return lsim_err_set(p->err, LSIM_EFORMAT, "%s: file is empty", p->label);
    p->text = text;
    lsim_json_walk w1 = {"nodes", NULL, doc_member, p};
    rc = lsim_json_walk_mem(p->label, text, len, &w1, &saw, p->err);
    if (rc == LSIM_EFORMAT && strstr(p->err->msg, ": malformed JSON at byte ")) {
        /* the scanner's words, as "not JSON (...)" like the other refusals */
        char why[LSIM_ERR_LEN];
        snprintf(why, sizeof why, "%s", strstr(p->err->msg, ": malformed JSON at byte ") + 2);
        lsim_err_set(p->err, LSIM_EFORMAT, "%s: not JSON (%s)", p->label, why);
    }
    if (rc) return rc;
    if (!saw)
        return lsim_err_set(p->err, LSIM_ETRACE, "%s: no \"nodes\" array: not a PyTorch execution trace%s", p->label,
                            p->traceevents ? " (this is a Kineto trace)" : "");
    lsim_json_walk w2 = {"nodes", doc_node, NULL, p};
    if ((rc = lsim_json_walk_mem(p->label, text, len, &w2, &saw, p->err))) goto cleanup;
    if (!p->nids) {
        rc = lsim_err_set(p->err, LSIM_ETRACE, "%s: \"nodes\" is empty: not a usable execution trace", p->label);
        goto cleanup;
    }
    size_t ni = p->nids;
    int64_t *ids = p->ids;
    et->nnodes = ni;
    qsort(ids, ni, sizeof *ids, cmp_i64);
    for (size_t i = 1; i < ni; i++)
        if (ids[i] == ids[i - 1]) {
            rc = lsim_err_set(p->err, LSIM_ETRACE, "%s: node id %lld appears twice", p->label, (long long)ids[i]);
            goto cleanup;
        }
    if (et->nops) qsort(et->ops, et->nops, sizeof *et->ops, cmp_op);
    /* derived: the rank, the peers' global ranks, ops per group */
    int64_t rank_node = -1;
    for (size_t i = 0; i < et->nops; i++) {
        lsim_et_op *op = &et->ops[i];
        if (op->pg < 0) continue;
        lsim_et_pg *g = &et->pgs[op->pg];
        g->nops++;
        if (op->peer >= 0 && op->peer < g->nranks) op->peer_global = g->ranks[op->peer];
        if (op->group_rank < 0 || op->group_rank >= g->nranks) continue;
        int32_t r = g->ranks[op->group_rank];
        if (et->rank < 0) {
            et->rank = r;
            rank_node = op->node_id;
        } else if (et->rank != r) {
            if (rank_node >= 0)
                rc = lsim_err_set(p->err, LSIM_ETRACE, "%s: node id %lld is rank %d, node id %lld rank %d", p->label,
                                  (long long)op->node_id, r, (long long)rank_node, et->rank);
            else
                rc = lsim_err_set(p->err, LSIM_ETRACE, "%s: node id %lld is rank %d, distributedInfo says rank %d",
                                  p->label, (long long)op->node_id, r, et->rank);
            goto cleanup;
        }
    }
cleanup:
    free(p->ids);
    p->ids = NULL;
    return rc;
}

static int read_text(const char *label, char *text, size_t len, lsim_et **out, lsim_err *err)
{
    parser p = {0};
    int rc = 0;
    lsim_et *et = lsim_calloc(1, sizeof *et);
    if (!et || !(et->path = lsim_strdup(label))) {
        free(et);
        return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", label);
    }
    et->rank = et->world_size = -1;
    p.et = et;
    p.label = label;
    p.err = err;
    rc = parse_doc(&p, text, len);
    if (rc) {
        lsim_et_free(et);
        return rc;
    }
    *out = et;
    return 0;
}

int lsim_et_read(const char *path, lsim_et **out, lsim_err *err)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = slurp_file(path, &text, &len, err);
    if (!rc) rc = read_text(path, text, len, out, err);
    free(text);
    return rc;
}

int lsim_et_read_mem(const char *label, const char *buf, size_t len, lsim_et **out, lsim_err *err)
{
    *out = NULL;
    char *text = NULL;
    size_t tl = 0;
    int rc = slurp_mem(label, buf, len, &text, &tl, err);
    if (!rc) rc = read_text(label, text, tl, out, err);
    free(text);
    return rc;
}

/* ------------------------------------------------------------- sibling */

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

int lsim_et_sibling(const char *trace_path, char **out)
{
    *out = NULL;
    size_t n = strlen(trace_path);
    if (ends_with(trace_path, ".et.json") || ends_with(trace_path, ".et.json.gz")) return 0;
    if (ends_with(trace_path, ".json.gz")) n -= 8;
    else if (ends_with(trace_path, ".json")) n -= 5;
    else return 0;
    static const char *const SUF[] = {".et.json.gz", ".et.json"};
    for (size_t i = 0; i < 2; i++) {
        char *c = lsim_malloc(n + strlen(SUF[i]) + 1);
        if (!c) return LSIM_ENOMEM;
        memcpy(c, trace_path, n);
        strcpy(c + n, SUF[i]);
        /* whatever is there, not only a regular file: a FIFO or a
         * directory of that name is then refused by the reader with a
         * line, not skipped without one */
        struct stat st;
        if (stat(c, &st) == 0) {
            *out = c;
            return 0;
        }
        free(c);
    }
    return 0;
}

/* ------------------------------------------------------------- pairing */

typedef struct kern {
    lsim_ns key, ts;
    size_t ev;
} kern;

static int cmp_kern(const void *a, const void *b)
{
    const kern *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->ev < y->ev ? -1 : x->ev > y->ev;
}

typedef struct corr_ts {
    int64_t corr;
    lsim_ns ts;
} corr_ts;

static int cmp_corr(const void *a, const void *b)
{
    const corr_ts *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Can a kernel of kind tk be the call the ET records as ek? */
static int compatible(uint8_t tk, uint8_t ek)
{
    if (tk == ek || tk == LSIM_COLL_GENERIC || tk == LSIM_COLL_OTHER) return 1;
    if (tk == LSIM_COLL_SENDRECV)
        return ek == LSIM_COLL_SEND || ek == LSIM_COLL_RECV || ek == LSIM_COLL_ALLTOALL || ek == LSIM_COLL_OTHER;
    if ((tk == LSIM_COLL_SEND || tk == LSIM_COLL_RECV || tk == LSIM_COLL_ALLTOALL) && ek == LSIM_COLL_SENDRECV) return 1;
    return 0;
}

/* "[0, 1, 2]" as Kineto writes "Process Group Ranks"; NULL if unknown or
 * on allocation failure (*oom set). */
static char *ranks_text(const int32_t *ranks, int32_t n, int32_t first, int *nomem)
{
    if (n <= 0) return NULL;
    size_t cap = (size_t)n * 12 + 3;
    char *s = lsim_malloc(cap);
    if (!s) {
        *nomem = 1;
        return NULL;
    }
    size_t k = 0;
    s[k++] = '[';
    for (int32_t i = 0; i < n; i++)
        k += (size_t)snprintf(s + k, cap - k, "%s%d", i ? ", " : "", ranks ? ranks[i] : first + i);
    s[k++] = ']';
    s[k] = '\0';
    return s;
}

/* Why the trace's collective kernel c and the execution trace's call op
 * (on group g, or NULL) cannot be the same call, or NULL when they can: the
 * kind, the element size, the bytes, the group's size or name; numbers go
 * into num. */
static const char *mismatch(const lsim_trace *t, const lsim_coll_info *c, const lsim_et_op *op, const lsim_et_pg *g,
                            char *num, size_t len)
{
    if (!compatible(c->kind, op->kind)) return "different kinds";
    if (c->dtype_bytes > 0 && op->dtype_bytes > 0 && c->dtype_bytes != op->dtype_bytes) {
        snprintf(num, len, "element size %d against %d bytes", c->dtype_bytes, op->dtype_bytes);
        return num;
    }
    if (c->bytes >= 0 && op->in_bytes >= 0 && c->bytes != op->in_bytes) {
        snprintf(num, len, "%lld against %lld bytes", (long long)c->bytes, (long long)op->in_bytes);
        return num;
    }
    if (c->group_size > 0 && g && g->size > 0 && c->group_size != g->size) {
        snprintf(num, len, "group size %d against %d", c->group_size, g->size);
        return num;
    }
    const char *nm = c->pg_name != UINT32_MAX ? lsim_strtab_get(t->strings, c->pg_name) : NULL;
    if (c->pg_name != UINT32_MAX && g && g->named && strcmp(nm ? nm : "", g->name)) return "different process groups";
    return NULL;
}

int lsim_et_apply(const lsim_et *et, lsim_trace *t, lsim_et_apply_stats *st, lsim_err *err)
{
    int rc = 0;
    kern *ks = NULL;
    corr_ts *ct = NULL;
    int32_t *kstream = NULL, *ostream = NULL;
    size_t *kpos = NULL, *pair = NULL, *opos = NULL;
    unsigned char *used = NULL;
    lsim_et_apply_stats s = {0};
    if (st) memset(st, 0, sizeof *st);
    if (et->rank >= 0 && t->rank >= 0 && et->rank != t->rank) {
        rc = lsim_err_set(err, LSIM_ETRACE, "%s and %s: the trace is rank %d, the execution trace rank %d", t->path,
                          et->path, t->rank, et->rank);
        goto cleanup;
    }
    /* the trace's collective kernels in launch order */
    size_t nk = 0, nc = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        if (e->kind == LSIM_EV_KERNEL && e->coll >= 0 && (size_t)e->coll < t->ncoll &&
            t->colls[e->coll].kind != LSIM_COLL_NONE)
            nk++;
        if (e->kind == LSIM_EV_RUNTIME && e->corr >= 0) nc++;
    }
    ks = lsim_malloc((nk ? nk : 1) * sizeof *ks);
    ct = lsim_malloc((nc ? nc : 1) * sizeof *ct);
    kstream = lsim_malloc((nk ? nk : 1) * sizeof *kstream);
    kpos = lsim_malloc((nk ? nk : 1) * sizeof *kpos);
    pair = lsim_malloc((nk ? nk : 1) * sizeof *pair);
    ostream = lsim_malloc((et->nops ? et->nops : 1) * sizeof *ostream);
    opos = lsim_malloc((et->nops ? et->nops : 1) * sizeof *opos);
    used = lsim_calloc(et->npg ? et->npg : 1, 1);
    if (!ks || !ct || !kstream || !kpos || !pair || !ostream || !opos || !used) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", t->path);
        goto cleanup;
    }
    nk = nc = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        if (e->kind == LSIM_EV_RUNTIME && e->corr >= 0) ct[nc++] = (corr_ts){e->corr, e->ts};
    }
    qsort(ct, nc, sizeof *ct, cmp_corr);
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        if (!(e->kind == LSIM_EV_KERNEL && e->coll >= 0 && (size_t)e->coll < t->ncoll &&
              t->colls[e->coll].kind != LSIM_COLL_NONE))
            continue;
        lsim_ns key = e->ts;
        if (e->corr >= 0) { /* the launch call's start, when it is in the file */
            size_t lo = 0, hi = nc;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ct[mid].corr < e->corr) lo = mid + 1;
                else hi = mid;
            }
            if (lo < nc && ct[lo].corr == e->corr) key = ct[lo].ts;
        }
        ks[nk++] = (kern){key, e->ts, i};
    }
    qsort(ks, nk, sizeof *ks, cmp_kern);
    /* streams: a group both files name, or -1 (everything else, in order) */
    for (size_t k = 0; k < nk; k++) {
        const lsim_coll_info *c = &t->colls[t->ev[ks[k].ev].coll];
        kstream[k] = -1;
        if (c->pg_name == UINT32_MAX) continue;
        const char *nm = lsim_strtab_get(t->strings, c->pg_name);
        for (size_t g = 0; nm && g < et->npg; g++)
            if (et->pgs[g].named && !strcmp(et->pgs[g].name, nm)) {
                kstream[k] = (int32_t)g;
                used[g] = 1;
                break;
            }
    }
    size_t no = 0;
    for (size_t i = 0; i < et->nops; i++) {
        const lsim_et_op *op = &et->ops[i];
        ostream[i] = -2; /* launches no kernel */
        if (!op->launches_kernel) continue;
        no++;
        ostream[i] = op->pg >= 0 && used[op->pg] ? op->pg : -1;
    }
    s.kernels = nk;
    /* pair in order within each stream */
    for (int32_t sg = -1; sg < (int32_t)et->npg; sg++) {
        if (sg >= 0 && !used[sg]) continue;
        size_t a = 0, b = 0;
        for (size_t k = 0; k < nk; k++)
            if (kstream[k] == sg) kpos[a++] = k;
        for (size_t i = 0; i < et->nops; i++)
            if (ostream[i] == sg) opos[b++] = i;
        char grp[96] = "";
        if (sg >= 0) snprintf(grp, sizeof grp, " on process group %s", et->pgs[sg].name);
        if (a != b) {
            rc = lsim_err_set(err, LSIM_ETRACE,
                              "%s and %s: %zu collective kernels%s in the trace, %zu communication calls that launch one in "
                              "the execution trace: not the same iteration (move the execution trace away to replay "
                              "without it)",
                              t->path, et->path, a, grp, b);
            goto cleanup;
        }
        for (size_t q = 0; q < a; q++) {
            size_t k = kpos[q];
            const lsim_et_op *op = &et->ops[opos[q]];
            const lsim_coll_info *c = &t->colls[t->ev[ks[k].ev].coll];
            char num[96];
            const char *why = mismatch(t, c, op, op->pg >= 0 ? &et->pgs[op->pg] : NULL, num, sizeof num);
            if (why) {
                const char *kn = lsim_strtab_get(t->strings, t->ev[ks[k].ev].name);
                rc = lsim_err_set(err, LSIM_ETRACE,
                                  "%s and %s: collective #%zu%s: the trace's %s kernel (%.*s) and the execution trace's "
                                  "%s (node id %lld) cannot be the same call: %s",
                                  t->path, et->path, q, grp, lsim_coll_kind_name((lsim_coll_kind)c->kind),
                                  (int)(kn && strcspn(kn, "(") < 80 ? strcspn(kn, "(") : 80), kn ? kn : "?",
                                  op->name, (long long)op->node_id, why);
                goto cleanup;
            }
            pair[k] = opos[q];
        }
    }
    /* fill in what the trace does not say */
    for (size_t k = 0; k < nk; k++) {
        lsim_coll_info *c = &t->colls[t->ev[ks[k].ev].coll];
        const lsim_et_op *op = &et->ops[pair[k]];
        const lsim_et_pg *g = op->pg >= 0 ? &et->pgs[op->pg] : NULL;
        int grp = 0, sz = 0, nomem = 0;
        s.matched++;
        /* a generic kernel takes the call's kind; so does a SendRecv kernel
         * of an all-to-all (NCCL runs one as grouped sends and receives to
         * every peer): it is matched across its group, not as a pair */
        if ((c->kind == LSIM_COLL_GENERIC || c->kind == LSIM_COLL_OTHER ||
             (c->kind == LSIM_COLL_SENDRECV && op->kind == LSIM_COLL_ALLTOALL)) &&
            op->kind != LSIM_COLL_NONE && op->kind != LSIM_COLL_OTHER)
            c->kind = op->kind;
        if (g && c->pg_name == UINT32_MAX && g->named) {
            if (lsim_strtab_intern(t->strings, g->name, strlen(g->name), &c->pg_name)) nomem = 1;
            else grp = 1;
        }
        if (g && c->pg_ranks == UINT32_MAX && !nomem) {
            char *txt = NULL;
            if (g->nranks > 0) txt = ranks_text(g->ranks, g->nranks, 0, &nomem);
            else if (g->size > 1 && g->size == t->world_size) txt = ranks_text(NULL, g->size, 0, &nomem);
            if (txt) {
                if (lsim_strtab_intern(t->strings, txt, strlen(txt), &c->pg_ranks)) nomem = 1;
                else grp = 1;
                free(txt);
            }
        }
        if (nomem) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", t->path);
            goto cleanup;
        }
        if (g && c->group_size < 0 && g->size > 0) {
            c->group_size = g->size;
            grp = 1;
        }
        if (c->dtype_bytes < 0 && op->dtype_bytes > 0) {
            c->dtype_bytes = op->dtype_bytes;
            sz = 1;
        }
        if (c->in_nelems < 0 && op->in_nelems >= 0) {
            c->in_nelems = op->in_nelems;
            sz = 1;
        }
        if (c->out_nelems < 0 && op->out_nelems >= 0) {
            c->out_nelems = op->out_nelems;
            sz = 1;
        }
        if (c->bytes < 0 && op->in_bytes >= 0) {
            c->bytes = op->in_bytes;
            sz = 1;
        }
        s.group_filled += (size_t)grp;
        s.size_filled += (size_t)sz;
    }
    if (st) *st = s;
cleanup:
    free(ks);
    free(ct);
    free(kstream);
    free(ostream);
    free(kpos);
    free(opos);
    free(pair);
    free(used);
    return rc;
}

int lsim_et_apply_sibling(lsim_trace *t, lsim_et_apply_stats *st, char **et_path, lsim_err *err)
{
    char *etp = NULL;
    lsim_et *et = NULL;
    memset(st, 0, sizeof *st);
    if (et_path) *et_path = NULL;
    if (lsim_et_sibling(t->path, &etp)) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (!etp) return 0;
    int rc = lsim_et_read(etp, &et, err);
    if (!rc) rc = lsim_et_apply(et, t, st, err);
    lsim_et_free(et);
    if (!rc && et_path) *et_path = etp;
    else free(etp);
    return rc;
}
