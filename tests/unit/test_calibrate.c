/* Calibration (calibrate.h): FLOPs of each GEMM-like op from hand-computed
 * shapes; the attribution and efficiency fit on the hand-made trace
 * tests/data/calibrate/gemm_curve.json, whose GEMM kernels last exactly
 * (f + 5e9) / (312e12 * 0.7) (gen_gemm_curve.py, which also lists the
 * traps it contains); the collective fits mapped onto a topology from the
 * nccl-tests fixtures (generated with known alpha/beta, docs/cost-models.md);
 * the written GPU spec loads back; a trace without GEMMs is refused.
 * LSIM_SOURCE_DIR (a compile definition) locates the fixtures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "lumosim/calibrate.h"

#ifndef LSIM_SOURCE_DIR
#error "LSIM_SOURCE_DIR must be defined (tests/unit/CMakeLists.txt)"
#endif

static int near(double got, double want, double rel) { return fabs(got - want) <= rel * fabs(want); }

static lsim_gemm_op mkop(int nt, const int *nd, const int64_t d[3][4])
{
    lsim_gemm_op o;
    memset(&o, 0, sizeof o);
    for (int i = 0; i < 3; i++) o.ndims[i] = i < nt ? (int8_t)nd[i] : -1;
    memcpy(o.dims, d, sizeof o.dims);
    o.elem_bytes = 2;
    return o;
}

static double flops_of(const char *name, int nt, const int *nd, const int64_t d[3][4])
{
    lsim_gemm_op o = mkop(nt, nd, d);
    int64_t b, m, n, k;
    double f = 0;
    return lsim_calib_gemm_flops(name, &o, &b, &m, &n, &k, &f) ? -1 : f;
}

static void test_flops(void)
{
    /* mm [M,K] x [K,N]: 2MNK */
    CHECK(flops_of("aten::mm", 2, (int[]){2, 2}, (int64_t[3][4]){{8192, 4096}, {4096, 1536}}) == 2.0 * 8192 * 4096 * 1536);
    CHECK(flops_of("aten::mm", 2, (int[]){2, 2}, (int64_t[3][4]){{8192, 4096}, {4095, 1536}}) < 0); /* K differs */
    /* addmm(bias, A, B) */
    CHECK(flops_of("aten::addmm", 3, (int[]){1, 2, 2}, (int64_t[3][4]){{1536}, {100, 64}, {64, 1536}}) ==
          2.0 * 100 * 64 * 1536);
    /* bmm, baddbmm(input, A, B): batched */
    CHECK(flops_of("aten::bmm", 2, (int[]){3, 3}, (int64_t[3][4]){{32, 2048, 64}, {32, 64, 2048}}) ==
          2.0 * 32 * 2048 * 2048 * 64);
    CHECK(flops_of("aten::baddbmm", 3, (int[]){3, 3, 3},
                   (int64_t[3][4]){{32, 2048, 2048}, {32, 2048, 64}, {32, 64, 2048}}) == 2.0 * 32 * 2048 * 2048 * 64);
    CHECK(flops_of("aten::bmm", 2, (int[]){3, 3}, (int64_t[3][4]){{32, 2048, 64}, {16, 64, 2048}}) < 0); /* batch */
    /* matmul: [2048,4,4096] x [4096,1536] = 8192 rows */
    CHECK(flops_of("aten::matmul", 2, (int[]){3, 2}, (int64_t[3][4]){{2048, 4, 4096}, {4096, 1536}}) ==
          2.0 * 8192 * 4096 * 1536);
    /* matmul broadcasting [2,1,5,6] x [3,6,7]: batch 2x3, 5x6 . 6x7 */
    CHECK(flops_of("aten::matmul", 2, (int[]){4, 3}, (int64_t[3][4]){{2, 1, 5, 6}, {3, 6, 7}}) == 2.0 * 6 * 5 * 7 * 6);
    /* matmul with a vector: [5,6] x [6] */
    CHECK(flops_of("aten::matmul", 2, (int[]){2, 1}, (int64_t[3][4]){{5, 6}, {6}}) == 2.0 * 5 * 6);
    CHECK(flops_of("aten::matmul", 2, (int[]){3, 3}, (int64_t[3][4]){{2, 5, 6}, {3, 6, 7}}) < 0); /* 2 vs 3 */
    /* linear: input [..., K], weight [N, K] */
    CHECK(flops_of("aten::linear", 3, (int[]){3, 2, 1}, (int64_t[3][4]){{2, 2048, 4096}, {1024, 4096}, {1024}}) ==
          2.0 * 4096 * 1024 * 4096);
    CHECK(flops_of("aten::linear", 2, (int[]){3, 2}, (int64_t[3][4]){{2, 2048, 4096}, {4096, 1024}}) < 0);
    /* not recorded, not a GEMM, zero size */
    CHECK(flops_of("aten::mm", 0, (int[]){0}, (int64_t[3][4]){{0}}) < 0);
    CHECK(flops_of("aten::add", 2, (int[]){2, 2}, (int64_t[3][4]){{4, 4}, {4, 4}}) < 0);
    CHECK(flops_of("aten::mm", 2, (int[]){2, 2}, (int64_t[3][4]){{0, 4}, {4, 4}}) < 0);
}

