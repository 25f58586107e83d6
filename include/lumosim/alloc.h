/* The allocation seam: every allocation of the libraries (src/ but the
 * CLI, io/, mpi/; tests/check_arch.py refuses a raw malloc, calloc,
 * realloc, strdup or strndup there) goes through these wrappers, so that a
 * test can make any one of them fail and check that the function returns
 * LSIM_ENOMEM with a message, frees what it had taken and leaves its inputs
 * as they were (tests/unit/test_oom.c; the graph store:
 * tests/unit/test_store_oom.c).
 *
 * The wrappers are the C library's allocator and nothing else: memory from
 * lsim_malloc may be released with free() and memory from malloc with
 * lsim_free, so memory that crosses into the CLI or a library's callback
 * may be freed either way. Zero sizes behave as in malloc (callers that
 * must not get NULL ask for at least one byte).
 *
 * The test hook is process-global and not thread-safe: call it from a
 * single-threaded test only. With it disarmed (the default) the wrappers
 * cost one predictable branch. Local (no MPI). */
#ifndef LUMOSIM_ALLOC_H
#define LUMOSIM_ALLOC_H

#include <stddef.h>

void *lsim_malloc(size_t bytes);
void *lsim_calloc(size_t count, size_t size);
/* On failure returns NULL and p is left allocated and unchanged. */
void *lsim_realloc(void *p, size_t bytes);
void lsim_free(void *p);
/* strdup and strndup through the seam; release with lsim_free or free. */
char *lsim_strdup(const char *s);
char *lsim_strndup(const char *s, size_t n);
/* lsim_alloc_big (common.h: faulted in at once) through the
 * seam; release with lsim_free or free. */
void *lsim_malloc_big(size_t bytes);

/* Testing: counting from this call, allocation number n (0 = the next one)
 * fails, once: it returns NULL without allocating (a failed lsim_realloc
 * leaves its block alone); the ones before and after succeed. n = -1
 * disarms the hook (never fail). Resets the count lsim_alloc_count reads. */
void lsim_alloc_fail_after(long n);
/* Allocations through the seam since the last lsim_alloc_fail_after, up to
 * and including the one made to fail (counting stops there): > n exactly
 * when allocation n failed. A test loops n = 0, 1, 2, ... until an
 * operation runs with count <= n, having then made each of its allocations
 * fail in turn. */
long lsim_alloc_count(void);

#endif
