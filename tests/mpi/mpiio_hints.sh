#!/bin/sh
# mpiio_hints.sh MPIEXEC [MPIEXEC-FLAGS...] -- TRACE...
# Environment: LUMOSIM.
# LUMOSIM_MPIIO_HINTS (docs/slurm.md) reaches the MPI-IO open of every store
# and archive: with hints, a 2-rank build + sim writes the same data as a
# serial run (h5diff, provenance excluded) and the archive's provenance
# records the hints; a malformed hint is one error line naming the variable
# and the bad entry, on one rank or two, exit non-zero, no output file.
set -u
launcher=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher="$launcher $1"; shift; done
shift
for a in "$@"; do [ -e "$a" ] || { echo "SKIP: $a missing"; exit 77; }; done
for t in h5diff h5dump; do
    command -v $t >/dev/null 2>&1 || { echo "SKIP: $t not installed (apt-get install hdf5-tools)"; exit 77; }
done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "mpiio_hints: $*"; exit 1; }
hints="romio_cb_write=enable;cb_buffer_size=1048576,striping_unit=1048576"

"$LUMOSIM" build "$@" -o "$tmp/job1.h5" || fail "serial build failed"
"$LUMOSIM" sim "$tmp/job1.h5" -o "$tmp/res1.h5" >/dev/null || fail "serial sim failed"
# shellcheck disable=SC2086
LUMOSIM_MPIIO_HINTS=$hints $launcher "$LUMOSIM" build "$@" -o "$tmp/jobN.h5" || fail "2-rank build with hints failed"
# shellcheck disable=SC2086
LUMOSIM_MPIIO_HINTS=$hints $launcher "$LUMOSIM" sim "$tmp/jobN.h5" -o "$tmp/resN.h5" >/dev/null ||
    fail "2-rank sim with hints failed"
# the stores' root attribute created_by names the rank count; the node
# rows must be the same (h5diff of older hdf5-tools has no --exclude-attribute)
h5diff "$tmp/job1.h5" "$tmp/jobN.h5" /nodes /nodes >"$tmp/d1" 2>&1 || { cat "$tmp/d1"; fail "the stores differ with hints"; }
h5diff --exclude-path /runs/sim/provenance "$tmp/res1.h5" "$tmp/resN.h5" >"$tmp/d2" 2>&1 ||
    { cat "$tmp/d2"; fail "the results differ with hints"; }
h5dump -a /runs/sim/provenance/mpiio_hints "$tmp/resN.h5" >"$tmp/prov" 2>&1 || fail "no mpiio_hints in the provenance"
grep -q "cb_buffer_size=1048576" "$tmp/prov" || { cat "$tmp/prov"; fail "provenance mpiio_hints is not what was given"; }
if h5dump -a /runs/sim/provenance/mpiio_hints "$tmp/res1.h5" >/dev/null 2>&1; then
    fail "a serial run without hints recorded mpiio_hints"
fi

for bad in "striping_factor" "=8" "a=b,striping_factor=" "key with blank=1"; do
    for mode in serial mpi; do
        rm -f "$tmp/bad.h5"
        if [ $mode = serial ]; then
            LUMOSIM_MPIIO_HINTS=$bad "$LUMOSIM" sim "$tmp/job1.h5" -o "$tmp/bad.h5" >/dev/null 2>"$tmp/err"
        else
            # shellcheck disable=SC2086
            LUMOSIM_MPIIO_HINTS=$bad $launcher "$LUMOSIM" sim "$tmp/job1.h5" -o "$tmp/bad.h5" >/dev/null 2>"$tmp/err"
        fi
        rc=$?
        [ $rc -ne 0 ] || fail "$mode: LUMOSIM_MPIIO_HINTS='$bad' exited 0"
        n=$(grep -c "^lumosim: error: LUMOSIM_MPIIO_HINTS: .* is not KEY=VALUE" "$tmp/err")
        [ "$n" -ge 1 ] || { cat "$tmp/err"; fail "$mode: '$bad' gave no error line naming the variable"; }
        ls "$tmp"/bad.h5* >/dev/null 2>&1 && fail "$mode: '$bad' left an output behind"
    done
done
echo "mpiio_hints: hints reach build and sim, results unchanged; malformed hints refused"
