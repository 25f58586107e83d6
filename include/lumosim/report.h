/* Printing a replay: a human-readable table or the stable JSON document
 * described in docs/report-json.md. Local.
 *
 * Ownership: everything is borrowed; nothing is retained after the call. */
#ifndef LUMOSIM_REPORT_H
#define LUMOSIM_REPORT_H

#include <stdio.h>

#include "lumosim/critical.h"
#include "lumosim/graph.h"
#include "lumosim/metrics.h"

/* One replayed rank: its graph, its measurements and, when available, the
 * simulated times, the deciding edges and the critical path (NULL if not
 * computed). */
typedef struct lsim_replay_item {
    const lsim_graph *g;
    const lsim_rank_report *r;
    const lsim_ns *start, *end;             /* simulated times per node */
    const int64_t *bind_start, *bind_end;   /* see lsim_engine_bind_start */
    const lsim_critical_path *cp;           /* NULL unless --critical-path */
    int coupled;                            /* simulated together with the
                                               job's other ranks (collectives
                                               matched across GPUs) */
    lsim_ns clock_offset;                   /* estimated clock offset of this
                                               rank (coupled runs), ns */
} lsim_replay_item;

void lsim_report_table(FILE *f, const lsim_replay_item *items, size_t n);

/* The job's span over all items (earliest start to latest end of their
 * windows), actual and predicted. */
void lsim_report_job_span(const lsim_replay_item *items, size_t n, lsim_ns *actual, lsim_ns *predicted);

/* Writes the JSON document; returns 0 or LSIM_ENOMEM / LSIM_EIO. */
int lsim_report_json(FILE *f, const lsim_replay_item *items, size_t n,
                     lsim_err *err);

/* One self-contained HTML page (inline SVG and CSS, no scripts fetched from
 * anywhere): per-iteration stacked bars of the breakdown, actual beside
 * predicted; a per-rank timeline overview (duty cycle); the critical-path
 * summary of each rank that has one; graph statistics. Returns 0 or
 * LSIM_EIO / LSIM_ENOMEM. (src/report_html.c) */
int lsim_report_html(FILE *f, const lsim_replay_item *items, size_t n, lsim_err *err);

#endif
