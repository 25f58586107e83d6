/* Chakra ET export and import against the HDF5 graph store's own write and
 * read, per node, on one store (issue 42, "Speed"; docs/chakra.md):
 *
 *   bench_chakra JOB.h5 SCRATCH_DIR [REPEATS [GPUS]]
 *
 * Times, each the median of REPEATS (3): the store read
 * (lsim_store_read_graphs), the store written (lsim_store_write_graphs, the
 * default filters), every GPU written as a Chakra file (lsim_chakra_write)
 * through a lsim_chakra_cache and every file read back through one
 * (lsim_chakra_read_cached; UNCACHED=1: each packed and unpacked whole), and the files' bytes read
 * alone into one buffer (the floor of any import of them). Prints M nodes/s of each and the ratios. CPU seconds of the process (clock()): the machine's other
 * work disturbs them less than wall seconds. GPUS (default: all): the
 * store is taken GPUS at a time, each slice read, written as a store of
 * its own and as Chakra files, those read back and all deleted before the
 * next, the times summed: a 4,096-GPU store unshared in memory, or its
 * Chakra files, would not fit this machine whole. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lumosim/chakra.h"
#include "lumosim/store.h"

static double cpu_s(void) { return (double)clock() / CLOCKS_PER_SEC; }

/* The file's bytes into *buf (grown as needed, kept between calls, as
 * build --chakra keeps its own); *total += its size. 0 or -1. */
