#!/usr/bin/env bash
# ab_replay.sh: two builds of bench_replay, before and after a change, on the
# same traces, alternating run by run (so that the load of a shared machine
# falls on both alike); prints per trace the medians of ingest, build, total
# time and peak RSS, and the before/after ratio. Figures quoted in
# docs/performance.md ("Figures behind design choices") come from it.
#
#   bench/ab_replay.sh BEFORE/bench_replay AFTER/bench_replay TRACE...
#
# Environment: REPS=5 (processes per build and trace). Make BEFORE from the
# commit to compare with, e.g.
#   git archive HEAD | tar -x -C /tmp/before && cmake -S /tmp/before -B /tmp/before/build \
#     && cmake --build /tmp/before/build -j2 --target bench_replay
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: ab_replay.sh BEFORE_BENCH AFTER_BENCH TRACE..." >&2; exit 2; }
A=$1 B=$2
shift 2
REPS=${REPS:-5}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
. "$(dirname "$0")/ab_loop.sh"
one_run() {
    local line
    line=$("$2" --runs 1 "$3" | grep '^BENCH ') || { echo "ab_replay: $2 failed on $3" >&2; return 1; }
    echo "$1 $line" >>"$raw"
}
ab_loop "$REPS" "$A" "$B" one_run "$@" || exit 1
python3 - "$raw" "$REPS" <<'PY'
import sys, statistics as st
rows = {}
for l in open(sys.argv[1]):
    side, _, rest = l.strip().partition(" BENCH ")
    kv, _, f = rest.partition(" file=")
    d = dict(x.split("=", 1) for x in kv.split())
    rows.setdefault((f, side), []).append(d)
print("medians of %s processes per build, alternating; ratio = before / after" % sys.argv[2])
for f in dict.fromkeys(k[0] for k in rows):
    print(f)
    for key, name in (("ingest_s", "ingest s"), ("build_s", "build s"), ("total_s", "total s"), ("rss_mib", "peak RSS MiB")):
        b = st.median(float(d[key]) for d in rows[(f, "before")])
        a = st.median(float(d[key]) for d in rows[(f, "after")])
        print("  %-13s before %9.4f  after %9.4f  ratio %.2f" % (name, b, a, b / a if a else float("nan")))
    for key in ("nodes", "edges"):
        vb = {d[key] for d in rows[(f, "before")]}; va = {d[key] for d in rows[(f, "after")]}
        print("  %-13s before %s  after %s%s" % (key, ",".join(vb), ",".join(va), "" if vb == va else "  DIFFERENT"))
PY
