/* What-if internals shared by the files of src/whatif (not a public header). */
#ifndef LUMOSIM_WI_INTERNAL_H
#define LUMOSIM_WI_INTERNAL_H

#include "lumosim/engine.h"
#include "lumosim/whatif.h"
#include "../util.h" /* lsim_time_node: (time, node) pairs */

/* A structural edit of one graph: nodes removed, and segments (node sets
 * seg[v] >= 0) present copies[s] times (0: removed -- also flag them in
 * removed --, 1: kept, k: k-1 copies placed right after the segment's last
 * node). Edges into a removed node's successors come from the node before
 * it on its processor; a copy's edges from outside the segment come from the
 * previous copy's last node on that processor. */
typedef struct wi_plan {
    const uint8_t *removed;  /* per node */
    const int32_t *seg;      /* per node, -1 none */
    const int *copies;       /* per segment */
    uint32_t nseg;
    const char *source;      /* NULL: keep */
    int renumber;            /* 1: renumber collective seq per group in node
                                order; 2: in the source's order, each copy's
                                collectives right after the previous copy's
                                (collective kernels only: for traces, whose
                                node ids need not follow stream order) */
    /* new name of node v's copy c (interned in o), or UINT32_MAX to keep */
    int (*name_of)(void *ctx, lsim_graph *o, uint32_t v, uint32_t c, uint32_t *id);
    void *ctx;
    /* per segment, or NULL: 1 when its copies run in the reverse order of
     * the copies they differentiate (a backward layer: copy c carries the
     * Sequence numbers of forward copy copies - 1 - c, so that the first
     * forward copy pairs with the last backward one, as in a real step) */
    const uint8_t *seq_reverse;
    /* or NULL: set to new arrays (the caller frees) giving, per node of the
     * new graph, its source node and its copy number (0: the original) */
    uint32_t **from_out, **copy_out;
} wi_plan;

int wi_rebuild(const lsim_graph *g, const wi_plan *P, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err);
int wi_renumber_seq(lsim_graph *o, lsim_err *err);
int wi_intern(lsim_graph *g, const char *s, uint32_t *id);

/* Kernel roles of a Kineto trace from its repeating structure
 * (trace_roles.c): per node a role (LSIM_WI_NTROLES numbering, 0 none) and
 * a layer (-1 none), for the compute-stream kernels and TP all-reduces. */
enum {
    WI_TR_NONE = 0, WI_TR_LN1, WI_TR_QKV, WI_TR_ATTN, WI_TR_PROJ, WI_TR_ATTN_AR, WI_TR_ADD1, WI_TR_LN2, WI_TR_FC1,
    WI_TR_GELU, WI_TR_FC2, WI_TR_MLP_AR, WI_TR_ADD2, WI_TR_LNF, WI_TR_LOGITS, WI_TR_EMB_AR, WI_TR_NROLES
};
typedef struct wi_troles {
    int found, has_tp, forward_only;
    int layers, runs, period;
    int64_t stream;
    uint64_t kernels, assigned, unassigned, ars, ars_assigned, memops;
    int64_t kernels_per_layer, kernels_per_layer_max;
    size_t first_seg_start;
    uint64_t why_count[LSIM_WI_NWHY];
    uint64_t role_kernels[LSIM_WI_NTROLES];
    uint8_t *role;   /* per node */
    int32_t *layer;  /* per node */
    char why[192];   /* found == 0: why */
} wi_troles;

/* force_layers > 0: that many layers per run, or LSIM_EARG when the run does
 * not split into that many equal repeating layers. Not found is not an
 * error (found = 0, why). 0, LSIM_EARG, LSIM_ENOMEM; wi_troles_free after. */
int wi_trace_roles(const lsim_graph *g, int force_layers, wi_troles *R, lsim_err *err);
void wi_troles_free(wi_troles *R);
const char *wi_trole_name(int r);
/* no backward-pass or optimizer kernel (names, synthesized tags) */
int wi_forward_only(const lsim_graph *g);
/* fill out->layer_source / klayers / forward_only of an untagged graph */
int wi_ident_kernels(const lsim_graph *g, int trace_layers, lsim_wi_ident *out, lsim_err *err);


/* The pipeline shape checks shared by synthesized and traced sources
 * (pipeline.c): positive numbers, stages and chunks within the N layers,
 * N divisible by PP x V, interleaving with PP >= 2 and micro-batches
 * divisible by PP. `whose` names the layers in messages ("model's").
 * 0 or LSIM_EARG. */
