#!/bin/sh
# expect_error.sh [OPTION]... PATH...
#
# Runs "$LUMOSIM replay PATH..." and asserts the CLI's bad-input contract:
#   - exit status 1,
#   - nothing at all on stdout (no partial report),
#   - exactly one line on stderr, starting with "lumosim: error: " and
#     naming the offending path.
#
# Options (before the paths):
#   --names P          the path the error line must contain (default: the last PATH)
#   --skip-missing     exit 77 (CTest skip) if some PATH does not exist
#   --tmp-empty-dir    append a freshly made empty directory to the paths
#   --tmp-unreadable F append a copy of F with mode 000 (skipped as root,
#                      where chmod 000 does not stop reads)
#
# Environment: LUMOSIM = the lumosim binary.
set -u

: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"

names=
skip_missing=0
tmp=
cleanup() { [ -n "$tmp" ] && { chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"; }; }
trap cleanup EXIT INT TERM

mktmp() {
    [ -n "$tmp" ] || tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-expect-error.XXXXXX") || exit 1
}

extra=
while [ $# -gt 0 ]; do
    case "$1" in
    --names) names=$2; shift 2 ;;
    --skip-missing) skip_missing=1; shift ;;
    --tmp-empty-dir)
        mktmp
        mkdir "$tmp/empty" || exit 1
        extra="$tmp/empty"
        shift ;;
    --tmp-unreadable)
        if [ "$(id -u)" -eq 0 ]; then
            echo "SKIP: running as root: chmod 000 does not stop root from reading"
            exit 77
        fi
        mktmp
        cp "$2" "$tmp/unreadable.json" || exit 1
        chmod 000 "$tmp/unreadable.json" || exit 1
        extra="$tmp/unreadable.json"
        shift 2 ;;
    --) shift; break ;;
    -*) echo "expect_error.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ -n "$extra" ] && set -- "$@" "$extra"
if [ $# -eq 0 ]; then
    echo "expect_error.sh: no PATH given" >&2
    exit 2
fi

last=
for p in "$@"; do
    last=$p
    if [ "$skip_missing" -eq 1 ] && [ ! -e "$p" ]; then
        echo "SKIP: $p is missing"
        exit 77
    fi
done
[ -n "$names" ] || names=$last

mktmp
"$LUMOSIM" replay "$@" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?

fail=0
complain() { echo "FAIL: $*"; fail=1; }

[ "$rc" -eq 1 ] || complain "exit status $rc, expected 1"
[ -s "$tmp/stdout" ] && complain "stdout is not empty ($(wc -c <"$tmp/stdout") bytes)"
nl=$(wc -l <"$tmp/stderr" | tr -d ' ')
nr=$(awk 'END { print NR }' "$tmp/stderr")
if [ "$nl" -ne 1 ] || [ "$nr" -ne 1 ]; then
    complain "stderr has $nr line(s) ($nl newline(s)), expected exactly one line"
fi
line=$(head -n 1 "$tmp/stderr")
case "$line" in
"lumosim: error: "*) ;;
*) complain "stderr does not start with 'lumosim: error: '" ;;
esac
case "$line" in
*"$names"*) ;;
*) complain "the error line does not name $names" ;;
esac

echo "command: $LUMOSIM replay $*"
echo "exit status: $rc"
echo "--- stderr ---"
cat "$tmp/stderr"
if [ -s "$tmp/stdout" ]; then
    echo "--- stdout (first 20 lines) ---"
    head -n 20 "$tmp/stdout"
fi
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
