#!/usr/bin/env python3
"""make_train_trace.py OUT.json[.gz] [--layers N] [--steps S] [--hidden H]
[--tokens T] [--seed K] [--world W --rank R] [--accum K]
[--annotate record_function|modules] -- a Kineto trace of a GPT-style
training step on one GPU, written the way torch.profiler writes one with
record_shapes=True and each transformer layer wrapped in
record_function("layers.<i>"); with --world W > 1, rank R of a DDP job of W
GPUs: PyTorch DDP's gradient buckets (1 MiB first, then 25 MiB, over the
gradients in the order AccumulateGrad makes them ready) all-reduced on an
NCCL stream from the autograd thread, with record_param_comms metadata, and
the optimizer waiting for the last bucket (DDP's finalize). Every rank runs
the same timeline (same seed), so no rank waits for another; a bucket's
all-reduce takes bytes / 100 GB/s bus bandwidth x 2 (W - 1) / W + 20 us
(a round ring figure, not a cost model).

Why: the shared traces with a backward pass (ddp4_mi300, legacy ResNet-50)
are CNNs; none is a transformer whose layers repeat. This synthetic fixture
has exactly the structure a real one has -- forward ops with autograd
Sequence numbers on the main thread, the backward pass on autograd's own
thread (`autograd::engine::evaluate_function: XBackward0` wrappers carrying
the forward op's Sequence number and `Fwd thread id`), one
torch::autograd::AccumulateGrad per parameter with its gradient's shape, the
optimizer step, zero_grad and a blocking loss.item() per step -- so the
training-step what-if (--layers on a trace with a backward pass) can be
tested on it. It is our own synthesis: figures from it are self-consistency,
never accuracy.

Timing: GPU work runs in stream order, each kernel at max(launch + 4 us, end
of the previous kernel); GEMMs at 2MNK / 180 TFLOP/s + 4 us, flash attention
at 4 b s^2 h / 140 TFLOP/s (x2.5 backward), element-wise kernels at bytes /
1.5 TB/s + 3 us (round A100-class figures: this is a fixture, not a cost
model), each drawn +-2 % from a seeded generator so layers differ slightly.
The CPU thread runs ahead of the GPU (as in a GPU-bound step), and
loss.item() synchronizes once per step.
"""
import argparse
import gzip
import json
import random

PID, MAIN, AUTOGRAD, GPU_PID, STREAM, NCCL = 4242, 4242, 4250, 0, 7, 20

GEMM_F = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn"
GEMM_DG = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn"
GEMM_WG = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nt"
LN_F = ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>"
        "(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)")
LN_BI = "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<c10::BFloat16, float>(c10::BFloat16 const*)"
LN_BG = "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<c10::BFloat16, float>(long, long)"
ATT_F = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4, false, false, cutlass::bfloat16_t>>(Flash_fwd_params)"
ATT_B = "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64>>(Flash_bwd_params)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int)"
GELU_F = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&)::lambda>(int)"
GELU_B = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&)::lambda>(int)"
EMB_F = "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(int)"
EMB_B = "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<c10::BFloat16, float, long>(long const*)"
XENT_F = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*)"
XENT_B = "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*)"
FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int)"
ADAM = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4>>(int)"


