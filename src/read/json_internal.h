/* Private to the JSON readers (src/read/kineto.c, src/read/et.c): the streaming
 * reader of src/read/json_scan.c, which finds each JSON value's extent without
 * building a document and walks a top-level object, and the per-value
 * cJSON arena. Both readers parse
 * one value (a trace event, an execution-trace node) at a time with cJSON
 * inside the arena (the Kineto reader reads plain events in place first:
 * src/read/kineto.c), so a large file never becomes one cJSON tree and the
 * allocator is not called per item.
 *
 * Everything is local and single-threaded: the arena is process-global (it
 * is cJSON's allocator, installed through cJSON_InitHooks on first use). */
#ifndef LUMOSIM_JSON_INTERNAL_H
#define LUMOSIM_JSON_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <zlib.h>

#include "lumosim/common.h"
#include "lumosim/kineto.h" /* lsim_progress_fn */

/* cJSON values parsed between begin and end come from one reusable 4 MiB
 * block; cJSON_Delete on them is a no-op. A value larger than the block
 * spills into malloc: lsim_json_arena_end returns 1 when that happened, and
 * the caller must then cJSON_Delete what it parsed before the next begin.
 * begin: 0 or LSIM_ENOMEM. */
int lsim_json_arena_begin(void);
int lsim_json_arena_end(void);
/* Between begin and end: the bytes left in the block, and n of them taken
 * (16-aligned) for nodes the caller links itself (the Kineto reader's
 * plain values); take never spills, so the caller checks room first. */
typedef struct lsim_json_arena_state {
    char *base;
    size_t used, cap;
    int active;
    unsigned long fallbacks; /* allocations that did not fit */
} lsim_json_arena_state;
extern lsim_json_arena_state lsim_json_arena_g; /* json_scan.c's; read through these two */
static inline size_t lsim_json_arena_room(void)
{
    return lsim_json_arena_g.active ? lsim_json_arena_g.cap - lsim_json_arena_g.used : 0;
}
static inline void *lsim_json_arena_take(size_t n)
{
    void *p = lsim_json_arena_g.base + lsim_json_arena_g.used;
    lsim_json_arena_g.used += (n + 15u) & ~(size_t)15u;
    return p;
}

/* The source, read in windows: a gzip stream (gz) or memory (mem, memlen);
 * buf[pos, end) holds the bytes read and not consumed (buf has cap + 1
 * bytes: a NUL may follow end), consumed counts those before buf[0]. The
 * caller sets the source, label, err and a buffer of cap + 1 bytes (eof
 * when the source is empty), and frees buf. progress, when set, is told
 * every 16 MiB of a gzip stream. */
typedef struct lsim_json_reader {
    const char *label;
    gzFile gz;
    const char *mem;
    size_t memlen, mempos;
    char *buf;
    size_t cap, pos, end; /* valid bytes [pos, end) */
    uint64_t consumed;    /* bytes before buf[0] */
    int eof;
    lsim_err *err;
    lsim_progress_fn progress;
    void *progress_ctx;
    uint64_t next_progress;
} lsim_json_reader;

/* At least `need` bytes from pos, or the end of the input: [pos, end) is
 * moved to the front and the buffer grown when needed. 0, or LSIM_ENOMEM /
 * LSIM_EFORMAT (a broken gzip stream) with err. */
int lsim_json_fill(lsim_json_reader *r, size_t need);
/* "LABEL: malformed JSON at byte N: what" (N from the input's start);
 * LSIM_EFORMAT. */
int lsim_json_syntax_error(lsim_json_reader *r, size_t at, const char *what);
/* Past whitespace: the next byte, -1 at the end of the input, or -2 with
 * *rc set when reading failed. Inline: the walk calls it twice an element. */
static inline int lsim_json_peek(lsim_json_reader *r, int *rc)
{
    for (;;) {
        while (r->pos < r->end) {
            unsigned char c = (unsigned char)r->buf[r->pos];
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
                r->pos++;
                continue;
            }
            return c;
        }
        *rc = lsim_json_fill(r, 1);
        if (*rc) return -2;
        if (r->pos >= r->end) return -1;
    }
}
/* The bytes that end a run of number, literal or whitespace characters. */
extern const unsigned char lsim_json_structural[256];

/* Where a plain object's members are (lsim_json_scan_fields): the value of
 * the member in slot x at offsets off[x], len[x] from the object's '{', when
 * bit x of have is set. A repeated key keeps its last value, as cJSON's
 * lookup does. */
enum { LSIM_JSON_FIELDS_MAX = 64 };
typedef struct lsim_json_fields {
    uint64_t have;
    uint32_t off[LSIM_JSON_FIELDS_MAX], len[LSIM_JSON_FIELDS_MAX];
} lsim_json_fields;

/* Where a trace event's own "ph", "ts" and "dur" values begin, relative to
 * the event's first byte (-1 absent); scan: where a plain event's members
 * are (lsim_json_scan_fields), NULL otherwise. */
