/* sparse.c — compact coding of sorted index lists (varint gaps, bit-packed
 * gaps or bitmap, whichever is smallest) and the sparse (index, value) body
 * shared by topk, randk, adacomp and adaptive. */
#include "codec_impl.h"

/* Gap j is idx[j] - idx[j-1] - 1 (gap 0 is idx[0]): every gap of a strictly
 * increasing list is >= 0, and k = n gives all-zero gaps (0 bits packed). */
static inline uint32_t sc_gap(const uint32_t *idx, size_t j)
{
        return j ? idx[j] - idx[j - 1] - 1 : idx[0];
}

static inline size_t sc_varint_len(uint32_t v)
{
        return v < (1u << 7) ? 1 : v < (1u << 14) ? 2 : v < (1u << 21) ? 3 : v < (1u << 28) ? 4 : 5;
}

static int sc_bits_for(uint32_t v)
{
        int b = 0;
        while (v) {
                b++;
                v >>= 1;
        }
        return b;
}

typedef struct sc_index_plan {
        int method;
        int width;
        uint64_t bytes; /* body bytes */
} sc_index_plan_t;

static void sc_index_plan(const uint32_t *idx, size_t k, uint32_t n, int method,
                          sc_index_plan_t *plan)
{
        uint64_t vbytes = 0, pbytes, mbytes = ((uint64_t)n + 7) / 8;
        uint32_t maxgap = 0;

        for (size_t j = 0; j < k; j++) {
                uint32_t g = sc_gap(idx, j);
                vbytes += sc_varint_len(g);
                maxgap = g > maxgap ? g : maxgap;
        }
        plan->width = sc_bits_for(maxgap);
        pbytes = ((uint64_t)k * (uint64_t)plan->width + 7) / 8;
        if (method < 0) {
                method = SC_CODEC_INDEX_VARINT;
                if (pbytes < vbytes)
                        method = SC_CODEC_INDEX_BITPACK;
                if (mbytes < (method == SC_CODEC_INDEX_BITPACK ? pbytes : vbytes))
                        method = SC_CODEC_INDEX_BITMAP;
        }
        plan->method = method;
        plan->bytes = method == SC_CODEC_INDEX_VARINT    ? vbytes
                      : method == SC_CODEC_INDEX_BITPACK ? pbytes
                                                         : mbytes;
        if (method != SC_CODEC_INDEX_BITPACK)
                plan->width = 0;
}

size_t sc_codec_index_size(const uint32_t *idx, size_t k, uint32_t n)
{
        sc_index_plan_t plan;
        sc_index_plan(idx, k, n, -1, &plan);
        return SC_CODEC_INDEX_HDR + (size_t)plan.bytes;
}

sc_err_t sc_codec_index_encode(const uint32_t *idx, size_t k, uint32_t n, int method, sc_buf_t *out)
{
        sc_index_plan_t plan;
        uint8_t *p;

        if (method > SC_CODEC_INDEX_BITMAP)
                return SC_ERR_INVAL;
        sc_index_plan(idx, k, n, method, &plan);
        if (plan.bytes > UINT32_MAX)
                return SC_ERR_INVAL;
        if (sc_buf_reserve(out, SC_CODEC_INDEX_HDR + (size_t)plan.bytes))
                return SC_ERR_NOMEM;
        p = out->data + out->len;
        p[0] = (uint8_t)plan.method;
        p[1] = (uint8_t)plan.width;
        sc_le_put16(p + 2, 0);
        sc_le_put32(p + 4, (uint32_t)plan.bytes);
        p += SC_CODEC_INDEX_HDR;
        if (plan.method == SC_CODEC_INDEX_VARINT) {
                for (size_t j = 0; j < k; j++) {
                        uint32_t g = sc_gap(idx, j);
                        while (g >= 0x80) {
                                *p++ = (uint8_t)(g | 0x80);
                                g >>= 7;
                        }
                        *p++ = (uint8_t)g;
                }
        } else if (plan.method == SC_CODEC_INDEX_BITPACK) {
                uint64_t accb = 0;
                int nb = 0;
                for (size_t j = 0; j < k && plan.width; j++) {
                        accb |= (uint64_t)sc_gap(idx, j) << nb;
                        nb += plan.width;
                        while (nb >= 8) {
                                *p++ = (uint8_t)accb;
                                accb >>= 8;
                                nb -= 8;
                        }
                }
                if (nb > 0)
                        *p++ = (uint8_t)accb;
        } else {
                memset(p, 0, (size_t)plan.bytes);
                for (size_t j = 0; j < k; j++)
                        p[idx[j] >> 3] |= (uint8_t)(1u << (idx[j] & 7));
        }
        out->len += SC_CODEC_INDEX_HDR + (size_t)plan.bytes;
        return SC_OK;
}

/* Walks an index block one index at a time, validating as it goes. */
typedef struct sc_index_iter {
        const uint8_t *p;
        uint64_t len; /* body bytes */
        uint64_t pos; /* varint, bitmap: byte position; bitpack: bit position */
        int method, width;
        uint32_t n;
        int64_t prev;
} sc_index_iter_t;

