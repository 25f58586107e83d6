#!/usr/bin/env python3
"""train_layers.py LUMOSIM MAKE_TRAIN_TRACE TOPOLOGY [DDP4_DIR]

`whatif --layers N` on a traced training step (forward and backward pass,
layer annotations; docs/whatif.md "Layers of a training step"), on the
fixture tests/data/tools/make_train_trace.py writes (a 4-layer GPT-style
step on one GPU, 2 steps; our own synthesis, so these are checks of the
transformation, not of accuracy). Every expected figure is computed here
from the trace JSON, independently of lumosim:

- per (step, layer): its forward kernels (launched inside the r-th
  "layers.l" annotation) and its backward kernels (launched inside backward
  ops whose Sequence number is one of that layer's forward ops'), their
  counts and summed durations; the gradient bytes of its AccumulateGrad ops;
- the copies each layer gets going from 4 to N layers (docs/whatif.md:
  down keeps the first ceil(N/2) and last floor(N/2), up repeats every
  layer and spreads the rest from the front).

Checked:
1. identity: --layers 4 predicts exactly what replaying the trace does;
2. conservation: for N = 2, 6, 8 the new store's forward and backward kernel
   counts and times (whatif --identify of the output) are the trace's minus
   removed layers plus copies, to the nanosecond; its gradient bytes too;
3. the prediction grows by what the layers cost: the step is GPU-bound, so
   job(8) - job(4) is the four extra layers' kernel time within 1 %;
4. round trips: 4 -> 2 -> 4 keeps 4 layers whose kernel time is that of
   layers 0 and 3 twice each; 4 -> 8 -> 16 equals 4 -> 16 exactly;
5. --layers 8 --dp 4: DDP's buckets are cut from the 8-layer step's
   gradients (the same bytes per pass as computed here);
6. scale-out anchored in the trace (docs/whatif.md): --layers 8 --dp 8 and
   --dp 512 on TOPOLOGY (one DGX node; 64 nodes over InfiniBand): every
   GPU runs the 8-layer step's own kernels (per-phase kernel time equal to
   the DP-1 store's), the buckets DDP's rule makes, every rank's window
   equal, and the step is no faster than at DP 8, nor DP 8 than DP 1;
7. width (--ffn 8192, --hidden 2048, with --model giving the fixture's
   shape): each kernel's role is read here from the trace's own ops (the
   fixture's layer runs layer_norm, linear QKV, attention, linear
   projection, add, layer_norm, linear FC1, gelu, linear FC2, add; a
   backward kernel has its forward op's role), and per role the predicted
   kernel durations must follow the shape: --ffn changes the FC1/FC2 GEMMs
   (forward, data and weight gradient: 1.5-2.05x for twice the FLOPs), the
   GeLU (more than 1x, at most 2x its bytes) and the optimizer (at most the
   parameter ratio), and leaves every other kernel to the nanosecond;
   --hidden leaves attention (heads x head dim kept) and the GeLU alone and
   changes every GEMM and norm; --ffn 8192 then back to 4096 predicts the
   replay; --ffn 8192 --dp 4 buckets the new parameters' bytes (computed
   here from the shapes, within 0.1 %);
8. a data-parallel training step (the fixture with --world 2: DDP's
   buckets traced on both ranks): --layers 4 predicts the replay exactly;
   --layers 8 removes the traced buckets and cuts new ones from the 8-layer
   gradients (as many per GPU as DDP's rule makes on the DP-1 8-layer step,
   the same bytes, every one coupled across the two ranks), the job grows by
   what it grows at DP 1 (within 1 %), and 4 -> 8 -> 4 comes back within
   0.1 %; with gradient accumulation (--accum 2, DDP's no_sync() on the
   first micro-batch: only the second all-reduces), the new buckets are cut
   for the passes that all-reduced in the trace only: half of what DDP's
   rule makes over every backward pass;
9. layers from the profiler's module hierarchy (--annotate modules:
   python_function "nn.Module: GPT2Block_i", with "nn.Module: LayerNorm_k"
   modules inside that are not layers): the same layers, and --layers 8
   and 4 -> 2 -> 4 predict what they do from record_function annotations;
10. how each step reduces its gradients (training.data_parallel): none on
   one GPU, ddp with the DDP fixture, fsdp with --dp-mode fsdp (an
   all-gather per layer before its forward and its backward, a
   reduce-scatter after: counts computed here from the fixture's shape);
11. refusals, one line each and nothing written: backward ops without
   Sequence numbers; a step without one layer's annotation; a training
   trace without layer annotations (DDP4_DIR's rank 0, when given);
   --ffn and --dp on the FSDP step (its per-unit collectives are not
   resized, nor its shards re-timed; --dp from DP 1 would add DDP buckets).
12. --layers on the FSDP job (both ranks): each layer takes its all-gathers
   and reduce-scatter along (per GPU and step 2 x 8 and 8, all coupled),
   the step grows by at least the extra layers' kernels and at most those
   and their collectives, and 4 -> 8 -> 4 predicts the replay within 0.1 %.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_truth import Checks, load, roles, truth  # noqa: E402

lumosim, maker, topo = sys.argv[1], sys.argv[2], sys.argv[3]
ddp4 = sys.argv[4] if len(sys.argv) > 4 else ""
T_ = Checks(lumosim)
check, run = T_.check, T_.run


def copies(L, N):
    if N <= L:
        k1, k2 = (N + 1) // 2, N // 2
        return [1 if p < k1 or p >= L - k2 else 0 for p in range(L)]
    extra = N - L
    return [1 + extra // L + (1 if p < extra % L else 0) for p in range(L)]


def identify(store):
    d = json.loads(run("whatif", store, "--identify").stdout)
    r = d["ranks"][0]
    return d, r["training"]


def job_ms(args):
    d = json.loads(run(*args, "--json").stdout)
    return d["job"]["predicted_ns"] / 1e6


tmp = tempfile.mkdtemp(prefix="lsim_train_")
trace = os.path.join(tmp, "train.json.gz")
subprocess.run([sys.executable, maker, trace, "--layers", "4", "--steps", "2"], check=True)
doc = load(trace)
T, total_grad, k_all, ns_all = truth(doc)[:4]
L, R = 4, 2
check(len(T) == L * R, "the fixture has %d (step, layer) pairs with kernels (expected %d)" % (len(T), L * R))
store = os.path.join(tmp, "t.h5")
run("build", trace, "-o", store)
d0, t0 = identify(store)
check(d0["layers"]["source"] == "annotations" and d0["layers"]["layers"] == L and not d0["layers"]["forward_only"],
      "--identify: 4 annotated layers, a backward pass")
fwd0, bwd0 = t0["phases"]["forward"], t0["phases"]["backward"]
tl = t0["layers"]
check(tl["found"] and tl["layers"] == L and tl["passes"] == R, "--identify: the step's layers: %d x %d passes" % (L, R))
for l in range(L):
    got = tl["listed"][l]
    want = [sum(T[(r, l)][k][i] for r in range(R)) for k in ("fwd", "bwd") for i in (0, 1)]
    check(got["forward_kernels"] == want[0] and abs(got["forward_ns"] - want[1] * 1000) <= want[0] and
          got["backward_kernels"] == want[2] and abs(got["backward_ns"] - want[3] * 1000) <= want[2] and
          got["grad_bytes"] == sum(T[(r, l)]["grad"] for r in range(R)),
          "--identify layer %d: forward %d kernels %d ns, backward %d kernels %d ns, %d gradient bytes (expected %s)"
          % (l, got["forward_kernels"], got["forward_ns"], got["backward_kernels"], got["backward_ns"], got["grad_bytes"],
             want))

# 1. identity
same = os.path.join(tmp, "same.h5")
run("whatif", store, "--layers", "4", "-o", same)
rep = job_ms(["replay", trace])
sim = job_ms(["sim", same])
check(rep == sim, "identity: --layers 4 predicts %.6f ms, the replay %.6f ms" % (sim, rep))


def expect(cp):
    """forward/backward kernels and ns, grad bytes of the store with copies cp per layer."""
    ef, eb = [fwd0["kernels"], fwd0["kernel_ns"]], [bwd0["kernels"], bwd0["kernel_ns"]]
    eg = t0["gradients"]["bytes"]
    for (r, l), t in T.items():
        ef[0] += (cp[l] - 1) * t["fwd"][0]
        ef[1] += (cp[l] - 1) * t["fwd"][1] * 1000
        eb[0] += (cp[l] - 1) * t["bwd"][0]
        eb[1] += (cp[l] - 1) * t["bwd"][1] * 1000
        eg += (cp[l] - 1) * t["grad"]
    return ef, eb, eg


check(t0["gradients"]["bytes"] == total_grad,
      "gradient bytes of the trace: %d (computed here %d)" % (t0["gradients"]["bytes"], total_grad))
ms = {}
for N in (2, 6, 8):
    out = os.path.join(tmp, "l%d.h5" % N)
    run("whatif", store, "--layers", str(N), "-o", out)
    dN, tN = identify(out)
    ef, eb, eg = expect(copies(L, N))
    f, b = tN["phases"]["forward"], tN["phases"]["backward"]
    check(dN["layers"]["layers"] == N, "--layers %d: the output has %d annotated layers" % (N, dN["layers"]["layers"]))
    check(f["kernels"] == ef[0] and abs(f["kernel_ns"] - ef[1]) <= ef[0],
          "--layers %d: forward %d kernels %d ns (expected %d, %d)" % (N, f["kernels"], f["kernel_ns"], ef[0], ef[1]))
    check(b["kernels"] == eb[0] and abs(b["kernel_ns"] - eb[1]) <= eb[0],
          "--layers %d: backward %d kernels %d ns (expected %d, %d)" % (N, b["kernels"], b["kernel_ns"], eb[0], eb[1]))
    check(tN["gradients"]["bytes"] == eg, "--layers %d: gradient bytes %d (expected %d)" % (N, tN["gradients"]["bytes"], eg))
    ms[N] = job_ms(["sim", out])
ms[4] = rep
# 3. the step is GPU-bound: 4 more layers add their kernel time
extra = sum(t["fwd"][1] + t["bwd"][1] for t in T.values()) / 1000.0
grow = ms[8] - ms[4]
check(abs(grow - extra) <= 0.01 * extra,
      "--layers 8 adds %.3f ms to the job, the 4 layers' kernels take %.3f ms (within 1 %%)" % (grow, extra))
check(ms[2] < ms[4] < ms[6] < ms[8], "the job grows with the layers: %s" % sorted(ms.items()))

# 4. round trips
back = os.path.join(tmp, "l2_4.h5")
run("whatif", os.path.join(tmp, "l2.h5"), "--layers", "4", "-o", back)
db, tb = identify(back)
ef, eb, _ = expect([2, 0, 0, 2])
check(db["layers"]["layers"] == 4 and tb["phases"]["backward"]["kernels"] == eb[0] and
      abs(tb["phases"]["forward"]["kernel_ns"] - ef[1]) <= ef[0],
      "4 -> 2 -> 4: four layers, layers 0 and 3 twice each (forward %d ns, expected %d)"
      % (tb["phases"]["forward"]["kernel_ns"], ef[1]))
l16a, l16b = os.path.join(tmp, "l16a.h5"), os.path.join(tmp, "l16b.h5")
run("whatif", store, "--layers", "16", "-o", l16a)
run("whatif", os.path.join(tmp, "l8.h5"), "--layers", "16", "-o", l16b)
a, b = job_ms(["sim", l16a]), job_ms(["sim", l16b])
check(a == b, "4 -> 16 and 4 -> 8 -> 16 predict the same: %.6f and %.6f ms" % (a, b))

# 5. buckets from the new step's gradients
dp = os.path.join(tmp, "l8dp4.h5")
run("whatif", store, "--layers", "8", "--dp", "4", "-o", dp)
dd, td = identify(dp)
_, _, eg8 = expect(copies(L, 8))
per_pass = td["gradients"]["bytes"] // max(1, td["gradients"]["passes"])
check(dd["gpus"] == 4 and td["gradients"]["bytes"] == eg8 and sum(td["gradients"]["first_pass_bytes"]) == per_pass,
      "--layers 8 --dp 4: 4 GPUs, buckets over %d gradient bytes (expected %d), %d per pass"
      % (td["gradients"]["bytes"], eg8, per_pass))
check(dd["collectives"]["dp"] == 4 * td["gradients"]["ddp_buckets"],
      "--layers 8 --dp 4: %d bucket all-reduces, DDP's rule makes %d per GPU"
      % (dd["collectives"]["dp"], td["gradients"]["ddp_buckets"]))
check(job_ms(["sim", dp]) >= ms[8], "--layers 8 --dp 4 is not faster than --layers 8 alone")

# 6. scale-out anchored in the trace
_, t8 = identify(os.path.join(tmp, "l8.h5"))
jobs = {1: ms[8]}
for D in (8, 512):
    big = os.path.join(tmp, "dp%d.h5" % D)
    run("whatif", store, "--layers", "8", "--dp", str(D), "--topology", topo, "-o", big)
    db = json.loads(run("whatif", big, "--identify").stdout)
    # forward and optimizer kernels, and each layer's backward compute
    # (the backward phase also holds the bucket all-reduces, timed anew)
    same_k = all(r["training"]["phases"][p]["kernel_ns"] == t8["phases"][p]["kernel_ns"] and
                 r["training"]["phases"][p]["kernels"] == t8["phases"][p]["kernels"]
                 for r in db["ranks"] for p in ("forward", "optimizer")) and \
        all([{k: x[k] for k in x if not k.startswith("bucket")} for x in r["training"]["layers"]["listed"]] ==
            [{k: x[k] for k in x if not k.startswith("bucket")} for x in t8["layers"]["listed"]] for r in db["ranks"])
    check(db["gpus"] == D and db["layout"]["dp"] == D and same_k,
          "--layers 8 --dp %d: %d GPUs, each running the 8-layer step's own kernels" % (D, db["gpus"]))
    check(db["collectives"]["dp"] == D * t8["gradients"]["ddp_buckets"],
          "--dp %d: %d bucket all-reduces, %d per GPU by DDP's rule" % (D, db["collectives"]["dp"], t8["gradients"]["ddp_buckets"]))
    sd = json.loads(run("sim", big, "--json").stdout)
    w = [r["window"]["predicted_ns"] for r in sd["ranks"]]
    check(len(w) == D and min(w) == max(w), "--dp %d: every rank's window the same (%d .. %d ns)" % (D, min(w), max(w)))
    jobs[D] = sd["job"]["predicted_ns"] / 1e6
check(jobs[1] <= jobs[8] <= jobs[512], "DP 1, 8, 512: %.3f <= %.3f <= %.3f ms" % (jobs[1], jobs[8], jobs[512]))

# 7. width
def kernel_durs(store):
    out = os.path.join(tmp, "pred.json")
    run("sim", store, "--trace-out", out, "--force")
    d = load(out)
    return {e["args"]["correlation"]: e["dur"] * 1000 for e in d["traceEvents"] if e.get("cat") == "kernel"}


role_of = roles(doc)
model = os.path.join(tmp, "model.json")
json.dump({"layers": 4, "hidden": 1024, "ffn": 4096, "heads": 16, "head_dim": 64, "seq": 1024, "vocab": 32768},
          open(model, "w"))
base = kernel_durs(same)
check(len(role_of) >= 200, "roles read from the trace for %d kernels" % len(role_of))


def params(h, f, V=32768, layers=4):
    return layers * (4 * h * h + 2 * h * f + 9 * h + f) + 2 * V * h + 2 * h


for opt, val, changed in (("--ffn", 8192, {"fc1", "fc2", "gelu", "adam"}),
                          ("--hidden", 2048, {"qkv", "proj", "fc1", "fc2", "ln", "add", "lnf", "logits", "emb", "adam"})):
    out = os.path.join(tmp, "w%s.h5" % opt[2:])
    run("whatif", store, opt, str(val), "--model", model, "--micro-batch", "4", "-o", out)
    new = kernel_durs(out)
    bad = []
    for c, r in role_of.items():
        x = new[c] / base[c]
        if r not in changed:
            ok = abs(new[c] - base[c]) <= 1
        elif r in ("qkv", "proj", "fc1", "fc2", "logits"):
            ok = 1.5 <= x <= (2.05 if opt == "--ffn" else 2.3)
        elif r == "adam":
            p0, p1 = params(1024, 4096), params(2048 if opt == "--hidden" else 1024, 8192 if opt == "--ffn" else 4096)
            ok = 1 < x <= p1 / p0 * 1.001
        else:
            ok = 1 < x <= 2.002  # at most its bytes (durations are written to the ns)
        if not ok:
            bad.append((r, round(x, 4)))
    check(not bad, "%s %d: every kernel's duration follows its role (%d kernels; off: %s)"
          % (opt, val, len(role_of), sorted(set(bad))[:6]))
model2 = os.path.join(tmp, "model2.json")
json.dump({"layers": 4, "hidden": 1024, "ffn": 8192, "heads": 16, "head_dim": 64, "seq": 1024, "vocab": 32768},
          open(model2, "w"))
back = os.path.join(tmp, "wffn_back.h5")
run("whatif", os.path.join(tmp, "wffn.h5"), "--ffn", "4096", "--model", model2, "--micro-batch", "4", "-o", back)
jb = job_ms(["sim", back])
check(abs(jb - rep) <= 1e-4 * rep, "--ffn 8192 then 4096: %.6f ms, the replay %.6f ms" % (jb, rep))
wdp = os.path.join(tmp, "wffn_dp4.h5")
run("whatif", store, "--ffn", "8192", "--dp", "4", "--model", model, "--micro-batch", "4", "-o", wdp)
_, tw = identify(wdp)
want = params(1024, 8192) * 4 * R
check(abs(tw["gradients"]["bytes"] - want) <= 1e-3 * want,
      "--ffn 8192 --dp 4: %d gradient bytes bucketed, the new shape has %d" % (tw["gradients"]["bytes"], want))

# 8. a data-parallel training step
ddp = os.path.join(tmp, "ddp2")
os.mkdir(ddp)
for r in (0, 1):
    subprocess.run([sys.executable, maker, os.path.join(ddp, "rank%d.json.gz" % r), "--layers", "4", "--steps", "2",
                    "--world", "2", "--rank", str(r)], check=True)
dstore = os.path.join(tmp, "ddp2.h5")
run("build", ddp, "-o", dstore)
di, dt = identify(dstore)
check(di["layout"]["dp"] == 2 and dt["ddp_buckets"]["count"] == dt["gradients"]["ddp_buckets"] > 0,
      "DP-2 trace: %d traced buckets per GPU, DDP's rule makes %d" % (dt["ddp_buckets"]["count"], dt["gradients"]["ddp_buckets"]))
tld = dt["layers"]
check(sum(x["buckets"] for x in tld["listed"]) + tld["buckets_outside_layers"] == dt["ddp_buckets"]["count"] and
      tld["buckets_outside_layers"] == 2 * R,
      "DP-2 --identify: buckets per layer %s, %d outside the layers (the logits' and the embedding's, per pass)"
      % ([x["buckets"] for x in tld["listed"]], tld["buckets_outside_layers"]))
drep = job_ms(["replay", ddp])
d4 = os.path.join(tmp, "ddp2_l4.h5")
run("whatif", dstore, "--layers", "4", "-o", d4)
check(job_ms(["sim", d4]) == drep, "DP-2: --layers 4 predicts the replay (%.6f ms)" % drep)
d8 = os.path.join(tmp, "ddp2_l8.h5")
run("whatif", dstore, "--layers", "8", "-o", d8)
i8, t8d = identify(d8)
check(t8d["ddp_buckets"]["count"] == t8["gradients"]["ddp_buckets"] and t8d["ddp_buckets"]["bytes"] == t8["gradients"]["bytes"],
      "DP-2 --layers 8: %d buckets of %d bytes per GPU, DDP's rule on the 8-layer step: %d of %d"
      % (t8d["ddp_buckets"]["count"], t8d["ddp_buckets"]["bytes"], t8["gradients"]["ddp_buckets"], t8["gradients"]["bytes"]))
s8 = json.loads(run("sim", d8, "--json").stdout)
coup = [r["collectives"].get("allreduce", {}) for r in s8["ranks"]]
check(all(c.get("coupled") == t8["gradients"]["ddp_buckets"] and c.get("traced", 0) == 0 for c in coup),
      "DP-2 --layers 8: every bucket coupled across the ranks: %s" % coup)
g2 = s8["job"]["predicted_ns"] / 1e6 - drep
g1 = ms[8] - ms[4]
check(abs(g2 - g1) <= 0.01 * g1, "DP-2 --layers 8 adds %.3f ms, at DP 1 %.3f ms" % (g2, g1))
d84 = os.path.join(tmp, "ddp2_l84.h5")
run("whatif", d8, "--layers", "4", "-o", d84)
j84 = job_ms(["sim", d84])
check(abs(j84 - drep) <= 1e-3 * drep, "DP-2 4 -> 8 -> 4: %.6f ms, the replay %.6f ms" % (j84, drep))
acc = os.path.join(tmp, "ddpacc")
os.mkdir(acc)
for r in (0, 1):
    subprocess.run([sys.executable, maker, os.path.join(acc, "rank%d.json.gz" % r), "--layers", "4", "--steps", "2",
                    "--world", "2", "--rank", str(r), "--accum", "2"], check=True)
astore, a8s = os.path.join(tmp, "acc.h5"), os.path.join(tmp, "acc8.h5")
run("build", acc, "-o", astore)
_, ta = identify(astore)
run("whatif", astore, "--layers", "8", "-o", a8s)
_, ta8 = identify(a8s)
check(ta["backward_passes"] == 2 * R and ta["ddp_buckets"]["count"] * 2 == ta["gradients"]["ddp_buckets"] and
      ta8["ddp_buckets"]["count"] * 2 == ta8["gradients"]["ddp_buckets"] and
      ta8["ddp_buckets"]["count"] == t8["gradients"]["ddp_buckets"],
      "accumulation: %d backward passes, %d traced buckets (rule over every pass %d); --layers 8: %d (rule %d)"
      % (ta["backward_passes"], ta["ddp_buckets"]["count"], ta["gradients"]["ddp_buckets"], ta8["ddp_buckets"]["count"],
         ta8["gradients"]["ddp_buckets"]))

# 9. module annotations
mtrace = os.path.join(tmp, "modules.json.gz")
subprocess.run([sys.executable, maker, mtrace, "--layers", "4", "--steps", "2", "--annotate", "modules"], check=True)
mstore = os.path.join(tmp, "modules.h5")
run("build", mtrace, "-o", mstore)
dm, tm = identify(mstore)
check(dm["layers"]["source"] == "annotations" and dm["layers"]["layers"] == L and tm["layers"]["listed"] == tl["listed"],
      "module hierarchy: %d layers, each with the kernels and gradients record_function annotations give"
      % dm["layers"]["layers"])
m8, m2, m24 = (os.path.join(tmp, x) for x in ("m8.h5", "m2.h5", "m24.h5"))
run("whatif", mstore, "--layers", "8", "-o", m8)
run("whatif", mstore, "--layers", "2", "-o", m2)
run("whatif", m2, "--layers", "4", "-o", m24)
a8, a24 = job_ms(["sim", m8]), job_ms(["sim", m24])
check(a8 == ms[8] and a24 == job_ms(["sim", os.path.join(tmp, "l2_4.h5")]),
      "module hierarchy: --layers 8 %.6f ms, 4 -> 2 -> 4 %.6f ms, as from record_function" % (a8, a24))

# 10. data-parallel strategy
fs = os.path.join(tmp, "fsdp")
os.mkdir(fs)
for r in (0, 1):
    subprocess.run([sys.executable, maker, os.path.join(fs, "rank%d.json.gz" % r), "--layers", "4", "--steps", "2",
                    "--world", "2", "--rank", str(r), "--dp-mode", "fsdp"], check=True)
fstore = os.path.join(tmp, "fsdp.h5")
run("build", fs, "-o", fstore)
_, tf = identify(fstore)
dpf = tf["data_parallel"]
want = {"forward": {"allreduce": 0, "allgather": L * R, "reducescatter": 0},
        "backward": {"allreduce": 0, "allgather": L * R, "reducescatter": L * R}}
check(t0["data_parallel"]["strategy"] == "none" and dt["data_parallel"]["strategy"] == "ddp" and
      dpf["strategy"] == "fsdp" and dpf["by_phase"] == want,
      "data-parallel strategy: one GPU %s, DDP %s, FSDP %s %s"
      % (t0["data_parallel"]["strategy"], dt["data_parallel"]["strategy"], dpf["strategy"], dpf["by_phase"]))

# 10b. --layers on the FSDP job (both ranks): each layer's all-gathers and
# reduce-scatter go with it, so 8 layers run 2 x 8 all-gathers and 8
# reduce-scatters per step, all coupled; the step grows by the 4 extra
# layers' kernels plus at most their collectives; 4 -> 8 -> 4 comes back
fdoc = load(os.path.join(fs, "rank0.json.gz"))
fT = truth(fdoc)[0]
fk4 = sum(t["fwd"][1] + t["bwd"][1] for t in fT.values()) * 1000  # all 4 layers, both steps, ns
fcoll = sum(e["dur"] for e in fdoc["traceEvents"] if e.get("cat") == "kernel" and "nccl" in e["name"].lower()) * 1000
f8 = os.path.join(tmp, "fsdp8.h5")
run("whatif", fstore, "--layers", "8", "-o", f8)
j8 = json.loads(run("sim", f8, "--json").stdout)
cs = [r["collectives"] for r in j8["ranks"]]
check(len(cs) == 2 and all(c.get("allgather", {}).get("coupled") == 2 * 8 * R and c["allgather"].get("traced") == 0 and
                           c.get("reducescatter", {}).get("coupled") == 8 * R for c in cs),
      "FSDP --layers 8: per GPU %s all-gathers and %s reduce-scatters, all coupled (expected %d and %d)"
      % ([c.get("allgather", {}).get("coupled") for c in cs], [c.get("reducescatter", {}).get("coupled") for c in cs],
         2 * 8 * R, 8 * R))
jf4 = job_ms(["replay", fs])
jf8 = j8["job"]["predicted_ns"] / 1e6
grow = (jf8 - jf4) * 1e6
check(fk4 <= grow <= fk4 + fcoll, "FSDP --layers 8 adds %.3f ms: at least the 4 layers' kernels (%.3f ms), at most those "
      "and their collectives (%.3f ms)" % (grow / 1e6, fk4 / 1e6, (fk4 + fcoll) / 1e6))
f84 = os.path.join(tmp, "fsdp84.h5")
run("whatif", f8, "--layers", "4", "-o", f84)
jf84 = job_ms(["sim", f84])
check(abs(jf84 / jf4 - 1) < 1e-3, "FSDP 4 -> 8 -> 4: %.6f ms, the replay %.6f ms" % (jf84, jf4))

# 11. refusals
def refused(path, what, args=("--layers", "8")):
    src, out = os.path.join(tmp, "refused_src.h5"), os.path.join(tmp, "refused.h5")
    for f in (src, out):
        if os.path.exists(f):
            os.remove(f)
    run("build", path, "-o", src)
    p = run("whatif", src, *args, "-o", out, ok=False)
    lines = [s for s in p.stderr.splitlines() if s.strip()]
    check(p.returncode != 0 and len(lines) == 1 and what in lines[0] and not os.path.exists(out),
          "refused (%s): %s" % (what, lines[0] if lines else "<no message>"))


noseq = dict(doc)
noseq["traceEvents"] = [dict(e, args={k: v for k, v in e["args"].items() if k not in ("Sequence number", "Fwd thread id")})
                        if e.get("tid") == 4250 and "args" in e else e for e in doc["traceEvents"]]
p1 = os.path.join(tmp, "noseq.json")
json.dump(noseq, open(p1, "w"))
refused(p1, "backward")
miss = dict(doc)
drop = [e for e in doc["traceEvents"] if e.get("name") == "layers.2"][-1]
miss["traceEvents"] = [e for e in doc["traceEvents"] if e is not drop]
p2 = os.path.join(tmp, "missing.json")
json.dump(miss, open(p2, "w"))
refused(p2, "no annotation for layer 2")
for args in (("--ffn", "8192", "--model", model, "--micro-batch", "4"), ("--dp", "4")):
    out = os.path.join(tmp, "refused.h5")
    p = run("whatif", fstore, *args, "-o", out, ok=False)
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    check(p.returncode != 0 and len(lines) == 1 and "fsdp" in lines[0] and not os.path.exists(out),
          "refused (%s on the FSDP step): %s" % (args[0], lines[0] if lines else "<no message>"))
if ddp4 and os.path.isdir(ddp4):  # optional: the shared traces
    refused(os.path.join(ddp4, "rank0.json.gz"), "layer structure unknown")
T_.done("train_layers")
