/* The what-if plan object (whatif_plan.h): resolve, pass 1, check, pass 2.
 *
 * Two passes over the source, never the whole new job in memory: (1) GPUs
 * read in batches to identify the structure and match the collectives
 * (transfer times, clock offsets); (2) one pipeline stage of source GPUs at
 * a time: normalized, layers changed, reshaped, then each new GPU made from
 * it (data-parallel copy, re-timed, other GPU, straggler, noise) and added
 * to the streamed store writer. Everything is checked before the writer
 * opens; a failure later aborts it (nothing written). */
#include <stdlib.h>
#include "lumosim/alloc.h"
#include <string.h>

#include "lumosim/memest.h"
#include "lumosim/store.h"
#include "lumosim/synth.h"
#include "lumosim/text.h"
#include "lumosim/whatif_steps.h"

struct lsim_wi_plan {
    lsim_wi_request rq;
    /* resolve */
    lsim_gpu_spec gfrom, gto;
    lsim_topology tfrom, tto;
    const char *from_how;        /* how the source GPU was found */
    lsim_wi_model given;         /* --model / --micro-batch */
    /* pass 1 */
    lsim_store_gpu_info *tab;
    size_t n;
    lsim_wi_ident *ids;
    lsim_wi_gpu_size *size;
    int32_t *ranks;
    lsim_job_entry *ents;
    lsim_strtab *names;          /* ents' group names */
    size_t ne;
    lsim_wi_job *job;
    char sopts[160];             /* the source's lumosim synth options, if not the defaults */
    char oom[LSIM_ERR_LEN];      /* the new job's OOM line (memest.h), "" when it fits or is unknown */
    lsim_wi_layout L;
    /* the traced GPUs' own memory figures (graph.h mem_*) through the steps */
    size_t mem_src;              /* source GPUs with figures (totals, deltas or reestimated) */
    size_t mem_src_lb;           /* of them, lower bounds (deltas) */
    const char *mem_drop;        /* the option that changes what a GPU holds (figures dropped), NULL: carried */
    size_t mem_out, mem_oom;     /* new GPUs with carried figures; of them, over their GPU's capacity */
    int64_t worst_peak, worst_cap; /* the most loaded new GPU's peak and capacity */
    uint32_t worst_gpu;
    int worst_lb;                /* its figure is a lower bound (deltas) */
    char mem_note[LSIM_ERR_LEN]; /* "memory: not carried: ..." or "" */
    int mem_reest;               /* --model: re-estimated (est_src, est_new), not dropped */
    double *est_src, *est_new;   /* the model-shape estimate's total per stage, source and new layout */
    /* check */
    lsim_wi_facts f;
    lsim_wi_decision d;
    lsim_wi_ctx ctx;             /* what the steps read (whatif_steps.h), once checked */
    /* run */
    lsim_wi_counts c[LSIM_WI_ST_N];
    lsim_store_writer *w;
    char *record;
};

static int is_file_name(const char *s) { return strchr(s, '/') || strstr(s, ".json"); }

static int load_gpu(const char *s, lsim_gpu_spec *g, lsim_err *err)
{
    return is_file_name(s) ? lsim_gpu_spec_load(s, g, err) : lsim_gpu_spec_builtin(s, g, err);
}

/* The GPUs and networks. The source GPU: --from-gpu, else the one the
 * traces name in their deviceProperties (the store's "device" attribute).
 * A change of GPU or network needs it; without either, only ratios of the
 * same network's costs are taken and H100 stands in, which the record says.
 * An unknown source GPU is refused only after the new GPU's and network's
 * files have been checked (their errors come first). */
static int resolve_hardware(lsim_wi_plan *p, lsim_err *err)
{
    const lsim_wi_request *rq = &p->rq;
    const char *fgpu = rq->from_gpu;
    char *src_dev = NULL;
    int from_unknown = 0, rc = 0;
    p->from_how = "--from-gpu";
    if (!fgpu) {
        lsim_err aerr = {0};
        if (lsim_store_read_attr(rq->in, "device", &src_dev, &aerr)) src_dev = NULL;
        const char *b = lsim_gpu_builtin_for_device(src_dev);
        if (b) {
            fgpu = b;
            p->from_how = "deviceProperties";
        } else if (rq->gpu || rq->topo) {
            from_unknown = 1;
            lsim_err_set(err, LSIM_EARG,
                         "%s: the source GPU is unknown (%s%s%s), so %s cannot be re-timed from it: give "
                         "--from-gpu h100|a100|h200|FILE.json",
                         rq->in, src_dev ? "deviceProperties name \"" : "the store names no GPU", src_dev ? src_dev : "",
                         src_dev ? "\" has no built-in spec" : "", rq->gpu ? "--gpu" : "--topology");
        } else {
            p->from_how = "assumed (no GPU named by the traces)";
        }
    }
    free(src_dev);
    rc = fgpu ? load_gpu(fgpu, &p->gfrom, err) : lsim_gpu_spec_builtin("h100", &p->gfrom, err);
    if (!rc) lsim_topology_default(&p->gfrom, &p->tfrom);
    if (!rc && rq->from_topo) rc = lsim_topology_load(rq->from_topo, &p->tfrom, err);
    p->gto = p->gfrom;
    p->tto = p->tfrom;
    if (!rc && rq->gpu) {
        rc = load_gpu(rq->gpu, &p->gto, err);
        if (!rc) lsim_topology_default(&p->gto, &p->tto);
    }
    if (!rc && rq->topo) rc = lsim_topology_load(rq->topo, &p->tto, err);
    if (!rc && from_unknown) rc = LSIM_EARG; /* err holds the line */
    return rc;
}

/* lumosim synth's non-default options from a GPU's source ("synth:M/gpu0
 * opts:rc=full,sp"), "" for none; the graph and the store's GPU table
 * carry the same string. */
static void synth_opts_of(const char *source, char *out, size_t cap)
{
    const char *o = source ? strstr(source, " opts:") : NULL;
    snprintf(out, cap, "%s", o ? o + 6 : "");
}

