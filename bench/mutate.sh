#!/usr/bin/env bash
# bench/mutate.sh: does the test suite catch the bugs that matter?
#
#   bash bench/mutate.sh [OPTIONS] [ID...]
#
# Copies the source tree into a scratch directory (the working tree is never
# touched), builds it once, then for each mutant below: applies its small
# source change, rebuilds (incrementally), runs the mutant's tests, and
# restores the file. A mutant is KILLED when a test that passed on the clean
# copy fails; a mutant that none of its own tests kill is re-run on the whole
# suite (labels mutation and memcheck left out) before it is called SURVIVED.
# Equivalent mutants (kind "equiv", argued in the list) are run the same way
# and must survive; they do not count in the score. Prints one line per
# mutant and the score; docs/reliability.md records it.
#
# Every substitution must match its file exactly once: text that has moved
# or changed stops the run (exit 2) instead of leaving a mutant that mutates
# nothing. `--check` verifies that for every mutant without building.
#
# Options:
#   --list          print the mutants (id, kind, tests, what) and exit
#   --check         verify that every substitution applies, on the sources; exit
#   --sample        the small sample CI runs (ctest -L mutation): $SAMPLE,
#                   building only $SAMPLE_TARGETS; implies --check first
#   --full          run the whole suite on every mutant (default: the mutant's
#                   own tests, then the whole suite only for survivors)
#   --no-escalate   do not re-run survivors on the whole suite
#   --tests REGEX   judge every selected mutant by these tests (ctest -R)
#                   instead of its own: with --targets lumosim, end-to-end
#                   tests only, to show which mutants a user-level test
#                   kills (docs/reliability.md)
#   --targets "T..." rebuild only these CMake targets for each mutant (the
#                   clean copy builds them all): a fraction of the link time.
#                   Every executable the mutants' tests run must be listed;
#                   the others keep the clean copy's build, so they can
#                   miss a kill, never invent one
#   --work DIR      scratch directory (default: a new one under $TMPDIR, removed
#                   at the end unless --keep)
#   --keep          keep the scratch directory
#   --src DIR       the tree to mutate (default: the repository of this script)
#   --shared DIR    the shared traces (default: SRC/../shared/traces, if present)
#   --exclude PATH  a path under SRC not to copy (repeatable; ./build* and .git
#                   never are)
#   -j N            build and test parallelism (default 2)
#   --docs FILE     write the run (its command, commit, date, the score per
#                   area and every mutant's result) into FILE between the
#                   lines '<!-- BEGIN bench/mutate.sh -->' and
#                   '<!-- END bench/mutate.sh -->', which must be there
#                   once each (checked before the run; the file is replaced
#                   whole, through a temporary file, only at the end)
#   ID...           run only these mutants
#
# Exit status: 0 every non-equivalent mutant killed and every equivalent one
# survived; 1 otherwise; 2 the run itself failed (a substitution that does
# not apply, a mutant or the clean copy that does not build, a clean copy
# whose tests fail).
set -u
set -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
WORK=""
KEEP=0
MODE=run
FULL=0
ESCALATE=1
TESTS_ALL=""
TARGETS=""
JOBS=2
DOCS=""
ARGS="$*"
SHARED=""
EXCLUDES=()
ONLY=()

# ---------------------------------------------------------------- mutants
# mutant ID KIND TESTS WHAT [WHY]   (KIND: kill | equiv; TESTS: ctest -R regex)
# sub FILE FROM TO                  (FROM must occur exactly once in FILE)
M_ID=() M_KIND=() M_TESTS=() M_WHAT=() M_WHY=()
S_ID=() S_FILE=() S_FROM=() S_TO=()
mutant() { M_ID+=("$1"); M_KIND+=("$2"); M_TESTS+=("$3"); M_WHAT+=("$4"); M_WHY+=("${5:-}"); }
sub() { S_ID+=("${M_ID[${#M_ID[@]}-1]}"); S_FILE+=("$1"); S_FROM+=("$2"); S_TO+=("$3"); }

T_ORACLE='^test_oracle$'
T_REPLAY='^replay_(model|observed_exact):'
T_JOB='^(job:|breakdown_oracle:)'

mutant latency_plus_1us kill "$T_ORACLE|$T_REPLAY|^traps$" \
    "every modelled launch latency 1 us longer (src/build/latency.c, bld_model_launch_delay)"
sub src/build/latency.c 'return from_start > le ? from_start : le;' 'return (from_start > le ? from_start : le) + 1000;'

mutant latency_minus_1us kill "$T_ORACLE|$T_REPLAY|^traps$" \
    "every modelled launch latency 1 us shorter"
sub src/build/latency.c 'return from_start > le ? from_start : le;' 'return (from_start > le ? from_start : le) - 1000;'

mutant graph_launch_latency kill "$T_REPLAY|^traps$" \
    "CUDA-graph launches without samples of their own: latency 1 us longer"
sub src/build/latency.c 'return ls - (g->obs_end[r] - g->obs_start[r]);' 'return ls - (g->obs_end[r] - g->obs_start[r]) + 1000;'

mutant graph_gaps_dropped kill "^cuda_graph:|$T_REPLAY|^traps$" \
    "the gaps inside a graph launch dropped: its ops packed back to back (src/build/hidden.c, bld_graph_edges)"
sub src/build/hidden.c 'x[i] = root[i] ? k[i].s - k[a].s : k[i].s - maxend;' 'x[i] = root[i] ? k[i].s - k[a].s : 0;'

mutant graph_latency_every_op kill "^cuda_graph:|$T_REPLAY|^traps$" \
    "every op of a graph launch a launch-latency sample, not only its first (src/build/latency.c)"
sub src/build/latency.c 'if ((g->flags[v] & LSIM_NF_GRAPH) && b->graph_head[r] != v) continue;' \
    'if ((g->flags[v] & LSIM_NF_GRAPH) && b->graph_head[r] != v && 0) continue;'

mutant latency_from_call_start kill "$T_ORACLE|$T_REPLAY|^traps$" \
    "the launch latency applied from the call's end instead of its start (the call's duration added once more)"
sub src/build/latency.c 'lsim_ns from_start = ls - (g->obs_end[r] - g->obs_start[r]);' 'lsim_ns from_start = ls;'

mutant model_reads_observed_start kill "$T_ORACLE|$T_REPLAY|^traps$" \
    "the model reads every third launch's observed GPU start back (the replay no longer predicts)"
sub src/build/latency.c ': bld_model_launch_delay(b, r);' ': (v % 3 ? bld_model_launch_delay(b, r) : g->obs_start[v] - g->obs_end[r]);'

mutant no_event_edges kill "$T_ORACLE|$T_REPLAY|^traps$|^critical_path" \
    "cross-stream record/wait pairs give no event edge (src/build/sync.c, bld_event_edges)"
sub src/build/sync.c 'if (strncmp(a, "StreamWaitEvent", 15) != 0) continue;' 'if (strncmp(a, "StreamWaitEvent", 15) != 0 || a) continue;'

mutant no_sync_edges kill "$T_ORACLE|$T_REPLAY|^traps$|^critical_path" \
    "blocking calls get no end-edge from the GPU work they wait for"
sub src/build/sync.c 'if ((rc = bld_add_edge(b, u, v, LSIM_E_SYNC | LSIM_EDGE_END, d))) goto cleanup;' \
    'if (d == INT64_MIN && (rc = bld_add_edge(b, u, v, LSIM_E_SYNC | LSIM_EDGE_END, d))) goto cleanup;'

mutant near_miss_no_tolerance kill "^hidden:near_miss$|^replay_model:near_miss_us$" \
    "hidden dependencies: no tolerance for the trace's timestamp resolution (src/build/hidden.c)"
sub src/build/hidden.c 'const lsim_ns tol = b->t->ts_resolution_ns > 0 ? b->t->ts_resolution_ns : 0;' \
    'const lsim_ns tol = 0;'

mutant no_hidden_edges kill "$T_ORACLE|$T_REPLAY|^traps$" \
    "no hidden dependency recovered from timing (src/build/hidden.c, bld_hidden_edges)"
sub src/build/hidden.c 'if (explained[v] == INT64_MIN || g->obs_start[v] - explained[v] <= b->o->infer_slack_ns) continue;' \
    'if (explained[v] == INT64_MIN || g->obs_start[v] - explained[v] <= b->o->infer_slack_ns || v < g->n) continue;'

mutant stream_order_skips_one kill "$T_ORACLE|$T_REPLAY|^traps$" \
    "stream order: each op ordered after the op two before it, not the one before (off by one)"
sub src/build/latency.c $'uint32_t prev = b->stream_nodes[p][i - 1];\n                lsim_ns gap = g->obs_start[v] - g->obs_end[prev];' \
    $'uint32_t prev = b->stream_nodes[p][i > 1 ? i - 2 : 0];\n                lsim_ns gap = g->obs_start[v] - g->obs_end[prev];'

mutant no_queued_gap kill "$T_ORACLE|$T_REPLAY|^traps$" \
    "the gap between back-to-back queued kernels is not learned (0)"
sub src/build/latency.c '*out = n >= 8 ? lsim_median_i64(gaps, n) : 0;' '*out = n >= 8 ? 0 * lsim_median_i64(gaps, n) : 0;'

mutant iteration_drops_gpu_work kill "$T_ORACLE|$T_REPLAY|^traps$" \
    "GPU work does not inherit the iteration of the call that launched it"
sub src/build/latency.c 'g->iter[v] = g->iter[r];' 'g->iter[v] = -1;'

mutant prewindow_not_pinned kill "$T_REPLAY|^traps$|^prewindow:release$" \
    "pre-window GPU work is released at the window start, not at its observed start (either latency mode)"
sub src/build/latency.c 'g->release[v] = g->obs_start[v];' 'g->release[v] = g->t0;'

mutant bytes_in_bits kill "^test_reader$|^traps$|^calibrate:|^et:|$T_JOB" \
    "a unit error in bytes: collective sizes nelems x dtype x 8 (src/read/kineto.c)"
sub src/read/kineto.c 'c->bytes = c->in_nelems * c->dtype_bytes;' 'c->bytes = c->in_nelems * c->dtype_bytes * 8;'

mutant breakdown_swap kill "$T_ORACLE|$T_JOB" \
    "breakdown: overlapped and exposed communication swapped (src/metrics.c)"
sub src/metrics.c 'if (nc > 0 && nm + nw > 0) bd->overlapped += len;' 'if (nc > 0 && nm + nw > 0) bd->exposed_comm += len;'
sub src/metrics.c '        bd->exposed_comm += len;' '        bd->overlapped += len;'

mutant breakdown_other kill "$T_ORACLE|$T_JOB" \
    "breakdown: 'other' forgets the overlapped time (the components no longer sum to the span)"
sub src/metrics.c 'bd->other = (s1 - s0) - bd->exposed_compute - bd->exposed_comm - bd->overlapped;' 'bd->other = (s1 - s0) - bd->exposed_compute - bd->exposed_comm;'

