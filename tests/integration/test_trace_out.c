/* The predicted trace (lsim_chrome_write, include/lumosim/chrome.h,
 * docs/trace-out.md), checked three ways.
 *
 *   test_trace_out roundtrip [--require] TRACE...   one rank per file
 *   test_trace_out multirank TRACE TRACE...        all ranks in one file
 *   test_trace_out escape                          awkward names, negative times
 *   test_trace_out atomic TRACE                    temporary file and rename
 *
 * roundtrip/multirank replay each trace (model latency), write the result as
 * .json and as .json.gz, and then
 *  1. read it back with lsim_trace_read: every node comes back exactly once
 *     with its name, its processor, its correlation id and its simulated
 *     start and duration to the nanosecond;
 *  2. parse the .json with cJSON and check the trace-event format: fields of
 *     each phase, matched flow pairs bound inside slices, properly nested
 *     slices per thread, counters, metadata naming every process and thread.
 * With --require, a missing TRACE makes the test exit 77 (skipped). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lumosim/chrome.h"
#include "lumosim/critical.h"
#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/metrics.h"
#include "lumosim/trace.h"

#define SKIP 77
#define PID_STRIDE 1000000 /* docs/trace-out.md */

static int failures;
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            if (++failures <= 50) {                                             \
                fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);      \
                fprintf(stderr, __VA_ARGS__);                                   \
                fputc('\n', stderr);                                            \
            }                                                                   \
        }                                                                       \
    } while (0)

/* ------------------------------------------------------------------------ */
/* one replayed rank */

typedef struct replay {
    lsim_graph *g;
    lsim_engine *e;
    lsim_rank_report r;
    lsim_critical_path cp;
    lsim_replay_item item;
} replay;

static void replay_free(replay *x)
{
    lsim_critical_path_clear(&x->cp);
    lsim_rank_report_clear(&x->r);
    lsim_engine_free(x->e);
    lsim_graph_free(x->g);
    memset(x, 0, sizeof *x);
}

static int replay_trace(lsim_trace *t, replay *x, int with_cp)
{
    lsim_err err = {0};
    lsim_build_opts o;
    memset(x, 0, sizeof *x);
    lsim_build_opts_default(&o);
    o.latency = LSIM_LAT_MODEL;
    int rc = lsim_graph_build(t, &o, &x->g, &err);
    lsim_trace_free(t);
    if (!rc) rc = lsim_engine_new(x->g, &x->e, &err);
    if (!rc) rc = lsim_engine_run(x->e, &err);
    if (!rc)
        rc = lsim_metrics_compute(x->g, lsim_engine_start(x->e), lsim_engine_end(x->e), 20000, &x->r, &err);
    if (!rc && with_cp) rc = lsim_critical_path_compute(x->g, x->e, &x->cp, &err);
    if (rc) {
        fprintf(stderr, "replay failed: %s\n", err.msg);
        failures++;
        replay_free(x);
        return rc;
    }
    x->item.g = x->g;
    x->item.r = &x->r;
    x->item.start = lsim_engine_start(x->e);
    x->item.end = lsim_engine_end(x->e);
    x->item.bind_start = lsim_engine_bind_start(x->e);
    x->item.bind_end = lsim_engine_bind_end(x->e);
    x->item.cp = with_cp ? &x->cp : NULL;
    return 0;
}

static int replay_file(const char *path, replay *x, int with_cp)
{
    lsim_trace *t = NULL;
    lsim_err err = {0};
    if (lsim_trace_read(path, &t, &err)) {
        fprintf(stderr, "cannot read %s: %s\n", path, err.msg);
        failures++;
        return -1;
    }
    return replay_trace(t, x, with_cp);
}

static const char *nm(const lsim_graph *g, uint32_t v) { return lsim_strtab_get(g->strings, g->name[v]); }

/* ------------------------------------------------------------------------ */
/* 1. read back with lsim_trace_read
 *
 * The reader keeps no args but correlation/device/stream, so an event cannot
 * be matched to its node by its "lumosim_node" arg. It does keep every X
 * event in file order, and the writer emits, per rank, one X per node in node
 * order and then one per critical-path node (flows, counters and metadata
 * are not X events). So the k-th X event read back is matched to its node by
 * position, and then everything about it is compared: name, category (kind),
 * processor, correlation, start and duration. A lost, duplicated or reordered
 * event fails both the count and the field comparison. */

