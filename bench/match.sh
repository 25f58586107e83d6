#!/usr/bin/env bash
# The collective match over MPI ranks, before and after issue 20: per-rank
# peak memory and time of the matching phase on synthesized GPT-3 175B jobs
# (TP8 PP8, DP = GPUs / 64, micro-batch 1, 24 micro-batches per pipeline,
# 1F1B: the jobs of bench/gpt3_scaling.sh), at K = 1, 2 and 4 ranks
# (K = 4 oversubscribed on a 2-core machine: its times judge little).
#
# Per size, per K, per method, RUNS runs (default 3), the methods and K
# alternated within each repetition:
#   mpirun -np K bench_match --method gather STORE   (before: every rank
#       gathers and matches the whole job, as run_mpi.c did)
#   mpirun -np K bench_match --method dist STORE     (after: instances
#       hashed to owner ranks, each rank gets back its GPUs' instances)
# Each prints one BENCH match line (bench/bench_match.c): match_s (slowest
# rank), peak_mb (largest rise of a rank's peak RSS during the match, the
# loaded graphs not counted), job_mb (largest matched job a rank holds),
# held_max (most instances a rank holds). This script prints their medians
# and the ratios dist / gather at the same K, one line per (size, K):
#   MATCH gpus= K= nodes= instances= gather_peak_mb= dist_peak_mb=
#     peak_ratio= gather_job_mb= dist_job_mb= gather_s= dist_s= time_ratio=
#     held_max=
# and, first, a check that both methods agree on every rank
# (bench_match --verify at each K).
#   BUILD_DIR=build-bench  SIZES="512 1024"  KS="1 2 4"  RUNS=3
#   WORK=bench/out/match  KEEP=0 (1: keep the stores)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${BUILD_DIR:-build-bench}
SIZES=${SIZES:-512 1024}
KS=${KS:-1 2 4}
RUNS=${RUNS:-3}
WORK=${WORK:-bench/out/match}
KEEP=${KEEP:-0}
. "$ROOT/bench/mpi_env.sh"
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
fi
cmake --build "$BUILD_DIR" -j2 --target lumosim bench_match >/dev/null || exit 1
L=$(cd "$BUILD_DIR" && pwd)/lumosim
B=$(cd "$BUILD_DIR" && pwd)/bench/bench_match
mkdir -p "$WORK"
raw=$WORK/raw.txt
: >"$raw"
OVERSUB=""
mpirun --version 2>&1 | grep -q "Open MPI" && OVERSUB=--oversubscribe
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
echo "# commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- src mpi include bench 2>/dev/null || echo '+uncommitted'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $SIZES; do
    dp=$((n / 64))
    gb=$((24 * dp))
    job=$WORK/gpt3_$n.h5
    if [ ! -e "$job" ]; then
        "$L" synth --model gpt3-175b --tp 8 --pp 8 --dp "$dp" --micro-batch 1 --global-batch "$gb" \
            --no-memory-check -o "$job" >/dev/null 2>"$WORK/synth.err" || { cat "$WORK/synth.err"; exit 1; }
    fi
    for k in $KS; do
        mpirun $OVERSUB -np "$k" "$B" --verify "$job" >"$WORK/verify.out" 2>&1
        grep -q "verify: K = $k: the distributed match equals" "$WORK/verify.out" ||
            { cat "$WORK/verify.out"; echo "match.sh: $n GPUs, K = $k: the two methods disagree" >&2; exit 1; }
    done
    for r in $(seq "$RUNS"); do
        for k in $KS; do
            for m in gather dist; do
                mpirun $OVERSUB -np "$k" "$B" --method "$m" "$job" 2>>"$WORK/err.txt" | grep '^BENCH match' |
                    sed "s/\$/ run=$r/" >>"$raw" || { echo "match.sh: $n GPUs, K = $k, $m failed" >&2; exit 1; }
            done
        done
    done
    for k in $KS; do
        sel() { grep " gpus=$n " "$raw" | grep " ranks=$k " | grep " method=$1 " | field "$2" | median; }
        nodes=$(grep " gpus=$n " "$raw" | head -1 | field nodes)
        inst=$(grep " gpus=$n " "$raw" | head -1 | field instances)
        gp=$(sel gather peak_mb) dpk=$(sel dist peak_mb) gj=$(sel gather job_mb) dj=$(sel dist job_mb)
        gs=$(sel gather match_s) ds=$(sel dist match_s) held=$(sel dist held_max)
        echo "MATCH gpus=$n K=$k nodes=$nodes instances=$inst gather_peak_mb=$gp dist_peak_mb=$dpk" \
            "peak_ratio=$(awk -v a="$dpk" -v b="$gp" 'BEGIN {printf "%.2f", a / b}') gather_job_mb=$gj dist_job_mb=$dj" \
            "gather_s=$gs dist_s=$ds time_ratio=$(awk -v a="$ds" -v b="$gs" 'BEGIN {printf "%.2f", a / b}') held_max=$held" \
            "(medians of $RUNS)"
    done
    [ "$KEEP" = 1 ] || rm -f "$job"
done
