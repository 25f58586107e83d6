/* Cost-model calibration from traces and nccl-tests output (see
 * include/lumosim/calibrate.h and docs/cost-models.md, "Calibration"). */
#include "lumosim/calibrate.h"
#include "lumosim/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lumosim/text.h"
#include "util.h"

/* A launch call may poke out of its op by float rounding of ts (0.25 us at
 * 1.7e15 us); nest with this tolerance, as the graph build does. */
#define NEST_TOL_NS 1000

typedef struct gemm_pt {
    int64_t batch, m, n, k;
    double flops;
    double ns;
    int eb;
} gemm_pt;

/* A memory-bound op: bytes read and written, its kernels' time. */
typedef struct mem_pt {
    uint32_t name; /* index into lsim_calib.memops */
    double bytes, ns;
} mem_pt;

/* An Optimizer.step annotation: its CPU time and the launch calls in it. */
typedef struct opt_pt {
    lsim_ns dur, launch_ns;
    size_t launches;
} opt_pt;

typedef struct coll_pt {
    uint8_t kind;
    uint8_t src; /* LSIM_CALIB_SRC_JOB or _MIN */
    int32_t n;
    int64_t bytes;
    lsim_ns ns;
} coll_pt;

struct lsim_calib {
    size_t traces;
    gemm_pt *gemm;
    size_t ngemm, capgemm;
    size_t gemm_ops, gemm_ops_launched, gemm_kernels, gemm_skipped_shape;
    lsim_ns *kern;
    size_t nkern, capkern;
    lsim_ns *launch;
    size_t nlaunch, caplaunch;
    lsim_ns *lat;
    size_t nlat;
    uint64_t lat_samples;
    coll_pt *coll;
    size_t ncoll, capcoll;
    lsim_calib_coll *nccl;
    size_t nnccl;
    mem_pt *mem;
    size_t nmem, capmem;
    lsim_calib_memop memops[LSIM_CALIB_MEMNAMES];
    size_t nmemops;
    lsim_ns *gaps, *steps;
    size_t ngaps, capgaps, nsteps, capsteps;
    lsim_ns *gapcall;  /* per gap: the duration of the launch call after it */
    size_t capgapcall;
    opt_pt *opts;
    size_t nopts, capopts;
    /* results of the last fit */
    lsim_calib_shape *shapes;
    size_t nshapes;
    lsim_calib_coll *fits;
    size_t nfits;
};

int lsim_calib_new(lsim_calib **out, lsim_err *err)
{
    *out = lsim_calloc(1, sizeof **out);
    return *out ? 0 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
}

void lsim_calib_free(lsim_calib *c)
{
    if (!c) return;
    free(c->gemm);
    free(c->kern);
    free(c->launch);
    free(c->lat);
    free(c->coll);
    free(c->nccl);
    free(c->mem);
    free(c->gaps);
    free(c->gapcall);
    free(c->steps);
    free(c->opts);
    free(c->shapes);
    free(c->fits);
    free(c);
}

/* ------------------------------------------------------------ GEMM FLOPs */

static int64_t prod(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (d[i] < 0 || (d[i] > 0 && p > INT64_MAX / d[i])) return -1;
        p *= d[i];
    }
    return p;
}

/* [..., M, K] x [..., K, N] with numpy broadcasting of the batch dims
 * (1-D operands: a vector, M or N = 1). */
static int matmul_shape(const int64_t *a, int na, const int64_t *b, int nb, int64_t *batch, int64_t *m, int64_t *n,
                        int64_t *k)
{
    if (na < 1 || nb < 1) return -1;
    int64_t ka = a[na - 1], mm = na >= 2 ? a[na - 2] : 1;
    int64_t kb = nb >= 2 ? b[nb - 2] : b[0], nn = nb >= 2 ? b[nb - 1] : 1;
    if (ka != kb) return -1;
    int ba = na > 2 ? na - 2 : 0, bb = nb > 2 ? nb - 2 : 0;
    int nbatch = ba > bb ? ba : bb;
    int64_t p = 1;
    for (int i = 0; i < nbatch; i++) { /* aligned from the right */
        int64_t x = i < ba ? a[ba - 1 - i] : 1, y = i < bb ? b[bb - 1 - i] : 1;
        if (x != y && x != 1 && y != 1) return -1;
        int64_t d = x > y ? x : y;
        if (d > 0 && p > INT64_MAX / d) return -1;
        p *= d;
    }
    *batch = p;
    *m = mm;
    *n = nn;
    *k = ka;
    return 0;
}

int lsim_calib_gemm_flops(const char *opname, const lsim_gemm_op *op, int64_t *batch, int64_t *m, int64_t *n,
                          int64_t *k, double *flops)
{
    if (!opname || strncmp(opname, "aten::", 6) != 0) return -1;
    const char *s = opname + 6;
    const int8_t *nd = op->ndims;
    int rc = -1;
    *batch = 1;
    if (!strcmp(s, "mm") || !strcmp(s, "addmm")) {
        int i = s[0] == 'a'; /* addmm(bias, A, B) */
        if (nd[i] == 2 && nd[i + 1] == 2 && op->dims[i][1] == op->dims[i + 1][0]) {
            *m = op->dims[i][0];
            *k = op->dims[i][1];
            *n = op->dims[i + 1][1];
            rc = 0;
        }
    } else if (!strcmp(s, "bmm") || !strcmp(s, "baddbmm")) {
        int i = s[0] == 'b' && s[1] == 'a'; /* baddbmm(input, A, B) */
        const int64_t *a = op->dims[i], *b = op->dims[i + 1];
        if (nd[i] == 3 && nd[i + 1] == 3 && a[0] == b[0] && a[2] == b[1]) {
            *batch = a[0];
            *m = a[1];
            *k = a[2];
            *n = b[2];
            rc = 0;
        }
    } else if (!strcmp(s, "matmul")) {
        rc = matmul_shape(op->dims[0], nd[0], op->dims[1], nd[1], batch, m, n, k);
    } else if (!strcmp(s, "linear")) {
        /* input [..., K], weight [N, K] (or [K]): y = x W^T */
        if (nd[0] >= 1 && (nd[1] == 2 || nd[1] == 1)) {
            int64_t kk = op->dims[0][nd[0] - 1];
            int64_t wk = nd[1] == 2 ? op->dims[1][1] : op->dims[1][0];
            int64_t rows = prod(op->dims[0], nd[0] - 1);
            if (kk == wk && rows >= 0) {
                *m = rows;
                *k = kk;
                *n = nd[1] == 2 ? op->dims[1][0] : 1;
                rc = 0;
            }
        }
    }
    if (rc) return -1;
    double f = 2.0 * (double)*batch * (double)*m * (double)*n * (double)*k;
    if (!(f > 0) || !isfinite(f)) return -1;
    *flops = f;
    return 0;
}

