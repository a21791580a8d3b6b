/* test_ckpt.c — checkpoint encoding: round trips, and every truncation,
 * flipped byte, unknown version and mismatched model rejected cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include "sc_ckpt.h"
#include "sc_crc32c.h"

/* input (1, 4, 4) -> flatten -> dense 8 -> relu -> dropout -> dense 3 */
static sc_model_spec_t mlp_spec(void)
{
        sc_model_spec_t s;
        memset(&s, 0, sizeof(s));
        s.input = (sc_shape_t){1, 4, 4};
        s.n_layers = 5;
        s.layers[0].kind = SC_LAYER_FLATTEN;
        s.layers[1] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 8};
        s.layers[2].kind = SC_LAYER_RELU;
        s.layers[3] = (sc_layer_spec_t){.kind = SC_LAYER_DROPOUT, .rate = 0.25f};
        s.layers[4] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 3};
        s.loss = SC_LOSS_SOFTMAX_XENT;
        return s;
}

#define NP (16 * 8 + 8 + 8 * 3 + 3)

static float params[NP], velocity[NP];
static const sc_ckpt_meta_t meta = {
    .step = 123456789012ULL, .epoch = 7, .epoch_step = 42, .seed = 0xfeedULL, .batch = 64};

static void fill(void)
{
        for (int i = 0; i < NP; i++) {
                params[i] = (float)sin(i * 0.37) * 3.0f;
                velocity[i] = (float)cos(i * 0.11) * 0.01f;
        }
        params[0] = -0.0f;
        params[1] = 1e-40f; /* subnormal */
        params[2] = INFINITY;
}

static void encode(int with_velocity, uint8_t **buf, size_t *len)
{
        char err[256];
        sc_model_spec_t s = mlp_spec();
        fill();
        assert_int_equal(sc_ckpt_encode(&s, &meta, params, with_velocity ? velocity : NULL, NP, buf,
                                        len, err, sizeof(err)),
                         SC_OK);
}

static void round_trip(void **state)
{
        char err[256];
        uint8_t *buf;
        size_t len;
        sc_model_spec_t s = mlp_spec();
        for (int v = 0; v < 2; v++) {
                encode(v, &buf, &len);
                assert_int_equal(len, 12 + 40 + 20 + 5 * 32 + 8 + 4 * NP * (v ? 2 : 1) + 4);
                assert_memory_equal(buf, "SCCK", 4);
                float p[NP], vel[NP];
                sc_ckpt_meta_t m;
                int hv = -1;
                memset(vel, 0x55, sizeof(vel));
                assert_int_equal(
                    sc_ckpt_decode(buf, len, &s, &m, p, vel, NP, &hv, err, sizeof(err)), SC_OK);
                assert_memory_equal(p, params, sizeof(p));
                assert_int_equal(hv, v);
                if (v) {
                        assert_memory_equal(vel, velocity, sizeof(vel));
                } else {
                        for (int i = 0; i < NP; i++)
                                assert_true(vel[i] == 0.0f);
                }
                assert_int_equal(m.step, meta.step);
                assert_int_equal(m.epoch, meta.epoch);
                assert_int_equal(m.epoch_step, meta.epoch_step);
                assert_int_equal(m.seed, meta.seed);
                assert_int_equal(m.batch, meta.batch);

                sc_ckpt_view_t view;
                assert_int_equal(sc_ckpt_parse(&view, buf, len, err, sizeof(err)), SC_OK);
                assert_int_equal(view.version, SC_CKPT_VERSION);
                assert_int_equal(view.nparams, NP);
                assert_int_equal(view.spec.n_layers, 5);
                assert_int_equal(view.spec.layers[4].units, 3);
                assert_float_equal(view.spec.layers[3].rate, 0.25, 0);
                assert_int_equal(view.velocity != NULL, v);
                /* velocity NULL: decoding without one is fine too */
                assert_int_equal(
                    sc_ckpt_decode(buf, len, &s, NULL, p, NULL, NP, NULL, err, sizeof(err)), SC_OK);
                free(buf);
        }
}

/* Decoding bad bytes must fail with want (or any error if want is SC_OK)
 * and leave the output untouched. */
