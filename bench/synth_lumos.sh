#!/bin/sh
# bench/synth_lumos.sh [LUMOSIM] -- the synthesized GPT-3 175B iteration at
# TP8 PP4 DP8 on H100 (256 GPUs) against the measured figures the Lumos
# paper (arXiv 2504.09307) reports for that job. Prints a markdown section.
# The paper does not state the global batch in the figures we compare with,
# so two batch sizes are shown (32 and 48 micro-batches per pipeline,
# micro-batch 1); the breakdown is the mean over the 256 GPUs.
set -eu
L=${1:-build/lumosim}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
for gb in 256 384; do
    # 175B over TP 8 x PP 4 needs about 98 GB per GPU of weights, fp32
    # gradients and Adam state without the distributed optimizer, which the
    # paper does not state: the memory check is off to keep this comparison
    "$L" synth --model gpt3-175b --tp 8 --pp 4 --dp 8 --micro-batch 1 --global-batch "$gb" --gpu h100 \
        --no-memory-check -o "$tmp/j$gb.h5" >/dev/null
    "$L" sim --json "$tmp/j$gb.h5" >"$tmp/r$gb.json"
done
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
paper = {"total": 7611, "exposed_compute_ns": 4287, "overlapped_ns": 885, "exposed_comm_ns": 2261, "other_ns": 178}
cols = {}
for gb in (256, 384):
    d = json.load(open("%s/r%d.json" % (tmp, gb)))
    ranks = d["ranks"]
    mean = {k: sum(r["breakdown"]["predicted"].get(k, 0) for r in ranks) / len(ranks) / 1e6
            for k in ("exposed_compute_ns", "overlapped_ns", "exposed_comm_ns", "exposed_comm_wait_ns", "other_ns")}
    mean["total"] = d["job"]["predicted_ns"] / 1e6
    cols[gb] = mean
print("## Accuracy: synthesis against published figures\n")
print("`bash bench/synth_lumos.sh build/lumosim`: `lumosim synth --model gpt3-175b --tp 8 --pp 4 --dp 8 "
      "--micro-batch 1 --global-batch GB --gpu h100` then `lumosim sim --json`; the job span and the breakdown "
      "averaged over the 256 GPUs, against the measured iteration the Lumos paper reports for this job. "
      "Nothing here is fitted to the paper; the GPU and network parameters are the shipped H100/DGX defaults "
      "(docs/cost-models.md).\n")
print("| ms | Lumos paper (measured) | GB 256 (32 micro-batches) | diff | GB 384 (48 micro-batches) | diff |")
print("|---|---:|---:|---:|---:|---:|")
names = [("total", "iteration"), ("exposed_compute_ns", "exposed compute"), ("overlapped_ns", "overlapped"),
         ("exposed_comm_ns", "exposed communication"), ("other_ns", "other")]
for k, n in names:
    p = paper[k]
    row = "| %s | %d |" % (n, p)
    for gb in (256, 384):
        v = cols[gb][k]
        row += " %.0f | %+.0f %% |" % (v, 100 * (v - p) / p)
    print(row)
print("| of which waiting for peers | - | %.0f | | %.0f | |" % (cols[256]["exposed_comm_wait_ns"], cols[384]["exposed_comm_wait_ns"]))
d256 = 100 * (cols[256]["total"] - paper["total"]) / paper["total"]
d384 = 100 * (cols[384]["total"] - paper["total"]) / paper["total"]
print("""
What the difference says, honestly: the paper does not give the global batch for this breakdown, and the
total scales with it, so the iteration total cannot be compared on its own (with 48 micro-batches per
pipeline it is %+.0f %% off, with 32 %+.0f %%). The shape""" % (d384, d256) + """ is what the model gets wrong: *overlapped* is
an order of magnitude too small because tensor-parallel all-reduces are modelled as blocking the compute
stream (Megatron with Transformer Engine overlaps part of them, and its data-parallel reduce overlaps more of
the backward pass than the last micro-batch), and *other* is near zero because the synthesized CPU thread does
nothing but launch kernels (no Python, data loading or optimizer bookkeeping). A calibrated GPU spec
(`lumosim calibrate`) changes the compute part, not these structural gaps.""")
PY
