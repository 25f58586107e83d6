/* memlimit: the uncompressed size of plain and gzip inputs (checked against
 * what zlib writes), the estimate's properties, LUMOSIM_MEM_LIMIT parsing,
 * the system limit against /proc/meminfo, and the whole check refusing
 * with one message that names the input. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "lumosim/memlimit.h"
#include "check.h"

static uint64_t mem_total(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) break;
    if (f) fclose(f);
    return (uint64_t)kb << 10;
}

/* The match in parts (memlimit.h): bytes a collective kernel by hand
 * from the constants (20 held + 116 / parts rounded up), and the fewest
 * parts that fit, at the edges of each. */
static void match_parts(void)
{
    CHECK_I64(lsim_mem_match_bytes(0), 116);
    CHECK_I64(lsim_mem_match_bytes(1), 116);
    CHECK_I64(lsim_mem_match_bytes(2), 20 + 58);
    CHECK_I64(lsim_mem_match_bytes(3), 20 + 39);
    CHECK_I64(lsim_mem_match_bytes(16), 20 + 8);
    CHECK_I64(lsim_mem_match_parts(1000, 116000), 1);
    CHECK_I64(lsim_mem_match_parts(1000, 115999), 2);
    CHECK_I64(lsim_mem_match_parts(1000, 78000), 2);
    CHECK_I64(lsim_mem_match_parts(1000, 77999), 3);
    CHECK_I64(lsim_mem_match_parts(1000, 28000), 15); /* 116 / 15 and 116 / 16 both round up to 8 */
    CHECK_I64(lsim_mem_match_parts(1000, 27999), 0);
    CHECK_I64(lsim_mem_match_parts(0, 0), 1);
    /* 366.7 M kernels (the 98,304-GPU job of docs/scaling.md) in 20 GiB:
     * 3 parts need 59 B each, 21.64 GB > 21.47 GB; 4 need 49 B */
    CHECK_I64(lsim_mem_match_parts(366698496ull, 20ull << 30), 4);
}

