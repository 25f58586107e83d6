/* h5refilter FILE DATASET FILTER_ID
 *
 * Rewrites the chunked dataset DATASET of the HDF5 file FILE in place with
 * one more, mandatory filter: FILTER_ID, registered in this process only as
 * a pass-through (the bytes are unchanged). Any other process then finds a
 * dataset whose pipeline names a filter its HDF5 does not have, as on a
 * machine without the plugin a file was written with
 * (tests/integration/store_filters.sh). Values and attributes are kept.
 * Exit 0, or 1 with a message on stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <hdf5.h>

static size_t pass(unsigned flags, size_t ncd, const unsigned cd[], size_t nbytes, size_t *buf_size, void **buf)
{
    (void)flags, (void)ncd, (void)cd, (void)buf_size, (void)buf;
    return nbytes;
}

/* H5Aiterate2 callback: copy attribute `name` of the old dataset to the new one (op_data). */
static herr_t copy_attr(hid_t loc, const char *name, const H5A_info_t *info, void *op_data)
{
    hid_t dst = *(hid_t *)op_data, a = H5Aopen(loc, name, H5P_DEFAULT), t = -1, sp = -1, b = -1;
    herr_t rc = -1;
    (void)info;
    char *buf = NULL;
    if (a < 0 || (t = H5Aget_type(a)) < 0 || (sp = H5Aget_space(a)) < 0) goto cleanup;
    hssize_t np = H5Sget_simple_extent_npoints(sp);
    size_t ts = H5Tget_size(t);
    if (np < 0 || !(buf = calloc((size_t)(np ? np : 1), ts ? ts : 1)) || H5Aread(a, t, buf) < 0) goto cleanup;
    if ((b = H5Acreate2(dst, name, t, sp, H5P_DEFAULT, H5P_DEFAULT)) < 0 || H5Awrite(b, t, buf) < 0) goto cleanup;
    rc = 0;
cleanup:
    free(buf);
    if (b >= 0) H5Aclose(b);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: h5refilter FILE DATASET FILTER_ID\n");
        return 1;
    }
    char *end = NULL;
    errno = 0;
    long id = strtol(argv[3], &end, 10);
    if (errno || *end || id < 256 || id > 65535) {
        fprintf(stderr, "h5refilter: FILTER_ID must be 256..65535, not '%s'\n", argv[3]);
        return 1;
    }
    H5Z_class2_t cls = {H5Z_CLASS_T_VERS, (H5Z_filter_t)id, 1, 1, "h5refilter pass-through", NULL, NULL, pass};
    int rc = 1;
    hid_t f = -1, d = -1, t = -1, sp = -1, dcpl = -1, nd = -1;
    char *buf = NULL;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (H5Zregister(&cls) < 0) goto cleanup;
    if ((f = H5Fopen(argv[1], H5F_ACC_RDWR, H5P_DEFAULT)) < 0 || (d = H5Dopen2(f, argv[2], H5P_DEFAULT)) < 0) {
        fprintf(stderr, "h5refilter: %s: cannot open %s\n", argv[1], argv[2]);
        goto cleanup;
    }
    t = H5Dget_type(d);
    sp = H5Dget_space(d);
    dcpl = H5Dget_create_plist(d);
    hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    size_t ts = t >= 0 ? H5Tget_size(t) : 0;
    if (np < 0 || !ts || dcpl < 0 || H5Pget_layout(dcpl) != H5D_CHUNKED) {
        fprintf(stderr, "h5refilter: %s: %s is not a chunked dataset\n", argv[1], argv[2]);
        goto cleanup;
    }
    if (!(buf = calloc((size_t)(np ? np : 1), ts)) || H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0 ||
        H5Pset_filter(dcpl, (H5Z_filter_t)id, H5Z_FLAG_MANDATORY, 0, NULL) < 0)
        goto cleanup;
    /* the new dataset beside the old one, its attributes copied, then moved over it */
    if ((nd = H5Dcreate2(f, "h5refilter.tmp", t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0 ||
        H5Dwrite(nd, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0 ||
        H5Aiterate2(d, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, copy_attr, &nd) < 0) {
        fprintf(stderr, "h5refilter: %s: cannot rewrite %s\n", argv[1], argv[2]);
        goto cleanup;
    }
    H5Dclose(d);
    d = -1;
    if (H5Ldelete(f, argv[2], H5P_DEFAULT) < 0 || H5Lmove(f, "h5refilter.tmp", f, argv[2], H5P_DEFAULT, H5P_DEFAULT) < 0) {
        fprintf(stderr, "h5refilter: %s: cannot replace %s\n", argv[1], argv[2]);
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(buf);
    if (nd >= 0) H5Dclose(nd);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    if (d >= 0) H5Dclose(d);
    if (f >= 0 && H5Fclose(f) < 0) rc = 1;
    return rc;
}
