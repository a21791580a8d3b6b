/* test_crc32c.c — CRC32C against published check values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sc_crc32c.h"

static void check_values(void **state)
{
        /* RFC 3720 B.4 and the standard "123456789" check value. */
        assert_int_equal(sc_crc32c(0, "123456789", 9), 0xe3069283u);
        unsigned char zeros[32] = {0}, ones[32];
        memset(ones, 0xff, sizeof(ones));
        assert_int_equal(sc_crc32c(0, zeros, 32), 0x8a9136aau);
        assert_int_equal(sc_crc32c(0, ones, 32), 0x62a8ab43u);
        assert_int_equal(sc_crc32c(0, "", 0), 0);
}

static void incremental_equals_whole(void **state)
{
        unsigned char buf[1000];
        for (int i = 0; i < 1000; i++)
                buf[i] = (unsigned char)(i * 31 + 7);
        uint32_t whole = sc_crc32c(0, buf, sizeof(buf));
        for (size_t cut = 0; cut <= 1000; cut += 37) {
                uint32_t c = sc_crc32c(0, buf, cut);
                assert_int_equal(sc_crc32c(c, buf + cut, 1000 - cut), whole);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(check_values),
            cmocka_unit_test(incremental_equals_whole),
        };
        return cmocka_run_group_tests_name("crc32c", tests, NULL, NULL);
}
