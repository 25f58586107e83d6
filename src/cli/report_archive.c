/* lumosim report RESULT.h5 --html [--csv]: the page and CSV of a result
 * archive, reading only what they show (see cli.h). Why a path of its own:
 * drawing the page from every GPU's graph held three times the memory of
 * the sim that wrote a 4,096-GPU archive (issue 39). The overview and the
 * CSV's rows need each GPU's report and place (the archive's gpus and
 * iterations tables) and the kernels by name (its kernels table); only the
 * few GPUs shown in full need their graph and times, read one list at a
 * time. Page and CSV are byte for byte those drawn from the graphs (test
 * report:from_tables; LUMOSIM_TEST_REPORT_GRAPHS=1 takes the graphs' path,
 * for that comparison). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lumosim/memest.h"
#include "lumosim/report.h"
#include "lumosim/store.h"

/* The page to write: from a view (the tables path), else from the items'
 * graphs with the job's memory estimate (mem, may be NULL). */
typedef struct page_ctx {
    const lsim_replay_item *items;
    size_t n;
    const lsim_report_view *view;
    const lsim_memest_job *mem;
    const lsim_netshare_stats *net;
} page_ctx;

static int write_page(FILE *f, void *ctx, lsim_err *err)
{
    const page_ctx *p = ctx;
    lsim_report_extra x = {p->mem, p->net, NULL, NULL};
    return p->view ? lsim_report_html_view(f, p->items, p->n, p->view, err) : lsim_report_html_x(f, p->items, p->n, &x, err);
}

/* Whether the archive holds what the tables-only page needs: every GPU's
 * place (runs written before those columns lack them). */
static int has_places(const lsim_store_run *r)
{
    for (size_t i = 0; i < r->ngpus; i++)
        if (!r->gpus[i].has_place) return 0;
    return 1;
}

/* The page (and CSV, csv_out non-NULL) of run r (read without graphs) from
 * its tables; *old set (and nothing written) when the run predates the
 * tables they need, or its GPUs ran in mixed latency modes, which the run
 * records only per graph. */
static int page_from_tables(const char *path, lsim_store_run *r, const char *html_out, const char *csv_out,
                            const lsim_memest_job *mem, const lsim_netshare_stats *net, int *old, lsim_err *err)
{
    lsim_report_kernel *kern = NULL;
    size_t nk = 0, n = r->ngpus, full[LSIM_REPORT_HTML_FULL_MAX], nfull = 0;
    int have = 0, rc = 0;
    lsim_store_gpu_detail *det = NULL;
    lsim_report_brief *b = calloc(n ? n : 1, sizeof *b);
    lsim_replay_item *it = calloc(n ? n : 1, sizeof *it);
    *old = 0;
    if (!b || !it) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (!rc) rc = lsim_store_read_kernel_totals(path, r->name, &kern, &nk, &have, err);
    if (!rc && (!has_places(r) || (!have && n > 1) || (csv_out && !r->latency_known))) {
        *old = 1;
        goto cleanup;
    }
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_store_gpu_result *g = &r->gpus[i];
        b[i] = (lsim_report_brief){g->rank, g->source, g->observed, g->stage, g->replica, g->iter_names, r->latency};
        it[i] = (lsim_replay_item){NULL, &g->report, NULL, NULL, NULL, NULL, g->has_cp ? &g->cp : NULL,
                                   g->coupled, g->clock_offset, 0, &b[i]};
    }
    if (!rc) nfull = lsim_report_html_full(it, n, full);
    /* the duty bins of the GPUs shown in full only (read without: 10 GB of
     * a 98,304-GPU run's) */
    if (!rc && nfull) rc = lsim_store_read_duty(path, r->name, r, full, nfull, err);
    if (!rc && r->detail != LSIM_STORE_DETAIL_SUMMARY && nfull)
        rc = lsim_store_read_gpu_details(path, r->name, r, full, nfull, &det, err);
    for (size_t k = 0; !rc && det && k < nfull; k++) {
        it[full[k]].g = det[k].graph;
        it[full[k]].start = det[k].start;
        it[full[k]].end = det[k].end;
    }
    lsim_report_view v = {kern, nk, r->latency, mem, NULL, NULL, net};
    page_ctx pc = {it, n, &v, NULL, NULL};
    if (!rc) {
        lsim_cli_tty_progress(1, "report: writing %s (%zu GPUs)", html_out, n);
        rc = lsim_cli_write_atomic(html_out, write_page, &pc, err);
    }
    if (!rc && csv_out) {
        lsim_cli_opts co;
        lsim_cli_opts_default(&co);
        co.csv_out = csv_out;
        rc = lsim_cli_write_csv(&co, it, n, err);
    }
