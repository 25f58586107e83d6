#!/bin/sh
# no_data_loss_mpi.sh MPIEXEC [FLAGS...] -- TRACE TRACE2
# Issue 17 under the launcher (serial cases: tests/integration/no_data_loss_cli.sh):
#   - replay, ablate and report are refused with exactly one error line
#     (rank 0's) saying to use build + sim: they have no parallel engine, and
#     every rank used to print the whole report; nothing on stdout, no output;
#   - at one rank they run as without mpirun;
#   - sim --mapping file:FIFO is refused with one line naming the FIFO on
#     every rank, never waited on.
# Every run is bounded by `timeout`; a timeout is a failure. Environment: LUMOSIM.
set -u
launcher=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher="$launcher $1"; shift; done
shift
T=$1 T2=$2
for a in "$T" "$T2"; do [ -e "$a" ] || { echo "$a missing: skipped"; exit 77; }; done
mpiexec=$(echo $launcher | cut -d' ' -f1)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "no_data_loss_mpi: $*"; exit 1; }

# case_ NAME NEEDLE ARGS...: refused (non-zero), one error line with NEEDLE,
# empty stdout
case_() {
    name=$1 needle=$2
    shift 2
    # shellcheck disable=SC2086
    timeout 120 $launcher "$LUMOSIM" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -ne 124 ] || fail "$name: the ranks hung"
    [ $rc -ne 0 ] || fail "$name: accepted"
    # (with --json the line is a JSON object: {"error": ...})
    [ "$(grep -c 'lumosim: error\|^{"error":' "$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "$name: not exactly one error line"; }
    grep -qF -- "$needle" "$tmp/err" || { cat "$tmp/err"; fail "$name: no clear message"; }
    [ ! -s "$tmp/out" ] || { cat "$tmp/out"; fail "$name: something on stdout"; }
    echo "ok: $name"
}
case_ replay "lumosim: error: replay does not run under mpirun (it would run once per rank): run it without mpirun, or for a parallel run use lumosim build, then mpirun lumosim sim" replay "$T"
case_ replay_json "replay does not run under mpirun" replay --json "$T"
case_ ablate "ablate does not run under mpirun" ablate "$T"
case_ report "report does not run under mpirun" report "$T" --html "$tmp/o.html"
[ ! -e "$tmp/o.html" ] || fail "report: a page was written"

# one rank: a serial run
timeout 120 "$mpiexec" -n 1 "$LUMOSIM" replay "$T" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "replay at np 1 failed"; }
grep -q "^rank 0" "$tmp/out" || fail "replay at np 1: no report"
echo "ok: replay at one rank"

"$LUMOSIM" build "$T" "$T2" -o "$tmp/job.h5" >/dev/null 2>&1 || fail "build failed"
mkfifo "$tmp/map.fifo" || fail "mkfifo"
case_ mapping_fifo "map.fifo: is a FIFO, not a file" sim --mapping "file:$tmp/map.fifo" "$tmp/job.h5" -o "$tmp/res.h5"
[ ! -e "$tmp/res.h5" ] || fail "mapping_fifo: a result file was left behind"
ls "$tmp" | grep -q 'tmp-' && fail "mapping_fifo: a temporary file was left behind"
echo "ok: no data loss under mpirun"
