/* Streaming Kineto trace reader (see include/lumosim/kineto.h; the data
 * model it fills is trace.h's, in src/trace.c): the mapping of trace events
 * to the trace's events, rows and collectives. The JSON itself is walked
 * by the shared streaming reader (src/read/json_scan.c, json_internal.h), which
 * finds each traceEvents element's extent and where its own "ph", "ts" and
 * "dur" values are, so that non-complete events (flows, metadata) are
 * skipped without parsing and timestamps are converted exactly from their
 * decimal text (here: cJSON's double cannot hold 1.7e15 us with
 * sub-microsecond digits).
 *
 * A plain event (strict JSON without backslashes: all of today's traces) is
 * validated by the shared scanner (lsim_json_scan_fields), which also records
 * where the members the graph uses are (top_slot, arg_slot say which); they
 * are then read in place (jv), with cJSON only for the values that need it.
 * Any other event is handed whole to cJSON, as every event was before
 * (issue 20, docs/performance.md). cJSON allocations go to a bump arena
 * reset after every event, so parsing costs no malloc/free pairs. */
#include "lumosim/graph.h" /* LSIM_DUR_MAX */
#include "lumosim/alloc.h"
#include "lumosim/kineto.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <unistd.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "lumosim/input.h"
#include "json_internal.h"

/* ----------------------------------------------------------------- source */

/* The shared reader and a trace event's ph/ts/dur (json_internal.h). */
typedef lsim_json_reader reader;
typedef lsim_json_keys value_keys;

/* Row interning: (pid, tid, device, stream) -> dense index. Open addressing
 * over row indices; rows are few (threads and streams). */
typedef struct rowmap {
    uint32_t *slots; /* row + 1, 0 = empty */
    size_t nslots;
} rowmap;

/* Does the key k (kl bytes) equal the literal, as strcmp on the key made a
 * C string would say (cJSON's keys are C strings: one with a NUL byte
 * inside ends there)? */
#define KEY_IS(k, kl, lit) \
    ((kl) >= sizeof(lit) - 1 && !memcmp((k), (lit), sizeof(lit) - 1) && ((kl) == sizeof(lit) - 1 || (k)[sizeof(lit) - 1] == '\0'))

/* The members of an event the graph uses: its own (J_cat .. J_args) and its
 * args' (the rest). */
enum {
    J_cat, J_name, J_pid, J_tid, J_args,
    J_correlation, J_external_id, J_device, J_stream, J_sync_kind, J_wait_stream, J_wait_rec,
    J_coll_name, J_in_nelems, J_out_nelems, J_group_size, J_dtype, J_pg_name, J_pg_ranks, J_input_dims,
    J_input_type, J_rank, J_seq_nr, J_fwd_tid, J_concrete, J_root_rank,
    J_grid, J_block, J_regs, J_smem, J_occ, J_bps, /* kernels' launch configuration */
    J_N
};

/* The slot of the event's own key k (kl bytes, as KEY_IS reads them), or -1. */
static inline int top_slot(const char *k, size_t kl)
{
    switch (k[0]) {
    case 'c': return KEY_IS(k, kl, "cat") ? J_cat : -1;
    case 'n': return KEY_IS(k, kl, "name") ? J_name : -1;
    case 'a': return KEY_IS(k, kl, "args") ? J_args : -1;
    case 'p': return KEY_IS(k, kl, "pid") ? J_pid : -1;
    case 't': return KEY_IS(k, kl, "tid") ? J_tid : -1;
    default: return -1;
    }
}

/* The slot of an args key, or -1. */
static inline int arg_slot(const char *k, size_t kl)
{
#define K_(name, f) \
    if (KEY_IS(k, kl, name)) return J_##f
    switch (k[0]) {
    case 'g': K_("grid", grid); break;
    case 'b':
        K_("block", block);
        K_("blocks per SM", bps);
        break;
    case 'e': K_("est. achieved occupancy %", occ); break;
    case 'c':
        K_("correlation", correlation);
        K_("cuda_sync_kind", sync_kind);
        break;
    case 'E': K_("External id", external_id); break;
    case 'd':
        K_("device", device);
        K_("dtype", dtype);
        break;
    case 's':
        K_("stream", stream);
        K_("shared memory", smem);
        break;
    case 'w':
        K_("wait_on_stream", wait_stream);
        K_("wait_on_cuda_event_record_corr_id", wait_rec);
        break;
    case 'C':
        K_("Collective name", coll_name);
        K_("Concrete Inputs", concrete);
        break;
    case 'I':
        K_("In msg nelems", in_nelems);
        K_("Input Dims", input_dims);
        K_("Input type", input_type);
        break;
    case 'O': K_("Out msg nelems", out_nelems); break;
    case 'r':
        K_("rank", rank);
        K_("registers per thread", regs);
        K_("root_rank", root_rank);
        break;
    case 'S': K_("Sequence number", seq_nr); break;
    case 'F': K_("Fwd thread id", fwd_tid); break;
    case 'G': K_("Group size", group_size); break;
    case 'P':
        K_("Process Group Name", pg_name);
        K_("Process Group Ranks", pg_ranks);
        break;
    default: break;
    }
#undef K_
    return -1;
}

/* Where a plain event's members are: the value of member J_x at offsets
 * off[J_x], len[J_x] from the event's '{' (lsim_json_scan_fields). */
typedef lsim_json_fields ev_scan;
_Static_assert((int)J_N <= (int)LSIM_JSON_FIELDS_MAX, "J_* must fit lsim_json_fields");

/* The Kineto reader's state beside the shared reader: the trace it fills,
 * its rows, the names it has classified, and where the plain event being
 * read keeps its members. */
typedef struct kctx {
    lsim_trace *t;
    rowmap rows;
    struct name_memo *memo;
    ev_scan sc;
} kctx;

/* A plain event for the shared scanner: its own members by top_slot, the
 * members of its one "args" object by arg_slot. */
static const lsim_json_scan_spec k_event_spec = {top_slot, arg_slot, J_args};


/* ------------------------------------------------------------ conversions */

/* The trace's timestamp granularity so far (res, a divisor of 1000 ns) after
 * one more value: older traces write whole microseconds, so the hidden-
 * dependency rule must read their times as that coarse (src/build/hidden.c).
 * One modulo per value; nothing changes once the granularity is 1 ns. */
