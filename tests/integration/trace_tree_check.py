#!/usr/bin/env python3
"""trace_tree_check.py tree [--exact] INPUT PREDICTED
trace_tree_check.py replays FIRST.json SECOND.json OBSERVED.json

tree: checks that a predicted trace (lumosim replay --trace-out, docs/trace-out.md,
"CPU ops") keeps the CPU op tree of the Kineto trace it was predicted from.
Per CPU thread of the input (pid, tid; in the predicted trace recovered from
the "rank R CPU (pid P)" / "thread T" metadata):

  - the same histogram of nesting depths (so the same maximum depth),
  - the same count of ops per (name, category),
  - the same number of ProfilerStep#N events, each one whole user_annotation,
  - every predicted op within its parent (strictly nested; the input may
    poke out of its parent by the profiler's rounding, which the build
    clamps, and so does this nesting rule),
  - record_param_comms: as many as in the input, and every collective arg
    the input has (message sizes, group size, process group name and ranks)
    with the same value, in thread order; a message size wherever the input
    recorded one (as args or as the first input's shape);
and in the whole file, every flow id used by one "s" and one "f", as many
as otherData counts. With --exact (a prediction with --latency observed,
which reproduces the trace), every op also at its traced start and
(clamped) end, to the nanosecond.

Independent of lumosim's code: only the two JSON files are read. Nesting is
the rule the Kineto format implies: an op is inside the innermost open op
that has not ended by its start, ops ordered by start, longer first, and
annotations before ops before runtime calls at a tie.

replays: the round trip, on three `lumosim replay --json` documents: FIRST
of the input (which wrote the predicted trace), SECOND of the predicted
trace, OBSERVED of the predicted trace with --latency observed. The
predicted trace must read back as the same job: the same iterations by name,
each one's actual GPU span and CPU span (its ProfilerStep annotation) in
SECOND equal to FIRST's predicted ones to the nanosecond; the same graph
(node count, CPU_EDGES per class) and the same collectives (kernels, with sizes,
with groups, per kind); OBSERVED reproduces it exactly (every node's start
and end: 0 ns error); and SECOND's predicted window within 0.5 % of FIRST's.
Why 0.5 %: SECOND re-learns the launch-latency model from launches that
FIRST placed at its modelled latencies, so the two predictions differ only
by that re-fit (0 ns on megatron_tp8_a100 rank 0, 0.04 % on ddp4_mi300
rank 0); a lost dependency or a misplaced CPU op moves the window by far
more than the 0.5 % allowed.

Exit 0 when all hold, 1 with one line per failure otherwise.
"""
import collections
import decimal
import gzip
import json
import re
import sys

# The categories lumosim reads as CPU-thread work (src/read/kineto.c).
CPU_CATS = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "runtime", "hip_runtime", "driver",
            "python_function", "python", "operator"}
PRIO = {"user_annotation": 0, "cuda_runtime": 2, "cuda_driver": 2, "runtime": 2, "hip_runtime": 2, "driver": 2}
# Edges of the CPU side and its links to the GPU. Stream, event and hidden
# edges are left out: where the simulation runs a stream's kernels
# concurrently (a CUDA graph), reading the prediction back orders them anew
# (cuda_graph.json: 9 stream edges, 8 read back, as with one slice per node).
CPU_EDGES = ("cpu_thread", "cpu_cross_thread", "launch", "sync")
COMM_KEYS = ("In msg nelems", "Out msg nelems", "Group size", "Process Group Name", "Process Group Ranks")


