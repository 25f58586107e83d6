/* The result archive (store.h "result files", docs/hdf5-schema.md): runs
 * under /runs/NAME, written (serial or collective) and read (serial) from
 * one description of their columns, below, so the two halves cannot
 * drift. A run is
 *   gpus/...         one row per GPU: run_gpu_cols, over rrow (+ gpus/source)
 *   iterations/...   one row per iteration: run_iter_cols, over riter (+ name)
 *   duty/, nodes/, critical_path/   flat per-GPU tables: run_cols
 *   kernels/...      per GPU, one row per (kind, name) of its GPU work:
 *                    run_kern_cols, over rkern (+ name); written, not read
 *                    (python/lumosim reads it); optional
 *   graph/         optionally, the GPUs' graphs (graph-store layout)
 *   provenance     attributes that may differ between equal runs */
#include "h5_internal.h"
#include "lumosim/alloc.h"

#include "lumosim/metrics.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUN_NAME_MAX 200

/* ------------------------------------------------------------ the run's columns */

/* The run's flat tables: each GPU's rows of table RR_* lie at
 * gpus/<name>_offset .. + gpus/<name>_count. count_at: where the reader
 * keeps the count in lsim_store_gpu_result (count_size bytes), which is
 * also where the writer takes it from. by_gpu: chunks of the largest GPU's
 * rows (per-node tables), else of all rows (at most CHUNK_MAX_ROWS). */
enum { RR_NODE, RR_ITER, RR_DUTY_A, RR_DUTY_P, RR_CP, RR_N };

typedef struct rtable {
    const char *name;
    size_t count_at, count_size;
    int by_gpu;
} rtable;

#define RCOUNT(f) offsetof(lsim_store_gpu_result, f), FSZ(lsim_store_gpu_result, f)
static const rtable rtables[RR_N] = {
    [RR_NODE] = {"node", RCOUNT(node_count), 1},
    [RR_ITER] = {"iter", RCOUNT(report.niters), 0},
    [RR_DUTY_A] = {"duty_actual", RCOUNT(report.nbins_actual), 0},
    [RR_DUTY_P] = {"duty_predicted", RCOUNT(report.nbins_predicted), 0},
    [RR_CP] = {"cp", RCOUNT(cp.n), 0},
};

/* One GPU's row of gpus/...: the scalars where the reader wants them (g: the
 * writer fills it from the replay item), the flat tables' offsets and
 * counts, and what is stored for other readers but derived (window_error). */
typedef struct rrow {
    lsim_store_gpu_result g;
    uint64_t off[RR_N], cnt[RR_N];
    double window_error;
    int64_t node_same_as; /* writer: -1, or the earlier GPU whose per-node rows
                             (times, deciding edges) this GPU's equal and
                             share (results_share); reader: unused */
    uint8_t shared[RR_N]; /* writer: table r's rows are node_same_as's, not
                             written again (run_layout); reader: unused */
} rrow;

/* The flat tables whose rows a GPU shares with the earlier GPU whose node
 * times it equals (results_share): those times, and its duty-cycle bins,
 * which are a function of the GPU's graph (the same node rows: the store's
 * shared structure) and those times alone. At 98,304 GPUs of 16 symmetry
 * classes the bins were 10 GB of the archive and most of its write. */
static int shares_rows(int r) { return r == RR_NODE || r == RR_DUTY_A || r == RR_DUTY_P; }

/* A breakdown is stored as its first four times (exposed_compute,
 * overlapped, exposed_comm, other), one 4-wide column; exposed_comm_wait
 * has a column of its own. */
_Static_assert(offsetof(lsim_breakdown, overlapped) == 1 * sizeof(lsim_ns) &&
                   offsetof(lsim_breakdown, exposed_comm) == 2 * sizeof(lsim_ns) &&
                   offsetof(lsim_breakdown, other) == 3 * sizeof(lsim_ns),
               "lsim_breakdown: the four stored times must be consecutive");
#define BD_SZ (4 * sizeof(lsim_ns))

#define RG(nm, f, t) {nm, t, 1, offsetof(rrow, g.f), FSZ(rrow, g.f), M_COPY}
#define RGA(nm, f, t, w) {nm, t, w, offsetof(rrow, g.f), FSZ(rrow, g.f), M_COPY}
#define RGC(nm, f, t, mk) {nm, t, 1, offsetof(rrow, g.f), FSZ(rrow, g.f), mk} /* int / size_t field */
#define RBD(nm, f) {nm, T_I64, 4, offsetof(rrow, g.f), BD_SZ, M_COPY}
#define ROFF(nm, rr) {nm "_offset", T_U64, 1, offsetof(rrow, off) + (rr) * sizeof(uint64_t), sizeof(uint64_t), M_COPY}, \
                     {nm "_count", T_U64, 1, offsetof(rrow, cnt) + (rr) * sizeof(uint64_t), sizeof(uint64_t), M_COPY}

/* gpus/..., in the order they are written. Times in ns, errors as fractions. */
static const mcol run_gpu_cols[] = {
    RG("rank", rank, T_I32),
    ROFF("node", RR_NODE),
    ROFF("iter", RR_ITER),
    ROFF("duty_actual", RR_DUTY_A),
    ROFF("duty_predicted", RR_DUTY_P),
    RG("window_actual", report.window_actual, T_I64),
    RG("window_predicted", report.window_predicted, T_I64),
    RG("window_actual_start", report.window_actual_start, T_I64),
    RG("window_predicted_start", report.window_predicted_start, T_I64),
    {"window_error", T_F64, 1, offsetof(rrow, window_error), FSZ(rrow, window_error), M_COPY}, /* derived */
    RBD("breakdown_actual", report.bd_actual),
    RBD("breakdown_predicted", report.bd_predicted),
    RG("exposed_comm_wait_actual", report.bd_actual.exposed_comm_wait, T_I64),
    RG("exposed_comm_wait_predicted", report.bd_predicted.exposed_comm_wait, T_I64),
    RGC("coupled", coupled, T_U8, M_INT),
    RG("clock_offset", clock_offset, T_I64),
    RG("bin_ns", report.bin_ns, T_I64),
    RG("max_abs_start_err", report.max_abs_start_err, T_I64),
    RG("max_abs_end_err", report.max_abs_end_err, T_I64),
    RG("nodes_exact", report.nodes_exact, T_U64),
    RG("gpu_nodes", report.gpu_nodes, T_U64),
    RGC("has_critical_path", has_cp, T_U8, M_INT),
    ROFF("cp", RR_CP),
    RG("cp_start", cp.start, T_I64),
    RG("cp_end", cp.end, T_I64),
    RG("cp_length", cp.length, T_I64), /* -1 without a critical path */
    RGA("cp_by_cat", cp.by_cat, T_I64, LSIM_CP_NCATS),
    RGA("cp_by_kind", cp.by_kind, T_I64, LSIM_N_NKINDS),
    RGA("cp_by_class", cp.by_class, T_I64, LSIM_E_NCLASSES),
    RGA("cp_edges_by_class", cp.edges_by_class, T_U64, LSIM_E_NCLASSES),
    RGA("cp_top", cp.top, T_U32, LSIM_CP_TOP),
    RGA("cp_top_time", cp.top_time, T_I64, LSIM_CP_TOP),
    RGC("cp_ntop", cp.ntop, T_U64, M_SIZE),
};
#define NRUNGPUCOLS (sizeof run_gpu_cols / sizeof run_gpu_cols[0])

/* Optional gpus/... columns, added after the schema's first release (node
 * fidelity): always written; read when the first exists, else the report's
 * has_fidelity stays 0 and reports leave them out. A distribution is its n
 * and its (median, p90, max), one 3-wide column. */
_Static_assert(offsetof(lsim_err_dist, p90) == offsetof(lsim_err_dist, median) + sizeof(lsim_ns) &&
                   offsetof(lsim_err_dist, max) == offsetof(lsim_err_dist, median) + 2 * sizeof(lsim_ns),
               "lsim_err_dist: median, p90 and max must be consecutive");
#define RDIST(nm, f) {nm "_count", T_U64, 1, offsetof(rrow, g.f.n), FSZ(rrow, g.f.n), M_COPY}, \
                     {nm, T_I64, 3, offsetof(rrow, g.f.median), 3 * sizeof(lsim_ns), M_COPY}
static const mcol run_gpu_opt_cols[] = {
    RGC("has_fidelity", report.has_fidelity, T_U8, M_INT),
    RDIST("start_err_gpu", report.start_err_gpu),
    RDIST("start_err_cpu", report.start_err_cpu),
    RG("duty_abs_diff", report.duty_abs_diff, T_F64),
};
#define NRUNGPUOPTCOLS (sizeof run_gpu_opt_cols / sizeof run_gpu_opt_cols[0])

/* Optional gpus/... columns of the coupling counts (metrics.h,
 * has_coupling): always written; read when the first exists. */
static const mcol run_gpu_cpl_cols[] = {
    RGC("has_coupling", report.has_coupling, T_U8, M_INT),
    RGA("coll_coupled", report.coll_coupled, T_U64, LSIM_COLL_NKINDS),
    RGA("coll_traced", report.coll_traced, T_U64, LSIM_COLL_NKINDS),
};
#define NRUNGPUCPLCOLS (sizeof run_gpu_cpl_cols / sizeof run_gpu_cpl_cols[0])

/* Optional gpus/... columns of the per-kind collective times (metrics.h,
 * has_coll_time): always written; read when the first exists. */
static const mcol run_gpu_ctime_cols[] = {
    RGC("has_coll_time", report.has_coll_time, T_U8, M_INT),
    RGA("coll_time_actual", report.coll_time_actual, T_I64, LSIM_COLL_NKINDS),
    RGA("coll_wait_actual", report.coll_wait_actual, T_I64, LSIM_COLL_NKINDS),
    RGA("coll_time_predicted", report.coll_time_predicted, T_I64, LSIM_COLL_NKINDS),
    RGA("coll_wait_predicted", report.coll_wait_predicted, T_I64, LSIM_COLL_NKINDS),
};
#define NRUNGPUCTIMECOLS (sizeof run_gpu_ctime_cols / sizeof run_gpu_ctime_cols[0])

/* Optional gpus/... columns of the rootless counts (metrics.h,
 * has_rootless): always written; read when the first exists. */
static const mcol run_gpu_root_cols[] = {
    RGC("has_rootless", report.has_rootless, T_U8, M_INT),
    RGA("coll_rootless", report.coll_rootless, T_U64, LSIM_COLL_NKINDS),
};
#define NRUNGPUROOTCOLS (sizeof run_gpu_root_cols / sizeof run_gpu_root_cols[0])

/* Optional gpus/... columns of the GPU's place in the job (report.h,
 * lsim_report_brief): what the HTML page needs of a GPU it does not show in
 * full, so that lumosim report reads only the graphs it shows (and a
 * --detail summary run, which keeps none, can be shown). Always written;
 * read when the first exists. */
static const mcol run_gpu_place_cols[] = {
    RGC("has_place", has_place, T_U8, M_INT),
    RG("stage", stage, T_I32),
    RG("replica", replica, T_I32),
    RGC("observed", observed, T_U8, M_INT),
};
#define NRUNGPUPLACECOLS (sizeof run_gpu_place_cols / sizeof run_gpu_place_cols[0])

/* One iteration row (iterations/...): the report's entry, its GPU, and the
 * derived relative error. */
typedef struct riter {
    lsim_iter_report it;
    uint32_t gpu;
    double error;
} riter;

#define RI(nm, f, t) {nm, t, 1, offsetof(riter, f), FSZ(riter, f), M_COPY}
static const mcol run_iter_cols[] = {
    RI("gpu", gpu, T_U32),
    RI("name_id", it.name, T_U32),
    RI("actual", it.actual, T_I64),
    RI("predicted", it.predicted, T_I64),
    RI("error", error, T_F64), /* derived */
    {"breakdown_actual", T_I64, 4, offsetof(riter, it.bd_actual), BD_SZ, M_COPY},
    {"breakdown_predicted", T_I64, 4, offsetof(riter, it.bd_predicted), BD_SZ, M_COPY},
};
#define NRUNITERCOLS (sizeof run_iter_cols / sizeof run_iter_cols[0])

/* One row of kernels/...: the GPU nodes (kernel, memcpy, memset) of one GPU
 * with one (kind, name), in the order of the name's first node. Actual
 * figures are over the nodes with observed times (0 when none is). */
typedef struct rkern {
    uint32_t gpu, name_id;
    uint8_t kind, collective;
    uint64_t count, observed_count;
    int64_t actual_total, predicted_total;
    double actual_mean, predicted_mean;
    const char *name; /* not a column: kernels/name, its text */
} rkern;

#define RKC(nm, f, t) {nm, t, 1, offsetof(rkern, f), FSZ(rkern, f), M_COPY}
static const mcol run_kern_cols[] = {
    RKC("gpu", gpu, T_U32),
    RKC("kind", kind, T_U8),
    RKC("name_id", name_id, T_U32),
    RKC("count", count, T_U64),
    RKC("observed_count", observed_count, T_U64),
    RKC("collective", collective, T_U8),
    RKC("actual_total", actual_total, T_I64),
    RKC("actual_mean", actual_mean, T_F64),
    RKC("predicted_total", predicted_total, T_I64),
    RKC("predicted_mean", predicted_mean, T_F64),
};
#define NRUNKERNCOLS (sizeof run_kern_cols / sizeof run_kern_cols[0])
/* Optional iterations/... columns (the CPU-side span, recorded since the
 * iteration rows became the GPU partition): read when the first exists,
 * else LSIM_SPAN_UNKNOWN. */
static const mcol run_iter_opt_cols[] = {
    RI("cpu_actual", it.cpu_actual, T_I64),
    RI("cpu_predicted", it.cpu_predicted, T_I64),
};
#define NRUNITEROPTCOLS (sizeof run_iter_opt_cols / sizeof run_iter_opt_cols[0])
/* Optional iterations/... columns, the waits of the iteration's breakdowns
 * (the 4-wide columns hold the rest): read when the first exists, else 0,
 * as an archive written before them gave. */
static const mcol run_iter_wait_cols[] = {
    RI("exposed_comm_wait_actual", it.bd_actual.exposed_comm_wait, T_I64),
    RI("exposed_comm_wait_predicted", it.bd_predicted.exposed_comm_wait, T_I64),
};
#define NRUNITERWAITCOLS (sizeof run_iter_wait_cols / sizeof run_iter_wait_cols[0])

/* The flat per-node / per-bin / per-path-step columns, in the order they
 * are written. at: the array pointer in lsim_store_gpu_result (the writer
 * takes the item's array from there too). run_at: for the per-node times,
 * the run's own array in lsim_store_run, which the GPUs' pointers point
 * into; 0: each GPU owns a copy of its rows. */
