#!/bin/sh
# bench/search.sh [LUMOSIM] [--docs DOC] [--np K] -- the configuration
# search of GPT-3 175B on 512 H100s with a global batch of 1536 (the space
# of docs/search.md), its ranking and the search's own speed: configurations
# simulated per minute of simulation (the sum over the ranks of each
# candidate's wall seconds) and per minute of wall time, with the load
# average when it started (the machine is shared). Each candidate is one
# data-parallel replica with one tensor-parallel rank per stage, exact for
# the whole job. With --docs, writes the section into DOC between its
# markers; with --np K, runs under mpirun with K ranks.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/provenance.sh
L=build/lumosim
DOC=
NP=1
while [ $# -gt 0 ]; do
    case "$1" in
    --docs) DOC=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    *) L=$1; shift ;;
    esac
done
[ -z "$DOC" ] || lsim_doc_allowed "$DOC" || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
ARGS="--model gpt3-175b --gpus 512 --gpu h100 --global-batch 1536 --tp 1,2,4,8 --pp 4,8,12,16,24 --micro-batch 1,2 --schedule 1f1b,interleaved:2"
RUN=""
if [ "$NP" -gt 1 ]; then
    . bench/mpi_env.sh
    RUN="mpirun -n $NP --oversubscribe"
fi
LOAD=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo unknown)
# shellcheck disable=SC2086
$RUN "$L" search $ARGS --top 15 --json >"$tmp/s.json"
python3 - "$tmp/s.json" "$(lsim_commit)" "$NP" "$ARGS" "$LOAD" >"$tmp/section.md" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); commit, np, args, load = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
print("`sh bench/search.sh build/lumosim%s` at commit %s: `lumosim search %s`." % (" --np " + np if np != "1" else "", commit, args))
print("Measured against our own synthesis (no real 512-GPU run of GPT-3 175B is at hand); each step time is the")
print("synthesized job simulated, by one data-parallel replica with one tensor-parallel rank per pipeline stage")
print("(exact for the whole job: test `search:cli`).")
print()
print("| rank | TP | PP | DP | micro-batch | schedule | recompute | dist. opt. | step s | tokens/s | peak GB | idle % | exp. comm % |")
print("|---:|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|")
for i, x in enumerate(d["ranking"]):
    sch = "1F1B" if x["vstages"] == 1 else "interleaved:%d" % x["vstages"]
    print("| %d | %d | %d | %d | %d | %s | %s | %s | %.3f | %.0f | %.1f | %.1f | %.1f |" % (i + 1, x["tp"], x["pp"], x["dp"],
          x["micro_batch"], sch, x["recompute"], "on" if x["distributed_optimizer"] else "off", x["step_ns"] / 1e9,
          x["tokens_per_s"], x["peak_memory_bytes"] / 1e9, 100 * x["idle_share"], 100 * x["exposed_comm_share"]))
print()
print("Discarded: " + ", ".join("%d %s" % (v, k.replace("_", " ")) for k, v in d["reasons"].items() if k != "simulated" and v) + ".")
print()
print("%d configurations, %d feasible, %d simulated in %.0f s of wall time on %s rank(s), load average %s"
      " when it started: **%.1f configurations of 512 GPUs per minute of simulation** (target 50), %.1f per"
      " minute of wall time." % (d["candidates"], d["feasible"], d["simulated"], d["seconds"], np, load,
      d["simulated_per_minute"], 60 * d["simulated"] / d["seconds"] if d["seconds"] > 0 else 0))
PY
cat "$tmp/section.md"
[ -z "$DOC" ] || lsim_doc_section "$DOC" "$tmp/section.md" bench/search.sh
