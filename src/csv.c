/* A replay's results as CSV (include/lumosim/csv.h; columns: docs/csv.md). */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/csv.h"
#include "lumosim/metrics.h"
#include "lumosim/text.h"

/* The header; every row has exactly these fields, in this order. */
static const char *const COLUMNS[] = {
    "source", "gpu", "rank", "scope", "iteration", "iteration_name", "latency_mode", "coupled", "clock_offset_ns",
    "observed", "actual_ns", "predicted_ns", "error",
    "exposed_compute_actual_ns", "overlapped_actual_ns", "exposed_comm_actual_ns", "exposed_comm_wait_actual_ns",
    "other_actual_ns",
    "exposed_compute_predicted_ns", "overlapped_predicted_ns", "exposed_comm_predicted_ns",
    "exposed_comm_wait_predicted_ns", "other_predicted_ns", "cpu_actual_ns", "cpu_predicted_ns"};
#define NCOLUMNS (sizeof COLUMNS / sizeof *COLUMNS)

/* One text field, RFC 4180 (followed by the separator): valid UTF-8 first
 * (malformed bytes as U+FFFD), quoted when it holds a comma, quote, CR or
 * LF, or has leading or trailing blanks (which some readers trim). */
int lsim_csv_field(FILE *f, const char *raw, int last)
{
    char *s = lsim_text_utf8(raw ? raw : "");
    if (!s) return LSIM_ENOMEM;
    size_t n = strlen(s);
    int quote = n && (strpbrk(s, ",\"\r\n") || s[0] == ' ' || s[n - 1] == ' ' || s[0] == '\t' || s[n - 1] == '\t');
    if (quote) {
        fputc('"', f);
        for (const char *c = s; *c; c++) {
            if (*c == '"') fputc('"', f);
            fputc(*c, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputs(last ? "\r\n" : ",", f);
    free(s);
    return 0;
}

static void put_i64(FILE *f, int64_t v) { fprintf(f, "%" PRId64 ",", v); }

/* A field that does not exist: empty. */
static void put_none(FILE *f) { fputc(',', f); }

/* A double that reads back to the same value: the shortest of %.15g and
 * %.17g, as cJSON prints numbers (CSV and --json agree digit for digit). */
void lsim_csv_double(FILE *f, double v)
{
    char b[40];
    snprintf(b, sizeof b, "%.15g", v);
    if (strtod(b, NULL) != v) snprintf(b, sizeof b, "%.17g", v);
    fprintf(f, "%s,", b);
}

/* The four components and the wait, actual (or empty) then predicted. */
static void put_breakdowns(FILE *f, const lsim_breakdown *a, const lsim_breakdown *p)
{
    if (a) {
        put_i64(f, a->exposed_compute);
        put_i64(f, a->overlapped);
        put_i64(f, a->exposed_comm);
        put_i64(f, a->exposed_comm_wait);
        put_i64(f, a->other);
    } else {
        for (int k = 0; k < 5; k++) put_none(f);
    }
    put_i64(f, p->exposed_compute);
    put_i64(f, p->overlapped);
    put_i64(f, p->exposed_comm);
    put_i64(f, p->exposed_comm_wait);
    put_i64(f, p->other);
}

int lsim_csv_header(FILE *f, lsim_err *err)
{
    for (size_t k = 0; k < NCOLUMNS; k++) lsim_csv_field(f, COLUMNS[k], k + 1 == NCOLUMNS);
    if (ferror(f)) return lsim_err_set(err, LSIM_EIO, "cannot write the CSV: %s", strerror(errno));
    return 0;
}

/* What a row says of its GPU: from the item's brief when it has one (an
 * archive read without its graphs: report RESULT.h5 --csv), else from its
 * graph (report.h). */
static lsim_report_brief brief_of(const lsim_replay_item *it)
{
    lsim_report_brief b;
    if (it->brief) return *it->brief;
    lsim_report_brief_of(it->g, &b);
    return b;
}

static const char *iter_name(const lsim_replay_item *it, const lsim_report_brief *b, uint32_t k)
{
    if (b->iter_names) return b->iter_names[k] ? b->iter_names[k] : "";
    return lsim_strtab_get(it->g->strings, it->r->iters[k].name);
}

/* The fields every row of an item starts with, up to and including
 * clock_offset_ns; iter < 0: the window row. */
static int put_lead(FILE *f, const lsim_replay_item *it, const lsim_report_brief *b, size_t idx, long iter)
{
    if (lsim_csv_field(f, b->source, 0)) return -1;
    fprintf(f, "%zu,", idx);
    put_i64(f, b->rank >= 0 ? (int64_t)b->rank : (int64_t)idx);
    if (lsim_csv_field(f, iter < 0 ? "window" : "iteration", 0)) return -1;
    if (iter < 0) {
        put_none(f);
        put_none(f);
    } else {
        fprintf(f, "%ld,", iter);
        if (lsim_csv_field(f, iter_name(it, b, (uint32_t)iter), 0)) return -1;
    }
    if (lsim_csv_field(f, lsim_latency_mode_name(b->latency), 0)) return -1;
    put_i64(f, it->coupled ? 1 : 0);
    put_i64(f, it->coupled ? it->clock_offset : 0);
    return 0;
}

/* One row: the lead, observed, the span and its error, the breakdowns, and
 * an iteration's CPU-side span (ir; empty on window rows, where not
 * observed, and for an archive that did not record it), which ends it. */
static int put_row(FILE *f, const lsim_replay_item *it, const lsim_report_brief *b, size_t idx, long iter, lsim_ns a,
                   lsim_ns p, const lsim_breakdown *ba, const lsim_breakdown *bp, const lsim_iter_report *ir)
{
    int obs = b->observed;
    if (put_lead(f, it, b, idx, iter)) return -1;
    put_i64(f, obs);
    if (obs) put_i64(f, a);
    else put_none(f);
    put_i64(f, p);
    if (obs) lsim_csv_double(f, lsim_rel_err(a, p));
    else put_none(f);
    put_breakdowns(f, obs ? ba : NULL, bp);
    int cpu = ir && ir->cpu_predicted != LSIM_SPAN_UNKNOWN;
    if (cpu && obs) put_i64(f, ir->cpu_actual);
    else put_none(f);
    if (cpu) fprintf(f, "%" PRId64, ir->cpu_predicted);
    fputs("\r\n", f);
    return 0;
}

int lsim_csv_item(FILE *f, const lsim_replay_item *it, size_t idx, lsim_err *err)
{
    const lsim_rank_report *r = it->r;
    lsim_report_brief b = brief_of(it);
    int bad = 0;
    for (uint32_t k = 0; !bad && k < r->niters; k++) {
        const lsim_iter_report *ir = &r->iters[k];
        bad = put_row(f, it, &b, idx, (long)k, ir->actual, ir->predicted, &ir->bd_actual, &ir->bd_predicted, ir);
    }
    if (!bad)
        bad = put_row(f, it, &b, idx, -1, r->window_actual, r->window_predicted, &r->bd_actual, &r->bd_predicted,
                      NULL);
    if (bad) return lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the CSV");
    if (ferror(f)) return lsim_err_set(err, LSIM_EIO, "cannot write the CSV: %s", strerror(errno));
    return 0;
}

char *lsim_csv_item_text(const lsim_replay_item *it, size_t idx)
{
    char *buf = NULL;
    size_t len = 0;
    lsim_err err = {0};
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int rc = lsim_csv_item(f, it, idx, &err);
    if (fclose(f) != 0 || rc) {
        free(buf);
        return NULL;
    }
    return buf;
}

int lsim_csv_write(FILE *f, const lsim_replay_item *items, size_t n, lsim_err *err)
{
    int rc = lsim_csv_header(f, err);
    for (size_t i = 0; !rc && i < n; i++) rc = lsim_csv_item(f, &items[i], i, err);
    return rc;
}
