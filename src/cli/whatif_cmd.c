/* lumosim whatif: parse, call the what-if plan (whatif_plan.h: resolve,
 * identify, check, run), print. The record of what changed is printed and
 * kept in the new store as its root attribute "whatif". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lumosim/graph.h"
#include "lumosim/whatif_plan.h"

const char *const LSIM_USAGE_WHATIF =
    "usage: lumosim whatif JOB.h5 [--dp N] [--tp N] [--layers N] [--hidden N] [--ffn N]\n"
    "                     [--model NAME|FILE] [--micro-batch N] [--topology FILE] [--gpu NAME|FILE]\n"
    "                     [--from-gpu NAME|FILE] [--from-topology FILE]\n"
    "                     [--slow-gpu RANK:FACTOR]... [--jitter SIGMA|trace] [--seed N]\n"
    "                     [--pp N] [--schedule 1f1b|interleaved:V] [--micro-batches N]\n"
    "                     [--no-shared-structure] -o NEW.h5\n"
    "       lumosim whatif JOB.h5 --identify\n"
    "\n"
    "Transforms the job in the graph store JOB.h5 (lumosim build or synth) and\n"
    "writes the transformed job to NEW.h5 for `lumosim sim`. What changed (nodes\n"
    "added, removed, re-timed per kind) is printed as JSON and kept in NEW.h5\n"
    "(root attribute whatif; lumosim info shows it). docs/whatif.md describes\n"
    "each transformation.\n"
    "\n"
    "  --identify        print what was found (layout, group classes, layers,\n"
    "                    each rank's role) as JSON and write nothing (so -o\n"
    "                    and the transformation options are refused with it)\n"
    "  --dp N            data-parallel width N (per-replica batch kept; from\n"
    "                    DP 1 gradient buckets are inserted: synthesized\n"
    "                    stores by their layer tags, traces as PyTorch DDP\n"
    "                    buckets their AccumulateGrad sizes (record_shapes))\n"
    "  --tp N            tensor-parallel width N: each layer's kernels\n"
    "                    re-timed for the new shards, TP all-reduces re-timed\n"
    "                    for the new group (from TP 1, synthesized stores:\n"
    "                    inserted where synth puts them; traced training\n"
    "                    steps with layer annotations: where Megatron-LM puts\n"
    "                    them, sized by --model and --micro-batch); DP kept\n"
    "                    unless --dp\n"
    "  --layers N        N layers: a synthesized store's layer-tagged nodes, or\n"
    "                    the layers a trace repeats (see --identify), cut and\n"
    "                    copied with their collectives; on a training step\n"
    "                    with layer annotations, each layer's forward and\n"
    "                    backward work (autograd's Sequence numbers) and its\n"
    "                    gradients, so DDP's buckets follow\n"
    "  --hidden N        model width N (attention width heads x head_dim kept);\n"
    "                    on a trace, give its shape with --model\n"
    "  --ffn N           MLP width N\n"
    "  --pp N            pipeline stages N: layers reassigned, send/recv\n"
    "                    inserted, schedule rebuilt (synthesized stores; on a\n"
    "                    forward-only trace with one micro-batch, its layers\n"
    "                    cut into stages with a transfer at each boundary; on\n"
    "                    a DP-1 training step of one micro-batch, its forward\n"
    "                    and backward layers into 1F1B stages: give --model\n"
    "                    and --micro-batch when its layers have no TP\n"
    "                    all-reduce)\n"
    "  --schedule S      1f1b or interleaved:V (default: the source's)\n"
    "  --micro-batches N micro-batches per pipeline (default: the source's;\n"
    "                    with --dp, a fixed global batch; on a forward-only\n"
    "                    trace, its forward pass once per micro-batch; on a\n"
    "                    training step, its forward and backward in 1F1B order)\n"
    "  --model M         the source's model shape (built-in name or JSON as for\n"
    "                    lumosim synth; default: the name a synth store carries);\n"
    "                    on a trace with [memory] events, also re-estimates the\n"
    "                    peaks a layer/width/pipeline change would drop\n"
    "  --micro-batch N   the source's micro-batch size (default: from the\n"
    "                    activations' size, else 1)\n"
    "  --trace-layers N  a trace's layers per micro-batch, overriding the count\n"
    "                    found from its repeating kernel structure\n"
    "  --topology FILE   the network to re-time collectives for\n"
    "  --gpu G           another GPU (built-in name or JSON): compute kernels\n"
    "                    re-timed, and its default network unless --topology\n"
    "  --from-gpu G      the GPU the source ran on (default: the traces'\n"
    "                    deviceProperties; needed with --gpu without them)\n"
    "  --from-topology F the source's network (default: --from-gpu's default)\n"
    "  --slow-gpu R:F    GPU rank R's compute kernels last F times as long\n"
    "                    (repeatable, once per GPU; any other option once)\n"
    "                    (F in 0.001..1000)\n"
    "  --jitter S|trace  per-kernel noise: relative std-dev S (0..10), or each\n"
    "                    kernel name's own spread in the source\n"
    "  --seed N          noise seed (default 1)\n"
    "  --batch N         source GPUs read at a time while identifying (64)\n"
    "  --no-shared-structure  write every GPU's node, edge and string rows, even\n"
    "                    where a GPU's equal those of its pipeline stage's\n"
    "                    first GPU (docs/hdf5-schema.md, \"Shared structure\")\n"
    "  -o NEW.h5         the graph store to write\n"
    "\n"
    "Ranges (outside: exit 2): --dp, --tp, --layers, --micro-batch,\n"
    "--micro-batches, --trace-layers, --batch 1..1000000; --pp 1..100000;\n"
    "--hidden, --ffn 1..100000000; --seed 1..2147483647; --slow-gpu F\n"
    "0.001..1000; --jitter S 0..10. The result is sized first: one that\n"
    "would not fit in memory (LUMOSIM_MEM_LIMIT) is refused before any work.\n"
    "\n"
    "A trace's own memory figures ([memory] events) follow each new GPU:\n"
    "carried by --dp (from DP 1 plus DDP's gradient buckets), the network,\n"
    "--slow-gpu and --jitter; carried onto the new GPU's memory by --gpu (a\n"
    "peak past it: warning: OOM); dropped, with the reason, by --layers, --tp,\n"
    "--hidden, --ffn, --pp, --schedule, --micro-batches unless --model\n"
    "re-estimates them (docs/memory.md, \"A traced job after a what-if\").\n";

_Static_assert(LSIM_CLI_MAXSLOW == LSIM_WI_MAXSLOW, "--slow-gpu limits of the parser and the plan");

/* "lumosim whatif ARGS...", kept as the new store's provenance */
static char *command_line(int argc, char **argv)
{
    size_t len = 16;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    char *cmd = malloc(len);
    if (!cmd) return NULL;
    strcpy(cmd, "lumosim whatif");
    for (int i = 0; i < argc; i++) strcat(strcat(cmd, " "), argv[i]);
    return cmd;
}

