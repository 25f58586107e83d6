/* lumosim synth: the execution graphs of every GPU of one synthesized
 * training iteration into an HDF5 graph store (synth.h, docs/synthesis.md).
 * Everything is checked before anything is generated; nothing is written on
 * an error (the store writes to a temporary name). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lumosim/memlimit.h"
#include "lumosim/synth.h"

const char *const LSIM_USAGE_SYNTH =
    "usage: lumosim synth --model NAME|FILE.json [--layers N --hidden N --ffn N --heads N\n"
    "                     --seq N --vocab N] --tp N --pp N --dp N --micro-batch N\n"
    "                     --global-batch N [--schedule 1f1b|interleaved:V] [--gpus N]\n"
    "                     [--gpu h100|a100|h200|FILE.json] [--topology FILE.json]\n"
    "                     [--no-p2p-sync] [--recompute none|selective|full]\n"
    "                     [--sequence-parallel] [--grad-reduce overlap|after]\n"
    "                     [--distributed-optimizer] [--scatter-gather] [--attention flash|unfused]\n"
    "                     [--no-dropout] [--tp-overlap] [--grad-bytes 2|4]\n"
    "                     [--grad-acc fused|buffer|autograd] [--forward-only]\n"
    "                     [--no-memory-check] [--seed N] [--dp-cost N] -o JOB.h5\n"
    "\n"
    "Writes the execution graphs of every GPU of one Megatron-style training\n"
    "iteration (tensor, pipeline, data parallel) to a graph store that\n"
    "`lumosim sim` simulates. Kernel and communication times come from the cost\n"
    "models (docs/cost-models.md); what is generated: docs/synthesis.md.\n"
    "Prints the estimated memory per GPU of every pipeline stage\n"
    "(docs/memory.md), recorded in the store for lumosim sim and info.\n"
    "\n"
    "  --model NAME     gpt3-15b, gpt3-44b, gpt3-117b, gpt3-175b, or a JSON file\n"
    "                   {\"layers\":..,\"hidden\":..,\"ffn\":..,\"heads\":..}; the shape\n"
    "                   flags override its fields\n"
    "  --tp/--pp/--dp N tensor, pipeline, data parallel widths\n"
    "  --micro-batch N  sequences per micro-batch; --global-batch N sequences per\n"
    "                   iteration (micro-batches per pipeline = global / (micro x dp))\n"
    "  --schedule S     1f1b (default) or interleaved:V (V model chunks per GPU)\n"
    "  --gpus N         check that TP x PP x DP = N\n"
    "  --gpu G          GPU parameters: built-in name or JSON file (default h100)\n"
    "  --topology F     network JSON file (default: 8 GPUs per node, the GPU's\n"
    "                   NVLink and NIC figures)\n"
    "  --no-p2p-sync    the CPU does not wait for pipeline send/recv groups\n"
    "                   (Megatron's batch_p2p_sync off)\n"
    "  --recompute R    activation recomputation: none (default), selective (the\n"
    "                   attention core), full (each layer's forward again before\n"
    "                   its backward)\n"
    "  --sequence-parallel  TP all-reduces become reduce-scatter + all-gather\n"
    "  --grad-reduce G  overlap (default: gradient buckets reduced during the last\n"
    "                   backward) or after (once the pipeline has flushed)\n"
    "  --distributed-optimizer  gradient reduce-scatter, optimizer on 1/DP of the\n"
    "                   parameters, parameter all-gather\n"
    "  --scatter-gather pipeline sends carry 1/TP of the activations, all-gathered\n"
    "                   over NVLink after\n"
    "  --attention A    flash (default) or unfused (batched GEMMs, softmax and\n"
    "                   dropout kernels, as Megatron without Transformer Engine)\n"
    "  --no-dropout     unfused attention without its dropout kernel\n"
    "  --tp-overlap     the backward TP all-reduce runs during the weight gradient\n"
    "  --grad-bytes N   bytes per gradient in the DP reduction (default 4: fp32)\n"
    "  --grad-acc A     how each micro-batch's weight gradients are summed: fused\n"
    "                   (default: inside the weight-gradient GEMM, no kernel),\n"
    "                   buffer (an add per parameter tensor into the main-gradient\n"
    "                   buffer every micro-batch: Megatron's 2021 local DDP) or\n"
    "                   autograd (PyTorch's AccumulateGrad: an add from the\n"
    "                   second micro-batch on)\n"
    "  --forward-only   forward passes only (no backward, no optimizer)\n"
    "  --no-memory-check  synthesize even when the job needs more memory per GPU\n"
    "                   than the GPU has (refused by default); it is flagged OOM\n"
    "                   on stderr, in the store and by lumosim sim\n"
    "  --seed N         the draws of host stalls and of how late each GPU's host\n"
    "                   enters the step and returns from its end (GPU specs\n"
    "                   with host_stall_prob; default 0)\n"
    "  --dp-cost N      time the data-parallel collectives (and the distributed\n"
    "                   optimizer's shards) as in N replicas: a job too large to\n"
    "                   simulate whole, with fewer replicas (N >= --dp)\n"
    "  --stats          print generation figures to stderr\n"
    "  -o JOB.h5        the graph store to write\n";

/* The memory estimate once the store is written: one line on stdout per
 * GPU group of a stage, and an OOM warning on stderr naming the stage, the
 * estimate and the capacity (docs/memory.md). */
