#!/bin/sh
# store_detail.sh MODE TRACE  (environment: LUMOSIM; H5REFILTER for filters)
#
#   detail   lumosim sim -o at each --detail: the archive's run holds the
#            datasets its level says and none of the others, records the
#            level (attribute, lumosim info), its per-GPU, iteration,
#            kernel, duty and critical-path tables are the same at every
#            level (h5diff), the report printed is the same, report --csv
#            of a summary is the full archive's, and what needs per-node
#            rows (--trace-out) says so in one line
#   filters  a store whose /nodes/dur names a filter this HDF5 lacks (zstd,
#            lz4: rewritten by h5refilter): sim fails with one line
#            naming the file, the dataset, the filter and its package;
#            nothing is written
set -u
mode=$1
trace=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "store_detail $mode: $*"; exit 1; }
for t in h5ls h5diff h5dump; do
    command -v $t >/dev/null 2>&1 || { echo "SKIP: $t not installed (hdf5-tools)"; exit 77; }
done
"$LUMOSIM" build "$trace" -o "$tmp/job.h5" >/dev/null || fail "build failed"

# one error line on stderr, nothing on stdout, exit 1; $1: the expected words
one_error() {
    st=$1
    shift
    [ "$st" = 1 ] || fail "exit $st, expected 1"
    [ ! -s "$tmp/out" ] || fail "stdout not empty: $(head -c 200 "$tmp/out")"
    [ "$(wc -l <"$tmp/err")" = 1 ] || fail "expected one error line, got: $(cat "$tmp/err")"
    for w in "$@"; do
        grep -qF -- "$w" "$tmp/err" || fail "the error line lacks '$w': $(cat "$tmp/err")"
    done
}

