/* Refusing, before reading anything, inputs that would not fit in memory
 * and outputs that would not fit on disk.
 *
 * Without this, a trace set too big for the node is found out by the
 * out-of-memory killer minutes into a run, with no message. The estimate is
 * calibrated on this implementation (bench/run.sh, docs/reliability.md): one
 * trace being parsed peaks at about 0.5 x its uncompressed JSON size, and
 * each graph kept after it adds about 0.25 x its file's size. Local; no MPI.
 * No ownership transfers: all pointers are borrowed. */
#ifndef LUMOSIM_MEMLIMIT_H
#define LUMOSIM_MEMLIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "lumosim/common.h"

/* Uncompressed size of a trace file: its size, or for gzip the ISIZE
 * trailer (size mod 2^32, corrected upwards past the compressed size).
 * Returns 0 or LSIM_EIO (err names the file). */
int lsim_mem_input_bytes(const char *path, uint64_t *bytes, lsim_err *err);

/* Peak bytes to read and keep the graphs of n traces of the given
 * uncompressed sizes, one at a time (see above). */
uint64_t lsim_mem_estimate(const uint64_t *sizes, size_t n);

/* The memory this process may use, in bytes, and where the figure comes
 * from (a static string): LUMOSIM_MEM_LIMIT if set (a number with optional
 * K/M/G/T suffix, powers of 1024; 0 turns the check off and returns 0),
 * else the smallest of MemAvailable (/proc/meminfo), the cgroup v2
 * memory.max and RLIMIT_AS, each divided by the number of ranks Open MPI
 * or Slurm put on this node. Returns UINT64_MAX when nothing is known.
 * Returns 0 on success, LSIM_EARG when LUMOSIM_MEM_LIMIT is malformed. */
int lsim_mem_limit(uint64_t *limit, const char **source, lsim_err *err);

/* The address space (RLIMIT_AS, `ulimit -v`) every command needs before it
 * reads anything: LSIM_MEM_FLOOR_B. Measured: `lumosim info` and `sim` of a
 * small store run at 31,000 KiB; at 30,500 KiB HDF5 reports its file
 * open out of memory; at 30,000 KiB H5Fopen crashes inside HDF5
 * (H5AC_create does not check an allocation, Debian 12's HDF5 1.10.8).
 * Above 40 MiB the commands' own estimates speak (lsim_mem_limit). 0 when
 * the limit is at least the floor or unset; else LSIM_ENOMEM with one line
 * stating the floor and the limit. Local. */
#define LSIM_MEM_FLOOR_B (40ULL << 20)
int lsim_mem_floor_check(lsim_err *err);

/* The whole check over n trace paths: 0 when they fit (or the check is
 * off); *total_bytes (may be NULL) gets their uncompressed size; LSIM_ENOMEM with one message naming the largest input, the
 * estimate and the limit when not; LSIM_EIO/LSIM_EARG as above. */
int lsim_mem_check_inputs(const char *const *paths, size_t n, uint64_t *total_bytes, lsim_err *err);

/* Peak bytes to hold graphs of these total counts (ngpu graphs, their
 * nodes, edges and strings) and simulate them: 32 MiB of libraries + 80 KiB
 * per graph (its string pool's first block, hash, tables) +
 * LSIM_MEM_NODE_B (132) B per node (node arrays, the training phase
 * columns included, engine state with the deciding edges, the staging
 * buffer of a store read) + 20 B per edge (17 B of CSR arrays) + 48 B per
 * string. Fitted to `lumosim sim` (no archive, no deciding edges: 116 B a
 * node) of the flat 256-GPU GPT-3 175B store (docs/reliability.md: synth
 * --tp 8 --pp 8 --dp 4 --global-batch 256 --gpu h200
 * --no-shared-structure; 11,998,144 nodes, 19,738,528 edges, 6,015,424
 * strings): 2,080,132 KiB peak RSS, estimate 2,079,904 KiB. */
uint64_t lsim_mem_estimate_graphs(uint64_t ngpu, uint64_t nodes, uint64_t edges, uint64_t strings);

