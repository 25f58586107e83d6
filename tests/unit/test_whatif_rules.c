/* The what-if plan's feasibility rules (whatif_plan.h), one test per rule:
 * facts made by hand (what pass 1 would have found), a request, and the
 * rule's verdict — which rule refused, with what message, or what it
 * decided. The expectations come from the rules' definitions in
 * docs/whatif.md, not from running the code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lumosim/whatif_steps.h"

#define NG 8

typedef struct fixture {
    lsim_wi_ident ids[NG];
    lsim_wi_gpu_size size[NG];
    lsim_wi_facts f;
    lsim_wi_request rq;
    lsim_wi_decision d;
    lsim_err err;
} fixture;

/* n GPUs of layout (tp, pp, dp), every one identified with layer source
 * src (tags: 2 layers per chunk, one chunk; kernels: 4 layers x 1 run found),
 * forward-only or not, 1000 nodes each. */
static void setup(fixture *x, size_t n, int tp, int pp, int dp, int src, int fwd_only)
{
    memset(x, 0, sizeof *x);
    for (size_t i = 0; i < n; i++) {
        lsim_wi_ident *id = &x->ids[i];
        id->rank = (int32_t)i;
        id->world = (int32_t)n;
        id->layer_source = src;
        id->forward_only = fwd_only;
        id->nchunks = 1;
        id->layers_per_chunk = src == LSIM_WI_LAYERS_TAGS ? 2 : src == LSIM_WI_LAYERS_ANNOTATIONS ? 4 : 0;
        id->layer_nodes = 600;
        if (src == LSIM_WI_LAYERS_KERNELS) {
            id->klayers.found = 1;
            id->klayers.layers = 4;
            id->klayers.runs = 1;
        }
        x->size[i] = (lsim_wi_gpu_size){1000, 2000, 100};
    }
    x->f.in = "job.h5";
    x->f.n = n;
    x->f.ids = x->ids;
    x->f.size = x->size;
    x->f.L = (lsim_wi_layout){tp, pp, dp};
    x->f.sopts = "";
    x->rq.in = "job.h5";
    x->rq.out = "new.h5";
    x->rq.seed = 1;
    x->rq.batch = 64;
}

static int run(fixture *x) { return lsim_wi_plan_check(&x->rq, &x->f, &x->d, &x->err); }

/* refused by rule `rule` with a message containing `part` */
#define REFUSED(x, rule, part)                                                                                    \
    do {                                                                                                          \
        int rc_ = run(x);                                                                                         \
        CHECK_MSG(rc_ != 0, "expected rule %s to refuse", rule);                                                  \
        CHECK_MSG((x)->d.refused && !strcmp((x)->d.refused, rule), "refused by %s, expected %s",                  \
                  (x)->d.refused ? (x)->d.refused : "(none)", rule);                                              \
        CHECK_MSG(strstr((x)->err.msg, part) != NULL, "message \"%s\" lacks \"%s\"", (x)->err.msg, part);         \
    } while (0)

#define PASSES(x)                                                                                                 \
    do {                                                                                                          \
        int rc_ = run(x);                                                                                         \
        CHECK_MSG(rc_ == 0, "refused by %s: %s", (x)->d.refused ? (x)->d.refused : "?", (x)->err.msg);            \
    } while (0)

static void test_rule_table(void)
{
    /* the order is part of the contract: the first broken rule is reported */
    static const char *const want[] = {"dp", "tp", "pipeline", "synth-options", "shape", "job-size", "layers",
                                       "slow-gpu", "resynth", "steps"};
    CHECK_I64(lsim_wi_plan_nrules(), (int)(sizeof want / sizeof want[0]));
    for (int i = 0; i < lsim_wi_plan_nrules(); i++) CHECK(!strcmp(lsim_wi_plan_rule_name(i), want[i]));
    CHECK(lsim_wi_plan_rule_name(lsim_wi_plan_nrules()) == NULL);
}

