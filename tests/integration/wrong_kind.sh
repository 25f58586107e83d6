#!/bin/sh
# wrong_kind.sh   (environment: LUMOSIM; issue 39, bad input)
#
# A lumosim HDF5 file of another kind than a command takes (graph store,
# result archive, search result) is refused with one line that names the
# file, says what it is and what reads it (lsim_store_refuse_kind); the
# exit status is not 0, no output is written and the input is unchanged.
# Also report's refusals of a --detail summary archive it cannot draw: one
# written by an older lumosim (no gpus/has_place, made here with h5py), and
# one of mixed latency modes asked for --csv (skipped without h5py).
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
L=$LUMOSIM
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "wrong_kind: FAIL: $*"; exit 1; }

"$L" synth --model gpt3-15b --layers 2 --tp 2 --pp 1 --dp 1 --micro-batch 1 --global-batch 2 -o g.h5 >/dev/null ||
    fail "synth"
"$L" sim g.h5 -o r.h5 >/dev/null || fail "sim"
"$L" search --model gpt3-15b --layers 2 --gpus 8 --global-batch 16 --tp 1,2 --pp 1 --micro-batch 1 --top 2 \
    -o se.h5 >/dev/null || fail "search"
for f in g r se; do cp "$f.h5" "$f.orig"; done

# refused WANT... -- ARGS...: exit not 0, exactly one line on stderr holding
# every WANT, nothing on stdout, no file but the inputs, the inputs unchanged
refused() {
    wants=""
    while [ "$1" != "--" ]; do
        wants="$wants$1
"
        shift
    done
    shift
    "$L" "$@" >out 2>err && fail "lumosim $* exited 0"
    [ "$(wc -l <err)" -eq 1 ] || fail "lumosim $*: not one line: $(cat err)"
    [ ! -s out ] || fail "lumosim $*: printed $(cat out)"
    printf '%s' "$wants" | while IFS= read -r w; do
        grep -qF -- "$w" err || { echo "wrong_kind: FAIL: lumosim $*: no '$w' in: $(cat err)"; exit 1; }
    done || exit 1
    left=$(ls | grep -v '^\(g\|r\|se\)\.\(h5\|orig\)$\|^out$\|^err$')
    [ -z "$left" ] || fail "lumosim $*: left $left"
    for f in g r se; do cmp -s "$f.h5" "$f.orig" || fail "lumosim $*: $f.h5 changed"; done
}

S="se.h5: is a lumosim search result (written by lumosim search -o)"
SR="read it with lumosim info or lumosim search --merge"
R="r.h5: is a lumosim result archive (written by lumosim sim -o)"
RR="read it with lumosim report, info or collect"
G="g.h5: is a lumosim graph store (written by lumosim build, synth or whatif)"
GR="simulate it with lumosim sim, replay or report"

refused "$S" "not traces, a graph store or a result archive: $SR" -- report se.h5 --html x.html
refused "$S" "not traces or a graph store: $SR" -- replay se.h5 --trace-out t.json
refused "$S" "not a graph store: $SR" -- sim se.h5 -o y.h5
refused "$S" "not a graph store: $SR" -- whatif se.h5 --tp 1 -o w.h5
refused "$S" "not a graph store: $SR" -- search --from se.h5 --tp 1 -o s2.h5
refused "$S" "not a result archive: $SR" -- collect se.h5 -o c.csv
refused "$S" "not a graph store: $SR" -- export --chakra cdir se.h5
refused "$R" "not a graph store: $RR" -- sim r.h5 -o y.h5
refused "$R" "not a graph store: $RR" -- whatif r.h5 --tp 1 -o w.h5
refused "$R" "not traces or a graph store: $RR" -- replay r.h5 --trace-out t.json
refused "$R" "not a search result: $RR" -- search --merge r.h5 -o m.h5
refused "$G" "not a search result: $GR" -- search --merge g.h5 -o m.h5
refused "$G" "not a result archive: $GR" -- collect g.h5 -o c.csv

# what the lines name reads the file
"$L" info se.h5 | grep -q "lumosim search result" || fail "info does not read the search result"
"$L" search --merge se.h5 >/dev/null || fail "search --merge does not read the search result"

# report's refusals of a --detail summary archive, made by editing a copy
py=""
for p in "${LSIM_PYTHON:-}" /usr/bin/python3 python3; do
    [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 && "$p" -c 'import h5py' 2>/dev/null && { py=$p; break; }
done
if [ -z "$py" ]; then
    echo "wrong_kind: ok (no python3 with h5py: the summary refusals not checked)"
    exit 0
fi
"$L" sim g.h5 -o sum.h5 --detail summary >/dev/null || fail "sim --detail summary"
"$py" - <<'PY' || fail "editing the summary archive"
import h5py, shutil
shutil.copy("sum.h5", "old.h5")
with h5py.File("old.h5", "r+") as f:
    del f["runs/sim/gpus/has_place"]  # as a lumosim before the place columns wrote it
shutil.copy("sum.h5", "mixed.h5")
with h5py.File("mixed.h5", "r+") as f:
    f["runs/sim"].attrs["latency_mode"] = "mixed"
PY
rm sum.h5
for f in old mixed; do cp "$f.h5" "$f.orig2"; done
"$L" report old.h5 --html o.html >out 2>err && fail "report of an older summary archive exited 0"
[ "$(wc -l <err)" -eq 1 ] && grep -qF "old.h5: run sim was written with --detail summary by an older lumosim" err ||
    fail "report of an older summary archive: $(cat err)"
[ ! -e o.html ] || fail "report of an older summary archive wrote o.html"
"$L" report mixed.h5 --html o.html --csv o.csv >out 2>err && fail "report --csv of a mixed summary archive exited 0"
[ "$(wc -l <err)" -eq 1 ] && grep -qF "mixed.h5: run sim (--detail summary) simulated GPUs of mixed latency modes" err ||
    fail "report --csv of a mixed summary archive: $(cat err)"
[ ! -e o.html ] && [ ! -e o.csv ] || fail "report --csv of a mixed summary archive wrote its outputs"
for f in old mixed; do cmp -s "$f.h5" "$f.orig2" || fail "$f.h5 changed"; done
echo "wrong_kind: ok"
