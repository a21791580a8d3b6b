/* idx.c — reads IDX image/label files (plain or gzip, through zlib) into data
 * sets, with every header field and length checked against the file. */
#include "sc_idx.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define SC_IDX_TYPE_UBYTE 0x08
#define SC_IDX_MAX_DIMS 4
#define SC_IDX_MAX_DIM ((uint32_t)1 << 24)
/* Largest payload accepted (bytes): far above any MNIST-family file. */
#define SC_IDX_MAX_BYTES ((uint64_t)1 << 34)
#define SC_IDX_CHUNK ((size_t)1 << 20)

typedef struct sc_idx_file {
        int ndims;
        uint32_t dims[SC_IDX_MAX_DIMS];
        uint8_t *data; /* product(dims) bytes; owned */
        size_t len;
} sc_idx_file_t;

/* Reads exactly len bytes; returns the number read (short on EOF) or -1. */
static long sc_idx_read(gzFile gz, void *buf, size_t len)
{
        size_t got = 0;
        while (got < len) {
                size_t want = len - got;
                if (want > SC_IDX_CHUNK)
                        want = SC_IDX_CHUNK;
                int r = gzread(gz, (uint8_t *)buf + got, (unsigned)want);
                if (r < 0)
                        return -1;
                if (r == 0)
                        break;
                got += (size_t)r;
        }
        return (long)got;
}

/* Describes a failed gzread: a system error (SC_ERR_IO) or damaged
 * compressed data (SC_ERR_CORRUPT). */
static sc_err_t sc_idx_read_error(gzFile gz, const char *path, char *errstr, size_t errstr_size)
{
        int code;
        const char *msg = gzerror(gz, &code);
        if (code == Z_ERRNO)
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: read error: %s", path,
                               strerror(errno));
        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size, "%s: damaged gzip data: %s", path, msg);
}

/* Parses one IDX file of unsigned bytes with min_dims..max_dims dimensions. */
static sc_err_t sc_idx_read_file(sc_idx_file_t *f, const char *path, int min_dims, int max_dims,
                                 char *errstr, size_t errstr_size)
{
        sc_err_t err = SC_OK;
        uint8_t hdr[4];
        long r;

        memset(f, 0, sizeof(*f));
        errno = 0;
        gzFile gz = gzopen(path, "rb");
        if (!gz)
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: cannot open: %s", path,
                               errno ? strerror(errno) : "out of memory");
        r = sc_idx_read(gz, hdr, 4);
        if (r < 0) {
                err = sc_idx_read_error(gz, path, errstr, errstr_size);
                goto out_close;
        }
        if (r < 4 || hdr[0] != 0 || hdr[1] != 0) {
                err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                              "%s: not an IDX file (bad magic number)", path);
                goto out_close;
        }
        if (hdr[2] != SC_IDX_TYPE_UBYTE) {
                err = sc_errf(SC_ERR_UNSUPPORTED, errstr, errstr_size,
                              "%s: IDX element type 0x%02x is not supported (only unsigned "
                              "bytes, 0x08)",
                              path, hdr[2]);
                goto out_close;
        }
        f->ndims = hdr[3];
        if (f->ndims < min_dims || f->ndims > max_dims) {
                if (min_dims == max_dims)
                        err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                      "%s: IDX file has %d dimensions, expected %d", path, f->ndims,
                                      min_dims);
                else
                        err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                      "%s: IDX file has %d dimensions, expected %d to %d", path,
                                      f->ndims, min_dims, max_dims);
                goto out_close;
        }
        uint8_t dimbuf[4 * SC_IDX_MAX_DIMS];
        r = sc_idx_read(gz, dimbuf, 4 * (size_t)f->ndims);
        if (r != 4 * (long)f->ndims) {
                err =
                    sc_errf(SC_ERR_CORRUPT, errstr, errstr_size, "%s: truncated IDX header", path);
                goto out_close;
        }
        uint64_t total = 1;
        for (int i = 0; i < f->ndims; i++) {
                const uint8_t *p = dimbuf + 4 * i;
                f->dims[i] =
                    (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
                if (f->dims[i] < 1 || f->dims[i] > SC_IDX_MAX_DIM) {
                        err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                      "%s: IDX dimension %d is %u, outside [1, %u]", path, i,
                                      f->dims[i], SC_IDX_MAX_DIM);
                        goto out_close;
                }
                total *= f->dims[i];
                if (total > SC_IDX_MAX_BYTES) {
                        err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                      "%s: IDX payload exceeds %llu bytes", path,
                                      (unsigned long long)SC_IDX_MAX_BYTES);
                        goto out_close;
                }
        }
        /* Grow the buffer as data arrives, so a header that lies about its
         * size costs no more memory than the file really holds. */
        size_t cap = 0;
        f->len = 0;
        while (f->len < total) {
                if (f->len == cap) {
                        size_t ncap = cap ? cap * 2 : SC_IDX_CHUNK;
                        if (ncap > total)
                                ncap = (size_t)total;
                        uint8_t *nd = realloc(f->data, ncap);
                        if (!nd) {
                                err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                                              "%s: cannot allocate %zu bytes", path, ncap);
                                goto out_close;
                        }
                        f->data = nd;
                        cap = ncap;
                }
                r = sc_idx_read(gz, f->data + f->len, cap - f->len);
                if (r < 0) {
                        err = sc_idx_read_error(gz, path, errstr, errstr_size);
                        goto out_close;
                }
                f->len += (size_t)r;
                if (f->len < cap)
                        break;
        }
        if (f->len < total) {
                err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                              "%s: truncated: header announces %llu data bytes, file has %zu", path,
                              (unsigned long long)total, f->len);
                goto out_close;
        }
        uint8_t extra;
        r = sc_idx_read(gz, &extra, 1);
        if (r != 0) {
                err = r < 0 ? sc_idx_read_error(gz, path, errstr, errstr_size)
                            : sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                      "%s: trailing bytes after the %llu data bytes the header "
                                      "announces",
                                      path, (unsigned long long)total);
                goto out_close;
        }