mutant comm_wait_during_transfer kill "$T_ORACLE|$T_JOB" \
    "breakdown: waiting for peers counted while another collective transfers"
sub src/metrics.c 'if (nm == 0) bd->exposed_comm_wait += len;' 'bd->exposed_comm_wait += len;'

mutant duty_last_bin kill "$T_ORACLE|$T_REPLAY" \
    "duty cycle: the last bin never filled (off by one)"
sub src/metrics.c 'if (k >= nbins) break;' 'if (k + 1 >= nbins) break;'

mutant engine_tie_last_edge kill "$T_ORACLE|^critical_path" \
    "engine: a tie between start edges goes to the last edge, not the first (changes the critical path)"
sub include/internal/sched_inline.h '} else if (x > s || (x == s && bs < 0)) {' '} else if (x >= s) {'

mutant engine_end_edge_vs_start kill "$T_ORACLE|$T_REPLAY" \
    "engine: a blocking call's end-edge compared with its start, not start + duration"
sub include/internal/sched_inline.h 'if (endc >= en) en = endc;' 'if (endc >= s) en = endc;'

mutant cp_launch_as_wait kill "$T_ORACLE|^critical_path" \
    "critical path: launch latency attributed to waiting"
sub src/critical.c 'case LSIM_E_LAUNCH: return LSIM_CP_LAUNCH;' 'case LSIM_E_LAUNCH: return LSIM_CP_WAIT;'

mutant jp_first_arrival kill "^replay:job_path|^test_oom$" \
    "job critical path: at a collective, continue on the first participant to arrive, not the last"
sub src/critical.c 'if (tp > bt) {' 'if (tp < bt) {'

mutant jp_transfer_as_wait kill "^replay:job_path|^test_oom$" \
    "job critical path: a crossing's transfer booked as waiting, not communication"
sub src/critical.c 'out->by_cat[LSIM_CP_COMM] += dt;' 'out->by_cat[LSIM_CP_WAIT] += dt;'

mutant relay_names_not_held kill "^mpi:killed_rank$" \
    "sim --trace-out under mpirun: the other ranks hear rank 0's names but do not register them (a SIGKILLed rank 0 leaves its files)"
sub mpi/run_mpi.c 'slot[k] = lsim_tmp_register(names[k]);' 'slot[k] = -1;'

mutant range_no_wait_draw kill "^replay:replica_range$" \
    "replay --replicate-from's range: the collectives keep the shortest duration instead of a drawn one"
sub src/run/run.c 'if (o->replica_draw && m >= 2) {' 'if (o->replica_draw && m >= 2 && 0) {'

mutant range_waits_counted_once kill "^replay:replica_range$" \
    "replay --replicate-from's range: a collective's waiting against the first of its kind and size, not the shortest"
sub src/run/run.c '        if (d < best) best = d;' '        if (d < best && 0) best = d;'

mutant coll_seq_off_by_one kill "$T_ORACLE|$T_JOB|^synth:run$" \
    "collectives matched one sequence number off on odd GPUs (src/job.c)"
sub src/job.c 'x->seq = c->seq;' 'x->seq = c->seq + (gid & 1);'

mutant p2p_seq_off_by_one kill "$T_ORACLE|^synth:run$|^mpi:sim_synth_np2$" \
    "the k-th send paired with the (k+1)-th recv"
sub src/job.c 'x->seq = cnt[k]++;' 'x->seq = cnt[k]++ + (x->kind == LSIM_COLL_RECV);'

mutant clock_offset_sign kill "$T_ORACLE|$T_JOB" \
    "clock offsets applied with the wrong sign (src/job.c, lsim_job_align_clocks)"
sub src/job.c 'lsim_ns off = j->clock_offset[i];' 'lsim_ns off = -j->clock_offset[i];'

mutant transfer_of_first_arrival kill "$T_ORACLE|$T_JOB" \
    "a collective's transfer taken as the longest traced duration (the first arrival's, waiting included)"
sub src/job.c 'if (ea->obs_start > last_start || (ea->obs_start == last_start && d < transfer)) {' \
    'if (d > transfer) {'

mutant lookahead_plus_1 kill "^mpi:sim_synth_np2$|^mpi:sim_job_np2$|^mpi:phold_np2$" \
    "parallel engine: lookahead one nanosecond longer than the shortest cross-rank transfer (mpi/pdes.c)"
sub mpi/pdes.c 'if (cross && j->transfer[k] < L) L = j->transfer[k];' \
    'if (cross && j->transfer[k] < L) L = j->transfer[k] + 1;'

mutant window_end_plus_1 equiv "^mpi:sim_synth_np[23]$|^mpi:sim_job_np[23]$|^mpi:phold_np" \
    "parallel engine: each time window 1 ns longer (W = B + L + 1)" \
    "A node enters a window's queue only once all its inputs are final (graph.h: its times are a function of its predecessors), so where a window ends decides in which round a node runs, never its times; the checks compare arrivals with the round's start bound B, not with W. The tests that run --windows start and paths compare every result bit for bit with the serial run."
sub mpi/pdes.c 'lsim_ns W = B >= BIG || B > INT64_MAX - s->lookahead ? INT64_MAX : B + s->lookahead;' \
    'lsim_ns W = B >= BIG || B > INT64_MAX - s->lookahead - 1 ? INT64_MAX : B + s->lookahead + 1;'

mutant pdes_tie_reversed kill "^test_engine_hand$" \
    "ready heap (serial and parallel engines, include/internal/sched_inline.h): ties between equal-time events broken by descending node id" \
    "No simulated time changes (a ready node's start and end are already fixed by its predecessors; the mpi tests compare results bit for bit), but the documented dispatch order (start, node id) does: test_engine_hand checks the heap's order."
sub include/internal/sched_inline.h 'return S[a] < S[b] || (S[a] == S[b] && a < b);' 'return S[a] < S[b] || (S[a] == S[b] && a > b);'

# ---- issue 41: the models behind the predictions. Each mutant names the
# file it plants in; the ones in src/synth, src/whatif and src/cost/netfit.c
# follow code that other work is changing: `--check` says when one no
# longer applies. T_PRED: the end-to-end checks of tests/integration/predictions.sh.
T_PRED='^predictions:'
T_COSTE2E="^test_cost$|$T_PRED|^synth:published_table1|^calibrate:(nccl_tests|network_p5)$|^whatif:consistency$"
# the modern published rows CTest bounds (bench/published.sh --modern): FP8
# on H100, torchtitan's and Megatron-Bridge's stacks, 1F1B against
# interleaved on 405B
T_MODERN="^synth:published_(modern_8b|memory_8b|cp_trend|405b_schedules)$"
T_SYNTHE2E="$T_PRED|^synth:(run|models|memory)$|^synth:published_table1|^whatif:(consistency|width|pipeline)$"

# -- cost models (src/cost/cost.c)
mutant allreduce_twice_as_fast kill "$T_COSTE2E" \
    "(planted) the ring all-reduce moves (n-1)/n of the buffer, not 2(n-1)/n: algorithm bandwidth taken for bus bandwidth; every DP and TP all-reduce twice as fast"
sub src/cost/cost.c 'isteps = 2 * (m - 1), moved = 2 * (n - 1) / n * bytes;' 'isteps = 2 * (m - 1), moved = (n - 1) / n * bytes;'

mutant allgather_moves_one kill "$T_COSTE2E" \
    "the ring all-gather moves one input, not n-1: sequence-parallel, distributed-optimizer and FSDP all-gathers too fast"
sub src/cost/cost.c 'steps = n - 1, isteps = m - 1, moved = (n - 1) * bytes;' 'steps = n - 1, isteps = m - 1, moved = bytes;'

mutant reducescatter_whole kill "$T_COSTE2E" \
    "the ring reduce-scatter moves the whole buffer, not (n-1)/n of it"
sub src/cost/cost.c 'steps = n - 1, isteps = m - 1, moved = (n - 1) / n * bytes;' 'steps = n - 1, isteps = m - 1, moved = bytes;'

mutant ring_inter_latency_as_intra kill "$T_COSTE2E" \
    "ring steps that cross nodes cost the NVLink step latency, not the network's"
sub src/cost/cost.c $'isteps * (double)t->inter_lat_ns +\n           moved / bw * 1e9;' $'isteps * (double)t->intra_lat_ns +\n           moved / bw * 1e9;'

mutant ring_one_nic_per_node kill "$T_COSTE2E" \
    "a ring across nodes leaves each node through one NIC, not one per GPU (rotated rings): inter-node collectives up to 8x slower"
sub src/cost/cost.c $'if (s->nodes <= 1) return t->intra_bw;\n    double bw = (double)s->gmin * t->inter_bw;' \
    $'if (s->nodes <= 1) return t->intra_bw;\n    double bw = t->inter_bw;'

mutant tree_bus_eff_1 kill "$T_COSTE2E" \
    "the tree's bandwidth not derated by NCCL's 0.9"
sub src/cost/cost.c '#define TREE_BW_EFF 0.9' '#define TREE_BW_EFF 1.0'

mutant tree_moves_once kill "$T_COSTE2E" \
    "the tree all-reduce moves the buffer once, not up and down (2x)"
sub src/cost/cost.c 'return (double)t->coll_base_ns + lat + 2.0 * bytes / (TREE_BW_EFF * group_bw(t, s)) * 1e9;' \
    'return (double)t->coll_base_ns + lat + 1.0 * bytes / (TREE_BW_EFF * group_bw(t, s)) * 1e9;'

mutant nccl_choice_last kill "$T_COSTE2E" \
    "NCCL tuning: the last allowed (algorithm, protocol) taken, not the fastest by NCCL's own model"
sub src/cost/cost.c 'if (hat < best_hat) {' 'if (hat < best_hat || 1) {'

mutant nccl_delivered_nominal kill "$T_COSTE2E" \
    "NCCL tuning: the chosen pair timed at the links' nominal rate, the fitted efficiencies ignored"
sub src/cost/cost.c 'best = nccl_time(t, kind, bytes, s, tree, p, 0);' 'best = nccl_time(t, kind, bytes, s, tree, p, 1);'

mutant oversubscription_ignored kill "$T_COSTE2E" \
    "a spine's oversubscription never divides the egress of groups wider than a leaf"
sub src/cost/cost.c 'bw /= t->oversubscription;' 'bw /= 1;'

mutant proto_ll128_full_bw kill "$T_COSTE2E" \
    "NCCL's LL128 protocol at Simple's bandwidth (ring 0.92 dropped)"
sub src/cost/cost.c 'static const double PROTO_BW[2][3] = {{0.25, 0.92, 1.0},' 'static const double PROTO_BW[2][3] = {{0.25, 1.0, 1.0},'

mutant tree_two_nodes_traffic kill "$T_COSTE2E" \
    "the double binary tree on 2 nodes puts 2x the buffer through each node, as on more"
sub src/cost/cost.c 'traffic = (s->nodes == 2 ? 1.0 : 2.0) * bytes;' 'traffic = 2.0 * bytes;'

mutant p2p_cross_node_nvlink kill "$T_COSTE2E|^whatif:(pipeline|train_pipe)$" \
    "a send between nodes at NVLink bandwidth, not the NIC's"
