/* A replay's results as CSV (RFC 4180), one row per rank x iteration and
 * one row per rank for its whole window: for pandas and spreadsheets. The
 * columns are documented in docs/csv.md; their names follow lumosim
 * collect's CSV and the --json keys (docs/report-json.md) where they
 * overlap.
 *
 * Format: a header row, then the rows; CRLF line ends; a field holding a
 * comma, a double quote, CR or LF (or starting or ending with a blank) is
 * quoted, quotes doubled. Text from outside (source paths, iteration names)
 * is made valid UTF-8 first, as the JSON report does: bytes that are not
 * part of a well-formed sequence become U+FFFD (text.h). Integers
 * (nanoseconds, counts) are printed as integers; ratios as the shortest of
 * %.15g / %.17g that reads back to the same double (as cJSON prints them,
 * so CSV and --json agree digit for digit). A figure that does not exist
 * (the actual side of a graph without observed times) is an empty field.
 *
 * Ownership: everything is borrowed. Local; the library never prints: the
 * writers write to the FILE* they are given and nothing else. */
#ifndef LUMOSIM_CSV_H
#define LUMOSIM_CSV_H

#include <stddef.h>
#include <stdio.h>

#include "lumosim/report.h"

/* The field rules every CSV of lumosim keeps (this one and lumosim
 * collect's), so that they cannot drift apart: */
/* One text field, RFC 4180, then "," (or CRLF when last): valid UTF-8 first
 * (malformed bytes as U+FFFD), quoted when it holds a comma, quote, CR or
 * LF, or has leading or trailing blanks or tabs (which some readers trim);
 * NULL is empty. 0, or LSIM_ENOMEM. */
int lsim_csv_field(FILE *f, const char *s, int last);
/* A double that reads back to the same value (the shortest of %.15g and
 * %.17g, as cJSON prints numbers), then ",". */
void lsim_csv_double(FILE *f, double v);

/* The header row. Returns 0 or LSIM_EIO. */
int lsim_csv_header(FILE *f, lsim_err *err);

/* The rows of one item, as GPU idx of its run (the gpu column; the rank
 * column is the graph's rank, or idx when it names none, as in --json):
 * its iterations in order, then its window row. The item needs its report
 * r, and its graph g or its brief (rank, source, observed, latency and,
 * without g, iter_names: an archive read without its graphs gives the same
 * rows). Returns 0 or LSIM_EIO. */
int lsim_csv_item(FILE *f, const lsim_replay_item *it, size_t idx, lsim_err *err);

/* The same rows as malloc'd text (caller frees), for a CSV assembled from
 * several processes; NULL when out of memory. */
char *lsim_csv_item_text(const lsim_replay_item *it, size_t idx);

/* The whole CSV: the header, then items[0..n) as GPUs 0..n-1. Returns 0 or
 * LSIM_EIO. */
int lsim_csv_write(FILE *f, const lsim_replay_item *items, size_t n, lsim_err *err);

#endif
