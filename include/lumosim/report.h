/* Printing a replay: a human-readable table or the stable JSON document
 * described in docs/report-json.md. Local.
 *
 * Ownership: everything is borrowed; nothing is retained after the call. */
#ifndef LUMOSIM_REPORT_H
#define LUMOSIM_REPORT_H

#include <stdio.h>

#include "lumosim/graph.h"
#include "lumosim/metrics.h"

typedef struct lsim_replay_item {
    const lsim_graph *g;
    const lsim_rank_report *r;
} lsim_replay_item;

void lsim_report_table(FILE *f, const lsim_replay_item *items, size_t n);

/* Writes the JSON document; returns 0 or LSIM_ENOMEM / LSIM_EIO. */
int lsim_report_json(FILE *f, const lsim_replay_item *items, size_t n,
                     lsim_err *err);

#endif
