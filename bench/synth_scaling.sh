#!/usr/bin/env bash
# lumosim synth at K = 1 and K = 2 MPI ranks (issue 20: each rank synthesizes
# its share of the GPUs, the store written collectively): GPT-3 175B jobs as
# in bench/gpt3_scaling.sh (TP8 PP8, DP = GPUs / 64, micro-batch 1, global
# batch 24 x DP, 1F1B), per size RUNS runs of
#   lumosim synth --stats ... -o job.h5                   (K = 1)
#   mpirun -np 2 lumosim synth --stats ... -o job.h5      (K = 2)
# alternating (K = 1, K = 2, K = 1, ...), so that a slow spell of this shared
# machine falls on both. Each run prints one line
#   BENCH-RUN synth gpus= ranks= run= wall_s= generate_s= write_s= cpu_s=
#     peak_rss_mb_per_rank= load1=
# (generate_s, write_s: the slowest rank's, from its --stats line; cpu_s:
# user + system seconds summed over the ranks; peak RSS:
# the largest rank's; load1: the 1-minute load average just before the run),
# then per size and K the medians (BENCH synth ...), and whether every K = 2
# store equals the K = 1 one (h5diff: every dataset and attribute; the runs
# use the same command line from their own directories).
#   BUILD_DIR=build-bench  SIZES="1024 4096"  RUNS=3  MPIRUN_OPTS=
#   DOC=docs/scaling-synth.md  WORK=bench/out/synth
#   TABLE_ONLY=1: run nothing, rewrite the report from the last run's lines
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${BUILD_DIR:-build-bench}
SIZES=${SIZES:-1024 4096}
RUNS=${RUNS:-3}
MPIRUN_OPTS=${MPIRUN_OPTS:-}
DOC=${DOC-docs/scaling-synth.md}
WORK=${WORK:-bench/out/synth}
. "$ROOT/bench/mpi_env.sh"
. "$ROOT/bench/provenance.sh"
TABLE_ONLY=${TABLE_ONLY:-0}
if [ -n "$DOC" ] && [ "$TABLE_ONLY" != 1 ]; then lsim_doc_allowed "$DOC" || exit 1; fi
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
fi
[ "$TABLE_ONLY" = 1 ] || cmake --build "$BUILD_DIR" -j2 --target lumosim >/dev/null || exit 1
L=$(cd "$BUILD_DIR" && pwd)/lumosim
mkdir -p "$WORK/k1" "$WORK/k2"
WORK=$(cd "$WORK" && pwd)
raw=$ROOT/bench/out/synth_raw.txt
meta=$ROOT/bench/out/synth_meta.txt
fail=0
if [ "$TABLE_ONLY" = 1 ]; then
    SIZES=
    IFS='|' read -r commit load_before load_after secs when <"$meta" || exit 1
else
    : >"$raw"
    commit=$(lsim_commit)
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
fi
t_script=$(date +%s)
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }

