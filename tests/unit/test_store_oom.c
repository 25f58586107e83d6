/* Allocation failure in the graph store (io/h5_*.c), as test_oom.c does for
 * the engine: for n = 0, 1, 2, ... make allocation n of a store operation
 * fail (lsim_alloc_fail_after, alloc.h) until the operation runs to the end
 * without reaching it. Every failing run must return LSIM_ENOMEM with one
 * message naming the store, and a failed write must leave nothing behind.
 *
 * Issue 40: `info` and `sim` of a 10^6-GPU store under `ulimit -v` died of
 * SIGSEGV, the GPU table's reader writing through the table it had failed
 * to allocate. Here that allocation fails deterministically; the ASan build
 * (LSIM_SANITIZE) runs this test too, so a use before the check, or a leak
 * on the way out, fails it there as well as here.
 *
 * Usage: test_store_oom [DIR] (the store is written under DIR, default a
 * temporary directory of /tmp). */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "synth8.h"

#include "lumosim/alloc.h"
#include "lumosim/graph.h"
#include "lumosim/store.h"

enum { OP_COUNT, OP_TABLE, OP_INFO, OP_READ, OP_READ_SHARED, OP_WRITE, OP_N };
static const char *const op_name[OP_N] = {"count_gpus", "gpu_table", "info", "read_graphs", "read_graphs shared",
                                          "write_graphs"};

static lsim_graph *g[NG];
static char store[4096], out[4096];
static FILE *devnull;
static const char *const no_sources[NG]; /* synthesized: no trace to checksum */

static int run_op(int op, lsim_err *err)
{
    size_t n = 0;
    switch (op) {
    case OP_COUNT: return lsim_store_count_gpus(store, &n, err);
    case OP_TABLE: {
        lsim_store_gpu_info *t = NULL;
        int rc = lsim_store_gpu_table(store, &t, &n, err);
        lsim_store_gpu_table_free(t, n);
        return rc;
    }
    case OP_INFO: return lsim_store_info(store, devnull, err);
    case OP_READ:
    case OP_READ_SHARED: {
        lsim_graph **gs = NULL;
        int rc = lsim_store_read_graphs_ex(store, 0, SIZE_MAX, op == OP_READ_SHARED ? LSIM_STORE_READ_SHARE : 0, &gs,
                                           &n, err);
        if (!rc) CHECK_I64(n, NG);
        lsim_store_free_graphs(gs, n);
        return rc;
    }
    default: return lsim_store_write_graphs(out, g, NG, "test_store_oom", no_sources, err);
    }
}

/* Entries of dir other than the store: what a failed write left. */
static int leftovers(const char *dir, char *first, size_t len)
{
    DIR *d = opendir(dir);
    int k = 0;
    struct dirent *e;
    first[0] = '\0';
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "s.h5")) {
            if (!k++) snprintf(first, len, "%s", e->d_name);
        }
    if (d) closedir(d);
    return k;
}

/* Fails each allocation of op in turn; returns how many runs failed. */
static long sweep(int op, const char *dir, int *table_msg)
{
    const char *path = op == OP_WRITE ? out : store;
    for (long n = 0; n < 100000; n++) {
        lsim_err err;
        memset(&err, 0, sizeof err);
        if (op == OP_WRITE) remove(out);
        lsim_alloc_fail_after(n);
        int rc = run_op(op, &err);
        long used = lsim_alloc_count();
        lsim_alloc_fail_after(-1);
        if (used <= n) {
            CHECK_MSG(rc == 0, "%s: failed (%d: %s) with no allocation failing", op_name[op], rc, err.msg);
            return n;
        }
        CHECK_MSG(rc == LSIM_ENOMEM, "%s: allocation %ld failed, returned %d (%s)", op_name[op], n, rc, err.msg);
        CHECK_MSG(strstr(err.msg, path) && strstr(err.msg, "out of memory") && !strchr(err.msg, '\n'),
                  "%s: allocation %ld failed: not one line naming %s and memory: %s", op_name[op], n, path, err.msg);
        if (strstr(err.msg, "out of memory reading its GPU table (8 GPUs)")) (*table_msg)++;
        char left[256];
        if (op == OP_WRITE) CHECK_MSG(!leftovers(dir, left, sizeof left), "write: allocation %ld failed, left %s", n, left);
        if (check_failures > 20) return n;
    }
    CHECK_MSG(0, "%s: still failing after 100000 allocations", op_name[op]);
    return 0;
}

int main(int argc, char **argv)
{
    char tmpl[] = "/tmp/lsim-store-oom.XXXXXX";
    const char *dir = argc > 1 ? argv[1] : mkdtemp(tmpl);
    if (!dir) return 1;
    snprintf(store, sizeof store, "%s/s.h5", dir);
    snprintf(out, sizeof out, "%s/w.h5", dir);
    devnull = fopen("/dev/null", "w");
    if (!devnull || synth_job(g)) return 1;
    lsim_err err;
    remove(store);
    if (lsim_store_write_graphs(store, g, NG, "test_store_oom", no_sources, &err)) {
        fprintf(stderr, "write %s: %s\n", store, err.msg);
        return 1;
    }
    for (int op = 0; op < OP_N; op++) {
        int table_msg = 0;
        long failed = sweep(op, dir, &table_msg);
        printf("%s: %ld allocations made to fail in turn\n", op_name[op], failed);
        CHECK_MSG(failed > 0, "%s: allocates nothing through the seam", op_name[op]);
        /* every reader reads the GPU table first: one of its failures is the
         * table's own, which says so */
        if (op != OP_WRITE)
            CHECK_MSG(table_msg > 0, "%s: no failure said \"out of memory reading its GPU table (8 GPUs)\"",
                      op_name[op]);
    }
    remove(out);
    remove(store);
    if (argc <= 1) rmdir(dir);
    for (int i = 0; i < NG; i++) lsim_graph_free(g[i]);
    fclose(devnull);
    return check_result("test_store_oom");
}
