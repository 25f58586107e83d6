#!/bin/sh
# bench/published.sh [LUMOSIM] [--rows 1,2,3|none] [--bound PCT] [--mean-bound PCT]
#                    [--megatron DIR [--megatron-bound PCT]] [--docs FILE]
#
# lumosim synth + sim of the rows of Megatron-LM SC'21 Table 1 (Narayanan et
# al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
# Megatron-LM", arXiv 2104.04473: GPT models of 1.7B to 1T parameters on 32
# to 3,072 A100s, sequence 2048, vocabulary 51200), configured as the paper's
# own scripts ran them (NVIDIA/Megatron-LM examples/sc21/run_table_1.sh: TP,
# PP, micro-batch, global batch, the interleaved schedule's layers per virtual
# stage, "--recompute-method uniform", torch DDP for the models without
# pipeline parallelism, Megatron's local DDP for the others; fp16; the
# scatter/gather optimization on, as Megatron's default). Each DDP sums the
# micro-batches' gradients its own way (lumosim synth --grad-acc): torch DDP
# by PyTorch's AccumulateGrad (an add per parameter tensor from the second
# micro-batch on), Megatron's local DDP of 2021 by its hook adding every
# micro-batch's gradient into the fp16 main_grad buffer (megatron/model/
# distributed.py, _make_param_hook: param.main_grad.add_(param.grad.data);
# fused into the weight-gradient GEMM only in later Megatron).
#
# The published figure is achieved teraFLOP/s per GPU X with the paper's
# Eq. 3, F = 96 B s l h^2 (1 + s / 6h + V / 16 l h) FLOPs per iteration
# (recomputation included), so the measured step time is F / (GPUs x X).
# Prints published and predicted step time, the error, the predicted
# teraFLOP/s per GPU by the same Eq. 3, and MFU (model FLOPs without the
# recomputation, 72 B s l h^2 (1 + s / 3h + V / 12 l h), over the 312
# TFLOP/s peak). Nothing is fitted to the table: the GPU is the shipped A100
# spec (data/gpu/a100.json), the network the DGX A100 with the NVLink
# bandwidth lumosim calibrate fitted to the shared Megatron traces
# (data/topology/dgx_a100_ib200_cal.json).
#
# Rows whose full job is too large for this machine (more than NODE_CAP
# graph nodes) are simulated with one data-parallel replica: the same
# micro-batches per pipeline, and the gradient all-reduces timed by the
# network model for the full data-parallel group (lumosim synth --dp-cost
# DP), which is exact for Megatron's local DDP (the all-reduce follows the
# pipeline flush); the output says which rows.
#
# --megatron DIR (the shared megatron_tp8_a100 traces): lumosim calibrate on
# them, then synth of the traced shape with the traced options (forward only,
# micro-batch 4, TP 8, hidden 4096, 40 layers, Megatron's unfused attention
# without dropout) and the calibrated spec, which carries the host time the
# traces show (dispatch, stalls), over SEEDS draws of the stalls; against
# each rank's replayed window (lumosim replay of the 8 ranks as one job).
# --megatron-bound: exit 1 when the synthesized job's mean over the draws is
# further than PCT percent from the replayed job, or any rank's mean window
# from that rank's replayed window (a rank's window starts when its host
# enters the step: the ranks enter it apart, and the synthesized GPUs too,
# by the host stalls' model, docs/synthesis.md "Host time").
#
# --modern IDS|all|none (default none): the dense rows of modern jobs in
# ../shared/published/README.md (torchtitan's Llama 3.1 8B tables 1, 2, 3
# on the 500 W 96 GB H100, Megatron-Bridge's Llama 3 rows on DGX-H100),
# configured as published; ids t1-eager, t1-compile, t1-fp8, t3-*, t2-32k,
# t2-64k, t2-128k, t2-256k, mb-8b, mb-70b, mb-70b-2602 (the 405B rows are
# listed, not simulated: 126 layers do not split evenly over their pipeline
# stages). Published step time = tokens per step / (TPS per GPU x GPUs).
# With --docs they go to their own section of the accuracy page.
# --trend: exit 1 unless the FSDP 8 -> 128 step change (t1-eager, t3-eager)
# is within 3 points of the published +2.8 % and the CP rows' predicted
# throughput falls as the sequence grows (whichever of them ran).
# --modern-bound PCT: exit 1 when a modern row's |error| exceeds PCT percent.
# --memory-bound PCT: exit 1 when a modern row's memory estimate is further
# than PCT percent from its published maximum (rows that publish one).
#
# --rows: which rows (1 = 1.7B ... 10 = 1T; default all; none). --bound / --mean-bound:
# exit 1 when a row's |error| or the mean |error| exceeds PCT percent (CTest
# runs the three smallest rows with a loose bound). --docs FILE: replace the
# section "Comparison against published measurements" of FILE (the
# accuracy page) with the table.
set -eu
L=build/lumosim
ROWS=1,2,3,4,5,6,7,8,9,10
BOUND=
MEAN=
DOCS=
MEG=
MEGB=
MODERN=none
TREND=
MBOUND=
MEMBOUND=
case ${1:-} in -*|"") ;; *) L=$1; shift ;; esac
while [ $# -gt 0 ]; do
    case $1 in
    --rows) ROWS=$2; shift 2 ;;
    --bound) BOUND=$2; shift 2 ;;
    --mean-bound) MEAN=$2; shift 2 ;;
    --docs) DOCS=$2; shift 2 ;;
    --megatron) MEG=$2; shift 2 ;;
    --megatron-bound) MEGB=$2; shift 2 ;;
    --modern) MODERN=$2; shift 2 ;;
    --trend) TREND=1; shift ;;
    --modern-bound) MBOUND=$2; shift 2 ;;
    --memory-bound) MEMBOUND=$2; shift 2 ;;
    *) echo "usage: $0 [LUMOSIM] [--rows 1,2,3] [--bound PCT] [--mean-bound PCT] [--docs FILE]" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