for n in $SIZES; do
    dp=$((n / 64))
    gb=$((24 * dp))
    opts=(--model gpt3-175b --tp 8 --pp 8 --dp "$dp" --micro-batch 1 --global-batch "$gb" --no-memory-check --stats)
    echo "== $n GPUs: TP8 PP8 DP$dp, global batch $gb" >&2
    for ((r = 0; r < RUNS; r++)); do
        for k in 1 2; do
            d=$WORK/k$k
            rm -f "$d/job.h5"
            load1=$(cut -d' ' -f1 /proc/loadavg)
            if [ "$k" = 1 ]; then
                (cd "$d" && /usr/bin/time -f "TIME %e %M" "$L" synth "${opts[@]}" -o job.h5 >/dev/null 2>"$WORK/err")
            else
                # shellcheck disable=SC2086
                (cd "$d" && /usr/bin/time -f "TIME %e %M" mpirun --oversubscribe $MPIRUN_OPTS -np "$k" "$L" synth \
                    "${opts[@]}" -o job.h5 >/dev/null 2>"$WORK/err")
            fi
            rc=$?
            [ $rc = 0 ] || { echo "synth $n K=$k failed (exit $rc): $(grep -m1 error "$WORK/err")" >&2; fail=1; continue; }
            read -r _ wall _ < <(grep '^TIME' "$WORK/err")
            # the per-rank lines: "rank R of K: ...; generate X s, write Y s, total Z s; peak RSS M MiB"
            gen=$(sed -n 's/.*stats: synth rank .*generate \([0-9.]*\) s, write.*/\1/p' "$WORK/err" | sort -g | tail -1)
            wr=$(sed -n 's/.*stats: synth rank .*write \([0-9.]*\) s, total.*/\1/p' "$WORK/err" | sort -g | tail -1)
            # CPU seconds (user + system) summed over the ranks: what the
            # run cost, whatever share of the cores the machine gave it
            cpu=$(sed -n 's/.*stats: synth rank .*; CPU \([0-9.]*\) s;.*/\1/p' "$WORK/err" | awk '{s += $1} END {printf "%.2f", s}')
            rss=$(sed -n 's/.*stats: synth rank .*peak RSS \([0-9.]*\) MiB$/\1/p' "$WORK/err" | sort -g | tail -1)
            echo "BENCH-RUN synth gpus=$n ranks=$k run=$r wall_s=$wall generate_s=$gen write_s=$wr cpu_s=$cpu peak_rss_mb_per_rank=$rss load1=$load1" |
                tee -a "$raw"
            if [ "$k" = 1 ]; then
                nodes=$(sed -n 's/.*stats: synth [0-9]* GPUs.*: \([0-9]*\) nodes.*/\1/p' "$WORK/err")
                bytes=$(stat -c %s "$d/job.h5")
                echo "BENCH-JOB synth gpus=$n nodes=$nodes store_mb=$((bytes / 1000000))" >>"$raw"
                [ "$r" = 0 ] && cp "$d/job.h5" "$WORK/ref.h5"
            else
                if h5diff -q "$WORK/ref.h5" "$d/job.h5" >/dev/null 2>&1; then same=yes; else same=NO; fail=1; fi
                echo "BENCH-SAME synth gpus=$n ranks=$k run=$r same=$same" | tee -a "$raw"
            fi
        done
    done
    rm -f "$WORK/ref.h5" "$WORK"/k?/job.h5
done
if [ "$TABLE_ONLY" != 1 ]; then
    load_after=$(cut -d' ' -f1-3 /proc/loadavg)
    secs=$(($(date +%s) - t_script))
    when=$(date -u '+%Y-%m-%d %H:%M UTC')
    echo "$commit|$load_before|$load_after|$secs|$when" >"$meta"
fi

python3 - "$raw" "$commit" "$RUNS" "$load_before" "$load_after" "$secs" "$when" >bench/out/scaling-synth.md <<'PY'
import sys
raw, commit, runs, lb, la, secs, when = sys.argv[1:8]
def kv(l): return dict(x.split("=", 1) for x in l.split()[2:] if "=" in x)
runs_of, jobs, same = {}, {}, {}
for l in open(raw):
    t = l.split()
    if t[:2] == ["BENCH-RUN", "synth"]: d = kv(l); runs_of.setdefault((int(d["gpus"]), int(d["ranks"])), []).append(d)
    elif t[:2] == ["BENCH-JOB", "synth"]: d = kv(l); jobs[int(d["gpus"])] = d
    elif t[:2] == ["BENCH-SAME", "synth"]: d = kv(l); same.setdefault(int(d["gpus"]), []).append(d["same"])
def med(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2] if xs else float("nan")
P = print
P("# Scaling: `lumosim synth` under mpirun\n")
P("<!-- Generated by bench/synth_scaling.sh; do not edit by hand, rerun the script. -->\n")
P("Generated by `bash bench/synth_scaling.sh` on %s, commit %s; %s runs per figure, K = 1 and K = 2 alternating, "
  "medians. The whole script took %s s. This machine: 2 cores, 24 GiB, **shared with other work**: load average "
  "%s before, %s after, and the 1-minute load before each run is in the last column. With more runnable "
  "processes than cores, two ranks do not get two cores: the K = 2 figures here say what the split costs and "
  "that it is correct, not what it gains on a machine with a core per rank."
  % (when, commit, runs, secs, lb, la))
