/* The options shared by the simulating commands, and the CLI's side of the
 * run layer (include/lumosim/run.h): its progress lines and statistics,
 * printed from the run's events (see cli.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "lumosim/csv.h"
#include "lumosim/memest.h"
#include "lumosim/output.h"
#include "lumosim/synth.h"
#include "lumosim/whatif_plan.h"

void lsim_cli_opts_default(lsim_cli_opts *o)
{
    memset(o, 0, sizeof *o);
    lsim_run_opts_default(&o->run); /* each trace freed right after its build */
}

/* --drop-edges takes these edge classes by their names
 * (lsim_edge_class_name), in the order the usage error lists them... */
static const lsim_edge_class DROPPABLE[] = {LSIM_E_EVENT, LSIM_E_INFERRED, LSIM_E_SYNC, LSIM_E_CPU_XTHREAD};
#define NDROPPABLE (sizeof DROPPABLE / sizeof *DROPPABLE)

/* ... and these other names (listed after them, but for a mere alias). */
static const struct {
    const char *name;
    unsigned mask;
    int zero_launch;
    int listed;
} DROP_ALIASES[] = {
    {"xthread", 1u << LSIM_E_CPU_XTHREAD, 0, 0},
    {"launch_latency", 0, 1, 1},
    /* dPRO-like baseline: each thread in order, launches, each stream in
     * order; no cross-stream, sync or cross-thread dependencies */
    {"dpro", (1u << LSIM_E_EVENT) | (1u << LSIM_E_INFERRED) | (1u << LSIM_E_SYNC) | (1u << LSIM_E_CPU_XTHREAD), 0, 1},
};
#define NDROP_ALIASES (sizeof DROP_ALIASES / sizeof *DROP_ALIASES)

/* The mask of the droppable class named tok, or 0. */
static unsigned droppable_mask(const char *tok)
{
    lsim_edge_class c;
    if (lsim_edge_class_parse(tok, &c, NULL)) return 0;
    for (size_t k = 0; k < NDROPPABLE; k++)
        if (DROPPABLE[k] == c) return 1u << c;
    return 0;
}

/* The usage error of an unknown token: "(event, hidden, sync,
 * cpu_cross_thread, launch_latency, dpro)". */
static void drop_usage_error(const char *tok)
{
    char list[256];
    size_t len = 0;
    list[0] = '\0';
    for (size_t k = 0; k < NDROPPABLE + NDROP_ALIASES; k++) {
        int alias = k >= NDROPPABLE;
        if (alias && !DROP_ALIASES[k - NDROPPABLE].listed) continue;
        const char *nm = alias ? DROP_ALIASES[k - NDROPPABLE].name : lsim_edge_class_name(DROPPABLE[k]);
        int w = snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", nm);
        if (w < 0 || (size_t)w >= sizeof list - len) break;
        len += (size_t)w;
    }
    lsim_cli_usage_error("--drop-edges: unknown class '%s' (%s)", tok, list);
}

static int parse_drop(lsim_cli_opts *o, const char *list)
{
    char buf[256];
    if (strlen(list) >= sizeof buf) {
        lsim_cli_usage_error("--drop-edges: the list is too long");
        return -1;
    }
    strcpy(buf, list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned mask = droppable_mask(tok);
        if (mask) {
            o->run.drop_mask |= mask;
            continue;
        }
        size_t k = 0;
        while (k < NDROP_ALIASES && strcmp(DROP_ALIASES[k].name, tok)) k++;
        if (k == NDROP_ALIASES) {
            drop_usage_error(tok);
            return -1;
        }
        o->run.drop_mask |= DROP_ALIASES[k].mask;
        o->run.zero_launch_latency |= DROP_ALIASES[k].zero_launch;
    }
    return 0;
}

/* The options the simulating commands share, in the order of the
 * LSIM_OPT_* codes (cli.h): each command's table (args.c) says which of
 * them it takes, so that one it does not take is refused by name. */
