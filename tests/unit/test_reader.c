/* lsim_trace_read_mem on small in-memory documents: exact timestamps, field
 * order and layout, top-level keys in any order (distributedInfo after
 * traceEvents), bare arrays, escapes, negative ids, cuda_sync, collective
 * metadata, categories, kernels' launch configurations and the device's SM
 * limits, plain events read in place and the rest by cJSON alike, and the
 * error codes and messages of bad input. */
#include <stdlib.h>

#include "lumosim/trace.h"
#include "check.h"

static lsim_trace *read_ok_n(const char *label, const char *json, size_t len, int line)
{
    lsim_trace *t = NULL;
    lsim_err err;
    memset(&err, 0, sizeof err);
    int rc = lsim_trace_read_mem(label, json, len, &t, &err);
    if (rc != 0 || !t) {
        fprintf(stderr, "%s:%d: [%s] read failed: rc=%d msg=\"%s\"\n", __FILE__, line,
                label, rc, err.msg);
        check_failures++;
        if (t)
            lsim_trace_free(t);
        return NULL;
    }
    return t;
}
#define READ_OK(label, json) read_ok_n((label), (json), strlen(json), __LINE__)

static void read_bad(const char *label, const char *json, int want, int line)
{
    lsim_trace *t = (lsim_trace *)&t; /* must be set to NULL on failure */
    lsim_err err;
    memset(&err, 0, sizeof err);
    int rc = lsim_trace_read_mem(label, json, strlen(json), &t, &err);
    if (rc != want) {
        fprintf(stderr, "%s:%d: [%s] rc=%d (%s), expected %d (%s); msg=\"%s\"\n",
                __FILE__, line, label, rc, lsim_strerror(rc), want,
                lsim_strerror(want), err.msg);
        check_failures++;
    }
    if (rc == 0) {
        if (t && t != (lsim_trace *)&t)
            lsim_trace_free(t);
        return;
    }
    if (t != NULL) {
        fprintf(stderr, "%s:%d: [%s] *out not NULL after failure\n", __FILE__, line, label);
        check_failures++;
    }
    if (err.code != rc) {
        fprintf(stderr, "%s:%d: [%s] err.code=%d but rc=%d\n", __FILE__, line, label,
                err.code, rc);
        check_failures++;
    }
    if (!strstr(err.msg, label)) {
        fprintf(stderr, "%s:%d: [%s] message does not name the input: \"%s\"\n",
                __FILE__, line, label, err.msg);
        check_failures++;
    }
    if (strchr(err.msg, '\n')) {
        fprintf(stderr, "%s:%d: [%s] message is more than one line: \"%s\"\n",
                __FILE__, line, label, err.msg);
        check_failures++;
    }
}
#define READ_BAD(label, json, code) read_bad((label), (json), (code), __LINE__)

static const char *S(const lsim_trace *t, uint32_t id)
{
    const char *s = lsim_strtab_get(t->strings, id);
    return s ? s : "(bad id)";
}

static const lsim_event *find(const lsim_trace *t, const char *name, int line)
{
    for (size_t i = 0; i < t->nev; i++)
        if (strcmp(S(t, t->ev[i].name), name) == 0)
            return &t->ev[i];
    fprintf(stderr, "%s:%d: no event named \"%s\" (of %zu)\n", __FILE__, line, name, t->nev);
    check_failures++;
    return NULL;
}
#define FIND(t, name) find((t), (name), __LINE__)

/* ------------------------------------------------------------------ */

