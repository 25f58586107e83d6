#!/usr/bin/env bash
# no_data_loss_cli.sh TRACE
#
# Issue 17, "Inputs" and "Commands": every command honest about what it
# read and did. Each refused case checks
#   - the exit status,
#   - exactly one stderr line "lumosim: error: ..." with what is wrong,
#   - an empty stdout,
#   - that no output (nor temporary) was left, and that a file which
#     existed before is byte-identical afterwards (cmp).
# Inputs: a FIFO (given, or in a directory, or beside a trace as its
# execution trace) is refused, never waited on: every run is bounded by
# `timeout 60` and a timeout is a failure (a run blocked on a FIFO waits
# forever; 60 s, not 10, so that a loaded machine's slow run is not taken
# for a hang); a trace whose rank is outside
# its world; collect's inputs counted once by real path; file names that
# are not UTF-8 or hold a newline escaped in JSON, HTML and error lines.
# Commands: an option given twice, an option's value that is the next
# option, --run / --replace without -o, whatif --identify -o.
# (mpirun: tests/mpi/no_data_loss_mpi.sh.)
#
# TRACE: a small Kineto trace (tests/data/hip_trace.json).
# Environment: LUMOSIM, JSON_CHECK.
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
T=$1
L=$LUMOSIM
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-ndlc.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
pass=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run EXPECTED-EXIT NEEDLE ARGS...: lumosim ARGS under `timeout 60`; one
# error line holding NEEDLE (grep -F), empty stdout.
run() {
    want=$1 needle=$2
    shift 2
    timeout 60 "$L" "$@" >out 2>err
    rc=$?
    if [ $rc -eq 124 ]; then
        fail "hung (killed after 60 s): lumosim $*"
        return 1
    fi
    [ $rc -eq "$want" ] || { fail "exit $rc, want $want: lumosim $* ($(cat err))"; return 1; }
    [ -s out ] && { fail "stdout not empty: lumosim $*"; return 1; }
    [ "$(wc -l <err)" -eq 1 ] || { fail "not one stderr line: lumosim $*: $(cat err)"; return 1; }
    grep -q '^lumosim: error: \|^{"error":' err || { fail "not an error line: lumosim $*: $(cat err)"; return 1; }
    grep -qF -- "$needle" err || { fail "'$needle' not in: $(cat err) (lumosim $*)"; return 1; }
    pass=$((pass + 1))
    return 0
}
# absent FILE...: none of them exists, nor any temporary
absent() {
    for f in "$@"; do [ ! -e "$f" ] || fail "$f was written"; done
    if ls -a . w 2>/dev/null | grep -q 'tmp-'; then fail "a temporary file was left: $(ls -a . w)"; fi
}
# valid_utf8 FILE: the file is well-formed UTF-8 and holds no raw 0xE9
valid_utf8() {
    if command -v iconv >/dev/null 2>&1; then
        iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1 || fail "$1 is not valid UTF-8"
    fi
    LC_ALL=C grep -q "$(printf '\351')" "$1" && fail "$1 holds the raw byte 0xE9"
    return 0
}

# --- fixtures ----------------------------------------------------------------
mkdir w d fifodir etdir
cp "$T" w/t.json
cp "$T" fifodir/a.json
cp "$T" etdir/rank0.json
mkfifo fifo.json fifo.h5 fifodir/b.json etdir/rank0.et.json mapping.txt
"$L" build w/t.json -o w/j.h5 >/dev/null 2>&1 || { echo "setup: build failed"; exit 1; }
"$L" sim w/j.h5 -o d/r.h5 --run A >/dev/null 2>&1 || { echo "setup: sim failed"; exit 1; }
mkdir collectdir
mkfifo collectdir/x.h5
cp "$T" keep.json
cp keep.json keep.ref

# --- inputs: a FIFO is refused with one line, never waited on ---------------
run 1 "fifo.h5: is a FIFO, not a file" info fifo.h5
run 1 "fifo.json: is a FIFO, not a file" replay fifo.json
run 1 "fifodir/b.json: is a FIFO, not a file" replay fifodir
run 1 "fifodir/b.json: is a FIFO, not a file" replay --json fifodir
run 1 "fifo.json: is a FIFO, not a file" ablate fifo.json
run 1 "fifo.json: is a FIFO, not a file" report fifo.json --html o.html
absent o.html
run 1 "etdir/rank0.et.json: is a FIFO, not a file" replay etdir
run 1 "fifo.json: is a FIFO, not a file" build fifo.json -o b.h5
run 1 "fifodir/b.json: is a FIFO, not a file" build fifodir -o b.h5
absent b.h5
run 1 "fifo.h5: is a FIFO, not a file" sim fifo.h5
run 1 "fifo.h5: is a FIFO, not a file" sim fifo.h5 -o r2.h5
absent r2.h5
run 1 "fifo.json: is a FIFO, not a file" calibrate fifo.json --gpu h100 -o g.json
run 1 "fifo.json: is a FIFO, not a file" calibrate w/t.json --gpu h100 --nccl-tests fifo.json -o g.json
run 1 "fifo.json: is a FIFO, not a file" calibrate w/t.json --gpu fifo.json -o g.json
absent g.json
run 1 "fifo.json: is a FIFO, not a file" synth --model fifo.json --tp 1 --pp 1 --dp 1 --micro-batch 1 --global-batch 1 -o s.h5
run 1 "fifo.json: is a FIFO, not a file" synth --model gpt3-15b --layers 2 --tp 1 --pp 1 --dp 1 --micro-batch 1 \
    --global-batch 1 --gpu fifo.json -o s.h5
