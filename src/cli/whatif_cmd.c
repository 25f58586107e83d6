/* lumosim whatif: transform the graphs of a job (graph store) and write the
 * transformed job to a new graph store (whatif.h, docs/whatif.md).
 *
 * Two passes over the source, never the whole new job in memory: (1) GPUs
 * read in batches to identify the structure and match the collectives
 * (transfer times, clock offsets); (2) one pipeline stage of source GPUs at
 * a time: normalized, layers changed, then each new GPU made from it
 * (data-parallel copy, re-timed, other GPU, straggler, noise) and added to
 * the streamed store writer. Everything is checked before the writer opens;
 * a failure later aborts it (nothing written). The record of what changed is
 * printed and kept in the new store as its root attribute "whatif". */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lumosim/memlimit.h"
#include "lumosim/metrics.h"
#include "lumosim/store.h"
#include "lumosim/synth.h"
#include "lumosim/text.h"
#include "lumosim/whatif.h"

static const char *USAGE_WHATIF =
    "usage: lumosim whatif JOB.h5 [--dp N] [--tp N] [--layers N] [--hidden N] [--ffn N]\n"
    "                     [--model NAME|FILE] [--micro-batch N] [--topology FILE] [--gpu NAME|FILE]\n"
    "                     [--from-gpu NAME|FILE] [--from-topology FILE]\n"
    "                     [--slow-gpu RANK:FACTOR]... [--jitter SIGMA|trace] [--seed N]\n"
    "                     [--pp N] [--schedule 1f1b|interleaved:V] [--micro-batches N]\n"
    "                     -o NEW.h5\n"
    "       lumosim whatif JOB.h5 --identify\n"
    "\n"
    "Transforms the job in the graph store JOB.h5 (lumosim build or synth) and\n"
    "writes the transformed job to NEW.h5 for `lumosim sim`. What changed (nodes\n"
    "added, removed, re-timed per kind) is printed as JSON and kept in NEW.h5\n"
    "(root attribute whatif; lumosim info shows it). docs/whatif.md describes\n"
    "each transformation.\n"
    "\n"
    "  --identify        print what was found (layout, group classes, layers,\n"
    "                    each rank's role) as JSON and write nothing (so -o\n"
    "                    and the transformation options are refused with it)\n"
    "  --dp N            data-parallel width N (per-replica batch kept; from\n"
    "                    DP 1, synthesized stores: gradient buckets inserted)\n"
    "  --tp N            tensor-parallel width N: each layer's kernels\n"
    "                    re-timed for the new shards, TP all-reduces re-timed\n"
    "                    for the new group (from TP 1, synthesized stores:\n"
    "                    inserted where synth puts them); DP kept unless --dp\n"
    "  --layers N        N layers: a synthesized store's layer-tagged nodes, or\n"
    "                    the layers a trace repeats (see --identify), cut and\n"
    "                    copied with their collectives\n"
    "  --hidden N        model width N (attention width heads x head_dim kept)\n"
    "  --ffn N           MLP width N\n"
    "  --pp N            pipeline stages N: layers reassigned, send/recv\n"
    "                    inserted, schedule rebuilt (synthesized stores; on a\n"
    "                    forward-only trace with one micro-batch, its layers\n"
    "                    cut into stages with a transfer at each boundary)\n"
    "  --schedule S      1f1b or interleaved:V (default: the source's)\n"
    "  --micro-batches N micro-batches per pipeline (default: the source's;\n"
    "                    with --dp, a fixed global batch; on a forward-only\n"
    "                    trace, its forward pass once per micro-batch)\n"
    "  --model M         the source's model shape (built-in name or JSON as for\n"
    "                    lumosim synth; default: the name a synth store carries)\n"
    "  --micro-batch N   the source's micro-batch size (default: from the\n"
    "                    activations' size, else 1)\n"
    "  --trace-layers N  a trace's layers per micro-batch, overriding the count\n"
    "                    found from its repeating kernel structure\n"
    "  --topology FILE   the network to re-time collectives for\n"
    "  --gpu G           another GPU (built-in name or JSON): compute kernels\n"
    "                    re-timed, and its default network unless --topology\n"
    "  --from-gpu G      the GPU the source ran on (default h100)\n"
    "  --from-topology F the source's network (default: --from-gpu's default)\n"
    "  --slow-gpu R:F    GPU rank R's compute kernels last F times as long\n"
    "                    (repeatable, once per GPU; any other option once)\n"
    "                    (F in 0.001..1000)\n"
    "  --jitter S|trace  per-kernel noise: relative std-dev S (0..10), or each\n"
    "                    kernel name's own spread in the source\n"
    "  --seed N          noise seed (default 1)\n"
    "  --batch N         source GPUs read at a time while identifying (64)\n"
    "  -o NEW.h5         the graph store to write\n"
    "\n"
    "Ranges (outside: exit 2): --dp, --tp, --layers, --micro-batch,\n"
    "--micro-batches, --trace-layers, --batch 1..1000000; --pp 1..100000;\n"
    "--hidden, --ffn 1..100000000; --seed 1..2147483647; --slow-gpu F\n"
    "0.001..1000; --jitter S 0..10. The result is sized first: one that\n"
    "would not fit in memory (LUMOSIM_MEM_LIMIT) is refused before any work.\n";

#define MAXSLOW LSIM_CLI_MAXSLOW

typedef struct stage {
    const char *name;
    lsim_wi_counts c;
    int used;
} stage;

enum { ST_NORM = 0, ST_LAYERS, ST_SHAPE, ST_PIPE, ST_DP, ST_NET, ST_GPU, ST_SLOW, ST_JITTER, ST_N };

static int is_file_name(const char *s) { return strchr(s, '/') || strstr(s, ".json"); }

/* Size before work, as synth checks its configuration before it makes
 * anything: the graphs a transformation holds at once (`held` of them,
 * with nodes, edges and strings in all) against this process's memory
 * (memlimit.h), and the largest new GPU (gpu_nodes) against the 2^32 - 1
 * nodes a graph can number. Estimates, in doubles: --layers 1000000 or
 * --micro-batches 100000 once grew past 4 GB before failing. */
