/* Replay report: human-readable table and the stable JSON document
 * (docs/report-json.md). The JSON is built with cJSON; it is small (per rank
 * and per iteration figures plus the duty-cycle bins). */
#include "lumosim/report.h"

#include <math.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lumosim/alloc.h"
#include "lumosim/kineto.h"
#include "lumosim/text.h"

static double ms(lsim_ns x) { return (double)x / 1e6; }

/* A string from outside (a file name, a name in a trace) into the JSON:
 * cJSON escapes control characters but passes bytes that are not UTF-8
 * through, which would make the document invalid; those become U+FFFD. */
static void add_text(cJSON *o, const char *key, const char *s)
{
    if (lsim_utf8_valid(s)) {
        cJSON_AddStringToObject(o, key, s);
        return;
    }
    char *v = lsim_text_utf8(s);
    if (v) cJSON_AddStringToObject(o, key, v); /* out of memory: the key is missing, as cJSON would leave it */
    free(v);
}

static double mean(const double *v, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++) s += v[i];
    return n ? s / n : 0.0;
}

void lsim_report_job_span(const lsim_replay_item *items, size_t n, lsim_ns *act, lsim_ns *pred)
{
    lsim_report_job_part p;
    lsim_report_job_part_of(items, n, &p);
    *act = n ? p.ae - p.as : 0;
    *pred = n ? p.pe - p.ps : 0;
}

/* Collective kernels by kind, and how many carry a size / a group. */
static void collective_counts(const lsim_graph *g, uint64_t *byk, uint64_t *nk, uint64_t *nb, uint64_t *ng)
{
    for (size_t v = 0; v < g->n; v++) {
        if (!(g->flags[v] & LSIM_NF_COLL) || g->coll[v] < 0) continue;
        const lsim_coll_info *c = &g->colls[g->coll[v]];
        (*nk)++;
        if (c->kind <= LSIM_COLL_OTHER) byk[c->kind]++;
        if (c->bytes >= 0) (*nb)++;
        if (c->pg_name != UINT32_MAX) (*ng)++;
    }
}

/* A graph with no observed node (synthesized): its "actual" figures are
 * absent, printed as "-" (table) or null (JSON), never as 0. */
static int has_obs(const lsim_graph *g) { return lsim_metrics_observed_nodes(g) > 0; }

/* An item's actual side is shown when its graph has observed times that
 * are its own (not a copy of another rank's trace: unmeasured). */
static int item_obs(const lsim_replay_item *it) { return it->g && has_obs(it->g) && !it->unmeasured; }

static void put_actual(FILE *f, int obs, lsim_ns a, lsim_ns p)
{
    if (obs) fprintf(f, " %12.3f %12.3f %+8.2f%%\n", (double)a / 1e6, (double)p / 1e6, 100 * lsim_rel_err(a, p));
    else fprintf(f, " %12s %12.3f %9s\n", "-", (double)p / 1e6, "-");
}

static int rank_of(const lsim_replay_item *it, size_t i) { return it->g->rank >= 0 ? it->g->rank : (int)i; }

static void print_critical_path(FILE *f, const lsim_graph *g, const lsim_critical_path *cp)
{
    fprintf(f, "  critical path %.3f ms through %zu nodes:", ms(cp->length), cp->n);
    for (int c = 0; c < LSIM_CP_NCATS; c++)
        if (cp->by_cat[c])
            fprintf(f, " %s %.1f%%", lsim_cp_cat_name((lsim_cp_cat)c),
                    cp->length ? 100.0 * (double)cp->by_cat[c] / (double)cp->length : 0.0);
    fprintf(f, "\n    path edges:");
    for (int c = 0; c < LSIM_E_NCLASSES; c++)
        if (cp->edges_by_class[c])
            fprintf(f, " %s %llu (%.3f ms)", lsim_edge_class_name((lsim_edge_class)c),
                    (unsigned long long)cp->edges_by_class[c], ms(cp->by_class[c]));
    fprintf(f, "\n    top contributors:\n");
    for (size_t k = 0; k < cp->ntop; k++)
        fprintf(f, "      %10.3f ms  %-7s %.70s\n", ms(cp->top_time[k]), lsim_node_kind_name((lsim_node_kind)g->kind[cp->top[k]]),
                lsim_strtab_get(g->strings, g->name[cp->top[k]]));
}

static cJSON *critical_path_json(const lsim_graph *g, const lsim_critical_path *cp)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "length_ns", (double)cp->length);
    cJSON_AddNumberToObject(o, "nodes", (double)cp->n);
    cJSON *c = cJSON_AddObjectToObject(o, "by_category_ns");
    for (int k = 0; c && k < LSIM_CP_NCATS; k++)
        cJSON_AddNumberToObject(c, lsim_cp_cat_name((lsim_cp_cat)k), (double)cp->by_cat[k]);
    cJSON *nk = cJSON_AddObjectToObject(o, "by_node_kind_ns");
    for (int k = 0; nk && k < LSIM_N_NKINDS; k++)
        cJSON_AddNumberToObject(nk, lsim_node_kind_name((lsim_node_kind)k), (double)cp->by_kind[k]);
    cJSON *ec = cJSON_AddObjectToObject(o, "edges");
    for (int k = 0; ec && k < LSIM_E_NCLASSES; k++) {
        cJSON *x = cJSON_AddObjectToObject(ec, lsim_edge_class_name((lsim_edge_class)k));
        if (!x) continue;
        cJSON_AddNumberToObject(x, "count", (double)cp->edges_by_class[k]);
        cJSON_AddNumberToObject(x, "time_ns", (double)cp->by_class[k]);
    }
    cJSON *top = cJSON_AddArrayToObject(o, "top");
    for (size_t k = 0; top && k < cp->ntop; k++) {
        cJSON *x = cJSON_CreateObject();
        if (!x) break;
        add_text(x, "name", lsim_strtab_get(g->strings, g->name[cp->top[k]]));
        cJSON_AddStringToObject(x, "kind", lsim_node_kind_name((lsim_node_kind)g->kind[cp->top[k]]));
        cJSON_AddNumberToObject(x, "time_ns", (double)cp->top_time[k]);
        cJSON_AddItemToArray(top, x);
    }
    return o;
}

/* One item's section of the table (idx: its index in the job). */
/* A traced GPU's memory as its profiler recorded it (graph.h mem_*): the
 * peak the step reached, what the caching allocator held, and the GPU's
 * memory; "none" says how to get it. Traced graphs, and what-if graphs
 * (obs 0) that carry their source GPU's figures or had them dropped: there
 * a peak past the capacity is the new job's OOM. A synthesized job's
 * estimate is the memory table. */
static void table_trace_memory(FILE *f, const lsim_graph *g, int obs)
{
    char cap[64] = "";
    if (g->mem_source == LSIM_MEM_SRC_DROPPED) {
        fprintf(f, "  memory     not carried: the what-if changed what this GPU holds, so its source GPU's traced "
                   "figures no longer apply (the store's whatif record says which option)\n");
        return;
    }
    if (g->mem_source == LSIM_MEM_SRC_REESTIMATED)
        fprintf(f, "  memory     re-estimated by the what-if: the source GPU's traced peaks plus the model-shape "
                   "estimate's change (the store's whatif record says how):\n");
    else if (!obs)
        fprintf(f, "  memory     carried from the source GPU's trace by the what-if:\n");
    if (g->mem_capacity > 0) snprintf(cap, sizeof cap, " of the GPU's %.2f GB", (double)g->mem_capacity / 1e9);
    if (g->mem_source == LSIM_MEM_SRC_TOTALS || g->mem_source == LSIM_MEM_SRC_REESTIMATED) {
        fprintf(f, "  memory     peak allocated %.2f GB, reserved %.2f GB%s (%llu [memory] events, device %d)\n",
                (double)g->mem_peak_allocated / 1e9, (double)g->mem_peak_reserved / 1e9, cap,
                (unsigned long long)g->mem_events, g->mem_device);
    } else if (g->mem_source == LSIM_MEM_SRC_DELTAS) {
        fprintf(f, "  memory     peak allocated at least %.2f GB%s (%llu [memory] events with allocation sizes only, "
                   "device %d: what was allocated before the window is not in the trace)\n",
                (double)g->mem_peak_allocated / 1e9, cap, (unsigned long long)g->mem_events, g->mem_device);
    } else {
        fprintf(f, "  memory     not recorded (profile with profile_memory=True for the peak)");
        if (g->mem_capacity > 0) fprintf(f, "; the GPU has %.2f GB", (double)g->mem_capacity / 1e9);
        fputc('\n', f);
    }
    int64_t peak = g->mem_peak_reserved > g->mem_peak_allocated ? g->mem_peak_reserved : g->mem_peak_allocated;
    if (g->mem_capacity > 0 && peak > g->mem_capacity && obs)
        fprintf(f, "  memory     OVER CAPACITY: the trace's peak exceeds the GPU's memory (a trace of another GPU?)\n");
    else if (g->mem_capacity > 0 && peak > g->mem_capacity)
        fprintf(f, "  memory     OOM, does not fit: the traced peak exceeds this GPU's %.2f GB\n",
                (double)g->mem_capacity / 1e9);
}

