/* Kernel and communication cost formulas (include/lumosim/cost.h). Every
 * formula and constant is explained, with its source, in docs/cost-models.md;
 * the comments here say only what the code does that the formula does not. */
#include "lumosim/cost.h"
#include "lumosim/alloc.h"

#include <math.h>
#include <stdlib.h>

#include "lumosim/trace.h"

/* NCCL 2.x src/graph/tuning.cc: the tree's bus bandwidth is derated to 0.9
 * of the links' (`busBw*.9`), and its algorithm bandwidth is half of that
 * (`ratio = .5`: the whole buffer goes up the tree and comes back down). */
#define TREE_BW_EFF 0.9

static lsim_ns to_ns(double ns)
{
    if (!(ns >= 0)) return 0; /* NaN or negative */
    if (ns >= 9.2e18) return INT64_MAX;
    return (lsim_ns)llround(ns);
}

static int good(double x) { return isfinite(x) && x > 0; }

/* Roofline with the efficiency curve eff(f) = eff_max * f / (f + half):
 * f / (peak * eff(f)) simplifies to (f + half) / (peak * eff_max), which
 * never divides by a vanishing efficiency. */
static lsim_ns roofline(const lsim_gpu_spec *g, double flops, double peak, double eff_max, double half,
                        double bytes)
{
    double t = 0;
    if (good(flops) && good(peak) && good(eff_max) && half >= 0) t = (flops + half) / (peak * eff_max);
    if (good(bytes) && good(g->mem_bw) && good(g->mem_eff)) {
        double tm = bytes / (g->mem_bw * g->mem_eff);
        if (tm > t) t = tm;
    }
    lsim_ns ns = to_ns(t * 1e9);
    return ns < g->kernel_min_ns ? g->kernel_min_ns : ns;
}

/* Threadblock output tiles of large tensor-core GEMMs, as CUTLASS and
 * cuBLAS pick them (the A100 traces' GEMM kernels are named
 * ..._256x128_..., _128x256_..., _128x128_...; docs/cost-models.md). */
static const double TILES[3][2] = {{256, 128}, {128, 256}, {128, 128}};
/* A split-K slice keeps at least this much of K: a few iterations of the
 * 32- to 64-deep main loop, below which splitting buys nothing (cuBLAS'
 * heuristics split only long-K products). */
#define SPLITK_MIN_K 512.0

/* Tiles and waves: for the best tile, its ceil(tiles x split / sms) waves,
 * one wave's main loop at efficiency 1 and the split-K reduction (s); the
 * time is waves x (main / gemm_eff_max + gemm_tile_ns) + reduction. A GEMM
 * whose tiles do not fill the SMs splits K (split-K) and pays for reducing
 * the fp32 partial sums in memory. */
static double waves_s(const lsim_gpu_spec *g, double batch, double m, double n, double k, double peak, double *waves,
                      double *main1, double *reduce)
{
    double sms = g->sms, rate = peak / sms, fixed = (double)g->gemm_tile_ns * 1e-9;
    double best = INFINITY;
    for (int i = 0; i < 3; i++) {
        double tm = TILES[i][0], tn = TILES[i][1];
        double tiles = ceil(m / tm) * ceil(n / tn) * batch, split = 1;
        if (tiles < sms) {
            split = floor(sms / tiles);
            double kmax = floor(k / SPLITK_MIN_K);
            if (split > kmax) split = kmax;
            if (split < 1) split = 1;
        }
        double w = ceil(tiles * split / sms), m1 = 2 * tm * tn * ceil(k / split) / rate, red = 0;
        if (split > 1 && good(g->mem_bw) && good(g->mem_eff)) red = split * batch * m * n * 4 / (g->mem_bw * g->mem_eff);
        double t = w * (m1 / g->gemm_eff_max + fixed) + red;
        if (t < best) best = t, *waves = w, *main1 = m1, *reduce = red;
    }
    return best;
}

