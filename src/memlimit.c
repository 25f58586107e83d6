/* Up-front memory check (see memlimit.h). */
#include "lumosim/memlimit.h"
#include "lumosim/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include "lumosim/input.h"

int lsim_mem_input_bytes(const char *path, uint64_t *bytes, lsim_err *err)
{
    FILE *f = NULL;
    unsigned char head[2], tail[4];
    long long size = -1;
    int rc = lsim_input_fopen(path, &f, err); /* a FIFO is refused, never waited on */
    if (rc) return rc;
    if (fseeko(f, 0, SEEK_END) != 0 || (size = (long long)ftello(f)) < 0) {
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot tell its size", path);
        goto cleanup;
    }
    *bytes = (uint64_t)size;
    /* gzip: the trailer holds the uncompressed size mod 2^32; inputs over
     * 4 GiB wrap, so add 2^32 until it is at least the compressed size
     * (still an underestimate for huge files, never absurd) */
    if (size >= 18 && fseeko(f, 0, SEEK_SET) == 0 && fread(head, 1, 2, f) == 2 && head[0] == 0x1f && head[1] == 0x8b &&
        fseeko(f, -4, SEEK_END) == 0 && fread(tail, 1, 4, f) == 4) {
        uint64_t u = (uint64_t)tail[0] | (uint64_t)tail[1] << 8 | (uint64_t)tail[2] << 16 | (uint64_t)tail[3] << 24;
        while (u < (uint64_t)size) u += (uint64_t)1 << 32;
        *bytes = u;
    }
cleanup:
    fclose(f);
    return rc;
}

uint64_t lsim_mem_estimate(const uint64_t *sizes, size_t n)
{
    uint64_t sum = 0, max = 0;
    for (size_t i = 0; i < n; i++) {
        sum += sizes[i];
        if (sizes[i] > max) max = sizes[i];
    }
    /* fixed footprint (libraries, MPI, HDF5) + the trace being parsed + the
     * graphs kept */
    return ((uint64_t)32 << 20) + max / 2 + (sum - max) / 4;
}

static int parse_size(const char *s, uint64_t *out)
{
    char *e = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &e, 10);
    if (e == s || errno || s[0] == '-') return -1;
    int sh = 0;
    switch (*e) {
    case 'k': case 'K': sh = 10; e++; break;
    case 'm': case 'M': sh = 20; e++; break;
    case 'g': case 'G': sh = 30; e++; break;
    case 't': case 'T': sh = 40; e++; break;
    default: break;
    }
    if (*e == 'i' && sh) e++;
    if ((*e == 'B' || *e == 'b') && (sh || e[1] == '\0')) e++;
    if (*e || (sh && v > (UINT64_MAX >> sh))) return -1;
    *out = (uint64_t)v << sh;
    return 0;
}

/* A "key: N kB" line of /proc/meminfo, in bytes; 0 when absent. */
static uint64_t meminfo(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    uint64_t v = 0;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            v = strtoull(line + kl + 1, NULL, 10) << 10;
            break;
        }
    if (f) fclose(f);
    return v;
}

static uint64_t cgroup_max(void)
{
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    char buf[64] = "";
    uint64_t v = UINT64_MAX;
    if (f && fgets(buf, sizeof buf, f) && buf[0] >= '0' && buf[0] <= '9') v = strtoull(buf, NULL, 10);
    if (f) fclose(f);
    return v;
}

static unsigned ranks_on_node(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *s = getenv(vars[i]);
        long v = s ? strtol(s, NULL, 10) : 0;
        if (v > 0) return (unsigned)v;
    }
    return 1;
}

int lsim_mem_limit(uint64_t *limit, const char **source, lsim_err *err)
{
    const char *env = getenv("LUMOSIM_MEM_LIMIT");
    if (env && *env) {
        if (parse_size(env, limit))
            return lsim_err_set(err, LSIM_EARG, "LUMOSIM_MEM_LIMIT='%.40s': expected a size such as 8G, 512M or 0 (off)",
                                env);
        *source = "LUMOSIM_MEM_LIMIT";
        return 0;
    }
    uint64_t best = UINT64_MAX;
    *source = "nothing known";
    uint64_t avail = meminfo("MemAvailable");
    if (avail) {
        best = avail;
        *source = "MemAvailable in /proc/meminfo";
    }
    uint64_t cg = cgroup_max();
    if (cg < best) {
        best = cg;
        *source = "the cgroup's memory.max";
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < best) {
        best = (uint64_t)rl.rlim_cur;
        *source = "ulimit -v";
    }
    unsigned k = ranks_on_node();
    if (best != UINT64_MAX && k > 1) best /= k;
    *limit = best;
    return 0;
}

