/* The streaming JSON reader the trace readers share (json_internal.h): the
 * source (a gzip stream or memory) read in windows, the extent of each
 * value found without building a document, the top-level object walked
 * member by member with one array streamed element by element, and the
 * per-value cJSON arena. src/read/kineto.c adds its fast path for plain trace
 * events (an extent callback); src/read/et.c walks execution-trace nodes.
 *
 * Why hand-written scanning at all: cJSON parses whole documents, and traces
 * run to gigabytes. So the walk finds the extent of each element (strings,
 * escapes and nesting handled), and notes where a trace event's own "ph",
 * "ts" and "dur" values are, so that non-complete events (flows, metadata)
 * are skipped without parsing and timestamps are converted exactly from
 * their decimal text (cJSON's double cannot hold 1.7e15 us with
 * sub-microsecond digits). */
#include <stdio.h>
#include "lumosim/alloc.h"
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lumosim/input.h" /* lsim_gz_why */
#include "json_internal.h"

/* ------------------------------------------------------------------ arena */

lsim_json_arena_state lsim_json_arena_g;
#define g_arena lsim_json_arena_g

static void *arena_malloc(size_t sz)
{
    if (g_arena.active) {
        size_t a = (sz + 15u) & ~(size_t)15u;
        if (g_arena.cap - g_arena.used >= a) {
            void *p = g_arena.base + g_arena.used;
            g_arena.used += a;
            return p;
        }
        g_arena.fallbacks++;
    }
    return lsim_malloc(sz);
}

static void arena_free(void *p)
{
    char *c = p;
    if (g_arena.base && c >= g_arena.base && c < g_arena.base + g_arena.cap) return;
    free(p);
}

static int arena_begin(void)
{
    if (!g_arena.base) {
        g_arena.cap = (size_t)4 << 20;
        g_arena.base = lsim_malloc(g_arena.cap);
        if (!g_arena.base) return LSIM_ENOMEM;
        cJSON_Hooks h = {arena_malloc, arena_free};
        cJSON_InitHooks(&h);
    }
    g_arena.active = 1;
    g_arena.used = 0;
    return 0;
}

static void arena_end(void)
{
    g_arena.active = 0;
    g_arena.used = 0;
}

int lsim_json_arena_begin(void) { return arena_begin(); }



int lsim_json_arena_end(void)
{
    int spilled = g_arena.fallbacks != 0;
    g_arena.fallbacks = 0;
    arena_end();
    return spilled;
}


/* ----------------------------------------------------------------- source */

/* Make at least `need` bytes available from pos (or hit EOF). Keeps
 * [pos, end) and moves it to the front; grows the buffer if needed.
 * Returns 0 or a negative code (err filled). */
int lsim_json_fill(lsim_json_reader *r, size_t need)
{
    while (r->end - r->pos < need && !r->eof) {
        if (r->pos > 0) {
            memmove(r->buf, r->buf + r->pos, r->end - r->pos);
            r->consumed += r->pos;
            r->end -= r->pos;
            r->pos = 0;
        }
        if (r->cap - r->end < (size_t)1 << 16) {
            size_t nc = r->cap * 2;
            char *nb = lsim_realloc(r->buf, nc + 1);
            if (!nb) return lsim_err_set(r->err, LSIM_ENOMEM, "%s: out of memory while reading", r->label);
            r->buf = nb;
            r->cap = nc;
        }
        size_t want = r->cap - r->end;
        if (r->gz) {
            unsigned chunk = want > (1u << 30) ? (1u << 30) : (unsigned)want;
            int got = gzread(r->gz, r->buf + r->end, chunk);
            if (got <= 0) {
                int zerr = 0;
                (void)gzerror(r->gz, &zerr); /* its text repeats the path */
                if (got < 0 || (zerr != Z_OK && zerr != Z_STREAM_END))
                    return lsim_err_set(r->err, LSIM_EFORMAT, "%s: %s", r->label, lsim_gz_why(zerr));
                r->eof = 1;
            }
            r->end += (size_t)got;
            if (r->progress && r->consumed + r->end >= r->next_progress) {
                r->progress(r->progress_ctx, r->consumed + r->end);
                r->next_progress = r->consumed + r->end + ((uint64_t)16 << 20);
            }
        } else {
            size_t left = r->memlen - r->mempos;
            size_t n = left < want ? left : want;
            memcpy(r->buf + r->end, r->mem + r->mempos, n);
            r->mempos += n;
            r->end += n;
            if (r->mempos == r->memlen) r->eof = 1;
        }
    }
    return 0;
}

static uint64_t offset_of(const lsim_json_reader *r, size_t at) { return r->consumed + at; }

int lsim_json_syntax_error(lsim_json_reader *r, size_t at, const char *what)
{
    return lsim_err_set(r->err, LSIM_EFORMAT, "%s: malformed JSON at byte %llu: %s", r->label,
                        (unsigned long long)offset_of(r, at), what);
}



