#!/bin/sh
# replica_range.sh DATA_DIR [MEGATRON_DIR]   (environment: LUMOSIM)
#
# replay --replicate-from R's range (docs/intervals.md, "One traced rank"),
# asserted against the traces' own kernels, not against lumosim's report:
#  - data/late/rank0.json (4-rank job, one trace): its collectives grouped by
#    kind and size as the trace's record_param_comms say (python3, from the
#    JSON): the range's waiting is the sum over the rank's collectives of
#    (duration - the shortest of its kind and size), counted per collective;
#    every quantile is the point plus a whole number of the one waited
#    collective's (max - min), between 0 and its instances of that key
#    (each instance draws one duration of its key); at 100 samples the p5 is
#    the point (no waiting drawn) and the p95 is the point plus every
#    instance's largest duration; the real job is "not measured" (null);
#    report --html shows the same range and says the same;
#  - the same seed gives the same bytes, and the options are refused
#    without --replicate-from or out of range (exit 2, one line, no stdout);
#  - with MEGATRON_DIR (the eight megatron_tp8_a100 ranks): 10,000 samples
#    are refused by the work cap; the range from
#    each rank's trace covers the real job (every trace given) for at least
#    6 of the 8 source ranks, and its p50 is nearer the real job than the
#    point prediction is, on average over the 8 (docs/accuracy.md).
set -u
: "${LUMOSIM:?}"
D=$1
M=${2:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "replica_range: FAIL: $*"; exit 1; }

"$LUMOSIM" replay --json --replicate-from 0 --samples 100 --seed 7 "$D/late/rank0.json" >"$tmp/a.json" ||
    fail "replay --replicate-from 0 --samples 100"
"$LUMOSIM" replay --json --replicate-from 0 --samples 100 --seed 7 "$D/late/rank0.json" >"$tmp/b.json" || fail "again"
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "the same seed gave different documents"
"$LUMOSIM" replay --replicate-from 0 "$D/late/rank0.json" >"$tmp/t.txt" || fail "the table"
grep -q "^job: actual not measured" "$tmp/t.txt" || fail "the table does not say the job was not measured"
grep -q "^job range from rank 0's own durations (20 samples, seed 0): p5 " "$tmp/t.txt" || fail "no range line (default 20 samples)"
grep -q "OUTSIDE\|inside the" "$tmp/t.txt" && fail "one traced rank: the table compares the range with something"

python3 - "$D/late/rank0.json" "$tmp/a.json" <<'PY' || exit 1
import json, sys
from collections import defaultdict
tr, doc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ev = tr["traceEvents"]
KINDS = [("SendRecv", "alltoall"), ("AllGather", "allgather"), ("ReduceScatter", "reducescatter"),
         ("AllReduce", "allreduce")]
SIZE = {"float": 4, "c10::Half": 2, "c10::BFloat16": 2, "double": 8, "int": 4, "long int": 8}
# each collective kernel's size: its launch's record_param_comms (the CPU op
# around the cudaLaunchKernel of the same correlation)
rpc = [e for e in ev if e.get("name") == "record_param_comms"]
launch = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
def size_of(k):
    l = launch[k["args"]["correlation"]]
    for r in rpc:
        if r["ts"] <= l["ts"] <= r["ts"] + r["dur"]:
            a = r["args"]
            n = 1
            for d in a["Input Dims"][0]:
                n *= d
            return n * SIZE[a["Input type"][0]]
    raise SystemExit("replica_range: FAIL: no record_param_comms around correlation %d" % k["args"]["correlation"])
durs = defaultdict(list)
for e in ev:
    if e.get("cat") != "kernel":
        continue
    kind = next((k for pat, k in KINDS if pat in e["name"]), None)
    if kind:
        durs[(kind, size_of(e))].append(round(e["dur"] * 1000))
colls = sum(len(v) for v in durs.values())
waits = [d - min(v) for v in durs.values() for d in v]
r = doc["job_range"]
bad = []
want = {"source_rank": 0, "samples": 100, "seed": 7, "source_collectives": colls,
        "source_collectives_waited": sum(1 for w in waits if w > 0), "source_waited_ns": sum(waits)}
for k, v in want.items():
    if r.get(k) != v:
        bad.append("%s: %r, the trace says %r" % (k, r.get(k), v))
if r.get("actual_ns", 0) is not None or r.get("inside", 0) is not None:
    bad.append("one traced rank: actual_ns and inside must be null, not %r / %r" % (r.get("actual_ns"), r.get("inside")))
waited = [v for v in durs.values() if max(v) > min(v)]
if len(waited) != 1 or doc["job"]["actual_ns"] is not None:
    bad.append("the fixture changed: %d keys with waiting, job actual %r" % (len(waited), doc["job"]["actual_ns"]))
else:
    v = waited[0]
    step, top = max(v) - min(v), len(v)
    point = doc["job"]["predicted_ns"]
    allowed = [point + i * step for i in range(top + 1)]
    q = [r["p5_ns"], r["p50_ns"], r["p95_ns"]]
    for name, x in zip(("p5", "p50", "p95"), q):
        if x not in allowed:
            bad.append("%s %d is not the point %d plus a whole number (0..%d) of %d ns" % (name, x, point, top, step))
    if q[0] != allowed[0] or q[2] != allowed[-1]:
        bad.append("at 100 samples p5/p95 must be %d/%d, not %d/%d" % (allowed[0], allowed[-1], q[0], q[2]))
