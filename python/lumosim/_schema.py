"""The one place where the package mirrors lumosim's C enums and constants.

The HDF5 files name the columns of their 2-D datasets (attribute
``columns``) and the values of their enum columns (attribute ``enum_names``),
and the package reads those names from the file. Files written before
``enum_names`` have no name table for values stored as small integers; for
them the names are here, each table citing the C definition it mirrors (and
docs/hdf5-schema.md, the contract). Change them only together with the C
code and ``schema_version``.
"""

# Root attribute ``schema_version`` values this package reads
# (docs/hdf5-schema.md, "The schema_version rule").
SCHEMA_VERSIONS = (1,)

# Root attribute ``kind``.
KIND_STORE = "lumosim-graphs"
KIND_RESULTS = "lumosim-results"
KIND_SEARCH = "lumosim-search"

# /search/candidates/recompute -- LSIM_RECOMPUTE_MODES, include/lumosim/synth.h.
RECOMPUTE_MODES = ("none", "selective", "full", "op")
# /search/candidates/reason -- LSIM_SEARCH_REASONS, include/lumosim/search.h.
SEARCH_REASONS = ("simulated", "gpus_not_divisible", "shape_not_divisible", "does_not_fit", "redundant", "whatif_refused")

# /nodes/kind -- enum lsim_node_kind, include/lumosim/graph.h (LSIM_N_*).
NODE_KINDS = ("cpu", "runtime", "kernel", "memcpy", "memset")
GPU_NODE_KINDS = ("kernel", "memcpy", "memset")

# /nodes/phase (optional: stores written before it lack it, read as
# "unknown") -- enum lsim_phase, include/lumosim/graph.h (LSIM_PHASES).
PHASES = ("unknown", "forward", "backward", "optimizer", "zero_grad", "dataloader", "other")
# /nodes/fwd_seq (optional): autograd Sequence number of the forward op, -1 none.
NO_FWD_SEQ = -1

# /edges/in_class & 0x7f and the columns of the "x 7" datasets --
# enum lsim_edge_class, include/lumosim/graph.h (LSIM_E_*).
EDGE_CLASSES = ("cpu_thread", "cpu_cross_thread", "launch", "sync", "stream", "event", "hidden")
EDGE_END_BIT = 0x80  # end-edge: constrains the target's end

# /nodes/flags bits -- LSIM_NF_*, include/lumosim/graph.h.
NODE_FLAGS = {
    "prewindow": 0x01,        # LSIM_NF_PREWINDOW: launch precedes the trace
    "blocking": 0x02,         # LSIM_NF_BLOCKING: runtime call blocks on the GPU
    "collective": 0x04,       # LSIM_NF_COLL: collective / point-to-point kernel
    "graph_launch": 0x08,     # LSIM_NF_GRAPH: launched by a CUDA/HIP graph
    "memcpy_entry": 0x10,     # LSIM_NF_ENTER: zero-length entry of a memcpy call
    "dtoh_pageable": 0x20,    # LSIM_NF_DTOH_PAGEABLE: device-to-pageable copy
}

# /gpus/latency_mode -- enum lsim_latency_mode, include/lumosim/graph.h.
LATENCY_MODES = ("model", "observed")

# /colls/kind -- enum lsim_coll_kind, include/lumosim/trace.h; the names are
# lsim_coll_kind_name's (COLL_NAMES in src/read/kineto.c).
COLL_KINDS = ("none", "allreduce", "allgather", "reducescatter", "broadcast", "reduce",
              "alltoall", "sendrecv", "send", "recv", "generic", "other")

# /gpus/dropped columns -- enum lsim_drop_reason, include/lumosim/graph.h.
DROP_REASONS = ("contradicts_observed_times", "no_source", "no_target", "same_stream")

# Breakdown columns (lsim_breakdown, include/lumosim/metrics.h); the file's
# own ``columns`` attribute is used when present, this is the fallback.
BREAKDOWN_COMPONENTS = ("exposed_compute", "overlapped", "exposed_comm", "other")

# obs_start/obs_end of a node never observed (LSIM_OBS_NONE, metrics.h), and
# /nodes/release of a node without one.
INT64_MIN = -(2 ** 63)
OBS_NONE = INT64_MIN
NO_RELEASE = INT64_MIN
# /colls/pg_name, pg_ranks: unknown string id.
NO_STRING = 2 ** 32 - 1

# The ranges every reader keeps (issue 40: what one refuses, all refuse) --
# include/lumosim/graph.h: times within +-(2^62 - 1) ns (LSIM_TIME_MAX),
# which a window, an iteration and each part of a breakdown stay below
# too (io/h5_archive.c); latencies and gaps 0..1e13 ns (LSIM_DUR_MAX);
# world sizes 1..2^20 (LSIM_WORLD_MAX); bytes up to 1e13 (LSIM_BYTES_MAX).
TIME_MAX = 2 ** 62 - 1
DUR_MAX = 10 ** 13
WORLD_MAX = 2 ** 20
BYTES_MAX = 10 ** 13
# /runs/NAME/iterations/cpu_* of an archive written before them
# (LSIM_SPAN_UNKNOWN, include/lumosim/metrics.h).
SPAN_UNKNOWN = INT64_MIN
