#!/bin/sh
# job_path.sh FIXTURE_DIR   (environment: LUMOSIM)
#
# The job's critical path across GPUs (critical.h, lsim_job_path) on a
# hand-made job where, before each collective, one rank computes 5 ms
# longer than the others (tests/data/late: 4 ranks, all-to-all, all-gather,
# reduce-scatter; tests/data/deepep: 2 ranks, DeepEP dispatch and combine).
# Expected values come from the fixture's kernels, not from lumosim:
#  - before collective i the path runs through the compute kernel of the
#    rank whose compute kernel before it is the longest (the last to
#    arrive), for its traced duration, and through no other rank's;
#  - its communication is each collective's transfer as traced (end of the
#    collective's kernels - the last traced start), summed, within 2 us an
#    instance (the replay models launch latency);
#  - it moves to the late rank at least once per collective but the last;
#  - every nanosecond booked once: its length is the sum of its categories
#    and of its GPUs' shares, and equals the job's predicted span;
#  - the text report prints it after the job line; the HTML report has its
#    card with the late ranks' compute; the predicted trace (--trace-out)
#    its process, the late compute as slices of their ranks, one slice per
#    crossing that names the rank it came from; and that trace replays as
#    the same job (its ops and nodes tagged with their rank, the reader's
#    merged multi-rank form), the job path's slices skipped.
set -u
: "${LUMOSIM:?}"
F=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "job_path: FAIL: $*"; exit 1; }
"$LUMOSIM" replay --json --critical-path "$F" >"$tmp/rep.json" || fail "replay --json of $F"
"$LUMOSIM" replay --critical-path --trace-out "$tmp/pred.json" "$F" >"$tmp/rep.txt" || fail "replay of $F"
"$LUMOSIM" report --html "$tmp/rep.html" "$F" >/dev/null || fail "report --html of $F"
grep -q '^job: actual' "$tmp/rep.txt" || fail "no job line"
sed -n '/^job: actual/,$p' "$tmp/rep.txt" | grep -q '^job critical path [0-9.]* ms through' ||
    fail "the text report has no job critical path after the job line"
"$LUMOSIM" replay --json "$F" | grep -q '"job_critical_path"' && fail "job_critical_path without --critical-path"
# the predicted trace of the job (every op and node tagged with its rank)
# replays as the job: its "actual" job span is the span predicted above
"$LUMOSIM" replay --json "$tmp/pred.json" >"$tmp/again.json" || fail "replay of the predicted trace"
python3 - "$F" "$tmp/rep.json" "$tmp/pred.json" "$tmp/rep.html" <<'PY'
import json, os, sys
F, rep, pred, html = sys.argv[1:5]
files = sorted(f for f in os.listdir(F) if f.endswith(".json"))
COMM = ("nccl", "deep_ep::")
comp, comm = [], []  # per rank, in time order: [(name, dur us)] of compute kernels; [(start us, end us)] of communication
ranks = []
for f in files:
    d = json.load(open(os.path.join(F, f)))
    ranks.append(d["distributedInfo"]["rank"])
    ks = sorted((e for e in d["traceEvents"] if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    comp.append([(e["name"], e["dur"]) for e in ks if not any(t in e["name"] for t in COMM)])
    comm.append([(e["ts"], e["ts"] + e["dur"]) for e in ks if any(t in e["name"] for t in COMM)])
m = len(comp[0])
if m == 0 or any(len(c) != m for c in comp + comm):
    sys.exit("job_path: FAIL: %s is not a fixture of one compute kernel before each collective" % F)
late = [max(range(len(files)), key=lambda r: comp[r][i][1]) for i in range(m)]
transfer_us = sum(comm[0][i][1] - max(c[i][0] for c in comm) for i in range(m))
d = json.load(open(rep))
p = d["job_critical_path"]
bad = []
top = {(t["rank"], t["name"]): t["time_ns"] for t in p["top"]}
for i in range(m):
    for r in range(len(files)):
        key = (ranks[r], comp[r][i][0])
        if r == late[i]:
            if key not in top or abs(top[key] - comp[r][i][1] * 1000) > 1000:
                bad.append("collective %d: rank %d's compute (%d us) is not on the path for its duration: %s"
                           % (i, ranks[r], comp[r][i][1], top.get(key)))
        elif key in top:
            bad.append("collective %d: rank %d arrived early, yet its compute is on the path" % (i, ranks[r]))
c = p["by_category_ns"]["communication"]
if abs(c - transfer_us * 1000) > 2000 * m:
    bad.append("communication on the path %d ns, the traced transfers %d us" % (c, transfer_us))
if not (m - 1 <= p["crossings"] <= m):
    bad.append("%d crossings for %d collectives" % (p["crossings"], m))
L = p["length_ns"]
if sum(p["by_category_ns"].values()) != L:
    bad.append("categories sum to %d, not the length %d" % (sum(p["by_category_ns"].values()), L))
if sum(g["time_ns"] for g in p["by_gpu"]) != L:
    bad.append("GPU shares sum to %d, not the length %d" % (sum(g["time_ns"] for g in p["by_gpu"]), L))
again = json.load(open(os.path.join(os.path.dirname(rep), "again.json")))
if len(again["ranks"]) != len(files) or again["job"]["actual_ns"] != d["job"]["predicted_ns"]:
    bad.append("the predicted trace reads back as %d ranks, job %s ns, not %d ranks, %d ns"
               % (len(again["ranks"]), again["job"]["actual_ns"], len(files), d["job"]["predicted_ns"]))
if L != d["job"]["predicted_ns"]:
    bad.append("length %d, the job's predicted span %d" % (L, d["job"]["predicted_ns"]))
# the predicted trace's job path process
tev = [e for e in json.load(open(pred))["traceEvents"] if e.get("cat") == "lumosim_job_critical_path"]
for i in range(m):
    r = late[i]
    if not any(e["args"]["op"] == comp[r][i][0] and e["args"]["rank"] == ranks[r] and abs(e["dur"] - comp[r][i][1]) <= 1
               for e in tev):
        bad.append("the predicted trace has no job-path slice of rank %d's %s" % (ranks[r], comp[r][i][0]))
if sum(1 for e in tev if "from_rank" in e["args"]) != p["crossings"]:
    bad.append("the predicted trace's job path crosses %d times, the report %d"
               % (sum(1 for e in tev if "from_rank" in e["args"]), p["crossings"]))
# the HTML card
h = open(html).read()
at = h.find("<h3>Job critical path</h3>")
card = h[at:h.find('<div class="card">', at)] if at >= 0 else ""
if "at %d collectives" % p["crossings"] not in card:
    bad.append("the HTML report has no job critical path card with %d crossings" % p["crossings"])
for i in range(m):
    if comp[late[i]][i][0].split("(")[0].replace("<", "&lt;").replace(">", "&gt;") not in card:
        bad.append("the HTML card does not name %s" % comp[late[i]][i][0][:40])
if bad:
    sys.exit("job_path: FAIL: " + "; ".join(bad))
print("job_path: ok: %d collectives, path %.3f ms through late ranks %s, %d crossings, communication %.3f ms"
      % (m, L / 1e6, [ranks[r] for r in late], p["crossings"], c / 1e6))
PY
