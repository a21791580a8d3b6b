/* sparse.c — compact coding of sorted index lists (varint gaps, bit-packed
 * gaps, bitmap or optionally Rice-coded gaps, whichever is smallest) and the
 * sparse (index, value) body shared by topk, randk, adacomp and adaptive
 * (values as float32, IEEE half or 8-bit log codes). */
#include <math.h>

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
        int width;      /* bitpack: bits per gap; rice: the parameter r */
        uint64_t bytes; /* body bytes */
} sc_index_plan_t;

/* Rice parameter r (0..31) of fewest bits for the gaps, and those bits. */
static uint64_t sc_rice_bits(const uint32_t *idx, size_t k, int maxwidth, int *rp)
{
        uint64_t best = UINT64_MAX;
        int top = maxwidth < 31 ? maxwidth : 31;

        *rp = 0;
        for (int r = 0; r <= top; r++) {
                uint64_t bits = (uint64_t)k * (uint64_t)(r + 1);
                for (size_t j = 0; j < k && bits < best; j++)
                        bits += sc_gap(idx, j) >> r;
                if (bits < best) {
                        best = bits;
                        *rp = r;
                }
        }
        return best;
}

static void sc_index_plan(const uint32_t *idx, size_t k, uint32_t n, int method,
                          sc_index_plan_t *plan)
{
        uint64_t vbytes = 0, pbytes, mbytes = ((uint64_t)n + 7) / 8, rbytes = UINT64_MAX, best;
        uint32_t maxgap = 0;
        int r = 0;

        for (size_t j = 0; j < k; j++) {
                uint32_t g = sc_gap(idx, j);
                vbytes += sc_varint_len(g);
                maxgap = g > maxgap ? g : maxgap;
        }
        plan->width = sc_bits_for(maxgap);
        pbytes = ((uint64_t)k * (uint64_t)plan->width + 7) / 8;
        if (method == SC_CODEC_INDEX_RICE || method == SC_CODEC_INDEX_AUTO_RICE)
                rbytes = (sc_rice_bits(idx, k, plan->width, &r) + 7) / 8;
        if (method < 0) {
                method = SC_CODEC_INDEX_VARINT;
                best = vbytes;
                if (pbytes < best) {
                        method = SC_CODEC_INDEX_BITPACK;
                        best = pbytes;
                }
                if (mbytes < best) {
                        method = SC_CODEC_INDEX_BITMAP;
                        best = mbytes;
                }
                if (rbytes < best)
                        method = SC_CODEC_INDEX_RICE;
        }
        plan->method = method;
        plan->bytes = method == SC_CODEC_INDEX_VARINT    ? vbytes
                      : method == SC_CODEC_INDEX_BITPACK ? pbytes
                      : method == SC_CODEC_INDEX_RICE    ? rbytes
                                                         : mbytes;
        if (method == SC_CODEC_INDEX_RICE)
                plan->width = r;
        else if (method != SC_CODEC_INDEX_BITPACK)
                plan->width = 0;
}

size_t sc_codec_index_size(const uint32_t *idx, size_t k, uint32_t n)
{
        sc_index_plan_t plan;
        sc_index_plan(idx, k, n, SC_CODEC_INDEX_AUTO, &plan);
        return SC_CODEC_INDEX_HDR + (size_t)plan.bytes;
}

sc_err_t sc_codec_index_encode(const uint32_t *idx, size_t k, uint32_t n, int method, sc_buf_t *out)
{
        sc_index_plan_t plan;
        uint8_t *p;

        if (method > SC_CODEC_INDEX_RICE || method < SC_CODEC_INDEX_AUTO_RICE)
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
        } else if (plan.method == SC_CODEC_INDEX_RICE) {
                uint64_t accb = 0;
                int nb = 0, r = plan.width;
                for (size_t j = 0; j < k; j++) {
                        uint32_t g = sc_gap(idx, j), q = g >> r;
                        while (q > 0) { /* q one-bits, at most 32 at a time */
                                int m = q < 32 ? (int)q : 32;
                                accb |= ((1ull << m) - 1) << nb;
                                nb += m;
                                q -= (uint32_t)m;
                                while (nb >= 8) {
                                        *p++ = (uint8_t)accb;
                                        accb >>= 8;
                                        nb -= 8;
                                }
                        }
                        nb++; /* the zero bit */
                        accb |= (uint64_t)(g & ((1ull << r) - 1)) << nb;
                        nb += r;
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
        if (it->method > SC_CODEC_INDEX_RICE || sc_le_get16(p + 2) != 0)
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
        if (it->method == SC_CODEC_INDEX_RICE &&
            (it->width > 31 || (uint64_t)k * (uint64_t)(it->width + 1) > 8 * it->len))
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "sparse index block: %llu bytes cannot hold %zu Rice codes (r = %d)",
                               (unsigned long long)it->len, k, it->width);
        if (it->method != SC_CODEC_INDEX_BITPACK && it->method != SC_CODEC_INDEX_RICE &&
            it->width != 0)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "sparse index block: width %d on a non-packed block", it->width);
        if (it->method == SC_CODEC_INDEX_BITMAP && it->len != ((uint64_t)n + 7) / 8)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "sparse index block: bitmap of %llu bytes for %u coordinates",
                               (unsigned long long)it->len, n);
        *usedp = SC_CODEC_INDEX_HDR + (size_t)it->len;
        return SC_OK;
}

