#!/usr/bin/env python3
"""train_tp.py LUMOSIM MAKE_TRAIN_TRACE

`whatif --tp N` from TP 1 on a traced training step (docs/whatif.md "Tensor
parallelism of a training step"), on the fixture
tests/data/tools/make_train_trace.py writes (a 4-layer GPT-style step on one
GPU, one step, hidden 1024, 4096 tokens per micro-batch; our own synthesis:
these check the transformation, not accuracy). Every expectation is
computed here from the trace JSON (each kernel's role from the fixture's
own ops, train_truth.roles) and Megatron-LM's layout of tensor parallelism:

1. kernels are re-timed by the sharding only: norms and residual adds
   (replicated in Megatron's layers) keep their traced time to 1 ns; GEMMs,
   attention, GeLU, logits, loss and optimizer kernels shrink, to between
   1/N and 1 of their traced time (the cost model's ratio of the sharded
   shape to the full one);
2. the all-reduces: 4 per layer (after the projection and FC2 forward, the
   FC1 and QKV data gradients backward) and 1 after the embedding, each of
   the activations' 4096 x 1024 x 2 bytes, in a group of N, all coupled;
   the N ranks of the group have one window; N = 2 and 4 are each faster
   than the narrower step (the step is GPU-bound);
3. options combine: --layers 8 --tp 2 gives 4 x 8 + 1 all-reduces; --tp 2
   --pp 2 --dp 2 --micro-batches 4 gives per GPU its stage's all-reduces
   once per micro-batch (stage 0: 4 x 2 + 1, stage 1: 4 x 2, times 4) and
   DDP's buckets, the TP peers of a stage one window;
4. refusals, one line, nothing written: no --model / --micro-batch; a width
   that does not divide the heads.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_truth import Checks, load, roles  # noqa: E402

lumosim, maker = sys.argv[1], sys.argv[2]
T_ = Checks(lumosim)
check, run = T_.check, T_.run
LOW = (1 << 40) - 1
NL, TOK, H = 4, 4096, 1024


tmp = tempfile.mkdtemp(prefix="lsim_ttp_")
trace = os.path.join(tmp, "train.json.gz")
subprocess.run([sys.executable, maker, trace, "--layers", str(NL), "--steps", "1", "--hidden", str(H),
                "--tokens", str(TOK)], check=True)
doc = load(trace)
role_of = roles(doc)
traced = {e["args"]["correlation"]: round(e["dur"] * 1000) for e in doc["traceEvents"]
          if e.get("ph") == "X" and e.get("cat") == "kernel"}
store = os.path.join(tmp, "t.h5")
run("build", trace, "-o", store)
model = os.path.join(tmp, "model.json")
json.dump({"layers": NL, "hidden": H, "ffn": 4 * H, "heads": 16, "head_dim": 64, "seq": 1024, "vocab": 32768},
          open(model, "w"))
SHAPE = ["--model", model, "--micro-batch", "4"]


def store_for(*args):
    out = os.path.join(tmp, "w%d.h5" % len(os.listdir(tmp)))
    run("whatif", store, *args, *SHAPE, "-o", out)
    return out


def predicted(st):
    out = os.path.join(tmp, "pred.json")
    run("sim", st, "--trace-out", out, "--force")
    d = load(out)
    rank_of = {e["pid"]: int(e["args"]["name"].split()[1]) for e in d["traceEvents"]
               if e.get("ph") == "M" and e["name"] == "process_name" and " GPU " in e["args"]["name"]}
    K, AR = {}, {}
    for e in d["traceEvents"]:
        if e.get("cat") != "kernel":
            continue
        r = rank_of[e["pid"]]
        if "[tensor parallel]" in e["name"]:
            AR.setdefault(r, []).append(e)
        elif r == 0:
            K.setdefault(e["args"]["correlation"] & LOW, []).append(round(e["dur"] * 1000))
    return K, AR, json.loads(run("sim", st, "--json").stdout)


job1 = json.loads(run("replay", trace, "--json").stdout)["job"]["predicted_ns"]
prev = job1
SAME = {"ln", "add", "lnf"}
SHRINK = {"qkv", "attn", "proj", "fc1", "gelu", "fc2", "logits", "xent", "adam"}
for N in (2, 4):
    K, AR, js = predicted(store_for("--tp", str(N)))
    bad_same = [c for c, r in role_of.items() if r in SAME and any(abs(d - traced[c]) > 1 for d in K.get(c, [None]))
                if K.get(c)]
    bad_shr = [(c, r, K[c], traced[c]) for c, r in role_of.items() if r in SHRINK and c in K and
               not all(traced[c] / N - 1 <= d <= traced[c] for d in K[c])]
    n_same = sum(1 for c, r in role_of.items() if r in SAME and c in K)
    n_shr = sum(1 for c, r in role_of.items() if r in SHRINK and c in K)
    check(n_same > 0 and not bad_same, "--tp %d: %d norm and residual kernels keep their traced time (%d differ)"
          % (N, n_same, len(bad_same)))
    check(n_shr > 0 and not bad_shr, "--tp %d: %d GEMM, attention, GeLU, head and optimizer kernels take 1/%d..1 of "
          "their traced time (%d outside, e.g. %s)" % (N, n_shr, N, len(bad_shr), bad_shr[:2]))
    want = 4 * NL + 1
    ok = len(AR) == N and all(len(v) == want and all(e["args"]["bytes"] == TOK * H * 2 and
                                                     e["args"]["group_size"] == N for e in v) for v in AR.values())
    check(ok, "--tp %d: %d GPUs, each with %s tensor-parallel all-reduces of %d bytes in a group of %d (expected %d)"
          % (N, len(AR), sorted(set(len(v) for v in AR.values())), TOK * H * 2, N, want))
    co = [rk["collectives"].get("allreduce", {}).get("coupled") for rk in js["ranks"]]
    wins = set(rk["window"]["predicted_ns"] for rk in js["ranks"])
    check(co == [want] * N and len(wins) == 1, "--tp %d: every all-reduce coupled (%s), one window for the group (%s)"
          % (N, co, sorted(wins)))
    job = js["job"]["predicted_ns"]
    check(job < prev, "--tp %d: %.3f ms, faster than the narrower step's %.3f ms" % (N, job / 1e6, prev / 1e6))
    prev = job

# 3. options combine
_, AR, _ = predicted(store_for("--tp", "2", "--layers", "8"))
check(all(len(v) == 4 * 8 + 1 for v in AR.values()) and len(AR) == 2,
      "--layers 8 --tp 2: %s all-reduces per GPU (expected %d)" % (sorted(set(len(v) for v in AR.values())), 33))
M = 4
_, AR, js = predicted(store_for("--tp", "2", "--pp", "2", "--dp", "2", "--micro-batches", str(M)))
want = {r: M * (4 * 2 + (1 if r // 4 == 0 else 0)) for r in range(8)}  # ranks: tp fastest, then dp, then pp
got = {r: len(v) for r, v in AR.items()}
check(got == want, "--tp 2 --pp 2 --dp 2 --micro-batches 4: tensor-parallel all-reduces per GPU %s (expected %s)"
      % (got, want))
wins = {}
for rk in js["ranks"]:
    wins.setdefault(rk["rank"] // 4, set()).add(rk["window"]["predicted_ns"])
buckets = [rk["collectives"].get("allreduce", {}).get("coupled", 0) - want[rk["rank"]] for rk in js["ranks"]]
check(all(len(w) == 1 for w in wins.values()) and all(b > 0 for b in buckets),
      "--tp 2 --pp 2 --dp 2: one window per stage (%s), DDP's buckets on every GPU (%s)"
      % ({p: sorted(w) for p, w in wins.items()}, buckets))


# 4. refusals
def refused(what, args):
    out = os.path.join(tmp, "refused.h5")
    p = run("whatif", store, *args, "-o", out, ok=False)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    check(p.returncode != 0 and len(lines) == 1 and what in lines[0] and not os.path.exists(out),
          "refused (%s): %s" % (" ".join(os.path.basename(a) for a in args), lines[0] if lines else "no message"))


refused("--micro-batch", ["--tp", "2"])
refused("3", ["--tp", "3"] + SHAPE)

T_.done("train_tp")