int wi_pipe_shape_check(const lsim_wi_pipe_cfg *to, int N, const char *whose, lsim_err *err);

/* The layer subgraphs of a Kineto trace (layers.c), from the roles R found
 * on it: seg[v] = run * units + layer for every node of a layer subgraph
 * (the compute stream from the layer's first recognised kernel to the next
 * layer's -- up to its last kernel for a run's last layer --, the
 * tensor-parallel all-reduces it owns, their launch calls, and the
 * launching thread's other work between the layer's first launch and the
 * next layer's; blocking calls excluded), -1 for every other node. The
 * graph's own schedule (E) ordered them. `what` names the option in errors
 * (LSIM_EARG: structure unknown, layers out of order, an all-reduce outside
 * its layer). wi_tcut_free after (also after an error). */
typedef struct wi_tcut {
    int units, runs, nseg;   /* layers per run, runs, units x runs */
    int32_t *seg;            /* per node */
    uint32_t *launcher;      /* per node: its launch call, or UINT32_MAX */
    uint32_t cpu_thread;     /* processor of the launching thread; UINT32_MAX
                                when its launches do not follow layer order */
    lsim_ns *t0, *t1;        /* per segment: first start, last end on the compute stream
                                (annotations: of the layer's GPU work) */
    int64_t stream;          /* the compute stream's id (tid) */
    int annotated;           /* the layers came from layer annotations */
    lsim_engine *E;          /* the schedule (lsim_engine_start / _end) */
} wi_tcut;
int wi_trace_cut(const lsim_graph *in, const wi_troles *R, const char *what, wi_tcut *C, lsim_err *err);
void wi_tcut_free(wi_tcut *C);

/* The class of a kernel by its name, as the kernel structure reads it
 * (trace_roles.c): WI_K_ELEM element-wise (anything else), WI_K_GEMM
 * (gemm, cutlass, xmma, matmul, cublas, _dgrad, _wgrad), WI_K_ATTN
 * (softmax, flash, fmha, attn, attention), WI_K_NORM (layernorm, rmsnorm). */
enum { WI_K_ELEM = 0, WI_K_GEMM, WI_K_ATTN, WI_K_NORM };
int wi_kernel_class(const char *name);

/* Where a kernel role belongs, as shape.c's cost of a role reads it. */
enum { WI_W_NONE = 0, WI_W_LAYER, WI_W_EMB, WI_W_HEAD, WI_W_GRAD };

/* Kernel roles of a traced training step (layers.c), in lumosim synth's
 * vocabulary (the names shape.c costs: "qkv_gemm", "fc1_dgrad", "ln1",
 * "attn", "gelu", "dropout_add", "lnf", "logits_gemm", ...), from the
 * training cut (wi_layers_cut): a forward layer's compute-stream kernels in
 * order -- the norms ln1, ln2; the GEMMs QKV, projection, FC1, FC2; the
 * attention kernels; element-wise kernels after the projection (the
 * dropout-add), between FC1 and FC2 (GeLU) and after FC2 (the second
 * dropout-add) --, the head's norm and GEMM after the last layer (lnf,
 * logits), the embedding's forward kernels before the first; a backward
 * kernel takes the role of the forward op it differentiates (its Sequence
 * number), a GEMM's first backward kernel the data gradient, its second
 * the weight gradient; optimizer kernels "adam_step" (all parameters).
 * Per node: role (NULL none; static strings), where (WI_W_*), pass (0
 * forward, 1 backward, 2 optimizer); layer_of (the cut's layer, -1 none).
 * LSIM_EARG with the reason when a layer is not a transformer layer (not
 * two norms, four GEMMs and attention) or the step cannot be cut.
 * wi_train_roles_free after (also after an error). */
typedef struct wi_train_roles {
    const char **role;
    uint8_t *where, *pass;
    int32_t *layer_of;
    int layers, passes;
} wi_train_roles;
int wi_train_roles_find(const lsim_graph *g, wi_train_roles *T, lsim_err *err);
void wi_train_roles_free(wi_train_roles *T);

/* The layer of a record_function annotation's name (layer[i], layers.i,
 * layer_i, Layer i), or -1 (ident.c). */
int wi_annot_layer(const char *name);