command -v python3 >/dev/null || { echo "published.sh: python3 missing" >&2; exit 77; }
if [ -n "$MEG" ] && [ ! -d "$MEG" ]; then echo "published.sh: $MEG missing: skipped" >&2; exit 77; fi
python3 - "$L" "$ROWS" "$tmp" "$here" "${BOUND:-}" "${MEAN:-}" "${DOCS:-}" "${MEG:-}" "${MEGB:-}" <<'PY'
import json, os, subprocess, sys, time

L, rows_arg, tmp, here, bound, mean_bound, docs, meg, meg_bound = sys.argv[1:10]
SEEDS = 8
SEQ, VOCAB, PEAK = 2048, 51200, 312e12
NODE_CAP = 12e6  # graph nodes simulated whole on this 2-core, 24 GiB machine

# Table 1 as published (params B, heads, hidden, layers, TP, PP, GPUs, batch,
# achieved TFLOP/s per GPU, % of peak), and the run script's micro-batch,
# layers per virtual stage (0: not interleaved) and DDP implementation.
TABLE = [
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137, 44, 16, 0, "torch"),
    ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138, 44, 16, 0, "torch"),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142, 46, 16, 0, "torch"),
    ("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135, 43, 8, 0, "torch"),
    ("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138, 44, 4, 0, "local"),
    ("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140, 45, 2, 5, "local"),
    ("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148, 47, 2, 5, "local"),
    ("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155, 50, 1, 3, "local"),
    ("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163, 52, 1, 1, "local"),
    ("1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 163, 52, 1, 0, "local"),
]
GPU = os.path.join(here, "data/gpu/a100.json")
TOPO = os.path.join(here, "data/topology/dgx_a100_ib200_cal.json")


def flops(B, l, h):
    """Eq. 3 of the paper (with recomputation) and the model FLOPs without it."""
    return (96 * B * SEQ * l * h * h * (1 + SEQ / (6 * h) + VOCAB / (16 * l * h)),
            72 * B * SEQ * l * h * h * (1 + SEQ / (3 * h) + VOCAB / (12 * l * h)))


rows = [] if rows_arg == "none" else [int(x) for x in rows_arg.split(",") if x]
out = []
for r in rows:
    name, heads, h, l, tp, pp, gpus, B, X, pct, mbs, lpv, ddp = TABLE[r - 1]
    dp = gpus // (tp * pp)
    m = B // (mbs * dp)
    V = (l // pp) // lpv if lpv else 1
    # kernels per layer and micro-batch on one GPU: about 17 forward, 17
    # recomputed, 26 backward, each a launch and a kernel node
    nodes = tp * pp * dp * (l // pp) * m * 120
    dps = dp if nodes <= NODE_CAP else 1
    model = os.path.join(tmp, "m%d.json" % r)
    json.dump({"name": "megatron-" + name, "layers": l, "hidden": h, "ffn": 4 * h, "heads": heads,
               "head_dim": h // heads, "seq": SEQ, "vocab": VOCAB}, open(model, "w"))
    cmd = [L, "synth", "--model", model, "--tp", str(tp), "--pp", str(pp), "--dp", str(dps),
           "--micro-batch", str(mbs), "--global-batch", str(mbs * dps * m), "--gpu", GPU, "--topology", TOPO,
           "--recompute", "full", "--attention", "unfused", "--grad-bytes", "2", "--scatter-gather",
           "--grad-reduce", "overlap" if ddp == "torch" else "after",
           "--grad-acc", "autograd" if ddp == "torch" else "buffer"]
    if V > 1:
        cmd += ["--schedule", "interleaved:%d" % V]
    if dps < dp:
        cmd += ["--dp-cost", str(dp)]
    store = os.path.join(tmp, "j%d.h5" % r)
    t0 = time.time()
    subprocess.run(cmd + ["-o", store], check=True, stdout=subprocess.DEVNULL)
    res = json.loads(subprocess.run([L, "sim", "--json", store], check=True, stdout=subprocess.PIPE).stdout)
    os.unlink(store)
    wall = time.time() - t0
    pred = res["job"]["predicted_ns"] / 1e9
    F, Fm = flops(B, l, h)
    pub = F / (gpus * X * 1e12)
    bd = [x["breakdown"]["predicted"] for x in res["ranks"]]
    mean = {k: sum(b[k] for b in bd) / len(bd) / 1e9 for k in bd[0]}
    out.append(dict(row=r, name=name, tp=tp, pp=pp, dp=dp, dps=dps, mbs=mbs, B=B, m=m, V=V, ddp=ddp, gpus=gpus,
                    pub=pub, pred=pred, err=(pred - pub) / pub, X=X, Xp=F / (gpus * pred) / 1e12,
                    mfu_pub=Fm / (gpus * pub) / PEAK, mfu=Fm / (gpus * pred) / PEAK, bd=mean, wall=wall,
                    cmd=" ".join(os.path.basename(c) if c in (L,) else c for c in cmd)))

mlines, mfail = [], False
if meg:
    gpu, topo = os.path.join(tmp, "cal.json"), os.path.join(tmp, "caltopo.json")
    subprocess.run([L, "calibrate", meg, "-o", gpu, "--topology-out", topo], check=True, stdout=subprocess.DEVNULL)
    rep = json.loads(subprocess.run([L, "replay", "--json", meg], check=True, stdout=subprocess.PIPE).stdout)
    real = [x["window"]["predicted_ns"] / 1e6 for x in rep["ranks"]]
    real_job = rep["job"]["predicted_ns"] / 1e6
    model = os.path.join(here, "tests/data/models/megatron_tp8_a100.json")
    syn, per = [], [[] for _ in real]
    for seed in range(SEEDS):
        store = os.path.join(tmp, "mg.h5")
        subprocess.run([L, "synth", "--model", model, "--tp", "8", "--pp", "1", "--dp", "1", "--micro-batch", "4",
                        "--global-batch", "4", "--forward-only", "--attention", "unfused", "--no-dropout", "--gpu", gpu,
                        "--topology", topo, "--seed", str(seed), "--force", "-o", store], check=True,
                       stdout=subprocess.DEVNULL)
        res = json.loads(subprocess.run([L, "sim", "--json", store], check=True, stdout=subprocess.PIPE).stdout)
        syn.append(res["job"]["predicted_ns"] / 1e6)
        for i, x in enumerate(res["ranks"]):
            per[i].append(x["window"]["predicted_ns"] / 1e6)
        os.unlink(store)
    mean = sum(syn) / len(syn)
    mlines.append("| rank | replayed forward ms | synthesized ms (mean of %d stall draws) | error | min .. max over the draws |" % SEEDS)
    mlines.append("|---:|---:|---:|---:|---|")
    rerr = []
    for i, w in enumerate(real):
        m = sum(per[i]) / len(per[i])
        rerr.append((m - w) / w)
        mlines.append("| %d | %.1f | %.1f | %+.1f %% | %.1f .. %.1f |" % (i, w, m, 100 * (m - w) / w, min(per[i]), max(per[i])))
    mlines.append("| job | %.1f | %.1f | %+.1f %% | %.1f .. %.1f |" % (real_job, mean, 100 * (mean - real_job) / real_job,
                                                                      min(syn), max(syn)))
    merr = abs(mean - real_job) / real_job
    wr = max(range(len(rerr)), key=lambda i: abs(rerr[i]))
    msum = "Job %+.1f %%; worst rank %d, %+.1f %% (each rank's window against its replayed window)." % (
        100 * (mean - real_job) / real_job, wr, 100 * rerr[wr])
    # the bound holds for the job and for every rank's own window
    if meg_bound and max([merr] + [abs(x) for x in rerr]) > float(meg_bound) / 100:
        mfail = True
    print("\n".join(mlines))
    print()
    print(msum)
    print()

lines = []
lines.append("| row | model | TP | PP | DP (simulated) | micro-batch | batch | V | published s | predicted s | error | published TFLOP/s | predicted TFLOP/s | MFU published | MFU predicted | exp. compute s | exp. comm s | other s |")
lines.append("|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for o in out:
    dps = "%d" % o["dp"] if o["dps"] == o["dp"] else "%d (1, all-reduce of %d by the network model)" % (o["dp"], o["dp"])
    b = o["bd"]
    lines.append("| %d | %s | %d | %d | %s | %d | %d | %d | %.3f | %.3f | %+.1f %% | %d | %.1f | %.1f %% | %.1f %% | %.3f | %.3f | %.3f |" % (
        o["row"], o["name"], o["tp"], o["pp"], dps, o["mbs"], o["B"], o["V"], o["pub"], o["pred"], 100 * o["err"],
        o["X"], o["Xp"], 100 * o["mfu_pub"], 100 * o["mfu"], b["exposed_compute_ns"], b["exposed_comm_ns"],
        b["other_ns"]))
errs = [abs(o["err"]) for o in out]
if not out:
    lines = []
worst = max(errs) if errs else 0
meanerr = sum(errs) / len(errs) if errs else 0
summary = ("Rows within 10 %%: %d of %d; mean |error| %.1f %% (target 5 %%), worst %.1f %% (row %s)." % (
    sum(e <= 0.10 for e in errs), len(errs), 100 * meanerr, 100 * worst,
    out[errs.index(worst)]["row"] if errs else "-"))
if out:
    print("\n".join(lines))
    print()
    print(summary)
for o in out:
    print("row %d: %s (%.0f s)" % (o["row"], o["cmd"], o["wall"]))
if docs and (out or mlines):
    section = ["<!-- BEGIN bench/published.sh: generated, do not edit by hand -->", "",
               "## Comparison against published measurements", "",
               "`sh bench/published.sh build/lumosim --docs docs/accuracy.md` (%s): each row of Megatron-LM SC'21 "
               "Table 1 (Narayanan et al., arXiv 2104.04473) synthesized as the paper's run script configured it "
               "(NVIDIA/Megatron-LM `examples/sc21/run_table_1.sh`: TP, PP, micro-batch, batch, interleaved "
               "schedule, full recomputation, torch DDP with overlapped gradient all-reduce for the rows without "
               "pipeline parallelism, Megatron's local DDP with the all-reduce after the flush for the others, fp16 "
               "gradients summed over the micro-batches as each DDP does it (`--grad-acc autograd` / `buffer`), "
               "scatter/gather of pipeline sends, Megatron's unfused attention), then `lumosim sim`. "
               "Published step time = Eq. 3 FLOPs / (GPUs x published TFLOP/s per GPU). The GPU spec is "
               "`data/gpu/a100.json`, the network `data/topology/dgx_a100_ib200_cal.json`; nothing is fitted "
               "to this table. MFU counts the model's FLOPs without recomputation over the 312 TFLOP/s peak. "
               "The breakdown is the mean over the simulated GPUs." % time.strftime("%Y-%m-%d"), ""]
    section += lines + ["", summary, ""]
    section += ["Rows marked \"DP (1, ...)\" are too large to simulate whole on this machine (2 cores, 24 GiB): "
                "one data-parallel replica is simulated, with the same micro-batches per pipeline, and its "
                "gradient all-reduces are timed by the network model for the full data-parallel group "
                "(`lumosim synth --dp-cost DP`); with Megatron's local DDP the all-reduce follows the pipeline "
                "flush, so this adds exactly what a full simulation would.", ""]
    section += ["What is and is not in these predictions. In: the GEMMs by tiles and waves with the two "
                "parameters fitted on the shared A100 trace, Megatron's unfused attention and its memory-bound "
                "kernels at the fitted `mem_eff`, the six TP all-reduces of a layer and micro-batch (two each in "
                "the forward, the recomputed forward and the backward), the pipeline schedule simulated (bubbles, "
                "the sends' scatter/gather and all-gathers, the CPU's wait after each group of sends and "
                "receives), the per-micro-batch data preparation with its device-to-host copy, the gradient "
                "accumulation over the micro-batches (an add per parameter tensor per micro-batch: 6 bytes per "
                "parameter each time, 2-5 % of the step in rows 6-10, where a pipeline runs 28-512 micro-batches), "
                "the gradient all-reduce, the optimizer, and the host time of the shipped A100 spec (measured "
                "under the profiler, so if anything too slow). Not in, each estimated from its formula as too "
                "small to matter here: the tied embedding's all-reduce between the first and last stage (V/t x h "
                "fp16 gradients between two nodes: 5-13 ms, at most 0.03 % of rows 6-10), the fp16 optimizer's "
                "separate passes (gradients copied to fp32, unscaled and checked, their norm: about 22 bytes per "
                "parameter beyond the fused Adam, 36-47 ms: 0.04-0.3 % of rows 5-10, 0.9 % of row 1; 8 more when the norm is clipped), the "
                "gradient-norm and overflow checks' one-number all-reduces over the model-parallel group, the "
                "loss's one-number all-reduce over the data-parallel group per micro-batch; and NCCL kernels "
                "slowing concurrent compute, clocks under a sustained power limit. The GEMM "
                "fit comes from five shapes with M = 8192 and K up to 4096 on GPUs that the host-bound trace "
                "left idle much of the time; the large rows' GEMMs (M 2048-4096, K up to 25600) are "
                "extrapolations, and those rows are GEMM-bound: that is where the prediction is fastest.", ""]
    if mlines:
        section += ["### The shared Megatron trace", "",
                    "`--megatron ../shared/traces/megatron_tp8_a100`: `lumosim calibrate` on the 8 ranks, then "
                    "`lumosim synth` of the traced shape with the traced options (forward only, micro-batch 4, "
                    "TP 8, hidden 4096, 40 layers, 64 heads of 64, Megatron's unfused attention without dropout) "
                    "and the calibrated spec and topology, against the ranks replayed as one job (`lumosim replay "
                    "--json`). The trace is host-bound: its ranks spend most of the step launching (198.5 us of "
                    "framework time per launch, under the profiler) and stalled (about 4 %% of the launches wait "
                    "16 ms on average), so this compares the host model learned from these very traces, composed "
                    "with the GPU and network models, with what the ranks did together; the stalls are drawn per "
                    "GPU, so the figure is the mean over %d seeds, with their range. A rank's window starts when "
                    "its host enters the step: rank 0 entered 30 ms after rank 6 and the others waited for it at "
                    "the first all-reduce, so its window (603 ms) is its own host's path through the step, while "
                    "the others' include up to 30 ms of waiting for it and up to 18 ms of their host's return "
                    "from the final `cudaDeviceSynchronize`. The synthesized GPUs enter the step and return from "
                    "it as late as a host sharing its core finds it taken (`lsim_emit_wake`), and their hosts lose "
                    "a fair share of their time to stalls, not independent draws, which spread the hosts, and the "
                    "job that waits for the slowest, by 4 times more than the trace's ranks (docs/synthesis.md, "
                    "\"Host time\")." % SEEDS, ""]
        section += mlines + ["", msum, ""]
    section += ["<!-- END bench/published.sh -->"]
    text = open(docs).read()
    b, e = "<!-- BEGIN bench/published.sh", "<!-- END bench/published.sh -->"
    sec = "\n".join(section)
    if b in text and e in text:
        i, j = text.index(b), text.index(e) + len(e)
        text = text[:i] + sec + text[j:]
    else:
        text = text.rstrip("\n") + "\n\n" + sec + "\n"
    open(docs, "w").write(text)
fail = mfail
if mfail:
    print("FAIL: the synthesized forward pass (job or a rank) is off by more than %s %%" % meg_bound)
if bound and worst > float(bound) / 100:
    print("FAIL: a row is off by %.1f %%, more than %s %%" % (100 * worst, bound))
    fail = True
if mean_bound and meanerr > float(mean_bound) / 100:
    print("FAIL: the mean |error| %.1f %% is more than %s %%" % (100 * meanerr, mean_bound))
    fail = True
sys.exit(1 if fail else 0)
PY
[ "$MODERN" = none ] && exit 0
python3 - "$L" "$MODERN" "$tmp" "$here" "${DOCS:-}" "${TREND:-}" "${MBOUND:-}" "${MEMBOUND:-}" <<'PY'
import json, os, re, subprocess, sys, time

L, which, tmp, here, docs, trend, mbound, membound = sys.argv[1:9]
TOPO_DGX = os.path.join(here, "data/topology/dgx_h100_ib400.json")
GIB = 2.0 ** 30


def fpt(m, seq):
    """Model FLOPs per token as torchtitan and Megatron count them: 6 x the
    parameters without the embedding + 12 l h s for the attention (no
    causal halving, no recomputation)."""
    h, l, f, A, KV, V = m["hidden"], m["layers"], m["ffn"], m["heads"] * m["head_dim"], m["kv_heads"] * m["head_dim"], m["vocab"]
    mlp = 3 if m.get("mlp", "swiglu") == "swiglu" else 2
    attn = h * (A + 2 * KV) + A * h + 2 * h
    E = m.get("experts", 0)
    if not E:
        return 6 * (l * (attn + mlp * h * f) + h + V * h) + 12 * l * A * seq
    # mixture of experts: the parameters a token runs (top-k routed and the
    # shared experts, the router), layers before dense_layers and between
    # every moe_every-th dense
    k, fe, sh, dl, ev = m["top_k"], m["expert_ffn"], m.get("shared_experts", 0), m.get("dense_layers", 0), max(m.get("moe_every", 1), 1)
    moe = [i >= dl and (i - dl) % ev == 0 for i in range(l)]
    act = sum(attn + ((k + sh) * mlp * h * fe + h * E if x else mlp * h * f) for x in moe)
    return 6 * (act + h + V * h) + 12 * l * A * seq


# id, source, model, GPUs, seq, args, published TPS/GPU, published GiB (None: not published), tokens per step
R = []
# torchtitan's attention is PyTorch's SDPA, whose flash backend on the H100
# of its benchmarks (PyTorch 2.6 nightlies, December 2024) is
# FlashAttention-2: cuDNN attention was made opt-in after 2.5's bugs
# (pytorch/pytorch#138522), and pytorch/pytorch#142132 measures SDPA at 329
# TFLOP/s against 631 for cuDNN and FA3 on the same shape. So its rows take
# the spec's FlashAttention-2 curve (a fit to the FA3 paper's FA2 figures).
# Its loss is PyTorch's cross_entropy on an fp32 copy of the logits
# (train.py: cross_entropy(pred.flatten(0, 1).float(), ...)), which its
# torch.compile (each transformer block, apply_compile) leaves eager: --loss
# eager, in every torchtitan row.
TT = ["--gpu", "h100-96gb", "--topology", TOPO_DGX, "--attention-kernel", "fa2", "--loss", "eager"]
for tab, gpus in (("t1", 8), ("t3", 128)):
    for var, extra, tps, mem in (("eager", ["--kernels", "eager"], (5762, 5605), (82.4, 67.0)),
                                 ("compile", [], (6667, 6514), (77.0, 62.0)),
                                 ("fp8", ["--precision", "fp8", "--fp8-scaling", "current"], (8532, 8380), (76.8, 61.8))):
        i = 0 if tab == "t1" else 1
        R.append(("%s-%s" % (tab, var), "torchtitan table %s" % tab[1], "llama3-8b", gpus, 8192,
                  TT + ["--tp", "1", "--pp", "1", "--dp", str(gpus), "--fsdp", str(gpus), "--micro-batch", "2",
                        "--global-batch", str(2 * gpus), "--recompute", "op"] + extra, tps[i], mem[i], 2 * gpus * 8192))
for seq, cp, tps, mem in ((32768, 1, 3890, 83.9), (65536, 2, 2540, 84.2), (131072, 4, 1071, 84.0), (262144, 8, 548, 84.5)):
    dp = 8 // cp
    R.append(("t2-%dk" % (seq // 1024), "torchtitan table 2", "llama3-8b", 8, seq,
              TT + ["--seq", str(seq), "--tp", "1", "--pp", "1", "--dp", str(dp), "--fsdp", str(dp), "--cp", str(cp),
                    "--micro-batch", "1", "--global-batch", str(dp), "--recompute", "full", "--precision", "fp8"],
              tps, mem, dp * seq))
MB = ["--gpu", "h100", "--topology", TOPO_DGX, "--precision", "fp8", "--fp8-scaling", "current"]
R.append(("mb-8b", "Megatron-Bridge 25.11", "llama3-8b", 8, 8192,
          MB + ["--tp", "1", "--pp", "1", "--dp", "8", "--fsdp", "8", "--micro-batch", "1", "--global-batch", "128"],
          14451, None, 128 * 8192))
for rid, rel, gbs, tps in (("mb-70b", "25.11", 128, 1602), ("mb-70b-2602", "26.02", 256, 1621)):
    R.append((rid, "Megatron-Bridge " + rel, "llama3-70b", 64, 8192,
              MB + ["--tp", "4", "--pp", "8", "--dp", "2", "--schedule", "interleaved:5", "--sequence-parallel",
                    "--distributed-optimizer", "--micro-batch", "1", "--global-batch", str(gbs)], tps, None, gbs * 8192))
# Llama 3.1 405B: 126 layers over 8 stages. torchtitan's default split
# (--pp-layers middle: its generate_split_points), its default micro-batch
# count (pipeline_parallel_microbatches unset: the PP degree, 8, so
# micro-batches of 32 / 8 = 4), Interleaved1F1B with its default two stages
# per rank; AsyncTP as --tp-overlap with sequence parallelism (torchtitan's
# TP plan shards the norms' activations over the sequence). Table 4 (70B, 2D)
# and Table 6 (405B, 4D with CP) are in the same torchtitan file, not in
# ../shared/published: checked here too.
T405 = TT + ["--tp", "8", "--pp", "8", "--recompute", "full", "--precision", "fp8", "--sequence-parallel",
             "--tp-overlap", "--pp-layers", "middle"]
for rid, sched, tps, mem in (("t5-1f1b", "1f1b", 100, 82.5), ("t5-interleaved", "interleaved:2", 128, 72.7)):
    R.append((rid, "torchtitan table 5", "llama3.1-405b", 512, 8192,
              T405 + ["--dp", "8", "--fsdp", "8", "--micro-batch", "4", "--global-batch", "256", "--schedule", sched],
              tps, mem, 256 * 8192))
for rid, extra, tps, mem in (("t4-2d", [], 829, 71.9), ("t4-asynctp", ["--tp-overlap"], 876, 67.6)):
    R.append((rid, "torchtitan table 4", "llama3-70b", 256, 8192,
              TT + ["--tp", "8", "--pp", "1", "--dp", "32", "--fsdp", "32", "--micro-batch", "16", "--global-batch", "512",
                    "--recompute", "full", "--precision", "fp8", "--sequence-parallel"] + extra, tps, mem, 512 * 8192))
for seq, cp, tps, mem in ((32768, 1, 76, 75.3), (65536, 2, 47, 75.9), (131072, 4, 31, 77.1), (262144, 8, 16, 84.9)):
    dp = 8 // cp
    R.append(("t6-%dk" % (seq // 1024), "torchtitan table 6", "llama3.1-405b", 512, seq,
              T405 + ["--seq", str(seq), "--dp", str(dp), "--fsdp", str(dp), "--cp", str(cp), "--micro-batch", "1",
                      "--global-batch", str(8 * dp)], tps, mem, 8 * dp * seq))
# Megatron-Bridge's 405B counts the embedding and the loss as layers
# (account_for_embedding/loss_in_pipeline_split in its llama3 405B recipes):
# --pp-layers embed-loss. One of the 8 data-parallel replicas is simulated,
# its data-parallel collectives timed for all 8 (--dp-cost 8: the same step
# to the nanosecond as the whole 1,024-GPU job for the 25.11 row, 12,688.437
# ms both, in 5 s and 0.9 GB instead of 60 s and 6 GB here).
for rid, rel, gbs, tps in (("mb-405b", "25.11", 512, 292), ("mb-405b-2602", "26.02", 1536, 311)):
    R.append((rid, "Megatron-Bridge " + rel, "llama3.1-405b", 1024, 8192,
              MB + ["--tp", "8", "--pp", "8", "--dp", "1", "--dp-cost", "8", "--cp", "2", "--schedule", "interleaved:8",
                    "--sequence-parallel", "--distributed-optimizer", "--micro-batch", "1", "--global-batch",
                    str(gbs // 8), "--pp-layers", "embed-loss"], tps, None, gbs * 8192))
# The mixture-of-experts rows: balanced routing (the published rows force
# it), the all-to-all token dispatcher, EP groups inside the stage's GPUs.
# Qwen3 235B's 94 layers over PP 8 x VP 4 count the embedding and loss
# (its Megatron-Bridge recipes set both).
MOE = [("mb-oss", "25.11", "gpt-oss-120b", 64, ["--tp", "1", "--pp", "4", "--dp", "16", "--ep", "8", "--micro-batch", "4",
                                                "--global-batch", "512"], 5630, 512, False),
       ("mb-oss-2602", "26.02", "gpt-oss-120b", 64, ["--tp", "1", "--pp", "4", "--dp", "16", "--ep", "8", "--micro-batch", "1",
                                                     "--global-batch", "1280"], 5993, 1280, False),
       ("mb-q30", "25.11", "qwen3-30b-a3b", 16, ["--tp", "1", "--pp", "2", "--dp", "8", "--ep", "8", "--schedule", "interleaved:24",
                                                 "--micro-batch", "2", "--global-batch", "512"], 5275, 512, True),
       ("mb-q30-2602", "26.02", "qwen3-30b-a3b", 16, ["--tp", "1", "--pp", "2", "--dp", "8", "--ep", "8", "--schedule",
                                                      "interleaved:12", "--micro-batch", "1", "--global-batch", "1024"],
        5113, 1024, True),
       ("mb-q235", "25.11", "qwen3-235b-a22b", 256, ["--tp", "2", "--pp", "8", "--dp", "16", "--ep", "32", "--schedule",
                                                     "interleaved:4", "--sequence-parallel", "--micro-batch", "1",
                                                     "--global-batch", "2048", "--pp-layers", "embed-loss"], 1575, 2048, True),
       ("mb-q235-2602", "26.02", "qwen3-235b-a22b", 256, ["--tp", "2", "--pp", "8", "--dp", "16", "--ep", "32", "--schedule",
                                                          "interleaved:4", "--sequence-parallel", "--micro-batch", "1",
                                                          "--global-batch", "8192", "--pp-layers", "embed-loss",
                                                          "--force-large"], 1633, 8192, True)]
for rid, rel, model, gpus, args, tps, gbs, fp8 in MOE:
    R.append((rid, "Megatron-Bridge " + rel, model, gpus, 4096,
              ["--gpu", "h100", "--topology", TOPO_DGX, "--seq", "4096", "--distributed-optimizer"] +
              (["--precision", "fp8", "--fp8-scaling", "current"] if fp8 else []) + args, tps, None, gbs * 4096))
NOT = []
pick = [r for r in R if which == "all" or r[0] in which.split(",")]
out = []
for rid, src, model, gpus, seq, args, tps, mem, tokens in pick:
    store = os.path.join(tmp, rid + ".h5")
    cmd = [L, "synth", "--model", model] + args + ["--no-memory-check", "-o", store]
    t0 = time.time()
    p = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = re.search(r"peak ([0-9.]+) GB", p.stdout)
    big = ["--force-large"] if "--force-large" in args else []
    res = json.loads(subprocess.run([L, "sim", "--json"] + big + [store], check=True, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL).stdout)
    os.unlink(store)
    pred = res["job"]["predicted_ns"] / 1e9
    pub = tokens / (tps * gpus)
    mdl = json.load(open(os.path.join(here, "data/models/%s.json" % model)))
    spec = json.load(open(os.path.join(here, "data/gpu/%s.json" % args[args.index("--gpu") + 1])))
    F = fpt(mdl, seq) * tokens / gpus
    out.append(dict(id=rid, src=src, gpus=gpus, pub=pub, pred=pred, err=(pred - pub) / pub, tps=tps,
                    tpsp=tokens / (gpus * pred), mfu_pub=F / pub / spec["peak_flops"], mfu=F / pred / spec["peak_flops"],
                    mem=mem, memp=float(peak.group(1)) * 1e9 / GIB if peak else None, wall=time.time() - t0,
                    cmd="lumosim synth --model %s %s" % (model, " ".join(a.replace(here + "/", "") for a in args))))
lines = ["| row | source | GPUs | published s | predicted s | error | TPS/GPU published | predicted | MFU published | predicted | memory GiB published | predicted | error |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for o in out:
    mem = ("%.1f | %.1f | %+.0f %%" % (o["mem"], o["memp"], 100 * (o["memp"] - o["mem"]) / o["mem"])) if o["mem"] else \
          ("- | %.1f | -" % o["memp"] if o["memp"] else "- | - | -")
    lines.append("| %s | %s | %d | %.3f | %.3f | %+.1f %% | %d | %.0f | %.1f %% | %.1f %% | %s |" % (
        o["id"], o["src"], o["gpus"], o["pub"], o["pred"], 100 * o["err"], o["tps"], o["tpsp"], 100 * o["mfu_pub"],
        100 * o["mfu"], mem))
for rid, src, what in NOT:
    lines.append("| %s | %s | | | not simulated | | | | | | | | |" % (rid, src))
errs = [abs(o["err"]) for o in out]
summary = "Rows: %d; mean |error| %.1f %%, worst %.1f %%." % (len(errs), 100 * sum(errs) / max(len(errs), 1),
                                                               100 * max(errs or [0]))
by = {o["id"]: o for o in out}
checks, fail = [], False
if "t1-eager" in by and "t3-eager" in by:
    ch = by["t3-eager"]["pred"] / by["t1-eager"]["pred"] - 1
    pc = by["t3-eager"]["pub"] / by["t1-eager"]["pub"] - 1
    ok = abs(ch - pc) <= 0.03
    checks.append("FSDP 8 -> 128 (eager): step %+.1f %% predicted, %+.1f %% published: %s" % (100 * ch, 100 * pc,
                                                                                          "within 3 points" if ok else "OFF"))
    fail |= not ok
if "t5-1f1b" in by and "t5-interleaved" in by:
    rp = by["t5-1f1b"]["pred"] / by["t5-interleaved"]["pred"]
    rb = by["t5-1f1b"]["pub"] / by["t5-interleaved"]["pub"]
    ok = abs(rp / rb - 1) <= 0.10
    checks.append("405B 1F1B / interleaved step: %.3f predicted, %.3f published (128 / 100 TPS/GPU): %s" % (
        rp, rb, "within 10 %" if ok else "OFF"))
    fail |= not ok
cps = [by[k] for k in ("t2-32k", "t2-64k", "t2-128k", "t2-256k") if k in by]
if len(cps) > 1:
    ok = all(a["tpsp"] > b["tpsp"] for a, b in zip(cps, cps[1:]))
    checks.append("CP rows' predicted TPS/GPU %s: %s" % (" -> ".join("%.0f" % c["tpsp"] for c in cps),
                                                         "falls with the sequence" if ok else "NOT monotonic"))
    fail |= not ok
print("\n".join(lines))
print()
print(summary)
for c in checks:
    print(c)
for o in out:
    print("%s: %s (%.0f s)" % (o["id"], o["cmd"], o["wall"]))
for rid, src, what in NOT:
    print("%s (%s): %s: not simulated" % (rid, src, what))
if docs:
    sec = ["<!-- BEGIN bench/published.sh modern: generated, do not edit by hand -->", "",
           "## Modern jobs against published measurements", "",
           "`sh bench/published.sh build/lumosim --rows none --modern all --docs docs/accuracy.md` (%s): the "
           "rows of `../shared/published/README.md` (and torchtitan's Tables 4 and 6 from the same file) configured "
           "as published, then `lumosim sim`. Published step "
           "time = tokens per step / (TPS per GPU x GPUs). torchtitan's rows run on the `h100-96gb` spec (the 500 W "
           "96 GB part: its peak interpolated between the NVL and SXM5 datasheets, docs/cost-models.md), FSDP2 "
           "over the data-parallel GPUs, `--recompute op` for \"selective\" (its Llama 3 8B config: "
           "`selective_ac_option = \"op\"`), `--kernels eager` for the eager rows and fused kernels for "
           "`torch.compile`, the loss PyTorch's eager cross entropy on fp32 logits in every row (`--loss eager`: "
           "torchtitan compiled its blocks, not its loss); Float8 as current scaling (torchao's dynamic tensorwise scaling). Megatron-Bridge's "
           "rows run on the `h100` spec and `dgx_h100_ib400`, FP8 with current scaling, the distributed "
           "optimizer and sequence parallelism with TP. MFU: model FLOPs (6 x the parameters without the "
           "embedding + 12 l h s per token, torchtitan's count; Megatron-Bridge's own TFLOP/s halve the attention "
           "term for the causal mask) over the spec's dense BF16 peak. Memory: the estimate's peak "
           "(docs/memory.md) in GiB against the published maximum. Llama 3.1 405B's 126 layers are split as each "
           "stack splits them (`--pp-layers middle`: torchtitan's default split points; `embed-loss`: Megatron's "
           "embedding and loss counted as layers); torchtitan's 405B runs 8 micro-batches (its default, the PP "
           "degree), AsyncTP as `--tp-overlap`; Megatron-Bridge's 405B rows simulate one of 8 replicas with "
           "`--dp-cost 8` (equal to the whole job to the nanosecond on the 25.11 row). MoE rows: balanced "
           "routing (as published), the all-to-all dispatcher, the distributed optimizer. MFU of a MoE row counts "
           "the parameters a token runs (top-k and shared experts, router). Nothing is fitted to these rows." %
           time.strftime("%Y-%m-%d"), ""]
    sec += lines + ["", summary, ""] + ["- " + c for c in checks] + [""]
    if NOT:
        sec += ["Not simulated: " + "; ".join("%s (%s: %s)" % n for n in NOT) + ".", ""]
    sec += ["<!-- END bench/published.sh modern -->"]
    text = open(docs).read()
    b, e = "<!-- BEGIN bench/published.sh modern", "<!-- END bench/published.sh modern -->"
    sec = "\n".join(sec)
    if b in text and e in text:
        i, j = text.index(b), text.index(e) + len(e)
        text = text[:i] + sec + text[j:]
    else:
        text = text.rstrip("\n") + "\n\n" + sec + "\n"
    open(docs, "w").write(text)
bad = bool(trend) and fail
if trend and fail:
    print("FAIL: a published trend is not reproduced")
if mbound and errs and max(errs) > float(mbound) / 100:
    print("FAIL: a row is off by %.1f %%, more than %s %%" % (100 * max(errs), mbound))
    bad = True
merrs = [(abs(o["memp"] - o["mem"]) / o["mem"], o["id"]) for o in out if o["mem"] and o["memp"]]
if membound and not merrs:
    print("FAIL: --memory-bound: none of the rows run publishes its memory")
    bad = True
if membound and merrs and max(merrs)[0] > float(membound) / 100:
    print("FAIL: %s's memory estimate is off by %.1f %%, more than %s %%" % (max(merrs)[1], 100 * max(merrs)[0],
                                                                           membound))
    bad = True
sys.exit(1 if bad else 0)
PY
