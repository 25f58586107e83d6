/* lumosim ablate: the full model against each single dependency class
 * removed (the experiment the Lumos paper did not run). Each trace is read
 * and its graph built once; each variant simulates a copy of that graph with
 * one class removed, and is compared with the trace (errors) and with the
 * full model (critical-path edge recall). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "lumosim/text.h"

typedef struct variant {
    const char *name;
    unsigned mask;
    int zero_launch;
} variant;

static const variant VARIANTS[] = {
    {"full", 0, 0},
    {"-event", 1u << LSIM_E_EVENT, 0},
    {"-hidden", 1u << LSIM_E_INFERRED, 0},
    {"-sync", 1u << LSIM_E_SYNC, 0},
    {"-cpu_cross_thread", 1u << LSIM_E_CPU_XTHREAD, 0},
    {"-launch_latency", 0, 1},
    {"dpro", (1u << LSIM_E_EVENT) | (1u << LSIM_E_INFERRED) | (1u << LSIM_E_SYNC) | (1u << LSIM_E_CPU_XTHREAD), 0},
};
#define NVAR (sizeof VARIANTS / sizeof *VARIANTS)

typedef struct result {
    double window_err, iter_err; /* iter_err: mean |error| over iterations (window if none) */
    double bd_err[4];            /* (predicted - actual) / actual window */
    double recall;
} result;

static int simulate_variant(const lsim_graph *base, const variant *va, lsim_ns bin_ns, const lsim_critical_path *ref,
                            result *res, lsim_critical_path *cp_out, lsim_err *err)
{
    lsim_graph *g = NULL;
    lsim_engine *e = NULL;
    lsim_rank_report rep = {0};
    lsim_critical_path cp = {0};
    int rc = lsim_graph_clone(base, &g, err);
    if (!rc) rc = lsim_graph_ablate(g, va->mask, va->zero_launch, err);
    if (!rc) rc = lsim_engine_new(g, &e, err);
    if (!rc) rc = lsim_engine_run(e, err);
    if (!rc) rc = lsim_metrics_compute(g, lsim_engine_start(e), lsim_engine_end(e), bin_ns, &rep, err);
    if (!rc) rc = lsim_critical_path_compute(g, e, &cp, err);
    if (rc) goto cleanup;
    res->window_err = lsim_rel_err(rep.window_actual, rep.window_predicted);
    double s = 0;
    for (uint32_t k = 0; k < rep.niters; k++) s += fabs(lsim_rel_err(rep.iters[k].actual, rep.iters[k].predicted));
    res->iter_err = rep.niters ? s / rep.niters : fabs(res->window_err);
    double w = rep.window_actual ? (double)rep.window_actual : 1.0;
    const lsim_breakdown *a = &rep.bd_actual, *p = &rep.bd_predicted;
    res->bd_err[0] = (double)(p->exposed_compute - a->exposed_compute) / w;
    res->bd_err[1] = (double)(p->overlapped - a->overlapped) / w;
    res->bd_err[2] = (double)(p->exposed_comm - a->exposed_comm) / w;
    res->bd_err[3] = (double)(p->other - a->other) / w;
    res->recall = ref ? lsim_critical_path_recall(ref, &cp) : 1.0;
    if (cp_out) {
        *cp_out = cp;
        memset(&cp, 0, sizeof cp);
    }
cleanup:
    lsim_critical_path_clear(&cp);
    lsim_rank_report_clear(&rep);
    lsim_engine_free(e);
    lsim_graph_free(g);
    return rc;
}

