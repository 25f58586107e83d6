/* The run layer over MPI (include/lumosim/run_mpi.h): the distributed
 * collective match and the parallel coupled run, on the agreement of
 * mpi/agree.c. In lumosim_mpi. Every MPI call goes to the communicator the caller passes. */
#include <limits.h>
#include "lumosim/alloc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumosim/run_mpi.h"
#include "lumosim/tmpfiles.h"
#include "agree_internal.h"

/* A collective entry as it travels between ranks: its group's text with
 * it (the entry's pointer means nothing on another rank). */
typedef struct wire_ent {
    char group[LSIM_JOB_GROUP_MAX];
    lsim_job_entry e; /* e.group NULL */
} wire_ent;

/* Entry i of the entries at rec, as a wire record into dst. */
static void pack_ent(void *dst, const void *rec, size_t i)
{
    const lsim_job_entry *x = (const lsim_job_entry *)rec + i;
    wire_ent w;
    memset(&w, 0, sizeof w); /* no uninitialised byte is sent */
    w.e = *x;
    w.e.group = NULL;
    snprintf(w.group, sizeof w.group, "%s", x->group);
    memcpy(dst, &w, sizeof w);
}

/* n wire records at *buf made entries in place (an entry is smaller than
 * its record, and record q is read before entry q is written), their group
 * names interned in names; the block shrunk to the entries. 0 or
 * LSIM_ENOMEM. */
static int unpack_ents(void **buf, size_t n, lsim_strtab *names, lsim_err *err)
{
    char *b = *buf;
    for (size_t q = 0; q < n; q++) {
        wire_ent w;
        uint32_t id = 0;
        memcpy(&w, b + q * sizeof w, sizeof w);
        w.group[sizeof w.group - 1] = '\0';
        if (lsim_strtab_intern(names, w.group, strlen(w.group), &id))
            return lsim_err_set(err, LSIM_ENOMEM, "out of memory for the collective entries' group names");
        w.e.group = lsim_strtab_get(names, id);
        memcpy(b + q * sizeof w.e, &w.e, sizeof w.e);
    }
    void *s = n ? lsim_realloc(b, n * sizeof(lsim_job_entry)) : NULL;
    if (s) *buf = s; /* else the larger block holds them as well */
    return 0;
}

int lsim_mpi_gather_entries(MPI_Comm comm, const lsim_job_entry *mine, size_t nmine, lsim_strtab *names,
                            lsim_job_entry **all, size_t *nall, lsim_err *err)
{
    int np = 1, rc = 0;
    MPI_Comm_size(comm, &np);
    int *cnt = lsim_malloc((size_t)np * sizeof *cnt), *dsp = lsim_malloc((size_t)np * sizeof *dsp);
    wire_ent *buf = NULL, *out = NULL;
    MPI_Datatype ent = MPI_DATATYPE_NULL;
    *all = NULL;
    *nall = 0;
    if (!cnt || !dsp || !(out = lsim_malloc((nmine ? nmine : 1) * sizeof *out))) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    else if (nmine > INT_MAX)
        rc = lsim_err_set(err, LSIM_EARG, "%zu collective entries on one MPI rank: more than one exchange can count (%d)",
                          nmine, INT_MAX);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    for (size_t q = 0; q < nmine; q++) pack_ent(&out[q], mine, q);
    /* counts in entries (the derived type below), so the limit is 2^31 - 1
     * entries, not bytes (15.8 M entries of 136 bytes) */
    int my = (int)nmine;
    MPI_Allgather(&my, 1, MPI_INT, cnt, 1, MPI_INT, comm);
    long long sum = 0;
    for (int r = 0; r < np; r++) {
        dsp[r] = (int)(sum < INT_MAX ? sum : INT_MAX);
        sum += cnt[r];
    }
    /* the same sum on every rank: all refuse together */
    if (sum > INT_MAX)
        rc = lsim_err_set(err, LSIM_EARG, "%lld collective entries in the job: more than one exchange can count (%d)", sum,
                          INT_MAX);
    else if (!(buf = lsim_malloc(sum ? (size_t)sum * sizeof *buf : 1)))
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for the job's %lld collective entries", sum);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    MPI_Type_contiguous((int)sizeof *buf, MPI_BYTE, &ent);
    MPI_Type_commit(&ent);
    MPI_Allgatherv(out, my, ent, buf, cnt, dsp, ent, comm);
    MPI_Type_free(&ent);
    void *b = buf;
    rc = lsim_mpi_agree(comm, unpack_ents(&b, (size_t)sum, names, err), err);
    buf = b;
    if (rc) goto cleanup;
    *all = b;
    *nall = (size_t)sum;
    buf = NULL;
cleanup:
    free(buf);
    free(out);
    free(cnt);
    free(dsp);
    return rc;
}

/* ------------------------------------------- the distributed match */

/* The owner rank of an instance: FNV-1a over its key (group, position).
 * Why the position and not the group alone: a job's instances are mostly
 * on a few kinds of group (tensor-parallel ones carry most), so hashing
 * groups would leave the ranks' shares as uneven as the groups are few;
 * keys of one group spread evenly. The same function on every rank. */
static uint64_t group_fnv(const lsim_job_entry *e)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t c = 0; e->group[c]; c++) h = (h ^ (unsigned char)e->group[c]) * 1099511628211ull;
    return h;
}

/* h: group_fnv of e's group (the hash runs on over the position), so that
 * a run of entries on one group hashes its name once */
static int owner_of(uint64_t h, const lsim_job_entry *e, int np)
{
    uint64_t q = (uint64_t)e->seq;
    for (int b = 0; b < 8; b++) h = (h ^ ((q >> (8 * b)) & 0xff)) * 1099511628211ull;
    return (int)(h % (uint64_t)np);
}

/* One participant of a matched instance as its owner sends it back to the
 * ranks whose GPUs take part: all of an instance's participants follow
 * each other, in the serial order (GPU, node). */
typedef struct mrec {
    uint64_t inst;             /* the instance's id in the job */
    lsim_ns obs_start, obs_end;
    lsim_ns transfer;
    lsim_ns diff;              /* the participant's clock-offset term, INT64_MIN none */
    uint32_t gpu, node;
    uint32_t npart, root;      /* the instance's participants; the root's index among them */
    uint32_t coll;             /* the participant's collective record (job.h inst_of) */
    uint8_t rule, observed, pad[2];
} mrec;