static int size_check(const char *out, double held, double nodes, double edges, double strings, double gpu_nodes,
                      lsim_err *err)
{
    if (!(gpu_nodes <= (double)UINT32_MAX))
        return lsim_err_set(err, LSIM_EARG,
                            "%s: the transformed job would have about %.3g nodes on one GPU, more than a graph can "
                            "number (2^32 - 1)",
                            out, gpu_nodes);
    double x[4] = {held, nodes, edges, strings};
    uint64_t u[4];
    for (int i = 0; i < 4; i++) u[i] = x[i] >= 1e18 ? (uint64_t)1e18 : x[i] > 0 ? (uint64_t)x[i] : 0;
    char what[LSIM_ERR_LEN];
    snprintf(what, sizeof what, "%s (the transformed GPUs held at once)", out);
    return lsim_mem_check_graphs(what, u[0], u[1], u[2], u[3], err);
}

static void put_kinds(FILE *f, const char *key, const uint64_t *k)
{
    fprintf(f, "\"%s\":{", key);
    for (int i = 0; i < LSIM_N_NKINDS; i++)
        fprintf(f, "%s\"%s\":%llu", i ? "," : "", lsim_node_kind_name((lsim_node_kind)i), (unsigned long long)k[i]);
    fputc('}', f);
}

/* A trace's layers per forward run: from its layer annotations, or from the
 * kernel structure when found; 0 when neither (or not a trace). */
static int trace_layers(const lsim_wi_ident *id)
{
    if (id->layer_source == LSIM_WI_LAYERS_ANNOTATIONS) return id->layers_per_chunk;
    if (id->layer_source == LSIM_WI_LAYERS_KERNELS && id->klayers.found) return id->klayers.layers;
    return 0;
}
static int trace_runs(const lsim_wi_ident *id)
{
    return id->layer_source == LSIM_WI_LAYERS_KERNELS ? id->klayers.runs : 1;
}
/* every GPU synthesized (layer tags): what the pipeline re-emission needs,
 * which also brings DP and TP up from width 1 */
static int all_tagged(const lsim_wi_ident *ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i].layer_source != LSIM_WI_LAYERS_TAGS) return 0;
    return 1;
}
/* kernel roles for --tp / --hidden / --ffn: tags, or a found kernel structure */
static int has_roles(const lsim_wi_ident *id)
{
    return id->layer_source == LSIM_WI_LAYERS_TAGS || id->klayers.found;
}

static void put_ident(FILE *f, const lsim_wi_ident *ids, size_t n, const lsim_wi_layout *L, int roles)
{
    uint64_t tot[LSIM_WI_NGCLASS] = {0};
    int src = ids[0].layer_source, same = 1, annot = 0;
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < LSIM_WI_NGCLASS; c++) tot[c] += ids[i].colls[c];
        if (ids[i].layer_source != src) same = 0;
        if (ids[i].annotations > annot) annot = ids[i].annotations;
    }
    fprintf(f, "{\"gpus\":%zu,\"layout\":{\"tp\":%d,\"pp\":%d,\"dp\":%d},\"collectives\":{", n, L->tp, L->pp, L->dp);
    for (int c = 0; c < LSIM_WI_NGCLASS; c++)
        fprintf(f, "%s\"%s\":%llu", c ? "," : "", lsim_wi_gclass_name(c), (unsigned long long)tot[c]);
    fprintf(f, "},\"layers\":{\"source\":\"%s\"", same ? lsim_wi_layer_source_name(src) : "mixed");
    if (same && src == LSIM_WI_LAYERS_TAGS) {
        int tot_l = ids[0].layers_per_chunk * ids[0].nchunks * L->pp;
        fprintf(f, ",\"layers\":%d,\"chunks_per_gpu\":%d,\"layers_per_chunk\":%d", tot_l, ids[0].nchunks,
                ids[0].layers_per_chunk);
    } else if (same && src == LSIM_WI_LAYERS_ANNOTATIONS) {
        int fwd = 1;
        for (size_t i = 0; i < n; i++) fwd &= ids[i].forward_only != 0;
        fprintf(f, ",\"layers\":%d,\"annotated_layers\":%d,\"forward_only\":%s,\"kernel_structure_layers\":%d",
                ids[0].layers_per_chunk, annot, fwd ? "true" : "false", ids[0].klayers.found ? ids[0].klayers.layers : 0);
    } else if (same && src == LSIM_WI_LAYERS_KERNELS) lsim_wi_put_kernel_layers(f, ids, n);
    fputc('}', f);
    if (roles) {
        fputs(",\"ranks\":[", f);
        for (size_t i = 0; i < n; i++) {
            int t, d, p;
            lsim_wi_coords(L, (int32_t)i, &t, &d, &p);
            fprintf(f, "%s{\"rank\":%d,\"tp\":%d,\"dp\":%d,\"pp\":%d,\"collectives\":{", i ? "," : "", ids[i].rank, t, d, p);
            for (int c = 0; c < LSIM_WI_NGCLASS; c++)
                fprintf(f, "%s\"%s\":%llu", c ? "," : "", lsim_wi_gclass_name(c), (unsigned long long)ids[i].colls[c]);
            fprintf(f, "},\"layers\":[%d,%d]}", ids[i].layer_lo, ids[i].layer_hi);
        }
        fputc(']', f);
    }
    fputc('}', f);
}