/* ------------------------------------------------------------ one trace */

typedef struct corr_ent {
    int64_t corr;
    size_t ev;
} corr_ent;

static int cmp_corr(const void *a, const void *b)
{
    const corr_ent *x = a, *y = b;
    return x->corr < y->corr ? -1 : x->corr > y->corr ? 1 : (x->ev > y->ev) - (x->ev < y->ev);
}

/* CPU ops and launch calls of one thread, in sweep order. */
typedef struct sweep_ent {
    lsim_ns ts, end;
    uint32_t row;
    uint8_t is_call; /* 0 op, 1 runtime call */
    size_t ev;
} sweep_ent;

static int cmp_sweep(const void *a, const void *b)
{
    const sweep_ent *x = a, *y = b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    if (x->is_call != y->is_call) return x->is_call - y->is_call; /* ops open first */
    if (x->end != y->end) return x->end > y->end ? -1 : 1;         /* outer first */
    return (x->ev > y->ev) - (x->ev < y->ev);
}

static int is_launch_name(const char *s) { return s && strstr(s, "LaunchKernel") != NULL; }

/* The ops of the side table that are GEMMs; the others are memory-bound. */
static int is_gemm_name(const char *s)
{
    static const char *const G[] = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear"};
    for (size_t i = 0; i < sizeof G / sizeof *G; i++)
        if (!strcmp(s, G[i])) return 1;
    return 0;
}

/* Bytes a memory-bound op reads and writes: its inputs once, and an output
 * of its first input's shape (aten::copy_(dst, src): src read, dst
 * written). -1 when a shape or the element size is unknown. */
static double mem_bytes(const char *nm, const lsim_gemm_op *op)
{
    if (op->elem_bytes <= 0 || op->ndims[0] < 0) return -1;
    double sum = 0, first = 0;
    for (int i = 0; i < LSIM_GEMM_MAX_TENSORS; i++) {
        if (op->ndims[i] < 0) continue;
        int64_t p = prod(op->dims[i], op->ndims[i]);
        if (p < 0) return -1;
        if (i == 0) first = (double)p;
        sum += (double)p;
    }
    if (!strcmp(nm, "aten::copy_")) sum = first;
    return (sum + first) * op->elem_bytes;
}

/* A memory-bound op whose kernels took less is latency-bound: the roofline
 * gives such kernels kernel_min_ns, so they say nothing about bandwidth. */
#define MEM_MIN_NS 10000.0

static int push_ns(lsim_ns **v, size_t *n, size_t *cap, lsim_ns x)
{
    if (LSIM_GROW(*v, cap, *n + 1)) return LSIM_ENOMEM;
    (*v)[(*n)++] = x;
    return 0;
}

/* Launch calls, blocking calls and annotations of one thread, by time. */
typedef struct host_ent {
    uint32_t row;
    lsim_ns ts, end;
    uint8_t what; /* 0 launch, 1 blocking call, 2 data loader, 3 optimizer step */
} host_ent;

static int cmp_host(const void *a, const void *b)
{
    const host_ent *x = a, *y = b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (int)y->what - (int)x->what; /* annotations before the calls they contain */
}

/* Host time of one trace: the gaps between consecutive launch calls of a
 * thread with no blocking call between them (framework dispatch, and the
 * stalls of its long tail), the data loader's annotations, and each
 * optimizer step's CPU time with the launch calls it contains. */
static int add_host(lsim_calib *c, const lsim_trace *t)
{
    host_ent *h = lsim_malloc((t->nev ? t->nev : 1) * sizeof *h);
    size_t n = 0;
    if (!h) return LSIM_ENOMEM;
    /* the annotations live on the main thread; attribute launches to an
     * optimizer step by time on any thread of its process */
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        const char *nm = lsim_strtab_get(t->strings, e->name);
        uint8_t w = 255;
        if (e->kind == LSIM_EV_RUNTIME && is_launch_name(nm)) w = 0;
        else if (e->kind == LSIM_EV_RUNTIME && nm && (strstr(nm, "Synchronize") || !strcmp(nm, "cudaMemcpy") ||
                                                      !strcmp(nm, "hipMemcpy") || strstr(nm, "MemcpyWithStream")))
            w = 1;
        else if ((e->kind == LSIM_EV_ANNOTATION || e->kind == LSIM_EV_CPU_OP) && nm &&
                 !strncmp(nm, "enumerate(DataLoader)", 21))
            w = 2;
        else if ((e->kind == LSIM_EV_ANNOTATION || e->kind == LSIM_EV_CPU_OP) && nm && !strncmp(nm, "Optimizer.step#", 15))
            w = 3;
        if (w != 255) h[n++] = (host_ent){e->row, e->ts, e->ts + e->dur, w};
    }
    qsort(h, n, sizeof *h, cmp_host);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (h[i].what == 2) rc = push_ns(&c->steps, &c->nsteps, &c->capsteps, h[i].end - h[i].ts);
        if (h[i].what == 3) {
            opt_pt o = {h[i].end - h[i].ts, 0, 0};
            for (size_t j = i + 1; j < n && h[j].row == h[i].row && h[j].ts < h[i].end; j++)
                if (h[j].what == 0) o.launches++, o.launch_ns += h[j].end - h[j].ts;
            if (LSIM_GROW(c->opts, &c->capopts, c->nopts + 1)) rc = LSIM_ENOMEM;
            else c->opts[c->nopts++] = o;
        }
    }
    for (size_t i = 0, prev = SIZE_MAX; i < n && !rc; i++) {
        if (prev != SIZE_MAX && h[prev].row != h[i].row) prev = SIZE_MAX;
        if (h[i].what == 1) prev = SIZE_MAX; /* waiting for the GPU is not host work */
        if (h[i].what != 0) continue;
        if (prev != SIZE_MAX && h[i].ts >= h[prev].end) {
            size_t n0 = c->ngaps;
            rc = push_ns(&c->gaps, &c->ngaps, &c->capgaps, h[i].ts - h[prev].end);
            if (!rc) rc = push_ns(&c->gapcall, &n0, &c->capgapcall, h[i].end - h[i].ts);
        }
        prev = i;
    }
    free(h);
    return rc;
}

