#!/bin/sh
# coupling_kinds.sh FIXTURE_DIR FIXTURE_OLD_DIR FIXTURE_ET_DIR   (environment: LUMOSIM)
#
# Every collective kind coupled across its group, on the ddp4_mi300 job with
# a few all-reduces rewritten by tests/data/tools/make_alltoall.py into
# all_to_all, all_to_allv (uneven splits), _allgather_base and
# _reduce_scatter_base as PyTorch + NCCL record them (FIXTURE_DIR: the
# metadata on the kernels too, as newer PyTorch writes it; FIXTURE_OLD_DIR:
# on the record_param_comms ops only, so the all-to-all's kernels are bare
# ncclDevKernel_SendRecv kernels; FIXTURE_ET_DIR: megatron_tp8_a100 with
# three TP all-reduces made all_to_all in the execution traces, the Kineto
# kernels bare SendRecv kernels, as PyTorch 2.1 wrote them). Asserted
# against the fixture's own
# kernels and the predicted trace (--trace-out), not against lumosim's
# report alone:
#  - per rank and kind, the coupled count is the number of kernels of that
#    kind in the rank's trace (SendRecv kernels counted as all-to-all), none
#    traced, and both ddp4 fixtures give the same counts;
#  - in the predicted trace every collective instance (group, seq) has one
#    kernel on each of its group's ranks and they all end at the same
#    nanosecond (the coupling invariant: max(arrivals) + transfer), except
#    a broadcast's root (the c10d::broadcast_ op's root_rank in the
#    fixture: rank 0), which ends at its own start + the same transfer
#    (job.h, rooted collectives);
#  - per rank and kind, the report's predicted time is the sum of the
#    predicted trace's kernel durations, its waiting the sum of
#    (last arrival of the instance - own start; 0 for a broadcast's root),
#    and waiting + transfer = time; actual times likewise from the trace's
#    kernel durations;
#  - a SendRecv kernel outside any all_to_all (its record_param_comms and
#    its nccl:all_to_all title removed: the peer is unknown) keeps its traced duration and the
#    report says so (sendrecv traced 1, the other two all-to-alls coupled);
#  - the HTML page's collectives table has the waiting and transfer columns.
# Exits 77 without the fixtures (they need the shared traces).
set -u
: "${LUMOSIM:?}"
F=$1
O=$2
E=$3
[ -e "$F/rank0.json.gz" ] && [ -e "$O/rank0.json.gz" ] && [ -e "$E/rank0.et.json.gz" ] ||
    { echo "coupling_kinds: fixtures missing: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "coupling_kinds: FAIL: $*"; exit 1; }
"$LUMOSIM" replay --json --trace-out "$tmp/new.trace.json" "$F" >"$tmp/new.json" || fail "replay of $F"
"$LUMOSIM" replay --json --trace-out "$tmp/old.trace.json" "$O" >"$tmp/old.json" || fail "replay of $O"
"$LUMOSIM" replay --json --trace-out "$tmp/et.trace.json" "$E" >"$tmp/et.json" || fail "replay of $E"
"$LUMOSIM" report "$F" --html "$tmp/page.html" || fail "report --html"
grep -q "<th>waiting ms</th><th>transfer ms</th>" "$tmp/page.html" || fail "the HTML collectives table has no waiting/transfer columns"
# the unknown-peer case: the old fixture with the all_to_allv's record_param_comms removed
mkdir "$tmp/peer"
python3 - "$O" "$tmp/peer" <<'PY' || fail "making the unknown-peer job"
import gzip, json, os, sys
src, dst = sys.argv[1], sys.argv[2]
for f in sorted(os.listdir(src)):
    doc = json.load(gzip.open(os.path.join(src, f)))
    ev = doc["traceEvents"]
    drop = [e for e in ev if e.get("name") == "record_param_comms" and e.get("args", {}).get("Collective name") == "all_to_allv"]
    assert len(drop) == 1, f
    r = drop[0]
    # and the nccl:all_to_all title inside it, which alone says all-to-all
    drop += [e for e in ev if e.get("cat") == "user_annotation" and e.get("name") == "nccl:all_to_all" and
             e.get("tid") == r.get("tid") and r["ts"] <= e["ts"] <= r["ts"] + r["dur"]]
    assert len(drop) == 2, f
    doc["traceEvents"] = [e for e in ev if all(e is not d for d in drop)]
    with gzip.open(os.path.join(dst, f), "wt") as o:
        json.dump(doc, o)
PY
"$LUMOSIM" replay --json "$tmp/peer" >"$tmp/peer.json" || fail "replay of the unknown-peer job"
python3 - "$F" "$E" "$tmp" <<'PY' || exit 1
import gzip, json, os, sys
from collections import defaultdict
from decimal import Decimal
d, de, t = sys.argv[1], sys.argv[2], sys.argv[3]
bad = []
KIND = [("SendRecv", "alltoall"), ("AllGather", "allgather"), ("ReduceScatter", "reducescatter"),
        ("AllReduce", "allreduce"), ("Broadcast", "broadcast")]

def kind_of(e):
    n, a = e["name"], e.get("args", {})
    for tok, k in KIND:
        if tok in n:
            return k
    c = a.get("Collective name")
    return {"allreduce": "allreduce", "broadcast": "broadcast"}.get(c)

def ns(x):
    """us (parsed as Decimal: 1.7e15 us is past a double's exact ns) -> ns"""
    return int((Decimal(x) * 1000).to_integral_value())

ROOTS = set()  # the broadcasts' roots named in the fixtures (c10d::broadcast_'s root_rank)

def want_of(d):
    """per rank: kind -> [count, actual time ns], from the fixture's kernels"""
    files = sorted(f for f in os.listdir(d) if f.endswith(".json.gz") and ".et." not in f)
    want = []
    for f in files:
        ev = json.load(gzip.open(os.path.join(d, f)), parse_float=Decimal)["traceEvents"]
        ROOTS.update(int(e["args"]["Concrete Inputs"][2]) for e in ev if e.get("name") == "c10d::broadcast_")
        w = defaultdict(lambda: [0, 0])
        for e in ev:
            if e.get("cat") == "kernel" and "nccl" in e["name"].lower():
                k = kind_of(e)
                w[k][0] += 1
                w[k][1] += ns(e["ts"] + e["dur"]) - ns(e["ts"])
        want.append(w)
    if [w["alltoall"][0] for w in want] != [3] * len(files):
        bad.append("%s does not have 3 SendRecv kernels per rank: %s" % (d, [w["alltoall"][0] for w in want]))
    return files, want

WANT = {"new": want_of(d), "et": want_of(de)}
WANT["old"] = WANT["new"]
if ROOTS != {0}:
    bad.append("the fixtures' broadcasts name roots %s, this test expects rank 0" % sorted(ROOTS))
docs = {m: json.load(open(os.path.join(t, m + ".json"))) for m in ("new", "old", "et", "peer")}
for m in ("new", "old", "et"):
    files, want = WANT[m]
    ranks = docs[m]["ranks"]
    if len(ranks) != len(files):
        bad.append("%s: %d ranks" % (m, len(ranks)))
        continue
    # the predicted trace: kernels by instance and by (rank, kind)
    pev = json.load(open(os.path.join(t, m + ".trace.json")), parse_float=Decimal)
    pev = pev["traceEvents"] if isinstance(pev, dict) else pev
    inst = defaultdict(list)
    for e in pev:
        a = e.get("args", {})
        if e.get("cat") == "kernel" and "collective" in a and "seq" in a:
            s = ns(e["ts"])
            inst[(a.get("group"), a["seq"])].append((e["pid"], a["collective"], s, s + ns(e["dur"]), a.get("group_size")))
    pid_rank = {p: i for i, p in enumerate(sorted({x[0] for v in inst.values() for x in v}))}
    got = defaultdict(lambda: [0, 0])  # (rank, kind) -> predicted time, wait
    for key, parts in inst.items():
        bcast = parts[0][1] == "broadcast"
        root = [x for x in parts if bcast and pid_rank[x[0]] == 0]
        others = [x for x in parts if x not in root]
        ends = {x[3] for x in others}
        if len(parts) != len(files) or len({x[0] for x in parts}) != len(files):
            bad.append("%s: instance %s has %d kernels on %d ranks" % (m, key, len(parts), len({x[0] for x in parts})))
        if len(ends) != 1:
            bad.append("%s: instance %s (%s) ends at %d different times" % (m, key, parts[0][1], len(ends)))
        last = max(x[2] for x in parts)
        if root and root[0][3] - root[0][2] != others[0][3] - last:
            bad.append("%s: broadcast %s: the root took %d ns, the others' transfer is %d" %
                       (m, key, root[0][3] - root[0][2], others[0][3] - last))
        for p, k, s, e, _ in parts:
            g = got[(pid_rank[p], k)]
            g[0] += e - s
            g[1] += 0 if root and p == root[0][0] else last - s
    for i, r in enumerate(ranks):
        if r.get("coupled") is not True:
            bad.append("%s rank %d: not coupled" % (m, i))
        c = r["collectives"]
        if set(c) != set(want[i]):
            bad.append("%s rank %d: kinds %s, the trace has %s" % (m, i, sorted(c), sorted(want[i])))
            continue
        for k, x in c.items():
            n, act = want[i][k]
            p, a = x["predicted"], x["actual"]
            if (x["coupled"], x["traced"]) != (n, 0):
                bad.append("%s rank %d %s: coupled %d traced %d, the trace has %d" % (m, i, k, x["coupled"], x["traced"], n))
            if [p["time_ns"], p["wait_ns"]] != got[(i, k)]:
                bad.append("%s rank %d %s: predicted time/wait %d/%d, the predicted trace gives %d/%d" %
                           (m, i, k, p["time_ns"], p["wait_ns"], got[(i, k)][0], got[(i, k)][1]))
            if a["time_ns"] != act:
                bad.append("%s rank %d %s: actual time %d, the trace's kernels sum to %d" % (m, i, k, a["time_ns"], act))
            for y, nm in ((p, "predicted"), (a, "actual")):
                if y["wait_ns"] + y["transfer_ns"] != y["time_ns"] or not 0 <= y["wait_ns"] <= y["time_ns"]:
                    bad.append("%s rank %d %s: %s wait %d + transfer %d != time %d" %
                               (m, i, k, nm, y["wait_ns"], y["transfer_ns"], y["time_ns"]))
    # ranks arrive at different times: waiting cannot be zero everywhere
    if not any(x["predicted"]["wait_ns"] > 0 for r in ranks for x in r["collectives"].values()):
        bad.append("%s: no rank waited for any collective" % m)
cn = [{k: (v["coupled"], v["traced"]) for k, v in r["collectives"].items()} for r in docs["new"]["ranks"]]
co = [{k: (v["coupled"], v["traced"]) for k, v in r["collectives"].items()} for r in docs["old"]["ranks"]]
if cn != co:
    bad.append("the two fixtures' counts differ: %s vs %s" % (cn[0], co[0]))
for i, r in enumerate(docs["peer"]["ranks"]):
    c = r["collectives"]
    got = (c.get("sendrecv", {}).get("traced"), c.get("sendrecv", {}).get("coupled"), c.get("alltoall", {}).get("coupled"))
    if got != (1, 0, 2):
        bad.append("unknown peer, rank %d: sendrecv traced/coupled %s/%s, alltoall coupled %s (want 1/0, 2)" % ((i,) + got))
    elif c["sendrecv"]["predicted"]["wait_ns"] != 0:
        bad.append("unknown peer, rank %d: a traced kernel waited %d ns" % (i, c["sendrecv"]["predicted"]["wait_ns"]))
if bad:
    print("coupling_kinds: FAIL:", "; ".join(bad[:12]), "(%d in all)" % len(bad) if len(bad) > 12 else "")
    sys.exit(1)
print("coupling_kinds: ddp4 (both) and megatron (ET): every kind coupled, instances end together, wait + transfer = the traced/predicted times")
PY