sub src/cost/cost.c 'b / (cross ? t->inter_bw : t->intra_bw) * 1e9;' 'b / t->intra_bw * 1e9;'

mutant gemm_no_wave_quantization kill "$T_COSTE2E|^synth:megatron_forward$|^whatif:width$" \
    "GEMM waves not rounded up: a partial last wave costs its fraction (tile quantization lost)"
sub src/cost/cost.c 'double w = ceil(tiles * split / sms),' 'double w = tiles * split / sms,'

mutant gemm_fp32_at_bf16_peak kill "$T_COSTE2E|^synth:megatron_forward$" \
    "fp32 (TF32) GEMMs at the bf16 peak, not half of it"
sub src/cost/cost.c 'double peak = elem_bytes >= 4 ? g->peak_flops / 2 : g->peak_flops; /* fp32 runs as TF32 */' \
    'double peak = g->peak_flops; /* fp32 runs as TF32 */'

mutant fp8_at_bf16_peak kill "$T_COSTE2E|^test_synth$|^synth:models$|$T_MODERN" \
    "--precision fp8: the GEMMs at the bf16 peak, the FP8 tensor cores' ignored"
sub src/cost/cost.c 'if (elem_bytes == 1 && g->peak_flops_fp8 > 0) peak = g->peak_flops_fp8; /* FP8 tensor cores */' \
    '/* FP8 tensor cores */'

mutant splitk_free_reduction kill "$T_COSTE2E|^synth:megatron_forward$" \
    "split-K GEMMs: the fp32 partial sums' reduction costs nothing"
sub src/cost/cost.c 'if (split > 1 && good(g->mem_bw) && good(g->mem_eff)) red = split * batch * m * n * 4' \
    'if (split > 1 && good(g->mem_bw) && good(g->mem_eff)) red = 0 * split * batch * m * n * 4'

mutant attention_causal_full kill "$T_COSTE2E|^synth:megatron_forward$" \
    "causal attention costed as full (the masked half's FLOPs counted)"
sub src/cost/cost.c 'double flops = 4 * bhsd * seq * (causal ? 0.5 : 1.0) * (backward ? 2.5 : 1.0);' \
    'double flops = 4 * bhsd * seq * (causal ? 1.0 : 1.0) * (backward ? 2.5 : 1.0);'

mutant attention_backward_2x kill "$T_COSTE2E" \
    "attention's backward 2x its forward, not 2.5x (flash attention's recomputed scores dropped)"
sub src/cost/cost.c 'double flops = 4 * bhsd * seq * (causal ? 0.5 : 1.0) * (backward ? 2.5 : 1.0);' \
    'double flops = 4 * bhsd * seq * (causal ? 0.5 : 1.0) * (backward ? 2.0 : 1.0);'

mutant elementwise_half_bytes kill "$T_COSTE2E|^synth:megatron_forward$" \
    "memory-bound kernels move half their bytes (read or write forgotten)"
sub src/cost/cost.c 'return roofline(g, 0, 0, 0, 0, good(bytes_moved) ? bytes_moved : 0);' \
    'return roofline(g, 0, 0, 0, 0, good(bytes_moved) ? bytes_moved / 2 : 0);'

# -- the network fit (src/cost/netfit.c; link sharing is being added there)
mutant netfit_ring_eff_inverted kill "^test_netfit$|^calibrate:network_p5$" \
    "lumosim calibrate --network: the fitted ring efficiency written as its inverse"
sub src/cost/netfit.c 't->ring_eff = 1.0 / th[2];' 't->ring_eff = th[2];'

mutant netfit_tree_hop_halved kill "^test_netfit$|^calibrate:network_p5$" \
    "lumosim calibrate --network: the fitted tree hop latency halved"
sub src/cost/netfit.c 't->tree_hop_ns = llround(th[1] > 0 ? th[1] : 0);' 't->tree_hop_ns = llround(th[1] > 0 ? th[1] / 2 : 0);'

# -- synthesis (src/synth: gen.c, model.c, fsdp.c, cp.c; MoE is being added there)
mutant synth_no_full_recompute kill "$T_SYNTHE2E" \
    "--recompute full: the layer's forward not run again before its backward (SC'21 Table 1 runs with it)"
sub src/synth/gen.c $'if (G->c->recompute == LSIM_RC_FULL) {\n        /* full recomputation: the layer\'s forward' \
    $'if (0) {\n        /* full recomputation: the layer\'s forward'

mutant split_middle_extra_first kill "^test_stages$|^synth:published_405b_schedules$|^synth:run$" \
    "uneven stages (--pp-layers middle): the extra layers on the first stages, not after the first (torchtitan's rule)"
sub src/stages.c '        f = vs == 0 ? 0 : base + (vs - 1) * base + (vs - 1 < extra ? vs - 1 : extra);' \
    '        f = vs * base + (vs < extra ? vs : extra);'

mutant split_embed_loss_uneven_ends kill "^test_stages$|^synth:run$" \
    "uneven stages (--pp-layers embed-loss): the last virtual stage keeps the loss's slot as a layer"
sub src/stages.c '        n = q - (vs == 0) - (vs == S - 1);' '        n = q - (vs == 0);'

mutant routing_dirichlet_ignores_hist kill "^test_routing$" \
    "routing (--routing-dirichlet with --routing-hist): the draw's concentration per expert ignores the histogram's shares"
sub src/synth/routing.c 'W += w[e] = gamma_draw(A * E * (p ? p[e] : 1.0 / E), &st);' 'W += w[e] = gamma_draw(A, &st);'

mutant routing_hist_row_off_by_one kill "^test_routing$|^synth:models$" \
    "routing (--routing-hist, a row per MoE layer): a layer takes the next MoE layer's row"
sub src/synth/routing.c 'for (int l = 0; l < layer && l < c->model.layers; l++) k +=' \
    'for (int l = 0; l <= layer && l < c->model.layers; l++) k +='

mutant resynth_fsdp_full_not_kept kill "^whatif:resynth$" \
    "whatif --dp on a full-shard FSDP store re-synthesized: the shard group stays the old DP instead of the new one"
sub src/cli/resynth.c ': sa0->fsdp > 0 && sa0->fsdp == sa0->dp ? dp /* full shard stays full shard */' \
    ': sa0->fsdp > 0 && sa0->fsdp == sa0->dp ? sa0->fsdp /* full shard stays full shard */'

mutant resynth_global_batch_fixed kill "^whatif:resynth$" \
    "whatif --dp re-synthesized: the global batch kept (fewer micro-batches per pipeline) instead of the per-replica batch"
sub src/cli/resynth.c 'rc = push_long(a, "--global-batch", (long)sa0->micro_batch * dp * m);' \
    'rc = push_long(a, "--global-batch", (long)sa0->global_batch);'

mutant report_kernel_rows_once kill "^report:from_tables$" \
    "report --html from an archive's tables: a kernel row that several GPUs share counted once, not once per GPU"
sub io/h5_report_read.c 'uint64_t u = uses[k0 + q];' 'uint64_t u = uses[k0 + q] ? 1 : 0;'

mutant report_place_replica_lost kill "^report:from_tables$" \
    "the archive's place columns: every GPU written as replica -1 (the page's heat maps lay GPUs out in GPU order)"
sub io/h5_archive.c '    g->replica = b.replica;' '    g->replica = -1;'

mutant summary_not_shared kill "^report:from_tables$" \
    "--detail summary archives: no GPU shares another's rows (its tables differ from the full archive's, kernel rows kept per GPU)"
sub io/h5_archive.c '    rc = results_share(c, items, lm, nloc, bind, info);' '    rc = detail == LSIM_STORE_DETAIL_SUMMARY ? 0 : results_share(c, items, lm, nloc, bind, info);'

mutant store_cpu_ops_unread kill "^trace_out:store$" \
    "a graph store's CPU op trees never read back (the predicted trace of a store cuts every CPU op into pieces)"
sub io/h5_graph.c '    if (!rc && c->cpu_ops) rc = h5s_read_cpu_ops(' '    if (!rc && c->cpu_ops && 0) rc = h5s_read_cpu_ops('

mutant store_cpu_ops_node_op_shifted kill "^trace_out:store$" \
    "a store's CPU op trees read back with every node's op one row late (flow arrows and slices follow the wrong op)"
sub io/h5_cpu_ops.c '        memcpy(m, nop + an, nn * sizeof *m);' '        memcpy(m, nop + an, nn * sizeof *m);
        for (uint64_t v = nn; v-- > 1;) m[v] = m[v - 1];'

mutant html_range_card_dropped kill "^replay:replica_range$" \
    "report --replicate-from --html: the job range computed but never drawn"
sub src/report_html.c '    if (view->range) job_range_card(f, view->range);' '    (void)job_range_card;'

mutant job_path_stored_dropped kill "^mpi:sim_synth_np2$|^mpi:sim_symmetry_np2$" \
    "sim --trace-out under mpirun: the job's critical path walked over the archive but never drawn"
sub src/cli/store_cmds.c 'items, stored->ngpus, jp.n ? &jp : NULL, err);' 'items, stored->ngpus, NULL, err);'

mutant search_job_options_dropped kill "^search:modes$" \
    "search --model: synth's job options (--seq, --kernels, ...) accepted but never reach the candidates"
sub src/cli/search_cmd.c 'return lsim_cli_parse_synth_opts(k + nj, (char **)jv, LSIM_USAGE_SEARCH, &a->sa);' 'return lsim_cli_parse_synth_opts(k, (char **)jv, LSIM_USAGE_SEARCH, &a->sa);'

mutant archive_network_dropped kill "^sim:link_sharing$|^mpi:sim_share_np2$" \
    "sim --link-sharing -o: the network figures never reach the archive (report --html and the reader lose them)"
sub io/h5_archive.c '(info && info->network && h5s_put_attr_str(run, "network", info->network)))' '(info && info->network && 0))'

mutant shared_colls_unchecked kill "^store:shared_structure$" \
    "store read shared: a follower GPU's collectives taken as its stage's first GPU's without comparing them"
sub io/h5_graph.c '        if (r == rows) return 0;' '        if (r == rows || 1) return 0;'

mutant coll_record_dup_unchecked kill "^test_job_hand$" \
    "job match: two collective kernels on one collective record accepted (their instances overwrite one slot)"
sub src/job.c '            else if (first[c])' '            else if (0)'

mutant reduced_estimate_ignored kill "^store:shared_structure$" \
    "sim's memory check: a reduced run sized as if every GPU had an engine (a 65,536-GPU job refused at 45.9 GiB)"
sub io/h5_graph.c '(c->reduced ? lsim_mem_nodes_at(colls, LSIM_MEM_MATCH_B) : lsim_mem_nodes_at(mshared, bsh));' \
    'lsim_mem_nodes_at(mshared, bsh);'

mutant report_duty_unread kill "^report:|^html_report:|^store:" \
    "report --html: the duty bins of the GPUs shown in full never read (their timelines drawn empty)"
