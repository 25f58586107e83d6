#!/usr/bin/env python3
"""chakra_et.py MODE ARGS...  (environment: LUMOSIM; stdlib only)

Chakra execution traces out of and into lumosim (docs/chakra.md). The
Chakra files this test makes or reads are encoded and decoded here, by a
protobuf wire-format coder of its own (varints, length-delimited fields;
the field numbers of mlcommons/chakra's et_def.proto), not by lumosim's
protobuf-c code, so the two must agree on the format independently.

  roundtrip synth
        a 64-GPU synthesized job (TP2 PP4 DP8): export --chakra, build
        --chakra, sim --json of both stores byte for byte equal (every
        GPU's predicted window, iterations, breakdown: the prediction to
        the nanosecond); the imported store shares as many GPUs' node and
        edge rows as the exported one (lumosim info); exporting the
        imported store gives the same files
  roundtrip whatif
        the same for a what-if store whose GPU 1 is slowed (its node count
        and tables its replicas', its durations its own)
  roundtrip trace TRACES...
        the same for a store built from traces (skips, 77, when missing)
  decode
        the exported files of a synthesized 8-GPU job decoded here: node
        and dependency counts per GPU against lumosim info's table, the
        collectives' sizes against the store's /colls/bytes (h5dump), every
        pipeline send's and receive's comm_src and comm_dst the GPU and its
        peer in the other stage
  fixtures
        hand-made Chakra files (a three-node chain with a parallel branch,
        a two-rank all-reduce, a send/recv pair) imported and simulated:
        predicted times against the times worked out here from the
        durations; whatif and report take the imported store
  bad
        corrupt files (truncated varint, truncated message, unknown node
        type, unsupported node type, a dependency on a missing node, a
        cycle, collectives on groups the ranks do not share): exit 1, one
        line naming the file (and the node), no store written
  refuse
        export onto an existing file, into a directory holding other .et
        files, from something that is not a store, onto a name that is a
        directory: one line, exit 1, nothing written
"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

LUMOSIM = os.environ.get("LUMOSIM", "lumosim")
SKIP = 77


def fail(msg):
    print("chakra_et: " + msg)
    sys.exit(1)


def run(args, ok=True):
    p = subprocess.run([LUMOSIM] + args, capture_output=True, text=True)
    if ok and p.returncode != 0:
        fail("lumosim %s failed (%d): %s" % (" ".join(args), p.returncode, p.stderr.strip()))
    return p


# ------------------------------------------------------------ the wire format

def varint(v):
    v &= (1 << 64) - 1  # negative int64: two's complement, ten bytes
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def f_varint(field, v):
    return key(field, 0) + varint(v)


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return key(field, 2) + varint(len(b)) + b


def f_packed(field, values):
    return f_bytes(field, b"".join(varint(v) for v in values)) if values else b""


# AttributeProto: name 1; int64_val 9; bool_val 27; string_val 29
def attr(name, value):
    body = f_bytes(1, name)
    if isinstance(value, bool):
        body += f_varint(27, int(value))
    elif isinstance(value, int):
        body += f_varint(9, value)
    elif isinstance(value, list):  # Int64List (field 10), values packed
        body += f_bytes(10, f_packed(1, value) or f_bytes(1, b""))
    else:
        body += f_bytes(29, value)
    return body


# NodeType and CollectiveCommType values of et_def.proto
COMP, SEND, RECV, COLL, STORAGE = 4, 5, 6, 7, 8
ALL_REDUCE = 0


def node(nid, name, ntype, dur_us, ctrl=(), data=(), attrs=()):
    b = f_varint(1, nid) + f_bytes(2, name) + f_varint(3, ntype)
    b += f_packed(4, list(ctrl)) + f_packed(5, list(data)) + f_varint(7, dur_us)
    for n, v in attrs:
        b += f_bytes(10, attr(n, v))
    return b


def metadata():
    return f_bytes(1, "0.0.4")  # GlobalMetadata.version


def et_file(path, messages):
    with open(path, "wb") as f:
        for m in messages:
            f.write(varint(len(m)) + m)


def read_varint(buf, pos):
    v, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, pos


def fields(buf):
    """(field, wire type, value) of one message: ints or bytes."""
    pos = 0
    while pos < len(buf):
        k, pos = read_varint(buf, pos)
        f, w = k >> 3, k & 7
        if w == 0:
            v, pos = read_varint(buf, pos)
        elif w == 2:
            n, pos = read_varint(buf, pos)
            v, pos = buf[pos:pos + n], pos + n
        elif w == 1:
            v, pos = buf[pos:pos + 8], pos + 8
        elif w == 5:
            v, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError("wire type %d" % w)
        yield f, w, v


def decode_file(path):
    """The nodes of a Chakra ET file: dicts of type, ctrl/data dep counts,
    integer attributes."""
    buf = open(path, "rb").read()
    pos, msgs = 0, []
    while pos < len(buf):
        n, pos = read_varint(buf, pos)
        msgs.append(buf[pos:pos + n])
        pos += n
    nodes = []
    for m in msgs[1:]:
        d = {"type": 0, "ctrl": 0, "data": 0, "attr": {}}
        for f, w, v in fields(m):
            if f == 3:
                d["type"] = v
            elif f in (4, 5):
                cnt = 1 if w == 0 else len(list(_varints(v)))
                d["ctrl" if f == 4 else "data"] += cnt
            elif f == 10:
                name, val = None, None
                for af, aw, av in fields(v):
                    if af == 1:
                        name = av.decode()
                    elif af == 9 and aw == 0:
                        val = av - (1 << 64) if av >> 63 else av
                if name is not None and val is not None:
                    d["attr"][name] = val
        nodes.append(d)
    return nodes


def decode_file_pb(path, pb2):
    """The same as decode_file, read by Python's protobuf (python3-protobuf)
    with classes protoc generated from io/chakra/et_def.proto: a decoder
    that is not the test's own, as the issue asks."""
    from google.protobuf.internal.decoder import _DecodeVarint
    buf = open(path, "rb").read()
    pos, first, nodes = 0, True, []
    while pos < len(buf):
        n, pos = _DecodeVarint(buf, pos)
        msg = pb2.GlobalMetadata() if first else pb2.Node()
        msg.ParseFromString(buf[pos:pos + n])
        pos += n
        if first:
            first = False
            continue
        attrs = {a.name: a.int64_val for a in msg.attr if a.WhichOneof("value") == "int64_val"}
        nodes.append({"type": msg.type, "ctrl": len(msg.ctrl_deps), "data": len(msg.data_deps), "attr": attrs})
    return nodes


