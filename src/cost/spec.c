/* GPU and topology parameters: the built-in GPU table, the JSON loaders and
 * the DGX-like default topology (include/lumosim/cost.h; the schema and the
 * source of every number are in docs/cost-models.md).
 *
 * Both loaders are driven by one table of keys per schema, so that every key
 * gets the same checks (type, range, duplicates, unknown, missing) and the
 * message always has the form "PATH: key K: what is wrong". */
#include "lumosim/cost.h"
#include "lumosim/alloc.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lumosim/input.h"

/* Keep in sync with data/gpu/NAME.json (test_cost compares them). */
/* name, peak_flops, mem_bw, gemm_eff_max, gemm_eff_half, attn_eff_max,
 * attn_eff_half, mem_eff, kernel_min_ns, launch_cpu_ns, launch_latency_ns,
 * sms, gemm_tile_ns, mem_capacity, host_dispatch_ns, host_step_ns,
 * host_opt_ns, host_stall_prob, host_stall_ns, host_stall_sd_ns, peak_flops_fp8,
 * attn_fa2_eff_max, attn_fa2_eff_half, attn_fa3_eff_max, attn_fa3_eff_half,
 * attn_bwd_eff_max, attn_bwd_eff_half, then the same for FA2's and FA3's
 * backward. The FlashAttention curves of the Hopper parts are fits to Shah
 * et al. 2024 (FlashAttention-3) on an H100 SXM5, head dim 128, as
 * fractions of the part's peak: the forward to Figure 5 with causal mask
 * (FA2 191-335, FA3 292-616 TFLOP/s over sequences 512-16k), the backward
 * to Figure 6 (no mask: FA2 214-322, FA3 316-561), every point within 3.2 %. */
#define HOPPER_FA 0.354, 2.7e10, 0.662, 4.04e10, 0, 0, 0.333, 9.18e10, 0.598, 1.43e11
#define NO_FA 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 /* not measured on the part */
static const lsim_gpu_spec BUILTIN[] = {
    {"h100", 989.4e12, 3.35e12, 0.80, 2.0e9, 0.50, 4.0e9, 0.85, 2000, 4000, 6000, 132, 3300, 80e9, 0, 0, 0, 0, 0, 0, 1979e12,
     HOPPER_FA},
    {"a100", 312.0e12, 2.039e12, 0.895, 1.0e9, 0.65, 2.0e9, 0.563, 1000, 11000, 12000, 108, 3220, 80e9, 198500, 2304500, 0,
     0, 0, 0, 0, NO_FA},
    {"h200", 989.4e12, 4.8e12, 0.80, 2.0e9, 0.50, 4.0e9, 0.85, 2000, 4000, 6000, 132, 3300, 141e9, 0, 0, 0, 0, 0, 0, 1979e12,
     HOPPER_FA},
    {"h100-96gb", 886.8e12, 2.4e12, 0.80, 2.0e9, 0.50, 4.0e9, 0.85, 2000, 4000, 6000, 132, 3300, 96e9, 0, 0, 0, 0, 0, 0,
     1773.3e12, HOPPER_FA},
    {"b200", 2250e12, 7.7e12, 0.80, 2.0e9, 0.50, 4.0e9, 0.85, 2000, 4000, 6000, 148, 3300, 180e9, 0, 0, 0, 0, 0, 0, 4500e12, NO_FA},
    {"gb200", 2500e12, 8.0e12, 0.80, 2.0e9, 0.50, 4.0e9, 0.85, 2000, 4000, 6000, 148, 3300, 186e9, 0, 0, 0, 0, 0, 0, 5000e12, NO_FA},
};
#define NBUILTIN (sizeof BUILTIN / sizeof *BUILTIN)

/* A parameter file is a few hundred bytes; refuse to slurp anything huge. */
#define FILE_MAX (1 << 20)

static int name_eq(const char *a, const char *b);

const char *lsim_coll_proto_name(lsim_coll_proto p)
{
    return p == LSIM_PROTO_LL ? "ll" : p == LSIM_PROTO_LL128 ? "ll128" : p == LSIM_PROTO_SIMPLE ? "simple" : "auto";
}

int lsim_coll_proto_parse(const char *s, lsim_coll_proto *out)
{
    for (int p = LSIM_PROTO_AUTO; p <= LSIM_PROTO_SIMPLE; p++)
        if (s && name_eq(s, lsim_coll_proto_name((lsim_coll_proto)p))) {
            *out = (lsim_coll_proto)p;
            return 0;
        }
    return LSIM_EARG;
}

