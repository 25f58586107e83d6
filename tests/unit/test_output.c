/* The output layer (src/write/output.c) on files made here, no MPI: the role and
 * kind checks, temporary + rename with the mode kept, symlinks followed,
 * devices and FIFOs written through, stale temporaries removed and live
 * ones kept, and the archive lock refusing a second holder. */
#define _DEFAULT_SOURCE /* mkdtemp, symlink, mkfifo */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "lumosim/output.h"

static char dir[256];

static const char *P(const char *name)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int has(const char *path, const char *text)
{
    char buf[256] = {0};
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return !strcmp(buf, text);
}

/* Write TEXT to PATH through the output layer. */
static int write_via(const char *path, const char *text, unsigned flags, lsim_err *err)
{
    lsim_out *o = NULL;
    int rc = lsim_out_begin(path, flags, 0, &o, err);
    if (rc) return rc;
    FILE *f = fopen(lsim_out_file(o), lsim_out_is_through(o) ? "a" : "w");
    if (!f) {
        lsim_out_abort(o);
        return LSIM_EIO;
    }
    fputs(text, f);
    fclose(f);
    return lsim_out_commit(o, err);
}

static void test_check(void)
{
    lsim_err err = {0};
    put(P("in.json"), "{\"traceEvents\":[]}\n");
    put(P("notes.txt"), "hello\n");
    symlink("in.json", P("alias.json"));
    CHECK(lsim_out_classify(P("in.json")) == 4);
    CHECK(lsim_out_classify(P("notes.txt")) == 5);
    CHECK(lsim_out_classify(P("missing")) == 0);

    /* output == input, directly and through a link */
    lsim_io_file a[2] = {{P("in.json"), "input", 0, LSIM_OUT_TEXT}, {P("in.json"), "-o", 1, LSIM_OUT_TRACE}};
    CHECK(lsim_out_check(a, 2, 0, &err) == LSIM_EARG);
    CHECK(strstr(err.msg, "input") && strstr(err.msg, "-o"));
    a[1].path = P("alias.json");
    CHECK(lsim_out_check(a, 2, LSIM_OUT_FORCE, &err) == LSIM_EARG); /* --force never makes an input an output */
    /* two outputs, one file, neither existing yet */
    lsim_io_file b[2] = {{P("x.json"), "-o", 1, LSIM_OUT_TEXT}, {P("./x.json"), "--topology-out", 1, LSIM_OUT_TEXT}};
    CHECK(lsim_out_check(b, 2, 0, &err) == LSIM_EARG);
    CHECK(strstr(err.msg, "--topology-out") != NULL);
    /* kinds: a trace replaced by a text file needs --force; by a trace not */
    lsim_io_file c[1] = {{P("in.json"), "--html", 1, LSIM_OUT_TEXT}};
    CHECK(lsim_out_check(c, 1, 0, &err) == LSIM_EARG);
    CHECK(lsim_out_check(c, 1, LSIM_OUT_FORCE, &err) == 0);
    c[0].kind = LSIM_OUT_TRACE;
    CHECK(lsim_out_check(c, 1, 0, &err) == 0);
    /* a plain file may be replaced (the user named it) */
    lsim_io_file d[1] = {{P("notes.txt"), "-o", 1, LSIM_OUT_TEXT}};
    CHECK(lsim_out_check(d, 1, 0, &err) == 0);
    /* a directory, a missing directory */
    lsim_io_file e[1] = {{dir, "-o", 1, LSIM_OUT_TEXT}};
    CHECK(lsim_out_check(e, 1, LSIM_OUT_FORCE, &err) == LSIM_EARG);
    e[0].path = P("nodir/x.csv");
    CHECK(lsim_out_check(e, 1, 0, &err) == LSIM_EIO);
    /* an input directory holding the output trace */
    lsim_io_file f[2] = {{dir, "input", 0, LSIM_OUT_TEXT}, {P("in.json"), "--trace-out", 1, LSIM_OUT_TRACE}};
    CHECK(lsim_out_check(f, 2, 0, &err) == LSIM_EARG);
    f[1].path = P("new.json"); /* not there yet: nothing is read from it */
    CHECK(lsim_out_check(f, 2, 0, &err) == 0);
}

