/* lumosim synth: the execution graphs of every GPU of one synthesized
 * training iteration into an HDF5 graph store (synth.h, docs/synthesis.md).
 * Everything is checked before anything is generated; nothing is written on
 * an error (the store writes to a temporary name). Under mpirun the GPUs
 * are split over the ranks and written collectively (synth_gpus). */
#define _DEFAULT_SOURCE /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "lumosim/memlimit.h"
#include "lumosim/synth.h"

const char *const LSIM_USAGE_SYNTH =
    "usage: lumosim synth --model NAME|FILE.json [--layers N --hidden N --ffn N --heads N\n"
    "                     --seq N --vocab N] --tp N --pp N --dp N --micro-batch N\n"
    "                     --global-batch N [--schedule 1f1b|interleaved:V] [--gpus N]\n"
    "                     [--gpu NAME|FILE.json] [--topology FILE.json]\n"
    "                     [--no-p2p-sync] [--recompute none|selective|full|op]\n"
    "                     [--sequence-parallel] [--grad-reduce overlap|after]\n"
    "                     [--distributed-optimizer] [--scatter-gather] [--attention flash|unfused]\n"
    "                     [--no-dropout] [--tp-overlap] [--grad-bytes 2|4]\n"
    "                     [--grad-acc fused|buffer|autograd] [--forward-only]\n"
    "                     [--precision bf16|fp8] [--fp8-scaling current|delayed]\n"
    "                     [--fp8-all-gather]\n"
    "                     [--kernels fused|eager] [--attention-kernel spec|fa2|fa3]\n"
    "                     [--loss fused|eager]\n"
    "                     [--no-memory-check] [--seed N] [--dp-cost N] [--fsdp N] [--cp N]\n"
    "                     [--ep N] [--etp N] [--routing-skew Z] [--routing-hist FILE]\n"
    "                     [--routing-dirichlet A] [--capacity-factor C]\n"
    "                     [--pad-to-capacity] [--pp-layers SPLIT]\n"
    "                     [--no-shared-structure] -o JOB.h5\n"
    "\n"
    "Writes the execution graphs of every GPU of one Megatron-style training\n"
    "iteration (tensor, pipeline, data parallel) to a graph store that\n"
    "`lumosim sim` simulates. Kernel and communication times come from the cost\n"
    "models (docs/cost-models.md); what is generated: docs/synthesis.md.\n"
    "Prints the estimated memory per GPU of every pipeline stage\n"
    "(docs/memory.md), recorded in the store for lumosim sim and info.\n"
    "Under mpirun each rank synthesizes a share of the GPUs and the store is\n"
    "written collectively, the same as the serial one.\n"
    "\n"
    "  --model NAME     gpt3-15b, gpt3-44b, gpt3-117b, gpt3-175b, llama3-8b,\n"
    "                   llama3-70b, llama3.1-405b (data/models), or a JSON file\n"
    "                   {\"layers\":..,\"hidden\":..,\"ffn\":..,\"heads\":..,\"kv_heads\":..,\n"
    "                   \"mlp\":\"swiglu\",...} (docs/models.md); the shape flags\n"
    "                   override its fields\n"
    "  --tp/--pp/--dp N tensor, pipeline, data parallel widths\n"
    "  --micro-batch N  sequences per micro-batch; --global-batch N sequences per\n"
    "                   iteration (micro-batches per pipeline = global / (micro x dp))\n"
    "  --schedule S     1f1b (default) or interleaved:V (V model chunks per GPU)\n"
    "  --pp-layers SPLIT  the layers over the PP x V virtual stages when they do\n"
    "                   not divide evenly: even (default), embed-loss (Megatron's\n"
    "                   account_for_embedding/loss_in_pipeline_split: the\n"
    "                   embedding and the loss count as a layer each), middle\n"
    "                   (torchtitan: the extra layers on the stages after the\n"
    "                   first) or a list N,N,... per virtual stage\n"
    "  --gpus N         check that TP x PP x DP = N\n"
    "  --gpu G          GPU parameters: h100, a100, h200, h100-96gb, b200, gb200\n"
    "                   (data/gpu) or a JSON file (default h100)\n"
    "  --topology F     network JSON file (default: 8 GPUs per node, the GPU's\n"
    "                   NVLink and NIC figures)\n"
    "  --no-p2p-sync    the CPU does not wait for pipeline send/recv groups\n"
    "                   (Megatron's batch_p2p_sync off)\n"
    "  --recompute R    activation recomputation: none (default), selective (the\n"
    "                   attention core), full (each layer's forward again before\n"
    "                   its backward), op (torchtitan's selective per-op\n"
    "                   checkpointing: every second matmul of a layer and its\n"
    "                   element-wise ops again before its backward)\n"
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
    "  --precision P    bf16 (default) or fp8: the layers' linear GEMMs at the\n"
    "                   GPU's dense FP8 peak (peak_flops_fp8; refused without\n"
    "                   it), with a cast kernel per GEMM input (docs/models.md)\n"
    "  --fp8-scaling S  current (default: an amax reduction before each cast) or\n"
    "                   delayed (the previous steps' amax; the history updated\n"
    "                   once per scaled tensor per step)\n"
    "  --attention-kernel K  spec (default: the GPU spec's attention curve), fa2\n"
    "                   or fa3: FlashAttention-2 or -3's curve from the spec\n"
    "                   (attn_fa2_* / attn_fa3_*: the Hopper parts' fits to the\n"
    "                   FlashAttention-3 paper; PyTorch's SDPA runs FA2)\n"
    "  --fp8-all-gather with --fsdp: each layer's linear weights cast to FP8\n"
    "                   before their all-gather, scales precomputed once a\n"
    "                   step (torchao's enable_fsdp_float8_all_gather and\n"
    "                   precompute_float8_dynamic_scale_for_fsdp)\n"
    "  --kernels K      fused (default: norms, RoPE, SwiGLU and the loss as fused\n"
    "                   kernels, as Transformer Engine or torch.compile) or eager\n"
    "                   (PyTorch eager running torchtitan's Llama op by op, fp32\n"
    "                   norms, RoPE and loss; docs/synthesis.md)\n"
    "  --loss L         fused (default: one fused cross entropy on the logits,\n"
    "                   as Megatron) or eager (PyTorch's cross_entropy on an\n"
    "                   fp32 copy of the logits, op by op: torchtitan's loss,\n"
    "                   which torch.compile of its blocks leaves eager; 12 bytes\n"
    "                   a logit at its peak, docs/memory.md); --kernels eager\n"
    "                   implies it\n"
    "  --no-memory-check  synthesize even when the job needs more memory per GPU\n"
    "                   than the GPU has (refused by default); it is flagged OOM\n"
    "                   on stderr, in the store and by lumosim sim\n"
    "  --no-shared-structure  write every GPU's node and edge rows, even where\n"
    "                   they equal those of the first GPU of its pipeline stage\n"
    "                   (by default such a GPU's rows are that GPU's: a store and\n"
    "                   a simulation's memory DP x TP times smaller, the same\n"
    "                   results; docs/hdf5-schema.md \"Shared structure\")\n"
    "  --seed N         the draws of host stalls and of how late each GPU's host\n"
    "                   enters the step and returns from its end (GPU specs\n"
    "                   with host_stall_prob; default 0)\n"
    "  --dp-cost N      time the data-parallel collectives (and the distributed\n"
    "                   optimizer's shards, FSDP's groups) as in N replicas: a job\n"
    "                   too large to simulate whole, with fewer replicas (N >= --dp)\n"
    "  --fsdp N         FSDP (PyTorch FSDP2, torchtitan): parameters, gradients and\n"
    "                   optimizer state sharded over groups of N of the DP\n"
    "                   replicas (N = DP full shard, N < DP hybrid shard)\n"
    "  --cp N           context parallelism: the sequence split over N GPUs,\n"
    "                   ring attention (TP x CP x DP x PP GPUs)\n"
    "  --ep N           expert parallelism (MoE models): each MoE layer's experts\n"
    "                   split over groups of N of a stage's TP x CP x DP GPUs,\n"
    "                   tokens dispatched and combined by all-to-alls\n"
    "  --etp N          expert-tensor parallelism: each expert's FFN split over\n"
    "                   N GPUs (the stage's GPUs as ETP x EP x EDP, ETP fastest),\n"
    "                   their tokens all-gathered before the experts and the\n"
    "                   outputs reduce-scattered after (Megatron's\n"
    "                   --expert-tensor-parallel-size)\n"
    "  --routing-skew Z tokens per expert drawn per MoE layer and micro-batch\n"
    "                   from a Zipf law of exponent Z (seeded by --seed);\n"
    "                   0, the default: balanced routing\n"
    "  --routing-hist F a measured histogram of tokens per expert: rows of\n"
    "                   one number per expert (counts or shares), one row for\n"
    "                   every MoE layer or one per MoE layer\n"
    "  --routing-dirichlet A  shares drawn per MoE layer and micro-batch from\n"
    "                   Dirichlet(A x experts x p), p the histogram's row or\n"
    "                   uniform: large A stays near p, small A is skewed\n"
    "  --capacity-factor C  each rank sends an expert at most ceil(its tokens x\n"
    "                   top_k / experts x C) tokens, the rest dropped (Megatron's\n"
    "                   moe_expert_capacity_factor); 0, the default: dropless\n"
    "  --pad-to-capacity  every expert's input padded to its capacity (static\n"
    "                   sizes: no counts exchange, no host sync)\n"
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

