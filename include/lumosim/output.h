/* Output files: the one place that decides how lumosim replaces a file, so
 * that no writer destroys what the user did not name as this run's output.
 *
 * Two halves:
 *
 *  1. Before anything is read, a command lists every file it reads and
 *     writes (lsim_out_check). An output that is one of the inputs, the same
 *     file as another output, a directory, or an existing file of another
 *     kind (a graph store, a result archive or a Kineto trace replaced by
 *     something else) is refused with one line naming both roles; replacing
 *     a graph store or a result archive wholesale needs LSIM_OUT_FORCE.
 *
 *  2. Each writer then goes through lsim_out_begin / lsim_out_commit:
 *     - a regular file (or a name that does not exist yet) is written under
 *       a temporary name beside it, PATH.tmp-PID.HOST, and renamed over it
 *       once complete; the old file's permission bits are kept;
 *     - a symlink is followed: its final target is what gets replaced, the
 *       link itself stays a link;
 *     - anything that is not a regular file (a character device such as
 *       /dev/null, a FIFO, a terminal, /dev/stdout) is written through,
 *       opened for appending, never replaced -- unless the writer needs a
 *       regular file (HDF5: LSIM_OUT_REGULAR), which is then refused;
 *     - temporaries of the same output left by a process that is gone (a
 *       SIGKILL, a node crash on this host) are removed, and the notice
 *       hook says so;
 *     - a lock is held from begin to commit by every writer of a regular
 *       file (store, archive, trace, CSV, HTML, JSON, calibration), so two
 *       writers to one path are serialized: the second waits, then
 *       replaces (a store) or adds its run (an archive, whose new version
 *       is built from the old one), and no run is lost silently.
 *       LSIM_OUT_LOCK is kept for the callers that name it; it is implied.
 *
 * The lock is flock(2) on a sidecar PATH.lock, removed on release (a waiter
 * that finds its lock file unlinked tries again, so removal is safe). The
 * wait is bounded by LUMOSIM_LOCK_TIMEOUT seconds (default 600; 0: do not
 * wait), then LSIM_EIO naming the holder's pid.
 *
 * Ownership: lsim_out_begin allocates the handle; lsim_out_commit and
 * lsim_out_abort free it (both accept NULL). All functions are local (no
 * MPI); a collective writer calls begin/commit on one rank and passes the
 * temporary name to the others (lsim_out_file). Not thread-safe. */
#ifndef LUMOSIM_OUTPUT_H
#define LUMOSIM_OUTPUT_H

#include <stddef.h>

#include "lumosim/common.h"

/* What a writer produces, for the kind check of lsim_out_check. */
typedef enum lsim_out_kind {
    LSIM_OUT_TEXT = 0,  /* a report, CSV, HTML page, GPU spec or topology JSON */
    LSIM_OUT_TRACE,     /* a predicted trace (Chrome trace JSON, .gz or not) */
    LSIM_OUT_STORE,     /* an HDF5 graph store */
    LSIM_OUT_RESULTS,   /* an HDF5 result archive, updated run by run */
    LSIM_OUT_SEARCH     /* an HDF5 search result (lumosim search -o) */
} lsim_out_kind;

/* One file a command names. role is how the user named it, for messages
 * ("-o", "--trace-out", "input"). For an input, kind is ignored; an input
 * that is a directory stands for the trace files it holds. */
typedef struct lsim_io_file {
    const char *path;
    const char *role;
    int output;           /* 1: written by this command, 0: read */
    lsim_out_kind kind;   /* outputs only */
} lsim_io_file;

enum {
    LSIM_OUT_FORCE = 1u << 0,   /* lsim_out_check: an existing store or archive
                                   may be replaced by an output of another kind
                                   (or a store by a new store) */
    LSIM_OUT_REGULAR = 1u << 1, /* lsim_out_begin: the writer needs a regular,
                                   seekable file (HDF5): refuse devices, FIFOs */
    LSIM_OUT_LOCK = 1u << 2     /* lsim_out_begin: hold PATH's lock until commit */
};

