/* Interned strings: open-addressing hash of ids into a block-allocated pool.
 * Blocks are never reallocated, so returned pointers stay valid. */
#include "lumosim/strtab.h"
#include "lumosim/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define BLOCK_MIN (1u << 16)

typedef struct block {
    struct block *next;
    size_t used, cap;
    char data[];
} block;

/* An overlay's own strings while it is sparse, sorted by id. */
typedef struct repl {
    uint32_t id, len;
    const char *s;
} repl;

struct lsim_strtab {
    lsim_strtab *base; /* overlay: the table whose strings strs[] points into */
    uint32_t refs;     /* this table's holders: its owner and its overlays */
    block *blocks;
    /* A sparse overlay (strs NULL): base's strings but for rep[0..nrep),
     * looked up by id; made dense (strs, lens) when first interned into or
     * reserved. */
    repl *rep;
    uint32_t nrep, caprep;
    const char **strs; /* id -> string */
    uint32_t *lens;
    uint32_t n, cap;
    uint32_t *slots; /* hash slot -> id+1 (0 = empty) */
    uint32_t nslots;
    size_t bytes;
    uint64_t text; /* every string's length + 1, summed (lsim_strtab_text) */
};

/* Eight bytes at a time, each word folded in by a multiply and a shift,
 * the result finished with splitmix64's mixer so that the low bits (the
 * slot) depend on every byte. Byte-at-a-time FNV-1a was half of
 * lsim_strtab_intern and a tenth of `synth` of the 4,096-GPU job (72 M
 * names interned; perf). Internal to the table: ids are given in insertion
 * order, so no output depends on the hash. Deterministic on one machine;
 * words are read in its byte order. */
#define mix64 lsim_mix64

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)len;
    for (; len >= 8; s += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    if (len) memcpy(&w, s, len); /* s may be NULL for "" */
    return mix64(h ^ w);
}

lsim_strtab *lsim_strtab_new(void)
{
    lsim_strtab *t = lsim_calloc(1, sizeof *t);
    if (!t) return NULL;
    t->refs = 1;
    t->nslots = 1024;
    t->slots = lsim_calloc(t->nslots, sizeof *t->slots);
    if (!t->slots) {
        free(t);
        return NULL;
    }
    return t;
}

/* Why an overlay: the GPUs that share a structure (graph.h) have string
 * tables that differ in a handful of names (their process groups), while
 * 55 bytes a string made the tables a quarter of a 16,384-GPU job's
 * memory. A copy of base's pointers and lengths (12 bytes a string) was
 * still a quarter of a 4,096-GPU job's peak (100 kB a GPU): an overlay
 * holds only the strings replaced in it, until something is interned. */
int lsim_strtab_new_overlay(lsim_strtab *base, lsim_strtab **out)
{
    *out = NULL;
    lsim_strtab *t = lsim_calloc(1, sizeof *t);
    if (!t) return LSIM_ENOMEM;
    t->n = base->n;
    t->text = base->text;
    t->refs = 1;
    t->base = base;
    base->refs++;
    *out = t;
    return 0;
}

static int sparse(const lsim_strtab *t) { return t->base && !t->strs; }