static void test_fit(void)
{
    const char *path = LSIM_SOURCE_DIR "/tests/data/calibrate/gemm_curve.json";
    lsim_err err = {0};
    lsim_trace *t = NULL;
    lsim_calib *c = NULL;
    lsim_gpu_spec base, out;
    lsim_calib_report r;
    CHECK(lsim_gpu_spec_builtin("a100", &base, &err) == 0);
    /* the efficiency curve the fixture was generated from, and the ridge
     * point it was laid out for (mem_eff 0.85: 180 FLOP/B) */
    base.sms = 0;
    base.mem_eff = 0.85;
    CHECK_MSG(lsim_trace_read(path, &t, &err) == 0, "%s", err.msg);
    if (!t) return;
    CHECK(t->device_name != UINT32_MAX && strstr(lsim_strtab_get(t->strings, t->device_name), "A100"));
    /* 7 shapes x 3 + matmul/mm + matmul/mm + split mm + bmm + fp32 mm + idle
     * mm, and the aten::copy_ (a memory-bound op, in the same table) */
    CHECK_I64(t->ngemm, 30);
    CHECK(lsim_calib_new(&c, &err) == 0);
    CHECK_MSG(lsim_calib_add_trace(c, t, &err) == 0, "%s", err.msg);
    CHECK_MSG(lsim_calib_fit(c, &base, path, &out, &r, &err) == 0, "%s", err.msg);
    CHECK_I64(r.gemm_ops, 29);
    CHECK_I64(r.gemm_ops_launched, 26);   /* not the outer matmuls, not the idle mm */
    CHECK_I64(r.gemm_kernels, 27);        /* the split mm's two; not the copy, not the stray launch */
    CHECK_I64(r.gemm_points, 24);         /* 21 + 2 nested mm + split mm */
    CHECK_I64(r.gemm_skipped_membound, 1);
    CHECK_I64(r.gemm_skipped_dtype, 1);
    CHECK_I64(r.gemm_elem_bytes, 2);
    CHECK_I64(r.gemm_mode, 2);
    CHECK_MSG(near(out.gemm_eff_max, 0.7, 0.02), "eff_max %g, want 0.7", out.gemm_eff_max);
    CHECK_MSG(near(out.gemm_eff_half, 5e9, 0.03), "eff_half %g, want 5e9", out.gemm_eff_half);
    CHECK(r.gemm_max_rel_residual < 0.01);
    /* the 1536^3 split mm: its two kernels add up to the curve's time */
    int seen = 0;
    for (size_t i = 0; i < r.nshapes; i++)
        if (r.shapes[i].m == 1536) {
            seen = 1;
            CHECK(near(r.shapes[i].median_ns, (2.0 * 1536 * 1536 * 1536 + 5e9) / (312e12 * 0.7) * 1e9, 0.001));
        }
    CHECK(seen);
    /* unfitted fields kept (one copy of 40 us cannot constrain mem_eff),
     * launch calls measured (5 us each in the fixture) */
    CHECK(out.mem_eff == base.mem_eff && out.attn_eff_max == base.attn_eff_max && out.peak_flops == base.peak_flops);
    CHECK(!r.mem_fitted);
    CHECK_I64(out.launch_cpu_ns, 5000);
    CHECK_I64(r.launch_calls, 29);
    CHECK(!strcmp(out.name, "a100-cal"));
    /* the spec written loads back with the same values */
    char tmp[] = "/tmp/lsim_calib_XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(fd >= 0);
    if (fd >= 0) {
        FILE *f = fdopen(fd, "w");
        CHECK(lsim_calib_write_gpu(f, &out, "test", &err) == 0);
        fclose(f);
        lsim_gpu_spec back;
        CHECK_MSG(lsim_gpu_spec_load(tmp, &back, &err) == 0, "%s", err.msg);
        CHECK(back.gemm_eff_max == out.gemm_eff_max && back.gemm_eff_half == out.gemm_eff_half &&
              back.kernel_min_ns == out.kernel_min_ns && back.launch_latency_ns == out.launch_latency_ns);
        unlink(tmp);
    }
    /* a spec with FP8 tensor cores keeps its peak_flops_fp8 through the
     * writer (else a calibrated H100 refuses --precision fp8) */
    {
        lsim_gpu_spec h, back;
        CHECK(lsim_gpu_spec_builtin("h100", &h, NULL) == 0);
        char tmp2[] = "/tmp/lsim_calib_XXXXXX";
        int fd2 = mkstemp(tmp2);
        FILE *f = fd2 >= 0 ? fdopen(fd2, "w") : NULL;
        CHECK(f != NULL);
        if (f) {
            CHECK(lsim_calib_write_gpu(f, &h, "test", &err) == 0);
            fclose(f);
            CHECK_MSG(lsim_gpu_spec_load(tmp2, &back, &err) == 0, "%s", err.msg);
            CHECK(back.peak_flops_fp8 == h.peak_flops_fp8 && back.peak_flops_fp8 > 0);
            CHECK(memcmp(&back, &h, sizeof h) == 0);
            unlink(tmp2);
        }
    }
    lsim_calib_free(c);
    lsim_trace_free(t);
}

