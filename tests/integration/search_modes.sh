#!/bin/sh
# search_modes.sh   (environment: LUMOSIM)
#
# lumosim search over the modern modes (issue 36: EP, CP, FSDP), checked
# against what is computed apart from the search:
#   - a MoE model's search tries expert parallelism by default (the powers of
#     two dividing its experts), and its best layouts, synthesized by lumosim
#     synth as whole jobs and simulated by lumosim sim, give the searched
#     step to the nanosecond (EP candidates run whole; CP candidates as one
#     replica with --dp-cost, FSDP too);
#   - the counts: every candidate once; FSDP with the distributed optimizer
#     and FSDP over one GPU counted redundant, as many as the space holds
#     (computed here from the lists);
#   - memory: every ranked row carries its peak, within the GPU's 80 GB;
#   - an EP that divides no expert count refuses every candidate, naming it;
#   - the archive (-o) and --merge keep CP, EP and FSDP;
#   - synth's job options (--seq, --precision, --kernels, ...) fix every
#     candidate's job: its rows are synth + sim with them to the nanosecond;
#   - bad lists and values exit 2 with one line.
set -u
: "${LUMOSIM:?}"
L=$LUMOSIM
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "search_modes: FAIL: $*"; exit 1; }
step_of() { # synth ARGS... : the whole job's step (ns) by synth + sim
    rm -f "$tmp/j.h5"
    "$L" synth "$@" --no-memory-check -o "$tmp/j.h5" >/dev/null 2>"$tmp/err" || fail "synth $*: $(cat "$tmp/err")"
    "$L" sim --json "$tmp/j.h5" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["job"]["predicted_ns"])'
}

# 1. MoE: EP searched by default
moe="--model qwen3-30b-a3b --gpus 16 --global-batch 64 --tp 1,2 --pp 1,2 --micro-batch 1 --schedule 1f1b --recompute full --distributed-optimizer on"
# shellcheck disable=SC2086
"$L" search $moe --top 0 --json >"$tmp/moe.json" || fail "MoE search"
python3 - "$tmp/moe.json" >"$tmp/moe.txt" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
r = d["ranking"]
eps = sorted({x["ep"] for x in r})
# powers of two dividing 128 experts: 1..128; the ranked ones all divide a stage's GPUs
assert len(r) >= 3 and max(eps) > 1, "EP not searched: %s" % eps
for x in r:
    assert 0 < x["peak_memory_bytes"] <= 80e9, x
    assert 16 % (x["tp"] * x["pp"]) == 0 and x["dp"] == 16 // (x["tp"] * x["pp"]), x
    assert (x["tp"] * x["dp"]) % x["ep"] == 0, x
for x in r[:3]:
    print(x["tp"], x["pp"], x["dp"], x["ep"], x["step_ns"])
PY
while read -r tp pp dp ep step; do
    got=$(step_of --model qwen3-30b-a3b --tp "$tp" --pp "$pp" --dp "$dp" --ep "$ep" --micro-batch 1 --global-batch 64 \
        --recompute full --distributed-optimizer --sequence-parallel)
    [ "$got" = "$step" ] || fail "MoE TP $tp PP $pp DP $dp EP $ep: search $step ns, synth + sim $got ns"
done <"$tmp/moe.txt"
# an EP dividing no expert count: every candidate refused, the check named
# shellcheck disable=SC2086
"$L" search $moe --ep 3 --json >"$tmp/ep3.json" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "--ep 3: exit $rc, expected 1 (nothing feasible)"
grep -q "is feasible" "$tmp/err" || fail "--ep 3: $(cat "$tmp/err")"
python3 - "$tmp/ep3.json" <<'PY' || fail "--ep 3: $(cat "$tmp/err")"
import json, sys
d = json.load(open(sys.argv[1]))
# TP x PP in (1,2) x (1,2) with EP 3: 128 experts are not divisible by 3
assert d["ranking"] == [] and d["reasons"]["shape_not_divisible"] == d["candidates"] == 4, d["reasons"]
PY

