"""Graph-store layout readers (internal): the per-GPU table and one GPU's
node table, for a graph store (group "") and for the graphs a result archive
embeds (group "/runs/NAME/graph"). Layout: docs/hdf5-schema.md, "Graph store".
"""

import numpy as np
import pandas as pd

from . import _schema
from ._h5 import apply_patches, decode_strings, strings_like, texts

_GPU_EXTENTS = ("node", "edge", "proc", "iter", "coll", "string", "char")


def gpu_count(r, group):
    return r.nrows("%s/gpus/rank" % group)


def gpu_table(r, group):
    """One row per GPU of a graph (see docs/python.md, "GraphStore.gpus")."""
    g = "%s/gpus" % group
    n = gpu_count(r, group)
    ext = {}
    tables = {"node": "nodes/kind", "edge": "edges/in_src", "proc": "procs/is_gpu", "iter": "iters/name",
              "coll": "colls/kind", "string": "strings/offset", "char": "strings/chars"}
    for p in _GPU_EXTENTS:
        t = "%s/%s" % (group, tables[p])
        if p not in ("node", "edge"):
            ext[p] = r.extents(g, p, n, t, r.nrows(t))
    ext["node"], ext["edge"] = _structure_extents(r, g, n, group)
    ext["strings_like"] = strings_like(r, g, n, ext["string"][1])
    # a GPU's string count: its table's, also when the table is another's
    like = ext["strings_like"]
    nstr = np.where(like >= 0, ext["string"][1][np.maximum(like, 0)], ext["string"][1])
    ext["nstr"] = nstr
    lat = r.col(g + "/latency_mode", n, "u")
    modes = r.enum_names(g + "/latency_mode", _schema.LATENCY_MODES)
    bad = np.nonzero(lat >= len(modes))[0]
    if bad.size:
        r.fail("%s/latency_mode of GPU %d is %d, expected 0..%d" % (g, bad[0], lat[bad[0]], len(modes) - 1))
    is_gpu = r.col("%s/procs/is_gpu" % group, int(ext["proc"][1].sum()), "u")
    proc_gpu = np.repeat(np.arange(n, dtype=np.int64), ext["proc"][1])
    streams = np.bincount(proc_gpu, weights=is_gpu.astype(np.int64), minlength=n).astype(np.int64)
    # the per-GPU values' ranges (lsim_graph_check_tables, graph.h)
    ws = r.check(g + "/world_size", r.col(g + "/world_size", n, "i"), 1, _schema.WORLD_MAX, unknown=-1)
    rank = r.check(g + "/rank", r.col(g + "/rank", n, "i"), -1, np.where(ws > 0, ws, _schema.WORLD_MAX) - 1)
    ns = {c: r.check("%s/%s" % (g, c), r.col("%s/%s" % (g, c), n, "i"), 0, _schema.DUR_MAX, unit=" ns")
          for c in ("queued_gap_ns", "launch_latency_ns")}
    df = pd.DataFrame({
        "gpu": np.arange(n, dtype=np.int64),
        "rank": rank,
        "world_size": ws,
        "source": texts(r.col(g + "/source", n, "S")),
        "source_size_bytes": r.col(g + "/source_size", n, "i").astype(np.int64),
        "source_crc32": r.col(g + "/source_crc32", n, "u").astype(np.int64),
        "latency_mode": pd.Categorical([modes[int(x)] for x in lat], categories=list(modes)),
        "nodes": ext["node"][1],
        "edges": ext["edge"][1],
        "procs": ext["proc"][1],
        "gpu_streams": np.asarray(streams, dtype=np.int64),
        "iterations": ext["iter"][1],
        "collectives": ext["coll"][1],
        "strings": nstr,
        "string_bytes": ext["char"][1],
        "t0_ns": r.col(g + "/t0", n, "i").astype(np.int64),
        "queued_gap_ns": ns["queued_gap_ns"],
        "launch_latency_ns": ns["launch_latency_ns"],
        "launch_samples": r.col(g + "/launch_samples", n, "u").astype(np.int64),
        "prewindow_gpu_nodes": r.col(g + "/prewindow", n, "u").astype(np.int64),
        "releases": r.col(g + "/releases", n, "u").astype(np.int64),
        "sync_events_used": r.col(g + "/sync_events_used", n, "u").astype(np.int64),
    })
    for ds, prefix, fallback in (("edges_by_class", "edges_", _schema.EDGE_CLASSES),
                                 ("inferred_by_class", "inferred_", _schema.EDGE_CLASSES),
                                 ("dropped", "dropped_", _schema.DROP_REASONS)):
        a, names = r.col2("%s/%s" % (g, ds), n, len(fallback), "u")
        for j, c in enumerate(names or fallback):
            df[prefix + c] = a[:, j].astype(np.int64)
    return df, ext


