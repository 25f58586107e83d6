#!/bin/sh
# bench/et_ingest.sh BEFORE_LUMOSIM AFTER_LUMOSIM [DIR] -- the ingest of a job
# whose ranks have PyTorch execution traces beside them (default: the shared
# megatron_tp8_a100, eight ranks, each a 3.7 MB Kineto trace and a 2.9 MB
# execution trace), two builds alternating run by run (the load of a shared
# machine falls on both alike): the medians over RUNS (default 5) of the
# ranks' ingest seconds summed (`replay --stats`: Kineto and execution trace
# read and paired) and of rank 0's peak RSS (`replay` of rank0.json.gz alone).
set -eu
[ $# -ge 2 ] || { echo "usage: et_ingest.sh BEFORE AFTER [DIR]" >&2; exit 2; }
A=$1 B=$2
D=${3:-$(cd "$(dirname "$0")/.." && pwd)/../shared/traces/megatron_tp8_a100}
RUNS=${RUNS:-5}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for _ in $(seq "$RUNS"); do
    for side in before after; do
        bin=$A
        [ $side = after ] && bin=$B
        s=$("$bin" replay --stats "$D" 2>&1 >/dev/null | sed -n 's/.*ingest \([0-9.]*\) s.*/\1/p' | awk '{s += $1} END {print s}')
        m=$( { /usr/bin/time -f "%M" "$bin" replay "$D/rank0.json.gz" >/dev/null; } 2>&1 | tail -1)
        echo "$side $s $m" >>"$raw"
    done
done
python3 - "$raw" "$RUNS" <<'PY'
import sys, statistics as st
rows = {}
for l in open(sys.argv[1]):
    side, s, m = l.split()
    rows.setdefault(side, []).append((float(s), int(m)))
b = {k: (st.median(x[0] for x in v), st.median(x[1] for x in v)) for k, v in rows.items()}
print("medians of %s runs, alternating: ingest of the 8 ranks %.3f s before, %.3f s after (%.2fx); "
      "rank 0's peak RSS %d KiB before, %d KiB after (%.2fx)" % (sys.argv[2], b["before"][0], b["after"][0],
      b["before"][0] / b["after"][0], b["before"][1], b["after"][1], b["before"][1] / b["after"][1]))
PY
