/* build, sim, info, and report from a result archive (see cli.h).
 *
 * Under mpirun (detected from the launcher's environment) build and sim are
 * MPI programs: the GPUs are split into contiguous blocks over the ranks,
 * each rank reads, builds or simulates only its own GPUs, and the HDF5 files
 * are written and read collectively (io/h5_*.c). Rank 0 then prints the
 * report from the result file it helped write, so the output of `sim` is the
 * same for any number of ranks. Without mpirun everything is serial and MPI
 * is not initialised. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "lumosim/csv.h"
#include "lumosim/output.h"
#include "lumosim/input.h"
#include "lumosim/memlimit.h"
#include "lumosim/memest.h"
#include "lumosim/pdes.h"
#include "lumosim/samples.h"

/* The command line as one string (provenance): "lumosim SUB ARGS...".
 * Caller frees. */
static char *join_argv(const char *sub, int argc, char **argv)
{
    size_t len = 16 + strlen(sub);
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    char *s = malloc(len);
    if (!s) return NULL;
    strcpy(s, "lumosim ");
    strcat(s, sub);
    for (int i = 0; i < argc; i++) {
        strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

/* The parallel layout of a job, for the "groups" mapping (run.h,
 * lsim_map_layout_of): rank 0 reads GPU 0's graph alone and tells the
 * others. Collective over the world (world.h). */
static int job_layout(const lsim_world *m, const char *job, lsim_map_layout *l, lsim_err *err)
{
    int rc = 0;
    if (m->rank == 0 && l->ngpus > 1) {
        lsim_graph **gs = NULL;
        size_t ng = 0;
        rc = lsim_store_read_graphs(job, 0, 1, &gs, &ng, err);
        if (!rc) rc = lsim_map_layout_of(ng ? gs[0] : NULL, l->ngpus, l, err);
        lsim_store_free_graphs(gs, ng);
    }
    return lsim_world_bcast_layout(m, rc, l, err);
}

/* Under mpirun: every rank expands the same inputs, then builds its
 * contiguous block of the files, so GPU order is the serial order; the
 * store is written collectively. Collective over the world (world.h); the
 * status is agreed. */
static int build_mpi(const lsim_world *m, const lsim_cli_opts *o, char **args, int nargs, const char *out,
                     const char *cmd, lsim_run *run, lsim_err *err)
{
    lsim_run files = {0};
    int rc = lsim_run_expand(args, nargs, &files, err);
    size_t first = 0, count = 0;
    if (!rc) lsim_map_block(files.n, m->size, m->rank, &first, &count);
    if (!rc && count) rc = lsim_cli_load(o, files.paths + first, (int)count, run, err);
    lsim_run_free(&files);
    if ((rc = lsim_world_agree(m, rc, err))) return rc;
    lsim_store_write_opts wo = {cmd, (const char *const *)run->paths, 0, {0}};
    lsim_cli_tty_progress(1, "build: writing the graphs of %zu traces to %s", files.n, out);
    return lsim_world_write_graphs(m, out, run->graphs, run->n, &wo, err);
}

/* build --model: the store with the job's model-shape memory estimate as
 * its root attribute "memory" (as lumosim synth records one), through the
 * streamed writer, which takes attributes; sim, info and report then show
 * it and flag OOM. Without an estimate (the warning said why) the store is
 * written as without --model. Local. */
static int build_with_memory(const lsim_cli_opts *o, lsim_run *run, const char *out, const lsim_store_write_opts *wo,
                             lsim_err *err)
{
    lsim_memest_job mem;
    lsim_store_writer *w = NULL;
    char *json = NULL;
    int rc = lsim_cli_job_memory(o, run->graphs, run->n, &mem, err);
    if (!rc && mem.nstages) rc = lsim_memest_job_json(&mem, &json, err);
    if (!rc) rc = lsim_store_writer_open(out, wo, &w, err);
    if (!rc) rc = lsim_store_writer_add(w, run->graphs, run->n, wo->source_paths, err);
    if (!rc && json) rc = lsim_store_writer_set_attr(w, "memory", json, err);
    char dev[256];
    if (!rc && lsim_store_job_device(run->graphs, run->n, dev, sizeof dev)) /* as lsim_store_write_graphs does */
        rc = lsim_store_writer_set_attr(w, "device", dev, err);
    if (!rc) {
        rc = lsim_store_writer_close(w, err); /* frees w, also on failure */
        w = NULL;
    }
    if (w) lsim_store_writer_abort(w);
    if (!rc && mem.oom) {
        char line[256];
        lsim_memest_oom_line(&mem, line, sizeof line);
        fprintf(stderr, "lumosim: warning: %s\n", line);
    }
    free(json);
    lsim_memest_job_free(&mem);
    return rc;
}

int lsim_cli_build(int argc, char **argv)
{
    lsim_cli_build_args ba;
    lsim_cli_opts o;
    const char *out = NULL;
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    int nargs = 0, status = 0;
    lsim_err err = {0};
    lsim_run run = {0};
    char *cmd = join_argv("build", argc, argv);
    lsim_world m = {0, 0, 1};
    if (!args || !cmd) {
        lsim_cli_error("out of memory");
        free(args);
        free(cmd);
        return 1;
    }
    int p = lsim_cli_parse_build(argc, argv, &ba, args);
    if (p <= 0) {
        status = p < 0 ? 2 : 0;
        goto done;
    }
    o = ba.o;
    out = ba.out;
    nargs = ba.nargs;
    if (ba.chakra) {
        /* the build options shape a graph made from traces; a Chakra file's graph is made */
        if (o.seen.n != 2) {
            lsim_cli_usage_error("build --chakra takes -o alone (the trace options do not apply)");
            status = 2;
        } else if (lsim_cli_refuse_mpi("build --chakra")) { /* serial: every rank would write the store */
            status = 2;
        } else {
            status = lsim_cli_build_chakra(ba.chakra, out, cmd);
        }
        goto done;
    }
    lsim_io_file bouts[1] = {{out, "-o", 1, LSIM_OUT_STORE}};
    if (lsim_cli_check_io(args, nargs, bouts, 1, &err)) {
        lsim_cli_error("%s", err.msg);
        status = 1;
        goto done;
    }
    o.store_out = out;
    o.run.bo.keep_cpu_ops = 1; /* the store keeps each CPU op tree: a predicted trace of it writes every op whole */
    if (o.micro_batch && !o.model) {
        lsim_cli_usage_error("--micro-batch goes with --model (the memory estimate's shape)");
        status = 2;
        goto done;
    }
    if (lsim_world_begin(&m)) {
        lsim_cli_error("MPI_Init failed");
        status = 1;
        goto done;
    }
    int rc = 0;
    /* reading and building say their progress (run events); the store's
     * write is the rest: rank 0's terminal only, not with --stats */
    if (m.rank != 0 || o.stats) lsim_cli_tty_progress_off();
    if (m.on && o.model) {
        /* the estimate needs every GPU's graph in one place */
        rc = lsim_err_set(&err, LSIM_EARG,
                          "build --model is not run under mpirun (each rank holds only its traces): build without "
                          "mpirun, or build first and estimate with lumosim replay --model");
    } else if (m.on) {
        rc = build_mpi(&m, &o, args, nargs, out, cmd, &run, &err);
    } else {
        rc = lsim_cli_load(&o, args, nargs, &run, &err);
        lsim_store_write_opts wo = {cmd, (const char *const *)run.paths, 0, {0}};
        if (!rc) lsim_cli_tty_progress(1, "build: writing %zu graphs to %s", run.n, out);
        if (!rc && o.model) rc = build_with_memory(&o, &run, out, &wo, &err);
        else if (!rc) rc = lsim_store_write_graphs_ex(out, run.graphs, run.n, &wo, &err);
    }
    lsim_cli_tty_progress_done();
    /* under mpirun the error is agreed (every rank holds the lowest failing
     * rank's): one line, from rank 0 */
    if (rc) {
        if (m.rank == 0) lsim_cli_error("%s", err.msg[0] ? err.msg : "failed");
        status = 1;
    }
    lsim_cli_outcome_known();
    lsim_world_end(&m);
done:
    lsim_run_free(&run);
    free(args);
    free(cmd);
    return status;
}


/* mem: the store's memory estimate (NULL: none; docs/memory.md); net:
 * link sharing's figures (NULL: none) */
static int print_report(const lsim_cli_opts *o, const lsim_replay_item *items, size_t n, const lsim_memest_job *mem,
                        const lsim_netshare_stats *net, lsim_err *err)
{
    int rc = 0;
    if (lsim_cli_csv_is_stdout(o->csv_out)) return 0; /* --csv -: the CSV is the report */
    lsim_report_extra x = {mem, net, NULL, NULL};
    if (o->json) rc = lsim_report_json_x(stdout, items, n, &x, err);
    else lsim_report_table_x(stdout, items, n, o->per_rank, &x);
    if (!rc && fflush(stdout) != 0) rc = lsim_err_set(err, LSIM_EIO, "cannot write the report to standard output: %s", strerror(errno));
    return rc;
}

/* Under mpirun: each rank formats its own GPUs' report sections (table
 * text or JSON objects, lsim_report_*_item), rank 0 gathers them and prints
 * the report in GPU order, byte for byte what the serial run prints. Why:
 * reading every GPU's graphs and results back on rank 0 took longer than the
 * simulation at K = 2 and needed memory for the whole job on one rank.
 * Collective over the world (world.h); rc on every rank (a print error: rank 0's). */
typedef struct csv_parts {
    char *const *objs;
    size_t n;
} csv_parts;

/* The CSV from each GPU's rows (lsim_csv_item_text), in GPU order. */
static int write_csv_parts(FILE *f, void *ctx, lsim_err *err)
{
    const csv_parts *c = ctx;
    int rc = lsim_csv_header(f, err);
    for (size_t g = 0; !rc && g < c->n; g++) fputs(c->objs[g], f);
    if (!rc && ferror(f)) rc = lsim_err_set(err, LSIM_EIO, "cannot write the CSV: %s", strerror(errno));
    return rc;
}

/* csv: instead of the report, the --csv rows of each GPU are gathered the
 * same way and rank 0 writes o->csv_out (the serial run's bytes). */
static int report_parallel(const lsim_world *m, const lsim_cli_opts *o, const lsim_run *run, const size_t *gpus,
                           size_t total, int csv, const lsim_memest_job *mem, lsim_err *err)
{
    int rc = 0;
    size_t n = run->n;
    char **txt = calloc(n ? n : 1, sizeof *txt);
    /* per GPU its summary words (window, breakdown, pipeline stage: the
     * table of a large job prints only some GPUs, lsim_report_pick, and the
     * stages' means, lsim_report_table_stages) */
    enum { SW = LSIM_REPORT_SUM_WORDS };
    uint64_t *words = malloc((SW * n + 1) * sizeof *words);
    lsim_world_parts parts;
    memset(&parts, 0, sizeof parts);
    if (!txt || !words) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
    for (size_t i = 0; !rc && i < n; i++) {
        txt[i] = csv       ? lsim_csv_item_text(&run->items[i], gpus[i])
                 : o->json ? lsim_report_json_item(&run->items[i], gpus[i])
                           : lsim_report_table_item(&run->items[i], gpus[i]);
        if (!txt[i]) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
        lsim_report_sum sm;
        lsim_report_sum_of(&run->items[i], &sm);
        memcpy(&words[SW * i], &sm, sizeof sm);
    }
    if ((rc = lsim_world_agree(m, rc, err))) goto cleanup;
    /* the job line: earliest starts, latest ends, any observed, latency */
    lsim_report_job_part p;
    lsim_report_job_part_of(run->items, n, &p);
    int64_t mn[2] = {p.as, p.ps}, mx[5] = {p.ae, p.pe, p.any_obs, n && run->items[0].g->latency == LSIM_LAT_OBSERVED,
                                               p.unmeasured};
    lsim_world_reduce(m, mn, 2, LSIM_W_I64, LSIM_W_MIN);
    lsim_world_reduce(m, mx, 5, LSIM_W_I64, LSIM_W_MAX);
    if ((rc = lsim_world_gather_parts(m, txt, gpus, words, SW, n, total, &parts, err)) || m->rank != 0) goto cleanup;
    /* rank 0: each GPU's text, in GPU order */
    lsim_ns *win = calloc(total ? total : 1, sizeof *win);
    uint8_t *show = malloc(total ? total : 1);
    lsim_report_sum *sums = calloc(total ? total : 1, sizeof *sums);
    if (!win || !show || !sums) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
    for (size_t g = 0; g < total && !rc; g++) {
        memcpy(&sums[g], &parts.words[SW * g], sizeof sums[g]);
        win[g] = sums[g].window[1];
    }
    char *const *objs = (char *const *)parts.text;
    lsim_report_job_part jp = {mn[0], mx[0], mn[1], mx[1], (int)mx[2], total, mem, (int)mx[4],
                               run->shared ? &run->share_st : NULL, NULL, NULL};
    csv_parts cp = {objs, total};
    if (!rc && csv) rc = lsim_cli_write_output(o->csv_out, write_csv_parts, &cp, err);
    else if (!rc && o->json) rc = lsim_report_json_assemble(stdout, (int)mx[3], objs, total, &jp, err);
    else if (!rc) {
        lsim_report_table_head(stdout, (int)mx[3], jp.any_obs || jp.unmeasured);
        lsim_report_pick(win, total, o->per_rank, show);
        for (size_t g = 0; g < total; g++)
            if (show[g]) fputs(objs[g], stdout);
        if (!o->per_rank) {
            lsim_report_table_omitted(stdout, win, show, total);
            lsim_report_table_stages(stdout, sums, show, total);
        }
        lsim_report_table_tail(stdout, &jp);
    }
    if (!rc && !csv && fflush(stdout) != 0)
        rc = lsim_err_set(err, LSIM_EIO, "cannot write the report to standard output: %s", strerror(errno));
    free(win);
    free(show);
    free(sums);
cleanup:
    for (size_t i = 0; txt && i < n; i++) free(txt[i]);
    free(txt);
    free(words);
    lsim_world_parts_free(&parts);
    return rc;
}

int lsim_cli_items_of_run(const lsim_store_run *r, const char *path, lsim_replay_item **out, lsim_err *err)
{
    if (!r->graphs && r->detail == LSIM_STORE_DETAIL_SUMMARY)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: run %s was written with --detail summary: it holds no graphs or "
                            "per-node times to report on (rerun lumosim sim with --detail ops)", path, r->name);
    if (!r->graphs) return lsim_err_set(err, LSIM_EFORMAT, "%s: run %s holds no graphs to report on", path, r->name);
    lsim_replay_item *it = calloc(r->ngpus ? r->ngpus : 1, sizeof *it);
    if (!it) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->ngpus; i++) {
        const lsim_store_gpu_result *gr = &r->gpus[i];
        it[i] = (lsim_replay_item){r->graphs[i], &gr->report, gr->start, gr->end, gr->bind_start, gr->bind_end,
                                   gr->has_cp ? &gr->cp : NULL, gr->coupled, gr->clock_offset, 0, NULL};
    }
    *out = it;
    return 0;
}