case $mode in
detail)
    for d in nodes ops summary; do
        "$LUMOSIM" sim --json "$tmp/job.h5" -o "$tmp/$d.h5" --detail $d >"$tmp/$d.json" || fail "sim --detail $d failed"
        h5ls -r "$tmp/$d.h5" | awk '{print $1}' >"$tmp/$d.ls" || fail "h5ls cannot read the $d archive"
        h5dump -a /runs/sim/detail "$tmp/$d.h5" | grep -q "\"$d\"" || fail "run attribute detail is not \"$d\""
        "$LUMOSIM" info "$tmp/$d.h5" | grep -q "detail $d" || fail "lumosim info does not say detail $d"
        cmp -s "$tmp/nodes.json" "$tmp/$d.json" || fail "the report printed at --detail $d differs from nodes"
    done
    "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/default.h5" >/dev/null || fail "sim -o failed"
    h5dump -a /runs/sim/detail "$tmp/default.h5" | grep -q '"ops"' || fail "the default level is not ops"
    has() { grep -qx "$2" "$tmp/$1.ls"; }
    for d in nodes ops summary; do
        for x in /runs/sim/gpus/window_predicted /runs/sim/iterations/predicted /runs/sim/kernels/count \
                 /runs/sim/duty/predicted /runs/sim/critical_path/node; do
            has $d $x || fail "--detail $d lacks $x"
        done
    done
    for x in /runs/sim/nodes/start /runs/sim/nodes/end /runs/sim/nodes/bind_start /runs/sim/graph/nodes/kind; do
        has nodes $x || fail "--detail nodes lacks $x"
    done
    for x in /runs/sim/nodes/start /runs/sim/nodes/end /runs/sim/graph/nodes/kind /runs/sim/graph/edges/in_src; do
        has ops $x || fail "--detail ops lacks $x"
    done
    ! has ops /runs/sim/nodes/bind_start || fail "--detail ops keeps nodes/bind_start"
    ! has ops /runs/sim/nodes/bind_end || fail "--detail ops keeps nodes/bind_end"
    ! grep -q '^/runs/sim/nodes' "$tmp/summary.ls" || fail "--detail summary keeps per-node rows"
    ! grep -q '^/runs/sim/graph' "$tmp/summary.ls" || fail "--detail summary keeps the graphs"
    # the tables every level keeps are the same datasets, value for value
    for d in ops summary; do
        for g in gpus iterations kernels duty critical_path; do
            h5diff "$tmp/nodes.h5" "$tmp/$d.h5" /runs/sim/$g /runs/sim/$g >"$tmp/diff" 2>&1 ||
                fail "/runs/sim/$g differs between --detail nodes and $d: $(head -5 "$tmp/diff")"
        done
    done
    for x in nodes/start nodes/end graph; do
        h5diff "$tmp/nodes.h5" "$tmp/ops.h5" /runs/sim/$x /runs/sim/$x >"$tmp/diff" 2>&1 ||
            fail "/runs/sim/$x differs between --detail nodes and ops: $(head -5 "$tmp/diff")"
    done
    # the engines keep the deciding edges only when something shows them
    # (--detail nodes, --critical-path): the critical path is the same
    # whichever level asked for it, and not empty
    for d in nodes ops; do
        "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/cp$d.h5" --detail $d --critical-path >/dev/null ||
            fail "sim --critical-path --detail $d failed"
    done
    h5diff "$tmp/cpnodes.h5" "$tmp/cpops.h5" /runs/sim/critical_path /runs/sim/critical_path >"$tmp/diff" 2>&1 ||
        fail "the critical path differs between --detail nodes and ops: $(head -5 "$tmp/diff")"
    h5ls "$tmp/cpops.h5/runs/sim/critical_path/node" | grep -q 'Dataset {[1-9]' ||
        fail "--critical-path --detail ops wrote an empty critical path"
    # the HTML page and report's --csv are drawn from the tables, a
    # summary's too: its CSV is the full archive's
    "$LUMOSIM" report "$tmp/ops.h5" --html "$tmp/ops.html" >/dev/null || fail "report of an ops archive failed"
    "$LUMOSIM" report "$tmp/summary.h5" --html "$tmp/s.html" >/dev/null || fail "report of a summary archive failed"
    "$LUMOSIM" report "$tmp/summary.h5" --html "$tmp/s2.html" --csv "$tmp/s2.csv" >/dev/null ||
        fail "report --csv of a summary archive failed"
    "$LUMOSIM" report "$tmp/nodes.h5" --html "$tmp/n2.html" --csv "$tmp/n2.csv" >/dev/null ||
        fail "report --csv of a nodes archive failed"
    cmp -s "$tmp/s2.csv" "$tmp/n2.csv" || fail "report --csv of the summary archive differs from the full one's"
    # usage: an unknown level, a level without an archive, --trace-out without nodes
    "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/x.h5" --detail all >"$tmp/out" 2>"$tmp/err"
    [ $? = 2 ] && grep -q "unknown --detail 'all'" "$tmp/err" || fail "--detail all: $(cat "$tmp/err")"
    "$LUMOSIM" sim "$tmp/job.h5" --detail ops >"$tmp/out" 2>"$tmp/err"
    [ $? = 2 ] && grep -q "needs -o" "$tmp/err" || fail "--detail without -o: $(cat "$tmp/err")"
    "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/x.h5" --detail ops --trace-out "$tmp/t.json" >"$tmp/out" 2>"$tmp/err"
    [ $? = 2 ] && grep -q "only --detail nodes keeps" "$tmp/err" || fail "--trace-out --detail ops: $(cat "$tmp/err")"
    [ ! -e "$tmp/x.h5" ] && [ ! -e "$tmp/t.json" ] || fail "a refused command line wrote output"
    "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/t.h5" --trace-out "$tmp/t.json" >/dev/null || fail "sim --trace-out failed"
    h5dump -a /runs/sim/detail "$tmp/t.h5" | grep -q '"nodes"' || fail "--trace-out does not default to --detail nodes"
    echo "ok: every level writes what it says"
    ;;
filters)
    : "${H5REFILTER:?set H5REFILTER to the h5refilter helper}"
    for f in "32015 zstd python3-hdf5plugin" "32004 lz4 hdf5-filter-plugin"; do
        set -- $f
        cp "$tmp/job.h5" "$tmp/bad.h5"
        "$H5REFILTER" "$tmp/bad.h5" nodes/dur "$1" || fail "h5refilter failed"
        "$LUMOSIM" sim "$tmp/bad.h5" -o "$tmp/res.h5" >"$tmp/out" 2>"$tmp/err"
        one_error $? "lumosim: error: $tmp/bad.h5: " "/nodes/dur" "filter $1 ($2)" "$3"
        [ ! -e "$tmp/res.h5" ] || fail "sim of a store it cannot decode wrote $tmp/res.h5"
        echo "ok: $(cat "$tmp/err")"
    done
    # the same store without the foreign filter reads
    "$LUMOSIM" sim "$tmp/job.h5" -o "$tmp/res.h5" >/dev/null || fail "sim of the untouched store failed"
    ;;
*)
    fail "unknown mode"
    ;;
esac