static int read_bytes(const char *path, char **buf, size_t *cap, double *total)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    int rc = fseek(f, 0, SEEK_END);
    long size = rc ? -1 : ftell(f);
    if (size >= 0 && (size_t)size + 1 > *cap) {
        free(*buf);
        *cap = (size_t)size + 1;
        if (!(*buf = malloc(*cap))) *cap = 0, size = -1;
    }
    if (size < 0 || fseek(f, 0, SEEK_SET) || fread(*buf, 1, (size_t)size, f) != (size_t)size) rc = -1;
    else *total += (double)size;
    fclose(f);
    return rc;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_chakra JOB.h5 SCRATCH_DIR [REPEATS [GPUS]]\n");
        return 2;
    }
    int reps = argc > 3 ? atoi(argv[3]) : 3;
    if (reps < 1 || reps > 50) reps = 3;
    long long slice = argc > 4 ? atoll(argv[4]) : 0;
    /* UNCACHED=1: every GPU packed whole (lsim_chakra_write), the figure
     * before the cache */
    int uncached = getenv("UNCACHED") && atoi(getenv("UNCACHED")) == 1;
    uint64_t tmade = 0, treused = 0, rmade = 0, rreused = 0;
    size_t step = slice > 0 ? (size_t)slice : SIZE_MAX;
    lsim_err err = {0};
    lsim_graph **gs = NULL;
    size_t n = 0, nodes = 0, gpus = 0;
    double t[5][50], fbytes = 0;
    char path[4096], *buf = NULL;
    size_t cap = 0;
    size_t total = 0;
    if (lsim_store_count_gpus(argv[1], &total, &err)) goto fail;
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < 5; k++) t[k][r] = 0;
        for (size_t first = 0; first < total; first += n) {
            if (gs) lsim_store_free_graphs(gs, n), gs = NULL;
            double t0 = cpu_s();
            if (lsim_store_read_graphs(argv[1], first, total - first < step ? total - first : step, &gs, &n, &err))
                goto fail;
            t[0][r] += cpu_s() - t0;
            if (!r) {
                gpus += n;
                for (size_t i = 0; i < n; i++) nodes += gs[i]->n;
            }
            snprintf(path, sizeof path, "%s/bench_chakra.h5", argv[2]);
            t0 = cpu_s();
            /* no source checksums: a synthesized store's sources are no files */
            const char **none = calloc(n + 1, sizeof *none);
            int wrc = !none || lsim_store_write_graphs(path, gs, n, "bench_chakra", none, &err);
            free(none);
            if (wrc) goto fail;
            t[1][r] += cpu_s() - t0;
            unlink(path);
            t0 = cpu_s();
            lsim_chakra_cache *cache = NULL;
            if (!uncached && lsim_chakra_cache_new(&cache, &err)) goto fail;
            for (size_t i = 0; i < n; i++) {
                snprintf(path, sizeof path, "%s/bench.%zu.et", argv[2], i);
                FILE *f = fopen(path, "wb");
                if (!f || lsim_chakra_write_cached(f, path, gs[i], NULL, cache, &err)) goto fail;
                fclose(f);
            }
            if (!r) {
                uint64_t made, reused;
                lsim_chakra_cache_counts(cache, &made, &reused);
                tmade += made, treused += reused;
            }
            lsim_chakra_cache_free(cache);
            t[2][r] += cpu_s() - t0;
            /* the floor: the files' bytes read into one buffer, nothing parsed */
            t0 = cpu_s();
            for (size_t i = 0; i < n; i++) {
                snprintf(path, sizeof path, "%s/bench.%zu.et", argv[2], i);
                if (read_bytes(path, &buf, &cap, &fbytes)) goto fail_io;
            }
            t[4][r] += cpu_s() - t0;
            t0 = cpu_s();
            /* the cache borrows the graphs it reads: all held, as build --chakra holds them */
            lsim_graph **back = calloc(n + 1, sizeof *back);
            if (!back || (!uncached && lsim_chakra_cache_new(&cache, &err))) goto fail;
            for (size_t i = 0; i < n; i++) {
                snprintf(path, sizeof path, "%s/bench.%zu.et", argv[2], i);
                if (lsim_chakra_read_cached(path, (int32_t)(first + i), (int32_t)n, &back[i], NULL, cache, &err))
                    goto fail;
            }
            if (!r) {
                uint64_t made, reused;
                lsim_chakra_cache_counts(cache, &made, &reused);
                rmade += made, rreused += reused;
            }
            lsim_chakra_cache_free(cache);
            for (size_t i = 0; i < n; i++) lsim_graph_free(back[i]);
            free(back);
            t[3][r] += cpu_s() - t0;
            for (size_t i = 0; i < n; i++) {
                snprintf(path, sizeof path, "%s/bench.%zu.et", argv[2], i);
                unlink(path);
            }
        }
    }
    static const char *const what[5] = {"store read", "store write", "chakra write", "chakra read", "chakra bytes"};
    double m[5];
    printf("%s: %zu GPUs, %zu nodes; medians of %d", argv[1], gpus, nodes, reps);
    if (step != SIZE_MAX) printf(", %zu GPUs at a time", step);
    printf("\n");
    for (int k = 0; k < 5; k++) {
        m[k] = median(t[k], reps);
        printf("%-13s %8.3f cpu s  %7.2f M nodes/s\n", what[k], m[k], nodes / m[k] / 1e6);
    }
    printf("chakra write: %s; %" PRIu64 " GPUs' records made, %" PRIu64 " GPUs written from another's\n",
           uncached ? "uncached" : "through the cache", tmade, treused);
    printf("chakra read: %s; %" PRIu64 " GPUs' records made, %" PRIu64 " GPUs read as another's\n",
           uncached ? "uncached" : "through the cache", rmade, rreused);
    printf("export vs store write: %.2fx the rate; import vs store read: %.2fx the rate\n", m[1] / m[2], m[0] / m[3]);
    printf("chakra bytes: the files' %.2f GB read alone; import takes %.2fx that time\n", fbytes / reps / 1e9,
           m[3] / m[4]);
    free(buf);
    if (gs) lsim_store_free_graphs(gs, n);
    return 0;
fail:
    fprintf(stderr, "bench_chakra: %s\n", err.msg);
    return 1;
fail_io:
    fprintf(stderr, "bench_chakra: %s: cannot read\n", path);
    return 1;
}
