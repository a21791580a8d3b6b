/* q8.c — 8-bit quantization: per tensor scale = max|g| / 127 and
 * q = round(g / scale) in [-127, 127] (nearest, or stochastic with the
 * encode rng, which is unbiased); optional error feedback. A tensor whose
 * max |g| is below ~1.5e-36 is sent as zeros (its residual keeps it). */
#include "codec_impl.h"

#include "sc_alloc.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

static sc_err_t sc_codec_q8_init(sc_codec_t *c, char *errstr, size_t errstr_size)
{
        c->segmax = sc_malloc((size_t)c->nsegs * sizeof(*c->segmax));
        if (!c->segmax)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "codec q8: out of memory");
        return SC_OK;
}

/* Largest |x (+ add)| key over n values (branch-free, vectorizes). */
static uint32_t sc_q8_maxkey(const float *x, const float *add, size_t n)
{
        uint32_t m = 0;

        if (add) {
                for (size_t i = 0; i < n; i++) {
                        uint32_t key = sc_f32_bits(x[i] + add[i]) & 0x7fffffffu;
                        m = key > m ? key : m;
                }
        } else {
                for (size_t i = 0; i < n; i++) {
                        uint32_t key = sc_f32_bits(x[i]) & 0x7fffffffu;
                        m = key > m ? key : m;
                }
        }
        return m;
}

static inline int32_t sc_q8_clamp(int32_t q)
{
        q = q > 127 ? 127 : q;
        return q < -127 ? -127 : q;
}

/* Round to nearest even for |t| < 2^22: the addition drops the fraction. */
static inline float sc_q8_rint(float t)
{
        return (t + 12582912.0f) - 12582912.0f;
}

static sc_err_t sc_codec_q8_encode(sc_codec_t *c, const float *grads, sc_rng_t *rng, sc_buf_t *out,
                                   char *errstr, size_t errstr_size)
{
        size_t need = SC_CODEC_HDR_SIZE + 4 + 8 * (size_t)c->nsegs + c->n;
        float *r = c->residual;
        uint8_t *p, *q;

        if (c->params.stochastic && !rng)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "codec q8: stochastic rounding needs an rng");
        /* Scales first, so non-finite input fails before anything changes. */
        for (int s = 0; s < c->nsegs; s++) {
                const sc_codec_seg_t *g = &c->segs[s];
                uint32_t maxkey = sc_q8_maxkey(grads + g->off, r ? r + g->off : NULL, g->numel);
                if (maxkey >= 0x7f800000u)
                        return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                                       "codec q8: non-finite value in tensor at offset %zu",
                                       g->off);
                c->segmax[s] = sc_f32_from_bits(maxkey);
        }
        if (sc_buf_reserve(out, need))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "codec q8: out of memory for %zu bytes", need);
        p = out->data + out->len;
        sc_codec_put_hdr(p, SC_CODEC_Q8, SC_CODEC_FMT_Q8, r ? SC_CODEC_FLAG_EF : 0, c->n);
        sc_le_put32(p + SC_CODEC_HDR_SIZE, (uint32_t)c->nsegs);
        q = p + SC_CODEC_HDR_SIZE + 4 + 8 * (size_t)c->nsegs;
        for (int s = 0; s < c->nsegs; s++) {
                const sc_codec_seg_t *g = &c->segs[s];
                const float *x = grads + g->off;
                float *rs = r ? r + g->off : NULL;
                int8_t *qs = (int8_t *)(q + g->off);
                /* A tensor below 127 * FLT_MIN (~1.5e-36) is sent as zeros, so the
                 * scale stays normal and 1 / scale finite. */
                float scale = c->segmax[s] >= 127.0f * FLT_MIN ? c->segmax[s] / 127.0f : 0.0f;
                float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
                size_t m = g->numel;

                sc_le_put32(p + SC_CODEC_HDR_SIZE + 4 + 8 * (size_t)s, (uint32_t)m);
                sc_le_putf32(p + SC_CODEC_HDR_SIZE + 8 + 8 * (size_t)s, scale);
                if (c->params.stochastic) {
                        for (size_t i = 0; i < m; i++) {
                                float v = rs ? x[i] + rs[i] : x[i];
                                int32_t qi =
                                    sc_q8_clamp((int32_t)floorf(v * inv + sc_rng_uniform(rng)));
                                qs[i] = (int8_t)qi;
                                if (rs)
                                        rs[i] = v - (float)qi * scale;
                        }
                } else if (rs) {
                        for (size_t i = 0; i < m; i++) {
                                float v = x[i] + rs[i];
                                int32_t qi = sc_q8_clamp((int32_t)sc_q8_rint(v * inv));
                                qs[i] = (int8_t)qi;
                                rs[i] = v - (float)qi * scale;
                        }
                } else {
                        for (size_t i = 0; i < m; i++)
                                qs[i] = (int8_t)sc_q8_clamp((int32_t)sc_q8_rint(x[i] * inv));
                }
        }
        out->len += need;
        c->stats.last_nnz = c->n;
        c->stats.compressed++;
        return SC_OK;
}