sub src/cli/report_archive.c 'if (!rc && nfull) rc = lsim_store_read_duty(path, r->name, r, full, nfull, err);' 'if (0) rc = lsim_store_read_duty(path, r->name, r, full, nfull, err);'

mutant collect_kernel_weight_dropped kill "^python:|^store:shared_structure$" \
    "lumosim.load: the job-wide kernels summed over the stored rows without weighing each by the GPUs sharing it"
sub python/lumosim/results.py '        w = np.asarray(weight, dtype=np.int64)' '        w = np.ones(len(weight), dtype=np.int64)'

mutant share_classes_stale kill "^sim:link_sharing$|^mpi:sim_share" \
    "link sharing with the symmetry reduction: the classes not computed again after a sweep (the quotient runs the alone transfers)"
sub src/run/run.c '        if (r->reduced) rc = rereduce(o, r, err);' '        if (0) rc = rereduce(o, r, err);'

mutant netshare_kind_shared_as_alone kill "^test_netshare$|^sim:link_sharing$" \
    "link sharing: each kind's shared transfer booked as its alone one (the report hides what sharing cost)"
sub src/netshare.c 'k->shared_ns += (double)out[a];' 'k->shared_ns += (double)f->work[a];'

mutant net_flows_shared_as_alone kill "^test_netshare$|^sim:link_sharing$" \
    "link sharing: the archive's net_flows rows give each flow's alone transfer as its shared one (sharing looks free)"
sub src/netshare.c '(int64_t)(f->loff[a + 1] - f->loff[a]), f->start[a], f->work[a], out[a]};' '(int64_t)(f->loff[a + 1] - f->loff[a]), f->start[a], f->work[a], f->work[a]};'

mutant net_link_p90_is_median kill "^test_netshare$|^sim:link_sharing$" \
    "link sharing: every link's 90th-percentile utilization reported as the median (the hot tail hidden)"
sub src/netshare.c 'st->util_p90 = nearest_rank(x, nused, 0.9);' 'st->util_p90 = nearest_rank(x, nused, 0.5);'

mutant net_tables_unwritten kill "^sim:link_sharing$" \
    "sim --link-sharing -o: the archive's net_flows and net_links tables never written"
sub io/h5_archive.c 'if (!rc && info && info->network_rows) rc = h5s_write_run_network' 'if (0) rc = h5s_write_run_network'

mutant net_slow_bin_edge_open kill "^test_netshare$|^sim:link_sharing$" \
    "link sharing: a flow exactly at a slowdown bin's edge (x2: two flows sharing one link) counted in the bin below"
sub src/netshare.c 'while (k + 1 < LSIM_NETSHARE_SBINS && x >= SLOW_EDGE[k + 1]) k++;' 'while (k + 1 < LSIM_NETSHARE_SBINS && x > SLOW_EDGE[k + 1]) k++;'

mutant proc_shape_ignores_nnodes kill "^store:shared_structure$" \
    "the store's load: a sharing GPU whose processor claims another node count skips the node checks (a damaged store read as sound)"
sub io/h5_graph.c 'if (a->procs[p].is_gpu != b->procs[p].is_gpu || a->procs[p].nnodes != b->procs[p].nnodes) return 0;' 'if (a->procs[p].is_gpu != b->procs[p].is_gpu) return 0;'

mutant duty_rows_unshared kill "^store:shared_structure$" \
    "sim -o: every GPU's duty-cycle bins written again where it shares another GPU's times (98,304 GPUs: 10 GB of bins)"
sub io/h5_archive.c 'static int shares_rows(int r) { return r == RR_NODE || r == RR_DUTY_A || r == RR_DUTY_P; }' 'static int shares_rows(int r) { return r == RR_NODE; }'

mutant shared_strings_overcounted kill "^store:shared_structure$" \
    "the load's memory check counts a GPU's shared strings at 12 B a name of the table it overlays (98,304 GPUs: 23 GiB estimated, 12.4 held; refused)"
sub io/h5_graph.c 'if (c->share && m->strings_like >= 0) return m->cnt[RK_STR];' 'if (c->share && m->strings_like >= 0) return lsim_mem_shared_strings(m->nstr);'

mutant class_report_copy_drifts kill "^sim:symmetry$|^mpi:sim_symmetry" \
    "a reduced run: a class member's copied report 1 us off its representative's window (the reduced archive no longer the full one)"
sub src/run/run.c '    *p = *q;
    p->iters = NULL, p->duty_actual = NULL;' '    *p = *q;
    p->window_predicted += 1000;
    p->iters = NULL, p->duty_actual = NULL;'

mutant moe_etp_width_unsplit kill "^test_synth_moe$" \
    "expert-tensor parallelism: the experts' GEMMs run the ETP group's rows at the whole expert width (ETP x the FLOPs)"
sub src/synth/moe.c 'fe = (double)m->expert_ffn / X->etp, f1e' 'fe = (double)m->expert_ffn, f1e'

mutant resynth_switch_ignored kill "^whatif:resynth$" \
    "whatif --resynth: the switch read but never routes to the re-synthesis (the graph edits refuse the job)"
sub src/run/whatif_resynth.c 'return rq->ep || rq->etp || rq->cp || rq->fsdp || rq->resynth;' 'return rq->ep || rq->etp || rq->cp || rq->fsdp;'

mutant archive_iter_waits_unread kill "^report:from_tables$" \
    "result archive: the iterations' waits for peers written but not read back (0, as before the columns)"
sub io/h5_archive.c 'if (!rc && H5Lexists(run, "iterations/exposed_comm_wait_actual", H5P_DEFAULT) > 0)' \
    'if (0 && !rc && H5Lexists(run, "iterations/exposed_comm_wait_actual", H5P_DEFAULT) > 0)'

mutant memest_eager_loss_as_fused kill "^test_synth_torchtitan$" \
    "memory estimate, --loss eager: the loss holds the fused loss's 4 bytes a logit, not eager PyTorch's 12"
sub src/memest.c 'return in->forward_only ? 10 : 12;' 'return in->forward_only ? 10 : 4;'

mutant eager_loss_time_dropped kill "^test_synth_torchtitan$" \
    "--loss eager alone: the loss kernels keep the fused loss's bytes (only --kernels eager re-costs them)"
sub src/synth/gen.c 'if (lsim_synth_loss_eager(c)) eager_loss_costs(G, T, V);' \
    'if (c->kernels == LSIM_KERN_EAGER) eager_loss_costs(G, T, V);'

mutant memest_fsdp_pp_grads_sharded kill "^test_synth_fsdp$|^synth:published_405b_schedules$" \
    "memory estimate, FSDP under a pipeline: the gradients counted sharded, not accumulated unsharded until the last backward"
sub src/memest.c 'out->grads = out->params * in->grad_bytes / (in->fsdp_keep ? 1 : n);' \
    'out->grads = out->params * in->grad_bytes / n;'

mutant fsdp_pp_reduce_first_backward kill "^test_synth_fsdp$" \
    "FSDP under a pipeline: the stage's gradients reduced after its first micro-batch's backward, not its last"
sub src/synth/fsdp.c 'if (F->n <= 1 || !F->keep || mb != F->m - 1) return;' 'if (F->n <= 1 || !F->keep || mb != 0) return;'

mutant memest_expert_load_ignored kill "^test_routing$|^synth:models$" \
    "memory estimate of a MoE model: the routed activations at the balanced share whatever the routing's load"
sub src/memest.c 'double load = in->expert_load > 0 ? in->expert_load : 1;' 'double load = 1;'

mutant memest_fp8_gather_held_bf16 kill "^test_synth_fsdp$" \
    "memory estimate, FSDP with FP8 all-gather: the gathered linear weights counted at 2 bytes"
sub src/memest.c 'double f8 = in->fsdp_fp8 ? layer_linear(in) * (WEIGHT_BYTES - 1) : 0;' \
    'double f8 = in->fsdp_fp8 ? layer_linear(in) * (WEIGHT_BYTES - 2) : 0;'

mutant fsdp_fp8_gather_in_bf16 kill "^test_synth_fsdp$|^predictions:fsdp$" \
    "FSDP FP8 all-gather (--fp8-all-gather): the linear weights gathered at 2 bytes, as without it"
sub src/synth/fsdp.c 'F->ag_bytes[i] = (int64_t)(((F->params[i] - f8) * PARAM_BYTES + f8) / F->n);' \
    'F->ag_bytes[i] = (int64_t)(((F->params[i] - f8) * PARAM_BYTES + 2 * f8) / F->n);'

mutant routing_capacity_not_per_group kill "^test_routing$|^synth:models$" \
    "MoE capacity (--capacity-factor): an expert keeps one rank's capacity, not the EP group's"
sub src/synth/routing.c 'int64_t cap = synth_capacity(c, seq) * ep; /* the expert' \
    'int64_t cap = synth_capacity(c, seq) * 1; /* the expert'

mutant attn_fa2_curve_spec kill "^test_cost$|^predictions:attention$" \
    "the Hopper parts' FlashAttention-2 curve (--attention-kernel fa2) at the spec's default efficiency, not the fit to the FA3 paper's FA2 points"
sub src/cost/spec.c '#define HOPPER_FA 0.354, 2.7e10, 0.662, 4.04e10, 0, 0, 0.333,' '#define HOPPER_FA 0.50, 2.7e10, 0.662, 4.04e10, 0, 0, 0.333,'

mutant attn_bwd_curve_ignored kill "^test_cost$|^predictions:attention$" \
    "the attention backward at the forward's curve even when the spec gives the backward its own"
sub src/cost/cost.c 'if (backward && g->attn_bwd_eff_max > 0) /* the backward' 'if (0 && backward && g->attn_bwd_eff_max > 0) /* the backward'

mutant routing_summary_wrong_gpu kill "^test_routing$|^synth:models$" \
    "the routing summary (synth's routing line): an expert put on GPU e mod EP of its group, not e / (experts / EP)"
sub src/synth/routing.c 'load[g * ep + e / eloc] += (double)tok[e];' 'load[g * ep + e % ep] += (double)tok[e];'

mutant synth_warmup_one_more kill "$T_SYNTHE2E|^test_memest$|$T_MODERN" \
    "1F1B: one warm-up forward more on every stage (pp - stage, not pp - stage - 1)"
sub src/synth/model.c 'if (V == 1) w = pp - stage - 1;' 'if (V == 1) w = pp - stage;'

mutant synth_bucket_bf16 kill "$T_SYNTHE2E" \
    "DP gradient buckets sized at 2 bytes a gradient whatever --grad-bytes (the fp32 default's half)"
sub src/synth/gen.c 'static int64_t bucket_bytes(const gen *G, double params) { return (int64_t)(params * (double)G->c->grad_bytes); }' \
    'static int64_t bucket_bytes(const gen *G, double params) { return (int64_t)(params * 2.0); }'

mutant synth_dist_opt_full_adam kill "$T_SYNTHE2E" \
    "--distributed-optimizer: Adam steps every parameter, not 1/DP of them"
