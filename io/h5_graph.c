/* The graph store (include/lumosim/store.h, docs/hdf5-schema.md): the
 * graph tables (flat columns over all GPUs, /gpus the per-GPU index),
 * written and read in one code path for serial and MPI I/O
 * (io/h5_internal.h). Reading a range of GPUs reads one hyperslab per
 * column and splits it into the graphs. */
#include "h5_internal.h"
#include "lumosim/alloc.h"

#include "lumosim/memlimit.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ graph tables */

static const char *const rk_name[RK_N] = {"node", "edge", "proc", "iter", "coll", "string", "char"};

#define GSZ(f) sizeof(*((lsim_graph *)0)->f)
#define GA(nm, f, t, rk) {nm, t, rk, offsetof(lsim_graph, f), GSZ(f), 0, GSZ(f), 0, 0}
#define GS(nm, f, st, sf, t, rk) {nm, t, rk, offsetof(lsim_graph, f), sizeof(st), offsetof(st, sf), FSZ(st, sf), 0, 0}

/* The column type of a C type (the node columns' types come from
 * LSIM_GRAPH_COLUMNS; h5s_check_layout checks every size). */
#define GTYPE(type) _Generic((type)0, uint8_t: T_U8, int32_t: T_I32, uint32_t: T_U32, int64_t: T_I64, uint64_t: T_U64)
#define GNODE(f, type) GA("nodes/" #f, f, GTYPE(type), RK_NODE),
/* An optional node column (graph.h's training columns): absent in stores
 * written before it, read as its none value there. */
#define GNODE_OPT(f, type) {"nodes/" #f, GTYPE(type), RK_NODE, offsetof(lsim_graph, f), GSZ(f), 0, GSZ(f), 1, LSIM_GRAPH_NONE_##f},

/* The graph tables: the node columns of graph.h (LSIM_GRAPH_COLUMNS, in
 * its order), then the incoming CSR, processors, iterations, collectives.
 * The order is the order the datasets are created in. */
const gcol h5s_gcols[] = {
    LSIM_GRAPH_BASE_COLUMNS(GNODE)
    LSIM_GRAPH_TRAINING_COLUMNS(GNODE_OPT)
    GA("nodes/in_off", in_off, T_U64, RK_NODE), /* n per GPU; in_off[n] = edge_count */
    GA("edges/in_src", in_src, T_U32, RK_EDGE),
    GA("edges/in_delay", in_delay, T_I64, RK_EDGE),
    GA("edges/in_class", in_class, T_U8, RK_EDGE),
    GS("procs/is_gpu", procs, lsim_proc, is_gpu, T_U8, RK_PROC),
    GS("procs/pid", procs, lsim_proc, pid, T_I64, RK_PROC),
    GS("procs/tid", procs, lsim_proc, tid, T_I64, RK_PROC),
    GS("procs/nnodes", procs, lsim_proc, nnodes, T_U32, RK_PROC),
    GS("iters/name", iters, lsim_iter, name, T_U32, RK_ITER),
    GS("iters/obs_start", iters, lsim_iter, obs_start, T_I64, RK_ITER),
    GS("iters/obs_end", iters, lsim_iter, obs_end, T_I64, RK_ITER),
    GS("colls/kind", colls, lsim_coll_info, kind, T_U8, RK_COLL),
    GS("colls/from_metadata", colls, lsim_coll_info, from_metadata, T_U8, RK_COLL),
    GS("colls/group_size", colls, lsim_coll_info, group_size, T_I32, RK_COLL),
    GS("colls/in_nelems", colls, lsim_coll_info, in_nelems, T_I64, RK_COLL),
    GS("colls/out_nelems", colls, lsim_coll_info, out_nelems, T_I64, RK_COLL),
    GS("colls/dtype_bytes", colls, lsim_coll_info, dtype_bytes, T_I32, RK_COLL),
    GS("colls/bytes", colls, lsim_coll_info, bytes, T_I64, RK_COLL),
    GS("colls/pg_name", colls, lsim_coll_info, pg_name, T_U32, RK_COLL),
    GS("colls/pg_ranks", colls, lsim_coll_info, pg_ranks, T_U32, RK_COLL),
    GS("colls/seq", colls, lsim_coll_info, seq, T_I64, RK_COLL),
    /* optional: stores written before it read every root as unknown (-1) */
    {"colls/root", T_I32, RK_COLL, offsetof(lsim_graph, colls), sizeof(lsim_coll_info), offsetof(lsim_coll_info, root),
     FSZ(lsim_coll_info, root), 1, -1},
};
_Static_assert(sizeof h5s_gcols / sizeof h5s_gcols[0] == H5S_NGCOLS, "H5S_NGCOLS (h5_internal.h) is out of date");

#define MC(nm, f, t) {nm, t, 1, offsetof(gmeta, f), FSZ(gmeta, f), M_COPY}
#define MCA(nm, f, t, w) {nm, t, w, offsetof(gmeta, f), FSZ(gmeta, f), M_COPY}
#define MOFF(nm, arr, rk) {nm, T_U64, 1, offsetof(gmeta, arr) + (rk) * sizeof(uint64_t), sizeof(uint64_t), M_COPY}

const mcol h5s_gpu_cols[] = {
    MC("rank", rank, T_I32),
    MC("world_size", world_size, T_I32),
    MC("latency_mode", latency, T_U8),
    MC("source_size", source_size, T_I64),
    MC("source_crc32", source_crc32, T_U32),
    MOFF("node_offset", off, RK_NODE), MOFF("node_count", cnt, RK_NODE),
    MOFF("edge_offset", off, RK_EDGE), MOFF("edge_count", cnt, RK_EDGE),
    MOFF("proc_offset", off, RK_PROC), MOFF("proc_count", cnt, RK_PROC),
    MOFF("iter_offset", off, RK_ITER), MOFF("iter_count", cnt, RK_ITER),
    MOFF("coll_offset", off, RK_COLL), MOFF("coll_count", cnt, RK_COLL),
    MOFF("string_offset", off, RK_STR), MOFF("string_count", cnt, RK_STR),
    MOFF("char_offset", off, RK_CHAR), MOFF("char_count", cnt, RK_CHAR),
    MC("t0", t0, T_I64),
    MC("queued_gap_ns", queued_gap_ns, T_I64),
    MC("launch_latency_ns", launch_latency_ns, T_I64),
    MC("launch_samples", launch_samples, T_U64),
    MC("prewindow", prewindow, T_U64),
    MC("releases", releases, T_U64),
    MC("sync_events_used", sync_events_used, T_U64),
    MCA("edges_by_class", edges_by_class, T_U64, LSIM_E_NCLASSES),
    MCA("inferred_by_class", inferred_by_class, T_U64, LSIM_E_NCLASSES),
    MCA("dropped", dropped, T_U64, LSIM_DROP_NREASONS),
};
const size_t h5s_ngpu_cols = sizeof h5s_gpu_cols / sizeof h5s_gpu_cols[0];

/* GPU memory from the trace's [memory] events (graph.h mem_*): optional,
 * since stores written before these columns lack them (read as 0: no
 * memory figures). Written with, and read after, h5s_gpu_cols. */
const mcol h5s_gpu_mem_cols[] = {
    MC("mem_events", mem_events, T_U64), MC("mem_source", mem_source, T_I32),
    MC("mem_device", mem_device, T_I32), MC("mem_peak_allocated", mem_peak_allocated, T_I64),
    MC("mem_peak_reserved", mem_peak_reserved, T_I64), MC("mem_capacity", mem_capacity, T_I64),
};
const size_t h5s_ngpu_mem_cols = sizeof h5s_gpu_mem_cols / sizeof h5s_gpu_mem_cols[0];

const mcol h5s_gpu_strlike_cols[] = {MC("strings_like", strings_like, T_I64)};
const size_t h5s_ngpu_strlike_cols = sizeof h5s_gpu_strlike_cols / sizeof h5s_gpu_strlike_cols[0];

/* The per-GPU scalars /gpus keeps of a graph, each the same field in
 * gmeta and lsim_graph: one list for both directions (h5s_meta_from_graph,
 * graph_alloc). The latency mode (uint8_t in gmeta, an enum in the graph)
 * and the counts are converted by hand. */
typedef struct gscal {
    const char *name;
    size_t meta, graph, msz, gsz;
} gscal;
#define GSC(f) {#f, offsetof(gmeta, f), offsetof(lsim_graph, f), FSZ(gmeta, f), FSZ(lsim_graph, f)}
static const gscal gscals[] = {
    GSC(rank),           GSC(world_size), GSC(t0),       GSC(queued_gap_ns),   GSC(launch_latency_ns),
    GSC(launch_samples), GSC(prewindow),  GSC(releases), GSC(sync_events_used), GSC(edges_by_class),
    GSC(inferred_by_class), GSC(dropped), GSC(mem_events), GSC(mem_source), GSC(mem_device),
    GSC(mem_peak_allocated), GSC(mem_peak_reserved), GSC(mem_capacity),
};
#define NGSCALS (sizeof gscals / sizeof gscals[0])

int h5s_check_layout(sctx *c)
{
    for (size_t k = 0; k < NGSCALS; k++)
        if (gscals[k].msz != gscals[k].gsz)
            return h5s_fail(c, LSIM_EINTERNAL, "store field %s: gmeta and lsim_graph disagree on its size", gscals[k].name);
    for (size_t k = 0; k < H5S_NGCOLS; k++)
        if (h5s_gcols[k].esz != h5s_tsize(h5s_gcols[k].t))
            return h5s_fail(c, LSIM_EINTERNAL, "store column %s: field size %zu does not match its type", h5s_gcols[k].name,
                        h5s_gcols[k].esz);
    int rc = h5s_check_cols(c, h5s_gpu_cols, h5s_ngpu_cols);
    if (!rc) rc = h5s_check_cols(c, h5s_gpu_mem_cols, h5s_ngpu_mem_cols);
    return rc ? rc : h5s_check_cols(c, h5s_gpu_strlike_cols, h5s_ngpu_strlike_cols);
}

static void *colbase(const lsim_graph *g, const gcol *k) { return *(void *const *)((const char *)g + k->ptr); }

void h5s_pack(const gcol *k, const lsim_graph *g, size_t rows, char *dst)
{
    const char *b = colbase(g, k);
    size_t es = k->esz;
    if (k->stride == es) {
        if (rows) memcpy(dst, b, rows * es);
        return;
    }
    for (size_t i = 0; i < rows; i++) memcpy(dst + i * es, b + i * k->stride + k->field, es);
}

static void unpack(const gcol *k, lsim_graph *g, size_t rows, const char *src)
{
    char *b = colbase(g, k);
    size_t es = k->esz;
    if (k->stride == es) {
        if (rows) memcpy(b, src, rows * es);
        return;
    }
    for (size_t i = 0; i < rows; i++) memcpy(b + i * k->stride + k->field, src + i * es, es);
}

/* Every row of optional column k of g as its none value (a store written
 * before the column). */
