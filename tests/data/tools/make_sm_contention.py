#!/usr/bin/env python3
"""Make a one-GPU trace where a small kernel waits for the SMs a long kernel holds.

No shared trace shows it (bench/sm_overlap.py: at most 2 kernels per trace
start late while another stream's kernel fills the GPU, and the replay
never moves them), so this writes one by hand, in the shape Kineto records
kernels (args grid, block, registers per thread, shared memory, est.
achieved occupancy %, blocks per SM) with an A100's deviceProperties (108
SMs, 2048 threads, 65536 registers and 167936 bytes of shared memory per
SM, compute capability 8.0: 32 resident blocks per SM at most).

One CPU thread launches, then waits in cudaDeviceSynchronize:

  case   kernel   stream  grid x block, regs, smem     launched  starts   dur us
  held   L_fill   7       3456 x 256, 32 regs, 0 B     0         10       400
         K_small  20      64 x 128, 32 regs, 0 B       50        310      10
  fit    L_smem   7       3456 x 256, 32 regs, 48 KiB  600       610      400
         K_fit    20      64 x 128, 32 regs, 0 B       650       660      10

L_fill: 8 blocks per SM (threads 2048 / 256, registers 65536 / (32 x 256)),
so 3456 / (108 x 8) = 4 waves; its blocks hold every thread of every SM
until the last wave begins, 300 us in, and K_small starts then. L_smem:
shared memory allows 3 blocks per SM (167936 / 49152), 11 waves, leaving
1280 threads, 40960 registers and 20480 bytes per SM: a K_fit block (128
threads, 4096 registers) fits, so K_fit starts as soon as it is launched.
Times are whole microseconds from BASE.

usage: make_sm_contention.py OUT.json
"""
import json
import sys

BASE = 2_000_000  # us
DEV = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85174583296, "computeMajor": 8,
       "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
       "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
       "sharedMemPerMultiprocessor": 167936, "numSms": 108, "sharedMemPerBlockOptin": 166912}
# name, stream, grid, block, regs, smem, launched, starts, dur
KERNELS = [
    ("L_fill", 7, 3456, 256, 32, 0, 0, 10, 400),
    ("K_small", 20, 64, 128, 32, 0, 50, 310, 10),
    ("L_smem", 7, 3456, 256, 32, 49152, 600, 610, 400),
    ("K_fit", 20, 64, 128, 32, 0, 650, 660, 10),
]


def main(out):
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
          {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}]
    ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
               "ts": BASE - 5, "dur": 1200})
    for corr, (name, stream, grid, block, regs, smem, launched, starts, dur) in enumerate(KERNELS, start=1):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": BASE + launched, "dur": 5, "args": {"correlation": corr}})
        warps = -(-block // 32)
        res = min(32, 2048 // block, 65536 // (regs * block), 167936 // smem if smem else 32)
        occ = round(100 * min(res, grid / 108) * warps / 64)
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": BASE + starts,
                   "dur": dur, "args": {"device": 0, "stream": stream, "correlation": corr,
                                        "registers per thread": regs, "shared memory": smem,
                                        "blocks per SM": grid / 108, "warps per SM": grid * warps / 108,
                                        "grid": [grid, 1, 1], "block": [block, 1, 1],
                                        "est. achieved occupancy %": occ}})
    # the thread waits for each case before launching the next
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1,
               "ts": BASE + 60, "dur": 352, "args": {"correlation": 100}})
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1,
               "ts": BASE + 660, "dur": 352, "args": {"correlation": 101}})
    doc = {"schemaVersion": 1, "deviceProperties": [DEV], "traceEvents": ev,
           "traceName": "sm_contention", "displayTimeUnit": "ms"}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
