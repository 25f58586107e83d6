#!/usr/bin/env python3
"""Do concurrent kernels wait for SMs in the traces we have? (issue 16)

For every trace given (Kineto JSON, gzip or plain), per GPU:

- a kernel's *ready time* is the latest of its launch call's start
  (cudaLaunchKernel & co., joined by correlation id) and the end of the GPU
  op before it on its stream; its *lateness* is traced start - ready;
- a kernel *fills the GPU* when its grid has at least one full wave: blocks
  >= numSms x resident blocks per SM, the resident blocks from the block
  size, registers per thread and shared memory against deviceProperties
  (maxThreadsPerMultiProcessor, regsPerMultiprocessor,
  sharedMemPerMultiprocessor) and the per-SM block limit of the compute
  capability (CUDA C Programming Guide, "Compute Capabilities" table:
  32 for 7.0, 8.0 and 9.0, 16 for 7.5, 8.6 and 8.7, 24 for 8.9), lowered to what Kineto's
  "est. achieved occupancy %" implies when that is smaller;
- a *side-stream kernel held up* is one that became ready while a kernel on
  another stream of the same GPU filled it (not yet in its last wave,
  waves of equal length assumed: CUDA schedules a kernel's blocks in waves
  as SMs free up) and started late by more than 2 us.

Printed per trace: kernels, kernels overlapping another stream's kernel,
kernels ready while another fills the GPU, how many of those started late,
the median lateness of those, the median lateness of every kernel that
overlaps another stream's (against), and, with --replay LUMOSIM, the
replay's GPU start-error median / p90 (`lumosim replay --json`,
node_error.start_error_gpu) to compare the lateness with.

usage: sm_overlap.py [--replay LUMOSIM] TRACE...
"""
import gzip
import json
import statistics
import subprocess
import sys

LAUNCH = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaLaunchCooperativeKernel",
          "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel", "cudaGraphLaunch")
LATE_NS = 2000  # started late: more than 2 us after ready (twice the coarsest trace resolution, 1 us)


def max_blocks_per_sm(major, minor):
    """Resident blocks per SM by compute capability (CUDA C Programming Guide, Compute Capabilities)."""
    return {(7, 5): 16, (8, 6): 16, (8, 7): 16, (8, 9): 24}.get((major, minor), 32)


