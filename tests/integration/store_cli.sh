#!/bin/sh
# store_cli.sh MODE ARGS...  (environment: LUMOSIM, JSON_CHECK)
#
#   same PATH...     lumosim build PATH... -o job.h5 && lumosim sim job.h5 --json
#                    must print exactly what lumosim replay --json PATH... prints
#                    (bit-identical results from the store and from the JSON);
#                    also with --latency observed, and report from the archive.
#   h5dump PATH...   the result archive holds the documented datasets and
#                    attributes with the documented shapes (h5dump -H)
#   h5py PATH        recompute each GPU's predicted window from the per-node
#                    datasets with h5py and compare with the stored summary
#                    (exit 77 when no python3 with h5py is installed)
#   bad PATH         corrupt stores: truncated at several offsets, a result
#                    file given to sim, a trace given to sim, an output that
#                    already holds the run or is no result file: one error
#                    line, exit 1, no crash, nothing changed
set -u
mode=$1
shift
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "store_cli $mode: $*"; exit 1; }

case $mode in
same)
    for a in "$@"; do [ -e "$a" ] || { echo "SKIP: $a is missing (shared traces not checked out beside the repository?)"; exit 77; }; done
    for lat in model observed; do
        "$LUMOSIM" replay --json --latency $lat "$@" >"$tmp/replay.json" || fail "replay failed"
        "$LUMOSIM" build --force --latency $lat "$@" -o "$tmp/job.h5" || fail "build failed"
        "$LUMOSIM" sim --json "$tmp/job.h5" -o "$tmp/res.h5" --run $lat >"$tmp/sim.json" || fail "sim failed"
        cmp -s "$tmp/replay.json" "$tmp/sim.json" || fail "sim from the store differs from replay ($lat)"
        "$LUMOSIM" report "$tmp/res.h5" --run $lat --html "$tmp/r.html" || fail "report from the archive failed"
        grep -q 'class="iter"' "$tmp/r.html" || fail "report from the archive has no iteration bars"
    done
    echo "ok: store and JSON give identical results"
    ;;
h5dump)
    command -v h5dump >/dev/null 2>&1 || { echo "h5dump not installed: skipped"; exit 77; }
    "$LUMOSIM" build "$@" -o "$tmp/job.h5" >/dev/null || fail "build failed"
    "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/res.h5" >/dev/null || fail "sim failed"
    h5dump -H "$tmp/job.h5" >"$tmp/job.txt" || fail "h5dump cannot read the graph store"
    h5dump -H "$tmp/res.h5" >"$tmp/res.txt" || fail "h5dump cannot read the result file"
    for a in schema_version kind lumosim_version created_by latency_mode; do
        grep -q "ATTRIBUTE \"$a\"" "$tmp/job.txt" || fail "graph store lacks attribute $a"
    done
    for d in kind flags proc name dur obs_start obs_end release corr iter coll in_off in_src in_delay in_class \
             node_offset node_count edge_offset edge_count pid tid chars; do
        grep -q "DATASET \"$d\"" "$tmp/job.txt" || fail "graph store lacks dataset $d"
    done
    h5dump -a /schema_version "$tmp/job.h5" | grep -q "(0): 1" || fail "schema_version is not 1"
    # per-node datasets: one row per node of all GPUs (sum of /gpus/node_count)
    nodes=$(h5dump -d /gpus/node_count -y "$tmp/job.h5" | awk '/DATA \{/ {on=1; next} on && /\}/ {on=0} on' |
            tr ',' '\n' | awk 'NF {s+=$1} END {print s}')
    [ -n "$nodes" ] && [ "$nodes" -gt 0 ] || fail "cannot sum /gpus/node_count"
    grep -A3 'DATASET "start"' "$tmp/res.txt" | grep -q "( $nodes )" || fail "/runs/sim/nodes/start does not have $nodes rows"
    grep -A3 'DATASET "dur"' "$tmp/job.txt" | grep -q "( $nodes )" || fail "/nodes/dur does not have $nodes rows"
    for d in start end window_actual window_predicted breakdown_actual breakdown_predicted; do
        grep -q "DATASET \"$d\"" "$tmp/res.txt" || fail "result file lacks dataset $d"
    done
    grep -q 'GROUP "provenance"' "$tmp/res.txt" || fail "run provenance group missing"
    echo "ok: h5dump finds the documented layout ($nodes nodes)"
    ;;
