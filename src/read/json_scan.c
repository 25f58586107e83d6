/* The streaming JSON reader the trace readers share (json_internal.h): the
 * source (a gzip stream or memory) read in windows, the extent of each
 * value found without building a document, the top-level object walked
 * member by member with one array streamed element by element, and the
 * per-value cJSON arena; and, for plain objects, a one-pass scan that notes
 * where named members are and cJSON items made from their text in place
 * (src/read/kineto.c's fast path for trace events, through an extent
 * callback). src/read/et.c walks execution-trace nodes.
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
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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


/* ----------------------------------------- plain objects, read in place */

/* Nesting past this makes an object not plain (the caller then reads it
 * with lsim_json_extent and cJSON, as any object the fast path does not
 * take). */
enum { SCAN_MAXDEPTH = 32 };

/* At least `need` bytes from r->pos, or what is left: 1 when there are that
 * many, 0 at the end of the input, or a negative code. */
static int more(lsim_json_reader *r, size_t need)
{
    if (r->end - r->pos >= need) return 1;
    int rc = lsim_json_fill(r, need);
    if (rc) return rc;
    return r->end - r->pos >= need;
}

/* A window of the reader's buffer, b[0, n) with b[n] == '\0', scanned for
 * one plain object (lsim_json_scan_fields). */
typedef struct scanner {
    const char *b;
    size_t n;
    int eof;   /* the window holds the rest of the input */
    int short_; /* the scan failed near the window's end: retry with more */
    int nested; /* the object's spec->nest member was met */
    const lsim_json_scan_spec *spec;
    lsim_json_keys *vk;
    lsim_json_fields *sc;
} scanner;

#define SCAN_FAIL ((size_t)-1)

static size_t scan_fail(scanner *s, size_t at)
{
    if (!s->eof && at + 64 >= s->n) s->short_ = 1;
    return SCAN_FAIL;
}

/* JSON's four whitespace bytes. */
static const unsigned char k_space[256] = {[' '] = 1, ['\n'] = 1, ['\r'] = 1, ['\t'] = 1};

/* Past whitespace; the window's NUL stops it. Kineto indents its events, so
 * this runs over a good part of every file. */
static inline size_t skip_ws(const char *b, size_t i)
{
    while (k_space[(unsigned char)b[i]]) i++;
    return i;
}

/* Past a run of decimal digits, 8 at a time while 8 bytes are there (the
 * window ends at n). */
static inline size_t skip_digits(const char *s, size_t i, size_t n)
{
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        /* each byte 0x30..0x39: high nibble 3, and adding 6 keeps it 3 */
        uint64_t bad = ((x & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull) |
                       (((x + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull);
        if (bad) break;
    }
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    return i;
}

/* The string whose opening quote is at i: the offset after its closing
 * quote, when it holds no backslash. One pass for both bytes, 16 at a time
 * where SSE2 is there (x86-64 always): most keys are shorter than a call
 * to memchr is worth, and most names longer. */
static inline size_t scan_string(scanner *s, size_t i)
{
    const char *b = s->b;
    size_t n = s->n, j = i + 1;
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    for (; j + 16 <= n; j += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(b + j));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)));
        if (m) {
            j += (size_t)__builtin_ctz(m);
            return b[j] == '"' ? j + 1 : SCAN_FAIL;
        }
    }
#endif
    for (; j < n; j++)
        if (b[j] == '"' || b[j] == '\\') return b[j] == '"' ? j + 1 : SCAN_FAIL;
    return scan_fail(s, n);
}

/* Length of the strict JSON number at s (at most n bytes are there):
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, or 0 when s does not
 * begin with one. What follows it is the caller's to check. */
static inline size_t plain_number(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-') i++;
    if (i >= n || s[i] < '0' || s[i] > '9') return 0;
    if (s[i++] != '0') i = skip_digits(s, i, n);
    if (i < n && s[i] == '.') {
        size_t d = ++i;
        i = skip_digits(s, i, n);
        if (i == d) return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == d) return 0;
    }
    return i;
}

static size_t scan_object(scanner *s, size_t i, int depth, int members);
/* not inlined, and scan_value always: most values are scalars, and GCC
 * otherwise inlines this into scan_value and calls that for each value */
static size_t scan_container(scanner *s, size_t i, int depth) __attribute__((noinline));

/* The value at i (no whitespace before it): the offset after it. Strings
 * and numbers, most values, are scanned here inline; containers by
 * scan_container. */
