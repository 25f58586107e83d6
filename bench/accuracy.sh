#!/usr/bin/env bash
# Accuracy report: replays every shared trace on its own with the default
# (modelled) launch latency and with --latency observed, tabulates the errors
# from `lumosim replay --json` (docs/report-json.md), judges them against the
# targets, tabulates the edge-class ablation of `lumosim ablate --json` and
# writes docs/accuracy.md (and bench/out/accuracy.md). See bench/README.md.
#
# Environment knobs:
#   BUILD_DIR=build-bench   build tree (Release); LUMOSIM=path overrides the binary
#   TRACES="a b"            override the list of shared traces (then docs/ is
#                           not written unless DOC is set, and no fixtures run
#                           unless FIXTURES is set)
#   FIXTURES="a b"          repository fixtures added as marked rows
#                           (default: tests/data/cuda_graph.json, the
#                           megatron rank 0 made into graph launches by
#                           tests/data/tools/make_cuda_graph.py,
#                           tests/data/hip_trace.json and
#                           tests/data/prewindow_megatron_rank0.json.gz)
#   DOC=path                where to write the report ("" = only bench/out)
#   SHARED=dir              the shared traces folder (default ../shared/traces)
#   ABLATE=0                skip the edge-class ablation (`lumosim ablate`)
#   LSIM_ALLOW_DIRTY=1      write docs/ from a tree with uncommitted changes
#                           (refused otherwise; bench/provenance.sh)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
. bench/provenance.sh
BUILD_DIR=${BUILD_DIR:-build-bench}
SHARED=${SHARED:-$ROOT/../shared/traces}
[ -d "$SHARED" ] || SHARED=/work/shared/traces
SHARED=$(cd "$SHARED" && pwd)
OUT=bench/out
ACC="$OUT/accuracy"
mkdir -p "$ACC"
rm -f "$ACC"/*.json "$ACC"/*.err

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
    # graph launches made from the real megatron rank 0 (issue 16, trap 3):
    # made here, as the tests make it, not committed
    CG="$ACC/cuda_graph_megatron_rank0.json.gz"
    python3 tests/data/tools/make_cuda_graph.py examples/megatron_tp8_rank0.json.gz "$CG" >/dev/null || exit 1
    FIXTURES=${FIXTURES-tests/data/cuda_graph.json $CG tests/data/hip_trace.json tests/data/prewindow_megatron_rank0.json.gz}
    DOC=${DOC-docs/accuracy.md}
else
    FIXTURES=${FIXTURES:-}
    DOC=${DOC:-}
fi
if [ -n "$DOC" ]; then lsim_doc_allowed "$DOC" || exit 1; fi

LIST="$ACC/list.txt"
: >"$LIST"
name_of() { # trace -> row name
    local b
    b=$(basename "$1" .json.gz)
    b=$(basename "$b" .json)
    case "$1" in */megatron_tp8_a100/*) b="megatron_$b" ;; esac
    echo "$b"
}
replay() { # kind trace
    local kind=$1 t=$2 b mode out err
    b=$(name_of "$t")
    for mode in model observed; do
        out="$ACC/$b.$mode.json"
        err="$ACC/$b.$mode.err"
        "$LUMOSIM" replay --json --latency "$mode" "$t" >"$out" 2>"$err"
        echo "$? $mode $kind $b $t" >>"$LIST"
    done
}
ablate() { # trace: every edge-class variant, default (modelled) latency
    local t=$1 b
    b=$(name_of "$t")
    "$LUMOSIM" ablate --json "$t" >"$ACC/$b.ablate.json" 2>"$ACC/$b.ablate.err"
    echo "$? ablate shared $b $t" >>"$LIST"
}
for t in $TRACES; do replay shared "$t"; done
for t in $FIXTURES; do replay fixture "$t"; done
if [ "${ABLATE:-1}" != 0 ]; then
    for t in $TRACES; do ablate "$t"; done
fi

# one job, all ranks: the megatron set replayed together (coupled collectives)
JOBDIR="$SHARED/megatron_tp8_a100"
if [ -d "$JOBDIR" ]; then
    "$LUMOSIM" replay --json "$JOBDIR" >"$ACC/job_megatron.json" 2>"$ACC/job_megatron.err" || true
    for R in 0 1 2 3 4 5 6 7; do
        "$LUMOSIM" replay --json --replicate-from $R "$JOBDIR" >"$ACC/job_replicate_$R.json" 2>/dev/null || true
    done
fi

COMMIT=$(lsim_commit)
VERSION=$("$LUMOSIM" --version 2>/dev/null | head -1)

python3 - "$LIST" "$ACC" "$OUT/accuracy.md" "$DOC" "$COMMIT" "$VERSION" <<'EOF'
import datetime, gzip, json, os, statistics, sys, textwrap
lst, acc, md, doc, commit, version = sys.argv[1:7]
runs = {}
for line in open(lst):
    rc, mode, kind, name, path = line.rstrip("\n").split(" ", 4)
    runs.setdefault(name, {"path": path, "kind": kind})[mode] = int(rc)

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
        return json.load(open(base + ".json"))["ranks"][0], None
    except (ValueError, KeyError, IndexError) as e:
        return None, "bad JSON: %s" % e

def graph_launches(path):
    """cudaGraphLaunch / hipGraphLaunch calls in the trace (text count)."""
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        data = f.read()
    return data.count(b'"cudaGraphLaunch"') + data.count(b'"hipGraphLaunch"')

hdr = ("| file | iters | window err % | mean \\|iter err\\| % | max \\|iter err\\| % | "
       "mean \\|CPU span err\\| % | GPU start err median / p90 us | CPU start err p90 us | duty diff pts | "
       "exp. compute % | overlapped % | exp. comm % | other % | inferred | dropped | "
       "observed: window err % | observed: max \\|node err\\| ns |")
sep = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
rows, fails, res = [], [], {}
for name, info in runs.items():
    label = name + (" *(fixture)*" if info["kind"] == "fixture" else "")
    r, why = load(name, "model")
    o, owhy = load(name, "observed")
    e = res[name] = {"kind": info["kind"], "ok": r is not None, "exact": False,
                     "graph_launches": graph_launches(info["path"])}
    if o is None:
        fails.append("- %s (`--latency observed`): %s" % (name, owhy))
        ow, on = "FAIL", "FAIL"
    else:
        oe = rel(o["window"]["actual_ns"], o["window"]["predicted_ns"])
        ne = o["node_error"]
        onode = max(ne["max_abs_start_ns"], ne["max_abs_end_ns"])
        e["exact"] = oe == 0 and onode == 0
        ow, on = pct(oe, 3), "%d" % onode
    if r is None:
        fails.append("- %s (default latency): %s" % (name, why))
        rows.append("| %s | FAIL | | | | | | | | | | | | | | %s | %s |" % (label, ow, on))
        continue
    w = r["window"]
    e["window"] = we = rel(w["actual_ns"], w["predicted_ns"])
    e["iters"] = its = [abs(rel(i["actual_ns"], i["predicted_ns"])) for i in r.get("iterations", [])]
    cpus = [abs(rel(i["cpu_actual_ns"], i["cpu_predicted_ns"])) for i in r.get("iterations", [])
            if i.get("cpu_actual_ns") is not None]
    # the iterations partition the window (docs/report-json.md): checked here too
    if its and (sum(i["actual_ns"] for i in r["iterations"]) != w["actual_ns"] or
                sum(i["predicted_ns"] for i in r["iterations"]) != w["predicted_ns"]):
        fails.append("- %s: the iterations do not add up to the window" % name)
    sg, sc = r["node_error"]["start_error_gpu"], r["node_error"]["start_error_cpu"]
    e["gpu_p90"] = sg["p90_ns"] if sg["nodes"] else None
    e["duty_diff"] = r["duty_cycle"]["mean_abs_diff_pp"]
    e["prewindow"] = r["graph"].get("prewindow_gpu_nodes", 0)
    bd_a, bd_p = r["breakdown"]["actual"], r["breakdown"]["predicted"]
    bd = [pct((bd_p[k] - bd_a[k]) / w["actual_ns"]) if w["actual_ns"] else "n/a"
          for k in ("exposed_compute_ns", "overlapped_ns", "exposed_comm_ns", "other_ns")]
    g = r["graph"]
    rows.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s | %s |" % (
        label, len(its), pct(we, 3),
        "%.3f" % (100 * statistics.mean(its)) if its else "-",
        "%.3f" % (100 * max(its)) if its else "-",
        "%.3f" % (100 * statistics.mean(cpus)) if cpus else "-",
        "%.1f / %.1f" % (sg["median_ns"] / 1e3, sg["p90_ns"] / 1e3) if sg["nodes"] else "-",
        "%.1f" % (sc["p90_ns"] / 1e3) if sc["nodes"] else "-",
        "%.2f" % e["duty_diff"],
        bd[0], bd[1], bd[2], bd[3], g["inferred_edges"], g["dropped_edges"], ow, on))

shared = {n: e for n, e in res.items() if e["kind"] == "shared"}
fixt = {n: e for n, e in res.items() if e["kind"] == "fixture"}
ok_sh = {n: e for n, e in shared.items() if e["ok"]}

def verdict(b):
    return "**PASS**" if b else "**FAIL**"

def worst(d, key):
    return max(d.items(), key=lambda kv: key(kv[1])) if d else (None, None)

targets = []
if shared:
    allok = len(ok_sh) == len(shared)
    # 1. whole window, every shared file
    n, e = worst(ok_sh, lambda e: abs(e["window"]))
    m = abs(e["window"]) if e else 0
    targets.append("| whole-window \\|error\\| <= 0.2 %% on every shared single-rank file (%d) "
                   "| max %.3f %% (%s) | %s |" % (len(shared), 100 * m, n, verdict(allok and m <= 0.002)))
    # 2. per-iteration, mean per file and pooled
    wi = {n: e for n, e in ok_sh.items() if e["iters"]}
    pooled = [x for e in wi.values() for x in e["iters"]]
    n, e = worst(wi, lambda e: statistics.mean(e["iters"]))
    m = statistics.mean(e["iters"]) if e else 0
    targets.append("| mean per-iteration \\|error\\| <= 1 %% (each of the %d files with "
                   "ProfilerStep spans) | worst file %.3f %% (%s); all %d iterations "
                   "pooled %.3f %%, max %.3f %% | %s |" % (
                       len(wi), 100 * m, n, len(pooled),
                       100 * (statistics.mean(pooled) if pooled else 0),
                       100 * (max(pooled) if pooled else 0), verdict(allok and m <= 0.01)))
    # 3. megatron ranks, each on its own: window and iterations
    meg = {n: e for n, e in shared.items() if n.startswith("megatron_rank")}
    if meg:
        megok = all(e["ok"] for e in meg.values())
        mm = max((max([abs(e["window"])] + e["iters"]) for e in meg.values() if e["ok"]), default=0)
        targets.append("| megatron_tp8_a100: each of the %d ranks replayed on its own within "
                       "0.5 %% (window and iteration) | max %.3f %% | %s |" % (
                           len(meg), 100 * mm, verdict(megok and len(meg) == 8 and mm <= 0.005)))
    # 4. the GPU start-error p90 is reported for every shared file (issue 16)
    miss = sorted(n for n, e in ok_sh.items() if e.get("gpu_p90") is None)
    n, e = worst({k: v for k, v in ok_sh.items() if v.get("gpu_p90") is not None}, lambda e: e["gpu_p90"])
    targets.append("| GPU start-error p90 reported for every shared file (%d) | worst %.1f us (%s)%s | %s |" % (
        len(shared), e["gpu_p90"] / 1e3 if e else 0, n, "; missing: " + ", ".join(miss) if miss else "",
        verdict(allok and not miss)))
# self-check (self-consistency): every trace and every fixture, named
ex = [n for n, e in res.items() if not e["exact"]]
selfcheck = ["| `--latency observed` reproduces every trace and fixture exactly (window and "
             "node error 0): %d shared traces, fixtures %s | %d of %d exact%s | %s |" % (
                 len(shared), ", ".join(sorted(fixt)) or "none", len(res) - len(ex), len(res),
                 "; not: " + ", ".join(ex) if ex else "", verdict(not ex))]

# ---- edge-class ablation (`lumosim ablate --json`, shared traces only) ----
VARIANTS = ["full", "-event", "-hidden", "-sync", "-cpu_cross_thread", "-launch_latency", "dpro"]
COMP = ("exposed_compute", "overlapped", "exposed_comm", "other")
abl = {}  # name -> {variant: {"iter", "window", "bd": [4], "recall"}}
for name, info in runs.items():
    if "ablate" not in info:
        continue
    base = os.path.join(acc, name + ".ablate")
    if info["ablate"] != 0:
        msg = open(base + ".err").read().strip().splitlines()
        fails.append("- %s (`ablate`): exit %d: %s" % (name, info["ablate"], msg[0] if msg else ""))
        continue
    try:
        vs = json.load(open(base + ".json"))["traces"][0]["variants"]
        abl[name] = {v["variant"]: {"iter": v["iteration_error"], "window": v["window_error"],
                                    "bd": [v["breakdown_error"][k] for k in COMP],
                                    "recall": v["critical_path_recall"]} for v in vs}
        missing = [v for v in VARIANTS if v not in abl[name]]
        if missing:
            raise KeyError("no variant " + ", ".join(missing))
    except (ValueError, KeyError, IndexError, TypeError) as e:
        abl.pop(name, None)
        fails.append("- %s (`ablate`): bad JSON: %s" % (name, e))

def short(name):
    """Compact trace label: the distinctive part of an hta_single file name."""
    p = name.split("__")
    if len(p) >= 3:
        return p[1]
    if len(p) == 2:
        return p[1] if len(p[1]) <= 20 else p[0]
    return name

def mean_of(d):  # average the variant figures of several traces
    return {v: {"iter": statistics.mean(x[v]["iter"] for x in d),
                "window": statistics.mean(x[v]["window"] for x in d),
                "bd": [statistics.mean(x[v]["bd"][i] for x in d) for i in range(4)],
                "recall": statistics.mean(x[v]["recall"] for x in d)} for v in VARIANTS}

ABL = []
if abl:
    meg = [n for n in abl if n.startswith("megatron_")]
    blocks = [(short(n), abl[n]) for n in abl if n not in meg]
    if len(set(b[0] for b in blocks)) < len(blocks):  # labels must stay unique
        blocks = [(n, abl[n]) for n in abl if n not in meg]
    if len(meg) == 1:
        blocks.append((meg[0], abl[meg[0]]))
    elif meg:
        blocks.append(("megatron, mean of %d ranks" % len(meg), mean_of([abl[n] for n in meg])))
    trows = []
    for label, d in blocks:
        cells = {}
        for v in VARIANTS:
            x = d[v]
            cells[v] = ("%.3f" % (100 * x["iter"]), pct(x["window"], 3)) + tuple(
                pct(c) for c in x["bd"]) + ("%.1f" % (100 * x["recall"]),)
        groups = []  # variants whose figures print identically share a row
        for v in VARIANTS:
            for g in groups:
                if cells[g[0]] == cells[v]:
                    g.append(v)
                    break
            else:
                groups.append([v])
        for i, g in enumerate(groups):
            trows.append("| %s | %s | %s |" % (label if i == 0 else "", ", ".join(g),
                                                " | ".join(cells[g[0]])))
    nt = len(abl)
    names = list(abl)
    # observations, computed from the per-trace figures (megatron ranks one by one)
    SINGLE = VARIANTS[1:-1]  # one class removed; dpro removes four
    def f3(x):
        return "%.3f" % (100 * x)
    def unchanged(n, v):  # every figure prints as the full model's
        x, y = abl[n][v], abl[n]["full"]
        return (f3(x["iter"]) == f3(y["iter"]) and pct(x["window"], 3) == pct(y["window"], 3)
                and all(pct(a) == pct(b) for a, b in zip(x["bd"], y["bd"]))
                and "%.1f" % (100 * x["recall"]) == "%.1f" % (100 * y["recall"]))
    obs = []
    mi = {v: statistics.mean(abl[n][v]["iter"] for n in names) for v in VARIANTS}
    vmax = max(SINGLE, key=lambda v: mi[v])
    nmax = max(names, key=lambda n: abl[n][vmax]["iter"] - abl[n]["full"]["iter"])
    obs.append("Mean iteration error over the %d traces: %s. Of the single classes, "
               "`%s` raises it the most, up to %s %% on %s (full: %s %%)." % (
                   nt, ", ".join("%s\0%s %%" % (v, f3(mi[v])) for v in VARIANTS),
                   vmax, f3(abl[nmax][vmax]["iter"]), short(nmax), f3(abl[nmax]["full"]["iter"])))
    sh = max(((abs(abl[n][v]["bd"][i] - abl[n]["full"]["bd"][i]), -k, n, v, i)
              for n in names for k, v in enumerate(SINGLE) for i in range(4)))
    if sh[0] > 0:
        n, v, i = sh[2:]
        obs.append("Largest breakdown shift from full: `%s` on %s moves %s from %s to %s %% "
                   "of the window (window error %s %%)." % (
                       v, short(n), COMP[i].replace("_", " "), pct(abl[n]["full"]["bd"][i]),
                       pct(abl[n][v]["bd"][i]), pct(abl[n][v]["window"], 3)))
    rc = min(((abl[n][v]["recall"], k, n, v) for n in names for k, v in enumerate(VARIANTS[1:])))
    low = {v: min(abl[n][v]["recall"] for n in names) for v in SINGLE}
    obs.append("Lowest critical-path recall: %.1f %% (`%s` on %s); per class, the lowest is %s." % (
        100 * rc[0], rc[3], short(rc[2]),
        ", ".join("%s\0%.1f %%" % (v, 100 * low[v]) for v in SINGLE)))
    same = {v: sum(1 for n in names if unchanged(n, v)) for v in SINGLE}
    obs.append("Of the %d traces, those on which a class changes no figure at the "
               "precision shown: %s." % (nt, ", ".join("%s\0%d" % (v, same[v]) for v in SINGLE)))
    worse = [n for n in names if f3(abl[n]["dpro"]["iter"]) != f3(abl[n]["full"]["iter"])
             and abl[n]["dpro"]["iter"] > abl[n]["full"]["iter"]]
    bdw = max(((max(abs(c) for c in abl[n]["dpro"]["bd"]), n) for n in names))
    obs.append("dpro: iteration error above full on %d of %d traces (mean %s %% against "
               "%s %%); largest breakdown error %.2f %% of the window (%s; full %.2f %%)." % (
                   len(worse), nt, f3(mi["dpro"]), f3(mi["full"]), 100 * bdw[0], short(bdw[1]),
                   100 * max(abs(c) for c in abl[bdw[1]]["full"]["bd"])))
    obs = [textwrap.fill(o.replace(" %", "\0%"), 80, initial_indent="- ", subsequent_indent="  ",
                         break_on_hyphens=False).replace("\0", " ") for o in obs]
    ABL = ["", "## Accuracy: edge-class ablation", "",
           "`lumosim ablate --json` (default modelled latency) replays each shared trace",
           "with the full model and with one class of dependency removed: *-event*",
           "cross-stream record/wait edges; *-hidden* GPU->GPU dependencies recovered",
           "from timing; *-sync* GPU->CPU blocking-call waits; *-cpu_cross_thread*",
           "cross-thread CPU wake-ups; *-launch_latency* GPU work may start as soon as",
           "its launch call starts. *dpro* is a dPRO-like baseline without event, hidden,",
           "sync and cross-thread edges: the experiment the Lumos paper did not run.",
           "Columns as above (*iter*: mean |error| over the `ProfilerStep` iterations,",
           "or |window error| without any); *recall*: share of the full model's",
           "critical-path edges also on the variant's path. Variants whose figures",
           "print identically share a row; megatron ranks are averaged.", "",
           "| trace | variant | iter err % | window err % | exp. compute % | overlapped % "
           "| exp. comm % | other % | recall % |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"] + trows + [""] + obs

now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
L = ["# Accuracy and self-consistency", "",
     "<!-- Generated by bench/accuracy.sh; do not edit by hand, rerun the script. -->", "",
     "Produced by `bash bench/accuracy.sh` on %s, commit %s (%s)." % (now, commit, version), "",
     "Two kinds of check, kept apart. **Accuracy**: a prediction against a measurement it",
     "did not use (the traced times, a published measurement). **Self-consistency**: the",
     "model against itself (the graph replayed with every observed latency must give back",
     "the trace; a what-if of a synthesized job must give what synthesizing the target",
     "gives); it finds bugs, it says nothing about how close a prediction is to a real run.", "",
     "## Accuracy: replay against the traces", "",
     "**What is measured.** Every shared trace (`hta_single/*` except the CPU-only",
     "one, and each `megatron_tp8_a100/rank?.json.gz`) is replayed on its own with",
     "`lumosim replay --json` and the default *modelled* launch latency (learned from",
     "launches onto idle streams; observed GPU start times are never read back, except",
     "GPU work launched before the window: the GPU's initial state, released at its observed",
     "start in both modes and counted as `graph.prewindow_released`).",
     "Each is replayed again with `--latency observed`, where every launch keeps",
     "its own latency: that is the self-check of the graph (a self-consistency",
     "check, judged below) and must be exact (0 window error, 0 ns node error).",
     "Errors are (predicted - actual) / actual:",
     "",
     "- *window*: the span of all the rank's activity (`ranks[].window`);",
     "- *iter*: each `ProfilerStep#N` projected onto the GPU (`ranks[].iterations[]`):",
     "  from the first GPU op of step i to the first of step i+1 (the first step from the",
     "  window start, the last to the window end), so the rows add up to the window;",
     "  |error| mean and max per trace;",
     "- *CPU span*: each step's CPU-side span (`iterations[].cpu_actual_ns`), mean |error|;",
     "- *start err*: \\|predicted start - observed start\\| of the GPU ops and of the CPU",
     "  ops (`node_error.start_error_gpu` / `_cpu`; nearest-rank median and p90);",
     "- *duty diff*: mean over 1 ms bins of \\|actual - predicted\\| stream-active duty",
     "  cycle, in points (`duty_cycle.mean_abs_diff_pp`);",
     "- breakdown (*exp. compute*, *overlapped*, *exp. comm*, *other*): predicted -",
     "  actual of the component, divided by the actual window (they sum to the",
     "  window error);",
     "- *inferred* / *dropped*: `graph.inferred_edges` / `graph.dropped_edges`",
     "  (docs/report-json.md).",
     "", hdr, sep] + rows
cov = []
if shared:
    cov.append("Shared traces: %d `cudaGraphLaunch`/`hipGraphLaunch` calls, %d pre-window "
               "GPU ops (`graph.prewindow_gpu_nodes`)." % (
                   sum(e["graph_launches"] for e in shared.values()),
                   sum(e.get("prewindow", 0) for e in shared.values())))
for n, e in fixt.items():
    cov.append("Fixture %s: %d graph launch call(s), %d pre-window GPU ops." % (
        n, e["graph_launches"], e.get("prewindow", 0)))
if cov:
    L += ["", "Coverage: " + " ".join(cov)]
if targets:
    L += ["", "### Targets", "",
          "Judged by the script on the shared traces (fixtures excluded), each on the",
          "worst file.", "",
          "| target | achieved | |", "|---|---|---|"] + targets
if fails:
    L += ["", "## Failures", ""] + fails
L += ["", "### Notes", "",
      "- The two `*sampled_rank*` traces are subsampled: events were dropped, so the",
      "  compute stream shows idle gaps while kernels are queued and no other",
      "  activity is traced. Their window and iteration errors are tiny, but 1.6-2.6 %",
      "  of the window moves between breakdown components: the replay runs queued",
      "  kernels back to back, so compute that was exposed in the trace overlaps",
      "  communication and the union shrinks (overlapped and other grow by as much as",
      "  exposed compute and exposed comm shrink).",
      "- No shared trace contains CUDA graph launches or GPU work launched before the",
      "  window opened (counted above). Both are covered by repository fixtures,",
      "  listed as *fixture* rows and not judged against the targets:",
      "  `tests/data/cuda_graph.json` (synthetic, a 115 us window, so a microsecond",
      "  of modelled latency is about 1 %), `cuda_graph_megatron_rank0` (the real",
      "  megatron rank 0 trace with runs of launches, up to 12 GPU ops each, made into 66",
      "  `cudaGraphLaunch` calls by `tests/data/tools/make_cuda_graph.py`, GPU times as",
      "  traced: 120 ms of GPU idle before graphs and 201 ms inside them, both",
      "  replayed within 0.1 %, `tests/integration/cuda_graph_replay.py`) and",
      "  `tests/data/prewindow_megatron_rank0.json.gz`",
      "  (the real megatron rank 0 trace with its window opened later by",
      "  `tests/data/tools/make_prewindow.py`); `tests/data/hip_trace.json` (synthetic,",
      "  HIP runtime names, a 300 us window) is the only AMD-style fixture.",
      "- The reference implementation cited in the issue misses per-iteration time by",
      "  12-58 % on traces with missing `cudaEventRecord` and with CUDA graph launches.",
      "  Here `simple_add` (34 `cudaStreamWaitEvent`, no `cudaEventRecord`) and the two",
      "  sampled traces (no record/wait calls at all) are within the figures above.",
      ]
for n, e in fixt.items():
    if e["ok"] and abs(e["window"]) > 0.01:
        L.append("- Fixture `%s`: window error %s %% with the modelled launch latency%s." % (
            n, pct(e["window"]), ",\n  exact with `--latency observed`" if e["exact"] else ""))
L += ABL
# ---- one job, all ranks (coupled) ----
jp = os.path.join(acc, "job_megatron.json")
if os.path.exists(jp) and os.path.getsize(jp) > 0:
    try:
        jd = json.load(open(jp))
        L += ["", "## Accuracy: one job, all ranks", "",
              "`lumosim replay --json megatron_tp8_a100/` replays the 8 ranks together: collectives are matched",
              "across GPUs by (group, sequence), each rank's clock offset is estimated from the matched end times",
              "and removed, and every collective ends at the last participant's arrival plus its transfer time",
              "(the traced duration of the participant that arrived last). Breakdown errors are in points of the",
              "actual window; *comm wait* is the part of exposed communication spent waiting for peers.", "",
              "| rank | window err % | iteration err % | exp. compute | overlapped | exp. comm | other | comm wait actual / predicted ms | clock offset us |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        worst_w = worst_i = worst_b = 0.0
        for r in jd["ranks"]:
            w = r["window"]["error"]
            it = max([abs(i["error"]) for i in r["iterations"]] or [0.0])
            be = r["breakdown"]["error"]
            bvals = [be["exposed_compute_ns"], be["overlapped_ns"], be["exposed_comm_ns"], be["other_ns"]]
            worst_w, worst_i = max(worst_w, abs(w)), max(worst_i, it)
            worst_b = max([worst_b] + [abs(x) for x in bvals])
            ca = r["breakdown"]["actual"].get("exposed_comm_wait_ns", 0) / 1e6
            cp = r["breakdown"]["predicted"].get("exposed_comm_wait_ns", 0) / 1e6
            L.append("| %d | %s | %.3f | %s | %s | %s | %s | %.1f / %.1f | %+.1f |" % (
                r["rank"], pct(w, 3), 100 * it, pct(bvals[0]), pct(bvals[1]), pct(bvals[2]), pct(bvals[3]),
                ca, cp, r.get("clock_offset_ns", 0) / 1e3))
        je = jd["job"]["error"]
        ok = worst_w <= 0.005 and worst_i <= 0.005 and abs(je) <= 0.005 and worst_b <= 0.02
        L += ["", "Job (earliest to latest activity over all ranks): error %s %%. Target: every rank's window and" % pct(je, 3),
              "iteration and the job within 0.5 %%, breakdown within 2 points: worst window %.3f %%, iteration %.3f %%," % (
                  100 * worst_w, 100 * worst_i),
              "breakdown %.2f points: **%s**." % (100 * worst_b, "PASS" if ok else "FAIL"),
              "The clock offsets come out within a few microseconds: the set shares one clock."]
        if not ok:
            fails.append("- megatron job: target missed")
        # extrapolation from one rank
        act = jd["job"]["actual_ns"]
        rows, errs = [], []
        for R in range(8):
            rp = os.path.join(acc, "job_replicate_%d.json" % R)
            if not os.path.exists(rp) or os.path.getsize(rp) == 0:
                continue
            pr = json.load(open(rp))["job"]["predicted_ns"]
            e = (pr - act) / act
            errs.append(abs(e))
            rows.append("| %d | %.3f | %.3f | %s |" % (R, pr / 1e6, act / 1e6, pct(e)))
        if errs:
            mean, worst_r = sum(errs) / len(errs), max(errs)
            L += ["", "### Extrapolation from one rank", "",
                  "`lumosim replay --replicate-from R megatron_tp8_a100/` builds all 8 GPUs from rank R's trace alone",
                  "(its graph copied per rank, collectives on the world group). Every observed collective duration",
                  "includes rank R's waiting, so each collective's transfer is estimated as the shortest duration among",
                  "R's collectives of the same kind and size. What one rank cannot know: the other ranks enter the step",
                  "at other times and run at other speeds (here the ranks' windows differ by up to 46 ms), so the copies",
                  "never wait for one another and the job comes out shorter than the real one.", "",
                  "| R | predicted job ms | actual job ms | error % |", "|---:|---:|---:|---:|"] + rows + [
                  "", "Mean |error| over R: %.2f %% (target <= 5 %%), worst %.2f %% (target <= 10 %%): **%s**." % (
                      100 * mean, 100 * worst_r, "PASS" if mean <= 0.05 and worst_r <= 0.10 else "FAIL")]
            if mean > 0.05 or worst_r > 0.10:
                fails.append("- replicate-from: mean error above 5 % or worst above 10 %")
    except Exception as e:
        fails.append("- megatron job: %s" % e)
L += ["", "## Self-consistency: the observed-latency replay", "",
      "With `--latency observed` every launch keeps its own traced latency and GPU work launched",
      "before the window is pinned to its observed start: the replay must give back every traced",
      "start and end. That checks the graph (no edge the trace contradicts, none missing that the",
      "schedule needs); it is not a prediction.", "",
      "| target | achieved | |", "|---|---|---|"] + selfcheck
text = "\n".join(L) + "\n"
open(md, "w").write(text)
if doc:
    # bench/published.sh's section (minutes to regenerate) is kept as it was
    try:
        old = open(doc).read()
        b, e = "<!-- BEGIN bench/published.sh", "<!-- END bench/published.sh -->"
        if b in old and e in old:
            text += "\n" + old[old.index(b):old.index(e) + len(e)] + "\n"
    except OSError:
        pass
    open(doc, "w").write(text)
print(text, end="")
if doc:
    print("(written to %s and %s)" % (doc, md), file=sys.stderr)
sys.exit(1 if fails else 0)
EOF
rc=$?
# The synthesis (vs the Lumos paper) and what-if (vs synthesized ground
# truth) sections, appended to the same document.
if [ -n "${DOC:-}" ]; then
    sh bench/accuracy_extra.sh "$LUMOSIM" "$DOC" >/dev/null || rc=1
fi
exit $rc