out_close:
        gzclose(gz);
        if (err) {
                free(f->data);
                memset(f, 0, sizeof(*f));
        }
        return err;
}

sc_err_t sc_idx_load(sc_dataset_t *ds, const char *images, const char *labels, int n_classes,
                     char *errstr, size_t errstr_size)
{
        return sc_idx_load_norm(ds, images, labels, n_classes, 1.0f / 255.0f, 0.0f, 1.0f, errstr,
                                errstr_size);
}

sc_err_t sc_idx_load_norm(sc_dataset_t *ds, const char *images, const char *labels, int n_classes,
                          float scale, float mean, float std, char *errstr, size_t errstr_size)
{
        sc_idx_file_t img, lab;
        sc_err_t err;

        memset(ds, 0, sizeof(*ds));
        if (n_classes < 1 || n_classes > 256)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "IDX labels: n_classes %d outside [1, 256]", n_classes);
        err = sc_idx_read_file(&img, images, 3, 4, errstr, errstr_size);
        if (err)
                return err;
        err = sc_idx_read_file(&lab, labels, 1, 1, errstr, errstr_size);
        if (err)
                goto out_free_img;
        if (img.dims[0] != lab.dims[0]) {
                err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                              "%s has %u images but %s has %u labels", images, img.dims[0], labels,
                              lab.dims[0]);
                goto out_free_lab;
        }
        sc_shape_t shape;
        if (img.ndims == 3)
                shape = (sc_shape_t){1, (int)img.dims[1], (int)img.dims[2]};
        else
                shape = (sc_shape_t){(int)img.dims[1], (int)img.dims[2], (int)img.dims[3]};
        for (uint32_t i = 0; i < lab.dims[0]; i++) {
                if (lab.data[i] >= n_classes) {
                        err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                      "%s: label %u of sample %u is outside [0, %d)", labels,
                                      lab.data[i], i, n_classes);
                        goto out_free_lab;
                }
        }
        err = sc_dataset_alloc(ds, img.dims[0], shape, n_classes, errstr, errstr_size);
        if (err)
                goto out_free_lab;
        for (size_t i = 0; i < img.len; i++)
                ds->x[i] = ((float)img.data[i] * scale - mean) / std;
        for (uint32_t i = 0; i < lab.dims[0]; i++)
                ds->y[i] = lab.data[i];
out_free_lab:
        free(lab.data);
out_free_img:
        free(img.data);
        return err;
}

/* Finds dir/name.gz or dir/name; writes the one that exists (or name.gz when
 * neither does, so the error names the expected file) into out. */
static void sc_idx_find(char *out, size_t out_size, const char *dir, const char *name)
{
        static const char *const suffixes[] = {".gz", "", ".gz"};
        struct stat st;
        for (int i = 0; i < 3; i++) {
                snprintf(out, out_size, "%s/%s%s", dir, name, suffixes[i]);
                if (stat(out, &st) == 0)
                        return;
        }
}

static sc_err_t sc_fmnist_load_half(const char *dir, const char *prefix, sc_dataset_t *ds,
                                    char *errstr, size_t errstr_size)
{
        char images[4096], labels[4096], name[64];
        snprintf(name, sizeof(name), "%s-images-idx3-ubyte", prefix);
        sc_idx_find(images, sizeof(images), dir, name);
        snprintf(name, sizeof(name), "%s-labels-idx1-ubyte", prefix);
        sc_idx_find(labels, sizeof(labels), dir, name);
        return sc_idx_load(ds, images, labels, 10, errstr, errstr_size);
}

sc_err_t sc_fmnist_load(const char *dir, sc_dataset_t *train, sc_dataset_t *test, char *errstr,
                        size_t errstr_size)
{
        sc_err_t err;

        if (!dir || !*dir)
                dir = SC_FMNIST_DIR;
        if (strlen(dir) > 3000)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "data folder name too long");
        if (train) {
                err = sc_fmnist_load_half(dir, "train", train, errstr, errstr_size);
                if (err)
                        return err;
        }
        if (test) {
                err = sc_fmnist_load_half(dir, "t10k", test, errstr, errstr_size);
                if (err) {
                        sc_dataset_free(train);
                        return err;
                }
        }
        return SC_OK;
}
