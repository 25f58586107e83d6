#!/usr/bin/env bash
# replay_e2e.sh: `lumosim replay` end to end, as a user runs it, for two
# builds (before and after a change), alternating run by run so that the
# load of a shared machine falls on both alike. Per build and trace: the
# median wall time (/usr/bin/time %e, the whole process: start, ingest,
# graph, simulation, report), MB/s of input (MB = 10^6 bytes, uncompressed
# size of a plain file), and the median peak RSS (%M) over the input size.
# Issue 20's replay target (>= 250 MB/s, peak RSS <= 0.5 x input) is stated
# in these terms; docs/performance.md quotes them.
#
#   bench/replay_e2e.sh BEFORE/lumosim AFTER/lumosim TRACE...
#
# Environment: REPS=5 (processes per build and trace).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: replay_e2e.sh BEFORE_LUMOSIM AFTER_LUMOSIM TRACE..." >&2; exit 2; }
A=$1 B=$2
shift 2
REPS=${REPS:-5}
raw=$(mktemp)
one=$(mktemp)
trap 'rm -f "$raw" "$one"' EXIT
. "$(dirname "$0")/ab_loop.sh"
one_run() {
    /usr/bin/time -o "$one" -f '%e %M' "$2" replay "$3" >/dev/null 2>&1 || { echo "replay_e2e: $2 failed on $3" >&2; return 1; }
    echo "$1 $(stat -c %s "$3") $(tail -1 "$one") $3" >>"$raw"
}
ab_loop "$REPS" "$A" "$B" one_run "$@" || exit 1
python3 - "$raw" "$REPS" <<'PY'
import sys, statistics as st
rows = {}
for l in open(sys.argv[1]):
    side, size, e, m, f = l.split(None, 4)
    rows.setdefault((f.strip(), side), []).append((int(size), float(e), int(m)))
print("lumosim replay end to end: medians of %s processes per build, alternating" % sys.argv[2])
for f in dict.fromkeys(k[0] for k in rows):
    print(f)
    for side in ("before", "after"):
        r = rows[(f, side)]
        size = r[0][0]
        e = st.median(x[1] for x in r)
        m = st.median(x[2] for x in r)
        print("  %-6s wall %6.3f s  %6.1f MB/s  peak RSS %7d KiB  %.3f x input  (walls %s)" % (
            side, e, size / 1e6 / e, m, m * 1024.0 / size, ", ".join("%.2f" % x[1] for x in r)))
PY
