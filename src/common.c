/* Error carrier, status names, the large-array allocator, the grow-array
 * helper and the monotonic clock (see include/lumosim/common.h). */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE and MADV_POPULATE_WRITE */
#include "lumosim/common.h"
#include "lumosim/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "lumosim/text.h"
#include "util.h"

int lsim_err_set(lsim_err *err, int code, const char *fmt, ...)
{
    if (err) {
        /* The message names files, whose names may hold a newline or bytes
         * that are not UTF-8: escaped here, once for every message, so that
         * the CLI's error line stays one line (text.h; escaping an escaped
         * message again changes nothing). */
        char raw[LSIM_ERR_LEN];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        lsim_text_line(err->msg, sizeof err->msg, raw);
        err->code = code;
    }
    return code;
}

const char *lsim_strerror(int code)
{
    switch (code) {
#define ERR_CASE_(id, value, msg) \
    case id: return msg;
        LSIM_ERRNO_MAP(ERR_CASE_)
#undef ERR_CASE_
    default: return "internal error";
    }
}

int lsim_strerror_parse(const char *msg, int *code, lsim_err *err)
{
#define ERR_NAME_(id, value, m) m,
    static const char *const MSGS[] = {LSIM_ERRNO_MAP(ERR_NAME_)};
#undef ERR_NAME_
#define ERR_VALUE_(id, value, m) id,
    static const int CODES[] = {LSIM_ERRNO_MAP(ERR_VALUE_)};
#undef ERR_VALUE_
    const size_t n = sizeof CODES / sizeof *CODES;
    int i = lsim_name_index(MSGS, n, msg);
    if (i < 0) return lsim_name_unknown("status", MSGS, n, msg, err);
    *code = CODES[i];
    return 0;
}

/* The huge-page hint only on request (common.h: on a VM with free page
 * reporting it made filling memory 5x slower: issue 20). */
static int hugepages_wanted(void)
{
    const char *s = getenv("LUMOSIM_HUGEPAGES");
    return s && s[0] == '1' && s[1] == '\0';
}

void *lsim_alloc_big(size_t bytes)
{
#if defined(MADV_HUGEPAGE) || defined(MADV_POPULATE_WRITE)
    const size_t huge = (size_t)2 << 20;
    if (bytes >= 2 * huge && bytes <= SIZE_MAX - huge) {
        size_t len = (bytes + huge - 1) / huge * huge;
        void *p = NULL;
        if (posix_memalign(&p, huge, len)) return NULL;
#ifdef MADV_HUGEPAGE
        if (hugepages_wanted()) (void)madvise(p, len, MADV_HUGEPAGE); /* a hint: without it the pages are only smaller */
#endif
#ifdef MADV_POPULATE_WRITE
        (void)madvise(p, len, MADV_POPULATE_WRITE); /* unsupported: faulted in at first write instead */
#endif
        return p;
    }
#endif
    return malloc(bytes ? bytes : 1); /* lsim_malloc_big is its seam (alloc.h) */
}

double lsim_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int lsim_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t c = *cap > 16 ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2) {
            c = need;
            break;
        }
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem) return LSIM_ENOMEM;
    void *q = lsim_realloc(*p, c * elem);
    if (!q) return LSIM_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}