/* Reads `bits` (<= 32) bits LSB first at it->pos; the caller checked the
 * block holds them. */
static inline uint64_t sc_index_bits(sc_index_iter_t *it, int bits)
{
        uint64_t g = 0;
        int got = 0;
        while (got < bits) {
                uint64_t byte = it->pos >> 3;
                int off = (int)(it->pos & 7), take = 8 - off;
                if (take > bits - got)
                        take = bits - got;
                g |= (uint64_t)((it->p[byte] >> off) & ((1u << take) - 1)) << got;
                got += take;
                it->pos += (uint64_t)take;
        }
        return g;
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
                g = sc_index_bits(it, it->width);
        } else if (it->method == SC_CODEC_INDEX_RICE) {
                uint64_t end = 8 * it->len, q = 0, limit = (uint64_t)it->n >> it->width;
                for (;;) { /* unary quotient: a gap past n is corrupt */
                        if (it->pos >= end || q > limit)
                                return SC_ERR_CORRUPT;
                        int bit = (it->p[it->pos >> 3] >> (it->pos & 7)) & 1;
                        it->pos++;
                        if (!bit)
                                break;
                        q++;
                }
                if (end - it->pos < (uint64_t)it->width)
                        return SC_ERR_CORRUPT;
                g = q << it->width | sc_index_bits(it, it->width);
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
        if (it->method == SC_CODEC_INDEX_RICE && (it->pos + 7) / 8 != it->len)
                return SC_ERR_CORRUPT;
        if ((it->method == SC_CODEC_INDEX_BITPACK || it->method == SC_CODEC_INDEX_RICE) &&
            (it->pos & 7))
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
        if (it.method == SC_CODEC_INDEX_BITPACK && it.width == 0) {
                /* every gap 0: the indices are 0..k-1 (k <= n checked), and the
                 * block is empty: no walk whatever k claims */
                for (size_t j = 0; idx && j < k; j++)
                        idx[j] = (uint32_t)j;
                return SC_OK;
        }
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

/* log8 values: level c (1..127) of the range [lo, hi]; level 1 is lo and
 * level 127 is hi exactly. Encoder and decoder share this table. */
static void sc_log8_levels(float lo, float hi, float *lv)
{
        double lr = lo > 0 && hi > lo ? log((double)hi / (double)lo) : 0.0;

        lv[0] = 0.0f;
        for (int c = 1; c < 128; c++)
                lv[c] = (float)((double)lo * exp(lr * (c - 1) / 126.0));
        lv[1] = lo;
        lv[127] = hi;
}

/* Codes selval as log8 into p (8 + k bytes) and replaces selval by what the
 * receiver decodes; 0 when a value is not finite (nothing written). */
static int sc_log8_encode(float *selval, size_t k, uint8_t *p)
{
        float lo = INFINITY, hi = 0.0f, lv[128];
        double lr;

        for (size_t j = 0; j < k; j++) {
                float a = fabsf(selval[j]);
                if (!isfinite(a))
                        return 0;
                if (a > 0 && a < lo)
                        lo = a;
                hi = a > hi ? a : hi;
        }
        if (hi == 0.0f)
                lo = 0.0f;
        sc_le_putf32(p, lo);
        sc_le_putf32(p + 4, hi);
        sc_log8_levels(lo, hi, lv);
        lr = hi > lo ? log((double)hi / (double)lo) : 0.0;
        for (size_t j = 0; j < k; j++) {
                float v = selval[j], a = fabsf(v);
                long c = 0;
                if (a > 0) {
                        c = lr > 0 ? 1 + lround(log((double)a / (double)lo) / lr * 126.0) : 1;
                        c = c < 1 ? 1 : c > 127 ? 127 : c;
                }
                p[8 + j] = (uint8_t)(c | (c && v < 0 ? 0x80 : 0));
                selval[j] = c ? (v < 0 ? -lv[c] : lv[c]) : 0.0f;
        }
        return 1;
}

sc_err_t sc_codec_sparse_encode(sc_codec_t *c, unsigned flags, sc_buf_t *out)
{
        size_t start = out->len, k = c->ksum;
        int rice = c->params.rice_index;
        sc_err_t err;

        if (sc_buf_reserve(out, SC_CODEC_HDR_SIZE + 4))
                return SC_ERR_NOMEM;
        sc_codec_put_hdr(out->data + out->len, c->ops->id, SC_CODEC_FMT_SPARSE, flags, c->n);
        sc_le_put32(out->data + out->len + SC_CODEC_HDR_SIZE, (uint32_t)k);
        out->len += SC_CODEC_HDR_SIZE + 4;
        if ((err = sc_codec_index_encode(c->sel, k, (uint32_t)c->n,
                                         rice ? SC_CODEC_INDEX_AUTO_RICE : SC_CODEC_INDEX_AUTO,
                                         out)) ||
            (err = sc_buf_reserve(out, 8 + 4 * k))) {
                out->len = start;
                return err;
        }
        c->rounded = 0;
        if (c->params.log8_values && sc_log8_encode(c->selval, k, out->data + out->len)) {
                /* selval is now what the receiver decodes (see half below). */
                sc_le_put16(out->data + start + 2, (uint16_t)(flags | SC_CODEC_FLAG_LOG8));
                out->len += 8 + k;
                c->rounded = 1;
        } else if (c->params.half_values) {
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
                c->rounded = 1;
        } else {
                sc_le_putf32s(out->data + out->len, c->selval, k);
                out->len += 4 * k;
        }
        c->stats.last_nnz = k;
        return SC_OK;
}

/* Validates a sparse body fully (indices and log8 codes included); *kp
 * receives k. */
sc_err_t sc_codec_sparse_check(const uint8_t *body, size_t len, uint32_t n, unsigned flags,
                               uint32_t *kp, char *errstr, size_t errstr_size)
{
        int log8 = (flags & SC_CODEC_FLAG_LOG8) != 0;
        size_t width = flags & SC_CODEC_FLAG_HALF ? 2 : log8 ? 1 : 4;
        size_t used = 0, extra = log8 ? 8 : 0;
        sc_index_iter_t it;
        uint32_t k;
        sc_err_t err;

        *kp = 0;
        if (len < 4)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: sparse body of %zu bytes has no count", len);
        if (log8 && (flags & SC_CODEC_FLAG_HALF))
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: sparse values flagged both half and log8");
        k = sc_le_get32(body);
        if (k > n)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: %u sparse entries for %u coordinates", k, n);
        /* The value bytes are checked before any index is walked: they bound
         * k (and so the walk) by the bytes present, whatever k and n claim. */
        if ((err = sc_index_iter_init(&it, body + 4, len - 4, k, n, &used, errstr, errstr_size)))
                return err;
        if (len - 4 - used != extra + width * (size_t)k)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "codec payload: %zu value bytes for %u sparse entries",
                               len - 4 - used, k);
        err = sc_codec_index_decode(body + 4, len - 4, k, n, NULL, &used, errstr, errstr_size);
        if (err)
                return err;
        if (log8) {
                const uint8_t *v = body + 4 + used;
                float lo = sc_le_getf32(v), hi = sc_le_getf32(v + 4);
                if (!(lo >= 0 && lo <= hi && isfinite(hi)) || (lo == 0) != (hi == 0))
                        return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                       "codec payload: log8 value range [%g, %g] is invalid",
                                       (double)lo, (double)hi);
                for (uint32_t j = 0; j < k; j++)
                        if (v[8 + j] == 0x80 || (v[8 + j] && hi == 0))
                                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                               "codec payload: log8 code 0x%02x of entry %u is "
                                               "invalid",
                                               v[8 + j], j);
        }
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
        float lv[128];

        sc_index_iter_init(&it, body + 4, len - 4, k, n, &used, NULL, 0);
        vals = body + 4 + used;
        if (flags & SC_CODEC_FLAG_LOG8) {
                sc_log8_levels(sc_le_getf32(vals), sc_le_getf32(vals + 4), lv);
                vals += 8;
        }
        for (uint32_t j = 0; j < k; j++) {
                sc_index_iter_next(&it, &v);
                float x;
                if (flags & SC_CODEC_FLAG_LOG8)
                        x = vals[j] & 0x80 ? -lv[vals[j] & 0x7f] : lv[vals[j]];
                else if (flags & SC_CODEC_FLAG_HALF)
                        x = sc_codec_f16_to_f32(sc_le_get16(vals + 2 * (size_t)j));
                else
                        x = sc_le_getf32(vals + 4 * (size_t)j);
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
