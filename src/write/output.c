/* Output files, the writers' half (include/lumosim/output.h): temporary +
 * rename or write through, symlinks, modes, stale temporaries, the archive
 * lock. POSIX only, so it lives in lumosim_core; the role checks, which
 * need the HDF5 store's probe, are in io/output_check.c (lumosim_io). */
#define _DEFAULT_SOURCE /* realpath, flock */
#include "lumosim/output.h"
#include "lumosim/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lumosim/memlimit.h"
#include "lumosim/tmpfiles.h"
#include "internal/output_internal.h"

struct lsim_out {
    char *path;     /* as the user named it, for messages */
    char *target;   /* what commit replaces: path, or a symlink's final target */
    char *tmp;      /* temporary beside target; NULL when written through */
    int through;    /* not a regular file: written in place, never replaced */
    int had_mode;   /* target existed: keep its permission bits and owner */
    mode_t mode;
    uid_t uid;
    gid_t gid;
    int slot;       /* tmpfiles.h registry slot of tmp, -1 if none */
    int lock_fd;    /* sidecar lock held until commit, -1 if none */
    int lock_slot;  /* its tmpfiles.h slot, -1 if none */
    int watch;      /* tmpfiles.h watchdog of tmp and lock, -1 if none */
    char *lock_path;
};

static void (*g_notice)(const char *line);
static lsim_out_recheck_fn g_recheck; /* output_internal.h */

void lsim_out_set_recheck(lsim_out_recheck_fn fn) { g_recheck = fn; }
static lsim_out_watch_fn g_watch; /* lsim_out_set_watch */
static void *g_watch_ctx;

void lsim_out_set_watch(lsim_out_watch_fn fn, void *ctx)
{
    g_watch = fn;
    g_watch_ctx = fn ? ctx : NULL;
}

/* The watcher hears of o's temporary and lock when they appear (begin) and
 * when they go (commit, abort). */
static void watch(const lsim_out *o, int appears)
{
    if (!g_watch) return;
    if (o->tmp) g_watch(appears, o->tmp, g_watch_ctx);
    if (o->lock_fd >= 0) g_watch(appears, o->lock_path, g_watch_ctx);
}