static lsim_ns gcd_ns(lsim_ns res, lsim_ns v)
{
    if (res <= 1) return res;
    lsim_ns a = res, b = v % 1000;
    if (b < 0) b = -b;
    while (b) {
        lsim_ns r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Exact decimal conversion of a JSON number (microseconds) to integer
 * nanoseconds: the significant digits are kept as text and scaled by a power
 * of ten, so no double rounding ever happens; below 1 ns the first dropped
 * digit rounds half away from zero. Grammar is JSON's:
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
/* The common spellings, [-]D[.F] with D at most 16 digits (today's
 * timestamps in us have 16) and no leading zero, F 1 to 3 digits: exact in
 * nanoseconds by integer arithmetic. 1 when taken (*out set), 0 for
 * anything else (lsim_us_text_to_ns's general path, which gives the same
 * for these). */
static int us_text_to_ns_short(const char *s, size_t len, lsim_ns *out)
{
    size_t i = len && s[0] == '-', d = i;
    uint64_t v = 0, f = 0;
    for (; i < len && i - d < 16 && s[i] >= '0' && s[i] <= '9'; i++) v = v * 10 + (uint64_t)(s[i] - '0');
    if (i == d || (s[d] == '0' && i - d > 1) || v > ((uint64_t)INT64_MAX - 999) / 1000) return 0;
    int nf = 0;
    if (i < len && s[i] == '.')
        for (i++; i < len && nf < 3 && s[i] >= '0' && s[i] <= '9'; i++, nf++) f = f * 10 + (uint64_t)(s[i] - '0');
    if (i != len || (s[len - 1] == '.')) return 0;
    for (; nf < 3; nf++) f *= 10;
    lsim_ns ns = (lsim_ns)(v * 1000 + f); /* bounded above: no overflow */
    *out = d ? -ns : ns;
    return 1;
}

int lsim_us_text_to_ns(const char *s, size_t len, lsim_ns *out)
{
    if (us_text_to_ns_short(s, len, out)) return 0;
    enum { MAXD = 64 };
    unsigned char dig[MAXD];
    int nd = 0;       /* significant digits kept */
    long e10 = 0;     /* value = digits * 10^e10 (in us) */
    size_t i = 0;
    int neg = 0;
    if (i < len && s[i] == '-') {
        neg = 1;
        i++;
    }
    if (i >= len || s[i] < '0' || s[i] > '9') return LSIM_EFORMAT;
    if (s[i] == '0' && i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9') return LSIM_EFORMAT; /* leading zero */
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (nd == 0 && s[i] == '0') continue;
        if (nd < MAXD) dig[nd++] = (unsigned char)(s[i] - '0');
        else e10++;
    }
    if (i < len && s[i] == '.') {
        i++;
        if (i >= len || s[i] < '0' || s[i] > '9') return LSIM_EFORMAT;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
            if (nd == 0 && s[i] == '0') {
                e10--;
                continue;
            }
            if (nd < MAXD) {
                dig[nd++] = (unsigned char)(s[i] - '0');
                e10--;
            }
        }
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < len && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
        if (i >= len || s[i] < '0' || s[i] > '9') return LSIM_EFORMAT;
        long x = 0;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
            if (x < 100000) x = x * 10 + (s[i] - '0');
        e10 += eneg ? -x : x;
    }
    if (i != len) return LSIM_EFORMAT;
    long scale = e10 + 3; /* to nanoseconds */
    int keep = nd;
    int round_up = 0;
    if (scale < 0) {
        long k = (long)nd + scale; /* digits that stay */
        if (k < 0) {
            keep = 0;
        } else {
            keep = (int)k;
            round_up = keep < nd && dig[keep] >= 5;
        }
        scale = 0;
    }
    uint64_t v = 0;
    const uint64_t lim = (uint64_t)INT64_MAX;
    for (int k = 0; k < keep; k++) {
        if (v > (lim - dig[k]) / 10) return LSIM_EFORMAT;
        v = v * 10 + dig[k];
    }
    for (long k = 0; k < scale && v; k++) {
        if (v > lim / 10) return LSIM_EFORMAT;
        v *= 10;
    }
    if (round_up) {
        if (v == lim) return LSIM_EFORMAT;
        v++;
    }
    *out = neg ? -(lsim_ns)v : (lsim_ns)v;
    return 0;
}

/* Kind from a collective name as written in metadata or kernel names
 * ("allreduce", "AllReduce", "all_reduce", "_allgather_base", ...). */
static lsim_coll_kind coll_from_text(const char *s)
{
    char norm[96];
    size_t k = 0;
    for (const char *p = s; *p && k + 1 < sizeof norm; p++)
        if (isalnum((unsigned char)*p)) norm[k++] = (char)tolower((unsigned char)*p);
    norm[k] = '\0';
    if (strstr(norm, "allreduce")) return LSIM_COLL_ALLREDUCE;
    if (strstr(norm, "reducescatter")) return LSIM_COLL_REDUCESCATTER;
    if (strstr(norm, "allgather")) return LSIM_COLL_ALLGATHER;
    if (strstr(norm, "alltoall")) return LSIM_COLL_ALLTOALL;
    if (strstr(norm, "broadcast")) return LSIM_COLL_BROADCAST;
    if (strstr(norm, "sendrecv")) return LSIM_COLL_SENDRECV;
    if (strstr(norm, "reduce")) return LSIM_COLL_REDUCE;
    if (strstr(norm, "send")) return LSIM_COLL_SEND;
    if (strstr(norm, "recv")) return LSIM_COLL_RECV;
    if (strstr(norm, "generic")) return LSIM_COLL_GENERIC;
    return LSIM_COLL_NONE;
}

/* Element size from a dtype token in a kernel name or a metadata dtype. */
static int32_t dtype_size(const char *t)
{
    static const struct {
        const char *tok;
        int32_t sz;
    } T[] = {{"bfloat16", 2}, {"bf16", 2}, {"half", 2},   {"float16", 2}, {"f16", 2},
             {"double", 8},   {"f64", 8},  {"float64", 8}, {"float", 4},  {"f32", 4},
             {"int64", 8},    {"i64", 8},  {"u64", 8},    {"long", 8},    {"uint64", 8},
             {"int32", 4},    {"i32", 4},  {"u32", 4},    {"uint32", 4},  {"int8", 1},
             {"i8", 1},       {"u8", 1},   {"uint8", 1},  {"byte", 1},    {"char", 1},
             {"bool", 1},     {"fp8", 1},  {"int", 4}};
    for (size_t i = 0; i < sizeof T / sizeof *T; i++)
        if (strcasecmp(t, T[i].tok) == 0) return T[i].sz;
    return -1;
}

/* Communication kernels that are not NCCL's or RCCL's own, by the text
 * their names contain (docs/execution-trace.md, "Communication kernels").
 * The kind is what the library's operation does; GENERIC takes it from the
 * parent op's record_param_comms, as for ncclDevKernel_Generic. To support
 * another library, add a row: the first match wins, so list the more
 * specific text first. */
static const struct {
    const char *text;
    lsim_coll_kind kind;
    const char *library;
} COMM_KERNELS[] = {
    /* DeepEP (deepseek-ai/DeepEP): MoE expert dispatch and combine, an
     * all-to-all over NVLink / RDMA; namespaces deep_ep:: and, in some
     * builds' demangled names, dpsk::ep:: */
    {"deep_ep::", LSIM_COLL_ALLTOALL, "DeepEP"},
    {"dpsk::ep::", LSIM_COLL_ALLTOALL, "DeepEP"},
    /* vLLM / SGLang custom all-reduce over NVLink peer memory */
    {"cross_device_reduce", LSIM_COLL_ALLREDUCE, "custom all-reduce (vLLM, SGLang)"},
    /* TensorRT-LLM's custom all-reduce kernels */
    {"AllReduceKernel", LSIM_COLL_ALLREDUCE, "TensorRT-LLM all-reduce"},
    {"allreduce_fusion_kernel", LSIM_COLL_ALLREDUCE, "TensorRT-LLM all-reduce"},
    /* MSCCL / MSCCL++ (Microsoft): the algorithm is in the XML plan, the
     * collective in the parent op */
    {"mscclKernel", LSIM_COLL_GENERIC, "MSCCL"},
    {"mscclpp", LSIM_COLL_GENERIC, "MSCCL++"},
    /* NVSHMEM device-initiated communication (kernels of the library and
     * of applications built on it, e.g. put/get and barrier kernels) */
    {"nvshmem", LSIM_COLL_GENERIC, "NVSHMEM"},
};

lsim_coll_kind lsim_coll_from_kernel_name(const char *name, int32_t *dtype_bytes)
{
    if (dtype_bytes) *dtype_bytes = -1;
    if (!name) return LSIM_COLL_NONE;
    for (size_t i = 0; i < sizeof COMM_KERNELS / sizeof *COMM_KERNELS; i++)
        if (strstr(name, COMM_KERNELS[i].text)) return COMM_KERNELS[i].kind;
    const char *p = NULL;
    if (strncasecmp(name, "nccl", 4) == 0 || strncasecmp(name, "rccl", 4) == 0) p = name;
    else {
        p = strstr(name, "nccl");
        if (!p) p = strstr(name, "rccl");
        if (!p || !(strstr(p, "Kernel") || strstr(p, "kernel"))) return LSIM_COLL_NONE;
    }
    /* tokens split on '_' up to '(' : ncclKernel AllReduce RING LL Sum float */
    char buf[160];
    size_t k = 0;
    for (const char *q = p; *q && *q != '(' && *q != '<' && k + 1 < sizeof buf; q++) buf[k++] = *q;
    buf[k] = '\0';
    lsim_coll_kind kind = LSIM_COLL_NONE;
    int32_t dt = -1;
    char *save = NULL;
    int first = 1;
    for (char *tok = strtok_r(buf, "_", &save); tok; tok = strtok_r(NULL, "_", &save)) {
        if (first) { /* ncclKernel / ncclDevKernel */
            first = 0;
            continue;
        }
        if (kind == LSIM_COLL_NONE) {
            lsim_coll_kind c = coll_from_text(tok);
            if (c != LSIM_COLL_NONE) {
                kind = c;
                continue;
            }
        }
        if (dt < 0) {
            int32_t s = dtype_size(tok);
            if (s > 0) dt = s;
        }
    }
    if (kind == LSIM_COLL_NONE) kind = LSIM_COLL_OTHER;
    if (dtype_bytes) *dtype_bytes = dt;
    return kind;
}

int lsim_comm_like_kernel_name(const char *name)
{
    static const char *const LIKE[] = {"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv",
                                       "nccl",      "rccl",      "nvshmem",       "multimem", "deepep"};
    if (!name || lsim_coll_from_kernel_name(name, NULL) != LSIM_COLL_NONE) return 0;
    char norm[512];
    size_t k = 0;
    for (const char *p = name; *p && k + 1 < sizeof norm; p++)
        if (isalnum((unsigned char)*p)) norm[k++] = (char)tolower((unsigned char)*p);
    norm[k] = '\0';
    for (size_t i = 0; i < sizeof LIKE / sizeof *LIKE; i++)
        if (strstr(norm, LIKE[i])) return 1;
    return 0;
}

/* ------------------------------------------------------------- the trace */

static int intern(lsim_trace *t, const char *s, uint32_t *id)
{
    return lsim_strtab_intern(t->strings, s ? s : "", s ? strlen(s) : 0, id);
}

/* JSON numbers are doubles; converting one outside int64's range (or NaN) to
 * an integer is undefined behaviour in C, and a fuzzer found a tid of 7e32.
 * Saturate instead, so hostile ids stay well-defined (and merely distinct). */
static int64_t dbl_i64(double d)
{
    if (!(d == d)) return 0;
    if (d >= 9223372036854775807.0) return INT64_MAX;
    if (d <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d;
}

static int64_t value_int(const cJSON *v, int64_t dflt)
{
    if (!v) return dflt;
    if (cJSON_IsNumber(v)) return dbl_i64(v->valuedouble);
    if (cJSON_IsString(v) && v->valuestring[0]) {
        char *e = NULL;
        long long x = strtoll(v->valuestring, &e, 10);
        if (e && *e == '\0') return (int64_t)x;
    }
    return dflt;
}

static int64_t item_int(const cJSON *o, const char *key, int64_t dflt)
{
    return value_int(cJSON_GetObjectItemCaseSensitive(o, key), dflt);
}

/* The members of an event that the graph uses (ev_scan's J_*), as cJSON
 * items: those of an event cJSON parsed whole, found in one pass over each
 * object (a kernel has a dozen args; looking each up separately was a
 * measurable share of ingest time), or those of a plain event, made from its
 * text when first asked for (jv), so that values never used are never
 * converted. */
typedef struct ev_args {
    uint64_t have, done;       /* per J_*: present; its item made */
    const cJSON *item[J_N];
    char *txt;                 /* a plain event's text, and where its members are */
    const ev_scan *sc;
    int bad;                   /* a value cJSON could not parse (out of memory) */
    int nnodes, nroots;
    cJSON nodes[J_N];  /* one per member at most: strings, literals, short integers */
    cJSON *roots[J_N]; /* values cJSON parsed, deleted when the arena spilled */
} ev_args;

#define ARG(a, f) jv((a), J_##f)

static void index_set(ev_args *a, int slot, const cJSON *c)
{
    if (slot < 0) return;
    a->have |= (uint64_t)1 << slot;
    a->done |= (uint64_t)1 << slot;
    a->item[slot] = c;
}

/* Index the members of an event cJSON parsed whole. */
static void index_tree(ev_args *a, const cJSON *o)
{
    a->have = a->done = 0;
    a->bad = a->nnodes = a->nroots = 0;
    a->sc = NULL;
    const cJSON *args = NULL;
    for (const cJSON *c = o->child; c; c = c->next)
        if (c->string) {
            int slot = top_slot(c->string, strlen(c->string));
            index_set(a, slot, c);
            if (slot == J_args) args = c;
        }
    if (!cJSON_IsObject(args)) return;
    for (const cJSON *c = args->child; c; c = c->next)
        if (c->string) index_set(a, arg_slot(c->string, strlen(c->string)), c);
}

/* The members of a plain event (txt, as lsim_json_scan_fields found them). */
static void index_plain(ev_args *a, char *txt, const ev_scan *sc)
{
    a->have = sc->have;
    a->done = 0;
    a->bad = a->nnodes = a->nroots = 0;
    a->txt = txt;
    a->sc = sc;
}

static cJSON *plain_item(ev_args *a, char *s, size_t n)
{
    cJSON *c = &a->nodes[a->nnodes];
    if (!lsim_json_plain_scalar(c, s, n)) return NULL;
    a->nnodes++;
    return c;
}

/* The item of member k (NULL when absent): a plain event's value is made on
 * first use, by cJSON when plain_item cannot. */
static const cJSON *jv(ev_args *a, int k)
{
    uint64_t bit = (uint64_t)1 << k;
    if (!(a->have & bit)) return NULL;
    if (a->done & bit) return a->item[k];
    a->done |= bit;
    char *s = a->txt + a->sc->off[k];
    size_t n = a->sc->len[k];
    const cJSON *it = s[0] == '{' ? NULL : s[0] == '[' ? lsim_json_plain_tree(s, n) : plain_item(a, s, n);
    if (!it) {
        cJSON *c = cJSON_ParseWithLength(s, n);
        if (c) a->roots[a->nroots++] = c;
        else a->bad = 1; /* the scanner's grammar is cJSON's: out of memory */
        it = c;
    }
    a->item[k] = it;
    return it;
}

/* pid/tid: numbers, or strings (numeric or not). Non-numeric strings map to
 * stable negative ids far from real ones through the string table. */
static int id_field(lsim_trace *t, const cJSON *v, int64_t *out)
{
    if (cJSON_IsNumber(v)) {
        *out = dbl_i64(v->valuedouble);
        return 0;
    }
    if (cJSON_IsString(v)) {
        char *e = NULL;
        long long x = strtoll(v->valuestring, &e, 10);
        if (v->valuestring[0] && e && *e == '\0') {
            *out = (int64_t)x;
            return 0;
        }
        uint32_t id;
        int rc = intern(t, v->valuestring, &id);
        if (rc) return rc;
        *out = INT64_MIN / 2 + (int64_t)id;
        return 0;
    }
    *out = 0;
    return 0;
}

static uint64_t row_hash(const lsim_row *r)
{
    uint64_t h = (uint64_t)r->pid * 0x9e3779b97f4a7c15ull ^ (uint64_t)r->tid * 0xc2b2ae3d27d4eb4full ^
                 (uint64_t)r->stream * 0x165667b19e3779f9ull ^ (uint64_t)(uint32_t)r->device * 0x27d4eb2f165667c5ull ^
                 (uint64_t)(uint32_t)r->rank * 0x94d049bb133111ebull;
    return h ^ (h >> 29);
}

static int row_eq(const lsim_row *a, const lsim_row *b)
{
    return a->pid == b->pid && a->tid == b->tid && a->stream == b->stream && a->device == b->device && a->rank == b->rank;
}

static int intern_row(lsim_trace *t, rowmap *m, const lsim_row *r, uint32_t *out)
{
    if (!m->slots || (t->nrows + 1) * 2 > m->nslots) {
        size_t ns = m->nslots ? m->nslots * 2 : 64;
        uint32_t *sl = lsim_calloc(ns, sizeof *sl);
        if (!sl) return LSIM_ENOMEM;
        for (size_t i = 0; i < t->nrows; i++) {
            size_t k = row_hash(&t->rows[i]) & (ns - 1);
            while (sl[k]) k = (k + 1) & (ns - 1);
            sl[k] = (uint32_t)i + 1;
        }
        free(m->slots);
        m->slots = sl;
        m->nslots = ns;
    }
    size_t k = row_hash(r) & (m->nslots - 1);
    while (m->slots[k]) {
        if (row_eq(&t->rows[m->slots[k] - 1], r)) {
            *out = m->slots[k] - 1;
            return 0;
        }
        k = (k + 1) & (m->nslots - 1);
    }
    if (LSIM_GROW(t->rows, &t->caprows, t->nrows + 1)) return LSIM_ENOMEM;
    t->rows[t->nrows] = *r;
    m->slots[k] = (uint32_t)t->nrows + 1;
    *out = (uint32_t)t->nrows++;
    return 0;
}

static int push_sync(lsim_trace *t, int64_t ws, int64_t wr, int32_t *idx)
{
    if (LSIM_GROW(t->syncs, &t->capsync, t->nsync + 1)) return LSIM_ENOMEM;
    if (t->nsync >= INT32_MAX) return LSIM_ENOMEM;
    t->syncs[t->nsync] = (lsim_sync_info){ws, wr};
    *idx = (int32_t)t->nsync++;
    return 0;
}

static int push_event(lsim_trace *t, lsim_event **out)
{
    if (LSIM_GROW(t->ev, &t->capev, t->nev + 1)) return LSIM_ENOMEM;
    *out = &t->ev[t->nev++];
    return 0;
}

static int push_coll(lsim_trace *t, int32_t *idx)
{
    if (LSIM_GROW(t->colls, &t->capcoll, t->ncoll + 1)) return LSIM_ENOMEM;
    if (t->ncoll >= INT32_MAX) return LSIM_ENOMEM;
    *idx = (int32_t)t->ncoll;
    lsim_coll_info *c = &t->colls[t->ncoll++];
    memset(c, 0, sizeof *c);
    c->group_size = -1;
    c->in_nelems = c->out_nelems = c->bytes = -1;
    c->dtype_bytes = -1;
    c->pg_name = c->pg_ranks = UINT32_MAX;
    c->seq = -1;
    c->root = -1;
    return 0;
}

/* Categories, matched case-insensitively; kind -1: dropped, -2: "operator"
 * (the step, or an op). */
static const struct {
    const char *cat;
    int kind;
} CATEGORIES[] = {
    {"kernel", LSIM_EV_KERNEL},
    {"gpu_memcpy", LSIM_EV_MEMCPY}, {"memcpy", LSIM_EV_MEMCPY},
    {"gpu_memset", LSIM_EV_MEMSET}, {"memset", LSIM_EV_MEMSET},
    {"cuda_runtime", LSIM_EV_RUNTIME}, {"runtime", LSIM_EV_RUNTIME}, {"cuda_driver", LSIM_EV_RUNTIME},
    {"hip_runtime", LSIM_EV_RUNTIME}, {"driver", LSIM_EV_RUNTIME},
    {"cuda_sync", LSIM_EV_SYNC},
    {"user_annotation", LSIM_EV_ANNOTATION},
    {"operator", -2},
    {"cpu_op", LSIM_EV_CPU_OP}, {"python_function", LSIM_EV_CPU_OP}, {"python", LSIM_EV_CPU_OP},
    {"gpu_user_annotation", -1}, {"trace", -1}, {"cpu_instant_event", -1}, {"overhead", -1},
    {"ac2g", -1}, {"fwdbwd", -1}, {"lumosim_critical_path", -1}, {"lumosim_job_critical_path", -1},
    {"lumosim_dep", -1},
};

static int classify(const char *cat, const char *name, lsim_ev_kind *k)
{
    /* returns 1 if the event is kept */
    if (!cat) cat = "";
    /* no two categories are equal, so the order of the table does not
     * matter, and one that differs in its first letter cannot match */
    int c0 = tolower((unsigned char)cat[0]), kind = 0;
    size_t i = 0, n = sizeof CATEGORIES / sizeof *CATEGORIES;
    for (; i < n; i++)
        if (CATEGORIES[i].cat[0] == c0 && !strcasecmp(cat, CATEGORIES[i].cat)) break;
    if (i < n) {
        kind = CATEGORIES[i].kind;
        if (kind == -1) return 0;
        if (kind == -2) /* the 2021 schema records the step as an Operator (trap 9) */
            kind = name && !strncmp(name, "ProfilerStep#", 13) ? LSIM_EV_ANNOTATION : LSIM_EV_CPU_OP;
    } else if (name && (!strncmp(name, "cuda", 4) || !strncmp(name, "hip", 3) || !strncmp(name, "cu", 2)) &&
               strchr(name, ' ') == NULL && strchr(name, ':') == NULL) {
        kind = LSIM_EV_RUNTIME;
    } else {
        kind = LSIM_EV_CPU_OP;
    }
    *k = (lsim_ev_kind)kind;
    return 1;
}

/* What the reader learns once per distinct name: most events repeat a name
 * seen before (a kernel's runs to hundreds of bytes). The string table
 * hashes every byte of a name (FNV-1a), so a direct-mapped cache keyed by a
 * few of its bytes comes first, checked against the table's copy in full;
 * and per name id, whether it is a GEMM-like op (is_gemm_op) and the
 * collective its kernel name implies (lsim_coll_from_kernel_name). Pure
 * functions of the text: the events read exactly as without it. */
enum { MEMO_SLOTS = 4096 };
typedef struct name_memo {
    struct {
        uint32_t id1, len; /* id + 1, 0 empty */
    } slot[MEMO_SLOTS];
    struct name_info {
        uint8_t gemm;  /* 0 unknown, 1 no, 2 yes */
        uint8_t coll;  /* 0 unknown, else the kind + 1 */
        int8_t dtype;  /* its element size, -1 unknown */
    } *info;
    size_t ninfo;
} name_memo;

static uint32_t memo_hash(const char *s, size_t len)
{
    uint64_t a = 0, b = 0, c = 0;
    if (len >= 8) {
        memcpy(&a, s, 8);
        memcpy(&b, s + len - 8, 8);
        memcpy(&c, s + len / 2 - 4, 8);
    } else {
        memcpy(&a, s, len);
    }
    uint64_t h = (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full) ^ (c * 0x165667b19e3779f9ull) ^ len;
    return (uint32_t)(h >> 40) & (MEMO_SLOTS - 1);
}

static int intern_memo(lsim_trace *t, name_memo *m, const char *s, uint32_t *id)
{
    size_t len = strlen(s);
    if (!m || len > UINT32_MAX) return lsim_strtab_intern(t->strings, s, len, id);
    uint32_t h = memo_hash(s, len);
    if (m->slot[h].id1 && m->slot[h].len == len) {
        const char *got = lsim_strtab_get(t->strings, m->slot[h].id1 - 1);
        if (!memcmp(got, s, len)) {
            *id = m->slot[h].id1 - 1;
            return 0;
        }
    }
    int rc = lsim_strtab_intern(t->strings, s, len, id);
    if (!rc && *id < UINT32_MAX) {
        m->slot[h].id1 = *id + 1;
        m->slot[h].len = (uint32_t)len;
    }
    return rc;
}

/* The memo entry of name id, zeroed when new; NULL when out of memory. */
static struct name_info *name_info_of(name_memo *m, uint32_t id)
{
    if (id >= m->ninfo) {
        size_t n = m->ninfo ? m->ninfo : 256;
        while (n <= id) n *= 2;
        struct name_info *p = lsim_realloc(m->info, n * sizeof *p);
        if (!p) return NULL;
        memset(p + m->ninfo, 0, (n - m->ninfo) * sizeof *p);
        m->info = p;
        m->ninfo = n;
    }
    return &m->info[id];
}

static int is_gemm_op(const char *name);

static int is_gemm_memo(name_memo *m, uint32_t id, const char *name)
{
    struct name_info *ni = m ? name_info_of(m, id) : NULL;
    if (!ni) return is_gemm_op(name);
    if (!ni->gemm) ni->gemm = is_gemm_op(name) ? 2 : 1;
    return ni->gemm == 2;
}

static lsim_coll_kind kernel_coll_memo(name_memo *m, uint32_t id, const char *name, int32_t *dt)
{
    struct name_info *ni = m ? name_info_of(m, id) : NULL;
    if (!ni) return lsim_coll_from_kernel_name(name, dt);
    if (!ni->coll) {
        int32_t d;
        lsim_coll_kind k = lsim_coll_from_kernel_name(name, &d);
        ni->coll = (uint8_t)(k + 1);
        ni->dtype = (int8_t)d; /* -1 or an element size of 1..8 */
    }
    *dt = ni->dtype;
    return (lsim_coll_kind)(ni->coll - 1);
}

static lsim_sync_kind sync_kind_of(const char *s)
{
    if (!s) return LSIM_SYNC_NONE;
    if (!strcasecmp(s, "Stream Wait Event")) return LSIM_SYNC_STREAM_WAIT_EVENT;
    if (!strcasecmp(s, "Event Sync")) return LSIM_SYNC_EVENT;
    if (!strcasecmp(s, "Stream Sync")) return LSIM_SYNC_STREAM;
    if (!strcasecmp(s, "Context Sync")) return LSIM_SYNC_CONTEXT;
    return LSIM_SYNC_NONE;
}

/* Collective metadata from args (newer PyTorch on kernels and on
 * record_param_comms), or from the kernel name. */
static int attach_coll(lsim_trace *t, name_memo *m, lsim_event *e, ev_args *a, const char *name, int is_kernel)
{
    int32_t dt = -1;
    lsim_coll_kind kind = is_kernel ? kernel_coll_memo(m, e->name, name, &dt) : LSIM_COLL_NONE;
    const cJSON *cn = ARG(a, coll_name);
    int is_rpc = !is_kernel && name && strcmp(name, "record_param_comms") == 0;
    if (kind == LSIM_COLL_NONE && !is_rpc) return 0;
    int32_t idx;
    int rc = push_coll(t, &idx);
    if (rc) return rc;
    lsim_coll_info *c = &t->colls[idx];
    c->kind = (uint8_t)kind;
    c->dtype_bytes = dt;
    if (cJSON_IsString(cn)) {
        lsim_coll_kind k2 = coll_from_text(cn->valuestring);
        if (k2 != LSIM_COLL_NONE) c->kind = (uint8_t)k2;
        c->from_metadata = 1;
    }
    {
        c->in_nelems = value_int(ARG(a, in_nelems), -1);
        c->out_nelems = value_int(ARG(a, out_nelems), -1);
        c->group_size = (int32_t)value_int(ARG(a, group_size), -1);
        const cJSON *d = ARG(a, dtype);
        if (cJSON_IsString(d)) {
            int32_t s = dtype_size(d->valuestring);
            if (s > 0) c->dtype_bytes = s;
        }
        const cJSON *pg = ARG(a, pg_name);
        if (cJSON_IsString(pg) && (rc = intern(t, pg->valuestring, &c->pg_name))) return rc;
        const cJSON *pr = ARG(a, pg_ranks);
        if (cJSON_IsString(pr) && (rc = intern(t, pr->valuestring, &c->pg_ranks))) return rc;
        if (c->in_nelems < 0) {
            /* older record_param_comms: one tensor's dims in "Input Dims" */
            const cJSON *dims = ARG(a, input_dims);
            const cJSON *first = cJSON_IsArray(dims) ? dims->child : NULL;
            if (cJSON_IsArray(first) && first->child && cJSON_IsArray(first->child)) first = first->child;
            if (cJSON_IsArray(first) && first->child) {
                int64_t p = 1;
                for (const cJSON *x = first->child; x; x = x->next) {
                    if (!cJSON_IsNumber(x) || x->valuedouble < 0) {
                        p = -1;
                        break;
                    }
                    int64_t f = dbl_i64(x->valuedouble);
                    if (f != 0 && p > INT64_MAX / f) {
                        p = -1; /* product beyond int64: treat as unknown */
                        break;
                    }
                    p *= f;
                }
                c->in_nelems = p;
            }
        }
    }
    /* a hostile nelems must not overflow: an unknown size is -1, as when absent */
    if (c->in_nelems >= 0 && c->dtype_bytes > 0 && c->in_nelems <= INT64_MAX / c->dtype_bytes)
        c->bytes = c->in_nelems * c->dtype_bytes;
    e->coll = idx;
    return 0;
}

/* The root of a broadcast or reduce, which no kernel or record_param_comms
 * arg names: c10d's own op around them records its scalar arguments
 * (record_shapes) in "Concrete Inputs" -- broadcast_(tensors, process_group,
 * root_rank, root_tensor, asyncOp, timeout), reduce_(tensors, process_group,
 * reduce_op, root_rank, ...) -- as decimal strings; lumosim's own predicted
 * trace writes "root_rank". The op gets a collective record holding only
 * the kind and the root (the graph build hands the root to the kernels
 * launched inside it); anything else (no such input, not a rank) leaves the
 * root unknown, which the coupled replay counts (job.h). */
static int attach_root(lsim_trace *t, lsim_event *e, ev_args *a, const char *name)
{
    int bcast = !strcmp(name, "c10d::broadcast_"), reduce = !strcmp(name, "c10d::reduce_");
    if (!bcast && !reduce) return 0;
    int64_t root = value_int(ARG(a, root_rank), -1);
    const cJSON *concrete = root < 0 ? ARG(a, concrete) : NULL;
    if (root < 0 && cJSON_IsArray(concrete)) {
        const cJSON *x = cJSON_GetArrayItem(concrete, bcast ? 2 : 3);
        root = cJSON_IsString(x) ? value_int(x, -1) : -1;
    }
    if (root < 0 || root > INT32_MAX) return 0;
    int32_t idx;
    int rc = push_coll(t, &idx);
    if (rc) return rc;
    t->colls[idx].kind = (uint8_t)(bcast ? LSIM_COLL_BROADCAST : LSIM_COLL_REDUCE);
    t->colls[idx].root = (int32_t)root;
    e->coll = idx;
    return 0;
}

/* ProcessGroupNCCL's profiling title around a collective's launch
 * ("nccl:all_to_all", "nccl:_all_gather_base", "nccl:reduce_scatter", a
 * user_annotation inside record_param_comms): a record holding only the
 * kind. Older PyTorch (1.x) writes record_param_comms without "Collective
 * name", and older NCCL runs an all-to-all as ncclKernel_SendRecv kernels
 * with no args: the title is then the only place that says the kernels are
 * one all-to-all of the whole group and not pairs of unknown peers (the
 * graph build hands the kind to the record_param_comms around the launch,
 * src/build/cpu.c). */
static int attach_title(lsim_trace *t, lsim_event *e, const char *name)
{
    if (strncmp(name, "nccl:", 5) != 0) return 0;
    lsim_coll_kind k = coll_from_text(name + 5);
    if (k == LSIM_COLL_NONE) return 0;
    int32_t idx;
    int rc = push_coll(t, &idx);
    if (rc) return rc;
    t->colls[idx].kind = (uint8_t)k;
    e->coll = idx;
    return 0;
}

/* GEMM-like CPU ops whose shapes calibration uses (calibrate.h), and the
 * memory-bound ops whose shapes give the bytes it fits mem_eff from:
 * element-wise aten ops, normalizations and softmaxes, and Megatron's fused
 * ones (their output has the shape of their first input). */
static int is_gemm_op(const char *name)
{
    static const char *const MEM[] = {"FusedLayerNormAffineFunction", "MixedFusedLayerNormAffineFunction",
                                      "ScaledUpperTriangMaskedSoftmax", "ScaledMaskedSoftmax", "ScaledSoftmax",
                                      "aten::layer_norm", "aten::native_layer_norm", "aten::softmax", "aten::_softmax",
                                      "aten::add", "aten::add_", "aten::mul", "aten::mul_", "aten::div", "aten::div_",
                                      "aten::sub", "aten::exp", "aten::gelu", "aten::copy_", "aten::native_dropout"};
    for (size_t i = 0; i < sizeof MEM / sizeof *MEM; i++)
        if (!strcmp(name, MEM[i])) return 1;
    if (!strcmp(name, LSIM_ACCUMULATE_GRAD)) return 1; /* a gradient's size (lsim_gemm_op) */
    if (strncmp(name, "aten::", 6) != 0) return 0;
    const char *n = name + 6;
    return !strcmp(n, "mm") || !strcmp(n, "addmm") || !strcmp(n, "bmm") || !strcmp(n, "baddbmm") ||
           !strcmp(n, "matmul") || !strcmp(n, "linear");
}

/* Element size from a profiler "Input type" string ("c10::Half", "float"). */
static int8_t input_type_size(const char *s)
{
    if (!strncmp(s, "c10::", 5)) s += 5;
    if (!strcasecmp(s, "Half") || !strcasecmp(s, "BFloat16")) return 2;
    if (!strcasecmp(s, "float")) return 4;
    if (!strcasecmp(s, "double")) return 8;
    if (!strncasecmp(s, "Float8", 6)) return 1;
    return -1;
}

/* Record a GEMM-like op's input shapes in the side table (lsim_gemm_op). */
static int push_gemm(lsim_trace *t, ev_args *a, uint32_t name)
{
    if (LSIM_GROW(t->gemms, &t->capgemm, t->ngemm + 1)) return LSIM_ENOMEM;
    lsim_gemm_op *g = &t->gemms[t->ngemm++];
    memset(g, 0, sizeof *g);
    g->ev = (uint64_t)(t->nev - 1);
    g->name = name;
    g->elem_bytes = -1;
    const cJSON *dims = ARG(a, input_dims), *types = ARG(a, input_type);
    const cJSON *d = cJSON_IsArray(dims) ? dims->child : NULL;
    for (int i = 0; i < LSIM_GEMM_MAX_TENSORS; i++, d = d ? d->next : NULL) {
        g->ndims[i] = -1;
        if (!cJSON_IsArray(d)) continue;
        int k = 0, ok = 1;
        for (const cJSON *x = d->child; x && ok; x = x->next) {
            if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0) || k == LSIM_GEMM_MAX_DIMS) ok = 0;
            else g->dims[i][k++] = dbl_i64(x->valuedouble);
        }
        if (ok) g->ndims[i] = (int8_t)k;
    }
    const cJSON *ty = cJSON_IsArray(types) ? types->child : NULL;
    if (cJSON_IsString(ty)) g->elem_bytes = input_type_size(ty->valuestring);
    return 0;
}

