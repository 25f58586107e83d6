#!/usr/bin/env python3
"""Writes gemm_waves.json: a tiny hand-made Kineto trace for test_calibrate's
tile-and-wave fit (a base spec with an SM count).

Every GEMM kernel's duration follows the tile-and-wave model of
docs/cost-models.md on an A100 (108 SMs, peak 312e12 FLOP/s, fp16) with known
parameters:

    t = waves * (2 tm tn K / (PEAK / SMS) / EFF + TILE)    EFF = 0.8, TILE = 2500 ns

for the fastest of the 256x128, 128x256 and 128x128 tiles (none of the
shapes splits K), so lsim_calib_fit must recover EFF and TILE. The shapes
differ in waves and in K, which is what separates the two parameters.
Memory-bound ops (layer norms, softmaxes, adds) take bytes / (MEM_BW *
MEM_EFF), MEM_EFF = 0.6, so mem_eff must come out 0.6. Launch calls are 5 us
long and 45 us apart (host_dispatch_ns 45000, launch_cpu_ns 5000), except 3
gaps of 20 ms and one call of 20 ms (stalls: 4 of the 101 gap + call
intervals over 10 x the median gap + the median call; beyond those, 19955 us
for a long gap, 19995 us for the long call); the step begins with a 3 ms
enumerate(DataLoader) annotation.
Run: python3 gen_gemm_waves.py > gemm_waves.json
"""
import json
import math

PEAK, SMS, EFF, TILE = 312e12, 108, 0.8, 2500e-9
MEM_BW, MEM_EFF = 2.039e12, 0.6
TILES = [(256, 128), (128, 256), (128, 128)]


def t_gemm_us(m, n, k):
    best = None
    for tm, tn in TILES:
        waves = math.ceil(math.ceil(m / tm) * math.ceil(n / tn) / SMS)
        t = waves * (2 * tm * tn * k / (PEAK / SMS) / EFF + TILE)
        best = t if best is None or t < best else best
    return best * 1e6


ev = []
cpu_t = 5000.0  # us
gpu_t = 5010.0
corr = 100
stalls = {7, 19, 31}  # launch indices preceded by a 20 ms stall
call_stalls = {50}  # launch indices whose call lasts 20 ms (stalled inside the call)
nlaunch = 0


def x(name, cat, ts, dur, pid, tid, args=None):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(ts, 3), "dur": round(dur, 3)}
    if args is not None:
        e["args"] = args
    ev.append(e)


def launch(kname, dur_us, call_us):
    """A launch call at the current CPU time, its kernel after the previous kernel."""
    global cpu_t, gpu_t, corr
    corr += 1
    x("cudaLaunchKernel", "cuda_runtime", cpu_t, call_us, 1, 1, {"correlation": corr})
    gs = max(gpu_t, cpu_t + 8.0)
    x(kname, "kernel", gs, dur_us, 0, 7, {"correlation": corr, "device": 0, "stream": 7})
    gpu_t = gs + dur_us + 2.0
    cpu_t += call_us


def op(name, dims, types, kname, dur_us):
    """A CPU op around one launch, 45 us (or a stall) after the previous launch
    ended: the op opens 1 us before the call and closes 1 us after it."""
    global cpu_t, nlaunch
    cpu_t += 20000.0 if nlaunch in stalls else 45.0
    call_us = 20000.0 if nlaunch in call_stalls else 5.0
    nlaunch += 1
    x(name, "cpu_op", cpu_t - 1.0, call_us + 2.0, 1, 1, {"Input Dims": dims, "Input type": types})
    launch(kname, dur_us, call_us)


H = "c10::Half"
G = "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_tn"
x("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "user_annotation", 1000.0, 3000.0, 1, 1)
shapes = [(8192, 4096, 512), (8192, 4096, 2048), (8192, 1536, 4096), (8192, 2048, 4096), (4096, 4096, 4096),
          (2048, 9600, 25600), (16384, 2304, 6144)]
for m, n, k in shapes:
    for rep in range(6):
        op("aten::mm", [[m, k], [k, n]], [H, H], G, t_gemm_us(m, n, k))
mem = [("FusedLayerNormAffineFunction", [[2048, 4, 4096], [4096], [4096]]),
       ("ScaledUpperTriangMaskedSoftmax", [[32, 2048, 2048]]),
       ("aten::add", [[2048, 4, 1536], [1536]])]
for name, dims in mem:
    elems = [math.prod(d) for d in dims]
    nbytes = (sum(elems) + elems[0]) * 2
    for rep in range(20):
        op(name, dims, [H] * len(dims), "void elementwise_kernel<128, 4>", nbytes / (MEM_BW * MEM_EFF) * 1e6)
ev.insert(0, {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 999.0,
              "dur": round(gpu_t - 999.0, 3)})
doc = {"schemaVersion": 1,
       "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
       "traceEvents": ev}
print(json.dumps(doc, indent=0))
