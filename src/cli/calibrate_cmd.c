/* lumosim calibrate: fit the cost models' GPU parameters (and, with
 * --topology-out, the network's) to traces and nccl-tests output files.
 * Method: include/lumosim/calibrate.h, docs/cost-models.md "Calibration".
 * Nothing is written, and nothing printed on stdout, unless every input
 * was read and every fit succeeded. */
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "lumosim/calibrate.h"
#include "lumosim/cost.h"
#include "lumosim/et.h"
#include "lumosim/memlimit.h"

const char *const LSIM_USAGE_CALIBRATE =
    "usage: lumosim calibrate [options] TRACES... -o gpu.json\n"
    "\n"
    "Fits the cost models to real traces (docs/cost-models.md, Calibration):\n"
    "GEMM efficiency (gemm_eff_max, gemm_eff_half) from the kernels launched\n"
    "inside aten::mm/addmm/bmm/baddbmm/matmul/linear (traces recorded with\n"
    "record_shapes=True), kernel_min_ns, launch_cpu_ns, launch_latency_ns; and\n"
    "collective alpha/beta from the traces' collectives (the ranks of one job:\n"
    "matched instances) and from nccl-tests output. Writes a GPU spec that\n"
    "synth --gpu accepts and prints the fit report. TRACES are Kineto traces or\n"
    "directories of them.\n"
    "\n"
    "options:\n"
    "  -o FILE            the GPU spec to write (required)\n"
    "  --gpu NAME|FILE    base spec: h100, a100, h200 or a GPU JSON file (default:\n"
    "                     from the traces' deviceProperties name)\n"
    "  --nccl-tests FILE  an nccl-tests output file (repeatable)\n"
    "  --topology FILE    base topology for --topology-out (default: the DGX\n"
    "                     topology of the GPU, lsim_topology_default)\n"
    "  --topology-out FILE  write the topology with the collective fits applied\n"
    "  -h, --help         this help\n"
    "\n"
    "The network alone (no traces, no -o; docs/network.md):\n"
    "  lumosim calibrate --nccl-csv F.csv... [--nccl-tests F...] --topology-out T.json\n"
    "fits the NCCL model's link and protocol parameters (ring_step_ns, tree_hop_ns,\n"
    "ring_eff, tree_eff, a2a_peer_ns, a2a_eff) by least squares across every node\n"
    "count (--nccl-tests files: their ranks on --topology's nodes), writes the\n"
    "topology with nccl_tuning on, and prints each row's measured and predicted\n"
    "bus bandwidth.\n"
    "  --nccl-csv FILE    nccl-tests results in the published CSV format (repeatable)\n"
    "  --fit-nodes LIST   fit only the rows of these node counts (e.g. 2,8); the\n"
    "                     others are predicted and reported as held out\n"
    "  --nccl-algo A      report with the algorithm forced: auto, ring or tree\n"
    "  --nccl-proto P     report with the protocol forced: auto, ll, ll128, simple\n";

/* The parsed command line (args.c). */
typedef lsim_cli_calibrate_args cal_opts;

/* The base spec from --gpu: a built-in name, else a JSON file. */
static int base_from_arg(const char *arg, lsim_gpu_spec *g, lsim_err *err)
{
    if (strchr(arg, '/') || strchr(arg, '.')) return lsim_gpu_spec_load(arg, g, err);
    if (lsim_gpu_spec_builtin(arg, g, NULL) == 0) return 0;
    return lsim_err_set(err, LSIM_EARG, "--gpu %s: unknown GPU (h100, a100, h200, h100-96gb, b200, gb200, or a GPU JSON file)",
                        arg);
}

/* The base spec from a deviceProperties name ("NVIDIA A100-SXM4-80GB"). */

/* The traces are the ranks 0..n-1 of one job of n (as run.c decides). */
static int one_job(lsim_graph *const *gs, size_t n)
{
    if (n < 2) return 0;
    unsigned char *seen = calloc(n, 1);
    int ok = seen != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        if (gs[i]->world_size != (int32_t)n || gs[i]->rank < 0 || (size_t)gs[i]->rank >= n || seen[gs[i]->rank]) ok = 0;
        else seen[gs[i]->rank] = 1;
    }
    free(seen);
    return ok;
}

