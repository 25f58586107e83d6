/* Tiny assertion helpers shared by the unit tests. Each test is a program
 * whose main() returns the number of failed checks (capped), printing one line
 * per failure with file:line and what was expected. */
#ifndef LSIM_TEST_CHECK_H
#define LSIM_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            check_failures++;                                                \
        }                                                                    \
    } while (0)

#define CHECK_MSG(cond, ...)                                                 \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, \
                    #cond);                                                  \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            check_failures++;                                                \
        }                                                                    \
    } while (0)

#define CHECK_I64(got, want)                                                 \
    do {                                                                     \
        int64_t got_ = (int64_t)(got), want_ = (int64_t)(want);              \
        if (got_ != want_) {                                                 \
            fprintf(stderr, "%s:%d: %s == %" PRId64 ", expected %" PRId64    \
                    "\n", __FILE__, __LINE__, #got, got_, want_);            \
            check_failures++;                                                \
        }                                                                    \
    } while (0)

#define CHECK_STR(got, want)                                                 \
    do {                                                                     \
        const char *got_ = (got), *want_ = (want);                           \
        if (!got_ || strcmp(got_, want_) != 0) {                             \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n",        \
                    __FILE__, __LINE__, #got, got_ ? got_ : "(null)",        \
                    want_);                                                  \
            check_failures++;                                                \
        }                                                                    \
    } while (0)

/* A temporary file holding text (the tests' input files: mappings, model
 * files, histograms); its name, /tmp/<prefix>_XXXXXX made unique, in path
 * (cap bytes). The caller unlinks it. A failure to make it is a failed
 * check. */
static inline void check_write_tmp(char *path, size_t cap, const char *prefix, const char *text)
{
    snprintf(path, cap, "/tmp/%s_XXXXXX", prefix);
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    FILE *f = fdopen(fd, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static int check_result(const char *name)
{
    if (check_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
