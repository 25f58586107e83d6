/* The CPU op tree of traced GPUs in a graph store (graph.h lsim_cpu_ops;
 * docs/hdf5-schema.md "/cpu_ops"): what the predicted trace of a store needs
 * to write each CPU op whole, nested, at simulated times, as the replay of
 * the trace does. Why a group of its own: the tree belongs to traced GPUs
 * only (a synthesized store has none, and then no group), and its rows
 * share nothing with the node and edge rows that shared structure
 * deduplicates. Collective in MPI mode where noted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h5_internal.h"
#include "lumosim/trace.h"

#define OPF(nm, f, t) {nm, t, 1, offsetof(lsim_cpu_op, f), FSZ(lsim_cpu_op, f), M_COPY}
static const mcol op_cols[] = {
    OPF("name", name, T_U32),           OPF("cat", cat, T_U32),
    OPF("start_node", start_node, T_U32), OPF("end_node", end_node, T_U32),
    OPF("start_off", start_off, T_I64), OPF("end_off", end_off, T_I64),
    OPF("corr", corr, T_I64),           OPF("coll", coll, T_I32),
    OPF("kind", kind, T_U8),            OPF("flags", flags, T_U8),
};
#define NOPCOLS (sizeof op_cols / sizeof op_cols[0])

/* one GPU's place in the group: cpu_ops/op_offset, op_count, node_offset,
 * node_count (the node_op rows: its node count when it has ops) */
enum { OP_OFF, OP_CNT, ND_OFF, ND_CNT, NGCOL };
static const char *const gcol_names[NGCOL] = {"cpu_ops/op_offset", "cpu_ops/op_count", "cpu_ops/node_offset",
                                              "cpu_ops/node_count"};

/* a table still describing its graph (graph.h: any change of the node set
 * invalidates it) */
static int valid_table(const lsim_cpu_ops *t, const lsim_graph *g)
{
    return t && t->n && t->node_op && g && t->nnodes == g->n;
}

