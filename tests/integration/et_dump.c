/* et_dump FILE...: what lsim_et_read finds in each execution trace, in the
 * plain form tests/integration/et.sh compares with its own python3 reading
 * of the same file (groups as size/op count pairs, sorted, since a group's
 * name in older traces is a per-process address). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/et.h"

static int cmp_pair(const void *a, const void *b)
{
    const long long *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? 1 : -1;
    return x[1] < y[1] ? 1 : x[1] > y[1] ? -1 : 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        lsim_et *et = NULL;
        lsim_err err = {0};
        if (lsim_et_read(argv[i], &et, &err)) {
            fprintf(stderr, "et_dump: %s\n", err.msg);
            return 1;
        }
        size_t launching = 0;
        long long bytes = 0, nar = 0;
        for (size_t k = 0; k < et->nops; k++) {
            launching += et->ops[k].launches_kernel;
            if (et->ops[k].in_bytes > 0) bytes += et->ops[k].in_bytes;
            if (et->ops[k].kind == LSIM_COLL_ALLREDUCE) nar++;
        }
        printf("ops=%zu launching=%zu in_bytes=%lld allreduce=%lld groups=%zu\n", et->nops, launching, bytes, nar,
               et->npg);
        long long *pairs = calloc(et->npg ? et->npg * 2 : 2, sizeof *pairs);
        if (!pairs) return 1;
        for (size_t g = 0; g < et->npg; g++) {
            pairs[2 * g] = et->pgs[g].size;
            pairs[2 * g + 1] = et->pgs[g].nops;
        }
        qsort(pairs, et->npg, 2 * sizeof *pairs, cmp_pair);
        for (size_t g = 0; g < et->npg; g++) printf("group size=%lld ops=%lld\n", pairs[2 * g], pairs[2 * g + 1]);
        free(pairs);
        lsim_et_free(et);
    }
    return 0;
}