static void print_memory(const lsim_memest_job *j)
{
    const lsim_memest_stage *w = &j->stages[j->worst];
    printf("memory per GPU (estimate): peak %.2f GB on pipeline stage %d (GPUs %d-%d)", w->total / 1e9, j->worst,
           j->worst * j->tp * j->dp, (j->worst + 1) * j->tp * j->dp - 1);
    if (j->capacity > 0) printf("; the %s has %.2f GB%s\n", j->gpu, j->capacity / 1e9, j->oom ? ": OOM" : "");
    else printf("; the %s's capacity is unknown\n", j->gpu);
    for (int s = 0; s < j->nstages; s++) {
        const lsim_memest_stage *g = &j->stages[s];
        printf("  stage %d: %.2f GB = weights %.2f + gradients %.2f + optimizer %.2f + activations %.2f (%d in "
               "flight) + communication %.2f + reserve %.2f%s\n",
               s, g->total / 1e9, g->weights / 1e9, g->grads / 1e9, g->optim / 1e9, g->activations / 1e9, g->inflight,
               g->comm / 1e9, g->reserve / 1e9, j->capacity > 0 && g->total > j->capacity ? "  OOM" : "");
    }
    fflush(stdout);
    if (j->oom) {
        char line[256];
        lsim_memest_oom_line(j, line, sizeof line);
        fprintf(stderr, "lumosim: warning: %s (synthesized anyway: --no-memory-check)\n", line);
    }
}

static int is_file_name(const char *s) { return strchr(s, '/') || strstr(s, ".json"); }

