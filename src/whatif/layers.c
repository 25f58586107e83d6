/* What-if: change the number of layers of a synthesized job (whatif.h,
 * docs/whatif.md). A layer subgraph is every node tagged "L<l>." (forward and
 * backward of each micro-batch, the optimizer step) plus the gradient bucket
 * that holds that layer alone; pipeline send/recv and blocking
 * synchronisations carry a layer tag but belong to the schedule and stay. */
#include "wi_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_p2p_kind(int k) { return k == LSIM_COLL_SEND || k == LSIM_COLL_RECV || k == LSIM_COLL_SENDRECV; }

/* "L<l>.mb<k>.fwd." / ".bwd." / "L<l>.opt.": the segment key, or -1 */
static int64_t seg_key(const char *s, int *layer)
{
    int l, mb, n = 0;
    char pass[4];
    *layer = -1;
    if (s[0] != 'L' || !isdigit((unsigned char)s[1])) return -1;
    if (sscanf(s, "L%d.mb%d.%3[a-z].%n", &l, &mb, pass, &n) == 3 && n > 0 && (!strcmp(pass, "fwd") || !strcmp(pass, "bwd"))) {
        *layer = l;
        return ((int64_t)l << 32) | ((int64_t)(mb + 1) << 2) | (pass[0] == 'b');
    }
    if (sscanf(s, "L%d.opt.%n", &l, &n) == 1 && n > 0) {
        *layer = l;
        return ((int64_t)l << 32) | 2;
    }
    return -1;
}

/* "grad.mb<k>.bwd.dp_allreduce.b<n>.L<a>-<b>": 1 with mb, a, b */
static int bucket(const char *s, int *mb, int *a, int *b)
{
    int n;
    return sscanf(s, "grad.mb%d.bwd.dp_allreduce.b%d.L%d-%d", mb, &n, a, b) == 4;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

typedef struct lctx {
    const lsim_graph *g;
    const int *count;   /* copies per old layer, index l - lo */
    const int *newid;   /* new id of the first copy, index l - lo */
    int lo, hi;
} lctx;

static int rename_node(void *ctx, lsim_graph *o, uint32_t v, uint32_t c, uint32_t *id)
{
    lctx *C = ctx;
    const char *s = lsim_strtab_get(C->g->strings, C->g->name[v]);
    *id = UINT32_MAX;
    if (s[0] != 'L' || !isdigit((unsigned char)s[1])) return 0;
    char *e;
    long l = strtol(s + 1, &e, 10);
    if (*e != '.' || l < C->lo || l > C->hi || C->count[l - C->lo] == 0) return 0;
    int nl = C->newid[l - C->lo] + (int)c;
    if (nl == l) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "L%d%s", nl, e);
    return wi_intern(o, buf, id) ? LSIM_ENOMEM : 0;
}

