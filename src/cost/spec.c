/* GPU and topology parameters: the built-in GPU table, the JSON loaders and
 * the DGX-like default topology (include/lumosim/cost.h; the schema and the
 * source of every number are in docs/cost-models.md).
 *
 * Both loaders are driven by one table of keys per schema, so that every key
 * gets the same checks (type, range, duplicates, unknown, missing) and the
 * message always has the form "PATH: key K: what is wrong". */
#include "lumosim/cost.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keep in sync with data/gpu/NAME.json (test_cost compares them). */
static const lsim_gpu_spec BUILTIN[] = {
    {"h100", 989.4e12, 3.35e12, 0.75, 2.0e9, 0.50, 4.0e9, 0.85, 2000, 4000, 6000},
    {"a100", 312.0e12, 2.039e12, 0.80, 1.0e9, 0.65, 2.0e9, 0.85, 2000, 4000, 6000},
    {"h200", 989.4e12, 4.8e12, 0.75, 2.0e9, 0.50, 4.0e9, 0.85, 2000, 4000, 6000},
};
#define NBUILTIN (sizeof BUILTIN / sizeof *BUILTIN)

/* Largest accepted time value: about 11.6 days, far above any kernel or
 * latency, and small enough that sums of a few of them cannot overflow. */
#define NS_MAX 1e15
/* A parameter file is a few hundred bytes; refuse to slurp anything huge. */
#define FILE_MAX (1 << 20)

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
    return lsim_err_set(err, LSIM_EARG, "unknown GPU \"%s\" (known: h100, a100, h200)",
                        name ? name : "(null)");
}

/* ---- one table-driven JSON object reader for both schemas ---- */

typedef enum { K_NAME, K_POS, K_EFF, K_NS_POS, K_NS_NONNEG, K_INT_POS, K_ALGO, K_TEXT } key_rule;

typedef struct key_desc {
    const char *key;
    key_rule rule;
    int required;
    size_t off; /* offset in the output struct; unused for K_TEXT */
} key_desc;

static int check_number(const char *label, const char *key, key_rule rule, double v, lsim_err *err)
{
    if (!isfinite(v)) return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: not a finite number", label, key);
    switch (rule) {
    case K_POS:
        if (v <= 0) return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: %g is not positive", label, key, v);
        break;
    case K_EFF:
        if (v <= 0 || v > 1)
            return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: efficiency %g is outside (0,1]", label, key, v);
        break;
    case K_NS_POS:
    case K_NS_NONNEG:
        /* whole nanoseconds: a positive time must not round to 0 */
        if (rule == K_NS_POS ? v < 1 : v < 0)
            return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: %g ns is not %s", label, key, v,
                                rule == K_NS_POS ? "positive (at least 1 ns)" : "zero or positive");
        if (v > NS_MAX) return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: %g ns is implausibly large", label, key, v);
        break;
    case K_INT_POS:
        if (v < 1 || v > 1e6 || v != floor(v))
            return lsim_err_set(err, LSIM_EFORMAT, "%s: key %s: %g is not a positive integer (at most 1000000)",
                                label, key, v);
        break;
    default: break;
    }
    return 0;
}

/* Parse `text` as one JSON object whose keys are all in `keys`, storing the
 * values into `dst` at each key's offset. dst is only written after every
 * check passed, through a scratch copy of `size` bytes. */
static int read_object(const char *label, const char *text, size_t len, const key_desc *keys, size_t nkeys,
                       void *dst, size_t size, lsim_err *err)
{
    int rc = 0;
    unsigned char seen[16] = {0};
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
    tmp = malloc(size);
    if (!tmp) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", label);
        goto cleanup;
    }
    memcpy(tmp, dst, size);
    for (const cJSON *it = doc->child; it; it = it->next) {
        size_t k = 0;
        while (k < nkeys && strcmp(keys[k].key, it->string ? it->string : "") != 0) k++;
        if (k == nkeys) {
            char known[256] = "";
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
        int want_string = d->rule == K_NAME || d->rule == K_ALGO || d->rule == K_TEXT;
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
        } else {
            double v = it->valuedouble;
            if ((rc = check_number(label, d->key, d->rule, v, err))) goto cleanup;
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
    FILE *f = fopen(path, "rb");
    if (!f) {
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot open", path);
        goto cleanup;
    }
    b = malloc(FILE_MAX + 1);
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

static const key_desc GPU_KEYS[] = {
    {"name", K_NAME, 1, offsetof(lsim_gpu_spec, name)},
    {"description", K_TEXT, 0, 0},
    {"peak_flops", K_POS, 1, offsetof(lsim_gpu_spec, peak_flops)},
    {"mem_bw", K_POS, 1, offsetof(lsim_gpu_spec, mem_bw)},
    {"gemm_eff_max", K_EFF, 1, offsetof(lsim_gpu_spec, gemm_eff_max)},
    {"gemm_eff_half", K_POS, 1, offsetof(lsim_gpu_spec, gemm_eff_half)},
    {"attn_eff_max", K_EFF, 1, offsetof(lsim_gpu_spec, attn_eff_max)},
    {"attn_eff_half", K_POS, 1, offsetof(lsim_gpu_spec, attn_eff_half)},
    {"mem_eff", K_EFF, 1, offsetof(lsim_gpu_spec, mem_eff)},
    {"kernel_min_ns", K_NS_POS, 1, offsetof(lsim_gpu_spec, kernel_min_ns)},
    {"launch_cpu_ns", K_NS_POS, 1, offsetof(lsim_gpu_spec, launch_cpu_ns)},
    {"launch_latency_ns", K_NS_POS, 1, offsetof(lsim_gpu_spec, launch_latency_ns)},
};

static const key_desc TOPO_KEYS[] = {
    {"name", K_TEXT, 0, 0},
    {"description", K_TEXT, 0, 0},
    {"gpus_per_node", K_INT_POS, 1, offsetof(lsim_topology, gpus_per_node)},
    {"intra_bw", K_POS, 1, offsetof(lsim_topology, intra_bw)},
    {"intra_lat_ns", K_NS_NONNEG, 1, offsetof(lsim_topology, intra_lat_ns)},
    {"inter_bw", K_POS, 1, offsetof(lsim_topology, inter_bw)},
    {"inter_lat_ns", K_NS_NONNEG, 1, offsetof(lsim_topology, inter_lat_ns)},
    {"algo", K_ALGO, 0, offsetof(lsim_topology, algo)},
    {"coll_base_ns", K_NS_NONNEG, 0, offsetof(lsim_topology, coll_base_ns)},
};

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
                           (double)g->launch_latency_ns};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
        if ((rc = check_number(label, GPU_KEYS[i + 2].key, GPU_KEYS[i + 2].rule, nums[i], &e)))
            return lsim_err_set(err, LSIM_EARG, "%s", e.msg);
    return 0;
}

void lsim_topology_default(const lsim_gpu_spec *gpu, lsim_topology *out)
{
    int ampere = 0;
    if (gpu)
        for (size_t i = 0; i + 4 <= sizeof gpu->name && gpu->name[i]; i++) {
            char four[5] = {gpu->name[i], gpu->name[i + 1], gpu->name[i + 2], gpu->name[i + 3], '\0'};
            if (name_eq(four, "a100")) ampere = 1;
        }
    memset(out, 0, sizeof *out);
    out->gpus_per_node = 8;
    out->intra_bw = ampere ? 300e9 : 450e9; /* NVLink3 12 x 25 GB/s; NVLink4 18 x 25 GB/s per direction */
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
