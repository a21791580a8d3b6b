/* test_wire.c — wire messages: round trips of every type, rejection of every
 * truncation and byte flip, structural fuzzing with valid CRCs, and the
 * data-driven invalid cases under tests/data/wire/invalid/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "sc_codec.h"
#include "sc_crc32c.h"
#include "sc_wire.h"

static char errbuf[512];

/* Rewrites the CRC after the test changed bytes, so the body checks run. */
static void fix_crc(uint8_t *m, size_t len)
{
        uint32_t crc = sc_crc32c(sc_crc32c(0, m, 12), m + 16, len - 16);
        for (int i = 0; i < 4; i++)
                m[12 + i] = (uint8_t)(crc >> (8 * i));
}

static void put32(uint8_t *p, uint32_t v)
{
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

static void make_update(sc_buf_t *buf, sc_buf_t *payload)
{
        float g[100];
        sc_codec_t *c;
        for (int i = 0; i < 100; i++)
                g[i] = (float)((i * 37) % 100) - 50.0f;
        sc_codec_params_t p;
        sc_codec_params_default(&p, SC_CODEC_TOPK);
        p.ratio = 0.1;
        assert_int_equal(sc_codec_new(&c, SC_CODEC_TOPK, &p, 100, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_int_equal(sc_codec_encode(c, g, NULL, payload, errbuf, sizeof(errbuf)), SC_OK);
        sc_codec_destroy(c);
        sc_wire_update_t u = {.worker = 7,
                              .shard = 3,
                              .seq = 12345678901ull,
                              .t_read = 42,
                              .samples = 64,
                              .kind = SC_WIRE_GRAD,
                              .codec = SC_CODEC_TOPK,
                              .payload = payload->data,
                              .payload_len = payload->len};
        assert_int_equal(sc_wire_encode_update(buf, &u, errbuf, sizeof(errbuf)), SC_OK);
}

static float params[50];
static const sc_wire_applied_t applied[3] = {{0, 5}, {1, 9}, {4000000000u, 1ull << 40}};
static const uint8_t state[5] = {1, 2, 3, 4, 5};

static void make_model(sc_buf_t *buf)
{
        for (int i = 0; i < 50; i++)
                params[i] = 0.5f * (float)i;
        sc_wire_model_t m = {.shard = 2,
                             .version = 99,
                             .begin = 1000,
                             .count = 50,
                             .grad_offset = 777,
                             .params = params,
                             .napplied = 3,
                             .applied = applied,
                             .state_len = 5,
                             .state = state};
        assert_int_equal(sc_wire_encode_model(buf, &m, errbuf, sizeof(errbuf)), SC_OK);
}

static float sdata[2 * 3 * 4 * 5];
static const int32_t slabels[2] = {3, -1};

static void make_samples(sc_buf_t *buf, int labels)
{
        for (int i = 0; i < 120; i++)
                sdata[i] = (float)i / 7.0f;
        sc_wire_samples_t s = {.worker = 1,
                               .seq = 8,
                               .count = 2,
                               .c = 3,
                               .h = 4,
                               .w = 5,
                               .labels = labels ? slabels : NULL,
                               .data = sdata};
        assert_int_equal(sc_wire_encode_samples(buf, &s, errbuf, sizeof(errbuf)), SC_OK);
}

static void make_control(sc_buf_t *buf)
{
        sc_wire_control_t c = {
            .kind = SC_WIRE_CTL_HEARTBEAT, .worker = 5, .timestamp = -123456789, .nfields = 3};
        c.fields[0] = (sc_wire_field_t){SC_WIRE_F_RATE, 38.5};
        c.fields[1] = (sc_wire_field_t){SC_WIRE_F_VOTE, 1.0};
        c.fields[2] = (sc_wire_field_t){999, -2.0}; /* a key from a newer sender */
        assert_int_equal(sc_wire_encode_control(buf, &c, errbuf, sizeof(errbuf)), SC_OK);
}

static void update_round_trip(void **state_)
{
        sc_buf_t buf, payload;
        sc_wire_msg_t msg;
        sc_buf_init(&buf);
        sc_buf_init(&payload);
        make_update(&buf, &payload);
        assert_int_equal(buf.len, 16 + 36 + payload.len);
        assert_int_equal(sc_wire_decode(buf.data, buf.len, &msg, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(msg.type, SC_WIRE_UPDATE);
        const sc_wire_update_t *u = &msg.u.update;
        assert_int_equal(u->worker, 7);
        assert_int_equal(u->shard, 3);
        assert_true(u->seq == 12345678901ull);
        assert_int_equal(u->t_read, 42);
        assert_int_equal(u->samples, 64);
        assert_int_equal(u->kind, SC_WIRE_GRAD);
        assert_int_equal(u->codec, SC_CODEC_TOPK);
        assert_ptr_equal(u->payload, buf.data + 16 + 36); /* zero-copy */
        assert_memory_equal(u->payload, payload.data, payload.len);
        float acc[100] = {0};
        assert_int_equal(
            sc_codec_decode_add(u->payload, u->payload_len, acc, 100, 1.0f, errbuf, sizeof(errbuf)),
            SC_OK);
        int nnz = 0;
        for (int i = 0; i < 100; i++)
                nnz += acc[i] != 0.0f;
        assert_int_equal(nnz, 10);
        sc_buf_free(&buf);
        sc_buf_free(&payload);
}

static void model_round_trip(void **state_)
{
        sc_buf_t buf;
        sc_wire_msg_t msg;
        sc_buf_init(&buf);
        make_model(&buf);
        assert_int_equal(buf.len, 16 + 56 + 200 + 36 + 5);
        assert_int_equal(sc_wire_decode(buf.data, buf.len, &msg, errbuf, sizeof(errbuf)), SC_OK);
        const sc_wire_model_view_t *m = &msg.u.model;
        assert_int_equal(msg.type, SC_WIRE_MODEL);
        assert_int_equal(m->shard, 2);
        assert_int_equal(m->version, 99);
        assert_int_equal(m->begin, 1000);
        assert_int_equal(m->count, 50);
        assert_int_equal(m->grad_offset, 777);
        float p[50];
        sc_wire_get_f32s(p, m->params, 50);
        assert_memory_equal(p, params, sizeof(p));
        assert_int_equal(m->napplied, 3);
        for (uint32_t i = 0; i < 3; i++) {
                sc_wire_applied_t a;
                sc_wire_get_applied(m, i, &a);
                assert_int_equal(a.worker, applied[i].worker);
                assert_true(a.seq == applied[i].seq);
        }
        assert_int_equal(m->state_len, 5);
        assert_memory_equal(m->state, state, 5);
        /* The body's three reserved words (body offsets 28, 44 and 52) are
         * refused when not zero. */
        static const size_t reserved[] = {16 + 28, 16 + 44, 16 + 52};
        for (size_t r = 0; r < sizeof(reserved) / sizeof(reserved[0]); r++) {
                uint8_t *copy = malloc(buf.len);
                assert_non_null(copy);
                memcpy(copy, buf.data, buf.len);
                copy[reserved[r]] = 1;
                fix_crc(copy, buf.len);
                assert_int_equal(sc_wire_decode(copy, buf.len, &msg, errbuf, sizeof(errbuf)),
                                 SC_ERR_DECODE);
                assert_non_null(strstr(errbuf, "reserved field not zero"));
                free(copy);
        }
        sc_buf_free(&buf);
}

static void samples_and_control_round_trip(void **state_)
{
        sc_buf_t buf;
        sc_wire_msg_t msg;
        sc_buf_init(&buf);
        make_samples(&buf, 1);
        assert_int_equal(sc_wire_decode(buf.data, buf.len, &msg, errbuf, sizeof(errbuf)), SC_OK);
        const sc_wire_samples_view_t *s = &msg.u.samples;
        assert_int_equal(msg.type, SC_WIRE_SAMPLES);
        assert_int_equal(s->count, 2);
        assert_int_equal(s->c * s->h * s->w, 60);
        assert_int_equal(s->seq, 8);
        int32_t l[2];
        float d[120];
        sc_wire_get_i32s(l, s->labels, 2);
        sc_wire_get_f32s(d, s->data, 120);
        assert_int_equal(l[0], 3);
        assert_int_equal(l[1], -1);
        assert_memory_equal(d, sdata, sizeof(d));

        buf.len = 0;
        make_samples(&buf, 0);
        assert_int_equal(sc_wire_decode(buf.data, buf.len, &msg, errbuf, sizeof(errbuf)), SC_OK);
        assert_null(msg.u.samples.labels);

        buf.len = 0;
        make_control(&buf);
        assert_int_equal(buf.len, 16 + 24 + 36);
        assert_int_equal(sc_wire_decode(buf.data, buf.len, &msg, errbuf, sizeof(errbuf)), SC_OK);
        const sc_wire_control_t *c = &msg.u.control;
        assert_int_equal(msg.type, SC_WIRE_CONTROL);
        assert_int_equal(c->kind, SC_WIRE_CTL_HEARTBEAT);
        assert_int_equal(c->worker, 5);
        assert_true(c->timestamp == -123456789);
        assert_true(sc_wire_control_field(c, SC_WIRE_F_RATE, 0) == 38.5);
        assert_true(sc_wire_control_field(c, SC_WIRE_F_VOTE, 0) == 1.0);
        assert_true(sc_wire_control_field(c, 999, 0) == -2.0);
        assert_true(sc_wire_control_field(c, SC_WIRE_F_LOSS, 7.0) == 7.0);
        sc_buf_free(&buf);
}

static void encoders_reject_bad_values(void **state_)
{
        sc_buf_t buf;
        sc_buf_init(&buf);
        uint8_t pl[8] = {SC_CODEC_NONE};
        sc_wire_update_t u = {.codec = SC_CODEC_TOPK, .payload = pl, .payload_len = 8};
        assert_int_equal(sc_wire_encode_update(&buf, &u, errbuf, sizeof(errbuf)), SC_ERR_INVAL);
        sc_wire_samples_t s = {.count = 1, .c = 0, .h = 1, .w = 1, .data = sdata};
        assert_int_equal(sc_wire_encode_samples(&buf, &s, errbuf, sizeof(errbuf)), SC_ERR_INVAL);
        s = (sc_wire_samples_t){.count = 1u << 31, .c = 1u << 31, .h = 4, .w = 1, .data = sdata};
        assert_int_equal(sc_wire_encode_samples(&buf, &s, errbuf, sizeof(errbuf)), SC_ERR_INVAL);
        sc_wire_control_t c = {.kind = SC_WIRE_CTL_JOIN, .nfields = 33};
        assert_int_equal(sc_wire_encode_control(&buf, &c, errbuf, sizeof(errbuf)), SC_ERR_INVAL);
        sc_wire_model_t m = {.count = 4, .params = NULL};
        assert_int_equal(sc_wire_encode_model(&buf, &m, errbuf, sizeof(errbuf)), SC_ERR_INVAL);
        assert_int_equal(buf.len, 0);
        sc_buf_free(&buf);
}

/* Every message type once, for the fuzz-ish tests. */
static size_t make_all(sc_buf_t *msgs, sc_buf_t *scratch)
{
        for (int t = 0; t < 5; t++) {
                sc_buf_init(&msgs[t]);
        }
        make_update(&msgs[0], scratch);
        make_model(&msgs[1]);
        make_samples(&msgs[2], 1);
        make_samples(&msgs[3], 0);
        make_control(&msgs[4]);
        return 5;
}

static void every_truncation_rejected(void **state_)
{
        sc_buf_t msgs[5], scratch;
        sc_wire_msg_t msg;
        sc_buf_init(&scratch);
        size_t nm = make_all(msgs, &scratch);
        for (size_t t = 0; t < nm; t++) {
                for (size_t cut = 0; cut < msgs[t].len; cut++) {
                        uint8_t *copy = malloc(cut ? cut : 1);
                        memcpy(copy, msgs[t].data, cut);
                        assert_int_not_equal(
                            sc_wire_decode(copy, cut, &msg, errbuf, sizeof(errbuf)), SC_OK);
                        /* with the length field and CRC made consistent too */
                        if (cut >= 16) {
                                put32(copy + 8, (uint32_t)(cut - 16));
                                fix_crc(copy, cut);
                                assert_int_not_equal(
                                    sc_wire_decode(copy, cut, &msg, errbuf, sizeof(errbuf)), SC_OK);
                        }
                        free(copy);
                }
                /* trailing garbage */
                uint8_t *longer = calloc(1, msgs[t].len + 1);
                memcpy(longer, msgs[t].data, msgs[t].len);
                assert_int_equal(
                    sc_wire_decode(longer, msgs[t].len + 1, &msg, errbuf, sizeof(errbuf)),
                    SC_ERR_CORRUPT);
                free(longer);
                sc_buf_free(&msgs[t]);
        }
        sc_buf_free(&scratch);
}

static void every_bit_flip_rejected(void **state_)
{
        sc_buf_t msgs[5], scratch;
        sc_wire_msg_t msg;
        sc_buf_init(&scratch);
        size_t nm = make_all(msgs, &scratch);
        for (size_t t = 0; t < nm; t++) {
                uint8_t *copy = malloc(msgs[t].len);
                for (size_t at = 0; at < msgs[t].len; at++) {
                        for (int bit = 0; bit < 8; bit++) {
                                memcpy(copy, msgs[t].data, msgs[t].len);
                                copy[at] ^= (uint8_t)(1u << bit);
                                assert_int_not_equal(
                                    sc_wire_decode(copy, msgs[t].len, &msg, errbuf, sizeof(errbuf)),
                                    SC_OK);
                        }
                }
                free(copy);
                sc_buf_free(&msgs[t]);
        }
        sc_buf_free(&scratch);
}

/* Damage behind a valid CRC: the body checks alone must hold. Any message
 * that still decodes has every view inside the buffer. */
static void structural_fuzz(void **state_)
{
        sc_buf_t msgs[5], scratch;
        sc_wire_msg_t msg;
        sc_rng_t rng;
        int accepted = 0, rejected = 0;
        sc_buf_init(&scratch);
        sc_rng_seed(&rng, 2024);
        size_t nm = make_all(msgs, &scratch);
        for (size_t t = 0; t < nm; t++) {
                size_t len = msgs[t].len;
                uint8_t *copy = malloc(len);
                for (int trial = 0; trial < 4000; trial++) {
                        memcpy(copy, msgs[t].data, len);
                        int flips = 1 + (int)sc_rng_below(&rng, 3);
                        for (int f = 0; f < flips; f++) {
                                /* favour the fixed fields where the counts live */
                                uint32_t span =
                                    (uint32_t)(trial & 1 ? len - 16
                                                         : (len - 16 < 64 ? len - 16 : 64));
                                size_t at = 16 + sc_rng_below(&rng, span);
                                copy[at] = (uint8_t)sc_rng_u64(&rng);
                        }
                        fix_crc(copy, len);
                        if (sc_wire_decode(copy, len, &msg, errbuf, sizeof(errbuf)) != SC_OK) {
                                rejected++;
                                continue;
                        }
                        accepted++;
                        const uint8_t *end = copy + len;
                        if (msg.type == SC_WIRE_UPDATE) {
                                assert_true(msg.u.update.payload + msg.u.update.payload_len <= end);
                                float acc[100] = {0};
                                (void)sc_codec_decode_add(msg.u.update.payload,
                                                          msg.u.update.payload_len, acc, 100, 1.0f,
                                                          errbuf, sizeof(errbuf));
                        } else if (msg.type == SC_WIRE_MODEL) {
                                const sc_wire_model_view_t *m = &msg.u.model;
                                assert_true(m->params + 4 * (size_t)m->count <= end);
                                assert_true(m->applied + 12 * (size_t)m->napplied <= end);
                                assert_true(!m->state || m->state + m->state_len == end);
                        } else if (msg.type == SC_WIRE_SAMPLES) {
                                const sc_wire_samples_view_t *s = &msg.u.samples;
                                size_t nf = (size_t)s->count * s->c * s->h * s->w;
                                assert_true(s->data + 4 * nf == end);
                        } else {
                                assert_true(msg.u.control.nfields <= SC_WIRE_CTL_MAX_FIELDS);
                        }
                }
                free(copy);
                sc_buf_free(&msgs[t]);
        }
        assert_true(rejected > 1000);
        assert_true(accepted > 100); /* value bytes may change freely */
        sc_buf_free(&scratch);
}

static void header_errors(void **state_)
{
        sc_buf_t buf;
        sc_wire_msg_t msg;
        sc_wire_type_t type;
        sc_buf_init(&buf);
        make_control(&buf);
        assert_int_equal(sc_wire_check(buf.data, buf.len, &type, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(type, SC_WIRE_CONTROL);

        buf.data[4] = 2;
        fix_crc(buf.data, buf.len);
        assert_int_equal(sc_wire_decode(buf.data, buf.len, &msg, errbuf, sizeof(errbuf)),
                         SC_ERR_VERSION);
        assert_non_null(strstr(errbuf, "version 2"));
        buf.data[4] = 1;
        buf.data[6] = 1;
        fix_crc(buf.data, buf.len);
        assert_int_equal(sc_wire_decode(buf.data, buf.len, &msg, errbuf, sizeof(errbuf)),
                         SC_ERR_UNSUPPORTED);
        buf.data[6] = 0;
        buf.data[5] = 9;
        fix_crc(buf.data, buf.len);
        assert_int_equal(sc_wire_decode(buf.data, buf.len, &msg, errbuf, sizeof(errbuf)),
                         SC_ERR_DECODE);
        assert_non_null(strstr(errbuf, "unknown type 9"));
        buf.data[5] = SC_WIRE_CONTROL;
        buf.data[0] = 'X';
        assert_int_equal(sc_wire_decode(buf.data, buf.len, &msg, errbuf, sizeof(errbuf)),
                         SC_ERR_CORRUPT);
        assert_non_null(strstr(errbuf, "magic"));
        assert_int_equal(sc_wire_decode(NULL, 0, &msg, errbuf, sizeof(errbuf)), SC_ERR_CORRUPT);
        sc_buf_free(&buf);
}

static void hex(const uint8_t *d, size_t n, char *out)
{
        for (size_t i = 0; i < n; i++)
                sprintf(out + 2 * i, "%02x", d[i]);
}

static void sha256_and_hmac_vectors(void **state_)
{
        uint8_t out[32], key[131], a1000[1000];
        char h[65];
        sc_wire_sha256("abc", 3, out);
        hex(out, 32, h);
        assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        sc_wire_sha256("", 0, out);
        hex(out, 32, h);
        assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        memset(a1000, 'a', sizeof(a1000));
        sc_wire_sha256(a1000, sizeof(a1000), out);
        hex(out, 32, h);
        assert_string_equal(h, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
        /* RFC 4231 cases 1 and 6 (data split in two parts) */
        memset(key, 0x0b, 20);
        sc_wire_hmac_sha256(key, 20, "Hi ", 3, "There", 5, out);
        hex(out, 32, h);
        assert_string_equal(h, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
        memset(key, 0xaa, 131);
        const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
        sc_wire_hmac_sha256(key, 131, m6, strlen(m6), "", 0, out);
        hex(out, 32, h);
        assert_string_equal(h, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void signed_messages(void **state_)
{
        static const char key[] = "job secret", other[] = "job secreT";
        sc_buf_t buf, payload;
        sc_wire_msg_t msg;
        sc_buf_init(&buf);
        sc_buf_init(&payload);
        make_control(&buf); /* a first message stays untouched in front */
        size_t start = buf.len;
        make_update(&buf, &payload);
        size_t plain = buf.len - start;
        assert_int_equal(sc_wire_sign(&buf, start, key, strlen(key), errbuf, sizeof(errbuf)),
                         SC_OK);
        uint8_t *m = buf.data + start;
        size_t len = buf.len - start;
        assert_int_equal(len, plain + SC_WIRE_TAG_SIZE);
        assert_int_equal(sc_wire_decode(buf.data, start, &msg, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(
            sc_wire_decode_auth(m, len, key, strlen(key), &msg, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(msg.u.update.payload_len, payload.len);
        assert_memory_equal(msg.u.update.payload, payload.data, payload.len);
        /* without the key, with the wrong key, unsigned with a key */
        assert_int_equal(sc_wire_decode(m, len, &msg, errbuf, sizeof(errbuf)), SC_ERR_UNSUPPORTED);
        assert_non_null(strstr(errbuf, "signed"));
        assert_int_equal(
            sc_wire_decode_auth(m, len, other, strlen(other), &msg, errbuf, sizeof(errbuf)),
            SC_ERR_AUTH);
        assert_non_null(strstr(errbuf, "HMAC"));
        assert_int_equal(
            sc_wire_decode_auth(buf.data, start, key, strlen(key), &msg, errbuf, sizeof(errbuf)),
            SC_ERR_AUTH);
        assert_non_null(strstr(errbuf, "not signed"));
        /* any change behind a recomputed CRC is caught by the tag */
        uint8_t *copy = malloc(len);
        for (size_t at = 0; at < len; at += 3) {
                if (at >= 4 && at < 16)
                        continue; /* framing fields have their own checks */
                memcpy(copy, m, len);
                copy[at] ^= 0x10;
                fix_crc(copy, len);
                assert_int_not_equal(
                    sc_wire_decode_auth(copy, len, key, strlen(key), &msg, errbuf, sizeof(errbuf)),
                    SC_OK);
        }
        for (size_t cut = 0; cut < len; cut++) {
                memcpy(copy, m, cut);
                assert_int_not_equal(
                    sc_wire_decode_auth(copy, cut, key, strlen(key), &msg, errbuf, sizeof(errbuf)),
                    SC_OK);
        }
        free(copy);
        /* signing twice or a buffer not ending with the message is refused */
        assert_int_equal(sc_wire_sign(&buf, start, key, strlen(key), errbuf, sizeof(errbuf)),
                         SC_ERR_INVAL);
        assert_int_equal(sc_wire_sign(&buf, 0, key, strlen(key), errbuf, sizeof(errbuf)),
                         SC_ERR_INVAL);
        sc_buf_free(&buf);
        sc_buf_free(&payload);
}

static char *read_file(const char *path, size_t *lenp)
{
        FILE *f = fopen(path, "rb");
        char *data;
        long n;
        if (!f)
                return NULL;
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        fseek(f, 0, SEEK_SET);
        data = malloc((size_t)n + 1);
        if (fread(data, 1, (size_t)n, f) != (size_t)n)
                n = 0;
        data[n] = 0;
        fclose(f);
        *lenp = (size_t)n;
        return data;
}

/* tests/data/wire/invalid/<case>/{input,error}: error holds a text the
 * decoder's message must contain. */
static void data_driven_invalid(void **state_)
{
        const char *root = "tests/data/wire/invalid";
        DIR *d = opendir(root);
        struct dirent *e;
        int cases = 0;
        assert_non_null(d);
        while ((e = readdir(d))) {
                char path[1024];
                size_t len, elen;
                sc_wire_msg_t msg;
                if (e->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/%s/input", root, e->d_name);
                char *input = read_file(path, &len);
                snprintf(path, sizeof(path), "%s/%s/error", root, e->d_name);
                char *want = read_file(path, &elen);
                if (!input || !want)
                        fail_msg("case %s: missing input or error file", e->d_name);
                while (elen && (want[elen - 1] == '\n' || want[elen - 1] == '\r'))
                        want[--elen] = 0;
                /* an exact-size copy, so ASan catches any over-read */
                uint8_t *copy = malloc(len ? len : 1);
                memcpy(copy, input, len);
                errbuf[0] = 0;
                if (sc_wire_decode(copy, len, &msg, errbuf, sizeof(errbuf)) == SC_OK)
                        fail_msg("case %s: decoded", e->d_name);
                if (!strstr(errbuf, want))
                        fail_msg("case %s: error \"%s\" lacks \"%s\"", e->d_name, errbuf, want);
                free(copy);
                free(input);
                free(want);
                cases++;
        }
        closedir(d);
        assert_true(cases >= 8);
}

static void put_f32(uint8_t *p, float f)
{
        uint32_t v;
        memcpy(&v, &f, 4);
        put32(p, v);
}

/* sc_wire_f32s_finite reads the exponent bits in place: NaN and both
 * infinities are caught, the largest finite floats and denormals are not. */
static void f32s_finite(void **state_)
{
        const float good[] = {0.0f, -0.0f, 3.4e38f, -3.4e38f, 1e-45f, 1.0f};
        const float bad[] = {INFINITY, -INFINITY, NAN};
        uint8_t b[4 * 7];
        (void)state_;
        for (size_t i = 0; i < 6; i++)
                put_f32(b + 4 * i, good[i]);
        assert_true(sc_wire_f32s_finite(b, 6));
        for (size_t k = 0; k < 3; k++) {
                put_f32(b + 4 * 6, bad[k]);
                assert_false(sc_wire_f32s_finite(b, 7));
                assert_true(sc_wire_f32s_finite(b, 6));
        }
        assert_true(sc_wire_f32s_finite(b, 0));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(update_round_trip),
            cmocka_unit_test(model_round_trip),
            cmocka_unit_test(samples_and_control_round_trip),
            cmocka_unit_test(encoders_reject_bad_values),
            cmocka_unit_test(every_truncation_rejected),
            cmocka_unit_test(every_bit_flip_rejected),
            cmocka_unit_test(structural_fuzz),
            cmocka_unit_test(header_errors),
            cmocka_unit_test(sha256_and_hmac_vectors),
            cmocka_unit_test(signed_messages),
            cmocka_unit_test(data_driven_invalid),
            cmocka_unit_test(f32s_finite),
        };
        return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
