/* The CPU side of the build: each thread's nested ops flattened into
 * non-overlapping pieces (children poking 0.25 us out of a parent clamped,
 * adjacent pieces merged where nothing observable is lost, gaps kept as
 * edge delays), CPU nodes placed in their ProfilerStep iteration, and the
 * training phase of GPU work read from the ops around its launch while the
 * nesting is still known; and, for the predicted trace, the op tree itself
 * kept beside the pieces (graph.h, lsim_cpu_ops). */
#include <ctype.h>
#include "lumosim/alloc.h"

#include "build_internal.h"

/* ---------------------------------------------------------- CPU flatten */

int lsim_graph_layer_annotation(const char *s)
{
    /* a module of the profiler's module hierarchy (with_modules /
     * with_stack: python_function "nn.Module: GPT2Block_3"): a transformer
     * block by its class name, numbered by instance */
    if (!strncmp(s, "nn.Module: ", 11)) {
        const char *c = s + 11, *u = strrchr(c, '_');
        if (!u || !isdigit((unsigned char)u[1])) return -1;
        for (const char *q = u + 1; *q; q++)
            if (!isdigit((unsigned char)*q)) return -1;
        size_t n = (size_t)(u - c);
        int block = n >= 5 && (!strncmp(u - 5, "Block", 5) || !strncmp(u - 5, "Layer", 5));
        if (!block) return -1;
        long l = strtol(u + 1, NULL, 10);
        return l > 1000000 ? -1 : (int)l;
    }
    const char *p = strstr(s, "layer");
    if (!p) p = strstr(s, "Layer");
    if (!p) return -1;
    p += 5;
    if (*p == 's') p++;
    if (*p == '[' || *p == '.' || *p == '_' || *p == ' ') p++;
    if (!isdigit((unsigned char)*p)) return -1;
    long l = strtol(p, NULL, 10);
    return l > 1000000 ? -1 : (int)l;
}

/* What the CPU steps read from a name, as bits (NB_*), once per distinct
 * name: the same string tests ran for every piece and every enclosing op of
 * every launch, a good part of the graph build (callgrind; issue 20). */
enum { NB_KNOWN = 1, NB_LAYER = 2, NB_STEP = 4, NB_CLASS_SHIFT = 3 };

static int name_class(const char *s);

static uint8_t name_bits_of(const char *s)
{
    return (uint8_t)(NB_KNOWN | (lsim_graph_layer_annotation(s) >= 0 ? NB_LAYER : 0) |
                     (!strncmp(s, "ProfilerStep#", 13) ? NB_STEP : 0) | (name_class(s) << NB_CLASS_SHIFT));
}

static uint8_t bld_name_bits(bld_builder *b, uint32_t id)
{
    if (id >= b->nname_bits) {
        size_t n = lsim_strtab_count(b->g->strings);
        uint8_t *p = n > id ? lsim_realloc(b->name_bits, n) : NULL;
        if (!p) return name_bits_of(lsim_strtab_get(b->g->strings, id)); /* unmemoized, same answer */
        memset(p + b->nname_bits, 0, n - b->nname_bits);
        b->name_bits = p;
        b->nname_bits = n;
    }
    if (!b->name_bits[id]) b->name_bits[id] = name_bits_of(lsim_strtab_get(b->g->strings, id));
    return b->name_bits[id];
}

typedef struct cpu_item {
    lsim_ns ts, end;
    uint32_t ev;
    uint8_t prio;
} cpu_item;

typedef struct flat_state {
    uint32_t proc;
    lsim_ns cursor;
    uint32_t last_node; /* previous piece on this thread */
    int layer_end;      /* last_node ends a layer annotation: merge nothing into it */
} flat_state;

/* Emit the piece [s, e) of event item `it` as a node, chained to the previous
 * piece of the thread with the gap as delay. */