/* Routing that is not balanced: where it loads the step most, as the
 * "routing" attribute (JSON) and the line synth prints; both empty when the
 * routing is balanced. */
static int routing_summary(const lsim_synth_cfg *c, char *json, size_t cap, char *line, size_t lcap, lsim_err *err)
{
    lsim_synth_routing_sum r;
    json[0] = line[0] = 0;
    if (lsim_synth_routing_summary(c, &r)) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (!r.on) return 0;
    snprintf(json, cap,
             "{\"gpu\":%lld,\"stage\":%d,\"ep_group\":%d,\"ep_rank\":%d,\"gpu_load\":%.6g,\"expert\":%d,"
             "\"expert_gpu\":%lld,\"layer\":%d,\"micro_batch\":%d,\"expert_load\":%.6g}",
             (long long)r.gpu, r.stage, r.group, r.ep_rank, r.gpu_load, r.expert, (long long)r.expert_gpu, r.layer, r.mb,
             r.expert_load);
    snprintf(line, lcap,
             "routing: the most loaded GPU is %lld (EP rank %d of group ep:%d:%d), %.2fx the mean GPU's token copies "
             "over the step; the most loaded expert is %d on GPU %lld, %.2fx its balanced share (layer %d, "
             "micro-batch %d)\n",
             (long long)r.gpu, r.ep_rank, r.stage, r.group, r.gpu_load, r.expert, (long long)r.expert_gpu, r.expert_load,
             r.layer, r.mb);
    return 0;
}

