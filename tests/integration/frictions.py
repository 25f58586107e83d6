#!/usr/bin/env python3
"""frictions.py LUMOSIM: small frictions of the CLI (issue 39).

- `-o=FILE` writes FILE (not a file named "=FILE"), as `--output=FILE` does;
- a closed pipe on standard output (the reader gone, as in
  `lumosim help sim | head -1`) ends the command quietly: nothing on stderr,
  killed by SIGPIPE as coreutils are; made deterministic by closing the
  pipe's read end before lumosim starts;
- a full disk on standard output (/dev/full) still fails with one line.
"""
import os
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

    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            p = subprocess.run([lumosim, "help", "sim"], stdout=full, stderr=subprocess.PIPE)
        err = p.stderr.decode("utf-8", "replace").strip().split("\n")
        if p.returncode != 1 or len(err) != 1 or "standard output" not in err[0]:
            fails.append("help sim > /dev/full: exit %d, stderr %r (expected 1 and one line)" % (p.returncode, err))
for f in fails:
    print("FAIL: " + f)
print("ok" if not fails else "%d failed" % len(fails))
sys.exit(1 if fails else 0)