int lsim_cost_gemm_waves(const lsim_gpu_spec *g, double batch, double m, double n, double k, int elem_bytes,
                         double *waves, double *main_ns, double *reduce_ns)
{
    if (!g || g->sms <= 0 || !good(g->gemm_eff_max) || !good(g->peak_flops) || !good(batch) || !good(m) ||
        !good(n) || !good(k))
        return LSIM_EARG;
    double peak = elem_bytes >= 4 ? g->peak_flops / 2 : g->peak_flops, m1 = 0, red = 0;
    waves_s(g, batch, m, n, k, peak, waves, &m1, &red);
    *main_ns = m1 * 1e9;
    *reduce_ns = red * 1e9;
    return 0;
}

lsim_ns lsim_cost_bgemm(const lsim_gpu_spec *g, double batch, double m, double n, double k, int elem_bytes)
{
    if (!g) return 0;
    if (!good(batch) || !good(m) || !good(n) || !good(k)) return g->kernel_min_ns;
    double eb = elem_bytes > 0 ? elem_bytes : 2;
    double peak = elem_bytes >= 4 ? g->peak_flops / 2 : g->peak_flops; /* fp32 runs as TF32 */
    if (elem_bytes == 1 && g->peak_flops_fp8 > 0) peak = g->peak_flops_fp8; /* FP8 tensor cores */
    double bytes = batch * (m * k + k * n + m * n) * eb;
    if (g->sms <= 0 || !good(peak) || !good(g->gemm_eff_max))
        return roofline(g, 2 * batch * m * n * k, peak, g->gemm_eff_max, g->gemm_eff_half, bytes);
    double w, m1, red, t = waves_s(g, batch, m, n, k, peak, &w, &m1, &red);
    if (good(bytes) && good(g->mem_bw) && good(g->mem_eff)) {
        double tm = bytes / (g->mem_bw * g->mem_eff);
        if (tm > t) t = tm;
    }
    lsim_ns ns = to_ns(t * 1e9);
    return ns < g->kernel_min_ns ? g->kernel_min_ns : ns;
}

lsim_ns lsim_cost_gemm(const lsim_gpu_spec *g, double m, double n, double k, int elem_bytes)
{
    return lsim_cost_bgemm(g, 1, m, n, k, elem_bytes);
}

lsim_ns lsim_cost_attention(const lsim_gpu_spec *g, double batch, double heads, double seq, double head_dim,
                            int causal, int backward)
{
    if (!g) return 0;
    if (!good(batch) || !good(heads) || !good(seq) || !good(head_dim)) return g->kernel_min_ns;
    double bhsd = batch * heads * seq * head_dim;
    double flops = 4 * bhsd * seq * (causal ? 0.5 : 1.0) * (backward ? 2.5 : 1.0);
    /* bf16 tensors of b*h*s*d elements: forward reads Q, K, V and writes O;
     * backward reads Q, K, V, O, dO and writes dQ, dK, dV. */
    double bytes = (backward ? 8 : 4) * bhsd * 2;
    if (backward && g->attn_bwd_eff_max > 0) /* the backward's own curve */
        return roofline(g, flops, g->peak_flops, g->attn_bwd_eff_max, g->attn_bwd_eff_half, bytes);
    return roofline(g, flops, g->peak_flops, g->attn_eff_max, g->attn_eff_half, bytes);
}

lsim_ns lsim_cost_elementwise(const lsim_gpu_spec *g, double bytes_moved)
{
    if (!g) return 0;
    return roofline(g, 0, 0, 0, 0, good(bytes_moved) ? bytes_moved : 0);
}

/* ---- communication ---- */

/* How a group of ranks sits on the nodes: n GPUs on `nodes` nodes, with
 * between gmin and gmax of them on one node. */
typedef struct group_shape {
    int64_t n, nodes, gmin, gmax;
} group_shape;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t node_of(int32_t r, int gpn)
{
    /* floor division, so that a (meaningless) negative rank stays well defined */
    int64_t q = (int64_t)r / gpn;
    return (r < 0 && q * gpn != r) ? q - 1 : q;
}

