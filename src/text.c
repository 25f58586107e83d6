/* Escaping text from outside for JSON, HTML and error lines (see
 * include/lumosim/text.h). */
#include "lumosim/text.h"
#include "lumosim/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t lsim_utf8_seq(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    if (!n) return 0;
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07, min = 0x10000;
    else return 0; /* continuation byte, C0/C1 (overlong) or F5..FF */
    if (n < len) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

int lsim_utf8_valid(const char *s)
{
    if (!s) return 1;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t l = lsim_utf8_seq(s + i, n - i);
        if (!l) return 0;
        i += l;
    }
    return 1;
}

char *lsim_text_utf8(const char *s)
{
    if (!s) s = "";
    size_t n = strlen(s);
    if (n > (SIZE_MAX - 1) / 3) return NULL;
    char *o = lsim_malloc(3 * n + 1), *p = o; /* each bad byte grows to 3 */
    if (!o) return NULL;
    for (size_t i = 0; i < n;) {
        size_t l = lsim_utf8_seq(s + i, n - i);
        if (l) {
            memcpy(p, s + i, l);
            p += l;
            i += l;
        } else {
            memcpy(p, "\xEF\xBF\xBD", 3);
            p += 3;
            i++;
        }
    }
    *p = '\0';
    return o;
}

/* Why runs: the predicted trace writes every op's name through this, and
 * most names need no escape at all. */
void lsim_text_json_to(lsim_text_sink put, void *ctx, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const char *p = s ? s : "", *end = p + strlen(p), *run = p;
    put(ctx, "\"", 1);
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            p++;
            continue;
        }
        if (c >= 0x80) {
            size_t l = lsim_utf8_seq(p, (size_t)(end - p));
            if (l) {
                p += l;
                continue;
            }
        }
        if (p > run) put(ctx, run, (size_t)(p - run));
        char t[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        const char *e = t;
        size_t el = 6;
        switch (c) {
        case '"': e = "\\\"", el = 2; break;
        case '\\': e = "\\\\", el = 2; break;
        case '\b': e = "\\b", el = 2; break;
        case '\f': e = "\\f", el = 2; break;
        case '\n': e = "\\n", el = 2; break;
        case '\r': e = "\\r", el = 2; break;
        case '\t': e = "\\t", el = 2; break;
        default:
            if (c >= 0x80) e = "\\ufffd"; /* a malformed byte (t: a C0 control) */
        }
        put(ctx, e, el);
        run = ++p;
    }
    if (p > run) put(ctx, run, (size_t)(p - run));
    put(ctx, "\"", 1);
}

static void put_file(void *f, const char *s, size_t n) { fwrite(s, 1, n, (FILE *)f); }

void lsim_text_json(FILE *f, const char *s) { lsim_text_json_to(put_file, f, s); }

char *lsim_text_line(char *dst, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t at = 0;
    if (!s) s = "";
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t l = lsim_utf8_seq(s + i, n - i);
        char esc[16];
        size_t el = 0, take = l ? l : 1;
        if (l == 1 && (c < 0x20 || c == 0x7F)) {
            if (c == '\n') memcpy(esc, "\\n", el = 2);
            else if (c == '\r') memcpy(esc, "\\r", el = 2);
            else if (c == '\t') memcpy(esc, "\\t", el = 2);
            else esc[0] = '\\', esc[1] = 'x', esc[2] = hex[c >> 4], esc[3] = hex[c & 15], el = 4;
        } else if (!l || (l == 2 && c == 0xC2 && (unsigned char)s[i + 1] < 0xA0)) {
            /* a malformed byte, or a C1 control (both of its bytes) */
            for (size_t k = 0; k < take; k++) {
                unsigned char b = (unsigned char)s[i + k];
                esc[el++] = '\\', esc[el++] = 'x', esc[el++] = hex[b >> 4], esc[el++] = hex[b & 15];
            }
        } else {
            memcpy(esc, s + i, el = l);
        }
        if (at + el + 1 > cap) break;
        memcpy(dst + at, esc, el);
        at += el;
        i += take;
    }
    if (cap) dst[at < cap ? at : cap - 1] = '\0';
    return dst;
}
