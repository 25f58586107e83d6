#!/bin/sh
# table_summary.sh [MPIEXEC [FLAGS...]]: the table of a 32-GPU job prints
# the 3 slowest ranks and the fastest (by the predicted windows that --json
# reports) and one line for the other 28; --per-rank prints all 32; under
# MPIEXEC -n 2 both forms are byte-identical to the serial ones. The
# summarised table of that PP 4 job ends with one line per pipeline stage
# whose means equal the means of the --json per-rank figures over the ranks
# of each stage (stage = rank / (TP x DP), docs/synthesis.md's layout);
# a PP 1 job of 32 GPUs prints no stage lines.
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is needed to read the JSON"; exit 77; }
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "table_summary: FAIL: $*"; exit 1; }
"$LUMOSIM" synth --model gpt3-15b --layers 8 --tp 2 --pp 4 --dp 4 --micro-batch 1 --global-batch 16 -o "$t/job.h5" \
    >/dev/null 2>&1 || fail "synth"
"$LUMOSIM" sim --json "$t/job.h5" >"$t/j.json" || fail "sim --json"
"$LUMOSIM" sim "$t/job.h5" >"$t/table.txt" || fail "sim"
"$LUMOSIM" sim --per-rank "$t/job.h5" >"$t/all.txt" || fail "sim --per-rank"
"$LUMOSIM" synth --model gpt3-15b --layers 8 --tp 2 --pp 1 --dp 16 --micro-batch 1 --global-batch 16 -o "$t/dp.h5" \
    >/dev/null 2>&1 || fail "synth (PP 1)"
"$LUMOSIM" sim "$t/dp.h5" >"$t/dp.txt" || fail "sim (PP 1)"
python3 - "$t/j.json" "$t/table.txt" "$t/all.txt" "$t/dp.txt" <<'PY' || fail "see above"
import json, re, sys
d = json.load(open(sys.argv[1]))
w = [(r["window"]["predicted_ns"] if isinstance(r["window"], dict) else r["window_predicted_ns"], i)
     for i, r in enumerate(d["ranks"])]
slow = sorted(w, key=lambda x: (-x[0], x[1]))[:3]
rest = [x for x in w if x not in slow]
fast = sorted(rest, key=lambda x: (x[0], x[1]))[:1]
want = sorted(i for _, i in slow + fast)
table = open(sys.argv[2]).read()
got = [int(m) for m in re.findall(r"(?m)^rank (\d+) ", table)]
assert got == want, (got, want)
assert "(28 more ranks not shown" in table, table[-400:]
allr = [int(m) for m in re.findall(r"(?m)^rank (\d+) ", open(sys.argv[3]).read())]
assert allr == list(range(32)), allr
assert "more ranks not shown" not in open(sys.argv[3]).read()
# per pipeline stage means, against the JSON's per-rank figures
TP, DP, PP = 2, 4, 4
keys = ["exposed_compute_ns", "overlapped_ns", "exposed_comm_ns", "other_ns"]
rows = re.findall(r"(?m)^ +(\d+) +(\d+) predicted +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+)$",
                  table.split("per pipeline stage, mean over its ranks")[-1])
assert len(rows) == PP, (rows, table[-1200:])
for row in rows:
    st, cnt = int(row[0]), int(row[1])
    mine = [r for r in d["ranks"] if r["rank"] // (TP * DP) == st]
    assert cnt == len(mine) == TP * DP, (st, cnt, len(mine))
    want = [sum(r["window"]["predicted_ns"] for r in mine) / len(mine) / 1e6]
    want += [sum(r["breakdown"]["predicted"][k] for r in mine) / len(mine) / 1e6 for k in keys]
    for got_v, want_v, what in zip(map(float, row[2:]), want, ["window"] + keys):
        assert abs(got_v - want_v) <= 0.0005 + 1e-9, ("stage", st, what, got_v, want_v)
# the stages differ (the first holds the embedding and waits longest), so a
# mean over the whole job would not pass the checks above
assert len(set(r[2] for r in rows)) > 1, rows
assert "per pipeline stage" not in open(sys.argv[3]).read(), "--per-rank prints every rank, no means"
assert "per pipeline stage" not in open(sys.argv[4]).read(), "a PP 1 job has one stage: no stage lines"
assert "more ranks not shown" in open(sys.argv[4]).read()
PY
if [ $# -gt 0 ]; then
    "$@" "$LUMOSIM" sim "$t/job.h5" -o "$t/r2.h5" >"$t/table2.txt" || fail "sim under $*"
    "$@" "$LUMOSIM" sim --per-rank "$t/job.h5" -o "$t/r3.h5" >"$t/all2.txt" || fail "sim --per-rank under $*"
    cmp -s "$t/table.txt" "$t/table2.txt" || fail "the summarised table differs under $*"
    cmp -s "$t/all.txt" "$t/all2.txt" || fail "the --per-rank table differs under $*"
fi
echo "table_summary: the 3 slowest and the fastest of 32 ranks, one line for the rest, the 4 stages' means; --per-rank all; ${1:+the same under MPI}"