static void fill_none(const gcol *k, lsim_graph *g, size_t rows)
{
    char *b = colbase(g, k);
    for (size_t i = 0; i < rows; i++) {
        char *p = b + i * k->stride + k->field;
        switch (k->t) {
        case T_U8: *(uint8_t *)p = (uint8_t)k->none; break;
        case T_I32: *(int32_t *)p = (int32_t)k->none; break;
        case T_U32: *(uint32_t *)p = (uint32_t)k->none; break;
        case T_I64: *(int64_t *)p = k->none; break;
        default: *(uint64_t *)p = (uint64_t)k->none; break;
        }
    }
}

void h5s_meta_from_graph(gmeta *m, const lsim_graph *g)
{
    memset(m, 0, sizeof *m);
    m->same_as = -1;
    m->strings_like = -1;
    m->latency = (uint8_t)g->latency;
    m->source_size = -1;
    m->cnt[RK_NODE] = g->n;
    m->cnt[RK_EDGE] = g->nedges;
    m->cnt[RK_PROC] = g->nprocs;
    m->cnt[RK_ITER] = g->niters;
    m->cnt[RK_COLL] = g->ncoll;
    uint32_t ns = g->strings ? lsim_strtab_count(g->strings) : 0;
    m->cnt[RK_STR] = ns;
    m->nstr = ns;
    m->cnt[RK_CHAR] = g->strings ? lsim_strtab_text(g->strings) : 0;
    for (size_t k = 0; k < NGSCALS; k++)
        memcpy((char *)m + gscals[k].meta, (const char *)g + gscals[k].graph, gscals[k].msz);
}

/* Offsets = prefix sums of counts, in GPU order (every GPU its own rows). */
static void meta_offsets(gmeta *m, size_t n)
{
    uint64_t acc[RK_N] = {0};
    for (size_t i = 0; i < n; i++) {
        m[i].same_as = -1;
        m[i].strings_like = -1;
        m[i].nstr = m[i].cnt[RK_STR];
        for (int r = 0; r < RK_N; r++) {
            m[i].off[r] = acc[r];
            acc[r] += m[i].cnt[r];
        }
    }
}

/* The table's length: the end of the last GPU with rows of its own (a GPU
 * sharing another's node and edge rows adds none). */
uint64_t h5s_total_rows(const gmeta *m, size_t n, int rk)
{
    for (size_t i = n; i-- > 0;)
        if (m[i].same_as < 0 || (rk != RK_NODE && rk != RK_EDGE)) return m[i].off[rk] + m[i].cnt[rk];
    return 0;
}

/* Chunk rows for a flat table: the largest GPU's rows (so chunks line up
 * with GPU boundaries when GPUs are of equal size), at most CHUNK_MAX_ROWS. */
static uint64_t chunk_rows(const gmeta *m, size_t n, int rk)
{
    uint64_t mx = 0;
    for (size_t i = 0; i < n; i++)
        if (m[i].cnt[rk] > mx) mx = m[i].cnt[rk];
    if (mx > CHUNK_MAX_ROWS) mx = CHUNK_MAX_ROWS;
    return mx ? mx : 1;
}

/* The rows of table rk that GPUs lm[0..n) hold, in GPU order. */
static int sel_table(sctx *c, const gmeta *lm, size_t n, int rk, rowsel *sel)
{
    int rc = 0;
    h5s_sel_one(sel, 0, 0);
    for (size_t i = 0; i < n && !rc; i++) rc = h5s_sel_add(c, sel, lm[i].off[rk], lm[i].cnt[rk]);
    return rc;
}

/* The same for the two string tables (per-string offsets, bytes). */
static int sel_strings(sctx *c, const gmeta *lm, size_t n, rowsel *ssel, rowsel *csel)
{
    int rc = sel_table(c, lm, n, RK_STR, ssel);
    h5s_sel_one(csel, 0, 0);
    if (!rc) rc = sel_table(c, lm, n, RK_CHAR, csel);
    return rc;
}
/* ------------------------------------------------------------ graph write */

void h5s_pack_strings(lsim_graph *const *graphs, const gmeta *m, size_t n, uint32_t *const *patch, uint64_t *o,
                      char *ch, uint32_t *ids)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t at = 0;
        const uint32_t *p = patch ? patch[i] : NULL;
        for (uint64_t k = 0; k < m[i].cnt[RK_STR]; k++) {
            uint32_t id = p ? p[k] : (uint32_t)k;
            const char *str = lsim_strtab_get(graphs[i]->strings, id);
            size_t len = strlen(str);
            o[k] = at;
            if (ids) ids[k] = id;
            memcpy(ch + at, str, len + 1);
            at += len + 1;
        }
        o += m[i].cnt[RK_STR];
        if (ids) ids += m[i].cnt[RK_STR];
        ch += m[i].cnt[RK_CHAR];
    }
}

/* Which strings a GPU replaces of the table it shares: a comparison of
 * the two tables id by id (pointers first: overlays hold the base's). */
size_t h5s_string_patches(const lsim_graph *g, const lsim_graph *base, uint32_t *ids)
{
    uint32_t ns = lsim_strtab_count(g->strings);
    size_t np = 0;
    for (uint32_t k = 0; k < ns; k++) {
        const char *a = lsim_strtab_get(g->strings, k), *b = lsim_strtab_get(base->strings, k);
        if (a != b && strcmp(a, b)) ids[np++] = k;
    }
    return np;
}

/* Write the graph tables of all GPUs under loc (where: its path for
 * messages). This process holds graphs[0..nloc), local GPU i being global
 * GPU h5s_gpu_at(c, gfirst, i) of the list m[0..ngpu) (offsets set).
 * sources[i]: local GPU i's source path text. */
int h5s_write_graph_tables(sctx *c, hid_t loc, const char *where, lsim_graph *const *graphs, size_t nloc,
                              const gmeta *m, size_t ngpu, size_t gfirst, const char *const *sources, int flat)
{
    int rc = 0;
    char *buf = NULL;
    rowsel sel;
    h5s_sel_one(&sel, 0, 0);
    /* /gpus: this process writes its own rows */
    for (size_t i = 0; i < nloc && !rc; i++) rc = h5s_sel_add(c, &sel, h5s_gpu_at(c, gfirst, i), 1);
    gmeta *lm = lsim_malloc((nloc ? nloc : 1) * sizeof *lm);
    if (!rc && !lm) rc = h5s_nomem(c);
    rc = h5s_agree(c, rc);
    if (rc) goto out;
    for (size_t i = 0; i < nloc; i++) lm[i] = m[h5s_gpu_at(c, gfirst, i)];
    rc = h5s_put_records(c, loc, where, "gpus", h5s_gpu_cols, h5s_ngpu_cols, lm, sizeof *lm, ngpu, &sel, nloc,
                     h5s_min_u64(ngpu, CHUNK_MAX_ROWS));
    if (!rc)
        rc = h5s_put_records(c, loc, where, "gpus", h5s_gpu_mem_cols, h5s_ngpu_mem_cols, lm, sizeof *lm, ngpu, &sel,
                             nloc, h5s_min_u64(ngpu, CHUNK_MAX_ROWS));
    /* shared strings: only in tables copied from a store that has them */
    int like = 0;
    for (size_t q = 0; q < ngpu && !like; q++) like = m[q].strings_like >= 0;
    if (!rc && like)
        rc = h5s_put_records(c, loc, where, "gpus", h5s_gpu_strlike_cols, h5s_ngpu_strlike_cols, lm, sizeof *lm, ngpu,
                             &sel, nloc, h5s_min_u64(ngpu, CHUNK_MAX_ROWS));
    /* /gpus/source: fixed-length strings as wide as the longest anywhere */
    if (!rc)
        rc = h5s_put_strings(c, loc, where, "gpus/source", sources, nloc, ngpu, &sel, h5s_min_u64(ngpu, CHUNK_MAX_ROWS));
    h5s_sel_free(&sel);
    if (rc) goto out;
    /* flat graph columns: each GPU's rows, packed in GPU order. !flat: the
     * flat tables are there already (copied from a store), except the
     * optional columns a store written before them lacks: those are
     * written from memory (their none values), so the copy holds every
     * column this version reads */
    for (size_t k = 0; k < H5S_NGCOLS && !rc; k++) {
        const gcol *gc = &h5s_gcols[k];
        int rk = gc->rk;
        if (!flat && (!gc->optional || H5Lexists(loc, gc->name, H5P_DEFAULT) > 0)) continue;
        rc = sel_table(c, lm, nloc, rk, &sel);
        buf = rc ? NULL : lsim_malloc(sel.rows ? sel.rows * gc->esz : 1);
        rc = h5s_agree(c, rc ? rc : buf ? 0 : h5s_nomem(c));
        if (rc) goto out;
        uint64_t at = 0;
        for (size_t i = 0; i < nloc; i++) {
            h5s_pack(gc, graphs[i], lm[i].cnt[rk], buf + at * gc->esz);
            at += lm[i].cnt[rk];
        }
        rc = h5s_agree(c, h5s_put_col(c, loc, where, gc->name, gc->t, 1, h5s_total_rows(m, ngpu, rk), chunk_rows(m, ngpu, rk),
                              &sel, buf));
        free(buf);
        buf = NULL;
        h5s_sel_free(&sel);
    }
    if (rc || !flat) goto out;
    /* strings: per-string offsets (local to the GPU's bytes) and the bytes,
     * each string NUL-terminated */
    {
        rowsel ssel, csel;
        rc = sel_strings(c, lm, nloc, &ssel, &csel);
        uint64_t *so = rc ? NULL : lsim_malloc((ssel.rows ? ssel.rows : 1) * sizeof *so);
        char *chars = rc ? NULL : lsim_malloc(csel.rows ? csel.rows : 1);
        rc = h5s_agree(c, rc ? rc : so && chars ? 0 : h5s_nomem(c));
        if (!rc) {
            h5s_pack_strings(graphs, lm, nloc, NULL, so, chars, NULL);
            rc = h5s_agree(c, h5s_put_col(c, loc, where, "strings/offset", T_U64, 1, h5s_total_rows(m, ngpu, RK_STR),
                                  chunk_rows(m, ngpu, RK_STR), &ssel, so));
            if (!rc)
                rc = h5s_agree(c, h5s_put_col(c, loc, where, "strings/chars", T_U8, 1, h5s_total_rows(m, ngpu, RK_CHAR),
                                      chunk_rows(m, ngpu, RK_CHAR), &csel, chars));
        }
        free(so);
        free(chars);
        h5s_sel_free(&ssel);
        h5s_sel_free(&csel);
    }
    /* the CPU op trees of traced GPUs (none: no group) */
    if (!rc) {
        uint64_t *gid = lsim_malloc((nloc ? nloc : 1) * sizeof *gid);
        rc = h5s_agree(c, gid ? 0 : h5s_nomem(c));
        for (size_t i = 0; !rc && i < nloc; i++) gid[i] = h5s_gpu_at(c, gfirst, i);
        if (!rc) rc = h5s_write_cpu_ops(c, loc, where, graphs, gid, nloc, ngpu);
        free(gid);
    }
out:
    free(buf);
    free(lm);
    h5s_sel_free(&sel);
    return rc;
}