/* Size before work (issue 40): the new job's GPUs (the source's layout
 * with --tp/--pp/--dp applied) times a source GPU's nodes on average,
 * against the work cap (cli.h), and its GPUs against the most a store
 * holds (LSIM_WORLD_MAX, graph.h; not overridable: every reader would
 * refuse the store). From pass 1's metadata, before any GPU is made. */
static int whatif_cap(const lsim_cli_whatif_args *wa, const lsim_wi_facts *f, lsim_err *err)
{
    double nodes = 0;
    for (size_t i = 0; i < f->n; i++) nodes += (double)f->size[i].nodes;
    double per = f->n ? nodes / (double)f->n : 0;
    double gpus = (double)(wa->tp ? wa->tp : f->L.tp) * (double)(wa->pp ? wa->pp : f->L.pp) *
                  (double)(wa->dp ? wa->dp : f->L.dp);
    if (gpus > LSIM_WORLD_MAX)
        return lsim_err_set(err, LSIM_EARG, "%s: the new job would have %.0f GPUs, over the %d (2^20) a store holds "
                                            "(docs/reliability.md, \"Work caps\"): use a smaller --dp, --tp or --pp",
                            wa->out ? wa->out : wa->in, gpus, LSIM_WORLD_MAX);
    char how[160];
    snprintf(how, sizeof how, "%.0f GPUs x %.0f nodes a GPU", gpus, per);
    return lsim_cli_work_cap(wa->out ? wa->out : wa->in, gpus * per, how, "use a smaller --dp, --tp or --pp", err);
}

