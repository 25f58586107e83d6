#!/usr/bin/env python3
"""Make a job with all-to-all, all-gather and reduce-scatter from a real DDP job.

No shared trace has an all-to-all (megatron_tp8_a100: TP all-reduces;
ddp4_mi300: DDP all-reduces and broadcasts). This rewrites, in every rank's
trace of ddp4_mi300 (PyTorch 2.x, RCCL on MI300, a world of 4 on process
group "0"), a few of the all-reduces into other collectives the way
PyTorch + NCCL record them, keeping every timestamp and duration, so the job
stays a real job: the same kernels at the same times, only their kind and
message sizes changed. The k-th collective kernel of every rank (in time
order; all ranks issue them in the same order) is rewritten alike:

  position  becomes
  3, 10     all_to_all  (equal splits)
  17        all_to_allv (uneven splits: each rank sends and receives
            different element counts)
  5         all_gather  (_allgather_base)
  12        reduce_scatter (_reduce_scatter_base)

What PyTorch records (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp,
ProcessGroupNCCL::alltoall_base, read in pytorch/pytorch): with empty split
sizes, RECORD_PARAM_COMMS_DATA(seq + 1, (pg uid, pg desc), input, output,
rank, "all_to_all", input.numel(), output.numel(), dtype, [], [],
globalRankStart, globalRankStride, size) and the profiling title
"nccl:all_to_all"; with split sizes the name is "all_to_allv" and the
split sizes are recorded ("In split size", "Out split size"; In/Out msg
nelems are then each rank's own totals, which differ across ranks). In a
Kineto trace that is the record_param_comms cpu_op with args "Collective
name", "In msg nelems", "Out msg nelems", "In split size", "Out split size",
"dtype", "Group size", "Process Group Name", "Process Group Ranks", a
user_annotation "nccl:all_to_all" around the launch, and a
gpu_user_annotation of that name over the kernel. NCCL implements the
all-to-all as grouped ncclSend/ncclRecv to every peer (ncclGroupStart/End),
so the GPU runs one kernel per rank, named like a point-to-point one:
`ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)` (NCCL >=
2.19; RCCL would keep `ncclDevKernel_Generic`, the name this trace's other
kernels have). Newer PyTorch copies the record_param_comms args onto the
kernel event (this trace's kernels carry them); older versions leave the
kernel with its name only (KINETO-NOTES.md, trap 7): --strip-kernel-args
removes them from every collective kernel, so that the kind and group come
from the enclosing record_param_comms alone -- the case in which a SendRecv
kernel looks like a point-to-point kernel without a known peer.
_allgather_base and _reduce_scatter_base record those names, In msg nelems
the input and Out msg nelems the output (the gathered tensor is group-size
times the shard); their kernels get NCCL's names
(`ncclDevKernel_AllGather_RING_LL`, `ncclDevKernel_ReduceScatter_Sum_f32_RING_LL`).

With --et (megatron_tp8_a100: PyTorch 2.1, no metadata in the Kineto trace
at all, process groups and names from the execution traces beside it,
rankN.et.json.gz) the 3rd, 10th and 17th all-reduces of every rank (in
issue order, by their record_param_comms sequence number) become
all_to_all: in the execution trace the call's collective name (the fifth
input of record_param_comms, "allreduce" -> "all_to_all", as
RECORD_PARAM_COMMS_DATA writes it), in the Kineto trace the kernel launched
inside that record_param_comms renamed to ncclDevKernel_SendRecv and the
nccl:all_reduce annotation around it to nccl:all_to_all. Sizes are kept:
an equal-split all-to-all moves the whole buffer, like the all-reduce.

usage: make_alltoall.py [--strip-kernel-args | --et] IN_DIR OUT_DIR
  IN_DIR holds rank0.json.gz .. rankN.json.gz (and rankN.et.json.gz with
  --et); OUT_DIR (created) gets the rewritten files under the same names,
  and nothing else.
"""
import gzip
import json
import os
import sys