int lsim_wi_plan_precheck(const lsim_wi_request *rq, lsim_err *err)
{
    lsim_store_gpu_info *t = NULL;
    size_t n = 0;
    char so[160], *text = NULL;
    lsim_memest_job j;
    lsim_wi_layout L, *Lp = NULL;
    lsim_err ignored = {0};
    int rc = 0;
    memset(&j, 0, sizeof j);
    if (rq->identify || lsim_store_gpu_table(rq->in, &t, &n, &ignored) || !n) goto cleanup;
    /* a synthesized store only: every GPU tagged, so that rules dp, tp and
     * pipeline, checked before synth-options, refuse nothing */
    if (!t[0].source || strncmp(t[0].source, "synth:", 6)) goto cleanup;
    synth_opts_of(t[0].source, so, sizeof so);
    if (!so[0]) goto cleanup;
    /* the layout synth (or a what-if of it) recorded with its memory
     * estimate, when it accounts for every GPU in the table */
    if (!lsim_store_read_attr(rq->in, "memory", &text, &ignored) && text && !lsim_memest_job_parse(text, &j, &ignored) &&
        (uint64_t)j.tp * (uint64_t)j.pp * (uint64_t)j.dp == (uint64_t)n) {
        L = (lsim_wi_layout){j.tp, j.pp, j.dp};
        Lp = &L;
    }
    rc = lsim_wi_rule_synth_options_meta(rq, so, Lp, err);
cleanup:
    lsim_memest_job_free(&j);
    free(text);
    lsim_store_gpu_table_free(t, n);
    return rc;
}

/* One batch of pass 1: identify each GPU, collect its collective entries
 * (matched into the job afterwards). */
static int identify_batch(lsim_wi_plan *p, size_t first, size_t cnt, lsim_err *err)
{
    lsim_graph **gs = NULL;
    size_t got = 0, nm = 0;
    lsim_job_entry *mine = NULL;
    uint32_t *gid = lsim_malloc(cnt * sizeof *gid);
    int rc = 0;
    if (!gid) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < cnt; i++) gid[i] = (uint32_t)(first + i);
    if ((rc = lsim_store_read_graphs(p->rq.in, first, cnt, &gs, &got, err))) goto cleanup;
    if (first == 0 && got) synth_opts_of(gs[0]->source, p->sopts, sizeof p->sopts);
    for (size_t i = 0; !rc && i < got; i++) {
        p->mem_src += gs[i]->mem_source == LSIM_MEM_SRC_TOTALS || gs[i]->mem_source == LSIM_MEM_SRC_DELTAS ||
                      gs[i]->mem_source == LSIM_MEM_SRC_REESTIMATED;
        p->mem_src_lb += gs[i]->mem_source == LSIM_MEM_SRC_DELTAS;
        rc = lsim_wi_identify(gs[i], first + i, (int)p->rq.trace_layers, &p->ids[first + i], err);
        p->ranks[first + i] = p->ids[first + i].rank;
    }
    if (!rc && !p->names && !(p->names = lsim_strtab_new())) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (!rc) rc = lsim_job_entries(gs, gid, got, p->names, &mine, &nm, NULL, err);
    if (!rc && nm) {
        lsim_job_entry *all = lsim_realloc(p->ents, (p->ne + nm) * sizeof *all);
        if (!all) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        else {
            memcpy(all + p->ne, mine, nm * sizeof *all);
            p->ents = all;
            p->ne += nm;
        }
    }
cleanup:
    free(mine);
    lsim_store_free_graphs(gs, got);
    free(gid);
    return rc;
}

/* The source model from the first GPU (whatif.h lsim_wi_model_of), for the
 * shape rule; computed only when a request may need it, its failure kept
 * for the rule to report in its turn. */
static int source_model(lsim_wi_plan *p, lsim_err *err)
{
    const lsim_wi_request *rq = &p->rq;
    lsim_wi_facts *f = &p->f;
    if (!(rq->tp || rq->hidden || rq->ffn || rq->model || rq->pp || rq->vstages || rq->micro_batches || rq->dp))
        return 0;
    lsim_graph **gs = NULL;
    size_t got = 0;
    int rc = lsim_store_read_graphs(rq->in, 0, 1, &gs, &got, err);
    if (rc) return rc;
    lsim_err merr = {0};
    int mrc = got ? lsim_wi_model_of(gs[0], &p->L, &p->given, (int)rq->trace_layers, &f->from_model, &merr) : LSIM_EFORMAT;
    lsim_store_free_graphs(gs, got);
    f->have_model = mrc == 0;
    f->model_rc = mrc;
    snprintf(f->model_err, sizeof f->model_err, "%s", merr.msg);
    return 0;
}

int lsim_wi_plan_open(const lsim_wi_request *rq, lsim_wi_plan **out, lsim_err *err)
{
    int rc = 0;
    lsim_wi_plan *p = lsim_calloc(1, sizeof *p);
    *out = NULL;
    if (!p) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    p->rq = *rq;
    p->given.micro_batch = (int)rq->micro_batch;
    if ((rc = resolve_hardware(p, err))) goto cleanup;
    if (rq->model) {
        lsim_model_shape sh;
        rc = lsim_model_named(rq->model, &sh, err);
        if (rc) goto cleanup;
        p->given.hidden = sh.hidden, p->given.ffn = sh.ffn, p->given.heads = sh.heads, p->given.head_dim = sh.head_dim;
        p->given.seq = sh.seq, p->given.vocab = sh.vocab;
    }
    if ((rc = lsim_store_gpu_table(rq->in, &p->tab, &p->n, err))) goto cleanup;
    if (!p->n) {
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: the store holds no GPU", rq->in);
        goto cleanup;
    }
    if (!(p->ids = lsim_calloc(p->n, sizeof *p->ids)) || !(p->ranks = lsim_malloc(p->n * sizeof *p->ranks)) ||
        !(p->size = lsim_malloc(p->n * sizeof *p->size))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < p->n; i++)
        p->size[i] = (lsim_wi_gpu_size){p->tab[i].nodes, p->tab[i].edges, p->tab[i].strings};
    size_t batch = rq->batch > 0 ? (size_t)rq->batch : 64;
    for (size_t first = 0; first < p->n; first += batch)
        if ((rc = identify_batch(p, first, p->n - first < batch ? p->n - first : batch, err))) goto cleanup;
    if ((rc = lsim_wi_layout_of(p->ids, p->n, p->tfrom.gpus_per_node, &p->L, err))) goto cleanup;
    p->f = (lsim_wi_facts){rq->in, p->n, p->ids, p->size, p->L, p->sopts, 0, {0}, "", 0};
    if (rq->identify) goto cleanup;
    /* one GPU is not a job: its collectives are not matched (as sim and
     * replay take a single trace), so one rank of a larger job can be
     * transformed on its own */
    if (p->n > 1 && (rc = lsim_wi_job_new(p->ents, p->ne, p->n, p->ranks, &p->job, err))) goto cleanup;
    rc = source_model(p, err);
cleanup:
    *out = p;
    return rc;
}