def protobuf_classes(tmp):
    """et_def_pb2 compiled by protoc from the project's .proto, or None where
    python3-protobuf or protoc is missing (CI installs both)."""
    protoc = shutil.which("protoc")
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        return None
    if not protoc:
        return None
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "io", "chakra")
    out = os.path.join(tmp, "pb")
    os.makedirs(out, exist_ok=True)
    subprocess.run([protoc, "--proto_path", src, "--python_out", out, "et_def.proto"], check=True)
    sys.path.insert(0, out)
    import et_def_pb2
    return et_def_pb2


def _varints(b):
    pos = 0
    while pos < len(b):
        v, pos = read_varint(b, pos)
        yield v


# ------------------------------------------------------------ modes

def sim_json(store):
    return run(["sim", "--json", store]).stdout


def shared_line(store):
    """lumosim info's line on a store's shared structure, None without one."""
    for line in run(["info", store]).stdout.splitlines():
        if line.strip().startswith("shared structure:"):
            return line.strip()
    return None


def roundtrip(tmp, store, label, same_sharing=True):
    et, back, et2 = (os.path.join(tmp, x) for x in ("et", "back.h5", "et2"))
    run(["export", "--chakra", et, store])
    files = sorted(os.listdir(et))
    if not files:
        fail(label + ": export wrote no files")
    run(["build", "--chakra", et, "-o", back])
    a, b = sim_json(store), sim_json(back)
    if a != b:
        fail(label + ": sim --json differs after export and import")
    doc = json.loads(a)
    if not doc["ranks"] or any(r["window"]["predicted_ns"] <= 0 for r in doc["ranks"]):
        fail(label + ": no predicted windows to compare")
    # the GPUs the import took from another's structure keep one copy of
    # its rows, as the store exported held them (not after a perturbed GPU:
    # the import compares a file with the last GPU it read whole only)
    sa, sb = shared_line(store), shared_line(back)
    if same_sharing and sa != sb:
        fail(label + ": the imported store's shared structure is %r, the exported store's %r" % (sb, sa))
    run(["export", "--chakra", et2, back])
    for f in files:
        g = f.replace(os.path.basename(store)[:-3], "back", 1)
        if open(os.path.join(et, f), "rb").read() != open(os.path.join(et2, g), "rb").read():
            fail(label + ": %s exported again from the imported store differs" % f)
    print("ok %s: %d GPUs, sim equal, files equal after a second export" % (label, len(doc["ranks"])))