/* Participant a of the owned instances, for lsim_job_observed_waits. */
static void mrec_part(const void *ctx, uint64_t a, lsim_job_obs *o)
{
    const mrec *r = (const mrec *)ctx + a;
    *o = (lsim_job_obs){r->gpu, r->node, r->observed, r->obs_start, r->obs_end};
}

/* Collective: an all-to-all of fixed-size records. The d-th record sent
 * is rec[src[d]] (src NULL: rec[d]), or packf(dst, rec, src[d]) writes it
 * (recsize bytes) when packf is given (the entries' wire records); the records go to rank 0 first
 * (scount[0] of them), then rank 1, ... *rbuf (allocated here, the caller
 * frees) gets every rank's records for this one, in rank order, *nrecv in
 * all. The counts are exchanged as 64-bit numbers and the records counted
 * through a derived datatype of one record, so a count or displacement is
 * an int only after it was checked to fit: past 2^31 - 1 records on any
 * rank every rank refuses (LSIM_EARG), none overflows. Why src: grouping the 136-byte
 * entries by destination in place followed the permutation's cycles, a
 * chain of dependent cache misses that cost more than the match itself
 * (a 4,096-GPU job at K = 2); a copy of them all was the peak's largest
 * term. So the records are packed into a buffer of at most EX_CHUNK bytes
 * (the reads independent of each other; 4 MiB: each round costs little,
 * the buffer adds to the peak) and sent in rounds, each round
 * the next up to c records for every rank, received straight into their
 * places in *rbuf: the same records in the same places as one all-to-all. The
 * rounds are as many on every rank (the largest count over all ranks). */
#define EX_CHUNK ((size_t)4 << 20)
static int exchange(MPI_Comm comm, const void *rec, const size_t *src, const size_t *scount, size_t recsize,
                    void (*packf)(void *dst, const void *rec, size_t i), void **rbuf, size_t *nrecv, const char *what,
                    lsim_err *err)
{
    int np = 1, rc = 0;
    MPI_Comm_size(comm, &np);
    int64_t *sc = lsim_malloc((size_t)np * sizeof *sc), *rcnt = lsim_malloc((size_t)np * sizeof *rcnt);
    int *si = lsim_malloc((size_t)np * sizeof *si), *sd = lsim_malloc((size_t)np * sizeof *sd);
    int *ri = lsim_malloc((size_t)np * sizeof *ri), *rd = lsim_malloc((size_t)np * sizeof *rd);
    size_t *soff = lsim_malloc((size_t)np * sizeof *soff), *roff = lsim_malloc((size_t)np * sizeof *roff);
    size_t c = EX_CHUNK / recsize / (size_t)np; /* records per rank per round: the same on every rank */
    MPI_Datatype t = MPI_DATATYPE_NULL;
    char *buf = NULL, *pack = NULL;
    *rbuf = NULL;
    *nrecv = 0;
    if (c < 1) c = 1;
    if (!sc || !rcnt || !si || !sd || !ri || !rd || !soff || !roff) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (int r = 0; !rc && r < np; r++) sc[r] = (int64_t)scount[r];
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    MPI_Alltoall(sc, 1, MPI_INT64_T, rcnt, 1, MPI_INT64_T, comm);
    int64_t st = 0, rt = 0, most = 0;
    for (int r = 0; r < np; r++) {
        soff[r] = (size_t)st;
        roff[r] = (size_t)rt;
        st += sc[r];
        rt += rcnt[r];
        if (sc[r] > most) most = sc[r];
        if (rcnt[r] > most) most = rcnt[r];
    }
    if (st > INT_MAX || rt > INT_MAX)
        rc = lsim_err_set(err, LSIM_EARG, "%lld %s on one MPI rank: more than one exchange can count (%d); use more ranks",
                          (long long)(st > rt ? st : rt), what, INT_MAX);
    else if (!(buf = lsim_malloc(rt ? (size_t)rt * recsize : 1)) ||
             !(pack = lsim_malloc((st ? ((size_t)st < c * (size_t)np ? (size_t)st : c * (size_t)np) : 1) * recsize)))
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for %lld %s", (long long)rt, what);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    int64_t rounds = 0, mine = most ? (most + (int64_t)c - 1) / (int64_t)c : 0;
    MPI_Allreduce(&mine, &rounds, 1, MPI_INT64_T, MPI_MAX, comm);
    MPI_Type_contiguous((int)recsize, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    for (int64_t k = 0; k < rounds; k++) {
        size_t from = (size_t)k * c, at = 0;
        for (int r = 0; r < np; r++) {
            size_t ns = (size_t)sc[r] > from ? (size_t)sc[r] - from : 0, nr = (size_t)rcnt[r] > from ? (size_t)rcnt[r] - from : 0;
            if (ns > c) ns = c;
            if (nr > c) nr = c;
            si[r] = (int)ns;
            sd[r] = (int)at;
            for (size_t q = 0; q < ns; q++, at++) {
                size_t i = src ? src[soff[r] + from + q] : soff[r] + from + q;
                if (packf) packf(pack + at * recsize, rec, i);
                else memcpy(pack + at * recsize, (const char *)rec + i * recsize, recsize);
            }
            ri[r] = (int)nr;
            rd[r] = (int)(nr ? roff[r] + from : 0); /* < rt <= INT_MAX when anything arrives */
        }
        MPI_Alltoallv(pack, si, sd, t, buf, ri, rd, t, comm);
    }
    MPI_Type_free(&t);
    *rbuf = buf;
    *nrecv = (size_t)rt;
    buf = NULL;
cleanup:
    free(buf);
    free(pack);
    free(sc);
    free(rcnt);
    free(si);
    free(sd);
    free(ri);
    free(rd);
    free(soff);
    free(roff);
    return rc;
}

/* Collective: the agreement on a failure of the owners' matching. An
 * instance's failure (fail_at < ne) is ranked by its key, so the error
 * every rank returns is the one first in (group, position) order: the one
 * the serial match of the whole job reports. Any other failure (memory)
 * takes precedence, the lowest such rank's. */
static int agree_match(MPI_Comm comm, int rc, const lsim_job_entry *key, lsim_err *err)
{
    typedef struct fkey {
        int64_t kind; /* 0 none, 1 an instance's failure, 2 another */
        int64_t seq;
        char group[LSIM_JOB_GROUP_MAX];
    } fkey;
    int me = 0, np = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    fkey mine, *all = lsim_malloc((size_t)np * sizeof *all);
    memset(&mine, 0, sizeof mine);
    mine.kind = !rc ? 0 : key ? 1 : 2;
    if (key) {
        mine.seq = key->seq;
        snprintf(mine.group, sizeof mine.group, "%s", key->group);
    }
    /* without room to compare, the plain agreement (any failing rank) */
    int oom = !all, any_oom = 0;
    MPI_Allreduce(&oom, &any_oom, 1, MPI_INT, MPI_MAX, comm);
    if (any_oom) {
        free(all);
        return lsim_mpi_agree(comm, rc ? rc : oom ? lsim_err_set(err, LSIM_ENOMEM, "out of memory") : 0, err);
    }
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, comm);
    int first = -1;
    for (int r = 0; r < np; r++) {
        if (!all[r].kind) continue;
        if (first < 0) first = r;
        else if (all[first].kind == 1 && (all[r].kind == 2 ||
                                          (all[r].kind == 1 && (strcmp(all[r].group, all[first].group) < 0 ||
                                                                (!strcmp(all[r].group, all[first].group) &&
                                                                 all[r].seq < all[first].seq)))))
            first = r;
    }
    free(all);
    if (first < 0) return 0;
    return lsim_mpi_bcast_failure(comm, first, rc, err);
}

