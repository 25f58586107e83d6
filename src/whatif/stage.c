/* Pieces of a new pipeline stage cut from a trace, shared by the forward
 * (trace_pipe.c) and training (train_pipe.c) pipelines: the trace's launch
 * costs, fresh correlation ids and streams, the stage's place in the job.
 * A lower module: both pipelines use it, it uses neither. */
#include "wi_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"

#define NONE UINT32_MAX

/* The upper median of v[0..n) (sorted in place), or dflt when empty. */
static lsim_ns median_or(lsim_ns *v, size_t n, lsim_ns dflt) { return n ? lsim_median_i64(v, n) : dflt; }

/* The trace's launch costs (wi_internal.h): median launch call over the
 * launched nodes' launches, median launch-edge delay; 5 us without any. */
void wi_launch_costs(const lsim_graph *in, const uint32_t *launcher, lsim_ns *samp, lsim_ns *lcall, lsim_ns *ldelay)
{
    size_t k = 0;
    for (size_t v = 0; v < in->n; v++)
        if (launcher[v] != NONE) samp[k++] = in->dur[launcher[v]];
    *lcall = median_or(samp, k, 5000);
    k = 0;
    for (uint64_t e = 0; e < in->nedges; e++)
        if ((in->in_class[e] & LSIM_EDGE_CLASS_MASK) == LSIM_E_LAUNCH) samp[k++] = in->in_delay[e];
    *ldelay = median_or(samp, k, 5000);
}

int64_t wi_next_corr(const lsim_graph *in)
{
    int64_t corr = 0;
    for (size_t v = 0; v < in->n; v++)
        if (in->corr[v] >= corr) corr = in->corr[v] + 1;
    return corr;
}

void wi_free_stream(const lsim_graph *in, int64_t stream, int64_t *pid, int64_t *tid)
{
    *pid = 0, *tid = 0;
    for (uint32_t p = 0; p < in->nprocs; p++)
        if (in->procs[p].is_gpu && in->procs[p].tid == stream) *pid = in->procs[p].pid;
    for (uint32_t p = 0; p < in->nprocs; p++)
        if (in->procs[p].is_gpu && in->procs[p].pid == *pid && in->procs[p].tid >= *tid) *tid = in->procs[p].tid + 1;
}

/* A new stage's place in the job (wi_internal.h): why its groups are
 * renamed here and not by the relayout: the relayout keeps PP, and the
 * stage is new. */
int wi_stage_place(lsim_graph *o, const lsim_wi_layout *Ls, int tp_i, int dp_i, int pp_i)
{
    o->rank = lsim_wi_rank(Ls, tp_i, dp_i, pp_i);
    o->world_size = Ls->tp * Ls->dp * Ls->pp;
    for (size_t k = 0; k < o->ncoll; k++) {
        lsim_coll_info *ci = &o->colls[k];
        const char *pg = ci->pg_name != NONE ? lsim_strtab_get(o->strings, ci->pg_name) : "";
        char name[64];
        int x, y;
        if (sscanf(pg, "tp:%d:%d", &x, &y) == 2) snprintf(name, sizeof name, "tp:%d:%d", pp_i, dp_i);
        else if (sscanf(pg, "dp:%d:%d", &x, &y) == 2) snprintf(name, sizeof name, "dp:%d:%d", tp_i, pp_i);
        else continue;
        if (wi_intern(o, name, &ci->pg_name)) return LSIM_ENOMEM;
    }
    return 0;
}
