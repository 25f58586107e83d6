/* The run layer's loading of inputs that may be graph stores (run.h): in
 * lumosim_io, because telling a store from a trace and reading it needs
 * HDF5; the traces themselves are read by run.c (lumosim_core). */
#include <stdio.h>
#include "lumosim/alloc.h"
#include <stdlib.h>
#include <string.h>

#include "lumosim/input.h"
#include "lumosim/memlimit.h"
#include "lumosim/run.h"
#include "lumosim/store.h"

int lsim_run_check_inputs(char **args, int nargs, uint64_t *json, lsim_err *err)
{
    /* Paths that do not expand are left for lsim_run_load to report in
     * order (they are not traces this check can size). */
    lsim_run all = {0};
    lsim_err perr = {0};
    int bad = 0, rc = 0;
    *json = 0;
    for (int a = 0; a < nargs && !bad; a++)
        if (lsim_store_probe(args[a]) == LSIM_STORE_NOT_HDF5) bad = lsim_run_expand(&args[a], 1, &all, &perr);
    if (!bad) rc = lsim_mem_check_inputs((const char *const *)all.paths, all.n, json, err);
    lsim_run_free(&all);
    return rc;
}

/* Not an HDF5 file to HDF5, yet HDF5's signature: damaged, not a trace. */
static int damaged_hdf5(const char *path, lsim_err *err)
{
    unsigned char sig[8] = {0};
    FILE *f = NULL;
    lsim_err ignored = {0}; /* not a regular file: lsim_run_load_traces says why */
    if (lsim_input_fopen(path, &f, &ignored)) f = NULL;
    size_t got = f ? fread(sig, 1, sizeof sig, f) : 0;
    if (f) fclose(f);
    if (got == 8 && !memcmp(sig, "\x89HDF\r\n\x1a\n", 8))
        return lsim_err_set(err, LSIM_EFORMAT, "%s: truncated or corrupt HDF5 file", path);
    return 0;
}

int lsim_run_store_flags(const lsim_run_opts *o, int serial)
{
    int flags = LSIM_STORE_READ_SHARE;
    if (o->no_bind && !o->critical) flags |= LSIM_STORE_READ_NO_BIND;
    if (o->bo.keep_cpu_ops) flags |= LSIM_STORE_READ_CPU_OPS;
    if (serial && !o->symmetry_off && !o->share && !o->independent && o->replicate_from < 0)
        flags |= LSIM_STORE_READ_REDUCED;
    return flags;
}

/* One input path: a graph store (every GPU's graph appended), a result
 * archive (refused), or traces. */
static int load_one(const lsim_run_opts *o, const char *path, lsim_run *r, lsim_err *err)
{
    lsim_store_kind kind = lsim_store_probe(path);
    if (kind == LSIM_STORE_RESULTS || kind == LSIM_STORE_SEARCH)
        return lsim_store_refuse_kind(path, kind, "traces or a graph store", err);
    int rc = kind == LSIM_STORE_NOT_HDF5 ? damaged_hdf5(path, err) : 0;
    if (rc) return rc;
    if (kind != LSIM_STORE_GRAPHS && kind != LSIM_STORE_OTHER) return lsim_run_load_traces(o, path, r, err);
    lsim_graph **gs = NULL;
    size_t ng = 0;
    lsim_run_event ev = {.kind = LSIM_RUN_PHASE, .path = path, .what = "loading the graph store"};
    if (o->on_event) o->on_event(o->ctx, &ev);
    /* as sim reads it (a 4,096-GPU store given to report took 10.3 GB, its
     * sim 0.6); replay and report run in one process (refused under mpirun) */
    int flags = lsim_run_store_flags(o, 1) | LSIM_STORE_READ_ONE_PROCESS;
    if ((rc = lsim_store_read_graphs_ex(path, 0, SIZE_MAX, flags, &gs, &ng, err))) return rc;
    if (flags & LSIM_STORE_READ_REDUCED) r->sized_reduced = LSIM_RUN_SIZED_ONE_PROCESS;
    rc = lsim_run_add_graphs(r, gs, ng, path, err);
    free(gs);
    return rc;
}

int lsim_run_load(const lsim_run_opts *o, char **args, int nargs, lsim_run *r, lsim_err *err)
{
    /* Refuse up front what would not fit in memory (memlimit.h), rather
     * than be killed by the OOM killer half-way; and outputs that would not
     * fit on disk, before the work (sizes in memlimit.h, with a margin). */
    uint64_t json = 0;
    int rc = lsim_run_check_inputs(args, nargs, &json, err);
    for (size_t k = 0; k < o->noutputs && !rc; k++)
        rc = lsim_disk_check(o->outputs[k].path, o->outputs[k].json_div ? json / o->outputs[k].json_div : json, err);
    if (rc) return rc;
    for (int a = 0; a < nargs && !rc; a++) rc = load_one(o, args[a], r, err);
    lsim_run_event done = {.kind = LSIM_RUN_DONE};
    if (o->on_event) o->on_event(o->ctx, &done);
    return rc;
}

int lsim_run_paths(const lsim_run_opts *o, char **args, int nargs, lsim_run *r, lsim_err *err)
{
    int rc = lsim_run_load(o, args, nargs, r, err);
    if (!rc && r->n == 0) rc = lsim_err_set(err, LSIM_ETRACE, "no traces to replay");
    if (!rc && o->replicate_from >= 0) rc = lsim_run_replicate(o, r, err);
    if (!rc) rc = lsim_run_simulate(o, r, err);
    if (!rc && r->truth) rc = lsim_run_measure_truth(o, r, err);
    return rc;
}

int lsim_run_job_path_stored(const lsim_store_run *r, lsim_job_path *out, lsim_err *err)
{
    memset(out, 0, sizeof *out);
    if (!r->graphs || r->ngpus < 2) return 0;
    for (size_t i = 0; i < r->ngpus; i++)
        if (!r->gpus[i].coupled) return 0;
    lsim_job *j = NULL;
    lsim_cp_times *t = lsim_malloc(r->ngpus * sizeof *t);
    int rc = t ? lsim_job_match(r->graphs, r->ngpus, &j, err)
               : lsim_err_set(err, LSIM_ENOMEM, "out of memory for the job's critical path");
    for (size_t i = 0; !rc && i < r->ngpus; i++) {
        const lsim_store_gpu_result *g = &r->gpus[i];
        t[i] = (lsim_cp_times){g->start, g->end, g->bind_start, g->bind_end};
    }
    if (!rc) rc = lsim_job_path_compute_times(j, r->graphs, t, NULL, r->ngpus, r->graphs, out, err);
    lsim_job_free(j);
    free(t);
    return rc;
}