def _structure_extents(r, g, n, group):
    """Checked node and edge offsets and counts. A GPU's rows are its own
    (the next ones) or, shared structure (docs/hdf5-schema.md), those of an
    earlier GPU with rows of its own and the same node and edge counts: it
    then adds none. Returns ((node_off, node_cnt), (edge_off, edge_cnt))."""
    no = r.col(g + "/node_offset", n, "u").astype(np.int64)
    nc = r.col(g + "/node_count", n, "u").astype(np.int64)
    eo = r.col(g + "/edge_offset", n, "u").astype(np.int64)
    ec = r.col(g + "/edge_count", n, "u").astype(np.int64)
    own = {}  # node offset -> GPU with rows of its own there
    an = ae = 0
    for i in range(n):
        if no[i] != an and nc[i]:
            j = own.get(int(no[i]))
            if j is None or nc[j] != nc[i] or eo[j] != eo[i] or ec[j] != ec[i]:
                r.fail("%s/node_offset of GPU %d is %d: neither the next rows (%d) nor the node and edge rows "
                       "of an earlier GPU with the same counts" % (g, i, no[i], an))
            continue
        if eo[i] != ae:
            r.fail("%s/edge_offset of GPU %d is %d, expected %d (offsets are the prefix sums of the counts)"
                   % (g, i, eo[i], ae))
        if nc[i]:
            own[int(no[i])] = i
        an += int(nc[i])
        ae += int(ec[i])
    for table, rows in (("nodes/kind", an), ("edges/in_src", ae)):
        t = "%s/%s" % (group, table)
        if r.nrows(t) != rows:
            r.fail("%s has %d rows, expected %d (from the offsets and counts)" % (t, r.nrows(t), rows))
    return (no, nc), (eo, ec)


def _own_strings(r, group, ext, gpu):
    so, sc = int(ext["string"][0][gpu]), int(ext["string"][1][gpu])
    co, cc = int(ext["char"][0][gpu]), int(ext["char"][1][gpu])
    offs = r.col("%s/strings/offset" % group, None, "u", so, so + sc).astype(np.int64)
    b = r.col("%s/strings/chars" % group, None, "u", co, co + cc).astype(np.uint8).tobytes()
    out = []
    for k, o in enumerate(offs):
        end = b.find(b"\0", int(o)) if o < cc else -1
        if end < 0:
            r.fail("%s/strings of GPU %d: string %d is out of range or not NUL-terminated" % (group, gpu, k))
        out.append(b[int(o):end].decode("utf-8", "replace"))
    return out


def gpu_strings(r, group, ext, gpu):
    """The string table of one GPU as a list (index = local string id); a
    GPU whose strings are another's (shared strings) gets that table with
    its own rows put in place."""
    rows = _own_strings(r, group, ext, gpu)
    t = int(ext["strings_like"][gpu])
    if t < 0:
        return rows
    so, sc = int(ext["string"][0][gpu]), int(ext["string"][1][gpu])
    ids = r.col("%s/strings/id" % group, None, "u", so, so + sc).astype(np.int64)
    return apply_patches(r, group, gpu, _own_strings(r, group, ext, t), rows, ids)


def _check_range(r, where, gpu, a, lo, hi, what):
    bad = np.nonzero((a < lo) | (a >= hi))[0]
    if bad.size:
        r.fail("%s of GPU %d: node %d has %s %d, the GPU has %d" % (where, gpu, bad[0], what, a[bad[0]], hi))


