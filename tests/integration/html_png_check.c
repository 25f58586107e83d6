/* html_png_check FILE.png [--min-nonbg PERCENT] [--min-colors N] [--color RRGGBB:MINPIXELS]...
 *
 * Checks that a screenshot is not blank, without python or image libraries:
 * decodes an 8-bit, non-interlaced PNG (greyscale, RGB, grey+alpha or RGBA)
 * with zlib, undoes the row filters, and counts colours (alpha ignored). The
 * background is the most frequent colour. Passes when at least PERCENT of the
 * pixels (default 1) differ from the background, at least N distinct colours
 * occur (default 8), and each --color (or, for a list, its colours together)
 * fills at least MINPIXELS pixels (for example the chart colours: proves the
 * SVG was rendered).
 *
 * Exit: 0 pass, 1 fail, 2 usage error or a PNG this checker does not decode. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#define MAX_COLORS_ARG 16 /* --color options */
#define MAX_COLORS_LIST 8  /* colours in one --color */
#define HASH_BITS 20 /* 1M slots; screenshots hold far fewer colours */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int fail2(const char *path, const char *what)
{
    fprintf(stderr, "html_png_check: %s: %s\n", path, what);
    return 2;
}

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    unsigned char *b = malloc(cap);
    while (b) {
        if (n == cap) {
            unsigned char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    fclose(f);
    *len = n;
    return b;
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* file scope, so that an early error exit leaves nothing a leak checker
 * would report */
static unsigned char *buf, *raw;
static z_stream zs;

typedef struct {
    uint32_t key; /* colour + 1 (0 = empty) */
    uint32_t count;
} slot;

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: html_png_check FILE.png [--min-nonbg PERCENT] [--min-colors N] "
                        "[--color RRGGBB:MINPIXELS]...\n");
        return 2;
    }
    const char *path = argv[1];
    double min_nonbg = 1.0;
    unsigned long min_colors = 8;
    uint32_t want_rgb[MAX_COLORS_ARG][MAX_COLORS_LIST];
    int want_n[MAX_COLORS_ARG];
    const char *want_arg[MAX_COLORS_ARG];
    unsigned long want_min[MAX_COLORS_ARG];
    int nwant = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--min-nonbg") && i + 1 < argc) min_nonbg = atof(argv[++i]);
        else if (!strcmp(argv[i], "--min-colors") && i + 1 < argc) min_colors = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--color") && i + 1 < argc && nwant < MAX_COLORS_ARG) {
            const char *a = argv[++i], *p = a;
            char *e = NULL;
            want_n[nwant] = 0;
            want_arg[nwant] = a;
            for (;;) {
                uint32_t c = (uint32_t)strtoul(p, &e, 16);
                if (!e || e - p != 6 || (*e != ',' && *e != ':') || want_n[nwant] == MAX_COLORS_LIST)
                    return fail2(a, "--color takes RRGGBB[,RRGGBB]...:MINPIXELS");
                want_rgb[nwant][want_n[nwant]++] = c;
                p = e + 1;
                if (*e == ':') break;
            }
            want_min[nwant++] = strtoul(p, NULL, 10);
        } else {
            fprintf(stderr, "html_png_check: bad argument '%s'\n", argv[i]);
            return 2;
        }
    }

    size_t len = 0;
    buf = read_all(path, &len);
    if (!buf) return fail2(path, "cannot read the file");
    static const unsigned char SIG[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len < 8 || memcmp(buf, SIG, 8)) return fail2(path, "not a PNG file");

    uint32_t w = 0, h = 0;
    int depth = 0, ctype = -1, interlace = 0, channels = 0;
    size_t stride = 0, rawlen = 0, got = 0;
    int zinit = 0, zend = 0;
    size_t pos = 8;
    while (pos + 12 <= len) {
        uint32_t clen = be32(buf + pos);
        const unsigned char *type = buf + pos + 4, *data = buf + pos + 8;
        if (clen > len - pos - 12) return fail2(path, "truncated chunk");
        if (!memcmp(type, "IHDR", 4)) {
            if (clen < 13) return fail2(path, "short IHDR");
            w = be32(data);
            h = be32(data + 4);
            depth = data[8];
            ctype = data[9];
            interlace = data[12];
            channels = ctype == 0 ? 1 : ctype == 2 ? 3 : ctype == 4 ? 2 : ctype == 6 ? 4 : 0;
            if (depth != 8 || !channels) return fail2(path, "only 8-bit grey/RGB/RGBA PNGs are decoded");
            if (interlace) return fail2(path, "interlaced PNGs are not decoded");
            if (!w || !h || w > 20000 || h > 40000) return fail2(path, "implausible image size");
            stride = (size_t)w * (size_t)channels;
            rawlen = (stride + 1) * h;
            raw = malloc(rawlen);
            if (!raw) return fail2(path, "out of memory");
            if (inflateInit(&zs) != Z_OK) return fail2(path, "inflateInit failed");
            zinit = 1;
        } else if (!memcmp(type, "IDAT", 4)) {
            if (!zinit) return fail2(path, "IDAT before IHDR");
            if (!zend) {
                zs.next_in = (unsigned char *)data;
                zs.avail_in = clen;
                while (zs.avail_in > 0) {
                    zs.next_out = raw + got;
                    zs.avail_out = (uInt)(rawlen - got);
                    int zr = inflate(&zs, Z_NO_FLUSH);
                    got = rawlen - zs.avail_out;
                    if (zr == Z_STREAM_END) {
                        zend = 1;
                        break;
                    }
                    if (zr != Z_OK) return fail2(path, "corrupt image data");
                    if (zs.avail_out == 0) break; /* more data than the image needs */
                }
            }
        } else if (!memcmp(type, "IEND", 4)) {
            break;
        }
        pos += 12 + (size_t)clen;
    }
    if (zinit) inflateEnd(&zs);
    if (!raw || got != rawlen) return fail2(path, "image data missing or short");

    /* undo the filters in place */
    int bpp = channels;
    for (uint32_t y = 0; y < h; y++) {
        unsigned char *row = raw + (size_t)y * (stride + 1), *cur = row + 1;
        const unsigned char *prev = y ? raw + (size_t)(y - 1) * (stride + 1) + 1 : NULL;
        int ft = row[0];
        for (size_t i = 0; i < stride; i++) {
            int a = i >= (size_t)bpp ? cur[i - bpp] : 0, b = prev ? prev[i] : 0,
                c = prev && i >= (size_t)bpp ? prev[i - bpp] : 0;
            switch (ft) {
            case 0: break;
            case 1: cur[i] = (unsigned char)(cur[i] + a); break;
            case 2: cur[i] = (unsigned char)(cur[i] + b); break;
            case 3: cur[i] = (unsigned char)(cur[i] + ((a + b) >> 1)); break;
            case 4: cur[i] = (unsigned char)(cur[i] + paeth(a, b, c)); break;
            default: return fail2(path, "bad filter type");
            }
        }
    }

    /* colour histogram (open addressing; colours past 3/4 full are lumped) */
    size_t nslots = (size_t)1 << HASH_BITS, used = 0;
    static slot *tab;
    tab = calloc(nslots, sizeof *tab);
    if (!tab) return fail2(path, "out of memory");
    unsigned long long lumped = 0, want_cnt[MAX_COLORS_ARG] = {0};
    for (uint32_t y = 0; y < h; y++) {
        const unsigned char *p = raw + (size_t)y * (stride + 1) + 1;
        for (uint32_t x = 0; x < w; x++, p += channels) {
            uint32_t rgb = channels >= 3 ? (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]
                                         : (uint32_t)p[0] * 0x010101u;
            for (int k = 0; k < nwant; k++)
                for (int j = 0; j < want_n[k]; j++)
                    if (rgb == want_rgb[k][j]) want_cnt[k]++;
            size_t i = (size_t)((rgb * 2654435761u) >> (32 - HASH_BITS));
            while (tab[i].key && tab[i].key != rgb + 1) i = (i + 1) & (nslots - 1);
            if (tab[i].key) tab[i].count++;
            else if (used < nslots / 4 * 3) {
                tab[i].key = rgb + 1;
                tab[i].count = 1;
                used++;
            } else lumped++;
        }
    }
    uint32_t bg = 0, bgc = 0;
    for (size_t i = 0; i < nslots; i++)
        if (tab[i].key && tab[i].count > bgc) {
            bgc = tab[i].count;
            bg = tab[i].key - 1;
        }
    unsigned long long total = (unsigned long long)w * h;
    double nonbg = 100.0 * (double)(total - bgc) / (double)total;
    printf("%s: %ux%u, %zu colours%s, background #%06x (%.1f%%), non-background %.2f%%\n", path, w, h, used,
           lumped ? " (or more)" : "", bg, 100.0 * bgc / (double)total, nonbg);
    int ok = 1;
    if (nonbg < min_nonbg) {
        printf("FAIL: only %.2f%% of the pixels differ from the background (want >= %.2f%%)\n", nonbg, min_nonbg);
        ok = 0;
    }
    if (used < min_colors) {
        printf("FAIL: only %zu distinct colours (want >= %lu)\n", used, min_colors);
        ok = 0;
    }
    for (int k = 0; k < nwant; k++) {
        printf("colour %s: %llu pixels\n", want_arg[k], want_cnt[k]);
        if (want_cnt[k] < want_min[k]) {
            printf("FAIL: colour(s) %s in %llu pixels (want >= %lu)\n", want_arg[k], want_cnt[k], want_min[k]);
            ok = 0;
        }
    }
    free(tab);
    free(raw);
    free(buf);
    return ok ? 0 : 1;
}
