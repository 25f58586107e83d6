/* A synthesized job matched and run whole, for the unit tests that compare
 * two ways of synthesizing one job: *span gets its last node's end. 0 or
 * the error of the synthesis, match or run (err filled). */
#ifndef LSIM_TEST_JOB_SPAN_H
#define LSIM_TEST_JOB_SPAN_H

#include <stdlib.h>

#include "lumosim/engine.h"
#include "lumosim/job.h"
#include "lumosim/synth.h"

static int job_span(const lsim_synth_cfg *c, lsim_ns *span, lsim_err *err)
{
    size_t n = lsim_synth_ngpus(c);
    lsim_graph **g = calloc(n ? n : 1, sizeof *g);
    lsim_engine **e = calloc(n ? n : 1, sizeof *e);
    lsim_ns **w = calloc(n ? n : 1, sizeof *w);
    lsim_job *j = NULL;
    int rc = g && e && w ? lsim_synth_job(c, g, err) : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (!rc) rc = lsim_job_match(g, n, &j, err);
    for (size_t i = 0; !rc && i < n; i++) {
        rc = lsim_engine_new(g[i], &e[i], err);
        if (!rc && !(w[i] = malloc((g[i]->n ? g[i]->n : 1) * sizeof **w))) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    }
    if (!rc) rc = lsim_job_run(j, e, w, err);
    *span = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_ns *en = lsim_engine_end(e[i]);
        for (size_t v = 0; v < g[i]->n; v++)
            if (en[v] > *span) *span = en[v];
    }
    for (size_t i = 0; i < n; i++) {
        if (e) lsim_engine_free(e[i]);
        if (g) lsim_graph_free(g[i]);
        if (w) free(w[i]);
    }
    free(g), free(e), free(w);
    lsim_job_free(j);
    return rc;
}

#endif
