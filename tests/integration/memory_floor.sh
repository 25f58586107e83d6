#!/bin/bash
# memory_floor.sh   (environment: LUMOSIM)
# Below the address space every command needs (docs/reliability.md,
# "Memory": 40 MiB; HDF5 crashed inside H5Fopen at 29.3 MiB, issue 40),
# each command is refused up front with one line that names `ulimit -v`
# and the floor, exit 1, nothing written and its input unchanged; just
# above the floor the same commands run. Not built under the sanitizers
# (their shadow memory needs terabytes of address space).
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
L=$LUMOSIM
floor_kib=$((40 * 1024)) # the documented floor, not read from the code
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-floor.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$L" synth --model gpt3-15b --layers 2 --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 4 -o s.h5 >/dev/null ||
    { echo "FAIL: synth"; exit 1; }
sum=$(sha256sum s.h5)
for cmd in "info s.h5" "sim s.h5 -o r.h5" "whatif s.h5 --dp 4 -o w.h5" \
           "synth --model gpt3-15b --layers 2 --tp 1 --pp 1 --dp 1 --micro-batch 1 --global-batch 1 -o n.h5"; do
    # shellcheck disable=SC2086
    (ulimit -v $((floor_kib - 1024)) && exec "$L" $cmd) >out 2>err
    rc=$?
    [ $rc -eq 1 ] || fail "$cmd below the floor: exit $rc, want 1"
    [ "$(wc -l <err)" -eq 1 ] && grep -q "ulimit -v" err && grep -q "40 MiB" err ||
        fail "$cmd below the floor: want one line naming ulimit -v and 40 MiB: $(head -c 300 err)"
    [ ! -s out ] || fail "$cmd below the floor: wrote to stdout"
    for f in r.h5 w.h5 n.h5; do [ ! -e $f ] || fail "$cmd below the floor: wrote $f"; done
done
[ "$(sha256sum s.h5)" = "$sum" ] || fail "s.h5 changed"
# 8 MiB above the floor a small store is read and simulated
(ulimit -v $((floor_kib + 8192)) && exec "$L" sim s.h5 -o r.h5) >out 2>err || fail "sim above the floor: $(head -c 300 err)"
[ -s r.h5 ] || fail "sim above the floor wrote no r.h5"
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo PASS