int lsim_mem_floor_check(lsim_err *err)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || (uint64_t)rl.rlim_cur >= LSIM_MEM_FLOOR_B)
        return 0;
    return lsim_err_set(err, LSIM_ENOMEM,
                        "the address space this process may use (ulimit -v) is %.1f MiB, below the %llu MiB lumosim "
                        "needs to start (its libraries: HDF5, Open MPI); raise ulimit -v",
                        (double)rl.rlim_cur / 1048576.0, (unsigned long long)(LSIM_MEM_FLOOR_B >> 20));
}

int lsim_mem_check_inputs(const char *const *paths, size_t n, uint64_t *total_bytes, lsim_err *err)
{
    if (total_bytes) *total_bytes = 0;
    uint64_t *sizes = NULL, limit = 0;
    const char *source = NULL;
    size_t big = 0;
    int rc = lsim_mem_limit(&limit, &source, err);
    if (rc || n == 0) goto cleanup;
    sizes = lsim_malloc(n * sizeof *sizes);
    if (!sizes) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        if ((rc = lsim_mem_input_bytes(paths[i], &sizes[i], err))) goto cleanup;
        if (sizes[i] > sizes[big]) big = i;
    }
    uint64_t need = lsim_mem_estimate(sizes, n), total = 0;
    for (size_t i = 0; i < n; i++) total += sizes[i];
    if (total_bytes) *total_bytes = total;
    if (limit != 0 && need > limit)
        rc = lsim_err_set(err, LSIM_ENOMEM,
                          "%s%s: these inputs (%.1f MB of JSON) need about %.1f MiB, more than the %.1f MiB this "
                          "process may use (%s); split them over more MPI ranks or nodes, or set LUMOSIM_MEM_LIMIT "
                          "(0 = no check)",
                          paths[big], n > 1 ? " and the others" : "", (double)total / 1e6, (double)need / 1048576.0,
                          (double)limit / 1048576.0, source);
cleanup:
    free(sizes);
    return rc;
}

int lsim_disk_check(const char *path, uint64_t need, lsim_err *err)
{
    if (!path || need == 0) return 0;
    char *dir = lsim_dir_of(path);
    if (!dir) return lsim_err_set(err, LSIM_ENOMEM, "out of memory");
    struct statvfs sv;
    int rc = 0;
    if (statvfs(dir, &sv) == 0) {
        uint64_t avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
        if (avail < need)
            rc = lsim_err_set(err, LSIM_EIO, "%s: needs about %.1f MiB, the file system of %s has %.1f MiB free", path,
                              (double)need / 1048576.0, dir, (double)avail / 1048576.0);
    }
    free(dir);
    return rc;
}

char *lsim_dir_of(const char *path)
{
    char *dir = lsim_malloc(strlen(path) + 2);
    if (!dir) return NULL;
    const char *slash = strrchr(path, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == path) strcpy(dir, "/");
    else {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
    }
    return dir;
}

uint64_t lsim_mem_estimate_graphs(uint64_t ngpu, uint64_t nodes, uint64_t edges, uint64_t strings)
{
    /* the coefficients of memlimit.h; saturated so that absurd counts
     * (a store's table claiming 2^60 nodes) give an absurd estimate, not a
     * wrapped small one */
    const uint64_t c[4] = {80u << 10, LSIM_MEM_NODE_B, 20, 48}, x[4] = {ngpu, nodes, edges, strings};
    uint64_t sum = (uint64_t)32 << 20;
    for (int i = 0; i < 4; i++) {
        if (x[i] && c[i] > UINT64_MAX / x[i]) return UINT64_MAX;
        if (sum > UINT64_MAX - c[i] * x[i]) return UINT64_MAX;
        sum += c[i] * x[i];
    }
    return sum;
}

uint64_t lsim_mem_nodes_at(uint64_t nodes, unsigned bytes)
{
    /* ceil(nodes * bytes / LSIM_MEM_NODE_B), split so that nodes * bytes
     * cannot overflow */
    uint64_t r = nodes % LSIM_MEM_NODE_B * bytes;
    return nodes / LSIM_MEM_NODE_B * bytes + r / LSIM_MEM_NODE_B + (r % LSIM_MEM_NODE_B != 0);
}

unsigned lsim_mem_match_bytes(unsigned parts)
{
    return parts <= 1 ? LSIM_MEM_MATCH_B : LSIM_MEM_MATCH_HELD_B + (LSIM_MEM_MATCH_B + parts - 1) / parts;
}