static void test_basic_exact_ts(void)
{
    const char *json =
        "{\"schemaVersion\":1,\"traceEvents\":[\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":100,\"tid\":100,"
        "\"ts\":1711964646123456.789,\"dur\":12.25,\"args\":{\"External id\":7}},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":100,"
        "\"tid\":100,\"ts\":1711964646123460,\"dur\":5,\"args\":{\"External id\":7,"
        "\"cbid\":211,\"correlation\":42}},\n"
        "{\"ph\":\"s\",\"id\":42,\"pid\":100,\"tid\":100,\"ts\":1711964646123460,"
        "\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ampere_sgemm_128x64_nn\",\"pid\":0,"
        "\"tid\":7,\"ts\":1711964646123470.5,\"dur\":100.125,\"args\":{\"External id\":7,"
        "\"device\":0,\"context\":1,\"stream\":7,\"correlation\":42,\"grid\":[1,2,3]}},\n"
        "{\"ph\":\"f\",\"id\":42,\"pid\":0,\"tid\":7,\"ts\":1711964646123470.5,"
        "\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},\n"
        "{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":1711964646123400,\"pid\":100,"
        "\"tid\":0,\"args\":{\"name\":\"python3\"}}\n"
        "]}";
    lsim_trace *t = READ_OK("basic", json);
    if (!t)
        return;
    CHECK_I64(t->nev, 3);
    CHECK_I64(t->events_seen, 6);
    CHECK_I64(t->flow_events, 2);
    CHECK_I64(t->ts_float, 1);
    CHECK_I64(t->rank, -1);
    CHECK_I64(t->world_size, -1);
    CHECK(t->backend == UINT32_MAX);
    CHECK_I64(t->npg, 0);
    CHECK(t->bytes_read >= strlen(json) - 2); /* uncompressed bytes scanned */
    if (t->nev == 3) {
        /* file order */
        CHECK_STR(S(t, t->ev[0].name), "aten::mm");
        CHECK_STR(S(t, t->ev[1].name), "cudaLaunchKernel");
        CHECK_STR(S(t, t->ev[2].name), "ampere_sgemm_128x64_nn");
    }
    const lsim_event *op = FIND(t, "aten::mm");
    const lsim_event *rt = FIND(t, "cudaLaunchKernel");
    const lsim_event *k = FIND(t, "ampere_sgemm_128x64_nn");
    if (op) {
        CHECK_I64(op->kind, LSIM_EV_CPU_OP);
        CHECK_I64(op->ts, INT64_C(1711964646123456789));
        CHECK_I64(op->dur, 12250);
        CHECK_I64(lsim_event_row(t, op)->pid, 100);
        CHECK_I64(lsim_event_row(t, op)->tid, 100);
        CHECK_I64(op->corr, -1);
        CHECK_I64(lsim_event_row(t, op)->device, -1);
        CHECK_I64(lsim_event_row(t, op)->stream, -1);
        CHECK_I64(op->coll, -1);
        CHECK_STR(S(t, op->cat), "cpu_op");
    }
    if (rt) {
        CHECK_I64(rt->kind, LSIM_EV_RUNTIME);
        CHECK_I64(rt->ts, INT64_C(1711964646123460000));
        CHECK_I64(rt->dur, 5000);
        CHECK_I64(rt->corr, 42);
        CHECK_STR(S(t, rt->cat), "cuda_runtime");
    }
    if (k) {
        CHECK_I64(k->kind, LSIM_EV_KERNEL);
        CHECK_I64(k->ts, INT64_C(1711964646123470500));
        CHECK_I64(k->dur, 100125);
        CHECK_I64(lsim_event_row(t, k)->pid, 0);
        CHECK_I64(lsim_event_row(t, k)->tid, 7);
        CHECK_I64(lsim_event_row(t, k)->device, 0);
        CHECK_I64(lsim_event_row(t, k)->stream, 7);
        CHECK_I64(k->corr, 42);
        CHECK_I64(k->coll, -1);
        CHECK_I64(k->sync_kind, LSIM_SYNC_NONE);
    }
    lsim_trace_free(t);

    /* Integer-only file (older Kineto): exact, and ts_float stays 0. */
    const char *ints =
        "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,"
        "\"tid\":7,\"ts\":1694039994071305,\"dur\":11,\"args\":{\"device\":0,\"stream\":7,"
        "\"correlation\":14}}]}";
    t = READ_OK("ints", ints);
    if (t) {
        CHECK_I64(t->ts_float, 0);
        CHECK_I64(t->nev, 1);
        if (t->nev) {
            CHECK_I64(t->ev[0].ts, INT64_C(1694039994071305000));
            CHECK_I64(t->ev[0].dur, 11000);
        }
        lsim_trace_free(t);
    }

    /* The buffer need not end with the document: len is respected. */
    const char *doc = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\","
                      "\"pid\":0,\"tid\":7,\"ts\":10.5,\"dur\":1,\"args\":{\"device\":0,"
                      "\"stream\":7}}]}";
    size_t n = strlen(doc);
    char *buf = malloc(n + 32);
    memcpy(buf, doc, n);
    memcpy(buf + n, "<<garbage after the document>>", 31);
    t = read_ok_n("len", buf, n, __LINE__);
    if (t) {
        CHECK_I64(t->nev, 1);
        if (t->nev)
            CHECK_I64(t->ev[0].ts, 10500);
        lsim_trace_free(t);
    }
    free(buf);
}

/* One event spread over many lines and fields, keys in unusual order,
 * unknown fields holding nested arrays/objects, whitespace of every kind. */
static void test_split_event(void)
{
    const char *json =
        "{\r\n  \"traceEvents\" :\r\n  [\r\n"
        "    {\r\n"
        "      \"args\" : {\r\n"
        "        \"External id\" : 513,\r\n"
        "        \"queued\" : 0,\r\n"
        "        \"grid\" : [ 128, 1, 1 ],\r\n"
        "        \"block\" : [ 256, 1, 1 ],\r\n"
        "        \"nested\" : { \"a\" : [ { \"b\" : [ ] }, { } ], \"c\" : null },\r\n"
        "        \"shared memory\" : 0,\r\n"
        "        \"est. achieved occupancy %\" : 100,\r\n"
        "        \"correlation\" : 1482,\r\n"
        "        \"registers per thread\" : 16,\r\n"
        "        \"stream\" : 7,\r\n"
        "        \"context\" : 1,\r\n"
        "        \"device\" : 0,\r\n"
        "        \"flag\" : true,\r\n"
        "        \"none\" : false\r\n"
        "      },\r\n"
        "      \"dur\"\t:\t1.75 ,\r\n"
        "      \"tid\" : 7 ,\r\n"
        "      \"name\" : \"void at::native::vectorized_elementwise_kernel<4, "
        "at::native::FillFunctor<c10::Half>, at::detail::Array<char*, 1> >(int, "
        "at::native::FillFunctor<c10::Half>, at::detail::Array<char*, 1>)\" ,\r\n"
        "      \"pid\" : 0 ,\r\n"
        "      \"cat\" : \"kernel\" ,\r\n"
        "      \"ph\" : \"X\" ,\r\n"
        "      \"ts\" : 1707417525512145.25\r\n"
        "    }\r\n"
        "  ]\r\n}\r\n";
    lsim_trace *t = READ_OK("split", json);
    if (!t)
        return;
    CHECK_I64(t->nev, 1);
    if (t->nev == 1) {
        const lsim_event *e = &t->ev[0];
        CHECK_I64(e->kind, LSIM_EV_KERNEL);
        CHECK_I64(e->ts, INT64_C(1707417525512145250));
        CHECK_I64(e->dur, 1750);
        CHECK_I64(lsim_event_row(t, e)->pid, 0);
        CHECK_I64(lsim_event_row(t, e)->tid, 7);
        CHECK_I64(lsim_event_row(t, e)->stream, 7);
        CHECK_I64(lsim_event_row(t, e)->device, 0);
        CHECK_I64(e->corr, 1482);
        CHECK_STR(S(t, e->name),
                  "void at::native::vectorized_elementwise_kernel<4, "
                  "at::native::FillFunctor<c10::Half>, at::detail::Array<char*, 1> >(int, "
                  "at::native::FillFunctor<c10::Half>, at::detail::Array<char*, 1>)");
    }
    lsim_trace_free(t);
}

