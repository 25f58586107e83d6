/* gen_trace: make a large synthetic Kineto trace by repeating a real one.
 *
 *   gen_trace [options] SEED OUT
 *     SEED             a Kineto trace, plain JSON or gzip (detected by zlib)
 *     OUT              output path (plain JSON), "-" for stdout
 *     --reps K         repeat the seed's events K times (default 10)
 *     --size-mb N      instead: repeat until at least N*10^6 bytes are written
 *     --gap-us G       idle gap between repetitions in microseconds (1000)
 *     --compact        one compact JSON object per line (default mimics
 *                      Kineto's own layout, which has ~the same bytes/event
 *                      as real files, so MB/s figures stay comparable)
 *
 * The seed is small: it is loaded and its events parsed into memory (one cJSON
 * object per event). The output is streamed: repetition k of every event is
 * printed straight to the file, never kept.
 *
 * Rewriting per repetition k (k = 0 .. K-1):
 *   - ts += k * shift, shift = ceil(seed span) + gap, an integer number of
 *     microseconds, added exactly to the decimal value (no float rounding of
 *     1.7e15 µs timestamps);
 *   - ids += k * id_step, id_step = 1 + the largest id in the seed, for
 *     args.correlation, args["External id"],
 *     args.wait_on_cuda_event_record_corr_id and flow events' "id" (negative
 *     sentinels such as -1 are left alone), so every id stays unique and
 *     launch/kernel/flow pairs stay paired within a repetition;
 *   - "ProfilerStep#N" -> "ProfilerStep#(N + k * step_span)".
 * Metadata ("M") events, the profiler's "Trace" span and its global instant
 * markers are written once; the span and "Record Window End" are stretched
 * to cover all repetitions. Top-level fields other than traceEvents are
 * copied verbatim from the seed text, in their original order.
 *
 * Prints the bytes written (and K, events) to stderr-free stdout unless OUT
 * is "-". Exit status 0 on success, 1 on error, 2 on bad usage. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <zlib.h>

/* ------------------------------------------------------------------ */
/* output sink: counts bytes; a NULL FILE only counts (sizing pass)    */

typedef struct sink {
    FILE *f;
    uint64_t bytes;
    int failed;
} sink;

static void put(sink *s, const char *p, size_t n)
{
    s->bytes += n;
    if (s->f && n && fwrite(p, 1, n, s->f) != n)
        s->failed = 1;
}

static void puts_(sink *s, const char *p) { put(s, p, strlen(p)); }

static void putc_(sink *s, char c) { put(s, &c, 1); }

/* ------------------------------------------------------------------ */
/* seed loading                                                         */

static char *read_all(const char *path, size_t *len)
{
    gzFile gz = gzopen(path, "rb");
    if (!gz) {
        fprintf(stderr, "gen_trace: %s: cannot open: %s\n", path, strerror(errno));
        return NULL;
    }
    gzbuffer(gz, 1u << 20);
    size_t cap = 1u << 22, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        gzclose(gz);
        return NULL;
    }
    for (;;) {
        if (cap - n < (1u << 20)) {
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                gzclose(gz);
                fprintf(stderr, "gen_trace: out of memory\n");
                return NULL;
            }
            buf = nb;
        }
        int r = gzread(gz, buf + n, (unsigned)(cap - n));
        if (r < 0) {
            int zerr;
            fprintf(stderr, "gen_trace: %s: read error: %s\n", path, gzerror(gz, &zerr));
            free(buf);
            gzclose(gz);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    gzclose(gz);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p at '"': returns just past the closing quote, or NULL. */
static const char *skip_string(const char *p, const char *end)
{
    p++;
    while (p < end) {
        if (*p == '\\') {
            p += 2;
            continue;
        }
        if (*p == '"')
            return p + 1;
        p++;
    }
    return NULL;
}

/* Skip one JSON value starting at p (not whitespace). NULL if malformed. */
static const char *skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < end) {
            char c = *p;
            if (c == '"') {
                p = skip_string(p, end);
                if (!p)
                    return NULL;
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if (c == '}' || c == ']') {
                if (--depth == 0)
                    return p + 1;
            }
            p++;
        }
        return NULL;
    }
    /* number, true, false, null */
    const char *q = p;
    while (q < end && *q != ',' && *q != '}' && *q != ']' && *q != ' ' &&
           *q != '\n' && *q != '\r' && *q != '\t')
        q++;
    return q > p ? q : NULL;
}