/* A cpu_op's autograd links in their side table (lsim_autograd_op): only
 * ops that carry a numeric Sequence number, so the cost is 24 bytes per such
 * op and none for any other event. */
static int push_autograd(lsim_trace *t, ev_args *a)
{
    const cJSON *seq = ARG(a, seq_nr), *fwd = ARG(a, fwd_tid);
    if (!cJSON_IsNumber(seq) || !(seq->valuedouble >= 0)) return 0;
    if (LSIM_GROW(t->autograd, &t->capautograd, t->nautograd + 1)) return LSIM_ENOMEM;
    lsim_autograd_op *o = &t->autograd[t->nautograd++];
    o->ev = (uint64_t)(t->nev - 1);
    o->seq = value_int(seq, -1);
    o->fwd_tid = cJSON_IsNumber(fwd) && fwd->valuedouble >= 0.0 ? value_int(fwd, -1) : -1;
    return 0;
}

/* x * y * z of a [x, y, z] array of positive numbers (missing dimensions
 * count 1), 0 when it is not one or the product passes 2^40. */
static uint64_t dim3_product(const cJSON *v)
{
    if (!cJSON_IsArray(v) || !v->child) return 0;
    uint64_t p = 1;
    int n = 0;
    for (const cJSON *c = v->child; c; c = c->next) {
        if (!cJSON_IsNumber(c) || !(c->valuedouble >= 1.0) || c->valuedouble > 1e12 || ++n > 3) return 0;
        p *= (uint64_t)c->valuedouble;
        if (p > ((uint64_t)1 << 40)) return 0;
    }
    return p;
}