enum {
    RF_TIMES = 1, /* per-node times: left out by LSIM_STORE_READ_NO_TIMES */
    RF_BIND = 2,  /* optional: written when every item has bind times, read
                     when the first RF_BIND column exists */
    RF_CP = 4     /* only GPUs with a critical path hold rows; their copy is
                     allocated even when empty (elsewhere: NULL when empty) */
};

typedef struct runcol {
    const char *name;
    int t, rr;
    size_t at, run_at;
    unsigned flags;
    const char *units;
} runcol;

#define RAT(f) offsetof(lsim_store_gpu_result, f)
#define RUN(f) offsetof(lsim_store_run, f)
_Static_assert(offsetof(lsim_store_run, start) != 0, "run_at 0 means: no run array");
static const runcol run_cols[] = {
    {"duty/actual", T_F64, RR_DUTY_A, RAT(report.duty_actual), 0, 0, "busy fraction per bin"},
    {"duty/predicted", T_F64, RR_DUTY_P, RAT(report.duty_predicted), 0, 0, "busy fraction per bin"},
    {"nodes/start", T_I64, RR_NODE, RAT(start), RUN(start), RF_TIMES, "ns"},
    {"nodes/end", T_I64, RR_NODE, RAT(end), RUN(end), RF_TIMES, "ns"},
    {"nodes/bind_start", T_I64, RR_NODE, RAT(bind_start), RUN(bind_start), RF_TIMES | RF_BIND, "in-edge, -1 none"},
    {"nodes/bind_end", T_I64, RR_NODE, RAT(bind_end), RUN(bind_end), RF_TIMES | RF_BIND, "in-edge, -1 none"},
    {"critical_path/node", T_U32, RR_CP, RAT(cp.nodes), 0, RF_CP, "node, local to the GPU"},
    {"critical_path/via", T_I64, RR_CP, RAT(cp.via), 0, RF_CP, "in-edge from the previous node, -1 first"},
};
#define NRUNCOLS (sizeof run_cols / sizeof run_cols[0])

static uint64_t get_count(const lsim_store_gpu_result *g, int rr)
{
    const char *p = (const char *)g + rtables[rr].count_at;
    if (rtables[rr].count_size == sizeof(uint32_t)) {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void set_count(lsim_store_gpu_result *g, int rr, uint64_t v)
{
    char *p = (char *)g + rtables[rr].count_at;
    if (rtables[rr].count_size == sizeof(uint32_t)) {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, sizeof x);
    } else {
        memcpy(p, &v, sizeof v);
    }
}

static int check_run_layout(sctx *c)
{
    int rc = h5s_check_cols(c, run_gpu_cols, NRUNGPUCOLS);
    if (!rc) rc = h5s_check_cols(c, run_gpu_opt_cols, NRUNGPUOPTCOLS);
    if (!rc) rc = h5s_check_cols(c, run_gpu_cpl_cols, NRUNGPUCPLCOLS);
    if (!rc) rc = h5s_check_cols(c, run_gpu_ctime_cols, NRUNGPUCTIMECOLS);
    if (!rc) rc = h5s_check_cols(c, run_gpu_root_cols, NRUNGPUROOTCOLS);
    if (!rc) rc = h5s_check_cols(c, run_gpu_place_cols, NRUNGPUPLACECOLS);
    if (!rc) rc = h5s_check_cols(c, run_iter_cols, NRUNITERCOLS);
    if (!rc) rc = h5s_check_cols(c, run_kern_cols, NRUNKERNCOLS);
    if (!rc) rc = h5s_check_cols(c, run_iter_opt_cols, NRUNITEROPTCOLS);
    if (!rc) rc = h5s_check_cols(c, run_iter_wait_cols, NRUNITERWAITCOLS);
    for (int r = 0; !rc && r < RR_N; r++)
        if (rtables[r].count_size != sizeof(uint32_t) && rtables[r].count_size != sizeof(uint64_t))
            rc = h5s_fail(c, LSIM_EINTERNAL, "run table %s: count of an unexpected size", rtables[r].name);
    return rc;
}

/* The first RF_BIND column: its presence says whether a run has them. */
static const char *bind_probe(void)
{
    for (size_t k = 0; k < NRUNCOLS; k++)
        if (run_cols[k].flags & RF_BIND) return run_cols[k].name;
    return NULL;
}

/* ------------------------------------------------------------ run write */

static const char *const detail_names[] = {"nodes", "ops", "summary"};

const char *lsim_store_detail_name(lsim_store_detail d)
{
    return (unsigned)d < 3 ? detail_names[d] : "nodes";
}

int lsim_store_detail_parse(const char *s, lsim_store_detail *out)
{
    for (int k = 0; s && k < 3; k++)
        if (!strcmp(s, detail_names[k])) {
            *out = (lsim_store_detail)k;
            return 0;
        }
    return -1;
}

/* The run's level of detail (no info, or out of range: everything). */
static lsim_store_detail run_detail(const lsim_store_run_info *info)
{
    int d = info ? info->detail : 0;
    return d == LSIM_STORE_DETAIL_OPS || d == LSIM_STORE_DETAIL_SUMMARY ? (lsim_store_detail)d : LSIM_STORE_DETAIL_NODES;
}

/* The run embeds the graphs by copying a store's tables (prepare_results_tmp
 * creates its group then); a summary embeds no graphs at all. */
static int copies_graphs(const lsim_store_run_info *info)
{
    return info && info->embed_graphs && info->graphs_from && run_detail(info) != LSIM_STORE_DETAIL_SUMMARY;
}

static int valid_run_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > RUN_NAME_MAX || !strcmp(s, ".") || !strcmp(s, "..")) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("_-.+=,", ch)))
            return 0;
    }
    return 1;
}


static int label_run(hid_t run)
{
    static const char *const bd[4] = {"exposed_compute", "overlapped", "exposed_comm", "other"};
    const char *cat[LSIM_CP_NCATS], *kind[LSIM_N_NKINDS], *cls[LSIM_E_NCLASSES];
    for (int i = 0; i < LSIM_CP_NCATS; i++) cat[i] = lsim_cp_cat_name((lsim_cp_cat)i);
    for (int i = 0; i < LSIM_N_NKINDS; i++) kind[i] = lsim_node_kind_name((lsim_node_kind)i);
    for (int i = 0; i < LSIM_E_NCLASSES; i++) cls[i] = lsim_edge_class_name((lsim_edge_class)i);
    int rc = 0;
    if (!rc) rc = h5s_label(run, "gpus/breakdown_actual", bd, 4);
    if (!rc) rc = h5s_label(run, "gpus/breakdown_predicted", bd, 4);
    if (!rc) rc = h5s_label(run, "iterations/breakdown_actual", bd, 4);
    if (!rc) rc = h5s_label(run, "iterations/breakdown_predicted", bd, 4);
    if (!rc) rc = h5s_label(run, "gpus/cp_by_cat", cat, LSIM_CP_NCATS);
    if (!rc) rc = h5s_label(run, "gpus/cp_by_kind", kind, LSIM_N_NKINDS);
    if (!rc) rc = h5s_label(run, "gpus/cp_by_class", cls, LSIM_E_NCLASSES);
    if (!rc) rc = h5s_label(run, "gpus/cp_edges_by_class", cls, LSIM_E_NCLASSES);
    return rc;
}

static void iso_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tmv;
    if (gmtime_r(&t, &tmv)) strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    else snprintf(buf, len, "unknown");
}

static int write_provenance(sctx *c, hid_t run, const lsim_store_run_info *info)
{
    /* attributes are written collectively with the same value everywhere:
     * rank 0's host and clock */
    char host[256] = "", now[64];
    if (info && info->host) snprintf(host, sizeof host, "%s", info->host);
    else if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    iso_now(now, sizeof now);
    /* the MPI-IO hints the file was written with (h5_util.c), for a rerun
     * on the same file system */
    char hints[1024] = "";
    const char *he = getenv("LUMOSIM_MPIIO_HINTS");
    if (c->mpi && he) snprintf(hints, sizeof hints, "%s", he);
    if (c->mpi) {
        MPI_Bcast(host, (int)sizeof host, MPI_CHAR, 0, c->comm);
        MPI_Bcast(now, (int)sizeof now, MPI_CHAR, 0, c->comm);
        MPI_Bcast(hints, (int)sizeof hints, MPI_CHAR, 0, c->comm);
    }
    hid_t p = H5Gcreate2(run, "provenance", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (p < 0) return h5s_fail(c, LSIM_EIO, "cannot create the run's provenance group");
    int bad = 0;
    bad |= h5s_put_attr_str(p, "lumosim_version", LSIM_VERSION);
    bad |= h5s_put_attr_str(p, "command_line", info && info->command_line ? info->command_line : "");
    bad |= h5s_put_attr_str(p, "host", host);
    bad |= h5s_put_attr_str(p, "created", now);
    bad |= h5s_put_attr_i32(p, "mpi_ranks", info && info->mpi_ranks > 0 ? info->mpi_ranks : c->size);
    if (info && info->mapping) bad |= h5s_put_attr_str(p, "mapping", info->mapping);
    if (info && info->config) bad |= h5s_put_attr_str(p, "config", info->config);
    if (info && info->memory) bad |= h5s_put_attr_str(p, "memory", info->memory);
    if (hints[0]) bad |= h5s_put_attr_str(p, "mpiio_hints", hints);
    if (info && info->wall_seconds > 0) bad |= h5s_put_attr_f64(p, "wall_seconds", info->wall_seconds);
    if (info && info->nphases && info->phase_names && info->phase_seconds) {
        bad |= h5s_put_attr_strs(p, "phase_names", info->phase_names, info->nphases);
        bad |= h5s_put_attr(p, "phase_seconds", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, info->nphases, info->phase_seconds);
    }
    H5Gclose(p);
    return bad ? h5s_fail(c, LSIM_EIO, "cannot write the run's provenance attributes") : 0;
}


/* Pointers kept in the structs at byte offsets (no type punning). */
static void *get_ptr(const void *base, size_t at)
{
    void *p;
    memcpy(&p, (const char *)base + at, sizeof p);
    return p;
}

static void set_ptr(void *base, size_t at, const void *p) { memcpy((char *)base + at, &p, sizeof p); }

/* The row of gpus/... for replay item it: what the reader will return, with
 * the flat tables' counts (offsets come from the whole run). */
static void row_from_item(rrow *x, const lsim_replay_item *it)
{
    lsim_store_gpu_result *g = &x->g;
    memset(x, 0, sizeof *x);
    g->rank = it->g->rank;
    g->node_count = it->g->n;
    lsim_report_brief b;
    lsim_report_brief_of(it->g, &b);
    g->has_place = 1;
    g->stage = b.stage;
    g->replica = b.replica;
    g->observed = b.observed;
    g->report = *it->r; /* the scalars; its arrays are only read */
    if (!g->report.duty_actual) g->report.nbins_actual = 0;
    if (!g->report.duty_predicted) g->report.nbins_predicted = 0;
    g->coupled = it->coupled != 0;
    g->clock_offset = it->clock_offset;
    g->start = it->start;
    g->end = it->end;
    g->bind_start = it->bind_start;
    g->bind_end = it->bind_end;
    g->cp.length = -1; /* no critical path */
    if (it->cp) {
        g->has_cp = 1;
        g->cp = *it->cp;
        if (g->cp.ntop > LSIM_CP_TOP) g->cp.ntop = LSIM_CP_TOP;
        for (size_t k = g->cp.ntop; k < LSIM_CP_TOP; k++) {
            g->cp.top[k] = 0;
            g->cp.top_time[k] = 0;
        }
    }
    x->window_error = lsim_rel_err(g->report.window_actual, g->report.window_predicted);
    for (int r = 0; r < RR_N; r++) x->cnt[r] = get_count(g, r);
    x->node_same_as = -1;
}

/* Whether every item of the run (all ranks) has bind times, and the run's
 * latency mode (-1: mixed). Collective in MPI mode. */
static void run_modes(sctx *c, const lsim_replay_item *items, size_t nloc, int *bind, int *lat)
{
    int b = 1, l = nloc ? (int)items[0].g->latency : -2;
    for (size_t i = 0; i < nloc; i++) {
        if (!items[i].bind_start || !items[i].bind_end) b = 0;
        if ((int)items[i].g->latency != l) l = -1;
    }
    if (c->mpi) {
        /* every rank must agree on which datasets exist and on the mode */
        MPI_Allreduce(MPI_IN_PLACE, &b, 1, MPI_INT, MPI_MIN, c->comm);
        int lo = l == -2 ? INT_MAX : l, hi = l == -2 ? INT_MIN : l;
        MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, c->comm);
        MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, c->comm);
        l = lo == INT_MAX ? 0 : lo != hi ? -1 : lo;
    } else if (l == -2) {
        l = 0;
    }
    *bind = b;
    *lat = l;
}

/* The run's layout over all GPUs: every GPU's counts gathered, the local
 * rows' offsets set (prefix sums in GPU order), each flat table's total
 * rows and chunk rows, and this process's rows of each (sg: of gpus/...).
 * Collective in MPI mode. */
