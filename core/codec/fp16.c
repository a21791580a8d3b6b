/* fp16.c — IEEE binary16 conversion (round to nearest even, inf, nan and
 * subnormals) and the fp16 codec: 2 bytes per coordinate, optional error
 * feedback (a coordinate that overflows to inf keeps no residual). */
#include "codec_impl.h"

#include <math.h>

/* Selects a where mask is all ones, b where it is zero. */
static inline uint32_t sc_sel(uint32_t mask, uint32_t a, uint32_t b)
{
        return (a & mask) | (b & ~mask);
}

static inline uint32_t sc_mask(int cond)
{
        return (uint32_t)0 - (uint32_t)(cond != 0);
}

/* Both conversions are branch-free selects so the codec loops vectorize. */
uint16_t sc_codec_f32_to_f16(float f)
{
        uint32_t x = sc_f32_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
        /* normal: rebias 127 -> 15 and round the 13 dropped bits to even */
        uint32_t nrm = (ax + 0xfffu + ((ax >> 13) & 1u) - (112u << 23)) >> 13;
        /* subnormal: adding 0.5 puts the 2^-24 unit at the last mantissa bit,
         * so the (round-to-nearest-even) float addition does the rounding */
        uint32_t sub = sc_f32_bits(sc_f32_from_bits(ax & 0x3fffffffu) + 0.5f) - 0x3f000000u;
        uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);
        uint32_t h = sc_sel(sc_mask(ax < 0x38800000u), sub, nrm);

        h = sc_sel(sc_mask(ax >= 0x477ff000u), 0x7c00u, h); /* >= 65520 rounds to inf */
        h = sc_sel(sc_mask(ax > 0x7f800000u), nan, h);
        return (uint16_t)(sign | h);
}

float sc_codec_f16_to_f32(uint16_t h)
{
        uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu;
        uint32_t nrm = (em << 13) + (112u << 23);
        uint32_t sub = sc_f32_bits((float)(int32_t)em * 0x1p-24f);
        uint32_t bits = sc_sel(sc_mask(em >= 0x7c00u), (em << 13) | 0x7f800000u, nrm);

        bits = sc_sel(sc_mask(em < 0x0400u), sub, bits);
        return sc_f32_from_bits(sign | bits);
}

#define SC_FP16_CHUNK 512

static sc_err_t sc_codec_fp16_encode(sc_codec_t *c, const float *grads, sc_rng_t *rng,
                                     sc_buf_t *out, char *errstr, size_t errstr_size)
{
        size_t need = SC_CODEC_HDR_SIZE + 2 * c->n;
        float *r = c->residual;
        uint16_t h[SC_FP16_CHUNK];
        uint8_t *p;

        if (sc_buf_reserve(out, need))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "codec fp16: out of memory for %zu bytes", need);
        p = out->data + out->len;
        sc_codec_put_hdr(p, SC_CODEC_FP16, SC_CODEC_FMT_FP16, r ? SC_CODEC_FLAG_EF : 0, c->n);
        p += SC_CODEC_HDR_SIZE;
        for (size_t b = 0; b < c->n; b += SC_FP16_CHUNK) {
                size_t m = c->n - b < SC_FP16_CHUNK ? c->n - b : SC_FP16_CHUNK;
                const float *g = grads + b;
                if (r) {
                        float *rb = r + b;
                        for (size_t i = 0; i < m; i++) {
                                float v = g[i] + rb[i];
                                h[i] = sc_codec_f32_to_f16(v);
                                float d = sc_codec_f16_to_f32(h[i]);
                                uint32_t fin =
                                    sc_mask((sc_f32_bits(d) & 0x7f800000u) != 0x7f800000u);
                                rb[i] = sc_f32_from_bits(sc_f32_bits(v - d) & fin);
                        }
                } else {
                        for (size_t i = 0; i < m; i++)
                                h[i] = sc_codec_f32_to_f16(g[i]);
                }
                sc_le_put16s(p + 2 * b, h, m);
        }
        out->len += need;
        c->stats.last_nnz = c->n;
        c->stats.compressed++;
        return SC_OK;
}

sc_err_t sc_codec_fp16_decode_add(const uint8_t *body, size_t len, uint32_t n, float *acc,
                                  float scale, char *errstr, size_t errstr_size)
{
        uint16_t h[SC_FP16_CHUNK];

        if (len != 2 * (size_t)n)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: fp16 body of %zu bytes for %u floats", len, n);
        for (size_t b = 0; b < n; b += SC_FP16_CHUNK) {
                size_t m = n - b < SC_FP16_CHUNK ? n - b : SC_FP16_CHUNK;
                float *a = acc + b;
                sc_le_get16s(h, body + 2 * b, m);
                for (size_t i = 0; i < m; i++)
                        a[i] += scale * sc_codec_f16_to_f32(h[i]);
        }
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
