/* lumosim search: the configuration search (include/lumosim/search.h,
 * docs/search.md) -- parse the space, enumerate and check it, simulate the
 * feasible candidates (spread over MPI ranks, within a time budget), rank
 * and print. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "lumosim/graph.h"
#include "lumosim/memlimit.h"
#include "lumosim/samples.h"
#include "lumosim/search.h"
#include "lumosim/search_from.h"
#include "lumosim/store.h"
#include "lumosim/text.h"
#include "lumosim/whatif_plan.h"

const char *const LSIM_USAGE_SEARCH =
    "usage: lumosim search --model M --gpus N --global-batch B [--gpu G] [--topology F]\n"
    "                      [--tp LIST] [--pp LIST] [--micro-batch LIST] [--schedule LIST]\n"
    "                      [--recompute LIST] [--distributed-optimizer LIST]\n"
    "                      [--cp LIST] [--ep LIST] [--fsdp LIST]\n"
    "                      [--sequence-parallel] [--budget-seconds T] [--top K [--samples N [--seed S] [--spread R]]] [--json] [--csv F]\n"
    "                      [-o FILE.h5] [--shard I/N]\n"
    "       lumosim search --from JOB.h5 [--tp LIST] [--pp LIST] [--dp LIST] [--schedule LIST]\n"
    "                      [--micro-batches LIST] [--model M] [--micro-batch N] [--gpus N]\n"
    "                      [--global-batch B] [--gpu G] [--topology F] [--budget-seconds T]\n"
    "                      [--top K] [--json] [--csv F] [-o FILE.h5] [--shard I/N]\n"
    "                      [--rank-by throughput|step]\n"
    "       lumosim search --merge PART.h5... [--top K] [--json] [--csv F] [-o FILE.h5]\n"
    "\n"
    "Searches the parallel layouts of a model on N GPUs: every TP x PP x DP x\n"
    "micro-batch x schedule x recomputation x distributed optimizer (x CP x EP x\n"
    "FSDP when asked, or EP for a MoE model). Layouts that\n"
    "do not divide (heads, hidden, FFN, layers, batch, schedule) or do not fit in\n"
    "the GPU's memory (the estimate of docs/memory.md) are discarded and counted\n"
    "by reason; the rest are synthesized as lumosim synth would (one data-parallel\n"
    "replica with one tensor-parallel rank per stage, its collectives timed for\n"
    "the whole job: the same step to the nanosecond) and simulated, and the\n"
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
    "  --cp LIST        context-parallel ranks (default 1; TP x PP x CP divides\n"
    "                   the GPUs, DP the rest)\n"
    "  --ep LIST        expert-parallel ranks of a MoE model (default: the powers\n"
    "                   of two dividing its experts; a MoE model's search runs\n"
    "                   with sequence parallelism, which its TP needs)\n"
    "  --fsdp LIST      off, full (the whole DP group) or shard group sizes\n"
    "                   (default off)\n"
    "  --sequence-parallel  every candidate with sequence parallelism\n"
    "  --budget-seconds T  stop simulating after T seconds (per MPI rank) and\n"
    "                   report how much of the space was covered\n"
    "  --top K          rows of the ranking printed (default 10; 0: all)\n"
    "  --rank-by K      throughput (default: what a step processes per second)\n"
    "                   or step (the step time); with --from the unit is\n"
    "                   samples/s where the batch is known, else micro-batches/s\n"
    "                   or the job's per-replica batches/s (never tokens/s 0)\n"
    "  --samples N      re-simulate those rows N times with drawn kernel\n"
    "                   durations (as lumosim sim --samples) and print the\n"
    "                   step's p5/p50/p95 (1..100000; --seed S, default 1;\n"
    "                   --spread R: each op's relative std-dev, default\n"
    "                   0.004, fitted on the shared megatron_tp8_a100 trace)\n"
    "  --json           the result as one JSON document\n"
    "  --csv F          every simulated candidate as a CSV row (- : stdout)\n"
    "  -o FILE.h5       the whole search as HDF5: every candidate, refused ones\n"
    "                   with their reason, and the ranking (docs/hdf5-schema.md,\n"
    "                   \"Search results\"; python3 -m lumosim reads it)\n"
    "  --shard I/N      simulate only the candidates whose index in the (fixed)\n"
    "                   enumeration is I mod N, every candidate still listed in\n"
    "                   -o FILE.h5: one task of a job array (slurm/search_array.sbatch)\n"
    "\n"
    "--from JOB.h5 searches around a traced or synthesized job (lumosim build or\n"
    "synth) with the what-if transforms instead: every combination of the\n"
    "given --tp, --pp, --dp, --schedule and --micro-batches (an option not\n"
    "given: the job's own), checked by the what-if's rules (refused ones\n"
    "counted as whatif_refused, by rule, with the rule's message), transformed\n"
    "as lumosim whatif does, discarded when the result does not fit in memory\n"
    "(the what-if's OOM line), and simulated as lumosim sim does. --model M and\n"
    "--micro-batch N are the job's shape and micro-batch size (whatif's\n"
    "--model and --micro-batch); --gpu G and --topology F re-time every\n"
    "candidate onto that hardware; --gpus N keeps TP x PP x DP = N; --global-batch\n"
    "B sets each candidate's micro-batches to B / (DP x micro-batch size).\n"
    "\n"
    "JOB OPTIONS fix the job of a --model search, every candidate the same, as\n"
    "lumosim synth takes them (synth --help): --layers --hidden --ffn --heads\n"
    "--seq --vocab --pp-layers --precision --fp8-scaling --fp8-all-gather\n"
    "--kernels --loss --attention --attention-kernel --no-dropout --grad-bytes\n"
    "--grad-acc --grad-reduce --tp-overlap --scatter-gather --no-p2p-sync\n"
    "--routing-skew --routing-dirichlet --routing-hist --capacity-factor\n"
    "--pad-to-capacity --etp. A row's step is what lumosim synth gives with the same\n"
    "options and the row's layout.\n"
    "\n"
    "--merge PART.h5... combines the -o files of the N shards of one search\n"
    "(one per I = 0..N-1) into the ranking, JSON, CSV and -o file an unsharded\n"
    "run prints and writes.\n";

/* synth's options a --model search passes to every candidate as lumosim
 * synth takes them (the rest of synth's options are searched, or are
 * search's own verdict: --dp-cost, --no-memory-check; --seed is the
 * samples' seed here). Their code in SEARCH_OPTS: SEARCH_JOB. */
