/* The fuzz targets whose readers take a path: the input bytes written to a
 * fresh temporary file. */
#ifndef LSIM_FUZZ_TMPFILE_H
#define LSIM_FUZZ_TMPFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Write data[0..size) to a new file made from tmpl (a mkstemp template,
 * modified in place to the file's name). 1 when the whole input is there
 * (the caller removes it), 0 when no file could be made or filled (any file
 * made is removed). */
static int fuzz_write_tmp(char *tmpl, const uint8_t *data, size_t size)
{
    int fd = mkstemp(tmpl);
    if (fd < 0) return 0;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
    close(fd);
    if (off != size) {
        unlink(tmpl);
        return 0;
    }
    return 1;
}

#endif
