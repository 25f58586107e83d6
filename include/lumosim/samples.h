/* Prediction intervals (docs/intervals.md): a job simulated N times, each
 * time with every GPU op's duration drawn from the durations the job's own
 * graphs hold for the same op, and the spread of the results reported as
 * p5 / p50 / p95 of the job span, of each breakdown component and of each
 * GPU's window.
 *
 * What is drawn. GPU work (kernels, copies, memsets; collectives too) is
 * grouped by key: the op's name, and for a collective also its bytes. A node
 * whose key has at least two durations in the pool takes one of them,
 * chosen uniformly (the empirical distribution: a bootstrap). A key with a
 * single duration has no distribution of its own: the node's duration is
 * scaled by max(0, 1 + s z), z standard normal, with s the pool's fitted
 * spread -- the median relative standard deviation of the keys that have at
 * least LSIM_SAMPLES_SPREAD_MIN durations (0 when there is none; stated in
 * the report). CPU work and edge delays keep their values: the host is
 * replayed as traced. Every draw depends on (seed, sample, GPU, node) alone,
 * so a sample is the same whichever process computes it.
 *
 * Pools. LSIM_POOL_JOB: each key's durations over all GPUs. LSIM_POOL_OTHERS:
 * for a GPU, the durations of the other GPUs only (leave one GPU out), so
 * that a GPU's interval is predicted from the others' kernels and its own
 * measured window is a fair test of it.
 *
 * Ownership: lsim_pools_new allocates *out (lsim_pools_free); it reads the
 * graphs and keeps nothing of them. All functions are local (no MPI); the
 * CLI spreads samples over MPI ranks (sample k on rank k mod K). */
#ifndef LUMOSIM_SAMPLES_H
#define LUMOSIM_SAMPLES_H

#include <stdio.h>

#include "lumosim/graph.h"
#include "lumosim/report.h"
#include "lumosim/run.h"

#define LSIM_SAMPLES_SPREAD_MIN 5 /* durations a key needs to count in the fitted spread */
#define LSIM_SAMPLES_MAX 100000

typedef enum lsim_pool_mode { LSIM_POOL_JOB = 0, LSIM_POOL_OTHERS } lsim_pool_mode;

typedef struct lsim_pools lsim_pools;

/* The pools of graphs g[0..n) (GPU i = g[i]). 0, or LSIM_ENOMEM. */
int lsim_pools_new(lsim_graph *const *g, size_t n, lsim_pool_mode mode, lsim_pools **out, lsim_err *err);
void lsim_pools_free(lsim_pools *p);

/* What the pools hold, for the report: GPU ops; of them, ops whose key has
 * one duration (drawn with the fitted spread) -- with LSIM_POOL_OTHERS,
 * ops whose key no other GPU has count here too --; keys; the spread. */
typedef struct lsim_pools_info {
    uint64_t ops, ops_spread, keys;
    double spread;
} lsim_pools_info;
void lsim_pools_get_info(const lsim_pools *p, lsim_pools_info *out);
/* The graphs' durations are modelled, not measured (a synthesized job,
 * whose repeated kernels have one modelled duration): every op is drawn
 * with relative std-dev `spread` around its own duration instead of from
 * the pools, and the info says so. Local. */
void lsim_pools_modelled(lsim_pools *p, double spread);

/* GPU `gpu`'s graph (the one the pools were built with at that index, or a
 * copy of it) with its GPU ops' durations drawn for sample `sample` of
 * `seed`, in place. 0, or LSIM_EARG when g does not match the pools. */
int lsim_pools_draw(const lsim_pools *p, lsim_graph *g, size_t gpu, uint64_t seed, uint64_t sample, lsim_err *err);

/* One sample's result: the job span, the breakdown (mean over GPUs),
 * each GPU's predicted window and its ProfilerStep iterations, ns. */
typedef struct lsim_sample {
    lsim_ns job;
    lsim_ns bd[4];   /* exposed compute, overlapped, exposed comm, other */
    lsim_ns *window; /* per GPU (n entries, owned by the caller) */
    lsim_ns *iter;   /* per GPU, nit entries each (GPU i's at i * nit), -1
                        past its iterations (owned by the caller) */
} lsim_sample;

/* Samples first .. first + count - 1 of `seed`: copies of g[0..n) drawn
 * (lsim_pools_draw) and simulated as lsim_run_simulate does (coupled when
 * they are the ranks of one job), into out[0..count) (each out[k].window
 * has room for n, out[k].iter for n x nit: the first nit iterations of
 * each GPU). The graphs are not modified. 0 or the run's error. */
int lsim_samples_run(const lsim_run_opts *o, lsim_graph *const *g, size_t n, size_t nit, const lsim_pools *p,
                     uint64_t seed, uint64_t first, uint64_t count, lsim_sample *out, lsim_err *err);

/* Nearest-rank percentile q (0 < q <= 100) of v[0..n) (v is sorted in
 * place): the smallest value with at least q % of the values at or below
 * it. n > 0. */
lsim_ns lsim_samples_percentile(lsim_ns *v, size_t n, double q);

/* The draw behind every sample: a hash of (seed, sample, gpu, node),
 * uniform over 64 bits. Local. */
uint64_t lsim_samples_hash(uint64_t seed, uint64_t sample, uint64_t gpu, uint64_t node);

/* replay --replicate-from's range (docs/intervals.md, "One traced rank"):
 * the job r (made by lsim_run_replicate and simulated, its truth measured
 * when it has one) simulated n times (samples 0..n-1 of seed) with
 *  - each collective instance taking one of the traced rank's durations of
 *    a collective of its kind and size, drawn uniformly, the rank's waiting
 *    for its peers included (o->replica_draw; run.h), and
 *  - each copy's GPU ops drawn from the traced rank's durations of the same
 *    op (lsim_pools_draw, LSIM_POOL_JOB), independently per copy,
 * and p5/p50/p95 of the job span into *out, with the traced rank's waiting
 * (lsim_run_replica_waits) and, when r holds the real ranks (r->ntruth),
 * the real job's span. The point simulation in r is not touched. Local. */
int lsim_samples_replica_range(const lsim_run_opts *o, const lsim_run *r, uint64_t n, uint64_t seed,
                               lsim_job_range *out, lsim_err *err);

/* The report of n samples of a job of ngpu GPUs: a table (json 0) or one
 * JSON document. actual[i]: GPU i's measured window, or -1 (none: a
 * synthesized or transformed job); point: the job span of the plain,
 * undrawn simulation. 0, LSIM_ENOMEM or LSIM_EIO. */
typedef struct lsim_samples_report {
    uint64_t n, seed;
    lsim_pool_mode mode;
    lsim_pools_info info;
    size_t ngpu;
    const lsim_sample *s;
    const lsim_ns *actual;   /* per GPU */
    size_t nit;              /* iterations per GPU in s[].iter */
    const lsim_ns *actual_iter; /* per GPU x nit: measured iteration, -1 none */
    lsim_ns actual_job;      /* measured job span, -1 none */
    lsim_ns point;
    const char *const *label; /* per GPU: its source */
} lsim_samples_report;
int lsim_samples_write(FILE *f, const lsim_samples_report *r, int json, lsim_err *err);

#endif