static int run_layout(sctx *c, rrow *lm, size_t nloc, size_t *ngpu, size_t *gfirst, uint64_t tot[RR_N],
                      uint64_t chunk[RR_N], rowsel *sg, rowsel sel[RR_N])
{
    /* per GPU: its counts, then 1 + the GPU whose node rows it shares (0: none) */
    uint64_t(*lc)[RR_N + 1] = lsim_malloc((nloc ? nloc : 1) * sizeof *lc), (*all)[RR_N + 1] = NULL, mx[RR_N] = {0};
    uint64_t(*cnts)[RR_N] = NULL;
    void *gathered = NULL;
    int rc = h5s_agree(c, lc ? 0 : h5s_nomem(c));
    if (rc) goto out;
    for (size_t i = 0; i < nloc; i++) {
        memcpy(lc[i], lm[i].cnt, sizeof lm[i].cnt);
        lc[i][RR_N] = lm[i].node_same_as < 0 ? 0 : (uint64_t)lm[i].node_same_as + 1;
    }
    rc = h5s_agree(c, h5s_gather_records(c, lc, nloc, sizeof *lc, &gathered, ngpu, gfirst));
    all = gathered;
    if (rc) goto out;
    /* each GPU's counts, kept: all[j] becomes its offsets below */
    cnts = lsim_malloc((*ngpu ? *ngpu : 1) * sizeof *cnts);
    rc = h5s_agree(c, cnts ? 0 : h5s_nomem(c));
    if (rc) goto out;
    for (size_t j = 0; j < *ngpu; j++) memcpy(cnts[j], all[j], sizeof cnts[j]);
    for (size_t j = 0; j < *ngpu; j++)
        for (int r = 0; r < RR_N; r++) {
            uint64_t k = all[j][r], t = all[j][RR_N];
            if (shares_rows(r) && t && k && cnts[t - 1][r] == k) { /* an earlier GPU's rows (results_share); an empty table keeps its own offset */
                all[j][r] = all[t - 1][r];
                continue;
            }
            all[j][r] = tot[r]; /* now GPU j's offset */
            tot[r] += k;
            if (k > mx[r]) mx[r] = k;
        }
    for (int r = 0; r < RR_N; r++) {
        uint64_t rows = rtables[r].by_gpu ? mx[r] : tot[r];
        chunk[r] = h5s_min_u64(rows ? rows : 1, CHUNK_MAX_ROWS);
    }
    for (size_t i = 0; i < nloc && !rc; i++) {
        size_t gi = h5s_gpu_at(c, *gfirst, i);
        memcpy(lm[i].off, all[gi], sizeof lm[i].off);
        if (h5s_sel_add(c, sg, gi, 1)) rc = LSIM_ENOMEM;
        for (int r = 0; r < RR_N && !rc; r++) {
            int64_t t = lm[i].node_same_as;
            lm[i].shared[r] = (uint8_t)(shares_rows(r) && t >= 0 && lm[i].cnt[r] && cnts[t][r] == lm[i].cnt[r]);
            if (!lm[i].shared[r] && h5s_sel_add(c, &sel[r], lm[i].off[r], lm[i].cnt[r])) rc = LSIM_ENOMEM;
        }
    }
    rc = h5s_agree(c, rc);
out:
    free(cnts);
    free(all);
    free(lc);
    return rc;
}

/* iterations/...: this process's iterations, rows si of tot. Collective in
 * MPI mode. */
static int write_run_iters(sctx *c, hid_t run, const char *where, const lsim_replay_item *items, size_t nloc,
                           size_t gfirst, uint64_t tot, uint64_t chunk, const rowsel *si)
{
    uint64_t li = si->rows;
    riter *ri = lsim_calloc(li ? li : 1, sizeof *ri);
    const char **names = lsim_calloc(li ? li : 1, sizeof *names);
    int rc = h5s_agree(c, ri && names ? 0 : h5s_nomem(c));
    if (rc) goto out;
    for (size_t i = 0, row = 0; i < nloc; i++) {
        const lsim_rank_report *r = items[i].r;
        for (uint32_t k = 0; k < r->niters; k++, row++) {
            ri[row].it = r->iters[k];
            ri[row].gpu = (uint32_t)h5s_gpu_at(c, gfirst, i);
            ri[row].error = lsim_rel_err(r->iters[k].actual, r->iters[k].predicted);
            const char *s = items[i].g->strings ? lsim_strtab_get(items[i].g->strings, r->iters[k].name) : NULL;
            names[row] = s ? s : "";
        }
    }
    rc = h5s_put_records(c, run, where, "iterations", run_iter_cols, NRUNITERCOLS, ri, sizeof *ri, tot, si, li,
                         chunk);
    if (!rc)
        rc = h5s_put_records(c, run, where, "iterations", run_iter_opt_cols, NRUNITEROPTCOLS, ri, sizeof *ri, tot, si,
                             li, chunk);
    if (!rc)
        rc = h5s_put_records(c, run, where, "iterations", run_iter_wait_cols, NRUNITERWAITCOLS, ri, sizeof *ri, tot,
                             si, li, chunk);
    if (!rc) rc = h5s_put_strings(c, run, where, "iterations/name", names, li, tot, si, chunk);
out:
    free(ri);
    free(names);
    return rc;
}

/* The flat columns (run_cols) of this process's GPUs. Collective in MPI
 * mode. */
static int write_run_cols(sctx *c, hid_t run, const char *where, const rrow *lm, size_t nloc, int bind, int times,
                          const uint64_t tot[RR_N], const uint64_t chunk[RR_N], const rowsel sel[RR_N])
{
    uint64_t mx = 0;
    for (int r = 0; r < RR_N; r++)
        if (sel[r].rows > mx) mx = sel[r].rows;
    char *buf = lsim_malloc((mx ? mx : 1) * 8);
    int rc = h5s_agree(c, buf ? 0 : h5s_nomem(c));
    for (size_t k = 0; k < NRUNCOLS && !rc; k++) {
        const runcol *col = &run_cols[k];
        if (((col->flags & RF_BIND) && !bind) || ((col->flags & RF_TIMES) && !times)) continue;
        size_t es = h5s_tsize(col->t);
        uint64_t at = 0;
        for (size_t i = 0; i < nloc; i++) {
            if (lm[i].shared[col->rr]) continue; /* rows shared, not written */
            uint64_t rows = lm[i].cnt[col->rr];
            if (rows) memcpy(buf + at * es, get_ptr(&lm[i].g, col->at), rows * es);
            at += rows;
        }
        rc = h5s_agree(c, h5s_put_col(c, run, where, col->name, col->t, 1, tot[col->rr], chunk[col->rr],
                                      &sel[col->rr], buf));
    }
    free(buf);
    return rc;
}

/* The copied tables keep the store's places: every GPU's offsets (and
 * which GPUs share node and edge rows) from the store's /gpus, whose
 * counts must be these graphs'. Every rank reads the small table itself. */
/* The per-GPU index of the store the run's graphs were read from
 * (*sm: caller frees). Local: every rank reads the small table itself. */
static int read_store_meta(sctx *c, const char *store, gmeta **sm, size_t *sn)
{
    sctx sc;
    h5s_ctx_init(&sc, store, 0, MPI_COMM_NULL);
    int rc = h5s_open_file(&sc);
    if (!rc) rc = h5s_read_gpu_table(&sc, sc.file, "", sm, NULL, sn);
    lsim_err e = {0};
    if ((rc = h5s_ctx_done(&sc, rc, &e))) c->e = e;
    return rc;
}

/* owner[q]: the rank holding GPU q of the run (ngpu GPUs; -1 none), on
 * every rank. Collective in MPI mode. */
static void gpu_owners(sctx *c, size_t gfirst, size_t nloc, size_t ngpu, int32_t *owner)
{
    for (size_t q = 0; q < ngpu; q++) owner[q] = -1;
    for (size_t i = 0; i < nloc; i++) {
        size_t gi = h5s_gpu_at(c, gfirst, i);
        if (gi < ngpu) owner[gi] = c->rank;
    }
    if (c->mpi) MPI_Allreduce(MPI_IN_PLACE, owner, (int)ngpu, MPI_INT32_T, MPI_MAX, c->comm);
}

static int store_places(sctx *c, const char *store, gmeta *gm, size_t ng)
{
    gmeta *sm = NULL;
    size_t sn = 0;
    int rc = read_store_meta(c, store, &sm, &sn);
    /* a GPU whose strings are another's holds only the ones it replaces:
     * its table's size is the other's (nstr) */
    for (size_t i = 0; !rc && i < ng; i++) {
        int like = sn == ng && sm[i].strings_like >= 0;
        int differ = sn != ng;
        for (int r = 0; r < RK_N && !differ; r++)
            if (!(like && (r == RK_STR || r == RK_CHAR))) differ = sm[i].cnt[r] != gm[i].cnt[r];
        if (differ || sm[i].nstr != gm[i].cnt[RK_STR])
            rc = h5s_fail(c, LSIM_EINTERNAL, "%s: the graphs no longer match the store's GPU %zu", store, i);
    }
    for (size_t i = 0; !rc && i < ng; i++) {
        memcpy(gm[i].off, sm[i].off, sizeof gm[i].off);
        gm[i].cnt[RK_STR] = sm[i].cnt[RK_STR];
        gm[i].cnt[RK_CHAR] = sm[i].cnt[RK_CHAR];
        gm[i].same_as = sm[i].same_as;
        gm[i].strings_like = sm[i].strings_like;
        gm[i].nstr = sm[i].nstr;
    }
    free(sm);
    return rc;
}

/* /runs/NAME/graph: the items' graphs in the graph-store layout (their
 * flat tables copied from info->graphs_from by prepare_results_tmp, or
 * written here). Collective in MPI mode. */
