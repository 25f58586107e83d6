/* The run layer, serial half (include/lumosim/run.h): traces into graphs,
 * the job rules, the serial simulation. Above src/job.c (the coupled-job
 * engine, lsim_job_*), which it drives; named run.c, not job.c, so that the
 * two are not confused. In lumosim_core: no MPI, no HDF5 (graph stores are
 * loaded by load_store.c, in lumosim_io). Never prints: progress and
 * statistics go to o->on_event. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lumosim/alloc.h"
#include "lumosim/input.h"
#include "lumosim/memlimit.h"
#include "lumosim/run.h"
#include "lumosim/samples.h"
#include "lumosim/strtab.h"
#include "lumosim/symmetry.h"

void lsim_run_opts_default(lsim_run_opts *o)
{
    memset(o, 0, sizeof *o);
    lsim_build_opts_default(&o->bo);
    o->bo.release_events = 1; /* each trace is freed right after its build */
    o->bin_ns = 1000000;
    o->replicate_from = -1;
}

/* The caller's callback, if any, with one event. */
static void emit(const lsim_run_opts *o, const lsim_run_event *ev)
{
    if (o->on_event) o->on_event(o->ctx, ev);
}

static void emit_phase(const lsim_run_opts *o, const char *path, const char *what)
{
    lsim_run_event ev = {.kind = LSIM_RUN_PHASE, .path = path, .what = what};
    emit(o, &ev);
}

/* ----------------------------------------------------------- paths */

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* One more path (a copy of s). The arrays grow by one: their size is
 * always r->n, whoever filled them (a run may be handed graphs it did not
 * load), and a few thousand reallocs cost nothing beside reading traces. */
static int push_path(lsim_run *r, const char *s)
{
    char **nv = lsim_realloc(r->paths, (r->n + 1) * sizeof *nv);
    if (!nv) return LSIM_ENOMEM;
    r->paths = nv;
    if (!(r->paths[r->n] = lsim_strdup(s))) return LSIM_ENOMEM;
    r->n++;
    return 0;
}

/* A directory's traces, appended in name order. Why a FIFO or another
 * special file under a trace's name is an error rather than skipped:
 * input.h. */
static int expand_dir(const char *dir, lsim_run *r, lsim_err *err)
{
    DIR *d = opendir(dir);
    if (!d) return lsim_err_set(err, LSIM_EIO, "%s: cannot open directory: %s", dir, strerror(errno));
    size_t first = r->n;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        if (nm[0] == '.' || strstr(nm, ".et.json")) continue;
        if (!ends_with(nm, ".json") && !ends_with(nm, ".json.gz")) continue;
        size_t len = strlen(dir) + strlen(nm) + 2;
        char *p = lsim_malloc(len);
        if (!p) {
            rc = LSIM_ENOMEM;
            break;
        }
        snprintf(p, len, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/", nm);
        if ((rc = lsim_input_check(p, 0, NULL, err))) {
            free(p);
            break;
        }
        rc = push_path(r, p);
        free(p);
        if (rc) break;
    }
    closedir(d);
    if (rc == LSIM_ENOMEM) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (rc) return rc;
    if (r->n == first) return lsim_err_set(err, LSIM_ETRACE, "%s: directory holds no *.json or *.json.gz traces", dir);
    qsort(r->paths + first, r->n - first, sizeof *r->paths, cmp_str);
    return 0;
}

int lsim_run_expand(char **args, int nargs, lsim_run *r, lsim_err *err)
{
    for (int i = 0; i < nargs; i++) {
        int is_dir = 0, rc = lsim_input_check(args[i], 1, &is_dir, err);
        if (rc) return rc;
        if (is_dir) rc = expand_dir(args[i], r, err);
        else if (push_path(r, args[i])) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        if (rc) return rc;
    }
    return 0;
}

/* ----------------------------------------------------------- the run */

void lsim_run_free(lsim_run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (!r->paths) break;
        if (r->graphs) lsim_graph_free(r->graphs[i]);
        if (r->engines) lsim_engine_free(r->engines[i]);
        if (r->reps) lsim_rank_report_clear(&r->reps[i]);
        if (r->cps) lsim_critical_path_clear(&r->cps[i]);
        free(r->paths[i]);
    }
    lsim_job_path_clear(r->job_path);
    free(r->job_path);
    lsim_netshare_detail_free(&r->share_det);
    lsim_job_free(r->job);
    lsim_job_free(r->sym_job);
    free(r->sym_rep);
    free(r->sym_qidx);
    free(r->sym_graphs);
    free(r->sym_engines);
    for (size_t i = 0; r->truth && i < r->ntruth; i++) lsim_graph_free(r->truth[i]);
    free(r->truth);
    free(r->graphs);
    free(r->engines);
    free(r->reps);
    free(r->cps);
    free(r->items);
    free(r->paths);
    memset(r, 0, sizeof *r);
}

int lsim_run_push_graph(lsim_run *r, lsim_graph *g, const char *path, lsim_err *err)
{
    lsim_graph **ng = lsim_realloc(r->graphs, (r->n + 1) * sizeof *ng);
    if (ng) r->graphs = ng;
    char **np = ng ? lsim_realloc(r->paths, (r->n + 1) * sizeof *np) : NULL;
    if (np) r->paths = np;
    char *p = np ? lsim_strdup(path) : NULL;
    if (!p) {
        lsim_graph_free(g);
        return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    }
    r->paths[r->n] = p;
    r->graphs[r->n++] = g;
    return 0;
}

int lsim_run_add_graphs(lsim_run *r, lsim_graph **gs, size_t ng, const char *fallback, lsim_err *err)
{
    int rc = 0;
    for (size_t k = 0; k < ng; k++) {
        if (rc) lsim_graph_free(gs[k]);
        else rc = lsim_run_push_graph(r, gs[k], gs[k]->source ? gs[k]->source : fallback, err);
    }
    return rc;
}

/* The execution trace beside a Kineto trace (PATH minus .json[.gz] plus
 * .et.json[.gz]), if there is one, fills in the process groups and sizes
 * its collective kernels do not carry (et.h), before the graph is built. */
static int apply_sibling_et(const lsim_run_opts *o, lsim_trace *t, lsim_err *err)
{
    char *etp = NULL;
    lsim_et_apply_stats st;
    int rc = lsim_et_apply_sibling(t, &st, &etp, err);
    if (!rc && etp) {
        lsim_run_event ev = {.kind = LSIM_RUN_ET, .path = t->path, .what = etp, .et = &st};
        emit(o, &ev);
    }
    free(etp);
    return rc;
}

/* Rank q of a merged file: the file read again, cut to the rank, built,
 * labelled "PATH [rank q]" and appended under the file's own path (build
 * checksums it as the graph's source). */