/* --stats under mpirun: the parallel engine's counters, and the time each
 * rank spent in the round-end exchanges (waiting for the slowest
 * included): with balanced work, what K = 2 loses. Printed by rank 0.
 * Collective over the world (world.h). */
/* --stats with --link-sharing: what the last sweep did (netshare.h). The
 * flow updates per simulated second are over the span of the flows. */
static void print_share_stats(const lsim_netshare_stats *st)
{
    double span = st->span_ns > 0 ? (double)st->span_ns * 1e-9 : 0;
    fprintf(stderr,
            "lumosim: stats: link sharing: %d passes (%s), %llu flows, %llu slowed (at most x%.3f), alone %.3f ms, shared %.3f ms "
            "in all; %llu events, %llu flow updates (%.3g per simulated second); NIC busy %.3f ms, leaf "
            "uplinks busy %.3f ms (link-time at full load)\n",
            st->passes, st->converged ? "a fixed point" : "not converged", (unsigned long long)st->flows,
            (unsigned long long)st->slowed, st->max_slowdown > 1 ? st->max_slowdown : 1.0,
            st->alone_ns * 1e-6, st->shared_ns * 1e-6, (unsigned long long)st->events,
            (unsigned long long)st->updates, span > 0 ? (double)st->updates / span : 0.0, st->nic_busy_ns * 1e-6,
            st->uplink_busy_ns * 1e-6);
    for (int i = 0; i < st->nhot; i++) {
        char name[64];
        lsim_netshare_link_name(st->hot_link[i], (size_t)st->ngpus, st->paths, name, sizeof name);
        fprintf(stderr, "%s%s %.3f ms%s", i ? ", " : "lumosim: stats: link sharing: hottest links: ", name,
                st->hot_busy_ns[i] * 1e-6, i + 1 == st->nhot ? "\n" : "");
    }
}