static int write_run_graphs(sctx *c, hid_t run, const char *where, const lsim_replay_item *items, size_t nloc,
                            size_t gfirst, const char *const *src, const lsim_store_run_info *info)
{
    gmeta *gl = lsim_calloc(nloc ? nloc : 1, sizeof *gl), *gm = NULL;
    lsim_graph **gs = lsim_calloc(nloc ? nloc : 1, sizeof *gs);
    size_t ng = 0, gf = 0;
    char gw[512];
    snprintf(gw, sizeof gw, "%s/graph", where);
    int rc = gl && gs ? 0 : h5s_nomem(c);
    for (size_t i = 0; !rc && i < nloc; i++) {
        if (!items[i].g->strings)
            rc = h5s_fail(c, LSIM_EARG, "graph %zu has no string table", h5s_gpu_at(c, gfirst, i));
        h5s_meta_from_graph(&gl[i], items[i].g);
        gs[i] = (lsim_graph *)items[i].g; /* only read */
    }
    rc = h5s_agree(c, rc);
    if (!rc) rc = h5s_gather_meta(c, gl, nloc, &gm, &ng, &gf);
    hid_t gg = -1;
    int copied = info->graphs_from != NULL; /* the flat tables were copied by prepare_results_tmp */
    if (!rc && copied) rc = h5s_agree(c, store_places(c, info->graphs_from, gm, ng));
    if (!rc) {
        gg = copied ? H5Gopen2(run, "graph", H5P_DEFAULT)
                    : H5Gcreate2(run, "graph", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        rc = h5s_agree(c, gg < 0 ? h5s_fail(c, LSIM_EIO, "cannot create %s", gw) : 0);
    }
    if (!rc) rc = h5s_write_graph_tables(c, gg, gw, gs, nloc, gm, ng, gf, src, !copied);
    /* copied tables must hold exactly these GPUs' rows */
    for (size_t k = 0; !rc && copied && k < H5S_NGCOLS; k++) {
        hid_t d = h5s_open_col(c, gg, gw, h5s_gcols[k].name, H5T_INTEGER, 1, h5s_total_rows(gm, ng, h5s_gcols[k].rk),
                               NULL);
        rc = h5s_agree(c, d < 0 ? c->e.code : 0);
        if (d >= 0) H5Dclose(d);
    }
    if (!rc) rc = h5s_agree(c, (rc = h5s_label_graph_tables(gg)) ? h5s_label_fail(c, rc, gw) : 0);
    if (gg >= 0) H5Gclose(gg);
    free(gl);
    free(gm);
    free(gs);
    return rc;
}

/* ------------------------------------------------------------ kernels (rows: rkern above) */

static int is_gpu_kind(uint8_t k) { return k == LSIM_N_KERNEL || k == LSIM_N_MEMCPY || k == LSIM_N_MEMSET; }

/* Append GPU gi's rows (item it) to *rows (*n of *cap). The summary is a
 * function of the GPU's own graph and times alone, so the rows are the same
 * whichever MPI rank holds the GPU. */
static int kernel_rows(sctx *c, const lsim_replay_item *it, uint32_t gi, rkern **rows, size_t *n, size_t *cap)
{
    const lsim_graph *g = it->g;
    size_t nstr = g->strings ? lsim_strtab_count(g->strings) : 0;
    for (size_t v = 0; v < g->n; v++)
        if (g->name[v] >= nstr) nstr = (size_t)g->name[v] + 1;
    size_t *at = lsim_calloc(3 * (nstr ? nstr : 1), sizeof *at); /* (kind, name) -> row + 1 */
    if (!at) return h5s_nomem(c);
    int rc = 0;
    for (size_t v = 0; v < g->n && !rc; v++) {
        uint8_t k = g->kind[v];
        if (!is_gpu_kind(k)) continue;
        size_t slot = (size_t)(k - LSIM_N_KERNEL) * nstr + g->name[v];
        if (!at[slot]) {
            if (*n == *cap) {
                size_t nc = *cap ? 2 * *cap : 256;
                rkern *nr = lsim_realloc(*rows, nc * sizeof *nr);
                if (!nr) {
                    rc = h5s_nomem(c);
                    break;
                }
                *rows = nr;
                *cap = nc;
            }
            rkern *r = &(*rows)[*n];
            memset(r, 0, sizeof *r);
            r->gpu = gi;
            r->kind = k;
            r->name_id = g->name[v];
            r->name = g->strings ? lsim_strtab_get(g->strings, g->name[v]) : NULL;
            if (!r->name) r->name = "";
            at[slot] = ++*n;
        }
        rkern *r = &(*rows)[at[slot] - 1];
        r->count++;
        if (g->flags[v] & LSIM_NF_COLL) r->collective = 1;
        r->predicted_total = lsim_ns_add_sat(r->predicted_total, it->end[v] - it->start[v]);
        if (g->obs_start[v] != LSIM_OBS_NONE) {
            r->observed_count++;
            r->actual_total = lsim_ns_add_sat(r->actual_total, g->obs_end[v] - g->obs_start[v]);
        }
    }
    free(at);
    return rc;
}

/* The fields of a kernel row that say what it is (all but the GPU), packed
 * as int64 for a broadcast; names go separately. */
enum { KPACK = 7 };
static void kpack(const rkern *r, int64_t *o)
{
    o[0] = r->kind, o[1] = r->name_id, o[2] = (int64_t)r->count, o[3] = (int64_t)r->observed_count;
    o[4] = r->collective, o[5] = r->actual_total, o[6] = r->predicted_total;
}

/* A template GPU's kernel rows: n rows of KPACK fields and their names,
 * NUL-separated. */
typedef struct kblob {
    uint64_t n, nb;
    int64_t *f;
    char *names;
} kblob;

static int kblob_make(const rkern *rows, uint64_t n, kblob *b)
{
    b->n = n, b->nb = 0;
    for (uint64_t r = 0; r < n; r++) b->nb += strlen(rows[r].name) + 1;
    b->f = lsim_malloc((n ? n : 1) * KPACK * sizeof *b->f);
    b->names = lsim_malloc(b->nb ? b->nb : 1);
    if (!b->f || !b->names) return LSIM_ENOMEM;
    char *p = b->names;
    for (uint64_t r = 0; r < n; r++) {
        kpack(&rows[r], b->f + r * KPACK);
        size_t len = strlen(rows[r].name) + 1;
        memcpy(p, rows[r].name, len);
        p += len;
    }
    return 0;
}

static int kblob_equal(const kblob *b, const rkern *rows, uint64_t n)
{
    if (b->n != n) return 0;
    const char *p = b->names;
    for (uint64_t r = 0; r < n; r++) {
        int64_t f[KPACK];
        kpack(&rows[r], f);
        if (memcmp(f, b->f + r * KPACK, sizeof f) || strcmp(p, rows[r].name)) return 0;
        p += strlen(p) + 1;
    }
    return 1;
}

/* The kernel rows of every template GPU (one whose per-node rows another
 * GPU shares, results_share), on every rank: the rank holding it computes
 * them and broadcasts them (one broadcast per template: a handful, one per
 * pipeline stage), so that each GPU's rows can be compared with its
 * template's wherever it is, and the answer is the same at every K.
 * blobs[t] for template GPU t (others empty). Collective in MPI mode. */
static int kernel_templates(sctx *c, const lsim_replay_item *items, const rrow *lm, size_t nloc, size_t gfirst,
                            size_t ngpu, kblob *blobs)
{
    int64_t *tmpl = lsim_malloc((ngpu ? ngpu : 1) * sizeof *tmpl);
    int32_t *owner = lsim_malloc((ngpu ? ngpu : 1) * sizeof *owner);
    rkern *rows = NULL;
    size_t nrows = 0, cap = 0;
    int rc = h5s_agree(c, tmpl && owner ? 0 : h5s_nomem(c));
    if (rc) goto out;
    gpu_owners(c, gfirst, nloc, ngpu, owner);
    for (size_t q = 0; q < ngpu; q++) tmpl[q] = -1;
    for (size_t i = 0; i < nloc; i++) {
        size_t gi = h5s_gpu_at(c, gfirst, i);
        if (gi < ngpu) tmpl[gi] = lm[i].node_same_as;
    }
    if (c->mpi) MPI_Allreduce(MPI_IN_PLACE, tmpl, (int)ngpu, MPI_INT64_T, MPI_MAX, c->comm);
    /* tmpl[t] == -2: GPU t is some GPU's template */
    for (size_t q = 0; q < ngpu; q++)
        if (tmpl[q] >= 0 && (size_t)tmpl[q] < ngpu && tmpl[tmpl[q]] == -1) tmpl[tmpl[q]] = -2;
    for (size_t t = 0; t < ngpu && !rc; t++) {
        if (tmpl[t] != -2 || owner[t] < 0) continue;
        kblob *b = &blobs[t];
        if (owner[t] == c->rank) {
            size_t tl = 0;
            while (h5s_gpu_at(c, gfirst, tl) != t) tl++;
            nrows = 0;
            rc = kernel_rows(c, &items[tl], (uint32_t)t, &rows, &nrows, &cap);
            if (!rc && kblob_make(rows, nrows, b)) rc = h5s_nomem(c);
        }
        if (c->mpi) {
            uint64_t sz[2] = {b->n, b->nb};
            MPI_Bcast(sz, 2, MPI_UINT64_T, owner[t], c->comm);
            if (owner[t] != c->rank) {
                b->n = sz[0], b->nb = sz[1];
                b->f = lsim_malloc((b->n ? b->n : 1) * KPACK * sizeof *b->f);
                b->names = lsim_malloc(b->nb ? b->nb : 1);
                if (!b->f || !b->names) rc = h5s_nomem(c);
            }
            rc = h5s_agree(c, rc);
            if (rc) break;
            MPI_Bcast(b->f, (int)(b->n * KPACK), MPI_INT64_T, owner[t], c->comm);
            MPI_Bcast(b->names, (int)b->nb, MPI_CHAR, owner[t], c->comm);
        }
    }
out:
    free(rows);
    free(owner);
    free(tmpl);
    return h5s_agree(c, rc);
}

/* GPU a's kernel rows are template t's (trows[0..nt), built from t) without
 * building them: the same node columns and simulated times, held in the
 * same arrays (a reduced run's class members hold their representative's
 * times), so every row's kind, name id, counts and totals are t's; and each
 * row's name reads the same text in a's strings (an overlay replaces a
 * few names, process groups mostly). Building every GPU's rows to compare
 * them was most of the 98,304-GPU archive's kernels table: 1.65e9 nodes. */
static int rows_as_template(const lsim_replay_item *a, const lsim_replay_item *t, const rkern *trows, size_t nt)
{
    const lsim_graph *g = a->g, *h = t->g;
    if (!g || !h || g->n != h->n || g->name != h->name || g->kind != h->kind || g->flags != h->flags ||
        g->obs_start != h->obs_start || g->obs_end != h->obs_end || a->start != t->start || a->end != t->end)
        return 0;
    for (size_t r = 0; g->strings != h->strings && r < nt; r++) {
        const char *x = lsim_strtab_get(g->strings, trows[r].name_id);
        if (x != trows[r].name && strcmp(x ? x : "", trows[r].name)) return 0;
    }
    return 1;
}

/* Kernel rows built and written per round (about 20 MB of rows, names
 * and packed columns): a job whose GPUs share no rows (a flat store, a
 * jittered what-if) has a row per kernel name per GPU, 6 M rows at 1,024
 * synthesized GPUs, and held them all at once (700 MB, a quarter of that
 * run's peak). */
#define KROWS_ROUND ((size_t)1 << 18)

/* kernels/... and gpus/kernel_offset, kernel_count: every local GPU's rows
 * at their GPU's place (the per-GPU counts gathered, offsets their prefix
 * sums; a GPU whose rows equal its template's points at the template's).
 * Collective in MPI mode. */
static int write_run_kernels(sctx *c, hid_t run, const char *where, const lsim_replay_item *items, const rrow *lm,
                             size_t nloc, size_t gfirst, size_t ngpu)
{
    rkern *rows = NULL;
    size_t nrows = 0, cap = 0, ntot = 0, gf = 0;
    uint64_t *lc = lsim_calloc(nloc ? nloc : 1, sizeof *lc), *loff = lsim_calloc(nloc ? nloc : 1, sizeof *loff), *all = NULL;
    uint64_t(*rec)[2] = lsim_calloc(nloc ? nloc : 1, sizeof *rec); /* count, 1 + template (0 none) */
    int64_t *same = lsim_calloc(nloc ? nloc : 1, sizeof *same);
    char *nbuf = NULL;
    void *gathered = NULL;
    hid_t dk[NRUNKERNCOLS], dn = -1, st = -1;
    for (size_t k = 0; k < NRUNKERNCOLS; k++) dk[k] = -1;
    rowsel sg, sk;
    h5s_sel_one(&sg, 0, 0);
    h5s_sel_one(&sk, 0, 0);
    kblob *blobs = lsim_calloc(ngpu ? ngpu : 1, sizeof *blobs);
    int rc = lc && loff && rec && same && blobs ? 0 : h5s_nomem(c);
    rc = h5s_agree(c, rc);
    if (!rc) rc = kernel_templates(c, items, lm, nloc, gfirst, ngpu, blobs);
    /* first pass, one GPU at a time: its row count, whether its rows equal
     * its template's (then it keeps none of its own), the longest name */
    uint64_t w = 0;
    rkern *trows = NULL; /* the rows of template GPU tg, held here */
    size_t ntrows = 0, tcap = 0, *loc = lsim_malloc((ngpu ? ngpu : 1) * sizeof *loc); /* GPU -> local item */
    int64_t tg = -1;
    if (!rc && !loc) rc = h5s_nomem(c);
    for (size_t q = 0; loc && q < ngpu; q++) loc[q] = SIZE_MAX;
    for (size_t q = 0; loc && q < nloc; q++) {
        size_t gq = h5s_gpu_at(c, gfirst, q);
        if (gq < ngpu) loc[gq] = q;
    }
    for (size_t i = 0; i < nloc && !rc; i++) {
        same[i] = -1;
        nrows = 0;
        int64_t t = lm[i].node_same_as;
        int known = t >= 0 && (size_t)t < ngpu && blobs[t].f;
        size_t tl = known ? loc[t] : SIZE_MAX;
        /* the template's rows built when the times are the same arrays */
        if (tl != SIZE_MAX && items[i].start == items[tl].start && t != tg) {
            tg = t, ntrows = 0;
            rc = kernel_rows(c, &items[tl], (uint32_t)t, &trows, &ntrows, &tcap);
        }
        if (!rc && tl != SIZE_MAX && t == tg && rows_as_template(&items[i], &items[tl], trows, ntrows)) {
            lc[i] = ntrows, same[i] = t;
            rec[i][0] = lc[i];
            rec[i][1] = (uint64_t)t + 1;
            continue;
        }
        if (!rc) rc = kernel_rows(c, &items[i], (uint32_t)h5s_gpu_at(c, gfirst, i), &rows, &nrows, &cap);
        lc[i] = nrows;
        if (!rc && known && kblob_equal(&blobs[t], rows, lc[i])) same[i] = t;
        for (size_t r = 0; same[i] < 0 && r < nrows; r++) {
            size_t l = strlen(rows[r].name);
            if (l > w) w = l;
        }
        rec[i][0] = lc[i];
        rec[i][1] = same[i] < 0 ? 0 : (uint64_t)same[i] + 1;
    }
    free(trows);
    free(loc);
    for (size_t q = 0; blobs && q < ngpu; q++) free(blobs[q].f), free(blobs[q].names);
    free(blobs);
    rc = h5s_agree(c, rc);
    if (!rc && c->mpi) MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_UINT64_T, MPI_MAX, c->comm);
    if (!rc) rc = h5s_agree(c, h5s_gather_records(c, rec, nloc, sizeof *rec, &gathered, &ntot, &gf));
    uint64_t(*allr)[2] = gathered;
    all = rc ? NULL : lsim_malloc((ntot ? ntot : 1) * sizeof *all);
    if (!rc && !all) rc = h5s_nomem(c);
    if (!rc && ntot != ngpu)
        rc = h5s_fail(c, LSIM_EINTERNAL, "%s/kernels: %zu GPUs counted, the run has %zu", where, ntot, ngpu);
    uint64_t tot = 0;
    for (size_t j = 0; !rc && j < ntot; j++) {
        uint64_t k = allr[j][0], t = allr[j][1];
        if (t) { /* the template's rows (t - 1 < j: placed already) */
            all[j] = all[t - 1];
            continue;
        }
        all[j] = tot; /* GPU j's offset */
        tot += k;
    }
    free(gathered);
    for (size_t i = 0; i < nloc && !rc; i++) {
        size_t gi = h5s_gpu_at(c, gfirst, i);
        loff[i] = all[gi];
        if (h5s_sel_add(c, &sg, gi, 1)) rc = LSIM_ENOMEM;
    }
    rc = h5s_agree(c, rc);
    uint64_t gchunk = h5s_min_u64(ngpu ? ngpu : 1, CHUNK_MAX_ROWS), kchunk = h5s_min_u64(tot ? tot : 1, CHUNK_MAX_ROWS);
    if (!rc) rc = h5s_create_records(c, run, where, "kernels", run_kern_cols, NRUNKERNCOLS, tot, kchunk, dk);
    if (!rc) {
        st = h5s_str_type(w);
        if (st >= 0) dn = h5s_create_raw(c, run, where, "kernels/name", st, 1, tot, kchunk);
        rc = h5s_agree(c, st < 0 ? h5s_fail(c, LSIM_EIO, "cannot create a string type")
                                 : dn < 0 ? (c->e.code ? c->e.code : LSIM_EIO) : 0);
    }
    /* second pass, in rounds of about KROWS_ROUND rows: the GPUs that keep
     * rows of their own, their rows built again and written at their
     * offsets; every rank takes part in as many rounds as the busiest */
    uint64_t rounds = 0;
    for (size_t i = 0, acc = 0; i < nloc; i++) {
        if (same[i] >= 0 || !lc[i]) continue;
        if (acc == 0) rounds++;
        acc += lc[i];
        if (acc >= KROWS_ROUND) acc = 0;
    }
    if (!rc && c->mpi) MPI_Allreduce(MPI_IN_PLACE, &rounds, 1, MPI_UINT64_T, MPI_MAX, c->comm);
    size_t next = 0;
    for (uint64_t r = 0; r < rounds && !rc; r++) {
        nrows = 0;
        h5s_sel_free(&sk);
        h5s_sel_one(&sk, 0, 0);
        for (; next < nloc && nrows < KROWS_ROUND && !rc; next++) {
            if (same[next] >= 0 || !lc[next]) continue;
            size_t before = nrows;
            rc = kernel_rows(c, &items[next], (uint32_t)h5s_gpu_at(c, gfirst, next), &rows, &nrows, &cap);
            if (!rc && nrows - before != lc[next])
                rc = h5s_fail(c, LSIM_EINTERNAL, "%s/kernels: GPU %zu gave %zu rows, then %llu", where,
                              h5s_gpu_at(c, gfirst, next), nrows - before, (unsigned long long)lc[next]);
            if (!rc && h5s_sel_add(c, &sk, loff[next], lc[next])) rc = h5s_nomem(c);
        }
        for (size_t q = 0; q < nrows; q++) {
            rows[q].actual_mean = rows[q].observed_count ? (double)rows[q].actual_total / (double)rows[q].observed_count : 0;
            rows[q].predicted_mean = (double)rows[q].predicted_total / (double)rows[q].count;
        }
        if (!rc) {
            free(nbuf);
            nbuf = lsim_calloc(nrows ? nrows : 1, w + 1);
            if (!nbuf) rc = h5s_nomem(c);
            for (size_t q = 0; !rc && q < nrows; q++) memcpy(nbuf + q * (w + 1), rows[q].name, strlen(rows[q].name));
        }
        rc = h5s_agree(c, rc);
        if (!rc) rc = h5s_write_records(c, dk, where, "kernels", run_kern_cols, NRUNKERNCOLS, rows, sizeof *rows, tot,
                                        &sk, nrows);
        if (!rc) rc = h5s_agree(c, h5s_write_rows(c, dn, where, "kernels/name", st, 1, tot, &sk, nbuf));
    }
    for (; !rc && next < nloc; next++) /* the rounds counted above cover every GPU */
        if (same[next] < 0 && lc[next])
            rc = h5s_fail(c, LSIM_EINTERNAL, "%s/kernels: GPU %zu left unwritten", where, h5s_gpu_at(c, gfirst, next));
    rc = h5s_agree(c, rc);
    if (!rc) rc = h5s_agree(c, h5s_put_col(c, run, where, "gpus/kernel_offset", T_U64, 1, ngpu, gchunk, &sg, loff));
    if (!rc) rc = h5s_agree(c, h5s_put_col(c, run, where, "gpus/kernel_count", T_U64, 1, ngpu, gchunk, &sg, lc));
    for (size_t k = 0; k < NRUNKERNCOLS; k++)
        if (dk[k] >= 0) H5Dclose(dk[k]);
    if (dn >= 0) H5Dclose(dn);
    if (st >= 0) H5Tclose(st);
    h5s_sel_free(&sg);
    h5s_sel_free(&sk);
    free(nbuf);
    free(rows);
    free(same);
    free(rec);
    free(lc);
    free(loff);
    free(all);
    return rc;
}