typedef struct wctx {
    const lsim_gpu_spec *gpu;
    const lsim_topology *topo;
    const char *desc;
    const char *name;
} wctx;

static int write_gpu(FILE *f, void *ctx, lsim_err *err)
{
    const wctx *w = ctx;
    return lsim_calib_write_gpu(f, w->gpu, w->desc, err);
}

static int write_topo(FILE *f, void *ctx, lsim_err *err)
{
    const wctx *w = ctx;
    return lsim_calib_write_topology(f, w->topo, w->name, w->desc, err);
}

static const char *src_name(lsim_calib_src s)
{
    return s == LSIM_CALIB_SRC_JOB ? "matched instances, transfer time of the last arrival"
           : s == LSIM_CALIB_SRC_MIN ? "unmatched: shortest duration per size"
                                     : "nccl-tests";
}

static void print_report(const cal_opts *o, const char *base_how, const lsim_gpu_spec *base, const lsim_gpu_spec *g,
                         const lsim_calib_report *r, const lsim_topology *topo, int tchanged)
{
    printf("calibrate: %zu trace(s), base spec %s (%s)\n", r->traces, base->name, base_how);
    printf("gemm: %zu GEMM ops (aten::mm/addmm/bmm/baddbmm/matmul/linear), %zu launched kernels: %zu kernels "
           "attributed\n",
           r->gemm_ops, r->gemm_ops_launched, r->gemm_kernels);
    printf("  points: %zu ops (%s) in the fit; left out: %zu of memory-bound shapes, %zu with unusable shapes, "
           "%zu of other element sizes\n",
           r->gemm_points, r->gemm_elem_bytes == 2 ? "fp16/bf16" : "fp32 (TF32 peak)", r->gemm_skipped_membound,
           r->gemm_skipped_shape, r->gemm_skipped_dtype);
    printf("  %-28s %6s %12s %10s %8s %9s\n", "shape (batch x M x N x K)", "ops", "median_us", "TFLOP/s", "eff",
           "fit_err");
    for (size_t i = 0; i < r->nshapes; i++) {
        const lsim_calib_shape *s = &r->shapes[i];
        char shp[64];
        snprintf(shp, sizeof shp, "%lldx%lldx%lldx%lld", (long long)s->batch, (long long)s->m, (long long)s->n,
                 (long long)s->k);
        if (s->memory_bound)
            printf("  %-28s %6zu %12.1f %10.1f %8.3f %9s\n", shp, s->count, s->median_ns / 1e3,
                   s->flops / s->median_ns / 1e3, s->eff, "mem-bound");
        else
            printf("  %-28s %6zu %12.1f %10.1f %8.3f %+8.1f%%\n", shp, s->count, s->median_ns / 1e3,
                   s->flops / s->median_ns / 1e3, s->eff, 100 * s->rel_residual);
    }
    if (r->gemm_mode >= 3)
        printf("  fit (tiles and waves over %d SMs, %s): gemm_eff_max %.4f (base %.4f), gemm_tile_ns %lld (base "
               "%lld)%s\n",
               g->sms, r->gemm_mode == 4 ? "both parameters" : "eff_max only, gemm_tile_ns kept: the shapes cannot "
                                                               "separate it",
               g->gemm_eff_max, base->gemm_eff_max, (long long)g->gemm_tile_ns, (long long)base->gemm_tile_ns,
               r->gemm_clamped ? "; eff_max clamped to 1" : "");
    else
        printf("  fit (%s): gemm_eff_max %.4f (base %.4f), gemm_eff_half %.4g FLOP (base %.4g)%s\n",
               r->gemm_mode == 2 ? "both parameters" : "eff_max only, eff_half kept", g->gemm_eff_max,
               base->gemm_eff_max, g->gemm_eff_half, base->gemm_eff_half,
               r->gemm_clamped ? "; eff_max clamped to 1" : "");
    printf("  relative residuals over shapes: median %.1f %%, max %.1f %%\n", 100 * r->gemm_median_rel_residual,
           100 * r->gemm_max_rel_residual);
    if (r->kernels) printf("kernel_min_ns: %lld (1st percentile of %zu non-collective kernels)\n",
                           (long long)g->kernel_min_ns, r->kernels);
    else printf("kernel_min_ns: %lld (kept: no kernels)\n", (long long)g->kernel_min_ns);
    if (r->launch_calls) printf("launch_cpu_ns: %lld (median of %zu kernel-launch calls)\n", (long long)g->launch_cpu_ns,
                                r->launch_calls);
    else printf("launch_cpu_ns: %lld (kept: no launch calls)\n", (long long)g->launch_cpu_ns);
    if (r->latency_traces)
        printf("launch_latency_ns: %lld (median over %zu trace(s) of the graph's idle-stream launch latency, "
               "%llu launches)\n",
               (long long)g->launch_latency_ns, r->latency_traces, (unsigned long long)r->latency_samples);
    else printf("launch_latency_ns: %lld (kept: no idle-stream launches)\n", (long long)g->launch_latency_ns);
    if (r->mem_fitted) {
        printf("mem_eff: %.4f (base %.4f): bytes over time of %zu memory-bound ops with shapes (kernels >= 10 us)\n",
               g->mem_eff, base->mem_eff, r->mem_ops);
        printf("  %-36s %6s %12s %10s %8s\n", "op", "ops", "GB", "ms", "eff");
        for (size_t i = 0; i < r->nmemops; i++)
            if (r->memops[i].count)
                printf("  %-36s %6zu %12.3f %10.3f %8.3f\n", r->memops[i].name, r->memops[i].count,
                       r->memops[i].bytes / 1e9, r->memops[i].ns / 1e6,
                       r->memops[i].bytes / (r->memops[i].ns * 1e-9 * base->mem_bw));
    } else {
        printf("mem_eff: %.3g (kept: %zu memory-bound ops with shapes, fewer than 10 or under 1 ms)\n", g->mem_eff,
               r->mem_ops);
    }
    printf("attn_eff_max, attn_eff_half: kept from the base spec (%.3g, %.3g): flash attention is not an aten op\n",
           g->attn_eff_max, g->attn_eff_half);
    if (r->dispatch_fitted)
        printf("host_dispatch_ns: %lld (median of %zu gaps between launch calls; mean %lld)\n",
               (long long)g->host_dispatch_ns, r->host_gaps, (long long)r->host_gap_mean_ns);
    else printf("host_dispatch_ns: %lld (kept: %zu gaps, fewer than 20)\n", (long long)g->host_dispatch_ns, r->host_gaps);
    if (r->stall_fitted)
        printf("host_stall_prob: %.4g, host_stall_ns: %lld, host_stall_sd_ns: %lld (%zu of the %zu gaps whose gap + "
               "launch call is over 10 x the median gap + launch_cpu_ns: the excess)\n",
               g->host_stall_prob, (long long)g->host_stall_ns, (long long)g->host_stall_sd_ns, r->host_stalls,
               r->host_gaps);
    else printf("host_stall_prob, host_stall_ns: kept (%.3g, %lld): fewer than 100 gaps\n", g->host_stall_prob,
                (long long)g->host_stall_ns);
    if (r->step_fitted)
        printf("host_step_ns: %lld (median of %zu enumerate(DataLoader) annotations)\n", (long long)g->host_step_ns,
               r->host_steps);
    else printf("host_step_ns: %lld (kept: no data-loader annotation)\n", (long long)g->host_step_ns);
    if (r->opt_fitted)
        printf("host_opt_ns: %lld (median of %zu Optimizer.step annotations less their launches)\n",
               (long long)g->host_opt_ns, r->host_opts);
    else printf("host_opt_ns: %lld (kept: no Optimizer.step annotation)\n", (long long)g->host_opt_ns);
    if (!r->ncolls) printf("collectives: no fit (fewer than 2 sizes of any kind with known bytes)\n");
    for (size_t i = 0; i < r->ncolls; i++) {
        const lsim_calib_coll *c = &r->colls[i];
        printf("collective %s, %d ranks%s%s: %zu points (%s): alpha %.1f us, beta %.2f GB/s, max residual %.1f %%%s\n",
               lsim_coll_kind_name((lsim_coll_kind)c->fit.kind), (int)c->nranks, c->label[0] ? ", " : "", c->label,
               c->fit.points, src_name(c->src), c->fit.alpha_ns / 1e3, c->fit.beta_bytes_per_s / 1e9,
               100 * c->fit.max_rel_residual,
               c->used_for == 1 ? " -> topology intra-node" : c->used_for == 2 ? " -> topology inter-node" : "");
    }
    if (o->topo_out)
        printf("topology: %d field(s) changed: intra_bw %.4g, intra_lat_ns %lld, coll_base_ns %lld, inter_bw %.4g, "
               "inter_lat_ns %lld, algo %s\n",
               tchanged, topo->intra_bw, (long long)topo->intra_lat_ns, (long long)topo->coll_base_ns, topo->inter_bw,
               (long long)topo->inter_lat_ns, lsim_coll_algo_name(topo->algo));
}