static void print_pdes_stats(const lsim_world *w, const lsim_pdes_stats *st)
{
    double *sy = NULL;
    lsim_err err = {0};
    if (lsim_world_gather_f64(w, st->sync_s, &sy, &err)) return; /* out of memory: the stats line left out */
    if (w->rank == 0) {
        fprintf(stderr,
                "lumosim: stats: parallel engine on %d ranks: lookahead %lld ns, %llu windows, %llu arrival "
                "messages, %llu allreduces, %llu allgathers; seconds in round-end exchanges per rank:",
                w->size, (long long)st->lookahead, (unsigned long long)st->windows, (unsigned long long)st->messages,
                (unsigned long long)st->allreduces, (unsigned long long)st->allgathers);
        for (int r = 0; sy && r < w->size; r++) fprintf(stderr, " %.3f", sy[r]);
        fputc('\n', stderr);
    }
    free(sy);
}


/* An existing result file that already holds the run, or is no result
 * file, is refused before the store is read: the write would refuse it only
 * after the whole simulation (a minute at 4,096 GPUs). Local; every rank
 * reads the same file and reaches the same answer. */
static int check_run_free(const char *out, const char *run_name, lsim_err *err)
{
    struct stat st;
    if (stat(out, &st) != 0) return 0;
    char **names = NULL;
    size_t n = 0;
    int rc = lsim_store_list_runs(out, &names, &n, err);
    if (rc) {
        char why[LSIM_ERR_LEN];
        snprintf(why, sizeof why, "%s", err->msg);
        return lsim_err_set(err, rc, "%s (not overwritten: remove it or choose another -o)", why);
    }
    for (size_t i = 0; i < n; i++) {
        if (!rc && !strcmp(names[i], run_name))
            rc = lsim_err_set(err, LSIM_EARG, "%s: already holds a run named '%s' (choose another name with --run, "
                              "or --replace it)", out, run_name);
        free(names[i]);
    }
    free(names);
    return rc;
}

/* The state of one sim command, shared by its phases below. */
typedef struct sim_state {
    const lsim_cli_sim_args *sa;
    lsim_cli_opts o;
    lsim_world m;
    const char *cmd;
    size_t *gpus, nlocal, gtotal;   /* under mpirun: this rank's GPUs of gtotal */
    char mapping_used[64 + 4096];   /* provenance: the mapping as applied */
    lsim_run run;
    int shared;                     /* --link-sharing ran: share_st is its last sweep (kept past run) */
    lsim_netshare_stats share_st;
    lsim_out *held;                 /* rank 0, with --trace-out: the archive written, not yet committed */
    double t0, tl, t1, t2;          /* started, loaded, simulated, written */
    double run_s[4];                /* this rank's match, setup, simulate, metrics */
    uint64_t local_nodes;
    lsim_memest_job mem;            /* the store's memory estimate ("memory" attribute); nstages 0: none */
    char *mem_text;                 /* its JSON, kept in the result archive's run; NULL: none */
    char trace_oom[256];            /* a what-if's carried traced figures past their GPU's memory, "" none */
} sim_state;

