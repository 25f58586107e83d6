/* Near-miss hidden dependencies (issue 16): the reader learns the trace's
 * timestamp granularity, and the hidden-dependency rule accepts a source
 * that ends up to one granularity step after its target's start. In
 * near_miss_us.json (whole microseconds) "producer" ends 1 us after
 * "consumer" starts -- a dependency rounded into an overlap -- and must give
 * the hidden edge; near_miss_ns.json is the same trace with nanosecond
 * digits, where the producer really ends 0.5 us after the consumer started,
 * and must not.
 *
 * usage: test_near_miss TEST_DATA_DIR */
#include <stdio.h>
#include <string.h>

#include "../unit/check.h"

#include "lumosim/graph.h"
#include "lumosim/kineto.h"
#include "lumosim/trace.h"

static uint32_t find(const lsim_graph *g, const char *name)
{
    for (uint32_t v = 0; v < g->n; v++)
        if (!strcmp(lsim_strtab_get(g->strings, g->name[v]), name)) return v;
    return UINT32_MAX;
}

/* The hidden edges producer -> consumer (count) and the last one's delay. */
static int check_one(const char *dir, const char *rel, lsim_latency_mode m, lsim_ns want_res, int want_edge)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    lsim_trace *t = NULL;
    lsim_graph *g = NULL;
    lsim_err err = {0};
    if (lsim_trace_read(path, &t, &err)) {
        CHECK_MSG(0, "cannot read %s: %s", path, err.msg);
        return 0;
    }
    CHECK_MSG(t->ts_resolution_ns == want_res, "%s: resolution %lld ns, expected %lld", rel, (long long)t->ts_resolution_ns,
              (long long)want_res);
    lsim_build_opts o;
    lsim_build_opts_default(&o);
    o.latency = m;
    if (lsim_graph_build(t, &o, &g, &err)) {
        CHECK_MSG(0, "cannot build %s: %s", path, err.msg);
        lsim_trace_free(t);
        return 0;
    }
    uint32_t p = find(g, "producer"), c = find(g, "consumer");
    CHECK_MSG(p != UINT32_MAX && c != UINT32_MAX, "%s: producer/consumer not found", rel);
    int n = 0;
    if (p != UINT32_MAX && c != UINT32_MAX) {
        CHECK_MSG(g->obs_end[p] > g->obs_start[c], "%s: the producer must end after the consumer starts", rel);
        for (uint64_t k = g->in_off[c]; k < g->in_off[c + 1]; k++)
            if ((g->in_class[k] & 0x7f) == LSIM_E_INFERRED && g->in_src[k] == p) {
                n++;
                /* the observed overlap is kept: the edge admits the trace */
                if (m == LSIM_LAT_OBSERVED)
                    CHECK_I64(g->in_delay[k], g->obs_start[c] - g->obs_end[p]);
                CHECK_MSG(g->obs_end[p] + g->in_delay[k] <= g->obs_start[c] || m == LSIM_LAT_MODEL,
                          "%s: hidden edge contradicts the trace", rel);
            }
    }
    CHECK_MSG(n == want_edge, "%s (%s): %d hidden producer->consumer edges, expected %d", rel, lsim_latency_mode_name(m), n,
              want_edge);
    CHECK_I64(g->edges_by_class[LSIM_E_INFERRED], want_edge);
    lsim_graph_free(g);
    lsim_trace_free(t);
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_near_miss TEST_DATA_DIR\n");
        return 2;
    }
    for (int m = 0; m < LSIM_LAT_NMODES; m++) {
        check_one(argv[1], "near_miss_us.json", (lsim_latency_mode)m, 1000, 1);
        check_one(argv[1], "near_miss_ns.json", (lsim_latency_mode)m, 1, 0);
    }
    /* a granularity between the two: quarter microseconds (floats near
     * 1.7e15 us) */
    lsim_trace *t = NULL;
    lsim_err err = {0};
    static const char q[] = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":1,"
                            "\"ts\":1706850122845782.25,\"dur\":3.5},{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\","
                            "\"pid\":0,\"tid\":7,\"ts\":1706850122845783,\"dur\":2,\"args\":{\"device\":0,"
                            "\"stream\":7,\"correlation\":1}}]}";
    if (lsim_trace_read_mem("quarter", q, sizeof q - 1, &t, &err)) CHECK_MSG(0, "%s", err.msg);
    else CHECK_I64(t->ts_resolution_ns, 250);
    lsim_trace_free(t);
    return check_result("test_near_miss");
}