/* Column names on the 2-D datasets, for h5py/h5dump readers. */
int h5s_label_graph_tables(hid_t loc)
{
    const char *cls[LSIM_E_NCLASSES], *drop[LSIM_DROP_NREASONS];
    for (int i = 0; i < LSIM_E_NCLASSES; i++) cls[i] = lsim_edge_class_name((lsim_edge_class)i);
    for (int i = 0; i < LSIM_DROP_NREASONS; i++) drop[i] = lsim_drop_reason_name((lsim_drop_reason)i);
    int rc = 0;
    const char *names[] = {"gpus/edges_by_class", "gpus/inferred_by_class", "gpus/dropped"};
    for (int k = 0; k < 3; k++) {
        hid_t d = H5Dopen2(loc, names[k], H5P_DEFAULT);
        if (d < 0) return -1;
        if (!rc) rc = h5s_put_attr_strs(d, "columns", k < 2 ? cls : drop, k < 2 ? LSIM_E_NCLASSES : LSIM_DROP_NREASONS);
        H5Dclose(d);
    }
    return rc;
}
/* Gather the per-GPU index to every rank, offsets set over all GPUs. */
int h5s_gather_meta(sctx *c, const gmeta *lm, size_t nloc, gmeta **all, size_t *ngpu, size_t *gfirst)
{
    void *m = NULL;
    int rc = h5s_agree(c, h5s_gather_records(c, lm, nloc, sizeof *lm, &m, ngpu, gfirst));
    if (rc) {
        free(m);
        return rc;
    }
    *all = m;
    meta_offsets(*all, *ngpu);
    return 0;
}
/* Root attribute "device": the GPU every trace of the job names in its
 * deviceProperties, when they all name the same one (what-if takes the
 * source GPU from it). Collective under MPI: rank 0's name is the
 * candidate, every rank checks its own graphs. */
int lsim_store_job_device(lsim_graph *const *graphs, size_t n, char *dev, size_t cap)
{
    int ok = 1;
    dev[0] = 0;
    for (size_t i = 0; i < n && ok; i++) {
        const lsim_graph *g = graphs[i];
        const char *d = g->device != UINT32_MAX ? lsim_strtab_get(g->strings, g->device) : NULL;
        if (!d || !*d || strlen(d) >= cap) ok = 0;
        else if (!dev[0]) snprintf(dev, cap, "%s", d);
        else if (strcmp(dev, d)) ok = 0;
    }
    return ok && dev[0];
}

static int write_device_attr(sctx *c, lsim_graph *const *graphs, size_t n)
{
    char dev[256] = "";
    int ok = lsim_store_job_device(graphs, n, dev, sizeof dev) || !n;
    if (c->mpi) {
        char root[256];
        memcpy(root, dev, sizeof root);
        MPI_Bcast(root, (int)sizeof root, MPI_CHAR, 0, c->comm);
        if (n && strcmp(root, dev)) ok = 0;
        if (!root[0]) ok = 0;
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c->comm);
        memcpy(dev, root, sizeof dev);
    }
    if (!ok || !dev[0]) return 0;
    return h5s_agree(c, h5s_put_attr_str(c->file, "device", dev) ? h5s_fail(c, LSIM_EIO, "cannot write the attribute device") : 0);
}

static int write_graphs_impl(sctx *c, lsim_graph *const *graphs, size_t n, const char *command_line,
                             const char *const *source_paths)
{
    int rc = h5s_check_layout(c);
    gmeta *lm = NULL, *m = NULL;
    const char **src = NULL;
    size_t ngpu = 0, gfirst = 0;
    char tmp[4096];
    if (!rc && n && !graphs) rc = h5s_fail(c, LSIM_EARG, "no graphs given");
    for (size_t i = 0; !rc && i < n; i++)
        if (!graphs[i] || !graphs[i]->strings)
            rc = h5s_fail(c, LSIM_EARG, "graph %zu is missing or has no string table", i);
    rc = h5s_agree(c, rc);
    if (rc) return rc;
    lm = lsim_calloc(n ? n : 1, sizeof *lm);
    src = lsim_calloc(n ? n : 1, sizeof *src);
    rc = h5s_agree(c, lm && src ? 0 : h5s_nomem(c));
    if (rc) goto out;
    for (size_t i = 0; i < n && !rc; i++) {
        h5s_meta_from_graph(&lm[i], graphs[i]);
        const char *sp = source_paths ? source_paths[i] : graphs[i]->source;
        src[i] = graphs[i]->source ? graphs[i]->source : sp ? sp : "";
        if (sp) rc = h5s_file_crc(c, sp, &lm[i].source_size, &lm[i].source_crc32);
    }
    rc = h5s_agree(c, rc);
    if (rc) goto out;
    /* latency mode of the set: one mode, or "mixed" */
    int lat = n ? (int)lm[0].latency : 0, mixed = 0;
    for (size_t i = 1; i < n; i++)
        if (lm[i].latency != lat) mixed = 1;
    if (c->mpi) {
        int lo[2] = {n ? lat : INT_MAX, n ? -lat : INT_MAX}, go[2];
        MPI_Allreduce(lo, go, 2, MPI_INT, MPI_MIN, c->comm);
        int anymixed = 0;
        MPI_Allreduce(&mixed, &anymixed, 1, MPI_INT, MPI_MAX, c->comm);
        mixed = anymixed || (go[0] != INT_MAX && go[0] != -go[1]);
        lat = go[0] == INT_MAX ? 0 : go[0];
    }
    rc = h5s_gather_meta(c, lm, n, &m, &ngpu, &gfirst);
    if (rc) goto out;
    rc = h5s_create_tmp(c, tmp, sizeof tmp);
    if (rc) goto out;
    rc = h5s_agree(c, h5s_write_root_attrs(c, LSIM_STORE_KIND_GRAPHS, command_line ? command_line : "",
                                   mixed ? "mixed" : lsim_latency_mode_name((lsim_latency_mode)lat)));
    if (!rc) rc = write_device_attr(c, graphs, n);
    if (!rc) rc = h5s_write_graph_tables(c, c->file, "", graphs, n, m, ngpu, gfirst, src, 1);
    if (!rc) rc = h5s_agree(c, (rc = h5s_label_graph_tables(c->file)) ? h5s_label_fail(c, rc, "/gpus") : 0);
    if (!rc) rc = h5s_describe(c, c->file, "");
    rc = h5s_finish_tmp(c, tmp, rc);
out:
    free(lm);
    free(m);
    free(src);
    return rc;
}

int lsim_store_write_graphs_ex(const char *path, lsim_graph *const *graphs, size_t n,
                               const lsim_store_write_opts *o, lsim_err *err)
{
    sctx c;
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    h5s_apply_opts(&c, o);
    int rc = path ? write_graphs_impl(&c, graphs, n, o ? o->command_line : NULL, o ? o->source_paths : NULL)
                  : h5s_fail(&c, LSIM_EARG, "no output path");
    return h5s_ctx_done(&c, rc, err);
}

int lsim_store_write_graphs(const char *path, lsim_graph *const *graphs, size_t n, const char *command_line,
                            const char *const *source_paths, lsim_err *err)
{
    lsim_store_write_opts o = {command_line, source_paths, 0, {0}};
    return lsim_store_write_graphs_ex(path, graphs, n, &o, err);
}

int lsim_store_write_graphs_mpi_ex(const char *path, MPI_Comm comm, lsim_graph *const *graphs, size_t n,
                                   const lsim_store_write_opts *o, lsim_err *err)
{
    sctx c;
    h5s_ctx_init(&c, path, 1, comm);
    h5s_apply_opts(&c, o);
    int rc = path ? write_graphs_impl(&c, graphs, n, o ? o->command_line : NULL, o ? o->source_paths : NULL)
                  : h5s_fail(&c, LSIM_EARG, "no output path");
    return h5s_ctx_done(&c, rc, err);
}

int lsim_store_write_graphs_mpi(const char *path, MPI_Comm comm, lsim_graph *const *graphs, size_t n,
                                const char *command_line, const char *const *source_paths, lsim_err *err)
{
    lsim_store_write_opts o = {command_line, source_paths, 0, {0}};
    return lsim_store_write_graphs_mpi_ex(path, comm, graphs, n, &o, err);
}
/* ------------------------------------------------------------ graph read */

/* Read and check /gpus (all GPUs) under loc. */
/* GPU i's /gpus values (world size, rank, latencies) against the bounds
 * every graph keeps (lsim_graph_check_tables): checked with the table, so
 * that every reader of a store (info too, which reads no graph) refuses
 * the same rows. */
static int check_gpu_row(sctx *c, const char *where, const gmeta *m, size_t i)
{
    lsim_graph t;
    memset(&t, 0, sizeof t);
    for (size_t k = 0; k < NGSCALS; k++)
        memcpy((char *)&t + gscals[k].graph, (const char *)m + gscals[k].meta, gscals[k].gsz);
    char label[LSIM_ERR_LEN];
    lsim_err e = {0};
    snprintf(label, sizeof label, "%s%s%s", c->path, *where ? " " : "", where);
    if (!lsim_graph_check_tables(&t, label, i, &e)) return 0;
    c->e = e;
    return e.code;
}

/* Out of memory for the GPU table of n rows (where: "" for the store's own,
 * else the group holding it). */
static int gpu_table_nomem(sctx *c, const char *where, size_t n)
{
    if (!*where) return h5s_fail(c, LSIM_ENOMEM, "out of memory reading its GPU table (%zu GPUs)", n);
    return h5s_fail(c, LSIM_ENOMEM, "out of memory reading the GPU table of %s (%zu GPUs)", where, n);
}

