#!/usr/bin/env python3
"""Make a CUDA-graph trace from a real trace (issue 16, KINETO-NOTES trap 3).

No shared trace has a graph launch. This takes a real one (by default the
vendored megatron_tp8_a100 rank 0, examples/megatron_tp8_rank0.json.gz) and
does to it what CUDA-graph capture (torch.compile mode="reduce-overhead",
torch.cuda.graphs) does to a run of launches: on each launching thread,
runs of consecutive launch calls become one graph launch.

- A run starts at a launch call (runtime or driver call whose correlation
  reaches GPU work; not a copy) and takes the calls after it while they
  launch kernels or memsets or are non-blocking bookkeeping
  (cudaEventRecord, cudaStreamWaitEvent, queries, attributes), up to
  --max-ops GPU ops; a blocking call or a copy ends it, and so does a
  ProfilerStep boundary. Record/wait calls before the run's first launch or
  after its last stay outside: the graph launch waits for them.
- The run's launch calls and the record/wait calls inside it are removed
  (captured: their order becomes the graph's internal edges, which the
  trace does not show). One cudaGraphLaunch (hipGraphLaunch for HIP
  traces) replaces them, at the first launch call's start, its duration
  what real graph launches show (--launch-us, 20 us by default, cut short
  where the thread's next event begins), its correlation id new and carried
  by every GPU op of the run.
- GPU times are kept as traced. The GPU idle before a graph (the CPU was
  late, or the graph waited for an event recorded on another stream) and
  between its ops is real idle from the real trace.
- CPU ops stay: they are the CPU timeline leading to each call.

usage: make_cuda_graph.py [--max-ops N] [--launch-us US] IN.json[.gz] OUT.json[.gz]
Prints one line of counts (graphs, ops, graphs on two streams, graphs with
ops overlapping across streams, graphs whose call follows an event wait,
idle before / inside graphs; "before" here: from the call's start or the
end of earlier work on the stream, whichever is later).
"""
import argparse
import gzip
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--max-ops", type=int, default=12)
ap.add_argument("--launch-us", type=float, default=20.0)
ap.add_argument("src")
ap.add_argument("out")
a = ap.parse_args()

opener = gzip.open if open(a.src, "rb").read(2) == b"\x1f\x8b" else open
doc = json.load(opener(a.src, "rt"))
ev = doc["traceEvents"]
GPU = {"kernel", "gpu_memcpy", "gpu_memset"}
CALL = {"cuda_runtime", "cuda_driver"}


def X(e, cats):
    return e.get("ph") == "X" and e.get("cat") in cats


gpu_of = {}
for e in ev:
    if X(e, GPU) and "correlation" in e.get("args", {}):
        gpu_of.setdefault(e["args"]["correlation"], []).append(e)
calls = {}
for e in ev:
    if X(e, CALL):
        calls.setdefault((e["pid"], e["tid"]), []).append(e)
steps = sorted(e["ts"] for e in ev if X(e, {"user_annotation", "cpu_op"}) and e["name"].startswith("ProfilerStep#"))


def corr(e):
    return e.get("args", {}).get("correlation")


def is_launch(e):
    ops = gpu_of.get(corr(e), [])
    return bool(ops) and all(o["cat"] in ("kernel", "gpu_memset") for o in ops)


def blocking(e):
    n = e["name"]
    return "Synchronize" in n or "Memcpy" in n or (gpu_of.get(corr(e)) and not is_launch(e))


def step_of(ts):
    return sum(1 for s in steps if s <= ts)


