#!/usr/bin/env bash
# Run the libFuzzer targets for a set time and print executions, coverage and
# crashes. Needs clang (Debian: clang, libclang-rt-14-dev).
#   SECONDS_PER_TARGET=300  BUILD_DIR=build-fuzz
# Crashes are written to bench/out/fuzz/; copy each into
# tests/fuzz/corpus_kineto/ after fixing it, so it runs on every CI build.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
T=${SECONDS_PER_TARGET:-300}
BUILD_DIR=${BUILD_DIR:-build-fuzz}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    CC=clang cmake -S . -B "$BUILD_DIR" -DLSIM_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
fi
cmake --build "$BUILD_DIR" -j2 --target fuzz_kineto >/dev/null
out=bench/out/fuzz
mkdir -p "$out/work_kineto"
set +e
"$BUILD_DIR/tests/fuzz/fuzz_kineto" -max_total_time="$T" -max_len=65536 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$out/" "$out/work_kineto" tests/fuzz/corpus_kineto >"$out/kineto.log" 2>&1
rc=$?
set -e
execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/kineto.log" | awk '{print $2}')
cov=$(grep -o 'cov: [0-9]*' "$out/kineto.log" | tail -1 | awk '{print $2}')
crashes=$(find "$out" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' -o -maxdepth 1 -name 'timeout-*' | wc -l)
echo "fuzz_kineto: ${T} s, ${execs:-?} executions, coverage ${cov:-?} edges, ${crashes} crash/leak/timeout inputs (exit $rc)"