/* Bytes that end a run of number/literal/whitespace characters. */
const unsigned char lsim_json_structural[256] = {
    ['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1, [','] = 1, [':'] = 1,
};

/* Find the extent of the JSON value starting at r->pos. On success the value
 * is buf[r->pos, r->pos + *len) and stays there until r->pos moves. When keys
 * is given and the value is an object, records where its top-level "ph",
 * "ts" and "dur" values begin. */
int lsim_json_extent(lsim_json_reader *r, size_t *len, lsim_json_keys *keys)
{
    size_t i = 0; /* offset from r->pos */
    int depth = 0;
    int expect_key = 0, key_is = 0; /* key_is: 1 ph, 2 ts, 3 dur */
    int pending = 0;                /* value of key_is starts after ':' */
    if (keys) keys->ph = keys->ts = keys->dur = -1;
    for (;;) {
        if (r->pos + i >= r->end) {
            int rc = lsim_json_fill(r, i + 1);
            if (rc) return rc;
            if (r->pos + i >= r->end) return lsim_json_syntax_error(r, r->pos + i, "unexpected end of input");
        }
        const char *b = r->buf + r->pos;
        char c = b[i];
        switch (c) {
        case '"': {
            size_t s = i + 1, j = s;
            for (;;) {
                const char *q = NULL;
                if (r->pos + j < r->end) q = memchr(b + j, '"', r->end - r->pos - j);
                if (!q) {
                    size_t have = r->end - r->pos;
                    if (j < have) j = have; /* searched all of it */
                    int rc = lsim_json_fill(r, have + 1);
                    if (rc) return rc;
                    b = r->buf + r->pos;
                    if (r->end - r->pos <= have) return lsim_json_syntax_error(r, r->pos + i, "unterminated string");
                    /* a backslash right before the old end may escape the
                     * first new byte: back up over trailing backslashes */
                    while (j > s && b[j - 1] == '\\') j--;
                    continue;
                }
                j = (size_t)(q - b);
                size_t bs = 0;
                while (j - bs > s && b[j - bs - 1] == '\\') bs++;
                if (bs % 2 == 0) break;
                j++;
            }
            if (depth == 1 && expect_key && keys) {
                size_t kl = j - s;
                key_is = 0;
                if (kl == 2 && b[s] == 'p' && b[s + 1] == 'h') key_is = 1;
                else if (kl == 2 && b[s] == 't' && b[s + 1] == 's') key_is = 2;
                else if (kl == 3 && memcmp(b + s, "dur", 3) == 0) key_is = 3;
                expect_key = 0;
                pending = key_is;
            } else if (pending && depth == 1) {
                /* string value of ph (or a quoted ts) */
                pending = 0;
            }
            i = j + 1;
            if (depth == 0) {
                *len = i;
                return 0;
            }
            continue;
        }
        case '{':
        case '[':
            depth++;
            if (depth == 1 && c == '{') expect_key = 1;
            i++;
            continue;
        case '}':
        case ']':
            if (depth == 0) return lsim_json_syntax_error(r, r->pos + i, "unexpected closing bracket");
            depth--;
            i++;
            if (depth == 0) {
                *len = i;
                return 0;
            }
            continue;
        case ',':
            if (depth == 1) expect_key = 1;
            i++;
            continue;
        case ':':
            if (depth == 1 && pending && keys) {
                size_t v = i + 1;
                /* record value start (after whitespace; it is in the buffer
                 * or will be when we get there, offsets are relative) */
                for (;;) {
                    if (r->pos + v >= r->end) {
                        int rc = lsim_json_fill(r, v + 1);
                        if (rc) return rc;
                        if (r->pos + v >= r->end) return lsim_json_syntax_error(r, r->pos + v, "unexpected end of input");
                    }
                    char w = r->buf[r->pos + v];
                    if (w == ' ' || w == '\n' || w == '\r' || w == '\t') {
                        v++;
                        continue;
                    }
                    break;
                }
                if (pending == 1) keys->ph = (long)v;
                else if (pending == 2) keys->ts = (long)v;
                else keys->dur = (long)v;
                pending = 0;
            }
            i++;
            continue;
        default:
            if (depth == 0) {
                /* a primitive at top level: scan to a delimiter */
                size_t j = i;
                for (;;) {
                    if (r->pos + j >= r->end) {
                        int rc = lsim_json_fill(r, j + 1);
                        if (rc) return rc;
                        if (r->pos + j >= r->end) break;
                    }
                    char w = r->buf[r->pos + j];
                    if (w == ',' || w == '}' || w == ']' || w == ' ' || w == '\n' || w == '\r' || w == '\t')
                        break;
                    j++;
                }
                if (j == 0) return lsim_json_syntax_error(r, r->pos, "expected a value");
                *len = j;
                return 0;
            }
            i++;
            /* skip the rest of a number/literal/whitespace run at once */
            while (r->pos + i < r->end && !lsim_json_structural[(unsigned char)b[i]]) i++;
            continue;
        }
    }
}

/* ------------------------------------------------------------ the walk */

/* ------------------------------------------------- the shared JSON walker */

static int walk_element(void *ctx, lsim_json_reader *r, size_t index, size_t len, const lsim_json_keys *vk)
{
    const lsim_json_walk *w = ctx;
    (void)vk;
    return w->element ? w->element(w->ctx, index, r->buf + r->pos, len) : 0;
}

static int walk_member(void *ctx, lsim_json_reader *r, const char *key, size_t len)
{
    const lsim_json_walk *w = ctx;
    return w->member ? w->member(w->ctx, key, r->buf + r->pos, len) : 0;
}

int lsim_json_walk_mem(const char *label, const char *text, size_t len, const lsim_json_walk *w, int *saw_array,
                       lsim_err *err)
{
    /* the reader streams from memory in 1 MiB windows, as it does from gzip */
    lsim_json_reader r = {0};
    r.label = label;
    r.mem = text;
    r.memlen = len;
    r.err = err;
    r.eof = len == 0;
    r.cap = (size_t)1 << 20;
    *saw_array = 0;
    if (!(r.buf = lsim_malloc(r.cap + 1))) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", label);
    lsim_json_walk_cb cb = {w->array, 0, 0, 0, NULL, walk_element, walk_member, (void *)w};
    int rc = lsim_json_walk_top(&cb, &r, saw_array);
    free(r.buf);
    return rc;
}

