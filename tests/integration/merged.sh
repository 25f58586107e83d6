#!/bin/sh
# merged.sh MERGED_FILE SPLIT_DIR FIXTURE   (environment: LUMOSIM, JSON_CHECK)
#
# A TraceLens TraceFusion file (every event tagged args.rank, pids offset by
# rank x 1e8; KINETO-NOTES trap 10) is read as the job it is: one rank per
# args.rank, simulated together -- the same report, to the nanosecond, as
# the per-rank files split out of it (ddp4_mi300/rank*.json.gz). A merged
# file whose ranks are not 0..N-1 is refused with one line naming the
# missing rank. Exits 77 without the shared traces or python3.
set -u
: "${LUMOSIM:?}" "${JSON_CHECK:?}"
[ -e "$1" ] && [ -d "$2" ] || { echo "merged: shared traces missing: skipped"; exit 77; }
command -v python3 >/dev/null || { echo "merged: python3 missing: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "merged: FAIL: $*"; exit 1; }
L=$LUMOSIM
mkdir "$tmp/split" && cp "$2"/rank[0-9].json.gz "$tmp/split/"
"$L" replay --json "$1" >"$tmp/m.json" || fail "replay of the merged file"
"$L" replay --json "$tmp/split" >"$tmp/s.json" || fail "replay of the split ranks"
python3 - "$tmp/m.json" "$tmp/s.json" <<'PY' || exit 1
import json, sys
m, s = (json.load(open(p)) for p in sys.argv[1:3])
bad = []
if len(m["ranks"]) != len(s["ranks"]) or len(m["ranks"]) < 2:
    bad.append("%d ranks from the merged file, %d split" % (len(m["ranks"]), len(s["ranks"])))
for k in ("actual_ns", "predicted_ns"):
    if m["job"][k] != s["job"][k]:
        bad.append("job %s %d != %d" % (k, m["job"][k], s["job"][k]))
for i, (a, b) in enumerate(zip(m["ranks"], s["ranks"])):
    for k in ("actual_ns", "predicted_ns"):
        if a["window"][k] != b["window"][k]:
            bad.append("rank %d window %s %d != %d" % (i, k, a["window"][k], b["window"][k]))
    if [x["name"] for x in a["iterations"]] != [x["name"] for x in b["iterations"]]:
        bad.append("rank %d: other iterations" % i)
if bad:
    print("merged: FAIL:", "; ".join(bad)); sys.exit(1)
print("merged: %d ranks, job %.3f ms predicted, as the split files" % (len(m["ranks"]), m["job"]["predicted_ns"] / 1e6))
PY
# ranks 0 and 2 only: refused, one line, naming the missing rank 1
python3 - "$3" "$tmp/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
out = []
for r in (0, 2):
    for e in d["traceEvents"]:
        e = dict(e)
        e["args"] = dict(e.get("args", {}), rank=r)
        if isinstance(e.get("pid"), int) and e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            e["pid"] += r * 100000000
        out.append(e)
d["traceEvents"] = out
d.pop("distributedInfo", None)
json.dump(d, open(sys.argv[2], "w"))
PY
"$L" replay "$tmp/bad.json" >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q 'rank 1 is missing' "$tmp/err" && [ ! -s "$tmp/out" ] ||
    fail "merged file with ranks 0 and 2: exit $st, $(cat "$tmp/err")"
# several traces without distributedInfo: replayed one by one, and stderr says so and how to make a job
mkdir "$tmp/nd"
for i in 0 1; do sed 's/"distributedInfo"/"notDistributedInfo"/' "$3" >"$tmp/nd/r$i.json"; done
"$L" replay "$tmp/nd" >"$tmp/out" 2>"$tmp/err" || fail "replay of traces without distributedInfo"
grep -q 'replayed on its own' "$tmp/err" && grep -q '"world_size": 2' "$tmp/err" || fail "no note on traces without distributedInfo: $(cat "$tmp/err")"
echo "merged: ok"
