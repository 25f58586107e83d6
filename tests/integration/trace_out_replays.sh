#!/bin/sh
# trace_out_replays.sh TRACE
# A predicted trace is a trace: replaying it with observed latencies must
# reproduce it exactly, and its window must be the window the first replay
# predicted. Environment: LUMOSIM, JSON_CHECK.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$LUMOSIM" replay --json --trace-out "$tmp/pred.json.gz" "$1" >"$tmp/first.json" || { echo "first replay failed"; exit 1; }
"$LUMOSIM" replay --json --latency observed "$tmp/pred.json.gz" >"$tmp/second.json" || { echo "replay of the predicted trace failed"; exit 1; }
want=$(sed -n 's/.*"window":{"actual_ns":[0-9]*,"predicted_ns":\([0-9]*\).*/\1/p' "$tmp/first.json")
[ -n "$want" ] || { echo "no predicted window in the first report"; exit 1; }
"$JSON_CHECK" "$tmp/second.json" "ranks.0.node_error.max_abs_start_ns==0" "ranks.0.node_error.max_abs_end_ns==0" \
    "ranks.0.window.actual_ns==$want" || exit 1
echo "ok: the predicted trace replays as itself ($want ns)"