static int is_file_name(const char *s) { return strchr(s, '/') || strstr(s, ".json"); }

/* Under mpirun every rank parses the same arguments and reaches the same
 * verdict; rank 0 alone says it (the usage error, --help): the others'
 * standard output and error point at /dev/null meanwhile. */
static int parse_args(const lsim_world *m, int argc, char **argv, lsim_cli_synth_args *sa)
{
    int save[2] = {-1, -1}, nul = m->rank ? open("/dev/null", O_WRONLY) : -1;
    if (nul >= 0) {
        fflush(stdout);
        fflush(stderr);
        save[0] = dup(1);
        save[1] = dup(2);
        dup2(nul, 1);
        dup2(nul, 2);
        close(nul);
    }
    int p = lsim_cli_parse_synth(argc, argv, LSIM_USAGE_SYNTH, sa);
    for (int k = 0; k < 2; k++)
        if (save[k] >= 0) {
            fflush(k ? stderr : stdout);
            dup2(save[k], k + 1);
            close(save[k]);
        }
    return p;
}

/* Under mpirun, a failure of any rank is every rank's (the lowest failing
 * rank's message); serial: rc. Collective when m->on. */
static int agree(const lsim_world *m, int rc, lsim_err *err)
{
    return lsim_world_agree(m, rc, err);
}

/* The memory one batch of graphs may take (synth_gpus): 256 MiB, or
 * LUMOSIM_SYNTH_BATCH_MB (tests make it small, so that a small job is
 * written in many rounds). Local. */
static int batch_bytes(uint64_t *out, lsim_err *err)
{
    const char *e = getenv("LUMOSIM_SYNTH_BATCH_MB");
    *out = (uint64_t)256 << 20;
    if (!e || !*e) return 0;
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(e, &end, 10);
    if (errno || *end || e[0] == '-' || v < 1 || v > (1ul << 20))
        return lsim_err_set(err, LSIM_EARG, "LUMOSIM_SYNTH_BATCH_MB: '%s' is not a number of MiB from 1 to 1048576", e);
    *out = (uint64_t)v << 20;
    return 0;
}

