#!/bin/sh
# sim_ranks.sh NP MPIEXEC [MPIEXEC-FLAGS...] -- TRACE...
# Environment: LUMOSIM. SYNTH="lumosim synth options": simulate a synthesized
# job instead of TRACE... (none are given then).
# Builds a graph store of TRACE... serially, then runs `lumosim build` and
# `lumosim sim -o` under the MPI launcher with NP ranks: the printed report
# must be byte-identical to the serial one, and the result and graph files
# must hold the same data (h5diff, the run's provenance excluded).
# REPEAT=N (default 1) runs the parallel sim N times, each compared: with
# more ranks than cores the interleaving differs every time, so this is the
# determinism-under-load check.
# MAPPINGS="groups linear round-robin file" (default "groups") runs each
# repeat under each GPU-to-rank mapping; "file" is a scrambled assignment
# written here (GPU g on rank (np - 1 - g mod np), the GPUs listed
# backwards). GROUP_MAP, STAGE_MAP: what the groups and stages mappings must
# have applied, as the provenance records it (default groups:linear and
# stages:linear: no layout seen, or fewer replicas, stages and TP groups
# than ranks).
# WINDOWS="paths start ..." (default none) also runs the default mapping
# with each of these --windows modes (ready is the default mode), compared
# the same way. BUILD_OPTS="..." (default none): options of both builds
# (e.g. --sm-contention on); SIM_OPTS="...": options of every sim (e.g.
# --drop-edges event). KERNEL_ROWS_MIN=N: the serial archive's kernel
# table must have at least N rows (a job big enough for the archive to
# write it in several rounds, h5_archive.c KROWS_ROUND).
# TRACE=1: sim --trace-out too, serially and once under the launcher: the
# two predicted traces must be the same bytes, and the serial one must hold
# the job's critical path (the track of a coupled job; under the launcher
# rank 0 walks it over the archive's times, critical.h).
set -u
np=$1
shift
launcher=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher="$launcher $1"; shift; done
shift
for a in "$@"; do [ -e "$a" ] || { echo "SKIP: $a missing"; exit 77; }; done
# the result and graph files are compared with h5diff, the provenance read
# with h5dump (hdf5-tools): without them this test cannot check what it says
for t in h5diff h5dump; do
    command -v $t >/dev/null 2>&1 || { echo "SKIP: $t not installed (apt-get install hdf5-tools): the HDF5 files cannot be compared"; exit 77; }
done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sim_ranks np=$np: $*"; exit 1; }
if [ -n "${SYNTH:-}" ]; then
    # a synthesized job (lumosim synth options in SYNTH) instead of traces
    # shellcheck disable=SC2086
    "$LUMOSIM" synth $SYNTH -o "$tmp/job1.h5" || fail "synth failed"
    cp "$tmp/job1.h5" "$tmp/jobN.h5"
else
    # shellcheck disable=SC2086
    "$LUMOSIM" build ${BUILD_OPTS:-} "$@" -o "$tmp/job1.h5" || fail "serial build failed"
    # shellcheck disable=SC2086
    $launcher "$LUMOSIM" build ${BUILD_OPTS:-} "$@" -o "$tmp/jobN.h5" || fail "parallel build failed"
fi
# shellcheck disable=SC2086
"$LUMOSIM" sim --json ${SIM_OPTS:-} "$tmp/job1.h5" -o "$tmp/res1.h5" >"$tmp/out1.json" || fail "serial sim failed"
if [ -n "${KERNEL_ROWS_MIN:-}" ]; then
    krows=$(h5dump -H -d /runs/sim/kernels/gpu "$tmp/res1.h5" | sed -n 's/.*DATASPACE  SIMPLE { ( \([0-9]*\) ).*/\1/p')
    [ -n "$krows" ] && [ "$krows" -ge "$KERNEL_ROWS_MIN" ] ||
        fail "the kernel table has ${krows:-no} rows, fewer than $KERNEL_ROWS_MIN"
fi
ngpu=$("$LUMOSIM" info "$tmp/job1.h5" | sed -n 's/^  \([0-9][0-9]*\) GPUs:.*/\1/p')
[ -n "$ngpu" ] || fail "cannot read the GPU count from lumosim info"
g=$((ngpu - 1))
: >"$tmp/map.txt"
while [ $g -ge 0 ]; do
    echo "$g $((np - 1 - g % np))  # GPU RANK" >>"$tmp/map.txt"
    g=$((g - 1))
