/* Private helpers of lumosim_core (not installed): the (time, node) pair,
 * the median, name-table lookup and the gzip open/close the readers share.
 * Local (no MPI). The monotonic clock (lsim_now_s) and the grow-array
 * helper (lsim_grow, LSIM_GROW) are public, in lumosim/common.h: the CLI
 * and the io and mpi libraries use them too. */
#ifndef LSIM_UTIL_H
#define LSIM_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "lumosim/common.h"

/* A (time, node) pair, ordered by time then node id (lsim_time_node_cmp, a
 * qsort comparator): for ordering by launch and searching by end time. */
typedef struct lsim_time_node {
    lsim_ns t;
    uint32_t node;
} lsim_time_node;
int lsim_time_node_cmp(const void *a, const void *b);

/* Number of items with t <= s in an array sorted by lsim_time_node_cmp. */
size_t lsim_time_node_count_le(const lsim_time_node *v, size_t n, lsim_ns s);

/* qsort comparator of int64 (lsim_ns) values, ascending. */
int lsim_ns_cmp(const void *a, const void *b);

/* The upper median v[n / 2] of v[0..n) after sorting it in place; n > 0. */
lsim_ns lsim_median_i64(lsim_ns *v, size_t n);

/* Index of s in names[0..n) (NULL entries skipped), or -1. */
int lsim_name_index(const char *const *names, size_t n, const char *s);

/* The LSIM_EARG message of a failed parse: "unknown WHAT \"S\" (one of:
 * a, b, ...)" in err (may be NULL); returns LSIM_EARG. */
int lsim_name_unknown(const char *what, const char *const *names, size_t n, const char *s, lsim_err *err);

/* Open a trace-like file for gzread: a regular file only (input.h),
 * gzip or plain (zlib detects which), with a read buffer of buf bytes (0:
 * zlib's default). 0 and *out, or the open's error / LSIM_ENOMEM in err
 * ("PATH: ..."). Close with lsim_gz_close. */
int lsim_gz_open(const char *path, unsigned buf, gzFile *out, lsim_err *err);

/* What a failed gzread means, from gzerror's code ("truncated gzip data
 * (unexpected end of file)", "corrupt gzip data", ...). */
const char *lsim_gz_why(int zerr);

/* gzclose gz; when rc is 0 and the close fails (checksum, trailer), returns
 * LSIM_EFORMAT "PATH: corrupt gzip data (checksum or trailer)" in err;
 * otherwise rc. */
int lsim_gz_close(gzFile gz, const char *path, int rc, lsim_err *err);

/* splitmix64's finaliser: every output bit depends on every input bit
 * (the string table's slots, the symmetry reduction's colours). */
static inline uint64_t lsim_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

#endif