const char *lsim_coll_algo_name(lsim_coll_algo a)
{
    switch (a) {
    case LSIM_ALGO_RING: return "ring";
    case LSIM_ALGO_TREE: return "tree";
    default: return "auto";
    }
}

static int name_eq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

int lsim_gpu_spec_builtin(const char *name, lsim_gpu_spec *out, lsim_err *err)
{
    for (size_t i = 0; name && i < NBUILTIN; i++)
        if (name_eq(name, BUILTIN[i].name)) {
            *out = BUILTIN[i];
            return 0;
        }
    return lsim_err_set(err, LSIM_EARG, "unknown GPU \"%s\" (known: h100, a100, h200, h100-96gb, b200, gb200)",
                        name ? name : "(null)");
}

/* ---- one table-driven JSON object reader for both schemas ---- */

/* K_FRAC: a probability in [0, 1); K_SOURCES: an object whose members name
 * keys of the same schema and say, as strings, where each value comes from
 * (a datasheet, a fit: documentation the spec file carries with it). */
/* K_BOOL: true or false, stored as int; K_PROTO: a protocol name. */
typedef enum { K_NAME, K_POS, K_EFF, K_NS_POS, K_NS_NONNEG, K_INT_POS, K_ALGO, K_TEXT, K_FRAC, K_SOURCES, K_BOOL, K_PROTO } key_rule;

/* A number's accepted range [lo, hi] is physical, not just "positive": a
 * value in the wrong unit (peak_flops 989.4, i.e. TFLOP/s, gives a window
 * of 9.2e12 ms) must be refused, not simulated. Each table entry below
 * says why its range is what it is; docs/cost-models.md lists them. The
 * ns keys' upper bounds also keep every sum of a few of them far from
 * int64's end. */
typedef struct key_desc {
    const char *key;
    key_rule rule;
    int required;
    size_t off;       /* offset in the output struct; unused for K_TEXT */
    double lo, hi;    /* numbers: the accepted range (K_EFF: (0, 1], fixed) */
    const char *unit; /* numbers: the unit, and what is meant, for the message */
} key_desc;

static int check_number(const char *label, const key_desc *d, double v, lsim_err *err)
{
    const char *key = d->key;
    if (!isfinite(v)) return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: not a finite number", label, key);
    switch (d->rule) {
    case K_POS:
        /* a zero bandwidth is as likely a unit slip as a typo: say the unit */
        if (v <= 0)
            return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: %g is not positive%s%s%s", label, key, v,
                                d->unit ? " (expected " : "", d->unit ? d->unit : "", d->unit ? ")" : "");
        break;
    case K_EFF:
        if (v <= 0 || v > 1)
            return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: efficiency %g is outside (0,1]", label, key, v);
        return 0;
    case K_NS_POS:
    case K_NS_NONNEG:
        /* whole nanoseconds: a positive time must not round to 0 */
        if (d->rule == K_NS_POS ? v < 1 : v < 0)
            return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: %g ns is not %s", label, key, v,
                                d->rule == K_NS_POS ? "positive (at least 1 ns)" : "zero or positive");
        break;
    case K_FRAC:
        if (v < 0 || v >= 1)
            return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: probability %g is outside [0,1)", label, key, v);
        return 0;
    case K_INT_POS:
        if (v < d->lo || v > d->hi || v != floor(v))
            return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: %g is not a positive integer (at most %.0f)", label,
                                key, v, d->hi);
        return 0;
    default: return 0;
    }
    if (v < d->lo || v > d->hi)
        return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: %g is outside the range %g..%g of %s", label, key, v, d->lo,
                            d->hi, d->unit);
    return 0;
}

/* Parse `text` as one JSON object whose keys are all in `keys`, storing the
 * values into `dst` at each key's offset. dst is only written after every
 * check passed, through a scratch copy of `size` bytes. */
/* The most keys a schema has (GPU_KEYS: 36): read_object's seen flags. */
#define MAX_KEYS 64

