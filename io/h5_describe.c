/* Self-describing files (docs/hdf5-schema.md, "Units and enum tables"):
 * every numeric dataset of a graph store or a result run gets a `units`
 * attribute, and every enum column an `enum_names` attribute naming its
 * values 0..N-1. Both are written after the datasets, by one walk over the
 * group, from one table below; a numeric dataset the table does not know
 * is an internal error, so a new column cannot be written without its
 * units (tests/integration/h5_describe_check.c checks the files too).
 * Readers never require the attributes: files written before them load as
 * before. The enum names are expanded from the X-macro name tables
 * (graph.h, trace.h), never written out by hand. */
#include "h5_internal.h"

#include "lumosim/graph.h"
#include "lumosim/trace.h"
#include "lumosim/search.h"
#include "lumosim/synth.h"

#include <stdlib.h>
#include <string.h>

#define NAME_ENTRY_(id, name) name,
static const char *const node_kinds[] = {LSIM_NODE_KINDS(NAME_ENTRY_)};
static const char *const edge_classes[] = {LSIM_EDGE_CLASSES(NAME_ENTRY_)};
static const char *const coll_kinds[] = {LSIM_COLL_KINDS(NAME_ENTRY_)};
static const char *const phases[] = {LSIM_PHASES(NAME_ENTRY_)};
static const char *const latency_modes[] = {LSIM_LATENCY_MODES(NAME_ENTRY_)};
static const char *const mem_sources[] = {LSIM_MEM_SOURCES(NAME_ENTRY_)};
static const char *const recompute_modes[] = {LSIM_RECOMPUTE_MODES(NAME_ENTRY_)};
static const char *const search_reasons[] = {LSIM_SEARCH_REASONS(NAME_ENTRY_)};
#undef NAME_ENTRY_
#define NNAMES(a) (sizeof a / sizeof a[0])

/* Units: "ns" times and durations, "bytes" sizes and byte positions,
 * "elements" tensor element counts, "1/s" rates (what a count per second
 * counts is named beside it: a search's throughput_unit), "1" everything
 * dimensionless (counts, row ids, string ids, flags, enums, ratios,
 * fractions). */
typedef struct dcol {
    const char *table, *name, *units;
    const char *const *enums; /* enum_names, or NULL */
    size_t nenums;
} dcol;

#define U(t, n, u) {t, n, u, NULL, 0}
#define E(t, n, tab) {t, n, "1", tab, NNAMES(tab)}

/* By the name of the dataset's group and its own name. The graph store's
 * /gpus and a run's gpus share the group name; their common columns mean
 * the same. */
