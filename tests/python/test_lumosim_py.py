#!/usr/bin/env python3
"""Tests of the Python package python/lumosim against files the C binary writes.

    LUMOSIM=build/lumosim LSIM_SOURCE_DIR=. python3 tests/python/test_lumosim_py.py
    python3 tests/python/test_lumosim_py.py --lumosim build/lumosim --source-dir .  [unittest args]

Builds a graph store from the bundled trace (examples/megatron_tp8_rank0.json.gz)
and a synthesized 8-GPU job (lumosim synth), simulates each into a result
archive of two runs, and checks what lumosim.load returns against what the
C side reports independently: `lumosim info`, `lumosim sim --json`, the raw
datasets (h5py) and the enum tables of docs/hdf5-schema.md. Exit 77 (CTest
skip) when h5py or pandas is missing.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SKIP = 77


def _take_option(argv, name):
    """Remove --name VALUE / --name=VALUE from argv; return VALUE or None."""
    for i, a in enumerate(list(argv)):
        if a == name and i + 1 < len(argv):
            v = argv[i + 1]
            del argv[i:i + 2]
            return v
        if a.startswith(name + "="):
            del argv[i]
            return a.split("=", 1)[1]
    return None


HERE = os.path.dirname(os.path.abspath(__file__))
ARGV = sys.argv[:]
SOURCE = os.path.abspath(_take_option(ARGV, "--source-dir") or os.environ.get("LSIM_SOURCE_DIR")
                         or os.path.join(HERE, "..", ".."))
LUMOSIM = os.path.abspath(_take_option(ARGV, "--lumosim") or os.environ.get("LUMOSIM")
                          or os.path.join(SOURCE, "build", "lumosim"))
TRACE = os.path.join(SOURCE, "examples", "megatron_tp8_rank0.json.gz")
# optional: the shared real traces beside the checkout (tests/CMakeLists.txt)
SHARED = os.path.abspath(_take_option(ARGV, "--shared-traces") or os.environ.get("LSIM_SHARED_TRACES")
                         or os.path.join(SOURCE, "..", "shared", "traces"))
SHARED_JOB = os.path.join(SHARED, "megatron_tp8_a100")
SCHEMA_DOC = os.path.join(SOURCE, "docs", "hdf5-schema.md")

try:
    import numpy as np
    import h5py
    import pandas as pd
except ImportError as e:
    print("skipped: %s (the package needs python3-h5py and python3-pandas; interpreter %s)" % (e, sys.executable))
    sys.exit(SKIP)

sys.path.insert(0, os.path.join(SOURCE, "python"))
import lumosim  # noqa: E402
from lumosim.compare import compare_runs  # noqa: E402

TMP = None
F = {}      # name -> path
JSON = {}   # (archive, run) -> sim --json document
INFO = {}   # path -> lumosim info text


def run(*args, check=True):
    p = subprocess.run([LUMOSIM] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, cwd=TMP)
    if check and p.returncode != 0:
        raise AssertionError("lumosim %s failed (%d): %s" % (" ".join(map(str, args)), p.returncode, p.stderr))
    return p


def py(module, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(SOURCE, "python") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", module] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, cwd=TMP, env=env)


def sim(store, archive, name, *extra):
    p = run("sim", store, "--json", "-o", archive, "--run", name, *extra)
    JSON[(archive, name)] = json.loads(p.stdout)


def setUpModule():
    global TMP
    if not os.access(LUMOSIM, os.X_OK):
        raise RuntimeError("no lumosim binary at %s (pass --lumosim or LUMOSIM)" % LUMOSIM)
    TMP = tempfile.mkdtemp(prefix="lumosim-py-")
    F.update({k: os.path.join(TMP, v) for k, v in {
        "store": "trace.h5", "res": "trace-res.h5", "obs_store": "obs.h5", "obs_res": "obs-res.h5",
        "synth": "synth.h5", "synth_res": "synth-res.h5"}.items()})
    run("build", TRACE, "-o", F["store"])
    sim(F["store"], F["res"], "base", "--critical-path")
    sim(F["store"], F["res"], "noev", "--drop-edges", "event")
    run("build", "--latency", "observed", TRACE, "-o", F["obs_store"])
    sim(F["obs_store"], F["obs_res"], "observed")
    run("synth", "--model", "gpt3-15b", "--layers", "4", "--tp", "2", "--pp", "2", "--dp", "2",
        "--micro-batch", "1", "--global-batch", "8", "-o", F["synth"])
    sim(F["synth"], F["synth_res"], "full")
    sim(F["synth"], F["synth_res"], "noev", "--drop-edges", "event")
    for k in ("store", "synth", "res", "synth_res"):
        INFO[F[k]] = run("info", F[k]).stdout


def tearDownModule():
    if TMP and not os.environ.get("LSIM_KEEP_TMP"):
        shutil.rmtree(TMP, ignore_errors=True)


def doc_enum(dataset, table_hint):
    """Names of an enum from docs/hdf5-schema.md: the row of `dataset` in
    the table after `table_hint`, meaning "0 a, 1 b, ...". Returns a list."""
    with open(SCHEMA_DOC, encoding="utf-8") as f:
        text = f.read()
    sect = text[text.index(table_hint):]
    m = re.search(r"^\| `%s` \| uint8 \| ([^|]*)\|" % re.escape(dataset), sect, re.M)
    assert m, "no row for %s after %s in %s" % (dataset, table_hint, SCHEMA_DOC)
    pairs = re.findall(r"(\d+) ([a-z_]+)", m.group(1))
    assert pairs and [int(i) for i, _ in pairs] == list(range(len(pairs))), m.group(1)
    return [n for _, n in pairs]


def doc_breakdown_names():
    with open(SCHEMA_DOC, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"`breakdown_actual`, `breakdown_predicted` \| int64 `G x 4` \| ([^|]*)\|", text)
    assert m
    return re.findall(r"`([a-z_]+)`", m.group(1))


def info_gpu_rows(text):
    """gpu, rank, nodes, edges, procs, iters, colls from `lumosim info STORE`."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^\s+(\d+)\s+(-?\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\S", line)
        if m:
            rows.append(tuple(int(x) for x in m.groups()))
    return rows