static int read_object(const char *label, const char *text, size_t len, const key_desc *keys, size_t nkeys,
                       void *dst, size_t size, lsim_err *err)
{
    int rc = 0;
    unsigned char seen[MAX_KEYS] = {0}; /* every schema's keys (checked where the tables are) */
    unsigned char *tmp = NULL;
    cJSON *doc = cJSON_ParseWithLength(text, len);
    if (!doc) {
        const char *at = cJSON_GetErrorPtr();
        long pos = at && at >= text && at <= text + len ? (long)(at - text) : -1;
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: not valid JSON (error near byte %ld)", label, pos);
        goto cleanup;
    }
    if (!cJSON_IsObject(doc)) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: not a JSON object", label);
        goto cleanup;
    }
    tmp = lsim_malloc(size);
    if (!tmp) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", label);
        goto cleanup;
    }
    memcpy(tmp, dst, size);
    for (const cJSON *it = doc->child; it; it = it->next) {
        size_t k = 0;
        while (k < nkeys && strcmp(keys[k].key, it->string ? it->string : "") != 0) k++;
        if (k == nkeys) {
            char known[512] = "";
            for (size_t j = 0; j < nkeys; j++) {
                size_t used = strlen(known);
                snprintf(known + used, sizeof known - used, "%s%s", j ? ", " : "", keys[j].key);
            }
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %.64s: unknown key (known: %s)", label,
                              it->string ? it->string : "", known);
            goto cleanup;
        }
        const key_desc *d = &keys[k];
        if (seen[k]) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: appears twice", label, d->key);
            goto cleanup;
        }
        seen[k] = 1;
        if (d->rule == K_SOURCES) {
            /* documentation only: every member a string about a key of this schema */
            if (!cJSON_IsObject(it)) {
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: wrong type (expected an object of strings)", label,
                                  d->key);
                goto cleanup;
            }
            for (const cJSON *m = it->child; m; m = m->next) {
                size_t j = 0;
                while (j < nkeys && strcmp(keys[j].key, m->string ? m->string : "") != 0) j++;
                if (j == nkeys || !cJSON_IsString(m)) {
                    rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: member %.64s is %s", label, d->key,
                                      m->string ? m->string : "", j == nkeys ? "not a key of this file" : "not a string");
                    goto cleanup;
                }
            }
            continue;
        }
        if (d->rule == K_BOOL) {
            if (!cJSON_IsBool(it)) {
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: wrong type (expected true or false)", label, d->key);
                goto cleanup;
            }
            int b = cJSON_IsTrue(it) ? 1 : 0;
            memcpy(tmp + d->off, &b, sizeof b);
            continue;
        }
        int want_string = d->rule == K_NAME || d->rule == K_ALGO || d->rule == K_TEXT || d->rule == K_PROTO;
        if (want_string ? !cJSON_IsString(it) : !cJSON_IsNumber(it)) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: wrong type (expected a %s)", label, d->key,
                              want_string ? "string" : "number");
            goto cleanup;
        }
        unsigned char *p = tmp + d->off;
        if (d->rule == K_TEXT) continue;
        if (d->rule == K_NAME) {
            size_t n = strlen(it->valuestring);
            if (n == 0 || n >= 32) {
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: must have 1 to 31 characters", label, d->key);
                goto cleanup;
            }
            memcpy(p, it->valuestring, n + 1);
        } else if (d->rule == K_ALGO) {
            lsim_coll_algo a;
            if (name_eq(it->valuestring, "auto")) a = LSIM_ALGO_AUTO;
            else if (name_eq(it->valuestring, "ring")) a = LSIM_ALGO_RING;
            else if (name_eq(it->valuestring, "tree")) a = LSIM_ALGO_TREE;
            else {
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: \"%.32s\" is not auto, ring or tree", label,
                                  d->key, it->valuestring);
                goto cleanup;
            }
            memcpy(p, &a, sizeof a);
        } else if (d->rule == K_PROTO) {
            lsim_coll_proto q = LSIM_PROTO_AUTO;
            if (lsim_coll_proto_parse(it->valuestring, &q)) {
                rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: \"%.32s\" is not auto, ll, ll128 or simple", label,
                                  d->key, it->valuestring);
                goto cleanup;
            }
            memcpy(p, &q, sizeof q);
        } else {
            double v = it->valuedouble;
            if ((rc = check_number(label, d, v, err))) goto cleanup;
            if (d->rule == K_NS_POS || d->rule == K_NS_NONNEG) {
                lsim_ns ns = (lsim_ns)llround(v);
                memcpy(p, &ns, sizeof ns);
            } else if (d->rule == K_INT_POS) {
                int iv = (int)v;
                memcpy(p, &iv, sizeof iv);
            } else {
                memcpy(p, &v, sizeof v);
            }
        }
    }
    for (size_t k = 0; k < nkeys; k++)
        if (keys[k].required && !seen[k]) {
            rc = lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: missing (required)", label, keys[k].key);
            goto cleanup;
        }
    memcpy(dst, tmp, size);