/* Top-level keys in any order: big values before traceEvents, and
 * distributedInfo (with pg_config) after it. */
static void test_distributed_info_after(void)
{
    const char *json =
        "{\"schemaVersion\":1,"
        "\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA A100-SXM4-80GB\","
        "\"totalGlobalMem\":85031714816,\"computeMajor\":8,\"computeMinor\":0,"
        "\"maxThreadsPerBlock\":1024,\"numSms\":108}],"
        "\"traceName\":\"a \\\"traceEvents\\\": [ name in a string\","
        "\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"kernel\","
        "\"name\":\"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)\","
        "\"pid\":0,\"tid\":40,\"ts\":4458677009853.422,\"dur\":2636.669,\"args\":{"
        "\"External id\":12945,\"device\":0,\"stream\":40,\"correlation\":60047,"
        "\"Collective name\":\"allreduce\",\"In msg nelems\":6637568,"
        "\"Out msg nelems\":6637568,\"Group size\":2,\"dtype\":\"Float\","
        "\"Process Group Name\":\"0\",\"Process Group Description\":\"default_pg\","
        "\"Process Group Ranks\":\"[0, 1]\"}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\","
        "\"name\":\"ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)\","
        "\"pid\":0,\"tid\":40,\"ts\":4458677019853.5,\"dur\":100,\"args\":{"
        "\"device\":0,\"stream\":40,\"correlation\":60050}}"
        "],"
        "\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":1,\"world_size\":2,"
        "\"pg_count\":2,\"pg_config\":["
        "{\"pg_name\":\"0\",\"pg_desc\":\"default_pg\",\"backend_config\":\"cuda:nccl\","
        "\"pg_size\":2,\"ranks\":[0,1]},"
        "{\"pg_name\":\"1\",\"pg_desc\":\"undefined\",\"backend_config\":\"cuda:nccl\","
        "\"pg_size\":1,\"ranks\":[1]}],\"nccl_version\":\"2.17.1\"},"
        "\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":1711900000000000000}";
    lsim_trace *t = READ_OK("distinfo", json);
    if (!t)
        return;
    CHECK_I64(t->nev, 2);
    CHECK_I64(t->rank, 1);
    CHECK_I64(t->world_size, 2);
    CHECK(t->backend != UINT32_MAX);
    if (t->backend != UINT32_MAX)
        CHECK_STR(S(t, t->backend), "nccl");
    CHECK_I64(t->npg, 2);
    if (t->npg == 2) {
        CHECK_STR(S(t, t->pgs[0].name), "0");
        CHECK_STR(S(t, t->pgs[0].desc), "default_pg");
        CHECK_I64(t->pgs[0].size, 2);
        CHECK_I64(t->pgs[0].nranks, 2);
        if (t->pgs[0].nranks == 2) {
            CHECK_I64(t->pgs[0].ranks[0], 0);
            CHECK_I64(t->pgs[0].ranks[1], 1);
        }
        CHECK_STR(S(t, t->pgs[1].name), "1");
        CHECK_STR(S(t, t->pgs[1].desc), "undefined");
        CHECK_I64(t->pgs[1].size, 1);
        CHECK_I64(t->pgs[1].nranks, 1);
        if (t->pgs[1].nranks == 1)
            CHECK_I64(t->pgs[1].ranks[0], 1);
    }
    /* collective metadata on the new-style kernel */
    const lsim_event *k = FIND(t, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, "
                                  "unsigned long, ncclWork*)");
    if (k) {
        CHECK_I64(k->kind, LSIM_EV_KERNEL);
        CHECK_I64(k->ts, INT64_C(4458677009853422));
        CHECK_I64(k->dur, 2636669);
        CHECK(k->coll >= 0 && (size_t)k->coll < t->ncoll);
        if (k->coll >= 0 && (size_t)k->coll < t->ncoll) {
            const lsim_coll_info *c = &t->colls[k->coll];
            CHECK_I64(c->kind, LSIM_COLL_ALLREDUCE);
            CHECK_I64(c->from_metadata, 1);
            CHECK_I64(c->group_size, 2);
            CHECK_I64(c->in_nelems, 6637568);
            CHECK_I64(c->out_nelems, 6637568);
            CHECK_I64(c->dtype_bytes, 4);
            CHECK_I64(c->bytes, INT64_C(6637568) * 4); /* nelems x Float's 4 bytes: bytes, not bits */
            CHECK(c->pg_name != UINT32_MAX);
            if (c->pg_name != UINT32_MAX)
                CHECK_STR(S(t, c->pg_name), "0");
        }
    }
    /* and the old-style one without metadata: kind from the name */
    k = FIND(t, "ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)");
    if (k) {
        CHECK(k->coll >= 0 && (size_t)k->coll < t->ncoll);
        if (k->coll >= 0 && (size_t)k->coll < t->ncoll) {
            const lsim_coll_info *c = &t->colls[k->coll];
            CHECK_I64(c->kind, LSIM_COLL_ALLREDUCE);
            CHECK_I64(c->from_metadata, 0);
            CHECK_I64(c->group_size, -1);
            CHECK_I64(c->in_nelems, -1);
            CHECK_I64(c->dtype_bytes, 2);
            CHECK_I64(c->bytes, -1); /* no element count: unknown, not guessed */
        }
    }
    lsim_trace_free(t);
}

