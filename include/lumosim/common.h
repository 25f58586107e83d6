/* lumosim common definitions: status codes, the error-message carrier, version.
 *
 * Contract: every library function that can fail returns int (0 or a negative
 * LSIM_E* code) and, on failure, fills the caller's lsim_err with one line
 * naming the file (when there is one) and what is wrong. Library code never
 * prints and never exits; the CLI decides what to do with the message. */
#ifndef LUMOSIM_COMMON_H
#define LUMOSIM_COMMON_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define LSIM_VERSION "0.1.0"

/* Name tables, in the style of libuv's UV_ERRNO_MAP: one X-macro per enum
 * lists each value once, and expands into the enum (the same identifiers and
 * values, in order), its name function and its parse function (name ->
 * value). LSIM_ENUM_ENTRY_ and LSIM_ENUM_COUNT_ are the two expansions
 * headers use: an enumerator, and a +1 per value. */
#define LSIM_ENUM_ENTRY_(id, name) id,
#define LSIM_ENUM_COUNT_(id, name) +1

/* Status codes: X(identifier, value, message). */
#define LSIM_ERRNO_MAP(X)                                                             \
    X(LSIM_OK, 0, "ok")                                                               \
    X(LSIM_ENOMEM, -1, "out of memory")        /* allocation failed */                \
    X(LSIM_EIO, -2, "I/O error")               /* file cannot be opened/read/written */ \
    X(LSIM_EFORMAT, -3, "malformed input")     /* not valid JSON / gzip / truncated */ \
    X(LSIM_ETRACE, -4, "not a usable trace")   /* valid JSON but not a usable Kineto trace */ \
    X(LSIM_EARG, -5, "bad argument")           /* bad argument from the caller */     \
    X(LSIM_EINTERNAL, -6, "internal error")    /* invariant violated (a bug: please report) */

#define LSIM_ERRNO_ENTRY_(id, value, msg) id = value,
enum { LSIM_ERRNO_MAP(LSIM_ERRNO_ENTRY_) };
#undef LSIM_ERRNO_ENTRY_

#define LSIM_ERR_LEN 512

/* Caller-owned error carrier; msg is always NUL-terminated. */
typedef struct lsim_err {
    int code;
    char msg[LSIM_ERR_LEN];
} lsim_err;

/* Fill err (may be NULL) with a printf-style message; returns code so callers
 * can write `return lsim_err_set(err, LSIM_EIO, "...")`. Local. */
int lsim_err_set(lsim_err *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Short name of a status code ("out of memory", "I/O error", ...;
 * "internal error" for a code not in LSIM_ERRNO_MAP). Local. */
const char *lsim_strerror(int code);

/* The code whose lsim_strerror is msg: 0 and *code, or LSIM_EARG (err may
 * be NULL). Local. */
int lsim_strerror_parse(const char *msg, int *code, lsim_err *err);

/* Memory for a large array that is written soon after (the engines'
 * per-node state): from 4 MiB up it is aligned to 2 MiB and, where the
 * kernel can (MADV_POPULATE_WRITE, Linux 5.14), faulted in here, in one
 * call, so that the cost is paid by the allocating step (the engines'
 * set-up), not by the first loop that writes, and paid at batch speed
 * (2.0-2.5 GB/s against 1.5-1.7 GB/s faulting at first write, CPU time,
 * bench/bench_setup). The transparent-huge-page hint is given only when
 * LUMOSIM_HUGEPAGES=1: on a virtual machine that hands free memory back
 * to its host (free page reporting, virtio-balloon) every fresh huge page
 * is first refaulted by the host, and filling memory with the hint ran at
 * 0.4 GB/s, against 2 GB/s without (docs/performance.md, "Figures behind
 * design choices"); on a host whose free memory stays backed the hint fills
 * at 8 GB/s and saves TLB misses. Below 4 MiB, or where the hints are
 * unknown, plain malloc. The caller frees with free(). Local. */
void *lsim_alloc_big(size_t bytes);

/* Make *p (an array of elem-byte items, *cap of them) hold at least need
 * items: nothing when it does; else realloc to max(need, 2 * *cap, 16)
 * items. 0, or LSIM_ENOMEM (on overflow of need * elem too) with *p and
 * *cap untouched. The caller owns *p (free). The one grow-array helper of
 * every module (core, io, the CLI). Local. */
int lsim_grow(void **p, size_t *cap, size_t need, size_t elem);

/* lsim_grow for a typed pointer: LSIM_GROW(t->ev, &t->capev, t->nev + 1). */
#define LSIM_GROW(ptr, capp, need) lsim_grow((void **)&(ptr), (capp), (need), sizeof *(ptr))

/* Seconds on a monotonic clock (for durations, never for dates): the phase
 * timings of every module and of the CLI. Local. */
double lsim_now_s(void);

/* Time inside the core is always int64 nanoseconds. */
typedef int64_t lsim_ns;

/* Saturating time arithmetic: a result that int64 cannot hold becomes
 * INT64_MAX or INT64_MIN, never a wrapped (and, in C, undefined) value.
 * Inputs are range-checked where they enter (graph.h, LSIM_TIME_MAX and
 * LSIM_DUR_MAX), so on valid data these never saturate; they make sure
 * that data past the checks gives an absurd time that a later check
 * refuses, not a negative duration. __builtin_*_overflow (GCC, Clang)
 * compiles to an add and a branch on the overflow flag: free in the
 * engine's loop. Local. */
static inline lsim_ns lsim_ns_add_sat(lsim_ns a, lsim_ns b)
{
    lsim_ns r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline lsim_ns lsim_ns_sub_sat(lsim_ns a, lsim_ns b)
{
    lsim_ns r;
    if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* A double (a number of ns) rounded to the nearest lsim_ns, saturated at
 * INT64_MIN / INT64_MAX; NaN gives INT64_MAX, so that a bounds check
 * refuses it rather than reading it as 0. (llround of a value past int64
 * is undefined; on x86 it returns INT64_MIN, which is how a huge
 * --slow-gpu factor once became a negative duration.) */
static inline lsim_ns lsim_ns_from_double(double x)
{
    if (isnan(x) || x >= 9223372036854775807.0) return INT64_MAX; /* the literal is 2^63 as a double */
    if (x < -9223372036854775807.0) return INT64_MIN;                /* below -2^63 */
    return (lsim_ns)llround(x);
}

#endif
