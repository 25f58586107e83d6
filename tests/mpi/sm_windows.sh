#!/bin/sh
# sm_windows.sh MPIEXEC [MPIEXEC-FLAGS...] -- TRACE...   (environment: LUMOSIM)
# A store with SM edges (lumosim build --sm-contention on) under mpirun with
# time windows (--windows paths, start): refused on every rank with one
# error line naming the mode and the way out (--windows ready), exit 1, no
# result file written.
set -u
launcher=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher="$launcher $1"; shift; done
shift
for a in "$@"; do [ -e "$a" ] || { echo "SKIP: $a missing"; exit 77; }; done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sm_windows: FAIL: $*"; exit 1; }
"$LUMOSIM" build --sm-contention on "$@" -o "$tmp/job.h5" || fail "build failed"
for w in paths start; do
    # shellcheck disable=SC2086
    $launcher "$LUMOSIM" sim --windows $w "$tmp/job.h5" -o "$tmp/res.h5" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -ne 0 ] || fail "--windows $w ran a store with SM edges"
    grep -q "^lumosim: error: --windows $w cannot simulate SM edges .*use --windows ready" "$tmp/err" ||
        { cat "$tmp/err"; fail "--windows $w: no clear error line"; }
    [ ! -e "$tmp/res.h5" ] || fail "--windows $w left a result file"
done
echo "sm_windows: ok"
