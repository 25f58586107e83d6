#!/usr/bin/env python3
"""hostile.py LUMOSIM EXAMPLE_TRACE [RUNS] [SEED]

Issue 40's hostile-input harness: every command that reads a user's file,
given that file damaged, with a fixed seed and a bounded count. The clean
inputs are made here from EXAMPLE_TRACE (a Kineto trace): the trace,
gzipped and plain, its graph store (build), a synthesized job's store
(synth) and a result archive (sim -o). Each run takes one command and one
input damaged one way:

  flip    1 to 16 bytes flipped at seeded offsets
  trunc   cut at a seeded offset
  zero    a seeded 4 KiB block zeroed
  empty   an empty file
  dir     a directory of that name
  fifo    a named pipe of that name (nobody writes it)
  dev     /dev/null
  ulimit  the clean input, under 48 MiB of address space (ulimit -v)

and counts, over all runs (the goal is 0 of each):

  crash    killed by a signal (SIGSEGV, SIGABRT: a sanitizer's report too)
  hang     still running after 120 s (a bounded refusal comes at once)
  changed  an input file not byte-identical afterwards (sha256)
  unclear  a failure whose stderr is not one "lumosim: error:" line, or
           whose line does not name the file the user gave (its name)
  partial  a failure that left its output file (or a temporary) behind

A damaged input may still be read (a flipped byte in a name, a trailing
pad): exit 0 is fine. RUNS (default 1000) and SEED (default 1) size it;
the nightly setting is RUNS=3000 (docs/reliability.md). Exit 1 when any
count is not 0, with every offending run listed."""
import hashlib
import os
import random
import resource
import shutil
import stat
import subprocess
import sys
import tempfile

L = sys.argv[1]
EXAMPLE = sys.argv[2]
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else int(os.environ.get("HOSTILE_RUNS", "1000"))
SEED = int(sys.argv[4]) if len(sys.argv) > 4 else int(os.environ.get("HOSTILE_SEED", "1"))

tmp = tempfile.mkdtemp(prefix="lsim-hostile.")
clean = os.path.join(tmp, "clean")
os.mkdir(clean)