/* Kernels that look like communication but that no row of the table of
 * communication kernels made a collective (lsim_comm_like_kernel_name):
 * they are replayed as compute, so they are counted and one is named
 * (*example: its name id) instead of being kept silently. A memo per name
 * id (1 byte a string; without it the count is 0 and nothing is said). */
static uint64_t comm_like(const lsim_graph *g, uint32_t *example)
{
    uint32_t ns = lsim_strtab_count(g->strings);
    uint8_t *memo = lsim_calloc(ns ? ns : 1, 1); /* 0 unknown, 1 no, 2 yes */
    uint64_t n = 0;
    if (!memo) return 0;
    for (size_t v = 0; v < g->n; v++) {
        if (g->kind[v] != LSIM_N_KERNEL || (g->flags[v] & LSIM_NF_COLL) || g->name[v] >= ns) continue;
        uint8_t *m = &memo[g->name[v]];
        if (!*m) *m = lsim_comm_like_kernel_name(lsim_strtab_get(g->strings, g->name[v])) ? 2 : 1;
        if (*m == 2 && !n++) *example = g->name[v];
    }
    free(memo);
    return n;
}

static void table_item(FILE *f, const lsim_replay_item *it, size_t idx)
{
    const lsim_graph *g = it->g;
    const lsim_rank_report *r = it->r;
    fprintf(f, "\nrank %d  %s%s\n", rank_of(it, idx), g->source, it->coupled ? "  (simulated with the job)" : "");
    if (it->coupled) fprintf(f, "  clock offset against the job: %+.3f us\n", (double)it->clock_offset / 1e3);
    fprintf(f, "  graph      %zu nodes, %llu edges:", g->n, (unsigned long long)g->nedges);
    for (int c = 0; c < LSIM_E_NCLASSES; c++)
        fprintf(f, " %s %llu%s", lsim_edge_class_name((lsim_edge_class)c), (unsigned long long)g->edges_by_class[c],
                c + 1 < LSIM_E_NCLASSES ? "," : "\n");
    fprintf(f, "             inferred %llu, dropped %llu", (unsigned long long)lsim_graph_inferred_total(g),
            (unsigned long long)lsim_graph_dropped_total(g));
    int any = 0;
    for (int d = 0; d < LSIM_DROP_NREASONS; d++)
        if (g->dropped[d]) {
            fprintf(f, "%s%s %llu", any ? ", " : " (", lsim_drop_reason_name((lsim_drop_reason)d),
                    (unsigned long long)g->dropped[d]);
            any = 1;
        }
    fprintf(f, "%s; pre-window GPU ops %llu (released at observed start %llu); launch latency %.1f us (%llu idle-stream samples)\n",
            any ? ")" : "", (unsigned long long)g->prewindow, (unsigned long long)lsim_metrics_prewindow_released(g),
            (double)g->launch_latency_ns / 1e3,
            (unsigned long long)g->launch_samples);
    {
        uint64_t byk[LSIM_COLL_OTHER + 1] = {0}, nk = 0, nb = 0, ng = 0;
        collective_counts(g, byk, &nk, &nb, &ng);
        if (nk) {
            fprintf(f, "  collectives %llu kernels (", (unsigned long long)nk);
            int first = 1;
            for (int k = 1; k <= LSIM_COLL_OTHER; k++)
                if (byk[k]) {
                    fprintf(f, "%s%s %llu", first ? "" : ", ", lsim_coll_kind_name((lsim_coll_kind)k),
                            (unsigned long long)byk[k]);
                    first = 0;
                }
            fprintf(f, "); %llu with size, %llu with process group\n", (unsigned long long)nb, (unsigned long long)ng);
        }
    }
    uint32_t cl_name = 0;
    uint64_t cl = comm_like(g, &cl_name);
    if (cl)
        fprintf(f, "  warning    %llu kernels look like communication but no table row knows them (e.g. \"%.80s\"): "
                "replayed as compute (docs/execution-trace.md, \"Communication kernels\")\n",
                (unsigned long long)cl, lsim_strtab_get(g->strings, cl_name));
    int obs = item_obs(it);
    if (obs || g->mem_source != LSIM_MEM_SRC_NONE) table_trace_memory(f, g, obs);
    if (it->unmeasured)
        fprintf(f, "  actual: not measured (a copy of one traced rank, --replicate-from; no trace of this rank)\n");
    else if (!obs)
        fprintf(f, "  no observed times (synthesized or what-if graph): actual figures are absent\n");
    fprintf(f, "  %-22s %12s %12s %9s\n", "", "actual ms", "predicted ms", "error");
    fprintf(f, "  %-22s", "window");
    put_actual(f, obs, r->window_actual, r->window_predicted);
    if (r->niters)
        fprintf(f, "  iterations: ProfilerSteps projected onto the GPU (rows add up to the window); CPU-side spans below\n");
    for (uint32_t k = 0; k < r->niters; k++) {
        const lsim_iter_report *ir = &r->iters[k];
        fprintf(f, "  %-22.22s", lsim_strtab_get(g->strings, ir->name));
        put_actual(f, obs, ir->actual, ir->predicted);
    }
    for (uint32_t k = 0; k < r->niters; k++) {
        const lsim_iter_report *ir = &r->iters[k];
        if (ir->cpu_predicted == LSIM_SPAN_UNKNOWN) continue; /* an archive from before they were recorded */
        char lab[64];
        snprintf(lab, sizeof lab, "CPU %s", lsim_strtab_get(g->strings, ir->name));
        fprintf(f, "    %-20.20s", lab);
        put_actual(f, obs, ir->cpu_actual, ir->cpu_predicted);
    }
    fprintf(f, "  breakdown (window)     %12s %12s %9s\n", "actual ms", "predicted ms", "err/win");
    const lsim_breakdown *a = &r->bd_actual, *p = &r->bd_predicted;
    const char *nm[4] = {"exposed compute", "overlapped", "exposed comm", "other"};
    lsim_ns av[4] = {a->exposed_compute, a->overlapped, a->exposed_comm, a->other};
    lsim_ns pv[4] = {p->exposed_compute, p->overlapped, p->exposed_comm, p->other};
    for (int k = 0; k < 4; k++) {
        if (!obs) {
            fprintf(f, "    %-20s %12s %12.3f %9s\n", nm[k], "-", ms(pv[k]), "-");
            if (k == 2 && p->exposed_comm_wait)
                fprintf(f, "      %-18s %12s %12.3f %9s\n", "of which waiting", "-", ms(p->exposed_comm_wait), "-");
            continue;
        }
        fprintf(f, "    %-20s %12.3f %12.3f %+8.2f%%\n", nm[k], ms(av[k]), ms(pv[k]),
                r->window_actual ? 100.0 * (double)(pv[k] - av[k]) / (double)r->window_actual : 0.0);
        if (k == 2 && (a->exposed_comm_wait || p->exposed_comm_wait))
            fprintf(f, "      %-18s %12.3f %12.3f %+8.2f%%\n", "of which waiting", ms(a->exposed_comm_wait),
                    ms(p->exposed_comm_wait),
                    r->window_actual ? 100.0 * (double)(p->exposed_comm_wait - a->exposed_comm_wait) / (double)r->window_actual
                                     : 0.0);
    }
    if (obs && r->has_fidelity)
        fprintf(f, "  stream-active duty cycle (%g ms bins): mean actual %.1f%%, predicted %.1f%%; "
                   "bin by bin mean |difference| %.1f points\n",
                (double)r->bin_ns / 1e6, 100 * mean(r->duty_actual, r->nbins_actual),
                100 * mean(r->duty_predicted, r->nbins_predicted), 100 * r->duty_abs_diff);
    else if (obs)
        fprintf(f, "  stream-active duty cycle (%g ms bins): mean actual %.1f%%, predicted %.1f%%\n",
                (double)r->bin_ns / 1e6, 100 * mean(r->duty_actual, r->nbins_actual),
                100 * mean(r->duty_predicted, r->nbins_predicted));
    else
        fprintf(f, "  stream-active duty cycle (%g ms bins): mean predicted %.1f%%\n", (double)r->bin_ns / 1e6,
                100 * mean(r->duty_predicted, r->nbins_predicted));
    if (it->cp) print_critical_path(f, g, it->cp);
    if (obs) fprintf(f, "  node agreement with the trace: max |start err| %.3f ms, max |end err| %.3f ms, exact %.1f%%\n",
            ms(r->max_abs_start_err), ms(r->max_abs_end_err),
            g->n ? 100.0 * (double)r->nodes_exact / (double)g->n : 100.0);
    if (obs && r->has_fidelity) {
        const lsim_err_dist *d[2] = {&r->start_err_gpu, &r->start_err_cpu};
        for (int k = 0; k < 2; k++)
            fprintf(f, "    |start err| of %llu %s ops: median %.3f us, p90 %.3f us, max %.3f us\n",
                    (unsigned long long)d[k]->n, k ? "CPU" : "GPU", (double)d[k]->median / 1e3, (double)d[k]->p90 / 1e3,
                    (double)d[k]->max / 1e3);
    }
    if (r->has_coupling) {
        /* what the coupling covers: per kind, coupled / kept traced */
        int shown = 0;
        for (int k = 0; k < LSIM_COLL_NKINDS; k++) {
            if (!r->coll_coupled[k] && !r->coll_traced[k]) continue;
            fprintf(f, "%s %s %llu coupled, %llu traced", shown ? ";" : "  collective kernels:",
                    lsim_coll_kind_name((lsim_coll_kind)k), (unsigned long long)r->coll_coupled[k],
                    (unsigned long long)r->coll_traced[k]);
            if (r->has_rootless && r->coll_rootless[k])
                fprintf(f, " (%llu without a known root: all waited)", (unsigned long long)r->coll_rootless[k]);
            shown = 1;
        }
        if (shown) fputc('\n', f);
        /* and their time: waiting for the group's last arrival vs transfer */
        for (int k = 0; r->has_coll_time && k < LSIM_COLL_NKINDS; k++) {
            if (!r->coll_coupled[k] && !r->coll_traced[k]) continue;
            lsim_ns tp = r->coll_time_predicted[k], wp = r->coll_wait_predicted[k];
            fprintf(f, "    %s: predicted %.3f ms (waiting %.3f, transfer %.3f)", lsim_coll_kind_name((lsim_coll_kind)k),
                    ms(tp), ms(wp), ms(tp - wp));
            if (obs) {
                lsim_ns ta = r->coll_time_actual[k], wa = r->coll_wait_actual[k];
                fprintf(f, ", actual %.3f ms (waiting %.3f, transfer %.3f)", ms(ta), ms(wa), ms(ta - wa));
            }
            fputc('\n', f);
        }
    }
}