/* Figures of the generation (--stats), this rank's. */
typedef struct synth_figs {
    uint64_t nodes, edges;
    size_t made, batch, shared; /* shared: GPUs whose structure is another's (this rank's) */
    double gen_s, write_s;
} synth_figs;

/* The GPUs into the open writer w, streamed: generated and written a batch
 * at a time, so memory holds one batch, never the job. The batch is sized
 * from the first GPUs: about `budget` bytes of graphs (256 MiB).
 *
 * Under mpirun (K ranks) the writes are rounds (lsim_store_writer_open_mpi):
 * in each, rank r synthesizes the r-th batch of the next K and they land in
 * rank order, so GPU order is the serial order whatever K. The first round
 * is one GPU per rank (GPU r), to size the batches; then B GPUs per rank
 * per round, the same B on every rank. Each rank holds one batch: memory
 * per rank does not grow with the job, and the K ranks generate at once.
 * Serial: K = 1, rank 0. A generation failure is agreed before the round's
 * write. Collective when m->on. */
/* Shared structure (share): a GPU whose node columns and edges equal
 * those of the first GPU of its pipeline stage (TP ranks and DP replicas
 * usually do) is written as sharing that GPU's rows (store.h,
 * lsim_store_writer_add_ex). Each rank generates the stage's first GPU
 * itself, once, to compare with, whichever rank writes it, so the store
 * is the same at every K. The comparison is exact: a GPU that differs
 * (host stalls drawn per GPU, say) keeps rows of its own. A sharing GPU's
 * strings are stored as that GPU's table with its own names (process
 * groups, point-to-point pairs) replacing a few (shared strings). */
static int synth_gpus(const lsim_world *m, const lsim_synth_cfg *c, const char *out, uint64_t budget, int share,
                      lsim_store_writer *w, synth_figs *f, lsim_err *err)
{
    size_t ngpu = lsim_synth_ngpus(c), K = (size_t)m->size, r = (size_t)m->rank, made = 0;
    size_t cap = ngpu < 4096 ? ngpu : 4096, per_stage = ngpu / (size_t)c->pp;
    lsim_graph **gs = calloc(cap ? cap : 1, sizeof *gs);
    lsim_graph **tmpl = calloc((size_t)c->pp, sizeof *tmpl); /* each stage's first GPU, once generated */
    int64_t *same = malloc((cap ? cap : 1) * sizeof *same);
    const lsim_graph **base = calloc(cap ? cap : 1, sizeof *base); /* the graph of GPU same[k] */
    int rc = gs && tmpl && same && base ? 0 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    rc = agree(m, rc, err);
    size_t batch = 1;
    for (size_t start = 0, round = 0; !rc && start < ngpu; round++) {
        /* this rank's GPUs of the round: [lo, hi) */
        size_t per = round == 0 ? 1 : batch;
        size_t lo = start + r * per, hi = lo + per;
        if (lo > ngpu) lo = ngpu;
        if (hi > ngpu) hi = ngpu;
        double g0 = lsim_now_s();
        made = 0;
        for (size_t i = lo; i < hi && !rc; i++) {
            /* sized from the stage's first GPU, or the one before */
            size_t st0 = i / per_stage;
            const lsim_graph *like = tmpl[st0] ? tmpl[st0] : made ? gs[made - 1] : NULL;
            rc = lsim_synth_gpu_like(c, (uint32_t)i, NULL, like, &gs[made], err);
            if (!rc) {
                f->nodes += gs[made]->n;
                f->edges += gs[made]->nedges;
                same[made] = -1;
                base[made] = NULL;
                size_t st = i / per_stage, t = st * per_stage;
                if (share && i != t && !tmpl[st]) rc = lsim_synth_gpu(c, (uint32_t)t, NULL, &tmpl[st], err);
                if (share && i != t && !rc && lsim_graph_same_structure(gs[made], tmpl[st])) {
                    same[made] = (int64_t)t;
                    base[made] = tmpl[st];
                    f->shared++;
                }
                made++;
            }
        }
        if (round == 0) {
            /* the batch from the largest first GPU of any rank: about 8 bytes
             * per node and edge in memory, 26 per edge with its CSR ids */
            uint64_t sz = !rc && made ? gs[0]->n * 80 + gs[0]->nedges * 26 + 1 : 1;
            lsim_world_reduce(m, &sz, 1, LSIM_W_U64, LSIM_W_MAX);
            batch = (size_t)(budget / sz);
            /* and no more than an even share of the rest, so that a job of
             * few batches still keeps every rank generating */
            size_t rest = ngpu > K ? ngpu - K : 0, even = (rest + K - 1) / K;
            if (batch > even) batch = even;
            if (batch > cap) batch = cap;
            if (batch < 1) batch = 1;
            /* the store on disk, from GPU 0 (rank 0's): about 8 bytes per
             * node and edge, compressed */
            if (!rc && r == 0 && made) {
                uint64_t need = (uint64_t)ngpu * (gs[0]->n + gs[0]->nedges) * 8;
                if (lsim_disk_check(out, need, err)) rc = LSIM_EIO;
            }
        }
        double g1 = lsim_now_s();
        rc = agree(m, rc, err);
        if (!rc) rc = lsim_store_writer_add_ex(w, gs, made, NULL, same, (const lsim_graph *const *)base, err);
        f->write_s += lsim_now_s() - g1;
        f->gen_s += g1 - g0;
        for (size_t k = 0; k < made; k++) lsim_graph_free(gs[k]);
        f->made += made;
        made = 0;
        start += K * per;
        lsim_cli_tty_progress(round == 0, "synth: %zu of %zu GPUs written to %s", start < ngpu ? start : ngpu, ngpu,
                              out);
    }
    for (size_t k = 0; k < made; k++) lsim_graph_free(gs[k]);
    for (int k = 0; tmpl && k < c->pp; k++) lsim_graph_free(tmpl[k]);
    free(tmpl);
    free(base);
    free(same);
    free(gs);
    f->batch = batch;
    return rc;
}