static sc_err_t sc_index_iter_init(sc_index_iter_t *it, const uint8_t *p, size_t len, size_t k,
                                   uint32_t n, size_t *usedp, char *errstr, size_t errstr_size)
{
        if (len < SC_CODEC_INDEX_HDR)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "sparse index block: %zu bytes, shorter than its header", len);
        memset(it, 0, sizeof(*it));
        it->method = p[0];
        it->width = p[1];
        it->len = sc_le_get32(p + 4);
        it->p = p + SC_CODEC_INDEX_HDR;
        it->n = n;
        it->prev = -1;
        if (it->method > SC_CODEC_INDEX_BITMAP || sc_le_get16(p + 2) != 0)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "sparse index block: unknown method %d", it->method);
        if (it->len > len - SC_CODEC_INDEX_HDR)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "sparse index block: claims %llu bytes, %zu left",
                               (unsigned long long)it->len, len - SC_CODEC_INDEX_HDR);
        if (k > n)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "sparse index block: %zu indices for %u coordinates", k, n);
        if (it->method == SC_CODEC_INDEX_BITPACK &&
            (it->width > 32 || ((uint64_t)k * (uint64_t)it->width + 7) / 8 != it->len))
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "sparse index block: %llu bytes do not hold %zu gaps of %d bits",
                               (unsigned long long)it->len, k, it->width);
        if (it->method != SC_CODEC_INDEX_BITPACK && it->width != 0)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "sparse index block: width %d on a non-packed block", it->width);
        if (it->method == SC_CODEC_INDEX_BITMAP && it->len != ((uint64_t)n + 7) / 8)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "sparse index block: bitmap of %llu bytes for %u coordinates",
                               (unsigned long long)it->len, n);
        *usedp = SC_CODEC_INDEX_HDR + (size_t)it->len;
        return SC_OK;
}

/* Next index into *out; SC_ERR_CORRUPT when the block runs out or an index
 * leaves [0, n) (errstr is filled by the caller). */
static inline sc_err_t sc_index_iter_next(sc_index_iter_t *it, uint32_t *out)
{
        uint64_t g = 0, v;

        if (it->method == SC_CODEC_INDEX_VARINT) {
                for (int s = 0;; s += 7) {
                        if (it->pos >= it->len || s > 28)
                                return SC_ERR_CORRUPT;
                        uint8_t b = it->p[it->pos++];
                        g |= (uint64_t)(b & 0x7f) << s;
                        if (!(b & 0x80))
                                break;
                }
        } else if (it->method == SC_CODEC_INDEX_BITPACK) {
                int got = 0;
                while (got < it->width) {
                        uint64_t byte = it->pos >> 3;
                        int off = (int)(it->pos & 7), take = 8 - off;
                        if (take > it->width - got)
                                take = it->width - got;
                        g |= (uint64_t)((it->p[byte] >> off) & ((1u << take) - 1)) << got;
                        got += take;
                        it->pos += (uint64_t)take;
                }
        } else {
                uint64_t bit = (uint64_t)(it->prev + 1);
                for (;;) {
                        uint64_t byte = bit >> 3;
                        if (byte >= it->len)
                                return SC_ERR_CORRUPT;
                        unsigned rest = (unsigned)it->p[byte] >> (bit & 7);
                        if (rest) {
                                bit += (uint64_t)__builtin_ctz(rest);
                                break;
                        }
                        bit = (byte + 1) << 3;
                }
                g = bit - (uint64_t)(it->prev + 1);
        }
        v = (uint64_t)(it->prev + 1) + g;
        if (v >= it->n)
                return SC_ERR_CORRUPT;
        it->prev = (int64_t)v;
        *out = (uint32_t)v;
        return SC_OK;
}

/* After k indices: a varint block must be used up, bit-packed padding zero. */
static sc_err_t sc_index_iter_end(const sc_index_iter_t *it)
{
        if (it->method == SC_CODEC_INDEX_VARINT)
                return it->pos == it->len ? SC_OK : SC_ERR_CORRUPT;
        if (it->method == SC_CODEC_INDEX_BITPACK && (it->pos & 7))
                return (it->p[it->pos >> 3] >> (it->pos & 7)) ? SC_ERR_CORRUPT : SC_OK;
        if (it->method == SC_CODEC_INDEX_BITMAP) {
                uint64_t bit = (uint64_t)(it->prev + 1);
                for (uint64_t byte = bit >> 3; byte < it->len; byte++) {
                        unsigned b = it->p[byte];
                        if (byte == bit >> 3)
                                b >>= bit & 7;
                        if (b)
                                return SC_ERR_CORRUPT;
                }
        }
        return SC_OK;
}

