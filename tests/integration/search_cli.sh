#!/bin/sh
# search_cli.sh [LAUNCHER...]   (environment: LUMOSIM)
#
# lumosim search on a space small enough for CI (GPT-3 15B on 16 H100s,
# global batch 32), checked against what can be computed apart from it:
#   - the candidates are the product of the lists, each counted once by
#     reason; the TP x PP pairs that do not divide 16 GPUs are exactly the
#     ones counted gpus_not_divisible;
#   - the ranking is by step time, tokens/s = batch x 2048 / step, and every
#     ranked layout fits the H100's 80 GB;
#   - the reduced replica is exact: the best three layouts, and seven chosen
#     to stress it (TP 8 with PP > 1, interleaved, sequence parallelism,
#     other node sizes), synthesized as whole jobs (every DP replica, every
#     TP rank) and simulated by lumosim sim give the same step, to the
#     nanosecond;
#   - nothing feasible: exit 1, one error line, the reasons and the closest
#     misses; bad lists: exit 2; a budget that runs out says how much was
#     covered.
# With a launcher (mpirun -n K ...), the ranking must be the serial one.
set -u
: "${LUMOSIM:?}"
L=$LUMOSIM
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "search_cli: FAIL: $*"; exit 1; }
space="--model gpt3-15b --gpus 16 --global-batch 32 --tp 1,2,4,8 --pp 1,2,3,4 --micro-batch 1,2 --schedule 1f1b,interleaved:2"
# shellcheck disable=SC2086
"$L" search $space --top 0 --json >"$tmp/s.json" || fail "search"
if [ $# -gt 0 ]; then
    # shellcheck disable=SC2086
    "$@" "$L" search $space --top 0 --json >"$tmp/m.json" || fail "search under $*"
    python3 - "$tmp/s.json" "$tmp/m.json" <<'PY' || exit 1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d.pop("seconds"); d.pop("simulated_per_minute")
if a != b:
    print("search_cli: FAIL: the ranking under the launcher differs from the serial one"); sys.exit(1)
print("search_cli: the same ranking under the launcher")
PY
    exit 0
fi
python3 - "$tmp/s.json" >"$tmp/top.txt" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
bad = []
tps, pps, per = [1, 2, 4, 8], [1, 2, 3, 4], 2 * 2 * 3 * 2
if d["candidates"] != len(tps) * len(pps) * per: bad.append("candidates %d" % d["candidates"])
if sum(d["reasons"].values()) != d["candidates"]: bad.append("reasons do not add up")
nd = sum(1 for t in tps for p in pps if 16 % (t * p)) * per
if d["reasons"]["gpus_not_divisible"] != nd: bad.append("gpus_not_divisible %d, expected %d" % (d["reasons"]["gpus_not_divisible"], nd))
r = d["ranking"]
if len(r) != d["simulated"] or d["simulated"] != d["feasible"] or not r: bad.append("not every feasible layout ranked")
if [x["step_ns"] for x in r] != sorted(x["step_ns"] for x in r): bad.append("ranking not by step time")
for x in r:
    if abs(x["tokens_per_s"] - 32 * 2048 / (x["step_ns"] / 1e9)) > 0.1: bad.append("tokens/s of %s" % x)
    if x["peak_memory_bytes"] > 80e9: bad.append("ranked layout past 80 GB: %s" % x)
    if x["tp"] * x["pp"] * x["dp"] != 16: bad.append("layout of %s" % x)
if bad:
    print("search_cli: FAIL:", "; ".join(bad)); sys.exit(1)
for x in r[:3]:
    sch = "1f1b" if x["vstages"] == 1 else "interleaved:%d" % x["vstages"]
    print(x["tp"], x["pp"], x["dp"], x["micro_batch"], sch, x["recompute"], "1" if x["distributed_optimizer"] else "0", x["step_ns"])
PY
# the step of the whole job (every replica, every TP rank) as lumosim synth
# and lumosim sim give it: whole TP PP DP MB SCHEDULE RECOMPUTE DOPT [EXTRA...]
whole() {
    tp=$1 pp=$2 dp=$3 mb=$4 sch=$5 rc=$6 dopt=$7
    shift 7
    extra="$*"
    [ "$dopt" = 1 ] && extra="$extra --distributed-optimizer"
    # shellcheck disable=SC2086
    "$L" synth --model gpt3-15b --tp "$tp" --pp "$pp" --dp "$dp" --micro-batch "$mb" --global-batch 32 --schedule "$sch" \
        --recompute "$rc" $extra -o "$tmp/full.h5" >/dev/null 2>&1 || fail "synth of TP $tp PP $pp DP $dp $extra"
    "$L" sim --json "$tmp/full.h5" | python3 -c 'import json,sys; print(json.load(sys.stdin)["job"]["predicted_ns"])' \
        || fail "sim of TP $tp PP $pp DP $dp $extra"
    rm -f "$tmp/full.h5"
}
while read -r tp pp dp mb sch rc dopt step; do
    full=$(whole "$tp" "$pp" "$dp" "$mb" "$sch" "$rc" "$dopt") || exit 1
    [ "$full" = "$step" ] || fail "TP $tp PP $pp DP $dp mb $mb $sch: search says $step ns, the whole job simulates to $full ns"
done <"$tmp/top.txt"
# The reduced replica (one DP replica, one TP rank per stage) against the
# whole job, on layouts chosen to stress it: TP 8 with PP > 1 and DP > 1,
# interleaved, sequence parallelism with full recomputation, a pipeline
# whose stages share a node on one boundary and not on the next (TP 2 PP 3
# DP 2: stages on GPUs 0-3, 4-7, 8-11 of 8-GPU nodes), 4-GPU nodes (TP 8
# spans two nodes), and 6-GPU nodes where TP 4 does not divide the node
# (TP ranks see different node shapes: search must keep every TP rank).
four="$(dirname "$0")/../../data/topology/example_4gpu_eth100.json"
sed 's/"gpus_per_node": 4/"gpus_per_node": 6/' "$four" >"$tmp/six.json" || fail "six-GPU topology"
while read -r tp pp dp mb sch rc dopt opts; do
    [ "$opts" = - ] && opts=""
    onoff=off
    [ "$dopt" = 1 ] && onoff=on
    # shellcheck disable=SC2086
    step=$("$L" search --model gpt3-15b --gpus $((tp * pp * dp)) --global-batch 32 --tp "$tp" --pp "$pp" --micro-batch "$mb" \
        --schedule "$sch" --recompute "$rc" --distributed-optimizer "$onoff" $opts --json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["ranking"][0]["step_ns"])') \
        || fail "search of TP $tp PP $pp DP $dp $opts"
    # shellcheck disable=SC2086
    full=$(whole "$tp" "$pp" "$dp" "$mb" "$sch" "$rc" "$dopt" $opts) || exit 1
    [ "$full" = "$step" ] || fail "TP $tp PP $pp DP $dp mb $mb $sch $rc $opts: search says $step ns, the whole job $full ns"
done <<EOF
8 2 2 1 1f1b none 1 -
8 4 1 1 interleaved:2 none 0 -
4 2 4 1 interleaved:2 full 1 --sequence-parallel
8 4 2 2 interleaved:3 full 0 --sequence-parallel
2 3 2 1 1f1b none 0 -
8 2 2 1 interleaved:2 none 1 --topology $four
4 3 2 1 1f1b none 1 --topology $tmp/six.json
EOF
# nothing feasible: 175B on 16 GPUs without recomputation
"$L" search --model gpt3-175b --gpus 16 --global-batch 32 --recompute none --distributed-optimizer off >"$tmp/none.out" 2>"$tmp/none.err"
[ $? -eq 1 ] || fail "an infeasible space did not exit 1"
[ "$(wc -l <"$tmp/none.err")" -eq 1 ] || fail "infeasible: not one error line: $(cat "$tmp/none.err")"
grep -q "does_not_fit" "$tmp/none.out" && grep -q "closest miss" "$tmp/none.out" || fail "infeasible: no reasons or closest misses: $(cat "$tmp/none.out")"
# bad input (and a missing --gpus)
"$L" search --model gpt3-15b --global-batch 32 >/dev/null 2>&1
[ $? -eq 2 ] || fail "search without --gpus did not exit 2"
for bad in "--tp 0" "--schedule zigzag" "--recompute most" "--budget-seconds -1" "--top x" "--samples 0" \
    "--spread 0" "--spread 2" "--seed -1"; do
    # shellcheck disable=SC2086
    "$L" search --model gpt3-15b --gpus 16 --global-batch 32 $bad >/dev/null 2>"$tmp/bad.err"
    rc=$?
    [ $rc -eq 2 ] || fail "search $bad exited $rc, not 2"
done
# a budget that runs out: 1 us is spent before the first candidate (the
# enumeration alone takes longer) on any machine, where 0.3 s stopped
# covering the 96 candidates once a candidate took 3 ms
# shellcheck disable=SC2086
"$L" search $space --budget-seconds 0.000001 --json >"$tmp/b.json" || fail "search with a budget"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["not_reached"] == d["feasible"] - d["simulated"], d
assert d["simulated"] < d["feasible"], "a 1 us budget covered everything: %s" % d
' "$tmp/b.json" || fail "the budget's coverage is not reported"
# --top K --samples N: the best K re-simulated with drawn durations; the
# same seed gives the same intervals, p5 <= p50 <= p95 around the point
# step, only the K shown rows carry one, and a wider per-op spread gives a
# wider interval
for run in 1 2; do
    # shellcheck disable=SC2086
    "$L" search $space --top 2 --samples 8 --seed 5 --json >"$tmp/iv$run.json" || fail "search --samples"
done
# shellcheck disable=SC2086
"$L" search $space --top 2 --samples 8 --seed 5 --spread 0.2 --json >"$tmp/ivw.json" || fail "search --spread"
python3 - "$tmp/iv1.json" "$tmp/iv2.json" "$tmp/ivw.json" <<'PY' || fail "search intervals"
import json, sys
a, b, w = (json.load(open(p)) for p in sys.argv[1:4])
rows = lambda d: [r for r in d["ranking"]]
assert [r["interval"] for r in rows(a)] == [r["interval"] for r in rows(b)], "the same seed gave other intervals"
assert len(rows(a)) == 2 and all("interval" in r for r in rows(a)), a["ranking"]
for r, rw in zip(rows(a), rows(w)):
    i, iw = r["interval"], rw["interval"]
    assert 0 < i["p5_ns"] <= i["p50_ns"] <= i["p95_ns"], i
    assert i["samples"] == 8 and i["seed"] == 5 and r["interval_spread"]["spread"] == 0.004, r
    # independent per-op noise averages out over the step: within 1 % of the point
    assert abs(i["p50_ns"] / r["step_ns"] - 1) < 0.01, (i, r["step_ns"])
    assert iw["p95_ns"] - iw["p5_ns"] > i["p95_ns"] - i["p5_ns"], (iw, i)
print("search_cli: intervals reproducible, ordered, around the point step, wider with --spread 0.2")
PY
echo "search_cli: counts, ranking, exact replica shortcut, infeasible and bad input, budget, intervals"