/* Check a command's files before any is read: every output's directory
 * exists and is writable, no output is an input (same device and inode,
 * through any symlink, or inside an input directory under a name it would
 * read) or another output, none is a directory, and none replaces an
 * existing file of another kind:
 *   existing graph store:  only by a store, and only with LSIM_OUT_FORCE;
 *   existing result archive: only by LSIM_OUT_RESULTS (which adds a run),
 *                          or with LSIM_OUT_FORCE;
 *   existing other HDF5 file: only with LSIM_OUT_FORCE;
 *   existing Kineto/Chrome trace: only by LSIM_OUT_TRACE, or with FORCE.
 * Paths NULL are skipped. Returns 0, or LSIM_EARG / LSIM_EIO with one line
 * naming the file and both roles. Local. */
int lsim_out_check(const lsim_io_file *files, size_t n, unsigned flags, lsim_err *err);

/* What an existing file is, for lsim_out_check (exposed for tests):
 * 0 missing or unreadable, 1 graph store, 2 result archive, 3 other HDF5,
 * 4 Kineto/Chrome trace (plain or gzip JSON whose first 64 KiB hold a
 * "traceEvents" key), 5 anything else. Reads at most 64 KiB. Local. */
int lsim_out_classify(const char *path);

typedef struct lsim_out lsim_out;

/* Start writing PATH (flags: LSIM_OUT_REGULAR, LSIM_OUT_LOCK). pid names
 * the temporary (0: this process's; a collective writer passes rank 0's).
 * Returns 0 with *out set, or an error with one line naming PATH. Local. */
int lsim_out_begin(const char *path, unsigned flags, long pid, lsim_out **out, lsim_err *err);

/* The name to open for writing: the temporary, or PATH itself when written
 * through (then open it for appending, e.g. fopen(..., "a")). */
const char *lsim_out_file(const lsim_out *o);
int lsim_out_is_through(const lsim_out *o);
/* The file that commit replaces (a symlink's final target), for messages
 * and for reading the old version of an archive. */
const char *lsim_out_target(const lsim_out *o);
/* The lock file held while o is in progress (TARGET.lock), or NULL (written
 * through): a collective writer's other ranks remove it with the temporary
 * when a signal ends them after rank 0 was SIGKILLed (tmpfiles.h). */
const char *lsim_out_lock(const lsim_out *o);

/* The temporary's name (restores the old mode, renames it over the target)
 * and release the lock; frees o. A file written through needs nothing.
 * Returns 0 or LSIM_EIO naming PATH; on failure the temporary is removed.
 * Local. */
int lsim_out_commit(lsim_out *o, lsim_err *err);

/* Remove the temporary (if any), release the lock, free o. Local. */
void lsim_out_abort(lsim_out *o);

/* The temporary name lsim_out_begin uses for TARGET and pid, into buf
 * (for tests; returns LSIM_EARG when it does not fit). Local. */
int lsim_out_tmp_name(const char *target, long pid, char *buf, size_t len);

/* Where notices go: stale temporaries removed, waiting for a lock. The
 * library never prints; the CLI installs a hook that writes one line to
 * stderr. NULL: notices are dropped. Local, process-wide. */
void lsim_out_set_notice(void (*fn)(const char *line));

/* A watcher of the names outputs create: fn(1, NAME, ctx) when an output's
 * temporary or lock appears (lsim_out_begin), fn(0, NAME, ctx) when it goes
 * (commit or abort). Under mpirun the run layer relays them to the other
 * ranks while rank 0 writes alone (lsim_mpi_rank0_writes, run_mpi.h), so
 * that they can remove what a SIGKILLed rank 0 leaves. At most one watcher;
 * NULL stops watching. Local, process-wide. */
typedef void (*lsim_out_watch_fn)(int appears, const char *name, void *ctx);
void lsim_out_set_watch(lsim_out_watch_fn fn, void *ctx);

#endif