typedef struct lsim_json_keys {
    long ph, ts, dur;
    const lsim_json_fields *scan;
} lsim_json_keys;
/* The extent of the JSON value at r->pos: buf[pos, pos + *len), which
 * stays there until pos moves. With keys and an object, where its
 * top-level ph, ts and dur values begin. 0 or a negative code. */
int lsim_json_extent(lsim_json_reader *r, size_t *len, lsim_json_keys *keys);

/* Which members of a plain object lsim_json_scan_fields records: top gives
 * the slot (0 .. LSIM_JSON_FIELDS_MAX - 1) of the object's own key k (kl
 * bytes, not NUL-terminated), or -1; the member in slot nest, when its value
 * is an object, has its members recorded too, by sub (a second nest member
 * makes the object not plain). The Kineto reader's: an event's own members
 * and those of its "args". */
typedef struct lsim_json_scan_spec {
    int (*top)(const char *k, size_t kl);
    int (*sub)(const char *k, size_t kl);
    int nest;
} lsim_json_scan_spec;
/* The object at r->pos, when it is plain: strict JSON (the four whitespace
 * bytes only, strict numbers of at most 60 characters), no backslash
 * anywhere, nesting under 32, at most one nest member. Then 1 with *len, vk
 * (ph, ts, dur as lsim_json_extent finds them; scan = sc) and sc (where the
 * members spec names are) filled. 0, reporting nothing, for anything else
 * (the caller then reads it with lsim_json_extent and cJSON), or a negative
 * code when reading failed. One pass over the text, no copy. */
int lsim_json_scan_fields(lsim_json_reader *r, const lsim_json_scan_spec *spec, size_t *len, lsim_json_keys *vk,
                          lsim_json_fields *sc);

/* cJSON items made from a plain object's text in place, without strtod,
 * equal to what cJSON would parse. plain_scalar: c made from the string,
 * literal or integer of at most 15 digits at s (n bytes; a string is
 * NUL-terminated over its closing quote): 1, or 0 for any other value, c
 * untouched. plain_tree: an array of such values and arrays, in nodes from
 * the arena (between lsim_json_arena_begin and end); NULL for anything
 * else, or when the arena has no room for it. */
struct cJSON;
int lsim_json_plain_scalar(struct cJSON *c, char *s, size_t n);
const struct cJSON *lsim_json_plain_tree(char *s, size_t n);

/* How a top-level object is walked (lsim_json_walk_top): the member `array`
 * streamed element by element, the others handed over whole. The Kineto
 * reader and lsim_json_walk_mem (the execution-trace reader) share it. */
typedef struct lsim_json_walk_cb {
    const char *array;
    int strict;  /* `array` must be an array: LSIM_ETRACE "ARRAY is not an array" otherwise */
    int bare;    /* a bare top-level array is `array` (the Chrome trace format allows it) */
    int keys;    /* find the ph/ts/dur of object elements (lsim_json_keys) */
    /* a faster extent of an object element (NULL: none): 1 with *len and
     * vk filled, 0 to leave it to lsim_json_extent, or a negative code */
    int (*extent)(void *ctx, lsim_json_reader *r, size_t *len, lsim_json_keys *vk);
    /* the element at r->buf + r->pos, len bytes; vk only for objects when keys */
    int (*element)(void *ctx, lsim_json_reader *r, size_t index, size_t len, const lsim_json_keys *vk);
    /* another member (or a non-array `array` when not strict): its value at r->buf + r->pos */
    int (*member)(void *ctx, lsim_json_reader *r, const char *key, size_t len);
    void *ctx;
} lsim_json_walk_cb;
/* The whole document from r->pos: the top-level object (or, with bare, an
 * array), then nothing but whitespace. *have_array: 1 when `array` was met
 * as an array. 0 or the first error (LSIM_EFORMAT, LSIM_ETRACE, a
 * callback's). Inline, with the array's walk: a caller whose callbacks are
 * known then calls them directly (the Kineto reader's event scan, inlined,
 * is 2.4 % of its ingest time: bench_replay on a 200 MB trace). */
static inline int lsim_json_expect(lsim_json_reader *r, char want, const char *what)
{
    int rc = 0;
    int c = lsim_json_peek(r, &rc);
    if (c == -2) return rc;
    if (c != want) return lsim_json_syntax_error(r, r->pos, what);
    r->pos++;
    return 0;
}


