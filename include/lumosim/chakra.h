/* MLCommons Chakra execution traces (ET) out of and into lumosim graphs
 * (io/chakra/chakra.c, io/chakra/chakra_read.c; the schema io/chakra/et_def.proto,
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

/* Node records kept from one export for the next. The GPUs of a
 * synthesized stage and a job's data-parallel replicas have one structure
 * (lsim_graph_same_structure) and one collectives' table: their records
 * differ only in the processors' ids, the groups' names and the pairs a
 * send names. The cache holds every node's packed bytes but those (about
 * one file's size) and writes a GPU of the same structure by copying
 * them, byte for byte what lsim_chakra_write gives (docs/chakra.md,
 * "Speed"). Not for concurrent use. */
typedef struct lsim_chakra_cache lsim_chakra_cache;

/* 0, or LSIM_ENOMEM. Local. */
int lsim_chakra_cache_new(lsim_chakra_cache **out, lsim_err *err);
void lsim_chakra_cache_free(lsim_chakra_cache *c); /* NULL: no-op */

/* The graph whose node records the cache holds (NULL: none). The cache
 * borrows it: keep it alive and unchanged while it is this graph, that is
 * until a write through the cache of a graph of another structure, or
 * lsim_chakra_cache_free. Local. */
const lsim_graph *lsim_chakra_cache_graph(const lsim_chakra_cache *c);

/* How many graphs the cache made its records of, and how many it wrote
 * from another graph's records. Local. */
void lsim_chakra_cache_counts(const lsim_chakra_cache *c, uint64_t *made, uint64_t *reused);

/* lsim_chakra_write through cache (NULL: lsim_chakra_write): g is written
 * from the cached records when it has their graph's structure, else its
 * records replace them and g becomes the graph the cache borrows. The file
 * is the same either way. On failure the cache holds no graph. Local. */
int lsim_chakra_write_cached(FILE *f, const char *name, const lsim_graph *g, const char *const *attrs,
                             lsim_chakra_cache *cache, lsim_err *err);

/* Read one Chakra ET file into a new graph (*out, lsim_graph_free) of GPU
 * rank `rank` of a job of world_size GPUs (used when the file does not say;
 * -1: unknown). attrs (may be NULL) receives LSIM_CHAKRA_NSTORE_ATTRS
 * malloc'd strings or NULLs (caller frees). The graph passes
 * lsim_graph_check_bounds. Local. */
int lsim_chakra_read(const char *path, int32_t rank, int32_t world_size, lsim_graph **out, char **attrs,
                     lsim_err *err);

/* lsim_chakra_read through cache (NULL: lsim_chakra_read). A file
 * lumosim wrote whose node records are, byte for byte, those of the last
 * graph this cache read whole, written with this file's processors,
 * collectives and strings, takes that graph's structure, shared
 * (lsim_graph_share; its own copy where its name ids differ) instead of
 * unpacking every node: the same graph either way. The cache borrows
 * every graph it returns that it read whole: keep the last one alive and
 * unchanged while the cache reads. Local. */
int lsim_chakra_read_cached(const char *path, int32_t rank, int32_t world_size, lsim_graph **out, char **attrs,
                            lsim_chakra_cache *cache, lsim_err *err);

#endif
