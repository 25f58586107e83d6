#!/bin/sh
# trace_out_store.sh [LAUNCHER... --] TRACE...   (environment: LUMOSIM)
#
# A graph store keeps each traced GPU's CPU op tree (/cpu_ops, issue 39), so
# the predicted trace of a store writes every CPU op whole, as the replay of
# the traces does:
#   - lumosim build TRACE... then lumosim sim --trace-out writes the same
#     bytes as lumosim replay TRACE... --trace-out, and so does lumosim replay
#     of the store;
#   - its ProfilerStep annotations are as many as the traces' own (counted
#     from the trace JSON), none cut into pieces;
#   - a synthesized store has no /cpu_ops (it has no trace);
#   - with LAUNCHER (mpirun -np 2 ...): sim under the launcher draws the
#     trace from the archive, and writes the serial trace's events (the job
#     critical path's track aside: not drawn under mpirun).
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
L=$LUMOSIM
launch=""
for a in "$@"; do
    [ "$a" = "--" ] && launch=yes
done
if [ -n "$launch" ]; then
    launch=""
    while [ "$1" != "--" ]; do
        launch="$launch $1"
        shift
    done
    shift
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "trace_out_store: FAIL: $*"; exit 1; }
for t in "$@"; do [ -f "$t" ] || { echo "skipped: $t is absent"; exit 77; }; done

"$L" build "$@" -o "$tmp/s.h5" >/dev/null || fail "build"
"$L" replay "$@" --trace-out "$tmp/r.json" >/dev/null || fail "replay --trace-out"
"$L" sim "$tmp/s.h5" --trace-out "$tmp/s.json" >/dev/null || fail "sim --trace-out"
cmp -s "$tmp/r.json" "$tmp/s.json" || fail "the store's predicted trace differs from the replay's: $(cmp "$tmp/r.json" "$tmp/s.json")"
"$L" replay "$tmp/s.h5" --trace-out "$tmp/rs.json" >/dev/null || fail "replay of the store --trace-out"
cmp -s "$tmp/r.json" "$tmp/rs.json" || fail "replay of the store writes another trace than replay of the traces"

python3 - "$tmp/s.json" "$@" <<'PY' || exit 1
import gzip, json, sys
def load(p):
    f = gzip.open(p, "rt") if p.endswith(".gz") else open(p)
    d = json.load(f)
    return d["traceEvents"] if isinstance(d, dict) else d
def steps(ev, cat):
    return sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") == cat and str(e.get("name", "")).startswith("ProfilerStep#"))
want = sum(steps(load(t), "user_annotation") for t in sys.argv[2:])
pred = load(sys.argv[1])
got = steps(pred, "user_annotation")
pieces = steps(pred, "cpu_op")
if want == 0:
    sys.exit("trace_out_store: FAIL: the traces have no ProfilerStep annotation to check")
if got != want or pieces:
    sys.exit("trace_out_store: FAIL: %d whole ProfilerStep annotations and %d pieces in the store's predicted trace, "
             "the traces have %d" % (got, pieces, want))
print("trace_out_store: %d ProfilerStep annotations whole" % got)
PY

if command -v h5ls >/dev/null 2>&1; then
    h5ls "$tmp/s.h5" | grep -q '^cpu_ops' || fail "the store has no /cpu_ops"
    "$L" synth --model gpt3-15b --layers 2 --tp 2 --pp 2 --dp 1 --micro-batch 1 --global-batch 2 -o "$tmp/y.h5" >/dev/null ||
        fail "synth"
    h5ls "$tmp/y.h5" | grep -q '^cpu_ops' && fail "a synthesized store has /cpu_ops"
fi

if [ -n "$launch" ]; then
    # shellcheck disable=SC2086
    $launch "$L" sim "$tmp/s.h5" -o "$tmp/a.h5" --trace-out "$tmp/m.json" >/dev/null || fail "sim under $launch"
    python3 - "$tmp/s.json" "$tmp/m.json" <<'PY' || exit 1
import json, sys
def events(p):
    ev = json.load(open(p))["traceEvents"]
    return [e for e in ev if e.get("ph") != "M" and e.get("cat") != "lumosim_job_critical_path"]
a, b = events(sys.argv[1]), events(sys.argv[2])
if a != b:
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    sys.exit("trace_out_store: FAIL: under the launcher %d events, serially %d; first difference at %d: %r / %r"
             % (len(b), len(a), n, b[n] if n < len(b) else None, a[n] if n < len(a) else None))
print("trace_out_store: the launcher's trace has the serial trace's %d events" % len(a))
PY
fi
echo "trace_out_store: ok"