#define SEARCH_JOB 29
#define SEARCH_NJOB 27
#define JOB(name, what) {name, NULL, what, SEARCH_JOB, 0}
#define JOB_OPTS                                                                                                        \
    JOB("--layers", "a positive integer"), JOB("--hidden", "a positive integer"),                                       \
        JOB("--ffn", "a positive integer"), JOB("--heads", "a positive integer"), JOB("--seq", "a positive integer"),   \
        JOB("--vocab", "a positive integer"), JOB("--pp-layers", "even, embed-loss, middle or N,N,..."),                \
        JOB("--no-p2p-sync", NULL), JOB("--grad-reduce", "a word"), JOB("--scatter-gather", NULL),                      \
        JOB("--attention", "a word"), JOB("--no-dropout", NULL), JOB("--tp-overlap", NULL),                            \
        JOB("--grad-bytes", "2 or 4"), JOB("--grad-acc", "a word"), JOB("--precision", "a word"),                       \
        JOB("--fp8-scaling", "a word"), JOB("--fp8-all-gather", NULL), JOB("--attention-kernel", "a word"),             \
        JOB("--kernels", "a word"), JOB("--loss", "a word"), JOB("--routing-skew", "a Zipf exponent"),                 \
        JOB("--routing-dirichlet", "a Dirichlet concentration"), JOB("--routing-hist", "a file name"),                  \
        JOB("--capacity-factor", "a capacity factor"), JOB("--pad-to-capacity", NULL), JOB("--etp", "a positive integer")

typedef struct search_args {
    const char *model, *gpu, *topo, *csv, *out;
    int gpus, global_batch, top, json, seq_parallel;
    int by_step;                /* --rank-by step (default: throughput) */
    long long samples, seed; /* --top K --samples N: intervals of the best K */
    double spread;
    double budget;
    lsim_search_space sp;
    /* --from (search_from.h), --shard, --merge */
    const char *from;
    lsim_search_from fs;
    int micro_batch1;           /* --micro-batch N with --from: the source's size */
    unsigned long given;        /* bit w: option code w was given */
    int shard, shards;          /* --shard I/N (shards 0: not sharded) */
    int merge;
    char **parts;               /* --merge: the shard files (positional) */
    int nparts;
    /* synth's options that fix the job of a --model search (JOB_OPTS):
     * given in order, then parsed by synth's parser into sa */
    const char *jargv[2 * SEARCH_NJOB + 6];
    int njargv;
    const char *job_first;      /* the first of them given (messages) */
    char job[2048];             /* the same, space-separated (the -o file's job_options) */
    lsim_cli_synth_args sa;
} search_args;

/* "1,2,4" into v (at most LSIM_SEARCH_MAXV positive integers). */
static int int_list(const char *opt, const char *s, int *v, int *n)
{
    *n = 0;
    const char *all = s;
    while (s && *s) {
        char *end = NULL;
        errno = 0;
        long x = strtol(s, &end, 10);
        if (errno || end == s || x <= 0 || x > 1000000 || (*end && *end != ',') || *n == LSIM_SEARCH_MAXV) {
            /* the cap stated; a long list echoed only in part (issue 40) */
            lsim_cli_usage_error("%s needs a comma-separated list of at most %d positive integers up to 1000000, not "
                                 "'%.40s%s'",
                                 opt, LSIM_SEARCH_MAXV, all, strlen(all) > 40 ? "..." : "");
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

/* A comma list of words, each made a value by one(); 0, or -1 after one
 * usage line naming the word and what `expected` says. */
static int token_list(const char *opt, const char *v, const char *expected, int (*one)(const char *, int *), int *out,
                      int *n)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    *n = 0;
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        if (*n == LSIM_SEARCH_MAXV || one(t, &out[*n])) {
            lsim_cli_usage_error("%s: '%s' is not %s", opt, t, expected);
            return -1;
        }
        (*n)++;
    }
    if (!*n) {
        lsim_cli_usage_error("%s needs at least one value", opt);
        return -1;
    }
    return 0;
}

static int schedule_of_word(const char *t, int *V)
{
    *V = !strcmp(t, "1f1b") ? 1 : !strncmp(t, "interleaved:", 12) ? atoi(t + 12) : 0;
    return *V < 1 || *V > 64;
}

/* --fsdp: off, full (the whole DP group) or a shard group size */
static int fsdp_of_word(const char *t, int *g)
{
    char *end = NULL;
    long n = !strcmp(t, "off") ? 0 : !strcmp(t, "full") ? LSIM_SEARCH_FSDP_FULL : strtol(t, &end, 10);
    *g = (int)n;
    return end && (*end || end == t || n < 1 || n > (1L << 24));
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
    {"--from", NULL, "a value", 20, 0},            {"--dp", NULL, "a value", 21, 0},
    {"--micro-batches", NULL, "a value", 22, 0},   {"--shard", NULL, "a value", 23, 0},
    {"--merge", NULL, NULL, 24, 0},                {"--rank-by", NULL, "a value", 25, 0},
    {"--cp", NULL, "a value", 26, 0},              {"--ep", NULL, "a value", 27, 0},
    {"--fsdp", NULL, "a value", 28, 0},
    JOB_OPTS,
};
#define SEARCH_NOPTS 29 /* codes 0..28; the job's options share code SEARCH_JOB */

static int on_search(void *ctx, const lsim_cli_opt *opt, const char *v)
{
    search_args *a = ctx;
    lsim_search_space *s = &a->sp;
    if (!opt) {
        /* --merge's files (checked after the whole line is read: --merge may come later) */
        a->parts[a->nparts++] = (char *)v;
        return 0;
    }
    int w = opt->id;
    a->given |= 1ul << w;
    if (w == SEARCH_JOB) { /* parsed by synth's parser once the line is read */
        if (!a->job_first) a->job_first = opt->name;
        a->jargv[a->njargv++] = opt->name;
        if (opt->what) a->jargv[a->njargv++] = v;
        return 0;
    }
    if (w == 24) {
        a->merge = 1;
        return 0;
    }
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
    case 8:
        if (token_list("--schedule", v, "1f1b or interleaved:V", schedule_of_word, s->vst, &s->nvst)) return -1;
        break;
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
            lsim_cli_usage_error("--top needs an integer in 0..1000000, not '%.40s%s'", v, strlen(v) > 40 ? "..." : "");
            return -1;
        }
        a->top = (int)k;
        break;
    }
    case 13: a->csv = v; break;
    case 26: if (int_list("--cp", v, s->cp, &s->ncp)) return -1; break;
    case 27: if (int_list("--ep", v, s->ep, &s->nep)) return -1; break;
    case 28:
        if (token_list("--fsdp", v, "off, full or a shard group size", fsdp_of_word, s->fsdp, &s->nfsdp)) return -1;
        break;
    case 25:
        if (strcmp(v, "throughput") && strcmp(v, "step")) {
            lsim_cli_usage_error("--rank-by takes throughput or step, not '%s'", v);
            return -1;
        }
        a->by_step = !strcmp(v, "step");
        break;
    case 20: a->from = v; break;
    case 21: if (int_list("--dp", v, a->fs.dp, &a->fs.ndp)) return -1; break;
    case 22: if (int_list("--micro-batches", v, a->fs.mbs, &a->fs.nmbs)) return -1; break;
    case 23: {
        char *end = NULL, *end2 = NULL;
        long i = strtol(v, &end, 10), n = *end == '/' ? strtol(end + 1, &end2, 10) : 0;
        if (*end != '/' || end == v || !end2 || end2 == end + 1 || *end2 || n < 1 || n > 1000000 || i < 0 || i >= n) {
            lsim_cli_usage_error("--shard needs I/N with 0 <= I < N (a job array's task and its size), not '%s'", v);
            return -1;
        }
        a->shard = (int)i, a->shards = (int)n;
        break;
    }
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
    if (!(a->parts = calloc((size_t)argc + 1, sizeof *a->parts))) {
        lsim_cli_usage_error("out of memory");
        return -1;
    }
    lsim_cli_seen seen = {{0}, 0};
    lsim_cli_spec sp = {"search", LSIM_USAGE_SEARCH, SEARCH_OPTS, sizeof SEARCH_OPTS / sizeof *SEARCH_OPTS, 0, NULL,
                        &seen, on_search, a};
    int rc = lsim_cli_getopt(argc, argv, &sp);
    if (rc <= 0) return rc;