/* The configuration from the parsed arguments, the inputs loaded and the
 * whole of it checked; the memory estimate (docs/memory.md) as JSON for
 * the store. Local: every rank comes to the same answer. */
/* Size before work (issue 40): every GPU of the job is generated, so the
 * work is its GPUs times GPU 0's nodes (GPU 0 made once to count them: a
 * pipeline's stages differ little) plus each GPU's own cost beyond its
 * nodes (LSIM_CLI_SYNTH_GPU_WORK), against the work cap (cli.h); and its
 * GPUs against the most a store holds (LSIM_WORLD_MAX, graph.h; not
 * overridable). Local: every rank comes to the same answer. */
static int synth_cap(const lsim_synth_cfg *c, const char *out, lsim_err *err)
{
    double ngpu = (double)lsim_synth_ngpus(c);
    const char *what = out ? out : "synth";
    if (ngpu > LSIM_WORLD_MAX)
        return lsim_err_set(err, LSIM_EARG, "%s: the job would have %.0f GPUs, over the %d (2^20) a store holds "
                                            "(docs/reliability.md, \"Work caps\"): use a smaller --tp, --pp, --dp or --gpus",
                            what, ngpu, LSIM_WORLD_MAX);
    if (lsim_cli_force_large) return 0;
    lsim_graph *g = NULL;
    int rc = lsim_synth_gpu(c, 0, NULL, &g, err);
    if (rc) return rc;
    char how[160];
    snprintf(how, sizeof how, "%.0f GPUs x (%zu nodes of GPU 0 + %d a GPU)", ngpu, g->n, LSIM_CLI_SYNTH_GPU_WORK);
    double work = ngpu * ((double)g->n + LSIM_CLI_SYNTH_GPU_WORK);
    lsim_graph_free(g);
    return lsim_cli_work_cap(what, work, how, "use a smaller --tp, --pp, --dp or --gpus", err);
}