typedef struct field {
    const char *key;  /* raw, with quotes */
    size_t keylen;
    const char *val;  /* raw value text */
    size_t vallen;
    int is_events;
} field;

/* How one seed event is repeated. */
enum { EV_REPEAT = 0, EV_ONCE, EV_ONCE_STRETCH, EV_ONCE_END };

typedef struct seed_ev {
    cJSON *obj;
    int mode;
    const char *ts_text; /* raw decimal text of "ts" in the seed, or NULL */
    size_t ts_len;
    int ts_exact;        /* ts_text is plain [digits][.digits]: shift exactly */
    int64_t ts_int;      /* its integer part */
    const char *ts_frac; /* its ".digits" tail (may be empty) */
    size_t ts_fraclen;
} seed_ev;

typedef struct seed {
    char *text;
    size_t len;
    field *fields;
    size_t nfields;
    seed_ev *ev;
    size_t nev;
    double span_lo, span_hi; /* µs */
    int64_t id_max;
    int64_t step_lo, step_hi;
    int has_steps;
} seed;

static int is_id_arg(const char *k)
{
    return strcmp(k, "correlation") == 0 || strcmp(k, "External id") == 0 ||
           strcmp(k, "wait_on_cuda_event_record_corr_id") == 0;
}

/* "ProfilerStep#N" with N all digits: returns 1 and N. */
static int profiler_step(const char *s, int64_t *n)
{
    static const char pre[] = "ProfilerStep#";
    if (strncmp(s, pre, sizeof pre - 1) != 0)
        return 0;
    const char *d = s + sizeof pre - 1;
    if (!*d)
        return 0;
    for (const char *q = d; *q; q++)
        if (*q < '0' || *q > '9')
            return 0;
    errno = 0;
    long long v = strtoll(d, NULL, 10);
    if (errno)
        return 0;
    *n = v;
    return 1;
}

/* The raw text of the top-level member `key` of the object text o[0..n). */
static int find_member(const char *o, size_t n, const char *key, const char **v,
                       size_t *vlen)
{
    const char *p = o, *end = o + n;
    size_t klen = strlen(key);
    p = skip_ws(p, end);
    if (p >= end || *p != '{')
        return 0;
    p++;
    for (;;) {
        p = skip_ws(p, end);
        if (p >= end || *p != '"')
            return 0;
        const char *k = p + 1;
        p = skip_string(p, end);
        if (!p)
            return 0;
        int match = (size_t)(p - 1 - k) == klen && memcmp(k, key, klen) == 0;
        p = skip_ws(p, end);
        if (p >= end || *p != ':')
            return 0;
        p = skip_ws(p + 1, end);
        const char *v0 = p;
        p = skip_value(p, end);
        if (!p)
            return 0;
        if (match) {
            *v = v0;
            *vlen = (size_t)(p - v0);
            return 1;
        }
        p = skip_ws(p, end);
        if (p >= end || *p != ',')
            return 0;
        p++;
    }
}

/* Split plain decimal text "123" / "123.456" (no sign, no exponent, integer
 * part fits comfortably in int64) so an integer can be added exactly. */
static int split_decimal(seed_ev *se)
{
    const char *t = se->ts_text, *e = t + se->ts_len, *q = t;
    int64_t ip = 0;
    int nd = 0;
    while (q < e && *q >= '0' && *q <= '9') {
        if (++nd > 17)
            return 0;
        ip = ip * 10 + (*q++ - '0');
    }
    if (nd == 0)
        return 0;
    const char *frac = q;
    if (q < e && *q == '.') {
        q++;
        if (q >= e)
            return 0;
        while (q < e && *q >= '0' && *q <= '9')
            q++;
    }
    if (q != e)
        return 0; /* sign, exponent, anything else: fall back to doubles */
    se->ts_int = ip;
    se->ts_frac = frac;
    se->ts_fraclen = (size_t)(e - frac);
    return 1;
}