cleanup:
    free(tmp);
    cJSON_Delete(doc);
    return rc;
}

/* Whole file into a NUL-terminated buffer the caller frees. */
static int slurp(const char *path, char **buf, size_t *len, lsim_err *err)
{
    int rc = 0;
    char *b = NULL;
    size_t n = 0;
    FILE *f = NULL;
    if ((rc = lsim_input_fopen(path, &f, err))) goto cleanup; /* a FIFO: refused, never waited on */
    b = lsim_malloc(FILE_MAX + 1);
    if (!b) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    n = fread(b, 1, FILE_MAX + 1, f);
    if (ferror(f)) {
        rc = lsim_err_set(err, LSIM_EIO, "%s: read error", path);
        goto cleanup;
    }
    if (n > FILE_MAX) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: larger than %d bytes: not a parameter file", path, FILE_MAX);
        goto cleanup;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    b = NULL;
cleanup:
    free(b);
    if (f) fclose(f);
    return rc;
}

/* The ranges (docs/cost-models.md, "Ranges"):
 * - peak_flops 1e11..1e17 FLOP/s: dense FP16/BF16 tensor throughput runs
 *   from about 1e13 (a V100 is 1.25e14) to 2.25e15 (B200); 1e11 and 1e17
 *   leave two orders of magnitude either way. TFLOP/s (989.4) is refused.
 * - mem_bw 1e9..1e14 B/s: HBM is 9e11 (V100) to 8e12 (B200); GB/s (3350)
 *   is refused.
 * - gemm_eff_half, attn_eff_half 1..1e15 FLOP: the size of a GEMM or
 *   attention call at half its best efficiency, about 1e9 to 1e10 measured
 *   (docs/cost-models.md); 1e15 FLOP is a 100,000-cube GEMM.
 * - kernel_min_ns, launch_cpu_ns, launch_latency_ns 1..1e7 ns: measured
 *   2 to 10 us; a floor or launch cost of 10 ms is a stalled process, not
 *   a GPU parameter.
 * - gpus_per_node 1..1e6: one NVLink domain (8 in a DGX, 72 in an NVL72).
 * - intra_bw, inter_bw 1e6..1e14 B/s per GPU and direction: 1 MB/s is
 *   below any datacenter link, 100 TB/s is 100x NVLink5's 9e11; GB/s or
 *   Gb/s figures (450, 400) are refused.
 * - intra_lat_ns, inter_lat_ns, coll_base_ns 0..1e8 ns: NCCL's are 0.6 to
 *   7 us; 0.1 s is a wide-area round trip. */