int lsim_calib_add_trace(lsim_calib *c, const lsim_trace *t, lsim_err *err)
{
    int rc = 0;
    corr_ent *calls = NULL;
    sweep_ent *sw = NULL;
    size_t *owner = NULL;   /* per runtime event: innermost CPU op event + 1, 0 none */
    size_t *stack = NULL;
    double *op_ns = NULL;   /* per GEMM op: summed kernel time */
    uint32_t *op_kern = NULL;
    size_t ncalls = 0, nsw = 0;
    if (!t->ev || !t->strings) return lsim_err_set(err, LSIM_EARG, "%s: trace has no events to calibrate from", t->path);
    c->traces++;
    calls = lsim_malloc((t->nev ? t->nev : 1) * sizeof *calls);
    sw = lsim_malloc((t->nev ? t->nev : 1) * sizeof *sw);
    owner = lsim_calloc(t->nev ? t->nev : 1, sizeof *owner);
    stack = lsim_malloc((t->nev ? t->nev : 1) * sizeof *stack);
    op_ns = lsim_calloc(t->ngemm ? t->ngemm : 1, sizeof *op_ns);
    op_kern = lsim_calloc(t->ngemm ? t->ngemm : 1, sizeof *op_kern);
    if (!calls || !sw || !owner || !stack || !op_ns || !op_kern) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        if (e->kind == LSIM_EV_RUNTIME) {
            if (e->corr >= 0) calls[ncalls++] = (corr_ent){e->corr, i};
            sw[nsw++] = (sweep_ent){e->ts, e->ts + e->dur, e->row, 1, i};
        } else if (e->kind == LSIM_EV_CPU_OP) {
            sw[nsw++] = (sweep_ent){e->ts, e->ts + e->dur, e->row, 0, i};
        }
    }
    qsort(calls, ncalls, sizeof *calls, cmp_corr);
    qsort(sw, nsw, sizeof *sw, cmp_sweep);
    /* innermost op containing each call: a stack of open ops per thread */
    size_t depth = 0;
    for (size_t i = 0; i < nsw; i++) {
        const sweep_ent *s = &sw[i];
        if (i == 0 || sw[i - 1].row != s->row) depth = 0;
        while (depth && sw[stack[depth - 1]].end + NEST_TOL_NS < s->ts) depth--;
        if (!s->is_call) {
            stack[depth++] = i;
            continue;
        }
        for (size_t d = depth; d > 0; d--) {
            const sweep_ent *o = &sw[stack[d - 1]];
            if (o->ts <= s->ts + NEST_TOL_NS && s->end <= o->end + NEST_TOL_NS) {
                owner[s->ev] = o->ev + 1;
                break;
            }
        }
    }
    /* kernels: durations, launch calls, attribution */
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        if (e->kind != LSIM_EV_KERNEL) continue;
        int is_coll = e->coll >= 0 && t->colls[e->coll].kind != LSIM_COLL_NONE;
        if (!is_coll && e->dur > 0) {
            if (LSIM_GROW(c->kern, &c->capkern, c->nkern + 1)) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
            goto cleanup;
        }
            c->kern[c->nkern++] = e->dur;
        }
        if (e->corr < 0 || !ncalls) continue;
        size_t lo = 0, hi = ncalls;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (calls[mid].corr < e->corr) lo = mid + 1;
            else hi = mid;
        }
        if (lo == ncalls || calls[lo].corr != e->corr) continue;
        size_t call = calls[lo].ev;
        if (is_coll || !owner[call] || !t->ngemm) continue;
        size_t op = owner[call] - 1;
        size_t a = 0, b = t->ngemm; /* gemms are in event order */
        while (a < b) {
            size_t mid = (a + b) / 2;
            if (t->gemms[mid].ev < op) a = mid + 1;
            else b = mid;
        }
        if (a == t->ngemm || t->gemms[a].ev != op) continue;
        op_ns[a] += (double)e->dur;
        op_kern[a]++;
    }
    /* launch calls that launched a kernel */
    for (size_t i = 0; i < ncalls; i++) {
        const lsim_event *e = &t->ev[calls[i].ev];
        if (!is_launch_name(lsim_strtab_get(t->strings, e->name)) || e->dur <= 0) continue;
        if (LSIM_GROW(c->launch, &c->caplaunch, c->nlaunch + 1)) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
            goto cleanup;
        }
        c->launch[c->nlaunch++] = e->dur;
    }
    for (size_t g = 0; g < t->ngemm; g++) {
        const char *gn = lsim_strtab_get(t->strings, t->gemms[g].name);
        if (!strcmp(gn, LSIM_ACCUMULATE_GRAD)) continue; /* a gradient's size, not a kernel cost */
        if (!is_gemm_name(gn)) {
            /* a memory-bound op */
            double bytes = mem_bytes(gn, &t->gemms[g]);
            if (!op_kern[g] || !(bytes > 0) || op_ns[g] < MEM_MIN_NS) continue;
            size_t k = 0;
            while (k < c->nmemops && strcmp(c->memops[k].name, gn)) k++;
            if (k == c->nmemops) {
                if (k == LSIM_CALIB_MEMNAMES) continue;
                snprintf(c->memops[c->nmemops++].name, sizeof c->memops[0].name, "%s", gn);
            }
            if (LSIM_GROW(c->mem, &c->capmem, c->nmem + 1)) {
                rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
                goto cleanup;
            }
            c->mem[c->nmem++] = (mem_pt){(uint32_t)k, bytes, op_ns[g]};
            continue;
        }
        c->gemm_ops++;
        if (!op_kern[g]) continue;
        c->gemm_ops_launched++;
        c->gemm_kernels += op_kern[g];
        gemm_pt p = {0};
        const char *nm = lsim_strtab_get(t->strings, t->gemms[g].name);
        if (lsim_calib_gemm_flops(nm, &t->gemms[g], &p.batch, &p.m, &p.n, &p.k, &p.flops) || !(op_ns[g] > 0)) {
            c->gemm_skipped_shape++;
            continue;
        }
        p.ns = op_ns[g];
        p.eb = t->gemms[g].elem_bytes;
        if (LSIM_GROW(c->gemm, &c->capgemm, c->ngemm + 1)) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
            goto cleanup;
        }
        c->gemm[c->ngemm++] = p;
    }
    if (add_host(c, t)) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
cleanup:
    free(calls);
    free(sw);
    free(owner);
    free(stack);
    free(op_ns);
    free(op_kern);
    return rc;
}

void lsim_calib_add_graph_latency(lsim_calib *c, const lsim_graph *g)
{
    if (!g->launch_samples || g->launch_latency_ns <= 0) return;
    lsim_ns *n = lsim_realloc(c->lat, (c->nlat + 1) * sizeof *n);
    if (!n) return; /* the latency keeps the base value; reported as 0 traces */
    c->lat = n;
    c->lat[c->nlat++] = g->launch_latency_ns;
    c->lat_samples += g->launch_samples;
}

