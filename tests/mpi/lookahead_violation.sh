#!/bin/sh
# lookahead_violation.sh MPIEXEC [FLAGS...] -- JOBDIR
# Forcing a lookahead longer than the shortest collective transfer must be
# caught where the first cross-rank message is created: exit non-zero, the
# error names the violation, no result file. So must a window bound promised
# too late (--bound-skew-ns, under each --windows mode: a bug in the path
# bounds would show this way). Environment: LUMOSIM.
set -u
launcher=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher="$launcher $1"; shift; done
shift
[ -e "$1" ] || { echo "$1 missing: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$LUMOSIM" build "$1" -o "$tmp/job.h5" || { echo "build failed"; exit 1; }
for how in "--lookahead-ns 1000000000" "--windows ready --bound-skew-ns 1000000000" \
           "--windows paths --bound-skew-ns 1000000000" "--windows start --bound-skew-ns 1000000000"; do
    rm -f "$tmp/res.h5"
    # shellcheck disable=SC2086
    $launcher "$LUMOSIM" sim $how "$tmp/job.h5" -o "$tmp/res.h5" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -ne 0 ] || { echo "a violated lookahead was not caught ($how)"; exit 1; }
    grep -q "lumosim: error: .*lookahead violated" "$tmp/err" || { echo "no clear message ($how):"; cat "$tmp/err"; exit 1; }
    [ "$(grep -c 'lumosim: error' "$tmp/err")" -eq 1 ] || { echo "more than one error line ($how)"; cat "$tmp/err"; exit 1; }
    [ ! -e "$tmp/res.h5" ] || { echo "a result file was left behind ($how)"; exit 1; }
    ls "$tmp" | grep -q tmp- && { echo "a temporary file was left behind ($how)"; exit 1; }
done
echo "ok: lookahead violations caught (forced lookahead; skewed bound under ready, paths, start)"
