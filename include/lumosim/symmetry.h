/* Exact symmetry reduction (issue 43): GPUs of a coupled job that reach the
 * same times are found by colour refinement, and only one representative
 * per class is simulated.
 *
 * Classes. A GPU's first colour is what its own engine reads (sched_inline.h,
 * sched_resolve): its structure (the node columns and edges, one object
 * for every graph sharing it: lsim_graph.share_refs, else the graph
 * itself), its t0 and its clock offset. A GPU with observed waiting
 * (j->obs_wait) is a class of its own. Each round a GPU's colour becomes
 * (its colour, the sum over its collective and p2p participations of a
 * hash of (node, own role: root or not, the instance's rule and transfer,
 * the sorted distinct (colour, role) pairs of the participants)), until
 * the number of classes stops growing. The representative of a class is
 * its lowest GPU index.
 *
 * The quotient. Each instance's image is the set of its participants
 * mapped to their representatives: (representative, node, role),
 * duplicates removed. The quotient job holds one instance per distinct
 * image. It is exact when, for every instance, its image is the image of
 * each of its representatives' own instances at those nodes, with the same
 * rule and transfer, and the representatives' collective nodes are exactly
 * the nodes of the images (checked while building, whatever the hashes
 * said). Then the full job's times, each GPU given its representative's,
 * satisfy every equation of the full job (a GPU's nodes: same structure,
 * t0 and offset as its representative; an instance: the last arrival of
 * its image, all of whose members arrive as the GPUs they stand for), and
 * the engine's solution is unique. Not exact: no quotient, the full run.
 *
 * Local. No MPI. */
#ifndef LUMOSIM_SYMMETRY_H
#define LUMOSIM_SYMMETRY_H

#include "lumosim/job.h"

/* A GPU's first colour: its structure's hash (lsim_sym_structure_hash:
 * the same value on every MPI rank, where structure objects are not
 * shared), t0, clock offset, and own (0, or a value no other GPU has: the
 * GPU index + 1 of a GPU with observed waiting). */
typedef struct lsim_sym_key {
    uint64_t structure, t0, offset, own;
} lsim_sym_key;

/* A hash of g's node columns (LSIM_GRAPH_COLUMNS) and incoming CSR: what
 * lsim_graph_same_structure compares. */
uint64_t lsim_sym_structure_hash(const lsim_graph *g);

/* Every GPU's key from j->graphs (a serial match), one hash per structure
 * object. 0, or LSIM_ENOMEM. */
int lsim_sym_keys(const lsim_job *j, lsim_sym_key *keys, lsim_err *err);

/* rep (caller-allocated, j->ngpus) gets each GPU's representative, *nclass
 * the number of classes, refined from keys over j's instances (j needs no
 * graphs nor per-node arrays). 0, or LSIM_ENOMEM. */
int lsim_sym_classes(const lsim_job *j, const lsim_sym_key *keys, uint32_t *rep, size_t *nclass, lsim_err *err);

/* 1 when every GPU of j->graphs has its representative's structure (byte
 * for byte: what a structure hash only proposed), t0 and clock offset, and
 * no GPU of a class of several has observed waiting. */
int lsim_sym_same_members(const lsim_job *j, const uint32_t *rep);

/* The quotient of j by rep (lsim_sym_classes): *out a job of one GPU per
 * class (GPU q is the q-th representative in index order; graphs NULL,
 * the caller sets them), qidx (caller-allocated, j->ngpus) each
 * representative's index in it (UINT32_MAX for the others); its obs_wait
 * entries are NULL (the caller moves the representatives' in). Not exact (above):
 * *out NULL and 0. node_count, coll_count: each GPU's node and
 * collective-record counts (the representatives' are read). 0, or
 * LSIM_ENOMEM. */
int lsim_sym_quotient(const lsim_job *j, const uint32_t *rep, const size_t *node_count, const size_t *coll_count,
                      uint32_t *qidx, lsim_job **out, lsim_err *err);

#endif