static int cmp_gdiff(const void *x, const void *y)
{
    const lsim_ns *a = x, *b = y; /* (GPU, term) pairs */
    if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
    return (a[1] > b[1]) - (a[1] < b[1]);
}

/* The owners' side: match the owned entries (lsim_job_match_owned), agree
 * on the first failure, number the instances in the job (the owners' in
 * rank order, each's in key order), and pack every instance's participants
 * once for each rank that holds one of them (gpu_rank). On success *sbuf
 * (allocated here) holds the records by destination, scount[r] for rank r;
 * totals[4] the job's instances, p2p, rooted and rootless instances. */
static int owners_match(MPI_Comm comm, lsim_job_entry *own, size_t nown, size_t ngpus, const int32_t *gpu_rank,
                        const int32_t *ranks, const char *const *sources, mrec **sbuf, size_t *scount,
                        uint64_t *totals, lsim_err *err)
{
    int me = 0, np = 1, rc = 0;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    lsim_job *oj = NULL;
    size_t fail_at = SIZE_MAX;
    lsim_ns *ediff = lsim_malloc((nown ? nown : 1) * sizeof *ediff);
    size_t *order = lsim_malloc((nown ? nown : 1) * sizeof *order); /* sorted position -> entry (job.h) */
    size_t *at = lsim_calloc((size_t)np, sizeof *at);
    int64_t *seen = lsim_malloc((size_t)np * sizeof *seen);
    *sbuf = NULL;
    if (!ediff || !order || !at || !seen) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
    else rc = lsim_job_match_owned(own, nown, ngpus, ranks, sources, order, ediff, &fail_at, &oj, err);
    if ((rc = agree_match(comm, rc, rc && fail_at < nown ? &own[order[fail_at]] : NULL, err))) goto cleanup;
    uint64_t base = 0, mine[4] = {oj->ninst, oj->p2p_inst, oj->rooted_inst, oj->rootless_inst};
    MPI_Exscan(&mine[0], &base, 1, MPI_UINT64_T, MPI_SUM, comm);
    if (me == 0) base = 0; /* MPI_Exscan leaves rank 0's undefined */
    MPI_Allreduce(mine, totals, 4, MPI_UINT64_T, MPI_SUM, comm);
    /* each instance once per rank holding a participant; two passes
     * (count, fill), a rank's stamp the instance that last counted it */
    for (int r = 0; r < np; r++) {
        scount[r] = 0;
        seen[r] = -1;
    }
    for (size_t k = 0; k < oj->ninst; k++) {
        uint64_t np_k = oj->part_off[k + 1] - oj->part_off[k];
        for (uint64_t p = oj->part_off[k]; p < oj->part_off[k + 1]; p++) {
            int32_t d = gpu_rank[oj->part_gpu[p]];
            if (seen[d] != (int64_t)k) {
                seen[d] = (int64_t)k;
                scount[d] += np_k;
            }
        }
    }
    size_t total = 0;
    for (int r = 0; r < np; r++) {
        at[r] = total;
        total += scount[r];
        seen[r] = -1;
    }
    mrec *buf = lsim_calloc(total ? total : 1, sizeof *buf); /* zeroed: no uninitialised padding is sent */
    if (!buf) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for %zu matched participants", total);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    for (size_t k = 0; k < oj->ninst; k++) {
        uint64_t p0 = oj->part_off[k], p1 = oj->part_off[k + 1];
        int rooted = oj->rule[k] == LSIM_JOB_BCAST || oj->rule[k] == LSIM_JOB_REDUCE;
        for (uint64_t p = p0; p < p1; p++) {
            int32_t d = gpu_rank[oj->part_gpu[p]];
            if (seen[d] == (int64_t)k) continue;
            seen[d] = (int64_t)k;
            for (uint64_t a = p0; a < p1; a++) {
                mrec *m = &buf[at[d]++];
                const lsim_job_entry *x = &own[order[a]];
                m->inst = base + k;
                m->obs_start = x->obs_start;
                m->obs_end = x->obs_end;
                m->observed = x->observed;
                m->transfer = oj->transfer[k];
                m->diff = ediff[a];
                m->gpu = oj->part_gpu[a];
                m->node = oj->part_node[a];
                m->coll = oj->part_coll[a];
                m->npart = (uint32_t)(p1 - p0);
                m->root = rooted ? (uint32_t)(oj->root[k] - p0) : 0;
                m->rule = oj->rule[k];
            }
        }
    }
    *sbuf = buf;
cleanup:
    lsim_job_free(oj);
    free(ediff);
    free(order);
    free(at);
    free(seen);
    return rc;
}

/* This rank's job from the records its GPUs' instances came back as
 * (rank order = job id order): the instances, inst_of and, once every
 * GPU's clock offset is known (an allgather of each rank's own GPUs'),
 * the observed waiting, by the rules of lsim_job_from_entries. Collective
 * (the allgather); the status is agreed. */