/* The Chrome trace format also allows a bare array of events. */
static void test_bare_array(void)
{
    const char *json =
        "[\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":9,"
        "\"tid\":9,\"ts\":100.5,\"dur\":3,\"args\":{\"correlation\":5}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k1\",\"pid\":0,\"tid\":7,"
        "\"ts\":110,\"dur\":2.25,\"args\":{\"device\":0,\"stream\":7,\"correlation\":5}}\n"
        "]\n";
    lsim_trace *t = READ_OK("bare-array", json);
    if (!t)
        return;
    CHECK_I64(t->nev, 2);
    const lsim_event *k = FIND(t, "k1");
    if (k) {
        CHECK_I64(k->ts, 110000);
        CHECK_I64(k->dur, 2250);
        CHECK_I64(k->corr, 5);
    }
    CHECK_I64(t->rank, -1);
    lsim_trace_free(t);
}

/* Kernels' launch configurations (lsim_kernel_cfg) and deviceProperties'
 * SM limits, deviceProperties after traceEvents: products of grid and
 * block, registers, shared memory, occupancy, the SM count "blocks per SM"
 * implies (4096 / 37.925926 = 108); a kernel without a grid, a memcpy, and
 * a kernel whose block is not an array of positive numbers get no entry;
 * an out-of-range occupancy reads as absent. */
static void test_kernel_cfg(void)
{
    const char *json =
        "{\"traceEvents\":[\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k1\",\"pid\":0,\"tid\":7,\"ts\":10,\"dur\":2,"
        "\"args\":{\"grid\":[8,16,32],\"block\":[128,2,1],\"registers per thread\":40,\"shared memory\":12544,"
        "\"est. achieved occupancy %\":63,\"blocks per SM\":37.925926}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k2\",\"pid\":0,\"tid\":7,\"ts\":20,\"dur\":2,\"args\":{}},\n"
        "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"m\",\"pid\":0,\"tid\":7,\"ts\":30,\"dur\":2,"
        "\"args\":{\"grid\":[1,1,1],\"block\":[1,1,1]}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k3\",\"pid\":0,\"tid\":7,\"ts\":40,\"dur\":2,"
        "\"args\":{\"grid\":[2,1,1],\"block\":[0,1,1]}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k4\",\"pid\":0,\"tid\":7,\"ts\":50,\"dur\":2,"
        "\"args\":{\"grid\":[3],\"block\":[64],\"est. achieved occupancy %\":250}}\n"
        "],\"deviceProperties\":[{\"id\":0,\"numSms\":108,\"maxThreadsPerMultiprocessor\":2048,"
        "\"regsPerMultiprocessor\":65536,\"sharedMemPerMultiprocessor\":167936,\"warpSize\":32,"
        "\"computeMajor\":8,\"computeMinor\":6}]}\n";
    lsim_trace *t = READ_OK("kernel-cfg", json);
    if (!t)
        return;
    CHECK_I64(t->nkcfg, 2);
    const lsim_kernel_cfg *c = lsim_trace_kcfg_of(t, 0);
    CHECK(c != NULL);
    if (c) {
        CHECK_I64(c->blocks, 8 * 16 * 32);
        CHECK_I64(c->threads, 256);
        CHECK_I64(c->regs, 40);
        CHECK_I64(c->smem, 12544);
        CHECK_I64(c->occ_pct, 63);
        CHECK_I64(c->sms_hint, 108);
    }
    CHECK(lsim_trace_kcfg_of(t, 1) == NULL && lsim_trace_kcfg_of(t, 2) == NULL && lsim_trace_kcfg_of(t, 3) == NULL);
    c = lsim_trace_kcfg_of(t, 4);
    CHECK(c != NULL);
    if (c) {
        CHECK_I64(c->blocks, 3);
        CHECK_I64(c->threads, 64);
        CHECK_I64(c->occ_pct, 0);
        CHECK_I64(c->regs, 0);
        CHECK_I64(c->sms_hint, 0);
    }
    CHECK_I64(t->sm.sms, 108);
    CHECK_I64(t->sm.threads_per_sm, 2048);
    CHECK_I64(t->sm.regs_per_sm, 65536);
    CHECK_I64(t->sm.smem_per_sm, 167936);
    CHECK_I64(t->sm.warp, 32);
    CHECK_I64(t->sm.cc_major, 8);
    CHECK_I64(t->sm.cc_minor, 6);
    lsim_trace_free(t);
}

