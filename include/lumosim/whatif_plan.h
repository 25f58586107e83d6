/* The what-if plan: a what-if as an ordered list of checked steps.
 *
 *   parse    the caller (the CLI) fills an lsim_wi_request from its options;
 *   resolve  lsim_wi_plan_open: the GPUs and networks (a source GPU named by
 *            the store's "device" attribute), the model file, then pass 1 over
 *            the source store: every GPU identified (whatif.h), collectives
 *            matched, the layout found;
 *   check    lsim_wi_plan_check: the feasibility rules, in a fixed order, on
 *            the facts pass 1 found. Each rule either refuses (LSIM_EARG, one
 *            line, and the rule's name in lsim_wi_decision.refused) or decides
 *            part of the plan (the new layout, which steps run, the pipeline
 *            configuration, the model shapes). Rules read no file: they are
 *            pure functions of (request, facts), so each has a unit test
 *            (tests/unit/test_whatif_rules.c);
 *   run      lsim_wi_plan_run: pass 2, one pipeline stage of source GPUs at a
 *            time, each new GPU through the decided steps and into the
 *            streamed store writer; nothing is written before every check
 *            (including the ones that need the whole source read) has passed,
 *            and a failure aborts the writer (no partial store).
 *
 * Libraries: the request, facts, rules, the step table (whatif_steps.h) and
 * the record's JSON pieces are in lumosim_core (src/run/whatif_rules.c,
 * src/run/whatif_steps.c); the plan object, which reads and
 * writes graph stores, is in lumosim_io (io/run/whatif_plan.c). Everything
 * here is local (no MPI communication). The library never prints: the
 * identification and the record are written to a FILE the caller gives or
 * returned as text. */
#ifndef LUMOSIM_WHATIF_PLAN_H
#define LUMOSIM_WHATIF_PLAN_H

#include <stdio.h>

#include "lumosim/common.h"
#include "lumosim/cost.h"
#include "lumosim/whatif.h"

#define LSIM_WI_MAXSLOW 64 /* --slow-gpu options, at most (one per GPU) */

/* What the user asked for. Strings are borrowed (the caller keeps them for
 * the plan's lifetime). Widths, counts and sizes: 0 = not given. Filled
 * from the options of the step table (whatif_steps.h: lsim_wi_request_init,
 * lsim_wi_opt_apply). */
enum { LSIM_WI_FSDP_FULL = -1, LSIM_WI_FSDP_OFF = -2 };
typedef struct lsim_wi_request {
    const char *in;        /* the source graph store */
    const char *out;       /* the new graph store (NULL with identify) */
    const char *topo, *gpu, *from_gpu, *from_topo; /* built-in names or files */
    const char *model;     /* --model NAME|FILE or NULL */
    const char *jitter;    /* --jitter as given (NULL: none); sigma holds it */
    long dp, tp, layers, hidden, ffn, micro_batch, pp, vstages, micro_batches;
    long seed, batch;      /* noise seed (1), GPUs read at a time in pass 1 (64) */
    long trace_layers;     /* --trace-layers: a trace's layers per micro-batch (0: found from its kernels) */
    long ep, cp;           /* --ep, --cp: a synthesized store's job synthesized again (whatif_resynth.c) */
    long etp;              /* --etp: the same, the experts' tensor-parallel width */
    long fsdp;             /* --fsdp: N, LSIM_WI_FSDP_FULL, LSIM_WI_FSDP_OFF; 0 not given */
    double sigma;          /* --jitter: relative std-dev, -1 for "trace" */
    int identify;          /* --identify: pass 1 only */
    int no_share;          /* write every GPU's rows (no shared structure) */
    int resynth;           /* --resynth: any structural what-if of a synthesized store by
                              synthesizing its job again (whatif_resynth.c) */
    int nslow;
    int32_t slow_rank[LSIM_WI_MAXSLOW];
    double slow_f[LSIM_WI_MAXSLOW];
    const char *cmd;       /* the command line, kept as the new store's provenance */
    uint64_t given;        /* bit i: the table's option i was given (whatif_steps.h) */
} lsim_wi_request;

/* The steps a plan can run, in the order they are recorded (GRAD: a traced
 * DP-1 training step's gradient buckets inserted, lsim_wi_trace_ddp, before
 * DP widens them). Each is a row of the step table (whatif_steps.h), which
 * says when and in what order it is applied. */