sub src/synth/gen.c 'double share = c->dist_opt ? 1.0 / G->dpc : G->fsdp.n ? 1.0 / G->fsdp.n : 1.0;' \
    'double share = G->fsdp.n ? 1.0 / G->fsdp.n : 1.0;'

mutant synth_tp_bytes_elems kill "$T_SYNTHE2E" \
    "TP collectives sized in elements, not bytes (the activation's element size dropped)"
sub src/synth/gen.c 'k->act_bytes = (int64_t)(T * h * eb);' 'k->act_bytes = (int64_t)(T * h);'

mutant synth_scatter_gather_ignored kill "$T_SYNTHE2E" \
    "--scatter-gather / sequence parallelism: pipeline sends carry the whole activation, not 1/TP"
sub src/synth/gen.c 'k->p2p_bytes = (c->seq_parallel || c->scatter_gather) ? k->act_bytes / c->tp : k->act_bytes;' \
    'k->p2p_bytes = k->act_bytes;'

mutant synth_grad_reduce_after kill "$T_SYNTHE2E" \
    "--grad-reduce overlap: buckets never reduced during the backward (as 'after' without its flush: no DP all-reduce at all)"
sub src/synth/gen.c 'if (G->dpc > 1 && G->c->grad_reduce == LSIM_GR_OVERLAP) dp_emit(G, &bk);' \
    'if (G->dpc > 1 && G->c->grad_reduce == LSIM_GR_OVERLAP && 0) dp_emit(G, &bk);'

mutant fsdp_gather_unsharded kill "$T_PRED|^test_synth_fsdp$" \
    "FSDP: each rank all-gathers the whole unit, not its 1/N shard (src/synth/fsdp.c)"
sub src/synth/fsdp.c 'F->ag_bytes[i] = (int64_t)(((F->params[i] - f8) * PARAM_BYTES + f8) / F->n);' \
    'F->ag_bytes[i] = (int64_t)(((F->params[i] - f8) * PARAM_BYTES + f8));'

mutant fsdp_scatter_sharded kill "$T_PRED|^test_synth_fsdp$" \
    "FSDP: the reduce-scatter's input taken as the shard, not the whole gradient"
sub src/synth/fsdp.c 'F->rs_bytes[i] = (int64_t)(F->params[i] * c->grad_bytes);' 'F->rs_bytes[i] = (int64_t)(F->params[i] * c->grad_bytes / F->n);'

mutant cp_kv_only_k kill "$T_PRED|^test_synth_cp$" \
    "CP ring attention passes K only, not K and V (src/synth/cp.c)"
sub src/synth/cp.c 'F->kv_bytes = 2 * (int64_t)c->micro_batch' 'F->kv_bytes = 1 * (int64_t)c->micro_batch'

mutant fp8_no_casts kill "^test_synth$|^synth:models$|$T_PRED|$T_MODERN" \
    "--precision fp8: no cast kernels before the FP8 GEMMs (src/synth/gen.c)"
sub src/synth/gen.c 'if (G->c->precision != LSIM_PREC_FP8) return;' 'return;'

# -- what-if transforms (src/whatif; being refactored into a step table)
mutant whatif_dp_not_retimed kill "^test_whatif$|^whatif:consistency$|$T_PRED" \
    "(planted) whatif --dp: the DP collectives keep the source group's time (src/whatif/transform.c, lsim_wi_retime)"
sub src/whatif/transform.c 'if (co == cn) continue;' 'if (co == cn || sscanf(pg, "dp:%d:%d", &a, &b) == 2) continue;'

mutant whatif_regpu_mem_eff kill "^test_whatif$|^whatif:(source_gpu|real)$" \
    "whatif --gpu: memory-bound kernels re-timed at the new GPU's peak bandwidth, its efficiency dropped"
sub src/whatif/transform.c 'r = bytes / (to->mem_bw * to->mem_eff);' 'r = bytes / to->mem_bw;'

mutant whatif_layers_remainder kill "^test_whatif$|^whatif:(real|real_annotated|train_layers)$" \
    "whatif --layers: the layers beyond a whole multiple of the source's never copied (src/whatif/layers.c)"
sub src/whatif/layers.c 'return 1 + extra / lpc + (pos < extra % lpc ? 1 : 0);' 'return 1 + extra / lpc;'

mutant whatif_hidden_colls_kept kill "^test_whatif$|^whatif:width$" \
    "whatif --hidden: collectives keep the old size's time (src/whatif/shape.c)"
sub src/whatif/shape.c 'c1 = lsim_cost_collective(topo, ci->kind, nb, n ? r : NULL' 'c1 = lsim_cost_collective(topo, ci->kind, ci->bytes, n ? r : NULL'

mutant whatif_pipe_bucket_bf16 kill "^test_whatif$|^whatif:pipeline$" \
    "whatif --pp: the new gradient buckets sized at 2 bytes a parameter, not fp32's 4 (src/whatif/pipeline.c)"
sub src/whatif/pipeline.c 'int64_t bytes = (int64_t)(E->bucket * 4.0); /* fp32 main gradients */' 'int64_t bytes = (int64_t)(E->bucket * 2.0); /* fp32 main gradients */'

# -- the memory estimate (src/memest.c)
T_MEM="^test_memest$|^predictions:memory$|^synth:memory$|^whatif:memory$"
mutant memest_optimizer_over_dp kill "$T_MEM" \
    "(planted) optimizer state divided by DP without --distributed-optimizer"
sub src/memest.c 'out->optim = params * OPTIM_BYTES / (in->dist_opt ? shards : 1);' 'out->optim = params * OPTIM_BYTES / shards;'

mutant memest_grads_bf16 kill "$T_MEM" \
    "gradients 2 bytes a parameter whatever --grad-bytes"
sub src/memest.c 'out->grads = params * in->grad_bytes;' 'out->grads = params * 2;'

mutant memest_one_in_flight kill "$T_MEM" \
    "activations of one micro-batch on every stage, not the 1F1B stage's in-flight count"
sub src/memest.c 'act = (double)out->inflight * (in->experts > 0 ? moe_act : lpc * lsim_memest_layer_act(in, 1));' 'act = (in->experts > 0 ? moe_act : lpc * lsim_memest_layer_act(in, 1));'

mutant memest_logits_bf16 kill "$T_MEM" \
    "the cross entropy's logits at 2 bytes, not fp32's 4"
sub src/memest.c 'if (!in->loss_eager) return 4;' 'if (!in->loss_eager) return 2;'

mutant memest_no_cuda_context kill "$T_MEM" \
    "the CUDA context left out of the reserve"
sub src/memest.c 'out->reserve = CUDA_CONTEXT + TEMP_FRACTION * act;' 'out->reserve = TEMP_FRACTION * act;'

mutant memest_layer_norms_once kill "$T_MEM" \
    "a layer's replicated parameters 4h, not 6h (a layer norm forgotten)"
sub src/memest.c 'return (4 * h * A + 2 * h * f + 3 * A + f) / in->tp + 6 * h;' 'return (4 * h * A + 2 * h * f + 3 * A + f) / in->tp + 4 * h;'

mutant memest_fsdp_optimizer_whole kill "$T_MEM|^test_synth_fsdp$" \
    "FSDP: Adam's state not sharded over the shard group"
sub src/memest.c 'out->optim = out->params * OPTIM_BYTES / n;' 'out->optim = out->params * OPTIM_BYTES;'

# -- the configuration search's ranking (src/run/search_rank.c)
T_SEARCH="^search:(cli|throughput|from)$|^mpi:search"
mutant search_lowest_throughput_first kill "$T_SEARCH" \
    "search ranks the lowest throughput first"
sub src/run/search_rank.c 'double k = r->by_step ? 0 : -lsim_search_throughput(&r->c[i], r->global_batch);' \
    'double k = r->by_step ? 0 : lsim_search_throughput(&r->c[i], r->global_batch);'

mutant search_slowest_step_first kill "$T_SEARCH" \
    "search --rank step: the slowest step first"
sub src/run/search_rank.c 'return (rank_key){k, r->c[i].step, i};' 'return (rank_key){k, -r->c[i].step, i};'

mutant search_throughput_one_replica kill "$T_SEARCH" \
    "search --from: a candidate's throughput counts one replica's batch, not DP of them"
sub src/run/search_rank.c 'return (double)x->dp * m * b;' 'return m * b;'

# -- the writers: CSV (src/csv.c), the predicted trace (src/write/chrome_writer.c),
# the JSON report (src/report.c), the result archive (io/h5_archive.c)
mutant csv_comm_wait_swapped kill "^csv:|^test_output$|^mpi:csv_np2$" \
    "--csv: the predicted exposed communication and its waiting part in each other's columns"
sub src/csv.c $'put_i64(f, p->exposed_comm);\n    put_i64(f, p->exposed_comm_wait);' $'put_i64(f, p->exposed_comm_wait);\n    put_i64(f, p->exposed_comm);'

mutant trace_out_us_digits kill "^trace_out:|$T_PRED" \
    "--trace-out: the last two of the three decimals of every time swapped"
sub src/write/chrome_writer.c "(char)('0' + r / 10 % 10), (char)('0' + r % 10)};" "(char)('0' + r % 10), (char)('0' + r / 10 % 10)};"

mutant json_error_sign kill "^replay_|^job:|^report|^csv:|$T_PRED" \
    "--json: a span's error (predicted - actual)/predicted, not over the actual"
sub src/report.c 'if (obs) cJSON_AddNumberToObject(o, "error", lsim_rel_err(a, p));' 'if (obs) cJSON_AddNumberToObject(o, "error", lsim_rel_err(p, a));'

mutant archive_window_predicted_actual kill "^store:(detail|same:fixtures)$|^html_report:|^test_store$|^job:" \
    "the result archive stores the actual window as the predicted one"
sub io/h5_archive.c 'RG("window_predicted", report.window_predicted, T_I64),' 'RG("window_predicted", report.window_actual, T_I64),'

# -- iterations (the GPU partition's rows)
mutant iteration_boundary_off_by_one kill "$T_ORACLE|^predictions:iterations$|$T_REPLAY" \
    "(planted) each iteration's row starts at the next step's first GPU op (src/metrics.c)"
sub src/metrics.c 'for (uint32_t i = 0; i < g->niters; i++) b[i] = is[6 * i + 4 + pass];' \
    'for (uint32_t i = 0; i < g->niters; i++) b[i] = is[6 * (i + 1 < g->niters ? i + 1 : i) + 4 + pass];'

mutant iteration_cpu_next_step kill "$T_ORACLE|^predictions:iterations$|$T_REPLAY" \
    "CPU ops (and the GPU work they launch) placed in the step after the one that holds them (src/build/cpu.c)"
sub src/build/cpu.c 'if (lo > 0 && s < g->iters[lo - 1].obs_end) g->iter[v] = (int32_t)(lo - 1);' \
    'if (lo > 0 && s < g->iters[lo - 1].obs_end) g->iter[v] = (int32_t)(lo < g->niters ? lo : lo - 1);'

