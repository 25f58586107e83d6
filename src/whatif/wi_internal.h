/* What-if internals shared by the files of src/whatif (not a public header). */
#ifndef LUMOSIM_WI_INTERNAL_H
#define LUMOSIM_WI_INTERNAL_H

#include "lumosim/whatif.h"

/* A structural edit of one graph: nodes removed, and segments (node sets
 * seg[v] >= 0) present copies[s] times (0: removed -- also flag them in
 * removed --, 1: kept, k: k-1 copies placed right after the segment's last
 * node). Edges into a removed node's successors come from the node before
 * it on its processor; a copy's edges from outside the segment come from the
 * previous copy's last node on that processor. */
typedef struct wi_plan {
    const uint8_t *removed;  /* per node */
    const int32_t *seg;      /* per node, -1 none */
    const int *copies;       /* per segment */
    uint32_t nseg;
    const char *source;      /* NULL: keep */
    int renumber;            /* renumber collective seq per group in node order */
    /* new name of node v's copy c (interned in o), or UINT32_MAX to keep */
    int (*name_of)(void *ctx, lsim_graph *o, uint32_t v, uint32_t c, uint32_t *id);
    void *ctx;
} wi_plan;

int wi_rebuild(const lsim_graph *g, const wi_plan *P, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err);
int wi_renumber_seq(lsim_graph *o, lsim_err *err);
int wi_intern(lsim_graph *g, const char *s, uint32_t *id);

#endif
