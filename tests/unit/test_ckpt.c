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
#include <sys/stat.h>
#include <unistd.h>

#include "sc_ckpt.h"
#include "sc_crc32c.h"
#include "sc_file.h"

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

#define NS 6 /* state floats in the state-carrying encodings */

static float params[NP], velocity[NP], statev[NS];
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
        for (int i = 0; i < NS; i++)
                statev[i] = 0.5f * (float)i - 1.0f;
}

static void encode_state(int with_velocity, int with_state, uint8_t **buf, size_t *len)
{
        char err[256];
        sc_model_spec_t s = mlp_spec();
        fill();
        assert_int_equal(sc_ckpt_encode(&s, &meta, params, with_velocity ? velocity : NULL, NP,
                                        with_state ? statev : NULL, with_state ? NS : 0, buf, len,
                                        err, sizeof(err)),
                         SC_OK);
}

static void encode(int with_velocity, uint8_t **buf, size_t *len)
{
        encode_state(with_velocity, 0, buf, len);
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
                assert_int_equal(sc_ckpt_decode(buf, len, &s, &m, p, vel, NP, &hv, NULL, 0, NULL,
                                                err, sizeof(err)),
                                 SC_OK);
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
                assert_int_equal(view.version, SC_CKPT_VERSION_MIN); /* no state: version 1 */
                assert_null(view.state);
                assert_int_equal(view.nparams, NP);
                assert_int_equal(view.spec.n_layers, 5);
                assert_int_equal(view.spec.layers[4].units, 3);
                assert_float_equal(view.spec.layers[3].rate, 0.25, 0);
                assert_int_equal(view.velocity != NULL, v);
                /* velocity NULL: decoding without one is fine too */
                assert_int_equal(sc_ckpt_decode(buf, len, &s, NULL, p, NULL, NP, NULL, NULL, 0,
                                                NULL, err, sizeof(err)),
                                 SC_OK);
                free(buf);
        }
}

/* Decoding bad bytes must fail with want (or any error if want is SC_OK)
 * and leave the output untouched. */
