#!/usr/bin/env python3
"""Documented commands are tests (issue 39).

doc_commands.py --lumosim BIN --source-dir DIR [--shared TRACES] [--only FILE[:LINE]]

Every fenced code block of README.md and docs/*.md whose language is sh,
bash, shell, console or none, and which holds a lumosim command (a line
that, after an optional "$ " prompt and VAR=value assignments, starts with
lumosim, mpirun, srun or sbatch), is run as a bash script (-e -o pipefail:
a command that fails, also inside a pipe, fails the block) in a scratch
directory of its own, with `lumosim` on PATH being the binary under test.
A console block (lines with a "$ " prompt) runs its prompt lines only; the
others are its output.

The scratch directory holds what the documents name as inputs: examples/,
data/, python/ and slurm/ of the source tree, traces/ (the bundled example
trace, standing for "a directory of traces") and ../shared/traces (the shared
real traces; a block that names them is skipped when they are absent). A
block makes everything else it reads (job.h5, result.h5 ...) itself.

A block that is an illustration, not a command (a synopsis with
placeholders, a job too large for a test, an mpirun of many ranks, a Slurm
submission) is marked in the document, either by a `text` fence or by the
line right before its fence:

    <!-- not-a-test: why -->

The test prints every block run or skipped and the counts; it fails when a
block fails, when a marker has no reason or marks no command block, or when
no block was run.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

RUN_LANGS = {"", "sh", "bash", "shell", "console"}
COMMAND = re.compile(r"^\s*(\$\s+)?(\w+=\S*\s+)*(\S*/)?(lumosim|mpirun|srun|sbatch)(\s|$)")
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
MARKER = re.compile(r"^\s*<!--\s*not-a-test\s*(:\s*(.*?))?\s*-->\s*$")


def blocks_of(path):
    """(first line number, language, body lines, marker reason or None, marker line or 0)"""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2), i
        i += 1
        body = []
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        mk = MARKER.match(lines[j]) if j >= 0 else None
        out.append((start + 1, lang, body, (mk.group(2) or "") if mk else None, j + 1 if mk else 0))
    # a marker that is not right before a fence marks nothing
    marked = {b[4] for b in out if b[4]}
    stray = [n + 1 for n, l in enumerate(lines) if MARKER.match(l) and n + 1 not in marked]
    return out, stray


def script_of(body):
    """The commands of a block: a console block's prompt lines (with their
    continuation lines), or the whole block."""
    if not any(re.match(r"^\s*\$\s", l) for l in body):
        return "\n".join(body) + "\n"
    cmds, cont = [], False
    for l in body:
        if cont or re.match(r"^\s*\$\s", l):
            cmds.append(re.sub(r"^\s*\$\s", "", l) if not cont else l)
            cont = l.rstrip().endswith("\\")
    return "\n".join(cmds) + "\n"


def scratch(root, n, src, shared, example):
    """A directory for block n, with the inputs the documents name."""
    d = os.path.join(root, "w%d" % n)
    os.makedirs(d)
    for name in ("examples", "data", "python", "slurm"):
        os.symlink(os.path.join(src, name), os.path.join(d, name))
    os.makedirs(os.path.join(d, "traces"))
    os.symlink(example, os.path.join(d, "traces", os.path.basename(example)))
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lumosim", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--shared", default="")
    ap.add_argument("--only", default="", help="FILE or FILE:LINE (relative to the source dir)")
    a = ap.parse_args()
    src = os.path.abspath(a.source_dir)
    lumosim = os.path.abspath(a.lumosim)
    shared = os.path.abspath(a.shared) if a.shared and os.path.isdir(a.shared) else ""
    example = os.path.join(src, "examples", "megatron_tp8_rank0.json.gz")
    docs = ["README.md"] + sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md")))

    root = tempfile.mkdtemp(prefix="lsim_doc_")
    bindir = os.path.join(root, "bin")
    os.makedirs(bindir)
    os.symlink(lumosim, os.path.join(bindir, "lumosim"))
    if shared:
        os.makedirs(os.path.join(root, "shared"))
        os.symlink(shared, os.path.join(root, "shared", "traces"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), LC_ALL="C")
    env.pop("LUMOSIM_MEM_LIMIT", None)

    ran = skipped = failed = commands = 0
    problems = []
    try:
        for doc in docs:
            blocks, stray = blocks_of(os.path.join(src, doc))
            for ln in stray:
                problems.append("%s:%d: a not-a-test marker that is not right before a code block" % (doc, ln))
            for start, lang, body, reason, mline in blocks:
                where = "%s:%d" % (doc, start)
                cmds = [l for l in body if COMMAND.match(l)]
                if reason is not None and not reason:
                    problems.append("%s: not-a-test marker without a reason" % where)
                if not cmds:
                    if reason is not None:
                        problems.append("%s: marked not-a-test but holds no lumosim command" % where)
                    continue
                if a.only and a.only not in (doc, where):
                    continue
                if reason is not None or lang not in RUN_LANGS:
                    skipped += 1
                    print("skip %s: %s" % (where, reason if reason is not None else "a %s block" % lang))
                    continue
                text = script_of(body)
                if "../shared/traces" in text and not shared:
                    skipped += 1
                    print("skip %s: needs ../shared/traces (absent)" % where)
                    continue
                ran += 1
                commands += len(cmds)
                d = scratch(root, ran, src, shared, example)
                p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=d, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
                if p.returncode:
                    failed += 1
                    out = p.stdout.decode("utf-8", "replace").strip().split("\n")
                    print("FAIL %s: exit %d\n  script:\n%s  last output:\n    %s" %
                          (where, p.returncode, "".join("    " + l + "\n" for l in text.strip().split("\n")),
                           "\n    ".join(out[-8:])))
                else:
                    print("ok   %s (%d commands)" % (where, len(cmds)))
                shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for p in problems:
        print("FAIL " + p)
    print("documented command blocks: %d run (%d commands), %d failed, %d skipped (marked illustrations or missing "
          "inputs)" % (ran, commands, failed, skipped))
    if ran == 0:
        print("FAIL: no documented command was run")
        return 1
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
