/* The execution-trace reader (src/read/et.c) on the hand-written fixtures of
 * tests/data/et/ (see tests/data/et/README.md) and in-memory documents, and
 * its pairing with a Kineto trace (lsim_et_apply). Every expected value is
 * written here by hand from the fixture text, never printed by the code.
 * Usage: test_et DATA_DIR (tests/data). */
#include <stdlib.h>

#include "lumosim/et.h"
#include "lumosim/trace.h"
#include "check.h"

static const char *g_dir;

static char *path_of(const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/et/%s", g_dir, name);
    return buf;
}

static lsim_et *read_ok(const char *name, int line)
{
    lsim_et *et = NULL;
    lsim_err err = {0};
    int rc = lsim_et_read(path_of(name), &et, &err);
    if (rc || !et) {
        fprintf(stderr, "%s:%d: reading %s failed: rc=%d %s\n", __FILE__, line, name, rc, err.msg);
        check_failures++;
        lsim_et_free(et);
        return NULL;
    }
    return et;
}

static void read_bad(const char *name, int want, const char *says, int line)
{
    lsim_et *et = (lsim_et *)&et;
    lsim_err err = {0};
    const char *p = path_of(name);
    int rc = lsim_et_read(p, &et, &err);
    if (rc != want || et != NULL || !strstr(err.msg, p) || !strstr(err.msg, says) || strchr(err.msg, '\n')) {
        fprintf(stderr, "%s:%d: %s: rc=%d (want %d), out %s, msg \"%s\" (want the path and \"%s\", one line)\n",
                __FILE__, line, name, rc, want, et ? "set" : "NULL", err.msg, says);
        check_failures++;
        if (rc == 0) lsim_et_free(et);
    }
}

static void mem_bad(const char *doc, int want, const char *says, int line)
{
    lsim_et *et = (lsim_et *)&et;
    lsim_err err = {0};
    int rc = lsim_et_read_mem("memdoc", doc, strlen(doc), &et, &err);
    if (rc != want || et != NULL || !strstr(err.msg, "memdoc") || !strstr(err.msg, says)) {
        fprintf(stderr, "%s:%d: rc=%d (want %d), msg \"%s\" (want \"%s\")\n", __FILE__, line, rc, want, err.msg, says);
        check_failures++;
        if (rc == 0) lsim_et_free(et);
    }
}

/* mini.et.json: the PyTorch >= 2.4 layout (inputs {values...}, attrs). */
static void test_new_layout(void)
{
    lsim_et *et = read_ok("mini.et.json", __LINE__);
    if (!et) return;
    CHECK_STR(et->schema, "1.1.1-chakra.0.0.4");
    CHECK_I64(et->nnodes, 8);
    CHECK_I64(et->rank, 0); /* group "0" = ranks 0,1 from start 0 stride 1; rank 0 in it */
    CHECK_I64(et->world_size, -1);
    CHECK_I64(et->nops, 4); /* the wait is not an op */
    if (et->nops == 4) {
        const lsim_et_op *o = et->ops;
        CHECK_I64(o[0].node_id, 20); /* issue order = id order, not file order */
        CHECK_I64(o[1].node_id, 30);
        CHECK_I64(o[2].node_id, 40);
        CHECK_I64(o[3].node_id, 50);
        CHECK_STR(o[0].name, "allreduce");
        CHECK_I64(o[0].kind, LSIM_COLL_ALLREDUCE);
        CHECK_I64(o[1].kind, LSIM_COLL_OTHER); /* barrier */
        CHECK_I64(o[2].kind, LSIM_COLL_ALLGATHER);
        CHECK_I64(o[3].kind, LSIM_COLL_BROADCAST);
        CHECK_I64(o[0].launches_kernel, 1);
        CHECK_I64(o[1].launches_kernel, 0);
        CHECK_I64(o[2].launches_kernel, 1);
        CHECK_I64(o[3].launches_kernel, 0); /* a group of one rank */
        CHECK_I64(o[0].seq, 1);
        CHECK_I64(o[2].seq, 2);
        CHECK_I64(o[0].in_nelems, 1024);
        CHECK_I64(o[0].in_bytes, 4096);
        CHECK_I64(o[0].dtype_bytes, 4);
        CHECK_I64(o[2].in_nelems, 256);
        CHECK_I64(o[2].out_nelems, 512);
        CHECK_I64(o[2].in_bytes, 512);
        CHECK_I64(o[2].out_bytes, 1024);
        CHECK_I64(o[2].dtype_bytes, 2);
        CHECK_I64(o[3].dtype_bytes, 8);
        CHECK_I64(o[0].group_rank, 0);
        CHECK_I64(o[0].peer, -1);
        CHECK(o[0].pg >= 0 && o[0].pg == o[2].pg && o[0].pg == o[1].pg);
        CHECK(o[3].pg >= 0 && o[3].pg != o[0].pg);
        if (o[0].pg >= 0 && o[3].pg >= 0) {
            const lsim_et_pg *g = &et->pgs[o[0].pg], *h = &et->pgs[o[3].pg];
            CHECK_STR(g->name, "0");
            CHECK_STR(g->desc, "default_pg");
            CHECK_I64(g->named, 1);
            CHECK_I64(g->size, 2);
            CHECK_I64(g->nranks, 2);
            if (g->nranks == 2) {
                CHECK_I64(g->ranks[0], 0);
                CHECK_I64(g->ranks[1], 1);
            }
            CHECK_I64(g->nops, 3);
            CHECK_STR(h->name, "5");
            CHECK_STR(h->desc, "local");
            CHECK_I64(h->size, 1);
            CHECK_I64(h->nops, 1);
        }
    }
    CHECK_I64(et->npg, 2);
    lsim_et_free(et);
}

