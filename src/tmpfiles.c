/* Registry of temporary output files (see tmpfiles.h). */
#include "lumosim/tmpfiles.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 16
#define MAXPATH 4096

static char g_path[SLOTS][MAXPATH];
static volatile sig_atomic_t g_used[SLOTS];

int lsim_tmp_register(const char *path)
{
    size_t n = strlen(path);
    if (n >= MAXPATH) return -1;
    for (int i = 0; i < SLOTS; i++)
        if (!g_used[i]) {
            memcpy(g_path[i], path, n + 1);
            g_used[i] = 1;
            return i;
        }
    return -1;
}

void lsim_tmp_unregister(int slot)
{
    if (slot >= 0 && slot < SLOTS) g_used[slot] = 0;
}

void lsim_tmp_remove_slot(int slot)
{
    if (slot >= 0 && slot < SLOTS && g_used[slot]) {
        unlink(g_path[slot]);
        g_used[slot] = 0;
    }
}

void lsim_tmp_remove_all(void)
{
    for (int i = 0; i < SLOTS; i++) lsim_tmp_remove_slot(i);
}
