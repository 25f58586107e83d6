#!/usr/bin/env bash
# slurm/multinode.sbatch on the one-node cluster with 2 tasks (the CI has one
# node; several nodes are not tested here, docs/slurm.md): synth then sim
# under srun --mpi=pmix equals a serial synth + sim run directly (report
# byte for byte, archive by h5diff without provenance); the stripe settings
# reach MPI-IO as hints (the provenance records them) and config.txt; bad
# parameters fail the job with one clear line and no job directory.
. "$(dirname "$0")/lib.sh"
synth="--model gpt3-15b --tp 2 --pp 4 --dp 1 --micro-batch 1 --global-batch 8"
# shellcheck disable=SC2086
"$LUMOSIM" synth $synth -o "$tmp/direct_job.h5" >/dev/null || fail "direct synth failed"
"$LUMOSIM" sim --json "$tmp/direct_job.h5" -o "$tmp/direct.h5" >"$tmp/direct.json" || fail "direct sim failed"

id=$(SYNTH="$synth" STRIPE_COUNT=2 STRIPE_SIZE=1048576 submit -N 1 -n 2 "$SRC/slurm/multinode.sbatch")
expect_ok "$id" 150
d=$tmp/runs/lumosim-multinode_$id
for f in job.h5 result.h5 report.json config.txt; do [ -f "$d/$f" ] || fail "$d/$f missing"; done
ls "$d" | grep -q 'tmp' && fail "temporary files left in $d: $(ls "$d")"
cmp -s "$tmp/direct.json" "$d/report.json" || fail "the report differs from serial synth + sim"
h5diff -q --exclude-path /runs/sim/provenance "$tmp/direct.h5" "$d/result.h5" || fail "result.h5 differs from the direct run's"
[ "$(attr "$d/result.h5" /runs/sim/provenance/mpi_ranks)" = 2 ] || fail "provenance mpi_ranks is not 2"
h=$(attr "$d/result.h5" /runs/sim/provenance/mpiio_hints)
[ "$h" = "striping_factor=2,striping_unit=1048576" ] || fail "provenance mpiio_hints is '$h'"
grep -qx "mpiio_hints=striping_factor=2,striping_unit=1048576" "$d/config.txt" || fail "config.txt lacks the hints"
grep -qx "nodes=1" "$d/config.txt" && grep -qx "ntasks=2" "$d/config.txt" || fail "config.txt: $(cat "$d/config.txt")"
grep -q "^command=srun --mpi=pmix -n 2 $LUMOSIM sim --json $d/job.h5" "$d/config.txt" || fail "config.txt command: $(grep command= "$d/config.txt")"

# bad parameters: the job fails with the reason and leaves no job directory
check_bad() { # WHAT EXPECTED-MESSAGE ENV...
    local what=$1 msg=$2 id2 st
    shift 2
    id2=$(env "$@" bash -c 'sbatch --parsable -N 1 -n 1 "$0"' "$SRC/slurm/multinode.sbatch") || fail "sbatch ($what) failed"
    id2=${id2%%;*}
    JOBS="$JOBS $id2"
    st=$(wait_job "$id2")
    [ "$st" = FAILED ] || fail "$what: the job ended $st, want FAILED"
    [ ! -e "$tmp/runs/lumosim-multinode_$id2" ] || fail "$what: a job directory was created"
    grep -q "$msg" "$tmp/lumosim-multinode_$id2.out" || fail "$what: no line '$msg' in the log: $(cat "$tmp/lumosim-multinode_$id2.out")"
}
check_bad "JOB and SYNTH" "set JOB or SYNTH, not both" JOB="$tmp/direct_job.h5" SYNTH="$synth"
check_bad "neither" "set JOB=/path/job.h5 or SYNTH" JOB= SYNTH=
check_bad "STRIPE_COUNT=abc" "STRIPE_COUNT=abc: want a positive integer" JOB="$tmp/direct_job.h5" STRIPE_COUNT=abc
check_bad "missing store" "is not a file" JOB="$tmp/nosuch.h5"
echo "ok: multinode.sbatch (synth + sim on 2 tasks, stripe hints) equals serial synth + sim"