/* A kernel's launch configuration in its side table (lsim_kernel_cfg):
 * only kernels with a valid grid and block; anything else out of range
 * reads as absent, since these only refine the SM-occupancy estimate. */
static int push_kcfg(lsim_trace *t, ev_args *a)
{
    uint64_t blocks = dim3_product(ARG(a, grid)), threads = dim3_product(ARG(a, block));
    if (!blocks || !threads || threads > 65536) return 0;
    if (LSIM_GROW(t->kcfg, &t->capkcfg, t->nkcfg + 1)) return LSIM_ENOMEM;
    lsim_kernel_cfg *k = &t->kcfg[t->nkcfg++];
    memset(k, 0, sizeof *k);
    k->ev = (uint64_t)(t->nev - 1);
    k->blocks = blocks;
    k->threads = (uint32_t)threads;
    int64_t r = value_int(ARG(a, regs), 0), m = value_int(ARG(a, smem), 0), o = value_int(ARG(a, occ), 0);
    const cJSON *bps = ARG(a, bps);
    k->regs = r > 0 && r <= 65535 ? (uint16_t)r : 0;
    k->smem = m > 0 && m <= INT32_MAX ? (uint32_t)m : 0;
    k->occ_pct = o > 0 && o <= 100 ? (uint8_t)o : 0;
    if (cJSON_IsNumber(bps) && bps->valuedouble > 0) {
        double s = (double)blocks / bps->valuedouble + 0.5;
        k->sms_hint = s >= 1 && s <= 65535 ? (uint16_t)s : 0;
    }
    return 0;
}

