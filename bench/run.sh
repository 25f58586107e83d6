#!/usr/bin/env bash
# Performance benchmark: ingest MB/s, events/s, engine node-events/s, peak RSS.
# See bench/README.md. Run from anywhere; works in the repository root.
#
# Environment knobs:
#   BUILD_DIR=build-bench  build tree (Release)
#   REPS=3                 processes per shared trace (median reported)
#   RUNS=5                 engine runs per process (median inside bench_replay)
#   SIZE_MB=1100           synthetic trace size, MB = 10^6 bytes uncompressed
#   SYNTH_REPS=3           processes on the synthetic trace
#   SYNTH_SEED=...         seed for gen_trace (megatron rank 0)
#   SKIP_SYNTH=1           skip the synthetic trace
#   KEEP=1                 keep bench/out/synth_*.json afterwards
#   NO_PIN=1               do not pin to core 0 with taskset
#   TRACES="a b"           override the list of shared traces
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${BUILD_DIR:-build-bench}
REPS=${REPS:-3}
RUNS=${RUNS:-5}
SIZE_MB=${SIZE_MB:-1100}
SYNTH_REPS=${SYNTH_REPS:-3}
SHARED=${SHARED:-$ROOT/../shared/traces}
[ -d "$SHARED" ] || SHARED=/work/shared/traces
SHARED=$(cd "$SHARED" && pwd)
SYNTH_SEED=${SYNTH_SEED:-$SHARED/megatron_tp8_a100/rank0.json.gz}
OUT=bench/out
mkdir -p "$OUT"

# ---- build ---------------------------------------------------------------
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD_DIR" -j2 --target bench_replay gen_trace >/dev/null
BENCH="$BUILD_DIR/bench/bench_replay"
GEN="$BUILD_DIR/bench/gen_trace"

PIN=()
if [ -z "${NO_PIN:-}" ] && command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
    PIN=(taskset -c 0)
fi

if [ -z "${TRACES:-}" ]; then
    TRACES="$( (ls "$SHARED"/hta_single/ns_resolution_trace__*.json.gz 2>/dev/null || true) | head -1) $SHARED/megatron_tp8_a100/rank0.json.gz"
fi

RAW="$OUT/bench_raw.txt"
: >"$RAW"
echo "# lumosim benchmark: $(date -u +%Y-%m-%dT%H:%M:%SZ), ${PIN[*]:-unpinned}, runs/process=$RUNS"

run_bench() { # label file reps
    local label=$1 file=$2 n=$3 i
    for ((i = 1; i <= n; i++)); do
        echo "## $label: process $i/$n" >&2
        if ! "${PIN[@]}" "$BENCH" --runs "$RUNS" "$file" | tee -a /dev/stderr |
            grep '^BENCH ' | sed "s|^BENCH |BENCH label=$label |" >>"$RAW"; then
            echo "bench_replay failed on $file" >&2
            return 1
        fi
    done
}

status=0
for t in $TRACES; do
    [ -f "$t" ] || { echo "missing trace: $t" >&2; status=1; continue; }
    run_bench "$(basename "$(dirname "$t")")/$(basename "$t" .json.gz)" "$t" "$REPS" || status=1
done

SYNTH=""
if [ -z "${SKIP_SYNTH:-}" ]; then
    need_kb=$(( (SIZE_MB * 1000000 / 1024) * 2 ))   # the file plus headroom
    avail_kb=$(df -Pk "$OUT" | awk 'NR == 2 { print $4 }')
    if [ "$avail_kb" -lt "$need_kb" ]; then
        echo "not enough disk for a ${SIZE_MB} MB trace: $((avail_kb / 1024)) MiB free in $OUT," \
             "need $((need_kb / 1024)) MiB; skipping the synthetic trace" >&2
        status=1
    else
        SYNTH="$OUT/synth_${SIZE_MB}MB.json"
        echo "## generating $SYNTH from $SYNTH_SEED" >&2
        "$GEN" --size-mb "$SIZE_MB" "$SYNTH_SEED" "$SYNTH" >&2
        run_bench "synthetic ${SIZE_MB} MB from $(basename "$(dirname "$SYNTH_SEED")")/$(basename "$SYNTH_SEED" .json.gz)" "$SYNTH" "$SYNTH_REPS" || status=1
        if [ -z "${KEEP:-}" ]; then
            rm -f "$SYNTH"
        fi
    fi
