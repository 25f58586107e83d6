#!/bin/sh
# samples_ranks.sh NPFLAG MPIEXEC [ARGS...] -- TRACE...   (environment: LUMOSIM)
#
# sim --samples under the launcher: the samples are spread over the ranks
# (sample k on rank k mod K), and the report must be the serial one, byte
# for byte, at 2 and 3 ranks (more ranks than samples too), with both
# pools, on traces simulated one by one and on a synthesized job of 4 GPUs
# coupled through their collectives; a different seed must give different
# numbers (the draws are really made) and the same seed the same ones.
set -u
: "${LUMOSIM:?}"
L=$LUMOSIM
npflag=$1
shift
launch=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launch="$launch $1"; shift; done
[ $# -gt 0 ] && shift
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "samples_ranks: FAIL: $*"; exit 1; }
"$L" build "$@" -o "$tmp/traces.h5" >/dev/null || fail "build"
"$L" synth --model gpt3-15b --layers 2 --tp 2 --pp 1 --dp 2 --micro-batch 1 --global-batch 2 -o "$tmp/job.h5" >/dev/null \
    || fail "synth"
# bad input: one line, exit 2, nothing written
for bad in "--samples 0" "--samples x" "--seed 5" "--samples 3 -o $tmp/r.h5" "--samples 3 --draw-from me"; do
    # shellcheck disable=SC2086
    "$L" sim "$tmp/job.h5" $bad >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || fail "sim $bad exited $rc, not 2"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "sim $bad: not one error line: $(cat "$tmp/err")"
    [ ! -e "$tmp/r.h5" ] || fail "sim $bad wrote an archive"
done
for store in traces job; do
    for pool in job others; do
        "$L" sim "$tmp/$store.h5" --samples 7 --seed 3 --draw-from $pool --json >"$tmp/serial.$pool.json" \
            || fail "serial --samples ($store, $pool)"
        for np in 2 3 9; do
            # shellcheck disable=SC2086
            $launch $npflag $np "$L" sim "$tmp/$store.h5" --samples 7 --seed 3 --draw-from $pool --json \
                >"$tmp/np$np.$pool.json" || fail "--samples at $np ranks ($store, $pool)"
            cmp -s "$tmp/serial.$pool.json" "$tmp/np$np.$pool.json" || fail "$np ranks differ from serial ($store, $pool)"
        done
    done
done
"$L" sim "$tmp/job.h5" --samples 7 --seed 3 --json >"$tmp/again.json" || fail "again"
cmp -s "$tmp/serial.job.json" "$tmp/again.json" || fail "the same seed gave other numbers"
"$L" sim "$tmp/job.h5" --samples 7 --seed 4 --json >"$tmp/seed4.json" || fail "seed 4"
cmp -s "$tmp/serial.job.json" "$tmp/seed4.json" && fail "seed 3 and seed 4 gave the same report"
echo "samples_ranks: 2, 3 and 9 ranks give the serial report; seeds differ"