/* old.et.json.gz: the PyTorch 2.1/2.2 layout of the Megatron set, gzip. */
static void test_old_layout(void)
{
    lsim_et *et = read_ok("old.et.json.gz", __LINE__);
    if (!et) return;
    CHECK_STR(et->schema, "1.0.1");
    CHECK_I64(et->nnodes, 10);
    CHECK_I64(et->rank, -1);
    CHECK_I64(et->nops, 5);
    CHECK_I64(et->npg, 2);
    if (et->nops == 5) {
        const lsim_et_op *o = et->ops;
        CHECK_I64(o[0].node_id, 12);
        CHECK_I64(o[1].node_id, 22);
        CHECK_I64(o[2].node_id, 24);
        CHECK_I64(o[3].node_id, 32);
        CHECK_I64(o[4].node_id, 42);
        CHECK_I64(o[0].seq, 7);
        CHECK_I64(o[0].group_rank, 1);
        CHECK_I64(o[0].in_nelems, 2048);
        CHECK_I64(o[0].in_bytes, 4096);
        CHECK_I64(o[0].out_bytes, 4096);
        CHECK_I64(o[0].dtype_bytes, 2);
        CHECK_I64(o[3].in_bytes, 40);
        CHECK_I64(o[3].dtype_bytes, 4);
        CHECK_I64(o[2].launches_kernel, 0);
        CHECK_I64(o[0].launches_kernel + o[1].launches_kernel + o[3].launches_kernel + o[4].launches_kernel, 4);
        CHECK_I64(o[4].kind, LSIM_COLL_SEND);
        CHECK_I64(o[4].peer, 3);
        CHECK_I64(o[4].peer_global, -1);
        CHECK_I64(o[4].group_rank, -1);
        CHECK(o[0].pg >= 0 && o[0].pg == o[4].pg && o[2].pg >= 0 && o[2].pg != o[0].pg);
        if (o[0].pg >= 0 && o[2].pg >= 0) {
            CHECK_STR(et->pgs[o[0].pg].name, "ptr:111");
            CHECK_I64(et->pgs[o[0].pg].named, 0);
            CHECK_I64(et->pgs[o[0].pg].size, 4);
            CHECK_I64(et->pgs[o[0].pg].nranks, 0);
            CHECK_I64(et->pgs[o[0].pg].nops, 4);
            CHECK_STR(et->pgs[o[2].pg].name, "ptr:222");
            CHECK_I64(et->pgs[o[2].pg].size, 1);
        }
    }
    lsim_et_free(et);

    /* the same bytes from memory: gzip inflated there too */
    FILE *f = fopen(path_of("old.et.json.gz"), "rb");
    CHECK(f != NULL);
    if (!f) return;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    lsim_err err = {0};
    et = NULL;
    CHECK_I64(lsim_et_read_mem("old-mem", buf, n, &et, &err), 0);
    if (et) CHECK_I64(et->nops, 5);
    lsim_et_free(et);
    /* cut short in memory: truncated */
    et = (lsim_et *)&et;
    CHECK_I64(lsim_et_read_mem("old-cut", buf, n / 2, &et, &err), LSIM_EFORMAT);
    CHECK(et == NULL);
    CHECK(strstr(err.msg, "old-cut: truncated gzip") != NULL);
}

