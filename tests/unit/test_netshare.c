/* Link sharing (netshare.h) on jobs built by hand: GPUs whose only work is
 * collectives released at time 0, each on its own stream, so that which
 * transfers overlap is known. Each collective's modelled time is W; the
 * expected times are worked out here from the links' capacities:
 *   - one collective alone on an idle fabric keeps W exactly (today's time);
 *   - two identical all-reduces on the same NICs at once take 2 W each
 *     (each NIC carries 2 flows of demand 1, capacity 1);
 *   - two on disjoint NICs take W each;
 *   - on a 2:1 oversubscribed fat tree (one node of 2 GPUs per leaf), two
 *     groups crossing the same leaf uplink take W x (2 x 1 channel) /
 *     (nodes_per_leaf x gpus_per_node / 2) each, one alone W;
 *   - a pipeline send crossing the spine beside a data-parallel
 *     reduce-scatter: both slowed by the shared fraction of the uplink;
 *   - a flow starting half-way through another on the same links: the
 *     first ends at 1.5 W, the second at 2 W (re-timed when it starts and
 *     when the first ends).
 * The links' busy time (work x demand / capacity, summed) is the same
 * whatever the sharing: checked against the flows' links.
 * The job is then run again with the shared transfers (as sim
 * --link-sharing does) and the span checked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "lumosim/engine.h"
#include "lumosim/job.h"
#include "lumosim/netshare.h"
#include "lumosim/report.h"
#include "lumosim/synth.h"

enum { W = 1000000, NG = 4 };

/* g_kinds: the kind of each group (NULL: all-reduces); a SEND group
 * "p2p:A->B" has member 0 send and member 1 receive. */
static const int *g_kinds;

/* GPU i of 4 with the collectives whose group lists it: group k of ng
 * named names[k], members mem[k][0..1] (GPU ids), of 1 MiB, duration W,
 * on stream k. */
static lsim_graph *gpu(int i, int ng, const char *const *names, const int (*mem)[2])
{
    lsim_gbuilder *b;
    lsim_err err;
    if (lsim_gb_new("gpu", i, NG, &b, &err)) return NULL;
    for (int k = 0; k < ng; k++) {
        if (mem[k][0] != i && mem[k][1] != i) continue;
        uint32_t S, v;
        lsim_gb_proc(b, 1, i, 7 + k, &S);
        lsim_gb_node(b, LSIM_N_KERNEL, LSIM_NF_COLL, S, names[k], W, &v);
        int kind = g_kinds ? g_kinds[k] : LSIM_COLL_ALLREDUCE;
        if (kind == LSIM_COLL_SEND && mem[k][1] == i) kind = LSIM_COLL_RECV;
        lsim_gb_coll(b, v, (lsim_coll_kind)kind, 1 << 20, 2, names[k], 0);
        lsim_gb_set_release(b, v, 0);
    }
    lsim_graph *g = NULL;
    if (lsim_gb_finish(b, &g, &err)) return NULL;
    return g;
}

/* Run the job, share on topology t, run again: the span (latest end). The
 * shared transfers go to tr[0..ninst) (instances in the job's order). */
/* g_maxshare: after share_span, the most flows on one link */
static size_t g_maxshare;
/* g_det: where share_span's sweep puts its rows (NULL: none) */
static lsim_netshare_detail *g_det;

