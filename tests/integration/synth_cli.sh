#!/bin/sh
# synth_cli.sh MODE  (environment: LUMOSIM, JSON_CHECK)
#
#   run   lumosim synth a tiny TP2 PP2 DP2 job, lumosim sim it: every GPU
#         simulated with the job, predicted times present, actual times
#         absent (null), never 0; the store holds 8 GPUs
#   bad   impossible configurations: exit 1, one "lumosim: error:" line
#         naming the numbers, empty stdout, no output file; usage errors exit 2
set -u
mode=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "synth_cli $mode: $*"; exit 1; }
tiny="--model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 8"

case $mode in
run)
    "$LUMOSIM" synth $tiny -o "$tmp/job.h5" >"$tmp/out" 2>"$tmp/err" || fail "synth failed: $(cat "$tmp/err")"
    [ -s "$tmp/job.h5" ] || fail "no store written"
    "$LUMOSIM" info "$tmp/job.h5" >"$tmp/info" || fail "info failed"
    grep -q "graph store" "$tmp/info" || fail "info does not call it a graph store"
    grep -q "8 GPUs" "$tmp/info" || fail "the store does not hold 8 GPUs"
    "$LUMOSIM" sim --json "$tmp/job.h5" >"$tmp/sim.json" || fail "sim failed"
    "$JSON_CHECK" "$tmp/sim.json" >/dev/null 2>&1 || true
    grep -q '"actual_ns":null' "$tmp/sim.json" || fail "actual times are not absent (null)"
    grep -q '"actual_ns":0' "$tmp/sim.json" && fail "an actual time printed as 0"
    n=$(grep -o '"coupled":true' "$tmp/sim.json" | wc -l)
    [ "$n" -eq 8 ] || fail "$n of 8 GPUs simulated with the job"
    "$LUMOSIM" sim "$tmp/job.h5" >"$tmp/sim.txt" || fail "sim (table) failed"
    grep -q "no observed times" "$tmp/sim.txt" || fail "the table does not say nothing was observed"
    grep -q "^job: predicted" "$tmp/sim.txt" || fail "no job line"
    # interleaved, 4 stages, 2 chunks
    "$LUMOSIM" synth --model gpt3-15b --layers 8 --tp 1 --pp 4 --dp 1 --micro-batch 1 --global-batch 8 \
        --schedule interleaved:2 -o "$tmp/il.h5" || fail "interleaved synth failed"
    "$LUMOSIM" sim "$tmp/il.h5" >/dev/null || fail "interleaved sim failed"
    echo "ok: synthesized job simulated, actual absent"
    ;;
bad)
    expect() { # expect CODE NEEDLE ARGS...
        code=$1 needle=$2
        shift 2
        "$LUMOSIM" synth "$@" -o "$tmp/bad.h5" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ $rc -eq "$code" ] || fail "exit $rc, expected $code: $*"
        [ -s "$tmp/out" ] && fail "stdout not empty: $*"
        [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "not one error line: $(cat "$tmp/err")"
        grep -q -- "$needle" "$tmp/err" || fail "'$needle' not in: $(cat "$tmp/err")"
        [ -e "$tmp/bad.h5" ] && fail "a file was written: $*"
        ls "$tmp" | grep -q tmp- && fail "a temporary file was left: $*"
        return 0
    }
    expect 1 "does not match --gpus 16" $tiny --gpus 16
    expect 1 "5 layers are not divisible by PP x V = 2 x 1" $tiny --layers 5
    expect 1 "hidden size 6145 is not divisible by TP = 2" $tiny --hidden 6145
    expect 1 "47 attention heads are not divisible by TP = 2" $tiny --heads 47
    expect 1 "global batch 9 is not divisible by micro-batch x DP = 1 x 2 = 2" $tiny --global-batch 9
    expect 1 "unknown model" --model gpt3-13b --tp 1 --pp 1 --dp 1 --micro-batch 1 --global-batch 1
    expect 1 "divisible by PP = 2" $tiny --schedule interleaved:2 --global-batch 6
    expect 2 "unknown option" $tiny --frobnicate 3
    expect 2 "positive integer" $tiny --tp x
    expect 2 "needs --model" --tp 2
    echo "ok: bad configurations refused, nothing written"
    ;;
*) fail "unknown mode" ;;
esac