int h5s_read_gpu_table(sctx *c, hid_t loc, const char *where, gmeta **out, char ***sources, size_t *ngpu)
{
    *out = NULL;
    *ngpu = 0;
    if (sources) *sources = NULL;
    int rc = 0;
    size_t n = 0;
    /* the row count comes from /gpus/rank */
    if (H5Lexists(loc, "gpus", H5P_DEFAULT) <= 0 || H5Lexists(loc, "gpus/rank", H5P_DEFAULT) <= 0)
        rc = h5s_fail(c, LSIM_EFORMAT, "dataset %s/gpus/rank is missing", where);
    else {
        hid_t d = H5Dopen2(loc, "gpus/rank", H5P_DEFAULT);
        hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
        hsize_t dims[2];
        if (sp < 0 || H5Sget_simple_extent_ndims(sp) != 1 || H5Sget_simple_extent_dims(sp, dims, NULL) < 0)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/rank is not a 1-D dataset", where);
        else if (dims[0] > ((hsize_t)1 << 31))
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/rank has %llu rows", where, (unsigned long long)dims[0]);
        else
            n = (size_t)dims[0];
        if (sp >= 0) H5Sclose(sp);
        if (d >= 0) H5Dclose(d);
    }
    gmeta *m = NULL;
    size_t *own = NULL, nown = 0;
    char **src = NULL;
    rc = h5s_agree(c, rc);
    if (rc) goto cleanup;
    /* a large store under a tight memory limit fails here: the message
     * names the file and the table's size, which says why (issue 40: this
     * wrote through the NULL table and died of SIGSEGV) */
    m = lsim_calloc(n ? n : 1, sizeof *m);
    rc = h5s_agree(c, m ? 0 : gpu_table_nomem(c, where, n));
    if (rc) goto cleanup;
    rc = h5s_get_records(c, loc, where, "gpus", h5s_gpu_cols, h5s_ngpu_cols, m, sizeof *m, n, 0, n);
    /* the memory columns are optional (a store written before them: 0) */
    if (!rc && H5Lexists(loc, "gpus/mem_events", H5P_DEFAULT) > 0)
        rc = h5s_get_records(c, loc, where, "gpus", h5s_gpu_mem_cols, h5s_ngpu_mem_cols, m, sizeof *m, n, 0, n);
    /* shared strings are optional too (absent: every table its own) */
    for (size_t i = 0; i < n; i++) m[i].strings_like = -1;
    if (!rc && H5Lexists(loc, "gpus/strings_like", H5P_DEFAULT) > 0)
        rc = h5s_get_records(c, loc, where, "gpus", h5s_gpu_strlike_cols, h5s_ngpu_strlike_cols, m, sizeof *m, n, 0,
                             n);
    /* a GPU's strings may be those of an earlier GPU whose table is its
     * own, replaced in at most as many places as that table has strings */
    for (size_t i = 0; !rc && i < n; i++) {
        int64_t t = m[i].strings_like;
        m[i].nstr = m[i].cnt[RK_STR];
        if (t == -1) continue;
        if (t < 0 || (uint64_t)t >= i || m[t].strings_like != -1 || m[i].cnt[RK_STR] > m[t].cnt[RK_STR])
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/strings_like of GPU %zu is %lld: not -1 nor an earlier GPU with a "
                                           "string table of its own and at least as many strings",
                          where, i, (long long)t);
        else
            m[i].nstr = m[t].cnt[RK_STR];
    }
    /* offsets must be the prefix sums of the counts (GPU order, no gaps),
     * except that a GPU's node and edge offsets may point at the rows of an
     * earlier GPU with the same counts (shared structure): that GPU adds no
     * node or edge rows. own[] lists the GPUs with node rows of their own,
     * whose node offsets ascend, for the lookup. */
    uint64_t acc[RK_N] = {0};
    own = rc ? NULL : lsim_malloc((n ? n : 1) * sizeof *own);
    if (!rc && !own) rc = gpu_table_nomem(c, where, n);
    for (size_t i = 0; !rc && i < n; i++) {
        m[i].same_as = -1;
        if (m[i].off[RK_NODE] != acc[RK_NODE] && m[i].cnt[RK_NODE]) {
            size_t lo = 0, hi = nown; /* the first own GPU whose node offset >= this one's */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (m[own[mid]].off[RK_NODE] < m[i].off[RK_NODE]) lo = mid + 1;
                else hi = mid;
            }
            size_t j = lo < nown ? own[lo] : 0;
            if (lo < nown && m[j].off[RK_NODE] == m[i].off[RK_NODE] && m[j].cnt[RK_NODE] == m[i].cnt[RK_NODE] &&
                m[j].off[RK_EDGE] == m[i].off[RK_EDGE] && m[j].cnt[RK_EDGE] == m[i].cnt[RK_EDGE])
                m[i].same_as = (int64_t)j;
            else
                rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/node_offset of GPU %zu is %llu: neither the next rows (%llu) nor "
                                               "the node and edge rows of an earlier GPU with the same counts",
                              where, i, (unsigned long long)m[i].off[RK_NODE], (unsigned long long)acc[RK_NODE]);
        } else if (m[i].cnt[RK_NODE]) {
            own[nown++] = i;
        }
        for (int r = 0; r < RK_N && !rc; r++) {
            if (m[i].same_as >= 0 && (r == RK_NODE || r == RK_EDGE)) continue;
            if (m[i].off[r] != acc[r])
                rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/%s_offset of GPU %zu is %llu, expected %llu (the sum of the "
                                           "previous GPUs' counts)",
                          where, rk_name[r], i, (unsigned long long)m[i].off[r], (unsigned long long)acc[r]);
            else if (m[i].cnt[r] > UINT64_MAX / 16 - acc[r])
                rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/%s_count of GPU %zu is too large", where, rk_name[r], i);
            else
                acc[r] += m[i].cnt[r];
        }
        if (rc) break;
        if (m[i].cnt[RK_NODE] > UINT32_MAX || m[i].cnt[RK_PROC] > UINT32_MAX || m[i].cnt[RK_ITER] > UINT32_MAX ||
            m[i].cnt[RK_STR] > UINT32_MAX || m[i].cnt[RK_COLL] > INT32_MAX)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus: GPU %zu has more rows than node/processor/string ids can address",
                      where, i);
        else if (m[i].latency > LSIM_LAT_OBSERVED)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus/latency_mode of GPU %zu is %u (0 or 1)", where, i, m[i].latency);
        else
            rc = check_gpu_row(c, where, &m[i], i);
    }
    rc = h5s_agree(c, rc);
    if (!rc && sources) rc = h5s_get_strings(c, loc, where, "gpus/source", n, 0, n, &src);
    if (!rc) {
        *out = m;
        *ngpu = n;
        if (sources) *sources = src;
        m = NULL;
    }
cleanup:
    free(own);
    free(m);
    return rc;
}

/* structure 0: not the node columns and edges (a GPU that will share
 * another's, lsim_graph_share). */
/* colls: 0 when g's collectives will be its leader's (colls_pending):
 * none allocated. */
static int graph_alloc(lsim_graph *g, const gmeta *m, int structure, int colls)
{
    size_t n = (size_t)m->cnt[RK_NODE], e = (size_t)m->cnt[RK_EDGE];
#define AL(f, cnt)                                                                                                     \
    do {                                                                                                               \
        size_t c_ = (cnt) ? (cnt) : 1;                                                                                 \
        if (!(g->f = lsim_malloc(c_ * sizeof *g->f))) return LSIM_ENOMEM;                                                  \
    } while (0)
    if (structure) {
#define AL_NODE(f, type) AL(f, n);
        LSIM_GRAPH_COLUMNS(AL_NODE)
#undef AL_NODE
        AL(in_off, n + 1);
        AL(out_off, n + 1);
        AL(in_src, e);
        AL(in_delay, e);
        AL(in_class, e);
        AL(out_dst, e);
    }
    AL(procs, (size_t)m->cnt[RK_PROC]);
    AL(iters, (size_t)m->cnt[RK_ITER]);
    if (colls) AL(colls, (size_t)m->cnt[RK_COLL]);
#undef AL
    memset(g->procs, 0, (m->cnt[RK_PROC] ? m->cnt[RK_PROC] : 1) * sizeof *g->procs);
    memset(g->iters, 0, (m->cnt[RK_ITER] ? m->cnt[RK_ITER] : 1) * sizeof *g->iters);
    if (colls) memset(g->colls, 0, (m->cnt[RK_COLL] ? m->cnt[RK_COLL] : 1) * sizeof *g->colls);
    g->latency = (lsim_latency_mode)m->latency;
    g->n = n;
    g->nedges = e;
    g->nprocs = (uint32_t)m->cnt[RK_PROC];
    g->niters = (uint32_t)m->cnt[RK_ITER];
    g->ncoll = (size_t)m->cnt[RK_COLL];
    for (size_t k = 0; k < NGSCALS; k++)
        memcpy((char *)g + gscals[k].graph, (const char *)m + gscals[k].meta, gscals[k].gsz);
    return 0;
}

/* Whether b's processors are a's as the checks below read them: the same
 * kind and node count each (their pid and tid name the GPU and differ
 * from GPU to GPU of a synthesized job, so comparing them whole checked
 * every GPU's nodes again: 1.65 G nodes of a 98,304-GPU job). */
static int same_proc_shape(const lsim_graph *a, const lsim_graph *b)
{
    for (uint32_t p = 0; p < b->nprocs; p++)
        if (a->procs[p].is_gpu != b->procs[p].is_gpu || a->procs[p].nnodes != b->procs[p].nnodes) return 0;
    return 1;
}

/* Everything the engine, metrics, critical path and reports index with.
 * lead: a GPU already checked whose node columns and edges g's are (shared
 * structure), or NULL. When g's processors are lead's in kind and node
 * count (same_proc_shape) and it has as many strings, iterations and collectives and the same t0,
 * every check of a node, an edge and a bound gives lead's answer (each
 * reads only the structure and those), so only g's own tables are
 * checked: 4,095 of the 4,096 GPUs of a synthesized job's stages. */