static int load_seed(const char *path, seed *s)
{
    memset(s, 0, sizeof *s);
    s->text = read_all(path, &s->len);
    if (!s->text)
        return -1;
    const char *p = s->text, *end = s->text + s->len, *mark = p;
    /* skip a UTF-8 BOM */
    if (s->len >= 3 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
        (unsigned char)p[2] == 0xBF)
        p += 3;
    p = skip_ws(p, end);
    if (p >= end || *p != '{') {
        fprintf(stderr, "gen_trace: %s: not a JSON object\n", path);
        return -1;
    }
    p++;
    size_t capf = 16;
    s->fields = malloc(capf * sizeof *s->fields);
    const char *ev_lo = NULL, *ev_hi = NULL;
    for (;;) {
        p = skip_ws(p, end);
        if (p < end && *p == '}')
            break;
        if (p >= end || *p != '"')
            goto bad;
        const char *k = p;
        p = skip_string(p, end);
        if (!p)
            goto bad;
        size_t klen = (size_t)(p - k);
        p = skip_ws(p, end);
        if (p >= end || *p != ':')
            goto bad;
        p = skip_ws(p + 1, end);
        const char *v = p;
        mark = p;
        p = skip_value(p, end);
        if (!p)
            goto bad;
        if (s->nfields == capf) {
            capf *= 2;
            field *nf = realloc(s->fields, capf * sizeof *nf);
            if (!nf)
                goto oom;
            s->fields = nf;
        }
        field *f = &s->fields[s->nfields++];
        f->key = k;
        f->keylen = klen;
        f->val = v;
        f->vallen = (size_t)(p - v);
        f->is_events = klen == 13 && memcmp(k, "\"traceEvents\"", 13) == 0;
        if (f->is_events) {
            if (*v != '[')
                goto bad;
            ev_lo = v;
            ev_hi = p;
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == '}')
            break;
        goto bad;
    }
    if (!ev_lo) {
        fprintf(stderr, "gen_trace: %s: no traceEvents array\n", path);
        return -1;
    }

    /* parse each event on its own */
    size_t cap = 1024;
    s->ev = malloc(cap * sizeof *s->ev);
    if (!s->ev)
        goto oom;
    p = ev_lo + 1;
    for (;;) {
        p = skip_ws(p, ev_hi);
        if (p < ev_hi && *p == ']')
            break;
        const char *e0 = p;
        mark = p;
        p = skip_value(p, ev_hi);
        if (!p)
            goto bad;
        cJSON *o = cJSON_ParseWithLength(e0, (size_t)(p - e0));
        if (!o)
            goto bad;
        if (!cJSON_IsObject(o)) {
            cJSON_Delete(o);
        } else {
            if (s->nev == cap) {
                cap *= 2;
                seed_ev *ne = realloc(s->ev, cap * sizeof *ne);
                if (!ne)
                    goto oom;
                s->ev = ne;
            }
            seed_ev *se = &s->ev[s->nev++];
            memset(se, 0, sizeof *se);
            se->obj = o;
            if (find_member(e0, (size_t)(p - e0), "ts", &se->ts_text, &se->ts_len))
                se->ts_exact = split_decimal(se);
        }
        p = skip_ws(p, ev_hi);
        if (p < ev_hi && *p == ',') {
            p++;
            continue;
        }
        if (p < ev_hi && *p == ']')
            break;
        goto bad;
    }

    /* analyse */
    s->span_lo = HUGE_VAL;
    s->span_hi = -HUGE_VAL;
    s->id_max = -1;
    for (size_t i = 0; i < s->nev; i++) {
        seed_ev *se = &s->ev[i];
        cJSON *o = se->obj;
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "ph");
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(o, "cat");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(o, "ts");
        const cJSON *dur = cJSON_GetObjectItemCaseSensitive(o, "dur");
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "s");
        const char *phs = cJSON_IsString(ph) ? ph->valuestring : "";
        const char *cats = cJSON_IsString(cat) ? cat->valuestring : "";
        const char *names = cJSON_IsString(name) ? name->valuestring : "";
        if (strcmp(phs, "M") == 0)
            se->mode = EV_ONCE;
        else if (strcmp(cats, "Trace") == 0 && strcmp(phs, "X") == 0)
            se->mode = EV_ONCE_STRETCH;
        else if (strcmp(phs, "i") == 0 && cJSON_IsString(sc) &&
                 strcmp(sc->valuestring, "g") == 0)
            se->mode = strcmp(names, "Record Window End") == 0 ? EV_ONCE_END : EV_ONCE;
        if (cJSON_IsNumber(ts)) {
            if (se->mode != EV_ONCE || strcmp(phs, "M") != 0) {
                double lo = ts->valuedouble;
                double hi = lo + (cJSON_IsNumber(dur) && dur->valuedouble > 0 ? dur->valuedouble : 0);
                if (lo < s->span_lo)
                    s->span_lo = lo;
                if (hi > s->span_hi)
                    s->span_hi = hi;
            }
        }
        int64_t n;
        if (se->mode == EV_REPEAT && profiler_step(names, &n)) {
            if (!s->has_steps || n < s->step_lo)
                s->step_lo = n;
            if (!s->has_steps || n > s->step_hi)
                s->step_hi = n;
            s->has_steps = 1;
        }
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
        if (cJSON_IsNumber(id) && id->valuedouble > (double)s->id_max)
            s->id_max = (int64_t)id->valuedouble;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "args");
        if (cJSON_IsObject(args)) {
            for (const cJSON *a = args->child; a; a = a->next)
                if (a->string && cJSON_IsNumber(a) && is_id_arg(a->string) &&
                    a->valuedouble > (double)s->id_max)
                    s->id_max = (int64_t)a->valuedouble;
        }
    }
    if (!(s->span_hi >= s->span_lo)) {
        fprintf(stderr, "gen_trace: %s: no timed events\n", path);
        return -1;
    }
    return 0;
