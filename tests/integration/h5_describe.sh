#!/bin/sh
# h5_describe.sh CHECKER TRACE...: units, enum tables and the kernel
# summary of the files lumosim writes (h5_describe_check.c says what is
# checked): a graph store built from the traces, a result archive of two
# runs of it (the second with the critical path and an edge class dropped),
# a streamed store (synth) and its archive (nothing observed: the actual
# figures are 0), each file checked whole.
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
check=$1
shift
for a in "$@"; do [ -e "$a" ] || { echo "SKIP: $a missing"; exit 77; }; done
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$LUMOSIM" build "$@" -o "$t/job.h5" >/dev/null || fail "build"
"$LUMOSIM" sim "$t/job.h5" -o "$t/res.h5" --run base >/dev/null || fail "sim base"
"$LUMOSIM" sim "$t/job.h5" -o "$t/res.h5" --run noevent --critical-path --drop-edges event >/dev/null ||
    fail "sim noevent"
"$LUMOSIM" synth --model gpt3-15b --layers 2 --tp 2 --pp 2 --dp 1 --micro-batch 1 --global-batch 2 -o "$t/syn.h5" >/dev/null 2>&1 ||
    fail "synth"
"$LUMOSIM" sim "$t/syn.h5" -o "$t/synres.h5" >/dev/null || fail "sim synth"
"$LUMOSIM" search --model gpt3-15b --gpus 8 --global-batch 16 --tp 2,4 --micro-batch 1 --recompute none \
    --distributed-optimizer on -o "$t/search.h5" >/dev/null || fail "search"
"$check" "$t/job.h5" "$t/res.h5" "$t/syn.h5" "$t/synres.h5" "$t/search.h5" || fail "see above"
