/* The plain-program driver shared by every fuzz target's corpus test
 * (fuzz_NAME_run): runs LLVMFuzzerTestOneInput once on each file named, so
 * every build replays the seed corpora and past crash inputs without
 * libFuzzer. The libFuzzer builds link libFuzzer's own main instead. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    int n = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "%s: cannot open %s\n", argv[0], argv[i]);
            return 1;
        }
        size_t cap = 1 << 16, len = 0, got;
        uint8_t *buf = malloc(cap);
        while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
            len += got;
            if (len == cap) {
                uint8_t *nb = realloc(buf, cap *= 2);
                if (!nb) free(buf);
                buf = nb;
            }
        }
        fclose(f);
        if (!buf) return 1;
        LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        n++;
    }
    printf("%s: %d inputs ran without a crash\n", argv[0], n);
    return 0;
}