static int64_t tid_of(int64_t t) /* docs/trace-out.md: tids as unsigned 32-bit */
{
    if (t >= 0 && t <= (int64_t)UINT32_MAX) return t;
    if (t >= INT32_MIN && t < 0) return t + ((int64_t)1 << 32);
    return -1; /* not in the fixtures */
}

static lsim_ev_kind kind_back(unsigned k)
{
    switch (k) {
    case LSIM_N_RUNTIME: return LSIM_EV_RUNTIME;
    case LSIM_N_KERNEL: return LSIM_EV_KERNEL;
    case LSIM_N_MEMCPY: return LSIM_EV_MEMCPY;
    case LSIM_N_MEMSET: return LSIM_EV_MEMSET;
    default: return LSIM_EV_CPU_OP;
    }
}

static void check_read_back(const char *out, replay *xs, size_t n)
{
    lsim_trace *t = NULL;
    lsim_err err = {0};
    if (lsim_trace_read(out, &t, &err)) {
        CHECK(0, "cannot read back %s: %s", out, err.msg);
        return;
    }
    size_t want = 0;
    /* the critical-path track (category lumosim_critical_path) is skipped by
     * the reader, so that a predicted trace replays as itself; it is checked
     * in check_format instead */
    for (size_t i = 0; i < n; i++) want += xs[i].g->n;
    CHECK(t->nev == want, "%s: %zu X events read back, expected %zu", out, t->nev, want);
    size_t k = 0;
    for (size_t i = 0; i < n && k < t->nev; i++) {
        const lsim_graph *g = xs[i].g;
        const lsim_ns *S = xs[i].item.start, *E = xs[i].item.end;
        /* processor <-> row must be a bijection */
        uint32_t *proc_row = malloc(g->nprocs * sizeof *proc_row);
        for (uint32_t p = 0; p < g->nprocs; p++) proc_row[p] = UINT32_MAX;
        int64_t *row_proc = malloc(t->nrows * sizeof *row_proc);
        for (size_t r = 0; r < t->nrows; r++) row_proc[r] = -1;
        for (size_t v = 0; v < g->n && k < t->nev; v++, k++) {
            const lsim_event *e = &t->ev[k];
            const lsim_row *row = &t->rows[e->row];
            const lsim_proc *pr = &g->procs[g->proc[v]];
            const char *name = lsim_strtab_get(t->strings, e->name);
            CHECK(name && strcmp(name, nm(g, (uint32_t)v)) == 0, "%s: rank %zu node %zu: name \"%s\", expected \"%s\"",
                  out, i, v, name ? name : "(null)", nm(g, (uint32_t)v));
            CHECK(e->ts == S[v], "%s: rank %zu node %zu: ts %" PRId64 " ns, expected %" PRId64, out, i, v, e->ts, S[v]);
            CHECK(e->dur == E[v] - S[v], "%s: rank %zu node %zu: dur %" PRId64 " ns, expected %" PRId64, out, i, v,
                  e->dur, E[v] - S[v]);
            CHECK(e->corr == g->corr[v], "%s: rank %zu node %zu: correlation %" PRId64 ", expected %" PRId64, out, i, v,
                  e->corr, g->corr[v]);
            CHECK(e->kind == kind_back(g->kind[v]), "%s: rank %zu node %zu: kind %d, node kind %d", out, i, v, e->kind,
                  g->kind[v]);
            CHECK(row->pid / PID_STRIDE == (int64_t)i, "%s: rank %zu node %zu: pid %" PRId64 " outside the rank's range",
                  out, i, v, row->pid);
            if (pr->is_gpu) {
                /* overlapping slices of one stream may sit on extra tracks
                 * (other tids), but always name their device and stream */
                CHECK(row->device == pr->pid && row->stream == pr->tid,
                      "%s: rank %zu node %zu: device/stream %d/%" PRId64 ", expected %" PRId64 "/%" PRId64, out, i, v,
                      row->device, row->stream, pr->pid, pr->tid);
            } else {
                CHECK(row->tid == tid_of(pr->tid), "%s: rank %zu node %zu: tid %" PRId64 ", expected %" PRId64, out, i,
                      v, row->tid, tid_of(pr->tid));
                CHECK(row->pid % PID_STRIDE == (pr->pid % PID_STRIDE + PID_STRIDE) % PID_STRIDE,
                      "%s: rank %zu node %zu: pid %" PRId64 " does not keep pid %" PRId64, out, i, v, row->pid, pr->pid);
            }
            /* a row (track) holds one processor only; a CPU processor one row */
            uint32_t p = g->proc[v];
            if (row_proc[e->row] < 0) row_proc[e->row] = p;
            CHECK(row_proc[e->row] == (int64_t)p, "%s: rank %zu: processors %" PRId64 " and %u share a row", out, i,
                  row_proc[e->row], p);
            if (!pr->is_gpu) {
                if (proc_row[p] == UINT32_MAX) proc_row[p] = e->row;
                CHECK(proc_row[p] == e->row, "%s: rank %zu: CPU thread %u written on two rows", out, i, p);
            }
        }
        free(proc_row);
        free(row_proc);
    }
    lsim_trace_free(t);
}

