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
/* Remove one registered file now (async-signal-safe) and free its slot. */
void lsim_tmp_remove_slot(int slot);
void lsim_tmp_remove_all(void);

/* A watchdog for registered files that must not outlive this process even
 * when it dies without running a handler: SIGKILL, or Open MPI's _exit
 * after mpirun is gone (docs/reliability.md). lsim_tmp_watch forks a child
 * that holds KEEP_FD (a lock's descriptor, so that the lock stays taken
 * until the files are gone; -1 for none) and waits on a pipe: when the pipe
 * closes without lsim_tmp_unwatch, this process is gone and the child
 * removes slots A and B (-1: none). Returns a handle >= 0, or -1 when no
 * child could be made (the files are then only removed by signals and by
 * the next run). */
int lsim_tmp_watch(int slot_a, int slot_b, int keep_fd);
/* Stop watchdog H (the files are committed or removed by this process). */
void lsim_tmp_unwatch(int h);

#endif
