/* h5poke FILE DATASET INDEX [VALUE]
 *
 * Prints element INDEX of the integer dataset DATASET of the HDF5 file
 * FILE, or, given VALUE (a decimal int64), writes it there in place. INDEX
 * counts in row-major order: element (i, j) of an n x 4 dataset (a
 * breakdown) is 4 i + j. tests/integration/no_data_loss_numbers.sh makes its bad stores with
 * it (one duration at INT64_MAX, one delay out of range): python's h5py is
 * not installed everywhere, and the HDF5 library lumosim links is. Exit 0,
 * or 1 with a message on stderr.
 *
 * h5poke FILE --schema OP DATASET edits the file's schema in place (the
 * mutated-schema inputs of tests/integration/hostile.py): OP unlink
 * removes DATASET, rename moves it to DATASET_renamed, retype and reshape
 * replace it by a dataset of that name whose type is a 1-byte string, or
 * whose shape is 2 x 3 int64 (no reader expects either). OP list prints
 * every dataset's path, one a line (DATASET is ignored). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

/* HDF5 1.12 gave H5Ovisit a new info struct and a fields argument. */
#if H5_VERSION_GE(1, 12, 0)
typedef H5O_info2_t poke_info;
#define POKE_VISIT(f, cb) H5Ovisit(f, H5_INDEX_NAME, H5_ITER_NATIVE, cb, NULL, H5O_INFO_BASIC)
#else
typedef H5O_info_t poke_info;
#define POKE_VISIT(f, cb) H5Ovisit(f, H5_INDEX_NAME, H5_ITER_NATIVE, cb, NULL)
#endif

static herr_t list_one(hid_t o, const char *name, const poke_info *info, void *op_data)
{
    (void)o;
    (void)op_data;
    if (info->type == H5O_TYPE_DATASET) printf("/%s\n", name);
    return 0;
}

/* Replaces DATASET by a zeroed one of the wrong type or shape; 0 or 1. */
static int schema(const char *file, const char *op, const char *ds)
{
    int rc = 1;
    hid_t f = -1, sp = -1, t = -1, d = -1;
    char to[512];
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    f = H5Fopen(file, strcmp(op, "list") ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0 || (strcmp(op, "list") && H5Lexists(f, ds, H5P_DEFAULT) <= 0)) {
        fprintf(stderr, "h5poke: %s: cannot open, or no %s\n", file, ds);
        goto cleanup;
    }
    if (!strcmp(op, "list")) {
        rc = POKE_VISIT(f, list_one) < 0;
        goto cleanup;
    }
    if (!strcmp(op, "rename")) {
        snprintf(to, sizeof to, "%s_renamed", ds);
        rc = H5Lmove(f, ds, f, to, H5P_DEFAULT, H5P_DEFAULT) < 0;
        goto cleanup;
    }
    if (strcmp(op, "unlink") && strcmp(op, "retype") && strcmp(op, "reshape")) {
        fprintf(stderr, "h5poke: unknown --schema OP '%s'\n", op);
        goto cleanup;
    }
    if (H5Ldelete(f, ds, H5P_DEFAULT) < 0) goto cleanup;
    if (!strcmp(op, "unlink")) {
        rc = 0;
        goto cleanup;
    }
    hsize_t dims[2] = {2, 3};
    sp = H5Screate_simple(strcmp(op, "retype") ? 2 : 1, dims, NULL);
    t = H5Tcopy(strcmp(op, "retype") ? H5T_NATIVE_INT64 : H5T_C_S1);
    if (sp < 0 || t < 0) goto cleanup;
    d = H5Dcreate2(f, ds, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    rc = d < 0;
cleanup:
    if (rc) fprintf(stderr, "h5poke: %s: --schema %s %s failed\n", file, op, ds);
    if (d >= 0) H5Dclose(d);
    if (t >= 0) H5Tclose(t);
    if (sp >= 0) H5Sclose(sp);
    if (f >= 0 && H5Fclose(f) < 0) rc = 1;
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[2], "--schema")) return schema(argv[1], argv[3], argv[4]);
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
