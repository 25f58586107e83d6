/* Temporary output files in progress. Every writer creates its output under
 * a temporary name and renames it when complete; while it exists the name is
 * registered here, so that a program interrupted by a signal can remove it
 * (lsim_tmp_remove_all is async-signal-safe: it only calls unlink). The
 * table has a fixed number of slots and no allocation; a name that does not
 * fit is simply not registered (the file is still removed on errors).
 * Local; not thread-safe. */
#ifndef LUMOSIM_TMPFILES_H
#define LUMOSIM_TMPFILES_H

/* Returns a slot (>= 0) to pass to lsim_tmp_unregister, or -1. */
int lsim_tmp_register(const char *path);
void lsim_tmp_unregister(int slot);
void lsim_tmp_remove_all(void);

#endif