# -- at 98,304 GPUs (issue 43): the checks made O(n log n) and the page's rows folded
mutant dup_rank_lowest_pair kill "^job:megatron_tp8_a100$" \
    "the job's rank check names the lowest duplicated rank's files, not the earliest file's pair"
sub src/run/run.c '(q < 2 || ra[q - 2].rank != ra[q].rank) && ra[q - 1].at < di)' \
    '(q < 2 || ra[q - 2].rank != ra[q].rank) && di == SIZE_MAX)'

mutant html_fold_ignores_window kill "^html_report:job_at_scale$|^html_report:job_overview_512$" \
    "HTML summary: consecutive GPUs of different predicted windows folded into one row"
sub src/report_html.c ' || x->r->window_predicted != y->r->window_predicted)' ')'

mutant shared_owner_count_unchecked kill "^store:shared_structure$" \
    "archive reader: a GPU naming an owner's offset with another row count accepted as sharing its rows"
sub io/h5_archive.c 'if (lo < nown && own[2 * lo] == o && own[2 * lo + 1] == k) continue;' \
    'if (lo < nown && own[2 * lo] == o) continue;'

mutant whatif_precap_skipped kill "^reliability:values$" \
    "whatif keeping the layout: the work cap checked only after every GPU's graph is read and identified"
sub src/cli/whatif_cmd.c 'if (wa->tp || wa->pp || wa->dp || wa->identify) return 0;' 'return 0;'

mutant kernel_rows_times_unchecked equiv "^sim:symmetry$|^mpi:sim_symmetry" \
    "archive write: the kernel rows' shortcut no longer checks that the GPU's simulated times are its template's arrays" \
    "A GPU has a template (node_same_as) only when results_share found its start and end times equal to that GPU's, value by value; rows built from equal times are equal, so the pointer check is a cheap guard that never decides. sim:symmetry's slowed GPU has no template and keeps its own rows either way (harness run: survived)."
sub io/h5_archive.c '        g->obs_start != h->obs_start || g->obs_end != h->obs_end || a->start != t->start || a->end != t->end)' \
    '        g->obs_start != h->obs_start || g->obs_end != h->obs_end)'

mutant match_bytes_entries_only kill "^store:shared_structure$" \
    "the load's memory check of a reduced run counts the match's entries (80 B a collective kernel), not their sort keys, order and group ids (116 B)"
sub include/lumosim/memlimit.h '#define LSIM_MEM_MATCH_B 116' '#define LSIM_MEM_MATCH_B 80'

mutant match_parts_offsets_unshifted kill "^test_job_parts$|^sim:match_parts$" \
    "the match in parts appends a part's instances without shifting their participant offsets past the parts before"
sub src/job.c 'j->part_off[pj->ni + k] = pj->np + oj->part_off[k];' 'j->part_off[pj->ni + k] = oj->part_off[k];'

mutant match_parts_cut_reversed kill "^test_job_parts$|^sim:match_parts$" \
    "the match in parts cuts the groups in reverse strcmp order, so its instances (and its first error) come in another order than one part's"
sub src/job.c 'unsigned p = total ? (unsigned)(acc * parts / total) : 0;' \
    'unsigned p = total ? (unsigned)((parts - 1) - acc * parts / total) : 0;'

mutant match_parts_never_chosen kill "^sim:match_parts$" \
    "a run with no --match-parts always matches in one part, whatever its memory limit"
sub src/run/run.c '    *parts = p ? p : LSIM_MATCH_PARTS_MAX;' '    *parts = p ? 1 : 1;'

mutant match_held_bytes_dropped kill "^test_memlimit$|^store:shared_structure$" \
    "the match in parts is counted at 116 / parts a collective kernel, without the job's arrays held for the whole job (20 B)"
sub src/memlimit.c 'return parts <= 1 ? LSIM_MEM_MATCH_B : LSIM_MEM_MATCH_HELD_B + (LSIM_MEM_MATCH_B + parts - 1) / parts;' \
    'return parts <= 1 ? LSIM_MEM_MATCH_B : (LSIM_MEM_MATCH_B + parts - 1) / parts;'

# The CI sample: fast, killed by bundled tests alone.
mutant chakra_cache_pair_dropped kill "^test_chakra_cache$|^chakra:" \
    "Chakra export through the cache leaves out the comm_src / comm_dst pair a synthesized send names"
sub io/chakra/chakra.c 'span[2][0] = c->gcoll[i + 1], span[2][1] = c->gcoll[i + 2];' \
    'span[2][0] = c->gcoll[i + 1], span[2][1] = c->gcoll[i + 1];'

mutant chakra_cache_structure_unchecked kill "^test_chakra_cache$|^chakra:" \
    "Chakra export writes a GPU from another's node records when only their counts and tables agree, not their structure"
sub io/chakra/chakra.c '|| lsim_graph_same_structure(r, g));' '|| 1);'

mutant chakra_cache_name_unchecked kill "^test_chakra_cache$|^chakra:" \
    "Chakra export copies a node's record even where the GPU's own strings give the node another name"
sub io/chakra/chakra.c '    if (g->strings != r->strings && strcmp(str_or_empty(g, g->name[v]), str_or_empty(r, r->name[v])))' \
    '    if (0)'

mutant chakra_read_names_unfixed kill "^test_chakra_cache$|^chakra:" \
    "Chakra import taken from the previous GPU keeps that GPU's name ids where the file's own strings number them differently"
sub io/chakra/chakra_read.c '    if (!rc && c->n && memcmp(names, g->name, c->n * sizeof *names)) {' '    if (!rc && c->n && 0) {'

mutant chakra_import_rows_unshared kill "^chakra:roundtrip" \
    "build --chakra writes every GPU's node and edge rows, also for the GPUs the read took from another's structure"
sub src/cli/chakra_cmd.c '        if (gs[i]->share_refs && i && gs[i]->share_refs == gs[first]->share_refs)' \
    '        if (0)'

mutant chakra_overlay_collision_unchecked kill "^test_chakra_cache$|^chakra:" \
    "Chakra import takes the compared GPU's strings as an overlay even where a group of the file is named as one of its nodes"
sub io/chakra/chakra_read.c 'if (strcmp(a, b)) rep[i] = 1, fits = !lsim_strtab_find(r->strings, a, strlen(a), &j);' \
    'if (strcmp(a, b)) rep[i] = 1, fits = 1;'

# -- fewer replicas with --dp-cost (2026-12-07, ninth session)
mutant fsdp_dp_cost_group_full kill "^test_synth_fsdp$|^search:modes$" \
    "synth --fsdp --dp-cost: an all-gather's group names the full shard group's size, not the GPUs synthesized of it"
sub src/synth/fsdp.c 'F->ag_bytes[i], F->nsim,' 'F->ag_bytes[i], F->n,'

mutant fsdp_dp_cost_replica_places kill "^test_synth_fsdp$|^search:modes$" \
    "synth --fsdp --dp-cost: FSDP's groups timed at the replica's dense GPU numbers, not their places in the full job"
sub src/synth/fsdp.c 'return (int32_t)(t + c->tp * (d + full_dp(c) * cp * p));' 'return (int32_t)(t + c->tp * (d + c->dp * cp * p));'

mutant moe_dp_cost_replica_stage kill "^test_synth_moe$|^search:modes$" \
    "synth with experts and --dp-cost: the EP and EDP groups numbered in the replicas synthesized, not the full job"
sub src/synth/gen.c 'G.tpi + G.tps * G.dpi, c->tp * G.dpc, G.tps * G.dpx)' 'G.tpi + G.tps * G.dpi, G.tps * G.dpx, G.tps * G.dpx)'

mutant moe_dp_cost_edp_full kill "^test_synth_moe$|^search:modes$" \
    "synth with experts and --dp-cost: the expert gradients' reduction names the full EDP group's size, not the GPUs synthesized"
sub src/synth/moe.c 'X->edp_bytes, X->edpsim, X->edp_pg,' 'X->edp_bytes, X->edp, X->edp_pg,'

# ---- 2026-12-08 (tenth session): issues 39 and 40's new checks, each with
# the end-to-end test a user would recognise as its killer
mutant whatif_precheck_skipped kill "^reliability:values$" \
    "whatif reads every graph before refusing a synthesized store's options (the metadata check not called)"
sub src/cli/whatif_cmd.c '(rc = whatif_precap(wa, &err)) || (rc = lsim_wi_plan_precheck(wa, &err))' '(rc = whatif_precap(wa, &err))'

mutant resynth_graph_edit_carried kill "^whatif:resynth$|^test_whatif_rules$" \
    "whatif --ep with an option that edits graphs (--jitter) synthesizes the job again and drops the option"
sub src/cli/resynth.c 'return i == SIZE_MAX ? NULL : lsim_wi_opt_at(i)->name;' 'return i == SIZE_MAX ? NULL : NULL;'

mutant second_writer_unchecked kill "^reliability:signals$" \
    "a second writer of one new store replaces the first's without --force (the output check not asked again)"
sub src/write/output.c 'if (g_recheck && (rc = g_recheck(o->target, 0, err))) goto cleanup;' 'if (0) goto cleanup;'

mutant nohup_sighup_handled kill "^reliability:signals$" \
    "a signal inherited as ignored (SIGHUP under nohup) gets lumosim's handler and ends the run"
sub src/cli/main.c 'if (sigaction(ends[i], NULL, &was) == 0 && was.sa_handler == SIG_IGN) continue;' '(void)was;'

mutant graph_root_unchecked kill "^reliability:values$" \
    "a store's collective root outside its group is accepted"
sub src/graph.c 'if (c->root < -1 || c->root >= rmax)' 'if (c->root < -1)'

mutant archive_breakdown_unchecked kill "^reliability:values$" \
    "an archive's breakdown values are not range-checked on read (collect, report, add-run take them)"
sub io/h5_archive.c 'for (int p = 0; !rc && p < 4; p++) rc = check_span(c, where, ds, part[p], row, v[p]);' 'for (int p = 0; !rc && p < 4; p++) (void)v[p];'

mutant json_control_raw kill "^trace_out:escape$|^test_inputs$" \
    "a newline inside a JSON string is written raw (invalid JSON) in traces and records"
sub src/text.c "case '\\n': e = \"\\\\n\", el = 2; break;" "case '\\n': e = \"\\n\", el = 1; break;"

mutant report_store_unreduced kill "^report:store_reduced$" \
    "report of a graph store reads it for a full run (every GPU simulated), not sim's reduced one"
sub io/run/load_store.c 'flags |= LSIM_STORE_READ_REDUCED;' 'flags |= 0;'

SAMPLE="latency_plus_1us breakdown_swap clock_offset_sign"
SAMPLE_TARGETS="test_oracle"
SAMPLE_TESTS='^test_oracle$'