static void test_dp(void)
{
    fixture x;
    /* a traced training step at DP 1 without gradient sizes: no buckets
     * to widen, none to insert */
    setup(&x, 1, 1, 1, 1, LSIM_WI_LAYERS_KERNELS, 0);
    x.rq.dp = 4;
    REFUSED(&x, "dp", "data-parallel width 1 and a backward pass");
    REFUSED(&x, "dp", "record_shapes");
    /* with them (AccumulateGrad sizes): DDP's buckets inserted, then widened */
    x.ids[0].training.ddp_buckets = 5;
    PASSES(&x);
    CHECK(x.d.used[LSIM_WI_ST_GRAD] && x.d.used[LSIM_WI_ST_DP] && !x.d.dp_from1 && !x.d.pipe);
    CHECK(!strcmp(x.d.name[LSIM_WI_ST_GRAD], "grad-buckets"));
    x.ids[0].training.ddp_buckets = 0;
    /* the same step cut to DP 1 by lumosim (its buckets kept in a group of
     * one): widened as they are, nothing inserted */
    x.ids[0].colls[LSIM_WI_DP] = 3;
    PASSES(&x);
    CHECK_I64(x.d.Ln.dp, 4);
    CHECK(x.d.used[LSIM_WI_ST_DP] && !x.d.used[LSIM_WI_ST_GRAD] && !x.d.dp_from1 && !x.d.pipe);
    /* forward-only: nothing to reduce, a plain copy */
    setup(&x, 1, 1, 1, 1, LSIM_WI_LAYERS_KERNELS, 1);
    x.rq.dp = 4;
    PASSES(&x);
    CHECK(!x.d.dp_from1 && x.d.ngpu_out == 4);
    /* a synthesized store: buckets re-emitted, which rebuilds the pipeline */
    setup(&x, 2, 2, 1, 1, LSIM_WI_LAYERS_TAGS, 0);
    x.f.have_model = 1;
    x.f.from_model = (lsim_wi_model){1024, 4096, 16, 64, 2048, 51200, 1, 2, 2};
    x.rq.dp = 2;
    PASSES(&x);
    CHECK(x.d.dp_from1 && x.d.pipe && !x.d.tpipe && x.d.Ln.dp == 2);
    /* the same width: no step */
    setup(&x, 2, 1, 1, 2, LSIM_WI_LAYERS_KERNELS, 0);
    x.rq.dp = 2;
    PASSES(&x);
    CHECK(!x.d.used[LSIM_WI_ST_DP]);
}

static void test_tp(void)
{
    fixture x;
    setup(&x, 2, 1, 1, 2, LSIM_WI_LAYERS_KERNELS, 1);
    x.rq.tp = 2;
    REFUSED(&x, "tp", "tensor-parallel width 1");
    setup(&x, 2, 2, 1, 1, LSIM_WI_LAYERS_KERNELS, 1);
    x.f.have_model = 1;
    x.f.from_model = (lsim_wi_model){1024, 4096, 16, 64, 2048, 51200, 1, 2, 2};
    x.rq.tp = 4;
    PASSES(&x);
    CHECK(x.d.Ln.tp == 4 && x.d.used[LSIM_WI_ST_DP] && !strcmp(x.d.name[LSIM_WI_ST_DP], "tp"));
    CHECK(x.d.used[LSIM_WI_ST_SHAPE] && x.d.Mto.tp == 4 && x.d.Mfrom.tp == 2);
}

static void test_pipeline(void)
{
    fixture x;
    setup(&x, 2, 2, 1, 1, LSIM_WI_LAYERS_UNKNOWN, 1);
    strcpy(x.ids[1].klayers.why, "no repeating structure");
    x.ids[1].layer_source = LSIM_WI_LAYERS_KERNELS;
    x.ids[0].layer_source = LSIM_WI_LAYERS_TAGS;
    x.rq.pp = 2;
    REFUSED(&x, "pipeline", "rank 1: layer structure unknown (no repeating structure)");
    /* a trace pipeline needs the same recovered structure on every rank */
    setup(&x, 2, 2, 1, 1, LSIM_WI_LAYERS_KERNELS, 1);
    x.ids[1].klayers.layers = 6;
    x.rq.pp = 2;
    REFUSED(&x, "pipeline", "rank 1: 6 layers x 1 forward runs recovered, rank 0 has 4 x 1");
    /* the same structure: a trace pipeline, micro-batches from the runs */
    x.ids[1].klayers.layers = 4;
    PASSES(&x);
    CHECK(x.d.pipe && x.d.tpipe && x.d.pcfg.pp == 2 && x.d.Ln.pp == 2 && x.d.src_m == 1 && x.d.pcfg.micro_batches == 1);
    CHECK(x.d.Ls.pp == 2 && x.d.Ls.tp == 2 && x.d.ngpu_out == 4);
}

