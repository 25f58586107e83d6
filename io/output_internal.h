/* Private to io/output.c and io/output_check.c. */
#ifndef LUMOSIM_OUTPUT_INTERNAL_H
#define LUMOSIM_OUTPUT_INTERNAL_H

#include "lumosim/common.h"

/* PATH's final target after every symlink, existing or not (a dangling
 * link names the file that will be created). Returns a malloc'd string the
 * caller frees, or NULL with err filled (too many links, out of memory). */
char *lsim_out_follow_links(const char *path, lsim_err *err);

#endif
