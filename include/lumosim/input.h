/* Opening what the user names as an input: traces, execution traces, graph
 * stores and result archives, spec/model/topology/mapping and nccl-tests
 * files (issue 17, "Inputs").
 *
 * Only a regular file (or, where the caller allows it, a directory) is an
 * input; symbolic links are followed. Anything else is refused with one line
 * naming it ("PATH: is a FIFO, not a file"), never opened in a way that can
 * wait: opening a FIFO for reading blocks until a writer appears, and a
 * character device (a terminal) blocks on read. The descriptor is opened
 * with O_NONBLOCK, checked with fstat on the descriptor itself (so a FIFO
 * swapped in after a stat cannot block the open either), then O_NONBLOCK is
 * cleared: on a regular file it changes nothing, but the descriptor is handed
 * to stdio and zlib, which must see ordinary blocking reads.
 *
 * HDF5 opens files by name, so the HDF5 readers can only check the path
 * (lsim_input_check) before H5Fopen; the window between the two is the one
 * race left. Local; errno-based, thread-safe as open(2) is. */
#ifndef LUMOSIM_INPUT_H
#define LUMOSIM_INPUT_H

#include <stdio.h>

#include "lumosim/common.h"

/* PATH is a regular file, or (allow_dir) a directory; *is_dir (may be NULL)
 * says which. Errors (LSIM_EIO): "PATH: cannot open: REASON",
 * "PATH: is a directory, not a file", "PATH: is a FIFO, not a file", and
 * likewise for sockets and devices. */
int lsim_input_check(const char *path, int allow_dir, int *is_dir, lsim_err *err);

/* Open regular file PATH read-only: *fd (close it, or hand it to gzdopen or
 * fdopen, which then own it). Errors as lsim_input_check (no directory). */
int lsim_input_open(const char *path, int *fd, lsim_err *err);

/* lsim_input_open + fdopen(fd, "rb"): *f for fclose. */
int lsim_input_fopen(const char *path, FILE **f, lsim_err *err);

/* Open a trace-like file for gzread: a regular file only (as above),
 * gzip or plain (zlib detects which), with a read buffer of buf bytes (0:
 * zlib's default). 0 and *out, or the open's error / LSIM_ENOMEM in err
 * ("PATH: ..."). Close with lsim_gz_close. (struct gzFile_s * is zlib's
 * gzFile; named so that this header needs no zlib.h.) */
struct gzFile_s;
int lsim_gz_open(const char *path, unsigned buf, struct gzFile_s **out, lsim_err *err);

/* What a failed gzread means, from gzerror's code ("truncated gzip data
 * (unexpected end of file)", "corrupt gzip data", ...). */
const char *lsim_gz_why(int zerr);

/* gzclose gz; when rc is 0 and the close fails (checksum, trailer), returns
 * LSIM_EFORMAT "PATH: corrupt gzip data (checksum or trailer)" in err;
 * otherwise rc. */
int lsim_gz_close(struct gzFile_s *gz, const char *path, int rc, lsim_err *err);

#endif