int lsim_cli_whatif(int argc, char **argv)
{
    lsim_cli_whatif_args wa;
    lsim_wi_request rq;
    lsim_wi_plan *plan = NULL;
    lsim_err err = {0};
    char *cmd = NULL;
    int rc = 0, p = lsim_cli_parse_whatif(argc, argv, LSIM_USAGE_WHATIF, &wa);
    if (p <= 0) return p < 0 ? 2 : 0;
    if (wa.trace_layers) lsim_wi_set_trace_layers((int)wa.trace_layers);
    memset(&rq, 0, sizeof rq);
    rq.in = wa.in, rq.out = wa.identify ? NULL : wa.out, rq.topo = wa.topo, rq.gpu = wa.gpu;
    rq.from_gpu = wa.from_gpu, rq.from_topo = wa.from_topo, rq.model = wa.model, rq.jitter = wa.jitter;
    rq.dp = wa.dp, rq.tp = wa.tp, rq.layers = wa.layers, rq.hidden = wa.hidden, rq.ffn = wa.ffn;
    rq.micro_batch = wa.micro_batch, rq.pp = wa.pp, rq.vstages = wa.vstages, rq.micro_batches = wa.micro_batches;
    rq.seed = wa.seed, rq.batch = wa.batch, rq.sigma = wa.sigma, rq.identify = wa.identify, rq.nslow = wa.nslow;
    rq.no_share = wa.no_share;
    for (int k = 0; k < wa.nslow; k++) rq.slow_rank[k] = wa.slow_rank[k], rq.slow_f[k] = wa.slow_f[k];
    {
        /* every file named, before any is read */
        char *ins[6] = {(char *)wa.in, (char *)wa.from_gpu, (char *)wa.from_topo, (char *)wa.gpu, (char *)wa.topo,
                        (char *)wa.model};
        lsim_io_file outs[1] = {{rq.out, "-o", 1, LSIM_OUT_STORE}};
        if ((rc = lsim_cli_check_io(ins, 6, outs, 1, &err))) goto done;
    }
    if (!(rq.cmd = cmd = command_line(argc, argv))) {
        rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
        goto done;
    }
    lsim_cli_tty_progress(1, "whatif: reading %s", wa.in);
    rc = lsim_wi_plan_open(&rq, &plan, &err);
    lsim_cli_tty_progress_done();
    if (rc) goto done;
    if (wa.identify) {
        lsim_wi_plan_put_identify(plan, stdout);
        fputc('\n', stdout);
        goto done;
    }
    if ((rc = whatif_cap(&wa, lsim_wi_plan_facts(plan), &err))) goto done;
    lsim_cli_tty_progress(1, "whatif: transforming and writing %s", rq.out ? rq.out : "");
    rc = lsim_wi_plan_run(plan, &err);
    lsim_cli_tty_progress_done();
    if (rc) goto done;
    fputs(lsim_wi_plan_record(plan), stdout);
    fputc('\n', stdout);
    /* as synth and sim do: a job past its GPUs' memory is flagged, not refused */
    if (lsim_wi_plan_oom(plan)[0]) fprintf(stderr, "lumosim: warning: %s\n", lsim_wi_plan_oom(plan));
    /* a traced figure that no longer applies is said to be gone, not left out silently */
    if (lsim_wi_plan_memory_note(plan)[0]) fprintf(stderr, "lumosim: note: %s\n", lsim_wi_plan_memory_note(plan));
done:
    if (rc) lsim_cli_error("%s", err.msg[0] ? err.msg : "failed");
    lsim_wi_plan_free(plan);
    free(cmd);
    return rc ? 1 : 0;
}
