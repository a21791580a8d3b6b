/* none.c — the identity codec: dense little-endian float32, and the dense
 * body decoders every codec that may send dense shares. */
#include "codec_impl.h"

static sc_err_t sc_codec_none_encode(sc_codec_t *c, const float *grads, sc_rng_t *rng,
                                     sc_buf_t *out, char *errstr, size_t errstr_size)
{
        size_t need = SC_CODEC_HDR_SIZE + 4 * c->n;

        if (sc_buf_reserve(out, need))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "codec none: out of memory for %zu bytes", need);
        sc_codec_put_hdr(out->data + out->len, SC_CODEC_NONE, SC_CODEC_FMT_DENSE, 0, c->n);
        sc_le_putf32s(out->data + out->len + SC_CODEC_HDR_SIZE, grads, c->n);
        out->len += need;
        c->stats.last_nnz = c->n;
        return SC_OK;
}

sc_err_t sc_codec_dense_decode_add(const uint8_t *body, size_t len, uint32_t n, float *acc,
                                   float scale, char *errstr, size_t errstr_size)
{
        if (len != 4 * (size_t)n)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: dense body of %zu bytes for %u floats", len, n);
        if (scale == 1.0f) {
                for (uint32_t i = 0; i < n; i++)
                        acc[i] += sc_le_getf32(body + 4 * (size_t)i);
        } else {
                for (uint32_t i = 0; i < n; i++)
                        acc[i] += scale * sc_le_getf32(body + 4 * (size_t)i);
        }
        return SC_OK;
}

sc_err_t sc_codec_dense_decode_list(const uint8_t *body, size_t len, uint32_t n, uint32_t *idx,
                                    float *val, char *errstr, size_t errstr_size)
{
        if (len != 4 * (size_t)n)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: dense body of %zu bytes for %u floats", len, n);
        for (uint32_t i = 0; i < n; i++) {
                idx[i] = i;
                val[i] = sc_le_getf32(body + 4 * (size_t)i);
        }
        return SC_OK;
}

const sc_codec_ops_t sc_codec_none_ops = {
    .name = "none",
    .id = SC_CODEC_NONE,
    .formats = 1u << SC_CODEC_FMT_DENSE,
    .encode = sc_codec_none_encode,
};
