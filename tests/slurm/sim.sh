#!/usr/bin/env bash
# slurm/sim.sbatch, one task launched by srun (PMIx): the job's report and
# result archive equal those of `lumosim sim` run directly (h5diff with the
# run's provenance excluded), and the provenance and config.txt record the
# command, version and MPI ranks.
. "$(dirname "$0")/lib.sh"
make_store
"$LUMOSIM" sim --json "$tmp/job.h5" -o "$tmp/direct.h5" >"$tmp/direct.json" || fail "direct lumosim sim failed"

id=$(JOB="$tmp/job.h5" submit "$SRC/slurm/sim.sbatch")
expect_ok "$id"
d=$tmp/runs/lumosim-sim_$id
[ -f "$d/result.h5" ] || fail "$d/result.h5 missing"
[ -f "$d/report.json" ] || fail "$d/report.json missing"
ls "$d" | grep -q 'tmp' && fail "temporary files left in $d: $(ls "$d")"
cmp -s "$tmp/direct.json" "$d/report.json" || fail "the job's report differs from lumosim sim run directly"
h5diff -q --exclude-path /runs/sim/provenance "$tmp/direct.h5" "$d/result.h5" ||
    fail "result.h5 differs from the direct run's archive (provenance excluded)"
ver=$("$LUMOSIM" --version | sed 's/^lumosim //')
[ "$(attr "$d/result.h5" /runs/sim/provenance/lumosim_version)" = "$ver" ] || fail "provenance lumosim_version is not $ver"
cl=$(attr "$d/result.h5" /runs/sim/provenance/command_line)
# (lumosim 0.1.0 records the command line without the word "sim")
case "$cl" in
"lumosim sim --json $tmp/job.h5 -o $d/result.h5 --run sim" | "lumosim --json $tmp/job.h5 -o $d/result.h5 --run sim") ;;
*) fail "provenance command_line is '$cl'" ;;
esac
[ "$(attr "$d/result.h5" /runs/sim/provenance/mpi_ranks)" = 1 ] || fail "provenance mpi_ranks is not 1"
grep -qx "command=srun --mpi=pmix -n 1 $LUMOSIM sim --json $tmp/job.h5 -o $d/result.h5 --run sim" "$d/config.txt" ||
    fail "config.txt does not record the srun command: $(cat "$d/config.txt")"
grep -qx "version=lumosim $ver" "$d/config.txt" || fail "config.txt does not record the version"
grep -qx "slurm_job_id=$id" "$d/config.txt" || fail "config.txt does not record the job id"

# a job without JOB fails (and writes no job directory)
id2=$(JOB= submit "$SRC/slurm/sim.sbatch")
st=$(wait_job "$id2")
[ "$st" = FAILED ] || fail "sim.sbatch without JOB ended $st, want FAILED"
[ ! -e "$tmp/runs/lumosim-sim_$id2" ] || fail "sim.sbatch without JOB created its job directory"
grep -q "JOB is not set" "$tmp/lumosim-sim_$id2.out" || fail "no clear message for a missing JOB"
echo "ok: sim.sbatch ($NGPUS GPUs from $STORE_SRC) equals lumosim sim run directly"