/* The store's memory estimate (synthesized jobs record one; docs/memory.md)
 * into s->mem. None: nothing said. One that cannot be read: a warning, and
 * nothing said about memory -- the simulation does not depend on it. Local;
 * every rank reads the same attribute. */
static void sim_read_memory(sim_state *s)
{
    char *text = NULL;
    lsim_err aerr = {0};
    if (lsim_store_read_attr(s->sa->job, "memory", &text, &aerr)) return; /* no estimate (a trace's store) */
    if (lsim_memest_job_parse(text, &s->mem, &aerr)) {
        if (s->m.rank == 0)
            fprintf(stderr,
                    "lumosim: warning: %s: the memory estimate is unreadable (%s); nothing is said about memory\n",
                    s->sa->job, aerr.msg);
        free(text);
        return;
    }
    s->mem_text = text; /* the result archive keeps it with the run */
}

/* A what-if of a trace carries each source GPU's traced memory figures
 * (whatif_plan.h); its record (root attribute "whatif", member "memory")
 * names the most loaded GPU and how many exceed their GPU's memory. Read
 * from the record rather than from the graphs so that every rank, each
 * holding only its GPUs, says the same. Nothing when absent or unreadable
 * (the per-GPU lines still show each GPU's figure). Local. */
static void sim_read_trace_oom(sim_state *s)
{
    char *text = NULL;
    lsim_err aerr = {0};
    s->trace_oom[0] = 0;
    if (lsim_store_read_attr(s->sa->job, "whatif", &text, &aerr) || !text) return;
    cJSON *r = cJSON_Parse(text);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "memory");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(m, "worst");
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(w, "peak_bytes"), *cp = cJSON_GetObjectItemCaseSensitive(w, "capacity_bytes");
    const cJSON *gp = cJSON_GetObjectItemCaseSensitive(w, "gpu"), *n = cJSON_GetObjectItemCaseSensitive(m, "oom_gpus");
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(m, "gpus_with_figures");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "oom")) && cJSON_IsNumber(pk) && cJSON_IsNumber(cp) &&
        cJSON_IsNumber(gp) && cJSON_IsNumber(n) && cJSON_IsNumber(all))
        snprintf(s->trace_oom, sizeof s->trace_oom,
                 "OOM: GPU %d's peak from its source GPU's trace (whatif), %s%.1f GB, exceeds its "
                 "GPU's %.1f GB (%d of %d GPUs with figures do not fit)",
                 gp->valueint, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "lower_bound")) ? "at least " : "",
                 pk->valuedouble / 1e9, cp->valuedouble / 1e9, n->valueint, all->valueint);
    cJSON_Delete(r);
    free(text);
}

/* The job must be a graph store, and the result archive must have room for
 * the run. Local; every rank reaches the same answer. */
static int sim_check_job(const sim_state *s, lsim_err *err)
{
    const char *job = s->sa->job;
    lsim_store_kind kind = lsim_store_probe(job);
    /* not a regular file (a FIFO, a directory): say what it is (input.h) */
    if (kind == LSIM_STORE_NOT_HDF5 && lsim_input_check(job, 0, NULL, err)) return err->code;
    if (kind != LSIM_STORE_GRAPHS && lsim_store_refuse_kind(job, kind, "a graph store", err)) return err->code;
    if (kind != LSIM_STORE_GRAPHS)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: %s", job,
                            kind == LSIM_STORE_OTHER ? "is an HDF5 file but not a lumosim graph store"
                                                     : "not a graph store (missing, truncated, corrupt, or another format)");
    if (s->m.on && !s->sa->out && !s->sa->samples)
        return lsim_err_set(err, LSIM_EARG, "under mpirun, sim needs -o RESULT.h5");
    if (s->sa->out && !s->sa->replace) return check_run_free(s->sa->out, s->sa->run_name, err);
    return 0;
}

/* The deciding edges are kept only for what shows them: the archive's
 * nodes/bind_* (--detail nodes, which --trace-out implies) and the
 * critical path. Decides both the engines (o.run.no_bind) and the memory
 * check before loading. */
static int sim_no_bind(const sim_state *s)
{
    return s->sa->detail != LSIM_STORE_DETAIL_NODES && !s->o.trace_out && !s->o.run.critical;
}

/* The run will simulate one GPU per class (run.h): the rule the store's
 * read follows (lsim_run_store_flags). */
static int sim_reduces(const sim_state *s)
{
    return (lsim_run_store_flags(&s->o.run, !s->m.on) & LSIM_STORE_READ_REDUCED) != 0;
}

/* The store read's progress as the run's events: a terminal line (issue
 * 39: 98,304 GPUs load in 18 s). */
typedef struct load_progress {
    const lsim_run_opts *ro;
    const char *path;
} load_progress;

static void load_step(void *ctx, const char *part, size_t done, size_t total)
{
    const load_progress *lp = ctx;
    lsim_run_event ev = {.kind = LSIM_RUN_PROGRESS, .path = lp->path, .what = part, .count = done, .events = total};
    lp->ro->on_event(lp->ro->ctx, &ev);
}

/* The store's graphs into s->run: all of them, or under mpirun this rank's
 * GPUs by the --mapping (run.h). Collective under mpirun; agreed. */