/* --fit-nodes "2,8": 0, or -1 for a malformed list. *want[i] for node count i < 4096. */
static int parse_nodes(const char *s, unsigned char *want, int max)
{
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v >= max) return -1;
        want[v] = 1;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return 0;
}

#define MAX_NODES 4096

/* The report of the network fit: every row, fitted or held out, its
 * measured and predicted bus bandwidth, then per (kind, node count). */
static void net_report(const cal_opts *o, const lsim_topology *t, const lsim_net_fit_report *r, const lsim_net_point *p,
                       size_t n, const unsigned char *want, lsim_coll_algo algo, lsim_coll_proto proto)
{
    printf("calibrate network: %zu rows, fitted on %s; base topology %s\n", n, o->fit_nodes ? o->fit_nodes : "all",
           o->topo ? o->topo : "(the H100 default)");
    printf("fit: ring_step_ns %lld, tree_hop_ns %lld, ring_eff %.4f, tree_eff %.4f (%zu all-reduce rows: ring %zu, "
           "tree %zu at the fit; relative time residual rms %.1f %%, max %.1f %%)\n",
           (long long)t->ring_step_ns, (long long)t->tree_hop_ns, t->ring_eff, t->tree_eff, r->coll_points,
           r->ring_points, r->tree_points, 100 * r->coll_rms, 100 * r->coll_max);
    printf("fit: a2a_peer_ns %lld, a2a_eff %.4f (%zu all-to-all rows; rms %.1f %%, max %.1f %%)%s\n",
           (long long)t->a2a_peer_ns, t->a2a_eff, r->a2a_points, 100 * r->a2a_rms, 100 * r->a2a_max,
           r->clamped ? "; an efficiency above 1 was set to 1" : "");
    printf("  %-10s %5s %8s %10s %10s %7s %-13s %s\n", "kind", "nodes", "size_MB", "busbw", "model", "err", "algo/proto",
           "set");
    for (size_t i = 0; i < n; i++) {
        lsim_coll_algo a;
        lsim_coll_proto q;
        lsim_ns ns = lsim_cost_collective_nccl(t, p[i].kind, (int64_t)llround(p[i].bytes), NULL, p[i].gpus, algo, proto,
                                               &a, &q);
        double f = lsim_net_busbw_factor(p[i].kind, p[i].gpus), meas = p[i].bytes / p[i].ns * f,
               model = p[i].bytes / (double)ns * f;
        char aq[32];
        snprintf(aq, sizeof aq, "%s/%s", lsim_coll_algo_name(a), lsim_coll_proto_name(q));
        printf("  %-10s %5d %8.0f %10.2f %10.2f %+6.1f%% %-13s %s\n", lsim_coll_kind_name((lsim_coll_kind)p[i].kind),
               p[i].nodes, p[i].bytes / 1048576.0, meas, model, 100 * (model - meas) / meas, aq,
               p[i].nodes < 2 ? "one node" : want[p[i].nodes] ? "fit" : "held-out");
    }
    /* per kind and node count, in order of appearance */
    printf("  %-10s %5s %5s %9s %9s %s\n", "kind", "nodes", "rows", "rms_err", "max_err", "set");
    for (size_t i = 0; i < n; i++) {
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            if (p[j].kind == p[i].kind && p[j].nodes == p[i].nodes) first = 0;
        if (!first) continue;
        double ss = 0, mx = 0;
        size_t k = 0;
        for (size_t j = i; j < n; j++) {
            if (p[j].kind != p[i].kind || p[j].nodes != p[i].nodes) continue;
            double f = lsim_net_busbw_factor(p[j].kind, p[j].gpus);
            lsim_ns ns = lsim_cost_collective_nccl(t, p[j].kind, (int64_t)llround(p[j].bytes), NULL, p[j].gpus, algo,
                                                   proto, NULL, NULL);
            double e = (p[j].bytes / (double)ns * f - p[j].bytes / p[j].ns * f) / (p[j].bytes / p[j].ns * f);
            ss += e * e, k++;
            if (fabs(e) > mx) mx = fabs(e);
        }
        printf("  %-10s %5d %5zu %8.1f%% %8.1f%% %s\n", lsim_coll_kind_name((lsim_coll_kind)p[i].kind), p[i].nodes, k,
               100 * sqrt(ss / (double)k), 100 * mx, want[p[i].nodes] ? "fit" : "held-out");
    }
}