/* ------------------------------------------------------------------------ */
/* 2. the trace-event format, with cJSON, plus exact times from the text */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(b, 2 * cap + 1);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (b) b[n] = 0;
    *len = n;
    return b;
}

/* Exact ns of a "key": value on one event's line (the writer puts one event
 * per line; ,"ts": cannot occur inside an escaped string). */
static int line_ns(const char *line, const char *end, const char *key, lsim_ns *out)
{
    size_t kl = strlen(key);
    for (const char *p = line; p + kl < end; p++)
        if (!memcmp(p, key, kl)) {
            const char *q = p + kl;
            size_t m = 0;
            while (q + m < end && (q[m] == '-' || q[m] == '.' || (q[m] >= '0' && q[m] <= '9'))) m++;
            return lsim_us_text_to_ns(q, m, out) == 0;
        }
    return 0;
}

typedef struct xev {
    int64_t pid, tid;
    lsim_ns ts, end;
    size_t idx; /* event index */
} xev;

static int cmp_xev(const void *a, const void *b)
{
    const xev *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    if (x->end != y->end) return x->end > y->end ? -1 : 1; /* longer first */
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

typedef struct flow {
    uint64_t id;
    int ph; /* 's' or 'f' */
    lsim_ns ts;
    lsim_ns slice_end; /* end of the slice it is bound to */
    const char *name;
} flow;

static int cmp_flow(const void *a, const void *b)
{
    const flow *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->ph > y->ph ? -1 : x->ph < y->ph; /* 's' before 'f' */
}

typedef struct pidtid {
    int64_t pid, tid;
} pidtid;

static int has_pt(const pidtid *a, size_t n, int64_t pid, int64_t tid)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].pid == pid && a[i].tid == tid) return 1;
    return 0;
}