static void test_synth_options(void)
{
    fixture x;
    setup(&x, 2, 1, 1, 2, LSIM_WI_LAYERS_TAGS, 0);
    x.f.sopts = "rc=full,sp";
    x.rq.layers = 4;
    REFUSED(&x, "synth-options", "synthesized with non-default options (rc=full,sp), which --layers cannot");
    /* DP is a copy unless the options tie a GPU to its DP rank */
    setup(&x, 2, 1, 1, 2, LSIM_WI_LAYERS_TAGS, 0);
    x.f.sopts = "rc=full";
    x.rq.dp = 4;
    PASSES(&x);
    x.f.sopts = "distopt";
    REFUSED(&x, "synth-options", "which --dp cannot");
    x.f.sopts = "fsdp=2"; /* the shards depend on DP (issue 36) */
    REFUSED(&x, "synth-options", "which --dp cannot");
    x.f.sopts = "cp=2";
    REFUSED(&x, "synth-options", "which --dp cannot");
}

/* The same rule from the store's metadata before any graph is read (issue
 * 39): where it refuses, the line is the one pass 1's check gives; where
 * only the graphs can tell (layout unknown, DP from width 1), it leaves the
 * request to pass 1. */
static int meta(fixture *x, const lsim_wi_layout *L)
{
    memset(&x->err, 0, sizeof x->err);
    return lsim_wi_rule_synth_options_meta(&x->rq, x->f.sopts, L, &x->err);
}

static void test_synth_options_meta(void)
{
    static const struct {
        long dp, tp, pp, layers, hidden;
        const char *what; /* the late rule's, NULL: passes */
    } C[] = {
        {4, 0, 0, 0, 0, "which --dp cannot"},
        {1, 0, 0, 0, 0, "which --dp cannot"},
        {2, 0, 0, 0, 0, NULL}, /* the source's own DP: nothing to carry */
        {0, 4, 0, 0, 0, "which --tp, --hidden and --ffn cannot"},
        {0, 2, 0, 0, 0, NULL},
        {0, 0, 4, 0, 0, "which --pp, --schedule, --micro-batches"},
        {4, 0, 0, 8, 0, "which --layers cannot"},
        {0, 0, 0, 0, 2048, "which --tp, --hidden and --ffn cannot"},
    };
    for (size_t k = 0; k < sizeof C / sizeof *C; k++) {
        fixture x;
        setup(&x, 8, 2, 2, 2, LSIM_WI_LAYERS_TAGS, 0);
        x.f.sopts = "distopt";
        x.rq.dp = C[k].dp, x.rq.tp = C[k].tp, x.rq.pp = C[k].pp, x.rq.layers = C[k].layers, x.rq.hidden = C[k].hidden;
        lsim_wi_layout L = x.f.L;
        int rc = meta(&x, &L);
        char early[LSIM_ERR_LEN];
        snprintf(early, sizeof early, "%s", x.err.msg);
        if (!C[k].what) {
            CHECK_MSG(rc == 0, "case %zu: refused early: %s", k, early);
            continue;
        }
        CHECK_MSG(rc == LSIM_EARG && strstr(early, C[k].what), "case %zu: early \"%s\" lacks \"%s\"", k, early,
                  C[k].what);
        REFUSED(&x, "synth-options", C[k].what);
        CHECK_MSG(!strcmp(early, x.err.msg), "case %zu: early \"%s\", late \"%s\"", k, early, x.err.msg);
        /* the layout unknown: --dp and --tp wait for pass 1, the rest does not */
        rc = meta(&x, NULL);
        CHECK_MSG((rc != 0) == (C[k].layers || C[k].hidden || C[k].pp), "case %zu: layout unknown, rc %d", k, rc);
    }
    /* DP from width 1: the pipeline is rebuilt unless the job is
     * forward-only, which only the graphs say: left to pass 1 */
    fixture x;
    setup(&x, 4, 2, 2, 1, LSIM_WI_LAYERS_TAGS, 0);
    x.f.sopts = "distopt";
    x.rq.dp = 4;
    CHECK(meta(&x, &x.f.L) == 0);
    REFUSED(&x, "synth-options", "which --pp, --schedule, --micro-batches (and DP or TP from width 1) cannot");
    setup(&x, 4, 2, 2, 1, LSIM_WI_LAYERS_TAGS, 1);
    x.f.sopts = "distopt,fwd";
    x.rq.dp = 4;
    CHECK(meta(&x, &x.f.L) == 0);
    REFUSED(&x, "synth-options", "which --dp cannot");
    /* default options: nothing to refuse */
    setup(&x, 8, 2, 2, 2, LSIM_WI_LAYERS_TAGS, 0);
    x.rq.layers = 8;
    CHECK(meta(&x, &x.f.L) == 0);
}

