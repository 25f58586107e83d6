/* Fuzz target: the cost-model parameter readers (src/cost/): the GPU spec
 * and topology JSON loaders and the nccl-tests output parser, all on the
 * same bytes, written to a temporary file (mkstemp under /tmp, removed
 * afterwards) because they read files. Whatever loads is then used: every
 * cost function runs on the loaded spec or topology with sizes and rank
 * lists taken from the input, and a fit must come back finite. Nothing may
 * crash, leak or hang; a refused input must say why and leave the output
 * untouched.
 *
 * Built two ways like fuzz_kineto.c (tests/fuzz/CMakeLists.txt): a libFuzzer
 * binary with clang, and everywhere a plain program over the seed corpus
 * (corpus_topo/: the shipped data/gpu and data/topology files, nccl-tests
 * fixtures, and every crash input ever found). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lumosim/cost.h"
#include "lumosim/trace.h"

#include "fuzz_tmpfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void untouched_or_abort(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0x5a) abort();
}

static void exercise_topology(const lsim_topology *t, const uint8_t *data, size_t size)
{
    int32_t ranks[64];
    int n = (int)(size % 64) + 1;
    for (int i = 0; i < n; i++) ranks[i] = (int32_t)((i < (int)size ? data[i] : i) * 37 + i);
    int64_t bytes = (int64_t)1 << (size % 40);
    for (int kind = LSIM_COLL_NONE; kind <= LSIM_COLL_OTHER; kind++)
        for (int a = LSIM_ALGO_AUTO; a <= LSIM_ALGO_TREE; a++) {
            if (lsim_cost_collective(t, kind, bytes, ranks, n, (lsim_coll_algo)a) < 0) abort();
            if (lsim_cost_collective(t, kind, INT64_MAX, NULL, 1 << 20, (lsim_coll_algo)a) < 0) abort();
            (void)lsim_cost_collective_algo(t, kind, bytes, ranks, n, (lsim_coll_algo)a);
        }
    int32_t extreme[3] = {INT32_MIN, INT32_MAX, 0};
    if (lsim_cost_collective(t, LSIM_COLL_ALLREDUCE, bytes, extreme, 3, LSIM_ALGO_AUTO) < 0) abort();
    if (lsim_cost_p2p(t, bytes, ranks[0], ranks[n - 1]) < 0) abort();
}

static void exercise_gpu(const lsim_gpu_spec *g, size_t size)
{
    double s = (double)(size + 1);
    const double shapes[] = {s, s * s, 1e30, 0, -1};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        double x = shapes[i];
        if (lsim_cost_gemm(g, x, x, x, (int)(size % 5)) < g->kernel_min_ns) abort();
        if (lsim_cost_attention(g, 1, x, x, 128, (int)(size & 1), (int)(size & 2)) < g->kernel_min_ns) abort();
        if (lsim_cost_elementwise(g, x) < g->kernel_min_ns) abort();
    }
    if (lsim_gpu_spec_check(g, "fuzz", NULL) != 0) abort(); /* what loads must pass the check */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/lsim_fuzz_topo_XXXXXX";
    if (!fuzz_write_tmp(path, data, size)) return 0;
    {
        lsim_err err = {0};
        lsim_topology t;
        memset(&t, 0x5a, sizeof t);
        if (lsim_topology_load(path, &t, &err) == 0) exercise_topology(&t, data, size);
        else if (!err.msg[0]) abort();
        else untouched_or_abort(&t, sizeof t);

        lsim_gpu_spec g;
        memset(&err, 0, sizeof err);
        memset(&g, 0x5a, sizeof g);
        if (lsim_gpu_spec_load(path, &g, &err) == 0) exercise_gpu(&g, size);
        else if (!err.msg[0]) abort();
        else untouched_or_abort(&g, sizeof g);

        lsim_coll_fit f;
        memset(&err, 0, sizeof err);
        memset(&f, 0x5a, sizeof f);
        if (lsim_cost_fit_nccl_tests(path, &f, &err) == 0) {
            if (!isfinite(f.alpha_ns) || !(f.beta_bytes_per_s > 0) || f.points < 2) abort();
        } else if (!err.msg[0]) {
            abort();
        } else {
            untouched_or_abort(&f, sizeof f);
        }
    }
    unlink(path);
    return 0;
}
