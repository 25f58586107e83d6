#!/usr/bin/env bash
# Exact symmetry reduction (sim --symmetry, issue 43; docs/scaling.md,
# "Symmetry reduction"): GPT-3 175B TP8 PP8 synthesized and simulated
#   - at 4,096 GPUs (DP 64), full (--symmetry off) and reduced (the
#     default), the archives compared (h5diff without the provenance);
#   - moe1024: a 1,024-GPU mixture-of-experts job, full and reduced, also
#     with one slow GPU (whatif --slow-gpu), the archives compared;
#   - at 65,536 GPUs (DP 1024), reduced;
#   - a Llama-3.1-405B-class job (its 126 layers rounded to 128, which PP 16
#     divides), TP8 PP16 DP768 = 98,304 GPUs, reduced;
#   - 98304fit: the same job as it fits its 80 GB GPUs (sequence
#     parallelism, the distributed optimizer, full recomputation: 3.2 times
#     the collectives), reduced, its collective match in as many parts as
#     the memory limit needs (sim --match-parts; parts= in its line), then
#     again in 16 parts, the two archives compared.
# Per step one line: BENCH symmetry step= gpus= wall_s= peak_rss_mb= [classes=]
# (wall and peak RSS from /usr/bin/time -v; classes from sim --stats). Each
# big step runs once: the machine is shared. Prints figures, asserts only
# that the full and reduced archives are equal.
#   BUILD_DIR=build  STEPS="4096 moe1024 65536 98304" (16384: reduced only,
#   the step between; 98304fit: about 10 minutes)  WORK=bench/out/symmetry
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
L=${BUILD_DIR:-build}/lumosim
STEPS=${STEPS:-4096 moe1024 65536 98304}
W=${WORK:-bench/out/symmetry}
mkdir -p "$W"
TIME=/usr/bin/time

# run NAME GPUS CMD...: one BENCH line from /usr/bin/time -v and --stats
run() {
    name=$1 gpus=$2
    shift 2
    if ! nice "$TIME" -v "$@" >"$W/$name.out" 2>"$W/$name.err"; then
        echo "BENCH symmetry step=$name gpus=$gpus FAILED: $(grep -v '^	' "$W/$name.err" | head -3)"
        return 1
    fi
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$W/$name.err" |
        awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$W/$name.err")
    cls=$(sed -n 's/^lumosim: stats: symmetry: \([0-9]*\) classes.*/\1/p' "$W/$name.err")
    parts=$(sed -n 's/^lumosim: stats: match: \([0-9]*\) parts$/\1/p' "$W/$name.err")
    echo "BENCH symmetry step=$name gpus=$gpus wall_s=$wall peak_rss_mb=$((rss / 1024))${cls:+ classes=$cls}${parts:+ parts=$parts}"
}

# compare NAME FULL REDUCED: the two archives equal but for the provenance
compare() {
    if h5diff -q --exclude-path /runs/sim/provenance "$2" "$3"; then
        echo "BENCH symmetry step=compare_$1 archives=equal"
    else
        echo "BENCH symmetry step=compare_$1 archives=DIFFERENT"
        exit 1
    fi
}

# gpt3 DP: synth then sim of GPT-3 175B TP8 PP8 (24 micro-batches per pipeline)
for s in $STEPS; do
    case $s in
    4096 | 16384 | 65536)
        dp=$((s / 64))
        rm -f "$W"/*"$s".h5 # a failed step's outputs (synth refuses to replace a store)
        run "synth_$s" "$s" "$L" synth --model gpt3-175b --tp 8 --pp 8 --dp $dp --micro-batch 1 \
            --global-batch $((24 * dp)) --no-memory-check --force-large -o "$W/g$s.h5" || continue
        if [ "$s" = 4096 ]; then
            run "sim_full_$s" "$s" "$L" sim --stats --symmetry off "$W/g$s.h5" -o "$W/full$s.h5" || continue
        fi
        run "sim_reduced_$s" "$s" "$L" sim --stats "$W/g$s.h5" -o "$W/red$s.h5" || continue
        if [ "$s" = 4096 ]; then compare "$s" "$W/full$s.h5" "$W/red$s.h5"; fi
        rm -f "$W"/*"$s".h5
        ;;
    moe1024)
        # a mixture-of-experts job (Qwen3 30B-A3B, TP1 PP4 DP256 EP8, 4
        # micro-batches): reduced = full, then the same with one slow GPU
        # (whatif --slow-gpu), whose all-to-all and data-parallel partners
        # split their classes
        rm -f "$W"/*"$s".h5
        run "synth_$s" 1024 "$L" synth --model qwen3-30b-a3b --tp 1 --pp 4 --dp 256 --ep 8 --micro-batch 1 \
            --global-batch 1024 --no-memory-check -o "$W/m$s.h5" || continue
        run "sim_full_$s" 1024 "$L" sim --stats --symmetry off "$W/m$s.h5" -o "$W/full$s.h5" || continue
        run "sim_reduced_$s" 1024 "$L" sim --stats "$W/m$s.h5" -o "$W/red$s.h5" || continue
        compare "$s" "$W/full$s.h5" "$W/red$s.h5"
        run "whatif_slow_$s" 1024 "$L" whatif "$W/m$s.h5" --slow-gpu 5:1.5 -o "$W/slow$s.h5" || continue
        run "sim_full_slow_$s" 1024 "$L" sim --stats --symmetry off "$W/slow$s.h5" -o "$W/fullslow$s.h5" || continue
        run "sim_reduced_slow_$s" 1024 "$L" sim --stats "$W/slow$s.h5" -o "$W/redslow$s.h5" || continue
        compare "slow_$s" "$W/fullslow$s.h5" "$W/redslow$s.h5"
        rm -f "$W"/*"$s".h5
        ;;
    98304)
        rm -f "$W"/*"$s".h5
        run "synth_$s" "$s" "$L" synth --model llama3.1-405b --layers 128 --tp 8 --pp 16 --dp 768 --micro-batch 1 \
            --global-batch $((32 * 768)) --no-memory-check --force-large -o "$W/l$s.h5" || continue
        run "sim_reduced_$s" "$s" "$L" sim --stats "$W/l$s.h5" -o "$W/red$s.h5"
        rm -f "$W"/*"$s".h5
        ;;
    98304fit)
        rm -f "$W"/*"$s".h5
        run "synth_$s" 98304 "$L" synth --model llama3.1-405b --layers 128 --tp 8 --pp 16 --dp 768 --micro-batch 1 \
            --global-batch $((32 * 768)) --sequence-parallel --distributed-optimizer --recompute full \
            --force-large -o "$W/l$s.h5" || continue
        run "sim_reduced_$s" 98304 "$L" sim --stats "$W/l$s.h5" -o "$W/red$s.h5" || continue
        run "sim_parts16_$s" 98304 "$L" sim --stats --match-parts 16 "$W/l$s.h5" -o "$W/p16$s.h5" || continue
        compare "$s" "$W/red$s.h5" "$W/p16$s.h5"
        rm -f "$W"/*"$s".h5
        ;;
    esac
done