def mode_roundtrip(tmp, args):
    store = os.path.join(tmp, "job.h5")
    if args[0] == "synth":
        run(["synth", "--model", "gpt3-15b", "--layers", "4", "--tp", "2", "--pp", "4", "--dp", "8",
             "--micro-batch", "1", "--global-batch", "32", "-o", store])
        roundtrip(tmp, store, "synth 64 GPUs")
    elif args[0] == "whatif":
        # a slowed GPU has the node count and the tables of its replicas
        # but other durations: its records are its own, not theirs
        src = os.path.join(tmp, "src.h5")
        run(["synth", "--model", "gpt3-15b", "--layers", "4", "--tp", "2", "--pp", "2", "--dp", "2",
             "--micro-batch", "1", "--global-batch", "8", "-o", src])
        run(["whatif", src, "--slow-gpu", "1:1.5", "-o", store])
        roundtrip(tmp, store, "what-if with a slow GPU, 8 GPUs", same_sharing=False)
    else:
        traces = args[1:]
        if not all(os.path.exists(t) for t in traces):
            print("skip: traces missing")
            sys.exit(SKIP)
        run(["build"] + traces + ["-o", store])
        roundtrip(tmp, store, "traces " + " ".join(os.path.basename(t) for t in traces))


def mode_decode(tmp):
    store, et = os.path.join(tmp, "job.h5"), os.path.join(tmp, "et")
    run(["synth", "--model", "gpt3-15b", "--layers", "4", "--tp", "2", "--pp", "2", "--dp", "2",
         "--micro-batch", "1", "--global-batch", "8", "-o", store])
    run(["export", "--chakra", et, store])
    info = run(["info", store]).stdout.splitlines()
    # the store's per-GPU table: gpu rank nodes edges procs iters colls source
    rows = {}
    at = [i for i, l in enumerate(info) if l.split()[:4] == ["gpu", "rank", "nodes", "edges"]]
    if not at:
        fail("no per-GPU table in lumosim info")
    for l in info[at[0] + 1:]:
        w = l.split()
        if len(w) < 7 or not w[0].isdigit():
            break
        rows[int(w[0])] = (int(w[2]), int(w[3]), int(w[6]))
    if len(rows) != 8:
        fail("info lists %d GPUs, not 8" % len(rows))
    sizes = []
    pb2 = protobuf_classes(tmp)
    if pb2 is None and os.environ.get("CI"):
        fail("python3-protobuf and protoc are needed for the independent decode (CI installs them)")
    for gpu, (nn, ne, nc) in sorted(rows.items()):
        nodes = decode_file(os.path.join(et, "job.%d.et" % gpu))
        if pb2 is not None:
            # Python's protobuf must read the same nodes as the test's decoder
            pbn = decode_file_pb(os.path.join(et, "job.%d.et" % gpu), pb2)
            if pbn != nodes:
                fail("GPU %d: python3-protobuf decodes other nodes than the test's own decoder" % gpu)
        comm = [d for d in nodes if d["type"] in (SEND, RECV, COLL)]
        if len(nodes) != nn:
            fail("GPU %d: %d nodes decoded, the store holds %d" % (gpu, len(nodes), nn))
        deps = sum(d["ctrl"] + d["data"] for d in nodes)
        if deps != ne:
            fail("GPU %d: %d dependencies decoded, the store holds %d edges" % (gpu, deps, ne))
        if len(comm) != nc:
            fail("GPU %d: %d communication nodes, the store holds %d collectives" % (gpu, len(comm), nc))
        if any("comm_size" not in d["attr"] for d in comm):
            fail("GPU %d: a communication node without comm_size" % gpu)
        # Chakra's own fields for a pipeline send or receive (what ASTRA-sim
        # reads): the sender and the receiver, this GPU and its peer in the
        # other stage (ranks t + TP (d + DP p): 4 apart)
        other = gpu + 4 if gpu < 4 else gpu - 4
        p2p = [d for d in nodes if d["type"] in (SEND, RECV)]
        if not p2p:
            fail("GPU %d: no pipeline send or receive decoded" % gpu)
        for d in p2p:
            got = (d["attr"].get("comm_src"), d["attr"].get("comm_dst"))
            want = (gpu, other) if d["type"] == SEND else (other, gpu)
            if got != want:
                fail("GPU %d: a %s with comm_src, comm_dst %s, not %s" % (gpu, "send" if d["type"] == SEND else "receive",
                                                                           got, want))
        sizes += [d["attr"]["comm_size"] for d in comm]
    h5dump = shutil.which("h5dump")
    if h5dump:
        out = subprocess.run([h5dump, "-d", "/colls/bytes", "-y", "-w", "0", store], capture_output=True,
                             text=True).stdout
        data = out.split("DATA {", 1)[1].split("}", 1)[0]
        stored = [int(x) for x in data.replace(",", " ").split()]
        if sorted(stored) != sorted(sizes):
            fail("the collectives' sizes decoded differ from the store's /colls/bytes")
    print("ok decode: 8 GPUs, nodes, dependencies and collectives as the store holds them%s%s"
          % (", sizes as /colls/bytes" if h5dump else "",
             ", read alike by python3-protobuf" if pb2 is not None else " (python3-protobuf missing: own decoder only)"))


