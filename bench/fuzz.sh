#!/usr/bin/env bash
# Run the libFuzzer targets for a set time each and print executions,
# coverage and crashes. Needs clang (Debian: clang, libclang-rt-14-dev).
#   SECONDS_PER_TARGET=300  BUILD_DIR=build-fuzz  TARGETS="kineto store cli"
# Targets (tests/fuzz/): kineto (Kineto reader, graph build, replay), store
# (HDF5 graph store / result file readers), cli (command-line option parser).
# Crashes are written to bench/out/fuzz/NAME/; copy each into
# tests/fuzz/corpus_NAME/ after fixing it, so it runs on every CI build.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
T=${SECONDS_PER_TARGET:-300}
BUILD_DIR=${BUILD_DIR:-build-fuzz}
TARGETS=${TARGETS:-kineto store cli}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    CC=clang cmake -S . -B "$BUILD_DIR" -DLSIM_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
fi
for t in $TARGETS; do
    cmake --build "$BUILD_DIR" -j2 --target "fuzz_$t" >/dev/null
done
out=bench/out/fuzz
for t in $TARGETS; do
    case $t in
        store) max_len=131072 ;; # the seeds are small HDF5 files (up to ~90 KB)
        cli) max_len=4096 ;;
        *) max_len=65536 ;;
    esac
    mkdir -p "$out/work_$t" "$out/$t"
    set +e
    "$BUILD_DIR/tests/fuzz/fuzz_$t" -max_total_time="$T" -max_len="$max_len" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$out/$t/" "$out/work_$t" "tests/fuzz/corpus_$t" >"$out/$t.log" 2>&1
    rc=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$t.log" | awk '{print $2}')
    cov=$(grep -o 'cov: [0-9]*' "$out/$t.log" | tail -1 | awk '{print $2}')
    crashes=$(find "$out/$t" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
    echo "fuzz_$t: ${T} s, ${execs:-?} executions, coverage ${cov:-?} edges, ${crashes} crash/leak/timeout inputs (exit $rc)"
done
