/* Discrete-event replay (see engine.h).
 *
 * Each node waits for its predecessors (in-degree count). When the last one
 * finishes, the node's start and end are fixed by the rules in graph.h and a
 * dispatch event keyed (start, id) goes into a binary min-heap. Popping it
 * releases the node's successors. Because every successor starts no earlier
 * than its predecessor's end (delays may be negative only for overlaps that
 * were observed, and then only down to the predecessor's start is relevant for
 * ordering), events leave the heap in time order, the order the conservative
 * parallel engine will need. Keys are unique (id breaks ties), so the result
 * is deterministic. The node model itself (resolve, the heap, the drain) is
 * in sched_inline.h, shared with the job run (job.c) and mpi/pdes.c. */
#include "lumosim/engine.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/alloc.h"
#include "internal/sched_inline.h" /* struct lsim_engine and the node model */

/* Bytes of one engine's arrays, each rounded to a cache line so that no two
 * GPUs' arrays share one. */
static size_t line(size_t b) { return (b + 63) / 64 * 64; }
static size_t engine_bytes(size_t n, int bind)
{
    return (bind ? 4 : 2) * line(n * sizeof(lsim_ns)) + 2 * line(n * sizeof(uint32_t));
}

/* One allocation for the per-node arrays of all the engines, through
 * lsim_alloc_big: a job's engines are created together, first written during
 * the run, and freed together. */
int lsim_engines_new(const lsim_graph *const *g, size_t n, lsim_engine **out, lsim_err *err)
{
    return lsim_engines_new_ex(g, n, 1, out, err);
}

/* keep_bind 0: no deciding-edge arrays, 16 of the 40 bytes a node (a
 * third of a synthesized job's memory in sim) */
int lsim_engines_new_ex(const lsim_graph *const *g, size_t n, int keep_bind, lsim_engine **out, lsim_err *err)
{
    int rc = 0;
    size_t total = 0;
    char *block = NULL;
    for (size_t i = 0; i < n; i++) out[i] = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t b = engine_bytes(g[i]->n ? g[i]->n : 1, keep_bind);
        if (total > SIZE_MAX - b) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the engine", lsim_graph_name(g[i]));
            goto cleanup;
        }
        total += b;
    }
    block = lsim_malloc_big(total);
    if (!block) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the engines (%zu MiB)", n ? lsim_graph_name(g[0]) : "job",
                          total >> 20);
        goto cleanup;
    }
    char *p = block;
    for (size_t i = 0; i < n; i++) {
        lsim_engine *e = lsim_calloc(1, sizeof *e);
        size_t m = g[i]->n ? g[i]->n : 1;
        if (!e) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the engine", lsim_graph_name(g[i]));
            goto cleanup;
        }
        if (i == 0) e->block = block;
        out[i] = e;
        e->g = g[i];
        e->start = (lsim_ns *)p, p += line(m * sizeof(lsim_ns));
        e->end = (lsim_ns *)p, p += line(m * sizeof(lsim_ns));
        if (keep_bind) {
            e->bind_start = (int64_t *)p, p += line(m * sizeof(int64_t));
            e->bind_end = (int64_t *)p, p += line(m * sizeof(int64_t));
        }
        e->indeg = (uint32_t *)p, p += line(m * sizeof(uint32_t));
        e->heap = (uint32_t *)p, p += line(m * sizeof(uint32_t));
    }
    return 0;
cleanup:
    for (size_t i = n; i-- > 0;) {
        lsim_free(out[i]);
        out[i] = NULL;
    }
    lsim_free(block);
    return rc;
}

int lsim_engine_new(const lsim_graph *g, lsim_engine **out, lsim_err *err)
{
    return lsim_engines_new(&g, 1, out, err);
}

void lsim_engine_free(lsim_engine *e)
{
    if (!e) return;
    lsim_free(e->block);
    lsim_free(e);
}

int lsim_engine_run(lsim_engine *e, lsim_err *err)
{
    const lsim_graph *g = e->g;
    size_t n = g->n;
    sched_reset(e);
    for (size_t v = 0; v < n; v++)
        if (e->indeg[v] == 0) {
            sched_resolve(e, (uint32_t)v);
            sched_heap_push(e->heap, &e->hn, e->start, (uint32_t)v);
        }
    while (e->hn) {
        uint32_t u = sched_heap_pop(e->heap, &e->hn, e->start);
        e->events++;
        for (uint64_t k = g->out_off[u]; k < g->out_off[u + 1]; k++) {
            uint32_t w = g->out_dst[k];
            if (--e->indeg[w] == 0) {
                sched_resolve(e, w);
                sched_heap_push(e->heap, &e->hn, e->start, w);
            }
        }
    }
    if (e->events != n)
        return lsim_err_set(err, LSIM_EINTERNAL, "%s: dependency cycle: %llu of %llu nodes never became ready",
                            lsim_graph_name(g), (unsigned long long)(n - e->events), (unsigned long long)n);
    return 0;
}

const lsim_ns *lsim_engine_start(const lsim_engine *e) { return e->start; }
const lsim_ns *lsim_engine_end(const lsim_engine *e) { return e->end; }
const int64_t *lsim_engine_bind_start(const lsim_engine *e) { return e->bind_start; }
const int64_t *lsim_engine_bind_end(const lsim_engine *e) { return e->bind_end; }
uint64_t lsim_engine_events(const lsim_engine *e) { return e->events; }

/* ------------------------------------------------- stepping from outside */

/* For drivers outside the library; the library's own (lsim_job_run,
 * mpi/pdes.c) inline the same functions from sched_inline.h. */
void lsim_engine_reset(lsim_engine *e) { sched_reset(e); }
void lsim_engine_resolve(lsim_engine *e, uint32_t v) { sched_resolve(e, v); }
void lsim_engine_set_end(lsim_engine *e, uint32_t v, lsim_ns end)
{
    e->end[v] = end;
    if (e->bind_end) e->bind_end[v] = -1;
}
size_t lsim_engine_release(lsim_engine *e, uint32_t v, uint32_t *ready) { return sched_release(e, v, ready); }
uint64_t lsim_engine_drain(lsim_engine *e, size_t *n, const int32_t *inst, lsim_engine_hook hook, void *ctx, int *rc)
{
    return sched_drain(e, n, inst, hook, ctx, rc);
}
const lsim_graph *lsim_engine_graph(const lsim_engine *e) { return e->g; }
uint32_t *lsim_engine_scratch(lsim_engine *e) { return e->heap; }