static int emit_piece(bld_builder *b, flat_state *fs, const cpu_item *it, lsim_ns s, lsim_ns e, int force)
{
    if (e <= s && !force) return 0;
    const lsim_event *x = &b->t->ev[it->ev];
    uint8_t kind = x->kind == LSIM_EV_RUNTIME ? LSIM_N_RUNTIME : LSIM_N_CPU;
    uint32_t v = fs->last_node;
    /* Adjacent CPU pieces with no gap between them are one stretch of CPU
     * work to the simulation: merge them (keeps memory per event low). Never
     * across the start of a ProfilerStep, so iteration membership stays, and
     * never a layer annotation's first or last piece with its neighbours, so
     * where the layer starts and ends stays visible
     * (lsim_graph_layer_annotation). */
    if (kind == LSIM_N_CPU && v != BLD_NONE && b->g->kind[v] == LSIM_N_CPU && b->g->obs_end[v] == s &&
        !(x->kind == LSIM_EV_ANNOTATION && x->ts == s && (bld_name_bits(b, x->name) & NB_STEP)) &&
        !((x->kind == LSIM_EV_ANNOTATION || x->kind == LSIM_EV_CPU_OP) && (s == x->ts || e == x->ts + x->dur) &&
          (bld_name_bits(b, x->name) & NB_LAYER)) &&
        !fs->layer_end) {
        b->g->obs_end[v] = e;
        b->g->dur[v] = e - b->g->obs_start[v];
        fs->cursor = e;
        b->ev_node[it->ev] = v;
        return 0;
    }
    int rc = bld_new_node(b, kind, fs->proc, it->ev, s, e, &v);
    if (rc) return rc;
    if (fs->last_node == BLD_NONE) {
        b->g->release[v] = s; /* thread start: CPU time, allowed */
    } else {
        lsim_ns gap = s - b->g->obs_end[fs->last_node];
        if ((rc = bld_add_edge(b, fs->last_node, v, LSIM_E_CPU_THREAD, gap))) return rc;
    }
    fs->last_node = v;
    fs->cursor = e;
    b->ev_node[it->ev] = v;
    /* a layer annotation's last piece: what follows is outside the layer */
    fs->layer_end = (x->kind == LSIM_EV_ANNOTATION || x->kind == LSIM_EV_CPU_OP) && e == x->ts + x->dur &&
                    (bld_name_bits(b, x->name) & NB_LAYER);
    return 0;
}

static const lsim_event *g_sort_events;
static uint8_t cpu_prio(uint8_t kind) { return kind == LSIM_EV_ANNOTATION ? 0 : kind == LSIM_EV_CPU_OP ? 1 : 2; }

/* Thread order: by start, longer first (the parent), annotations before ops
 * before runtime calls at a tie, then file order. */
static int cmp_cpu_idx(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, c = *(const uint32_t *)y;
    const lsim_event *p = &g_sort_events[a], *q = &g_sort_events[c];
    if (p->ts != q->ts) return p->ts < q->ts ? -1 : 1;
    lsim_ns pe = p->ts + p->dur, qe = q->ts + q->dur;
    if (pe != qe) return pe > qe ? -1 : 1;
    uint8_t pp = cpu_prio(p->kind), qp = cpu_prio(q->kind);
    if (pp != qp) return pp - qp;
    return a < c ? -1 : (a > c);
}

typedef struct cpu_stack {
    cpu_item *v;
    size_t n, cap;
} cpu_stack;

/* ------------------------------------------------------ training phases */

/* What an enclosing op's or annotation's name says about the step. */
enum { NM_NONE = 0, NM_OPTIMIZER, NM_ZERO_GRAD, NM_DATALOADER, NM_FORWARD, NM_EVALUATE };

static int name_class(const char *s)
{
    static const char eval[] = "autograd::engine::evaluate_function";
    if (!strncmp(s, "Optimizer.step#", 15)) return NM_OPTIMIZER;
    if (!strncmp(s, "Optimizer.zero_grad#", 20)) return NM_ZERO_GRAD;
    if (!strncmp(s, "enumerate(DataLoader)#", 22)) return NM_DATALOADER;
    if (!strncmp(s, eval, sizeof eval - 1)) return NM_EVALUATE;
    size_t n = strlen(s);
    if (n > 8 && !strcmp(s + n - 8, ".forward")) return NM_FORWARD;
    return NM_NONE;
}

