/* Opening user-named inputs without ever waiting on one (see
 * include/lumosim/input.h). */
#include "lumosim/input.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* What a non-regular file is, for the message. */
static const char *kind_of(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
                         : "not a regular file";
}

static int refuse(const char *path, mode_t m, lsim_err *err)
{
    const char *k = kind_of(m);
    if (k[0] == 'n') return lsim_err_set(err, LSIM_EIO, "%s: %s", path, k);
    return lsim_err_set(err, LSIM_EIO, "%s: is %s, not a file", path, k);
}

int lsim_input_check(const char *path, int allow_dir, int *is_dir, lsim_err *err)
{
    struct stat st;
    if (is_dir) *is_dir = 0;
    if (stat(path, &st) != 0) return lsim_err_set(err, LSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISREG(st.st_mode)) return 0;
    if (allow_dir && S_ISDIR(st.st_mode)) {
        if (is_dir) *is_dir = 1;
        return 0;
    }
    return refuse(path, st.st_mode, err);
}

int lsim_input_open(const char *path, int *fd, lsim_err *err)
{
    *fd = -1;
    /* stat first: the common refusals (FIFO, directory) get their message
     * without any open at all */
    int rc = lsim_input_check(path, 0, NULL, err);
    if (rc) return rc;
    int d = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (d < 0) return lsim_err_set(err, LSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int fl;
    if (fstat(d, &st) != 0) {
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = refuse(path, st.st_mode, err); /* swapped in after the stat */
    } else if ((fl = fcntl(d, F_GETFL)) < 0 || fcntl(d, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    if (rc) {
        close(d);
        return rc;
    }
    *fd = d;
    return 0;
}

int lsim_input_fopen(const char *path, FILE **f, lsim_err *err)
{
    int fd = -1;
    *f = NULL;
    int rc = lsim_input_open(path, &fd, err);
    if (rc) return rc;
    if (!(*f = fdopen(fd, "rb"))) {
        rc = lsim_err_set(err, errno == ENOMEM ? LSIM_ENOMEM : LSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return rc;
}

int lsim_gz_open(const char *path, unsigned buf, gzFile *out, lsim_err *err)
{
    *out = NULL;
    /* a regular file only: a FIFO or a terminal would block (input.h) */
    int fd = -1;
    int rc = lsim_input_open(path, &fd, err);
    if (rc) return rc;
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory opening it", path);
    }
    if (buf) gzbuffer(gz, buf);
    *out = gz;
    return 0;
}

const char *lsim_gz_why(int zerr)
{
    return zerr == Z_BUF_ERROR    ? "truncated gzip data (unexpected end of file)"
           : zerr == Z_DATA_ERROR ? "corrupt gzip data"
           : zerr == Z_ERRNO      ? "read error"
                                  : "corrupt or truncated gzip data";
}

int lsim_gz_close(gzFile gz, const char *path, int rc, lsim_err *err)
{
    int zc = gzclose(gz);
    if (!rc && zc != Z_OK) return lsim_err_set(err, LSIM_EFORMAT, "%s: corrupt gzip data (checksum or trailer)", path);
    return rc;
}
