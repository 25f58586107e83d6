/* A layout's coordinates (whatif.h lsim_wi_coords, lsim_wi_rank,
 * lsim_wi_group_ranks: Megatron's rank numbering, tp fastest, then dp,
 * then pp) and the class of a collective's group (lsim_wi_coll_class).
 * The lowest module of src/whatif/: every other file may use it, it uses
 * none of them. */
#include "wi_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_p2p_kind(int k) { return k == LSIM_COLL_SEND || k == LSIM_COLL_RECV || k == LSIM_COLL_SENDRECV; }

/* Parse a rank list text ("[0, 1, 2]", "0,1,2") into r (cap); count or -1. */
static int parse_ranks(const char *s, int32_t *r, int cap)
{
    int n = 0;
    if (!s) return -1;
    while (*s) {
        if (isdigit((unsigned char)*s)) {
            char *e;
            long x = strtol(s, &e, 10);
            if (x > INT32_MAX) return -1;
            if (n < cap) r[n] = (int32_t)x;
            n++;
            s = e;
        } else if (*s == '-') {
            return -1;
        } else {
            s++;
        }
    }
    return n;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

lsim_wi_gclass lsim_wi_coll_class(const lsim_graph *g, size_t c)
{
    const lsim_coll_info *ci = &g->colls[c];
    const char *pg = ci->pg_name != UINT32_MAX ? lsim_strtab_get(g->strings, ci->pg_name) : NULL;
    if (pg && !strncmp(pg, "tp:", 3)) return LSIM_WI_TP;
    if (pg && !strncmp(pg, "dp:", 3)) return LSIM_WI_DP;
    if (pg && !strncmp(pg, "p2p:", 4)) return LSIM_WI_PP;
    const char *pr = ci->pg_ranks != UINT32_MAX ? lsim_strtab_get(g->strings, ci->pg_ranks) : NULL;
    int32_t r[4096];
    int n = parse_ranks(pr, r, 4096);
    if (n <= 0 || n > 4096) {
        if (is_p2p_kind(ci->kind)) return LSIM_WI_PP;
        return pg ? LSIM_WI_OTHER : LSIM_WI_WORLD;
    }
    if (n == 2 && is_p2p_kind(ci->kind)) return LSIM_WI_PP;
    qsort(r, (size_t)n, sizeof *r, cmp_i32);
    if (g->world_size > 0 && n == g->world_size && r[0] == 0 && r[n - 1] == n - 1) return LSIM_WI_WORLD;
    if (n == 1) return LSIM_WI_OTHER;
    int32_t step = r[1] - r[0];
    for (int i = 2; i < n; i++)
        if (r[i] - r[i - 1] != step) return LSIM_WI_OTHER;
    return step == 1 ? LSIM_WI_TP : step > 1 ? LSIM_WI_DP : LSIM_WI_OTHER;
}

void lsim_wi_coords(const lsim_wi_layout *L, int32_t rank, int *tp, int *dp, int *pp)
{
    *tp = (int)(rank % L->tp);
    *dp = (int)(rank / L->tp % L->dp);
    *pp = (int)(rank / (L->tp * L->dp));
}

int32_t lsim_wi_rank(const lsim_wi_layout *L, int tp, int dp, int pp) { return (int32_t)(tp + L->tp * (dp + L->dp * pp)); }

int lsim_wi_group_ranks(const char *pg, const lsim_wi_layout *L, int32_t *ranks, int cap)
{
    int a, b, n = 0;
    char tail;
    if (!pg) return 0;
    if (sscanf(pg, "tp:%d:%d%c", &a, &b, &tail) == 2) {
        for (int t = 0; t < L->tp; t++, n++)
            if (n < cap) ranks[n] = lsim_wi_rank(L, t, b, a);
        return n;
    }
    if (sscanf(pg, "dp:%d:%d%c", &a, &b, &tail) == 2) {
        for (int d = 0; d < L->dp; d++, n++)
            if (n < cap) ranks[n] = lsim_wi_rank(L, a, d, b);
        return n;
    }
    if (sscanf(pg, "p2p:%d->%d", &a, &b) == 2 || sscanf(pg, "p2p:%d<->%d", &a, &b) == 2) {
        if (cap >= 2) ranks[0] = a, ranks[1] = b;
        return 2;
    }
    return 0;
}