class StoreTests(unittest.TestCase):
    def check_store(self, path):
        st = lumosim.load(path)
        self.assertEqual(st.kind, "lumosim-graphs")
        info = INFO[path]
        m = re.search(r"^\s+(\d+) GPUs: (\d+) nodes, (\d+) edges, (\d+) processors, (\d+) iterations, "
                      r"(\d+) collectives, (\d+) strings", info, re.M)
        self.assertTrue(m, info)
        g, n, e, p, i, c, s = (int(x) for x in m.groups())
        self.assertEqual(len(st.gpus), g)
        self.assertEqual(int(st.gpus["nodes"].sum()), n)
        self.assertEqual(int(st.gpus["edges"].sum()), e)
        self.assertEqual(int(st.gpus["procs"].sum()), p)
        self.assertEqual(int(st.gpus["iterations"].sum()), i)
        self.assertEqual(int(st.gpus["collectives"].sum()), c)
        self.assertEqual(int(st.gpus["strings"].sum()), s)
        rows = info_gpu_rows(info)
        self.assertEqual(len(rows), g)
        got = [tuple(int(x) for x in r) for r in
               st.gpus[["gpu", "rank", "nodes", "edges", "procs", "iterations", "collectives"]].itertuples(index=False)]
        self.assertEqual(got, rows)
        # edges per class add up to the GPU's edges
        cls = ["edges_" + c for c in doc_enum_edge_classes()]
        self.assertEqual(list(st.gpus[cls].sum(axis=1)), list(st.gpus["edges"]))
        self.assertTrue(set(st.gpus["latency_mode"].astype(str)) <= {"model", "observed"})
        return st

    def test_trace_store(self):
        st = self.check_store(F["store"])
        self.assertEqual(list(st.gpus["source"]), [TRACE])
        self.assertEqual(int(st.gpus["source_size_bytes"][0]), os.path.getsize(TRACE))
        import zlib
        with open(TRACE, "rb") as f:
            self.assertEqual(int(st.gpus["source_crc32"][0]), zlib.crc32(f.read()) & 0xFFFFFFFF)
        self.assertIsNone(st.nodes)

    def test_synth_store(self):
        st = self.check_store(F["synth"])
        self.assertEqual(len(st.gpus), 8)
        self.assertEqual(list(st.gpus["rank"]), list(range(8)))

    def check_nodes(self, path, gpu):
        st = lumosim.load(path, nodes=True, gpu=gpu)
        nd = st.nodes
        self.assertEqual(st.nodes_gpu, gpu)
        self.assertEqual(len(nd), int(st.gpus["nodes"][gpu]))
        self.assertEqual(int(nd["in_edges"].sum()), int(st.gpus["edges"][gpu]))
        kinds = doc_enum("kind", "### `/nodes`")
        self.assertTrue(set(nd["kind"].astype(str)) <= set(kinds))
        self.assertTrue(set(nd["coll_kind"].astype(str)) <= set(doc_enum("kind", "### `/colls`")))
        # the names agree with the raw codes read here, mapped by the doc's table
        with h5py.File(path, "r") as f:
            o = int(f["gpus/node_offset"][gpu])
            raw = f["nodes/kind"][o:o + len(nd)]
            self.assertEqual(list(nd["kind"].astype(str)), [kinds[k] for k in raw])
            self.assertTrue(np.array_equal(nd["dur_ns"].to_numpy(), f["nodes/dur"][o:o + len(nd)]))
        self.assertEqual(nd["dur_ns"].dtype, np.int64)
        self.assertEqual(int((nd["is_gpu"] & (nd["kind"].astype(str).isin(["cpu", "runtime"]))).sum()), 0)
        self.assertEqual(int(nd["iteration_name"].str.startswith("ProfilerStep#").sum()),
                         int((nd["iteration"] >= 0).sum()))
        # the same table through the method
        pd.testing.assert_frame_equal(nd, st.node_table(gpu))
        return st

    def test_trace_nodes(self):
        st = self.check_nodes(F["store"], 0)
        self.assertTrue(bool(st.nodes["observed"].all()))

    def test_synth_nodes(self):
        st = self.check_nodes(F["synth"], 5)
        self.assertFalse(bool(st.nodes["observed"].any()))
        # collective kernels per kind agree with sim --json's count for that GPU
        doc = JSON[(F["synth_res"], "full")]["ranks"][5]["graph"]["collectives"]
        coll = st.nodes[st.nodes["collective"] & (st.nodes["kind"] == "kernel")]
        self.assertEqual(len(coll), doc["kernels"])
        self.assertEqual(coll["coll_kind"].astype(str).value_counts().to_dict(), doc["by_kind"])

    def test_training_phases(self):
        # the hand-written training step (tests/data/training_step.json):
        # GPU ops per phase as the package reads the phase column agree with
        # whatif --identify's training object (kernels + memops per phase)
        fx = os.path.join(SOURCE, "tests", "data", "training_step.json")
        store = os.path.join(TMP, "training.h5")
        run("build", fx, "-o", store)
        ident = json.loads(run("whatif", store, "--identify").stdout)
        want = {k: v["kernels"] + v["memops"] for k, v in ident["ranks"][0]["training"]["phases"].items()}
        nodes = lumosim.load(store, nodes=True, gpu=0).nodes
        gpu = nodes[nodes["kind"].isin(["kernel", "memcpy", "memset"])]
        got = gpu["phase"].astype(str).value_counts().to_dict()
        self.assertEqual({k: got.get(k, 0) for k in want}, want)
        self.assertTrue(set(nodes["phase"].cat.categories) >= set(want))
        # a store written before the columns: all unknown, no forward op
        old = lumosim.load(os.path.join(SOURCE, "tests", "data", "training_step_oldstore.h5"), nodes=True, gpu=0).nodes
        self.assertEqual(set(old["phase"].astype(str)), {"unknown"})
        self.assertEqual(set(old["fwd_seq"]), {-1})

    def test_gpu_out_of_range(self):
        st = lumosim.load(F["synth"])
        with self.assertRaises(IndexError):
            st.node_table(8)


def doc_enum_edge_classes():
    with open(SCHEMA_DOC, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"Edge classes \(column order.*?\):\s*(.*?)\.\n", text, re.S)
    assert m
    pairs = re.findall(r"(\d+) `([a-z_]+)`", m.group(1))
    assert [int(i) for i, _ in pairs] == list(range(len(pairs)))
    return [n for _, n in pairs]