static sc_err_t decode_bad(const uint8_t *buf, size_t len, char *err, size_t err_size)
{
        sc_model_spec_t s = mlp_spec();
        float p[NP], vel[NP], st[NS];
        sc_ckpt_meta_t m;
        memset(p, 0x7a, sizeof(p));
        memset(vel, 0x7a, sizeof(vel));
        memset(st, 0x7a, sizeof(st));
        memset(&m, 0x7a, sizeof(m));
        err[0] = 0;
        sc_err_t rc =
            sc_ckpt_decode(buf, len, &s, &m, p, vel, NP, NULL, st, NS, NULL, err, err_size);
        for (int i = 0; i < NS; i++) {
                uint32_t c;
                memcpy(&c, &st[i], 4);
                assert_int_equal(c, 0x7a7a7a7a);
        }
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
        for (int v = 0; v < 4; v++) {
                encode_state(v & 1, v >> 1, &buf, &len);
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

static void flip_every_byte(uint8_t *buf, size_t len)
{
        char err[256];
        for (size_t i = 0; i < len; i++) {
                for (int bit = 0; bit < 8; bit += 3) {
                        buf[i] ^= (uint8_t)(1u << bit);
                        sc_err_t rc = decode_bad(buf, len, err, sizeof(err));
                        buf[i] ^= (uint8_t)(1u << bit);
                        /* a version byte flipped to another readable
                         * version fails on its checksum */
                        uint32_t v = buf[4] | (uint32_t)buf[5] << 8 | (uint32_t)buf[6] << 16 |
                                     (uint32_t)buf[7] << 24;
                        if (i >= 4 && i < 8)
                                v ^= 1u << (8 * (i - 4) + bit);
                        sc_err_t want =
                            (i >= 4 && i < 8 && (v < 1 || v > 3)) ? SC_ERR_VERSION : SC_ERR_CORRUPT;
                        if (rc != want)
                                fail_msg("byte %zu bit %d: %s: %s", i, bit, sc_err2str(rc), err);
                        if (i < 4)
                                assert_non_null(strstr(err, "bad magic"));
                }
        }
}

static void every_flipped_byte_rejected(void **state)
{
        char err[256];
        uint8_t *buf;
        size_t len;
        for (int with_state = 0; with_state < 2; with_state++) {
                encode_state(1, with_state, &buf, &len);
                flip_every_byte(buf, len);
                /* a flipped parameter bit is caught by the checksum */
                buf[len - 40 - (with_state ? 8 + 4 * NS : 0)] ^= 0x10;
                assert_int_equal(decode_bad(buf, len, err, sizeof(err)), SC_ERR_CORRUPT);
                assert_non_null(strstr(err, "checksum"));
                free(buf);
        }
        /* and so is a flipped state bit */
        encode_state(0, 1, &buf, &len);
        buf[len - 4 - 4 * 2] ^= 0x01;
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
        buf[4] = 4;
        uint32_t crc = sc_crc32c(0, buf, len - 4);
        for (int i = 0; i < 4; i++)
                buf[len - 4 + i] = (uint8_t)(crc >> (8 * i));
        assert_int_equal(decode_bad(buf, len, err, sizeof(err)), SC_ERR_VERSION);
        assert_non_null(strstr(err, "version 4; this build reads versions 1 to 3"));
        buf[4] = 0;
        assert_int_equal(decode_bad(buf, len, err, sizeof(err)), SC_ERR_VERSION);
        /* the state flag is version 2's: a version 1 file with it is corrupt */
        buf[4] = 1;
        buf[8] |= 2;
        crc = sc_crc32c(0, buf, len - 4);
        for (int i = 0; i < 4; i++)
                buf[len - 4 + i] = (uint8_t)(crc >> (8 * i));
        assert_int_equal(decode_bad(buf, len, err, sizeof(err)), SC_ERR_CORRUPT);
        assert_non_null(strstr(err, "unknown flags 0x2"));
        /* the resume flag is version 3's */
        buf[4] = 2;
        buf[8] = (uint8_t)((buf[8] & ~2u) | 4u);
        crc = sc_crc32c(0, buf, len - 4);
        for (int i = 0; i < 4; i++)
                buf[len - 4 + i] = (uint8_t)(crc >> (8 * i));
        assert_int_equal(decode_bad(buf, len, err, sizeof(err)), SC_ERR_CORRUPT);
        assert_non_null(strstr(err, "unknown flags 0x4"));
        free(buf);
}

/* The resume section (version 3): stored as given, after the state, read
 * back byte for byte; every truncation is refused; a checkpoint without it
 * stays version 1 or 2. */
static void resume_round_trip(void **state)
{
        char err[256];
        uint8_t *buf;
        size_t len;
        sc_ckpt_view_t v;
        static const char text[] = "{\"format\":\"scadles-resume/1\",\"covers\":[]}";
        (void)state;
        sc_model_spec_t s = mlp_spec();
        fill();
        for (int with_state = 0; with_state < 2; with_state++) {
                sc_ckpt_meta_t m = meta;
                m.resume = (const uint8_t *)text;
                m.resume_len = strlen(text);
                assert_int_equal(sc_ckpt_encode(&s, &m, params, velocity, NP,
                                                with_state ? statev : NULL, with_state ? NS : 0,
                                                &buf, &len, err, sizeof(err)),
                                 SC_OK);
                assert_int_equal(sc_ckpt_parse(&v, buf, len, err, sizeof(err)), SC_OK);
                assert_int_equal(v.version, 3);
                assert_int_equal(v.meta.resume_len, strlen(text));
                assert_memory_equal(v.meta.resume, text, strlen(text));
                assert_int_equal(v.nstate, with_state ? NS : 0);
                assert_int_equal(v.meta.step, meta.step);
                for (size_t cut = 0; cut < len; cut++)
                        assert_int_not_equal(sc_ckpt_parse(&v, buf, cut, err, sizeof(err)), SC_OK);
                /* a resume length past the end is refused by name */
                buf[len - 4 - strlen(text) - 8] ^= 0x40;
                assert_int_equal(sc_ckpt_parse(&v, buf, len, err, sizeof(err)), SC_ERR_CORRUPT);
                assert_non_null(strstr(err, "resume section"));
                free(buf);
        }
        encode_state(1, 1, &buf, &len);
        assert_int_equal(sc_ckpt_parse(&v, buf, len, err, sizeof(err)), SC_OK);
        assert_int_equal(v.version, 2);
        assert_null(v.meta.resume);
        free(buf);
}

/* Model state (batchnorm running statistics): a section of version 2. */
static void state_round_trip(void **state)
{
        char err[256];
        uint8_t *buf;
        size_t len;
        sc_model_spec_t s = mlp_spec();
        for (int v = 0; v < 2; v++) {
                encode_state(v, 1, &buf, &len);
                assert_int_equal(len,
                                 12 + 40 + 20 + 5 * 32 + 8 + 4 * NP * (v ? 2 : 1) + 8 + 4 * NS + 4);
                assert_int_equal(buf[4], 2); /* version 2 */
                assert_int_equal(buf[8], v | 2);
                float p[NP], vel[NP], st[NS];
                int hv = -1, hs = -1;
                assert_int_equal(sc_ckpt_decode(buf, len, &s, NULL, p, vel, NP, &hv, st, NS, &hs,
                                                err, sizeof(err)),
                                 SC_OK);
                assert_memory_equal(p, params, sizeof(p));
                assert_memory_equal(st, statev, sizeof(st));
                assert_int_equal(hv, v);
                assert_int_equal(hs, 1);
                if (v)
                        assert_memory_equal(vel, velocity, sizeof(vel));
                sc_ckpt_view_t view;
                assert_int_equal(sc_ckpt_parse(&view, buf, len, err, sizeof(err)), SC_OK);
                assert_int_equal(view.version, 2);
                assert_int_equal(view.nstate, NS);
                assert_non_null(view.state);
                /* state NULL: the section is checked by the CRC but not read */
                assert_int_equal(sc_ckpt_decode(buf, len, &s, NULL, p, NULL, NP, NULL, NULL, 0, &hs,
                                                err, sizeof(err)),
                                 SC_OK);
                assert_int_equal(hs, 1);

                /* a model with another amount of state: refused, nothing written */
                float p2[NP], st2[NS + 1];
                memset(p2, 0x7a, sizeof(p2));
                memset(st2, 0x7a, sizeof(st2));
                for (size_t want = NS - 1; want <= NS + 1; want += 2) {
                        assert_int_equal(sc_ckpt_decode(buf, len, &s, NULL, p2, NULL, NP, NULL, st2,
                                                        want, NULL, err, sizeof(err)),
                                         SC_ERR_SHAPE);
                        char needle[128];
                        snprintf(needle, sizeof(needle),
                                 "holds %d state values (batchnorm running statistics), the "
                                 "model has %zu",
                                 NS, want);
                        assert_non_null(strstr(err, needle));
                        uint32_t a, b;
                        memcpy(&a, &p2[0], 4);
                        memcpy(&b, &st2[0], 4);
                        assert_int_equal(a, 0x7a7a7a7a);
                        assert_int_equal(b, 0x7a7a7a7a);
                }
                free(buf);
        }

        /* a version 1 checkpoint decoded with a state buffer: has_state 0,
         * the buffer left as it was */
        encode(1, &buf, &len);
        float p[NP], st[NS];
        int hs = -1;
        for (int i = 0; i < NS; i++)
                st[i] = 42.0f;
        assert_int_equal(
            sc_ckpt_decode(buf, len, &s, NULL, p, NULL, NP, NULL, st, NS, &hs, err, sizeof(err)),
            SC_OK);
        assert_int_equal(hs, 0);
        for (int i = 0; i < NS; i++)
                assert_true(st[i] == 42.0f);
        free(buf);

        /* state without a buffer is an encoding error */
        assert_int_equal(
            sc_ckpt_encode(&s, &meta, params, NULL, NP, NULL, 3, &buf, &len, err, sizeof(err)),
            SC_ERR_INVAL);
        assert_null(buf);
}

/* Without state the encoder writes exactly what the version 1 encoder
 * (before the state section existed) wrote: its lengths and checksums for
 * these inputs were recorded from that encoder. */
static void version1_bytes_unchanged(void **state)
{
        static const uint32_t want_crc[2] = {0xe328d900u, 0xe34066c8u};
        static const size_t want_len[2] = {896, 1548};
        uint8_t *buf;
        size_t len;
        for (int v = 0; v < 2; v++) {
                encode(v, &buf, &len);
                assert_int_equal(len, want_len[v]);
                assert_int_equal(buf[4], 1);
                assert_int_equal(sc_crc32c(0, buf, len - 4), want_crc[v]);
                free(buf);
        }
}

static void expect_model_mismatch(const sc_model_spec_t *want, size_t np, const char *needle)
{
        char err[256];
        uint8_t *buf;
        size_t len;
        encode(1, &buf, &len);
        float *p = calloc(np + 1, sizeof(float));
        memset(p, 0x7a, (np + 1) * sizeof(float));
        sc_err_t rc = sc_ckpt_decode(buf, len, want, NULL, p, NULL, np, NULL, NULL, 0, NULL, err,
                                     sizeof(err));
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
        assert_int_equal(
            sc_ckpt_decode(buf, len, &s, NULL, p, NULL, NP, NULL, NULL, 0, NULL, err, sizeof(err)),
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
        assert_int_equal(
            sc_ckpt_encode(&s, &meta, params, NULL, NP, NULL, 0, &buf, &len, err, sizeof(err)),
            SC_ERR_INVAL);
        assert_null(buf);
        assert_int_equal(len, 0);
        /* a state count whose bytes would not fit a size_t */
        s = mlp_spec();
        assert_int_equal(sc_ckpt_encode(&s, &meta, params, velocity, NP, statev, SIZE_MAX / 4, &buf,
                                        &len, err, sizeof(err)),
                         SC_ERR_INVAL);
        assert_non_null(strstr(err, "state values is too many"));
        assert_null(buf);
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

        assert_int_equal(sc_ckpt_load(path, b, &sb, &m, NULL, err, sizeof(err)), SC_OK);
        assert_memory_equal(sc_model_params(b), sc_model_params(a), NP * sizeof(float));
        assert_memory_equal(sb.velocity, sa.velocity, NP * sizeof(float));
        assert_int_equal(m.step, meta.step);
        assert_int_equal(sc_ckpt_load(path, b, NULL, NULL, NULL, err, sizeof(err)), SC_OK);

        /* another architecture: a clear error, the model untouched */
        sc_model_spec_t s2 = mlp_spec();
        s2.layers[1].units = 9;
        sc_model_t *c;
        assert_int_equal(sc_model_new(&c, &s2, err, sizeof(err)), SC_OK);
        float before = sc_model_params(c)[5];
        assert_int_equal(sc_ckpt_load(path, c, NULL, NULL, NULL, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, path));
        assert_non_null(strstr(err, "units 8, configured model has 9"));
        assert_true(sc_model_params(c)[5] == before);
        sc_model_destroy(c);

        /* a missing file, a folder that does not exist, a truncated file */
        snprintf(bad, sizeof(bad), "%s/none.ckpt", dir);
        assert_int_equal(sc_ckpt_load(bad, b, NULL, NULL, NULL, err, sizeof(err)), SC_ERR_IO);
        assert_non_null(strstr(err, "none.ckpt: cannot open"));
        snprintf(bad, sizeof(bad), "%s/no/such/dir/x.ckpt", dir);
        assert_int_equal(sc_ckpt_save(bad, a, NULL, &meta, err, sizeof(err)), SC_ERR_IO);
        assert_non_null(strstr(err, "x.ckpt"));
        assert_int_equal(truncate(path, 100), 0);
        assert_int_equal(sc_ckpt_load(path, b, &sb, NULL, NULL, err, sizeof(err)), SC_ERR_CORRUPT);
        assert_non_null(strstr(err, "truncated"));
        assert_int_equal(sc_ckpt_load(dir, b, NULL, NULL, NULL, err, sizeof(err)), SC_ERR_IO);

        unlink(path);
        rmdir(dir);
        sc_sgd_free(&sa);
        sc_sgd_free(&sb);
        sc_model_destroy(a);
        sc_model_destroy(b);
}

/* input (1, 4, 4) -> flatten -> dense 8 -> batchnorm -> relu -> dense 3 */
static sc_model_spec_t bn_spec(void)
{
        sc_model_spec_t s = mlp_spec();
        s.layers[2].kind = SC_LAYER_BATCHNORM;
        s.layers[3].kind = SC_LAYER_RELU;
        return s;
}

#define BN_B 16

/* Trains a on random batches so its running statistics leave (0, 1). */
static void train_some(sc_model_t *a, sc_rng_t *r, float *x, int32_t *y)
{
        for (int step = 0; step < 5; step++) {
                for (int i = 0; i < BN_B * 16; i++)
                        x[i] = 2.0f * sc_rng_uniform(r) + 0.5f;
                for (int i = 0; i < BN_B; i++)
                        y[i] = (int32_t)(i % 3);
                assert_true(isfinite(sc_model_train_batch(a, x, y, NULL, BN_B, r, NULL)));
        }
}

static sc_err_t write_file(const char *path, const uint8_t *buf, size_t len)
{
        FILE *f = fopen(path, "wb");
        if (!f)
                return SC_ERR_IO;
        size_t w = fwrite(buf, 1, len, f);
        return fclose(f) || w != len ? SC_ERR_IO : SC_OK;
}

/* Files of a model with batchnorm: the running statistics are saved and
 * loaded, so evaluation after a reload is identical; older checkpoints
 * without them still load (statistics reset); a mismatch is refused. */
static void file_state_save_load(void **state)
{
        char err[512], dir[] = "/tmp/sc_test_ckpt.XXXXXX", path[600];
        sc_model_spec_t s = bn_spec();
        sc_model_t *a, *b, *c;
        sc_rng_t r;
        float x[BN_B * 16], outa[BN_B * 3], outb[BN_B * 3];
        int32_t y[BN_B];
        int ca, cb, hs;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/bn.ckpt", dir);
        assert_int_equal(sc_model_new(&a, &s, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_model_new(&b, &s, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_model_nstate(a), 16); /* mean and variance of 8 features */
        sc_rng_seed(&r, 5);
        sc_model_init(a, &r);
        train_some(a, &r, x, y);
        const float *sa = sc_model_state(a);
        assert_true(sa[0] != 0.0f && sa[8] != 1.0f);
        float la = sc_model_eval_batch(a, x, y, NULL, BN_B, &ca, outa);

        assert_int_equal(sc_ckpt_save(path, a, NULL, &meta, err, sizeof(err)), SC_OK);
        sc_rng_seed(&r, 6);
        sc_model_init(b, &r);
        hs = -1;
        assert_int_equal(sc_ckpt_load(path, b, NULL, NULL, &hs, err, sizeof(err)), SC_OK);
        assert_int_equal(hs, 1);
        assert_memory_equal(sc_model_state(b), sa, 16 * sizeof(float));
        float lb = sc_model_eval_batch(b, x, y, NULL, BN_B, &cb, outb);
        assert_memory_equal(outb, outa, sizeof(outa));
        assert_memory_equal(&lb, &la, sizeof(float));
        assert_int_equal(cb, ca);

        /* the statistics matter: the same parameters with the initial
         * statistics evaluate otherwise */
        sc_model_reset_state(b);
        sc_model_eval_batch(b, x, y, NULL, BN_B, NULL, outb);
        assert_memory_not_equal(outb, outa, sizeof(outa));

        /* a version 1 checkpoint (no state) of the same model loads: the
         * parameters are read, the statistics reset to mean 0, variance 1 */
        uint8_t *buf;
        size_t len;
        assert_int_equal(sc_ckpt_encode(&s, &meta, sc_model_params(a), NULL, sc_model_nparams(a),
                                        NULL, 0, &buf, &len, err, sizeof(err)),
                         SC_OK);
        assert_int_equal(buf[4], 1);
        assert_int_equal(write_file(path, buf, len), SC_OK);
        free(buf);
        sc_rng_seed(&r, 7);
        sc_model_init(b, &r);
        train_some(b, &r, x, y);
        hs = -1;
        assert_int_equal(sc_ckpt_load(path, b, NULL, NULL, &hs, err, sizeof(err)), SC_OK);
        assert_int_equal(hs, 0);
        assert_memory_equal(sc_model_params(b), sc_model_params(a),
                            sc_model_nparams(a) * sizeof(float));
        for (int i = 0; i < 16; i++)
                assert_true(sc_model_state(b)[i] == (i < 8 ? 0.0f : 1.0f));

        /* a checkpoint whose state does not fit the model: refused, the
         * model untouched */
        float bigger[17];
        memcpy(bigger, sa, 16 * sizeof(float));
        bigger[16] = 3.0f;
        assert_int_equal(sc_ckpt_encode(&s, &meta, sc_model_params(a), NULL, sc_model_nparams(a),
                                        bigger, 17, &buf, &len, err, sizeof(err)),
                         SC_OK);
        assert_int_equal(write_file(path, buf, len), SC_OK);
        free(buf);
        float before_p = sc_model_params(b)[3], before_s = sc_model_state(b)[9];
        assert_int_equal(sc_ckpt_load(path, b, NULL, NULL, &hs, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, path));
        assert_non_null(strstr(err, "holds 17 state values (batchnorm running statistics), the "
                                    "model has 16"));
        assert_true(sc_model_params(b)[3] == before_p && sc_model_state(b)[9] == before_s);

        /* a batchnorm checkpoint into the model without batchnorm: refused */
        assert_int_equal(sc_ckpt_save(path, a, NULL, &meta, err, sizeof(err)), SC_OK);
        sc_model_spec_t plain = mlp_spec();
        assert_int_equal(sc_model_new(&c, &plain, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_ckpt_load(path, c, NULL, NULL, NULL, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, "layers[2] is batchnorm, configured model layers[2] is relu"));
        sc_model_destroy(c);

        /* a truncated or corrupt state section: refused, the model untouched */
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(truncate(path, st.st_size - 10), 0);
        assert_int_equal(sc_ckpt_load(path, b, NULL, NULL, NULL, err, sizeof(err)), SC_ERR_CORRUPT);
        assert_non_null(strstr(err, "truncated"));
        assert_int_equal(sc_ckpt_save(path, a, NULL, &meta, err, sizeof(err)), SC_OK);
        FILE *f = fopen(path, "r+b");
        assert_non_null(f);
        assert_int_equal(fseek(f, -4 - 4 * 3, SEEK_END), 0); /* a variance */
        assert_int_equal(fputc(0x55, f), 0x55);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(sc_ckpt_load(path, b, NULL, NULL, NULL, err, sizeof(err)), SC_ERR_CORRUPT);
        assert_non_null(strstr(err, "checksum"));
        assert_true(sc_model_params(b)[3] == before_p && sc_model_state(b)[9] == before_s);

        unlink(path);
        rmdir(dir);
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
            cmocka_unit_test(resume_round_trip),
            cmocka_unit_test(state_round_trip),
            cmocka_unit_test(version1_bytes_unchanged),
            cmocka_unit_test(wrong_model_rejected),
            cmocka_unit_test(encode_errors),
            cmocka_unit_test(file_save_load),
            cmocka_unit_test(file_state_save_load),
        };
        return cmocka_run_group_tests_name("ckpt", tests, NULL, NULL);
}
