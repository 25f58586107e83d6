/* The what-if step table (src/run/whatif_steps.c), owned by the run layer.
 *
 * Each what-if is one row (lsim_wi_row): its name and options, when it
 * applies and in what order, its feasibility check on pass 1's metadata
 * (whatif_plan.h's facts), its transform and what it writes to the record.
 * Everything else is generated from the table:
 *   - the CLI's option table, their parse into an lsim_wi_request and
 *     `lumosim whatif --help` (lsim_wi_opt_at, lsim_wi_opt_apply,
 *     lsim_wi_put_usage);
 *   - the plan's checks, in their fixed order (lsim_wi_plan_check: the
 *     rows' check_at), and which steps run (the rows' when);
 *   - the per-GPU transforms, in their order (the rows' phase and apply_at);
 *   - the record's "transformations" (the rows' args, in step order).
 * Adding a what-if is one new file (its transform, check, record and the
 * row itself, as `const lsim_wi_row lsim_wi_row_NAME`) plus one line in the
 * table (whatif_steps.c, which declares the row), and its step and request
 * field in whatif_plan.h: three files. The re-synthesis reads the
 * options' resynth use, so it needs no list of them.
 * All of it is local and pure but for the transforms, which make graphs.
 * lumosim_core. */
#ifndef LUMOSIM_WHATIF_STEPS_H
#define LUMOSIM_WHATIF_STEPS_H

#include <stddef.h>
#include <stdio.h>

#include "lumosim/whatif_plan.h"

/* How an option's value goes into the request. */
typedef enum lsim_wi_opt_kind {
    LSIM_WI_OPT_SWITCH, /* no value: the int at off set to 1 */
    LSIM_WI_OPT_LONG,   /* 1..max into the long at off */
    LSIM_WI_OPT_STR,    /* the value itself (borrowed) into the const char * at off */
    LSIM_WI_OPT_FN      /* parse() */
} lsim_wi_opt_kind;

/* What the re-synthesis (--ep, --etp, --cp, --fsdp, --resynth: the job
 * synthesized again from its recorded synth arguments, the CLI's
 * resynth.c) does with an option given beside it. The default refuses: an
 * option added without saying is never dropped silently. */
typedef enum lsim_wi_resynth_use {
    LSIM_WI_RS_EDITS = 0, /* it edits a job's graphs: refused beside them */
    LSIM_WI_RS_SYNTH,     /* lumosim synth's option of the same name (an integer
                             or a string): it replaces the recorded one */
    LSIM_WI_RS_OWN,       /* the re-synthesis sets it by its own rule (--dp,
                             --fsdp, --schedule, --micro-batches) */
    LSIM_WI_RS_NONE       /* not part of the job (-o, --seed, --identify, ...) */
} lsim_wi_resynth_use;

typedef struct lsim_wi_opt {
    const char *name;  /* "--dp": in messages and "given twice" */
    const char *alias; /* a second spelling ("--output" for -o), or NULL */
    const char *what;  /* what its value is ("a positive integer"); NULL with LSIM_WI_OPT_SWITCH */
    int repeat;        /* may be given more than once (--slow-gpu) */
    int with_identify; /* may be given with --identify (it changes what is read, not the transform) */
    lsim_wi_opt_kind kind;
    size_t off;        /* offsetof(lsim_wi_request, field) */
    long max;          /* LSIM_WI_OPT_LONG: the largest accepted */
    /* LSIM_WI_OPT_FN: 0, or LSIM_EARG with the usage-error line in err */
    int (*parse)(lsim_wi_request *rq, const char *v, lsim_err *err);
    const char *help;  /* its lines of --help, each "  --name ...\n" */
    lsim_wi_resynth_use resynth;
} lsim_wi_opt;

/* What a step's transform and record read (borrowed from the plan). */
typedef struct lsim_wi_ctx {
    const lsim_wi_request *rq;
    const lsim_wi_decision *d;
    const lsim_wi_layout *L;     /* the source's layout */
    const lsim_wi_ident *ids;    /* pass 1, one per source GPU */
    const lsim_gpu_spec *gfrom, *gto;
    const lsim_topology *tfrom, *tto;
    const char *from_how;        /* how the source GPU was found */
    int mem_figures;             /* source GPUs carry traced memory figures (graph.h mem_*) */
    int mem_reest;               /* ... re-estimated with --model where a step changes them */
    int64_t ddp_bytes;           /* written by grad-buckets: DDP's bucket buffers added, the largest */
} lsim_wi_ctx;

