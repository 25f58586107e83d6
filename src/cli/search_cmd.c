/* lumosim search: the configuration search (include/lumosim/search.h,
 * docs/search.md) -- parse the space, enumerate and check it, simulate the
 * feasible candidates (spread over MPI ranks, within a time budget), rank
 * and print. */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lumosim/samples.h"
#include "lumosim/search.h"
#include "lumosim/store.h"

const char *const LSIM_USAGE_SEARCH =
    "usage: lumosim search --model M --gpus N --global-batch B [--gpu G] [--topology F]\n"
    "                      [--tp LIST] [--pp LIST] [--micro-batch LIST] [--schedule LIST]\n"
    "                      [--recompute LIST] [--distributed-optimizer LIST]\n"
    "                      [--sequence-parallel] [--budget-seconds T] [--top K [--samples N [--seed S] [--spread R]]] [--json] [--csv F]\n"
    "                      [-o FILE.h5]\n"
    "\n"
    "Searches the parallel layouts of a model on N GPUs: every TP x PP x DP x\n"
    "micro-batch x schedule x recomputation x distributed optimizer. Layouts that\n"
    "do not divide (heads, hidden, FFN, layers, batch, schedule) or do not fit in\n"
    "the GPU's memory (the estimate of docs/memory.md) are discarded and counted\n"
    "by reason; the rest are synthesized as lumosim synth would (one data-parallel\n"
    "replica, its collectives timed for the whole group) and simulated, and the\n"
    "ranking is printed: step time, tokens/s, peak memory, idle and exposed-\n"
    "communication shares. Under mpirun the candidates are spread over the ranks.\n"
    "docs/search.md.\n"
    "\n"
    "  --model M        built-in model or JSON file (as for lumosim synth)\n"
    "  --gpus N         GPUs of the job\n"
    "  --global-batch B sequences per step\n"
    "  --gpu G          GPU (built-in name or JSON; default h100) and its default\n"
    "                   network unless --topology F\n"
    "  --tp LIST        tensor-parallel widths tried (default 1,2,4,8)\n"
    "  --pp LIST        pipeline depths (default: every divisor of the layers)\n"
    "  --micro-batch LIST  micro-batch sizes (default 1,2,4,8)\n"
    "  --schedule LIST  1f1b and/or interleaved:V (default 1f1b,interleaved:2)\n"
    "  --recompute LIST none, selective, full (default all three)\n"
    "  --distributed-optimizer LIST  off, on (default both)\n"
    "  --sequence-parallel  every candidate with sequence parallelism\n"
    "  --budget-seconds T  stop simulating after T seconds (per MPI rank) and\n"
    "                   report how much of the space was covered\n"
    "  --top K          rows of the ranking printed (default 10; 0: all)\n"
    "  --samples N      re-simulate those rows N times with drawn kernel\n"
    "                   durations (as lumosim sim --samples) and print the\n"
    "                   step's p5/p50/p95 (1..100000; --seed S, default 1;\n"
    "                   --spread R: each op's relative std-dev, default\n"
    "                   0.004, fitted on the shared megatron_tp8_a100 trace)\n"
    "  --json           the result as one JSON document\n"
    "  --csv F          every simulated candidate as a CSV row (- : stdout)\n"
    "  -o FILE.h5       the whole search as HDF5: every candidate, refused ones\n"
    "                   with their reason, and the ranking (docs/hdf5-schema.md,\n"
    "                   \"Search results\"; python3 -m lumosim reads it)\n";

typedef struct search_args {
    const char *model, *gpu, *topo, *csv, *out;
    int gpus, global_batch, top, json, seq_parallel;
    long long samples, seed; /* --top K --samples N: intervals of the best K */
    double spread;
    double budget;
    lsim_search_space sp;
} search_args;

