#!/usr/bin/env python3
"""trace_memest.py LUMOSIM MODEL_JSON MEGATRON_DIR

The model-shape memory estimate of a traced job as it ran (`replay --model`,
`build --model`; docs/memory.md, "A traced job as it ran"), checked against
what this script reads from the trace JSON itself and computes from
docs/memory.md's accounting, never from lumosim's own output:

1. MEGATRON_DIR's eight ranks: the layout (TP from the all-reduces' group,
   PP = world / (TP x DP)), the micro-batch (an all-reduce's elements /
   (sequence x hidden)), the layers (two TP all-reduces per layer in the
   forward pass) and forward-only (no autograd op) are read from the JSON;
   the estimate must be of that configuration: its parameters per GPU equal
   docs/memory.md's count L((4hA + 2hf + 3A + f)/t + 6h) + vh/t + sh + 2h,
   its weights 2 bytes each (bf16), no gradients or optimizer state
   (forward only), the GPU the traces' deviceProperties name with their
   totalGlobalMem as capacity, and every stage figure equal to `lumosim
   synth --forward-only` of that configuration (the same accounting reached
   from the shape and layout given by hand).
2. `build --model` stores the same estimate: `sim --json` reports it and
   `info` prints it; the store's graphs are those of a build without it.
3. A vocabulary large enough to exceed the GPU: OOM in the JSON, the table
   and a warning on stderr; the weights grow by exactly 2 (v' - v) h / t.
4. One rank alone: no estimate, a warning naming why, exit 0.
5. Bad input: an unknown --model (exit 1, one line, no store left),
   --micro-batch without --model (exit 2), a --micro-batch the activations
   contradict (no estimate, the warning names the sizes).
"""
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

lumosim, model, megdir = sys.argv[1], sys.argv[2], sys.argv[3]
if not os.path.isdir(megdir):
    print("skip: %s not found" % megdir)
    sys.exit(77)
fails = []
tmp = tempfile.mkdtemp()


def check(cond, what):
    if not cond:
        fails.append(what)


def run(*args):
    return subprocess.run([lumosim] + list(args), capture_output=True, text=True)