const lsim_wi_facts *lsim_wi_plan_facts(const lsim_wi_plan *p) { return &p->f; }

void lsim_wi_plan_put_identify(const lsim_wi_plan *p, FILE *f) { lsim_wi_put_identify(f, p->ids, p->n, &p->L, 1); }

/* The transforms of one phase (whatif_steps.h), in their order, on cur
 * (borrowed); *out is a new graph, or cur itself when none ran (*owned 0). */
static int phase_steps(lsim_wi_plan *p, int phase, lsim_graph *cur, int32_t gpu, lsim_graph **out, int *owned,
                       lsim_err *err)
{
    const lsim_wi_row *rows[LSIM_WI_ST_N];
    size_t n = 0;
    for (size_t i = 0; i < lsim_wi_nrows() && n < LSIM_WI_ST_N; i++) {
        const lsim_wi_row *r = lsim_wi_row_at(i);
        if ((int)r->phase != phase || !r->apply) continue;
        size_t j = n++;
        for (; j > 0 && rows[j - 1]->apply_at > r->apply_at; j--) rows[j] = rows[j - 1];
        rows[j] = r;
    }
    int rc = 0;
    *owned = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const lsim_wi_row *r = rows[i];
        if (!(r->runs ? r->runs(&p->ctx) : p->d.used[r->step])) continue;
        int reps = r->reps ? r->reps(&p->ctx) : 1;
        for (int k = 0; !rc && k < reps; k++) {
            lsim_graph *nx = NULL;
            rc = r->apply(&p->ctx, cur, gpu, k, &nx, &p->c[r->step], err);
            if (rc) lsim_graph_free(nx);
            if (rc || !nx) continue; /* nx NULL: nothing to do for this k */
            if (*owned) lsim_graph_free(cur);
            cur = nx;
            *owned = 1;
        }
    }
    if (rc && *owned) {
        lsim_graph_free(cur);
        cur = NULL, *owned = 0;
    }
    *out = cur;
    return rc;
}

/* One source GPU normalized (collectives matched, clocks aligned), then
 * through the steps that work on the source's layout (layers before DDP's
 * buckets: a copied or cut layer takes its gradients with it, and the
 * buckets are cut from the gradients the new step has). */
static int source_steps(lsim_wi_plan *p, const lsim_graph *g, size_t gi, lsim_graph **out, lsim_err *err)
{
    lsim_graph *a = NULL, *b = NULL;
    int owned = 0;
    int rc = lsim_wi_normalize(g, p->job, gi, &p->L, &a, &p->c[LSIM_WI_ST_NORM], err);
    if (!rc) rc = phase_steps(p, LSIM_WI_PH_SOURCE, a, g->rank >= 0 ? g->rank : (int32_t)gi, &b, &owned, err);
    if (owned) lsim_graph_free(a);
    else if (rc) lsim_graph_free(a), b = NULL;
    *out = rc ? NULL : b;
    return rc;
}

/* Source stage pp_i, read and through source_steps: per = TP x DP graphs
 * into blk (owned by the caller). */
static int read_stage(lsim_wi_plan *p, int pp_i, lsim_graph **blk, lsim_err *err)
{
    size_t per = (size_t)p->L.tp * (size_t)p->L.dp, nread = 0;
    lsim_graph **gs = NULL;
    int rc = lsim_store_read_graphs(p->rq.in, per * (size_t)pp_i, per, &gs, &nread, err);
    for (size_t i = 0; !rc && i < nread; i++) rc = source_steps(p, gs[i], per * (size_t)pp_i + i, &blk[i], err);
    lsim_store_free_graphs(gs, nread);
    if (!rc && nread != per)
        rc = lsim_err_set(err, LSIM_EFORMAT, "%s: pipeline stage %d holds %zu GPUs, expected %zu", p->rq.in, pp_i,
                          nread, per);
    return rc;
}

/* The steps from one source GPU (cur, borrowed) to new GPU ng: data-parallel
 * copy (relayout), re-timed network, other GPU, straggler, noise (the
 * table's GPU phase). *out is a new graph, or cur itself when no step ran
 * (*owned = 0). */
static int gpu_steps(lsim_wi_plan *p, lsim_graph *cur, uint32_t ng, lsim_graph **out, int *owned, lsim_err *err)
{
    return phase_steps(p, LSIM_WI_PH_GPU, cur, (int32_t)ng, out, owned, err);
}

static int has_figures(const lsim_graph *g)
{
    return g->mem_source == LSIM_MEM_SRC_TOTALS || g->mem_source == LSIM_MEM_SRC_DELTAS ||
           g->mem_source == LSIM_MEM_SRC_REESTIMATED;
}

/* New GPU ng's (on new stage `stage`) memory figures (graph.h mem_*), from
 * its source GPU's, set on g. A step that changes what the GPU holds
 * (p->mem_drop) drops them, the traced peak being of the source's contents,
 * or with --model re-estimates them (p->mem_reest, see mem_reestimate):
 * the measured peaks plus the estimate's change from the source GPU's stage
 * to the new one. --gpu keeps the bytes (the same tensors) on the new GPU's
 * memory, its spec's mem_capacity (0: unknown), so the OOM check is against
 * the GPU it now runs on. The rest (DP replicas, network, stragglers,
 * noise) changes times only. Counts the new GPUs whose figures exceed their
 * capacity (OOM). g may be the source column's graph itself when no
 * per-GPU step ran (then it is emitted once), so dropping is idempotent
 * and a re-estimate is made on a graph of its own (emit_stage). */