int lsim_cli_ablate(int argc, char **argv)
{
    lsim_cli_opts o;
    lsim_cli_opts_default(&o);
    char **args = malloc((size_t)(argc + 1) * sizeof *args);
    int nargs = 0, status = 0;
    lsim_err err = {0};
    lsim_run run = {0};
    result *res = NULL;
    cJSON *doc = NULL;
    if (!args) {
        lsim_cli_error("out of memory");
        return 1;
    }
    nargs = lsim_cli_parse_ablate(argc, argv, &o, LSIM_USAGE_ABLATE, args);
    if (nargs <= 0) {
        free(args);
        return nargs == 0 ? 0 : 2;
    }
    /* read and build once per trace (the full model's run comes with it) */
    o.run.critical = 1;
    if (lsim_cli_run_paths(&o, args, nargs, &run, &err)) goto fail;
    res = calloc(run.n * NVAR, sizeof *res);
    if (!res) {
        lsim_err_set(&err, LSIM_ENOMEM, "out of memory");
        goto fail;
    }
    /* the item's path: a reduced run's class members share their
     * representative's (run.c, copy_report) */
    for (size_t i = 0; i < run.n; i++)
        for (size_t v = 0; v < NVAR; v++)
            if (simulate_variant(run.graphs[i], &VARIANTS[v], o.run.bin_ns, run.items[i].cp, &res[i * NVAR + v], NULL, &err))
                goto fail;
    if (o.json) {
        doc = cJSON_CreateObject();
        cJSON *traces = doc ? cJSON_AddArrayToObject(doc, "traces") : NULL;
        if (!traces) goto nomem;
        cJSON_AddStringToObject(doc, "lumosim_version", LSIM_VERSION);
        /* each trace's variants run on its graph alone: a job's collectives
         * keep their traced durations here (replay couples them) */
        cJSON_AddBoolToObject(doc, "ranks_coupled", 0);
        for (size_t i = 0; i < run.n; i++) {
            cJSON *t = cJSON_CreateObject();
            if (!t) goto nomem;
            cJSON_AddItemToArray(traces, t);
            char *src = lsim_text_utf8(run.paths[i]); /* a file name need not be UTF-8; JSON must be */
            if (!src) goto nomem;
            cJSON_AddStringToObject(t, "source", src);
            free(src);
            cJSON *vs = cJSON_AddArrayToObject(t, "variants");
            for (size_t v = 0; vs && v < NVAR; v++) {
                const result *r = &res[i * NVAR + v];
                cJSON *x = cJSON_CreateObject();
                if (!x) goto nomem;
                cJSON_AddItemToArray(vs, x);
                cJSON_AddStringToObject(x, "variant", VARIANTS[v].name);
                cJSON_AddNumberToObject(x, "window_error", r->window_err);
                cJSON_AddNumberToObject(x, "iteration_error", r->iter_err);
                cJSON *b = cJSON_AddObjectToObject(x, "breakdown_error");
                if (b) {
                    cJSON_AddNumberToObject(b, "exposed_compute", r->bd_err[0]);
                    cJSON_AddNumberToObject(b, "overlapped", r->bd_err[1]);
                    cJSON_AddNumberToObject(b, "exposed_comm", r->bd_err[2]);
                    cJSON_AddNumberToObject(b, "other", r->bd_err[3]);
                }
                cJSON_AddNumberToObject(x, "critical_path_recall", r->recall);
            }
        }
        char *txt = cJSON_PrintUnformatted(doc);
        if (!txt) goto nomem;
        /* the table says it in its head; a document is read by a program,
         * so the person running it is told here */
        if (run.n > 1)
            fprintf(stderr,
                    "lumosim: note: each of the %zu traces is simulated alone, its collectives taking their traced "
                    "durations (ranks_coupled false; lumosim replay simulates the ranks of a job together)\n",
                    run.n);
        puts(txt);
        free(txt);
    } else {
        printf("lumosim %s ablation (latency: %s); errors in %% (breakdown: of the actual window), recall of the full "
               "model's critical-path edges\n",
               LSIM_VERSION, lsim_latency_mode_name(o.run.bo.latency));
        if (run.n > 1)
            printf("each of the %zu traces is simulated alone, its collectives taking their traced durations (lumosim "
                   "replay simulates the ranks of a job together)\n",
                   run.n);
        for (size_t i = 0; i < run.n; i++) {
            printf("\n%s\n  %-18s %9s %9s %9s %9s %9s %9s %8s\n", run.paths[i], "variant", "iter err", "window",
                   "exp.comp", "overlap", "exp.comm", "other", "recall");
            for (size_t v = 0; v < NVAR; v++) {
                const result *r = &res[i * NVAR + v];
                printf("  %-18s %8.3f%% %+8.3f%% %+8.3f%% %+8.3f%% %+8.3f%% %+8.3f%% %7.1f%%\n", VARIANTS[v].name,
                       100 * r->iter_err, 100 * r->window_err, 100 * r->bd_err[0], 100 * r->bd_err[1],
                       100 * r->bd_err[2], 100 * r->bd_err[3], 100 * r->recall);
            }
        }
    }
    goto cleanup;
nomem:
    lsim_err_set(&err, LSIM_ENOMEM, "out of memory writing the report");
fail:
    lsim_cli_error("%s", err.msg);
    status = 1;
cleanup:
    cJSON_Delete(doc);
    free(res);
    lsim_run_free(&run);
    free(args);
    return status;
}
