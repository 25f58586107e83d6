/* Watchdog child of tmpfiles.h (lsim_tmp_watch). A forked child, not a
 * thread or a handler: it is the only code that still runs after this
 * process is SIGKILLed or _exits inside Open MPI. Between fork and _exit
 * the child calls only async-signal-safe functions (this process may have
 * threads: Open MPI's). */
#define _GNU_SOURCE /* close_range */
#include "lumosim/tmpfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define WATCHES 8

static int g_fd[WATCHES] = {-1, -1, -1, -1, -1, -1, -1, -1};
static pid_t g_pid[WATCHES];

/* close every descriptor from LO to HI inclusive, but none of KEEP */
static void close_but(int lo, int hi, int k1, int k2)
{
    int keep[2] = {k1 < k2 ? k1 : k2, k1 < k2 ? k2 : k1};
    for (int i = 0; i < 2 && lo <= hi; i++) {
        if (keep[i] < lo) continue;
        int end = keep[i] - 1 < hi ? keep[i] - 1 : hi;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
        if (lo <= end) close_range((unsigned)lo, (unsigned)end, 0);
#else
        for (int fd = lo; fd <= end; fd++) close(fd);
#endif
        lo = keep[i] + 1;
    }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
    if (lo <= hi) close_range((unsigned)lo, (unsigned)hi, 0);
#else
    for (int fd = lo; fd <= hi; fd++) close(fd);
#endif
}

static void child(int rd, int slot_a, int slot_b, int keep_fd)
{
    /* only the pipe's end decides: the signals that end the job reach the
     * process group (mpirun's SIGTERM, a terminal's ^C), and the parent
     * removes the files itself there */
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGPIPE};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_IGN);
    /* no descriptor of the parent's but the pipe and the lock: a socket or
     * the output pipes held here would hide the parent's death from mpirun
     * and its peers */
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3 && null >= 0; fd++)
        if (fd != rd && fd != keep_fd) dup2(null, fd);
    struct rlimit rl;
    int hi = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536
                 ? (int)rl.rlim_cur - 1
                 : 65535;
    close_but(3, hi, rd, keep_fd < 0 ? rd : keep_fd);
    char c = 0;
    ssize_t n;
    while ((n = read(rd, &c, 1)) < 0) {
    }
    if (n == 0) { /* the parent is gone without saying it is done */
        lsim_tmp_remove_slot(slot_a);
        lsim_tmp_remove_slot(slot_b);
    }
    _exit(0); /* the lock (keep_fd) is released last, with the files gone */
}

int lsim_tmp_watch(int slot_a, int slot_b, int keep_fd)
{
    int h = 0;
    while (h < WATCHES && g_fd[h] >= 0) h++;
    int p[2];
    /* close-on-exec: inherited by nothing this process starts later */
    if (h == WATCHES || pipe2(p, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[1]);
        child(p[0], slot_a, slot_b, keep_fd);
    }
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return -1;
    }
    g_fd[h] = p[1];
    g_pid[h] = pid;
    return h;
}

void lsim_tmp_unwatch(int h)
{
    if (h < 0 || h >= WATCHES || g_fd[h] < 0) return;
    if (write(g_fd[h], "c", 1) != 1) { /* the child is gone: nothing to stop */
    }
    close(g_fd[h]);
    g_fd[h] = -1;
    while (waitpid(g_pid[h], NULL, 0) < 0 && errno == EINTR) {
    }
}