/* "1,2,4" into v (at most LSIM_SEARCH_MAXV positive integers). */
static int int_list(const char *opt, const char *s, int *v, int *n)
{
    *n = 0;
    while (s && *s) {
        char *end = NULL;
        errno = 0;
        long x = strtol(s, &end, 10);
        if (errno || end == s || x <= 0 || x > 1000000 || (*end && *end != ',') || *n == LSIM_SEARCH_MAXV) {
            lsim_cli_usage_error("%s needs a comma-separated list of positive integers, not '%s'", opt, s);
            return -1;
        }
        v[(*n)++] = (int)x;
        s = *end ? end + 1 : end;
    }
    if (!*n) {
        lsim_cli_usage_error("%s needs at least one value", opt);
        return -1;
    }
    return 0;
}

/* "a,b" of names: the index of each in names[] into v. */
static int name_list(const char *opt, const char *s, const char *const *names, int nn, int *v, int *n, int cap)
{
    *n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int k = 0;
        while (k < nn && strcmp(t, names[k])) k++;
        if (k == nn || *n == cap) {
            lsim_cli_usage_error("%s: unknown value '%s'", opt, t);
            return -1;
        }
        v[(*n)++] = k;
    }
    if (!*n) {
        lsim_cli_usage_error("%s needs at least one value", opt);
        return -1;
    }
    return 0;
}

/* search's options: the code of each is its index here. */
static const lsim_cli_opt SEARCH_OPTS[] = {
    {"--model", NULL, "a value", 0, 0},          {"--gpus", NULL, "a value", 1, 0},
    {"--global-batch", NULL, "a value", 2, 0},   {"--gpu", NULL, "a value", 3, 0},
    {"--topology", NULL, "a value", 4, 0},       {"--tp", NULL, "a value", 5, 0},
    {"--pp", NULL, "a value", 6, 0},             {"--micro-batch", NULL, "a value", 7, 0},
    {"--schedule", NULL, "a value", 8, 0},       {"--recompute", NULL, "a value", 9, 0},
    {"--distributed-optimizer", NULL, "a value", 10, 0},
    {"--budget-seconds", NULL, "a value", 11, 0}, {"--top", NULL, "a value", 12, 0},
    {"--csv", NULL, "a value", 13, 0},           {"-o", "--output", "a value", 14, 0},
    {"--json", NULL, NULL, 15, 0},               {"--sequence-parallel", NULL, NULL, 16, 0},
    {"--samples", NULL, "a value", 17, 0},        {"--seed", NULL, "a value", 18, 0},
    {"--spread", NULL, "a value", 19, 0},
};