int lsim_cli_synth_base(const lsim_cli_synth_args *sa, lsim_synth_cfg *c, lsim_err *err)
{
    const char *model = sa->model, *gpu = sa->gpu, *topo = sa->topo;
    lsim_synth_cfg_default(c);
    c->tp = sa->tp;
    c->pp = sa->pp;
    c->dp = sa->dp;
    c->micro_batch = sa->micro_batch;
    c->global_batch = sa->global_batch;
    if (sa->gpus) c->gpus = sa->gpus;
    if (sa->vstages) c->vstages = sa->vstages;
    if (sa->no_p2p_sync) c->p2p_sync = 0;
    if (sa->recompute >= 0) c->recompute = sa->recompute;
    if (sa->grad_reduce >= 0) c->grad_reduce = sa->grad_reduce;
    if (sa->attention >= 0) c->attention = sa->attention;
    if (sa->grad_bytes >= 0) c->grad_bytes = sa->grad_bytes;
    if (sa->grad_acc >= 0) c->grad_acc = sa->grad_acc;
    if (sa->precision >= 0) c->precision = sa->precision;
    if (sa->fp8_scaling >= 0) c->fp8_scaling = sa->fp8_scaling;
    if (sa->kernels >= 0) c->kernels = sa->kernels;
    if (sa->loss >= 0) c->loss = sa->loss;
    c->seq_parallel = sa->seq_parallel;
    c->dist_opt = sa->dist_opt;
    c->scatter_gather = sa->scatter_gather;
    c->dropout = !sa->no_dropout;
    c->tp_overlap = sa->tp_overlap;
    c->forward_only = sa->forward_only;
    c->fp8_all_gather = sa->fp8_all_gather;
    c->mem_check = !sa->no_mem_check;
    c->seed = (uint64_t)sa->seed;
    c->dp_cost = sa->dp_cost;
    c->fsdp = sa->fsdp;
    c->cp = sa->cp;
    c->ep = sa->ep;
    c->etp = sa->etp;
    c->routing_skew = sa->routing_skew;
    c->routing_dirichlet = sa->routing_dirichlet;
    c->capacity_factor = sa->capacity_factor;
    c->pad_to_capacity = sa->pad_to_capacity;
    c->split = sa->split;
    int rc = is_file_name(model) ? lsim_model_load(model, &c->model, err) : lsim_model_builtin(model, &c->model, err);
    int *dst[6] = {&c->model.layers, &c->model.hidden, &c->model.ffn, &c->model.heads, &c->model.seq, &c->model.vocab};
    for (int k = 0; !rc && k < 6; k++)
        if (sa->shape[k] > 0) *dst[k] = sa->shape[k];
    if (!rc && sa->routing_hist) {
        /* the measured shares: the caller frees c->routing_hist */
        double *h = NULL;
        rc = lsim_synth_routing_load(sa->routing_hist, &c->model, &h, &c->routing_hist_rows, err);
        c->routing_hist = h;
    }
    if (!rc && gpu) {
        rc = is_file_name(gpu) ? lsim_gpu_spec_load(gpu, &c->gpu, err) : lsim_gpu_spec_builtin(gpu, &c->gpu, err);
        if (!rc) lsim_topology_default(&c->gpu, &c->topo);
    }
    if (!rc && topo) rc = lsim_topology_load(topo, &c->topo, err);
    if (!rc && sa->attn_kernel > 0) rc = lsim_synth_attn_kernel(c, sa->attn_kernel, err);
    return rc;
}

static int synth_config(const lsim_cli_synth_args *sa, lsim_synth_cfg *c, lsim_memest_job *mj, char **mjson,
                        lsim_err *err)
{
    int rc = lsim_cli_synth_base(sa, c, err);
    if (!rc) rc = lsim_synth_check(c, err);
    if (!rc) {
        /* the per-GPU memory estimate, recorded in the store (root attribute
         * "memory", docs/memory.md) for sim and info; with --no-memory-check
         * a job that does not fit is synthesized, and flagged OOM */
        lsim_memest_in mi;
        lsim_synth_memest_in(c, &mi);
        rc = lsim_memest_job_of(&mi, c->gpu.name, c->gpu.mem_capacity, mj, err);
        if (!rc) rc = lsim_memest_job_json(mj, mjson, err);
    }
    return rc;
}

/* lumosim synth, serial or under mpirun (m->on: collective over the
 * world, every failure agreed, its line printed by rank 0). */