static int build_local(MPI_Comm comm, const mrec *rec, size_t nrec, size_t ngpus, const size_t *nodes,
                       const size_t *colls, const uint8_t *hasobs, const uint8_t *local, const uint32_t *allgid, const int *gcnt,
                       const int *gdsp, const uint32_t *gpu_ids, size_t nlocal, const uint64_t *totals, lsim_job **out,
                       lsim_err *err)
{
    int rc = 0;
    lsim_ns *gd = NULL, *offs = NULL, *alloffs = NULL;
    size_t ninst = 0, ngd = 0;
    lsim_job *j = lsim_calloc(1, sizeof *j);
    *out = NULL;
    for (size_t i = 0; i < nrec;) {
        if (!rec[i].npart || rec[i].npart > nrec - i) {
            rc = lsim_err_set(err, LSIM_EINTERNAL, "matched collectives came back malformed");
            break;
        }
        i += rec[i].npart;
        ninst++;
    }
    if (!j) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
    if (rc) goto agree;
    j->ngpus = ngpus;
    j->ninst = ninst;
    j->ninst_job = totals[0];
    j->p2p_inst = totals[1];
    j->rooted_inst = totals[2];
    j->rootless_inst = totals[3];
    j->inst_of = lsim_calloc(ngpus ? ngpus : 1, sizeof *j->inst_of);
    j->obs_wait = lsim_calloc(ngpus ? ngpus : 1, sizeof *j->obs_wait);
    j->clock_offset = lsim_calloc(ngpus ? ngpus : 1, sizeof *j->clock_offset);
    j->part_off = lsim_malloc((ninst + 1) * sizeof *j->part_off);
    j->part_gpu = lsim_malloc((nrec ? nrec : 1) * sizeof *j->part_gpu);
    j->part_node = lsim_malloc((nrec ? nrec : 1) * sizeof *j->part_node);
    j->part_coll = lsim_malloc((nrec ? nrec : 1) * sizeof *j->part_coll);
    j->transfer = lsim_malloc((ninst ? ninst : 1) * sizeof *j->transfer);
    j->rule = lsim_calloc(ninst ? ninst : 1, sizeof *j->rule);
    j->root = lsim_calloc(ninst ? ninst : 1, sizeof *j->root);
    j->inst_id = lsim_malloc((ninst ? ninst : 1) * sizeof *j->inst_id);
    if (!j->inst_of || !j->obs_wait || !j->clock_offset || !j->part_off || !j->part_gpu || !j->part_node ||
        !j->part_coll || !j->transfer || !j->rule || !j->root || !j->inst_id) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
        goto agree;
    }
    for (size_t i = 0; i < ngpus; i++) {
        if (!nodes[i]) continue; /* another rank's GPU: no arrays of its own here */
        j->inst_of[i] = lsim_malloc((colls[i] ? colls[i] : 1) * sizeof **j->inst_of);
        if (hasobs[i]) j->obs_wait[i] = lsim_calloc(nodes[i], sizeof **j->obs_wait);
        if (!j->inst_of[i] || (hasobs[i] && !j->obs_wait[i])) {
            rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
            goto agree;
        }
        for (size_t c = 0; c < colls[i]; c++) j->inst_of[i][c] = -1;
    }
    for (size_t k = 0, i = 0; k < ninst; k++) {
        const mrec *m = &rec[i];
        j->part_off[k] = i;
        j->inst_id[k] = m->inst;
        j->transfer[k] = m->transfer;
        j->rule[k] = m->rule;
        j->root[k] = m->rule == LSIM_JOB_BCAST || m->rule == LSIM_JOB_REDUCE ? i + m->root : 0;
        for (uint32_t a = 0; a < m->npart; a++, i++) {
            const mrec *x = &rec[i];
            if (x->gpu >= ngpus || (nodes[x->gpu] && (x->node >= nodes[x->gpu] || x->coll >= colls[x->gpu])) ||
                (k && m->inst <= j->inst_id[k - 1])) {
                rc = lsim_err_set(err, LSIM_EINTERNAL, "collective entry out of range");
                goto agree;
            }
            j->part_gpu[i] = x->gpu;
            j->part_node[i] = x->node;
            j->part_coll[i] = x->coll;
            if (j->inst_of[x->gpu]) j->inst_of[x->gpu][x->coll] = (int32_t)k;
            if (local[x->gpu] && x->diff != INT64_MIN) ngd++;
        }
    }
    j->part_off[ninst] = nrec;
    /* each own GPU's clock offset: the median of its terms (the serial
     * multiset: every instance of the GPU came back to this rank once) */
    gd = lsim_malloc((ngd ? ngd : 1) * 2 * sizeof *gd);
    offs = lsim_malloc((nlocal ? nlocal : 1) * sizeof *offs);
    alloffs = lsim_malloc((ngpus ? ngpus : 1) * sizeof *alloffs);
    if (!gd || !offs || !alloffs) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory matching collectives");
        goto agree;
    }
    ngd = 0;
    for (size_t i = 0; i < nrec; i++)
        if (local[rec[i].gpu] && rec[i].diff != INT64_MIN) {
            gd[2 * ngd] = rec[i].gpu;
            gd[2 * ngd + 1] = rec[i].diff;
            ngd++;
        }
    if (ngd) qsort(gd, ngd, 2 * sizeof *gd, cmp_gdiff);
    for (size_t a = 0; a < ngd;) {
        size_t b = a;
        while (b < ngd && gd[2 * b] == gd[2 * a]) b++;
        j->clock_offset[gd[2 * a]] = gd[2 * (a + (b - a) / 2) + 1];
        a = b;
    }
agree:
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    for (size_t l = 0; l < nlocal; l++) offs[l] = j->clock_offset[gpu_ids[l]];
    MPI_Allgatherv(offs, (int)nlocal, MPI_INT64_T, alloffs, gcnt, gdsp, MPI_INT64_T, comm);
    for (size_t q = 0; q < ngpus; q++) j->clock_offset[allgid[q]] = alloffs[q];
    /* observed waiting, on the aligned clocks (own GPUs only), by the rule
     * of lsim_job_from_entries (job.h lsim_job_observed_waits) */
    lsim_job_observed_waits(j, mrec_part, rec);
    *out = j;
    j = NULL;
cleanup:
    lsim_job_free(j);
    free(gd);
    free(offs);
    free(alloffs);
    return rc;
}

/* Collective: every GPU's rank and name (graph->rank, lsim_graph_name),
 * by global GPU, so an owner's error names the GPUs as the serial match
 * does. *ranks, *buf (the names' bytes) and *sources allocated here. */
