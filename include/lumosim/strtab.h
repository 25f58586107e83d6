/* Interned string table: every distinct name is stored once and referred to
 * by a dense uint32 id (0, 1, 2, ... in order of first insertion, so ids are
 * deterministic for a given input order).
 *
 * Ownership: lsim_strtab_new allocates; lsim_strtab_free releases the table
 * and all strings. Pointers returned by lsim_strtab_get stay valid until the
 * table is freed (strings live in stable blocks, never moved). Local, not
 * thread-safe. */
#ifndef LUMOSIM_STRTAB_H
#define LUMOSIM_STRTAB_H

#include "lumosim/common.h"

typedef struct lsim_strtab lsim_strtab;

lsim_strtab *lsim_strtab_new(void);
void lsim_strtab_free(lsim_strtab *t);

/* Intern s[0..len); store its id in *id. Returns 0 or LSIM_ENOMEM. */
int lsim_strtab_intern(lsim_strtab *t, const char *s, size_t len, uint32_t *id);

/* An overlay of base: a table with base's strings and ids that holds
 * only the strings replaced in it (lsim_strtab_replace), base read for the
 * others, until something is interned into it or reserved (then 12 bytes
 * a string: a pointer and a length per id). base lives at least as long
 * (reference counted: lsim_strtab_free of either releases its own hold)
 * and must not be changed by lsim_strtab_replace while overlaid.
 * Interning into it works as into any table. 0 or LSIM_ENOMEM (*out NULL). */
int lsim_strtab_new_overlay(lsim_strtab *base, lsim_strtab **out);

/* Give string `id` of t the text s[0..len) (an overlay's own names).
 * Uniqueness is the caller's to keep. 0, LSIM_EARG (id out of range) or
 * LSIM_ENOMEM. */
int lsim_strtab_replace(lsim_strtab *t, uint32_t id, const char *s, size_t len);

/* 1 and *id when s[0..len) is in t, else 0 (also for an overlay that has
 * no hash yet: look in its base). */
int lsim_strtab_find(const lsim_strtab *t, const char *s, size_t len, uint32_t *id);

/* Room for n strings without growing (ids and results unchanged; a
 * builder that knows about how many names it will make skips the
 * rehashes). 0 or LSIM_ENOMEM. */
int lsim_strtab_reserve(lsim_strtab *t, uint32_t n);

/* The NUL-terminated string with this id (NULL if id is out of range). */
const char *lsim_strtab_get(const lsim_strtab *t, uint32_t id);

/* Number of distinct strings; bytes held (for memory reports). */
uint32_t lsim_strtab_count(const lsim_strtab *t);
size_t lsim_strtab_bytes(const lsim_strtab *t);
/* Every string's length + 1, summed over the ids (the bytes of the texts
 * with their NULs, as a store writes them): kept as strings are interned
 * and replaced, so no walk of an overlay's base. */
uint64_t lsim_strtab_text(const lsim_strtab *t);

#endif