bad:
    fprintf(stderr, "gen_trace: %s: malformed or truncated JSON near byte %zu\n", path,
            (size_t)((p ? p : mark) - s->text));
    return -1;
oom:
    fprintf(stderr, "gen_trace: out of memory\n");
    return -1;
}

/* ------------------------------------------------------------------ */
/* printing                                                             */

static void put_string(sink *s, const char *str)
{
    putc_(s, '"');
    const char *run = str;
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        const char *esc = NULL;
        char ubuf[8];
        switch (*p) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (*p < 0x20) {
                snprintf(ubuf, sizeof ubuf, "\\u%04x", *p);
                esc = ubuf;
            }
        }
        if (esc) {
            put(s, run, (size_t)((const char *)p - run));
            puts_(s, esc);
            run = (const char *)p + 1;
        }
    }
    put(s, run, strlen(run));
    putc_(s, '"');
}

static void put_i64(sink *s, int64_t v)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)v);
    put(s, buf, (size_t)n);
}

/* A double as the shortest text that reads back as the same double. */
static void put_double(sink *s, double v)
{
    char buf[64];
    int n;
    if (!isfinite(v)) {
        puts_(s, "null");
        return;
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        n = snprintf(buf, sizeof buf, "%.0f", v);
        put(s, buf, (size_t)n);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (prec == 17 || strtod(buf, NULL) == v)
            break;
    }
    put(s, buf, (size_t)n);
}

/* The seed's ts text plus an integer number of microseconds, exactly. */
static void put_ts(sink *s, const seed_ev *se, const cJSON *ts, int64_t shift_us)
{
    if (se->ts_text && shift_us == 0) {
        put(s, se->ts_text, se->ts_len);
    } else if (se->ts_exact) {
        put_i64(s, se->ts_int + shift_us);
        put(s, se->ts_frac, se->ts_fraclen);
    } else {
        put_double(s, ts->valuedouble + (double)shift_us);
    }
}

static void put_value(sink *s, const cJSON *v, const char *sep);

static void put_compound(sink *s, const cJSON *v, const char *sep)
{
    int obj = cJSON_IsObject(v);
    putc_(s, obj ? '{' : '[');
    for (const cJSON *c = v->child; c; c = c->next) {
        if (c != v->child)
            puts_(s, sep);
        if (obj) {
            put_string(s, c->string ? c->string : "");
            puts_(s, ": ");
        }
        put_value(s, c, sep);
    }
    putc_(s, obj ? '}' : ']');
}

static void put_value(sink *s, const cJSON *v, const char *sep)
{
    if (cJSON_IsString(v))
        put_string(s, v->valuestring);
    else if (cJSON_IsNumber(v))
        put_double(s, v->valuedouble);
    else if (cJSON_IsTrue(v))
        puts_(s, "true");
    else if (cJSON_IsFalse(v))
        puts_(s, "false");
    else if (cJSON_IsObject(v) || cJSON_IsArray(v))
        put_compound(s, v, sep);
    else if (cJSON_IsRaw(v))
        puts_(s, v->valuestring);
    else
        puts_(s, "null");
}

typedef struct plan {
    int64_t reps;
    int64_t shift_us;   /* per repetition */
    int64_t id_step;
    int64_t step_span;  /* ProfilerStep numbers per repetition */
    int compact;
} plan;