/* The tile-and-wave fit (a base spec with an SM count) on a fixture made
 * from known parameters (tests/data/calibrate/gen_gemm_waves.py): eff 0.8,
 * 2500 ns per tile; memory-bound ops at 0.6 of the bandwidth; launch calls
 * 45 us apart with 3 stalls of 20 ms in 101 gaps and one 20 ms call; a 3 ms
 * data loader. */
static void test_fit_waves(void)
{
    const char *path = LSIM_SOURCE_DIR "/tests/data/calibrate/gemm_waves.json";
    lsim_err err = {0};
    lsim_trace *t = NULL;
    lsim_calib *c = NULL;
    lsim_gpu_spec base, out;
    lsim_calib_report r;
    CHECK(lsim_gpu_spec_builtin("a100", &base, &err) == 0 && base.sms == 108);
    CHECK_MSG(lsim_trace_read(path, &t, &err) == 0, "%s", err.msg);
    if (!t) return;
    CHECK(lsim_calib_new(&c, &err) == 0);
    CHECK_MSG(lsim_calib_add_trace(c, t, &err) == 0, "%s", err.msg);
    CHECK_MSG(lsim_calib_fit(c, &base, path, &out, &r, &err) == 0, "%s", err.msg);
    CHECK_I64(r.gemm_mode, 4);
    CHECK_I64(r.gemm_points, 42);
    CHECK_MSG(near(out.gemm_eff_max, 0.8, 0.001), "eff_max %g, want 0.8", out.gemm_eff_max);
    CHECK_MSG(llabs(out.gemm_tile_ns - 2500) <= 5, "tile %lld ns, want 2500", (long long)out.gemm_tile_ns);
    CHECK(r.gemm_max_rel_residual < 0.001);
    CHECK(r.mem_fitted && r.mem_ops == 60);
    CHECK_MSG(near(out.mem_eff, 0.6, 0.001), "mem_eff %g, want 0.6", out.mem_eff);
    CHECK(r.dispatch_fitted && r.host_gaps == 101);
    CHECK_I64(out.host_dispatch_ns, 45000);
    /* a stall inside a launch call counts as one between calls: 3 long gaps
     * (19955 us beyond dispatch + call each) and one 20 ms call (19995 us) */
    CHECK_I64(out.launch_cpu_ns, 5000);
    CHECK(r.stall_fitted && r.host_stalls == 4);
    CHECK_MSG(near(out.host_stall_prob, 4.0 / 101, 1e-9), "stall prob %g", out.host_stall_prob);
    CHECK_I64(out.host_stall_ns, 19965000);
    CHECK_I64(out.host_stall_sd_ns, 20000);
    CHECK_I64(out.host_step_ns, 3000000);
    /* with one shape the tile time cannot be separated from the efficiency:
     * kept from the base, eff alone fitted */
    {
        lsim_calib *c1 = NULL;
        lsim_trace *t1 = NULL;
        CHECK(lsim_calib_new(&c1, &err) == 0 && lsim_trace_read(path, &t1, &err) == 0);
        if (c1 && t1) {
            t1->ngemm = 6; /* the first shape's six ops */
            CHECK(lsim_calib_add_trace(c1, t1, &err) == 0);
            CHECK_MSG(lsim_calib_fit(c1, &base, path, &out, &r, &err) == 0, "%s", err.msg);
            CHECK_I64(r.gemm_mode, 3);
            CHECK_I64(out.gemm_tile_ns, base.gemm_tile_ns);
        }
        lsim_trace_free(t1);
        lsim_calib_free(c1);
    }
    /* the spec written loads back with the new keys */
    char tmp[] = "/tmp/lsim_calib_XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(fd >= 0);
    if (fd >= 0) {
        FILE *f = fdopen(fd, "w");
        CHECK(lsim_calib_write_gpu(f, &out, "test", &err) == 0);
        fclose(f);
        lsim_gpu_spec back;
        CHECK_MSG(lsim_gpu_spec_load(tmp, &back, &err) == 0, "%s", err.msg);
        CHECK(back.sms == out.sms && back.gemm_tile_ns == out.gemm_tile_ns && back.host_dispatch_ns == out.host_dispatch_ns &&
              back.host_step_ns == out.host_step_ns && back.mem_capacity == out.mem_capacity);
        unlink(tmp);
    }
    lsim_calib_free(c);
    lsim_trace_free(t);
}