def build_dir(tmp, name, files):
    d = os.path.join(tmp, name)
    os.mkdir(d)
    for fname, msgs in files.items():
        et_file(os.path.join(d, fname), [metadata()] + msgs)
    return d


def predicted(tmp, d):
    out = os.path.join(tmp, os.path.basename(d) + ".h5")
    run(["build", "--chakra", d, "-o", out])
    doc = json.loads(sim_json(out))
    return [r["window"]["predicted_ns"] for r in doc["ranks"]]


def mode_fixtures(tmp):
    # one rank: a(10 us) -> b(20 us) -> c(5 us), and a -> d(7 us) -> c as a
    # data dependency; c waits for the longer branch
    a, b, c, d = 10, 20, 5, 7
    chain = build_dir(tmp, "chain", {"t.0.et": [
        node(1, "a", COMP, a), node(2, "b", COMP, b, ctrl=[1]), node(3, "d", COMP, d, data=[1]),
        node(4, "c", COMP, c, ctrl=[2], data=[3])]})
    want = (a + max(b, d) + c) * 1000
    got = predicted(tmp, chain)
    if got != [want]:
        fail("chain: predicted %s ns, expected [%d]" % (got, want))
    # two ranks: compute, all-reduce (30 us each), compute. The all-reduce
    # ends on both at the later arrival + its transfer (docs/chakra.md,
    # job.h: unobserved participants transfer in the longest duration)
    pre, ar, post = (10, 40), 30, (5, 8)
    files = {}
    for r in range(2):
        coll = [("comm_type", ALL_REDUCE), ("comm_size", 1 << 20), ("pg_name", "world")]
        files["ar.%d.et" % r] = [node(0, "fwd", COMP, pre[r]), node(1, "allreduce", COLL, ar, ctrl=[0], attrs=coll),
                                 node(2, "opt", COMP, post[r], ctrl=[1])]
    got = predicted(tmp, build_dir(tmp, "allreduce", files))
    end = max(pre) + ar
    want = [(end + post[r]) * 1000 for r in range(2)]
    if got != want:
        fail("all-reduce: predicted %s ns, expected %s" % (got, want))
    # the imported store is one whatif and report take like any other
    ar = os.path.join(tmp, "allreduce.h5")
    wi, html = os.path.join(tmp, "wi.h5"), os.path.join(tmp, "ar.html")
    run(["whatif", ar, "--dp", "2", "-o", wi])
    if len(json.loads(sim_json(wi))["ranks"]) != 4:
        fail("whatif --dp 2 of the imported all-reduce job does not simulate 4 GPUs")
    run(["report", ar, "--html", html])
    if not os.path.getsize(html):
        fail("report of the imported store wrote nothing")
    # a send from rank 0 to rank 1 and its receive: the receive ends with
    # the send, at the later of the two arrivals + the transfer
    s_pre, r_pre, xfer = 12, 3, 9
    files = {"p2p.0.et": [node(0, "work", COMP, s_pre),
                          node(1, "send", SEND, xfer, ctrl=[0], attrs=[("comm_dst", 1), ("comm_size", 4096)])],
             "p2p.1.et": [node(0, "work", COMP, r_pre),
                          node(1, "recv", RECV, xfer, ctrl=[0], attrs=[("comm_src", 0), ("comm_size", 4096)])]}
    got = predicted(tmp, build_dir(tmp, "p2p", files))
    want = [(max(s_pre, r_pre) + xfer) * 1000] * 2
    if got != want:
        fail("send/recv: predicted %s ns, expected %s" % (got, want))
    print("ok fixtures: chain %d ns, all-reduce %s ns, send/recv %s ns" % ((a + max(b, d) + c) * 1000,
                                                                            [(end + p) * 1000 for p in post], want))


