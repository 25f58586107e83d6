/* Predicted trace: Chrome trace-event JSON of a simulated execution
 * (include/lumosim/chrome.h; the layout is documented in docs/trace-out.md).
 *
 * The document is written as it is produced, through a 64 KiB buffer of our
 * own flushed with fwrite (plain) or gzwrite (PATH ends in ".gz"), into
 * a temporary beside PATH (src/write/output.c), renamed to PATH only once it is complete and
 * closed. No JSON tree is built: strings are escaped here, and times are
 * printed with integer arithmetic (microseconds with exactly three decimals),
 * so lsim_trace_read gives back every nanosecond.
 *
 * File order matters in one place: Perfetto sorts events by timestamp and
 * keeps file order among equal timestamps, and binds a flow event to the
 * slice open on its track when the flow event is processed. So every flow
 * event is written right after the X event of the slice it belongs to: an
 * "f" at its target's start then finds the target already open, and an "s" at
 * its source's end is seen before any slice that starts at that instant. */
#include "lumosim/text.h"
#include "lumosim/alloc.h"
#include "lumosim/chrome.h"
#include "lumosim/metrics.h"
#include "lumosim/output.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>


/* Output pids: rank index i owns [i * PID_STRIDE, (i + 1) * PID_STRIDE). */
#define PID_STRIDE 1000000
#define GPU_PID_LOCAL 999000 /* + device */
#define GPU_PID_SLOTS 999    /* devices 0..998 map directly */
#define CP_PID_LOCAL 999999  /* the rank's critical-path process */

#define WBUF (1u << 16)

typedef struct writer {
    FILE *f;
    gzFile gz;
    int failed;          /* 1 after the first failed write */
    char why[160];       /* what failed (strerror or zlib's message) */
    size_t len;
    uint64_t nevents;    /* events written so far (for separators) */
    int64_t rank_tag;    /* a document of several ranks: the rank being written,
                            in every op's and node's args (-1: one rank) */
    char buf[WBUF];
} writer;

static void fail_errno(writer *w, int e)
{
    if (w->failed) return;
    w->failed = 1;
    snprintf(w->why, sizeof w->why, "%s", strerror(e ? e : EIO));
}

static void fail_gz(writer *w)
{
    if (w->failed) return;
    int errnum = 0;
    int e = errno;
    const char *m = w->gz ? gzerror(w->gz, &errnum) : NULL;
    if (errnum == Z_ERRNO || !m || !*m) fail_errno(w, e);
    else {
        w->failed = 1;
        snprintf(w->why, sizeof w->why, "%s", m);
    }
}

static void flush_buf(writer *w)
{
    if (w->failed) {
        w->len = 0;
        return;
    }
    if (!w->len) return;
    errno = 0;
    if (w->gz) {
        int n = gzwrite(w->gz, w->buf, (unsigned)w->len);
        if (n <= 0 || (size_t)n != w->len) fail_gz(w);
    } else if (fwrite(w->buf, 1, w->len, w->f) != w->len) {
        fail_errno(w, errno);
    }
    w->len = 0;
}

