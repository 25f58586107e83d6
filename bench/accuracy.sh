#!/usr/bin/env bash
# Accuracy report: replays every shared trace on its own with the default
# (modelled) launch latency and with --latency observed, and tabulates the
# errors from `lumosim replay --json` (docs/report-json.md). See
# bench/README.md.
#
# Environment knobs:
#   BUILD_DIR=build-bench   build tree (Release); LUMOSIM=path overrides the binary
#   TRACES="a b"            override the list of traces
#   SHARED=dir              the shared traces folder (default ../shared/traces)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${BUILD_DIR:-build-bench}
SHARED=${SHARED:-$ROOT/../shared/traces}
[ -d "$SHARED" ] || SHARED=/work/shared/traces
SHARED=$(cd "$SHARED" && pwd)
OUT=bench/out
ACC="$OUT/accuracy"
mkdir -p "$ACC"

if [ -z "${LUMOSIM:-}" ]; then
    if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
        cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
    fi
    cmake --build "$BUILD_DIR" -j2 --target lumosim >/dev/null || exit 1
    LUMOSIM="$BUILD_DIR/lumosim"
fi

if [ -z "${TRACES:-}" ]; then
    TRACES=""
    for f in "$SHARED"/hta_single/*.json.gz "$SHARED"/megatron_tp8_a100/rank?.json.gz; do
        case "$(basename "$f")" in
        cpu_only*) continue ;;  # no GPU work: nothing to replay
        esac
        [ -f "$f" ] && TRACES="$TRACES $f"
    done
fi

LIST="$ACC/list.txt"
: >"$LIST"
for t in $TRACES; do
    b=$(basename "$t" .json.gz)
    b=$(basename "$b" .json)
    case "$t" in */megatron_tp8_a100/*) b="megatron_$b" ;; esac
    for mode in model observed; do
        out="$ACC/$b.$mode.json"
        err="$ACC/$b.$mode.err"
        if [ "$mode" = model ]; then
            "$LUMOSIM" replay --json "$t" >"$out" 2>"$err"
        else
            "$LUMOSIM" replay --json --latency observed "$t" >"$out" 2>"$err"
        fi
        echo "$? $mode $b $t" >>"$LIST"
    done
done

python3 - "$LIST" "$ACC" "$OUT/accuracy.md" <<'EOF'
import json, sys, os, statistics
lst, acc, md = sys.argv[1:4]
runs = {}
for line in open(lst):
    rc, mode, name, path = line.rstrip("\n").split(" ", 3)
    runs.setdefault(name, {"path": path})[mode] = int(rc)

def pct(x, nd=2):
    s = "%+.*f" % (nd, 100.0 * x)
    return s.replace("-", "+", 1) if float(s) == 0 else s

def rel(act, pred):
    return (pred - act) / act if act else 0.0

def load(name, mode):
    base = os.path.join(acc, "%s.%s" % (name, mode))
    if runs[name].get(mode) != 0:
        msg = open(base + ".err").read().strip().splitlines()
        return None, "exit %d: %s" % (runs[name].get(mode), msg[0] if msg else "")
    try:
        doc = json.load(open(base + ".json"))
        return doc["ranks"][0], None
    except (ValueError, KeyError, IndexError) as e:
        return None, "bad JSON: %s" % e

hdr = ("| file | iters | window err % | mean \\|iter err\\| % | max \\|iter err\\| % | "
       "exp. compute % | overlapped % | exp. comm % | other % | inferred | dropped | "
       "observed: window err % | observed: max \\|node err\\| ns |")
sep = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
rows, fails, werr = [], [], []
for name in runs:
    r, why = load(name, "model")
    o, owhy = load(name, "observed")
    if r is None:
        fails.append("- %s (model): %s" % (name, why))
        rows.append("| %s | FAIL | | | | | | | | | | | |" % name)
        continue
    w = r["window"]
    we = rel(w["actual_ns"], w["predicted_ns"])
    werr.append(abs(we))
    its = [abs(rel(i["actual_ns"], i["predicted_ns"])) for i in r.get("iterations", [])]
    bd_a, bd_p = r["breakdown"]["actual"], r["breakdown"]["predicted"]
    bd = []
    for k in ("exposed_compute_ns", "overlapped_ns", "exposed_comm_ns", "other_ns"):
        bd.append(pct((bd_p[k] - bd_a[k]) / w["actual_ns"]) if w["actual_ns"] else "n/a")
    g = r["graph"]
    if o is None:
        fails.append("- %s (observed): %s" % (name, owhy))
        ow, on = "FAIL", "FAIL"
    else:
        ow = pct(rel(o["window"]["actual_ns"], o["window"]["predicted_ns"]), 3)
        ne = o["node_error"]
        on = "%d" % max(ne["max_abs_start_ns"], ne["max_abs_end_ns"])
    rows.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s | %s |" % (
        name, len(its), pct(we, 3),
        "%.3f" % (100 * statistics.mean(its)) if its else "-",
        "%.3f" % (100 * max(its)) if its else "-",
        bd[0], bd[1], bd[2], bd[3], g["inferred_edges"], g["dropped_edges"], ow, on))

lines = ["# lumosim accuracy (bench/accuracy.sh)", "",
         "Each trace replayed on its own. Errors are (predicted - actual) / actual",
         "in %; breakdown columns are (predicted - actual) of each component",
         "relative to the actual window (docs/report-json.md). Default = modelled",
         "launch latency; the last two columns use --latency observed, which should",
         "reproduce the trace exactly (node error 0).", "", hdr, sep] + rows
if werr:
    lines += ["", "Mean |window error| (default latency) over %d traces: %.3f %%; max %.3f %%."
              % (len(werr), 100 * statistics.mean(werr), 100 * max(werr))]
if fails:
    lines += ["", "Failures:", ""] + fails
text = "\n".join(lines) + "\n"
open(md, "w").write(text)
print(text, end="")
EOF
