/* The re-synthesis what-if (whatif_steps.h's row "resynth"): --ep, --cp
 * and --fsdp on a synthesized store.
 *
 * Expert, context and fully sharded data parallelism change every layer's
 * kernels, collectives and their order at once (the all-to-alls, ring
 * attention's blocks, FSDP's per-layer gathers). On a store lumosim synth
 * wrote, whose graphs are a function of its recorded arguments
 * (the "synth_args" attribute), the exact edit is to synthesize the job
 * again with the new widths, node for node what lumosim synth makes: the
 * CLI does that (src/cli/resynth.c) before any plan is opened. This row
 * holds the options, their help and the refusal of a plan that is asked
 * for them anyway (a library caller's request): no per-GPU transform of
 * a graph makes these modes. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/whatif_steps.h"

#define OFF(field) offsetof(lsim_wi_request, field)

static int opt_fsdp(lsim_wi_request *rq, const char *v, lsim_err *err)
{
    if (!strcmp(v, "off")) {
        rq->fsdp = LSIM_WI_FSDP_OFF;
        return 0;
    }
    if (!strcmp(v, "full")) {
        rq->fsdp = LSIM_WI_FSDP_FULL;
        return 0;
    }
    static const lsim_wi_opt N = {"--fsdp", NULL, "off, full or a positive integer", 0, 0, LSIM_WI_OPT_LONG, OFF(fsdp),
                                  1L << 24, NULL, NULL, LSIM_WI_RS_OWN};
    if (lsim_wi_opt_apply(rq, &N, v, err))
        return lsim_err_set(err, LSIM_EARG, "--fsdp needs off, full or a shard group of 1 .. %ld GPUs (got '%s')", N.max, v);
    return 0;
}

int lsim_wi_resynth_wanted(const lsim_wi_request *rq)
{
    return rq->ep || rq->etp || rq->cp || rq->fsdp || rq->resynth;
}

static int rule_resynth(const lsim_wi_request *rq, const lsim_wi_facts *f, lsim_wi_decision *d, lsim_err *err)
{
    (void)d;
    if (!lsim_wi_resynth_wanted(rq)) return 0;
    return lsim_err_set(err, LSIM_EARG,
                        "%s: --ep, --etp, --cp, --fsdp and --resynth synthesize a synthesized store's job again (lumosim "
                        "whatif does it from the store's synth_args); no per-GPU transform makes them",
                        f->in);
}

static const lsim_wi_opt O_RESYNTH[] = {
    {"--ep", NULL, "a positive integer", 0, 0, LSIM_WI_OPT_LONG, OFF(ep), 1L << 24, NULL,
     "  --ep N            expert-parallel width N of a synthesized MoE job; with\n"
     "                    --cp and --fsdp, the job is synthesized again from the\n"
     "                    store's recorded synth arguments with the new widths\n"
     "                    (and any --tp, --pp, --dp, --schedule, --micro-batches,\n"
     "                    --layers, --hidden, --ffn, --gpu, --topology given)\n", LSIM_WI_RS_SYNTH},
    {"--etp", NULL, "a positive integer", 0, 0, LSIM_WI_OPT_LONG, OFF(etp), 1L << 24, NULL,
     "  --etp N           expert-tensor-parallel width N of a synthesized MoE job\n"
     "                    (each expert's FFN over N GPUs); re-synthesized as --ep\n", LSIM_WI_RS_SYNTH},
    {"--cp", NULL, "a positive integer", 0, 0, LSIM_WI_OPT_LONG, OFF(cp), 1L << 24, NULL,
     "  --cp N            context-parallel width N (ring attention), the GPUs\n"
     "                    TP x CP x DP x PP; re-synthesized as --ep\n", LSIM_WI_RS_SYNTH},
    {"--fsdp", NULL, "off, full or a positive integer", 0, 0, LSIM_WI_OPT_FN, 0, 0, opt_fsdp,
     "  --fsdp off|full|N FSDP off, over all DP replicas, or shard groups of N;\n"
     "                    re-synthesized as --ep\n", LSIM_WI_RS_OWN},
    {"--resynth", NULL, NULL, 0, 0, LSIM_WI_OPT_SWITCH, OFF(resynth), 0, NULL,
     "  --resynth         any of --tp, --pp, --dp, --schedule, --micro-batches,\n"
     "                    --layers, --hidden, --ffn, --gpu, --topology of a\n"
     "                    synthesized store by synthesizing its job again, as\n"
     "                    --ep (for a job synthesized with options the graph\n"
     "                    edits cannot carry: the distributed optimizer, FSDP,\n"
     "                    CP, host stalls)\n", LSIM_WI_RS_NONE},
};

const lsim_wi_row lsim_wi_row_resynth = {.name = "resynth", .step = -1, .opts = O_RESYNTH,
                                         .nopts = sizeof O_RESYNTH / sizeof *O_RESYNTH, .check_at = 9,
                                         .check = rule_resynth};