class Gen:
    def __init__(self, seed):
        self.ev = []
        self.rng = random.Random(seed)
        self.t = {MAIN: 0.0, AUTOGRAD: 0.0}
        self.gpu = 0.0
        self.nccl = 0.0
        self.corr = 1000
        self.ext = 1
        self.seq = 100

    def jit(self, us):
        return us * (1.0 + self.rng.uniform(-0.02, 0.02))

    def x(self, cat, name, tid, ts, dur, args):
        self.ev.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": round(ts, 3),
                        "dur": round(dur, 3), "args": args})

    def op(self, tid, name, args, body=None, pre=3.0, post=2.0):
        """A CPU op: enter cost, its children (body), exit cost."""
        ts = self.t[tid]
        self.t[tid] += pre
        if body:
            body()
        self.t[tid] += post
        a = dict(args)
        a["External id"] = self.ext
        self.ext += 1
        self.x("cpu_op", name, tid, ts, self.t[tid] - ts, a)

    def annot(self, tid, name, body, cat="user_annotation"):
        ts = self.t[tid]
        self.t[tid] += 1.0
        body()
        self.t[tid] += 1.0
        self.x(cat, name, tid, ts, self.t[tid] - ts, {"External id": 0})

    def kernel(self, tid, name, us, grid=(1024, 1, 1)):
        """cudaLaunchKernel on thread tid, the kernel on the compute stream."""
        ts = self.t[tid]
        c = self.corr
        self.corr += 1
        self.x("cuda_runtime", "cudaLaunchKernel", tid, ts, 5.0, {"correlation": c, "External id": self.ext})
        self.ev.append({"ph": "s", "id": c, "pid": PID, "tid": tid, "ts": round(ts, 3), "cat": "ac2g", "name": "ac2g"})
        start = max(ts + 4.0, self.gpu)
        dur = self.jit(us)
        self.gpu = start + dur
        self.ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": GPU_PID, "tid": STREAM, "ts": round(start, 3),
                        "dur": round(dur, 3), "args": {"External id": self.ext, "device": 0, "stream": STREAM,
                                                       "correlation": c, "grid": list(grid), "block": [128, 1, 1]}})
        self.ev.append({"ph": "f", "id": c, "pid": GPU_PID, "tid": STREAM, "ts": round(start, 3), "cat": "ac2g",
                        "name": "ac2g", "bp": "e"})
        self.t[tid] += 5.0


    def allreduce(self, tid, nbytes, world, stamp, kind="allreduce", wait=True):
        """A data-parallel collective (DDP's bucket all-reduce; FSDP's
        parameter all-gather and gradient reduce-scatter): record_param_comms
        and its NCCL kernel on the NCCL stream, after the compute stream's
        work so far when wait (a gradient is ready once computed)."""
        c = self.corr
        self.corr += 1
        ts = self.t[tid]
        n = nbytes // 4
        nin, nout = (n // world, n) if kind == "allgather" else (n, n // world) if kind == "reducescatter" else (n, n)
        meta = {"Collective name": kind, "In msg nelems": nin, "Out msg nelems": nout, "Group size": world,
                "dtype": "Float", "Process Group Name": "0", "Process Group Description": "default_pg",
                "Process Group Ranks": str(list(range(world))), "In split size": "[]", "Out split size": "[]"}
        ann = {"allreduce": "nccl:all_reduce", "allgather": "nccl:_all_gather_base",
               "reducescatter": "nccl:_reduce_scatter_base"}[kind]
        kname = {"allreduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "allgather": "ncclDevKernel_AllGather_RING_LL",
                 "reducescatter": "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL"}[kind]
        self.x("user_annotation", ann, tid, ts, 12.0, {"External id": self.ext})
        self.x("cpu_op", "record_param_comms", tid, ts + 1.0, 10.0, dict(meta, **{"External id": self.ext, "Rank": stamp}))
        self.x("cuda_runtime", "cudaLaunchKernel", tid, ts + 3.0, 5.0, {"correlation": c, "External id": self.ext})
        self.ev.append({"ph": "s", "id": c, "pid": PID, "tid": tid, "ts": round(ts + 3.0, 3), "cat": "ac2g", "name": "ac2g"})
        start = max(ts + 7.0, self.gpu if wait else 0.0, self.nccl)
        dur = nbytes / 100e9 * 1e6 * (2 if kind == "allreduce" else 1) * (world - 1) / world + 20.0
        self.nccl = start + dur
        self.ev.append({"ph": "X", "cat": "kernel", "name": kname + "(ncclDevComm*, unsigned long, ncclWork*)",
                        "pid": GPU_PID, "tid": NCCL, "ts": round(start, 3), "dur": round(dur, 3),
                        "args": dict(meta, **{"External id": self.ext, "device": 0, "stream": NCCL, "correlation": c})})
        self.ev.append({"ph": "f", "id": c, "pid": GPU_PID, "tid": NCCL, "ts": round(start, 3), "cat": "ac2g",
                        "name": "ac2g", "bp": "e"})
        self.ext += 1
        self.t[tid] = ts + 13.0


def gemm_us(m, n, k):
    return 2.0 * m * n * k / 180e12 * 1e6 + 4.0


def ew_us(nbytes):
    return nbytes / 1.5e12 * 1e6 + 3.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--accum", type=int, default=1, help="micro-batches per step (gradient accumulation)")
    ap.add_argument("--dp-mode", choices=("ddp", "fsdp"), default="ddp",
                    help="with --world > 1: DDP buckets, or FSDP units per layer (all-gather before its forward and "
                         "its backward, reduce-scatter of its gradients after)")
    ap.add_argument("--annotate", choices=("record_function", "modules"), default="record_function",
                    help="layers as record_function(\"layers.i\") or as the profiler's module hierarchy "
                         "(with_modules: python_function \"nn.Module: GPT2Block_i\", LayerNorm modules inside)")
    a = ap.parse_args()
    h, T, V, s = a.hidden, a.tokens, a.vocab, a.seq
    b = T // s
    G = Gen(a.seed)
    fsdp = a.world > 1 and a.dp_mode == "fsdp"
    lparams = 12 * h * h + 13 * h  # one layer's parameters (an FSDP unit)
    act = T * h * 2  # bf16 activations

    def fwd_op(name, kernels, params):
        """A forward op on the main thread: its Sequence number, kernels;
        remembered for the backward pass with its parameters' shapes."""
        seq = G.seq
        G.seq += 1
        tlayer[seq] = cur[0]
        G.op(MAIN, name, {"Sequence number": seq, "Fwd thread id": 0, "Input Dims": [[T, h]], "Input type": ["c10::BFloat16"]},
             lambda: [G.kernel(MAIN, k, us) for k, us in kernels])
        return seq

    for step in range(a.steps):
        tape = []  # (seq, backward name, kernels, parameter shapes)

        lnk = [0]  # LayerNorm module instances, numbered as the profiler does (per instance)
        cur = [-1]  # the layer being run forward (-1: outside every layer)
        tlayer = {}  # Sequence number -> layer, for FSDP's backward units

        def forward():
            def linear(n_out, n_in, tag):
                sq = fwd_op("aten::linear", [(GEMM_F, gemm_us(T, n_out, n_in))], None)
                tape.append((sq, "AddmmBackward0", [(GEMM_DG, gemm_us(T, n_in, n_out)), (GEMM_WG, gemm_us(n_out, n_in, T))],
                             [[n_out, n_in], [n_out]]))

            def layer_norm():
                def ln():
                    sq = fwd_op("aten::layer_norm", [(LN_F, ew_us(2 * act))], None)
                    tape.append((sq, "NativeLayerNormBackward0", [(LN_BI, ew_us(3 * act)), (LN_BG, ew_us(2 * act))],
                                 [[h], [h]]))
                if a.annotate == "modules":  # a module that is not a layer, as real hierarchies have
                    G.annot(MAIN, "nn.Module: LayerNorm_%d" % lnk[0], ln, "python_function")
                    lnk[0] += 1
                else:
                    ln()

            def add():
                sq = fwd_op("aten::add", [(ADD, ew_us(3 * act))], None)
                tape.append((sq, "AddBackward0", [], []))

            sq = fwd_op("aten::embedding", [(EMB_F, ew_us(2 * act))], None)
            tape.append((sq, "EmbeddingBackward0", [(EMB_B, ew_us(3 * act))], [[V, h]]))
            for l in range(a.layers):
                def layer():
                    if fsdp:  # the unit's parameters gathered before its forward
                        G.allreduce(MAIN, lparams * 4, a.world, a.rank, "allgather", wait=False)
                        G.gpu = max(G.gpu, G.nccl)
                    cur[0] = l
                    layer_norm()
                    linear(3 * h, h, "qkv")
                    sq = fwd_op("aten::_scaled_dot_product_flash_attention", [(ATT_F, 4.0 * b * s * s * h / 140e12 * 1e6 + 5)], None)
                    tape.append((sq, "ScaledDotProductFlashAttentionBackward0",
                                 [(ATT_B, 2.5 * 4.0 * b * s * s * h / 140e12 * 1e6 + 5)], []))
                    linear(h, h, "proj")
                    add()
                    layer_norm()
                    linear(4 * h, h, "fc1")
                    sq = fwd_op("aten::gelu", [(GELU_F, ew_us(2 * T * 4 * h * 2))], None)
                    tape.append((sq, "GeluBackward0", [(GELU_B, ew_us(3 * T * 4 * h * 2))], []))
                    linear(h, 4 * h, "fc2")
                    add()
                run_layer = layer
                if fsdp:  # each layer an FSDP unit: FSDP's own record_function around its forward
                    run_layer = lambda layer=layer: G.annot(MAIN, "FullyShardedDataParallel.forward", layer)
                if a.annotate == "modules":
                    G.annot(MAIN, "nn.Module: GPT2Block_%d" % l, run_layer, "python_function")
                else:
                    G.annot(MAIN, "layers.%d" % l, run_layer)
                cur[0] = -1
            layer_norm()
            linear(V, h, "logits")
            sq = fwd_op("aten::cross_entropy", [(XENT_F, ew_us(2 * T * V * 4))], None)
            tape.append((sq, "LogSoftmaxBackward0", [(XENT_B, ew_us(3 * T * V * 4))], []))

        bucket = [0, 1024 * 1024]  # open bucket's bytes, its cap
        sync = [True]  # this micro-batch's backward all-reduces (DDP no_sync() for the others)

        def backward():
            G.t[AUTOGRAD] = max(G.t[AUTOGRAD], G.t[MAIN] + 6.0)  # the engine wakes its thread
            unit = -1
            for sq, name, kernels, params in reversed(tape):
                bargs = {"Sequence number": sq, "Fwd thread id": 1}
                if fsdp and tlayer.get(sq, -1) != unit:
                    if unit >= 0:  # the unit's gradients reduce-scattered once computed
                        G.allreduce(AUTOGRAD, lparams * 4, a.world, a.rank, "reducescatter")
                    unit = tlayer.get(sq, -1)
                    if unit >= 0:  # and its parameters gathered again for its backward
                        G.allreduce(AUTOGRAD, lparams * 4, a.world, a.rank, "allgather", wait=False)
                        G.gpu = max(G.gpu, G.nccl)

                def inner(kernels=kernels, name=name, bargs=bargs):
                    G.op(AUTOGRAD, name, bargs, lambda: [G.kernel(AUTOGRAD, k, us) for k, us in kernels])
                G.op(AUTOGRAD, "autograd::engine::evaluate_function: " + name, bargs, inner)
                for shp in params:
                    G.op(AUTOGRAD, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", {},
                         lambda shp=shp: G.op(AUTOGRAD, "torch::autograd::AccumulateGrad",
                                              {"Input Dims": [shp], "Input type": ["float"]}))
                    if a.world > 1 and sync[0] and not fsdp:
                        nb = 4
                        for d in shp:
                            nb *= d
                        bucket[0] += nb
                        if bucket[0] >= bucket[1]:  # DDP: a bucket closes at its cap
                            G.allreduce(AUTOGRAD, bucket[0], a.world, a.rank)
                            bucket[0], bucket[1] = 0, 25 * 1024 * 1024
            if fsdp and unit >= 0:
                G.allreduce(AUTOGRAD, lparams * 4, a.world, a.rank, "reducescatter")
            if fsdp:
                G.gpu = max(G.gpu, G.nccl)
            if a.world > 1 and sync[0] and not fsdp and bucket[0]:
                G.allreduce(AUTOGRAD, bucket[0], a.world, a.rank)
            if a.world > 1 and sync[0] and not fsdp:
                G.gpu = max(G.gpu, G.nccl)  # finalize: the current stream waits for the buckets
            G.t[MAIN] = G.t[AUTOGRAD] + 6.0  # and backward() returns

        def body():
            G.annot(MAIN, "Optimizer.zero_grad#AdamW.zero_grad", lambda: None)
            G.annot(MAIN, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", lambda: None)
            G.op(MAIN, "aten::to", {}, lambda: G.kernel(MAIN, FILL, ew_us(T * 8)))
            for k in range(a.accum):  # gradient accumulation: DDP all-reduces on the last micro-batch only
                del tape[:]
                bucket[:] = [0, 1024 * 1024]
                sync[0] = k == a.accum - 1
                forward()
                G.op(MAIN, "aten::ones_like", {}, lambda: G.kernel(MAIN, FILL, 3.0))
                backward()
            nparams = a.layers * (12 * h * h + 13 * h) + 2 * V * h + 2 * h
            G.annot(MAIN, "Optimizer.step#AdamW.step", lambda: G.op(
                MAIN, "aten::_fused_adamw_", {}, lambda: [G.kernel(MAIN, ADAM, ew_us(nparams * 16 / 4)) for _ in range(4)]))

            def item():
                c = G.corr
                G.corr += 1
                ts = G.t[MAIN]
                G.x("cuda_runtime", "cudaMemcpyAsync", MAIN, ts, 6.0, {"correlation": c, "External id": G.ext})
                start = max(ts + 4.0, G.gpu)
                G.ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": GPU_PID,
                             "tid": STREAM, "ts": round(start, 3), "dur": 2.0,
                             "args": {"device": 0, "stream": STREAM, "correlation": c, "bytes": 4}})
                G.gpu = start + 2.0
                G.t[MAIN] = ts + 6.0
                end = max(G.t[MAIN], G.gpu) + 3.0
                G.x("cuda_runtime", "cudaStreamSynchronize", MAIN, G.t[MAIN], end - G.t[MAIN], {"correlation": G.corr,
                                                                                              "External id": G.ext})
                G.corr += 1
                G.t[MAIN] = end
            G.op(MAIN, "aten::item", {}, item)
        G.annot(MAIN, "ProfilerStep#%d" % (step + 1), body)
        G.t[MAIN] += 30.0
    base = 1_700_000_000_000.0
    for e in G.ev:
        e["ts"] = round(e["ts"] + base, 3)
    meta = [{"name": "thread_name", "ph": "M", "pid": PID, "tid": MAIN, "args": {"name": "python"}},
            {"name": "thread_name", "ph": "M", "pid": PID, "tid": AUTOGRAD, "args": {"name": "autograd"}},
            {"name": "process_name", "ph": "M", "pid": GPU_PID, "tid": 0, "args": {"name": "GPU 0"}}]
    doc = {"schemaVersion": 1,
           "distributedInfo": {"backend": "nccl", "rank": a.rank, "world_size": a.world},
           "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85198045184,
                                 "computeMajor": 8, "computeMinor": 0, "numSms": 108}],
           "traceEvents": meta + sorted(G.ev, key=lambda e: (e["ts"], e["ph"] != "X"))}
    data = json.dumps(doc).encode()
    if a.out.endswith(".gz"):
        with gzip.GzipFile(a.out, "wb", mtime=0) as f:
            f.write(data)
    else:
        with open(a.out, "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