static int sim_load(sim_state *s, lsim_err *err)
{
    const char *job = s->sa->job, *mapping = s->sa->mapping;
    lsim_graph **gs = NULL;
    size_t ng = 0;
    int rc = 0;
    /* the memory check counts the engines' deciding edges only when
     * sim_simulate will keep them, and the archive's write only when there
     * is one; one process: one GPU simulated per class (run.h, the rule
     * replay and report read a store by too) */
    s->o.run.no_bind = sim_no_bind(s);
    int flags = lsim_run_store_flags(&s->o.run, !s->m.on);
    if (s->sa->out) flags |= LSIM_STORE_READ_ARCHIVE;
    if (flags & LSIM_STORE_READ_REDUCED) s->run.sized_reduced = LSIM_RUN_SIZED_REDUCED;
    if (s->m.on) {
        lsim_map_layout l = {0, 1, 1};
        const char *how = mapping;
        rc = lsim_store_count_gpus(job, &l.ngpus, err);
        rc = lsim_world_agree(&s->m, rc, err);
        if (!rc && (!strcmp(mapping, "groups") || !strcmp(mapping, "stages"))) rc = job_layout(&s->m, job, &l, err);
        if (!rc) rc = lsim_map_local(mapping, &l, s->m.size, s->m.rank, &s->gpus, &s->nlocal, &how, err);
        snprintf(s->mapping_used, sizeof s->mapping_used, "%s", how);
        s->gtotal = l.ngpus;
        rc = lsim_world_agree(&s->m, rc, err);
        if (!rc) rc = lsim_world_read_graph_list(&s->m, job, s->gpus, s->nlocal, flags, &gs, &ng, err);
    } else {
        lsim_cli_progress p;
        lsim_run_opts ro;
        lsim_cli_run_opts(&s->o, &p, &ro); /* after "sim: loading JOB" */
        load_progress lp = {&ro, job};
        rc = lsim_store_read_graphs_progress(job, 0, SIZE_MAX, flags, load_step, &lp, &gs, &ng, err);
    }
    if (rc) {
        lsim_store_free_graphs(gs, ng);
        return rc;
    }
    rc = lsim_run_add_graphs(&s->run, gs, ng, job, err);
    free(gs);
    return rc;
}

/* Simulate what was loaded (rc: the load's status): under mpirun the ranks
 * of one job, coupled through their collectives, on the parallel engine;
 * else serially. Collective under mpirun; agreed. */
static int sim_simulate(sim_state *s, int rc, lsim_err *err)
{
    s->o.run.no_bind = sim_no_bind(s);
    if (!rc) rc = lsim_run_check_ranks(&s->run, err); /* a store of another lumosim, or edited */
    rc = lsim_world_agree(&s->m, rc, err);
    int coupled = 0;
    if (!rc && s->m.on && !s->o.run.independent) {
        coupled = lsim_run_job_like(&s->run);
        lsim_world_reduce(&s->m, &coupled, 1, LSIM_W_INT, LSIM_W_MIN);
    }
    if (coupled) {
        lsim_cli_progress p;
        lsim_run_opts ro;
        lsim_pdes_opts popts = {s->sa->lookahead, (lsim_pdes_windows)s->sa->windows, s->sa->bound_skew};
        lsim_pdes_stats st;
        lsim_cli_run_opts(&s->o, &p, &ro);
        rc = lsim_world_run_job(&s->m, &ro, &s->run, s->gpus, s->gtotal, &popts, &st, err);
        if (!rc && s->o.stats) print_pdes_stats(&s->m, &st);
    } else if (!rc) {
        rc = lsim_cli_simulate(&s->o, &s->run, err);
    }
    if (!rc && s->o.stats && s->run.shared && s->m.rank == 0) print_share_stats(&s->run.share_st);
    if (!rc) lsim_cli_run_stats(&s->o, &s->run);
    return lsim_world_agree(&s->m, rc, err);
}

/* A step of the archive's write on the terminal line (rank 0 only: the
 * others' progress is off). */
static void write_progress(void *ctx, const char *part, int k, int n)
{
    lsim_cli_tty_progress(1, "sim: writing %s: %s (%d of %d)", (const char *)ctx, part, k, n);
}

/* The result archive (-o), with the wall time per phase as provenance
 * (under mpirun the slowest rank's, so every rank writes the same
 * attribute). Collective under mpirun. */
static int sim_write(sim_state *s, int rc, lsim_err *err)
{
    static const char *phases[] = {"load", "match", "setup", "simulate", "metrics"};
    const char *out = s->sa->out;
    double secs[] = {s->tl - s->t0, s->run_s[0], s->run_s[1], s->run_s[2], s->run_s[3]};
    lsim_world_reduce(&s->m, secs, 5, LSIM_W_F64, LSIM_W_MAX);
    if (rc || !out) return rc;
    /* The graphs to embed are the store's own when nothing changed them
     * after loading (no --drop-edges, no clock shift: synthesized jobs,
     * and traced ones whose clocks already agree): then the result file
     * copies the store's tables rather than encoding them again. */
    int same = !s->o.run.drop_mask && !s->o.run.zero_launch_latency;
    for (size_t i = 0; same && s->run.job && i < s->run.job->ngpus; i++)
        if (s->run.job->clock_offset[i]) same = 0;
    lsim_world_reduce(&s->m, &same, 1, LSIM_W_INT, LSIM_W_MIN);
    /* with --trace-out the archive is committed last, once the trace
     * is written: a failed trace-out then leaves the archive as it was,
     * and the same command can simply be run again */
    /* sim --link-sharing's figures go with the run (every rank swept the
     * same flows: the same text on each) */
    char *net = s->run.shared ? lsim_report_network_text(&s->run.share_st) : NULL;
    if (s->run.shared && !net) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if ((rc = lsim_world_agree(&s->m, rc, err))) return rc;
    lsim_store_run_info info = {s->cmd, s->t1 - s->t0, phases, secs, 5, s->m.size, s->mapping_used, NULL, NULL,
                                1, s->sa->replace, 0, same ? s->sa->job : NULL, s->o.trace_out ? &s->held : NULL,
                                s->mem_text, s->sa->detail, write_progress, (void *)out, net,
                                s->run.shared ? &s->run.share_det : NULL};
    rc = s->m.on ? lsim_world_write_results(&s->m, out, s->sa->run_name, s->run.items, s->gpus, s->run.n, &info, err)
                 : lsim_store_write_results_ex(out, s->sa->run_name, s->run.items, s->run.n, &info, err);
    free(net);
    return rc;
}

/* Under mpirun with --trace-out, on rank 0: the report and the predicted
 * trace of every GPU from the archive just written (then committed). */
static int report_from_archive(sim_state *s, lsim_err *err)
{
    lsim_store_run *stored = NULL;
    lsim_replay_item *items = NULL;
    /* the report needs no per-node times; the predicted trace does */
    const char *written = s->held ? lsim_out_file(s->held) : s->sa->out;
    int rc = lsim_store_read_results_ex(written, s->sa->run_name, s->o.trace_out ? LSIM_STORE_READ_RUN_CPU_OPS : LSIM_STORE_READ_NO_TIMES,
                                        &stored, err);
    if (!rc) rc = lsim_cli_items_of_run(stored, s->sa->out, &items, err);
    /* the job's critical path, as the serial run draws it: walked over the
     * archive's times (no rank held every engine) */
    lsim_job_path jp = {0};
    if (!rc && s->o.trace_out) rc = lsim_run_job_path_stored(stored, &jp, err);
    if (!rc && s->o.trace_out) rc = lsim_chrome_write(s->o.trace_out, items, stored->ngpus, jp.n ? &jp : NULL, err);
    lsim_job_path_clear(&jp);
    if (!rc) rc = lsim_cli_write_csv(&s->o, items, stored->ngpus, err);
    if (!rc && s->held) {
        rc = lsim_out_commit(s->held, err);
        s->held = NULL;
    }
    if (!rc)
        rc = print_report(&s->o, items, stored->ngpus, s->mem.nstages ? &s->mem : NULL, s->shared ? &s->share_st : NULL,
                          err);
    free(items);
    lsim_store_run_free(stored);
    return rc;
}

