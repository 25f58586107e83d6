/* Fuzz target: the HDF5 store readers (io/h5_*.c) on arbitrary bytes.
 * The input is written to a temporary file (mkstemp under /tmp, removed
 * afterwards) and read the way the command-line program reads it: probed,
 * then, for a graph store, its GPU index and all its graphs (what replay,
 * report and sim load); for a result file, its run list and each run whole
 * (what report RESULT.h5 reads); and `info`'s summary of either. Nothing may
 * crash, leak or hang; a damaged file must be refused with an error that
 * says why and returns nothing. HDF5's error printing is silenced by the
 * store itself while a call runs (store.h).
 *
 * Most mutations of an HDF5 file end at the superblock or a Fletcher-32 /
 * metadata checksum; the point is "no crash on any bytes".
 *
 * Built two ways like fuzz_kineto.c (tests/fuzz/CMakeLists.txt): a libFuzzer
 * binary with clang, and everywhere a plain program over the seed corpus
 * (corpus_store/: small graph stores and result files written by lumosim
 * build / sim, plus every crash input ever found). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lumosim/store.h"

#include "fuzz_tmpfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);

/* LeakSanitizer (libFuzzer's leak check, -DLSIM_SANITIZE=ON): HDF5 1.10.8
 * itself loses blocks on damaged files (e.g. the object header it was
 * decoding in its metadata cache when the decoding failed, reached from
 * H5Aexists). The system libhdf5 has no frame pointers, so the allocation
 * stack of such a leak ends at its first libhdf5 frame; leaks allocated
 * inside libhdf5 are suppressed by that module name. Every leak of what the
 * store allocates itself (malloc called from io/h5_*.c) is still caught;
 * an HDF5 object the store left open stays reachable and is never reported
 * either way. */
const char *__lsan_default_suppressions(void) { return "leak:libhdf5\n"; }

static FILE *devnull(void)
{
    static FILE *f;
    if (!f) f = fopen("/dev/null", "w");
    return f;
}

/* A failure must say why (and, where the API returns something, return
 * nothing). */
static void check_failed(const lsim_err *err)
{
    if (!err->msg[0]) abort();
}

static void read_graphs(const char *path)
{
    lsim_err err = {0};
    size_t n = 0;
    if (lsim_store_count_gpus(path, &n, &err)) check_failed(&err);

    lsim_store_gpu_info *tab = NULL;
    size_t ntab = 0;
    err = (lsim_err){0};
    if (lsim_store_gpu_table(path, &tab, &ntab, &err)) {
        check_failed(&err);
        if (tab) abort();
    }
    lsim_store_gpu_table_free(tab, ntab);

    lsim_graph **gs = NULL;
    size_t ng = 0;
    err = (lsim_err){0};
    if (lsim_store_read_graphs(path, 0, SIZE_MAX, &gs, &ng, &err)) {
        check_failed(&err);
        if (gs) abort();
    }
    lsim_store_free_graphs(gs, ng);

    /* the partial read a rank of sim under mpirun does */
    if (n > 1) {
        err = (lsim_err){0};
        gs = NULL;
        ng = 0;
        if (lsim_store_read_graphs(path, 1, 1, &gs, &ng, &err)) check_failed(&err);
        lsim_store_free_graphs(gs, ng);
    }
}

static void read_results(const char *path)
{
    lsim_err err = {0};
    char **names = NULL;
    size_t n = 0;
    if (lsim_store_list_runs(path, &names, &n, &err)) check_failed(&err);

    lsim_store_run *r = NULL;
    err = (lsim_err){0};
    if (lsim_store_read_results(path, NULL, &r, &err)) {
        check_failed(&err);
        if (r) abort();
    }
    lsim_store_run_free(r);

    for (size_t i = 0; i < n && i < 4; i++) {
        r = NULL;
        err = (lsim_err){0};
        if (lsim_store_read_results(path, names[i], &r, &err)) check_failed(&err);
        lsim_store_run_free(r);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/lsim_fuzz_store_XXXXXX";
    if (!fuzz_write_tmp(path, data, size)) return 0;
    {
        lsim_store_kind kind = lsim_store_probe(path);
        /* the readers must refuse the wrong kind themselves, so each runs on
         * every input that is HDF5 at all */
        if (kind != LSIM_STORE_NOT_HDF5) {
            read_graphs(path);
            read_results(path);
        }
        lsim_err err = {0};
        FILE *out = devnull();
        if (out && lsim_store_info(path, out, &err)) check_failed(&err);
    }
    unlink(path);
    return 0;
}
