#!/usr/bin/env python3
"""Make tests/data/rooted/: a 3-rank job of broadcasts and reduces with known roots.

No shared trace has a reduce, and the one with broadcasts (ddp4_mi300) has
rank 0 as the root of all of them, arriving first. This writes, by hand, a
world of 3 ranks (process group "0", ranks [0, 1, 2]) in the shape PyTorch
2.x + NCCL record it (read in ddp4_mi300's traces): per collective a
c10d::broadcast_ / c10d::reduce_ cpu_op whose "Concrete Inputs" hold the
root (broadcast_(tensors, process_group, root_rank, root_tensor, asyncOp,
timeout): index 2; reduce_(tensors, process_group, reduce_op, root_rank,
...): index 3), a record_param_comms inside it with the collective args, and
the cudaLaunchKernel of the NCCL kernel inside that; the kernel carries the
same args. Each collective follows a compute kernel on the same stream
whose duration differs per rank, so the ranks arrive at different times:

  #  collective  root  arrives      compute us (rank 0, 1, 2)  transfer us
  0  broadcast   0     first        100, 400, 700              20
  1  broadcast   2     last         300, 100, 600              30
  2  reduce      1     first        500, 100, 300              25
  3  reduce      0     last         800, 200, 100              15
  4  broadcast   -     (no c10d op: root unknown)  100, 200, 300  20
  5  allreduce   -     -            200, 100, 300              40

Traced ends follow the rule lumosim replays (docs/cost-models.md, "Rooted
collectives"), the one the real RCCL job ddp4_mi300 shows: a broadcast's
root ends at its own start + transfer, the others at the last arrival +
transfer; a reduce's root at the last arrival + transfer, the others at the
last non-root arrival + transfer; everything else at the last arrival +
transfer. All ranks share one clock. The CPU launches everything up front
and waits in cudaDeviceSynchronize for the GPU.

usage: make_rooted.py OUT_DIR   (writes rank0.json .. rank2.json)
"""
import json
import os
import sys

N = 3
BASE = 1_000_000  # us
PLAN = [  # kind, root (None: unknown), compute us per rank, transfer us
    ("broadcast", 0, (100, 400, 700), 20),
    ("broadcast", 2, (300, 100, 600), 30),
    ("reduce", 1, (500, 100, 300), 25),
    ("reduce", 0, (800, 200, 100), 15),
    ("broadcast", None, (100, 200, 300), 20),
    ("allreduce", None, (200, 100, 300), 40),
]
KERNEL = {
    "broadcast": "ncclDevKernel_Broadcast_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "reduce": "ncclDevKernel_Reduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "allreduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
}
NELEMS = 1 << 16


def meta(kind, r):
    return {"Collective name": kind, "In msg nelems": NELEMS, "Out msg nelems": NELEMS, "Group size": N,
            "dtype": "Float", "Process Group Name": "0", "Process Group Description": "default_pg",
            "Process Group Ranks": "[0, 1, 2]"}


def main(out):
    os.makedirs(out, exist_ok=True)
    ev = [[] for _ in range(N)]
    corr = [1000] * N
    cpu = [BASE + 10] * N          # next CPU time per rank
    gpu = [BASE] * N               # stream 7 free from
    launches = [[] for _ in range(N)]  # (launch end, corr, name, args, dur or None)

    def x(r, cat, name, ts, dur, tid, args):
        ev[r].append({"ph": "X", "cat": cat, "name": name, "pid": 100 + r, "tid": tid, "ts": ts, "dur": dur,
                      "args": args})

    # CPU side: every launch up front
    for i, (kind, root, comp, T) in enumerate(PLAN):
        for r in range(N):
            c = cpu[r]
            corr[r] += 1
            x(r, "cuda_runtime", "cudaLaunchKernel", c, 4, 1, {"correlation": corr[r], "External id": corr[r]})
            launches[r].append((c + 4, corr[r], "compute_kernel_%d" % i, {}, comp[r]))
            c += 6
            rooted = root is not None and kind in ("broadcast", "reduce")
            if rooted:
                ci = ["", "", str(root), "0", "True", "-1"] if kind == "broadcast" else \
                     ["", "", "", str(root), "0", "True", "-1"]
                x(r, "cpu_op", "c10d::%s_" % kind, c, 14, 1, {"Concrete Inputs": ci, "External id": 5000 + i})
            a = dict(meta(kind, r), Rank=r)
            a["External id"] = 6000 + i
            x(r, "cpu_op", "record_param_comms", c + 1, 12, 1, a)
            corr[r] += 1
            x(r, "cuda_runtime", "cudaLaunchKernel", c + 3, 4, 1, {"correlation": corr[r], "External id": corr[r]})
            launches[r].append((c + 7, corr[r], KERNEL[kind], meta(kind, r), None))
            cpu[r] = c + 20
    # GPU side, instance by instance (each waits for its peers)
    k = [0] * N
    for i, (kind, root, comp, T) in enumerate(PLAN):
        start = [0] * N
        for r in range(N):
            le, cr, name, args, dur = launches[r][k[r]]
            s = max(gpu[r], le + 5)
            x(r, "kernel", name, s, dur, 7, {"correlation": cr, "device": r, "stream": 7})
            gpu[r] = s + dur
            start[r] = gpu[r] + 1  # the collective follows on the stream
        last = max(start)
        others = max(start[r] for r in range(N) if r != root) if root is not None else last
        for r in range(N):
            le, cr, name, args, _ = launches[r][k[r] + 1]
            if root is not None and kind == "broadcast":
                end = start[r] + T if r == root else last + T
            elif root is not None and kind == "reduce":
                end = last + T if r == root else others + T
            else:
                end = last + T
            a = dict(args, correlation=cr, device=r, stream=7)
            x(r, "kernel", name, start[r], end - start[r], 7, a)
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