static const key_desc GPU_KEYS[] = {
    {"name", K_NAME, 1, offsetof(lsim_gpu_spec, name), 0, 0, NULL},
    {"description", K_TEXT, 0, 0, 0, 0, NULL},
    {"peak_flops", K_POS, 1, offsetof(lsim_gpu_spec, peak_flops), 1e11, 1e17,
     "FLOP/s (dense FP16/BF16 tensor FLOP per second: 989.4e12 for an H100, not TFLOP/s)"},
    {"mem_bw", K_POS, 1, offsetof(lsim_gpu_spec, mem_bw), 1e9, 1e14,
     "bytes/s (HBM bandwidth: 3.35e12 for an H100, not GB/s)"},
    {"gemm_eff_max", K_EFF, 1, offsetof(lsim_gpu_spec, gemm_eff_max), 0, 1, NULL},
    {"gemm_eff_half", K_POS, 1, offsetof(lsim_gpu_spec, gemm_eff_half), 1, 1e15,
     "FLOP (the GEMM size at half efficiency: 2e9 for an H100)"},
    {"attn_eff_max", K_EFF, 1, offsetof(lsim_gpu_spec, attn_eff_max), 0, 1, NULL},
    {"attn_eff_half", K_POS, 1, offsetof(lsim_gpu_spec, attn_eff_half), 1, 1e15,
     "FLOP (the attention size at half efficiency: 4e9 for an H100)"},
    {"mem_eff", K_EFF, 1, offsetof(lsim_gpu_spec, mem_eff), 0, 1, NULL},
    {"kernel_min_ns", K_NS_POS, 1, offsetof(lsim_gpu_spec, kernel_min_ns), 1, 1e7, "ns (the shortest kernel: 2000)"},
    {"launch_cpu_ns", K_NS_POS, 1, offsetof(lsim_gpu_spec, launch_cpu_ns), 1, 1e7, "ns (a launch call: 4000)"},
    {"launch_latency_ns", K_NS_POS, 1, offsetof(lsim_gpu_spec, launch_latency_ns), 1, 1e7,
     "ns (launch to kernel start: 6000)"},
    /* optional (absent: 0, the feature off); the ranges:
     * - sms 1..100000: 108 (A100) to 148 (B200) today; a count in the
     *   hundreds of thousands is not one GPU.
     * - gemm_tile_ns 0..1e6 ns: a tile's prologue and epilogue take a few
     *   microseconds (fitted 3.3 us on A100); 1 ms per tile is no GEMM.
     * - mem_capacity 1e8..1e13 bytes: 16 GB (V100) to 192 GB (B200); GB
     *   (80) is refused.
     * - host_dispatch_ns 0..1e7 ns: tens to hundreds of microseconds of
     *   framework time per kernel are measured; 10 ms is a stalled process.
     * - host_step_ns, host_opt_ns 0..1e10 ns: data loading and the
     *   optimizer's CPU time take milliseconds to a few hundred ms (the
     *   shared traces: 0.05-2.2 ms and 0.3-209 ms); 10 s per step is a
     *   stall, not a training step.
     * - host_stall_prob [0,1): a probability; host_stall_ns 0..1e10 ns as
     *   host_step_ns. */
    {"sms", K_INT_POS, 0, offsetof(lsim_gpu_spec, sms), 1, 1e5, NULL},
    {"gemm_tile_ns", K_NS_NONNEG, 0, offsetof(lsim_gpu_spec, gemm_tile_ns), 0, 1e6,
     "ns (a GEMM tile's fixed time: about 3300 on an A100)"},
    {"mem_capacity", K_POS, 0, offsetof(lsim_gpu_spec, mem_capacity), 1e8, 1e13,
     "bytes (device memory: 80e9 for an 80 GB GPU, not GB)"},
    {"host_dispatch_ns", K_NS_NONNEG, 0, offsetof(lsim_gpu_spec, host_dispatch_ns), 0, 1e7,
     "ns (framework time per kernel launch)"},
    {"host_step_ns", K_NS_NONNEG, 0, offsetof(lsim_gpu_spec, host_step_ns), 0, 1e10,
     "ns (CPU time at the start of a step)"},
    {"host_opt_ns", K_NS_NONNEG, 0, offsetof(lsim_gpu_spec, host_opt_ns), 0, 1e10,
     "ns (the optimizer step's CPU time)"},
    {"host_stall_prob", K_FRAC, 0, offsetof(lsim_gpu_spec, host_stall_prob), 0, 1, NULL},
    {"host_stall_ns", K_NS_NONNEG, 0, offsetof(lsim_gpu_spec, host_stall_ns), 0, 1e10,
     "ns (the mean length of a host stall)"},
    {"host_stall_sd_ns", K_NS_NONNEG, 0, offsetof(lsim_gpu_spec, host_stall_sd_ns), 0, 1e10,
     "ns (the standard deviation of a host stall's length)"},
    /* peak_flops_fp8 as peak_flops: dense FP8 tensor throughput (1979e12
     * for an H100 SXM, 4.5e15 for a B200); absent: no FP8 tensor cores
     * (A100), --precision fp8 refused */
    {"peak_flops_fp8", K_POS, 0, offsetof(lsim_gpu_spec, peak_flops_fp8), 1e11, 1e17,
     "FLOP/s (dense FP8 tensor FLOP per second: 1979e12 for an H100, not TFLOP/s)"},
    /* named attention kernels' curves, as attn_eff_max / attn_eff_half */
    {"attn_fa2_eff_max", K_EFF, 0, offsetof(lsim_gpu_spec, attn_fa2_eff_max), 0, 1, NULL},
    {"attn_fa2_eff_half", K_POS, 0, offsetof(lsim_gpu_spec, attn_fa2_eff_half), 1, 1e15,
     "FLOP (FlashAttention-2's attention size at half efficiency)"},
    {"attn_fa3_eff_max", K_EFF, 0, offsetof(lsim_gpu_spec, attn_fa3_eff_max), 0, 1, NULL},
    {"attn_fa3_eff_half", K_POS, 0, offsetof(lsim_gpu_spec, attn_fa3_eff_half), 1, 1e15,
     "FLOP (FlashAttention-3's attention size at half efficiency)"},
    {"attn_bwd_eff_max", K_EFF, 0, offsetof(lsim_gpu_spec, attn_bwd_eff_max), 0, 1, NULL},
    {"attn_bwd_eff_half", K_POS, 0, offsetof(lsim_gpu_spec, attn_bwd_eff_half), 1, 1e15,
     "FLOP (the attention backward's size at half efficiency)"},
    {"attn_fa2_bwd_eff_max", K_EFF, 0, offsetof(lsim_gpu_spec, attn_fa2_bwd_eff_max), 0, 1, NULL},
    {"attn_fa2_bwd_eff_half", K_POS, 0, offsetof(lsim_gpu_spec, attn_fa2_bwd_eff_half), 1, 1e15,
     "FLOP (FlashAttention-2's backward size at half efficiency)"},
    {"attn_fa3_bwd_eff_max", K_EFF, 0, offsetof(lsim_gpu_spec, attn_fa3_bwd_eff_max), 0, 1, NULL},
    {"attn_fa3_bwd_eff_half", K_POS, 0, offsetof(lsim_gpu_spec, attn_fa3_bwd_eff_half), 1, 1e15,
     "FLOP (FlashAttention-3's backward size at half efficiency)"},
    {"sources", K_SOURCES, 0, 0, 0, 0, NULL},
};