/* Quotes, braces, brackets and escapes inside strings must not confuse a
 * streaming scanner. */
static void test_escapes(void)
{
    const char *json =
        "{\"traceEvents\":[\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"weird \\\"}] name {[\","
        "\"pid\":1,\"tid\":1,\"ts\":1000,\"dur\":10,"
        "\"args\":{\"Input Dims\":\"]}]}\\\"\",\"Concrete Inputs\":[\"{\", \"[\", \"\\\\\"]}},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"back\\\\slash \\/ tab\\t caf\\u00e9\","
        "\"pid\":1,\"tid\":1,\"ts\":1020,\"dur\":1,\"args\":{}},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"}\",\"pid\":1,\"tid\":1,"
        "\"ts\":1030,\"dur\":1},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1040,"
        "\"dur\":1,\"args\":{\"device\":0,\"stream\":7}}\n"
        "]}";
    lsim_trace *t = READ_OK("escapes", json);
    if (!t)
        return;
    CHECK_I64(t->nev, 4);
    const lsim_event *e = FIND(t, "weird \"}] name {[");
    if (e) {
        CHECK_I64(e->ts, 1000000);
        CHECK_I64(e->dur, 10000);
    }
    e = FIND(t, "back\\slash / tab\t caf\xc3\xa9");
    if (e)
        CHECK_I64(e->ts, 1020000);
    e = FIND(t, "}");
    if (e)
        CHECK_I64(e->ts, 1030000);
    e = FIND(t, "k");
    if (e)
        CHECK_I64(e->ts, 1040000);
    lsim_trace_free(t);
}

/* 32-bit wrapped thread ids, large pids. */
static void test_negative_tid(void)
{
    const char *json =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"autograd::engine::evaluate_function: "
        "MseLossBackward0\",\"pid\":3912387,\"tid\":-1574912192,\"ts\":4203669604595.407,"
        "\"dur\":340.024,\"args\":{\"External id\":513}},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
        "\"pid\":3912387,\"tid\":-1574912192,\"ts\":4203669604600,\"dur\":4,"
        "\"args\":{\"correlation\":2147483649}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,"
        "\"ts\":4203669604610,\"dur\":4,\"args\":{\"device\":0,\"stream\":7,"
        "\"correlation\":2147483649}}"
        "]}";
    lsim_trace *t = READ_OK("negtid", json);
    if (!t)
        return;
    const lsim_event *e = FIND(t, "autograd::engine::evaluate_function: MseLossBackward0");
    if (e) {
        CHECK_I64(lsim_event_row(t, e)->tid, INT64_C(-1574912192));
        CHECK_I64(lsim_event_row(t, e)->pid, 3912387);
        CHECK_I64(e->ts, INT64_C(4203669604595407));
        CHECK_I64(e->dur, 340024);
    }
    e = FIND(t, "cudaLaunchKernel");
    if (e) {
        CHECK_I64(lsim_event_row(t, e)->tid, INT64_C(-1574912192));
        CHECK_I64(e->corr, INT64_C(2147483649));
    }
    lsim_trace_free(t);
}

