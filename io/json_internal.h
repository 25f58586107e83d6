/* Private to the JSON readers (io/kineto.c, io/et.c): the streaming
 * scanner of io/kineto.c, which finds each JSON value's extent without
 * building a document, and the per-value cJSON arena. Both readers parse
 * one value (a trace event, an execution-trace node) at a time with cJSON
 * inside the arena (the Kineto reader reads plain events in place first:
 * io/kineto.c), so a large file never becomes one cJSON tree and the
 * allocator is not called per item.
 *
 * Everything is local and single-threaded: the arena is process-global (it
 * is cJSON's allocator, installed through cJSON_InitHooks on first use). */
#ifndef LUMOSIM_JSON_INTERNAL_H
#define LUMOSIM_JSON_INTERNAL_H

#include <stddef.h>

#include "lumosim/common.h"

/* cJSON values parsed between begin and end come from one reusable 4 MiB
 * block; cJSON_Delete on them is a no-op. A value larger than the block
 * spills into malloc: lsim_json_arena_end returns 1 when that happened, and
 * the caller must then cJSON_Delete what it parsed before the next begin.
 * begin: 0 or LSIM_ENOMEM. */
int lsim_json_arena_begin(void);
int lsim_json_arena_end(void);

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