static int load_rank(const lsim_run_opts *o, const char *path, size_t q, size_t n, lsim_run *r, lsim_err *err)
{
    lsim_trace *u = NULL;
    lsim_graph *g = NULL;
    int rc = lsim_trace_read(path, &u, err);
    if (!rc) rc = lsim_trace_keep_rank(u, (int32_t)q, (int32_t)n, err);
    if (!rc) rc = lsim_graph_build(u, &o->bo, &g, err);
    lsim_trace_free(u);
    size_t len = strlen(path) + 32;
    char *label = rc ? NULL : lsim_malloc(len);
    if (label) snprintf(label, len, "%s [rank %zu]", path, q);
    if (!rc && g && label) {
        free(g->source);
        g->source = label;
        label = NULL;
    }
    free(label);
    if (!rc && (!g || !g->source)) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (rc) {
        lsim_graph_free(g);
        return rc;
    }
    return lsim_run_push_graph(r, g, path, err);
}

/* A merged multi-rank file (TraceLens TraceFusion, KINETO-NOTES trap 10:
 * every event tagged args.rank) is one job: one graph per rank, ranks
 * 0..N-1 of a world of N, each from the file read again and cut to its
 * rank (lsim_trace_keep_rank). t is the first read; *merged says whether it
 * was one (then t is the caller's to free and nothing else of it is used).
 * Ranks that are not 0..N-1: one error line. */
static int load_merged(const lsim_run_opts *o, const char *path, lsim_trace *t, lsim_run *r, int *merged,
                       lsim_err *err)
{
    int32_t *rk = NULL;
    size_t n = 0;
    *merged = 0;
    if (lsim_trace_row_ranks(t, &rk, &n)) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
    int rc = 0;
    if (n < 2) goto cleanup;
    *merged = 1;
    for (size_t q = 0; q < n && !rc; q++)
        if (rk[q] != (int32_t)q)
            rc = lsim_err_set(err, LSIM_ETRACE,
                              "%s: a merged file of %zu ranks whose events name rank %d: ranks must be 0..%zu "
                              "(rank %zu is missing)",
                              path, n, rk[q], n - 1, q);
    for (size_t q = 0; q < n && !rc; q++) rc = load_rank(o, path, q, n, r, err);
cleanup:
    free(rk);
    return rc;
}

/* The reader's byte count, as an event. */
typedef struct bytes_ctx {
    const lsim_run_opts *o;
    const char *path;
} bytes_ctx;

static void on_bytes(void *ctx, uint64_t bytes)
{
    const bytes_ctx *b = ctx;
    lsim_run_event ev = {.kind = LSIM_RUN_BYTES, .path = b->path, .bytes = bytes};
    emit(b->o, &ev);
}

/* One trace file: read, its execution trace applied, built (or, merged,
 * one graph per rank), appended. */
static int load_trace(const lsim_run_opts *o, const char *path, lsim_run *r, lsim_err *err)
{
    lsim_trace *t = NULL;
    lsim_graph *g = NULL;
    bytes_ctx bc = {o, path};
    emit_phase(o, path, "reading");
    double t0 = lsim_now_s();
    int rc = lsim_trace_read_ex(path, o->on_event ? on_bytes : NULL, &bc, &t, err), merged = 0;
    if (!rc && (rc = load_merged(o, path, t, r, &merged, err)) == 0 && merged) {
        lsim_trace_free(t);
        return 0;
    }
    if (!rc) rc = apply_sibling_et(o, t, err);
    double t1 = lsim_now_s();
    uint64_t bytes = t ? t->bytes_read : 0, evs = t ? t->events_seen : 0;
    emit_phase(o, path, "building the graph");
    if (!rc) rc = lsim_graph_build(t, &o->bo, &g, err);
    lsim_trace_free(t);
    if (rc) {
        lsim_graph_free(g);
        return rc;
    }
    lsim_run_event ev = {.kind = LSIM_RUN_LOADED, .path = path, .bytes = bytes, .events = evs,
                         .read_s = t1 - t0, .build_s = lsim_now_s() - t1, .graph = g};
    emit(o, &ev);
    return lsim_run_push_graph(r, g, path, err);
}

int lsim_run_load_traces(const lsim_run_opts *o, const char *path, lsim_run *r, lsim_err *err)
{
    lsim_run files = {0};
    char *arg = (char *)path;
    int rc = lsim_run_expand(&arg, 1, &files, err); /* on an error, what it found is freed below */
    for (size_t i = 0; i < files.n && !rc; i++) rc = load_trace(o, files.paths[i], r, err);
    lsim_run_free(&files);
    return rc;
}

/* ----------------------------------------------------------- simulating */

/* GPU i's item, its times from engine e (its own, or its class
 * representative's). */
static lsim_replay_item item_with(const lsim_run *r, size_t i, const lsim_engine *e, int with_cp, int coupled,
                                  lsim_ns clock_offset)
{
    return (lsim_replay_item){r->graphs[i],        &r->reps[i],
                              lsim_engine_start(e), lsim_engine_end(e),
                              lsim_engine_bind_start(e), lsim_engine_bind_end(e),
                              with_cp ? &r->cps[i] : NULL, coupled,
                              clock_offset, r->replicated && !r->truth, NULL};
}

lsim_replay_item lsim_run_item(const lsim_run *r, size_t i, int with_cp, int coupled, lsim_ns clock_offset)
{
    return item_with(r, i, r->engines[i], with_cp, coupled, clock_offset);
}

/* A reduced run's GPU i takes its class representative's predicted duty
 * cycle when it is the same bin for bin (it is computed from the same
 * times over the same structure; compared, not assumed): one copy per
 * class in memory. The representative is the class's lowest index, so its
 * report is made first and cleared first, when the run is freed. */
static void share_duty(lsim_run *r, size_t i)
{
    lsim_rank_report *p = &r->reps[i], *q = &r->reps[r->sym_rep[i]];
    if (r->sym_rep[i] == i || !p->duty_predicted || !q->duty_predicted || q->duty_predicted_borrowed ||
        p->nbins_predicted != q->nbins_predicted ||
        memcmp(p->duty_predicted, q->duty_predicted, ((size_t)p->nbins_predicted + 1) * sizeof *p->duty_predicted))
        return;
    free(p->duty_predicted);
    p->duty_predicted = q->duty_predicted;
    p->duty_predicted_borrowed = 1;
}

/* GPU i's metrics, waits and critical path from engine e, GPU gj of job j
 * (the run's job, or the quotient with e the representative's engine:
 * the same structure, so the same numbers over GPU i's own graph). */
