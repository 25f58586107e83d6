#!/bin/sh
# options.sh TRACE: the one option parser (src/cli/args.c, lsim_cli_getopt
# on getopt_long) as every command sees it (issue 18, "Help, progress,
# options"):
#   - --opt=value means --opt value, on every command (the same output,
#     the same files);
#   - --version on every command, also after a path;
#   - an option the command does not take: exit 2, one line naming the
#     option and the command, nothing on stdout;
#   - a missing or bad value, a value given to a switch, an abbreviation:
#     exit 2, one line naming the option;
#   - options after paths, also under POSIXLY_CORRECT; "--" ends options;
#     -oFILE as -o FILE;
#   - units and labels: max |start err| in ms (table and page), --bin-ms 0.5
#     shown as 0.5 ms bins, a synthesized job's report not headed "replay".
# TRACE: a small Kineto trace (tests/data/hip_trace.json).
# Environment: LUMOSIM.
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
T=$1
L=$LUMOSIM
[ -e "$T" ] || { echo "SKIP: $T missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-options.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
pass=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { pass=$((pass + 1)); }

# refused EXPECTED-EXIT NEEDLE... -- ARGS: exit status, empty stdout, one
# stderr line holding every NEEDLE (grep -F).
refused() {
    want=$1
    shift
    n=0
    while [ "$1" != -- ]; do
        n=$((n + 1))
        eval "needle$n=\$1"
        shift
    done
    shift
    "$L" "$@" >out 2>err
    rc=$?
    [ $rc -eq "$want" ] || { fail "$*: exit $rc, expected $want: $(cat err)"; return 1; }
    [ -s out ] && { fail "$*: wrote to stdout"; return 1; }
    [ "$(wc -l <err)" -eq 1 ] || { fail "$*: $(wc -l <err) stderr lines: $(cat err)"; return 1; }
    k=1
    while [ $k -le $n ]; do
        eval "nd=\$needle$k"
        grep -qF -- "$nd" err || { fail "$*: no '$nd' in: $(cat err)"; return 1; }
        k=$((k + 1))
    done
    ok
}

# --- --opt=value is --opt value ---------------------------------------------
"$L" replay "$T" --json --latency observed >a.json 2>err || fail "replay --latency observed: $(cat err)"
"$L" replay "$T" --json --latency=observed >b.json 2>err || fail "replay --latency=observed: $(cat err)"
cmp -s a.json b.json && ok || fail "replay: --latency=observed differs from --latency observed"
grep -q '"latency_mode":"observed"' b.json && ok || fail "replay --latency=observed: not the observed mode"
"$L" ablate --json --bin-ms 0.5 "$T" >a.json 2>err || fail "ablate --bin-ms 0.5: $(cat err)"
"$L" ablate --json --bin-ms=0.5 "$T" >b.json 2>err || fail "ablate --bin-ms=0.5: $(cat err)"
cmp -s a.json b.json && ok || fail "ablate: --bin-ms=0.5 differs from --bin-ms 0.5"
"$L" build "$T" --output=j.h5 >/dev/null 2>err && [ -s j.h5 ] && ok || fail "build --output=: $(cat err)"
"$L" sim j.h5 --output=r.h5 --run=A --detail=summary >/dev/null 2>err && [ -s r.h5 ] && ok ||
    fail "sim --output= --run= --detail=: $(cat err)"
"$L" info r.h5 >info.txt 2>err && grep -q "A" info.txt && ok || fail "sim --run=A: no run A: $(cat info.txt err)"
"$L" collect r.h5 --output=c.csv --run=A >/dev/null 2>err && [ -s c.csv ] && ok || fail "collect --output= --run=: $(cat err)"
"$L" report "$T" --html=p.html >/dev/null 2>err && [ -s p.html ] && ok || fail "report --html=: $(cat err)"
"$L" synth --model=gpt3-15b --layers=2 --tp=1 --pp=1 --dp=1 --micro-batch=1 --global-batch=1 --output=s.h5 \
    >/dev/null 2>err && [ -s s.h5 ] && ok || fail "synth --opt=value: $(cat err)"
"$L" whatif j.h5 --jitter=0.01 --seed=3 --output=n.h5 >/dev/null 2>err && [ -s n.h5 ] && ok ||
    fail "whatif --opt=value: $(cat err)"
# parsed (exit 1: the input is missing, not a usage error, 2)
refused 1 "nosuch.json" -- calibrate nosuch.json --out=g.json --gpu=h100
refused 1 "unknown model 'nosuch'" -- search --model=nosuch --gpus=8 --global-batch=8
# -oFILE is -o FILE
"$L" build "$T" -ob2.h5 >/dev/null 2>err && [ -s b2.h5 ] && ok || fail "build -ob2.h5: $(cat err)"

# --- --version on every command, anywhere before "--" ----------------------
v=$("$L" --version)
for c in "replay $T" "report $T" "ablate $T" "build $T" "sim j.h5" "info j.h5" "collect r.h5" "synth" \
    "calibrate $T" "whatif j.h5" "search" "help"; do
    # shellcheck disable=SC2086
    out=$("$L" $c --version 2>err)
    rc=$?
    [ $rc -eq 0 ] && [ "$out" = "$v" ] && [ ! -s err ] && ok || fail "$c --version: exit $rc, '$out' $(cat err)"
done

# --- an option the command does not take names both --------------------------
refused 2 "'--per-rank'" "ablate" -- ablate --per-rank "$T"
refused 2 "'--json'" "info" -- info --json j.h5
refused 2 "'--json'" "collect" -- collect --json r.h5 -o c2.csv
refused 2 "'--json'" "build" -- build --json "$T" -o b3.h5
refused 2 "'--csv'" "whatif" -- whatif j.h5 --csv x.csv -o n2.h5
refused 2 "'--json'" "synth" -- synth --json --model gpt3-15b
refused 2 "'--trace-out'" "search" -- search --trace-out t.json --model gpt3-15b
refused 2 "'--json'" "calibrate" -- calibrate --json "$T" -o g.json
refused 2 "'--html'" "replay" -- replay "$T" --html x.html
refused 2 "--json" "report" -- report --json "$T" --html p2.html
refused 2 "'--json'" "help" -- help --json
for f in b3.h5 n2.h5 c2.csv g.json x.html p2.html; do [ -e "$f" ] && fail "a refused command wrote $f"; done

# --- missing and bad values, switches with values, abbreviations -------------
refused 2 "--bin-ms needs a number of milliseconds" -- replay "$T" --bin-ms
refused 2 "--bin-ms takes a positive number" -- replay "$T" --bin-ms=abc
refused 2 "--detail needs nodes, ops or summary" -- sim j.h5 -o r2.h5 --detail=
refused 2 "--dp needs a positive integer up to 1000000 (got 'x')" -- whatif j.h5 --dp=x -o n3.h5
refused 2 "--tp needs a positive integer" -- synth --model gpt3-15b --tp
refused 2 "-o needs a file name" -- build "$T" -o
refused 2 "--json takes no value" -- replay "$T" --json=yes
refused 2 "--independent takes no value" -- replay "$T" --independent=1
refused 2 "unknown option '--crit'" "replay" -- replay "$T" --crit
refused 2 "unknown option '--out'" "build" -- build "$T" --out b4.h5
refused 2 "--run needs a run name, not the option '--json'" -- sim j.h5 -o r2.h5 --run --json
# search too takes each option once (its own loop let the last one win)
refused 2 "--tp given twice" -- search --model gpt3-15b --gpus 8 --global-batch 8 --tp 1,2 --tp 2

# --- argument order: options after paths, POSIXLY_CORRECT, "--" --------------
POSIXLY_CORRECT=1 "$L" replay "$T" --json >pc.json 2>err && grep -q '"ranks"' pc.json && ok ||
    fail "POSIXLY_CORRECT: an option after the path was not taken: $(head -c 200 pc.json) $(cat err)"
POSIXLY_CORRECT=1 "$L" build "$T" -o pc.h5 >/dev/null 2>err && [ -s pc.h5 ] && ok ||
    fail "POSIXLY_CORRECT build: $(cat err)"
# after "--" an argument is a path, even one that looks like an option
refused 1 "--json: cannot open" -- replay -- --json

# --- units and labels ---------------------------------------------------------
"$L" replay "$T" --bin-ms 0.5 >t.txt 2>err || fail "replay --bin-ms 0.5: $(cat err)"
grep -q "(0.5 ms bins)" t.txt && ok || fail "replay --bin-ms 0.5: not shown as 0.5 ms bins: $(grep bins t.txt)"
grep -q "max |start err| [0-9.]* ms, max |end err| [0-9.]* ms" t.txt && ok ||
    fail "replay: max |start err| not in ms: $(grep 'start err' t.txt)"
"$L" report "$T" --bin-ms=0.5 --html q.html >/dev/null 2>err || fail "report --bin-ms=0.5: $(cat err)"
grep -q "each 0.5 ms bin" q.html && ok || fail "report --bin-ms 0.5: not shown as 0.5 ms bins"
grep -q "max |start error|</td><td>[0-9.]* ms<" q.html && ok || fail "report: max |start error| not in ms"
grep -q "<h1>lumosim replay report</h1>" q.html && ok || fail "report of a trace: not headed replay"
# a synthesized job is simulated, not replayed: neither heading says replay
"$L" sim s.h5 >st.txt 2>err || fail "sim s.h5: $(cat err)"
head -n 1 st.txt | grep -q "simulation of a synthesized" && ok || fail "sim of a synthesized job: $(head -n 1 st.txt)"
"$L" report s.h5 --html sr.html >/dev/null 2>err || fail "report s.h5: $(cat err)"
grep -q "<h1>lumosim simulation report" sr.html && ! grep -q "<h1>[^<]*replay" sr.html && ok ||
    fail "report of a synthesized job headed: $(grep -o '<h1>[^<]*' sr.html)"

echo "options: $pass checks passed, $fails failed"
[ $fails -eq 0 ]