if bad:
    print("replica_range: FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("replica_range: fixture ok (waiting %d ns in %d of %d collectives)" % (sum(waits), want["source_collectives_waited"], colls))
PY

# the HTML page shows the same range (report --html, same samples and seed):
# its p5 / p50 / p95 are the JSON's, checked against the trace above, and the
# real job is not measured
"$LUMOSIM" report --replicate-from 0 --samples 100 --seed 7 "$D/late/rank0.json" --html "$tmp/r.html" ||
    fail "report --replicate-from 0 --html"
python3 - "$tmp/a.json" "$tmp/r.html" <<'PY' || exit 1
import json, re, sys
r, page = json.load(open(sys.argv[1]))["job_range"], open(sys.argv[2]).read()
def ms(ns):  # the page's figures: two decimals from 1 ms to 100 ms
    return "%.2f" % (ns / 1e6)
m = re.search(r"Job range from one traced rank</h3>\n<p>From rank (\d+)'s own durations \((\d+) samples, seed (\d+)\): "
              r"p5 <b>([0-9.]+)</b> ms, p50 <b>([0-9.]+)</b> ms, p95 <b>([0-9.]+)</b> ms", page)
if not m:
    sys.exit("replica_range: FAIL: the page has no job range card")
want = (str(r["source_rank"]), str(r["samples"]), str(r["seed"]), ms(r["p5_ns"]), ms(r["p50_ns"]), ms(r["p95_ns"]))
if m.groups() != want:
    sys.exit("replica_range: FAIL: the page's range %r, the JSON's %r" % (m.groups(), want))
if "<p>Real job: not measured" not in page:
    sys.exit("replica_range: FAIL: the page does not say the real job was not measured")
PY
"$LUMOSIM" report --samples 5 "$D/late/rank0.json" --html "$tmp/x.html" 2>&1 >/dev/null |
    grep -q "report --samples is about the range.*it needs --replicate-from R" ||
    fail "report --samples without --replicate-from does not say what it needs"
[ ! -e "$tmp/x.html" ] || fail "a refused report wrote its page"

# refused: without --replicate-from, out of range, and where it does not apply
for bad in "--samples 5" "--seed 3" "--replicate-from 0 --samples 0" "--replicate-from 0 --samples 10001" \
           "--replicate-from 0 --seed -1" "--replicate-from 0 --samples x"; do
    # shellcheck disable=SC2086
    "$LUMOSIM" replay $bad "$D/late/rank0.json" >"$tmp/out" 2>"$tmp/err"
    st=$?
    [ "$st" -eq 2 ] || fail "replay $bad: exit $st, not 2"
    [ ! -s "$tmp/out" ] || fail "replay $bad: printed a report"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "replay $bad: not one line: $(cat "$tmp/err")"
done
"$LUMOSIM" replay --samples 5 "$D/late/rank0.json" 2>&1 >/dev/null | grep -q "it needs --replicate-from R" ||
    fail "replay --samples without --replicate-from does not say what it needs"

[ -n "$M" ] && [ -e "$M/rank0.json.gz" ] || { echo "replica_range: megatron_tp8_a100 missing: the real-job part skipped"; exit 0; }
for R in 0 1 2 3 4 5 6 7; do
    "$LUMOSIM" replay --json --replicate-from $R "$M" >"$tmp/m$R.json" || fail "megatron --replicate-from $R"
done
# the work cap (docs/reliability.md): 10,000 samples of 8 copies of 60,176
# nodes is 6e8 node simulations, refused in one line before any is run
"$LUMOSIM" replay --replicate-from 0 --samples 10000 "$M/rank0.json.gz" >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" -eq 1 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "over the cap" "$tmp/err" ||
    fail "10,000 samples of the 8-rank job: exit $st, $(cat "$tmp/err")"
python3 - "$M" "$tmp" <<'PY' || exit 1
import gzip, json, sys
m, t = sys.argv[1], sys.argv[2]
# the real job's span from the traces themselves: the earliest start to the
# latest end of any CPU or GPU activity over the eight ranks (a rank's
# window is all its activity, docs/report-json.md; the profiler's own
# "Trace" span on pid "Spans" is not activity; the ranks' clocks agree to a
# few microseconds: the coupled replay's clock offsets)
lo, hi = None, None
for r in range(8):
    for e in json.load(gzip.open("%s/rank%d.json.gz" % (m, r)))["traceEvents"]:
        if e.get("ph") == "X" and isinstance(e.get("pid"), int) and e.get("cat") != "Trace":
            s, f = e["ts"] * 1000, (e["ts"] + e["dur"]) * 1000
            lo = s if lo is None or s < lo else lo
            hi = f if hi is None or f > hi else hi
real = hi - lo
inside, perr, qerr = 0, 0.0, 0.0
for r in range(8):
    d = json.load(open("%s/m%d.json" % (t, r)))
    g = d["job_range"]
    if abs(g["actual_ns"] - real) > 0.001 * real:
        sys.exit("replica_range: FAIL: rank %d: the range's real job %d ns, the traces' span %d ns" % (r, g["actual_ns"], real))
    inside += g["p5_ns"] <= real <= g["p95_ns"]
    perr += abs(d["job"]["predicted_ns"] - real) / real / 8
    qerr += abs(g["p50_ns"] - real) / real / 8
    print("  from rank %d: point %.3f, p5 %.3f p50 %.3f p95 %.3f ms" % (r, d["job"]["predicted_ns"] / 1e6, g["p5_ns"] / 1e6,
                                                                    g["p50_ns"] / 1e6, g["p95_ns"] / 1e6))
print("replica_range: megatron real job %.3f ms, inside %d of 8; mean |error| point %.2f %%, p50 %.2f %%" %
      (real / 1e6, inside, 100 * perr, 100 * qerr))
if inside < 6:
    sys.exit("replica_range: FAIL: the range covers the real job for %d of 8 source ranks (at least 6)" % inside)
if qerr >= perr:
    sys.exit("replica_range: FAIL: the p50 is no nearer the real job than the point")
PY