static void test_bad(void)
{
    read_bad("bad_not_json.et.json", LSIM_EFORMAT, "not JSON", __LINE__);
    read_bad("bad_no_nodes.et.json", LSIM_ETRACE, "no \"nodes\" array", __LINE__);
    read_bad("bad_empty_nodes.et.json", LSIM_ETRACE, "\"nodes\" is empty", __LINE__);
    read_bad("bad_node.et.json", LSIM_ETRACE, "node #1 is not", __LINE__);
    read_bad("bad_dup_id.et.json", LSIM_ETRACE, "node id 5 appears twice", __LINE__);
    read_bad("bad_group_size.et.json", LSIM_ETRACE, "size 8 here, 4 before", __LINE__);
    read_bad("bad_rank.et.json", LSIM_ETRACE, "rank 4 outside its process group of size 4", __LINE__);
    read_bad("bad_no_coll_name.et.json", LSIM_ETRACE, "without a collective name", __LINE__);
    read_bad("bad_nelems.et.json", LSIM_ETRACE, "in_msg_nelems is not a size", __LINE__);
    read_bad("bad_truncated.et.json.gz", LSIM_EFORMAT, "truncated gzip", __LINE__);
    read_bad("does_not_exist.et.json", LSIM_EIO, "cannot open", __LINE__);
    mem_bad("", LSIM_EFORMAT, "empty", __LINE__);
    mem_bad("[1, 2]", LSIM_ETRACE, "no \"nodes\" array", __LINE__);
    mem_bad("{\"nodes\": [{\"name\": \"a\", \"id\": 1}]} x", LSIM_EFORMAT, "trailing data", __LINE__);
    mem_bad("{\"nodes\": [{\"name\": \"a\", \"id\": 1.5}]}", LSIM_ETRACE, "node #0", __LINE__);
    mem_bad("{\"distributedInfo\": {\"rank\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"pg_size\": 2, \"ranks\": [0, 1, 2]}]},"
            " \"nodes\": [{\"name\": \"a\", \"id\": 1}]}",
            LSIM_ETRACE, "has 3 ranks but size 2", __LINE__);
    /* distributedInfo says rank 1, the group's ranks say this is rank 0 */
    mem_bad("{\"distributedInfo\": {\"rank\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"pg_size\": 2, \"ranks\": [0, 1]}]},"
            " \"nodes\": [{\"name\": \"record_param_comms\", \"id\": 3, \"inputs\": [5, [\"0\", \"x\"], 0, \"allreduce\", 2]}]}",
            LSIM_ETRACE, "node id 3 is rank 0, distributedInfo says rank 1", __LINE__);
}

static void test_sibling(void)
{
    char *s = NULL;
    char want[4096];
    snprintf(want, sizeof want, "%s", path_of("mini.et.json"));
    CHECK_I64(lsim_et_sibling(path_of("mini.json"), &s), 0);
    CHECK_STR(s, want);
    free(s);
    snprintf(want, sizeof want, "%s", path_of("old.et.json.gz"));
    CHECK_I64(lsim_et_sibling(path_of("old.json.gz"), &s), 0);
    CHECK_STR(s, want);
    free(s);
    CHECK_I64(lsim_et_sibling(path_of("mini.et.json"), &s), 0);
    CHECK(s == NULL);
    CHECK_I64(lsim_et_sibling(path_of("nothing.json"), &s), 0);
    CHECK(s == NULL);
    CHECK_I64(lsim_et_sibling("no-suffix", &s), 0);
    CHECK(s == NULL);
}

/* the collective kernels of a trace, in file order (mini.json has two) */
static int kernels(const lsim_trace *t, lsim_coll_info **out, int max)
{
    int n = 0;
    for (size_t i = 0; i < t->nev && n < max; i++)
        if (t->ev[i].kind == LSIM_EV_KERNEL && t->ev[i].coll >= 0 && t->colls[t->ev[i].coll].kind != LSIM_COLL_NONE)
            out[n++] = &t->colls[t->ev[i].coll];
    return n;
}