/* lumosim calibrate --nccl-csv ... --topology-out T: the network alone. */
static int calibrate_network(const cal_opts *o, lsim_err *err)
{
    int rc = 0;
    lsim_net_point *pts = NULL, *fitp = NULL;
    size_t n = 0, nf = 0;
    unsigned char want[MAX_NODES];
    lsim_topology base, topo;
    lsim_coll_algo algo = LSIM_ALGO_AUTO;
    lsim_coll_proto proto = LSIM_PROTO_AUTO;
    memset(want, o->fit_nodes ? 0 : 1, sizeof want);
    if (o->fit_nodes && parse_nodes(o->fit_nodes, want, MAX_NODES))
        return lsim_err_set(err, LSIM_EARG, "--fit-nodes %s: not a list of node counts 1..%d (e.g. 2,8)", o->fit_nodes,
                            MAX_NODES - 1);
    if (o->algo) {
        if (!strcasecmp(o->algo, "ring")) algo = LSIM_ALGO_RING;
        else if (!strcasecmp(o->algo, "tree")) algo = LSIM_ALGO_TREE;
        else if (strcasecmp(o->algo, "auto"))
            return lsim_err_set(err, LSIM_EARG, "--nccl-algo %s: not auto, ring or tree", o->algo);
    }
    if (o->proto && lsim_coll_proto_parse(o->proto, &proto))
        return lsim_err_set(err, LSIM_EARG, "--nccl-proto %s: not auto, ll, ll128 or simple", o->proto);
    {
        char **ins = malloc((size_t)(o->ncsv + o->nnccl + 1) * sizeof *ins);
        if (!ins) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        int k = 0;
        for (int i = 0; i < o->ncsv; i++) ins[k++] = (char *)o->csv[i];
        for (int i = 0; i < o->nnccl; i++) ins[k++] = (char *)o->nccl[i];
        ins[k++] = (char *)o->topo;
        lsim_io_file outs[1] = {{o->topo_out, "--topology-out", 1, LSIM_OUT_TEXT}};
        rc = lsim_cli_check_io(ins, k, outs, 1, err);
        free(ins);
        if (rc) return rc;
    }
    if (o->topo) {
        if ((rc = lsim_topology_load(o->topo, &base, err))) goto cleanup;
    } else {
        lsim_topology_default(NULL, &base);
    }
    for (int i = 0; i < o->ncsv; i++)
        if ((rc = lsim_net_read_csv(o->csv[i], &pts, &n, err))) goto cleanup;
    for (int i = 0; i < o->nnccl; i++)
        if ((rc = lsim_net_read_nccl_tests(o->nccl[i], base.gpus_per_node, &pts, &n, err))) goto cleanup;
    if (!(fitp = malloc((n ? n : 1) * sizeof *fitp))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++)
        if (pts[i].nodes < MAX_NODES && want[pts[i].nodes]) fitp[nf++] = pts[i];
    lsim_net_fit_report rep;
    if ((rc = lsim_net_fit(&base, fitp, nf, &topo, &rep, err))) goto cleanup;
    if ((rc = lsim_topology_check(&topo, o->topo_out, err))) goto cleanup;
    char desc[512];
    snprintf(desc, sizeof desc, "calibrated by lumosim %s from %d nccl-tests file(s), fitted on node counts %s, base %s",
             LSIM_VERSION, o->ncsv + o->nnccl, o->fit_nodes ? o->fit_nodes : "all", o->topo ? o->topo : "default");
    wctx w = {NULL, &topo, desc, "calibrated"};
    net_report(o, &topo, &rep, pts, n, want, algo, proto); /* before the file: see lsim_cli_calibrate */
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        rc = lsim_err_set(err, LSIM_EIO, "cannot write the report to stdout: %s; %s not written",
                          errno ? strerror(errno) : "write error", o->topo_out);
        goto cleanup;
    }
    if ((rc = lsim_cli_write_atomic(o->topo_out, write_topo, &w, err))) goto cleanup;
    printf("wrote %s\n", o->topo_out);
