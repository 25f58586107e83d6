#!/bin/sh
# progress_tty.sh [TRACE]: synth, sim, whatif, build, collect and report
# show a progress line when stderr is a terminal (a pseudo-terminal from
# script(1)), and print nothing of it when stderr is a file; the line is
# cleared before the command ends. TRACE (default tests/data/hip_trace.json)
# is what build and report read.
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
command -v script >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1 || { echo "SKIP: script(1) (bsdutils) and python3 are needed"; exit 77; }
script -qec true /dev/null >/dev/null 2>&1 || { echo "SKIP: script(1) cannot open a pseudo-terminal here"; exit 77; }
trace=${1:-$(dirname "$0")/../data/hip_trace.json}
[ -f "$trace" ] || { echo "SKIP: $trace is missing"; exit 77; }
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "progress_tty: FAIL: $*"; exit 1; }
synth="synth --model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 4"
# shellcheck disable=SC2086
script -qec "$LUMOSIM $synth -o $t/a.h5" /dev/null >"$t/tty1" 2>&1 || fail "synth on a terminal"
script -qec "$LUMOSIM sim $t/a.h5 -o $t/r.h5" /dev/null >"$t/tty2" 2>&1 || fail "sim on a terminal"
script -qec "$LUMOSIM whatif $t/a.h5 --dp 4 -o $t/w.h5" /dev/null >"$t/tty3" 2>&1 || fail "whatif on a terminal"
script -qec "$LUMOSIM build '$trace' -o $t/g.h5" /dev/null >"$t/tty4" 2>&1 || fail "build on a terminal"
script -qec "$LUMOSIM collect $t/r.h5 -o $t/c.csv" /dev/null >"$t/tty5" 2>&1 || fail "collect on a terminal"
script -qec "$LUMOSIM report $t/r.h5 --html $t/p.html" /dev/null >"$t/tty6" 2>&1 || fail "report (archive) on a terminal"
script -qec "$LUMOSIM report '$trace' --html $t/q.html" /dev/null >"$t/tty7" 2>&1 || fail "report (trace) on a terminal"
for pair in "tty1:lumosim: synth: " "tty2:lumosim: sim: loading " "tty2:lumosim: sim: writing " "tty3:lumosim: whatif: reading " \
    "tty4:lumosim: build: writing 1 graphs to " "tty5:lumosim: collect: 0 of 1 archives read" \
    "tty6:lumosim: report: reading " "tty6:lumosim: report: writing " "tty7:lumosim: report: writing "; do
    f=${pair%%:*} want=${pair#*:}
    grep -q "$want" "$t/$f" || fail "no '$want' on the terminal: $(tr '\r\033' '|~' <"$t/$f" | head -c 300)"
done
# cleared: the last progress text is followed by the erase sequence
for f in tty1 tty2 tty3 tty4 tty5 tty6 tty7; do
    python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
last = max(b.rfind(b"lumosim: " + c + b": ") for c in (b"synth", b"sim", b"whatif", b"build", b"collect", b"report"))
sys.exit(0 if last >= 0 and b.find(b"\r\x1b[K", last) > last else 1)' "$t/$f" || fail "$f: the progress line is not cleared"
done
# not a terminal: nothing of it
# shellcheck disable=SC2086
"$LUMOSIM" $synth -o "$t/b.h5" >"$t/o1" 2>"$t/e1" || fail "synth"
"$LUMOSIM" sim "$t/b.h5" -o "$t/r2.h5" >"$t/o2" 2>"$t/e2" || fail "sim"
"$LUMOSIM" build "$trace" -o "$t/g2.h5" >"$t/o3" 2>"$t/e3" || fail "build"
"$LUMOSIM" collect "$t/r2.h5" -o "$t/c2.csv" >"$t/o4" 2>"$t/e4" || fail "collect"
"$LUMOSIM" report "$t/r2.h5" --html "$t/p2.html" >"$t/o5" 2>"$t/e5" || fail "report"
if grep -q "lumosim: synth: \|lumosim: sim: \|lumosim: build: \|lumosim: collect: \|lumosim: report: " \
    "$t/e1" "$t/e2" "$t/e3" "$t/e4" "$t/e5"; then fail "a progress line on a file: $(cat "$t/e1" "$t/e2" "$t/e3" "$t/e4" "$t/e5")"; fi
echo "progress_tty: synth, sim, whatif, build, collect and report show progress on a terminal only"
