/* Network calibration across node counts (cost.h lsim_net_*): fitted on
 * the published AWS p5 nccl-tests runs at 2 and 8 nodes
 * (tests/data/nccl, CC-BY 4.0, NOTICE there), the model's bus bandwidth at
 * the held-out 4 and 16 nodes is compared with the measured busbw column of
 * the same files, read here by the test itself; NCCL's choice (tree on 2
 * nodes beating the NICs, ring at scale approaching them) is checked
 * against formulas written out here. LSIM_SOURCE_DIR locates the files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "lumosim/cost.h"
#include "lumosim/trace.h"

#ifndef LSIM_SOURCE_DIR
#error "LSIM_SOURCE_DIR must be defined (tests/unit/CMakeLists.txt)"
#endif

#define DIR LSIM_SOURCE_DIR "/tests/data/nccl/"

/* The measured rows, read with sscanf (not the library's reader):
 * Nodes,GPUs,size(MB),iterations,blocking,out algbw,out busbw,... */
typedef struct row {
    int nodes, gpus;
    double mb, busbw;
} row;

static size_t read_rows(const char *path, row *r, size_t max)
{
    FILE *f = fopen(path, "r");
    char line[512];
    size_t n = 0;
    if (!f) return 0;
    while (n < max && fgets(line, sizeof line, f)) {
        double alg;
        char blocking[16];
        int iters;
        if (sscanf(line, "%d,%d,%lf,%d,%15[^,],%lf,%lf", &r[n].nodes, &r[n].gpus, &r[n].mb, &iters, blocking, &alg,
                   &r[n].busbw) == 7)
            n++;
    }
    fclose(f);
    return n;
}

/* Keep the points of the given node counts. */
static size_t keep(lsim_net_point *p, size_t n, int a, int b)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i].nodes == a || p[i].nodes == b) p[k++] = p[i];
    return k;
}

/* Held-out rows >= min_mb within tol of the measured busbw; prints all. */
static void held_out(const lsim_topology *t, int kind, const row *r, size_t nr, double min_mb, double tol,
                     double *worst)
{
    *worst = 0;
    for (size_t i = 0; i < nr; i++) {
        if (r[i].nodes != 4 && r[i].nodes != 16) continue;
        double bytes = r[i].mb * 1048576.0;
        lsim_coll_algo a;
        lsim_coll_proto q;
        lsim_ns ns = lsim_cost_collective_nccl(t, kind, (int64_t)bytes, NULL, r[i].gpus, LSIM_ALGO_AUTO,
                                               LSIM_PROTO_AUTO, &a, &q);
        double bus = bytes / (double)ns * lsim_net_busbw_factor(kind, r[i].gpus); /* GB/s: B/ns */
        double err = (bus - r[i].busbw) / r[i].busbw;
        printf("  %-9s %2d nodes %5.0f MB: measured %6.1f GB/s, model %6.1f (%s/%s), %+5.1f %%\n",
               lsim_coll_kind_name((lsim_coll_kind)kind), r[i].nodes, r[i].mb, r[i].busbw, bus, lsim_coll_algo_name(a),
               lsim_coll_proto_name(q), 100 * err);
        if (r[i].mb >= min_mb) {
            CHECK_MSG(fabs(err) <= tol, "%d nodes %.0f MB: model %.1f vs measured %.1f GB/s", r[i].nodes, r[i].mb, bus,
                      r[i].busbw);
            if (fabs(err) > *worst) *worst = fabs(err);
        }
    }
}

/* Bad topology files: one line naming the file and the key. */
static void bad_topologies(void)
{
    static const struct {
        const char *body, *key;
    } BAD[] = {
        {"\"inter_bw\": 0", "inter_bw"},
        {"\"inter_bw\": -5e9", "inter_bw"},
        {"\"oversubscription\": 0.5", "oversubscription"},
        {"\"ring_eff\": 1.5", "ring_eff"},
        {"\"nics_per_gpu\": 4", "nics_per_gpu"},
        {"\"proto\": \"fast\"", "proto"},
        {"\"nccl_tuning\": 1", "nccl_tuning"},
    };
    char path[] = "/tmp/lsim_netfit_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        FILE *f = fopen(path, "w");
        if (!f) break;
        fprintf(f, "{\"gpus_per_node\": 8, \"intra_bw\": 450e9, \"intra_lat_ns\": 600, \"inter_lat_ns\": 2700, %s%s}\n",
                BAD[i].body, strstr(BAD[i].body, "inter_bw") ? "" : ", \"inter_bw\": 50e9");
        fclose(f);
        lsim_topology t;
        lsim_err e = {0};
        int rc = lsim_topology_load(path, &t, &e);
        CHECK_MSG(rc == LSIM_EFORMAT && strstr(e.msg, path) && strstr(e.msg, BAD[i].key) && !strchr(e.msg, '\n'),
                  "%s: rc %d, \"%s\"", BAD[i].body, rc, e.msg);
    }
    remove(path);
}