run 1 "fifo.json: is a FIFO, not a file" synth --model gpt3-15b --layers 2 --tp 1 --pp 1 --dp 1 --micro-batch 1 \
    --global-batch 1 --topology fifo.json -o s.h5
absent s.h5
run 1 "fifo.h5: is a FIFO, not a file" whatif fifo.h5 --identify
run 1 "fifo.json: is a FIFO, not a file" whatif w/j.h5 --topology fifo.json -o n.h5
absent n.h5
run 1 "fifo.h5: is a FIFO, not a file" collect fifo.h5 -o c.csv
run 1 "collectdir/x.h5: is a FIFO, not a file" collect collectdir -o c.csv
absent c.csv
# serially --mapping is not read; under mpirun it is (tests/mpi)

# --- inputs: a rank outside 0..world-1 -----------------------------------------
# TRACE has no distributedInfo (a JSON object: "{" first): one added
{ printf '{"distributedInfo": {"rank": 5, "world_size": 2}, '; tail -c +2 "$T"; } >rank5.json
run 1 "rank5.json: distributedInfo rank 5 is outside 0..1 (world_size 2)" replay rank5.json
run 1 "rank5.json: distributedInfo rank 5 is outside 0..1" build w/t.json rank5.json -o b.h5
absent b.h5
{ printf '{"distributedInfo": {"rank": 1, "world_size": 0}, '; tail -c +2 "$T"; } >world0.json
run 1 "world0.json: distributedInfo world_size 0 is not a number of ranks" replay world0.json

# --- inputs: collect counts each file once, whatever its names -----------------
"$L" collect d -o once.csv >/dev/null 2>&1 || fail "collect d"
"$L" collect d ./d d/r.h5 "$tmp/d" -o many.csv >/dev/null 2>&1 || fail "collect d ./d ..."
ln -s r.h5 d/link.h5
"$L" collect d -o link.csv >/dev/null 2>&1 || fail "collect d with a link"
rows=$(wc -l <once.csv)
[ "$rows" -ge 2 ] || fail "collect d: no rows"
[ "$(wc -l <many.csv)" -eq "$rows" ] || fail "collect d ./d: $(wc -l <many.csv) lines, want $rows"
[ "$(wc -l <link.csv)" -eq "$rows" ] || fail "collect d (with a link): $(wc -l <link.csv) lines, want $rows"
rm -f d/link.h5 once.csv many.csv link.csv

# --- inputs: names that are not UTF-8 or hold a newline -----------------------
bad=$(printf 'caf\351.json')
nl=$(printf 'new\nline.json')
cp "$T" "$bad"
cp "$T" "$nl"
timeout 60 "$L" replay --json "$bad" "$nl" >rep.json 2>err || fail "replay --json of odd names: $(cat err)"
"$JSON_CHECK" rep.json "len(ranks)==2" "ranks.0.source==caf\\ufffd.json" >/dev/null 2>&1 ||
    "$JSON_CHECK" rep.json "len(ranks)==2" >/dev/null || fail "replay --json: not JSON: $(head -c 300 rep.json)"
valid_utf8 rep.json
timeout 60 "$L" ablate --json "$bad" >abl.json 2>err || fail "ablate --json of an odd name: $(cat err)"
"$JSON_CHECK" abl.json "len(traces)==1" >/dev/null || fail "ablate --json: not JSON"
valid_utf8 abl.json
timeout 60 "$L" report "$bad" "$nl" --html page.html >/dev/null 2>err || fail "report of odd names: $(cat err)"
valid_utf8 page.html
"$L" build "$bad" -o "w/j$(printf '\351').h5" >/dev/null 2>&1 || fail "build from an odd name"
timeout 60 "$L" whatif "w/j$(printf '\351').h5" --jitter 0.01 -o w/n.h5 >rec.json 2>err || fail "whatif: $(cat err)"
"$JSON_CHECK" rec.json "gpus_in==1" >/dev/null || fail "whatif record: not JSON: $(head -c 300 rec.json)"
valid_utf8 rec.json
rm -f w/n.h5 "w/j$(printf '\351').h5"
# error lines: one line, the newline and the byte escaped
run 1 'new\nline.json' replay "$nl.missing" && grep -qF 'new\nline.json.missing: cannot open' err ||
    fail "the newline is not escaped: $(cat err)"