/* ----------------------------------------------------------- collectives */

static int push_coll(lsim_calib *c, int kind, int32_t n, int64_t bytes, lsim_ns ns, int src, lsim_err *err)
{
    if (kind == LSIM_COLL_NONE || bytes <= 0 || ns <= 0) return 0;
    if (LSIM_GROW(c->coll, &c->capcoll, c->ncoll + 1))
        return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    c->coll[c->ncoll++] = (coll_pt){(uint8_t)kind, (uint8_t)src, n, bytes, ns};
    return 0;
}

int lsim_calib_add_job(lsim_calib *c, const lsim_job *j, lsim_err *err)
{
    for (size_t k = 0; k < j->ninst; k++) {
        uint64_t p0 = j->part_off[k], p1 = j->part_off[k + 1];
        if (p1 <= p0) continue;
        const lsim_graph *g = j->graphs ? j->graphs[j->part_gpu[p0]] : NULL;
        if (!g) continue;
        uint32_t v = j->part_node[p0];
        if (g->coll[v] < 0) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        int rc = push_coll(c, ci->kind, (int32_t)(p1 - p0), ci->bytes, j->transfer[k], LSIM_CALIB_SRC_JOB, err);
        if (rc) return rc;
    }
    return 0;
}

int lsim_calib_add_graph_colls(lsim_calib *c, const lsim_graph *g, lsim_err *err)
{
    for (size_t v = 0; v < g->n; v++) {
        if (!(g->flags[v] & LSIM_NF_COLL) || g->coll[v] < 0 || g->kind[v] != LSIM_N_KERNEL) continue;
        const lsim_coll_info *ci = &g->colls[g->coll[v]];
        int rc = push_coll(c, ci->kind, ci->group_size, ci->bytes, g->obs_end[v] - g->obs_start[v], LSIM_CALIB_SRC_MIN,
                           err);
        if (rc) return rc;
    }
    return 0;
}

int lsim_calib_add_nccl_fit(lsim_calib *c, const lsim_coll_fit *f, const char *label, lsim_err *err)
{
    lsim_calib_coll *n = lsim_realloc(c->nccl, (c->nnccl + 1) * sizeof *n);
    if (!n) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    c->nccl = n;
    lsim_calib_coll *x = &n[c->nnccl++];
    memset(x, 0, sizeof *x);
    x->fit = *f;
    x->nranks = f->nranks;
    x->src = LSIM_CALIB_SRC_NCCL_TESTS;
    snprintf(x->label, sizeof x->label, "%s", label ? label : "");
    return 0;
}

static int cmp_coll(const void *a, const void *b)
{
    const coll_pt *x = a, *y = b;
    if (x->src != y->src) return x->src - y->src;
    if (x->kind != y->kind) return x->kind - y->kind;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
    return (x->ns > y->ns) - (x->ns < y->ns);
}

/* Fits per (source, kind, group size) into c->fits (nccl-tests fits after). */
static int fit_colls(lsim_calib *c, lsim_err *err)
{
    free(c->fits);
    c->fits = NULL;
    c->nfits = 0;
    if (c->ncoll) qsort(c->coll, c->ncoll, sizeof *c->coll, cmp_coll);
    double *x = lsim_malloc((c->ncoll ? c->ncoll : 1) * sizeof *x), *y = lsim_malloc((c->ncoll ? c->ncoll : 1) * sizeof *y);
    c->fits = lsim_calloc(c->ncoll + c->nnccl + 1, sizeof *c->fits);
    int rc = 0;
    if (!x || !y || !c->fits) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < c->ncoll;) {
        size_t j = i, np = 0;
        while (j < c->ncoll && c->coll[j].src == c->coll[i].src && c->coll[j].kind == c->coll[i].kind &&
               c->coll[j].n == c->coll[i].n) {
            /* unmatched: only the shortest per size (sorted first) */
            if (c->coll[j].src == LSIM_CALIB_SRC_MIN && j > i && c->coll[j].bytes == c->coll[j - 1].bytes) {
                j++;
                continue;
            }
            x[np] = (double)c->coll[j].bytes;
            y[np] = (double)c->coll[j].ns;
            np++;
            j++;
        }
        lsim_coll_fit f;
        lsim_err ferr = {0};
        /* a fit outside the bandwidths a link can have (constant times:
         * 1e44 B/s) is no fit, as one that fails */
        if (np >= 2 && lsim_cost_fit_alpha_beta(x, y, np, &f, &ferr) == 0 && f.beta_bytes_per_s >= LSIM_FIT_BW_MIN &&
            f.beta_bytes_per_s <= LSIM_FIT_BW_MAX) {
            lsim_calib_coll *o = &c->fits[c->nfits++];
            memset(o, 0, sizeof *o);
            o->fit = f;
            o->fit.kind = c->coll[i].kind;
            o->fit.nranks = c->coll[i].n;
            o->nranks = c->coll[i].n;
            o->src = (lsim_calib_src)c->coll[i].src;
        }
        i = j;
    }
    for (size_t i = 0; i < c->nnccl; i++) c->fits[c->nfits++] = c->nccl[i];
cleanup:
    free(x);
    free(y);
    return rc;
}

/* ------------------------------------------------------------------- fit */

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_gemm(const void *a, const void *b)
{
    const gemm_pt *x = a, *y = b;
    if (x->eb != y->eb) return x->eb - y->eb;
    if (x->flops != y->flops) return x->flops < y->flops ? -1 : 1;
    if (x->batch != y->batch) return x->batch < y->batch ? -1 : 1;
    if (x->m != y->m) return x->m < y->m ? -1 : 1;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    if (x->k != y->k) return x->k < y->k ? -1 : 1;
    return (x->ns > y->ns) - (x->ns < y->ns);
}

/* The median of v[0..n) (sorted in place; n > 0), the two middle values
 * averaged when n is even: not util.h's lsim_median_i64, which takes the
 * upper one. The calibration's figures (gaps, steps, launch costs) are this
 * statistic, as the GEMM shapes' medians below are. */