static inline __attribute__((always_inline)) size_t scan_value(scanner *s, size_t i, int depth)
{
    const char *b = s->b;
    char c = b[i];
    if (c == '"') return scan_string(s, i);
    if (c == '{' || c == '[') return scan_container(s, i, depth);
    size_t k = 0;
    if (c == '-' || (c >= '0' && c <= '9')) k = plain_number(b + i, s->n - i);
    else if (c == 't' && s->n - i >= 4 && !memcmp(b + i, "true", 4)) k = 4;
    else if (c == 'f' && s->n - i >= 5 && !memcmp(b + i, "false", 5)) k = 5;
    else if (c == 'n' && s->n - i >= 4 && !memcmp(b + i, "null", 4)) k = 4;
    if (!k || k > 60) return scan_fail(s, i + 60); /* cJSON reads 63 characters of a number */
    return i + k;
}

/* The object or array at i, a value at nesting depth. */
static size_t scan_container(scanner *s, size_t i, int depth)
{
    const char *b = s->b;
    if (depth >= SCAN_MAXDEPTH) return SCAN_FAIL;
    if (b[i] == '{') return scan_object(s, i, depth + 1, 0);
    i = skip_ws(b, i + 1);
    if (b[i] == ']') return i + 1;
    for (;;) {
        if ((i = scan_value(s, i, depth + 1)) == SCAN_FAIL) return SCAN_FAIL;
        i = skip_ws(b, i);
        if (b[i] == ']') return i + 1;
        if (b[i] != ',') return scan_fail(s, i);
        i = skip_ws(b, i + 1);
    }
}

/* The object at i ('{'); members: 1 the scanned object's own (recorded by
 * spec->top, with ph, ts and dur), 2 its nest member's (recorded by
 * spec->sub), 0 none. */
static size_t scan_object(scanner *s, size_t i, int depth, int members)
{
    const char *b = s->b;
    lsim_json_fields *sc = s->sc;
    i = skip_ws(b, i + 1);
    if (b[i] == '}') return i + 1;
    for (;;) {
        if (b[i] != '"') return scan_fail(s, i);
        size_t k = i + 1;
        if ((i = scan_string(s, i)) == SCAN_FAIL) return SCAN_FAIL;
        size_t kl = i - 1 - k;
        i = skip_ws(b, i);
        if (b[i] != ':') return scan_fail(s, i);
        i = skip_ws(b, i + 1);
        int slot = -1, nest = 0;
        if (members == 1) {
            /* ph, ts and dur as lsim_json_extent finds them: the bytes alone */
            if (kl == 2 && b[k] == 'p' && b[k + 1] == 'h') s->vk->ph = (long)i;
            else if (kl == 2 && b[k] == 't' && b[k + 1] == 's') s->vk->ts = (long)i;
            else if (kl == 3 && !memcmp(b + k, "dur", 3)) s->vk->dur = (long)i;
            slot = s->spec->top(b + k, kl);
            if (slot >= 0 && slot == s->spec->nest) {
                if (s->nested++) return SCAN_FAIL; /* a second one: leave duplicates to cJSON */
                nest = b[i] == '{';
            }
        } else if (members == 2) {
            slot = s->spec->sub(b + k, kl);
        }
        size_t v = i;
        if (nest) i = depth >= SCAN_MAXDEPTH ? SCAN_FAIL : scan_object(s, i, depth + 1, 2);
        else i = scan_value(s, i, depth);
        if (i == SCAN_FAIL) return SCAN_FAIL;
        if (slot >= 0) {
            sc->have |= (uint64_t)1 << slot;
            sc->off[slot] = (uint32_t)v;
            sc->len[slot] = (uint32_t)(i - v);
        }
        i = skip_ws(b, i);
        if (b[i] == '}') return i + 1;
        if (b[i] != ',') return scan_fail(s, i);
        i = skip_ws(b, i + 1);
    }
}

/* Why: cJSON parsing each whole trace event was half of `replay` (number
 * conversions of fields never used, three strncmp per value); a plain
 * object is strict JSON, which cJSON accepts, so its members can be read in
 * place with the values cJSON would give. The scan reads a window of the
 * buffer ending in a NUL, so it never checks for the buffer's end; an
 * object that runs past the window is scanned again in a larger one. */