cleanup:
    lsim_store_gpu_details_free(det, nfull);
    lsim_report_kernels_free(kern, nk);
    free(it);
    free(b);
    return rc;
}

/* The page and CSV from every GPU's graph: an archive written before the
 * place columns has nothing else. */
static int report_from_graphs(const char *path, const char *run_name, const char *html_out, const char *csv_out,
                              const lsim_memest_job *mem, const lsim_netshare_stats *net, lsim_err *err)
{
    lsim_store_run *r = NULL;
    lsim_replay_item *items = NULL;
    int rc = lsim_store_read_results(path, run_name, &r, err);
    if (!rc) rc = lsim_cli_items_of_run(r, path, &items, err);
    if (!rc) {
        page_ctx pc = {items, r->ngpus, NULL, mem, net};
        lsim_cli_tty_progress(1, "report: writing %s (%zu GPUs)", html_out, r->ngpus);
        rc = lsim_cli_write_atomic(html_out, write_page, &pc, err);
    }
    lsim_cli_tty_progress_done();
    if (!rc && csv_out) {
        lsim_cli_opts co;
        lsim_cli_opts_default(&co);
        co.csv_out = csv_out;
        rc = lsim_cli_write_csv(&co, items, r->ngpus, err);
    }
    free(items);
    lsim_store_run_free(r);
    return rc;
}

int lsim_cli_report_results(const char *path, const char *run_name, const char *html_out, const char *csv_out)
{
    lsim_err err = {0}, merr = {0};
    lsim_store_run *r = NULL;
    lsim_memest_job mem;
    memset(&mem, 0, sizeof mem);
    int old = 1;
    lsim_cli_tty_progress(1, "report: reading %s", path);
    int rc = lsim_store_read_results_ex(path, run_name, LSIM_STORE_READ_NO_GRAPHS | LSIM_STORE_READ_NO_DUTY, &r, &err);
    /* the run of a synthesized job keeps its memory estimate; an unreadable
     * one is said and left out (the page does not depend on it) */
    if (!rc && r->memory && lsim_memest_job_parse(r->memory, &mem, &merr))
        fprintf(stderr, "lumosim: warning: %s: the run's memory estimate is unreadable (%s); left out\n", path,
                merr.msg);
    const lsim_memest_job *m = mem.nstages ? &mem : NULL;
    /* sim --link-sharing's figures, the same way */
    lsim_netshare_stats net;
    int has_net = !rc && r->network;
    if (has_net && lsim_report_network_parse(r->network, &net, &merr)) {
        fprintf(stderr, "lumosim: warning: %s: %s; left out\n", path, merr.msg);
        has_net = 0;
    }
    const lsim_netshare_stats *nt = has_net ? &net : NULL;
    const char *force = getenv("LUMOSIM_TEST_REPORT_GRAPHS");
    if (!rc && !(force && !strcmp(force, "1"))) rc = page_from_tables(path, r, html_out, csv_out, m, nt, &old, &err);
    lsim_cli_tty_progress_done();
    if (!rc && old && r->detail == LSIM_STORE_DETAIL_SUMMARY && has_places(r) && !r->latency_known)
        rc = lsim_err_set(&err, LSIM_EFORMAT, "%s: run %s (--detail summary) simulated GPUs of mixed latency modes, "
                          "which only their graphs record: --csv needs a full run (lumosim sim without --detail "
                          "summary)", path, r->name);
    else if (!rc && old && r->detail == LSIM_STORE_DETAIL_SUMMARY)
        rc = lsim_err_set(&err, LSIM_EFORMAT, "%s: run %s was written with --detail summary by an older lumosim: it "
                          "lacks the tables a page is drawn from (rerun lumosim sim)", path, r->name);
    if (!rc && old) rc = report_from_graphs(path, r->name, html_out, csv_out, m, nt, &err);
    if (rc) lsim_cli_error("%s", err.msg);
    lsim_memest_job_free(&mem);
    lsim_store_run_free(r);
    return rc ? 1 : 0;
}