cleanup:
    free(fitp);
    free(pts);
    return rc;
}

int lsim_cli_calibrate(int argc, char **argv)
{
    int status = 1, rc = 0;
    lsim_err err = {0};
    cal_opts o;
    memset(&o, 0, sizeof o);
    lsim_run files = {0};
    lsim_graph **gs = NULL;
    size_t ng = 0;
    lsim_calib *cal = NULL;
    lsim_job *job = NULL;
    char *devname = NULL;
    char label[512];
    o.traces = malloc((size_t)(argc + 1) * sizeof *o.traces);
    o.nccl = malloc((size_t)(argc + 1) * sizeof *o.nccl);
    o.csv = malloc((size_t)(argc + 1) * sizeof *o.csv);
    if (!o.traces || !o.nccl || !o.csv) {
        lsim_cli_error("out of memory");
        goto cleanup;
    }
    int p = lsim_cli_parse_calibrate(argc, argv, LSIM_USAGE_CALIBRATE, &o);
    if (p <= 0) {
        status = p == 0 ? 0 : 2;
        goto cleanup;
    }
    if (!o.ntraces) { /* the network alone (args.c checked the options) */
        if ((rc = calibrate_network(&o, &err))) goto cleanup;
        status = fflush(stdout) == 0 ? 0 : 1;
        goto cleanup;
    }
    lsim_gpu_spec base, fitted;
    const char *base_how = "--gpu";
    {
        /* every file named, before any is read */
        char **ins = malloc((size_t)(o.ntraces + o.nnccl + 2) * sizeof *ins);
        if (!ins) {
            rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
            goto cleanup;
        }
        int k = 0;
        for (int i = 0; i < o.ntraces; i++) ins[k++] = o.traces[i];
        for (int i = 0; i < o.nnccl; i++) ins[k++] = (char *)o.nccl[i];
        ins[k++] = (char *)o.gpu;
        ins[k++] = (char *)o.topo;
        lsim_io_file outs[2] = {{o.out, "-o", 1, LSIM_OUT_TEXT}, {o.topo_out, "--topology-out", 1, LSIM_OUT_TEXT}};
        rc = lsim_cli_check_io(ins, k, outs, 2, &err);
        free(ins);
        if (rc) goto cleanup;
    }
    if (o.gpu && (rc = base_from_arg(o.gpu, &base, &err))) goto cleanup;
    lsim_topology tbase;
    if (o.topo && (rc = lsim_topology_load(o.topo, &tbase, &err))) goto cleanup;
    if ((rc = lsim_run_expand(o.traces, o.ntraces, &files, &err))) goto cleanup;
    {
        uint64_t json = 0;
        if ((rc = lsim_mem_check_inputs((const char *const *)files.paths, files.n, &json, &err))) goto cleanup;
    }
    snprintf(label, sizeof label, "%s%s", files.paths[0], files.n > 1 ? " (and the other traces)" : "");
    if ((rc = lsim_calib_new(&cal, &err))) goto cleanup;
    if (!(gs = calloc(files.n, sizeof *gs))) {
        rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
        goto cleanup;
    }
    lsim_build_opts bo;
    lsim_build_opts_default(&bo);
    for (size_t i = 0; i < files.n; i++) {
        lsim_trace *t = NULL;
        rc = lsim_trace_read(files.paths[i], &t, &err);
        lsim_et_apply_stats ets;
        if (!rc) rc = lsim_et_apply_sibling(t, &ets, NULL, &err); /* as the replay does (run.c) */
        if (!rc) rc = lsim_calib_add_trace(cal, t, &err);
        if (!rc && !devname && t->device_name != UINT32_MAX) {
            const char *dn = lsim_strtab_get(t->strings, t->device_name);
            if (dn && !(devname = strdup(dn))) rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
        }
        if (!rc) rc = lsim_graph_build(t, &bo, &gs[ng], &err);
        lsim_trace_free(t);
        if (rc) goto cleanup;
        lsim_calib_add_graph_latency(cal, gs[ng]);
        ng++;
    }
    if (!o.gpu) {
        const char *guess = lsim_gpu_builtin_for_device(devname);
        if (!guess) {
            rc = lsim_err_set(&err, LSIM_EARG, "%s: cannot tell the GPU model (%s%s%s): give --gpu h100|a100|h200|FILE.json",
                              files.paths[0], devname ? "deviceProperties name \"" : "no deviceProperties",
                              devname ? devname : "", devname ? "\"" : "");
            goto cleanup;
        }
        if ((rc = lsim_gpu_spec_builtin(guess, &base, &err))) goto cleanup;
        base_how = "from deviceProperties";
    }
    /* collectives */
    if (one_job(gs, ng)) {
        if ((rc = lsim_job_match(gs, ng, &job, &err)) || (rc = lsim_calib_add_job(cal, job, &err))) goto cleanup;
    } else {
        for (size_t i = 0; i < ng; i++)
            if ((rc = lsim_calib_add_graph_colls(cal, gs[i], &err))) goto cleanup;
    }
    for (int i = 0; i < o.nnccl; i++) {
        lsim_coll_fit f;
        const char *slash = strrchr(o.nccl[i], '/');
        if ((rc = lsim_cost_fit_nccl_tests(o.nccl[i], &f, &err)) ||
            (rc = lsim_calib_add_nccl_fit(cal, &f, slash ? slash + 1 : o.nccl[i], &err)))
            goto cleanup;
    }
    lsim_calib_report rep;
    if ((rc = lsim_calib_fit(cal, &base, label, &fitted, &rep, &err))) goto cleanup;
    lsim_topology topo;
    int tchanged = 0;
    if (o.topo_out) {
        if (!o.topo) lsim_topology_default(&fitted, &tbase);
        lsim_calib_topology(cal, &tbase, &topo, &tchanged);
        if (lsim_topology_check(&topo, o.topo_out, &err)) { /* the loader's ranges (cost.h) */
            lsim_err e = err;
            rc = lsim_err_set(&err, LSIM_EARG, "the collective fits give an unusable topology: %s", e.msg);
            goto cleanup;
        }
    }
    char desc[768];
    snprintf(desc, sizeof desc, "calibrated by lumosim %s from %zu trace(s) (%s) and %d nccl-tests file(s), base %s",
             LSIM_VERSION, files.n, files.paths[0], o.nnccl, base.name);
    wctx w = {&fitted, o.topo_out ? &topo : NULL, desc, "calibrated"};
    /* the report before the files: a stdout that cannot be written (a full
     * disk, a closed pipe) ends the run with one line and nothing written,
     * rather than exit 1 in silence with the -o file replaced (issue 40) */
    print_report(&o, base_how, &base, &fitted, &rep, o.topo_out ? &topo : NULL, tchanged);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        rc = lsim_err_set(&err, LSIM_EIO, "cannot write the report to stdout: %s; %s not written",
                          errno ? strerror(errno) : "write error", o.out);
        goto cleanup;
    }
    if ((rc = lsim_cli_write_atomic(o.out, write_gpu, &w, &err))) goto cleanup;
    if (o.topo_out && (rc = lsim_cli_write_atomic(o.topo_out, write_topo, &w, &err))) {
        remove(o.out); /* all or nothing */
        goto cleanup;
    }
    printf("wrote %s%s%s\n", o.out, o.topo_out ? " and " : "", o.topo_out ? o.topo_out : "");
    if (fflush(stdout) != 0) {
        rc = lsim_err_set(&err, LSIM_EIO, "cannot write the report to stdout: %s", strerror(errno));
        goto cleanup;
    }
    status = 0;
cleanup:
    if (rc) lsim_cli_error("%s", err.msg);
    lsim_job_free(job);
    for (size_t i = 0; i < ng; i++) lsim_graph_free(gs[i]);
    free(gs);
    lsim_calib_free(cal);
    free(devname);
    for (size_t i = 0; i < files.n; i++) free(files.paths[i]);
    free(files.paths);
    free(o.traces);
    free(o.nccl);
    free(o.csv);
    return status;
}