/* Nodes of GPUs that share another GPU's structure (graph.h, share_refs)
 * cost only their own state (engine 40 B, job and results):
 * LSIM_MEM_SHARED_NODE_B bytes of the 132 a node with its own structure
 * costs; their strings, an overlay of the other GPU's (strtab.h): with
 * the store's shared strings (strings_like) only its replaced names, its
 * rows (a handful), else 12 of the 48 a string. These give the numbers of
 * full nodes and strings that cost as much, for the estimate above. Fitted to `lumosim sim` of a synthesized
 * 4,096-GPU GPT-3 175B store read shared (72.1 M nodes, 8 GPUs with
 * structure of their own, 36.1 M strings): peak RSS 4,128.7 MiB, estimate
 * about 4,085 MiB (docs/hdf5-schema.md, "Shared structure"). That run
 * kept the engines' deciding edges (16 B a node, LSIM_MEM_BIND_B below);
 * without them the same job peaks at 2,959 MiB, estimate about 2,985 MiB.
 * lsim_mem_shared_strings gives the strings' equivalent. Pure. */
#define LSIM_MEM_SHARED_NODE_B 48

/* The estimate's bytes per node of a GPU with a structure of its own
 * (above), and the part of them (and of LSIM_MEM_SHARED_NODE_B) that is
 * the engines' deciding edges: 16 B a node (two 8-byte columns, engine.h),
 * which `sim` keeps only for --detail nodes, --trace-out and
 * --critical-path. The store reader's check leaves them out when told the
 * engines will not keep them (LSIM_STORE_READ_NO_BIND, store.h). */
#define LSIM_MEM_NODE_B 132
#define LSIM_MEM_BIND_B 16

/* A run the symmetry reduction simulates one GPU per class of
 * (LSIM_STORE_READ_REDUCED): a GPU that shares another's structure holds
 * no engine and no per-node array of its own, and costs about nothing a
 * node or a graph. The run's peak is then the collective match's sort
 * (job.c), which lists every GPU's collective kernels before the classes
 * are known: LSIM_MEM_MATCH_B bytes a collective kernel, its entry (80 B,
 * lsim_job_entry), its sort key (24 B), its place in the order (8 B) and
 * its group id (4 B), from the code, not fitted. massif on a 6,144-GPU
 * Llama 405B-class job (2.75 GB peak inside the sort) shows exactly those
 * four arrays. 32 MiB + the structures' own nodes (LSIM_MEM_NODE_B) +
 * 116 B a collective kernel against sim -o's peak RSS, measured ->
 * modelled (docs/scaling.md): GPT-3 175B 4,096 GPUs 608 -> 618 MiB, Llama
 * 2,048 GPUs 322 -> 328 MiB, 6,144 GPUs with sequence parallelism and full
 * recomputation 2,561 -> 2,623 MiB, Llama 98,304 GPUs 12,699 -> 12,639
 * MiB. Until 2026-12-07 the check counted 4 B a node and 80 KiB a graph
 * for those GPUs, fitted to jobs of about 0.07 collectives a node: the
 * 6,144-GPU job (0.135) was estimated at half its peak. */
#define LSIM_MEM_MATCH_B 116

/* The match in parts (lsim_job_match_ex, job.h): the job's own arrays are
 * made whole first, LSIM_MEM_MATCH_HELD_B a collective kernel (its
 * participant's GPU, node and record, 12 B, and its instance slot, 4 B,
 * from the code; and its share of the instances' 25 B: offset, transfer,
 * rule, root, about one instance for 6 kernels in a job of 8-GPU tensor
 * groups and pipeline pairs), and each part's sort then holds
 * LSIM_MEM_MATCH_B / parts of it. At most LSIM_MATCH_PARTS_MAX parts:
 * each costs a listing of every GPU's nodes. 32 MiB + the structures' own
 * nodes at 132 B + LSIM_MEM_MATCH_HELD_B + LSIM_MEM_MATCH_B / parts (rounded
 * up) a collective kernel against `sim --match-parts P` of the 6,144-GPU
 * Llama job above (22,918,656 collective kernels), peak RSS measured ->
 * modelled: P = 2: 1,738 -> 1,795 MiB; 4: 1,188 -> 1,161; 8: 856 -> 855;
 * 16: 687 -> 702; and `sim -o` of its 98,304-GPU version (366,698,496
 * kernels) in the 4 parts the run chose: 17,030 -> 17,226 MiB. */
#define LSIM_MEM_MATCH_HELD_B 20
#define LSIM_MATCH_PARTS_MAX 16

/* Bytes a collective kernel costs at the match's peak in `parts` parts
 * (LSIM_MEM_MATCH_B for one). Pure. */
unsigned lsim_mem_match_bytes(unsigned parts);

/* The fewest parts (1 .. LSIM_MATCH_PARTS_MAX) in which the match of
 * `colls` collective kernels fits in `room` bytes; 0 when none does.
 * Pure. */