/* The phase and forward Sequence number of the GPU work launched by the
 * runtime call on top of the stack, from the events enclosing it (inner
 * first). Why this order of rules: the optimizer, zero_grad and the data
 * loader are named by annotations that may hold ops with Sequence numbers
 * (autograd records one on every op it dispatches, no_grad or not), so an
 * annotation decides first; a backward op (Fwd thread id > 0, or autograd's
 * evaluate_function wrapper) or the autograd thread itself (DDP's bucket
 * hooks run there outside any backward op) then decides backward; a
 * forward-side op (a Sequence number with Fwd thread id 0 or none) or a
 * "*.forward" annotation forward; anything else is "other". The Sequence
 * number is the innermost one of the deciding side. */
static void launch_phase(bld_builder *b, uint32_t proc, const cpu_stack *st, uint32_t ev)
{
    int ann = LSIM_PHASE_UNKNOWN, bwd = b->proc_autograd[proc] != 0, fwd = 0;
    int64_t bseq = -1, fseq = -1;
    for (size_t k = st->n - 1; k-- > 0;) {
        uint32_t e = st->v[k].ev;
        const lsim_event *enc = &b->t->ev[e];
        if (enc->kind == LSIM_EV_RUNTIME) continue;
        int c = bld_name_bits(b, enc->name) >> NB_CLASS_SHIFT;
        if (!ann && c == NM_OPTIMIZER) ann = LSIM_PHASE_OPTIMIZER;
        if (!ann && c == NM_ZERO_GRAD) ann = LSIM_PHASE_ZERO_GRAD;
        if (!ann && c == NM_DATALOADER) ann = LSIM_PHASE_DATALOADER;
        if (c == NM_FORWARD) fwd = 1;
        const lsim_autograd_op *ag = enc->kind == LSIM_EV_CPU_OP ? lsim_trace_autograd_of(b->t, e) : NULL;
        if (c == NM_EVALUATE || (ag && ag->fwd_tid > 0)) {
            bwd = 1;
            if (bseq < 0 && ag) bseq = ag->seq;
        } else if (ag) {
            fwd = 1;
            if (fseq < 0) fseq = ag->seq;
        }
    }
    int64_t seq = -1;
    uint8_t ph;
    if (ann) ph = (uint8_t)ann;
    else if (bwd) ph = LSIM_PHASE_BACKWARD, seq = bseq;
    else if (fwd) ph = LSIM_PHASE_FORWARD, seq = fseq;
    else ph = LSIM_PHASE_OTHER;
    b->ev_phase[ev] = ph;
    b->ev_fseq[ev] = seq < 0 ? -1 : (int32_t)(seq & 0x7fffffff); /* graph.h: modulo 2^31 */
}

/* Autograd threads: a CPU thread that runs backward ops and no
 * forward-side op (with CPU tensors the backward runs on the calling
 * thread, which then stays a forward thread). */
static int autograd_threads(bld_builder *b, const uint32_t *ev_proc)
{
    const lsim_trace *t = b->t;
    const lsim_graph *g = b->g;
    static const char eval[] = "autograd::engine::evaluate_function";
    uint8_t *fwd = lsim_calloc(g->nprocs ? g->nprocs : 1, 1);
    if (!(b->proc_autograd = lsim_calloc(g->nprocs ? g->nprocs : 1, 1)) || !fwd) {
        free(fwd);
        return bld_oom(b);
    }
    for (size_t i = 0; i < t->nautograd; i++) {
        uint32_t p = t->autograd[i].ev < t->nev ? ev_proc[t->autograd[i].ev] : BLD_NONE;
        if (p == BLD_NONE) continue;
        if (t->autograd[i].fwd_tid > 0) b->proc_autograd[p] = 1;
        else fwd[p] = 1;
    }
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].kind == LSIM_EV_CPU_OP && ev_proc[i] != BLD_NONE &&
            !strncmp(lsim_strtab_get(g->strings, t->ev[i].name), eval, sizeof eval - 1))
            b->proc_autograd[ev_proc[i]] = 1;
    for (uint32_t p = 0; p < g->nprocs; p++)
        if (fwd[p]) b->proc_autograd[p] = 0;
    free(fwd);
    return 0;
}