static int names(MPI_Comm comm, lsim_graph *const *graphs, size_t nlocal, const uint32_t *allgid, const int *gcnt,
                 const int *gdsp, size_t ngpus, int32_t **ranks, char **buf, char ***sources, lsim_err *err)
{
    int np = 1, rc = 0;
    MPI_Comm_size(comm, &np);
    int32_t *myr = lsim_malloc((nlocal ? nlocal : 1) * sizeof *myr), *allr = lsim_malloc((ngpus ? ngpus : 1) * sizeof *allr);
    int *mylen = lsim_malloc((nlocal ? nlocal : 1) * sizeof *mylen), *alllen = lsim_malloc((ngpus ? ngpus : 1) * sizeof *alllen);
    int *bc = lsim_malloc((size_t)np * sizeof *bc), *bd = lsim_malloc((size_t)np * sizeof *bd);
    char *mine = NULL, *all = NULL;
    *ranks = lsim_malloc((ngpus ? ngpus : 1) * sizeof **ranks);
    *sources = lsim_calloc(ngpus ? ngpus : 1, sizeof **sources);
    *buf = NULL;
    long long my = 0, total = 0;
    if (!myr || !allr || !mylen || !alllen || !bc || !bd || !*ranks || !*sources)
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t l = 0; !rc && l < nlocal; l++) {
        myr[l] = graphs[l]->rank;
        size_t n = strlen(lsim_graph_name(graphs[l])) + 1;
        mylen[l] = (int)(n < 4096 ? n : 4096); /* a name is cut, never the exchange */
        my += mylen[l];
    }
    if (!rc && !(mine = lsim_malloc(my ? (size_t)my : 1))) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t l = 0, at = 0; !rc && l < nlocal; l++) {
        if (!mylen[l]) continue;
        memcpy(mine + at, lsim_graph_name(graphs[l]), (size_t)mylen[l] - 1);
        mine[at + (size_t)mylen[l] - 1] = '\0';
        at += (size_t)mylen[l];
    }
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    MPI_Allgatherv(myr, (int)nlocal, MPI_INT32_T, allr, gcnt, gdsp, MPI_INT32_T, comm);
    MPI_Allgatherv(mylen, (int)nlocal, MPI_INT, alllen, gcnt, gdsp, MPI_INT, comm);
    for (int r = 0; r < np; r++) {
        long long s = 0;
        for (int q = gdsp[r]; q < gdsp[r] + gcnt[r]; q++) s += alllen[q];
        bc[r] = (int)(s < INT_MAX ? s : INT_MAX);
        bd[r] = (int)(total < INT_MAX ? total : INT_MAX);
        total += s;
    }
    if (total > INT_MAX) rc = lsim_err_set(err, LSIM_EARG, "the job's GPU names take %lld bytes: more than one exchange can count", total);
    else if (!(all = lsim_malloc(total ? (size_t)total : 1))) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    MPI_Allgatherv(mine, (int)my, MPI_CHAR, all, bc, bd, MPI_CHAR, comm);
    for (size_t q = 0, at = 0; q < ngpus; q++) {
        (*ranks)[allgid[q]] = allr[q];
        (*sources)[allgid[q]] = alllen[q] ? all + at : NULL;
        at += (size_t)alllen[q];
    }
    *buf = all;
    all = NULL;
cleanup:
    free(myr);
    free(allr);
    free(mylen);
    free(alllen);
    free(bc);
    free(bd);
    free(mine);
    free(all);
    return rc;
}