static const dcol dcols[] = {
    /* graph store (also /runs/NAME/graph) */
    U("gpus", "rank", "1"), U("gpus", "world_size", "1"), U("gpus", "source_size", "bytes"),
    U("gpus", "source_crc32", "1"), E("gpus", "latency_mode", latency_modes),
    U("gpus", "node_offset", "1"), U("gpus", "node_count", "1"), U("gpus", "edge_offset", "1"),
    U("gpus", "edge_count", "1"), U("gpus", "proc_offset", "1"), U("gpus", "proc_count", "1"),
    U("gpus", "iter_offset", "1"), U("gpus", "iter_count", "1"), U("gpus", "coll_offset", "1"),
    U("gpus", "coll_count", "1"), U("gpus", "string_offset", "1"), U("gpus", "string_count", "1"), U("gpus", "strings_like", "1"),
    U("gpus", "char_offset", "bytes"), U("gpus", "char_count", "bytes"), U("gpus", "t0", "ns"),
    U("gpus", "queued_gap_ns", "ns"), U("gpus", "launch_latency_ns", "ns"), U("gpus", "launch_samples", "1"),
    U("gpus", "prewindow", "1"), U("gpus", "releases", "1"), U("gpus", "sync_events_used", "1"),
    U("gpus", "edges_by_class", "1"), U("gpus", "inferred_by_class", "1"), U("gpus", "dropped", "1"),
    U("gpus", "mem_events", "1"), E("gpus", "mem_source", mem_sources), U("gpus", "mem_device", "1"),
    U("gpus", "mem_peak_allocated", "bytes"), U("gpus", "mem_peak_reserved", "bytes"), U("gpus", "mem_capacity", "bytes"),
    E("nodes", "kind", node_kinds), U("nodes", "flags", "1"), U("nodes", "proc", "1"), U("nodes", "name", "1"),
    U("nodes", "dur", "ns"), U("nodes", "obs_start", "ns"), U("nodes", "obs_end", "ns"),
    U("nodes", "release", "ns"), U("nodes", "corr", "1"), U("nodes", "iter", "1"), U("nodes", "coll", "1"),
    E("nodes", "phase", phases), U("nodes", "fwd_seq", "1"), U("nodes", "grad_bytes", "bytes"),
    U("nodes", "in_off", "1"),
    U("edges", "in_src", "1"), U("edges", "in_delay", "ns"), E("edges", "in_class", edge_classes),
    U("procs", "is_gpu", "1"), U("procs", "pid", "1"), U("procs", "tid", "1"), U("procs", "nnodes", "1"),
    U("iters", "name", "1"), U("iters", "obs_start", "ns"), U("iters", "obs_end", "ns"),
    E("colls", "kind", coll_kinds), U("colls", "from_metadata", "1"), U("colls", "group_size", "1"),
    U("colls", "in_nelems", "elements"), U("colls", "out_nelems", "elements"), U("colls", "dtype_bytes", "bytes"),
    U("colls", "bytes", "bytes"), U("colls", "pg_name", "1"), U("colls", "pg_ranks", "1"), U("colls", "seq", "1"),
    U("colls", "root", "1"),
    U("strings", "offset", "bytes"), U("strings", "chars", "1"), U("strings", "id", "1"),
    /* lumosim search -o */
    U("candidates", "tp", "1"), U("candidates", "pp", "1"), U("candidates", "dp", "1"),
    U("candidates", "micro_batch", "1"), U("candidates", "vstages", "1"), E("candidates", "recompute", recompute_modes),
    U("candidates", "distributed_optimizer", "1"), E("candidates", "reason", search_reasons),
    U("candidates", "peak_memory", "bytes"), U("candidates", "peak_memory_stage", "1"), U("candidates", "simulated", "1"),
    U("candidates", "step", "ns"), U("candidates", "breakdown", "ns"), U("candidates", "sim_time", "ns"),
    U("candidates", "micro_batches", "1"), U("candidates", "cp", "1"), U("candidates", "ep", "1"),
    U("candidates", "fsdp", "1"), U("candidates", "throughput_per_s", "1/s"),
    U("search", "ranking", "1"),
    /* result run */
    U("gpus", "duty_actual_offset", "1"), U("gpus", "duty_actual_count", "1"),
    U("gpus", "duty_predicted_offset", "1"), U("gpus", "duty_predicted_count", "1"),
    U("gpus", "kernel_offset", "1"), U("gpus", "kernel_count", "1"),
    U("gpus", "window_actual", "ns"), U("gpus", "window_predicted", "ns"), U("gpus", "window_actual_start", "ns"),
    U("gpus", "window_predicted_start", "ns"), U("gpus", "window_error", "1"), U("gpus", "breakdown_actual", "ns"),
    U("gpus", "breakdown_predicted", "ns"), U("gpus", "exposed_comm_wait_actual", "ns"),
    U("gpus", "exposed_comm_wait_predicted", "ns"), U("gpus", "coupled", "1"), U("gpus", "clock_offset", "ns"),
    U("gpus", "bin_ns", "ns"), U("gpus", "max_abs_start_err", "ns"), U("gpus", "max_abs_end_err", "ns"),
    U("gpus", "nodes_exact", "1"), U("gpus", "gpu_nodes", "1"), U("gpus", "has_critical_path", "1"),
    U("gpus", "cp_offset", "1"), U("gpus", "cp_count", "1"), U("gpus", "cp_start", "ns"), U("gpus", "cp_end", "ns"),
    U("gpus", "cp_length", "ns"), U("gpus", "cp_by_cat", "ns"), U("gpus", "cp_by_kind", "ns"),
    U("gpus", "cp_by_class", "ns"), U("gpus", "cp_edges_by_class", "1"), U("gpus", "cp_top", "1"),
    U("gpus", "cp_top_time", "ns"), U("gpus", "cp_ntop", "1"),
    U("gpus", "has_fidelity", "1"), U("gpus", "start_err_gpu_count", "1"), U("gpus", "start_err_gpu", "ns"),
    U("gpus", "start_err_cpu_count", "1"), U("gpus", "start_err_cpu", "ns"),
    U("gpus", "duty_abs_diff", "1"), /* percentage points of the duty cycle */
    U("gpus", "has_coupling", "1"), U("gpus", "coll_coupled", "1"), U("gpus", "coll_traced", "1"),
    U("gpus", "has_coll_time", "1"), U("gpus", "coll_time_actual", "ns"), U("gpus", "coll_wait_actual", "ns"),
    U("gpus", "coll_time_predicted", "ns"), U("gpus", "coll_wait_predicted", "ns"),
    U("gpus", "has_rootless", "1"), U("gpus", "coll_rootless", "1"),
    U("gpus", "has_place", "1"), U("gpus", "stage", "1"), U("gpus", "replica", "1"), U("gpus", "observed", "1"),
    /* the graph store's CPU op trees (h5_cpu_ops.c): per GPU, then per op */
    U("cpu_ops", "op_offset", "1"), U("cpu_ops", "op_count", "1"), U("cpu_ops", "node_offset", "1"),
    U("cpu_ops", "node_count", "1"), U("cpu_ops", "node_op", "1"),
    U("op", "name", "1"), U("op", "cat", "1"), U("op", "start_node", "1"), U("op", "end_node", "1"),
    U("op", "start_off", "ns"), U("op", "end_off", "ns"), U("op", "corr", "1"), U("op", "coll", "1"),
    U("op", "kind", "1"), U("op", "flags", "1"),
    U("iterations", "gpu", "1"), U("iterations", "name_id", "1"), U("iterations", "actual", "ns"),
    U("iterations", "predicted", "ns"), U("iterations", "error", "1"), U("iterations", "breakdown_actual", "ns"),
    U("iterations", "breakdown_predicted", "ns"), U("iterations", "cpu_actual", "ns"),
    U("iterations", "cpu_predicted", "ns"), U("iterations", "exposed_comm_wait_actual", "ns"),
    U("iterations", "exposed_comm_wait_predicted", "ns"),
    U("nodes", "start", "ns"), U("nodes", "end", "ns"), U("nodes", "bind_start", "1"), U("nodes", "bind_end", "1"),
    U("duty", "actual", "1"), U("duty", "predicted", "1"),
    U("critical_path", "node", "1"), U("critical_path", "via", "1"),
    U("kernels", "gpu", "1"), E("kernels", "kind", node_kinds), U("kernels", "name_id", "1"),
    U("kernels", "count", "1"), U("kernels", "observed_count", "1"), U("kernels", "collective", "1"),
    U("kernels", "actual_total", "ns"), U("kernels", "actual_mean", "ns"), U("kernels", "predicted_total", "ns"),
    U("kernels", "predicted_mean", "ns"),
    /* result run: sim --link-sharing's flows and links (io/h5_network.c) */
    U("net_flows", "gpu", "1"), U("net_flows", "node", "1"), E("net_flows", "kind", coll_kinds),
    U("net_flows", "participants", "1"), U("net_flows", "bytes", "bytes"), U("net_flows", "links", "1"),
    U("net_flows", "start", "ns"), U("net_flows", "alone", "ns"), U("net_flows", "shared", "ns"),
    U("net_links", "link", "1"), U("net_links", "flows", "1"), U("net_links", "busy", "ns"),
};
#undef U
#undef E

