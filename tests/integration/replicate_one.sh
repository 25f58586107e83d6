#!/bin/sh
# replicate_one.sh FIXTURE_DIR [DDP4_DIR]   (environment: LUMOSIM)
#
# --replicate-from R given only rank R's trace: the job's and the copies'
# actual times were never measured. They must not be shown as R's own
# window with an error of +0.00 %: JSON actual_ns and error null and
# "measured": false per rank, "not measured" in the text and the HTML page,
# no error printed on the job line; the prediction is still there. With
# every rank given, the actual side is the real job's (numbers again).
# Inputs: one rank of tests/data/late (a world of 4), and, when DDP4_DIR
# is given and present, rank 1 of the shared ddp4_mi300 job copied alone
# into a temporary directory.
set -u
: "${LUMOSIM:?}"
F=$1
D=${2:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "replicate_one: FAIL: $*"; exit 1; }
check_one() { # DIR R LABEL
    "$LUMOSIM" replay --json --replicate-from "$2" "$1" >"$tmp/$3.json" || fail "$3: replay --json"
    "$LUMOSIM" replay --replicate-from "$2" "$1" >"$tmp/$3.txt" || fail "$3: replay"
    "$LUMOSIM" report --replicate-from "$2" "$1" --html "$tmp/$3.html" || fail "$3: report --html"
    python3 - "$tmp/$3" "$3" <<'PY' || exit 1
import json, re, sys
b, label = sys.argv[1], sys.argv[2]
d = json.load(open(b + ".json"))
bad = []
j = d["job"]
if j["actual_ns"] is not None or j.get("error") is not None or not j["predicted_ns"] > 0:
    bad.append("job %s (want actual and error null, a prediction)" % j)
for r in d["ranks"]:
    w = r["window"]
    if w["actual_ns"] is not None or w.get("error") is not None or r.get("measured") is not False:
        bad.append("rank %d: window %s, measured %s" % (r["rank"], w, r.get("measured")))
txt = open(b + ".txt").read()
jl = [l for l in txt.splitlines() if l.startswith("job:")]
if len(jl) != 1 or "not measured" not in jl[0] or "%" in jl[0]:
    bad.append("text job line %s" % jl)
if re.search(r"^  window .*%", txt, re.M):
    bad.append("text: a window line prints an error")
if txt.count("actual: not measured") != len(d["ranks"]):
    bad.append("text: %d ranks say 'not measured', want %d" % (txt.count("actual: not measured"), len(d["ranks"])))
if "not measured" not in open(b + ".html").read():
    bad.append("HTML: no 'not measured'")
if bad:
    sys.exit("replicate_one: FAIL (%s): %s" % (label, "; ".join(bad)))
print("replicate_one: %s: %d copies, actual not measured, predicted %.3f ms" % (label, len(d["ranks"]), j["predicted_ns"] / 1e6))
PY
}
mkdir "$tmp/late1" && cp "$F/rank1.json" "$tmp/late1/" || fail "copy"
check_one "$tmp/late1" 1 late
# the whole job given: measured against it (numbers, not null)
"$LUMOSIM" replay --json --replicate-from 1 "$F" >"$tmp/all.json" || fail "replay of the whole job"
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['job']['actual_ns'] and all(r['window']['actual_ns'] for r in d['ranks']) and 'measured' not in d['ranks'][0], d['job']
" "$tmp/all.json" || fail "the whole job given: actual not measured"
if [ -n "$D" ]; then
    if [ -e "$D/rank1.json.gz" ]; then
        mkdir "$tmp/ddp1" && cp "$D/rank1.json.gz" "$tmp/ddp1/" || fail "copy"
        check_one "$tmp/ddp1" 1 ddp4
    else
        echo "replicate_one: $D missing: its case skipped"
    fi
fi