static int validate_graph(sctx *c, const char *where, const lsim_graph *g, size_t gi, const lsim_graph *lead)
{
    size_t n = g->n;
    uint32_t nstr = lsim_strtab_count(g->strings);
    int checked = lead && lead->n == n && lead->nedges == g->nedges && lead->nprocs == g->nprocs &&
                  lsim_strtab_count(lead->strings) == nstr && lead->niters == g->niters && lead->ncoll == g->ncoll &&
                  lead->t0 == g->t0 && same_proc_shape(lead, g);
#define BAD(...) return h5s_fail(c, LSIM_EFORMAT, __VA_ARGS__)
    for (size_t v = 0; !checked && v < n; v++) {
        if (g->kind[v] >= LSIM_N_NKINDS)
            BAD("%s/nodes/kind of GPU %zu: node %zu has kind %u (valid: 0..%d)", where, gi, v, g->kind[v],
                LSIM_N_NKINDS - 1);
        if (g->proc[v] >= g->nprocs)
            BAD("%s/nodes/proc of GPU %zu: node %zu is on processor %u, the GPU has %u", where, gi, v, g->proc[v],
                g->nprocs);
        if (g->name[v] >= nstr)
            BAD("%s/nodes/name of GPU %zu: node %zu has string id %u, the GPU has %u strings", where, gi, v,
                g->name[v], nstr);
        if (g->dur[v] < 0)
            BAD("%s/nodes/dur of GPU %zu: node %zu has a negative duration (%lld ns)", where, gi, v,
                (long long)g->dur[v]);
        if (g->iter[v] < -1 || (g->iter[v] >= 0 && (uint32_t)g->iter[v] >= g->niters))
            BAD("%s/nodes/iter of GPU %zu: node %zu has iteration %d, the GPU has %u", where, gi, v, g->iter[v],
                g->niters);
        if (g->coll[v] < -1 || (g->coll[v] >= 0 && (size_t)g->coll[v] >= g->ncoll))
            BAD("%s/nodes/coll of GPU %zu: node %zu has collective %d, the GPU has %zu", where, gi, v, g->coll[v],
                g->ncoll);
        if (g->phase[v] >= LSIM_PHASE_N)
            BAD("%s/nodes/phase of GPU %zu: node %zu has phase %u (valid: 0..%d)", where, gi, v, g->phase[v],
                LSIM_PHASE_N - 1);
        if (g->fwd_seq[v] < -1)
            BAD("%s/nodes/fwd_seq of GPU %zu: node %zu has sequence number %d (valid: -1 or more)", where, gi, v,
                g->fwd_seq[v]);
        if (g->grad_bytes[v] < 0 || g->grad_bytes[v] > LSIM_DUR_MAX ||
            (g->grad_bytes[v] && g->procs[g->proc[v]].is_gpu))
            BAD("%s/nodes/grad_bytes of GPU %zu: node %zu has %lld gradient bytes (valid: 0 .. 1e13, on CPU nodes "
                "only)",
                where, gi, v, (long long)g->grad_bytes[v]);
        if (g->in_off[v] > g->in_off[v + 1] || g->in_off[v + 1] > g->nedges)
            BAD("%s/nodes/in_off of GPU %zu is not a valid offset list at node %zu (%llu, then %llu; %llu edges)",
                where, gi, v, (unsigned long long)g->in_off[v], (unsigned long long)g->in_off[v + 1],
                (unsigned long long)g->nedges);
    }
    if (g->in_off[0] != 0) BAD("%s/nodes/in_off of GPU %zu does not start at 0", where, gi);
    for (uint64_t k = 0; !checked && k < g->nedges; k++) {
        if (g->in_src[k] >= n)
            BAD("%s/edges/in_src of GPU %zu: edge %llu points to node %u, the GPU has %zu nodes", where, gi,
                (unsigned long long)k, g->in_src[k], n);
        if ((g->in_class[k] & LSIM_EDGE_CLASS_MASK) >= LSIM_E_NCLASSES ||
            ((g->in_class[k] & LSIM_EDGE_SM) && (g->in_class[k] & (LSIM_EDGE_END | LSIM_EDGE_CLASS_MASK)) != LSIM_E_INFERRED))
            BAD("%s/edges/in_class of GPU %zu: edge %llu has class %u (valid: 0..%d, + 0x80 for end-edges, %u for SM edges)",
                where, gi, (unsigned long long)k, g->in_class[k], LSIM_E_NCLASSES - 1, LSIM_EDGE_SM | LSIM_E_INFERRED);
    }
    uint64_t *cnt = checked ? NULL : lsim_calloc(g->nprocs ? g->nprocs : 1, sizeof *cnt);
    if (!checked && !cnt) return h5s_nomem(c);
    for (size_t v = 0; !checked && v < n; v++) cnt[g->proc[v]]++;
    for (uint32_t p = 0; !checked && p < g->nprocs; p++) {
        if (g->procs[p].is_gpu > 1 || cnt[p] != g->procs[p].nnodes) {
            unsigned long long have = (unsigned long long)cnt[p];
            free(cnt);
            BAD("%s/procs of GPU %zu: processor %u claims %u nodes (is_gpu %u), the nodes say %llu", where, gi, p,
                g->procs[p].nnodes, g->procs[p].is_gpu, have);
        }
    }
    free(cnt);
    for (uint32_t i = 0; i < g->niters; i++)
        if (g->iters[i].name >= nstr)
            BAD("%s/iters/name of GPU %zu: iteration %u has string id %u, the GPU has %u strings", where, gi, i,
                g->iters[i].name, nstr);
    for (size_t i = 0; i < g->ncoll; i++) {
        const lsim_coll_info *ci = &g->colls[i];
        if (ci->kind > LSIM_COLL_OTHER)
            BAD("%s/colls/kind of GPU %zu: collective %zu has kind %u", where, gi, i, ci->kind);
        if ((ci->pg_name != UINT32_MAX && ci->pg_name >= nstr) || (ci->pg_ranks != UINT32_MAX && ci->pg_ranks >= nstr))
            BAD("%s/colls/pg_name or pg_ranks of GPU %zu: collective %zu names a string past the GPU's %u", where, gi,
                i, nstr);
    }
#undef BAD
    /* durations, delays and times within the graph bounds (graph.h): a
     * duration of INT64_MAX would otherwise be simulated into a window of
     * 10^13 duty-cycle bins or a wrapped, negative one */
    {
        char label[LSIM_ERR_LEN];
        lsim_err e = {0};
        snprintf(label, sizeof label, "%s%s%s", c->path, *where ? " " : "", where);
        if (checked ? lsim_graph_check_tables(g, label, gi, &e) : lsim_graph_check_bounds(g, label, gi, &e)) {
            c->e = e;
            return e.code;
        }
    }
    return 0;
}

/* dst's node columns and edges := src's (same counts; dst allocated by
 * graph_alloc with its structure). */
static void copy_structure(lsim_graph *dst, const lsim_graph *src)
{
    size_t n = src->n, e = (size_t)src->nedges;
#define CP_(f, type) memcpy(dst->f, src->f, (n ? n : 1) * sizeof(type));
    LSIM_GRAPH_COLUMNS(CP_)
#undef CP_
    memcpy(dst->in_off, src->in_off, (n + 1) * sizeof *dst->in_off);
    memcpy(dst->out_off, src->out_off, (n + 1) * sizeof *dst->out_off);
    memcpy(dst->in_src, src->in_src, (e ? e : 1) * sizeof *dst->in_src);
    memcpy(dst->in_delay, src->in_delay, (e ? e : 1) * sizeof *dst->in_delay);
    memcpy(dst->in_class, src->in_class, (e ? e : 1) * sizeof *dst->in_class);
    memcpy(dst->out_dst, src->out_dst, (e ? e : 1) * sizeof *dst->out_dst);
}

void lsim_store_free_graphs(lsim_graph **graphs, size_t n)
{
    if (!graphs) return;
    for (size_t i = 0; i < n; i++) lsim_graph_free(graphs[i]);
    free(graphs);
}

/* A replaced string must not repeat one the base has at another id that
 * this GPU keeps, nor another replaced one (interning checks the rest).
 * t: the GPU's overlay of base, diff[0..nd): the ids replaced. */
static int check_replaced(sctx *c, const char *where, size_t gi, const lsim_strtab *t, const lsim_strtab *base,
                          const uint32_t *diff, uint32_t nd)
{
    for (uint32_t a = 0; a < nd; a++) {
        const char *sa = lsim_strtab_get(t, diff[a]);
        uint32_t j;
        int dup = lsim_strtab_find(base, sa, strlen(sa), &j) && j != diff[a] && lsim_strtab_get(t, j) == lsim_strtab_get(base, j);
        for (uint32_t b = 0; b < a && !dup; b++) dup = !strcmp(sa, lsim_strtab_get(t, diff[b]));
        if (dup) return h5s_fail(c, LSIM_EFORMAT, "%s/strings of GPU %zu: string %u repeats another", where, gi, diff[a]);
    }
    return 0;
}

/* String k of a GPU's rows (o: its per-string offsets, ns of them; ch, nb:
 * its bytes) as a checked NUL-terminated range: *s, *len. */
static int string_at(sctx *c, const char *where, size_t gi, const uint64_t *o, const char *ch, uint64_t ns, uint64_t nb,
                     uint64_t k, const char **s, size_t *len)
{
    uint64_t b = o[k], e = k + 1 < ns ? o[k + 1] : nb;
    if (b >= e || e > nb || ch[e - 1] != '\0' || memchr(ch + b, '\0', e - 1 - b) != NULL)
        return h5s_fail(c, LSIM_EFORMAT, "%s/strings/offset of GPU %zu: string %llu is not a NUL-terminated range "
                                         "inside the GPU's %llu bytes of /strings/chars",
                        where, gi, (unsigned long long)k, (unsigned long long)nb);
    *s = ch + b;
    *len = e - 1 - b;
    return 0;
}

/* A GPU that shares its leader's structure (lead < its index; reading
 * shared), in a store without shared strings, and has as many strings:
 * its table is an overlay of the leader's with the strings that differ
 * replaced (strtab.h). 0 done, 1 not applicable (intern instead), or an
 * error. */
static int overlay_strings(sctx *c, const char *where, size_t gi, lsim_graph *g, const lsim_graph *lead,
                           const uint64_t *o, const char *ch, uint64_t ns, uint64_t nb)
{
    if (!lead || !lead->strings || !ns || lsim_strtab_count(lead->strings) != ns) return 1;
    lsim_strtab *t = NULL;
    uint32_t *diff = NULL, nd = 0;
    int rc = 0;
    if (lsim_strtab_new_overlay(lead->strings, &t) || !(diff = lsim_malloc((ns ? ns : 1) * sizeof *diff))) {
        rc = h5s_nomem(c);
        goto cleanup;
    }
    for (uint64_t k = 0; k < ns && !rc; k++) {
        const char *sk = NULL;
        size_t len = 0;
        if ((rc = string_at(c, where, gi, o, ch, ns, nb, k, &sk, &len))) break;
        const char *ls = lsim_strtab_get(lead->strings, (uint32_t)k);
        if (strlen(ls) == len && !memcmp(ls, sk, len)) continue;
        if (lsim_strtab_replace(t, (uint32_t)k, sk, len)) rc = h5s_nomem(c);
        diff[nd++] = (uint32_t)k;
    }
    if (!rc) rc = check_replaced(c, where, gi, t, lead->strings, diff, nd);
    if (!rc) {
        lsim_strtab_free(g->strings);
        g->strings = t;
        t = NULL;
    }
cleanup:
    lsim_strtab_free(t);
    free(diff);
    return rc;
}

/* A GPU whose strings are base's but for its own rows (shared strings,
 * /gpus/strings_like): ids[0..np) say which string each row replaces,
 * ascending. Shared reading: an overlay of base; otherwise a table of its
 * own, interned in id order. Into *out (the caller frees the old one). */
