#!/usr/bin/env python3
"""Writes gemm_curve.json: a tiny hand-made Kineto trace for test_calibrate.

Every GEMM kernel's duration is computed from a known efficiency curve on an
A100 (peak 312e12 FLOP/s, fp16):

    t = (f + EFF_HALF) / (PEAK * EFF_MAX)      EFF_MAX = 0.7, EFF_HALF = 5e9

so lsim_calib_fit must recover EFF_MAX and EFF_HALF. Traps included: a
matmul that contains an mm (the kernel belongs to the mm), a copy kernel
launched inside a matmul by aten::copy_ (not a GEMM kernel), an mm split into
two kernels (their times add up), a slow outlier (the per-shape median
ignores it), a memory-bound bmm (left out of the fit), an fp32 mm (other
element size), an mm that launched nothing, and a launch on another thread
outside any op. Run: python3 gen_gemm_curve.py > gemm_curve.json
"""
import json

PEAK, EFF_MAX, EFF_HALF = 312e12, 0.7, 5e9


def t_us(f):
    return (f + EFF_HALF) / (PEAK * EFF_MAX) * 1e6


ev = []
cpu_t = 1000.0   # us
gpu_t = 1010.0
corr = 100


def x(name, cat, ts, dur, pid, tid, args=None):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(ts, 3), "dur": round(dur, 3)}
    if args is not None:
        e["args"] = args
    ev.append(e)


def kernel(name, dur_us):
    """Launch call at the current CPU time, kernel on the GPU after the previous one."""
    global cpu_t, gpu_t, corr
    corr += 1
    x("cudaLaunchKernel", "cuda_runtime", cpu_t, 5.0, 1, 1, {"correlation": corr})
    gs = max(gpu_t, cpu_t + 8.0)
    x(name, "kernel", gs, dur_us, 0, 7, {"correlation": corr, "device": 0, "stream": 7})
    gpu_t = gs + dur_us + 2.0
    cpu_t += 6.0


def op(name, dims, types, body):
    """A CPU op around body(); its span covers the launches body makes."""
    global cpu_t
    start = cpu_t
    cpu_t += 1.0
    idx = len(ev)
    ev.append(None)  # placeholder: the op is written before its children
    body()
    cpu_t += 1.0
    ev[idx] = {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": round(start, 3),
               "dur": round(cpu_t - start, 3), "args": {"Input Dims": dims, "Input type": types}}
    cpu_t += 2.0


H = "c10::Half"
G = "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32"

# (op, dims, FLOPs)
shapes = [
    ("aten::mm", [[1024, 1024], [1024, 1024]], 2.0 * 1024 ** 3),
    ("aten::mm", [[2048, 2048], [2048, 2048]], 2.0 * 2048 ** 3),
    ("aten::addmm", [[4096], [4096, 4096], [4096, 4096]], 2.0 * 4096 ** 3),
    ("aten::bmm", [[8, 1024, 1024], [8, 1024, 1024]], 2.0 * 8 * 1024 ** 3),
    ("aten::linear", [[2, 2048, 4096], [1024, 4096], [1024]], 2.0 * 4096 * 1024 * 4096),
    ("aten::matmul", [[4, 512, 4096], [4096, 4096]], 2.0 * 2048 * 4096 * 4096),
    ("aten::baddbmm", [[16, 512, 512], [16, 512, 1024], [16, 1024, 512], [], []], 2.0 * 16 * 512 * 512 * 1024),
]
for name, dims, f in shapes:
    types = [H] * len(dims)
    for rep in range(3):
        d = t_us(f) * (2.0 if rep == 1 and name == "aten::mm" else 1.0)  # one slow outlier per mm shape
        op(name, dims, types, lambda d=d: kernel(G, d))

# matmul -> mm: the kernel is the mm's (matmul launches nothing itself) ...
f = 2.0 * 3072 * 2048 * 2048
op("aten::matmul", [[3, 1024, 2048], [2048, 2048]], [H, H],
   lambda: op("aten::mm", [[3072, 2048], [2048, 2048]], [H, H], lambda: kernel(G, t_us(f))))
# ... and a copy launched by aten::copy_ inside a matmul is not a GEMM kernel
op("aten::matmul", [[3, 1024, 2048], [2048, 2048]], [H, H],
   lambda: (op("aten::copy_", [[3, 1024, 2048], [3, 1024, 2048]], [H, H],
               lambda: kernel("void at::native::elementwise_kernel<128, 4>", 40.0)),
            op("aten::mm", [[3072, 2048], [2048, 2048]], [H, H], lambda: kernel(G, t_us(f)))))
# an mm split into a GEMM and a split-K reduction: the two times add up
f2 = 2.0 * 1536 * 1536 * 1536
op("aten::mm", [[1536, 1536], [1536, 1536]], [H, H],
   lambda: (kernel(G, t_us(f2) - 3.0), kernel("void splitKreduce_kernel<32, 16>", 3.0)))
# memory-bound bmm (FLOPs per byte below the A100 ridge point): left out of the fit
op("aten::bmm", [[64, 1024, 64], [64, 64, 1024]], [H, H], lambda: kernel(G, 300.0))
# fp32 mm: another element size, left out
op("aten::mm", [[1024, 1024], [1024, 1024]], ["float", "float"], lambda: kernel(G, 100.0))
# an mm that launched nothing
op("aten::mm", [[1024, 1024], [1024, 1024]], [H, H], lambda: None)
# a launch on another thread, outside any op
cpu_t += 10
corr += 1
x("cudaLaunchKernel", "cuda_runtime", cpu_t, 5.0, 1, 2, {"correlation": corr})
x(G, "kernel", gpu_t, 50.0, 0, 7, {"correlation": corr, "device": 0, "stream": 7})
gpu_t += 52.0
ev.insert(0, {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 999.0,
              "dur": round(gpu_t - 999.0, 3)})

doc = {"schemaVersion": 1,
       "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
       "traceEvents": ev}
print(json.dumps(doc, indent=0))