static void test_cuda_sync(void)
{
    const char *json =
        "{\"traceEvents\":[\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,"
        "\"ts\":1707417525512145,\"dur\":1,\"args\":{\"device\":0,\"stream\":7,\"correlation\":1482}},\n"
        /* Stream Wait Event, new style with the record's correlation id */
        "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Stream Wait Event\",\"pid\":0,\"tid\":20,"
        "\"ts\":1694040009766163,\"dur\":3,\"args\":{\"External id\":5170,"
        "\"cuda_sync_kind\":\"Stream Wait Event\",\"wait_on_stream\":7,"
        "\"wait_on_cuda_event_record_corr_id\":5169,\"wait_on_cuda_event_id\":1,"
        "\"stream\":20,\"correlation\":5170,\"device\":0,\"context\":1}},\n"
        /* Stream Wait Event, old style: no record correlation id */
        "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Stream Wait Event old\",\"pid\":0,\"tid\":21,"
        "\"ts\":1694040009766170,\"dur\":2,\"args\":{\"cuda_sync_kind\":\"Stream Wait Event\","
        "\"wait_on_stream\":7,\"wait_on_cuda_event_id\":1,\"stream\":21,"
        "\"correlation\":5171,\"device\":0}},\n"
        /* Event Sync on a row with stream -1 */
        "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Event Sync\",\"pid\":0,\"tid\":-1,"
        "\"ts\":1707417525512383,\"dur\":33,\"args\":{\"External id\":1536,"
        "\"cuda_sync_kind\":\"Event Sync\",\"wait_on_stream\":7,"
        "\"wait_on_cuda_event_record_corr_id\":1533,\"wait_on_cuda_event_id\":8,"
        "\"stream\":-1,\"correlation\":1536,\"device\":0,\"context\":1}},\n"
        /* Event Sync carrying -1 for both stream and record */
        "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Event Sync unknown\",\"pid\":0,\"tid\":-1,"
        "\"ts\":1707417525512420,\"dur\":1,\"args\":{\"cuda_sync_kind\":\"Event Sync\","
        "\"wait_on_stream\":-1,\"wait_on_cuda_event_record_corr_id\":-1,"
        "\"stream\":-1,\"correlation\":1540,\"device\":0}},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Stream Sync\",\"pid\":0,\"tid\":7,"
        "\"ts\":1707417525512283,\"dur\":5,\"args\":{\"External id\":1512,"
        "\"cuda_sync_kind\":\"Stream Sync\",\"stream\":7,\"correlation\":1512,"
        "\"device\":0,\"context\":1}},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Context Sync\",\"pid\":0,\"tid\":-1,"
        "\"ts\":1694039994168076,\"dur\":20,\"args\":{\"External id\":225,"
        "\"cuda_sync_kind\":\"Context Sync\",\"stream\":4294967295,\"correlation\":225,"
        "\"device\":0,\"context\":1}}\n"
        "]}";
    lsim_trace *t = READ_OK("sync", json);
    if (!t)
        return;
    CHECK_I64(t->nev, 7);
    const lsim_event *e = FIND(t, "k");
    if (e) {
        CHECK_I64(e->kind, LSIM_EV_KERNEL);
        CHECK_I64(e->sync_kind, LSIM_SYNC_NONE);
    }
    e = FIND(t, "Stream Wait Event");
    if (e) {
        CHECK_I64(e->kind, LSIM_EV_SYNC);
        CHECK_I64(e->sync_kind, LSIM_SYNC_STREAM_WAIT_EVENT);
        CHECK_I64(lsim_event_row(t, e)->stream, 20);
        CHECK_I64(lsim_event_row(t, e)->device, 0);
        CHECK_I64(lsim_event_wait_stream(t, e), 7);
        CHECK_I64(lsim_event_wait_rec_corr(t, e), 5169);
        CHECK_I64(e->corr, 5170);
        CHECK_I64(e->ts, INT64_C(1694040009766163000));
        CHECK_I64(e->dur, 3000);
    }
    e = FIND(t, "Stream Wait Event old");
    if (e) {
        CHECK_I64(e->kind, LSIM_EV_SYNC);
        CHECK_I64(e->sync_kind, LSIM_SYNC_STREAM_WAIT_EVENT);
        CHECK_I64(lsim_event_row(t, e)->stream, 21);
        CHECK_I64(lsim_event_wait_stream(t, e), 7);
        CHECK_I64(lsim_event_wait_rec_corr(t, e), -1);
    }
    e = FIND(t, "Event Sync");
    if (e) {
        CHECK_I64(e->kind, LSIM_EV_SYNC);
        CHECK_I64(e->sync_kind, LSIM_SYNC_EVENT);
        CHECK_I64(lsim_event_row(t, e)->stream, -1);
        CHECK_I64(lsim_event_row(t, e)->tid, -1);
        CHECK_I64(lsim_event_wait_stream(t, e), 7);
        CHECK_I64(lsim_event_wait_rec_corr(t, e), 1533);
        CHECK_I64(e->corr, 1536);
    }
    e = FIND(t, "Event Sync unknown");
    if (e) {
        CHECK_I64(e->sync_kind, LSIM_SYNC_EVENT);
        CHECK_I64(lsim_event_wait_stream(t, e), -1);
        CHECK_I64(lsim_event_wait_rec_corr(t, e), -1);
    }
    e = FIND(t, "Stream Sync");
    if (e) {
        CHECK_I64(e->kind, LSIM_EV_SYNC);
        CHECK_I64(e->sync_kind, LSIM_SYNC_STREAM);
        CHECK_I64(lsim_event_row(t, e)->stream, 7);
        CHECK_I64(lsim_event_wait_stream(t, e), -1);
        CHECK_I64(e->corr, 1512);
    }
    e = FIND(t, "Context Sync");
    if (e) {
        CHECK_I64(e->kind, LSIM_EV_SYNC);
        CHECK_I64(e->sync_kind, LSIM_SYNC_CONTEXT);
        CHECK_I64(lsim_event_row(t, e)->stream, INT64_C(4294967295));
        CHECK_I64(e->corr, 225);
        CHECK_I64(e->dur, 20000);
    }
    lsim_trace_free(t);
}