/* A 64-bit digest of a GPU's simulated times (FNV-1a over the words): a
 * GPU is compared in full only with an earlier GPU whose digest is its. */
static uint64_t times_digest(const int64_t *const *cols, int ncol, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (int k = 0; k < ncol; k++)
        for (size_t v = 0; cols[k] && v < n; v++) h = (h ^ (uint64_t)cols[k][v]) * 1099511628211ull;
    return h ^ (uint64_t)n;
}

/* Which GPUs' per-node rows equal an earlier GPU's, so that the run
 * stores them once (docs/hdf5-schema.md, "Shared structure"): only when
 * the run's graphs are a store's, unchanged (info->graphs_from), and then
 * among the GPUs of one structure (a GPU and those the store says share
 * its rows). A GPU shares the rows of the first GPU of its structure whose
 * times have the same digest, when its start, end (and, when written,
 * deciding edges) equal that GPU's value for value: not only the
 * structure's first GPU, so that a job whose replicas time out in a few
 * ways (a slow GPU holds its own replica back) still writes each way once.
 * The digests are exchanged; under MPI each GPU whose rows another may
 * share comes from the rank that holds it (one broadcast each: a handful
 * per pipeline stage), so the answer is the same at every K. Sets
 * lm[i].node_same_as. Collective in MPI mode. */
static int results_share(sctx *c, const lsim_replay_item *items, rrow *lm, size_t nloc, int bind,
                         const lsim_store_run_info *info)
{
    if (!info || !info->graphs_from) return 0;
    gmeta *sm = NULL;
    size_t sn = 0, ngpu = nloc;
    int32_t *owner = NULL;
    int64_t *cand = NULL, *buf = NULL;
    uint64_t *dig = NULL;
    int rc = read_store_meta(c, info->graphs_from, &sm, &sn);
    size_t gfirst = 0; /* the lower ranks' GPUs, when no mapping names them (h5s_gpu_at) */
    if (c->mpi) {
        uint64_t mine = nloc, below = 0;
        MPI_Exscan(&mine, &below, 1, MPI_UINT64_T, MPI_SUM, c->comm);
        gfirst = c->rank ? (size_t)below : 0;
        MPI_Allreduce(MPI_IN_PLACE, &ngpu, 1, MPI_UINT64_T, MPI_SUM, c->comm);
    }
    if (!rc && sn != ngpu) rc = h5s_fail(c, LSIM_EINTERNAL, "the run's %zu GPUs are not the store's %zu", ngpu, sn);
    if (!rc) {
        owner = lsim_malloc((sn ? sn : 1) * sizeof *owner);
        cand = lsim_malloc((sn ? sn : 1) * sizeof *cand);
        dig = lsim_calloc(sn ? sn : 1, sizeof *dig);
        if (!owner || !cand || !dig) rc = h5s_nomem(c);
    }
    rc = h5s_agree(c, rc);
    if (rc) goto out;
    gpu_owners(c, gfirst, nloc, sn, owner);
    int ncol = bind ? 4 : 2;
    for (size_t i = 0; i < nloc; i++) {
        size_t gi = h5s_gpu_at(c, gfirst, i);
        const int64_t *mine[4] = {items[i].start, items[i].end, items[i].bind_start, items[i].bind_end};
        if (gi < sn) dig[gi] = times_digest(mine, ncol, items[i].g->n);
    }
    if (c->mpi) MPI_Allreduce(MPI_IN_PLACE, dig, (int)sn, MPI_UINT64_T, MPI_BXOR, c->comm); /* one owner each */
    /* cand[g]: the first GPU of g's structure with g's digest (itself if
     * none before it); the structures are few, their GPUs in order */
    for (size_t g = 0; g < sn; g++) {
        size_t key = sm[g].same_as >= 0 ? (size_t)sm[g].same_as : g;
        cand[g] = (int64_t)g;
        for (size_t f = key; f < g; f++) {
            size_t kf = sm[f].same_as >= 0 ? (size_t)sm[f].same_as : f;
            if (kf == key && cand[f] == (int64_t)f && dig[f] == dig[g]) {
                cand[g] = (int64_t)f;
                break;
            }
        }
    }
    /* each GPU some later GPU may share with: its rows where they are
     * compared, then the comparison */
    for (size_t g = 0; g < sn; g++) /* dig[t] = 1: some later GPU's candidate (digests no longer needed) */
        dig[g] = 0;
    for (size_t g = 0; g < sn; g++)
        if (cand[g] != (int64_t)g) dig[cand[g]] = 1;
    for (size_t t = 0; t < sn && !rc; t++) {
        if (!dig[t]) continue;
        size_t n = (size_t)sm[t].cnt[RK_NODE], tl = SIZE_MAX;
        for (size_t i = 0; i < nloc && tl == SIZE_MAX; i++)
            if (h5s_gpu_at(c, gfirst, i) == t) tl = i;
        const int64_t *src[4] = {NULL, NULL, NULL, NULL};
        if (tl != SIZE_MAX) {
            src[0] = items[tl].start, src[1] = items[tl].end, src[2] = items[tl].bind_start, src[3] = items[tl].bind_end;
        } else if (c->mpi) {
            int64_t *nb = lsim_realloc(buf, (n ? n : 1) * (size_t)ncol * sizeof *nb);
            if (!nb) { /* every rank takes part in the broadcast regardless */
                rc = h5s_nomem(c);
            } else {
                buf = nb;
                for (int k = 0; k < ncol; k++) src[k] = buf + (size_t)k * n;
            }
        }
        if (c->mpi) {
            /* the owner's rows, packed; the other ranks receive (n per column) */
            int64_t *tmp = NULL;
            if (tl != SIZE_MAX) {
                tmp = lsim_malloc((n ? n : 1) * (size_t)ncol * sizeof *tmp);
                for (int k = 0; tmp && k < ncol; k++)
                    if (n) memcpy(tmp + (size_t)k * n, src[k], n * sizeof *tmp);
                if (!tmp) rc = h5s_nomem(c);
            }
            int64_t *b = tl != SIZE_MAX ? tmp : buf;
            if (!rc && b) MPI_Bcast(b, (int)(n * (size_t)ncol), MPI_INT64_T, owner[t], c->comm);
            else if (!rc) rc = h5s_nomem(c);
            free(tmp);
            rc = h5s_agree(c, rc);
            if (rc) break;
        }
        for (size_t i = 0; i < nloc; i++) {
            size_t gi = h5s_gpu_at(c, gfirst, i);
            if (gi >= sn || gi == t || cand[gi] != (int64_t)t || items[i].g->n != n || !src[0]) continue;
            const int64_t *mine[4] = {items[i].start, items[i].end, items[i].bind_start, items[i].bind_end};
            int eq = 1;
            for (int k = 0; k < ncol && eq; k++)
                eq = !n || (mine[k] && src[k] && !memcmp(mine[k], src[k], n * sizeof *mine[k]));
            if (eq) lm[i].node_same_as = (int64_t)t;
        }
    }
out:
    free(buf);
    free(dig);
    free(cand);
    free(owner);
    free(sm);
    return h5s_agree(c, rc);
}

/* Write one run's datasets and attributes under `run`. This process holds
 * items[0..nloc), local GPU i being GPU h5s_gpu_at(c, gfirst, i) of the
 * run (serial: all of them, in order). Collective in MPI mode. */
/* The write's progress (lsim_store_run_info.progress). */
static void write_step(const lsim_store_run_info *info, const char *part, int k, int n)
{
    if (info && info->progress) info->progress(info->progress_ctx, part, k, n);
}

static int write_run(sctx *c, hid_t run, const char *where, const lsim_replay_item *items, size_t nloc,
                     const lsim_store_run_info *info)
{
    rrow *lm = lsim_calloc(nloc ? nloc : 1, sizeof *lm);
    const char **src = lsim_calloc(nloc ? nloc : 1, sizeof *src);
    size_t ngpu = 0, gfirst = 0;
    uint64_t tot[RR_N] = {0}, chunk[RR_N] = {0};
    rowsel sg, sel[RR_N];
    lsim_store_detail detail = run_detail(info);
    int bind = 0, lat = 0, embed = info && info->embed_graphs && detail != LSIM_STORE_DETAIL_SUMMARY;
    h5s_sel_one(&sg, 0, 0);
    for (int r = 0; r < RR_N; r++) h5s_sel_one(&sel[r], 0, 0);
    int rc = h5s_agree(c, check_run_layout(c));
    if (!rc) rc = h5s_agree(c, lm && src ? 0 : h5s_nomem(c));
    if (rc) goto out;
    for (size_t i = 0; i < nloc; i++) {
        row_from_item(&lm[i], &items[i]);
        src[i] = items[i].g->source ? items[i].g->source : "";
    }
    run_modes(c, items, nloc, &bind, &lat);
    if (detail != LSIM_STORE_DETAIL_NODES) bind = 0; /* the same on every rank: info is */
    int parts = embed ? 6 : 5;
    write_step(info, "sharing equal rows", 1, parts);
    /* a summary shares too: it keeps no per-node rows, but its gpus table
     * is then the other levels' value for value, and a GPU whose times are
     * another's keeps no kernel rows of its own (4,096 GPUs: 32.8 -> 1.2 MB, the
     * full archive 4.5 MB; bench/html_scale.sh) */
    rc = results_share(c, items, lm, nloc, bind, info);
    if (!rc) rc = run_layout(c, lm, nloc, &ngpu, &gfirst, tot, chunk, &sg, sel);
    uint64_t nnodes = 0; /* every GPU's nodes, shared rows or not */
    for (size_t i = 0; i < nloc; i++) nnodes += lm[i].cnt[RR_NODE];
    if (c->mpi) MPI_Allreduce(MPI_IN_PLACE, &nnodes, 1, MPI_UINT64_T, MPI_SUM, c->comm);
    uint64_t gchunk = h5s_min_u64(ngpu ? ngpu : 1, CHUNK_MAX_ROWS);
    write_step(info, "GPUs", 2, parts);
    if (!rc)
        rc = h5s_put_records(c, run, where, "gpus", run_gpu_cols, NRUNGPUCOLS, lm, sizeof *lm, ngpu, &sg, nloc, gchunk);
    if (!rc)
        rc = h5s_put_records(c, run, where, "gpus", run_gpu_opt_cols, NRUNGPUOPTCOLS, lm, sizeof *lm, ngpu, &sg, nloc,
                             gchunk);
    if (!rc)
        rc = h5s_put_records(c, run, where, "gpus", run_gpu_cpl_cols, NRUNGPUCPLCOLS, lm, sizeof *lm, ngpu, &sg, nloc,
                             gchunk);
    if (!rc)
        rc = h5s_put_records(c, run, where, "gpus", run_gpu_ctime_cols, NRUNGPUCTIMECOLS, lm, sizeof *lm, ngpu, &sg,
                             nloc, gchunk);
    if (!rc)
        rc = h5s_put_records(c, run, where, "gpus", run_gpu_root_cols, NRUNGPUROOTCOLS, lm, sizeof *lm, ngpu, &sg, nloc,
                             gchunk);
    if (!rc)
        rc = h5s_put_records(c, run, where, "gpus", run_gpu_place_cols, NRUNGPUPLACECOLS, lm, sizeof *lm, ngpu, &sg,
                             nloc, gchunk);
    if (!rc) rc = h5s_put_strings(c, run, where, "gpus/source", src, nloc, ngpu, &sg, gchunk);
    write_step(info, "iterations", 3, parts);
    if (!rc) rc = write_run_iters(c, run, where, items, nloc, gfirst, tot[RR_ITER], chunk[RR_ITER], &sel[RR_ITER]);
    write_step(info, "node rows", 4, parts);
    if (!rc) rc = write_run_cols(c, run, where, lm, nloc, bind, detail != LSIM_STORE_DETAIL_SUMMARY, tot, chunk, sel);
    if (!rc) rc = h5s_agree(c, (rc = label_run(run)) ? h5s_label_fail(c, rc, where) : 0);
    write_step(info, "kernels", 5, parts);
    if (!rc) rc = write_run_kernels(c, run, where, items, lm, nloc, gfirst, ngpu);
    if (embed) write_step(info, "graphs", 6, parts);
    if (!rc && embed) rc = write_run_graphs(c, run, where, items, nloc, gfirst, src, info);
    if (!rc && info && info->network_rows) rc = h5s_write_run_network(c, run, where, info->network_rows);
    if (!rc) rc = h5s_describe(c, run, where);
    if (rc) goto out;
    /* attributes: deterministic counters on the run, the rest in provenance */
    if (h5s_put_attr_u64(run, "ngpus", ngpu) || h5s_put_attr_u64(run, "nnodes", nnodes) ||
        h5s_put_attr_u64(run, "events", nnodes) ||
        h5s_put_attr_str(run, "latency_mode", lat < 0 ? "mixed" : lsim_latency_mode_name((lsim_latency_mode)lat)) ||
        h5s_put_attr_i32(run, "graphs_embedded", embed) || h5s_put_attr_str(run, "detail", lsim_store_detail_name(detail)) ||
        (info && info->network && h5s_put_attr_str(run, "network", info->network)))
        rc = h5s_fail(c, LSIM_EIO, "cannot write the attributes of %s", where);
    rc = h5s_agree(c, rc);
    if (!rc) rc = h5s_agree(c, write_provenance(c, run, info));
out:
    h5s_sel_free(&sg);
    for (int r = 0; r < RR_N; r++) h5s_sel_free(&sel[r]);
    free(lm);
    free(src);
    return rc;
}

/* The run's embedded graphs are the graphs of a store, unchanged since they
 * were read (lsim_store_run_info.graphs_from): copy the store's flat tables
 * into /runs/NAME/graph with H5Ocopy, which moves the compressed chunks as
 * they are. Writing them again from memory decompressed nothing but had to
 * deflate and checksum every row (about 6 GB for a 4,096-GPU GPT-3 job,
 * most of the result write's time and a buffer as large as the largest
 * column). The datasets' values are the same either way; /gpus is still
 * written from memory (its source size and checksum describe the run, not
 * the store). Rank 0 alone, POSIX driver, into the temporary file. */