_Static_assert(sizeof GPU_KEYS / sizeof *GPU_KEYS <= MAX_KEYS, "GPU_KEYS outgrew read_object's flags");

static const key_desc TOPO_KEYS[] = {
    {"name", K_TEXT, 0, 0, 0, 0, NULL},
    {"description", K_TEXT, 0, 0, 0, 0, NULL},
    {"gpus_per_node", K_INT_POS, 1, offsetof(lsim_topology, gpus_per_node), 1, 1e6, NULL},
    {"intra_bw", K_POS, 1, offsetof(lsim_topology, intra_bw), 1e6, 1e14,
     "bytes/s (per GPU and direction inside a node: 450e9 for NVLink4, not GB/s)"},
    {"intra_lat_ns", K_NS_NONNEG, 1, offsetof(lsim_topology, intra_lat_ns), 0, 1e8, "ns (per step: 600 on NVLink)"},
    {"inter_bw", K_POS, 1, offsetof(lsim_topology, inter_bw), 1e6, 1e14,
     "bytes/s (per GPU and direction across nodes: 50e9 for a 400 Gb/s NIC, not Gb/s)"},
    {"inter_lat_ns", K_NS_NONNEG, 1, offsetof(lsim_topology, inter_lat_ns), 0, 1e8, "ns (per step: 2700 on InfiniBand)"},
    {"algo", K_ALGO, 0, offsetof(lsim_topology, algo), 0, 0, NULL},
    {"coll_base_ns", K_NS_NONNEG, 0, offsetof(lsim_topology, coll_base_ns), 0, 1e8, "ns (fixed cost per call: 6600)"},
    /* The NCCL model (cost.h; docs/cost-models.md "NCCL's choice"), from
     * index 9 in lsim_topology_check's order. Efficiencies (0,1]: achieved
     * fractions of line rate; step latencies 0..1e8 ns as the others;
     * nodes_per_leaf as gpus_per_node; oversubscription 1..1e3: a fat tree's
     * uplinks are at most its downlinks (1), 1000:1 is no datacenter fabric. */
    {"ring_eff", K_EFF, 0, offsetof(lsim_topology, ring_eff), 0, 1, NULL},
    {"tree_eff", K_EFF, 0, offsetof(lsim_topology, tree_eff), 0, 1, NULL},
    {"a2a_eff", K_EFF, 0, offsetof(lsim_topology, a2a_eff), 0, 1, NULL},
    {"ring_step_ns", K_NS_NONNEG, 0, offsetof(lsim_topology, ring_step_ns), 0, 1e8, "ns (per ring step)"},
    {"tree_hop_ns", K_NS_NONNEG, 0, offsetof(lsim_topology, tree_hop_ns), 0, 1e8, "ns (per tree hop)"},
    {"a2a_peer_ns", K_NS_NONNEG, 0, offsetof(lsim_topology, a2a_peer_ns), 0, 1e8, "ns (per remote peer)"},
    {"nodes_per_leaf", K_INT_POS, 0, offsetof(lsim_topology, nodes_per_leaf), 1, 1e6, NULL},
    {"oversubscription", K_POS, 0, offsetof(lsim_topology, oversubscription), 1, 1e3,
     "a ratio of a leaf's downlink to uplink bandwidth, at least 1"},
    {"nccl_tuning", K_BOOL, 0, offsetof(lsim_topology, nccl_tuning), 0, 0, NULL},
    {"proto", K_PROTO, 0, offsetof(lsim_topology, proto), 0, 0, NULL},
    /* link_sharing (netshare.h): concurrent transfers share the NICs and
     * the leaves' uplinks in lumosim sim --link-sharing, so a collective's
     * own time leaves the oversubscribed spine to that model */
    {"link_sharing", K_BOOL, 0, offsetof(lsim_topology, link_sharing), 0, 0, NULL},
    /* ecmp_paths 1..1024: equal-cost paths up from a leaf (a leaf switch
     * with more spine ports than 1024 is no switch sold) */
    {"ecmp_paths", K_INT_POS, 0, offsetof(lsim_topology, ecmp_paths), 1, 1024, NULL},
    {"sources", K_SOURCES, 0, 0, 0, 0, NULL},
};
_Static_assert(sizeof TOPO_KEYS / sizeof *TOPO_KEYS <= MAX_KEYS, "TOPO_KEYS outgrew read_object's flags");