static void mem_apply(lsim_wi_plan *p, lsim_graph *g, int stage, uint32_t ng)
{
    int fig = has_figures(g);
    if (!fig && g->mem_source != LSIM_MEM_SRC_DROPPED && !(p->mem_drop && (p->d.pipe || p->d.tpipe) && p->mem_src))
        return;
    if (p->mem_drop && p->mem_reest && g->mem_source != LSIM_MEM_SRC_DELTAS && fig) {
        /* the source GPU's stage: the same index, or the one stage a trace pipeline cuts */
        int from = stage < p->L.pp ? stage : 0;
        double delta = p->est_new[stage] - p->est_src[from];
        double a = (double)g->mem_peak_allocated + delta, r = (double)g->mem_peak_reserved + delta;
        if (a > 0 && r > 0 && a <= (double)LSIM_BYTES_MAX && r <= (double)LSIM_BYTES_MAX) { /* graph.h's bound */
            g->mem_peak_allocated = (int64_t)(a + 0.5);
            g->mem_peak_reserved = (int64_t)(r + 0.5);
            g->mem_source = LSIM_MEM_SRC_REESTIMATED;
        } else {
            g->mem_source = LSIM_MEM_SRC_DROPPED; /* the estimate removes more than was measured */
        }
    } else if (p->mem_drop) {
        g->mem_source = LSIM_MEM_SRC_DROPPED;
    }
    if (g->mem_source == LSIM_MEM_SRC_DROPPED) {
        g->mem_events = 0;
        g->mem_peak_allocated = g->mem_peak_reserved = 0;
    }
    fig = has_figures(g);
    if (p->d.used[LSIM_WI_ST_GPU]) g->mem_capacity = p->gto.mem_capacity > 0 ? (int64_t)p->gto.mem_capacity : 0;
    if (!fig) return;
    int64_t peak = g->mem_peak_reserved > g->mem_peak_allocated ? g->mem_peak_reserved : g->mem_peak_allocated;
    p->mem_out++;
    if (g->mem_capacity > 0 && peak > g->mem_capacity) p->mem_oom++;
    /* the worst: the largest excess over the capacity, else the largest peak */
    int64_t ex = g->mem_capacity > 0 ? peak - g->mem_capacity : INT64_MIN;
    int64_t wex = p->worst_cap > 0 ? p->worst_peak - p->worst_cap : INT64_MIN;
    if (p->mem_out == 1 || ex > wex || (ex == wex && peak > p->worst_peak)) {
        p->worst_peak = peak, p->worst_cap = g->mem_capacity, p->worst_gpu = ng;
        p->worst_lb = g->mem_source == LSIM_MEM_SRC_DELTAS;
    }
}

/* New stage pp_i from blk (one graph per source (tp, dp) column, in layout
 * Ls): counts the replicas the new widths drop, then every new GPU of the
 * stage through gpu_steps into the writer (opened at the first stage, once
 * everything has been checked). A GPU whose node columns and edges equal
 * those of the stage's first GPU is written as sharing that GPU's rows and,
 * but for the names that differ, its strings (docs/hdf5-schema.md, "Shared
 * structure"), as synth writes them: a what-if of a synthesized job is
 * then read shared again. */
static int emit_stage(lsim_wi_plan *p, int pp_i, lsim_graph **blk, size_t nblk, lsim_err *err)
{
    const lsim_wi_decision *d = &p->d;
    const lsim_wi_layout *Ls = &d->Ls, *Ln = &d->Ln;
    size_t per = (size_t)Ls->tp * (size_t)Ls->dp;
    int rc = 0;
    for (size_t i = 0; i < nblk; i++) {
        int t, dd, pp;
        lsim_wi_coords(Ls, (int32_t)(per * (size_t)pp_i + i), &t, &dd, &pp);
        if (dd >= Ln->dp || t >= Ln->tp) {
            p->c[LSIM_WI_ST_DP].gpus_removed++;
            for (size_t v = 0; v < blk[i]->n; v++) p->c[LSIM_WI_ST_DP].removed[blk[i]->kind[v]]++;
        }
    }
    if (!p->w) {
        lsim_store_write_opts wo = {p->rq.cmd, NULL, 0, {0}};
        if ((rc = lsim_store_writer_open(p->rq.out, &wo, &p->w, err))) return rc;
    }
    lsim_graph *first = NULL; /* the stage's first GPU as written */
    int first_owned = 0;
    int64_t first_gpu = -1;
    for (int dd = 0; dd < Ln->dp && !rc; dd++)
        for (int t = 0; t < Ln->tp; t++) {
            uint32_t ng = (uint32_t)lsim_wi_rank(Ln, t, dd, pp_i);
            lsim_graph *src = blk[(size_t)(t % Ls->tp) + (size_t)Ls->tp * (size_t)(dd % Ls->dp)], *cur = NULL;
            int owned = 0;
            const char *nosrc[1] = {NULL};
            rc = gpu_steps(p, src, ng, &cur, &owned, err);
            if (!rc && p->mem_reest && !owned) {
                /* a re-estimate adds to the figures: on a graph of its own */
                lsim_graph *c = NULL;
                rc = lsim_graph_clone(cur, &c, err);
                if (!rc) cur = c, owned = 1;
            }
            if (!rc) mem_apply(p, cur, pp_i, ng);
            /* never a store that sim would refuse (graph.h bounds) */
            if (!rc) rc = lsim_graph_check_bounds(cur, p->rq.out, ng, err);
            int64_t same = -1;
            const lsim_graph *base = NULL;
            if (!rc && first && !p->rq.no_share && lsim_graph_same_structure(cur, first)) same = first_gpu, base = first;
            if (!rc) rc = lsim_store_writer_add_ex(p->w, &cur, 1, nosrc, &same, &base, err);
            if (!rc && !first) {
                first = cur, first_owned = owned, first_gpu = (int64_t)ng;
                owned = 0; /* kept until the stage is written */
            }
            if (owned) lsim_graph_free(cur);
            if (rc) break;
        }
    if (first_owned) lsim_graph_free(first);
    return rc;
}

static void free_graphs(lsim_graph **g, size_t n)
{
    for (size_t i = 0; g && i < n; i++) lsim_graph_free(g[i]), g[i] = NULL;
}

/* No pipeline change: each source stage read, transformed and emitted. */
static int run_plain(lsim_wi_plan *p, lsim_graph **blk, size_t per, lsim_err *err)
{
    int rc = 0;
    for (int s = 0; !rc && s < p->L.pp; s++) {
        rc = read_stage(p, s, blk, err);
        if (!rc) rc = emit_stage(p, s, blk, per, err);
        free_graphs(blk, per);
    }
    return rc;
}

