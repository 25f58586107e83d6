#!/bin/sh
# late_coupling.sh FIXTURE_DIR   (environment: LUMOSIM)
#
# One rank enters a collective 5 ms late; the others must wait 5 ms for it
# -- for all-to-all, all-gather and reduce-scatter recorded the old way
# (tests/data/late, tests/data/tools/make_late.py: record_param_comms
# without "Collective name", the kind only in the nccl:* profiling title,
# bare ncclKernel_SendRecv kernels without args, no process-group
# metadata), and for DeepEP's dispatch and combine on 2 ranks
# (tests/data/deepep, make_deepep.py: kernel names only, the kind from the
# table of communication kernels, src/read/kineto.c COMM_KERNELS).
# Before the title gave the kind, the SendRecv kernels were point-to-point
# kernels of unknown peers: "sendrecv 0 coupled, 2 traced", 0 waiting.
# Expected values come from the fixture's own kernels:
#  - per rank and kind, coupled = the rank's kernels of that kind (SendRecv
#    counted as all-to-all), traced 0, no sendrecv kind at all;
#  - per rank and kind, the predicted waiting = the sum over its instances
#    of (traced start of the last arrival - own traced start), within 2 us
#    an instance (the replay models launch latency), and waiting + transfer
#    = time;
#  - in the predicted trace (--trace-out) every instance ends at one
#    nanosecond on all four ranks.
set -u
: "${LUMOSIM:?}"
F=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "late_coupling: FAIL: $*"; exit 1; }
"$LUMOSIM" replay --json --trace-out "$tmp/pred.json" "$F" >"$tmp/rep.json" || fail "replay of $F"
python3 - "$F" "$tmp" <<'PY'
import json, os, sys
from collections import defaultdict
F, t = sys.argv[1], sys.argv[2]
KIND = [("SendRecv", "alltoall"), ("AllGather", "allgather"), ("ReduceScatter", "reducescatter"),
        ("deep_ep::", "alltoall")]
files = sorted(f for f in os.listdir(F) if f.endswith(".json"))
fix = []  # per rank: [(kind, traced start ns)] in time order
for f in files:
    ev = json.load(open(os.path.join(F, f)))["traceEvents"]
    ks = sorted((e for e in ev if e["cat"] == "kernel" and any(t in e["name"] for t, _ in KIND)), key=lambda e: e["ts"])
    fix.append([(next(k for tok, k in KIND if tok in e["name"]), int(e["ts"] * 1000)) for e in ks])
n, m = len(fix), len(fix[0])
bad = []
want_wait = [defaultdict(int) for _ in range(n)]
late_us = set()
if not m:
    sys.exit("late_coupling: FAIL: no communication kernel in %s" % F)
for i in range(m):
    starts = [fix[r][i][1] for r in range(n)]
    for r in range(n):
        want_wait[r][fix[r][i][0]] += max(starts) - starts[r]
    late_us.add((max(starts) - sorted(starts)[-2]) // 1000)
if late_us != {5000}:
    bad.append("the fixture's late rank is not 5 ms late: %s us" % late_us)
rep = json.load(open(os.path.join(t, "rep.json")))
for r, rr in enumerate(rep["ranks"]):
    c = rr["collectives"]
    cnt = defaultdict(int)
    for k, _ in fix[r]:
        cnt[k] += 1
    if set(c) != set(cnt):
        bad.append("rank %d: kinds %s, the trace has %s" % (r, sorted(c), sorted(cnt)))
        continue
    for k in cnt:
        p = c[k]["predicted"]
        if c[k]["coupled"] != cnt[k] or c[k]["traced"] != 0:
            bad.append("rank %d %s: coupled %d traced %d, want %d, 0" % (r, k, c[k]["coupled"], c[k]["traced"], cnt[k]))
        if abs(p["wait_ns"] - want_wait[r][k]) > 2000 * cnt[k]:
            bad.append("rank %d %s: predicted waiting %d ns, the trace's late arrivals give %d" % (r, k, p["wait_ns"], want_wait[r][k]))
        if p["wait_ns"] + p["transfer_ns"] != p["time_ns"]:
            bad.append("rank %d %s: waiting + transfer != time" % (r, k))
pev = json.load(open(os.path.join(t, "pred.json")))
pev = pev["traceEvents"] if isinstance(pev, dict) else pev
ends = defaultdict(set)
for e in pev:
    a = e.get("args", {})
    if e.get("cat") == "kernel" and "collective" in a and "seq" in a:
        ends[(a["collective"], a["seq"])].add(round((e["ts"] + e["dur"]) * 1000))
if len(ends) != m or any(len(v) != 1 for v in ends.values()):
    bad.append("predicted trace: instances and their ends %s" % dict(ends))
if bad:
    sys.exit("late_coupling: FAIL: " + "; ".join(bad))
print("late_coupling: %d instances on %d ranks, the others wait 5 ms for the late rank" % (m, n))
PY