static int report_from_archive_cb(void *s, lsim_err *err) { return report_from_archive(s, err); }

/* The report (and --trace-out) once the archive is written. Collective
 * under mpirun. */
static int sim_output(sim_state *s, int rc, lsim_err *err)
{
    int reported = 0;
    s->shared = s->run.shared;
    s->share_st = s->run.share_st;
    if (s->m.on && !rc && !s->o.trace_out) {
        /* the CSV first (rank 0's outcome agreed: the report below is
         * collective too), then the report unless the CSV took its place */
        if (s->o.csv_out) rc = lsim_world_agree(&s->m, report_parallel(&s->m, &s->o, &s->run, s->gpus, s->gtotal, 1, NULL, err), err);
        if (!rc && !lsim_cli_csv_is_stdout(s->o.csv_out)) rc = report_parallel(&s->m, &s->o, &s->run, s->gpus, s->gtotal, 0,
                                  s->mem.nstages ? &s->mem : NULL, err);
        reported = 1;
    }
    if (s->m.on) {
        /* With --trace-out rank 0 reads every GPU's results and graphs back
         * from the archive: drop this rank's copy first, so that its peak
         * is the larger of the two, not their sum (4,096-GPU GPT-3 job at
         * K = 2: 7.0 GB held per rank, 9.7 GB read back). */
        free(s->gpus);
        s->gpus = NULL;
        lsim_run_free(&s->run);
    }
    if (!rc && s->m.on && !reported) {
        /* the other ranks hold the names of the files rank 0 writes alone,
         * so that its SIGKILL leaves none of them (issue 40) */
        rc = lsim_world_rank0_writes(&s->m, s->held, report_from_archive_cb, s, err);
    } else if (!rc && !reported) {
        rc = lsim_cli_write_trace(&s->o, &s->run, err);
        if (!rc) rc = lsim_cli_write_csv(&s->o, s->run.items, s->run.n, err);
        if (!rc && s->held) {
            rc = lsim_out_commit(s->held, err);
            s->held = NULL;
        }
        if (!rc)
            rc = print_report(&s->o, s->run.items, s->run.n, s->mem.nstages ? &s->mem : NULL,
                              s->run.shared ? &s->run.share_st : NULL, err);
    }
    lsim_out_abort(s->held); /* an output above failed: the archive stays as it was */
    s->held = NULL;
    return rc;
}

/* --stats: one line per MPI rank, this rank's own phase times
 * (bench/gpt3_scaling.sh). */
static void print_sim_stats(const sim_state *s)
{
    double t3 = lsim_now_s();
    struct rusage ru;
    long rss = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
    fprintf(stderr,
            "lumosim: stats: rank %d of %d: %llu nodes; load %.3f s, match %.3f s, setup %.3f s, simulate %.3f "
            "s, metrics %.3f s, write %.3f s, report %.3f s, total %.3f s; peak RSS %.1f MiB\n",
            s->m.rank, s->m.size, (unsigned long long)s->local_nodes, s->tl - s->t0, s->run_s[0], s->run_s[1],
            s->run_s[2], s->run_s[3], s->t2 - s->t1, t3 - s->t2, t3 - s->t0, (double)rss / 1024.0);
}

/* --samples N runs N simulations of every node of the store: N x its
 * nodes (from the /gpus table, before any graph is read) against the work
 * cap (cli.h), summed over ranks as the samples are spread over them. */
static int samples_cap(const lsim_cli_sim_args *sa, lsim_err *err)
{
    lsim_store_gpu_info *t = NULL;
    size_t n = 0;
    int rc = lsim_store_gpu_table(sa->job, &t, &n, err);
    if (rc) return rc;
    double nodes = 0;
    for (size_t i = 0; i < n; i++) nodes += (double)t[i].nodes;
    lsim_store_gpu_table_free(t, n);
    char how[160];
    snprintf(how, sizeof how, "--samples %lld x %.0f nodes", (long long)sa->samples, nodes);
    return lsim_cli_work_cap(sa->job, (double)sa->samples * nodes, how, "use fewer --samples", err);
}

/* Plain sim: what no symmetry reduction removes, every GPU's own share of
 * reading, matching, its report and its archive rows (LSIM_CLI_SIM_GPU_WORK
 * a GPU, LSIM_CLI_SIM_COLL_WORK a collective record, cli.h), and with the
 * reduction off (or under mpirun, which does not reduce) every node
 * simulated once; from the /gpus table, before any graph is read, against
 * the work cap (cli.h). A reduced run's classes' own nodes are left out:
 * they are not known before the graphs are, and they are few. */
static int sim_cap(const sim_state *s, lsim_err *err)
{
    lsim_store_gpu_info *t = NULL;
    size_t n = 0;
    int rc = lsim_store_gpu_table(s->sa->job, &t, &n, err);
    if (rc) return rc;
    double nodes = 0, colls = 0;
    for (size_t i = 0; i < n; i++) nodes += (double)t[i].nodes, colls += (double)t[i].colls;
    lsim_store_gpu_table_free(t, n);
    int reduced = sim_reduces(s);
    double work = (double)n * LSIM_CLI_SIM_GPU_WORK + colls * LSIM_CLI_SIM_COLL_WORK + (reduced ? 0 : nodes);
    char how[200], all[64] = "";
    if (!reduced) snprintf(all, sizeof all, " + %.0f nodes", nodes);
    snprintf(how, sizeof how, "%zu GPUs x %d + %.0f collective records x %g%s", n, LSIM_CLI_SIM_GPU_WORK, colls,
             LSIM_CLI_SIM_COLL_WORK, all);
    return lsim_cli_work_cap(s->sa->job, work, how, "simulate a smaller job", err);
}

/* sim --samples: every rank reads the whole job and simulates the samples
 * k = rank (mod ranks); the per-sample results are summed over ranks (each
 * entry is written by one rank, zero elsewhere, so the sum is exact) and
 * rank 0 prints the intervals. The plain, undrawn simulation gives the
 * point prediction and the measured windows. Collective under mpirun;
 * every failure agreed. */