static const char *str(const lsim_trace *t, uint32_t id)
{
    return id == UINT32_MAX ? "(unknown)" : lsim_strtab_get(t->strings, id);
}

static void test_apply(void)
{
    lsim_trace *t = NULL;
    lsim_et *et = NULL;
    lsim_err err = {0};
    lsim_et_apply_stats st;
    char tp[4096];
    snprintf(tp, sizeof tp, "%s", path_of("mini.json"));
    CHECK_I64(lsim_trace_read(tp, &t, &err), 0);
    et = read_ok("mini.et.json", __LINE__);
    if (!t || !et) goto cleanup;
    lsim_coll_info *k[4];
    CHECK_I64(kernels(t, k, 4), 2);
    /* the kernels say nothing of their group before */
    CHECK(k[0]->pg_name == UINT32_MAX && k[0]->group_size < 0 && k[1]->dtype_bytes < 0);
    CHECK_I64(lsim_et_apply(et, t, &st, &err), 0);
    CHECK_I64(st.kernels, 2);
    CHECK_I64(st.matched, 2);
    CHECK_I64(st.group_filled, 2);
    CHECK_I64(st.size_filled, 2);
    CHECK_STR(str(t, k[0]->pg_name), "0");
    CHECK_STR(str(t, k[0]->pg_ranks), "[0, 1]");
    CHECK_I64(k[0]->group_size, 2);
    CHECK_I64(k[0]->kind, LSIM_COLL_ALLREDUCE);
    CHECK_I64(k[0]->dtype_bytes, 4);
    CHECK_I64(k[0]->in_nelems, 1024);
    CHECK_I64(k[0]->bytes, 4096);
    CHECK_I64(k[1]->kind, LSIM_COLL_ALLGATHER);
    CHECK_STR(str(t, k[1]->pg_name), "0");
    CHECK_I64(k[1]->dtype_bytes, 2);
    CHECK_I64(k[1]->in_nelems, 256);
    CHECK_I64(k[1]->out_nelems, 512);
    CHECK_I64(k[1]->bytes, 512);
    lsim_trace_free(t);
    lsim_et_free(et);
    t = NULL;
    et = NULL;

    /* a kind that cannot be the same call: an error naming both files and
     * the position; the trace is left as it was */
    CHECK_I64(lsim_trace_read(tp, &t, &err), 0);
    et = read_ok("bad_kind.et.json", __LINE__);
    if (!t || !et) goto cleanup;
    CHECK_I64(lsim_et_apply(et, t, &st, &err), LSIM_ETRACE);
    CHECK(strstr(err.msg, tp) && strstr(err.msg, "bad_kind.et.json") && strstr(err.msg, "collective #0") &&
          strstr(err.msg, "different kinds") && strstr(err.msg, "reduce_scatter"));
    CHECK_I64(kernels(t, k, 4), 2);
    CHECK(k[0]->pg_name == UINT32_MAX && k[0]->group_size < 0 && k[0]->bytes < 0);
    lsim_et_free(et);
    et = read_ok("bad_count.et.json", __LINE__);
    if (!et) goto cleanup;
    CHECK_I64(lsim_et_apply(et, t, &st, &err), LSIM_ETRACE);
    CHECK(strstr(err.msg, "bad_count.et.json") && strstr(err.msg, "2 collective kernels in the trace, 1 communication calls") &&
          strstr(err.msg, "1 communication calls"));
    lsim_et_free(et);
    et = NULL;

    /* the old layout: groups known by address only, so no name is given to
     * the kernels; a group as large as the world is every rank */
    static const char OLD[] =
        "{\"schema\": \"1.0.1\", \"nodes\": ["
        "{\"name\": \"record_param_comms\", \"id\": 9, \"inputs\": [[[1, 2, 0, 16, 4, \"cuda:0\"]], 1, 777, 0, \"allreduce\", [], [], 2]},"
        "{\"name\": \"record_param_comms\", \"id\": 12, \"inputs\": [[[3, 4, 0, 6, 2, \"cuda:0\"]], 2, 777, 0, \"_allgather_base\", [], [], 2],"
        " \"outputs\": [[[5, 6, 0, 12, 2, \"cuda:0\"]]]}]}";
    CHECK_I64(lsim_et_read_mem("old-mem.et.json", OLD, strlen(OLD), &et, &err), 0);
    if (!et) goto cleanup;
    CHECK_I64(lsim_et_apply(et, t, &st, &err), 0);
    CHECK_I64(st.matched, 2);
    CHECK_I64(st.group_filled, 2);
    CHECK(k[0]->pg_name == UINT32_MAX);
    CHECK_STR(str(t, k[0]->pg_ranks), "[0, 1]");
    CHECK_I64(k[0]->group_size, 2);
    CHECK_I64(k[0]->bytes, 64);
    CHECK_I64(k[1]->bytes, 12);
    CHECK_I64(k[1]->out_nelems, 12);
    lsim_et_free(et);
    et = NULL;

    /* an execution trace of another rank */
    static const char OTHER[] = "{\"distributedInfo\": {\"rank\": 1, \"world_size\": 2}, \"nodes\": [{\"name\": \"a\", \"id\": 1}]}";
    CHECK_I64(lsim_et_read_mem("rank1.et.json", OTHER, strlen(OTHER), &et, &err), 0);
    if (!et) goto cleanup;
    CHECK_I64(lsim_et_apply(et, t, &st, &err), LSIM_ETRACE);
    CHECK(strstr(err.msg, "the trace is rank 0, the execution trace rank 1") != NULL);
cleanup:
    lsim_trace_free(t);
    lsim_et_free(et);
}

