/* topk.c — exact per-tensor top-k selection (sampled threshold, one
 * filtering pass, radix select on the survivors) and the topk codec with
 * optional error feedback. */
#include "codec_impl.h"

#include "sc_alloc.h"

#include <math.h>
#include <stdlib.h>

/* Magnitude key: the float's bits without the sign. For non-NaN values the
 * unsigned order of keys is the order of |x|; NaNs sort above +inf. */
static inline uint32_t sc_key(const float *x, const float *add, size_t i)
{
        float v = add ? x[i] + add[i] : x[i];
        return sc_f32_bits(v) & 0x7fffffffu;
}

#define SC_TOPK_BLOCK 4096
#define SC_TOPK_SAMPLES 2048
#define SC_TOPK_SMALL 16384

void sc_topk_scratch_free(sc_topk_scratch_t *s)
{
        sc_free(s->cidx);
        sc_free(s->ckey);
        s->cidx = NULL;
        s->ckey = NULL;
        s->cap = 0;
}

static sc_err_t sc_topk_reserve(sc_topk_scratch_t *s, size_t need)
{
        size_t cap;
        uint32_t *a, *b;

        if (need <= s->cap)
                return SC_OK;
        cap = s->cap ? s->cap : SC_TOPK_BLOCK;
        while (cap < need)
                cap *= 2;
        a = sc_realloc(s->cidx, cap * sizeof(*a));
        if (!a)
                return SC_ERR_NOMEM;
        s->cidx = a;
        b = sc_realloc(s->ckey, cap * sizeof(*b));
        if (!b)
                return SC_ERR_NOMEM;
        s->ckey = b;
        s->cap = cap;
        return SC_OK;
}

/* Finds the k-th largest (1 <= k <= m) of keys (m entries, reordered), three
 * radix digits of 11, 11 and 10 bits. *tiesp receives how many entries equal
 * to the result belong to the top k. */
static uint32_t sc_radix_kth(uint32_t *keys, size_t m, size_t k, size_t *tiesp)
{
        static const int shifts[3] = {21, 10, 0};
        static const uint32_t masks[3] = {0x7ff, 0x7ff, 0x3ff};
        uint32_t prefix = 0;
        size_t need = k;

        for (int d = 0; d < 3; d++) {
                size_t hist[2048] = {0}, cum = 0, w = 0;
                const int sh = shifts[d];
                const uint32_t mk = masks[d];
                uint32_t b;

                for (size_t i = 0; i < m; i++)
                        hist[(keys[i] >> sh) & mk]++;
                for (b = mk;; b--) {
                        if (cum + hist[b] >= need || b == 0)
                                break;
                        cum += hist[b];
                }
                need -= cum;
                prefix |= b << sh;
                for (size_t i = 0; i < m; i++) {
                        keys[w] = keys[i];
                        w += ((keys[i] >> sh) & mk) == b;
                }
                m = w;
        }
        *tiesp = need;
        return prefix;
}

/* Deterministic sample position j of s in [0, numel). */
static inline size_t sc_sample_pos(size_t j, size_t s, size_t numel)
{
        uint64_t h = (uint64_t)(j + 1) * 0x9e3779b97f4a7c15ull;
        size_t lo = j * numel / s, span = (j + 1) * numel / s - lo;
        return lo + (size_t)((h >> 33) % (span ? span : 1));
}

/* Appends positions b .. end-1 with key >= thr to ci/ck from c on; returns
 * the new count. Chunks of 16 with no survivor (the common case at small
 * ratios) cost one vectorizable pass. */
static inline size_t sc_topk_filter_block(const float *x, const float *add, size_t b, size_t end,
                                          uint32_t thr, uint32_t *ci, uint32_t *ck, size_t c)
{
        size_t i = b;

        for (; i + 16 <= end; i += 16) {
                uint32_t keys[16], any = 0;
                for (int j = 0; j < 16; j++) {
                        keys[j] = sc_key(x, add, i + (size_t)j);
                        any |= keys[j] >= thr;
                }
                if (!any)
                        continue;
                for (int j = 0; j < 16; j++) {
                        ci[c] = (uint32_t)(i + (size_t)j);
                        ck[c] = keys[j];
                        c += keys[j] >= thr;
                }
        }
        for (; i < end; i++) {
                uint32_t key = sc_key(x, add, i);
                ci[c] = (uint32_t)i;
                ck[c] = key;
                c += key >= thr;
        }
        return c;
}

/* Collects positions with key >= thr into the scratch; returns the count or
 * (size_t)-1 when memory runs out. */