/* The layers of a forward-only trace, cut as wi_trace_cut does: from its
 * layer annotations when it has them (a layer is the launching thread's
 * work inside annotation layer[i] -- from its first piece to its last, the
 * thread being flattened -- and the GPU work launched from there), else from
 * the kernel structure (wi_trace_roles; --trace-layers applies). LSIM_EARG:
 * no structure, a backward pass or optimizer step (only forward layers are
 * recovered; cutting them would leave their backward behind), annotations
 * on several threads, missing, repeated or overlapping. */
int wi_layers_cut(const lsim_graph *in, int trace_layers, const char *what, wi_tcut *C, lsim_err *err);

/* --pp on a traced training step (train_pipe.c; lsim_wi_trace_pipeline
 * calls it for a trace with a backward pass): the same contract, the
 * step's forward and backward layers split into stages and its micro-batch
 * copied to->micro_batches times in 1F1B order. */
int wi_train_pipeline(const lsim_graph *in, const lsim_wi_layout *L, const lsim_wi_pipe_cfg *to,
                      const lsim_topology *topo, int tp_i, int dp_i, int pp_i, lsim_graph **out, lsim_wi_counts *rec,
                      lsim_err *err);

/* Shared by the trace pipelines (trace_pipe.c): the trace's launch costs
 * (median launch call over launcher[v]'s, median launch-edge delay; 5 us
 * when there is none; samp: n scratch values); the next free correlation
 * id; the device (pid) of stream tid `stream` and its first free stream id;
 * a new stage's rank, world size and "tp:P:D" / "dp:T:P" group names in
 * layout Ls (0 or LSIM_ENOMEM). */
void wi_launch_costs(const lsim_graph *in, const uint32_t *launcher, lsim_ns *samp, lsim_ns *lcall, lsim_ns *ldelay);
int64_t wi_next_corr(const lsim_graph *in);
void wi_free_stream(const lsim_graph *in, int64_t stream, int64_t *pid, int64_t *tid);
int wi_stage_place(lsim_graph *o, const lsim_wi_layout *Ls, int tp_i, int dp_i, int pp_i);

/* Nodes and edges added to a graph (wi_append): new node i gets id g->n + i;
 * an edge's ends are old or new ids. New processors are appended after g's
 * (index g->nprocs + i). Names are strings, interned in the new graph; a
 * collective's group name is given in pg (coll.pg_name is ignored). */
typedef struct wi_addnode {
    uint8_t kind, flags;
    uint32_t proc;
    const char *name;
    lsim_ns dur;
    int32_t iter;
    int64_t corr;
    int has_coll;
    lsim_coll_info coll;     /* pg_name ignored: pg is interned */
    char pg[48];
} wi_addnode;
typedef struct wi_addedge {
    uint32_t src, dst;
    uint8_t cls;             /* lsim_edge_class | LSIM_EDGE_END */
    lsim_ns delay;
} wi_addedge;

/* A copy of g with nodes, edges and processors added (g is not modified).
 * Counts the nodes and edges in rec->added / edges_added. 0 or LSIM_ENOMEM. */
int wi_append(const lsim_graph *g, const lsim_proc *procs, uint32_t nprocs, const wi_addnode *nodes, size_t nn,
              const wi_addedge *edges, size_t ne, lsim_graph **out, lsim_wi_counts *rec, lsim_err *err);

/* PyTorch DDP's gradient buckets over a traced step (trace_ddp.c): the
 * CPU nodes with grad_bytes (graph.h) by pass (ProfilerStep iteration) and
 * thread order (start: per node, the schedule's start times; NULL: node ids), cut as DDP's compute_bucket_assignment_by_size does (a
 * bucket closes once its bytes reach its limit: first_cap for a pass's
 * first bucket, cap after). *out (caller frees) has one entry per bucket,
 * passes in order. 0 or LSIM_ENOMEM. */
typedef struct wi_ddp_bucket {
    int32_t pass;      /* 0-based */
    int64_t bytes;
    uint32_t last;     /* the node whose end makes the bucket ready */
    uint32_t nparams;  /* gradient nodes in it */
} wi_ddp_bucket;
int wi_ddp_buckets(const lsim_graph *g, const lsim_ns *start, int64_t first_cap, int64_t cap, wi_ddp_bucket **out,
                   size_t *nout, uint32_t *npass);

#endif
