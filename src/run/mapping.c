/* The mapping of a job's GPUs to the ranks of a parallel run (run.h): a
 * small table of named policies, after CODES's job-map methods. Each policy
 * fills the whole GPU -> rank assignment, so every rank computes the same
 * mapping (and a bad mapping file fails on all of them alike); a rank's own
 * GPUs are then the ones assigned to it. In lumosim_core: no MPI. */
#include <errno.h>
#include "lumosim/alloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lumosim/input.h"
#include "lumosim/run.h"
#include "lumosim/whatif.h"

void lsim_map_block(size_t n, int nranks, int rank, size_t *first, size_t *count)
{
    size_t q = n / (size_t)nranks, r = n % (size_t)nranks, k = (size_t)rank;
    *first = k * q + (k < r ? k : r);
    *count = q + (k < r ? 1 : 0);
}

int lsim_map_block_owner(size_t n, int nranks, size_t i)
{
    /* the first r ranks hold q + 1 items, the others q */
    size_t q = n / (size_t)nranks, r = n % (size_t)nranks;
    if (i < r * (q + 1)) return (int)(i / (q + 1));
    return (int)(r + (i - r * (q + 1)) / q);
}

/* linear: contiguous blocks of GPUs in GPU order. */
static int map_linear(const lsim_map_layout *l, int nranks, const char *arg, int32_t *owner, const char **how,
                      lsim_err *err)
{
    for (size_t i = 0; i < l->ngpus; i++) owner[i] = lsim_map_block_owner(l->ngpus, nranks, i);
    return 0;
}

/* round-robin: GPU g on rank g mod K. */
static int map_round_robin(const lsim_map_layout *l, int nranks, const char *arg, int32_t *owner, const char **how,
                           lsim_err *err)
{
    for (size_t i = 0; i < l->ngpus; i++) owner[i] = (int32_t)(i % (size_t)nranks);
    return 0;
}

/* groups: keep the most frequent collectives on one rank. With at least as
 * many data-parallel replicas as ranks, whole replicas (every TP group and
 * pipeline stage of one replica: all its TP all-reduces and send/recv
 * pairs) in contiguous blocks of replicas, so only the gradient all-reduces
 * cross ranks; else contiguous blocks of whole TP groups; else linear. */
static int map_groups(const lsim_map_layout *l, int nranks, const char *arg, int32_t *owner, const char **how,
                      lsim_err *err)
{
    size_t tp = l->tp, dp = l->dp, k = (size_t)nranks;
    if (dp > 1 && dp >= k) {
        /* replica of GPU i: (i / tp) mod dp */
        for (size_t i = 0; i < l->ngpus; i++) owner[i] = lsim_map_block_owner(dp, nranks, (i / tp) % dp);
        *how = "groups:replicas";
    } else if (tp > 1 && l->ngpus / tp >= k) {
        for (size_t i = 0; i < l->ngpus; i++) owner[i] = lsim_map_block_owner(l->ngpus / tp, nranks, i / tp);
        *how = "groups:tp";
    } else {
        map_linear(l, nranks, arg, owner, how, err);
        *how = "groups:linear";
    }
    return 0;
}

/* stages: the fewest pipeline stages per rank. A store's GPUs that share
 * one structure (docs/hdf5-schema.md) are a stage's replicas, and a rank
 * holds one copy of each structure its GPUs use, so whole stages per rank
 * hold the least: on the 1,024-GPU GPT-3 job at K = 4, 220 MiB per rank
 * against groups' 242 (bench/gpt3_scaling.sh MEMMAP). The price: every
 * pipeline send/recv between stages on different ranks crosses ranks, so
 * the windows are shorter (29 against 14 on the 4,096-GPU job at K = 2).
 * With at least as many stages as ranks, contiguous blocks of whole stages
 * (stage of GPU i: i / (TP DP)); else contiguous blocks of whole TP groups,
 * which in GPU order fill one stage before the next; else linear. */
static int map_stages(const lsim_map_layout *l, int nranks, const char *arg, int32_t *owner, const char **how,
                      lsim_err *err)
{
    size_t tp = l->tp, per = l->tp * l->dp, k = (size_t)nranks;
    size_t pp = per ? l->ngpus / per : 0;
    if (per > 1 && pp > 1 && pp * per == l->ngpus && pp >= k) {
        for (size_t i = 0; i < l->ngpus; i++) owner[i] = lsim_map_block_owner(pp, nranks, i / per);
        *how = "stages:stages";
    } else if (tp > 1 && l->ngpus / tp >= k) {
        for (size_t i = 0; i < l->ngpus; i++) owner[i] = lsim_map_block_owner(l->ngpus / tp, nranks, i / tp);
        *how = "stages:tp";
    } else {
        map_linear(l, nranks, arg, owner, how, err);
        *how = "stages:linear";
    }
    return 0;
}

/* One line "GPU RANK" of a mapping file (blank or comment: 1, nothing
 * set); owner[gpu] set, each GPU once. */
