#!/usr/bin/env python3
"""hostile.py LUMOSIM EXAMPLE_TRACE [RUNS] [SEED]

Issue 40's hostile-input harness: every command that reads a user's file,
given that file damaged, with a fixed seed and a bounded count. The clean
inputs are made here from EXAMPLE_TRACE (a Kineto trace): the trace,
gzipped and plain, its graph store (build), a synthesized job's store
(synth), a result archive (sim -o), a GPU file (calibrate -o) and a model
file. Each run takes one command and one input damaged one way:

  flip    1 to 16 bytes flipped at seeded offsets
  trunc   cut at a seeded offset
  zero    a seeded 4 KiB block zeroed
  empty   an empty file
  dir     a directory of that name
  fifo    a named pipe of that name (nobody writes it)
  dev     /dev/null
  ulimit  the clean input, under 48 MiB of address space (ulimit -v)
  schema  a store or archive with one seeded dataset removed, renamed, of
          the wrong type or of the wrong shape (h5poke --schema; $H5POKE)
  rodir   the clean input, its outputs in a directory the user cannot
          write (chmod 0555; as root, a read-only tmpfs)
  full    the clean input, its outputs on a full file system (a full
          tmpfs, as root where mount works; else stdout is /dev/full)

An axis the environment cannot give is left out with the reason printed.
After the seeded runs, one more: `sim` of a 16,384-GPU synthesized store
under 128 MiB of address space, which must be refused like the rest.

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

H5POKE = os.environ.get("H5POKE")

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
run0("calibrate", "trace.json.gz", "-o", "gpu.json")
with open(os.path.join(clean, "model.json"), "w") as f:  # a 2-layer toy (models_cli.sh's)
    f.write('{"layers": 2, "hidden": 512, "ffn": 1376, "heads": 8, "kv_heads": 2, "head_dim": 64, "seq": 256, '
            '"vocab": 1024, "mlp": "swiglu", "norm": "rmsnorm", "rope": true, "tie_embeddings": false, "bias": false}\n')

SYNTH = ["synth", "--tp", "2", "--pp", "1", "--dp", "1", "--micro-batch", "1", "--global-batch", "2"]
SYNTH_MODEL = ["--model", "gpt3-15b", "--layers", "1"]
SEARCH = ["search", "--gpus", "2", "--global-batch", "2", "--top", "1"]
# (input, command): IN the damaged input, OUT a fresh output path, DIR a
# fresh directory, TOY the clean model.json


def argv_of(cmd, path, out):
    sub = {"IN": path, "DIR": out + "-dir", "TOY": os.path.join(clean, "model.json")}
    return [L] + [sub.get(a, out + a[3:] if a.startswith("OUT") else a) for a in cmd]
COMMANDS = {
    "trace.json.gz": [["replay", "IN"], ["replay", "IN", "--json"], ["build", "IN", "-o", "OUT.h5"],
                      ["report", "IN", "--html", "OUT.html"], ["ablate", "IN"],
                      ["calibrate", "IN", "-o", "OUT.json"]],
    "trace.json": [["replay", "IN"], ["build", "IN", "-o", "OUT.h5"], ["ablate", "IN", "--json"],
                   ["calibrate", "IN", "-o", "OUT.json"]],
    "store.h5": [["sim", "IN"], ["sim", "IN", "-o", "OUT.h5"], ["info", "IN"], ["whatif", "IN", "--layers", "1", "-o",
                                                                                   "OUT.h5"],
                 ["export", "--chakra", "DIR", "IN"]],
    "job.h5": [["sim", "IN", "--json"], ["info", "IN"], ["whatif", "IN", "--dp", "2", "-o", "OUT.h5"],
               ["report", "IN", "--html", "OUT.html"], ["search", "--from", "IN", "--tp", "1,2", "--pp", "1,2",
                                                       "--dp", "1", "-o", "OUT.h5"]],
    "res.h5": [["info", "IN"], ["collect", "IN", "-o", "OUT.csv"], ["report", "IN", "--html", "OUT.html"],
               ["report", "IN", "--html", "OUT.html", "--csv", "OUT.csv"]],
    "gpu.json": [SYNTH + SYNTH_MODEL + ["--gpu", "IN", "-o", "OUT.h5"],
                 SEARCH + ["--model", "TOY", "--gpu", "IN"]],
    "model.json": [SYNTH + ["--model", "IN", "-o", "OUT.h5"], SEARCH + ["--model", "IN", "--json"]],
}
KINDS = ["flip", "flip", "flip", "trunc", "trunc", "zero", "empty", "dir", "fifo", "dev"]
skipped = []
if not os.environ.get("HOSTILE_NO_ULIMIT"):  # (the sanitizers reserve more address space than any limit)
    KINDS.append("ulimit")
else:
    skipped.append("ulimit (HOSTILE_NO_ULIMIT: the sanitizers reserve more address space than any limit)")


def try_mount(d, opts):
    """A tmpfs at d; False where mount is not permitted (no root, a container)."""
    return subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", d], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def umount(d):
    subprocess.run(["umount", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def probe():
    """Which of schema, rodir and full this environment can give, and how."""
    p = os.path.join(tmp, "probe")
    os.mkdir(p)
    if H5POKE and os.access(H5POKE, os.X_OK):
        KINDS.extend(["schema", "schema"])
    else:
        skipped.append("schema (no h5poke helper: set H5POKE)")
    os.chmod(p, 0o555)
    try:
        open(os.path.join(p, "x"), "w").close()
        writable = True
    except OSError:
        writable = False
    os.chmod(p, 0o755)
    ro = "chmod" if not writable else None
    if writable:  # root: modes are not enforced; a read-only tmpfs is
        ro = "mount" if try_mount(p, "ro,size=64k") else None
        if ro:
            umount(p)
        else:
            skipped.append("rodir (running as root, where chmod 0555 is not enforced, and mount is not permitted)")
    if ro:
        KINDS.append("rodir")
    full = "mount" if try_mount(p, "size=64k") else "devfull"
    if full == "mount":
        umount(p)
    else:
        skipped.append("full as a full file system (mount is not permitted): stdout to /dev/full instead")
    KINDS.append("full")
    return ro, full


RO, FULL = probe()
BIG_MIB = 128
SCHEMA_OPS = ["unlink", "rename", "retype", "reshape"]


def preflight():
    """Every command reads its clean input (exit 0): the harness's command
    lines are right, so a refusal below is the damage's."""
    for name, cmds in COMMANDS.items():
        for cmd in cmds:
            w = tempfile.mkdtemp(dir=tmp)
            out = os.path.join(w, "out")
            argv = argv_of(cmd, os.path.join(clean, name), out)
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


