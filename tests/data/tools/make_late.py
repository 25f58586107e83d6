#!/usr/bin/env python3
"""Make tests/data/late/: a 4-rank job where one rank enters each collective 5 ms late.

No shared trace has an all-to-all; the real job that showed the gap (an
8-rank DLRM job, PyTorch 1.x on V100) records its collectives the old way,
which this writes by hand for a world of 4 ranks (distributedInfo only, no
process-group metadata, so the group is the world):

  c10d::alltoall_base_ (cpu_op)
    record_param_comms (cpu_op; only "Input Dims", no "Collective name")
      nccl:all_to_all (user_annotation: ProcessGroupNCCL's profiling title)
        cudaLaunchKernel -> ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(...)

(the kernel has no args besides correlation, device and stream: older NCCL
runs an all-to-all as grouped sends and receives, one SendRecv kernel per
rank). The all-gather and reduce-scatter have the same shape with their own
op, title and NCCL kernel. Each collective follows a compute kernel on the
same stream; the late rank's compute is LATE_US longer:

  #  collective      late rank  compute us (others / late)  transfer us
  0  all_to_all      2          1000 / 6000                 300
  1  all_to_all      0          1000 / 6000                 200
  2  _allgather_base 1          1000 / 6000                 150
  3  reduce_scatter  3          1000 / 6000                 250

Traced: every participant ends at the last arrival + transfer (the others'
kernels last 5 ms + transfer: they waited). One clock; the CPU launches
everything up front and waits in cudaDeviceSynchronize.

usage: make_late.py OUT_DIR   (writes rank0.json .. rank3.json)
"""
import json
import os
import sys

N = 4
BASE = 1_000_000  # us
LATE_US = 5000
COMPUTE_US = 1000
PLAN = [  # op, title, kernel, late rank, transfer us
    ("c10d::alltoall_base_", "nccl:all_to_all",
     "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", 2, 300),
    ("c10d::alltoall_base_", "nccl:all_to_all",
     "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", 0, 200),
    ("c10d::_allgather_base_", "nccl:_all_gather_base",
     "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", 1, 150),
    ("c10d::_reduce_scatter_base_", "nccl:_reduce_scatter_base",
     "ncclKernel_ReduceScatter_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 3, 250),
]


def main(out):
    os.makedirs(out, exist_ok=True)
    ev = [[] for _ in range(N)]
    corr = [1000] * N
    cpu = [BASE + 10] * N
    gpu = [BASE] * N
    launches = [[] for _ in range(N)]  # (launch end, corr, name, dur or None)

    def x(r, cat, name, ts, dur, tid, args):
        ev[r].append({"ph": "X", "cat": cat, "name": name, "pid": 100 + r, "tid": tid, "ts": ts, "dur": dur,
                      "args": args})

    for i, (op, title, kern, late, T) in enumerate(PLAN):
        for r in range(N):
            c = cpu[r]
            corr[r] += 1
            x(r, "cuda_runtime", "cudaLaunchKernel", c, 4, 1, {"correlation": corr[r], "External id": corr[r]})
            launches[r].append((c + 4, corr[r], "compute_kernel_%d" % i, COMPUTE_US + (LATE_US if r == late else 0)))
            c += 6
            x(r, "cpu_op", op, c, 20, 1, {"Input Dims": [[4096], [4096]], "Input type": ["float", "float"],
                                         "External id": 5000 + i})
            x(r, "cpu_op", "record_param_comms", c + 1, 18, 1,
              {"Input Dims": [[4096]], "Input type": ["float"], "External id": 6000 + i})
            x(r, "user_annotation", title, c + 2, 15, 1, {"Input Dims": [[4096]], "Input type": ["float"],
                                                         "External id": 7000 + i})
            corr[r] += 1
            x(r, "cuda_runtime", "cudaLaunchKernel", c + 4, 4, 1, {"correlation": corr[r], "External id": corr[r]})
            launches[r].append((c + 8, corr[r], kern, None))
            cpu[r] = c + 26
    k = [0] * N
    for i, (op, title, kern, late, T) in enumerate(PLAN):
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