/* Categories are matched case-insensitively; memcpy direction flags. */
static void test_categories(void)
{
    const char *json =
        "{\"traceEvents\":[\n"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#3\",\"pid\":1,"
        "\"tid\":1,\"ts\":1000,\"dur\":500},\n"
        "{\"ph\":\"X\",\"cat\":\"python_function\",\"name\":\"torch/nn/modules/module.py(1501): "
        "_call_impl\",\"pid\":1,\"tid\":1,\"ts\":1001,\"dur\":10},\n"
        "{\"ph\":\"X\",\"cat\":\"Runtime\",\"name\":\"cudaMemcpyAsync\",\"pid\":1,\"tid\":1,"
        "\"ts\":1020,\"dur\":30,\"args\":{\"correlation\":11}},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_driver\",\"name\":\"cuLaunchKernel\",\"pid\":1,\"tid\":1,"
        "\"ts\":1060,\"dur\":4,\"args\":{\"correlation\":12}},\n"
        "{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"triton_poi_fused_add_0\",\"pid\":0,\"tid\":7,"
        "\"ts\":1070,\"dur\":2,\"args\":{\"device\":0,\"stream\":7,\"correlation\":12}},\n"
        "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy DtoH (Device -> Pageable)\","
        "\"pid\":0,\"tid\":7,\"ts\":1025,\"dur\":2,\"args\":{\"device\":0,\"stream\":7,"
        "\"correlation\":11,\"bytes\":4}},\n"
        "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD (Pinned -> Device)\","
        "\"pid\":0,\"tid\":7,\"ts\":1080,\"dur\":2,\"args\":{\"device\":0,\"stream\":7,"
        "\"correlation\":13,\"bytes\":4}},\n"
        "{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":\"Memset (Device)\",\"pid\":0,\"tid\":7,"
        "\"ts\":1090,\"dur\":1,\"args\":{\"device\":0,\"stream\":7,\"correlation\":14}}\n"
        "]}";
    lsim_trace *t = READ_OK("categories", json);
    if (!t)
        return;
    const lsim_event *e;
    if ((e = FIND(t, "ProfilerStep#3")))
        CHECK_I64(e->kind, LSIM_EV_ANNOTATION);
    if ((e = FIND(t, "torch/nn/modules/module.py(1501): _call_impl")))
        CHECK_I64(e->kind, LSIM_EV_CPU_OP);
    if ((e = FIND(t, "cudaMemcpyAsync"))) {
        CHECK_I64(e->kind, LSIM_EV_RUNTIME);
        CHECK_STR(S(t, e->cat), "Runtime"); /* original spelling kept */
    }
    if ((e = FIND(t, "cuLaunchKernel")))
        CHECK_I64(e->kind, LSIM_EV_RUNTIME);
    if ((e = FIND(t, "triton_poi_fused_add_0"))) {
        CHECK_I64(e->kind, LSIM_EV_KERNEL);
        CHECK_I64(e->coll, -1);
    }
    if ((e = FIND(t, "Memcpy DtoH (Device -> Pageable)"))) {
        CHECK_I64(e->kind, LSIM_EV_MEMCPY);
        CHECK_I64(e->dtoh, 1);
        CHECK_I64(e->pageable, 1);
    }
    if ((e = FIND(t, "Memcpy HtoD (Pinned -> Device)"))) {
        CHECK_I64(e->kind, LSIM_EV_MEMCPY);
        CHECK_I64(e->dtoh, 0);
        CHECK_I64(e->pageable, 0);
    }
    if ((e = FIND(t, "Memset (Device)")))
        CHECK_I64(e->kind, LSIM_EV_MEMSET);
    lsim_trace_free(t);
}

/* The reader takes each event one of two ways (src/read/kineto.c): a plain one
 * (strict JSON, no backslash) is read member by member in place, anything
 * else is parsed whole by cJSON. The same events, once plain and twice made
 * not plain (an escaped member nobody reads; escapes in the names), must
 * read alike; the values expected are the JSON text's, worked out by hand. */
