/* Replay one Kineto trace with the installed library; print the predicted window in ns. */
#include <stdio.h>
#include "lumosim/engine.h"
#include "lumosim/metrics.h"
#include "lumosim/trace.h"

int main(int argc, char **argv)
{
    lsim_err err = {0};
    lsim_trace *t = NULL;
    lsim_graph *g = NULL;
    lsim_engine *e = NULL;
    lsim_rank_report r = {0};
    lsim_build_opts o;
    lsim_build_opts_default(&o);
    int rc = argc < 2 || lsim_trace_read(argv[1], &t, &err) || lsim_graph_build(t, &o, &g, &err) ||
             lsim_engine_new(g, &e, &err) || lsim_engine_run(e, &err) ||
             lsim_metrics_compute(g, lsim_engine_start(e), lsim_engine_end(e), 1000000, &r, &err);
    if (rc) fprintf(stderr, "consumer: %s\n", err.msg);
    else printf("%lld\n", (long long)r.window_predicted);
    lsim_rank_report_clear(&r);
    lsim_engine_free(e);
    lsim_graph_free(g);
    lsim_trace_free(t);
    return rc ? 1 : 0;
}