/* Count runs of equal node ids in nodes[0..n). */
static void runs(const int64_t *nodes, int n, group_shape *s, int by_index, const int32_t *ranks, int gpn)
{
    int64_t run = 0, prev = 0;
    s->nodes = 0;
    s->gmin = INT64_MAX;
    s->gmax = 0;
    for (int i = 0; i <= n; i++) {
        int64_t cur = 0;
        if (i < n) cur = by_index ? node_of(ranks[i], gpn) : nodes[i];
        if (i > 0 && (i == n || cur != prev)) {
            s->nodes++;
            if (run < s->gmin) s->gmin = run;
            if (run > s->gmax) s->gmax = run;
            run = 0;
        }
        prev = cur;
        run++;
    }
}

/* Ranks are usually listed in increasing order (one pass); otherwise the
 * node ids are sorted in a scratch array. If that allocation fails, runs in
 * the given order are used: more, smaller nodes than the truth, i.e. a
 * pessimistic (slower) answer rather than no answer. */
static void group_shape_of(const lsim_topology *t, const int32_t *ranks, int n, group_shape *s)
{
    int gpn = t->gpus_per_node > 0 ? t->gpus_per_node : 1;
    s->n = n;
    if (!ranks) {
        s->nodes = ((int64_t)n + gpn - 1) / gpn;
        s->gmax = n < gpn ? n : gpn;
        s->gmin = n % gpn ? n % gpn : s->gmax;
        return;
    }
    int sorted = 1;
    for (int i = 1; i < n && sorted; i++)
        if (node_of(ranks[i], gpn) < node_of(ranks[i - 1], gpn)) sorted = 0;
    int64_t *nodes = sorted ? NULL : lsim_malloc((size_t)n * sizeof *nodes);
    if (!nodes) {
        runs(NULL, n, s, 1, ranks, gpn);
        return;
    }
    for (int i = 0; i < n; i++) nodes[i] = node_of(ranks[i], gpn);
    qsort(nodes, (size_t)n, sizeof *nodes, cmp_i64);
    runs(nodes, n, s, 0, ranks, gpn);
    free(nodes);
}

/* Bandwidth of a ring (or tree) over the group: the slowest link class it
 * uses. Across nodes, NCCL runs one channel per NIC with the rings rotated
 * so that each node is left through every participating GPU's own NIC: the
 * node's egress is gmin NICs wide. */
static double group_bw(const lsim_topology *t, const group_shape *s)
{
    if (s->nodes <= 1) return t->intra_bw;
    double bw = (double)s->gmin * t->inter_bw;
    if (s->gmax > 1 && t->intra_bw < bw) bw = t->intra_bw;
    return bw;
}

static int ceil_log2(int64_t x)
{
    int d = 0;
    while (((int64_t)1 << d) < x) d++;
    return d;
}

static int is_p2p(int kind) { return kind == LSIM_COLL_SENDRECV || kind == LSIM_COLL_SEND || kind == LSIM_COLL_RECV; }