static void put_id(sink *s, const cJSON *v, int64_t off)
{
    if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble == floor(v->valuedouble) &&
        v->valuedouble < 9007199254740992.0)
        put_i64(s, (int64_t)v->valuedouble + off);
    else
        put_value(s, v, ", ");
}

/* One event, repetition k (shift in µs already folded into tshift). */
static void put_event(sink *s, const seed_ev *se, const plan *pl, int64_t k)
{
    const cJSON *o = se->obj;
    int64_t tshift = 0, idoff = 0, stepoff = 0;
    if (se->mode == EV_REPEAT) {
        tshift = k * pl->shift_us;
        idoff = k * pl->id_step;
        stepoff = k * pl->step_span;
    } else if (se->mode == EV_ONCE_END) {
        tshift = (pl->reps - 1) * pl->shift_us;
    }
    const char *open = pl->compact ? "{" : "  {\n    ";
    const char *sep = pl->compact ? "," : ", ";
    puts_(s, open);
    const cJSON *args = NULL;
    int first = 1;
    for (const cJSON *c = o->child; c; c = c->next) {
        const char *key = c->string ? c->string : "";
        if (strcmp(key, "args") == 0 && cJSON_IsObject(c)) {
            args = c;
            continue;
        }
        if (!first)
            puts_(s, (!pl->compact && strcmp(key, "ts") == 0) ? ",\n    " : sep);
        first = 0;
        put_string(s, key);
        puts_(s, pl->compact ? ":" : ": ");
        if (strcmp(key, "ts") == 0 && cJSON_IsNumber(c)) {
            put_ts(s, se, c, tshift);
        } else if (strcmp(key, "dur") == 0 && se->mode == EV_ONCE_STRETCH &&
                   cJSON_IsNumber(c)) {
            put_double(s, c->valuedouble + (double)((pl->reps - 1) * pl->shift_us));
        } else if (strcmp(key, "id") == 0) {
            put_id(s, c, idoff);
        } else if (strcmp(key, "name") == 0 && cJSON_IsString(c) && stepoff) {
            int64_t n;
            if (profiler_step(c->valuestring, &n)) {
                char buf[64];
                snprintf(buf, sizeof buf, "ProfilerStep#%lld", (long long)(n + stepoff));
                put_string(s, buf);
            } else {
                put_string(s, c->valuestring);
            }
        } else {
            put_value(s, c, ", ");
        }
    }
    if (args) {
        if (!first)
            puts_(s, pl->compact ? "," : ",\n    ");
        puts_(s, pl->compact ? "\"args\":{" : "\"args\": {\n      ");
        for (const cJSON *a = args->child; a; a = a->next) {
            if (a != args->child)
                putc_(s, ',');
            put_string(s, a->string ? a->string : "");
            puts_(s, pl->compact ? ":" : ": ");
            if (a->string && is_id_arg(a->string) && idoff)
                put_id(s, a, idoff);
            else
                put_value(s, a, ", ");
        }
        puts_(s, pl->compact ? "}" : "\n    }");
    }
    puts_(s, pl->compact ? "}" : "\n  }");
}

/* Writes the whole document; returns bytes (sink counts). */
static void put_document(sink *s, const seed *sd, const plan *pl)
{
    int first_ev = 1;
    puts_(s, "{\n  ");
    for (size_t i = 0; i < sd->nfields; i++) {
        const field *f = &sd->fields[i];
        if (i)
            puts_(s, ",\n  ");
        put(s, f->key, f->keylen);
        puts_(s, ": ");
        if (!f->is_events) {
            put(s, f->val, f->vallen);
            continue;
        }
        puts_(s, "[\n");
        for (int64_t k = 0; k < pl->reps && !s->failed; k++) {
            for (size_t j = 0; j < sd->nev; j++) {
                const seed_ev *se = &sd->ev[j];
                if (se->mode != EV_REPEAT && k != 0)
                    continue;
                if (!first_ev)
                    puts_(s, ",\n");
                first_ev = 0;
                put_event(s, se, pl, k);
            }
        }
        puts_(s, "\n  ]");
    }
    puts_(s, "\n}\n");
}

static void usage(void)
{
    fprintf(stderr,
            "usage: gen_trace [--reps K | --size-mb N] [--gap-us G] [--compact] SEED OUT\n"
            "  Repeats SEED's traceEvents (shifted in time, ids offset) into OUT\n"
            "  (plain JSON, '-' for stdout). MB = 10^6 bytes.\n");
}