/* Does txt[0..len) contain the NUL-terminated needle? */
static int has_text(const char *txt, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (txt[i] == needle[0] && !memcmp(txt + i, needle, n)) return 1;
    return 0;
}

/* A "[memory]" instant event (profile_memory=True): the allocator's totals
 * or one allocation's signed size on one device (trace.h,
 * lsim_trace_memdev). CPU events (Device Type 0) and device ids past the
 * table are skipped; so is a value beyond 2^50 bytes (a petabyte: no GPU
 * has it), which keeps the running sum far from overflow on hostile input. */
static int handle_memory(lsim_trace *t, reader *r, const char *txt, size_t len)
{
    int rc = lsim_json_arena_begin();
    if (rc) return lsim_err_set(r->err, rc, "%s: out of memory", r->label);
    cJSON *o = cJSON_ParseWithLength(txt, len);
    const cJSON *a = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "args") : NULL;
    const cJSON *nm = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "name") : NULL;
    const int64_t lim = (int64_t)1 << 50;
    if (cJSON_IsObject(a) && cJSON_IsString(nm) && !strcmp(nm->valuestring, "[memory]")) {
        int64_t type = item_int(a, "Device Type", 0), dev = item_int(a, "Device Id", -1);
        const cJSON *ta = cJSON_GetObjectItemCaseSensitive(a, "Total Allocated");
        const cJSON *tr = cJSON_GetObjectItemCaseSensitive(a, "Total Reserved");
        const cJSON *by = cJSON_GetObjectItemCaseSensitive(a, "Bytes");
        if (type != 0 && dev >= 0 && dev < LSIM_TRACE_MEM_DEVICES) {
            lsim_trace_memdev *m = &t->mem[dev];
            m->events++;
            if (cJSON_IsNumber(ta) && ta->valuedouble >= 0 && ta->valuedouble <= (double)lim) {
                m->with_totals++;
                int64_t v = (int64_t)ta->valuedouble;
                if (v > m->max_allocated) m->max_allocated = v;
            }
            if (cJSON_IsNumber(tr) && tr->valuedouble >= 0 && tr->valuedouble <= (double)lim) {
                int64_t v = (int64_t)tr->valuedouble;
                if (v > m->max_reserved) m->max_reserved = v;
            }
            if (cJSON_IsNumber(by) && by->valuedouble >= -(double)lim && by->valuedouble <= (double)lim) {
                int64_t v = (int64_t)by->valuedouble;
                /* the sum stays within events x 2^50: far inside int64 for
                 * any file that fits on a disk, but saturate anyway */
                if (!((v > 0 && m->cum > INT64_MAX - v) || (v < 0 && m->cum < INT64_MIN - v))) m->cum += v;
                if (m->cum > m->cum_max) m->cum_max = m->cum;
                if (m->cum < m->cum_min) m->cum_min = m->cum;
            }
        }
    }
    if (lsim_json_arena_end()) cJSON_Delete(o); /* spilled: o's nodes outside the arena */
    return 0;
}

