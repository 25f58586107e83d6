#!/bin/sh
# whatif_memory.sh   (environment: LUMOSIM)
#
# A what-if of a synthesized job carries a memory estimate for the new job
# (root attribute "memory", memest.h): for each transformation below, the
# estimate whatif writes must be exactly the one lumosim synth writes for
# the same target configuration (the same shape, layers, layout,
# micro-batches and GPU); one past the GPU's memory is flagged OOM by
# whatif (a warning) and by sim, and the store is still written. A store
# built from a trace has no estimate and gets none.
set -u
: "${LUMOSIM:?}"
L=$LUMOSIM
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "whatif_memory: FAIL: $*"; exit 1; }
mem() { h5dump -a /memory "$1" 2>/dev/null | sed -n '/DATA {/,/}/p' | tr -d ' \n'; }
base="--model gpt3-15b --micro-batch 1"
"$L" synth $base --layers 8 --tp 2 --pp 2 --dp 1 --global-batch 8 -o "$tmp/a.h5" >/dev/null || fail "synth a"
[ -n "$(mem "$tmp/a.h5")" ] || fail "synth wrote no memory estimate"
check() { # name, whatif options, synth options of the same target
    "$L" whatif "$tmp/a.h5" $2 -o "$tmp/w.$1.h5" >/dev/null 2>"$tmp/err.$1" || fail "whatif $2: $(cat "$tmp/err.$1")"
    "$L" synth $base $3 --no-memory-check -o "$tmp/s.$1.h5" >/dev/null 2>&1 || fail "synth $3"
    w=$(mem "$tmp/w.$1.h5")
    s=$(mem "$tmp/s.$1.h5")
    [ -n "$w" ] || fail "whatif $2 wrote no memory estimate"
    [ "$w" = "$s" ] || fail "whatif $2: estimate differs from synth $3:
  whatif: $w
  synth:  $s"
}
check tp1 "--tp 1" "--layers 8 --tp 1 --pp 2 --dp 1 --global-batch 8"
check pp1 "--pp 1" "--layers 8 --tp 2 --pp 1 --dp 1 --global-batch 8"
check layers "--layers 16" "--layers 16 --tp 2 --pp 2 --dp 1 --global-batch 8"
check dp2 "--dp 2" "--layers 8 --tp 2 --pp 2 --dp 2 --global-batch 16"
check gpu "--gpu a100" "--layers 8 --tp 2 --pp 2 --dp 1 --global-batch 8 --gpu a100"
check mb "--micro-batches 4" "--layers 8 --tp 2 --pp 2 --dp 1 --global-batch 4"
# past the GPU's memory: flagged, not refused
"$L" whatif "$tmp/a.h5" --layers 64 --tp 1 -o "$tmp/big.h5" >/dev/null 2>"$tmp/big.err" || fail "whatif big refused: $(cat "$tmp/big.err")"
grep -q "warning: OOM" "$tmp/big.err" || fail "whatif of a job past 80 GB printed no OOM warning: $(cat "$tmp/big.err")"
mem "$tmp/big.h5" | grep -q '"oom":true' || fail "the big job's estimate is not OOM"
"$L" sim "$tmp/big.h5" >"$tmp/big.out" 2>"$tmp/big.simerr" || fail "sim of the big job"
grep -q "OOM" "$tmp/big.out" "$tmp/big.simerr" || fail "sim of the big job says nothing of OOM"
grep -q "OOM" "$tmp/err.tp1" && fail "a job that fits was flagged OOM"
# the result archive keeps the estimate with the run, and the HTML reports
# (from the archive, from the store) show it, OOM included
"$L" sim "$tmp/big.h5" -o "$tmp/big.res.h5" >/dev/null 2>&1 || fail "sim -o of the big job"
h5dump -a /runs/sim/provenance/memory "$tmp/big.res.h5" 2>/dev/null | grep -q '"oom":true' || fail "the archive's run has no OOM estimate"
"$L" report "$tmp/big.res.h5" --html "$tmp/big.html" >/dev/null 2>&1 || fail "report of the archive"
grep -q "Memory per GPU" "$tmp/big.html" && grep -q "OOM, does not fit" "$tmp/big.html" ||
    fail "the archive's HTML report does not show the OOM estimate"
"$L" report "$tmp/big.h5" --html "$tmp/bigs.html" >/dev/null 2>&1 || fail "report of the store"
grep -q "OOM, does not fit" "$tmp/bigs.html" || fail "the store's HTML report does not show the OOM estimate"
"$L" report "$tmp/w.tp1.h5" --html "$tmp/fits.html" >/dev/null 2>&1 || fail "report of a job that fits"
grep -q "Memory per GPU" "$tmp/fits.html" && ! grep -q "OOM" "$tmp/fits.html" || fail "a job that fits: no estimate, or OOM"

# a trace's store: no estimate in, none out, nothing in its report
"$L" build "$(dirname "$0")/../data/hip_trace.json" -o "$tmp/t.h5" >/dev/null || fail "build"
"$L" whatif "$tmp/t.h5" --slow-gpu 0:1.5 -o "$tmp/t2.h5" >/dev/null 2>&1 || fail "whatif of a trace"
[ -z "$(mem "$tmp/t2.h5")" ] || fail "a trace's what-if got a memory estimate"
"$L" report "$tmp/t.h5" --html "$tmp/t.html" >/dev/null 2>&1 || fail "report of a trace's store"
grep -q "Memory per GPU" "$tmp/t.html" && fail "a trace's report shows a memory estimate"
echo "whatif_memory: 6 what-ifs carry synth's own estimate; OOM flagged by whatif, sim, the archive and the HTML"