static lsim_ns median_ns(lsim_ns *v, size_t n)
{
    qsort(v, n, sizeof *v, lsim_ns_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int same_shape(const gemm_pt *a, const gemm_pt *b)
{
    return a->eb == b->eb && a->batch == b->batch && a->m == b->m && a->n == b->n && a->k == b->k;
}

/* The tile-and-wave GEMM model (base has sms): t = waves x (main / eff +
 * tile) + reduction is linear in u = 1 / eff and the tile's fixed time once
 * each shape's tile is chosen, and the choice depends on them: alternate
 * the choice and a relative least-squares fit until the choice stays.
 * One shape, or a fit whose fixed time comes out <= 0, cannot constrain
 * the fixed time: it keeps the base value and eff alone is fitted. */
static int fit_waves(lsim_calib *c, const lsim_gpu_spec *base, int eb, lsim_gpu_spec *g, lsim_calib_report *r,
                     const char *label, lsim_err *err)
{
    double u = 1 / base->gemm_eff_max, fix = base->gemm_tile_ns > 0 ? (double)base->gemm_tile_ns : 3000;
    int mode = 4;
    for (int it = 0; it < 50; it++) {
        lsim_gpu_spec t = *base;
        t.gemm_eff_max = u > 1 ? 1 / u : 1;
        t.gemm_tile_ns = (lsim_ns)llround(fix);
        double spp = 0, spq = 0, sqq = 0, spy = 0, sqy = 0;
        size_t nx = 0;
        for (size_t i = 0; i < c->nshapes; i++) {
            const lsim_calib_shape *s = &c->shapes[i];
            double w, m1, red;
            if (s->memory_bound ||
                lsim_cost_gemm_waves(&t, (double)s->batch, (double)s->m, (double)s->n, (double)s->k, eb, &w, &m1, &red))
                continue;
            double wt = 1 / (s->median_ns * s->median_ns), p = w * m1, q = w, y = s->median_ns - red;
            spp += wt * p * p, spq += wt * p * q, sqq += wt * q * q, spy += wt * p * y, sqy += wt * q * y;
            nx++;
        }
        double det = spp * sqq - spq * spq, nu = u, nf = fix;
        mode = 4;
        if (nx >= 2 && det > 1e-12 * spp * sqq) {
            nu = (spy * sqq - sqy * spq) / det;
            nf = (spp * sqy - spq * spy) / det;
        }
        if (nx < 2 || !(det > 1e-12 * spp * sqq) || !(nf > 0)) {
            mode = 3;
            nf = base->gemm_tile_ns > 0 ? (double)base->gemm_tile_ns : 0;
            nu = spp > 0 ? (spy - nf * spq) / spp : 0;
        }
        int same = fabs(nu - u) <= 1e-9 * fabs(u) && fabs(nf - fix) <= 1e-6;
        u = nu, fix = nf;
        if (same) break;
    }
    double emax = u > 0 ? 1 / u : 0;
    if (emax > 1) {
        emax = 1;
        r->gemm_clamped = 1;
    }
    if (!(emax > 0) || !isfinite(emax) || !(fix >= 0) || fix > 1e6)
        return lsim_err_set(err, LSIM_ETRACE, "%s: the GEMM fit failed (efficiency %g, tile time %g ns)", label, emax, fix);
    g->gemm_eff_max = emax;
    g->gemm_tile_ns = (lsim_ns)llround(fix);
    r->gemm_mode = mode;
    return 0;
}

/* mem_eff: the memory-bound ops' bytes over their time, against the base
 * spec's bandwidth (a time-weighted mean: the fit reproduces their total
 * time). Fewer than 10 ops, or under 1 ms of them, cannot constrain it. */
static void fit_mem(lsim_calib *c, const lsim_gpu_spec *base, lsim_gpu_spec *g, lsim_calib_report *r)
{
    double bytes = 0, ns = 0;
    for (size_t k = 0; k < c->nmemops; k++) c->memops[k].count = 0, c->memops[k].bytes = c->memops[k].ns = 0;
    for (size_t i = 0; i < c->nmem; i++) {
        lsim_calib_memop *o = &c->memops[c->mem[i].name];
        o->count++, o->bytes += c->mem[i].bytes, o->ns += c->mem[i].ns;
        bytes += c->mem[i].bytes, ns += c->mem[i].ns;
    }
    r->mem_ops = c->nmem;
    memcpy(r->memops, c->memops, sizeof r->memops);
    r->nmemops = c->nmemops;
    if (c->nmem < 10 || ns < 1e6 || !(base->mem_bw > 0)) return;
    double e = bytes / (ns * 1e-9 * base->mem_bw);
    g->mem_eff = e > 1 ? 1 : e;
    r->mem_fitted = 1;
}

/* Host time (lsim_calib_fit's comment): at least 20 gaps for the dispatch,
 * 100 for the stalls. A stall is counted over the gap and the launch call
 * after it: the thread loses its core inside a call as often as between
 * calls (the shared A100 trace's launch calls: median 11 us, mean 26 to 87
 * us per rank, 16 to 57 ms per step), and the synthesized launch node
 * (dispatch + call, synth) is where the stall is put back, so its length
 * is the interval's excess over host_dispatch_ns + launch_cpu_ns. g's
 * launch_cpu_ns is final (fitted or kept) when this runs. */
static void fit_host(lsim_calib *c, lsim_gpu_spec *g, lsim_calib_report *r)
{
    r->host_gaps = c->ngaps;
    if (c->ngaps >= 20) {
        double sum = 0;
        for (size_t i = 0; i < c->ngaps; i++) sum += (double)c->gaps[i];
        r->host_gap_mean_ns = (lsim_ns)llround(sum / (double)c->ngaps);
        /* the median of a copy: gaps[i] stays paired with gapcall[i] */
        lsim_ns *v = lsim_malloc(c->ngaps * sizeof *v);
        if (!v) return;
        memcpy(v, c->gaps, c->ngaps * sizeof *v);
        lsim_ns med = median_ns(v, c->ngaps);
        free(v);
        g->host_dispatch_ns = med;
        r->dispatch_fitted = 1;
        if (c->ngaps >= 100) {
            double ex = 0, ex2 = 0;
            size_t ns = 0;
            for (size_t i = 0; i < c->ngaps; i++) {
                lsim_ns x = c->gaps[i] + c->gapcall[i] - g->launch_cpu_ns - med;
                if (x > 9 * med) {
                    ns++, ex += (double)x, ex2 += (double)x * (double)x;
                }
            }
            g->host_stall_prob = (double)ns / (double)c->ngaps;
            g->host_stall_ns = ns ? (lsim_ns)llround(ex / (double)ns) : 0;
            double var = ns > 1 ? (ex2 - ex * ex / (double)ns) / (double)(ns - 1) : 0;
            g->host_stall_sd_ns = var > 0 ? (lsim_ns)llround(sqrt(var)) : 0;
            if (!ns) g->host_stall_prob = 0;
            r->host_stalls = ns;
            r->stall_fitted = 1;
        }
    }
    if (c->nsteps) {
        g->host_step_ns = median_ns(c->steps, c->nsteps);
        r->host_steps = c->nsteps;
        r->step_fitted = 1;
    }
    if (c->nopts) {
        lsim_ns *v = lsim_malloc(c->nopts * sizeof *v);
        if (!v) return;
        for (size_t i = 0; i < c->nopts; i++) {
            const opt_pt *o = &c->opts[i];
            lsim_ns x = o->dur - o->launch_ns - (lsim_ns)o->launches * g->host_dispatch_ns;
            v[i] = x > 0 ? x : 0;
        }
        g->host_opt_ns = median_ns(v, c->nopts);
        free(v);
        r->host_opts = c->nopts;
        r->opt_fitted = 1;
    }
}

int lsim_calib_fit(lsim_calib *c, const lsim_gpu_spec *base, const char *label, lsim_gpu_spec *out,
                   lsim_calib_report *rep, lsim_err *err)
{
    int rc = 0;
    double *x = NULL, *y = NULL;
    lsim_calib_report r;
    memset(&r, 0, sizeof r);
    lsim_gpu_spec g = *base;
    free(c->shapes);
    c->shapes = NULL;
    c->nshapes = 0;
    r.traces = c->traces;
    r.gemm_ops = c->gemm_ops;
    r.gemm_ops_launched = c->gemm_ops_launched;
    r.gemm_kernels = c->gemm_kernels;
    r.gemm_skipped_shape = c->gemm_skipped_shape;
    /* element size: 2-byte (fp16/bf16) GEMMs if any, else 4-byte (TF32) */
    size_t n2 = 0, n4 = 0;
    for (size_t i = 0; i < c->ngemm; i++) {
        n2 += c->gemm[i].eb == 2;
        n4 += c->gemm[i].eb == 4;
    }
    int eb = n2 ? 2 : n4 ? 4 : 0;
    if (!eb) {
        rc = lsim_err_set(err, LSIM_ETRACE,
                          "%s: no GEMM kernel to calibrate from: none was launched inside aten::mm, addmm, bmm, "
                          "baddbmm, matmul or linear with recorded fp16/bf16/fp32 shapes (profile with "
                          "record_shapes=True)",
                          label);
        goto cleanup;
    }
    r.gemm_elem_bytes = eb;
    r.gemm_skipped_dtype = c->ngemm - (eb == 2 ? n2 : n4);
    r.gemm_points = eb == 2 ? n2 : n4;
    double peak = eb >= 4 ? base->peak_flops / 2 : base->peak_flops;
    qsort(c->gemm, c->ngemm, sizeof *c->gemm, cmp_gemm);
    /* per-shape medians */
    c->shapes = lsim_calloc(c->ngemm, sizeof *c->shapes);
    x = lsim_malloc(c->ngemm * sizeof *x);
    y = lsim_malloc(c->ngemm * sizeof *y);
    if (!c->shapes || !x || !y) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < c->ngemm;) {
        size_t j = i;
        while (j < c->ngemm && same_shape(&c->gemm[j], &c->gemm[i])) j++;
        if (c->gemm[i].eb == eb) {
            lsim_calib_shape *s = &c->shapes[c->nshapes++];
            s->batch = c->gemm[i].batch;
            s->m = c->gemm[i].m;
            s->n = c->gemm[i].n;
            s->k = c->gemm[i].k;
            s->flops = c->gemm[i].flops;
            s->count = j - i;
            size_t h = (j - i) / 2; /* ns sorted within the shape */
            s->median_ns = (j - i) % 2 ? c->gemm[i + h].ns : (c->gemm[i + h - 1].ns + c->gemm[i + h].ns) / 2;
            s->eff = s->flops / (s->median_ns * 1e-9 * peak);
            /* bytes as lsim_cost_gemm counts them: A, B read, C written once */
            double bytes = (double)s->batch *
                           ((double)s->m * (double)s->k + (double)s->k * (double)s->n + (double)s->m * (double)s->n) * eb;
            s->memory_bound = s->flops / bytes < peak / (base->mem_bw * base->mem_eff);
            if (s->memory_bound) r.gemm_skipped_membound += s->count;
        }
        i = j;
    }
    size_t nx = 0;
    for (size_t i = 0; i < c->nshapes; i++) {
        if (c->shapes[i].memory_bound) continue;
        x[nx] = c->shapes[i].flops;
        y[nx] = c->shapes[i].median_ns;
        nx++;
    }
    r.gemm_points -= r.gemm_skipped_membound;
    if (!nx) {
        rc = lsim_err_set(err, LSIM_ETRACE,
                          "%s: no compute-bound GEMM to calibrate from: all %zu GEMM shapes have fewer FLOPs per byte "
                          "than the ridge point of %s (%.0f)",
                          label, c->nshapes, base->name, peak / (base->mem_bw * base->mem_eff));
        goto cleanup;
    }
    if (base->sms > 0) {
        if ((rc = fit_waves(c, base, eb, &g, &r, label, err))) goto cleanup;
        nx = 0;
        for (size_t i = 0; i < c->nshapes; i++) {
            lsim_calib_shape *s = &c->shapes[i];
            double fit = (double)lsim_cost_bgemm(&g, (double)s->batch, (double)s->m, (double)s->n, (double)s->k, eb);
            s->rel_residual = (fit - s->median_ns) / s->median_ns;
            if (!s->memory_bound) y[nx++] = fabs(s->rel_residual);
        }
    } else {
        /* t = alpha + f / beta with alpha = eff_half / (peak eff_max) and beta =
         * peak eff_max: relative least squares over the shapes */
        double emax = 0, ehalf = 0;
        lsim_coll_fit f;
        lsim_err ferr = {0};
        if (nx >= 2 && lsim_cost_fit_alpha_beta(x, y, nx, &f, &ferr) == 0 && f.alpha_ns > 0) {
            emax = f.beta_bytes_per_s / peak;
            ehalf = f.alpha_ns * 1e-9 * f.beta_bytes_per_s;
            r.gemm_mode = 2;
        } else {
            /* eff_half kept: minimise sum ((t_i - u g_i) / t_i)^2 over u = 1 / eff_max,
             * g_i = (f_i + eff_half) / peak: u = sum(g/t) / sum(g^2/t^2) */
            double sn = 0, sd = 0;
            ehalf = base->gemm_eff_half;
            for (size_t i = 0; i < nx; i++) {
                double gi = (x[i] + ehalf) / peak * 1e9, ti = y[i];
                sn += gi / ti;
                sd += gi * gi / (ti * ti);
            }
            emax = sn > 0 ? sn / sd : 0;
            r.gemm_mode = 1;
        }
        if (emax > 1) {
            emax = 1;
            r.gemm_clamped = 1;
        }
        if (!(emax > 0) || !(ehalf > 0) || !isfinite(emax) || !isfinite(ehalf)) {
            rc = lsim_err_set(err, LSIM_ETRACE, "%s: the GEMM fit failed (efficiency %g, eff_half %g)", label, emax, ehalf);
            goto cleanup;
        }
        g.gemm_eff_max = emax;
        g.gemm_eff_half = ehalf;
        nx = 0;
        for (size_t i = 0; i < c->nshapes; i++) {
            lsim_calib_shape *s = &c->shapes[i];
            double fit = (s->flops + ehalf) / (peak * emax) * 1e9;
            s->rel_residual = (fit - s->median_ns) / s->median_ns;
            if (!s->memory_bound) y[nx++] = fabs(s->rel_residual);
        }
    }
    qsort(y, nx, sizeof *y, cmp_dbl);
    r.gemm_max_rel_residual = y[nx - 1];
    r.gemm_median_rel_residual = nx % 2 ? y[nx / 2] : (y[nx / 2 - 1] + y[nx / 2]) / 2;
    r.shapes = c->shapes;
    r.nshapes = c->nshapes;
    /* kernel floor: 1st percentile (nearest rank) */
    if (c->nkern) {
        qsort(c->kern, c->nkern, sizeof *c->kern, lsim_ns_cmp);
        g.kernel_min_ns = c->kern[(size_t)floor(0.01 * (double)(c->nkern - 1))];
        if (g.kernel_min_ns < 1) g.kernel_min_ns = 1;
        r.kernels = c->nkern;
    }
    if (c->nlaunch) {
        g.launch_cpu_ns = median_ns(c->launch, c->nlaunch);
        r.launch_calls = c->nlaunch;
    }
    if (c->nlat) {
        g.launch_latency_ns = median_ns(c->lat, c->nlat);
        r.latency_traces = c->nlat;
        r.latency_samples = c->lat_samples;
    }
    fit_mem(c, base, &g, &r);
    fit_host(c, &g, &r);
    snprintf(g.name, sizeof g.name, "%.27s-cal", base->name);
    if ((rc = fit_colls(c, err))) goto cleanup;
    r.colls = c->fits;
    r.ncolls = c->nfits;
    if ((rc = lsim_gpu_spec_check(&g, label, err))) goto cleanup;
    *out = g;
    if (rep) *rep = r;
cleanup:
    free(x);
    free(y);
    return rc;
}

/* ------------------------------------------------------------- topology */

/* Bytes each rank sends per byte of the fit's size, and ring steps
 * (docs/cost-models.md, "What bytes means"). */
static double sent_factor(const lsim_calib_coll *f, int n)
{
    switch (f->fit.kind) {
    case LSIM_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case LSIM_COLL_REDUCESCATTER:
    case LSIM_COLL_ALLTOALL: return (double)(n - 1) / n;
    case LSIM_COLL_ALLGATHER: /* nccl-tests: size = gathered output; traces: the shard */
        return f->src == LSIM_CALIB_SRC_NCCL_TESTS ? (double)(n - 1) / n : (double)(n - 1);
    default: return 1.0;
    }
}

static int ring_steps(int kind, int n)
{
    switch (kind) {
    case LSIM_COLL_ALLREDUCE: return 2 * (n - 1);
    case LSIM_COLL_SEND:
    case LSIM_COLL_RECV:
    case LSIM_COLL_SENDRECV: return 1;
    default: return n - 1;
    }
}

/* Higher is better: nccl-tests over traces, all_reduce over the rest, then points. */
static double fit_rank(const lsim_calib_coll *f)
{
    return (f->src == LSIM_CALIB_SRC_NCCL_TESTS ? 4e9 : 0) + (f->fit.kind == LSIM_COLL_ALLREDUCE ? 2e9 : 0) +
           (double)f->fit.points;
}

void lsim_calib_topology(lsim_calib *c, const lsim_topology *base, lsim_topology *out, int *changed)
{
    *out = *base;
    *changed = 0;
    int gpn = base->gpus_per_node > 0 ? base->gpus_per_node : 1;
    lsim_calib_coll *intra = NULL, *inter = NULL;
    for (size_t i = 0; i < c->nfits; i++) {
        lsim_calib_coll *f = &c->fits[i];
        f->used_for = 0;
        int n = f->nranks;
        if (n < 2 || f->fit.kind == LSIM_COLL_NONE || f->fit.kind == LSIM_COLL_OTHER || f->fit.kind == LSIM_COLL_GENERIC)
            continue;
        if (n <= gpn) {
            if (!intra || fit_rank(f) > fit_rank(intra)) intra = f;
        } else if (n % gpn == 0) {
            if (!inter || fit_rank(f) > fit_rank(inter)) inter = f;
        }
    }
    if (intra) {
        int n = intra->nranks, steps = ring_steps(intra->fit.kind, n);
        double busbw = intra->fit.beta_bytes_per_s * sent_factor(intra, n);
        double alpha = intra->fit.alpha_ns > 0 ? intra->fit.alpha_ns : 0;
        out->intra_bw = busbw;
        if (alpha >= (double)steps * (double)base->intra_lat_ns) {
            out->coll_base_ns = llround(alpha - (double)steps * (double)base->intra_lat_ns);
        } else {
            out->intra_lat_ns = llround(alpha / steps);
            out->coll_base_ns = 0;
        }
        intra->used_for = 1;
        *changed += 3;
    }
    if (inter) {
        int n = inter->nranks, m = n / gpn, steps = ring_steps(inter->fit.kind, n);
        int isteps = inter->fit.kind == LSIM_COLL_ALLREDUCE ? 2 * (m - 1) : m - 1;
        double busbw = inter->fit.beta_bytes_per_s * sent_factor(inter, n);
        out->inter_bw = busbw / gpn;
        double rest = inter->fit.alpha_ns - (double)out->coll_base_ns - (double)(steps - isteps) * (double)out->intra_lat_ns;
        out->inter_lat_ns = isteps > 0 && rest > 0 ? llround(rest / isteps) : 0;
        inter->used_for = 2;
        *changed += 2;
    }
    if (*changed) out->algo = LSIM_ALGO_RING;
}

/* ---------------------------------------------------------------- output */

/* The description names the traces, whose names need not be UTF-8: the
 * JSON must be (text.h). */
static void json_str(FILE *f, const char *s) { lsim_text_json(f, s); }

int lsim_calib_write_gpu(FILE *f, const lsim_gpu_spec *g, const char *description, lsim_err *err)
{
    fputs("{\n  \"name\": ", f);
    json_str(f, g->name);
    if (description) {
        fputs(",\n  \"description\": ", f);
        json_str(f, description);
    }
    fprintf(f,
            ",\n  \"peak_flops\": %.17g,\n  \"mem_bw\": %.17g,\n  \"gemm_eff_max\": %.17g,\n"
            "  \"gemm_eff_half\": %.17g,\n  \"attn_eff_max\": %.17g,\n  \"attn_eff_half\": %.17g,\n"
            "  \"mem_eff\": %.17g,\n  \"kernel_min_ns\": %lld,\n  \"launch_cpu_ns\": %lld,\n"
            "  \"launch_latency_ns\": %lld",
            g->peak_flops, g->mem_bw, g->gemm_eff_max, g->gemm_eff_half, g->attn_eff_max, g->attn_eff_half,
            g->mem_eff, (long long)g->kernel_min_ns, (long long)g->launch_cpu_ns, (long long)g->launch_latency_ns);
    /* the optional keys that are set (0: absent) */
    if (g->sms > 0) fprintf(f, ",\n  \"sms\": %d", g->sms);
    if (g->gemm_tile_ns > 0) fprintf(f, ",\n  \"gemm_tile_ns\": %lld", (long long)g->gemm_tile_ns);
    if (g->mem_capacity > 0) fprintf(f, ",\n  \"mem_capacity\": %.17g", g->mem_capacity);
    if (g->host_dispatch_ns > 0) fprintf(f, ",\n  \"host_dispatch_ns\": %lld", (long long)g->host_dispatch_ns);
    if (g->host_step_ns > 0) fprintf(f, ",\n  \"host_step_ns\": %lld", (long long)g->host_step_ns);
    if (g->host_opt_ns > 0) fprintf(f, ",\n  \"host_opt_ns\": %lld", (long long)g->host_opt_ns);
    if (g->host_stall_prob > 0) fprintf(f, ",\n  \"host_stall_prob\": %.17g", g->host_stall_prob);
    if (g->host_stall_ns > 0) fprintf(f, ",\n  \"host_stall_ns\": %lld", (long long)g->host_stall_ns);
    if (g->host_stall_sd_ns > 0) fprintf(f, ",\n  \"host_stall_sd_ns\": %lld", (long long)g->host_stall_sd_ns);
    /* kept from the base spec: a calibrated H100 must still run --precision fp8 */
    if (g->peak_flops_fp8 > 0) fprintf(f, ",\n  \"peak_flops_fp8\": %.17g", g->peak_flops_fp8);
    if (g->attn_fa2_eff_max > 0)
        fprintf(f, ",\n  \"attn_fa2_eff_max\": %.17g,\n  \"attn_fa2_eff_half\": %.17g", g->attn_fa2_eff_max,
                g->attn_fa2_eff_half);
    if (g->attn_fa3_eff_max > 0)
        fprintf(f, ",\n  \"attn_fa3_eff_max\": %.17g,\n  \"attn_fa3_eff_half\": %.17g", g->attn_fa3_eff_max,
                g->attn_fa3_eff_half);
    if (g->attn_bwd_eff_max > 0)
        fprintf(f, ",\n  \"attn_bwd_eff_max\": %.17g,\n  \"attn_bwd_eff_half\": %.17g", g->attn_bwd_eff_max,
                g->attn_bwd_eff_half);
    if (g->attn_fa2_bwd_eff_max > 0)
        fprintf(f, ",\n  \"attn_fa2_bwd_eff_max\": %.17g,\n  \"attn_fa2_bwd_eff_half\": %.17g",
                g->attn_fa2_bwd_eff_max, g->attn_fa2_bwd_eff_half);
    if (g->attn_fa3_bwd_eff_max > 0)
        fprintf(f, ",\n  \"attn_fa3_bwd_eff_max\": %.17g,\n  \"attn_fa3_bwd_eff_half\": %.17g",
                g->attn_fa3_bwd_eff_max, g->attn_fa3_bwd_eff_half);
    fputs("\n}\n", f);
    return ferror(f) ? lsim_err_set(err, LSIM_EIO, "cannot write the GPU spec") : 0;
}

int lsim_calib_write_topology(FILE *f, const lsim_topology *t, const char *name, const char *description,
                              lsim_err *err)
{
    fputs("{\n  \"name\": ", f);
    json_str(f, name ? name : "calibrated");
    if (description) {
        fputs(",\n  \"description\": ", f);
        json_str(f, description);
    }
    fprintf(f,
            ",\n  \"gpus_per_node\": %d,\n  \"intra_bw\": %.17g,\n  \"intra_lat_ns\": %lld,\n"
            "  \"inter_bw\": %.17g,\n  \"inter_lat_ns\": %lld,\n  \"coll_base_ns\": %lld,\n  \"algo\": \"%s\"",
            t->gpus_per_node, t->intra_bw, (long long)t->intra_lat_ns, t->inter_bw, (long long)t->inter_lat_ns,
            (long long)t->coll_base_ns, lsim_coll_algo_name(t->algo));
    /* the optional keys that are set (0: absent, as the loader reads them) */
    if (t->nccl_tuning) fputs(",\n  \"nccl_tuning\": true", f);
    if (t->link_sharing) fputs(",\n  \"link_sharing\": true", f);
    if (t->ecmp_paths > 1) fprintf(f, ",\n  \"ecmp_paths\": %d", t->ecmp_paths);
    if (t->proto != LSIM_PROTO_AUTO) fprintf(f, ",\n  \"proto\": \"%s\"", lsim_coll_proto_name(t->proto));
    const struct {
        const char *key;
        double v;
        int ns;
    } opt[] = {{"ring_eff", t->ring_eff, 0},
               {"tree_eff", t->tree_eff, 0},
               {"a2a_eff", t->a2a_eff, 0},
               {"ring_step_ns", (double)t->ring_step_ns, 1},
               {"tree_hop_ns", (double)t->tree_hop_ns, 1},
               {"a2a_peer_ns", (double)t->a2a_peer_ns, 1},
               {"nodes_per_leaf", (double)t->nodes_per_leaf, 1},
               {"oversubscription", t->oversubscription, 0}};
    for (size_t i = 0; i < sizeof opt / sizeof *opt; i++)
        if (opt[i].v != 0) {
            if (opt[i].ns) fprintf(f, ",\n  \"%s\": %lld", opt[i].key, (long long)opt[i].v);
            else fprintf(f, ",\n  \"%s\": %.17g", opt[i].key, opt[i].v);
        }
    fputs("\n}\n", f);
    return ferror(f) ? lsim_err_set(err, LSIM_EIO, "cannot write the topology") : 0;
}
