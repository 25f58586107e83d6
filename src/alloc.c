/* The allocation seam (alloc.h). */
#include "lumosim/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "lumosim/common.h"

/* The hook: the allocation numbered fail_at (counting from 0 at the last
 * lsim_alloc_fail_after) fails; -1 never. Not thread-safe (alloc.h). */
static long fail_at = -1;
static long counted;

void lsim_alloc_fail_after(long n)
{
    fail_at = n < 0 ? -1 : n;
    counted = 0;
}

long lsim_alloc_count(void) { return counted; }

/* 1 when this allocation must fail. Counts only while armed, so that the
 * production path is one compare. */
static int fail_now(void)
{
    if (fail_at < 0) return 0;
    if (counted++ != fail_at) return 0;
    fail_at = -1; /* once */
    return 1;
}

void *lsim_malloc(size_t bytes) { return fail_now() ? NULL : malloc(bytes); }
void *lsim_calloc(size_t count, size_t size) { return fail_now() ? NULL : calloc(count, size); }
void *lsim_realloc(void *p, size_t bytes) { return fail_now() ? NULL : realloc(p, bytes); }
void lsim_free(void *p) { free(p); }
void *lsim_malloc_big(size_t bytes) { return fail_now() ? NULL : lsim_alloc_big(bytes); }

char *lsim_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = lsim_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

char *lsim_strndup(const char *s, size_t n)
{
    size_t l = strnlen(s, n);
    char *d = lsim_malloc(l + 1);
    if (!d) return NULL;
    memcpy(d, s, l);
    d[l] = 0;
    return d;
}
