#!/usr/bin/env python3
"""Issue 40, "Impossible values": the Python reader refuses what the C
readers refuse. A small synthesized store and its result archive are
written by lumosim; each case edits one value of a copy (h5py) out of the
range docs/reliability.md states, and lumosim.load (and, for the archive,
`python3 -m lumosim.summary`) must raise LumosimFileError naming the copy
and the dataset -- never print the value, never an IndexError -- and leave
the copy byte-identical (sha256). The C side of the same cases is
tests/integration/hostile_values.sh. Exit 77 (CTest skip) without h5py
and pandas.

  LUMOSIM=build/lumosim LSIM_SOURCE_DIR=. python3 tests/python/test_hostile_values.py
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import h5py
    import numpy as np
    import pandas  # noqa: F401
except ImportError as e:
    print("skipped: %s (needs python3-h5py and python3-pandas)" % e)
    sys.exit(77)

SRC = os.path.abspath(os.environ.get("LSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.join(SRC, "python"))
import lumosim  # noqa: E402

LUMOSIM = os.environ.get("LUMOSIM", "build/lumosim")
INT64_MAX = 2 ** 63 - 1
INT64_MIN = -(2 ** 63)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class HostileValues(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="lsim-pyhostile.")
        cls.store = os.path.join(cls.dir, "s.h5")
        cls.res = os.path.join(cls.dir, "res.h5")
        for args in (["synth", "--model", "gpt3-15b", "--layers", "2", "--tp", "2", "--pp", "2", "--dp", "1",
                      "--micro-batch", "1", "--global-batch", "2", "-o", cls.store],
                     ["sim", cls.store, "-o", cls.res, "--run", "A"]):
            p = subprocess.run([LUMOSIM] + args, capture_output=True, text=True)
            if p.returncode != 0:
                raise AssertionError("lumosim %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def edited(self, name, src, edit):
        """A copy of src with edit(h5py.File) applied, and its sha256."""
        path = os.path.join(self.dir, name)
        shutil.copyfile(src, path)
        with h5py.File(path, "r+") as f:
            edit(f)
        return path, sha(path)

    def refused(self, name, src, edit, *phrases, summary=False, nodes=False):
        path, before = self.edited(name, src, edit)
        with self.assertRaises(lumosim.LumosimFileError) as cm:
            lumosim.load(path, nodes=nodes)
        msg = str(cm.exception)
        self.assertEqual(len(msg.splitlines()), 1, msg)
        self.assertTrue(msg.startswith(path + ": "), msg)
        for p in phrases:
            self.assertIn(p, msg)
        if summary:  # the summary tool prints one error line, no table
            env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"))
            p = subprocess.run([sys.executable, "-m", "lumosim.summary", path], capture_output=True, text=True,
                               env=env)
            self.assertNotEqual(p.returncode, 0, p.stdout)
            self.assertEqual(p.stdout, "")
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            for ph in phrases:
                self.assertIn(ph, p.stderr)
        self.assertEqual(sha(path), before, "%s changed" % path)

    # ---- result archive ---------------------------------------------------
    def test_window_max(self):  # summary printed a 9.2e12 ms job time
        def e(f):
            f["runs/A/gpus/window_predicted"][0] = INT64_MAX
        self.refused("win_max.h5", self.res, e, "/runs/A/gpus/window_predicted of GPU 0", str(INT64_MAX),
                     summary=True)

    def test_window_start(self):
        def e(f):
            f["runs/A/gpus/window_actual_start"][1] = -9223372036854775000
        self.refused("win_start.h5", self.res, e, "/runs/A/gpus/window_actual_start of GPU 1")

    def test_breakdown_min(self):
        def e(f):
            d = f["runs/A/gpus/breakdown_predicted"]
            a = d[()]
            a[0, 2] = INT64_MIN  # exposed_comm
            d[...] = a
        self.refused("bd_min.h5", self.res, e, "/runs/A/gpus/breakdown_predicted (exposed_comm) of GPU 0",
                     str(INT64_MIN), summary=True)

    def test_wait_over_exposed(self):
        def e(f):
            f["runs/A/gpus/exposed_comm_wait_predicted"][0] = INT64_MAX
        self.refused("wait_big.h5", self.res, e, "/runs/A/gpus/exposed_comm_wait_predicted of GPU 0")

    def test_iteration_breakdown(self):
        def e(f):
            d = f["runs/A/iterations/breakdown_actual"]
            a = d[()]
            a[0, 0] = -5
            d[...] = a
        self.refused("iter_bd.h5", self.res, e, "/runs/A/iterations/breakdown_actual (exposed_compute) of row 0",
                     "-5")

    def test_iteration_predicted(self):
        def e(f):
            f["runs/A/iterations/predicted"][0] = -1
        self.refused("iter_p.h5", self.res, e, "/runs/A/iterations/predicted of row 0")

    def test_breakdown_width(self):  # was a raw IndexError
        def e(f):
            g = f["runs/A/gpus"]
            a = g["breakdown_predicted"][()]
            del g["breakdown_predicted"]
            g.create_dataset("breakdown_predicted", data=a[:, :3])
        self.refused("bd_width.h5", self.res, e, "/runs/A/gpus/breakdown_predicted has 3 columns, expected 4",
                     summary=True)

    # ---- graph store -------------------------------------------------------
    def test_latency(self):
        def e(f):
            f["gpus/launch_latency_ns"][1] = -10 ** 15
        self.refused("lat_neg.h5", self.store, e, "/gpus/launch_latency_ns of GPU 1", str(-10 ** 15))

    def test_world_size(self):
        def e(f):
            f["gpus/world_size"][0] = 0
        self.refused("ws0.h5", self.store, e, "/gpus/world_size of GPU 0 is 0")

    def test_coll_bytes(self):
        def e(f):
            f["colls/bytes"][0] = -5
        self.refused("bytes_neg.h5", self.store, e, "/colls/bytes of GPU 0, collective 0 is -5", nodes=True)

    def test_intact(self):  # the unedited files load
        self.assertEqual(len(lumosim.load(self.res).runs), 1)
        self.assertGreater(len(lumosim.load(self.store, nodes=True).nodes), 0)


if __name__ == "__main__":
    unittest.main()