static void test_plain_and_parsed(void)
{
    static const char *const extra[3] = {"", ",\"note\":\"a\\tb\"", ""};
    static const char *const mm[3] = {"aten::mm", "aten::mm", "aten::m\\u006d"};
    static const char *const launch[3] = {"cudaLaunchKernel", "cudaLaunchKernel", "cudaLaunch\\u004bernel"};
    for (int v = 0; v < 3; v++) {
        char json[4096];
        snprintf(json, sizeof json,
                 "{\"traceEvents\":[\n"
                 "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": \"11\", \"tid\": 12,\r\n"
                 "   \"ts\": 1000.5, \"dur\": 1e1,\n"
                 "   \"args\": {\"Input Dims\": [[4, 2048], [2048, 16], []], \"Input type\": [\"c10::Half\", \"float\"],\n"
                 "     \"Sequence number\": 7, \"Fwd thread id\": 0, \"External id\": 3}%s},\n"
                 "  {\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"%s\",\"pid\":11,\"tid\":12,\"ts\":1001,"
                 "\"dur\":2,\"args\":{\"correlation\":99,\"correlation\":100}%s},\n"
                 "  {\"ph\":\"X\",\"cat\":\"cpu_op\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1004,"
                 "\"dur\":3,\"args\":{\"device\":0,\"stream\":7,\"correlation\":100,\"grid\":[2,3,1],"
                 "\"block\":[128,1,1],\"blocks per SM\":0.5,\"est. achieved occupancy %%\":-0}%s}\n"
                 "]}",
                 mm[v], extra[v], launch[v], extra[v], extra[v]);
        lsim_trace *t = READ_OK(v == 0 ? "plain" : v == 1 ? "parsed" : "escaped-names", json);
        if (!t) continue;
        CHECK_I64(t->nev, 3);
        const lsim_event *op = find(t, "aten::mm", __LINE__), *rt = find(t, "cudaLaunchKernel", __LINE__),
                         *k = find(t, "k", __LINE__);
        if (op) {
            CHECK_I64(op->kind, LSIM_EV_CPU_OP);
            CHECK_I64(op->ts, 1000500);
            CHECK_I64(op->dur, 10000);
            CHECK_I64(t->rows[op->row].pid, 11); /* "11": a numeric string */
            CHECK_I64(t->rows[op->row].tid, 12);
        }
        CHECK_I64(t->ngemm, 1);
        if (t->ngemm == 1) {
            const lsim_gemm_op *g = &t->gemms[0];
            CHECK_I64(g->ndims[0], 2);
            CHECK_I64(g->dims[0][0], 4);
            CHECK_I64(g->dims[0][1], 2048);
            CHECK_I64(g->ndims[1], 2);
            CHECK_I64(g->dims[1][0], 2048);
            CHECK_I64(g->dims[1][1], 16);
            CHECK_I64(g->ndims[2], 0);
            CHECK_I64(g->elem_bytes, 2);
        }
        const lsim_autograd_op *ag = lsim_trace_autograd_of(t, 0);
        CHECK(ag != NULL);
        if (ag) {
            CHECK_I64(ag->seq, 7);
            CHECK_I64(ag->fwd_tid, 0);
        }
        if (rt) CHECK_I64(rt->corr, 100); /* a repeated key: the last one */
        if (k) {
            CHECK_I64(k->kind, LSIM_EV_KERNEL); /* the last "cat" */
            CHECK_STR(S(t, k->cat), "kernel");
            CHECK_I64(k->corr, 100);
            CHECK_I64(t->rows[k->row].device, 0);
            CHECK_I64(t->rows[k->row].stream, 7);
        }
        const lsim_kernel_cfg *c = lsim_trace_kcfg_of(t, 2);
        CHECK(c != NULL);
        if (c) {
            CHECK_I64(c->blocks, 6);
            CHECK_I64(c->threads, 128);
            CHECK_I64(c->occ_pct, 0);
            CHECK_I64(c->sms_hint, 12); /* 6 / 0.5 + 0.5, truncated */
        }
        lsim_trace_free(t);
    }
}

static void test_errors(void)
{
    /* not JSON / broken JSON */
    READ_BAD("missing-comma",
             "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\" \"name\":\"k\",\"pid\":0,"
             "\"tid\":7,\"ts\":1,\"dur\":1}]}",
             LSIM_EFORMAT);
    READ_BAD("missing-brace",
             "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,"
             "\"tid\":7,\"ts\":1,\"dur\":1,\"args\":{\"device\":0},"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k2\",\"pid\":0,\"tid\":7,\"ts\":5,"
             "\"dur\":1}]}",
             LSIM_EFORMAT);
    READ_BAD("truncated",
             "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,"
             "\"tid\":7,\"ts\":1,\"dur\":1},{\"ph\":\"X\",\"cat\":\"ker",
             LSIM_EFORMAT);
    READ_BAD("truncated-after-array",
             "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,"
             "\"tid\":7,\"ts\":1,\"dur\":1}],\"distributedInfo\":{\"rank\":0",
             LSIM_EFORMAT);
    READ_BAD("unterminated-string",
             "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k}]}",
             LSIM_EFORMAT);
    READ_BAD("garbage-after",
             "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,"
             "\"tid\":7,\"ts\":1,\"dur\":1}]} trailing",
             LSIM_EFORMAT);
    READ_BAD("plain-text", "hello, world", LSIM_EFORMAT);
    READ_BAD("empty-input", "", LSIM_EFORMAT);

    /* valid JSON, not a usable trace */
    READ_BAD("no-trace-events", "{\"foo\":1}", LSIM_ETRACE);
    READ_BAD("package-json",
             "{\"name\":\"lumosim\",\"version\":\"0.1.0\",\"dependencies\":{\"a\":\"^1\"}}",
             LSIM_ETRACE);
    READ_BAD("empty-events", "{\"traceEvents\":[]}", LSIM_ETRACE);
    READ_BAD("empty-array", "[]", LSIM_ETRACE);
    READ_BAD("events-not-array", "{\"traceEvents\":{\"ph\":\"X\"}}", LSIM_ETRACE);
    READ_BAD("only-metadata",
             "{\"traceEvents\":[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
             "\"args\":{\"name\":\"python3\"}}]}",
             LSIM_ETRACE);
    READ_BAD("negative-dur",
             "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\","
             "\"pid\":1,\"tid\":1,\"ts\":1711964646100000.5,\"dur\":10},"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,"
             "\"ts\":1711964646100020.25,\"dur\":-5,\"args\":{\"device\":0,\"stream\":7}}]}",
             LSIM_ETRACE);
}

int main(void)
{
    test_basic_exact_ts();
    test_split_event();
    test_distributed_info_after();
    test_bare_array();
    test_escapes();
    test_negative_tid();
    test_cuda_sync();
    test_categories();
    test_kernel_cfg();
    test_plain_and_parsed();
    test_errors();
    return check_result("test_reader");
}