def limit_as(mib):
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))


def datasets(name):
    r = subprocess.run([H5POKE, os.path.join(clean, name), "--schema", "list", "/"], stdout=subprocess.PIPE,
                       check=True)
    return sorted(r.stdout.decode().split())


def mutate(rng, name, dst):
    """A copy of clean NAME with one dataset removed, renamed, retyped or reshaped."""
    shutil.copy(os.path.join(clean, name), dst)
    ds = rng.choice(DATASETS[name])
    op = rng.choice(SCHEMA_OPS)
    subprocess.run([H5POKE, dst, "--schema", op, ds], check=True)
    return "%s %s" % (op, ds)


def outdir(kind, w):
    """The directory a run writes its outputs in: w, or for rodir and full
    a read-only or full one (its name is what a message must then name)."""
    d = os.path.join(w, "o-" + kind)
    os.mkdir(d)
    if kind == "rodir" and RO == "chmod":
        os.chmod(d, 0o555)
    elif kind == "rodir":
        try_mount(d, "ro,size=64k") or sys.exit("hostile: FAIL: the read-only tmpfs mounted once, not now")
    elif kind == "full":
        try_mount(d, "size=64k") or sys.exit("hostile: FAIL: the tmpfs mounted once, not now")
        try:  # fill it: ENOSPC ends the loop
            with open(os.path.join(d, "filler"), "wb") as f:
                while True:
                    f.write(bytes(4096))
                    f.flush()
        except OSError:
            pass
    return d


def writes(cmd):
    return any("OUT" in a or a == "DIR" for a in cmd)


preflight()
rng = random.Random(SEED)
refused = 0
inputs = sorted(COMMANDS)
clean_sums = {n: sha(os.path.join(clean, n)) for n in os.listdir(clean)}
DATASETS = {n: datasets(n) for n in inputs if n.endswith(".h5")} if "schema" in KINDS else {}
counts = {"crash": 0, "hang": 0, "changed": 0, "unclear": 0, "partial": 0}
bad = []
by_kind = {}


