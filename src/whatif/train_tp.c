/* What-if: tensor parallelism inserted into a traced training step of TP
 * width 1 (whatif --tp N on a training step; whatif.h lsim_wi_train_tp,
 * docs/whatif.md "Tensor parallelism of a training step"). A TP-1 trace
 * has no tensor-parallel all-reduce to split, but the training roles
 * (layers.c wi_train_roles_find) say where Megatron-LM puts them: after
 * each layer's attention projection and FC2 forward (the row-parallel
 * GEMMs' partial outputs), after its FC1 and QKV data gradients backward
 * (the column-parallel GEMMs' partial input gradients), and after the
 * vocabulary-parallel embedding lookup (Shoeybi et al. 2019, fig. 3 and
 * sec. 3). Each is launched from the thread that launched that kernel,
 * right after it, on a stream of its own; it waits (event) for the kernel
 * and the next kernel on the compute stream waits for it, as the
 * synchronous all-reduce of Megatron's f/g operators does. Sized micro-batch
 * x seq x hidden x elem_bytes (the activations), in a group of one named
 * "tp:P:D" of this GPU, timed for that group: the TP step widens it and the
 * network step re-times it for the new group, as DDP's buckets from DP 1.
 * The compute kernels are re-timed by the shape step before (cost-model
 * ratios at the new TP width), so this only adds the communication. The
 * cross-entropy's two small all-reduces of vocabulary-parallel logits are
 * left out (12 bytes per token: under a microsecond at these sizes). */
#include "wi_internal.h"
#include "lumosim/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/cost.h"
#include "../util.h"

#define NONE UINT32_MAX

/* Megatron's TP all-reduce after a kernel of this role and pass */
static int reduces_after(const char *role, int pass)
{
    if (!role) return 0;
    if (pass == 0) return !strcmp(role, "proj_gemm") || !strcmp(role, "fc2_gemm") || !strcmp(role, "lookup");
    if (pass == 1) return !strcmp(role, "qkv_dgrad") || !strcmp(role, "fc1_dgrad");
    return 0;
}