#define GIVEN(w) (a->given & (1ul << (w)))
    if (a->nparts && !a->merge) {
        lsim_cli_usage_error("search takes no positional argument ('%s'; --merge takes the shards' files)", a->parts[0]);
        return -1;
    }
    if (a->samples && (a->from || a->merge)) {
        lsim_cli_usage_error("--samples re-synthesizes rows of a --model search (not with --from or --merge)");
        return -1;
    }
    if (a->job_first && (a->from || a->merge)) {
        lsim_cli_usage_error("%s describes the job of a --model search (%s takes the job's own)", a->job_first,
                             a->from ? "--from" : "--merge");
        return -1;
    }
    if (a->merge) {
        /* everything comes from the files */
        static const int only[] = {12, 13, 14, 15, 24, 25};
        for (int w = 0; w < SEARCH_NOPTS; w++) {
            int ok = 0;
            for (size_t k = 0; k < sizeof only / sizeof *only; k++) ok |= only[k] == w;
            if (GIVEN(w) && !ok) {
                lsim_cli_usage_error("--merge takes only the shards' files, --top, --json, --csv, -o and --rank-by (%s given)",
                                     SEARCH_OPTS[w].name);
                return -1;
            }
        }
        if (!a->nparts) {
            lsim_cli_usage_error("--merge needs the shards' files (lumosim search ... --shard I/N -o PART.h5)");
            return -1;
        }
        return 1;
    }
    if (a->from) {
        static const int never[] = {9, 10, 16, 26, 27, 28};
        for (size_t k = 0; k < sizeof never / sizeof *never; k++)
            if (GIVEN(never[k])) {
                lsim_cli_usage_error("%s is not a what-if option (--from takes --tp, --pp, --dp, --schedule, "
                                     "--micro-batches)",
                                     SEARCH_OPTS[never[k]].name);
                return -1;
            }
        lsim_search_from *f = &a->fs;
        f->in = a->from, f->model = a->model, f->gpu = a->gpu, f->topo = a->topo;
        f->gpus = a->gpus, f->global_batch = a->global_batch;
        if (GIVEN(5)) memcpy(f->tp, s->tp, sizeof f->tp), f->ntp = s->ntp;
        if (GIVEN(6)) memcpy(f->pp, s->pp, sizeof f->pp), f->npp = s->npp;
        if (GIVEN(8)) memcpy(f->vst, s->vst, sizeof f->vst), f->nvst = s->nvst;
        if (GIVEN(7)) {
            if (s->nmb != 1) {
                lsim_cli_usage_error("--micro-batch with --from is the job's micro-batch size: one value");
                return -1;
            }
            f->micro_batch = s->mb[0];
        }
        if (f->global_batch && f->nmbs) {
            lsim_cli_usage_error("--from takes --global-batch B (micro-batches from it) or --micro-batches LIST, not both");
            return -1;
        }
        return 1;
    }
    if (GIVEN(21) || GIVEN(22)) {
        lsim_cli_usage_error("--dp and --micro-batches are what-if options: they need --from JOB.h5");
        return -1;
    }
#undef GIVEN
    if (!a->model || !a->gpus || !a->global_batch) {
        lsim_cli_usage_error("search needs --model, --gpus and --global-batch (see lumosim search --help)");
        return -1;
    }
    /* the job's options through synth's own parser (one copy of their
     * rules and messages); --model, --gpu and --topology with them */
    const char **jv = a->jargv;
    int nj = a->njargv;
    for (int q = 0, at = 0; q < nj; q++) {
        int w = snprintf(a->job + at, sizeof a->job - (size_t)at, "%s%s", q ? " " : "", jv[q]);
        if (w < 0 || (size_t)(at += w) >= sizeof a->job) {
            lsim_cli_usage_error("the job's options are longer than %zu characters", sizeof a->job - 1);
            return -1;
        }
    }
    memmove(jv + 6, jv, (size_t)nj * sizeof *jv);
    int k = 0;
    jv[k++] = "--model", jv[k++] = a->model;
    if (a->gpu) jv[k++] = "--gpu", jv[k++] = a->gpu;
    if (a->topo) jv[k++] = "--topology", jv[k++] = a->topo;
    if (k < 6) memmove(jv + k, jv + 6, (size_t)nj * sizeof *jv);
    return lsim_cli_parse_synth_opts(k + nj, (char **)jv, LSIM_USAGE_SEARCH, &a->sa);
}