int bld_phases(bld_builder *b)
{
    lsim_graph *g = b->g;
    for (size_t v = 0; v < g->n; v++) {
        if (!g->procs[g->proc[v]].is_gpu || g->corr[v] < 0) continue;
        uint32_t r = bld_map_get(b->ckeys, b->cvals, b->cslots, g->corr[v]);
        if (r == BLD_NONE) continue; /* pre-window: unknown */
        uint32_t ev = b->node_event[r];
        g->phase[v] = b->ev_phase[ev];
        g->fwd_seq[v] = b->ev_fseq[ev];
    }
    return 0;
}

/* One thread: a stack walk over its events in thread order. The stack holds
 * the open (enclosing) events; only its depth is ever allocated. */
/* The collective op st->v[k] (record_param_comms, whose args never name a
 * broadcast's or reduce's root) takes the root the c10d op around it read
 * (src/read/kineto.c attach_root), so that the kernel launched inside gets it
 * with the op's other metadata (bld_label_collectives). Only from an op of
 * the same kind, or into one whose kind is unknown. */
static void inherit_root(bld_builder *b, const cpu_stack *st, size_t k)
{
    lsim_coll_info *c = &b->t->colls[b->t->ev[st->v[k].ev].coll];
    if (c->root >= 0) return;
    while (k-- > 0) {
        const lsim_event *o = &b->t->ev[st->v[k].ev];
        if (o->kind != LSIM_EV_CPU_OP || o->coll < 0) continue;
        const lsim_coll_info *p = &b->t->colls[o->coll];
        if (p->root < 0) continue;
        if (c->kind == p->kind || c->kind == LSIM_COLL_NONE || c->kind == LSIM_COLL_GENERIC) c->root = p->root;
        return;
    }
}

/* The collective a launch call (event ev, the stack's top) sits in: the
 * innermost record_param_comms (or c10d op) around it, which gets the root
 * of a c10d op further out and, when it names no kind (PyTorch 1.x writes
 * no "Collective name"), the kind of the innermost "nccl:*" profiling title
 * around the launch (src/read/kineto.c attach_title); without any cpu_op record,
 * the title itself. */
static void enclosing_coll(bld_builder *b, const cpu_stack *st, uint32_t ev)
{
    int32_t title = -1;
    for (size_t k = st->n - 1; k-- > 0;) {
        const lsim_event *enc = &b->t->ev[st->v[k].ev];
        if (enc->kind == LSIM_EV_ANNOTATION && enc->coll >= 0 && title < 0) title = enc->coll;
        if (enc->kind == LSIM_EV_CPU_OP && enc->coll >= 0) {
            b->ev_rpc[ev] = enc->coll; /* launched inside record_param_comms */
            inherit_root(b, st, k);
            lsim_coll_info *c = &b->t->colls[enc->coll];
            if (c->kind == LSIM_COLL_NONE && title >= 0) c->kind = b->t->colls[title].kind;
            return;
        }
    }
    if (title >= 0) b->ev_rpc[ev] = title;
}