int main(void)
{
    lsim_err err = {0};
    lsim_topology base, fit;
    CHECK(lsim_topology_load(LSIM_SOURCE_DIR "/data/topology/aws_p5_efa.json", &base, &err) == 0);
    /* the shipped file carries a fit to all four node counts: start from its
     * datasheet values only, so that the held-out rows stay held out */
    base.ring_eff = base.tree_eff = base.a2a_eff = 0;
    base.ring_step_ns = base.tree_hop_ns = base.a2a_peer_ns = 0;
    lsim_net_point *pts = NULL;
    size_t np = 0;
    CHECK_MSG(lsim_net_read_csv(DIR "nccl_p5_all_reduce.csv", &pts, &np, &err) == 0, "%s", err.msg);
    CHECK(np == 36);
    CHECK_MSG(lsim_net_read_csv(DIR "nccl_p5_alltoall.csv", &pts, &np, &err) == 0, "%s", err.msg);
    CHECK(np == 64);
    np = keep(pts, np, 2, 8);
    CHECK(np == 18 + 14);
    lsim_net_fit_report rep;
    CHECK_MSG(lsim_net_fit(&base, pts, np, &fit, &rep, &err) == 0, "%s", err.msg);
    printf("fit on 2 and 8 nodes: ring_step_ns %lld, tree_hop_ns %lld, ring_eff %.3f, tree_eff %.3f, a2a_peer_ns %lld, "
           "a2a_eff %.3f; all-reduce rms %.1f %% max %.1f %%, all-to-all rms %.1f %% max %.1f %%\n",
           (long long)fit.ring_step_ns, (long long)fit.tree_hop_ns, fit.ring_eff, fit.tree_eff,
           (long long)fit.a2a_peer_ns, fit.a2a_eff, 100 * rep.coll_rms, 100 * rep.coll_max, 100 * rep.a2a_rms,
           100 * rep.a2a_max);
    CHECK(fit.nccl_tuning == 1 && rep.coll_points == 18 && rep.a2a_points == 14);
    CHECK(lsim_topology_check(&fit, "fit", &err) == 0);

    /* 1. held out: 4 and 16 nodes, large messages, against the measured busbw */
    row r[64];
    double worst;
    size_t nr = read_rows(DIR "nccl_p5_all_reduce.csv", r, 64);
    CHECK(nr == 36);
    held_out(&fit, LSIM_COLL_ALLREDUCE, r, nr, 512, 0.10, &worst);
    printf("all_reduce held out (>= 512 MB): worst %.1f %%\n", 100 * worst);
    nr = read_rows(DIR "nccl_p5_alltoall.csv", r, 64);
    CHECK(nr == 28);
    held_out(&fit, LSIM_COLL_ALLTOALL, r, nr, 256, 0.10, &worst);
    printf("alltoall held out (>= 256 MB): worst %.1f %%\n", 100 * worst);

    /* 2. NCCL's choice with the fitted parameters, against formulas */
    double g = fit.gpus_per_node, nic = g * fit.inter_bw; /* a node's NIC line rate, B/s */
    {
        /* 2 nodes, 8 GiB: the tree, whose 2-node traffic is the buffer once
         * through each node's NICs, beats the ring and the NICs' rate */
        int n = 16;
        double S = 8192.0 * 1048576.0, bf = 2.0 * (n - 1) / n;
        lsim_coll_algo a;
        lsim_ns t_auto = lsim_cost_collective_nccl(&fit, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, n, LSIM_ALGO_AUTO,
                                                   LSIM_PROTO_AUTO, &a, NULL);
        lsim_ns t_ring = lsim_cost_collective_nccl(&fit, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, n, LSIM_ALGO_RING,
                                                   LSIM_PROTO_SIMPLE, NULL, NULL);
        lsim_ns t_tree = lsim_cost_collective_nccl(&fit, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, n, LSIM_ALGO_TREE,
                                                   LSIM_PROTO_SIMPLE, NULL, NULL);
        double want_tree = (double)fit.coll_base_ns + 2.0 * ((g - 1) + 1) * (double)fit.tree_hop_ns +
                           S / (nic * fit.tree_eff) * 1e9;
        double want_ring = (double)fit.coll_base_ns + 2.0 * (n - 1) * (double)fit.ring_step_ns +
                           bf * S / (nic * fit.ring_eff) * 1e9;
        CHECK(a == LSIM_ALGO_TREE);
        CHECK_MSG(fabs((double)t_tree - want_tree) <= 1, "tree %lld vs %.0f ns", (long long)t_tree, want_tree);
        CHECK_MSG(fabs((double)t_ring - want_ring) <= 1, "ring %lld vs %.0f ns", (long long)t_ring, want_ring);
        CHECK(t_auto < t_ring);
        CHECK_MSG(bf * S / (double)t_auto * 1e9 > nic, "2-node tree busbw %.3g B/s not above the NICs' %.3g",
                  bf * S / (double)t_auto * 1e9, nic);
        printf("2 nodes, 8 GiB: tree busbw %.1f GB/s, ring %.1f GB/s, NICs %.0f GB/s\n", bf * S / (double)t_auto,
               bf * S / (double)t_ring, nic / 1e9);
    }
    {
        /* many nodes, large messages: NCCL picks the ring, whose busbw
         * approaches the NICs' rate x ring_eff from below */
        int n = 128 * 8;
        double S = 64.0 * 1073741824.0, bf = 2.0 * (n - 1) / n;
        lsim_coll_algo a;
        lsim_coll_proto q;
        lsim_ns t = lsim_cost_collective_nccl(&fit, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, n, LSIM_ALGO_AUTO,
                                              LSIM_PROTO_AUTO, &a, &q);
        double want = (double)fit.coll_base_ns + 2.0 * (n - 1) * (double)fit.ring_step_ns +
                      bf * S / (nic * fit.ring_eff) * 1e9, bus = bf * S / (double)t * 1e9;
        CHECK(a == LSIM_ALGO_RING && q == LSIM_PROTO_SIMPLE);
        CHECK_MSG(fabs((double)t - want) <= 1, "ring %lld vs %.0f ns", (long long)t, want);
        CHECK(bus < nic * fit.ring_eff && bus > 0.85 * nic * fit.ring_eff);
        /* forcing a protocol is obeyed: LL at a quarter of Simple's bandwidth */
        lsim_ns ll = lsim_cost_collective_nccl(&fit, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, n, LSIM_ALGO_AUTO,
                                               LSIM_PROTO_LL, &a, &q);
        CHECK(q == LSIM_PROTO_LL && ll > 3 * t);
    }
    {
        /* the gate: without nccl_tuning, the alpha-beta model of before
         * (ring over gmin NICs, NCCL's LL latencies), and within one node
         * the NCCL model changes nothing */
        lsim_topology off = fit;
        off.nccl_tuning = 0;
        off.algo = LSIM_ALGO_RING;
        int n = 32;
        double S = 1073741824.0, m = 4;
        double want = (double)off.coll_base_ns + (2.0 * (n - 1) - 2 * (m - 1)) * (double)off.intra_lat_ns +
                      2 * (m - 1) * (double)off.inter_lat_ns + 2.0 * (n - 1) / n * S / (g * off.inter_bw) * 1e9;
        CHECK(fabs((double)lsim_cost_collective(&off, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, n, LSIM_ALGO_AUTO) - want) <= 1);
        off.algo = LSIM_ALGO_AUTO;
        CHECK(lsim_cost_collective(&off, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, 8, LSIM_ALGO_AUTO) ==
              lsim_cost_collective(&fit, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, 8, LSIM_ALGO_AUTO));
    }
    {
        /* a fat tree: a group over more nodes than a leaf holds crosses the
         * oversubscribed spine and is slower by the bandwidth term */
        lsim_topology ft = fit;
        ft.nodes_per_leaf = 4;
        ft.oversubscription = 2;
        int n = 64;
        double S = 8.0 * 1073741824.0;
        lsim_ns in_leaf = lsim_cost_collective_nccl(&ft, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, 32, LSIM_ALGO_RING,
                                                    LSIM_PROTO_SIMPLE, NULL, NULL);
        lsim_ns flat = lsim_cost_collective_nccl(&fit, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, n, LSIM_ALGO_RING,
                                                 LSIM_PROTO_SIMPLE, NULL, NULL);
        lsim_ns spine = lsim_cost_collective_nccl(&ft, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, n, LSIM_ALGO_RING,
                                                  LSIM_PROTO_SIMPLE, NULL, NULL);
        double bwterm = 2.0 * (n - 1) / n * S / (g * fit.inter_bw * fit.ring_eff) * 1e9;
        CHECK(in_leaf == lsim_cost_collective_nccl(&fit, LSIM_COLL_ALLREDUCE, (int64_t)S, NULL, 32, LSIM_ALGO_RING,
                                                   LSIM_PROTO_SIMPLE, NULL, NULL));
        CHECK_MSG(fabs((double)(spine - flat) - bwterm) <= 2, "spine %lld flat %lld", (long long)spine, (long long)flat);
    }
    bad_topologies();
    free(pts);
    return check_result("test_netfit");
}
