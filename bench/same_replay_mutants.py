#!/usr/bin/env python3
"""same_replay_mutants.py: do two builds of lumosim read odd traces alike?

    python3 bench/same_replay_mutants.py BEFORE/lumosim AFTER/lumosim [--n N] [--seed S] SEED_TRACE...

Writes N mutants of the seed traces (plain JSON) to a scratch directory and
replays each with both binaries (`replay --json`), comparing stdout, stderr
and the exit status. The mutations aim at a JSON reader's corners: escapes
in keys and values, duplicate members, NUL and other control bytes, number
spellings (fractions, exponents, -0, leading zeros, 20-digit integers),
whitespace, nesting, strings for numbers and numbers for strings, and plain
byte insertions and deletions. For a change that must not change what any
input reads as (bench/same_replay.sh covers the real traces). Exit 1 when
anything differs; the differing mutants are kept and named.
"""
import gzip
import os
import random
import re
import subprocess
import sys
import tempfile


def load(path):
    data = open(path, "rb").read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


NUMBERS = [b"0", b"-0", b"1", b"1.0", b"1e0", b"1E+0", b"01", b"1.", b"-", b"1e", b"123456789012345",
           b"1234567890123456", b"12345678901234567890", b"9.5e3", b"-7", b"0.5", b"1e400", b"-1e400",
           b'"7"', b'" 7"', b'"x"', b"true", b"null", b"[1,2]", b"{}", b"2.5", b"3" * 70]
STRINGS = [b'"a\\nb"', b'"k\\u0065rnel"', b'"\\""', b'"kernel"', b'"cpu_op"', b'"x\x00y"', b'""', b"7",
           b'"\\ud800"', b'"\\q"', b'"nccl\\u0041llReduce"', b'"cuda_runtime"', b'"Runtime"']


def mutate(text, rnd):
    ops = rnd.randint(1, 3)
    for _ in range(ops):
        kind = rnd.randrange(12)
        if kind == 0:  # a number respelled
            spots = [m.span(1) for m in re.finditer(rb":\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)", text)]
            if spots:
                a, b = rnd.choice(spots)
                text = text[:a] + rnd.choice(NUMBERS) + text[b:]
        elif kind == 1:  # a string value replaced
            spots = [m.span(1) for m in re.finditer(rb':\s*("[^"\\]*")', text)]
            if spots:
                a, b = rnd.choice(spots)
                text = text[:a] + rnd.choice(STRINGS) + text[b:]
        elif kind == 2:  # a key escaped, or given a NUL, or renamed
            spots = [m.span(1) for m in re.finditer(rb'"([A-Za-z_ ]+)"\s*:', text)]
            if spots:
                a, b = rnd.choice(spots)
                key = text[a:b]
                new = rnd.choice([key[:1] + b"\\u00" + b"%02x" % key[1] + key[2:] if len(key) > 1 else key,
                                  key + b"\x00x", key.upper(), key + b" ", b"args", b"cat", b"name", b"ts"])
                text = text[:a] + new + text[b:]
        elif kind == 3:  # a member duplicated
            spots = [m.span() for m in re.finditer(rb'"[A-Za-z_ ]+"\s*:\s*("[^"\\]*"|-?[\d.]+)', text)]
            if spots:
                a, b = rnd.choice(spots)
                text = text[:b] + b", " + text[a:b] + text[b:]
        elif kind == 4:  # whitespace changed
            spots = [m.start() for m in re.finditer(rb"[,:] ", text)]
            if spots:
                a = rnd.choice(spots) + 1
                text = text[:a] + rnd.choice([b"", b"\n\t ", b"\x0b", b"\x00", b"\r\n", b"\x1f"]) + text[a + 1:]
        elif kind == 5:  # a byte inserted
            a = rnd.randrange(len(text))
            text = text[:a] + bytes([rnd.choice(b'{}[],:"\\0-e.x \x00')]) + text[a:]
        elif kind == 6:  # a byte deleted
            a = rnd.randrange(len(text))
            text = text[:a] + text[a + 1:]
        elif kind == 7:  # args nested deeper, or given odd members
            spots = [m.end() for m in re.finditer(rb'"args"\s*:\s*\{', text)]
            if spots:
                a = rnd.choice(spots)
                extra = rnd.choice([b'"x": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], ',
                                    b'"grid": [1, 2, 3], "block": [64, 1, 1], ', b'"stream": "7", ',
                                    b'"device": 1e0, ', b'"correlation": -0, ', b'"rank": "3", ',
                                    b'"Input Dims": [[4, 2048], [2048, 16]], ', b'"Sequence number": 5.5, ',
                                    b'"blocks per SM": 0.25, ', b'"args": {}, ', b'"a\\"b": 1, '])
                text = text[:a] + extra + text[a:]
        elif kind == 8:  # args made something else
            spots = [m.span(1) for m in re.finditer(rb'"args"\s*:\s*(\{[^{}]*\})', text)]
            if spots:
                a, b = rnd.choice(spots)
                text = text[:a] + rnd.choice([b"[]", b"1", b'"x"', b"null", b"{}"]) + text[b:]
        elif kind == 9:  # many members
            spots = [m.end() for m in re.finditer(rb'\{"ph"', text)] or [m.end() for m in re.finditer(rb'\{\s*"', text)]
            if spots:
                a = rnd.choice(spots) - len(b'"ph"')
                n = rnd.choice([20, 30, 60])
                text = text[:a] + b"".join(b'"m%d": %d, ' % (i, i) for i in range(n)) + text[a:]
        elif kind == 10:  # a pid or tid made a string
            spots = [m.span(1) for m in re.finditer(rb'"[pt]id"\s*:\s*(-?\d+)', text)]
            if spots:
                a, b = rnd.choice(spots)
                text = text[:a] + rnd.choice([b'"' + text[a:b] + b'"', b'"Spans"', b"1e30", b"-5", b"7.5"]) + text[b:]
        else:  # a long string with an escape late in it
            spots = [m.span(1) for m in re.finditer(rb'"name"\s*:\s*("[^"\\]*")', text)]
            if spots:
                a, b = rnd.choice(spots)
                text = text[:a] + b'"' + b"y" * 70000 + rnd.choice([b"\\t", b"", b"\\u00e9"]) + b'"' + text[b:]
    return text


def run(binary, path):
    p = subprocess.run([binary, "replay", "--json", path], capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def main():
    args = sys.argv[1:]
    n, seed = 300, 1
    if "--n" in args:
        i = args.index("--n"); n = int(args[i + 1]); del args[i:i + 2]
    if "--seed" in args:
        i = args.index("--seed"); seed = int(args[i + 1]); del args[i:i + 2]
    if len(args) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    before, after, seeds = args[0], args[1], [load(p) for p in args[2:]]
    rnd = random.Random(seed)
    work = tempfile.mkdtemp(prefix="mutants.")
    bad = 0
    for k in range(n):
        text = mutate(rnd.choice(seeds), rnd)
        path = os.path.join(work, "m%05d.json" % k)
        with open(path, "wb") as f:
            f.write(text)
        if run(before, path) != run(after, path):
            bad += 1
            print("DIFFERENT: %s" % path)
        else:
            os.unlink(path)
    print("same_replay_mutants: %d of %d mutants read alike (seed %d)%s" % (n - bad, n, seed,
          "" if not bad else "; kept in " + work))
    if not bad:
        os.rmdir(work)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
