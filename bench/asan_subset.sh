#!/usr/bin/env bash
# bench/asan_subset.sh: which tests may CI's sanitizer phase leave out?
#
#   bash bench/asan_subset.sh [--work DIR] [-j N] [--cheap S] [--trade L:S] [-R REGEX] ASAN_BUILD > tests/asan-covered.txt
#
# CI runs the whole suite twice: plain (the README's command) and under
# AddressSanitizer + UndefinedBehaviorSanitizer. Under the sanitizers a test
# finds a bug only in the lines it runs, so a test whose product lines
# (src/, io/, mpi/, include/) the other tests all run adds sanitizer time
# and no sanitizer coverage. This script measures that:
#   1. builds the tree with gcc --coverage (Debug, -O1) in WORK/build;
#   2. runs every test alone with its own GCOV_PREFIX (N at a time; a test
#      that fails there, e.g. two users of one fixture at once, runs again
#      alone), and reads each test's executed lines with gcov;
#   3. keeps every test cheaper than S seconds (default 3) under the
#      sanitizers, then greedily the test that runs the most lines not yet
#      run per sanitizer second, until every line that any candidate runs is
#      run, then drops kept tests the others cover (bench/asan_subset.py);
#   4. with --trade L:S, also leaves out each kept test of S seconds or more
#      that alone runs at most L lines, and names those lines in the header
#      (a measured trade of sanitizer coverage for time, stated).
# The candidates are ASAN_BUILD's tests not labelled heavy; their costs are
# ASAN_BUILD's CTestCostData.txt, so run the sanitizer suite there first.
# Prints the tests left out (with a header stating the line counts and the
# times) on stdout; tests/asan-covered.txt is that output, and CMake labels
# the tests it names asan_covered (tests/CMakeLists.txt). About 25 minutes
# on 2 cores. Writes only under WORK (default: a new directory under
# $TMPDIR, removed at the end unless --work was given).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work="" jobs=2 cheap=3 only="" trade=""
while [ $# -gt 1 ]; do
    case $1 in
        --work) work=$2; shift 2 ;;
        -j) jobs=$2; shift 2 ;;
        --cheap) cheap=$2; shift 2 ;;
        --trade) trade=$2; shift 2 ;;
        -R) only=$2; shift 2 ;; # only these tests, as candidates too (a quick check of the script)
        *) echo "asan_subset.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ $# -eq 1 ] || { echo "usage: bash bench/asan_subset.sh [--work DIR] [-j N] [--cheap S] [--trade L:S] [-R REGEX] ASAN_BUILD" >&2; exit 2; }
asan=$(cd "$1" && pwd)
[ -f "$asan/Testing/Temporary/CTestCostData.txt" ] ||
    { echo "asan_subset.sh: $asan has no CTestCostData.txt: run its tests first" >&2; exit 2; }
if [ -z "$work" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 CI=true
shared=()
[ -d "$src/../shared/traces" ] && shared=("-DLSIM_SHARED_TRACES=$src/../shared/traces")
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-g -O1 --coverage" \
    -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage "${shared[@]}" >&2
cmake --build "$work/build" -j"$jobs" >&2
ctest --test-dir "$work/build" -N ${only:+-R "$only"} | sed -n 's/^ *Test *#\([0-9]*\): \(.*\)$/\1: \2/p' >"$work/names"
ctest --test-dir "$asan" -N -LE heavy ${only:+-R "$only"} | sed -n 's/^ *Test *#[0-9]*: \(.*\)$/\1/p' >"$work/candidates"

# one test, its gcda files under $work/t<index> (GCOV_PREFIX keeps the
# build's absolute paths below it)
cat >"$work/one.sh" <<EOF
#!/bin/sh
GCOV_PREFIX=$work/t\$1 ctest --test-dir $work/build -I \$1,\$1 >$work/log\$1 2>&1 || echo \$1 >>$work/failed
EOF
: >"$work/failed"
cut -d: -f1 "$work/names" | xargs -P"$jobs" -n1 sh "$work/one.sh"
mv "$work/failed" "$work/failed1"
: >"$work/failed"
for i in $(cat "$work/failed1"); do rm -rf "$work/t$i"; sh "$work/one.sh" "$i"; done
# the executed product lines of each test, FILE:LINE (the .gcno files stay
# in the build; gcov wants one beside each .gcda)
for i in $(cut -d: -f1 "$work/names"); do
    d="$work/t$i"
    : >"$work/L$i"
    [ -d "$d" ] || continue
    find "$d" -name '*.gcda' | while read -r g; do
        n=${g#"$d"}
        ln -sf "${n%.gcda}.gcno" "${g%.gcda}.gcno"
    done
    (cd "$d" && find "$d" -name '*.gcda' | xargs gcov -j --stdout 2>/dev/null) | SRC="$src" python3 -c '
import json, os, sys
root = os.environ["SRC"] + "/"
mine = tuple(root + p for p in ("src/", "io/", "mpi/", "include/"))
out = set()
for row in sys.stdin:
    try:
        j = json.loads(row)
    except ValueError:
        continue
    for f in j.get("files", []):
        if f["file"].startswith(mine):
            out.update("%s:%d" % (f["file"][len(root):], l["line_number"]) for l in f["lines"] if l["count"] > 0)
print("\n".join(sorted(out)))
' >"$work/L$i"
done
echo "# bash bench/asan_subset.sh on $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%d)"
if [ -s "$work/failed" ]; then
    echo "# failed under coverage (their lines still count): $(tr '\n' ' ' <"$work/failed")"
fi
python3 "$src/bench/asan_subset.py" "$work" "$work/names" "$asan/Testing/Temporary/CTestCostData.txt" \
    "$work/candidates" "$cheap" ${trade:+${trade%%:*} ${trade#*:}}