fi

# ---- table ---------------------------------------------------------------
python3 - "$RAW" "$OUT/perf.md" "${PIN[*]:-unpinned}" "$RUNS" <<'EOF'
import datetime, os, platform, statistics, subprocess, sys
raw, md, pin, runs = sys.argv[1:5]
try:
    load = open("/proc/loadavg").read().split()[:3]
except OSError:
    load = ["?"] * 3
rows = {}
for line in open(raw):
    line = line.rstrip("\n")
    if not line.startswith("BENCH "):
        continue
    # label=... (may contain spaces) up to " bytes=", file= is last
    body = line[len("BENCH label="):]
    label, rest = body.split(" bytes=", 1)
    rest = "bytes=" + rest
    kv = {}
    head, _, path = rest.partition(" file=")
    for tok in head.split():
        k, _, v = tok.partition("=")
        kv[k] = v
    rows.setdefault(label, []).append(kv)

def med(lst, key):
    return statistics.median(float(r[key]) for r in lst)

cpu = "unknown"
try:
    for l in open("/proc/cpuinfo"):
        if l.startswith("model name"):
            cpu = l.split(":", 1)[1].strip(); break
except OSError:
    pass
try:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "uncommitted"
except OSError:
    commit = "unknown"

hdr = ("| file | uncompressed MB | events | ingest MB/s | ingest M events/s | graph nodes | "
       "build s | M node-events/s | peak RSS MiB | RSS / size |")
sep = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
lines = [
    "# lumosim performance (bench/run.sh)",
    "",
    "%s UTC, commit %s, %s, %s, Release build, %s; medians over processes "
    "(engine: median of %s runs per process); %d CPUs, load average at the end %s." % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), commit, cpu,
        platform.machine(), pin, runs, os.cpu_count() or 0, " ".join(load)),
    "",
    hdr, sep,
]
ok = {"ingest": True, "rss": True, "engine": True}
for label, lst in rows.items():
    mb = med(lst, "bytes") / 1e6
    mbps, eps = med(lst, "ingest_mbps"), med(lst, "ingest_eps")
    neps, rss, ratio = med(lst, "engine_neps"), med(lst, "rss_mib"), med(lst, "rss_ratio")
    lines.append("| %s (n=%d) | %.1f | %d | %.1f | %.2f | %d | %.3f | %.1f | %.1f | %.3f |" % (
        label, len(lst), mb, med(lst, "events"), mbps, eps / 1e6, med(lst, "nodes"),
        med(lst, "build_s"), neps / 1e6, rss, ratio))
    # targets are judged on files large enough to matter (>= 100 MB)
    if mb >= 100:
        ok["ingest"] &= mbps >= 150
        ok["rss"] &= ratio <= 0.5
        ok["engine"] &= neps >= 10e6
big = any(med(l, "bytes") >= 100e6 for l in rows.values())
lines += [
    "",
    "Targets (judged on the files of 100 MB or more%s):" % ("" if big else "; none was run"),
    "",
    "- ingest >= 150 MB/s uncompressed JSON on one core: %s" % ("met" if ok["ingest"] else "NOT met"),
    "- peak RSS <= 0.5 x uncompressed size: %s" % ("met" if ok["rss"] else "NOT met"),
    "- engine >= 10 million node-events/s: %s" % ("met" if ok["engine"] else "NOT met"),
    "",
    "MB = 10^6 bytes, MiB = 2^20 bytes. Peak RSS is the process's ru_maxrss",
    "(each trace in a fresh process); small files are dominated by the fixed",
    "process footprint, so their RSS/size ratio is not meaningful.",
]
text = "\n".join(lines) + "\n"
open(md, "w").write(text)
print()
print(text, end="")
EOF
echo "(written to $OUT/perf.md; raw BENCH lines in $RAW)"
exit $status
