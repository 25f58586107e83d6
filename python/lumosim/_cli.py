"""Shared bits of the command-line tools (internal)."""

import argparse
import os
import sys


def run_main(main):
    """Run a tool's main(); a closed stdout (``| head``) ends it quietly."""
    try:
        rc = main()
        sys.stdout.flush()
        return rc
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line on stderr (exit 2)."""

    def error(self, message):
        sys.stderr.write("%s: error: %s (see --help)\n" % (self.prog, message))
        sys.exit(2)


def fail(prog, message, code=1):
    sys.stderr.write("%s: error: %s\n" % (prog, " ".join(str(message).split())))
    return code


def fmt_table(rows, headers, right=None):
    """Fixed-width text table; ``right``: indexes of right-aligned columns."""
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    right = set(range(len(headers))) if right is None else set(right)
    out = []
    for r in cells:
        out.append("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    return "\n".join(out)