int lsim_mpi_job_match(MPI_Comm comm, lsim_graph *const *graphs, const uint32_t *gpu_ids, size_t nlocal, size_t ngpus,
                       lsim_job **job, uint64_t *p2p, lsim_err *err)
{
    int me = 0, np = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    lsim_job_entry *mine = NULL, *own = NULL;
    lsim_strtab *mine_names = lsim_strtab_new(), *own_names = lsim_strtab_new(); /* their group names */
    mrec *back = NULL, *rec = NULL;
    size_t nmine = 0, nown = 0, nrec = 0;
    uint64_t totals[4] = {0, 0, 0, 0};
    size_t *nodes = lsim_calloc(ngpus ? 2 * ngpus : 1, sizeof *nodes), *colls = nodes ? nodes + ngpus : NULL;
    uint8_t *hasobs = lsim_calloc(ngpus ? ngpus : 1, 1), *local = lsim_calloc(ngpus ? ngpus : 1, 1);
    int32_t *gpu_rank = lsim_malloc((ngpus ? ngpus : 1) * sizeof *gpu_rank);
    uint32_t *allgid = lsim_malloc((ngpus ? ngpus : 1) * sizeof *allgid);
    int *gcnt = lsim_malloc((size_t)np * sizeof *gcnt), *gdsp = lsim_malloc((size_t)np * sizeof *gdsp);
    size_t *scount = lsim_calloc((size_t)np, sizeof *scount), *sat = lsim_calloc((size_t)np, sizeof *sat);
    size_t *pos = NULL;
    int32_t *ranks = NULL;
    char *srcbuf = NULL, **sources = NULL;
    int rc = nodes && hasobs && local && gpu_rank && allgid && gcnt && gdsp && scount && sat && mine_names && own_names
                 ? 0
                 : lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    *job = NULL;
    if (!rc && nlocal > ngpus) rc = lsim_err_set(err, LSIM_EARG, "%zu GPUs on one rank of a job of %zu GPUs", nlocal, ngpus);
    for (size_t i = 0; !rc && i < nlocal; i++) {
        if (gpu_ids[i] >= ngpus) rc = lsim_err_set(err, LSIM_EARG, "GPU %u of a job of %zu GPUs", gpu_ids[i], ngpus);
        else nodes[gpu_ids[i]] = graphs[i]->n, colls[gpu_ids[i]] = graphs[i]->ncoll;
    }
    if (!rc) rc = lsim_job_entries(graphs, gpu_ids, nlocal, mine_names, &mine, &nmine, p2p, err);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    /* which rank holds every GPU: where a matched instance goes back to */
    {
        int my = (int)nlocal, at = 0;
        MPI_Allgather(&my, 1, MPI_INT, gcnt, 1, MPI_INT, comm);
        for (int r = 0; r < np; r++) {
            gdsp[r] = at;
            at += gcnt[r];
        }
        if ((size_t)at != ngpus) {
            rc = lsim_err_set(err, LSIM_EARG, "the ranks hold %d GPUs, the job has %zu", at, ngpus);
            goto cleanup; /* every rank sees the same total */
        }
        MPI_Allgatherv(gpu_ids, my, MPI_UINT32_T, allgid, gcnt, gdsp, MPI_UINT32_T, comm);
        for (size_t i = 0; i < ngpus; i++) gpu_rank[i] = -1;
        for (int r = 0; r < np && !rc; r++)
            for (int q = gdsp[r]; q < gdsp[r] + gcnt[r]; q++) {
                if (allgid[q] >= ngpus || gpu_rank[allgid[q]] >= 0) {
                    rc = lsim_err_set(err, LSIM_EARG, "the ranks' GPUs are not a partition of the job (GPU %u)", allgid[q]);
                    break;
                }
                gpu_rank[allgid[q]] = r;
            }
        if (rc) goto cleanup; /* the same tables on every rank */
        for (size_t l = 0; l < nlocal; l++) local[gpu_ids[l]] = 1;
    }
    /* each entry to its instance's owner: pos lists the entries by
     * destination (rank 0's first), each rank's in entry order, and
     * exchange packs them from there (the entries are not moved).
     * The owners are hashed twice (count, then place) rather than kept,
     * each run of entries on one group hashing its name once. */
    pos = lsim_malloc((nmine ? nmine : 1) * sizeof *pos);
    if (!pos) rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory for %zu collective entries", nmine);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    uint64_t gh = 0;
    for (size_t q = 0; q < nmine; q++) {
        if (q == 0 || mine[q].group != mine[q - 1].group) gh = group_fnv(&mine[q]); /* interned: same text, same pointer */
        scount[owner_of(gh, &mine[q], np)]++;
        if (mine[q].observed) hasobs[mine[q].gpu] = 1;
    }
    size_t acc = 0;
    for (int r = 0; r < np; r++) {
        sat[r] = acc;
        acc += scount[r];
    }
    for (size_t q = 0; q < nmine; q++) {
        if (q == 0 || mine[q].group != mine[q - 1].group) gh = group_fnv(&mine[q]); /* interned: same text, same pointer */
        pos[sat[owner_of(gh, &mine[q], np)]++] = q;
    }
    void *rb = NULL;
    rc = exchange(comm, mine, pos, scount, sizeof(wire_ent), pack_ent, &rb, &nown, "collective entries", err);
    free(mine);
    free(pos);
    mine = NULL;
    pos = NULL;
    lsim_strtab_free(mine_names);
    mine_names = NULL;
    if (!rc) rc = lsim_mpi_agree(comm, unpack_ents(&rb, nown, own_names, err), err);
    own = rb;
    if (rc) goto cleanup;
    /* the owners match their keys and send each instance back to the ranks
     * of its participants */
    if ((rc = names(comm, graphs, nlocal, allgid, gcnt, gdsp, ngpus, &ranks, &srcbuf, &sources, err))) goto cleanup;
    rc = owners_match(comm, own, nown, ngpus, gpu_rank, ranks, (const char *const *)sources, &back, scount, totals, err);
    free(ranks);
    free(srcbuf);
    free(sources);
    ranks = NULL, srcbuf = NULL, sources = NULL;
    if (rc) goto cleanup;
    free(own);
    own = NULL;
    rc = exchange(comm, back, NULL, scount, sizeof *back, NULL, &rb, &nrec, "matched participants", err);
    rec = rb;
    free(back);
    back = NULL;
    if (rc) goto cleanup;
    rc = build_local(comm, rec, nrec, ngpus, nodes, colls, hasobs, local, allgid, gcnt, gdsp, gpu_ids, nlocal, totals, job, err);
cleanup:
    free(mine);
    free(own);
    lsim_strtab_free(mine_names);
    lsim_strtab_free(own_names);
    free(back);
    free(rec);
    free(pos);
    free(ranks);
    free(srcbuf);
    free(sources);
    free(nodes);
    free(hasobs);
    free(local);
    free(gpu_rank);
    free(allgid);
    free(gcnt);
    free(gdsp);
    free(scount);
    free(sat);
    return rc;
}

int lsim_mpi_bcast_layout(MPI_Comm comm, int rc, lsim_map_layout *l, lsim_err *err)
{
    long long w[2] = {(long long)l->tp, (long long)l->dp};
    rc = lsim_mpi_agree(comm, rc, err);
    MPI_Bcast(w, 2, MPI_LONG_LONG, 0, comm);
    l->tp = (size_t)w[0];
    l->dp = (size_t)w[1];
    return rc;
}

/* The job's graphs by global GPU (this rank's only; the others NULL), for
 * job->graphs; and the local GPUs' global ids as the engine wants them. */
static int local_tables(const lsim_run *run, const size_t *gpus, size_t total, lsim_graph ***gtab, uint32_t **gid,
                        lsim_err *err)
{
    *gtab = lsim_calloc(total ? total : 1, sizeof **gtab);
    *gid = lsim_malloc((run->n ? run->n : 1) * sizeof **gid);
    if (!*gtab || !*gid) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < run->n; i++) {
        if (gpus[i] >= total) return lsim_err_set(err, LSIM_EARG, "GPU %zu of a job of %zu GPUs", gpus[i], total);
        (*gid)[i] = (uint32_t)gpus[i];
        (*gtab)[gpus[i]] = run->graphs[i];
    }
    return 0;
}

/* Every rank's items of `size` bytes (cnt[r] from rank r, at dsp[r]; tot
 * in all) into one array *all, in rank order. 0, or -1 on any rank (out of
 * memory). Collective. */
static int gather_part(MPI_Comm comm, const void *mine, const int *cnt, const int *dsp, int tot, size_t size,
                       void **all)
{
    int np = 1, me = 0;
    MPI_Comm_size(comm, &np);
    MPI_Comm_rank(comm, &me);
    int *bc = lsim_malloc((size_t)np * sizeof *bc), *bd = lsim_malloc((size_t)np * sizeof *bd);
    *all = lsim_malloc(tot ? (size_t)tot * size : 1);
    int ok = bc && bd && *all, all_ok = 0;
    for (int r = 0; ok && r < np; r++) {
        bc[r] = cnt[r] * (int)size;
        bd[r] = dsp[r] * (int)size;
    }
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (all_ok) MPI_Allgatherv(mine, bc[me], MPI_BYTE, *all, bc, bd, MPI_BYTE, comm);
    free(bc);
    free(bd);
    return all_ok ? 0 : -1;
}

