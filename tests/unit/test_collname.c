/* lsim_coll_from_kernel_name: every NCCL/RCCL kernel naming variant from
 * KINETO-NOTES section 7, and ordinary kernels that must not be taken for
 * collectives. dtype is the element size the name implies, -1 if none. */
#include "lumosim/trace.h"
#include "check.h"

#define ANY_DTYPE (-99)

static void expect(const char *name, lsim_coll_kind kind, int32_t dtype, int line)
{
    int32_t got_dtype = 12345;
    lsim_coll_kind got = lsim_coll_from_kernel_name(name, &got_dtype);
    if (got != kind || (dtype != ANY_DTYPE && got_dtype != dtype)) {
        fprintf(stderr, "%s:%d: \"%s\" -> kind %s (%d) dtype %d, expected kind %s (%d)",
                __FILE__, line, name, lsim_coll_kind_name(got), (int)got,
                (int)got_dtype, lsim_coll_kind_name(kind), (int)kind);
        if (dtype != ANY_DTYPE)
            fprintf(stderr, " dtype %d", (int)dtype);
        fputc('\n', stderr);
        check_failures++;
    }
}

#define EXPECT(name, kind, dtype) expect((name), (kind), (dtype), __LINE__)

int main(void)
{
    /* NCCL < 2.19: ncclKernel_<Coll>_<Algo>_<Proto>_<RedOp>_<type>(args) */
    EXPECT("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_ALLREDUCE, 4);
    EXPECT("ncclKernel_AllReduce_TREE_LL128_Sum_half(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_ALLREDUCE, 2);
    EXPECT("ncclKernel_AllReduce_RING_SIMPLE_Sum_double(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_ALLREDUCE, 8);
    EXPECT("ncclKernel_AllReduce_RING_LL_Sum___nv_bfloat16(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_ALLREDUCE, 2);
    EXPECT("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_SENDRECV, 1);
    EXPECT("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_BROADCAST, 1);
    EXPECT("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_ALLGATHER, 1);
    EXPECT("ncclKernel_ReduceScatter_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_REDUCESCATTER, 4);
    EXPECT("ncclKernel_Reduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_REDUCE, 4);
    EXPECT("ncclKernel_AllReduce_RING_LL_Sum_int64_t(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_ALLREDUCE, 8);

    /* NCCL >= 2.19: ncclDevKernel_<Coll>_<RedOp>_<type>_<Algo>_<Proto> */
    EXPECT("ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_ALLREDUCE, 2);
    EXPECT("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_ALLREDUCE, 4);
    EXPECT("ncclDevKernel_AllReduce_Sum_bf16_TREE_LL128(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_ALLREDUCE, 2);
    EXPECT("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", LSIM_COLL_REDUCESCATTER, 2);
    EXPECT("ncclDevKernel_AllGather_RING_LL", LSIM_COLL_ALLGATHER, ANY_DTYPE);
    EXPECT("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_ALLGATHER, ANY_DTYPE);
    EXPECT("ncclDevKernel_Broadcast_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_BROADCAST, ANY_DTYPE);
    EXPECT("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_SENDRECV, ANY_DTYPE);

    /* RCCL / generic kernel: the kind lives only in the parent op. */
    EXPECT("ncclDevKernel_Generic", LSIM_COLL_GENERIC, -1);
    EXPECT("ncclDevKernel_Generic(ncclDevComm*, unsigned long, ncclWork*)",
           LSIM_COLL_GENERIC, -1);

    /* Not collectives. */
    EXPECT("ampere_sgemm_128x64_nn", LSIM_COLL_NONE, ANY_DTYPE);
    EXPECT("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
           "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
           "at::detail::Array<char*, 1>)",
           LSIM_COLL_NONE, ANY_DTYPE);
    EXPECT("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
           "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >"
           "(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
           "unsigned int, float, 4>)",
           LSIM_COLL_NONE, ANY_DTYPE);
    EXPECT("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0",
           LSIM_COLL_NONE, ANY_DTYPE);
    EXPECT("Memcpy DtoD (Device -> Device)", LSIM_COLL_NONE, ANY_DTYPE);
    EXPECT("", LSIM_COLL_NONE, ANY_DTYPE);

    /* Names exist for every kind (used in reports). */
    for (int k = LSIM_COLL_NONE; k <= LSIM_COLL_OTHER; k++) {
        const char *n = lsim_coll_kind_name((lsim_coll_kind)k);
        CHECK_MSG(n != NULL && n[0] != '\0', "kind %d has no name", k);
    }

    return check_result("test_collname");
}