int lsim_gpu_spec_load(const char *path, lsim_gpu_spec *out, lsim_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    lsim_gpu_spec g;
    memset(&g, 0, sizeof g);
    int rc = slurp(path, &buf, &len, err);
    if (rc) goto cleanup;
    rc = read_object(path, buf, len, GPU_KEYS, sizeof GPU_KEYS / sizeof *GPU_KEYS, &g, sizeof g, err);
    if (rc) goto cleanup;
    *out = g;
cleanup:
    free(buf);
    return rc;
}

int lsim_gpu_spec_check(const lsim_gpu_spec *g, const char *label, lsim_err *err)
{
    /* The same rules as the loader, but LSIM_EARG: the caller built it. */
    lsim_err e = {0};
    int rc = 0;
    if (!g) return lsim_err_set(err, LSIM_EARG, "%s: no GPU spec", label);
    if (!memchr(g->name, '\0', sizeof g->name) || !g->name[0])
        return lsim_err_set(err, LSIM_EARG, "%s: key name: must have 1 to 31 characters", label);
    const double nums[] = {g->peak_flops, g->mem_bw, g->gemm_eff_max, g->gemm_eff_half, g->attn_eff_max,
                           g->attn_eff_half, g->mem_eff, (double)g->kernel_min_ns, (double)g->launch_cpu_ns,
                           (double)g->launch_latency_ns,
                           /* optional keys, in GPU_KEYS order: 0 is "not given" */
                           (double)g->sms, (double)g->gemm_tile_ns, g->mem_capacity, (double)g->host_dispatch_ns,
                           (double)g->host_step_ns, (double)g->host_opt_ns, g->host_stall_prob,
                           (double)g->host_stall_ns, (double)g->host_stall_sd_ns, g->peak_flops_fp8,
                           g->attn_fa2_eff_max, g->attn_fa2_eff_half, g->attn_fa3_eff_max, g->attn_fa3_eff_half,
                           g->attn_bwd_eff_max, g->attn_bwd_eff_half, g->attn_fa2_bwd_eff_max, g->attn_fa2_bwd_eff_half,
                           g->attn_fa3_bwd_eff_max, g->attn_fa3_bwd_eff_half};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        if (!GPU_KEYS[i + 2].required && nums[i] == 0) continue;
        if ((rc = check_number(label, &GPU_KEYS[i + 2], nums[i], &e)))
            return lsim_err_set(err, LSIM_EARG, "%s", e.msg);
    }
    return 0;
}