static void put(writer *w, const char *s, size_t n)
{
    if (n > WBUF - w->len) {
        flush_buf(w);
        if (n > WBUF) { /* longer than the buffer: in pieces */
            while (n > WBUF) {
                memcpy(w->buf, s, WBUF);
                w->len = WBUF;
                flush_buf(w);
                s += WBUF;
                n -= WBUF;
            }
        }
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void puts_(writer *w, const char *s) { put(w, s, strlen(s)); }

static void putch(writer *w, char c)
{
    if (w->len == WBUF) flush_buf(w);
    w->buf[w->len++] = c;
}

static void put_u64(writer *w, uint64_t v)
{
    char t[24];
    int i = (int)sizeof t;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(w, t + i, sizeof t - (size_t)i);
}

static void put_i64(writer *w, int64_t v)
{
    if (v < 0) {
        putch(w, '-');
        put_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(w, (uint64_t)v);
    }
}

/* Nanoseconds as microseconds with exactly three decimals ("-0.001", "12.340"). */
static void put_us(writer *w, lsim_ns ns)
{
    uint64_t a;
    if (ns < 0) {
        putch(w, '-');
        a = (uint64_t)0 - (uint64_t)ns;
    } else {
        a = (uint64_t)ns;
    }
    put_u64(w, a / 1000);
    uint64_t r = a % 1000;
    char t[4] = {'.', (char)('0' + r / 100), (char)('0' + r / 10 % 10), (char)('0' + r % 10)};
    put(w, t, 4);
}

static void put_dbl(writer *w, double d)
{
    char t[40];
    if (!isfinite(d)) d = 0;
    int k = snprintf(t, sizeof t, "%.6g", d);
    put(w, t, (size_t)k);
}

static void put_sink(void *w, const char *s, size_t n) { put((writer *)w, s, n); }

/* A JSON string, escaped by the one rule of text.h. */
static void put_str(writer *w, const char *str) { lsim_text_json_to(put_sink, w, str); }

/* Starts an event object: {"ph":"X","cat":...,"name":...,"pid":..,"tid":.. */
/* A document of several ranks tags every op and node with its rank
 * (args.rank, first), the merged multi-rank form the reader splits into
 * one graph per rank (KINETO-NOTES trap 10): a predicted job replays as
 * the job. */
static void put_rank_tag(writer *w)
{
    if (w->rank_tag < 0) return;
    puts_(w, "\"rank\":");
    put_i64(w, w->rank_tag);
    putch(w, ',');
}

static void ev_open(writer *w, const char *ph, const char *cat, const char *name, int64_t pid, int64_t tid)
{
    puts_(w, w->nevents++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
    puts_(w, ph);
    puts_(w, "\",");
    if (cat) {
        puts_(w, "\"cat\":");
        put_str(w, cat);
        putch(w, ',');
    }
    puts_(w, "\"name\":");
    put_str(w, name);
    puts_(w, ",\"pid\":");
    put_i64(w, pid);
    puts_(w, ",\"tid\":");
    put_i64(w, tid);
}

static void meta(writer *w, const char *what, int64_t pid, int64_t tid, const char *name, int64_t sort_index)
{
    ev_open(w, "M", NULL, what, pid, tid);
    puts_(w, ",\"args\":{");
    if (name) {
        puts_(w, "\"name\":");
        put_str(w, name);
    } else {
        puts_(w, "\"sort_index\":");
        put_i64(w, sort_index);
    }
    puts_(w, "}}");
}

/* Chrome/Perfetto read tids as unsigned 32-bit (others become 0 there):
 * a negative 32-bit id (a wrapped thread id) is written as its unsigned
 * value; anything else outside 32 bits is folded into them. */
static int64_t tid_out(int64_t t)
{
    if (t >= 0 && t <= (int64_t)UINT32_MAX) return t;
    if (t >= INT32_MIN && t < 0) return t + ((int64_t)1 << 32);
    return (int64_t)((uint64_t)t % 4294967291u);
}

static const char *kind_cat(unsigned k)
{
    switch (k) {
    case LSIM_N_CPU: return "cpu_op";
    case LSIM_N_RUNTIME: return "cuda_runtime";
    case LSIM_N_KERNEL: return "kernel";
    case LSIM_N_MEMCPY: return "gpu_memcpy";
    case LSIM_N_MEMSET: return "gpu_memset";
    default: return "cpu_op";
    }
}

static const char *str_of(const lsim_graph *g, uint32_t id)
{
    const char *s = g->strings ? lsim_strtab_get(g->strings, id) : NULL;
    return s ? s : "";
}

/* One rank's output processes. */
typedef struct rank_map {
    int64_t *proc_pid;  /* output pid per processor */
    int64_t gpu_pid;    /* process carrying the counter track (-1: none) */
    int64_t cp_pid;
    /* flows whose source is a node, CSR over source nodes; entries are
     * target * 2 + (1 for an end-edge) */
    uint64_t *src_off, *src_flow;
    uint64_t flows, flows_skipped;
    /* lanes: a processor whose simulated slices overlap (concurrent kernels
     * of a CUDA graph on one stream) is drawn on several tracks, each a
     * sequence of disjoint slices; lane[v] is node v's track, lane_tid holds
     * the tids of processor p's tracks at lane_off[p] .. lane_off[p + 1] */
    uint16_t *lane;
    uint32_t *lane_off;
    int64_t *lane_tid;
    uint64_t overlap_nodes;
    uint64_t ops, ops_clamped; /* CPU ops written as the op tree, and those
                                  clamped into their parent */
} rank_map;

static void rank_map_free(rank_map *m)
{
    free(m->proc_pid);
    free(m->src_off);
    free(m->src_flow);
    free(m->lane);
    free(m->lane_off);
    free(m->lane_tid);
    memset(m, 0, sizeof *m);
}

/* Takes the first free local pid from `pref` on (0 is never used: Perfetto
 * and chrome://tracing treat pid 0 specially). */
static int64_t take_local(int64_t *used, size_t *nused, int64_t pref)
{
    for (;;) {
        pref %= PID_STRIDE;
        int clash = pref == 0;
        for (size_t j = 0; j < *nused && !clash; j++) clash = used[j] == pref;
        if (!clash) break;
        pref++;
    }
    used[(*nused)++] = pref;
    return pref;
}

/* Flow for node w's start (e = 0) or end (e = 1) edge: 1 if drawn, with the
 * times of its two ends. The "s" sits at the source's end, or earlier when
 * the edge's delay is negative, so that it never lies after the "f"; a flow
 * whose target lies before its source even starts cannot be drawn forward in
 * time and is left out (counted in otherData). */
static int flow_of(const lsim_replay_item *it, size_t w, int e, uint32_t *src, lsim_ns *s_ts, lsim_ns *f_ts)
{
    const lsim_graph *g = it->g;
    const int64_t *bind = e ? it->bind_end : it->bind_start;
    if (!bind) return 0;
    int64_t k = bind[w];
    if (k < 0 || (uint64_t)k >= g->nedges) return 0;
    uint32_t u = g->in_src[k];
    if (u >= g->n || g->proc[u] == g->proc[w]) return 0;
    lsim_ns f = e ? it->end[w] : it->start[w];
    lsim_ns s = it->end[u] < f ? it->end[u] : f;
    *src = u;
    *s_ts = s;
    *f_ts = f;
    return s >= it->start[u] ? 1 : -1;
}

typedef struct span {
    lsim_ns start, end;
    uint32_t v;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

#define MAX_LANES 65535

/* First-fit lanes per processor over its nodes in (start, end) order: the
 * fewest tracks of disjoint slices. Lane 0 keeps the processor's own tid. */
static int build_lanes(const lsim_replay_item *it, rank_map *m)
{
    const lsim_graph *g = it->g;
    size_t n = g->n, P = g->nprocs;
    int rc = LSIM_ENOMEM;
    uint64_t *off = lsim_calloc(P + 1, sizeof *off);
    span *sp = lsim_malloc((n ? n : 1) * sizeof *sp);
    lsim_ns *lane_end = NULL;
    size_t cap_lanes = 0;
    uint32_t *nl = lsim_calloc(P ? P : 1, sizeof *nl);
    m->lane = lsim_calloc(n ? n : 1, sizeof *m->lane);
    m->lane_off = lsim_calloc(P + 1, sizeof *m->lane_off);
    if (!off || !sp || !nl || !m->lane || !m->lane_off) goto out;
    /* bucket the nodes by processor, in node order */
    for (size_t v = 0; v < n; v++) off[g->proc[v] + 1]++;
    for (size_t p = 0; p < P; p++) off[p + 1] += off[p];
    {
        uint64_t *fill = lsim_malloc((P ? P : 1) * sizeof *fill);
        if (!fill) goto out;
        memcpy(fill, off, P * sizeof *fill);
        for (size_t v = 0; v < n; v++)
            sp[fill[g->proc[v]]++] = (span){it->start[v], it->end[v], (uint32_t)v};
        free(fill);
    }
    for (size_t p = 0; p < P; p++) {
        span *a = sp + off[p];
        size_t k = (size_t)(off[p + 1] - off[p]), L = 0;
        int sorted = 1;
        for (size_t i = 1; i < k && sorted; i++) sorted = cmp_span(&a[i - 1], &a[i]) <= 0;
        if (!sorted) qsort(a, k, sizeof *a, cmp_span);
        for (size_t i = 0; i < k; i++) {
            size_t j = 0;
            while (j < L && a[i].start < lane_end[j]) j++;
            if (j == L && L == MAX_LANES) {
                j = L - 1; /* not seen in practice: the overlap stays */
            } else if (j == L) {
                if (LSIM_GROW(lane_end, &cap_lanes, L + 1)) goto out;
                lane_end[L++] = a[i].end;
            }
            if (a[i].end > lane_end[j]) lane_end[j] = a[i].end;
            m->lane[a[i].v] = (uint16_t)j;
            if (j) m->overlap_nodes++;
        }
        nl[p] = (uint32_t)(L ? L : 1);
    }
    for (size_t p = 0; p < P; p++) m->lane_off[p + 1] = m->lane_off[p] + nl[p];
    m->lane_tid = lsim_malloc((m->lane_off[P] ? m->lane_off[P] : 1) * sizeof *m->lane_tid);
    if (!m->lane_tid) goto out;
    /* tids: lane 0 the processor's own; lane k the first id from
     * tid + k * 100000000 (mod 2^32) that no other track of the process has */
    for (size_t p = 0; p < P; p++) m->lane_tid[m->lane_off[p]] = tid_out(g->procs[p].tid);
    for (size_t p = 0; p < P; p++)
        for (uint32_t k = 1; k < nl[p]; k++) {
            uint64_t c = ((uint64_t)m->lane_tid[m->lane_off[p]] + (uint64_t)k * 100000000u) & 0xffffffffu;
            for (;; c = (c + 1) & 0xffffffffu) {
                int clash = c == 0;
                for (size_t q = 0; q < P && !clash; q++) {
                    if (m->proc_pid[q] != m->proc_pid[p]) continue;
                    uint32_t hi = q == p ? m->lane_off[p] + k : (q < p ? m->lane_off[q + 1] : m->lane_off[q] + 1);
                    for (uint32_t x = m->lane_off[q]; x < hi && !clash; x++) clash = (uint64_t)m->lane_tid[x] == c;
                }
                if (!clash) break;
            }
            m->lane_tid[m->lane_off[p] + k] = (int64_t)c;
        }
    rc = 0;
out:
    free(off);
    free(sp);
    free(nl);
    free(lane_end);
    return rc;
}

static int64_t node_tid(const rank_map *m, const lsim_graph *g, size_t v)
{
    return m->lane_tid[m->lane_off[g->proc[v]] + m->lane[v]];
}

static int build_map(const lsim_replay_item *it, size_t idx, rank_map *m)
{
    const lsim_graph *g = it->g;
    memset(m, 0, sizeof *m);
    m->gpu_pid = -1;
    m->cp_pid = -1;
    m->proc_pid = lsim_malloc((g->nprocs ? g->nprocs : 1) * sizeof *m->proc_pid);
    int64_t *used = lsim_malloc(((size_t)g->nprocs + 2) * sizeof *used);
    if (!m->proc_pid || !used) {
        free(used);
        return LSIM_ENOMEM;
    }
    size_t nused = 0;
    int64_t base = (int64_t)idx * PID_STRIDE;
    /* CPU processes first, then GPU devices, then the critical path; a
     * processor sharing its (kind, pid) with an earlier one shares its pid */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t p = 0; p < g->nprocs; p++) {
            const lsim_proc *pr = &g->procs[p];
            if ((pass == 1) != (pr->is_gpu != 0)) continue;
            uint32_t q = 0;
            while (q < p && !(g->procs[q].is_gpu == pr->is_gpu && g->procs[q].pid == pr->pid)) q++;
            if (q < p) {
                m->proc_pid[p] = m->proc_pid[q];
                continue;
            }
            int64_t pref;
            if (!pr->is_gpu) pref = (pr->pid % PID_STRIDE + PID_STRIDE) % PID_STRIDE;
            else if (pr->pid >= 0 && pr->pid < GPU_PID_SLOTS) pref = GPU_PID_LOCAL + pr->pid;
            else pref = GPU_PID_LOCAL + (pr->pid % GPU_PID_SLOTS + GPU_PID_SLOTS) % GPU_PID_SLOTS;
            m->proc_pid[p] = base + take_local(used, &nused, pref);
            if (pr->is_gpu && m->gpu_pid < 0) m->gpu_pid = m->proc_pid[p];
        }
    }
    if (it->cp) m->cp_pid = base + take_local(used, &nused, CP_PID_LOCAL);
    free(used);
    int rc = build_lanes(it, m);
    if (rc) return rc;

    /* flows, grouped by source node (counting sort) */
    m->src_off = lsim_calloc(g->n + 1, sizeof *m->src_off);
    if (!m->src_off) return LSIM_ENOMEM;
    for (size_t w = 0; w < g->n; w++)
        for (int e = 0; e < 2; e++) {
            uint32_t u;
            lsim_ns s, f;
            int r = flow_of(it, w, e, &u, &s, &f);
            if (r > 0) {
                m->src_off[u + 1]++;
                m->flows++;
            } else if (r < 0) {
                m->flows_skipped++;
            }
        }
    for (size_t v = 0; v < g->n; v++) m->src_off[v + 1] += m->src_off[v];
    m->src_flow = lsim_malloc((m->flows ? m->flows : 1) * sizeof *m->src_flow);
    uint64_t *fill = lsim_malloc((g->n ? g->n : 1) * sizeof *fill);
    if (!m->src_flow || !fill) {
        free(fill);
        return LSIM_ENOMEM;
    }
    memcpy(fill, m->src_off, g->n * sizeof *fill);
    for (size_t w = 0; w < g->n; w++)
        for (int e = 0; e < 2; e++) {
            uint32_t u;
            lsim_ns s, f;
            if (flow_of(it, w, e, &u, &s, &f) > 0) m->src_flow[fill[u]++] = (uint64_t)w * 2 + (uint64_t)e;
        }
    free(fill);
    return 0;
}

static long rank_label(const lsim_replay_item *it, size_t idx) { return it->g->rank >= 0 ? (long)it->g->rank : (long)idx; }

static void write_metadata(writer *w, const lsim_replay_item *it, size_t idx, const rank_map *m)
{
    const lsim_graph *g = it->g;
    long R = rank_label(it, idx);
    char name[160];
    int64_t sort_base = (int64_t)idx * 1000;
    for (uint32_t p = 0; p < g->nprocs; p++) {
        const lsim_proc *pr = &g->procs[p];
        uint32_t q = 0;
        while (q < p && m->proc_pid[q] != m->proc_pid[p]) q++;
        if (q == p) { /* first processor of this process */
            if (pr->is_gpu) snprintf(name, sizeof name, "rank %ld GPU %lld", R, (long long)pr->pid);
            else snprintf(name, sizeof name, "rank %ld CPU (pid %lld)", R, (long long)pr->pid);
            meta(w, "process_name", m->proc_pid[p], 0, name, 0);
            meta(w, "process_sort_index", m->proc_pid[p], 0, NULL,
                 sort_base + (pr->is_gpu ? 100 + (pr->pid >= 0 && pr->pid < 800 ? pr->pid : 799) : 0));
            if (g->source) {
                ev_open(w, "M", NULL, "process_labels", m->proc_pid[p], 0);
                puts_(w, ",\"args\":{\"labels\":");
                put_str(w, g->source);
                puts_(w, "}}");
            }
        }
        for (uint32_t k = m->lane_off[p]; k < m->lane_off[p + 1]; k++) {
            int len = snprintf(name, sizeof name, "%s %lld", pr->is_gpu ? "stream" : "thread", (long long)pr->tid);
            if (k > m->lane_off[p] && len > 0 && (size_t)len < sizeof name)
                snprintf(name + len, sizeof name - (size_t)len, " (overlap %u)", k - m->lane_off[p]);
            meta(w, "thread_name", m->proc_pid[p], m->lane_tid[k], name, 0);
            meta(w, "thread_sort_index", m->proc_pid[p], m->lane_tid[k], NULL, k);
        }
    }
    if (m->cp_pid >= 0) {
        snprintf(name, sizeof name, "rank %ld: critical path", R);
        meta(w, "process_name", m->cp_pid, 0, name, 0);
        meta(w, "process_sort_index", m->cp_pid, 0, NULL, sort_base + 999);
    }
}

static void write_flow(writer *w, const char *ph, uint64_t id, const char *name, int64_t pid, int64_t tid, lsim_ns ts)
{
    ev_open(w, ph, "lumosim_dep", name, pid, tid);
    puts_(w, ",\"id\":");
    put_u64(w, id);
    puts_(w, ",\"ts\":");
    put_us(w, ts);
    puts_(w, ph[0] == 'f' ? ",\"bp\":\"e\"}" : "}");
}

static const char *flow_name(const lsim_graph *g, int64_t k)
{
    return lsim_edge_class_name((lsim_edge_class)(g->in_class[k] & LSIM_EDGE_CLASS_MASK));
}

/* The flow events of node v, on its track (pid, tid): an "s" for each flow
 * leaving it (at its end), an "f" for each arriving (at its start, or end for
 * an end-edge). Written right after the slice they belong to (top of file). */
static void write_node_flows(writer *w, const lsim_replay_item *it, const rank_map *m, uint64_t id_base, size_t v,
                             int64_t pid, int64_t tid)
{
    const lsim_graph *g = it->g;
    for (uint64_t j = m->src_off[v]; j < m->src_off[v + 1]; j++) {
        size_t t = (size_t)(m->src_flow[j] >> 1);
        int e = (int)(m->src_flow[j] & 1);
        uint32_t u;
        lsim_ns s, f;
        flow_of(it, t, e, &u, &s, &f);
        write_flow(w, "s", id_base + 2 * (uint64_t)t + (uint64_t)e + 1,
                   flow_name(g, e ? it->bind_end[t] : it->bind_start[t]), pid, tid, s);
    }
    for (int e = 0; e < 2; e++) {
        uint32_t u;
        lsim_ns s, f;
        if (flow_of(it, v, e, &u, &s, &f) <= 0) continue;
        write_flow(w, "f", id_base + 2 * (uint64_t)v + (uint64_t)e + 1,
                   flow_name(g, e ? it->bind_end[v] : it->bind_start[v]), pid, tid, f);
    }
}

/* The op tree (graph.h, lsim_cpu_op) if it can be written for this graph:
 * valid for its node set, every op on pieces of one CPU thread. Not
 * required: end_node >= start_node (a zero-length op on the edge of two
 * pieces starts in the later and ends in the earlier). */
static const lsim_cpu_ops *usable_ops(const lsim_graph *g)
{
    const lsim_cpu_ops *T = lsim_graph_cpu_ops(g);
    if (!T || !T->node_op) return NULL;
    for (size_t i = 0; i < T->n; i++) {
        const lsim_cpu_op *op = &T->op[i];
        if (op->start_node >= g->n || op->end_node >= g->n || g->proc[op->start_node] != g->proc[op->end_node] ||
            g->procs[g->proc[op->start_node]].is_gpu)
            return NULL;
    }
    for (size_t v = 0; v < g->n; v++)
        if (T->node_op[v] != UINT32_MAX && T->node_op[v] >= T->n) return NULL;
    return T;
}

/* A boundary of an op at the times of its pieces (observed or simulated):
 * the piece's start or end plus the offset. */
static lsim_ns op_time(const lsim_ns *st, const lsim_ns *en, uint32_t v, lsim_ns off, int at_end)
{
    return (at_end ? en[v] : st[v]) + off;
}

/* An element type of the recorded size, for "dtype": the reader takes only
 * the size from it (the trace's own type name is not kept). */
static const char *dtype_of_size(int32_t b)
{
    switch (b) {
    case 1: return "Byte";
    case 2: return "Half";
    case 4: return "Float";
    case 8: return "Double";
    default: return NULL;
    }
}

/* record_param_comms' collective args under the names Kineto gives them, so
 * that reading the predicted trace back finds the same sizes and groups. */
static void write_comm_args(writer *w, const lsim_graph *g, const lsim_coll_info *c)
{
    if (c->from_metadata && c->kind != LSIM_COLL_NONE) {
        puts_(w, ",\"Collective name\":");
        put_str(w, lsim_coll_kind_name((lsim_coll_kind)c->kind));
    }
    if (c->in_nelems >= 0) {
        puts_(w, ",\"In msg nelems\":");
        put_i64(w, c->in_nelems);
    }
    if (c->out_nelems >= 0) {
        puts_(w, ",\"Out msg nelems\":");
        put_i64(w, c->out_nelems);
    }
    const char *dt = dtype_of_size(c->dtype_bytes);
    if (dt) {
        puts_(w, ",\"dtype\":");
        put_str(w, dt);
    }
    if (c->group_size >= 0) {
        puts_(w, ",\"Group size\":");
        put_i64(w, c->group_size);
    }
    if (c->pg_name != UINT32_MAX) {
        puts_(w, ",\"Process Group Name\":");
        put_str(w, str_of(g, c->pg_name));
    }
    if (c->pg_ranks != UINT32_MAX) {
        puts_(w, ",\"Process Group Ranks\":");
        put_str(w, str_of(g, c->pg_ranks));
    }
    if (c->bytes >= 0) {
        puts_(w, ",\"bytes\":");
        put_i64(w, c->bytes);
    }
    if (c->root >= 0) { /* read back from the c10d op (src/read/kineto.c attach_root) */
        puts_(w, ",\"root_rank\":");
        put_i64(w, c->root);
    }
}

typedef struct open_op {
    lsim_ns obs_end, start, end;
} open_op;

/* The CPU threads as their original op tree: one X per op at simulated
 * times, each followed by the flows of the nodes its own pieces start (so
 * a flow finds its slice open, as in write_nodes). Why the nesting is
 * re-checked here: each boundary is mapped through its own piece, and
 * where two boundaries of a parent and a child meet in a tie (a
 * zero-length op at a piece edge) the mapping alone could put the child a
 * step outside; the parent is found from the observed times (the build's
 * stack rule) and the child clamped into it, counted in m->ops_clamped. */
static int write_ops(writer *w, const lsim_replay_item *it, rank_map *m, const lsim_cpu_ops *T, uint64_t id_base)
{
    const lsim_graph *g = it->g;
    int rc = LSIM_ENOMEM;
    uint64_t *off = lsim_calloc(T->n + 2, sizeof *off);
    uint32_t *lst = lsim_malloc((g->n ? g->n : 1) * sizeof *lst);
    open_op *stk = NULL;
    size_t nst = 0, capst = 0;
    if (!off || !lst) goto out;
    /* nodes by op (index T->n: CPU nodes without one, flows written last) */
    for (size_t v = 0; v < g->n; v++)
        if (!g->procs[g->proc[v]].is_gpu) off[(T->node_op[v] == UINT32_MAX ? T->n : T->node_op[v]) + 1]++;
    for (size_t i = 0; i <= T->n; i++) off[i + 1] += off[i];
    {
        uint64_t *fill = lsim_malloc((T->n + 1) * sizeof *fill);
        if (!fill) goto out;
        memcpy(fill, off, (T->n + 1) * sizeof *fill);
        for (size_t v = 0; v < g->n; v++)
            if (!g->procs[g->proc[v]].is_gpu) lst[fill[T->node_op[v] == UINT32_MAX ? T->n : T->node_op[v]]++] = (uint32_t)v;
        free(fill);
    }
    uint32_t cur = UINT32_MAX;
    for (size_t i = 0; i < T->n; i++) {
        const lsim_cpu_op *op = &T->op[i];
        uint32_t p = g->proc[op->start_node];
        if (p != cur) nst = 0, cur = p;
        int sa = (op->flags & LSIM_OP_START_AT_END) != 0, ea = (op->flags & LSIM_OP_END_AT_END) != 0;
        lsim_ns os = op_time(g->obs_start, g->obs_end, op->start_node, op->start_off, sa);
        lsim_ns oe = op_time(g->obs_start, g->obs_end, op->end_node, op->end_off, ea);
        lsim_ns s = op_time(it->start, it->end, op->start_node, op->start_off, sa);
        lsim_ns e = op_time(it->start, it->end, op->end_node, op->end_off, ea);
        /* inside a piece an offset never passes the piece's simulated end */
        if (!sa && op->start_off >= 0 && s > it->end[op->start_node]) s = it->end[op->start_node];
        if (!ea && op->end_off >= 0 && e > it->end[op->end_node]) e = it->end[op->end_node];
        if (e < s) e = s; /* a zero-length op on a piece edge */
        while (nst > 0 && stk[nst - 1].obs_end <= os) nst--;
        if (nst > 0) {
            const open_op *par = &stk[nst - 1];
            lsim_ns s2 = s < par->start ? par->start : s > par->end ? par->end : s;
            lsim_ns e2 = e < s2 ? s2 : e > par->end ? par->end : e;
            if (s2 != s || e2 != e) m->ops_clamped++;
            s = s2, e = e2;
        }
        if (LSIM_GROW(stk, &capst, nst + 1)) goto out;
        stk[nst++] = (open_op){oe, s, e};
        int64_t pid = m->proc_pid[p], tid = m->lane_tid[m->lane_off[p]];
        ev_open(w, "X", str_of(g, op->cat), str_of(g, op->name), pid, tid);
        puts_(w, ",\"ts\":");
        put_us(w, s);
        puts_(w, ",\"dur\":");
        put_us(w, e - s);
        puts_(w, ",\"args\":{");
        put_rank_tag(w);
        puts_(w, "\"lumosim_pieces\":[");
        put_u64(w, op->start_node);
        putch(w, ',');
        put_u64(w, op->end_node);
        putch(w, ']');
        if (op->corr >= 0) {
            puts_(w, ",\"correlation\":");
            put_i64(w, op->corr);
        }
        if (g->obs_start[op->start_node] != LSIM_OBS_NONE && g->obs_start[op->end_node] != LSIM_OBS_NONE) {
            puts_(w, ",\"observed_ts\":");
            put_us(w, os);
            puts_(w, ",\"observed_dur\":");
            put_us(w, oe - os);
        }
        int32_t k = g->iter[op->start_node];
        if (k >= 0 && (uint32_t)k < g->niters) {
            puts_(w, ",\"iteration\":");
            put_str(w, str_of(g, g->iters[k].name));
        }
        if (op->coll >= 0 && (size_t)op->coll < g->ncoll) write_comm_args(w, g, &g->colls[op->coll]);
        puts_(w, "}}");
        for (uint64_t j = off[i]; j < off[i + 1]; j++) write_node_flows(w, it, m, id_base, lst[j], pid, tid);
        m->ops++;
    }
    for (uint64_t j = off[T->n]; j < off[T->n + 1]; j++) {
        uint32_t v = lst[j];
        write_node_flows(w, it, m, id_base, v, m->proc_pid[g->proc[v]], node_tid(m, g, v));
    }
    rc = 0;
out:
    free(off);
    free(lst);
    free(stk);
    return rc;
}

static void write_nodes(writer *w, const lsim_replay_item *it, const rank_map *m, uint64_t id_base, int skip_cpu)
{
    const lsim_graph *g = it->g;
    for (size_t v = 0; v < g->n; v++) {
        const lsim_proc *pr = &g->procs[g->proc[v]];
        if (skip_cpu && !pr->is_gpu) continue; /* written as the op tree */
        int64_t pid = m->proc_pid[g->proc[v]], tid = node_tid(m, g, v);
        ev_open(w, "X", kind_cat(g->kind[v]), str_of(g, g->name[v]), pid, tid);
        puts_(w, ",\"ts\":");
        put_us(w, it->start[v]);
        puts_(w, ",\"dur\":");
        put_us(w, it->end[v] - it->start[v]);
        puts_(w, ",\"args\":{");
        put_rank_tag(w);
        puts_(w, "\"lumosim_node\":");
        put_u64(w, v);
        if (g->corr[v] >= 0) {
            puts_(w, ",\"correlation\":");
            put_i64(w, g->corr[v]);
        }
        if (pr->is_gpu) {
            puts_(w, ",\"device\":");
            put_i64(w, pr->pid);
            puts_(w, ",\"stream\":");
            put_i64(w, pr->tid);
        }
        if (g->obs_start[v] != LSIM_OBS_NONE) { /* synthesized and what-if nodes were never observed */
            puts_(w, ",\"observed_ts\":");
            put_us(w, g->obs_start[v]);
            puts_(w, ",\"observed_dur\":");
            put_us(w, g->obs_end[v] - g->obs_start[v]);
        }
        if (g->iter[v] >= 0 && (uint32_t)g->iter[v] < g->niters) {
            puts_(w, ",\"iteration\":");
            put_str(w, str_of(g, g->iters[g->iter[v]].name));
        }
        if ((g->flags[v] & LSIM_NF_COLL) && g->coll[v] >= 0 && (size_t)g->coll[v] < g->ncoll) {
            const lsim_coll_info *c = &g->colls[g->coll[v]];
            puts_(w, ",\"collective\":");
            put_str(w, lsim_coll_kind_name((lsim_coll_kind)c->kind));
            if (c->bytes >= 0) {
                puts_(w, ",\"bytes\":");
                put_i64(w, c->bytes);
            }
            if (c->pg_name != UINT32_MAX) {
                puts_(w, ",\"group\":");
                put_str(w, str_of(g, c->pg_name));
            }
            if (c->group_size >= 0) {
                puts_(w, ",\"group_size\":");
                put_i64(w, c->group_size);
            }
            if (c->seq >= 0) {
                puts_(w, ",\"seq\":");
                put_i64(w, c->seq);
            }
        }
        if (g->flags[v] & LSIM_NF_PREWINDOW) puts_(w, ",\"prewindow\":true");
        puts_(w, "}}");
        write_node_flows(w, it, m, id_base, v, pid, tid);
    }
}

static void write_counter(writer *w, const lsim_replay_item *it, const rank_map *m)
{
    const lsim_rank_report *r = it->r;
    if (!r || m->gpu_pid < 0 || !r->duty_predicted || !r->nbins_predicted || r->bin_ns <= 0) return;
    static const char *name = "stream-active duty cycle";
    for (uint32_t b = 0; b <= r->nbins_predicted; b++) {
        ev_open(w, "C", "lumosim", name, m->gpu_pid, 0);
        puts_(w, ",\"ts\":");
        put_us(w, r->window_predicted_start + (lsim_ns)b * r->bin_ns);
        puts_(w, ",\"args\":{\"active\":");
        /* a last sample of 0 closes the last bin */
        put_dbl(w, b < r->nbins_predicted ? r->duty_predicted[b] : 0.0);
        puts_(w, "}}");
    }
}

/* The lanes of a path's track: a slice that starts before the previous one
 * on a lane has ended (a blocking call and the GPU work it waited for)
 * goes to the next lane down, so each lane stays a sequence of disjoint
 * slices. lane_take: the lane for [start, end) in *L (0, or LSIM_ENOMEM
 * with the lanes freed); lanes_name: each lane's name ("BASE", then
 * "BASE (overlap k)"), and the lanes freed. */
typedef struct lanes {
    lsim_ns *end;
    size_t n;
} lanes;

static int lane_take(lanes *l, lsim_ns start, lsim_ns end, size_t *L)
{
    size_t k = 0;
    while (k < l->n && start < l->end[k]) k++;
    if (k == l->n) {
        lsim_ns *x = lsim_realloc(l->end, (l->n + 1) * sizeof *x);
        if (!x) {
            free(l->end);
            l->end = NULL;
            return LSIM_ENOMEM;
        }
        l->end = x;
        l->n++;
    }
    l->end[k] = end;
    *L = k;
    return 0;
}

static void lanes_name(writer *w, lanes *l, int64_t pid, const char *base)
{
    for (size_t L = 0; L < l->n; L++) {
        char name[96];
        if (L == 0) snprintf(name, sizeof name, "%s", base);
        else snprintf(name, sizeof name, "%s (overlap %zu)", base, L);
        meta(w, "thread_name", pid, (int64_t)L + 1, name, 0);
        meta(w, "thread_sort_index", pid, (int64_t)L + 1, NULL, (int64_t)L);
    }
    free(l->end);
    l->end = NULL;
}

/* A path slice's name: the kind of work, then the op's name (cut to
 * CP_OP_MAX bytes, whole UTF-8 sequences, "..." marking the cut; kernel
 * names run to kilobytes). Its own name, so that Perfetto's search and SQL
 * for an op's name find the op and not the path's copies of it; the whole
 * name is args.op. */
enum { CP_OP_MAX = 80 };
typedef struct cp_label {
    char s[32 + CP_OP_MAX + 4];
} cp_label;

static const char *cp_work(const lsim_graph *g, uint32_t v)
{
    switch ((lsim_node_kind)g->kind[v]) {
    case LSIM_N_CPU: return "CPU op";
    case LSIM_N_RUNTIME: return g->flags[v] & LSIM_NF_BLOCKING ? "wait" : "runtime";
    case LSIM_N_KERNEL: return g->flags[v] & LSIM_NF_COLL ? "collective" : "GPU kernel";
    case LSIM_N_MEMCPY: return "memcpy";
    case LSIM_N_MEMSET: return "memset";
    default: return "node";
    }
}

static cp_label cp_name(const lsim_graph *g, uint32_t v)
{
    cp_label l;
    const unsigned char *op = (const unsigned char *)str_of(g, g->name[v]);
    int k = snprintf(l.s, sizeof l.s, "%s: ", cp_work(g, v));
    size_t at = k > 0 ? (size_t)k : 0, used = 0;
    size_t len = strlen((const char *)op);
    while (op[used]) {
        size_t n = lsim_utf8_seq((const char *)op + used, len - used);
        if (!n) n = 1; /* put_str writes U+FFFD for it */
        if (used + n > CP_OP_MAX) break;
        used += n;
    }
    memcpy(l.s + at, op, used);
    at += used;
    if (op[used]) {
        memcpy(l.s + at, "...", 3);
        at += 3;
    }
    l.s[at] = 0;
    return l;
}

/* The op's name and kind in a path slice's args (after its other args). */
static void cp_args(writer *w, const lsim_graph *g, uint32_t v)
{
    puts_(w, ",\"op\":");
    put_str(w, str_of(g, g->name[v]));
    puts_(w, ",\"kind\":");
    put_str(w, lsim_node_kind_name((lsim_node_kind)g->kind[v]));
}

/* The critical path as its own process: one X per path node, on lanes
 * (lane_take). */
static int write_critical(writer *w, const lsim_replay_item *it, const rank_map *m)
{
    const lsim_critical_path *cp = it->cp;
    const lsim_graph *g = it->g;
    if (!cp || m->cp_pid < 0) return 0;
    lanes ln = {NULL, 0};
    for (size_t i = 0; i < cp->n; i++) {
        uint32_t v = cp->nodes[i];
        if (v >= g->n) continue;
        size_t L;
        if (lane_take(&ln, it->start[v], it->end[v], &L)) return LSIM_ENOMEM;
        ev_open(w, "X", "lumosim_critical_path", cp_name(g, v).s, m->cp_pid, (int64_t)L + 1);
        puts_(w, ",\"ts\":");
        put_us(w, it->start[v]);
        puts_(w, ",\"dur\":");
        put_us(w, it->end[v] - it->start[v]);
        puts_(w, ",\"args\":{\"lumosim_node\":");
        put_u64(w, v);
        puts_(w, ",\"step\":");
        put_u64(w, i);
        cp_args(w, g, v);
        if (cp->via && cp->via[i] >= 0 && (uint64_t)cp->via[i] < g->nedges) {
            puts_(w, ",\"via\":");
            put_str(w, flow_name(g, cp->via[i]));
            if (g->in_class[cp->via[i]] & LSIM_EDGE_END) puts_(w, ",\"via_end_edge\":true");
        }
        puts_(w, "}}");
    }
    lanes_name(w, &ln, m->cp_pid, "critical path");
    return 0;
}

/* The job's critical path (critical.h, lsim_job_path) as one process after
 * every rank's (pid n * PID_STRIDE): one X per stretch of the path, on the
 * lanes write_critical uses, each naming the GPU (rank) it was spent on. A
 * collective the path reached from its last arrival starts at that
 * arrival ("from_rank"); the arrival itself, left at its start, is not a
 * slice of its own. */
static int write_job_path(writer *w, const lsim_replay_item *items, size_t n, const lsim_job_path *jp)
{
    int64_t pid = (int64_t)n * PID_STRIDE;
    lanes ln = {NULL, 0};
    for (size_t i = 0; i < jp->n; i++) {
        uint32_t gi = jp->gpu[i], v = jp->node[i];
        if (gi >= n || v >= items[gi].g->n) continue;
        if (i + 1 < jp->n && jp->via[i + 1] == LSIM_CP_VIA_PEER) continue; /* the arrival */
        const lsim_graph *g = items[gi].g;
        lsim_ns t0 = jp->via[i] == LSIM_CP_VIA_PEER ? jp->at[i - 1] : items[gi].start[v];
        size_t L;
        if (lane_take(&ln, t0, jp->at[i], &L)) return LSIM_ENOMEM;
        ev_open(w, "X", "lumosim_job_critical_path", cp_name(g, v).s, pid, (int64_t)L + 1);
        puts_(w, ",\"ts\":");
        put_us(w, t0);
        puts_(w, ",\"dur\":");
        put_us(w, jp->at[i] - t0);
        puts_(w, ",\"args\":{\"rank\":");
        put_i64(w, g->rank >= 0 ? g->rank : (int64_t)gi);
        puts_(w, ",\"gpu_index\":");
        put_u64(w, gi);
        puts_(w, ",\"lumosim_node\":");
        put_u64(w, v);
        cp_args(w, g, v);
        if (jp->via[i] == LSIM_CP_VIA_PEER) {
            const lsim_graph *pg = items[jp->gpu[i - 1]].g;
            puts_(w, ",\"from_rank\":");
            put_i64(w, pg->rank >= 0 ? pg->rank : (int64_t)jp->gpu[i - 1]);
        }
        puts_(w, "}}");
    }
    meta(w, "process_name", pid, 0, "job critical path", 0);
    lanes_name(w, &ln, pid, "job critical path");
    return 0;
}

static int write_doc(writer *w, const lsim_replay_item *items, size_t n, const lsim_job_path *jp)
{
    rank_map *maps = lsim_calloc(n ? n : 1, sizeof *maps);
    if (!maps) return LSIM_ENOMEM;
    int rc = 0;
    puts_(w, "{\"traceEvents\":[");
    uint64_t id_base = 0;
    for (size_t i = 0; i < n && !w->failed; i++) {
        const lsim_replay_item *it = &items[i];
        w->rank_tag = n > 1 ? (it->g->rank >= 0 ? it->g->rank : (int64_t)i) : -1;
        if ((rc = build_map(it, i, &maps[i]))) break;
        write_metadata(w, it, i, &maps[i]);
        const lsim_cpu_ops *T = usable_ops(it->g);
        if (T && (rc = write_ops(w, it, &maps[i], T, id_base))) break;
        write_nodes(w, it, &maps[i], id_base, T != NULL);
        write_counter(w, it, &maps[i]);
        if ((rc = write_critical(w, it, &maps[i]))) break;
        id_base += 2 * (uint64_t)it->g->n;
        free(maps[i].src_off);
        free(maps[i].src_flow);
        free(maps[i].lane);
        free(maps[i].lane_tid);
        free(maps[i].lane_off);
        maps[i].src_off = maps[i].src_flow = NULL;
        maps[i].lane = NULL;
        maps[i].lane_tid = NULL;
        maps[i].lane_off = NULL;
    }
    if (!rc && jp) rc = write_job_path(w, items, n, jp);
    if (!rc) {
        puts_(w, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"lumosim " LSIM_VERSION "\"");
        puts_(w, ",\"latency_mode\":");
        put_str(w, lsim_latency_mode_name(n && items[0].g->latency == LSIM_LAT_OBSERVED ? LSIM_LAT_OBSERVED : LSIM_LAT_MODEL));
        puts_(w, ",\"pid_stride\":" );
        put_u64(w, PID_STRIDE);
        puts_(w, ",\"ranks\":[");
        for (size_t i = 0; i < n; i++) {
            const lsim_graph *g = items[i].g;
            puts_(w, i ? ",\n {\"index\":" : "\n {\"index\":");
            put_u64(w, i);
            puts_(w, ",\"rank\":");
            put_i64(w, g->rank);
            puts_(w, ",\"source\":");
            put_str(w, g->source ? g->source : "");
            puts_(w, ",\"latency_mode\":");
            put_str(w, lsim_latency_mode_name(g->latency == LSIM_LAT_OBSERVED ? LSIM_LAT_OBSERVED : LSIM_LAT_MODEL));
            puts_(w, ",\"pid_base\":");
            put_u64(w, (uint64_t)i * PID_STRIDE);
            puts_(w, ",\"nodes\":");
            put_u64(w, g->n);
            puts_(w, ",\"flows\":");
            put_u64(w, maps[i].flows);
            puts_(w, ",\"flows_left_out\":");
            put_u64(w, maps[i].flows_skipped);
            puts_(w, ",\"overlap_nodes\":");
            put_u64(w, maps[i].overlap_nodes);
            puts_(w, ",\"cpu_ops\":");
            put_u64(w, maps[i].ops);
            puts_(w, ",\"cpu_ops_clamped\":");
            put_u64(w, maps[i].ops_clamped);
            puts_(w, "}");
        }
        puts_(w, "]}}\n");
        flush_buf(w);
    }
    for (size_t i = 0; i < n; i++) rank_map_free(&maps[i]);
    free(maps);
    return rc;
}

static int ends_with_gz(const char *p)
{
    size_t l = strlen(p);
    return l >= 3 && (p[l - 3] == '.') && (p[l - 2] == 'g' || p[l - 2] == 'G') && (p[l - 1] == 'z' || p[l - 1] == 'Z');
}

int lsim_chrome_write(const char *path, const lsim_replay_item *items, size_t n, const lsim_job_path *jp,
                      lsim_err *err)
{
    if (!path || !*path) return lsim_err_set(err, LSIM_EARG, "trace output: no path given");
    if (n && !items) return lsim_err_set(err, LSIM_EARG, "%s: no ranks to write", path);
    for (size_t i = 0; i < n; i++) {
        const lsim_replay_item *it = &items[i];
        if (!it->g || !it->start || !it->end)
            return lsim_err_set(err, LSIM_EARG, "%s: rank %zu has no simulated times", path, i);
        for (size_t v = 0; v < it->g->n; v++)
            if (it->end[v] < it->start[v])
                return lsim_err_set(err, LSIM_EINTERNAL, "%s: rank %zu: node %zu ends before it starts", path, i, v);
    }
    writer *w = lsim_calloc(1, sizeof *w);
    if (!w) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
    lsim_out *o = NULL;
    int brc = lsim_out_begin(path, 0, 0, &o, err);
    if (brc) {
        free(w);
        return brc;
    }
    const char *tmp = lsim_out_file(o);
    /* written through (a device, /dev/stdout): append, never truncate */
    int through = lsim_out_is_through(o);

    errno = 0;
    if (ends_with_gz(path)) {
        w->gz = gzopen(tmp, through ? "ab6" : "wb6");
        if (w->gz) gzbuffer(w->gz, 1u << 17);
    } else {
        w->f = fopen(tmp, through ? "ab" : "wb");
    }
    if (!w->f && !w->gz) {
        int e = errno ? errno : EIO;
        lsim_out_abort(o);
        free(w);
        return lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s", path, strerror(e));
    }

    int rc = write_doc(w, items, n, jp);
    /* close, and check that too: a full disk may show up only here */
    errno = 0;
    if (w->gz) {
        int zr = gzclose(w->gz);
        if (zr != Z_OK && !w->failed) {
            if (zr == Z_ERRNO) fail_errno(w, errno);
            else {
                w->failed = 1;
                snprintf(w->why, sizeof w->why, "%s", zr == Z_BUF_ERROR ? "incomplete write" : zError(zr));
            }
        }
        w->gz = NULL;
    } else {
        if (fclose(w->f) != 0) fail_errno(w, errno);
        w->f = NULL;
    }
    if (!rc && w->failed) rc = LSIM_EIO;
    if (rc) {
        lsim_out_abort(o);
        if (rc == LSIM_ENOMEM) lsim_err_set(err, rc, "%s: out of memory", path);
        else lsim_err_set(err, rc, "%s: cannot write: %s", path, w->failed ? w->why : lsim_strerror(rc));
    } else {
        rc = lsim_out_commit(o, err);
    }
    free(w);
    return rc;
}