unsigned lsim_mem_match_parts(uint64_t colls, uint64_t room);

/* Writing a result archive (sim -o) costs a GPU with a structure of its
 * own 8 B a node more at the write's peak: the archive's per-node start
 * and end columns are packed per table, and its kernel summary rows
 * (about one per kernel: synthesized names carry micro-batch and layer
 * tags) are built and written in rounds of 256 Ki rows (h5_archive.c).
 * An archive shares rows only among GPUs that share a structure, so a
 * sharing GPU adds nothing. Fitted to `lumosim sim -o` of the flat
 * 256-GPU GPT-3 175B store (synth --tp 8 --pp 8 --dp 4 --global-batch 256
 * --gpu h200 --no-shared-structure: 12.0 M nodes): 2,174,108 KiB peak RSS
 * against 2,080,196 KiB without -o, 8.0 B a node. */
#define LSIM_MEM_WRITE_B 8

/* nodes at `bytes` a node, as the number of full nodes (LSIM_MEM_NODE_B)
 * that cost as much, rounded up. Pure. */
uint64_t lsim_mem_nodes_at(uint64_t nodes, unsigned bytes);

/* Overlay strings (12 B) as full strings (48 B), rounded up: an overlay
 * built from a table of its own (a store without shared strings). Pure. */
uint64_t lsim_mem_shared_strings(uint64_t strings);

/* The smallest number of MPI ranks K over which graphs of these totals,
 * split evenly (ceil(ngpu / K) graphs and 1/K of the nodes, edges and
 * strings on each), need at most limit bytes per rank by the estimate
 * above; 0 when none does (not even one GPU per rank, K = ngpu) or
 * ngpu is 0. Pure. */
uint64_t lsim_mem_ranks_to_fit(uint64_t ngpu, uint64_t nodes, uint64_t edges, uint64_t strings, uint64_t limit);

/* The check before graphs are read or made, on each rank for its own
 * share: mine = {graphs, nodes, edges, strings} this rank would hold, job =
 * the same for the whole job, ranks = the ranks it runs on now (1 outside
 * MPI); nodes and strings may be the full-node and full-string
 * equivalents of cheaper ones (lsim_mem_nodes_at, lsim_mem_shared_strings),
 * so the message names shown_nodes, the rank's nodes as they are, and
 * shown_graphs its graphs (mine[0] may count only those that cost a
 * graph's 80 KiB: LSIM_MEM_MATCH_B above). 0 when
 * mine's estimate fits this rank's limit (or the check is
 * off); LSIM_ENOMEM with one message, "WHAT: N graph(s) of X nodes and Y
 * edges in all need about A GiB per rank at K = ranks, more than the B GiB
 * each rank may use (SOURCE); the whole job fits at K >= M ranks of B GiB
 * (lsim_mem_ranks_to_fit of job), ..." (or that no K does); LSIM_EARG
 * for a malformed LUMOSIM_MEM_LIMIT. what names the input (a store) or the
 * result. ranks 0: the reader runs in one process only (report of a result
 * archive, refused under mpirun): the message says so instead of advising
 * mpirun; ranks -1: so does the reader of graph store `what` (replay,
 * report), and the message advises sim of it under mpirun when some K
 * fits, then report of sim's archive (read bounded). Local. */
int lsim_mem_check_job(const char *what, const uint64_t mine[4], const uint64_t job[4], int ranks,
                       uint64_t shown_nodes, uint64_t shown_graphs, lsim_err *err);

/* lsim_mem_check_job for one process holding all of the graphs (mine =
 * job, ranks = 1). */
int lsim_mem_check_graphs(const char *what, uint64_t ngpu, uint64_t nodes, uint64_t edges, uint64_t strings,
                          lsim_err *err);

/* Disk: LSIM_EIO with one message ("PATH: needs about X MiB, the file
 * system has Y MiB free") when the file system holding PATH's directory has
 * fewer than need bytes available to this user (statvfs f_bavail); 0 when
 * it has them, when need is 0, or when the figure cannot be had (the write
 * itself still reports a full disk). Sizes of outputs, from measurements:
 * a predicted trace is about 1/15 of the uncompressed input JSON, a graph
 * store about 1/50, a result archive about 1.6 x its graph store. */
int lsim_disk_check(const char *path, uint64_t need, lsim_err *err);

/* The directory a file PATH goes in: everything before the last '/', "/"
 * or ".". Returns a malloc'd string the caller frees, NULL when out of
 * memory. */
char *lsim_dir_of(const char *path);

#endif