# ---------------------------------------------------------------- options
while [ $# -gt 0 ]; do
    case "$1" in
    --list) MODE=list; shift ;;
    --check) MODE=check; shift ;;
    --sample) MODE=sample; shift ;;
    --full) FULL=1; shift ;;
    --no-escalate) ESCALATE=0; shift ;;
    --tests) TESTS_ALL=$2; shift 2 ;;
    --targets) TARGETS=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --work) WORK=$2; shift 2 ;;
    --src) SRC=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    --shared) SHARED=$2; shift 2 ;;
    --exclude) EXCLUDES+=("$2"); shift 2 ;;
    -j) JOBS=$2; shift 2 ;;
    --docs) DOCS=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "mutate.sh: unknown option $1" >&2; exit 2 ;;
    *) ONLY+=("$1"); shift ;;
    esac
done
[ -n "$SHARED" ] || SHARED="$SRC/../shared/traces"

die() { echo "mutate.sh: $*" >&2; exit 2; }

# --docs: the markers checked now, the run's identity taken now (the tree
# it copies), the block written at the end (write_docs)
DOC_BEGIN='<!-- BEGIN bench/mutate.sh -->' DOC_END='<!-- END bench/mutate.sh -->'
if [ -n "$DOCS" ]; then
    [ -f "$DOCS" ] && [ -w "$DOCS" ] || die "--docs $DOCS: not a writable file"
    DOCS=$(cd "$(dirname "$DOCS")" && pwd)/$(basename "$DOCS") # the run changes directory
    [ "$(grep -cxF "$DOC_BEGIN" "$DOCS")" = 1 ] && [ "$(grep -cxF "$DOC_END" "$DOCS")" = 1 ] ||
        die "--docs $DOCS: needs the lines '$DOC_BEGIN' and '$DOC_END' once each"
    RUN_COMMIT=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)
    [ -z "$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null)" ] || RUN_COMMIT="$RUN_COMMIT with uncommitted changes"
    RUN_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
    RUN_LOAD=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo unknown)
fi

index_of() { # index_of ID -> the mutant's index, or nothing
    local i
    for i in "${!M_ID[@]}"; do [ "${M_ID[$i]}" = "$1" ] && { echo "$i"; return 0; }; done
    return 1
}

if [ "$MODE" = list ]; then
    for i in "${!M_ID[@]}"; do
        printf '%-26s %-5s %s\n    tests: %s\n' "${M_ID[$i]}" "${M_KIND[$i]}" "${M_WHAT[$i]}" "${M_TESTS[$i]}"
    done
    exit 0
fi

SELECTED=()
if [ "$MODE" = sample ]; then
    # shellcheck disable=SC2206
    SELECTED=($SAMPLE)
    for i in "${!M_ID[@]}"; do M_TESTS[$i]=$SAMPLE_TESTS; done
