#!/usr/bin/env python3
"""Shared structure (docs/hdf5-schema.md, "Shared structure"): a synthesized
GPU whose node columns and incoming edges equal those of the first GPU of
its pipeline stage is stored as sharing that GPU's rows; `sim` holds it
once and writes its per-node and kernel rows once when they are equal too.

Every expectation is computed here from the files, never taken from the
code under test:

1. Which GPUs may share: from the store written with
   --no-shared-structure, this script compares each GPU's node columns and
   edges with those of its stage's first GPU (stage = GPU // (TP x DP), the
   synth GPU order); the shared store must point exactly those GPUs at that
   GPU's rows, give the others rows of their own (offsets the prefix sums
   of their counts), and be smaller.
2. Results unchanged: `sim` of both stores prints the same report; every
   GPU's node table (times, deciding edges) and kernel rows read back from
   the two archives are equal; so is `sim --drop-edges` (the path that
   gives a shared graph a copy of its own first).
3. A job whose GPUs differ (host stalls drawn per GPU, --seed): only GPUs
   that are equal share, and the results still equal the flat store's. A
   what-if of a shared store shares the same way (--no-shared-structure:
   the flat reference).
4. Shared strings: a GPU that shares its stage's first GPU's structure and
   has as many strings stores only the strings that differ from that
   GPU's (computed here from the two flat tables), with their ids; every
   GPU's table rebuilt here from the shared store equals its flat table.
5. Bad input (also a result archive's shared duty bins, through `lumosim
   report` and lumosim.load): an offset that is neither the next rows nor an earlier GPU's
   rows, or a shared offset with another count, a table shared with a
   later GPU, replaced ids out of order, a missing /strings/id and a
   replaced name that repeats another are each one error line naming the
   dataset and the GPU from `lumosim sim` (exit 1, no archive left) and an
   error from lumosim.load.

  LUMOSIM=build/lumosim LSIM_SOURCE_DIR=. python3 tests/python/test_shared_structure.py
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

SRC = os.environ.get("LSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "python"))
import lumosim  # noqa: E402

LUMOSIM = os.environ.get("LUMOSIM", "build/lumosim")
TP, PP, DP = 8, 2, 2  # a TP group per 8-GPU node: every GPU of a stage alike
SYNTH = ["synth", "--model", "gpt3-175b", "--layers", "4", "--tp", str(TP), "--pp", str(PP), "--dp", str(DP),
         "--micro-batch", "1", "--global-batch", str(4 * DP), "--no-memory-check"]
NODE_COLS = ("kind", "flags", "proc", "name", "dur", "obs_start", "obs_end", "release", "corr", "iter", "coll",
             "phase", "fwd_seq", "grad_bytes", "in_off")
EDGE_COLS = ("in_src", "in_delay", "in_class")


def run(*args, ok=True):
    p = subprocess.run([LUMOSIM] + list(args), capture_output=True, text=True)
    if ok and p.returncode != 0:
        raise AssertionError("lumosim %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p


def rows_of(f, table, g):
    gp = f["gpus"]
    o, c = int(gp["%s_offset" % table][g]), int(gp["%s_count" % table][g])
    return o, c


def structure(f, g):
    """GPU g's node columns and edges, read from the file by offsets."""
    no, nc = rows_of(f, "node", g)
    eo, ec = rows_of(f, "edge", g)
    return ([f["nodes/" + k][no:no + nc] for k in NODE_COLS], [f["edges/" + k][eo:eo + ec] for k in EDGE_COLS])


def same_structure(a, b):
    return all(len(x) == len(y) and np.array_equal(x, y) for x, y in zip(a[0] + a[1], b[0] + b[1]))


def own_rows(f, g):
    """GPU g's own string rows as bytes (its whole table in a flat store)."""
    so, sc = rows_of(f, "string", g)
    co, cc = rows_of(f, "char", g)
    off = [int(x) for x in f["strings/offset"][so:so + sc]] + [cc]
    ch = f["strings/chars"][co:co + cc].tobytes()
    return [ch[off[k]:off[k + 1] - 1] for k in range(sc)]