int lsim_wi_train_tp(const lsim_graph *in, const lsim_wi_layout *L, int64_t act_bytes, const lsim_topology *topo,
                     int32_t me, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    wi_train_roles T;
    memset(&T, 0, sizeof T);
    int rc = 0;
    size_t n = in->n, nk = 0, na = 0, ne = 0;
    wi_addnode *A = NULL;
    wi_addedge *E = NULL;
    uint32_t *at = NULL;
    lsim_ns *samp = NULL;
    if (act_bytes <= 0)
        return lsim_err_set(err, LSIM_EARG,
                            "%s: --tp on a training step: the activations' size is unknown (give --model and "
                            "--micro-batch)",
                            in->source);
    if ((rc = wi_train_roles_find(in, &T, err))) return rc;
    for (size_t v = 0; v < n; v++)
        if (in->kind[v] == LSIM_N_KERNEL && !(in->flags[v] & LSIM_NF_COLL) && reduces_after(T.role[v], T.pass[v])) nk++;
    if (!nk) {
        rc = lsim_err_set(err, LSIM_EARG,
                          "%s: --tp on a training step: no projection, FC2, FC1 or QKV GEMM found by role, so the "
                          "tensor-parallel all-reduces have no place",
                          in->source);
        goto cleanup;
    }
    if (!(A = lsim_calloc(2 * nk, sizeof *A)) || !(E = lsim_calloc(6 * nk, sizeof *E)) || !(at = lsim_malloc(nk * sizeof *at)) ||
        !(samp = lsim_malloc((in->nedges ? in->nedges : 1) * sizeof *samp)))
        goto nomem;
    /* launch costs of the trace: median launch call and launch delay */
    lsim_ns lcall = 5000, ldelay = 5000;
    {
        size_t k = 0;
        for (uint64_t e = 0; e < in->nedges; e++)
            if ((in->in_class[e] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) samp[k++] = in->in_delay[e];
        if (k) ldelay = lsim_median_i64(samp, k);
        k = 0;
        for (size_t v = 0; v < n && k < in->nedges; v++)
            if (in->kind[v] == LSIM_N_RUNTIME && in->out_off[v + 1] > in->out_off[v]) samp[k++] = in->dur[v];
        if (k) lcall = lsim_median_i64(samp, k);
    }
    int64_t pid = 0, tid = 0, corr = 0;
    for (size_t v = 0; v < n; v++)
        if (in->corr[v] >= corr) corr = in->corr[v] + 1;
    nk = 0;
    for (size_t v = 0; v < n; v++)
        if (in->kind[v] == LSIM_N_KERNEL && !(in->flags[v] & LSIM_NF_COLL) && reduces_after(T.role[v], T.pass[v]))
            at[nk++] = (uint32_t)v;
    pid = in->procs[in->proc[at[0]]].pid;
    for (uint32_t p = 0; p < in->nprocs; p++)
        if (in->procs[p].is_gpu && in->procs[p].pid == pid && in->procs[p].tid >= tid) tid = in->procs[p].tid + 1;
    lsim_proc pstream = {1, pid, tid, 0};
    int t_i, d_i, p_i;
    lsim_wi_coords(L, me, &t_i, &d_i, &p_i);
    int32_t one[1] = {me};
    const lsim_ns dur = lsim_cost_collective(topo, LSIM_COLL_ALLREDUCE, act_bytes, one, 1, LSIM_ALGO_AUTO);
    uint32_t prev = NONE;
    for (size_t i = 0; i < nk; i++) {
        uint32_t v = at[i], u = NONE, next = NONE, after = NONE;
        for (uint64_t k = in->in_off[v]; k < in->in_off[v + 1]; k++)
            if ((in->in_class[k] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) u = in->in_src[k];
        if (u == NONE) {
            rc = lsim_err_set(err, LSIM_EARG,
                              "%s: --tp on a training step: the %s kernel (node %u) has no launch in the trace, so its "
                              "all-reduce cannot be launched after it",
                              in->source, T.role[v], v);
            goto cleanup;
        }
        for (uint64_t k = in->out_off[v]; k < in->out_off[v + 1]; k++) {
            uint32_t w = in->out_dst[k];
            if (in->proc[w] == in->proc[v] && next == NONE) next = w; /* the compute stream's next kernel */
        }
        for (uint64_t k = in->out_off[u]; k < in->out_off[u + 1]; k++) {
            uint32_t w = in->out_dst[k];
            if (in->proc[w] == in->proc[u] && !in->procs[in->proc[w]].is_gpu && after == NONE) after = w;
        }
        uint32_t call = (uint32_t)(n + na), kern = call + 1;
        int32_t it = in->iter[v];
        A[na] = (wi_addnode){LSIM_N_RUNTIME, 0, in->proc[u], "cudaLaunchKernel", lcall, it, corr, 0, {0}, {0}};
        A[na + 1] = (wi_addnode){LSIM_N_KERNEL, LSIM_NF_COLL, in->nprocs, "ncclDevKernel_AllReduce [tensor parallel]",
                                 dur, it, corr, 1, {0}, {0}};
        lsim_coll_info *ci = &A[na + 1].coll;
        ci->kind = LSIM_COLL_ALLREDUCE;
        ci->from_metadata = 1;
        ci->group_size = 1;
        ci->dtype_bytes = 2;
        ci->in_nelems = ci->out_nelems = act_bytes / 2;
        ci->bytes = act_bytes;
        ci->pg_ranks = NONE;
        ci->seq = (int64_t)i;
        ci->root = -1;
        snprintf(A[na + 1].pg, sizeof A[na + 1].pg, "tp:%d:%d", p_i, d_i);
        corr++;
        na += 2;
        E[ne++] = (wi_addedge){u, call, LSIM_E_CPU_THREAD, 0};
        if (after != NONE) E[ne++] = (wi_addedge){call, after, LSIM_E_CPU_THREAD, 0};
        E[ne++] = (wi_addedge){call, kern, LSIM_E_LAUNCH, ldelay};
        E[ne++] = (wi_addedge){v, kern, LSIM_E_EVENT, 0};
        if (next != NONE) E[ne++] = (wi_addedge){kern, next, LSIM_E_EVENT, 0};
        if (prev != NONE) E[ne++] = (wi_addedge){prev, kern, LSIM_E_STREAM, 0};
        prev = kern;
        rec->coll_retimed[LSIM_WI_TP]++;
    }
    if ((rc = wi_append(in, &pstream, 1, A, na, E, ne, out, rec, err))) goto cleanup;
    /* the all-reduces are work of their kernel's phase (--identify) */
    for (size_t i = 0; i < nk; i++) {
        (*out)->phase[n + 2 * i] = (*out)->phase[n + 2 * i + 1] = in->phase[at[i]];
    }
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
cleanup:
    wi_train_roles_free(&T);
    free(A);
    free(E);
    free(at);
    free(samp);
    return rc;
}