typedef enum lsim_wi_step {
    LSIM_WI_ST_NORM = 0, LSIM_WI_ST_GRAD, LSIM_WI_ST_LAYERS, LSIM_WI_ST_SHAPE, LSIM_WI_ST_PIPE, LSIM_WI_ST_DP,
    LSIM_WI_ST_NET, LSIM_WI_ST_GPU, LSIM_WI_ST_SLOW, LSIM_WI_ST_JITTER, LSIM_WI_ST_N
} lsim_wi_step;

/* Graph sizes of one source GPU (for the memory checks made before work). */
typedef struct lsim_wi_gpu_size {
    uint64_t nodes, edges, strings;
} lsim_wi_gpu_size;

/* What pass 1 found: borrowed arrays of n entries. */
typedef struct lsim_wi_facts {
    const char *in;              /* the source's name, for messages */
    size_t n;                    /* source GPUs */
    const lsim_wi_ident *ids;
    const lsim_wi_gpu_size *size;
    lsim_wi_layout L;            /* the source's layout (lsim_wi_layout_of) */
    const char *sopts;           /* lumosim synth's non-default options, "" for none */
    /* The source model for --tp/--hidden/--ffn/--model: from_model when
     * have_model (lsim_wi_model_of on the first GPU, computed by the caller
     * with the given model), else the shape rule refuses with model_err. */
    int have_model;
    lsim_wi_model from_model;
    char model_err[LSIM_ERR_LEN];
    int model_rc;                /* the code to refuse with when !have_model */
} lsim_wi_facts;

/* What the rules decided (filled by lsim_wi_plan_check). */
typedef struct lsim_wi_decision {
    lsim_wi_layout L, Ln, Ls;    /* source; new; the per-GPU steps' start (source TP, DP; new PP) */
    int used[LSIM_WI_ST_N];      /* steps that run */
    const char *name[LSIM_WI_ST_N]; /* their names in the record ("dp" is "tp" when TP changes) */
    int dp_from1, tp_from1;      /* DP/TP from width 1 on a synthesized store: re-emitted */
    int tp_train;                /* TP from 1 on a traced training step: all-reduces inserted (lsim_wi_train_tp) */
    int pipe;                    /* the pipeline is rebuilt */
    int tpipe;                   /* ... from a trace's recovered layers (else from layer tags) */
    int src_m;                   /* the source's micro-batches (trace pipeline; a tagged one: after pass 2's read) */
    int grad_per_stage;          /* a traced training step's pipeline: DDP's buckets cut on each new stage
                                    (by lsim_wi_trace_pipeline), not on the source */
    lsim_wi_pipe_cfg pcfg;
    lsim_wi_model Mfrom, Mto;
    size_t ngpu_out;
    const char *refused;         /* the rule that refused, NULL when all passed */
} lsim_wi_decision;

/* The rules, in order; lsim_wi_plan_rule_name(i) for i < lsim_wi_plan_nrules(). */
int lsim_wi_plan_nrules(void);
const char *lsim_wi_plan_rule_name(int i);

/* Run every rule in order on (rq, f) and fill d. 0, or LSIM_EARG (a rule
 * refused: d->refused names it, err has the line), LSIM_ENOMEM (a memory
 * check: the result would not fit, LUMOSIM_MEM_LIMIT), or the model's code.
 * Local; reads no file. */
int lsim_wi_plan_check(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err);

/* Size before work: `held` graphs with nodes, edges and strings in all
 * against this process's memory (memlimit.h, LUMOSIM_MEM_LIMIT; LSIM_ENOMEM
 * naming out), and the largest new GPU (gpu_nodes) against the 2^32 - 1
 * nodes a graph can number (LSIM_EARG). Estimates, in doubles. */
int lsim_wi_size_check(const char *out, double held, double nodes, double edges, double strings, double gpu_nodes,
                       lsim_err *err);

/* A trace's layers per forward run (0: not a trace, or none found) and its
 * forward runs; every GPU tagged by lumosim synth. */
int lsim_wi_ident_layers(const lsim_wi_ident *id);
int lsim_wi_ident_runs(const lsim_wi_ident *id);