int h5s_write_cpu_ops(sctx *c, hid_t loc, const char *where, lsim_graph *const *graphs, const uint64_t *gid,
                      size_t nloc, uint64_t ngpu)
{
    uint64_t *mine = lsim_calloc(3 * (nloc ? nloc : 1), sizeof *mine), *all = NULL, *pg = NULL;
    int *cnts = NULL, *disp = NULL;
    lsim_cpu_op *obuf = NULL;
    uint32_t *nbuf = NULL;
    rowsel so, sn, sg;
    h5s_sel_one(&so, 0, 0);
    h5s_sel_one(&sn, 0, 0);
    h5s_sel_one(&sg, 0, 0);
    int rc = mine ? 0 : h5s_nomem(c);
    uint64_t lops = 0, lnodes = 0;
    for (size_t i = 0; !rc && i < nloc; i++) {
        const lsim_cpu_ops *t = graphs[i]->cpu_ops;
        int ok = valid_table(t, graphs[i]);
        mine[3 * i] = gid[i], mine[3 * i + 1] = ok ? t->n : 0, mine[3 * i + 2] = ok ? t->nnodes : 0;
        lops += mine[3 * i + 1], lnodes += mine[3 * i + 2];
        if (i && gid[i] <= gid[i - 1]) rc = h5s_fail(c, LSIM_EINTERNAL, "cpu_ops: local GPUs out of order");
    }
    rc = h5s_agree(c, rc);
    /* every GPU's counts on every rank, in GPU order */
    size_t nall = nloc;
    if (!rc && c->mpi) {
        int n3 = (int)(3 * nloc);
        cnts = lsim_malloc((size_t)c->size * sizeof *cnts), disp = lsim_malloc((size_t)c->size * sizeof *disp);
        rc = h5s_agree(c, cnts && disp ? 0 : h5s_nomem(c));
        if (!rc) MPI_Allgather(&n3, 1, MPI_INT, cnts, 1, MPI_INT, c->comm);
        nall = 0;
        for (int r = 0; !rc && r < c->size; r++) disp[r] = (int)nall, nall += (size_t)cnts[r];
        nall /= 3;
    }
    if (!rc) {
        all = lsim_malloc(3 * (nall ? nall : 1) * sizeof *all);
        pg = lsim_calloc(NGCOL * (ngpu ? ngpu : 1), sizeof *pg);
        rc = h5s_agree(c, all && pg ? 0 : h5s_nomem(c));
    }
    if (!rc && c->mpi) MPI_Allgatherv(mine, (int)(3 * nloc), MPI_UINT64_T, all, cnts, disp, MPI_UINT64_T, c->comm);
    else if (!rc) memcpy(all, mine, 3 * nloc * sizeof *all);
    for (size_t j = 0; !rc && j < nall; j++) {
        uint64_t g = all[3 * j];
        if (g >= ngpu || pg[NGCOL * g + OP_CNT] || pg[NGCOL * g + ND_CNT])
            rc = h5s_fail(c, LSIM_EINTERNAL, "cpu_ops: GPU %llu twice or out of range", (unsigned long long)g);
        else
            pg[NGCOL * g + OP_CNT] = all[3 * j + 1], pg[NGCOL * g + ND_CNT] = all[3 * j + 2];
    }
    uint64_t tops = 0, tnodes = 0;
    for (uint64_t g = 0; !rc && g < ngpu; g++) {
        pg[NGCOL * g + OP_OFF] = tops, pg[NGCOL * g + ND_OFF] = tnodes;
        tops += pg[NGCOL * g + OP_CNT], tnodes += pg[NGCOL * g + ND_CNT];
    }
    if (rc || !tops) goto out; /* no GPU has a tree: no group */
    /* this rank's rows, in GPU order (the order of the selections) */
    obuf = lsim_malloc((lops ? lops : 1) * sizeof *obuf);
    nbuf = lsim_malloc((lnodes ? lnodes : 1) * sizeof *nbuf);
    rc = h5s_agree(c, obuf && nbuf ? 0 : h5s_nomem(c));
    uint64_t ao = 0, an = 0;
    for (size_t i = 0; !rc && i < nloc; i++) {
        uint64_t g = gid[i], no = pg[NGCOL * g + OP_CNT], nn = pg[NGCOL * g + ND_CNT];
        if (!no) continue;
        memcpy(obuf + ao, graphs[i]->cpu_ops->op, no * sizeof *obuf);
        memcpy(nbuf + an, graphs[i]->cpu_ops->node_op, nn * sizeof *nbuf);
        ao += no, an += nn;
        if (h5s_sel_add(c, &so, pg[NGCOL * g + OP_OFF], no) || h5s_sel_add(c, &sn, pg[NGCOL * g + ND_OFF], nn))
            rc = h5s_nomem(c);
    }
    rc = h5s_agree(c, rc);
    if (!rc) rc = h5s_put_records(c, loc, where, "cpu_ops/op", op_cols, NOPCOLS, obuf, sizeof *obuf, tops, &so,
                                  (size_t)lops, h5s_min_u64(tops, CHUNK_MAX_ROWS));
    if (!rc) rc = h5s_put_col(c, loc, where, "cpu_ops/node_op", T_U32, 1, tnodes, h5s_min_u64(tnodes, CHUNK_MAX_ROWS),
                              &sn, nbuf);
    /* the per-GPU columns: rank 0 writes them whole */
    if (!rc && c->rank == 0) h5s_sel_free(&sg), h5s_sel_one(&sg, 0, ngpu);
    uint64_t *colv = rc ? NULL : lsim_malloc((ngpu ? ngpu : 1) * sizeof *colv);
    if (!rc && !colv) rc = h5s_nomem(c);
    rc = h5s_agree(c, rc);
    for (int k = 0; !rc && k < NGCOL; k++) {
        for (uint64_t g = 0; g < ngpu; g++) colv[g] = pg[NGCOL * g + k];
        rc = h5s_put_col(c, loc, where, gcol_names[k], T_U64, 1, ngpu, h5s_min_u64(ngpu, CHUNK_MAX_ROWS), &sg, colv);
    }
    free(colv);
out:
    h5s_sel_free(&so);
    h5s_sel_free(&sn);
    h5s_sel_free(&sg);
    free(mine);
    free(all);
    free(pg);
    free(cnts);
    free(disp);
    free(obuf);
    free(nbuf);
    return h5s_agree(c, rc);
}

