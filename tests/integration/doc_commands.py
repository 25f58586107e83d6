#!/usr/bin/env python3
"""Documented commands are tests (issue 39).

doc_commands.py --lumosim BIN --source-dir DIR [--shared TRACES] [--only FILE[:LINE]]

Every fenced code block of README.md and docs/*.md whose language is sh,
bash, shell, console or none, and which holds a lumosim command (a line
that, after an optional "$ " prompt and VAR=value assignments, starts with
lumosim, mpirun, srun or sbatch), is run as a bash script (-e -o pipefail:
a command that fails, also inside a pipe, fails the block) in a scratch
directory of its own, with `lumosim` on PATH being the binary under test.

The scratch directory holds what the documents name as inputs: examples/,
data/, python/ and slurm/ of the source tree, traces/ (the bundled example
trace, standing for "a directory of traces") and ../shared/traces (the shared
real traces; a block that names them is skipped when they are absent). A
block makes everything else it reads (job.h5, result.h5 ...) itself, or
SETUP below makes it.

What a command prints is checked too, against what the document shows,
written there by hand (never regenerated from the program):

- A console block (lines with a "$ " prompt) runs its prompt lines only;
  the lines under a prompt are what that command prints. Each of them must
  be a line of the command's output (stdout and stderr together, any
  order), compared with runs of blanks equal; "..." stands for any text
  within a line, and a line that is only "..." for lines left out. A
  command whose shown output has a `lumosim: error:` line must fail.

- After a block's closing fence, one or more lines

      <!-- expect: TEXT -->

  each name a line the block's output must hold somewhere in it: TEXT
  with runs of blanks equal, "..." for any text, and ~N for a figure the
  document quotes rounded: a number that rounds to N at N's decimals
  (~76.2 takes 76.15 to 76.25, ~3216 takes 3216 only). Every ~N figure
  must also be written, as N, in the visible text of the block's section
  (its heading to the next; comments left out): the marker checks the
  figure the reader sees, so the figure drifting in the program or in the
  prose alone fails the test.

A block that is an illustration, not a command (a synopsis with
placeholders, a job too large for a test, an mpirun of many ranks, a Slurm
submission) is marked in the document, either by a `text` fence or by the
line right before its fence:

    <!-- not-a-test: why -->

A block that continues another (it reads a file an earlier block wrote)
and is run at a smaller scale than the document's is listed in SETUP
below, with why: its own commands run as written, after SETUP's commands
have made its inputs.

The test prints every block run or skipped and the counts; it fails when a
block fails or its output lacks what the document shows, when a marker
has no reason or marks no command block, when a SETUP entry matches no
block, or when no block was run.
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
EXPECT = re.compile(r"^\s*<!--\s*expect:\s*(.*?)\s*-->\s*$")
PROMPT = re.compile(r"^\s*\$\s")
HEADING = re.compile(r"^#{1,6}\s")
COMMENT = re.compile(r"<!--.*?-->", re.S)
FIGURE = r"~(-?\d[\d,]*(?:\.\d+)?)"
NUMBER = r"(-?\d[\d,]*(?:\.\d+)?)"
SENTINEL = "@@doc_commands command %d@@"

# Blocks run with inputs the test makes, keyed by (document, the block's
# first command line without its comment). Each entry: why, and the commands that make the
# block's inputs. The block's own commands are not changed.
SETUP = {
    ("README.md", "mpirun -np 4 lumosim sim job.h5 -o result.h5"): (
        "continues the 4,096-GPU job.h5 of the block before (a minute of CPU and 3 GB to simulate); "
        "here the same model and TP 8 x PP 8 layout with DP 1 and 8 layers: 64 GPUs",
        "lumosim synth --model gpt3-175b --layers 8 --tp 8 --pp 8 --dp 1 --micro-batch 1 --global-batch 8 "
        "--distributed-optimizer -o job.h5 >/dev/null"),
    ("docs/intervals.md", "mpirun -n 8 lumosim sim job.h5 --samples 512"): (
        "continues the job.h5 of the block before (the bundled trace)",
        "lumosim build traces/ -o job.h5 >/dev/null"),
}


def sections_of(lines, in_fence):
    """For each line, the visible text of its section (heading to heading,
    HTML comments left out)."""
    starts = [0] + [n for n, l in enumerate(lines) if not in_fence[n] and HEADING.match(l)] + [len(lines)]
    text_of = [""] * len(lines)
    for a, b in zip(starts, starts[1:]):
        text = COMMENT.sub(" ", "\n".join(lines[a:b]))
        for n in range(a, b):
            text_of[n] = text
    return text_of


def blocks_of(path):
    """Blocks: dicts of start (line number), lang, body, reason (of a
    not-a-test marker, or None), expects [(line number, TEXT)], section
    (visible text). Also the line numbers of markers that mark nothing."""
    lines = open(path, encoding="utf-8").read().split("\n")
    in_fence = [False] * len(lines)
    out, i, used = [], 0, set()
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
            in_fence[i] = True
            i += 1
        i += 1
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        mk = MARKER.match(lines[j]) if j >= 0 else None
        if mk:
            used.add(j)
        expects, k = [], i
        while k < len(lines) and (not lines[k].strip() or EXPECT.match(lines[k])):
            e = EXPECT.match(lines[k])
            if e:
                expects.append((k + 1, e.group(1)))
                used.add(k)
            k += 1
        out.append(dict(start=start + 1, lang=lang, body=body, reason=(mk.group(2) or "") if mk else None,
                        expects=expects))
    section = sections_of(lines, in_fence)
    for b in out:
        b["section"] = section[b["start"] - 1]
    stray = [n + 1 for n, l in enumerate(lines)
             if (MARKER.match(l) or EXPECT.match(l)) and n not in used and not in_fence[n]]
    return out, stray


def commands_of(body):
    """[(command text, shown output lines)]: a console block's prompt lines
    (with their continuation lines) and the lines under each; or the whole
    block as one command with no shown output."""
    if not any(PROMPT.match(l) for l in body):
        return [("\n".join(body), [])]
    cmds, cont = [], False
    for l in body:
        if cont:
            cmds[-1][0].append(l)
        elif PROMPT.match(l):
            cmds.append(([PROMPT.sub("", l, count=1)], []))
        elif cmds:
            cmds[-1][1].append(l)
        cont = bool(cmds) and l.rstrip().endswith("\\") and (cont or PROMPT.match(l) is not None)
    return [("\n".join(c), shown) for c, shown in cmds]


def must_fail(shown):
    return any(l.strip().startswith("lumosim: error:") for l in shown)


def script_of(cmds):
    """One bash script: each command after a sentinel line that separates
    its output; a command the document shows failing must fail."""
    parts = []
    for n, (cmd, shown) in enumerate(cmds):
        parts.append("printf '\\n%s\\n'" % (SENTINEL % n))
        if must_fail(shown):
            parts.append("set +e\n%s\nrc=$?\nset -e\n[ $rc -ne 0 ] || { echo 'doc_commands: the document shows "
                         "this command failing; it exited 0'; exit 1; }" % cmd)
        else:
            parts.append(cmd)
    return "\n".join(parts) + "\n"


def outputs_of(text, n):
    """The output of each of n commands, split at the sentinels."""
    out, cur = [[] for _ in range(n)], None
    for l in text.split("\n"):
        m = re.match(r"^@@doc_commands command (\d+)@@$", l)
        if m:
            cur = int(m.group(1))
        elif cur is not None:
            out[cur].append(l)
    return out


def pattern_of(text, figures):
    """A regex for one shown line or expect TEXT: blanks equal, "..." any
    text, and (when figures) ~N a captured number."""
    tokens = re.split(r"(\.\.\.|\s+|%s)" % FIGURE if figures else r"(\.\.\.|\s+)", text.strip())
    rx, quoted, k = "", [], 0
    while k < len(tokens):
        t = tokens[k]
        if t == "...":
            rx += ".*?"
        elif t and t.isspace():
            rx += r"\s+"
        elif figures and t and t.startswith("~") and re.fullmatch(FIGURE, t):
            rx += NUMBER
            quoted.append(t[1:])
            k += 1  # the group re.split also returned
        elif t:
            rx += re.escape(t)
        k += 1
    return re.compile(rx), quoted


def rounds_to(printed, quoted):
    q = quoted.replace(",", "")
    decimals = len(q.split(".")[1]) if "." in q else 0
    return abs(float(printed.replace(",", "")) - float(q)) <= 0.5 * 10 ** -decimals + 1e-9


def check_expect(text, lines):
    """None when a line of lines holds TEXT with its figures in tolerance,
    else why not."""
    rx, quoted = pattern_of(text, True)
    near = []
    for l in lines:
        for m in rx.finditer(l):
            got = m.groups()
            if all(rounds_to(g, q) for g, q in zip(got, quoted)):
                return None
            near.append("printed %s for %s" % (", ".join(got), ", ".join("~" + q for q in quoted)))
    return near[0] if near else "no line of the output holds it"


def check_block(b, cmds, outs):
    """Problems with a block's output against what its document shows."""
    problems = []
    for (cmd, shown), out in zip(cmds, outs):
        for l in shown:
            if not l.strip() or l.strip() == "...":
                continue
            rx, _ = pattern_of(l, False)
            if not any(rx.fullmatch(o.strip()) for o in out):
                problems.append("the output of `%s` lacks the line the document shows:\n    %s"
                                % (cmd.split("\n")[0], l.strip()))
    every = [l for out in outs for l in out]
    for line, text in b["expects"]:
        why = check_expect(text, every)
        if why:
            problems.append("line %d: expect: %s: %s" % (line, text, why))
    return problems


