/* Error carrier, status names and the large-array allocator (see
 * include/lumosim/common.h). */
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE */
#include "lumosim/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "lumosim/text.h"

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
    case LSIM_OK: return "ok";
    case LSIM_ENOMEM: return "out of memory";
    case LSIM_EIO: return "I/O error";
    case LSIM_EFORMAT: return "malformed input";
    case LSIM_ETRACE: return "not a usable trace";
    case LSIM_EARG: return "bad argument";
    default: return "internal error";
    }
}

void *lsim_alloc_big(size_t bytes)
{
#ifdef MADV_HUGEPAGE
    const size_t huge = (size_t)2 << 20;
    if (bytes >= 2 * huge && bytes <= SIZE_MAX - huge) {
        size_t len = (bytes + huge - 1) / huge * huge;
        void *p = NULL;
        if (posix_memalign(&p, huge, len)) return NULL;
        (void)madvise(p, len, MADV_HUGEPAGE); /* a hint: without it the pages are only smaller */
#ifdef MADV_POPULATE_WRITE
        (void)madvise(p, len, MADV_POPULATE_WRITE); /* unsupported: faulted in at first write instead */
#endif
        return p;
    }
#endif
    return malloc(bytes ? bytes : 1);
}