elif [ ${#ONLY[@]} -gt 0 ]; then
    SELECTED=("${ONLY[@]}")
else
    SELECTED=("${M_ID[@]}")
fi
for id in "${SELECTED[@]}"; do index_of "$id" >/dev/null || die "no mutant '$id' (--list)"; done
if [ -n "$TESTS_ALL" ]; then
    for i in "${!M_ID[@]}"; do M_TESTS[$i]=$TESTS_ALL; done
fi

# count_in FILE FROM: occurrences of the literal text FROM in FILE
count_in() {
    perl -e 'my ($f, $from) = @ARGV; open(my $h, "<", $f) or exit 99; local $/; my $s = <$h>;
             my $n = () = $s =~ /\Q$from\E/g; print "$n\n";' "$1" "$2"
}

# check_all TREE: every substitution of every mutant matches exactly once
check_all() {
    local tree=$1 k n bad=0
    for k in "${!S_ID[@]}"; do
        n=$(count_in "$tree/${S_FILE[$k]}" "${S_FROM[$k]}")
        if [ "$n" != 1 ]; then
            echo "mutate.sh: mutant ${S_ID[$k]}: the text to replace occurs ${n:-?} times in ${S_FILE[$k]}, not once:" >&2
            printf '    %s\n' "${S_FROM[$k]}" >&2
            bad=1
        fi
    done
    return $bad
}

if [ "$MODE" = check ] || [ "$MODE" = sample ]; then
    check_all "$SRC" || die "the mutant list is stale: fix the substitutions above"
    echo "ok: all ${#S_ID[@]} substitutions of ${#M_ID[@]} mutants apply to $SRC"
    [ "$MODE" = check ] && exit 0
fi

command -v cmake >/dev/null || die "cmake not found"
command -v ctest >/dev/null || die "ctest not found"
command -v perl >/dev/null || die "perl not found"

# ---------------------------------------------------------------- scratch copy
OWN_WORK=0
if [ -z "$WORK" ]; then
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/lsim-mutate.XXXXXX") || die "mktemp failed"
    OWN_WORK=1
else
    mkdir -p "$WORK" || die "cannot create $WORK"
    WORK=$(cd "$WORK" && pwd)
fi
# remove what this script made, nothing else of a --work directory
cleanup() {
    [ "$KEEP" -eq 1 ] && return
    if [ "$OWN_WORK" -eq 1 ]; then rm -rf "$WORK"; else rm -rf "$WORK/src" "$WORK/orig" "$WORK/log" "$WORK/build" "$WORK/shared"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# inside the source tree only under a path that is not copied
case "$WORK/" in "$SRC/"*)
    rel=${WORK#"$SRC"/} ok=0
    case "$rel" in build*) ok=1 ;; esac
    for x in "${EXCLUDES[@]+"${EXCLUDES[@]}"}"; do
        x=${x%/}
        case "$WORK/" in "$x/"*) ok=1 ;; esac
    done
    [ "$ok" -eq 1 ] || die "--work is inside the source tree ($SRC) and would be copied into itself" ;;
esac
rm -rf "$WORK/src" "$WORK/orig" "$WORK/log"
mkdir -p "$WORK/src" "$WORK/orig" "$WORK/log" || die "cannot write $WORK"
excl=(--exclude='./build*' --exclude=./.git)
for x in "${EXCLUDES[@]+"${EXCLUDES[@]}"}"; do
    case "$x" in "$SRC"/*) x="./${x#"$SRC"/}" ;; esac
    excl+=(--exclude="$x")
done
(cd "$SRC" && tar "${excl[@]}" -cf - .) | (cd "$WORK/src" && tar -xf -) || die "copying $SRC failed"
# ../shared beside the copy, as beside a checkout (tests/mpi looks there)
if [ -d "$SHARED" ]; then
    mkdir -p "$WORK/shared" && ln -sfn "$(cd "$SHARED" && pwd)" "$WORK/shared/traces"
    have_shared="yes ($SHARED)"
else
    have_shared="no (tests that need them skip)"
fi
check_all "$WORK/src" || die "the mutant list is stale: fix the substitutions above"
B=$WORK/build
# a build left by an earlier run (--work) may hold a mutant's objects, newer
# than the copied sources: make every file a mutant touches look changed
if [ -d "$B" ]; then
    for f in "${S_FILE[@]}"; do touch "$WORK/src/$f"; done
fi
echo "mutate.sh: scratch copy $WORK/src, shared traces: $have_shared"
cmake -S "$WORK/src" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLSIM_SHARED_TRACES="$WORK/shared/traces" \
    >"$WORK/log/configure.log" 2>&1 || { tail -n 30 "$WORK/log/configure.log" >&2; die "configure failed"; }

build() { # build LOG [all]
    if [ "$MODE" = sample ]; then
        # shellcheck disable=SC2086
        cmake --build "$B" -j "$JOBS" --target $SAMPLE_TARGETS >"$1" 2>&1
    elif [ -n "$TARGETS" ] && [ "${2:-}" != all ]; then
        # shellcheck disable=SC2086
        cmake --build "$B" -j "$JOBS" --target $TARGETS >"$1" 2>&1
    else
        cmake --build "$B" -j "$JOBS" >"$1" 2>&1
    fi
}

# run_tests REGEX LOG [STOP]: runs the tests (all when REGEX is empty); prints
# the names of those that failed, one per line
run_tests() {
    local re=$1 log=$2 stop=${3:-0} args=(--test-dir "$B" -j "$JOBS" --timeout 900 --output-on-failure -LE "mutation|memcheck")
    [ -n "$re" ] && args+=(-R "$re")
    [ -n "$EXCLUDE_RE" ] && args+=(-E "$EXCLUDE_RE")
    [ "$stop" -eq 1 ] && args+=(--stop-on-failure)
    ctest "${args[@]}" >"$log" 2>&1
    sed -n '/The following tests FAILED:/,$p' "$log" | sed -n 's/^[[:space:]]*[0-9][0-9]* - \(.*\) ([^()]*)$/\1/p'
    # no test ran at all, or ctest itself failed: say so, neither is a pass
    if grep -q "No tests were found" "$log"; then echo "(no test matches '$re')";
    elif ! grep -q "tests passed" "$log"; then echo "(ctest did not run: $log)"; fi
}

echo "mutate.sh: building the clean copy"
build "$WORK/log/build-clean.log" all || { tail -n 30 "$WORK/log/build-clean.log" >&2; die "the clean copy does not build"; }

# The tests each mutant needs, as one regex, must pass on the clean copy.
# (split at the top-level '|' and deduplicated: ctest's regex engine allows
# few parentheses)
union=""
if [ "$FULL" -eq 0 ]; then
    for id in "${SELECTED[@]}"; do
        i=$(index_of "$id")
        union="${union:+$union|}${M_TESTS[$i]}"
    done
    union=$(perl -e 'my ($d, $cur, %seen, @out) = (0, "");
        for my $ch (split //, $ARGV[0]) {
            if ($ch eq "|" && !$d) { push @out, $cur unless $seen{$cur}++; $cur = ""; next }
            $d++ if $ch eq "("; $d-- if $ch eq ")"; $cur .= $ch;
        }
        push @out, $cur unless $seen{$cur}++; print join("|", @out);' "$union")
    # ctest's regex engine (kwsys) holds at most 9 parenthesised groups: a
    # union past that matches nothing, so the clean copy runs the whole
    # suite instead (a run of the whole list)
    groups=$(printf '%s' "$union" | tr -cd '(' | wc -c)
    if [ "$groups" -gt 9 ]; then
        echo "mutate.sh: the mutants' tests, $groups groups, are more than one ctest regex can hold"
        union=""
    fi
fi
if [ -n "$union" ]; then echo "mutate.sh: the clean copy, the mutants' own tests"; else echo "mutate.sh: the clean copy, the whole suite"; fi
# Tests that fail without any mutant can judge nothing: the sample (CI)
# stops; a full run leaves them out, says so, and marks the score.
EXCLUDE_RE=""
EXCLUDED=()
exclude_failing() { # exclude_failing LOG NAMES
    local names=$2 n
    [ -n "$names" ] || return 0
    case "$names" in "("*) die "the clean copy's tests did not run: $names" ;; esac
    echo "$names" | sed 's/^/    failing on the clean copy: /' >&2
    [ "$MODE" = sample ] && die "tests fail without any mutant (log: $1); nothing can be judged"
    echo "mutate.sh: WARNING: these tests fail without any mutant (log: $1): left out, the score below does not count them" >&2
    while read -r n; do
        [ -n "$n" ] || continue
        EXCLUDED+=("$n")
        EXCLUDE_RE="${EXCLUDE_RE:+$EXCLUDE_RE|}^$(perl -e 'print quotemeta($ARGV[0])' "$n")\$"
    done <<<"$names"
}
exclude_failing "$WORK/log/tests-clean.log" "$(run_tests "$union" "$WORK/log/tests-clean.log")"
full_base_done=$FULL
[ -n "$union" ] || full_base_done=1 # the clean copy ran the whole suite

# ---------------------------------------------------------------- the run
apply() { # apply ID
    local k f
    for k in "${!S_ID[@]}"; do
        [ "${S_ID[$k]}" = "$1" ] || continue
        f=${S_FILE[$k]}
        [ -e "$WORK/orig/$f" ] || { mkdir -p "$(dirname "$WORK/orig/$f")" && cp -p "$WORK/src/$f" "$WORK/orig/$f"; } || return 1
        perl -e 'my ($f, $from, $to) = @ARGV; open(my $h, "<", $f) or exit 99; local $/; my $s = <$h>; close $h;
                 my $n = () = $s =~ /\Q$from\E/g; exit 3 if $n != 1;
                 $s =~ s/\Q$from\E/$to/; open($h, ">", $f) or exit 99; print $h $s; close $h or exit 99;' \
            "$WORK/src/$f" "${S_FROM[$k]}" "${S_TO[$k]}" || { echo "mutate.sh: mutant $1 does not apply to $f" >&2; return 1; }
    done
}
restore() {
    local f
    (cd "$WORK/orig" && find . -type f) | while read -r f; do cp -p "$WORK/orig/$f" "$WORK/src/$f"; touch "$WORK/src/$f"; done
    rm -rf "$WORK/orig" && mkdir -p "$WORK/orig"
}

R_ID=() R_STATUS=() R_BY=()
errors=0
for id in "${SELECTED[@]}"; do
    i=$(index_of "$id")
    log=$WORK/log/$id
    t0=$SECONDS
    if ! apply "$id"; then
        errors=$((errors + 1)); R_ID+=("$id"); R_STATUS+=("NOT-APPLIED"); R_BY+=("-"); restore; continue
    fi
    if ! build "$log.build.log"; then
        echo "mutate.sh: mutant $id does not build (log: $log.build.log)" >&2
        errors=$((errors + 1)); R_ID+=("$id"); R_STATUS+=("NO-BUILD"); R_BY+=("-"); restore; continue
    fi
    if [ "$FULL" -eq 1 ]; then
        by=$(run_tests "" "$log.tests.log" 1)
        scope="whole suite"
    else
        by=$(run_tests "${M_TESTS[$i]}" "$log.tests.log")
        scope="own tests"
        if [ -z "$by" ] && [ "$ESCALATE" -eq 1 ] && [ "$MODE" != sample ]; then
            if [ "$full_base_done" -eq 0 ]; then
                restore
                build "$WORK/log/build-clean2.log" || die "the clean copy does not rebuild"
                exclude_failing "$WORK/log/tests-clean-full.log" "$(run_tests "" "$WORK/log/tests-clean-full.log")"
                full_base_done=1
                apply "$id" && build "$log.build.log" || die "mutant $id no longer builds"
            fi
            by=$(run_tests "" "$log.full.log" 1)
            scope="whole suite"
        fi
    fi
    case "$by" in "(no test matches"*|"(ctest did not run"*)
        echo "mutate.sh: mutant $id: $by" >&2; by=""; errors=$((errors + 1)) ;; esac
    if [ -n "$by" ]; then status=KILLED; else status=SURVIVED; fi
    names=$(echo "$by" | head -n 6 | paste -sd, - | sed 's/,/, /g')
    [ "$(echo "$by" | grep -c .)" -gt 6 ] && names="$names, ... ($(echo "$by" | grep -c .) tests)"
    R_ID+=("$id"); R_STATUS+=("$status"); R_BY+=("${names:--}")
    if [ -n "$names" ]; then detail="by $names"; else detail="($scope)"; fi
    printf '%-26s %-5s %-8s %4ss  %s\n' "$id" "${M_KIND[$i]}" "$status" "$((SECONDS - t0))" "$detail"
    restore
done

# ---------------------------------------------------------------- the score
killed=0 nonequiv=0 equiv_ok=0 equiv=0 survivors=() wrong_equiv=()
for k in "${!R_ID[@]}"; do
    i=$(index_of "${R_ID[$k]}")
    if [ "${M_KIND[$i]}" = equiv ]; then
        equiv=$((equiv + 1))
        if [ "${R_STATUS[$k]}" = SURVIVED ]; then equiv_ok=$((equiv_ok + 1)); else wrong_equiv+=("${R_ID[$k]}"); fi
    else
        nonequiv=$((nonequiv + 1))
        if [ "${R_STATUS[$k]}" = KILLED ]; then killed=$((killed + 1)); else survivors+=("${R_ID[$k]}"); fi
    fi
done
echo
printf 'score: %d of %d non-equivalent mutants killed' "$killed" "$nonequiv"
[ "$nonequiv" -gt 0 ] && printf ' (%d %%)' $((100 * killed / nonequiv))
printf '; %d of %d equivalent mutants survived as argued\n' "$equiv_ok" "$equiv"
# per area: the directory (or top-level file) of each mutant's first
# substitution; AREAS lists every area area_of gives, in the order printed
AREAS="cost synth whatif memory search writers replay chakra engine/job"
area_of() {
    local k f
    for k in "${!S_ID[@]}"; do
        [ "${S_ID[$k]}" = "$1" ] || continue
        f=${S_FILE[$k]}
        case "$f" in
        src/cost/*) echo cost ;; src/synth/*|src/stages.c) echo synth ;; src/whatif/*) echo whatif ;; src/memest.c) echo memory ;;
        src/run/search_rank.c) echo search ;; src/csv.c|src/report.c|src/write/chrome_writer.c|io/h5_*) echo writers ;;
        src/build/*|src/metrics.c|src/read/kineto.c|src/critical.c) echo replay ;; io/chakra/*.c) echo chakra ;;
        *) echo engine/job ;;
        esac
        return
    done
}
declare -A A_K=() A_N=() A_E=()
for k in "${!R_ID[@]}"; do
    i=$(index_of "${R_ID[$k]}") a=$(area_of "${R_ID[$k]}")
    if [ "${M_KIND[$i]}" = equiv ]; then A_E[$a]=$(( ${A_E[$a]:-0} + 1 ));
    else A_N[$a]=$(( ${A_N[$a]:-0} + 1 )); [ "${R_STATUS[$k]}" = KILLED ] && A_K[$a]=$(( ${A_K[$a]:-0} + 1 )); fi
done
for a in $AREAS; do
    [ -n "${A_N[$a]:-}${A_E[$a]:-}" ] || continue
    printf '  %-11s killed %d of %d, survived %d, equivalent %d\n' "$a" "${A_K[$a]:-0}" "${A_N[$a]:-0}" \
        $(( ${A_N[$a]:-0} - ${A_K[$a]:-0} )) "${A_E[$a]:-0}"
done
for s in "${survivors[@]+"${survivors[@]}"}"; do echo "SURVIVED (a missing test): $s"; done
for s in "${wrong_equiv[@]+"${wrong_equiv[@]}"}"; do echo "KILLED although listed as equivalent (the argument is wrong): $s"; done
for k in "${!R_ID[@]}"; do
    i=$(index_of "${R_ID[$k]}")
    [ "${M_KIND[$i]}" = equiv ] && echo "equivalent: ${R_ID[$k]}: ${M_WHY[$i]}"
done
for x in "${EXCLUDED[@]+"${EXCLUDED[@]}"}"; do echo "left out (fails without any mutant): $x"; done
[ "$KEEP" -eq 1 ] && echo "logs: $WORK/log"

# write_docs: the block between the markers of $DOCS, the rest of the file
# as it was
write_docs() {
    local blk k i a tmp
    blk=$(mktemp "$(dirname "$DOCS")/.mutate-docs.XXXXXX") || die "--docs: cannot write next to $DOCS"
    {
        echo "$DOC_BEGIN"
        echo
        echo "Written by \`bash bench/mutate.sh $ARGS\` (generated; do not edit by hand), started $RUN_DATE at"
        echo "commit $RUN_COMMIT, load $RUN_LOAD at the start, ${#R_ID[@]} of the list's ${#M_ID[@]} mutants:"
        printf '**score: %d of %d non-equivalent mutants killed' "$killed" "$nonequiv"
        [ "$nonequiv" -gt 0 ] && printf ' (%d %%)' $((100 * killed / nonequiv))
        printf '; %d of %d equivalent mutants survived as argued.**' "$equiv_ok" "$equiv"
        [ "$errors" -eq 0 ] || printf ' %d mutant(s) did not apply, build or run: the run is incomplete.' "$errors"
        [ ${#EXCLUDED[@]} -eq 0 ] || printf ' Left out (failing without any mutant): %s.' "${EXCLUDED[*]}"
        printf '\n\n| area | killed | of | survived | equivalent |\n|---|---:|---:|---:|---:|\n'
        for a in $AREAS; do
            [ -n "${A_N[$a]:-}${A_E[$a]:-}" ] || continue
            printf '| %s | %d | %d | %d | %d |\n' "$a" "${A_K[$a]:-0}" "${A_N[$a]:-0}" \
                $(( ${A_N[$a]:-0} - ${A_K[$a]:-0} )) "${A_E[$a]:-0}"
        done
        printf '\n| mutant | area | kind | result | killed by (tests) |\n|---|---|---|---|---|\n'
        for k in "${!R_ID[@]}"; do
            i=$(index_of "${R_ID[$k]}")
            printf '| %s | %s | %s | %s | %s |\n' "${R_ID[$k]}" "$(area_of "${R_ID[$k]}")" "${M_KIND[$i]}" \
                "${R_STATUS[$k]}" "$(echo "${R_BY[$k]}" | sed 's/|/\\|/g')"
        done
        echo
        echo "$DOC_END"
    } >"$blk.block" || { rm -f "$blk" "$blk.block"; die "--docs: cannot write next to $DOCS"; }
    perl -e 'my ($f, $b, $e, $blkf) = @ARGV; open(my $h, "<", $f) or exit 1; local $/; my $s = <$h>; close $h;
             open($h, "<", $blkf) or exit 1; my $blk = <$h>; close $h; $blk =~ s/\n\z//;
             $s =~ s/^\Q$b\E\n.*?^\Q$e\E$/$blk/ms or exit 1; print $s;' \
        "$DOCS" "$DOC_BEGIN" "$DOC_END" "$blk.block" >"$blk" && chmod --reference="$DOCS" "$blk" && mv "$blk" "$DOCS" ||
        { rm -f "$blk" "$blk.block"; die "--docs: $DOCS not rewritten"; }
    rm -f "$blk.block"
    echo "mutate.sh: the run written into $DOCS"
}
[ -z "$DOCS" ] || write_docs
[ "$errors" -eq 0 ] || exit 2
[ ${#survivors[@]} -eq 0 ] && [ ${#wrong_equiv[@]} -eq 0 ] || exit 1
exit 0