int lsim_topology_check(const lsim_topology *t, const char *label, lsim_err *err)
{
    /* The same rules as the loader, but LSIM_EARG: the caller built it
     * (lumosim calibrate --topology-out). TOPO_KEYS from index 2 in order. */
    lsim_err e = {0};
    if (!t) return lsim_err_set(err, LSIM_EARG, "%s: no topology", label);
    const double nums[] = {(double)t->gpus_per_node, t->intra_bw, (double)t->intra_lat_ns, t->inter_bw,
                           (double)t->inter_lat_ns};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
        if (check_number(label, &TOPO_KEYS[i + 2], nums[i], &e)) return lsim_err_set(err, LSIM_EARG, "%s", e.msg);
    if (check_number(label, &TOPO_KEYS[8], (double)t->coll_base_ns, &e)) return lsim_err_set(err, LSIM_EARG, "%s", e.msg);
    /* the optional NCCL keys: 0 is "not given" */
    const double opt[] = {t->ring_eff, t->tree_eff, t->a2a_eff, (double)t->ring_step_ns, (double)t->tree_hop_ns,
                          (double)t->a2a_peer_ns, (double)t->nodes_per_leaf, t->oversubscription};
    for (size_t i = 0; i < sizeof opt / sizeof *opt; i++)
        if (opt[i] != 0 && check_number(label, &TOPO_KEYS[i + 9], opt[i], &e))
            return lsim_err_set(err, LSIM_EARG, "%s", e.msg);
    return 0;
}

void lsim_topology_default(const lsim_gpu_spec *gpu, lsim_topology *out)
{
    int ampere = 0, blackwell = 0, nvl72 = 0;
    if (gpu)
        for (size_t i = 0; i + 4 <= sizeof gpu->name && gpu->name[i]; i++) {
            char four[5] = {gpu->name[i], gpu->name[i + 1], gpu->name[i + 2], gpu->name[i + 3], '\0'};
            if (name_eq(four, "a100")) ampere = 1;
            if (name_eq(four, "b200")) blackwell = 1;
            if (i > 0 && blackwell && (gpu->name[i - 1] == 'g' || gpu->name[i - 1] == 'G')) nvl72 = 1;
        }
    memset(out, 0, sizeof *out);
    /* GB200 NVL72: 72 GPUs behind one NVLink switch system (its datasheet) */
    out->gpus_per_node = nvl72 ? 72 : 8;
    /* NVLink3 12 x 25 GB/s; NVLink4 18 x 25 GB/s; NVLink5 18 x 50 GB/s (1.8 TB/s both ways, Blackwell
     * datasheets) per direction */
    out->intra_bw = ampere ? 300e9 : blackwell ? 900e9 : 450e9;
    out->inter_bw = ampere ? 25e9 : 50e9;   /* HDR 200 Gb/s; NDR 400 Gb/s per GPU */
    out->intra_lat_ns = 600;                /* NCCL hwLat NVLink ring LL, 0.6 us */
    out->inter_lat_ns = 2700;               /* NCCL hwLat NET ring LL, 2.7 us */
    out->coll_base_ns = 6600;               /* NCCL baseLat ring LL, 6.6 us */
    out->algo = LSIM_ALGO_AUTO;
}

int lsim_topology_load(const char *path, lsim_topology *out, lsim_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    lsim_topology t;
    memset(&t, 0, sizeof t);
    t.algo = LSIM_ALGO_AUTO;
    int rc = slurp(path, &buf, &len, err);
    if (rc) goto cleanup;
    rc = read_object(path, buf, len, TOPO_KEYS, sizeof TOPO_KEYS / sizeof *TOPO_KEYS, &t, sizeof t, err);
    if (rc) goto cleanup;
    *out = t;
cleanup:
    free(buf);
    return rc;
}

const char *lsim_gpu_builtin_for_device(const char *devname)
{
    /* a name that contains another first ("gb200" before "b200"); the
     * 96 GB H100 is told apart by its spec file, not its device name */
    static const char *const known[] = {"gb200", "b200", "h200", "h100", "a100"};
    for (size_t i = 0; devname && i < sizeof known / sizeof *known; i++) {
        size_t l = strlen(known[i]);
        for (const char *p = devname; *p; p++)
            if (!strncasecmp(p, known[i], l)) return known[i];
    }
    return NULL;
}