int lsim_cli_synth_write(const lsim_world *m, const lsim_cli_synth_job *j, lsim_err *err)
{
    lsim_synth_cfg c;
    int rc = 0;
    lsim_store_writer *w = NULL;
    const lsim_cli_synth_args *sa = j->sa;
    lsim_memest_job mj = {0};
    char *mjson = NULL;
    synth_figs f = {0};
    const char *out = sa->out;
    double t0 = lsim_now_s();
    memset(&c, 0, sizeof c);
    /* inputs: model, GPU, topology; then the whole configuration is checked
     * before anything is generated (every rank: the same verdict, agreed) */
    uint64_t budget = 0;
    rc = synth_config(sa, &c, &mj, &mjson, err);
    if (!rc) rc = synth_cap(&c, out, err);
    if (!rc) rc = batch_bytes(&budget, err);
    if (!rc && m->rank == 0) {
        /* the output is checked once, by rank 0 */
        char *ins[5] = {(char *)sa->model, (char *)sa->gpu, (char *)sa->topo, (char *)sa->routing_hist, (char *)j->also_in};
        lsim_io_file outs[1] = {{out, "-o", 1, LSIM_OUT_STORE}};
        rc = lsim_cli_check_io(ins, 5, outs, 1, err);
    }
    char rjson[512], rline[512];
    if (!rc) rc = routing_summary(&c, rjson, sizeof rjson, rline, sizeof rline, err);
    if ((rc = agree(m, rc, err))) goto done;
    size_t ngpu = lsim_synth_ngpus(&c);
    if (sa->stats || m->rank != 0) lsim_cli_tty_progress_off();
    lsim_store_write_opts wo = {j->cmd, NULL, 0, {0}};
    rc = m->on ? lsim_world_writer_open(m, out, &wo, &w, err) : lsim_store_writer_open(out, &wo, &w, err);
    /* the job's GPU, so that a what-if of it starts from the right one; the
     * arguments, so that a what-if can synthesize it again (resynth.c) */
    if (!rc) rc = lsim_store_writer_set_attr(w, "device", c.gpu.name, err);
    if (!rc) rc = lsim_store_writer_set_attr(w, "memory", mjson, err);
    if (!rc) rc = lsim_store_writer_set_attr(w, "synth_args", j->args_json, err);
    if (!rc && j->whatif) rc = lsim_store_writer_set_attr(w, "whatif", j->whatif, err);
    if (!rc && rjson[0]) rc = lsim_store_writer_set_attr(w, "routing", rjson, err);
    rc = agree(m, rc, err);
    if (!rc) rc = synth_gpus(m, &c, out, budget, !sa->no_share, w, &f, err);
    if (!rc) {
        double c0 = lsim_now_s();
        lsim_cli_tty_progress(1, "synth: closing %s", out);
        rc = lsim_store_writer_close(w, err);
        lsim_cli_tty_progress_done();
        w = NULL;
        f.write_s += lsim_now_s() - c0;
    }
    if (!rc && m->rank == 0 && !j->whatif) print_memory(&mj);
    if (!rc && m->rank == 0 && !j->whatif) fputs(rline, stdout);
    if (!rc && sa->stats) {
        uint64_t ne[2] = {f.nodes, f.edges};
        lsim_world_reduce(m, ne, 2, LSIM_W_U64, LSIM_W_SUM);
        if (m->rank == 0) {
            lsim_synth_mem mm;
            lsim_synth_memory(&c, &mm);
            fprintf(stderr,
                    "lumosim: stats: memory per GPU on stage %d: %.2f GB (weights, gradients, optimizer state %.2f "
                    "GB; activations %.2f GB, %d micro-batch chunks in flight); the GPU has %.2f GB\n",
                    mm.stage, mm.total / 1e9, mm.states / 1e9, mm.activations / 1e9, mm.inflight,
                    c.gpu.mem_capacity / 1e9);
            fprintf(stderr,
                    "lumosim: stats: synth %zu GPUs (TP %d PP %d DP %d, %d micro-batches, V %d): %llu nodes, %llu "
                    "edges; generate %.2f s, write %.2f s, total %.2f s (batches of %zu GPUs)\n",
                    ngpu, c.tp, c.pp, c.dp, lsim_synth_microbatches(&c), c.vstages, (unsigned long long)ne[0],
                    (unsigned long long)ne[1], f.gen_s, f.write_s, lsim_now_s() - t0, f.batch);
        }
        /* one line per rank, its own figures (bench/gpt3_scaling.sh synth) */
        struct rusage ru;
        int ok = getrusage(RUSAGE_SELF, &ru) == 0;
        double cpu = ok ? ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6
                        : -1;
        fprintf(stderr,
                "lumosim: stats: synth rank %d of %d: %zu GPUs, %llu nodes; generate %.2f s, write %.2f s, total "
                "%.2f s; CPU %.2f s; peak RSS %.1f MiB\n",
                m->rank, m->size, f.made, (unsigned long long)f.nodes, f.gen_s, f.write_s, lsim_now_s() - t0, cpu,
                ok ? (double)ru.ru_maxrss / 1024.0 : -1.0);
    }
done:
    lsim_cli_tty_progress_done();
    lsim_store_writer_abort(w); /* NULL after a close; collective: every rank holds one or none */
    free(mjson);
    free((void *)c.routing_hist);
    lsim_memest_job_free(&mj);
    return rc;
}