static int patched_strings(sctx *c, const char *where, size_t gi, lsim_strtab *base, const uint32_t *ids,
                           const uint64_t *o, const char *ch, uint64_t np, uint64_t nb, lsim_strtab **out)
{
    uint32_t nbase = lsim_strtab_count(base);
    lsim_strtab *t = NULL;
    const char **ps = lsim_malloc((np ? np : 1) * sizeof *ps);
    size_t *pl = lsim_malloc((np ? np : 1) * sizeof *pl);
    int rc = ps && pl ? 0 : h5s_nomem(c);
    for (uint64_t k = 0; k < np && !rc; k++) {
        if (ids[k] >= nbase || (k && ids[k] <= ids[k - 1]))
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/strings/id of GPU %zu: row %llu replaces string %u, not one of the %u "
                                           "strings of the table it shares, after the previous row's",
                          where, gi, (unsigned long long)k, ids[k], nbase);
        else
            rc = string_at(c, where, gi, o, ch, np, nb, k, &ps[k], &pl[k]);
    }
    if (!rc && c->share) {
        if (lsim_strtab_new_overlay(base, &t)) rc = h5s_nomem(c);
        for (uint64_t k = 0; k < np && !rc; k++)
            if (lsim_strtab_replace(t, ids[k], ps[k], pl[k])) rc = h5s_nomem(c);
        if (!rc) rc = check_replaced(c, where, gi, t, base, ids, (uint32_t)np);
    } else if (!rc) {
        if (!(t = lsim_strtab_new()) || lsim_strtab_reserve(t, nbase)) rc = h5s_nomem(c);
        for (uint32_t k = 0, p = 0; k < nbase && !rc; k++) {
            int mine = p < np && ids[p] == k;
            const char *sk = mine ? ps[p] : lsim_strtab_get(base, k);
            size_t len = mine ? pl[p] : strlen(sk);
            uint32_t id;
            p += (uint32_t)mine;
            if (lsim_strtab_intern(t, sk, len, &id)) rc = h5s_nomem(c);
            else if (id != k)
                rc = h5s_fail(c, LSIM_EFORMAT, "%s/strings of GPU %zu: string %u repeats string %u", where, gi, k, id);
        }
    }
    free(ps);
    free(pl);
    if (rc) {
        lsim_strtab_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* The string tables of GPUs lm[0..count) (global GPU list ? list[i] :
 * first + i) into gs[i]->strings, each string checked to be a
 * NUL-terminated range of its GPU's bytes and new. A GPU whose strings
 * are an earlier GPU's (strings_like) needs that GPU's table: read too
 * when not requested, in GPU order with the others (the rows of string
 * tables ascend with the GPUs), and freed at the end. Collective in MPI
 * mode. */
static int read_strings(sctx *c, hid_t loc, const char *where, const gmeta *m, size_t ngpu, const gmeta *lm,
                        size_t count, size_t first, const size_t *list, const size_t *lead, lsim_graph **gs)
{
    rowsel ssel, csel, isel;
    h5s_sel_one(&ssel, 0, 0);
    h5s_sel_one(&csel, 0, 0);
    h5s_sel_one(&isel, 0, 0);
    uint64_t *so = NULL;
    char *chars = NULL;
    uint32_t *ids = NULL;
    /* the GPUs whose rows are read (rd, ascending: the requested ones and
     * the tables they share), their index among the requested (req, or
     * SIZE_MAX) and their tables (tab; the requested ones' are gs[]'s) */
    size_t nrd = 0, *rd = lsim_malloc((2 * count + 1) * sizeof *rd), *req = lsim_malloc((2 * count + 1) * sizeof *req);
    gmeta *rm = lsim_malloc((2 * count + 1) * sizeof *rm);
    lsim_strtab **tab = lsim_calloc(2 * count + 1, sizeof *tab);
    int rc = rd && req && rm && tab ? 0 : h5s_nomem(c), any_like = 0;
    for (size_t i = 0; !rc && i < count; i++) {
        size_t gi = list ? list[i] : first + i;
        int64_t t = lm[i].strings_like;
        if (t >= 0) {
            any_like = 1;
            /* t < gi: insert it before gi unless it is there already */
            size_t p = nrd;
            while (p > 0 && rd[p - 1] > (size_t)t) p--;
            if (!(p > 0 && rd[p - 1] == (size_t)t)) {
                memmove(rd + p + 1, rd + p, (nrd - p) * sizeof *rd);
                memmove(req + p + 1, req + p, (nrd - p) * sizeof *req);
                rd[p] = (size_t)t;
                req[p] = SIZE_MAX;
                nrd++;
            }
        }
        rd[nrd] = gi;
        req[nrd++] = i;
    }
    for (size_t k = 0; !rc && k < nrd; k++) rm[k] = m[rd[k]];
    if (!rc) rc = sel_strings(c, rm, nrd, &ssel, &csel);
    if (!rc) {
        so = lsim_malloc((ssel.rows ? ssel.rows : 1) * sizeof *so);
        chars = lsim_malloc(csel.rows ? csel.rows : 1);
        if (!so || !chars) rc = h5s_nomem(c);
    }
    /* the ids of the rows of GPUs that replace strings */
    for (size_t k = 0; !rc && any_like && k < nrd; k++)
        if (rm[k].strings_like >= 0) rc = h5s_sel_add(c, &isel, rm[k].off[RK_STR], rm[k].cnt[RK_STR]);
    if (!rc && isel.rows && !(ids = lsim_malloc(isel.rows * sizeof *ids))) rc = h5s_nomem(c);
    if (c->mpi) MPI_Allreduce(MPI_IN_PLACE, &any_like, 1, MPI_INT, MPI_MAX, c->comm);
    if (!rc && any_like && H5Lexists(loc, "strings/id", H5P_DEFAULT) <= 0)
        rc = h5s_fail(c, LSIM_EFORMAT, "%s/strings/id is missing: /gpus/strings_like says GPUs share string tables", where);
    rc = h5s_agree(c, rc);
    if (!rc)
        rc = h5s_agree(c, h5s_get_col_sel(c, loc, where, "strings/offset", T_U64, h5s_total_rows(m, ngpu, RK_STR), &ssel, so));
    if (!rc)
        rc = h5s_agree(c, h5s_get_col_sel(c, loc, where, "strings/chars", T_U8, h5s_total_rows(m, ngpu, RK_CHAR), &csel, chars));
    if (!rc && any_like)
        rc = h5s_agree(c, h5s_get_col_sel(c, loc, where, "strings/id", T_U32, h5s_total_rows(m, ngpu, RK_STR), &isel, ids));
    uint64_t sat = 0, cat = 0, iat = 0;
    for (size_t k = 0; !rc && k < nrd; k++) {
        const uint64_t *o = so + sat;
        const char *ch = chars + cat;
        size_t gi = rd[k], i = req[k];
        uint64_t ns = rm[k].cnt[RK_STR], nb = rm[k].cnt[RK_CHAR];
        sat += ns;
        cat += nb;
        if (rm[k].strings_like >= 0) {
            size_t lo = 0, hi = k; /* the table it shares: read before it */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (rd[mid] < (size_t)rm[k].strings_like) lo = mid + 1;
                else hi = mid;
            }
            lsim_strtab *t = NULL;
            rc = patched_strings(c, where, gi, tab[lo], ids + iat, o, ch, ns, nb, &t);
            iat += ns;
            if (rc) break;
            if (i != SIZE_MAX) {
                lsim_strtab_free(gs[i]->strings);
                gs[i]->strings = t;
            }
            tab[k] = t;
            continue;
        }
        if (i != SIZE_MAX && c->share && lead[i] != i) {
            int orc = overlay_strings(c, where, gi, gs[i], gs[lead[i]], o, ch, ns, nb);
            if (orc <= 0) {
                rc = orc;
                tab[k] = gs[i]->strings;
                continue;
            }
        }
        lsim_strtab *t = i != SIZE_MAX ? gs[i]->strings : (tab[k] = lsim_strtab_new());
        if (!t) rc = h5s_nomem(c);
        for (uint64_t q = 0; q < ns && !rc; q++) {
            const char *sq = NULL;
            size_t len = 0;
            uint32_t id;
            if ((rc = string_at(c, where, gi, o, ch, ns, nb, q, &sq, &len))) break;
            if (lsim_strtab_intern(t, sq, len, &id)) rc = h5s_nomem(c);
            else if (id != q)
                rc = h5s_fail(c, LSIM_EFORMAT, "%s/strings of GPU %zu: string %llu repeats string %u", where, gi,
                              (unsigned long long)q, id);
        }
        if (!rc && ns == 0 && nb != 0)
            rc = h5s_fail(c, LSIM_EFORMAT, "%s/gpus: GPU %zu has string bytes but no strings", where, gi);
        if (i != SIZE_MAX) tab[k] = t;
    }
    /* the tables read only to be shared (overlays hold their own reference) */
    for (size_t k = 0; tab && k < nrd; k++)
        if (req[k] == SIZE_MAX) lsim_strtab_free(tab[k]);
    free(tab);
    free(rm);
    free(req);
    free(rd);
    free(so);
    free(chars);
    free(ids);
    h5s_sel_free(&ssel);
    h5s_sel_free(&csel);
    h5s_sel_free(&isel);
    return h5s_agree(c, rc);
}

/* Read GPUs [first, first + count) (count SIZE_MAX: to the end), or, with
 * list, GPUs list[0..count) (ascending), of the graph tables under loc. */
/* The ranks the memory check names: an archive's embedded graphs (where
 * names its run) are read by report, one process only, as are replay's and
 * report's stores (one_proc): 0, so that no mpirun is advised. */
/* A GPU's strings for the memory check, in full strings (memlimit.h).
 * Read shared, its table is an overlay of another's: with the store's
 * shared strings (strings_like) it holds only its replaced names, which
 * are its rows; built from a table of its own (a GPU that shares a
 * structure only), at most every name replaced, 12 of a string's 48 B. */
static uint64_t strings_cost(const sctx *c, const gmeta *m)
{
    if (c->share && m->strings_like >= 0) return m->cnt[RK_STR];
    if (c->share && m->same_as >= 0) return lsim_mem_shared_strings(m->nstr);
    return m->nstr;
}

/* The ranks a size refusal speaks of (lsim_mem_check_job): this run's
 * under MPI; 0 for the graphs inside a result archive (report reads them
 * in one process); -1 for a store read by replay or report (one process,
 * but sim of it runs under mpirun); else 1. */
static int check_ranks(const sctx *c, const char *where)
{
    return c->mpi ? c->size : (where && where[0]) ? 0 : c->one_proc ? -1 : 1;
}

/* Collectives' tables shared with the leader (LSIM_STORE_READ_SHARE):
 * pend[i] while GPU i's rows read so far equal its leader's, so none is
 * allocated for it; the first column that differs gives it a copy of the
 * leader's (the columns before were equal, those after are read over
 * it). Why not compare after reading: each follower's table would be
 * allocated, then freed in the middle of the heap, where the match's
 * large blocks cannot reuse it. */
static uint8_t *colls_pending(const sctx *c, const gmeta *lm, const size_t *lead, size_t count)
{
    uint8_t *pend = lsim_calloc(count ? count : 1, 1);
    for (size_t i = 0; pend && c->share && i < count; i++)
        pend[i] = lead[i] != i && lm[i].cnt[RK_COLL] > 0 && lm[i].cnt[RK_COLL] == lm[lead[i]].cnt[RK_COLL];
    return pend;
}

/* Column gc of GPU i's per-GPU table (rows at src): unpacked, or, for a
 * pending follower's collectives, compared with its leader's. */
static int unpack_gpu(sctx *c, const gcol *gc, lsim_graph **gs, const size_t *lead, uint8_t *pend, size_t i,
                      size_t rows, const char *src)
{
    if (gc->rk == RK_COLL && pend[i]) {
        const lsim_graph *l = gs[lead[i]];
        const char *b = colbase(l, gc);
        size_t r = 0;
        while (r < rows && !memcmp(b + r * gc->stride + gc->field, src + r * gc->esz, gc->esz)) r++;
        if (r == rows) return 0;
        if (!(gs[i]->colls = lsim_malloc(rows * sizeof *gs[i]->colls))) return h5s_nomem(c);
        memcpy(gs[i]->colls, l->colls, rows * sizeof *gs[i]->colls);
        pend[i] = 0;
    }
    unpack(gc, gs[i], rows, src);
    return 0;
}

/* Every dataset's shape first, so nothing is allocated from counts the
 * datasets do not back; absent[k]: optional column k is not in the store.
 * Collective in MPI mode; agreed. */