removed = set()  # id() of removed events
graphs = []  # (graph launch event, [gpu ops])
next_corr = max([c for c in (corr(e) for e in ev) if isinstance(c, int)] + [0]) + 1
for key, cs in calls.items():
    cs.sort(key=lambda e: e["ts"])
    i = 0
    while i < len(cs):
        if not is_launch(cs[i]):
            i += 1
            continue
        run, nops, j = [cs[i]], len(gpu_of[corr(cs[i])]), i + 1
        while j < len(cs) and not blocking(cs[j]) and step_of(cs[j]["ts"]) == step_of(cs[i]["ts"]):
            if is_launch(cs[j]):
                if nops + len(gpu_of[corr(cs[j])]) > a.max_ops:
                    break
                nops += len(gpu_of[corr(cs[j])])
            run.append(cs[j])
            j += 1
        while not is_launch(run[-1]):  # trailing record/wait calls stay outside
            run.pop()
        i += len(run)
        if nops < 2:
            continue
        ops = [o for c in run if is_launch(c) for o in gpu_of[corr(c)]]
        for c in run:
            if is_launch(c) or "EventRecord" in c["name"] or "StreamWaitEvent" in c["name"]:
                removed.add(id(c))
        first = run[0]
        hip = first["name"].startswith("hip")
        g = {"ph": "X", "cat": "cuda_runtime", "name": "hipGraphLaunch" if hip else "cudaGraphLaunch",
             "pid": first["pid"], "tid": first["tid"], "ts": first["ts"], "dur": first["dur"],
             "args": {"External id": first.get("args", {}).get("External id", 0), "cbid": 311,
                      "correlation": next_corr}}
        for o in ops:
            o["args"]["correlation"] = next_corr
            o["args"]["External id"] = g["args"]["External id"]
        graphs.append((g, ops))
        next_corr += 1

removed_corr = {corr(e) for e in ev if id(e) in removed}
keep = [e for e in ev if id(e) not in removed and
        not (e.get("ph") in ("s", "f") and e.get("id") in removed_corr)]
# the graph launch's duration: --launch-us, cut short where the thread's
# next remaining event begins (so it nests like the call it replaces)
by_thread = {}
for e in keep:
    if X(e, CALL | {"cpu_op", "user_annotation", "python_function"}):
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
for k in by_thread:
    by_thread[k].sort(key=lambda e: e["ts"])
for g, _ in graphs:
    lst = by_thread.get((g["pid"], g["tid"]), [])
    room = min([e["ts"] - g["ts"] for e in lst if e["ts"] > g["ts"]] +
               [e["ts"] + e["dur"] - g["ts"] for e in lst if e["ts"] <= g["ts"] < e["ts"] + e["dur"]] + [a.launch_us])
    g["dur"] = max(g["dur"], round(room - 0.5 if room < a.launch_us else room, 3))
    keep.append(g)
keep.sort(key=lambda e: (e.get("ts", 0), -e.get("dur", 0)))
doc["traceEvents"] = keep

# counts: idle before each graph (its first op's start less the end of the
# last earlier op on that stream) and inside (the union of the graph's ops
# against its span), two-stream graphs, graphs with cross-stream overlap
stream_ops = {}
for e in keep:
    if X(e, GPU):
        stream_ops.setdefault((e["pid"], e["tid"]), []).append(e)
for k in stream_ops:
    stream_ops[k].sort(key=lambda e: e["ts"])
before = inside = 0.0
two = overlap = 0
for g, ops in graphs:
    ops = sorted(ops, key=lambda o: o["ts"])
    f = ops[0]
    prior = [o["ts"] + o["dur"] for o in stream_ops[(f["pid"], f["tid"])] if o["ts"] < f["ts"]]
    before += max(0.0, f["ts"] - max(prior + [g["ts"]]))
    end = f["ts"]
    for o in ops:
        inside += max(0.0, o["ts"] - end)
        end = max(end, o["ts"] + o["dur"])
    if len({o["tid"] for o in ops}) > 1:
        two += 1
        if any(p["tid"] != q["tid"] and q["ts"] < p["ts"] + p["dur"] and p["ts"] < q["ts"] + q["dur"]
               for p in ops for q in ops):
            overlap += 1
# graphs whose call follows a cudaStreamWaitEvent (since the thread's
# previous launch): they wait for an event recorded before the call
waits = 0
for g, _ in graphs:
    for e in reversed([e for e in by_thread.get((g["pid"], g["tid"]), []) if e["ts"] < g["ts"] and X(e, CALL)]):
        if "StreamWaitEvent" in e["name"]:
            waits += 1
            break
        if is_launch(e) or "GraphLaunch" in e["name"]:
            break
with (gzip.open if a.out.endswith(".gz") else open)(a.out, "wt") as f:
    json.dump(doc, f, separators=(",", ":"))
print("%d graph launches covering %d GPU ops; %d on two streams (%d with cross-stream overlap); "
      "%d after an event wait; idle before graphs %.1f us, inside graphs %.1f us" % (
          len(graphs), sum(len(o) for _, o in graphs), two, overlap, waits, before, inside))