static void count_kinds(lsim_graph *const *g, size_t n, uint64_t *kinds, uint64_t *edges)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t v = 0; v < g[i]->n; v++) kinds[g[i]->kind[v]]++;
        *edges += g[i]->nedges;
    }
}

/* A trace's pipeline: the one source stage kept, each new stage cut from it;
 * the record counts the difference between the columns and their stages. */
static int run_trace_pipeline(lsim_wi_plan *p, lsim_graph **blk, size_t per, lsim_err *err)
{
    const lsim_wi_decision *d = &p->d;
    lsim_wi_counts *c = &p->c[LSIM_WI_ST_PIPE];
    uint64_t tk_src[LSIM_N_NKINDS] = {0}, tk_new[LSIM_N_NKINDS] = {0}, te_src = 0, te_new = 0;
    lsim_graph **srcb = lsim_calloc(per, sizeof *srcb);
    int rc = srcb ? read_stage(p, 0, srcb, err) : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if (!rc) count_kinds(srcb, per, tk_src, &te_src);
    for (int s = 0; !rc && s < d->Ls.pp; s++) {
        for (size_t i = 0; !rc && i < per; i++)
            rc = lsim_wi_trace_pipeline(srcb[i], &p->L, &d->pcfg, &p->tfrom, (int)(i % (size_t)p->L.tp),
                                        (int)(i / (size_t)p->L.tp), s, &blk[i], c, err);
        if (!rc) count_kinds(blk, per, tk_new, &te_new);
        if (!rc) rc = emit_stage(p, s, blk, per, err);
        free_graphs(blk, per);
    }
    free_graphs(srcb, per);
    free(srcb);
    if (rc) return rc;
    for (int k = 0; k < LSIM_N_NKINDS; k++) {
        if (tk_new[k] > tk_src[k]) c->added[k] += tk_new[k] - tk_src[k];
        else c->removed[k] += tk_src[k] - tk_new[k];
    }
    if (te_new > te_src) c->edges_added += te_new - te_src;
    else c->edges_removed += te_src - te_new;
    c->gpus_added += (uint64_t)(d->Ls.pp - 1) * per;
    return 0;
}

/* The memory of a tagged pipeline's new stage: its GPUs, one per column, and
 * a clone when a per-GPU step follows, held at once. */
static int tagged_pipe_size(const lsim_wi_plan *p, lsim_wi_pipe **cols, size_t per, lsim_err *err)
{
    const lsim_wi_decision *d = &p->d;
    double hn = 0, he = 0, hs = 0, big = 0, cn = 0, ce = 0, cs = 0, cl = 0;
    for (size_t i = 0; i < per; i++) {
        lsim_wi_pipe_estimate(cols[i], &d->pcfg, &cn, &ce, &cs);
        hn += cn, he += ce, hs += cs;
        if (cn > big) big = cn;
    }
    for (size_t i = 0; i < lsim_wi_nrows(); i++) { /* a per-GPU step follows */
        const lsim_wi_row *r = lsim_wi_row_at(i);
        if (r->phase == LSIM_WI_PH_GPU && d->used[r->step]) cl = 1;
    }
    return lsim_wi_size_check(p->rq.out, (double)per + cl, hn + cl * big, he + cl * 1.8 * big, hs + cl * big / 2, big,
                              err);
}

/* A tagged (synthesized) pipeline: every source stage into its (tp, dp)
 * column's segments (nothing written), the new pipeline checked once the
 * whole source is read, then the new stages emitted from the columns. */
static int run_tagged_pipeline(lsim_wi_plan *p, lsim_graph **blk, size_t per, lsim_err *err)
{
    lsim_wi_decision *d = &p->d;
    lsim_wi_pipe **cols = lsim_calloc(per, sizeof *cols);
    int rc = cols ? 0 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < per; i++)
        rc = lsim_wi_pipe_new(&p->L, (int)(i % (size_t)p->L.tp), (int)(i / (size_t)p->L.tp), &cols[i], err);
    for (int s = 0; !rc && s < p->L.pp; s++) {
        rc = read_stage(p, s, blk, err);
        for (size_t i = 0; !rc && i < per; i++) rc = lsim_wi_pipe_add(cols[i], blk[i], s, err);
        free_graphs(blk, per);
    }
    if (!rc) {
        lsim_wi_pipe_source(cols[0], NULL, &d->src_m);
        d->pcfg.micro_batches = p->rq.micro_batches ? (int)p->rq.micro_batches : d->src_m;
        for (size_t i = 0; !rc && i < per; i++) rc = lsim_wi_pipe_check(cols[i], &d->pcfg, err);
    }
    if (!rc) rc = tagged_pipe_size(p, cols, per, err);
    for (int s = 0; !rc && s < d->Ls.pp; s++) {
        for (size_t i = 0; !rc && i < per; i++)
            rc = lsim_wi_pipeline(cols[i], &d->pcfg, &d->Mto, &p->tfrom, s, &blk[i], &p->c[LSIM_WI_ST_PIPE], err);
        if (!rc) rc = emit_stage(p, s, blk, per, err);
        free_graphs(blk, per);
    }
    for (size_t i = 0; !rc && i < per; i++) lsim_wi_pipe_record(cols[i], &p->c[LSIM_WI_ST_PIPE]);
    for (size_t i = 0; cols && i < per; i++) lsim_wi_pipe_free(cols[i]);
    free(cols);
    return rc;
}

static void put_kinds(FILE *f, const char *key, const uint64_t *k)
{
    fprintf(f, "\"%s\":{", key);
    for (int i = 0; i < LSIM_N_NKINDS; i++)
        fprintf(f, "%s\"%s\":%llu", i ? "," : "", lsim_node_kind_name((lsim_node_kind)i), (unsigned long long)k[i]);
    fputc('}', f);
}

/* What step s did to the traced GPUs' memory figures: the record's
 * "memory" member of the step (docs/whatif.md, "Memory"), from its row:
 * dropped or re-estimated when it changes what a GPU holds, else carried
 * (with the row's reason, or a member of its own). */