def judge(what, argv, cmd, kind, path, user, before, w, o, timeout=120, **kw):
    """Runs argv and counts what went wrong; True when it was refused."""
    try:
        r = subprocess.run(argv, cwd=w, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        counts["hang"] += 1
        bad.append("hang: " + what)
        return False
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
        return False
    lines = [x for x in err.split("\n") if x]
    # what the line must name: the damaged input, or the output (its
    # directory) that cannot be written, or stdout when that is /dev/full
    names = [os.path.basename(user)]
    if kind in ("rodir", "full"):
        names = [os.path.basename(o)] if o != w else ["stdout", "standard output"]
    # --json: the error as one JSON object (docs/report-json.md), its "file" the user's
    one = len(lines) == 1 and (lines[0].startswith("lumosim: error: ") or
                               ("--json" in cmd and lines[0].startswith('{"error":')))
    if not one or (not any(n in lines[0] for n in names) and kind != "ulimit"):
        counts["unclear"] += 1
        bad.append("unclear: %s: %r" % (what, err[:400]))
    left = [f for f in os.listdir(o) if f != "filler" and (o != w or f.startswith("out"))]
    if left:
        counts["partial"] += 1
        bad.append("partial output %s: %s" % (left, what))
    return True


for k in range(RUNS):
    name = inputs[k % len(inputs)]
    cmd = COMMANDS[name][(k // len(inputs)) % len(COMMANDS[name])]
    # schema damages HDF5 files only; a read-only directory needs an output
    kind = rng.choice([x for x in KINDS if (x != "schema" or name.endswith(".h5")) and (x != "rodir" or writes(cmd))])
    w = os.path.join(tmp, "w%d" % k)
    os.mkdir(w)
    user = os.path.join(w, "in-" + name)  # the name the user gave
    note = ""
    if kind in ("ulimit", "rodir", "full"):
        path = os.path.join(clean, name)
    elif kind == "schema":
        path = user
        note = " " + mutate(rng, name, user)
    else:
        path = damage(rng, kind, os.path.join(clean, name), user)
    if kind in ("ulimit", "dev", "rodir", "full"):
        user = path
    before = sha(path) if os.path.isfile(path) and not stat.S_ISFIFO(os.stat(path).st_mode) else None
    o = outdir(kind, w) if kind == "rodir" or (kind == "full" and FULL == "mount" and writes(cmd)) else w
    mounted = o != w and (kind == "full" or RO == "mount")
    out = os.path.join(o, "out")
    argv = argv_of(cmd, path, out)
    what = "run %d: %s on %s (%s%s)" % (k, " ".join(cmd), name, kind, note)
    stdout = subprocess.DEVNULL
    if kind == "full" and o == w:
        stdout = open("/dev/full", "wb")
    by_kind[kind] = by_kind.get(kind, 0) + 1
    try:
        refused += judge(what, argv, cmd, kind, path, user, before, w, o, stdout=stdout,
                         preexec_fn=limit_as(48) if kind == "ulimit" else None)
    finally:
        if stdout is not subprocess.DEVNULL:
            stdout.close()
        if mounted:
            umount(o)
        elif o != w:
            os.chmod(o, 0o755)
    shutil.rmtree(w, ignore_errors=True)

# A large store under an address-space limit: 16,384 GPUs of a 1-layer
# model, whose reading needs more than the limit (docs/reliability.md)
big_runs = 0
if "ulimit" in KINDS:
    run0("synth", "--model", "gpt3-15b", "--layers", "1", "--tp", "1", "--pp", "1", "--dp", "16384", "--micro-batch",
         "1", "--global-batch", "16384", "--force-large", "-o", "big.h5")
    clean_sums["big.h5"] = sha(os.path.join(clean, "big.h5"))
    w = os.path.join(tmp, "wbig")
    os.mkdir(w)
    big = os.path.join(clean, "big.h5")
    argv = [L, "sim", big, "-o", os.path.join(w, "out.h5")]
    big_runs = 1
    if not judge("sim of the 16,384-GPU big.h5 under %d MiB" % BIG_MIB, argv, ["sim"], "big", big, big, sha(big), w, w,
                 timeout=300, stdout=subprocess.DEVNULL, preexec_fn=limit_as(BIG_MIB)):
        counts["unclear"] += 1
        bad.append("big.h5 under %d MiB was read: the limit no longer tests a failed read" % BIG_MIB)
    shutil.rmtree(w, ignore_errors=True)
else:
    skipped.append("the large store under ulimit (HOSTILE_NO_ULIMIT)")

print("hostile: %d runs + %d large (seed %d; %d commands on %d inputs; %d refused, %d read; by axis %s): %s"
      % (RUNS, big_runs, SEED, sum(len(c) for c in COMMANDS.values()), len(COMMANDS), refused,
         RUNS + big_runs - refused, " ".join("%s %d" % kv for kv in sorted(by_kind.items())),
         ", ".join("%d %s" % (v, n) for n, v in counts.items())))
for s in skipped:
    print("  left out: " + s)
for b in bad[:40]:
    print("  " + b)
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if any(counts.values()) else 0)