done
# par_sim WHAT ARGS...: the parallel sim with ARGS, its report and result
# file compared with the serial ones
par_sim() {
    what=$1
    shift
    rm -f "$tmp/resN.h5"
    # shellcheck disable=SC2086
    $launcher "$LUMOSIM" sim --json ${SIM_OPTS:-} "$@" "$tmp/jobN.h5" -o "$tmp/resN.h5" >"$tmp/outN.json" ||
        fail "parallel sim failed ($what)"
    cmp -s "$tmp/out1.json" "$tmp/outN.json" || fail "the report differs from the serial one ($what)"
    h5diff -q --exclude-path /runs/sim/provenance "$tmp/res1.h5" "$tmp/resN.h5" || fail "result files differ ($what)"
    # the per-kernel summary (written from each rank's GPUs) is there, and the same
    h5diff -q "$tmp/res1.h5" "$tmp/resN.h5" /runs/sim/kernels /runs/sim/kernels ||
        fail "no kernels table, or it differs from the serial one ($what)"
    # the node fidelity and CPU-side span columns are in both (h5diff
    # compares the objects the two files share)
    for d in gpus/start_err_gpu gpus/start_err_cpu gpus/duty_abs_diff iterations/cpu_actual; do
        h5dump -H -d "/runs/sim/$d" "$tmp/resN.h5" >/dev/null 2>&1 || fail "no /runs/sim/$d in the parallel result file ($what)"
    done
}
# with observed times the compared reports hold the node fidelity and the
# iterations' CPU-side spans, so the comparisons below cover them
if [ -z "${SYNTH:-}" ]; then
    grep -q '"start_error_gpu":{"nodes":[1-9]' "$tmp/out1.json" && grep -q '"mean_abs_diff_pp":[0-9]' "$tmp/out1.json" ||
        fail "the serial report has no start-error distribution or duty-cycle difference"
    if grep -q '"iterations":\[{' "$tmp/out1.json"; then
        grep -q '"cpu_actual_ns":[0-9]' "$tmp/out1.json" || fail "the serial report's iterations have no CPU-side span"
    fi
fi
rep=0
while [ $rep -lt "${REPEAT:-1}" ]; do
    for mapping in ${MAPPINGS:-groups}; do
        opt=$mapping
        [ "$mapping" = file ] && opt="file:$tmp/map.txt"
        par_sim "run $rep, mapping $mapping" --mapping "$opt"
        # the mapping is recorded, and is not the default when asked for another
        want="\"$opt\""
        [ "$mapping" = groups ] && want="\"${GROUP_MAP:-groups:linear}\""
        [ "$mapping" = stages ] && want="\"${STAGE_MAP:-stages:linear}\""
        h5dump -a /runs/sim/provenance/mapping "$tmp/resN.h5" 2>/dev/null | grep -q "$want" ||
            fail "provenance does not record mapping $want"
    done
    rep=$((rep + 1))
done
for mode in ${WINDOWS:-}; do par_sim "--windows $mode" --windows "$mode"; done
if [ -n "${TRACE:-}" ]; then
    # shellcheck disable=SC2086
    "$LUMOSIM" sim ${SIM_OPTS:-} "$tmp/job1.h5" --trace-out "$tmp/t1.json" >/dev/null || fail "serial sim --trace-out failed"
    grep -q '"cat":"lumosim_job_critical_path"' "$tmp/t1.json" || fail "the serial trace has no job critical path track"
    rm -f "$tmp/resN.h5"
    # shellcheck disable=SC2086
    $launcher "$LUMOSIM" sim ${SIM_OPTS:-} "$tmp/jobN.h5" -o "$tmp/resN.h5" --trace-out "$tmp/tN.json" >/dev/null ||
        fail "parallel sim --trace-out failed"
    cmp -s "$tmp/t1.json" "$tmp/tN.json" || fail "the predicted trace differs from the serial one: $(cmp "$tmp/t1.json" "$tmp/tN.json")"
fi
if [ -z "${SYNTH:-}" ]; then
    h5diff -q --exclude-attribute /created_by "$tmp/job1.h5" "$tmp/jobN.h5" 2>/dev/null ||
        h5diff -q "$tmp/job1.h5" "$tmp/jobN.h5" /nodes /nodes || fail "graph stores differ"
fi
echo "ok: $np ranks give the serial results bit for bit (${REPEAT:-1} runs, mappings: ${MAPPINGS:-groups}; windows: ready ${WINDOWS:-}${TRACE:+; the predicted trace})"
