#!/usr/bin/env bash
# slurm/scaling.sbatch at 8 and 16 GPUs on 1 and 2 ranks (srun): one BENCH
# line per point with the right sizes, the same predicted job end for K = 1
# and 2, and the summary table.
. "$(dirname "$0")/lib.sh"
[ -x "${BENCH_PDES:-}" ] || fail "BENCH_PDES=${BENCH_PDES:-} is not executable"
id=$(BENCH_PDES=$BENCH_PDES TRACE=$SRC/examples/megatron_tp8_rank0.json.gz SIZES="8 16" RANKS="1 2" REPEATS=1 \
    submit "$SRC/slurm/scaling.sbatch")
expect_ok "$id"
d=$tmp/runs/lumosim-scaling_$id
raw=$d/scaling_raw.txt
[ "$(grep -c '^BENCH ' "$raw")" = 4 ] || fail "want 4 BENCH lines: $(cat "$raw")"
for p in "gpus=8 ranks=1" "gpus=8 ranks=2" "gpus=16 ranks=1" "gpus=16 ranks=2"; do
    grep -q "^BENCH $p " "$raw" || fail "no point $p"
done
for n in 8 16; do
    ends=$(grep "^BENCH gpus=$n " "$raw" | sed 's/.*job_end=\([0-9]*\).*/\1/' | sort -u | wc -l)
    [ "$ends" = 1 ] || fail "N=$n: the job end differs between K"
done
[ "$(grep -c '| yes |$' "$d/scaling.md")" = 4 ] || fail "scaling.md: $(cat "$d/scaling.md")"
grep -q "^sizes=8 16$" "$d/config.txt" || fail "config.txt does not record SIZES"
echo "ok: scaling.sbatch ran 4 points"
