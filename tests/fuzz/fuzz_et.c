/* Fuzz target: the execution-trace reader (src/read/et.c) and, when the input
 * reads as one, its pairing with a small fixed Kineto trace (two NCCL
 * kernels, rank 0 of 2). Nothing may crash, leak or hang on any input; a
 * refused input must say why and return nothing.
 *
 * Built as fuzz_et (libFuzzer, -DLSIM_FUZZ=ON) and fuzz_et_run (the seed
 * corpus corpus_et/ replayed in every build); see tests/fuzz/CMakeLists.txt. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/et.h"
#include "lumosim/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char KINETO[] =
    "{\"distributedInfo\": {\"rank\": 0, \"world_size\": 2}, \"traceEvents\": ["
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 1, \"tid\": 1, \"ts\": 100, \"dur\": 20, \"args\": {}},"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 105, \"dur\": 5, \"args\": {\"correlation\": 7}},"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)\", \"pid\": 0, \"tid\": 20, \"ts\": 112, \"dur\": 30,"
    " \"args\": {\"device\": 0, \"stream\": 20, \"correlation\": 7}},"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 150, \"dur\": 5, \"args\": {\"correlation\": 8}},"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_Generic(x)\", \"pid\": 0, \"tid\": 20, \"ts\": 160, \"dur\": 30,"
    " \"args\": {\"device\": 0, \"stream\": 20, \"correlation\": 8, \"Process Group Name\": \"0\"}}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lsim_et *et = NULL;
    lsim_trace *t = NULL;
    lsim_err err = {0};
    if (lsim_et_read_mem("fuzz", (const char *)data, size, &et, &err)) {
        if (et || !err.msg[0]) abort(); /* a failure must say why and return nothing */
        return 0;
    }
    /* what the reader promises about its result */
    for (size_t i = 0; i < et->nops; i++) {
        const lsim_et_op *op = &et->ops[i];
        if (op->pg < -1 || (op->pg >= 0 && (size_t)op->pg >= et->npg)) abort();
        if (i && et->ops[i - 1].node_id >= op->node_id) abort();
    }
    for (size_t g = 0; g < et->npg; g++)
        if (et->pgs[g].nranks && et->pgs[g].nranks != et->pgs[g].size) abort();
    if (lsim_trace_read_mem("kineto", KINETO, sizeof KINETO - 1, &t, &err)) abort();
    memset(&err, 0, sizeof err);
    lsim_et_apply_stats st;
    if (lsim_et_apply(et, t, &st, &err)) {
        if (!err.msg[0]) abort();
    } else if (st.matched != st.kernels || st.kernels != 2) {
        abort();
    }
    lsim_trace_free(t);
    lsim_et_free(et);
    return 0;
}
