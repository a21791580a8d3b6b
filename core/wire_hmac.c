/* wire_hmac.c — SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) for the
 * optional authentication tag of wire messages. */
#include "sc_wire.h"

#include <string.h>

#include "sc_crc32c.h"
#include "sc_le.h"

typedef struct sc_sha256 {
        uint32_t h[8];
        uint64_t len; /* bytes hashed */
        uint8_t blk[64];
        size_t fill;
} sc_sha256_t;

static const uint32_t sc_sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t sc_ror(uint32_t x, int n)
{
        return (x >> n) | (x << (32 - n));
}

static void sc_sha256_init(sc_sha256_t *s)
{
        static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
        memcpy(s->h, h0, sizeof(h0));
        s->len = 0;
        s->fill = 0;
}

static void sc_sha256_block(sc_sha256_t *s, const uint8_t *p)
{
        uint32_t w[64], a, b, c, d, e, f, g, h;

        for (int i = 0; i < 16; i++)
                w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
                       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
        for (int i = 16; i < 64; i++) {
                uint32_t s0 = sc_ror(w[i - 15], 7) ^ sc_ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
                uint32_t s1 = sc_ror(w[i - 2], 17) ^ sc_ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
                w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
        e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
        for (int i = 0; i < 64; i++) {
                uint32_t t1 = h + (sc_ror(e, 6) ^ sc_ror(e, 11) ^ sc_ror(e, 25)) +
                              ((e & f) ^ (~e & g)) + sc_sha256_k[i] + w[i];
                uint32_t t2 =
                    (sc_ror(a, 2) ^ sc_ror(a, 13) ^ sc_ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
                h = g, g = f, f = e, e = d + t1;
                d = c, c = b, b = a, a = t1 + t2;
        }
        s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
        s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static void sc_sha256_update(sc_sha256_t *s, const void *data, size_t n)
{
        const uint8_t *p = data;

        s->len += n;
        while (n > 0) {
                if (s->fill == 0 && n >= 64) {
                        sc_sha256_block(s, p);
                        p += 64;
                        n -= 64;
                        continue;
                }
                size_t take = 64 - s->fill < n ? 64 - s->fill : n;
                memcpy(s->blk + s->fill, p, take);
                s->fill += take;
                p += take;
                n -= take;
                if (s->fill == 64) {
                        sc_sha256_block(s, s->blk);
                        s->fill = 0;
                }
        }
}

static void sc_sha256_final(sc_sha256_t *s, uint8_t out[32])
{
        uint64_t bits = s->len * 8;
        uint8_t pad[72] = {0x80};
        size_t padlen = (s->fill < 56 ? 56 : 120) - s->fill;

        for (int i = 0; i < 8; i++)
                pad[padlen + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
        sc_sha256_update(s, pad, padlen + 8);
        for (int i = 0; i < 8; i++)
                for (int j = 0; j < 4; j++)
                        out[4 * i + j] = (uint8_t)(s->h[i] >> (24 - 8 * j));
}

void sc_wire_sha256(const void *data, size_t n, uint8_t out[32])
{
        sc_sha256_t s;
        sc_sha256_init(&s);
        sc_sha256_update(&s, data, n);
        sc_sha256_final(&s, out);
}

void sc_wire_hmac_sha256(const void *key, size_t keylen, const void *a, size_t alen, const void *b,
                         size_t blen, uint8_t out[32])
{
        uint8_t k[64] = {0}, pad[64], inner[32];
        sc_sha256_t s;

        if (keylen > 64)
                sc_wire_sha256(key, keylen, k);
        else if (keylen)
                memcpy(k, key, keylen);
        for (int i = 0; i < 64; i++)
                pad[i] = k[i] ^ 0x36;
        sc_sha256_init(&s);
        sc_sha256_update(&s, pad, 64);
        sc_sha256_update(&s, a, alen);
        sc_sha256_update(&s, b, blen);
        sc_sha256_final(&s, inner);
        for (int i = 0; i < 64; i++)
                pad[i] = k[i] ^ 0x5c;
        sc_sha256_init(&s);
        sc_sha256_update(&s, pad, 64);
        sc_sha256_update(&s, inner, 32);
        sc_sha256_final(&s, out);
}

sc_err_t sc_wire_sign(sc_buf_t *buf, size_t start, const void *key, size_t keylen, char *errstr,
                      size_t errstr_size)
{
        uint8_t *m, tag[SC_WIRE_TAG_SIZE];
        uint32_t body, crc;

        if (!key || keylen == 0)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "wire sign: empty key");
        if (start > buf->len || buf->len - start < SC_WIRE_HDR_SIZE)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire sign: no message at offset %zu", start);
        m = buf->data + start;
        body = sc_le_get32(m + 8);
        if (memcmp(m, SC_WIRE_MAGIC, 4) || (m[6] | m[7]) != 0 ||
            (uint64_t)body != (uint64_t)(buf->len - start - SC_WIRE_HDR_SIZE))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire sign: the bytes at offset %zu are not one unsigned message "
                               "ending the buffer",
                               start);
        if (body > UINT32_MAX - SC_WIRE_TAG_SIZE)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "wire sign: message too large");
        if (sc_buf_reserve(buf, SC_WIRE_TAG_SIZE))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "wire sign: out of memory");
        m = buf->data + start;
        m[6] = SC_WIRE_FLAG_HMAC;
        body += SC_WIRE_TAG_SIZE;
        sc_le_put32(m + 8, body);
        sc_wire_hmac_sha256(key, keylen, m, 12, m + SC_WIRE_HDR_SIZE, body - SC_WIRE_TAG_SIZE, tag);
        memcpy(m + SC_WIRE_HDR_SIZE + body - SC_WIRE_TAG_SIZE, tag, SC_WIRE_TAG_SIZE);
        buf->len += SC_WIRE_TAG_SIZE;
        crc = sc_crc32c(sc_crc32c(0, m, 12), m + SC_WIRE_HDR_SIZE, body);
        sc_le_put32(m + 12, crc);
        return SC_OK;
}

int sc_wire_tag_ok(const uint8_t *msg, size_t len, const void *key, size_t keylen)
{
        uint8_t tag[SC_WIRE_TAG_SIZE], diff = 0;
        size_t body = len - SC_WIRE_HDR_SIZE - SC_WIRE_TAG_SIZE;

        sc_wire_hmac_sha256(key, keylen, msg, 12, msg + SC_WIRE_HDR_SIZE, body, tag);
        for (int i = 0; i < SC_WIRE_TAG_SIZE; i++)
                diff |= (uint8_t)(tag[i] ^ msg[SC_WIRE_HDR_SIZE + body + (size_t)i]);
        return diff == 0;
}
