/* Link sharing between concurrent network transfers (docs/network.md,
 * "Link sharing"): a flow-level model of the NICs and leaf uplinks that
 * the modelled collectives and point-to-point transfers of a job cross.
 *
 * Every collective instance of the job whose participants sit on more
 * than one node (node of GPU i = i / gpus_per_node: the job's GPU index
 * is its global rank, as in synthesized stores) is one *flow*. It starts
 * at its last arrival and, alone on an idle fabric, transfers in its
 * modelled time (the instance's transfer: its `work`). It loads links:
 *   - NIC transmit and receive of each GPU it sends / receives through
 *     (a collective: every participant's NIC both ways; a send: the
 *     sender's transmit and the receiver's receive), demand 1: alone,
 *     the modelled time already runs each NIC at its full rate;
 *   - with a fat tree (nodes_per_leaf > 0, and oversubscription > 1 or
 *     ecmp_paths > 1), the uplink and downlink of each leaf its traffic
 *     leaves and enters:
 *     a ring collective crosses each leaf boundary once per channel
 *     (channels = the fewest participants on one node), an all-to-all
 *     sends n_L (n - n_L) / (n - g) NICs' worth out of a leaf holding n_L
 *     of its n participants, a send one. A leaf's uplink carries
 *     nodes_per_leaf x gpus_per_node / oversubscription NICs. With ECMP
 *     (ecmp_paths S > 1) the uplink is S paths of 1/S of that each, and a
 *     demand d is ceil(d) channels, each hashed (the flow's key, leaf,
 *     direction, channel) onto one path: flows can collide on a path.
 * Links are shared max-min fairly (progressive filling, each flow capped
 * at its alone rate 1), and the shares are recomputed whenever a flow
 * starts or ends; a flow ends when its work is done at the rates it got.
 *
 * What it leaves out (a first step, docs/network.md): the starts come
 * from the previous run of the job (the run is repeated with the shared
 * times until they no longer change, at most `passes` times), not from a
 * run that re-times transfers while it goes; the whole transfer time is shared, its latency part too;
 * NVLink is never shared; the spine itself is non-blocking beyond the
 * leaves' uplinks; traced (observed) instances and broadcasts or reduces
 * with a known root keep their times and load no link.
 *
 * Determinism: the sweep runs on every MPI rank over the same flows in
 * (start, key) order, so every rank computes the same times, bit for bit,
 * whatever the number of ranks. Local (no MPI here). */
#ifndef LUMOSIM_NETSHARE_H
#define LUMOSIM_NETSHARE_H

#include <stddef.h>
#include <stdint.h>

#include "lumosim/common.h"
#include "lumosim/cost.h"
#include "lumosim/job.h"

/* Flows: flow f is instance id[f] of the job, links [loff[f], loff[f+1])
 * of link[] with demand dem[]. Link ids: 2 g transmit and 2 g + 1 receive
 * of GPU g's NIC; 2 (ngpus + L) up and 2 (ngpus + L) + 1 down of leaf L
 * (of leaf path L S + p with ECMP). key[f]: the instance's first
 * participant, GPU << 32 | node: unlike id, which a distributed match
 * numbers by its owners, it is the same for any number of MPI ranks, so
 * the sweep's order and ECMP's hash use it. */
typedef struct lsim_netflows {
    size_t n, cap;
    uint64_t *id, *key;
    uint8_t *kind;       /* the instance's lsim_coll_kind (the report's per-kind figures) */
    uint32_t *parts;     /* the instance's participants (the archive's net_flows) */
    int64_t *bytes;      /* its collective's bytes, -1 unknown (the same) */
    lsim_ns *start, *work;
    uint64_t *loff;
    size_t nl, lcap;
    uint32_t *link;
    double *dem;
} lsim_netflows;

void lsim_netflows_free(lsim_netflows *f);

/* Append one flow of collective kind `kind`, of `parts` participants and
 * `bytes` bytes (-1 unknown; both only reported), links and demands
 * copied. 0 or LSIM_ENOMEM. */
int lsim_netflows_add(lsim_netflows *f, uint64_t id, uint64_t key, int kind, uint32_t parts, int64_t bytes,
                      lsim_ns start, lsim_ns work, const uint32_t *link, const double *dem, size_t nlinks,
                      lsim_err *err);

/* The flows of the instances this process contributes: those held whose
 * first participant's GPU has a graph here (j->graphs[gpu] != NULL) and an
 * end array (ends[gpu], after a run of the job); rule ALL or ROOTLESS;
 * the first participant not observed; participants on several nodes.
 * work[k] is each held instance's alone transfer (the job's transfer
 * before any sharing; ninst entries). 0, LSIM_ENOMEM. */
int lsim_netshare_collect(const lsim_job *j, const lsim_ns *const *ends, const lsim_ns *work,
                          const lsim_topology *t, lsim_netflows *out, lsim_err *err);

#define LSIM_NETSHARE_HOT 8
/* The histograms' bins (lsim_netshare_stats): utilization in tenths; the
 * flows' slowdown from x1 at the edges 1, 1.1, 1.25, 1.5, 2, 3, 4. */
#define LSIM_NETSHARE_UBINS 10
#define LSIM_NETSHARE_SBINS 7
/* The lower edge of slowdown bin k (0 <= k < LSIM_NETSHARE_SBINS). */
double lsim_netshare_slow_edge(int k);

/* A link's name ("gpu 12 nic tx", "leaf 3 up", "leaf 3 path 1 up" with
 * ECMP paths) for reports, into buf. */
void lsim_netshare_link_name(uint32_t link, size_t ngpus, uint32_t paths, char *buf, size_t cap);

