#!/usr/bin/env python3
"""frictions.py LUMOSIM: small frictions of the CLI (issue 39).

- `-o=FILE` writes FILE (not a file named "=FILE"), as `--output=FILE` does;
- a closed pipe on standard output (the reader gone, as in
  `lumosim help sim | head -1`) ends the command quietly: nothing on stderr,
  killed by SIGPIPE as coreutils are; made deterministic by closing the
  pipe's read end before lumosim starts;
- a full disk on standard output (/dev/full) still fails with one line;
- report, which refuses mpirun, never advises mpirun when an archive or a
  store is over LUMOSIM_MEM_LIMIT: one line, exit 1, no "mpirun -np".
"""
import os
import re
import signal
import subprocess
import sys
import tempfile

lumosim = sys.argv[1]
fails = []
with tempfile.TemporaryDirectory() as d:
    p = subprocess.run([lumosim, "synth", "--model", "gpt3-15b", "--layers", "4", "--tp", "2", "--pp", "2",
                        "--dp", "1", "--micro-batch", "1", "--global-batch", "2", "-o=j.h5"],
                       cwd=d, capture_output=True)
    names = sorted(os.listdir(d))
    if p.returncode or names != ["j.h5"]:
        fails.append("-o=j.h5: exit %d, wrote %s (expected j.h5): %s" % (p.returncode, names, p.stderr[-300:]))

    r, w = os.pipe()
    os.close(r)
    p = subprocess.run([lumosim, "help", "sim"], stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    if p.returncode != -signal.SIGPIPE or p.stderr:
        fails.append("help sim into a closed pipe: exit %d (expected killed by SIGPIPE), stderr %r"
                     % (p.returncode, p.stderr[:300]))

    # a command that checks its own writes (replay's report) ends as quietly
    r, w = os.pipe()
    os.close(r)
    ex = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "megatron_tp8_rank0.json.gz")
    p = subprocess.run([lumosim, "replay", ex], stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    if p.returncode != -signal.SIGPIPE or p.stderr:
        fails.append("replay into a closed pipe: exit %d (expected killed by SIGPIPE), stderr %r"
                     % (p.returncode, p.stderr[:300]))

    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            p = subprocess.run([lumosim, "help", "sim"], stdout=full, stderr=subprocess.PIPE)
        err = p.stderr.decode("utf-8", "replace").strip().split("\n")
        if p.returncode != 1 or len(err) != 1 or "standard output" not in err[0]:
            fails.append("help sim > /dev/full: exit %d, stderr %r (expected 1 and one line)" % (p.returncode, err))
    p = subprocess.run([lumosim, "sim", "j.h5", "-o", "r.h5"], cwd=d, capture_output=True)
    if p.returncode:
        fails.append("sim j.h5: exit %d: %s" % (p.returncode, p.stderr[-300:]))
    for inp in ("r.h5", "j.h5"):
        # a limit of 0.6 x the need, where 2 MPI ranks would fit (a 1 KiB
        # limit fits no K, and nothing would be advised anyway)
        err = ["no need read"]
        for lim in ("1K", None):
            if lim is None:
                m = re.search(r"need about ([0-9.]+) (MiB|KiB|GiB)", err[0])
                if not m:
                    break
                lim = "%dK" % (float(m.group(1)) * {"KiB": 1, "MiB": 1024, "GiB": 1048576}[m.group(2)] * 0.6)
            p = subprocess.run([lumosim, "report", inp, "--html", "x.html"], cwd=d, capture_output=True,
                               env=dict(os.environ, LUMOSIM_MEM_LIMIT=lim))
            err = p.stderr.decode("utf-8", "replace").strip().split("\n")
        if p.returncode != 1 or len(err) != 1 or "LUMOSIM_MEM_LIMIT" not in err[0] or "mpirun -np" in err[0] \
                or "no K fits" in err[0] or os.path.exists(os.path.join(d, "x.html")):
            fails.append("report %s over the limit: exit %d, stderr %r (expected 1, one line, no mpirun advice)"
                         % (inp, p.returncode, err))
for f in fails:
    print("FAIL: " + f)
print("ok" if not fails else "%d failed" % len(fails))
sys.exit(1 if fails else 0)
