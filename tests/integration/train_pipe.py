#!/usr/bin/env python3
"""train_pipe.py LUMOSIM MAKE_TRAIN_TRACE [TOPOLOGY]

`whatif --pp N [--micro-batches M]` on a traced training step (docs/whatif.md
"Pipeline of a training step"), on the fixture
tests/data/tools/make_train_trace.py writes (a 4-layer GPT-style step on one
GPU, one step; our own synthesis, so these are checks of the transformation
and of the 1F1B schedule, not of accuracy). Every expected figure is
computed here from the trace JSON (train_truth.py) and the 1F1B rule,
independently of lumosim:

- which kernels each stage runs: stage p of P holds layers
  [p L/P, (p+1) L/P); forward work before the first layer (embedding) and
  backward work after layer 0's (its gradient) on stage 0; forward work
  after the last layer (head, loss) and backward work before the last
  layer's backward on the last stage; everything else on every stage;
- the optimizer's kernels re-timed by the stage's share of the gradient
  bytes (AccumulateGrad shapes; those before the first layer-owned one are
  the head's: last stage; after the last: the embedding's: stage 0);
- with M micro-batches, the work between the step's first forward kernel
  and its last backward kernel runs M times, the rest (data loading,
  optimizer) once;
- the 1F1B order on each stage (Narayanan et al. 2021): min(P-1-p, M)
  forwards, then one forward and one backward alternating, then the rest.

Checked:
1. identity: --pp 1 predicts exactly what replaying the trace does;
2. conservation: for P = 2 and 4, M = 1 and 4, each stage runs exactly its
   kernels (by correlation id), each as many times as computed here, with
   the trace's durations (the optimizer's scaled by the share, to 1 ns);
3. the schedule: on every stage of P = 2 and 4 with M = 4 and 8, the
   forward and backward micro-batches start on the compute stream in 1F1B
   order; with --schedule interleaved:2 (P = 2, M = 4 and 8) each GPU runs
   the kernels of its two model chunks, in Megatron-LM's interleaved order,
   no slower than 1F1B;
4. the bubble law: job(2M) - job(M) for P = 2 and 4 is M times the busiest
   stage's per-micro-batch compute (within 3 %), and job(1) is at least the
   sum of every stage's;
5. options combine: --layers 8 --pp 2 gives each stage 4 layers' kernels;
6. --pp 2 --dp 4: each GPU all-reduces the buckets DDP's rule cuts from its
   stage's own gradients, for one pass, all in the last micro-batch's
   backward; the replicas of a stage agree; DP is no faster than DP 1;
   with TOPOLOGY (64 DGX nodes over InfiniBand), the scale-out recipe of
   docs/whatif.md at 512 GPUs, --pp 4 --dp 128 --micro-batches 8: per GPU
   the buckets of its stage, 8 transfers each way per boundary, coupled,
   the replicas of a stage agree, no faster than one pipeline;
7. refusals, one line each, nothing written: a DDP step (--world 2), a step
   traced with gradient accumulation, interleaved:2, no --model for the
   activations, layers not divisible by PP.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_truth import Checks, load, truth  # noqa: E402

lumosim, maker = sys.argv[1], sys.argv[2]
topo = sys.argv[3] if len(sys.argv) > 3 else ""
T_ = Checks(lumosim)
check, run = T_.check, T_.run
LOW = (1 << 40) - 1


tmp = tempfile.mkdtemp(prefix="lsim_tpipe_")
trace = os.path.join(tmp, "train.json.gz")
subprocess.run([sys.executable, maker, trace, "--layers", "4", "--steps", "1"], check=True)
doc = load(trace)
T, total_grad, _, _, K, G = truth(doc)
NL = 4
store = os.path.join(tmp, "t.h5")
run("build", trace, "-o", store)
model = os.path.join(tmp, "model.json")
json.dump({"layers": 4, "hidden": 1024, "ffn": 4096, "heads": 16, "head_dim": 64, "seq": 1024, "vocab": 32768},
          open(model, "w"))
SHAPE = ["--model", model, "--micro-batch", "4"]

# ---- the trace's kernels, classified here
ev = doc["traceEvents"]
x = [e for e in ev if e.get("ph") == "X"]
kern = {e["args"]["correlation"]: e for e in x if e.get("cat") == "kernel"}
launch = {e["args"]["correlation"]: e for e in x if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"}
fwd_ops = [e for e in x if e.get("cat") == "cpu_op" and e["args"].get("Fwd thread id") == 0]
opt = [e for e in x if e.get("cat") == "user_annotation" and e["name"].startswith("Optimizer.step")]
ann = [e for e in x if e.get("cat") == "user_annotation" and e["name"].startswith("layers.")]
a_first, a_last = min(e["ts"] for e in ann), max(e["ts"] + e["dur"] for e in ann)


def inside(t, spans):
    return any(o["ts"] <= t <= o["ts"] + o["dur"] for o in spans)


bwd_first = {l: min(kern[c]["ts"] for c, k in K.items() if k[1] == l and k[2] == "bwd") for l in range(NL)}
bwd_last0 = max(kern[c]["ts"] + kern[c]["dur"] for c, k in K.items() if k[1] == 0 and k[2] == "bwd")
fwd_k = [c for c in kern if c in launch and inside(launch[c]["ts"], fwd_ops)]
w0 = min(kern[c]["ts"] for c in fwd_k)
w1 = max(kern[c]["ts"] + kern[c]["dur"] for c, k in K.items() if k[2] == "bwd")
cls = {}  # corr -> ("layer", l, side) | ("first" | "last" | "all" | "opt", per_mb)
for c, e in kern.items():
    per_mb = w0 <= e["ts"] <= w1
    if c in K:
        cls[c] = ("layer", K[c][1], K[c][2], True)
    elif c in launch and inside(launch[c]["ts"], opt):
        cls[c] = ("opt", per_mb)
    elif c in launch and inside(launch[c]["ts"], fwd_ops):
        cls[c] = ("first" if launch[c]["ts"] < a_first else "last", per_mb)
    elif c in launch and launch[c]["tid"] != ann[0]["tid"] and per_mb:  # backward work outside the layers
        cls[c] = ("last" if e["ts"] < bwd_first[NL - 1] else "first" if e["ts"] >= bwd_last0 else "all", per_mb)
    else:
        cls[c] = ("all", per_mb)
check(sum(1 for v in cls.values() if v[0] == "opt") > 0 and sum(1 for v in cls.values() if v[0] == "first") > 0 and
      sum(1 for v in cls.values() if v[0] == "last") > 0, "the fixture has optimizer, embedding and head kernels")


def stage_of(l, P, V=1):
    return (l // (NL // (P * V))) % P


def chunk_of(l, P, V=1):
    return (l // (NL // (P * V))) // P


def share(p, P, V=1):
    keyed = [g for g in G if g[2]]
    t0, t1 = min(g[0] for g in keyed), max(g[0] for g in keyed)
    mine = 0
    for ts, n, key in G:
        st = stage_of(key[1], P, V) if key else (P - 1 if ts < t0 else 0 if ts > t1 else None)
        mine += n if st == p else 0
    return mine / total_grad


def expected(p, P, M, V=1):
    """corr -> (count, ns each) on stage p."""
    out = {}
    for c, v in cls.items():
        dur = round(kern[c]["dur"] * 1000)
        if v[0] == "layer":
            if stage_of(v[1], P, V) == p:
                out[c] = (M, dur)
        elif v[0] == "opt":
            out[c] = (1, round(dur * share(p, P, V)))
        elif v[0] == "all" or (v[0] == "first" and p == 0) or (v[0] == "last" and p == P - 1):
            out[c] = (M if v[1] else 1, dur)
    return out


def predicted(st):
    """per rank: {corr: [ns...]}, and the compute-stream kernels [(ts, corr, copy)]."""
    out = os.path.join(tmp, "pred.json")
    run("sim", st, "--trace-out", out, "--force")
    d = load(out)
    rank_of = {}
    for e in d["traceEvents"]:
        if e.get("ph") == "M" and e["name"] == "process_name" and " GPU " in e["args"]["name"]:
            rank_of[e["pid"]] = int(e["args"]["name"].split()[1])
    R, S = {}, {}
    for e in d["traceEvents"]:
        if e.get("cat") != "kernel" or "[pipeline" in e["name"]:
            continue
        r, c = rank_of[e["pid"]], e["args"]["correlation"]
        R.setdefault(r, {}).setdefault(c & LOW, []).append(round(e["dur"] * 1000))
        S.setdefault(r, []).append((e["ts"], c & LOW, c >> 40))
    return R, S


def job_ms(*args):
    return json.loads(run(*args, "--json").stdout)["job"]["predicted_ns"] / 1e6


def pp_store(P, M, *more):
    out = os.path.join(tmp, "pp%d_m%d%s.h5" % (P, M, "".join(os.path.basename(a) for a in more).replace("-", "")))
    if not os.path.exists(out):
        run("whatif", store, "--pp", str(P), "--micro-batches", str(M), *SHAPE, *more, "-o", out)
    return out


def interleaved(p, P, V, M):
    """Megatron-LM's interleaved 1F1B (Narayanan et al. 2021, sec. 2.2; its
    schedules.py): forward k runs model chunk (k // P) % V of micro-batch
    (k // (P V)) P + k % P, backward k chunk V - 1 - (k // P) % V; (P - p - 1)
    2 + (V - 1) P warm-up forwards; then one forward, one backward."""
    total = M * V
    w = min((P - p - 1) * 2 + (V - 1) * P, total)

    def mb(k):
        return (k // (P * V)) * P + k % P
    F = [("F", (k // P) % V, mb(k)) for k in range(total)]
    B = [("B", V - 1 - (k // P) % V, mb(k)) for k in range(total)]
    seq, f, b = F[:w], w, 0
    while f < total:
        seq += [F[f], B[b]]
        f, b = f + 1, b + 1
    return seq + B[b:]


def one_f_one_b(p, P, M):
    w, seq, f, b = min(P - 1 - p, M), [], 0, 0
    while f < w:
        seq.append(("F", f))
        f += 1
    while f < M:
        seq += [("F", f), ("B", b)]
        f, b = f + 1, b + 1
    while b < M:
        seq.append(("B", b))
        b += 1
    return seq


# 1. identity
same = os.path.join(tmp, "pp1.h5")
run("whatif", store, "--pp", "1", "-o", same)
rep, sim = job_ms("replay", trace), job_ms("sim", same)
check(rep == sim, "identity: --pp 1 predicts %.6f ms, the replay %.6f ms" % (sim, rep))

# 2. conservation, 3. schedule
busy = {}
for P in (2, 4):
    for M in (1, 4, 8):
        R, S = predicted(pp_store(P, M))
        check(sorted(R) == list(range(P)), "--pp %d --micro-batches %d: %d stages" % (P, M, len(R)))
        for p in range(P):
            want, got = expected(p, P, M), R.get(p, {})
            bad = [c for c in set(want) | set(got)
                   if c not in want or c not in got or len(got[c]) != want[c][0] or
                   any(abs(g - want[c][1]) > 1 for g in got[c])]
            check(not bad, "--pp %d --micro-batches %d stage %d: %d kernels as computed here (%d differ, e.g. %s)"
                  % (P, M, p, sum(w[0] for w in want.values()), len(bad),
                     [(c, want.get(c), got.get(c)) for c in bad[:2]]))
            if M == 1:
                busy[(P, p)] = sum(n for c, (k, n) in want.items() if cls[c][0] != "opt" and cls[c][-1])
            if M >= 4:
                first = {}
                for ts, c, cp in S[p]:
                    v = cls.get(c)
                    if v and v[0] == "layer":
                        key = ("F" if v[2] == "fwd" else "B", cp)
                        first[key] = min(first.get(key, ts), ts)
                order = [k for _, k in sorted((t, k) for k, t in first.items())]
                want_o = one_f_one_b(p, P, M)
                check(order == want_o, "--pp %d --micro-batches %d stage %d runs 1F1B: %s" %
                      (P, M, p, " ".join("%s%d" % k for k in order[:10])))

# 3b. interleaved 1F1B: V = 2 model chunks per GPU (layers 0, 2 on GPU 0,
# layers 1, 3 on GPU 1), the kernels and the order Megatron-LM runs them in
for M in (4, 8):
    P, V = 2, 2
    st = pp_store(P, M, "--schedule", "interleaved:2")
    R, S = predicted(st)
    for p in range(P):
        want, got = expected(p, P, M, V), R.get(p, {})
        bad = [c for c in set(want) | set(got)
               if c not in want or c not in got or len(got[c]) != want[c][0] or
               any(abs(g - want[c][1]) > 1 for g in got[c])]
        check(not bad, "--pp 2 interleaved:2 --micro-batches %d stage %d: %d kernels as computed here (%d differ)"
              % (M, p, sum(w[0] for w in want.values()), len(bad)))
        first = {}
        for ts, c, cp in S[p]:
            v = cls.get(c)
            if v and v[0] == "layer":
                key = ("F" if v[2] == "fwd" else "B", chunk_of(v[1], P, V), cp)
                first[key] = min(first.get(key, ts), ts)
        order = [k for _, k in sorted((t, k) for k, t in first.items())]
        check(order == interleaved(p, P, V, M), "--pp 2 interleaved:2 --micro-batches %d stage %d runs Megatron's "
              "interleaved order: %s" % (M, p, " ".join("%s%d.%d" % k for k in order[:12])))
    ji, j1 = job_ms("sim", st), job_ms("sim", pp_store(P, M))
    check(ji <= j1, "--pp 2 --micro-batches %d: interleaved:2 %.3f ms, no slower than 1F1B's %.3f ms (a bubble of "
          "(P-1)/(V m) for (P-1)/m)" % (M, ji, j1))

# 4. the bubble law
for P in (2, 4):
    j = {M: job_ms("sim", pp_store(P, M)) for M in (1, 8, 16)}
    top = max(busy[(P, p)] for p in range(P)) / 1e6
    slope = (j[16] - j[8]) / 8
    check(abs(slope / top - 1) < 0.03, "--pp %d: each micro-batch more adds %.3f ms, the busiest stage's compute "
          "%.3f ms (%+.2f %%)" % (P, slope, top, 100 * (slope / top - 1)))
    tot = sum(busy[(P, p)] for p in range(P)) / 1e6
    check(j[1] >= tot, "--pp %d --micro-batches 1: %.3f ms, at least every stage's compute in turn (%.3f ms)"
          % (P, j[1], tot))

# 5. options combine
R, _ = predicted(pp_store(2, 2, "--layers", "8"))
per_layer = {l: sum(1 for c, k in K.items() if k[1] == l) for l in range(NL)}
for p in range(2):
    n = sum(len(v) for c, v in R[p].items() if cls.get(c, ("",))[0] == "layer")
    # 8 layers from 4: every layer twice; stage p holds copies of layers 2p, 2p+1
    want = 2 * 2 * (per_layer[2 * p] + per_layer[2 * p + 1])
    check(n == want, "--layers 8 --pp 2 --micro-batches 2 stage %d: %d layer kernels (expected %d)" % (p, n, want))


# 6. data parallelism per stage: DDP's buckets cut from each stage's own
# gradients (DDP's rule: a bucket closes once it holds 1 MiB for the first,
# 25 MiB after), all-reduced once per step in the last micro-batch's backward
def ddp_rule(sizes):
    out, cur, cap = [], 0, 1 << 20
    for n in sizes:
        cur += n
        if cur >= cap:
            out.append(cur)
            cur, cap = 0, 25 << 20
    return out + ([cur] if cur else [])


def stage_grads(p, P):
    keyed = [g for g in G if g[2]]
    t0, t1 = min(g[0] for g in keyed), max(g[0] for g in keyed)
    return [n for ts, n, key in G
            if (stage_of(key[1], P) if key else (P - 1 if ts < t0 else 0 if ts > t1 else -1)) == p]


P, M, D = 2, 4, 4
st = pp_store(P, M, "--dp", str(D))
out = os.path.join(tmp, "pred_dp.json")
sim_dp = json.loads(run("sim", st, "--json").stdout)
run("sim", st, "--trace-out", out, "--force")
d = load(out)
rank_of = {e["pid"]: int(e["args"]["name"].split()[1]) for e in d["traceEvents"]
           if e.get("ph") == "M" and e["name"] == "process_name" and " GPU " in e["args"]["name"]}
ar, bstart = {}, {}
for e in d["traceEvents"]:
    if e.get("cat") != "kernel":
        continue
    r = rank_of[e["pid"]]
    if "AllReduce" in e["name"]:
        ar.setdefault(r, []).append(e)
    else:
        c = e["args"]["correlation"]
        # backward work: launched from autograd's thread, not the main one
        if c & LOW in launch and launch[c & LOW]["tid"] != ann[0]["tid"] and c >> 40 == M - 1:
            bstart[r] = min(bstart.get(r, e["ts"]), e["ts"])
check(len(rank_of) == P * D, "--pp %d --dp %d: %d GPUs" % (P, D, len(rank_of)))
for r in sorted(rank_of.values()):
    p = r // D  # ranks stage by stage (TP 1): stage p holds ranks p D .. p D + D - 1
    want = ddp_rule(stage_grads(p, P))
    got = ar.get(r, [])
    check(len(got) == len(want) and all(e["ts"] >= bstart[r] for e in got),
          "--pp %d --dp %d rank %d (stage %d): %d bucket all-reduces, DDP's rule on the stage's gradients makes %d "
          "for one pass, all in the last micro-batch's backward" % (P, D, r, p, len(got), len(want)))
wins = {}
for rk in sim_dp["ranks"]:
    wins.setdefault(rk["rank"] // D, []).append(rk["window"]["predicted_ns"])
check(all(max(w) == min(w) for w in wins.values()), "--dp %d: the replicas of a stage have one window each: %s"
      % (D, {p: sorted(set(w)) for p, w in wins.items()}))
j1 = job_ms("sim", pp_store(P, M))
check(sim_dp["job"]["predicted_ns"] / 1e6 >= j1, "--dp %d: %.3f ms, no faster than DP 1's %.3f ms"
      % (D, sim_dp["job"]["predicted_ns"] / 1e6, j1))

# a DDP job (the fixture's 2 ranks, buckets traced) cut to DP 1 first: its
# traced buckets (a group of one) are cut again per stage
dd = os.path.join(tmp, "ddp2")
os.mkdir(dd)
for r in (0, 1):
    subprocess.run([sys.executable, maker, os.path.join(dd, "rank%d.json.gz" % r), "--layers", "4", "--steps", "1",
                    "--world", "2", "--rank", str(r)], check=True)
dstore, dcut, dpp = (os.path.join(tmp, x) for x in ("ddp2.h5", "ddp2_dp1.h5", "ddp2_pp.h5"))
run("build", dd, "-o", dstore)
run("whatif", dstore, "--dp", "1", "-o", dcut)
run("whatif", dcut, "--pp", "2", "--dp", "4", "--micro-batches", "4", *SHAPE, "-o", dpp)
jd = json.loads(run("sim", dpp, "--json").stdout)
bk = {rk["rank"]: rk["collectives"].get("allreduce", {}).get("coupled") for rk in jd["ranks"]}
want_bk = {r: len(ddp_rule(stage_grads(r // 4, 2))) for r in range(8)}
jdp, jfx = jd["job"]["predicted_ns"] / 1e6, sim_dp["job"]["predicted_ns"] / 1e6
check(bk == want_bk and abs(jdp / jfx - 1) < 0.01,
      "DDP job cut to DP 1, then --pp 2 --dp 4 --micro-batches 4: buckets per GPU %s (DDP's rule: %s), %.3f ms "
      "against %.3f ms from the DP-1 fixture (its only difference: the traced buckets' launch calls)"
      % (bk, want_bk, jdp, jfx))

if topo:
    P, M, D = 4, 8, 128
    big = json.loads(run("sim", pp_store(P, M, "--dp", str(D), "--topology", topo), "--json").stdout)
    ranks = big["ranks"]
    check(len(ranks) == P * D, "recipe: %d GPUs from one traced GPU" % len(ranks))
    bad, wins = [], {}
    for rk in ranks:
        p, co = rk["rank"] // D, rk["collectives"]
        nt = M * ((p > 0) + (p < P - 1))  # a receive and a send per boundary the stage has, per micro-batch
        if (co.get("allreduce", {}).get("coupled") != len(ddp_rule(stage_grads(p, P))) or
                co.get("send", {}).get("coupled", 0) != nt or co.get("recv", {}).get("coupled", 0) != nt):
            bad.append((rk["rank"], co))
        wins.setdefault(p, set()).add(rk["window"]["predicted_ns"])
    check(not bad, "recipe: every GPU's buckets are its stage's (DDP's rule) and its transfers %d per boundary, all "
          "coupled (%d differ%s)" % (M, len(bad), ", e.g. %s" % (bad[0],) if bad else ""))
    check(all(len(w) == 1 for w in wins.values()), "recipe: the 128 replicas of each stage have one window")
    jb, j1 = big["job"]["predicted_ns"] / 1e6, job_ms("sim", pp_store(P, M))
    check(jb >= j1, "recipe: 512 GPUs take %.3f ms a step, no faster than one pipeline's %.3f ms" % (jb, j1))


# 7. refusals
def refused(src, what, args):
    out = os.path.join(tmp, "refused.h5")
    if os.path.exists(out):
        os.remove(out)
    p = run("whatif", src, *args, "-o", out, ok=False)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    check(p.returncode != 0 and len(lines) == 1 and what in lines[0] and not os.path.exists(out),
          "refused (%s): %s" % (" ".join(args), lines[0] if lines else "no message"))


def fixture(name, *args):
    tr = os.path.join(tmp, name + ".json.gz")
    subprocess.run([sys.executable, maker, tr, "--layers", "4", "--steps", "1", *args], check=True)
    st = os.path.join(tmp, name + ".h5")
    run("build", tr, "-o", st)
    return st


refused(fixture("ddp", "--world", "2"), "data-parallel training step", ["--pp", "2"] + SHAPE)
refused(fixture("accum", "--accum", "2"), "gradient accumulation", ["--pp", "2"] + SHAPE)
refused(store, "not divisible by PP", ["--pp", "2", "--schedule", "interleaved:2", "--micro-batches", "3"] + SHAPE)
refused(store, "activations", ["--pp", "2"])
refused(store, "not divisible", ["--pp", "3"] + SHAPE)

T_.done("train_pipe")