static const dcol *find_dcol(const char *table, const char *name)
{
    for (size_t k = 0; k < NNAMES(dcols); k++)
        if (!strcmp(dcols[k].table, table) && !strcmp(dcols[k].name, name)) return &dcols[k];
    return NULL;
}

/* Dataset `name` of group `table` (opened as d): its attributes; string
 * datasets carry none. */
static int describe_dataset(sctx *c, hid_t d, const char *where, const char *table, const char *name)
{
    hid_t t = H5Dget_type(d);
    if (t < 0) return h5s_fail(c, LSIM_EIO, "cannot read the type of %s/%s", where, name);
    H5T_class_t cls = H5Tget_class(t);
    H5Tclose(t);
    if (cls == H5T_STRING) return 0;
    const dcol *k = find_dcol(table, name);
    if (!k) return h5s_fail(c, LSIM_EINTERNAL, "%s/%s has no units (io/h5_describe.c)", where, name);
    int rc = h5s_put_attr_str(d, "units", k->units);
    if (!rc && k->enums) rc = h5s_put_attr_strs(d, "enum_names", k->enums, k->nenums);
    if (rc == H5S_NOMEM) return h5s_nomem(c);
    if (rc) return h5s_fail(c, LSIM_EIO, "cannot write the attributes of %s/%s", where, name);
    return 0;
}

/* The group loc (path where, its own name table) and the groups below it,
 * links in name order so that every MPI rank makes the same calls. */
static int describe_group(sctx *c, hid_t loc, const char *where, const char *table, int depth)
{
    char **names = NULL;
    size_t n = 0;
    int rc = h5s_list_links(c, loc, &names, &n);
    if (rc) return rc == LSIM_ENOMEM ? rc : h5s_fail(c, LSIM_EIO, "cannot list the datasets of %s", where[0] ? where : "/");
    for (size_t i = 0; !rc && i < n; i++) {
        hid_t o = H5Oopen(loc, names[i], H5P_DEFAULT);
        if (o < 0) {
            rc = h5s_fail(c, LSIM_EIO, "cannot open %s/%s", where, names[i]);
            break;
        }
        H5I_type_t ty = H5Iget_type(o);
        if (ty == H5I_DATASET) {
            rc = describe_dataset(c, o, where, table, names[i]);
        } else if (ty == H5I_GROUP && depth < 4) {
            char sub[1024];
            /* the path names a group only in messages, but a cut one would mislead */
            if ((size_t)snprintf(sub, sizeof sub, "%s/%s", where, names[i]) >= sizeof sub)
                rc = h5s_fail(c, LSIM_EINTERNAL, "group path %s/%s is too long", where, names[i]);
            else
                rc = describe_group(c, o, sub, names[i], depth + 1);
        }
        H5Oclose(o);
    }
    h5s_free_strs(names, n);
    return rc;
}

int h5s_describe(sctx *c, hid_t loc, const char *where)
{
    return h5s_agree(c, describe_group(c, loc, where, "", 0));
}