static int copy_graph_tables(sctx *c, hid_t druns, const char *run_name, const char *store)
{
    static const char *const groups[] = {"nodes", "edges", "procs", "iters", "colls", "strings"};
    hid_t src = H5Fopen(store, H5F_ACC_RDONLY, H5P_DEFAULT), run = -1, gg = -1;
    int rc = 0;
    if (src < 0) return h5s_fail(c, LSIM_EIO, "cannot reopen the graph store %s to copy its graphs", store);
    run = H5Gcreate2(druns, run_name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    gg = run >= 0 ? H5Gcreate2(run, "graph", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    if (gg < 0) rc = h5s_fail(c, LSIM_EIO, "cannot create run group '%s'", run_name);
    for (size_t k = 0; !rc && k < sizeof groups / sizeof *groups; k++)
        if (H5Ocopy(src, groups[k], gg, groups[k], H5P_DEFAULT, H5P_DEFAULT) < 0)
            rc = h5s_fail(c, LSIM_EIO, "cannot copy /%s of the graph store %s", groups[k], store);
    /* optional: the CPU op trees of traced GPUs */
    if (!rc && H5Lexists(src, "cpu_ops", H5P_DEFAULT) > 0 &&
        H5Ocopy(src, "cpu_ops", gg, "cpu_ops", H5P_DEFAULT, H5P_DEFAULT) < 0)
        rc = h5s_fail(c, LSIM_EIO, "cannot copy /cpu_ops of the graph store %s", store);
    if (gg >= 0) H5Gclose(gg);
    if (run >= 0) H5Gclose(run);
    H5Fclose(src);
    return rc;
}

/* Rank 0 alone (POSIX driver): create TMP holding the root attributes,
 * /runs and every run of an existing result file at PATH except the one
 * being replaced. On failure TMP is removed. */
static int prepare_results_tmp(sctx *c, const char *tmp, const char *run_name, const lsim_store_run_info *info)
{
    char **runs = NULL;
    size_t nruns = 0;
    hid_t src = -1, sruns = -1, dst = -1, druns = -1, fapl = -1;
    int rc = 0;
    struct stat st;
    if (stat(c->path, &st) == 0) {
        if (H5Fis_hdf5(c->path) <= 0 || (src = H5Fopen(c->path, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0)
            return h5s_fail(c, LSIM_EFORMAT, "exists and is not a lumosim result file (not an HDF5 file or truncated); "
                                         "not overwritten");
        hid_t keep = c->file;
        int keep_mpi = c->mpi;
        c->file = src;
        c->mpi = 0; /* rank 0 alone: no agreement here */
        rc = h5s_check_root(c, LSIM_STORE_KIND_RESULTS);
        c->file = keep;
        c->mpi = keep_mpi;
        if (!rc) {
            sruns = H5Gopen2(src, "runs", H5P_DEFAULT);
            rc = sruns < 0 ? h5s_fail(c, LSIM_EFORMAT, "result file without a /runs group")
                           : h5s_list_links(c, sruns, &runs, &nruns);
        }
        for (size_t i = 0; !rc && i < nruns; i++)
            if (!strcmp(runs[i], run_name) && !(info && info->replace))
                rc = h5s_fail(c, LSIM_EARG, "already holds a run named '%s' (choose another name)", run_name);
        /* the runs to be copied are checked as every reader checks them
         * (issue 40: a damaged run was copied into the new file silently) */
        for (size_t i = 0; !rc && i < nruns; i++) {
            if (!strcmp(runs[i], run_name)) continue; /* replaced */
            lsim_store_run *r = NULL;
            lsim_err e;
            if (lsim_store_read_results_ex(c->path, runs[i], LSIM_STORE_READ_NO_TIMES, &r, &e))
                rc = lsim_err_set(&c->e, e.code, "%s (run '%s' would be copied with the new one; nothing written)",
                                  e.msg, runs[i]);
            lsim_store_run_free(r);
        }
        if (rc) goto out;
    }
    fapl = h5s_fapl_v110();
    if (fapl < 0) {
        rc = h5s_fail(c, LSIM_EIO, "cannot create HDF5 property list");
        goto out;
    }
    dst = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (dst < 0) {
        FILE *f = fopen(tmp, "wb");
        const char *why = f ? "HDF5 cannot create it" : strerror(errno);
        if (f) fclose(f);
        rc = lsim_err_set(&c->e, LSIM_EIO, "%s: cannot create %s: %s", c->path, tmp, why);
        goto out;
    }
    {
        hid_t keep = c->file;
        c->file = dst;
        int keep_mpi = c->mpi;
        c->mpi = 0;
        rc = h5s_write_root_attrs(c, LSIM_STORE_KIND_RESULTS, NULL, NULL);
        c->file = keep;
        c->mpi = keep_mpi;
    }
    if (!rc && (druns = H5Gcreate2(dst, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0)
        rc = h5s_fail(c, LSIM_EIO, "cannot create /runs in %s", tmp);
    for (size_t i = 0; !rc && i < nruns; i++) {
        if (!strcmp(runs[i], run_name)) continue; /* replaced */
        if (H5Ocopy(sruns, runs[i], druns, runs[i], H5P_DEFAULT, H5P_DEFAULT) < 0)
            rc = h5s_fail(c, LSIM_EIO, "cannot copy run '%s' into the new file", runs[i]);
    }
    if (!rc && copies_graphs(info)) rc = copy_graph_tables(c, druns, run_name, info->graphs_from);
out:
    if (druns >= 0) H5Gclose(druns);
    if (dst >= 0 && H5Fclose(dst) < 0 && !rc) rc = h5s_fail_cause(c, LSIM_EIO, " (disk full?)", "cannot write %s", tmp);
    if (fapl >= 0) H5Pclose(fapl);
    if (sruns >= 0) H5Gclose(sruns);
    if (src >= 0) H5Fclose(src);
    h5s_free_strs(runs, nruns);
    if (rc && dst >= 0) remove(tmp);
    return rc;
}

static int write_results_impl(sctx *c, const char *run_name, const lsim_replay_item *items, size_t n,
                              const lsim_store_run_info *info)
{
    char tmp[4096];
    hid_t runs = -1, run = -1, fapl = -1;
    int rc = 0;
    if (!valid_run_name(run_name))
        rc = h5s_fail(c, LSIM_EARG, "bad run name '%s' (1..%d of letters, digits, _ - . + = ,)", run_name ? run_name : "",
                  RUN_NAME_MAX);
    else if (n && !items)
        rc = h5s_fail(c, LSIM_EARG, "no replay items given");
    for (size_t i = 0; !rc && i < n; i++)
        if (!items[i].g || !items[i].r || !items[i].start || !items[i].end)
            rc = h5s_fail(c, LSIM_EARG, "replay item %zu lacks its graph, report or times", i);
    if (!rc && strlen(c->path) + 32 > sizeof tmp) rc = h5s_fail(c, LSIM_EARG, "path too long");
    rc = h5s_agree(c, rc);
    if (rc) return rc;
    /* 0. rank 0 locks the archive: the new file is built from the old one,
     * so a second writer must wait for the first one's rename */
    if ((rc = h5s_begin_tmp(c, LSIM_OUT_LOCK, tmp, sizeof tmp))) return rc;
    /* 1. rank 0 copies the runs to keep into the temporary file */
    if (c->rank == 0) rc = prepare_results_tmp(c, tmp, run_name, info);
    rc = h5s_agree(c, rc);
    if (rc) {
        if (c->rank == 0) lsim_out_abort(c->out);
        c->out = NULL;
        return rc;
    }
    /* 2. everyone adds the new run */
    fapl = h5s_fapl_v110();
    if (fapl < 0) rc = h5s_fail(c, LSIM_EIO, "cannot create HDF5 property list");
    if (!rc) rc = h5s_fapl_mpio(c, fapl, 1);
    rc = h5s_agree(c, rc);
    if (!rc) {
        c->file = H5Fopen(tmp, H5F_ACC_RDWR, fapl);
        rc = h5s_agree(c, c->file < 0 ? h5s_fail(c, LSIM_EIO, "cannot reopen %s", tmp) : 0);
    }
    if (!rc && c->mpi) rc = h5s_collective_transfers(c);
    if (!rc) {
        runs = H5Gopen2(c->file, "runs", H5P_DEFAULT);
        /* with graphs copied from a store, step 1 created the run group */
        if (copies_graphs(info))
            run = runs >= 0 ? H5Gopen2(runs, run_name, H5P_DEFAULT) : -1;
        else
            run = runs >= 0 ? H5Gcreate2(runs, run_name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
        rc = h5s_agree(c, run < 0 ? h5s_fail(c, LSIM_EIO, "cannot create run group '%s'", run_name) : 0);
    }
    if (!rc) {
        char where[300];
        snprintf(where, sizeof where, "/runs/%s", run_name);
        rc = write_run(c, run, where, items, n, info);
    }
    if (run >= 0) H5Gclose(run);
    if (runs >= 0) H5Gclose(runs);
    if (fapl >= 0) H5Pclose(fapl);
    /* 3. close, rename (rank 0) or remove */
    return h5s_finish_tmp(c, tmp, rc);
}

/* The entry points of the result writer: serial (mpi 0), collective in
 * rank order (mapped 0), or collective under a GPU-to-rank mapping (gpus:
 * this rank's GPUs, strictly ascending). */
static int write_results_entry(const char *path, int mpi, MPI_Comm comm, const char *run_name,
                               const lsim_replay_item *items, int mapped, const size_t *gpus, size_t n,
                               const lsim_store_run_info *info, lsim_err *err)
{
    static const size_t none[1] = {0};
    sctx c;
    h5s_ctx_init(&c, path, mpi, comm);
    if (info) {
        lsim_store_write_opts o = {NULL, NULL, info->deflate_level, {0}};
        h5s_apply_opts(&c, &o);
        c.hold = info->hold;
        if (c.hold) *c.hold = NULL;
    }
    int rc = path ? 0 : h5s_fail(&c, LSIM_EARG, "no output path");
    if (mapped) {
        if (!rc && n && !gpus) rc = h5s_fail(&c, LSIM_EARG, "no GPU list given");
        for (size_t i = 1; !rc && i < n; i++)
            if (gpus[i] <= gpus[i - 1]) rc = h5s_fail(&c, LSIM_EARG, "GPU list not ascending at GPU %zu", gpus[i]);
        c.gids = n ? gpus : none;
        c.ngids = n;
    }
    rc = h5s_agree(&c, rc);
    if (!rc) rc = write_results_impl(&c, run_name, items, n, info);
    return h5s_ctx_done(&c, rc, err);
}

int lsim_store_write_results_ex(const char *path, const char *run_name, const lsim_replay_item *items, size_t n,
                                const lsim_store_run_info *info, lsim_err *err)
{
    return write_results_entry(path, 0, MPI_COMM_NULL, run_name, items, 0, NULL, n, info, err);
}

int lsim_store_write_results_mpi(const char *path, MPI_Comm comm, const char *run_name,
                                 const lsim_replay_item *items, size_t n, const lsim_store_run_info *info,
                                 lsim_err *err)
{
    return write_results_entry(path, 1, comm, run_name, items, 0, NULL, n, info, err);
}

int lsim_store_write_results_mapped_mpi(const char *path, MPI_Comm comm, const char *run_name,
                                        const lsim_replay_item *items, const size_t *gpus, size_t n,
                                        const lsim_store_run_info *info, lsim_err *err)
{
    return write_results_entry(path, 1, comm, run_name, items, 1, gpus, n, info, err);
}

int lsim_store_write_results(const char *path, const char *run_name, const lsim_replay_item *items, size_t n,
                             const char *command_line, double wall_seconds, lsim_err *err)
{
    lsim_store_run_info info;
    memset(&info, 0, sizeof info);
    info.command_line = command_line;
    info.wall_seconds = wall_seconds;
    return lsim_store_write_results_ex(path, run_name, items, n, &info, err);
}

/* ------------------------------------------------------------ run read */

void lsim_store_run_free(lsim_store_run *r)
{
    if (!r) return;
    free(r->name);
    free(r->command_line);
    free(r->lumosim_version);
    free(r->host);
    free(r->mapping);
    free(r->config);
    free(r->memory);
    free(r->network);
    free(r->created);
    h5s_free_strs(r->phase_names, r->nphases);
    free(r->phase_seconds);
    for (size_t i = 0; r->gpus && i < r->ngpus; i++) {
        lsim_store_gpu_result *g = &r->gpus[i];
        free(g->source);
        h5s_free_strs(g->iter_names, g->report.niters);
        lsim_rank_report_clear(&g->report);
        lsim_critical_path_clear(&g->cp);
    }
    free(r->gpus);
    free(r->start);
    free(r->end);
    free(r->bind_start);
    free(r->bind_end);
    lsim_store_free_graphs(r->graphs, r->graphs ? r->ngpus : 0);
    free(r);
}

/* Rows of a 1-D dataset (or -1 with the error set). */
int64_t h5s_dset_rows(sctx *c, hid_t loc, const char *where, const char *name)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) {
        h5s_fail(c, LSIM_EFORMAT, "dataset %s/%s is missing", where, name);
        return -1;
    }
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[2];
    int64_t n = -1;
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 && H5Sget_simple_extent_dims(sp, dims, NULL) >= 0 &&
        dims[0] <= ((hsize_t)1 << 31))
        n = (int64_t)dims[0];
    else
        h5s_fail(c, LSIM_EFORMAT, "%s/%s is not a 1-D dataset of a sane size", where, name);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    return n;
}

static void read_provenance(hid_t run, lsim_store_run *r)
{
    r->wall_seconds = -1;
    r->mpi_ranks = 0;
    if (H5Lexists(run, "provenance", H5P_DEFAULT) <= 0) return;
    hid_t p = H5Gopen2(run, "provenance", H5P_DEFAULT);
    if (p < 0) return;
    int64_t v = 0;
    h5s_get_attr_str(p, "command_line", &r->command_line);
    h5s_get_attr_str(p, "lumosim_version", &r->lumosim_version);
    h5s_get_attr_str(p, "host", &r->host);
    h5s_get_attr_str(p, "mapping", &r->mapping);
    h5s_get_attr_str(p, "config", &r->config);
    h5s_get_attr_str(p, "memory", &r->memory); /* optional: runs of a synthesized job */
    h5s_get_attr_str(p, "created", &r->created);
    if (h5s_get_attr_num(p, "wall_seconds", 1, &r->wall_seconds) <= 0) r->wall_seconds = -1;
    if (h5s_get_attr_num(p, "mpi_ranks", 0, &v) > 0 && v > 0 && v <= INT_MAX) r->mpi_ranks = (int)v;
    char **pn = NULL;
    double *ps = NULL;
    size_t npn = 0, nps = 0;
    if (h5s_get_attr_strs(p, "phase_names", &pn, &npn) > 0 && h5s_get_attr_f64s(p, "phase_seconds", &ps, &nps) > 0 &&
        npn == nps) {
        r->phase_names = pn;
        r->phase_seconds = ps;
        r->nphases = npn;
    } else {
        h5s_free_strs(pn, npn);
        free(ps);
    }
    H5Gclose(p);
}

/* Check that off[] of records are prefix sums of cnt[] (fields at byte
 * offsets fo/fc); *total gets the sum. With may_share, a GPU may instead
 * name exactly the rows of an earlier GPU that has rows of its own. Those
 * owners' offsets are prefix sums, so they rise strictly (a GPU with no
 * rows is not an owner): a binary search finds the one named. A scan of
 * every earlier GPU was 20 s of reading a 98,304-GPU archive. */
static int check_prefix(sctx *c, const char *where, const char *what, const void *rec, size_t rsz, size_t n,
                        size_t fo, size_t fc, int may_share, uint64_t *total)
{
    uint64_t acc = 0, *own = NULL; /* owners' offset and count, in pairs */
    size_t nown = 0;
    int rc = 0;
    if (may_share && !(own = lsim_malloc((n ? n : 1) * 2 * sizeof *own)))
        return h5s_fail(c, LSIM_ENOMEM, "out of memory reading %s/gpus", where);
    for (size_t i = 0; i < n && !rc; i++) {
        uint64_t o, k;
        memcpy(&o, (const char *)rec + i * rsz + fo, 8);
        memcpy(&k, (const char *)rec + i * rsz + fc, 8);
        if (o != acc && may_share && k && o < acc) {
            size_t lo = 0, hi = nown; /* the first owner at or after o */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (own[2 * mid] < o) lo = mid + 1;
                else hi = mid;
            }
            if (lo < nown && own[2 * lo] == o && own[2 * lo + 1] == k) continue;
        }
        if (o != acc)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/%s_offset of GPU %zu is %llu, expected %llu", where, what, i,
                          (unsigned long long)o, (unsigned long long)acc);
        else if (k > ((uint64_t)1 << 40) - acc)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/%s_count of GPU %zu is too large", where, what, i);
        else if (own && k) {
            own[2 * nown] = o;
            own[2 * nown + 1] = k;
            nown++;
        }
        acc += rc ? 0 : k;
    }
    free(own);
    if (!rc) *total = acc;
    return rc;
}

/* The run's deterministic attributes (provenance is read_provenance's). */
static void read_run_attrs(hid_t run, lsim_store_run *r)
{
    char *lat = NULL;
    int64_t ev = 0;
    lsim_latency_mode m;
    /* "model", "observed"; "mixed" (or nothing) leaves the default, model */
    if (h5s_get_attr_str(run, "latency_mode", &lat) > 0 && !lsim_latency_mode_parse(lat, &m, NULL))
        r->latency = m, r->latency_known = 1;
    free(lat);
    if (h5s_get_attr_num(run, "events", 0, &ev) > 0 && ev >= 0) r->events = (uint64_t)ev;
    char *d = NULL;
    lsim_store_detail dv = LSIM_STORE_DETAIL_NODES; /* runs written before the attribute hold everything */
    if (h5s_get_attr_str(run, "detail", &d) > 0 && lsim_store_detail_parse(d, &dv)) dv = LSIM_STORE_DETAIL_NODES;
    free(d);
    r->detail = dv;
    h5s_get_attr_str(run, "network", &r->network); /* sim --link-sharing's runs only */
}

/* A span the metrics wrote (a window's, an iteration's, a part of a
 * breakdown): 0 .. LSIM_TIME_MAX, as their times keep (metrics.c), so
 * that sums and differences of two of them fit in int64. ds: the dataset
 * under where, part: the column of a multi-column one ("" none), row:
 * "GPU 3" or "row 17 (GPU 3)". */
static int check_span(sctx *c, const char *where, const char *ds, const char *part, const char *row, lsim_ns v)
{
    if (v >= 0 && v <= LSIM_TIME_MAX) return 0;
    return h5s_fail(c, LSIM_EFORMAT, "%s/%s of %s%s%s is %lld ns (valid: 0 .. 2^62 - 1 ns)", where, ds, row,
                    *part ? ": " : "", part, (long long)v);
}

/* The actual and predicted breakdowns of one row of table tbl ("gpus",
 * "iterations"): each part a span, and the wait a part of the exposed
 * communication (metrics.c bd_acc), so that exposed_comm minus it, which
 * the HTML page draws, is one too. */
static int check_breakdowns(sctx *c, const char *where, const char *tbl, const char *row, const lsim_breakdown bd[2])
{
    static const char *const side[2] = {"actual", "predicted"};
    static const char *const part[4] = {"exposed_compute", "overlapped", "exposed_comm", "other"};
    char ds[80];
    int rc = 0;
    for (int k = 0; !rc && k < 2; k++) {
        const lsim_ns v[4] = {bd[k].exposed_compute, bd[k].overlapped, bd[k].exposed_comm, bd[k].other};
        snprintf(ds, sizeof ds, "%s/breakdown_%s", tbl, side[k]);
        for (int p = 0; !rc && p < 4; p++) rc = check_span(c, where, ds, part[p], row, v[p]);
        if (!rc && (bd[k].exposed_comm_wait < 0 || bd[k].exposed_comm_wait > bd[k].exposed_comm))
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/%s/exposed_comm_wait_%s of %s is %lld ns (valid: 0 .. its exposed_comm, %lld ns)",
                          where, tbl, side[k], row, (long long)bd[k].exposed_comm_wait, (long long)bd[k].exposed_comm);
    }
    return rc;
}

/* gpus/... of a run: *rows and *src (n GPUs, the caller's), checked; tot
 * gets each flat table's rows. */
static int read_run_gpus(sctx *c, hid_t run, const char *where, rrow **rows, char ***src, size_t *n,
                         uint64_t tot[RR_N])
{
    int64_t nrows = h5s_dset_rows(c, run, where, "gpus/rank");
    if (nrows < 0) return c->e.code;
    *n = (size_t)nrows;
    rrow *x = *rows = lsim_calloc(*n ? *n : 1, sizeof **rows);
    if (!x) return h5s_nomem(c);
    int rc = h5s_get_records(c, run, where, "gpus", run_gpu_cols, NRUNGPUCOLS, x, sizeof *x, *n, 0, *n);
    if (!rc && H5Lexists(run, "gpus/has_fidelity", H5P_DEFAULT) > 0)
        rc = h5s_get_records(c, run, where, "gpus", run_gpu_opt_cols, NRUNGPUOPTCOLS, x, sizeof *x, *n, 0, *n);
    if (!rc && H5Lexists(run, "gpus/has_coupling", H5P_DEFAULT) > 0)
        rc = h5s_get_records(c, run, where, "gpus", run_gpu_cpl_cols, NRUNGPUCPLCOLS, x, sizeof *x, *n, 0, *n);
    if (!rc && H5Lexists(run, "gpus/has_coll_time", H5P_DEFAULT) > 0)
        rc = h5s_get_records(c, run, where, "gpus", run_gpu_ctime_cols, NRUNGPUCTIMECOLS, x, sizeof *x, *n, 0, *n);
    if (!rc && H5Lexists(run, "gpus/has_rootless", H5P_DEFAULT) > 0)
        rc = h5s_get_records(c, run, where, "gpus", run_gpu_root_cols, NRUNGPUROOTCOLS, x, sizeof *x, *n, 0, *n);
    if (!rc && H5Lexists(run, "gpus/has_place", H5P_DEFAULT) > 0)
        rc = h5s_get_records(c, run, where, "gpus", run_gpu_place_cols, NRUNGPUPLACECOLS, x, sizeof *x, *n, 0, *n);
    for (size_t i = 0; !rc && i < *n; i++) {
        const lsim_store_gpu_result *q = &x[i].g;
        if (!q->has_place) x[i].g.stage = x[i].g.replica = -1;
        else if (q->has_place > 1 || q->observed > 1 || q->stage < -1 || q->replica < -1)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus: the place columns of GPU %zu are out of range (has_place and "
                          "observed 0 or 1, stage and replica -1 or more)", where, i);
    }
    for (size_t i = 0; !rc && i < *n; i++) {
        const lsim_rank_report *q = &x[i].g.report;
        int bad = q->has_rootless > 1 || (q->has_rootless && !q->has_coupling);
        for (int k = 0; k < LSIM_COLL_NKINDS; k++) bad |= q->coll_rootless[k] > q->coll_coupled[k];
        if (bad) rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus: the rootless counts of GPU %zu are inconsistent", where, i);
    }
    for (size_t i = 0; !rc && i < *n; i++) {
        /* the bounds the metrics keep (metrics.c: simulated and observed
         * times within +-LSIM_TIME_MAX): start and end within them, so
         * that a report's job span (ends minus starts, report.c) fits in
         * int64. Compared without arithmetic that could overflow. */
        const lsim_rank_report *q = &x[i].g.report;
        const struct { const char *nm; lsim_ns s, w; } win[2] = {
            {"actual", q->window_actual_start, q->window_actual},
            {"predicted", q->window_predicted_start, q->window_predicted}};
        for (int k = 0; !rc && k < 2; k++)
            if (win[k].s < -LSIM_TIME_MAX || win[k].s > LSIM_TIME_MAX)
                rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/window_%s_start of GPU %zu is %lld ns (valid: within +-(2^62 - 1) ns)",
                              where, win[k].nm, i, (long long)win[k].s);
            else if (win[k].w < 0 || win[k].w > LSIM_TIME_MAX - win[k].s)
                rc = h5s_fail(c, LSIM_EFORMAT,
                              "%s/gpus/window_%s of GPU %zu is %lld ns (valid: 0 .. %lld, so that the window ends "
                              "within 2^62 - 1 ns)",
                              where, win[k].nm, i, (long long)win[k].w, (long long)(LSIM_TIME_MAX - win[k].s));
    }
    for (size_t i = 0; !rc && i < *n; i++) {
        const lsim_rank_report *q = &x[i].g.report;
        const lsim_breakdown bd[2] = {q->bd_actual, q->bd_predicted};
        char row[32];
        snprintf(row, sizeof row, "GPU %zu", i);
        rc = check_breakdowns(c, where, "gpus", row, bd);
    }
    for (size_t i = 0; !rc && i < *n; i++)
        if (x[i].g.report.has_coupling > 1)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/has_coupling of GPU %zu is %d (valid: 0 or 1)", where, i,
                          x[i].g.report.has_coupling);
    for (size_t i = 0; !rc && i < *n; i++) {
        /* times are sums of durations, waits parts of them */
        const lsim_rank_report *q = &x[i].g.report;
        int bad = q->has_coll_time > 1 || (q->has_coll_time && !q->has_coupling);
        for (int k = 0; k < LSIM_COLL_NKINDS; k++)
            bad |= q->coll_wait_actual[k] < 0 || q->coll_wait_actual[k] > q->coll_time_actual[k] ||
                   q->coll_wait_predicted[k] < 0 || q->coll_wait_predicted[k] > q->coll_time_predicted[k];
        if (bad)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus: the collective time columns of GPU %zu are inconsistent", where, i);
    }
    for (size_t i = 0; !rc && i < *n; i++) {
        const lsim_rank_report *q = &x[i].g.report;
        const lsim_err_dist *d[2] = {&q->start_err_gpu, &q->start_err_cpu};
        int bad = q->has_fidelity > 1 || !(q->duty_abs_diff >= 0 && q->duty_abs_diff <= 1);
        for (int k = 0; k < 2; k++)
            bad |= d[k]->median < 0 || d[k]->median > d[k]->p90 || d[k]->p90 > d[k]->max || (!d[k]->n && d[k]->max);
        if (bad) rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus: the node fidelity columns of GPU %zu are inconsistent", where, i);
    }
    if (!rc) rc = h5s_get_strings(c, run, where, "gpus/source", *n, 0, *n, src);
    for (int r = 0; r < RR_N && !rc; r++)
        rc = check_prefix(c, where, rtables[r].name, x, sizeof *x, *n, offsetof(rrow, off) + (size_t)r * 8,
                          offsetof(rrow, cnt) + (size_t)r * 8, shares_rows(r), &tot[r]);
    for (size_t i = 0; !rc && i < *n; i++) {
        const rrow *m = &x[i];
        if (m->cnt[RR_NODE] > UINT32_MAX || m->cnt[RR_ITER] > UINT32_MAX || m->cnt[RR_DUTY_A] > UINT32_MAX ||
            m->cnt[RR_DUTY_P] > UINT32_MAX)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus: GPU %zu has impossibly many rows", where, i);
        else if (m->g.has_cp > 1 || (!m->g.has_cp && m->cnt[RR_CP]) || m->g.cp.ntop > LSIM_CP_TOP ||
                 m->cnt[RR_CP] > m->cnt[RR_NODE])
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus: the critical-path columns of GPU %zu are inconsistent", where, i);
        for (uint64_t k = 0; !rc && k < m->g.cp.ntop; k++)
            if (m->g.cp.top[k] >= m->cnt[RR_NODE])
                rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/cp_top of GPU %zu names node %u, the GPU has %llu", where, i,
                              m->g.cp.top[k], (unsigned long long)m->cnt[RR_NODE]);
    }
    return rc;
}