# 2. dense: CP and FSDP
dense="--model llama3-8b --gpus 8 --global-batch 8 --tp 1,2 --pp 1 --micro-batch 1 --schedule 1f1b --recompute full --distributed-optimizer off,on --cp 1,2 --fsdp off,full,2"
# shellcheck disable=SC2086
"$L" search $dense --top 0 --json -o "$tmp/s.h5" >"$tmp/d.json" || fail "dense search"
python3 - "$tmp/d.json" >"$tmp/d.txt" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
# the space by hand: TP in 1,2 x dist-opt off,on x CP 1,2 x FSDP off,full,2 (PP 1, mb 1, 1F1B, full)
total = red = 0
for tp in (1, 2):
    for dopt in (0, 1):
        for cp in (1, 2):
            for fs in ("off", "full", 2):
                total += 1
                dp = 8 // (tp * cp)
                g = 0 if fs == "off" else dp if fs == "full" else fs
                if dopt and dp == 1:
                    red += 1          # the distributed optimizer at DP 1
                elif g == 1 and cp == 1:
                    red += 1          # FSDP over one GPU
                elif g and dopt:
                    red += 1          # FSDP shards the optimizer itself
c = d["reasons"]
assert d["candidates"] == total and sum(c.values()) == total, (c, total)
assert c["redundant"] == red, (c, red)
r = d["ranking"]
assert any(x["cp"] == 2 for x in r) and any(x["fsdp"] > 0 for x in r), r
# FSDP at TP 2 too: one TP rank per stage in the search (fsdp.c with tp_one)
picks = [next(x for x in r if x["cp"] == 2 and x["fsdp"] == 0 and x["distributed_optimizer"]),
         next(x for x in r if x["cp"] == 2 and x["fsdp"] > 0),
         next(x for x in r if x["cp"] == 1 and x["fsdp"] > 0),
         next(x for x in r if x["cp"] == 1 and x["fsdp"] > 0 and x["tp"] == 2)]
for x in picks:
    print(x["tp"], x["dp"], x["cp"], x["fsdp"], 1 if x["distributed_optimizer"] else 0, x["step_ns"])
PY
while read -r tp dp cp fs dopt step; do
    extra=""
    [ "$fs" -gt 0 ] && extra="$extra --fsdp $fs"
    [ "$dopt" -eq 1 ] && extra="$extra --distributed-optimizer"
    # shellcheck disable=SC2086
    got=$(step_of --model llama3-8b --tp "$tp" --pp 1 --dp "$dp" --cp "$cp" --micro-batch 1 --global-batch 8 \
        --recompute full $extra)
    [ "$got" = "$step" ] || fail "TP $tp DP $dp CP $cp FSDP $fs dist-opt $dopt: search $step ns, synth + sim $got ns"
done <"$tmp/d.txt"
# the archive keeps the modes: --merge of the one file gives the same ranking
"$L" search --merge "$tmp/s.h5" --top 0 --json >"$tmp/m.json" || fail "--merge"
python3 - "$tmp/d.json" "$tmp/m.json" <<'PY' || exit 1
import json, sys
a, b = (json.load(open(f))["ranking"] for f in sys.argv[1:3])
key = lambda x: (x["tp"], x["dp"], x["cp"], x["ep"], x["fsdp"], x["distributed_optimizer"], x["step_ns"])
assert [key(x) for x in a] == [key(x) for x in b], "the archive lost a mode"
PY