static void test_shape(void)
{
    fixture x;
    /* annotations name the layers, not each kernel's role */
    setup(&x, 2, 2, 1, 1, LSIM_WI_LAYERS_ANNOTATIONS, 1);
    x.rq.hidden = 2048;
    REFUSED(&x, "shape", "layer annotations found, kernel roles not");
    /* roles known, the model not: the model's own message */
    setup(&x, 2, 2, 1, 1, LSIM_WI_LAYERS_KERNELS, 1);
    x.rq.hidden = 2048;
    x.f.model_rc = LSIM_EARG;
    strcpy(x.f.model_err, "job.h5: the model shape is unknown: give --model");
    REFUSED(&x, "shape", "give --model");
    /* a new width TP must divide */
    x.f.have_model = 1;
    x.f.from_model = (lsim_wi_model){1024, 4096, 16, 64, 2048, 51200, 1, 2, 2};
    x.rq.hidden = 0;
    x.rq.ffn = 4097;
    REFUSED(&x, "shape", "the transformed job");
    x.rq.ffn = 8192;
    PASSES(&x);
    CHECK(x.d.used[LSIM_WI_ST_SHAPE] && x.d.Mto.ffn == 8192 && x.d.Mfrom.ffn == 4096 && x.d.used[LSIM_WI_ST_NET]);
    /* --model with the same shape: no reshape step */
    x.rq.ffn = 0;
    x.rq.model = "gpt3-1.3b";
    PASSES(&x);
    CHECK(!x.d.used[LSIM_WI_ST_SHAPE]);
}

static void test_job_size(void)
{
    fixture x;
    setup(&x, 1, 1, 1, 1, LSIM_WI_LAYERS_KERNELS, 1);
    x.f.L = (lsim_wi_layout){200, 1, 1};
    x.rq.dp = 1000000;
    REFUSED(&x, "job-size", "a job of more than 10^8 GPUs");
    x.rq.dp = 500000; /* exactly 10^8 */
    PASSES(&x);
    CHECK(x.d.ngpu_out == 100000000u);
}