static int finish_with(const lsim_run_opts *o, lsim_run *r, size_t i, const lsim_job *j, size_t gj,
                       const lsim_engine *e, lsim_err *err)
{
    lsim_graph *g = r->graphs[i];
    lsim_ns *wait = lsim_malloc((g->n ? g->n : 1) * sizeof *wait);
    if (!wait) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for the simulated waits", lsim_graph_name(g));
    lsim_job_waits(j, gj, g, lsim_engine_start(e), lsim_engine_end(e), wait);
    int rc = lsim_metrics_compute_ex(g, lsim_engine_start(e), lsim_engine_end(e), o->bin_ns, j->obs_wait[gj], wait,
                                     &r->reps[i], err);
    if (!rc)
        lsim_metrics_coupling(g, j->inst_of[gj], lsim_engine_start(e), lsim_engine_end(e), j->obs_wait[gj], wait,
                              &r->reps[i]);
    if (!rc) {
        lsim_job_rootless(j, gj, g, r->reps[i].coll_rootless);
        r->reps[i].has_rootless = 1;
    }
    if (!rc && r->reduced) share_duty(r, i);
    free(wait);
    if (!rc && o->critical) rc = lsim_critical_path_compute(g, e, &r->cps[i], err);
    r->items[i] = item_with(r, i, e, o->critical, 1, j->clock_offset[gj]);
    return rc;
}

/* A reduced run's GPU i whose graph holds its representative's structure
 * and collectives' table (the same arrays, read shared) takes a copy of
 * the representative's report, its predicted duty cycle shared: each
 * figure is computed from that structure, those collectives and the
 * representative's times (finish_with over the quotient), so it is the
 * same number; the reduced archive equals the full one byte for byte
 * (sim:symmetry, mpi:sim_symmetry). Why: the metrics of 98,304 GPUs took
 * 22.9 s. The critical path likewise: the walk over that structure and
 * those times (critical.c) is the representative's, node for node, so
 * GPU i's item points at it (r->cps[i] stays empty; the representative,
 * the class's lowest index, was finished first): report of a 4,096-GPU
 * store walked 4,096 paths. 1 when copied, 0 when GPU i must be measured,
 * -1 out of memory. */
static int copy_report(const lsim_run_opts *o, lsim_run *r, size_t i)
{
    size_t k = r->sym_rep[i];
    const lsim_graph *g = r->graphs[i], *h = r->graphs[k];
    const lsim_rank_report *q = &r->reps[k];
    if (k == i || g->n != h->n || g->kind != h->kind || g->in_off != h->in_off ||
        g->obs_start != h->obs_start || g->colls != h->colls || g->coll != h->coll || !q->has_coupling)
        return 0;
    lsim_rank_report *p = &r->reps[i];
    *p = *q;
    p->iters = NULL, p->duty_actual = NULL;
    p->iters = lsim_malloc((q->niters ? q->niters : 1) * sizeof *p->iters);
    p->duty_actual = q->duty_actual ? lsim_malloc(((size_t)q->nbins_actual + 1) * sizeof *p->duty_actual) : NULL;
    if (!p->iters || (q->duty_actual && !p->duty_actual)) {
        free(p->iters);
        free(p->duty_actual);
        memset(p, 0, sizeof *p);
        return -1;
    }
    if (q->niters) memcpy(p->iters, q->iters, q->niters * sizeof *p->iters);
    if (q->duty_actual) memcpy(p->duty_actual, q->duty_actual, ((size_t)q->nbins_actual + 1) * sizeof *p->duty_actual);
    p->duty_predicted_borrowed = q->duty_predicted != NULL;
    uint32_t qi = r->sym_qidx[k];
    r->items[i] = item_with(r, i, r->sym_engines[qi], 0, 1, r->sym_job->clock_offset[qi]);
    if (o->critical) r->items[i].cp = r->items[k].cp;
    return 1;
}

int lsim_run_finish_gpu(const lsim_run_opts *o, lsim_run *r, size_t i, size_t gpu, lsim_err *err)
{
    return finish_with(o, r, i, r->job, gpu, r->engines[i], err);
}

/* Ablate (if asked), then one engine per local GPU over one large
 * allocation (lsim_engines_new, lsim_alloc_big): written first during the
 * run, the engines' state is most of the fresh memory a run touches. The
 * simulated waits are not kept during the run; lsim_run_finish_gpu recovers
 * them (lsim_job_waits). */
static int ablate_all(const lsim_run_opts *o, lsim_run *r, lsim_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < r->n && !rc; i++) {
        lsim_graph *g = r->graphs[i];
        if (o->drop_mask || o->zero_launch_latency) rc = lsim_graph_ablate(g, o->drop_mask, o->zero_launch_latency, err);
    }
    return rc;
}

int lsim_run_engines(const lsim_run_opts *o, lsim_run *r, lsim_err *err)
{
    int rc = ablate_all(o, r, err);
    if (rc) return rc;
    return lsim_engines_new_ex((const lsim_graph *const *)r->graphs, r->n, o->critical || !o->no_bind, r->engines,
                               err);
}

int lsim_run_alloc_results(lsim_run *r, lsim_err *err)
{
    r->engines = lsim_calloc(r->n ? r->n : 1, sizeof *r->engines);
    r->reps = lsim_calloc(r->n ? r->n : 1, sizeof *r->reps);
    r->cps = lsim_calloc(r->n ? r->n : 1, sizeof *r->cps);
    r->items = lsim_calloc(r->n ? r->n : 1, sizeof *r->items);
    if (!r->engines || !r->reps || !r->cps || !r->items) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    return 0;
}

/* The inputs are the ranks of one job: each graph says its rank and the
 * world size, and together they are ranks 0..n-1 of a world of n. */
static int one_job(const lsim_run *r)
{
    if (r->n < 2) return 0;
    for (size_t i = 0; i < r->n; i++) /* observed latency replays each rank exactly, alone */
        if (r->graphs[i]->latency != LSIM_LAT_MODEL) return 0;
    unsigned char *seen = lsim_calloc(r->n, 1);
    int ok = seen != NULL;
    for (size_t i = 0; ok && i < r->n; i++) {
        const lsim_graph *g = r->graphs[i];
        if (g->world_size != (int32_t)r->n || g->rank < 0 || (size_t)g->rank >= r->n || seen[g->rank]) ok = 0;
        else seen[g->rank] = 1;
    }
    free(seen);
    return ok;
}

int lsim_run_job_like(const lsim_run *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->graphs[i]->world_size < 2 || r->graphs[i]->rank < 0 || r->graphs[i]->latency != LSIM_LAT_MODEL) return 0;
    return 1;
}

/* A job rebuilt from one rank (--replicate-from): every copy observed the
 * same durations, and each of them includes that rank's waiting for its
 * peers. The least biased transfer estimate the one trace gives for a
 * collective is the shortest duration among that rank's collectives of the
 * same kind and size (the instance where it waited least).
 *
 * g's observed collective nodes, in node order: *cv (malloc'd), *nc. */
