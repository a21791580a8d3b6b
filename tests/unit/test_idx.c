/* test_idx.c — IDX and Fashion-MNIST loading from small files written by the
 * test (plain and gzip), and every kind of bad file rejected with its name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "sc_idx.h"

static char tmpdir[256];

static void path_of(char *out, size_t size, const char *name)
{
        snprintf(out, size, "%s/%s", tmpdir, name);
}

/* Writes bytes to tmpdir/name, gzip-compressed when the name ends in .gz. */
static void write_file(const char *name, const uint8_t *buf, size_t len)
{
        char path[512];
        path_of(path, sizeof(path), name);
        size_t nl = strlen(name);
        if (nl > 3 && !strcmp(name + nl - 3, ".gz")) {
                gzFile gz = gzopen(path, "wb");
                assert_non_null(gz);
                if (len)
                        assert_int_equal(gzwrite(gz, buf, (unsigned)len), (int)len);
                assert_int_equal(gzclose(gz), Z_OK);
        } else {
                FILE *f = fopen(path, "wb");
                assert_non_null(f);
                if (len)
                        assert_int_equal(fwrite(buf, 1, len, f), len);
                assert_int_equal(fclose(f), 0);
        }
}

static size_t put_be32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
        return 4;
}

/* An image IDX file: n images of h x w with pixel (k, i) = (k * 7 + i) % 256. */
static size_t make_images(uint8_t *buf, uint32_t n, uint32_t h, uint32_t w)
{
        size_t o = 0;
        buf[o++] = 0;
        buf[o++] = 0;
        buf[o++] = 0x08;
        buf[o++] = 3;
        o += put_be32(buf + o, n);
        o += put_be32(buf + o, h);
        o += put_be32(buf + o, w);
        for (uint32_t k = 0; k < n; k++)
                for (uint32_t i = 0; i < h * w; i++)
                        buf[o++] = (uint8_t)((k * 7 + i) % 256);
        return o;
}

/* A label IDX file: n labels, label k = k % classes. */
static size_t make_labels(uint8_t *buf, uint32_t n, uint32_t classes)
{
        size_t o = 0;
        buf[o++] = 0;
        buf[o++] = 0;
        buf[o++] = 0x08;
        buf[o++] = 1;
        o += put_be32(buf + o, n);
        for (uint32_t k = 0; k < n; k++)
                buf[o++] = (uint8_t)(k % classes);
        return o;
}

static uint8_t ibuf[1 << 16], lbuf[1 << 12];

static int setup(void **state)
{
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/sc_test_idx.XXXXXX");
        if (!mkdtemp(tmpdir))
                return -1;
        return 0;
}