/* Streams the array whose '[' was just consumed. */
static inline __attribute__((always_inline)) int lsim_json_walk_array(const lsim_json_walk_cb *w, lsim_json_reader *r)
{
    int rc = 0;
    char eoi[96], sep[96];
    snprintf(eoi, sizeof eoi, "unexpected end of input inside %s", w->array);
    snprintf(sep, sizeof sep, "expected ',' or ']' in %s", w->array);
    int c = lsim_json_peek(r, &rc);
    if (c == -2) return rc;
    if (c == ']') {
        r->pos++;
        return 0;
    }
    for (size_t idx = 0;; idx++) {
        c = lsim_json_peek(r, &rc);
        if (c == -2) return rc;
        if (c == -1) return lsim_json_syntax_error(r, r->pos, eoi);
        size_t len;
        lsim_json_keys vk;
        int obj = c == '{' && w->keys;
        rc = 0;
        if (obj && w->extent && (rc = w->extent(w->ctx, r, &len, &vk)) < 0) return rc;
        if ((!obj || !rc) && (rc = lsim_json_extent(r, &len, obj ? &vk : NULL))) return rc;
        if ((rc = w->element(w->ctx, r, idx, len, obj ? &vk : NULL))) return rc;
        r->pos += len;
        c = lsim_json_peek(r, &rc);
        if (c == -2) return rc;
        if (c == ',') {
            r->pos++;
            continue;
        }
        if (c == ']') {
            r->pos++;
            return 0;
        }
        return lsim_json_syntax_error(r, r->pos, c == -1 ? eoi : sep);
    }
}

static inline __attribute__((always_inline)) int lsim_json_walk_top(const lsim_json_walk_cb *w, lsim_json_reader *r, int *have_array)
{
    int rc = 0;
    int c = lsim_json_peek(r, &rc);
    if (c == -2) return rc;
    if (c == -1) return lsim_err_set(r->err, LSIM_EFORMAT, "%s: file is empty", r->label);
    if (c == '[' && w->bare) {
        r->pos++;
        *have_array = 1;
        if ((rc = lsim_json_walk_array(w, r))) return rc;
        goto trailing;
    }
    if (c == '[') { /* not the object the caller reads: its members are missing */
        size_t vlen;
        if ((rc = lsim_json_extent(r, &vlen, NULL))) return rc;
        r->pos += vlen;
        goto trailing;
    }
    if (c != '{') return lsim_err_set(r->err, LSIM_EFORMAT, "%s: not JSON (expected '{' or '[' at start)", r->label);
    r->pos++;
    c = lsim_json_peek(r, &rc);
    if (c == -2) return rc;
    if (c == '}') {
        r->pos++;
        goto trailing;
    }
    for (;;) {
        c = lsim_json_peek(r, &rc);
        if (c == -2) return rc;
        if (c != '"') return lsim_json_syntax_error(r, r->pos, "expected a key");
        size_t klen;
        if ((rc = lsim_json_extent(r, &klen, NULL))) return rc;
        char key[64] = "";
        size_t kn = klen - 2 < sizeof key ? klen - 2 : sizeof key - 1;
        memcpy(key, r->buf + r->pos + 1, kn);
        key[kn] = '\0';
        r->pos += klen;
        if ((rc = lsim_json_expect(r, ':', "expected ':' after key"))) return rc;
        c = lsim_json_peek(r, &rc);
        if (c == -2) return rc;
        if (c == -1) return lsim_json_syntax_error(r, r->pos, "unexpected end of input");
        if (!strcmp(key, w->array) && c == '[') {
            r->pos++;
            *have_array = 1;
            if ((rc = lsim_json_walk_array(w, r))) return rc;
        } else if (!strcmp(key, w->array) && w->strict) {
            return lsim_err_set(r->err, LSIM_ETRACE, "%s: %s is not an array", r->label, w->array);
        } else {
            size_t vlen;
            if ((rc = lsim_json_extent(r, &vlen, NULL))) return rc;
            if (w->member && (rc = w->member(w->ctx, r, key, vlen))) return rc;
            r->pos += vlen;
        }
        c = lsim_json_peek(r, &rc);
        if (c == -2) return rc;
        if (c == ',') {
            r->pos++;
            continue;
        }
        if (c == '}') {
            r->pos++;
            break;
        }
        return lsim_json_syntax_error(r, r->pos, c == -1 ? "unexpected end of input" : "expected ',' or '}'");
    }
trailing:
    c = lsim_json_peek(r, &rc);
    if (c == -2) return rc;
    if (c != -1) return lsim_json_syntax_error(r, r->pos, "trailing data after the JSON document");
    return 0;
}


/* A top-level JSON object read member by member from text (len bytes):
 * `array`'s value, when it is an array, element by element (element(ctx,
 * index, value, length)); every other member, and `array` when it is not
 * an array, whole (member(ctx, key, value, length); keys longer than 63
 * bytes are cut). The values are borrowed for the call only. A callback's
 * non-zero return stops the walk and is returned. *saw_array: 1 when
 * `array` was met as an array. Malformed JSON: LSIM_EFORMAT, "LABEL:
 * malformed JSON at byte N: what". Local. */
typedef struct lsim_json_walk {
    const char *array;
    int (*element)(void *ctx, size_t index, const char *val, size_t len);
    int (*member)(void *ctx, const char *key, const char *val, size_t len);
    void *ctx;
} lsim_json_walk;
int lsim_json_walk_mem(const char *label, const char *text, size_t len, const lsim_json_walk *w, int *saw_array,
                       lsim_err *err);

#endif
