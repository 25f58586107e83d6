/* Private helpers of lumosim_core (see util.h). */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lsim_time_node_cmp(const void *x, const void *y)
{
    const lsim_time_node *a = x, *c = y;
    if (a->t != c->t) return a->t < c->t ? -1 : 1;
    return a->node < c->node ? -1 : (a->node > c->node);
}

size_t lsim_time_node_count_le(const lsim_time_node *v, size_t n, lsim_ns s)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].t <= s) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int lsim_ns_cmp(const void *a, const void *b)
{
    lsim_ns x = *(const lsim_ns *)a, y = *(const lsim_ns *)b;
    return (x > y) - (x < y);
}

lsim_ns lsim_median_i64(lsim_ns *v, size_t n)
{
    qsort(v, n, sizeof *v, lsim_ns_cmp);
    return v[n / 2];
}

int lsim_name_index(const char *const *names, size_t n, const char *s)
{
    if (!s) return -1;
    for (size_t i = 0; i < n; i++)
        if (names[i] && !strcmp(names[i], s)) return (int)i;
    return -1;
}

int lsim_name_unknown(const char *what, const char *const *names, size_t n, const char *s, lsim_err *err)
{
    char list[256];
    size_t k = 0;
    list[0] = '\0';
    for (size_t i = 0; i < n && k < sizeof list; i++) {
        if (!names[i]) continue;
        int w = snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "", names[i]);
        if (w < 0) break;
        k += (size_t)w;
    }
    return lsim_err_set(err, LSIM_EARG, "unknown %s \"%s\" (one of: %s)", what, s ? s : "", list);
}
