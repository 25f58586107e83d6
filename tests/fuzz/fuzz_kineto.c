/* Fuzz target: the Kineto reader and, when the input parses as a trace, the
 * graph build and a replay of it. Nothing may crash, leak or hang on any
 * input; an input that is not a usable trace must be refused with an error.
 *
 * Built two ways (tests/fuzz/CMakeLists.txt): with clang, a libFuzzer
 * binary (-fsanitize=fuzzer); with any compiler, a plain program whose
 * main() runs the target on every file given (the seed corpus and every
 * crash ever found, kept as regression inputs). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "lumosim/engine.h"
#include "lumosim/graph.h"
#include "lumosim/metrics.h"
#include "lumosim/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lsim_trace *t = NULL;
    lsim_graph *g = NULL;
    lsim_engine *e = NULL;
    lsim_rank_report rep = {0};
    lsim_err err = {0};
    if (lsim_trace_read_mem("fuzz", (const char *)data, size, &t, &err)) {
        if (t || !err.msg[0]) abort(); /* a failure must say why and return nothing */
        return 0;
    }
    lsim_build_opts o;
    lsim_build_opts_default(&o);
    o.latency = size % 2 ? LSIM_LAT_OBSERVED : LSIM_LAT_MODEL;
    if (lsim_graph_build(t, &o, &g, &err) == 0 && lsim_engine_new(g, &e, &err) == 0 && lsim_engine_run(e, &err) == 0)
        lsim_metrics_compute(g, lsim_engine_start(e), lsim_engine_end(e), 1000000, &rep, &err);
    lsim_rank_report_clear(&rep);
    lsim_engine_free(e);
    lsim_graph_free(g);
    lsim_trace_free(t);
    return 0;
}