def node_table(r, group, ext, gpu):
    """One GPU's nodes (see docs/python.md, "node tables")."""
    ngpus = len(ext["node"][0])
    if not 0 <= gpu < ngpus:
        raise IndexError("%s: GPU %d out of range (the graph has %d GPUs)" % (r.path, gpu, ngpus))
    no, nc = int(ext["node"][0][gpu]), int(ext["node"][1][gpu])
    po, pc = int(ext["proc"][0][gpu]), int(ext["proc"][1][gpu])
    io, ic = int(ext["iter"][0][gpu]), int(ext["iter"][1][gpu])
    co, cc = int(ext["coll"][0][gpu]), int(ext["coll"][1][gpu])
    ec = int(ext["edge"][1][gpu])
    strings = gpu_strings(r, group, ext, gpu)

    def ncol(name, kinds="iu"):
        return r.col("%s/nodes/%s" % (group, name), None, kinds, no, no + nc)

    kind = ncol("kind")
    kinds = r.enum_names(group + "/nodes/kind", _schema.NODE_KINDS)
    _check_range(r, group + "/nodes/kind", gpu, kind, 0, len(kinds), "kind")
    name = ncol("name").astype(np.int64)
    _check_range(r, group + "/nodes/name", gpu, name, 0, len(strings), "string id")
    proc = ncol("proc").astype(np.int64)
    _check_range(r, group + "/nodes/proc", gpu, proc, 0, pc, "processor")
    it = ncol("iter").astype(np.int64)
    _check_range(r, group + "/nodes/iter", gpu, it, -1, ic, "iteration")
    coll = ncol("coll").astype(np.int64)
    _check_range(r, group + "/nodes/coll", gpu, coll, -1, cc, "collective")
    in_off = ncol("in_off").astype(np.int64)
    if nc and (in_off[0] != 0 or np.any(np.diff(in_off) < 0) or in_off[-1] > ec):
        r.fail("%s/nodes/in_off of GPU %d is not monotone from 0 within the GPU's %d edges" % (group, gpu, ec))
    flags = ncol("flags").astype(np.int64)
    obs_start = ncol("obs_start").astype(np.int64)

    is_gpu = r.col("%s/procs/is_gpu" % group, None, "u", po, po + pc).astype(bool)
    pid = r.col("%s/procs/pid" % group, None, "i", po, po + pc).astype(np.int64)
    tid = r.col("%s/procs/tid" % group, None, "i", po, po + pc).astype(np.int64)
    iname = r.col("%s/iters/name" % group, None, "u", io, io + ic).astype(np.int64)
    _check_range(r, group + "/iters/name", gpu, iname, 0, len(strings), "string id")
    iter_names = np.array([strings[k] for k in iname] + [""], dtype=object)
    ckind = r.col("%s/colls/kind" % group, None, "u", co, co + cc).astype(np.int64)
    coll_kinds = r.enum_names(group + "/colls/kind", _schema.COLL_KINDS)
    _check_range(r, group + "/colls/kind", gpu, ckind, 0, len(coll_kinds), "collective kind")
    row = "GPU %d, collective" % gpu
    cbytes = r.check(group + "/colls/bytes", r.col("%s/colls/bytes" % group, None, "i", co, co + cc), -1,
                     _schema.BYTES_MAX, row)
    cgroup = r.check(group + "/colls/group_size", r.col("%s/colls/group_size" % group, None, "i", co, co + cc), 1,
                     _schema.WORLD_MAX, row, unknown=-1)

    names = np.array(strings, dtype=object)
    df = pd.DataFrame({
        "node": np.arange(nc, dtype=np.int64),
        "kind": pd.Categorical.from_codes(kind.astype(np.int64), categories=list(kinds)),
        "name": names[name] if nc else np.array([], dtype=object),
        "proc": proc,
        "is_gpu": is_gpu[proc] if nc else np.array([], dtype=bool),
        "pid": pid[proc] if nc else np.array([], dtype=np.int64),
        "tid": tid[proc] if nc else np.array([], dtype=np.int64),
        "iteration": it,
        "iteration_name": iter_names[it] if nc else np.array([], dtype=object),
        "dur_ns": ncol("dur").astype(np.int64),
        "obs_start_ns": obs_start,
        "obs_end_ns": ncol("obs_end").astype(np.int64),
        "observed": obs_start != _schema.OBS_NONE,
        "release_ns": ncol("release").astype(np.int64),
        "corr": ncol("corr").astype(np.int64),
        "coll": coll,
        "flags": flags,
    })
    for fname, bit in _schema.NODE_FLAGS.items():
        if fname in ("prewindow", "blocking", "collective", "graph_launch"):
            df[fname] = (flags & bit) != 0
    has_coll = coll >= 0
    ck = np.zeros(nc, dtype=np.int64)
    ck[has_coll] = ckind[coll[has_coll]]
    df["coll_kind"] = pd.Categorical.from_codes(ck, categories=list(coll_kinds))
    cb = np.full(nc, -1, dtype=np.int64)
    cb[has_coll] = cbytes[coll[has_coll]]
    df["coll_bytes"] = cb
    cg = np.full(nc, -1, dtype=np.int64)
    cg[has_coll] = cgroup[coll[has_coll]]
    df["coll_group_size"] = cg
    df["in_edges"] = np.diff(np.append(in_off, ec)) if nc else np.array([], dtype=np.int64)
    # the training phase and forward op (optional columns: absent in stores
    # written before them, which read as unknown / -1, as the C reader does)
    phases = _schema.PHASES
    if r.has("%s/nodes/phase" % group):
        ph = ncol("phase").astype(np.int64)
        phases = r.enum_names(group + "/nodes/phase", _schema.PHASES)
        _check_range(r, group + "/nodes/phase", gpu, ph, 0, len(phases), "phase")
    else:
        ph = np.zeros(nc, dtype=np.int64)
    df["phase"] = pd.Categorical.from_codes(ph, categories=list(phases))
    df["fwd_seq"] = (ncol("fwd_seq").astype(np.int64) if r.has("%s/nodes/fwd_seq" % group)
                     else np.full(nc, _schema.NO_FWD_SEQ, dtype=np.int64))
    return df