# 3. the job's own options (synth's, fixed for every candidate): a
# torchtitan-like job, FP8 with eager kernels and loss on the 96 GB part at
# 2,048 tokens. Each row is synth + sim with the same options to the
# nanosecond, and the options count: the plain job's rows differ, its
# tokens/s 8 sequences of 2,048 tokens per step (not the model's 8,192).
job="--seq 2048 --layers 4 --precision fp8 --kernels eager --loss eager --gpu h100-96gb --attention-kernel fa2"
tt="--model llama3-8b --gpus 8 --global-batch 8 --tp 1,2 --pp 1 --micro-batch 1 --schedule 1f1b --recompute none --distributed-optimizer off --fsdp full"
# shellcheck disable=SC2086
"$L" search $tt $job --top 0 --json >"$tmp/j.json" || fail "search with the job's options"
# shellcheck disable=SC2086
"$L" search $tt --seq 2048 --layers 4 --top 0 --json >"$tmp/p.json" || fail "search of the plain job"
python3 - "$tmp/j.json" "$tmp/p.json" >"$tmp/j.txt" <<'PY' || exit 1
import json, sys
j, p = (json.load(open(f)) for f in sys.argv[1:3])
rj, rp = j["ranking"], p["ranking"]
assert len(rj) == len(rp) == 2, (rj, rp)
for x in rj + rp:
    want = 8 * 2048 / (x["step_ns"] * 1e-9)  # the global batch's tokens per step
    assert abs(x["tokens_per_s"] - want) <= 1e-6 * want, (x, want)
step = lambda r, tp: next(x["step_ns"] for x in r if x["tp"] == tp)
for tp in (1, 2):
    assert step(rj, tp) != step(rp, tp), "the job's options changed no step (TP %d)" % tp
for x in rj:
    print(x["tp"], x["dp"], x["fsdp"], x["step_ns"])
PY
while read -r tp dp fs step; do
    # shellcheck disable=SC2086
    got=$(step_of --model llama3-8b --tp "$tp" --pp 1 --dp "$dp" --fsdp "$fs" --micro-batch 1 --global-batch 8 $job)
    [ "$got" = "$step" ] || fail "with $job, TP $tp DP $dp FSDP $fs: search $step ns, synth + sim $got ns"
done <"$tmp/j.txt"
# sharded, the job's options go with each part: two shards merge into the
# unsharded ranking; a shard of the plain job is another search, refused
for i in 0 1; do
    # shellcheck disable=SC2086
    "$L" search $tt $job --shard "$i/2" -o "$tmp/sh$i.h5" >/dev/null || fail "shard $i/2 with the job's options"
done
# shellcheck disable=SC2086
"$L" search $tt --seq 2048 --layers 4 --shard 1/2 -o "$tmp/plain1.h5" >/dev/null || fail "shard 1/2 of the plain job"
"$L" search --merge "$tmp/sh0.h5" "$tmp/sh1.h5" --top 0 --json >"$tmp/jm.json" || fail "--merge of the job's shards"
python3 - "$tmp/j.json" "$tmp/jm.json" <<'PY' || exit 1
import json, sys
a, b = (json.load(open(f))["ranking"] for f in sys.argv[1:3])
assert [(x["tp"], x["step_ns"]) for x in a] == [(x["tp"], x["step_ns"]) for x in b], (a, b)
PY
# (--gpu is search's own option, not one of the job's)
"$L" info "$tmp/sh0.h5" | grep -qxF "  job options: --seq 2048 --layers 4 --precision fp8 --kernels eager --loss eager --attention-kernel fa2" ||
    fail "info of a shard does not list the job's options: $("$L" info "$tmp/sh0.h5" | grep 'job options')"
"$L" search --merge "$tmp/sh0.h5" "$tmp/plain1.h5" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] && grep -q "not a shard of the search" "$tmp/err" ||
    fail "--merge of shards with other job options: exit $rc, $(cat "$tmp/err")"
# a job option with --from (the store's job) or --merge: one line, exit 2
"$L" search --from "$tmp/s.h5" --kernels eager >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "--kernels" "$tmp/err" ||
    fail "--from with --kernels: exit $rc, $(cat "$tmp/err")"

# 4. bad lists and values
for bad in "--fsdp half" "--cp 0" "--ep 1,x" "--kernels bogus" "--seq 0"; do
    # shellcheck disable=SC2086
    "$L" search --model llama3-8b --gpus 8 --global-batch 8 $bad >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || fail "$bad: exit $rc, expected 2"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$bad: not one line: $(cat "$tmp/err")"
done
echo "search_modes: ok"
