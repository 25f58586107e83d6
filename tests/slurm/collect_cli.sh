#!/usr/bin/env bash
# lumosim collect without Slurm: directory search (graph stores and foreign
# .h5 files skipped with a note), rows sorted by (file, run, gpu) whatever
# the argument order, RFC 4180 quoting, --run, and bad input (one error
# line, exit 1, no CSV left behind). Environment: LUMOSIM, SRC.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "collect_cli: FAIL: $*"; exit 1; }
L=$LUMOSIM
cd "$tmp" || exit 1
mkdir -p sw/b sw/a
"$L" build "$SRC/examples/megatron_tp8_rank0.json.gz" -o sw/job.h5 >/dev/null || fail "build"
"$L" sim sw/job.h5 -o sw/b/r.h5 --run zeta >/dev/null || fail "sim 1"
"$L" sim sw/job.h5 -o sw/b/r.h5 --run alpha --drop-edges event,hidden >/dev/null || fail "sim 2"
"$L" sim sw/job.h5 -o sw/a/r.h5 >/dev/null || fail "sim 3"
echo "not hdf5" >sw/a/junk.h5
"$L" collect sw/b sw -o out.csv 2>err.txt || fail "collect failed: $(cat err.txt)"
grep -q "note: sw/job.h5: skipped (a graph store" err.txt || fail "no note for the graph store: $(cat err.txt)"
grep -q "note: sw/a/junk.h5: skipped" err.txt || fail "no note for the foreign .h5"
[ "$(cut -d, -f1-3 out.csv | tr -d '\r' | tr '\n' ' ')" = "file,run,gpu sw/a/r.h5,sim,0 sw/b/r.h5,alpha,0 sw/b/r.h5,zeta,0 " ] ||
    fail "rows not (file, run, gpu) sorted once each: $(cut -d, -f1-3 out.csv)"
grep -q ',"lumosim [^"]*--drop-edges event,hidden[^"]*",' out.csv || fail "a command line with a comma is not quoted"
[ "$(head -n 1 out.csv | tr ',' '\n' | wc -l)" = 34 ] || fail "header has not 34 columns"
"$L" collect sw --run zeta -o one.csv 2>/dev/null && fail "--run zeta accepted although sw/a/r.h5 lacks it"
[ ! -e one.csv ] || fail "a CSV was left after an error"
"$L" collect sw/b --run zeta -o one.csv 2>/dev/null || fail "--run zeta on sw/b"
[ "$(wc -l <one.csv)" = 2 ] || fail "--run zeta: want 1 row"
# issue 39: a synthesized run measured nothing: its actual and error fields
# are empty (docs/csv.md), never 0, and info says "not measured"; the
# traced run's are numbers
"$L" synth --model gpt3-15b --layers 4 --tp 2 --pp 1 --dp 1 --micro-batch 1 --global-batch 2 -o syn.h5 >/dev/null ||
    fail "synth"
"$L" sim syn.h5 -o synr.h5 >/dev/null || fail "sim of the synthesized job"
"$L" collect synr.h5 sw/a/r.h5 -o syn.csv 2>/dev/null || fail "collect of a synthesized run"
field() { # CSV ROW COLUMN: one field of a row (the columns up to job_error hold no comma)
    local k
    k=$(head -n 1 "$1" | tr -d '\r' | tr ',' '\n' | grep -nx "$3" | cut -d: -f1)
    [ -n "$k" ] || fail "no column $3"
    sed -n "$(($2 + 1))p" "$1" | tr -d '\r' | cut -d, -f"$k"
}
[ "$(wc -l <syn.csv)" = 4 ] || fail "want 2 synthesized + 1 traced rows: $(cat syn.csv)"
for col in window_actual_ns window_error exposed_compute_actual_ns other_actual_ns job_actual_ns job_error; do
    for row in 2 3; do
        [ -z "$(field syn.csv $row $col)" ] || fail "synthesized GPU, $col: '$(field syn.csv $row $col)', want empty"
    done
    [ -n "$(field syn.csv 1 $col)" ] || fail "traced GPU, $col empty"
done
[ "$(field syn.csv 2 window_predicted_ns)" -gt 0 ] || fail "synthesized GPU: no predicted window"
"$L" info synr.h5 >info.txt || fail "info"
[ "$(grep -c ' not measured .* -  synth:' info.txt)" = 2 ] || fail "info: $(tail -n 3 info.txt)"
grep -q '+0.00%' info.txt && fail "info prints an error for a synthesized GPU: $(tail -n 3 info.txt)"
"$L" info sw/a/r.h5 | grep -q ' 603.298 .*%  ' || fail "info of the traced run lost its actual figures"
# bad input: one error line naming the file, exit 1, no output
bad() { # WANT ARGS...
    local want=$1
    shift
    rm -f bad.csv
    "$L" collect "$@" -o bad.csv 2>e.txt
    local rc=$?
    [ $rc = 1 ] || fail "collect $*: exit $rc, want 1"
    [ "$(grep -c 'lumosim: error:' e.txt)" = 1 ] && grep -q "$want" e.txt || fail "collect $*: $(cat e.txt)"
    [ ! -e bad.csv ] && [ -z "$(ls | grep 'bad.csv.tmp')" ] || fail "collect $*: output left behind"
}
bad "sw/a/junk.h5: not readable as HDF5" sw/a/junk.h5
bad "sw/job.h5: is a lumosim graph store" sw/job.h5
bad "nope: No such file" nope
mkdir empty
bad "empty: no lumosim result archive" empty
head -c 3000 sw/a/r.h5 >trunc.h5
bad "trunc.h5" trunc.h5
"$L" collect sw 2>/dev/null; [ $? = 2 ] || fail "no -o: want exit 2"
echo "ok: collect"
