#!/usr/bin/env python3
"""Make a data-parallel-width-1 training trace from one rank of a real DDP job.

No shared trace is a single-GPU training step with record_shapes, yet
`whatif --dp N` from DP 1 on a trace (gradient buckets inserted from the
AccumulateGrad sizes) needs ground truth: the real multi-rank job it should
predict. This takes one rank of such a job (ddp4_mi300 rank 0) and removes
what data parallelism added to it: the collective kernels (NCCL/RCCL), the
runtime calls that launched them (same correlation id), their flow events,
their nccl:* annotations and record_param_comms ops, and declares the trace a world of one. What DDP's
reducer did on the GPU besides (copies into and out of the buckets) stays, so
the result is what the same script runs under DDP on one GPU, minus the
all-reduces a group of one would make. Nothing else is changed.

usage: strip_collectives.py IN.json.gz OUT.json.gz
"""
import gzip
import json
import sys

doc = json.load(gzip.open(sys.argv[1]))
ev = doc["traceEvents"]


def is_coll_kernel(e):
    n = str(e.get("name", "")).lower()
    return e.get("cat") == "kernel" and ("nccl" in n or "rccl" in n)


corr = {e.get("args", {}).get("correlation") for e in ev if is_coll_kernel(e)}
corr.discard(None)
RUNTIME = {"cuda_runtime", "cuda_driver"}
out = []
for e in ev:
    a = e.get("args", {}) if isinstance(e.get("args"), dict) else {}
    if is_coll_kernel(e):
        continue
    if e.get("cat") in RUNTIME and a.get("correlation") in corr:
        continue
    if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g" and e.get("id") in corr:
        continue
    if str(e.get("name", "")).startswith("nccl:") or e.get("name") == "record_param_comms":
        continue
    out.append(e)
doc["traceEvents"] = out
di = doc.get("distributedInfo")
if isinstance(di, dict):
    di["rank"], di["world_size"] = 0, 1
    di.pop("pg_config", None)
    di.pop("pg_count", None)
with gzip.open(sys.argv[2], "wt") as f:
    json.dump(doc, f)
print("strip_collectives: removed %d collective kernels and %d of %d events in all"
      % (sum(1 for e in ev if is_coll_kernel(e)), len(ev) - len(out), len(ev)))