void lsim_report_table_head(FILE *f, int observed_latency, int any_obs)
{
    /* a job without observed times was synthesized or transformed: it is
     * a simulation, not the replay of a trace */
    fprintf(f, "lumosim %s %s (latency: %s)\n", LSIM_VERSION,
            any_obs ? "replay" : "simulation of a synthesized or what-if job",
            lsim_latency_mode_name(observed_latency ? LSIM_LAT_OBSERVED : LSIM_LAT_MODEL));
}

/* The memory estimate under the job line: the worst stage with the GPU's
 * capacity, then every stage (GPU g is on stage g / (TP x DP)), OOM named
 * on the line of each stage that does not fit. */
static void table_memory(FILE *f, const lsim_memest_job *j)
{
    const lsim_memest_stage *w = &j->stages[j->worst];
    fprintf(f, "memory per GPU (estimate from the %s shape and layout): peak %.2f GB on pipeline stage %d", j->source,
            w->total / 1e9, j->worst);
    if (j->capacity > 0)
        fprintf(f, "; the %s has %.2f GB%s\n", j->gpu[0] ? j->gpu : "GPU", j->capacity / 1e9,
                j->oom ? ": OOM, does not fit" : ": fits");
    else
        fprintf(f, "; the GPU's capacity is unknown\n");
    fprintf(f, "  %5s %9s %8s %8s %8s %12s %9s %6s %8s %8s  (GB)\n", "stage", "params", "weights", "grads", "optim",
            "activations", "inflight", "comm", "reserve", "total");
    for (int s = 0; s < j->nstages; s++) {
        const lsim_memest_stage *g = &j->stages[s];
        fprintf(f, "  %5d %9.3g %8.2f %8.2f %8.2f %12.2f %9d %6.2f %8.2f %8.2f%s\n", s, g->params, g->weights / 1e9,
                g->grads / 1e9, g->optim / 1e9, g->activations / 1e9, g->inflight, g->comm / 1e9, g->reserve / 1e9,
                g->total / 1e9, j->capacity > 0 && g->total > j->capacity ? "  OOM" : "");
    }
}

/* ------------------------------------------------ the job's critical path */

/* How a job path names its GPU gi: its rank, else its index in the job. */
static int jp_rank(const lsim_job_path *jp, uint32_t gi)
{
    const lsim_graph *g = jp->graphs ? jp->graphs[gi] : NULL;
    return g && g->rank >= 0 ? g->rank : (int)gi;
}

#define JP_GPUS_SHOWN 8

static void print_job_path(FILE *f, const lsim_job_path *jp)
{
    double L = jp->length ? (double)jp->length : 1.0;
    fprintf(f, "job critical path %.3f ms through %zu nodes, moving to the last-arriving GPU at %llu collectives:",
            ms(jp->length), jp->n, (unsigned long long)jp->crossings);
    for (int c = 0; c < LSIM_CP_NCATS; c++)
        if (jp->by_cat[c]) fprintf(f, " %s %.1f%%", lsim_cp_cat_name((lsim_cp_cat)c), 100.0 * (double)jp->by_cat[c] / L);
    size_t ns = 0;
    uint32_t *order = NULL;
    int ok = !lsim_job_path_gpu_order(jp, &order, &ns); /* out of memory: the shares are left out */
    fprintf(f, "\n  per GPU (most first):");
    lsim_ns rest = 0;
    for (size_t i = 0; ok && i < ns; i++) {
        lsim_ns t = jp->by_gpu[order[i]];
        if (i < JP_GPUS_SHOWN) fprintf(f, " rank %d %.1f%%", jp_rank(jp, order[i]), 100.0 * (double)t / L);
        else rest += t;
    }
    if (ok && ns > JP_GPUS_SHOWN) fprintf(f, ", %zu more %.1f%%", ns - JP_GPUS_SHOWN, 100.0 * (double)rest / L);
    lsim_free(order);
    fprintf(f, "\n  top contributors:\n");
    for (size_t k = 0; k < jp->ntop; k++) {
        const lsim_graph *g = jp->graphs[jp->top_gpu[k]];
        uint32_t v = jp->top_node[k];
        fprintf(f, "    %10.3f ms  rank %-4d %-7s %.70s\n", ms(jp->top_time[k]), jp_rank(jp, jp->top_gpu[k]),
                lsim_node_kind_name((lsim_node_kind)g->kind[v]), lsim_strtab_get(g->strings, g->name[v]));
    }
}

static cJSON *job_path_json(const lsim_job_path *jp)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "length_ns", (double)jp->length);
    cJSON_AddNumberToObject(o, "nodes", (double)jp->n);
    cJSON_AddNumberToObject(o, "crossings", (double)jp->crossings);
    cJSON *c = cJSON_AddObjectToObject(o, "by_category_ns");
    for (int k = 0; c && k < LSIM_CP_NCATS; k++)
        cJSON_AddNumberToObject(c, lsim_cp_cat_name((lsim_cp_cat)k), (double)jp->by_cat[k]);
    cJSON *gs = cJSON_AddArrayToObject(o, "by_gpu");
    size_t ns = 0;
    uint32_t *order = NULL;
    if (lsim_job_path_gpu_order(jp, &order, &ns)) gs = NULL;
    for (size_t i = 0; gs && i < ns; i++) {
        cJSON *x = cJSON_CreateObject();
        if (!x) break;
        cJSON_AddNumberToObject(x, "gpu", order[i]);
        cJSON_AddNumberToObject(x, "rank", jp_rank(jp, order[i]));
        cJSON_AddNumberToObject(x, "time_ns", (double)jp->by_gpu[order[i]]);
        cJSON_AddItemToArray(gs, x);
    }
    lsim_free(order);
    cJSON *top = cJSON_AddArrayToObject(o, "top");
    for (size_t k = 0; top && k < jp->ntop; k++) {
        const lsim_graph *g = jp->graphs[jp->top_gpu[k]];
        uint32_t v = jp->top_node[k];
        cJSON *x = cJSON_CreateObject();
        if (!x) break;
        cJSON_AddNumberToObject(x, "gpu", jp->top_gpu[k]);
        cJSON_AddNumberToObject(x, "rank", jp_rank(jp, jp->top_gpu[k]));
        add_text(x, "name", lsim_strtab_get(g->strings, g->name[v]));
        cJSON_AddStringToObject(x, "kind", lsim_node_kind_name((lsim_node_kind)g->kind[v]));
        cJSON_AddNumberToObject(x, "time_ns", (double)jp->top_time[k]);
        cJSON_AddItemToArray(top, x);
    }
    return o;
}

/* replay --replicate-from's range: what it is, what it assumes, and the
 * real job against it when there is one (docs/intervals.md). */
static void print_job_range(FILE *f, const lsim_job_range *r)
{
    fprintf(f, "job range from rank %d's own durations (%llu samples, seed %llu): p5 %.3f ms, p50 %.3f ms, p95 %.3f ms\n",
            (int)r->source, (unsigned long long)r->n, (unsigned long long)r->seed, ms(r->q[0]), ms(r->q[1]), ms(r->q[2]));
    fprintf(f,
            "  assumes: every rank runs rank %d's work; each collective takes one of rank %d's durations of its kind "
            "and size, its waiting for peers included (rank %d waited %.3f ms in %llu of %llu collectives); each "
            "copy's kernels one of rank %d's durations of the same kernel\n",
            (int)r->source, (int)r->source, (int)r->source, ms(r->waited), (unsigned long long)r->colls_waited,
            (unsigned long long)r->colls, (int)r->source);
    if (r->actual >= 0)
        fprintf(f, "  real job: %.3f ms, %s the p5..p95 range\n", ms(r->actual),
                r->actual >= r->q[0] && r->actual <= r->q[2] ? "inside" : "OUTSIDE");
}