static sc_err_t decode_bad(const uint8_t *buf, size_t len, char *err, size_t err_size)
{
        sc_model_spec_t s = mlp_spec();
        float p[NP], vel[NP];
        sc_ckpt_meta_t m;
        memset(p, 0x7a, sizeof(p));
        memset(vel, 0x7a, sizeof(vel));
        memset(&m, 0x7a, sizeof(m));
        err[0] = 0;
        sc_err_t rc = sc_ckpt_decode(buf, len, &s, &m, p, vel, NP, NULL, err, err_size);
        for (int i = 0; i < NP; i++) {
                uint32_t a, b;
                memcpy(&a, &p[i], 4);
                memcpy(&b, &vel[i], 4);
                assert_int_equal(a, 0x7a7a7a7a);
                assert_int_equal(b, 0x7a7a7a7a);
        }
        assert_int_equal(m.batch, 0x7a7a7a7a);
        assert_true(strlen(err) > 10);
        return rc;
}

static void every_truncation_rejected(void **state)
{
        char err[256];
        uint8_t *buf;
        size_t len;
        for (int v = 0; v < 2; v++) {
                encode(v, &buf, &len);
                for (size_t n = 0; n < len; n++) {
                        /* a copy of exactly n bytes, so ASan sees any over-read */
                        uint8_t *cut = malloc(n ? n : 1);
                        memcpy(cut, buf, n);
                        sc_err_t rc = decode_bad(cut, n, err, sizeof(err));
                        if (rc != SC_ERR_CORRUPT)
                                fail_msg("length %zu of %zu: %s: %s", n, len, sc_err2str(rc), err);
                        if (n < 4 && n > 0)
                                assert_non_null(strstr(err, "truncated"));
                        else if (n >= 8)
                                assert_non_null(strstr(err, "truncated"));
                        free(cut);
                }
                /* one byte too many */
                uint8_t *longer = malloc(len + 1);
                memcpy(longer, buf, len);
                longer[len] = 0;
                assert_int_equal(decode_bad(longer, len + 1, err, sizeof(err)), SC_ERR_CORRUPT);
                assert_non_null(strstr(err, "trailing"));
                free(longer);
                free(buf);
        }
}

static void every_flipped_byte_rejected(void **state)
{
        char err[256];
        uint8_t *buf;
        size_t len;
        encode(1, &buf, &len);
        for (size_t i = 0; i < len; i++) {
                for (int bit = 0; bit < 8; bit += 3) {
                        buf[i] ^= (uint8_t)(1u << bit);
                        sc_err_t rc = decode_bad(buf, len, err, sizeof(err));
                        buf[i] ^= (uint8_t)(1u << bit);
                        sc_err_t want = (i >= 4 && i < 8) ? SC_ERR_VERSION : SC_ERR_CORRUPT;
                        if (rc != want)
                                fail_msg("byte %zu bit %d: %s: %s", i, bit, sc_err2str(rc), err);
                        if (i < 4)
                                assert_non_null(strstr(err, "bad magic"));
                }
        }
        /* a flipped parameter bit is caught by the checksum */
        buf[len - 40] ^= 0x10;
        assert_int_equal(decode_bad(buf, len, err, sizeof(err)), SC_ERR_CORRUPT);
        assert_non_null(strstr(err, "checksum"));
        free(buf);
}

static void wrong_version_rejected(void **state)
{
        char err[256];
        uint8_t *buf;
        size_t len;
        encode(0, &buf, &len);
        /* a well-formed file of a future version (valid CRC) */
        buf[4] = 2;
        uint32_t crc = sc_crc32c(0, buf, len - 4);
        for (int i = 0; i < 4; i++)
                buf[len - 4 + i] = (uint8_t)(crc >> (8 * i));
        assert_int_equal(decode_bad(buf, len, err, sizeof(err)), SC_ERR_VERSION);
        assert_non_null(strstr(err, "version 2"));
        buf[4] = 0;
        assert_int_equal(decode_bad(buf, len, err, sizeof(err)), SC_ERR_VERSION);
        free(buf);
}