static int flatten_thread(bld_builder *b, uint32_t proc, const uint32_t *idx, size_t n, cpu_stack *st)
{
    flat_state fs = {proc, INT64_MIN, BLD_NONE, 0};
    int rc;
    st->n = 0;
    for (size_t i = 0; i < n; i++) {
        const lsim_event *x = &b->t->ev[idx[i]];
        cpu_item it = {x->ts, x->ts + x->dur, idx[i], cpu_prio(x->kind)};
        while (st->n > 0 && st->v[st->n - 1].end <= it.ts) {
            cpu_item *top = &st->v[--st->n];
            int force = b->ev_node[top->ev] == BLD_NONE && b->t->ev[top->ev].kind == LSIM_EV_RUNTIME;
            if ((rc = emit_piece(b, &fs, top, fs.cursor > top->ts ? fs.cursor : top->ts, top->end, force))) return rc;
        }
        if (st->n > 0) {
            cpu_item *top = &st->v[st->n - 1];
            if (it.end > top->end) it.end = top->end; /* poke-out (0.25 us precision) clamped */
            if ((rc = emit_piece(b, &fs, top, fs.cursor > top->ts ? fs.cursor : top->ts, it.ts, 0))) return rc;
        }
        if (LSIM_GROW(st->v, &st->cap, st->n + 1)) return bld_oom(b);
        st->v[st->n++] = it;
        fs.cursor = it.ts;
        if (x->kind == LSIM_EV_RUNTIME) launch_phase(b, proc, st, it.ev);
        if (x->kind == LSIM_EV_RUNTIME) enclosing_coll(b, st, it.ev);
        if (x->kind == LSIM_EV_RUNTIME && !strncmp(bld_api_base(lsim_strtab_get(b->g->strings, x->name)), "Memcpy", 6)) {
            if ((rc = emit_piece(b, &fs, &st->v[st->n - 1], it.ts, it.ts, 1))) return rc;
            b->g->flags[fs.last_node] |= LSIM_NF_ENTER;
            b->ev_enter[it.ev] = fs.last_node;
            b->ev_node[it.ev] = BLD_NONE;
        }
    }
    while (st->n > 0) {
        cpu_item *top = &st->v[--st->n];
        int force = b->ev_node[top->ev] == BLD_NONE && b->t->ev[top->ev].kind == LSIM_EV_RUNTIME;
        if ((rc = emit_piece(b, &fs, top, fs.cursor > top->ts ? fs.cursor : top->ts, top->end, force))) return rc;
    }
    return 0;
}

/* ------------------------------------------------------------ op tree */

/* Where observed time t falls among a thread's pieces lo .. hi-1 (in thread
 * order, non-overlapping, so obs_start and obs_end both ascend), as a piece,
 * an offset and a flag (graph.h, lsim_cpu_op). A start belongs to the piece
 * that begins at t or holds it (a piece ending at t is left for the next
 * one), an end to the piece that ends at t or holds it; a time in a gap
 * between pieces counts back from the next piece's start (the gap is an
 * edge delay, so it stays in front of that piece), and one after the last
 * piece from its end. */
static void locate(const lsim_graph *g, size_t lo, size_t hi, lsim_ns t, int is_end, uint32_t *node, lsim_ns *off,
                   uint8_t *at_end)
{
    size_t a = lo, z = hi; /* start: first v with obs_end > t or obs_start >= t; end: first v failing
                              obs_start < t or obs_end <= t */
    while (a < z) {
        size_t m = a + (z - a) / 2;
        int before = is_end ? (g->obs_start[m] < t || g->obs_end[m] <= t) : !(g->obs_end[m] > t || g->obs_start[m] >= t);
        if (before) a = m + 1;
        else z = m;
    }
    *at_end = 0;
    if (!is_end) {
        if (a < hi) {
            *node = (uint32_t)a;
            *off = t - g->obs_start[a]; /* >= 0 inside, < 0 in the gap before it */
        } else {
            *node = (uint32_t)(hi - 1);
            *off = t - g->obs_end[hi - 1];
            *at_end = 1;
        }
        return;
    }
    if (a == lo) { /* before the first piece */
        *node = (uint32_t)lo;
        *off = t - g->obs_start[lo];
        return;
    }
    size_t v = a - 1;
    if (g->obs_end[v] == t || (g->obs_end[v] < t && v + 1 == hi)) {
        *node = (uint32_t)v;
        *off = t - g->obs_end[v];
        *at_end = 1;
    } else if (g->obs_end[v] > t) {
        *node = (uint32_t)v;
        *off = t - g->obs_start[v];
    } else { /* in the gap after v */
        *node = (uint32_t)(v + 1);
        *off = t - g->obs_start[v + 1];
    }
}

/* Keep one thread's ops (idx, in thread order) with the positions of their
 * boundaries among the thread's pieces lo .. g->n - 1, just flattened. The
 * stack walk is flatten_thread's, so the ends are the same clamped ends:
 * what nests in the build nests in the table. A thread without pieces (only
 * zero-length ops) has nothing to place its ops on; they are left out. */