static int observed_colls(const lsim_graph *g, uint32_t **cv, size_t *nc, lsim_err *err)
{
    *nc = 0;
    *cv = lsim_malloc((g->n ? g->n : 1) * sizeof **cv);
    if (!*cv) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", lsim_graph_name(g));
    for (size_t v = 0; v < g->n; v++)
        if ((g->flags[v] & LSIM_NF_COLL) && g->coll[v] >= 0 && g->obs_start[v] != LSIM_OBS_NONE) (*cv)[(*nc)++] = (uint32_t)v;
    return 0;
}

/* Collective v0's durations of its kind and size among cv[0..nc): how
 * many (*m), the shortest (returned), and the pick-th of them (*picked,
 * when pick < *m and picked is not NULL). */
static lsim_ns same_kind_size(const lsim_graph *g, const uint32_t *cv, size_t nc, size_t v0, uint64_t pick, uint64_t *m,
                              lsim_ns *picked)
{
    const lsim_coll_info *c0 = &g->colls[g->coll[v0]];
    lsim_ns best = g->obs_end[v0] - g->obs_start[v0];
    *m = 0;
    for (size_t i = 0; i < nc; i++) {
        const lsim_coll_info *c = &g->colls[g->coll[cv[i]]];
        if (c->kind != c0->kind || c->bytes != c0->bytes) continue;
        lsim_ns d = g->obs_end[cv[i]] - g->obs_start[cv[i]];
        if (d < best) best = d;
        if (picked && *m == pick) *picked = d;
        ++*m;
    }
    return best;
}

static int replicated_transfers(const lsim_run_opts *o, lsim_job *j, const lsim_graph *g, lsim_err *err)
{
    uint32_t *cv;
    size_t nc;
    int rc = observed_colls(g, &cv, &nc, err);
    for (size_t k = 0; !rc && k < j->ninst; k++) {
        uint32_t v0 = j->part_node[j->part_off[k]];
        if (g->obs_start[v0] == LSIM_OBS_NONE) continue; /* never observed: the matcher's modelled transfer stands */
        uint64_t m = 0;
        j->transfer[k] = same_kind_size(g, cv, nc, v0, UINT64_MAX, &m, NULL);
        if (o->replica_draw && m >= 2) {
            /* a sample of the range: one of the rank's durations, its waiting included */
            uint64_t pick = lsim_samples_hash(o->replica_seed, o->replica_sample, UINT64_MAX, k) % m;
            same_kind_size(g, cv, nc, v0, pick, &m, &j->transfer[k]);
        }
    }
    free(cv);
    return rc;
}

int lsim_run_replica_waits(const lsim_graph *g, uint64_t *colls, uint64_t *waited, lsim_ns *total, lsim_err *err)
{
    uint32_t *cv;
    size_t nc;
    *colls = *waited = 0;
    *total = 0;
    int rc = observed_colls(g, &cv, &nc, err);
    for (size_t i = 0; !rc && i < nc; i++) {
        uint64_t m;
        lsim_ns w = g->obs_end[cv[i]] - g->obs_start[cv[i]] - same_kind_size(g, cv, nc, cv[i], UINT64_MAX, &m, NULL);
        ++*colls;
        if (w > 0) ++*waited, *total += w;
    }
    free(cv);
    return rc;
}

static int sym_classes(const lsim_run_opts *o, lsim_run *r, lsim_err *err);
static int run_reduced(const lsim_run_opts *o, lsim_run *r, int ablate, lsim_err *err);

/* The quotient run undone: its engines freed (the first, which owns the
 * group's memory, last), the representatives' observed waits given back
 * to the job, the classes forgotten. */
static void drop_reduced(lsim_run *r)
{
    lsim_job *q = r->sym_job, *j = r->job;
    if (!q) return;
    for (size_t i = 0; i < r->n; i++) {
        uint32_t qi = r->sym_qidx ? r->sym_qidx[i] : UINT32_MAX;
        if (qi == UINT32_MAX) continue;
        if (!j->obs_wait[i]) {
            j->obs_wait[i] = q->obs_wait[qi];
            q->obs_wait[qi] = NULL;
        }
        r->engines[i] = NULL;
    }
    for (size_t k = q->ngpus; r->sym_engines && k-- > 0;) lsim_engine_free(r->sym_engines[k]);
    free(r->sym_engines);
    free(r->sym_graphs);
    lsim_job_free(q);
    free(r->sym_rep);
    free(r->sym_qidx);
    r->sym_engines = NULL, r->sym_graphs = NULL, r->sym_job = NULL, r->sym_rep = NULL, r->sym_qidx = NULL;
    r->reduced = 0;
    r->nclasses = r->n;
}

/* After a sweep gave the job new transfers: its classes again (replicas
 * whose links were loaded differently split: the transfers are in the
 * instances' colours), then the new quotient's engines, or every GPU's
 * when it is not exact any more. The results are the full run's either
 * way (symmetry.h). */
static int rereduce(const lsim_run_opts *o, lsim_run *r, lsim_err *err)
{
    drop_reduced(r);
    int rc = sym_classes(o, r, err);
    if (!rc && r->sym_job) return run_reduced(o, r, 0, err);
    if (!rc)
        rc = lsim_engines_new_ex((const lsim_graph *const *)r->graphs, r->n, o->critical || !o->no_bind, r->engines,
                                 err);
    return rc;
}

/* GPU i's engine in the run as it stands: its representative's when
 * reduced. */
static const lsim_engine *engine_of(const lsim_run *r, size_t i)
{
    return r->reduced ? r->sym_engines[r->sym_qidx[r->sym_rep[i]]] : r->engines[i];
}

static void job_step(const lsim_run_opts *o, const char *what, size_t done, size_t total);
static void progress_step(void *ctx, const char *what, size_t done, size_t total);

/* Link sharing (netshare.h): sweep the flows of the run just done and run
 * again with the shared transfers, o->share_passes times. The alone
 * transfers are the job's before the first sweep. A reduced run's
 * classes are computed again after each sweep (rereduce). */