int main(int argc, char **argv)
{
    int64_t reps = -1;
    double size_mb = -1;
    int64_t gap_us = 1000;
    int compact = 0;
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--reps") == 0 && i + 1 < argc) {
            reps = strtoll(argv[++i], NULL, 10);
        } else if (strcmp(a, "--size-mb") == 0 && i + 1 < argc) {
            size_mb = strtod(argv[++i], NULL);
        } else if (strcmp(a, "--gap-us") == 0 && i + 1 < argc) {
            gap_us = strtoll(argv[++i], NULL, 10);
        } else if (strcmp(a, "--compact") == 0) {
            compact = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            return 0;
        } else if (a[0] == '-' && a[1] != '\0') {
            usage();
            return 2;
        } else if (!in) {
            in = a;
        } else if (!out) {
            out = a;
        } else {
            usage();
            return 2;
        }
    }
    if (!in || !out || (reps >= 0 && size_mb >= 0) || gap_us < 0 || reps == 0 ||
        reps < -1 || size_mb == 0) {
        usage();
        return 2;
    }

    seed sd;
    if (load_seed(in, &sd) != 0)
        return 1;

    plan pl;
    pl.compact = compact;
    pl.shift_us = (int64_t)ceil(sd.span_hi - sd.span_lo) + gap_us;
    if (pl.shift_us <= 0)
        pl.shift_us = 1;
    pl.id_step = sd.id_max + 1;
    pl.step_span = sd.has_steps ? sd.step_hi - sd.step_lo + 1 : 0;
    pl.reps = reps > 0 ? reps : 10;

    if (size_mb > 0) {
        /* Size the run: count one repetition and the fixed part, then take
         * enough repetitions; later ones only grow (ids get longer). */
        uint64_t target = (uint64_t)(size_mb * 1e6);
        sink cnt = {NULL, 0, 0};
        pl.reps = 1;
        put_document(&cnt, &sd, &pl);
        uint64_t one = cnt.bytes;
        pl.reps = 2;
        cnt.bytes = 0;
        put_document(&cnt, &sd, &pl);
        /* Later repetitions print slightly longer ids, so "fixed" may come
         * out negative: clamp it. */
        int64_t per = (int64_t)cnt.bytes - (int64_t)one;
        int64_t fixed = (int64_t)one - per;
        if (per < 1)
            per = 1;
        if (fixed < 0)
            fixed = 0;
        pl.reps = (int64_t)target <= fixed ? 1 : ((int64_t)target - fixed + per - 1) / per;
        if (pl.reps < 1)
            pl.reps = 1;
    }

    FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "wb");
    if (!f) {
        fprintf(stderr, "gen_trace: %s: cannot create: %s\n", out, strerror(errno));
        return 1;
    }
    static char obuf[1u << 22];
    setvbuf(f, obuf, _IOFBF, sizeof obuf);
    sink s = {f, 0, 0};
    put_document(&s, &sd, &pl);
    if (fflush(f) != 0)
        s.failed = 1;
    if (f != stdout && fclose(f) != 0)
        s.failed = 1;
    if (s.failed) {
        fprintf(stderr, "gen_trace: %s: write failed: %s\n", out, strerror(errno));
        return 1;
    }
    size_t once = 0;
    for (size_t j = 0; j < sd.nev; j++)
        once += sd.ev[j].mode != EV_REPEAT;
    uint64_t events = (uint64_t)(sd.nev - once) * (uint64_t)pl.reps + once;
    FILE *info = f == stdout ? stderr : stdout;
    fprintf(info,
            "gen_trace: wrote %llu bytes (%.1f MB) to %s: %lld repetitions x %zu events "
            "(%llu events), shift %lld us, id step %lld\n",
            (unsigned long long)s.bytes, (double)s.bytes / 1e6, out, (long long)pl.reps,
            sd.nev - once, (unsigned long long)events, (long long)pl.shift_us,
            (long long)pl.id_step);
    fprintf(info, "bytes=%llu\n", (unsigned long long)s.bytes);

    for (size_t j = 0; j < sd.nev; j++)
        cJSON_Delete(sd.ev[j].obj);
    free(sd.ev);
    free(sd.fields);
    free(sd.text);
    return 0;
}
