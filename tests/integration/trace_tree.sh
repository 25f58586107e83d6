#!/bin/sh
# trace_tree.sh TRACE
# The predicted trace keeps the trace's CPU op tree (nesting, categories,
# ProfilerStep annotations, record_param_comms sizes and groups) and reads
# back as the same job: trace_tree_check.py says what each part asserts.
# Environment: LUMOSIM, PYTHON.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
here=$(dirname "$0")
[ -f "$1" ] || { echo "skipped: $1 is absent"; exit 77; }
"$LUMOSIM" replay --json --trace-out "$tmp/pred.json.gz" "$1" >"$tmp/first.json" || { echo "replay of $1 failed"; exit 1; }
"$PYTHON" "$here/trace_tree_check.py" tree "$1" "$tmp/pred.json.gz" || exit 1
"$LUMOSIM" replay --latency observed --trace-out "$tmp/exact.json.gz" "$1" >/dev/null || { echo "observed replay of $1 failed"; exit 1; }
"$PYTHON" "$here/trace_tree_check.py" tree --exact "$1" "$tmp/exact.json.gz" || exit 1
"$LUMOSIM" replay --json "$tmp/pred.json.gz" >"$tmp/second.json" || { echo "replay of the predicted trace failed"; exit 1; }
"$LUMOSIM" replay --json --latency observed "$tmp/pred.json.gz" >"$tmp/observed.json" ||
    { echo "replay of the predicted trace with observed latencies failed"; exit 1; }
"$PYTHON" "$here/trace_tree_check.py" replays "$tmp/first.json" "$tmp/second.json" "$tmp/observed.json" || exit 1
