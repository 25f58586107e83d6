/* Text from outside (file names, names from traces) made safe for where it
 * is shown (issue 17, "Inputs"): a file name may hold any byte but '/' and
 * NUL, so it may be invalid UTF-8 or hold a newline.
 *
 * - JSON documents must be valid UTF-8: bytes that are not part of a
 *   well-formed sequence become U+FFFD (lsim_text_utf8, lsim_text_json).
 * - An error line must stay one line: control characters and malformed
 *   bytes are written as escapes (lsim_text_line), valid non-ASCII UTF-8
 *   as is. Backslashes are left alone, so escaping twice changes nothing.
 *
 * Local; no state. */
#ifndef LUMOSIM_TEXT_H
#define LUMOSIM_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Length (1-4) of the well-formed UTF-8 sequence at s, of which at most n
 * bytes may be read; 0 when s does not start one (a stray continuation
 * byte, an overlong form, a surrogate, above U+10FFFF, cut short). */
size_t lsim_utf8_seq(const char *s, size_t n);

/* s is NULL or well-formed UTF-8 throughout. */
int lsim_utf8_valid(const char *s);

/* A copy of s (NUL-terminated) in which every byte that is not part of a
 * well-formed sequence is U+FFFD; NULL when out of memory. Caller frees. */
char *lsim_text_utf8(const char *s);

/* s as a JSON string literal, quotes included: " and \ and control
 * characters escaped (\b \f \n \r \t, the others as \u00XX), malformed
 * bytes as \ufffd; s NULL is "". The one copy of this rule: the predicted
 * trace's writer gives its own sink. */
typedef void (*lsim_text_sink)(void *ctx, const char *bytes, size_t n);
void lsim_text_json_to(lsim_text_sink put, void *ctx, const char *s);
void lsim_text_json(FILE *f, const char *s); /* the same into f */

/* s escaped into dst (cap bytes, cap >= 1, always NUL-terminated) for one
 * line of text: \n \r \t, other C0 controls, DEL and the C1 controls
 * (U+0080-U+009F) as \xHH (C1: the two UTF-8 bytes), malformed bytes as
 * \xHH. Cut at cap without splitting an escape or a character. Returns
 * dst. dst and s must not overlap. */
char *lsim_text_line(char *dst, size_t cap, const char *s);

#endif
