/* Private to src/write/output.c and io/output_check.c. */
#ifndef LUMOSIM_OUTPUT_INTERNAL_H
#define LUMOSIM_OUTPUT_INTERNAL_H

#include "lumosim/common.h"

/* PATH's final target after every symlink, existing or not (a dangling
 * link names the file that will be created). Returns a malloc'd string the
 * caller frees, or NULL with err filled (too many links, out of memory). */
char *lsim_out_follow_links(const char *path, lsim_err *err);

/* The role check's second look (io/output_check.c, which installs it on its
 * first lsim_out_check): lsim_out_begin calls fn(TARGET, 0, err) once it
 * holds TARGET's lock, and a non-zero return refuses the output; commit
 * calls fn(TARGET, 1, NULL) after its rename. The check is done long before
 * the write (a build or synth runs in between); another lumosim may have
 * written the file meanwhile, and only the check knows what may replace
 * what. Kept as a hook because the check needs HDF5 (lumosim_io) and the
 * writers' half does not. */
typedef int (*lsim_out_recheck_fn)(const char *target, int committed, lsim_err *err);
void lsim_out_set_recheck(lsim_out_recheck_fn fn);

#endif
