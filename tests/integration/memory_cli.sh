#!/bin/sh
# memory_cli.sh DATA  (environment: LUMOSIM, JSON_CHECK)
#
# The per-GPU memory estimate (docs/memory.md) end to end:
#   - GPT-3 175B at TP 8 x PP 2 (about 196 GB of weights, gradients and
#     optimizer state per GPU) on 80 GB A100s: synth refuses it by default
#     (the memory check's convention); with --no-memory-check it is
#     synthesized, flagged OOM on stderr (stage, estimate, capacity) and in
#     the store; info shows it; sim flags it in its table, its JSON
#     ("memory.oom": true) and on stderr;
#   - a small job fits: nothing flagged, "oom": false;
#   - a store built from a trace has no estimate: sim says nothing about
#     memory.
set -u
data=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "memory_cli: $*"; exit 1; }
big="--model gpt3-175b --tp 8 --pp 2 --dp 1 --micro-batch 1 --global-batch 8 --gpu a100"

# refused by default: one error line naming the stage and the capacity
"$LUMOSIM" synth $big -o "$tmp/big.h5" >"$tmp/out" 2>"$tmp/err" && fail "175B TP8 PP2 on A100 accepted"
grep -q "needs [0-9.]* GB per GPU on pipeline stage 0" "$tmp/err" && grep -q "a100's 80.0 GB" "$tmp/err" ||
    fail "refusal: $(cat "$tmp/err")"
[ -e "$tmp/big.h5" ] && fail "a refused job was written"

# synthesized anyway: OOM loudly, on stderr and stdout
"$LUMOSIM" synth $big --no-memory-check -o "$tmp/big.h5" >"$tmp/out" 2>"$tmp/err" || fail "synth --no-memory-check: $(cat "$tmp/err")"
grep -q "^lumosim: warning: OOM: pipeline stage 0 needs an estimated [0-9.]* GB per GPU, more than the a100's 80.0 GB" \
    "$tmp/err" || fail "no OOM warning from synth: $(cat "$tmp/err")"
grep -q "^memory per GPU (estimate): peak [0-9.]* GB on pipeline stage 0 (GPUs 0-7); the a100 has 80.00 GB: OOM" "$tmp/out" ||
    fail "synth's summary: $(cat "$tmp/out")"
[ "$(grep -c '^  stage [01]: .*OOM$' "$tmp/out")" -eq 2 ] || fail "synth's per-stage lines: $(cat "$tmp/out")"
"$LUMOSIM" info "$tmp/big.h5" >"$tmp/info" || fail "info failed"
grep -q "memory per GPU (estimate from the model shape and layout): peak .* the a100 has 80.00 GB: OOM" "$tmp/info" ||
    fail "info: $(grep -i memory "$tmp/info")"

# sim: the JSON, the table and stderr
"$LUMOSIM" sim --json "$tmp/big.h5" >"$tmp/sim.json" 2>"$tmp/err" || fail "sim failed: $(cat "$tmp/err")"
"$JSON_CHECK" "$tmp/sim.json" "memory.oom==true" "memory.worst_stage==0" "memory.gpu==a100" \
    "memory.capacity_bytes==80000000000" "memory.peak_bytes>196e9" "memory.peak_bytes>@memory.capacity_bytes" \
    "len(memory.stages)==2" "memory.stages.*.oom==true" "memory.stages.0.inflight==2" "memory.stages.1.inflight==1" \
    "memory.stages.0.total_bytes>@memory.stages.1.total_bytes" "memory.tp==8" "memory.pp==2" \
    "memory.stages.*.optimizer_bytes>100e9" "job.predicted_ns>0" >"$tmp/check" 2>&1 ||
    fail "sim --json: $(grep -v '^ok' "$tmp/check" | head -n 5)"
grep -q "^lumosim: warning: OOM: pipeline stage 0 needs an estimated" "$tmp/err" || fail "no OOM warning from sim --json"
"$LUMOSIM" sim "$tmp/big.h5" >"$tmp/sim.txt" 2>"$tmp/err" || fail "sim (table) failed"
grep -q "^memory per GPU (estimate from the model shape and layout): peak [0-9.]* GB on pipeline stage 0; the a100 has 80.00 GB: OOM, does not fit" \
    "$tmp/sim.txt" || fail "sim's table: $(grep -i memory "$tmp/sim.txt")"
grep -q "OOM: pipeline stage 0" "$tmp/err" || fail "no OOM warning from sim"

# a small job fits: nothing flagged
small="--model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 8 --gpu a100"
"$LUMOSIM" synth $small -o "$tmp/small.h5" >"$tmp/out" 2>"$tmp/err" || fail "small synth failed"
grep -q OOM "$tmp/out" "$tmp/err" && fail "a small job flagged OOM: $(cat "$tmp/out" "$tmp/err")"
"$LUMOSIM" sim --json "$tmp/small.h5" >"$tmp/sim.json" 2>"$tmp/err" || fail "small sim failed"
"$JSON_CHECK" "$tmp/sim.json" "memory.oom==false" "memory.stages.*.oom==false" "memory.peak_bytes<80e9" \
    "memory.peak_bytes>1e9" "len(memory.stages)==2" >"$tmp/check" 2>&1 ||
    fail "small sim --json: $(grep -v '^ok' "$tmp/check" | head -n 5)"
[ -s "$tmp/err" ] && fail "small sim wrote to stderr: $(cat "$tmp/err")"
"$LUMOSIM" sim "$tmp/small.h5" 2>/dev/null | grep -q "80.00 GB: fits" || fail "small sim's table does not say it fits"

# a store from a trace: no estimate, nothing said
"$LUMOSIM" build "$data/training_step.json" -o "$tmp/trace.h5" >/dev/null 2>&1 || fail "build failed"
"$LUMOSIM" sim --json "$tmp/trace.h5" >"$tmp/sim.json" 2>"$tmp/err" || fail "trace sim failed"
# (the model estimate is the top-level "memory"; a traced rank's own
# profiler figures are graph.memory, "none" for this trace: docs/memory.md)
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert "memory" not in d, "top-level memory"
for r in d.get("ranks", [d]):
    m = r["graph"]["memory"]
    assert m["source"] == "none" and m["peak_allocated_bytes"] is None, m
' "$tmp/sim.json" || fail "a trace's report has a model memory estimate, or its graph.memory is not none"
"$LUMOSIM" sim "$tmp/trace.h5" 2>&1 | grep -qi "memory per GPU\|OOM" && fail "a trace's table speaks of memory"
"$LUMOSIM" info "$tmp/trace.h5" | grep -qi "memory per GPU" && fail "info speaks of a trace's memory"
echo "ok: OOM flagged by synth, info and sim; small job fits; traces say nothing"
