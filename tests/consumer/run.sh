#!/bin/sh
# run.sh BUILD_DIR SOURCE_DIR TRACE   (environment: LUMOSIM, JSON_CHECK)
# Installs the build into a temporary prefix, builds tests/consumer against
# it with find_package(lumosim), runs it on TRACE and checks that the window
# it predicts is the one `lumosim replay --json` predicts (same library, same
# defaults, so the same nanoseconds).
set -u
build=$1 src=$2 trace=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "consumer: $*"; exit 1; }
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || fail "install failed: $(tail -5 "$tmp/install.log")"
[ -f "$tmp/prefix/lib/cmake/lumosim/lumosimConfig.cmake" ] || fail "no package config installed"
cmake -S "$src/tests/consumer" -B "$tmp/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/cfg.log" 2>&1 ||
    fail "configure against the installed package failed: $(tail -8 "$tmp/cfg.log")"
cmake --build "$tmp/b" >"$tmp/build.log" 2>&1 || fail "build failed: $(tail -8 "$tmp/build.log")"
# core alone: no MPI or HDF5 library may be linked in
if command -v ldd >/dev/null 2>&1 && ldd "$tmp/b/consumer" | grep -qiE 'libmpi|libhdf5'; then
    fail "the core-only program links MPI or HDF5: $(ldd "$tmp/b/consumer" | grep -iE 'mpi|hdf5')"
fi
got=$("$tmp/b/consumer" "$trace") || fail "the consumer program failed"
"$LUMOSIM" replay --json "$trace" >"$tmp/r.json" || fail "lumosim replay failed"
"$JSON_CHECK" "$tmp/r.json" "ranks.0.window.predicted_ns==$got" || fail "consumer predicts $got ns, lumosim replay does not"
echo "consumer: predicted window $got ns, as lumosim replay"
