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
#   - the critical-path track's slices have names of their own (the kind of
#     work, then the op's name), the op's name in args.op;
#   - a synthesized store has no /cpu_ops (it has no trace);
#   - with LAUNCHER (mpirun -np 2 ...): sim under the launcher draws the
#     trace from the archive, the serial trace's bytes; and of a synthesized
#     coupled job, whose critical path rank 0 walks over the archive (also
#     tests/mpi/sim_ranks.sh, TRACE=1; this test runs under the sanitizers).
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
# the critical-path track names its slices apart from the ops (the kind of
# work, then the op's name, cut past 80 bytes), the op's name in args.op:
# the name of the node's own slice on its rank, or for a piece of a CPU op
# or runtime call (written whole, without lumosim_node), a name in the traces
work = {"cpu": ("CPU op",), "runtime": ("runtime", "wait"), "kernel": ("GPU kernel", "collective"),
        "memcpy": ("memcpy",), "memset": ("memset",)}
own = {(e["pid"] // 1000000, e["args"]["lumosim_node"]): e["name"] for e in pred
       if e.get("ph") == "X" and e.get("cat") != "lumosim_critical_path" and "lumosim_node" in e.get("args", {})}
names = {e.get("name") for t in sys.argv[2:] for e in load(t) if e.get("ph") == "X"}
cp = [e for e in pred if e.get("ph") == "X" and e.get("cat") == "lumosim_critical_path"]
if not cp:
    sys.exit("trace_out_store: FAIL: no critical-path slices in the store's predicted trace")
for e in cp:
    a = e["args"]
    op = own.get((e["pid"] // 1000000, a["lumosim_node"]))
    if op is None and a.get("op") in names:
        op = a["op"]
    if op is None or a.get("op") != op:
        sys.exit("trace_out_store: FAIL: critical-path slice %r: args.op %r, the node's own slice is %r" % (e["name"], a.get("op"), op))
    cut = op if len(op.encode()) <= 80 else None
    ok = any(e["name"] == "%s: %s" % (k, cut) if cut is not None else
             e["name"].startswith(k + ": ") and e["name"].endswith("...") and op.startswith(e["name"][len(k) + 2:-3])
             for k in work.get(a["kind"], ()))
    if not ok or e["name"] == op:
        sys.exit("trace_out_store: FAIL: critical-path slice %r of a %s node %r is not named for its work" % (e["name"], a["kind"], op))
print("trace_out_store: %d critical-path slices named for their work, %d distinct names"
      % (len(cp), len(set(e["name"] for e in cp))))
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
    cmp -s "$tmp/s.json" "$tmp/m.json" || fail "under $launch the predicted trace differs from the serial one: $(cmp "$tmp/s.json" "$tmp/m.json")"
    # a coupled job: its critical path walked over the archive (rank 0), the
    # serial track byte for byte (the sanitizer phase runs this test)
    "$L" synth --model gpt3-15b --layers 2 --tp 2 --pp 2 --dp 1 --micro-batch 1 --global-batch 2 -o "$tmp/yj.h5" >/dev/null ||
        fail "synth of the job"
    "$L" sim "$tmp/yj.h5" --trace-out "$tmp/ys.json" >/dev/null || fail "sim --trace-out of the synthesized job"
    grep -q '"cat":"lumosim_job_critical_path"' "$tmp/ys.json" || fail "no job critical path in the serial trace"
    # shellcheck disable=SC2086
    $launch "$L" sim "$tmp/yj.h5" -o "$tmp/ya.h5" --trace-out "$tmp/ym.json" >/dev/null || fail "sim of the job under $launch"
    cmp -s "$tmp/ys.json" "$tmp/ym.json" || fail "under $launch the job's trace differs: $(cmp "$tmp/ys.json" "$tmp/ym.json")"
fi
echo "trace_out_store: ok"