const lsim_cli_opt LSIM_CLI_COMMON[LSIM_OPT_NCOMMON] = {
    [LSIM_OPT_JSON] = {"--json", NULL, NULL, LSIM_OPT_JSON, 0},
    [LSIM_OPT_INDEPENDENT] = {"--independent", NULL, NULL, LSIM_OPT_INDEPENDENT, 0},
    [LSIM_OPT_REPLICATE_FROM] = {"--replicate-from", NULL, "a rank number", LSIM_OPT_REPLICATE_FROM, 0},
    [LSIM_OPT_STATS] = {"--stats", NULL, NULL, LSIM_OPT_STATS, 0},
    [LSIM_OPT_CRITICAL] = {"--critical-path", NULL, NULL, LSIM_OPT_CRITICAL, 0},
    [LSIM_OPT_LATENCY] = {"--latency", NULL, "model or observed", LSIM_OPT_LATENCY, 0},
    [LSIM_OPT_BIN_MS] = {"--bin-ms", NULL, "a number of milliseconds", LSIM_OPT_BIN_MS, 0},
    [LSIM_OPT_DROP_EDGES] = {"--drop-edges", NULL, "edge classes", LSIM_OPT_DROP_EDGES, 0},
    [LSIM_OPT_TRACE_OUT] = {"--trace-out", NULL, "a file name", LSIM_OPT_TRACE_OUT, 0},
    [LSIM_OPT_CSV] = {"--csv", NULL, "a file name (- for standard output)", LSIM_OPT_CSV, 0},
    [LSIM_OPT_PER_RANK] = {"--per-rank", NULL, NULL, LSIM_OPT_PER_RANK, 0},
    [LSIM_OPT_SM_CONTENTION] = {"--sm-contention", NULL, "on or off", LSIM_OPT_SM_CONTENTION, 0},
    [LSIM_OPT_MODEL] = {"--model", NULL, "a model name or file", LSIM_OPT_MODEL, 0},
    [LSIM_OPT_MICRO_BATCH] = {"--micro-batch", NULL, "a number of sequences", LSIM_OPT_MICRO_BATCH, 0},
};

int lsim_cli_common_apply(lsim_cli_opts *o, int id, const char *v)
{
    switch (id) {
    case LSIM_OPT_JSON: o->json = 1; break;
    case LSIM_OPT_PER_RANK: o->per_rank = 1; break;
    case LSIM_OPT_INDEPENDENT: o->run.independent = 1; break;
    case LSIM_OPT_REPLICATE_FROM: {
        char *e = NULL;
        long x = strtol(v, &e, 10);
        if (*e || e == v || x < 0 || x > 1000000) {
            lsim_cli_usage_error("--replicate-from takes a rank number (got '%s')", v);
            return -1;
        }
        o->run.replicate_from = (int)x;
        break;
    }
    case LSIM_OPT_STATS: o->stats = 1; break;
    case LSIM_OPT_CRITICAL: o->run.critical = 1; break;
    case LSIM_OPT_LATENCY:
        if (lsim_latency_mode_parse(v, &o->run.bo.latency, NULL)) {
            lsim_cli_usage_error("--latency takes 'model' or 'observed'");
            return -1;
        }
        break;
    case LSIM_OPT_BIN_MS: {
        char *e = NULL;
        double x = strtod(v, &e);
        if (*e || e == v || !(x > 0) || x > 1e6) {
            lsim_cli_usage_error("--bin-ms takes a positive number of milliseconds");
            return -1;
        }
        o->run.bin_ns = (lsim_ns)(x * 1e6);
        if (o->run.bin_ns < 1) o->run.bin_ns = 1;
        break;
    }
    case LSIM_OPT_DROP_EDGES:
        if (parse_drop(o, v)) return -1;
        break;
    case LSIM_OPT_SM_CONTENTION:
        if (strcmp(v, "on") && strcmp(v, "off")) {
            lsim_cli_usage_error("--sm-contention takes 'on' or 'off'");
            return -1;
        }
        o->run.bo.sm_contention = !strcmp(v, "on");
        break;
    case LSIM_OPT_CSV: o->csv_out = v; break;
    case LSIM_OPT_MODEL: o->model = v; break;
    case LSIM_OPT_MICRO_BATCH: {
        char *e = NULL;
        long x = strtol(v, &e, 10);
        if (*e || e == v || x < 1 || x > 1000000) {
            lsim_cli_usage_error("--micro-batch takes a number of sequences from 1 to 1000000 (got '%s')", v);
            return -1;
        }
        o->micro_batch = (int)x;
        break;
    }
    case LSIM_OPT_TRACE_OUT:
        o->trace_out = v;
        o->run.critical = 1;        /* the trace marks the path */
        o->run.bo.keep_cpu_ops = 1; /* and writes each CPU op whole (graph.h) */
        break;
    default: lsim_cli_usage_error("internal: unknown shared option %d", id); return -1;
    }
    return 0;
}