static int sim_samples(sim_state *s, lsim_err *err)
{
    const lsim_cli_sim_args *sa = s->sa;
    lsim_graph **gs = NULL;
    size_t ng = 0;
    lsim_pools *pools = NULL;
    lsim_sample *smp = NULL;
    int64_t *flat = NULL;
    lsim_ns *actual = NULL, *win = NULL, *aiter = NULL;
    const char **label = NULL;
    lsim_run point;
    memset(&point, 0, sizeof point);
    uint64_t N = (uint64_t)sa->samples;
    int rc = sim_check_job(s, err);
    if (!rc) rc = samples_cap(sa, err);
    if (!rc) rc = lsim_store_read_graphs(sa->job, 0, SIZE_MAX, &gs, &ng, err);
    if (!rc && !ng) rc = lsim_err_set(err, LSIM_EFORMAT, "%s: the store holds no GPU", sa->job);
    if (!rc) rc = lsim_pools_new(gs, ng, sa->draw_others ? LSIM_POOL_OTHERS : LSIM_POOL_JOB, &pools, err);
    size_t nit = 0;
    for (size_t i = 0; i < ng; i++)
        if (gs[i]->niters > nit) nit = gs[i]->niters;
    size_t rec = 5 + ng + ng * nit; /* job, 4 components, windows, iterations */
    if (!rc && (!(smp = calloc(N, sizeof *smp)) || !(flat = calloc(N * rec, sizeof *flat)) ||
                !(win = calloc(N * (ng + ng * nit), sizeof *win)) || !(actual = malloc(ng * sizeof *actual)) ||
                !(aiter = malloc((ng * nit > 0 ? ng * nit : 1) * sizeof *aiter)) ||
                !(label = calloc(ng, sizeof *label))))
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    lsim_cli_progress prog;
    lsim_run_opts ro;
    lsim_cli_run_opts(&s->o, &prog, &ro);
    ro.on_event = NULL; /* N runs: no per-run progress lines */
    for (uint64_t k = 0; !rc && k < N; k++) {
        smp[k].window = win + k * (ng + ng * nit);
        smp[k].iter = smp[k].window + ng;
        if ((int)(k % (uint64_t)s->m.size) != s->m.rank) continue;
        rc = lsim_samples_run(&ro, gs, ng, nit, pools, (uint64_t)sa->seed, k, 1, &smp[k], err);
        if (rc) break;
        int64_t *x = flat + k * rec;
        x[0] = smp[k].job;
        for (int c = 0; c < 4; c++) x[1 + c] = smp[k].bd[c];
        for (size_t i = 0; i < ng + ng * nit; i++) x[5 + i] = smp[k].window[i];
    }
    rc = lsim_world_agree(&s->m, rc, err);
    if (!rc) lsim_world_reduce(&s->m, flat, N * rec, LSIM_W_I64, LSIM_W_SUM);
    for (uint64_t k = 0; !rc && k < N; k++) {
        const int64_t *x = flat + k * rec;
        smp[k].job = x[0];
        for (int c = 0; c < 4; c++) smp[k].bd[c] = x[1 + c];
        for (size_t i = 0; i < ng + ng * nit; i++) smp[k].window[i] = x[5 + i];
    }
    /* the point prediction and what was measured (rank 0 reports) */
    if (!rc && s->m.rank == 0) {
        for (size_t i = 0; i < ng && !rc; i++) {
            lsim_graph *c = NULL;
            rc = lsim_graph_clone(gs[i], &c, err);
            if (!rc) rc = lsim_run_push_graph(&point, c, gs[i]->source ? gs[i]->source : sa->job, err);
        }
        if (!rc) rc = lsim_run_simulate(&ro, &point, err);
    }
    if (!rc && s->m.rank == 0) {
        lsim_report_job_part jp;
        lsim_report_job_part_of(point.items, point.n, &jp);
        lsim_ns ja, jpred;
        lsim_report_job_span(point.items, point.n, &ja, &jpred);
        for (size_t i = 0; i < ng; i++) {
            actual[i] = jp.any_obs ? point.reps[i].window_actual : -1;
            label[i] = point.paths[i];
            for (size_t j = 0; j < nit; j++)
                aiter[i * nit + j] = jp.any_obs && j < point.reps[i].niters ? point.reps[i].iters[j].actual : -1;
        }
        lsim_pools_info info;
        lsim_pools_get_info(pools, &info);
        lsim_samples_report R = {N,    (uint64_t)sa->seed, sa->draw_others ? LSIM_POOL_OTHERS : LSIM_POOL_JOB,
                                 info, ng,                 smp,
                                 actual, nit,               aiter,
                                 jp.any_obs ? ja : -1, jpred, label};
        rc = lsim_samples_write(stdout, &R, s->o.json, err);
        if (!rc && fflush(stdout)) rc = lsim_err_set(err, LSIM_EIO, "cannot write the report to standard output: %s", strerror(errno));
    }
    rc = lsim_world_agree(&s->m, rc, err);
    lsim_run_free(&point);
    lsim_store_free_graphs(gs, ng);
    lsim_pools_free(pools);
    free(smp);
    free(flat);
    free(win);
    free(actual);
    free(aiter);
    free(label);
    return rc;
}

/* --link-sharing TOPOLOGY.json: the topology the flows are swept on. A fat
 * tree whose collectives' own times already carry the spine's
 * oversubscription (no "link_sharing": true) would count it twice. */
static int sim_share_topology(const lsim_cli_sim_args *sa, lsim_topology *t, lsim_run_opts *ro, lsim_err *err)
{
    int rc = lsim_topology_load(sa->share_topo, t, err);
    if (rc) return rc;
    if (t->nodes_per_leaf > 0 && t->oversubscription > 1 && !t->link_sharing)
        return lsim_err_set(err, LSIM_EARG,
                            "%s: --link-sharing on an oversubscribed fat tree needs \"link_sharing\": true in the "
                            "topology (synthesize the job with it too: its collectives' own times must leave the "
                            "oversubscription to the uplinks' sharing)",
                            sa->share_topo);
    ro->share = t;
    ro->share_passes = sa->share_passes;
    return 0;
}

