/* Private helpers of lumosim_core (not installed): the (time, node) pair,
 * the median, name-table lookup.
 * Local (no MPI). The gzip open/close of the trace readers is public, in
 * lumosim/input.h. The monotonic clock (lsim_now_s) and the grow-array
 * helper (lsim_grow, LSIM_GROW) are public, in lumosim/common.h: the CLI
 * and the io and mpi libraries use them too. */
#ifndef LSIM_UTIL_H
#define LSIM_UTIL_H

#include <stddef.h>
#include <stdint.h>

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