def load(path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"  # by content, as lumosim reads it
    with (gzip.open if gz else open)(path, "rt", encoding="utf-8") as f:
        # exact: a double cannot hold 1.7e15 us to the nanosecond
        return json.load(f, parse_float=decimal.Decimal)


def ns(x):
    return int(decimal.Decimal(x) * 1000)


def cpu_events(doc, key_of):
    """{thread key: [(ts_ns, end_ns, prio, name, cat, args)]} of CPU X events."""
    th = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        cat = str(e.get("cat", "")).lower()
        if cat not in CPU_CATS:
            continue
        k = key_of(e)
        if k is None:
            continue
        ts = ns(e["ts"])
        th[k].append((ts, ts + ns(e.get("dur", 0)), PRIO.get(cat, 1), e.get("name", ""), cat, e.get("args") or {}))
    for k in th:
        th[k].sort(key=lambda x: (x[0], -x[1], x[2]))
    return th


def first_shape(dims):
    """Whether the first input tensor has a recorded shape (older
    record_param_comms give their message size only there: [[4, 2048]] or,
    for a tensor list, [[[4, 2048]]])."""
    first = dims[0] if isinstance(dims, list) and dims else None
    if isinstance(first, list) and first and isinstance(first[0], list):
        first = first[0]
    return isinstance(first, list) and len(first) > 0


def tree_stats(evs):
    """Depth histogram, poke-outs (children ending after their parent), and
    the spans with each end clamped into its parent."""
    depth = collections.Counter()
    stack, poke, spans = [], 0, []
    for ts, end, _, name, _, _ in evs:
        while stack and stack[-1] <= ts:
            stack.pop()
        if stack and end > stack[-1]:
            poke += 1
            end = stack[-1]  # clamped, as the build does
        stack.append(end)
        depth[len(stack)] += 1
        spans.append((ts, end, name))
    return depth, poke, spans


def replays(first, second, observed):
    """The round-trip checks (module doc); a list of failures."""
    fails = []
    ra, rb = first["ranks"], second["ranks"]
    if len(ra) != len(rb):
        return ["%d ranks first, %d replayed from the predicted trace" % (len(ra), len(rb))]
    for i, (a, b) in enumerate(zip(ra, rb)):
        ia, ib = a["iterations"], b["iterations"]
        if [x["name"] for x in ia] != [x["name"] for x in ib]:
            fails.append("rank %d: iterations %s first, %s from the predicted trace" %
                         (i, [x["name"] for x in ia], [x["name"] for x in ib]))
        for x, y in zip(ia, ib):
            if x["predicted_ns"] != y["actual_ns"] or x["cpu_predicted_ns"] != y["cpu_actual_ns"]:
                fails.append("rank %d %s: predicted %d ns (CPU %d) first, read back as %d ns (CPU %d)" %
                             (i, x["name"], x["predicted_ns"], x["cpu_predicted_ns"], y["actual_ns"], y["cpu_actual_ns"]))
        for key in ("nodes", "collectives"):
            if a["graph"][key] != b["graph"][key]:
                fails.append("rank %d: graph %s %s first, %s from the predicted trace" %
                             (i, key, a["graph"][key], b["graph"][key]))
        for cls in CPU_EDGES:
            if a["graph"]["edges"][cls] != b["graph"]["edges"][cls]:
                fails.append("rank %d: %d %s edges first, %d from the predicted trace" %
                             (i, a["graph"]["edges"][cls], cls, b["graph"]["edges"][cls]))
        if a["collectives"] != b["collectives"]:
            fails.append("rank %d: collectives %s first, %s from the predicted trace" %
                         (i, a["collectives"], b["collectives"]))
        if b["window"]["actual_ns"] != a["window"]["predicted_ns"]:
            fails.append("rank %d: window predicted %d ns, read back as %d ns" %
                         (i, a["window"]["predicted_ns"], b["window"]["actual_ns"]))
        p1, p2 = a["window"]["predicted_ns"], b["window"]["predicted_ns"]
        if abs(p2 - p1) > 0.005 * p1:
            fails.append("rank %d: predicted window %d ns, %d ns replayed from the predicted trace (over 0.5 %%)" %
                         (i, p1, p2))
    for i, c in enumerate(observed["ranks"]):
        ne = c["node_error"]
        if ne["max_abs_start_ns"] != 0 or ne["max_abs_end_ns"] != 0:
            fails.append("rank %d: --latency observed does not reproduce the predicted trace: %s" % (i, ne))
    return fails


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "replays":
        docs = []
        for p in sys.argv[2:]:
            with open(p, encoding="utf-8") as f:
                docs.append(json.load(f))
        fails = replays(*docs)
        for f in fails[:20]:
            print("FAIL: " + f)
        if not fails:
            w = [(r["window"]["predicted_ns"]) for r in docs[1]["ranks"]]
            print("ok: the predicted trace reads back as the same job (predicted again: %s ns)" % w)
        return 1 if fails else 0
    exact = len(sys.argv) == 5 and sys.argv[1] == "tree" and sys.argv[2] == "--exact"
    if exact:
        del sys.argv[2]
    if len(sys.argv) != 4 or sys.argv[1] != "tree":
        print("usage: " + __doc__.strip().splitlines()[0] + "\n       " + __doc__.strip().splitlines()[1])
        return 2
    src, pred = load(sys.argv[2]), load(sys.argv[3])

    # predicted trace: output (pid, tid) -> original (pid, tid) from its metadata
    procs, threads = {}, {}
    for e in pred["traceEvents"]:
        if e.get("ph") != "M":
            continue
        name = (e.get("args") or {}).get("name", "")
        if e.get("name") == "process_name":
            m = re.fullmatch(r"rank -?\d+ CPU \(pid (-?\d+)\)", name)
            if m:
                procs[e["pid"]] = int(m.group(1))
        elif e.get("name") == "thread_name":
            m = re.fullmatch(r"thread (-?\d+)", name)
            if m:
                threads[(e["pid"], e["tid"])] = int(m.group(1))

    def pred_key(e):
        p = procs.get(e.get("pid"))
        t = threads.get((e.get("pid"), e.get("tid")))
        return None if p is None or t is None else (p, t)

    def src_key(e):
        return (int(e["pid"]), int(e["tid"])) if isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int) else (
            str(e.get("pid")), str(e.get("tid")))

    a, b = cpu_events(src, src_key), cpu_events(pred, pred_key)
    fails = []
    if set(a) != set(b):
        fails.append("threads differ: input %s, predicted %s" % (sorted(map(str, a)), sorted(map(str, b))))
    nops = 0
    for k in sorted(set(a) & set(b), key=str):
        ea, eb = a[k], b[k]
        nops += len(ea)
        da, _, spa = tree_stats(ea)
        db, pb, spb = tree_stats(eb)
        if exact:
            diff = [(x, y) for x, y in zip(spa, spb) if x != y]
            if diff:
                fails.append("thread %s: %d ops not at their traced times (first: %s in the input, %s predicted)" %
                             (k, len(diff), diff[0][0], diff[0][1]))
        if da != db:
            fails.append("thread %s: depth histogram %s in the input, %s predicted" % (k, dict(da), dict(db)))
        if pb:
            fails.append("thread %s: %d predicted ops end after their parent" % (k, pb))
        ca = collections.Counter((x[3], x[4]) for x in ea)
        cb = collections.Counter((x[3], x[4]) for x in eb)
        if ca != cb:
            diff = [(n, ca[n], cb[n]) for n in sorted(set(ca) | set(cb)) if ca[n] != cb[n]][:5]
            fails.append("thread %s: op counts differ (name, input, predicted): %s" % (k, diff))
        sa = [x for x in ea if x[3].startswith("ProfilerStep#")]
        sb = [x for x in eb if x[3].startswith("ProfilerStep#")]
        if [x[3] for x in sa] != [x[3] for x in sb] or any(x[4] != "user_annotation" for x in sb):
            fails.append("thread %s: ProfilerStep events %s in the input, %s predicted" %
                         (k, dict(collections.Counter((x[3], x[4]) for x in sa)),
                          dict(collections.Counter((x[3], x[4]) for x in sb))))
        ra = [x[5] for x in ea if x[3] == "record_param_comms"]
        rb = [x[5] for x in eb if x[3] == "record_param_comms"]
        if len(ra) != len(rb):
            fails.append("thread %s: %d record_param_comms in the input, %d predicted" % (k, len(ra), len(rb)))
        for i, (x, y) in enumerate(zip(ra, rb)):
            for key in COMM_KEYS:
                if key in x and str(x[key]) != str(y.get(key)):
                    fails.append("thread %s: record_param_comms %d: %s %r in the input, %r predicted" %
                                 (k, i, key, x[key], y.get(key)))
                    break
            sized = "In msg nelems" in x or first_shape(x.get("Input Dims"))
            if sized and "In msg nelems" not in y:
                fails.append("thread %s: record_param_comms %d: no message size predicted" % (k, i))
    # flow arrows still pair up: each id one "s" and one "f" (docs/trace-out.md)
    flows = collections.defaultdict(list)
    for e in pred["traceEvents"]:
        if e.get("ph") in ("s", "f"):
            flows[e.get("id")].append(e["ph"])
    bad = [i for i, v in flows.items() if sorted(v) != ["f", "s"]]
    if bad:
        fails.append("%d flow ids without exactly one s and one f (e.g. %s)" % (len(bad), bad[:3]))
    drawn = sum(r.get("flows", 0) for r in pred.get("otherData", {}).get("ranks", []))
    if len(flows) != drawn:
        fails.append("%d flow ids in the file, otherData counts %d" % (len(flows), drawn))
    steps = sum(1 for k in a for x in a[k] if x[3].startswith("ProfilerStep#"))
    for f in fails[:20]:
        print("FAIL: " + f)
    if fails:
        return 1
    print("ok: %d threads, %d CPU ops, %d ProfilerSteps, same tree%s" %
          (len(a), nops, steps, ", every op at its traced time" if exact else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