/* What a search (or a merge of its shards) found, as the outputs show it.
 * Strings borrowed. */
typedef struct sresult {
    const char *model, *gpu, *from;      /* from: --from's job, NULL for a --model search */
    int gpus, global_batch, seq;         /* gpus / global_batch 0: not constrained (--from) */
    double capacity, budget, secs, sim_total;
    lsim_search_cand *c;
    size_t n, nf, nsim;
    size_t *order;                       /* order[0..nsim): the ranking */
    uint64_t reasons[LSIM_SR_N];
    int shard, shards;
    const lsim_search_from_info *src;    /* --from: the job's layout (NULL after --merge) */
    int by_step;                         /* ranked by step time, not by throughput */
    const char *job;                     /* a --model search's job options ("": none) */
} sresult;

/* Throughput in the search's unit (search.h lsim_search_throughput). */
static lsim_search_unit thr_unit(const sresult *r) { return lsim_search_unit_of(r->c, r->n, r->global_batch); }
static double throughput(const sresult *r, const lsim_search_cand *x)
{
    return lsim_search_throughput(x, r->global_batch);
}
/* tokens/s, or a negative number where it is not known (never a 0 that
 * reads as measured: tokens only where samples and the sequence are) */
static double tokens_per_s(const sresult *r, const lsim_search_cand *x)
{
    return thr_unit(r) == LSIM_SEARCH_SAMPLES && r->seq > 0 && x->step > 0 ? throughput(r, x) * r->seq : -1;
}

typedef struct csv_ctx {
    const sresult *r;
} csv_ctx;

static int write_csv(FILE *f, const sresult *r)
{
    /* not known (a trace's micro-batch size, tokens, memory): an empty field */
    int ok = fprintf(f, "rank,tp,pp,dp,micro_batch,vstages,recompute,distributed_optimizer,step_ns,tokens_per_s,"
                     "peak_memory_bytes,exposed_compute_ns,overlapped_ns,exposed_comm_ns,other_ns,sim_seconds%s,"
                     "throughput_per_s,throughput_unit,cp,ep,fsdp\n",
                     r->from ? ",micro_batches" : "") > 0;
    for (size_t i = 0; i < r->nsim && ok; i++) {
        const lsim_search_cand *x = &r->c[r->order[i]];
        char mb[16] = "", tok[40] = "", mem[40] = "";
        double t = tokens_per_s(r, x);
        if (x->mb > 0) snprintf(mb, sizeof mb, "%d", x->mb);
        if (t >= 0) snprintf(tok, sizeof tok, "%.1f", t);
        if (x->mem_bytes > 0) snprintf(mem, sizeof mem, "%.0f", x->mem_bytes);
        ok = fprintf(f, "%zu,%d,%d,%d,%s,%d,%s,%d,%lld,%s,%s,%lld,%lld,%lld,%lld,%.3f", i + 1, x->tp, x->pp, x->dp,
                     mb, x->vstages, lsim_recompute_name(x->recompute), x->dist_opt, (long long)x->step, tok, mem,
                     (long long)x->bd[0], (long long)x->bd[1], (long long)x->bd[2], (long long)x->bd[3], x->sim_s) > 0;
        if (ok && r->from) ok = fprintf(f, ",%d", x->from_req[4]) > 0;
        if (ok) ok = fprintf(f, ",%.3f,%s,%d,%d,%d", throughput(r, x), lsim_search_unit_name(thr_unit(r)), x->cp > 1 ? x->cp : 1,
                             x->ep > 1 ? x->ep : 1, x->fsdp) > 0;
        if (ok) ok = fputc('\n', f) != EOF;
    }
    return ok ? 0 : -1;
}

static int csv_writer(FILE *f, void *vctx, lsim_err *err)
{
    const csv_ctx *x = vctx;
    return write_csv(f, x->r) ? lsim_err_set(err, LSIM_EIO, "cannot write the CSV") : 0;
}

/* --from: the refusals counted by the what-if rule that made them */
static size_t rule_counts(const sresult *r, const char **names, uint64_t *cnt, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        const lsim_search_cand *x = &r->c[i];
        if (x->reason != LSIM_SR_REFUSED) continue;
        const char *nm = x->rule ? x->rule : "?";
        size_t j = 0;
        while (j < k && strcmp(names[j], nm)) j++;
        if (j == k && k < cap) names[k] = nm, cnt[k++] = 0;
        if (j < k) cnt[j]++;
    }
    return k;
}

/* A JSON string by the one escaper (text.h): valid UTF-8, control bytes escaped. */
static void json_str(const char *s) { lsim_text_json(stdout, s); }

/* The ranking (search.h lsim_search_rank) of the simulated candidates. */
static int rank_simulated(sresult *r, lsim_err *err)
{
    r->nsim = 0;
    memset(r->reasons, 0, sizeof r->reasons);
    r->nf = 0;
    r->sim_total = 0;
    for (size_t i = 0; i < r->n; i++) {
        r->reasons[r->c[i].reason]++;
        r->nf += r->c[i].reason == LSIM_SR_OK;
        r->sim_total += r->c[i].simulated ? r->c[i].sim_s : 0;
        if (r->c[i].simulated) r->order[r->nsim++] = i;
    }
    return lsim_search_rank(r->c, r->order, r->nsim, r->global_batch, r->by_step, err);
}