static void test_no_gemm(void)
{
    lsim_err err = {0};
    lsim_trace *t = NULL;
    lsim_calib *c = NULL;
    lsim_gpu_spec base, out;
    CHECK(lsim_gpu_spec_builtin("a100", &base, &err) == 0);
    CHECK(lsim_trace_read(LSIM_SOURCE_DIR "/tests/data/cuda_graph.json", &t, &err) == 0);
    if (!t) return;
    CHECK(lsim_calib_new(&c, &err) == 0);
    CHECK(lsim_calib_add_trace(c, t, &err) == 0);
    CHECK(lsim_calib_fit(c, &base, "X.json", &out, NULL, &err) == LSIM_ETRACE);
    CHECK(!strncmp(err.msg, "X.json: no GEMM kernel", 22));
    lsim_calib_free(c);
    lsim_trace_free(t);
}

/* nccl-tests fits onto the topology; expected values by hand from the
 * fixtures' generating parameters and the A100 default topology
 * (intra_lat 600 ns, coll_base 6600 ns, 8 GPUs per node). */
static void test_topology(void)
{
    lsim_err err = {0};
    lsim_gpu_spec base, out;
    lsim_topology tb, to;
    CHECK(lsim_gpu_spec_builtin("a100", &base, &err) == 0);
    lsim_topology_default(&base, &tb);
    lsim_trace *t = NULL;
    CHECK(lsim_trace_read(LSIM_SOURCE_DIR "/tests/data/calibrate/gemm_curve.json", &t, &err) == 0);
    if (!t) return;
    /* all_reduce over 16 ranks on 2 nodes, t = 25 us + size / 80e9: busbw =
     * 80e9 * 2 * 15/16 = 150e9 -> inter_bw = 150e9 / 8 = 18.75e9;
     * inter_lat = (25000 - 6600 - (30 - 2) * 600) / 2 = 800 ns */
    {
        lsim_calib *c = NULL;
        lsim_coll_fit f;
        int changed = 0;
        CHECK(lsim_calib_new(&c, &err) == 0);
        CHECK(lsim_calib_add_trace(c, t, &err) == 0);
        CHECK_MSG(lsim_cost_fit_nccl_tests(LSIM_SOURCE_DIR "/tests/data/nccl_tests/all_reduce_perf_2x8_h100.txt", &f,
                                           &err) == 0, "%s", err.msg);
        CHECK(lsim_calib_add_nccl_fit(c, &f, "all_reduce_perf_2x8_h100.txt", &err) == 0);
        CHECK(lsim_calib_fit(c, &base, "x", &out, NULL, &err) == 0);
        lsim_calib_topology(c, &tb, &to, &changed);
        CHECK_I64(changed, 2);
        CHECK_MSG(near(to.inter_bw, 18.75e9, 0.02), "inter_bw %g", to.inter_bw);
        CHECK_MSG(llabs((long long)to.inter_lat_ns - 800) <= 300, "inter_lat %lld", (long long)to.inter_lat_ns);
        CHECK(to.intra_bw == tb.intra_bw && to.coll_base_ns == tb.coll_base_ns && to.algo == LSIM_ALGO_RING);
        lsim_calib_free(c);
    }
    /* all_gather over 8 ranks (one node), t = 40 us + size / 20e9, size =
     * the gathered output: busbw = 20e9 * 7/8 = 17.5e9 = intra_bw;
     * coll_base = 40000 - 7 * 600 = 35800 ns */
    {
        lsim_calib *c = NULL;
        lsim_coll_fit f;
        int changed = 0;
        CHECK(lsim_calib_new(&c, &err) == 0);
        CHECK(lsim_calib_add_trace(c, t, &err) == 0);
        CHECK(lsim_cost_fit_nccl_tests(LSIM_SOURCE_DIR "/tests/data/nccl_tests/all_gather_perf.txt", &f, &err) == 0);
        CHECK(lsim_calib_add_nccl_fit(c, &f, "all_gather_perf.txt", &err) == 0);
        CHECK(lsim_calib_fit(c, &base, "x", &out, NULL, &err) == 0);
        lsim_calib_topology(c, &tb, &to, &changed);
        CHECK_I64(changed, 3);
        CHECK_MSG(near(to.intra_bw, 17.5e9, 0.02), "intra_bw %g", to.intra_bw);
        CHECK_MSG(llabs((long long)to.coll_base_ns - 35800) <= 800, "coll_base %lld", (long long)to.coll_base_ns);
        CHECK(to.intra_lat_ns == tb.intra_lat_ns && to.inter_bw == tb.inter_bw);
        lsim_calib_free(c);
    }
    lsim_trace_free(t);
}

int main(void)
{
    test_flops();
    test_fit();
    test_fit_waves();
    test_no_gemm();
    test_topology();
    return check_result("test_calibrate");
}
