/* lsim_report_pick (report.h): which ranks a summarised table prints --
 * every rank up to LSIM_REPORT_FULL_MAX or when asked, else the
 * LSIM_REPORT_SLOWEST largest predicted windows and the smallest, ties to
 * the lower index -- and the line that stands for the others. The
 * expected sets are worked out by hand below. */
#include "check.h"
#include "lumosim/report.h"

#include <stdlib.h>

int main(void)
{
    uint8_t show[40];
    lsim_ns w[40];
    /* 16 ranks: all of them */
    for (int i = 0; i < 16; i++) w[i] = 100 + i;
    CHECK_I64(lsim_report_pick(w, 16, 0, show), 16);
    for (int i = 0; i < 16; i++) CHECK(show[i] == 1);
    /* 20 ranks: windows 100..119 except rank 7 = 500 (the slowest), rank 3
     * = 5 (the fastest); the next slowest are 19 (119) and 18 (118) */
    for (int i = 0; i < 20; i++) w[i] = 100 + i;
    w[7] = 500, w[3] = 5;
    CHECK_I64(lsim_report_pick(w, 20, 0, show), 4);
    for (int i = 0; i < 20; i++) CHECK_MSG(show[i] == (i == 7 || i == 3 || i == 19 || i == 18), "rank %d", i);
    /* asked for every rank */
    CHECK_I64(lsim_report_pick(w, 20, 1, show), 20);
    /* equal windows: the lowest indices win (0, 1, 2 slowest, then 3 the fastest) */
    for (int i = 0; i < 40; i++) w[i] = 7;
    CHECK_I64(lsim_report_pick(w, 40, 0, show), 4);
    for (int i = 0; i < 40; i++) CHECK_MSG(show[i] == (i < 4), "tie rank %d", i);
    /* the omitted line: 36 left, their range */
    for (int i = 0; i < 40; i++) w[i] = 1000000 * (i + 1);
    lsim_report_pick(w, 40, 0, show);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lsim_report_table_omitted(f, w, show, 40);
    fclose(f);
    CHECK_MSG(buf && strstr(buf, "(36 more ranks not shown, predicted windows 2.000 .. 37.000 ms"), "%s", buf);
    free(buf);
    /* nothing left out: no line */
    lsim_report_pick(w, 10, 0, show);
    buf = NULL;
    f = open_memstream(&buf, &len);
    lsim_report_table_omitted(f, w, show, 10);
    fclose(f);
    CHECK(len == 0);
    free(buf);
    return check_result("test_report_pick");
}