/* A SendRecv kernel is the all-to-all when the call it pairs with is one
 * (NCCL runs an all-to-all as grouped sends and receives: one SendRecv
 * kernel per rank), so that the job matches it across its group; paired
 * with a send it stays a point-to-point kernel. */
static void test_alltoall(void)
{
    static const char TR[] =
        "{\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 4}, \"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 1, \"tid\": 10, \"ts\": 100, \"dur\": 20, \"args\": {}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 10, \"ts\": 102, \"dur\": 6, \"args\": {\"correlation\": 10}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)\", \"pid\": 0, \"tid\": 20, \"ts\": 110, \"dur\": 30, \"args\": {\"device\": 0, \"stream\": 20, \"correlation\": 10}},"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 1, \"tid\": 10, \"ts\": 200, \"dur\": 20, \"args\": {}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 10, \"ts\": 202, \"dur\": 6, \"args\": {\"correlation\": 11}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)\", \"pid\": 0, \"tid\": 20, \"ts\": 210, \"dur\": 30, \"args\": {\"device\": 0, \"stream\": 20, \"correlation\": 11}}"
        "]}";
    static const char ET[] =
        "{\"schema\": \"1.0.1\", \"nodes\": ["
        "{\"name\": \"record_param_comms\", \"id\": 9, \"inputs\": [[[1, 2, 0, 16, 4, \"cuda:0\"]], 1, 777, 0, \"all_to_all\", [], [], 4]},"
        "{\"name\": \"record_param_comms\", \"id\": 12, \"inputs\": [[[3, 4, 0, 6, 2, \"cuda:0\"]], 2, 777, 0, \"send\", [], [], 4]}]}";
    lsim_trace *t = NULL;
    lsim_et *et = NULL;
    lsim_err err = {0};
    lsim_et_apply_stats st;
    lsim_coll_info *k[4];
    CHECK_I64(lsim_trace_read_mem("a2a.json", TR, strlen(TR), &t, &err), 0);
    CHECK_I64(lsim_et_read_mem("a2a.et.json", ET, strlen(ET), &et, &err), 0);
    if (!t || !et) goto cleanup;
    CHECK_I64(kernels(t, k, 4), 2);
    CHECK(k[0]->kind == LSIM_COLL_SENDRECV && k[1]->kind == LSIM_COLL_SENDRECV);
    CHECK_I64(lsim_et_apply(et, t, &st, &err), 0);
    CHECK_I64(st.matched, 2);
    CHECK_I64(k[0]->kind, LSIM_COLL_ALLTOALL);
    CHECK_I64(k[0]->group_size, 4);
    CHECK_I64(k[1]->kind, LSIM_COLL_SENDRECV);
cleanup:
    lsim_trace_free(t);
    lsim_et_free(et);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_et DATA_DIR\n");
        return 2;
    }
    g_dir = argv[1];
    test_new_layout();
    test_old_layout();
    test_bad();
    test_sibling();
    test_apply();
    test_alltoall();
    return check_result("test_et");
}