static void expect_model_mismatch(const sc_model_spec_t *want, size_t np, const char *needle)
{
        char err[256];
        uint8_t *buf;
        size_t len;
        encode(1, &buf, &len);
        float *p = calloc(np + 1, sizeof(float));
        memset(p, 0x7a, (np + 1) * sizeof(float));
        sc_err_t rc = sc_ckpt_decode(buf, len, want, NULL, p, NULL, np, NULL, err, sizeof(err));
        if (rc != SC_ERR_SHAPE || !strstr(err, needle))
                fail_msg("expected a model mismatch naming '%s', got %s: %s", needle,
                         sc_err2str(rc), err);
        uint32_t bits;
        memcpy(&bits, &p[0], 4);
        assert_int_equal(bits, 0x7a7a7a7a);
        free(p);
        free(buf);
}

static void wrong_model_rejected(void **state)
{
        sc_model_spec_t s = mlp_spec();
        s.layers[1].units = 9;
        expect_model_mismatch(&s, NP, "layers[1] (dense) has units 8, configured model has 9");
        s = mlp_spec();
        s.input.h = 5;
        expect_model_mismatch(&s, NP, "input is (1, 4, 4), configured model input is (1, 5, 4)");
        s = mlp_spec();
        s.n_layers = 4;
        expect_model_mismatch(&s, NP, "has 5 layers, configured model has 4");
        s = mlp_spec();
        s.layers[2].kind = SC_LAYER_TANH;
        expect_model_mismatch(&s, NP, "layers[2] is relu, configured model layers[2] is tanh");
        s = mlp_spec();
        expect_model_mismatch(&s, NP + 1, "holds 163 parameters, the model has 164");

        /* conv/pool fields: kernel, stride (0 means the default), padding */
        sc_model_spec_t a, b;
        memset(&a, 0, sizeof(a));
        a.input = (sc_shape_t){1, 8, 8};
        a.n_layers = 2;
        a.layers[0] = (sc_layer_spec_t){.kind = SC_LAYER_CONV2D, .filters = 2, .kernel = 3};
        a.layers[1] = (sc_layer_spec_t){.kind = SC_LAYER_MAXPOOL2D, .kernel = 2};
        b = a;
        b.layers[0].stride = 1;
        b.layers[1].stride = 2;
        b.layers[0].init = SC_INIT_XAVIER;
        char err[256];
        assert_int_equal(sc_ckpt_spec_check(&a, &b, err, sizeof(err)), SC_OK);
        b.layers[1].stride = 1;
        assert_int_equal(sc_ckpt_spec_check(&a, &b, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, "layers[1] (maxpool2d) has stride 2, configured model has 1"));
        b = a;
        b.layers[0].padding = 1;
        assert_int_equal(sc_ckpt_spec_check(&a, &b, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, "padding"));
        b = a;
        b.layers[0].kernel = 5;
        assert_int_equal(sc_ckpt_spec_check(&a, &b, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, "kernel"));
        b = a;
        b.layers[0].filters = 3;
        assert_int_equal(sc_ckpt_spec_check(&a, &b, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, "filters"));

        /* dropout rate and loss do not change the parameters: accepted */
        s = mlp_spec();
        s.layers[3].rate = 0.5f;
        s.loss = SC_LOSS_MSE;
        uint8_t *buf;
        size_t len;
        encode(0, &buf, &len);
        float p[NP];
        assert_int_equal(sc_ckpt_decode(buf, len, &s, NULL, p, NULL, NP, NULL, err, sizeof(err)),
                         SC_OK);
        free(buf);
}

static void encode_errors(void **state)
{
        char err[256];
        uint8_t *buf = (uint8_t *)1;
        size_t len = 1;
        sc_model_spec_t s = mlp_spec();
        s.n_layers = SC_MODEL_MAX_LAYERS + 1;
        assert_int_equal(sc_ckpt_encode(&s, &meta, params, NULL, NP, &buf, &len, err, sizeof(err)),
                         SC_ERR_INVAL);
        assert_null(buf);
        assert_int_equal(len, 0);
}