static void test_layers(void)
{
    fixture x;
    setup(&x, 2, 2, 1, 1, LSIM_WI_LAYERS_KERNELS, 0);
    x.rq.layers = 8;
    REFUSED(&x, "layers", "rank 0: --layers: the trace has backward-pass or optimizer kernels");
    setup(&x, 2, 2, 1, 1, LSIM_WI_LAYERS_UNKNOWN, 1);
    x.rq.layers = 8;
    REFUSED(&x, "layers", "rank 0: layer structure unknown (no layer tags or annotations)");
    /* tagged: 2 layers per chunk x 1 chunk x PP 2 = 4 layers; 5 does not divide */
    setup(&x, 4, 2, 2, 1, LSIM_WI_LAYERS_TAGS, 0);
    x.rq.layers = 5;
    REFUSED(&x, "layers", "--layers 5 is not divisible by PP x V = 2 x 1");
    x.rq.layers = 4; /* unchanged */
    PASSES(&x);
    CHECK(!x.d.used[LSIM_WI_ST_LAYERS]);
    x.rq.layers = 8;
    PASSES(&x);
    CHECK(x.d.used[LSIM_WI_ST_LAYERS]);
    /* 5 x 10^9 nodes on one GPU: more than a graph can number */
    x.rq.layers = 4000000;
    x.ids[0].layer_nodes = x.ids[1].layer_nodes = 5000;
    REFUSED(&x, "layers", "more than a graph can number");
}

static void test_slow_gpu(void)
{
    fixture x;
    setup(&x, 4, 1, 1, 4, LSIM_WI_LAYERS_KERNELS, 0);
    x.rq.nslow = 1;
    x.rq.slow_rank[0] = 4;
    x.rq.slow_f[0] = 2;
    REFUSED(&x, "slow-gpu", "--slow-gpu 4:2: the job has ranks 0..3");
    /* after --dp 8 the rank exists */
    x.rq.dp = 8;
    PASSES(&x);
    CHECK(x.d.used[LSIM_WI_ST_SLOW]);
}

/* --ep, --etp, --cp, --fsdp: the CLI synthesizes the job again before any plan;
 * a plan asked for them refuses, whatever the store */
static void test_resynth(void)
{
    fixture x;
    setup(&x, 4, 1, 1, 4, LSIM_WI_LAYERS_KERNELS, 0);
    x.rq.ep = 2;
    REFUSED(&x, "resynth", "--ep, --etp, --cp, --fsdp and --resynth synthesize a synthesized store's job again");
    CHECK(lsim_wi_resynth_wanted(&x.rq));
    x.rq.ep = 0, x.rq.etp = 2;
    REFUSED(&x, "resynth", "no per-GPU transform makes them");
    x.rq.etp = 0, x.rq.fsdp = LSIM_WI_FSDP_OFF;
    REFUSED(&x, "resynth", "no per-GPU transform makes them");
    x.rq.fsdp = 0;
    CHECK(!lsim_wi_resynth_wanted(&x.rq));
    PASSES(&x);
}

static void test_steps(void)
{
    fixture x;
    setup(&x, 4, 1, 1, 4, LSIM_WI_LAYERS_KERNELS, 0);
    PASSES(&x);
    for (int s = LSIM_WI_ST_LAYERS; s < LSIM_WI_ST_N; s++) CHECK_MSG(!x.d.used[s], "step %d used", s);
    CHECK(x.d.used[LSIM_WI_ST_NORM]);
    x.rq.gpu = "a100";
    x.rq.jitter = "0.1";
    x.rq.sigma = 0.1;
    PASSES(&x);
    CHECK(x.d.used[LSIM_WI_ST_NET] && x.d.used[LSIM_WI_ST_GPU] && x.d.used[LSIM_WI_ST_JITTER]);
    CHECK(!x.d.used[LSIM_WI_ST_DP] && !x.d.used[LSIM_WI_ST_PIPE]);
}

static void test_order(void)
{
    fixture x;
    /* --dp from 1 on a training trace and --layers on it: dp is told first */
    setup(&x, 1, 1, 1, 1, LSIM_WI_LAYERS_KERNELS, 0);
    x.rq.dp = 2;
    x.rq.layers = 8;
    REFUSED(&x, "dp", "--dp 2");
}

/* The step table (whatif_steps.h): every step has one row, its record name
 * the decision's; every option parses into the request by its kind, a
 * bounded integer refused outside 1..max with the parser's message; the
 * usage holds each option's help; --identify's companions are the options
 * that change what is read, not the transformation. */
