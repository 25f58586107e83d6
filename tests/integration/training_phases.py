#!/usr/bin/env python3
"""training_phases.py TRACE IDENTIFY_JSON RANK

An independent reading of a Kineto trace's training step (python3, gzip and
json only), checked against the "training" object lumosim whatif --identify
printed for rank RANK (docs/whatif.md, "The training step").

From the trace JSON alone: every CPU thread's complete events (cpu_op,
user_annotation, cuda_runtime) are nested by time (a child that pokes out of
its parent is cut at the parent's end); each GPU event (kernel, gpu_memcpy,
gpu_memset) is joined to the runtime call with its correlation id, and its
phase is read from the events enclosing that call:
  1. the innermost Optimizer.step# / Optimizer.zero_grad# /
     enumerate(DataLoader)# annotation: optimizer / zero_grad / dataloader;
  2. else a backward op around it (Fwd thread id > 0, or autograd's
     evaluate_function wrapper), or a thread that runs backward ops and no
     forward-side op (a Sequence number with Fwd thread id 0): backward;
  3. else a forward-side op or a "*.forward" annotation around it: forward;
  4. else other; no launch in the file: unknown.
Counts per phase must agree exactly; times (ns, from the decimal text, half
away from zero) too. Exit 0, or 1 naming what differs."""
import decimal
import gzip
import json
import sys
from collections import defaultdict

PHASES = ["unknown", "forward", "backward", "optimizer", "zero_grad", "dataloader", "other"]
EVAL = "autograd::engine::evaluate_function"


def ns(x):
    d = decimal.Decimal(x) * 1000
    return int(d.to_integral_value(rounding=decimal.ROUND_HALF_UP))


def load(path):
    with open(path, "rb") as f:
        head = f.read(2)
    op = gzip.open if head == b"\x1f\x8b" else open
    with op(path, "rt") as f:
        return json.load(f, parse_float=decimal.Decimal)


def main():
    trace, ident, rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
    doc = load(trace)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    prio = {"user_annotation": 0, "cpu_op": 1, "cuda_runtime": 2}
    threads = defaultdict(list)
    for i, e in enumerate(events):
        if e.get("cat") in prio:
            threads[(e["pid"], e["tid"])].append(i)

    def args(e):
        return e.get("args") or {}

    def seq_of(e):
        s = args(e).get("Sequence number")
        return int(s) if e.get("cat") == "cpu_op" and s is not None and s >= 0 else None

    def is_bwd_op(e):
        s = seq_of(e)
        f = args(e).get("Fwd thread id")
        return (e.get("cat") == "cpu_op" and e["name"].startswith(EVAL)) or (
            s is not None and f is not None and f > 0)

    launch_phase = {}  # correlation -> (phase, seq)
    for key, idx in threads.items():
        bwd_thread = any(is_bwd_op(events[i]) for i in idx)
        fwd_thread = any(seq_of(events[i]) is not None and not (
            (args(events[i]).get("Fwd thread id") or 0) > 0) for i in idx)
        autograd_thread = bwd_thread and not fwd_thread
        items = []
        for i in idx:
            e = events[i]
            ts = ns(e["ts"])
            items.append([ts, ts + ns(e.get("dur", 0)), prio[e["cat"]], i])
        items.sort(key=lambda x: (x[0], -x[1], x[2], x[3]))
        stack = []
        for it in items:
            while stack and stack[-1][1] <= it[0]:
                stack.pop()
            if stack and it[1] > stack[-1][1]:
                it[1] = stack[-1][1]
            e = events[it[3]]
            if e["cat"] == "cuda_runtime" and "correlation" in args(e):
                ann, bwd, fwd, bseq, fseq = None, autograd_thread, False, None, None
                for enc in reversed(stack):
                    x = events[enc[3]]
                    if x["cat"] == "cuda_runtime":
                        continue
                    n = x["name"]
                    if ann is None:
                        if n.startswith("Optimizer.step#"):
                            ann = "optimizer"
                        elif n.startswith("Optimizer.zero_grad#"):
                            ann = "zero_grad"
                        elif n.startswith("enumerate(DataLoader)#"):
                            ann = "dataloader"
                    if len(n) > 8 and n.endswith(".forward"):
                        fwd = True
                    s = seq_of(x)
                    if is_bwd_op(x):
                        bwd = True
                        if bseq is None:
                            bseq = s
                    elif s is not None:
                        fwd = True
                        if fseq is None:
                            fseq = s
                if ann:
                    ph = (ann, None)
                elif bwd:
                    ph = ("backward", bseq)
                elif fwd:
                    ph = ("forward", fseq)
                else:
                    ph = ("other", None)
                launch_phase[int(args(e)["correlation"])] = ph
            stack.append(it)

    want = {p: {"kernels": 0, "kernel_ns": 0, "memops": 0, "memop_ns": 0} for p in PHASES}
    bwd_no_fwd = bwd_kernels = 0
    fseqs, bseqs = set(), set()
    for e in events:
        cat = e.get("cat")
        if cat not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        c = args(e).get("correlation")
        ph, seq = launch_phase.get(int(c), ("unknown", None)) if c is not None else ("unknown", None)
        k = "kernels" if cat == "kernel" else "memops"
        want[ph][k] += 1
        want[ph][k.rstrip("s") + "_ns"] += ns(e.get("dur", 0))
        if ph == "backward" and cat == "kernel":
            bwd_kernels += 1
            bwd_no_fwd += seq is None
        if seq is not None:
            (fseqs if ph == "forward" else bseqs).add(seq & 0x7FFFFFFF)

    with open(ident) as f:
        got = json.load(f)
    tr = [r for r in got["ranks"] if r["rank"] == rank][0]["training"]
    bad = []
    for p in PHASES:
        for k in ("kernels", "kernel_ns", "memops", "memop_ns"):
            if tr["phases"][p][k] != want[p][k]:
                bad.append("%s.%s: lumosim %s, python %s" % (p, k, tr["phases"][p][k], want[p][k]))
    unrec = {u["what"]: (u["count"], u["of"]) for u in tr["unrecovered"]}
    checks = [("backward kernels without a forward op", (bwd_no_fwd, bwd_kernels)),
              ("forward ops never differentiated", (len(fseqs - bseqs), len(fseqs)))]
    for what, w in checks:
        if unrec.get(what) != w:
            bad.append("%s: lumosim %s, python %s" % (what, unrec.get(what), w))
    if bad:
        print("training_phases.py: %s rank %d disagrees:\n  %s" % (trace, rank, "\n  ".join(bad)))
        return 1
    tot = sum(want[p]["kernels"] + want[p]["memops"] for p in PHASES)
    print("training_phases.py: %s rank %d: %d GPU ops, per-phase counts and times agree (%s)" % (
        trace, rank, tot, ", ".join("%s %d" % (p, want[p]["kernels"]) for p in PHASES if want[p]["kernels"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
