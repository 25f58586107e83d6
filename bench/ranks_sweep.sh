#!/usr/bin/env bash
# bench/ranks_sweep.sh: the parallel engine from K = 1 to 64 MPI ranks on
# one machine (issue 43, "the cluster path, measured").
#
#   bash bench/ranks_sweep.sh LUMOSIM DIR   (env: KS="1 2 3 4 8 16 32 64",
#                                           JOB="synth arguments")
#
# Synthesizes one job (default GPT-3 175B TP8 PP8 DP16, 1,024 GPUs) into
# DIR, then runs `lumosim sim --symmetry off --stats` on it at each K (K =
# 1 without mpirun, every GPU simulated as the parallel engine does; more
# ranks than cores: --oversubscribe) and prints one markdown
# row per K:
#   - the parallel engine's windows, arrival messages and collectives, from
#     `--stats`;
#   - bytes each rank receives in the window exchanges, from those counts
#     and the protocol (mpi/pdes.c): per window an MPI_Allgather of 4 int64
#     per rank (32 K bytes), and an MPI_Allgatherv that gives every rank
#     every arrival (16 bytes each): 32 K windows + 16 messages;
#   - the GPUs' nodes per rank (min and max), the slowest rank's seconds in
#     the window exchanges, the largest peak RSS of a rank and the sum over
#     ranks, the CPU seconds of the whole run (mpirun and every rank, GNU
#     time) against K = 1's, and the wall time;
#   - whether the archive equals K = 1's (h5diff without the provenance)
#     and the report text is the same.
# Wall and CPU times are one run each on a shared machine; with K above
# the cores the ranks take turns, so wall time says nothing about a
# cluster: the counts and bytes are what carry over (docs/scaling.md,
# "K = 1 to 64"). Writes only under DIR.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bash bench/ranks_sweep.sh LUMOSIM DIR" >&2; exit 2; }
L=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
d=$2
mkdir -p "$d"
KS=${KS:-1 2 3 4 8 16 32 64}
JOB=${JOB:---model gpt3-175b --tp 8 --pp 8 --dp 16 --micro-batch 1 --global-batch 384 --no-memory-check}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# shellcheck disable=SC2086
"$L" synth $JOB -o "$d/job.h5" --force >/dev/null 2>"$d/synth.err"
echo "job: lumosim synth $JOB ($(date -u +%Y-%m-%d), $("$L" --version | head -n 1))"
echo
echo "| K | windows | messages | allgathers | allreduces | bytes received per rank | nodes per rank (min-max) | exchange s (slowest rank) | peak RSS MiB (max rank / all ranks) | CPU s (x K = 1) | wall s | same as K = 1 |"
echo "|---:|---:|---:|---:|---:|---:|---|---:|---|---|---:|---|"
cpu1=""
for k in $KS; do
    out="$d/r$k.h5"
    rm -f "$out"
    if [ "$k" -eq 1 ]; then launch=""; else launch="mpirun --oversubscribe -np $k"; fi
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e %U %S" -o "$d/time$k" $launch "$L" sim "$d/job.h5" --symmetry off --stats -o "$out" \
        >"$d/out$k" 2>"$d/err$k"
    read -r wall usr sys <"$d/time$k"
    cpu=$(awk -v u="$usr" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
    [ -n "$cpu1" ] || cpu1=$cpu
    eng=$(grep "stats: parallel engine" "$d/err$k" || true)
    num() { echo "$eng" | sed -n "s/.* \([0-9]*\) $1.*/\1/p"; }
    if [ -n "$eng" ]; then
        win=$(num windows) msg=$(num "arrival messages") ag=$(num allgathers) ar=$(num allreduces)
        xs=$(echo "$eng" | sed 's/.*per rank://' | tr ' ' '\n' | sort -g | tail -n 1)
        bytes=$((32 * k * win + 16 * msg))
    else
        win=0 msg=0 ag=0 ar=0 xs=0 bytes=0
    fi
    nodes=$(sed -n 's/.*stats: rank [0-9]* of [0-9]*: \([0-9]*\) nodes.*/\1/p' "$d/err$k" | sort -n)
    rss=$(sed -n 's/.*peak RSS \([0-9.]*\) MiB.*/\1/p' "$d/err$k" | sort -g)
    rmax=$(echo "$rss" | tail -n 1) rsum=$(echo "$rss" | awk '{ s += $1 } END { printf "%.0f", s }')
    same=-
    if [ "$k" -ne 1 ]; then
        same=no
        if h5diff --exclude-path /runs/sim/provenance "$d/r1.h5" "$out" >/dev/null 2>&1 &&
            cmp -s <(grep -v "^lumosim: stats" "$d/out1") <(grep -v "^lumosim: stats" "$d/out$k"); then
            same=yes
        fi
    fi
    printf '| %s | %s | %s | %s | %s | %s | %s-%s | %s | %s / %s | %s (%s) | %s | %s |\n' "$k" "$win" "$msg" "$ag" "$ar" \
        "$bytes" "$(echo "$nodes" | head -n 1)" "$(echo "$nodes" | tail -n 1)" "$xs" "$rmax" "$rsum" "$cpu" \
        "$(awk -v a="$cpu" -v b="$cpu1" 'BEGIN { printf "%.2f", a / b }')" "$wall" "$same"
done
