/* Error carrier and status names (see include/lumosim/common.h). */
#include "lumosim/common.h"

#include <stdarg.h>
#include <stdio.h>

int lsim_err_set(lsim_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
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