/* Counts and displacements of one gather (cnt[r] = n from rank r); -1
 * when the bytes of the whole gather of `size`-byte items pass INT_MAX. */
static int gather_counts(MPI_Comm comm, uint64_t n, size_t size, int *cnt, int *dsp, int *tot)
{
    int np = 1;
    MPI_Comm_size(comm, &np);
    uint64_t *all = lsim_malloc((size_t)np * sizeof *all), t = 0;
    if (!all) return -1;
    MPI_Allgather(&n, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, comm);
    for (int r = 0; r < np; r++) t += all[r];
    int fits = t * size <= INT_MAX;
    for (int r = 0, d = 0; fits && r < np; r++) {
        dsp[r] = d;
        cnt[r] = (int)all[r];
        d += cnt[r];
    }
    free(all);
    *tot = fits ? (int)t : 0;
    return fits ? 0 : -1;
}

/* Every rank's flows (netshare.h) into *all, in rank order: each rank then
 * sweeps the same flows, so the shared times are the same everywhere and
 * the same as a serial run's (the sweep orders them by (start, key)).
 * Collective; agreed. */
static int gather_flows(MPI_Comm comm, const lsim_netflows *f, lsim_netflows *all, lsim_err *err)
{
    int np = 1, rc = 0, tf = 0, tl = 0;
    MPI_Comm_size(comm, &np);
    int *cf = lsim_malloc((size_t)np * sizeof *cf), *df = lsim_malloc((size_t)np * sizeof *df);
    int *cl = lsim_malloc((size_t)np * sizeof *cl), *dl = lsim_malloc((size_t)np * sizeof *dl);
    uint64_t *nlk = lsim_malloc((f->n ? f->n : 1) * sizeof *nlk), *anl = NULL;
    memset(all, 0, sizeof *all);
    if (!cf || !df || !cl || !dl || !nlk) rc = lsim_err_set(err, LSIM_ENOMEM, "link sharing: out of memory");
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    if (gather_counts(comm, f->n, 8, cf, df, &tf) || gather_counts(comm, f->nl, 8, cl, dl, &tl))
        rc = lsim_err_set(err, LSIM_EARG, "link sharing: more flows than one MPI gather can count");
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    for (size_t a = 0; a < f->n; a++) nlk[a] = f->loff[a + 1] - f->loff[a];
    if (gather_part(comm, f->id, cf, df, tf, 8, (void **)&all->id) ||
        gather_part(comm, f->key, cf, df, tf, 8, (void **)&all->key) ||
        gather_part(comm, f->kind, cf, df, tf, 1, (void **)&all->kind) ||
        gather_part(comm, f->parts, cf, df, tf, sizeof *f->parts, (void **)&all->parts) ||
        gather_part(comm, f->bytes, cf, df, tf, sizeof *f->bytes, (void **)&all->bytes) ||
        gather_part(comm, f->start, cf, df, tf, 8, (void **)&all->start) ||
        gather_part(comm, f->work, cf, df, tf, 8, (void **)&all->work) ||
        gather_part(comm, nlk, cf, df, tf, 8, (void **)&anl) ||
        gather_part(comm, f->link, cl, dl, tl, sizeof *f->link, (void **)&all->link) ||
        gather_part(comm, f->dem, cl, dl, tl, sizeof *f->dem, (void **)&all->dem) ||
        !(all->loff = lsim_malloc(((size_t)tf + 1) * sizeof *all->loff)))
        rc = lsim_err_set(err, LSIM_ENOMEM, "link sharing: out of memory");
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    all->n = all->cap = (size_t)tf;
    all->nl = all->lcap = (size_t)tl;
    all->loff[0] = 0;
    for (size_t a = 0; a < all->n; a++) all->loff[a + 1] = all->loff[a] + anl[a];
cleanup:
    free(cf);
    free(df);
    free(cl);
    free(dl);
    free(nlk);
    free(anl);
    return rc;
}

/* Link sharing under mpirun: as the serial run (run.c, share_links), the
 * flows gathered from every rank and the parallel run repeated. */
static int share_links_mpi(MPI_Comm comm, const lsim_run_opts *o, lsim_run *run, const uint32_t *gid,
                           const lsim_pdes_opts *popts, lsim_pdes_stats *st, lsim_err *err)
{
    lsim_job *j = run->job;
    lsim_netflows f = {0}, all = {0};
    lsim_ns *alone = lsim_malloc((j->ninst ? j->ninst : 1) * sizeof *alone), *shared = NULL, *prev = NULL;
    const lsim_ns **ends = lsim_calloc(j->ngpus ? j->ngpus : 1, sizeof *ends);
    size_t nprev = 0;
    int rc = 0;
    if (!alone || !ends) rc = lsim_err_set(err, LSIM_ENOMEM, "link sharing: out of memory");
    for (size_t i = 0; !rc && i < run->n; i++) {
        if (run->graphs[i]->rank >= 0 && (uint32_t)run->graphs[i]->rank != gid[i])
            rc = lsim_err_set(err, LSIM_EARG,
                              "--link-sharing: %s is rank %d but GPU %u of the job: the job's GPUs must be its "
                              "ranks in order",
                              run->paths[i], (int)run->graphs[i]->rank, gid[i]);
        else ends[gid[i]] = lsim_engine_end(run->engines[i]);
    }
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    memcpy(alone, j->transfer, j->ninst * sizeof *alone);
    int passes = o->share_passes > 0 ? o->share_passes : LSIM_SHARE_PASSES, pass = 0, same = 0;
    for (; pass < passes && !rc && !same; pass++) {
        f.n = f.nl = 0;
        rc = lsim_netshare_collect(j, ends, alone, o->share, &f, err);
        if ((rc = lsim_mpi_agree(comm, rc, err))) break;
        lsim_netflows_free(&all);
        if ((rc = gather_flows(comm, &f, &all, err))) break;
        free(prev);
        prev = shared;
        if (!(shared = lsim_malloc((all.n ? all.n : 1) * sizeof *shared)))
            rc = lsim_err_set(err, LSIM_ENOMEM, "link sharing: out of memory");
        if (!rc) rc = lsim_netshare_sweep(&all, j->ngpus, o->share, shared, &run->share_st, &run->share_det, err);
        if ((rc = lsim_mpi_agree(comm, rc, err))) break;
        /* a fixed point (the first sweep: no flow slowed): the engines already
         * hold the run with these times
         * (every rank compares the same gathered flows: no message) */
        if ((prev ? all.n == nprev && !memcmp(prev, shared, all.n * sizeof *shared)
                  : !memcmp(all.work, shared, all.n * sizeof *shared))) {
            same = 1;
            break;
        }
        nprev = all.n;
        lsim_netshare_apply(j, &all, shared);
        rc = lsim_mpi_agree(comm, lsim_pdes_run(comm, j, gid, run->engines, run->n, NULL, popts, st, err), err);
    }
    run->shared = !rc;
    run->share_st.passes = pass + same;
    run->share_st.converged = same;
cleanup:
    lsim_netflows_free(&f);
    lsim_netflows_free(&all);
    free(alone);
    free(ends);
    free(shared);
    free(prev);
    return rc;
}