/* sim --link-sharing's figures after the job line: the flows, what the
 * sharing cost them, and the busiest links with their utilization over
 * the flows' span (docs/network.md). */
static void table_network(FILE *f, const lsim_netshare_stats *st)
{
    fprintf(f, "network (link sharing, %d pass%s%s): %llu flows, %llu slowed (at most x%.3f); transfers %.3f ms alone, "
               "%.3f ms shared\n",
            st->passes, st->passes == 1 ? "" : "es", st->converged ? "" : ", not converged", (unsigned long long)st->flows,
            (unsigned long long)st->slowed, st->max_slowdown > 1 ? st->max_slowdown : 1.0, st->alone_ns * 1e-6,
            st->shared_ns * 1e-6);
    for (int i = 0; i < st->nhot; i++) {
        char name[64];
        lsim_netshare_link_name(st->hot_link[i], (size_t)st->ngpus, st->paths, name, sizeof name);
        fprintf(f, "%s%s %.1f %%", i ? ", " : "  busiest links (utilization over the flows' span): ", name,
                st->span_ns > 0 ? 100.0 * st->hot_busy_ns[i] / (double)st->span_ns : 0.0);
    }
    if (st->nhot) fputc('\n', f);
    if (st->links_used)
        fprintf(f, "  every link: %llu carried traffic, utilization median %.1f %%, p90 %.1f %%, max %.1f %%; every flow: "
                   "shared / alone median x%.3f, p95 x%.3f\n",
                (unsigned long long)st->links_used, 100 * st->util_p50, 100 * st->util_p90,
                st->nhot && st->span_ns > 0 ? 100.0 * st->hot_busy_ns[0] / (double)st->span_ns : 0.0, st->slowdown_p50,
                st->slowdown_p95);
    if (st->links_used) {
        fputs("  links by utilization (tenths, 0-10 % first):", f);
        for (int k = 0; k < LSIM_NETSHARE_UBINS; k++) fprintf(f, " %llu", (unsigned long long)st->util_hist[k]);
        fputs("; flows by shared / alone (from x", f);
        for (int k = 0; k < LSIM_NETSHARE_SBINS; k++) fprintf(f, "%s%g", k ? ", " : "", lsim_netshare_slow_edge(k));
        fputs("):", f);
        for (int k = 0; k < LSIM_NETSHARE_SBINS; k++) fprintf(f, " %llu", (unsigned long long)st->slow_hist[k]);
        fputc('\n', f);
    }
    for (int k = 0, first = 1; k < LSIM_COLL_NKINDS; k++) {
        const lsim_netshare_kind *x = &st->by_kind[k];
        if (!x->flows) continue;
        fprintf(f, "%s%s %llu flows (%llu slowed) %.3f -> %.3f ms", first ? "  by collective (alone -> shared): " : ", ",
                lsim_coll_kind_name((lsim_coll_kind)k), (unsigned long long)x->flows, (unsigned long long)x->slowed,
                x->alone_ns * 1e-6, x->shared_ns * 1e-6);
        first = 0;
    }
    if (st->flows) fputc('\n', f);
    for (int i = 0; i < st->nlate && i < 3; i++) {
        const lsim_netshare_late *x = &st->late[i];
        fprintf(f, "%s%s of GPU %llu (node %llu) from %.3f ms: %.3f -> %.3f ms", i ? "; " : "  most delayed: ",
                lsim_coll_kind_name((lsim_coll_kind)x->kind), (unsigned long long)(x->key >> 32),
                (unsigned long long)(x->key & 0xffffffffu), x->start * 1e-6, x->alone * 1e-6, x->shared * 1e-6);
    }
    if (st->nlate) fputc('\n', f);
}

void lsim_report_table_tail(FILE *f, const lsim_report_job_part *p)
{
    lsim_ns ja = p->n ? lsim_ns_sub_sat(p->ae, p->as) : 0, jp = p->n ? lsim_ns_sub_sat(p->pe, p->ps) : 0;
    if (p->unmeasured && !p->any_obs)
        fprintf(f, "\njob: actual not measured (every rank a copy of one traced rank), predicted %.3f ms\n", ms(jp));
    else if (p->any_obs || !p->n)
        fprintf(f, "\njob: actual %.3f ms, predicted %.3f ms, error %+.2f%%\n", ms(ja), ms(jp), 100 * lsim_rel_err(ja, jp));
    else
        fprintf(f, "\njob: predicted %.3f ms (no observed times: nothing to compare with)\n", ms(jp));
    if (p->range) print_job_range(f, p->range);
    if (p->path) print_job_path(f, p->path);
    if (p->memory && p->memory->nstages > 0) table_memory(f, p->memory);
    if (p->network) table_network(f, p->network);
}

char *lsim_report_table_item(const lsim_replay_item *it, size_t idx)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    table_item(f, it, idx);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

void lsim_report_job_part_of(const lsim_replay_item *items, size_t n, lsim_report_job_part *p)
{
    *p = (lsim_report_job_part){INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, 0, 0, NULL, 0, NULL, NULL, NULL};
    for (size_t i = 0; i < n; i++) {
        const lsim_rank_report *r = items[i].r;
        /* saturating: an archive's windows are range-checked when read
         * (h5_archive.c), and a report never wraps a job time besides */
        lsim_ns ae = lsim_ns_add_sat(r->window_actual_start, r->window_actual);
        lsim_ns pe = lsim_ns_add_sat(r->window_predicted_start, r->window_predicted);
        if (r->window_actual_start < p->as) p->as = r->window_actual_start;
        if (ae > p->ae) p->ae = ae;
        if (r->window_predicted_start < p->ps) p->ps = r->window_predicted_start;
        if (pe > p->pe) p->pe = pe;
        if (item_obs(&items[i])) p->any_obs = 1; /* (lumosim collect passes no graphs) */
        if (items[i].unmeasured) p->unmeasured = 1;
    }
    p->n = n;
}

size_t lsim_report_pick(const lsim_ns *window, size_t n, int every, uint8_t *show)
{
    /* Why these: the slowest ranks hold the job up and the fastest shows
     * the spread; everything else is in --per-rank, the JSON and the CSV. */
    int all = every || n <= LSIM_REPORT_FULL_MAX;
    for (size_t i = 0; i < n; i++) show[i] = (uint8_t)all;
    if (all) return n;
    size_t shown = 0;
    for (int k = 0; k < LSIM_REPORT_SLOWEST; k++) {
        size_t best = n;
        for (size_t i = 0; i < n; i++)
            if (!show[i] && (best == n || window[i] > window[best])) best = i;
        show[best] = 1, shown++;
    }
    size_t fast = n;
    for (size_t i = 0; i < n; i++)
        if (!show[i] && (fast == n || window[i] < window[fast])) fast = i;
    show[fast] = 1, shown++;
    return shown;
}

void lsim_report_table_omitted(FILE *f, const lsim_ns *window, const uint8_t *show, size_t n)
{
    size_t left = 0;
    lsim_ns lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++)
        if (!show[i]) {
            left++;
            if (window[i] < lo) lo = window[i];
            if (window[i] > hi) hi = window[i];
        }
    if (left)
        fprintf(f, "\n(%zu more ranks not shown, predicted windows %.3f .. %.3f ms: the %d slowest and the fastest are "
                   "above; --per-rank prints every rank)\n",
                left, ms(lo), ms(hi), LSIM_REPORT_SLOWEST);
}

_Static_assert(sizeof(lsim_report_sum) == LSIM_REPORT_SUM_WORDS * sizeof(int64_t), "lsim_report_sum is sent as words");

/* "tp:PP:DP" names the tensor-parallel group of stage PP, "dp:TP:PP" the
 * data-parallel group of stage PP (src/synth/gen.c, src/whatif): the first
 * such group of the graph gives its stage. A name with anything after the
 * numbers is not one of these. */
int lsim_report_stage_of(const lsim_graph *g)
{
    int stage, replica;
    lsim_report_coords_of(g, &stage, &replica);
    return stage;
}

void lsim_report_coords_of(const lsim_graph *g, int *stage, int *replica)
{
    *stage = *replica = -1;
    if (!g) return;
    for (size_t c = 0; c < g->ncoll && (*stage < 0 || *replica < 0); c++) {
        if (g->colls[c].pg_name == UINT32_MAX) continue;
        const char *pg = lsim_strtab_get(g->strings, g->colls[c].pg_name);
        int a, b;
        char tail;
        if (!pg) continue;
        if (sscanf(pg, "tp:%d:%d%c", &a, &b, &tail) == 2 && a >= 0) {
            if (*stage < 0) *stage = a;
            if (b >= 0) *replica = b;
        } else if (sscanf(pg, "dp:%d:%d%c", &a, &b, &tail) == 2 && b >= 0 && *stage < 0) {
            *stage = b;
        }
    }
}

void lsim_report_sum_of(const lsim_replay_item *it, lsim_report_sum *s)
{
    const lsim_rank_report *r = it->r;
    const lsim_breakdown *b[2] = {&r->bd_actual, &r->bd_predicted};
    memset(s, 0, sizeof *s);
    s->stage = lsim_report_stage_of(it->g);
    s->obs = item_obs(it);
    s->window[0] = r->window_actual;
    s->window[1] = r->window_predicted;
    for (int k = 0; k < 2; k++) {
        s->bd[k][0] = b[k]->exposed_compute;
        s->bd[k][1] = b[k]->overlapped;
        s->bd[k][2] = b[k]->exposed_comm;
        s->bd[k][3] = b[k]->other;
    }
}