static int on_search(void *ctx, const lsim_cli_opt *opt, const char *v)
{
    search_args *a = ctx;
    lsim_search_space *s = &a->sp;
    if (!opt) {
        lsim_cli_usage_error("search takes no positional argument ('%s')", v);
        return -1;
    }
    int w = opt->id;
    if (w == 15) {
        a->json = 1;
        return 0;
    }
    if (w == 16) {
        a->seq_parallel = 1;
        return 0;
    }
    int one[1], n1 = 0;
    switch (w) {
    case 0: a->model = v; break;
    case 1: if (int_list("--gpus", v, one, &n1) || n1 != 1) return -1; a->gpus = one[0]; break;
    case 2: if (int_list("--global-batch", v, one, &n1) || n1 != 1) return -1; a->global_batch = one[0]; break;
    case 3: a->gpu = v; break;
    case 4: a->topo = v; break;
    case 5: if (int_list("--tp", v, s->tp, &s->ntp)) return -1; break;
    case 6: if (int_list("--pp", v, s->pp, &s->npp)) return -1; break;
    case 7: if (int_list("--micro-batch", v, s->mb, &s->nmb)) return -1; break;
    case 8: {
        s->nvst = 0;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", v);
        for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
            int V = 0;
            if (!strcmp(t, "1f1b")) V = 1;
            else if (!strncmp(t, "interleaved:", 12)) V = atoi(t + 12);
            if (V < 1 || V > 64 || s->nvst == LSIM_SEARCH_MAXV) {
                lsim_cli_usage_error("--schedule: unknown schedule '%s' (1f1b or interleaved:V)", t);
                return -1;
            }
            s->vst[s->nvst++] = V;
        }
        if (!s->nvst) {
            lsim_cli_usage_error("--schedule needs at least one value");
            return -1;
        }
        break;
    }
    case 9: {
        const char *rcn[LSIM_RC_N];
        for (int k = 0; k < LSIM_RC_N; k++) rcn[k] = lsim_recompute_name(k);
        if (name_list("--recompute", v, rcn, LSIM_RC_N, s->rc, &s->nrc, 3)) return -1;
        break;
    }
    case 10: {
        static const char *const DO[] = {"off", "on"};
        if (name_list("--distributed-optimizer", v, DO, 2, s->dopt, &s->ndopt, 2)) return -1;
        break;
    }
    case 11: {
        char *end = NULL;
        double t = strtod(v, &end);
        if (*end || end == v || !(t > 0) || t > 1e7) {
            lsim_cli_usage_error("--budget-seconds needs a positive number of seconds, not '%s'", v);
            return -1;
        }
        a->budget = t;
        break;
    }
    case 12: {
        char *end = NULL;
        long k = strtol(v, &end, 10);
        if (*end || end == v || k < 0 || k > 1000000) {
            lsim_cli_usage_error("--top needs a non-negative integer, not '%s'", v);
            return -1;
        }
        a->top = (int)k;
        break;
    }
    case 13: a->csv = v; break;
    case 17:
    case 18: {
        char *end = NULL;
        errno = 0;
        long long k = strtoll(v, &end, 10);
        if (errno || *end || end == v || k < (w == 17 ? 1 : 0) || (w == 17 && k > LSIM_SAMPLES_MAX)) {
            if (w == 17) lsim_cli_usage_error("--samples needs an integer in 1..%d, not '%s'", LSIM_SAMPLES_MAX, v);
            else lsim_cli_usage_error("--seed needs a non-negative integer, not '%s'", v);
            return -1;
        }
        *(w == 17 ? &a->samples : &a->seed) = (long long)k;
        break;
    }
    case 19: {
        char *end = NULL;
        double x = strtod(v, &end);
        if (*end || end == v || !(x > 0) || x > 1) {
            lsim_cli_usage_error("--spread needs a relative standard deviation in (0, 1], not '%s'", v);
            return -1;
        }
        a->spread = x;
        break;
    }
    default: a->out = v; break;
    }
    return 0;
}

static int parse(int argc, char **argv, search_args *a)
{
    memset(a, 0, sizeof *a);
    a->top = 10;
    a->seed = 1;
    a->spread = LSIM_SEARCH_SPREAD;
    a->budget = -1;
    lsim_search_space *s = &a->sp;
    static const int tp0[] = {1, 2, 4, 8}, mb0[] = {1, 2, 4, 8};
    memcpy(s->tp, tp0, sizeof tp0), s->ntp = 4;
    memcpy(s->mb, mb0, sizeof mb0), s->nmb = 4;
    s->vst[0] = 1, s->vst[1] = 2, s->nvst = 2;
    s->rc[0] = LSIM_RC_NONE, s->rc[1] = LSIM_RC_SELECTIVE, s->rc[2] = LSIM_RC_FULL, s->nrc = 3;
    s->dopt[0] = 0, s->dopt[1] = 1, s->ndopt = 2;
    lsim_cli_seen seen = {{0}, 0};
    lsim_cli_spec sp = {"search", LSIM_USAGE_SEARCH, SEARCH_OPTS, sizeof SEARCH_OPTS / sizeof *SEARCH_OPTS, 0, NULL,
                        &seen, on_search, a};
    int rc = lsim_cli_getopt(argc, argv, &sp);
    if (rc <= 0) return rc;
    if (!a->model || !a->gpus || !a->global_batch) {
        lsim_cli_usage_error("search needs --model, --gpus and --global-batch (see lumosim search --help)");
        return -1;
    }
    return 1;
}

static int is_file(const char *s) { return strchr(s, '/') || strstr(s, ".json"); }