static int keep_ops(bld_builder *b, const uint32_t *idx, size_t n, size_t lo, cpu_stack *st)
{
    lsim_graph *g = b->g;
    lsim_cpu_ops *T = g->cpu_ops;
    size_t hi = g->n;
    if (hi == lo) return 0;
    st->n = 0;
    for (size_t i = 0; i < n; i++) {
        const lsim_event *x = &b->t->ev[idx[i]];
        lsim_ns ts = x->ts, end = x->ts + x->dur;
        while (st->n > 0 && st->v[st->n - 1].end <= ts) st->n--;
        if (st->n > 0 && end > st->v[st->n - 1].end) end = st->v[st->n - 1].end;
        if (LSIM_GROW(st->v, &st->cap, st->n + 1)) return bld_oom(b);
        st->v[st->n++] = (cpu_item){ts, end, idx[i], 0};
        if (LSIM_GROW(T->op, &b->capops, T->n + 1)) return bld_oom(b);
        lsim_cpu_op *op = &T->op[T->n];
        uint8_t fs, fe;
        *op = (lsim_cpu_op){x->name, x->cat, 0, 0, 0, 0, x->kind == LSIM_EV_RUNTIME ? x->corr : -1,
                            x->kind == LSIM_EV_CPU_OP ? x->coll : -1, x->kind, 0};
        locate(g, lo, hi, ts, 0, &op->start_node, &op->start_off, &fs);
        locate(g, lo, hi, end, 1, &op->end_node, &op->end_off, &fe);
        op->flags = (uint8_t)((fs ? LSIM_OP_START_AT_END : 0) | (fe ? LSIM_OP_END_AT_END : 0));
        b->ev_op[idx[i]] = (uint32_t)T->n++;
    }
    return 0;
}

/* Once every node exists (GPU nodes come after the CPU threads): the op
 * whose own piece starts each CPU node, for the writer to put the node's
 * flow arrows after; the table trimmed to its length (it grew by doubling),
 * and the per-event map, which needs the event table, released. */
int bld_cpu_ops_finish(bld_builder *b)
{
    lsim_graph *g = b->g;
    lsim_cpu_ops *T = g->cpu_ops;
    if (!T) return 0;
    if (T->n && T->n < b->capops) {
        lsim_cpu_op *x = lsim_realloc(T->op, T->n * sizeof *x);
        if (x) T->op = x, b->capops = T->n;
    }
    uint32_t *m = lsim_malloc((g->n ? g->n : 1) * sizeof *m);
    if (!m) return bld_oom(b);
    for (size_t v = 0; v < g->n; v++) {
        uint32_t ev = b->node_event[v];
        m[v] = !g->procs[g->proc[v]].is_gpu && ev < b->t->nev ? b->ev_op[ev] : UINT32_MAX;
    }
    free(T->node_op);
    T->node_op = m;
    T->nnodes = g->n;
    free(b->ev_op);
    b->ev_op = NULL;
    return 0;
}

int bld_cpu(bld_builder *b, const uint32_t *ev_proc)
{
    lsim_trace *t = b->t;
    lsim_graph *g = b->g;
    int rc = 0;
    cpu_stack st = {0};
    size_t *count = lsim_calloc(g->nprocs + 1, sizeof *count);
    uint32_t *idx = lsim_malloc((t->nev ? t->nev : 1) * sizeof *idx);
    if (!count || !idx) {
        rc = bld_oom(b);
        goto cleanup;
    }
    for (size_t i = 0; i < t->nev; i++)
        if (ev_proc[i] != BLD_NONE && !g->procs[ev_proc[i]].is_gpu) count[ev_proc[i] + 1]++;
    for (uint32_t p = 0; p < g->nprocs; p++) count[p + 1] += count[p];
    for (size_t i = 0; i < t->nev; i++) {
        uint32_t p = ev_proc[i];
        if (p == BLD_NONE || g->procs[p].is_gpu) continue;
        idx[count[p]++] = (uint32_t)i;
    }
    if ((rc = autograd_threads(b, ev_proc))) goto cleanup;
    if (b->o->keep_cpu_ops) {
        if (!(g->cpu_ops = lsim_calloc(1, sizeof *g->cpu_ops)) || !(b->ev_op = lsim_malloc((t->nev ? t->nev : 1) * sizeof *b->ev_op))) {
            rc = bld_oom(b);
            goto cleanup;
        }
        for (size_t i = 0; i < t->nev; i++) b->ev_op[i] = BLD_NONE;
    }
    /* count[p] is now the end of p's range; walk ranges */
    g_sort_events = t->ev;
    size_t begin = 0;
    for (uint32_t p = 0; p < g->nprocs; p++) {
        size_t end = count[p];
        if (g->procs[p].is_gpu || end == begin) {
            begin = end;
            continue;
        }
        qsort(idx + begin, end - begin, sizeof *idx, cmp_cpu_idx);
        size_t lo = g->n;
        if ((rc = flatten_thread(b, p, idx + begin, end - begin, &st))) goto cleanup;
        if (g->cpu_ops && (rc = keep_ops(b, idx + begin, end - begin, lo, &st))) goto cleanup;
        begin = end;
    }
cleanup:
    free(count);
    free(idx);
    free(st.v);
    return rc;
}
/* ------------------------------------------------------------ iterations */