/* GPU g's ops read back, checked against its graph, attached to it. */
static int attach(sctx *c, const char *where, size_t g, lsim_graph *gr, lsim_cpu_op *op, uint64_t n,
                  uint32_t *node_op)
{
    uint32_t nstr = gr->strings ? lsim_strtab_count(gr->strings) : 0;
    for (uint64_t k = 0; k < n; k++) {
        const lsim_cpu_op *o = &op[k];
        if (o->name >= nstr || o->cat >= nstr || o->start_node >= gr->n || o->end_node >= gr->n ||
            o->kind > LSIM_EV_RUNTIME || o->flags > (LSIM_OP_START_AT_END | LSIM_OP_END_AT_END) || o->coll < -1 ||
            (o->coll >= 0 && (size_t)o->coll >= gr->ncoll))
            return h5s_fail(c, LSIM_EFORMAT, "%s/cpu_ops/op: op %llu of GPU %zu names a string, node, kind or "
                            "collective its graph does not have", where, (unsigned long long)k, g);
    }
    for (size_t v = 0; v < gr->n; v++)
        if (node_op[v] != UINT32_MAX && node_op[v] >= n)
            return h5s_fail(c, LSIM_EFORMAT, "%s/cpu_ops/node_op: node %zu of GPU %zu names op %u of %llu", where,
                            v, g, node_op[v], (unsigned long long)n);
    lsim_cpu_ops *t = lsim_calloc(1, sizeof *t);
    if (!t) return h5s_nomem(c);
    *t = (lsim_cpu_ops){op, n, node_op, gr->n};
    lsim_cpu_ops_free(gr->cpu_ops);
    gr->cpu_ops = t;
    return 0;
}

/* The op columns at the rows sel, into op[0..rows). */
static int read_ops(sctx *c, hid_t loc, const char *where, uint64_t total, const rowsel *sel, lsim_cpu_op *op)
{
    uint64_t rows = sel->rows;
    char *col = lsim_malloc((rows ? rows : 1) * sizeof(int64_t));
    int rc = col ? 0 : h5s_nomem(c);
    rc = h5s_agree(c, rc);
    for (size_t k = 0; !rc && k < NOPCOLS; k++) {
        const mcol *m = &op_cols[k];
        char name[64];
        snprintf(name, sizeof name, "cpu_ops/op/%s", m->name);
        rc = h5s_get_col_sel(c, loc, where, name, m->t, total, sel, col);
        for (uint64_t r = 0; !rc && r < rows; r++) memcpy((char *)&op[r] + m->field, col + r * m->esz, m->esz);
    }
    free(col);
    return rc;
}