static void test_step_table(void)
{
    for (int s = 0; s < LSIM_WI_ST_N; s++) {
        const lsim_wi_row *r = lsim_wi_row_of_step(s);
        CHECK_MSG(r != NULL, "step %d has no row", s);
        int rows = 0;
        for (size_t i = 0; i < lsim_wi_nrows(); i++) rows += lsim_wi_row_at(i)->step == s;
        CHECK_I64(rows, 1);
    }
    CHECK(!strcmp(lsim_wi_row_of_step(LSIM_WI_ST_JITTER)->name, "jitter"));
    CHECK(lsim_wi_row_at(lsim_wi_nrows()) == NULL && lsim_wi_opt_at(lsim_wi_nopts()) == NULL);
    char *usage = NULL;
    size_t ulen = 0;
    FILE *f = open_memstream(&usage, &ulen);
    lsim_wi_put_usage(f);
    fclose(f);
    for (size_t k = 0; k < lsim_wi_nopts(); k++) {
        const lsim_wi_opt *o = lsim_wi_opt_at(k);
        CHECK_MSG(strstr(usage, o->help) != NULL, "%s: its help is not in the usage", o->name);
        for (size_t j = 0; j < k; j++) CHECK_MSG(strcmp(lsim_wi_opt_at(j)->name, o->name), "%s twice", o->name);
        if (o->kind != LSIM_WI_OPT_LONG) continue;
        lsim_wi_request rq;
        lsim_err err = {0};
        char v[32], want[96];
        lsim_wi_request_init(&rq);
        snprintf(v, sizeof v, "%ld", o->max);
        CHECK_MSG(lsim_wi_opt_apply(&rq, o, v, &err) == 0, "%s %s: %s", o->name, v, err.msg);
        CHECK_I64(*(const long *)(const void *)((const char *)&rq + o->off), o->max);
        snprintf(v, sizeof v, "%ld", o->max + 1);
        snprintf(want, sizeof want, "%s needs a positive integer up to %ld (got '%s')", o->name, o->max, v);
        CHECK(lsim_wi_opt_apply(&rq, o, v, &err) == LSIM_EARG && !strcmp(err.msg, want));
        CHECK(lsim_wi_opt_apply(&rq, o, "0", &err) == LSIM_EARG);
    }
    free(usage);
    /* the options --identify takes: how the source is read */
    const char *with_id[] = {"--identify", "--trace-layers", "--from-topology", "--from-gpu", "--batch"};
    int nw = 0;
    for (size_t k = 0; k < lsim_wi_nopts(); k++) {
        const lsim_wi_opt *o = lsim_wi_opt_at(k);
        int listed = 0;
        for (size_t j = 0; j < sizeof with_id / sizeof *with_id; j++) listed |= !strcmp(o->name, with_id[j]);
        CHECK_MSG(listed == o->with_identify, "%s: with --identify %d", o->name, o->with_identify);
        nw += o->with_identify;
    }
    CHECK_I64(nw, (int64_t)(sizeof with_id / sizeof *with_id));
    /* the value parsers: --slow-gpu repeatable, once per GPU; --schedule */
    lsim_wi_request rq;
    lsim_err err = {0};
    lsim_wi_request_init(&rq);
    CHECK(rq.seed == 1 && rq.batch == 64);
    const lsim_wi_opt *slow = NULL, *sched = NULL, *jit = NULL;
    for (size_t k = 0; k < lsim_wi_nopts(); k++) {
        if (!strcmp(lsim_wi_opt_at(k)->name, "--slow-gpu")) slow = lsim_wi_opt_at(k);
        if (!strcmp(lsim_wi_opt_at(k)->name, "--schedule")) sched = lsim_wi_opt_at(k);
        if (!strcmp(lsim_wi_opt_at(k)->name, "--jitter")) jit = lsim_wi_opt_at(k);
    }
    CHECK(slow && slow->repeat && sched && jit);
    CHECK(lsim_wi_opt_apply(&rq, slow, "3:1.5", &err) == 0 && rq.nslow == 1 && rq.slow_rank[0] == 3);
    CHECK(lsim_wi_opt_apply(&rq, slow, "3:2", &err) == LSIM_EARG && strstr(err.msg, "GPU 3 given twice"));
    CHECK(lsim_wi_opt_apply(&rq, sched, "interleaved:4", &err) == 0 && rq.vstages == 4);
    CHECK(lsim_wi_opt_apply(&rq, sched, "gpipe", &err) == LSIM_EARG && strstr(err.msg, "unknown --schedule 'gpipe'"));
    CHECK(lsim_wi_opt_apply(&rq, jit, "trace", &err) == 0 && rq.sigma == -1 && !strcmp(rq.jitter, "trace"));
}