/* The CSV, the -o file, and the JSON or the table (rank 0). */
static int report(const search_args *a, const sresult *r, int argc, char **argv, const lsim_ns *iv,
                  const lsim_pools_info *pinfo, lsim_err *err)
{
    int rc = 0;
    lsim_search_unit unit = thr_unit(r);
    size_t show = a->top && (size_t)a->top < r->nsim ? (size_t)a->top : r->nsim;
    const char *names[32];
    uint64_t cnt[32];
    size_t nrule = r->from ? rule_counts(r, names, cnt, 32) : 0;
    if (a->csv) {
        /* atomically, never over another kind of file (cli.h) */
        csv_ctx x = {r};
        rc = lsim_cli_write_output(a->csv, csv_writer, &x, err);
    }
    if (!rc && a->out) {
        char cmd[4096] = "lumosim search";
        for (int i = 0; i < argc; i++)
            if (strlen(cmd) + strlen(argv[i]) + 2 < sizeof cmd) strcat(strcat(cmd, " "), argv[i]);
        lsim_search_file_info fi = {cmd,      r->model,  r->gpu,   r->gpus,   r->global_batch, r->seq, r->capacity,
                                    r->secs,  r->budget, r->from,  r->shard,  r->shards,      r->job,  r->by_step};
        rc = lsim_search_write_h5(a->out, &fi, r->c, r->n, r->order, r->nsim, err);
    }
    if (!rc && a->json) {
        printf("{\"lumosim_version\":\"%s\",\"model\":", LSIM_VERSION);
        json_str(r->model);
        if (r->from) {
            printf(",\"from\":");
            json_str(r->from);
        }
        printf(",\"gpus\":%d,\"gpu\":", r->gpus);
        json_str(r->gpu);
        printf(",\"global_batch\":%d,\"rank_by\":\"%s\",\"throughput_unit\":\"%s\",\"candidates\":%zu,\"reasons\":{",
               r->global_batch, r->by_step ? "step" : "throughput", lsim_search_unit_name(unit), r->n);
        for (int q = 0; q < LSIM_SR_N; q++)
            printf("%s\"%s\":%llu", q ? "," : "", lsim_search_reason_name((lsim_search_reason)q),
                   (unsigned long long)r->reasons[q]);
        printf("}");
        if (r->from) {
            printf(",\"refused_by_rule\":{");
            for (size_t k = 0; k < nrule; k++) printf("%s\"%s\":%llu", k ? "," : "", names[k], (unsigned long long)cnt[k]);
            printf("},\"refused\":[");
            int first = 1;
            for (size_t i = 0; i < r->n; i++) {
                const lsim_search_cand *x = &r->c[i];
                if (x->reason == LSIM_SR_OK) continue;
                printf("%s{\"candidate\":%zu,\"tp\":%d,\"pp\":%d,\"dp\":%d,\"vstages\":%d,\"micro_batches\":%d,"
                       "\"reason\":\"%s\",\"rule\":",
                       first ? "" : ",", i, x->tp, x->pp, x->dp, x->vstages, x->from_req[4],
                       lsim_search_reason_name((lsim_search_reason)x->reason));
                json_str(x->rule ? x->rule : "");
                printf(",\"why\":");
                json_str(x->why);
                printf("}");
                first = 0;
            }
            printf("]");
        }
        if (r->shards > 1) printf(",\"shard\":%d,\"shards\":%d", r->shard, r->shards);
        printf(",\"feasible\":%zu,\"simulated\":%zu,\"not_reached\":%zu,\"seconds\":%.3f,"
               "\"simulated_per_minute\":%.2f,\"ranking\":[",
               r->nf, r->nsim, r->shards > 1 ? 0 : r->nf - r->nsim, r->secs,
               r->sim_total > 0 ? 60.0 * (double)r->nsim / r->sim_total : 0);
        for (size_t i = 0; i < show; i++) {
            const lsim_search_cand *x = &r->c[r->order[i]];
            double st = (double)x->step, t = tokens_per_s(r, x);
            /* not known: null, never 0 */
            char mb[16] = "null", tok[40] = "null", mem[40] = "null";
            if (x->mb > 0) snprintf(mb, sizeof mb, "%d", x->mb);
            if (t >= 0) snprintf(tok, sizeof tok, "%.1f", t);
            if (x->mem_bytes > 0) snprintf(mem, sizeof mem, "%.0f", x->mem_bytes);
            printf("%s{\"tp\":%d,\"pp\":%d,\"dp\":%d,\"micro_batch\":%s,\"vstages\":%d,\"recompute\":\"%s\","
                   "\"distributed_optimizer\":%s,\"step_ns\":%lld,\"throughput_per_s\":%.3f,\"tokens_per_s\":%s,"
                   "\"peak_memory_bytes\":%s,\"idle_share\":%.4f,\"exposed_comm_share\":%.4f,\"cp\":%d,\"ep\":%d,"
                   "\"fsdp\":%d",
                   i ? "," : "", x->tp, x->pp, x->dp, mb, x->vstages, lsim_recompute_name(x->recompute),
                   x->dist_opt ? "true" : "false", (long long)x->step, throughput(r, x), tok, mem,
                   st > 0 ? (double)x->bd[3] / st : 0, st > 0 ? (double)x->bd[2] / st : 0, x->cp > 1 ? x->cp : 1,
                   x->ep > 1 ? x->ep : 1, x->fsdp);
            if (r->from) printf(",\"micro_batches\":%d,\"candidate\":%zu", x->from_req[4], r->order[i]);
            if (iv) {
                printf(",\"interval\":{\"samples\":%lld,\"seed\":%lld,\"p5_ns\":%lld,\"p50_ns\":%lld,\"p95_ns\":%lld}",
                       a->samples, a->seed, (long long)iv[3 * i], (long long)iv[3 * i + 1], (long long)iv[3 * i + 2]);
                printf(",\"interval_spread\":{\"ops\":%llu,\"spread\":%.6g,\"assumed\":\"modelled durations, "
                       "relative std-dev --spread\"}}",
                       (unsigned long long)pinfo->ops, pinfo->spread);
            } else {
                printf("}");
            }
        }
        printf("]}\n");
    } else if (!rc && !(a->csv && !strcmp(a->csv, "-"))) {
        if (r->from && r->src)
            printf("search: around %s (TP %d PP %d DP %d, %zu GPUs) with the what-if transforms: %zu configurations; ",
                   r->from, r->src->tp, r->src->pp, r->src->dp, r->src->gpus, r->n);
        else if (r->from)
            printf("search: around %s with the what-if transforms: %zu configurations; ", r->from, r->n);
        else
            printf("search: %s on %d %s GPUs, global batch %d: %zu configurations; ", r->model, r->gpus, r->gpu,
                   r->global_batch, r->n);
        for (int q = 1; q < LSIM_SR_N; q++)
            printf("%s%llu %s", q > 1 ? ", " : "", (unsigned long long)r->reasons[q],
                   lsim_search_reason_name((lsim_search_reason)q));
        printf("; %zu feasible, %zu simulated", r->nf, r->nsim);
        if (r->shards > 1) printf(" (shard %d of %d: candidates i mod %d = %d)", r->shard, r->shards, r->shards, r->shard);
        else if (r->nsim < r->nf) printf(" (%zu not reached within --budget-seconds %g)", r->nf - r->nsim, r->budget);
        printf(" in %.1f s (%.1f per minute of simulation)\n", r->secs,
               r->sim_total > 0 ? 60.0 * (double)r->nsim / r->sim_total : 0);
        if (show)
            printf("ranked by %s%s\n", r->by_step ? "step time" : "throughput, ",
                   r->by_step                ? ""
                   : unit == LSIM_SEARCH_SAMPLES       ? "samples/s"
                   : unit == LSIM_SEARCH_MICROBATCHES  ? "micro-batches/s (the micro-batch size is not known: --micro-batch N)"
                                             : "batches/s: each data-parallel replica's batch is the job's (whatif's "
                                               "weak scaling; --global-batch B sets it)");
        if (nrule) {
            printf("refused by the what-if rules:");
            for (size_t k = 0; k < nrule; k++) printf("%s %llu %s", k ? "," : "", (unsigned long long)cnt[k], names[k]);
            printf(" (the messages: --json, -o)\n");
        }
        int modes = 0; /* CP, EP or FSDP searched: their columns */
        for (size_t i = 0; i < r->n; i++) modes |= r->c[i].cp > 1 || r->c[i].ep > 1 || r->c[i].fsdp > 0;
        if (show) {
            printf("%4s %3s %3s %5s %3s %9s %10s %8s %10s %15s %12s %8s %6s %7s%s%s\n", "rank", "tp", "pp", "dp", "mb",
                   "schedule", "recompute", "dist-opt", "step s", lsim_search_unit_name(unit), "tokens/s", "peak GB", "idle%",
                   "x-comm%", r->from ? " micro-batches" : "", modes ? "  cp  ep  fsdp" : "");
            for (size_t i = 0; i < show; i++) {
                const lsim_search_cand *x = &r->c[r->order[i]];
                char sch[24];
                if (x->vstages > 1) snprintf(sch, sizeof sch, "inter:%d", x->vstages);
                else snprintf(sch, sizeof sch, "1f1b");
                double st = (double)x->step, t = tokens_per_s(r, x);
                /* not known: "-", never 0 */
                char mb[16] = "-", tok[40] = "-", mem[40] = "-";
                if (x->mb > 0) snprintf(mb, sizeof mb, "%d", x->mb);
                if (t >= 0) snprintf(tok, sizeof tok, "%.0f", t);
                if (x->mem_bytes > 0) snprintf(mem, sizeof mem, "%.1f", x->mem_bytes / 1e9);
                printf("%4zu %3d %3d %5d %3s %9s %10s %8s %10.3f %15.2f %12s %8s %6.1f %7.1f", i + 1, x->tp, x->pp,
                       x->dp, mb, sch, lsim_recompute_name(x->recompute), x->dist_opt ? "on" : "off", st / 1e9,
                       throughput(r, x), tok, mem, st > 0 ? 100 * (double)x->bd[3] / st : 0,
                       st > 0 ? 100 * (double)x->bd[2] / st : 0);
                if (r->from) {
                    if (x->from_req[4]) printf(" %13d", x->from_req[4]);
                    else printf(" %13s", "(job's)");
                }
                if (modes) printf(" %3d %3d %5d", x->cp > 1 ? x->cp : 1, x->ep > 1 ? x->ep : 1, x->fsdp);
                if (iv) printf("  p5/p50/p95 %.3f/%.3f/%.3f s", iv[3 * i] / 1e9, iv[3 * i + 1] / 1e9, iv[3 * i + 2] / 1e9);
                printf("\n");
            }
            if (iv)
                printf("intervals: %lld samples of seed %lld per row; every GPU op's modelled duration drawn "
                       "with relative std-dev %.2f %% (--spread; the default is the spread of repeated kernels "
                       "fitted on megatron_tp8_a100, docs/search.md)\n",
                       a->samples, a->seed, 100.0 * pinfo->spread);
        }
        if (!r->nf) {
            /* nothing feasible: why, and the closest misses on memory */
            printf("no configuration is feasible:");
            for (int q = 1; q < LSIM_SR_N; q++)
                if (r->reasons[q])
                    printf(" %llu %s;", (unsigned long long)r->reasons[q], lsim_search_reason_name((lsim_search_reason)q));
            printf("\n");
            int shown_rule[32] = {0};
            for (size_t i = 0; i < r->n && r->from; i++) {
                /* --from: each rule's first refusal, with its message */
                const lsim_search_cand *x = &r->c[i];
                size_t k = 0;
                while (k < nrule && (x->reason != LSIM_SR_REFUSED || strcmp(names[k], x->rule ? x->rule : "?"))) k++;
                if (k == nrule || shown_rule[k]) continue;
                shown_rule[k] = 1;
                printf("  refused (rule %s): TP %d PP %d DP %d: %s\n", names[k], x->tp, x->pp, x->dp, x->why);
            }
            double last = -1;
            for (int shown = 0; shown < 5; shown++) {
                size_t best = r->n;
                for (size_t i = 0; i < r->n; i++)
                    if (r->c[i].reason == LSIM_SR_MEMORY && r->c[i].mem_bytes > last &&
                        (best == r->n || r->c[i].mem_bytes < r->c[best].mem_bytes))
                        best = i;
                if (best == r->n) break;
                const lsim_search_cand *x = &r->c[best];
                printf("  closest miss: TP %d PP %d DP %d mb %d V %d recompute %s dist-opt %s", x->tp, x->pp, x->dp, x->mb,
                       x->vstages, lsim_recompute_name(x->recompute), x->dist_opt ? "on" : "off");
                if (x->cp > 1 || x->ep > 1 || x->fsdp) printf(" CP %d EP %d FSDP %d", x->cp > 1 ? x->cp : 1,
                                                              x->ep > 1 ? x->ep : 1, x->fsdp);
                printf(": %s\n", x->why);
                last = x->mem_bytes;
            }
        }
    }
    if (!rc && fflush(stdout)) rc = lsim_err_set(err, LSIM_EIO, "cannot write the ranking to standard output: %s", strerror(errno));
    return rc;
}

