#!/usr/bin/env python3
"""annotate_layers.py IN.json.gz OUT.json.gz -- a Megatron forward trace with
record_function("layer[i]") annotations added, as a capture that wraps each
transformer layer would have them.

Why: lumosim finds a trace's layers from such annotations when present and
from the repeating kernel structure otherwise; annotating the bundled trace
(megatron_tp8_rank0, which has no annotations) gives one trace on which both
methods can be compared.

The layers are found here independently of lumosim, from the trace JSON:
each layer holds two LayerNorm kernels (ln1, ln2), the model one more (the
final norm). Layer l runs from the top-level CPU event (a child of the
ProfilerStep annotation on the launching thread) that launches its first
LayerNorm up to the last top-level event before the one that launches the
next layer's first LayerNorm (the final norm's for the last layer). Each
annotation starts up to 2 us before its first event and ends up to 2 us
after its last, inside the gaps around them (record_function's own enter
and exit cost). The annotations are "user_annotation" complete events on
the launching thread, as torch.profiler.record_function writes them."""
import gzip
import json
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    d = json.load(gzip.open(src))
    ev = d["traceEvents"]
    x = [e for e in ev if e.get("ph") == "X"]
    kern = sorted((e for e in x if e.get("cat") == "kernel" and "nccl" not in e["name"].lower()), key=lambda e: e["ts"])
    ln = [e for e in kern if "LayerNorm" in e["name"]]
    if len(ln) < 3 or len(ln) % 2 != 1:
        sys.exit("annotate_layers: %d LayerNorm kernels: not a forward pass of whole layers" % len(ln))
    nl = (len(ln) - 1) // 2
    launch = {e["args"]["correlation"]: e for e in x if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    first = launch[ln[0]["args"]["correlation"]]
    pid, tid = first["pid"], first["tid"]
    thread = [e for e in x if e.get("pid") == pid and e.get("tid") == tid]
    step = max((e for e in thread if e["name"].startswith("ProfilerStep")), key=lambda e: e["dur"])
    s0, s1 = step["ts"], step["ts"] + step["dur"]
    # the step's top-level events: inside the step, not inside another one
    inner = sorted((e for e in thread if e is not step and s0 <= e["ts"] and e["ts"] + e["dur"] <= s1),
                   key=lambda e: (e["ts"], -e["dur"]))
    top, end = [], None
    for e in inner:
        if end is None or e["ts"] >= end:
            top.append(e)
            end = e["ts"] + e["dur"]

    def top_of(t):
        for i, e in enumerate(top):
            if e["ts"] <= t < e["ts"] + e["dur"] or (e["dur"] == 0 and e["ts"] == t):
                return i
        sys.exit("annotate_layers: a launch at %s is in no top-level event" % t)

    starts = [top_of(launch[ln[2 * l]["args"]["correlation"]]["ts"]) for l in range(nl + 1)]
    out = []
    for l in range(nl):
        a, b = top[starts[l]], top[starts[l + 1] - 1]
        before = top[starts[l] - 1]["ts"] + top[starts[l] - 1]["dur"] if starts[l] > 0 else s0
        after = top[starts[l + 1]]["ts"]
        lo = a["ts"] - min(2.0, (a["ts"] - before) / 2)
        hi = b["ts"] + b["dur"] + min(2.0, (after - b["ts"] - b["dur"]) / 2)
        out.append({"ph": "X", "cat": "user_annotation", "name": "layer[%d]" % l, "pid": pid, "tid": tid,
                    "ts": lo, "dur": hi - lo, "args": {"External id": 900000 + l}})
    d["traceEvents"] = ev + out
    with gzip.open(dst, "wt") as f:
        json.dump(d, f)
    print("%d layers annotated" % nl)


main()
