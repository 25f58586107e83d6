/* Two graphs equal array for array (graph.h): counts, every node column
 * (LSIM_GRAPH_COLUMNS), both edge CSRs, processors, iterations,
 * collectives (every field) and strings (by text, id for id). Scalars
 * such as the source or the rank are the caller's to compare. For the
 * unit tests that check two ways of making a graph against each other. */
#ifndef LSIM_TEST_GRAPH_SAME_H
#define LSIM_TEST_GRAPH_SAME_H

#include <string.h>

#include "lumosim/graph.h"
#include "lumosim/strtab.h"

static int graph_same(const lsim_graph *a, const lsim_graph *b)
{
    if (a->n != b->n || a->nedges != b->nedges || a->nprocs != b->nprocs || a->ncoll != b->ncoll ||
        a->niters != b->niters)
        return 0;
    size_t n = a->n, e = (size_t)a->nedges;
#define CMP_(field, type) \
    if (n && memcmp(a->field, b->field, n * sizeof(type))) return 0;
    LSIM_GRAPH_COLUMNS(CMP_)
#undef CMP_
    if (memcmp(a->in_off, b->in_off, (n + 1) * sizeof *a->in_off) ||
        memcmp(a->out_off, b->out_off, (n + 1) * sizeof *a->out_off))
        return 0;
    if (e && (memcmp(a->in_src, b->in_src, e * sizeof *a->in_src) ||
              memcmp(a->in_delay, b->in_delay, e * sizeof *a->in_delay) ||
              memcmp(a->in_class, b->in_class, e * sizeof *a->in_class) ||
              memcmp(a->out_dst, b->out_dst, e * sizeof *a->out_dst)))
        return 0;
    for (uint32_t i = 0; i < a->nprocs; i++)
        if (a->procs[i].is_gpu != b->procs[i].is_gpu || a->procs[i].pid != b->procs[i].pid ||
            a->procs[i].tid != b->procs[i].tid || a->procs[i].nnodes != b->procs[i].nnodes)
            return 0;
    for (uint32_t i = 0; i < a->niters; i++)
        if (a->iters[i].name != b->iters[i].name || a->iters[i].obs_start != b->iters[i].obs_start ||
            a->iters[i].obs_end != b->iters[i].obs_end)
            return 0;
    for (size_t i = 0; i < a->ncoll; i++) {
        const lsim_coll_info *x = &a->colls[i], *y = &b->colls[i];
        if (x->kind != y->kind || x->from_metadata != y->from_metadata || x->group_size != y->group_size ||
            x->in_nelems != y->in_nelems || x->out_nelems != y->out_nelems || x->dtype_bytes != y->dtype_bytes ||
            x->bytes != y->bytes || x->pg_name != y->pg_name || x->pg_ranks != y->pg_ranks || x->seq != y->seq ||
            x->root != y->root)
            return 0;
    }
    uint32_t ns = lsim_strtab_count(a->strings);
    if (ns != lsim_strtab_count(b->strings)) return 0;
    for (uint32_t i = 0; i < ns; i++)
        if (strcmp(lsim_strtab_get(a->strings, i), lsim_strtab_get(b->strings, i))) return 0;
    return 1;
}

#endif