int lsim_wi_layers(const lsim_graph *in, const lsim_wi_layout *L, int layers, const lsim_topology *topo,
                   lsim_graph **out, lsim_wi_counts *rec, lsim_err *err)
{
    *out = NULL;
    lsim_wi_ident id;
    int rc = lsim_wi_identify(in, 0, &id, err);
    if (rc) return rc;
    if (id.layer_source != LSIM_WI_LAYERS_TAGS)
        return lsim_err_set(err, LSIM_EARG,
                            "%s: layer structure unknown (%s): --layers needs a graph whose nodes are tagged by layer, "
                            "as lumosim synth writes them",
                            in->source,
                            id.layer_source == LSIM_WI_LAYERS_ANNOTATIONS
                                ? "layer annotations found, but transforming annotated traces is not supported yet"
                                : "no layer tags or annotations");
    int V = id.nchunks, lpc = id.layers_per_chunk;
    if (V <= 0 || lpc <= 0)
        return lsim_err_set(err, LSIM_EARG, "%s: the layers on this GPU (%d..%d) do not form equal model chunks",
                            in->source, id.layer_lo, id.layer_hi);
    if (layers <= 0 || layers % (L->pp * V))
        return lsim_err_set(err, LSIM_EARG, "--layers %d is not divisible by PP x V = %d x %d", layers, L->pp, V);
    int nlpc = layers / (L->pp * V), lo = id.layer_lo, hi = id.layer_hi, nl = hi - lo + 1;
    lsim_graph *o = NULL;
    int *count = calloc((size_t)nl, sizeof *count), *newid = calloc((size_t)nl, sizeof *newid), *copies = NULL;
    uint8_t *removed = calloc(in->n ? in->n : 1, 1), *keep = calloc(in->n ? in->n : 1, 1);
    int32_t *seg = malloc((in->n ? in->n : 1) * sizeof *seg);
    int64_t *keys = malloc((in->n ? in->n : 1) * sizeof *keys), *nkey = malloc((in->n ? in->n : 1) * sizeof *nkey);
    int64_t *bb = malloc((in->n ? in->n : 1) * sizeof *bb);
    uint32_t *launcher = malloc((in->n ? in->n : 1) * sizeof *launcher);
    if (!count || !newid || !removed || !keep || !seg || !keys || !nkey || !bb || !launcher) goto nomem;
    /* chunks of this GPU: runs of consecutive layers */
    {
        uint8_t *seen = keep; /* reused: cleared below */
        for (size_t v = 0; v < in->n; v++) {
            int l;
            if (seg_key(lsim_strtab_get(in->strings, in->name[v]), &l) >= 0 && l >= lo && l <= hi) seen[l - lo] = 1;
        }
        for (int l = lo; l <= hi;) {
            if (!seen[l - lo]) {
                l++;
                continue;
            }
            int base = l, vs = base / lpc, pos = 0;
            int k1 = (nlpc + 1) / 2, k2 = nlpc / 2, extra = nlpc - lpc, at = vs * nlpc;
            for (; l <= hi && seen[l - lo] && pos < lpc; l++, pos++) {
                int c;
                if (nlpc <= lpc) c = pos < k1 || pos >= lpc - k2 ? 1 : 0;
                else c = 1 + extra / lpc + (pos < extra % lpc ? 1 : 0);
                count[l - lo] = c;
                newid[l - lo] = at;
                at += c;
            }
        }
        memset(keep, 0, in->n ? in->n : 1);
    }
    /* launch calls of GPU nodes */
    for (size_t v = 0; v < in->n; v++) launcher[v] = UINT32_MAX;
    for (size_t v = 0; v < in->n; v++)
        for (uint64_t k = in->in_off[v]; k < in->in_off[v + 1]; k++)
            if ((in->in_class[k] & 0x7f) == LSIM_E_LAUNCH) launcher[v] = in->in_src[k];
    /* the gradient size of one layer: the most common single-layer bucket */
    int64_t lbytes = -1;
    {
        size_t nb = 0;
        for (size_t v = 0; v < in->n; v++) {
            int mb, a, b;
            if (in->coll[v] >= 0 && bucket(lsim_strtab_get(in->strings, in->name[v]), &mb, &a, &b) && a == b)
                bb[nb++] = in->colls[in->coll[v]].bytes;
        }
        qsort(bb, nb, sizeof *bb, cmp_i64);
        size_t best = 0;
        for (size_t i = 0; i < nb;) {
            size_t j = i;
            while (j < nb && bb[j] == bb[i]) j++;
            if (j - i > best && j - i >= 2) best = j - i, lbytes = bb[i];
            i = j;
        }
    }
    /* segment of every node; schedule nodes (p2p, their calls, blocking
     * synchronisations) stay out */
    for (size_t v = 0; v < in->n; v++)
        if (in->coll[v] >= 0 && is_p2p_kind(in->colls[in->coll[v]].kind)) {
            keep[v] = 1;
            if (launcher[v] != UINT32_MAX) keep[launcher[v]] = 1;
        }
    size_t nk = 0;
    for (size_t v = 0; v < in->n; v++) {
        int l;
        const char *s = lsim_strtab_get(in->strings, in->name[v]);
        nkey[v] = -1;
        if (keep[v] || (in->flags[v] & LSIM_NF_BLOCKING)) continue;
        int64_t k = seg_key(s, &l);
        if (k >= 0 && l >= lo && l <= hi) nkey[v] = k;
    }
    for (size_t v = 0; v < in->n; v++) {
        int mb, a, b;
        if (in->coll[v] < 0 || !bucket(lsim_strtab_get(in->strings, in->name[v]), &mb, &a, &b)) continue;
        int64_t k = ((int64_t)a << 32) | ((int64_t)(mb + 1) << 2) | 1;
        uint32_t prev = UINT32_MAX;
        if (launcher[v] != UINT32_MAX)
            for (uint64_t e = in->in_off[launcher[v]]; e < in->in_off[launcher[v] + 1]; e++)
                if (in->in_class[e] == LSIM_E_CPU_THREAD) prev = in->in_src[e];
        /* the layer's own bucket: its size, launched right after the layer */
        if (a == b && in->colls[in->coll[v]].bytes == lbytes && a >= lo && a <= hi && prev != UINT32_MAX &&
            nkey[prev] == k) {
            nkey[v] = k;
            if (launcher[v] != UINT32_MAX) nkey[launcher[v]] = k;
        } else if (a < b && a >= lo && b <= hi) {
            int any = 0;
            for (int l = a; l <= b; l++) any |= count[l - lo] > 0;
            if (!any) {
                removed[v] = 1;
                if (launcher[v] != UINT32_MAX) removed[launcher[v]] = 1;
            }
        }
    }
    for (size_t v = 0; v < in->n; v++)
        if (nkey[v] >= 0) keys[nk++] = nkey[v];
    qsort(keys, nk, sizeof *keys, cmp_i64);
    size_t nseg = 0;
    for (size_t i = 0; i < nk; i++)
        if (!nseg || keys[nseg - 1] != keys[i]) keys[nseg++] = keys[i];
    if (!(copies = malloc((nseg ? nseg : 1) * sizeof *copies))) goto nomem;
    for (size_t s = 0; s < nseg; s++) copies[s] = count[(int)(keys[s] >> 32) - lo];
    for (size_t v = 0; v < in->n; v++) {
        seg[v] = -1;
        if (nkey[v] < 0) continue;
        int64_t *p = bsearch(&nkey[v], keys, nseg, sizeof *keys, cmp_i64);
        seg[v] = (int32_t)(p - keys);
        if (copies[seg[v]] == 0) removed[v] = 1;
    }
    {
        lctx C = {in, count, newid, lo, hi};
        wi_plan P = {removed, seg, copies, (uint32_t)nseg, NULL, 1, rename_node, &C};
        if ((rc = wi_rebuild(in, &P, &o, rec, err))) goto cleanup;
    }
    /* buckets of several layers: resized in proportion, re-timed */
    for (size_t x = 0; x < o->n; x++) {
        int mb, a, b;
        if (o->coll[x] < 0 || !bucket(lsim_strtab_get(o->strings, o->name[x]), &mb, &a, &b) || a >= b || a < lo || b > hi)
            continue;
        int sum = 0;
        for (int l = a; l <= b; l++) sum += count[l - lo];
        if (sum == b - a + 1) continue;
        lsim_coll_info *ci = &o->colls[o->coll[x]];
        int64_t nb = (int64_t)llround((double)ci->bytes * sum / (b - a + 1));
        int32_t r[4096];
        const char *pg = ci->pg_name != UINT32_MAX ? lsim_strtab_get(o->strings, ci->pg_name) : "";
        int n = lsim_wi_group_ranks(pg, L, r, 4096);
        if (n > 4096) n = 0;
        lsim_ns c0 = lsim_cost_collective(topo, ci->kind, ci->bytes, n ? r : NULL, n ? n : ci->group_size, LSIM_ALGO_AUTO);
        lsim_ns c1 = lsim_cost_collective(topo, ci->kind, nb, n ? r : NULL, n ? n : ci->group_size, LSIM_ALGO_AUTO);
        ci->bytes = nb;
        if (c0 > 0 && c1 != c0) {
            o->dur[x] = (lsim_ns)llround((double)o->dur[x] * ((double)c1 / (double)c0));
            rec->retimed[o->kind[x]]++;
            rec->coll_retimed[LSIM_WI_DP]++;
        }
    }
    *out = o;
    o = NULL;
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory transforming the graph", in->source);
cleanup:
    lsim_graph_free(o);
    free(count);
    free(newid);
    free(copies);
    free(removed);
    free(keep);
    free(seg);
    free(keys);
    free(nkey);
    free(bb);
    free(launcher);
    return rc;
}