sc_err_t sc_codec_q8_check(const uint8_t *body, size_t len, uint32_t n, char *errstr,
                           size_t errstr_size)
{
        uint32_t nseg;
        uint64_t sum = 0;

        if (len < 4)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: q8 body of %zu bytes has no tensor count", len);
        nseg = sc_le_get32(body);
        if (nseg == 0 || nseg > n || (len - 4) / 8 < nseg)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: q8 tensor count %u does not fit %zu bytes", nseg,
                               len);
        for (uint32_t s = 0; s < nseg; s++) {
                uint32_t numel = sc_le_get32(body + 4 + 8 * (size_t)s);
                float scale = sc_le_getf32(body + 8 + 8 * (size_t)s);
                if (numel == 0 || !isfinite(scale) || scale < 0.0f)
                        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                       "codec payload: q8 tensor %u has %u values, scale %g", s,
                                       numel, (double)scale);
                sum += numel;
        }
        if (sum != n || len - 4 - 8 * (size_t)nseg != n)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: q8 tensors hold %llu values in %zu bytes, "
                               "expected %u",
                               (unsigned long long)sum, len - 4 - 8 * (size_t)nseg, n);
        return SC_OK;
}

static void sc_q8_walk(const uint8_t *body, float *acc, float mul, uint32_t *idx, float *val)
{
        uint32_t nseg = sc_le_get32(body), i = 0;
        const uint8_t *q = body + 4 + 8 * (size_t)nseg;

        for (uint32_t s = 0; s < nseg; s++) {
                uint32_t numel = sc_le_get32(body + 4 + 8 * (size_t)s);
                float scale = sc_le_getf32(body + 8 + 8 * (size_t)s);
                for (uint32_t end = i + numel; i < end; i++) {
                        float v = (float)(int8_t)q[i] * scale;
                        if (acc) {
                                acc[i] += mul * v;
                        } else {
                                idx[i] = i;
                                val[i] = v;
                        }
                }
        }
}

sc_err_t sc_codec_q8_decode_add(const uint8_t *body, size_t len, uint32_t n, float *acc,
                                float scale, char *errstr, size_t errstr_size)
{
        sc_err_t err = sc_codec_q8_check(body, len, n, errstr, errstr_size);
        if (!err)
                sc_q8_walk(body, acc, scale, NULL, NULL);
        return err;
}

sc_err_t sc_codec_q8_decode_list(const uint8_t *body, size_t len, uint32_t n, uint32_t *idx,
                                 float *val, char *errstr, size_t errstr_size)
{
        sc_err_t err = sc_codec_q8_check(body, len, n, errstr, errstr_size);
        if (!err)
                sc_q8_walk(body, NULL, 1.0f, idx, val);
        return err;
}

const sc_codec_ops_t sc_codec_q8_ops = {
    .name = "q8",
    .id = SC_CODEC_Q8,
    .formats = 1u << SC_CODEC_FMT_Q8,
    .init = sc_codec_q8_init,
    .encode = sc_codec_q8_encode,
};