static int teardown(void **state)
{
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

static void check_valid(const sc_dataset_t *ds, uint32_t n, uint32_t h, uint32_t w)
{
        assert_int_equal(ds->n, n);
        assert_int_equal(ds->shape.c, 1);
        assert_int_equal(ds->shape.h, (int)h);
        assert_int_equal(ds->shape.w, (int)w);
        assert_int_equal(ds->n_classes, 10);
        for (uint32_t k = 0; k < n; k++) {
                assert_int_equal(ds->y[k], (int32_t)(k % 10));
                for (uint32_t i = 0; i < h * w; i++) {
                        float want = (float)((k * 7 + i) % 256) / 255.0f;
                        assert_float_equal(ds->x[k * h * w + i], want, 1e-6);
                }
        }
}

static void load_plain_and_gzip(void **state)
{
        char ip[512], lp[512], err[256];
        sc_dataset_t ds;
        const char *names[2][2] = {{"a-img", "a-lab"}, {"b-img.gz", "b-lab.gz"}};
        for (int g = 0; g < 2; g++) {
                write_file(names[g][0], ibuf, make_images(ibuf, 23, 5, 4));
                write_file(names[g][1], lbuf, make_labels(lbuf, 23, 10));
                path_of(ip, sizeof(ip), names[g][0]);
                path_of(lp, sizeof(lp), names[g][1]);
                assert_int_equal(sc_idx_load(&ds, ip, lp, 10, err, sizeof(err)), SC_OK);
                check_valid(&ds, 23, 5, 4);
                sc_dataset_free(&ds);
                assert_null(ds.x);
        }
}

static void load_four_dims(void **state)
{
        char ip[512], lp[512], err[256];
        sc_dataset_t ds;
        size_t o = 0;
        ibuf[o++] = 0;
        ibuf[o++] = 0;
        ibuf[o++] = 8;
        ibuf[o++] = 4;
        o += put_be32(ibuf + o, 2);
        o += put_be32(ibuf + o, 3);
        o += put_be32(ibuf + o, 2);
        o += put_be32(ibuf + o, 2);
        for (int i = 0; i < 24; i++)
                ibuf[o++] = (uint8_t)(i * 10);
        write_file("c4-img", ibuf, o);
        write_file("c4-lab", lbuf, make_labels(lbuf, 2, 10));
        path_of(ip, sizeof(ip), "c4-img");
        path_of(lp, sizeof(lp), "c4-lab");
        assert_int_equal(sc_idx_load(&ds, ip, lp, 10, err, sizeof(err)), SC_OK);
        assert_int_equal(ds.shape.c, 3);
        assert_int_equal(ds.shape.h, 2);
        assert_int_equal(ds.shape.w, 2);
        assert_float_equal(ds.x[23], 230.0f / 255.0f, 1e-6);
        sc_dataset_free(&ds);
}

static void fmnist_folder(void **state)
{
        char err[256];
        sc_dataset_t tr, te;
        /* Training files gzip, test files plain: both must be found. */
        write_file("train-images-idx3-ubyte.gz", ibuf, make_images(ibuf, 30, 28, 28));
        write_file("train-labels-idx1-ubyte.gz", lbuf, make_labels(lbuf, 30, 10));
        write_file("t10k-images-idx3-ubyte", ibuf, make_images(ibuf, 12, 28, 28));
        write_file("t10k-labels-idx1-ubyte", lbuf, make_labels(lbuf, 12, 10));
        assert_int_equal(sc_fmnist_load(tmpdir, &tr, &te, err, sizeof(err)), SC_OK);
        check_valid(&tr, 30, 28, 28);
        check_valid(&te, 12, 28, 28);
        sc_dataset_free(&tr);
        sc_dataset_free(&te);

        /* A folder without the files names the file it looked for. */
        char empty[600];
        path_of(empty, sizeof(empty), "nothing-here");
        assert_int_equal(sc_fmnist_load(empty, &tr, &te, err, sizeof(err)), SC_ERR_IO);
        assert_non_null(strstr(err, "train-images-idx3-ubyte.gz"));
        assert_null(tr.x);
        assert_null(te.x);
}

/* A bad pair (images, labels) must fail with err and a message holding needle. */
static void expect_bad(const uint8_t *img, size_t ilen, const uint8_t *lab, size_t llen,
                       sc_err_t want, const char *needle, const char *needle_file)
{
        char ip[512], lp[512], err[512];
        sc_dataset_t ds;
        for (int g = 0; g < 2; g++) {
                const char *in = g ? "bad-img.gz" : "bad-img";
                const char *ln = g ? "bad-lab.gz" : "bad-lab";
                write_file(in, img, ilen);
                write_file(ln, lab, llen);
                path_of(ip, sizeof(ip), in);
                path_of(lp, sizeof(lp), ln);
                memset(&ds, 0xa5, sizeof(ds));
                err[0] = 0;
                sc_err_t rc = sc_idx_load(&ds, ip, lp, 10, err, sizeof(err));
                if (rc != want || !strstr(err, needle) || !strstr(err, needle_file))
                        fail_msg("expected %s with '%s' in '%s', got %s: %s", sc_err2str(want),
                                 needle, needle_file, sc_err2str(rc), err);
                assert_null(ds.x);
                assert_null(ds.y);
                assert_int_equal(ds.n, 0);
        }
}

static void bad_files(void **state)
{
        static uint8_t img[1 << 12], lab[256];
        size_t il, ll;

        il = make_images(img, 6, 4, 4);
        ll = make_labels(lab, 6, 10);
        /* bad magic: first bytes not zero */
        img[0] = 0x1f;
        expect_bad(img, il, lab, ll, SC_ERR_CORRUPT, "bad magic", "bad-img");
        img[0] = 0;
        lab[1] = 1;
        expect_bad(img, il, lab, ll, SC_ERR_CORRUPT, "bad magic", "bad-lab");
        lab[1] = 0;
        /* element type other than unsigned byte */
        img[2] = 0x0d;
        expect_bad(img, il, lab, ll, SC_ERR_UNSUPPORTED, "0x0d", "bad-img");
        img[2] = 0x08;
        /* wrong number of dimensions: images with 1, labels with 3 */
        img[3] = 1;
        expect_bad(img, il, lab, ll, SC_ERR_CORRUPT, "1 dimensions, expected 3 to 4", "bad-img");
        img[3] = 3;
        lab[3] = 3;
        expect_bad(img, il, lab, ll, SC_ERR_CORRUPT, "3 dimensions, expected 1", "bad-lab");
        lab[3] = 1;
        /* a zero dimension */
        put_be32(img + 8, 0);
        expect_bad(img, il, lab, ll, SC_ERR_CORRUPT, "dimension 1 is 0", "bad-img");
        put_be32(img + 8, 4);
        /* a dimension far larger than the data (allocation must stay small) */
        put_be32(img + 4, 1u << 24);
        put_be32(img + 8, 1u << 24);
        expect_bad(img, il, lab, ll, SC_ERR_CORRUPT, "exceeds", "bad-img");
        put_be32(img + 4, 6);
        put_be32(img + 8, 4);
        /* a count far larger than the data: reported as truncation */
        put_be32(img + 4, 1u << 24);
        expect_bad(img, il, lab, ll, SC_ERR_CORRUPT, "announces 268435456 data bytes, file has 96",
                   "bad-img");
        put_be32(img + 4, 6);
        /* truncated: in the header, and in the data, of either file */
        expect_bad(img, 2, lab, ll, SC_ERR_CORRUPT, "bad magic", "bad-img");
        expect_bad(img, 10, lab, ll, SC_ERR_CORRUPT, "truncated IDX header", "bad-img");
        expect_bad(img, il - 1, lab, ll, SC_ERR_CORRUPT, "truncated", "bad-img");
        expect_bad(img, 16, lab, ll, SC_ERR_CORRUPT, "file has 0", "bad-img");
        expect_bad(img, il, lab, ll - 3, SC_ERR_CORRUPT, "truncated", "bad-lab");
        expect_bad(img, 0, lab, ll, SC_ERR_CORRUPT, "bad magic", "bad-img");
        /* trailing bytes after the announced data */
        img[il] = 0;
        expect_bad(img, il + 1, lab, ll, SC_ERR_CORRUPT, "trailing", "bad-img");
        /* label out of range */
        lab[8 + 4] = 10;
        expect_bad(img, il, lab, ll, SC_ERR_CORRUPT, "label 10 of sample 4", "bad-lab");
        lab[8 + 4] = 255;
        expect_bad(img, il, lab, ll, SC_ERR_CORRUPT, "label 255 of sample 4", "bad-lab");
        lab[8 + 4] = 4;
        /* image and label counts differ */
        ll = make_labels(lab, 5, 10);
        expect_bad(img, il, lab, ll, SC_ERR_CORRUPT, "has 6 images but", "bad-lab");
        /* a missing file */
        char ip[512], lp[512], err[512];
        sc_dataset_t ds;
        path_of(ip, sizeof(ip), "no-such-file");
        path_of(lp, sizeof(lp), "bad-lab");
        assert_int_equal(sc_idx_load(&ds, ip, lp, 10, err, sizeof(err)), SC_ERR_IO);
        assert_non_null(strstr(err, "no-such-file"));
        /* n_classes out of range */
        assert_int_equal(sc_idx_load(&ds, ip, lp, 0, err, sizeof(err)), SC_ERR_INVAL);
}

/* Damaged or cut gzip streams are corrupt data, not a crash or a short set. */
static void damaged_gzip(void **state)
{
        char ip[512], lp[512], err[512];
        static uint8_t gz[1 << 16];
        sc_dataset_t ds;
        write_file("dmg-img.gz", ibuf, make_images(ibuf, 40, 28, 28));
        write_file("dmg-lab", lbuf, make_labels(lbuf, 40, 10));
        path_of(ip, sizeof(ip), "dmg-img.gz");
        path_of(lp, sizeof(lp), "dmg-lab");
        FILE *f = fopen(ip, "rb");
        assert_non_null(f);
        size_t n = fread(gz, 1, sizeof(gz), f);
        fclose(f);
        assert_true(n > 100);
        for (int mode = 0; mode < 3; mode++) {
                uint8_t save[8];
                memcpy(save, gz + n / 2, 8);
                size_t len = n;
                if (mode == 0)
                        memset(gz + n / 2, 0xff, 8); /* damaged deflate data */
                else if (mode == 1)
                        gz[n - 6] ^= 0x01; /* CRC in the gzip trailer */
                else
                        len = n * 2 / 3; /* cut short */
                f = fopen(ip, "wb");
                assert_non_null(f);
                assert_int_equal(fwrite(gz, 1, len, f), len);
                fclose(f);
                sc_err_t rc = sc_idx_load(&ds, ip, lp, 10, err, sizeof(err));
                if (rc != SC_ERR_CORRUPT || !strstr(err, "dmg-img.gz"))
                        fail_msg("mode %d: %s: %s", mode, sc_err2str(rc), err);
                assert_null(ds.x);
                memcpy(gz + n / 2, save, 8);
                if (mode == 1)
                        gz[n - 6] ^= 0x01;
        }
}

static void real_fashion_mnist_if_installed(void **state)
{
        char err[512];
        sc_dataset_t te;
        if (access(SC_FMNIST_DIR "/t10k-images-idx3-ubyte.gz", R_OK) != 0)
                skip();
        assert_int_equal(sc_fmnist_load(NULL, NULL, &te, err, sizeof(err)), SC_OK);
        assert_int_equal(te.n, 10000);
        assert_int_equal(te.shape.h, 28);
        int counts[10] = {0};
        for (size_t i = 0; i < te.n; i++)
                counts[te.y[i]]++;
        for (int c = 0; c < 10; c++)
                assert_int_equal(counts[c], 1000);
        double mean = 0;
        for (size_t i = 0; i < te.n * 784; i++)
                mean += te.x[i];
        mean /= (double)te.n * 784;
        assert_true(mean > 0.25 && mean < 0.33); /* about 0.286 */
        sc_dataset_free(&te);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(load_plain_and_gzip),
            cmocka_unit_test(load_four_dims),
            cmocka_unit_test(fmnist_folder),
            cmocka_unit_test(bad_files),
            cmocka_unit_test(damaged_gzip),
            cmocka_unit_test(real_fashion_mnist_if_installed),
        };
        return cmocka_run_group_tests_name("idx", tests, setup, teardown);
}