static int check_shapes(sctx *c, hid_t loc, const char *where, const gmeta *m, size_t ngpu, uint8_t *absent)
{
    int rc = 0;
    for (size_t k = 0; k < H5S_NGCOLS && !rc; k++) {
        if (h5s_gcols[k].optional && H5Lexists(loc, h5s_gcols[k].name, H5P_DEFAULT) <= 0) {
            absent[k] = 1;
            continue;
        }
        hid_t d = h5s_open_col(c, loc, where, h5s_gcols[k].name, H5T_INTEGER, 1, h5s_total_rows(m, ngpu, h5s_gcols[k].rk), NULL);
        rc = h5s_agree(c, d < 0 ? c->e.code : 0);
        if (d >= 0) H5Dclose(d);
    }
    const char *scols[2] = {"strings/offset", "strings/chars"};
    for (int k = 0; k < 2 && !rc; k++) {
        hid_t d = h5s_open_col(c, loc, where, scols[k], H5T_INTEGER, 1, h5s_total_rows(m, ngpu, k ? RK_CHAR : RK_STR), NULL);
        rc = h5s_agree(c, d < 0 ? c->e.code : 0);
        if (d >= 0) H5Dclose(d);
    }
    return rc;
}

/* Size before work: the GPU table says how big the graphs are, so a store
 * too big for this process (memlimit.h) is refused here, in one line,
 * before anything is allocated for them, not found out by the OOM killer.
 * Each rank checks its own GPUs (lm[0..count)); the message names the K at
 * which the whole job (m[0..ngpu)) would fit. Collective (h5s_agree). */
static int size_check(sctx *c, const char *where, const gmeta *m, size_t ngpu, const gmeta *lm, size_t count)
{
    uint64_t mine[4] = {count, 0, 0, 0}, job[4] = {ngpu, 0, 0, 0};
    /* read shared (c->share), a GPU whose structure another holds costs
     * only its own state per node (LSIM_MEM_SHARED_NODE_B); the job's
     * figure counts each GPU with rows of its own once */
    uint64_t mshared = 0, jshared = 0, own = 0, colls = 0;
    for (size_t i = 0; i < count; i++) {
        int sh = c->share && lm[i].same_as >= 0;
        own += !sh;
        mine[1] += sh ? 0 : lm[i].cnt[RK_NODE];
        mshared += sh ? lm[i].cnt[RK_NODE] : 0;
        mine[2] += sh ? 0 : lm[i].cnt[RK_EDGE];
        mine[3] += strings_cost(c, &lm[i]);
        colls += sh ? lm[i].cnt[RK_COLL] : 0; /* an own structure's are in its 132 B a node */
    }
    for (size_t i = 0; i < ngpu; i++) {
        int sh = c->share && m[i].same_as >= 0;
        job[1] += sh ? 0 : m[i].cnt[RK_NODE];
        jshared += sh ? m[i].cnt[RK_NODE] : 0;
        job[2] += sh ? 0 : m[i].cnt[RK_EDGE];
        job[3] += strings_cost(c, &m[i]);
    }
    /* in full-node equivalents: own nodes at 132 B, shared at 48, each
     * 16 B less when the engines will not keep the deciding edges; own
     * nodes 8 B more when an archive is written. In a reduced run a GPU
     * that shares a structure holds no engine and costs about nothing a
     * node or a graph: the peak is the match's sort, LSIM_MEM_MATCH_B a
     * collective kernel of each such GPU, or in parts when that does not
     * fit (lsim_mem_match_bytes). The job's figure, for the K that
     * would fit under mpirun, where nothing is reduced, keeps 48 B. */
    uint64_t nodes_shown = mine[1] + mshared;
    unsigned bown = LSIM_MEM_NODE_B - (c->no_bind ? LSIM_MEM_BIND_B : 0) + (c->archive ? LSIM_MEM_WRITE_B : 0);
    unsigned bsh = LSIM_MEM_SHARED_NODE_B - (c->no_bind ? LSIM_MEM_BIND_B : 0);
    mine[1] = lsim_mem_nodes_at(mine[1], bown) +
              (c->reduced ? lsim_mem_nodes_at(colls, LSIM_MEM_MATCH_B) : lsim_mem_nodes_at(mshared, bsh));
    if (c->reduced) mine[0] = own;
    job[1] = lsim_mem_nodes_at(job[1], bown) + lsim_mem_nodes_at(jshared, bsh);
    lsim_err e = {0};
    int mrc = count ? lsim_mem_check_job(c->path, mine, job, check_ranks(c, where), nodes_shown, count, &e) : 0;
    if (mrc == LSIM_ENOMEM && c->reduced) { /* the match in parts (memlimit.h): the least it can need */
        mine[1] -= lsim_mem_nodes_at(colls, LSIM_MEM_MATCH_B);
        mine[1] += lsim_mem_nodes_at(colls, lsim_mem_match_bytes(LSIM_MATCH_PARTS_MAX));
        mrc = lsim_mem_check_job(c->path, mine, job, check_ranks(c, where), nodes_shown, count, &e);
    }
    if (mrc) c->e = e;
    return h5s_agree(c, mrc);
}

/* A stored GPU's name in messages (graph.h, label): the file the user gave
 * leads, the trace or synth label it was built from follows. NULL when out
 * of memory. */
static char *store_label(const char *path, const char *where, size_t gpu, const char *source)
{
    int n = snprintf(NULL, 0, "%s%s%s: GPU %zu (%s)", path, *where ? " " : "", where, gpu, source);
    char *s = n < 0 ? NULL : lsim_malloc((size_t)n + 1);
    if (s) snprintf(s, (size_t)n + 1, "%s%s%s: GPU %zu (%s)", path, *where ? " " : "", where, gpu, source);
    return s;
}

int h5s_read_graph_tables(sctx *c, hid_t loc, const char *where, size_t first, size_t count, const size_t *list,
                             lsim_graph ***out, size_t *nout)
{
    gmeta *m = NULL, *lm = NULL, *ll = NULL;
    char **src = NULL;
    size_t ngpu = 0, *lead = NULL, *first_of = NULL, *lidx = NULL, nlead = 0;
    uint8_t *pend = NULL; /* colls_pending */
    lsim_graph **gs = NULL;
    char *buf = NULL;
    rowsel sel;
    h5s_sel_one(&sel, 0, 0);
    int rc = h5s_check_layout(c);
    rc = h5s_agree(c, rc);
    if (!rc) rc = h5s_read_gpu_table(c, loc, where, &m, &src, &ngpu);
    if (rc) return rc;
    if (list) {
        for (size_t i = 0; i < count && !rc; i++)
            if (list[i] >= ngpu || (i && list[i] <= list[i - 1]))
                rc = h5s_fail(c, LSIM_EARG, "GPU %zu requested%s, the store holds %zu (0..%zu)", list[i],
                          list[i] < ngpu ? " out of order" : "", ngpu, ngpu ? ngpu - 1 : 0);
    } else if (first > ngpu || (count != SIZE_MAX && count > ngpu - first)) {
        rc = h5s_fail(c, LSIM_EARG, "GPUs %zu..%zu requested, the store holds %zu (0..%zu)", first,
                  count == SIZE_MAX ? ngpu : first + count, ngpu, ngpu ? ngpu - 1 : 0);
    }
    if (count == SIZE_MAX) count = first <= ngpu ? ngpu - first : 0;
    rc = h5s_agree(c, rc);
    if (rc) goto out;
    lm = lsim_malloc((count ? count : 1) * sizeof *lm);
    rc = h5s_agree(c, lm ? 0 : h5s_nomem(c));
    if (rc) goto out;
    for (size_t i = 0; i < count; i++) lm[i] = m[list ? list[i] : first + i];
    if ((rc = size_check(c, where, m, ngpu, lm, count))) goto out;
    uint8_t absent[H5S_NGCOLS] = {0}; /* optional columns this store lacks */
    if ((rc = check_shapes(c, loc, where, m, ngpu, absent))) goto out;
    /* Shared structure: lead[i] is the first requested GPU whose node and
     * edge rows are GPU i's (i itself, or an earlier one). Only leaders'
     * rows are read; the others share them (c->share) or copy them. */
    lead = lsim_malloc((count ? count : 1) * sizeof *lead);
    first_of = lsim_malloc((ngpu ? ngpu : 1) * sizeof *first_of);
    ll = lsim_malloc((count ? count : 1) * sizeof *ll);
    lidx = lsim_malloc((count ? count : 1) * sizeof *lidx);
    rc = h5s_agree(c, lead && first_of && ll && lidx ? 0 : h5s_nomem(c));
    if (rc) goto out;
    for (size_t q = 0; q < ngpu; q++) first_of[q] = SIZE_MAX;
    for (size_t i = 0; i < count; i++) {
        size_t gi = list ? list[i] : first + i;
        size_t key = lm[i].same_as >= 0 ? (size_t)lm[i].same_as : gi;
        if (first_of[key] == SIZE_MAX) {
            first_of[key] = i;
            ll[nlead] = lm[i];
            lidx[nlead++] = i;
        }
        lead[i] = first_of[key];
    }
    gs = lsim_calloc(count ? count : 1, sizeof *gs);
    pend = colls_pending(c, lm, lead, count);
    if (!gs || !pend) rc = h5s_nomem(c);
    for (size_t i = 0; !rc && i < count; i++) {
        size_t gi = list ? list[i] : first + i;
        if (!(gs[i] = lsim_calloc(1, sizeof *gs[i])) || graph_alloc(gs[i], &lm[i], lead[i] == i || !c->share, !pend[i]) ||
            !(gs[i]->source = lsim_strdup(src[gi])) || !(gs[i]->strings = lsim_strtab_new()) ||
            !(gs[i]->label = store_label(c->path, where, gi, src[gi])))
            rc = h5s_nomem(c);
        if (gs[i]) gs[i]->device = UINT32_MAX; /* the store's is a root attribute ("device") */
    }
    rc = h5s_agree(c, rc);
    if (rc) goto out;
    /* One staging buffer for every column, as large as the largest: a
     * buffer per column was a fresh mapping each time (glibc maps large
     * blocks and unmaps them on free), so every column's bytes were
     * page-faulted and zeroed twice, into the buffer and into the graphs
     * (23 columns, 6 GB on a 4,096-GPU job). */
    size_t bufsz = 1;
    for (size_t k = 0; k < H5S_NGCOLS && count > 1; k++) {
        int st = h5s_gcols[k].rk == RK_NODE || h5s_gcols[k].rk == RK_EDGE;
        uint64_t rows = 0;
        for (size_t i = 0; i < (st ? nlead : count); i++) rows += (st ? ll : lm)[i].cnt[h5s_gcols[k].rk];
        if (rows * h5s_gcols[k].esz > bufsz) bufsz = (size_t)(rows * h5s_gcols[k].esz);
    }
    char *stage = NULL;
    for (size_t k = 0; k < H5S_NGCOLS && !rc; k++) {
        const gcol *gc = &h5s_gcols[k];
        int rk = gc->rk;
        /* node and edge rows: the leaders' only */
        int st = rk == RK_NODE || rk == RK_EDGE;
        const gmeta *tm = st ? ll : lm;
        size_t tn = st ? nlead : count;
        if (absent[k]) {
            for (size_t i = 0; i < tn; i++)
                if (st || !pend[i]) fill_none(gc, gs[st ? lidx[i] : i], tm[i].cnt[rk]); /* a pending one's is none too */
            continue;
        }
        rc = sel_table(c, tm, tn, rk, &sel);
        int direct = count == 1 && gc->stride == gc->esz;
        if (rc) buf = NULL;
        else if (direct) buf = colbase(gs[0], gc);
        else buf = stage ? stage : (stage = lsim_malloc(count > 1 ? bufsz : sel.rows ? sel.rows * gc->esz : 1));
        rc = h5s_agree(c, rc ? rc : buf ? 0 : h5s_nomem(c));
        if (!rc) rc = h5s_agree(c, h5s_get_col_sel(c, loc, where, gc->name, gc->t, h5s_total_rows(m, ngpu, rk), &sel, buf));
        uint64_t at = 0;
        for (size_t i = 0; !rc && !direct && i < tn; i++) {
            if (st) unpack(gc, gs[lidx[i]], tm[i].cnt[rk], buf + at * gc->esz);
            else rc = unpack_gpu(c, gc, gs, lead, pend, i, tm[i].cnt[rk], buf + at * gc->esz);
            at += tm[i].cnt[rk];
        }
        rc = h5s_agree(c, rc);
        if (count == 1 && !direct) { /* one GPU: sized per column */
            free(stage);
            stage = NULL;
        }
        buf = NULL;
        h5s_sel_free(&sel);
        if (c->progress) c->progress(c->progress_ctx, "reading columns", k + 1, H5S_NGCOLS);
    }
    free(stage);
    if (rc) goto out;
    for (size_t i = 0; !rc && i < count; i++) {
        lsim_err e = {0};
        if (pend[i] && lsim_graph_share_colls(gs[i], gs[lead[i]], &e)) rc = h5s_nomem(c);
        pend[i] = 0; /* held jointly now: freed with the graphs */
    }
    rc = h5s_agree(c, rc);
    if (rc) goto out;
    rc = read_strings(c, loc, where, m, ngpu, lm, count, first, list, lead, gs);
    if (rc) goto out;
    for (size_t i = 0; !rc && i < count; i++) {
        if (c->progress && ((i + 1) % 1024 == 0 || i + 1 == count))
            c->progress(c->progress_ctx, "checking GPUs", i + 1, count);
        if (lead[i] == i) {
            gs[i]->in_off[gs[i]->n] = gs[i]->nedges;
            rc = validate_graph(c, where, gs[i], (list ? list[i] : first + i), NULL);
            if (!rc && lsim_graph_outgoing(gs[i], NULL)) rc = h5s_nomem(c); /* graph.h: the one CSR builder */
            continue;
        }
        lsim_err e = {0};
        if (c->share) rc = lsim_graph_share(gs[i], gs[lead[i]], &e) ? h5s_nomem(c) : 0;
        else copy_structure(gs[i], gs[lead[i]]);
        /* the same rows, checked against this GPU's own processors,
         * strings, iterations and collectives */
        if (!rc) rc = validate_graph(c, where, gs[i], (list ? list[i] : first + i), gs[lead[i]]);
    }
    rc = h5s_agree(c, rc);
    if (!rc && c->cpu_ops) rc = h5s_read_cpu_ops(c, loc, where, gs, first, count, list, ngpu); /* when kept */
    if (rc) goto out;
    *out = count ? gs : NULL;
    *nout = count;
    if (!count) free(gs);
    gs = NULL;
out:
    if (gs) lsim_store_free_graphs(gs, count);
    h5s_sel_free(&sel);
    h5s_free_strs(src, ngpu);
    free(pend);
    free(lidx);
    free(ll);
    free(first_of);
    free(lead);
    free(lm);
    free(m);
    return rc;
}