/* --merge: the shards' files into the unsharded result (store.h,
 * lsim_search_merge), ranked and reported as an unsharded search. Local. */
static int merge(search_args *a, int argc, char **argv, lsim_err *err)
{
    int n = a->nparts, rc = 0;
    lsim_search_file *f = calloc((size_t)n, sizeof *f);
    sresult r;
    memset(&r, 0, sizeof r);
    {
        lsim_io_file outs[2];
        size_t no = 0;
        if (a->csv && !lsim_cli_csv_is_stdout(a->csv)) outs[no++] = (lsim_io_file){a->csv, "--csv", 1, LSIM_OUT_TEXT};
        if (a->out) outs[no++] = (lsim_io_file){a->out, "-o", 1, LSIM_OUT_SEARCH};
        if ((rc = lsim_cli_check_io(a->parts, n, outs, no, err))) goto cleanup;
    }
    if (!f) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        goto cleanup;
    }
    for (int i = 0; i < n && !rc; i++) rc = lsim_search_read_h5(a->parts[i], &f[i], err);
    if (rc) goto cleanup;
    if ((rc = lsim_search_merge(f, n, a->parts, &r.c, &r.n, &r.secs, err))) goto cleanup;
    const lsim_search_file_info *f0 = &f[0].info;
    if (!(r.order = malloc((r.n ? r.n : 1) * sizeof *r.order))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        goto cleanup;
    }
    r.model = f0->model, r.gpu = f0->gpu, r.from = f0->from[0] ? f0->from : NULL;
    r.gpus = f0->gpus, r.global_batch = f0->global_batch, r.seq = f0->seq, r.capacity = f0->capacity;
    r.budget = f0->budget;
    r.job = f0->job;
    r.by_step = a->by_step;
    rc = rank_simulated(&r, err);
    if (!rc) rc = report(a, &r, argc, argv, NULL, NULL, err);