static void put_step_memory(const lsim_wi_plan *p, const lsim_wi_row *r, FILE *f)
{
    if (!p->mem_src) {
        fputs("\"memory\":{\"figures\":\"none\"},", f);
        return;
    }
    const char *opt = r && r->changes ? r->changes(&p->ctx) : NULL;
    if (opt) {
        if (p->mem_reest)
            fprintf(f,
                    "\"memory\":{\"figures\":\"re-estimated\",\"why\":\"%s changes what the GPU holds: its "
                    "measured peaks plus the model-shape estimate's change from the source's layout to the new one\"},",
                    opt);
        else
            fprintf(f,
                    "\"memory\":{\"figures\":\"dropped\",\"why\":\"%s changes what the GPU holds (weights, gradients, "
                    "optimizer state, activations): the traced figures are of the source's contents\"},",
                    opt);
        return;
    }
    if (r && r->memory) r->memory(&p->ctx, f);
    else fprintf(f, "\"memory\":{\"figures\":\"carried\",\"why\":\"%s\"},", r && r->carried_why ? r->carried_why : "times only");
}

/* The record's top-level "memory": the new GPUs' traced figures, and the
 * most loaded one against its GPU's memory. */
static void put_memory(const lsim_wi_plan *p, FILE *f)
{
    int drop = p->mem_drop && !p->mem_reest;
    fprintf(f, ",\"memory\":{\"source_gpus_with_figures\":%zu,\"figures\":\"%s\"", p->mem_src,
            !p->mem_src ? "none" : drop ? "dropped" : p->mem_reest ? "re-estimated" : "carried");
    if (p->mem_src && drop) {
        fputs(",\"why\":", f);
        lsim_text_json(f, p->mem_note + strlen("memory: not carried: "));
    }
    if (p->mem_reest) {
        /* what is kept and what is assumed (docs/memory.md, "A traced job after a what-if") */
        fputs(",\"how\":\"each new GPU: its source GPU's measured peak (allocated, reserved) plus the estimate of its "
              "new stage minus the estimate of the source GPU's stage; kept per GPU: the measured peak minus the "
              "source's estimate (framework, fragmentation, what the estimate does not model)\",\"assumes\":\"the "
              "estimate's defaults (memest.h): bf16 weights, fp32 gradients and Adam (18 bytes per parameter) when "
              "training, flash attention, no recomputation, 1F1B\",\"estimate_source_bytes\":[",
              f);
        for (int st = 0; st < p->L.pp; st++) fprintf(f, "%s%.17g", st ? "," : "", p->est_src[st]);
        fputs("],\"estimate_new_bytes\":[", f);
        for (int st = 0; st < p->d.Ln.pp; st++) fprintf(f, "%s%.17g", st ? "," : "", p->est_new[st]);
        fputc(']', f);
    }
    if (p->mem_src && !drop) {
        fprintf(f, ",\"gpus_with_figures\":%zu,\"oom\":%s,\"oom_gpus\":%zu", p->mem_out, p->mem_oom ? "true" : "false",
                p->mem_oom);
        if (p->mem_out) {
            fprintf(f, ",\"worst\":{\"gpu\":%u,\"peak_bytes\":%lld,\"lower_bound\":%s,\"capacity_bytes\":", p->worst_gpu,
                    (long long)p->worst_peak, p->worst_lb ? "true" : "false");
            if (p->worst_cap > 0) fprintf(f, "%lld}", (long long)p->worst_cap);
            else fputs("null}", f);
        }
    }
    fputc('}', f);
}

/* The record of what changed, kept in the new store (root attribute
 * "whatif") and returned by lsim_wi_plan_record. */
static int make_record(lsim_wi_plan *p, lsim_err *err)
{
    const lsim_wi_decision *d = &p->d;
    size_t tlen = 0;
    FILE *rf = open_memstream(&p->record, &tlen);
    if (!rf) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    fprintf(rf, "{\"lumosim_version\":\"%s\",\"source\":", LSIM_VERSION);
    lsim_text_json(rf, p->rq.in); /* a file name: any bytes; the record must be valid JSON */
    fprintf(rf, ",\"gpus_in\":%zu,\"gpus_out\":%zu,\"structure\":", p->n, d->ngpu_out);
    lsim_wi_put_identify(rf, p->ids, p->n, &p->L, 0);
    fprintf(rf, ",\"layout_out\":{\"tp\":%d,\"pp\":%d,\"dp\":%d},\"transformations\":[", d->Ln.tp, d->Ln.pp, d->Ln.dp);
    int first = 1;
    for (int s = 0; s < LSIM_WI_ST_N; s++) {
        if (!d->used[s]) continue;
        const lsim_wi_counts *c = &p->c[s];
        fprintf(rf, "%s{\"name\":\"%s\",", first ? "" : ",", d->name[s]);
        first = 0;
        const lsim_wi_row *r = lsim_wi_row_of_step(s);
        if (r && r->args) r->args(&p->ctx, rf);
        put_step_memory(p, r, rf);
        fprintf(rf, "\"gpus_added\":%llu,\"gpus_removed\":%llu,", (unsigned long long)c->gpus_added,
                (unsigned long long)c->gpus_removed);
        put_kinds(rf, "nodes_added", c->added);
        fputc(',', rf);
        put_kinds(rf, "nodes_removed", c->removed);
        fputc(',', rf);
        put_kinds(rf, "nodes_retimed", c->retimed);
        fputs(",\"collectives_retimed\":{", rf);
        for (int k = 0; k < LSIM_WI_NGCLASS; k++)
            fprintf(rf, "%s\"%s\":%llu", k ? "," : "", lsim_wi_gclass_name(k), (unsigned long long)c->coll_retimed[k]);
        fprintf(rf, "},\"edges_added\":%llu,\"edges_removed\":%llu}", (unsigned long long)c->edges_added,
                (unsigned long long)c->edges_removed);
    }
    fputc(']', rf);
    put_memory(p, rf);
    fputc('}', rf);
    if (fclose(rf)) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    return 0;
}

/* Micro-batches per pipeline of a synthesized graph: the largest "mb<k>"
 * of its layer tags ("L3.mb7.fwd.qkv_gemm") plus one, 0 when untagged. */
static int tagged_micro_batches(const lsim_graph *g)
{
    int m = 0;
    for (size_t v = 0; v < g->n; v++) {
        int l, k, n = 0;
        const char *nm = lsim_strtab_get(g->strings, g->name[v]);
        if (nm[0] == 'L' && sscanf(nm, "L%d.mb%d.%n", &l, &k, &n) == 2 && n > 0 && k + 1 > m) m = k + 1;
    }
    return m;
}