static int share_links(const lsim_run_opts *o, lsim_run *r, lsim_err *err)
{
    lsim_job *j = r->job;
    lsim_netflows f = {0};
    lsim_ns *alone = lsim_malloc((j->ninst ? j->ninst : 1) * sizeof *alone);
    const lsim_ns **ends = lsim_malloc((r->n ? r->n : 1) * sizeof *ends);
    lsim_ns *shared = NULL, *prev = NULL;
    size_t nprev = 0;
    int rc = 0;
    if (!alone || !ends) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "link sharing: out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < r->n; i++) {
        if (r->graphs[i]->rank >= 0 && (size_t)r->graphs[i]->rank != i) {
            rc = lsim_err_set(err, LSIM_EARG,
                              "--link-sharing: %s is rank %d but GPU %zu of the job: the job's GPUs must be its "
                              "ranks in order",
                              r->paths[i], (int)r->graphs[i]->rank, i);
            goto cleanup;
        }
    }
    memcpy(alone, j->transfer, j->ninst * sizeof *alone);
    int passes = o->share_passes > 0 ? o->share_passes : LSIM_SHARE_PASSES, pass = 0, same = 0;
    for (; pass < passes && !rc && !same; pass++) {
        for (size_t i = 0; i < r->n; i++) ends[i] = lsim_engine_end(engine_of(r, i)); /* engines change when reduced */
        f.n = f.nl = 0;
        rc = lsim_netshare_collect(j, ends, alone, o->share, &f, err);
        free(prev);
        prev = shared;
        shared = rc ? NULL : lsim_malloc((f.n ? f.n : 1) * sizeof *shared);
        if (!rc && !shared) rc = lsim_err_set(err, LSIM_ENOMEM, "link sharing: out of memory");
        if (!rc) rc = lsim_netshare_sweep(&f, j->ngpus, o->share, shared, &r->share_st, &r->share_det, err);
        if (rc) break;
        /* a fixed point (the first sweep: no flow slowed): the engines already
         * hold the run with these times */
        if (!f.n || (prev ? f.n == nprev && !memcmp(prev, shared, f.n * sizeof *shared)
                          : !memcmp(f.work, shared, f.n * sizeof *shared))) { /* no flow: f.work is NULL */
            same = 1;
            break;
        }
        nprev = f.n;
        lsim_netshare_apply(j, &f, shared);
        char what[64];
        snprintf(what, sizeof what, "simulating again with shared links (pass %d)", pass + 2);
        job_step(o, what, 0, 0);
        if (r->reduced) rc = rereduce(o, r, err);
        if (!rc && r->reduced) rc = lsim_job_run_ex(r->sym_job, r->sym_engines, NULL, progress_step, (void *)o, err);
        else if (!rc) rc = lsim_job_run_ex(j, r->engines, NULL, progress_step, (void *)o, err);
    }
    r->shared = !rc;
    r->share_st.passes = pass + same;
    r->share_st.converged = same;
cleanup:
    lsim_netflows_free(&f);
    free(alone);
    free(ends);
    free(shared);
    free(prev);
    return rc;
}

/* The job's symmetry classes (symmetry.h), kept for the archive's class
 * map whether or not the run is reduced, and the quotient when it is
 * exact and wanted. Link sharing computes them again after each sweep
 * (share_links): the shared transfers are in the instances' colours, so
 * replicas whose links are loaded differently split. */
static int sym_classes(const lsim_run_opts *o, lsim_run *r, lsim_err *err)
{
    size_t n = r->n;
    lsim_job *q = NULL;
    lsim_sym_key *keys = lsim_malloc((n ? n : 1) * sizeof *keys);
    size_t *nodes = lsim_malloc((n ? 2 * n : 1) * sizeof *nodes), *colls = nodes ? nodes + n : NULL;
    int rc = 0;
    r->sym_rep = lsim_malloc((n ? n : 1) * sizeof *r->sym_rep);
    r->sym_qidx = lsim_malloc((n ? n : 1) * sizeof *r->sym_qidx);
    if (!r->sym_rep || !r->sym_qidx || !keys || !nodes)
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for the symmetry classes");
    r->nclasses = n;
    for (size_t i = 0; !rc && i < n; i++) nodes[i] = r->graphs[i]->n, colls[i] = r->graphs[i]->ncoll;
    if (!rc) rc = lsim_sym_keys(r->job, keys, err);
    if (!rc) rc = lsim_sym_classes(r->job, keys, r->sym_rep, &r->nclasses, err);
    if (!rc && r->nclasses < n) rc = lsim_sym_quotient(r->job, r->sym_rep, nodes, colls, r->sym_qidx, &q, err);
    free(keys);
    free(nodes);
    if (rc) return rc;
    /* the hashes proposed the first colours: the members' structures are
     * compared in full before anything is reduced */
    if (q && !lsim_sym_same_members(r->job, r->sym_rep)) {
        lsim_job_free(q);
        q = NULL;
    }
    if (!q) { /* not exact: the identity */
        for (size_t i = 0; i < n; i++) r->sym_rep[i] = (uint32_t)i;
        r->nclasses = n;
    }
    if (q && !o->symmetry_off) r->sym_job = q;
    else lsim_job_free(q);
    return 0;
}

/* The quotient run: engines for the representatives only (the memory a
 * reduced run saves), which now hold their observed waits; the full
 * job's instance map is no longer read, and freed (kept under link
 * sharing, whose passes may need the whole job). ablate: the graphs'
 * ablations still to be made (the first time only). */
static int run_reduced(const lsim_run_opts *o, lsim_run *r, int ablate, lsim_err *err)
{
    lsim_job *q = r->sym_job, *j = r->job;
    size_t nq = q->ngpus;
    int rc = ablate ? ablate_all(o, r, err) : 0;
    if (rc) return rc;
    r->sym_graphs = lsim_calloc(nq ? nq : 1, sizeof *r->sym_graphs);
    r->sym_engines = lsim_calloc(nq ? nq : 1, sizeof *r->sym_engines);
    if (!r->sym_graphs || !r->sym_engines) return lsim_err_set(err, LSIM_ENOMEM, "out of memory for the quotient run");
    for (size_t i = 0; i < r->n; i++) {
        if (j->inst_of && !o->share) { /* link sharing may run the whole job again (share_links) */
            lsim_free(j->inst_of[i]);
            j->inst_of[i] = NULL;
        }
        if (r->sym_qidx[i] == UINT32_MAX) continue;
        r->sym_graphs[r->sym_qidx[i]] = r->graphs[i];
        q->obs_wait[r->sym_qidx[i]] = j->obs_wait[i];
        j->obs_wait[i] = NULL;
    }
    q->graphs = r->sym_graphs;
    rc = lsim_engines_new_ex((const lsim_graph *const *)r->sym_graphs, nq, o->critical || !o->no_bind, r->sym_engines,
                             err);
    if (rc) return rc;
    for (size_t i = 0; i < r->n; i++)
        if (r->sym_qidx[i] != UINT32_MAX) r->engines[i] = r->sym_engines[r->sym_qidx[i]];
    r->reduced = 1;
    return 0;
}

/* All ranks of one job together: collectives matched across GPUs, clocks
 * aligned, symmetry classes, one joint run (of the representatives only
 * when reduced). */
/* The job's critical path over the engines that ran: with the symmetry
 * reduction, the quotient's, each representative named as its GPU (its
 * class's members have its times). */
