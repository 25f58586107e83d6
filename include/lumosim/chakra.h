/* MLCommons Chakra execution traces (ET) out of and into lumosim graphs
 * (io/chakra.c, io/chakra_read.c; the schema io/chakra/et_def.proto,
 * compiled with protobuf-c; docs/chakra.md).
 *
 * A Chakra ET file holds one rank: a stream of messages, each preceded by
 * its length as a protobuf varint, a GlobalMetadata first, then one Node
 * record per node. One lumosim graph (one GPU) is one file.
 *
 * Export writes every node of the graph as a Chakra node (ids = node
 * indices): CPU pieces and runtime calls as COMP_NODE with is_cpu_op true,
 * kernels, copies and sets as COMP_NODE, collectives as COMM_COLL_NODE with
 * comm_type / comm_size / pg_name, sends and receives as COMM_SEND_NODE /
 * COMM_RECV_NODE; every incoming edge as a ctrl_dep (lumosim's edges order
 * work, they do not name tensors: no data_deps). What Chakra's fields
 * cannot say (nanoseconds, edge classes and delays, observed times,
 * releases, the processor, iteration and collective tables, the store's
 * root attributes) goes into attributes named "lsim.*" and into the
 * GlobalMetadata's, so that lsim_chakra_read gives back a graph whose
 * simulation is the original's to the nanosecond.
 *
 * Import reads any Chakra ET file: with the "lsim.*" attributes as written
 * by export, without them (another tool's trace) from Chakra's own fields:
 * duration_micros x 1000 ns, ctrl_deps and data_deps both as dependencies
 * (start after the end of), is_cpu_op / tid / stream for threads and
 * streams, comm_type / comm_size / pg_name / comm_src / comm_dst for
 * communication (docs/chakra.md has the table).
 *
 * Errors: 0 or a negative LSIM_E* with err filled, one line naming the
 * file (and the node: "FILE: node ID 'NAME': what"): LSIM_EFORMAT for a
 * truncated or corrupt message, an unknown or unsupported node type, a
 * dependency on a node the file does not hold, a dependency cycle, an
 * out-of-range value; LSIM_EIO; LSIM_ENOMEM. Local. */
#ifndef LUMOSIM_CHAKRA_H
#define LUMOSIM_CHAKRA_H

#include <stdio.h>

#include "lumosim/graph.h"

/* The graph store's root attributes a Chakra file carries (in its
 * GlobalMetadata as "lsim.store.NAME"), so that an imported store keeps
 * them: the job's GPU, its memory estimate, its what-if record. */
#define LSIM_CHAKRA_NSTORE_ATTRS 3
extern const char *const lsim_chakra_store_attr[LSIM_CHAKRA_NSTORE_ATTRS]; /* "device", "memory", "whatif" */

/* Write g to f as one Chakra ET file; attrs[k] (NULL entries: absent; attrs
 * may be NULL) are the store's root attributes lsim_chakra_store_attr[k].
 * name names the file in messages. Local. */
int lsim_chakra_write(FILE *f, const char *name, const lsim_graph *g, const char *const *attrs, lsim_err *err);

/* Read one Chakra ET file into a new graph (*out, lsim_graph_free) of GPU
 * rank `rank` of a job of world_size GPUs (used when the file does not say;
 * -1: unknown). attrs (may be NULL) receives LSIM_CHAKRA_NSTORE_ATTRS
 * malloc'd strings or NULLs (caller frees). The graph passes
 * lsim_graph_check_bounds. Local. */
int lsim_chakra_read(const char *path, int32_t rank, int32_t world_size, lsim_graph **out, char **attrs,
                     lsim_err *err);

#endif