/* One trace event, txt[0, len) in the reader's buffer (a plain one is read
 * in place, which writes over the closing quotes of the strings it uses:
 * see plain_item). */
static int handle_event(kctx *k, reader *r, char *txt, size_t len, const value_keys *vk)
{
    lsim_trace *t = k->t;
    t->events_seen++;
    /* Only complete events are graph material; cheap check on ph first. */
    if (vk->ph < 0) return 0;
    const char *ph = txt + vk->ph;
    if (ph[0] != '"') return 0;
    if (ph[1] == 's' || ph[1] == 'f' || ph[1] == 't') {
        t->flow_events++;
        return 0;
    }
    if ((ph[1] == 'i' || ph[1] == 'I') && ph[2] == '"') return has_text(txt, len, "\"[memory]\"") ? handle_memory(t, r, txt, len) : 0;
    if (!(ph[1] == 'X' && ph[2] == '"')) return 0;

    int rc = lsim_json_arena_begin();
    if (rc) return lsim_err_set(r->err, rc, "%s: out of memory", r->label);
    ev_args a;
    cJSON *o = NULL;
    if (vk->scan) {
        index_plain(&a, txt, vk->scan);
    } else {
        o = cJSON_ParseWithLength(txt, len);
        if (!o || !cJSON_IsObject(o)) {
            cJSON_Delete(o);
            (void)lsim_json_arena_end();
            return lsim_err_set(r->err, LSIM_EFORMAT, "%s: malformed trace event #%llu", r->label,
                                (unsigned long long)t->events_seen);
        }
        index_tree(&a, o);
    }
    const cJSON *jcat = ARG(&a, cat), *jname = ARG(&a, name);
    const char *cat = cJSON_IsString(jcat) ? jcat->valuestring : NULL;
    const char *name = cJSON_IsString(jname) ? jname->valuestring : "";
    lsim_ev_kind kind;
    if (!classify(cat, name, &kind)) goto done;
    if (vk->ts < 0) {
        rc = lsim_err_set(r->err, LSIM_ETRACE, "%s: event #%llu (\"%.60s\") has no ts", r->label,
                          (unsigned long long)t->events_seen, name);
        goto done;
    }
    lsim_ns ts = 0, dur = 0;
    {
        const char *p = txt + vk->ts;
        size_t n = 0;
        int quoted = *p == '"';
        if (quoted) p++;
        while (p + n < txt + len && (isdigit((unsigned char)p[n]) || p[n] == '.' || p[n] == '-' ||
                                     p[n] == '+' || p[n] == 'e' || p[n] == 'E'))
            n++;
        if (lsim_us_text_to_ns(p, n, &ts)) {
            rc = lsim_err_set(r->err, LSIM_ETRACE, "%s: event #%llu (\"%.60s\") has a bad ts", r->label,
                              (unsigned long long)t->events_seen, name);
            goto done;
        }
        for (size_t i = 0; i < n; i++)
            if (p[i] == '.') t->ts_float = 1;
        t->ts_resolution_ns = gcd_ns(t->ts_resolution_ns, ts);
        if (ts > ((lsim_ns)1 << 62) || ts < -((lsim_ns)1 << 62)) {
            rc = lsim_err_set(r->err, LSIM_ETRACE, "%s: event #%llu (\"%.60s\") has a timestamp out of range", r->label,
                              (unsigned long long)t->events_seen, name);
            goto done;
        }
    }
    if (vk->dur >= 0) {
        const char *p = txt + vk->dur;
        size_t n = 0;
        if (*p == '"') p++;
        while (p + n < txt + len && (isdigit((unsigned char)p[n]) || p[n] == '.' || p[n] == '-' ||
                                     p[n] == '+' || p[n] == 'e' || p[n] == 'E'))
            n++;
        if (lsim_us_text_to_ns(p, n, &dur)) {
            rc = lsim_err_set(r->err, LSIM_ETRACE, "%s: event #%llu (\"%.60s\") has a bad dur", r->label,
                              (unsigned long long)t->events_seen, name);
            goto done;
        }
        t->ts_resolution_ns = gcd_ns(t->ts_resolution_ns, dur);
        if (dur > LSIM_DUR_MAX) { /* graph.h: 1e13 ns, so that ts + dur cannot overflow */
            rc = lsim_err_set(r->err, LSIM_ETRACE,
                              "%s: event #%llu (\"%.60s\") has a duration out of range (%lld ns, more than 1e13 ns)",
                              r->label, (unsigned long long)t->events_seen, name, (long long)dur);
            goto done;
        }
        if (dur < 0) {
            rc = lsim_err_set(r->err, LSIM_ETRACE, "%s: event #%llu (\"%.60s\") has a negative duration (%lld ns)",
                              r->label, (unsigned long long)t->events_seen, name, (long long)dur);
            goto done;
        }
    }
    lsim_event *e;
    if ((rc = push_event(t, &e))) {
        lsim_err_set(r->err, rc, "%s: out of memory", r->label);
        goto done;
    }
    memset(e, 0, sizeof *e);
    e->ts = ts;
    e->dur = dur;
    e->kind = (uint8_t)kind;
    e->coll = -1;
    e->sync = -1;
    lsim_row row = {0, 0, -1, -1, -1};
    if ((rc = id_field(t, ARG(&a, pid), &row.pid)) || (rc = id_field(t, ARG(&a, tid), &row.tid)) ||
        (rc = intern_memo(t, k->memo, name, &e->name)) || (rc = intern_memo(t, k->memo, cat ? cat : "", &e->cat))) {
        lsim_err_set(r->err, rc, "%s: out of memory", r->label);
        goto done;
    }
    e->corr = value_int(ARG(&a, correlation), -1);
    {
        int64_t rk = value_int(ARG(&a, rank), -1);
        row.rank = rk >= 0 && rk <= INT32_MAX ? (int32_t)rk : -1;
    }
    if (kind == LSIM_EV_KERNEL || kind == LSIM_EV_MEMCPY || kind == LSIM_EV_MEMSET || kind == LSIM_EV_SYNC) {
        /* GPU rows: pid = device, tid = stream when args lack them */
        row.device = (int32_t)value_int(ARG(&a, device), -1);
        row.stream = value_int(ARG(&a, stream), -1);
        if (row.device < 0) row.device = (int32_t)row.pid;
        if (row.stream < 0 && (kind != LSIM_EV_SYNC || row.tid >= 0)) row.stream = row.tid;
    }
    if (kind == LSIM_EV_SYNC) {
        const cJSON *sk = ARG(&a, sync_kind);
        e->sync_kind = (uint8_t)sync_kind_of(cJSON_IsString(sk) ? sk->valuestring : name);
        if ((rc = push_sync(t, value_int(ARG(&a, wait_stream), -1), value_int(ARG(&a, wait_rec), -1), &e->sync))) {
            lsim_err_set(r->err, rc, "%s: out of memory", r->label);
            goto done;
        }
    }
    if ((rc = intern_row(t, &k->rows, &row, &e->row))) {
        lsim_err_set(r->err, rc, "%s: out of memory", r->label);
        goto done;
    }
    if (kind == LSIM_EV_MEMCPY) {
        e->pageable = strstr(name, "Pageable") != NULL;
        e->dtoh = strstr(name, "DtoH") != NULL || strstr(name, "Device -> Pageable") != NULL ||
                  strstr(name, "Device -> Pinned") != NULL;
    }
    if (kind == LSIM_EV_KERNEL && ARG(&a, grid) && (rc = push_kcfg(t, &a))) {
        lsim_err_set(r->err, rc, "%s: out of memory", r->label);
        goto done;
    }
    if (kind == LSIM_EV_KERNEL || (kind == LSIM_EV_CPU_OP && name[0] == 'r')) {
        if ((rc = attach_coll(t, k->memo, e, &a, name, kind == LSIM_EV_KERNEL))) {
            lsim_err_set(r->err, rc, "%s: out of memory", r->label);
            goto done;
        }
    }
    if (kind == LSIM_EV_ANNOTATION && name[0] == 'n' && (rc = attach_title(t, e, name))) {
        lsim_err_set(r->err, rc, "%s: out of memory", r->label);
        goto done;
    }
    if (kind == LSIM_EV_CPU_OP && name[0] == 'c' && (rc = attach_root(t, e, &a, name))) {
        lsim_err_set(r->err, rc, "%s: out of memory", r->label);
        goto done;
    }
    if (kind == LSIM_EV_CPU_OP && (name[0] == 'a' || name[0] == 'F' || name[0] == 'M' || name[0] == 'S' || name[0] == 't') &&
        is_gemm_memo(k->memo, e->name, name) && (rc = push_gemm(t, &a, e->name))) {
        lsim_err_set(r->err, rc, "%s: out of memory", r->label);
        goto done;
    }
    if (kind == LSIM_EV_CPU_OP && ARG(&a, seq_nr) && (rc = push_autograd(t, &a))) {
        lsim_err_set(r->err, rc, "%s: out of memory", r->label);
        goto done;
    }
    rc = 0;
    if (a.bad) rc = lsim_err_set(r->err, LSIM_ENOMEM, "%s: out of memory", r->label);
done:
    if (lsim_json_arena_end()) { /* spilled: the parsed values' nodes outside the arena */
        cJSON_Delete(o);
        for (int i = 0; i < a.nroots; i++) cJSON_Delete(a.roots[i]);
    }
    return rc;
}