/* Why: a summarised table prints four ranks; in a pipeline the stages
 * differ by design (the first and last hold more), so the job is described
 * by each stage's typical rank, not only by the extremes. */
void lsim_report_table_stages(FILE *f, const lsim_report_sum *s, const uint8_t *show, size_t n)
{
    int64_t nst = 0;
    int left = 0, all_obs = 1;
    for (size_t i = 0; i < n; i++) {
        if (s[i].stage < 0 || s[i].stage >= (int64_t)n) return; /* unknown: nothing to group by */
        if (s[i].stage + 1 > nst) nst = s[i].stage + 1;
        if (!show[i]) left = 1;
        if (!s[i].obs) all_obs = 0;
    }
    if (!left || nst < 2) return;
    fprintf(f, "\nper pipeline stage, mean over its ranks (ms; stage from the tp:PP:DP / dp:TP:PP process groups):\n");
    fprintf(f, "  %5s %5s %-9s %10s %15s %10s %12s %10s\n", "stage", "ranks", "", "window", "exposed compute",
            "overlapped", "exposed comm", "other");
    for (int64_t st = 0; st < nst; st++) {
        /* summed as doubles (in GPU order: the same on every path), which
         * cannot overflow as an int64 sum of many long windows could */
        int64_t cnt = 0;
        double sum[2][5] = {{0}};
        for (size_t i = 0; i < n; i++) {
            if (s[i].stage != st) continue;
            cnt++;
            for (int k = 0; k < 2; k++) {
                sum[k][0] += (double)s[i].window[k];
                for (int c = 0; c < 4; c++) sum[k][c + 1] += (double)s[i].bd[k][c];
            }
        }
        if (!cnt) continue;
        for (int k = all_obs ? 0 : 1; k < 2; k++) {
            if (k == 0 || !all_obs) fprintf(f, "  %5lld %5lld", (long long)st, (long long)cnt);
            else fprintf(f, "  %5s %5s", "", "");
            fprintf(f, " %-9s %10.3f %15.3f %10.3f %12.3f %10.3f\n", k ? "predicted" : "actual",
                    sum[k][0] / (double)cnt / 1e6, sum[k][1] / (double)cnt / 1e6, sum[k][2] / (double)cnt / 1e6,
                    sum[k][3] / (double)cnt / 1e6, sum[k][4] / (double)cnt / 1e6);
        }
    }
}

void lsim_report_table_x(FILE *f, const lsim_replay_item *items, size_t n, int per_rank, const lsim_report_extra *x)
{
    lsim_report_job_part p;
    lsim_report_job_part_of(items, n, &p);
    lsim_report_table_head(f, n && items[0].g->latency == LSIM_LAT_OBSERVED, p.any_obs || p.unmeasured);
    lsim_ns *w = lsim_calloc(n ? n : 1, sizeof *w);
    uint8_t *show = lsim_malloc(n ? n : 1);
    if (!w || !show) per_rank = 1; /* out of memory: every rank, as before */
    for (size_t i = 0; w && i < n; i++) w[i] = items[i].r->window_predicted;
    if (w && show) lsim_report_pick(w, n, per_rank, show);
    for (size_t i = 0; i < n; i++)
        if (per_rank || show[i]) table_item(f, &items[i], i);
    if (!per_rank) lsim_report_table_omitted(f, w, show, n);
    if (!per_rank && w && show) {
        lsim_report_sum *sum = lsim_malloc((n ? n : 1) * sizeof *sum);
        for (size_t i = 0; sum && i < n; i++) lsim_report_sum_of(&items[i], &sum[i]);
        if (sum) lsim_report_table_stages(f, sum, show, n); /* out of memory: the means are left out */
        free(sum);
    }
    free(w);
    free(show);
    if (x) p.memory = x->memory, p.network = x->network, p.path = x->path, p.range = x->range;
    lsim_report_table_tail(f, &p);
}

void lsim_report_table(FILE *f, const lsim_replay_item *items, size_t n) { lsim_report_table_x(f, items, n, 1, NULL); }

static cJSON *bd_json(const lsim_breakdown *b, int with_wait)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "exposed_compute_ns", (double)b->exposed_compute);
    cJSON_AddNumberToObject(o, "overlapped_ns", (double)b->overlapped);
    cJSON_AddNumberToObject(o, "exposed_comm_ns", (double)b->exposed_comm);
    if (with_wait && b->exposed_comm_wait) cJSON_AddNumberToObject(o, "exposed_comm_wait_ns", (double)b->exposed_comm_wait);
    cJSON_AddNumberToObject(o, "other_ns", (double)b->other);
    return o;
}

static cJSON *bd_err_json(const lsim_breakdown *a, const lsim_breakdown *p, lsim_ns window)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    double w = window ? (double)window : 1.0;
    cJSON_AddNumberToObject(o, "exposed_compute_ns", (double)(p->exposed_compute - a->exposed_compute) / w);
    cJSON_AddNumberToObject(o, "overlapped_ns", (double)(p->overlapped - a->overlapped) / w);
    cJSON_AddNumberToObject(o, "exposed_comm_ns", (double)(p->exposed_comm - a->exposed_comm) / w);
    cJSON_AddNumberToObject(o, "other_ns", (double)(p->other - a->other) / w);
    return o;
}

static cJSON *span_json(lsim_ns a, lsim_ns p, int obs)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    if (obs) cJSON_AddNumberToObject(o, "actual_ns", (double)a);
    else cJSON_AddNullToObject(o, "actual_ns");
    cJSON_AddNumberToObject(o, "predicted_ns", (double)p);
    if (obs) cJSON_AddNumberToObject(o, "error", lsim_rel_err(a, p));
    else cJSON_AddNullToObject(o, "error");
    return o;
}

