/* placeholder: being written (see lsim_report_html in include/lumosim/report.h) */
#include "lumosim/report.h"

int lsim_report_html(FILE *f, const lsim_replay_item *items, size_t n, lsim_err *err)
{
    (void)f;
    (void)items;
    (void)n;
    return lsim_err_set(err, LSIM_EINTERNAL, "HTML report is not built yet");
}
