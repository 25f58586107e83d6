"""The layers of the training-step fixture (tests/data/tools/make_train_trace.py),
read from its trace JSON independently of lumosim, for the training-step
what-if tests (train_layers.py, train_pipe.py)."""
import gzip
import json
import subprocess
import sys


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def truth(doc):
    """Per (step, layer): forward/backward kernel count and ns; grad bytes.
    Also: K, per kernel correlation id of a layer's kernel, (step, layer,
    "fwd" | "bwd"); G, per AccumulateGrad op in time order, (ts, bytes,
    (step, layer) or None outside every layer)."""
    ev = doc["traceEvents"]
    x = [e for e in ev if e.get("ph") == "X"]
    kern = {e["args"]["correlation"]: e for e in x if e.get("cat") == "kernel"}
    launch = [e for e in x if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"]
    ann = sorted([e for e in x if e.get("cat") == "user_annotation" and e["name"].startswith("layers.")],
                 key=lambda e: e["ts"])
    spans, run_i, last = [], -1, 10 ** 9
    for e in ann:
        l = int(e["name"].split(".")[1])
        if l < last:
            run_i += 1
        last = l
        spans.append((e["ts"], e["ts"] + e["dur"], run_i, l, e["tid"]))

    def layer_at(ts, tid):
        for a, b, r, l, t in spans:
            if t == tid and a <= ts < b:
                return (r, l)
        return None

    fwd_seq = {}  # Sequence number -> (step, layer)
    for e in x:
        if e.get("cat") == "cpu_op" and e["args"].get("Fwd thread id") == 0 and "Sequence number" in e["args"]:
            k = layer_at(e["ts"], e["tid"])
            if k:
                fwd_seq[e["args"]["Sequence number"]] = k
    bwd_ops = [e for e in x if e.get("cat") == "cpu_op" and e["name"].startswith("autograd::engine::evaluate_function")
               and e["args"].get("Sequence number") in fwd_seq]
    T, K = {}, {}
    for c in launch:
        k = kern.get(c["args"]["correlation"])
        if not k:
            continue
        key = layer_at(c["ts"], c["tid"])
        side = "fwd"
        if not key:
            side = "bwd"
            for o in bwd_ops:
                if o["tid"] == c["tid"] and o["ts"] <= c["ts"] <= o["ts"] + o["dur"]:
                    key = fwd_seq[o["args"]["Sequence number"]]
                    break
        if key:
            K[c["args"]["correlation"]] = (key[0], key[1], side)
            t = T.setdefault(key, {"fwd": [0, 0.0], "bwd": [0, 0.0], "grad": 0})
            t[side][0] += 1
            t[side][1] += k["dur"]
    # gradient bytes: AccumulateGrad ops inside the evaluate_function that
    # follows a layer's backward op on the autograd thread, up to the next
    grads = sorted([e for e in x if e["name"] == "torch::autograd::AccumulateGrad"], key=lambda e: e["ts"])
    tops = sorted([e for e in x if e.get("cat") == "cpu_op" and e["name"].startswith("autograd::engine::evaluate_function")
                   and "AccumulateGrad" not in e["name"]], key=lambda e: e["ts"])
    total_grad, G = 0, []
    for gr in grads:
        n = 4
        for d in gr["args"]["Input Dims"][0]:
            n *= d
        total_grad += n
        prev = [o for o in tops if o["ts"] < gr["ts"]][-1]
        key = fwd_seq.get(prev["args"].get("Sequence number"))
        G.append((gr["ts"], n, key))
        if key:
            T[key]["grad"] += n
    kernels_all = sum(1 for c in launch if c["args"]["correlation"] in kern)
    ns_all = sum(kern[c["args"]["correlation"]]["dur"] for c in launch if c["args"]["correlation"] in kern)
    return T, total_grad, kernels_all, ns_all, K, G


def roles(doc):
    """correlation -> role, from the fixture's ops: a layer runs layer_norm,
    linear QKV, attention, linear projection, add, layer_norm, linear FC1,
    gelu, linear FC2, add; outside the layers the embedding, the final
    norm, the logits and the loss; a backward kernel has its forward op's
    role; the fused AdamW's kernels "adam"."""
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    launch = {}
    for e in ev:
        if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel":
            launch.setdefault((e["pid"], e["tid"]), []).append(e)
    ops = sorted([e for e in ev if e.get("cat") == "cpu_op"], key=lambda e: e["ts"])
    layer_ops = ["ln", "qkv", "attn", "proj", "add", "ln", "fc1", "gelu", "fc2", "add"]
    seq_role, pos, role_of = {}, None, {}
    anns = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("layers.")]
    for o in ops:
        if o["args"].get("Fwd thread id") != 0 or "Sequence number" not in o["args"]:
            continue
        inside = any(a["tid"] == o["tid"] and a["ts"] <= o["ts"] < a["ts"] + a["dur"] for a in anns)
        if inside:
            pos = 0 if pos is None or pos >= 10 else pos
            seq_role[o["args"]["Sequence number"]] = layer_ops[pos]
            pos += 1
        else:
            pos = None
            seq_role[o["args"]["Sequence number"]] = {"aten::embedding": "emb", "aten::layer_norm": "lnf",
                                                      "aten::linear": "logits", "aten::cross_entropy": "xent"}[o["name"]]

    def under(o):
        return [c for c in launch.get((o["pid"], o["tid"]), []) if o["ts"] <= c["ts"] <= o["ts"] + o["dur"]]
    for o in ops:
        q = o["args"].get("Sequence number")
        if q in seq_role and (o["args"].get("Fwd thread id") == 0 or o["name"].startswith("autograd::engine")):
            for c in under(o):
                role_of[c["args"]["correlation"]] = seq_role[q]
        if o["name"] == "aten::_fused_adamw_":
            for c in under(o):
                role_of[c["args"]["correlation"]] = "adam"
    return role_of


class Checks:
    """The checks of one test script: check() prints ok/FAIL and counts,
    run() runs lumosim (exiting on failure unless ok=False), done() exits
    with the verdict."""

    def __init__(self, lumosim):
        self.lumosim, self.fails = lumosim, []

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.fails.append(what)

    def run(self, *args, ok=True):
        p = subprocess.run([self.lumosim] + list(args), capture_output=True, text=True)
        if ok and p.returncode != 0:
            sys.exit("lumosim %s failed (%d): %s" % (" ".join(args), p.returncode, p.stderr.strip()))
        return p

    def done(self, name):
        print("%s: %d failures" % (name, len(self.fails)) if self.fails else "%s: all checks passed" % name)
        sys.exit(1 if self.fails else 0)