static int cmp_iter(const void *x, const void *y)
{
    const lsim_iter *p = x, *q = y;
    if (p->obs_start != q->obs_start) return p->obs_start < q->obs_start ? -1 : 1;
    return p->name < q->name ? -1 : (p->name > q->name);
}

int bld_iters(bld_builder *b)
{
    lsim_trace *t = b->t;
    lsim_graph *g = b->g;
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].kind == LSIM_EV_ANNOTATION && !strncmp(lsim_strtab_get(g->strings, t->ev[i].name), "ProfilerStep#", 13))
            n++;
    g->iters = lsim_calloc(n ? n : 1, sizeof *g->iters);
    if (!g->iters) return bld_oom(b);
    for (size_t i = 0; i < t->nev; i++) {
        const lsim_event *e = &t->ev[i];
        if (e->kind == LSIM_EV_ANNOTATION && !strncmp(lsim_strtab_get(g->strings, e->name), "ProfilerStep#", 13))
            g->iters[g->niters++] = (lsim_iter){e->name, e->ts, e->ts + e->dur};
    }
    qsort(g->iters, g->niters, sizeof *g->iters, cmp_iter);
    /* CPU nodes: by observed start inside the annotation (any thread) */
    for (size_t v = 0; v < g->n; v++) {
        if (g->procs[g->proc[v]].is_gpu) continue;
        lsim_ns s = g->obs_start[v];
        uint32_t lo = 0, hi = g->niters;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (g->iters[mid].obs_start <= s) lo = mid + 1;
            else hi = mid;
        }
        if (lo > 0 && s < g->iters[lo - 1].obs_end) g->iter[v] = (int32_t)(lo - 1);
    }
    return 0;
}

/* ------------------------------------------------------- gradient sizes */

/* Each AccumulateGrad op's gradient bytes on the CPU node that ends it (its
 * last piece: the gradient is ready once the op returns, and DDP's hook on
 * it marks the parameter ready right after). Read from the GEMM side table
 * (trace.h), so it needs record_shapes; ops without a usable shape stay 0,
 * and lsim_wi_identify counts the ones missing. Must run while the event
 * maps exist. */
int bld_grads(bld_builder *b)
{
    const lsim_trace *t = b->t;
    for (size_t i = 0; i < t->ngemm; i++) {
        const lsim_gemm_op *op = &t->gemms[i];
        if (strcmp(lsim_strtab_get(b->g->strings, op->name), LSIM_ACCUMULATE_GRAD)) continue;
        if (op->ev >= t->nev || op->elem_bytes <= 0 || op->ndims[0] < 0) continue;
        uint32_t v = b->ev_node[op->ev];
        if (v == BLD_NONE) continue;
        int64_t n = op->elem_bytes;
        for (int d = 0; d < op->ndims[0] && n > 0; d++)
            n = op->dims[0][d] > 0 && n <= INT64_MAX / 4 / op->dims[0][d] ? n * op->dims[0][d] : 0;
        if (n > 0 && b->g->grad_bytes[v] <= LSIM_DUR_MAX) b->g->grad_bytes[v] += n;
    }
    return 0;
}