cleanup:
    for (int i = 0; f && i < n; i++) lsim_search_file_free(&f[i]);
    free(f);
    free(r.c);
    free(r.order);
    return rc;
}

/* A private directory for --from's transformed stores (one at a time). */
static int make_workdir(char *dir, size_t cap, lsim_err *err)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, cap, "%s/lumosim-search-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) return lsim_err_set(err, LSIM_EIO, "cannot create a work directory in %s: %s", t && *t ? t : "/tmp",
                                           strerror(errno));
    return 0;
}

/* search --from makes and simulates each feasible candidate's whole job:
 * the sum of their GPUs times a source GPU's nodes on average (the /gpus
 * table), against the work cap (cli.h); a candidate past the GPUs a store
 * holds (LSIM_WORLD_MAX) is refused outright, before any is made. The
 * largest candidate's graphs, read whole as lsim_search_from_eval reads
 * them, must fit in memory (memlimit.h): refused here, naming the --from
 * store, not after the smaller candidates' work. Every rank computes the
 * same answer. */
static int from_cap(const char *in, const lsim_search_cand *c, const size_t *order, size_t nf, lsim_err *err)
{
    lsim_store_gpu_info *t = NULL;
    size_t n = 0;
    int rc = lsim_store_gpu_table(in, &t, &n, err);
    if (rc) return rc;
    double nodes = 0, edges = 0, strings = 0, gpus = 0, big = 0;
    const lsim_search_cand *largest = NULL;
    for (size_t i = 0; i < n; i++)
        nodes += (double)t[i].nodes, edges += (double)t[i].edges, strings += (double)t[i].strings;
    lsim_store_gpu_table_free(t, n);
    for (size_t k = 0; k < nf; k++) {
        const lsim_search_cand *x = &c[order[k]];
        double g = (double)x->tp * (double)x->pp * (double)x->dp;
        if (g > big) big = g, largest = x;
        if (g > LSIM_WORLD_MAX)
            return lsim_err_set(err, LSIM_EARG,
                                "%s: candidate TP %d x PP %d x DP %d has %.0f GPUs, over the %d (2^20) a store holds "
                                "(docs/reliability.md, \"Work caps\"): leave it out of --tp, --pp, --dp",
                                in, x->tp, x->pp, x->dp, g, LSIM_WORLD_MAX);
        gpus += g;
    }
    double per = n ? nodes / (double)n : 0;
    char how[160];
    snprintf(how, sizeof how, "%zu candidates of %.0f GPUs in all x %.0f nodes a GPU", nf, gpus, per);
    rc = lsim_cli_work_cap(in, gpus * per, how, "try fewer or smaller layouts", err);
    if (rc || !largest || !n) return rc;
    char what[LSIM_ERR_LEN / 2];
    snprintf(what, sizeof what, "%s (candidate TP %d x PP %d x DP %d)", in, largest->tp, largest->pp, largest->dp);
    double f = big / (double)n; /* the candidate's GPUs, each like a source GPU on average */
    uint64_t job[4] = {(uint64_t)big, (uint64_t)(nodes * f), (uint64_t)(edges * f), (uint64_t)(strings * f)};
    return lsim_mem_check_job(what, job, job, 0, job[1], job[0], err);
}

