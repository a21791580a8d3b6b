/* test_pb.c — the protocol-buffers writer, byte for byte: varints at their
 * size boundaries, negative int64, fixed32 floats, strings, packed floats
 * and int64s, nested messages whose length needs one or two bytes, and the
 * sticky size error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sc_pb.h"

/* buf holds exactly the bytes given. */
#define EXPECT_BYTES(buf, ...)                                                                     \
        do {                                                                                       \
                static const uint8_t want_[] = {__VA_ARGS__};                                      \
                assert_int_equal((buf)->len, sizeof(want_));                                       \
                assert_memory_equal((buf)->data, want_, sizeof(want_));                            \
        } while (0)

static void test_varints(void **state)
{
        (void)state;
        static const struct {
                uint64_t v;
                uint8_t bytes[10];
                size_t n;
        } cases[] = {
            {0, {0x00}, 1},
            {1, {0x01}, 1},
            {127, {0x7f}, 1},
            {128, {0x80, 0x01}, 2},
            {300, {0xac, 0x02}, 2},
            {16383, {0xff, 0x7f}, 2},
            {16384, {0x80, 0x80, 0x01}, 3},
            {UINT32_MAX, {0xff, 0xff, 0xff, 0xff, 0x0f}, 5},
            {UINT64_MAX, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                sc_buf_t buf;
                sc_pb_t pb;
                sc_buf_init(&buf);
                sc_pb_init(&pb, &buf);
                sc_pb_varint(&pb, cases[i].v);
                assert_int_equal(sc_pb_err(&pb), SC_OK);
                assert_int_equal(buf.len, cases[i].n);
                assert_memory_equal(buf.data, cases[i].bytes, cases[i].n);
                sc_buf_free(&buf);
        }
}

static void test_scalar_fields(void **state)
{
        (void)state;
        sc_buf_t buf;
        sc_pb_t pb;
        sc_buf_init(&buf);
        sc_pb_init(&pb, &buf);
        sc_pb_int(&pb, 1, 7);      /* key 0x08 */
        sc_pb_int(&pb, 2, -1);     /* int64 -1: ten bytes */
        sc_pb_int(&pb, 20, 2);     /* key (20 << 3) = 160: two bytes */
        sc_pb_float(&pb, 2, 1.0f); /* key 0x15, then 00 00 80 3f */
        sc_pb_float(&pb, 2, -2.5f);
        sc_pb_string(&pb, 4, "Gemm");
        sc_pb_bytes(&pb, 9, NULL, 0);
        assert_int_equal(sc_pb_err(&pb), SC_OK);
        EXPECT_BYTES(&buf, 0x08, 0x07, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                     0x01, 0xa0, 0x01, 0x02, 0x15, 0x00, 0x00, 0x80, 0x3f, 0x15, 0x00, 0x00, 0x20,
                     0xc0, 0x22, 0x04, 'G', 'e', 'm', 'm', 0x4a, 0x00);
        sc_buf_free(&buf);
}

static void test_packed(void **state)
{
        (void)state;
        sc_buf_t buf;
        sc_pb_t pb;
        const float f[2] = {1.0f, -0.0f};
        const int64_t v[3] = {1, 300, -1};
        sc_buf_init(&buf);
        sc_pb_init(&pb, &buf);
        sc_pb_floats(&pb, 4, f, 2);
        sc_pb_int64s(&pb, 7, v, 3);
        sc_pb_floats(&pb, 4, NULL, 0);
        assert_int_equal(sc_pb_err(&pb), SC_OK);
        EXPECT_BYTES(&buf, 0x22, 0x08, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x80, /* floats */
                     0x3a, 0x0d, 0x01, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                     0xff, 0x01, /* int64s */
                     0x22, 0x00);
        sc_buf_free(&buf);
}

/* OperatorSetIdProto {version: 13} as field 8 of a ModelProto, after
 * ir_version 7, and a nested message of 200 bytes (two-byte length). */
static void test_nested(void **state)
{
        (void)state;
        sc_buf_t buf;
        sc_pb_t pb;
        sc_buf_init(&buf);
        sc_pb_init(&pb, &buf);
        sc_pb_int(&pb, 1, 7);
        size_t m = sc_pb_begin(&pb, 8);
        sc_pb_int(&pb, 2, 13);
        sc_pb_end(&pb, m);
        assert_int_equal(sc_pb_err(&pb), SC_OK);
        EXPECT_BYTES(&buf, 0x08, 0x07, 0x42, 0x02, 0x10, 0x0d);

        /* outer { inner { bytes field of 195 } }: the field takes 1 + 2 + 195 =
         * 198 bytes, inner 1 + 2 + 198 = 201 */
        uint8_t body[198];
        for (size_t i = 0; i < sizeof(body); i++)
                body[i] = (uint8_t)i;
        buf.len = 0;
        size_t outer = sc_pb_begin(&pb, 7);
        size_t inner = sc_pb_begin(&pb, 1);
        sc_pb_bytes(&pb, 9, body, 195);
        sc_pb_end(&pb, inner);
        sc_pb_end(&pb, outer);
        assert_int_equal(sc_pb_err(&pb), SC_OK);
        assert_int_equal(buf.len, 1 + 2 + 201);
        static const uint8_t head[] = {0x3a, 0xc9, 0x01, 0x0a, 0xc6, 0x01, 0x4a, 0xc3, 0x01};
        assert_memory_equal(buf.data, head, sizeof(head));
        assert_memory_equal(buf.data + sizeof(head), body, 195);

        /* an empty message */
        buf.len = 0;
        m = sc_pb_begin(&pb, 3);
        sc_pb_end(&pb, m);
        EXPECT_BYTES(&buf, 0x1a, 0x00);
        sc_buf_free(&buf);
}

/* A field over SC_PB_MAX_LEN fails without allocating, and the error sticks. */
static void test_sticky_error(void **state)
{
        (void)state;
        sc_buf_t buf;
        sc_pb_t pb;
        static const float one = 1.0f;
        sc_buf_init(&buf);
        sc_pb_init(&pb, &buf);
        sc_pb_int(&pb, 1, 1);
        sc_pb_floats(&pb, 4, &one, SC_PB_MAX_LEN / 4 + 1);
        assert_int_equal(sc_pb_err(&pb), SC_ERR_INVAL);
        size_t len = buf.len;
        sc_pb_string(&pb, 2, "more");
        size_t m = sc_pb_begin(&pb, 3);
        sc_pb_end(&pb, m);
        assert_int_equal(buf.len, len);
        assert_int_equal(sc_pb_err(&pb), SC_ERR_INVAL);
        sc_buf_free(&buf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_varints),      cmocka_unit_test(test_scalar_fields),
            cmocka_unit_test(test_packed),       cmocka_unit_test(test_nested),
            cmocka_unit_test(test_sticky_error),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
