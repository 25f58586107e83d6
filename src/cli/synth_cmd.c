/* lumosim synth: the execution graphs of every GPU of one synthesized
 * training iteration into an HDF5 graph store (synth.h, docs/synthesis.md).
 * Everything is checked before anything is generated; nothing is written on
 * an error (the store writes to a temporary name). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "lumosim/memlimit.h"
#include "lumosim/synth.h"

static const char *USAGE_SYNTH =
    "usage: lumosim synth --model NAME|FILE.json [--layers N --hidden N --ffn N --heads N\n"
    "                     --seq N --vocab N] --tp N --pp N --dp N --micro-batch N\n"
    "                     --global-batch N [--schedule 1f1b|interleaved:V] [--gpus N]\n"
    "                     [--gpu h100|a100|h200|FILE.json] [--topology FILE.json]\n"
    "                     [--no-p2p-sync] -o JOB.h5\n"
    "\n"
    "Writes the execution graphs of every GPU of one Megatron-style training\n"
    "iteration (tensor, pipeline, data parallel) to a graph store that\n"
    "`lumosim sim` simulates. Kernel and communication times come from the cost\n"
    "models (docs/cost-models.md); what is generated: docs/synthesis.md.\n"
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
    "  --stats          print generation figures to stderr\n"
    "  -o JOB.h5        the graph store to write\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A positive int option value, or -1 (message printed). */
static int int_arg(const char *opt, const char *v)
{
    char *e;
    errno = 0;
    long x = strtol(v, &e, 10);
    if (errno || *e || e == v || x <= 0 || x > 1000000000L) {
        fprintf(stderr, "lumosim: error: %s needs a positive integer (got '%s')\n", opt, v);
        return -1;
    }
    return (int)x;
}

static int is_file_name(const char *s) { return strchr(s, '/') || strstr(s, ".json"); }

int lsim_cli_synth(int argc, char **argv)
{
    lsim_synth_cfg c;
    lsim_synth_cfg_default(&c);
    const char *model = NULL, *gpu = NULL, *topo = NULL, *out = NULL, *sched = NULL;
    int shape[6] = {0, 0, 0, 0, 0, 0}; /* layers hidden ffn heads seq vocab */
    static const char *const SHAPE_OPT[6] = {"--layers", "--hidden", "--ffn", "--heads", "--seq", "--vocab"};
    int stats = 0, status = 0, rc = 0;
    lsim_err err = {0};
    lsim_graph **gs = NULL;
    lsim_store_writer *w = NULL;
    size_t ngpu = 0, made = 0;
    char *cmd = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE_SYNTH, stdout);
            return 0;
        }
        if (!strcmp(a, "--stats")) {
            stats = 1;
            continue;
        }
        if (!strcmp(a, "--no-p2p-sync")) {
            c.p2p_sync = 0;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "lumosim: error: %s '%s' (see lumosim synth --help)\n",
                    a[0] == '-' ? "missing value or unknown option" : "unexpected argument", a);
            return 2;
        }
        const char *v = argv[++i];
        int *ip = NULL;
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--gpu")) gpu = v;
        else if (!strcmp(a, "--topology")) topo = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) out = v;
        else if (!strcmp(a, "--schedule")) sched = v;
        else if (!strcmp(a, "--tp")) ip = &c.tp;
        else if (!strcmp(a, "--pp")) ip = &c.pp;
        else if (!strcmp(a, "--dp")) ip = &c.dp;
        else if (!strcmp(a, "--micro-batch")) ip = &c.micro_batch;
        else if (!strcmp(a, "--global-batch")) ip = &c.global_batch;
        else if (!strcmp(a, "--gpus")) ip = &c.gpus;
        else {
            int k = 0;
            while (k < 6 && strcmp(a, SHAPE_OPT[k])) k++;
            if (k == 6) {
                fprintf(stderr, "lumosim: error: unknown option '%s' (see lumosim synth --help)\n", a);
                return 2;
            }
            ip = &shape[k];
        }
        if (ip && (*ip = int_arg(a, v)) < 0) return 2;
    }
    if (!model || !out || !c.tp || !c.pp || !c.dp || !c.micro_batch || !c.global_batch) {
        fprintf(stderr, "lumosim: error: synth needs --model, --tp, --pp, --dp, --micro-batch, --global-batch and -o "
                        "(see lumosim synth --help)\n");
        return 2;
    }
    if (sched) {
        if (!strcmp(sched, "1f1b")) c.vstages = 1;
        else if (!strncmp(sched, "interleaved:", 12) && (c.vstages = int_arg("--schedule interleaved:V", sched + 12)) > 0) {
        } else {
            if (strncmp(sched, "interleaved:", 12))
                fprintf(stderr, "lumosim: error: unknown --schedule '%s' (1f1b or interleaved:V)\n", sched);
            return 2;
        }
    }
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
    if (!rc) rc = lsim_cli_check_output(out, &err);
    if (rc) goto done;
    {
        size_t len = 16;
        for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
        if (!(cmd = malloc(len))) goto nomem;
        strcpy(cmd, "lumosim synth");
        for (int i = 0; i < argc; i++) strcat(strcat(cmd, " "), argv[i]);
    }
    ngpu = lsim_synth_ngpus(&c);
    /* Streamed: GPUs are generated and written a batch at a time
     * (lsim_store_writer_*), so memory holds one batch, never the job. The
     * batch is sized from the first GPU: about 256 MiB of graphs. */
    {
        double t0 = now_s(), tgen = 0, twrite = 0;
        uint64_t nodes = 0, edges = 0;
        size_t batch = 1;
        lsim_store_write_opts wo = {cmd, NULL, 0};
        rc = lsim_store_writer_open(out, &wo, &w, &err);
        for (size_t i = 0; !rc && i < ngpu;) {
            size_t nb = i == 0 ? 1 : (ngpu - i < batch ? ngpu - i : batch);
            if (!gs && !(gs = calloc(ngpu < 4096 ? ngpu : 4096, sizeof *gs))) goto nomem;
            double g0 = now_s();
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
            double g1 = now_s();
            if (!rc) rc = lsim_store_writer_add(w, gs, made, NULL, &err);
            twrite += now_s() - g1;
            tgen += g1 - g0;
            for (size_t k = 0; k < made; k++) lsim_graph_free(gs[k]);
            made = 0;
            i += nb;
        }
        if (!rc) {
            double c0 = now_s();
            rc = lsim_store_writer_close(w, &err);
            w = NULL;
            twrite += now_s() - c0;
        }
        if (!rc && stats)
            fprintf(stderr,
                    "lumosim: stats: synth %zu GPUs (TP %d PP %d DP %d, %d micro-batches, V %d): %llu nodes, %llu "
                    "edges; generate %.2f s, write %.2f s, total %.2f s (batches of %zu GPUs)\n",
                    ngpu, c.tp, c.pp, c.dp, lsim_synth_microbatches(&c), c.vstages, (unsigned long long)nodes,
                    (unsigned long long)edges, tgen, twrite, now_s() - t0, batch);
    }
    goto done;
nomem:
    rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
done:
    if (rc) {
        fprintf(stderr, "lumosim: error: %s\n", err.msg[0] ? err.msg : "failed");
        status = 1;
    }
    for (size_t i = 0; gs && i < made; i++) lsim_graph_free(gs[i]);
    lsim_store_writer_abort(w); /* NULL after a close */
    free(gs);
    free(cmd);
    return status;
}
