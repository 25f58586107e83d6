#!/bin/sh
# lookahead_violation.sh MPIEXEC [FLAGS...] -- JOBDIR
# Forcing a lookahead longer than the shortest collective transfer must be
# caught where the first cross-rank message is created: exit non-zero, the
# error names the violation, no result file. Environment: LUMOSIM.
set -u
launcher=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher="$launcher $1"; shift; done
shift
[ -e "$1" ] || { echo "$1 missing: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$LUMOSIM" build "$1" -o "$tmp/job.h5" || { echo "build failed"; exit 1; }
# shellcheck disable=SC2086
$launcher "$LUMOSIM" sim --lookahead-ns 1000000000 "$tmp/job.h5" -o "$tmp/res.h5" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] || { echo "a violated lookahead was not caught"; exit 1; }
grep -q "lumosim: error: .*lookahead violated" "$tmp/err" || { echo "no clear message:"; cat "$tmp/err"; exit 1; }
[ "$(grep -c 'lumosim: error' "$tmp/err")" -eq 1 ] || { echo "more than one error line"; cat "$tmp/err"; exit 1; }
[ ! -e "$tmp/res.h5" ] || { echo "a result file was left behind"; exit 1; }
ls "$tmp" | grep -q tmp- && { echo "a temporary file was left behind"; exit 1; }
echo "ok: lookahead violation caught"
