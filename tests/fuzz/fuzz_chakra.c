/* Fuzz target: the Chakra ET reader (io/chakra/chakra_read.c). Nothing may crash,
 * leak or hang on any input; a refused input must say why and return
 * nothing; a graph read must be within the bounds, and writing it out
 * (io/chakra/chakra.c) and reading that back must give the same node and edge
 * counts; written twice through a cache (lsim_chakra_cache: records made,
 * then copied), the same bytes as written whole; read twice through one
 * (read whole, then taken as the first's), the same graph twice.
 *
 * Built as fuzz_chakra (libFuzzer, -DLSIM_FUZZ=ON) and fuzz_chakra_run (the
 * seed corpus corpus_chakra/ replayed in every build); see
 * tests/fuzz/CMakeLists.txt. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_tmpfile.h"
#include "lumosim/chakra.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void free_attrs(char **a)
{
    for (int k = 0; k < LSIM_CHAKRA_NSTORE_ATTRS; k++) free(a[k]);
}

/* g written whole, and twice through a cache: three equal byte strings;
 * the file `path` (lumosim's) read twice through a cache: equal graphs. */
static void cached(const lsim_graph *g, const char *path)
{
    char *buf[3] = {NULL, NULL, NULL};
    size_t len[3];
    lsim_err err;
    lsim_chakra_cache *c = NULL;
    if (lsim_chakra_cache_new(&c, &err)) abort();
    for (int k = 0; k < 3; k++) {
        FILE *f = open_memstream(&buf[k], &len[k]);
        if (!f || lsim_chakra_write_cached(f, "mem", g, NULL, k ? c : NULL, &err)) abort();
        fclose(f);
    }
    if (len[1] != len[0] || len[2] != len[0] || memcmp(buf[1], buf[0], len[0]) || memcmp(buf[2], buf[0], len[0]))
        abort();
    for (int k = 0; k < 3; k++) free(buf[k]);
    lsim_chakra_cache_free(c);
    lsim_graph *a = NULL, *b = NULL;
    if (lsim_chakra_cache_new(&c, &err) || lsim_chakra_read_cached(path, 0, 2, &a, NULL, c, &err) ||
        lsim_chakra_read_cached(path, 0, 2, &b, NULL, c, &err))
        abort();
    if (a->n != b->n || a->nedges != b->nedges || (a->n && memcmp(a->dur, b->dur, a->n * sizeof *a->dur)) ||
        (a->n && memcmp(a->name, b->name, a->n * sizeof *a->name)) ||
        (a->nedges && memcmp(a->in_src, b->in_src, a->nedges * sizeof *a->in_src)))
        abort();
    lsim_chakra_cache_free(c);
    lsim_graph_free(b);
    lsim_graph_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char in[] = "/tmp/lsim_fuzz_chakra_XXXXXX", out[] = "/tmp/lsim_fuzz_chakra_out_XXXXXX";
    char *attrs[LSIM_CHAKRA_NSTORE_ATTRS], *attrs2[LSIM_CHAKRA_NSTORE_ATTRS];
    lsim_graph *g = NULL, *g2 = NULL;
    lsim_err err = {0};
    if (!fuzz_write_tmp(in, data, size)) return 0;
    int rc = lsim_chakra_read(in, 0, 2, &g, attrs, &err);
    unlink(in);
    if (rc) {
        if (g || !err.msg[0]) abort(); /* a failure must say why and return nothing */
        for (int k = 0; k < LSIM_CHAKRA_NSTORE_ATTRS; k++)
            if (attrs[k]) abort();
        return 0;
    }
    if (lsim_graph_check_bounds(g, "fuzz", 0, &err)) abort();
    if (!fuzz_write_tmp(out, (const uint8_t *)"", 0)) abort();
    FILE *f = fopen(out, "wb");
    if (!f || lsim_chakra_write(f, out, g, (const char *const *)attrs, &err)) abort();
    fclose(f);
    if (lsim_chakra_read(out, 0, 2, &g2, attrs2, &err)) abort(); /* what lumosim writes, it reads */
    if (g2->n != g->n || g2->nedges != g->nedges || g2->nprocs != g->nprocs || g2->ncoll != g->ncoll) abort();
    cached(g, out);
    unlink(out);
    free_attrs(attrs);
    free_attrs(attrs2);
    lsim_graph_free(g);
    lsim_graph_free(g2);
    return 0;
}
