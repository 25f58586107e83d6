#!/bin/sh
# LUMOSIM=lumosim search_from.sh MAKE_TRAIN_TRACE [LAUNCHER...]
#
# With a launcher (test mpi:search_from): the same --from search under it,
# candidates spread over its ranks, gives the serial JSON (rankings,
# refusals and the OOM lines found on other ranks) and exits.
#
# lumosim search --from JOB.h5 (docs/search.md, "Around a job"), --shard
# and --merge. Every expected figure comes from running the commands the
# search stands for (lumosim whatif + lumosim sim) or from the options
# themselves, never from the search's own output:
#   1. a synthesized store (gpt3-15b cut to 8 layers, TP 2 PP 2 DP 2): every
#      ranked layout's step equals `lumosim whatif` of that layout +
#      `lumosim sim` (job predicted_ns), to the nanosecond; the ranking is
#      by step; the candidates are the product of the lists;
#   2. refusals: each refused layout's message is the line `lumosim whatif`
#      of that layout fails with; a layout past the GPU's memory (an A100
#      40GB spec: 40 GB, NVIDIA A100 datasheet) is does_not_fit with the
#      OOM line whatif warns with;
#   3. --gpus N keeps TP x PP x DP = N; --global-batch B gives each layout
#      B / (DP x micro-batch) micro-batches, as the whatif with that
#      --micro-batches simulates;
#   4. a traced training step (tests/data/tools/make_train_trace.py, built):
#      the --tp, --pp and --dp variants are all ranked, each equal to whatif
#      + sim;
#      its -o archive (issue 39): lumosim info prints the unknown
#      micro-batch size as "-", each row's throughput as --json's, DP x
#      micro-batches / step;
#   5. --shard I/3 then --merge: the same ranking as the unsharded run (a
#      --model space and a --from space), and bad merges refused;
#   6. bad input: no such file, not a graph store, every what-if refused:
#      one line, exit 1, no output file.
L=$LUMOSIM
MAKER=$1
shift
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "search_from: FAIL: $*"; exit 1; }
step_of() { # whatif ARGS... of job $1 + sim: the job's predicted ns
    src=$1
    shift
    rm -f "$tmp/w.h5"
    "$L" whatif "$src" "$@" -o "$tmp/w.h5" >/dev/null 2>"$tmp/w.err" || return 1
    "$L" sim --json "$tmp/w.h5" | python3 -c 'import json,sys; print(json.load(sys.stdin)["job"]["predicted_ns"])'
}

# ---- 1. a synthesized store
"$L" synth --model gpt3-15b --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 16 --layers 8 -o "$tmp/s.h5" \
    >/dev/null 2>&1 || fail "synth"
