/* lumosim whatif: parse, call the what-if plan (whatif_plan.h: resolve,
 * identify, check, run), print. The record of what changed is printed and
 * kept in the new store as its root attribute "whatif". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lumosim/graph.h"
#include "lumosim/store.h"
#include "lumosim/whatif_steps.h" /* lsim_wi_resynth_wanted */

/* --help is made from the what-if step table (whatif_steps.h) before main
 * runs, so `lumosim help whatif` and `lumosim whatif --help` print it as
 * every other command's usage. */
static char *usage_text;
const char *LSIM_USAGE_WHATIF = "usage: lumosim whatif (out of memory)\n";

__attribute__((constructor)) static void whatif_usage(void)
{
    size_t len = 0;
    FILE *f = open_memstream(&usage_text, &len);
    if (!f) return;
    lsim_wi_put_usage(f);
    if (!fclose(f)) LSIM_USAGE_WHATIF = usage_text;
}

__attribute__((destructor)) static void whatif_usage_free(void) { free(usage_text); }

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

/* Size before work (issue 40): the new job's GPUs times a source GPU's
 * nodes on average, against the work cap (cli.h), and its GPUs against the
 * most a store holds (LSIM_WORLD_MAX, graph.h; not overridable: every
 * reader would refuse the store). */
static int cap_of(const lsim_wi_request *wa, double gpus, double per, lsim_err *err)
{
    if (gpus > LSIM_WORLD_MAX)
        return lsim_err_set(err, LSIM_EARG, "%s: the new job would have %.0f GPUs, over the %d (2^20) a store holds "
                                            "(docs/reliability.md, \"Work caps\"): use a smaller --dp, --tp or --pp",
                            wa->out ? wa->out : wa->in, gpus, LSIM_WORLD_MAX);
    char how[160];
    snprintf(how, sizeof how, "%.0f GPUs x %.0f nodes a GPU", gpus, per);
    return lsim_cli_work_cap(wa->out ? wa->out : wa->in, gpus * per, how, "use a smaller --dp, --tp or --pp", err);
}

/* cap_of with the source's layout and --tp/--pp/--dp applied, from pass
 * 1's metadata, before any GPU is made. */
static int whatif_cap(const lsim_wi_request *wa, const lsim_wi_facts *f, lsim_err *err)
{
    double nodes = 0;
    for (size_t i = 0; i < f->n; i++) nodes += (double)f->size[i].nodes;
    double gpus = (double)(wa->tp ? wa->tp : f->L.tp) * (double)(wa->pp ? wa->pp : f->L.pp) *
                  (double)(wa->dp ? wa->dp : f->L.dp);
    return cap_of(wa, gpus, f->n ? nodes / (double)f->n : 0, err);
}

/* The same cap before any graph is read, when the what-if keeps the layout:
 * the new job has the source's GPUs (tp x pp x dp = world, whatif.h), so
 * the store's GPU table alone gives the figure whatif_cap would. Issue 39:
 * a refusal that needs only metadata comes first; at 98,304 GPUs it came
 * after 314 s and 14.9 GB of identifying every GPU. A table that cannot be
 * read is left to the plan, which names what is wrong. */
static int whatif_precap(const lsim_wi_request *wa, lsim_err *err)
{
    if (wa->tp || wa->pp || wa->dp || wa->identify) return 0;
    lsim_store_gpu_info *t = NULL;
    size_t n = 0;
    lsim_err ignored = {0};
    if (lsim_store_gpu_table(wa->in, &t, &n, &ignored) || !n) return 0;
    double nodes = 0;
    for (size_t i = 0; i < n; i++) nodes += (double)t[i].nodes;
    lsim_store_gpu_table_free(t, n);
    return cap_of(wa, (double)n, nodes / (double)n, err);
}

int lsim_cli_whatif(int argc, char **argv)
{
    lsim_wi_request rq;
    lsim_wi_plan *plan = NULL;
    lsim_err err = {0};
    char *cmd = NULL;
    int rc = 0, p = lsim_cli_parse_whatif(argc, argv, LSIM_USAGE_WHATIF, &rq);
    if (p <= 0) return p < 0 ? 2 : 0;
    const lsim_wi_request *wa = &rq;
    {
        /* every file named, before any is read */
        char *ins[6] = {(char *)wa->in, (char *)wa->from_gpu, (char *)wa->from_topo, (char *)wa->gpu, (char *)wa->topo,
                        (char *)wa->model};
        lsim_io_file outs[1] = {{rq.out, "-o", 1, LSIM_OUT_STORE}};
        if ((rc = lsim_cli_check_io(ins, 6, outs, 1, &err))) goto done;
    }
    if (!(rq.cmd = cmd = command_line(argc, argv))) {
        rc = lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
        goto done;
    }
    if (lsim_wi_resynth_wanted(wa)) {
        /* --ep, --cp, --fsdp: the job synthesized again, no plan */
        rc = lsim_cli_whatif_resynth(wa, &err);
        goto done;
    }
    if ((rc = whatif_precap(wa, &err)) || (rc = lsim_wi_plan_precheck(wa, &err))) goto done;
    lsim_cli_tty_progress(1, "whatif: reading %s", wa->in);
    rc = lsim_wi_plan_open(&rq, &plan, &err);
    lsim_cli_tty_progress_done();
    if (rc) goto done;
    if (wa->identify) {
        lsim_wi_plan_put_identify(plan, stdout);
        fputc('\n', stdout);
        goto done;
    }
    if ((rc = whatif_cap(wa, lsim_wi_plan_facts(plan), &err))) goto done;
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