static double ring_ns(const lsim_topology *t, int kind, double bytes, const group_shape *s)
{
    double n = (double)s->n, m = (double)s->nodes;
    double bw = group_bw(t, s);
    double steps, isteps, moved;
    switch (kind) {
    case LSIM_COLL_REDUCESCATTER:
        steps = n - 1, isteps = m - 1, moved = (n - 1) / n * bytes;
        break;
    case LSIM_COLL_ALLGATHER:
        steps = n - 1, isteps = m - 1, moved = (n - 1) * bytes;
        break;
    case LSIM_COLL_BROADCAST:
    case LSIM_COLL_REDUCE:
        steps = n - 1, isteps = m - 1, moved = bytes;
        break;
    case LSIM_COLL_ALLTOALL: {
        /* Not a ring: every GPU sends (g-1)/n of its buffer over NVLink and
         * (n-g)/n through its own NIC, both at once; no NIC sharing helps
         * (all-to-all is bisection-bound). */
        steps = n - 1, isteps = m - 1;
        double intra = s->gmax > 1 ? (double)(s->gmax - 1) / n * bytes / t->intra_bw : 0;
        double inter = s->nodes > 1 ? (n - (double)s->gmin) / n * bytes / t->inter_bw : 0;
        return (double)t->coll_base_ns + (steps - isteps) * (double)t->intra_lat_ns +
               isteps * (double)t->inter_lat_ns + (intra > inter ? intra : inter) * 1e9;
    }
    default: /* all_reduce, and kinds not known precisely */
        steps = 2 * (n - 1), isteps = 2 * (m - 1), moved = 2 * (n - 1) / n * bytes;
        break;
    }
    return (double)t->coll_base_ns + (steps - isteps) * (double)t->intra_lat_ns + isteps * (double)t->inter_lat_ns +
           moved / bw * 1e9;
}

static double tree_ns(const lsim_topology *t, double bytes, const group_shape *s)
{
    /* NCCL: a chain inside each node, a double binary tree across nodes,
     * traversed up (reduce) and down (broadcast). */
    double lat = 2.0 * ((double)(s->gmax - 1) * (double)t->intra_lat_ns +
                        ceil_log2(s->nodes) * (double)t->inter_lat_ns);
    return (double)t->coll_base_ns + lat + 2.0 * bytes / (TREE_BW_EFF * group_bw(t, s)) * 1e9;
}

static int has_tree(int kind)
{
    return !(kind == LSIM_COLL_REDUCESCATTER || kind == LSIM_COLL_ALLGATHER || kind == LSIM_COLL_BROADCAST ||
             kind == LSIM_COLL_REDUCE || kind == LSIM_COLL_ALLTOALL || is_p2p(kind));
}

static int topo_ok(const lsim_topology *t) { return t && good(t->intra_bw) && good(t->inter_bw); }

/* ---- NCCL's algorithm and protocol choice (nccl_tuning) ---- */

/* NCCL src/graph/tuning.cc (NVIDIA/nccl, the tuning model of the 2.1x
 * releases), per algorithm (ring, tree) and protocol (LL, LL128, Simple):
 * the bandwidth relative to Simple's (ring LL busBw x 1/4 across nodes,
 * LL128 x 0.92; tree LL x 1/3.8, LL128 x 0.915) and the per-step latency
 * relative to Simple's on the network (hwLat NET: ring 2.7, 4.0, 9.6 us;
 * tree 5.0, 8.5, 50 us). Only the ratios are taken: the absolute step
 * latency and the achieved bandwidths are fitted (lsim_net_fit). */
static const double PROTO_BW[2][3] = {{0.25, 0.92, 1.0}, {1.0 / 3.8, 0.915, 1.0}};
static const double PROTO_LAT[2][3] = {{2.7 / 9.6, 4.0 / 9.6, 1.0}, {5.0 / 50.0, 8.5 / 50.0, 1.0}};

static double eff_or_1(double e) { return e > 0 ? e : 1.0; }

/* Bytes per second leaving a node over its NICs: gmin GPUs' NICs (the
 * rotated rings of group_bw), divided by the spine's oversubscription when
 * the group spans more nodes than one leaf holds (every GPU of the leaf
 * sending across at once), unless link_sharing leaves that to the sharing
 * of the uplinks (netshare.h). */
static double node_egress(const lsim_topology *t, const group_shape *s)
{
    double bw = (double)s->gmin * t->inter_bw;
    if (t->nodes_per_leaf > 0 && s->nodes > t->nodes_per_leaf && t->oversubscription > 1 && !t->link_sharing)
        bw /= t->oversubscription;
    return bw;
}

