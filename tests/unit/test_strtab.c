/* lsim_strtab: ids dense and in first-insertion order, same string -> same id,
 * returned pointers stable across growth, long strings, non-NUL-terminated
 * input, empty string, out-of-range lookups. */
#include <stdlib.h>

#include "lumosim/strtab.h"
#include "check.h"

#define N 200000

static void make_name(char *buf, size_t cap, unsigned i)
{
    snprintf(buf, cap, "aten::op_%u_%x", i, i * 2654435761u);
}

int main(void)
{
    lsim_strtab *t = lsim_strtab_new();
    CHECK(t != NULL);
    if (!t)
        return check_result("test_strtab");
    CHECK_I64(lsim_strtab_count(t), 0);
    CHECK(lsim_strtab_get(t, 0) == NULL);

    /* Dense ids in insertion order; keep the first pointers to check they
     * survive growth. */
    char buf[64];
    const char *early[16];
    uint32_t id = UINT32_MAX;
    for (unsigned i = 0; i < N; i++) {
        make_name(buf, sizeof buf, i);
        int rc = lsim_strtab_intern(t, buf, strlen(buf), &id);
        if (rc != 0 || id != i) {
            CHECK_MSG(rc == 0 && id == i, "intern #%u gave rc=%d id=%u", i, rc,
                      (unsigned)id);
            break;
        }
        if (i < 16)
            early[i] = lsim_strtab_get(t, i);
    }
    CHECK_I64(lsim_strtab_count(t), N);

    /* Same string, same id, no new entry (buffer at another address). */
    for (unsigned i = 0; i < N; i += 997) {
        make_name(buf, sizeof buf, i);
        char *copy = malloc(strlen(buf) + 1);
        strcpy(copy, buf);
        uint32_t again = UINT32_MAX;
        CHECK(lsim_strtab_intern(t, copy, strlen(copy), &again) == 0);
        CHECK_I64(again, i);
        free(copy);
    }
    CHECK_I64(lsim_strtab_count(t), N);

    /* Pointer stability: the pointers taken while the table was small still
     * point at the same, unchanged strings. */
    for (unsigned i = 0; i < 16; i++) {
        make_name(buf, sizeof buf, i);
        CHECK(early[i] == lsim_strtab_get(t, i));
        CHECK_STR(early[i], buf);
    }
    /* Every string reads back. */
    for (unsigned i = 0; i < N; i += 13) {
        make_name(buf, sizeof buf, i);
        const char *s = lsim_strtab_get(t, i);
        if (!s || strcmp(s, buf) != 0) {
            CHECK_STR(s, buf);
            break;
        }
    }
    CHECK(lsim_strtab_get(t, N) == NULL);
    CHECK(lsim_strtab_get(t, UINT32_MAX) == NULL);

    /* Input need not be NUL-terminated: only s[0..len) is interned. */
    const char *big = "cudaLaunchKernelXYZ";
    uint32_t a = 0, b = 0;
    CHECK(lsim_strtab_intern(t, big, 16, &a) == 0); /* "cudaLaunchKernel" */
    CHECK_STR(lsim_strtab_get(t, a), "cudaLaunchKernel");
    CHECK(lsim_strtab_intern(t, "cudaLaunchKernel", 16, &b) == 0);
    CHECK_I64(a, b);
    CHECK_I64(a, N);
    /* A prefix is a different string. */
    CHECK(lsim_strtab_intern(t, big, 4, &b) == 0);
    CHECK(a != b);
    CHECK_STR(lsim_strtab_get(t, b), "cuda");

    /* Empty string is a string. */
    uint32_t e1 = 0, e2 = 1;
    CHECK(lsim_strtab_intern(t, "", 0, &e1) == 0);
    CHECK(lsim_strtab_intern(t, "x", 0, &e2) == 0);
    CHECK_I64(e1, e2);
    CHECK_STR(lsim_strtab_get(t, e1), "");

    /* Long strings embedded between short ones (longer than any plausible
     * block size): stored whole, and short strings around them unaffected. */
    const char *before = lsim_strtab_get(t, 0);
    size_t lens[] = {4095, 4096, 4097, 65536, 1u << 20, 3u << 20};
    uint32_t longid[6], shortid[6];
    char *longs[6];
    for (int k = 0; k < 6; k++) {
        longs[k] = malloc(lens[k] + 1);
        for (size_t j = 0; j < lens[k]; j++)
            longs[k][j] = (char)('a' + (j * 7 + (size_t)k) % 26);
        longs[k][lens[k]] = '\0';
        CHECK(lsim_strtab_intern(t, longs[k], lens[k], &longid[k]) == 0);
        snprintf(buf, sizeof buf, "short_after_long_%d", k);
        CHECK(lsim_strtab_intern(t, buf, strlen(buf), &shortid[k]) == 0);
        CHECK_I64(shortid[k], longid[k] + 1);
    }
    for (int k = 0; k < 6; k++) {
        const char *s = lsim_strtab_get(t, longid[k]);
        CHECK(s != NULL && strlen(s) == lens[k] && memcmp(s, longs[k], lens[k]) == 0);
        snprintf(buf, sizeof buf, "short_after_long_%d", k);
        CHECK_STR(lsim_strtab_get(t, shortid[k]), buf);
        uint32_t again = 0;
        CHECK(lsim_strtab_intern(t, longs[k], lens[k], &again) == 0);
        CHECK_I64(again, longid[k]);
        free(longs[k]);
    }
    CHECK(before == lsim_strtab_get(t, 0));
    make_name(buf, sizeof buf, 0);
    CHECK_STR(before, buf);

    /* Byte accounting covers at least the characters stored. */
    CHECK(lsim_strtab_bytes(t) >= (size_t)(4u << 20) + (size_t)N * 10);

    uint32_t total = lsim_strtab_count(t);
    CHECK_I64(total, (int64_t)N + 3 + 12);

    lsim_strtab_free(t);
    lsim_strtab_free(NULL); /* like free(): a no-op */

    /* Two tables given the same input assign the same ids (determinism). */
    lsim_strtab *x = lsim_strtab_new(), *y = lsim_strtab_new();
    const char *words[] = {"kernel", "cpu_op", "kernel", "cuda_runtime", "",
                           "cpu_op", "gpu_memcpy"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        uint32_t ix = 0, iy = 1;
        CHECK(lsim_strtab_intern(x, words[i], strlen(words[i]), &ix) == 0);
        CHECK(lsim_strtab_intern(y, words[i], strlen(words[i]), &iy) == 0);
        CHECK_I64(ix, iy);
    }
    CHECK_I64(lsim_strtab_count(x), 5);
    lsim_strtab_free(y);

    /* An overlay of x (5 strings): its replaced ids read its text, in any
     * order of replacement, the others x's; x is untouched; it holds a
     * few hundred bytes, not one block of the base's size; interning
     * into it keeps every id's text, finds what is there and appends. */
    lsim_strtab *o = NULL;
    CHECK(lsim_strtab_new_overlay(x, &o) == 0 && o);
    /* text bytes, length + 1 each: "kernel" 7, "cpu_op" 7, "cuda_runtime"
     * 13, "" 1, "gpu_memcpy" 11 */
    CHECK_I64(lsim_strtab_text(x), 39);
    if (o) {
        CHECK_I64(lsim_strtab_text(o), 39);
        CHECK(lsim_strtab_replace(o, 3, "dp:1", 4) == 0);
        CHECK(lsim_strtab_replace(o, 0, "tp:7", 4) == 0);
        CHECK(lsim_strtab_replace(o, 3, "dp:2", 4) == 0); /* replaced again */
        CHECK(lsim_strtab_replace(o, 5, "x", 1) == LSIM_EARG);
        CHECK_I64(lsim_strtab_text(o), 41); /* "tp:7" 5 for 7, "dp:2" 5 for 1 */
        CHECK_I64(lsim_strtab_text(x), 39);
        CHECK_I64(lsim_strtab_count(o), 5);
        const char *want[] = {"tp:7", "cpu_op", "cuda_runtime", "dp:2", "gpu_memcpy"};
        for (uint32_t i = 0; i < 5; i++) CHECK_STR(lsim_strtab_get(o, i), want[i]);
        CHECK(lsim_strtab_get(o, 5) == NULL);
        CHECK_STR(lsim_strtab_get(x, 0), "kernel");
        CHECK_STR(lsim_strtab_get(x, 3), "");
        CHECK(lsim_strtab_bytes(o) < 1024);
        uint32_t got = 99;
        CHECK(lsim_strtab_intern(o, "dp:2", 4, &got) == 0);
        CHECK_I64(got, 3);
        CHECK(lsim_strtab_intern(o, "kernel", 6, &got) == 0); /* replaced away: new */
        CHECK_I64(got, 5);
        for (uint32_t i = 0; i < 5; i++) CHECK_STR(lsim_strtab_get(o, i), want[i]);
        CHECK(lsim_strtab_find(o, "cpu_op", 6, &got) == 1);
        CHECK_I64(got, 1);
        CHECK_I64(lsim_strtab_text(o), 48); /* "kernel" 7 more */
        CHECK(lsim_strtab_replace(o, 1, "c", 1) == 0); /* dense now */
        CHECK_I64(lsim_strtab_text(o), 43);
        CHECK_I64(lsim_strtab_text(x), 39);
    }
    lsim_strtab_free(x); /* o still holds it */
    if (o) CHECK_STR(lsim_strtab_get(o, 2), "cuda_runtime");
    lsim_strtab_free(o);

    return check_result("test_strtab");
}