int main(void)
{
    match_parts();
    char plain[] = "/tmp/lsim-memlimit-XXXXXX", gz[] = "/tmp/lsim-memlimit-gz-XXXXXX";
    int fd1 = mkstemp(plain), fd2 = mkstemp(gz);
    CHECK(fd1 >= 0 && fd2 >= 0);
    if (fd1 < 0 || fd2 < 0) return check_result("test_memlimit");
    close(fd1);
    close(fd2);

    /* 3,000,000 bytes of compressible JSON-ish text, written both ways */
    const size_t n = 3000000;
    char *buf = malloc(n);
    CHECK(buf != NULL);
    if (!buf) return check_result("test_memlimit");
    for (size_t i = 0; i < n; i++) buf[i] = "{\"ph\":\"X\",\"ts\":12.5},\n"[i % 23];
    FILE *f = fopen(plain, "wb");
    CHECK(f && fwrite(buf, 1, n, f) == n);
    if (f) fclose(f);
    gzFile z = gzopen(gz, "wb");
    CHECK(z && gzwrite(z, buf, (unsigned)n) == (int)n);
    if (z) gzclose(z);

    lsim_err err = {0};
    uint64_t b = 0;
    CHECK_I64(lsim_mem_input_bytes(plain, &b, &err), 0);
    CHECK_I64((int64_t)b, (int64_t)n);
    CHECK_I64(lsim_mem_input_bytes(gz, &b, &err), 0);
    CHECK_I64((int64_t)b, (int64_t)n); /* the gzip trailer, not the file size */
    CHECK(lsim_mem_input_bytes("/nonexistent/lsim.json", &b, &err) == LSIM_EIO);
    CHECK(strstr(err.msg, "/nonexistent/lsim.json") != NULL);

    /* the estimate: at least half the largest input, grows with every
     * input, does not depend on order */
    uint64_t one[1] = {1000000000}, two[2] = {1000000000, 500000000}, rev[2] = {500000000, 1000000000};
    CHECK(lsim_mem_estimate(one, 1) >= one[0] / 2);
    CHECK(lsim_mem_estimate(two, 2) > lsim_mem_estimate(one, 1));
    CHECK(lsim_mem_estimate(two, 2) == lsim_mem_estimate(rev, 2));
    CHECK(lsim_mem_estimate(two, 2) < two[0] + two[1]); /* graphs are smaller than JSON */

    /* LUMOSIM_MEM_LIMIT */
    const char *src = NULL;
    uint64_t lim = 1;
    setenv("LUMOSIM_MEM_LIMIT", "2G", 1);
    CHECK_I64(lsim_mem_limit(&lim, &src, &err), 0);
    CHECK_I64((int64_t)lim, (int64_t)2 << 30);
    CHECK_STR(src, "LUMOSIM_MEM_LIMIT");
    setenv("LUMOSIM_MEM_LIMIT", "512MiB", 1);
    CHECK_I64(lsim_mem_limit(&lim, &src, &err), 0);
    CHECK_I64((int64_t)lim, (int64_t)512 << 20);
    setenv("LUMOSIM_MEM_LIMIT", "123456", 1);
    CHECK_I64(lsim_mem_limit(&lim, &src, &err), 0);
    CHECK_I64((int64_t)lim, 123456);
    setenv("LUMOSIM_MEM_LIMIT", "0", 1);
    CHECK_I64(lsim_mem_limit(&lim, &src, &err), 0);
    CHECK_I64((int64_t)lim, 0);
    const char *bad[] = {"12x", "G", "-5M", "99999999999T", "1.5G"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("LUMOSIM_MEM_LIMIT", bad[i], 1);
        CHECK_MSG(lsim_mem_limit(&lim, &src, &err) == LSIM_EARG, "'%s' accepted", bad[i]);
    }
    CHECK(strstr(err.msg, "LUMOSIM_MEM_LIMIT") != NULL);

    /* the system's figure: positive and no more than the machine has */
    unsetenv("LUMOSIM_MEM_LIMIT");
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    unsetenv("SLURM_NTASKS_PER_NODE");
    unsetenv("MPI_LOCALNRANKS");
    CHECK_I64(lsim_mem_limit(&lim, &src, &err), 0);
    uint64_t mt = mem_total();
    CHECK(lim > 0);
    if (mt) CHECK_MSG(lim <= mt, "limit %llu > MemTotal %llu", (unsigned long long)lim, (unsigned long long)mt);
    /* divided between the ranks of this node */
    uint64_t alone = lim;
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
    CHECK_I64(lsim_mem_limit(&lim, &src, &err), 0);
    if (alone != UINT64_MAX) CHECK(lim <= alone / 4 + (alone / 4) / 10 && lim >= alone / 4 - (alone / 4) / 10);
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");

    /* the whole check */
    const char *paths[2] = {plain, gz};
    setenv("LUMOSIM_MEM_LIMIT", "1M", 1);
    memset(&err, 0, sizeof err);
    CHECK(lsim_mem_check_inputs(paths, 2, NULL, &err) == LSIM_ENOMEM);
    CHECK(strstr(err.msg, plain) != NULL || strstr(err.msg, gz) != NULL);
    CHECK(strstr(err.msg, "MiB") != NULL);
    setenv("LUMOSIM_MEM_LIMIT", "1G", 1);
    uint64_t total = 0;
    CHECK_I64(lsim_mem_check_inputs(paths, 2, &total, &err), 0);
    CHECK_I64((int64_t)total, 2 * (int64_t)n);
    setenv("LUMOSIM_MEM_LIMIT", "0", 1);
    total = 0;
    CHECK_I64(lsim_mem_check_inputs(paths, 2, &total, &err), 0);
    CHECK_I64((int64_t)total, 2 * (int64_t)n); /* sizes are still reported with the check off */

    /* disk: nothing needed is fine, more than any file system holds is
     * refused with the path, an unknown directory is left to the write */
    CHECK_I64(lsim_disk_check(plain, 0, &err), 0);
    CHECK_I64(lsim_disk_check(plain, 4096, &err), 0);
    memset(&err, 0, sizeof err);
    CHECK(lsim_disk_check(plain, (uint64_t)1 << 62, &err) == LSIM_EIO);
    CHECK(strstr(err.msg, plain) != NULL && strstr(err.msg, "free") != NULL);
    CHECK_I64(lsim_disk_check("/nonexistent-lsim/x.h5", (uint64_t)1 << 62, &err), 0);
    CHECK_I64(lsim_disk_check(NULL, 1, &err), 0);

    free(buf);
    remove(plain);
    remove(gz);
    return check_result("test_memlimit");
}