int lsim_cli_synth(int argc, char **argv)
{
    lsim_synth_cfg c;
    lsim_synth_cfg_default(&c);
    int status = 0, rc = 0;
    lsim_err err = {0};
    lsim_graph **gs = NULL;
    lsim_store_writer *w = NULL;
    size_t ngpu = 0, made = 0;
    char *cmd = NULL;
    lsim_cli_synth_args sa;
    lsim_memest_job mj = {0};
    char *mjson = NULL;
    int p = lsim_cli_parse_synth(argc, argv, LSIM_USAGE_SYNTH, &sa);
    if (p <= 0) return p < 0 ? 2 : 0;
    const char *model = sa.model, *gpu = sa.gpu, *topo = sa.topo, *out = sa.out;
    int *shape = sa.shape, stats = sa.stats;
    c.tp = sa.tp;
    c.pp = sa.pp;
    c.dp = sa.dp;
    c.micro_batch = sa.micro_batch;
    c.global_batch = sa.global_batch;
    if (sa.gpus) c.gpus = sa.gpus;
    if (sa.vstages) c.vstages = sa.vstages;
    if (sa.no_p2p_sync) c.p2p_sync = 0;
    if (sa.recompute >= 0) c.recompute = sa.recompute;
    if (sa.grad_reduce >= 0) c.grad_reduce = sa.grad_reduce;
    if (sa.attention >= 0) c.attention = sa.attention;
    if (sa.grad_bytes >= 0) c.grad_bytes = sa.grad_bytes;
    if (sa.grad_acc >= 0) c.grad_acc = sa.grad_acc;
    c.seq_parallel = sa.seq_parallel;
    c.dist_opt = sa.dist_opt;
    c.scatter_gather = sa.scatter_gather;
    c.dropout = !sa.no_dropout;
    c.tp_overlap = sa.tp_overlap;
    c.forward_only = sa.forward_only;
    c.mem_check = !sa.no_mem_check;
    c.seed = (uint64_t)sa.seed;
    c.dp_cost = sa.dp_cost;
    /* inputs: model, GPU, topology; then the whole configuration is checked
     * before anything is generated */
    rc = is_file_name(model) ? lsim_model_load(model, &c.model, &err) : lsim_model_builtin(model, &c.model, &err);
    int *dst[6] = {&c.model.layers, &c.model.hidden, &c.model.ffn, &c.model.heads, &c.model.seq, &c.model.vocab};
    for (int k = 0; !rc && k < 6; k++)
        if (shape[k] > 0) *dst[k] = shape[k];
    if (!rc && gpu) {
        rc = is_file_name(gpu) ? lsim_gpu_spec_load(gpu, &c.gpu, &err) : lsim_gpu_spec_builtin(gpu, &c.gpu, &err);
        if (!rc) lsim_topology_default(&c.gpu, &c.topo);
    }
    if (!rc && topo) rc = lsim_topology_load(topo, &c.topo, &err);
    if (!rc) rc = lsim_synth_check(&c, &err);
    if (!rc) {
        /* the per-GPU memory estimate, recorded in the store (root attribute
         * "memory", docs/memory.md) for sim and info; with --no-memory-check
         * a job that does not fit is synthesized, and flagged OOM */
        lsim_memest_in mi;
        lsim_synth_memest_in(&c, &mi);
        rc = lsim_memest_job_of(&mi, c.gpu.name, c.gpu.mem_capacity, &mj, &err);
        if (!rc) rc = lsim_memest_job_json(&mj, &mjson, &err);
    }
    if (!rc) {
        char *ins[3] = {(char *)model, (char *)gpu, (char *)topo};
        lsim_io_file outs[1] = {{out, "-o", 1, LSIM_OUT_STORE}};
        rc = lsim_cli_check_io(ins, 3, outs, 1, &err);
    }
    if (rc) goto done;
    {
        size_t len = 16;
        for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
        if (!(cmd = malloc(len))) goto nomem;
        strcpy(cmd, "lumosim synth");
        for (int i = 0; i < argc; i++) strcat(strcat(cmd, " "), argv[i]);
    }
    ngpu = lsim_synth_ngpus(&c);
    if (stats) lsim_cli_tty_progress_off();
    /* Streamed: GPUs are generated and written a batch at a time
     * (lsim_store_writer_*), so memory holds one batch, never the job. The
     * batch is sized from the first GPU: about 256 MiB of graphs. */
    {
        double t0 = lsim_now_s(), tgen = 0, twrite = 0;
        uint64_t nodes = 0, edges = 0;
        size_t batch = 1;
        lsim_store_write_opts wo = {cmd, NULL, 0, {0}};
        rc = lsim_store_writer_open(out, &wo, &w, &err);
        /* the job's GPU, so that a what-if of it starts from the right one */
        if (!rc) rc = lsim_store_writer_set_attr(w, "device", c.gpu.name, &err);
        if (!rc) rc = lsim_store_writer_set_attr(w, "memory", mjson, &err);
        for (size_t i = 0; !rc && i < ngpu;) {
            size_t nb = i == 0 ? 1 : (ngpu - i < batch ? ngpu - i : batch);
            if (!gs && !(gs = calloc(ngpu < 4096 ? ngpu : 4096, sizeof *gs))) goto nomem;
            double g0 = lsim_now_s();
            made = 0;
            for (size_t k = 0; k < nb && !rc; k++) {
                rc = lsim_synth_gpu(&c, (uint32_t)(i + k), NULL, &gs[k], &err);
                if (!rc) {
                    made++;
                    nodes += gs[k]->n;
                    edges += gs[k]->nedges;
                }
            }
            if (!rc && i == 0) {
                uint64_t per = gs[0]->n * 80 + gs[0]->nedges * 26 + 1;
                batch = (size_t)((256u << 20) / per);
                if (batch < 1) batch = 1;
                if (batch > 4096) batch = 4096;
                /* the store on disk: about 8 bytes per node and edge, compressed */
                uint64_t need = (uint64_t)ngpu * (gs[0]->n + gs[0]->nedges) * 8;
                if (lsim_disk_check(out, need, &err)) rc = LSIM_EIO;
            }
            double g1 = lsim_now_s();
            lsim_cli_tty_progress(i == 0, "synth: %zu of %zu GPUs written to %s", i + made, ngpu, out);
            if (!rc) rc = lsim_store_writer_add(w, gs, made, NULL, &err);
            twrite += lsim_now_s() - g1;
            tgen += g1 - g0;
            for (size_t k = 0; k < made; k++) lsim_graph_free(gs[k]);
            made = 0;
            i += nb;
        }
        if (!rc) {
            double c0 = lsim_now_s();
            lsim_cli_tty_progress(1, "synth: closing %s", out);
            rc = lsim_store_writer_close(w, &err);
            lsim_cli_tty_progress_done();
            w = NULL;
            twrite += lsim_now_s() - c0;
        }
        if (!rc) print_memory(&mj);
        if (!rc && stats) {
            lsim_synth_mem mm;
            lsim_synth_memory(&c, &mm);
            fprintf(stderr,
                    "lumosim: stats: memory per GPU on stage %d: %.2f GB (weights, gradients, optimizer state %.2f "
                    "GB; activations %.2f GB, %d micro-batch chunks in flight); the GPU has %.2f GB\n",
                    mm.stage, mm.total / 1e9, mm.states / 1e9, mm.activations / 1e9, mm.inflight,
                    c.gpu.mem_capacity / 1e9);
        }
        if (!rc && stats)
            fprintf(stderr,
                    "lumosim: stats: synth %zu GPUs (TP %d PP %d DP %d, %d micro-batches, V %d): %llu nodes, %llu "
                    "edges; generate %.2f s, write %.2f s, total %.2f s (batches of %zu GPUs)\n",
                    ngpu, c.tp, c.pp, c.dp, lsim_synth_microbatches(&c), c.vstages, (unsigned long long)nodes,
                    (unsigned long long)edges, tgen, twrite, lsim_now_s() - t0, batch);
    }
    goto done;
nomem:
    rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
done:
    lsim_cli_tty_progress_done();
    if (rc) {
        lsim_cli_error("%s", err.msg[0] ? err.msg : "failed");
        status = 1;
    }
    for (size_t i = 0; gs && i < made; i++) lsim_graph_free(gs[i]);
    lsim_store_writer_abort(w); /* NULL after a close */
    free(gs);
    free(cmd);
    free(mjson);
    lsim_memest_job_free(&mj);
    return status;
}
