#!/bin/sh
# expect_exit.sh STATUS [CHECK]... -- ARG...
#
# Runs "$LUMOSIM ARG..." and asserts its exit status is STATUS, plus CHECKs:
#   --stdout-empty           nothing on stdout
#   --stderr-nonempty        something on stderr
#   --stdout-contains TEXT   stdout contains TEXT
#   --output-contains TEXT   stdout or stderr contains TEXT
# Used for usage errors (status 2) and --help (status 0).
#
# Environment: LUMOSIM = the lumosim binary.
set -u

: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
[ $# -ge 1 ] || { echo "usage: expect_exit.sh STATUS [CHECK]... -- ARG..." >&2; exit 2; }
want=$1
shift

stdout_empty=0
stderr_nonempty=0
stdout_contains=
output_contains=
while [ $# -gt 0 ]; do
    case "$1" in
    --stdout-empty) stdout_empty=1; shift ;;
    --stderr-nonempty) stderr_nonempty=1; shift ;;
    --stdout-contains) stdout_contains=$2; shift 2 ;;
    --output-contains) output_contains=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "expect_exit.sh: unknown check $1" >&2; exit 2 ;;
    esac
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-expect-exit.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

"$LUMOSIM" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?

fail=0
complain() { echo "FAIL: $*"; fail=1; }

[ "$rc" -eq "$want" ] || complain "exit status $rc, expected $want"
if [ "$stdout_empty" -eq 1 ] && [ -s "$tmp/stdout" ]; then
    complain "stdout is not empty"
fi
if [ "$stderr_nonempty" -eq 1 ] && [ ! -s "$tmp/stderr" ]; then
    complain "stderr is empty (a usage error should say what is wrong)"
fi
if [ -n "$stdout_contains" ] && ! grep -qF -- "$stdout_contains" "$tmp/stdout"; then
    complain "stdout does not contain '$stdout_contains'"
fi
if [ -n "$output_contains" ] && ! cat "$tmp/stdout" "$tmp/stderr" | grep -qF -- "$output_contains"; then
    complain "output does not contain '$output_contains'"
fi

echo "command: $LUMOSIM $*"
echo "exit status: $rc"
echo "--- stdout (first 40 lines) ---"
head -n 40 "$tmp/stdout"
echo "--- stderr (first 40 lines) ---"
head -n 40 "$tmp/stderr"
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