static void test_replace(void)
{
    lsim_err err = {0};
    /* mode kept, content replaced */
    put(P("out.txt"), "old");
    chmod(P("out.txt"), 0640);
    CHECK(write_via(P("out.txt"), "new", 0, &err) == 0);
    struct stat st;
    CHECK(stat(P("out.txt"), &st) == 0 && (st.st_mode & 07777) == 0640);
    CHECK(has(P("out.txt"), "new"));
    /* a symlink stays a link; its target is replaced */
    put(P("target.txt"), "old");
    symlink("target.txt", P("link.txt"));
    CHECK(write_via(P("link.txt"), "via link", 0, &err) == 0);
    struct stat ls;
    CHECK(lstat(P("link.txt"), &ls) == 0 && S_ISLNK(ls.st_mode));
    CHECK(has(P("target.txt"), "via link"));
    /* a dangling link: the file it names is created */
    symlink("created.txt", P("dangling.txt"));
    CHECK(write_via(P("dangling.txt"), "made", 0, &err) == 0);
    CHECK(lstat(P("dangling.txt"), &ls) == 0 && S_ISLNK(ls.st_mode));
    CHECK(has(P("created.txt"), "made"));
    /* a FIFO is written through (a reader drains it), never replaced; an
     * HDF5 writer (LSIM_OUT_REGULAR) refuses it */
    CHECK(mkfifo(P("fifo"), 0600) == 0);
    lsim_out *o = NULL;
    CHECK(lsim_out_begin(P("fifo"), LSIM_OUT_REGULAR, 0, &o, &err) == LSIM_EARG && !o);
    CHECK(lsim_out_begin(P("fifo"), 0, 0, &o, &err) == 0 && lsim_out_is_through(o));
    lsim_out_abort(o); /* through: abort removes nothing */
    CHECK(lstat(P("fifo"), &ls) == 0 && S_ISFIFO(ls.st_mode));
    /* abort removes the temporary and leaves the old file */
    put(P("keep.txt"), "old");
    CHECK(lsim_out_begin(P("keep.txt"), 0, 0, &o, &err) == 0);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s", lsim_out_file(o));
    put(tmp, "half");
    lsim_out_abort(o);
    CHECK(access(tmp, F_OK) != 0);
    CHECK(has(P("keep.txt"), "old"));
}

static void test_stale_and_lock(void)
{
    lsim_err err = {0};
    /* a pid that is surely gone: a child that has exited and been reaped */
    pid_t kid = fork();
    if (kid == 0) _exit(0);
    waitpid(kid, NULL, 0);
    char stale[600], live[600], other[600];
    lsim_out_tmp_name(P("arch.h5"), (long)kid, stale, sizeof stale);
    lsim_out_tmp_name(P("arch.h5"), (long)getppid(), live, sizeof live);
    snprintf(other, sizeof other, "%s.tmp-%ld.another-host", P("arch.h5"), (long)kid);
    put(stale, "x");
    put(live, "x");
    put(other, "x");
    CHECK(write_via(P("arch.h5"), "data", 0, &err) == 0);
    CHECK(access(stale, F_OK) != 0);  /* removed */
    CHECK(access(live, F_OK) == 0);   /* its process runs */
    CHECK(access(other, F_OK) == 0);  /* another host's: never judged here */
    /* the lock: a second holder waits, then gives up */
    setenv("LUMOSIM_LOCK_TIMEOUT", "0", 1);
    lsim_out *a = NULL, *b = NULL;
    CHECK(lsim_out_begin(P("arch.h5"), LSIM_OUT_LOCK, 0, &a, &err) == 0);
    CHECK(lsim_out_begin(P("arch.h5"), LSIM_OUT_LOCK, 0, &b, &err) == LSIM_EIO && !b);
    CHECK(strstr(err.msg, "another lumosim") != NULL);
    lsim_out_abort(a);
    char lock[600];
    snprintf(lock, sizeof lock, "%s.lock", P("arch.h5"));
    CHECK(access(lock, F_OK) != 0); /* released and removed */
    CHECK(lsim_out_begin(P("arch.h5"), LSIM_OUT_LOCK, 0, &b, &err) == 0);
    lsim_out_abort(b);
    unsetenv("LUMOSIM_LOCK_TIMEOUT");
    remove(live);
    remove(other);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/lsim_output_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_check();
    test_replace();
    test_stale_and_lock();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_result("test_output");
}
