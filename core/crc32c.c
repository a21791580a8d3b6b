/* crc32c.c — CRC32C, slicing-by-8 tables built once on first use. */
#include "sc_crc32c.h"

#include <pthread.h>

#include "sc_le.h"

static uint32_t sc_crc32c_tab[8][256];
static pthread_once_t sc_crc32c_once = PTHREAD_ONCE_INIT;

static void sc_crc32c_init(void)
{
        for (uint32_t n = 0; n < 256; n++) {
                uint32_t c = n;
                for (int k = 0; k < 8; k++)
                        c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
                sc_crc32c_tab[0][n] = c;
        }
        for (uint32_t n = 0; n < 256; n++)
                for (int t = 1; t < 8; t++)
                        sc_crc32c_tab[t][n] = (sc_crc32c_tab[t - 1][n] >> 8) ^
                                              sc_crc32c_tab[0][sc_crc32c_tab[t - 1][n] & 0xff];
}

uint32_t sc_crc32c(uint32_t crc, const void *buf, size_t len)
{
        const unsigned char *p = buf;

        pthread_once(&sc_crc32c_once, sc_crc32c_init);
        crc = ~crc;
        while (len >= 8) {
                uint32_t lo = crc ^ sc_le_get32(p), hi = sc_le_get32(p + 4);
                crc = sc_crc32c_tab[7][lo & 0xff] ^ sc_crc32c_tab[6][(lo >> 8) & 0xff] ^
                      sc_crc32c_tab[5][(lo >> 16) & 0xff] ^ sc_crc32c_tab[4][lo >> 24] ^
                      sc_crc32c_tab[3][hi & 0xff] ^ sc_crc32c_tab[2][(hi >> 8) & 0xff] ^
                      sc_crc32c_tab[1][(hi >> 16) & 0xff] ^ sc_crc32c_tab[0][hi >> 24];
                p += 8;
                len -= 8;
        }
        while (len--)
                crc = sc_crc32c_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        return ~crc;
}