/* Feasible candidates first by an analytic proxy of their step, so that a
 * budget spends itself on the likely best: the 1F1B bubble (pp - 1) / (m V)
 * and the recomputed share (full: one more forward of three passes,
 * selective: a tenth of that), then the enumeration order. */
static const lsim_search_cand *g_c;
static const lsim_search_space *g_s;
static double proxy(const lsim_search_cand *c)
{
    double m = (double)g_s->base.global_batch / ((double)c->mb * c->dp);
    double bubble = (c->pp - 1) / (m * c->vstages);
    double rc = c->recompute == LSIM_RC_FULL ? 1.0 / 3 : c->recompute == LSIM_RC_SELECTIVE ? 1.0 / 30 : 0;
    return bubble + rc;
}
static int cmp_proxy(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    double p = proxy(&g_c[a]), q = proxy(&g_c[b]);
    if (p != q) return p < q ? -1 : 1;
    return (a > b) - (a < b);
}
static int cmp_step(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    if (g_c[a].step != g_c[b].step) return g_c[a].step < g_c[b].step ? -1 : 1;
    return (a > b) - (a < b);
}


typedef struct csv_ctx {
    const search_args *a;
    const lsim_search_cand *c;
    const size_t *rank;
    size_t nr;
} csv_ctx;

static int write_csv(FILE *f, const search_args *a, const lsim_search_cand *c, const size_t *rank, size_t nr);

static int csv_writer(FILE *f, void *vctx, lsim_err *err)
{
    const csv_ctx *x = vctx;
    return write_csv(f, x->a, x->c, x->rank, x->nr) ? lsim_err_set(err, LSIM_EIO, "cannot write the CSV") : 0;
}

static int write_csv(FILE *f, const search_args *a, const lsim_search_cand *c, const size_t *rank, size_t nr)
{
    int ok = fputs("rank,tp,pp,dp,micro_batch,vstages,recompute,distributed_optimizer,step_ns,tokens_per_s,"
                   "peak_memory_bytes,exposed_compute_ns,overlapped_ns,exposed_comm_ns,other_ns,sim_seconds\n",
                   f) >= 0;
    double tok = (double)a->global_batch * a->sp.base.model.seq;
    for (size_t i = 0; i < nr && ok; i++) {
        const lsim_search_cand *x = &c[rank[i]];
        ok = fprintf(f, "%zu,%d,%d,%d,%d,%d,%s,%d,%lld,%.1f,%.0f,%lld,%lld,%lld,%lld,%.3f\n", i + 1, x->tp, x->pp, x->dp,
                     x->mb, x->vstages, lsim_recompute_name(x->recompute), x->dist_opt, (long long)x->step,
                     x->step > 0 ? tok / ((double)x->step / 1e9) : 0, x->mem_bytes, (long long)x->bd[0],
                     (long long)x->bd[1], (long long)x->bd[2], (long long)x->bd[3], x->sim_s) > 0;
    }
    return ok ? 0 : -1;
}