def expect_refusal(tmp, d, words, label):
    out = os.path.join(tmp, "refused.h5")
    p = run(["build", "--chakra", d, "-o", out], ok=False)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 1 or len(lines) != 1 or not lines[0].startswith("lumosim: error: "):
        fail("%s: expected exit 1 and one error line, got %d: %r" % (label, p.returncode, p.stderr))
    for w in words:
        if w not in lines[0]:
            fail("%s: the error line does not name %r: %s" % (label, w, lines[0]))
    if os.path.exists(out) or any(f.startswith("refused.h5") for f in os.listdir(tmp)):
        fail(label + ": a store (or its temporary) was left behind")
    if p.stdout:
        fail(label + ": printed to standard output")


def mode_bad(tmp):
    good = [node(1, "a", COMP, 10), node(2, "b", COMP, 5, ctrl=[1])]
    m0, n1 = metadata(), good[0]
    cases = [
        ("varint", "x.0.et", varint(len(m0)) + m0 + b"\x85", ["x.0.et", "length prefix"]),
        ("body", "x.0.et", varint(len(m0)) + m0 + varint(len(n1) + 40) + n1, ["x.0.et", "truncated"]),
        ("garbage", "x.0.et", varint(len(m0)) + m0 + varint(3) + b"\x0a\x09\x01", ["x.0.et", "not a valid"]),
    ]
    for label, fname, raw, words in cases:
        d = os.path.join(tmp, label)
        os.mkdir(d)
        open(os.path.join(d, fname), "wb").write(raw)
        expect_refusal(tmp, d, words, label)
    msgs = {
        "unknown_type": ([node(1, "a", COMP, 1), node(7, "odd", 42, 1, ctrl=[1])], ["node 7 'odd'", "unknown node type 42"]),
        "storage": ([node(3, "io", STORAGE, 1)], ["node 3 'io'", "STORAGE_NODE"]),
        "dangling": ([node(1, "a", COMP, 1), node(2, "b", COMP, 1, ctrl=[1, 99])], ["node 2 'b'", "node 99"]),
        "cycle": ([node(1, "a", COMP, 1, ctrl=[3]), node(2, "b", COMP, 1, ctrl=[1]), node(3, "c", COMP, 1, data=[2]),
                   node(4, "d", COMP, 1, ctrl=[3])], ["cycle"]),
        "self": ([node(5, "e", COMP, 1, ctrl=[5])], ["node 5 'e'", "itself"]),
        "no_comm_type": ([node(1, "ar", COLL, 1)], ["node 1 'ar'", "comm_type"]),
    }
    for label, (nodes, words) in msgs.items():
        d = build_dir(tmp, label, {"x.0.et": nodes})
        expect_refusal(tmp, d, ["x.0.et"] + words, label)
    # a lumosim file edited by hand: its processor table claims 5 nodes on
    # the one processor, which holds 1 (lsim.graph: 16 scalars, 7 + 7 edge
    # classes, 4 drop reasons, all 0 here)
    own = f_bytes(1, "0.0.4") + f_bytes(2, attr("lsim.graph", [0] * 34)) + f_bytes(2, attr("lsim.procs", [0, 0, 0, 5]))
    d = os.path.join(tmp, "edited")
    os.mkdir(d)
    et_file(os.path.join(d, "x.0.et"), [own, node(1, "a", COMP, 1, attrs=[("lsim.kind", 0), ("lsim.proc", 0)])])
    expect_refusal(tmp, d, ["x.0.et", "claims 5 nodes", "say 1"], "edited")
    # two ranks whose all-reduces are on different groups of two
    files = {"g.%d.et" % r: [node(0, "ar", COLL, 5, attrs=[("comm_type", ALL_REDUCE), ("pg_name", "g%d" % r),
                                                           ("comm_group_size", 2)])] for r in range(2)}
    expect_refusal(tmp, build_dir(tmp, "groups", files), ["g.0.et", "group g0"], "groups")
    # directory shape: a missing rank, two prefixes
    d = build_dir(tmp, "gap", {"x.0.et": good, "x.2.et": good})
    expect_refusal(tmp, d, ["x.1.et", "missing"], "gap")
    d = build_dir(tmp, "two", {"x.0.et": good, "y.1.et": good})
    expect_refusal(tmp, d, ["two jobs"], "two")
    print("ok bad: %d corrupt inputs refused with one line, nothing written" % (len(cases) + len(msgs) + 4))


