/* Escaping text from outside for JSON, HTML and error lines (see
 * include/lumosim/text.h). */
#include "lumosim/text.h"

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
    char *o = malloc(3 * n + 1), *p = o; /* each bad byte grows to 3 */
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

void lsim_text_json(FILE *f, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    if (!s) s = "";
    size_t n = strlen(s);
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t l = lsim_utf8_seq(s + i, n - i);
        if (!l) {
            fputs("\\ufffd", f);
            i++;
            continue;
        }
        if (l > 1) {
            fwrite(s + i, 1, l, f);
        } else if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
        } else if (c == '\n') {
            fputs("\\n", f);
        } else if (c == '\t') {
            fputs("\\t", f);
        } else if (c == '\r') {
            fputs("\\r", f);
        } else if (c < 0x20) {
            fprintf(f, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
        } else {
            fputc(c, f);
        }
        i += l;
    }
    fputc('"', f);
}

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