int lsim_cli_search(int argc, char **argv)
{
    search_args a;
    int p = parse(argc, argv, &a);
    if (p <= 0) return p < 0 ? 2 : 0;
    lsim_err err = {0};
    mpi_ctx m;
    lsim_search_cand *c = NULL;
    size_t n = 0, *order = NULL, nf = 0, nsim = 0;
    int64_t *flat = NULL;
    int rc = 0;
    lsim_search_space *s = &a.sp;
    lsim_synth_cfg_default(&s->base);
    s->gpus = a.gpus;
    s->base.global_batch = a.global_batch;
    s->base.seq_parallel = a.seq_parallel;
    rc = is_file(a.model) ? lsim_model_load(a.model, &s->base.model, &err)
                          : lsim_model_builtin(a.model, &s->base.model, &err);
    if (!rc && a.gpu) {
        rc = is_file(a.gpu) ? lsim_gpu_spec_load(a.gpu, &s->base.gpu, &err)
                            : lsim_gpu_spec_builtin(a.gpu, &s->base.gpu, &err);
        if (!rc) lsim_topology_default(&s->base.gpu, &s->base.topo);
    }
    if (!rc && a.topo) rc = lsim_topology_load(a.topo, &s->base.topo, &err);
    if (!rc && ((a.csv && !lsim_cli_csv_is_stdout(a.csv)) || a.out)) {
        /* the files written, checked before any work: never over an input,
         * a store or an archive, nor both the same file */
        char *ins[3] = {(char *)a.model, (char *)a.gpu, (char *)a.topo};
        lsim_io_file outs[2];
        size_t no = 0;
        if (a.csv && !lsim_cli_csv_is_stdout(a.csv)) outs[no++] = (lsim_io_file){a.csv, "--csv", 1, LSIM_OUT_TEXT};
        if (a.out) outs[no++] = (lsim_io_file){a.out, "-o", 1, LSIM_OUT_SEARCH};
        rc = lsim_cli_check_io(ins, 3, outs, no, &err);
    }
    if (rc) {
        lsim_cli_error("%s", err.msg);
        return 1;
    }
    if (lsim_cli_mpi_begin(&m)) {
        lsim_cli_error("MPI_Init failed");
        return 1;
    }
    double t0 = lsim_now_s();
    rc = lsim_search_enumerate(s, &c, &n, &err);
    uint64_t reasons[LSIM_SR_N] = {0};
    if (!rc && (!(order = malloc((n ? n : 1) * sizeof *order)) || !(flat = calloc((n ? n : 1) * 7, sizeof *flat))))
        rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        reasons[c[i].reason]++;
        if (c[i].reason == LSIM_SR_OK) order[nf++] = i;
    }
    g_c = c, g_s = s;
    if (!rc) qsort(order, nf, sizeof *order, cmp_proxy);
    /* the feasible candidates, k on rank k mod K, until the budget is spent */
    lsim_cli_progress prog;
    lsim_run_opts ro;
    lsim_cli_opts co;
    lsim_cli_opts_default(&co);
    lsim_cli_run_opts(&co, &prog, &ro);
    ro.on_event = NULL;
    for (size_t k = 0; !rc && k < nf; k++) {
        if ((int)(k % (size_t)m.size) != m.rank) continue;
        if (a.budget > 0 && lsim_now_s() - t0 > a.budget) break;
        lsim_search_cand *x = &c[order[k]];
        rc = lsim_search_eval(s, x, &ro, &err);
        if (rc) break;
        int64_t *f = flat + order[k] * 7;
        f[0] = 1, f[1] = x->step;
        for (int q = 0; q < 4; q++) f[2 + q] = x->bd[q];
        f[6] = (int64_t)(x->sim_s * 1e9);
    }
    if (m.on) {
        int bad = rc != 0, anybad = 0;
        MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (anybad && !rc) rc = lsim_err_set(&err, LSIM_EINTERNAL, "another rank failed");
        if (!anybad) MPI_Allreduce(MPI_IN_PLACE, flat, (int)(n * 7), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    double secs = lsim_now_s() - t0, sim_total = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const int64_t *f = flat + i * 7;
        c[i].simulated = f[0] != 0;
        c[i].step = f[1];
        for (int q = 0; q < 4; q++) c[i].bd[q] = f[2 + q];
        c[i].sim_s = (double)f[6] / 1e9;
        sim_total += c[i].sim_s;
    }
    nsim = 0;
    for (size_t k = 0; !rc && k < nf; k++)
        if (c[order[k]].simulated) order[nsim++] = order[k];
    if (!rc) qsort(order, nsim, sizeof *order, cmp_step);
    /* --samples: the shown rows re-simulated with drawn durations (rank 0:
     * the same numbers for any rank count) */
    size_t show = a.top && (size_t)a.top < nsim ? (size_t)a.top : nsim;
    lsim_ns *iv = NULL;
    lsim_pools_info pinfo;
    memset(&pinfo, 0, sizeof pinfo);
    if (!rc && m.rank == 0 && a.samples > 0 && show) {
        if (!(iv = calloc(3 * show, sizeof *iv))) rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
        for (size_t i = 0; !rc && i < show; i++)
            rc = lsim_search_interval(s, &c[order[i]], &ro, (uint64_t)a.samples, (uint64_t)a.seed, a.spread, iv + 3 * i,
                                      &pinfo, &err);
    }
    if (!rc && m.rank == 0) {
        double tok = (double)a.global_batch * s->base.model.seq;
        if (a.csv) {
            /* atomically, never over another kind of file (cli.h) */
            csv_ctx x = {&a, c, order, nsim};
            rc = lsim_cli_write_output(a.csv, csv_writer, &x, &err);
        }
        if (!rc && a.out) {
            char cmd[4096] = "lumosim search";
            for (int i = 0; i < argc; i++)
                if (strlen(cmd) + strlen(argv[i]) + 2 < sizeof cmd) strcat(strcat(cmd, " "), argv[i]);
            lsim_search_file_info fi = {cmd, a.model, s->base.gpu.name, a.gpus, a.global_batch,
                                        s->base.model.seq, s->base.gpu.mem_capacity, secs, a.budget > 0 ? a.budget : 0};
            rc = lsim_search_write_h5(a.out, &fi, c, n, order, nsim, &err);
        }
        if (!rc && a.json) {
            printf("{\"lumosim_version\":\"%s\",\"model\":\"%s\",\"gpus\":%d,\"gpu\":\"%s\",\"global_batch\":%d,"
                   "\"candidates\":%zu,\"reasons\":{",
                   LSIM_VERSION, a.model, a.gpus, s->base.gpu.name, a.global_batch, n);
            for (int r = 0; r < LSIM_SR_N; r++)
                printf("%s\"%s\":%llu", r ? "," : "", lsim_search_reason_name((lsim_search_reason)r),
                       (unsigned long long)reasons[r]);
            printf("},\"feasible\":%zu,\"simulated\":%zu,\"not_reached\":%zu,\"seconds\":%.3f,"
                   "\"simulated_per_minute\":%.2f,\"ranking\":[",
                   nf, nsim, nf - nsim, secs, sim_total > 0 ? 60.0 * (double)nsim / sim_total : 0);
            for (size_t i = 0; i < show; i++) {
                const lsim_search_cand *x = &c[order[i]];
                double st = (double)x->step;
                printf("%s{\"tp\":%d,\"pp\":%d,\"dp\":%d,\"micro_batch\":%d,\"vstages\":%d,\"recompute\":\"%s\","
                       "\"distributed_optimizer\":%s,\"step_ns\":%lld,\"tokens_per_s\":%.1f,\"peak_memory_bytes\":%.0f,"
                       "\"idle_share\":%.4f,\"exposed_comm_share\":%.4f",
                       i ? "," : "", x->tp, x->pp, x->dp, x->mb, x->vstages, lsim_recompute_name(x->recompute),
                       x->dist_opt ? "true" : "false", (long long)x->step, st > 0 ? tok / (st / 1e9) : 0, x->mem_bytes,
                       st > 0 ? (double)x->bd[3] / st : 0, st > 0 ? (double)x->bd[2] / st : 0);
                if (iv) {
                    printf(",\"interval\":{\"samples\":%lld,\"seed\":%lld,\"p5_ns\":%lld,\"p50_ns\":%lld,\"p95_ns\":%lld}",
                           a.samples, a.seed, (long long)iv[3 * i], (long long)iv[3 * i + 1], (long long)iv[3 * i + 2]);
                    printf(",\"interval_spread\":{\"ops\":%llu,\"spread\":%.6g,\"assumed\":\"modelled durations, "
                           "relative std-dev --spread\"}}",
                           (unsigned long long)pinfo.ops, pinfo.spread);
                } else {
                    printf("}");
                }
            }
            printf("]}\n");
        } else if (!rc && !(a.csv && !strcmp(a.csv, "-"))) {
            printf("search: %s on %d %s GPUs, global batch %d: %zu configurations; ", a.model, a.gpus,
                   s->base.gpu.name, a.global_batch, n);
            for (int r = 1; r < LSIM_SR_N; r++)
                printf("%s%llu %s", r > 1 ? ", " : "", (unsigned long long)reasons[r],
                       lsim_search_reason_name((lsim_search_reason)r));
            printf("; %zu feasible, %zu simulated", nf, nsim);
            if (nsim < nf) printf(" (%zu not reached within --budget-seconds %g)", nf - nsim, a.budget);
            printf(" in %.1f s (%.1f per minute of simulation)\n", secs,
                   sim_total > 0 ? 60.0 * (double)nsim / sim_total : 0);
            if (show) {
                printf("%4s %3s %3s %5s %3s %9s %10s %8s %10s %12s %8s %6s %7s\n", "rank", "tp", "pp", "dp", "mb",
                       "schedule", "recompute", "dist-opt", "step s", "tokens/s", "peak GB", "idle%", "x-comm%");
                for (size_t i = 0; i < show; i++) {
                    const lsim_search_cand *x = &c[order[i]];
                    char sch[24];
                    if (x->vstages > 1) snprintf(sch, sizeof sch, "inter:%d", x->vstages);
                    else snprintf(sch, sizeof sch, "1f1b");
                    double st = (double)x->step;
                    printf("%4zu %3d %3d %5d %3d %9s %10s %8s %10.3f %12.0f %8.1f %6.1f %7.1f", i + 1, x->tp, x->pp,
                           x->dp, x->mb, sch, lsim_recompute_name(x->recompute), x->dist_opt ? "on" : "off", st / 1e9,
                           st > 0 ? tok / (st / 1e9) : 0, x->mem_bytes / 1e9, st > 0 ? 100 * (double)x->bd[3] / st : 0,
                           st > 0 ? 100 * (double)x->bd[2] / st : 0);
                    if (iv) printf("  p5/p50/p95 %.3f/%.3f/%.3f s", iv[3 * i] / 1e9, iv[3 * i + 1] / 1e9, iv[3 * i + 2] / 1e9);
                    printf("\n");
                }
                if (iv)
                    printf("intervals: %lld samples of seed %lld per row; every GPU op's modelled duration drawn "
                           "with relative std-dev %.2f %% (--spread; the default is the spread of repeated kernels "
                           "fitted on megatron_tp8_a100, docs/search.md)\n",
                           a.samples, a.seed, 100.0 * pinfo.spread);
            }
            if (!nf) {
                /* nothing feasible: why, and the closest misses on memory */
                printf("no configuration is feasible:");
                for (int r = 1; r < LSIM_SR_N; r++)
                    if (reasons[r]) printf(" %llu %s;", (unsigned long long)reasons[r], lsim_search_reason_name((lsim_search_reason)r));
                printf("\n");
                for (int shown = 0; shown < 5; shown++) {
                    size_t best = n;
                    for (size_t i = 0; i < n; i++)
                        if (c[i].reason == LSIM_SR_MEMORY && c[i].mem_bytes > 0 && (best == n || c[i].mem_bytes < c[best].mem_bytes))
                            best = i;
                    if (best == n) break;
                    printf("  closest miss: TP %d PP %d DP %d mb %d V %d recompute %s dist-opt %s: %s\n", c[best].tp,
                           c[best].pp, c[best].dp, c[best].mb, c[best].vstages, lsim_recompute_name(c[best].recompute),
                           c[best].dist_opt ? "on" : "off", c[best].why);
                    c[best].mem_bytes = -1; /* shown */
                }
            }
        }
        if (!rc && fflush(stdout)) rc = lsim_err_set(&err, LSIM_EIO, "cannot write the ranking");
    }
    if (!rc && !nf)
        rc = lsim_err_set(&err, LSIM_EARG, "no configuration of %s on %d GPUs is feasible (the reasons above)", a.model,
                          a.gpus);
    if (rc && m.rank == 0) lsim_cli_error("%s", err.msg[0] ? err.msg : "failed");
    free(iv);
    free(c);
    free(order);
    free(flat);
    lsim_cli_mpi_end(&m);
    return rc ? 1 : 0;
}
