/* Unit test: include/lumosim/text.h (UTF-8, JSON and error-line escaping)
 * and include/lumosim/input.h (a FIFO, socket-like or directory input
 * refused without blocking), plus lsim_err_set keeping a message one line.
 * The FIFO cases would block forever in open(2) if the helper did not open
 * with O_NONBLOCK: an alarm ends the test instead. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lumosim/common.h"
#include "lumosim/input.h"
#include "lumosim/text.h"

static int failures;

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond);                                           \
            failures++;                                                                                                \
        }                                                                                                              \
    } while (0)

static void on_alarm(int sig)
{
    static const char msg[] = "test_inputs: FAIL: blocked on a FIFO\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    (void)sig;
    _exit(1);
}

static void test_utf8(void)
{
    CHECK(lsim_utf8_seq("a", 1) == 1);
    CHECK(lsim_utf8_seq("\xc3\xa9", 2) == 2);         /* é */
    CHECK(lsim_utf8_seq("\xc3\xa9", 1) == 0);         /* cut short */
    CHECK(lsim_utf8_seq("\xe9", 1) == 0);             /* Latin-1 é */
    CHECK(lsim_utf8_seq("\xc0\xaf", 2) == 0);         /* overlong '/' */
    CHECK(lsim_utf8_seq("\xed\xa0\x80", 3) == 0);     /* surrogate */
    CHECK(lsim_utf8_seq("\xf4\x90\x80\x80", 4) == 0); /* above U+10FFFF */
    CHECK(lsim_utf8_seq("\xf0\x9f\x98\x80", 4) == 4); /* U+1F600 */
    CHECK(lsim_utf8_seq("\x80", 1) == 0);             /* stray continuation */
    CHECK(lsim_utf8_valid("caf\xc3\xa9.json"));
    CHECK(!lsim_utf8_valid("caf\xe9.json"));
    CHECK(lsim_utf8_valid(NULL));
    char *v = lsim_text_utf8("caf\xe9\xc3\xa9");
    CHECK(v && !strcmp(v, "caf\xef\xbf\xbd\xc3\xa9"));
    free(v);
}

static void test_json(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        failures++;
        return;
    }
    lsim_text_json(f, "a\"b\\c\nd\x01\xe9\xc3\xa9");
    fclose(f);
    CHECK(buf && !strcmp(buf, "\"a\\\"b\\\\c\\nd\\u0001\\ufffd\xc3\xa9\""));
    free(buf);
}

static void test_line(void)
{
    char out[64];
    CHECK(!strcmp(lsim_text_line(out, sizeof out, "new\nline\t\x1b[2J"), "new\\nline\\t\\x1b[2J"));
    CHECK(!strcmp(lsim_text_line(out, sizeof out, "caf\xe9 caf\xc3\xa9"), "caf\\xe9 caf\xc3\xa9"));
    CHECK(!strcmp(lsim_text_line(out, sizeof out, "c1 \xc2\x85!"), "c1 \\xc2\\x85!")); /* NEL */
    /* escaping twice changes nothing */
    char twice[64];
    lsim_text_line(out, sizeof out, "a\nb\xff");
    CHECK(!strcmp(lsim_text_line(twice, sizeof twice, out), out));
    /* cut without splitting an escape */
    char small[5];
    CHECK(!strcmp(lsim_text_line(small, sizeof small, "ab\ncd"), "ab\\n"));
    CHECK(!strcmp(lsim_text_line(small, sizeof small, "abc\xe9"), "abc"));
    /* lsim_err_set keeps the message one line */
    lsim_err err = {0};
    lsim_err_set(&err, LSIM_EIO, "%s: cannot open", "x\ny\xe9");
    CHECK(!strcmp(err.msg, "x\\ny\\xe9: cannot open"));
    CHECK(!strchr(err.msg, '\n'));
}

static void test_inputs(void)
{
    char dir[] = "/tmp/lsim-test-inputs.XXXXXX";
    if (!mkdtemp(dir)) {
        failures++;
        return;
    }
    char fifo[128], reg[128];
    snprintf(fifo, sizeof fifo, "%s/f.json", dir);
    snprintf(reg, sizeof reg, "%s/r.json", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    FILE *w = fopen(reg, "w");
    CHECK(w && fputs("{}", w) >= 0);
    if (w) fclose(w);

    lsim_err err = {0};
    int fd = -1, is_dir = -1;
    FILE *f = NULL;
    alarm(10);
    CHECK(lsim_input_open(fifo, &fd, &err) == LSIM_EIO && fd == -1);
    CHECK(strstr(err.msg, "f.json: is a FIFO, not a file") != NULL);
    CHECK(lsim_input_fopen(fifo, &f, &err) == LSIM_EIO && !f);
    CHECK(lsim_input_check(fifo, 1, &is_dir, &err) == LSIM_EIO);
    CHECK(lsim_input_check(dir, 0, NULL, &err) == LSIM_EIO && strstr(err.msg, "is a directory, not a file"));
    CHECK(lsim_input_check(dir, 1, &is_dir, &err) == 0 && is_dir == 1);
    CHECK(lsim_input_check(reg, 1, &is_dir, &err) == 0 && is_dir == 0);
    CHECK(lsim_input_open("/dev/null", &fd, &err) == LSIM_EIO && strstr(err.msg, "is a character device"));
    CHECK(lsim_input_open("/nonexistent-lumosim/x", &fd, &err) == LSIM_EIO && strstr(err.msg, "cannot open"));
    alarm(0);
    /* a regular file opens, and reads block normally (O_NONBLOCK cleared) */
    CHECK(lsim_input_fopen(reg, &f, &err) == 0 && f);
    if (f) {
        char b[4] = {0};
        CHECK(fread(b, 1, 3, f) == 2 && !strcmp(b, "{}"));
        fclose(f);
    }
    remove(fifo);
    remove(reg);
    rmdir(dir);
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    test_utf8();
    test_json();
    test_line();
    test_inputs();
    if (failures) fprintf(stderr, "test_inputs: %d failure(s)\n", failures);
    else printf("test_inputs: ok\n");
    return failures ? 1 : 0;
}