def mode_refuse(tmp):
    store = os.path.join(tmp, "job.h5")
    run(["synth", "--model", "gpt3-15b", "--layers", "2", "--tp", "2", "--pp", "1", "--dp", "1",
         "--micro-batch", "1", "--global-batch", "2", "-o", store])
    store_sha = hashlib.sha256(open(store, "rb").read()).hexdigest()

    def refused(args, words, label):
        before = sorted(os.listdir(tmp))
        p = run(args, ok=False)
        lines = p.stderr.strip().splitlines()
        if p.returncode != 1 or len(lines) != 1 or not all(w in lines[0] for w in words):
            fail("%s: expected exit 1 and one line naming %s, got %d: %r" % (label, words, p.returncode, p.stderr))
        if sorted(os.listdir(tmp)) != before:
            fail(label + ": files were left behind")

    afile = os.path.join(tmp, "plain.txt")
    open(afile, "w").write("x")
    refused(["export", "--chakra", afile, store], [afile, "not one"], "existing file")
    other = os.path.join(tmp, "other")
    os.mkdir(other)
    open(os.path.join(other, "foreign.0.et"), "wb").write(b"")
    refused(["export", "--chakra", other, store], ["foreign.0.et"], "foreign .et")
    if sorted(os.listdir(other)) != ["foreign.0.et"]:
        fail("foreign .et: the directory changed")
    refused(["export", "--chakra", os.path.join(tmp, "new"), afile], [afile, "not a lumosim graph store"],
            "not a store")
    # GPU 1's name taken by a directory: refused before any file is
    # written, so GPU 0's file is not there either (all or nothing)
    blocked = os.path.join(tmp, "blocked")
    os.makedirs(os.path.join(blocked, "job.1.et"))
    refused(["export", "--chakra", blocked, store], ["job.1.et"], "directory in the way")
    if sorted(os.listdir(blocked)) != ["job.1.et"]:
        fail("directory in the way: a partial export was left: %s" % os.listdir(blocked))
    # no file the user did not name as output is changed: the plain file,
    # the foreign .et and the store keep their bytes
    if open(afile).read() != "x":
        fail("existing file: its bytes changed")
    if open(os.path.join(other, "foreign.0.et"), "rb").read() != b"":
        fail("foreign .et: its bytes changed")
    if hashlib.sha256(open(store, "rb").read()).hexdigest() != store_sha:
        fail("the input store changed")
    print("ok refuse: 4 bad exports refused with one line, nothing written, nothing changed")


def protobuf_python():
    """Re-run this script under an interpreter that has google.protobuf when
    the one CTest found lacks it: python3 on PATH may be a pyenv or venv one,
    while Debian's python3-protobuf is in /usr/bin/python3 (as in
    tests/python/run.sh)."""
    try:
        import google.protobuf  # noqa: F401
        return
    except ImportError:
        pass
    for p in (os.environ.get("LSIM_PYTHON", ""), "/usr/bin/python3"):
        if not p or not os.path.exists(p) or os.path.realpath(p) == os.path.realpath(sys.executable):
            continue
        if subprocess.run([p, "-c", "import google.protobuf"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            os.execv(p, [p] + sys.argv)


def main():
    if len(sys.argv) < 2:
        fail("usage: chakra_et.py MODE ARGS...")
    if sys.argv[1] == "decode":
        protobuf_python()
    tmp = tempfile.mkdtemp(prefix="lsim_chakra_")
    try:
        mode = sys.argv[1]
        if mode == "roundtrip":
            mode_roundtrip(tmp, sys.argv[2:])
        elif mode == "decode":
            mode_decode(tmp)
        elif mode == "fixtures":
            mode_fixtures(tmp)
        elif mode == "bad":
            mode_bad(tmp)
        elif mode == "refuse":
            mode_refuse(tmp)
        else:
            fail("unknown mode " + mode)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