class ResultTests(unittest.TestCase):
    def check_archive(self, path, runs):
        res = lumosim.load(path)
        self.assertEqual(res.kind, "lumosim-results")
        self.assertEqual(sorted(res.run_names), sorted(runs))
        m = re.search(r"schema version 1, .*?, (\d+) runs?", INFO[path])
        self.assertTrue(m, INFO[path])
        self.assertEqual(len(res.runs), int(m.group(1)))
        comps = doc_breakdown_names()
        for name in runs:
            doc = JSON[(path, name)]
            rk = res.ranks[res.ranks["run"] == name]
            it = res.iterations[res.iterations["run"] == name]
            bd = res.breakdown[res.breakdown["run"] == name]
            row = res.runs[res.runs["run"] == name].iloc[0]
            self.assertEqual(len(rk), len(doc["ranks"]))
            self.assertEqual(int(row["ngpus"]), len(doc["ranks"]))
            self.assertEqual(list(rk["rank"]), [r["rank"] for r in doc["ranks"]])
            self.assertEqual(len(it), sum(len(r["iterations"]) for r in doc["ranks"]))
            self.assertEqual(int(row["iterations"]), len(it))
            self.assertEqual(len(bd), len(it) * len(comps))
            self.assertEqual(list(bd["component"].cat.categories), comps)
            # per rank and iteration: the JSON report's numbers
            for g, r in enumerate(doc["ranks"]):
                x = rk[rk["gpu"] == g].iloc[0]
                self.assertEqual(int(x["window_predicted_ns"]), r["window"]["predicted_ns"])
                self.assertEqual(bool(x["observed"]), r.get("observed", True))
                if r.get("observed", True):
                    self.assertEqual(int(x["window_actual_ns"]), r["window"]["actual_ns"])
                else:
                    # not measured: NaN / <NA>, never the 0 the file stores
                    self.assertTrue(np.isnan(x["window_error"]))
                    self.assertIsNone(r["window"]["actual_ns"])
                    for c in ["window_actual_ns", "window_actual_start_ns", "exposed_comm_wait_actual_ns"] + \
                             ["%s_actual_ns" % c for c in comps]:
                        self.assertTrue(pd.isna(x[c]), "%s of unobserved GPU %d: %r" % (c, g, x[c]))
                for side in ("actual", "predicted"):
                    b = r["breakdown"][side]
                    if b is not None:
                        for c in comps:
                            self.assertEqual(int(x["%s_%s_ns" % (c, side)]), b[c + "_ns"])
                its = it[it["gpu"] == g].sort_values("iteration")
                self.assertEqual(list(its["name"]), [i["name"] for i in r["iterations"]])
                self.assertEqual(list(its["predicted_ns"]), [i["predicted_ns"] for i in r["iterations"]])
                if r.get("observed", True):
                    self.assertEqual(list(its["actual_ns"]), [i["actual_ns"] for i in r["iterations"]])
                else:  # not measured: <NA> / NaN, never the file's 0
                    self.assertTrue(its["error"].isna().all())
                    self.assertTrue(its["actual_ns"].isna().all() and its["actual_ms"].isna().all())
                    self.assertTrue(its["exposed_comm_wait_actual_ns"].isna().all())
                    self.assertTrue(bd[bd["gpu"] == g]["actual_ns"].isna().all())
            # the job span
            self.assertEqual(int(row["job_predicted_ns"]), doc["job"]["predicted_ns"])
            if doc["job"]["actual_ns"] is None:
                self.assertTrue(pd.isna(row["job_actual_ns"]))
                self.assertFalse(bool(row["observed"]))
            else:
                self.assertEqual(int(row["job_actual_ns"]), doc["job"]["actual_ns"])
            # the breakdown components of an iteration sum to its time (schema doc)
            # (an unmeasured row's actual parts are <NA>, and so is its sum)
            sums = bd.groupby(["gpu", "iteration"])[["actual_ns", "predicted_ns"]].sum(min_count=1)
            ref = it.set_index(["gpu", "iteration"])[["actual_ns", "predicted_ns"]].loc[sums.index]
            self.assertTrue(np.array_equal(sums["predicted_ns"].to_numpy(), ref["predicted_ns"].to_numpy()))
            self.assertTrue(sums["actual_ns"].equals(ref["actual_ns"]))
            # and the window breakdown sums to the window
            for side in ("actual", "predicted"):
                tot = sum(rk["%s_%s_ns" % (c, side)] for c in comps)
                self.assertEqual(list(tot), list(rk["window_%s_ns" % side]))
            self.assertEqual(row["command"].split()[:2], ["lumosim", "sim"])
            self.assertIn("--run %s" % name, row["command"])
        for df, cols in ((res.ranks, ["window_predicted_ns", "clock_offset_ns"]),
                         (res.iterations, ["predicted_ns"]),
                         (res.breakdown, ["predicted_ns"])):
            for c in cols:
                self.assertEqual(df[c].dtype, np.int64, c)
        for df in (res.iterations, res.breakdown):
            self.assertEqual(str(df["actual_ns"].dtype), "Int64")
        # the actual figures of a GPU are nullable (as runs.job_actual_ns)
        for c in ["window_actual_ns", "window_actual_start_ns", "exposed_comm_wait_actual_ns"] + \
                 ["%s_actual_ns" % c for c in comps]:
            self.assertEqual(str(res.ranks[c].dtype), "Int64", c)
        return res

    def test_trace_archive(self):
        res = self.check_archive(F["res"], ["base", "noev"])
        rk = res.ranks.set_index("run")
        self.assertTrue(bool(rk.loc["base", "has_critical_path"]))
        self.assertFalse(bool(rk.loc["noev", "has_critical_path"]))
        self.assertEqual(int(rk.loc["base", "cp_length_ns"]), int(rk.loc["base", "window_predicted_ns"]))
        self.assertTrue(bool(res.runs["observed"].all()))
        # a traced GPU's actual figures are measured: numbers, the window > 0
        for c in ("window_actual_ns", "exposed_compute_actual_ns", "other_actual_ns"):
            self.assertFalse(bool(res.ranks[c].isna().any()), c)
        self.assertTrue(bool((res.ranks["window_actual_ns"] > 0).all()))

    def test_synth_archive(self):
        res = self.check_archive(F["synth_res"], ["full", "noev"])
        self.assertFalse(bool(res.ranks["observed"].any()))
        # nothing measured: <NA>, not the 0 the archive stores
        for c in ("window_actual_ns", "exposed_compute_actual_ns", "exposed_comm_wait_actual_ns"):
            self.assertTrue(bool(res.ranks[c].isna().all()), c)
        self.assertTrue(bool(res.ranks["window_actual_ms"].isna().all()))
        self.assertTrue(bool(res.ranks["coupled"].all()))
        self.assertEqual(len(res.ranks), 16)

    @unittest.skipUnless(os.path.isdir(SHARED_JOB), "no shared traces at %s" % SHARED_JOB)
    def test_shared_coupled_job(self):
        # 8 observed ranks simulated together: clock offsets, windows that
        # start at different times, so the job span is not any one window
        store, arch = os.path.join(TMP, "m8.h5"), os.path.join(TMP, "m8-res.h5")
        run("build", SHARED_JOB, "-o", store)
        sim(store, arch, "coupled")
        INFO[arch] = run("info", arch).stdout
        res = self.check_archive(arch, ["coupled"])
        self.assertEqual(len(res.ranks), 8)
        self.assertTrue(bool(res.ranks["coupled"].all()))
        self.assertGreater(int(res.runs["job_predicted_ns"][0]), int(res.ranks["window_predicted_ns"].max()))

    def test_kernels_model(self):
        res = lumosim.load(F["synth_res"])
        k = res.kernels
        self.assertIsNotNone(k)
        self.assertTrue(set(k["kind"].astype(str)) <= {"kernel", "memcpy", "memset"})
        for name in res.run_names:
            kr = k[k["run"] == name]
            rk = res.ranks[res.ranks["run"] == name]
            self.assertEqual(int(kr["count"].sum()), int(rk["gpu_nodes"].sum()))
            doc = JSON[(F["synth_res"], name)]
            ncoll = sum(r["graph"]["collectives"]["kernels"] for r in doc["ranks"])
            self.assertEqual(int(kr.loc[kr["collective"], "count"].sum()), ncoll)
            self.assertEqual(int(kr["observed_count"].sum()), 0)
            self.assertTrue(kr["actual_mean_ms"].isna().all())
        self.assertIsNone(lumosim.load(F["synth_res"], kernels=False).kernels)

    def test_kernels_observed(self):
        # --latency observed reproduces the trace exactly: every GPU op's
        # predicted duration is its observed one
        res = lumosim.load(F["obs_res"])
        doc = JSON[(F["obs_res"], "observed")]
        ne = doc["ranks"][0]["node_error"]
        self.assertEqual(ne["nodes_exact"], ne["nodes"])
        k = res.kernels
        self.assertGreater(len(k), 10)
        self.assertTrue(np.array_equal(k["actual_total_ns"].to_numpy(), k["predicted_total_ns"].to_numpy()))
        self.assertTrue((k["error"] == 0).all())
        self.assertEqual(int(k["count"].sum()), int(res.ranks["gpu_nodes"].sum()))
        self.assertEqual(int(k.loc[k["collective"], "count"].sum()), doc["ranks"][0]["graph"]["collectives"]["kernels"])
        # totals recomputed here from the raw node table
        nd = res.node_table("observed", 0)
        gpu = nd[nd["kind"].astype(str).isin(["kernel", "memcpy", "memset"])]
        tot = (gpu["end_ns"] - gpu["start_ns"]).groupby(gpu["name"]).sum()
        mine = k.groupby("name")["predicted_total_ns"].sum()
        self.assertEqual(tot.sort_index().to_dict(), mine.sort_index().to_dict())

    def test_kernels_table_and_old_files(self):
        # the archive's kernels table (C writer) equals the summary this
        # package computes from the embedded graph, which is what files
        # written before the table (and before units / enum_names) give:
        # strip them all and load again
        for key in ("res", "obs_res", "synth_res"):
            path = os.path.join(TMP, "old-" + os.path.basename(F[key]))
            shutil.copy(F[key], path)
            with h5py.File(path, "r+") as f:
                for run in f["runs"]:
                    del f["runs/%s/kernels" % run]
                    del f["runs/%s/gpus/kernel_offset" % run]
                    del f["runs/%s/gpus/kernel_count" % run]

                def strip(_, o):
                    for a in ("units", "enum_names"):
                        if a in o.attrs:
                            del o.attrs[a]
                f.visititems(strip)
            new, old = lumosim.load(F[key]), lumosim.load(path)
            self.assertGreater(len(new.gpu_kernels), 10)
            pd.testing.assert_frame_equal(new.kernels, old.kernels)
            pd.testing.assert_frame_equal(new.gpu_kernels, old.gpu_kernels)
            run = new.run_names[0]
            pd.testing.assert_frame_equal(new.node_table(run, 0), old.node_table(run, 0))
            pd.testing.assert_frame_equal(new.graph(run), old.graph(run))
            # per-GPU rows sum to the job-wide ones, and to every GPU node
            self.assertEqual(int(new.gpu_kernels["count"].sum()), int(new.ranks["gpu_nodes"].sum()))
            self.assertEqual(int(new.gpu_kernels["predicted_total_ns"].sum()), int(new.kernels["predicted_total_ns"].sum()))

    def test_enum_tables_in_file(self):
        # the names the file carries are the package's fallback tables and
        # the schema document's
        with h5py.File(F["res"], "r") as f:
            g = f["runs/base/graph"]
            names = lambda d: [x.decode() for x in d.attrs["enum_names"]]
            self.assertEqual(names(g["nodes/kind"]), list(lumosim._schema.NODE_KINDS))
            self.assertEqual(names(g["nodes/kind"]), doc_enum("kind", "### `/nodes`"))
            self.assertEqual(names(g["colls/kind"]), list(lumosim._schema.COLL_KINDS))
            self.assertEqual(names(g["colls/kind"]), doc_enum("kind", "### `/colls`"))
            self.assertEqual(names(g["nodes/phase"]), list(lumosim._schema.PHASES))
            self.assertEqual(names(g["edges/in_class"]), list(lumosim._schema.EDGE_CLASSES))
            self.assertEqual(names(g["gpus/latency_mode"]), list(lumosim._schema.LATENCY_MODES))
            self.assertEqual(names(f["runs/base/kernels/kind"]), list(lumosim._schema.NODE_KINDS))
            self.assertEqual(f["runs/base/kernels/predicted_total"].attrs["units"], b"ns")
            self.assertEqual(f["runs/base/graph/nodes/dur"].attrs["units"], b"ns")
        # a file's names win over the package's: renamed in a copy, read renamed
        path = os.path.join(TMP, "renamed.h5")
        shutil.copy(F["res"], path)
        with h5py.File(path, "r+") as f:
            d = f["runs/base/graph/nodes/kind"]
            d.attrs["enum_names"] = np.array([b"c", b"r", b"k", b"mc", b"ms"])
            f["runs/base/kernels/actual_total"].attrs["units"] = np.bytes_("bytes")
        nd = lumosim.load(path, kernels=False).node_table("base", 0)
        self.assertEqual(list(nd["kind"].cat.categories), ["c", "r", "k", "mc", "ms"])
        with self.assertRaises(lumosim.LumosimFileError) as cm:
            lumosim.load(path)
        self.assertIn("units 'bytes'", str(cm.exception))

    def test_result_node_table(self):
        res = lumosim.load(F["res"], nodes=True, run="base")
        nd = res.nodes
        self.assertEqual(len(nd), int(res.ranks.set_index("run").loc["base", "nodes"]))
        with h5py.File(F["res"], "r") as f:
            self.assertTrue(np.array_equal(nd["start_ns"].to_numpy(), f["runs/base/nodes/start"][()]))
            win = f["runs/base/gpus/window_predicted"][0]
        self.assertEqual(int(nd["end_ns"].max() - nd["start_ns"].min()), int(win))
        g = res.graph("base")
        self.assertEqual(int(g["nodes"][0]), len(nd))

    def test_run_without_graphs(self):
        # an archive whose run lacks graph/: no kernel rows or node tables
        # for it, `observed` from the actual window
        path = os.path.join(TMP, "nograph.h5")
        shutil.copy(F["res"], path)
        with h5py.File(path, "r+") as f:
            del f["runs/noev/graph"]
        res = lumosim.load(path)
        # the archive's own kernel table needs no graph
        self.assertEqual(set(res.kernels["run"]), {"base", "noev"})
        pd.testing.assert_frame_equal(res.gpu_kernels, lumosim.load(F["res"]).gpu_kernels)
        with h5py.File(path, "r+") as f:
            del f["runs/noev/kernels"]
        res = lumosim.load(path)
        self.assertEqual(set(res.kernels["run"]), {"base"})
        self.assertEqual(list(res.runs.set_index("run").loc[["base", "noev"], "graphs_embedded"]), [True, False])
        self.assertTrue(bool(res.ranks["observed"].all()))
        with self.assertRaises(lumosim.LumosimFileError) as cm:
            res.node_table("noev", 0)
        self.assertIn("does not embed", str(cm.exception))
        ref = lumosim.load(F["res"])
        pd.testing.assert_frame_equal(res.iterations, ref.iterations)

    def test_detail_levels(self):
        # lumosim sim --detail: summary loads with the same per-GPU,
        # iteration and kernel tables as nodes, and refuses node tables;
        # ops has node tables without bind_*, nodes with them
        paths = {}
        for d in ("nodes", "ops", "summary"):
            paths[d] = os.path.join(TMP, "detail-%s.h5" % d)
            if os.path.exists(paths[d]):
                os.remove(paths[d])
            run("sim", F["synth"], "-o", paths[d], "--run", "full", "--detail", d)
        full = {d: lumosim.load(paths[d]) for d in paths}
        for d in ("ops", "summary"):
            self.assertEqual(full[d].runs["detail"].tolist(), [d])
            for t in ("ranks", "iterations", "breakdown", "gpu_kernels"):
                pd.testing.assert_frame_equal(getattr(full[d], t), getattr(full["nodes"], t))
        self.assertEqual(int(full["summary"].runs["nnodes"][0]), int(full["nodes"].runs["nnodes"][0]))
        with self.assertRaises(lumosim.LumosimFileError) as cm:
            full["summary"].node_table("full", 0)
        self.assertIn("--detail summary", str(cm.exception))
        ops, nodes = full["ops"].node_table("full", 1), full["nodes"].node_table("full", 1)
        self.assertNotIn("bind_start", ops.columns)
        self.assertIn("bind_start", nodes.columns)
        pd.testing.assert_frame_equal(ops, nodes.drop(columns=["bind_start", "bind_end"]))

    def test_run_selection(self):
        res = lumosim.load(F["res"])
        with self.assertRaises(lumosim.LumosimFileError) as cm:
            res.node_table(None, 0)
        self.assertIn(F["res"], str(cm.exception))
        with self.assertRaises(lumosim.LumosimFileError) as cm:
            res.node_table("nosuch", 0)
        self.assertIn("nosuch", str(cm.exception))