int h5s_read_cpu_ops(sctx *c, hid_t loc, const char *where, lsim_graph **gs, size_t first, size_t count,
                     const size_t *list, uint64_t ngpu)
{
#define GID(i) (list ? list[i] : first + (i))
    if (H5Lexists(loc, "cpu_ops", H5P_DEFAULT) <= 0) return 0; /* the same file on every rank */
    uint64_t *pg[NGCOL] = {NULL};
    lsim_cpu_op *op = NULL;
    uint32_t *nop = NULL;
    rowsel so, sn;
    h5s_sel_one(&so, 0, 0);
    h5s_sel_one(&sn, 0, 0);
    int rc = 0;
    for (int k = 0; !rc && k < NGCOL; k++) {
        if (!(pg[k] = lsim_malloc((ngpu ? ngpu : 1) * sizeof *pg[k]))) rc = h5s_nomem(c);
        rc = h5s_agree(c, rc);
        if (!rc) rc = h5s_get_col(c, loc, where, gcol_names[k], T_U64, 1, ngpu, 0, ngpu, pg[k]);
    }
    int64_t tops = rc ? 0 : h5s_dset_rows(c, loc, where, "cpu_ops/op/name");
    int64_t tnodes = rc ? 0 : h5s_dset_rows(c, loc, where, "cpu_ops/node_op");
    if (!rc && (tops < 0 || tnodes < 0)) rc = c->e.code;
    for (uint64_t g = 0; !rc && g < ngpu; g++)
        if (pg[OP_OFF][g] > (uint64_t)tops || pg[OP_CNT][g] > (uint64_t)tops - pg[OP_OFF][g] ||
            pg[ND_OFF][g] > (uint64_t)tnodes || pg[ND_CNT][g] > (uint64_t)tnodes - pg[ND_OFF][g] ||
            (pg[OP_CNT][g] > 0) != (pg[ND_CNT][g] > 0))
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/cpu_ops: the rows of GPU %llu run past the table", where,
                          (unsigned long long)g);
    uint64_t lops = 0, lnodes = 0;
    for (size_t i = 0; !rc && i < count; i++) {
        size_t g = GID(i);
        if (!pg[OP_CNT][g]) continue;
        if (pg[ND_CNT][g] != gs[i]->n)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/cpu_ops/node_count of GPU %zu is %llu, its graph has %zu nodes", where,
                          g, (unsigned long long)pg[ND_CNT][g], gs[i]->n);
        else if (h5s_sel_add(c, &so, pg[OP_OFF][g], pg[OP_CNT][g]) || h5s_sel_add(c, &sn, pg[ND_OFF][g], pg[ND_CNT][g]))
            rc = h5s_nomem(c);
        lops += pg[OP_CNT][g], lnodes += pg[ND_CNT][g];
    }
    rc = h5s_agree(c, rc);
    if (!rc) {
        op = lsim_malloc((lops ? lops : 1) * sizeof *op);
        nop = lsim_malloc((lnodes ? lnodes : 1) * sizeof *nop);
        rc = h5s_agree(c, op && nop ? 0 : h5s_nomem(c));
    }
    if (!rc) rc = read_ops(c, loc, where, (uint64_t)tops, &so, op);
    if (!rc) rc = h5s_get_col_sel(c, loc, where, "cpu_ops/node_op", T_U32, (uint64_t)tnodes, &sn, nop);
    /* each GPU's rows into a table of its own (in the selections' order:
     * GPU order, as the GPUs are ascending) */
    uint64_t ao = 0, an = 0;
    for (size_t i = 0; !rc && i < count; i++) {
        size_t g = GID(i);
        uint64_t no = pg[OP_CNT][g], nn = pg[ND_CNT][g];
        if (!no) continue;
        lsim_cpu_op *o = lsim_malloc(no * sizeof *o);
        uint32_t *m = lsim_malloc(nn * sizeof *m);
        if (!o || !m) {
            free(o);
            free(m);
            rc = h5s_nomem(c);
            break;
        }
        memcpy(o, op + ao, no * sizeof *o);
        memcpy(m, nop + an, nn * sizeof *m);
        ao += no, an += nn;
        if ((rc = attach(c, where, g, gs[i], o, no, m))) {
            free(o);
            free(m);
        }
    }
    rc = h5s_agree(c, rc);
    h5s_sel_free(&so);
    h5s_sel_free(&sn);
    for (int k = 0; k < NGCOL; k++) free(pg[k]);
    free(op);
    free(nop);
    return rc;
#undef GID
}