/* Ring steps and bytes each GPU sends, per kind (as ring_ns). */
static void ring_work(int kind, double bytes, double n, double *steps, double *moved)
{
    switch (kind) {
    case LSIM_COLL_REDUCESCATTER: *steps = n - 1, *moved = (n - 1) / n * bytes; break;
    case LSIM_COLL_ALLGATHER: *steps = n - 1, *moved = (n - 1) * bytes; break;
    case LSIM_COLL_BROADCAST:
    case LSIM_COLL_REDUCE: *steps = n - 1, *moved = bytes; break;
    default: *steps = 2 * (n - 1), *moved = 2 * (n - 1) / n * bytes; break;
    }
}

/* One (algorithm, protocol)'s time across nodes, ns. nominal: as NCCL's
 * tuner predicts it (the links at full rate, the tree at TREE_BW_EFF);
 * else as the hardware delivers it (the fitted efficiencies). A ring puts
 * its moved bytes through each node's egress (one crossing per channel per
 * node); the double binary tree puts 2 x bytes through it (each node is
 * inside one tree and a leaf of the other), 1 x bytes on 2 nodes (no node
 * has both a parent and children): on 2 nodes the tree's bus bandwidth
 * can exceed the NICs'. */
static double nccl_time(const lsim_topology *t, int kind, double bytes, const group_shape *s, int tree, int p,
                        int nominal)
{
    double lat, traffic, eff;
    if (tree) {
        lat = 2.0 * ((double)(s->gmax - 1) + ceil_log2(s->nodes)) * (double)t->tree_hop_ns;
        traffic = (s->nodes == 2 ? 1.0 : 2.0) * bytes;
        eff = nominal ? TREE_BW_EFF : eff_or_1(t->tree_eff);
    } else {
        double steps;
        ring_work(kind, bytes, (double)s->n, &steps, &traffic);
        lat = steps * (double)t->ring_step_ns;
        eff = nominal ? 1.0 : eff_or_1(t->ring_eff);
    }
    double bw = node_egress(t, s) * eff;
    if (s->gmax > 1 && t->intra_bw < bw) bw = t->intra_bw;
    return (double)t->coll_base_ns + lat * PROTO_LAT[tree][p] + traffic / (bw * PROTO_BW[tree][p]) * 1e9;
}

/* All-to-all as point-to-point flows: each GPU sends (g-1)/n of its buffer
 * over NVLink and (n-gmin)/n through its own NIC at once, one message per
 * peer, a fitted per-peer cost for each peer on another node. */
static double nccl_alltoall(const lsim_topology *t, double bytes, const group_shape *s)
{
    double n = (double)s->n, remote = n - (double)s->gmin;
    double intra = s->gmax > 1 ? (double)(s->gmax - 1) / n * bytes / t->intra_bw : 0;
    double inter = remote / n * bytes / (node_egress(t, s) / (double)s->gmin * eff_or_1(t->a2a_eff));
    return (double)t->coll_base_ns + remote * (double)t->a2a_peer_ns + (intra > inter ? intra : inter) * 1e9;
}

/* NCCL's choice: the (algorithm, protocol) its tuning model predicts
 * fastest, among those allowed; the time is that pair's as delivered. */
static double nccl_collective(const lsim_topology *t, int kind, double bytes, const group_shape *s,
                              lsim_coll_algo algo, lsim_coll_proto proto, lsim_coll_algo *ua, lsim_coll_proto *up)
{
    *ua = LSIM_ALGO_RING;
    *up = LSIM_PROTO_SIMPLE;
    if (kind == LSIM_COLL_ALLTOALL) return nccl_alltoall(t, bytes, s);
    double best_hat = INFINITY, best = 0;
    for (int tree = 0; tree < 2; tree++) {
        if (tree && !has_tree(kind)) continue;
        if (algo != LSIM_ALGO_AUTO && (algo == LSIM_ALGO_TREE) != tree) continue;
        for (int p = 0; p < 3; p++) {
            if (proto != LSIM_PROTO_AUTO && (int)proto - 1 != p) continue;
            double hat = nccl_time(t, kind, bytes, s, tree, p, 1);
            if (hat < best_hat) {
                best_hat = hat;
                best = nccl_time(t, kind, bytes, s, tree, p, 0);
                *ua = tree ? LSIM_ALGO_TREE : LSIM_ALGO_RING;
                *up = (lsim_coll_proto)(p + 1);
            }
        }
    }
    return best;
}