/* Files: save a real model and optimizer atomically, load them back. */
static void file_save_load(void **state)
{
        char err[512], dir[] = "/tmp/sc_test_ckpt.XXXXXX", path[600], bad[600];
        sc_model_spec_t s = mlp_spec();
        sc_model_t *a, *b;
        sc_sgd_t sa, sb;
        sc_sgd_spec_t ss = {.momentum = 0.9};
        sc_rng_t r;
        sc_ckpt_meta_t m;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/model.ckpt", dir);
        assert_int_equal(sc_model_new(&a, &s, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_model_new(&b, &s, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_model_nparams(a), NP);
        memset(&sa, 0, sizeof(sa));
        memset(&sb, 0, sizeof(sb));
        assert_int_equal(sc_sgd_init(&sa, &ss, NP), SC_OK);
        assert_int_equal(sc_sgd_init(&sb, &ss, NP), SC_OK);
        sc_rng_seed(&r, 3);
        sc_model_init(a, &r);
        for (int i = 0; i < NP; i++)
                sa.velocity[i] = (float)i * 0.5f;
        assert_int_equal(sc_ckpt_save(path, a, &sa, &meta, err, sizeof(err)), SC_OK);
        /* saving again replaces the file in place */
        assert_int_equal(sc_ckpt_save(path, a, &sa, &meta, err, sizeof(err)), SC_OK);
        DIR *d = opendir(dir);
        struct dirent *de;
        int files = 0;
        while ((de = readdir(d)))
                files += de->d_name[0] != '.';
        closedir(d);
        assert_int_equal(files, 1); /* no temporary file left behind */

        assert_int_equal(sc_ckpt_load(path, b, &sb, &m, err, sizeof(err)), SC_OK);
        assert_memory_equal(sc_model_params(b), sc_model_params(a), NP * sizeof(float));
        assert_memory_equal(sb.velocity, sa.velocity, NP * sizeof(float));
        assert_int_equal(m.step, meta.step);
        assert_int_equal(sc_ckpt_load(path, b, NULL, NULL, err, sizeof(err)), SC_OK);

        /* another architecture: a clear error, the model untouched */
        sc_model_spec_t s2 = mlp_spec();
        s2.layers[1].units = 9;
        sc_model_t *c;
        assert_int_equal(sc_model_new(&c, &s2, err, sizeof(err)), SC_OK);
        float before = sc_model_params(c)[5];
        assert_int_equal(sc_ckpt_load(path, c, NULL, NULL, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, path));
        assert_non_null(strstr(err, "units 8, configured model has 9"));
        assert_true(sc_model_params(c)[5] == before);
        sc_model_destroy(c);

        /* a missing file, a folder that does not exist, a truncated file */
        snprintf(bad, sizeof(bad), "%s/none.ckpt", dir);
        assert_int_equal(sc_ckpt_load(bad, b, NULL, NULL, err, sizeof(err)), SC_ERR_IO);
        assert_non_null(strstr(err, "none.ckpt: cannot open"));
        snprintf(bad, sizeof(bad), "%s/no/such/dir/x.ckpt", dir);
        assert_int_equal(sc_ckpt_save(bad, a, NULL, &meta, err, sizeof(err)), SC_ERR_IO);
        assert_non_null(strstr(err, "x.ckpt"));
        assert_int_equal(truncate(path, 100), 0);
        assert_int_equal(sc_ckpt_load(path, b, &sb, NULL, err, sizeof(err)), SC_ERR_CORRUPT);
        assert_non_null(strstr(err, "truncated"));
        assert_int_equal(sc_ckpt_load(dir, b, NULL, NULL, err, sizeof(err)), SC_ERR_IO);

        unlink(path);
        rmdir(dir);
        sc_sgd_free(&sa);
        sc_sgd_free(&sb);
        sc_model_destroy(a);
        sc_model_destroy(b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(round_trip),
            cmocka_unit_test(every_truncation_rejected),
            cmocka_unit_test(every_flipped_byte_rejected),
            cmocka_unit_test(wrong_version_rejected),
            cmocka_unit_test(wrong_model_rejected),
            cmocka_unit_test(encode_errors),
            cmocka_unit_test(file_save_load),
        };
        return cmocka_run_group_tests_name("ckpt", tests, NULL, NULL);
}