void lsim_out_set_notice(void (*fn)(const char *line)) { g_notice = fn; }

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void notice(const char *fmt, ...)
{
    if (!g_notice) return;
    char buf[LSIM_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g_notice(buf);
}

/* This host's short name, made safe for a file name (letters, digits, '-',
 * '_'; at most 63 characters): the temporaries of processes on other hosts
 * sharing the file system are never taken for stale ones. */
static void host_tag(char *buf, size_t len)
{
    char h[256];
    if (gethostname(h, sizeof h) != 0) h[0] = '\0';
    h[sizeof h - 1] = '\0';
    size_t j = 0;
    for (size_t i = 0; h[i] && h[i] != '.' && j + 1 < len && j < 63; i++) {
        char c = h[i];
        buf[j++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_')
                       ? c
                       : '_';
    }
    if (!j && len > 1) buf[j++] = 'h';
    buf[j] = '\0';
}

int lsim_out_tmp_name(const char *target, long pid, char *buf, size_t len)
{
    char host[64];
    host_tag(host, sizeof host);
    int w = snprintf(buf, len, "%s.tmp-%ld.%s", target, pid, host);
    return w < 0 || (size_t)w >= len ? LSIM_EARG : 0;
}

static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Paths under /dev and /proc are the system's names for open files,
 * terminals and pipes (/dev/stdout, /proc/self/fd/1): written through even
 * when they lead to a regular file, since replacing that file would cut it
 * off from the shell that opened it (and lose what `>>` appended). */
static int magic_path(const char *p) { return !strncmp(p, "/dev/", 5) || !strncmp(p, "/proc/", 6); }

/* PATH's final target after every symlink, existing or not (a dangling
 * link names the file that will be created). Returns a malloc'd string, or
 * NULL with err filled (ELOOP, out of memory). */
char *lsim_out_follow_links(const char *path, lsim_err *err)
{
    char *cur = lsim_strdup(path);
    if (!cur) {
        lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    for (int hop = 0; hop < 40; hop++) {
        struct stat ls;
        if (lstat(cur, &ls) != 0 || !S_ISLNK(ls.st_mode)) return cur;
        char link[PATH_MAX];
        ssize_t k = readlink(cur, link, sizeof link - 1);
        if (k < 0) return cur;
        link[k] = '\0';
        char *next;
        if (link[0] == '/') {
            next = lsim_strdup(link);
        } else {
            char *dir = lsim_dir_of(cur);
            next = dir ? lsim_malloc(strlen(dir) + strlen(link) + 2) : NULL;
            if (next) sprintf(next, "%s/%s", dir, link);
            free(dir);
        }
        free(cur);
        if (!next) {
            lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
            return NULL;
        }
        cur = next;
    }
    lsim_err_set(err, LSIM_EIO, "%s: cannot write: too many levels of symbolic links", path);
    free(cur);
    return NULL;
}

/* Remove TARGET's temporaries whose process is gone. Only names this module
 * makes (BASE.tmp-PID or BASE.tmp-PID.HOST with HOST this host's tag), only
 * regular files, never one of a live process or of another host. A folder
 * that cannot be listed is left alone; 0, or LSIM_ENOMEM. */
static int remove_stale(const char *target)
{
    char *dir = lsim_dir_of(target);
    if (!dir) return LSIM_ENOMEM;
    DIR *d = opendir(dir);
    if (!d) {
        free(dir);
        return 0;
    }
    int rc = 0;
    const char *base = base_of(target);
    size_t bl = strlen(base);
    char host[64];
    host_tag(host, sizeof host);
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        if (strncmp(nm, base, bl) || strncmp(nm + bl, ".tmp-", 5)) continue;
        const char *p = nm + bl + 5;
        char *end = NULL;
        errno = 0;
        long pid = strtol(p, &end, 10);
        if (end == p || errno || pid <= 0 || pid == (long)getpid()) continue;
        if (*end == '.') {
            if (strcmp(end + 1, host)) continue;
        } else if (*end) {
            continue;
        }
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char *full = lsim_malloc(strlen(dir) + strlen(nm) + 2);
        if (!full) {
            rc = LSIM_ENOMEM;
            break;
        }
        sprintf(full, "%s/%s", dir, nm);
        struct stat ls;
        if (lstat(full, &ls) == 0 && S_ISREG(ls.st_mode) && unlink(full) == 0)
            notice("removed %s, a temporary left by process %ld, which is gone", full, pid);
        free(full);
    }
    closedir(d);
    free(dir);
    return rc;
}

static double lock_timeout(void)
{
    const char *v = getenv("LUMOSIM_LOCK_TIMEOUT");
    if (!v || !*v) return 600.0;
    char *end = NULL;
    double t = strtod(v, &end);
    return end && !*end && t >= 0 && t <= 1e6 ? t : 600.0;
}

/* Take TARGET.lock (see output.h). */
static int take_lock(lsim_out *o, const char *path, lsim_err *err)
{
    size_t len = strlen(o->target) + 6;
    o->lock_path = lsim_malloc(len);
    if (!o->lock_path) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
    snprintf(o->lock_path, len, "%s.lock", o->target);
    double limit = lock_timeout(), waited = 0;
    int told = 0;
    for (;;) {
        int fd = open(o->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
            return lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s (creating the lock file %s)", path,
                                strerror(errno), o->lock_path);
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            struct stat a, b;
            if (fstat(fd, &a) == 0 && stat(o->lock_path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
                char pid[32];
                int k = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
                if (ftruncate(fd, 0) == 0 && write(fd, pid, (size_t)k) < 0) { /* the pid is only for messages */
                }
                o->lock_fd = fd;
                /* a signal that ends the program removes it with the
                 * temporary (the lock itself dies with the process) */
                o->lock_slot = lsim_tmp_register(o->lock_path);
                return 0;
            }
            close(fd); /* released and removed meanwhile: take the new one */
            continue;
        }
        int e = errno;
        char holder[32] = "";
        ssize_t k = pread(fd, holder, sizeof holder - 1, 0);
        holder[k > 0 ? k : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        close(fd);
        if (e != EWOULDBLOCK && e != EINTR)
            return lsim_err_set(err, LSIM_EIO, "%s: cannot lock %s: %s", path, o->lock_path, strerror(e));
        if (waited >= limit)
            return lsim_err_set(err, LSIM_EIO,
                                "%s: another lumosim (pid %s) is writing it; gave up after %.0f s "
                                "(LUMOSIM_LOCK_TIMEOUT)",
                                path, holder[0] ? holder : "unknown", waited);
        if (!told) {
            notice("%s: waiting for another lumosim (pid %s) to finish writing it", path,
                   holder[0] ? holder : "unknown");
            told = 1;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        waited += 0.02;
    }
}

static void release(lsim_out *o)
{
    if (o->lock_fd >= 0) {
        /* unlink before unlocking: a waiter that then gets the old inode
         * sees the name gone and retries (take_lock) */
        unlink(o->lock_path);
        lsim_tmp_unregister(o->lock_slot);
        o->lock_slot = -1;
        flock(o->lock_fd, LOCK_UN);
        close(o->lock_fd);
        o->lock_fd = -1;
    }
}

static void out_free(lsim_out *o)
{
    if (!o) return;
    watch(o, 0); /* a name the watcher never heard of is nothing to it */
    lsim_tmp_unwatch(o->watch); /* before the lock goes: see lsim_tmp_watch */
    release(o);
    lsim_tmp_unregister(o->slot);
    free(o->lock_path);
    free(o->tmp);
    free(o->target);
    free(o->path);
    free(o);
}

/* Test hook: LUMOSIM_TEST_PAUSE=POINT stops every writer at POINT after one
 * notice naming the output: "commit", with its temporary complete and its
 * lock held, just before the rename; "begin", after the command's checks,
 * before the lock is taken. A test waits for the notice and then sends a
 * signal (tests/integration/signals.sh), rather than sleeping and hoping it
 * lands mid-write: SIGWINCH goes on, any signal that ends the program ends
 * it there. Not SIGCONT: mpirun sends it before the SIGTERM that ends a
 * job's ranks, and the paused writer must die there, not commit
 * (tests/mpi/killed_rank.sh). */
static volatile sig_atomic_t g_resume;
static void on_resume(int sig)
{
    (void)sig;
    g_resume = 1;
}

static void test_pause(const lsim_out *o, const char *point)
{
    const char *v = getenv("LUMOSIM_TEST_PAUSE");
    if (!v || strcmp(v, point)) return;
    /* SIGWINCH blocked until the wait, so that one sent right after the
     * notice is not lost */
    sigset_t go, old, during;
    sigemptyset(&go);
    sigaddset(&go, SIGWINCH);
    sigprocmask(SIG_BLOCK, &go, &old);
    struct sigaction sa, was;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_resume;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGWINCH, &sa, &was);
    g_resume = 0;
    notice("%s: paused before %s (LUMOSIM_TEST_PAUSE=%s, pid %ld)", o->path, point, point, (long)getpid());
    during = old;
    sigdelset(&during, SIGWINCH);
    while (!g_resume) sigsuspend(&during);
    sigaction(SIGWINCH, &was, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

int lsim_out_begin(const char *path, unsigned flags, long pid, lsim_out **out, lsim_err *err)
{
    *out = NULL;
    if (!path || !*path) return lsim_err_set(err, LSIM_EARG, "output: no file name given");
    lsim_out *o = lsim_calloc(1, sizeof *o);
    int rc = 0;
    if (!o) return lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
    o->slot = -1;
    o->lock_fd = -1;
    o->lock_slot = -1;
    o->watch = -1;
    if (!(o->path = lsim_strdup(path))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    if (!strcmp(path, "-")) { /* "-" is stdout for every writer (collect -o - wrote a file named "-") */
        if (flags & LSIM_OUT_REGULAR) {
            rc = lsim_err_set(err, LSIM_EARG, "-o -: an HDF5 file cannot go to stdout; name a file");
            goto cleanup;
        }
        fflush(stdout); /* what the command printed before stays before the file */
        o->through = 1;
        if (!(o->target = lsim_strdup("/dev/stdout"))) rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: is a directory", path);
        goto cleanup;
    }
    if (exists && (!S_ISREG(st.st_mode) || magic_path(path))) {
        if (flags & LSIM_OUT_REGULAR) {
            rc = lsim_err_set(err, LSIM_EARG, "%s: cannot write: not a regular file (an HDF5 file cannot go to a "
                              "device, pipe or terminal)", path);
            goto cleanup;
        }
        o->through = 1;
        if (!(o->target = lsim_strdup(path))) rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    if (!(o->target = lsim_out_follow_links(path, err))) {
        rc = err ? err->code : LSIM_EIO;
        goto cleanup;
    }
    if (exists) {
        o->had_mode = 1;
        o->mode = st.st_mode & 07777;
        o->uid = st.st_uid;
        o->gid = st.st_gid;
    }
    /* every writer of a regular file takes the lock (LSIM_OUT_LOCK is now
     * implied): two runs writing one new store would otherwise both exit 0
     * with one result silently replaced; now the second waits its turn */
    test_pause(o, "begin");
    if ((rc = take_lock(o, path, err))) goto cleanup;
    /* another lumosim may have written the file since the command checked
     * it (it held the lock while this run waited, or finished before this
     * run got here): what the check allowed then is asked again (issue 40:
     * two writers of one new store both exited 0, one store lost) */
    if (g_recheck && (rc = g_recheck(o->target, 0, err))) goto cleanup;
    if (remove_stale(o->target)) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    size_t len = strlen(o->target) + 96;
    if (!(o->tmp = lsim_malloc(len))) {
        rc = lsim_err_set(err, LSIM_ENOMEM, "%s: out of memory", path);
        goto cleanup;
    }
    if (lsim_out_tmp_name(o->target, pid > 0 ? pid : (long)getpid(), o->tmp, len)) {
        rc = lsim_err_set(err, LSIM_EARG, "%s: path too long", path);
        goto cleanup;
    }
    o->slot = lsim_tmp_register(o->tmp); /* removed if a signal ends the program */
    /* and if nothing runs at the end: SIGKILL, or the ranks' _exit when
     * mpirun is killed (issue 40) */
    o->watch = lsim_tmp_watch(o->slot, o->lock_slot, o->lock_fd);
    watch(o, 1);
cleanup:
    if (rc) out_free(o);
    else *out = o;
    return rc;
}

const char *lsim_out_file(const lsim_out *o) { return o ? (o->through ? o->target : o->tmp) : NULL; }
int lsim_out_is_through(const lsim_out *o) { return o && o->through; }
const char *lsim_out_target(const lsim_out *o) { return o ? o->target : NULL; }
const char *lsim_out_lock(const lsim_out *o) { return o && o->lock_fd >= 0 ? o->lock_path : NULL; }

int lsim_out_commit(lsim_out *o, lsim_err *err)
{
    if (!o) return 0;
    int rc = 0;
    if (!o->through) {
        test_pause(o, "commit");
        /* the data on disk before the name: a crash after the rename must
         * not leave an empty file under the old name */
        int fd = open(o->tmp, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0)
            rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s", o->path, strerror(errno));
        if (fd >= 0) close(fd);
        if (!rc && o->had_mode) {
            if (geteuid() == 0 && chown(o->tmp, o->uid, o->gid) != 0) { /* best effort: keep going */
            }
            if (chmod(o->tmp, o->mode) != 0)
                rc = lsim_err_set(err, LSIM_EIO, "%s: cannot keep its mode: %s", o->path, strerror(errno));
        }
        if (!rc && rename(o->tmp, o->target) != 0)
            rc = lsim_err_set(err, LSIM_EIO, "%s: cannot write: %s", o->path, strerror(errno));
        if (rc) remove(o->tmp);
        else if (g_recheck) g_recheck(o->target, 1, NULL); /* this run's own file: no second look at it */
    } else if (!strcmp(o->path, "-")) {
        /* "-" went to stdout through its own open of /dev/stdout (append):
         * where stdout is a regular file, move the program's own offset past
         * what was written, or its next line would overwrite the output */
        if (lseek(STDOUT_FILENO, 0, SEEK_END) < 0) { /* a pipe or terminal: nothing to move */
        }
    }
    out_free(o);
    return rc;
}

void lsim_out_abort(lsim_out *o)
{
    if (!o) return;
    if (o->tmp) remove(o->tmp);
    out_free(o);
}