class CompareTests(unittest.TestCase):
    def parse(self, out):
        rows = []
        for line in out.splitlines():
            m = re.match(r"^\s*(\d+|job)\s+(.*?)\s+(-?\d+|-)\s+(-?\d+|-)\s+(-?\d+|-)\s+(\S+)$", line)
            if m:
                rows.append(m.groups())
        return rows

    def test_self_ratio_is_one(self):
        for path, name in ((F["res"], "base"), (F["synth_res"], "full")):
            p = py("lumosim.compare", path, path, "--run", name, "--run", name)
            self.assertEqual(p.returncode, 0, p.stderr)
            rows = self.parse(p.stdout)
            res = lumosim.load(path, kernels=False)
            it = res.iterations[res.iterations["run"] == name]
            nr = int((res.ranks["run"] == name).sum())
            # window + (time + 4 components) per iteration, + the job line
            self.assertEqual(len(rows), nr + 5 * len(it) + 1, p.stdout)
            self.assertEqual({r[5] for r in rows}, {"1.000000"}, p.stdout)
            self.assertEqual({r[4] for r in rows}, {"0"})
            df = compare_runs(path, name, path, name)
            self.assertTrue((df["ratio"] == 1.0).all())
            self.assertTrue((df["diff_ns"] == 0).all())

    def test_two_runs(self):
        path = F["synth_res"]
        p = py("lumosim.compare", path, "--run", "full", "--run", "noev")
        self.assertEqual(p.returncode, 0, p.stderr)
        ja = JSON[(path, "full")]["job"]["predicted_ns"]
        jb = JSON[(path, "noev")]["job"]["predicted_ns"]
        self.assertNotEqual(ja, jb)
        job = [r for r in self.parse(p.stdout) if r[0] == "job"]
        self.assertEqual(len(job), 1)
        self.assertEqual((int(job[0][2]), int(job[0][3]), int(job[0][4])), (ja, jb, jb - ja))
        self.assertAlmostEqual(float(job[0][5]), jb / ja, places=6)
        # per-rank windows against the JSON reports
        wins = {int(r[0]): (int(r[2]), int(r[3])) for r in self.parse(p.stdout) if r[1] == "window"}
        for a, b in zip(JSON[(path, "full")]["ranks"], JSON[(path, "noev")]["ranks"]):
            self.assertEqual(wins[a["rank"]], (a["window"]["predicted_ns"], b["window"]["predicted_ns"]))
        c = py("lumosim.compare", path, "--run", "full", "--run", "noev", "--csv")
        self.assertEqual(c.returncode, 0)
        df = pd.read_csv(__import__("io").StringIO(c.stdout))
        self.assertEqual(list(df.columns), ["rank", "iteration", "name", "metric", "a_ns", "b_ns", "diff_ns", "ratio"])

    def test_actual_side(self):
        p = py("lumosim.compare", F["res"], "--run", "base", "--run", "noev", "--side", "actual")
        self.assertEqual(p.returncode, 0, p.stderr)
        # the same trace: the actual side of two runs is identical
        self.assertEqual({r[5] for r in self.parse(p.stdout)}, {"1.000000"})