h5py)
    py=""
    for p in /usr/bin/python3 python3; do
        if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import h5py, numpy' 2>/dev/null; then py=$p; break; fi
    done
    [ -n "$py" ] || { echo "no python3 with h5py: skipped"; exit 77; }
    "$LUMOSIM" build "$@" -o "$tmp/job.h5" >/dev/null || fail "build failed"
    "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/res.h5" >/dev/null || fail "sim failed"
    "$py" - "$tmp/res.h5" <<'PY' || exit 1
import sys, h5py
f = h5py.File(sys.argv[1], "r")
run = f["runs"]["sim"]
start, end = run["nodes"]["start"][:], run["nodes"]["end"][:]
g = run["gpus"]
off, cnt, pred = g["node_offset"][:], g["node_count"][:], g["window_predicted"][:]
for i in range(len(off)):
    s, e = start[off[i]:off[i] + cnt[i]], end[off[i]:off[i] + cnt[i]]
    w = int(e.max()) - int(s.min())
    if w != int(pred[i]):
        print("gpu %d: window from per-node data %d != stored %d" % (i, w, int(pred[i])))
        sys.exit(1)
print("ok: h5py recomputes every GPU's predicted window (%d GPUs)" % len(off))
PY
    ;;
bad)
    "$LUMOSIM" build "$@" -o "$tmp/job.h5" >/dev/null || fail "build failed"
    "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/res.h5" >/dev/null || fail "sim failed"
    size=$(wc -c <"$tmp/job.h5")
    for pct in 1 10 50 90 99; do
        head -c $((size * pct / 100)) "$tmp/job.h5" >"$tmp/cut.h5"
        "$LUMOSIM" sim "$tmp/cut.h5" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ $rc -eq 1 ] || fail "truncated at $pct %: exit $rc, want 1"
        [ ! -s "$tmp/out" ] || fail "truncated at $pct %: something on stdout"
        [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "truncated at $pct %: not one error line: $(cat "$tmp/err")"
        grep -q "cut.h5" "$tmp/err" || fail "truncated at $pct %: the error does not name the file"
        "$LUMOSIM" replay "$tmp/cut.h5" >/dev/null 2>"$tmp/err2"
        [ $? -eq 1 ] || fail "replay of a store truncated at $pct % did not fail cleanly"
    done
    "$LUMOSIM" sim "$tmp/res.h5" >/dev/null 2>"$tmp/err" && fail "sim accepted a result file"
    grep -q "is a lumosim result archive" "$tmp/err" || fail "sim on a result file: $(cat "$tmp/err")"
    "$LUMOSIM" sim "$1" >/dev/null 2>"$tmp/err" && fail "sim accepted a trace"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "sim on a trace: not one error line"
    "$LUMOSIM" info "$tmp/cut.h5" >/dev/null 2>&1 && fail "info accepted a truncated file"
    # an output that already holds the run, or is no result file, is refused
    # (before the store is read) and left untouched
    cp "$tmp/res.h5" "$tmp/res0.h5"
    "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/res.h5" >"$tmp/out" 2>"$tmp/err" && fail "sim overwrote run 'sim'"
    grep -q "res.h5: already holds a run named 'sim'" "$tmp/err" || fail "existing run: $(cat "$tmp/err")"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "existing run: not one error line"
    cmp -s "$tmp/res.h5" "$tmp/res0.h5" || fail "the refused result file changed"
    echo "not hdf5" >"$tmp/other.h5"
    "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/other.h5" >"$tmp/out" 2>"$tmp/err" && fail "sim wrote over a non-result file"
    grep -q "other.h5" "$tmp/err" && grep -q "not overwritten" "$tmp/err" || fail "non-result output: $(cat "$tmp/err")"
    [ "$(cat "$tmp/other.h5")" = "not hdf5" ] || fail "the non-result output changed"
    "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/res.h5" --replace >/dev/null 2>"$tmp/err" || fail "--replace refused: $(cat "$tmp/err")"
    echo "ok: damaged and wrong stores give one error line"
    ;;
*) fail "unknown mode" ;;
esac
