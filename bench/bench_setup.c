/* bench_setup: what the huge-page hint and pre-faulting cost and buy for
 * lsim_alloc_big (src/common.c), on this machine.
 *
 *   bench_setup [--reps R] [--touch-passes P] [--fragment MIB] MIB...
 *
 * For each size and each of four ways to get the block (plain malloc;
 * MADV_POPULATE_WRITE only; MADV_HUGEPAGE only; both, the allocator before
 * issue 20), R times in a fresh mapping: "setup" is allocation plus the
 * first write of every byte (memset: what a pre-fault or the first pass of
 * lsim_engine_run pays), reported as GB/s of the block; "use" is P passes of
 * random 8-byte read-modify-writes over the block, one per 64 bytes
 * (the engine's access pattern on node arrays: indices from edges), where
 * huge pages would save TLB misses. Setup is also given in CPU seconds
 * (user + system), steadier than wall time on a shared machine. Prints one line per size and way with
 * medians, and "BENCH_SETUP mib=.. way=.. setup_gbs=.. use_ns=.." lines.
 * --fragment F first faults in F MiB in 4 KiB pages and gives every other
 * page back (MADV_DONTNEED): physical memory is then as a process that has
 * loaded its graphs leaves it, with free pages but few free 2 MiB runs, so
 * a huge page costs a compaction (the kernel's defrag setting decides who
 * pays it: /sys/kernel/mm/transparent_hugepage/defrag).
 * Exit status 0, 2 on bad usage. */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "lumosim/common.h"

enum { WAY_PLAIN, WAY_POPULATE, WAY_HUGE, WAY_BOTH, NWAYS };
static const char *const WAY_NAME[NWAYS] = {"plain", "populate", "huge", "huge+populate"};

/* CPU seconds of this process (user + system: faults and compaction are
 * system time), less disturbed than wall time on a shared machine. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The block as lsim_alloc_big made it (2 MiB aligned, rounded up), with
 * the advice of the chosen way. */
static void *get_block(size_t bytes, int way)
{
    const size_t huge = (size_t)2 << 20;
    size_t len = (bytes + huge - 1) / huge * huge;
    void *p = NULL;
    if (posix_memalign(&p, huge, len)) return NULL;
#ifdef MADV_HUGEPAGE
    if (way == WAY_HUGE || way == WAY_BOTH) (void)madvise(p, len, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
    if (way == WAY_POPULATE || way == WAY_BOTH) (void)madvise(p, len, MADV_POPULATE_WRITE);
#endif
    return p;
}

int main(int argc, char **argv)
{
    int reps = 3, passes = 2, first = 1;
    size_t frag_mib = 0;
    while (first < argc && argv[first][0] == '-') {
        if (!strcmp(argv[first], "--reps") && first + 1 < argc) reps = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--touch-passes") && first + 1 < argc) passes = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--fragment") && first + 1 < argc)
            frag_mib = (size_t)strtoull(argv[first + 1], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_setup [--reps R] [--touch-passes P] MIB...\n");
            return 2;
        }
        first += 2;
    }
    if (first >= argc || reps < 1 || passes < 0) {
        fprintf(stderr, "usage: bench_setup [--reps R] [--touch-passes P] MIB...\n");
        return 2;
    }
    if (frag_mib) {
        size_t fb = frag_mib << 20, pg = 4096;
        unsigned char *f = mmap(NULL, fb, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (f == MAP_FAILED) return 1;
#ifdef MADV_NOHUGEPAGE
        (void)madvise(f, fb, MADV_NOHUGEPAGE);
#endif
        memset(f, 1, fb);
        for (size_t o = 0; o < fb; o += 2 * pg) (void)madvise(f + o, pg, MADV_DONTNEED);
        printf("fragmented: %zu MiB faulted in 4 KiB pages, every other page given back\n", frag_mib);
    }
    double *st = calloc((size_t)reps, sizeof *st), *us = calloc((size_t)reps, sizeof *us);
    double *ct = calloc((size_t)reps, sizeof *ct);
    if (!st || !us || !ct) return 1;
    for (int a = first; a < argc; a++) {
        size_t mib = (size_t)strtoull(argv[a], NULL, 10), bytes = mib << 20;
        for (int w = 0; w < NWAYS; w++) {
            for (int r = 0; r < reps; r++) {
                double t0 = lsim_now_s(), c0 = cpu_s();
                unsigned char *p = get_block(bytes, w);
                if (!p) return 1;
                memset(p, 0, bytes);
                st[r] = lsim_now_s() - t0;
                ct[r] = cpu_s() - c0;
                uint64_t x = 88172645463325252ull, lines = bytes / 64;
                t0 = lsim_now_s();
                for (int k = 0; k < passes; k++)
                    for (uint64_t i = 0; i < lines; i++) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
                        p[(x % lines) * 64] += 1;
                    }
                us[r] = passes && lines ? (lsim_now_s() - t0) * 1e9 / ((double)lines * passes) : 0;
                free(p);
            }
            qsort(st, (size_t)reps, sizeof *st, cmp_double);
            qsort(us, (size_t)reps, sizeof *us, cmp_double);
            qsort(ct, (size_t)reps, sizeof *ct, cmp_double);
            double s = st[reps / 2], gbs = (double)bytes / 1e9 / s, c = ct[reps / 2];
            printf("%6zu MiB  %-14s setup %8.3f s  %6.2f GB/s (CPU %.3f s: %6.2f GB/s)   use %6.2f ns/access  "
                   "(median of %d)\n",
                   mib, WAY_NAME[w], s, gbs, c, (double)bytes / 1e9 / c, us[reps / 2], reps);
            printf("BENCH_SETUP mib=%zu way=%s setup_s=%.4f setup_gbs=%.3f setup_cpu_s=%.4f use_ns=%.3f\n", mib,
                   WAY_NAME[w], s, gbs, c, us[reps / 2]);
            fflush(stdout);
        }
    }
    free(st);
    free(us);
    free(ct);
    return 0;
}