/* r->gpus from the rows read (their sources moved). */
static int gpus_from_rows(sctx *c, lsim_store_run *r, const rrow *rows, char **src, size_t n, uint64_t nnodes)
{
    if (!(r->gpus = lsim_calloc(n ? n : 1, sizeof *r->gpus))) return h5s_nomem(c);
    r->ngpus = n;
    r->nnodes = nnodes;
    for (size_t i = 0; i < n; i++) {
        lsim_store_gpu_result *g = &r->gpus[i];
        *g = rows[i].g;
        g->source = src[i];
        src[i] = NULL;
        g->node_offset = rows[i].off[RR_NODE];
        g->node_count = rows[i].cnt[RR_NODE];
        for (int k = 0; k < 2; k++) {
            g->duty_offset[k] = rows[i].off[k ? RR_DUTY_P : RR_DUTY_A];
            g->duty_count[k] = rows[i].cnt[k ? RR_DUTY_P : RR_DUTY_A];
        }
        if (!g->has_cp) memset(&g->cp, 0, sizeof g->cp);
        for (size_t k = g->cp.ntop; k < LSIM_CP_TOP; k++) {
            g->cp.top[k] = 0;
            g->cp.top_time[k] = 0;
        }
    }
    return 0;
}

/* Row k (GPU i) of iterations/...: its spans, as a GPU's (check_span). */
static int check_iter(sctx *c, const char *where, uint64_t k, size_t i, const lsim_iter_report *it)
{
    char row[64];
    snprintf(row, sizeof row, "row %llu (GPU %zu)", (unsigned long long)k, i);
    const lsim_breakdown bd[2] = {it->bd_actual, it->bd_predicted};
    int rc = check_span(c, where, "iterations/actual", "", row, it->actual);
    if (!rc) rc = check_span(c, where, "iterations/predicted", "", row, it->predicted);
    if (!rc && it->cpu_actual != LSIM_SPAN_UNKNOWN) rc = check_span(c, where, "iterations/cpu_actual", "", row, it->cpu_actual);
    if (!rc && it->cpu_predicted != LSIM_SPAN_UNKNOWN)
        rc = check_span(c, where, "iterations/cpu_predicted", "", row, it->cpu_predicted);
    return rc ? rc : check_breakdowns(c, where, "iterations", row, bd);
}