/* ----------------------------------------------------------- progress */

static void progress_line(const lsim_cli_progress *p, const char *path, const char *what)
{
    if (p->on) fprintf(stderr, "\r\033[Klumosim: %s: %s", path, what);
}

static long peak_rss_kib(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* The run's events as the CLI shows them: one progress line on a terminal
 * (rewritten in place; not with --stats, whose lines it would garble), the
 * --stats lines, and the note on traces that name no rank. */
static void on_event(void *ctx, const lsim_run_event *ev)
{
    lsim_cli_progress *p = ctx;
    switch (ev->kind) {
    case LSIM_RUN_PHASE:
        if (!strcmp(ev->what, "reading")) p->t0 = lsim_now_s();
        progress_line(p, ev->path, ev->what);
        break;
    case LSIM_RUN_BYTES: {
        char buf[96];
        double dt = lsim_now_s() - p->t0, mb = (double)ev->bytes / 1e6;
        snprintf(buf, sizeof buf, "reading, %.0f MB (%.0f MB/s)", mb, dt > 0 ? mb / dt : 0);
        progress_line(p, ev->path, buf);
        break;
    }
    case LSIM_RUN_ET:
        if (p->stats)
            fprintf(stderr, "lumosim: stats: %s: execution trace %s: %zu of %zu collective kernels paired, %zu took their "
                            "process group from it, %zu their sizes\n",
                    ev->path, ev->what, ev->et->matched, ev->et->kernels, ev->et->group_filled, ev->et->size_filled);
        break;
    case LSIM_RUN_LOADED:
        if (p->stats)
            fprintf(stderr, "lumosim: stats: %s: %.1f MB uncompressed, %llu events, ingest %.3f s (%.1f MB/s), "
                            "build %.3f s, %zu nodes %llu edges\n",
                    ev->path, (double)ev->bytes / 1e6, (unsigned long long)ev->events, ev->read_s,
                    ev->read_s > 0 ? (double)ev->bytes / 1e6 / ev->read_s : 0, ev->build_s, ev->graph->n,
                    (unsigned long long)ev->graph->nedges);
        break;
    case LSIM_RUN_SIMULATED:
        if (p->stats)
            fprintf(stderr, "lumosim: stats: %s: simulate %.4f s (%.1f M node-events/s), peak RSS %.1f MiB\n", ev->path,
                    ev->simulate_s, ev->simulate_s > 0 ? (double)ev->events / 1e6 / ev->simulate_s : 0,
                    (double)peak_rss_kib() / 1024.0);
        break;
    case LSIM_RUN_UNNAMED:
        fprintf(stderr,
                "lumosim: note: the %zu traces name no rank (no distributedInfo): each is replayed on its own, "
                "not as one job; to simulate them together, each trace needs \"distributedInfo\": {\"rank\": R, "
                "\"world_size\": %zu}\n",
                ev->count, ev->count);
        break;
    case LSIM_RUN_DONE:
        if (p->on) fputs("\r\033[K", stderr);
        break;
    case LSIM_RUN_PROGRESS: { /* at most five lines a second, and the last */
        double now = lsim_now_s();
        if (!p->on || (now - p->shown < 0.2 && ev->count != ev->events)) break;
        p->shown = now;
        char buf[96];
        snprintf(buf, sizeof buf, "%s, %zu of %llu", ev->what, ev->count, (unsigned long long)ev->events);
        progress_line(p, ev->path, buf);
        break;
    }
    }
}

void lsim_cli_run_opts(const lsim_cli_opts *o, lsim_cli_progress *p, lsim_run_opts *ro)
{
    memset(p, 0, sizeof *p);
    p->on = isatty(STDERR_FILENO) && !o->stats;
    p->stats = o->stats;
    /* the outputs' free space, checked before the inputs are loaded */
    p->outs[0] = (lsim_run_output){o->trace_out, 10};
    p->outs[1] = (lsim_run_output){o->html_out, 100};
    p->outs[2] = (lsim_run_output){o->store_out, 25};
    p->outs[3] = (lsim_run_output){lsim_cli_csv_checked(o), 1000};
    *ro = o->run;
    ro->outputs = p->outs;
    ro->noutputs = 4;
    ro->on_event = on_event;
    ro->ctx = p;
}

/* ----------------------------------------------------------- the run */

int lsim_cli_load(const lsim_cli_opts *o, char **args, int nargs, lsim_run *run, lsim_err *err)
{
    lsim_cli_progress p;
    lsim_run_opts ro;
    lsim_cli_run_opts(o, &p, &ro);
    return lsim_run_load(&ro, args, nargs, run, err);
}

int lsim_cli_simulate(const lsim_cli_opts *o, lsim_run *run, lsim_err *err)
{
    lsim_cli_progress p;
    lsim_run_opts ro;
    lsim_cli_run_opts(o, &p, &ro);
    return lsim_run_simulate(&ro, run, err);
}

int lsim_cli_run_paths(const lsim_cli_opts *o, char **args, int nargs, lsim_run *run, lsim_err *err)
{
    lsim_cli_progress p;
    lsim_run_opts ro;
    lsim_cli_run_opts(o, &p, &ro);
    int rc = lsim_run_paths(&ro, args, nargs, run, err);
    if (!rc) lsim_cli_run_stats(o, run);
    return rc;
}

void lsim_cli_run_stats(const lsim_cli_opts *o, const lsim_run *r)
{
    if (!o->stats) return;
    if (r->sym_rep)
        fprintf(stderr, "lumosim: stats: symmetry: %zu classes of %zu GPUs (reduction %.2fx), %s\n", r->nclasses, r->n,
                r->nclasses ? (double)r->n / (double)r->nclasses : 1.0,
                r->reduced ? "one GPU simulated per class" : "every GPU simulated");
    if (r->match_parts > 1) fprintf(stderr, "lumosim: stats: match: %u parts\n", r->match_parts);
}

int lsim_cli_write_trace(const lsim_cli_opts *o, const lsim_run *r, lsim_err *err)
{
    if (!o->trace_out) return 0;
    return lsim_chrome_write(o->trace_out, r->items, r->n, r->job_path, err);
}

int lsim_cli_force;
int lsim_cli_force_large;

int lsim_cli_work_cap(const char *what, double work, const char *how, const char *change, lsim_err *err)
{
    if (lsim_cli_force_large || !(work > LSIM_CLI_WORK_CAP)) return 0;
    return lsim_err_set(err, LSIM_EARG,
                        "%s: about %.3g node simulations (%s), over the cap of %.0e (docs/reliability.md, \"Work "
                        "caps\"): %s, or add --force-large",
                        what, work, how, LSIM_CLI_WORK_CAP, change);
}

int lsim_cli_check_io(char *const *inputs, int nin, const lsim_io_file *outs, size_t nout, lsim_err *err)
{
    size_t n = (size_t)(nin > 0 ? nin : 0) + nout;
    lsim_io_file *f = calloc(n ? n : 1, sizeof *f);
    if (!f) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    size_t k = 0;
    for (int i = 0; i < nin; i++) f[k++] = (lsim_io_file){inputs[i], "input", 0, LSIM_OUT_TEXT};
    for (size_t i = 0; i < nout; i++) f[k++] = outs[i];
    int rc = lsim_out_check(f, k, lsim_cli_force ? LSIM_OUT_FORCE : 0, err);
    free(f);
    return rc;
}

int lsim_cli_write_atomic(const char *path, int (*writer)(FILE *f, void *ctx, lsim_err *err), void *ctx, lsim_err *err)
{
    lsim_out *o = NULL;
    int rc = lsim_out_begin(path, 0, 0, &o, err);
    if (rc) return rc;
    /* written through (a device, /dev/stdout): append, never truncate */
    FILE *f = fopen(lsim_out_file(o), lsim_out_is_through(o) ? "a" : "w");
    if (!f) {
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
        lsim_out_abort(o);
        return rc;
    }
    rc = writer(f, ctx, err);
    int werr = errno;
    /* a writer gets a FILE, not the name: its failed write names the file here */
    if (rc == LSIM_EIO && err && !strstr(err->msg, path)) {
        char msg[LSIM_ERR_LEN];
        snprintf(msg, sizeof msg, "%s", err->msg);
        rc = lsim_err_set(err, LSIM_EIO, "%s: %s: %s", path, msg, strerror(werr));
    }
    if (fclose(f) != 0 && !rc) rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
    if (rc) lsim_out_abort(o);
    else rc = lsim_out_commit(o, err);
    return rc;
}

/* ----------------------------------------------------------- --csv */

int lsim_cli_csv_is_stdout(const char *path) { return path && (!strcmp(path, "-") || !strcmp(path, "/dev/stdout")); }

const char *lsim_cli_csv_checked(const lsim_cli_opts *o)
{
    return lsim_cli_csv_is_stdout(o->csv_out) ? NULL : o->csv_out;
}

int lsim_cli_write_output(const char *path, int (*writer)(FILE *f, void *ctx, lsim_err *err), void *ctx,
                          lsim_err *err)
{
    if (!lsim_cli_csv_is_stdout(path)) return lsim_cli_write_atomic(path, writer, ctx, err);
    /* not through /dev/stdout's name: with stdout redirected to a file it
     * is a link to that file, which an atomic write would replace under
     * the shell's descriptor */
    int rc = writer(stdout, ctx, err);
    if (!rc && (fflush(stdout) != 0 || ferror(stdout)))
        rc = lsim_err_set(err, LSIM_EIO, "cannot write the CSV to standard output: %s", strerror(errno));
    return rc;
}

typedef struct csv_ctx {
    const lsim_replay_item *items;
    size_t n;
} csv_ctx;

static int write_csv_items(FILE *f, void *vctx, lsim_err *err)
{
    const csv_ctx *c = vctx;
    return lsim_csv_write(f, c->items, c->n, err);
}

int lsim_cli_write_csv(const lsim_cli_opts *o, const lsim_replay_item *items, size_t n, lsim_err *err)
{
    if (!o->csv_out) return 0;
    csv_ctx c = {items, n};
    return lsim_cli_write_output(o->csv_out, write_csv_items, &c, err);
}

int lsim_cli_job_memory(const lsim_cli_opts *o, lsim_graph *const *gs, size_t n, lsim_memest_job *mem, lsim_err *err)
{
    /* the shape is the user's (a trace names no model); the layout, the
     * micro-batch (unless --micro-batch) and the layers are the job's */
    lsim_model_shape sh;
    memset(mem, 0, sizeof *mem);
    if (!o->model) return 0;
    int rc = lsim_model_named(o->model, &sh, err);
    if (rc) return rc;
    lsim_wi_model given;
    memset(&given, 0, sizeof given);
    given.hidden = sh.hidden, given.ffn = sh.ffn, given.heads = sh.heads, given.head_dim = sh.head_dim;
    given.seq = sh.seq, given.vocab = sh.vocab, given.micro_batch = o->micro_batch;
    char why[LSIM_ERR_LEN];
    rc = lsim_wi_job_memest(gs, n, &given, mem, why, sizeof why, err);
    if (!rc && !mem->nstages) fprintf(stderr, "lumosim: warning: no memory estimate from --model %s: %s\n", o->model, why);
    return rc;
}
