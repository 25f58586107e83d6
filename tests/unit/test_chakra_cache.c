/* Chakra export and import through a cache (chakra.h, lsim_chakra_cache)
 * against the same without it, on a synthesized job of 8 GPUs (TP 2, PP 2,
 * DP 2: two stages, each GPU of a stage of one structure):
 *  - every file written through the cache is byte for byte the file
 *    lsim_chakra_write packs whole (protobuf-c's own coding), also for a
 *    GPU whose processor ids and group names are longer than the
 *    reference's (their varints and strings change length) and one whose
 *    node name differs (packed whole, the others copied);
 *  - the cache made records of 3 graphs (the two stages, and a GPU of
 *    stage 0 with one node longer: as many nodes and the same tables, but
 *    another structure) and wrote the 5 others from them;
 *  - every file read back through a cache gives the graph lsim_chakra_read
 *    gives, array for array (columns, edges, tables, strings); 4 of 8 are
 *    taken from the previous GPU's structure (one, whose groups all have
 *    one name, with names of its own ids); a file with one node's duration
 *    changed is read whole and still equal. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "synth8.h"
#include "graph_same.h"

#include "lumosim/chakra.h"
#include "lumosim/strtab.h"
#include "lumosim/synth.h"

/* g written to memory, through cache (NULL: whole). */
static char *write_mem(const lsim_graph *g, lsim_chakra_cache *cache, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    lsim_err err;
    int rc = lsim_chakra_write_cached(f, "mem", g, NULL, cache, &err);
    fclose(f);
    CHECK_MSG(rc == 0, "%s", err.msg);
    return buf;
}