P("\nJobs: our synthesis (no trace), GPT-3 175B (96 layers, hidden 12288), TP8 PP8, DP = GPUs / 64, micro-batch 1, "
  "24 micro-batches per pipeline, 1F1B, H100 defaults (bench/gpt3_scaling.sh's). K = 1: `lumosim synth --stats "
  "... -o job.h5`; K = 2: `mpirun -np 2 lumosim synth --stats ... -o job.h5`, each rank synthesizing its share of "
  "the GPUs (rounds of one batch per rank) into the store, written collectively (parallel HDF5). *generate*, "
  "*write*: the slowest rank's seconds from its --stats line (write includes waiting for the other rank at each "
  "round); *CPU*: user + system seconds summed over the ranks, what the run cost whatever share of the cores "
  "it was given; peak RSS: the largest rank's. *same*: every K = 2 store equals the K = 1 store (`h5diff`, every "
  "dataset and attribute).\n")
P("| GPUs | nodes | store MB | K | wall s | generate s | write s | CPU s, all ranks | peak RSS MiB per rank | runs (wall s) | load (1 min) | same |")
P("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
for (n, k) in sorted(runs_of):
    rs = runs_of[(n, k)]
    j = jobs.get(n, {})
    f = lambda key: med([float(x[key]) for x in rs])
    P("| %d | %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %.0f | %s | %s | %s |" % (
        n, j.get("nodes", "-"), j.get("store_mb", "-"), k, f("wall_s"), f("generate_s"), f("write_s"), f("cpu_s"),
        f("peak_rss_mb_per_rank"), ", ".join(x["wall_s"] for x in rs), ", ".join(x["load1"] for x in rs),
        "-" if k == 1 else ("yes" if same.get(n) and all(s == "yes" for s in same[n]) else "NO")))
P("\nMemory: each rank holds one batch of graphs (about 256 MiB: 124 GPUs of these jobs, or an even share of the "
  "job when that is less) and the index entries of its own GPUs, so the peak per rank does not grow with the job; "
  "K divides the generation, not the peak (K ranks on one node hold K batches).")
P("\nCPU: K = 2 costs 1.5-1.8 times the CPU seconds of K = 1 (table). Where they go, from `perf record -F 999` of "
  "`lumosim synth --model gpt3-175b --tp 8 --pp 8 --dp 4 --micro-batch 1 --global-batch 96 --no-memory-check` "
  "(256 GPUs; RelWithDebInfo build of commit af08482, before the store's shared structure and strings), alone and under `mpirun -np 2` (one `perf record` "
  "per rank), samples by library (`perf report --sort dso -n`): K = 1: 3,894 (zlib 1,124, libc 971, kernel 809, "
  "lumosim 669, HDF5 312); K = 2, both ranks: 6,972 (zlib 1,466, libc 1,090, kernel 1,438, lumosim 756, HDF5 450, "
  "and 1,727 in Open MPI's progress engine: btl_vader, opal, libnbc). The generation splits (lumosim 669 -> 382 + "
  "374); what is added is the ranks polling in the collective writes (Open MPI waits by polling), more kernel "
  "time, and some 30 % more zlib, as expected since parallel HDF5 bypasses its chunk cache when writing: a chunk "
  "two ranks or two rounds share is compressed, read back and compressed again. On a machine with a core per rank the "
  "polling takes a core nobody else wanted and the wall time follows the split generation plus the write; on "
  "this one, with the machine's other work, it takes cores from the ranks that are working.")
PY
cat bench/out/scaling-synth.md
if [ -n "$DOC" ]; then cp bench/out/scaling-synth.md "$DOC"; fi
exit $fail