static void check_format(const char *out, replay *xs, size_t n)
{
    size_t len = 0;
    char *txt = slurp(out, &len);
    if (!txt) {
        CHECK(0, "%s: cannot read", out);
        return;
    }
    cJSON *doc = cJSON_ParseWithLength(txt, len);
    CHECK(doc && cJSON_IsObject(doc), "%s: not a JSON object", out);
    const cJSON *evs = doc ? cJSON_GetObjectItemCaseSensitive(doc, "traceEvents") : NULL;
    CHECK(cJSON_IsArray(evs), "%s: no traceEvents array", out);
    if (!cJSON_IsArray(evs)) goto done;
    const cJSON *du = cJSON_GetObjectItemCaseSensitive(doc, "displayTimeUnit");
    CHECK(cJSON_IsString(du) && !strcmp(du->valuestring, "ns"), "%s: displayTimeUnit", out);
    const cJSON *od = cJSON_GetObjectItemCaseSensitive(doc, "otherData");
    const cJSON *gen = od ? cJSON_GetObjectItemCaseSensitive(od, "generator") : NULL;
    CHECK(cJSON_IsString(gen) && !strncmp(gen->valuestring, "lumosim ", 8), "%s: otherData.generator", out);
    const cJSON *lm = od ? cJSON_GetObjectItemCaseSensitive(od, "latency_mode") : NULL;
    CHECK(cJSON_IsString(lm) && !strcmp(lm->valuestring, "model"), "%s: otherData.latency_mode", out);

    size_t nev = (size_t)cJSON_GetArraySize(evs);
    /* event lines: line j + 1 of the file is event j */
    const char **line = malloc((nev + 1) * sizeof *line);
    const char **lend = malloc((nev + 1) * sizeof *lend);
    {
        const char *p = strchr(txt, '\n');
        size_t j = 0;
        while (p && j < nev) {
            line[j] = p + 1;
            p = strchr(p + 1, '\n');
            lend[j] = p ? p : txt + len;
            j++;
        }
        CHECK(j == nev, "%s: %zu event lines for %zu events", out, j, nev);
        if (j != nev) {
            free(line);
            free(lend);
            goto done;
        }
    }
    xev *xe = malloc((nev + 1) * sizeof *xe);
    flow *fl = malloc((nev + 1) * sizeof *fl);
    pidtid *named_p = malloc((nev + 1) * sizeof *named_p), *named_t = malloc((nev + 1) * sizeof *named_t);
    size_t nx = 0, nf = 0, nnp = 0, nnt = 0, ncounter = 0;
    size_t *seen_nodes = calloc(n, sizeof *seen_nodes);
    size_t *cp_seen = calloc(n, sizeof *cp_seen);
    unsigned char **node_seen = calloc(n, sizeof *node_seen);
    for (size_t i = 0; i < n; i++) node_seen[i] = calloc(xs[i].g->n + 1, 1);
    /* the last X event before a flow event: the slice it must bind to */
    int64_t last_x = -1;
    size_t j = 0;
    for (const cJSON *ev = evs->child; ev; ev = ev->next, j++) {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "ph");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(ev, "name");
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(ev, "pid");
        const cJSON *tid = cJSON_GetObjectItemCaseSensitive(ev, "tid");
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(ev, "ts");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(ev, "cat");
        if (!cJSON_IsString(ph) || !cJSON_IsString(name) || !cJSON_IsNumber(pid) || !cJSON_IsNumber(tid)) {
            CHECK(0, "%s: event %zu lacks ph/name/pid/tid", out, j);
            continue;
        }
        char p = ph->valuestring[0];
        int64_t P = (int64_t)pid->valuedouble, T = (int64_t)tid->valuedouble;
        CHECK(P > 0 && P <= (int64_t)UINT32_MAX && T >= 0 && T <= (int64_t)UINT32_MAX,
              "%s: event %zu: pid/tid %" PRId64 "/%" PRId64 " outside unsigned 32 bits (Perfetto reads them so)", out,
              j, P, T);
        if (p == 'X' || p == 's' || p == 'f' || p == 'C') CHECK(cJSON_IsNumber(ts), "%s: event %zu has no ts", out, j);
        lsim_ns tns = 0;
        if (p == 'X' || p == 's' || p == 'f' || p == 'C')
            CHECK(line_ns(line[j], lend[j], ",\"ts\":", &tns), "%s: event %zu: ts text", out, j);
        if (p == 'X') {
            lsim_ns d = -1;
            const cJSON *dur = cJSON_GetObjectItemCaseSensitive(ev, "dur");
            CHECK(cJSON_IsNumber(dur) && line_ns(line[j], lend[j], ",\"dur\":", &d) && d >= 0,
                  "%s: event %zu: X without dur >= 0", out, j);
            xe[nx++] = (xev){P, T, tns, tns + (d > 0 ? d : 0), j};
            last_x = (int64_t)(nx - 1);
            const cJSON *ln = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "lumosim_node") : NULL;
            CHECK(cJSON_IsNumber(ln), "%s: event %zu: no args.lumosim_node", out, j);
            size_t ri = (size_t)(P / PID_STRIDE);
            int is_cp = cJSON_IsString(cat) && !strcmp(cat->valuestring, "lumosim_critical_path");
            if (ri < n && cJSON_IsNumber(ln) && is_cp) {
                size_t v = (size_t)ln->valuedouble;
                cp_seen[ri]++;
                CHECK(v < xs[ri].g->n && tns == xs[ri].item.start[v] && xe[nx - 1].end == xs[ri].item.end[v],
                      "%s: rank %zu critical-path event for node %zu: times", out, ri, v);
            }
            if (ri < n && cJSON_IsNumber(ln) && !is_cp) {
                size_t v = (size_t)ln->valuedouble;
                CHECK(v < xs[ri].g->n && !node_seen[ri][v], "%s: rank %zu node %zu written twice or out of range",
                      out, ri, v);
                if (v < xs[ri].g->n && !node_seen[ri][v]) {
                    node_seen[ri][v] = 1;
                    seen_nodes[ri]++;
                    CHECK(tns == xs[ri].item.start[v] && xe[nx - 1].end == xs[ri].item.end[v],
                          "%s: rank %zu node %zu: times in the text", out, ri, v);
                }
            }
        } else if (p == 's' || p == 'f') {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(ev, "id");
            CHECK(cJSON_IsNumber(id), "%s: flow event %zu without id", out, j);
            CHECK(cJSON_IsString(cat) && !strcmp(cat->valuestring, "lumosim_dep"), "%s: flow event %zu: cat", out, j);
            if (p == 'f') {
                const cJSON *bp = cJSON_GetObjectItemCaseSensitive(ev, "bp");
                CHECK(cJSON_IsString(bp) && !strcmp(bp->valuestring, "e"), "%s: flow end %zu without bp e", out, j);
            }
            /* bound: inside the X written just before it, on its track */
            CHECK(last_x >= 0 && xe[last_x].pid == P && xe[last_x].tid == T && xe[last_x].ts <= tns &&
                      tns <= xe[last_x].end,
                  "%s: flow event %zu (ts %" PRId64 ") not inside the slice written before it", out, j, tns);
            fl[nf++] = (flow){cJSON_IsNumber(id) ? (uint64_t)id->valuedouble : 0, p, tns,
                              last_x >= 0 ? xe[last_x].end : 0, name->valuestring};
        } else if (p == 'C') {
            ncounter++;
            int num = 0;
            if (cJSON_IsObject(args))
                for (const cJSON *a = args->child; a; a = a->next) num |= cJSON_IsNumber(a);
            CHECK(num, "%s: counter event %zu without a number in args", out, j);
            const cJSON *a = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "active") : NULL;
            CHECK(cJSON_IsNumber(a) && a->valuedouble >= 0 && a->valuedouble <= 1, "%s: counter %zu: active", out, j);
        } else if (p == 'M') {
            CHECK(cJSON_IsObject(args), "%s: metadata event %zu without args", out, j);
            if (!strcmp(name->valuestring, "process_name")) named_p[nnp++] = (pidtid){P, 0};
            if (!strcmp(name->valuestring, "thread_name")) named_t[nnt++] = (pidtid){P, T};
        } else {
            CHECK(0, "%s: event %zu: unexpected phase %s", out, j, ph->valuestring);
        }
    }
    /* every node once per rank */
    for (size_t i = 0; i < n; i++) {
        CHECK(cp_seen[i] == (xs[i].item.cp ? xs[i].cp.n : 0), "%s: rank %zu: %zu critical-path events, path has %zu",
              out, i, cp_seen[i], xs[i].item.cp ? xs[i].cp.n : 0);
        CHECK(seen_nodes[i] == xs[i].g->n, "%s: rank %zu: %zu nodes written, graph has %zu", out, i, seen_nodes[i],
              xs[i].g->n);
    }
    /* counters: one per bin plus the closing sample */
    size_t want_c = 0;
    for (size_t i = 0; i < n; i++) want_c += xs[i].r.nbins_predicted ? xs[i].r.nbins_predicted + 1 : 0;
    CHECK(ncounter == want_c, "%s: %zu counter events, expected %zu", out, ncounter, want_c);
    /* metadata names every pid and every thread with X events */
    for (size_t i = 0; i < nx; i++) {
        CHECK(has_pt(named_p, nnp, xe[i].pid, 0), "%s: pid %" PRId64 " has no process_name", out, xe[i].pid);
        CHECK(has_pt(named_t, nnt, xe[i].pid, xe[i].tid), "%s: %" PRId64 "/%" PRId64 " has no thread_name", out,
              xe[i].pid, xe[i].tid);
    }
    /* flows: each id exactly one s and one f, f not before s, same name */
    qsort(fl, nf, sizeof *fl, cmp_flow);
    size_t pairs = 0;
    for (size_t i = 0; i < nf;) {
        size_t k = i;
        while (k < nf && fl[k].id == fl[i].id) k++;
        CHECK(k - i == 2 && fl[i].ph == 's' && fl[i + 1].ph == 'f', "%s: flow id %" PRIu64 ": %zu events", out,
              fl[i].id, k - i);
        if (k - i == 2 && fl[i].ph == 's' && fl[i + 1].ph == 'f') {
            pairs++;
            CHECK(fl[i + 1].ts >= fl[i].ts, "%s: flow %" PRIu64 " ends before it starts", out, fl[i].id);
            /* the arrow leaves its source at the source's end (earlier only
             * when the edge's delay is negative) */
            lsim_ns want_s = fl[i].slice_end < fl[i + 1].ts ? fl[i].slice_end : fl[i + 1].ts;
            CHECK(fl[i].ts == want_s, "%s: flow %" PRIu64 " starts at %" PRId64 ", not at its source's end %" PRId64,
                  out, fl[i].id, fl[i].ts, fl[i].slice_end);
            CHECK(!strcmp(fl[i].name, fl[i + 1].name), "%s: flow %" PRIu64 ": names differ", out, fl[i].id);
        }
        i = k;
    }
    {
        uint64_t want_f = 0;
        const cJSON *rk = od ? cJSON_GetObjectItemCaseSensitive(od, "ranks") : NULL;
        for (const cJSON *r = rk ? rk->child : NULL; r; r = r->next) {
            const cJSON *fc = cJSON_GetObjectItemCaseSensitive(r, "flows");
            if (cJSON_IsNumber(fc)) want_f += (uint64_t)fc->valuedouble;
        }
        CHECK(pairs == want_f, "%s: %zu flow pairs, otherData says %" PRIu64, out, pairs, want_f);
        /* a replay with cross-thread dependencies shows some */
        CHECK(pairs > 0, "%s: no flows at all", out);
    }
    /* slices per thread: nested or disjoint, never partially overlapping */
    qsort(xe, nx, sizeof *xe, cmp_xev);
    {
        xev *stack = malloc((nx + 1) * sizeof *stack);
        size_t sp = 0;
        for (size_t i = 0; i < nx; i++) {
            if (i == 0 || xe[i].pid != xe[i - 1].pid || xe[i].tid != xe[i - 1].tid) sp = 0;
            while (sp && stack[sp - 1].end <= xe[i].ts) sp--;
            if (sp && xe[i].end > stack[sp - 1].end) {
                CHECK(0,
                      "%s: on %" PRId64 "/%" PRId64 " event %zu [%" PRId64 ", %" PRId64 "] partially overlaps event %zu [%" PRId64
                      ", %" PRId64 "]",
                      out, xe[i].pid, xe[i].tid, xe[i].idx, xe[i].ts, xe[i].end, stack[sp - 1].idx, stack[sp - 1].ts,
                      stack[sp - 1].end);
            }
            stack[sp++] = xe[i];
        }
        free(stack);
    }
    for (size_t i = 0; i < n; i++) free(node_seen[i]);
    free(node_seen);
    free(seen_nodes);
    free(cp_seen);
    free(named_p);
    free(named_t);
    free(xe);
    free(fl);
    free(line);
    free(lend);
