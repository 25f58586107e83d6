#!/usr/bin/env python3
"""Make tests/data/deepep/: a 2-rank MoE step whose tokens move by DeepEP kernels.

DeepEP (deepseek-ai/DeepEP) dispatches tokens to their experts and combines
the results with its own kernels over NVLink / RDMA, not NCCL: no
record_param_comms, no nccl:* title, no process group in the trace -- only
the kernel names (`deep_ep::intranode::dispatch<...>`,
`deep_ep::intranode::combine<...>`; KINETO-NOTES.md, trap 11). Every rank
of the expert-parallel group runs each dispatch and each combine, in the
same order, and a rank's kernel cannot finish before its peers have sent
their tokens: an all-to-all of the group (here the world of 2). Written by
hand: per rank, compute then dispatch, compute then combine, on stream 7;
the late rank's compute is 5 ms longer:

  #  kernel     late rank  compute us (other / late)  transfer us
  0  dispatch   1          1000 / 6000                120
  1  combine    0          1000 / 6000                 80

Traced: both participants end at the last arrival + transfer. One clock;
the CPU launches everything up front and waits in cudaDeviceSynchronize.

usage: make_deepep.py OUT_DIR   (writes rank0.json, rank1.json)
"""
import json
import os
import sys

N = 2
BASE = 2_000_000  # us
LATE_US = 5000
COMPUTE_US = 1000
PLAN = [
    ("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, int*, "
     "int4 const*, float const*, long const*, float const*, bool const*, int const*, int, int, int, int, int, int, "
     "int, int, void**, int, int, int)", 1, 120),
    ("void deep_ep::intranode::combine<__nv_bfloat16, 8, 768>(__nv_bfloat16*, float*, __nv_bfloat16 const*, "
     "float const*, float const*, int const*, int const*, int const*, int*, int, int, int, int, void**, int, int, int)",
     0, 80),
]


def main(out):
    os.makedirs(out, exist_ok=True)
    ev = [[] for _ in range(N)]
    corr = [1000] * N
    cpu = [BASE + 10] * N
    launches = [[] for _ in range(N)]

    def x(r, cat, name, ts, dur, tid, args):
        ev[r].append({"ph": "X", "cat": cat, "name": name, "pid": 200 + r, "tid": tid, "ts": ts, "dur": dur,
                      "args": args})

    for i, (kern, late, T) in enumerate(PLAN):
        for r in range(N):
            for name, dur in (("moe_expert_gemm_%d" % i, COMPUTE_US + (LATE_US if r == late else 0)), (kern, None)):
                corr[r] += 1
                x(r, "cuda_runtime", "cudaLaunchKernel", cpu[r], 4, 1, {"correlation": corr[r], "External id": corr[r]})
                launches[r].append((cpu[r] + 4, corr[r], name, dur))
                cpu[r] += 8
    gpu = [BASE] * N
    k = [0] * N
    for i, (kern, late, T) in enumerate(PLAN):
        start = [0] * N
        for r in range(N):
            le, cr, name, dur = launches[r][k[r]]
            s = max(gpu[r], le + 5)
            x(r, "kernel", name, s, dur, 7, {"correlation": cr, "device": r, "stream": 7})
            start[r] = s + dur + 1
        end = max(start) + T
        for r in range(N):
            le, cr, name, _ = launches[r][k[r] + 1]
            x(r, "kernel", name, start[r], end - start[r], 7, {"correlation": cr, "device": r, "stream": 7})
            gpu[r] = end
            k[r] += 2
    for r in range(N):
        x(r, "cuda_runtime", "cudaDeviceSynchronize", cpu[r], gpu[r] + 2 - cpu[r], 1, {"correlation": 99999})
        x(r, "user_annotation", "ProfilerStep#1", BASE, gpu[r] + 5 - BASE, 1, {"External id": 1})
        doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": r, "world_size": N},
               "traceEvents": sorted(ev[r], key=lambda e: (e["ts"], -e["dur"]))}
        with open(os.path.join(out, "rank%d.json" % r), "w") as f:
            json.dump(doc, f, indent=0)
            f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
