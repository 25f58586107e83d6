#!/bin/bash
# dash_stdout.sh TRACE   (environment: LUMOSIM)
# "-" names stdout for every writer that takes a text output (issue 40:
# `collect -o -` wrote a file named "-"): the CSV and the predicted trace
# come out on stdout, nothing named "-" appears, and an HDF5 output given as
# "-" is refused with one line before any work, writing nothing.
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
L=$LUMOSIM
trace=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-dash.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$L" build "$trace" -o s.h5 >/dev/null && "$L" sim s.h5 -o r.h5 >/dev/null || { echo "FAIL: build/sim"; exit 1; }

# collect -o -: the header line and one row per GPU (the archive has 1) on stdout
"$L" collect r.h5 -o - >out 2>err || fail "collect -o -: exit $?: $(cat err)"
[ "$(head -n 1 out | cut -d, -f1-3)" = "file,run,gpu" ] || fail "collect -o -: no CSV header on stdout: $(head -c 200 out)"
[ "$(wc -l <out)" -eq 2 ] || fail "collect -o -: want 2 lines on stdout, got $(wc -l <out)"
# the trace of a replay: a JSON object with traceEvents, on stdout
"$L" sim s.h5 --trace-out - >out 2>err || fail "sim --trace-out -: exit $?: $(cat err)"
grep -q '"traceEvents"' out || fail "sim --trace-out -: no trace on stdout"
[ ! -e ./- ] || fail "a file named '-' was written"

# HDF5 to stdout: refused, one line, exit 1, nothing written
for cmd in "synth --model gpt3-15b --layers 2 --tp 1 --pp 1 --dp 1 --micro-batch 1 --global-batch 1 -o -" \
           "build $trace -o -" "sim s.h5 -o -"; do
    # shellcheck disable=SC2086
    "$L" $cmd >out 2>err
    rc=$?
    [ $rc -ne 0 ] || fail "$cmd: exit 0"
    [ "$(wc -l <err)" -eq 1 ] && grep -q "cannot go to stdout" err || fail "$cmd: want one line 'cannot go to stdout': $(cat err)"
    [ ! -s out ] || fail "$cmd: wrote to stdout"
    [ ! -e ./- ] || fail "$cmd: a file named '-' was written"
done
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo PASS