done:
    cJSON_Delete(doc);
    free(txt);
}

/* ------------------------------------------------------------------------ */

static char g_dir[512];

static void make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/lsim_trace_out_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (!lstat(p, &st) && S_ISDIR(st.st_mode)) rm_tree(p);
        else remove(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Names in dir that contain ".tmp-". */
static int count_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    int c = 0;
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".tmp-")) c++;
    closedir(d);
    return c;
}

static int write_and_check(replay *xs, size_t n, const char *stem)
{
    char out[1024];
    lsim_err err = {0};
    lsim_replay_item *items = malloc(n * sizeof *items);
    for (size_t i = 0; i < n; i++) items[i] = xs[i].item;
    for (int gz = 0; gz < 2; gz++) {
        snprintf(out, sizeof out, "%s/%s.json%s", g_dir, stem, gz ? ".gz" : "");
        int rc = lsim_chrome_write(out, items, n, NULL, &err);
        CHECK(rc == 0, "lsim_chrome_write(%s) = %d: %s", out, rc, err.msg);
        if (rc) continue;
        CHECK(count_tmp(g_dir) == 0, "%s: a temporary file was left behind", out);
        check_read_back(out, xs, n);
        if (!gz) check_format(out, xs, n);
        if (gz) { /* really gzip */
            FILE *f = fopen(out, "rb");
            unsigned char m[2] = {0, 0};
            CHECK(f && fread(m, 1, 2, f) == 2 && m[0] == 0x1f && m[1] == 0x8b, "%s: not gzip", out);
            if (f) fclose(f);
        }
    }
    free(items);
    return 0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int cmd_roundtrip(int argc, char **argv)
{
    int require = 0, ran = 0;
    for (int a = 0; a < argc; a++) {
        if (!strcmp(argv[a], "--require")) {
            require = 1;
            continue;
        }
        if (require && access(argv[a], R_OK) != 0) {
            printf("skip: %s not present\n", argv[a]);
            continue;
        }
        replay x;
        if (replay_file(argv[a], &x, 1)) continue;
        char stem[256];
        snprintf(stem, sizeof stem, "%s.predicted", base_name(argv[a]));
        write_and_check(&x, 1, stem);
        /* and without the optional parts: no critical path, no report, no flows */
        x.item.cp = NULL;
        x.item.r = NULL;
        x.item.bind_start = x.item.bind_end = NULL;
        char out[1024];
        lsim_err err = {0};
        snprintf(out, sizeof out, "%s/%s.bare.json", g_dir, stem);
        CHECK(lsim_chrome_write(out, &x.item, 1, NULL, &err) == 0, "%s: %s", out, err.msg);
        check_read_back(out, &x, 1);
        replay_free(&x);
        ran++;
        printf("ok: %s\n", argv[a]);
    }
    return ran ? 0 : SKIP;
}

static int cmd_multirank(int argc, char **argv)
{
    replay *xs = calloc((size_t)argc, sizeof *xs);
    size_t n = 0;
    for (int a = 0; a < argc; a++)
        if (!replay_file(argv[a], &xs[n], 1)) n++;
    if (n == (size_t)argc) write_and_check(xs, n, "multirank");
    for (size_t i = 0; i < n; i++) replay_free(&xs[i]);
    free(xs);
    return 0;
}

/* Names with quotes, backslashes, control characters, non-ASCII and invalid
 * UTF-8; a thread id that wrapped negative; times before zero. */
static int cmd_escape(void)
{
    static const char doc[] =
        "{\"traceEvents\":[\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op \\\"q\\\" back\\\\slash\\nnl\\ttab \\u0001 caf\\u00e9 "
        "\\u6f22 </script>\",\"pid\":7,\"tid\":-5,\"ts\":-20.5,\"dur\":30},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":7,\"tid\":-5,\"ts\":-12.25,"
        "\"dur\":3,\"args\":{\"correlation\":7}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k<\\\"x\\\">\\\\ \\u001f\",\"pid\":0,\"tid\":7,\"ts\":-4.001,"
        "\"dur\":4.002,\"args\":{\"device\":0,\"stream\":7,\"correlation\":7}}\n"
        "]}\n";
    lsim_trace *t = NULL;
    lsim_err err = {0};
    int rc = lsim_trace_read_mem("escape", doc, sizeof doc - 1, &t, &err);
    CHECK(rc == 0, "reading the escape document: %s", err.msg);
    if (rc) return 0;
    replay x;
    if (replay_trace(t, &x, 1)) return 0;
    int neg = 0;
    for (size_t v = 0; v < x.g->n; v++) neg |= x.item.start[v] < 0;
    CHECK(neg, "escape: expected a node starting before 0");
    write_and_check(&x, 1, "escape");
    replay_free(&x);
    return 0;
}

static int cmd_atomic(const char *trace)
{
    replay x;
    if (replay_file(trace, &x, 1)) return 0;
    lsim_err err = {0};
    char p[2048], dir[1024], keep[2100];
    /* 1. a directory that does not exist: EIO naming the path, nothing made */
    for (int gz = 0; gz < 2; gz++) {
        snprintf(dir, sizeof dir, "%s/no_such_dir", g_dir);
        snprintf(p, sizeof p, "%s/out.json%s", dir, gz ? ".gz" : "");
        memset(&err, 0, sizeof err);
        int rc = lsim_chrome_write(p, &x.item, 1, NULL, &err);
        CHECK(rc == LSIM_EIO, "writing into a missing directory returned %d", rc);
        CHECK(!strncmp(err.msg, p, strlen(p)) && strstr(err.msg, "cannot write"), "message: %s", err.msg);
        CHECK(access(dir, F_OK) != 0, "%s was created", dir);
        CHECK(count_tmp(g_dir) == 0, "temporary file left in %s", g_dir);
    }
    /* 2. an existing file is replaced, and no temporary file remains */
    snprintf(p, sizeof p, "%s/out.json", g_dir);
    FILE *f = fopen(p, "w");
    fputs("old contents\n", f);
    fclose(f);
    CHECK(lsim_chrome_write(p, &x.item, 1, NULL, &err) == 0, "overwrite: %s", err.msg);
    size_t len = 0;
    char *txt = slurp(p, &len);
    CHECK(txt && !strncmp(txt, "{\"traceEvents\":[", 16) && len > 100 && txt[len - 1] == '\n', "overwrite: new file");
    free(txt);
    CHECK(count_tmp(g_dir) == 0, "temporary file left after success");
    /* 3. the rename fails (PATH is a directory): EIO, the temporary file is
     *    removed and PATH is untouched */
    snprintf(p, sizeof p, "%s/is_a_dir.json", g_dir);
    mkdir(p, 0755);
    snprintf(keep, sizeof keep, "%s/keep", p);
    f = fopen(keep, "w");
    if (f) fclose(f);
    memset(&err, 0, sizeof err);
    CHECK(lsim_chrome_write(p, &x.item, 1, NULL, &err) == LSIM_EIO, "writing over a directory: %s", err.msg);
    CHECK(strstr(err.msg, "cannot write") != NULL, "message: %s", err.msg);
    CHECK(count_tmp(g_dir) == 0, "temporary file left after a failed rename");
    CHECK(access(keep, F_OK) == 0, "the directory's contents were touched");
    /* 4. a write error (a full device), where the system has one: the error
     *    must be seen at write or close time, not ignored. /dev/full cannot
     *    hold a temporary file next to it, so this is only reported. */
    /* 5. bad arguments */
    {
        lsim_replay_item bad = x.item;
        bad.start = NULL;
        snprintf(p, sizeof p, "%s/bad.json", g_dir);
        CHECK(lsim_chrome_write(p, &bad, 1, NULL, &err) == LSIM_EARG, "no simulated times: %s", err.msg);
        CHECK(access(p, F_OK) != 0, "a file was written for bad arguments");
        CHECK(lsim_chrome_write(NULL, &x.item, 1, NULL, &err) == LSIM_EARG, "NULL path");
    }
    /* 6. zero ranks: an empty but valid document */
    snprintf(p, sizeof p, "%s/empty.json", g_dir);
    CHECK(lsim_chrome_write(p, NULL, 0, NULL, &err) == 0, "zero ranks: %s", err.msg);
    txt = slurp(p, &len);
    cJSON *doc = txt ? cJSON_Parse(txt) : NULL;
    CHECK(doc && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "traceEvents")) &&
              cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "traceEvents")) == 0,
          "zero ranks: not an empty trace");
    cJSON_Delete(doc);
    free(txt);
    replay_free(&x);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_trace_out roundtrip|multirank|escape|atomic ...\n");
        return 2;
    }
    make_tmpdir();
    int rc = 0;
    if (!strcmp(argv[1], "roundtrip")) rc = cmd_roundtrip(argc - 2, argv + 2);
    else if (!strcmp(argv[1], "multirank")) rc = cmd_multirank(argc - 2, argv + 2);
    else if (!strcmp(argv[1], "escape")) rc = cmd_escape();
    else if (!strcmp(argv[1], "atomic") && argc == 3) rc = cmd_atomic(argv[2]);
    else {
        fprintf(stderr, "test_trace_out: unknown command %s\n", argv[1]);
        rc = 2;
    }
    if (!getenv("LSIM_KEEP_TMP")) rm_tree(g_dir);
    else printf("outputs kept in %s\n", g_dir);
    if (failures) {
        fprintf(stderr, "test_trace_out %s: %d check(s) failed\n", argv[1], failures);
        return 1;
    }
    if (rc == SKIP) return SKIP;
    printf("test_trace_out %s: all checks passed\n", argv[1]);
    return rc;
}
