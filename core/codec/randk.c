/* randk.c — random-k sparsification: per tensor k distinct coordinates drawn
 * uniformly from the caller's rng. With scale on, values are multiplied by
 * numel / k so the decoded gradient is unbiased; with scale off they are sent
 * as they are (the usual choice with error feedback, which then keeps what
 * was not sent). */
#include "codec_impl.h"

#include "sc_alloc.h"

#include <stdlib.h>

static sc_err_t sc_codec_randk_init(sc_codec_t *c, char *errstr, size_t errstr_size)
{
        c->bitmap = sc_calloc(c->max_numel / 64 + 1, sizeof(uint64_t));
        c->sel = sc_malloc(c->ksum * sizeof(*c->sel));
        c->selval = sc_malloc(c->ksum * sizeof(*c->selval));
        if (!c->bitmap || !c->sel || !c->selval)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "codec randk: out of memory");
        return SC_OK;
}

/* Marks k distinct positions of [0, numel) in bm (cleared first), drawing
 * the smaller of the chosen set and its complement. */
static void sc_randk_draw(uint64_t *bm, size_t numel, size_t k, sc_rng_t *rng)
{
        size_t words = numel / 64 + 1, want = k, got = 0;
        int complement = k > numel / 2;

        memset(bm, 0, words * sizeof(*bm));
        if (complement) {
                for (size_t i = 0; i < numel; i++)
                        bm[i >> 6] |= 1ull << (i & 63);
                want = numel - k;
        }
        while (got < want) {
                uint32_t i = sc_rng_below(rng, (uint32_t)numel);
                uint64_t bit = 1ull << (i & 63);
                if (((bm[i >> 6] & bit) != 0) != complement)
                        continue;
                bm[i >> 6] ^= bit;
                got++;
        }
}

static sc_err_t sc_codec_randk_encode(sc_codec_t *c, const float *grads, sc_rng_t *rng,
                                      sc_buf_t *out, char *errstr, size_t errstr_size)
{
        const float *r = c->residual;
        unsigned flags = (r ? SC_CODEC_FLAG_EF : 0) | (c->params.scale ? SC_CODEC_FLAG_SCALED : 0);
        size_t pos = 0;

        if (!rng)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "codec randk: needs an rng");
        for (int s = 0; s < c->nsegs; s++) {
                const sc_codec_seg_t *g = &c->segs[s];
                float mul = c->params.scale ? (float)((double)g->numel / (double)g->k) : 1.0f;
                sc_randk_draw(c->bitmap, g->numel, g->k, rng);
                for (size_t w = 0; w <= g->numel / 64; w++) {
                        uint64_t bits = c->bitmap[w];
                        while (bits) {
                                size_t i = g->off + w * 64 + (size_t)__builtin_ctzll(bits);
                                bits &= bits - 1;
                                c->sel[pos] = (uint32_t)i;
                                c->selval[pos++] = (r ? grads[i] + r[i] : grads[i]) * mul;
                        }
                }
        }
        if (sc_codec_sparse_encode(c, flags, out))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "codec randk: out of memory");
        if (c->residual)
                sc_codec_ef_commit_sparse(c, grads, !c->params.scale);
        c->stats.compressed++;
        return SC_OK;
}

const sc_codec_ops_t sc_codec_randk_ops = {
    .name = "randk",
    .id = SC_CODEC_RANDK,
    .formats = 1u << SC_CODEC_FMT_SPARSE,
    .init = sc_codec_randk_init,
    .encode = sc_codec_randk_encode,
};
