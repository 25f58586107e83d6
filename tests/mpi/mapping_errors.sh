#!/bin/sh
# mapping_errors.sh MPIEXEC [FLAGS...] -- TRACE...
# A bad --mapping under mpirun: each case must exit non-zero on every rank
# with exactly one error line naming the file (and line) and the problem,
# and leave no result or temporary file. The ranks never hang: the launcher
# is wrapped in `timeout`. Environment: LUMOSIM.
set -u
launcher=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher="$launcher $1"; shift; done
shift
for a in "$@"; do [ -e "$a" ] || { echo "$a missing: skipped"; exit 77; }; done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "mapping_errors: $*"; exit 1; }
"$LUMOSIM" build "$@" -o "$tmp/job.h5" || fail "build failed"
ngpu=$("$LUMOSIM" info "$tmp/job.h5" | sed -n 's/^  \([0-9][0-9]*\) GPUs:.*/\1/p')
[ "${ngpu:-0}" -ge 2 ] || fail "need a store of at least 2 GPUs"
last=$((ngpu - 1))

# case NAME EXPECTED-REGEX MAPPING-FILE-CONTENT
case_() {
    name=$1 want=$2
    printf '%b' "$3" >"$tmp/$name.map"
    # shellcheck disable=SC2086
    timeout 120 $launcher "$LUMOSIM" sim --mapping "file:$tmp/$name.map" "$tmp/job.h5" -o "$tmp/res.h5" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -ne 124 ] || fail "$name: the ranks hung"
    [ $rc -ne 0 ] || fail "$name: accepted"
    grep -q "lumosim: error: .*$want" "$tmp/err" || { cat "$tmp/err"; fail "$name: no clear message"; }
    [ "$(grep -c 'lumosim: error' "$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "$name: not exactly one error line"; }
    [ ! -e "$tmp/res.h5" ] || fail "$name: a result file was left behind"
    ls "$tmp" | grep -q 'tmp-' && fail "$name: a temporary file was left behind"
    echo "ok: $name"
}
all=""
g=0
while [ $g -lt "$ngpu" ]; do all="$all$g 0\n"; g=$((g + 1)); done
case_ twice "twice.map:2: GPU 0 is mapped twice" "0 0\n0 1\n"
case_ missing "missing.map: GPU $last is not mapped" "$(printf '%b' "$all" | sed '$d')\n"
case_ no_such_gpu "no_such_gpu.map:1: GPU $ngpu does not exist" "$ngpu 0\n"
case_ no_such_rank "no_such_rank.map:1: MPI rank 99 does not exist" "0 99\n"
case_ garbage "garbage.map:2: expected \"GPU RANK\"" "# a comment\nzero one\n"
rm -f "$tmp/nofile.map"
# shellcheck disable=SC2086
timeout 120 $launcher "$LUMOSIM" sim --mapping "file:$tmp/nofile.map" "$tmp/job.h5" -o "$tmp/res.h5" >"$tmp/out" 2>"$tmp/err" &&
    fail "a missing mapping file was accepted"
grep -q "lumosim: error: .*nofile.map: cannot read the mapping file" "$tmp/err" || { cat "$tmp/err"; fail "missing file: no clear message"; }
[ ! -e "$tmp/res.h5" ] || fail "missing file: a result file was left behind"
"$LUMOSIM" sim --mapping bogus "$tmp/job.h5" >"$tmp/out" 2>"$tmp/err" && fail "--mapping bogus accepted"
grep -q "unknown --mapping 'bogus'" "$tmp/err" || fail "--mapping bogus: no clear message"
echo "ok: bad mappings refused on every rank"