# an A100 40GB (datasheet: 40 GB HBM2), for layouts that do not fit
python3 -c '
import json, sys
g = json.load(open(sys.argv[1])); g["name"] = "a100-40gb"; g["mem_capacity"] = 40e9
json.dump(g, open(sys.argv[2], "w"))' "$(dirname "$0")/../../data/gpu/a100.json" "$tmp/a100_40.json" || fail "gpu spec"
if [ $# -gt 0 ]; then
    for run in serial launched; do
        pre=""
        [ $run = launched ] && pre="$*"
        # shellcheck disable=SC2086
        $pre "$L" search --from "$tmp/s.h5" --gpu "$tmp/a100_40.json" --tp 1,2,5 --pp 1,2,3 --dp 1,2 --top 0 --json \
            >"$tmp/$run.json" || fail "search --from ($run)"
    done
    python3 - "$tmp/serial.json" "$tmp/launched.json" <<'PY' || exit 1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d.pop("seconds"); d.pop("simulated_per_minute")
assert a["reasons"]["does_not_fit"] and a["ranking"], a
if a != b:
    print("search_from: FAIL: the --from search under the launcher differs from the serial one"); sys.exit(1)
print("search_from: the same --from search (ranking, refusals, OOM lines) under the launcher")
PY
    exit 0
fi
"$L" search --from "$tmp/s.h5" --tp 1,2,5 --pp 1,2,3 --dp 1,2 --top 0 --json >"$tmp/s.json" || fail "search --from"
python3 - "$tmp/s.json" >"$tmp/rows.txt" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
bad = []
if d["candidates"] != 3 * 3 * 2: bad.append("candidates %d, not 3 x 3 x 2" % d["candidates"])
if sum(d["reasons"].values()) != d["candidates"]: bad.append("reasons do not add up")
r = d["ranking"]
if not r or len(r) != d["simulated"]: bad.append("ranking")
# issue 39: ranked by throughput (DP x the job's per-replica batch / step), highest first
if [x["throughput_per_s"] for x in r] != sorted((x["throughput_per_s"] for x in r), reverse=True): bad.append("not by throughput")
if any(abs(x["throughput_per_s"] - x["dp"] / (x["step_ns"] / 1e9)) > 1e-3 for x in r): bad.append("throughput is not DP / step")
if any(x["tokens_per_s"] is not None for x in r): bad.append("tokens/s printed without a known batch")
# TP 5 divides neither 48 heads nor 6144; PP 3 does not divide 8 layers
want_refused = {(t, p, q) for t in (1, 2, 5) for p in (1, 2, 3) for q in (1, 2) if t == 5 or p == 3}
got = {(x["tp"], x["pp"], x["dp"]) for x in d["refused"]}
if got != want_refused: bad.append("refused %s, expected %s" % (sorted(got), sorted(want_refused)))
if any(x["reason"] != "whatif_refused" or not x["rule"] or not x["why"] for x in d["refused"]): bad.append("a refusal without its rule or message")
if sum(d["refused_by_rule"].values()) != d["reasons"]["whatif_refused"]: bad.append("refused_by_rule")
if bad:
    print("search_from: FAIL:", "; ".join(bad)); sys.exit(1)
for x in r:
    print("R", x["tp"], x["pp"], x["dp"], x["step_ns"])
for x in d["refused"]:
    print("X", x["tp"], x["pp"], x["dp"], x["why"])
PY
n=0
while read -r kind tp pp dp rest; do
    if [ "$kind" = R ]; then
        got=$(step_of "$tmp/s.h5" --tp "$tp" --pp "$pp" --dp "$dp") || fail "whatif TP $tp PP $pp DP $dp: $(cat "$tmp/w.err")"
        [ "$got" = "$rest" ] || fail "TP $tp PP $pp DP $dp: search says $rest ns, whatif + sim $got ns"
        n=$((n + 1))
    else
        rm -f "$tmp/w.h5"
        "$L" whatif "$tmp/s.h5" --tp "$tp" --pp "$pp" --dp "$dp" -o "$tmp/w.h5" >/dev/null 2>"$tmp/w.err" &&
            fail "whatif TP $tp PP $pp DP $dp succeeded, the search refused it"
        [ "$(cat "$tmp/w.err")" = "lumosim: error: $rest" ] ||
            fail "TP $tp PP $pp DP $dp: refusal '$rest', whatif says '$(cat "$tmp/w.err")'"
    fi
done <"$tmp/rows.txt"
[ "$n" -ge 8 ] || fail "only $n layouts ranked"
echo "search_from: $n ranked layouts of the synthesized store = whatif + sim; refusals = whatif's messages"

# ---- 2. memory: on the A100 40GB
"$L" search --from "$tmp/s.h5" --gpu "$tmp/a100_40.json" --tp 1,2 --pp 1,2 --dp 1 --top 0 --json >"$tmp/m.json" ||
    fail "search --gpu"
python3 - "$tmp/m.json" >"$tmp/oom.txt" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
oom = [x for x in d["refused"] if x["reason"] == "does_not_fit"]
assert oom and d["reasons"]["does_not_fit"] == len(oom), d
assert all(r["peak_memory_bytes"] <= 40e9 for r in d["ranking"]), d["ranking"]
for x in oom:
    print(x["tp"], x["pp"], x["why"])
PY
while read -r tp pp why; do
    rm -f "$tmp/w.h5"
    "$L" whatif "$tmp/s.h5" --gpu "$tmp/a100_40.json" --tp "$tp" --pp "$pp" --dp 1 -o "$tmp/w.h5" >/dev/null 2>"$tmp/w.err" ||
        fail "whatif --gpu"
    grep -qxF "lumosim: warning: $why" "$tmp/w.err" || fail "TP $tp PP $pp: '$why' is not whatif's warning: $(cat "$tmp/w.err")"
done <"$tmp/oom.txt"
echo "search_from: does_not_fit = whatif's OOM warning ($(wc -l <"$tmp/oom.txt") layouts on 40 GB)"

# ---- 3. --gpus and --global-batch
"$L" search --from "$tmp/s.h5" --tp 1,2,4 --pp 1,2 --dp 1,2 --gpus 8 --global-batch 32 --top 0 --json >"$tmp/g.json" ||
    fail "search --gpus --global-batch"
python3 - "$tmp/g.json" >"$tmp/g.txt" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
n_off = sum(1 for t in (1, 2, 4) for p in (1, 2) for q in (1, 2) if t * p * q != 8)
assert d["reasons"]["gpus_not_divisible"] == n_off, d["reasons"]
assert d["ranking"] and all(x["tp"] * x["pp"] * x["dp"] == 8 for x in d["ranking"])
for x in d["ranking"]:
    assert x["micro_batches"] == 32 // (x["dp"] * 1), x    # the source's micro-batch is 1
    assert abs(x["tokens_per_s"] - 32 * 2048 / (x["step_ns"] / 1e9)) < 0.1, x
    print(x["tp"], x["pp"], x["dp"], x["micro_batches"], x["step_ns"])
PY
while read -r tp pp dp m step; do
    got=$(step_of "$tmp/s.h5" --tp "$tp" --pp "$pp" --dp "$dp" --micro-batches "$m") || fail "whatif: $(cat "$tmp/w.err")"
    [ "$got" = "$step" ] || fail "TP $tp PP $pp DP $dp m $m: search $step ns, whatif + sim $got ns"
done <"$tmp/g.txt"
echo "search_from: --gpus 8 and --global-batch 32 as whatif --micro-batches"
# --top, --csv, --budget-seconds with --from
"$L" search --from "$tmp/s.h5" --tp 1,2 --pp 1,2 --dp 1,2 --top 2 --json --csv "$tmp/f.csv" >"$tmp/top.json" || fail "--top --csv"
"$L" search --from "$tmp/s.h5" --tp 1,2 --pp 1,2 --dp 1,2 --budget-seconds 0.000001 --json >"$tmp/b.json" || fail "--budget-seconds"
python3 - "$tmp/top.json" "$tmp/f.csv" "$tmp/b.json" <<'PY' || fail "--top, --csv or --budget-seconds"
import csv, json, sys
d, rows, b = json.load(open(sys.argv[1])), list(csv.DictReader(open(sys.argv[2]))), json.load(open(sys.argv[3]))
assert len(d["ranking"]) == 2 and d["simulated"] == 8, d
assert len(rows) == 8 and "micro_batches" in rows[0], rows[:1]
assert [int(r["step_ns"]) for r in rows[:2]] == [x["step_ns"] for x in d["ranking"]]
# the budget is spent before the first candidate: none simulated, every feasible one not reached
assert b["simulated"] == 0 and b["not_reached"] == b["feasible"] == 8, b
PY

# ---- 4. a traced training step
python3 "$MAKER" "$tmp/train.json.gz" --layers 4 --steps 1 >/dev/null || fail "make_train_trace"
"$L" build "$tmp/train.json.gz" -o "$tmp/t.h5" >/dev/null 2>&1 || fail "build"
echo '{"layers": 4, "hidden": 1024, "ffn": 4096, "heads": 16, "head_dim": 64, "seq": 1024, "vocab": 32768}' >"$tmp/model.json"
shape="--model $tmp/model.json --micro-batch 4"
# shellcheck disable=SC2086
"$L" search --from "$tmp/t.h5" $shape --tp 1,2 --pp 1,2 --dp 1,2 --top 0 --json >"$tmp/t.json" || fail "search --from trace"
python3 - "$tmp/t.json" >"$tmp/t.txt" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
got = {(x["tp"], x["pp"], x["dp"]) for x in d["ranking"]}
for want in ((2, 1, 1), (1, 2, 1), (1, 1, 2), (1, 1, 1)):
    assert want in got, "TP/PP/DP %s not ranked: %s (refused: %s)" % (want, sorted(got), d["refused"])
for x in d["ranking"]:
    print(x["tp"], x["pp"], x["dp"], x["step_ns"])
PY
while read -r tp pp dp step; do
    # shellcheck disable=SC2086
    got=$(step_of "$tmp/t.h5" $shape --tp "$tp" --pp "$pp" --dp "$dp") || fail "whatif trace: $(cat "$tmp/w.err")"
    [ "$got" = "$step" ] || fail "trace TP $tp PP $pp DP $dp: search $step ns, whatif + sim $got ns"
done <"$tmp/t.txt"
echo "search_from: the traced step's $(wc -l <"$tmp/t.txt") TP/PP/DP variants ranked = whatif + sim"
# issue 39: the -o archive of a search around the trace (no --micro-batch:
# the micro-batch size unknown) says so with "-" in lumosim info, never 0,
# and its rows' throughput is the --json's, each DP x micro-batches / step
# (computed here from the JSON's step)
"$L" search --from "$tmp/t.h5" --dp 1,2 --micro-batches 1,2 --json -o "$tmp/ta.h5" >"$tmp/ta.json" ||
    fail "search --from trace -o"
"$L" info "$tmp/ta.h5" >"$tmp/ta.txt" || fail "info of a --from archive"
grep -q "micro-batch 0" "$tmp/ta.txt" && fail "info prints the unknown micro-batch size as 0: $(cat "$tmp/ta.txt")"
python3 - "$tmp/ta.json" "$tmp/ta.txt" <<'PY' || fail "info of the --from archive: $(cat "$tmp/ta.txt")"
import json, re, sys
d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
rows = re.findall(r"^    \d+\. TP (\d+) PP (\d+) DP (\d+) micro-batch (\S+) 1f1b micro-batches (\d+): step ([\d.]+) s, "
                  r"([\d.]+) (\S+)$", text, re.M)
assert d["throughput_unit"] == "micro-batches/s", d["throughput_unit"]
assert "best 4, by throughput (micro-batches/s):" in text, "header"
assert len(rows) == len(d["ranking"]) == 4, (rows, d["ranking"])
for (tp, pp, dp, mb, nmb, step, thr, unit), x in zip(rows, d["ranking"]):
    want = x["dp"] * x["micro_batches"] / (x["step_ns"] / 1e9)
    assert (int(tp), int(pp), int(dp), int(nmb)) == (x["tp"], x["pp"], x["dp"], x["micro_batches"]), (tp, pp, dp, x)
    assert mb == "-" and x["micro_batch"] is None and unit == "micro-batches/s", (mb, unit)
    assert abs(float(step) - x["step_ns"] / 1e9) <= 0.0005 + 1e-12, (step, x["step_ns"])
    assert abs(x["throughput_per_s"] - want) <= 0.0005 + 1e-12 * want, (x["throughput_per_s"], want)
    assert abs(float(thr) - want) <= 0.005 + 1e-12 * want, (thr, want)
PY
echo "search_from: a --from archive's info: micro-batch '-', each row's throughput = --json's = DP x micro-batches / step"

# ---- 5. --shard I/N and --merge = the unsharded ranking
sharded() { # ARGS...: unsharded, then three shards merged in another order
    "$L" search "$@" --top 0 --json >"$tmp/u.json" || fail "unsharded $sp"
    for i in 0 1 2; do
        rm -f "$tmp/p$i.h5"
        "$L" search "$@" --shard "$i/3" -o "$tmp/p$i.h5" >/dev/null || fail "shard $i of $sp"
    done
    rm -f "$tmp/all.h5"
    "$L" search --merge "$tmp/p2.h5" "$tmp/p0.h5" "$tmp/p1.h5" --top 0 --json -o "$tmp/all.h5" >"$tmp/m.json" ||
        fail "merge of $sp"
    python3 - "$tmp/u.json" "$tmp/m.json" <<'PY' || fail "the merged ranking of $sp differs from the unsharded one"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["ranking"] and a["ranking"] == b["ranking"], (a["ranking"], b["ranking"])
assert a["reasons"] == b["reasons"] and a["feasible"] == b["feasible"] and a["simulated"] == b["simulated"]
assert a.get("refused") == b.get("refused")
PY
    "$L" info "$tmp/all.h5" | grep -q "simulated" || fail "info of the merged file"
}
sp=model
sharded --model gpt3-15b --gpus 16 --global-batch 32 --tp 2,4 --pp 1,2 --micro-batch 1,2 --recompute none \
    --distributed-optimizer on
sp=from
sharded --from "$tmp/s.h5" --tp 1,2 --pp 1,2 --dp 1,2
"$L" search --merge "$tmp/p0.h5" "$tmp/p1.h5" -o "$tmp/two.h5" >/dev/null 2>"$tmp/e" && fail "a merge missing a shard succeeded"
[ "$(wc -l <"$tmp/e")" -eq 1 ] && [ ! -e "$tmp/two.h5" ] || fail "missing shard: $(cat "$tmp/e")"
"$L" search --merge "$tmp/p0.h5" "$tmp/p0.h5" "$tmp/p1.h5" >/dev/null 2>"$tmp/e" && fail "a shard twice was merged"
"$L" search --merge "$tmp/s.h5" >/dev/null 2>"$tmp/e" && fail "a graph store was merged"
[ "$(wc -l <"$tmp/e")" -eq 1 ] || fail "merge of a store: $(cat "$tmp/e")"
for bad in "--shard 3/3" "--shard 1" "--shard -1/2" "--dp 2" "--merge x.h5 --tp 2"; do
    # shellcheck disable=SC2086
    "$L" search --model gpt3-15b --gpus 16 --global-batch 32 $bad >/dev/null 2>&1
    [ $? -eq 2 ] || fail "search $bad did not exit 2"
done
echo "search_from: --shard I/3 + --merge = unsharded (--model and --from spaces); bad merges refused"

# ---- 6. bad input: one line, exit 1, no output
"$L" sim "$tmp/s.h5" -o "$tmp/res.h5" >/dev/null 2>&1 || fail "sim -o"
for src in "$tmp/none.h5" "$tmp/model.json" "$tmp/res.h5"; do
    "$L" search --from "$src" --tp 2 -o "$tmp/o.h5" --csv "$tmp/o.csv" >/dev/null 2>"$tmp/e"
    [ $? -eq 1 ] || fail "--from $src did not exit 1"
    [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -qF "$src" "$tmp/e" || fail "--from $src: not one line naming it: $(cat "$tmp/e")"
    [ ! -e "$tmp/o.h5" ] && [ ! -e "$tmp/o.csv" ] || fail "--from $src left an output"
done
# every what-if refused (no --model for the trace's activations or TP all-reduces)
"$L" search --from "$tmp/t.h5" --tp 2 --pp 2 -o "$tmp/o.h5" >"$tmp/o" 2>"$tmp/e"
[ $? -eq 1 ] || fail "all refused did not exit 1"
[ "$(wc -l <"$tmp/e")" -eq 1 ] && [ ! -e "$tmp/o.h5" ] || fail "all refused: $(cat "$tmp/e")"
grep -q "whatif_refused" "$tmp/o" && grep -q "refused (rule" "$tmp/o" || fail "all refused: no reasons: $(cat "$tmp/o")"
"$L" search --from "$tmp/s.h5" --recompute full >/dev/null 2>&1
[ $? -eq 2 ] || fail "--from --recompute did not exit 2"
echo "search_from: bad input: one line, exit 1, nothing written"
