#!/bin/sh
# bench/intervals.sh [LUMOSIM] [--docs DOC] -- how often the measured
# windows and iterations of the shared real jobs fall inside the predicted
# p5..p95 interval of `lumosim sim --samples 64 --draw-from others`: each
# GPU's interval is drawn from the other GPUs' kernel durations only, so its
# own measured values are a fair test (docs/intervals.md). Prints a Markdown
# table; with --docs, writes it into DOC between the markers.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/provenance.sh
L=build/lumosim
DOC=
while [ $# -gt 0 ]; do
    case "$1" in
    --docs) DOC=$2; shift 2 ;;
    *) L=$1; shift ;;
    esac
done
[ -z "$DOC" ] || lsim_doc_allowed "$DOC" || exit 1
SHARED=${SHARED:-$ROOT/../shared/traces}
[ -d "$SHARED" ] || SHARED=/work/shared/traces
N=${SAMPLES:-64}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
for job in megatron_tp8_a100 ddp4_mi300; do
    [ -d "$SHARED/$job" ] || continue
    mkdir "$tmp/$job"
    cp "$SHARED/$job"/rank*.json.gz "$tmp/$job/"
    "$L" build "$tmp/$job" -o "$tmp/$job.h5" >/dev/null
    "$L" sim "$tmp/$job.h5" --samples "$N" --seed 1 --draw-from others --json >"$tmp/$job.json"
done
python3 - "$tmp" "$N" "$(lsim_commit)" >"$tmp/section.md" <<'PY'
import json, os, sys
t, n, commit = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print("`sh bench/intervals.sh build/lumosim` at commit %s: `lumosim build` of each job's ranks, then" % commit)
print("`lumosim sim JOB.h5 --samples %d --seed 1 --draw-from others --json`. Measured against each rank's own" % n)
print("trace (a real run); the rank's interval is drawn from the *other* ranks' kernel durations.")
print()
print("| job | GPUs | job span p5 .. p95 ms | measured ms | windows inside | iterations inside | mean iteration interval width | fitted spread |")
print("|---|---:|---|---:|---:|---:|---:|---:|")
for job in ("megatron_tp8_a100", "ddp4_mi300"):
    p = os.path.join(t, job + ".json")
    if not os.path.exists(p):
        continue
    d = json.load(open(p))
    j, c = d["job"], d["coverage"]
    widths = [(it["p95_ns"] - it["p5_ns"]) / it["p50_ns"] for g in d["gpus"] for it in g["iterations"] if it["p50_ns"] > 0]
    w = 100 * sum(widths) / len(widths) if widths else 0
    print("| %s | %d | %.3f .. %.3f | %.3f | %d of %d | %d of %d | %.2f %% | %.1f %% |" % (
        job, len(d["gpus"]), j["p5_ns"] / 1e6, j["p95_ns"] / 1e6, j.get("actual_ns", 0) / 1e6,
        c["windows_inside"], c["windows_measured"], c["iterations_inside"], c["iterations_measured"], w,
        100 * d["pool_info"]["fitted_spread"]))
PY
cat "$tmp/section.md"
[ -z "$DOC" ] || lsim_doc_section "$DOC" "$tmp/section.md" bench/intervals.sh