int lsim_json_scan_fields(lsim_json_reader *r, const lsim_json_scan_spec *spec, size_t *len, lsim_json_keys *vk,
                          lsim_json_fields *sc)
{
    size_t want = (size_t)1 << 16;
    for (;;) {
        int rc = more(r, want);
        if (rc < 0) return rc;
        size_t n = r->end - r->pos;
        if (n > UINT32_MAX) return 0; /* offsets are 32-bit: leave it to lsim_json_extent */
        r->buf[r->end] = '\0';        /* the buffer has cap + 1 bytes */
        scanner s = {r->buf + r->pos, n, r->eof, 0, 0, spec, vk, sc};
        sc->have = 0;
        vk->ph = vk->ts = vk->dur = -1;
        vk->scan = NULL;
        size_t i = scan_object(&s, 0, 1, 1);
        if (i != SCAN_FAIL) {
            *len = i;
            vk->scan = sc;
            return 1;
        }
        if (!s.short_) return 0;
        want = n * 2;
    }
}

/* Make c the item cJSON would make of a plain value's string, literal or
 * integer of at most 15 digits (exact as a double, as strtod gives it): the
 * string is made a C string in place, over its closing quote. 0 for
 * anything else (fractions, exponents, longer integers), c untouched. */
int lsim_json_plain_scalar(cJSON *c, char *s, size_t n)
{
    int type;
    double d = 0;
    switch (s[0]) {
    case '"': type = cJSON_String; break;
    case 't': type = cJSON_True; break;
    case 'f': type = cJSON_False; break;
    case 'n': type = cJSON_NULL; break;
    default: {
        size_t i = s[0] == '-';
        if (n - i > 15) return 0;
        int64_t x = 0;
        for (; i < n; i++) {
            if (s[i] < '0' || s[i] > '9') return 0;
            x = x * 10 + (s[i] - '0');
        }
        d = s[0] == '-' ? -(double)x : (double)x;
        type = cJSON_Number;
    }
    }
    memset(c, 0, sizeof *c);
    c->type = type;
    if (type == cJSON_String) {
        s[n - 1] = '\0';
        c->valuestring = s + 1;
    } else if (type == cJSON_Number) {
        c->valuedouble = d;
        c->valueint = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
    } else if (type == cJSON_True) {
        c->valueint = 1;
    }
    return 1;
}

/* The array at s[*i] (whose elements are arrays or what lsim_json_plain_scalar
 * takes, as lsim_json_plain_tree checked), linked as cJSON's parse_array links it,
 * in nodes from the arena; *i moves past it. */
static cJSON *tree_node(char *s, size_t *i, size_t end)
{
    cJSON *c = lsim_json_arena_take(sizeof *c);
    size_t j = *i;
    if (s[j] != '[') {
        size_t e = j + 1;
        if (s[j] == '"') e = (size_t)((char *)memchr(s + e, '"', end - e) - s) + 1;
        else
            while (e < end && !lsim_json_structural[(unsigned char)s[e]] && !k_space[(unsigned char)s[e]]) e++;
        lsim_json_plain_scalar(c, s + j, e - j);
        *i = e;
        return c;
    }
    memset(c, 0, sizeof *c);
    c->type = cJSON_Array;
    j = skip_ws(s, j + 1);
    cJSON *last = NULL;
    while (s[j] != ']') {
        cJSON *x = tree_node(s, &j, end);
        if (last) {
            last->next = x;
            x->prev = last;
        } else {
            c->child = x;
        }
        last = x;
        j = skip_ws(s, j);
        if (s[j] == ',') j = skip_ws(s, j + 1);
    }
    if (c->child) c->child->prev = last;
    *i = j + 1;
    return c;
}

/* The item cJSON would make of a plain array, when every number in
 * it is an integer lsim_json_plain_scalar takes and it holds no object (Kineto's Input Dims,
 * grid, block, Concrete Inputs, Input type), built from the text with no
 * strtod; NULL for anything else, or when the arena has no room for it (one
 * node per byte at most). */
const cJSON *lsim_json_plain_tree(char *s, size_t n)
{
    size_t digits = 0;
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            in_str = c != '"';
            continue;
        }
        if (c >= '0' && c <= '9') {
            if (++digits > 15) return NULL;
            continue;
        }
        if (c == '{' || c == '.' || ((c == 'e' || c == 'E') && digits)) return NULL;
        digits = 0;
        in_str = c == '"';
    }
    if (lsim_json_arena_room() / ((sizeof(cJSON) + 15u) & ~(size_t)15u) < n) return NULL;
    size_t i = 0;
    return tree_node(s, &i, n);
}