unsigned lsim_mem_match_parts(uint64_t colls, uint64_t room)
{
    for (unsigned p = 1; p <= LSIM_MATCH_PARTS_MAX; p++)
        if (colls <= room / lsim_mem_match_bytes(p)) return p;
    return 0;
}

uint64_t lsim_mem_shared_strings(uint64_t strings) { return strings / 4 + (strings % 4 != 0); }

/* Per-rank share of the job at K ranks, rounded up (a rank holds whole
 * GPUs). */
static uint64_t share(uint64_t x, uint64_t k) { return x / k + (x % k != 0); }

uint64_t lsim_mem_ranks_to_fit(uint64_t ngpu, uint64_t nodes, uint64_t edges, uint64_t strings, uint64_t limit)
{
    /* the estimate only falls as K grows (every term is a share of the
     * job, the fixed footprint stays), so bisect over 1..ngpu */
    if (ngpu == 0) return 0;
    uint64_t lo = 1, hi = ngpu;
    if (lsim_mem_estimate_graphs(1, share(nodes, ngpu), share(edges, ngpu), share(strings, ngpu)) > limit) return 0;
    while (lo < hi) {
        uint64_t k = lo + (hi - lo) / 2;
        if (lsim_mem_estimate_graphs(share(ngpu, k), share(nodes, k), share(edges, k), share(strings, k)) <= limit)
            hi = k;
        else
            lo = k + 1;
    }
    return lo;
}

/* A size for a message: GiB from 1 GiB up (what the brief of a job is
 * sized in), MiB below, so a small limit does not read "0.03 GiB". */
static void fmt_size(char *buf, size_t n, uint64_t bytes)
{
    if (bytes >= ((uint64_t)1 << 30)) snprintf(buf, n, "%.2f GiB", (double)bytes / 1073741824.0);
    else snprintf(buf, n, "%.1f MiB", (double)bytes / 1048576.0);
}

int lsim_mem_check_job(const char *what, const uint64_t mine[4], const uint64_t job[4], int ranks,
                       uint64_t shown_nodes, uint64_t shown_graphs, lsim_err *err)
{
    uint64_t limit = 0;
    const char *source = NULL;
    int rc = lsim_mem_limit(&limit, &source, err);
    if (rc || limit == 0) return rc;
    uint64_t need = lsim_mem_estimate_graphs(mine[0], mine[1], mine[2], mine[3]);
    if (need <= limit) return 0;
    uint64_t k = lsim_mem_ranks_to_fit(job[0], job[1], job[2], job[3], limit);
    char fit[320], sneed[32], slim[32];
    fmt_size(sneed, sizeof sneed, need);
    fmt_size(slim, sizeof slim, limit);
    if (ranks < 0 && k) /* issue 39: never advise what the command refuses; sim's archive it reads bounded */
        snprintf(fit, sizeof fit, "replay and report read every GPU in one process (they do not run under mpirun); "
                 "the job fits at K >= %llu MPI ranks: mpirun -np %llu lumosim sim STORE -o R.h5, then lumosim "
                 "report R.h5", (unsigned long long)k, (unsigned long long)k);
    else if (ranks <= 0)
        snprintf(fit, sizeof fit, "replay and report read every GPU in one process (they do not run under mpirun)");
    else if (k)
        snprintf(fit, sizeof fit, "the job fits at K >= %llu MPI ranks of %s each (mpirun -np %llu)",
                 (unsigned long long)k, slim, (unsigned long long)k);
    else
        snprintf(fit, sizeof fit, "no K fits: even one GPU per rank (K = %llu) needs more than %s",
                 (unsigned long long)job[0], slim);
    return lsim_err_set(err, LSIM_ENOMEM,
                        "%s: %llu graph(s) of %llu nodes and %llu edges in all need about %s per rank at K = %d, "
                        "more than the %s each rank may use (%s); %s, or use a smaller job, or set "
                        "LUMOSIM_MEM_LIMIT (0 = no check)",
                        what, (unsigned long long)shown_graphs, (unsigned long long)shown_nodes, (unsigned long long)mine[2],
                        sneed, ranks > 0 ? ranks : 1, slim, source, fit);
}

int lsim_mem_check_graphs(const char *what, uint64_t ngpu, uint64_t nodes, uint64_t edges, uint64_t strings,
                          lsim_err *err)
{
    const uint64_t all[4] = {ngpu, nodes, edges, strings};
    return lsim_mem_check_job(what, all, all, 1, nodes, ngpu, err);
}