def unquoted(b):
    """The ~N figures of a block's expect markers that its section does not
    write."""
    bad = []
    for line, text in b["expects"]:
        for q in re.findall(FIGURE, text):
            if not re.search(r"(?<![\d.,])%s(?![\d])" % re.escape(q), b["section"]):
                bad.append("line %d: ~%s is not written in the section's text" % (line, q))
    return bad


def scratch(root, n, src, shared, example):
    """A directory for block n, with the inputs the documents name."""
    d = os.path.join(root, "w%d" % n)
    os.makedirs(d)
    for name in ("examples", "data", "python", "slurm"):
        os.symlink(os.path.join(src, name), os.path.join(d, name))
    os.makedirs(os.path.join(d, "traces"))
    os.symlink(example, os.path.join(d, "traces", os.path.basename(example)))
    return d


def run_block(b, setup, d, env):
    """Run one block in d; return the problems (empty: ok)."""
    cmds = commands_of(b["body"])
    text = script_of(cmds)
    if setup:
        s = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", setup[1]], cwd=d, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        if s.returncode:
            return ["SETUP's commands exit %d:\n    %s" % (s.returncode, s.stdout.decode("utf-8", "replace"))]
    p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=d, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    out = p.stdout.decode("utf-8", "replace")
    if p.returncode:
        tail = [l for l in out.strip().split("\n") if not l.startswith("@@doc_commands")][-8:]
        return ["exit %d\n  script:\n%s  last output:\n    %s" %
                (p.returncode, "".join("    " + l + "\n" for l in text.strip().split("\n")
                                       if not l.startswith("printf '\\n@@")),
                 "\n    ".join(tail))]
    return check_block(b, cmds, outputs_of(out, len(cmds)))


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
    # the documents' mpirun -np 4 and -n 8 on a machine of fewer cores
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")

    ran = skipped = failed = commands = 0
    problems, setups_used = [], set()
    try:
        for doc in docs:
            blocks, stray = blocks_of(os.path.join(src, doc))
            for ln in stray:
                problems.append("%s:%d: a not-a-test or expect marker that is not next to a code block" % (doc, ln))
            for b in blocks:
                where = "%s:%d" % (doc, b["start"])
                cmds = [l for l in b["body"] if COMMAND.match(l)]
                if b["reason"] is not None and not b["reason"]:
                    problems.append("%s: not-a-test marker without a reason" % where)
                if not cmds:
                    if b["reason"] is not None or b["expects"]:
                        problems.append("%s: a marker on a block that holds no lumosim command" % where)
                    continue
                key = (doc, re.sub(r"\s+#.*$", "", PROMPT.sub("", cmds[0], count=1)).strip())
                setup = SETUP.get(key)
                if setup:
                    setups_used.add(key)
                problems += ["%s: %s" % (where, u) for u in unquoted(b)]
                if a.only and a.only not in (doc, where):
                    continue
                if b["reason"] is not None or b["lang"] not in RUN_LANGS:
                    skipped += 1
                    if b["expects"]:
                        problems.append("%s: expect markers on a block that is not run" % where)
                    print("skip %s: %s" % (where, b["reason"] if b["reason"] is not None else "a %s block" % b["lang"]))
                    continue
                if "../shared/traces" in "\n".join(b["body"]) and not shared:
                    skipped += 1
                    print("skip %s: needs ../shared/traces (absent)" % where)
                    continue
                ran += 1
                commands += len(cmds)
                d = scratch(root, ran, src, shared, example)
                bad = run_block(b, setup, d, env)
                if bad:
                    failed += 1
                    print("FAIL %s: %s" % (where, "\n  ".join(bad)))
                else:
                    print("ok   %s (%d commands%s%s)" % (where, len(cmds),
                                                        ", %d expect markers" % len(b["expects"]) if b["expects"] else "",
                                                        "; setup: " + setup[0] if setup else ""))
                shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for key in SETUP:
        if key not in setups_used:
            problems.append("SETUP names a block that no document holds: %s: %s" % key)
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