int lsim_cli_search(int argc, char **argv)
{
    search_args a;
    int p = parse(argc, argv, &a);
    if (p <= 0) {
        free(a.parts);
        return p < 0 ? 2 : 0;
    }
    lsim_err err = {0};
    lsim_world m;
    memset(&m, 0, sizeof m);
    lsim_search_cand *c = NULL;
    size_t n = 0, *order = NULL, nf = 0;
    char workdir[4096] = "";
    int rc = 0, mpi = 0;
    lsim_search_space *s = &a.sp;
    lsim_search_from_info src;
    memset(&src, 0, sizeof src);
    if (a.merge) {
        rc = merge(&a, argc, argv, &err);
        if (rc) lsim_cli_error("%s", err.msg[0] ? err.msg : "failed");
        free(a.parts);
        return rc ? 1 : 0;
    }
    lsim_synth_cfg_default(&s->base);
    /* a --model search: every candidate starts from the job synth's
     * parser and rules make of the line (cli.h, lsim_cli_synth_base) */
    if (!a.from) rc = lsim_cli_synth_base(&a.sa, &s->base, &err);
    s->gpus = a.gpus;
    s->base.global_batch = a.global_batch;
    s->base.seq_parallel = a.seq_parallel;
    if (!a.from) {
        if (!rc && s->base.model.experts > 0 && !s->nep)
            /* a MoE model: expert parallelism searched by default, every
             * power of two that divides the experts (the check refuses those
             * that do not divide a stage's GPUs) */
            for (int e = 1; e <= s->base.model.experts && s->nep < LSIM_SEARCH_MAXV; e *= 2)
                if (s->base.model.experts % e == 0) s->ep[s->nep++] = e;
        /* MoE blocks with TP need sequence parallelism (synth refuses them
         * without it, docs/synthesis.md): on for a MoE model's search */
        if (!rc && s->base.model.experts > 0) s->base.seq_parallel = 1;
    }
    if (!rc) {
        /* the files written, checked before any work: never over an input,
         * a store or an archive, nor both the same file */
        char *ins[5] = {(char *)a.model, (char *)a.gpu, (char *)a.topo, (char *)a.from, (char *)a.sa.routing_hist};
        lsim_io_file outs[2];
        size_t no = 0;
        if (a.csv && !lsim_cli_csv_is_stdout(a.csv)) outs[no++] = (lsim_io_file){a.csv, "--csv", 1, LSIM_OUT_TEXT};
        if (a.out) outs[no++] = (lsim_io_file){a.out, "-o", 1, LSIM_OUT_SEARCH};
        rc = lsim_cli_check_io(ins, 5, outs, no, &err);
    }
    if (!rc && a.from) rc = make_workdir(workdir, sizeof workdir, &err);
    a.fs.workdir = workdir;
    if (rc) {
        lsim_cli_error("%s", err.msg);
        free((void *)s->base.routing_hist);
        free(a.parts);
        return 1;
    }
    if (lsim_world_begin(&m)) {
        lsim_cli_error("MPI_Init failed");
        if (workdir[0]) rmdir(workdir);
        free((void *)s->base.routing_hist);
        free(a.parts);
        return 1;
    }
    mpi = 1;
    lsim_search_keep_memory();
    double t0 = lsim_now_s();
    rc = a.from ? lsim_search_from_enumerate(&a.fs, &c, &n, &src, &err) : lsim_search_enumerate(s, &c, &n, &err);
    if (!rc && !(order = malloc((n ? n : 1) * sizeof *order)))
        rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++)
        if (c[i].reason == LSIM_SR_OK && (a.shards < 2 || (int)(i % (size_t)a.shards) == a.shard)) order[nf++] = i;
    if (!rc && a.from) rc = from_cap(a.fs.in, c, order, nf, &err);
    /* the proxy orders a --model search for a budget; --from keeps the
     * enumeration's order (the what-if's cost has no such proxy) */
    if (!rc && !a.from) rc = lsim_search_order_proxy(s, c, order, nf, &err);
    int any_ok = 0;
    for (size_t i = 0; !rc && i < n; i++) any_ok |= c[i].reason == LSIM_SR_OK;
    /* the feasible candidates (of this shard) over the ranks, until the
     * budget is spent (search_from.h) */
    lsim_cli_progress prog;
    lsim_run_opts ro;
    lsim_cli_opts co;
    lsim_cli_opts_default(&co);
    lsim_cli_run_opts(&co, &prog, &ro);
    ro.on_event = NULL;
    rc = lsim_search_world_eval(&m, s, a.from ? &a.fs : NULL, c, n, order, nf, t0, a.budget, &ro, rc, &err);
    sresult r;
    memset(&r, 0, sizeof r);
    r.secs = lsim_now_s() - t0;
    r.c = c, r.n = n, r.order = order;
    if (a.from) {
        r.model = a.model ? a.model : "", r.gpu = a.gpu ? a.gpu : "", r.from = a.from;
        r.gpus = a.gpus, r.global_batch = a.global_batch, r.seq = src.seq, r.capacity = 0;
        r.src = &src;
    } else {
        r.job = a.job;
        r.model = a.model, r.gpu = s->base.gpu.name, r.gpus = a.gpus, r.global_batch = a.global_batch;
        r.seq = s->base.model.seq, r.capacity = s->base.gpu.mem_capacity;
    }
    r.budget = a.budget > 0 ? a.budget : 0;
    r.shard = a.shard, r.shards = a.shards;
    r.by_step = a.by_step;
    if (!rc) rc = rank_simulated(&r, &err);
    /* --samples: the shown rows re-simulated with drawn durations (rank 0:
     * the same numbers for any rank count) */
    size_t show = a.top && (size_t)a.top < r.nsim ? (size_t)a.top : r.nsim;
    lsim_ns *iv = NULL;
    lsim_pools_info pinfo;
    memset(&pinfo, 0, sizeof pinfo);
    if (!rc && m.rank == 0 && a.samples > 0 && show) {
        if (!(iv = calloc(3 * show, sizeof *iv))) rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
        for (size_t i = 0; !rc && i < show; i++)
            rc = lsim_search_interval(s, &c[order[i]], &ro, (uint64_t)a.samples, (uint64_t)a.seed, a.spread, iv + 3 * i,
                                      &pinfo, &err);
    }
    /* nothing feasible: the counts are printed, no file is written (a
     * shard with none of its own still writes its part when another has) */
    int none = !rc && (a.shards > 1 ? !any_ok : !r.nf);
    if (!rc && m.rank == 0) {
        search_args b = a;
        if (none) b.csv = NULL, b.out = NULL;
        rc = report(&b, &r, argc, argv, iv, &pinfo, &err);
    }
    if (!rc && none) {
        if (a.from)
            rc = lsim_err_set(&err, LSIM_EARG, "%s: no layout of the what-if transforms asked is feasible (the reasons above)",
                              a.from);
        else
            rc = lsim_err_set(&err, LSIM_EARG, "no configuration of %s on %d GPUs is feasible (the reasons above)",
                              a.model, a.gpus);
    }
    if (rc && m.rank == 0) lsim_cli_error("%s", err.msg[0] ? err.msg : "failed");
    free(iv);
    free(c);
    free(order);
    free((void *)s->base.routing_hist);
    free(a.parts);
    if (workdir[0]) rmdir(workdir);
    if (mpi) lsim_world_end(&m);
    return rc ? 1 : 0;
}