static size_t sc_topk_filter(sc_topk_scratch_t *s, const float *x, const float *add, size_t numel,
                             uint32_t thr)
{
        size_t c = 0;

        for (size_t b = 0; b < numel; b += SC_TOPK_BLOCK) {
                size_t end = b + SC_TOPK_BLOCK < numel ? b + SC_TOPK_BLOCK : numel;
                if (sc_topk_reserve(s, c + (end - b)))
                        return (size_t)-1;
                if (add)
                        c = sc_topk_filter_block(x, add, b, end, thr, s->cidx, s->ckey, c);
                else
                        c = sc_topk_filter_block(x, NULL, b, end, thr, s->cidx, s->ckey, c);
        }
        return c;
}

sc_err_t sc_topk_segment(sc_topk_scratch_t *s, const float *x, const float *add, size_t numel,
                         size_t k, uint32_t base, uint32_t *sel)
{
        uint32_t thr = 0, samples[SC_TOPK_SAMPLES], t;
        size_t c, ties, out = 0;

        if (k >= numel) {
                for (size_t i = 0; i < numel; i++)
                        sel[i] = base + (uint32_t)i;
                return SC_OK;
        }
        if (numel > SC_TOPK_SMALL) {
                const size_t ns = SC_TOPK_SAMPLES;
                double ks = (double)k * (double)ns / (double)numel;
                size_t r = (size_t)ceil(1.25 * ks + 3.0 * sqrt(ks) + 4.0);
                if (r < ns) {
                        for (size_t j = 0; j < ns; j++)
                                samples[j] = sc_key(x, add, sc_sample_pos(j, ns, numel));
                        thr = sc_radix_kth(samples, ns, r, &ties);
                }
        }
        c = sc_topk_filter(s, x, add, numel, thr);
        if (c != (size_t)-1 && c < k)
                c = sc_topk_filter(s, x, add, numel, 0);
        if (c == (size_t)-1)
                return SC_ERR_NOMEM;
        /* Keys are reordered by the select; positions stay in index order. */
        t = sc_radix_kth(s->ckey, c, k, &ties);
        for (size_t j = 0; j < c && out < k; j++) {
                uint32_t i = s->cidx[j], key = sc_key(x, add, i);
                if (key > t || (key == t && ties > 0)) {
                        ties -= key == t;
                        sel[out++] = base + i;
                }
        }
        return SC_OK;
}

sc_err_t sc_codec_topk_select(const float *x, size_t n, size_t k, uint32_t *sel)
{
        sc_topk_scratch_t s = {0};
        sc_err_t err;

        if (k < 1 || k > n || n > UINT32_MAX)
                return SC_ERR_INVAL;
        err = sc_topk_segment(&s, x, NULL, n, k, 0, sel);
        sc_topk_scratch_free(&s);
        return err;
}

sc_err_t sc_codec_topk_run(sc_codec_t *c, const float *x, const float *add)
{
        size_t pos = 0;
        sc_err_t err;

        if (!c->sel) {
                c->sel = sc_malloc(c->ksum * sizeof(*c->sel));
                c->selval = sc_malloc(c->ksum * sizeof(*c->selval));
                if (!c->sel || !c->selval)
                        return SC_ERR_NOMEM;
        }
        for (int i = 0; i < c->nsegs; i++) {
                const sc_codec_seg_t *g = &c->segs[i];
                err = sc_topk_segment(&c->topk, x + g->off, add ? add + g->off : NULL, g->numel,
                                      g->k, (uint32_t)g->off, c->sel + pos);
                if (err)
                        return err;
                pos += g->k;
        }
        for (size_t j = 0; j < c->ksum; j++) {
                uint32_t i = c->sel[j];
                c->selval[j] = add ? x[i] + add[i] : x[i];
        }
        return SC_OK;
}

static sc_err_t sc_codec_topk_encode(sc_codec_t *c, const float *grads, sc_rng_t *rng,
                                     sc_buf_t *out, char *errstr, size_t errstr_size)
{
        unsigned flags = c->residual ? SC_CODEC_FLAG_EF : 0;
        sc_err_t err;

        /* The residual is read, not written, until the payload exists. */
        err = sc_codec_topk_run(c, grads, c->residual);
        if (!err)
                err = sc_codec_sparse_encode(c, flags, out);
        if (err)
                return sc_errf(err, errstr, errstr_size, "codec %s: out of memory", c->ops->name);
        if (c->residual)
                sc_codec_ef_commit_sparse(c, grads, 1);
        c->stats.compressed++;
        return SC_OK;
}

const sc_codec_ops_t sc_codec_topk_ops = {
    .name = "topk",
    .id = SC_CODEC_TOPK,
    .formats = 1u << SC_CODEC_FMT_SPARSE,
    .encode = sc_codec_topk_encode,
};
