#!/usr/bin/env bash
# slurm/sim.sbatch with 2 tasks, launched by srun (Slurm's PMIx plugin) and
# by mpirun inside the allocation: the report and archive equal a direct
# run's (serial when the store is the shared 8-rank job, which the parallel
# engine simulates bit-identically; else `mpirun -np 2` outside Slurm, since
# a 1-GPU store split over 2 ranks is reported as coupled), and the
# provenance says 2 MPI ranks and a parallel mapping.
. "$(dirname "$0")/lib.sh"
make_store
if [ "$NGPUS" -ge 2 ]; then
    "$LUMOSIM" sim --json "$tmp/job.h5" -o "$tmp/direct.h5" >"$tmp/direct.json" || fail "direct lumosim sim failed"
else
    mpirun --oversubscribe -np 2 "$LUMOSIM" sim --json "$tmp/job.h5" -o "$tmp/direct.h5" >"$tmp/direct.json" ||
        fail "direct mpirun -np 2 lumosim sim failed"
fi
for l in srun mpirun; do
    id=$(JOB="$tmp/job.h5" LAUNCHER=$l submit -n 2 "$SRC/slurm/sim.sbatch")
    expect_ok "$id"
    d=$tmp/runs/lumosim-sim_$id
    cmp -s "$tmp/direct.json" "$d/report.json" || fail "$l: the report differs from the direct run"
    h5diff -q --exclude-path /runs/sim/provenance "$tmp/direct.h5" "$d/result.h5" || fail "$l: result.h5 differs"
    [ "$(attr "$d/result.h5" /runs/sim/provenance/mpi_ranks)" = 2 ] || fail "$l: provenance mpi_ranks is not 2"
    mp=$(attr "$d/result.h5" /runs/sim/provenance/mapping)
    [ -n "$mp" ] && [ "$mp" != serial ] || fail "$l: provenance mapping is '$mp', want a parallel GPU-to-rank mapping"
    grep -q "^command=$l .*2 $LUMOSIM sim" "$d/config.txt" || fail "$l: config.txt: $(grep command= "$d/config.txt")"
done
echo "ok: sim.sbatch on 2 MPI ranks (srun and mpirun, $NGPUS GPUs) equals the direct run"
