#!/usr/bin/env bash
# bench/moe_scale.sh [LUMOSIM]: synth + sim of a 4,096-GPU DeepSeek-V3-class
# job with expert parallelism 64 (issue 36's speed target: within 2 minutes
# at K = 2 MPI ranks on this machine, bytes per node no worse than the dense
# jobs'), at K = 1 and K = 2, RUNS runs each, alternating K so a slow spell
# of the shared machine falls on both. The job: deepseek-v3 (61 layers, the
# first 3 dense, 256 routed experts top-8 and one shared), TP 1, PP 16 (the
# 61 layers split as torchtitan splits them, --pp-layers middle), DP 256,
# EP 64, 16 micro-batches of one sequence per pipeline, FP8, the distributed
# optimizer, full recomputation (so that the job fits an 80 GB H100).
# Prints one line per run
#   BENCH-RUN moe ranks= run= synth_s= synth_rss_mb= sim_s= sim_rss_mb= sim_off_s= sim_off_rss_mb=
# (RSS: the largest rank's; sim: with the symmetry reduction, sim_off:
# --symmetry off, every GPU simulated), then the medians, the job's nodes and
# bytes per node (the K = 1 --symmetry off peak RSS over the nodes), and
# whether the K = 2 archives equal the K = 1 ones (h5diff).
#   RUNS=3  WORK=bench/out/moe  MPIRUN_OPTS=
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
L=${1:-build/lumosim}
RUNS=${RUNS:-3}
WORK=${WORK:-bench/out/moe}
MPIRUN_OPTS=${MPIRUN_OPTS:-}
. "$ROOT/bench/mpi_env.sh"
mkdir -p "$WORK" || exit 1
JOB=(--model deepseek-v3 --tp 1 --pp 16 --dp 256 --ep 64 --micro-batch 1 --global-batch 4096 --pp-layers middle
     --distributed-optimizer --precision fp8 --recompute full)

# run K WHAT OUT ARGS...: wall seconds and the largest rank's peak RSS (MB)
run() {
    local k=$1 out=$2; shift 2
    local t0 t1
    t0=$(date +%s.%N)
    if [ "$k" -eq 1 ]; then
        /usr/bin/time -f "%M" -o "$WORK/rss.$k" "$L" "$@" >"$out" 2>"$WORK/err" || { cat "$WORK/err" >&2; return 1; }
    else
        # shellcheck disable=SC2086
        mpirun -np "$k" $MPIRUN_OPTS /usr/bin/time -f "%M" -a -o "$WORK/rss.$k" "$L" "$@" >"$out" 2>"$WORK/err" ||
            { cat "$WORK/err" >&2; return 1; }
    fi
    t1=$(date +%s.%N)
    echo "$(echo "$t1 - $t0" | bc) $(sort -n "$WORK/rss.$k" | tail -n 1 | awk '{printf "%.0f", $1 / 1024}')"
    rm -f "$WORK/rss.$k"
}

for r in $(seq "$RUNS"); do
    for k in 1 2; do
        rm -f "$WORK/job$k.h5"
        read -r ss sr < <(run "$k" /dev/null synth "${JOB[@]}" -o "$WORK/job$k.h5") || exit 1
        rm -f "$WORK/res$k.h5" "$WORK/off$k.h5"
        read -r ms mr < <(run "$k" /dev/null sim -o "$WORK/res$k.h5" "$WORK/job$k.h5") || exit 1
        read -r os or < <(run "$k" /dev/null sim --symmetry off -o "$WORK/off$k.h5" "$WORK/job$k.h5") || exit 1
        echo "BENCH-RUN moe ranks=$k run=$r synth_s=$ss synth_rss_mb=$sr sim_s=$ms sim_rss_mb=$mr sim_off_s=$os sim_off_rss_mb=$or"
    done
done | tee "$WORK/runs.txt"
# the job's nodes and step (untimed), and K = 2 against K = 1
"$L" sim --json "$WORK/job1.h5" >"$WORK/sim1.json" 2>/dev/null || exit 1
same=yes
for a in res off; do
    h5diff -q --exclude-path /runs/sim/provenance "$WORK/${a}1.h5" "$WORK/${a}2.h5" >/dev/null 2>&1 || same=NO
done
echo "BENCH moe archives K=2 equal to K=1 (h5diff, provenance aside): $same"

python3 - "$WORK" <<'PY'
import json, re, statistics, sys
work = sys.argv[1]
runs = [dict(kv.split("=") for kv in l.split()[2:]) for l in open(work + "/runs.txt") if l.startswith("BENCH-RUN")]
fields = ["synth_s", "synth_rss_mb", "sim_s", "sim_rss_mb", "sim_off_s", "sim_off_rss_mb"]
med = {}
for k in ("1", "2"):
    rs = [r for r in runs if r["ranks"] == k]
    med[k] = {f: statistics.median(float(r[f]) for r in rs) for f in fields}
    print("BENCH moe ranks=%s runs=%d " % (k, len(rs)) + " ".join("%s=%.1f" % (f, med[k][f]) for f in fields) +
          " synth_plus_sim_s=%.1f" % (med[k]["synth_s"] + med[k]["sim_s"]))
j = json.load(open(work + "/sim1.json"))
nodes = sum(r["graph"]["nodes"] for r in j["ranks"])
print("BENCH moe gpus=%d nodes=%d step_ms=%.3f bytes_per_node=%.1f (K = 1, --symmetry off peak RSS / nodes)" % (
    len(j["ranks"]), nodes, j["job"]["predicted_ns"] / 1e6, med["1"]["sim_off_rss_mb"] * 2 ** 20 / nodes))
PY