int lsim_run_mpi_job(MPI_Comm comm, const lsim_run_opts *o, lsim_run *run, const size_t *gpus, size_t total,
                     const lsim_pdes_opts *popts, lsim_pdes_stats *st, lsim_err *err)
{
    uint64_t p2p = 0;
    uint32_t *gid = NULL;
    lsim_graph **gtab = NULL;
    memset(st, 0, sizeof *st);
    int rc = local_tables(run, gpus, total, &gtab, &gid, err);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    double t0 = lsim_now_s();
    if ((rc = lsim_mpi_job_match(comm, run->graphs, gid, run->n, total, &run->job, &p2p, err))) goto cleanup;
    run->job->graphs = gtab;
    run->job->uncoupled_p2p = p2p;
    rc = lsim_job_align_clocks(run->job, err);
    if (!rc) rc = lsim_run_alloc_results(run, err);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    double t1 = lsim_now_s();
    run->match_s = t1 - t0;
    rc = lsim_run_engines(o, run, err);
    if ((rc = lsim_mpi_agree(comm, rc, err))) goto cleanup;
    run->setup_s = lsim_now_s() - t1;
    t1 = lsim_now_s();
    rc = lsim_pdes_run(comm, run->job, gid, run->engines, run->n, NULL, popts, st, err);
    if (o->share) {
        rc = lsim_mpi_agree(comm, rc, err);
        if (!rc) rc = share_links_mpi(comm, o, run, gid, popts, st, err);
    }
    double t2 = lsim_now_s();
    run->simulate_s = t2 - t1;
    for (size_t i = 0; !rc && i < run->n; i++) rc = lsim_run_finish_gpu(o, run, i, gid[i], err);
    run->metrics_s = lsim_now_s() - t2;
    rc = lsim_mpi_agree(comm, rc, err);
cleanup:
    if (run->job) run->job->graphs = NULL;
    free(gtab);
    free(gid);
    return rc;
}

/* lsim_mpi_rank0_writes: one message per name, '+' or '-' and the name;
 * '.' ends. Point-to-point messages from one sender on one communicator
 * arrive in order, so a name always appears before it goes. */
#define RELAY_NAME_MAX 4096
#define RELAY_SLOTS 16 /* rank 0 writes a trace, a CSV and holds an archive: 2 names each */

typedef struct {
    MPI_Comm comm;
    int np;
} relay_ctx;

static void relay_send(int appears, const char *name, void *ctx)
{
    const relay_ctx *r = ctx;
    char msg[RELAY_NAME_MAX + 1];
    size_t n = strlen(name);
    if (n >= RELAY_NAME_MAX) return; /* no such path gets this far (lsim_out_begin) */
    msg[0] = appears ? '+' : '-';
    memcpy(msg + 1, name, n + 1);
    for (int q = 1; q < r->np; q++) MPI_Send(msg, (int)n + 2, MPI_CHAR, q, 0, r->comm);
}

/* The other ranks: hold each name rank 0 relays until it goes or rank 0 is
 * done. A registry that is full keeps what it has (the next writer of that
 * output removes a stale temporary, output.c). */
static void relay_hold(MPI_Comm comm)
{
    char msg[RELAY_NAME_MAX + 1];
    char names[RELAY_SLOTS][RELAY_NAME_MAX];
    int slot[RELAY_SLOTS];
    for (int k = 0; k < RELAY_SLOTS; k++) slot[k] = -1;
    for (;;) {
        MPI_Status st;
        int len = 0;
        MPI_Recv(msg, (int)sizeof msg, MPI_CHAR, 0, 0, comm, &st);
        MPI_Get_count(&st, MPI_CHAR, &len);
        if (len < 1 || msg[0] == '.') break;
        msg[len < (int)sizeof msg ? len : (int)sizeof msg - 1] = '\0';
        const char *name = msg + 1;
        int k = 0;
        if (msg[0] == '+') {
            while (k < RELAY_SLOTS && slot[k] >= 0) k++;
            if (k == RELAY_SLOTS) continue;
            snprintf(names[k], sizeof names[k], "%s", name);
            slot[k] = lsim_tmp_register(names[k]);
        } else {
            while (k < RELAY_SLOTS && !(slot[k] >= 0 && !strcmp(names[k], name))) k++;
            if (k == RELAY_SLOTS) continue;
            lsim_tmp_unregister(slot[k]);
            slot[k] = -1;
        }
    }
    for (int k = 0; k < RELAY_SLOTS; k++) lsim_tmp_unregister(slot[k]);
}

int lsim_mpi_rank0_writes(MPI_Comm comm, const lsim_out *held, int (*fn)(void *ctx, lsim_err *err), void *ctx,
                          lsim_err *err)
{
    int me = 0, rc = 0;
    relay_ctx r = {MPI_COMM_NULL, 1};
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &r.np);
    /* a communicator of its own: the relay's messages never meet fn's or
     * the caller's */
    MPI_Comm_dup(comm, &r.comm);
    if (me == 0) {
        const char *held_names[2] = {lsim_out_is_through(held) ? NULL : lsim_out_file(held), lsim_out_lock(held)};
        for (int k = 0; k < 2; k++)
            if (held_names[k]) relay_send(1, held_names[k], &r);
        lsim_out_set_watch(relay_send, &r);
        rc = fn(ctx, err);
        lsim_out_set_watch(NULL, NULL);
        char done = '.';
        for (int q = 1; q < r.np; q++) MPI_Send(&done, 1, MPI_CHAR, q, 0, r.comm);
    } else {
        relay_hold(r.comm);
    }
    MPI_Comm_free(&r.comm);
    return lsim_mpi_agree(comm, rc, err);
}