static int parse_distributed_info(lsim_trace *t, reader *r, const char *txt, size_t len)
{
    cJSON *o = cJSON_ParseWithLength(txt, len);
    int rc = 0;
    if (!o) return lsim_err_set(r->err, LSIM_EFORMAT, "%s: malformed distributedInfo", r->label);
    if (!cJSON_IsObject(o)) goto cleanup;
    {
        /* A rank outside the world is a broken trace, not a single-GPU one:
         * taken as is, it would turn off the coupling of the whole job
         * (run.c) without a word. -1 (or absent) means unknown. */
        int64_t rank = item_int(o, "rank", -1), world = item_int(o, "world_size", -1);
        if (world != -1 && (world < 1 || world > INT32_MAX)) {
            rc = lsim_err_set(r->err, LSIM_ETRACE, "%s: distributedInfo world_size %lld is not a number of ranks",
                              r->label, (long long)world);
            goto cleanup;
        }
        if (rank != -1 && (rank < 0 || rank > INT32_MAX || (world >= 1 && rank >= world))) {
            if (world >= 1)
                rc = lsim_err_set(r->err, LSIM_ETRACE, "%s: distributedInfo rank %lld is outside 0..%lld (world_size %lld)",
                                  r->label, (long long)rank, (long long)world - 1, (long long)world);
            else
                rc = lsim_err_set(r->err, LSIM_ETRACE, "%s: distributedInfo rank %lld is not a rank number", r->label,
                                  (long long)rank);
            goto cleanup;
        }
        t->rank = (int32_t)rank;
        t->world_size = (int32_t)world;
    }
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(o, "backend");
    if (cJSON_IsString(be) && (rc = intern(t, be->valuestring, &t->backend))) goto cleanup;
    const cJSON *pgc = cJSON_GetObjectItemCaseSensitive(o, "pg_config");
    if (cJSON_IsArray(pgc)) {
        int n = cJSON_GetArraySize(pgc);
        t->pgs = lsim_calloc(n > 0 ? (size_t)n : 1, sizeof *t->pgs);
        if (!t->pgs) {
            rc = LSIM_ENOMEM;
            goto cleanup;
        }
        for (const cJSON *g = pgc->child; g; g = g->next) {
            if (!cJSON_IsObject(g)) continue;
            lsim_pg *pg = &t->pgs[t->npg++];
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(g, "pg_name");
            const cJSON *ds = cJSON_GetObjectItemCaseSensitive(g, "pg_desc");
            char numbuf[32];
            const char *nms = cJSON_IsString(nm) ? nm->valuestring : NULL;
            if (!nms && cJSON_IsNumber(nm)) {
                snprintf(numbuf, sizeof numbuf, "%lld", (long long)dbl_i64(nm->valuedouble));
                nms = numbuf;
            }
            if ((rc = intern(t, nms ? nms : "", &pg->name)) ||
                (rc = intern(t, cJSON_IsString(ds) ? ds->valuestring : "", &pg->desc)))
                goto cleanup;
            pg->size = (int32_t)item_int(g, "pg_size", -1);
            const cJSON *rk = cJSON_GetObjectItemCaseSensitive(g, "ranks");
            if (cJSON_IsArray(rk)) {
                int m = cJSON_GetArraySize(rk);
                pg->ranks = lsim_malloc((m > 0 ? (size_t)m : 1) * sizeof *pg->ranks);
                if (!pg->ranks) {
                    rc = LSIM_ENOMEM;
                    goto cleanup;
                }
                for (const cJSON *x = rk->child; x; x = x->next)
                    if (cJSON_IsNumber(x)) pg->ranks[pg->nranks++] = (int32_t)dbl_i64(x->valuedouble);
            }
        }
    }
cleanup:
    cJSON_Delete(o);
    if (rc == LSIM_ENOMEM) lsim_err_set(r->err, rc, "%s: out of memory", r->label); /* others said why */
    return rc;
}