run 1 'caf\xe9' replay "$bad.missing"
run 2 'unknown option' replay "--no$(printf '\n')such" w/t.json

# --- commands: an option given twice -------------------------------------------
cp keep.json w/pre.h5 2>/dev/null
run 2 "-o given twice" build w/t.json -o w/pre.h5 -o b.h5
cmp -s w/pre.h5 keep.ref || fail "build -o -o changed the first output"
absent b.h5
rm -f w/pre.h5
run 2 "--json given twice" replay --json w/t.json --json
run 2 "--latency given twice" replay --latency model --latency observed w/t.json
run 2 "--drop-edges given twice" replay --drop-edges sync --drop-edges event w/t.json
run 2 "--html given twice" report w/t.json --html a.html --html b.html
absent a.html b.html
run 2 "--json given twice" ablate --json --json w/t.json
run 2 "--latency given twice" build --latency model --latency observed w/t.json -o b.h5
absent b.h5
run 2 "--run given twice" sim w/j.h5 -o r3.h5 --run a --run b
run 2 "-o given twice" sim w/j.h5 -o r3.h5 --output r4.h5
run 2 "--windows given twice" sim w/j.h5 --windows ready --windows start
absent r3.h5 r4.h5
run 2 "-o given twice" collect d -o c1.csv -o c2.csv
run 2 "--run given twice" collect d --run A --run B -o c1.csv
absent c1.csv c2.csv
run 2 "-o given twice" calibrate w/t.json -o g1.json --out g2.json
run 2 "--gpu given twice" calibrate w/t.json --gpu h100 --gpu a100 -o g1.json
absent g1.json g2.json
S="--model gpt3-15b --layers 2 --tp 1 --pp 1 --micro-batch 1 --global-batch 1"
run 2 "--dp given twice" synth $S --dp 1 --dp 2 -o s.h5
run 2 "-o given twice" synth $S --dp 1 -o s.h5 -o s2.h5
absent s.h5 s2.h5
run 2 "--dp given twice" whatif w/j.h5 --dp 2 --dp 4 -o n.h5
run 2 "--jitter given twice" whatif w/j.h5 --jitter 0.1 --jitter 0.2 -o n.h5
run 2 "--slow-gpu: GPU 0 given twice" whatif w/j.h5 --slow-gpu 0:2 --slow-gpu 0:3 -o n.h5
absent n.h5

# --- commands: a value is never the next option; --run/--replace need -o -------
run 2 "--run needs a run name, not the option '--json'" sim w/j.h5 -o r3.h5 --run --json
run 2 "--trace-out needs a file name, not the option '--json'" replay w/t.json --trace-out --json
run 2 "-o needs a file name, not the option '--latency'" build w/t.json -o --latency model
run 2 "--html needs a file name, not the option '--json'" report w/t.json --html --json
run 2 "-o needs a file name, not the option '--run'" collect d -o --run A
run 2 "--model needs a model name or file, not the option '--tp'" synth --model --tp 1
run 2 "--run is about a run of the result archive: it needs -o RESULT.h5" sim w/j.h5 --run B
run 2 "--replace is about a run of the result archive: it needs -o RESULT.h5" sim w/j.h5 --replace
run 2 "--run selects a run of a result archive" report w/t.json --run A --html o.html
absent r3.h5 o.html
# and --name=VALUE still takes a value that starts with '-'
timeout 60 "$L" sim w/j.h5 -o d/r.h5 --run=-x >/dev/null 2>err || fail "--run=-x refused: $(cat err)"

# --- commands: whatif --identify writes nothing, so -o is refused --------------
cp keep.json w/id.h5
run 2 "--identify writes nothing: -o is not used with it" whatif w/j.h5 --identify -o w/id.h5
cmp -s w/id.h5 keep.ref || fail "whatif --identify -o changed its -o"
run 2 "--identify transforms nothing: --dp is not used with it" whatif w/j.h5 --identify --dp 2
run 2 "--identify writes nothing: -o is not used with it" whatif w/j.h5 --identify -o w/new.h5
absent w/new.h5
rm -f w/id.h5
cmp -s keep.json keep.ref || fail "an input was changed"

echo "no_data_loss_cli: $pass checks passed, $fails failed"
[ $fails -eq 0 ]