SENDRECV = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"
ALLGATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
REDSCAT = "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
# position in each rank's collective order -> (record_param_comms name, annotation, kernel)
PLAN = {
    3: ("all_to_all", "nccl:all_to_all", SENDRECV),
    10: ("all_to_all", "nccl:all_to_all", SENDRECV),
    17: ("all_to_allv", "nccl:all_to_all", SENDRECV),
    5: ("_allgather_base", "nccl:_allgather_base", ALLGATHER),
    12: ("_reduce_scatter_base", "nccl:_reduce_scatter_base", REDSCAT),
}
META = ("Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype", "In split size",
        "Out split size", "Process Group Name", "Process Group Description", "Process Group Ranks")


def die(msg):
    sys.stderr.write("make_alltoall: %s\n" % msg)
    sys.exit(1)


def is_coll_kernel(e):
    n = str(e.get("name", "")).lower()
    return e.get("cat") == "kernel" and ("nccl" in n or "rccl" in n)


def splits(world, n):
    """Uneven all_to_allv splits: s[r][j] elements from rank r to rank j,
    positive, each rank's row and column sums differing."""
    base = max(1, n // (4 * world * world))
    return [[base * (1 + (r + 2 * j) % world + r) for j in range(world)] for r in range(world)]


def sizes(name, n, world, rank):
    """(in nelems, out nelems, in split, out split) for the new collective
    replacing an all-reduce of n elements."""
    if name == "all_to_all":
        return n, n, "[]", "[]"
    if name == "all_to_allv":
        s = splits(world, n)
        row = s[rank]
        col = [s[i][rank] for i in range(world)]
        return sum(row), sum(col), json.dumps(row).replace(",", ", "), json.dumps(col).replace(",", ", ")
    shard = n // world
    if name == "_allgather_base":
        return shard, shard * world, "[]", "[]"
    return shard * world, shard, "[]", "[]"  # _reduce_scatter_base


def rewrite(path, out, strip):
    doc = json.load(gzip.open(path))
    ev = doc["traceEvents"]
    world = int(doc.get("distributedInfo", {}).get("world_size", 0))
    rank = int(doc.get("distributedInfo", {}).get("rank", -1))
    if world < 2 or rank < 0:
        die("%s: no distributedInfo rank and world_size" % path)
    kern = sorted((e for e in ev if is_coll_kernel(e)), key=lambda e: e["ts"])
    if len(kern) <= max(PLAN):
        die("%s: %d collective kernels, need more than %d" % (path, len(kern), max(PLAN)))
    rpc = {}
    for e in ev:
        if e.get("name") == "record_param_comms" and e.get("args", {}).get("Collective name") not in (None, "wait"):
            rpc[e["args"].get("External id")] = e
    for pos, (cname, ann, kname) in sorted(PLAN.items()):
        k = kern[pos]
        ka = k.get("args", {})
        if ka.get("Collective name") != "allreduce":
            die("%s: collective #%d is %s, not an allreduce" % (path, pos, ka.get("Collective name")))
        r = rpc.get(ka.get("External id"))
        if r is None:
            die("%s: collective #%d has no record_param_comms (External id %s)" % (path, pos, ka.get("External id")))
        n = int(r["args"]["In msg nelems"])
        i, o, si, so = sizes(cname, n, world, rank)
        for a in (r["args"], ka):
            a["Collective name"] = cname
            a["In msg nelems"], a["Out msg nelems"] = i, o
            a["In split size"], a["Out split size"] = si, so
        k["name"] = kname
        # the nccl:* annotations: the CPU one inside the record_param_comms
        # op's span on its thread, the GPU one over the kernel on its stream
        for e in ev:
            if e.get("name") != "nccl:all_reduce":
                continue
            if e.get("cat") == "user_annotation" and e.get("tid") == r.get("tid") and \
                    r["ts"] <= e["ts"] <= r["ts"] + r.get("dur", 0):
                e["name"] = ann
            elif e.get("cat") == "gpu_user_annotation" and e.get("pid") == k.get("pid") and \
                    e["ts"] <= k["ts"] and k["ts"] + k.get("dur", 0) <= e["ts"] + e.get("dur", 0):
                e["name"] = ann
    if strip:
        for k in kern:
            for m in META:
                k.get("args", {}).pop(m, None)
    write_gz(doc, out)


ET_POSITIONS = (3, 10, 17)


def write_gz(doc, out):
    with gzip.open(out + ".tmp", "wt") as f:
        json.dump(doc, f)
    os.replace(out + ".tmp", out)


def rewrite_et(path, et_path, out, et_out):
    """The --et mode: see the module docstring."""
    doc = json.load(gzip.open(path))
    ev = doc["traceEvents"]
    et = json.load(gzip.open(et_path))
    # record_param_comms ops with a tensor (the collectives; "wait" has none), in issue order
    rpc = sorted((e for e in ev if e.get("name") == "record_param_comms" and e.get("args", {}).get("Input Dims", [[]])[0]),
                 key=lambda e: e["ts"])
    launches = [e for e in ev if e.get("cat") == "cuda_runtime" and str(e.get("name", "")).startswith("cudaLaunchKernel")]
    kern = {e["args"]["correlation"]: e for e in ev if is_coll_kernel(e) and "correlation" in e.get("args", {})}
    with_kernel = []
    for r in rpc:
        ks = [kern[c["args"]["correlation"]] for c in launches
              if c.get("tid") == r.get("tid") and r["ts"] <= c["ts"] <= r["ts"] + r["dur"] and c["args"].get("correlation") in kern]
        if len(ks) == 1:
            with_kernel.append((r, ks[0]))
    if len(with_kernel) <= max(ET_POSITIONS):
        die("%s: %d collectives with a kernel, need more than %d" % (path, len(with_kernel), max(ET_POSITIONS)))
    nodes = {}
    for n in et.get("nodes", []):
        i = n.get("inputs")
        if n.get("name") == "record_param_comms" and isinstance(i, list) and len(i) > 4 and i[4] == "allreduce":
            nodes[i[1]] = n
    for pos in ET_POSITIONS:
        r, k = with_kernel[pos]
        seq = int(r["args"]["Concrete Inputs"][1])
        n = nodes.get(seq)
        if n is None or "AllReduce" not in k["name"]:
            die("%s: collective #%d (sequence number %d) is not an all-reduce in both files" % (path, pos, seq))
        n["inputs"][4] = "all_to_all"
        k["name"] = SENDRECV
        for e in ev:
            if e.get("name") == "nccl:all_reduce" and e.get("tid") == r.get("tid") and r["ts"] <= e["ts"] <= r["ts"] + r["dur"]:
                e["name"] = "nccl:all_to_all"
    write_gz(doc, out)
    write_gz(et, et_out)


def main(argv):
    strip = "--strip-kernel-args" in argv
    et = "--et" in argv
    args = [a for a in argv if a not in ("--strip-kernel-args", "--et")]
    if len(args) != 2 or (strip and et):
        die("usage: make_alltoall.py [--strip-kernel-args | --et] IN_DIR OUT_DIR")
    src, dst = args
    files = sorted(f for f in os.listdir(src) if f.startswith("rank") and f.endswith(".json.gz") and ".et." not in f)
    if not files:
        die("%s: no rank*.json.gz" % src)
    os.makedirs(dst, exist_ok=True)
    for f in files:
        if os.path.abspath(os.path.join(src, f)) == os.path.abspath(os.path.join(dst, f)):
            die("%s: would overwrite the input" % os.path.join(dst, f))
        if et:
            e = f.replace(".json.gz", ".et.json.gz")
            if not os.path.exists(os.path.join(src, e)):
                die("%s: no execution trace %s beside it" % (os.path.join(src, f), e))
            rewrite_et(os.path.join(src, f), os.path.join(src, e), os.path.join(dst, f), os.path.join(dst, e))
        else:
            rewrite(os.path.join(src, f), os.path.join(dst, f), strip)


if __name__ == "__main__":
    main(sys.argv[1:])