int main(void)
{
    lsim_graph *g[NG] = {NULL};
    if (synth_job(g)) return 1;
    lsim_err err;
    lsim_chakra_cache *cache = NULL;
    CHECK(lsim_chakra_cache_new(&cache, &err) == 0);

    /* GPU 5: longer processor ids and group names than GPU 4, its stage's
     * first; GPU 7: one node renamed in its own strings */
    for (uint32_t p = 0; p < g[5]->nprocs; p++) g[5]->procs[p].pid += (int64_t)1 << 40, g[5]->procs[p].tid += 1 << 20;
    uint32_t long_name;
    for (size_t i = 0; i < g[5]->ncoll; i++)
        if (g[5]->colls[i].pg_name != UINT32_MAX) {
            char s[256];
            snprintf(s, sizeof s, "%s-and-a-name-longer-by-more-than-one-hundred-and-twenty-seven-characters-so-that-"
                                  "its-length-takes-two-bytes-as-a-varint-where-it-took-one",
                     lsim_strtab_get(g[5]->strings, g[5]->colls[i].pg_name));
            CHECK(lsim_strtab_intern(g[5]->strings, s, strlen(s), &long_name) == 0);
            g[5]->colls[i].pg_name = long_name;
        }
    CHECK(lsim_strtab_replace(g[7]->strings, g[7]->name[g[7]->n / 2], "renamed_on_gpu_7", 16) == 0);
    /* GPU 3: one node 7 us longer than on GPU 0, its stage's first: as many
     * nodes, the same tables, another structure */
    g[3]->dur[g[3]->n / 4] += 7000;
    /* GPU 6: every group one name, so its file holds fewer strings before
     * its nodes' names, and their ids differ from GPU 4's */
    uint32_t one;
    CHECK(lsim_strtab_intern(g[6]->strings, "one-group", 9, &one) == 0);
    for (size_t i = 0; i < g[6]->ncoll; i++)
        if (g[6]->colls[i].pg_name != UINT32_MAX) g[6]->colls[i].pg_name = one;
    /* GPU 1: one of its groups named as a node is, so that its table holds
     * that name before its nodes' names: read through the cache, its table
     * cannot be GPU 0's with its own group names in their places */
    uint32_t grp = UINT32_MAX;
    for (size_t i = 0; i < g[1]->ncoll; i++)
        if (g[1]->colls[i].pg_name != UINT32_MAX && (grp == UINT32_MAX || g[1]->colls[i].pg_name == grp))
            grp = g[1]->colls[i].pg_name, g[1]->colls[i].pg_name = g[1]->name[g[1]->n / 2];
    CHECK(grp != UINT32_MAX);

    char dir[] = "/tmp/test_chakra_cache.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[NG][256];
    for (int i = 0; i < NG; i++) {
        size_t la, lb;
        char *a = write_mem(g[i], NULL, &la), *b = write_mem(g[i], cache, &lb);
        CHECK_MSG(la == lb && !memcmp(a, b, la), "GPU %d: %zu bytes whole, %zu through the cache", i, la, lb);
        snprintf(path[i], sizeof path[i], "%s/job.%d.et", dir, i);
        FILE *f = fopen(path[i], "wb");
        CHECK(f && fwrite(b, 1, lb, f) == lb);
        if (f) fclose(f);
        free(a);
        free(b);
    }
    uint64_t made, reused;
    lsim_chakra_cache_counts(cache, &made, &reused);
    CHECK_I64(made, 3);   /* stage 0's GPU 0, GPU 3 (its longer node), stage 1's GPU 4 */
    CHECK_I64(reused, 5); /* GPU 7 too: only its renamed node is packed whole */
    lsim_chakra_cache_free(cache);

    /* read back */
    lsim_graph *whole[NG] = {NULL}, *fast[NG] = {NULL};
    CHECK(lsim_chakra_cache_new(&cache, &err) == 0);
    for (int i = 0; i < NG; i++) {
        CHECK_MSG(lsim_chakra_read(path[i], i, NG, &whole[i], NULL, &err) == 0, "%s", err.msg);
        CHECK_MSG(lsim_chakra_read_cached(path[i], i, NG, &fast[i], NULL, cache, &err) == 0, "%s", err.msg);
        CHECK_MSG(whole[i] && fast[i] && graph_same(whole[i], fast[i]), "GPU %d read through the cache differs", i);
    }
    lsim_chakra_cache_counts(cache, &made, &reused);
    /* 0, 3 (its longer node is not 0's) and 4 read whole; 7's renamed
     * node is not 4's: read whole too */
    CHECK_I64(reused, 4);
    CHECK(fast[2]->share_refs && fast[2]->share_refs == fast[0]->share_refs);
    CHECK(fast[5]->share_refs && fast[5]->share_refs == fast[4]->share_refs);
    CHECK(memcmp(fast[6]->name, fast[4]->name, fast[4]->n * sizeof *fast[4]->name) != 0); /* its own names */
    CHECK(fast[6]->share_refs == NULL);
    /* GPUs 2 and 5 took their compared GPU's strings with their own group
     * names in their places (an overlay, strtab.h): their tables hold a
     * few strings of their own, not every name again. GPU 1 could not
     * (above): a table of its own, as large as GPU 0's. */
    CHECK(lsim_strtab_bytes(fast[2]->strings) * 8 < lsim_strtab_bytes(fast[0]->strings));
    CHECK(lsim_strtab_bytes(fast[5]->strings) * 8 < lsim_strtab_bytes(fast[4]->strings));
    CHECK(lsim_strtab_bytes(fast[1]->strings) * 2 > lsim_strtab_bytes(fast[0]->strings));
    CHECK(fast[1]->share_refs == NULL); /* its names' ids are its own */
    /* a file with one duration changed: read whole, the same graph */
    g[2]->dur[g[2]->n / 3] += 1000;
    {
        size_t lb;
        char *b = write_mem(g[2], NULL, &lb);
        FILE *f = fopen(path[2], "wb");
        CHECK(f && fwrite(b, 1, lb, f) == lb);
        if (f) fclose(f);
        free(b);
        lsim_graph *x = NULL, *y = NULL;
        CHECK(lsim_chakra_read(path[2], 2, NG, &x, NULL, &err) == 0);
        CHECK(lsim_chakra_read_cached(path[2], 2, NG, &y, NULL, cache, &err) == 0);
        uint64_t r2;
        lsim_chakra_cache_counts(cache, &made, &r2);
        CHECK_I64(r2, reused);
        CHECK(x && y && graph_same(x, y) && x->dur[x->n / 3] == whole[2]->dur[x->n / 3] + 1000);
        lsim_graph_free(x);
        lsim_graph_free(y);
    }
    lsim_chakra_cache_free(cache);
    for (int i = 0; i < NG; i++) {
        lsim_graph_free(whole[i]);
        lsim_graph_free(fast[i]);
        lsim_graph_free(g[i]);
        unlink(path[i]);
    }
    rmdir(dir);
    return check_result("test_chakra_cache");
}