/* Each option's use to the re-synthesis (whatif_steps.h): the options that
 * edit graphs are refused beside --ep and the rest, by their row's default;
 * a synth option is an integer or a string (resynth.c gives it as given);
 * the request records which options were given, by their index. */
static void test_resynth_use(void)
{
    const char *edits[] = {"--model", "--micro-batch", "--trace-layers", "--from-topology", "--from-gpu", "--slow-gpu",
                           "--jitter"};
    const char *synth[] = {"--tp", "--layers", "--hidden", "--ffn", "--pp", "--topology", "--gpu", "--ep", "--etp", "--cp"};
    size_t ne = 0, ns = 0;
    CHECK(lsim_wi_nopts() <= 64);
    for (size_t k = 0; k < lsim_wi_nopts(); k++) {
        const lsim_wi_opt *o = lsim_wi_opt_at(k);
        int in_e = 0, in_s = 0;
        for (size_t j = 0; j < sizeof edits / sizeof *edits; j++) in_e |= !strcmp(o->name, edits[j]);
        for (size_t j = 0; j < sizeof synth / sizeof *synth; j++) in_s |= !strcmp(o->name, synth[j]);
        CHECK_MSG(in_e == (o->resynth == LSIM_WI_RS_EDITS), "%s: resynth use %d", o->name, (int)o->resynth);
        CHECK_MSG(in_s == (o->resynth == LSIM_WI_RS_SYNTH), "%s: resynth use %d", o->name, (int)o->resynth);
        if (o->resynth == LSIM_WI_RS_SYNTH)
            CHECK_MSG(o->kind == LSIM_WI_OPT_LONG || o->kind == LSIM_WI_OPT_STR, "%s: a synth option of kind %d", o->name,
                      (int)o->kind);
        ne += in_e, ns += in_s;
    }
    CHECK_I64((int64_t)ne, (int64_t)(sizeof edits / sizeof *edits));
    CHECK_I64((int64_t)ns, (int64_t)(sizeof synth / sizeof *synth));
    lsim_wi_request rq;
    lsim_err err = {0};
    lsim_wi_request_init(&rq);
    size_t tp = SIZE_MAX, sched = SIZE_MAX;
    for (size_t k = 0; k < lsim_wi_nopts(); k++) {
        if (!strcmp(lsim_wi_opt_at(k)->name, "--tp")) tp = k;
        if (!strcmp(lsim_wi_opt_at(k)->name, "--schedule")) sched = k;
    }
    CHECK(tp != SIZE_MAX && sched != SIZE_MAX);
    CHECK(lsim_wi_opt_apply(&rq, lsim_wi_opt_at(tp), "4", &err) == 0);
    CHECK(lsim_wi_opt_apply(&rq, lsim_wi_opt_at(sched), "interleaved:2", &err) == 0); /* applies its inner V too */
    for (size_t k = 0; k < lsim_wi_nopts(); k++)
        CHECK_MSG(lsim_wi_opt_given(&rq, k) == (k == tp || k == sched), "%s given %d", lsim_wi_opt_at(k)->name,
                  lsim_wi_opt_given(&rq, k));
}

int main(void)
{
    test_rule_table();
    test_resynth_use();
    test_dp();
    test_tp();
    test_pipeline();
    test_synth_options();
    test_synth_options_meta();
    test_shape();
    test_job_size();
    test_layers();
    test_slow_gpu();
    test_resynth();
    test_steps();
    test_order();
    test_step_table();
    return check_result("test_whatif_rules");
}