/* The new job's memory estimate (memest.h), as the JSON of root attribute
 * "memory", when the source has one (lumosim synth records it; a trace's
 * store has none, and neither gets one here). A source synthesized with
 * synth's default options -- the only ones a structural what-if carries
 * over (rule synth-options) -- is re-estimated for the new shape, layers
 * and layout, its micro-batches and schedule; with other options (the
 * what-if then only copies DP replicas, re-times or slows) the source's
 * stages are kept. Either way on the new GPU, whose capacity decides OOM.
 * *json NULL: no estimate. */
static int new_memory(lsim_wi_plan *p, char **json, lsim_err *err)
{
    const lsim_wi_decision *d = &p->d;
    char *text = NULL;
    lsim_err aerr = {0};
    lsim_memest_job src, nj;
    lsim_graph **gs = NULL;
    size_t got = 0;
    memset(&src, 0, sizeof src);
    memset(&nj, 0, sizeof nj);
    *json = NULL;
    if (lsim_store_read_attr(p->rq.in, "memory", &text, &aerr) || !text) return 0;
    int rc = lsim_memest_job_parse(text, &src, err);
    if (rc) goto cleanup;
    int structural = d->used[LSIM_WI_ST_LAYERS] || d->used[LSIM_WI_ST_SHAPE] || d->used[LSIM_WI_ST_PIPE] ||
                     d->Ln.tp != p->L.tp;
    if (!p->sopts[0]) {
        /* re-estimated: the shape from the source's model, layers from its
         * tags, micro-batches from its tags unless the pipeline is rebuilt */
        lsim_wi_model M;
        lsim_err merr = {0};
        if ((rc = lsim_store_read_graphs(p->rq.in, 0, 1, &gs, &got, err))) goto cleanup;
        if (!got || lsim_wi_model_of(gs[0], &p->L, &p->given, (int)p->rq.trace_layers, &M, &merr)) goto keep;
        if (d->used[LSIM_WI_ST_SHAPE]) M = d->Mto;
        int layers = 0;
        for (size_t i = 0; i < p->n; i++)
            if (p->ids[i].layer_hi + 1 > layers) layers = p->ids[i].layer_hi + 1;
        if (p->rq.layers) layers = (int)p->rq.layers;
        int m = d->pipe ? d->pcfg.micro_batches : tagged_micro_batches(gs[0]);
        if (layers <= 0 || m <= 0) goto keep;
        lsim_memest_in in;
        lsim_memest_in_default(&in);
        in.layers = layers, in.hidden = M.hidden, in.ffn = M.ffn, in.heads = M.heads, in.head_dim = M.head_dim;
        in.seq = M.seq, in.vocab = M.vocab;
        in.tp = d->Ln.tp, in.pp = d->Ln.pp, in.dp = d->Ln.dp;
        in.vstages = d->pipe ? d->pcfg.vstages : (p->ids[0].nchunks > 0 ? p->ids[0].nchunks : 1);
        in.micro_batch = M.micro_batch > 0 ? M.micro_batch : 1;
        in.microbatches = m;
        if (lsim_memest_check(&in, &merr)) goto keep;
        rc = lsim_memest_job_of(&in, p->gto.name, p->gto.mem_capacity, &nj, err);
        goto done;
    }
keep:
    if (structural && p->sopts[0]) goto cleanup; /* cannot happen: refused by rule synth-options */
    /* the source's stages, on the new GPU and in the new layout */
    nj = src;
    memset(&src, 0, sizeof src);
    snprintf(nj.gpu, sizeof nj.gpu, "%s", p->gto.name);
    nj.capacity = p->gto.mem_capacity;
    nj.tp = d->Ln.tp, nj.pp = d->Ln.pp, nj.dp = d->Ln.dp;
    nj.oom = nj.capacity > 0 && nj.nstages > 0 && nj.stages[nj.worst].total > nj.capacity;
done:
    if (!rc) rc = lsim_memest_job_json(&nj, json, err);
cleanup:
    free(text);
    lsim_store_free_graphs(gs, got);
    lsim_memest_job_free(&src);
    lsim_memest_job_free(&nj);
    return rc;
}

/* --model on a structural what-if of a trace with memory figures: the
 * model-shape estimate (memest.h, lumosim synth's default options) of the
 * source's layout and of the new one, per stage, into p->est_src /
 * p->est_new, so that mem_apply can give each new GPU its source GPU's
 * measured peaks plus the change the estimate predicts. What is kept per
 * GPU is the measured peak minus the source stage's estimate: the CUDA
 * context and framework beyond the estimate's reserve, the caching
 * allocator's fragmentation, and whatever the trace's job holds that the
 * estimate does not model; the estimate only has to get the change right,
 * not the whole. Not made (why in *why, the figures then dropped) when the
 * model does not fit the layouts or a figure is a lower bound (deltas:
 * nothing is known of what was allocated before the window). 0 or
 * LSIM_ENOMEM. */