int lsim_cli_whatif(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *topo_f = NULL, *gpu_s = NULL, *fgpu_s = NULL, *ftopo_f = NULL, *jit = NULL;
    long dp = 0, layers = 0, seed = 1, batch = 64, tp = 0, hidden = 0, ffn = 0, mbatch = 0;
    const char *model_s = NULL;
    long pp_new = 0, vst_new = 0, mbs_new = 0; /* --pp, --schedule (V), --micro-batches; 0: not given */
    int pipe = 0, tpipe = 0, src_m = 0;
    size_t ncols = 0;
    lsim_wi_pipe **cols = NULL;
    lsim_wi_pipe_cfg pcfg;
    memset(&pcfg, 0, sizeof pcfg);
    lsim_wi_model Mfrom, Mto;
    memset(&Mfrom, 0, sizeof Mfrom);
    memset(&Mto, 0, sizeof Mto);
    int identify = 0, nslow = 0, status = 0, rc = 0;
    int32_t slow_rank[MAXSLOW];
    double slow_f[MAXSLOW], sigma = 0;
    lsim_err err = {0};
    lsim_store_gpu_info *tab = NULL;
    size_t n = 0, ne = 0, ngpu_out = 0;
    lsim_wi_ident *ids = NULL;
    lsim_job_entry *ents = NULL;
    lsim_wi_job *job = NULL;
    lsim_graph **gs = NULL, **blk = NULL, **srcb = NULL;
    uint64_t tk_src[LSIM_N_NKINDS] = {0}, tk_new[LSIM_N_NKINDS] = {0}, te_src = 0, te_new = 0;
    size_t nread = 0, nblk = 0, nsrcb = 0;
    lsim_store_writer *w = NULL;
    char *cmd = NULL, *text = NULL;
    char sopts[160] = ""; /* the source's lumosim synth options, if not the defaults */
    size_t tlen = 0;
    FILE *rf = NULL;
    int32_t *ranks = NULL;
    static const char *const ST_NAME[ST_N] = {"normalize", "layers", "shape", "pipeline", "dp", "network", "gpu", "slow-gpu", "jitter"};
    stage st[ST_N];
    memset(st, 0, sizeof st);
    for (int s = 0; s < ST_N; s++) st[s].name = ST_NAME[s];
    st[ST_NORM].used = 1;
    {
        lsim_cli_whatif_args wa;
        int p = lsim_cli_parse_whatif(argc, argv, USAGE_WHATIF, &wa);
        if (p <= 0) return p < 0 ? 2 : 0;
        in = wa.in, out = wa.out, topo_f = wa.topo, gpu_s = wa.gpu, fgpu_s = wa.from_gpu, ftopo_f = wa.from_topo;
        jit = wa.jitter, model_s = wa.model, sigma = wa.sigma;
        dp = wa.dp, layers = wa.layers, seed = wa.seed, batch = wa.batch, tp = wa.tp, hidden = wa.hidden;
        ffn = wa.ffn, mbatch = wa.micro_batch, pp_new = wa.pp, vst_new = wa.vstages, mbs_new = wa.micro_batches;
        identify = wa.identify;
        nslow = wa.nslow;
        for (int k = 0; k < nslow; k++) slow_rank[k] = wa.slow_rank[k], slow_f[k] = wa.slow_f[k];
        if (wa.trace_layers) lsim_wi_set_trace_layers((int)wa.trace_layers);
    }
    {
        /* every file named, before any is read */
        char *ins[6] = {(char *)in, (char *)fgpu_s, (char *)ftopo_f, (char *)gpu_s, (char *)topo_f, (char *)model_s};
        lsim_io_file outs[1] = {{identify ? NULL : out, "-o", 1, LSIM_OUT_STORE}};
        if ((rc = lsim_cli_check_io(ins, 6, outs, 1, &err))) goto done;
    }
    /* the GPUs and networks */
    lsim_gpu_spec gfrom, gto;
    lsim_topology tfrom, tto;
    /* The source GPU: --from-gpu, else the one the traces name in their
     * deviceProperties (the store's "device" attribute). A change of GPU or
     * network needs it; without either, only ratios of the same network's
     * costs are taken and H100 stands in, which the record says. */
    char *src_dev = NULL;
    const char *from_how = "--from-gpu";
    int from_unknown = 0; /* refused below, once the new GPU and network files have been checked */
    if (!fgpu_s) {
        lsim_err aerr = {0};
        if (lsim_store_read_attr(in, "device", &src_dev, &aerr)) src_dev = NULL;
        const char *b = lsim_gpu_builtin_for_device(src_dev);
        if (b) {
            fgpu_s = b;
            from_how = "deviceProperties";
        } else if (gpu_s || topo_f) {
            from_unknown = 1;
            rc = lsim_err_set(&err, LSIM_EARG,
                              "%s: the source GPU is unknown (%s%s%s), so %s cannot be re-timed from it: give "
                              "--from-gpu h100|a100|h200|FILE.json",
                              in, src_dev ? "deviceProperties name \"" : "the store names no GPU",
                              src_dev ? src_dev : "", src_dev ? "\" has no built-in spec" : "",
                              gpu_s ? "--gpu" : "--topology");
            rc = 0; /* the message waits in err */
        } else {
            from_how = "assumed (no GPU named by the traces)";
        }
    }
    free(src_dev);
    rc = fgpu_s ? (is_file_name(fgpu_s) ? lsim_gpu_spec_load(fgpu_s, &gfrom, &err) : lsim_gpu_spec_builtin(fgpu_s, &gfrom, &err))
                : lsim_gpu_spec_builtin("h100", &gfrom, &err);
    if (!rc) lsim_topology_default(&gfrom, &tfrom);
    if (!rc && ftopo_f) rc = lsim_topology_load(ftopo_f, &tfrom, &err);
    gto = gfrom;
    tto = tfrom;
    if (!rc && gpu_s) {
        rc = is_file_name(gpu_s) ? lsim_gpu_spec_load(gpu_s, &gto, &err) : lsim_gpu_spec_builtin(gpu_s, &gto, &err);
        if (!rc) lsim_topology_default(&gto, &tto);
    }
    if (!rc && topo_f) rc = lsim_topology_load(topo_f, &tto, &err);
    if (!rc && from_unknown) rc = LSIM_EARG; /* err holds the line */
    if (rc) goto done;
    /* pass 1: identify, match */
    if ((rc = lsim_store_gpu_table(in, &tab, &n, &err))) goto done;
    if (!n) {
        rc = lsim_err_set(&err, LSIM_EFORMAT, "%s: the store holds no GPU", in);
        goto done;
    }
    if (!(ids = calloc(n, sizeof *ids)) || !(ranks = malloc(n * sizeof *ranks))) goto nomem;
    for (size_t first = 0; first < n; first += (size_t)batch) {
        size_t cnt = n - first < (size_t)batch ? n - first : (size_t)batch, got = 0, nm = 0;
        uint32_t *gid = malloc(cnt * sizeof *gid);
        lsim_job_entry *mine = NULL;
        if (!gid) goto nomem;
        for (size_t i = 0; i < cnt; i++) gid[i] = (uint32_t)(first + i);
        rc = lsim_store_read_graphs(in, first, cnt, &gs, &got, &err);
        if (!rc && first == 0 && got && gs[0]->source) {
            /* lumosim synth's non-default options ("synth:M/gpu0 opts:rc=full,sp") */
            const char *o = strstr(gs[0]->source, " opts:");
            if (o) snprintf(sopts, sizeof sopts, "%s", o + 6);
        }
        for (size_t i = 0; !rc && i < got; i++) {
            rc = lsim_wi_identify(gs[i], first + i, &ids[first + i], &err);
            ranks[first + i] = ids[first + i].rank;
        }
        if (!rc) rc = lsim_job_entries(gs, gid, got, &mine, &nm, NULL, &err);
        if (!rc && nm) {
            lsim_job_entry *all = realloc(ents, (ne + nm) * sizeof *all);
            if (!all) rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
            else {
                memcpy(all + ne, mine, nm * sizeof *all);
                ents = all;
                ne += nm;
            }
        }
        free(mine);
        free(gid);
        lsim_store_free_graphs(gs, got);
        gs = NULL;
        if (rc) goto done;
    }
    lsim_wi_layout L, Ln;
    if ((rc = lsim_wi_layout_of(ids, n, tfrom.gpus_per_node, &L, &err))) goto done;
    if (identify) {
        put_ident(stdout, ids, n, &L, 1);
        fputc('\n', stdout);
        goto done;
    }
    /* one GPU is not a job: its collectives are not matched (as sim and
     * replay take a single trace), so one rank of a larger job can be
     * transformed on its own */
    if (n > 1 && (rc = lsim_wi_job_new(ents, ne, n, ranks, &job, &err))) goto done;
    /* every transformation checked before anything is written */
    Ln = L;
    int dp_from1 = 0; /* DP 1 -> more on a tagged store: buckets emitted by the pipeline re-emission */
    if (dp && dp != L.dp) {
        /* a traced step cut to DP 1 kept its buckets in a group of one
         * (lsim_wi_relayout): those are widened as they are */
        int dp_groups = 0;
        for (size_t i = 0; i < n; i++) dp_groups |= ids[i].colls[LSIM_WI_DP] > 0;
        if (L.dp == 1 && !ids[0].forward_only && !(dp_groups && !all_tagged(ids, n))) {
            /* forward-only: no gradient all-reduce to replicate */
            if (!all_tagged(ids, n)) {
                rc = lsim_err_set(&err, LSIM_EARG,
                                  "--dp %ld: the source has data-parallel width 1 and a backward pass, so gradient "
                                  "all-reduces would have to be inserted; lumosim does that for synthesized stores "
                                  "(their layer tags), not for traces: start from a trace with DP >= 2",
                                  dp);
                goto done;
            }
            dp_from1 = 1;
        }
        Ln.dp = (int)dp;
        st[ST_DP].used = 1;
    }
    int tp_from1 = 0; /* TP 1 -> more on a tagged store: all-reduces emitted by the pipeline re-emission */
    if (tp && tp != L.tp) {
        if (L.tp == 1) {
            if (!all_tagged(ids, n)) {
                rc = lsim_err_set(&err, LSIM_EARG,
                                  "--tp %ld: the source has tensor-parallel width 1, so there is no tensor-parallel "
                                  "all-reduce to split its layers' work with (lumosim inserts them only in "
                                  "synthesized stores); start from a trace with TP >= 2",
                                  tp);
                goto done;
            }
            tp_from1 = 1;
        }
        Ln.tp = (int)tp;
        st[ST_DP].used = 1;
        st[ST_DP].name = "tp";
    }
    pipe = pp_new || vst_new || mbs_new || dp_from1 || tp_from1;
    if (pipe) {
        /* a trace whose layers were recovered from its kernel structure on
         * every rank (tpipe), else every kernel tagged */
        tpipe = 1;
        for (size_t i = 0; i < n; i++)
            if (!trace_layers(&ids[i])) tpipe = 0;
        for (size_t i = 0; i < n && !tpipe; i++)
            if (ids[i].layer_source != LSIM_WI_LAYERS_TAGS) {
                rc = lsim_err_set(&err, LSIM_EARG,
                                  "%s: rank %zu: layer structure unknown (%s): --pp, --schedule and --micro-batches "
                                  "need every kernel tagged by layer and micro-batch, as lumosim synth writes them "
                                  "(L12.mb3.fwd.qkv_gemm), or a trace with layer annotations or layers that repeat "
                                  "between tensor-parallel all-reduces, on every rank (see whatif --identify)",
                                  in, i,
                                  ids[i].layer_source == LSIM_WI_LAYERS_KERNELS
                                      ? ids[i].klayers.why
                                      : "no layer tags, annotations or tensor-parallel all-reduces");
                goto done;
            }
        pcfg.pp = pp_new ? (int)pp_new : L.pp;
        pcfg.dp_to = Ln.dp;
        pcfg.tp_to = Ln.tp;
        pcfg.vstages = vst_new ? (int)vst_new : (ids[0].nchunks > 0 ? ids[0].nchunks : 1);
        Ln.pp = pcfg.pp;
        st[ST_PIPE].used = 1;
        if (tpipe) {
            for (size_t i = 1; i < n; i++)
                if (trace_layers(&ids[i]) != trace_layers(&ids[0]) || trace_runs(&ids[i]) != trace_runs(&ids[0])) {
                    rc = lsim_err_set(&err, LSIM_EARG,
                                      "%s: rank %zu: %d layers x %d forward runs recovered, rank 0 has %d x %d: --pp "
                                      "needs the same structure on every rank",
                                      in, i, trace_layers(&ids[i]), trace_runs(&ids[i]), trace_layers(&ids[0]),
                                      trace_runs(&ids[0]));
                    goto done;
                }
            src_m = trace_runs(&ids[0]);
            pcfg.micro_batches = mbs_new ? (int)mbs_new : src_m;
            int fwd = 1;
            for (size_t i = 0; i < n; i++) fwd &= ids[i].forward_only != 0;
            rc = lsim_wi_trace_pipe_check(in, fwd, &L, &pcfg, layers ? (int)layers : trace_layers(&ids[0]), src_m, &err);
            if (rc) goto done;
            {
                /* each new stage GPU: its source GPU's nodes scaled by the
                 * new micro-batches and its share of the (new) layers; the
                 * source column, a new stage and a clone held at once */
                double tl = trace_layers(&ids[0]) > 0 ? trace_layers(&ids[0]) : 1;
                double mf = src_m > 0 ? (double)pcfg.micro_batches / src_m : 1;
                double lf = (layers ? (double)layers / tl : 1.0) * L.pp / (pcfg.pp > 0 ? pcfg.pp : 1);
                double f = (mf > 1 ? mf : 1) * (lf > 1 ? lf : 1), hn = 0, he = 0, hs = 0, big = 0;
                size_t per0 = (size_t)L.tp * (size_t)L.dp;
                for (size_t i = 0; i < per0 && i < n; i++) {
                    double g = (double)tab[i].nodes * f;
                    hn += (double)tab[i].nodes + g, he += (double)tab[i].edges * (1 + f), hs += (double)tab[i].strings * (1 + f);
                    if (g > big) big = g;
                }
                if ((rc = size_check(out, 2.0 * (double)per0 + 1, hn + big, he + 1.8 * big, hs, big, &err))) goto done;
            }
        }
    }
    if (sopts[0]) {
        /* The structural transforms re-emit or re-time lumosim synth's
         * default graph (its kernel roles, collectives and buckets); a store
         * synthesized with other options is refused rather than transformed
         * into something synthesis would not make. Data parallel width is a
         * copy, except where the options make a GPU depend on DP (the
         * distributed optimizer's shards, host stalls' draws). */
        const char *what = layers ? "--layers"
                           : (hidden || ffn || Ln.tp != L.tp) ? "--tp, --hidden and --ffn"
                           : pipe ? "--pp, --schedule, --micro-batches (and DP or TP from width 1)"
                           : st[ST_DP].used && (strstr(sopts, "distopt") || strstr(sopts, "stalls") ||
                                                strstr(sopts, "dpcost"))
                               ? "--dp"
                               : NULL;
        if (what) {
            rc = lsim_err_set(&err, LSIM_EARG,
                              "%s: synthesized with non-default options (%s), which %s cannot carry over: synthesize "
                              "the new layout with lumosim synth instead (network, GPU, straggler and noise what-ifs "
                              "work on it)",
                              in, sopts, what);
            goto done;
        }
    }
    if (Ln.tp != L.tp || hidden || ffn || model_s || (pipe && !tpipe)) {
        /* the source's shape, and the new one */
        for (size_t i = 0; i < n; i++)
            if (ids[i].layer_source != LSIM_WI_LAYERS_TAGS && ((pipe && !tpipe) || !has_roles(&ids[i]))) {
                rc = lsim_err_set(&err, LSIM_EARG,
                                  "%s: rank %zu: layer structure unknown (%s): --tp, --hidden and --ffn need each "
                                  "kernel's role in its layer, which lumosim synth's node tags give "
                                  "(L12.mb3.fwd.qkv_gemm) or a trace's repeating kernel structure (whatif --identify)",
                                  in, i,
                                  ids[i].layer_source == LSIM_WI_LAYERS_ANNOTATIONS
                                      ? "layer annotations found, kernel roles not"
                                      : "no layer tags or annotations");
                goto done;
            }
        lsim_wi_model given;
        memset(&given, 0, sizeof given);
        given.micro_batch = (int)mbatch;
        if (model_s) {
            lsim_model_shape sh;
            rc = is_file_name(model_s) ? lsim_model_load(model_s, &sh, &err) : lsim_model_builtin(model_s, &sh, &err);
            if (rc) goto done;
            given.hidden = sh.hidden, given.ffn = sh.ffn, given.heads = sh.heads, given.head_dim = sh.head_dim;
            given.seq = sh.seq, given.vocab = sh.vocab;
        }
        size_t got = 0;
        if ((rc = lsim_store_read_graphs(in, 0, 1, &gs, &got, &err))) goto done;
        nread = got;
        rc = lsim_wi_model_of(gs[0], &L, &given, &Mfrom, &err);
        lsim_store_free_graphs(gs, got);
        gs = NULL;
        nread = 0;
        if (rc) goto done;
        Mto = Mfrom;
        if (hidden) Mto.hidden = (int)hidden;
        if (ffn) Mto.ffn = (int)ffn;
        Mto.tp = Ln.tp;
        if ((rc = lsim_wi_model_check(&Mto, "the transformed job", &err))) goto done;
        st[ST_SHAPE].used = memcmp(&Mto, &Mfrom, sizeof Mto) != 0;
    }
    if ((uint64_t)Ln.tp * (uint64_t)Ln.pp * (uint64_t)Ln.dp > 100000000ull) {
        rc = lsim_err_set(&err, LSIM_EARG, "--dp %ld: a job of more than 10^8 GPUs", dp);
        goto done;
    }
    ngpu_out = (size_t)Ln.tp * (size_t)Ln.pp * (size_t)Ln.dp;
    if (layers) {
        for (size_t i = 0; i < n; i++) {
            /* tagged (synth) graphs, or traces whose layers were recovered
             * from the kernel structure, the same on every rank (their
             * copies' collectives must pair up) */
            const lsim_wi_kernel_layers *k = &ids[i].klayers;
            int kern = trace_layers(&ids[i]) > 0;
            if (ids[i].layer_source != LSIM_WI_LAYERS_TAGS && !kern) {
                rc = lsim_err_set(&err, LSIM_EARG,
                                  "%s: rank %zu: layer structure unknown (%s): --layers needs graphs tagged by layer, as "
                                  "lumosim synth writes them, a trace with layer annotations (record_function "
                                  "\"layer[i]\"), or one whose layers repeat between tensor-parallel all-reduces (see "
                                  "whatif --identify; --trace-layers N)",
                                  in, i, ids[i].layer_source == LSIM_WI_LAYERS_KERNELS ? k->why : "no layer tags or annotations");
                goto done;
            }
            if (kern && !ids[i].forward_only) {
                rc = lsim_err_set(&err, LSIM_EARG,
                                  "%s: rank %zu: --layers: the trace has backward-pass or optimizer kernels, whose "
                                  "layers are not recovered (only a forward pass's are)",
                                  in, i);
                goto done;
            }
            if (kern && (ids[0].layer_source != ids[i].layer_source || trace_layers(&ids[i]) != trace_layers(&ids[0]) ||
                         trace_runs(&ids[i]) != trace_runs(&ids[0]))) {
                rc = lsim_err_set(&err, LSIM_EARG,
                                  "%s: rank %zu: %d layers x %d forward runs recovered, rank 0 has %d x %d: --layers "
                                  "needs the same structure on every rank",
                                  in, i, trace_layers(&ids[i]), trace_runs(&ids[i]), trace_layers(&ids[0]),
                                  trace_runs(&ids[0]));
                goto done;
            }
        }
        int V = ids[0].nchunks;
        if (V <= 0 || layers % ((long)L.pp * V)) {
            rc = lsim_err_set(&err, LSIM_EARG, "--layers %ld is not divisible by PP x V = %d x %d", layers, L.pp, V);
            goto done;
        }
        if (layers != (long)ids[0].layers_per_chunk * V * L.pp) st[ST_LAYERS].used = 1;
        if (st[ST_LAYERS].used) {
            /* each source GPU's layer nodes copied layers / old times; a
             * stage's source GPUs, their new graphs, a normalized copy and
             * a clone held at once */
            double r = (double)layers / (double)((long)ids[0].layers_per_chunk * V * L.pp), worst = 0, big = 0;
            double wn = 0, we = 0, ws = 0;
            size_t per0 = (size_t)L.tp * (size_t)L.dp;
            for (size_t p0 = 0; per0 && p0 < n; p0 += per0) {
                double hn = 0, he = 0, hs = 0;
                for (size_t i = p0; i < p0 + per0 && i < n; i++) {
                    double n0 = (double)tab[i].nodes, g = n0 + (r > 1 ? (double)ids[i].layer_nodes * (r - 1) : 0);
                    double f = n0 > 0 ? g / n0 : 1;
                    hn += n0 + 2 * g, he += (double)tab[i].edges * (1 + 2 * f), hs += (double)tab[i].strings * (1 + 2 * f);
                    if (g > big) big = g;
                }
                if (hn > worst) worst = hn, wn = hn, we = he, ws = hs;
            }
            if ((rc = size_check(out, 2.0 * (double)per0 + 1, wn, we, ws, big, &err))) goto done;
        }
    }
    for (int s = 0; s < nslow; s++)
        if ((size_t)slow_rank[s] >= ngpu_out) {
            rc = lsim_err_set(&err, LSIM_EARG, "--slow-gpu %d:%g: the %s has ranks 0..%zu", slow_rank[s], slow_f[s],
                              st[ST_DP].used ? "transformed job" : "job", ngpu_out - 1);
            goto done;
        }
    st[ST_NET].used = topo_f || gpu_s || st[ST_DP].used || st[ST_SHAPE].used;
    st[ST_GPU].used = gpu_s != NULL;
    st[ST_SLOW].used = nslow > 0;
    st[ST_JITTER].used = jit != NULL;
    {
        size_t len = 16;
        for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
        if (!(cmd = malloc(len))) goto nomem;
        strcpy(cmd, "lumosim whatif");
        for (int i = 0; i < argc; i++) strcat(strcat(cmd, " "), argv[i]);
    }
    /* pass 2: one pipeline stage of source GPUs at a time. With a pipeline
     * change, first every source stage into its (tp, dp) column's segments
     * (rounds 0 .. L.pp-1, nothing written), then the new stages emitted
     * from the columns (rounds L.pp ..); the per-GPU steps then start from
     * layout Ls (the source's TP and DP, the new PP). */
    size_t per = (size_t)L.tp * (size_t)L.dp;
    lsim_wi_layout Ls = L;
    Ls.pp = Ln.pp;
    if (!(blk = calloc(per, sizeof *blk))) goto nomem;
    if (tpipe && !(srcb = calloc(per, sizeof *srcb))) goto nomem;
    if (tpipe) nsrcb = per;
    if (pipe && !tpipe) {
        if (!(cols = calloc(per, sizeof *cols))) goto nomem;
        ncols = per;
        for (size_t i = 0; i < per; i++)
            if ((rc = lsim_wi_pipe_new(&L, (int)(i % (size_t)L.tp), (int)(i / (size_t)L.tp), &cols[i], &err))) goto done;
    }
    for (int it = 0; it < (tpipe ? Ls.pp : pipe ? L.pp + Ls.pp : L.pp); it++) {
        int p = it;
        if (tpipe && it > 0) goto tstage;
        if (pipe && !tpipe && it >= L.pp) {
            /* a stage of the new pipeline, from every column */
            p = it - L.pp;
            for (size_t i = 0; i < per; i++) {
                rc = lsim_wi_pipeline(cols[i], &pcfg, &Mto, &tfrom, p, &blk[i], &st[ST_PIPE].c, &err);
                if (rc) goto done;
                nblk = i + 1;
            }
            goto emit;
        }
        rc = lsim_store_read_graphs(in, per * (size_t)p, per, &gs, &nread, &err);
        if (rc) goto done;
        nblk = nread;
        for (size_t i = 0; i < nread; i++) {
            size_t gi = per * (size_t)p + i;
            lsim_graph *a = NULL, *b = NULL;
            rc = lsim_wi_normalize(gs[i], job, gi, &L, &a, &st[ST_NORM].c, &err);
            if (!rc && st[ST_LAYERS].used) {
                rc = lsim_wi_layers(a, &L, (int)layers, &tfrom, &b, &st[ST_LAYERS].c, &err);
                lsim_graph_free(a);
                a = b;
            }
            if (!rc && st[ST_SHAPE].used) {
                rc = lsim_wi_reshape(a, &L, &Mfrom, &Mto, &gfrom, &tfrom, &b, &st[ST_SHAPE].c, &err);
                lsim_graph_free(a);
                a = b;
            }
            if (rc) goto done;
            lsim_graph_free(gs[i]);
            gs[i] = NULL;
            blk[i] = a;
        }
        lsim_store_free_graphs(gs, nread);
        gs = NULL;
        if (tpipe) {
            /* a trace: the one source stage is kept, each new stage cut from it */
            for (size_t i = 0; i < nblk; i++) {
                srcb[i] = blk[i], blk[i] = NULL;
                for (size_t v = 0; v < srcb[i]->n; v++) tk_src[srcb[i]->kind[v]]++;
                te_src += srcb[i]->nedges;
            }
            nblk = 0;
        tstage:
            for (size_t i = 0; i < per; i++) {
                rc = lsim_wi_trace_pipeline(srcb[i], &L, &pcfg, &tfrom, (int)(i % (size_t)L.tp),
                                            (int)(i / (size_t)L.tp), p, &blk[i], &st[ST_PIPE].c, &err);
                if (rc) goto done;
                nblk = i + 1;
                for (size_t v = 0; v < blk[i]->n; v++) tk_new[blk[i]->kind[v]]++;
                te_new += blk[i]->nedges;
            }
            goto emit;
        }
        if (pipe) {
            for (size_t i = 0; i < nblk; i++) {
                if (!rc) rc = lsim_wi_pipe_add(cols[i], blk[i], p, &err);
                lsim_graph_free(blk[i]), blk[i] = NULL;
            }
            nblk = 0;
            if (rc) goto done;
            if (it == L.pp - 1) {
                /* the whole source is read: check the new pipeline before
                 * anything is written */
                lsim_wi_pipe_source(cols[0], NULL, &src_m);
                pcfg.micro_batches = mbs_new ? (int)mbs_new : src_m;
                for (size_t i = 0; i < per; i++)
                    if ((rc = lsim_wi_pipe_check(cols[i], &pcfg, &err))) goto done;
                {
                    /* a new stage's GPUs, one per column, and a clone when a
                     * per-GPU step follows, held at once */
                    double hn = 0, he = 0, hs = 0, big = 0, cn = 0, ce = 0, cs = 0, cl = 0;
                    for (size_t i = 0; i < per; i++) {
                        lsim_wi_pipe_estimate(cols[i], &pcfg, &cn, &ce, &cs);
                        hn += cn, he += ce, hs += cs;
                        if (cn > big) big = cn;
                    }
                    if (st[ST_DP].used || st[ST_NET].used || st[ST_GPU].used || st[ST_SLOW].used || st[ST_JITTER].used)
                        cl = 1;
                    if ((rc = size_check(out, (double)per + cl, hn + cl * big, he + cl * 1.8 * big, hs + cl * big / 2, big,
                                         &err)))
                        goto done;
                }
            }
            continue;
        }
    emit:
        for (size_t i = 0; i < nblk; i++) {
            /* a replica that the new width drops */
            int t, d, pp;
            lsim_wi_coords(&Ls, (int32_t)(per * (size_t)p + i), &t, &d, &pp);
            if (d >= Ln.dp || t >= Ln.tp) {
                st[ST_DP].c.gpus_removed++;
                for (size_t v = 0; v < blk[i]->n; v++) st[ST_DP].c.removed[blk[i]->kind[v]]++;
            }
        }
        if (!w) {
            lsim_store_write_opts wo = {cmd, NULL, 0};
            if ((rc = lsim_store_writer_open(out, &wo, &w, &err))) goto done;
        }
        for (int d = 0; d < Ln.dp; d++)
            for (int t = 0; t < Ln.tp; t++) {
                uint32_t ng = (uint32_t)lsim_wi_rank(&Ln, t, d, p);
                lsim_graph *cur = blk[(size_t)(t % Ls.tp) + (size_t)Ls.tp * (size_t)(d % Ls.dp)], *nx = NULL;
                int owned = 0;
#define STEP(call)                                                                                                  \
    do {                                                                                                            \
        if (!rc) {                                                                                                  \
            rc = (call);                                                                                            \
            if (!rc) {                                                                                              \
                if (owned) lsim_graph_free(cur);                                                                    \
                cur = nx;                                                                                           \
                owned = 1;                                                                                          \
                nx = NULL;                                                                                          \
            }                                                                                                       \
        }                                                                                                           \
    } while (0)
                if (st[ST_DP].used) STEP(lsim_wi_relayout(cur, &Ls, &Ln, ng, &nx, &st[ST_DP].c, &err));
                if (st[ST_NET].used) STEP(lsim_wi_retime(cur, &Ls, &Ln, &tfrom, &tto, &nx, &st[ST_NET].c, &err));
                if (st[ST_GPU].used) STEP(lsim_wi_gpu(cur, &gfrom, &gto, &nx, &st[ST_GPU].c, &err));
                for (int s = 0; s < nslow; s++)
                    if (slow_rank[s] == (int32_t)ng) STEP(lsim_wi_slow(cur, slow_f[s], &nx, &st[ST_SLOW].c, &err));
                if (st[ST_JITTER].used) STEP(lsim_wi_jitter(cur, sigma, (uint64_t)seed, ng, &nx, &st[ST_JITTER].c, &err));
#undef STEP
                const char *nosrc[1] = {NULL};
                /* never a store that sim would refuse (graph.h bounds) */
                if (!rc) rc = lsim_graph_check_bounds(cur, out, ng, &err);
                if (!rc) rc = lsim_store_writer_add(w, &cur, 1, nosrc, &err);
                if (owned) lsim_graph_free(cur);
                if (rc) goto done;
            }
        for (size_t i = 0; i < nblk; i++) lsim_graph_free(blk[i]), blk[i] = NULL;
        nblk = 0;
    }
    for (size_t i = 0; cols && i < per; i++) lsim_wi_pipe_record(cols[i], &st[ST_PIPE].c);
    if (tpipe) {
        /* the difference between the source columns and their stages */
        lsim_wi_counts *c = &st[ST_PIPE].c;
        for (int k = 0; k < LSIM_N_NKINDS; k++) {
            if (tk_new[k] > tk_src[k]) c->added[k] += tk_new[k] - tk_src[k];
            else c->removed[k] += tk_src[k] - tk_new[k];
        }
        if (te_new > te_src) c->edges_added += te_new - te_src;
        else c->edges_removed += te_src - te_new;
        c->gpus_added += (uint64_t)(Ls.pp - 1) * per;
    }
    /* the record, kept in the new store (root attribute "whatif") */
    if (!(rf = open_memstream(&text, &tlen))) goto nomem;
    fprintf(rf, "{\"lumosim_version\":\"%s\",\"source\":", LSIM_VERSION);
    lsim_text_json(rf, in); /* a file name: any bytes; the record must be valid JSON */
    fprintf(rf, ",\"gpus_in\":%zu,\"gpus_out\":%zu,\"structure\":", n, ngpu_out);
    put_ident(rf, ids, n, &L, 0);
    fprintf(rf, ",\"layout_out\":{\"tp\":%d,\"pp\":%d,\"dp\":%d},\"transformations\":[", Ln.tp, Ln.pp, Ln.dp);
    int first = 1;
    for (int s = 0; s < ST_N; s++) {
        if (!st[s].used) continue;
        const lsim_wi_counts *c = &st[s].c;
        fprintf(rf, "%s{\"name\":\"%s\",", first ? "" : ",", st[s].name);
        first = 0;
        switch (s) {
        case ST_LAYERS: fprintf(rf, "\"args\":{\"from\":%d,\"to\":%ld},", ids[0].layers_per_chunk * ids[0].nchunks * L.pp, layers); break;
        case ST_SHAPE:
            fprintf(rf, "\"args\":{\"from\":{\"hidden\":%d,\"ffn\":%d,\"tp\":%d,\"micro_batch\":%d},\"to\":{\"hidden\":%d,\"ffn\":%d,\"tp\":%d,\"micro_batch\":%d}},",
                    Mfrom.hidden, Mfrom.ffn, Mfrom.tp, Mfrom.micro_batch, Mto.hidden, Mto.ffn, Mto.tp, Mto.micro_batch);
            break;
        case ST_PIPE: {
            int V0 = ids[0].nchunks > 0 ? ids[0].nchunks : 1;
            fprintf(rf, "\"args\":{\"pp\":{\"from\":%d,\"to\":%d},\"schedule\":{\"from\":\"", L.pp, pcfg.pp);
            if (V0 > 1) fprintf(rf, "interleaved:%d", V0);
            else fputs("1f1b", rf);
            fputs("\",\"to\":\"", rf);
            if (pcfg.vstages > 1) fprintf(rf, "interleaved:%d", pcfg.vstages);
            else fputs("1f1b", rf);
            fprintf(rf, "\"},\"micro_batches\":{\"from\":%d,\"to\":%d}},", src_m, pcfg.micro_batches);
            break;
        }
        case ST_DP:
            if (Ln.tp != L.tp) fprintf(rf, "\"args\":{\"tp_from\":%d,\"tp_to\":%d,\"dp_from\":%d,\"dp_to\":%d},", L.tp, Ln.tp, L.dp, Ln.dp);
            else fprintf(rf, "\"args\":{\"from\":%d,\"to\":%d},", L.dp, Ln.dp);
            break;
        case ST_NET: /* file and GPU names: escaped (text.h) */
            fputs("\"args\":{\"topology\":", rf);
            lsim_text_json(rf, topo_f ? topo_f : gpu_s ? "default for --gpu" : "unchanged");
            fputs(",\"from_topology\":", rf);
            lsim_text_json(rf, ftopo_f ? ftopo_f : "default for --from-gpu");
            fputs("},", rf);
            break;
        case ST_GPU:
            fputs("\"args\":{\"from_how\":", rf);
            lsim_text_json(rf, from_how);
            fputs(",\"from\":", rf);
            lsim_text_json(rf, gfrom.name);
            fputs(",\"to\":", rf);
            lsim_text_json(rf, gto.name);
            fputs("},", rf);
            break;
        case ST_SLOW:
            fputs("\"args\":[", rf);
            for (int q = 0; q < nslow; q++) fprintf(rf, "%s{\"rank\":%d,\"factor\":%.17g}", q ? "," : "", slow_rank[q], slow_f[q]);
            fputs("],", rf);
            break;
        case ST_JITTER:
            if (sigma < 0) fprintf(rf, "\"args\":{\"sigma\":\"trace\",\"seed\":%ld},", seed);
            else fprintf(rf, "\"args\":{\"sigma\":%.17g,\"seed\":%ld},", sigma, seed);
            break;
        default: break;
        }
        fprintf(rf, "\"gpus_added\":%llu,\"gpus_removed\":%llu,", (unsigned long long)c->gpus_added,
                (unsigned long long)c->gpus_removed);
        put_kinds(rf, "nodes_added", c->added);
        fputc(',', rf);
        put_kinds(rf, "nodes_removed", c->removed);
        fputc(',', rf);
        put_kinds(rf, "nodes_retimed", c->retimed);
        fputs(",\"collectives_retimed\":{", rf);
        for (int k = 0; k < LSIM_WI_NGCLASS; k++)
            fprintf(rf, "%s\"%s\":%llu", k ? "," : "", lsim_wi_gclass_name(k), (unsigned long long)c->coll_retimed[k]);
        fprintf(rf, "},\"edges_added\":%llu,\"edges_removed\":%llu}", (unsigned long long)c->edges_added,
                (unsigned long long)c->edges_removed);
    }
    fputs("]}\n", rf);
    if (fclose(rf)) {
        rf = NULL;
        goto nomem;
    }
    rf = NULL;
    if (tlen && text[tlen - 1] == '\n') text[--tlen] = '\0';
    if ((rc = lsim_store_writer_set_attr(w, "whatif", text, &err))) goto done;
    /* the new job's GPU, for a what-if of this what-if (unless it was only assumed) */
    if (strcmp(from_how, "assumed (no GPU named by the traces)") || st[ST_GPU].used)
        if ((rc = lsim_store_writer_set_attr(w, "device", gto.name, &err))) goto done;
    rc = lsim_store_writer_close(w, &err);
    w = NULL;
    if (rc) goto done;
    fputs(text, stdout);
    fputc('\n', stdout);
    goto done;
nomem:
    rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
done:
    if (w) lsim_store_writer_abort(w);
    if (rc) {
        fprintf(stderr, "lumosim: error: %s\n", err.msg[0] ? err.msg : "failed");
        status = 1;
    }
    if (rf) fclose(rf);
    lsim_store_free_graphs(gs, nread);
    for (size_t i = 0; blk && i < nblk; i++) lsim_graph_free(blk[i]);
    free(blk);
    for (size_t i = 0; srcb && i < nsrcb; i++) lsim_graph_free(srcb[i]);
    free(srcb);
    lsim_store_gpu_table_free(tab, n);
    free(ids);
    free(ranks);
    free(ents);
    lsim_wi_job_free(job);
    for (size_t i = 0; cols && i < ncols; i++) lsim_wi_pipe_free(cols[i]);
    free(cols);
    free(cmd);
    free(text);
    return status;
}
