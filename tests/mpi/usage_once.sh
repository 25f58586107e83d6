#!/bin/sh
# usage_once.sh MPIEXEC ARGS... --  (environment: LUMOSIM)
# A usage error under mpirun is printed once (by rank 0), not once per rank
# (issue 39): an unknown option and a bad value to sim and synth at 2 ranks,
# each exactly one "lumosim: error" line, non-zero exit.
set -u
: "${LUMOSIM:?set LUMOSIM}"
launch=
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launch="$launch $1"; shift; done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for args in "sim --bogus" "sim --detail nonsense x.h5" "synth --model gpt3-15b --tp 0 -o x.h5"; do
    # shellcheck disable=SC2086 # split on purpose
    (cd "$tmp" && $launch "$LUMOSIM" $args) >"$tmp/out" 2>"$tmp/err"
    rc=$?
    n=$(grep -c "lumosim: error" "$tmp/err")
    if [ "$rc" -eq 0 ] || [ "$n" -ne 1 ]; then
        echo "FAIL: lumosim $args under mpirun: exit $rc, $n error lines (expected non-zero and 1):"
        grep "lumosim" "$tmp/err" | head -4
        fail=1
    else
        echo "ok: lumosim $args: one line"
    fi
done
exit $fail