static int mem_reestimate(lsim_wi_plan *p, char *why, size_t cap, lsim_err *err)
{
    const lsim_wi_decision *d = &p->d;
    lsim_err merr = {0};
    why[0] = 0;
    if (!p->f.have_model) {
        snprintf(why, cap, "the model shape does not fit the source (%.200s)", p->f.model_err);
        return 0;
    }
    for (size_t i = 0; i < p->n; i++)
        if (p->ids[i].world > (int32_t)p->n) {
            /* one rank of a larger job: its layout here is not the job's (a TP 8 rank alone reads as TP 1),
               and the estimate's shards would be wrong */
            snprintf(why, cap, "the store holds %zu of the job's %d GPUs, so the layout the model is split over is unknown",
                     p->n, p->ids[i].world);
            return 0;
        }
    if (p->mem_src_lb) {
        snprintf(why, cap, "the traced figures are lower bounds (allocation sizes only), so the part the model does not "
                           "cover is unknown");
        return 0;
    }
    lsim_wi_model Ms = p->f.from_model, Mn = d->used[LSIM_WI_ST_SHAPE] ? d->Mto : Ms;
    int layers = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->ids[i].layer_hi + 1 > layers) layers = p->ids[i].layer_hi + 1;
    lsim_memest_in in[2];
    for (int k = 0; k < 2; k++) {
        const lsim_wi_model *M = k ? &Mn : &Ms;
        lsim_memest_in_default(&in[k]);
        in[k].layers = k && p->rq.layers ? (int)p->rq.layers : layers;
        in[k].hidden = M->hidden, in[k].ffn = M->ffn, in[k].heads = M->heads, in[k].head_dim = M->head_dim;
        in[k].seq = M->seq, in[k].vocab = M->vocab;
        in[k].tp = k ? d->Ln.tp : p->L.tp, in[k].pp = k ? d->Ln.pp : p->L.pp, in[k].dp = k ? d->Ln.dp : p->L.dp;
        in[k].vstages = k && d->pipe ? d->pcfg.vstages : 1;
        in[k].micro_batch = M->micro_batch > 0 ? M->micro_batch : 1;
        in[k].microbatches = k && d->pipe && d->pcfg.micro_batches > 0 ? d->pcfg.micro_batches
                             : d->src_m > 0                             ? d->src_m
                                                                        : 1;
        in[k].forward_only = p->ids[0].forward_only;
        if (lsim_memest_check(&in[k], &merr)) {
            snprintf(why, cap, "the model does not fit the %s layout (%.180s)", k ? "new" : "source's", merr.msg);
            return 0;
        }
    }
    free(p->est_src);
    free(p->est_new);
    p->est_src = lsim_calloc((size_t)in[0].pp, sizeof *p->est_src);
    p->est_new = lsim_calloc((size_t)in[1].pp, sizeof *p->est_new);
    if (!p->est_src || !p->est_new) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (int k = 0; k < 2; k++)
        for (int st = 0; st < in[k].pp; st++) {
            lsim_memest_stage e;
            if (lsim_memest_stage_of(&in[k], st, &e, &merr)) {
                snprintf(why, cap, "%.200s", merr.msg);
                return 0;
            }
            (k ? p->est_new : p->est_src)[st] = e.total;
        }
    p->mem_reest = 1;
    return 0;
}

int lsim_wi_plan_run(lsim_wi_plan *p, lsim_err *err)
{
    lsim_wi_decision *d = &p->d;
    int rc = lsim_wi_plan_check(&p->rq, &p->f, d, err);
    size_t per = (size_t)p->L.tp * (size_t)p->L.dp;
    lsim_graph **blk = NULL;
    if (rc) return rc;
    p->ctx = (lsim_wi_ctx){&p->rq, d, &p->L, p->ids, &p->gfrom, &p->gto, &p->tfrom, &p->tto, p->from_how,
                           p->mem_src > 0, 0, 0};
    if (p->mem_src) {
        /* the option that changes what a GPU holds, first in step order */
        const lsim_wi_request *rq = &p->rq;
        for (int s = 0; s < LSIM_WI_ST_N && !p->mem_drop; s++) {
            const lsim_wi_row *r = lsim_wi_row_of_step(s);
            if (d->used[s] && r && r->changes) p->mem_drop = r->changes(&p->ctx);
        }
        char why[LSIM_ERR_LEN / 2] = "";
        if (p->mem_drop && rq->model && (rc = mem_reestimate(p, why, sizeof why, err))) return rc;
        p->ctx.mem_reest = p->mem_reest;
        if (p->mem_drop && !p->mem_reest)
            snprintf(p->mem_note, sizeof p->mem_note,
                     "memory: not carried: %s changes what the GPU holds, so the trace's figures no longer apply%s%s",
                     p->mem_drop, rq->model ? "; --model cannot re-estimate them: " : "; give --model to re-estimate them",
                     rq->model ? why : "");
    }
    if (!(blk = lsim_calloc(per, sizeof *blk))) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    rc = d->tpipe  ? run_trace_pipeline(p, blk, per, err)
         : d->pipe ? run_tagged_pipeline(p, blk, per, err)
                   : run_plain(p, blk, per, err);
    free_graphs(blk, per);
    free(blk);
    if (!rc && p->mem_oom)
        snprintf(p->oom, sizeof p->oom,
                 "OOM: GPU %u's peak from its source GPU's trace, %s%.1f GB, exceeds the %s's %.1f GB (%zu of "
                 "%zu GPUs with figures do not fit)",
                 p->worst_gpu, p->worst_lb ? "at least " : "", (double)p->worst_peak / 1e9,
                 d->used[LSIM_WI_ST_GPU] ? p->gto.name : "GPU", (double)p->worst_cap / 1e9, p->mem_oom, p->mem_out);
    if (!rc) rc = make_record(p, err);
    if (!rc) rc = lsim_store_writer_set_attr(p->w, "whatif", p->record, err);
    if (!rc) {
        char *mem = NULL;
        rc = new_memory(p, &mem, err);
        if (!rc && mem) rc = lsim_store_writer_set_attr(p->w, "memory", mem, err);
        if (!rc && mem) {
            lsim_memest_job j = {0};
            /* the model estimate's verdict (a synthesized source) comes first */
            if (!lsim_memest_job_parse(mem, &j, NULL) && j.oom) lsim_memest_oom_line(&j, p->oom, sizeof p->oom);
            lsim_memest_job_free(&j);
        }
        free(mem);
    }
    /* the new job's GPU, for a what-if of this what-if (unless it was only assumed) */
    if (!rc && (strcmp(p->from_how, "assumed (no GPU named by the traces)") || d->used[LSIM_WI_ST_GPU]))
        rc = lsim_store_writer_set_attr(p->w, "device", p->gto.name, err);
    if (!rc) {
        rc = lsim_store_writer_close(p->w, err);
        p->w = NULL;
    }
    return rc;
}

const char *lsim_wi_plan_record(const lsim_wi_plan *p) { return p->record; }

const char *lsim_wi_plan_oom(const lsim_wi_plan *p) { return p->oom; }

const char *lsim_wi_plan_memory_note(const lsim_wi_plan *p) { return p->mem_note; }

void lsim_wi_plan_free(lsim_wi_plan *p)
{
    if (!p) return;
    if (p->w) lsim_store_writer_abort(p->w);
    free(p->record);
    free(p->est_src);
    free(p->est_new);
    lsim_wi_job_free(p->job);
    free(p->ents);
    lsim_strtab_free(p->names);
    free(p->size);
    free(p->ranks);
    free(p->ids);
    lsim_store_gpu_table_free(p->tab, p->n);
    free(p);
}