sc_err_t sc_codec_index_decode(const uint8_t *p, size_t len, size_t k, uint32_t n, uint32_t *idx,
                               size_t *usedp, char *errstr, size_t errstr_size)
{
        sc_index_iter_t it;
        uint32_t v;
        sc_err_t err = sc_index_iter_init(&it, p, len, k, n, usedp, errstr, errstr_size);

        if (err)
                return err;
        for (size_t j = 0; j < k; j++) {
                if (sc_index_iter_next(&it, &v))
                        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                       "sparse index block: index %zu of %zu is past the block "
                                       "or past coordinate %u",
                                       j, k, n);
                if (idx)
                        idx[j] = v;
        }
        if (sc_index_iter_end(&it))
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "sparse index block: bytes left after %zu indices", k);
        return SC_OK;
}

sc_err_t sc_codec_sparse_encode(sc_codec_t *c, unsigned flags, sc_buf_t *out)
{
        size_t start = out->len, k = c->ksum;
        sc_err_t err;

        if (sc_buf_reserve(out, SC_CODEC_HDR_SIZE + 4))
                return SC_ERR_NOMEM;
        sc_codec_put_hdr(out->data + out->len, c->ops->id, SC_CODEC_FMT_SPARSE, flags, c->n);
        sc_le_put32(out->data + out->len + SC_CODEC_HDR_SIZE, (uint32_t)k);
        out->len += SC_CODEC_HDR_SIZE + 4;
        if ((err = sc_codec_index_encode(c->sel, k, (uint32_t)c->n, -1, out)) ||
            (err = sc_buf_reserve(out, 4 * k))) {
                out->len = start;
                return err;
        }
        if (c->params.half_values) {
                /* selval becomes what the receiver decodes, so error feedback
                 * keeps the rounding error. */
                uint8_t *p = out->data + out->len;
                for (size_t j = 0; j < k; j++) {
                        uint16_t h = sc_codec_f32_to_f16(c->selval[j]);
                        c->selval[j] = sc_codec_f16_to_f32(h);
                        sc_le_put16(p + 2 * j, h);
                }
                sc_le_put16(out->data + start + 2, (uint16_t)(flags | SC_CODEC_FLAG_HALF));
                out->len += 2 * k;
        } else {
                sc_codec_put_f32s(out->data + out->len, c->selval, k);
                out->len += 4 * k;
        }
        c->stats.last_nnz = k;
        return SC_OK;
}

/* Validates a sparse body fully (indices included); *kp receives k. */
sc_err_t sc_codec_sparse_check(const uint8_t *body, size_t len, uint32_t n, unsigned flags,
                               uint32_t *kp, char *errstr, size_t errstr_size)
{
        size_t width = flags & SC_CODEC_FLAG_HALF ? 2 : 4;
        size_t used;
        uint32_t k;
        sc_err_t err;

        *kp = 0;
        if (len < 4)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: sparse body of %zu bytes has no count", len);
        k = sc_le_get32(body);
        if (k > n)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: %u sparse entries for %u coordinates", k, n);
        err = sc_codec_index_decode(body + 4, len - 4, k, n, NULL, &used, errstr, errstr_size);
        if (err)
                return err;
        if (len - 4 - used != width * (size_t)k)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: %zu value bytes for %u sparse entries",
                               len - 4 - used, k);
        *kp = k;
        return SC_OK;
}

/* Callers have validated the body with sc_codec_sparse_check(). */
static void sc_sparse_walk(const uint8_t *body, size_t len, uint32_t n, unsigned flags, float *acc,
                           float scale, uint32_t *idx, float *val)
{
        uint32_t k = sc_le_get32(body), v = 0;
        size_t used;
        sc_index_iter_t it;
        const uint8_t *vals;

        sc_index_iter_init(&it, body + 4, len - 4, k, n, &used, NULL, 0);
        vals = body + 4 + used;
        for (uint32_t j = 0; j < k; j++) {
                sc_index_iter_next(&it, &v);
                float x = flags & SC_CODEC_FLAG_HALF
                              ? sc_codec_f16_to_f32(sc_le_get16(vals + 2 * (size_t)j))
                              : sc_le_getf32(vals + 4 * (size_t)j);
                if (acc) {
                        acc[v] += scale * x;
                } else {
                        idx[j] = v;
                        val[j] = x;
                }
        }
}

sc_err_t sc_codec_sparse_decode_add(const uint8_t *body, size_t len, uint32_t n, unsigned flags,
                                    float *acc, float scale, char *errstr, size_t errstr_size)
{
        uint32_t k;
        sc_err_t err = sc_codec_sparse_check(body, len, n, flags, &k, errstr, errstr_size);

        if (!err)
                sc_sparse_walk(body, len, n, flags, acc, scale, NULL, NULL);
        return err;
}

sc_err_t sc_codec_sparse_decode_list(const uint8_t *body, size_t len, uint32_t n, unsigned flags,
                                     uint32_t *idx, float *val, char *errstr, size_t errstr_size)
{
        uint32_t k;
        sc_err_t err = sc_codec_sparse_check(body, len, n, flags, &k, errstr, errstr_size);

        if (!err)
                sc_sparse_walk(body, len, n, flags, NULL, 1.0f, idx, val);
        return err;
}