/* The cost of a collective and the algorithm that gives it; 0 ns for the
 * trivial cases (see cost.h). */
static double collective(const lsim_topology *t, int kind, int64_t bytes, const int32_t *ranks, int n,
                         lsim_coll_algo algo, lsim_coll_proto proto, lsim_coll_algo *used, lsim_coll_proto *uproto)
{
    *used = LSIM_ALGO_RING;
    *uproto = LSIM_PROTO_SIMPLE;
    if (!topo_ok(t) || n <= 1 || bytes <= 0) return 0;
    group_shape s;
    group_shape_of(t, ranks, n, &s);
    double b = (double)bytes;
    if (is_p2p(kind)) {
        int cross = s.nodes > 1;
        return (double)t->coll_base_ns + (double)(cross ? t->inter_lat_ns : t->intra_lat_ns) +
               b / (cross ? t->inter_bw : t->intra_bw) * 1e9;
    }
    if (algo == LSIM_ALGO_AUTO) algo = t->algo;
    if (t->nccl_tuning && s.nodes > 1)
        return nccl_collective(t, kind, b, &s, has_tree(kind) ? algo : LSIM_ALGO_AUTO,
                               proto == LSIM_PROTO_AUTO ? t->proto : proto, used, uproto);
    double ring = ring_ns(t, kind, b, &s);
    if (!has_tree(kind) || algo == LSIM_ALGO_RING) return ring;
    double tree = tree_ns(t, b, &s);
    if (algo == LSIM_ALGO_TREE || tree < ring) {
        *used = LSIM_ALGO_TREE;
        return tree;
    }
    return ring;
}

lsim_ns lsim_cost_collective(const lsim_topology *t, int kind, int64_t bytes, const int32_t *ranks, int n,
                             lsim_coll_algo algo)
{
    lsim_coll_algo used;
    lsim_coll_proto up;
    return to_ns(collective(t, kind, bytes, ranks, n, algo, LSIM_PROTO_AUTO, &used, &up));
}

lsim_ns lsim_cost_collective_nccl(const lsim_topology *t, int kind, int64_t bytes, const int32_t *ranks, int n,
                                  lsim_coll_algo algo, lsim_coll_proto proto, lsim_coll_algo *algo_used,
                                  lsim_coll_proto *proto_used)
{
    lsim_coll_algo used;
    lsim_coll_proto up;
    lsim_ns ns = to_ns(collective(t, kind, bytes, ranks, n, algo, proto, &used, &up));
    if (algo_used) *algo_used = used;
    if (proto_used) *proto_used = up;
    return ns;
}

lsim_coll_algo lsim_cost_collective_algo(const lsim_topology *t, int kind, int64_t bytes, const int32_t *ranks,
                                         int n, lsim_coll_algo algo)
{
    lsim_coll_algo used;
    lsim_coll_proto up;
    collective(t, kind, bytes, ranks, n, algo, LSIM_PROTO_AUTO, &used, &up);
    return used;
}

lsim_ns lsim_cost_p2p(const lsim_topology *t, int64_t bytes, int32_t src, int32_t dst)
{
    if (!topo_ok(t) || src == dst || bytes <= 0) return 0;
    int32_t pair[2] = {src, dst};
    lsim_coll_algo used;
    lsim_coll_proto up;
    return to_ns(collective(t, LSIM_COLL_SEND, bytes, pair, 2, LSIM_ALGO_RING, LSIM_PROTO_AUTO, &used, &up));
}