/* deviceProperties: the first device's name (the GPU model, for
 * calibration's default spec) and SM limits (the SM-occupancy resource of
 * the graph build). Anything unexpected is ignored. */
static int parse_device_props(lsim_trace *t, reader *r, const char *txt, size_t len)
{
    cJSON *o = cJSON_ParseWithLength(txt, len);
    int rc = 0;
    if (!o) return 0;
    const cJSON *d0 = cJSON_IsArray(o) ? o->child : NULL;
    const cJSON *nm = cJSON_IsObject(d0) ? cJSON_GetObjectItemCaseSensitive(d0, "name") : NULL;
    if (cJSON_IsString(nm) && (rc = intern(t, nm->valuestring, &t->device_name)))
        lsim_err_set(r->err, rc, "%s: out of memory", r->label);
    if (cJSON_IsObject(d0)) {
        lsim_trace_sm *sm = &t->sm;
        int64_t v[7] = {item_int(d0, "numSms", 0), item_int(d0, "maxThreadsPerMultiprocessor", 0),
                        item_int(d0, "regsPerMultiprocessor", 0), item_int(d0, "sharedMemPerMultiprocessor", 0),
                        item_int(d0, "warpSize", 0), item_int(d0, "computeMajor", 0), item_int(d0, "computeMinor", 0)};
        if (!v[3]) v[3] = item_int(d0, "maxSharedMemoryPerMultiProcessor", 0);
        int32_t *f[7] = {&sm->sms, &sm->threads_per_sm, &sm->regs_per_sm, &sm->smem_per_sm, &sm->warp, &sm->cc_major, &sm->cc_minor};
        for (int i = 0; i < 7; i++) *f[i] = v[i] > 0 && v[i] <= INT32_MAX ? (int32_t)v[i] : 0;
    }
    /* each device's memory, for the OOM check of a traced job */
    for (const cJSON *d = d0; d; d = d->next) {
        if (!cJSON_IsObject(d)) continue;
        int64_t id = item_int(d, "id", -1), mem = item_int(d, "totalGlobalMem", 0);
        if (id >= 0 && id < LSIM_TRACE_MEM_DEVICES && mem > 0 && mem <= ((int64_t)1 << 50)) t->dev_capacity[id] = mem;
    }
    cJSON_Delete(o);
    return rc;
}


/* The Kineto trace's callbacks: a plain event's extent by the fast scan (the
 * shared walk reads any other), each complete event handled, other
 * elements counted; distributedInfo and deviceProperties parsed. */
static int kineto_extent(void *ctx, reader *r, size_t *len, value_keys *vk)
{
    kctx *k = ctx;
    return lsim_json_scan_fields(r, &k_event_spec, len, vk, &k->sc);
}

static int kineto_element(void *ctx, reader *r, size_t index, size_t len, const value_keys *vk)
{
    kctx *k = ctx;
    (void)index;
    if (!vk) {
        k->t->events_seen++;
        return 0;
    }
    return handle_event(k, r, r->buf + r->pos, len, vk);
}

static int kineto_member(void *ctx, reader *r, const char *key, size_t len)
{
    kctx *k = ctx;
    if (!strcmp(key, "distributedInfo")) return parse_distributed_info(k->t, r, r->buf + r->pos, len);
    if (!strcmp(key, "deviceProperties")) return parse_device_props(k->t, r, r->buf + r->pos, len);
    return 0;
}

static int read_top(kctx *k, reader *r, int *have_events)
{
    lsim_json_walk_cb w = {"traceEvents", 1, 1, 1, kineto_extent, kineto_element, kineto_member, k};
    return lsim_json_walk_top(&w, r, have_events);
}

static int read_any(const char *label, gzFile gz, const char *mem, size_t memlen, lsim_progress_fn progress,
                    void *progress_ctx, lsim_trace **out, lsim_err *err)
{
    int rc = 0;
    lsim_trace *t = NULL;
    reader r = {0};
    *out = NULL;
    r.label = label;
    r.gz = gz;
    r.mem = mem;
    r.memlen = memlen;
    r.err = err;
    r.progress = progress;
    r.progress_ctx = progress_ctx;
    r.next_progress = (uint64_t)16 << 20;
    r.eof = !gz && memlen == 0;
    r.cap = (size_t)1 << 20;
    r.buf = lsim_malloc(r.cap + 1);
    kctx k = {0};
    k.memo = lsim_calloc(1, sizeof *k.memo);
    t = lsim_calloc(1, sizeof *t);
    if (!r.buf || !k.memo || !t || !(t->strings = lsim_strtab_new()) || !(t->path = lsim_strdup(label))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", label);
        goto cleanup;
    }
    t->rank = t->world_size = -1;
    t->backend = UINT32_MAX;
    t->device_name = UINT32_MAX;
    t->ts_resolution_ns = 1000; /* lowered by every ts/dur with finer digits */
    int have_events = 0;
    k.t = t;
    if ((rc = read_top(&k, &r, &have_events))) goto cleanup;
    t->bytes_read = r.consumed + r.end;
    if (!have_events) {
        rc = lsim_err_set(err, LSIM_ETRACE, "%s: no traceEvents array: not a Kineto/Chrome trace", label);
        goto cleanup;
    }
    if (t->nev == 0) {
        rc = lsim_err_set(err, LSIM_ETRACE, "%s: traceEvents has no complete (ph \"X\") events", label);
        goto cleanup;
    }
    size_t ngpu = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].kind == LSIM_EV_KERNEL || t->ev[i].kind == LSIM_EV_MEMCPY || t->ev[i].kind == LSIM_EV_MEMSET)
            ngpu++;
    if (ngpu == 0) {
        rc = lsim_err_set(err, LSIM_ETRACE, "%s: no GPU activity (kernels, memcpy, memset): a CPU-only trace cannot be replayed",
                          label);
        goto cleanup;
    }
    *out = t;
    t = NULL;
cleanup:
    free(r.buf);
    if (k.memo) free(k.memo->info);
    free(k.memo);
    free(k.rows.slots);
    lsim_trace_free(t);
    return rc;
}

int lsim_trace_read(const char *path, lsim_trace **out, lsim_err *err)
{
    return lsim_trace_read_ex(path, NULL, NULL, out, err);
}

int lsim_trace_read_ex(const char *path, lsim_progress_fn progress, void *ctx, lsim_trace **out, lsim_err *err)
{
    *out = NULL;
    gzFile gz = NULL;
    int rc = lsim_gz_open(path, 1u << 18, &gz, err);
    if (rc) return rc;
    rc = read_any(path, gz, NULL, 0, progress, ctx, out, err);
    int zc = lsim_gz_close(gz, path, rc, err);
    if (zc != rc) {
        lsim_trace_free(*out);
        *out = NULL;
        rc = zc;
    }
    return rc;
}

int lsim_trace_read_mem(const char *label, const char *buf, size_t len, lsim_trace **out, lsim_err *err)
{
    return read_any(label, NULL, buf, len, NULL, NULL, out, err);
}