def load(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


ranks = sorted(glob.glob(os.path.join(megdir, "rank[0-9].json.gz")))
shape = json.load(open(model))
h, f, s, v = shape["hidden"], shape["ffn"], shape["seq"], shape["vocab"]
A = shape["heads"] * shape["head_dim"]

# ---- 1. what the trace says, read from its JSON
tr = load(ranks[0])
world = tr["distributedInfo"]["world_size"]
dev = tr["deviceProperties"][0]
ev = tr["traceEvents"]
# record_param_comms: the tensor's dims (Input Dims) and the group size (the
# last Concrete Input), as PyTorch 2.1 writes them; a group of 1 is no
# collective of the model
comms = []
for e in ev:
    a = e.get("args", {})
    if e.get("name") != "record_param_comms" or not a.get("Concrete Inputs"):
        continue
    dims = (a.get("Input Dims") or [[]])[0]
    if len(dims) == 1 and len(dims[0]) == 3 and int(a["Concrete Inputs"][-1]) > 1:
        comms.append((dims[0][0] * dims[0][1] * dims[0][2], int(a["Concrete Inputs"][-1])))
tp = max(g for _, g in comms)
dp = 1  # every collective is on the world group of a forward-only TP job: no DP gradients
pp = world // (tp * dp)
nelems = [n for n, _ in comms]
# the layers' activations (s x b x h) are the most common size, the
# embedding's (b x s x h) the same; two per layer, one for the embedding
act = max(set(nelems), key=nelems.count)
mb = act // (s * h)
check(act == mb * s * h, "activation all-reduce of %d elements is not whole sequences" % act)
layers = nelems.count(act) // 2
forward_only = not any("autograd::engine" in e.get("name", "") for e in ev)
print("trace: world %d, TP %d, PP %d, DP %d, micro-batch %d, %d layers, forward only %s, %s %d bytes" %
      (world, tp, pp, dp, mb, layers, forward_only, dev["name"], dev["totalGlobalMem"]))

params = layers * ((4 * h * A + 2 * h * f + 3 * A + f) // tp + 6 * h) + v * h // tp + s * h + 2 * h

p = run("replay", "--json", megdir, "--model", model)
check(p.returncode == 0, "replay --model: %s" % p.stderr)
doc = json.loads(p.stdout) if p.returncode == 0 else {}
m = doc.get("memory", {})
st = (m.get("stages") or [{}])[0]
check(m.get("source") == "model", "source: %s" % m.get("source"))
check((m.get("tp"), m.get("pp"), m.get("dp")) == (tp, pp, dp), "layout %s" % [m.get("tp"), m.get("pp"), m.get("dp")])
check(st.get("params") == params, "params %s, expected %d" % (st.get("params"), params))
check(st.get("weights_bytes") == 2 * params, "weights %s, expected %d" % (st.get("weights_bytes"), 2 * params))
check(st.get("layers") == layers, "layers %s, expected %d" % (st.get("layers"), layers))
if forward_only:
    check(st.get("gradients_bytes") == 0 and st.get("optimizer_bytes") == 0, "forward only, yet states: %s" % st)
check(m.get("gpu") == dev["name"] and m.get("capacity_bytes") == dev["totalGlobalMem"],
      "GPU %s %s, expected %s %d" % (m.get("gpu"), m.get("capacity_bytes"), dev["name"], dev["totalGlobalMem"]))
check(m.get("oom") is False, "oom: %s" % m.get("oom"))

# the same configuration given by hand to synth
syn = os.path.join(tmp, "s.h5")
p = run("synth", "--model", model, "--tp", str(tp), "--pp", str(pp), "--dp", str(dp), "--micro-batch", str(mb),
        "--global-batch", str(mb * dp), "--gpu", "a100", "-o", syn, *(["--forward-only"] if forward_only else []))
check(p.returncode == 0, "synth: %s" % p.stderr)
p = run("sim", "--json", syn)
sm = json.loads(p.stdout).get("memory", {}) if p.returncode == 0 else {}
for k in ("params", "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "comm_bytes",
          "reserve_bytes", "total_bytes", "inflight"):
    a, b = st.get(k), (sm.get("stages") or [{}])[0].get(k)
    check(a == b, "%s: replay --model %s, synth %s" % (k, a, b))

# the table says it too
p = run("replay", megdir, "--model", model)
check("memory per GPU (estimate from the model shape and layout)" in p.stdout and dev["name"] in p.stdout,
      "table: %s" % p.stdout[-600:])

# ---- 2. build --model: the store carries it
store, plain = os.path.join(tmp, "m.h5"), os.path.join(tmp, "p.h5")
p = run("build", megdir, "--model", model, "-o", store)
check(p.returncode == 0, "build --model: %s" % p.stderr)
p = run("build", megdir, "-o", plain)
check(p.returncode == 0, "build: %s" % p.stderr)
p = run("sim", "--json", store)
check(p.returncode == 0 and json.loads(p.stdout).get("memory") == m, "sim of build --model: %s" % p.stdout[-400:])
p = run("sim", "--json", plain)
check(p.returncode == 0 and "memory" not in json.loads(p.stdout), "a plain build has an estimate")
p = run("info", store)
check("memory per GPU (estimate from the model shape and layout)" in p.stdout, "info: %s" % p.stdout[-400:])
if shutil.which("h5diff"):
    # the graphs are the build's without --model (attributes aside)
    for ds in ("/nodes/dur", "/edges/in_src", "/colls/bytes", "/gpus/source"):
        q = subprocess.run(["h5diff", plain, store, ds, ds], capture_output=True, text=True)
        check(q.returncode == 0, "%s differs: %s" % (ds, q.stdout[:200]))

# ---- 3. OOM: the same shape with a vocabulary past the GPU
big = dict(shape, vocab=v * 2000)
bigf = os.path.join(tmp, "big.json")
json.dump(big, open(bigf, "w"))
p = run("replay", "--json", megdir, "--model", bigf)
bm = json.loads(p.stdout).get("memory", {}) if p.returncode == 0 else {}
bst = (bm.get("stages") or [{}])[0]
check(p.returncode == 0 and bm.get("oom") is True and bst.get("total_bytes", 0) > dev["totalGlobalMem"],
      "vocab x2000: oom %s, total %s" % (bm.get("oom"), bst.get("total_bytes")))
check(bst.get("weights_bytes", 0) - st.get("weights_bytes", 0) == 2 * (big["vocab"] - v) * h // tp,
      "vocab x2000 weights %s - %s" % (bst.get("weights_bytes"), st.get("weights_bytes")))
check("lumosim: warning: OOM: pipeline stage 0 needs an estimated" in p.stderr, "no OOM warning: %s" % p.stderr)
p = run("replay", megdir, "--model", bigf)
check("OOM, does not fit" in p.stdout, "table without OOM")

# ---- 4. one rank of eight
p = run("replay", "--json", ranks[0], "--model", model)
check(p.returncode == 0 and "memory" not in json.loads(p.stdout), "one rank got an estimate")
check("no memory estimate" in p.stderr and "1 of the job's %d GPUs" % world in p.stderr, "one rank: %s" % p.stderr)

# ---- 5. bad input
out = os.path.join(tmp, "bad.h5")
p = run("build", megdir, "--model", "no-such-model", "-o", out)
check(p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and not os.path.exists(out),
      "unknown model: %d %s" % (p.returncode, p.stderr))
check(not [x for x in os.listdir(tmp) if x.startswith("bad.h5")], "left behind: %s" % os.listdir(tmp))
p = run("replay", megdir, "--micro-batch", "2")
check(p.returncode == 2 and "--micro-batch goes with --model" in p.stderr, "--micro-batch alone: %s" % p.stderr)
p = run("replay", "--json", megdir, "--model", model, "--micro-batch", str(mb + 1))
check(p.returncode == 0 and "memory" not in json.loads(p.stdout) and "no memory estimate" in p.stderr,
      "a contradicted --micro-batch: %s" % p.stderr)
p = run("replay", "--json", megdir, "--model", model, "--micro-batch", str(mb))
check(p.returncode == 0 and json.loads(p.stdout).get("memory") == m, "--micro-batch %d given: %s" % (mb, p.stderr))

shutil.rmtree(tmp)
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    sys.exit(1)
print("ok: %d params per GPU, %.2f GB peak of %.2f GB; build, sim, info, OOM, one rank and bad input" %
      (params, m["peak_bytes"] / 1e9, m["capacity_bytes"] / 1e9))