def load(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    op = gzip.open if magic == b"\x1f\x8b" else open
    with op(path, "rt") as f:
        return json.load(f)


def ns(x):
    return int(round(float(x) * 1000))


def resident(a, dp):
    """Resident blocks of this kernel per SM, or None when the args or the device are unknown."""
    blk = a.get("block")
    if not blk or not dp:
        return None
    thr = blk[0] * blk[1] * blk[2]
    if thr <= 0:
        return None
    lim = [max_blocks_per_sm(dp.get("computeMajor", 8), dp.get("computeMinor", 0))]
    if dp.get("maxThreadsPerMultiprocessor"):
        lim.append(dp["maxThreadsPerMultiprocessor"] // thr)
    r = a.get("registers per thread") or 0
    if r and dp.get("regsPerMultiprocessor"):
        lim.append(dp["regsPerMultiprocessor"] // (r * thr))
    s = a.get("shared memory") or 0
    smem = dp.get("sharedMemPerMultiprocessor") or dp.get("maxSharedMemoryPerMultiProcessor")
    if s and smem:
        lim.append(smem // s)
    res = max(1, min(lim))
    occ = a.get("est. achieved occupancy %")
    warp = dp.get("warpSize", 32)
    if occ and dp.get("maxThreadsPerMultiprocessor"):
        # occupancy = resident warps / max warps; only lowers the estimate
        wpb = -(-thr // warp)
        from_occ = max(1, int(round(occ / 100.0 * dp["maxThreadsPerMultiprocessor"] / warp / wpb)))
        grid = a.get("grid") or [0, 0, 0]
        blocks = grid[0] * grid[1] * grid[2]
        if blocks >= dp.get("numSms", 1) * res:  # a full wave: achieved ~ theoretical
            res = min(res, from_occ)
    return res


def infer_device(es):
    """A trace without deviceProperties (the sampled ones): numSms from Kineto's own
    "blocks per SM" (= grid blocks / numSms), the rest the values shared by compute
    capabilities 7.0, 8.0 and 9.0 (2048 threads, 65536 registers per SM)."""
    sms = []
    for e in es:
        a = e.get("args") or {}
        g, b = a.get("grid"), a.get("blocks per SM")
        if g and b:
            sms.append(round(g[0] * g[1] * g[2] / b))
    if not sms:
        return None
    return {"numSms": statistics.median(sms), "maxThreadsPerMultiprocessor": 2048,
            "regsPerMultiprocessor": 65536, "computeMajor": 8, "computeMinor": 0, "inferred": True}


def analyse(path):
    d = load(path)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    dps = d.get("deviceProperties") if isinstance(d, dict) else None
    launch = {}
    gpu = []
    for e in ev:
        if e.get("ph") != "X":
            continue
        cat = str(e.get("cat", "")).lower()
        a = e.get("args") or {}
        if cat in ("cuda_runtime", "cuda_driver", "runtime") and e.get("name") in LAUNCH:
            launch[a.get("correlation")] = ns(e["ts"])
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"):
            gpu.append(e)
    per_dev = {}
    for e in gpu:
        per_dev.setdefault(e.get("pid"), []).append(e)
    out = {"kernels": 0, "overlap": 0, "ready_full": 0, "late": [], "overlap_late": [], "holder_ms": []}
    for dev, es in per_dev.items():
        dp = None
        if dps:
            want = str((es[0].get("args") or {}).get("device", 0))
            dp = next((p for p in dps if str(p.get("id")) == want), dps[0])
        if dp is None:
            dp = infer_device(es)
        rows = []
        for e in es:
            a = e.get("args") or {}
            s, du = ns(e["ts"]), ns(e.get("dur", 0))
            k = str(e.get("cat", "")).lower() == "kernel"
            grid = a.get("grid") or [0, 0, 0]
            blocks = grid[0] * grid[1] * grid[2] if k else 0
            res = resident(a, dp) if k else None
            waves = None
            if res and dp and dp.get("numSms"):
                waves = -(-blocks // (dp["numSms"] * res))
            full = bool(waves) and blocks >= dp["numSms"] * res
            rows.append({"s": s, "e": s + du, "stream": e.get("tid"), "k": k, "waves": waves, "full": full,
                         "corr": a.get("correlation")})
        rows.sort(key=lambda r: (r["s"], r["e"]))
        last_end = {}
        for r in rows:
            ready = last_end.get(r["stream"], None)
            l = launch.get(r["corr"])
            if l is not None:
                ready = l if ready is None else max(ready, l)
            r["ready"] = ready
            last_end[r["stream"]] = max(last_end.get(r["stream"], r["e"]), r["e"])
        kern = [r for r in rows if r["k"]]
        out["kernels"] += len(kern)
        # a sweep would be faster; the traces are small (<= 10k kernels per GPU)
        kern_s = sorted(kern, key=lambda r: r["s"])
        for r in kern:
            others = [o for o in kern_s if o["stream"] != r["stream"] and o["s"] < r["e"] and o["e"] > r["s"]]
            if not others or r["ready"] is None:
                continue
            out["overlap"] += 1
            late = r["s"] - r["ready"]
            out["overlap_late"].append(late)
            for o in kern_s:
                if o["stream"] == r["stream"] or not o["full"] or o["s"] > r["ready"] or o["e"] <= r["ready"]:
                    continue
                lw = o["s"] + (o["e"] - o["s"]) * (o["waves"] - 1) // o["waves"]
                if r["ready"] < lw:  # ready while o fills every SM
                    out["ready_full"] += 1
                    if late > LATE_NS:
                        out["late"].append(late)
                        out["holder_ms"].append((o["e"] - o["s"]) / 1e6)
                    break
    return out


def med(x):
    return "%.1f" % (statistics.median(x) / 1e3) if x else "-"


def main(argv):
    lumosim = None
    if len(argv) > 2 and argv[1] == "--replay":
        lumosim, argv = argv[2], argv[2:]
    print("| trace | kernels | overlap other stream | ready while another fills the GPU | of those late > 2 us "
          "| their lateness median us | lateness median us, all overlapping (against) | holder median ms "
          "| replay GPU start err median / p90 us |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in argv[1:]:
        o = analyse(p)
        rep = "-"
        if lumosim:
            try:
                j = json.loads(subprocess.run([lumosim, "replay", "--json", p], capture_output=True, check=True,
                                              text=True).stdout)
                sg = j["ranks"][0]["node_error"]["start_error_gpu"]
                rep = "%.1f / %.1f" % (sg["median_ns"] / 1e3, sg["p90_ns"] / 1e3)
            except (subprocess.CalledProcessError, ValueError, KeyError, IndexError):
                rep = "fail"
        name = p.split("/")[-2] + "/" + p.split("/")[-1].split(".")[0][:40]
        print("| %s | %d | %d | %d | %d | %s | %s | %s | %s |" % (
            name, o["kernels"], o["overlap"], o["ready_full"], len(o["late"]), med(o["late"]),
            med(o["overlap_late"]), "%.2f" % statistics.median(o["holder_ms"]) if o["holder_ms"] else "-", rep))


if __name__ == "__main__":
    main(sys.argv)