static cJSON *rank_json(const lsim_replay_item *it, size_t idx)
{
    const lsim_graph *g = it->g;
    const lsim_rank_report *r = it->r;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "rank", rank_of(it, idx));
    add_text(o, "source", g->source);
    if (it->coupled) {
        cJSON_AddBoolToObject(o, "coupled", 1);
        cJSON_AddNumberToObject(o, "clock_offset_ns", (double)it->clock_offset);
    }
    uint32_t cl_name = 0;
    uint64_t cl = comm_like(g, &cl_name);
    if (cl) {
        cJSON *u = cJSON_AddObjectToObject(o, "unknown_comm_kernels");
        cJSON_AddNumberToObject(u, "count", (double)cl);
        add_text(u, "example", lsim_strtab_get(g->strings, cl_name));
    }
    int obs = item_obs(it);
    if (!obs) cJSON_AddBoolToObject(o, "observed", 0);
    if (it->unmeasured) cJSON_AddBoolToObject(o, "measured", 0);
    cJSON_AddItemToObject(o, "window", span_json(r->window_actual, r->window_predicted, obs));
    cJSON *its = cJSON_AddArrayToObject(o, "iterations");
    for (uint32_t k = 0; its && k < r->niters; k++) {
        const lsim_iter_report *ir = &r->iters[k];
        cJSON *x = span_json(ir->actual, ir->predicted, obs);
        if (!x) break;
        add_text(x, "name", lsim_strtab_get(g->strings, ir->name));
        /* the CPU-side span: null where not observed, or not recorded (an old archive) */
        int cpu = ir->cpu_predicted != LSIM_SPAN_UNKNOWN;
        if (obs && cpu) cJSON_AddNumberToObject(x, "cpu_actual_ns", (double)ir->cpu_actual);
        else cJSON_AddNullToObject(x, "cpu_actual_ns");
        if (cpu) cJSON_AddNumberToObject(x, "cpu_predicted_ns", (double)ir->cpu_predicted);
        else cJSON_AddNullToObject(x, "cpu_predicted_ns");
        cJSON *bd = cJSON_AddObjectToObject(x, "breakdown");
        if (bd) {
            cJSON_AddItemToObject(bd, "actual", obs ? bd_json(&r->iters[k].bd_actual, 0) : cJSON_CreateNull());
            cJSON_AddItemToObject(bd, "predicted", bd_json(&r->iters[k].bd_predicted, 0));
        }
        cJSON_AddItemToArray(its, x);
    }
    cJSON *bd = cJSON_AddObjectToObject(o, "breakdown");
    if (bd) {
        cJSON_AddItemToObject(bd, "actual", obs ? bd_json(&r->bd_actual, 1) : cJSON_CreateNull());
        cJSON_AddItemToObject(bd, "predicted", bd_json(&r->bd_predicted, 1));
        cJSON_AddItemToObject(bd, "error",
                              obs ? bd_err_json(&r->bd_actual, &r->bd_predicted, r->window_actual) : cJSON_CreateNull());
    }
    cJSON *dc = cJSON_AddObjectToObject(o, "duty_cycle");
    if (dc) {
        cJSON_AddNumberToObject(dc, "bin_ns", (double)r->bin_ns);
        cJSON_AddItemToObject(dc, "actual",
                              obs ? cJSON_CreateDoubleArray(r->duty_actual, (int)r->nbins_actual) : cJSON_CreateNull());
        cJSON_AddItemToObject(dc, "predicted", cJSON_CreateDoubleArray(r->duty_predicted, (int)r->nbins_predicted));
        if (obs && r->has_fidelity) cJSON_AddNumberToObject(dc, "mean_abs_diff_pp", 100 * r->duty_abs_diff);
        else cJSON_AddNullToObject(dc, "mean_abs_diff_pp");
    }
    cJSON *gr = cJSON_AddObjectToObject(o, "graph");
    if (gr) {
        cJSON_AddNumberToObject(gr, "nodes", (double)g->n);
        cJSON *ed = cJSON_AddObjectToObject(gr, "edges");
        for (int c = 0; ed && c < LSIM_E_NCLASSES; c++)
            cJSON_AddNumberToObject(ed, lsim_edge_class_name((lsim_edge_class)c), (double)g->edges_by_class[c]);
        cJSON_AddNumberToObject(gr, "inferred_edges", (double)lsim_graph_inferred_total(g));
        cJSON *ib = cJSON_AddObjectToObject(gr, "inferred");
        for (int c = 0; ib && c < LSIM_E_NCLASSES; c++)
            if (g->inferred_by_class[c])
                cJSON_AddNumberToObject(ib, lsim_edge_class_name((lsim_edge_class)c), (double)g->inferred_by_class[c]);
        cJSON_AddNumberToObject(gr, "dropped_edges", (double)lsim_graph_dropped_total(g));
        cJSON *dr = cJSON_AddObjectToObject(gr, "dropped");
        for (int d = 0; dr && d < LSIM_DROP_NREASONS; d++)
            cJSON_AddNumberToObject(dr, lsim_drop_reason_name((lsim_drop_reason)d), (double)g->dropped[d]);
        cJSON_AddNumberToObject(gr, "prewindow_gpu_nodes", (double)g->prewindow);
        cJSON_AddNumberToObject(gr, "prewindow_released", (double)lsim_metrics_prewindow_released(g));
        cJSON_AddNumberToObject(gr, "launch_latency_ns", (double)g->launch_latency_ns);
        cJSON_AddNumberToObject(gr, "launch_latency_samples", (double)g->launch_samples);
        cJSON_AddNumberToObject(gr, "sync_events_used", (double)g->sync_events_used);
        int gobs = has_obs(g);
        cJSON *me = gobs || g->mem_source != LSIM_MEM_SRC_NONE ? cJSON_AddObjectToObject(gr, "memory") : NULL;
        if (me) {
            /* the trace's own memory figures (graph.h mem_*); null: unknown */
            int src = g->mem_source;
            int64_t peak = g->mem_peak_reserved > g->mem_peak_allocated ? g->mem_peak_reserved : g->mem_peak_allocated;
            cJSON_AddStringToObject(me, "source", lsim_mem_source_name(src));
            cJSON_AddNumberToObject(me, "events", (double)g->mem_events);
            int fig = src == LSIM_MEM_SRC_TOTALS || src == LSIM_MEM_SRC_DELTAS || src == LSIM_MEM_SRC_REESTIMATED;
            if (fig) cJSON_AddNumberToObject(me, "peak_allocated_bytes", (double)g->mem_peak_allocated);
            else cJSON_AddNullToObject(me, "peak_allocated_bytes");
            if (src == LSIM_MEM_SRC_TOTALS || src == LSIM_MEM_SRC_REESTIMATED)
                cJSON_AddNumberToObject(me, "peak_reserved_bytes", (double)g->mem_peak_reserved);
            else cJSON_AddNullToObject(me, "peak_reserved_bytes");
            cJSON_AddBoolToObject(me, "lower_bound", src == LSIM_MEM_SRC_DELTAS);
            if (g->mem_capacity > 0) cJSON_AddNumberToObject(me, "capacity_bytes", (double)g->mem_capacity);
            else cJSON_AddNullToObject(me, "capacity_bytes");
            cJSON_AddNumberToObject(me, "device", g->mem_device);
            cJSON_AddBoolToObject(me, "over_capacity", g->mem_capacity > 0 && peak > g->mem_capacity);
            /* a what-if graph's: its source GPU's figures, carried (or dropped) */
            cJSON_AddBoolToObject(me, "carried", !gobs && (src == LSIM_MEM_SRC_TOTALS || src == LSIM_MEM_SRC_DELTAS));
            if (!gobs) cJSON_AddBoolToObject(me, "oom", g->mem_capacity > 0 && peak > g->mem_capacity);
        }
        cJSON *co = cJSON_AddObjectToObject(gr, "collectives");
        if (co) {
            uint64_t byk[LSIM_COLL_OTHER + 1] = {0}, nk = 0, nb = 0, ng = 0;
            collective_counts(g, byk, &nk, &nb, &ng);
            cJSON_AddNumberToObject(co, "kernels", (double)nk);
            cJSON_AddNumberToObject(co, "with_bytes", (double)nb);
            cJSON_AddNumberToObject(co, "with_group", (double)ng);
            cJSON *bk = cJSON_AddObjectToObject(co, "by_kind");
            for (int k = 1; bk && k <= LSIM_COLL_OTHER; k++)
                if (byk[k]) cJSON_AddNumberToObject(bk, lsim_coll_kind_name((lsim_coll_kind)k), (double)byk[k]);
        }
    }
    if (it->cp) cJSON_AddItemToObject(o, "critical_path", critical_path_json(g, it->cp));
    if (r->has_coupling) {
        cJSON *cc = cJSON_AddObjectToObject(o, "collectives");
        for (int k = 0; cc && k < LSIM_COLL_NKINDS; k++) {
            if (!r->coll_coupled[k] && !r->coll_traced[k]) continue;
            cJSON *x = cJSON_AddObjectToObject(cc, lsim_coll_kind_name((lsim_coll_kind)k));
            if (!x) continue;
            cJSON_AddNumberToObject(x, "coupled", (double)r->coll_coupled[k]);
            cJSON_AddNumberToObject(x, "traced", (double)r->coll_traced[k]);
            if (r->has_rootless && (k == LSIM_COLL_BROADCAST || k == LSIM_COLL_REDUCE))
                cJSON_AddNumberToObject(x, "rootless", (double)r->coll_rootless[k]);
            if (!r->has_coll_time) continue; /* an archive written before the times were kept */
            for (int a = 0; a < 2; a++) {
                const char *key = a ? "actual" : "predicted";
                if (a && !obs) {
                    cJSON_AddNullToObject(x, key);
                    continue;
                }
                lsim_ns t = a ? r->coll_time_actual[k] : r->coll_time_predicted[k];
                lsim_ns w = a ? r->coll_wait_actual[k] : r->coll_wait_predicted[k];
                cJSON *y = cJSON_AddObjectToObject(x, key);
                if (!y) continue;
                cJSON_AddNumberToObject(y, "time_ns", (double)t);
                cJSON_AddNumberToObject(y, "wait_ns", (double)w);
                cJSON_AddNumberToObject(y, "transfer_ns", (double)(t - w));
            }
        }
    } else {
        cJSON_AddNullToObject(o, "collectives");
    }
    cJSON *ne = obs ? cJSON_AddObjectToObject(o, "node_error") : NULL;
    if (!obs) cJSON_AddNullToObject(o, "node_error");
    if (ne) {
        cJSON_AddNumberToObject(ne, "max_abs_start_ns", (double)r->max_abs_start_err);
        cJSON_AddNumberToObject(ne, "max_abs_end_ns", (double)r->max_abs_end_err);
        cJSON_AddNumberToObject(ne, "nodes_exact", (double)r->nodes_exact);
        cJSON_AddNumberToObject(ne, "nodes", (double)g->n);
        const lsim_err_dist *d[2] = {&r->start_err_gpu, &r->start_err_cpu};
        for (int k = 0; k < 2; k++) {
            const char *key = k ? "start_error_cpu" : "start_error_gpu";
            cJSON *x = r->has_fidelity ? cJSON_AddObjectToObject(ne, key) : NULL;
            if (!r->has_fidelity) cJSON_AddNullToObject(ne, key);
            if (!x) continue;
            cJSON_AddNumberToObject(x, "nodes", (double)d[k]->n);
            cJSON_AddNumberToObject(x, "median_ns", (double)d[k]->median);
            cJSON_AddNumberToObject(x, "p90_ns", (double)d[k]->p90);
            cJSON_AddNumberToObject(x, "max_ns", (double)d[k]->max);
        }
    }
    return o;
}

char *lsim_report_json_item(const lsim_replay_item *it, size_t idx)
{
    cJSON *o = rank_json(it, idx);
    char *txt = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return txt;
}

/* The network object's per-kind figures and most delayed flows; 0, or -1
 * when out of memory. */
