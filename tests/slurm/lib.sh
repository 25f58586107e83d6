# Shared by the tests labelled `slurm` (sourced, bash). Environment, from
# tests/slurm/CMakeLists.txt: LUMOSIM, SRC (repository root), SHARED (the
# shared traces directory), BENCH_PDES.
#
# Each test submits a template from slurm/ with sbatch from a fresh temporary
# submit directory, waits for the job by polling squeue (no accounting
# database is needed), and checks the files the job wrote. Without a Slurm
# controller that answers, the test exits 77: CTest reports it SKIPPED.
set -u
SKIP=77
TEST=${0##*/}
dump_logs() {
    [ -n "${tmp:-}" ] || return 0
    for f in "$tmp"/*.out; do
        [ -f "$f" ] || continue
        echo "---- $f"
        tail -n 30 "$f"
    done
}
fail() { echo "$TEST: FAIL: $*"; dump_logs; exit 1; }
# LSIM_SLURM_REQUIRED=1 (CI, after starting Slurm): a missing Slurm fails.
skip() {
    [ "${LSIM_SLURM_REQUIRED:-0}" != 1 ] || { echo "$TEST: FAIL (LSIM_SLURM_REQUIRED=1): $*"; exit 1; }
    echo "$TEST: SKIPPED: $*"
    exit $SKIP
}

if ! command -v sbatch >/dev/null 2>&1 || ! command -v squeue >/dev/null 2>&1; then
    skip "sbatch/squeue not installed (apt-get install slurm-wlm munge; .ci/start-slurm.sh)"
fi
if ! timeout 10 scontrol ping >/dev/null 2>&1; then
    skip "no Slurm controller answers 'scontrol ping' (start one: .ci/start-slurm.sh)"
fi
for t in python3 h5dump h5diff; do
    command -v $t >/dev/null 2>&1 || skip "$t not installed"
done
[ -x "$LUMOSIM" ] || fail "LUMOSIM=$LUMOSIM is not executable"

# Open MPI refuses root unless told; the jobs inherit this environment.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LUMOSIM
JOBS=""
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-slurm.XXXXXX") || exit 1
cleanup() {
    # shellcheck disable=SC2086
    [ -z "$JOBS" ] || scancel $JOBS >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1


# submit ARGS... : sbatch from $tmp; prints the job id.
submit() {
    local id
    id=$(sbatch --parsable "$@") || fail "sbatch $* failed"
    id=${id%%;*}
    JOBS="$JOBS $id"
    echo "$id"
}

# wait_job ID [TIMEOUT_S]: until neither the job nor any of its array tasks
# is queued or running; then prints each task's final state, one per line.
wait_job() {
    local id=$1 limit=${2:-90} t=0
    while [ -n "$(squeue -h -j "$id" -o %i 2>/dev/null)" ]; do
        sleep 0.5
        t=$((t + 1))
        [ $t -le $((limit * 2)) ] || fail "job $id still queued or running after ${limit}s: $(squeue -j "$id")"
    done
    scontrol -o show job "$id" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

# expect_ok ID: every task of job ID ended COMPLETED.
expect_ok() {
    local states
    states=$(wait_job "$@")
    [ -n "$states" ] || fail "job $1: no state recorded"
    if printf '%s\n' "$states" | grep -qv '^COMPLETED$'; then
        fail "job $1 did not complete: $(printf '%s ' $states)"
    fi
}

# attr FILE OBJECT-PATH: the value of an HDF5 attribute, as h5dump prints it.
attr() {
    h5dump -a "$2" "$1" 2>/dev/null | sed -n 's/^ *(0): *//p' | sed 's/^"//; s/"$//'
}

# The graph store the tests simulate: the shared 8-rank Megatron job when
# present (coupled through its collectives: the parallel engine's real
# case), else the bundled single-GPU example trace.
make_store() {
    if [ -d "$SHARED/megatron_tp8_a100" ]; then
        STORE_SRC=$SHARED/megatron_tp8_a100
    else
        STORE_SRC=$SRC/examples/megatron_tp8_rank0.json.gz
    fi
    "$LUMOSIM" build "$STORE_SRC" -o "$tmp/job.h5" >/dev/null || fail "lumosim build $STORE_SRC failed"
    NGPUS=$(h5dump -H -d /gpus/rank "$tmp/job.h5" | sed -n 's/.*DATASPACE *SIMPLE *{ *( *\([0-9]*\) *).*/\1/p')
    [ -n "$NGPUS" ] && [ "$NGPUS" -ge 1 ] || fail "cannot read the GPU count of job.h5"
}