def run0(*args):
    r = subprocess.run([L, *args], cwd=clean, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
    if r.returncode:
        sys.exit("hostile: FAIL: preparing: lumosim %s: %s" % (" ".join(args), r.stderr.decode(errors="replace")))


shutil.copy(EXAMPLE, os.path.join(clean, "trace.json.gz"))
subprocess.run("gzip -dc trace.json.gz > trace.json", shell=True, cwd=clean, check=True)
run0("build", "trace.json.gz", "-o", "store.h5")
run0("synth", "--model", "gpt3-15b", "--layers", "2", "--tp", "2", "--pp", "2", "--dp", "1", "--micro-batch", "1",
     "--global-batch", "2", "-o", "job.h5")
run0("sim", "job.h5", "-o", "res.h5")

# (input, command): IN the damaged input, OUT a fresh output path, DIR a fresh directory
COMMANDS = {
    "trace.json.gz": [["replay", "IN"], ["replay", "IN", "--json"], ["build", "IN", "-o", "OUT.h5"],
                      ["report", "IN", "--html", "OUT.html"]],
    "trace.json": [["replay", "IN"], ["build", "IN", "-o", "OUT.h5"]],
    "store.h5": [["sim", "IN"], ["sim", "IN", "-o", "OUT.h5"], ["info", "IN"], ["whatif", "IN", "--layers", "1", "-o",
                                                                                   "OUT.h5"],
                 ["export", "--chakra", "DIR", "IN"]],
    "job.h5": [["sim", "IN", "--json"], ["info", "IN"], ["whatif", "IN", "--dp", "2", "-o", "OUT.h5"],
               ["report", "IN", "--html", "OUT.html"]],
    "res.h5": [["info", "IN"], ["collect", "IN", "-o", "OUT.csv"], ["report", "IN", "--html", "OUT.html"],
               ["report", "IN", "--html", "OUT.html", "--csv", "OUT.csv"]],
}
KINDS = ["flip", "flip", "flip", "trunc", "trunc", "zero", "empty", "dir", "fifo", "dev"]
if not os.environ.get("HOSTILE_NO_ULIMIT"):  # (the sanitizers reserve more address space than any limit)
    KINDS.append("ulimit")


def preflight():
    """Every command reads its clean input (exit 0): the harness's command
    lines are right, so a refusal below is the damage's."""
    for name, cmds in COMMANDS.items():
        for cmd in cmds:
            w = tempfile.mkdtemp(dir=tmp)
            out = os.path.join(w, "out")
            argv = [L] + [a.replace("IN", os.path.join(clean, name)).replace("OUT", out).replace("DIR", out + "-dir")
                          for a in cmd]
            r = subprocess.run(argv, cwd=w, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
            if r.returncode:
                sys.exit("hostile: FAIL: %s on the clean %s: %s" % (" ".join(cmd), name, r.stderr.decode(errors="replace")))
            shutil.rmtree(w)


def sha(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def damage(rng, kind, src, dst):
    """dst made from clean src; returns the path the command gets."""
    if kind == "dev":
        return "/dev/null"
    if kind == "dir":
        os.mkdir(dst)
        return dst
    if kind == "fifo":
        os.mkfifo(dst)
        return dst
    if kind == "empty":
        open(dst, "wb").close()
        return dst
    data = bytearray(open(src, "rb").read())
    if kind == "flip":
        for _ in range(rng.randint(1, 16)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind == "trunc":
        data = data[:rng.randrange(len(data))]
    elif kind == "zero":
        i = rng.randrange(len(data))
        data[i:i + 4096] = bytes(len(data[i:i + 4096]))
    with open(dst, "wb") as f:
        f.write(data)
    return dst


def limit_as():
    resource.setrlimit(resource.RLIMIT_AS, (48 << 20, 48 << 20))


preflight()
rng = random.Random(SEED)
refused = 0
inputs = sorted(COMMANDS)
clean_sums = {n: sha(os.path.join(clean, n)) for n in os.listdir(clean)}
counts = {"crash": 0, "hang": 0, "changed": 0, "unclear": 0, "partial": 0}
bad = []
for k in range(RUNS):
    name = inputs[k % len(inputs)]
    cmd = COMMANDS[name][(k // len(inputs)) % len(COMMANDS[name])]
    kind = rng.choice(KINDS)
    w = os.path.join(tmp, "w%d" % k)
    os.mkdir(w)
    user = os.path.join(w, "in-" + name)  # the name the user gave
    path = os.path.join(clean, name) if kind == "ulimit" else damage(rng, kind, os.path.join(clean, name), user)
    if kind in ("ulimit", "dev"):
        user = path
    before = sha(path) if os.path.isfile(path) and not stat.S_ISFIFO(os.stat(path).st_mode) else None
    out = os.path.join(w, "out")
    argv = [L] + [a.replace("IN", path).replace("OUT", out).replace("DIR", out + "-dir") for a in cmd]
    what = "run %d: %s on %s (%s)" % (k, " ".join(cmd), name, kind)
    try:
        r = subprocess.run(argv, cwd=w, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=120, preexec_fn=limit_as if kind == "ulimit" else None)
    except subprocess.TimeoutExpired:
        counts["hang"] += 1
        bad.append("hang: " + what)
        continue
    err = r.stderr.decode(errors="replace")
    rc = r.returncode
    if rc < 0 or rc >= 128 or "Sanitizer" in err or "runtime error:" in err:
        counts["crash"] += 1
        bad.append("crash (exit %d): %s: %s" % (rc, what, err[-400:]))
    if before is not None and (not os.path.isfile(path) or sha(path) != before):
        counts["changed"] += 1
        bad.append("changed input: " + what)
    for n, s in clean_sums.items():
        if sha(os.path.join(clean, n)) != s:
            sys.exit("hostile: FAIL: %s changed the clean input %s" % (what, n))
    if rc == 0 or rc >= 128 or rc < 0:
        continue
    refused += 1
    lines = [x for x in err.split("\n") if x]
    base = os.path.basename(user)
    # --json: the error as one JSON object (docs/report-json.md), its "file" the user's
    one = len(lines) == 1 and (lines[0].startswith("lumosim: error: ") or
                               ("--json" in cmd and lines[0].startswith('{"error":')))
    if not one or (base not in lines[0] and kind != "ulimit"):
        counts["unclear"] += 1
        bad.append("unclear: %s: %r" % (what, err[:400]))
    left = [f for f in os.listdir(w) if f.startswith("out")]
    if left:
        counts["partial"] += 1
        bad.append("partial output %s: %s" % (left, what))
    shutil.rmtree(w, ignore_errors=True)

print("hostile: %d runs (seed %d; %d refused, %d read): %s" % (RUNS, SEED, refused, RUNS - refused,
                                                            ", ".join("%d %s" % (v, n) for n, v in counts.items())))
for b in bad[:40]:
    print("  " + b)
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if any(counts.values()) else 0)
