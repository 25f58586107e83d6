#!/usr/bin/env python3
"""Choose the tests CI's sanitizer phase may leave out (bench/asan_subset.sh).

Reads one file of executed product lines per test (FILE:LINE per line, from
gcov), the tests' sanitizer-build costs (CTest's CTestCostData.txt) and the
candidate names (the tests the phase would run). Keeps every cheap test,
then greedily the test that runs the most product lines not yet run per
second of sanitizer time, until the kept tests run every line any
candidate runs; then drops each kept test (dearest first) whose lines the
others all run. Prints the candidates left out, one per line, after a
header of '#' lines stating what was measured.

usage: asan_subset.py LINES_DIR NAMES COSTDATA CANDIDATES CHEAP_S [TRADE_LINES TRADE_S]
  LINES_DIR   holds L<index> files; NAMES maps "<index>: <name>"
  COSTDATA    CTestCostData.txt of the sanitizer build
  CANDIDATES  one test name per line
  CHEAP_S     tests cheaper than this (seconds) are always kept
  TRADE_LINES, TRADE_S  (optional) then also leave out each kept test of
              TRADE_S seconds or more that alone runs at most TRADE_LINES
              lines, dearest per line first: those lines are listed in the
              header as not sanitized (a measured trade, stated)
"""
import os
import sys


def main():
    lines_dir, names_path, cost_path, cand_path, cheap = sys.argv[1:6]
    cheap = float(cheap)
    names = {}
    for row in open(names_path):
        idx, name = row.strip().split(": ", 1)
        names[name] = idx
    cost = {}
    for row in open(cost_path):
        f = row.split()
        if len(f) == 3:
            cost[f[0]] = float(f[2])
    cands = [c.strip() for c in open(cand_path) if c.strip()]
    cov = {}
    for c in cands:
        p = os.path.join(lines_dir, "L" + names.get(c, "none"))
        cov[c] = frozenset(open(p).read().split()) if os.path.exists(p) else frozenset()
    # a test without a measured cost is dear: kept only for lines no other runs
    cst = {c: cost.get(c, 1e6) for c in cands}
    universe = frozenset().union(*cov.values())
    kept = [c for c in cands if cst[c] < cheap]
    done = set().union(*(cov[c] for c in kept)) if kept else set()
    rest = [c for c in cands if c not in kept]
    while len(done) < len(universe):
        best = max(rest, key=lambda c: (len(cov[c] - done) / max(cst[c], 0.01), c))
        if not cov[best] - done:
            break
        kept.append(best)
        rest.remove(best)
        done |= cov[best]
    # drop what the others cover, dearest first
    for c in sorted([k for k in kept if cst[k] >= cheap], key=lambda k: -cst[k]):
        others = set().union(*(cov[k] for k in kept if k != c))
        if cov[c] <= others:
            kept.remove(c)
    traded = []
    if len(sys.argv) > 7:
        tl, ts = int(sys.argv[6]), float(sys.argv[7])
        while True:
            best = None
            for c in kept:
                if cst[c] < ts:
                    continue
                only = cov[c] - set().union(*(cov[k] for k in kept if k != c))
                if len(only) <= tl and (best is None or cst[c] / max(len(only), 1) > best[0]):
                    best = (cst[c] / max(len(only), 1), c, only)
            if best is None:
                break
            kept.remove(best[1])
            traded.append((best[1], sorted(best[2])))
    left = sorted(c for c in cands if c not in kept)
    t_all = sum(cst[c] for c in cands if c in cost)
    t_kept = sum(cst[c] for c in kept if c in cost)
    print("# product lines run by the candidates: %d; by the kept tests: %d (the traded tests' lines below)" %
          (len(universe), len(set().union(*(cov[c] for c in kept)))))
    print("# candidates %d (%.0f s of sanitizer test time), kept %d (%.0f s), left out %d" %
          (len(cands), t_all, len(kept), t_kept, len(left)))
    for c, only in traded:
        print("# traded: %s (%.0f s) alone ran %s" % (c, cst[c], " ".join(only) or "nothing"))
    for c in left:
        print(c)


if __name__ == "__main__":
    main()
