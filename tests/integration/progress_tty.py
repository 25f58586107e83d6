#!/usr/bin/env python3
"""progress_tty.py: progress inside a job's long phases, on a terminal only
(issue 39: "sim of 4,096 GPUs: 40 s on one line").

`lumosim sim` of a synthesized 128-GPU job run under a pseudo-terminal
names the job's phases as it enters them (matching collectives, setting up
the engines, simulating) and counts, inside the store's load, the columns
read and the GPUs checked, inside the match, the GPUs whose
collectives are listed and the entries paired, inside the run the nodes
simulated, and the GPUs measured, ending with "128 of 128", each line drawn over
the last and the line cleared at the end; with -o it names each part of the
archive's write as it starts ("graphs (6 of 6)"). With stderr not a terminal, or
with --stats, none of it is written. Environment: LUMOSIM."""
import os
import pty
import re
import subprocess
import sys
import tempfile

L = os.environ["LUMOSIM"]

# a machine without pseudo-terminals (a container without /dev/ptmx) cannot
# run this test: skipped, not failed
try:
    _m, _s = pty.openpty()
    os.close(_m)
    os.close(_s)
except OSError as e:
    print("SKIP: no pseudo-terminal here (%s)" % e)
    sys.exit(77)


def fail(msg):
    print("progress_tty: FAIL: " + msg)
    sys.exit(1)


def on_tty(args):
    """Everything the command writes to its terminal, and its exit status."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(L, [L] + args)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, st = os.waitpid(pid, 0)
    os.close(fd)
    code = os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)
    return out.decode("utf-8", "replace"), code


with tempfile.TemporaryDirectory() as d:
    job = os.path.join(d, "job.h5")
    subprocess.run([L, "synth", "--model", "gpt3-15b", "--layers", "4", "--tp", "8", "--pp", "4", "--dp", "4",
                    "--micro-batch", "1", "--global-batch", "16", "-o", job], check=True, stdout=subprocess.DEVNULL)
    out, st = on_tty(["sim", job])
    if st != 0:
        fail("sim on a terminal exited %d: %s" % (st, out[-500:]))
    for want in ("lumosim: the job: matching collectives across GPUs", "lumosim: the job: simulating",
                 "lumosim: the job: listing collective kernels, 128 of 128",
                 "lumosim: the job: measuring GPUs, 128 of 128"):
        if want not in out:
            fail("the terminal never showed '%s'" % want)
    # inside the match: the entries paired, counted to their total (every
    # GPU's collectives: more entries than GPUs)
    m = re.search(r"the job: pairing collective kernels, (\d+) of (\d+)\r", out)
    if not m or m.group(1) != m.group(2) or int(m.group(2)) <= 128:
        fail("the terminal never showed the entries paired to their total: %r" % (m.group(0) if m else None))
    # inside the store's load: its columns read, then its GPUs checked,
    # each counted to its total
    cols = re.findall(re.escape(job) + r": reading columns, (\d+) of (\d+)\r", out)
    if not cols or cols[-1][0] != cols[-1][1] or int(cols[-1][1]) < 10:
        fail("the terminal never showed the store's columns read to their total: %r" % (cols[-1:],))
    if job + ": checking GPUs, 128 of 128" not in out:
        fail("the terminal never showed the store's 128 GPUs checked")
    # inside the run: the nodes simulated, counted to their total (the
    # simulated GPUs' nodes: thousands a GPU)
    sims = re.findall(r"the job: simulating, (\d+) of (\d+)\r", out)
    if not sims or sims[-1][0] != sims[-1][1] or int(sims[-1][1]) < 1000:
        fail("the terminal never showed the nodes simulated to their total: %r" % (sims[-1:],))
    if "the job: setting up the engines" not in out:
        fail("the terminal never named the engines' set-up")
    last = out.rfind("measuring GPUs, 128 of 128")
    if "\r\x1b[K" not in out[last:]:
        fail("the last progress line is not cleared")
    shown = out.count("measuring GPUs, ")
    if shown > 128:
        fail("%d measuring lines for 128 GPUs" % shown)
    # the archive's write, part by part (the graphs embedded: 6 parts)
    res = os.path.join(d, "res.h5")
    out, st = on_tty(["sim", job, "-o", res])
    if st != 0:
        fail("sim -o on a terminal exited %d: %s" % (st, out[-500:]))
    for k, part in enumerate(("sharing equal rows", "GPUs", "iterations", "node rows", "kernels", "graphs")):
        want = "lumosim: sim: writing %s: %s (%d of 6)" % (res, part, k + 1)
        if want not in out:
            fail("the terminal never showed '%s'" % want)
    # the same run without a terminal, and with --stats: no progress
    p = subprocess.run([L, "sim", job], capture_output=True, text=True)
    if p.returncode != 0 or "measuring GPUs" in p.stderr or "\x1b[K" in p.stderr:
        fail("without a terminal: exit %d, stderr %r" % (p.returncode, p.stderr[:300]))
    out, st = on_tty(["sim", "--stats", job])
    if st != 0 or "measuring GPUs" in out:
        fail("--stats on a terminal: exit %d, progress lines among the stats" % st)
print("progress_tty: ok (%d progress lines of the job's measuring)" % shown)