def _slurp(path):
    with open(path, "rb") as f:
        return f.read()


class SearchTests(unittest.TestCase):
    """lumosim search -o: the HDF5 file against the --csv and the printed
    ranking (both written by other code paths of the C side), the counts
    against the enumeration's own summary line, and the output rules."""

    ARGS = ("search", "--model", "gpt3-15b", "--gpus", "16", "--gpu", "h100", "--global-batch", "32",
            "--tp", "2,4", "--micro-batch", "1,2", "--recompute", "none,full", "--distributed-optimizer", "on")

    @classmethod
    def setUpClass(cls):
        cls.h5 = os.path.join(TMP, "search.h5")
        cls.csv = os.path.join(TMP, "search.csv")
        cls.out = run(*cls.ARGS, "--top", "0", "-o", cls.h5, "--csv", cls.csv).stdout
        cls.res = lumosim.load(cls.h5)
        # test_output_rules replaces cls.h5; the summary reads this copy
        cls.kept = os.path.join(TMP, "search-kept.h5")
        shutil.copy(cls.h5, cls.kept)

    def test_kind_and_space(self):
        self.assertEqual(self.res.attrs["kind"], "lumosim-search")
        sp = self.res.space
        self.assertEqual((sp["model"], sp["gpu"], sp["gpus"], sp["global_batch"]), ("gpt3-15b", "h100", 16, 32))
        self.assertIn("-o %s" % self.h5, self.res.attrs["created_by"])

    def test_counts_match_the_summary_line(self):
        m = re.search(r"(\d+) configurations; (.*?); (\d+) feasible, (\d+) simulated", self.out)
        self.assertIsNotNone(m, self.out)
        cand = self.res.candidates
        self.assertEqual(len(cand), int(m.group(1)))
        for k, name in re.findall(r"(\d+) ([a-z_]+)", m.group(2)):
            self.assertEqual(int((cand.reason == name).sum()), int(k), name)
        self.assertEqual(int(cand.simulated.sum()), int(m.group(4)))
        self.assertEqual(len(self.res.ranking), int(m.group(4)))
        # every refused candidate says why; no simulated one has a reason text
        self.assertTrue((cand[cand.reason != "simulated"].why.str.len() > 0).all())
        self.assertTrue((cand[cand.simulated].why == "").all())
        self.assertTrue(cand[~cand.simulated].step_ns.isna().all())

    def test_ranking_equals_the_csv(self):
        rows = _slurp(self.csv).decode().splitlines()
        head = rows[0].split(",")
        rk = self.res.ranking
        self.assertEqual(len(rows) - 1, len(rk))
        for line, (_, r) in zip(rows[1:], rk.iterrows()):
            c = dict(zip(head, line.split(",")))
            self.assertEqual(int(c["rank"]), int(r["rank"]))
            for k in ("tp", "pp", "dp", "micro_batch", "vstages"):
                self.assertEqual(int(c[k]), int(r[k]), k)
            self.assertEqual(c["recompute"], r["recompute"])
            self.assertEqual(int(c["distributed_optimizer"]), int(r["distributed_optimizer"]))
            self.assertEqual(int(c["step_ns"]), int(r["step_ns"]))
            for k in ("exposed_compute_ns", "overlapped_ns", "exposed_comm_ns", "other_ns"):
                self.assertEqual(int(c[k]), int(r[k]), k)
            self.assertAlmostEqual(float(c["peak_memory_bytes"]), r["peak_memory_bytes"], delta=1.0)
        self.assertTrue(rk.step_ns.is_monotonic_increasing)

    def test_throughput(self):
        # issue 39: the file's throughput is the --csv's (another writer)
        # and the global batch over the step, computed here; tokens/s that
        # times the sequence; no peak memory read as 0
        self.assertEqual(self.res.throughput_unit, "samples/s")
        rows = _slurp(self.csv).decode().splitlines()
        head = rows[0].split(",")
        rk = self.res.ranking
        sp = self.res.space
        for line, (_, r) in zip(rows[1:], rk.iterrows()):
            c = dict(zip(head, line.split(",")))
            want = sp["global_batch"] / (r.step_ns / 1e9)
            self.assertEqual(c["throughput_unit"], "samples/s")
            self.assertAlmostEqual(float(c["throughput_per_s"]), r.throughput_per_s, delta=5e-4)
            self.assertAlmostEqual(r.throughput_per_s, want, delta=1e-9 * want)
            self.assertAlmostEqual(r.tokens_per_s, want * sp["sequence"], delta=1e-6 * want * sp["sequence"])
        cand = self.res.candidates
        self.assertTrue(cand[~cand.simulated].throughput_per_s.isna().all())
        self.assertFalse((cand.peak_memory_bytes == 0).any())

    def test_info(self):
        p = run("info", self.h5)
        best = self.res.ranking.iloc[0]
        self.assertIn("lumosim search result", p.stdout)
        self.assertIn("1. TP %d PP %d DP %d" % (best.tp, best.pp, best.dp), p.stdout)
        self.assertIn("step %.3f s" % (best.step_ns / 1e9), p.stdout)
        self.assertIn("step %.3f s, %.2f samples/s" % (best.step_ns / 1e9, best.throughput_per_s), p.stdout)

    def test_summary_cli(self):
        # python3 -m lumosim.summary on a search (issue 39: it read .gpus):
        # the 3 best rows as the --csv (the C writer) has them, the
        # throughput the global batch over the step, computed here
        p = py("lumosim.summary", self.kept, "--top", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        out = p.stdout.splitlines()
        self.assertEqual(out[0], "%s: lumosim search result, schema 1, written by: %s"
                         % (self.kept, self.res.attrs["created_by"]))
        self.assertIn("gpt3-15b on 16 h100 GPUs, global batch 32", out[1])
        self.assertIn("ranked by throughput (samples/s)", out[1])
        self.assertEqual(out[2].split()[10:12], ["step_s", "samples/s"])
        rows = _slurp(self.csv).decode().splitlines()
        head = rows[0].split(",")
        for line, got in zip(rows[1:4], out[3:6]):
            c = dict(zip(head, line.split(",")))
            step = int(c["step_ns"]) / 1e9
            want = [c["rank"], c["tp"], c["pp"], c["dp"], c["cp"], c["ep"], c["micro_batch"],
                    "inter:" + c["vstages"] if int(c["vstages"]) > 1 else "1f1b", c["recompute"],
                    "on" if c["distributed_optimizer"] == "1" else "off", "%.3f" % step, "%.2f" % (32 / step)]
            self.assertEqual(got.split()[:12], want, got)
        self.assertEqual(out[6], "(best 3 of %d; --top 0 for all)" % (len(rows) - 1))
        p = py("lumosim.summary", self.kept, "--top", "0")
        self.assertEqual(len(p.stdout.splitlines()), 3 + len(rows) - 1)
        p = py("lumosim.summary", self.kept, "--csv")
        self.assertEqual(p.returncode, 0, p.stderr)
        got = p.stdout.splitlines()
        self.assertEqual(len(got), len(rows))
        self.assertEqual([x.split(",")[2:5] for x in got[1:]], [x.split(",")[1:4] for x in rows[1:]])

    def test_output_rules(self):
        # its own previous result is replaced; a store, an input and the
        # --csv file are not, and nothing is left behind
        # (--tp 2 in place of 2,4: an option is given once, issue 18)
        args = list(self.ARGS)
        args[args.index("--tp") + 1] = "2"
        run(*args, "-o", self.h5)
        self.assertEqual(len(lumosim.load(self.h5).candidates), len(self.res.candidates) // 2)
        store = F["synth"]
        before = _slurp(store)
        p = run(*self.ARGS, "-o", store, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn("graph store", p.stderr)
        self.assertEqual(_slurp(store), before)
        spec = os.path.join(TMP, "h100.json")
        shutil.copy(os.path.join(SOURCE, "data", "gpu", "h100.json"), spec)
        sb = _slurp(spec)
        args = list(self.ARGS)
        args[args.index("h100")] = spec
        p = run(*args, "-o", spec, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("input", p.stderr)
        self.assertEqual(_slurp(spec), sb)
        p = run(*self.ARGS, "-o", self.csv, "--csv", self.csv, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("both", p.stderr)
        self.assertEqual(sorted(f for f in os.listdir(TMP) if "tmp" in f), [])
        p = run("sim", self.h5, check=False)
        self.assertNotEqual(p.returncode, 0)


class SearchFromTests(unittest.TestCase):
    """lumosim search --from a traced job -o (issue 39): what the file does
    not know (the trace's micro-batch size, tokens/s, peak memory) is <NA>
    or NaN, never 0, as --json's null; the throughput is the --json's and
    DP x micro-batches / step, computed here; a file written before the
    throughput column reads with NaN, and lumosim info prints "-"."""

    @classmethod
    def setUpClass(cls):
        cls.h5 = os.path.join(TMP, "search-from.h5")
        p = run("search", "--from", F["store"], "--dp", "1,2", "--micro-batches", "1,2", "--json", "-o", cls.h5)
        cls.json = json.loads(p.stdout)
        cls.res = lumosim.load(cls.h5)

    def test_unknown_is_not_zero(self):
        cand, rk = self.res.candidates, self.res.ranking
        self.assertEqual(len(rk), len(self.json["ranking"]))
        self.assertGreaterEqual(len(rk), 2)
        for x in self.json["ranking"]:
            self.assertEqual((x["micro_batch"], x["tokens_per_s"], x["peak_memory_bytes"]), (None, None, None), x)
        self.assertTrue(cand.micro_batch.isna().all())
        self.assertTrue(cand.peak_memory_bytes.isna().all())
        self.assertTrue(rk.tokens_per_s.isna().all())

    def test_throughput(self):
        self.assertEqual(self.res.throughput_unit, self.json["throughput_unit"])
        self.assertEqual(self.res.throughput_unit, "micro-batches/s")
        for (_, r), x in zip(self.res.ranking.iterrows(), self.json["ranking"]):
            self.assertEqual(int(r.candidate), x["candidate"])
            want = x["dp"] * x["micro_batches"] / (x["step_ns"] / 1e9)
            self.assertAlmostEqual(r.throughput_per_s, x["throughput_per_s"], delta=5e-4)
            self.assertAlmostEqual(r.throughput_per_s, want, delta=1e-9 * want)

    def test_info(self):
        out = run("info", self.h5).stdout
        self.assertNotIn("micro-batch 0", out)
        best = self.res.ranking.iloc[0]
        self.assertIn("1. TP %d PP %d DP %d micro-batch - 1f1b micro-batches %d: step %.3f s, %.2f micro-batches/s"
                      % (best.tp, best.pp, best.dp, self.json["ranking"][0]["micro_batches"], best.step_ns / 1e9,
                         best.throughput_per_s), out)

    def test_summary_cli(self):
        # a traced job's search: the micro-batch size and tokens/s not
        # known ("-", never 0), the throughput in micro-batches/s: DP x
        # micro-batches over the step, as --json has them, computed here
        p = py("lumosim.summary", self.h5)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout.splitlines()
        self.assertIn("from %s" % F["store"], out[1])
        self.assertIn("ranked by throughput (micro-batches/s)", out[1])
        self.assertEqual(len(out), 3 + len(self.json["ranking"]))
        for x, got in zip(self.json["ranking"], out[3:]):
            f = got.split()
            self.assertEqual(f[1:4] + [f[6]], [str(x["tp"]), str(x["pp"]), str(x["dp"]), "-"], got)
            step = x["step_ns"] / 1e9
            self.assertEqual(f[10:], ["%.3f" % step, "%.2f" % (x["dp"] * x["micro_batches"] / step), "-", "-"], got)

    def test_older_file(self):
        old = os.path.join(TMP, "search-from-old.h5")
        shutil.copy(self.h5, old)
        with h5py.File(old, "r+") as f:
            del f["search/candidates/throughput_per_s"]
            del f["search/candidates"].attrs["throughput_unit"]
            del f["search"].attrs["rank_by"]
        res = lumosim.load(old)
        self.assertIsNone(res.throughput_unit)
        self.assertTrue(res.candidates.throughput_per_s.isna().all())
        self.assertTrue(res.ranking.tokens_per_s.isna().all())
        self.assertEqual(list(res.ranking.candidate), list(self.res.ranking.candidate))
        out = run("info", old).stdout
        self.assertIn("  best %d:\n" % len(res.ranking), out)
        self.assertIn("s, throughput -\n", out)
        self.assertNotIn("micro-batch 0", out)


class BadInputTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = os.path.join(TMP, "bad")
        os.makedirs(d, exist_ok=True)
        cls.files = {}

        def path(n):
            cls.files[n] = os.path.join(d, n)
            return cls.files[n]

        with open(path("text.h5"), "w") as f:
            f.write("this is not HDF5\n" * 100)
        with h5py.File(path("foreign.h5"), "w") as f:
            f["x"] = np.arange(3)
        with h5py.File(path("wrongkind.h5"), "w") as f:
            f.attrs["kind"] = np.bytes_("something-else")
            f.attrs["schema_version"] = np.int32(1)
        shutil.copy(F["res"], path("v2.h5"))
        with h5py.File(cls.files["v2.h5"], "r+") as f:
            f.attrs["schema_version"] = np.int32(2)
        shutil.copy(F["store"], path("v2store.h5"))
        with h5py.File(cls.files["v2store.h5"], "r+") as f:
            f.attrs["schema_version"] = np.int32(2)
        shutil.copy(F["res"], path("nods.h5"))
        with h5py.File(cls.files["nods.h5"], "r+") as f:
            del f["runs/base/iterations/error"]
        shutil.copy(F["synth_res"], path("badoff.h5"))
        with h5py.File(cls.files["badoff.h5"], "r+") as f:
            f["runs/full/gpus/iter_offset"][3] = 7
        shutil.copy(F["synth"], path("badkind.h5"))
        with h5py.File(cls.files["badkind.h5"], "r+") as f:
            k = f["nodes/kind"][()]
            k[0] = 9
            f["nodes/kind"][...] = k
        with open(F["res"], "rb") as f:
            data = f.read()
        with open(path("truncated.h5"), "wb") as f:
            f.write(data[:len(data) // 2])
        cls.files["missing.h5"] = os.path.join(d, "missing.h5")

    def expect(self, name, pattern, **kw):
        path = self.files[name]
        with self.assertRaises(lumosim.LumosimFileError) as cm:
            lumosim.load(path, **kw)
        e = cm.exception
        msg = str(e)
        self.assertTrue(msg.startswith(path + ": "), msg)
        self.assertEqual(e.path, path)
        self.assertNotIn("\n", msg)
        self.assertRegex(msg, pattern)
        self.assertIsInstance(e, ValueError)
        return msg

    def test_not_hdf5(self):
        self.expect("text.h5", "not an HDF5 file")

    def test_missing(self):
        self.expect("missing.h5", "no such file")

    def test_not_lumosim(self):
        self.expect("foreign.h5", "not a lumosim file")
        self.expect("wrongkind.h5", "not a lumosim file")

    def test_schema_version(self):
        self.expect("v2.h5", r"schema version 2 not supported \(this lumosim reads 1\)")
        self.expect("v2store.h5", r"schema version 2 not supported")

    def test_missing_dataset(self):
        self.expect("nods.h5", "/runs/base/iterations/error")

    def test_bad_offsets(self):
        self.expect("badoff.h5", "iter_offset of GPU 3")

    def test_bad_enum(self):
        self.expect("badkind.h5", "kind 9", nodes=True, gpu=0)

    def test_truncated(self):
        self.expect("truncated.h5", "truncated|corrupt")

    def test_directory(self):
        with self.assertRaises(lumosim.LumosimFileError):
            lumosim.load(TMP)

    def test_compare_cli(self):
        for name in ("text.h5", "foreign.h5", "v2.h5", "nods.h5", "truncated.h5", "missing.h5", "badoff.h5"):
            p = py("lumosim.compare", self.files[name], F["res"], "--run", "base")
            self.assertNotEqual(p.returncode, 0, name)
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertIn(self.files[name], p.stderr)
            self.assertEqual(p.stdout, "")
        for args, what in (([F["res"]], "holds 2 runs"),               # which run?
                           ([F["res"], "--run", "nosuch"], "nosuch"),
                           ([F["store"]], "graph store"),
                           ([F["res"], "--frobnicate"], "frobnicate")):
            p = py("lumosim.compare", *args)
            self.assertNotEqual(p.returncode, 0, args)
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertIn(what, p.stderr)

    def test_summary_cli(self):
        p = py("lumosim.summary", F["res"], F["synth_res"], F["synth"], "--ranks", "--kernels", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        for name in ("base", "noev", "full"):
            self.assertRegex(p.stdout, r"(?m)^%s\s" % name)
        p = py("lumosim.summary", self.files["v2.h5"])
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.splitlines()), 1)
        self.assertIn("schema version 2", p.stderr)


if __name__ == "__main__":
    print("lumosim: %s\nsource:  %s\npython:  %s (h5py %s, pandas %s)"
          % (LUMOSIM, SOURCE, sys.executable, h5py.__version__, pd.__version__))
    if not os.access(LUMOSIM, os.X_OK):
        print("error: no lumosim binary at %s (pass --lumosim PATH or LUMOSIM)" % LUMOSIM)
        sys.exit(1)
    prog = unittest.main(argv=ARGV, exit=False, verbosity=2)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
