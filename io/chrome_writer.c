/* placeholder: being written (see include/lumosim/chrome.h) */
#include "lumosim/chrome.h"

int lsim_chrome_write(const char *path, const lsim_replay_item *items, size_t n, lsim_err *err)
{
    (void)items;
    (void)n;
    return lsim_err_set(err, LSIM_EINTERNAL, "%s: trace writing is not built yet", path);
}