int lsim_cli_sim(int argc, char **argv)
{
    lsim_cli_sim_args sa;
    int p = lsim_cli_parse_sim(argc, argv, &sa);
    if (p <= 0) return p < 0 ? 2 : 0;
    lsim_err err = {0};
    sim_state s;
    memset(&s, 0, sizeof s);
    s.sa = &sa;
    s.o = sa.o;
    s.m = (lsim_world){0, 0, 1};
    snprintf(s.mapping_used, sizeof s.mapping_used, "serial");
    char *cmd = join_argv("sim", argc, argv);
    if (!cmd) {
        lsim_cli_error("out of memory");
        return 1;
    }
    s.cmd = cmd;
    /* a result archive is about 1.6 x its graph store (memlimit.h) */
    struct stat jst;
    uint64_t need = sa.out && stat(sa.job, &jst) == 0 ? (uint64_t)jst.st_size * 2 : 0;
    char *sins[2] = {(char *)sa.job, !strncmp(sa.mapping, "file:", 5) ? (char *)sa.mapping + 5 : NULL};
    lsim_io_file souts[3] = {{sa.out, "-o", 1, LSIM_OUT_RESULTS},
                             {s.o.trace_out, "--trace-out", 1, LSIM_OUT_TRACE},
                             {lsim_cli_csv_checked(&s.o), "--csv", 1, LSIM_OUT_TEXT}};
    if (lsim_cli_check_io(sins, 2, souts, 3, &err) || lsim_disk_check(sa.out, need, &err)) {
        lsim_cli_error("%s", err.msg);
        free(cmd);
        return 1;
    }
    if (lsim_world_begin(&s.m)) {
        lsim_cli_error("MPI_Init failed");
        free(cmd);
        return 1;
    }
    s.t0 = lsim_now_s();
    if (sa.samples) {
        int rc = sim_samples(&s, &err);
        if (rc && s.m.rank == 0) lsim_cli_error("%s", err.msg[0] ? err.msg : "failed");
        lsim_cli_outcome_known();
        lsim_world_end(&s.m);
        free(cmd);
        return rc ? 1 : 0;
    }
    if (s.m.rank != 0 || s.o.stats) lsim_cli_tty_progress_off();
    lsim_topology share_topo;
    int rc = sim_check_job(&s, &err);
    if (!rc) rc = sim_cap(&s, &err);
    if (!rc && sa.share_topo) rc = sim_share_topology(&sa, &share_topo, &s.o.run, &err);
    if (!rc) sim_read_memory(&s);
    if (!rc) sim_read_trace_oom(&s);
    lsim_cli_tty_progress(1, "sim: loading %s", sa.job);
    if (!rc) rc = sim_load(&s, &err);
    s.tl = lsim_now_s();
    lsim_cli_tty_progress(1, "sim: matching collectives and simulating (loaded in %.1f s)", s.tl - s.t0);
    rc = sim_simulate(&s, rc, &err);
    s.t1 = lsim_now_s();
    if (sa.out) lsim_cli_tty_progress(1, "sim: writing %s (simulated in %.1f s)", sa.out, s.t1 - s.tl);
    double run_s[4] = {s.run.match_s, s.run.setup_s, s.run.simulate_s, s.run.metrics_s};
    memcpy(s.run_s, run_s, sizeof run_s);
    for (size_t i = 0; i < s.run.n; i++) s.local_nodes += s.run.graphs[i]->n;
    rc = sim_write(&s, rc, &err);
    s.t2 = lsim_now_s();
    lsim_cli_tty_progress_done();
    rc = sim_output(&s, rc, &err);
    int status = 0;
    if (rc) {
        if (s.m.rank == 0) lsim_cli_error("%s", err.msg[0] ? err.msg : "failed");
        status = 1;
    }
    if (!rc && s.m.rank == 0 && s.mem.oom) {
        /* loudly, and after the report, so that it is the last word */
        char line[256];
        lsim_memest_oom_line(&s.mem, line, sizeof line);
        fprintf(stderr, "lumosim: warning: %s\n", line);
    } else if (!rc && s.m.rank == 0 && s.trace_oom[0]) {
        fprintf(stderr, "lumosim: warning: %s\n", s.trace_oom);
    }
    if (!rc && s.o.stats) print_sim_stats(&s);
    lsim_memest_job_free(&s.mem);
    free(s.mem_text);
    lsim_cli_outcome_known();
    free(s.gpus);
    lsim_run_free(&s.run);
    lsim_world_end(&s.m);
    free(cmd);
    return status;
}

const char *const LSIM_USAGE_INFO =
    "usage: lumosim info FILE.h5...\n\nPrints what a graph store or result archive holds, once it has checked\n"
    "the file as the other commands read it: every graph of a store (about as\n"
    "long as sim takes to read it), each run's per-GPU table of an archive.\n";

int lsim_cli_info(int argc, char **argv)
{
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    if (!args) {
        lsim_cli_error("out of memory");
        return 1;
    }
    int n = lsim_cli_parse_info(argc, argv, LSIM_USAGE_INFO, args), status = n < 0 ? 2 : 0;
    for (int i = 0; i < n && !status; i++) {
        /* held until the file has been read whole: a file refused half
         * way prints its one error line and nothing else */
        lsim_err err = {0};
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        int rc = m ? lsim_store_info(args[i], m, &err) : lsim_err_set(&err, LSIM_ENOMEM, "%s: out of memory", args[i]);
        if (m && fclose(m) && !rc) rc = lsim_err_set(&err, LSIM_ENOMEM, "%s: out of memory", args[i]);
        if (rc) {
            lsim_cli_error("%s", err.msg);
            status = 1;
        } else {
            fwrite(buf, 1, len, stdout);
        }
        free(buf);
    }
    free(args);
    return status;
}

int lsim_cli_refuse_mpi(const char *command)
{
    /* The launcher's environment does not say how many ranks there are in
     * every MPI; MPI does. One rank is a serial run like any other. */
    lsim_world m;
    if (lsim_world_begin(&m)) {
        lsim_cli_error("MPI_Init failed");
        return 1;
    }
    if (!m.on) return 0;
    /* Refused rather than run on rank 0 alone: these commands have no
     * parallel engine, so every rank would redo (and print) the whole
     * replay; the parallel path is a graph store simulated by sim. */
    if (m.rank == 0) {
        if (!strcmp(command, "report"))
            lsim_cli_error("report does not run under mpirun (it would run once per rank): run it "
                            "without mpirun, or for a parallel run use lumosim build, then mpirun lumosim sim -o "
                           "RESULT.h5 and lumosim report RESULT.h5");
        else
            lsim_cli_error("%s does not run under mpirun (it would run once per rank): run it "
                           "without mpirun, or for a parallel run use lumosim build, then mpirun lumosim sim",
                           command);
        fflush(stderr);
    }
    /* every rank here before any exits: the launcher then ends nothing
     * half-way, and the line above is the only one */
    lsim_world_barrier(&m);
    lsim_cli_outcome_known();
    lsim_world_end(&m);
    return 1;
}