/* The flows of one collective kind: how many, how many sharing slowed,
 * and their transfer time alone on an idle fabric and as simulated (sums,
 * whole nanoseconds: exact whatever the order). */
typedef struct lsim_netshare_kind {
    uint64_t flows, slowed;
    double alone_ns, shared_ns;
} lsim_netshare_kind;

/* One of the flows sharing delayed most: its instance's first participant
 * (key: GPU << 32 | node), kind, start, and its transfer alone and shared. */
typedef struct lsim_netshare_late {
    uint64_t key;
    int kind;
    lsim_ns start, alone, shared;
} lsim_netshare_late;

/* What the sweep did. */
typedef struct lsim_netshare_stats {
    uint64_t flows;      /* flows swept */
    uint64_t slowed;     /* flows whose shared time exceeds their alone time */
    uint64_t events;     /* flow starts and ends (rates recomputed) */
    uint64_t updates;    /* flow rates set (sum over events of the flows active) */
    double alone_ns, shared_ns; /* sums over the flows */
    double max_slowdown;        /* the largest shared / alone */
    double nic_busy_ns, uplink_busy_ns; /* time-integral of the links' load / capacity, per class */
    /* every link's utilization over the span (busy / span_ns), over the
     * links_used that carried traffic: median and 90th percentile (nearest
     * rank; the maximum is hot_busy_ns[0] / span_ns); every flow's shared /
     * alone transfer: median and 95th percentile (the maximum is
     * max_slowdown) */
    uint64_t links_used;
    double util_p50, util_p90, slowdown_p50, slowdown_p95;
    /* the same as histograms: util_hist[k], the links of utilization in
     * [k/10, (k+1)/10) (the last bin takes 1); slow_hist[k], the flows of
     * shared / alone in [lsim_netshare_slow_edge(k), ..(k+1)) (the last
     * bin open) */
    uint64_t util_hist[LSIM_NETSHARE_UBINS];
    uint64_t slow_hist[LSIM_NETSHARE_SBINS];
    lsim_ns span_ns;     /* first start to last end */
    /* the busiest links: id (netshare.h's numbering) and busy time at full
     * load, busiest first (ties: lower id), nhot of them (at most
     * LSIM_NETSHARE_HOT) */
    uint32_t hot_link[LSIM_NETSHARE_HOT];
    double hot_busy_ns[LSIM_NETSHARE_HOT];
    int nhot;
    uint64_t ngpus;      /* the job's GPUs (names the links) */
    uint32_t paths;      /* ECMP paths per leaf uplink (names the links) */
    int passes;          /* sweeps run (set by the run, lsim_run_opts.share_passes) */
    int converged;       /* the last sweep gave the times of the one before: a fixed point */
    lsim_netshare_kind by_kind[LSIM_COLL_NKINDS];
    /* the LSIM_NETSHARE_HOT flows whose shared transfer exceeds their alone
     * one most, most first (ties: lower key, then earlier start); nlate of
     * them (only slowed flows) */
    lsim_netshare_late late[LSIM_NETSHARE_HOT];
    int nlate;
} lsim_netshare_stats;

/* Every flow and every loaded link of one sweep: what the stats above
 * summarize, row by row (the archive's net_flows and net_links tables,
 * docs/hdf5-schema.md; the Python reader's network_flows / _links).
 * Flows in the sweep's order (start, then key: the same for any number of
 * MPI ranks); links by id, those that carried traffic only. */
typedef struct lsim_netshare_flow_row {
    uint64_t gpu, node;   /* the instance's first participant (its key) */
    int64_t kind;         /* lsim_coll_kind; a send / receive pair: SENDRECV */
    int64_t parts, bytes; /* participants; the collective's bytes, -1 unknown */
    int64_t links;        /* the links it loads */
    lsim_ns start;        /* its transfer's start (its last arrival) */
    lsim_ns alone, shared; /* its transfer alone on an idle fabric, and shared */
} lsim_netshare_flow_row;

typedef struct lsim_netshare_link_row {
    uint64_t link;  /* id (the numbering above; lsim_netshare_link_name) */
    uint64_t flows; /* the flows that load it */
    double busy_ns; /* time-integral of its load / capacity: busy time at full load */
} lsim_netshare_link_row;

/* Owned by whoever holds it (lsim_netshare_detail_free). */
typedef struct lsim_netshare_detail {
    size_t nflows, nlinks;
    lsim_netshare_flow_row *flows;
    lsim_netshare_link_row *links;
    uint64_t ngpus;  /* the job's GPUs and ECMP paths per uplink: the links' names */
    uint32_t paths;
    lsim_ns span_ns; /* the flows' span (utilization = busy_ns / span_ns) */
} lsim_netshare_detail;

void lsim_netshare_detail_free(lsim_netshare_detail *d);

/* Sweep the flows of a job of ngpus GPUs, in (start, key) order whatever
 * their order in f: out[f] (caller-allocated, f->n) gets flow f's shared
 * transfer; a flow never slowed keeps its work exactly. st (may be NULL)
 * is filled; det (may be NULL) gets every flow and loaded link (what it
 * held before is freed). 0, LSIM_ENOMEM or LSIM_EARG (a link id outside
 * the topology). */
int lsim_netshare_sweep(const lsim_netflows *f, size_t ngpus, const lsim_topology *t, lsim_ns *out,
                        lsim_netshare_stats *st, lsim_netshare_detail *det, lsim_err *err);

/* Give instance k of j the shared transfer of the flow with its id (flows
 * of instances j does not hold are skipped). */
void lsim_netshare_apply(lsim_job *j, const lsim_netflows *f, const lsim_ns *shared);

#endif