/* The "synth_args" attribute: argv as a JSON array of strings, the files
 * named (--model, --gpu, --topology, --routing-hist, given as names of
 * files) made absolute, so that a what-if in another directory reads the
 * same ones; "-o" and its value left out (the what-if names its own). */
char *lsim_cli_synth_args_json(int argc, char **argv)
{
    static const char *const FILES[] = {"--model", "--gpu", "--topology", "--routing-hist"};
    cJSON *a = cJSON_CreateArray();
    char *txt = NULL;
    if (!a) return NULL;
    for (int i = 0; i < argc; i++) {
        char name[32] = "";
        const char *v = NULL, *eq = strchr(argv[i], '=');
        if (!strncmp(argv[i], "--", 2) && eq && (size_t)(eq - argv[i]) < sizeof name) {
            memcpy(name, argv[i], (size_t)(eq - argv[i]));
            v = eq + 1;
        } else if (i + 1 < argc) {
            snprintf(name, sizeof name, "%s", argv[i]);
            v = argv[i + 1];
        }
        if (!strcmp(name, "-o") || !strcmp(name, "--output")) {
            i += eq ? 0 : 1;
            continue;
        }
        int file = 0;
        for (size_t k = 0; k < sizeof FILES / sizeof *FILES; k++)
            file |= !strcmp(name, FILES[k]) && v && (k >= 2 || is_file_name(v));
        char *abs = file ? realpath(v, NULL) : NULL;
        if (file && abs) {
            char *both = malloc(strlen(name) + strlen(abs) + 2);
            if (both) sprintf(both, "%s=%s", name, abs);
            cJSON *s = both ? cJSON_CreateString(both) : NULL;
            free(both);
            free(abs);
            if (!s || !cJSON_AddItemToArray(a, s)) goto cleanup;
            i += eq ? 0 : 1;
            continue;
        }
        free(abs);
        cJSON *s = cJSON_CreateString(argv[i]);
        if (!s || !cJSON_AddItemToArray(a, s)) goto cleanup;
    }
    txt = cJSON_PrintUnformatted(a);
cleanup:
    cJSON_Delete(a);
    return txt;
}

/* lumosim synth, serial or under mpirun (m->on: collective over the
 * world, every failure agreed, its line printed by rank 0). */
static int synth_run(const lsim_world *m, int argc, char **argv)
{
    lsim_err err = {0};
    lsim_cli_synth_args sa;
    char *cmd = NULL, *aj = NULL;
    int rc = 0, p = parse_args(m, argc, argv, &sa);
    if (p <= 0) return p < 0 ? 2 : 0;
    size_t len = 16;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    if (!(cmd = malloc(len)) || !(aj = lsim_cli_synth_args_json(argc, argv))) {
        rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
    } else {
        strcpy(cmd, "lumosim synth");
        for (int i = 0; i < argc; i++) strcat(strcat(cmd, " "), argv[i]);
    }
    rc = agree(m, rc, &err);
    if (!rc) {
        lsim_cli_synth_job j = {&sa, cmd, aj, NULL, NULL};
        rc = lsim_cli_synth_write(m, &j, &err);
    }
    if (rc && m->rank == 0) lsim_cli_error("%s", err.msg[0] ? err.msg : "failed");
    free(cmd);
    free(aj);
    return rc ? 1 : 0;
}

int lsim_cli_synth(int argc, char **argv)
{
    lsim_world m;
    if (lsim_world_begin(&m)) {
        lsim_cli_error("MPI_Init failed");
        return 1;
    }
    int status = synth_run(&m, argc, argv);
    lsim_cli_outcome_known();
    lsim_world_end(&m);
    return status;
}
