#!/usr/bin/env bash
# What keeping the CPU op tree for --trace-out costs (docs/trace-out.md, "CPU
# ops"): per trace, the ops and nodes, the table's size (48 bytes an op, 4 a
# node: lsim_cpu_op and lsim_cpu_ops.node_op in graph.h), and the median peak
# RSS and wall time of `replay --trace-out` (tree kept and written) against
# `replay --critical-path` (the same run and critical path, no tree, nothing
# written), and the predicted trace's size. Prints a table; writes nothing
# else.
#   BUILD_DIR=build   build tree with lumosim
#   RUNS=5            runs per setting (median)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${BUILD_DIR:-build}
RUNS=${RUNS:-5}
SHARED=${SHARED:-$ROOT/../shared/traces}
[ -d "$SHARED" ] || SHARED=/work/shared/traces
L=$BUILD_DIR/lumosim
[ -x "$L" ] || { echo "no $L: build first" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# one run: "KiB seconds" from GNU time
one() { /usr/bin/time -f "%M %e" -o "$tmp/t" "$L" replay "$@" >/dev/null && cat "$tmp/t"; }
echo "trace | CPU ops | nodes | table MB | peak RSS MiB, --critical-path | peak RSS MiB, --trace-out | wall s, --critical-path | wall s, --trace-out | predicted trace MB (.json.gz)"
echo "---|---:|---:|---:|---:|---:|---:|---:|---:"
for f in examples/megatron_tp8_rank0.json.gz "$SHARED/megatron_tp8_a100/rank0.json.gz" "$SHARED/ddp4_mi300/rank0.json.gz"; do
    [ -f "$f" ] || continue
    : >"$tmp/cp"; : >"$tmp/to"
    for _ in $(seq "$RUNS"); do
        one --critical-path "$f" >>"$tmp/cp"
        one --trace-out "$tmp/p.json.gz" "$f" >>"$tmp/to"
    done
    read -r ops nodes < <(python3 -c "
import gzip, json, sys
r = json.load(gzip.open(sys.argv[1]))['otherData']['ranks'][0]
print(r['cpu_ops'], r['nodes'])" "$tmp/p.json.gz")
    rc=$(cut -d' ' -f1 "$tmp/cp" | median); rt=$(cut -d' ' -f1 "$tmp/to" | median)
    wc_=$(cut -d' ' -f2 "$tmp/cp" | median); wt=$(cut -d' ' -f2 "$tmp/to" | median)
    sz=$(stat -c %s "$tmp/p.json.gz")
    awk -v f="${f#"$ROOT"/}" -v o="$ops" -v n="$nodes" -v rc="$rc" -v rt="$rt" -v wc="$wc_" -v wt="$wt" -v sz="$sz" 'BEGIN {
        printf "%s | %d | %d | %.2f | %.1f | %.1f | %.2f | %.2f | %.2f\n", f, o, n, (48 * o + 4 * n) / 1e6, rc / 1024, rt / 1024, wc, wt, sz / 1e6 }'
done
echo
echo "medians of $RUNS runs each, $(nproc) cores shared with other work, $(date -u '+%Y-%m-%d %H:%M UTC')"