/* The replaced string with this id, or NULL. */
static const repl *find_rep(const lsim_strtab *t, uint32_t id)
{
    uint32_t lo = 0, hi = t->nrep;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->rep[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < t->nrep && t->rep[lo].id == id ? &t->rep[lo] : NULL;
}

/* A sparse overlay made dense: every id's pointer and length. */
static int densify(lsim_strtab *t)
{
    if (!sparse(t)) return 0;
    size_t n = t->n ? t->n : 1;
    const char **strs = lsim_malloc(n * sizeof *strs);
    uint32_t *lens = lsim_malloc(n * sizeof *lens);
    if (!strs || !lens) {
        free(strs);
        free(lens);
        return LSIM_ENOMEM;
    }
    for (uint32_t id = 0; id < t->n; id++) {
        const repl *r = find_rep(t, id);
        strs[id] = r ? r->s : lsim_strtab_get(t->base, id);
        lens[id] = r ? r->len : (uint32_t)strlen(strs[id]);
    }
    t->strs = strs;
    t->lens = lens;
    t->cap = t->n;
    free(t->rep);
    t->rep = NULL;
    t->nrep = t->caprep = 0;
    return 0;
}

void lsim_strtab_free(lsim_strtab *t)
{
    if (!t || --t->refs > 0) return;
    lsim_strtab_free(t->base);
    block *b = t->blocks;
    while (b) {
        block *n = b->next;
        free(b);
        b = n;
    }
    free(t->rep);
    free(t->strs);
    free(t->lens);
    free(t->slots);
    free(t);
}

/* The hash rebuilt with room for `room` strings at most half full (at
 * least double the old size, 1024 slots for a first one). */
static int rehash_for(lsim_strtab *t, uint64_t room)
{
    uint32_t ns = t->nslots ? t->nslots * 2 : 1024;
    while (room * 2 >= ns) ns *= 2;
    uint32_t *s = lsim_calloc(ns, sizeof *s);
    if (!s) return LSIM_ENOMEM;
    for (uint32_t id = 0; id < t->n; id++) {
        uint64_t h = hash_bytes(t->strs[id], t->lens[id]);
        uint32_t i = (uint32_t)h & (ns - 1);
        while (s[i]) i = (i + 1) & (ns - 1);
        s[i] = id + 1;
    }
    free(t->slots);
    t->slots = s;
    t->nslots = ns;
    return 0;
}

static int rehash(lsim_strtab *t) { return rehash_for(t, t->n); }

/* s[0..len) into t's newest block (a new one when it does not fit). */
static char *store(lsim_strtab *t, const char *s, size_t len)
{
    if (!t->blocks || t->blocks->cap - t->blocks->used < len + 1) {
        /* An overlay's first names are a handful: its blocks start small
         * and double (a 64 KiB block for a few process-group names was 64
         * kB a GPU of a synthesized job) */
        size_t bmin = t->base ? (t->blocks ? 2 * t->blocks->cap : 256) : BLOCK_MIN;
        if (bmin > BLOCK_MIN) bmin = BLOCK_MIN;
        size_t cap = len + 1 > bmin ? len + 1 : bmin;
        block *b = lsim_malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->next = t->blocks;
        b->used = 0;
        b->cap = cap;
        t->blocks = b;
        t->bytes += sizeof *b + cap;
    }
    char *dst = t->blocks->data + t->blocks->used;
    memcpy(dst, s, len);
    dst[len] = '\0';
    t->blocks->used += len + 1;
    return dst;
}

/* A sparse overlay's replacement: into rep[], kept sorted by id. */
static int replace_sparse(lsim_strtab *t, uint32_t id, const char *dst, size_t len)
{
    repl *r = (repl *)find_rep(t, id);
    if (!r) {
        if (t->nrep == t->caprep) {
            size_t c = t->caprep;
            if (LSIM_GROW(t->rep, &c, (size_t)t->nrep + 1)) return LSIM_ENOMEM;
            t->caprep = (uint32_t)c;
        }
        uint32_t at = t->nrep;
        while (at > 0 && t->rep[at - 1].id > id) at--;
        memmove(&t->rep[at + 1], &t->rep[at], (t->nrep - at) * sizeof *t->rep);
        t->nrep++;
        r = &t->rep[at];
    }
    *r = (repl){id, (uint32_t)len, dst};
    return 0;
}

int lsim_strtab_replace(lsim_strtab *t, uint32_t id, const char *s, size_t len)
{
    if (id >= t->n || len > UINT32_MAX) return LSIM_EARG;
    const char *old = lsim_strtab_get(t, id);
    size_t was = sparse(t) ? strlen(old) : t->lens[id];
    char *dst = store(t, s, len);
    if (!dst) return LSIM_ENOMEM;
    int rc = sparse(t) ? replace_sparse(t, id, dst, len) : 0;
    if (rc) return rc;
    t->text = t->text - was + len;
    if (sparse(t)) return 0;
    t->strs[id] = dst;
    t->lens[id] = (uint32_t)len;
    free(t->slots); /* rebuilt when next needed */
    t->slots = NULL;
    t->nslots = 0;
    return 0;
}

int lsim_strtab_find(const lsim_strtab *t, const char *s, size_t len, uint32_t *id)
{
    if (!t->slots) return 0;
    uint32_t i = (uint32_t)hash_bytes(s, len) & (t->nslots - 1);
    for (; t->slots[i]; i = (i + 1) & (t->nslots - 1)) {
        uint32_t cand = t->slots[i] - 1;
        if (t->lens[cand] == len && memcmp(t->strs[cand], s, len) == 0) {
            *id = cand;
            return 1;
        }
    }
    return 0;
}

int lsim_strtab_intern(lsim_strtab *t, const char *s, size_t len, uint32_t *id)
{
    if (!t->slots && (densify(t) || rehash(t))) return LSIM_ENOMEM; /* an overlay's first intern */
    uint64_t h = hash_bytes(s, len);
    uint32_t i = (uint32_t)h & (t->nslots - 1);
    while (t->slots[i]) {
        uint32_t cand = t->slots[i] - 1;
        if (t->lens[cand] == len && memcmp(t->strs[cand], s, len) == 0) {
            *id = cand;
            return 0;
        }
        i = (i + 1) & (t->nslots - 1);
    }
    if (t->n == t->cap) {
        size_t cs = t->cap, cl = t->cap; /* both arrays hold cap entries */
        if (LSIM_GROW(t->strs, &cs, (size_t)t->n + 1) || LSIM_GROW(t->lens, &cl, (size_t)t->n + 1)) return LSIM_ENOMEM;
        t->cap = (uint32_t)(cs < cl ? cs : cl);
    }
    char *dst = store(t, s, len);
    if (!dst) return LSIM_ENOMEM;
    uint32_t nid = t->n++;
    t->text += len + 1;
    t->strs[nid] = dst;
    t->lens[nid] = (uint32_t)len;
    t->slots[i] = nid + 1;
    *id = nid;
    if ((uint64_t)t->n * 2 > t->nslots) return rehash(t);
    return 0;
}

int lsim_strtab_reserve(lsim_strtab *t, uint32_t n)
{
    if (densify(t)) return LSIM_ENOMEM;
    if (n > t->cap) {
        size_t cs = t->cap, cl = t->cap;
        if (LSIM_GROW(t->strs, &cs, n) || LSIM_GROW(t->lens, &cl, n)) return LSIM_ENOMEM;
        t->cap = (uint32_t)(cs < cl ? cs : cl);
    }
    if (t->slots && (uint64_t)n * 2 > t->nslots && rehash_for(t, n)) return LSIM_ENOMEM;
    return 0;
}

const char *lsim_strtab_get(const lsim_strtab *t, uint32_t id)
{
    if (id >= t->n) return NULL;
    if (t->strs) return t->strs[id];
    const repl *r = find_rep(t, id); /* sparse overlay */
    return r ? r->s : lsim_strtab_get(t->base, id);
}

uint32_t lsim_strtab_count(const lsim_strtab *t) { return t->n; }
uint64_t lsim_strtab_text(const lsim_strtab *t) { return t->text; }
size_t lsim_strtab_bytes(const lsim_strtab *t)
{
    return t->bytes + (size_t)t->cap * (sizeof(char *) + 4) + (size_t)t->caprep * sizeof(repl) + (size_t)t->nslots * 4;
}