/* iterations/...: each GPU's report.iters and iter_names. */
static int read_run_iters(sctx *c, hid_t run, const char *where, lsim_store_run *r, const rrow *rows, uint64_t ni)
{
    riter *ri = lsim_calloc(ni ? ni : 1, sizeof *ri);
    char **names = NULL;
    int rc = ri ? 0 : h5s_nomem(c);
    if (!rc) rc = h5s_get_records(c, run, where, "iterations", run_iter_cols, NRUNITERCOLS, ri, sizeof *ri, ni, 0, ni);
    if (!rc && H5Lexists(run, "iterations/cpu_actual", H5P_DEFAULT) > 0)
        rc = h5s_get_records(c, run, where, "iterations", run_iter_opt_cols, NRUNITEROPTCOLS, ri, sizeof *ri, ni, 0,
                             ni);
    else
        for (uint64_t k = 0; !rc && k < ni; k++) ri[k].it.cpu_actual = ri[k].it.cpu_predicted = LSIM_SPAN_UNKNOWN;
    if (!rc && H5Lexists(run, "iterations/exposed_comm_wait_actual", H5P_DEFAULT) > 0)
        rc = h5s_get_records(c, run, where, "iterations", run_iter_wait_cols, NRUNITERWAITCOLS, ri, sizeof *ri, ni, 0,
                             ni);
    if (!rc) rc = h5s_get_strings(c, run, where, "iterations/name", ni, 0, ni, &names);
    for (size_t i = 0; !rc && i < r->ngpus; i++) {
        lsim_store_gpu_result *g = &r->gpus[i];
        uint32_t cnt = (uint32_t)rows[i].cnt[RR_ITER];
        uint64_t at = rows[i].off[RR_ITER];
        if (!(g->report.iters = lsim_calloc(cnt ? cnt : 1, sizeof *g->report.iters)) ||
            !(g->iter_names = lsim_calloc(cnt ? cnt : 1, sizeof *g->iter_names))) {
            rc = h5s_nomem(c);
            break;
        }
        g->report.niters = cnt;
        for (uint32_t k = 0; !rc && k < cnt; k++) {
            if (ri[at + k].gpu != i)
                rc = h5s_fail(c, LSIM_EFORMAT, "%s/iterations/gpu: row %llu belongs to GPU %zu but says %u", where,
                              (unsigned long long)(at + k), i, ri[at + k].gpu);
            else if (!(rc = check_iter(c, where, at + k, i, &ri[at + k].it))) {
                g->report.iters[k] = ri[at + k].it;
                g->iter_names[k] = names[at + k];
                names[at + k] = NULL;
            }
        }
    }
    free(ri);
    h5s_free_strs(names, ni);
    return rc;
}

/* The flat columns (run_cols): per-node times into the run's arrays, the
 * rest into copies owned by each GPU. no_times: without RF_TIMES columns. */
static int read_run_cols(sctx *c, hid_t run, const char *where, lsim_store_run *r, const rrow *rows,
                         const uint64_t tot[RR_N], int no_times)
{
    const char *probe = bind_probe();
    int bind = probe && H5Lexists(run, probe, H5P_DEFAULT) > 0, rc = 0;
    for (size_t k = 0; k < NRUNCOLS && !rc; k++) {
        const runcol *col = &run_cols[k];
        if ((no_times && (col->flags & RF_TIMES)) || ((col->flags & RF_BIND) && !bind)) continue;
        if (c->no_duty && (col->rr == RR_DUTY_A || col->rr == RR_DUTY_P)) { /* no bins: none held */
            for (size_t i = 0; i < r->ngpus; i++) set_count(&r->gpus[i], col->rr, 0);
            continue;
        }
        uint64_t total = tot[col->rr];
        size_t es = h5s_tsize(col->t);
        char *buf = lsim_malloc((total ? total : 1) * es);
        if (!buf) return h5s_nomem(c);
        rc = h5s_get_col(c, run, where, col->name, col->t, 1, total, 0, total, buf);
        if (col->run_at) { /* the run owns it from here on, read or not */
            set_ptr(r, col->run_at, buf);
            continue;
        }
        for (size_t i = 0; !rc && i < r->ngpus; i++) {
            lsim_store_gpu_result *g = &r->gpus[i];
            uint64_t cnt = rows[i].cnt[col->rr];
            void *p = NULL;
            if ((col->flags & RF_CP) && !g->has_cp) continue;
            if ((cnt || (col->flags & RF_CP)) && !(p = lsim_malloc((cnt ? cnt : 1) * es))) rc = h5s_nomem(c);
            else if (cnt) memcpy(p, buf + rows[i].off[col->rr] * es, cnt * es);
            set_ptr(g, col->at, p);
            set_count(g, col->rr, cnt);
        }
        free(buf);
    }
    return rc;
}

/* The critical paths name nodes and edges of their GPU. */
static int check_paths(sctx *c, const char *where, const lsim_store_run *r)
{
    for (size_t i = 0; i < r->ngpus; i++) {
        const lsim_store_gpu_result *g = &r->gpus[i];
        for (size_t j = 0; g->has_cp && j < g->cp.n; j++)
            if (g->cp.nodes[j] >= g->node_count || g->cp.via[j] < -1)
                return h5s_fail(c, LSIM_EFORMAT, "%s/critical_path of GPU %zu: entry %zu names node %u / edge %lld "
                                                 "outside the GPU",
                                where, i, j, g->cp.nodes[j], (long long)g->cp.via[j]);
    }
    return 0;
}

/* GPU i's embedded graph against its run rows (node count, iteration
 * names, the critical path's edges). */
int h5s_check_run_graph(sctx *c, const char *where, size_t i, const lsim_graph *g, const lsim_store_gpu_result *x)
{
    int rc = 0;
    if (g->n != x->node_count)
        rc = h5s_fail(c, LSIM_EFORMAT, "%s/graph: GPU %zu has %zu nodes, the run %llu", where, i, g->n,
                      (unsigned long long)x->node_count);
    for (uint32_t k = 0; !rc && k < x->report.niters; k++)
        if (x->report.iters[k].name >= lsim_strtab_count(g->strings))
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/iterations/name_id of GPU %zu is past the graph's strings", where, i);
    for (size_t k = 0; !rc && x->has_cp && k < x->cp.n; k++)
        if (x->cp.via[k] >= (int64_t)g->nedges)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/critical_path/via of GPU %zu names edge %lld, the graph has %llu",
                          where, i, (long long)x->cp.via[k], (unsigned long long)g->nedges);
    return rc;
}

/* The embedded graphs, when the run has them: they must match the run row
 * for row. */
static int read_run_graphs(sctx *c, hid_t run, const char *where, lsim_store_run *r)
{
    if (H5Lexists(run, "graph", H5P_DEFAULT) <= 0) return 0;
    hid_t gg = H5Gopen2(run, "graph", H5P_DEFAULT);
    char gw[512];
    size_t ng = 0, n = r->ngpus;
    int rc;
    snprintf(gw, sizeof gw, "%s/graph", where);
    if (gg < 0) rc = h5s_fail(c, LSIM_EFORMAT, "%s cannot be opened", gw);
    else rc = h5s_read_graph_tables(c, gg, gw, 0, SIZE_MAX, NULL, &r->graphs, &ng);
    if (gg >= 0) H5Gclose(gg);
    if (!rc && ng != n) {
        lsim_store_free_graphs(r->graphs, ng);
        r->graphs = NULL;
        rc = h5s_fail(c, LSIM_EFORMAT, "%s holds %zu GPUs, the run %zu", gw, ng, n);
    }
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_graph *g = r->graphs[i];
        const lsim_store_gpu_result *x = &r->gpus[i];
        rc = h5s_check_run_graph(c, where, i, g, x);
        for (size_t v = 0; !rc && r->bind_start && v < g->n; v++) {
            int64_t bs = r->bind_start[x->node_offset + v], be = r->bind_end[x->node_offset + v];
            if (bs < -1 || be < -1 || bs >= (int64_t)g->nedges || be >= (int64_t)g->nedges)
                rc = h5s_fail(c, LSIM_EFORMAT, "%s/nodes/bind_start or bind_end of GPU %zu names an edge outside the "
                                               "graph (node %zu)",
                              where, i, v);
        }
    }
    return rc;
}

/* Point each GPU's per-node times into the run's arrays (the run_at
 * columns, all per-node). */
static void attach_times(lsim_store_run *r)
{
    for (size_t k = 0; k < NRUNCOLS; k++) {
        const runcol *col = &run_cols[k];
        char *base = col->run_at ? get_ptr(r, col->run_at) : NULL;
        for (size_t i = 0; base && i < r->ngpus; i++)
            set_ptr(&r->gpus[i], col->at, base + r->gpus[i].node_offset * h5s_tsize(col->t));
    }
}

/* Read run group `run`; light 1: the per-GPU table and attributes only;
 * light 2: everything but the per-node times (start, end, bind_*); light 3:
 * nor the embedded graphs. */
static int read_run(sctx *c, hid_t run, const char *where, const char *name, int light, lsim_store_run **out)
{
    rrow *rows = NULL;
    char **src = NULL;
    size_t n = 0;
    uint64_t tot[RR_N] = {0};
    int rc = check_run_layout(c);
    if (rc) return rc;
    lsim_store_run *r = lsim_calloc(1, sizeof *r);
    if (!r || !(r->name = lsim_strdup(name))) {
        free(r);
        return h5s_nomem(c);
    }
    read_provenance(run, r);
    read_run_attrs(run, r);
    rc = read_run_gpus(c, run, where, &rows, &src, &n, tot);
    if (!rc) rc = gpus_from_rows(c, r, rows, src, n, tot[RR_NODE]);
    if (!rc && light != 1) rc = read_run_iters(c, run, where, r, rows, tot[RR_ITER]);
    /* a summary has no per-node times to read */
    if (!rc && light != 1)
        rc = read_run_cols(c, run, where, r, rows, tot, light >= 2 || r->detail == LSIM_STORE_DETAIL_SUMMARY);
    if (!rc && light != 1) rc = check_paths(c, where, r);
    if (!rc && light != 1 && light != 3) rc = read_run_graphs(c, run, where, r);
    if (!rc) {
        attach_times(r);
        *out = r;
        r = NULL;
    }
    lsim_store_run_free(r);
    free(rows);
    h5s_free_strs(src, n);
    return rc;
}

int h5s_read_run_summary(sctx *c, hid_t run, const char *where, const char *name, lsim_store_run **out)
{
    return read_run(c, run, where, name, 1, out);
}

static int open_results(sctx *c, hid_t *runs, char ***names, size_t *n)
{
    int rc = h5s_open_file(c);
    if (!rc) rc = h5s_check_root(c, LSIM_STORE_KIND_RESULTS);
    if (rc) return rc;
    *runs = H5Gopen2(c->file, "runs", H5P_DEFAULT);
    if (*runs < 0) return h5s_fail(c, LSIM_EFORMAT, "result file without a /runs group");
    return h5s_list_links(c, *runs, names, n);
}

int lsim_store_list_runs(const char *path, char ***names, size_t *n, lsim_err *err)
{
    sctx c;
    hid_t runs = -1;
    *names = NULL;
    *n = 0;
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = open_results(&c, &runs, names, n);
    if (runs >= 0) H5Gclose(runs);
    return h5s_ctx_done(&c, rc, err);
}

static void join_names(char *buf, size_t len, char **names, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at + 1 < len; i++) {
        int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", names[i]);
        if (w < 0) break;
        at += (size_t)w;
    }
}

int lsim_store_read_results(const char *path, const char *run_name, lsim_store_run **out, lsim_err *err)
{
    return lsim_store_read_results_ex(path, run_name, 0, out, err);
}

/* Open run `run_name` of the result file c names (NULL: its only run);
 * *runs and *run: the caller closes them (-1 when not open); where: the
 * run's path. Local. */
int h5s_open_run(sctx *c, const char *run_name, hid_t *runs, hid_t *run, char *where, size_t wlen)
{
    char **names = NULL;
    size_t n = 0;
    *runs = *run = -1;
    int rc = open_results(c, runs, &names, &n);
    const char *pick = run_name;
    if (!rc && !pick) {
        if (n == 1) pick = names[0];
        else {
            char list[256];
            join_names(list, sizeof list, names, n);
            rc = h5s_fail(c, LSIM_EARG, "holds %zu runs (%s): name the one to read", n, n ? list : "none");
        }
    }
    if (!rc) {
        size_t i;
        for (i = 0; i < n && strcmp(names[i], pick) != 0; i++) {}
        if (i == n) {
            char list[256];
            join_names(list, sizeof list, names, n);
            rc = h5s_fail(c, LSIM_EARG, "no run named '%s' (runs: %s)", pick, n ? list : "none");
        }
    }
    if (!rc && (*run = H5Gopen2(*runs, pick, H5P_DEFAULT)) < 0) rc = h5s_fail(c, LSIM_EFORMAT, "cannot open run '%s'", pick);
    if (!rc) snprintf(where, wlen, "/runs/%s", pick);
    h5s_free_strs(names, n);
    return rc;
}

int lsim_store_read_results_ex(const char *path, const char *run_name, int flags, lsim_store_run **out,
                               lsim_err *err)
{
    sctx c;
    hid_t runs = -1, run = -1;
    char where[300];
    *out = NULL;
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    c.cpu_ops = (flags & LSIM_STORE_READ_RUN_CPU_OPS) != 0;
    c.no_duty = (flags & LSIM_STORE_READ_NO_DUTY) != 0;
    int rc = h5s_open_run(&c, run_name, &runs, &run, where, sizeof where);
    int light = (flags & LSIM_STORE_READ_NO_GRAPHS) ? 3 : (flags & LSIM_STORE_READ_NO_TIMES) ? 2 : 0;
    if (!rc) rc = read_run(&c, run, where, where + strlen("/runs/"), light, out);
    if (run >= 0) H5Gclose(run);
    if (runs >= 0) H5Gclose(runs);
    return h5s_ctx_done(&c, rc, err);
}