static int job_path(lsim_run *r, lsim_err *err)
{
    size_t nq = r->reduced ? r->sym_job->ngpus : r->n;
    uint32_t *ids = r->reduced ? lsim_malloc((nq ? nq : 1) * sizeof *ids) : NULL;
    r->job_path = lsim_calloc(1, sizeof *r->job_path);
    if ((r->reduced && !ids) || !r->job_path) {
        free(ids);
        return lsim_err_set(err, LSIM_ENOMEM, "out of memory for the job's critical path");
    }
    for (size_t i = 0; ids && i < r->n; i++)
        if (r->sym_qidx[i] != UINT32_MAX) ids[r->sym_qidx[i]] = (uint32_t)i;
    int rc = r->reduced ? lsim_job_path_compute(r->sym_job, r->sym_graphs, r->sym_engines, ids, r->n, r->graphs,
                                                r->job_path, err)
                        : lsim_job_path_compute(r->job, r->graphs, r->engines, NULL, r->n, r->graphs, r->job_path, err);
    free(ids);
    return rc;
}

/* One job's phases as progress (lsim_run_event, "the job"). */
static void job_step(const lsim_run_opts *o, const char *what, size_t done, size_t total)
{
    lsim_run_event ev = {.kind = total ? LSIM_RUN_PROGRESS : LSIM_RUN_PHASE, .path = "the job", .what = what,
                         .count = done, .events = total};
    emit(o, &ev);
}

/* This process's peak RSS so far, in bytes (0 unknown): what a memory
 * check adds its next step to. */
static uint64_t peak_rss(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024 : 0;
}

/* A job sized for a reduced run (r->sized_reduced) that did not reduce:
 * every GPU gets an engine, which the load's memory check left out for
 * the GPUs sharing a structure. Their bytes (memlimit.h: 48 a node, 32
 * without the deciding edges) on top of the peak so far, against this
 * process's limit: refused in one line, not killed half-way; replay and
 * report, refused under mpirun, are not told to use it. */
static int engines_fit(const lsim_run_opts *o, const lsim_run *r, lsim_err *err)
{
    uint64_t limit = 0, nodes = 0;
    const char *src = NULL;
    if (!r->sized_reduced || r->reduced) return 0;
    int rc = lsim_mem_limit(&limit, &src, err);
    if (rc || limit == UINT64_MAX) return rc;
    for (size_t i = 0; i < r->n; i++)
        if (r->graphs[i]->share_refs) nodes += r->graphs[i]->n;
    unsigned b = LSIM_MEM_SHARED_NODE_B - (o->no_bind && !o->critical ? LSIM_MEM_BIND_B : 0);
    uint64_t held = peak_rss(), need = nodes * b;
    if (held + need <= limit) return 0;
    return lsim_err_set(err, LSIM_ENOMEM,
                        "the job's GPUs are not interchangeable (%zu symmetry classes of %zu GPUs): simulating every "
                        "one needs about %.1f GiB more than the %.1f GiB held, beyond the %.1f GiB this process may use "
                        "(%s); %s, or set LUMOSIM_MEM_LIMIT (0 = no check)",
                        r->nclasses, r->n, (double)need / 1073741824.0, (double)held / 1073741824.0,
                        (double)limit / 1073741824.0, src ? src : "the limit",
                        r->sized_reduced == LSIM_RUN_SIZED_ONE_PROCESS
                            ? "replay and report do not run under mpirun: mpirun -np K lumosim sim STORE -o R.h5, "
                              "then lumosim report R.h5"
                            : "run under mpirun -np K");
}

/* The match's and the run's progress as the job's steps
 * (lsim_job_match_ex, lsim_job_run_ex). */
static void progress_step(void *ctx, const char *what, size_t done, size_t total)
{
    job_step(ctx, what, done, total);
}

/* The parts of the collective match (lsim_run_opts.match_parts): as
 * given, else one when its sort fits what this process may still use
 * (its limit less the peak so far), else the fewest that fit, else the
 * most (the match then says how much it could not get). */
static int match_parts(const lsim_run_opts *o, const lsim_run *r, unsigned *parts, lsim_err *err)
{
    uint64_t limit = 0, colls = 0;
    const char *src = NULL;
    *parts = o->match_parts ? o->match_parts : 1;
    if (o->match_parts) return 0;
    int rc = lsim_mem_limit(&limit, &src, err);
    if (rc || limit == 0 || limit == UINT64_MAX) return rc;
    for (size_t i = 0; i < r->n; i++) colls += r->graphs[i]->ncoll;
    uint64_t held = peak_rss();
    unsigned p = lsim_mem_match_parts(colls, limit > held ? limit - held : 0);
    *parts = p ? p : LSIM_MATCH_PARTS_MAX;
    return 0;
}

static int simulate_job(const lsim_run_opts *o, lsim_run *r, lsim_err *err)
{
    double t0 = lsim_now_s();
    unsigned parts = 1;
    int rc = match_parts(o, r, &parts, err);
    if (rc) return rc;
    job_step(o, parts > 1 ? "matching collectives across GPUs, in parts" : "matching collectives across GPUs", 0, 0);
    rc = lsim_job_match_ex(r->graphs, r->n, parts, progress_step, (void *)o, &r->job, err);
    if (rc) return rc;
    r->match_parts = parts;
    if (o->replicate_from >= 0 && (rc = replicated_transfers(o, r->job, r->graphs[0], err))) return rc;
    if ((rc = lsim_job_align_clocks(r->job, err))) return rc;
    if ((rc = sym_classes(o, r, err))) return rc;
    double t1 = lsim_now_s();
    r->match_s = t1 - t0;
    job_step(o, "setting up the engines", 0, 0);
    rc = r->sym_job ? run_reduced(o, r, 1, err) : engines_fit(o, r, err);
    if (!rc && !r->sym_job) rc = lsim_run_engines(o, r, err);
    double t1b = lsim_now_s();
    r->setup_s = t1b - t1;
    job_step(o, "simulating", 0, 0);
    if (!rc && r->reduced) rc = lsim_job_run_ex(r->sym_job, r->sym_engines, NULL, progress_step, (void *)o, err);
    else if (!rc) rc = lsim_job_run_ex(r->job, r->engines, NULL, progress_step, (void *)o, err);
    if (!rc && o->share) rc = share_links(o, r, err);
    double t2 = lsim_now_s();
    r->simulate_s = t2 - t1b;
    for (size_t i = 0; i < r->n && !rc; i++) {
        job_step(o, "measuring GPUs", i + 1, r->n);
        if (!r->reduced) {
            rc = lsim_run_finish_gpu(o, r, i, i, err);
            continue;
        }
        int copied = copy_report(o, r, i);
        if (copied < 0) rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory for its report", lsim_graph_name(r->graphs[i]));
        if (copied) continue;
        uint32_t qi = r->sym_qidx[r->sym_rep[i]];
        rc = finish_with(o, r, i, r->sym_job, qi, r->sym_engines[qi], err);
    }
    if (!rc && o->critical) {
        job_step(o, "the job's critical path", 0, 0);
        rc = job_path(r, err);
    }
    r->metrics_s = lsim_now_s() - t2;
    lsim_run_event done = {.kind = LSIM_RUN_DONE};
    emit(o, &done);
    return rc;
}

