#!/usr/bin/env python3
"""rename_kernels.py [--no-et] SRC_DIR DST_DIR OLD_PREFIX NEW_NAME

Copies every rank*.json.gz of SRC_DIR into DST_DIR with each GPU kernel
whose name starts with OLD_PREFIX renamed to NEW_NAME (its args, times and
the rest of the trace unchanged), so that a real trace's collectives look
as they would from another communication library (DeepEP, a custom
all-reduce, ...). Execution traces (rank*.et.json.gz) are copied as they
are, or left out with --no-et (a library that is not NCCL records no
record_param_comms of its own). Prints how many kernels were renamed per
file.
"""
import gzip
import json
import os
import shutil
import sys

args = sys.argv[1:]
no_et = args[:1] == ["--no-et"]
if no_et:
    args = args[1:]
src, dst, old, new = args[:4]
os.makedirs(dst, exist_ok=True)
for f in sorted(os.listdir(src)):
    if not f.startswith("rank"):
        continue
    if not f.endswith(".json.gz") or f.endswith(".et.json.gz"):
        if no_et and f.endswith(".et.json.gz"):
            continue
        shutil.copy(os.path.join(src, f), os.path.join(dst, f))
        continue
    with gzip.open(os.path.join(src, f), "rt") as fh:
        d = json.load(fh)
    n = 0
    for e in d["traceEvents"]:
        if e.get("cat") == "kernel" and str(e.get("name", "")).startswith(old):
            e["name"] = new
            n += 1
    with gzip.open(os.path.join(dst, f), "wt") as fh:
        json.dump(d, fh)
    print("%s: %d kernels renamed" % (f, n))
