#!/usr/bin/env bash
# same_replay.sh: do two builds of lumosim replay every trace alike? For a
# change that must not change results (a faster reader, a faster graph
# build): runs `lumosim replay --json` (and a second mode, observed
# latencies with SM contention and the critical path) with both binaries on
# every trace given or found, and compares stdout, stderr and the exit
# status byte for byte. Bad inputs count too: the same error, the same way.
#
#   bench/same_replay.sh BEFORE/lumosim AFTER/lumosim [TRACE|DIR...]
#
# Without TRACE arguments: every *.json and *.json.gz under ../shared/traces
# (or /work/shared/traces) and tests/data, one by one. Prints one line per
# difference and a summary; exit 1 when anything differs.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: same_replay.sh BEFORE_LUMOSIM AFTER_LUMOSIM [TRACE...]" >&2; exit 2; }
A=$1 B=$2
shift 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -eq 0 ]; then
    SHARED=$ROOT/../shared/traces
    [ -d "$SHARED" ] || SHARED=/work/shared/traces
    mapfile -t files < <(find "$SHARED" "$ROOT/tests/data" \( -name '*.json' -o -name '*.json.gz' \) | sort)
    set -- "${files[@]}"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
for t in "$@"; do
    for mode in "" "--latency observed --sm-contention on --critical-path"; do
        # shellcheck disable=SC2086  # mode is a list of options
        "$A" replay --json $mode "$t" >"$tmp/a.out" 2>"$tmp/a.err"
        ra=$?
        # shellcheck disable=SC2086
        "$B" replay --json $mode "$t" >"$tmp/b.out" 2>"$tmp/b.err"
        rb=$?
        n=$((n + 1))
        if [ $ra != $rb ] || ! cmp -s "$tmp/a.out" "$tmp/b.out" || ! cmp -s "$tmp/a.err" "$tmp/b.err"; then
            bad=$((bad + 1))
            echo "DIFFERENT ($ra/$rb) ${mode:-default}: $t"
            diff <(head -c 2000 "$tmp/a.err") <(head -c 2000 "$tmp/b.err") | head -5
        fi
    done
done
echo "same_replay: $((n - bad)) of $n replays identical (stdout, stderr, exit status)"
[ $bad = 0 ]
