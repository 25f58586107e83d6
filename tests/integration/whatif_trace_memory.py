#!/usr/bin/env python3
"""whatif_trace_memory.py LUMOSIM MEGATRON_RANK0 MODEL_JSON [DDP4_DIR] [LEGACY_TRACE] [MEGATRON_DIR]

A traced job's GPU memory (the profiler's [memory] events, graph.h mem_*)
through `lumosim whatif` (docs/memory.md, "A traced job after a what-if"),
checked against figures this script computes from the trace JSON itself,
never from lumosim:

1. DDP4_DIR's four ranks, each given [memory] events with its own totals
   (the newer format): `whatif --dp 8` gives new GPU g exactly the peaks of
   source rank g % 4 (DDP: each replica holds what its source did), the
   record says "carried" for every step and no OOM, and sim's table says
   the figure was carried.
2. MEGATRON_RANK0 (an A100 80 GB trace) given a 50 GB peak: `--gpu` to a
   40 GB GPU (a spec file) keeps the bytes, makes the capacity 40 GB and is
   flagged OOM by whatif (stderr and record), sim (table, JSON, stderr),
   the result archive's per-GPU figures and the HTML report; `--gpu h200`
   fits and takes the H200's 141 GB.
3. The same store, `--layers 20` (a structural what-if, no --model): no
   figure at all (source "dropped", peaks null), the record and whatif's
   stderr say why, sim's table says it was not carried.
   With --model it is still dropped, and says why: the store holds one
   of the job's 8 GPUs, so its layout is not the job's.
4. LEGACY_TRACE (2021, allocation sizes only, DP 1, no DDP): `--dp 8`
   carries the lower bound plus DDP's gradient buckets, one pass's
   AccumulateGrad bytes (from the ops' Input Dims and types).
5. MEGATRON_DIR's eight TP-8 ranks, each given its own peaks, `--layers 20
   --model MODEL_JSON`: every GPU's figure is its measured peak plus the
   estimate's change, which for this forward-only job at PP 1 is the bf16
   weights of the 20 layers removed: 2 bytes x 20 x ((4hA + 2hf + 3A + f)/t
   + 6h) (docs/memory.md, "The accounting"), computed here from the model
   file.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

lumosim, megatron, model = sys.argv[1], sys.argv[2], sys.argv[3]
ddp4 = sys.argv[4] if len(sys.argv) > 4 else ""
legacy = sys.argv[5] if len(sys.argv) > 5 else ""
megdir = sys.argv[6] if len(sys.argv) > 6 else ""
fails = []
tmp = tempfile.mkdtemp()


def check(cond, what):
    if not cond:
        fails.append(what)


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def run(*args, ok=True):
    p = subprocess.run([lumosim, *args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        sys.exit(f"lumosim {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def ranks_of(sim_json):
    d = json.loads(sim_json)
    return d["ranks"] if "ranks" in d else [d]


def add_memory(d, seed, scale, base=0):
    """[memory] events (Total Allocated / Reserved) for the trace's GPU, from base bytes; returns (max allocated,
    max reserved)."""
    dev = next(e["args"]["device"] for e in d["traceEvents"] if e.get("cat") == "kernel")
    ts0 = min(float(e["ts"]) for e in d["traceEvents"] if "ts" in e)
    alloc = res = amax = rmax = base
    for i in range(100):
        # a deterministic walk, different for every seed
        alloc = max(0, alloc + ((i * 7 + seed * 13) % 9 - 3) * scale)
        res = max(res, alloc + ((i + seed) % 4) * scale)
        amax, rmax = max(amax, alloc), max(rmax, res)
        d["traceEvents"].append({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts0 + i,
                                 "args": {"Device Type": 1, "Device Id": dev, "Addr": 1000 + i, "Bytes": scale,
                                          "Total Allocated": alloc, "Total Reserved": res}})
    return amax, rmax


def write(d, path):
    with open(path, "w") as f:
        json.dump(d, f)


def step_memory(record, name):
    return next(t["memory"] for t in record["transformations"] if t["name"] == name)


# 1. DDP 4 -> 8: every GPU keeps its source GPU's figures
if ddp4 and os.path.isdir(ddp4):
    src = os.path.join(tmp, "ddp4")
    os.mkdir(src)
    want = {}
    for r in range(4):
        d = load(os.path.join(ddp4, f"rank{r}.json.gz"))
        rank = d["distributedInfo"]["rank"]
        want[rank] = add_memory(d, seed=r + 1, scale=(r + 2) * 1_000_000)
        write(d, os.path.join(src, f"rank{r}.json"))
    check(len(set(want.values())) == 4, f"ddp4: the fixture's ranks do not differ: {want}")
    run("build", src, "-o", os.path.join(tmp, "ddp4.h5"))
    p = run("whatif", os.path.join(tmp, "ddp4.h5"), "--dp", "8", "-o", os.path.join(tmp, "ddp8.h5"))
    rec = json.loads(p.stdout)
    check(rec["memory"]["figures"] == "carried" and rec["memory"]["gpus_with_figures"] == 8, f"ddp8: {rec['memory']}")
    check(rec["memory"]["oom"] is False, f"ddp8: OOM without a capacity: {rec['memory']}")
    check(all(t["memory"]["figures"] == "carried" for t in rec["transformations"]), "ddp8: a step did not carry")
    rs = ranks_of(run("sim", "--json", os.path.join(tmp, "ddp8.h5")).stdout)
    check(len(rs) == 8, f"ddp8: {len(rs)} GPUs")
    for g, r in enumerate(rs):
        m = r["graph"]["memory"]
        a, v = want[g % 4]
        check(m["source"] == "totals" and m["carried"] is True, f"ddp8 GPU {g}: {m}")
        check(m["peak_allocated_bytes"] == a and m["peak_reserved_bytes"] == v,
              f"ddp8 GPU {g}: peaks {m['peak_allocated_bytes']}/{m['peak_reserved_bytes']}, "
              f"want source rank {g % 4}'s {a}/{v}")
    check("carried from the source GPU's trace" in run("sim", os.path.join(tmp, "ddp8.h5")).stdout,
          "ddp8: the table does not say the figure was carried")
else:
    print("whatif_trace_memory: ddp4_mi300 is not here; part 1 not run")

# 2. --gpu: the same bytes on a smaller GPU are OOM
d = load(megatron)
cap80 = next(p["totalGlobalMem"] for p in d["deviceProperties"] if p["id"] == 0)
amax, rmax = add_memory(d, seed=5, scale=50_000_000, base=45_000_000_000)  # about 50 GB: fits the A100
check(cap80 > rmax > 40e9, f"fixture: peak {rmax} must be between 40 GB and the A100's {cap80}")
write(d, os.path.join(tmp, "meg.json"))
store = os.path.join(tmp, "meg.h5")
run("build", os.path.join(tmp, "meg.json"), "-o", store)
spec = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../data/gpu/a100.json")))
spec["name"] = "a100-40gb"
spec["mem_capacity"] = 40e9
write(spec, os.path.join(tmp, "a100-40gb.json"))
p = run("whatif", store, "--gpu", os.path.join(tmp, "a100-40gb.json"), "-o", os.path.join(tmp, "small.h5"))
rec = json.loads(p.stdout)
check(rec["memory"]["oom"] is True and rec["memory"]["oom_gpus"] == 1, f"--gpu 40 GB: record {rec['memory']}")
check(rec["memory"]["worst"]["peak_bytes"] == rmax and rec["memory"]["worst"]["capacity_bytes"] == 40e9,
      f"--gpu 40 GB: record worst {rec['memory']}")
check(step_memory(rec, "gpu").get("capacity_bytes") == 40e9, f"--gpu: step {step_memory(rec, 'gpu')}")
check("warning: OOM" in p.stderr, f"--gpu 40 GB: whatif does not warn: {p.stderr}")
ps = run("sim", "--json", os.path.join(tmp, "small.h5"))
m = ranks_of(ps.stdout)[0]["graph"]["memory"]
check(m["peak_allocated_bytes"] == amax and m["peak_reserved_bytes"] == rmax, f"--gpu: bytes changed: {m}")
check(m["capacity_bytes"] == 40e9 and m["oom"] is True and m["over_capacity"] is True, f"--gpu 40 GB: JSON {m}")
check("warning: OOM" in ps.stderr, f"--gpu 40 GB: sim does not warn: {ps.stderr}")
check("OOM, does not fit" in run("sim", os.path.join(tmp, "small.h5")).stdout, "--gpu 40 GB: the table says no OOM")
res = os.path.join(tmp, "small.res.h5")
run("sim", os.path.join(tmp, "small.h5"), "-o", res)
html = os.path.join(tmp, "small.html")
run("report", res, "--html", html)
check("<b>OOM</b>" in open(html).read(), "--gpu 40 GB: the archive's HTML report does not flag OOM")
if shutil.which("h5dump"):
    # the archive keeps the run's graph, its per-GPU memory columns included
    for col, v in (("mem_capacity", 40_000_000_000), ("mem_peak_reserved", rmax)):
        dump = subprocess.run(["h5dump", "-d", f"/runs/sim/graph/gpus/{col}", res], capture_output=True,
                              text=True).stdout
        check(f"(0): {v}" in dump, f"--gpu 40 GB: the archive's {col} is not {v}: {dump[-300:]}")
p = run("whatif", store, "--gpu", "h200", "-o", os.path.join(tmp, "h200.h5"))
rec = json.loads(p.stdout)
m = ranks_of(run("sim", "--json", os.path.join(tmp, "h200.h5")).stdout)[0]["graph"]["memory"]
check(rec["memory"]["oom"] is False and "OOM" not in p.stderr, f"--gpu h200: {rec['memory']} {p.stderr}")
check(m["capacity_bytes"] == 141e9 and m["oom"] is False and m["peak_reserved_bytes"] == rmax, f"--gpu h200: {m}")

# 3. a structural what-if without --model: no figure, and why
p = run("whatif", store, "--layers", "20", "-o", os.path.join(tmp, "l20.h5"))
rec = json.loads(p.stdout)
check(rec["memory"]["figures"] == "dropped" and "--layers" in rec["memory"].get("why", ""), f"--layers: {rec['memory']}")
check(step_memory(rec, "layers")["figures"] == "dropped", f"--layers: step {step_memory(rec, 'layers')}")
check("memory: not carried: --layers" in p.stderr, f"--layers: whatif does not say so: {p.stderr}")
m = ranks_of(run("sim", "--json", os.path.join(tmp, "l20.h5")).stdout)[0]["graph"]["memory"]
check(m["source"] == "dropped" and m["peak_allocated_bytes"] is None and m["peak_reserved_bytes"] is None,
      f"--layers: a figure is shown: {m}")
check("memory     not carried" in run("sim", os.path.join(tmp, "l20.h5")).stdout, "--layers: the table is silent")
p = run("whatif", store, "--layers", "20", "--model", model, "-o", os.path.join(tmp, "l20m.h5"))
rec = json.loads(p.stdout)
check(rec["memory"]["figures"] == "dropped" and "of the job's 8 GPUs" in rec["memory"].get("why", ""),
      f"--layers --model on one rank of eight: {rec['memory']}")
m = ranks_of(run("sim", "--json", os.path.join(tmp, "l20m.h5")).stdout)[0]["graph"]["memory"]
check(m["source"] == "dropped" and m["peak_allocated_bytes"] is None, f"--layers --model, one rank: {m}")

# 4. DP 1 without DDP -> DDP: the gradient buckets are added
if legacy and os.path.exists(legacy):
    ld = load(legacy)
    cum = lo = hi = 0
    for e in ld["traceEvents"]:
        a = e.get("args", {})
        if e.get("name") == "[memory]" and a.get("Device Type", 0) != 0 and a.get("Device Id") == 0:
            cum += int(a.get("Bytes", 0))
            lo, hi = min(lo, cum), max(hi, cum)
    size = {"float": 4, "c10::Half": 2, "c10::BFloat16": 2, "double": 8}
    steps = [e for e in ld["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"]
    per_step = []
    for s in steps:
        b = 0
        for e in ld["traceEvents"]:
            if e.get("name") == "torch::autograd::AccumulateGrad" and s["ts"] <= e["ts"] < s["ts"] + s["dur"]:
                n = size[e["args"]["Input type"][0]]
                for x in e["args"]["Input Dims"][0]:
                    n *= x
                b += n
        per_step.append(b)
    buckets = max(per_step)
    lstore = os.path.join(tmp, "legacy.h5")
    run("build", legacy, "-o", lstore)
    p = run("whatif", lstore, "--dp", "8", "-o", os.path.join(tmp, "legacy8.h5"))
    rec = json.loads(p.stdout)
    check(step_memory(rec, "grad-buckets").get("added_bytes") == buckets,
          f"legacy: buckets {step_memory(rec, 'grad-buckets')}, want {buckets}")
    for g, r in enumerate(ranks_of(run("sim", "--json", os.path.join(tmp, "legacy8.h5")).stdout)):
        m = r["graph"]["memory"]
        check(m["source"] == "deltas" and m["lower_bound"] is True and m["peak_allocated_bytes"] == hi - lo + buckets,
              f"legacy GPU {g}: {m}, want {hi - lo} + {buckets} bytes")
else:
    print("whatif_trace_memory: the legacy trace is not here; part 4 not run")

# 5. --layers with --model on the whole TP-8 job: re-estimated
if megdir and os.path.exists(os.path.join(megdir, "rank0.json.gz")):
    mdir = os.path.join(tmp, "mg")
    os.mkdir(mdir)
    want = {}
    for r in range(8):
        d = load(os.path.join(megdir, f"rank{r}.json.gz"))
        want[d["distributedInfo"]["rank"]] = add_memory(d, seed=r + 1, scale=20_000_000, base=30_000_000_000)
        write(d, os.path.join(mdir, f"rank{r}.json"))
        shutil.copy(os.path.join(megdir, f"rank{r}.et.json.gz"), mdir)
    mstore = os.path.join(tmp, "mg.h5")
    run("build", mdir, "-o", mstore)
    ident = json.loads(run("whatif", mstore, "--identify").stdout)
    t, lay = ident["layout"]["tp"], ident["layers"]["layers"]
    check(t == 8 and lay == 40 and ident["layers"]["forward_only"] is True, f"megatron: identified as {ident['layout']}")
    sh = json.load(open(model))
    h, f, A = sh["hidden"], sh["ffn"], sh["heads"] * sh["head_dim"]
    delta = 2 * (20 - lay) * ((4 * h * A + 2 * h * f + 3 * A + f) / t + 6 * h)
    p = run("whatif", mstore, "--layers", "20", "--model", model, "-o", os.path.join(tmp, "mg20.h5"))
    rec = json.loads(p.stdout)
    check(rec["memory"]["figures"] == "re-estimated" and step_memory(rec, "layers")["figures"] == "re-estimated",
          f"megatron --layers 20 --model: {rec['memory']}")
    rs = ranks_of(run("sim", "--json", os.path.join(tmp, "mg20.h5")).stdout)
    check(len(rs) == 8, f"megatron: {len(rs)} GPUs")
    for g, r in enumerate(rs):
        m = r["graph"]["memory"]
        a, v = want[g]
        check(m["source"] == "reestimated" and abs(m["peak_allocated_bytes"] - (a + delta)) <= 1 and
              abs(m["peak_reserved_bytes"] - (v + delta)) <= 1,
              f"megatron GPU {g}: {m}, want {a} + {delta} and {v} + {delta}")
    check("re-estimated by the what-if" in run("sim", os.path.join(tmp, "mg20.h5")).stdout,
          "megatron: the table does not say the figure was re-estimated")
else:
    print("whatif_trace_memory: megatron_tp8_a100 is not here; part 5 not run")

shutil.rmtree(tmp, ignore_errors=True)
if fails:
    print("whatif_trace_memory: FAIL\n  " + "\n  ".join(fails))
    sys.exit(1)
print("whatif_trace_memory: --dp carries each source GPU's figures, --gpu checks them against the new GPU (OOM), "
      "--layers drops them and says why or re-estimates them with --model, DDP's buckets added from DP 1")
