/* lsim_us_text_to_ns: the exact decimal microseconds -> int64 nanoseconds
 * conversion used for every ts/dur. Rounds half away from zero below 1 ns,
 * never goes through a double, respects len (input need not be
 * NUL-terminated), and rejects anything that is not a JSON number. */
#include <stdlib.h>

#include "lumosim/trace.h"
#include "check.h"

static void ok(const char *s, lsim_ns want, int line)
{
    lsim_ns got = -777;
    int rc = lsim_us_text_to_ns(s, strlen(s), &got);
    if (rc != 0 || got != want) {
        fprintf(stderr, "%s:%d: lsim_us_text_to_ns(\"%s\") -> rc=%d ns=%" PRId64
                ", expected rc=0 ns=%" PRId64 "\n", __FILE__, line, s, rc,
                (int64_t)got, (int64_t)want);
        check_failures++;
    }
    /* Same text, not NUL-terminated, followed by digits that must be ignored. */
    size_t n = strlen(s);
    char *buf = malloc(n + 4);
    memcpy(buf, s, n);
    memcpy(buf + n, "999", 3);
    got = -777;
    rc = lsim_us_text_to_ns(buf, n, &got);
    if (rc != 0 || got != want) {
        fprintf(stderr, "%s:%d: lsim_us_text_to_ns(\"%s\" + trailing bytes, len %zu)"
                " -> rc=%d ns=%" PRId64 ", expected ns=%" PRId64 "\n", __FILE__,
                line, s, n, rc, (int64_t)got, (int64_t)want);
        check_failures++;
    }
    free(buf);
}

static void bad(const char *s, size_t len, int line)
{
    lsim_ns got = 0;
    int rc = lsim_us_text_to_ns(s, len, &got);
    if (rc != LSIM_EFORMAT) {
        fprintf(stderr, "%s:%d: lsim_us_text_to_ns(\"%.*s\") -> rc=%d ns=%" PRId64
                ", expected LSIM_EFORMAT (%d)\n", __FILE__, line, (int)len, s,
                rc, (int64_t)got, LSIM_EFORMAT);
        check_failures++;
    }
}

#define OK(s, want) ok((s), (lsim_ns)(want), __LINE__)
#define BAD(s) bad((s), strlen(s), __LINE__)

int main(void)
{
    /* integers (older traces) */
    OK("12", 12000);
    OK("0", 0);
    OK("-0", 0);
    OK("1", 1000);
    OK("1694039968955744", INT64_C(1694039968955744000));
    OK("-12", -12000);

    /* fractions (newer traces: ns resolution) */
    OK("0.25", 250);
    OK("0.5", 500);
    OK("0.75", 750);
    OK("-3.5", -3500);
    OK("1711964646123456.789", INT64_C(1711964646123456789));
    OK("1711964646123456.25", INT64_C(1711964646123456250));
    OK("4203669604595.407", INT64_C(4203669604595407));
    OK("0.001", 1);
    OK("1.000", 1000);
    OK("0.123456789012", 123);

    /* rounding below 1 ns: half away from zero */
    OK("1.0005", 1001);
    OK("1.0004", 1000);
    OK("1.00049999999", 1000);
    OK("1.0006", 1001);
    OK("-1.0005", -1001);
    OK("-1.0004", -1000);
    OK("0.0005", 1);
    OK("-0.0005", -1);
    OK("0.0004999", 0);
    OK("1711964646123456.7895", INT64_C(1711964646123456790));
    OK("1711964646123456.7894999", INT64_C(1711964646123456789));
    OK("0.9995", 1000);
    OK("9.9999995", 10000);

    /* Values a double cannot hold exactly must still come out exact. */
    OK("9007199254740993", INT64_C(9007199254740993000));   /* 2^53 + 1 */
    OK("1711964646123456.001", INT64_C(1711964646123456001));
    OK("1711964646123457.999", INT64_C(1711964646123457999));
    OK("9000000000000000.999", INT64_C(9000000000000000999));
    OK("-9000000000000000.999", -INT64_C(9000000000000000999));

    /* exponents (JSON allows them; some writers use them) */
    OK("1e3", 1000000);
    OK("1E3", 1000000);
    OK("1e+3", 1000000);
    OK("2.5e-1", 250);
    OK("25e-2", 250);
    OK("1.5e-3", 2);          /* 1.5 ns, half away from zero */
    OK("-1.5e-3", -2);
    OK("1e-3", 1);
    OK("1e-4", 0);
    OK("1.7119646461234568e+15", INT64_C(1711964646123456800));
    OK("1.711964646123456789E15", INT64_C(1711964646123456789));
    OK("0e0", 0);
    OK("123456789e-9", 123);   /* 0.123456789 us */

    /* not numbers */
    BAD("");
    BAD("abc");
    BAD("-");
    BAD("+");
    BAD(".");
    BAD("1.");
    BAD(".5");
    BAD("1e");
    BAD("1e+");
    BAD("e3");
    BAD("1.2.3");
    BAD("--1");
    BAD("1x");
    BAD("12 ");
    BAD(" 12");
    BAD("0x10");
    BAD("NaN");
    BAD("inf");
    BAD("\"12\"");
    BAD("null");
    BAD("1,5");
    bad("12", 0, __LINE__); /* empty range of a non-empty buffer */

    /* Out of int64 range: any error, never a wrapped value. */
    const char *huge[] = {"99999999999999999999", "-99999999999999999999",
                          "9223372036854775.808", "1e30", "-1e30"};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        lsim_ns got = 0;
        int rc = lsim_us_text_to_ns(huge[i], strlen(huge[i]), &got);
        CHECK_MSG(rc < 0, "\"%s\" (out of range) -> rc=%d ns=%" PRId64, huge[i], rc,
                  (int64_t)got);
    }

    return check_result("test_timeconv");
}
