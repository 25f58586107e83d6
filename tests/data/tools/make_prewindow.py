#!/usr/bin/env python3
"""Make tests/data/prewindow_megatron_rank0.json.gz from a real trace.

Real traces often start while the GPU is still working through kernels that
the CPU launched before the profiler window opened (KINETO-NOTES trap 1).
None of the shared traces happens to show it, so this takes the real
megatron_tp8_a100 rank-0 trace and opens its window later, at the moment
where the most kernels are queued (launched, not yet started): CPU events
that begin before that moment are dropped, GPU events that end before it
are dropped, everything else is kept unchanged. The queued kernels are then
GPU work whose launch is not in the file.

usage: make_prewindow.py SHARED_TRACES_DIR OUT.json.gz
"""
import gzip
import json
import sys

src = sys.argv[1] + "/megatron_tp8_a100/rank0.json.gz"
doc = json.load(gzip.open(src))
ev = doc["traceEvents"]
CPU = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function"}
GPU = {"kernel", "gpu_memcpy", "gpu_memset"}
launch = {e["args"]["correlation"]: e["ts"] for e in ev
          if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in GPU]
t_first = min(e["ts"] for e in ev if e.get("ph") == "X")
t_last = max(e["ts"] for e in ev if e.get("ph") == "X")
best, best_t = -1, None
# candidate window starts: the first half of the trace in 100 us steps
for t in range(int(t_first) + 1000, int(t_first + (t_last - t_first) / 2), 100):
    q = sum(1 for e in gpu if launch.get(e["args"].get("correlation"), 1e30) < t <= e["ts"])
    if q > best:
        best, best_t = q, t
keep = []
for e in ev:
    if e.get("ph") == "X" and e.get("cat") in CPU and e["ts"] < best_t:
        continue
    if e.get("ph") == "X" and e.get("cat") in GPU and e["ts"] + e.get("dur", 0) < best_t:
        continue
    if e.get("ph") in ("s", "f") and e.get("ts", best_t) < best_t:
        continue
    keep.append(e)
doc["traceEvents"] = keep
with gzip.open(sys.argv[2], "wt", compresslevel=9) as f:
    json.dump(doc, f, separators=(",", ":"))
print(f"window opens at +{best_t - t_first} us with {best} kernels queued; {len(keep)} events kept")