def string_table(f, g):
    """GPU g's string table: its own rows, or (strings_like) the table it
    shares with its rows put at their ids."""
    like = int(f["gpus/strings_like"][g]) if "gpus/strings_like" in f else -1
    if like < 0:
        return own_rows(f, g)
    t = own_rows(f, like)
    so, sc = rows_of(f, "string", g)
    for i, s in zip(f["strings/id"][so:so + sc], own_rows(f, g)):
        t[int(i)] = s
    return t


class SharedStructureTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lumosim-shared-")
        cls.flat = os.path.join(cls.tmp, "flat.h5")
        cls.shared = os.path.join(cls.tmp, "shared.h5")
        run(*SYNTH, "--no-shared-structure", "-o", cls.flat)
        run(*SYNTH, "-o", cls.shared)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def expected_sharing(self, flat):
        """{gpu: stage's first GPU} for every GPU whose structure equals
        it, from the flat store."""
        with h5py.File(flat, "r") as f:
            n = len(f["gpus/rank"])
            per_stage = n // PP
            want = {}
            for g in range(n):
                t = g // per_stage * per_stage
                if g != t and same_structure(structure(f, g), structure(f, t)):
                    want[g] = t
            return n, want

    def check_layout(self, flat, shared, want):
        with h5py.File(flat, "r") as ff, h5py.File(shared, "r") as fs:
            n = len(fs["gpus/rank"])
            acc = {"node": 0, "edge": 0}
            for g in range(n):
                for table in ("node", "edge"):
                    o, c = rows_of(fs, table, g)
                    self.assertEqual(c, rows_of(ff, table, g)[1], "GPU %d %s count" % (g, table))
                    if g in want:
                        self.assertEqual(o, rows_of(fs, table, want[g])[0], "GPU %d shares GPU %d's %s rows"
                                         % (g, want[g], table))
                    else:
                        self.assertEqual(o, acc[table], "GPU %d has %s rows of its own" % (g, table))
                        acc[table] += c
                # what a GPU reads through its offsets is its own structure
                self.assertTrue(same_structure(structure(fs, g), structure(ff, g)), "GPU %d" % g)
            self.assertEqual(len(fs["nodes/kind"]), acc["node"])
            self.assertEqual(len(fs["edges/in_src"]), acc["edge"])
            # collectives stay per GPU, as in the flat store
            self.assertTrue(np.array_equal(fs["colls/pg_ranks"][:], ff["colls/pg_ranks"][:]))
            # strings: a sharing GPU with as many strings as its template
            # stores the ones that differ, at their ids, ascending
            like = fs["gpus/strings_like"][:]
            for g in range(n):
                flat_g = own_rows(ff, g)
                t = want.get(g)
                if t is not None and len(flat_g) == len(own_rows(ff, t)):
                    flat_t = own_rows(ff, t)
                    diff = [k for k in range(len(flat_g)) if flat_g[k] != flat_t[k]]
                    self.assertEqual(int(like[g]), t, "GPU %d shares GPU %d's strings" % (g, t))
                    so, sc = rows_of(fs, "string", g)
                    self.assertEqual([int(x) for x in fs["strings/id"][so:so + sc]], diff, "GPU %d's ids" % g)
                    self.assertEqual(own_rows(fs, g), [flat_g[k] for k in diff], "GPU %d's rows" % g)
                else:
                    self.assertEqual(int(like[g]), -1, "GPU %d's strings are its own" % g)
                    self.assertEqual(own_rows(fs, g), flat_g)
                self.assertEqual(string_table(fs, g), flat_g, "GPU %d's table" % g)

    def expected_result_rows(self, archive, want, table="node"):
        """Rows the shared run must hold of a per-GPU table ("node", or
        "duty_predicted" / "duty_actual": the duty-cycle bins, a function of
        the graph and the times): those of every GPU whose times (read from
        the flat run's archive) equal those of no earlier GPU of its
        structure (the GPU whose rows it shares, want[g], or another GPU
        that shares them); a GPU with no rows of the table shares none."""
        with h5py.File(archive, "r") as f:
            r = f["runs/sim"]
            off, cnt = r["gpus/node_offset"][:], r["gpus/node_count"][:]
            tcnt = r["gpus/%s_count" % table][:]
            start, end = r["nodes/start"][:], r["nodes/end"][:]

            def times(g):
                return start[off[g]:off[g] + cnt[g]].tobytes() + end[off[g]:off[g] + cnt[g]].tobytes()

            seen, rows = {}, 0
            for g in range(len(cnt)):
                k = (want.get(g, g), times(g))
                if k not in seen:
                    seen[k] = g
                    rows += int(tcnt[g])
            return rows

    def duty_rows(self, archive, side):
        """Every GPU's duty-cycle bins of one side, read by its offset."""
        with h5py.File(archive, "r") as f:
            r = f["runs/sim"]
            off, cnt = r["gpus/duty_%s_offset" % side][:], r["gpus/duty_%s_count" % side][:]
            d = r["duty/" + side][:]
            return [d[off[g]:off[g] + cnt[g]].tobytes() for g in range(len(cnt))]

    def compare_runs(self, flat, shared, *extra, rows_shared=True):
        a, b = self.path("a.h5"), self.path("b.h5")
        for p in (a, b):
            if os.path.exists(p):
                os.remove(p)
        ra = run("sim", flat, "-o", a, *extra)
        rb = run("sim", shared, "-o", b, *extra)
        self.assertEqual(ra.stdout.replace(flat, "JOB"), rb.stdout.replace(shared, "JOB"))
        A, B = lumosim.load(a), lumosim.load(b)
        n = len(A.ranks)
        self.assertEqual(n, len(B.ranks))
        for g in range(n):
            x, y = A.node_table(gpu=g), B.node_table(gpu=g)
            self.assertTrue(x.equals(y), "GPU %d node table" % g)
        ka = A.gpu_kernels.reset_index(drop=True)
        kb = B.gpu_kernels.reset_index(drop=True)
        self.assertTrue(ka.equals(kb), "kernel rows")
        # rows are shared only when the run's graphs are the store's, as read
        _, want = self.expected_sharing(flat) if rows_shared else (0, {})
        # the duty-cycle bins: every GPU's the same, each way written once
        for side in ("predicted", "actual"):
            self.assertEqual(self.duty_rows(a, side), self.duty_rows(b, side), "duty bins, " + side)
        for col in ("duty_actual_mean", "duty_predicted_mean"):
            self.assertTrue(A.ranks[col].equals(B.ranks[col]), col)
        with h5py.File(b, "r") as fb:
            self.assertEqual(len(fb["runs/sim/nodes/start"]), self.expected_result_rows(a, want))
            self.assertEqual(len(fb["runs/sim/duty/predicted"]), self.expected_result_rows(a, want, "duty_predicted"))
            self.assertEqual(len(fb["runs/sim/duty/actual"]), self.expected_result_rows(a, want, "duty_actual"))
            return len(fb["runs/sim/nodes/start"])

    def test_store_layout(self):
        n, want = self.expected_sharing(self.flat)
        self.assertEqual(n, TP * PP * DP)
        # every GPU of a stage but its first: TP and DP ranks differ only
        # in their strings and collectives in this job
        self.assertEqual(len(want), n - PP, want)
        self.check_layout(self.flat, self.shared, want)
        self.assertLess(os.path.getsize(self.shared), os.path.getsize(self.flat))
        info = run("info", self.shared).stdout
        self.assertIn("shared structure: %d GPUs use the node and edge rows of another" % len(want), info)
        with h5py.File(self.shared, "r") as f:
            like = f["gpus/strings_like"][:]
            nrows = sum(rows_of(f, "string", g)[1] for g in range(n) if like[g] >= 0)
        self.assertIn("shared strings: %d GPUs use the string table of another, %d of their strings their own"
                      % (int((like >= 0).sum()), nrows), info)
        # the Python reader rebuilds every table (GraphStore.gpus counts them whole)
        with h5py.File(self.flat, "r") as f:
            counts = [len(own_rows(f, g)) for g in range(n)]
        self.assertEqual(list(lumosim.load(self.shared).gpus["strings"]), counts)

    def test_results_same(self):
        nshared = self.compare_runs(self.flat, self.shared)
        # here every GPU of a stage has its first GPU's times: one GPU's
        # rows per stage
        with h5py.File(self.flat, "r") as f:
            per_gpu = [int(c) for c in f["gpus/node_count"][:]]
        self.assertEqual(nshared, sum(per_gpu[s * (len(per_gpu) // PP)] for s in range(PP)))

    def test_partly_alike(self):
        # TP 2 DP 3 on 8-GPU nodes: a stage's GPUs sit on different nodes,
        # so their pipeline and DP transfers are timed differently; only
        # the GPUs that are alike share
        args = [a for a in SYNTH]
        for k, v in (("--tp", "2"), ("--dp", "3"), ("--global-batch", "12")):
            args[args.index(k) + 1] = v
        flat, shared = self.path("pflat.h5"), self.path("pshared.h5")
        run(*args, "--no-shared-structure", "-o", flat)
        run(*args, "-o", shared)
        n, want = self.expected_sharing(flat)
        self.assertTrue(0 < len(want) < n - PP, want)
        self.check_layout(flat, shared, want)
        self.compare_runs(flat, shared)

    def test_whatif(self):
        # a what-if of a shared store writes shared structure and strings
        # too (each GPU against its stage's first), and --no-shared-structure
        # every row: the same job either way
        flat, shared = self.path("wflat.h5"), self.path("wshared.h5")
        run("whatif", self.shared, "--dp", "3", "--no-shared-structure", "-o", flat)
        run("whatif", self.shared, "--dp", "3", "-o", shared)
        n, want = self.expected_sharing(flat)
        self.assertEqual(n, TP * PP * 3)
        self.assertTrue(want)
        self.check_layout(flat, shared, want)
        self.compare_runs(flat, shared)
        with h5py.File(flat, "r") as f:
            self.assertTrue((f["gpus/strings_like"][:] == -1).all())
            self.assertEqual(len(f["nodes/kind"]), int(f["gpus/node_count"][:].sum()))

    def test_slow_gpu(self):
        # a slow GPU holds its replica back: that replica's GPUs, the slow
        # one and the other replicas time out three ways, and each way's
        # rows are written once, not only those equal to the stage's first
        flat, shared = self.path("slflat.h5"), self.path("slshared.h5")
        run("whatif", self.shared, "--slow-gpu", "3:1.5", "--no-shared-structure", "-o", flat)
        run("whatif", self.shared, "--slow-gpu", "3:1.5", "-o", shared)
        n, want = self.expected_sharing(flat)
        self.check_layout(flat, shared, want)
        rows = self.compare_runs(flat, shared)
        with h5py.File(flat, "r") as f:
            per_gpu = [int(c) for c in f["gpus/node_count"][:]]
        # more than one GPU's rows per stage, fewer than every GPU's
        self.assertTrue(sum(per_gpu[s * (n // PP)] for s in range(PP)) < rows < sum(per_gpu))

    def test_drop_edges(self):
        # the graphs change after loading (each shared one gets a copy of
        # its own first): the archive then holds every GPU's rows
        self.compare_runs(self.flat, self.shared, "--drop-edges", "launch_latency", rows_shared=False)

    def test_differing_gpus(self):
        with open(os.path.join(SRC, "data", "gpu", "h100.json")) as f:
            spec = json.load(f)
        spec.update({"name": "h100-stalls", "host_stall_prob": 0.2, "host_stall_ns": 200000})
        gpu = self.path("stalls.json")
        with open(gpu, "w") as f:
            json.dump(spec, f)
        flat, shared = self.path("sflat.h5"), self.path("sshared.h5")
        run(*SYNTH, "--gpu", gpu, "--seed", "7", "--no-shared-structure", "-o", flat)
        run(*SYNTH, "--gpu", gpu, "--seed", "7", "-o", shared)
        n, want = self.expected_sharing(flat)
        self.assertLess(len(want), n - PP, "the stalls must make some GPUs differ")
        self.check_layout(flat, shared, want)
        self.compare_runs(flat, shared)

    def estimate(self, store, bind, archive=True, reduced=False, match_b=116):
        """memlimit.h's estimate for `sim` of the store, computed here
        from its tables: 32 MiB + 80 KiB a GPU + 132 B a node and 20 B an
        edge of a GPU with rows of its own + 48 B a string; a GPU sharing
        another's rows: 48 B a node, and its strings read shared as an
        overlay: its replaced names (its rows, with the store's shared
        strings) at 48 B, else 12 B a string of its table. Without
        the engines' deciding edges (bind false: plain `sim`, which keeps
        them only for --detail nodes, --trace-out and --critical-path)
        16 B a node less, own or shared; with an archive written (-o) 8 B
        a node more for a GPU with rows of its own. reduced (`sim`'s
        default in one process): a sharing GPU costs nothing a node or a
        graph but 116 B a collective kernel (memlimit.h LSIM_MEM_MATCH_B:
        the match's entry, sort key, order and group id; match_b 28 for
        the match in 16 parts, LSIM_MEM_MATCH_HELD_B 20 + 116 / 16 rounded
        up); a GPU with its own structure as before (its match is in its
        132 B a node).
        The C code rounds each of those two node terms up to whole 132-byte
        nodes: at most 264 B more."""
        with h5py.File(store, "r") as f:
            gp = f["gpus"]
            no, nc, ec, sc = (gp[k][:].astype(np.int64) for k in ("node_offset", "node_count", "edge_count",
                                                                    "string_count"))
            like = gp["strings_like"][:] if "strings_like" in gp else np.full(len(nc), -1)
            cc = gp["coll_count"][:].astype(np.int64)
        # a table shared with another GPU (strings_like) holds only its
        # replaced names, its own rows, at 48 B; a GPU sharing rows but
        # with a table of its own is read as an overlay, 12 B a string
        own_sc = sc.copy()
        own_b, sh_b = (132, 48) if bind else (116, 32)
        sh_b = 0 if reduced else sh_b
        own_b += 8 if archive else 0
        est, acc = 32 * 2**20, 0
        for g in range(len(nc)):
            shares = no[g] != acc and nc[g]
            est += match_b * cc[g] if reduced and shares else 80 * 1024
            if shares or like[g] >= 0:
                est += (sh_b * nc[g] if shares else own_b * nc[g] + 20 * ec[g]) + (
                    48 * own_sc[g] if like[g] >= 0 else 12 * sc[g])
                acc += 0 if no[g] != acc and nc[g] else nc[g]
            else:
                est += own_b * nc[g] + 20 * ec[g] + 48 * sc[g]
                acc += nc[g]
        return est

    def test_memory_estimate(self):
        # plain sim (no deciding edges kept) and --detail nodes (kept): the
        # flat store refused with the figure computed here, the shared one
        # read under the same limit
        for bind, extra in ((False, []), (True, ["--detail", "nodes"])):
            flat, shared = self.estimate(self.flat, bind), self.estimate(self.shared, bind)
            self.assertLess(shared, flat - 2**20)
            lim = (flat + shared) // 2
            env = dict(os.environ, LUMOSIM_MEM_LIMIT=str(lim))
            out = self.path("mem.h5")
            for store, ok in ((self.shared, True), (self.flat, False)):
                if os.path.exists(out):
                    os.remove(out)
                p = subprocess.run([LUMOSIM, "sim", store, "-o", out, *extra], capture_output=True, text=True,
                                   env=env)
                self.assertEqual(p.returncode, 0 if ok else 1, p.stderr)
                if not ok:
                    self.assertIn("need about %.1f MiB per rank" % (flat / 2**20), p.stderr)
                    self.assertFalse(os.path.exists(out))
        # a reduced run (the default) counts a sharing GPU without its
        # engine: a limit between the two estimates of the shared store lets
        # `sim` run it and refuses `sim --symmetry off` with the full figure
        full, red = self.estimate(self.shared, False), self.estimate(self.shared, False, reduced=True)
        self.assertLess(red, full - 2**17)
        env = dict(os.environ, LUMOSIM_MEM_LIMIT=str((full + red) // 2))
        out = self.path("mem.h5")
        for extra, ok in (([], True), (["--symmetry", "off"], False)):
            if os.path.exists(out):
                os.remove(out)
            p = subprocess.run([LUMOSIM, "sim", self.shared, "-o", out, *extra], capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 0 if ok else 1, p.stderr)
            if not ok:
                self.assertIn("need about %.1f MiB per rank" % (full / 2**20), p.stderr)
                self.assertFalse(os.path.exists(out))
        # the reduced run's own figures, pinned between two limits 1 KiB
        # either side of each (the C code rounds up by at most 264 B): the
        # match's 116 B a collective kernel of a GPU that shares a
        # structure, no engine and no graph of its own, in one part; under
        # that, in 16 parts (memlimit.h: 20 B held + 116 / 16), and the
        # refusal names that figure, the least the run can need
        red16 = self.estimate(self.shared, False, reduced=True, match_b=28)
        self.assertLess(red16, red - 2**14)
        for lim, ok in ((red + 1024, True), (red - 1024, True), (red16 + 1024, True), (red16 - 1024, False)):
            if os.path.exists(out):
                os.remove(out)
            env = dict(os.environ, LUMOSIM_MEM_LIMIT=str(lim))
            p = subprocess.run([LUMOSIM, "sim", self.shared, "-o", out], capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 0 if ok else 1, "limit %d: %s" % (lim, p.stderr))
            if not ok:
                self.assertIn("need about %.1f MiB per rank" % (red16 / 2**20), p.stderr)
        # the deciding edges are 16 B a node of the whole job, the archive's
        # write 8 B a node of the flat store
        with h5py.File(self.flat, "r") as f:
            nodes = int(f["gpus"]["node_count"][:].sum())
        self.assertEqual(self.estimate(self.flat, True) - self.estimate(self.flat, False), 16 * nodes)
        self.assertEqual(self.estimate(self.flat, False) - self.estimate(self.flat, False, False), 8 * nodes)
        # without -o the archive is not counted: a limit between the two
        # flat estimates refuses `sim -o` and lets `sim` read the store
        lo, hi = self.estimate(self.flat, False, False), self.estimate(self.flat, False)
        env = dict(os.environ, LUMOSIM_MEM_LIMIT=str((lo + hi) // 2))
        p = subprocess.run([LUMOSIM, "sim", self.flat], capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = self.path("mem.h5")
        if os.path.exists(out):
            os.remove(out)
        p = subprocess.run([LUMOSIM, "sim", self.flat, "-o", out], capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("need about %.1f MiB per rank" % (hi / 2**20), p.stderr)
        self.assertFalse(os.path.exists(out))

    def tamper(self, name, edit):
        p = self.path(name)
        shutil.copy(self.shared, p)
        with h5py.File(p, "r+") as f:
            edit(f)
        return p

    def expect_bad(self, p, what, py=True, how=("sim", "-o", "bad-out.h5")):
        """`lumosim CMD P OPT OUT` (how: sim of a store by default) fails
        with one line naming what and P, and writes no OUT; py: the Python
        reader refuses P too."""
        out = self.path(how[2])
        r = run(how[0], p, how[1], out, ok=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = [x for x in r.stderr.splitlines() if x.strip()]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn(what, lines[0])
        self.assertIn(p, lines[0])
        self.assertFalse(os.path.exists(out))
        if py is True:  # the Python reader checks the GPU table when loading
            with self.assertRaises(lumosim.LumosimFileError):
                lumosim.load(p)
        elif py:  # ... and a GPU's strings when it reads them
            with self.assertRaises(lumosim.LumosimFileError):
                py(lumosim.load(p))

    def test_bad_offsets(self):
        _, want = self.expected_sharing(self.flat)
        g = min(want)

        def off_by_one(f):
            f["gpus/node_offset"][g] = f["gpus/node_offset"][want[g]] + 1

        self.expect_bad(self.tamper("bad1.h5", off_by_one), "node_offset of GPU %d" % g)

        def other_count(f):
            c = f["gpus/node_count"][:]
            c[g] -= 1
            f["gpus/node_count"][:] = c

        self.expect_bad(self.tamper("bad2.h5", other_count), "GPU %d" % g)

        # a GPU's replaced names (its rows) made equal, same length so the
        # offsets stay: the table would name two strings alike
        def repeat_name(f):
            mine = own_rows(f, g)
            co, _ = rows_of(f, "char", g)
            so, sc = rows_of(f, "string", g)
            off = [int(x) for x in f["strings/offset"][so:so + sc]]
            a, b = next((a, b) for a in range(len(mine)) for b in range(len(mine))
                        if a < b and len(mine[a]) == len(mine[b]))
            f["strings/chars"][co + off[b]:co + off[b] + len(mine[a])] = np.frombuffer(mine[a], dtype=np.uint8)

        self.expect_bad(self.tamper("bad3.h5", repeat_name), "repeats", py=lambda st: st.node_table(gpu=g))

    def test_bad_duty_offsets(self):
        # a result archive whose GPU shares another's duty bins: an offset
        # that is neither the next rows nor an earlier GPU's, or a shared
        # offset with another count, is one error line from `lumosim report`
        # naming the dataset and the GPU (no page written) and an error from
        # lumosim.load
        res = self.path("duty.h5")
        if os.path.exists(res):
            os.remove(res)
        run("sim", self.shared, "-o", res)
        with h5py.File(res, "r") as f:
            off = f["runs/sim/gpus/duty_predicted_offset"][:]
            cnt = f["runs/sim/gpus/duty_predicted_count"][:]
        acc, g, holder = 0, None, None
        for i in range(len(off)):
            if off[i] == acc:
                acc += int(cnt[i])
            elif g is None:
                g = i
                holder = next(j for j in range(i) if off[j] == off[i])
        self.assertIsNotNone(g, "no GPU shares its duty bins")

        def bad(name, edit, what):
            p = self.path(name)
            shutil.copy(res, p)
            with h5py.File(p, "r+") as f:
                edit(f["runs/sim/gpus"])
            self.expect_bad(p, what, how=("report", "--html", "bad.html"))

        def off_by_one(gp):
            o = gp["duty_predicted_offset"][:]
            o[g] = o[holder] + 1
            gp["duty_predicted_offset"][:] = o

        bad("dutybad1.h5", off_by_one, "duty_predicted_offset of GPU %d" % g)

        def other_count(gp):
            c = gp["duty_predicted_count"][:]
            c[g] -= 1
            gp["duty_predicted_count"][:] = c

        bad("dutybad2.h5", other_count, "duty_predicted_offset of GPU %d" % g)

    def test_bad_own_tables(self):
        # a sharing GPU's own tables are still checked against the shared
        # nodes: a processor claiming a node too many, a collective naming
        # a string past its table
        _, want = self.expected_sharing(self.flat)
        g = max(want)

        def nnodes(f):
            po = int(f["gpus/proc_offset"][g])
            f["procs/nnodes"][po] = f["procs/nnodes"][po] + 1

        self.expect_bad(self.tamper("badt1.h5", nnodes), "procs of GPU %d" % g, py=False)

        def pg_name(f):
            co, cc = rows_of(f, "coll", g)
            self.assertGreater(cc, 0)
            f["colls/pg_name"][co] = 10**6

        self.expect_bad(self.tamper("badt2.h5", pg_name), "colls/pg_name or pg_ranks of GPU %d" % g, py=False)

        # its collectives' table is one copy with its stage's first GPU's
        # only while equal (read column by column): one record's size
        # changed is its own, and the match sees the sizes disagree
        def nbytes(f):
            co, cc = rows_of(f, "coll", g)
            b = f["colls/bytes"][co:co + cc]
            k = next(i for i in range(cc) if b[i] > 0)
            f["colls/bytes"][co + k] = b[k] + 4096

        r = run("sim", self.tamper("badt3.h5", nbytes), ok=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = [x for x in r.stderr.splitlines() if x.strip()]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"\d+ bytes")

    def test_bad_shared_strings(self):
        _, want = self.expected_sharing(self.flat)
        g = min(want)

        def later(f):
            like = f["gpus/strings_like"][:]
            like[g] = g + 1
            f["gpus/strings_like"][:] = like

        self.expect_bad(self.tamper("bads1.h5", later), "strings_like of GPU %d" % g)

        def unordered(f):
            so, sc = rows_of(f, "string", g)
            ids = f["strings/id"][so:so + sc]
            self.assertGreater(len(ids), 1)
            f["strings/id"][so:so + sc] = ids[::-1]

        self.expect_bad(self.tamper("bads2.h5", unordered), "strings/id of GPU %d" % g,
                        py=lambda st: st.node_table(gpu=g))

        def no_ids(f):
            del f["strings/id"]

        self.expect_bad(self.tamper("bads3.h5", no_ids), "strings/id", py=lambda st: st.node_table(gpu=g))


if __name__ == "__main__":
    unittest.main(verbosity=2)