static int network_kinds_json(cJSON *o, const lsim_netshare_stats *st)
{
    cJSON *bk = cJSON_AddArrayToObject(o, "by_kind"), *ml = cJSON_AddArrayToObject(o, "most_delayed");
    if (!bk || !ml) return -1;
    for (int k = 0; k < LSIM_COLL_NKINDS; k++) {
        const lsim_netshare_kind *x = &st->by_kind[k];
        if (!x->flows) continue;
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(bk, e)) {
            cJSON_Delete(e);
            return -1;
        }
        cJSON_AddStringToObject(e, "kind", lsim_coll_kind_name((lsim_coll_kind)k));
        cJSON_AddNumberToObject(e, "flows", (double)x->flows);
        cJSON_AddNumberToObject(e, "slowed", (double)x->slowed);
        cJSON_AddNumberToObject(e, "alone_ns", x->alone_ns);
        cJSON_AddNumberToObject(e, "shared_ns", x->shared_ns);
    }
    for (int i = 0; i < st->nlate; i++) {
        const lsim_netshare_late *x = &st->late[i];
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(ml, e)) {
            cJSON_Delete(e);
            return -1;
        }
        cJSON_AddStringToObject(e, "kind", lsim_coll_kind_name((lsim_coll_kind)x->kind));
        cJSON_AddNumberToObject(e, "gpu", (double)(x->key >> 32));
        cJSON_AddNumberToObject(e, "node", (double)(x->key & 0xffffffffu));
        cJSON_AddNumberToObject(e, "start_ns", (double)x->start);
        cJSON_AddNumberToObject(e, "alone_ns", (double)x->alone);
        cJSON_AddNumberToObject(e, "shared_ns", (double)x->shared);
    }
    return 0;
}

/* counts[0..n) as the array o[k]; NULL when out of memory. */
static cJSON *add_counts(cJSON *o, const char *k, const uint64_t *counts, int n)
{
    cJSON *a = cJSON_AddArrayToObject(o, k);
    for (int i = 0; a && i < n; i++) {
        cJSON *x = cJSON_CreateNumber((double)counts[i]);
        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            return NULL;
        }
    }
    return a;
}

/* sim --link-sharing's figures (netshare.h, docs/report-json.md): NULL
 * when out of memory. Busy times are link-time at full load per class. */
static cJSON *network_json(cJSON *doc, const lsim_netshare_stats *st)
{
    cJSON *o = cJSON_AddObjectToObject(doc, "network");
    if (!o) return NULL;
    double span = st->span_ns > 0 ? (double)st->span_ns * 1e-9 : 0;
    cJSON_AddStringToObject(o, "model", "link_sharing");
    cJSON_AddNumberToObject(o, "passes", st->passes);
    cJSON_AddBoolToObject(o, "converged", st->converged);
    cJSON_AddNumberToObject(o, "flows", (double)st->flows);
    cJSON_AddNumberToObject(o, "slowed", (double)st->slowed);
    cJSON_AddNumberToObject(o, "max_slowdown", st->max_slowdown > 1 ? st->max_slowdown : 1.0);
    cJSON_AddNumberToObject(o, "alone_ns", st->alone_ns);
    cJSON_AddNumberToObject(o, "shared_ns", st->shared_ns);
    cJSON_AddNumberToObject(o, "flow_events", (double)st->events);
    cJSON_AddNumberToObject(o, "flow_updates", (double)st->updates);
    cJSON_AddNumberToObject(o, "flow_updates_per_sim_s", span > 0 ? (double)st->updates / span : 0.0);
    cJSON_AddNumberToObject(o, "span_ns", (double)st->span_ns);
    cJSON_AddNumberToObject(o, "gpus", (double)st->ngpus);
    cJSON_AddNumberToObject(o, "ecmp_paths", st->paths);
    cJSON *b = cJSON_AddObjectToObject(o, "busy_ns");
    if (!b) return NULL;
    cJSON_AddNumberToObject(b, "nic", st->nic_busy_ns);
    cJSON_AddNumberToObject(b, "leaf_uplink", st->uplink_busy_ns);
    /* every link's utilization and every flow's slowdown, as quantiles
     * (the rows: the archive's net_links and net_flows) */
    cJSON_AddNumberToObject(o, "links_used", (double)st->links_used);
    cJSON *q = cJSON_AddObjectToObject(o, "link_utilization");
    if (!q) return NULL;
    cJSON_AddNumberToObject(q, "p50", st->util_p50);
    cJSON_AddNumberToObject(q, "p90", st->util_p90);
    if (!add_counts(q, "histogram", st->util_hist, LSIM_NETSHARE_UBINS)) return NULL;
    q = cJSON_AddObjectToObject(o, "flow_slowdown");
    if (!q) return NULL;
    cJSON_AddNumberToObject(q, "p50", st->slowdown_p50);
    cJSON_AddNumberToObject(q, "p95", st->slowdown_p95);
    double edges[LSIM_NETSHARE_SBINS];
    for (int k = 0; k < LSIM_NETSHARE_SBINS; k++) edges[k] = lsim_netshare_slow_edge(k);
    cJSON *ed = cJSON_CreateDoubleArray(edges, LSIM_NETSHARE_SBINS);
    if (!ed || !cJSON_AddItemToObject(q, "edges", ed)) {
        cJSON_Delete(ed);
        return NULL;
    }
    if (!add_counts(q, "histogram", st->slow_hist, LSIM_NETSHARE_SBINS)) return NULL;
    cJSON *h = cJSON_AddArrayToObject(o, "hottest_links");
    if (!h) return NULL;
    for (int i = 0; i < st->nhot; i++) {
        char name[64];
        cJSON *x = cJSON_CreateObject();
        if (!x || !cJSON_AddItemToArray(h, x)) {
            cJSON_Delete(x);
            return NULL;
        }
        lsim_netshare_link_name(st->hot_link[i], (size_t)st->ngpus, st->paths, name, sizeof name);
        cJSON_AddStringToObject(x, "link", name);
        cJSON_AddNumberToObject(x, "id", st->hot_link[i]);
        cJSON_AddNumberToObject(x, "busy_ns", st->hot_busy_ns[i]);
        cJSON_AddNumberToObject(x, "utilization", st->span_ns > 0 ? st->hot_busy_ns[i] / (double)st->span_ns : 0.0);
    }
    return network_kinds_json(o, st) ? NULL : o;
}

char *lsim_report_network_text(const lsim_netshare_stats *st)
{
    cJSON *doc = cJSON_CreateObject();
    char *txt = doc && network_json(doc, st) ? cJSON_PrintUnformatted(cJSON_GetObjectItem(doc, "network")) : NULL;
    cJSON_Delete(doc);
    return txt;
}

/* A non-negative finite number o[k] into *v; 0 or -1. */
static int net_num(const cJSON *o, const char *k, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0) return -1;
    *v = x->valuedouble;
    return 0;
}

/* A kind's name at o["kind"] into *k; 0 or -1. */
static int net_kind(const cJSON *o, int *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "kind");
    lsim_coll_kind c;
    if (!cJSON_IsString(x) || lsim_coll_kind_parse(x->valuestring, &c, NULL)) return -1;
    *k = (int)c;
    return 0;
}

/* by_kind and most_delayed back into st: NULL, or the field that is wrong
 * (a network object written before them has neither: none). */
static const char *network_kinds_parse(const cJSON *o, lsim_netshare_stats *st)
{
    const cJSON *bk = cJSON_GetObjectItemCaseSensitive(o, "by_kind"), *ml = cJSON_GetObjectItemCaseSensitive(o, "most_delayed");
    const cJSON *x;
    if (bk && !cJSON_IsArray(bk)) return "by_kind";
    cJSON_ArrayForEach(x, bk)
    {
        int k;
        double f, sl, a, sh;
        if (net_kind(x, &k) || net_num(x, "flows", &f) || net_num(x, "slowed", &sl) || net_num(x, "alone_ns", &a) ||
            net_num(x, "shared_ns", &sh) || sl > f || f > 9e15)
            return "by_kind";
        st->by_kind[k] = (lsim_netshare_kind){(uint64_t)f, (uint64_t)sl, a, sh};
    }
    if (ml && (!cJSON_IsArray(ml) || cJSON_GetArraySize(ml) > LSIM_NETSHARE_HOT)) return "most_delayed";
    cJSON_ArrayForEach(x, ml)
    {
        int k;
        double g, v, t0, a, sh;
        if (net_kind(x, &k) || net_num(x, "gpu", &g) || g > UINT32_MAX || net_num(x, "node", &v) || v > UINT32_MAX ||
            net_num(x, "start_ns", &t0) || t0 > 9e18 || net_num(x, "alone_ns", &a) || a > 9e18 ||
            net_num(x, "shared_ns", &sh) || sh > 9e18)
            return "most_delayed";
        st->late[st->nlate++] = (lsim_netshare_late){(uint64_t)g << 32 | (uint64_t)v, k, (lsim_ns)t0, (lsim_ns)a,
                                                     (lsim_ns)sh};
    }
    return NULL;
}

/* o["histogram"] into counts[0..n), summing to total; 0, or -1 when it is
 * not n whole counts that do. Absent (written before it): all 0. */
static int get_counts(const cJSON *o, uint64_t *counts, int n, double total)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "histogram"), *x;
    double sum = 0;
    int i = 0;
    if (!a) return 0;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) return -1;
    cJSON_ArrayForEach(x, a)
    {
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0) || x->valuedouble > 9e15 ||
            x->valuedouble != floor(x->valuedouble))
            return -1;
        counts[i++] = (uint64_t)x->valuedouble;
        sum += x->valuedouble;
    }
    return sum == total ? 0 : -1;
}

/* links_used and the quantiles back into st: NULL, or the field that is
 * wrong (a network object written before them has none: 0). */