static lsim_ns share_span(const lsim_topology *t, int ng, const char *const *names, const int (*mem)[2], lsim_ns *tr,
                          lsim_netshare_stats *st)
{
    lsim_graph *g[NG] = {0};
    lsim_engine *e[NG] = {0};
    lsim_job *j = NULL;
    lsim_netflows f = {0};
    lsim_err err;
    lsim_ns span = -1, *out = NULL, *alone = NULL;
    const lsim_ns *ends[NG];
    for (int i = 0; i < NG; i++)
        if (!(g[i] = gpu(i, ng, names, mem))) goto cleanup;
    if (lsim_job_match(g, NG, &j, &err) || lsim_engines_new((const lsim_graph *const *)g, NG, e, &err) ||
        lsim_job_run(j, e, NULL, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        goto cleanup;
    }
    for (int i = 0; i < NG; i++) ends[i] = lsim_engine_end(e[i]);
    alone = malloc(j->ninst * sizeof *alone);
    memcpy(alone, j->transfer, j->ninst * sizeof *alone);
    if (lsim_netshare_collect(j, ends, alone, t, &f, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        goto cleanup;
    }
    g_maxshare = 0;
    for (size_t q = 0; q < f.nl; q++) {
        size_t c = 0;
        for (size_t r = 0; r < f.nl; r++) c += f.link[r] == f.link[q];
        if (c > g_maxshare) g_maxshare = c;
    }
    out = malloc((f.n ? f.n : 1) * sizeof *out);
    if (lsim_netshare_sweep(&f, NG, t, out, st, g_det, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        goto cleanup;
    }
    lsim_netshare_apply(j, &f, out);
    for (size_t k = 0; k < j->ninst; k++) tr[k] = j->transfer[k];
    if (lsim_job_run(j, e, NULL, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        goto cleanup;
    }
    span = 0;
    for (int i = 0; i < NG; i++)
        for (size_t v = 0; v < g[i]->n; v++)
            if (lsim_engine_end(e[i])[v] > span) span = lsim_engine_end(e[i])[v];
cleanup:
    for (int i = NG - 1; i >= 0; i--) lsim_engine_free(e[i]);
    lsim_job_free(j);
    for (int i = 0; i < NG; i++) lsim_graph_free(g[i]);
    lsim_netflows_free(&f);
    free(out);
    free(alone);
    return span;
}

/* 2 GPUs per node: GPUs 0, 1 on node 0 (leaf 0), 2, 3 on node 1 (leaf 1) */
static lsim_topology topo(int leaf, double over)
{
    lsim_topology t;
    memset(&t, 0, sizeof t);
    t.gpus_per_node = 2;
    t.intra_bw = 100e9;
    t.inter_bw = 12.5e9;
    t.nodes_per_leaf = leaf;
    t.oversubscription = over;
    t.link_sharing = 1;
    return t;
}

static void same_nics(void)
{
    const char *names[] = {"a", "c"};
    const int mem[][2] = {{0, 2}, {0, 2}};
    lsim_topology t = topo(0, 0);
    lsim_ns tr[2];
    lsim_netshare_stats st;
    lsim_ns span = share_span(&t, 2, names, mem, tr, &st);
    /* 2 flows on each of GPU 0's and 2's NIC links, capacity 1 each */
    lsim_ns want = (lsim_ns)W * 2 / 1;
    CHECK_I64(tr[0], want);
    CHECK_I64(tr[1], want);
    CHECK_I64(span, want);
    CHECK_I64(st.flows, 2);
    CHECK_I64(st.slowed, 2);
    /* the NICs carry the flows' work whatever the sharing: 2 flows x W x 4
     * NIC links (transmit and receive of 2 GPUs) x demand 1 */
    CHECK_MSG(fabs(st.nic_busy_ns - 2.0 * W * 4) < 1e-6 * W, "NIC busy %g", st.nic_busy_ns);
    CHECK(st.uplink_busy_ns == 0);
}

static void disjoint_and_alone(void)
{
    const char *names[] = {"a", "b"};
    const int mem[][2] = {{0, 2}, {1, 3}};
    lsim_topology t = topo(0, 0);
    lsim_ns tr[2];
    lsim_netshare_stats st;
    CHECK_I64(share_span(&t, 2, names, mem, tr, &st), W);
    CHECK_I64(tr[0], W);
    CHECK_I64(tr[1], W);
    CHECK_I64(st.slowed, 0);
    /* one alone: exactly its time today */
    CHECK_I64(share_span(&t, 1, names, mem, tr, &st), W);
    CHECK_I64(tr[0], W);
    /* inside one node: no network flow at all */
    const int in[][2] = {{0, 1}};
    CHECK_I64(share_span(&t, 1, names, in, tr, &st), W);
    CHECK_I64(st.flows, 0);
}

static void oversubscribed(void)
{
    const char *names[] = {"a", "b"};
    const int mem[][2] = {{0, 2}, {1, 3}};
    int npl = 1, gpn = 2;
    double over = 2;
    lsim_topology t = topo(npl, over);
    lsim_ns tr[2];
    lsim_netshare_stats st;
    /* each ring has one GPU per node: 1 channel across the leaf boundary */
    double upcap = npl * gpn / over, demand = 2 * 1.0;
    double factor = demand / upcap > 1 ? demand / upcap : 1;
    lsim_ns want = (lsim_ns)(W * factor);
    CHECK_I64(share_span(&t, 2, names, mem, tr, &st), want);
    CHECK_I64(tr[0], want);
    CHECK_I64(tr[1], want);
    /* the uplinks: 2 flows x W x 2 leaves x (up + down, demand 1 each) / capacity */
    CHECK_MSG(fabs(st.uplink_busy_ns - 2.0 * W * 2 * 2 / upcap) < 1e-6 * W, "uplink busy %g", st.uplink_busy_ns);
    /* the busiest: the 4 leaf links (2 flows x W / capacity 1 each), leaf
     * 0's uplink first (lowest number), then NIC links (1 flow x W) */
    CHECK_I64(st.nhot, LSIM_NETSHARE_HOT);
    CHECK_I64(st.hot_link[0], 2 * NG);
    CHECK_MSG(fabs(st.hot_busy_ns[0] - 2.0 * W / upcap) < 1e-6 * W, "hottest %g", st.hot_busy_ns[0]);
    CHECK_MSG(fabs(st.hot_busy_ns[4] - 1.0 * W) < 1e-6 * W, "fifth %g", st.hot_busy_ns[4]);
    CHECK(st.hot_link[4] < 2 * NG);
    char name[64];
    lsim_netshare_link_name(st.hot_link[0], NG, st.paths, name, sizeof name);
    CHECK(!strcmp(name, "leaf 0 up"));
    /* one group alone fills the uplink exactly: no slowdown */
    CHECK_I64(share_span(&t, 1, names, mem, tr, &st), W);
    /* without oversubscription the same two groups do not slow each other */
    t = topo(npl, 1);
    CHECK_I64(share_span(&t, 2, names, mem, tr, &st), W);
}

/* ECMP: 1:1 leaves whose uplink is 2 paths of 1 NIC each; each group's
 * one channel per leaf and direction is hashed onto a path. Where the two
 * groups' channels land on one path they share it (2 W each), else W:
 * the expected time is W x the most flows on one link, read from the
 * flows' links; a flow's links are NIC links or paths of its leaves. */
static void ecmp(void)
{
    const char *names[] = {"a", "b"};
    const int mem[][2] = {{0, 2}, {1, 3}};
    lsim_topology t = topo(1, 1);
    t.ecmp_paths = 2;
    lsim_ns tr[2];
    lsim_netshare_stats st;
    lsim_ns span = share_span(&t, 2, names, mem, tr, &st);
    CHECK(g_maxshare == 1 || g_maxshare == 2);
    CHECK_I64(span, (lsim_ns)W * (lsim_ns)g_maxshare);
    CHECK_I64(tr[0], (lsim_ns)W * (lsim_ns)g_maxshare);
    CHECK_I64(st.paths, 2);
    /* one path: the aggregated uplink of 2 NICs holds both groups */
    t.ecmp_paths = 1;
    CHECK_I64(share_span(&t, 2, names, mem, tr, &st), W);
    /* every path's busy time names a path of leaf 0 or 1 */
    t.ecmp_paths = 2;
    share_span(&t, 2, names, mem, tr, &st);
    for (int i = 0; i < st.nhot; i++) CHECK(st.hot_link[i] < 2 * (NG + 2 * 2));
}

/* A pipeline send crossing the spine beside a data-parallel
 * reduce-scatter (2:1 uplinks of 1 NIC): the send puts 1 NIC on leaf 0's
 * uplink and leaf 1's downlink, the reduce-scatter (one GPU per node, 1
 * channel) 1 on each leaf's uplink and downlink; both slow by the shared
 * fraction, capacity / demand = 1 / 2, to 2 W. NICs are not shared (the
 * send is GPU 0 -> 2, the reduce-scatter GPUs 1 and 3). */
static void pp_beside_dp(void)
{
    const char *names[] = {"p2p:0->2", "dp"};
    const int mem[][2] = {{0, 2}, {1, 3}};
    const int kinds[] = {LSIM_COLL_SEND, LSIM_COLL_REDUCESCATTER};
    lsim_topology t = topo(1, 2);
    double upcap = 1.0 * 2 / 2, demand = 1 + 1;
    lsim_ns tr[2];
    lsim_netshare_stats st;
    g_kinds = kinds;
    lsim_ns span = share_span(&t, 2, names, mem, tr, &st);
    g_kinds = NULL;
    lsim_ns want = (lsim_ns)(W * demand / upcap);
    CHECK_I64(span, want);
    CHECK_I64(tr[0], want);
    CHECK_I64(tr[1], want);
    CHECK_I64(st.flows, 2);
    /* each kind's own figures: the send and the reduce-scatter, W alone and
     * 2 W shared each, the kinds read from the instances' graphs */
    for (int k = 0; k < 2; k++) { /* a send pair counts as sendrecv */
        const lsim_netshare_kind *x = &st.by_kind[k ? kinds[k] : LSIM_COLL_SENDRECV];
        CHECK(x->flows == 1 && x->slowed == 1 && x->alone_ns == (double)W && x->shared_ns == (double)want);
    }
    CHECK(st.by_kind[LSIM_COLL_ALLREDUCE].flows == 0 && st.nlate == 2);
}

/* Flows by hand: the second starts at W/2 on the first's links. */
static void staggered(void)
{
    lsim_topology t = topo(0, 0);
    lsim_netflows f = {0};
    lsim_err err;
    uint32_t l[2] = {0, 5};
    double d[2] = {1, 1};
    lsim_ns out[3];
    lsim_netshare_stats st;
    CHECK(lsim_netflows_add(&f, 7, 7, LSIM_COLL_ALLREDUCE, 2, 1 << 20, 1000, W, l, d, 2, &err) == 0);
    CHECK(lsim_netflows_add(&f, 3, 3, LSIM_COLL_ALLREDUCE, 2, 1 << 20, 1000 + W / 2, W, l, d, 2, &err) == 0);
    CHECK(lsim_netshare_sweep(&f, NG, &t, out, &st, NULL, &err) == 0);
    /* first: W/2 alone, then W/2 of work at 1/2 -> W/2 + W */
    CHECK_I64(out[0], W / 2 + W);
    /* second: from W/2 to 1.5 W at 1/2 (W/2 done), then W/2 alone -> 1.5 W in all */
    CHECK_I64(out[1], W + W / 2);
    /* per kind: both all-reduces, 2 W alone, 3 W shared; the most delayed:
     * both by W/2, the lower key first */
    const lsim_netshare_kind *ar = &st.by_kind[LSIM_COLL_ALLREDUCE];
    CHECK(ar->flows == 2 && ar->slowed == 2 && ar->alone_ns == 2.0 * W && ar->shared_ns == 3.0 * W);
    CHECK(st.by_kind[LSIM_COLL_SEND].flows == 0);
    CHECK(st.nlate == 2 && st.late[0].key == 3 && st.late[1].key == 7);
    CHECK_I64(st.late[0].shared - st.late[0].alone, W / 2);
    CHECK_I64(st.late[0].start, 1000 + W / 2);
    /* a link outside the topology is refused */
    uint32_t bad = 2 * NG + 7;
    CHECK(lsim_netflows_add(&f, 9, 9, LSIM_COLL_ALLREDUCE, 2, 1 << 20, 0, W, &bad, d, 1, &err) == 0);
    CHECK(lsim_netshare_sweep(&f, NG, &t, out, NULL, NULL, &err) == LSIM_EARG);
    lsim_netflows_free(&f);
}

/* The figures as the archive keeps them (report.h): pp_beside_dp's sweep
 * to text and back gives the same figures; each field missing or wrong is
 * refused by name, nothing kept. */
static void network_text(void)
{
    const char *names[] = {"p2p:0->2", "dp"};
    const int mem[][2] = {{0, 2}, {1, 3}};
    const int kinds[] = {LSIM_COLL_SEND, LSIM_COLL_REDUCESCATTER};
    lsim_topology t = topo(1, 2);
    lsim_ns tr[2];
    lsim_netshare_stats st, back;
    lsim_err err = {0};
    g_kinds = kinds;
    share_span(&t, 2, names, mem, tr, &st);
    g_kinds = NULL;
    st.passes = 2, st.converged = 1;
    char *txt = lsim_report_network_text(&st);
    CHECK(txt != NULL);
    CHECK_MSG(lsim_report_network_parse(txt, &back, &err) == 0, "%s", err.msg);
    CHECK(back.flows == st.flows && back.slowed == st.slowed && back.nhot == st.nhot && st.nhot > 0);
    CHECK(back.alone_ns == st.alone_ns && back.shared_ns == st.shared_ns && back.span_ns == st.span_ns);
    CHECK(back.ngpus == st.ngpus && back.paths == st.paths && back.passes == 2 && back.converged == 1);
    CHECK(back.links_used == st.links_used && st.links_used > 0 && back.util_p50 == st.util_p50 &&
          back.util_p90 == st.util_p90 && back.slowdown_p50 == st.slowdown_p50 && back.slowdown_p95 == st.slowdown_p95);
    CHECK(!memcmp(back.util_hist, st.util_hist, sizeof st.util_hist) &&
          !memcmp(back.slow_hist, st.slow_hist, sizeof st.slow_hist));
    for (int i = 0; i < st.nhot && i < back.nhot; i++)
        CHECK(back.hot_link[i] == st.hot_link[i] && back.hot_busy_ns[i] == st.hot_busy_ns[i]);
    char *again = lsim_report_network_text(&back);
    CHECK(again && !strcmp(again, txt));
    free(again);
    free(txt);
    static const struct { const char *text, *field; } BAD[] = {
        {"[1]", "not a JSON object"},
        {"{\"passes\":1}", "flows"},
        {"{\"passes\":1,\"flows\":-2}", "flows"},
        /* the quantiles: both or neither, in order */
        {"{\"passes\":1,\"flows\":1,\"slowed\":0,\"max_slowdown\":1,\"alone_ns\":1,\"shared_ns\":1,\"flow_events\":2,"
         "\"flow_updates\":2,\"span_ns\":1,\"gpus\":2,\"ecmp_paths\":1,\"busy_ns\":{\"nic\":1,\"leaf_uplink\":0},"
         "\"converged\":true,\"hottest_links\":[],\"link_utilization\":{\"p50\":1,\"p90\":1}}",
         "links_used"},
        {"{\"passes\":1,\"flows\":1,\"slowed\":0,\"max_slowdown\":1,\"alone_ns\":1,\"shared_ns\":1,\"flow_events\":2,"
         "\"flow_updates\":2,\"span_ns\":1,\"gpus\":2,\"ecmp_paths\":1,\"busy_ns\":{\"nic\":1,\"leaf_uplink\":0},"
         "\"converged\":true,\"hottest_links\":[],\"links_used\":2,\"link_utilization\":{\"p50\":1,\"p90\":0.5},"
         "\"flow_slowdown\":{\"p50\":1,\"p95\":1}}",
         "link_utilization"},
        /* a histogram whose counts do not add up to the links */
        {"{\"passes\":1,\"flows\":1,\"slowed\":0,\"max_slowdown\":1,\"alone_ns\":1,\"shared_ns\":1,\"flow_events\":2,"
         "\"flow_updates\":2,\"span_ns\":1,\"gpus\":2,\"ecmp_paths\":1,\"busy_ns\":{\"nic\":1,\"leaf_uplink\":0},"
         "\"converged\":true,\"hottest_links\":[],\"links_used\":2,\"link_utilization\":{\"p50\":1,\"p90\":1,"
         "\"histogram\":[0,0,0,0,0,0,0,0,0,3]},\"flow_slowdown\":{\"p50\":1,\"p95\":1}}",
         "link_utilization"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        memset(&back, 1, sizeof back);
        CHECK(lsim_report_network_parse(BAD[i].text, &back, &err) == LSIM_EFORMAT);
        CHECK_MSG(strstr(err.msg, BAD[i].field) != NULL, "%s: %s", BAD[i].text, err.msg);
        CHECK(back.flows == 0 && back.nhot == 0);
    }
}

/* Every flow and link of oversubscribed()'s sweep, row by row (the
 * archive's net_flows / net_links): both groups start at 0 and take 2 W
 * (two flows on each 1-NIC uplink); each NIC link carries one flow for W
 * of the 2 W span (utilization 1/2), each of the 4 leaf links both, full
 * for 2 W (utilization 1). Expected values from the capacities, as above. */
static void every_flow_and_link(void)
{
    const char *names[] = {"a", "b"};
    const int mem[][2] = {{0, 2}, {1, 3}};
    lsim_topology t = topo(1, 2);
    lsim_ns tr[2];
    lsim_netshare_stats st;
    lsim_netshare_detail det = {0};
    g_det = &det;
    share_span(&t, 2, names, mem, tr, &st);
    g_det = NULL;
    CHECK_I64(det.nflows, 2);
    CHECK_I64(det.span_ns, 2 * W);
    for (size_t i = 0; i < det.nflows; i++) {
        const lsim_netshare_flow_row *x = &det.flows[i];
        CHECK_I64(x->gpu, i); /* (start, key) order: GPU 0's group first */
        CHECK(x->kind == LSIM_COLL_ALLREDUCE && x->parts == 2 && x->bytes == 1 << 20 && x->start == 0);
        CHECK_I64(x->alone, W);
        CHECK_I64(x->shared, 2 * W);
        CHECK_I64(x->links, 4 + 4); /* 2 NICs both ways, 2 leaves up and down */
    }
    CHECK_I64(det.nlinks, 8 + 4);
    CHECK_I64(st.links_used, det.nlinks);
    double busy = 0;
    for (size_t i = 0; i < det.nlinks; i++) {
        const lsim_netshare_link_row *l = &det.links[i];
        int leaf = l->link >= 2 * NG;
        CHECK(i == 0 || l->link > det.links[i - 1].link);
        CHECK_I64(l->flows, leaf ? 2 : 1);
        CHECK_MSG(fabs(l->busy_ns - (leaf ? 2.0 : 1.0) * W) < 1e-6 * W, "link %llu busy %g",
                  (unsigned long long)l->link, l->busy_ns);
        busy += l->busy_ns;
    }
    /* the rows add up to the summary's busy time per class */
    CHECK_MSG(fabs(busy - st.nic_busy_ns - st.uplink_busy_ns) < 1e-6 * W, "rows %g, classes %g", busy,
              st.nic_busy_ns + st.uplink_busy_ns);
    /* 8 links at 1/2, 4 at 1: the median (6th of 12) 1/2, the 90th (11th) 1 */
    CHECK(fabs(st.util_p50 - 0.5) < 1e-12 && fabs(st.util_p90 - 1.0) < 1e-12);
    CHECK(fabs(st.slowdown_p50 - 2.0) < 1e-12 && fabs(st.slowdown_p95 - 2.0) < 1e-12);
    /* the histograms: the 8 NIC links in the 50-60 % bin, the 4 leaf links
     * (utilization 1) in the last; both flows at x2, the bin from 2 to 3 */
    for (int k = 0; k < LSIM_NETSHARE_UBINS; k++) CHECK_I64(st.util_hist[k], k == 5 ? 8 : k == 9 ? 4 : 0);
    for (int k = 0; k < LSIM_NETSHARE_SBINS; k++)
        CHECK_I64(st.slow_hist[k], lsim_netshare_slow_edge(k) == 2.0 ? 2 : 0);
    lsim_netshare_detail_free(&det);
    CHECK(det.flows == NULL && det.nflows == 0);
}

int main(void)
{
    every_flow_and_link();
    network_text();
    same_nics();
    disjoint_and_alone();
    oversubscribed();
    staggered();
    ecmp();
    pp_beside_dp();
    return check_result("test_netshare");
}