def node_rows(ext):
    """Every GPU's node rows in the flat node table, GPU after GPU: a GPU
    that shares another's structure reads that GPU's rows."""
    off, cnt = ext["node"]
    n = int(cnt.sum())
    if not n:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(off, cnt) + np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)


def gpus_observed(r, group, ext):
    """Per GPU: whether any of its nodes has an observed start. Counted over
    the stored rows once (a GPU that shares another's rows gets that GPU's
    count), never a row per GPU and node: 1.15 G of them at 65,536 GPUs."""
    off, cnt = ext["node"]
    obs = r.col("%s/nodes/obs_start" % group, r.nrows("%s/nodes/kind" % group), "i")
    seen = np.concatenate(([0], np.cumsum(obs != _schema.OBS_NONE, dtype=np.int64)))
    return (seen[off + cnt] - seen[off]) > 0


def flat_gpu_nodes(r, group, ext):
    """All GPUs' nodes as flat arrays for the per-kernel summary: dict with
    gpu, kind, name (str), obs_start, obs_end, flags (flat row order)."""
    ngpus = len(ext["node"][0])
    n = int(ext["node"][1].sum())
    strings, soff = decode_strings(r, group, "%s/gpus" % group, ngpus)
    gpu = np.repeat(np.arange(ngpus, dtype=np.int64), ext["node"][1])
    rows = node_rows(ext)
    table = r.nrows("%s/nodes/kind" % group)

    def col(name, kinds):
        return r.col("%s/nodes/%s" % (group, name), table, kinds)[rows]

    kind = col("kind", "u").astype(np.int64)
    kinds = r.enum_names("%s/nodes/kind" % group, _schema.NODE_KINDS)
    bad = np.nonzero(kind >= len(kinds))[0]
    if bad.size:
        r.fail("%s/nodes/kind: flat row %d has kind %d" % (group, bad[0], kind[bad[0]]))
    name = col("name", "u").astype(np.int64)
    scnt = ext["nstr"]
    bad = np.nonzero(name >= scnt[gpu])[0] if n else bad
    if bad.size:
        g = int(gpu[bad[0]])
        r.fail("%s/nodes/name of GPU %d: node %d has string id %d, the GPU has %d"
               % (group, g, bad[0] - ext["node"][0][g], name[bad[0]], scnt[g]))
    return {
        "gpu": gpu,
        "kind": kind,
        "kinds": kinds,
        "name_row": soff[gpu] + name if n else name,
        "strings": np.array(strings, dtype=object),
        "obs_start": col("obs_start", "i").astype(np.int64),
        "obs_end": col("obs_end", "i").astype(np.int64),
        "flags": col("flags", "u").astype(np.int64),
    }
