/* The model-shape memory estimate of a job as it ran (whatif_plan.h,
 * lsim_wi_job_memest): what `replay --model` and `build --model` report for
 * a traced job, beside the profiler's own [memory] figures when it
 * recorded them. */
#include <stdlib.h>
#include "lumosim/alloc.h"
#include <string.h>

#include "lumosim/memest.h"
#include "lumosim/strtab.h"
#include "lumosim/whatif_plan.h"

/* The GPU the estimate is judged against: the traces' deviceProperties
 * capacity (totalGlobalMem, the largest if they differ: a job of one GPU
 * kind reports one figure), else the built-in spec their device name maps
 * to; its name for the report; and the NVLink domain that tells TP from DP
 * when every collective is on the world group (lsim_wi_layout_of). */
static void job_gpu(lsim_graph *const *gs, size_t n, char *name, size_t cap, double *capacity, int *per_node)
{
    const char *dev = NULL;
    int64_t traced = 0;
    for (size_t i = 0; i < n; i++) {
        if (gs[i]->mem_capacity > traced) traced = gs[i]->mem_capacity;
        if (!dev && gs[i]->device != UINT32_MAX && gs[i]->strings) {
            const char *d = lsim_strtab_get(gs[i]->strings, gs[i]->device);
            if (d && d[0]) dev = d;
        }
    }
    lsim_gpu_spec spec;
    lsim_topology topo;
    const char *b = lsim_gpu_builtin_for_device(dev);
    int have = b && !lsim_gpu_spec_builtin(b, &spec, NULL);
    if (!have) lsim_gpu_spec_builtin("h100", &spec, NULL); /* only its node size is used (8, as DGX/HGX) */
    lsim_topology_default(&spec, &topo);
    *per_node = topo.gpus_per_node;
    *capacity = traced > 0 ? (double)traced : have ? spec.mem_capacity : 0;
    snprintf(name, cap, "%s", dev ? dev : have ? spec.name : "unknown GPU");
}

/* Transformer layers of the whole model: synthesized tags number the
 * model's layers (the largest + 1); a trace's structure gives the layers
 * of one stage's forward run, times the stages. */
static int job_layers(const lsim_wi_ident *ids, size_t n, int pp)
{
    int tagged = 0, traced = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i].layer_source == LSIM_WI_LAYERS_TAGS && ids[i].layer_hi + 1 > tagged) tagged = ids[i].layer_hi + 1;
        int l = lsim_wi_ident_layers(&ids[i]);
        if (l > traced) traced = l;
    }
    return tagged > 0 ? tagged : traced * pp;
}

int lsim_wi_job_memest(lsim_graph *const *gs, size_t n, const lsim_wi_model *given, lsim_memest_job *out, char *why,
                       size_t cap, lsim_err *err)
{
    lsim_wi_ident *ids = NULL;
    lsim_err merr = {0};
    int rc = 0;
    memset(out, 0, sizeof *out);
    why[0] = 0;
    if (!n) {
        snprintf(why, cap, "no GPU graph");
        return 0;
    }
    if (!(ids = lsim_calloc(n, sizeof *ids))) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) rc = lsim_wi_identify(gs[i], i, 0, &ids[i], err);
    if (rc) goto cleanup;
    for (size_t i = 0; i < n; i++)
        if (ids[i].world > (int32_t)n) {
            /* a TP-8 rank alone reads as TP 1: the shards would be wrong */
            snprintf(why, cap,
                     "%s holds %zu of the job's %d GPUs, so the layout the model is split over is unknown (give "
                     "every rank's trace)",
                     gs[i]->source ? gs[i]->source : "the input", n, ids[i].world);
            goto cleanup;
        }
    char gpu[64];
    double capacity = 0;
    int per_node = 8;
    job_gpu(gs, n, gpu, sizeof gpu, &capacity, &per_node);
    lsim_wi_layout L;
    if (lsim_wi_layout_of(ids, n, per_node, &L, &merr)) {
        snprintf(why, cap, "the parallel layout is not recognised (%.200s)", merr.msg);
        goto cleanup;
    }
    lsim_wi_model M;
    if (lsim_wi_model_of(gs[0], &L, given, 0, &M, &merr)) {
        snprintf(why, cap, "%.240s", merr.msg);
        goto cleanup;
    }
    int layers = job_layers(ids, n, L.pp);
    if (layers <= 0) {
        snprintf(why, cap, "no transformer layer structure was found in the graphs (lumosim whatif --identify "
                           "says what was looked for)");
        goto cleanup;
    }
    lsim_memest_in in;
    lsim_memest_in_default(&in);
    in.layers = layers, in.hidden = M.hidden, in.ffn = M.ffn, in.heads = M.heads, in.head_dim = M.head_dim;
    in.seq = M.seq, in.vocab = M.vocab;
    in.tp = L.tp, in.pp = L.pp, in.dp = L.dp;
    in.vstages = ids[0].nchunks > 0 ? ids[0].nchunks : 1;
    in.micro_batch = M.micro_batch > 0 ? M.micro_batch : 1;
    in.microbatches = lsim_wi_ident_runs(&ids[0]) > 0 ? lsim_wi_ident_runs(&ids[0]) : 1;
    in.forward_only = ids[0].forward_only;
    if (lsim_memest_check(&in, &merr)) {
        snprintf(why, cap, "the model does not fit the job's layout (%.200s)", merr.msg);
        goto cleanup;
    }
    rc = lsim_memest_job_of(&in, gpu, capacity, out, err);
cleanup:
    free(ids);
    return rc;
}
