/* fp16.c — IEEE binary16 conversion (round to nearest even, inf, nan and
 * subnormals) and the fp16 codec: 2 bytes per coordinate, optional error
 * feedback (a coordinate that overflows to inf keeps no residual). */
#include "codec_impl.h"

#include <math.h>

uint16_t sc_codec_f32_to_f16(float f)
{
        uint32_t x = sc_f32_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;

        if (ax >= 0x7f800000u) /* inf, or nan kept quiet with its top payload bits */
                return (uint16_t)(sign |
                                  (ax == 0x7f800000u ? 0x7c00u : 0x7e00u | ((ax >> 13) & 0x3ffu)));
        if (ax >= 0x477ff000u) /* >= 65520 rounds to inf */
                return (uint16_t)(sign | 0x7c00u);
        if (ax >= 0x38800000u) { /* normal: rebias 127 -> 15, round the 13 dropped bits */
                ax += 0xfffu + ((ax >> 13) & 1u);
                ax -= 112u << 23;
                return (uint16_t)(sign | (ax >> 13));
        }
        uint32_t e = ax >> 23;
        if (e < 102) /* below 2^-25: rounds to zero */
                return (uint16_t)sign;
        /* subnormal: count units of 2^-24, which may round up to 2^-14 */
        uint32_t mant = (ax & 0x7fffffu) | 0x800000u, shift = 126 - e;
        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
                q++;
        return (uint16_t)(sign | q);
}

float sc_codec_f16_to_f32(uint16_t h)
{
        uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;

        if (e == 0x1f)
                return sc_f32_from_bits(sign | 0x7f800000u | (m << 13));
        if (e == 0) {
                float v = (float)m * 0x1p-24f;
                return sign ? -v : v;
        }
        return sc_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

static sc_err_t sc_codec_fp16_encode(sc_codec_t *c, const float *grads, sc_rng_t *rng,
                                     sc_buf_t *out, char *errstr, size_t errstr_size)
{
        size_t need = SC_CODEC_HDR_SIZE + 2 * c->n;
        float *r = c->residual;
        uint8_t *p;

        if (sc_buf_reserve(out, need))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "codec fp16: out of memory for %zu bytes", need);
        p = out->data + out->len;
        sc_codec_put_hdr(p, SC_CODEC_FP16, SC_CODEC_FMT_FP16, r ? SC_CODEC_FLAG_EF : 0, c->n);
        p += SC_CODEC_HDR_SIZE;
        if (r) {
                for (size_t i = 0; i < c->n; i++) {
                        float v = grads[i] + r[i];
                        uint16_t h = sc_codec_f32_to_f16(v);
                        float d = sc_codec_f16_to_f32(h);
                        r[i] = isfinite(d) ? v - d : 0.0f;
                        sc_le_put16(p + 2 * i, h);
                }
        } else {
                for (size_t i = 0; i < c->n; i++)
                        sc_le_put16(p + 2 * i, sc_codec_f32_to_f16(grads[i]));
        }
        out->len += need;
        c->stats.last_nnz = c->n;
        c->stats.compressed++;
        return SC_OK;
}

sc_err_t sc_codec_fp16_decode_add(const uint8_t *body, size_t len, uint32_t n, float *acc,
                                  float scale, char *errstr, size_t errstr_size)
{
        if (len != 2 * (size_t)n)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: fp16 body of %zu bytes for %u floats", len, n);
        for (uint32_t i = 0; i < n; i++)
                acc[i] += scale * sc_codec_f16_to_f32(sc_le_get16(body + 2 * (size_t)i));
        return SC_OK;
}

sc_err_t sc_codec_fp16_decode_list(const uint8_t *body, size_t len, uint32_t n, uint32_t *idx,
                                   float *val, char *errstr, size_t errstr_size)
{
        if (len != 2 * (size_t)n)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: fp16 body of %zu bytes for %u floats", len, n);
        for (uint32_t i = 0; i < n; i++) {
                idx[i] = i;
                val[i] = sc_codec_f16_to_f32(sc_le_get16(body + 2 * (size_t)i));
        }
        return SC_OK;
}

const sc_codec_ops_t sc_codec_fp16_ops = {
    .name = "fp16",
    .id = SC_CODEC_FP16,
    .formats = 1u << SC_CODEC_FMT_FP16,
    .encode = sc_codec_fp16_encode,
};
