#!/usr/bin/env python3
"""trace_memory.py LUMOSIM HIP_TRACE [LEGACY_TRACE]

The GPU memory a trace's profiler recorded (profile_memory=True: "[memory]"
instant events; graph.h mem_*), checked against figures this script
computes from the trace itself:

1. HIP_TRACE with [memory] events added (the newer format: the allocator's
   "Total Allocated" / "Total Reserved" on each event) for the trace's GPU
   (device 2), for another device and for the CPU (both must be ignored):
   `replay --json` reports the maxima of the GPU's totals, its
   deviceProperties capacity, source "totals"; a second copy whose peak
   exceeds the capacity is flagged over_capacity. The same figures come
   back from a graph store (`build` then `sim --json`).
2. LEGACY_TRACE (2021 format, allocation sizes "Bytes" only): the peak is
   the lower bound max - min of the running sum of Bytes for device 0,
   flagged lower_bound, source "deltas".
3. HIP_TRACE as it is (no [memory] events): source "none", nulls, and the
   table says how to record it.
"""
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile

lumosim, hip = sys.argv[1], sys.argv[2]
legacy = sys.argv[3] if len(sys.argv) > 3 else ""
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def run(*args):
    p = subprocess.run([lumosim, *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"lumosim {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def mem_of(report_text):
    d = json.loads(report_text)
    ranks = d["ranks"] if "ranks" in d else [d]
    return ranks[0]["graph"]["memory"]


tmp = tempfile.mkdtemp()
d = load(hip)
gpu_dev = next(e["args"]["device"] for e in d["traceEvents"] if e.get("cat") == "kernel")
cap = next(p["totalGlobalMem"] for p in d["deviceProperties"] if p["id"] == gpu_dev)
ts0 = min(float(e["ts"]) for e in d["traceEvents"] if "ts" in e)
rng = random.Random(7)


def with_memory(scale):
    """HIP_TRACE plus [memory] events; returns (path, max allocated, max reserved) of the GPU."""
    t = json.loads(json.dumps(d))
    alloc = res = 0
    amax = rmax = 0
    for i in range(200):
        alloc = max(0, alloc + rng.randint(-3, 4) * 1_000_000 * scale)
        res = max(res, alloc + rng.randint(0, 5) * 1_000_000 * scale)
        amax, rmax = max(amax, alloc), max(rmax, res)
        t["traceEvents"].append({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts0 + i,
                                 "args": {"Device Type": 1, "Device Id": gpu_dev, "Addr": 1000 + i,
                                          "Bytes": 1_000_000, "Total Allocated": alloc, "Total Reserved": res}})
        # another GPU and the CPU: not this trace's GPU, never counted
        t["traceEvents"].append({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts0 + i,
                                 "args": {"Device Type": 1, "Device Id": gpu_dev + 1, "Bytes": 5,
                                          "Total Allocated": 10**14, "Total Reserved": 10**14}})
        t["traceEvents"].append({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts0 + i,
                                 "args": {"Device Type": 0, "Device Id": -1, "Bytes": 7,
                                          "Total Allocated": 10**14, "Total Reserved": 10**14}})
    path = os.path.join(tmp, f"mem{scale}.json")
    with open(path, "w") as f:
        json.dump(t, f)
    return path, amax, rmax


# 1. totals
path, amax, rmax = with_memory(1)
m = mem_of(run("replay", "--json", path))
check(m["source"] == "totals", f"totals: source {m['source']}")
check(m["events"] == 200, f"totals: events {m['events']}, want 200 (the GPU's only)")
check(m["peak_allocated_bytes"] == amax, f"totals: peak allocated {m['peak_allocated_bytes']}, want {amax}")
check(m["peak_reserved_bytes"] == rmax, f"totals: peak reserved {m['peak_reserved_bytes']}, want {rmax}")
check(m["capacity_bytes"] == cap, f"totals: capacity {m['capacity_bytes']}, want {cap}")
check(m["device"] == gpu_dev and m["lower_bound"] is False and m["over_capacity"] is False, f"totals: {m}")
store = os.path.join(tmp, "mem.h5")
run("build", path, "-o", store)
ms = mem_of(run("sim", "--json", store))
check(ms == m, f"store round trip: {ms} != {m}")
table = run("replay", path)
check(f"peak allocated {amax / 1e9:.2f} GB, reserved {rmax / 1e9:.2f} GB of the GPU's {cap / 1e9:.2f} GB" in table,
      "totals: the table line")
# a peak beyond the GPU's memory
big, bmax, brmax = with_memory(2000)
mb = mem_of(run("replay", "--json", big))
check(brmax > cap and mb["over_capacity"] is True, f"over capacity: {mb} (peak {brmax}, capacity {cap})")
check("OVER CAPACITY" in run("replay", big), "over capacity: the table does not say so")

# 2. allocation sizes only (2021 traces)
if legacy and os.path.exists(legacy):
    ld = load(legacy)
    cum = lo = hi = 0
    n = 0
    for e in ld["traceEvents"]:
        a = e.get("args", {})
        if e.get("name") == "[memory]" and a.get("Device Type", 0) != 0 and a.get("Device Id") == 0:
            n += 1
            cum += int(a.get("Bytes", 0))
            lo, hi = min(lo, cum), max(hi, cum)
    lm = mem_of(run("replay", "--json", legacy))
    check(lm["source"] == "deltas" and lm["lower_bound"] is True, f"legacy: {lm}")
    check(lm["events"] == n, f"legacy: events {lm['events']}, want {n}")
    check(lm["peak_allocated_bytes"] == hi - lo, f"legacy: peak {lm['peak_allocated_bytes']}, want {hi - lo}")
    check(lm["peak_reserved_bytes"] is None, "legacy: a reserved figure from sizes only")
    lcap = next(p["totalGlobalMem"] for p in ld["deviceProperties"] if p["id"] == 0)
    check(lm["capacity_bytes"] == lcap, f"legacy: capacity {lm['capacity_bytes']}, want {lcap}")
else:
    print("trace_memory: the legacy trace is not here; part 2 not run")

# 3. none
nm = mem_of(run("replay", "--json", hip))
check(nm["source"] == "none" and nm["peak_allocated_bytes"] is None and nm["events"] == 0, f"none: {nm}")
check("profile_memory=True" in run("replay", hip), "none: the table does not say how to record memory")

if fails:
    print("trace_memory: FAIL\n  " + "\n  ".join(fails))
    sys.exit(1)
print("trace_memory: totals, sizes-only lower bound, none and over-capacity all as the trace says")
