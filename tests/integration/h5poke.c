/* h5poke FILE DATASET INDEX [VALUE]
 *
 * Prints element INDEX of the integer dataset DATASET of the HDF5 file
 * FILE, or, given VALUE (a decimal int64), writes it there in place. INDEX
 * counts in row-major order: element (i, j) of an n x 4 dataset (a
 * breakdown) is 4 i + j. tests/integration/no_data_loss_numbers.sh makes its bad stores with
 * it (one duration at INT64_MAX, one delay out of range): python's h5py is
 * not installed everywhere, and the HDF5 library lumosim links is. Exit 0,
 * or 1 with a message on stderr. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <hdf5.h>

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: h5poke FILE DATASET INDEX [VALUE]\n");
        return 1;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long idx = strtoull(argv[3], &end, 10);
    if (errno || *end || end == argv[3]) {
        fprintf(stderr, "h5poke: bad INDEX '%s'\n", argv[3]);
        return 1;
    }
    int64_t val = 0;
    if (argc == 5) {
        errno = 0;
        long long v = strtoll(argv[4], &end, 10);
        if (errno || *end || end == argv[4]) {
            fprintf(stderr, "h5poke: bad VALUE '%s'\n", argv[4]);
            return 1;
        }
        val = (int64_t)v;
    }
    int rc = 1;
    hid_t f = -1, d = -1, fs = -1, ms = -1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    f = H5Fopen(argv[1], argc == 5 ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        fprintf(stderr, "h5poke: %s: cannot open\n", argv[1]);
        goto cleanup;
    }
    d = H5Dopen2(f, argv[2], H5P_DEFAULT);
    if (d < 0) {
        fprintf(stderr, "h5poke: %s: no dataset %s\n", argv[1], argv[2]);
        goto cleanup;
    }
    fs = H5Dget_space(d);
    hsize_t dims[8], start[8], ones[8], n = 1;
    int nd = fs < 0 ? -1 : H5Sget_simple_extent_ndims(fs);
    if (nd < 1 || nd > 8 || H5Sget_simple_extent_dims(fs, dims, NULL) != nd) {
        fprintf(stderr, "h5poke: %s: %s is not a 1- to 8-dimensional dataset\n", argv[1], argv[2]);
        goto cleanup;
    }
    for (int k = 0; k < nd; k++) n *= dims[k];
    if (idx >= n) {
        fprintf(stderr, "h5poke: %s: %s has %llu elements, not %llu\n", argv[1], argv[2], (unsigned long long)n,
                idx + 1);
        goto cleanup;
    }
    for (int k = nd - 1; k >= 0; k--) {
        start[k] = idx % dims[k];
        idx /= dims[k];
        ones[k] = 1;
    }
    hsize_t one = 1;
    ms = H5Screate_simple(1, &one, NULL);
    if (ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, ones, NULL) < 0) goto cleanup;
    if (argc == 5) {
        if (H5Dwrite(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, &val) < 0) {
            fprintf(stderr, "h5poke: %s: cannot write %s[%s]\n", argv[1], argv[2], argv[3]);
            goto cleanup;
        }
    } else {
        if (H5Dread(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, &val) < 0) {
            fprintf(stderr, "h5poke: %s: cannot read %s[%s]\n", argv[1], argv[2], argv[3]);
            goto cleanup;
        }
        printf("%" PRId64 "\n", val);
    }
    rc = 0;
cleanup:
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (d >= 0) H5Dclose(d);
    if (f >= 0 && H5Fclose(f) < 0) rc = 1;
    return rc;
}