/* MPI reads of GPU rows: independent transfers when every rank's GPUs form
 * a few runs of consecutive GPUs (each rank then reads and inflates only
 * the chunks its rows lie in: faster, docs/performance.md "Figures behind
 * design choices"), collective ones when some rank's
 * rows are scattered (round-robin: collective buffering reads each chunk
 * once). Every rank must use the same mode, hence the allreduce. */
static int read_transfers(sctx *c, size_t count, const size_t *list)
{
    if (!c->mpi) return 0;
    long runs = count ? 1 : 0, most = 0;
    for (size_t i = 1; list && i < count; i++)
        if (list[i] != list[i - 1] + 1) runs++;
    MPI_Allreduce(&runs, &most, 1, MPI_LONG, MPI_MAX, c->comm);
    int rc = 0;
    if (most <= 8 && H5Pset_dxpl_mpio(c->dxpl, H5FD_MPIO_INDEPENDENT) < 0)
        rc = h5s_fail(c, LSIM_EIO, "cannot set up independent transfers");
    return h5s_agree(c, rc);
}

static int read_graphs_impl(sctx *c, size_t first, size_t count, const size_t *list, lsim_graph ***out,
                            size_t *nout)
{
    int rc = h5s_open_file(c);
    if (!rc) rc = read_transfers(c, count, list);
    if (!rc) rc = h5s_check_root(c, LSIM_STORE_KIND_GRAPHS);
    if (!rc) rc = h5s_read_graph_tables(c, c->file, "", first, count, list, out, nout);
    return rc;
}

int lsim_store_read_graphs_ex(const char *path, size_t first_gpu, size_t count, int flags, lsim_graph ***out,
                              size_t *nout, lsim_err *err)
{
    return lsim_store_read_graphs_progress(path, first_gpu, count, flags, NULL, NULL, out, nout, err);
}

int lsim_store_read_graphs_progress(const char *path, size_t first_gpu, size_t count, int flags,
                                    lsim_store_progress_fn progress, void *ctx, lsim_graph ***out, size_t *nout,
                                    lsim_err *err)
{
    sctx c;
    *out = NULL;
    *nout = 0;
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    c.share = (flags & LSIM_STORE_READ_SHARE) != 0;
    c.no_bind = (flags & LSIM_STORE_READ_NO_BIND) != 0;
    c.archive = (flags & LSIM_STORE_READ_ARCHIVE) != 0;
    c.reduced = (flags & LSIM_STORE_READ_REDUCED) != 0;
    c.cpu_ops = (flags & LSIM_STORE_READ_CPU_OPS) != 0;
    c.one_proc = (flags & LSIM_STORE_READ_ONE_PROCESS) != 0;
    c.progress = progress;
    c.progress_ctx = ctx;
    int rc = read_graphs_impl(&c, first_gpu, count, NULL, out, nout);
    return h5s_ctx_done(&c, rc, err);
}

int lsim_store_read_graphs(const char *path, size_t first_gpu, size_t count, lsim_graph ***out, size_t *nout,
                           lsim_err *err)
{
    return lsim_store_read_graphs_ex(path, first_gpu, count, 0, out, nout, err);
}

int lsim_store_read_graphs_mpi(const char *path, MPI_Comm comm, size_t first_gpu, size_t count,
                               lsim_graph ***out, size_t *nout, lsim_err *err)
{
    sctx c;
    *out = NULL;
    *nout = 0;
    h5s_ctx_init(&c, path, 1, comm);
    int rc = read_graphs_impl(&c, first_gpu, count, NULL, out, nout);
    return h5s_ctx_done(&c, rc, err);
}

int lsim_store_read_graph_list_mpi(const char *path, MPI_Comm comm, const size_t *gpus, size_t n,
                                   lsim_graph ***out, size_t *nout, lsim_err *err)
{
    return lsim_store_read_graph_list_mpi_ex(path, comm, gpus, n, 0, out, nout, err);
}

int lsim_store_read_graph_list_mpi_ex(const char *path, MPI_Comm comm, const size_t *gpus, size_t n, int flags,
                                      lsim_graph ***out, size_t *nout, lsim_err *err)
{
    sctx c;
    *out = NULL;
    *nout = 0;
    h5s_ctx_init(&c, path, 1, comm);
    c.share = (flags & LSIM_STORE_READ_SHARE) != 0;
    c.no_bind = (flags & LSIM_STORE_READ_NO_BIND) != 0;
    c.archive = (flags & LSIM_STORE_READ_ARCHIVE) != 0;
    c.cpu_ops = (flags & LSIM_STORE_READ_CPU_OPS) != 0;
    static const size_t none[1] = {0}; /* a list, empty: no GPUs on this rank */
    int rc = n && !gpus ? h5s_fail(&c, LSIM_EARG, "no GPU list given") : 0;
    rc = h5s_agree(&c, rc);
    if (!rc) rc = read_graphs_impl(&c, 0, n, n ? gpus : none, out, nout);
    return h5s_ctx_done(&c, rc, err);
}

int lsim_store_count_gpus(const char *path, size_t *n, lsim_err *err)
{
    sctx c;
    gmeta *m = NULL;
    *n = 0;
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = h5s_open_file(&c);
    if (!rc) rc = h5s_check_root(&c, LSIM_STORE_KIND_GRAPHS);
    if (!rc) rc = h5s_read_gpu_table(&c, c.file, "", &m, NULL, n);
    free(m);
    return h5s_ctx_done(&c, rc, err);
}

int lsim_store_gpu_table(const char *path, lsim_store_gpu_info **out, size_t *nout, lsim_err *err)
{
    sctx c;
    gmeta *m = NULL;
    char **src = NULL;
    size_t n = 0;
    *out = NULL;
    *nout = 0;
    h5s_ctx_init(&c, path, 0, MPI_COMM_NULL);
    int rc = h5s_open_file(&c);
    if (!rc) rc = h5s_check_root(&c, LSIM_STORE_KIND_GRAPHS);
    if (!rc) rc = h5s_read_gpu_table(&c, c.file, "", &m, &src, &n);
    if (!rc) {
        lsim_store_gpu_info *t = lsim_calloc(n ? n : 1, sizeof *t);
        if (!t) rc = h5s_nomem(&c);
        for (size_t i = 0; !rc && i < n; i++) {
            t[i].rank = m[i].rank;
            t[i].source = src[i];
            src[i] = NULL;
            t[i].source_size = m[i].source_size;
            t[i].source_crc32 = m[i].source_crc32;
            t[i].nodes = m[i].cnt[RK_NODE];
            t[i].edges = m[i].cnt[RK_EDGE];
            t[i].procs = m[i].cnt[RK_PROC];
            t[i].iters = m[i].cnt[RK_ITER];
            t[i].colls = m[i].cnt[RK_COLL];
            t[i].strings = m[i].nstr;
        }
        if (!rc) {
            *out = t;
            *nout = n;
        } else {
            free(t);
        }
    }
    h5s_free_strs(src, n);
    free(m);
    return h5s_ctx_done(&c, rc, err);
}

void lsim_store_gpu_table_free(lsim_store_gpu_info *t, size_t n)
{
    if (!t) return;
    for (size_t i = 0; i < n; i++) free(t[i].source);
    free(t);
}