int lsim_run_check_ranks(const lsim_run *r, lsim_err *err)
{
    for (size_t i = 0; i < r->n; i++) {
        const lsim_graph *g = r->graphs[i];
        if (g->world_size >= 1 && (g->rank < -1 || g->rank >= g->world_size))
            return lsim_err_set(err, LSIM_ETRACE, "%s: rank %d is outside 0..%d (world size %d)", r->paths[i],
                                g->rank, g->world_size - 1, g->world_size);
    }
    return 0;
}

typedef struct {
    int32_t rank;
    size_t at; /* the graph's position in the run */
} rank_at;

static int cmp_rank_at(const void *a, const void *b)
{
    const rank_at *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* Distributed traces (world size > 1) given together must be the ranks of
 * one job: no mixed world sizes, no rank twice, none missing. */
static int check_job(const lsim_run *r, lsim_err *err)
{
    int rc = lsim_run_check_ranks(r, err);
    if (rc) return rc;
    if (r->n < 2) return 0;
    int32_t w = r->graphs[0]->world_size;
    for (size_t i = 0; i < r->n; i++) {
        if (r->graphs[i]->world_size < 2 || r->graphs[i]->rank < 0) return 0; /* not distributed traces */
        if (r->graphs[i]->latency != LSIM_LAT_MODEL) return 0; /* observed: each rank replays alone */
    }
    for (size_t i = 1; i < r->n; i++)
        if (r->graphs[i]->world_size != w)
            return lsim_err_set(err, LSIM_ETRACE, "%s and %s: traces of different jobs (world size %d and %d)",
                                r->paths[0], r->paths[i], w, r->graphs[i]->world_size);
    /* Each GPU's rank sorted with its position: a rank twice and the first
     * missing rank are then one pass. Comparing every pair was 15 s of a
     * 98,304-GPU step. The ranks are in 0..w-1 (lsim_run_check_ranks). */
    rank_at *ra = lsim_malloc(r->n * sizeof *ra);
    if (!ra) return lsim_err_set(err, LSIM_ENOMEM, "out of memory checking the job's ranks");
    for (size_t i = 0; i < r->n; i++) ra[i] = (rank_at){r->graphs[i]->rank, i};
    qsort(ra, r->n, sizeof *ra, cmp_rank_at);
    /* the first pair in file order: the earliest file with a later twin */
    size_t di = SIZE_MAX, dk = 0;
    for (size_t q = 1; q < r->n; q++)
        if (ra[q].rank == ra[q - 1].rank && (q < 2 || ra[q - 2].rank != ra[q].rank) && ra[q - 1].at < di)
            di = ra[q - 1].at, dk = ra[q].at;
    int32_t miss = 0; /* the lowest rank no file holds */
    for (size_t q = 0; q < r->n && ra[q].rank <= miss; q++)
        if (ra[q].rank == miss) miss++;
    lsim_free(ra);
    if (di != SIZE_MAX)
        return lsim_err_set(err, LSIM_ETRACE, "%s and %s: both are rank %d", r->paths[di], r->paths[dk],
                            r->graphs[di]->rank);
    if ((int32_t)r->n != w)
        return lsim_err_set(err, LSIM_ETRACE,
                            "%s: %zu traces of a job of %d ranks: rank %d is missing (give every rank's trace, or "
                            "--independent to replay each on its own)",
                            r->paths[0], r->n, w, miss < w ? miss : -1);
    return 0;
}

/* Graph i alone: ablate (if asked), engine, run, metrics, critical path. */
static int simulate_one(const lsim_run_opts *o, lsim_run *r, size_t i, lsim_err *err)
{
    lsim_graph *g = r->graphs[i];
    int rc = 0;
    emit_phase(o, r->paths[i], "simulating");
    if (o->drop_mask || o->zero_launch_latency) rc = lsim_graph_ablate(g, o->drop_mask, o->zero_launch_latency, err);
    double t2 = lsim_now_s();
    if (!rc) rc = lsim_engine_new(g, &r->engines[i], err);
    if (!rc) rc = lsim_engine_run(r->engines[i], err);
    double t3 = lsim_now_s();
    const lsim_engine *e = r->engines[i];
    if (!rc) rc = lsim_metrics_compute(g, lsim_engine_start(e), lsim_engine_end(e), o->bin_ns, &r->reps[i], err);
    if (!rc) lsim_metrics_coupling(g, NULL, lsim_engine_start(e), lsim_engine_end(e), NULL, NULL, &r->reps[i]);
    if (!rc && o->critical) rc = lsim_critical_path_compute(g, e, &r->cps[i], err);
    r->simulate_s += t3 - t2;
    r->metrics_s += lsim_now_s() - t3;
    if (rc) return rc;
    lsim_run_event ev = {.kind = LSIM_RUN_SIMULATED, .path = r->paths[i], .simulate_s = t3 - t2,
                         .events = lsim_engine_events(e), .graph = g};
    emit(o, &ev);
    r->items[i] = lsim_run_item(r, i, o->critical, 0, 0);
    return 0;
}

int lsim_run_simulate(const lsim_run_opts *o, lsim_run *r, lsim_err *err)
{
    int rc = lsim_run_alloc_results(r, err);
    if (rc) return rc;
    if (!o->independent) {
        if ((rc = check_job(r, err))) return rc;
        if (one_job(r)) return simulate_job(o, r, err);
        /* several traces that name no rank: the caller says what happens,
         * and how to get the job (KINETO-NOTES: "Many files have none of
         * these") */
        int unnamed = r->n >= 2;
        for (size_t i = 0; unnamed && i < r->n; i++) unnamed = r->graphs[i]->world_size < 0;
        if (unnamed) {
            lsim_run_event ev = {.kind = LSIM_RUN_UNNAMED, .count = r->n};
            emit(o, &ev);
        }
    }
    for (size_t i = 0; i < r->n && !rc; i++) rc = simulate_one(o, r, i, err);
    lsim_run_event done = {.kind = LSIM_RUN_DONE};
    emit(o, &done);
    return rc;
}

/* ----------------------------------------------------------- --replicate-from */

/* The copies of rank src to every rank of its world w, into ng/np (label
 * "PATH (copy as rank q)"); on failure everything made is freed. */
static int make_copies(const lsim_run *r, size_t src, int32_t w, lsim_graph ***ngp, char ***npp, lsim_err *err)
{
    lsim_graph **ng = lsim_calloc((size_t)w, sizeof *ng);
    char **np = lsim_calloc((size_t)w, sizeof *np);
    int rc = ng && np ? 0 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (int32_t q = 0; q < w && !rc; q++) {
        rc = lsim_graph_clone(r->graphs[src], &ng[q], err);
        if (rc) break;
        ng[q]->rank = q;
        size_t len = strlen(r->paths[src]) + 64;
        if (!(np[q] = lsim_malloc(len))) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        else snprintf(np[q], len, "%s (copy as rank %d)", r->paths[src], q);
    }
    if (rc) {
        for (int32_t q = 0; q < w; q++) {
            if (ng) lsim_graph_free(ng[q]);
            if (np) free(np[q]);
        }
        free(ng);
        free(np);
        return rc;
    }
    *ngp = ng;
    *npp = np;
    return 0;
}

int lsim_run_replicate(const lsim_run_opts *o, lsim_run *r, lsim_err *err)
{
    size_t src = r->n;
    for (size_t i = 0; i < r->n; i++)
        if (r->graphs[i]->rank == o->replicate_from) src = i;
    if (src == r->n) return lsim_err_set(err, LSIM_EARG, "--replicate-from %d: no trace of rank %d among the inputs",
                                         o->replicate_from, o->replicate_from);
    int32_t w = r->graphs[src]->world_size;
    if (w < 2) return lsim_err_set(err, LSIM_EARG, "%s: --replicate-from needs a trace that names its world size", r->paths[src]);
    lsim_graph **ng = NULL;
    char **np = NULL;
    int rc = make_copies(r, src, w, &ng, &np, err);
    if (rc) return rc;
    /* every rank of the job given: keep the real ranks, to measure the
     * copies against the job that really ran */
    lsim_graph **truth = NULL;
    if (r->n == (size_t)w && one_job(r) && (truth = lsim_calloc((size_t)w, sizeof *truth))) {
        for (size_t i = 0; i < r->n; i++) {
            truth[r->graphs[i]->rank] = r->graphs[i];
            r->graphs[i] = NULL;
        }
        for (int32_t q = 0; q < w; q++) {
            const char *real = truth[q] && truth[q]->source ? truth[q]->source : "?";
            size_t len = strlen(r->paths[src]) + strlen(real) + 64;
            char *p = lsim_malloc(len);
            if (!p) continue; /* the label only */
            snprintf(p, len, "%s (copy as rank %d; actual: %s)", r->paths[src], q, real);
            free(np[q]);
            np[q] = p;
        }
    }
    /* the reports name each copy by its label (what it is, and what its
     * "actual" column was measured against), not by the source file alone */
    for (int32_t q = 0; q < w; q++) {
        char *l = lsim_strdup(np[q]);
        if (!l) continue;
        free(ng[q]->source);
        ng[q]->source = l;
    }
    for (size_t i = 0; i < r->n; i++) {
        lsim_graph_free(r->graphs[i]);
        free(r->paths[i]);
    }
    free(r->graphs);
    free(r->paths);
    r->graphs = ng;
    r->paths = np;
    r->truth = truth;
    r->ntruth = truth ? (size_t)w : 0;
    r->replicated = 1;
    r->n = (size_t)w;
    return 0;
}

/* The "actual" side of report p taken from tr, the real rank's report:
 * window, breakdown, iterations by name (names in g's and t's tables),
 * duty cycle (swapped, so tr frees p's old one). */
static void take_actual(lsim_rank_report *p, const lsim_graph *g, lsim_rank_report *tr, const lsim_graph *t)
{
    p->window_actual = tr->window_actual;
    p->window_actual_start = tr->window_actual_start;
    p->bd_actual = tr->bd_actual;
    for (uint32_t k = 0; k < p->niters; k++) {
        const char *nm = lsim_strtab_get(g->strings, p->iters[k].name);
        p->iters[k].actual = 0;
        p->iters[k].cpu_actual = 0;
        memset(&p->iters[k].bd_actual, 0, sizeof p->iters[k].bd_actual);
        for (uint32_t q = 0; q < tr->niters; q++)
            if (nm && !strcmp(nm, lsim_strtab_get(t->strings, tr->iters[q].name))) {
                p->iters[k].actual = tr->iters[q].actual;
                p->iters[k].cpu_actual = tr->iters[q].cpu_actual;
                p->iters[k].bd_actual = tr->iters[q].bd_actual;
            }
    }
    double *d = tr->duty_actual;
    tr->duty_actual = p->duty_actual;
    p->duty_actual = d;
    uint32_t nb = tr->nbins_actual;
    tr->nbins_actual = p->nbins_actual;
    p->nbins_actual = nb;
    /* the bin-by-bin difference is a timeline comparison: against the real
     * rank's now (the start errors stay the source rank's, as above) */
    if (p->has_fidelity) p->duty_abs_diff = lsim_metrics_duty_diff(p);
}

/* --replicate-from with the whole job given: the "actual" side of each
 * copy's report becomes the real rank's -- its window (and where it
 * started, so the job span is the real job's), its iterations by name, its
 * breakdown and duty cycle -- computed from that rank's trace alone, never
 * from the simulation. The prediction is untouched. Node agreement still
 * compares with the source rank's trace (the copies are its nodes). */
int lsim_run_measure_truth(const lsim_run_opts *o, lsim_run *r, lsim_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < r->n && !rc; i++) {
        const lsim_graph *t = r->truth[r->graphs[i]->rank];
        if (!t) continue;
        /* the observation as if it were a prediction: only its actual side is used */
        lsim_ns *s = lsim_malloc((t->n ? t->n : 1) * sizeof *s), *e = lsim_malloc((t->n ? t->n : 1) * sizeof *e);
        lsim_rank_report tr;
        memset(&tr, 0, sizeof tr);
        if (!s || !e) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        lsim_ns t0 = LSIM_OBS_NONE;
        for (size_t v = 0; !rc && v < t->n; v++)
            if (t->obs_start[v] != LSIM_OBS_NONE && (t0 == LSIM_OBS_NONE || t->obs_start[v] < t0)) t0 = t->obs_start[v];
        for (size_t v = 0; !rc && v < t->n; v++) {
            int seen = t->obs_start[v] != LSIM_OBS_NONE;
            s[v] = seen ? t->obs_start[v] : (t0 == LSIM_OBS_NONE ? 0 : t0);
            e[v] = seen ? t->obs_end[v] : s[v];
        }
        if (!rc) rc = lsim_metrics_compute(t, s, e, o->bin_ns, &tr, err);
        if (!rc) take_actual(&r->reps[i], r->graphs[i], &tr, t);
        lsim_rank_report_clear(&tr);
        free(s);
        free(e);
    }
    return rc;
}

void lsim_run_mean_breakdown(const lsim_run *r, lsim_ns out[4])
{
    double bd[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < r->n; i++) {
        const lsim_breakdown *b = &r->reps[i].bd_predicted;
        bd[0] += (double)b->exposed_compute, bd[1] += (double)b->overlapped;
        bd[2] += (double)b->exposed_comm, bd[3] += (double)b->other;
    }
    for (int k = 0; k < 4; k++) out[k] = r->n ? lsim_ns_from_double(bd[k] / (double)r->n) : 0;
}