/* When a row's transform runs. */
typedef enum lsim_wi_phase {
    LSIM_WI_PH_NONE = 0, /* no transform of its own */
    LSIM_WI_PH_SOURCE,   /* on each normalized source GPU, in the source's layout */
    LSIM_WI_PH_STAGE,    /* on whole pipeline stages (the plan's pipeline runners) */
    LSIM_WI_PH_GPU       /* on each new GPU, after the source steps */
} lsim_wi_phase;

typedef int (*lsim_wi_rule_fn)(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err);

typedef struct lsim_wi_row {
    const char *name;            /* the check's name in refusals (lsim_wi_decision.refused) */
    int step;                    /* the lsim_wi_step it runs and records, -1: none of its own */
    const lsim_wi_opt *opts;     /* its options, in --help order */
    size_t nopts;
    /* feasibility: the checks run in ascending check_at (0: none), the order
     * the messages have always come in (search archives keep the index) */
    int check_at;
    lsim_wi_rule_fn check;
    /* whether the step runs beyond what the checks decided (after them all) */
    int (*when)(const lsim_wi_request *rq, const lsim_wi_facts *f, const lsim_wi_decision *d);
    lsim_wi_phase phase;
    int apply_at;                /* order within the phase */
    /* does the transform run on this GPU (NULL: d->used[step]) */
    int (*runs)(const lsim_wi_ctx *c);
    int (*reps)(const lsim_wi_ctx *c); /* times it is applied (NULL: once) with k = 0.. */
    /* in (borrowed) into *out (owned by the caller; left NULL: nothing to do
     * for this k). gpu: the source rank (SOURCE) or the new GPU (GPU). */
    int (*apply)(lsim_wi_ctx *c, const lsim_graph *in, int32_t gpu, int k, lsim_graph **out, lsim_wi_counts *cnt,
                 lsim_err *err);
    /* the record: its "args" member ("\"args\":{...},"; NULL: none) */
    void (*args)(const lsim_wi_ctx *c, FILE *f);
    /* the option that changes what a GPU holds (its traced memory figures
     * dropped or re-estimated), NULL when they are carried */
    const char *(*changes)(const lsim_wi_ctx *c);
    const char *carried_why;     /* the record's memory "why" when carried (NULL: "times only") */
    /* a memory member of its own ("\"memory\":{...},"), when carried */
    void (*memory)(const lsim_wi_ctx *c, FILE *f);
} lsim_wi_row;

/* The table, in --help order. */
size_t lsim_wi_nrows(void);
const lsim_wi_row *lsim_wi_row_at(size_t i);
/* The row of step s (lsim_wi_step), NULL when none. */
const lsim_wi_row *lsim_wi_row_of_step(int s);

/* Every row's options, in table order (at most 64: the request's given
 * bits). */
size_t lsim_wi_nopts(void);
const lsim_wi_opt *lsim_wi_opt_at(size_t i);
/* Option i (lsim_wi_opt_at) was given: lsim_wi_opt_apply set its bit. */
int lsim_wi_opt_given(const lsim_wi_request *rq, size_t i);

/* The request's defaults (seed 1, batch 64; the rest 0 / NULL). */
void lsim_wi_request_init(lsim_wi_request *rq);
/* Option o with value v (NULL for a switch) into rq: 0, or LSIM_EARG with
 * the one usage-error line in err. */
int lsim_wi_opt_apply(lsim_wi_request *rq, const lsim_wi_opt *o, const char *v, lsim_err *err);
/* `lumosim whatif --help`: the synopsis, the options' help in table order
 * and the ranges, from the table. */
void lsim_wi_put_usage(FILE *f);

/* 1 when rq asks for --ep, --cp or --fsdp: the job is synthesized again
 * from the store's recorded arguments (the CLI's resynth.c), not planned.
 * Local. */
int lsim_wi_resynth_wanted(const lsim_wi_request *rq);

/* The feasibility checks (src/run/whatif_rules.c), referenced by the rows. */
int lsim_wi_rule_dp(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err);
int lsim_wi_rule_tp(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err);
int lsim_wi_rule_pipeline(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err);
int lsim_wi_rule_synth_options(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err);
/* The same rule before any graph is read (lsim_wi_plan_precheck): sopts
 * from the store's GPU table, L its recorded layout or NULL when unknown.
 * Refuses, with the rule's line, only where pass 1 could decide nothing
 * else on a synthesized store; 0 leaves the rest to the rule. */
int lsim_wi_rule_synth_options_meta(const lsim_wi_request *rq, const char *sopts, const lsim_wi_layout *L,
                                    lsim_err *err);
int lsim_wi_rule_shape(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err);
int lsim_wi_rule_job_size(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err);
int lsim_wi_rule_layers(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err);
int lsim_wi_rule_slow_gpu(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err);

#endif