/* The model-shape memory estimate (memest.h) of a traced or synthesized
 * job as it ran, without a what-if: `lumosim replay --model M`, `build
 * --model M`. The layout comes from the graphs' collectives
 * (lsim_wi_layout_of), the micro-batch from their activations
 * (lsim_wi_model_of, or given->micro_batch), the layers and forward runs
 * from their structure, forward-only or training from what ran; the rest
 * are the estimate's defaults (bf16 weights, fp32 gradients and Adam,
 * flash attention, no recomputation, 1F1B), which *out's JSON does not
 * say and docs/memory.md does. The GPU: the traces' deviceProperties
 * (totalGlobalMem; name) or, when they give no capacity, the built-in spec
 * their device name maps to; else capacity 0 (never OOM).
 * given: the model (hidden > 0), NULL or hidden 0 for a synthesized job's
 * built-in shape. When no estimate can be made (the graphs are some of a
 * larger job, no layer structure, the shape does not fit), *out is left
 * empty (nstages 0) and why (cap bytes) says why; that is not an error.
 * 0, LSIM_ENOMEM. *out owned by the caller (lsim_memest_job_free). Local. */
struct lsim_memest_job;
int lsim_wi_job_memest(lsim_graph *const *gs, size_t n, const lsim_wi_model *given, struct lsim_memest_job *out,
                       char *why, size_t cap, lsim_err *err);

/* --identify's JSON (one object, no newline): layout, collectives, layers and,
 * when roles, every rank's coordinates. Also the record's "structure". */
void lsim_wi_put_identify(FILE *f, const lsim_wi_ident *ids, size_t n, const lsim_wi_layout *L, int roles);

/* ---- the plan object (lumosim_io) */
typedef struct lsim_wi_plan lsim_wi_plan;

/* The refusals that need only the store's metadata (its GPU table and
 * root attributes), made before lsim_wi_plan_open reads any graph, with the
 * line the plan's check would give: rule synth-options on GPU 0's recorded
 * synth options. 0 when nothing is refused or the metadata cannot tell
 * (lsim_wi_plan_open then reads and names what is wrong). Not part of
 * lsim_wi_plan_open: search --from opens a plan with --dp 1 only to read
 * the source's facts, and checks each candidate itself. Local. */
int lsim_wi_plan_precheck(const lsim_wi_request *rq, lsim_err *err);
/* Resolve and pass 1 (see above). *out owned by the caller
 * (lsim_wi_plan_free), also on failure (NULL then). Local. */
int lsim_wi_plan_open(const lsim_wi_request *rq, lsim_wi_plan **out, lsim_err *err);
/* What pass 1 found (the facts lsim_wi_plan_check reads), so that other
 * requests on the same source can be checked without reading it again
 * (lumosim search --from). Borrowed from p. */
const lsim_wi_facts *lsim_wi_plan_facts(const lsim_wi_plan *p);
/* --identify: what pass 1 found, as JSON (lsim_wi_put_identify with roles). */
void lsim_wi_plan_put_identify(const lsim_wi_plan *p, FILE *f);
/* Check, then run: rq->out written (atomically, output.h) or nothing. */
int lsim_wi_plan_run(lsim_wi_plan *p, lsim_err *err);
/* After a successful run: the record of what changed (JSON, one line, no
 * newline), also kept in the new store as its root attribute "whatif".
 * Borrowed; valid until lsim_wi_plan_free. */
const char *lsim_wi_plan_record(const lsim_wi_plan *p);
/* After lsim_wi_plan_run: the new job's OOM line (memest.h: "OOM: pipeline
 * stage S needs ..."), "" when it fits or has no estimate. The new store
 * carries the estimate as root attribute "memory" when the source had one
 * (a synthesized store): re-estimated for the new shape and layout, or the
 * source's stages on the new GPU. Borrowed from p. */
const char *lsim_wi_plan_oom(const lsim_wi_plan *p);
/* After lsim_wi_plan_run, a traced source's GPU memory figures (graph.h
 * mem_*): each new GPU carries its source GPU's (--gpu: on the new GPU's
 * mem_capacity; from DP 1, plus DDP's gradient buckets), and
 * lsim_wi_plan_oom above names the worst GPU past its capacity; a step that
 * changes what a GPU holds (--layers, --tp, --hidden, --ffn, --pp,
 * --schedule, --micro-batches) re-estimates them with --model (mem_source
 * "reestimated": measured plus the model-shape estimate's change, memest.h)
 * or else drops them (mem_source "dropped"), and this is the line saying
 * so ("memory: not carried: --layers changes ..."), "" when carried or
 * re-estimated. The record's "memory" members say the same. Borrowed from
 * p. */
const char *lsim_wi_plan_memory_note(const lsim_wi_plan *p);
void lsim_wi_plan_free(lsim_wi_plan *p);

#endif