static int map_file_line(const char *path, long lineno, char *line, const lsim_map_layout *l, int nranks,
                         int32_t *owner, lsim_err *err)
{
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    long long gpu = -1, rank = -1;
    char extra[2];
    int k = sscanf(line, "%lld %lld %1s", &gpu, &rank, extra);
    if (k == EOF) return 0; /* blank or comment */
    if (k != 2) return lsim_err_set(err, LSIM_EARG, "%s:%ld: expected \"GPU RANK\" (two integers)", path, lineno);
    if (gpu < 0 || (unsigned long long)gpu >= l->ngpus)
        return lsim_err_set(err, LSIM_EARG, "%s:%ld: GPU %lld does not exist (the store holds GPUs 0..%zu)", path,
                            lineno, gpu, l->ngpus ? l->ngpus - 1 : 0);
    if (rank < 0 || rank >= nranks)
        return lsim_err_set(err, LSIM_EARG, "%s:%ld: MPI rank %lld does not exist (the job has ranks 0..%d)", path,
                            lineno, rank, nranks - 1);
    if (owner[gpu] >= 0) return lsim_err_set(err, LSIM_EARG, "%s:%ld: GPU %lld is mapped twice", path, lineno, gpu);
    owner[gpu] = (int32_t)rank;
    return 0;
}

/* file:PATH: lines "GPU RANK", '#' comments; every GPU exactly once. */
static int map_file(const lsim_map_layout *l, int nranks, const char *path, int32_t *owner, const char **how,
                    lsim_err *err)
{
    char line[256];
    long lineno = 0;
    FILE *f = NULL;
    int rc = 0;
    for (size_t i = 0; i < l->ngpus; i++) owner[i] = -1;
    struct stat mst;
    if (stat(path, &mst) != 0)
        return lsim_err_set(err, LSIM_EIO, "%s: cannot read the mapping file: %s", path, strerror(errno));
    /* a FIFO would block every rank in the open (input.h) */
    if ((rc = lsim_input_fopen(path, &f, err))) return rc;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) rc = lsim_err_set(err, LSIM_EARG, "%s:%ld: line too long", path, lineno);
        else rc = map_file_line(path, lineno, line, l, nranks, owner, err);
    }
    if (!rc && ferror(f)) rc = lsim_err_set(err, LSIM_EIO, "%s: read error", path);
    for (size_t i = 0; !rc && i < l->ngpus; i++)
        if (owner[i] < 0) rc = lsim_err_set(err, LSIM_EARG, "%s: GPU %zu is not mapped to any MPI rank", path, i);
    fclose(f);
    return rc;
}

static const lsim_map_policy POLICIES[] = {
    {"groups", 0, "whole data-parallel replicas per rank, else whole tensor-parallel groups, else linear (the default)",
     map_groups},
    {"stages", 0, "whole pipeline stages per rank, else whole tensor-parallel groups, else linear (least memory)",
     map_stages},
    {"linear", 0, "contiguous blocks of GPUs", map_linear},
    {"round-robin", 0, "GPU g on MPI rank g mod K", map_round_robin},
    {"file", 1, "lines \"GPU RANK\" of the file (# comments), every GPU exactly once", map_file},
};

const lsim_map_policy *lsim_map_policies(size_t *n)
{
    *n = sizeof POLICIES / sizeof *POLICIES;
    return POLICIES;
}

int lsim_map_assign(const char *mapping, const lsim_map_layout *l, int nranks, int32_t *owner, const char **how,
                    lsim_err *err)
{
    if (nranks < 1 || l->tp < 1 || l->dp < 1 || l->ngpus % (l->tp * l->dp))
        return lsim_err_set(err, LSIM_EARG, "mapping: bad layout (%zu GPUs, TP %zu, DP %zu, %d ranks)", l->ngpus, l->tp,
                            l->dp, nranks);
    for (size_t k = 0; k < sizeof POLICIES / sizeof *POLICIES; k++) {
        const lsim_map_policy *p = &POLICIES[k];
        size_t len = strlen(p->name);
        if (strncmp(mapping, p->name, len)) continue;
        /* "NAME", or "NAME:ARG" with a non-empty ARG for a policy that takes one */
        if (p->takes_arg ? mapping[len] != ':' || !mapping[len + 1] : mapping[len] != '\0') continue;
        *how = mapping;
        return p->assign(l, nranks, p->takes_arg ? mapping + len + 1 : NULL, owner, how, err);
    }
    return lsim_err_set(err, LSIM_EARG, "unknown --mapping '%s' (groups, stages, linear, round-robin or file:PATH)", mapping);
}

int lsim_map_local(const char *mapping, const lsim_map_layout *l, int nranks, int rank, size_t **gpus, size_t *n,
                   const char **how, lsim_err *err)
{
    size_t total = l->ngpus, k = 0;
    int32_t *owner = lsim_malloc((total ? total : 1) * sizeof *owner);
    size_t *g = lsim_malloc((total ? total : 1) * sizeof *g);
    int rc = owner && g ? 0 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    *gpus = NULL;
    *n = 0;
    if (!rc) rc = lsim_map_assign(mapping, l, nranks, owner, how, err);
    for (size_t i = 0; !rc && i < total; i++)
        if (owner[i] == rank) g[k++] = i;
    free(owner);
    if (rc) {
        free(g);
        return rc;
    }
    *gpus = g;
    *n = k;
    return 0;
}

int lsim_map_layout_of(const lsim_graph *g0, size_t ngpus, lsim_map_layout *l, lsim_err *err)
{
    lsim_wi_ident id;
    l->ngpus = ngpus;
    l->tp = l->dp = 1;
    if (!g0 || ngpus < 2) return 0;
    int rc = lsim_wi_identify(g0, 0, 0, &id, err);
    if (rc) return rc;
    if (id.tp_size > 1 && ngpus % (size_t)id.tp_size == 0) l->tp = (size_t)id.tp_size;
    if (id.dp_size > 1 && ngpus % (l->tp * (size_t)id.dp_size) == 0) l->dp = (size_t)id.dp_size;
    return 0;
}