static const char *network_quantiles_parse(const cJSON *o, lsim_netshare_stats *st)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "link_utilization");
    const cJSON *sl = cJSON_GetObjectItemCaseSensitive(o, "flow_slowdown");
    double n = 0;
    if (!cJSON_GetObjectItemCaseSensitive(o, "links_used")) return u || sl ? "links_used" : NULL;
    if (net_num(o, "links_used", &n) || n > 9e15) return "links_used";
    if (net_num(u, "p50", &st->util_p50) || net_num(u, "p90", &st->util_p90) || st->util_p50 > st->util_p90 ||
        get_counts(u, st->util_hist, LSIM_NETSHARE_UBINS, n))
        return "link_utilization";
    if (net_num(sl, "p50", &st->slowdown_p50) || net_num(sl, "p95", &st->slowdown_p95) ||
        st->slowdown_p50 > st->slowdown_p95 || get_counts(sl, st->slow_hist, LSIM_NETSHARE_SBINS, (double)st->flows))
        return "flow_slowdown";
    st->links_used = (uint64_t)n;
    return NULL;
}

int lsim_report_network_parse(const char *text, lsim_netshare_stats *st, lsim_err *err)
{
    static const char *const KEYS[] = {"passes",  "flows",      "slowed",       "max_slowdown", "alone_ns", "shared_ns",
                                       "flow_events", "flow_updates", "span_ns", "gpus",         "ecmp_paths"};
    enum { NK = sizeof KEYS / sizeof *KEYS };
    double v[NK], nic = 0, up = 0;
    memset(st, 0, sizeof *st);
    cJSON *o = cJSON_Parse(text ? text : "");
    const char *bad = !cJSON_IsObject(o) ? "not a JSON object" : NULL;
    for (int k = 0; !bad && k < NK; k++)
        if (net_num(o, KEYS[k], &v[k]) || v[k] > 9e15) bad = KEYS[k];
    const cJSON *busy = o ? cJSON_GetObjectItemCaseSensitive(o, "busy_ns") : NULL;
    if (!bad && (net_num(busy, "nic", &nic) || net_num(busy, "leaf_uplink", &up))) bad = "busy_ns";
    const cJSON *conv = o ? cJSON_GetObjectItemCaseSensitive(o, "converged") : NULL;
    if (!bad && !cJSON_IsBool(conv)) bad = "converged";
    const cJSON *hot = o ? cJSON_GetObjectItemCaseSensitive(o, "hottest_links") : NULL;
    if (!bad && (!cJSON_IsArray(hot) || cJSON_GetArraySize(hot) > LSIM_NETSHARE_HOT)) bad = "hottest_links";
    if (!bad) {
        *st = (lsim_netshare_stats){.flows = (uint64_t)v[1], .slowed = (uint64_t)v[2], .events = (uint64_t)v[6],
                                    .updates = (uint64_t)v[7], .alone_ns = v[4], .shared_ns = v[5],
                                    .max_slowdown = v[3], .nic_busy_ns = nic, .uplink_busy_ns = up,
                                    .span_ns = (lsim_ns)v[8], .ngpus = (uint64_t)v[9], .paths = (uint32_t)v[10],
                                    .passes = (int)v[0], .converged = cJSON_IsTrue(conv)};
        const cJSON *x;
        cJSON_ArrayForEach(x, hot)
        {
            double id, b;
            if (net_num(x, "id", &id) || id > UINT32_MAX || net_num(x, "busy_ns", &b)) {
                bad = "hottest_links";
                break;
            }
            st->hot_link[st->nhot] = (uint32_t)id;
            st->hot_busy_ns[st->nhot++] = b;
        }
    }
    if (!bad) bad = network_kinds_parse(o, st);
    if (!bad) bad = network_quantiles_parse(o, st);
    cJSON_Delete(o);
    if (!bad) return 0;
    memset(st, 0, sizeof *st);
    return lsim_err_set(err, LSIM_EFORMAT, "the link-sharing figures (network): %s%s", bad,
                        strchr(bad, ' ') ? "" : " is missing or not a valid number");
}

/* doc's "job_range" (docs/report-json.md); NULL when out of memory. */
static cJSON *job_range_json(cJSON *doc, const lsim_job_range *r)
{
    cJSON *o = cJSON_AddObjectToObject(doc, "job_range");
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "source_rank", r->source);
    cJSON_AddNumberToObject(o, "samples", (double)r->n);
    cJSON_AddNumberToObject(o, "seed", (double)r->seed);
    cJSON_AddNumberToObject(o, "p5_ns", (double)r->q[0]);
    cJSON_AddNumberToObject(o, "p50_ns", (double)r->q[1]);
    cJSON_AddNumberToObject(o, "p95_ns", (double)r->q[2]);
    cJSON_AddNumberToObject(o, "source_collectives", (double)r->colls);
    cJSON_AddNumberToObject(o, "source_collectives_waited", (double)r->colls_waited);
    cJSON_AddNumberToObject(o, "source_waited_ns", (double)r->waited);
    if (r->actual >= 0) {
        cJSON_AddNumberToObject(o, "actual_ns", (double)r->actual);
        cJSON_AddBoolToObject(o, "inside", r->actual >= r->q[0] && r->actual <= r->q[2]);
    } else {
        cJSON_AddNullToObject(o, "actual_ns");
        cJSON_AddNullToObject(o, "inside");
    }
    return o;
}

int lsim_report_json_assemble(FILE *f, int observed_latency, char *const *objs, size_t n, const lsim_report_job_part *p,
                              lsim_err *err)
{
    /* the document without its ranks, printed by cJSON, and the ranks'
     * objects spliced into its empty array: the same bytes whether the
     * objects were printed here or by other processes */
    int rc = 0;
    char *txt = NULL;
    cJSON *doc = cJSON_CreateObject();
    if (!doc) goto nomem;
    cJSON_AddStringToObject(doc, "lumosim_version", LSIM_VERSION);
    cJSON_AddStringToObject(doc, "latency_mode", lsim_latency_mode_name(observed_latency ? LSIM_LAT_OBSERVED : LSIM_LAT_MODEL));
    if (!cJSON_AddArrayToObject(doc, "ranks")) goto nomem;
    lsim_ns ja = p->n ? lsim_ns_sub_sat(p->ae, p->as) : 0, jp = p->n ? lsim_ns_sub_sat(p->pe, p->ps) : 0;
    cJSON_AddItemToObject(doc, "job", span_json(ja, jp, p->any_obs || !p->n));
    if (p->memory && p->memory->nstages > 0) {
        /* the estimate's own document (memest.h), as the store records it */
        char *mt = NULL;
        rc = lsim_memest_job_json(p->memory, &mt, err);
        cJSON *mo = mt ? cJSON_Parse(mt) : NULL;
        free(mt);
        if (rc) goto cleanup;
        if (!mo || !cJSON_AddItemToObject(doc, "memory", mo)) {
            cJSON_Delete(mo);
            goto nomem;
        }
    }
    if (p->network && !network_json(doc, p->network)) goto nomem;
    if (p->range && !job_range_json(doc, p->range)) goto nomem;
    if (p->path) {
        cJSON *po = job_path_json(p->path);
        if (!po || !cJSON_AddItemToObject(doc, "job_critical_path", po)) {
            cJSON_Delete(po);
            goto nomem;
        }
    }
    txt = cJSON_PrintUnformatted(doc);
    if (!txt) goto nomem;
    const char *at = strstr(txt, "\"ranks\":[]");
    if (!at) goto nomem; /* cannot happen: the key was just added */
    size_t head = (size_t)(at - txt) + strlen("\"ranks\":[");
    int bad = fwrite(txt, 1, head, f) != head;
    for (size_t i = 0; i < n && !bad; i++) bad = (i && fputc(',', f) == EOF) || fputs(objs[i], f) < 0;
    if (bad || fputs(txt + head, f) < 0 || fputc('\n', f) == EOF)
        rc = lsim_err_set(err, LSIM_EIO, "cannot write the report%s: %s", f == stdout ? " to standard output" : "",
                          strerror(errno));
    goto cleanup;
nomem:
    rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
cleanup:
    free(txt);
    cJSON_Delete(doc);
    return rc;
}

int lsim_report_json(FILE *f, const lsim_replay_item *items, size_t n, lsim_err *err)
{
    return lsim_report_json_x(f, items, n, NULL, err);
}

int lsim_report_json_x(FILE *f, const lsim_replay_item *items, size_t n, const lsim_report_extra *x, lsim_err *err)
{
    int rc = 0;
    char **objs = lsim_calloc(n ? n : 1, sizeof *objs);
    if (!objs) return lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
    for (size_t i = 0; i < n && !rc; i++)
        if (!(objs[i] = lsim_report_json_item(&items[i], i)))
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory writing the report");
    if (!rc) {
        lsim_report_job_part p;
        lsim_report_job_part_of(items, n, &p);
        if (x) p.memory = x->memory, p.network = x->network, p.path = x->path, p.range = x->range;
        rc = lsim_report_json_assemble(f, n && items[0].g->latency == LSIM_LAT_OBSERVED, objs, n, &p, err);
    }
    for (size_t i = 0; i < n; i++) free(objs[i]);
    free(objs);
    return rc;
}
